"""Beta-binomial domain model (Zaslavsky & Horton 1998, seed 003).

Reference values: the graph's log-likelihood is checked against scipy.stats.betabinom
and a gammaln formula written out here; seed 003's Table 1 (P(Y | y) for n=3, N=8,
alpha=1, beta=10) and Table 2 (column P(y | n, N)) are copied from the paper.
Posterior means are checked against maximum likelihood computed here with scipy.
"""

from __future__ import annotations

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from scipy import optimize, stats
from scipy.special import expit, gammaln

from sdcbayes import _compat
from sdcbayes.exceptions import DataError, InputError
from sdcbayes.models.beta_binomial import BetaBinomialDomainModel


def _fit(model, draws=300, tune=300, chains=2, seed=0):
    """NUTS through the project's fit when it is there, else pm.sample directly."""
    try:
        from sdcbayes.inference.fitting import fit
    except ImportError:  # pragma: no cover - the inference layer is optional here
        fit = None
    if fit is not None:
        return fit(
            model, method="nuts", draws=draws, tune=tune, chains=chains, random_seed=seed, cores=1
        )
    return pm.sample(
        draws=draws,
        tune=tune,
        chains=chains,
        cores=1,
        random_seed=seed,
        progressbar=False,
        model=model.build(),
        compute_convergence_checks=False,
    )


def _betabin_loglik(y, n, a, b):
    """log BetaBin(y; n, a, b) written out with gammaln (seed 003, section 2 density)."""
    return (
        gammaln(n + 1)
        - gammaln(y + 1)
        - gammaln(n - y + 1)
        + gammaln(a + b)
        + gammaln(y + a)
        + gammaln(n - y + b)
        - gammaln(a)
        - gammaln(b)
        - gammaln(a + b + n)
    )


def _simulate(rng, n_domains, a, b):
    n = rng.integers(3, 30, n_domains)
    N = n * rng.integers(2, 20, n_domains)
    y = rng.binomial(n, rng.beta(a, b, n_domains))
    return y, n, N


def _observed_loglik(model, values):
    """Observed variable's log-likelihood at given parameter values (no Jacobian, no prior)."""
    pm_model = model.build()
    fn = pm_model.compile_logp(vars=pm_model.observed_RVs, jacobian=False)
    point = {}
    for rv in pm_model.free_RVs:
        value_var = pm_model.rvs_to_values[rv]
        transform = pm_model.rvs_to_transforms[rv]
        v = np.asarray(values[rv.name], dtype=float)
        point[value_var.name] = transform.forward(v).eval() if transform is not None else v
    return float(fn(point))


# ----------------------------------------------------------------- log-likelihood


def test_loglik_matches_closed_form_mean_concentration():
    rng = np.random.default_rng(11)
    y, n, N = _simulate(rng, 50, 1.5, 6.0)
    model = BetaBinomialDomainModel(y, n, N)
    mean, kappa = 0.23, 7.5
    expected = stats.betabinom.logpmf(y, n, mean * kappa, (1 - mean) * kappa).sum()
    assert expected == pytest.approx(
        _betabin_loglik(y, n, mean * kappa, (1 - mean) * kappa).sum(), abs=1e-9
    )
    got = _observed_loglik(model, {"mean": mean, "concentration": kappa})
    assert got == pytest.approx(expected, abs=1e-8)


def test_loglik_matches_closed_form_alpha_beta():
    rng = np.random.default_rng(12)
    y, n, N = _simulate(rng, 40, 0.5, 1.5)
    model = BetaBinomialDomainModel(y, n, N, parameterisation="alpha-beta")
    got = _observed_loglik(model, {"alpha": 0.5, "beta": 1.5})
    assert got == pytest.approx(_betabin_loglik(y, n, 0.5, 1.5).sum(), abs=1e-8)


