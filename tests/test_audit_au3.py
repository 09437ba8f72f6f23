"""Audit AU3: --encoding on the way out and in, record lines, decide --domain, suda --missing.

B1 (protect's new values in the input's encoding), B2 (--encoding utf-8 for pyreadstat
files), G1 (UTF-16 without a byte-order mark), G2 (a wrong codec's header line), G3 (record
lines of a reordered frame), G4/G5/N5 (decide's domain columns and labels), G6 (suda's
unmatched --missing codes), N1 (compare's merged warnings), N2 (non-text codecs). Small
files in ``tmp_path`` (the cwd), in-process runs (tests/clitools.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes.exceptions import DataError, InputError
from sdcbayes.microdata import Microdata, read_microdata

REGIONS = ["Île", "Nord", "Zürich"]


def _survey(n: int = 40, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"région": rng.choice(REGIONS, n), "sex": rng.choice(["F", "M"], n),
                         "âge": rng.integers(1, 5, n), "w": np.full(n, 10)})


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------- B1: protect's new values
def _protect_latin1(capsys, *steps):
    return run_in_process(capsys, "protect", "lat1.csv", "--encoding", "latin-1",
                          "--keys", "région,sex,âge", "--weight", "w", "--out", "p", "-q",
                          *steps)


def test_recode_value_outside_the_encoding_refused_before_work(cwd, capsys, protect_no_work):
    _survey().to_csv(cwd / "lat1.csv", index=False, encoding="latin-1")
    proc = _protect_latin1(capsys, "--recode", "région:Île+Nord=Nord–Ost")
    assert_one_line_error(proc, "--recode", "'Nord–Ost'", "iso8859-1", "U+2013",
                          "convert the data file to UTF-8")
    assert not (cwd / "p").exists()


def test_recipe_band_label_outside_the_encoding_refused(cwd, capsys, protect_no_work):
    _survey().to_csv(cwd / "lat1.csv", index=False, encoding="latin-1")
    (cwd / "r.json").write_text('[{"step": "band", "column": "âge", "breaks": [0, 2, 10], '
                                '"labels": ["jung", "Œalt"]}]', encoding="utf-8")
    proc = _protect_latin1(capsys, "--recipe", "r.json")
    assert_one_line_error(proc, "step 1 (band)", "label 'Œalt'", "U+0152")


def test_recode_value_in_the_encoding_is_written_in_it(cwd, capsys):
    _survey().to_csv(cwd / "lat1.csv", index=False, encoding="latin-1")
    proc = _protect_latin1(capsys, "--recode", "région:Île+Nord=Nord-Öst")
    assert proc.returncode == 0, proc.stderr
    out = (cwd / "p" / "protected.csv").read_bytes()
    assert "Nord-Öst".encode("latin-1") in out


def test_unencodable_value_while_writing_is_one_line_and_keeps_out(cwd, capsys, monkeypatch):
    """The safety net: a value the early check did not foresee fails in one line, and an
    earlier output in --out stays as it was (write_output_folder's temporary folder)."""
    from sdcbayes.commands import protect

    _survey().to_csv(cwd / "lat1.csv", index=False, encoding="latin-1")
    assert _protect_latin1(capsys, "--suppress-k", "2").returncode == 0
    before = (cwd / "p" / "protected.csv").read_bytes()
    monkeypatch.setattr(protect, "_check_new_values_encodable", lambda *a: None)
    proc = _protect_latin1(capsys, "--recode", "région:Île+Nord=Nord–Ost")
    assert_one_line_error(proc, "cannot be written in the input's encoding iso8859-1",
                          "U+2013")
    assert (cwd / "p" / "protected.csv").read_bytes() == before
    assert sorted(p.name for p in cwd.iterdir()) == ["lat1.csv", "p"]


# ---------------------------------------------------------------- B2: utf-8 for pyreadstat
def test_encoding_utf8_is_passed_to_pyreadstat(cwd):
    pyreadstat = pytest.importorskip("pyreadstat")
    # an old Stata file (version 12) holding UTF-8 bytes, which the reader's default
    # (the file's own code page) reads as mojibake
    pyreadstat.write_dta(pd.DataFrame({"region": ["Zürich", "Île"], "x": [1.0, 2.0]}),
                         str(cwd / "old.dta"), version=12)
    default = read_microdata(cwd / "old.dta")["region"].tolist()
    assert default != ["Zürich", "Île"]  # the situation the option is for
    assert read_microdata(cwd / "old.dta", encoding="utf-8")["region"].tolist() == \
        ["Zürich", "Île"]


# ---------------------------------------------------------------- G1: UTF-16 with no BOM
def test_utf16_without_bom_names_the_byte_order(cwd):
    text = _survey(8).to_csv(index=False)
    (cwd / "le.csv").write_bytes(text.encode("utf-16-le"))
    (cwd / "be.csv").write_bytes(text.encode("utf-16-be"))
    with pytest.raises(DataError, match="--encoding utf-16-le"):
        read_microdata(cwd / "le.csv")
    with pytest.raises(DataError, match="--encoding utf-16-be"):
        read_microdata(cwd / "be.csv")
    # the plain "utf-16" codec wants a byte-order mark: a DataError naming the order
    with pytest.raises(DataError, match=r"no byte-order mark.*--encoding utf-16-le"):
        read_microdata(cwd / "le.csv", encoding="utf-16")
    # what it names reads the file
    frame = read_microdata(cwd / "le.csv", encoding="utf-16-le")
    assert sorted(frame["région"].unique()) == sorted(set(_survey(8)["région"]))


def test_utf16_codec_on_a_one_byte_file_is_a_data_error(cwd, capsys):
    _survey(8).to_csv(cwd / "lat1.csv", index=False, encoding="latin-1")
    proc = run_in_process(capsys, "assess", "lat1.csv", "--encoding", "utf-16",
                          "--keys", "région", "--out", "o", "-q")
    assert_one_line_error(proc, "it is not utf-16 text", "--encoding")
    assert "check that the file is complete" not in proc.stderr


# ---------------------------------------------------------------- G2: a wrong codec's header
def test_wrong_codec_whole_file_header_is_refused_without_printing_it(cwd, capsys):
    frame = _survey(4000)
    (cwd / "big.csv").write_text(frame.to_csv(index=False), encoding="utf-16")  # with BOM
    proc = run_in_process(capsys, "assess", "big.csv", "--encoding", "utf-16-be",
                          "--keys", "région,sex", "--out", "o", "-q")
    assert_one_line_error(proc, "not utf-16-be text", "--encoding utf-16")
    assert len(proc.stderr) < 500


def test_one_byte_codec_on_utf16_names_nul_and_utf16(cwd, capsys):
    (cwd / "u.csv").write_bytes(_survey(8).to_csv(index=False).encode("utf-16-le"))
    proc = run_in_process(capsys, "assess", "u.csv", "--encoding", "latin-1",
                          "--keys", "région,sex", "--out", "o", "-q")
    assert_one_line_error(proc, "NUL", "--encoding utf-16-le")
    assert "\\x00" not in proc.stderr


def test_unknown_column_error_caps_names_and_their_length():
    from sdcbayes.microdata import resolve_columns

    long = "x" * 5000
    frame = pd.DataFrame(columns=[long] + [f"c{j}" for j in range(30)])
    with pytest.raises(DataError) as err:
        resolve_columns(frame, ["nope"], option="--keys")
    msg = str(err.value)
    assert long not in msg and "… 11 more" in msg and len(msg) < 400


# ---------------------------------------------------------------- G3: a reordered frame
def test_record_line_not_named_for_a_reordered_frame(cwd):
    (cwd / "plain.csv").write_text("a,b,w\nx,1,5\ny,2,5\nz,3,-1\n", encoding="utf-8")
    df = read_microdata(cwd / "plain.csv")
    with pytest.raises(InputError, match=r"record 3 \(line 4 of the file\)"):
        Microdata(df, keys=["a"], weight="w")
    moved = df.sort_values("b", ascending=False).reset_index(drop=True)
    assert moved.attrs.get("csv_source")  # pandas kept the attrs: the trap
    with pytest.raises(InputError) as err:
        Microdata(moved, keys=["a"], weight="w")
    assert "record 1, counting from 1" in str(err.value)
    assert "line" not in str(err.value)


def test_record_line_named_for_numbers_and_decimal_commas(cwd):
    (cwd / "semi.csv").write_text("a;v;w\nx;007;1,5\ny;2;0\n", encoding="utf-8")
    df = read_microdata(cwd / "semi.csv")
    with pytest.raises(InputError, match=r"record 2 \(line 3 of the file\)"):
        Microdata(df, keys=["a", "v"], weight="w")


# ---------------------------------------------------------------- decide: G4, G5, N5
def _decide(capsys, *extra):
    return run_in_process(capsys, "decide", "d.csv", "--y", "y", "--n", "n", "--N", "N",
                          "--hyperparameters", "ml", "--out", "o", "-q", *extra)


def test_frontier_domain_values_match_decisions(cwd, capsys):
    (cwd / "d.csv").write_text("a,b,code,y,n,N\nx / y,z,007,1,10,100\nx,y / z,010,2,12,150\n"
                               "p,q,1.50,0,8,90\np,r,2,3,9,120\n", encoding="utf-8")
    assert _decide(capsys, "--domain", "code,b").returncode == 0
    dec = pd.read_csv(cwd / "o" / "decisions.csv", dtype=str)
    fr = pd.read_csv(cwd / "o" / "frontier.csv", dtype=str).iloc[1:]
    assert set(zip(fr["code"], fr["b"], strict=True)) == \
        set(zip(dec["code"], dec["b"], strict=True))


def test_joined_domain_labels_tell_combinations_apart():
    from sdcbayes.commands.decide import _domain_names

    table = pd.DataFrame({"a": ["x / y", "x", 'p'], "b": ["z", "y / z", '"q']})
    names = list(_domain_names(table, ["a", "b"]))
    assert len(set(names)) == 3
    assert names[0] != names[1]
    assert names[2] == 'p / """q"'


def test_repeated_domain_records_named_once_counting_from_1():
    from sdcbayes.commands.decide import _domain_names

    table = pd.DataFrame({"d": [1.0, 2.0, 3.0, 4.0, 1.0]})
    with pytest.raises(InputError) as err:
        _domain_names(table, ["d"])
    assert "records 1 and 5, counting from 1" in str(err.value)


# ---------------------------------------------------------------- G6: suda --missing
@pytest.mark.parametrize("extra", [["--missing", "NA"], ["--missing", "."],
                                   ["--na-values", "-9", "--missing", "-9.0"]])
def test_suda_no_unmatched_warning_for_codes_read_as_missing(cwd, capsys, extra):
    (cwd / "s.csv").write_text("a,b,c\n1,x,-9\n2,NA,3\n1,y,-9\n3,x,.\n2,y,4\n")
    proc = run_in_process(capsys, "suda", "s.csv", "--keys", "a,b,c", "--out", "o", "-q",
                          *extra)
    assert proc.returncode == 0, proc.stderr
    assert "matches no value" not in proc.stderr


def test_suda_unmatched_warning_kept_for_a_misspelt_code(cwd, capsys):
    (cwd / "s.csv").write_text("a,b,c\n1,x,-9\n2,NA,3\n1,y,-9\n3,x,.\n2,y,4\n")
    proc = run_in_process(capsys, "suda", "s.csv", "--keys", "a,b,c", "--out", "o", "-q",
                          "--missing", "zz")
    assert proc.returncode == 0, proc.stderr
    assert "code 'zz' matches no value" in proc.stderr


# ---------------------------------------------------------------- N1, N2
def test_merged_warnings_keep_signs_and_exponents():
    from sdcbayes.commands.compare import merge_model_warnings

    neg = merge_model_warnings(["lc: correlation -0.5 in the draws",
                                "pg: correlation -1.5 in the draws"], ["lc", "pg"])
    assert neg == ["lc, pg: correlation -0.5 (lc), -1.5 (pg) in the draws"]
    exp = merge_model_warnings(["lc: tail mass 1e-05 left", "pg: tail mass 1e-03 left"],
                               ["lc", "pg"])
    assert exp == ["lc, pg: tail mass 1e-05 (lc), 1e-03 (pg) left"]
    # a hyphen between words or numbers is not a sign: "3-5" keeps both numbers apart
    rng = merge_model_warnings(["lc: R-hat in 3-5 chains", "pg: R-hat in 3-6 chains"],
                               ["lc", "pg"])
    assert rng == ["lc, pg: R-hat in 3-5 (lc), 6 (pg) chains"]


@pytest.mark.parametrize("codec", ["rot13", "hex", "base64"])
def test_non_text_codecs_refused_at_once(cwd, capsys, codec):
    _survey(8).to_csv(cwd / "u.csv", index=False)
    proc = run_in_process(capsys, "assess", "u.csv", "--encoding", codec,
                          "--keys", "région", "--out", "o", "-q")
    assert_one_line_error(proc, f"--encoding {codec!r} is not a text encoding")
