"""Audit Z6: silent misreads of CSV files by :func:`sdcbayes.microdata.read_microdata`.

1. Codes that are different texts but one decimal number (``05.1``/``05.10``; ``1,1``/
   ``1,10`` in a semicolon file) became one float level; Parquet and SPSS keep them apart.
2. In a semicolon file ``2.500`` (a thousands separator) was read as 2.5, next to ``12,5``
   read as 12.5: one column with two decimal marks.
3. ``na_values=-9`` missed ``-9.0`` (pandas' float column) in a CSV, not in Parquet.
4. Integers beyond 2**53 with a missing value became float64, merging distinct ids.
6. A Parquet file with a repeated column name gave pyarrow's internal message.
7. A weight that ``na_values`` made missing was reported without saying why, and
   ``record 1`` did not say it counts from 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcbayes import Microdata, read_microdata
from sdcbayes.exceptions import DataError
from sdcbayes.microdata import _read_header


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _column(tmp_path, values, sep=",", **kw):
    path = _write(tmp_path, "c.csv", "x" + sep + "y\n" + "".join(f"{v}{sep}1\n" for v in values))
    return read_microdata(path, **kw)["x"]


# ----------------------------------------------------------------------------------- F1
def test_decimal_codes_keep_their_identity_as_in_parquet(tmp_path):
    frame = pd.DataFrame({"nace": ["05.1", "05.10", "05.10", "08.11", "08.110", "08.11"],
                          "sex": [1, 1, 1, 2, 2, 2], "w": [10.0, 12, 9, 11, 10, 13]})
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet")
    csv = read_microdata(tmp_path / "d.csv")
    pq = read_microdata(tmp_path / "d.parquet")
    assert csv["nace"].tolist() == pq["nace"].tolist() == frame["nace"].tolist()
    cells = [Microdata(f, keys=["nace", "sex"], weight="w").cells for f in (csv, pq)]
    assert [len(c.table) for c in cells] == [4, 4]
    assert [c.n_sample_uniques for c in cells] == [2, 2]  # was 2 cells, 0 uniques in CSV


@pytest.mark.parametrize("values,sep", [
    (["1,1", "1,10", "2,5"], ";"),         # decimal commas: 1,1 and 1,10 are 1.1
    (["5.1", "5.10", "7.25"], ","),        # a trailing zero
    (["6", "6.0", "7.5"], ","),            # an integer text and its float text
    ([".5", "0.5", "1.5"], ","),           # a decimal mark first
    (["5.", "5", "1.5"], ","),             # a decimal mark last
    (["-0.0", "0.0", "1.5"], ","),         # a negative zero
    (["1e3", "1000", "1.5"], ","),         # an exponent
])
def test_two_texts_of_one_number_keep_the_column_text(tmp_path, values, sep):
    assert _column(tmp_path, values, sep=sep).tolist() == values


def test_canonical_decimals_still_skip_the_distinct_count(tmp_path, monkeypatch):
    """pandas' float columns ("6.0", "-9.0", "2.5") are decided by regex alone."""
    import pyarrow.compute as pc

    def refuse(*a, **kw):
        raise AssertionError("count_distinct called")

    monkeypatch.setattr(pc, "count_distinct", refuse)
    col = _column(tmp_path, ["6.0", "-9.0", "", "2.5", "10.25"])
    assert col.dtype == np.float64
    assert col.tolist()[:2] == [6.0, -9.0] and col.tolist()[3:] == [2.5, 10.25]
    col = _column(tmp_path, ["1,5", "2", "10,25"], sep=";")
    assert col.tolist() == [1.5, 2.0, 10.25]


def test_distinct_decimals_still_become_numbers(tmp_path):
    col = _column(tmp_path, ["05.1", "5.2", "7.10"])  # three numbers, no two alike
    assert col.dtype == np.float64 and col.tolist() == [5.1, 5.2, 7.1]


# ----------------------------------------------------------------------------------- F2
def test_semicolon_column_with_both_decimal_marks_is_not_parsed(tmp_path):
    path = _write(tmp_path, "s.csv", "age;sex;w\n1;1;2.500\n1;1;1.250\n1;2;987\n"
                                      "2;1;12,5\n2;2;3.000\n")
    frame = read_microdata(path)
    assert frame["w"].tolist() == ["2.500", "1.250", "987", "12,5", "3.000"]  # was 2.5, ..., 12.5
    with pytest.raises(DataError) as err:
        Microdata(frame, keys=["age", "sex"], weight="w")
    msg = str(err.value)
    assert "'w'" in msg and "'12,5'" in msg and "'2.500'" in msg, msg
    assert "thousands separators are not read" in msg and "one decimal mark" in msg, msg