def test_loglik_matches_closed_form_with_covariates():
    rng = np.random.default_rng(13)
    y, n, N = _simulate(rng, 30, 2.0, 5.0)
    X = pd.DataFrame({"urban": rng.normal(size=30), "age": rng.normal(size=30)})
    model = BetaBinomialDomainModel(y, n, N, covariates=X)
    b0, b, kappa = -0.7, np.array([0.4, -0.25]), 12.0
    mu = 1 / (1 + np.exp(-(b0 + X.to_numpy() @ b)))
    got = _observed_loglik(model, {"intercept": b0, "coefficients": b, "concentration": kappa})
    assert got == pytest.approx(_betabin_loglik(y, n, mu * kappa, (1 - mu) * kappa).sum(), abs=1e-8)


def test_graph_reproduces_seed003_table2_probabilities():
    # Seed 003, Table 2, column P(y | n, N) at alpha=1, beta=10 (printed to 3 decimals,
    # 4 for the smallest); the tolerance is half a unit in the last printed digit.
    table2 = [  # (n, y, printed P(y | n, N), decimals)
        (3, 0, 0.769, 3),
        (5, 0, 0.667, 3),
        (5, 5, 0.0003, 4),
        (5, 4, 0.003, 3),
        (5, 3, 0.018, 3),
        (5, 2, 0.073, 3),
        (3, 3, 0.003, 3),
        (3, 2, 0.035, 3),
        (5, 1, 0.238, 3),
        (3, 1, 0.192, 3),
    ]
    n = np.array([r[0] for r in table2])
    y = np.array([r[1] for r in table2])
    N = np.where(n == 3, 8, 20)
    model = BetaBinomialDomainModel(y, n, N, parameterisation="alpha-beta")
    pm_model = model.build()
    logp_y = pm_model.logp(vars=[pm_model["y"]], sum=False, jacobian=False)[0]
    fn = pm_model.compile_fn(logp_y, inputs=pm_model.value_vars)
    probs = np.exp(fn({"alpha_log__": np.log(1.0), "beta_log__": np.log(10.0)}))
    for (_, _, printed, decimals), p in zip(table2, probs, strict=True):
        assert abs(p - printed) <= 0.5 * 10.0**-decimals + 1e-12


# ----------------------------------------------------------------- sufficient statistics
# Without covariates the graph's likelihood runs over the distinct (y, n) pairs, each
# weighted by its number of domains m_u (audit AA4 finding 1: NUTS was linear in domains).
# The reference below is the per-domain graph the model used to build, written out here.


def _repeated_pairs(rng, n_domains=300):
    """Small n, so that (y, n) pairs repeat many times over the domains."""
    n = rng.integers(1, 7, n_domains)
    y = rng.binomial(n, rng.beta(2.0, 6.0, n_domains))
    return y, n, n * rng.integers(3, 30, n_domains)


def _per_domain_reference(y, n, parameterisation="mean-concentration"):
    """The per-domain graph: one BetaBinomial term per domain, the model's default priors.

    float64 prior constants, as the model's (a Python 2.0 would be a float32 constant).
    """
    f = np.float64
    with pm.Model() as ref:
        if parameterisation == "alpha-beta":
            alpha = pm.LogNormal("alpha", f(0.0), f(2.0))
            beta = pm.LogNormal("beta", f(0.0), f(2.0))
        else:
            mean = pm.Beta("mean", f(1.0), f(1.0))
            kappa = pm.LogNormal("concentration", f(2.0), f(2.0))
            alpha = pm.Deterministic("alpha", mean * kappa)
            beta = pm.Deterministic("beta", (1.0 - mean) * kappa)
        pm.BetaBinomial("y", n=n, alpha=alpha, beta=beta, observed=y)
    return ref


