"""Poisson log-linear plug-ins (Skinner-Holmes 1998, Skinner-Shlomo 2008) and DIS.

Checks: the main-effects fit is the product of the margins and equals a generic
Poisson GLM fit (Newton-IRLS on the dense design of a tiny table); the two-way IPF
fit reproduces every two-way margin and equals the dense IRLS fit; the Poisson
plug-in formulas agree with simulation of F = f + Po(lambda (1 - pi)) and with
brute-force summation; the Skinner-Elliot DIS estimator is unbiased for the
denominator of theta under Bernoulli sampling (simulation).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdcbayes.exceptions import InputError
from sdcbayes.risk.dis import dis_estimate, dis_from_frequencies, dis_truth
from sdcbayes.risk.loglinear import (
    fit_loglinear,
    ipf_two_way,
    main_effects_means,
    poisson_inverse_moment,
    poisson_prob_unique,
    two_way_support,
)


def _design(levels, two_way: bool) -> np.ndarray:
    """Dense dummy-coded design matrix of the full table (reference coding)."""
    cells = np.array(list(itertools.product(*[range(L) for L in levels])))
    cols = [np.ones(len(cells))]
    dummies = []
    for j, L in enumerate(levels):
        d = [(cells[:, j] == a).astype(float) for a in range(1, L)]
        dummies.append(d)
        cols += d
    if two_way:
        for a, b in itertools.combinations(range(len(levels)), 2):
            cols += [x * y for x in dummies[a] for y in dummies[b]]
    return cells, np.column_stack(cols)


def _poisson_irls(X: np.ndarray, y: np.ndarray, n_iter: int = 200) -> np.ndarray:
    """Generic Poisson GLM (log link) by Newton-IRLS; returns fitted means.

    A tiny ridge keeps the Newton step defined when some parameters run off to
    -inf (cells with zero margins); fitted means converge all the same.
    """
    beta = np.zeros(X.shape[1])
    beta[0] = np.log(y.mean())
    for _ in range(n_iter):
        mu = np.exp(X @ beta)
        H = X.T @ (mu[:, None] * X) + 1e-10 * np.eye(X.shape[1])
        step = np.linalg.solve(H, X.T @ (y - mu))
        beta += step
        if np.max(np.abs(step)) < 1e-12:
            break
    return np.exp(X @ beta)


def _table_sample(rng, levels, n):
    """Records with dependent keys: key j copies key j-1 (mod L_j) half the time."""
    codes = np.empty((n, len(levels)), dtype=np.int64)
    codes[:, 0] = rng.integers(0, levels[0], n)
    for j in range(1, len(levels)):
        copy = rng.random(n) < 0.5
        codes[:, j] = np.where(copy, codes[:, j - 1] % levels[j], rng.integers(0, levels[j], n))
    return codes


def test_main_effects_is_product_of_margins_and_the_poisson_glm_mle():
    rng = np.random.default_rng(1)
    levels = (3, 4, 2)
    codes = _table_sample(rng, levels, 400)
    cell_codes, mu = main_effects_means(codes, levels)
    n = len(codes)
    # Product of margins, computed independently with pandas.
    df = pd.DataFrame(codes, columns=["a", "b", "c"])
    prod = n * np.prod(
        [df[c].value_counts(normalize=True).reindex(cell_codes[:, j]).to_numpy()
         for j, c in enumerate("abc")], axis=0)
    np.testing.assert_allclose(mu, prod, rtol=1e-12)
    # Generic GLM on the full dense table (zero cells included).
    cells, X = _design(levels, two_way=False)
    y = np.zeros(len(cells))
    flat = np.ravel_multi_index(tuple(codes.T), levels)
    np.add.at(y, flat, 1.0)
    glm = _poisson_irls(X, y)
    obs = np.ravel_multi_index(tuple(cell_codes.T), levels)
    np.testing.assert_allclose(mu, glm[obs], rtol=1e-8)
    assert glm.sum() == pytest.approx(n)


def test_two_way_ipf_matches_margins_and_dense_irls():
    rng = np.random.default_rng(2)
    levels = (3, 4, 3, 2)
    codes = _table_sample(rng, levels, 150)  # sparse: some two-way margins are zero
    fit = fit_loglinear(codes, interactions="two-way", sampling_fraction=0.1, tol=1e-11,
                        max_iter=20000)
    n_levels = [len(lev) for lev in fit.levels]
    assert n_levels == list(levels)
    support, mu_support, _, err = ipf_two_way(codes, levels, tol=1e-11, max_iter=20000)
    assert err < 1e-8
    # Every two-way margin of the fit equals the sample's.
    for a, b in itertools.combinations(range(len(levels)), 2):
        fitted = np.zeros((levels[a], levels[b]))
        np.add.at(fitted, (support[:, a], support[:, b]), mu_support)
        observed = np.zeros((levels[a], levels[b]))
        np.add.at(observed, (codes[:, a], codes[:, b]), 1.0)
        np.testing.assert_allclose(fitted, observed, atol=1e-8)
    # Dense Poisson IRLS with all two-way interactions on the full table.
    cells, X = _design(levels, two_way=True)
    y = np.zeros(len(cells))
    np.add.at(y, np.ravel_multi_index(tuple(codes.T), levels), 1.0)
    glm = _poisson_irls(X, y, n_iter=500)
    obs = np.ravel_multi_index(tuple(fit.cell_codes.T), levels)
    np.testing.assert_allclose(fit.mu, glm[obs], rtol=1e-5, atol=1e-7)
    # Off the support the GLM means vanish too (extended MLE).
    off = np.setdiff1d(np.arange(len(cells)), np.ravel_multi_index(tuple(support.T), levels))
    assert np.all(glm[off] < 1e-6)


def test_two_way_support_is_cells_with_all_margins_positive():
    rng = np.random.default_rng(3)
    levels = (4, 3, 5)
    codes = _table_sample(rng, levels, 40)
    support = two_way_support(codes, levels)
    brute = []
    for cell in itertools.product(*[range(L) for L in levels]):
        ok = all(np.any((codes[:, a] == cell[a]) & (codes[:, b] == cell[b]))
                 for a, b in itertools.combinations(range(3), 2))
        if ok:
            brute.append(cell)
    np.testing.assert_array_equal(support, np.array(brute))
    with pytest.raises(InputError, match="max_cells"):
        two_way_support(codes, levels, max_cells=len(brute) - 1)


def test_poisson_plugins_by_simulation():
    rng = np.random.default_rng(4)
    lam, pi = np.array([0.3, 2.0, 7.5]), 0.05
    reps = 200_000
    excess = rng.poisson(lam * (1 - pi), size=(reps, lam.size))
    # P(F = 1 | f = 1): no other population unit in the cell.
    se = np.sqrt(0.25 / reps)
    np.testing.assert_allclose(poisson_prob_unique(lam, pi), (excess == 0).mean(0), atol=5 * se)
    for f in (1, 2, 5):
        mc = (1.0 / (f + excess)).mean(0)
        se = (1.0 / (f + excess)).std(0) / np.sqrt(reps)
        np.testing.assert_array_less(np.abs(poisson_inverse_moment(f, lam, pi) - mc), 5 * se)
    # The printed f = 1 formula of Skinner-Shlomo (2008): (1 - e^{-m}) / m.
    m = lam * (1 - pi)
    np.testing.assert_allclose(poisson_inverse_moment(1, lam, pi), -np.expm1(-m) / m, rtol=1e-14)


@pytest.mark.parametrize("f", [1, 2, 3, 10, 200])
@pytest.mark.parametrize("m", [1e-9, 0.01, 1.0, 25.0, 400.0])
def test_poisson_inverse_moment_against_series(f, m):
    """E(1/(f + X)), X ~ Po(m), against direct summation of the Poisson series."""
    x = np.arange(0, int(m + 40 * np.sqrt(m) + 100))
    series = np.sum(stats.poisson.pmf(x, m) / (f + x))
    # lambda = 2m at pi = 1/2 gives lambda (1 - pi) = m.
    assert poisson_inverse_moment(f, 2 * m, 0.5) == pytest.approx(series, rel=1e-10)


def test_fit_loglinear_plugins_sum_and_dataframe_input():
    rng = np.random.default_rng(5)
    codes = _table_sample(rng, (6, 5, 4), 300)
    df = pd.DataFrame({"a": codes[:, 0].astype(str), "b": codes[:, 1], "c": codes[:, 2]})
    fit = fit_loglinear(df, ["a", "b", "c"], sampling_fraction=0.02)
    su = fit.fk == 1
    lam = fit.mu / 0.02
    assert fit.tau1 == pytest.approx(np.exp(-lam[su] * 0.98).sum())
    assert fit.tau2 == pytest.approx((-np.expm1(-lam[su] * 0.98) / (lam[su] * 0.98)).sum())
    assert fit.expected_reidentifications == pytest.approx(fit.record_risk().sum())
    assert fit.fk.sum() == 300 and fit.record_cell.shape == (300,)
    assert set(fit.cell_table().columns) >= {"a", "b", "c", "fk", "mu", "risk"}
    with pytest.raises(InputError, match="sampling_fraction"):
        fit_loglinear(df, ["a", "b"])
    with pytest.raises(InputError, match="interactions"):
        fit_loglinear(df, ["a", "b"], interactions="three-way", sampling_fraction=0.1)


def test_fit_loglinear_reads_microdata():
    from sdcbayes.microdata import Microdata

    rng = np.random.default_rng(6)
    codes = _table_sample(rng, (4, 3), 100)
    df = pd.DataFrame({"a": codes[:, 0], "b": codes[:, 1], "w": 20.0})
    fit_md = fit_loglinear(Microdata(df, keys=["a", "b"], weight="w"))
    fit_df = fit_loglinear(df, ["a", "b"], sampling_fraction=0.05)
    assert fit_md.sampling_fraction == pytest.approx(0.05)
    np.testing.assert_allclose(fit_md.mu, fit_df.mu)


@pytest.mark.parametrize("lam", [-5.0, np.nan, np.inf, [1.0, -0.1]])
def test_poisson_plugins_refuse_bad_lambda(lam):
    # poisson_prob_unique(-5, 0.1) returned 90.0 and poisson_inverse_moment(1, -5, 0.1)
    # 3.25 (above 1/f); NaN came back as NaN
    with pytest.raises(InputError, match="lam .* finite and >= 0"):
        poisson_prob_unique(lam, 0.1)
    with pytest.raises(InputError, match="lam .* finite and >= 0"):
        poisson_inverse_moment(1, lam, 0.1)
    with pytest.raises(InputError, match="lam .* finite and >= 0"):
        poisson_inverse_moment(3, lam, 0.1)


@pytest.mark.parametrize("pi", [0.0, -0.1, 1.5, np.nan])
def test_poisson_plugins_refuse_bad_sampling_fraction(pi):
    with pytest.raises(InputError, match="sampling_fraction"):
        poisson_prob_unique(2.0, pi)
    with pytest.raises(InputError, match="sampling_fraction"):
        poisson_inverse_moment(2, 2.0, pi)


def test_poisson_plugins_accept_zero_lambda():
    # lambda = 0 (a cell the model gives no mass beyond the sample) is valid: F = f
    assert poisson_prob_unique(0.0, 0.1) == 1.0
    np.testing.assert_array_equal(poisson_inverse_moment([1, 4], 0.0, 0.1), [1.0, 0.25])


# ------------------------------------------------------------------------------ DIS


def test_dis_estimator_unbiased_for_the_denominator_under_bernoulli_sampling():
    """E[pi n1 + 2(1-pi) n2] = pi E[sum F_k I(f_k=1)] exactly (Skinner-Elliot 2002)."""
    rng = np.random.default_rng(7)
    F = np.concatenate([np.ones(300, int), rng.integers(2, 6, 300), rng.integers(6, 60, 100)])
    pi, reps = 0.1, 4000
    f = rng.binomial(F, pi, size=(reps, F.size))
    n1 = (f == 1).sum(1)
    n2 = (f == 2).sum(1)
    den_true = (F * (f == 1)).sum(1)
    est = pi * n1 + 2 * (1 - pi) * n2
    se = np.std(est - pi * den_true) / np.sqrt(reps)
    assert abs(np.mean(est - pi * den_true)) < 4 * se
    theta_hat = dis_estimate(n1, n2, pi)
    theta = np.array([dis_truth(f[r], F) for r in range(50)])
    # Ratio estimator: close to the truth on average (small ratio bias only).
    assert np.mean(theta_hat) == pytest.approx(np.mean(theta), rel=0.03)


def test_dis_small_cases():
    assert dis_estimate(10, 0, 0.1) == pytest.approx(1.0)
    assert dis_estimate(10, 5, 0.5) == pytest.approx(5 / (5 + 5))
    assert np.isnan(dis_estimate(0, 0, 0.1))
    assert dis_from_frequencies([1, 1, 2, 3], 0.5) == pytest.approx(1 / (1 + 1))
    assert dis_truth([1, 1, 2], [1, 3, 5]) == pytest.approx(2 / 4)
    with pytest.raises(InputError):
        dis_estimate(1, 1, 1.5)
