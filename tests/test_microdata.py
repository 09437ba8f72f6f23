"""The data layer: Microdata -> cell table (f_k, Fhat_k, counts of counts, K).

References used here, all independent of this code:
- sdcMicro's own unit tests of ``freqCalc`` (tests/testthat/test_freqCalc.R in
  github.com/sdcTools/sdcMicro): expected fk/Fk vectors printed in that file;
- the francdat file behind Table 1 of the IHSN guide (seed 001_), counted by hand;
- sdcMicro's documented ``freqCalc`` example with missing values on francdat,
  counted by hand from the documented wildcard rule (derivation in the comments);
- an O(n^2) pairwise brute force of the wildcard rule, and pandas groupby for the
  exact partition, on random frames (hypothesis).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdcbayes.exceptions import DataError, InputError
from sdcbayes.microdata import CellTable, Microdata

nan = np.nan

FRANCDAT = pd.DataFrame(
    {
        "Num1": [0.3, 0.12, 0.18, 1.9, 1.0, 1.0, 0.1, 0.15],
        "Key1": [1, 1, 1, 3, 4, 4, 6, 1],
        "Num2": [0.4, 0.22, 0.8, 9.0, 1.3, 1.4, 0.01, 0.5],
        "Key2": [2, 2, 2, 3, 3, 3, 2, 2],
        "Key3": [5, 1, 1, 1, 1, 1, 1, 5],
        "Key4": [1, 1, 1, 5, 4, 1, 5, 1],
        "Num3": [4, 22, 8, 91, 13, 14, 1, 5],
        "w": [18, 45.5, 39, 17, 541, 8, 5, 92],
    }
)
FKEYS = ["Key1", "Key2", "Key3", "Key4"]


# ------------------------------------------------------------------ reference numbers


def test_francdat_ihsn_table1_frequencies():
    md = Microdata(FRANCDAT, keys=FKEYS, weight="w")
    rt = md.record_table()
    # IHSN guide (seed 001_) Table 1: fk column; Fk = weight sums of identical keys
    # (records 1 & 8, 2 & 3 share their keys), counted by hand.
    np.testing.assert_array_equal(rt["fk"], [2, 2, 2, 1, 1, 1, 1, 2])
    np.testing.assert_allclose(rt["Fk_hat"], [110, 84.5, 84.5, 17, 541, 8, 5, 110])
    cells = md.cells
    assert cells.n_cells == 6 and cells.n_records == 8
    assert cells.counts_of_counts.to_dict() == {1: 4, 2: 2}
    assert cells.counts_of_counts.name == "m" and cells.counts_of_counts.index.name == "count"
    # levels: Key1 {1,3,4,6}, Key2 {2,3}, Key3 {1,5}, Key4 {1,4,5}
    assert cells.K == 4 * 2 * 2 * 3 and cells.m0 == 48 - 6
    assert md.summary()["n_sample_uniques"] == 4


# sdcMicro tests/testthat/test_freqCalc.R: (data column-major, dim, weights, fk, Fk).
W8 = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51]
SDCMICRO_FREQCALC = {
    "no_missing": (
        [2, 3, 2, 2, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, 1, 2, 1, 1, 1, 1],
        (8, 3),
        W8,
        [3, 1, 3, 1, 2, 2, 1, 3],
        [108.0, 45.5, 108.0, 17.0, 100.0, 100.0, 123.5, 108.0],
    ),
    "missing": (
        [2, 3, 2, 2, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, nan, 2, 1, 1, nan, 1],
        (8, 3),
        W8,
        [3, 1, 4, 2, 2, 2, 1, 3],
        [108.0, 45.5, 125.0, 56.0, 100.0, 100.0, 123.5, 108.0],
    ),
    "one_column_and_one_row_missing": (
        [2, 3, nan, 2, 3, 3, 1, 2, 3, 3, nan, 3, 3, 3, 4, 3] + [nan] * 8,
        (8, 3),
        W8,
        [4, 4, 8, 4, 4, 4, 2, 4],
        [125.0, 184.5, 394.0, 125.0, 184.5, 184.5, 162.5, 125.0],
    ),
    "single_key_missing": (
        [2, 3, nan, 2, 1, nan, 1, 2],
        (8, 1),
        W8,
        [5, 3, 8, 5, 4, 8, 4, 5],
        [133.0, 92.5, 394.0, 133.0, 262.5, 394.0, 262.5, 133.0],
    ),
    "more_columns_than_rows": (
        [2, 3, nan, 2, 3, 3, 1, nan, 3, 3, nan, 3, 3, 2, 2, 3, nan, nan, 1, 2, nan, nan, 4, 4],
        (3, 8),
        [18.0, 45.5, 122],
        [1, 2, 2],
        [18.0, 167.5, 167.5],
    ),
}


@pytest.mark.parametrize("weighted", [True, False], ids=["weighted", "unweighted"])
@pytest.mark.parametrize("case", list(SDCMICRO_FREQCALC))
def test_sdcmicro_freqcalc_reference(case, weighted):
    values, shape, w, fk, Fk = SDCMICRO_FREQCALC[case]
    cols = [chr(ord("A") + j) for j in range(shape[1])]
    frame = pd.DataFrame(np.array(values, dtype=float).reshape(shape, order="F"), columns=cols)
    frame["weight"] = w
    md = Microdata(frame, keys=cols, weight="weight" if weighted else None)
    rt = md.record_table()
    np.testing.assert_array_equal(rt["fk"], fk)
    # sdcMicro without weights reports Fk = fk
    np.testing.assert_allclose(rt["Fk_hat"], Fk if weighted else fk)
    assert rt["fk"].dtype == np.int64  # alpha = 1: integer counts


def _francdat_with_missing():
    # sdcMicro's freqCalc documentation example: x[3,5] <- NA; x[4,2] <- x[4,4] <- NA;
    # x[5,6] <- NA; x[6,2] <- NA (R columns 2, 4, 5, 6 = Key1..Key4, rows 1-based).
    x = FRANCDAT.astype({k: float for k in FKEYS})
    x.loc[2, "Key3"] = nan
    x.loc[3, ["Key1", "Key2"]] = nan
    x.loc[4, "Key4"] = nan
    x.loc[5, "Key1"] = nan
    return x


# Records (Key1..Key4; * = missing) and weights:
#   1 (1,2,5,1) 18   2 (1,2,1,1) 45.5   3 (1,2,*,1) 39   4 (*,*,1,5) 17
#   5 (4,3,1,*) 541  6 (*,3,1,1) 8      7 (6,2,1,5) 5    8 (1,2,5,1) 92
# Matches (agree on keys observed in both): 1,8 ~ 3; 2 ~ 3; 7 ~ 4; 4 ~ 5 (Key3); 5 ~ 6.
# complete records: own exact cell + alpha * matching partial records
#   1, 8: 2 + a (rec 3)      Fk 110 + a*39;   2: 1 + a (rec 3)   Fk 45.5 + a*39
#   7: 1 + a (rec 4)         Fk 5 + a*17
# partial records: own cell + matching complete (weight 1) + alpha * matching partial
#   3: 1 + 3 (recs 1,2,8)    Fk 39 + 155.5;   4: 1 + 1 (rec 7) + a (rec 5)  Fk 17 + 5 + a*541
#   5: 1 + a*2 (recs 4, 6)   Fk 541 + a*25;   6: 1 + a (rec 5)   Fk 8 + a*541
@pytest.mark.parametrize("alpha", [1.0, 0.5, 0.0])
def test_sdcmicro_francdat_missing_example(alpha):
    a = alpha
    md = Microdata(_francdat_with_missing(), keys=FKEYS, weight="w", alpha=alpha)
    rt = md.record_table()
    fk = [2 + a, 1 + a, 4, 2 + a, 1 + 2 * a, 1 + a, 1 + a, 2 + a]
    Fk = [
        110 + 39 * a,
        45.5 + 39 * a,
        194.5,
        22 + 541 * a,
        541 + 25 * a,
        8 + 541 * a,
        5 + 17 * a,
        110 + 39 * a,
    ]
    np.testing.assert_allclose(rt["fk"], fk, rtol=1e-12)
    np.testing.assert_allclose(rt["Fk_hat"], Fk, rtol=1e-12)
    assert rt["fk"].dtype == (np.float64 if alpha == 0.5 else np.int64)
    cells = md.cells
    # exact partition: records 1 and 8 share a cell, every other record is alone
    assert cells.counts_of_counts.to_dict() == {1: 6, 2: 1}
    assert cells.has_missing.sum() == 4
    s = md.summary()
    assert s["n_missing_key_records"] == 4 and s["n_dropped"] == 0


# ------------------------------------------------------------------ brute force (hypothesis)


def brute_force_wildcard(keys: np.ndarray, w: np.ndarray, alpha: float):
    """O(n^2) sdcMicro wildcard counts, record by record (documented rule)."""
    n, k = keys.shape
    obs = ~np.isnan(keys)
    fk = np.zeros(n)
    Fk = np.zeros(n)
    for i in range(n):
        for j in range(n):
            both = obs[i] & obs[j]
            if obs[i].sum() == 0:
                c = 1.0  # an empty record matches everything, weight 1
            elif np.array_equal(obs[i], obs[j]) and np.array_equal(keys[i][obs[i]], keys[j][obs[j]]):
                c = 1.0  # identical keys, missing positions included
            elif not np.array_equal(keys[i][both], keys[j][both]):
                c = 0.0
            elif obs[i].all():  # complete record i, j partial or empty
                c = alpha if (obs[j].any() or k == 1) else 0.0
            else:  # partial i
                c = 1.0 if obs[j].all() else alpha
            fk[i] += c
            Fk[i] += c * w[j]
    return fk, Fk


@st.composite
def frames_with_missing(draw, max_rows=20, max_keys=4, levels=3, p_missing=0.25):
    n = draw(st.integers(1, max_rows))
    k = draw(st.integers(1, max_keys))
    cell = st.one_of(
        st.integers(0, levels - 1).map(float),
        st.just(nan),
    ) if p_missing else st.integers(0, levels - 1).map(float)
    values = draw(st.lists(st.lists(cell, min_size=k, max_size=k), min_size=n, max_size=n))
    w = draw(st.lists(st.floats(1.0, 50.0), min_size=n, max_size=n))
    cols = [f"k{j}" for j in range(k)]
    frame = pd.DataFrame(np.array(values, dtype=float).reshape(n, k), columns=cols)
    frame["w"] = w
    return frame, cols


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames_with_missing(), st.sampled_from([1.0, 0.5, 0.0, 0.3]))
def test_wildcard_matches_pairwise_brute_force(fc, alpha):
    frame, cols = fc
    md = Microdata(frame, keys=cols, weight="w", alpha=alpha)
    rt = md.record_table()
    fk, Fk = brute_force_wildcard(frame[cols].to_numpy(), frame["w"].to_numpy(), alpha)
    np.testing.assert_allclose(rt["fk"], fk, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rt["Fk_hat"], Fk, rtol=1e-12)
    # unweighted: Fk_hat = fk (sdcMicro without weights)
    rt0 = Microdata(frame, keys=cols, alpha=alpha).record_table()
    np.testing.assert_allclose(rt0["Fk_hat"], fk, rtol=1e-12, atol=1e-12)


def exact_groups(frame: pd.DataFrame, cols):
    """Records per exact key combination (missing = its own value), via pandas groupby."""
    g = frame.groupby(cols, dropna=False, sort=True)
    return g.ngroup().to_numpy(), g["w"].transform("size").to_numpy(), g["w"].transform("sum")


@settings(max_examples=30, deadline=None)
@given(frames_with_missing(), st.sampled_from(["wildcard", "category", "drop"]))
def test_counts_add_up_and_cells_carry_the_record_keys(fc, missing):
    frame, cols = fc
    kept = frame[cols].notna().all(axis=1).to_numpy() if missing == "drop" else np.ones(len(frame), bool)
    if not kept.any():
        with pytest.raises(DataError, match="missing='drop'"):
            Microdata(frame, keys=cols, weight="w", missing=missing)
        return
    md = Microdata(frame, keys=cols, weight="w", missing=missing)
    cells = md.cells
    rc = md.record_cell
    assert rc.dtype == np.int64 and rc.shape == (len(frame),)
    assert np.all((rc >= 0) == kept)
    assert cells.f_exact.sum() == kept.sum() == cells.n_records == md.n_records
    assert md.n_dropped == (~kept).sum()
    # counts of counts: sum_j j m_j = n and sum_j m_j = number of cells
    m = cells.counts_of_counts
    assert (m.index * m).sum() == kept.sum() and m.sum() == cells.n_cells
    # each record's cell carries exactly the record's key values (NA where NA)
    labels = cells.table.loc[rc[kept], cols].reset_index(drop=True)
    pd.testing.assert_frame_equal(labels, frame.loc[kept, cols].reset_index(drop=True), check_dtype=False)
    # exact partition agrees with pandas groupby
    sub = frame.loc[kept]
    ngroup, size, wsum = exact_groups(sub, cols)
    np.testing.assert_array_equal(rc[kept], ngroup)  # same numbering: sorted, NaN last
    np.testing.assert_array_equal(cells.f_exact[rc[kept]], size)
    if missing != "wildcard" or not md.missing_key.any():
        np.testing.assert_array_equal(cells.fk, cells.f_exact)
        # under drop the kept records stand for the dropped ones too (audit Z2 F3): their
        # weights are scaled to the file's total
        scale = frame["w"].sum() / sub["w"].sum() if missing == "drop" else 1.0
        np.testing.assert_allclose(cells.Fk_hat[rc[kept]], wsum * scale, rtol=1e-12)
        assert cells.Fk_hat.sum() == pytest.approx(sub["w"].sum() * scale, rel=1e-12)
        if missing == "drop":
            assert cells.Fk_hat.sum() == pytest.approx(frame["w"].sum(), rel=1e-12)
    # record table: input order, one row per record
    rt = md.record_table()
    np.testing.assert_array_equal(rt["record"], np.arange(len(frame)))
    np.testing.assert_array_equal(rt["cell"], rc)
    assert rt.loc[~kept, "fk"].isna().all()


@settings(max_examples=20, deadline=None)
@given(frames_with_missing(p_missing=0.15), st.randoms(use_true_random=False))
def test_shuffling_rows_permutes_record_cell_consistently(fc, rnd):
    frame, cols = fc
    perm = np.array(rnd.sample(range(len(frame)), len(frame)))
    shuffled = frame.iloc[perm].reset_index(drop=True)
    a = Microdata(frame, keys=cols, weight="w")
    b = Microdata(shuffled, keys=cols, weight="w")
    # cells are numbered by key values, not by order of appearance
    np.testing.assert_array_equal(b.record_cell, a.record_cell[perm])
    pd.testing.assert_frame_equal(a.cells.table, b.cells.table, check_exact=False, rtol=1e-12)


def test_input_frame_is_untouched_all_dtypes():
    rng = np.random.default_rng(1)
    n = 200
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 9, n),
            "sex": pd.Categorical(rng.choice(["m", "f"], n), categories=["f", "m", "x"]),
            "region": pd.Series(rng.choice(["north", "south", None], n), dtype="string"),
            "edu": rng.choice([1.0, 2.0, nan], n),
            "w": rng.uniform(1, 30, n),
            "hid": rng.integers(0, 50, n),
            "st": rng.choice(["a", "b"], n),
        }
    )
    before = frame.copy(deep=True)
    for missing in ("wildcard", "category", "drop"):
        md = Microdata(
            frame, keys=["age", "sex", "region", "edu"], weight="w", household="hid",
            strata="st", missing=missing,
        )
        md.cells, md.record_table(), md.summary(), md.cells.by_stratum  # noqa: B018
    pd.testing.assert_frame_equal(frame, before, check_exact=True)
    for c in frame.columns:
        assert frame[c].dtype == before[c].dtype


def test_cell_numbering_is_sorted_and_labels_keep_dtype():
    frame = pd.DataFrame(
        {
            "sex": pd.Categorical(["m", "f", "m", "f"], categories=["m", "f"]),
            "region": ["south", "north", "north", "south"],
            "age": [30, 40, 30, 40],
        }
    )
    md = Microdata(frame, keys=["sex", "region", "age"])
    t = md.cells.table
    # categorical order is the declared order (m before f); strings sort alphabetically
    assert t["sex"].tolist() == ["m", "m", "f", "f"]
    assert t["region"].tolist() == ["north", "south", "north", "south"]
    assert isinstance(t["sex"].dtype, pd.CategoricalDtype)
    assert list(t["sex"].cat.categories) == ["m", "f"]
    assert t["age"].dtype == np.int64
    assert md.record_cell.tolist() == [1, 2, 0, 3]
    assert t.index.name == "cell"


# ------------------------------------------------------------------ policies, K, weights


def test_missing_category_is_its_own_level():
    frame = pd.DataFrame({"a": [1, 1, nan, nan, 2], "b": ["x", "x", "x", "y", "y"]})
    md = Microdata(frame, keys=["a", "b"], missing="category")
    rt = md.record_table()
    np.testing.assert_array_equal(rt["fk"], [2, 2, 1, 1, 1])
    assert md.n_levels == {"a": 3, "b": 2} and md.cells.K == 6
    assert md.cells.counts_of_counts.to_dict() == {1: 3, 2: 1}
    assert md.cells.has_missing.tolist() == [False, False, True, True]  # (1,x) (2,y) (NA,x) (NA,y)


def test_missing_drop_reports_and_excludes():
    frame = pd.DataFrame({"a": [1, 1, nan, 2], "b": ["x", "x", "x", None], "w": [2.0, 3, 4, 5]})
    md = Microdata(frame, keys=["a", "b"], weight="w", missing="drop")
    assert md.record_cell.tolist() == [0, 0, -1, -1]
    assert md.n_dropped == 2 and md.n_records == 2
    rt = md.record_table()
    assert rt["fk"].iloc[0] == 2 and rt["fk"].isna().tolist() == [False, False, True, True]
    s = md.summary()
    assert s["n_dropped"] == 2 and s["n_records"] == 2
    # the kept records stand for the dropped ones (audit Z2 F3): the population is the
    # file's weight sum, the kept weights scaled by 14 / 5
    assert s["sum_weights"] == pytest.approx(14.0, rel=1e-12)
    assert s["sum_weights_input"] == 14.0 and s["sum_weights_kept"] == 5.0
    np.testing.assert_allclose(md.cells.Fk_hat, [14.0], rtol=1e-12)
    assert s["n_missing_key_records"] == 2


def test_K_counts_declared_categories_and_user_K():
    frame = pd.DataFrame(
        {"sex": pd.Categorical(["m", "m"], categories=["f", "m"]), "age": [1, 2]}
    )
    md = Microdata(frame, keys=["sex", "age"])
    assert md.n_levels == {"sex": 2, "age": 2} and md.cells.K == 4 and md.cells.m0 == 2
    md = Microdata(frame, keys=["sex", "age"], K=1000)
    assert md.cells.K == 1000 and md.cells.m0 == 998 and md.summary()["K_given"] is True
    with pytest.raises(DataError, match=r"K=1 is smaller than the 2 observed cells.*larger value"):
        Microdata(frame, keys=["sex", "age"], K=1)


def test_weights_options():
    frame = pd.DataFrame({"a": [1, 1, 2], "w": [10.0, 20.0, 5.0]})
    no_w = Microdata(frame, keys="a")
    assert no_w.weights is None
    np.testing.assert_array_equal(no_w.cells.Fk_hat, no_w.cells.fk)  # p = 1, risk 1/f
    frac = Microdata(frame, keys="a", sampling_fraction=0.1)
    np.testing.assert_allclose(frac.cells.Fk_hat, [20.0, 10.0])
    low = frame.assign(w=[0.5, 0.25, 2.0])
    md = Microdata(low, keys="a", weight="w", allow_weights_below_one=True)
    np.testing.assert_allclose(md.cells.Fk_hat, [0.75, 2.0])
    assert md.weights is not None and not np.shares_memory(md.weights, low["w"].to_numpy())


def test_strata_counts_and_counts_of_counts_per_stratum():
    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame(
        {
            "a": rng.integers(0, 4, n),
            "b": rng.integers(0, 3, n),
            "region": rng.choice(["east", "west", "north"], n),
            "w": rng.uniform(1, 10, n),
        }
    )
    md = Microdata(frame, keys=["a", "b"], weight="w", strata="region")
    bs = md.cells.by_stratum
    assert list(bs.columns) == ["cell", "stratum", "fk", "Fk_hat"]
    # brute force with pandas: counts per (a, b, region)
    g = frame.groupby(["a", "b", "region"]).agg(fk=("w", "size"), Fk_hat=("w", "sum")).reset_index()
    keyed = bs.assign(
        a=md.cells.table["a"].to_numpy()[bs["cell"]], b=md.cells.table["b"].to_numpy()[bs["cell"]]
    ).rename(columns={"stratum": "region"})
    merged = g.merge(keyed, on=["a", "b", "region"], suffixes=("", "_md"), how="outer")
    np.testing.assert_array_equal(merged["fk"], merged["fk_md"])
    np.testing.assert_allclose(merged["Fk_hat"], merged["Fk_hat_md"], rtol=1e-12)
    # per-stratum cell totals add up to the cell table
    tot = bs.groupby("cell")["fk"].sum()
    np.testing.assert_array_equal(tot.to_numpy(), md.cells.fk)
    m = md.cells.counts_of_counts_by_stratum
    assert m.index.names == ["stratum", "count"] and m.name == "m"
    expect = g.groupby(["region", "fk"]).size()
    assert m.to_dict() == expect.to_dict()
    assert md.summary()["n_strata"] == 3


def test_household_index_codes():
    frame = FRANCDAT.assign(hid=["h2", "h2", "h1", "h3", "h3", "h3", "h1", "h9"])
    md = Microdata(frame, keys=FKEYS, weight="w", household="hid")
    assert md.household_index.dtype == np.int64
    assert md.household_index.tolist() == [1, 1, 0, 2, 2, 2, 0, 3]
    assert list(md.household_levels) == ["h1", "h2", "h3", "h9"]
    assert md.summary()["n_households"] == 4


def test_packing_overflow_falls_back_to_refactorising():
    # 8 keys with 1000 levels each: 1000^8 > 2^63, the mixed radix must be renumbered
    rng = np.random.default_rng(7)
    n = 1500
    cols = [f"k{j}" for j in range(8)]
    base = rng.integers(0, 1000, (n, 8))
    base[: n // 2] = base[n // 2 :]  # duplicates so that cells have f = 2
    frame = pd.DataFrame(base, columns=cols)
    for c in cols:  # make sure every key has all 1000 levels
        frame[c] = pd.Categorical(frame[c], categories=range(1000))
    md = Microdata(frame, keys=cols)
    assert md.K == 1000**8  # exact Python int
    ngroup = frame.groupby(cols, observed=True, sort=True).ngroup().to_numpy()
    np.testing.assert_array_equal(md.record_cell, ngroup)
    assert md.cells.counts_of_counts.to_dict() == {2: n // 2}
    json.dumps(md.summary())
    assert md.summary()["K"] == 10**24


def test_summary_is_json_and_complete():
    md = Microdata(_francdat_with_missing(), keys=FKEYS, weight="w")
    s = md.summary()
    text = json.dumps(s)
    assert json.loads(text) == s
    for key in (
        "n_records", "n_cells", "n_sample_uniques", "keys", "K", "weight", "sum_weights",
        "n_missing_key_records", "n_dropped", "missing",
    ):
        assert key in s
    assert s["keys"] == {"Key1": 3, "Key2": 2, "Key3": 2, "Key4": 2}
    assert s["sum_weights"] == pytest.approx(765.5)
    assert s["missing"] == "wildcard" and s["n_missing_key_records"] == 4
    assert isinstance(md.cells, CellTable) and "CellTable" in repr(md.cells)


def test_string_dtype_and_pandas_na_keys():
    frame = pd.DataFrame(
        {
            "r": pd.array(["a", pd.NA, "b", "a"], dtype="string"),
            "s": pd.array([1, 1, pd.NA, 1], dtype="Int64"),
        }
    )
    md = Microdata(frame, keys=["r", "s"])
    # recs 0, 3 (a,1): each other + rec 1 (*,1) -> 3; rec 1 (*,1): own + recs 0, 3 + rec 2
    # (b,*), which shares no observed key with it, so nothing disagrees -> 4;
    # rec 2 (b,*): own + rec 1 -> 2
    np.testing.assert_array_equal(md.record_table()["fk"], [3, 4, 2, 3])


def test_record_cell_is_read_only():
    md = Microdata(FRANCDAT, keys=FKEYS)
    with pytest.raises(ValueError):
        md.record_cell[0] = 5


def test_medium_frame_matches_groupby_and_is_fast_enough():
    rng = np.random.default_rng(11)
    n = 100_000
    frame = pd.DataFrame({f"k{j}": rng.integers(0, L, n) for j, L in enumerate([90, 2, 50, 20, 12])})
    frame["w"] = rng.uniform(1, 100, n)
    cols = [f"k{j}" for j in range(5)]
    md = Microdata(frame, keys=cols, weight="w")
    g = frame.groupby(cols, sort=True)
    np.testing.assert_array_equal(md.record_cell, g.ngroup().to_numpy())
    np.testing.assert_array_equal(md.record_table()["fk"], g["w"].transform("size").to_numpy())
    np.testing.assert_allclose(md.record_table()["Fk_hat"], g["w"].transform("sum"), rtol=1e-12)
    assert md.cells.K == math.prod([90, 2, 50, 20, 12])


# ------------------------------------------------------------------ errors


def _frame():
    return pd.DataFrame(
        {"age": [20, 30, 40], "sex": ["m", "f", "m"], "w": [10.0, 20.0, 30.0], "hid": [1, 1, 2]}
    )


@pytest.mark.parametrize(
    ("kwargs", "exc", "fragments"),
    [
        ({"keys": ["agee", "sx"]}, DataError, ["'agee'", "'sx'", "available", "spelling"]),
        ({"keys": ["age"], "weight": "wt"}, DataError, ["'wt'", "check the spelling"]),
        ({"keys": ["age"], "household": "hh"}, DataError, ["'hh'"]),
        ({"keys": []}, InputError, ["keys is empty", "keys=['age', 'sex']"]),
        ({"keys": ["age", "age"]}, InputError, ["'age'", "more than once", "list each key once"]),
        ({"keys": ["age", 3]}, InputError, ["column names", "[3]"]),
        ({"keys": ["age"], "missing": "ignore"}, InputError, ["'ignore'", "'wildcard'", "'drop'"]),
        ({"keys": ["age"], "alpha": 1.5}, InputError, ["alpha=1.5", "[0, 1]"]),
        ({"keys": ["age"], "max_levels": 0}, InputError, ["max_levels=0", "positive integer"]),
        ({"keys": ["age"], "K": 0}, InputError, ["K=0", "positive integer"]),
        ({"keys": ["age"], "K": 2.5}, InputError, ["K=2.5"]),
        ({"keys": ["age"], "weight": "w", "sampling_fraction": 0.1}, InputError,
         ["weight=", "sampling_fraction=", "not both"]),
        ({"keys": ["age"], "sampling_fraction": 0.0}, InputError, ["sampling_fraction=0.0", "(0, 1]"]),
        ({"keys": ["age"], "sampling_fraction": 2}, InputError, ["sampling_fraction=2", "0.01"]),
        ({"keys": ["age", "w"], "weight": "w"}, InputError,
         ["'w'", "both a key and the weight", "remove it"]),
    ],
)
def test_option_errors_name_the_problem_and_the_fix(kwargs, exc, fragments):
    with pytest.raises(exc) as info:
        Microdata(_frame(), **kwargs)
    msg = str(info.value)
    assert "\n" not in msg
    for frag in fragments:
        assert frag in msg, (frag, msg)


def test_not_a_dataframe():
    with pytest.raises(InputError, match=r"pandas DataFrame.*read_microdata"):
        Microdata({"a": [1]}, keys=["a"])


def test_a_pyarrow_table_is_read_as_its_pandas_frame():
    import pyarrow as pa  # a dependency of the package (Parquet)
    frame = _frame()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    md = Microdata(table, keys=["age", "sex"], weight="w")
    ref = Microdata(frame, keys=["age", "sex"], weight="w")
    pd.testing.assert_frame_equal(md.cells.table, ref.cells.table)
    np.testing.assert_array_equal(md.record_cell, ref.record_cell)
    assert isinstance(md.frame, pd.DataFrame)


def test_no_rows():
    with pytest.raises(DataError, match=r"no rows.*at least one record"):
        Microdata(_frame().iloc[:0], keys=["age"])


def test_too_many_levels_suggests_recoding():
    frame = pd.DataFrame({"income": np.linspace(0, 1, 1500), "sex": ["m", "f"] * 750})
    with pytest.raises(DataError) as info:
        Microdata(frame, keys=["sex", "income"])
    msg = str(info.value)
    for frag in ("'income'", "1500 distinct values", "max_levels=1000", "recode", "bands"):
        assert frag in msg
    # the user may raise the bound
    assert Microdata(frame, keys=["sex", "income"], max_levels=2000).cells.n_cells == 1500


@pytest.mark.parametrize(
    ("w", "fragments"),
    [
        ([10.0, nan, 30.0], ["'w'", "1 missing or non-finite value (at record 2, counting from 1)",
                             "impute"]),
        ([10.0, np.inf, 30.0], ["'w'", "non-finite", "record 2, counting from 1"]),
        ([10.0, 0.0, 30.0], ["'w'", "1 zero or negative value (at record 2, counting from 1",
                             "positive"]),
        ([-1.0, 2.0, 30.0], ["'w'", "zero or negative", "record 1, counting from 1: -1"]),
        ([10.0, 0.5, 30.0], ["'w'", "1 value below 1", "record 2, counting from 1",
                              "allow_weights_below_one=True"]),
    ],
)
def test_bad_weights(w, fragments):
    frame = _frame().assign(w=w)
    with pytest.raises(DataError) as info:
        Microdata(frame, keys=["age"], weight="w")
    msg = str(info.value)
    assert "\n" not in msg
    for frag in fragments:
        assert frag in msg, (frag, msg)


def test_non_numeric_weights():
    with pytest.raises(DataError, match=r"weight column 'sex' is not numeric.*to_numeric"):
        Microdata(_frame(), keys=["age"], weight="sex")


def test_weights_of_dropped_records_are_not_checked():
    frame = pd.DataFrame({"a": [1.0, nan], "w": [2.0, nan]})
    md = Microdata(frame, keys=["a"], weight="w", missing="drop")
    assert md.n_records == 1


def test_missing_household_ids_and_strata():
    frame = _frame().assign(hid=[1, None, 2])
    with pytest.raises(DataError) as info:
        Microdata(frame, keys=["age"], household="hid")
    msg = str(info.value)
    for frag in ("household column 'hid'", "1 missing id (at record 2, counting from 1)",
                 "household=None"):
        assert frag in msg
    frame = _frame().assign(st=["a", None, "b"])
    with pytest.raises(DataError,
                       match=r"strata column 'st' has 1 missing value \(at.*strata=None"):
        Microdata(frame, keys=["age"], strata="st")


def test_all_records_dropped():
    frame = pd.DataFrame({"a": [nan, nan], "b": [1, 2]})
    with pytest.raises(DataError, match=r"all 2 records.*missing='wildcard'"):
        Microdata(frame, keys=["a", "b"], missing="drop")


def test_unhashable_key_values():
    frame = pd.DataFrame({"a": [[1], [2]], "b": [1, 2]})
    with pytest.raises(DataError, match=r"key 'a'.*store scalars"):
        Microdata(frame, keys=["a", "b"])


def test_wildcard_in_a_huge_code_space_matches_brute_force():
    # 8 keys x 1000 declared levels: packing overflows int64, so both the renumbering
    # in _pack and the joint-numbering branch of the wildcard join are exercised.
    rng = np.random.default_rng(5)
    n = 60
    cols = [f"k{j}" for j in range(8)]
    vals = rng.integers(0, 2, (n, 8)).astype(float) * 999  # levels 0 and 999 only
    vals[rng.random((n, 8)) < 0.1] = nan
    frame = pd.DataFrame(vals, columns=cols)
    frame["w"] = rng.uniform(1, 5, n)
    cat = frame.copy()
    for c in cols:
        cat[c] = pd.Categorical(frame[c], categories=np.arange(1000.0))
    md = Microdata(cat, keys=cols, weight="w", alpha=0.5)
    assert md.K == 1000**8
    fk, Fk = brute_force_wildcard(frame[cols].to_numpy(), frame["w"].to_numpy(), 0.5)
    rt = md.record_table()
    np.testing.assert_allclose(rt["fk"], fk, rtol=1e-12)
    np.testing.assert_allclose(rt["Fk_hat"], Fk, rtol=1e-12)


def test_non_numeric_weights_name_the_first_bad_value():
    frame = pd.DataFrame({"age": [1, 2, 3, 4], "w": ["10", "12.5", "abc", "1,234.5"]})
    with pytest.raises(DataError) as info:
        Microdata(frame, keys=["age"], weight="w")
    msg = str(info.value)
    assert "2 values are not numbers (first at record 3, counting from 1: 'abc')" in msg, msg
    assert "thousands" not in msg
    frame["w"] = ["10", "1,234.5", "12", "13"]
    with pytest.raises(DataError, match=r"record 2, counting from 1: '1,234.5'\), and a comma, "
                                        r"as thousands"):
        Microdata(frame, keys=["age"], weight="w")


def test_key_missing_everywhere_counts_as_constant_in_K():
    # Wildcard: such a key matches everything and splits nothing; it used to give K = 0
    # (zero observed levels) with one observed cell.
    df = pd.DataFrame({"a": [nan] * 4, "b": [1, 1, 2, 2]})
    md = Microdata(df, keys=["a", "b"])
    assert md.K == 2 and md.n_levels == {"a": 1, "b": 2}
    assert md.cells.table["fk"].tolist() == [2, 2]
    assert Microdata(df, keys=["a", "b"], missing="category").K == 2
    assert Microdata(df[["a"]], keys=["a"]).K == 1


def test_non_string_column_names_error_names_the_rename():
    df = pd.DataFrame({0: [1, 2, 3], 1: [1, 1, 2]})
    with pytest.raises(InputError, match=r"\[0, 1\].*frame\.rename\(columns=str\)"):
        Microdata(df, keys=[0, 1])
    md = Microdata(df.rename(columns=str), keys=["0", "1"])
    assert md.cells.n_cells == 3
