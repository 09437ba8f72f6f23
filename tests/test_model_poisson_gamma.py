"""Poisson-gamma model on counts of counts (seed 000, Mokken et al. 1992, eq. 10-12).

Reference values are computed independently here with scipy (nbinom / gammaln)
on the same parameter values, never taken from the model under test.
"""

import types

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats
from scipy.special import gammaln

from sdcbayes.exceptions import InputError
from sdcbayes.models.poisson_gamma import PoissonGammaModel
from sdcbayes.models.ppc import negbin_count_probabilities, simulate_counts_of_counts


def simulate_cells(K, n_mean, alpha, seed):
    """Per-cell sample counts f_k ~ NegBin(alpha, 1/(1 + n beta)) with alpha beta = 1/K."""
    rng = np.random.default_rng(seed)
    nbeta = n_mean / (K * alpha)
    return rng.negative_binomial(alpha, 1.0 / (1.0 + nbeta), size=K)


def counts_of_counts(f):
    j, m = np.unique(f[f > 0], return_counts=True)
    return dict(zip(j.tolist(), m.tolist(), strict=True))


def closed_form_loglik(coc, K, n, alpha, beta):
    """sum_j m_j log NegBin(j; alpha, p = 1/(1 + n beta)), m_0 = K - #cells (scipy)."""
    j = np.array([0, *coc])
    m = np.array([K - sum(coc.values()), *coc.values()])
    return float(np.sum(m * stats.nbinom.logpmf(j, alpha, 1.0 / (1.0 + n * beta))))


def gammaln_loglik(f, alpha, nbeta):
    """Per-cell NegBin log-pmf written out with gammaln (second, independent route)."""
    f = np.asarray(f, dtype=float)
    return float(
        np.sum(
            gammaln(f + alpha)
            - gammaln(alpha)
            - gammaln(f + 1)
            + alpha * np.log(1 / (1 + nbeta))
            + f * np.log(nbeta / (1 + nbeta))
        )
    )


K0, N0 = 3000, 120_000
F0 = simulate_cells(K0, 6000, 0.35, seed=11)
COC0 = counts_of_counts(F0)
N_SAMPLE0 = int(F0.sum())


@pytest.fixture(scope="module")
def pooled():
    model = PoissonGammaModel(COC0, K=K0, N=N0)
    pm_model = model.build()
    lik = pm_model.compile_logp(vars=[pm_model["counts"]], jacobian=False)
    det = pm_model.compile_fn(
        [pm_model["beta"], pm_model["mu"], pm_model["f_u"]],
        inputs=pm_model.free_RVs,
        point_fn=False,
    )
    return model, pm_model, lik, det


def point(alpha, omega):
    return {"alpha_log__": np.log(alpha), "omega_log__": np.log(omega)}


@pytest.mark.parametrize(("alpha", "omega"), [(0.35, 1.0), (0.05, 0.7), (3.0, 1.6), (40.0, 1.0)])
def test_logp_equals_closed_form_negbin(pooled, alpha, omega):
    model, _, lik, _ = pooled
    beta = omega / (K0 * alpha)
    expected = closed_form_loglik(COC0, K0, N_SAMPLE0, alpha, beta)
    assert lik(point(alpha, omega)) == pytest.approx(expected, rel=0, abs=1e-8)


def test_counts_of_counts_likelihood_equals_per_cell(pooled):
    # The sufficient-statistics likelihood equals the sum over all K cells (zeros included).
    _, _, lik, _ = pooled
    alpha, omega = 0.6, 1.2
    nbeta = N_SAMPLE0 * omega / (K0 * alpha)
    per_cell = gammaln_loglik(F0, alpha, nbeta)
    assert lik(point(alpha, omega)) == pytest.approx(per_cell, rel=1e-12)


