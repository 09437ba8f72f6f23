"""Audit N fixes in risk/measures.py and risk/assess.py (findings 1-3, 5, 6, 8-11).

Each test fails on the code before the fix. All data are small and synthetic with
fixed seeds; the reference numbers are brute-force products, group-bys and loops
written out here, never the package's own formulas.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import sdcbayes
from sdcbayes.exceptions import InputError
from sdcbayes.risk.assess import assess_closed_form, cells_to_records
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
    n_sample_uniques,
    weighted_k_anonymity_violations,
)


def _household_file(seed: int = 3, n: int = 400) -> pd.DataFrame:
    """Households of 1-4 persons, three keys (one with missing values) and weights."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, size=n)
    hid = np.repeat(np.arange(sizes.size), sizes)[:n]
    frame = pd.DataFrame(
        {
            "hid": hid,
            "sex": rng.integers(0, 2, size=n),
            "age": rng.integers(0, 6, size=n).astype(float),
            "region": rng.integers(0, 4, size=n),
            "w": rng.uniform(5, 60, size=n),
        }
    )
    frame.loc[rng.random(n) < 0.08, "age"] = np.nan  # ~32 records dropped below
    return frame


def _brute_household_product(risk: np.ndarray, hid: np.ndarray) -> np.ndarray:
    """1 - prod(1 - r) over the members with a risk; NaN for records without one."""
    out = np.full(risk.size, np.nan)
    for h in np.unique(hid):
        members = hid == h
        known = members & ~np.isnan(risk)
        if known.any():
            out[known] = 1 - np.prod(1 - risk[known])
    return out


# --- finding 1: two Series are paired by label or refused, never silently by position ---


