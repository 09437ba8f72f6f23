"""Fixes of audit CC3 (closed-form estimators): Mokken's untied omega, finite inputs,
NaN in publication_order, suda.dis_estimate's checks, and the DIS variance."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from sdcbayes.exceptions import InputError
from sdcbayes.risk import beta_binomial, dis, suda
from sdcbayes.risk import mokken as mk

# the audit's draw: Adult-like key with K cells, population N
K, N_POP, ALPHA = 1108, 63624.0, 0.2
A, F = 300.0, 0.01


def _fu_negbin(N, alpha, beta, K):
    """f_u = K P(Y = 1) / N with Y ~ NegBin(alpha, 1/(1 + N beta)), straight from scipy."""
    return K * stats.nbinom.pmf(1, alpha, 1.0 / (1.0 + N * beta)) / N


# ------------------------------------------------------------ finding 1: omega = K alpha beta


@pytest.mark.parametrize("omega", [0.5, 0.9, 1.0, 1.1, 3.0])
@pytest.mark.parametrize("alpha", [0.2, 2.0])
def test_uniques_fraction_untied_matches_negative_binomial(omega, alpha):
    beta = omega / (K * alpha)  # models/poisson_gamma.py: beta = omega / (K alpha)
    N = np.array([10.0, 1e3, N_POP, 1e7])
    np.testing.assert_allclose(
        mk.uniques_fraction(N, alpha, beta, omega=omega), _fu_negbin(N, alpha, beta, K),
        rtol=1e-12,
    )


@pytest.mark.parametrize("method", ["poisson", "binomial"])
@pytest.mark.parametrize("omega", [0.9, 1.1, 3.0])
def test_minimal_subpopulation_size_untied_puts_the_risk_at_gamma(method, omega):
    beta = omega / (K * ALPHA)
    fu = _fu_negbin(N_POP, ALPHA, beta, K)
    # gamma such that the maximal risk of the untied model is gamma exactly at N_POP
    if method == "poisson":
        gamma = -np.expm1(-A * F * fu)  # eq. (14)/(16)
    else:
        gamma = -np.expm1(F * N_POP * np.log1p(-A * fu / N_POP))  # eq. (5) form
    got = mk.minimal_subpopulation_size(gamma, A, F, ALPHA, beta, omega=omega, method=method)
    # before: the tied formula, 58 750.7 at omega = 1.1 (8 % low: unsafe)
    assert got == pytest.approx(N_POP, rel=1e-9)


def test_minimal_subpopulation_size_default_is_the_tie_unchanged():
    beta = 1.0 / (K * ALPHA)
    # values of the code before omega was added (same bits at current NumPy; within a few
    # ulps across NumPy versions, whose pow differs in the last bits)
    assert mk.minimal_subpopulation_size(1e-3, A, F, ALPHA, beta) == pytest.approx(
        174758.94714104562, rel=1e-14)
    assert mk.minimal_subpopulation_size(1e-3, A, F, ALPHA, beta, method="binomial") == (
        pytest.approx(174758.98888141336, rel=1e-14))
    assert mk.uniques_fraction(N_POP, ALPHA, beta) == pytest.approx(0.0011182181576240488,
                                                                    rel=1e-14)
    # omega = 1 given is the tie itself: the same bits as leaving it out
    assert (mk.minimal_subpopulation_size(1e-3, A, F, ALPHA, beta, omega=1.0)
            == mk.minimal_subpopulation_size(1e-3, A, F, ALPHA, beta))


def test_minimal_size_binomial_untied_when_f_u_exceeds_one_near_a():
    # omega = 3 and a tiny beta: f_u(N = a) = 3 (1 + a beta)^-(1 + alpha) > 1, so
    # a f_u / N > 1 at the bracket's start (log1p of < -1 gave NaN without the clip)
    alpha, omega = 0.5, 3.0
    beta = 1e-6
    a, f, gamma = 50.0, 0.5, 0.01
    assert mk.uniques_fraction(a, alpha, beta, omega=omega) > 1.0
    got = mk.minimal_subpopulation_size(gamma, a, f, alpha, beta, omega=omega, method="binomial")
    fu = omega * (1.0 + got * beta) ** -(1.0 + alpha)
    assert np.isfinite(got) and got > a
    assert -np.expm1(f * got * np.log1p(-a * fu / got)) == pytest.approx(gamma, rel=1e-9)


def test_omega_broadcasts_by_dimension_name():
    omega = xr.DataArray([0.9, 1.0, 1.1], dims="draw")
    alpha = xr.DataArray([ALPHA, ALPHA, ALPHA], dims="draw")
    beta = omega / (K * alpha)
    gamma = xr.DataArray([1e-3, 1e-2], dims="gamma")
    got = mk.minimal_subpopulation_size(gamma, A, F, alpha, beta, omega=omega)
    assert set(got.dims) == {"draw", "gamma"}
    for i in range(3):
        for j in range(2):
            ref = mk.minimal_subpopulation_size(
                float(gamma[j]), A, F, ALPHA, float(beta[i]), omega=float(omega[i]))
            assert float(got.isel(draw=i, gamma=j)) == pytest.approx(ref, rel=1e-14)


def test_omega_must_be_positive_and_finite():
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(InputError, match="omega"):
            mk.minimal_subpopulation_size(1e-3, A, F, ALPHA, 1e-3, omega=bad)
        with pytest.raises(InputError, match="omega"):
            mk.uniques_fraction(N_POP, ALPHA, 1e-3, omega=bad)


def test_mokken_posterior_uses_the_untied_omega():
    # mokken_posterior passes omega=post["omega"] to minimal_subpopulation_size
    from sdcbayes.risk.posterior_assess import mokken_posterior

    for omega in (0.9, 1.1):
        beta = omega / (K * ALPHA)
        f_u = omega * (1 + N_POP * beta) ** -(1 + ALPHA)  # the model's Deterministic f_u
        post = xr.Dataset({v: (("chain", "draw"), [[x]]) for v, x in
                           (("alpha", ALPHA), ("beta", beta), ("omega", omega), ("f_u", f_u))})
        gamma = -np.expm1(-A * F * f_u)  # maximal risk = gamma exactly at N_POP
        out = mokken_posterior(post, n=8399, N=N_POP, f_a=A / N_POP, gamma=gamma, a=A, f=F,
                               method="poisson")
        # before: 69 485.4 (omega 0.9) and 58 750.7 (omega 1.1)
        assert float(out["N_min"].values.ravel()[0]) == pytest.approx(N_POP, rel=1e-9)


# ---------------------------------------------------- finding 5: infinite and huge N


@pytest.mark.parametrize(
    "call",
    [
        lambda: mk.disclosure_risk_hypergeometric(1e-3, 1e-3, 100, np.inf),  # gave 1.0
        lambda: mk.expected_union_size(np.inf, 10, 3),  # gave NaN
        lambda: mk.maximal_sample_fraction(0.01, 1e-3, 1e-3, np.inf),  # gave 0
        lambda: mk.disclosure_risk(1e-3, 1e-3, np.inf),
        lambda: mk.minimal_subpopulation_size(1e-3, np.inf, F, ALPHA, 1e-3),
        lambda: mk.uniques_fraction(np.inf, ALPHA, 1e-3),
        lambda: mk.total_risk([0.1, 0.05], [0.01, 0.02], np.inf),
    ],
)
def test_mokken_refuses_infinite_arguments(call):
    with pytest.raises(InputError, match="must be finite"):
        call()


def test_mokken_refuses_population_sizes_beyond_float_precision():
    # N = 1e160 gave 2.0e-155, twice the right 1.0e-155 (an overflowing product)
    with pytest.raises(InputError, match=r"2\*\*53"):
        mk.disclosure_risk_hypergeometric(1.0, 1e-155, 100, 1e160)
    with pytest.raises(InputError, match=r"2\*\*53"):
        mk.expected_union_size(1e20, 10, 3)
    # the largest accepted size still agrees with the binomial limit
    big = mk.MAX_POPULATION
    assert mk.disclosure_risk_hypergeometric(1.0, 1e-7, 100, big) == pytest.approx(
        mk.disclosure_risk(1.0, 1e-7, 100), rel=1e-12)


def test_mokken_range_errors_show_plain_numbers():
    with pytest.raises(InputError, match=r"got -1\.0\."):
        mk.disclosure_risk(-1.0, 0.1, 3)


# ----------------------------------------------- finding 2: publication_order and NaN


@pytest.mark.parametrize(
    ("R1", "R0", "w", "name"),
    [
        ([0.1, np.nan, 0.2], [0.5, 0.5, 0.1], None, "R1"),
        ([0.1, 0.3, 0.2], [0.5, np.nan, 0.1], None, "R0"),
        ([0.1, 0.3, 0.2], [0.5, 0.2, 0.1], [1.0, np.nan, 1.0], "weight"),
        ([0.1, np.inf, 0.2], [0.5, 0.5, 0.1], None, "R1"),
    ],
)
def test_publication_order_refuses_non_finite_values(R1, R0, w, name):
    # NaN used to set every risk_share (or loss_share) to 0 without an error
    with pytest.raises(InputError, match=rf"{name} must be finite; cell 1"):
        beta_binomial.publication_order(R1, R0, w)


def test_publication_order_finite_input_unchanged():
    t = beta_binomial.publication_order([0.1, 0.3, 0.2], [0.5, 0.2, 0.1])
    assert list(t.index) == [0, 1, 2]
    assert t["risk_share"].iloc[-1] == pytest.approx(1.0)
    assert t["loss_share"].iloc[0] == pytest.approx(0.3 / 0.8)


# ------------------------------------------------ finding 3: suda.dis_estimate's checks


@pytest.mark.parametrize(
    ("u", "p", "match"),
    [
        (3, -10, "n_in_pairs"),  # gave 0.30
        (3, np.nan, "n_in_pairs"),  # gave 0.30
        (-2, 2, "n_uniques"),  # gave 0
        (np.inf, 2, "n_uniques"),
        (2.5, 2, "n_uniques"),
        (3, 3, "even"),  # odd number of records in pairs
        ([1, 2], [2, 4, 6], "shapes"),
    ],
)
def test_suda_dis_estimate_refuses_non_counts(u, p, match):
    with pytest.raises(InputError, match=match):
        suda.dis_estimate(u, p, 0.1)


def test_suda_dis_estimate_valid_counts_unchanged():
    assert suda.dis_estimate(4, 4, 0.01) == pytest.approx(0.01)
    assert suda.dis_estimate(0, 10, 0.3) == 0.0  # sdcMicro's convention for U = 0
    np.testing.assert_allclose(suda.dis_estimate(np.array([5, 50]), np.array([20, 20]), 0.1),
                               [0.5 / 18.5, 5 / 23])


# --------------------------------------------------- finding 4: DIS undefined case, variance


def test_dis_estimate_is_nan_without_sample_uniques_like_dis_truth():
    # dis_estimate(0, 3, 0.1) returned 0 while dis_truth of such a sample is NaN
    assert np.isnan(dis.dis_estimate(0, 3, 0.1))
    assert np.isnan(dis.dis_from_frequencies([2, 2, 3], 0.1))
    assert np.isnan(dis.dis_truth([2, 2, 3], [4, 2, 9]))
    np.testing.assert_array_equal(np.isnan(dis.dis_estimate([0, 2, 0], [3, 1, 0], 0.1)),
                                  [True, False, True])


def test_dis_variance_hand_values_and_edges():
    n1, n2, n3, pi = 40, 25, 7, 0.1
    theta = dis.dis_estimate(n1, n2, pi)
    v_b = (4 * (1 - pi) ** 2 * n2 + 2 * pi * (1 - pi) * n2 + 6 * (1 - pi) ** 2 * n3) / pi**2
    assert dis.dis_variance(n1, n2, n3, pi) == pytest.approx(theta**4 / n1**2 * v_b, rel=1e-12)
    assert dis.dis_variance(5, 3, 2, 1.0) == 0.0  # census: theta = 1 is known
    assert dis.dis_variance(5, 0, 0, 0.3) == 0.0  # no pairs or triples: nothing to estimate
    assert np.isnan(dis.dis_variance(0, 3, 1, 0.1))
    fk = [1] * 40 + [2] * 25 + [3] * 7 + [5] * 4
    assert dis.dis_variance_from_frequencies(fk, pi) == pytest.approx(
        float(dis.dis_variance(n1, n2, n3, pi)), rel=1e-14)
    with pytest.raises(InputError, match="n1, n2 and n3"):
        dis.dis_variance(3, 1, -1, 0.1)
    with pytest.raises(InputError, match="n3 is a count"):
        dis.dis_variance(3, 1, 0.5, 0.1)
    with pytest.raises(InputError, match="sampling_fraction"):
        dis.dis_variance(3, 1, 1, 0.0)


@pytest.mark.parametrize("pi", [0.05, 0.5])
def test_dis_variance_matches_the_simulated_error(pi):
    # Bernoulli samples of one population: the estimated sd of theta_hat - theta
    # against its spread over the samples (2000 samples: 0.0179 vs 0.0180 at
    # pi = 0.05, 0.0120 vs 0.0121 at 0.5; here 400 for speed)
    rng = np.random.default_rng(1)
    N, K_cells = 20000, 15000
    p = rng.gamma(0.3, size=K_cells)
    cell = rng.choice(K_cells, size=N, p=p / p.sum())
    F_pop = np.bincount(cell, minlength=K_cells)
    errors, variances, covered = [], [], []
    for _ in range(400):
        f = np.bincount(cell[rng.random(N) < pi], minlength=K_cells)
        n1, n2, n3 = (int(np.count_nonzero(f == j)) for j in (1, 2, 3))
        theta_hat = float(dis.dis_estimate(n1, n2, pi))
        theta = n1 / F_pop[f == 1].sum()
        v = float(dis.dis_variance(n1, n2, n3, pi))
        errors.append(theta_hat - theta)
        variances.append(v)
        covered.append(abs(theta_hat - theta) <= 1.96 * np.sqrt(v))
    sd = np.std(errors)
    assert np.sqrt(np.mean(variances)) == pytest.approx(sd, rel=0.15)
    assert 0.90 <= np.mean(covered) <= 0.99
