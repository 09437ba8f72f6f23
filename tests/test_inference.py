"""Inference layer: fit methods, diagnostics, weighted PSIS-LOO, comparison, I/O.

Reference numbers come from independent computations in this file: the
closed-form negative-binomial log-likelihood (scipy), ArviZ on the *expanded*
one-entry-per-cell log-likelihood, and synthetic chains with known defects.
"""

import importlib.util
import json
import logging
import re
import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr
from scipy import optimize, stats

from sdcbayes import _compat
from sdcbayes._version import __version__
from sdcbayes.exceptions import ConvergenceError, InputError, MissingDependencyError
from sdcbayes.inference import (
    ConvergenceWarning,
    SdcbayesWarning,
    check_diagnostics,
    compare,
    compute_diagnostics,
    fit,
    fit_diagnostics,
    fitting,
    get_group,
    load_posterior,
    loo,
    posterior_predictive,
    predictive_check,
    prior_predictive,
    provenance,
    save_posterior,
)
from sdcbayes.models.poisson_gamma import PoissonGammaModel

TRUE_ALPHA = 0.25


def simulate_coc(K, n_mean, alpha, seed):
    rng = np.random.default_rng(seed)
    f = rng.negative_binomial(alpha, 1.0 / (1.0 + n_mean / (K * alpha)), size=K)
    j, m = np.unique(f[f > 0], return_counts=True)
    return dict(zip(j.tolist(), m.tolist(), strict=True)), int(f.sum())


def loglik(coc, K, n, alpha, beta):
    j = np.array([0, *coc])
    m = np.array([K - sum(coc.values()), *coc.values()])
    return float(np.sum(m * stats.nbinom.logpmf(j, alpha, 1.0 / (1.0 + n * beta))))


# Large data: K = 20 000 cells, n ~ 50 000 records (posterior concentrated).
K_BIG = 20_000
COC_BIG, N_BIG = simulate_coc(K_BIG, 50_000, TRUE_ALPHA, seed=7)
# Small data for the expanded (one entry per cell) reference computations.
K_SMALL = 300
COC_SMALL, N_SMALL = simulate_coc(K_SMALL, 900, 0.5, seed=8)


def quiet_fit(*args, **kwargs):
    # Plumbing fits use short chains; their convergence warnings are tested separately.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit(*args, **kwargs)


@pytest.fixture(scope="module")
def big_model():
    return PoissonGammaModel(COC_BIG, K=K_BIG, N=1_000_000)


@pytest.fixture(scope="module")
def nuts_fit(big_model):
    return quiet_fit(big_model, draws=300, tune=300, chains=2, random_seed=1)


@pytest.fixture(scope="module")
def laplace_fit(big_model):
    return fit(big_model, method="map", draws=300, chains=2, random_seed=2)


@pytest.fixture(scope="module")
def small_fits():
    free = PoissonGammaModel(COC_SMALL, K=K_SMALL, N=10_000)
    tie = PoissonGammaModel(COC_SMALL, K=K_SMALL, N=10_000, tie=True)
    return {
        "free": fit(free, method="map", draws=250, chains=2, random_seed=3),
        "tie": fit(tie, method="map", draws=250, chains=2, random_seed=4),
    }


# ------------------------------------------------------------ one container
def check_container(idata, chains, draws):
    for group in ("posterior", "log_likelihood", "observed_data", "constant_data"):
        get_group(idata, group)  # raises if absent
    post = get_group(idata, "posterior")
    assert post.sizes["chain"] == chains and post.sizes["draw"] == draws
    for name in ("alpha", "omega", "beta", "mu", "f_u"):
        assert post[name].dims == ("chain", "draw")
    ll = get_group(idata, "log_likelihood")["counts"]
    assert ll.dims == ("chain", "draw", "count")
    assert list(get_group(idata, "constant_data")["m"].dims) == ["count"]


def test_nuts_and_laplace_return_the_same_container(nuts_fit, laplace_fit):
    check_container(nuts_fit, 2, 300)
    check_container(laplace_fit, 2, 300)
    # log_likelihood holds m_j log p(j): summed over count it is the closed-form log-lik.
    post = get_group(laplace_fit, "posterior").isel(chain=0, draw=0)
    total = get_group(laplace_fit, "log_likelihood")["counts"].isel(chain=0, draw=0).sum()
    expected = loglik(COC_BIG, K_BIG, N_BIG, post["alpha"].item(), post["beta"].item())
    assert total.item() == pytest.approx(expected, rel=1e-10)


