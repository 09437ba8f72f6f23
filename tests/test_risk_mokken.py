"""Tests of sdcbayes.risk.mokken against seed 000 (Mokken et al. 1992).

Reference numbers come from the paper: Table 1 (Section 3.2), the three
single-investigator risks and the two R'_m values quoted with Figure 1
(Section 4). Closed forms are checked against scipy distributions, exact
rational arithmetic or Monte Carlo simulation with fixed seeds.

Not reproducible from the paper: Table 3 (total risks for the Dutch Labour
Force Survey, Section 5.3) needs the estimated f_u of 63 x 3 keys, which the
paper does not print; Table 2 holds only category counts.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import xarray as xr
from scipy import optimize, stats

from sdcbayes.exceptions import InputError
from sdcbayes.risk import mokken as mk
from sdcbayes.risk.poisson_gamma import expected_population_uniques

# ----------------------------------------------------------------------------- Table 1

# Seed 000, Section 3.2: Keller & Bethlehem's key has k = 1108 values; their
# criterion f_u <= 0.001 gives a minimal subpopulation size of 63 624, i.e.
# f_u(63 624) = 0.001 under model (12). Table 1 uses subpopulations of half,
# once and twice that size.
K_CELLS = 1108
N_KB = 63_624
TABLE1_N = np.array([31_812, 63_624, 127_248])
TABLE1_FU_X1000 = np.array([2.17, 1.00, 0.46])
TABLE1_F = np.array([0.001, 0.001, 0.001, 0.01, 0.01, 0.01])
TABLE1_A = np.array([30, 300, 1000, 30, 300, 1000])
TABLE1_R_X1000 = np.array(
    [
        [0.07, 0.03, 0.01],
        [0.65, 0.30, 0.14],
        [2.17, 1.00, 0.46],
        [0.65, 0.30, 0.14],
        [6.49, 3.00, 1.38],
        [21.48, 9.95, 4.59],
    ]
)


def _log_fu_gap(beta: float) -> float:
    alpha = mk.poisson_gamma_alpha(beta, K_CELLS)
    return float(np.log(mk.uniques_fraction(N_KB, alpha, beta)) - np.log(1e-3))


@pytest.fixture(scope="module")
def table1_params() -> tuple[float, float]:
    """(alpha, beta) of model (12) for the Keller-Bethlehem key.

    The paper does not print beta. f_u(63 624) = 0.001 has two roots in beta
    (f_u first rises, then falls in beta): beta ~ 0.0025 (alpha ~ 0.36) and
    beta ~ 0.0074 (alpha ~ 0.12). Only the second reproduces the printed f_u of
    the half and double subpopulations (the first gives 2.55 and 0.39), so the
    bracket below selects it; the test on TABLE1_FU_X1000 then checks it.
    """
    beta = optimize.brentq(_log_fu_gap, 4e-3, 1.0, xtol=1e-16, rtol=1e-14)
    return float(mk.poisson_gamma_alpha(beta, K_CELLS)), float(beta)


def test_table1_fractions_of_uniques(table1_params):
    alpha, beta = table1_params
    f_u = mk.uniques_fraction(TABLE1_N, alpha, beta)
    # printed to 2 decimals (x 1000): within half a unit of the last digit
    assert np.all(np.abs(f_u * 1e3 - TABLE1_FU_X1000) <= 0.005)
    # the other root of f_u(63 624) = 0.001 does not reproduce the table
    beta_other = optimize.brentq(_log_fu_gap, 1e-3, 4e-3)
    f_other = mk.uniques_fraction(TABLE1_N, mk.poisson_gamma_alpha(beta_other, K_CELLS), beta_other)
    assert np.abs(f_other[0] * 1e3 - 2.17) > 0.3


@pytest.mark.parametrize("method", ["poisson", "binomial"])
def test_table1_maximal_risk(table1_params, method):
    """All 18 entries of Table 1: maximal risk (eq. 14) x 1000, to the printed 2 decimals."""
    alpha, beta = table1_params
    f_u = mk.uniques_fraction(TABLE1_N, alpha, beta)  # (3,)
    # one column = all acquaintances in a subpopulation of that size (eq. 14)
    risk = mk.maximal_subpopulation_risk(
        TABLE1_A[:, None],  # broadcast against the reduced (row, column) shape
        TABLE1_F[:, None, None],
        f_u[:, None],
        TABLE1_N[:, None],
        axis=-1,
        method=method,
    )
    assert risk.shape == (6, 3)
    assert np.all(np.abs(risk * 1e3 - TABLE1_R_X1000) <= 0.005 + 1e-12)


def test_table1_minimal_subpopulation_size_agrees_with_printed_risks(table1_params):
    """With gamma = 0.001 (Section 3.2), a printed risk above 1.00e-3 means N < N_min."""
    alpha, beta = table1_params
    n_min = mk.minimal_subpopulation_size(1e-3, TABLE1_A[:, None], TABLE1_F[:, None], alpha, beta)
    decided = TABLE1_R_X1000 != 1.00  # 1.00 is the threshold itself at printed precision
    assert decided.sum() == 17
    unsafe_printed = TABLE1_R_X1000 > 1.00
    unsafe_by_nmin = TABLE1_N[None, :] < n_min
    assert np.array_equal(unsafe_printed[decided], unsafe_by_nmin[decided])
    # the borderline cell (a = 1000, f = 0.001, N = 63 624): R = 0.9995e-3 < gamma
    assert n_min[2, 0] < N_KB


# ----------------------------------------------------------------------------- Figure 1


def test_figure1_quoted_values():
    """Section 4: N = 63 624, f_u = f = 0.001; the values quoted with Figure 1."""
    N, f_u, f = 63_624, 1e-3, 1e-3
    n = f * N  # 63.624: the paper's n is not an integer here
    # "the risk for one investigator is 0.00003, 0.0003 and 0.001" (a = 30, 300, 1000)
    r1 = mk.multiple_investigator_risk(f_u, n, N, np.array([30, 300, 1000]), 1)
    assert abs(r1[0] - 0.00003) <= 0.5e-5
    assert abs(r1[1] - 0.0003) <= 0.5e-4
    assert abs(r1[2] - 0.001) <= 0.5e-3
    # "The value 0.061672 of R'_m for a = 1000 and m = 1000 ... and the value
    # 0.061143 of R'_m for a = 300 and m = 1000" (eq. 19 with eq. 21)
    rm = mk.multiple_investigator_risk(f_u, n, N, np.array([1000, 300]), 1000)
    assert abs(rm[0] - 0.061672) <= 0.5e-6
    assert abs(rm[1] - 0.061143) <= 0.5e-6
    # "... is equal to the maximum of R'_m corresponding to E a_m = N"
    r_max = mk.disclosure_risk(1.0, f_u, n)
    assert abs(r_max - 0.061672) <= 0.5e-6
    # the Poisson form (6) would print 0.061642 / 0.061113: the paper used (19) as printed
    rp = mk.multiple_investigator_risk(f_u, n, N, np.array([1000, 300]), 1000, method="poisson")
    assert np.all(np.abs(rp - np.array([0.061672, 0.061143])) > 2e-5)


# ------------------------------------------------------------------- Section 2: one key


def test_expected_disclosures_eq4():
    assert mk.expected_disclosures(0.1, 0.01, 500) == pytest.approx(0.5, rel=1e-15)
    # eq. (6) is 1 - exp(-mu_as)
    r6 = mk.disclosure_risk(0.1, 0.01, 500, method="poisson")
    assert r6 == pytest.approx(1 - math.exp(-0.5), rel=1e-14)


def test_binomial_risk_is_probability_of_at_least_one():
    x, n = 0.003, 250
    assert mk.disclosure_risk(0.3, 0.01, n) == pytest.approx(stats.binom.sf(0, n, x), rel=1e-13)


def test_poisson_approximation_error_bound():
    """0 <= eq.(5) - eq.(6) <= n x^2 / (2 (1 - x)), x = f_a f_u."""
    f_a = np.array([1e-4, 1e-3, 0.01, 0.1, 1.0])[:, None, None]
    f_u = np.array([1e-4, 1e-3, 0.01, 0.1])[None, :, None]
    n = np.array([1, 10, 100, 1000, 1e5])
    r5 = mk.disclosure_risk(f_a, f_u, n)
    r6 = mk.disclosure_risk(f_a, f_u, n, method="poisson")
    x = f_a * f_u
    diff = r5 - r6
    assert np.all(diff >= -1e-15)
    assert np.all(diff <= n * x**2 / (2 * (1 - x)) + 1e-15)
    # practical regime (n x <= 1, x <= 1e-4): relative error below x
    small = (x <= 1e-4) & (n * x <= 1) & (n * x > 0)
    assert np.all(np.abs(diff / r5)[np.broadcast_to(small, diff.shape)] < 1e-4)


def test_hypergeometric_risk_matches_scipy_and_bounds_binomial():
    N, f_a, f_u = 1000, 0.1, 0.1  # u_a = 10 unique acquaintances
    n = np.array([1, 10, 50, 200, 990])
    r_h = mk.disclosure_risk_hypergeometric(f_a, f_u, n, N)
    expected = 1 - stats.hypergeom.pmf(0, N, 10, n)
    np.testing.assert_allclose(r_h, expected, rtol=1e-10, atol=1e-14)
    # without replacement, each draw is at least as likely to hit: R_hyper >= R_binom
    r_b = mk.disclosure_risk(f_a, f_u, n)
    assert np.all(r_h >= r_b * (1 - 1e-12))
    # non-integer u_a and tiny risks: against the product prod_i (1 - u_a/(N - i)) in log1p form
    for N_, u, m in [(63_624, 0.3, 64), (63_624, 3e-4, 636), (1e7, 0.5, 10_000), (1e6, 1e-6, 1000),
                     (1e7, 3.0, 1), (50, 3.0, 40)]:
        i = np.arange(m)
        reference = -np.expm1(math.fsum(np.log1p(-u / (N_ - i))))
        r_h = mk.disclosure_risk_hypergeometric(u / N_, 1.0, m, N_)
        assert r_h == pytest.approx(reference, rel=1e-12)
    # n + u_a > N: a disclosure is certain
    assert mk.disclosure_risk_hypergeometric(f_a, f_u, 995, N) == 1.0
    # small sample fraction: eq. (5) approximates it closely (the paper's premise)
    N_big = 63_624
    r_h = mk.disclosure_risk_hypergeometric(300 / N_big, 0.01, 64, N_big)
    r_b = mk.disclosure_risk(300 / N_big, 0.01, 64)
    assert abs(r_h / r_b - 1) < 2e-3


@pytest.mark.parametrize("method", ["binomial", "poisson"])
def test_maximal_sample_fraction_round_trip(method):
    gamma = np.array([1e-4, 1e-3, 0.01, 0.1])[:, None]
    f_u = np.array([1e-4, 1e-3, 2.17e-3, 0.05])
    N, f_a = 63_624, 300 / 63_624
    f_max = mk.maximal_sample_fraction(gamma, f_a, f_u, N, method=method)
    risk = mk.disclosure_risk(f_a, f_u, f_max * N, method=method)
    np.testing.assert_allclose(risk, np.broadcast_to(gamma, risk.shape), rtol=1e-12)
    # data sets below f_max are safe, above are not (R increases in f)
    assert np.all(mk.disclosure_risk(f_a, f_u, 0.99 * f_max * N, method=method) < gamma)
    assert np.all(mk.disclosure_risk(f_a, f_u, 1.01 * f_max * N, method=method) > gamma)


def test_maximal_sample_fraction_approximations():
    gamma = np.array([1e-4, 1e-3, 0.01, 0.05])
    args = (300 / 63_624, 1e-3, 63_624)
    f7 = mk.maximal_sample_fraction(gamma, *args, method="binomial")
    f8 = mk.maximal_sample_fraction(gamma, *args, method="poisson")
    f9 = mk.maximal_sample_fraction(gamma, *args, method="linear")
    # -ln(1 - x) >= x gives (7) <= (8); gamma <= -ln(1 - gamma) gives (9) <= (8)
    assert np.all(f7 <= f8) and np.all(f9 <= f8)
    # (9) vs (8): relative gap -> gamma/2 for small gamma
    np.testing.assert_allclose(1 - f9 / f8, gamma / 2, rtol=0.05)
    # (7) vs (8): relative gap ~ f_a f_u / 2, tiny here
    assert np.all(np.abs(f7 / f8 - 1) < 1e-5)
    # worked example: N = 63 624, a = 1000, f_u = 0.001, gamma = 0.001 -> f_max just
    # above the f = 0.001 of Table 1, whose risk (0.9995e-3) is just below gamma
    fm = mk.maximal_sample_fraction(1e-3, 1000 / 63_624, 1e-3, 63_624)
    assert 0.001 < fm < 0.0011


def test_maximal_sample_fraction_edges():
    assert mk.maximal_sample_fraction(0.01, 0.0, 0.1, 1000) == np.inf
    assert mk.maximal_sample_fraction(0.01, 1.0, 1.0, 1000) == 0.0


# -------------------------------------------------------------- Poisson-gamma (eq. 10-12)


def test_uniques_fraction_equals_k_times_negative_binomial_pmf():
    """Eq. (10): mu = k Pr(Y = 1), Y ~ negative binomial(N beta, alpha), alpha = 1/(k beta)."""
    k = np.array([50, 1108, 20_000])[:, None]
    beta = np.array([1e-4, 7.4e-3, 0.5])
    N = 63_624
    alpha = mk.poisson_gamma_alpha(beta, k)
    pr1 = stats.nbinom.pmf(1, alpha, 1 / (1 + N * beta))
    np.testing.assert_allclose(expected_population_uniques(alpha, beta, N), k * pr1, rtol=1e-10)
    # mean N beta alpha = N / k
    mean = stats.nbinom.mean(alpha, 1 / (1 + N * beta))
    np.testing.assert_allclose(mean, np.broadcast_to(N / k, mean.shape), rtol=1e-12)


def test_expected_uniques_by_simulation():
    """Simulated Poisson-gamma populations (fixed seed) against eq. (10)."""
    rng = np.random.default_rng(20240610)
    k, N, beta = 1108, 63_624, 7.4e-3
    alpha = float(mk.poisson_gamma_alpha(beta, k))
    reps = 300
    pi = rng.gamma(alpha, beta, size=(reps, k))
    Y = rng.poisson(N * pi)
    uniques = (Y == 1).sum(axis=1)
    mu = expected_population_uniques(alpha, beta, N)
    se = uniques.std(ddof=1) / math.sqrt(reps)
    assert abs(uniques.mean() - mu) < 4 * se


def test_uniques_fraction_decreases_with_subpopulation_size():
    """Section 3.1: under model (12) d f_uj / d N_j < 0 for every beta > 0."""
    N = np.geomspace(1, 1e7, 200)
    beta = np.array([1e-6, 1e-4, 7.4e-3, 1.0, 100.0])[:, None]
    f_u = mk.uniques_fraction(N, mk.poisson_gamma_alpha(beta, 1108), beta)
    # strictly decreasing wherever f_u has not underflowed to 0 (alpha ~ 900 for beta = 1e-6)
    assert np.all(np.diff(f_u, axis=-1)[f_u[:, 1:] > 0] < 0)
    assert np.all(np.diff(f_u, axis=-1) <= 0)


# ------------------------------------------------------------ Section 3: subpopulations


def test_subpopulation_risk_reduces_to_single_population():
    # one subpopulation: eq. (13) is eq. (6), and the product form is eq. (5)
    for method in ("poisson", "binomial"):
        r = mk.subpopulation_risk([0.01], [0.002], [400], method=method)
        assert r == pytest.approx(mk.disclosure_risk(0.01, 0.002, 400, method=method), rel=1e-13)
    # proportional allocation (A1): common f_a, f_u -> the population risk with n = sum n_j
    n_j = np.array([100.0, 250.0, 50.0])
    r = mk.subpopulation_risk(0.01, 0.002, n_j, method="binomial")
    assert r == pytest.approx(mk.disclosure_risk(0.01, 0.002, n_j.sum()), rel=1e-13)


@pytest.mark.parametrize("method", ["poisson", "binomial"])
def test_maximal_subpopulation_risk_is_the_worst_allocation(method):
    """Eq. (13)-(14): no allocation of the a acquaintances beats the maximal risk."""
    rng = np.random.default_rng(7)
    N = np.array([31_812.0, 63_624.0, 127_248.0, 250_000.0])
    f = np.array([0.01, 0.005, 0.02, 0.01])
    f_u = np.array([2.17e-3, 1.0e-3, 0.46e-3, 0.2e-3])
    a = 1000.0
    r_max = mk.maximal_subpopulation_risk(a, f, f_u, N, method=method)
    shares = rng.dirichlet(np.ones(4), size=5000)  # random allocations a_j = a * share
    r_alloc = mk.subpopulation_risk(a * shares / N, f_u, f * N, method=method)
    assert np.all(r_alloc <= r_max + 1e-15)
    # attained at the vertex with the largest f_j f_uj (subpopulation 0 here)
    vertex = np.zeros(4)
    vertex[np.argmax(f * f_u)] = a
    assert mk.subpopulation_risk(vertex / N, f_u, f * N, method=method) == pytest.approx(
        r_max, rel=1e-13
    )


@pytest.mark.parametrize("method", ["poisson", "binomial"])
def test_minimal_subpopulation_size_round_trip(table1_params, method):
    alpha, beta = table1_params
    gamma = np.array([1e-4, 1e-3, 1e-2])[:, None]
    a = np.array([30.0, 300.0, 1000.0])
    f = 0.01
    n_min = mk.minimal_subpopulation_size(gamma, a, f, alpha, beta, method=method)
    assert n_min.shape == (3, 3)
    assert np.all(n_min > 0)
    f_u = mk.uniques_fraction(n_min, alpha, beta)
    risk = mk.maximal_subpopulation_risk(a, f, f_u[..., None], n_min[..., None], method=method)
    np.testing.assert_allclose(risk, np.broadcast_to(gamma, risk.shape), rtol=1e-9)


def test_minimal_subpopulation_size_closed_form_and_monotone(table1_params):
    alpha, beta = table1_params
    af = np.geomspace(0.5, 1e4, 60)
    n_min = mk.minimal_subpopulation_size(1e-3, af, 1.0, alpha, beta)
    # eq. (17) written out with C = -ln(1 - gamma) / (a f)
    c = -np.log1p(-1e-3) / af
    np.testing.assert_allclose(n_min, (c ** (-1 / (1 + alpha)) - 1) / beta, rtol=1e-10)
    # Section 3.1: d N_min / d(a f) > 0
    assert np.all(np.diff(n_min) > 0)
    # C >= 1 (a f small): N_min <= 0, every subpopulation size is safe
    small = mk.minimal_subpopulation_size(0.5, 0.1, 1.0, alpha, beta)
    assert small <= 0
    assert mk.maximal_subpopulation_risk(0.1, 1.0, 1.0) <= 0.5  # even with f_u = 1
    # the binomial (eq. 5) solution is close to eq. (17) and returns 0 in the safe case
    nb = mk.minimal_subpopulation_size(1e-3, af, 1.0, alpha, beta, method="binomial")
    assert np.all(np.abs(nb / n_min - 1)[n_min > 1e3] < 1e-3)
    # ... but not at a f = 0.1 with a = 0.1: eq. (5) with f_a = a/N -> 1 near N = a is not
    # bounded by 1 - exp(-a f) as eq. (6) is, so tiny subpopulations are unsafe there
    assert mk.minimal_subpopulation_size(0.5, 0.1, 1.0, alpha, beta, method="binomial") > 0.1
    # every N >= a safe (large a, tiny f): 0 for the binomial form, <= 0 for eq. (17)
    assert mk.minimal_subpopulation_size(0.5, 1e5, 1e-9, alpha, beta, method="binomial") == 0.0
    assert mk.minimal_subpopulation_size(0.5, 1e5, 1e-9, alpha, beta) <= 0


def test_minimal_subpopulation_size_binomial_accepts_draws():
    """Posterior draws of (alpha, beta) give draws of N_min (brentq per draw)."""
    rng = np.random.default_rng(3)
    beta = 7.4e-3 * np.exp(rng.normal(0, 0.1, size=(2, 25)))
    alpha = mk.poisson_gamma_alpha(beta, 1108)
    nb = mk.minimal_subpopulation_size(1e-3, 300, 0.01, alpha, beta, method="binomial")
    npois = mk.minimal_subpopulation_size(1e-3, 300, 0.01, alpha, beta)
    assert nb.shape == (2, 25)
    np.testing.assert_allclose(nb, npois, rtol=1e-3)


# ------------------------------------------------------ Section 4: multiple investigators


def _eq20_exact(N: int, a: int, m: int) -> list[Fraction]:
    """Eq. (20), inclusion-exclusion, in exact rational arithmetic."""
    total = Fraction(math.comb(N, a))
    return [
        math.comb(N, x)
        * sum(
            (-1) ** (x - j) * math.comb(x, j) * (Fraction(math.comb(j, a)) / total) ** m
            for j in range(x + 1)
        )
        for x in range(N + 1)
    ]


@pytest.mark.parametrize(
    ("N", "a", "m"), [(12, 3, 4), (15, 5, 2), (10, 10, 3), (9, 0, 3), (20, 4, 1)]
)
def test_union_size_pmf_matches_inclusion_exclusion(N, a, m):
    exact = np.array([float(p) for p in _eq20_exact(N, a, m)])
    p = mk.union_size_pmf(N, a, m)
    np.testing.assert_allclose(p, exact, atol=1e-13)
    # its mean is eq. (21)
    assert (np.arange(N + 1) * p).sum() == pytest.approx(mk.expected_union_size(N, a, m), rel=1e-12)


def test_union_size_by_simulation():
    """m random circles of size a (fixed seed): mean against eq. (21), pmf against eq. (20)."""
    rng = np.random.default_rng(1992)
    N, a, m, reps = 200, 20, 5, 4000
    members = np.argsort(rng.random((reps, m, N)), axis=-1)[..., :a]
    known = np.zeros((reps, N), dtype=bool)
    np.put_along_axis(known, members.reshape(reps, m * a), True, axis=-1)
    sizes = known.sum(axis=1)
    ea = mk.expected_union_size(N, a, m)
    assert abs(sizes.mean() - ea) < 4 * sizes.std(ddof=1) / math.sqrt(reps)
    p = mk.union_size_pmf(N, a, m)
    empirical = np.bincount(sizes, minlength=N + 1) / reps
    # total variation distance: E|TV| for ~20 occupied bins at 4000 draws is ~0.03
    assert 0.5 * np.abs(empirical - p).sum() < 0.06


def test_expected_union_size_unequal_by_simulation():
    rng = np.random.default_rng(11)
    N, sizes, reps = 100, np.array([5, 10, 30]), 4000
    known = np.zeros((reps, N), dtype=bool)
    for size in sizes:  # three circles, each a simple random sample
        idx = np.argsort(rng.random((reps, N)), axis=-1)[:, :size]
        np.put_along_axis(known, idx, True, axis=-1)
    union = known.sum(axis=1)
    ea = mk.expected_union_size_unequal(N, sizes)
    assert abs(union.mean() - ea) < 4 * union.std(ddof=1) / math.sqrt(reps)
    # equal sizes: eq. (21)
    assert mk.expected_union_size_unequal(N, np.full(4, 7.0)) == pytest.approx(
        mk.expected_union_size(N, 7, 4), rel=1e-14
    )


def test_expected_union_size_properties():
    """Section 4: E a_1 = a, E a_m -> N, a = N gives N, E a_m ~ m a for small a/N."""
    N = 63_624
    assert mk.expected_union_size(N, 300, 1) == pytest.approx(300, rel=1e-13)
    assert mk.expected_union_size(N, 300, 0) == 0.0
    assert mk.expected_union_size(N, N, np.array([1, 5, 1000])) == pytest.approx(N)
    assert mk.expected_union_size(N, 1000, 10**5) == pytest.approx(N, rel=1e-12)
    assert mk.expected_union_size(N, 3, 10) == pytest.approx(30, rel=1e-3)
    m = np.arange(1, 2000)
    ea = mk.expected_union_size(N, 300, m)
    assert np.all(np.diff(ea) > 0) and np.all(ea <= N)


def test_plug_in_multiple_investigator_risk_bounds_the_expected_risk():
    """Eq. (19) replaces a_m by E a_m; the risk is concave in a_m, so R'_m >= E R_m."""
    N, a, m, f_u, n = 400, 40, 6, 0.05, 30
    p = mk.union_size_pmf(N, a, m)
    x = np.arange(N + 1)
    expected_risk = (p * mk.disclosure_risk(x / N, f_u, n)).sum()
    plug_in = mk.multiple_investigator_risk(f_u, n, N, a, m)
    assert plug_in >= expected_risk
    assert plug_in - expected_risk < 1e-3  # a_m is concentrated: the plug-in is close