def test_deterministics_mu_and_fu_match_eq10(pooled):
    _, _, _, det = pooled
    alpha, omega = 0.35, 1.3
    beta, mu, f_u = det(alpha, omega)
    assert beta == pytest.approx(omega / (K0 * alpha), rel=1e-12)
    # mu = K P(F = 1) with F ~ NegBin(alpha, 1/(1 + N beta)) (seed 000 eq. 10), by scipy.
    expected_mu = K0 * stats.nbinom.pmf(1, alpha, 1 / (1 + N0 * beta))
    assert mu == pytest.approx(expected_mu, rel=1e-10)
    assert f_u == pytest.approx(expected_mu / N0, rel=1e-10)


def test_tie_gives_seed_form_of_mu():
    # Under alpha beta = 1/K, eq. 10 reads mu = N (1 + N beta)^-(1 + alpha).
    model = PoissonGammaModel(COC0, K=K0, N=N0, tie=True)
    assert set(model.priors) == {"alpha"}
    pm_model = model.build()
    fn = pm_model.compile_fn(
        [pm_model["beta"], pm_model["mu"]], inputs=pm_model.free_RVs, point_fn=False
    )
    alpha = 0.8
    beta, mu = fn(alpha)
    assert beta == pytest.approx(1 / (K0 * alpha), rel=1e-12)
    assert mu == pytest.approx(N0 * (1 + N0 * beta) ** (-(1 + alpha)), rel=1e-10)


def test_every_variable_has_named_dims(pooled):
    _, pm_model, _, _ = pooled
    dims = pm_model.named_vars_to_dims
    assert dims["m"] == ("count",) and dims["counts"] == ("count",)
    assert list(pm_model.coords["count"]) == [0, *sorted(COC0)]
    assert np.array_equal(pm_model["m"].get_value(), [K0 - sum(COC0.values()), *COC0.values()])


# --------------------------------------------------------------- subpopulations
SUB_K = 400
SUB_N = np.array([30_000.0, 8_000.0, 60_000.0])
SUB_ALPHA = np.array([0.3, 0.8, 0.5])
SUB_N_MEAN = np.array([900, 300, 1500])
SUB_F = [
    simulate_cells(SUB_K, nm, a, seed=20 + i)
    for i, (nm, a) in enumerate(zip(SUB_N_MEAN, SUB_ALPHA, strict=True))
]
SUB_COC = (
    pd.DataFrame([pd.Series(counts_of_counts(f)) for f in SUB_F], index=["north", "east", "south"])
    .fillna(0)
    .astype(int)
)


def per_domain_cell_loglik(alphas, betas):
    n = np.array([f.sum() for f in SUB_F])
    return sum(
        gammaln_loglik(f, a, nd * b)
        for f, a, b, nd in zip(
            SUB_F, np.broadcast_to(alphas, 3), np.broadcast_to(betas, 3), n, strict=True
        )
    )


def test_separate_subpopulations_eq11_per_cell():
    model = PoissonGammaModel(SUB_COC, K=SUB_K, N=SUB_N, structure="separate")
    pm_model = model.build()
    assert pm_model.named_vars_to_dims["alpha"] == ("domain",)
    assert pm_model.named_vars_to_dims["counts"] == ("domain", "count")
    lik = pm_model.compile_logp(vars=[pm_model["counts"]], jacobian=False)
    alpha, omega = np.array([0.2, 1.1, 0.6]), np.array([0.9, 1.0, 1.3])
    got = lik({"alpha_log__": np.log(alpha), "omega_log__": np.log(omega)})
    assert got == pytest.approx(per_domain_cell_loglik(alpha, omega / (SUB_K * alpha)), rel=1e-12)


def test_common_beta_eq12_and_mu_per_domain():
    model = PoissonGammaModel(SUB_COC, K=SUB_K, N=SUB_N, structure="common_beta", tie=True)
    pm_model = model.build()
    lik = pm_model.compile_logp(vars=[pm_model["counts"]], jacobian=False)
    alpha = 0.45
    beta = 1 / (SUB_K * alpha)  # eq. 12: alpha = 1/(k beta), beta common
    assert lik({"alpha_log__": np.log(alpha)}) == pytest.approx(
        per_domain_cell_loglik(alpha, beta), rel=1e-12
    )
    fn = pm_model.compile_fn(
        [pm_model["mu"], pm_model["mu_total"]], inputs=pm_model.free_RVs, point_fn=False
    )
    mu, mu_total = fn(alpha)
    expected = SUB_N * (1 + SUB_N * beta) ** (-(1 + alpha))  # eq. 10 per subpopulation
    np.testing.assert_allclose(mu, expected, rtol=1e-10)
    assert mu_total == pytest.approx(expected.sum(), rel=1e-10)
    # Seed section 3.1: under eq. 12 f_u is decreasing in N_j, largest for the smallest N_j.
    assert np.argmax(expected / SUB_N) == np.argmin(SUB_N)


