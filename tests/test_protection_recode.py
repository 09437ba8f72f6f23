"""Global recoding (seed 001, section 4.1.1): merge levels, bands, top/bottom coding."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.protection import band, bottom_code, merge_levels, top_code


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "age": [18, 25, 30, 39, 40, 64, 65, 90, np.nan],
            "educ": ["primary", "lower sec", "upper sec", "university", "phd",
                     "primary", "lower sec", None, "phd"],
            "region": pd.Categorical(list("ABCDABCDA"), categories=list("ABCDE")),
            "income": [0, 100, 2000, 3000, 5000, 7000, 9000, 250000, 400000],
        }
    )


def test_merge_levels_maps_as_specified_and_logs(frame):
    before = frame.copy(deep=True)
    mapping = {"lower sec": "secondary", "upper sec": "secondary", "phd": "tertiary",
               "university": "tertiary"}
    res = merge_levels(frame, "educ", mapping)
    pd.testing.assert_frame_equal(frame, before)
    expected = ["primary", "secondary", "secondary", "tertiary", "tertiary", "primary",
                "secondary", None, "tertiary"]
    got = res.frame["educ"]
    assert got.isna().tolist() == [v is None for v in expected]
    assert got.dropna().tolist() == [v for v in expected if v is not None]
    assert res.log.set_index("original")["n_records"].to_dict() == {
        "lower sec": 2, "upper sec": 1, "phd": 2, "university": 1}
    assert res.log.set_index("original")["recoded"].to_dict() == mapping
    assert res.summary["n_changed"] == 6
    assert (res.summary["levels_before"], res.summary["levels_after"]) == (5, 3)
    pd.testing.assert_series_equal(res.frame["age"], frame["age"])


def test_merge_levels_categorical_keeps_categorical(frame):
    res = merge_levels(frame, "region", {"C": "CD", "D": "CD", "E": "CD"})
    out = res.frame["region"]
    assert isinstance(out.dtype, pd.CategoricalDtype)
    assert list(out.cat.categories) == ["A", "B", "CD"]
    assert out.astype(str).tolist() == ["A", "B", "CD", "CD", "A", "B", "CD", "CD", "A"]
    assert res.summary["n_changed"] == 4


def test_merge_levels_unknown_level_is_an_input_error(frame):
    with pytest.raises(InputError, match="do not occur"):
        merge_levels(frame, "educ", {"Primary": "basic"})


def test_band_boundaries(frame):
    res = band(frame, "age", [0, 20, 40, 65, 120])
    assert list(res.frame["age"].cat.categories) == ["[0, 20)", "[20, 40)", "[40, 65)", "[65, 120]"]
    # 39 -> [20, 40), 40 -> [40, 65), 64 -> [40, 65), 65 -> [65, 120]; NaN stays missing.
    assert res.frame["age"].astype(object).tolist()[:8] == [
        "[0, 20)", "[20, 40)", "[20, 40)", "[20, 40)", "[40, 65)", "[40, 65)", "[65, 120]",
        "[65, 120]"]
    assert pd.isna(res.frame["age"].iloc[8])
    assert res.log["n_records"].tolist() == [1, 3, 2, 2]
    right = band(frame, "age", [18, 40, 90], right=True, labels=["young", "old"])
    assert right.frame["age"].astype(object).tolist()[:8] == [
        "young", "young", "young", "young", "young", "old", "old", "old"]
    with pytest.raises(InputError, match="outside the breaks"):
        band(frame, "age", [20, 100])
    with pytest.raises(InputError, match="increasing"):
        band(frame, "age", [0, 50, 40])


def test_top_and_bottom_coding(frame):
    before = frame.copy(deep=True)
    res = top_code(frame, "income", 10000)
    pd.testing.assert_frame_equal(frame, before)
    assert res.frame["income"].tolist() == [0, 100, 2000, 3000, 5000, 7000, 9000, 10000, 10000]
    assert res.log["record"].tolist() == [7, 8]
    assert res.log["original"].tolist() == [250000, 400000]
    assert res.summary["n_changed"] == 2
    res2 = bottom_code(frame, "income", 1000, replacement=500)
    assert res2.frame["income"].tolist()[:3] == [500, 500, 2000]
    assert res2.summary["n_changed"] == 2
    assert pd.api.types.is_integer_dtype(res2.frame["income"].dtype)
    with pytest.raises(InputError, match="not numeric"):
        top_code(frame, "educ", 3)


@pytest.mark.parametrize(
    ("values", "dtype", "mapping", "expected"),
    [
        ([1, 7, None, 7, 2], "Int64", {7: 6}, [1, 6, None, 6, 2]),
        (["a", "b", None, "a", "c"], "string", {"a": "b"}, ["b", "b", None, "b", "c"]),
    ],
    ids=["Int64", "string"],
)
def test_merge_levels_on_nullable_columns_keeps_dtype_and_missing(values, dtype, mapping,
                                                                  expected):
    # suppression turns integer keys into Int64 (pd.NA); a recode after it must work
    df = pd.DataFrame({"x": pd.array(values, dtype=dtype), "y": range(5)})
    before = df.copy(deep=True)
    res = merge_levels(df, "x", mapping)
    pd.testing.assert_frame_equal(df, before)
    got = res.frame["x"]
    assert got.dtype == df["x"].dtype
    assert got.isna().tolist() == [v is None for v in expected]
    assert got.dropna().tolist() == [v for v in expected if v is not None]
    assert res.summary["n_changed"] == 2
    pd.testing.assert_series_equal(res.frame["y"], df["y"])


def test_merge_levels_keeps_integer_dtype_unless_new_levels_need_another():
    df = pd.DataFrame({"x": np.array([1, 2, 3, 1], dtype=np.int64)})
    res = merge_levels(df, "x", {1: 2})
    assert res.frame["x"].dtype == np.int64  # Series.map left NaN and gave float64
    assert res.frame["x"].tolist() == [2, 2, 3, 2]
    swapped = merge_levels(df, "x", {1: 2, 2: 1})  # simultaneous, not chained
    assert swapped.frame["x"].tolist() == [2, 1, 3, 2]
    text = merge_levels(df, "x", {1: "low", 2: "low"})
    assert text.frame["x"].tolist() == ["low", "low", 3, "low"]
    assert text.frame["x"].dtype == object
    nullable = pd.DataFrame({"x": pd.array([1, 2, None, 1], dtype="Int64")})
    half = merge_levels(nullable, "x", {1: 2.5})
    assert half.frame["x"].dtype == "Float64"
    assert half.frame["x"].isna().tolist() == [False, False, True, False]
    assert half.frame["x"].dropna().tolist() == [2.5, 2.0, 2.5]
    labelled = merge_levels(nullable, "x", {1: "one"})
    assert labelled.frame["x"].dtype == object
    assert labelled.frame["x"].dropna().tolist() == ["one", 2, "one"]
    assert pd.isna(labelled.frame["x"].iloc[2])
    with pytest.raises(InputError, match="single values"):
        merge_levels(df, "x", {1: [2]})


# --------------------------------------------------------------------------- audit G, finding 7


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"threshold": "60"}, "threshold='60' must be a finite number"),
        ({"threshold": np.inf}, "threshold=inf must be a finite number"),
        ({"threshold": np.nan}, "threshold=nan must be a finite number"),
        ({"threshold": True}, "threshold=True must be a finite number"),
        ({"threshold": 60, "replacement": "90+"}, "replacement='90+' must be a finite number"),
        ({"threshold": 60, "replacement": np.nan}, "replacement=nan must be a finite number"),
        ({"threshold": 60, "replacement": [1]}, "replacement=[1] must be a finite number"),
        ({"threshold": 60, "replacement": True}, "replacement=True must be a finite number"),
    ],
)
@pytest.mark.parametrize("fn", [top_code, bottom_code])
def test_threshold_and_replacement_must_be_finite_numbers(frame, fn, kwargs, fragment):
    before = frame.copy(deep=True)
    with pytest.raises(InputError, match=re.escape(fragment)):
        fn(frame, "age", **kwargs)
    pd.testing.assert_frame_equal(frame, before)


@pytest.mark.parametrize("dtype", ["bool", "boolean"])
def test_top_and_bottom_coding_refuse_boolean_columns(dtype):
    df = pd.DataFrame({"flag": pd.array([True, False, True], dtype=dtype)})
    for fn in (top_code, bottom_code):
        with pytest.raises(InputError, match="'flag' is boolean"):
            fn(df, "flag", 0.5)


def test_top_code_numpy_scalars_and_fractional_replacement_on_int(frame):
    res = top_code(frame, "income", np.int64(10000), replacement=np.float64(12500.5))
    assert res.frame["income"].tolist()[-2:] == [12500.5, 12500.5]
    assert res.summary["replacement"] == 12500.5


@pytest.mark.parametrize("missing", [np.nan, None, pd.NA])
def test_merge_levels_to_missing_on_a_categorical_blanks_the_level(frame, missing):
    # documented: a missing new level makes the old level's values missing
    before = frame.copy(deep=True)
    res = merge_levels(frame, "region", {"A": missing, "B": "C"})
    pd.testing.assert_frame_equal(frame, before)
    out = res.frame["region"]
    assert isinstance(out.dtype, pd.CategoricalDtype)
    assert list(out.cat.categories) == ["C", "D", "E"]
    np.testing.assert_array_equal(out.isna().to_numpy(), (frame["region"] == "A").to_numpy())
    assert out.dropna().tolist() == ["C", "C", "D", "C", "C", "D"]
    assert res.summary["n_changed"] == 5  # 3 A's blanked, 2 B's merged
    assert res.summary["levels_after"] == 2
