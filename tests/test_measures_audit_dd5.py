"""Audit DD5 fixes: unsafe cells per key combination (F3) and the unweighted closed form (F4).

F3: :func:`sdcbayes.risk.measures.risky_cells` is sdcMicro's ``riskyCells`` (mu-Argus's
table of unsafe combinations). Its counts are checked against a brute force written out
here (``itertools.combinations`` and a pandas group-by per combination) and against the
numbers of sdcMicro's ``tests/testthat/test_riskyCells.R`` (testdata2).

F4: ``assess_closed_form`` on a Microdata with neither weights nor a sampling fraction
takes the file as the whole population; it now says so, as a Python warning and in
``summary["warnings"]``, with the sentence the CLI prints.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.microdata import MicrodataWarning
from sdcbayes.risk.assess import CLOSED_FORM_NO_WEIGHTS_NOTE, assess_closed_form
from sdcbayes.risk.measures import MAX_COMBINATIONS, risky_cells
from sdcbayes.validation import shared_data_dir

TESTDATA2 = shared_data_dir() / "sdcmicro" / "testdata2.csv"
needs_testdata2 = pytest.mark.skipif(
    not TESTDATA2.is_file(), reason=f"sdcMicro testdata2.csv not available ({TESTDATA2})")


# --------------------------------------------------------------------- F3: brute force
def _random_file(seed: int = 7, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "a": rng.choice(["x", "y", "z"], n, p=[0.6, 0.3, 0.1]),
        "b": rng.integers(0, 4, n),
        "c": rng.choice([10.0, 20.0, 30.0, 40.0, 50.0], n),
        "d": pd.Categorical(rng.choice(["p", "q"], n), categories=["p", "q", "never"]),
        "e": rng.integers(0, 7, n),
        "f": rng.choice(["u", "v"], n, p=[0.9, 0.1]),
    })
    # missing values in two keys (a float column and a text column)
    frame.loc[rng.random(n) < 0.08, "c"] = np.nan
    frame.loc[rng.random(n) < 0.05, "a"] = None
    return frame


def _brute_force(frame, keys, thresholds, dropna: bool) -> list[tuple]:
    """One pandas group-by per combination: (keys, records, cells, unsafe, records in them)."""
    out = []
    for d, t in enumerate(thresholds, start=1):
        for combo in itertools.combinations(keys, d):
            sub = frame[list(combo)]
            if dropna:
                sub = sub.dropna()
            size = sub.groupby(list(combo), dropna=dropna, observed=True).size()
            out.append((combo, len(sub), len(size), int((size <= t).sum()),
                        int(size[size <= t].sum())))
    return out


def _rows(result: pd.DataFrame) -> list[tuple]:
    key_cols = [c for c in result.columns if c.startswith("key_")]
    return [(tuple(k for k in row[key_cols] if k is not None), row.n_records, row.n_cells,
             row.unsafe_cells, row.unsafe_records) for _, row in result.iterrows()]


@pytest.mark.parametrize("missing", ["category", "drop"])
def test_risky_cells_matches_a_group_by_per_combination(missing):
    frame = _random_file()
    keys = list(frame.columns)
    thresholds = (20, 6, 3, 1)
    got = risky_cells(frame, keys, thresholds, missing=missing)
    assert _rows(got) == _brute_force(frame, keys, thresholds, dropna=missing == "drop")
    assert len(got) == sum(math.comb(6, d) for d in range(1, 5))  # 6 + 15 + 20 + 15
    # the threshold of each row is its dimension's; rows in itertools.combinations order
    assert got["threshold"].tolist() == [thresholds[d - 1] for d in got["dimension"]]
    assert got["dimension"].is_monotonic_increasing


def test_missing_values_form_a_cell_of_their_own_or_leave_the_table():
    frame = pd.DataFrame({"a": ["x", "x", None, None, "y"], "b": [1, 1, 1, 2, 2]})
    cat = risky_cells(frame, ["a", "b"], (1, 1), missing="category")
    # a: cells x (2), NA (2), y (1) -> one unsafe; (a, b): (x,1) 2, (NA,1) 1, (NA,2) 1, (y,2) 1
    assert cat[["n_records", "n_cells", "unsafe_cells", "unsafe_records"]].values.tolist() == [
        [5, 3, 1, 1], [5, 2, 0, 0], [5, 4, 3, 3]]
    drop = risky_cells(frame, ["a", "b"], (1, 1), missing="drop")
    # the two records missing a are left out of a's tables only, not of b's
    assert drop[["n_records", "n_cells", "unsafe_cells", "unsafe_records"]].values.tolist() == [
        [3, 2, 1, 1], [5, 2, 0, 0], [3, 2, 1, 1]]


def test_counts_cells_not_records_and_keeps_unused_categories_out():
    # one cell of 3 records and two of 1: unsafe at threshold 3 are 3 cells holding 5 records
    frame = pd.DataFrame({"k": pd.Categorical(["a", "a", "a", "b", "c"],
                                              categories=["a", "b", "c", "unused"])})
    got = risky_cells(frame, "k", 3, max_dim=1)
    assert got[["n_cells", "unsafe_cells", "unsafe_records"]].values.tolist() == [[3, 3, 5]]
    got = risky_cells(frame, ["k"], 2, max_dim=1)
    assert got[["unsafe_cells", "unsafe_records"]].values.tolist() == [[2, 2]]


def test_result_layout_and_settings():
    frame = _random_file(n=60)
    got = risky_cells(frame, ["a", "b", "e"], 2, max_dim=2)
    assert list(got.columns) == ["dimension", "key_1", "key_2", "threshold", "n_records",
                                 "n_cells", "unsafe_cells", "unsafe_records"]
    assert got[["key_1", "key_2"]].values.tolist() == [
        ["a", None], ["b", None], ["e", None], ["a", "b"], ["a", "e"], ["b", "e"]]
    assert got["threshold"].tolist() == [2] * 6
    s = got.attrs["settings"]
    assert s == {"keys": ["a", "b", "e"], "threshold": [2, 2], "max_dim": 2, "levels": None,
                 "missing": "category", "n_records_input": 60}
    assert "sdcbayes_version" in got.attrs
    # also reachable from the package, as the other measures
    from sdcbayes import risk

    assert risk.risky_cells is risky_cells


# ------------------------------------------------------------- F3: sdcMicro's numbers
# sdcMicro's tests/testthat/test_riskyCells.R check the first row of each table (the
# first key alone). For testdata2's first key, urbrur, that row depends only on urbrur's
# two counts, 27 records with urbrur 1 and 66 with urbrur 2 (its table in testdata2);
# the other keys are filled to the same 93 records.
def _urbrur_file() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "urbrur": [1] * 27 + [2] * 66,
        **{name: rng.integers(1, 5, 93) for name in ("roof", "walls", "water", "electcon",
                                                     "relat")},
    })


def test_sdcmicro_first_rows_on_urbrur_counts():
    frame = _urbrur_file()
    keys = list(frame.columns)
    # riskyCells(testdata2, keyVars=1:5, threshold=c(50,25,10,5), maxDim=4): "1"
    r0 = risky_cells(frame, keys[:5], (50, 25, 10, 5), max_dim=4)
    assert r0["unsafe_cells"].iloc[0] == 1 and r0["unsafe_records"].iloc[0] == 27
    assert len(r0) == 5 + 10 + 10 + 5
    # riskyCells(testdata2, keyVars=1:5, threshold=10, maxDim=3): "0"
    r1 = risky_cells(frame, keys[:5], 10, max_dim=3)
    assert r1["unsafe_cells"].iloc[0] == 0 and len(r1) == 5 + 10 + 10
    # useIdentificationLevel: keyVars 1:6, threshold 20, level c(1,1,2,3,3,5): "0",
    # combinations up to the 4 distinct levels
    r2 = risky_cells(frame, keys, 20, levels=[1, 1, 2, 3, 3, 5])
    assert r2["unsafe_cells"].iloc[0] == 0
    assert r2["dimension"].max() == 4 and len(r2) == 6 + 15 + 20 + 15
    # keyVars c(1,3,4,6), threshold 10, level c(1,2,2,4): "0", up to 3 keys
    r3 = risky_cells(frame, [keys[i] for i in (0, 2, 3, 5)], 10, levels=[1, 2, 2, 4])
    assert r3["unsafe_cells"].iloc[0] == 0 and r3["dimension"].max() == 3


@needs_testdata2
def test_sdcmicro_test_riskycells_on_testdata2():
    df = pd.read_csv(TESTDATA2)
    cols = list(df.columns)
    r0 = risky_cells(df, cols[:5], (50, 25, 10, 5), max_dim=4)
    assert r0["unsafe_cells"].iloc[0] == 1
    r1 = risky_cells(df, cols[:5], 10, max_dim=3)
    assert r1["unsafe_cells"].iloc[0] == 0
    r2 = risky_cells(df, cols[:6], 20, levels=[1, 1, 2, 3, 3, 5])
    assert r2["unsafe_cells"].iloc[0] == 0
    r3 = risky_cells(df, [cols[i] for i in (0, 2, 3, 5)], 10, levels=[1, 2, 2, 4])
    assert r3["unsafe_cells"].iloc[0] == 0
    # the sdcMicroObj tests: seven keys as factors, thresholds c(20,10,5), maxDim 3
    keys7 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    fac = df.astype({k: "category" for k in keys7})
    r4 = risky_cells(fac, keys7, (20, 10, 5), max_dim=3)
    assert r4["unsafe_cells"].iloc[0] == 0
    # ... after groupAndRename(roof: 5, 6, 9 -> "5+"), the original data's first row: "0"
    grouped = fac.assign(roof=fac["roof"].astype(str).replace({"5": "5+", "6": "5+",
                                                                "9": "5+"}))
    r5 = risky_cells(grouped, keys7, (10, 5, 3), max_dim=3)
    assert r5["unsafe_cells"].iloc[0] == 0
    # roof's own row shows the grouping: 5, 6 and 9 (6, 8, 6 records) become one cell of 20
    roof = lambda r: r[(r.dimension == 1) & (r.key_1 == "roof")].iloc[0]  # noqa: E731
    assert (roof(risky_cells(fac, keys7, 10, max_dim=1)).unsafe_cells,
            roof(risky_cells(grouped, keys7, 10, max_dim=1)).unsafe_cells) == (3, 0)
    # r$unsafe_cells_orig[1] with levels c(1,1,3,4,5,5,5), threshold 10: "0"
    r6 = risky_cells(fac, keys7, 10, levels=[1, 1, 3, 4, 5, 5, 5])
    assert r6["unsafe_cells"].iloc[0] == 0 and r6["dimension"].max() == 4
    # and the whole table against the brute force
    assert _rows(r0) == _brute_force(df, cols[:5], (50, 25, 10, 5), dropna=False)


# ------------------------------------------------------------- F3: input checks
@pytest.mark.parametrize(
    ("kwargs", "fragments"),
    [
        ({"keys": ["a", "nope"]}, ["'nope'", "not in the data", "available: a, b"]),
        ({"keys": []}, ["keys is empty"]),
        ({"keys": ["a", "a"]}, ["more than once"]),
        ({"threshold": 0, "max_dim": 1}, ["whole number >= 1", "threshold=3"]),
        ({"threshold": -2, "max_dim": 1}, ["whole number >= 1"]),
        ({"threshold": 2.5, "max_dim": 1}, ["whole number >= 1"]),
        ({"threshold": "5", "max_dim": 1}, ["whole number >= 1"]),
        ({"threshold": True, "max_dim": 1}, ["whole number >= 1"]),
        ({"threshold": (5, 0)}, ["threshold[1]"]),
        ({"threshold": ()}, ["threshold is empty"]),
        ({"threshold": 3}, ["needs max_dim", "max_dim=3"]),
        ({"threshold": (5, 3), "max_dim": 3}, ["2 entries", "max_dim is 3"]),
        ({"threshold": 3, "max_dim": 0}, ["max_dim must be a whole number >= 1"]),
        ({"threshold": 3, "max_dim": 4}, ["more than the 3 key", "max_dim <= 3"]),
        ({"threshold": 3, "max_dim": 1.5}, ["max_dim must be a whole number"]),
        ({"threshold": 3, "max_dim": 2, "levels": [1, 1, 2]}, ["either max_dim or levels"]),
        ({"threshold": (5, 3), "levels": [1, 1, 2]}, ["one threshold", "threshold=5"]),
        ({"threshold": 3, "levels": [1, 2]}, ["2 entries", "3 keys"]),
        ({"threshold": 3, "levels": [1, 0, 2]}, ["level of key 'b'", "whole number >= 1"]),
        ({"threshold": 3, "levels": {"a": 1, "z": 2}}, ["not keys: 'z'", "no level for"]),
        ({"threshold": 3, "levels": 2}, ["one per key"]),
        ({"threshold": 3, "max_dim": 2, "missing": "wildcard"}, ["'category' or 'drop'"]),
    ],
)
def test_bad_input_is_refused_with_the_fix(kwargs, fragments):
    frame = pd.DataFrame({"a": [1, 2], "b": [1, 1], "c": [3, 4]})
    args = {"keys": ["a", "b", "c"], "threshold": (3, 2)} | kwargs
    with pytest.raises(InputError) as err:
        risky_cells(frame, **args)
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)


def test_no_frame_and_too_many_combinations_are_refused():
    with pytest.raises(InputError, match="pandas DataFrame"):
        risky_cells({"a": [1]}, ["a"], 1, max_dim=1)
    wide = pd.DataFrame({f"k{i}": [0] for i in range(40)})
    n = sum(math.comb(40, d) for d in range(1, 5))
    assert n > MAX_COMBINATIONS
    with pytest.raises(InputError, match="lower max_dim or give fewer keys"):
        risky_cells(wide, list(wide.columns), 1, max_dim=4)


def test_levels_as_a_mapping_and_recorded():
    frame = _random_file(n=80)
    by_list = risky_cells(frame, ["a", "b", "e"], 4, levels=[1, 2, 2])
    by_map = risky_cells(frame, ["a", "b", "e"], 4, levels={"e": 2, "a": 1, "b": 2})
    pd.testing.assert_frame_equal(by_list, by_map)
    assert by_map.attrs["settings"]["levels"] == {"a": 1, "b": 2, "e": 2}
    # two distinct levels: every combination of one and two keys, threshold 4 for both
    assert by_map["dimension"].tolist() == [1, 1, 1, 2, 2, 2]
    assert by_map.attrs["settings"]["threshold"] == [4, 4]


# ------------------------------------------------------------- F4: unweighted closed form
def _small_sample(seed: int = 3, n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(0, 8, n), "sex": rng.integers(0, 2, n),
                         "region": rng.integers(0, 5, n), "w": rng.uniform(5, 50, n)})


def test_closed_form_without_weights_warns_and_says_so_in_the_summary():
    frame = _small_sample()
    md = Microdata(frame, keys=["age", "sex", "region"])
    with pytest.warns(MicrodataWarning) as caught:
        res = assess_closed_form(md)
    messages = [str(w.message) for w in caught if issubclass(w.category, MicrodataWarning)]
    assert messages == [CLOSED_FORM_NO_WEIGHTS_NOTE]
    assert "whole population" in CLOSED_FORM_NO_WEIGHTS_NOTE
    assert "weight=" in CLOSED_FORM_NO_WEIGHTS_NOTE  # the fix, in Python's spelling
    assert res.summary["warnings"] == [CLOSED_FORM_NO_WEIGHTS_NOTE]
    # what the sentence says: F_k = f_k, every sample unique has risk 1, ER = cells
    assert res.summary["expected_reidentifications"] == pytest.approx(res.summary["n_cells"])
    assert (res.records.loc[res.records.fk == 1, "risk"] == 1).all()
    # the warning points at the caller's line, not into the package
    assert caught[0].filename == __file__


@pytest.mark.parametrize("md_kwargs", [{"weight": "w"}, {"sampling_fraction": 0.1},
                                       {"sampling_fraction": 1}])
def test_closed_form_with_weights_or_a_sampling_fraction_does_not_warn(md_kwargs):
    frame = _small_sample()
    md = Microdata(frame, keys=["age", "sex", "region"], **md_kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MicrodataWarning)
        res = assess_closed_form(md)
    assert "warnings" not in res.summary


def test_a_census_declared_with_sampling_fraction_one_gives_the_same_numbers():
    frame = _small_sample()
    with pytest.warns(MicrodataWarning):
        bare = assess_closed_form(Microdata(frame, keys=["age", "sex", "region"]))
    census = assess_closed_form(Microdata(frame, keys=["age", "sex", "region"],
                                          sampling_fraction=1))
    np.testing.assert_array_equal(bare.records["risk"], census.records["risk"])


def test_both_caveats_are_kept_together():
    # weights below 1 summing below a cell's count: that caveat still comes, now in a list
    # that may hold the no-weights one too (here it does not: the file has weights)
    frame = _small_sample()
    frame["w"] = 0.5
    md = Microdata(frame, keys=["age", "sex", "region"], weight="w",
                   allow_weights_below_one=True)
    res = assess_closed_form(md)
    assert len(res.summary["warnings"]) == 1
    assert "weights summing below their sample count" in res.summary["warnings"][0]


def test_thresholds_as_numpy_or_pandas():
    frame = pd.DataFrame({"a": [1, 2, 2], "b": [1, 1, 2]})
    expected = risky_cells(frame, ["a", "b"], (2, 1))
    for th in (np.array([2, 1]), pd.Series([2.0, 1.0]), [np.int64(2), 1.0]):
        pd.testing.assert_frame_equal(risky_cells(frame, ["a", "b"], th), expected)
    # a 0-d array is one number for every dimension
    assert risky_cells(frame, ["a", "b"], np.array(2), max_dim=2)["threshold"].tolist() == [
        2, 2, 2]
