"""Bayesian log-linear model: likelihood, zero-cell sums, fitting, risk formulas.

Every check compares with an independent computation: scipy's pmfs summed over the
enumerated full table, finite differences, the exact zero-cell sum, simulation from
a known model with fixed seeds, and the closed-form main-effects MLE of
``sdcbayes.risk.loglinear`` (Bishop, Fienberg & Holland 1975, ch. 3).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdcbayes.exceptions import InputError
from sdcbayes.models.loglinear import (
    LoglinearModel,
    expected_inverse_frequency,
    posterior_risk,
    prob_population_unique,
    simulate_excess,
)
from sdcbayes.risk.loglinear import main_effects_means
from sdcbayes.validation import loglinear_bayes_method

LEVELS = [3, 4, 2, 5]


def _table(levels):
    return np.array(list(itertools.product(*[range(L) for L in levels])))


def _random_model(family, seed=0, levels=LEVELS, **kw):
    rng = np.random.default_rng(seed)
    cells = _table(levels)
    f = rng.poisson(np.exp(0.5 + rng.normal(0, 1, size=len(cells))))
    obs = f > 0
    model = LoglinearModel(cells[obs], f[obs], levels, family=family, **kw)
    theta = model.prior_mean + rng.normal(0, 0.3, model.n_par)
    return model, theta, cells, f


def _full_eta(model, theta, cells):
    b0, A, B = model.unpack(theta)
    eta = b0 + sum(A[j][cells[:, j]] for j in range(cells.shape[1]))
    return eta + sum(b[cells[:, j], cells[:, l]] for (j, l), b in B.items())


# ------------------------------------------------------------------ likelihood


@pytest.mark.parametrize("family", ["poisson", "negbin"])
def test_loglik_equals_brute_force_over_full_table(family):
    model, theta, cells, f = _random_model(family)
    mu = np.exp(_full_eta(model, theta, cells))
    if family == "poisson":
        brute = stats.poisson.logpmf(f, mu).sum()
        value = model.loglik(theta)
    else:
        kappa = 2.5
        brute = stats.nbinom.logpmf(f, kappa, kappa / (kappa + mu)).sum()
        value = model.loglik(theta, kappa)
    assert value == pytest.approx(brute, rel=1e-12)


@pytest.mark.parametrize("family", ["poisson", "negbin"])
def test_gradient_and_hessian_match_finite_differences(family):
    model, theta, _, _ = _random_model(family, seed=1, levels=[3, 2, 4])
    x = np.concatenate([theta, [np.log(2.5)]]) if family == "negbin" else theta
    _, grad, H = model._derivatives(x, want_hessian=True)
    eps = 1e-6
    E = np.eye(x.size) * eps
    num_g = np.array([(model._derivatives(x + e, False)[0] - model._derivatives(x - e, False)[0])
                      / (2 * eps) for e in E])
    num_H = np.array([-(model._derivatives(x + e, False)[1] - model._derivatives(x - e, False)[1])
                      / (2 * eps) for e in E])
    np.testing.assert_allclose(grad, num_g, atol=1e-5 * np.abs(grad).max())
    np.testing.assert_allclose(H, num_H, atol=1e-5 * np.abs(H).max())


@pytest.mark.parametrize("family", ["poisson", "negbin"])
def test_pymc_potential_equals_numpy_loglik(family):
    model, theta, _, _ = _random_model(family, seed=2, levels=[3, 2, 4])
    pm_model = model.build()
    fn = pm_model.compile_logp(vars=pm_model.potentials, jacobian=False)
    b0, A, B = model.unpack(theta)
    point = {"intercept": b0, "scale_log__": np.zeros(len(model.pairs))}
    names = model.keys
    for j, name in enumerate(names):
        point[f"main_{name}"] = A[j][model.groups[1 + j][1][:, 0]]
    for (j, l), b in B.items():
        fj, fl = model.groups[1 + j][1][:, 0], model.groups[1 + l][1][:, 0]
        point[f"z_{names[j]}_{names[l]}"] = b[np.ix_(fj, fl)]  # scale 1: z = B
    kappa = 3.0
    if family == "negbin":
        point["kappa_log__"] = np.log(kappa)
    assert float(fn(point)) == pytest.approx(model.loglik(theta, kappa), rel=1e-10)


def test_importance_sampled_zero_cell_sum_agrees_with_exact():
    # 6 keys, 20,160 cells: small enough for the exact sum, used here as the truth
    levels = [4, 6, 5, 7, 3, 8]
    rng = np.random.default_rng(3)
    cells = _table(levels)
    A = [rng.normal(0, 1, L) for L in levels]
    eta = -2.0 + sum(A[j][cells[:, j]] for j in range(6))
    pairs = list(itertools.combinations(range(6), 2))
    B = {(j, l): rng.normal(0, 0.3, (levels[j], levels[l])) for j, l in pairs}
    eta += sum(b[cells[:, j], cells[:, l]] for (j, l), b in B.items())
    f = rng.poisson(np.exp(eta))  # a sample from the model: q follows its margins
    obs = f > 0
    exact_model = LoglinearModel(cells[obs], f[obs], levels)
    sampled = LoglinearModel(cells[obs], f[obs], levels, max_exact_cells=0,
                             n_importance=50_000, importance_seed=7)
    assert exact_model.exact and not sampled.exact
    theta = exact_model.fit_laplace(scale_tol=1e-2).theta  # a realistic parameter value
    mu_exact = np.exp(exact_model.cells.eta(*exact_model.unpack(theta))).sum()
    assert mu_exact == pytest.approx(f.sum(), rel=0.01)  # the Poisson MLE's total is n
    cs = sampled.cells
    terms = cs.weight * np.exp(cs.eta(*sampled.unpack(theta)))
    estimate = terms.sum()
    se = np.sqrt(cs.size) * terms.std()
    assert se / mu_exact < 0.02  # the proposal is good enough to be useful
    assert abs(estimate - mu_exact) < 4 * se
    # and the log-likelihoods differ by exactly the difference of the zero-cell sums
    assert sampled.loglik(theta) - exact_model.loglik(theta) == pytest.approx(
        mu_exact - estimate, rel=1e-8)


# ------------------------------------------------------------------ fitting


def test_flat_priors_no_interactions_reproduce_main_effects_mle():
    rng = np.random.default_rng(4)
    codes = np.column_stack([rng.integers(0, L, 800) for L in (5, 3, 6)])
    codes[:, 1] = np.minimum(codes[:, 1], rng.integers(0, 3, 800))  # unequal margins
    cells, counts = np.unique(codes, axis=0, return_counts=True)
    model = LoglinearModel(cells, counts, [5, 3, 6], interactions="none",
                           priors={"intercept": {"sigma": 1e4}, "main": {"sigma": 1e4}})
    fit = model.fit_laplace()
    assert fit.converged
    mu = np.exp(fit.observed_log_mu(fit.theta[None, :])[0])
    cell_codes, mle = main_effects_means(codes, [5, 3, 6])
    np.testing.assert_array_equal(cell_codes, cells)
    np.testing.assert_allclose(mu, mle, rtol=1e-5)


def test_recovers_sparse_two_way_model_and_shrinks_absent_blocks():
    levels = [4, 5, 3, 6]
    rng = np.random.default_rng(5)
    cells = _table(levels)
    truth = LoglinearModel(cells, np.ones(len(cells)), levels)
    b0, A, B = truth.unpack(truth.prior_mean)
    A = [rng.normal(0, 0.5, L) for L in levels]
    B_true = {k: np.zeros_like(b) for k, b in B.items()}
    B_true[(0, 1)] = rng.normal(0, 1.0, (4, 5))
    B_true[(2, 3)] = rng.normal(0, 1.0, (3, 6))
    eta = np.log(8.0) + sum(A[j][cells[:, j]] for j in range(4))
    eta += B_true[(0, 1)][cells[:, 0], cells[:, 1]] + B_true[(2, 3)][cells[:, 2], cells[:, 3]]
    f = rng.poisson(np.exp(eta))
    obs = f > 0
    model = LoglinearModel(cells[obs], f[obs], levels)
    fit = model.fit_laplace()
    assert fit.converged
    _, _, B_hat = model.unpack(fit.theta)
    sd = np.sqrt(np.diag(np.linalg.inv(fit.chol @ fit.chol.T)))
    for key in [(0, 1), (2, 3)]:
        # compare contrasts (corner constraints: differences to the reference row/column)
        j, l = key
        rj, rl = model.ref[j], model.ref[l]
        t = B_true[key]
        contrast = t - t[rj][None, :] - t[:, rl][:, None] + t[rj, rl]
        gi = 1 + 4 + model.pairs.index(key)
        sd_b = np.zeros_like(contrast)
        lv = model.groups[gi][1]
        sd_b[lv[:, 0], lv[:, 1]] = sd[model.offsets[gi]:model.offsets[gi + 1]]
        err = np.abs(B_hat[key] - contrast)
        assert np.all(err <= 4 * sd_b + 1e-12)
        assert err.mean() < 0.2
    for key in [(0, 2), (0, 3), (1, 2), (1, 3)]:
        assert np.abs(B_hat[key]).max() < 0.25
        assert fit.scales[key] < 0.5 * min(fit.scales[(0, 1)], fit.scales[(2, 3)])
    assert np.all(np.isfinite(sd))


def test_fit_map_through_inference_layer_matches_mle():
    from sdcbayes.inference import fit

    rng = np.random.default_rng(6)
    codes = np.column_stack([rng.integers(0, L, 600) for L in (4, 3, 5)])
    cells, counts = np.unique(codes, axis=0, return_counts=True)
    model = LoglinearModel(cells, counts, [4, 3, 5], interactions="none",
                           priors={"intercept": {"sigma": 1e3}, "main": {"sigma": 1e3}})
    idata = fit(model, method="map", draws=200, chains=1, random_seed=1, laplace=False)
    log_mu = idata.posterior["log_mu"].values.reshape(-1)
    _, mle = main_effects_means(codes, [4, 3, 5])
    np.testing.assert_allclose(np.exp(log_mu), mle, rtol=1e-3)


# ------------------------------------------------------------------ risk formulas


def test_poisson_risk_formulas_against_simulation():
    rng = np.random.default_rng(7)
    lam, pi = 2.3, 0.2
    F = rng.poisson(lam, 2_000_000)
    f = rng.binomial(F, pi)
    one = f == 1
    assert prob_population_unique(lam, pi) == pytest.approx(np.mean(F[one] == 1), abs=3e-3)
    assert expected_inverse_frequency(1, lam, pi) == pytest.approx(np.mean(1 / F[one]), abs=3e-3)
    two = f == 2
    assert expected_inverse_frequency(2, lam, pi) == pytest.approx(np.mean(1 / F[two]), abs=3e-3)


def test_negbin_risk_formulas_against_simulation():
    # Lambda ~ Gamma(kappa, rate kappa/lambda), F ~ Po(Lambda), f ~ Bin(F, pi)
    rng = np.random.default_rng(8)
    lam, kappa, pi = 3.0, 0.8, 0.1
    Lam = rng.gamma(kappa, lam / kappa, 4_000_000)
    F = rng.poisson(Lam)
    f = rng.binomial(F, pi)
    for fv in (1, 2):
        sel = f == fv
        p = prob_population_unique(lam, pi, kappa, f=fv)
        assert p == pytest.approx(np.mean(F[sel] == fv), abs=4e-3)
        r = expected_inverse_frequency(fv, lam, pi, kappa)
        assert r == pytest.approx(np.mean(fv / F[sel]) / fv, abs=4e-3)
        x = simulate_excess(np.full(200_000, lam), pi, rng, kappa, f=fv)
        assert np.mean(x == 0) == pytest.approx(p, abs=5e-3)
        assert np.mean(x) == pytest.approx(np.mean(F[sel] - fv), rel=0.02)
    # kappa -> infinity is the Poisson model
    assert prob_population_unique(lam, pi, 1e9) == pytest.approx(
        prob_population_unique(lam, pi), rel=1e-6)


def test_expected_inverse_frequency_large_f_against_series():
    # E(1/F | f) for F = f + Po(m): brute-force sum of the Poisson series
    from scipy.stats import poisson

    lam, pi = 40.0, 0.05
    m = lam * (1 - pi)
    x = np.arange(0, 400)
    for fv in (1, 5, 60):
        brute = np.sum(poisson.pmf(x, m) / (fv + x))
        assert expected_inverse_frequency(fv, lam, pi) == pytest.approx(brute, rel=1e-6)


# ------------------------------------------------------------------ harness method


def test_method_returns_posterior_estimates_with_intervals():
    rng = np.random.default_rng(9)
    N = 20_000
    pop = pd.DataFrame({"a": rng.integers(0, 6, N), "b": rng.integers(0, 4, N),
                        "c": rng.geometric(0.15, N).clip(max=30)})
    pop["b"] = np.where(pop["a"] < 2, 0, pop["b"])  # an interaction
    sample = pop.sample(1000, random_state=1).reset_index(drop=True)
    sample["w"] = N / 1000
    est = loglinear_bayes_method(draws=200)(sample, ["a", "b", "c"], "w", N)
    for q in ("tau1", "tau2", "expected_reidentifications"):
        lo, hi = est.intervals[q]
        assert lo - 1e-9 <= getattr(est, q) <= hi + 1e-9
    assert est.tau2 > 1  # the file has sample uniques at risk
    assert est.record_prob_unique.shape == (1000,)
    assert np.all((est.record_prob_unique >= 0) & (est.record_prob_unique <= 1))


def test_posterior_risk_point_estimates_are_rao_blackwellised():
    model, theta, _, _ = _random_model("poisson", seed=10)
    log_mu = np.tile(model._obs_eta(*model.unpack(theta)), (3, 1))
    res = posterior_risk(model, log_mu, 0.1, rng=0)
    su = model.counts == 1
    lam = np.exp(log_mu[0, su]) / 0.1
    assert res["tau1"] == pytest.approx(np.exp(-0.9 * lam).sum(), rel=1e-12)


def test_bad_input_is_rejected():
    with pytest.raises(InputError, match="family"):
        LoglinearModel([[0, 0]], [1], [2, 2], family="binomial")
    with pytest.raises(InputError, match="unknown key"):
        LoglinearModel([[0, 0]], [1], [2, 2], interactions=[("key0", "nope")])
    with pytest.raises(InputError, match="scale"):
        LoglinearModel([[0, 0]], [1], [2, 2], priors={"scale": {"dist": "Gamma", "alpha": 1}})


@pytest.mark.parametrize("prior", [
    {"scale": {"sigma": "abc"}},  # read with float() on the route without PyMC
    {"main": {"sigma": -1.0}},
    {"kappa": {"alpha": 0.0}},
    {"intercept": {"sigma": float("nan")}},
])
def test_prior_values_are_checked_without_pymc(prior):
    (name, spec), = prior.items()
    with pytest.raises(InputError, match=rf"{name}\.\w+=.* must be positive finite numbers"):
        LoglinearModel([[0, 0]], [1], [2, 2], priors=prior)
