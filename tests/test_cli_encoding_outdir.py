"""--encoding (audit UX F11), --out over another command's output (F3), record numbers (F5).

Small files, in-process runs (tests/clitools.py), each in ``tmp_path`` as its cwd.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes.exceptions import DataError, InputError
from sdcbayes.microdata import Microdata, read_microdata

#: Keys with letters outside ASCII, each cell holding several records (so that a
#: protection step with k = 2 leaves every value in place).
REGIONS = ["Zürich", "Genève", "Bern"]


def _survey(seed: int = 7, n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.choice(["0-29", "30-59", "60+"], n),
        "sex": rng.choice(["f", "m"], n),
        "region": rng.choice(REGIONS, n),
        "w": np.round(rng.uniform(5, 40, n), 3),
    })


@pytest.fixture
def files(tmp_path, monkeypatch):
    """The same survey as UTF-8 and as Latin-1 CSV, in the cwd tmp_path."""
    monkeypatch.chdir(tmp_path)
    frame = _survey()
    frame.to_csv(tmp_path / "utf8.csv", index=False, encoding="utf-8")
    frame.to_csv(tmp_path / "latin1.csv", index=False, encoding="latin-1")
    return tmp_path


def _assess(capsys, data, out, *extra):
    return run_in_process(capsys, "assess", data, "--keys", "age,sex,region", "--weight", "w",
                          "--model", "closed-form", "--out", out, "-q", *extra)


def test_latin1_read_with_encoding_gives_the_utf8_results(files, capsys):
    assert _assess(capsys, "utf8.csv", "u").returncode == 0
    proc = _assess(capsys, "latin1.csv", "l", "--encoding", "latin-1")
    assert proc.returncode == 0, proc.stderr
    su = json.loads((files / "u" / "summary.json").read_text())
    sl = json.loads((files / "l" / "summary.json").read_text())
    for field in ("n_cells", "n_sample_uniques", "expected_reidentifications", "tau1"):
        assert sl[field] == su[field], field
    pd.testing.assert_frame_equal(pd.read_csv(files / "l" / "records.csv"),
                                  pd.read_csv(files / "u" / "records.csv"))
    # the codec used, under its canonical name, beside --na-values in provenance.input
    assert sl["provenance"]["input"]["encoding"] == "iso8859-1"
    assert "encoding" not in su["provenance"]["input"]


def test_latin1_without_encoding_names_the_option_and_the_column(files, capsys):
    proc = _assess(capsys, "latin1.csv", "l")
    # the first record with a non-ASCII region is on the line after it, in column 'region'
    frame = _survey()
    line = int(np.flatnonzero(frame["region"] != "Bern")[0]) + 2
    assert_one_line_error(proc, "not UTF-8 text", f"line {line}, column 'region'",
                          "--encoding latin-1", "cp1252")
    assert "#" not in proc.stderr and "CSV conversion" not in proc.stderr  # pyarrow's text
    assert not (files / "l").exists()


@pytest.mark.parametrize("command", ["assess", "suda", "protect", "compare"])
def test_unknown_codec_is_one_line_before_any_work(files, capsys, command):
    args = {"assess": ["--model", "closed-form", "--weight", "w"],
            "suda": [], "protect": ["--suppress-k", "2", "--weight", "w"],
            "compare": ["--models", "closed-form", "--weight", "w"]}[command]
    proc = run_in_process(capsys, command, "latin1.csv", "--keys", "age,sex", *args,
                          "--encoding", "klingon", "--out", "o")
    assert_one_line_error(proc, "--encoding 'klingon'", "latin-1", "cp1252")
    assert not (files / "o").exists()


def test_decide_takes_encoding_for_its_domains_file(files, capsys):
    table = pd.DataFrame({"domain": ["Zürich", "Genève", "Bern", "Basel"],
                          "y": [1, 2, 0, 3], "n": [10, 20, 15, 12], "N": [100, 300, 200, 90]})
    table.to_csv(files / "dom.csv", index=False, encoding="latin-1")
    base = ["decide", "dom.csv", "--y", "y", "--n", "n", "--N", "N", "--domain", "domain",
            "--alpha", "1", "--beta", "10", "-q"]
    assert_one_line_error(run_in_process(capsys, *base, "--out", "d0"), "--encoding latin-1")
    proc = run_in_process(capsys, *base, "--encoding", "latin-1", "--out", "d1")
    assert proc.returncode == 0, proc.stderr
    decisions = pd.read_csv(files / "d1" / "decisions.csv")
    assert set(decisions["domain"]) == set(table["domain"])
    summary = json.loads((files / "d1" / "summary.json").read_text())
    assert summary["provenance"]["input"]["encoding"] == "iso8859-1"


def test_encoding_refused_for_parquet(files, capsys):
    _survey().to_parquet(files / "s.parquet", index=False)
    proc = _assess(capsys, "s.parquet", "o", "--encoding", "latin-1")
    assert_one_line_error(proc, "s.parquet", "UTF-8 by definition", "leave out --encoding")
    with pytest.raises(InputError, match="UTF-8 by definition"):
        read_microdata(files / "s.parquet", encoding="latin-1")


def test_protect_writes_the_csv_back_in_the_input_encoding(files, capsys):
    proc = run_in_process(capsys, "protect", "latin1.csv", "--keys", "age,sex,region",
                          "--weight", "w", "--suppress-k", "2", "--encoding", "latin-1",
                          "--out", "p", "-q")
    assert proc.returncode == 0, proc.stderr
    raw = (files / "p" / "protected.csv").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")  # not converted to UTF-8 behind the user's back
    text = raw.decode("latin-1")
    assert "Zürich" in text and "Genève" in text
    back = pd.read_csv(files / "p" / "protected.csv", encoding="latin-1")
    original = pd.read_csv(files / "latin1.csv", encoding="latin-1")
    kept = back["region"].notna()
    assert kept.any()
    assert (back.loc[kept, "region"] == original.loc[kept, "region"]).all()
    summary = json.loads((files / "p" / "summary.json").read_text())
    assert summary["provenance"]["input"]["encoding"] == "iso8859-1"


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_assess_refuses_a_protect_output_and_leaves_it_alone(files, capsys):
    proc = run_in_process(capsys, "protect", "utf8.csv", "--keys", "age,sex,region",
                          "--weight", "w", "--suppress-k", "2", "--out", "x", "-q")
    assert proc.returncode == 0, proc.stderr
    before = _snapshot(files / "x")
    assert "protected.csv" in before
    proc = _assess(capsys, "utf8.csv", "x")
    assert_one_line_error(proc, "--out x", "'sdcbayes protect'", "protected.csv", "log.csv",
                          "this assess run would remove", "choose another --out",
                          "delete the folder")
    assert _snapshot(files / "x") == before


def test_protect_refuses_an_assess_output_and_assess_replaces_its_own(files, capsys):
    assert _assess(capsys, "utf8.csv", "y").returncode == 0
    before = _snapshot(files / "y")
    proc = run_in_process(capsys, "protect", "utf8.csv", "--keys", "age,sex,region",
                          "--weight", "w", "--suppress-k", "2", "--out", "y", "-q")
    assert_one_line_error(proc, "--out y", "'sdcbayes assess'", "records.csv",
                          "this protect run would remove")
    assert _snapshot(files / "y") == before
    # the same command again replaces its earlier output, as documented
    proc = _assess(capsys, "utf8.csv", "y", "--threshold", "0.1")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((files / "y" / "summary.json").read_text())["provenance"]


def test_record_numbers_count_from_1_with_the_file_line(files, capsys):
    # header on line 1, records 1-4 on lines 2-5, a blank line 6, record 5 on line 7
    (files / "badw.csv").write_text(
        "age,sex,region,w\n0-29,f,Bern,10\n0-29,f,Bern,12\n30-59,m,Bern,9\n60+,f,Bern,11\n"
        "\n30-59,f,Bern,abc\n60+,m,Bern,8\n", encoding="utf-8")
    proc = run_in_process(capsys, "assess", "badw.csv", "--keys", "age,sex", "--weight", "w",
                          "--model", "closed-form", "--out", "o")
    assert_one_line_error(proc, "1 value is not a number (at record 5 (line 7 of the file): "
                          "'abc')")
    assert "1 values" not in proc.stderr


def test_record_numbers_count_from_1_without_a_file():
    frame = pd.DataFrame({"a": ["x", "y", "x", "y"], "w": [3.0, 4.0, 0.0, -1.0]})
    with pytest.raises(DataError, match=r"2 zero or negative values \(first at record 3, "
                                        r"counting from 1: 0\)"):
        Microdata(frame, keys=["a"], weight="w")
    frame.index = [10, 20, 30, 40]
    with pytest.raises(DataError, match=r"first at record 3, counting from 1 "
                                        r"\(index label 30\): 0\)"):
        Microdata(frame, keys=["a"], weight="w")


def test_one_record_is_not_the_1_records(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "one.csv").write_text("age,sex,w\n30,f,10\n", encoding="utf-8")
    proc = run_in_process(capsys, "protect", "one.csv", "--keys", "age,sex", "--weight", "w",
                          "--suppress-k", "3", "--out", "o")
    assert_one_line_error(proc, "--suppress-k 3 exceeds the file's only record",
                          "choose k <= 1")
    assert "the 1 records" not in proc.stderr


def test_every_command_names_itself_in_summary_json(capsys, tmp_path, monkeypatch):
    # assess's summary.json lacked the top-level `command` the other four write (audit UX
    # F10); the --out check reads it first
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "assess", "--model", "closed-form", "--out", "a")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert next(iter(summary)) == "command" and summary["command"] == "assess"
