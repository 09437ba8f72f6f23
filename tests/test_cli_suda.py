"""`sdcbayes suda`: seed 001's Table 3 through the CLI, and CLI == Python API."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_cli, run_in_process

# Seed 001, Table 3 (literals as in tests/test_risk_suda.py): age group, gender, income,
# education; with maximum MSU size 3 the seed prints SUDA scores 0, 0, 0, 0, 8, 4, 6, 8
# (record 8: MSUs {60s} and {Male, University}, 3!/... = 6 + 2 = 8 in the text).
TABLE3 = pd.DataFrame(
    {
        "age": ["20s", "20s", "20s", "20s", "30s", "40s", "40s", "60s"],
        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
        "income": ["50k+", "50k+"] + ["50k-"] * 6,
        "education": ["high school"] * 4
        + ["university", "high school", "middle school", "university"],
    }
)
TABLE3_SUDA = [0, 0, 0, 0, 8, 4, 6, 8]


def test_table3_scores_through_cli(tmp_path):
    path = tmp_path / "table3.csv"
    TABLE3.to_csv(path, index=False)
    out = tmp_path / "out"
    proc = run_cli("suda", str(path), "--keys", "age,gender,income,education",
                   "--max-size", "3", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "SUDA" in proc.stdout
    rec = pd.read_csv(out / "records.csv")
    assert list(rec.columns) == [
        "record", "suda_score", "dis_suda_score", "contribution_age", "contribution_gender",
        "contribution_income", "contribution_education",
    ]
    assert rec["record"].tolist() == list(range(8))
    np.testing.assert_array_equal(rec["suda_score"], TABLE3_SUDA)
    # Record 8's score 8 = 6 ({60s}, size 1) + 2 ({Male, University}, size 2): age is in
    # MSUs worth 6 of 8, gender and education in MSUs worth 2 of 8, income in none.
    np.testing.assert_allclose(
        rec.iloc[7][["contribution_age", "contribution_gender", "contribution_income",
                     "contribution_education"]].to_numpy(float),
        [6 / 8, 2 / 8, 0.0, 2 / 8],
    )
    assert (rec["dis_suda_score"][np.array(TABLE3_SUDA) == 0] == 0).all()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_records"] == 8 and summary["max_size"] == 3
    assert summary["n_records_with_msu"] == 4
    assert summary["provenance"]["command"].startswith("sdcbayes suda")
    html = (out / "report.html").read_text()
    assert "<svg" in html and "<script" not in html


def test_cli_equals_python_api_with_missing_codes(tmp_path):
    rng = np.random.default_rng(8)
    n = 400
    frame = pd.DataFrame(
        {
            "region": rng.integers(1, 7, n),
            "sex": rng.choice(["m", "f"], n),
            "age": rng.integers(0, 9, n),
            "job": rng.choice(list("abcdefg"), n),
            "hh": rng.integers(1, 5, n),
        }
    )
    frame.loc[rng.random(n) < 0.05, "age"] = -999
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    keys = ["region", "sex", "age", "job", "hh"]
    proc = run_cli("suda", str(path), "--keys", ",".join(keys), "--max-size", "4",
                   "--dis-fraction", "0.05", "--missing", "-999", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr

    from sdcbayes.risk.suda import suda

    expected = suda(frame, keys, max_size=4, dis_fraction=0.05, missing=[-999])
    got = pd.read_csv(out / "records.csv")
    want = expected.records_frame()
    assert list(got.columns) == list(want.columns)
    np.testing.assert_allclose(got.to_numpy(float), want.to_numpy(float), rtol=1e-12, atol=0)
    printed = json.loads(proc.stdout)
    for key, value in expected.summary().items():
        if key != "sdcbayes_version":
            if isinstance(value, float):
                assert printed[key] == pytest.approx(value, rel=1e-12), key
            else:
                assert printed[key] == json.loads(json.dumps(value)), key
    # -999 is missing: a record whose only MSUs would use it must differ from treating
    # -999 as a level (the option is not ignored).
    as_level = suda(frame, keys, max_size=4, dis_fraction=0.05)
    assert not np.array_equal(as_level.scores, want["suda_score"].to_numpy())


@pytest.mark.parametrize(
    ("make_args", "fragments"),
    [
        (lambda p, t: [str(t / "nope.csv"), "--keys", "a"], ["nope.csv"]),
        (lambda p, t: [str(p), "--keys", "age,colour"], ["colour"]),
        (lambda p, t: [str(p), "--keys", "age,gender", "--max-size", "3"], ["--max-size"]),
        (lambda p, t: [str(p), "--keys", "age", "--dis-fraction", "1.5"], ["--dis-fraction"]),
        (lambda p, t: [str(p), "--keys", ","], ["--keys"]),
        (lambda p, t: [str(p), "--keys", "age,age"], ["repeats"]),
    ],
    ids=["missing-file", "unknown-key", "bad-max-size", "bad-dis-fraction", "empty-keys",
         "repeated-key"],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, make_args, fragments):
    path = tmp_path / "table3.csv"
    TABLE3.to_csv(path, index=False)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "suda", *make_args(path, tmp_path), "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


def test_help_explains_options(capsys):
    proc = run_in_process(capsys, "suda", "--help")
    assert proc.returncode == 0
    for opt in ("--keys", "--max-size", "--dis-fraction", "--missing", "--out"):
        assert opt in proc.stdout


def test_table3_by_variable_labels_from_an_spss_file(tmp_path, capsys):
    """Seed 001's Table 3 scores when the keys are named by their SPSS variable labels."""
    pyreadstat = pytest.importorskip("pyreadstat")
    coded = TABLE3.set_axis(["q1", "q2", "q3", "q4"], axis=1)
    path = tmp_path / "table3.sav"
    pyreadstat.write_sav(coded, str(path),
                         column_labels=["Age group", "Gender", "Income", "Education"])
    out = tmp_path / "out"
    proc = run_in_process(capsys, "suda", str(path), "--keys", "age GROUP,Gender,income,q4",
                          "--max-size", "3", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    rec = pd.read_csv(out / "records.csv")
    np.testing.assert_array_equal(rec["suda_score"], TABLE3_SUDA)
    # outputs name the columns, not the labels typed
    assert [c for c in rec.columns if c.startswith("contribution_")] == [
        "contribution_q1", "contribution_q2", "contribution_q3", "contribution_q4"]
    np.testing.assert_allclose(rec.iloc[7][["contribution_q1", "contribution_q2",
                                            "contribution_q3", "contribution_q4"]].to_numpy(float),
                               [6 / 8, 2 / 8, 0.0, 2 / 8])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["data"]["keys"] == ["q1", "q2", "q3", "q4"]

    # a label and its own column name are one key named twice
    proc = run_in_process(capsys, "suda", str(path), "--keys", "Gender,q2,q1",
                          "--out", str(tmp_path / "dup"))
    assert_one_line_error(proc, "--keys", "['q2'] twice", "name each key once")
    # a misspelt label: the one-line error of `assess`, with the label's column
    proc = run_cli("suda", str(path), "--keys", "Gendre,q1", "--out", str(tmp_path / "bad"))
    assert_one_line_error(proc, "--keys 'Gendre'", "did you mean 'Gender' (label of 'q2')",
                          "table3.sav")
    assert not (tmp_path / "dup").exists() and not (tmp_path / "bad").exists()


def test_contributions_say_they_overlap(tmp_path, capsys):
    # Table 3: age 53.8% + education 53.8% + gender 23.1% > 100%, because an MSU of two
    # keys counts toward both (Elliot et al.; sdcMicro): kept, and said where they are read
    path = tmp_path / "table3.csv"
    TABLE3.to_csv(path, index=False)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "suda", str(path), "--keys", "age,gender,income,education",
                          "--max-size", "3", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    shares = summary["attribute_contributions"]
    assert sum(shares.values()) > 100
    assert shares["age"] == pytest.approx(100 * 14 / 26)  # 14 of 26 score points: unchanged
    lines = proc.stdout.splitlines()
    last = max(i for i, ln in enumerate(lines) if "contribution of" in ln)
    note = lines[last + 1]
    assert "more than 100%" in note and "not shares of a whole" in note, proc.stdout
    assert "more than 100%" in summary["attribute_contributions_note"]


def test_a_key_writing_one_number_two_ways_is_warned_as_in_assess(tmp_path, capsys):
    """suda builds no Microdata; the split-level warning (audit BB4 F1) is its own line."""
    import json

    import numpy as np
    import pandas as pd
    from clitools import run_in_process

    rng = np.random.default_rng(2)
    size = rng.integers(1, 4, 80).astype(str).astype(object)
    size[::3] = [f"{v}.0" for v in size[::3]]
    path = tmp_path / "mixed.csv"
    pd.DataFrame({"age": rng.integers(20, 26, 80), "size": size}).to_csv(path, index=False)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "suda", str(path), "--keys", "age,size", "--out", str(out),
                          "-q")
    assert proc.returncode == 0, proc.stderr
    assert "sdcbayes: warning: key 'size': " in proc.stderr
    assert "different texts of one number" in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert any("different texts of one number" in w for w in summary["warnings"])
