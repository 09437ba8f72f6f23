"""Bethlehem-Keller-Pannekoek Poisson-gamma model (seed 000 section 2.3, eq. 10).

References: per-cell scipy.stats.nbinom log-pmfs, simulation of the
superpopulation (π_k ~ Gamma, F_k ~ Poisson(N π_k), f_k ~ Bin(F_k, n/N)), and the
fractions of population uniques printed in seed 000 Table 1.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from sdcbayes.exceptions import InputError, ModelError
from sdcbayes.risk.individual import negbin_inverse_moment
from sdcbayes.risk.poisson_gamma import (
    PoissonGammaFit,
    expected_inverse_frequency,
    expected_population_uniques,
    fit_poisson_gamma,
    fraction_population_uniques,
    negbin_counts_of_counts_loglik,
    population_given_sample_pmf,
    prob_population_unique,
    sampling_rho,
    tau_estimates,
)


def counts_of_counts(f):
    cc = np.bincount(f)
    return pd.Series(cc[1:], index=pd.RangeIndex(1, cc.size, name="count"), name="m"), int(cc[0])


# --------------------------------------------------------------------------- #
# likelihood
# --------------------------------------------------------------------------- #


def test_loglik_equals_sum_of_per_cell_negbin_logpmf():
    f = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 5, 5, 9, 0, 1, 14, 0, 2])
    m, m0 = counts_of_counts(f)
    n = f.sum()
    for alpha, beta in [(0.3, 0.01), (2.5, 0.2), (0.05, 1.7)]:
        # f_k ~ NegBin(α, success prob 1/(1 + nβ)) (seed 000 section 2.3)
        per_cell = stats.nbinom.logpmf(f, alpha, 1.0 / (1.0 + n * beta)).sum()
        got = negbin_counts_of_counts_loglik(m, alpha, beta, n, m0=m0)
        assert got == pytest.approx(per_cell, rel=1e-13, abs=1e-10)
        # array input m[j-1] = m_j gives the same
        assert negbin_counts_of_counts_loglik(m.to_numpy(), alpha, beta, n, m0=m0) == got


def _loglik_by_log_sums(m, alpha, beta, n, m0):
    # Independent reference: log Γ(α+j) - log Γ(α) = Σ_{i<j} log(α + i), summed with
    # math.fsum; each log is correctly rounded, so no cancellation at any α.
    nb = n * beta
    terms = [-m0 * alpha * math.log1p(nb)]
    for j, mj in m.items():
        terms += [mj * math.log(alpha + i) for i in range(j)]
        terms += [-mj * math.lgamma(j + 1.0), -mj * alpha * math.log1p(nb),
                  mj * j * math.log(nb), -mj * j * math.log1p(nb)]
    return math.fsum(terms)


@pytest.mark.parametrize("alpha", [3.0, 10.0, 1e3, 1e6, 1e9, 1e12, 1e14])
def test_loglik_accurate_for_large_alpha(alpha):
    # gammaln(α + j) - gammaln(α) cancelled: errors 7.5e-4 at α = 1e9, 1.4 at 1e12,
    # 187 at 1e14 (mpmath). The terms here are ~3e4 in size, so 1e-9 absolute is
    # ~1e4 ulps of the largest term, yet far below the old errors.
    m = {1: 800, 2: 95, 3: 5, 12: 1}
    beta = 1.0 / (alpha * 5000)
    got = negbin_counts_of_counts_loglik(m, alpha, beta, 1000.0, m0=4100)
    assert got == pytest.approx(_loglik_by_log_sums(m, alpha, beta, 1000.0, 4100), abs=1e-9)


def test_population_pmf_accurate_for_large_alpha():
    # the same rising factorial sits in P(F | f); at α = 1e12 it was off by ~1e-2
    alpha, beta, n, N = 1e12, 1e-16, 1e3, 1e4
    pmf = population_given_sample_pmf(2, alpha, beta, n, N, max_F=12)
    lam = alpha * (N - n) * beta  # NegBin(α + f, ρ) -> Poisson(α (N-n) β) as α -> ∞
    np.testing.assert_allclose(pmf[2:], stats.poisson.pmf(np.arange(11), lam), rtol=1e-8)


@pytest.mark.parametrize("alpha", [0.3, 3.0, 10.0, 1e3, 1e6, 1e9, 1e12, 1e14])
def test_score_and_information_in_alpha_accurate_for_large_alpha(alpha):
    # ψ(α + j) - ψ(α) and ψ'(α + j) - ψ'(α) by SciPy cancelled: relative errors 4e-7
    # at α = 1e8, 1e-3 at 1e12, 0.29 at 1e14. The references are the exact finite
    # sums Σ_{i<j} 1/(α + i) and -Σ_{i<j} 1/(α + i)² (math.fsum). They reach the SEs
    # (observed information) and, through _digamma_diff, the beta-binomial ML gradient.
    from sdcbayes.risk.poisson_gamma import _digamma_diff, _hessian, _score

    m = {1: 800, 2: 95, 3: 5, 12: 1}
    j = np.array([0.0, *m]), np.array([4100.0, *m.values()])
    n, beta = 1000.0, 1.0 / (alpha * 5000)
    K = sum(j[1])
    harm = {k: math.fsum(1.0 / (alpha + i) for i in range(k)) for k in m}
    harm2 = {k: math.fsum(1.0 / (alpha + i) ** 2 for i in range(k)) for k in m}
    d_alpha, _ = _score(alpha, beta, n, *j)
    # d ℓ/dα = Σ m_j H_j - K log1p(nβ): the log term is exact, compare the sum alone
    ref = math.fsum(v * harm[k] for k, v in m.items())
    assert d_alpha + K * math.log1p(n * beta) == pytest.approx(ref, rel=1e-12)
    h_aa = _hessian(alpha, beta, n, *j)[0, 0]
    assert h_aa == pytest.approx(-math.fsum(v * harm2[k] for k, v in m.items()), rel=1e-12)
    for k in m:  # the difference on its own, as the beta-binomial gradient uses it
        assert float(_digamma_diff(alpha, k)) == pytest.approx(harm[k], rel=1e-13)


def test_ml_fit_of_nearly_poisson_counts_is_not_noise():
    # var/mean - 1 = 4e-8 with K = 1e7: the profile in log α rises to a maximum near
    # 2.4e5 (mpmath argmax 246391, 247371, 238043 for these three samples) and then
    # stays within 5e-9 of it up to α = 1e12. The noisy likelihood returned 4.1e5,
    # 3.9e4 and 2.3e5. The profile is flat to ~1e-10 (the resolution of a
    # log-likelihood of size 1e6) over about ±15% of the argmax, hence rel=0.2.
    for m, argmax in [({1: 99394, 2: 501, 3: 1}, 246391.0),
                      ({1: 99397, 2: 498, 3: 2}, 247371.0),
                      ({1: 99589, 2: 503, 3: 1}, 238043.0)]:
        n = float(sum(j * v for j, v in m.items()))
        fit = fit_poisson_gamma(m, n, 10 * n, 10**7)
        assert fit.alpha == pytest.approx(argmax, rel=0.2)
        # ... and the fit says the data cannot bound α from above
        assert "flat toward the Poisson limit" in fit.message


def test_ml_fit_message_silent_when_alpha_is_identified(ml_fit):
    assert "Poisson limit" not in ml_fit.message


@pytest.mark.parametrize("as_type", [list, tuple, np.array])
def test_counts_of_counts_as_list_or_tuple(as_type):
    # lists and tuples have an .index method and were taken for a Series (TypeError)
    ref = negbin_counts_of_counts_loglik({1: 800, 2: 95, 3: 5}, 0.7, 0.01, 1000, m0=4100)
    got = negbin_counts_of_counts_loglik(as_type([800, 95, 5]), 0.7, 0.01, 1000, m0=4100)
    assert got == ref
    fit = fit_poisson_gamma(as_type([800, 95, 5]), 1000, 100_000, 5000)
    assert fit == fit_poisson_gamma({1: 800, 2: 95, 3: 5}, 1000, 100_000, 5000)


def test_counts_of_counts_pairs_refused():
    # a list of (j, m_j) pairs used to be read as a mapping; as an array it is 2-d
    with pytest.raises(InputError, match="1-d.*dict"):
        negbin_counts_of_counts_loglik([(1, 800), (2, 95)], 0.7, 0.01, 1000)
    with pytest.raises(InputError, match="mapping/Series"):
        negbin_counts_of_counts_loglik(["a", "b"], 0.7, 0.01, 1000)


def test_loglik_broadcasts_over_hyperparameter_draws():
    m = {1: 40, 2: 11, 3: 4, 7: 1}
    alpha = np.array([[0.2], [0.9], [3.0]])
    beta = np.array([0.001, 0.01, 0.1, 1.0])
    grid = negbin_counts_of_counts_loglik(m, alpha, beta, 500, m0=300)
    assert grid.shape == (3, 4)
    for i in range(3):
        for k in range(4):
            one = negbin_counts_of_counts_loglik(m, alpha[i, 0], beta[k], 500, m0=300)
            assert grid[i, k] == pytest.approx(one, rel=1e-14)


# --------------------------------------------------------------------------- #
# fitting
# --------------------------------------------------------------------------- #

K_SIM, ALPHA_SIM, N_SIM, FRAC_SIM = 200_000, 0.4, 2_000_000, 0.1
BETA_SIM = 1.0 / (K_SIM * ALPHA_SIM)  # αβ = 1/K


@pytest.fixture(scope="module")
def superpopulation():
    rng = np.random.default_rng(1990)
    pi = rng.gamma(ALPHA_SIM, BETA_SIM, size=K_SIM)
    F = rng.poisson(N_SIM * pi)
    f = rng.binomial(F, FRAC_SIM)  # Bernoulli sampling: binomial thinning of F
    N = int(F.sum())
    return f, F, N


@pytest.fixture(scope="module")
def ml_fit(superpopulation):
    f, _, N = superpopulation
    m, _ = counts_of_counts(f)
    return fit_poisson_gamma(m, n=int(f.sum()), N=N, K=K_SIM)


def test_ml_recovers_truth_within_standard_errors(ml_fit):
    fit = ml_fit
    assert isinstance(fit, PoissonGammaFit) and fit.converged
    se_a, se_b = fit.se
    assert abs(fit.alpha - ALPHA_SIM) < 4 * se_a
    # f_k ~ Poisson(FRAC N_SIM π_k): the sample identifies nβ, here FRAC·N_SIM·β_sim
    assert abs(fit.n * fit.beta - FRAC_SIM * N_SIM * BETA_SIM) < 4 * fit.n * se_b
    assert se_a / fit.alpha < 0.02  # K = 2e5 cells pin α down to a few per cent


def test_ml_is_a_stationary_point_of_the_full_likelihood(superpopulation, ml_fit):
    f, _, _ = superpopulation
    m, m0 = counts_of_counts(f)
    n = f.sum()

    def negll(theta):
        return -negbin_counts_of_counts_loglik(m, np.exp(theta[0]), np.exp(theta[1]), n, m0=m0)

    theta = np.log([ml_fit.alpha, ml_fit.beta])
    best = optimize.minimize(negll, theta + [0.2, -0.2], method="Nelder-Mead",
                             options={"xatol": 1e-9, "fatol": 1e-9, "maxiter": 4000})
    np.testing.assert_allclose(np.exp(best.x), [ml_fit.alpha, ml_fit.beta], rtol=1e-5)
    assert ml_fit.loglik == pytest.approx(-negll(theta), rel=1e-12)
    assert ml_fit.loglik >= -best.fun - 1e-6


def test_constraint_is_inactive_when_n_is_the_sample_total(superpopulation, ml_fit):
    f, _, N = superpopulation
    m, _ = counts_of_counts(f)
    con = fit_poisson_gamma(m, n=int(f.sum()), N=N, K=K_SIM, constraint="alpha_beta_1_over_K")
    # the same profile (slope mean/n = 1/K up to rounding) maximised twice: bounded Brent
    # stops within about sqrt(eps) |log alpha| of the optimum, so agree to 1e-7, not better
    assert con.alpha == pytest.approx(ml_fit.alpha, rel=1e-7)
    assert con.alpha * con.beta == pytest.approx(1.0 / K_SIM, rel=1e-12)
    # with n different from Σ j m_j the constraint binds and costs likelihood
    free = fit_poisson_gamma(m, n=1.3 * f.sum(), N=N, K=K_SIM)
    bound = fit_poisson_gamma(m, n=1.3 * f.sum(), N=N, K=K_SIM, constraint="alpha_beta_1_over_K")
    assert bound.loglik < free.loglik


def test_moments_agree_with_ml(superpopulation, ml_fit):
    f, _, N = superpopulation
    m, _ = counts_of_counts(f)
    mom = fit_poisson_gamma(m, n=int(f.sum()), N=N, K=K_SIM, method="moments")
    # moment equations hold exactly: E f = αnβ, Var f = αnβ(1 + nβ)
    n = f.sum()
    assert mom.alpha * n * mom.beta == pytest.approx(f.mean(), rel=1e-12)
    assert mom.alpha * n * mom.beta * (1 + n * mom.beta) == pytest.approx(f.var(), rel=1e-12)
    se_a, _ = ml_fit.se
    assert abs(mom.alpha - ml_fit.alpha) < 5 * se_a
    assert mom.loglik <= ml_fit.loglik


def test_fit_rejects_bad_input():
    with pytest.raises(ModelError, match="over-dispersion"):
        fit_poisson_gamma({1: 100}, n=100, N=1000, K=1000)
    with pytest.raises(InputError, match="smaller than"):
        fit_poisson_gamma({1: 10, 2: 5}, n=20, N=100, K=12)
    with pytest.raises(InputError, match="unknown method"):
        fit_poisson_gamma({1: 10, 3: 5}, n=25, N=100, K=50, method="bayes")
    with pytest.raises(InputError, match="exceeds N"):
        fit_poisson_gamma({1: 10, 3: 5}, n=25, N=10, K=50)


# --------------------------------------------------------------------------- #
# conditionals given (alpha, beta) against the simulated superpopulation
# --------------------------------------------------------------------------- #


def test_conditionals_match_simulation(superpopulation):
    # f_k | π_k ~ Poisson(n π_k) needs Bernoulli sampling at rate n/N; binomial
    # thinning of F_k ~ Poisson(N π_k) gives exactly f ~ Poisson(n π), F - f ~
    # Poisson((N-n) π) independent, so the ARCHITECTURE.md conditionals hold with n = N·FRAC.
    f, F, _ = superpopulation
    a, b = ALPHA_SIM, BETA_SIM
    n, N = FRAC_SIM * N_SIM, float(N_SIM)
    su = f == 1
    m1 = su.sum()
    p_hat = np.mean(F[su] == 1)
    p = prob_population_unique(a, b, n, N)
    assert abs(p_hat - p) < 4 * np.sqrt(p * (1 - p) / m1)
    for j in (1, 2, 4):
        inv = 1.0 / F[f == j]
        e = expected_inverse_frequency(j, a, b, n, N)
        assert abs(inv.mean() - e) < 4 * inv.std(ddof=1) / np.sqrt(inv.size)
    tau1, tau2 = tau_estimates(m1, a, b, n, N)
    assert abs(np.sum(su & (F == 1)) - tau1) < 4 * np.sqrt(tau1)
    assert abs(np.sum(1.0 / F[su]) - tau2) < 4 * np.sqrt(m1) * (1.0 / F[su]).std()
    # the whole conditional pmf of F | f = 2
    pmf = population_given_sample_pmf(2, a, b, n, N, max_F=60)
    emp = np.bincount(F[f == 2], minlength=61)[:61] / np.sum(f == 2)
    se = np.sqrt(pmf * (1 - pmf) / np.sum(f == 2))
    assert np.all(np.abs(emp - pmf) < 4.5 * se + 1e-12)


def test_population_pmf_properties():
    a, b, n, N = 0.7, 2e-4, 300.0, 30_000.0
    pmf = population_given_sample_pmf(np.array([1, 3]), a, b, n, N, max_F=20_000)
    assert pmf.shape == (2, 20_001)
    np.testing.assert_allclose(pmf.sum(axis=-1), 1.0, rtol=1e-10)
    assert np.all(pmf[0, :1] == 0) and np.all(pmf[1, :3] == 0)
    assert pmf[0, 1] == pytest.approx(prob_population_unique(a, b, n, N), rel=1e-13)
    h = np.arange(20_001)
    np.testing.assert_allclose((pmf / np.where(h == 0, 1, h)).sum(-1),
                               expected_inverse_frequency([1, 3], a, b, n, N), rtol=1e-10)
    # a census (n = N): F = f
    full = population_given_sample_pmf(2, a, b, N, N, max_F=5)
    np.testing.assert_array_equal(full, [0, 0, 1, 0, 0, 0])
    assert expected_inverse_frequency(4, a, b, N, N) == 0.25


def test_conditionals_broadcast_over_draws():
    alpha = np.array([[0.2, 0.5, 1.3]])  # (chain, draw)
    beta = np.array([[1e-4, 3e-4, 1e-3]])
    f = np.array([1, 2, 5])[:, None, None]  # (cell, 1, 1)
    e = expected_inverse_frequency(f, alpha, beta, 1000.0, 50_000.0)
    assert e.shape == (3, 1, 3)
    rho = sampling_rho(beta, 1000.0, 50_000.0)
    assert e[1, 0, 2] == pytest.approx(negbin_inverse_moment(2, 1.3 + 2, rho[0, 2]), rel=1e-15)
    assert np.asarray(prob_population_unique(alpha, beta, 1000.0, 50_000.0)).shape == (1, 3)


# --------------------------------------------------------------------------- #
# seed 000 eq. (10) and Table 1
# --------------------------------------------------------------------------- #


def test_seed000_table1_fraction_of_population_uniques():
    # Seed 000 section 3.2: a key with k = 1108 values; Keller and Bethlehem's minimal
    # subpopulation size 63 624 is where f_u = 0.001 (eq. 12 with α = 1/(kβ)). Solving
    # that for β must reproduce Table 1's f_u x 10^3 = 2.17, 1.00, 0.46 for
    # N = 31 812, 63 624, 127 248.
    k = 1108

    def log_fu(beta, N):
        return np.log(fraction_population_uniques(1.0 / (k * beta), beta, N))

    beta = optimize.brentq(lambda b: log_fu(b, 63_624) - np.log(1e-3), 4e-3, 0.1, xtol=1e-15)
    fu = [1e3 * np.exp(log_fu(beta, N)) for N in (31_812, 63_624, 127_248)]
    np.testing.assert_allclose(fu, [2.17, 1.00, 0.46], atol=0.005)


def test_expected_population_uniques_forms_agree():
    K, alpha, N = 5000.0, 0.35, 1e6
    beta = 1.0 / (K * alpha)
    mu_seed = expected_population_uniques(alpha, beta, N)
    mu_general = expected_population_uniques(alpha, beta, N, K=K)
    assert mu_seed == pytest.approx(mu_general, rel=1e-14)
    # μ = K · P(F = 1), F ~ NegBin(α, 1/(1 + Nβ))
    assert mu_general == pytest.approx(K * stats.nbinom.pmf(1, alpha, 1 / (1 + N * beta)), rel=1e-12)
    assert fraction_population_uniques(alpha, beta, N) == pytest.approx(mu_seed / N, rel=1e-15)


def test_fraction_population_uniques_with_K_for_untied_hyperparameters():
    # Untied (α, β): Kαβ = 0.7, so the seed's K-less form (1 + Nβ)^-(1+α), which
    # assumes αβ = 1/K, is off by that factor. With K, f_u = μ/N must follow seed 000
    # eq. 10 as printed: μ = k α Nβ (1 + Nβ)^-(1+α) = k Pr(Y = 1).
    alpha, beta, N, K = 0.7, 2e-4, 60_000.0, 5_000.0
    mu_eq10 = K * alpha * N * beta * (1.0 + N * beta) ** -(1.0 + alpha)
    assert mu_eq10 == pytest.approx(K * stats.nbinom.pmf(1, alpha, 1 / (1 + N * beta)), rel=1e-12)
    got = fraction_population_uniques(alpha, beta, N, K=K)
    assert got == pytest.approx(mu_eq10 / N, rel=1e-13)
    assert got == pytest.approx(0.008941169769793526, rel=1e-12)
    assert got == pytest.approx(expected_population_uniques(alpha, beta, N, K=K) / N, rel=1e-15)
    fit = PoissonGammaFit(alpha=alpha, beta=beta, n=800.0, N=N, K=K, method="ml",
                          constraint=None, loglik=0.0, converged=True)
    assert got == pytest.approx(fit.fraction_population_uniques, rel=1e-15)
    # the K-less form is unchanged: it assumes the tie αβ = 1/K and so gives
    # 0.012773 = 0.008941 / 0.7 here, which is not μ/N for these hyperparameters
    kless = fraction_population_uniques(alpha, beta, N)
    assert kless == pytest.approx((1.0 + N * beta) ** -(1.0 + alpha), rel=1e-14)
    assert kless == pytest.approx(0.01277309967113361, rel=1e-12)
    assert got == pytest.approx(K * alpha * beta * kless, rel=1e-14)
    # broadcasts over draws and refuses a non-positive K
    draws = fraction_population_uniques(np.array([alpha, 2.0]), beta, N, K=K)
    assert draws.shape == (2,) and draws[0] == pytest.approx(got, rel=1e-15)
    with pytest.raises(InputError, match="K"):
        fraction_population_uniques(alpha, beta, N, K=0.0)


def test_fit_summary_properties(ml_fit):
    d = ml_fit.to_dict()
    assert d["method"] == "ml" and d["converged"] is True
    assert d["expected_population_uniques"] == pytest.approx(
        expected_population_uniques(ml_fit.alpha, ml_fit.beta, ml_fit.N, K=ml_fit.K)
    )
    assert ml_fit.rho == pytest.approx((1 + ml_fit.n * ml_fit.beta) / (1 + ml_fit.N * ml_fit.beta))