@pytest.mark.parametrize(
    "parameterisation, point",
    [
        ("mean-concentration", {"mean_logodds__": -1.1, "concentration_log__": 2.3}),
        ("alpha-beta", {"alpha_log__": 0.4, "beta_log__": 1.9}),
    ],
)
def test_pair_graph_logp_equals_per_domain_graph(parameterisation, point):
    rng = np.random.default_rng(21)
    y, n, N = _repeated_pairs(rng)
    model = BetaBinomialDomainModel(y, n, N, parameterisation=parameterisation)
    pm_model = model.build()
    assert model.pair_y.size < 30 < y.size  # the pairs repeat: their counts matter
    ref = _per_domain_reference(y, n, parameterisation)
    # the whole log posterior (priors and Jacobians included), and the likelihood alone
    got = float(pm_model.compile_logp()(point))
    expected = float(ref.compile_logp()(point))
    assert abs(got - expected) < 1e-9
    loglik = float(pm_model.compile_logp(vars=pm_model.observed_RVs, jacobian=False)(point))
    per_domain = float(ref.compile_logp(vars=ref.observed_RVs, jacobian=False)(point))
    assert abs(loglik - per_domain) < 1e-9
    # dropping the multiplicities (one term per pair) is a different likelihood
    if parameterisation == "alpha-beta":
        a, b = np.exp(point["alpha_log__"]), np.exp(point["beta_log__"])
    else:
        mean, kappa = expit(point["mean_logodds__"]), np.exp(point["concentration_log__"])
        a, b = mean * kappa, (1 - mean) * kappa
    logp_pairs = stats.betabinom.logpmf(model.pair_y, model.pair_n, a, b)
    unweighted = logp_pairs.sum()
    weighted = (model.pair_count * logp_pairs).sum()
    assert abs(unweighted - per_domain) > 100
    assert weighted == pytest.approx(per_domain, rel=1e-10)  # scipy vs PyMC formulas


def test_pairs_map_back_to_the_domains():
    y = np.array([1, 0, 1, 2, 0, 1, 5])
    n = np.array([3, 3, 3, 4, 3, 4, 9])
    model = BetaBinomialDomainModel(y, n, n * 10)
    # first-occurrence order; (1, 3) and (0, 3) twice each
    np.testing.assert_array_equal(model.pair_y, [1, 0, 2, 1, 5])
    np.testing.assert_array_equal(model.pair_n, [3, 3, 4, 4, 9])
    np.testing.assert_array_equal(model.pair_count, [2, 2, 1, 1, 1])
    np.testing.assert_array_equal(model.pair_y[model.pair_of_domain], y)
    np.testing.assert_array_equal(model.pair_n[model.pair_of_domain], n)
    pm_model = model.build()
    assert pm_model.named_vars_to_dims["y"] == ("pair",)
    assert pm_model["pair_of_domain"].get_value().tolist() == model.pair_of_domain.tolist()
    assert model.loglik_weight_var == "pair_count"
    # no repeated pair: the pairs are the domains, in their order
    distinct = BetaBinomialDomainModel([0, 1, 2], [5, 5, 5], [50, 50, 50])
    np.testing.assert_array_equal(distinct.pair_of_domain, [0, 1, 2])
    np.testing.assert_array_equal(distinct.pair_count, [1, 1, 1])


def test_covariate_model_keeps_one_term_per_domain():
    rng = np.random.default_rng(5)
    y, n, N = _repeated_pairs(rng, 40)
    model = BetaBinomialDomainModel(y, n, N, covariates=pd.DataFrame({"x": rng.normal(size=40)}))
    pm_model = model.build()
    assert pm_model.named_vars_to_dims["y"] == ("domain",)
    assert "pair" not in pm_model.coords and model.loglik_weight_var == ""
    np.testing.assert_array_equal(pm_model.rvs_to_values[pm_model["y"]].data, y)


@pytest.fixture(scope="module")
def pair_and_domain_fits():
    """The same data and seed through the pair graph (the model) and the per-domain graph."""
    rng = np.random.default_rng(8)
    y, n, N = _repeated_pairs(rng, 400)
    model = BetaBinomialDomainModel(y, n, N)
    new = _fit(model, draws=600, tune=500, seed=4)
    old = pm.sample(draws=600, tune=500, chains=2, cores=1, random_seed=4, progressbar=False,
                    model=_per_domain_reference(y, n), compute_convergence_checks=False,
                    target_accept=0.9)
    return model, new, old


def test_pair_graph_posterior_agrees_with_per_domain_graph(pair_and_domain_fits):
    # Same posterior, so the means differ by Monte Carlo error only: sd / sqrt(ESS) of each.
    _, new, old = pair_and_domain_fits
    for name in ("alpha", "beta", "mean", "concentration"):
        a, b = new.posterior[name], old.posterior[name]
        se = np.hypot(float(a.std()) / np.sqrt(float(az.ess(new, var_names=[name])[name])),
                      float(b.std()) / np.sqrt(float(az.ess(old, var_names=[name])[name])))
        assert abs(float(a.mean()) - float(b.mean())) < 4 * se, (name, a.mean(), b.mean(), se)
        # sd estimates from ~ESS draws: relative error about 1/sqrt(2 ESS) each
        assert float(a.std()) == pytest.approx(float(b.std()), rel=0.2), name