def test_hierarchical_noncentred_logp():
    model = PoissonGammaModel(SUB_COC, K=SUB_K, N=SUB_N)
    assert model.structure == "hierarchical"
    assert set(model.priors) == {"alpha_median", "alpha_spread", "omega_median", "omega_spread"}
    pm_model = model.build()
    lik = pm_model.compile_logp(vars=[pm_model["counts"]], jacobian=False)
    z_a, z_o = np.array([-1.0, 0.5, 0.2]), np.array([0.3, -0.4, 0.0])
    pt_ = {
        "alpha_median_log__": np.log(0.5),
        "alpha_spread_log__": np.log(0.7),
        "alpha_z": z_a,
        "omega_median_log__": np.log(1.1),
        "omega_spread_log__": np.log(0.2),
        "omega_z": z_o,
    }
    alpha = np.exp(np.log(0.5) + 0.7 * z_a)
    omega = np.exp(np.log(1.1) + 0.2 * z_o)
    assert lik(pt_) == pytest.approx(
        per_domain_cell_loglik(alpha, omega / (SUB_K * alpha)), rel=1e-12
    )


# --------------------------------------------------------------------- priors
def test_prior_overrides_merge_and_unknown_keys_rejected_together():
    model = PoissonGammaModel(COC0, K=K0, N=N0, priors={"alpha": {"sigma": 1.0}})
    assert model.priors["alpha"] == {"dist": "LogNormal", "mu": 0.0, "sigma": 1.0}
    assert model.priors["omega"]["sigma"] == 1.0
    assert PoissonGammaModel.default_priors["alpha"]["sigma"] == 2.5  # defaults untouched
    with pytest.raises(InputError, match=r"\['bogus', 'gamma'\].*valid names are \['alpha'"):
        PoissonGammaModel(COC0, K=K0, N=N0, priors={"gamma": {}, "bogus": {}})
    with pytest.raises(InputError, match="omega"):  # tie removes omega
        PoissonGammaModel(COC0, K=K0, N=N0, tie=True, priors={"omega": {"sigma": 1}})


def test_prior_replacement_changes_the_graph():
    model = PoissonGammaModel(
        COC0, K=K0, N=N0, priors={"alpha": {"dist": "Gamma", "alpha": 2.0, "beta": 4.0}}
    )
    pm_model = model.build()
    prior = pm_model.compile_logp(vars=[pm_model["alpha"]], jacobian=False)
    point = {"alpha_log__": np.log(0.7), "omega_log__": 0.0}
    # the function's own inputs: PyMC up to 5.25 refuses extra values, later ones ask
    # for every value variable of the model
    names = {i.variable.name for i in prior.f.maker.inputs}
    got = prior({k: v for k, v in point.items() if k in names})
    # rel 1e-7: PyTensor's Gamma logp differs from scipy in the 8th digit; the default
    # LogNormal(0, 2.5) prior would give -1.49 here, so the override is what is evaluated.
    assert got == pytest.approx(stats.gamma.logpdf(0.7, 2.0, scale=1 / 4.0), rel=1e-7)


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"K": 10}, "at least the number of observed cells"),
        ({"N": 100}, "below the sample size"),
        ({"n": 5}, "differs from sum_j"),
        ({"structure": "separate"}, "per subpopulation"),
        ({"structure": "nested"}, "unknown structure"),
    ],
)
def test_bad_input_names_problem_and_fix(kwargs, pattern):
    args = {"K": K0, "N": N0} | kwargs
    with pytest.raises(InputError, match=pattern):
        PoissonGammaModel(COC0, **args)


