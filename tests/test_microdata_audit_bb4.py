"""Data in: the CSV reader and Microdata (audit BB4, findings 1, 3, 4, 5 and the weight sum).

Small files are written to ``tmp_path``; each test fails on the code as it was before
the fix (e1fe75d).
"""

from __future__ import annotations

import gzip
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from clitools import run_cli

from sdcbayes.exceptions import DataError
from sdcbayes.microdata import (
    Microdata,
    MicrodataWarning,
    _csv_separator,
    _numbers_written_two_ways,
    _read_header,
    read_microdata,
)


def _write(path, text: str, encoding: str = "utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught if issubclass(w.category, MicrodataWarning)]


# ---- finding 1: one number written as two texts in a key --------------------------------


def test_a_key_writing_one_number_two_ways_is_kept_split_and_warned(tmp_path):
    # two exports concatenated: an int column ("1") and pandas' float one ("1.0")
    f = _write(tmp_path / "d.csv", "k,g,w\n1,a,10\n1.0,a,10\n2,b,10\n2.0,b,10\n3,a,10\n")
    frame = read_microdata(f)
    assert frame["k"].tolist() == ["1", "1.0", "2", "2.0", "3"]  # documented: no merging
    md, notes = _caught(lambda: Microdata(frame, ["k", "g"], weight="w"))
    assert md.cells.n_cells == 5  # still the five texts
    assert len(notes) == 1
    assert notes[0].startswith("key 'k': '1' and '1.0' are different texts of one number "
                               "(and 1 more number written in two or more ways)")
    assert "recode '1.0' to '1'" in notes[0]


def test_zero_padded_and_plain_codes_are_warned_with_the_pair(tmp_path):
    f = _write(tmp_path / "d.csv", "k,w\n01,10\n1,10\n02,10\n")
    frame = read_microdata(f)
    _, notes = _caught(lambda: Microdata(frame, ["k"], weight="w"))
    assert len(notes) == 1 and "'1' and '01' are different texts of one number;" in notes[0]


def test_decimal_comma_texts_of_one_number_are_warned(tmp_path):
    f = _write(tmp_path / "d.csv", "k;w\n1,5;10\n1,50;10\n2;10\n")
    frame = read_microdata(f)
    assert frame["k"].tolist() == ["1,5", "1,50", "2"]
    _, notes = _caught(lambda: Microdata(frame, ["k"], weight="w"))
    assert len(notes) == 1 and "'1,5' and '1,50'" in notes[0]


def test_no_warning_for_non_keys_clean_keys_or_a_subset_without_the_pair(tmp_path):
    f = _write(tmp_path / "d.csv", "k,id,w\n1,7,10\n1,7.0,10\n2,8,10\n2.0,9,10\n")
    frame = read_microdata(f)
    assert set(frame.attrs["split_numbers"]) == {"k", "id"}
    # id is split too, but it is no key
    _, notes = _caught(lambda: Microdata(frame, ["k"], weight="w"))
    assert len(notes) == 1 and notes[0].startswith("key 'k': '2' and '2.0'")
    # the rows holding "2.0" left out: nothing left to warn about
    _, notes = _caught(lambda: Microdata(frame.iloc[:3], ["k"], weight="w"))
    assert notes == []
    clean = _write(tmp_path / "c.csv", "k,w\n1,10\n2,10\n2,10\n")
    assert "split_numbers" not in read_microdata(clean).attrs
    # a frame not read by read_microdata: its texts are the caller's choice
    _, notes = _caught(lambda: Microdata(pd.DataFrame({"k": ["1", "1.0"]}), ["k"]))
    assert notes == []


def test_the_columns_read_keep_only_their_split_marks(tmp_path):
    f = _write(tmp_path / "d.csv", "k,id,w\n1,7,10\n1.0,7.0,10\n")
    frame = read_microdata(f, columns=["k", "w"])
    assert frame.attrs["split_numbers"] == {"k": {"decimal_comma": False}}
    assert _numbers_written_two_ways(frame, ["k"])[0].startswith("key 'k': '1' and '1.0'")


def test_cli_prints_and_records_the_split_key_warning(tmp_path):
    _write(tmp_path / "d.csv", "k,g,w\n3,a,10\n3.0,a,10\n4,b,10\n")
    run = run_cli("assess", "d.csv", "--keys", "k,g", "--weight", "w", "--model",
                  "closed-form", "--out", "o", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "sdcbayes: warning: key 'k': '3' and '3.0' are different texts" in run.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert any("'3' and '3.0'" in w for w in summary["warnings"])
    assert summary["n_cells"] == 3


# ---- finding 3: a blank line or Excel's sep= line before the header ----------------------


@pytest.mark.parametrize("lead", ["\n", "\r\n\r\n", "   \n", "sep=;\n", "SEP=;\r\n", "\nsep=;\n"])
def test_semicolon_file_with_lines_before_the_header_reads_its_columns(tmp_path, lead):
    f = _write(tmp_path / "d.csv", lead + "a;b;w\n1;x;10,5\n2;y;10\n")
    assert list(_read_header(f).columns) == ["a", "b", "w"]
    got = read_microdata(f)
    assert list(got.columns) == ["a", "b", "w"]
    assert got["a"].tolist() == [1, 2] and got["w"].tolist() == [10.5, 10.0]
    assert read_microdata(f, columns=["b"])["b"].tolist() == ["x", "y"]
    assert _csv_separator(f) == ";"


def test_sep_line_sets_the_separator_even_when_the_header_has_commas(tmp_path):
    # the header name holds a comma; sep=; says the separator is ';'
    f = _write(tmp_path / "d.csv", "sep=;\nincome, net;k\n1,5;a\n2;b\n")
    got = read_microdata(f)
    assert list(got.columns) == ["income, net", "k"]
    assert got["income, net"].tolist() == [1.5, 2.0]


def test_sep_line_in_a_gzipped_and_a_bom_file(tmp_path):
    f = tmp_path / "d.csv.gz"
    with gzip.open(f, "wt", encoding="utf-8") as fh:
        fh.write("sep=|\na|w\nx|10\n")
    assert read_microdata(f).to_dict("list") == {"a": ["x"], "w": [10]}
    g = _write(tmp_path / "e.csv", "sep=;\na;w\nx;10\n", encoding="utf-8-sig")
    assert read_microdata(g).to_dict("list") == {"a": ["x"], "w": [10]}


def test_a_ragged_line_after_a_sep_line_is_named_by_its_file_line(tmp_path):
    f = _write(tmp_path / "d.csv", "sep=;\n\na;w\nx;10\ny;10;3\n")
    with pytest.raises(DataError, match=r"line 5 has 3 field\(s\), the header has 2"):
        read_microdata(f)


def test_cli_reads_a_semicolon_file_after_a_sep_line(tmp_path):
    _write(tmp_path / "d.csv", "sep=;\na;b;w\n1;x;10\n2;y;10\n")
    run = run_cli("assess", "d.csv", "--keys", "a,b", "--weight", "w", "--model",
                  "closed-form", "--out", "o", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["n_records"] == 2 and summary["n_cells"] == 2


# ---- finding 4: UTF-16 ------------------------------------------------------------------


@pytest.mark.parametrize("encoding, name", [("utf-16", "UTF-16"), ("utf-16-be", "UTF-16"),
                                            ("utf-32", "UTF-32")])
def test_utf16_file_is_refused_as_utf16_without_latin1_advice(tmp_path, encoding, name):
    text = "a,b,w\n1,x,10\n"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data  # with its byte-order mark
    f = tmp_path / "d.csv"
    f.write_bytes(data)
    for read in (read_microdata, _read_header):
        with pytest.raises(DataError) as err:
            read(f)
        msg = str(err.value)
        assert f"it is {name} text, not UTF-8" in msg
        assert "latin-1" not in msg and f"encoding='{name.lower()}'" in msg


def test_utf16_without_a_byte_order_mark_is_refused(tmp_path):
    f = tmp_path / "d.csv"
    f.write_bytes("a,b\n1,2\n".encode("utf-16-le"))
    with pytest.raises(DataError, match="it is UTF-16 or UTF-32 .*NUL bytes"):
        read_microdata(f)


def test_latin1_file_keeps_its_latin1_advice(tmp_path):
    f = tmp_path / "d.csv"
    f.write_bytes("a,w\nZürich,10\n".encode("latin-1"))
    with pytest.raises(DataError, match="not UTF-8 text .*encoding='latin-1'"):
        read_microdata(f)


# ---- finding 5: the census simulator's size ---------------------------------------------


def test_simulate_population_docstring_gives_the_size_it_simulates():
    from sdcbayes.datasets import census

    doc = census.simulate_population.__doc__
    assert "2.4 *" not in doc and "2.29 *" in doc
    # the expectation the docstring states, from the module's tables
    p_band = census._HEAD_AGE_BAND_P / census._HEAD_AGE_BAND_P.sum()
    e_child = 1 + np.arange(6) @ census._N_CHILDREN_P
    e_other = 1 + np.arange(4) @ census._N_OTHER_P
    size = np.array([1, 2, 2 + e_child, 1 + e_child, 1 + e_other])
    expected = 0.0
    for band, p in enumerate(p_band):
        lower = 18 if band == 0 else 15 + 5 * band
        width = 2 if band == 0 else 15 if band == p_band.size - 1 else 5
        for age in range(lower, lower + width):
            group = np.searchsorted(census._AGE_GROUP_EDGES, min(age, census.MAX_AGE),
                                    side="right") - 1
            expected += p / width * (census._HH_TYPE_P[group] @ size)
    assert expected == pytest.approx(2.2866, abs=5e-5)
    persons = len(census.simulate_population(40_000, seed=0))
    assert persons == 91_539 and abs(persons / 40_000 - 2.29) < 0.01


# ---- unranked: a weight sum beyond float64 ----------------------------------------------


def test_weights_whose_sum_overflows_are_refused_naming_the_column():
    frame = pd.DataFrame({"k": ["a", "b", "c"], "wt": [1e308, 1e308, 1e308]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no bare NumPy overflow warning either
        with pytest.raises(DataError, match=r"weight column 'wt' sums to more than 1\.8e\+308"):
            Microdata(frame, ["k"], weight="wt")
    # a large but finite sum is fine
    ok = Microdata(frame.assign(wt=[1e300, 1e300, 1e300]), ["k"], weight="wt")
    assert np.isfinite(ok.weights.sum())


def test_dropped_records_weights_count_in_the_overflow_check():
    frame = pd.DataFrame({"k": ["a", None, "b"], "wt": [1e308, 1e308, 1e308]})
    with pytest.raises(DataError, match="weight column 'wt' sums to more than"):
        Microdata(frame, ["k"], weight="wt", missing="drop")