def test_loo_on_pairs_equals_arviz_loo_per_domain(pair_and_domain_fits):
    # Each domain's pointwise log-likelihood is its pair's total / m_u; PSIS per pair,
    # weighted by m_u (sdcbayes.inference.loo), is arviz.loo on the per-domain entries.
    from sdcbayes.inference import loo
    from sdcbayes.inference.posterior import provenance

    model, new, _ = pair_and_domain_fits
    assert provenance(new)["loglik_weight_var"] == "pair_count"
    assert new.log_likelihood["y"].dims == ("chain", "draw", "pair")
    idx = new.constant_data["pair_of_domain"].values
    per_domain = (new.log_likelihood["y"] / new.constant_data["pair_count"]).isel(pair=idx)
    expanded = _compat.make_container(
        posterior=new.posterior,
        log_likelihood=xr.Dataset({"y": per_domain.rename(pair="domain").drop_vars("domain")}),
    )
    # the expanded entries are the per-domain log-densities themselves
    a = new.posterior["alpha"].values[..., None]
    b = new.posterior["beta"].values[..., None]
    np.testing.assert_allclose(per_domain.values, stats.betabinom.logpmf(model.y, model.n, a, b),
                               rtol=1e-10, atol=1e-12)
    ref = _compat.ElpdFields(az.loo(expanded, pointwise=True))
    got = loo(new)
    assert got.n_data_points == model.y.size
    assert got.elpd_loo == pytest.approx(float(ref.elpd_loo), abs=1e-8)
    assert got.se == pytest.approx(float(ref.se), abs=1e-8)
    assert got.p_loo == pytest.approx(float(ref.p_loo), abs=1e-8)


def test_predictive_checks_replicate_every_domain(pair_and_domain_fits):
    model, new, _ = pair_and_domain_fits
    check = model.posterior_predictive(new, random_seed=3)
    rep = check.idata.posterior_predictive["y"]
    assert rep.dims == ("chain", "draw", "domain") and rep.sizes["domain"] == model.y.size
    assert (rep <= xr.DataArray(model.n, dims="domain")).all()
    np.testing.assert_array_equal(check.idata.observed_data["y"], model.y)
    table = check.summary()
    assert table.loc["total_y", "observed"] == model.y.sum()
    assert table["ppp"].between(0.01, 0.99).all(), table  # the model is true here
    again = model.posterior_predictive(new, random_seed=3)
    np.testing.assert_array_equal(again.idata.posterior_predictive["y"], rep)
    prior = model.prior_predictive(samples=40, random_seed=2)
    assert prior.idata.prior_predictive["y"].dims == ("chain", "draw", "domain")
    assert {"mean", "concentration", "alpha", "beta"} <= set(prior.idata.prior.data_vars)


# ----------------------------------------------------------------- constructors / errors


def test_from_microdata_counts_and_population_sizes():
    frame = pd.DataFrame(
        {
            "area": ["b", "a", "a", "b", "b", "a", "c"],
            "occ": ["x", "y", "x", "x", "z", "y", "z"],
        }
    )
    model = BetaBinomialDomainModel.from_microdata(
        frame,
        domain="area",
        class_column="occ",
        class_value="x",
        N={"a": 30, "b": 40, "c": 10, "d": 5},
    )
    assert model.domain_names == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(model.y, [1, 2, 0, 0])  # 'x' records per area, read off the frame
    np.testing.assert_array_equal(model.n, [3, 3, 1, 0])
    np.testing.assert_array_equal(model.N, [30, 40, 10, 5])
    two = BetaBinomialDomainModel.from_microdata(
        frame.assign(Npop=frame["area"].map({"a": 30, "b": 40, "c": 10})),
        domain="area",
        class_column="occ",
        class_value=["x", "z"],
        N="Npop",
    )
    np.testing.assert_array_equal(two.y, [1, 3, 1])