def test_advi_returns_the_same_container_and_agrees(big_model, nuts_fit):
    idata = fit(big_model, method="advi", draws=200, chains=2, random_seed=5,
                advi_iterations=4000)
    check_container(idata, 2, 200)
    assert provenance(idata)["settings"]["method"] == "advi"
    a_nuts = get_group(nuts_fit, "posterior")["alpha"]
    a_advi = get_group(idata, "posterior")["alpha"]
    assert abs(a_advi.mean() - a_nuts.mean()) < 0.5 * a_nuts.std()
    assert a_advi.std().item() == pytest.approx(a_nuts.std().item(), rel=0.3)


def test_provenance_stamps(nuts_fit, big_model):
    stamps = provenance(nuts_fit)
    assert stamps["sdcbayes_version"] == __version__
    assert stamps["model"] == "poisson-gamma"
    assert stamps["model_options"] == {"structure": "pooled", "tie": False}
    assert stamps["priors"] == big_model.priors
    assert json.loads(get_group(nuts_fit, "posterior").attrs["priors"]) == big_model.priors
    assert stamps["data_summary"] == big_model.data_summary()
    assert stamps["settings"]["method"] == "nuts" and stamps["settings"]["draws"] == 300
    assert stamps["provenance"]["versions"]["pymc"]
    assert stamps["loglik_weight_var"] == "m"
    assert nuts_fit.attrs["model"] == "poisson-gamma"  # mirrored on idata.attrs
    diag = fit_diagnostics(nuts_fit)
    assert {"max_r_hat", "min_ess_bulk", "min_ess_tail", "divergences"} <= set(diag)
    assert 0.99 < diag["max_r_hat"] < 1.1 and diag["min_ess_bulk"] > 50


def test_laplace_diagnostics_are_not_applicable(laplace_fit):
    diag = fit_diagnostics(laplace_fit)
    assert np.isnan(diag["max_r_hat"]) and diag["laplace"] is True
    assert np.isnan(diag["divergences"])  # no sampler ran: not 0 divergences (audit BB1 F4)


# --------------------------------------------------------- statistical checks
def ml_estimate(coc, K, n):
    res = optimize.minimize(
        lambda x: -loglik(coc, K, n, np.exp(x[0]), np.exp(x[1])),
        np.log([1.0, 1.0 / K]),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-10, "maxiter": 4000},
    )
    return np.exp(res.x)


def test_posterior_means_agree_with_ml_on_large_data(nuts_fit):
    # Closed-form ML (scipy on the negative-binomial counts-of-counts likelihood).
    a_ml, b_ml = ml_estimate(COC_BIG, K_BIG, N_BIG)
    post = get_group(nuts_fit, "posterior")
    for name, ml in (("alpha", a_ml), ("beta", b_ml)):
        draws = post[name]
        assert abs(draws.mean().item() - ml) < 0.25 * draws.std().item(), name
        assert draws.mean().item() == pytest.approx(ml, rel=0.02), name


def test_parameter_recovery_nuts(nuts_fit):
    post = get_group(nuts_fit, "posterior")
    true_beta = 1 / (K_BIG * TRUE_ALPHA)  # simulated with the tie alpha beta = 1/K
    for name, truth in (("alpha", TRUE_ALPHA), ("beta", true_beta), ("omega", 1.0)):
        lo, hi = np.quantile(post[name].values, [0.005, 0.995])
        assert lo < truth < hi, (name, lo, hi, truth)


