"""Benedetti-Franconi / Polettini individual risk (seed 004) and E(1/F) for NegBin F - f.

References used here are independent of the implementation: brute-force summation
of the negative-binomial series (seed 004 eq. 1), the Gauss series of the
hypergeometric function (seed 004 eq. 7-8) summed term by term, Monte Carlo, the
seed's printed closed forms and the IHSN guide's Table 1 (seed 001).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdcbayes.exceptions import InputError
from sdcbayes.risk.individual import (
    RISK_METHODS,
    benedetti_franconi_risk,
    negbin_inverse_moment,
    plugin_inclusion_probability,
    polettini_closed_form,
)

try:  # optional: a second, arbitrary-precision reference where installed
    import mpmath
except ImportError:  # pragma: no cover - the Gauss-series reference still runs
    mpmath = None


def brute_force_inverse_moment(f, r, rho, tail=1e-16):
    """Σ_x P(X = x)/(f + x), X ~ NegBin(r, rho), truncated where the tail < 1e-16."""
    x_max = int(stats.nbinom.isf(tail, r, rho)) + 1
    x = np.arange(x_max + 1)
    return float(np.sum(stats.nbinom.pmf(x, r, rho) / (f + x)))


def gauss_series_inverse_moment(f, r, rho, n_terms=60_000):
    """rho/f · Σ_n (f+1-r)_n/(f+1)_n (1-rho)^n (Euler-transformed seed 004 eq. 6)."""
    q = 1.0 - rho
    n = np.arange(n_terms)
    ratios = (f + 1.0 - r + n) / (f + 1.0 + n) * q
    terms = np.concatenate([[1.0], np.cumprod(ratios)])
    assert abs(terms[-1]) < 1e-20  # the truncation is negligible
    return rho / f * np.sum(terms)


# --------------------------------------------------------------------------- #
# seed 004 closed forms and approximations
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("f", [1, 2, 3])
def test_polettini_closed_forms_match_general_function(f):
    # Away from p -> 1, where the closed forms cancel (seed 004 section 2).
    p = np.array([1e-8, 1e-4, 0.003, 0.05, 0.2, 0.5, 0.8, 0.95])
    np.testing.assert_allclose(polettini_closed_form(f, p), benedetti_franconi_risk(f, p), rtol=1e-12)


def test_seed_f3_printed_simplification_has_a_typo():
    # Seed 004 prints r = p/(2 q^2)[q(3q-2) - 2 p^2 log p] for f = 3; its own middle
    # expression (and mu-Argus) have 2 q^3. Brute force decides: q^3 is right.
    p, q = 0.1, 0.9
    truth = brute_force_inverse_moment(3, 3, p)
    printed = p / (2 * q**2) * (q * (3 * q - 2) - 2 * p**2 * np.log(p))
    assert abs(polettini_closed_form(3, p) - truth) < 1e-14
    assert abs(printed - truth) > 1e-3


# p within 1e-16 .. 0.5 of 1 (1 - 2^-53 is the float just below 1), plus p = 1/2
# where _closed_forms switches from the printed form to the series
NEAR_ONE = np.unique(np.concatenate([1 - np.logspace(-16, np.log10(0.5), 60),
                                     [1 - 1e-12, 1 - 2.0**-52, 1 - 2.0**-53, 0.5,
                                      np.nextafter(0.5, 0)]]))


def _series_risk(f, p):
    # float Gauss series p/f sum n! q^n/(f+1)_n (seed 004 eq. 8): positive terms, so
    # no cancellation; exact to rounding, and q -> 0 needs no special case
    return gauss_series_inverse_moment(f, f, p, n_terms=200)


@pytest.mark.parametrize("f", [1, 2, 3])
def test_closed_forms_stable_near_one(f):
    # The printed forms cancel as p -> 1 (seed 004 section 2): f = 3 at q = 1e-8 gave
    # 1.65, at q = 2^-52 -2.3e15. Now every value is a probability in (0, 1/f] and
    # agrees with the series to 1e-14 relative (observed <= 7e-16 against mpmath).
    closed = polettini_closed_form(f, NEAR_ONE)
    ref = np.array([_series_risk(f, p) for p in NEAR_ONE])
    assert np.all(closed > 0) and np.all(closed <= 1.0 / f)
    np.testing.assert_allclose(closed, ref, rtol=1e-14)
    np.testing.assert_allclose(closed, benedetti_franconi_risk(f, NEAR_ONE), rtol=1e-14)


@pytest.mark.parametrize("f", [1, 2])
def test_approx_method_stable_near_one(f):
    # "approx" (CLI assess --method approx) used sdcMicro's expressions, which for
    # f = 2 gave 1.5 at p = 1 - 1e-10 and -1.1e8 at p = 1 - 1e-12 (truth 0.5).
    approx = benedetti_franconi_risk(f, NEAR_ONE, method="approx")
    assert np.all(approx > 0) and np.all(approx <= 1.0 / f)
    np.testing.assert_allclose(approx, benedetti_franconi_risk(f, NEAR_ONE), rtol=1e-14)
    ref = np.array([_series_risk(f, p) for p in NEAR_ONE])
    np.testing.assert_allclose(approx, ref, rtol=1e-14)
    if mpmath is not None:
        for p in (1 - 1e-6, 1 - 1e-10, 1 - 1e-12):
            truth = float(mpmath.mpf(p) / f * mpmath.hyp2f1(1, 1, f + 1, 1 - mpmath.mpf(p)))
            assert benedetti_franconi_risk(f, p, method="approx") == pytest.approx(truth, rel=1e-14)


def test_approx_assessment_with_weights_just_above_one():
    # End to end: weights 1 + 1e-9 gave pair risks of 1.5 and an InputError from the
    # benchmark rule; every cell is (almost) fully observed, so risk = 1/f_k.
    from sdcbayes import Microdata
    from sdcbayes.risk.assess import assess_closed_form

    df = pd.DataFrame({"a": [1, 1, 2, 3, 3], "b": [0, 0, 1, 1, 1], "w": 1.0 + 1e-9})
    md = Microdata(df, keys=["a", "b"], weight="w")
    approx = assess_closed_form(md, method="approx").records["risk"].to_numpy()
    exact = assess_closed_form(md, method="exact").records["risk"].to_numpy()
    np.testing.assert_allclose(approx, exact, rtol=1e-14)
    np.testing.assert_allclose(approx, [0.5, 0.5, 1.0, 0.5, 0.5], rtol=1e-8)


@pytest.mark.parametrize("f", [5, 20, 100, 1000])
def test_polettini_approximations_understate_and_converge(f):
    p = np.array([0.001, 0.01, 0.1, 0.5, 0.9])
    exact = benedetti_franconi_risk(f, p)
    r9 = benedetti_franconi_risk(f, p, method="polettini9")
    r10 = benedetti_franconi_risk(f, p, method="polettini10")
    # "The approximation always leads to underestimating the risk" (seed 004 section 3)
    assert np.all(r10 <= r9) and np.all(r9 <= exact)
    # remainders O(f^-3) and O(f^-2) relative to p/f (eq. 8): next series term bounds them
    q = 1 - p
    assert np.all(exact - r9 <= p / f * 6 * q**3 / ((f + 1) * (f + 2) * (f + 3)) / (1 - q) * 1.01)
    assert np.all(exact - r10 <= p / f * 2 * q**2 / ((f + 1) * (f + 2)) / (1 - q) * 1.01)


def test_sdcmicro_approx_overstates_for_f_above_two():
    f = np.array([3, 4, 10, 50])[:, None]
    p = np.array([0.01, 0.1, 0.5, 0.9])[None, :]
    approx = benedetti_franconi_risk(f, p, method="approx")
    exact = benedetti_franconi_risk(f, p)
    assert np.all(approx > exact)
    np.testing.assert_allclose(approx, p / (f - 1 + p), rtol=1e-15)


def test_measure_risk_method_applies_sdcmicro_offset():
    # sdcMicro's C++ measure_risk evaluates the same formulas at p - 0.0001.
    assert benedetti_franconi_risk(5, 0.2, method="measure_risk") == pytest.approx(
        0.1999 / (5 - 1 + 0.1999), rel=1e-14
    )
    p = 0.3 - 1e-4
    assert benedetti_franconi_risk(1, 0.3, method="measure_risk") == pytest.approx(
        p / (1 - p) * np.log(1 / p), rel=1e-14
    )


# --------------------------------------------------------------------------- #
# E(1/F) against brute force, series, Monte Carlo
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("f", [1, 2, 3, 7, 30, 45, 120])
@pytest.mark.parametrize("rho", [0.02, 0.1, 0.4, 0.6, 0.97])
@pytest.mark.parametrize("shift", [0.0, 0.05, 0.8, 4.0])
def test_inverse_moment_matches_negbin_summation(f, rho, shift):
    r = f + shift
    truth = brute_force_inverse_moment(f, r, rho)
    assert negbin_inverse_moment(f, r, rho) == pytest.approx(truth, rel=1e-12)


@pytest.mark.parametrize("f", [1.25, 1.5, 2.5, 7.5, 45.5])
@pytest.mark.parametrize("rho", [0.001, 0.02, 0.3, 0.6, 0.97])
def test_fractional_f_matches_negbin_summation(f, rho):
    # the wildcard counts of missing="wildcard", 0 < alpha < 1: a negative binomial of
    # real size f; every route but the (whole-f) recurrence holds, to the summation's
    # rounding (Gauss-Laguerre alone is off by 1e-5 at f = 1.5, rho = 1e-3)
    truth = brute_force_inverse_moment(f, f, rho)
    assert benedetti_franconi_risk(f, rho) == pytest.approx(truth, rel=1e-12)
    # and between whole neighbours, as a moment decreasing in f
    assert (benedetti_franconi_risk(np.ceil(f), rho) < benedetti_franconi_risk(f, rho)
            < benedetti_franconi_risk(np.floor(f), rho))


@pytest.mark.parametrize("f", [2, 5, 40])
@pytest.mark.parametrize("r", [0.3, 1.0, 1.7])
def test_inverse_moment_small_r_matches_summation(f, r):
    # r < f is not used by the risk functions but the function accepts it.
    for rho in (0.01, 0.3, 0.8):
        truth = brute_force_inverse_moment(f, r, rho)
        assert negbin_inverse_moment(f, r, rho) == pytest.approx(truth, rel=1e-11)


def test_inverse_moment_monte_carlo():
    rng = np.random.default_rng(20240611)
    f, r, rho = 3, 3.4, 0.05
    x = rng.negative_binomial(r, rho, size=400_000)
    inv = 1.0 / (f + x)
    se = inv.std(ddof=1) / np.sqrt(inv.size)
    assert abs(inv.mean() - negbin_inverse_moment(f, r, rho)) < 4 * se


@pytest.mark.parametrize("f", [100, 300, 1000, 10_000])
@pytest.mark.parametrize("rho", [1e-3, 5e-3, 0.02, 0.05])
@pytest.mark.parametrize("shift", [0.0, 0.3])
def test_hyp2f1_failure_region_against_series(f, rho, shift):
    # scipy.special.hyp2f1 returns inf here for shift = 0 (ARCHITECTURE.md, Numerics).
    r = f + shift
    value = negbin_inverse_moment(f, r, rho)
    assert value == pytest.approx(gauss_series_inverse_moment(f, r, rho), rel=1e-12)
    if mpmath is not None:
        mpmath.mp.dps = 30
        ref = mpmath.mpf(rho) / f * mpmath.hyp2f1(1, f + 1 - r, f + 1, 1 - mpmath.mpf(rho))
        assert value == pytest.approx(float(ref), rel=1e-12)


@pytest.mark.parametrize("rho", [1e-9, 1e-6, 1e-3, 0.3, 0.9])
def test_huge_f_against_series_and_asymptotics(rho):
    f = 1_000_000
    value = benedetti_franconi_risk(f, rho)
    assert value == pytest.approx(gauss_series_inverse_moment(f, f, rho), rel=1e-12)
    # seed 004 eq. (9): error O(f^-3) relative, i.e. ~1e-18 here
    assert value == pytest.approx(benedetti_franconi_risk(f, rho, method="polettini9"), rel=1e-13)


def test_edge_values():
    f = np.array([1, 2, 3, 17, 500, 10**6])
    np.testing.assert_array_equal(benedetti_franconi_risk(f, 1.0), 1.0 / f)
    np.testing.assert_array_equal(negbin_inverse_moment(f, f + 0.7, 1.0), 1.0 / f)
    # p -> 0: r ~ p/f · log-type factor -> 0
    tiny = benedetti_franconi_risk(f, 1e-300)
    assert np.all(tiny > 0) and np.all(tiny < 1e-295)
    # p just below 1: continuous towards 1/f
    np.testing.assert_allclose(benedetti_franconi_risk(f, 1 - 1e-12), 1.0 / f, rtol=1e-10)
    for method in RISK_METHODS:
        if method != "measure_risk":
            np.testing.assert_allclose(benedetti_franconi_risk(f, 1.0, method=method), 1.0 / f)


def test_broadcasting_and_distinct_pair_evaluation():
    rng = np.random.default_rng(3)
    f = rng.integers(1, 60, size=(50_000,))
    p = np.round(rng.uniform(0.001, 1.0, size=f.size), 2).clip(0.01, 1.0)
    out = benedetti_franconi_risk(f, p)
    assert out.shape == f.shape
    pairs, idx = np.unique(np.stack([f, p], 1), axis=0, return_index=True)
    # the distinct-pair evaluation returns what a per-pair call returns
    sample = slice(0, pairs.shape[0], 97)
    one_by_one = [benedetti_franconi_risk(a, b) for a, b in pairs[sample]]
    np.testing.assert_array_equal(out[idx[sample]], one_by_one)
    grid = negbin_inverse_moment(np.array([[1], [2]]), np.array([[1.5], [2.5]]), np.array([0.2, 0.7]))
    assert grid.shape == (2, 2)
    assert grid[1, 0] == pytest.approx(brute_force_inverse_moment(2, 2.5, 0.2), rel=1e-12)
    assert isinstance(benedetti_franconi_risk(2, 0.5), float)


# --------------------------------------------------------------------------- #
# IHSN guide Table 1 (seed 001): sdcMicro's francdat
# --------------------------------------------------------------------------- #

# /work/shared/data/sdcmicro/francdat.csv, copied here: Num1, Key1, Num2, Key2, Key3, Key4, Num3, w
FRANCDAT = pd.DataFrame(
    [
        [0.30, 1, 0.40, 2, 5, 1, 4, 18.0],
        [0.12, 1, 0.22, 2, 1, 1, 22, 45.5],
        [0.18, 1, 0.80, 2, 1, 1, 8, 39.0],
        [1.90, 3, 9.00, 3, 1, 5, 91, 17.0],
        [1.00, 4, 1.30, 3, 1, 4, 13, 541.0],
        [1.00, 4, 1.40, 3, 1, 1, 14, 8.0],
        [0.10, 6, 0.01, 2, 1, 5, 1, 5.0],
        [0.15, 1, 0.50, 2, 5, 1, 5, 92.0],
    ],
    columns=["Num1", "Key1", "Num2", "Key2", "Key3", "Key4", "Num3", "w"],
)
# Printed per-record risks (file order) and their sum, "0.966" (seed 001 section 3.1, 3.4).
IHSN_TABLE1_RISK = [0.0171, 0.0220, 0.0220, 0.1771, 0.0117, 0.2971, 0.4024, 0.0171]


def _francdat_fk_Fk():
    keys = ["Key1", "Key2", "Key3", "Key4"]
    g = FRANCDAT.groupby(keys)["w"]
    return g.transform("size").to_numpy(), g.transform("sum").to_numpy()


@pytest.mark.parametrize("method", ["exact", "approx"])
def test_ihsn_table1_reproduced(method):
    fk, Fk = _francdat_fk_Fk()
    np.testing.assert_array_equal(fk, [2, 2, 2, 1, 1, 1, 1, 2])
    risk = benedetti_franconi_risk(fk, plugin_inclusion_probability(fk, Fk), method=method)
    np.testing.assert_allclose(risk, IHSN_TABLE1_RISK, atol=5e-5)  # printed to 4 decimals
    # the printed total 0.966 is truncated (0.96653); the sum of printed values is 0.9665
    assert 0.966 <= risk.sum() < 0.967


def test_ihsn_table1_not_from_measure_risk_offset():
    fk, Fk = _francdat_fk_Fk()
    risk = benedetti_franconi_risk(fk, fk / Fk, method="measure_risk")
    assert np.max(np.abs(risk - IHSN_TABLE1_RISK)) > 5e-4  # record 5: 0.0111 vs 0.0117


@pytest.mark.parametrize("method", ["polettini9", "polettini10"])
def test_ihsn_table1_not_from_the_large_f_approximations(method):
    # the docstring's Notes (audit AA5 F3): only exact and approx reproduce Table 1; the
    # large-f approximations (9) and (10) of seed 004 understate the f = 1 cells
    fk, Fk = _francdat_fk_Fk()
    risk = benedetti_franconi_risk(fk, plugin_inclusion_probability(fk, Fk), method=method)
    assert risk[3] < 0.6 * IHSN_TABLE1_RISK[3]  # f = 1, Fhat = 17: 0.104 / 0.087 vs 0.1771
    assert risk.sum() < 0.75  # 0.704 / 0.604 against the printed 0.966


# --------------------------------------------------------------------------- #
# validation
# --------------------------------------------------------------------------- #


def test_plugin_inclusion_probability():
    assert plugin_inclusion_probability(2, 84.5) == pytest.approx(2 / 84.5)
    with pytest.raises(InputError, match="Fk_hat < fk"):
        plugin_inclusion_probability([1, 3], [5.0, 2.0])
    np.testing.assert_array_equal(plugin_inclusion_probability([1, 3], [5.0, 2.0], clip=True), [0.2, 1.0])
    with pytest.raises(InputError, match="> 0"):
        plugin_inclusion_probability(1, 0.0)


@pytest.mark.parametrize(
    ("fk", "pk", "method", "match"),
    [
        (1, 1.5, "exact", "weight sum"),
        (1, 0.0, "exact", r"\(0, 1\]"),
        (0, 0.5, "exact", ">= 1"),
        (0.5, 0.5, "exact", ">= 1"),
        (1.5, 0.5, "approx", r"fractional.*method='exact'"),
        (2.5, 0.5, "polettini9", r"fractional.*method='exact'"),
        (1, np.nan, "exact", "NaN"),
        (1, 0.5, "bogus", "unknown method"),
    ],
)
def test_bad_input_raises(fk, pk, method, match):
    with pytest.raises(InputError, match=match):
        benedetti_franconi_risk(fk, pk, method=method)


def test_negbin_inverse_moment_validation():
    with pytest.raises(InputError, match="r"):
        negbin_inverse_moment(2, 0.0, 0.5)
    with pytest.raises(InputError, match="rho"):
        negbin_inverse_moment(2, 2.0, 1.2)
    with pytest.raises(InputError, match="f = 1, 2, 3"):
        polettini_closed_form(4, 0.5)


# --------------------------------------------------------------------------- #
# pandas inputs, shapes, None
# --------------------------------------------------------------------------- #


def test_series_with_different_indexes_refused():
    # Positional pairing of label-indexed Series paired f = 1 with the p of label 20.
    fk = pd.Series([1, 2], index=[10, 20])
    pk = pd.Series([0.1, 0.2], index=[20, 10])
    with pytest.raises(InputError, match="different indexes.*align"):
        benedetti_franconi_risk(fk, pk)
    with pytest.raises(InputError, match="different indexes"):
        negbin_inverse_moment(fk, fk, pk)
    with pytest.raises(InputError, match="different indexes"):
        plugin_inclusion_probability(fk, pd.Series([5.0, 5.0], index=[20, 10]))
    with pytest.raises(InputError, match="different indexes"):
        polettini_closed_form(fk, pk)
    # aligned as the message suggests, the labels are paired and kept
    a, b = fk.align(pk, join="inner")
    out = benedetti_franconi_risk(a, b)
    assert isinstance(out, pd.Series) and list(out.index) == [10, 20]
    assert out[10] == benedetti_franconi_risk(1, 0.2)
    assert out[20] == benedetti_franconi_risk(2, 0.1)


@pytest.mark.parametrize("method", RISK_METHODS)
def test_series_index_kept(method):
    fk = pd.Series([1, 2, 3], index=["x", "y", "z"])
    out = benedetti_franconi_risk(fk, 0.4, method=method)
    assert isinstance(out, pd.Series) and list(out.index) == ["x", "y", "z"]
    plain = benedetti_franconi_risk([1, 2, 3], 0.4, method=method)
    np.testing.assert_array_equal(out.to_numpy(), plain)
    p = plugin_inclusion_probability(fk, pd.Series([10.0, 10.0, 10.0], index=fk.index))
    assert list(p.index) == ["x", "y", "z"]
    assert list(polettini_closed_form(fk, 0.4).index) == ["x", "y", "z"]


def test_shape_mismatch_and_none_are_input_errors():
    with pytest.raises(InputError, match=r"shapes do not match.*fk \(3,\), pk \(2,\)"):
        benedetti_franconi_risk([1, 2, 3], [0.1, 0.2])
    with pytest.raises(InputError, match="shapes do not match"):
        negbin_inverse_moment([1, 2, 3], 1.0, [0.1, 0.2])
    with pytest.raises(InputError, match="shapes do not match"):
        plugin_inclusion_probability([1, 2, 3], [5.0, 6.0])
    with pytest.raises(InputError, match="shapes do not match"):
        polettini_closed_form([1, 2, 3], [0.1, 0.2])
    with pytest.raises(InputError, match="fk is None"):
        benedetti_franconi_risk(None, 0.5)
    with pytest.raises(InputError, match="pk is None"):
        benedetti_franconi_risk(1, None)