def test_counts_input_forms_agree():
    series = pd.Series(COC0, name="m").rename_axis("count")
    dense = np.zeros(max(COC0), dtype=int)
    for j, m in COC0.items():
        dense[j - 1] = m
    for form in (series, dense):
        assert (
            PoissonGammaModel(form, K=K0, N=N0).data_summary()
            == PoissonGammaModel(COC0, K=K0, N=N0).data_summary()
        )
    with pytest.raises(InputError, match="integer pairs"):
        PoissonGammaModel({1: 3, 2: -1}, K=K0, N=N0)
    with pytest.raises(InputError, match="subpopulation"):
        PoissonGammaModel(SUB_COC, K=SUB_K, N=SUB_N, structure="pooled")


def test_from_microdata_contract_with_fake_object():
    table = pd.DataFrame(
        {
            "region": ["a", "a", "b", "b", "b"],
            "sex": [1, 2, 1, 2, 3],
            "fk": [1, 3, 1, 1, 2],
            "Fk_hat": [10.0, 30.0, 12.0, 8.0, 40.0],
        }
    )
    coc = table["fk"].value_counts().sort_index().rename("m").rename_axis("count")
    cells = types.SimpleNamespace(
        table=table,
        fk=table["fk"].to_numpy(),
        Fk_hat=table["Fk_hat"].to_numpy(),
        counts_of_counts=coc,
        K=12,
        n_cells=5,
    )
    md = types.SimpleNamespace(cells=cells, n_records=8, weights=np.ones(8))
    model = PoissonGammaModel.from_microdata(md)
    s = model.data_summary()
    assert (s["n"], s["N"], s["K"], s["n_cells"], s["n_sample_uniques"]) == (8, 100.0, 12, 5, 3)
    sub = PoissonGammaModel.from_microdata(md, subpopulation="region", structure="separate")
    d = sub.data_summary()["domains"]
    assert d["a"] == {
        "n": 4,
        "N": 40.0,
        "K": 6,
        "n_cells": 2,
        "n_sample_uniques": 1,
        "max_count": 3,
    }
    assert d["b"]["N"] == 60.0 and d["b"]["n_sample_uniques"] == 2
    md_unweighted = types.SimpleNamespace(cells=cells, n_records=8, weights=None)
    with pytest.raises(InputError, match="population size"):
        PoissonGammaModel.from_microdata(md_unweighted)


# ------------------------------------------------------------ predictive sims
def test_multinomial_counts_of_counts_match_per_cell_simulation():
    # One multinomial per draw vs. tabulating K simulated cells: same distribution.
    rng = np.random.default_rng(5)
    K, alpha, nbeta, reps, J = 500, 0.4, 5.0, 4000, 6
    multi = simulate_counts_of_counts(np.full(reps, alpha), np.full(reps, nbeta), K, J, rng)
    cells = rng.negative_binomial(alpha, 1 / (1 + nbeta), size=(reps, K))
    brute = np.stack([(cells == j).sum(1) for j in range(J)] + [(cells >= J).sum(1)], axis=1)
    assert np.all(multi.sum(1) == K)
    se = np.sqrt(multi.var(0) / reps + brute.var(0) / reps)
    assert np.all(np.abs(multi.mean(0) - brute.mean(0)) < 4 * se)
    np.testing.assert_allclose(multi.var(0), brute.var(0), rtol=0.15)
    probs = negbin_count_probabilities(alpha, nbeta, J)
    np.testing.assert_allclose(probs[:-1], stats.nbinom.pmf(np.arange(J), alpha, 1 / (1 + nbeta)))
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)