def test_from_table_matches_direct_constructor():
    df = pd.DataFrame({"dom": ["u", "v"], "yy": [1, 4], "nn": [5, 9], "NN": [50, 90]})
    model = BetaBinomialDomainModel.from_table(df, y="yy", n="nn", N="NN", domain="dom")
    assert model.domain_names == ["u", "v"]
    np.testing.assert_array_equal(model.y, [1, 4])
    assert model.data_summary()["total_N"] == 140


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"y": [3, 1], "n": [2, 4], "N": [10, 10]}, "y_i > n_i"),
        ({"y": [1, 1], "n": [2, 40], "N": [10, 10]}, "n_i > N_i"),
        ({"y": [1.5, 1], "n": [2, 4], "N": [10, 10]}, "whole numbers"),
        ({"y": [1], "n": [2, 4], "N": [10, 10]}, "one value per domain"),
        (
            {"y": [1, 1], "n": [2, 4], "N": [10, 10], "priors": {"alpha": {"sigma": 1}}},
            r"valid names are \['concentration', 'mean'\]",
        ),
        (
            {
                "y": [1, 1],
                "n": [2, 4],
                "N": [10, 10],
                "covariates": [[1.0], [2.0]],
                "parameterisation": "alpha-beta",
            },
            "mean-concentration",
        ),
        (
            {"y": [1, 1], "n": [2, 4], "N": [10, 10], "parameterisation": "logit"},
            "unknown parameterisation",
        ),
    ],
)
def test_bad_input_is_rejected_with_a_fix(kwargs, match):
    with pytest.raises(InputError, match=match):
        BetaBinomialDomainModel(**kwargs)


def test_microdata_errors_name_the_problem():
    frame = pd.DataFrame({"area": ["a", None], "occ": ["x", "y"]})
    with pytest.raises(DataError, match="missing values"):
        BetaBinomialDomainModel.from_microdata(
            frame, domain="area", class_column="occ", class_value="x", N={"a": 3}
        )
    frame = pd.DataFrame({"area": ["a", "b"], "occ": ["x", "y"]})
    with pytest.raises(DataError, match=r"no population size N for domain\(s\) \['b'\]"):
        BetaBinomialDomainModel.from_microdata(
            frame, domain="area", class_column="occ", class_value="x", N={"a": 3}
        )
    with pytest.raises(DataError, match="not in the microdata"):
        BetaBinomialDomainModel.from_microdata(
            frame, domain="region", class_column="occ", class_value="x", N={"a": 3}
        )


def test_prior_overrides_merge_and_are_used():
    model = BetaBinomialDomainModel(
        [1, 2], [5, 5], [9, 9], priors={"concentration": {"sigma": 0.5}}
    )
    assert model.priors["concentration"] == {"dist": "LogNormal", "mu": 2.0, "sigma": 0.5}
    draws = pm.draw(model.build()["concentration"], draws=4000, random_seed=1)
    assert np.std(np.log(draws)) == pytest.approx(0.5, rel=0.05)


# ----------------------------------------------------------------- recovery and ML agreement

TRUE_A, TRUE_B = 2.0, 8.0  # mean 0.2, concentration 10


@pytest.fixture(scope="module")
def large_fit():
    rng = np.random.default_rng(2024)
    y, n, N = _simulate(rng, 2000, TRUE_A, TRUE_B)
    model = BetaBinomialDomainModel(y, n, N)
    return model, _fit(model, seed=5)


def _ml_estimate(y, n):
    """Maximum likelihood of (alpha, beta) on the marginal beta-binomial likelihood (scipy only)."""

    def nll(theta):
        return -stats.betabinom.logpmf(y, n, np.exp(theta[0]), np.exp(theta[1])).sum()

    res = optimize.minimize(
        nll,
        x0=[0.0, 1.0],
        method="Nelder-Mead",
        options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 5000},
    )
    assert res.success
    return np.exp(res.x)


