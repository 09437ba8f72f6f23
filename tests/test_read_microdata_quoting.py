"""CSV reading tells a quoted ``"NA"`` (a level) from an unquoted NA (missing).

R's ``write.csv`` quotes text and writes a missing value as a bare ``NA``, so a
country code ``NA`` (Namibia) arrives as ``"NA"``. pandas cannot tell the two
apart; read_microdata reads CSV with pyarrow, which can, and protect writes such
a level back quoted. Each test fails on the pandas-based reader it replaced.
"""

from __future__ import annotations

import gzip

import pandas as pd
import pytest
from clitools import run_in_process

from sdcbayes.exceptions import DataError
from sdcbayes.microdata import Microdata, read_microdata


def _write(path, text: str):
    path.write_bytes(text.encode("utf-8"))
    return path


def test_quoted_na_is_a_level_and_bare_na_is_missing(tmp_path):
    f = _write(tmp_path / "d.csv", 'k,x\n"NA",1\nNA,2\n" NA",3\n NA ,4\n"",5\nZA,6\n')
    got = read_microdata(f)
    assert got["k"].tolist()[0] == "NA"
    # bare NA, padded NA (quoted or not: hand-written files) and a quoted blank are missing
    assert got["k"].isna().tolist() == [False, True, True, True, True, False]
    assert got["x"].tolist() == [1, 2, 3, 4, 5, 6]


def test_r_export_keeps_namibia_as_its_own_cell(tmp_path):
    # as R's write.csv(df, row.names=FALSE) writes it: text quoted, NA bare
    f = _write(tmp_path / "r.csv", '"country","sex","w"\n"NA","m",10\n"ZA","m",10\nNA,"f",10\n')
    md = Microdata(read_microdata(f), ["country", "sex"], weight="w")
    assert md.cells.n_sample_uniques == 3  # Namibia, South Africa, and (missing, f)


def test_declared_missing_texts_count_quoted_or_not(tmp_path):
    f = _write(tmp_path / "d.csv", 'k,x\n"-9",1\n-9,2\n3,3\n"NULL",4\n')
    got = read_microdata(f, na_values=["-9", "NULL"])
    assert got["k"].isna().tolist() == [True, True, False, True]


def test_gzip_csv_keeps_quoting_too(tmp_path):
    f = tmp_path / "d.csv.gz"
    with gzip.open(f, "wt", encoding="utf-8") as fh:
        fh.write('a,b\n"NA",1\nNA,2\n')
    got = read_microdata(f)
    assert got["a"].tolist()[0] == "NA" and got["a"].isna().tolist() == [False, True]


@pytest.mark.parametrize(("text", "dtype", "values"), [
    ("k\n0x10\n12\n", "str", ["0x10", "12"]),  # arrow's int cast takes hex; it stays text
    ("k\n+7\n8\n", "int64", [7, 8]),
    ("k\n3.0\n4\n", "float64", [3.0, 4.0]),
    ("k\n1e3\n4\n", "float64", [1000.0, 4.0]),
    ("k\n9007199254740993\n1\n", "int64", [9007199254740993, 1]),  # beyond 2**53: exact
    ("k\n\"NaN\"\n1\n", "str", ["NaN", "1"]),  # a quoted NaN is a level, so the column is text
])
def test_column_types(tmp_path, text, dtype, values):
    got = read_microdata(_write(tmp_path / "d.csv", text))["k"]
    if dtype == "str":  # text: pandas 3's str dtype, object (of str) before it
        assert pd.api.types.is_string_dtype(got.dtype), got.dtype
        assert all(isinstance(v, str) for v in got), got.tolist()
        assert got.tolist() == values
    else:
        assert str(got.dtype) == dtype and got.tolist() == values


def test_header_quirks_match_pandas_names(tmp_path):
    f = _write(tmp_path / "d.csv", "\na,b,\n\n1,2,3\n")  # blank lines and a blank name
    got = read_microdata(f)
    assert list(got.columns) == ["a", "b", "Unnamed: 2"]
    assert got.iloc[0].tolist() == [1, 2, 3]
    assert read_microdata(f, columns=["b"])["b"].tolist() == [2]
    # a repeated name is refused (audit R, finding 3b: pandas renamed it a.1 silently)
    with pytest.raises(DataError, match="'a' occur more than once"):
        read_microdata(_write(tmp_path / "e.csv", "\na,a,\n\n1,2,3\n"))


def test_quoted_newline_stays_in_its_field(tmp_path):
    got = read_microdata(_write(tmp_path / "d.csv", 'a,b\n"x\ny",1\nz,2\n'))
    assert got["a"].tolist() == ["x\ny", "z"] and got["b"].tolist() == [1, 2]


@pytest.mark.parametrize("text", ["a,b,c\n1,2,3\n4,5\n", "a,b\n1,2,3\n4,5,6\n"])
def test_a_line_with_the_wrong_number_of_fields_is_an_error(tmp_path, text):
    # pandas filled a short line with missing values, and took an extra first
    # field of every line for the row index
    # the line is named by its number (audit R, finding 8)
    with pytest.raises(DataError, match=r"line [23] has [23] field\(s\), the header has"):
        read_microdata(_write(tmp_path / "d.csv", text))


def test_non_utf8_after_the_header_gets_the_hint(tmp_path):
    f = tmp_path / "d.csv"
    f.write_bytes(b"a\nx\n" + "café\n".encode("latin-1"))
    with pytest.raises(DataError, match="not UTF-8 text.*save it as UTF-8"):
        read_microdata(f)


def test_protect_writes_a_quoted_na_level_back_quoted(tmp_path, capsys):
    rows = ["country,age,w"] + [f'"NA",{a},10' for a in (1, 1, 2, 2)] + [
        f"ZA,{a},10" for a in (1, 1, 3)] + ["NA,2,10", "NA,2,10"]
    src = _write(tmp_path / "in.csv", "\n".join(rows) + "\n")
    out = tmp_path / "out"
    res = run_in_process(capsys, "protect", str(src), "--keys", "country,age",
                         "--weight", "w", "--suppress-k", "2", "--out", str(out))
    assert res.returncode == 0, res.stderr
    before, after = read_microdata(src), read_microdata(out / "protected.csv")
    assert (after["country"] == "NA").sum() == (before["country"] == "NA").sum() == 4
    assert after["country"].isna().sum() == before["country"].isna().sum() == 2
    text = (out / "protected.csv").read_text().splitlines()
    assert text[1].startswith('"NA",') and text[8].startswith("NA,")


def test_protect_output_without_such_levels_is_written_by_pandas_as_before(tmp_path, capsys):
    # the missing k matches b, so nothing is suppressed: the file comes back as it was
    src = _write(tmp_path / "in.csv", "k,w\na,1\na,1\nb,1\nNA,1\n")
    out = tmp_path / "out"
    res = run_in_process(capsys, "protect", str(src), "--keys", "k", "--weight", "w",
                         "--suppress-k", "2", "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert (out / "protected.csv").read_text() == src.read_text()