# -------------------------------------------------------- closed-form ML check
def map_fit(coc, K, n, sigma_alpha, sigma_omega):
    """Mode of the closed-form log posterior in (alpha, omega), by scipy (no PyMC).

    Log-likelihood (seed 000 eq. 10, sample version) + LogNormal(0, sigma) log-densities
    of alpha and omega = K alpha beta; the density is maximised in (alpha, omega) itself
    (the log scale is only the optimiser's coordinates, no Jacobian is added).
    """

    def neg(x):
        a, w = np.exp(x)
        return -(
            closed_form_loglik(coc, K, n, a, w / (K * a))
            + stats.lognorm.logpdf(a, sigma_alpha)
            + stats.lognorm.logpdf(w, sigma_omega)
        )

    res = optimize.minimize(
        neg,
        np.zeros(2),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000},
    )
    a, w = np.exp(res.x)
    return a, w / (K * a)


def test_map_point_matches_scipy_posterior_mode():
    from sdcbayes.inference import fit, get_group

    K = 20_000
    f = simulate_cells(K, 40_000, 0.25, seed=3)
    coc = counts_of_counts(f)
    a_map, b_map = map_fit(coc, K, int(f.sum()), 2.5, 1.0)
    model = PoissonGammaModel(coc, K=K, N=1_000_000)
    post = get_group(fit(model, method="map", laplace=False, random_seed=0), "posterior")
    assert post.sizes["chain"] == 1 and post.sizes["draw"] == 1
    assert post["alpha"].item() == pytest.approx(a_map, rel=1e-5)
    assert post["beta"].item() == pytest.approx(b_map, rel=1e-5)
    assert a_map == pytest.approx(0.25, rel=0.1)  # and the data recover the truth


def test_from_real_microdata_pooled_strata_and_key_split_agree():
    from sdcbayes.datasets.benchmark import make_benchmark_file
    from sdcbayes.microdata import Microdata

    df = make_benchmark_file(5000, seed=1)
    keys = ["key1", "key2", "key3", "key4", "key5"]
    md = Microdata(df, keys=keys, weight="weight")
    s = PoissonGammaModel.from_microdata(md).data_summary()
    assert (s["n"], s["K"]) == (5000, 10 * 2 * 5 * 20 * 8)
    assert s["N"] == pytest.approx(df["weight"].sum(), rel=1e-12)
    assert s["n_sample_uniques"] == int((df.groupby(keys, observed=True).size() == 1).sum())
    by_key = PoissonGammaModel.from_microdata(md, subpopulation="key2").data_summary()
    md_strata = Microdata(df, keys=[k for k in keys if k != "key2"], weight="weight",
                          strata="key2")
    by_stratum = PoissonGammaModel.from_microdata(md_strata, by_stratum=True).data_summary()
    assert by_key["domains"] == by_stratum["domains"]
    assert by_key["domains"]["key2_00"]["K"] == 8000
    n_by_level = df.groupby("key2", observed=True).size()
    assert by_key["domains"]["key2_01"]["n"] == n_by_level["key2_01"]


def test_simulate_subpopulations_common_beta():
    # Eq. 12: one (alpha, beta), subpopulations differ through n_d: replicated m_j per
    # domain centre on K P(f = j | alpha, n_d beta) (closed form, scipy).
    import xarray as xr

    model = PoissonGammaModel(SUB_COC, K=SUB_K, N=SUB_N, structure="common_beta")
    alpha, beta = 0.5, 1 / (SUB_K * 0.5)
    params = xr.Dataset({"alpha": (("chain", "draw"), np.full((2, 500), alpha)),
                         "beta": (("chain", "draw"), np.full((2, 500), beta))})
    sims = model.simulate(params, np.random.default_rng(0), max_count=4)["m"]
    assert sims.dims == ("chain", "draw", "domain", "count")
    assert np.all(sims.sum("count") == SUB_K)
    n_d = np.array([f.sum() for f in SUB_F])
    expected = SUB_K * stats.nbinom.pmf(1, alpha, 1 / (1 + n_d * beta))
    se = sims.sel(count=1).std(("chain", "draw")).values / np.sqrt(1000)
    assert np.all(np.abs(sims.sel(count=1).mean(("chain", "draw")).values - expected) < 4 * se)