def test_multiple_investigator_risk_grows_with_m():
    m = np.arange(1, 1001)
    r = mk.multiple_investigator_risk(1e-3, 63.624, 63_624, np.array([[30], [300], [1000]]), m)
    assert np.all(np.diff(r, axis=-1) >= 0)
    # Figure 1: the larger a, the steeper the rise
    assert np.all(r[2] >= r[1]) and np.all(r[1] >= r[0])


# ---------------------------------------------------------------- Section 5: multiple keys


def test_total_risk_by_simulation():
    """Nested A_i (shrinking) and U_i (growing) as in eq. (24), elements independent (A1).

    An element is disclosed on key i iff U_A < f_ai and U_U < f_ui. The "joint"
    form 1 - (1 - sum p_i)^n is the exact probability; eq. (26) as printed uses
    the unconditional p_i of eq. (25) where eq. (23) needs conditional ones, so
    at these deliberately large p_i it is visibly lower (0.537 vs 0.556).
    """
    f_a = np.array([0.6, 0.4, 0.2])
    f_u = np.array([0.05, 0.2, 0.5])
    n, reps = 5, 100_000
    rng = np.random.default_rng(26)
    u_a = rng.random((reps, n, 1))
    u_u = rng.random((reps, n, 1))
    disclosed = ((u_a < f_a) & (u_u < f_u)).any(axis=(1, 2))
    tr_mc = disclosed.mean()
    se = math.sqrt(tr_mc * (1 - tr_mc) / reps)
    joint = mk.total_risk(f_a, f_u, n, method="joint")
    product = mk.total_risk(f_a, f_u, n, method="product")
    assert abs(tr_mc - joint) < 4 * se
    assert joint - product > 6 * se  # the second-order gap is real ...
    p = mk.key_disclosure_probabilities(f_a, f_u)
    pairs = (np.sum(p) ** 2 - np.sum(p**2)) / 2
    assert joint - product <= n * pairs  # ... and bounded by n sum_{i<j} p_i p_j