def test_series_with_different_indexes_are_refused():
    rng = np.random.default_rng(1)
    n = 12
    idx = rng.permutation(n)
    risk = pd.Series(rng.uniform(0, 0.5, n), index=idx)
    hid = pd.Series(np.arange(n) // 3, index=idx)
    shuffled = hid.sort_index()  # same labels, another order: the finding's reproducer
    for call in (
        lambda: household_risk(risk, shuffled),
        lambda: household_expected_reidentifications(risk, shuffled),
        lambda: file_summary(risk, pd.Series(np.ones(n), index=np.arange(n))),
        lambda: file_summary(risk, np.ones(n), shuffled),
    ):
        with pytest.raises(InputError, match="different indexes"):
            call()
    cell = pd.Series(np.arange(n) % 4, index=idx)
    with pytest.raises(InputError, match="different indexes"):
        l_diversity(cell, {"s": pd.Series(np.arange(n) % 3, index=np.arange(n))})
    # Equal indexes, or a Series with a plain array, keep positional pairing.
    brute = _brute_household_product(risk.to_numpy(), hid.to_numpy())
    np.testing.assert_allclose(household_risk(risk, hid), brute, rtol=1e-12)
    np.testing.assert_allclose(household_risk(risk, hid.to_numpy()), brute, rtol=1e-12)


# --- finding 2: the per-record recipe of the l-diversity docstring ---


def test_l_diversity_recipe_gives_nan_to_dropped_records():
    frame = pd.DataFrame(
        {"a": [1, 1, 2, None, 2, 1], "b": [1, 1, 1, 1, 2, 2],
         "ill": ["x", "y", "x", "z", "z", "x"]}
    )
    md = sdcbayes.Microdata(frame, keys=["a", "b"], missing="drop")
    rc = md.record_cell
    assert rc[3] < 0  # the record with a missing key is excluded
    ld = l_diversity(rc, {"ill": frame["ill"].to_numpy()})
    assert "cells_to_records" in l_diversity.__doc__  # the recipe the docstring now gives
    per_record = cells_to_records(ld["ill_Distinct_Ldiversity"].to_numpy(), rc)
    # Cells by hand: (1,1) holds x, y -> 2; (1,2) x; (2,1) x; (2,2) z -> 1 each.
    np.testing.assert_array_equal(per_record, [2, 2, 1, np.nan, 1, 1])


# --- findings 3 and 11: one household convention for assess and measures ---


def test_household_routes_agree_with_brute_force_under_missing_drop():
    frame = _household_file()
    md = sdcbayes.Microdata(frame, keys=["sex", "age", "region"], weight="w",
                            household="hid", missing="drop")
    assert md.n_dropped > 0
    res = assess_closed_form(md, method="approx")
    risk = res.records["risk"].to_numpy()
    hid = frame["hid"].to_numpy()
    brute = _brute_household_product(risk, hid)
    # some households have a dropped member and a kept one: the case that differed
    mixed = pd.Series(np.isnan(risk)).groupby(hid).agg(lambda s: 0 < s.sum() < s.size)
    assert mixed.any()
    np.testing.assert_allclose(res.records["household_risk"], brute, rtol=1e-12)
    np.testing.assert_allclose(household_risk(risk, hid), brute, rtol=1e-12)
    her = np.nansum(brute)
    assert res.summary["household_expected_reidentifications"] == pytest.approx(her, rel=1e-12)
    assert household_expected_reidentifications(res.records["risk"], frame["hid"]) == (
        pytest.approx(her, rel=1e-12))
    # The rate divides by the records that have a risk, in both routes.
    kept = ~np.isnan(risk)
    rate = np.nansum(risk) / kept.sum()
    assert res.summary["expected_reidentification_rate"] == pytest.approx(rate, rel=1e-12)
    assert expected_reidentification_rate(risk) == pytest.approx(rate, rel=1e-12)
    s = file_summary(res.records["risk"], res.records["fk"], frame["hid"])
    assert s["n_records"] == res.summary["n_records"] == int(kept.sum())
    assert s["n_records_input"] == frame.shape[0]
    assert s["household_expected_reidentifications"] == pytest.approx(her, rel=1e-12)
    assert s["household_expected_reidentification_rate"] == pytest.approx(her / kept.sum())


def test_household_risk_nan_members_are_skipped():
    # A certain member and a NaN member: the certain one decides, the NaN one is NaN.
    np.testing.assert_array_equal(household_risk([1.0, np.nan, 0.2], [1, 1, 2]),
                                  [1.0, np.nan, 0.2])
    # The product runs over the members with a risk: 1 - 0.5 * 0.8 = 0.6.
    np.testing.assert_allclose(household_risk([0.5, np.nan, 0.2], [7, 7, 7]),
                               [0.6, np.nan, 0.6], rtol=1e-12)
    # No member with a risk: undefined, and nothing is added to the sum.
    np.testing.assert_array_equal(household_risk([np.nan, np.nan, 0.2], ["a", "a", "b"]),
                                  [np.nan, np.nan, 0.2])
    assert household_expected_reidentifications([np.nan, np.nan, 0.2], ["a", "a", "b"]) == (
        pytest.approx(0.2))
    assert np.isnan(expected_reidentification_rate([np.nan, np.nan]))


def test_l_diversity_empty_cells_are_nan_in_every_column():
    cell = np.array([0, 0, 1, 1, -1, -1])  # cells 2 and 3 hold no (kept) record
    ld = l_diversity(cell, {"s": [1, 2, 1, 1, 5, 6], "t": [1, 1, 2, 2, 5, 6]}, n_cells=4)
    assert ld.loc[[2, 3]].isna().all().all()
    np.testing.assert_array_equal(ld.loc[[0, 1], "s_Distinct_Ldiversity"], [2, 1])
    np.testing.assert_array_equal(ld.loc[[0, 1], "MultiRecursive_Ldiversity"], [1, 1])
    # With every cell populated the count columns stay integer.
    full = l_diversity(cell[:4], {"s": [1, 2, 1, 1], "t": [1, 1, 2, 2]})
    assert full["s_Distinct_Ldiversity"].dtype == np.int64
    assert full["MultiRecursive_Ldiversity"].dtype == np.int64


# --- finding 5: one sensitive column ---


def test_l_diversity_takes_a_named_series_and_explains_other_single_columns():
    cell = np.array([0, 0, 0, 1, 1])
    ill = pd.Series(["flu", "cancer", "flu", "hiv", "hiv"], name="illness")
    got = l_diversity(cell, ill)
    pd.testing.assert_frame_equal(got, l_diversity(cell, {"illness": ill.to_numpy()}))
    np.testing.assert_array_equal(got["illness_Distinct_Ldiversity"], [2, 1])
    for bad in (ill.to_numpy(), ill.tolist(), ill.rename(None)):
        with pytest.raises(InputError, match=r'\{"illness": values\}'):
            l_diversity(cell, bad)


# --- finding 6: assess_closed_form checks method before the cell table ---


class _NoCellTable:
    """Stand-in Microdata whose cell table must not be built."""

    record_cell = np.zeros(3, dtype=np.int64)

    @property
    def cells(self):
        raise AssertionError("the cell table was built before method was checked")


def test_assess_closed_form_checks_method_first():
    with pytest.raises(InputError, match="assess_closed_form") as info:
        assess_closed_form(_NoCellTable(), method="aprox")
    assert "'exact'" in str(info.value) and "'approx'" in str(info.value)
    assert "benedetti_franconi_risk" not in str(info.value)


# --- finding 8: unusable arguments ---


@pytest.mark.parametrize(
    "call",
    [
        lambda: household_risk(None, [1]),
        lambda: household_risk([[0.1, 0.2], [0.3, 0.4]], [[1, 1], [2, 2]]),
        lambda: household_risk([0.1, 0.2], [[1, 1]]),
        lambda: household_risk([0.1], None),
        lambda: expected_reidentifications(["0.1", "0.2"]),
        lambda: benchmark_rule([0.9, 0.01, 0.01], threshold=10),
        lambda: benchmark_rule([0.9, 0.01, 0.01], threshold=0),
        lambda: benchmark_rule([0.9, 0.01, 0.01], threshold=None),
        lambda: benchmark_rule([0.5, 0.4, 0.3], n_mad=-2),
        lambda: benchmark_rule([0.5, 0.4, 0.3], n_mad="2"),
        lambda: k_anonymity_violations([1, 2, 3], np.True_),
        lambda: k_anonymity_violations(["1", "2"], 3),
        lambda: n_sample_uniques(["1", "1", "2"]),
        lambda: weighted_k_anonymity_violations(["a"], 2),
        lambda: mad(np.array(["a", "b"])),
        lambda: file_summary([0.1], [1], k_anonymity="3"),
        lambda: l_diversity(np.array([0]), {"s": [1]}, c="x"),
        lambda: l_diversity(np.array([0]), {"s": [1]}, c=0),
        lambda: l_diversity(np.array([0]), {"s": [1]}, c=True),
        lambda: l_diversity(np.array([], dtype=int), {"s": []}, n_cells=-1),
        lambda: l_diversity(np.array([0]), {"s": [1]}, n_cells=1.5),
    ],
    ids=["risk-None", "risk-2d", "ids-2d", "ids-None", "risk-text", "threshold-percent",
         "threshold-0", "threshold-None", "n_mad-negative", "n_mad-text", "k-numpy-bool",
         "fk-text", "uniques-text", "Fk_hat-text", "mad-text", "k_anonymity-text", "c-text",
         "c-0", "c-bool", "n_cells-negative", "n_cells-fraction"],
)
def test_unusable_arguments_raise_input_error(call):
    with pytest.raises(InputError):
        call()


def test_usable_edge_inputs_still_work():
    # One k as an int is the tuple (k,); numbers in object arrays and nullable ints pass.
    s = file_summary([0.1, 0.3], [1, 2], k_anonymity=3)
    assert s["k_anonymity_violations"] == {3: 2}
    np.testing.assert_allclose(household_risk(np.array([0.1, None], dtype=object), [1, 1]),
                               [0.1, np.nan])
    fk = pd.Series([1, None, 4], dtype="Int64")
    np.testing.assert_array_equal(k_anonymity_violations(fk, 2), [True, False, False])
    assert n_sample_uniques(fk) == 1
    assert benchmark_rule([0.9, 0.01, 0.01, 0.01], n_mad=0).tolist() == [True, False, False, False]


# --- finding 9: provenance of the file summary and the l-diversity frame ---


def test_file_summary_and_l_diversity_carry_version_and_settings():
    s = file_summary([0.1, 0.3, np.nan], [1, 2, 2], [1, 1, 2], k_anonymity=(2, 4),
                     benchmark_threshold=0.2, benchmark_n_mad=3)
    assert s["sdcbayes_version"] == sdcbayes.__version__
    assert s["settings"] == {"k_anonymity": [2, 4], "benchmark_threshold": 0.2,
                             "benchmark_n_mad": 3.0, "households": True}
    assert json.loads(json.dumps(s)) == {**s, "k_anonymity_violations": {"2": 1, "4": 3}}
    ld = l_diversity(np.array([0, 0, 1]), {"s": [1, 2, 1]}, c=3)
    assert ld.attrs["sdcbayes_version"] == sdcbayes.__version__
    assert ld.attrs["settings"] == {"c": 3.0, "n_cells": 2, "sensitive": ["s"]}
    json.dumps(ld.attrs)


# --- finding 10: multi-variable l-diversity through packed codes ---


def _group_entropy_recursive(values: pd.Series, c: float) -> tuple[float, int]:
    """Entropy and recursive l of one sub-group, written out (missing = None/NaN)."""
    present = values.dropna()
    counts = present.value_counts().to_numpy()
    n_missing = values.size - present.size
    props = list(counts / values.size)
    if n_missing and counts.size:  # missing is a category only next to real values
        props.append(n_missing / values.size)
    entropy = float(np.exp(-sum(p * np.log(p) for p in props)))
    rec = 0
    if counts.size:
        rec = 1
        for ell in range(2, counts.size + 1):
            if counts[0] < c * counts[ell - 1:].sum():
                rec = ell
    return entropy, rec


def _multi_brute(cell: np.ndarray, sens: dict, c: float) -> pd.DataFrame:
    frame = pd.DataFrame({"cell": cell, **sens})
    frame = frame[frame.cell >= 0]
    best = {}
    for name in sens:
        others = [o for o in sens if o != name]
        for keys, grp in frame.groupby(["cell", *others], dropna=False):
            e, r = _group_entropy_recursive(grp[name], c)
            k = keys[0]
            old = best.get(k, (np.inf, np.iinfo(np.int64).max))
            best[k] = (min(old[0], e), min(old[1], r))
    return pd.DataFrame(best, index=["e", "r"]).T.sort_index()


@pytest.mark.parametrize("c", [1.5, 2.0])
def test_multi_l_diversity_matches_a_group_by(c):
    rng = np.random.default_rng(7)
    n = 900
    cell = rng.integers(0, 60, size=n)
    cell[rng.random(n) < 0.05] = -1
    sens = {}
    for j, levels in enumerate((3, 4, 2)):
        v = rng.integers(0, levels, size=n).astype(float)
        v[rng.random(n) < 0.1] = np.nan
        sens[f"s{j}"] = v
    got = l_diversity(cell, sens, c=c)
    brute = _multi_brute(cell, sens, c)
    np.testing.assert_allclose(got.loc[brute.index, "MultiEntropy_Ldiversity"], brute["e"],
                               rtol=1e-12)
    np.testing.assert_array_equal(got.loc[brute.index, "MultiRecursive_Ldiversity"],
                                  brute["r"].astype(np.int64))


def test_multi_l_diversity_past_int64_packing():
    # Eight nearly-distinct variables: cells x the product of the radices exceeds int64,
    # so the packed sub-group codes must be renumbered on the way, not wrap around.
    rng = np.random.default_rng(11)
    n, n_cells = 400, 20
    cell = rng.integers(0, n_cells, size=n)
    sens = {f"v{j}": rng.integers(0, 10_000, size=n) for j in range(8)}
    sens["v0"][:40] = 1  # a few shared values so some sub-groups hold several records
    radices = [len(np.unique(v)) + 1 for v in sens.values()]
    assert n_cells * np.prod(np.array(radices[1:], dtype=float)) > np.iinfo(np.int64).max
    got = l_diversity(cell, sens)
    brute = _multi_brute(cell, sens, 2.0)
    np.testing.assert_allclose(got.loc[brute.index, "MultiEntropy_Ldiversity"], brute["e"],
                               rtol=1e-12)
    np.testing.assert_array_equal(got.loc[brute.index, "MultiRecursive_Ldiversity"],
                                  brute["r"].astype(np.int64))