def test_laplace_matches_nuts_and_closed_form_curvature(nuts_fit, laplace_fit, big_model):
    a_nuts = np.log(get_group(nuts_fit, "posterior")["alpha"].values)
    a_lap = np.log(get_group(laplace_fit, "posterior")["alpha"].values)
    assert abs(a_lap.mean() - a_nuts.mean()) < 0.2 * a_nuts.std()

    # Curvature of the closed-form log posterior in (log alpha, log omega), Jacobian
    # included, by central finite differences: the Laplace covariance is its inverse.
    def logpost(x):
        la, lw = x
        a, w = np.exp(la), np.exp(lw)
        return (loglik(COC_BIG, K_BIG, N_BIG, a, w / (K_BIG * a))
                + stats.lognorm.logpdf(a, 2.5) + la + stats.lognorm.logpdf(w, 1.0) + lw)

    mode = optimize.minimize(lambda x: -logpost(x), np.zeros(2), method="Nelder-Mead",
                             options={"xatol": 1e-9, "fatol": 1e-10}).x
    h = 1e-3
    H = np.empty((2, 2))
    for i in range(2):
        for k in range(2):
            e_i, e_k = np.eye(2)[i] * h, np.eye(2)[k] * h
            H[i, k] = -(logpost(mode + e_i + e_k) - logpost(mode + e_i - e_k)
                        - logpost(mode - e_i + e_k) + logpost(mode - e_i - e_k)) / (4 * h * h)
    sd = np.sqrt(np.diag(np.linalg.inv(H)))
    assert a_lap.mean() == pytest.approx(mode[0], abs=0.2 * sd[0])
    # 600 draws: the sd estimate has ~3 % Monte Carlo error.
    assert a_lap.std() == pytest.approx(sd[0], rel=0.12)
    # The NUTS start (mode, Laplace variances) is the same point and curvature, found
    # from PyMC's compiled gradient (value variables: log alpha, log omega).
    x, var = fitting._laplace_start(fitting.compiled_model(big_model))
    np.testing.assert_allclose(x, mode, atol=1e-3 * sd.min())
    np.testing.assert_allclose(np.sqrt(var), sd, rtol=1e-3)


# ------------------------------------------------------------- diagnostics
def synthetic_idata(shift=0.0, diverging=0):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 500, 2))
    a[1, :, 1] += shift  # chain 1 disagrees on domain "b"
    div = np.zeros((2, 500), dtype=bool)
    div[0, :diverging] = True
    return _compat.from_dict(posterior={"alpha": a}, sample_stats={"diverging": div},
                        coords={"domain": ["a", "b"]}, dims={"alpha": ["domain"]})


def test_diagnostics_name_the_parameter_and_the_fix():
    good = compute_diagnostics(synthetic_idata())
    assert good["max_r_hat"] < 1.01 and good["divergences"] == 0
    assert check_diagnostics(good) == []
    bad = compute_diagnostics(synthetic_idata(shift=3.0, diverging=3))
    assert bad["max_r_hat"] > 1.5 and bad["max_r_hat_at"] == "alpha[domain=b]"
    assert bad["divergences"] == 3
    with pytest.warns(ConvergenceWarning, match=r"alpha\[domain=b\] has R-hat.*tuning"):
        problems = check_diagnostics(bad)
    assert any("3 divergent transitions" in p and "target_accept" in p for p in problems)
    assert issubclass(ConvergenceWarning, SdcbayesWarning) and issubclass(SdcbayesWarning,
                                                                            UserWarning)
    with pytest.raises(ConvergenceError, match=r"R-hat.*divergent"):
        check_diagnostics(bad, strict=True)


def test_fit_strict_turns_warnings_into_errors(big_model):
    with pytest.raises(ConvergenceError, match="ESS"):
        fit(big_model, draws=15, tune=15, chains=2, cores=1, random_seed=0, strict=True)