def test_from_microdata_refuses_wildcard_cells():
    # wildcard cells overlap the cells they match: no points of the K-cell space, and their
    # weight sums count the matched records' weights again
    from sdcbayes import Microdata

    frame = pd.DataFrame({"a": [1, 1, 2, 2], "b": [1.0, np.nan, 1.0, 2.0], "w": 10.0})
    with pytest.raises(InputError, match=r"1 key combinations have a missing value.*"
                                         r"missing='category'"):
        PoissonGammaModel.from_microdata(Microdata(frame, keys=["a", "b"], weight="w"))
    model = PoissonGammaModel.from_microdata(
        Microdata(frame, keys=["a", "b"], weight="w", missing="category"))
    assert model.data_summary()["N"] == pytest.approx(40.0)  # each weight counted once


def _calibration_replicate(rep: int) -> dict:
    """One sample from the model's own world, fitted by NUTS; truth and intervals.

    World (audit DD4): alpha from the default prior LogNormal(0, 2.5), the tie
    K alpha beta = 1 (which the data pin anyway, class docstring), cell probabilities
    Gamma(alpha, 1/(K alpha)), F_k ~ Poisson(N pi_k), Bernoulli sampling at rate s.
    Samples with fewer than 5 sample uniques are redrawn (a rejection on the data
    keeps the posterior calibrated).
    """
    from sdcbayes import Microdata
    from sdcbayes.inference.fitting import fit
    from sdcbayes.risk.posterior_assess import assess_from_posterior

    rng = np.random.default_rng([4242, rep])
    while True:
        K = int(rng.integers(200, 1001))
        s = rng.uniform(0.02, 0.10)
        N = rng.uniform(500, 2000) / s
        alpha = float(np.exp(rng.normal(0, 2.5)))
        pi = rng.gamma(alpha, 1 / (K * alpha), K)
        F = rng.poisson(N * pi)
        f = rng.binomial(F, s)
        if (f == 1).sum() >= 5:
            break
    md = Microdata(pd.DataFrame({"cell": np.repeat(np.arange(K), f)}), keys=["cell"], K=K,
                   sampling_fraction=s, max_levels=10**6)
    spec = PoissonGammaModel.from_microdata(md, N=None)
    ds = spec.data_summary()
    idata = fit(spec, draws=500, chains=2, tune=500, random_seed=rep, cores=1,
                progressbar=False)
    res = assess_from_posterior(md, idata, "poisson-gamma", random_seed=rep,
                                n=float(ds["n"]), N=float(ds["N"]))
    a = idata.posterior["alpha"].to_numpy().ravel()
    unique = f == 1
    out = {"alpha": np.quantile(a, 0.05) <= alpha <= np.quantile(a, 0.95)}
    truths = {"tau1": int((unique & (F == 1)).sum()), "tau2": float((1.0 / F[unique]).sum())}
    for name, truth in truths.items():
        lo, hi = res.summary[f"{name}_interval"]
        out[name] = lo <= truth <= hi
    return out


@pytest.mark.slow
def test_nuts_intervals_are_calibrated_in_the_models_own_world():
    """90% intervals of alpha, tau1 and tau2 cover the truth at the nominal rate (NUTS).

    100 replicates from the model's own world (prior draws of alpha, K 200-1000, n
    500-2000, sampling fractions 2-10%); 2 chains x 500 draws after 500 tuning steps
    (the audit's 98 replicates at the defaults gave alpha 0.92, tau1 0.96, tau2 0.86).
    Each coverage must reach 83 of 100 (P(X <= 82 | 100, 0.9) = 0.010; an interval
    that covers 80% fails with probability 0.73), and alpha's and tau2's must stay at
    most 97 (P(X > 97) = 0.002: intervals far too wide); tau1's whole-number bounds
    over-cover, so it has no upper bound. A calibrated model fails with probability
    below 3.5%.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sampler chatter of short chains
        rows = [_calibration_replicate(rep) for rep in range(100)]
    hits = {name: sum(bool(r[name]) for r in rows) for name in ("alpha", "tau1", "tau2")}
    assert all(v >= 83 for v in hits.values()), hits
    assert hits["alpha"] <= 97 and hits["tau2"] <= 97, hits