def test_total_risk_forms_agree_at_practical_levels():
    # Table 3 magnitudes (TR ~ 1e-3 .. 1e-2): N = 63 000, n = 729, a = 10, 50, 100
    N, n = 63_000, 729
    f_a = np.array([100, 50, 10]) / N
    f_u = np.array([0.002, 0.02, 0.2])
    tr = {m: mk.total_risk(f_a, f_u, n, method=m) for m in ("poisson", "product", "joint")}
    assert tr["poisson"] <= tr["product"] <= tr["joint"]
    assert abs(tr["joint"] / tr["poisson"] - 1) < 1e-3


def test_total_risk_constant_f_a_is_single_key_risk():
    """Section 5.1: constant f_a on the risk region -> the risk of the most detailed key."""
    f_u = np.array([0.0, 1e-4, 1e-3, 5e-3])
    f_a, n = 0.002, 800
    assert mk.total_risk(f_a, f_u, n, method="poisson") == pytest.approx(
        mk.disclosure_risk(f_a, f_u[-1], n, method="poisson"), rel=1e-13
    )
    assert mk.total_risk(f_a, f_u, n, method="joint") == pytest.approx(
        mk.disclosure_risk(f_a, f_u[-1], n), rel=1e-13
    )


def test_total_risk_single_key_and_minimal_key():
    for method in ("poisson", "product", "joint"):
        single = mk.total_risk([0.01], [0.003], 500, method=method)
        single_key_method = "poisson" if method == "poisson" else "binomial"
        expected = mk.disclosure_risk(0.01, 0.003, 500, method=single_key_method)
        assert single == pytest.approx(expected, rel=1e-13)
    # the minimal key (one category, f_u = 0) contributes nothing (p_1 = 0 in eq. 23)
    with_min = mk.total_risk([1.0, 0.01], [0.0, 0.003], 500)
    assert with_min == pytest.approx(mk.total_risk([0.01], [0.003], 500), rel=1e-13)


