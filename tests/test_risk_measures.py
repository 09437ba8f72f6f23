"""Classic file-level SDC measures (seed 001, IHSN guide, Sections 3.1-3.4).

The francdat rows are sdcMicro's toy file behind Table 1 of seed 001 (copied as
literals from ../shared/data/sdcmicro/francdat.csv, keys and weight only).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.risk.measures import (
    benchmark_rule,
    expected_reidentification_rate,
    expected_reidentifications,
    file_summary,
    household_expected_reidentifications,
    household_risk,
    k_anonymity_violations,
    l_diversity,
    mad,
    n_k_anonymity_violations,
    n_sample_uniques,
    weighted_k_anonymity_violations,
)

# francdat: Key1..Key4 and w.
FRANCDAT = pd.DataFrame(
    {
        "Key1": [1, 1, 1, 3, 4, 4, 6, 1],
        "Key2": [2, 2, 2, 3, 3, 3, 2, 2],
        "Key3": [5, 1, 1, 1, 1, 1, 1, 5],
        "Key4": [1, 1, 1, 5, 4, 1, 5, 1],
        "w": [18, 45.5, 39, 17, 541, 8, 5, 92],
    }
)
# Seed 001, Table 1, risk column, mapped to francdat's row order by the weight
# sums (records sharing a pattern share a risk): Fk = 110, 84.5, 17, 541, 8, 5.
SEED001_RISK = np.array([0.017, 0.022, 0.022, 0.177, 0.012, 0.297, 0.402, 0.017])


@pytest.fixture(scope="module")
def francdat_cells():
    keys = ["Key1", "Key2", "Key3", "Key4"]
    g = FRANCDAT.groupby(keys, sort=False)
    fk = g["w"].transform("size").to_numpy()
    Fk_hat = g["w"].transform("sum").to_numpy()
    return fk, Fk_hat


def test_francdat_frequencies_by_hand(francdat_cells):
    fk, Fk_hat = francdat_cells
    np.testing.assert_array_equal(fk, [2, 2, 2, 1, 1, 1, 1, 2])
    np.testing.assert_allclose(Fk_hat, [110, 84.5, 84.5, 17, 541, 8, 5, 110])
    # Seed 001, Section 3.1: records 5-8 of Table 1 are the four sample uniques.
    assert n_sample_uniques(fk) == 4


def test_francdat_expected_reidentifications(francdat_cells):
    # Seed 001, Section 3.4: "the expected number of re-identifications is 0.966".
    assert expected_reidentifications(SEED001_RISK) == pytest.approx(0.966, abs=1e-12)
    assert expected_reidentification_rate(SEED001_RISK) == pytest.approx(0.966 / 8)
    # The printed risks are the Benedetti-Franconi closed forms (ARCHITECTURE.md) at
    # p = f / Fhat, rounded to 3 decimals. The printed 0.966 is the sum of the
    # *rounded* column: unrounded, ER = 0.96653 (sdcMicro's p - 0.0001 shift
    # gives 0.96514), within the 8 x 0.0005 rounding bound.
    fk, Fk_hat = francdat_cells
    p = fk / Fk_hat
    q = p / (1 - p)
    r = np.where(fk == 1, q * np.log(1 / p), q - q**2 * np.log(1 / p))
    np.testing.assert_allclose(r, SEED001_RISK, atol=5e-4)
    assert expected_reidentifications(r) == pytest.approx(0.966, abs=8 * 5e-4)


def test_francdat_k_anonymity(francdat_cells):
    fk, Fk_hat = francdat_cells
    # Seed 001, Section 3.2: "all records in the previous example violate 3-anonymity".
    assert k_anonymity_violations(fk, 3).all()
    assert n_k_anonymity_violations(fk, 3) == 8
    assert n_k_anonymity_violations(fk, 2) == 4
    assert n_k_anonymity_violations(fk, 1) == 0
    # Weighted version on the estimated population frequencies: F = 8 and 5 below 10.
    below = weighted_k_anonymity_violations(Fk_hat, 10)
    np.testing.assert_array_equal(np.flatnonzero(below), [5, 6])


@pytest.mark.parametrize("k", [0, -1, 2.5, "3", True])
def test_k_must_be_a_positive_integer(k):
    with pytest.raises(InputError, match="'k' parameter"):
        k_anonymity_violations([1, 2], k)


def test_benchmark_rule_on_francdat_by_hand():
    # median = 0.022, |r - median| median = 0.0075, MAD = 1.4826 * 0.0075 = 0.0111,
    # cut = 0.022 + 2 * 0.0111 = 0.0442: records with 0.177, 0.297, 0.402 pass both.
    assert mad(SEED001_RISK) == pytest.approx(1.4826 * 0.0075)
    np.testing.assert_array_equal(np.flatnonzero(benchmark_rule(SEED001_RISK)), [3, 5, 6])


def test_benchmark_rule_ignores_missing_risks():
    # a record without a risk (dropped for a missing key) must neither be flagged nor
    # move the cut: before, one NaN made the median NaN and switched the rule off
    with_nan = np.r_[SEED001_RISK, np.nan]
    flags = benchmark_rule(with_nan)
    np.testing.assert_array_equal(np.flatnonzero(flags), [3, 5, 6])
    assert mad(with_nan) == mad(SEED001_RISK)
    assert not benchmark_rule(np.full(3, np.nan)).any()


def test_benchmark_rule_against_direct_computation():
    rng = np.random.default_rng(4)
    r = np.concatenate([rng.beta(1, 40, 5000), rng.uniform(0.05, 0.6, 60)])
    med = np.median(r)
    scaled_mad = 1.4826 * np.median(np.abs(r - med))
    for n_mad in (2.0, 3.0):
        direct = (r > 0.1) & (r > med + n_mad * scaled_mad)
        np.testing.assert_array_equal(benchmark_rule(r, n_mad=n_mad), direct)
    # The 0.1 floor binds when the main part is tiny: only records above 0.1.
    tiny = np.r_[np.zeros(99), 0.05]
    assert not benchmark_rule(tiny).any()
    # Both inequalities are strict (sdcMicro uses '>').
    assert not benchmark_rule(np.r_[np.zeros(99), 0.1]).any()


def test_household_risk_seed_example():
    # Seed 001, Section 3.3: 1 - (1 - 0.1)(1 - 0.05)(1 - 0.01) = 0.15355.
    hh = household_risk([0.1, 0.05, 0.01], ["a", "a", "a"])
    np.testing.assert_allclose(hh, 0.15355, rtol=1e-12)


def test_household_risk_against_brute_force():
    rng = np.random.default_rng(12)
    n = 3000
    h = rng.integers(0, 900, size=n) * 7 + 11  # sparse integer ids
    r = rng.beta(0.5, 8, size=n)
    r[rng.choice(n, 5, replace=False)] = 1.0  # certain re-identifications
    r[rng.choice(n, 5, replace=False)] = 0.0
    brute = np.empty(n)
    for hid in np.unique(h):  # the per-household product, written the obvious way
        members = h == hid
        brute[members] = 1 - np.prod(1 - r[members])
    got = household_risk(r, h)
    np.testing.assert_allclose(got, brute, rtol=1e-12, atol=1e-15)
    assert np.all(got[r == 1.0] == 1.0)
    assert household_expected_reidentifications(r, h) == pytest.approx(brute.sum(), rel=1e-12)
    # String ids give the same answer as integer ids.
    np.testing.assert_allclose(household_risk(r, h.astype(str)), got, rtol=0, atol=0)
    # Singleton households: household risk is the record risk.
    np.testing.assert_allclose(household_risk(r, np.arange(n)), r, rtol=1e-12)


def test_household_risk_accurate_for_tiny_risks():
    r = np.full(4, 1e-18)
    np.testing.assert_allclose(household_risk(r, [0, 0, 0, 0]), 4e-18, rtol=1e-12)


def test_household_inputs_validated():
    with pytest.raises(InputError, match="one per record"):
        household_risk([0.1, 0.2], [1])
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        household_risk([0.1, 1.2], [1, 1])
    with pytest.raises(InputError, match="missing"):
        household_risk([0.1, 0.2], np.array([1.0, np.nan]))


def test_l_diversity_seed_table2():
    # Seed 001, Table 2 / Section 3.2: three men in their 30s with two distinct
    # medical conditions (2-diverse) and three women in their 20s who all have
    # cancer (1-diverse: the intruder learns the condition with certainty).
    cell = np.array([0, 0, 0, 1, 1, 1])
    illness = np.array(["Cancer", "Heart Disease", "Cancer", "Cancer", "Cancer", "Cancer"])
    out = l_diversity(cell, {"illness": illness})
    np.testing.assert_array_equal(out["illness_Distinct_Ldiversity"], [2, 1])
    # entropy l = exp(-(2/3 ln 2/3 + 1/3 ln 1/3)) = 1.8899 for the men, 1 for the women.
    e = np.exp(-(2 / 3 * np.log(2 / 3) + 1 / 3 * np.log(1 / 3)))
    np.testing.assert_allclose(out["illness_Entropy_Ldiversity"], [e, 1.0], rtol=1e-12)
    # recursive (2, l): r1 = 2 is not < 2 * r2 = 2, so only l = 1.
    np.testing.assert_array_equal(out["illness_Recursive_Ldiversity"], [1, 1])
    # Per record, in input order.
    per_record = out["illness_Distinct_Ldiversity"].to_numpy()[cell]
    np.testing.assert_array_equal(per_record, [2, 2, 2, 1, 1, 1])


def _ldiv_brute(cell, values, c):
    """Per-cell definitions written with explicit loops (reference only)."""
    res = {}
    for k in np.unique(cell):
        v = values[cell == k]
        present = [x for x in v if x is not None]
        cats = pd.Series(present, dtype=object).value_counts().to_numpy()
        n_missing = len(v) - len(present)
        distinct = len(cats) + (1 if n_missing and len(cats) else 0)
        props = [x / len(v) for x in cats]
        if n_missing and len(cats):
            props.append(n_missing / len(v))
        entropy = np.exp(-sum(p * np.log(p) for p in props))
        rec = 0
        if len(cats):
            rec = 1
            for ell in range(2, len(cats) + 1):
                if cats[0] < c * cats[ell - 1 :].sum():
                    rec = ell
        res[k] = (distinct, entropy, rec)
    return res


@pytest.mark.parametrize("c", [1.0, 2.0, 3.5])
def test_l_diversity_against_brute_force(c):
    rng = np.random.default_rng(21)
    n = 2000
    cell = rng.integers(0, 150, size=n)
    values = rng.choice(
        np.array(["a", "b", "c", "d", "e", None], dtype=object),
        size=n,
        p=[0.4, 0.25, 0.15, 0.1, 0.05, 0.05],
    )
    out = l_diversity(cell, {"s": values}, c=c)
    brute = _ldiv_brute(cell, values, c)
    for k, (d, e, rec) in brute.items():
        assert out.loc[k, "s_Distinct_Ldiversity"] == d
        assert out.loc[k, "s_Entropy_Ldiversity"] == pytest.approx(e, rel=1e-12)
        assert out.loc[k, "s_Recursive_Ldiversity"] == rec, (k, c)


def test_l_diversity_multi_and_excluded_records():
    # Cell 0: for s1 within fixed s2 = 1 there is one value (x, x): entropy 1.
    cell = np.array([0, 0, 0, 0, 1, 1, -1])
    s1 = np.array(["x", "x", "y", "z", "x", "y", "q"])
    s2 = np.array([1, 1, 2, 3, 1, 2, 9])
    out = l_diversity(cell, {"s1": s1, "s2": s2})
    assert len(out) == 2  # the excluded record (-1) is dropped
    np.testing.assert_array_equal(out["s1_Distinct_Ldiversity"], [3, 2])
    np.testing.assert_array_equal(out["s2_Distinct_Ldiversity"], [3, 2])
    np.testing.assert_allclose(out["MultiEntropy_Ldiversity"], [1.0, 1.0])
    np.testing.assert_array_equal(out["MultiRecursive_Ldiversity"], [1, 1])


def test_file_summary_francdat(francdat_cells):
    fk, _ = francdat_cells
    households = np.array([1, 1, 2, 2, 3, 3, 4, 4])
    s = file_summary(SEED001_RISK, fk, households)
    assert s["n_records"] == 8
    assert s["n_sample_uniques"] == 4
    assert s["expected_reidentifications"] == pytest.approx(0.966)
    assert s["expected_reidentification_rate"] == pytest.approx(0.966 / 8)
    assert s["n_above_benchmark"] == 3
    assert s["k_anonymity_violations"] == {2: 4, 3: 8, 5: 8}
    pairs = SEED001_RISK.reshape(4, 2)
    hh = 1 - np.prod(1 - pairs, axis=1)
    assert s["household_expected_reidentifications"] == pytest.approx(2 * hh.sum())
    assert all(type(v) in (int, float, dict, str) for v in s.values())  # JSON-ready
    json.dumps(s)
    assert "household_expected_reidentifications" not in file_summary(SEED001_RISK, fk)


def test_measures_on_a_million_records_match_an_independent_route():
    # At scale (sums over 1e6 records, 3e5 households, counts past int32 products) the
    # file summary must equal pandas group-bys and NumPy's median/MAD written out here.
    # Its speed is measured by benchmarks/closed_form.py (file summary included).
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 1_000_000
    r = rng.beta(0.3, 10, size=n)
    fk = rng.integers(1, 50, size=n)
    h = rng.integers(0, n // 3, size=n)
    s = file_summary(r, fk, h)
    assert s["n_records"] == n
    assert s["n_sample_uniques"] == int((fk == 1).sum())
    assert s["expected_reidentifications"] == pytest.approx(r.sum(), rel=1e-12)
    assert s["k_anonymity_violations"] == {k: int((fk < k).sum()) for k in (2, 3, 5)}
    med = np.median(r)
    mad = 1.4826 * np.median(np.abs(r - med))
    assert s["n_above_benchmark"] == int(((r > 0.1) & (r > med + 2 * mad)).sum())
    safe = pd.Series(np.log1p(-r)).groupby(h)
    hh_risk = -np.expm1(safe.sum())  # 1 - prod(1 - r) per household
    her = float((hh_risk * safe.size()).sum())
    assert s["household_expected_reidentifications"] == pytest.approx(her, rel=1e-10)
