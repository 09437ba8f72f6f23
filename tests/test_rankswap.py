"""Rank swapping (Moore 1996; sdcMicro's ``rankSwap``): sdcbayes.protection.rank_swap."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from sdcbayes.exceptions import InputError
from sdcbayes.protection import rank_swap


def frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "income": rng.lognormal(10, 1, n),
        "age": rng.integers(18, 90, n),  # many ties
        "score": rng.normal(50, 10, n),
        "region": rng.choice(["n", "s", "e", "w"], n),
    })


def descending_rank(values: np.ndarray) -> np.ndarray:
    rank = np.empty(values.size, dtype=np.int64)
    rank[np.argsort(-values, kind="stable")] = np.arange(values.size)
    return rank


@pytest.mark.parametrize("n,p", [(60, 10), (97, 25), (400, 3), (50, 100)])
def test_swapped_pairs_within_the_rank_range_brute_force(n, p):
    x = np.random.default_rng(n).permutation(np.linspace(0.0, 1.0, n))  # distinct values
    df = pd.DataFrame({"x": x})
    res = rank_swap(df, "x", p=p, top_percent=0, bottom_percent=0, seed=n)
    L = math.floor(p * n / 100)
    L = min(L, n - 1)
    assert res.log["rank_range"].iloc[0] == L
    src = res.summary["source_of_record"]["x"]
    np.testing.assert_array_equal(res.frame["x"].to_numpy(), x[src])
    rank = descending_rank(x)
    for i in range(n):
        j = src[i]
        if j == i:
            # a value keeps its place only when its window ran out of free values, which
            # happens only where the window is cut by the end of the order: fewer than
            # L values follow (at most L - 1 values ahead are ever taken beforehand)
            assert rank[i] >= n - L
            continue
        assert src[j] == i  # an exchange: the two records trade values
        assert 1 <= abs(int(rank[i]) - int(rank[j])) <= L
    assert res.log["n_swapped"].iloc[0] == int((src != np.arange(n)).sum())
    assert res.log["n_swapped"].iloc[0] >= n - L  # all but the end of the order


def test_value_multiset_preserved_without_grouping():
    df = frame(500)
    res = rank_swap(df, ["income", "age", "score"], p=15, top_percent=0, bottom_percent=0,
                    seed=3)
    for c in ["income", "age", "score"]:
        a, b = np.sort(df[c].to_numpy()), np.sort(res.frame[c].to_numpy())
        np.testing.assert_array_equal(a, b)  # same values: mean, sd, quantiles exactly
        assert (res.frame[c].to_numpy() != df[c].to_numpy()).mean() > 0.5  # and moved
    assert res.frame["age"].dtype == df["age"].dtype  # integers stay integers
    pd.testing.assert_series_equal(res.frame["region"], df["region"])


def test_top_and_bottom_grouping_then_multiset_of_the_rest():
    df = frame(400, seed=2)
    res = rank_swap(df, "income", p=10, top_percent=5, bottom_percent=2.5, seed=1)
    x, z = df["income"].to_numpy(), res.frame["income"].to_numpy()
    order = np.argsort(-x)
    top, bottom, mid = order[:20], order[-10:], order[20:-10]  # floor(400 * 5 %), 2.5 %
    np.testing.assert_allclose(z[top], x[top].mean(), rtol=1e-12)
    np.testing.assert_allclose(z[bottom], x[bottom].mean(), rtol=1e-12)
    # the middle values are only exchanged among the middle records
    np.testing.assert_array_equal(np.sort(z[mid]), np.sort(x[mid]))
    assert z.sum() == pytest.approx(x.sum(), rel=1e-12)  # group means keep the sum
    row = res.log.iloc[0]
    assert (row["n_top"], row["n_bottom"], row["n_ranked"]) == (20, 10, 370)
    assert row["rank_range"] == 37  # 10 % of the 370 values swapped


def test_missing_values_stay_missing_and_out_of_the_ranking():
    df = frame(300, seed=4)
    df.loc[df.index[::7], "score"] = np.nan
    df["count"] = pd.array(np.arange(300), dtype="Int64")
    df.loc[df.index[::5], "count"] = pd.NA
    res = rank_swap(df, ["score", "count"], p=20, top_percent=0, bottom_percent=0, seed=2)
    for c in ["score", "count"]:
        miss = df[c].isna().to_numpy()
        np.testing.assert_array_equal(res.frame[c].isna().to_numpy(), miss)
        src = res.summary["source_of_record"][c]
        assert not miss[src[~miss]].any()  # observed records drew observed values only
        assert (src[miss] == np.flatnonzero(miss)).all()
        np.testing.assert_array_equal(np.sort(res.frame[c].dropna().to_numpy(dtype=float)),
                                      np.sort(df[c].dropna().to_numpy(dtype=float)))
    assert res.frame["count"].dtype == "Int64"
    log = res.log.set_index("variable")
    assert log.loc["score", "n_missing"] == 43 and log.loc["score", "n_ranked"] == 257


def test_moore_rank_range_from_r0_and_k0_by_hand():
    # sdcMicro's docs: R0 = R1 / R2 and |X1 - X2| <= 2 K0 X1 / sqrt(N_S); its C++
    # relates them to P through R0 = 1 - (P Δ)² / (2 V) and R0 = 1 - 4/3 K0² x̄² / V
    # (V the variance, x̄ the mean of the values swapped, Δ the range between the
    # top- and bottom-grouped boundary values)
    x = np.arange(1.0, 201.0) ** 1.5 + 40.0  # distinct, skewed
    df = pd.DataFrame({"x": np.random.default_rng(0).permutation(x)})
    s = np.sort(x)[::-1]
    top, bottom = 10, 6  # floor(200 * 5 %), floor(200 * 3 %)
    mid = s[top:200 - bottom]
    V, xbar = mid.var(), mid.mean()  # population variance, as the C++
    delta = s[top - 1] - s[200 - bottom]  # smallest top value - largest bottom value
    m = mid.size
    for r0 in (0.95, 0.99):
        res = rank_swap(df, "x", r0=r0, top_percent=5, bottom_percent=3, seed=1)
        P = math.sqrt((1 - r0) * 2 * V) / delta  # solve 1 - R0 = (P Δ)² / (2 V)
        assert res.log["rank_range_percent"].iloc[0] == pytest.approx(100 * P, rel=1e-9)
        assert res.log["rank_range"].iloc[0] == math.floor(P * m)
        assert res.summary["criterion"] == "r0"
    k0 = 0.05
    r0_equivalent = 1 - 4 / 3 * k0**2 * xbar**2 / V
    P = math.sqrt((1 - r0_equivalent) * 2 * V) / delta
    res = rank_swap(df, "x", k0=k0, top_percent=5, bottom_percent=3, seed=1)
    assert res.log["rank_range_percent"].iloc[0] == pytest.approx(100 * P, rel=1e-9)
    assert res.log["rank_range"].iloc[0] == math.floor(P * m)
    # no criterion given: R0 = 0.95, as sdcMicro
    res = rank_swap(df, "x", top_percent=5, bottom_percent=3, seed=1)
    assert (res.summary["criterion"], res.summary["criterion_value"]) == ("r0", 0.95)
    assert res.log["rank_range_percent"].iloc[0] == pytest.approx(
        100 * math.sqrt(0.05 * 2 * V) / delta, rel=1e-9)


def test_correlation_of_a_uniform_variable_with_its_swap():
    # Away from the ends of the order, a value's partner lies at rank distance d with
    # density (ln 2 / L) 2^(d/L) on (0, L] (the free share of a window grows from 1/2
    # at its start to 1 at its end), so E[d²] = c L², c = ∫ u² ln2 2^u du on [0, 1], and
    # for evenly spaced values (variance Δ²/12) corr(x, x') = 1 - E[(x-x')²] / (2 V)
    # = 1 - 6 c P². The ends of the order (2L of the m ranks, where d² <= L²) can move
    # 1 - corr by at most a share 2P / c of it; sampling error is well below 1 %.
    c = integrate.quad(lambda u: u * u * math.log(2) * 2**u, 0, 1)[0]
    n, p = 50_000, 1.0
    P = p / 100
    one_minus = []
    for s in range(3):
        x = np.random.default_rng(10 + s).permutation(n) / n
        res = rank_swap(pd.DataFrame({"x": x}), "x", p=p, top_percent=0, bottom_percent=0,
                        seed=s)
        one_minus.append(1 - res.log["correlation"].iloc[0])
        assert res.log["correlation"].iloc[0] == pytest.approx(
            np.corrcoef(x, res.frame["x"])[0, 1], rel=1e-12)
    ratio = np.mean(one_minus) / (6 * c * P**2)
    assert abs(ratio - 1) < 2 * P / c + 0.01
    # A partner drawn uniformly in the window (c = 1/3) would be 15 % off: detectable.
    assert abs(np.mean(one_minus) / (6 * P**2 / 3) - 1) > 0.1


def test_r0_met_on_average_for_uniform_and_normal_fields():
    # R0 = R1 / R2: the correlation of two fields after swapping over that before.
    # Moore's P assumes 1 - R0 = 6 P² for a uniform field; two uniform fields swapped
    # independently keep about (1 - 6 c P²)² = 1 - 4.7 P², so R1 / R2 >= R0, and
    # about 0.96 for R0 = 0.95 (module docstring).
    ratios = {"uniform": [], "normal": []}
    for s in range(3):
        z = np.random.default_rng(s).multivariate_normal([0, 0], [[1, 0.8], [0.8, 1]], 20_000)
        for kind, data in (("uniform", stats.norm.cdf(z)), ("normal", z)):
            df = pd.DataFrame(data, columns=["a", "b"])
            top = 0 if kind == "uniform" else 5
            res = rank_swap(df, ["a", "b"], r0=0.95, top_percent=top, bottom_percent=top,
                            seed=s)
            before = np.corrcoef(df["a"], df["b"])[0, 1]
            after = np.corrcoef(res.frame["a"], res.frame["b"])[0, 1]
            ratios[kind].append(after / before)
    assert 0.95 <= np.mean(ratios["uniform"]) <= 0.97
    assert 0.95 <= np.mean(ratios["normal"]) < 0.99


def test_seed_reproducibility_and_provenance():
    df = frame(300)
    cols = ["income", "age"]
    a = rank_swap(df, cols, p=5, seed=11)
    b = rank_swap(df, cols, p=5, seed=11)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    c = rank_swap(df, cols, p=5, seed=12)
    assert not a.frame["income"].equals(c.frame["income"])
    d = rank_swap(df, cols, p=5)
    seed = d.summary["seed"]
    assert isinstance(seed, int)
    pd.testing.assert_frame_equal(rank_swap(df, cols, p=5, seed=seed).frame, d.frame)
    assert d.provenance["model"] == "rank_swap"
    assert d.provenance["settings"]["seed"] == seed
    assert d.provenance["data"]["variables"] == cols


def test_result_does_not_depend_on_row_order():
    # ties (age, many equal values) are ranked by a seeded hash of the record, not by
    # its position, so permuting the rows permutes the result the same way
    df = frame(400, seed=5)
    perm = np.random.default_rng(1).permutation(len(df))
    cols = ["age", "income"]
    a = rank_swap(df, cols, p=10, seed=4)
    b = rank_swap(df.iloc[perm], cols, p=10, seed=4)
    pd.testing.assert_frame_equal(b.frame, a.frame.iloc[perm])
    pd.testing.assert_frame_equal(a.log, b.log)


def test_input_frame_not_modified():
    df = frame(200)
    df.loc[df.index[:3], "score"] = np.nan
    before = df.copy(deep=True)
    res = rank_swap(df, ["income", "age", "score"], p=10, seed=0)
    pd.testing.assert_frame_equal(df, before)
    res.frame.loc[res.frame.index[0], "region"] = "zz"  # editing the result ...
    pd.testing.assert_frame_equal(df, before)  # ... leaves the input alone


def test_log_and_summary():
    df = frame(300, seed=8)
    res = rank_swap(df, ["income", "score"], p=5, seed=2)
    log = res.log.set_index("variable")
    for c in ["income", "score"]:
        x, z = df[c].to_numpy(), res.frame[c].to_numpy()
        assert log.loc[c, "mean_abs_change"] == pytest.approx(np.abs(z - x).mean(), rel=1e-12)
        assert log.loc[c, "correlation"] == pytest.approx(np.corrcoef(x, z)[0, 1], rel=1e-12)
        assert log.loc[c, "n_changed"] == int((z != x).sum())
        assert res.summary["rank_range"][c] == log.loc[c, "rank_range"] == 13  # 5 % of 270
    s = res.summary
    assert (s["method"], s["criterion"], s["p"], s["top_percent"]) == ("rank_swap", "p", 5.0,
                                                                        5.0)


def test_range_below_one_record_warns_and_swaps_nothing():
    df = pd.DataFrame({"x": np.arange(30.0)})
    with pytest.warns(UserWarning, match="below one"):
        res = rank_swap(df, "x", p=2, top_percent=0, bottom_percent=0, seed=0)
    pd.testing.assert_frame_equal(res.frame, df)
    assert res.log["n_swapped"].iloc[0] == 0


@pytest.mark.parametrize("kwargs,match", [
    ({"p": 5, "r0": 0.9}, "give only one of p, r0 and k0"),
    ({"r0": 0.9, "k0": 0.1}, "give only one"),
    ({"p": 0}, r"p=0 must be a number in \(0, 100\]"),
    ({"p": 101}, "p=101"),
    ({"p": True}, "p=True"),
    ({"p": float("nan")}, "p=nan"),
    ({"r0": 1.0}, r"r0=1.0 must be a number in \(0, 1\)"),
    ({"r0": -0.5}, "r0=-0.5"),
    ({"k0": 0}, "k0=0 must be a positive number"),
    ({"top_percent": 100}, r"top_percent=100 must be a number in \[0, 100\)"),
    ({"bottom_percent": -1}, "bottom_percent=-1"),
    ({"top_percent": 60, "bottom_percent": 40}, "keep their sum below 100"),
    ({"columns": ["region"]}, "not numeric"),
    ({"columns": ["flag"]}, "boolean"),
    ({"columns": ["nope"]}, "not found"),
    ({"columns": ["inf"]}, "infinite values"),
    ({"seed": "abc"}, "seed="),
])
def test_errors(kwargs, match):
    df = frame(50)
    df["flag"] = df["age"] > 50
    df["inf"] = np.where(np.arange(50) == 3, np.inf, 1.0)
    kwargs = {"columns": ["income"], **kwargs}
    with pytest.raises(InputError, match=match):
        rank_swap(df, **kwargs)


def test_not_a_frame():
    with pytest.raises(InputError, match="must be a pandas DataFrame"):
        rank_swap(np.zeros((5, 2)), "x")


@pytest.mark.parametrize("n,top,bottom", [(199, 5, 3), (3000, 2.3, 4.1), (1000, 32.3, 0.7)])
def test_group_sizes_are_the_floor_of_the_decimal_product(n, top, bottom):
    # n * pct / 100 not whole, so floor and ceil differ (199 * 5 % = 9.95 -> 9); and
    # decimal percentages whose binary product falls just below a whole number
    # (3000 * 2.3 / 100 = 68.99999999999999 in floating point, 69 exactly)
    x = np.random.default_rng(n).permutation(np.arange(float(n)))
    res = rank_swap(pd.DataFrame({"x": x}), "x", p=5, top_percent=top,
                    bottom_percent=bottom, seed=1)
    want_top = n * round(top * 10) // 1000  # integer arithmetic on tenths of a percent
    want_bottom = n * round(bottom * 10) // 1000
    row = res.log.iloc[0]
    assert (row["n_top"], row["n_bottom"]) == (want_top, want_bottom)
    # and those are the records grouped: the want_top largest share their mean
    z = res.frame["x"].to_numpy()
    top_rows = np.argsort(-x)[:want_top]
    np.testing.assert_allclose(z[top_rows], x[top_rows].mean(), rtol=1e-12)
    assert (z == x[top_rows].mean()).sum() == want_top


def test_window_end_is_reached_and_never_passed():
    # two swapped values differ in rank by 1 .. L, L = floor(P m): over a few seeds the
    # distance L occurs (sdcMicro's window stops at L - 1) and L + 1 never does
    n, p = 60, 10
    x = np.random.default_rng(0).permutation(np.arange(float(n)))
    rank = descending_rank(x)
    L = n * p // 100
    seen = set()
    for seed in range(8):
        res = rank_swap(pd.DataFrame({"x": x}), "x", p=p, top_percent=0, bottom_percent=0,
                        seed=seed)
        assert res.log["rank_range"].iloc[0] == L
        src = res.summary["source_of_record"]["x"]
        moved = np.flatnonzero(src != np.arange(n))
        seen |= set(np.abs(rank[moved] - rank[src[moved]]).tolist())
    assert max(seen) == L and min(seen) == 1


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("kwargs", [{"p": 100}, {"r0": 0.5}, {"k0": 1.0}, {}])
def test_tiny_inputs(n, kwargs):
    df = pd.DataFrame({"x": np.arange(1.0, n + 1)})
    seen = set()
    # the default r0 = 0.95 gives a range below one record for 2 or 3 values: said
    below_one = not kwargs and n >= 2
    for seed in range(6):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = rank_swap(df, "x", top_percent=0, bottom_percent=0, seed=seed, **kwargs)
        messages = [str(w.message) for w in caught]
        if below_one:
            assert any("below one" in m for m in messages)
            assert res.log["n_swapped"].iloc[0] == 0
        else:
            assert messages == []
        z = res.frame["x"].to_numpy()
        np.testing.assert_array_equal(np.sort(z), df["x"].to_numpy())  # only exchanges
        assert res.log["n_top"].iloc[0] == res.log["n_bottom"].iloc[0] == 0
        seen.add(tuple(z))
    if n == 1:
        assert seen == {(1.0,)}
    if n >= 2 and kwargs == {"p": 100}:
        # L = m - 1: the largest value is always exchanged, with any of the others
        assert {s[-1] for s in seen} == set(range(1, n)) and all(s[-1] != n for s in seen)
    # with the default 5 % grouping, floor(n / 20) = 0 for n <= 3: nothing grouped
    res = rank_swap(df, "x", p=50, seed=0)
    assert res.log["n_top"].iloc[0] == 0 and res.frame["x"].dtype == df["x"].dtype


def test_all_equal_column_is_unchanged_without_warning():
    df = pd.DataFrame({"x": np.full(50, 7.0), "y": np.arange(50)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = rank_swap(df, "x", p=1, top_percent=0, bottom_percent=0, seed=0)
    pd.testing.assert_frame_equal(res.frame, df)
    assert res.log["n_changed"].iloc[0] == 0


def test_duplicate_rows_under_a_row_permutation():
    # records identical in every column are interchangeable: after permuting the rows,
    # each set of identical input records receives the same multiset of new values
    base = frame(80, seed=9)[["age", "score"]]
    df = pd.concat([base, base.iloc[:30], base.iloc[:10]], ignore_index=True)
    perm = np.random.default_rng(3).permutation(len(df))
    a = rank_swap(df, ["age", "score"], p=10, seed=5).frame
    b = rank_swap(df.iloc[perm].reset_index(drop=True), ["age", "score"], p=10, seed=5).frame
    b.index = perm  # back to the input's records
    b = b.sort_index()
    key = df.apply(tuple, axis=1)
    for _, rows in df.groupby(list(df.columns)).groups.items():
        for c in ["age", "score"]:
            assert sorted(a.loc[rows, c]) == sorted(b.loc[rows, c])
    assert key.duplicated().sum() == 40  # the example has the duplicates it names
    assert (a.to_numpy() != df.to_numpy()).any()


def test_repeated_or_complex_columns_are_refused():
    df = pd.DataFrame({"x": np.arange(10.0), "c": np.arange(10.0) + 1j})
    with pytest.raises(InputError, match="repeats"):
        rank_swap(df, ["x", "x"], p=10, seed=0)
    with pytest.raises(InputError, match="complex"):
        rank_swap(df, ["x", "c"], p=10, seed=0)