def test_total_risk_broadcasts_over_draws_and_rejects_disorder():
    rng = np.random.default_rng(5)
    base = np.array([1e-4, 1e-3, 1e-2])
    f_u = np.sort(base * np.exp(rng.normal(0, 0.2, size=(4, 50, 3))), axis=-1)
    f_a = np.array([0.01, 0.002, 0.0005])
    tr = mk.total_risk(f_a, f_u, 729)
    assert tr.shape == (4, 50)
    assert tr[1, 7] == pytest.approx(mk.total_risk(f_a, f_u[1, 7], 729), rel=1e-14)
    n = np.array([100, 500, 1000])
    assert np.all(np.diff(mk.total_risk(f_a, base, n)) > 0)
    with pytest.raises(InputError, match="least to most detailed"):
        mk.total_risk(f_a[::-1], base, 729)
    with pytest.raises(InputError, match="least to most detailed"):
        mk.total_risk(f_a, base[::-1], 729)


# ------------------------------------------------------ broadcasting, labels, monotonicity


def test_risk_is_monotone_in_each_argument():
    g = np.geomspace(1e-5, 0.5, 40)
    assert np.all(np.diff(mk.disclosure_risk(g, 1e-3, 500)) > 0)
    assert np.all(np.diff(mk.disclosure_risk(0.01, g, 500)) > 0)
    assert np.all(np.diff(mk.disclosure_risk(0.01, 1e-3, np.arange(0, 5000, 50))) > 0)
    assert np.all(np.diff(mk.maximal_sample_fraction(1e-3, 0.01, g, 63_624)) < 0)
    assert np.all(np.diff(mk.maximal_sample_fraction(g[g < 0.5], 0.01, 1e-3, 63_624)) > 0)


