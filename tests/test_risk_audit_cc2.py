"""Audit CC2 (log-linear and Poisson-gamma models): the fixes of its findings 1-4.

1. ``population_uniques`` of a Poisson-gamma assessment is the population's uniques
   given the sample (exact on a population file), with a predictive interval; Mokken's
   mu(theta) is kept as ``population_uniques_superpopulation``.
2. ``two_way_support`` raises its InputError before building more than ``max_cells``
   rows.
3. On a population file the risk is exactly 1/f, so the benchmark count on the mean
   risks agrees with the per-draw count.
4. ``fit_poisson_gamma``'s no-over-dispersion error gives advice that works.

References are independent of the code under test: simulated Poisson-gamma cells
(fixed seeds), brute-force enumeration of the two-way support, exact counts of
population uniques of a known population.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError, ModelError
from sdcbayes.risk import loglinear as LL
from sdcbayes.risk import poisson_gamma as PG
from sdcbayes.risk.measures import benchmark_rule
from sdcbayes.risk.posterior import mean_over_draws
from sdcbayes.risk.posterior_assess import (
    assess_from_posterior,
    assess_posterior,
    evaluate_poisson_cells,
)


def pg_posterior(alpha, beta):
    """A hand-built Poisson-gamma posterior group (one chain) from draws of alpha, beta."""
    alpha = np.asarray(alpha, dtype=float).reshape(1, -1)
    beta = np.broadcast_to(np.asarray(beta, dtype=float), alpha.shape).copy()
    S = alpha.shape[1]
    return xr.Dataset(
        {"alpha": (("chain", "draw"), alpha), "beta": (("chain", "draw"), beta)},
        coords={"chain": [0], "draw": np.arange(S)},
    )


def population_frame():
    """A population with known cells: 40 uniques, 3 cells of 10, 30 cells of 50, 4 pairs.

    The strict benchmark rule r > 0.1 leaves the f = 10 cells (r = 1/10 exactly) out;
    the uniques (r = 1) and pairs (r = 1/2) are flagged.
    """
    sizes = [1] * 40 + [10] * 3 + [50] * 30 + [2] * 4
    a = np.repeat(np.arange(len(sizes)), sizes)
    return pd.DataFrame({"a": a % 20, "b": a // 20}), sizes


# ------------------------------------------------------------------ finding 1


def test_population_uniques_formula_matches_simulated_cells():
    """P(F=1 | f=0) = alpha rho^alpha (1 - rho), P(F=1 | f=1) = rho^(alpha+1) by simulation.

    Cells pi ~ Gamma(alpha, scale beta), f ~ Po(n pi), F - f ~ Po((N - n) pi): 4e6 cells.
    """
    alpha, beta, n, N = 0.7, 3e-4, 2000.0, 20000.0
    rng = np.random.default_rng(20240611)
    pi = rng.gamma(alpha, beta, 4_000_000)
    f = rng.poisson(n * pi)
    F = f + rng.poisson((N - n) * pi)
    rho = (1 + n * beta) / (1 + N * beta)
    for fval, formula in ((0, alpha * rho**alpha * (1 - rho)), (1, rho ** (alpha + 1))):
        hit = F[f == fval] == 1
        se = np.sqrt(formula * (1 - formula) / hit.size)
        assert abs(hit.mean() - formula) < 4 * se, (fval, hit.mean(), formula)


def test_population_uniques_given_the_sample_on_a_sample():
    """The summary's population_uniques is m1 rho^(a+1) + m0 a rho^a (1 - rho), per draw.

    Its predictive interval includes the binomial spread of the unseen cells (wider than
    the hyper interval over theta); mu(theta) is kept as ..._superpopulation.
    """
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"a": rng.integers(0, 30, 600), "b": rng.integers(0, 40, 600)})
    md = Microdata(frame, keys=["a", "b"], sampling_fraction=0.1)
    fk = np.asarray(md.cells.fk)
    n, N, K = 600.0, 6000.0, float(md.cells.K)
    m1, m0 = int(np.sum(fk == 1)), K - fk.size
    alpha = rng.uniform(0.8, 1.2, 400)
    beta = 1.0 / (K * alpha)
    res = assess_from_posterior(md, pg_posterior(alpha, beta), "poisson-gamma", random_seed=3)
    s = res.summary
    rho = (1 + n * beta) / (1 + N * beta)
    want = m1 * rho ** (alpha + 1) + m0 * alpha * rho**alpha * (1 - rho)
    assert s["population_uniques"] == pytest.approx(want.mean(), rel=1e-12)
    assert s["population_uniques_fraction"] == pytest.approx(want.mean() / N, rel=1e-12)
    mu = PG.expected_population_uniques(alpha, beta, N, K=K)
    assert s["population_uniques_superpopulation"] == pytest.approx(mu.mean(), rel=1e-12)
    lo, hi = s["population_uniques_interval"]
    hlo, hhi = s["population_uniques_hyper_interval"]
    assert lo < hlo <= hhi < hi
    assert lo <= s["population_uniques"] <= hi
    # the predictive draws are tau1's draws plus the unseen cells' binomial count
    fd = res.file_draws
    pu = fd["population_uniques"].values.ravel()
    assert np.all(pu >= fd["tau1"].values.ravel())
    assert np.all(pu == np.round(pu))
    np.testing.assert_allclose(fd["population_uniques_conditional_mean"].values.ravel(), want,
                               rtol=1e-12)
    # the draws' spread matches the binomial sums given theta (tau1's and the unseen part)
    var_given = (m1 * rho ** (alpha + 1) * (1 - rho ** (alpha + 1))
                 + m0 * (q0 := alpha * rho**alpha * (1 - rho)) * (1 - q0))
    assert np.var(pu - want) == pytest.approx(var_given.mean(), rel=0.25)


def test_population_uniques_exact_on_a_population_file():
    """Sampling fraction 1: population_uniques is the true count with a zero-width interval.

    Before the fix it was Mokken's mu(theta) (255.9 [249, 262] where the truth was 345 in
    the audit), still reported as population_uniques_superpopulation.
    """
    frame, sizes = population_frame()
    md = Microdata(frame, keys=["a", "b"], sampling_fraction=1.0)
    true_pu = sum(1 for c in sizes if c == 1)
    K = float(md.cells.K)
    rng = np.random.default_rng(11)
    alpha = rng.uniform(0.3, 0.5, 300)
    res = assess_from_posterior(md, pg_posterior(alpha, 1.0 / (K * alpha)), "poisson-gamma",
                                random_seed=1)
    s = res.summary
    assert s["population_uniques"] == true_pu
    assert s["population_uniques_interval"] == [true_pu, true_pu]
    assert s["population_uniques_hyper_interval"] == [true_pu, true_pu]
    assert s["population_uniques_fraction"] == true_pu / len(frame)
    assert s["population_uniques_superpopulation"] != pytest.approx(true_pu, rel=0.01)


def test_population_uniques_exact_through_the_fitted_model():
    """The same through assess_posterior's NUTS fit (the model's own K and N)."""
    frame, sizes = population_frame()
    md = Microdata(frame, keys=["a", "b"], sampling_fraction=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = assess_posterior(md, model="poisson-gamma", draws=50, chains=1, tune=100,
                               random_seed=2, cores=1)
    s = res.summary
    true_pu = sum(1 for c in sizes if c == 1)
    assert s["population_uniques"] == true_pu
    assert s["population_uniques_interval"] == [true_pu, true_pu]
    assert s["tau1"] == true_pu


# ------------------------------------------------------------------ finding 3


def test_population_file_risk_is_exactly_one_over_f():
    """Every draw's risk is 1/f: the mean is 1/f itself, and both benchmark counts agree.

    The plain mean of 400 draws of 1/10 is 0.10000000000000074, which the strict r > 0.1
    flagged (audit: 5507 against 5257 on its population file).
    """
    S = 400
    # the rounding this guards against: the draws x groups mean of the evaluators
    assert np.full((S, 3), 0.1).mean(axis=0)[0] > 0.1
    frame, sizes = population_frame()
    md = Microdata(frame, keys=["a", "b"], sampling_fraction=1.0)
    K = float(md.cells.K)
    alpha = np.random.default_rng(5).uniform(0.3, 0.5, S)
    res = assess_from_posterior(md, pg_posterior(alpha, 1.0 / (K * alpha)), "poisson-gamma",
                                random_seed=1)
    r = res.records["risk"].to_numpy()
    np.testing.assert_array_equal(r, 1.0 / res.records["fk"].to_numpy())
    s = res.summary
    flagged = sum(c for c in sizes if c < 10)  # uniques and pairs; not the f = 10 cells
    assert s["n_above_benchmark"] == flagged
    assert s["n_above_benchmark_at_mean_risk"] == flagged
    assert int(np.count_nonzero(benchmark_rule(r))) == flagged


def test_latent_class_cells_on_a_population_file_are_exact():
    """evaluate_poisson_cells (latent-class) at n = N: risk exactly 1/f."""
    fk = np.array([10.0, 1.0, 3.0, 10.0])
    pi = np.random.default_rng(0).dirichlet(np.ones(4), 400)
    ev = evaluate_poisson_cells(fk, pi, 24.0, 24.0, random_seed=0)
    np.testing.assert_array_equal(ev.risk_mean, 1.0 / fk)


def test_mean_over_draws():
    x = np.column_stack([np.full(400, 0.1), np.linspace(0, 1, 400), np.full(400, 1 / 3)])
    got = mean_over_draws(x)
    assert got[0] == 0.1 and got[2] == 1 / 3
    assert got[1] == x.mean(axis=0)[1]
    np.testing.assert_array_equal(mean_over_draws(x[:, 1:2]), x[:, 1:2].mean(axis=0))


# ------------------------------------------------------------------ finding 2


def brute_support(codes, L):
    """Every cell of the full table whose two-way sample margins are all positive."""
    grid = np.array(np.meshgrid(*[np.arange(x) for x in L], indexing="ij")).reshape(len(L), -1).T
    seen = {(a, b): {(int(u), int(v)) for u, v in codes[:, [a, b]]}
            for a in range(len(L)) for b in range(a + 1, len(L))}
    ok = [all((int(c[a]), int(c[b])) in s for (a, b), s in seen.items()) for c in grid]
    return grid[np.array(ok)]


def test_two_way_support_unchanged_and_cap_boundary():
    rng = np.random.default_rng(3)
    L = [5, 4, 3, 4]
    codes = np.column_stack([rng.integers(0, x, 40) for x in L])
    want = brute_support(codes, L)
    got = LL.two_way_support(codes, L)
    np.testing.assert_array_equal(got, want)
    # the cap counts cells as before: exactly the support's size passes, one less fails
    np.testing.assert_array_equal(LL.two_way_support(codes, L, max_cells=len(want)), want)
    with pytest.raises(InputError, match="max_cells"):
        LL.two_way_support(codes, L, max_cells=len(want) - 1)


def test_two_way_support_cap_raises_before_allocating():
    """Keys 100 x 100 (every pair seen), then 400 levels seen with everything.

    The partial support of 1e4 cells times 400 levels is 4e6 rows (96 MB of int64 codes);
    before the fix they were all built before the cap of 20,000 was checked (traced peak
    82 MB in the audit). Now the error comes first: the peak stays at the fixed overhead
    of a few MB (the chunk's mask, the margin tables), far below those rows.
    """
    rng = np.random.default_rng(0)
    n = 20000
    codes = np.column_stack([rng.integers(0, 100, n), rng.integers(0, 100, n),
                             rng.integers(0, 400, n)])
    i = np.arange(40000)
    codes = np.vstack([codes, np.column_stack([i % 100, (i // 100) % 100, i % 400])])
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="more than 2e\\+04 cells after 3 keys"):
            LL.two_way_support(codes, [100, 100, 400], max_cells=20_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rows_of_old_code = 10_000 * 400 * 3 * 8
    assert peak < rows_of_old_code / 4, peak / 1e6


# ------------------------------------------------------------------ finding 4


def test_no_overdispersion_error_advice_for_an_all_unique_sample():
    """No K helps an all-unique sample (var - mean = -(n/K)^2 < 0): the advice names what works."""
    for K in (1e3, 1e6, 1e12):
        with pytest.raises(ModelError, match="over-dispersion") as info:
            PG.fit_poisson_gamma({1: 1000}, 1000, 1e5, K)
        msg = str(info.value)
        assert "larger K" not in msg and "coarser" not in msg
        assert "no K gives over-dispersion" in msg
        assert "assess_posterior(md, model='poisson-gamma')" in msg
        assert "fit_loglinear(md, interactions='main')" in msg


def test_no_overdispersion_error_names_the_k_where_it_appears():
    """With repeated cells var > mean needs K > S^2 / sum j(j-1) m_j (here 400/10 = 40)."""
    with pytest.raises(ModelError, match=r"K > S\^2 / sum_j j\(j-1\) m_j = 40\b"):
        PG.fit_poisson_gamma({1: 10, 2: 5}, 20, 100, 40)
    assert PG.fit_poisson_gamma({1: 10, 2: 5}, 20, 100, 41).alpha > 0


def test_routes_the_advice_names_work_on_an_all_unique_sample():
    """The log-linear Poisson plug-in and chosen (alpha, beta) give finite tau1 <= uniques."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"k": rng.permutation(300), "id": np.arange(300)})
    md = Microdata(frame, keys=["k", "id"], sampling_fraction=0.05)
    assert set(md.cells.counts_of_counts.index) == {1}
    with pytest.raises(ModelError):
        PG.fit_poisson_gamma(md.cells.counts_of_counts, 300, 6000, md.cells.K)
    fit = LL.fit_loglinear(md, interactions="main")
    assert 0 < fit.tau1 <= 300
    tau1, _ = PG.tau_estimates(300, 50.0, 1 / (50.0 * md.cells.K), 300, 6000)
    assert 0 < tau1 <= 300
