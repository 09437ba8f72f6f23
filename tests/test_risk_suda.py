"""SUDA / DIS-SUDA (seed 001, section 3.5; sdcMicro ``suda2``).

References checked here:
- seed 001 Table 3 and the text around it (SUDA scores 0, 0, 0, 0, 8, 4, 6, 8 with
  ATT = 4 keys and maximum MSU size M = 3; DIS-SUDA 0.0149, 0.0111, 0.0057, 0.0149);
- numbers printed in sdcMicro's own test file (``tests/testthat/test_suda2.R`` of
  sdcTools/sdcMicro): testdata2 scores 180 (original scores) and 2.73 (IHSN scores),
  the "sdc guideline" scores, the attribute contributions 50, 37.5, 37.5;
- a brute-force MSU enumeration (all subsets of keys per record, pure-Python
  uniqueness check over all proper subsets) on random files with missing values.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.risk.suda import (
    dis_estimate,
    dis_q_exponent,
    dis_suda_scores,
    find_msus,
    msu_size_weights,
    suda,
)

# francdat (sdcMicro), the 8 records of /work/shared/data/sdcmicro/francdat.csv:
# Num1, Key1, Num2, Key2, Key3, Key4, Num3, w
FRANCDAT_ROWS = [
    (0.3, 1, 0.4, 2, 5, 1, 4, 18.0),
    (0.12, 1, 0.22, 2, 1, 1, 22, 45.5),
    (0.18, 1, 0.8, 2, 1, 1, 8, 39.0),
    (1.9, 3, 9, 3, 1, 5, 91, 17.0),
    (1, 4, 1.3, 3, 1, 4, 13, 541.0),
    (1, 4, 1.4, 3, 1, 1, 14, 8.0),
    (0.1, 6, 0.01, 2, 1, 5, 1, 5.0),
    (0.15, 1, 0.5, 2, 5, 1, 5, 92.0),
]
FRANCDAT = pd.DataFrame(
    FRANCDAT_ROWS, columns=["Num1", "Key1", "Num2", "Key2", "Key3", "Key4", "Num3", "w"]
)
KEYS4 = ["Key1", "Key2", "Key3", "Key4"]

# Seed 001, Table 3 (same data as Table 1): age group, gender, income, education.
# The income labels lost their "<" / ">" in the seed's text; records 1-2 and 3-4 form
# the two pairs the seed describes (f_k = 2), so they differ in income; records 5-8
# share the income of records 3-4 (the reading of sdcMicro's "book example" test).
# This is francdat's Key1..Key4 with Key1 = age (1 = 20s, 3 = 30s, 4 = 40s, 6 = 60s),
# Key2 = gender (2 = male, 3 = female), Key3 = income, Key4 = education (1 = high
# school, 4 = middle school, 5 = university), francdat rows in the order 1 2 3 8 4 6 5 7
# (in francdat the pairs are rows 1, 8 and 2, 3; the scores of all four are 0 either way).
TABLE3 = pd.DataFrame(
    {
        "age": ["20s", "20s", "20s", "20s", "30s", "40s", "40s", "60s"],
        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
        "income": ["50k+", "50k+"] + ["50k-"] * 6,
        "education": ["high school"] * 4
        + ["university", "high school", "middle school", "university"],
    }
)
TABLE3_FROM_FRANCDAT = [0, 1, 2, 7, 3, 5, 4, 6]  # 0-based francdat rows of Table 3's records 1..8
TABLE3_SUDA = [0, 0, 0, 0, 8, 4, 6, 8]
TABLE3_DIS_SUDA = [0.00, 0.00, 0.00, 0.00, 0.0149, 0.0111, 0.0057, 0.0149]


# ------------------------------------------------------------------------------------
# brute force (the definitions of seed 001, section 3.5, applied literally)
# ------------------------------------------------------------------------------------


def brute_force_msus(values: list[tuple], max_size: int) -> list[list[frozenset]]:
    """All MSUs of every record: every subset of keys, every proper subset checked.

    ``None`` is missing: never part of an MSU and equal to no value.
    """
    n_keys = len(values[0])

    def unique_on(i: int, subset: tuple[int, ...]) -> bool:
        if any(values[i][a] is None for a in subset):
            return False
        for j, other in enumerate(values):
            if j != i and all(other[a] is not None and other[a] == values[i][a] for a in subset):
                return False
        return True

    out = []
    for i in range(len(values)):
        msus = []
        for k in range(1, max_size + 1):
            for subset in itertools.combinations(range(n_keys), k):
                if not unique_on(i, subset):
                    continue
                proper = (
                    t for r in range(1, k) for t in itertools.combinations(subset, r)
                )
                if not any(unique_on(i, t) for t in proper):
                    msus.append(frozenset(subset))
        out.append(msus)
    return out


def random_file(seed: int, n: int, cards: list[int], p_missing: float) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cols = {}
    for j, c in enumerate(cards):
        v = rng.integers(0, c, n).astype(float)
        v[rng.random(n) < p_missing] = np.nan
        cols[f"k{j}"] = v
    return pd.DataFrame(cols)


def as_tuples(frame: pd.DataFrame) -> list[tuple]:
    return [
        tuple(None if pd.isna(x) else x for x in row)
        for row in frame.itertuples(index=False, name=None)
    ]


# ------------------------------------------------------------------------------------
# seed 001, Table 3
# ------------------------------------------------------------------------------------


def test_msu_weights_seed_example():
    # Seed 001 section 3.5: ATT = 4, M = 3; {60s} scores 3*2*1 = 6, {Male, University} 2*1 = 2.
    w = msu_size_weights(4, 3)
    assert w[0] == 6 and w[1] == 2 and w[2] == 1
    # M = ATT (sdcMicro's default): (ATT - k)!, an MSU of all keys scores 1.
    np.testing.assert_array_equal(msu_size_weights(4), [6, 2, 1, 1])
    np.testing.assert_array_equal(msu_size_weights(7), [720, 120, 24, 6, 2, 1, 1])
    # M < ATT - 1: the seed's product, prod_{i=k}^{M} (ATT - i) = (ATT - k)! / (ATT - M - 1)!
    np.testing.assert_array_equal(msu_size_weights(6, 3), [5 * 4 * 3, 4 * 3, 3])


@pytest.mark.parametrize("max_size", [3, None])
def test_table3_suda_scores(max_size):
    # The guide's text uses M = 3; M = ATT = 4 gives the same (no MSU of size 4 here).
    res = suda(TABLE3, list(TABLE3.columns), max_size=max_size)
    np.testing.assert_array_equal(res.scores, TABLE3_SUDA)
    # record 8: MSUs {60s} (size 1) and {Male, University} (size 2), as the seed says
    assert res.msu_counts.loc[7, 1] == 1 and res.msu_counts.loc[7, 2] == 1
    # the same records coded as francdat's Key1..Key4, in Table 3's order
    fr = FRANCDAT.iloc[TABLE3_FROM_FRANCDAT].reset_index(drop=True)
    np.testing.assert_array_equal(suda(fr, KEYS4, max_size=max_size).scores, TABLE3_SUDA)


def test_table3_dis_suda_column():
    # The DIS-SUDA column of Table 3 is sdcMicro's suda2 on francdat in file order with
    # the IHSN scores (original_scores = FALSE) and DisFraction = 0.01: francdat rows
    # 4..7 give 0.0149, 0.0111, 0.0057, 0.0149, printed as Table 3's records 5..8.
    # (The table's SUDA-score column lists the records 6 and 7 the other way round,
    # francdat rows 6 and 5: the two columns of the printed table are not aligned
    # row by row -- see the module docstring of this test file.)
    res = suda(FRANCDAT, KEYS4, score_method="ihsn", dis_fraction=0.01)
    np.testing.assert_allclose(res.dis_scores[[0, 1, 2, 7, 3, 4, 5, 6]], TABLE3_DIS_SUDA, atol=5e-5)
    assert res.n_uniques == 4 and res.n_in_pairs == 4
    assert res.dis == pytest.approx(0.01)  # 4*0.01 / (4*0.01 + 4*0.99)
    # IHSN weights for ATT = 4: (2^(4-k) - 1) k! (4-k)! / 4! = 1.75, 0.5, 0.25, 0
    np.testing.assert_allclose(res.size_weights, [1.75, 0.5, 0.25, 0.0])
    np.testing.assert_allclose(res.scores, [0, 0, 0, 2.25, 1.75, 1.0, 2.25, 0])


def test_table3_dis_suda_with_elliot_scores_by_hand():
    # Same file, seed's (ATT - k)! scores 8, 6, 4, 8 for francdat rows 4..7; DIS-SUDA by
    # hand: U = 4, DIS = 0.01, Q = 1 + (8 - 4)/20 = 1.2, A = 2 * 8^-1.2 + 6^-1.2 + 4^-1.2.
    res = suda(FRANCDAT, KEYS4)
    np.testing.assert_array_equal(res.scores, [0, 0, 0, 8, 6, 4, 8, 0])
    a = 2 * 8**-1.2 + 6**-1.2 + 4**-1.2
    expect = [1 / (1 + (4 / 0.01 - 4) / (s**1.2 * a)) for s in (8, 6, 4, 8)]
    np.testing.assert_allclose(res.dis_scores[3:7], expect, rtol=1e-12)
    assert np.all(res.dis_scores[[0, 1, 2, 7]] == 0)


# ------------------------------------------------------------------------------------
# numbers printed in sdcMicro's test file
# ------------------------------------------------------------------------------------

from sdcbayes.validation import shared_data_dir  # noqa: E402

TESTDATA2 = shared_data_dir() / "sdcmicro" / "testdata2.csv"


@pytest.mark.skipif(not TESTDATA2.exists(), reason="sdcMicro testdata2.csv not available")
def test_sdcmicro_testdata2_first_scores():
    data = pd.read_csv(TESTDATA2)
    keys7 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    assert suda(data, keys7).scores[0] == 180  # original_scores = TRUE
    assert round(suda(data, keys7, score_method="ihsn").scores[0], 2) == 2.73
    assert suda(data, ["urbrur", "roof", "walls", "water", "sex"]).scores[0] == 2


def test_sdcmicro_guideline_example():
    testdat = pd.DataFrame(
        {
            "Residence": ["Urban"] * 4 + ["Rural"] + ["Urban"] * 5,
            "Gender": ["Female", "Female", "Female", "Male", "Female", "Male", "Female",
                       "Male", "Female", "Female"],
            "Education": ["Secondary incomplete", "Secondary incomplete", "Primary incomplete",
                          "Secondary complete", "Secondary complete", "Secondary complete",
                          "Primary complete", "Post-secondary", "Secondary incomplete",
                          "Secondary incomplete"],
            "Labor": ["Employed", "Employed", "Non-LF", "Employed", "Unemployed", "Employed",
                      "Non-LF", "Unemployed", "Non-LF", "Non-LF"],
        }
    )
    res = suda(testdat, list(testdat.columns))
    np.testing.assert_array_equal(res.scores, [0, 0, 6, 0, 12, 0, 6, 10, 0, 0])


@pytest.mark.parametrize("order", [["a", "b", "c"], ["a", "c", "b"], ["c", "a", "b"]])
def test_sdcmicro_attribute_contributions(order):
    dat = pd.DataFrame({"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]})[order]
    res = suda(dat, order)
    expect = {"a": 50.0, "b": 37.5, "c": 37.5}
    got = res.attribute_contributions()
    for k in order:
        assert got[k] == pytest.approx(expect[k], abs=1e-12)


# ------------------------------------------------------------------------------------
# brute force on random files (missing values included)
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seed", "n", "cards", "p_missing", "max_size"),
    [
        (1, 40, [3, 2, 4, 3], 0.0, None),
        (2, 40, [3, 2, 4, 3], 0.1, None),
        (3, 60, [2, 3, 2, 5, 2], 0.08, None),
        (4, 60, [2, 3, 2, 5, 2], 0.08, 3),
        (5, 25, [4, 4, 4], 0.2, None),
        (6, 80, [2, 2, 3, 2, 2, 3], 0.05, None),
        (7, 30, [6, 5], 0.1, None),
        (8, 12, [1, 2, 3], 0.3, None),
    ],
)
def test_msus_agree_with_brute_force(seed, n, cards, p_missing, max_size):
    frame = random_file(seed, n, cards, p_missing)
    if seed == 8:  # a key missing everywhere and a record missing everywhere
        frame.iloc[:, 0] = np.nan
        frame.iloc[3, :] = np.nan
    n_keys = len(cards)
    m = max_size or n_keys
    expected = brute_force_msus(as_tuples(frame), m)
    res = suda(frame, list(frame.columns), max_size=max_size)

    # MSU sets, record by record
    found = find_msus(np.where(frame.isna(), -1, frame.fillna(0)).astype(np.int64), max_size)
    got = [[] for _ in range(n)]
    for r, mask in zip(found.record, found.keys_mask, strict=True):
        got[r].append(frozenset(a for a in range(n_keys) if (mask >> a) & 1))
    assert [sorted(map(sorted, g)) for g in got] == [sorted(map(sorted, e)) for e in expected]

    # scores and counts by size from the brute-force MSUs and the seed's weights
    w = [math.prod(n_keys - i for i in range(k, min(m, n_keys - 1) + 1)) for k in range(1, m + 1)]
    expect_scores = [sum(w[len(s) - 1] for s in e) for e in expected]
    np.testing.assert_array_equal(res.scores, expect_scores)
    for k in range(1, m + 1):
        np.testing.assert_array_equal(
            res.msu_counts[k].to_numpy(), [sum(len(s) == k for s in e) for e in expected]
        )
    # contributions: share of the score from MSUs holding each key
    for a, key in enumerate(frame.columns):
        raw = np.array([sum(w[len(s) - 1] for s in e if a in s) for e in expected], float)
        share = np.divide(raw, expect_scores, out=np.zeros(n), where=np.array(expect_scores) > 0)
        np.testing.assert_allclose(res.contributions[key].to_numpy(), share, rtol=1e-12)
    # missing values are never part of an MSU
    for i, e in enumerate(expected):
        for s in e:
            assert not any(pd.isna(frame.iat[i, a]) for a in s)


def test_missing_code_values():
    # sdcMicro codes missing as -999: the same file with NaN or with -999 gives the same.
    frame = random_file(11, 50, [3, 3, 2, 4], 0.15)
    coded = frame.fillna(-999)
    a = suda(frame, list(frame.columns))
    b = suda(coded, list(coded.columns), missing=-999)
    np.testing.assert_array_equal(a.scores, b.scores)
    c = suda(coded, list(coded.columns))  # -999 as an ordinary level: different
    assert not np.array_equal(a.scores, c.scores)


def test_array_input_and_code_invariance():
    frame = random_file(12, 70, [3, 4, 2, 3, 2], 0.0).astype(int)
    res = suda(frame, list(frame.columns))
    # relabelling the levels of a key (any integer coding) changes nothing
    codes = frame.to_numpy() * np.array([1, 7, 1000, 3, 1]) + np.array([0, 5, 10**9, 0, 2])
    res2 = suda(codes)
    np.testing.assert_array_equal(res.scores, res2.scores)
    assert res2.keys == ["key1", "key2", "key3", "key4", "key5"]


# ------------------------------------------------------------------------------------
# consistency: contributions, DIS-SUDA
# ------------------------------------------------------------------------------------


def test_contributions_sum_consistency():
    frame = random_file(21, 200, [4, 3, 5, 2, 3], 0.05)
    res = suda(frame, list(frame.columns))
    m = res.max_size
    counts = res.msu_counts.to_numpy()
    # sum_v c_iv s_i = sum_k k w_k (number of MSUs of size k): each MSU of size k is
    # counted once for each of its k keys
    lhs = res.contributions.to_numpy().sum(axis=1) * res.scores
    rhs = counts @ (np.arange(1, m + 1) * res.size_weights)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-12)
    # scores are the weighted MSU counts
    np.testing.assert_allclose(res.scores, counts @ res.size_weights, rtol=1e-12)
    # each share is in [0, 1]; file-level percentages are sdcMicro's weighted sums
    assert res.contributions.to_numpy().min() >= 0 and res.contributions.to_numpy().max() <= 1
    pct = res.attribute_contributions()
    np.testing.assert_allclose(
        pct.to_numpy(),
        100 * (res.contributions.to_numpy() * res.scores[:, None]).sum(0) / res.scores.sum(),
    )
    assert 100 <= pct.sum() <= 100 * m


def test_dis_estimate_closed_form():
    # DIS = U pi / (U pi + P (1 - pi))
    assert dis_estimate(4, 4, 0.01) == pytest.approx(0.01)
    assert dis_estimate(10, 0, 0.3) == 1.0
    assert dis_estimate(0, 10, 0.3) == 0.0
    np.testing.assert_allclose(
        dis_estimate(np.array([5, 50]), np.array([20, 20]), 0.1),
        [0.5 / (0.5 + 18), 5 / (5 + 18)],
    )
    assert dis_q_exponent(4) == pytest.approx(1.2) and dis_q_exponent(8) == 1.0


def test_dis_suda_spreads_the_file_level_dis():
    frame = random_file(31, 300, [5, 3, 4, 6], 0.0)
    for pi in (0.01, 0.2, 0.9):
        res = suda(frame, list(frame.columns), dis_fraction=pi)
        u, dis = res.n_uniques, res.dis
        assert dis == pytest.approx(u * pi / (u * pi + res.n_in_pairs * (1 - pi)))
        d = res.dis_scores
        pos = res.scores > 0
        # every full-key unique has an MSU when all keys are searched ...
        assert pos.sum() == u
        # ... and the total odds of a false match is conserved exactly:
        # sum_i (1 - d_i)/d_i = U/DIS - U, i.e. the harmonic mean of d_i is DIS
        assert np.sum((1 - d[pos]) / d[pos]) == pytest.approx(u / dis - u, rel=1e-10)
        assert u / np.sum(1 / d[pos]) == pytest.approx(dis, rel=1e-10)
        # higher score, higher DIS-SUDA; zero score, zero
        order = np.argsort(res.scores[pos])
        assert np.all(np.diff(d[pos][order]) >= -1e-15)
        assert np.all(d[~pos] == 0)


def test_dis_suda_equal_scores_sum_to_u_times_dis():
    # every unique has the same score: each gets DIS, the sum is U * DIS
    s = np.array([0, 6, 6, 6, 0, 6.0])
    d = dis_suda_scores(s, n_uniques=4, dis=0.03, n_keys=4)
    np.testing.assert_allclose(d[s > 0], 0.03, rtol=1e-12)
    assert d.sum() == pytest.approx(4 * 0.03)
    # invariant under a common rescaling of the scores (max_size < ATT)
    s2 = np.array([0, 8, 6, 4, 8.0])
    np.testing.assert_allclose(
        dis_suda_scores(s2, 4, 0.01, 4), dis_suda_scores(5 * s2, 4, 0.01, 4), rtol=1e-12
    )


def test_max_size_rescales_and_drops_large_msus():
    frame = random_file(41, 120, [3, 2, 3, 2, 3, 2], 0.0)
    keys = list(frame.columns)
    full = suda(frame, keys)
    part = suda(frame, keys, max_size=3)
    # MSU counts of sizes <= 3 are the same; scores = sum_{k<=3} count_k (6-k)!/2!
    np.testing.assert_array_equal(part.msu_counts.to_numpy(), full.msu_counts.to_numpy()[:, :3])
    expect = full.msu_counts.to_numpy()[:, :3] @ (np.array([120, 24, 6]) / 2)
    np.testing.assert_allclose(part.scores, expect)


# ------------------------------------------------------------------------------------
# outputs and errors
# ------------------------------------------------------------------------------------


def test_records_frame_and_summary():
    res = suda(FRANCDAT, KEYS4)
    rec = res.records_frame()
    assert list(rec.columns) == [
        "record", "suda_score", "dis_suda_score",
        "contribution_Key1", "contribution_Key2", "contribution_Key3", "contribution_Key4",
    ]
    np.testing.assert_array_equal(rec["record"], np.arange(8))
    s = res.summary()
    assert s["n_records"] == 8 and s["n_sample_uniques"] == 4 and s["n_in_pairs"] == 4
    assert s["n_msus_by_size"] == {"1": 3, "2": 4, "3": 0, "4": 0}
    assert s["dis_suda_intervals"]["== 0"] == 4 and s["dis_suda_intervals"]["(0.0, 0.1]"] == 4
    import json

    json.dumps(s)  # plain types only


def test_single_record_and_single_key():
    one = suda(pd.DataFrame({"a": [1], "b": [2]}), ["a", "b"])
    np.testing.assert_array_equal(one.msu_counts.to_numpy(), [[2, 0]])  # {a}, {b}
    res = suda(pd.DataFrame({"a": [1, 1, 2, 3, 3]}), ["a"])
    np.testing.assert_array_equal(res.scores, [0, 0, 1, 0, 0])
    assert res.dis_scores[2] > 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"keys": ["Key1", "nope"]}, "not in the data"),
        ({"keys": ["Key1", "Key1"]}, "repeated"),
        ({"keys": []}, "empty"),
        ({"keys": KEYS4, "max_size": 5}, "max_size"),
        ({"keys": KEYS4, "max_size": 0}, "max_size"),
        ({"keys": KEYS4, "dis_fraction": 0}, "dis_fraction"),
        ({"keys": KEYS4, "dis_fraction": 1.5}, "dis_fraction"),
        ({"keys": KEYS4, "score_method": "x"}, "score_method"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        suda(FRANCDAT, **kwargs)


def test_fallback_paths_agree_with_brute_force(monkeypatch):
    # hash renumbering instead of look-up tables, and no cached groups (every subset
    # grouped from the single keys): same MSUs
    import sdcbayes.risk.suda as mod

    monkeypatch.setattr(mod, "_DENSE_TABLE_FACTOR", 0)
    monkeypatch.setattr(mod, "_DENSE_TABLE_MIN", 0)
    monkeypatch.setattr(mod, "_GROUP_CACHE_BYTES", 0)
    frame = random_file(51, 60, [3, 2, 4, 2, 3], 0.1)
    expected = brute_force_msus(as_tuples(frame), 5)
    w = msu_size_weights(5)
    res = suda(frame, list(frame.columns))
    np.testing.assert_array_equal(res.scores, [sum(w[len(s) - 1] for s in e) for e in expected])


def test_msu_list_table3_record8():
    # seed 001: record 8 has the MSUs {60s} and {Male, University}
    res = suda(TABLE3, list(TABLE3.columns), max_size=3)
    msus = res.msus.as_frame(res.keys)
    rec8 = msus[msus["record"] == 7]
    assert rec8["keys"].tolist() == ["age", "gender+education"]
    assert rec8["size"].tolist() == [1, 2]
    assert "scores" not in repr(res)  # large arrays kept out of the repr


# ------------------------------------------------------------------------------------
# nullable integer keys (local_suppression returns Int64 with <NA>)
# ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("error")
def test_nullable_int64_keys_with_na_equal_float_nan():
    # Int64 with pd.NA must code like float with NaN, without a cast warning.
    frame = random_file(61, 80, [3, 4, 2, 3], 0.15)
    as_int64 = frame.astype("Int64")
    assert as_int64.isna().any().any()
    a = suda(frame, list(frame.columns))
    b = suda(as_int64, list(frame.columns))
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.dis_scores, b.dis_scores)


@pytest.mark.filterwarnings("error")
def test_all_missing_int64_key_contributes_nothing_like_float():
    base = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3, 1], "b": [1, 2, 1, 2, 1, 2, 3],
                         "c": list("xyxyxyz")})
    as_float = suda(base.assign(a=np.full(7, np.nan)), ["a", "b", "c"])
    as_int64 = suda(base.assign(a=pd.array([None] * 7, dtype="Int64")), ["a", "b", "c"])
    np.testing.assert_array_equal(as_int64.scores, as_float.scores)
    assert (as_int64.contributions["a"] == 0).all()


@pytest.mark.filterwarnings("error")
def test_suda_on_local_suppression_output():
    from sdcbayes.protection import local_suppression

    rng = np.random.default_rng(62)
    frame = pd.DataFrame({f"k{j}": rng.integers(0, c, 120) for j, c in enumerate([3, 4, 5])})
    out = local_suppression(frame, list(frame.columns), k=2).frame
    assert out["k2"].isna().any() and str(out["k2"].dtype) == "Int64"
    res = suda(out, list(out.columns))
    ref = suda(out.astype("float64"), list(out.columns))
    np.testing.assert_array_equal(res.scores, ref.scores)


def test_negative_nullable_integer_keys_are_factorised():
    # negative integers are not codes: the Int64 path must fall back to factorize
    frame = pd.DataFrame({"a": pd.array([-1, -1, 2, None, 2, 5], dtype="Int64"),
                          "b": [0, 1, 0, 1, 0, 1]})
    ref = suda(frame.astype("float64"), ["a", "b"])
    np.testing.assert_array_equal(suda(frame, ["a", "b"]).scores, ref.scores)


def test_dis_estimate_takes_records_in_pairs_where_risk_dis_takes_pair_cells():
    # the two public DIS estimates differ in their second argument (documented in both)
    from sdcbayes.risk import dis as dis_module
    from sdcbayes.risk import suda as suda_module

    for u, pair_cells, pi in [(40, 25, 0.1), (3, 1, 0.5), (1, 0, 0.01)]:
        got = suda_module.dis_estimate(u, 2 * pair_cells, pi)
        assert got == pytest.approx(dis_module.dis_estimate(u, pair_cells, pi), rel=1e-12)
    assert suda_module.dis_estimate(40, 24, 0.1) != pytest.approx(
        dis_module.dis_estimate(40, 24, 0.1))