# ------------------------------------------------------- compiled-once fits
def test_compiled_graph_is_reused_with_new_data_and_fits_it():
    a = PoissonGammaModel(COC_SMALL, K=K_SMALL, N=10_000)
    coc_b, n_b = simulate_coc(400, 2500, 1.5, seed=21)  # other K, n, and number of j
    b = PoissonGammaModel(coc_b, K=400, N=20_000)
    assert len(coc_b) != len(COC_SMALL)
    comp = fitting.compiled_model(a)
    assert fitting.compiled_model(b) is comp  # same structure: one compiled graph
    other = PoissonGammaModel(COC_SMALL, K=K_SMALL, N=10_000, priors={"alpha": {"sigma": 1.0}})
    assert fitting.compiled_model(other) is not comp  # priors are part of the structure

    fit_a = quiet_fit(a, draws=200, tune=200, chains=2, random_seed=11)
    fit_b = quiet_fit(b, draws=300, tune=300, chains=2, random_seed=12)
    # The data were swapped in: observed data, weights and the log-likelihood are b's.
    assert get_group(fit_b, "constant_data")["m"].sum().item() == 400
    assert get_group(fit_b, "observed_data")["counts"].sizes["count"] == len(coc_b) + 1
    post = get_group(fit_b, "posterior").isel(chain=1, draw=7)
    total = get_group(fit_b, "log_likelihood")["counts"].isel(chain=1, draw=7).sum().item()
    assert total == pytest.approx(loglik(coc_b, 400, n_b, post["alpha"].item(),
                                         post["beta"].item()), rel=1e-10)
    # ... and the posterior is b's: centred on b's ML estimate (scipy, closed form).
    a_ml, _ = ml_estimate(coc_b, 400, n_b)
    draws = get_group(fit_b, "posterior")["alpha"]
    assert abs(draws.mean().item() - a_ml) < 0.5 * draws.std().item()
    assert get_group(fit_a, "constant_data")["m"].sum().item() == K_SMALL

    # A warm fit (data swapped back in) equals a fit after a fresh compilation, draw
    # for draw: nothing of an earlier fit (tuning, data) leaks into the next one.
    again = quiet_fit(a, draws=200, tune=200, chains=2, random_seed=11)
    fitting._COMPILED.clear()
    fresh = quiet_fit(a, draws=200, tune=200, chains=2, random_seed=11)
    for name in ("alpha", "omega", "mu"):
        np.testing.assert_array_equal(get_group(again, "posterior")[name],
                                      get_group(fit_a, "posterior")[name])
        np.testing.assert_array_equal(get_group(fresh, "posterior")[name],
                                      get_group(fit_a, "posterior")[name])
    xr.testing.assert_equal(get_group(fresh, "log_likelihood"),
                            get_group(fit_a, "log_likelihood"))


def test_pymc_sample_path_still_serves_sampler_options():
    # Options for pymc.sample (here its init) take PyMC's own sampler loop; same container.
    model = PoissonGammaModel(COC_SMALL, K=K_SMALL, N=10_000)
    idata = quiet_fit(model, draws=150, tune=150, chains=2, random_seed=3, init="adapt_diag")
    check_container(idata, 2, 150)
    assert "tree_depth" in get_group(idata, "sample_stats")


# ----------------------------------------------------------- method registry
def test_optional_backend_runs_or_names_the_missing_package(big_model):
    if importlib.util.find_spec("nutpie") is None:
        with pytest.raises(MissingDependencyError, match=r"'nutpie'.*pip install") as info:
            fit(big_model, method="nutpie", draws=50, tune=50, chains=1)
        assert isinstance(info.value, ImportError)
    else:
        idata = quiet_fit(big_model, method="nutpie", draws=50, tune=50, chains=1)
        check_container(idata, 1, 50)


def test_bad_fit_arguments():
    model = PoissonGammaModel(COC_SMALL, K=K_SMALL, N=10_000)
    with pytest.raises(InputError, match=r"unknown method 'hmc'.*\['advi', 'map'"):
        fit(model, method="hmc")
    with pytest.raises(InputError, match="draws must be a positive integer"):
        fit(model, draws=0)


# ------------------------------------------------------------------ LOO
def expanded(idata):
    """The same posterior with one log-likelihood entry per cell (m_j copies of log p(j))."""
    ll = get_group(idata, "log_likelihood")["counts"]
    # float64 weights (pm.Data would wrap m_0 >= 2**31 as int32), whole numbers
    m = get_group(idata, "constant_data")["m"].values.astype(np.int64)
    per_cell = np.repeat(ll.values / m, m, axis=-1)
    return _compat.make_container(
        posterior=get_group(idata, "posterior"),
        log_likelihood=xr.Dataset({"counts": (("chain", "draw", "cell"), per_cell)}),
    )


def test_weighted_loo_equals_expanded_per_cell_loo(small_fits):
    idata = small_fits["free"]
    ours = loo(idata)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _compat.ElpdFields(az.loo(expanded(idata), pointwise=True))
    assert ours.n_data_points == K_SMALL == ref.n_data_points
    assert ours.elpd_loo == pytest.approx(ref.elpd_loo, rel=1e-10)
    assert ours.se == pytest.approx(ref.se, rel=1e-8)
    assert ours.p_loo == pytest.approx(ref.p_loo, rel=1e-8)
    m = get_group(idata, "constant_data")["m"].values.astype(np.int64)
    np.testing.assert_allclose(np.repeat(ours.pareto_k.values, m), ref.pareto_k.values)