def test_posterior_draws_broadcast_like_point_values():
    rng = np.random.default_rng(0)
    f_u = rng.beta(2, 2000, size=(4, 100))
    r = mk.disclosure_risk(300 / 63_624, f_u, 636)
    assert r.shape == (4, 100)
    point = mk.disclosure_risk(300 / 63_624, float(f_u[2, 17]), 636)
    assert r[2, 17] == pytest.approx(point, rel=1e-15)
    assert np.ndim(mk.disclosure_risk(0.1, 0.01, 10)) == 0


def test_dataarray_arguments_keep_their_dims():
    f_u = xr.DataArray(np.array([[1e-3, 2e-3], [3e-3, 4e-3]]), dims=("chain", "draw"))
    n = xr.DataArray(np.array([100.0, 200.0, 300.0]), dims="stratum")
    r = mk.disclosure_risk(0.01, f_u, n=n, method="poisson")
    assert isinstance(r, xr.DataArray)
    assert set(r.dims) == {"chain", "draw", "stratum"}
    expected = mk.disclosure_risk(0.01, f_u.values[:, :, None], n.values, method="poisson")
    np.testing.assert_allclose(r.transpose("chain", "draw", "stratum").values, expected, rtol=1e-15)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: mk.disclosure_risk(0.1, 1.5, 10), "f_u"),
        (lambda: mk.disclosure_risk(-0.1, 0.5, 10), "f_a"),
        (lambda: mk.disclosure_risk(0.1, np.array([0.1, np.nan]), 10), "f_u"),
        (lambda: mk.disclosure_risk(0.1, 0.1, 10, method="exact"), "method"),
        (lambda: mk.maximal_sample_fraction(1.0, 0.1, 0.1, 100), "gamma"),
        (lambda: mk.minimal_subpopulation_size(0.0, 10, 0.1, 0.1, 0.01), "gamma"),
        (lambda: mk.uniques_fraction(100, 0.0, 0.01), "alpha"),
        (lambda: mk.expected_union_size(100, 200, 2), "a must not exceed N"),
        (lambda: mk.union_size_pmf(10, 2.5, 2), "a must be a scalar integer"),
        (lambda: mk.maximal_subpopulation_risk(10, 0.1, [0.1, 0.2], method="binomial"), "needs"),
        (lambda: mk.disclosure_risk_hypergeometric(0.1, 0.1, 200, 100), "n must not exceed N"),
    ],
)
def test_bad_input_raises_input_error_naming_the_problem(call, name):
    with pytest.raises(InputError, match=name) as info:
        call()
    assert "\n" not in str(info.value)