def test_parameter_recovery_on_simulated_domains(large_fit):
    model, idata = large_fit
    post = idata.posterior
    for name, truth in (
        ("alpha", TRUE_A),
        ("beta", TRUE_B),
        ("mean", 0.2),
        ("concentration", 10.0),
    ):
        lo, hi = post[name].quantile([0.005, 0.995]).values
        assert lo < truth < hi, (name, lo, hi)


def test_posterior_means_agree_with_maximum_likelihood(large_fit):
    model, idata = large_fit
    a_ml, b_ml = _ml_estimate(model.y, model.n)
    post = idata.posterior
    for name, ml in (("alpha", a_ml), ("beta", b_ml)):
        mean, sd = float(post[name].mean()), float(post[name].std())
        # 2000 domains: posterior ~ N(ML, SE); the mean differs from the mode by skewness
        # (O(1/#domains)) plus Monte Carlo error (~sd/sqrt(ESS)); 0.3 sd covers both.
        assert abs(mean - ml) < 0.3 * sd, (name, mean, ml, sd)
        assert abs(mean - ml) / ml < 0.05


def test_covariate_coefficient_is_recovered():
    rng = np.random.default_rng(7)
    D = 400
    x = rng.normal(size=D)
    mu = 1 / (1 + np.exp(-(-1.0 + 0.8 * x)))
    kappa = 15.0
    n = rng.integers(5, 40, D)
    y = rng.binomial(n, rng.beta(mu * kappa, (1 - mu) * kappa))
    model = BetaBinomialDomainModel(y, n, n * 10, covariates=pd.DataFrame({"x": x}))
    post = _fit(model, seed=3).posterior
    for name, truth in (("intercept", -1.0), ("concentration", kappa)):
        lo, hi = post[name].quantile([0.005, 0.995]).values
        assert lo < truth < hi, (name, lo, hi)
    lo, hi = post["coefficients"].sel(covariate="x").quantile([0.005, 0.995]).values
    assert lo < 0.8 < hi
    assert post["alpha"].dims == ("chain", "draw", "domain")


# ----------------------------------------------------------------- predictive checks


def test_posterior_predictive_check_summary(large_fit):
    model, idata = large_fit
    check = model.posterior_predictive(idata, random_seed=1)
    table = check.summary()
    assert list(table.index) == ["total_y", "n_domains_y0", "n_domains_y1", "n_domains_y2"]
    assert table.loc["total_y", "observed"] == model.y.sum()
    assert table.loc["n_domains_y0", "observed"] == np.sum(model.y == 0)
    # The model is true here: no statistic should sit in a 1% tail.
    assert table["ppp"].between(0.01, 0.99).all(), table
    assert check.statistics["total_y"].dims == ("chain", "draw")


def test_posterior_predictive_flags_zero_inflation():
    # Half of the domains have no class members at all, the rest about half. A single
    # beta-binomial can only make that many zeros with a U-shaped Beta(alpha, beta),
    # which then also makes many y_i = 1: the check must flag the missing ones.
    rng = np.random.default_rng(3)
    n = rng.integers(20, 40, 300)
    y = rng.binomial(n, rng.beta(6.0, 6.0, 300))
    y[:150] = 0
    model = BetaBinomialDomainModel(y, n, 10 * n, parameterisation="alpha-beta")
    a_ml, b_ml = _ml_estimate(y, n)
    # A point posterior at the maximum likelihood is enough to show the misfit.
    idata = _compat.from_dict(
        posterior={"alpha": np.full((1, 400), a_ml), "beta": np.full((1, 400), b_ml)}
    )
    table = model.posterior_predictive(idata, random_seed=2).summary()
    assert table.loc["n_domains_y1", "observed"] == np.sum(y == 1)
    assert table.loc["n_domains_y1", "ppp"] == 1.0
    assert table.loc["n_domains_y1", "observed"] < table.loc["n_domains_y1", "q0.05"]


def test_prior_predictive_shapes_and_observed():
    rng = np.random.default_rng(4)
    model = BetaBinomialDomainModel(*_simulate(rng, 20, 1.0, 3.0))
    check = model.prior_predictive(samples=250, random_seed=1)
    assert check.kind == "prior"
    assert check.statistics.sizes == {"chain": 1, "draw": 250}
    table = check.summary()
    assert table.loc["total_y", "observed"] == model.y.sum()
    # Totals lie between 0 and sum n_i whatever the prior draw.
    assert table.loc["total_y", "q0.05"] >= 0 and check.statistics["total_y"].max() <= model.n.sum()