def test_compare_matches_arviz_on_expanded_data(small_fits):
    table = compare(small_fits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _compat.compare_table({k: expanded(v) for k, v in small_fits.items()}, K_SMALL)
    assert list(table.index) == list(ref.index)
    for col in ("rank", "elpd_loo", "p_loo", "elpd_diff", "se", "dse"):
        np.testing.assert_allclose(table[col].astype(float), ref[col].astype(float),
                                   rtol=1e-8, atol=1e-8, err_msg=col)
    np.testing.assert_allclose(table["weight"], ref["weight"], atol=2e-3)
    assert set(table["method"]) == {"map"} and set(table["model"]) == {"poisson-gamma"}


def test_compare_refuses_fits_on_different_data(small_fits, laplace_fit):
    with pytest.raises(InputError, match="not made on the same data"):
        compare({"small": small_fits["free"], "big": laplace_fit})


# ------------------------------------------------------------------- I/O
def test_save_load_round_trip(tmp_path, small_fits):
    idata = small_fits["free"]
    path = save_posterior(idata, tmp_path / "run")
    assert path.name == "posterior.nc" and path.is_file()
    back = load_posterior(tmp_path / "run")
    xr.testing.assert_identical(get_group(back, "posterior"), get_group(idata, "posterior"))
    xr.testing.assert_allclose(get_group(back, "log_likelihood"),
                               get_group(idata, "log_likelihood"))
    assert provenance(back) == provenance(idata)
    assert back.attrs["model"] == "poisson-gamma"
    assert loo(back).elpd_loo == pytest.approx(loo(idata).elpd_loo, rel=1e-12)
    with pytest.raises(InputError, match="no posterior file"):
        load_posterior(tmp_path / "elsewhere")


def test_get_group_reads_datatree_and_names_missing_groups(small_fits):
    idata = small_fits["free"]
    tree = xr.DataTree.from_dict({g: get_group(idata, g) for g in ("posterior", "constant_data")})
    xr.testing.assert_identical(get_group(tree, "posterior"), get_group(idata, "posterior"))
    with pytest.raises(InputError, match=r"no group 'prior'.*available groups"):
        get_group(idata, "prior")


# ------------------------------------------------------------- predictive
def test_prior_and_posterior_predictive_counts_of_counts(big_model, laplace_fit):
    prior = prior_predictive(big_model, draws=200, random_seed=1)
    sims = get_group(prior, "prior_predictive")["m"]
    assert sims.dims == ("chain", "draw", "count")
    assert np.all(sims.sum("count") == K_BIG)  # every replicate has K cells
    table = predictive_check(big_model, prior, kind="prior", counts=(1, 2))
    assert list(table.columns) == ["observed", "mean", "lower", "upper", "p_value", "p_lower",
                                   "inside"]

    idata = posterior_predictive(big_model, laplace_fit, random_seed=2)
    table = predictive_check(big_model, idata, counts=(0, 1, 2, 3, 4, 5))
    assert table.loc[1, "observed"] == COC_BIG[1]  # sample uniques
    # Well-specified model: replicated m_j centre on K P(f = j) at the true parameters
    # (closed form, scipy) and no observed m_j is extreme at the 0.1 % level (this seed's
    # m_1 sits 2.5 sd low in the simulated data itself).
    p_true = 1 / (1 + N_BIG / (K_BIG * TRUE_ALPHA))
    expected = K_BIG * stats.nbinom.pmf(table.index.to_numpy(), TRUE_ALPHA, p_true)
    sims = get_group(idata, "posterior_predictive")["m"].sel(count=list(table.index))
    assert np.all(np.abs(table["mean"] - expected) < 3 * sims.std(("chain", "draw")).values)
    assert table["p_value"].between(0.001, 0.999).all(), table
    assert table["p_lower"].between(0.001, 0.999).all(), table
    # The posterior predictive is much tighter than the prior predictive.
    width = (table["upper"] - table["lower"]).loc[1]
    assert width < 0.2 * float(get_group(prior, "prior_predictive")["m"].sel(count=1).std())
    with pytest.raises(InputError, match="pooled tail"):
        predictive_check(big_model, idata, counts=(1, 10_000))


def test_predictive_check_flags_a_misspecified_model():
    # Zero-inflated data (half the cells structurally empty, the rest Poisson(4)) is not
    # negative binomial: the fitted model over-predicts sample uniques by far.
    rng = np.random.default_rng(9)
    K = 4000
    f = np.where(rng.random(K) < 0.5, 0, rng.poisson(4.0, K))
    j, m = np.unique(f[f > 0], return_counts=True)
    model = PoissonGammaModel(dict(zip(j.tolist(), m.tolist(), strict=True)), K=K, N=1e5)
    idata = posterior_predictive(model, fit(model, method="map", draws=200, chains=1,
                                            random_seed=0), random_seed=1)
    table = predictive_check(model, idata, counts=(1, 2, 4))
    assert not table["inside"].any()
    assert table.loc[1, "p_value"] == 1.0 and table.loc[1, "mean"] > 2 * table.loc[1, "observed"]
    assert table.loc[1, "p_lower"] == 0.0  # the fewer-uniques tail flags it


def test_subpopulation_fit_and_weighted_loo():
    # Three subpopulations (seed 000 eq. 11 with the tie); LOO entries are (domain, count)
    # pairs weighted by m_dj, and n_data_points counts every cell. (The hierarchical
    # graph's logp is checked in test_model_poisson_gamma; fewer parameters keep this fast.)
    tables, n_d = {}, []
    for d, (a, seed) in enumerate([(0.3, 31), (0.6, 32), (0.45, 33)]):
        coc, n = simulate_coc(500, 1500, a, seed)
        tables[f"d{d}"], _ = coc, n_d.append(n)
    model = PoissonGammaModel(tables, K=500, N=[40_000, 50_000, 60_000], structure="separate",
                              tie=True)
    idata = fit(model, method="map", draws=200, chains=1, random_seed=0)
    assert get_group(idata, "log_likelihood")["counts"].dims == ("chain", "draw", "domain",
                                                                 "count")
    post = get_group(idata, "posterior")
    assert post["mu"].dims == ("chain", "draw", "domain") and "mu_total" in post
    result = loo(idata)
    assert result.n_data_points == 3 * 500
    total = get_group(idata, "log_likelihood")["counts"].isel(chain=0, draw=0).sum().item()
    a0 = post["alpha"].isel(chain=0, draw=0).values
    b0 = post["beta"].isel(chain=0, draw=0).values
    expected = sum(loglik(t, 500, n, a, b) for t, n, a, b in
                   zip(tables.values(), n_d, a0, b0, strict=True))
    assert total == pytest.approx(expected, rel=1e-10)


# ------------------------------------------------------------------ slow tier
@pytest.mark.slow
def test_coverage_of_90_percent_intervals_over_replicates():
    # Frequentist coverage of the central 90 % posterior intervals of alpha and beta over
    # 100 data sets simulated from the model (fixed truth; the prior is weak next to
    # K = 2000 cells, so coverage should be nominal). 100 Bernoulli(0.9) trials: sd 3 %,
    # so [0.81, 0.97] is a 3-sd acceptance band.
    reps, K, alpha = 100, 2000, 0.5
    beta = 1 / (K * alpha)
    hits = {"alpha": 0, "beta": 0}
    for r in range(reps):
        coc, _ = simulate_coc(K, 5000, alpha, seed=1000 + r)
        model = PoissonGammaModel(coc, K=K, N=100_000)
        post = get_group(quiet_fit(model, draws=500, tune=500, chains=2, random_seed=r),
                         "posterior")
        for name, truth in (("alpha", alpha), ("beta", beta)):
            lo, hi = np.quantile(post[name].values, [0.05, 0.95])
            hits[name] += int(lo < truth < hi)
    coverage = {k: v / reps for k, v in hits.items()}
    print("coverage of 90% intervals:", coverage)
    for name, c in coverage.items():
        assert 0.81 <= c <= 0.97, (name, c)


def test_gibbs_rhat_advice_names_the_classes_and_longer_runs():
    # the latent-class chains drift for thousands of sweeps (benchmarks/README.md, "How long
    # the Gibbs chains take to settle"): the advice is a longer run and more chains
    import warnings as _w

    from sdcbayes.inference.diagnostics import check_diagnostics

    diag = {"max_r_hat": 1.2, "max_r_hat_at": "tau1", "min_ess_bulk": 1e4, "min_ess_tail": 1e4,
            "chains": 4, "divergences": 0}
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        gibbs = check_diagnostics(diag, sampler="gibbs")
        nuts = check_diagnostics(diag)
    assert len(gibbs) == 1 and "latent classes" in gibbs[0] and "drift" in gibbs[0]
    assert "tune=5000" in gibbs[0] and "more chains" in gibbs[0]
    assert "tune=2000" in nuts[0]


def test_one_chain_has_no_r_hat_and_logs_nothing(caplog):
    # r_hat needs two chains; ArviZ would log a shape warning that --quiet cannot silence
    # (the diagnostics are computed without ArviZ's per-element loop and its logger)
    rng = np.random.default_rng(0)
    idata = _compat.from_dict(posterior={"tau1": rng.normal(size=(1, 200))})
    with caplog.at_level(logging.DEBUG):
        d = compute_diagnostics(idata)
    assert not caplog.records
    assert d["chains"] == 1 and np.isnan(d["max_r_hat"])
    assert d["min_ess_bulk"] > 50  # ESS still computed from the one chain
    assert d["min_ess_bulk"] == pytest.approx(float(az.ess(idata)["tau1"]), rel=1e-12)
    assert check_diagnostics(d, ess_threshold=10, sampler="gibbs") == []
    two = _compat.from_dict(posterior={"tau1": rng.normal(size=(2, 200))})
    d2 = compute_diagnostics(two)  # two chains: r_hat computed, as ArviZ computes it
    assert d2["max_r_hat"] == pytest.approx(float(az.rhat(two)["tau1"]), rel=1e-12)


# ------------------------------------------------------------------ progress display
class _Terminal:
    """A stderr that says it is a terminal (and keeps what is written)."""

    def __init__(self):
        import io

        self.buf = io.StringIO()

    def write(self, text):
        return self.buf.write(text)

    def flush(self):
        pass

    def isatty(self):
        return True


def test_progress_off_a_terminal_is_plain_lines_not_pymcs_table(monkeypatch):
    # stderr a pipe or a log file (`sdcbayes compare ... 2>&1 | cat`): PyMC's rich table
    # would stay in the log as a "Progre… Diverg…" block; one line per chain instead.
    import io
    import sys

    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    model = PoissonGammaModel(COC_SMALL, K=K_SMALL, N=10_000)
    quiet_fit(model, draws=20, tune=20, chains=2, random_seed=5, progressbar=True)
    lines = log.getvalue().splitlines()
    assert len(lines) == 2, log.getvalue()
    for c, line in enumerate(lines, start=1):
        assert re.fullmatch(rf"chain {c}/2: 20 tuning steps and 20 draws done, \d+ "
                            "divergences", line), line
    assert "Diverg" not in log.getvalue() and "━" not in log.getvalue()


def test_pymcs_live_display_only_on_a_terminal(monkeypatch):
    import io
    import sys

    # Terminal: PyMC's own display, whatever mode was asked for (behaviour unchanged).
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert fitting._live_progress(True) is True
    assert fitting._live_progress("combined") == "combined"
    assert fitting._live_progress(False) is False
    # A pipe or a file: the samplers only PyMC draws progress for get none.
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert fitting._live_progress(True) is False
    assert isinstance(fitting._progress_bar(None, chains=2, draws=5, tune=5, progressbar=True),
                      fitting._LineProgress)
    seen = {}

    def recording_sample(**kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop here")  # the options are what is checked

    monkeypatch.setattr(fitting.pm, "sample", recording_sample)
    model = PoissonGammaModel(COC_SMALL, K=K_SMALL, N=10_000)
    with pytest.raises(RuntimeError, match="stop here"):  # pymc.sample's path (its init)
        fit(model, draws=5, tune=5, chains=2, progressbar=True, init="adapt_diag")
    assert seen["progressbar"] is False