def test_semicolon_key_with_both_marks_keeps_its_codes(tmp_path):
    assert _column(tmp_path, ["1.5", "1,5", "2"], sep=";").tolist() == ["1.5", "1,5", "2"]
    assert _column(tmp_path, ["1,5", "2,25"], sep=";").tolist() == [1.5, 2.25]  # still numbers


# ----------------------------------------------------------------------------------- F3
def test_na_values_match_pandas_float_text_as_in_parquet(tmp_path):
    rng = np.random.default_rng(5)
    n = 200
    frame = pd.DataFrame({"age": rng.integers(1, 8, n).astype(float),
                          "sex": rng.integers(1, 3, n).astype(float),
                          "w": np.round(rng.uniform(5, 50, n), 1)})
    frame.loc[rng.choice(n, 20, replace=False), "age"] = -9
    frame.loc[3, "sex"] = np.nan
    frame.to_csv(tmp_path / "na.csv", index=False)  # writes -9.0
    frame.to_parquet(tmp_path / "na.parquet")
    assert "-9.0" in (tmp_path / "na.csv").read_text()
    csv = read_microdata(tmp_path / "na.csv", na_values=-9)
    pq = read_microdata(tmp_path / "na.parquet", na_values=-9)
    assert csv["age"].isna().sum() == pq["age"].isna().sum() == 20  # was 0 in the CSV
    pd.testing.assert_series_equal(csv["age"], pq["age"], check_dtype=False)


def test_na_values_numbers_in_integer_and_text_columns(tmp_path):
    col = _column(tmp_path, ["1", "-9", "3", "99"], na_values=["99"])
    assert col.isna().tolist() == [False, False, False, True]
    assert col.dropna().tolist() == [1.0, -9.0, 3.0]
    col = _column(tmp_path, ["1", "-9.0", "3.5"], na_values=[-9])
    assert col.isna().tolist() == [False, True, False]
    col = _column(tmp_path, ["a", "-9.0", "-9"], na_values=[-9])  # text: matched by text
    assert col.tolist()[:2] == ["a", "-9.0"] and pd.isna(col.iloc[2])


# ----------------------------------------------------------------------------------- F4
def test_big_integers_with_a_gap_stay_exact(tmp_path):
    path = _write(tmp_path, "b.csv", "id,sex,w\n9007199254740993,1,10\n9007199254740992,1,10\n"
                                     "9007199254740994,1,10\n,2,10\n")
    col = read_microdata(path)["id"]
    assert col.dtype == "Int64"
    assert col.tolist()[:3] == [9007199254740993, 9007199254740992, 9007199254740994]
    assert pd.isna(col.iloc[3]) and col.nunique() == 3  # was 2 (float64)
    frame = read_microdata(path)
    md = Microdata(frame, keys=["id", "sex"], weight="w", missing="category")
    assert (len(md.cells.table), md.cells.n_sample_uniques) == (4, 4)


def test_small_integers_with_a_gap_stay_float(tmp_path):
    col = _column(tmp_path, ["1", "", "3"])
    assert col.dtype == np.float64 and col.tolist()[::2] == [1.0, 3.0]


# ----------------------------------------------------------------------------------- F6
def test_parquet_repeated_column_name_is_refused_plainly(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4]), pa.array([1.0, 2.0])],
                                 names=["region", "region", "w"])
    pq.write_table(table, tmp_path / "dup.parquet")
    for read in (read_microdata, _read_header):
        with pytest.raises(DataError, match=r"'region' occur more than once in 'dup.parquet'; "
                                             r"rename the duplicates"):
            read(tmp_path / "dup.parquet")


# ----------------------------------------------------------------------------------- F7
def test_weight_made_missing_by_na_values_says_so(tmp_path):
    path = _write(tmp_path, "w.csv", "region,w\n1,10\n2,99\n1,12\n")
    frame = read_microdata(path, na_values=[99])
    with pytest.raises(DataError) as err:
        Microdata(frame, keys=["region"], weight="w")
    msg = str(err.value)
    assert "at record 2 (line 3 of the file)" in msg, msg
    assert "na_values (--na-values) 99" in msg, msg
    frame = read_microdata(tmp_path / "w.csv")
    frame.loc[1, "w"] = np.nan
    with pytest.raises(DataError) as err:  # no na_values: no word of them
        Microdata(frame, keys=["region"], weight="w")
    assert "na_values" not in str(err.value)


def test_semicolon_file_with_a_comma_in_a_quoted_name(tmp_path):
    """A quoted header name holding a comma does not make a ';' file comma-separated."""
    from sdcbayes.microdata import read_microdata

    path = tmp_path / "semi.csv"
    path.write_text('"inc, net";k;w\n1;a;10\n2;b;20\n', encoding="utf-8")
    frame = read_microdata(path)
    assert list(frame.columns) == ["inc, net", "k", "w"]
    assert frame["w"].tolist() == [10, 20]
