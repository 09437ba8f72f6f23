"""Micro-aggregation against sdcMicro (audit S, A2 and B8).

sdcMicro's ``microaggregation(method="mdav")`` with a single variable calls ``mafast``
(``R/microaggregation.R``, the ``length(variables) == 1`` branch; ``R/mafast.R``): sort,
cut into consecutive groups of ``aggr`` from the smallest, the remainder joining the last
group. :func:`sorted_microaggregation` is that method; :func:`mdav` on one column is 1-D
MDAV and forms other groups. With several variables :func:`mdav` reproduces sdcMicro's
``src/Mdav.cpp`` partition (reasoned, audit S B8: no R run; group counts below).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.protection.microaggregation import mdav, sorted_groups, sorted_microaggregation


@pytest.fixture(scope="module")
def testdata(sdcmicro_csv):
    return sdcmicro_csv("testdata.csv")


def sort_and_block(y: np.ndarray, k: int) -> np.ndarray:
    """mafast's vectoraggr, written out: rep(1:ngroup, each = aggr), the last group
    repeated for the remainder, assigned in order(y) (stable), then the group means."""
    n = y.size
    g = np.repeat(np.arange(n // k), k)
    g = np.concatenate([g, np.full(n - g.size, g[-1])])
    group = np.empty(n, dtype=np.int64)
    group[np.argsort(y, kind="stable")] = g
    means = np.array([y[group == i].mean() for i in range(n // k)])
    return means[group]


def test_hand_example_with_remainder():
    # 8 values, k = 3: sorted 1 2 3 | 4 5 6 7 8 -> the remainder (7, 8) joins the last group
    df = pd.DataFrame({"x": [8.0, 1.0, 5.0, 3.0, 7.0, 2.0, 6.0, 4.0], "other": list("abcdefgh")})
    res = sorted_microaggregation(df, "x", k=3)
    assert res.frame["x"].tolist() == [6.0, 2.0, 6.0, 2.0, 6.0, 2.0, 6.0, 6.0]
    assert res.frame["other"].tolist() == list("abcdefgh")
    assert res.log["size"].tolist() == [3, 5]
    assert res.log[["low", "high"]].to_numpy().tolist() == [[1.0, 3.0], [4.0, 8.0]]
    assert res.summary["n_groups"] == {"x": 2}
    np.testing.assert_array_equal(sorted_groups(df["x"].to_numpy(), 3),
                                  [1, 0, 1, 0, 1, 0, 1, 1])
    # an exact multiple of k: no remainder, all groups of k
    np.testing.assert_array_equal(sorted_groups(np.arange(6.0)[::-1], 2), [2, 2, 1, 1, 0, 0])


def test_ties_keep_input_order():
    # R's order() is stable: equal values are grouped in file order
    y = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 2.0])
    np.testing.assert_array_equal(sorted_groups(y, 2), [0, 1, 1, 2, 0, 2])


@pytest.mark.parametrize("column", ["expend", "income"])
def test_testdata_equals_sort_and_block(testdata, column):
    y = testdata[column].to_numpy(dtype=float)
    res = sorted_microaggregation(testdata, column, k=3)
    np.testing.assert_allclose(res.frame[column].to_numpy(), sort_and_block(y, 3),
                               rtol=1e-12, atol=0)
    sizes = np.bincount(res.summary["group_of_record"][column])
    assert sizes.size == len(y) // 3 and set(sizes[:-1]) == {3}
    assert sizes[-1] == 3 + len(y) % 3
    assert res.frame[column].mean() == pytest.approx(y.mean(), rel=1e-12)


def test_testdata_differs_from_one_dimensional_mdav(testdata):
    # audit S, A2: 1-D MDAV forms other groups; 2,291 of 4,580 expend values differ
    y = testdata["expend"].to_numpy(dtype=float)
    sdc = sort_and_block(y, 3)
    one_d = mdav(testdata, ["expend"], 3).frame["expend"].to_numpy()
    assert int((np.abs(one_d - sdc) > 1e-6 * np.abs(sdc).max()).sum()) == 2291


def test_several_columns_each_get_their_own_groups(testdata):
    cols = ["expend", "income"]
    res = sorted_microaggregation(testdata, cols, k=3)
    for c in cols:
        np.testing.assert_allclose(res.frame[c].to_numpy(),
                                   sort_and_block(testdata[c].to_numpy(dtype=float), 3),
                                   rtol=1e-12, atol=0)
    assert set(res.log["variable"]) == set(cols)


def test_strata_aggregate_within_each(testdata):
    res = sorted_microaggregation(testdata, "income", k=3, strata="sex")
    for _, part in testdata.groupby("sex"):
        idx = part.index.to_numpy()
        np.testing.assert_allclose(res.frame["income"].to_numpy()[idx],
                                   sort_and_block(part["income"].to_numpy(dtype=float), 3),
                                   rtol=1e-12, atol=0)
    assert set(res.log["stratum"]) == {str(s) for s in testdata["sex"].unique()}


def test_median_and_input_untouched():
    df = pd.DataFrame({"x": [1.0, 2.0, 10.0, 4.0, 5.0, 6.0, 7.0]})
    before = df.copy(deep=True)
    res = sorted_microaggregation(df, "x", k=3, aggregate="median")
    # groups {1, 2, 4} and {5, 6, 7, 10} (remainder joined): medians 2 and 6.5
    assert res.frame["x"].tolist() == [2.0, 2.0, 6.5, 2.0, 6.5, 6.5, 6.5]
    pd.testing.assert_frame_equal(df, before)


def test_bad_input_raises_input_error():
    df = pd.DataFrame({"x": [1.0, 2.0, np.nan, 4.0], "c": list("abab"), "s": [0, 0, 0, 1]})
    with pytest.raises(InputError, match="missing"):
        sorted_microaggregation(df, "x", k=2)
    with pytest.raises(InputError, match="not numeric"):
        sorted_microaggregation(df, "c", k=2)
    ok = df.assign(x=[1.0, 2.0, 3.0, 4.0])
    with pytest.raises(InputError, match="only 4 records"):
        sorted_microaggregation(ok, "x", k=5)
    with pytest.raises(InputError, match="fewer than k=2"):
        sorted_microaggregation(ok, "x", k=2, strata="s")
    with pytest.raises(InputError, match="both aggregated and strata"):
        sorted_microaggregation(ok, "x", k=2, strata="x")
    with pytest.raises(InputError, match="aggregate"):
        sorted_microaggregation(ok, "x", k=2, aggregate="mode")
    with pytest.raises(InputError, match="k=0"):
        sorted_microaggregation(ok, "x", k=0)


# ---------------------------------------------------------------- multivariate MDAV (B8)


def test_mdav_testdata_groups(testdata):
    # reasoned (audit S B8): microaggregation(testdata[, c("expend","income","savings")],
    # method = "mdav", aggr = 3) -> 1,526 groups, 1,525 of 3 records and one of 5
    res = mdav(testdata, ["expend", "income", "savings"], 3)
    sizes = np.bincount(res.summary["group_of_record"])
    assert res.summary["n_groups"] == 1526
    values, counts = np.unique(sizes, return_counts=True)
    assert dict(zip(values.tolist(), counts.tolist(), strict=True)) == {3: 1525, 5: 1}


def test_mdav_free1_groups(sdcmicro_csv):
    # reasoned (audit S B8): free1[, 31:34] (R, 1-based) = INCOME, MONEY, ASSETS, DEBTS
    free1 = sdcmicro_csv("free1.csv")
    cols = list(free1.columns[30:34])
    assert cols == ["INCOME", "MONEY", "ASSETS", "DEBTS"]
    res = mdav(free1, cols, 3)
    assert res.summary["n_groups"] == 1333
    assert set(np.bincount(res.summary["group_of_record"])) == {3, 4}
