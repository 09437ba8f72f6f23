"""read_microdata keeps the identity of values across formats (audit D, findings 4-8, 13, 16).

Small files are written to ``tmp_path`` with pandas and pyreadstat; each test fails
on the reader as it was before the fix.
"""

from __future__ import annotations

import pandas as pd
import pyreadstat
import pytest

from sdcbayes.exceptions import DataError
from sdcbayes.microdata import Microdata, read_microdata, resolve_columns


def _write(path, text: str, encoding: str = "utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


# ---- finding 4: leading zeros ------------------------------------------------------


def test_csv_codes_with_and_without_leading_zeros_stay_distinct(tmp_path):
    f = _write(tmp_path / "d.csv", "k,w\n012,10\n12,10\n007,10\n7,10\n")
    got = read_microdata(f)
    assert got["k"].tolist() == ["012", "12", "007", "7"]
    assert got["w"].dtype == "int64"  # the weight is still a number
    assert Microdata(got, ["k"], weight="w").cells.n_sample_uniques == 4


def test_csv_zero_padded_codes_alone_become_numbers(tmp_path):
    f = _write(tmp_path / "d.csv", "k,w\n01,10.5\n02,3\n12,\n")
    got = read_microdata(f)
    assert got["k"].dtype == "int64" and got["k"].tolist() == [1, 2, 12]
    assert got["w"].dtype == "float64" and got["w"].isna().tolist() == [False, False, True]


def test_csv_ordinary_numbers_keep_their_types(tmp_path):
    f = _write(tmp_path / "d.csv", "a,b,c,t\n1,1.5,1,x\n2,2,,y\n")
    got = read_microdata(f)
    assert got["a"].dtype == "int64"
    assert got["b"].dtype == "float64" and got["c"].dtype == "float64"
    assert got["t"].tolist() == ["x", "y"]


# ---- finding 5: missing tokens -----------------------------------------------------


def test_csv_reads_none_null_na_slash_as_levels(tmp_path):
    f = _write(tmp_path / "d.csv", "k\nNone\nNULL\nn/a\nN/A\nZA\n")
    assert read_microdata(f)["k"].tolist() == ["None", "NULL", "n/a", "N/A", "ZA"]


def test_csv_narrow_missing_tokens(tmp_path):
    f = _write(tmp_path / "d.csv", "k,x\nNA,1\n#N/A,2\n,3\nNaN,4\nZA,5\n")
    assert read_microdata(f)["k"].isna().tolist() == [True, True, True, True, False]


def test_csv_na_values_adds_markers(tmp_path):
    f = _write(tmp_path / "d.csv", "k,x\n-9,a\n3,NULL\n4,b\n")
    got = read_microdata(f, na_values=["-9", "NULL"])
    assert got["k"].isna().tolist() == [True, False, False]
    assert got["x"].isna().tolist() == [False, True, False]


def test_csv_lone_dot_in_a_numeric_column_is_missing(tmp_path):
    f = _write(tmp_path / "d.csv", "k,t\n1,.\n.,a\n2,b\n")
    got = read_microdata(f)
    assert got["k"].dtype == "float64" and got["k"].isna().tolist() == [False, True, False]
    assert got["t"].tolist() == [".", "a", "b"]  # a text column keeps its "."


# ---- finding 6: blanks around text values ------------------------------------------


def test_blanks_around_text_are_stripped_in_every_format(tmp_path):
    values = ["a", "a ", " a", "b ", "b", "  "]
    df = pd.DataFrame({"k": values, "w": 1.0})
    df.to_csv(tmp_path / "d.csv", index=False)
    df.to_parquet(tmp_path / "d.parquet", index=False)
    pyreadstat.write_dta(df, str(tmp_path / "d.dta"))
    pyreadstat.write_sav(df, str(tmp_path / "d.sav"))
    want = ["a", "a", "a", "b", "b", None]
    for ext in ("csv", "parquet", "dta", "sav"):
        got = read_microdata(tmp_path / f"d.{ext}")["k"]
        assert [None if pd.isna(v) else v for v in got] == want, ext


def test_parquet_categories_are_stripped(tmp_path):
    df = pd.DataFrame({"k": pd.Categorical(["a", "a ", "b"])})
    df.to_parquet(tmp_path / "d.parquet", index=False)
    got = read_microdata(tmp_path / "d.parquet")["k"]
    assert list(got.cat.categories) == ["a", "b"] and got.tolist() == ["a", "a", "b"]


def test_value_labels_are_stripped(tmp_path):
    df = pd.DataFrame({"k": [1.0, 2.0]})
    pyreadstat.write_dta(df, str(tmp_path / "d.dta"),
                         variable_value_labels={"k": {1: " urban", 2: "rural "}})
    got = read_microdata(tmp_path / "d.dta")["k"]
    assert list(got.cat.categories) == ["urban", "rural"]


# ---- finding 7: labels on user-missing codes -----------------------------------------


def test_spss_label_on_a_user_missing_code_is_no_category(tmp_path):
    df = pd.DataFrame({"water": [1.0, 2.0, 99.0, 1.0]})
    pyreadstat.write_sav(df, str(tmp_path / "d.sav"),
                         variable_value_labels={"water": {1: "pipe", 2: "well", 99: "No answer"}},
                         missing_ranges={"water": [99.0]})
    got = read_microdata(tmp_path / "d.sav")["water"]
    assert list(got.cat.categories) == ["pipe", "well"]
    assert got.isna().tolist() == [False, False, True, False]


# ---- finding 8: shared labels ------------------------------------------------------------


@pytest.mark.parametrize("ext", [".sav", ".dta"])
def test_codes_sharing_a_label_stay_distinct(tmp_path, ext):
    df = pd.DataFrame({"occ": [1.0, 8.0, 9.0, 9.0]})
    writer = pyreadstat.write_sav if ext == ".sav" else pyreadstat.write_dta
    writer(df, str(tmp_path / f"d{ext}"),
           variable_value_labels={"occ": {1: "clerk", 8: "other", 9: "other"}})
    got = read_microdata(tmp_path / f"d{ext}")["occ"]
    assert list(got.cat.categories) == ["clerk", "other [8]", "other [9]"]
    assert got.tolist() == ["clerk", "other [8]", "other [9]", "other [9]"]
    # each category's code in the file, for a writer that puts the codes back
    codes = read_microdata(tmp_path / f"d{ext}").attrs["value_codes"]["occ"]
    assert codes == {"clerk": 1, "other [8]": 8, "other [9]": 9}


# ---- finding 13: header names with blanks -------------------------------------------------


def test_a_header_with_blanks_is_found_without_them(tmp_path):
    f = _write(tmp_path / "d.csv", "age ,sex,w\n1,2,3\n")
    frame = read_microdata(f)
    assert list(frame.columns) == ["age ", "sex", "w"]  # written back as they were
    assert resolve_columns(frame, ["age", "sex"]) == ["age ", "sex"]


def test_two_headers_equal_but_for_blanks_are_ambiguous():
    frame = pd.DataFrame({"age ": [1], " age": [2]})
    with pytest.raises(DataError, match="matches several columns once blanks are ignored"):
        resolve_columns(frame, ["age"])


# ---- finding 16: semicolons with decimal commas, Latin-1 ------------------------------------


def test_semicolon_csv_reads_decimal_commas(tmp_path):
    f = _write(tmp_path / "d.csv", "k;w;v\n1;10,5;2.5\n2;3;1\n")
    got = read_microdata(f)
    assert got["w"].tolist() == [10.5, 3.0]
    assert got["v"].tolist() == [2.5, 1.0]  # dot decimals still read


def test_comma_csv_keeps_commas_in_quoted_text(tmp_path):
    f = _write(tmp_path / "d.csv", 'k,w\n"10,5",1\n"3",2\n')
    assert read_microdata(f)["k"].tolist() == ["10,5", "3"]


def test_latin1_csv_says_save_as_utf8(tmp_path):
    f = _write(tmp_path / "d.csv", "k,w\nJosé,1\n", encoding="latin-1")
    with pytest.raises(DataError, match=r"not UTF-8 text .*save it as UTF-8"):
        read_microdata(f)