def test_population_prediction_reproduces_seed003_table1():
    # Seed 003, Table 1: P(Y | y) for n = 3, N = 8, alpha = 1, beta = 10 (3 decimals).
    table1 = {
        0: [0.722, 0.212, 0.053, 0.011, 0.002, 0.000, 0, 0, 0],
        1: [0, 0.510, 0.319, 0.127, 0.036, 0.007, 0.001, 0, 0],
        2: [0, 0, 0.350, 0.350, 0.200, 0.077, 0.019, 0.002, 0],
        3: [0, 0, 0, 0.234, 0.334, 0.257, 0.128, 0.041, 0.007],
    }
    model = BetaBinomialDomainModel([0, 1, 2, 3], [3] * 4, [8] * 4, parameterisation="alpha-beta")
    draws = 200_000
    idata = _compat.from_dict(
        posterior={"alpha": np.ones((1, draws)), "beta": np.full((1, draws), 10.0)}
    )
    Y = model.predict_population(idata, random_seed=9)
    assert Y.dims == ("chain", "draw", "domain")
    for i, y in enumerate(table1):
        freq = np.bincount(Y.isel(domain=i).values.ravel(), minlength=9)[:9] / draws
        # rounding (0.0005) plus 4 binomial standard errors of the frequency
        tol = 0.0005 + 4 * np.sqrt(np.maximum(freq, 1e-4) * (1 - freq) / draws)
        np.testing.assert_array_less(np.abs(freq - np.array(table1[y])), tol)


def test_population_prediction_mean_matches_seed003_formula(large_fit):
    # Seed 003, section 2: E(Y_i | y_i) = y_i + (N_i - n_i)(alpha + y_i)/(alpha + beta + n_i),
    # averaged over the posterior draws of (alpha, beta).
    model, idata = large_fit
    Y = model.predict_population(idata, random_seed=3)
    a = idata.posterior["alpha"].values[..., None]
    b = idata.posterior["beta"].values[..., None]
    exact = (model.y + (model.N - model.n) * (a + model.y) / (a + b + model.n)).mean(axis=(0, 1))
    mc = Y.mean(("chain", "draw")).values
    se = Y.std(("chain", "draw")).values / np.sqrt(Y.sizes["chain"] * Y.sizes["draw"])
    z = (mc - exact) / np.maximum(se, 1e-12)
    assert np.mean(np.abs(z) < 3.3) > 0.995  # ~0.1% of 2000 domains beyond 3.3 SE by chance


# ----------------------------------------------------------------- slow: calibration


@pytest.mark.slow
def test_interval_coverage_over_replicates():
    """90% intervals of (mean, concentration) cover the truth ~90% of the time.

    Truths are drawn from the (overridden) prior itself, so coverage is exact in
    expectation (simulation-based calibration); 120 replicates give a binomial SE of
    2.7 points, so the acceptance band 0.80-0.97 is about 3.5 SE wide on each side.
    """
    priors = {
        "mean": {"dist": "Beta", "alpha": 2.0, "beta": 5.0},
        "concentration": {"dist": "LogNormal", "mu": 2.0, "sigma": 0.7},
    }
    rng = np.random.default_rng(99)
    hits = {"mean": [], "concentration": []}
    for rep in range(120):
        mean, kappa = rng.beta(2, 5), rng.lognormal(2.0, 0.7)
        y, n, N = _simulate(rng, 60, mean * kappa, (1 - mean) * kappa)
        post = _fit(
            BetaBinomialDomainModel(y, n, N, priors=priors), draws=400, tune=400, seed=rep
        ).posterior
        for name, truth in (("mean", mean), ("concentration", kappa)):
            lo, hi = post[name].quantile([0.05, 0.95]).values
            hits[name].append(lo < truth < hi)
    print({name: float(np.mean(h)) for name, h in hits.items()})  # shown with -rP
    for name, h in hits.items():
        assert 0.80 <= np.mean(h) <= 0.97, (name, np.mean(h))
