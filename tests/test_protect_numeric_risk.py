"""`sdcbayes protect`: disclosure risk of the numeric variables a numeric step changed.

summary.json's ``risk.numeric`` (sdcMicro's interval risk ``dRisk`` and record linkage
to the input, before and after) and ``information_loss.eigen_difference`` must equal the
library functions called directly on the written protected file against the input; the
tie-fair linkage after micro-aggregation is checked against the groups' bound (records
sharing a protected value share at most one correct link), and the input's own tie-fair
share against the duplicated rows counted with pandas.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes.protection.infoloss import eigen_difference, il1
from sdcbayes.risk.linkage import interval_risk, linkage_risk

NUM = ["income", "exp"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(21)
    n = 240
    frame = pd.DataFrame({
        "age": rng.choice(["20s", "30s", "40s", "50s"], n),
        "sex": rng.choice(["m", "f"], n),
        "income": rng.lognormal(8, 0.8, n).round(0),
        "exp": rng.lognormal(6, 0.7, n).round(1),
    })
    frame.iloc[200:230, 2:] = frame.iloc[170:200, 2:].to_numpy()  # 30 duplicated value rows
    d = tmp_path_factory.mktemp("numrisk")
    frame.to_csv(d / "p.csv", index=False)
    return d / "p.csv", frame


def _protect(capsys, tmp_path, monkeypatch, csv, *args):
    tmp_path.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "age,sex", *args,
                          "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    return proc, summary, pd.read_csv(out / "protected.csv"), out


def _check_against_direct_calls(summary, original, protected, cols, k):
    num = summary["risk"]["numeric"]
    assert num["variables"] == cols and num["interval_k"] == k
    assert num["n_records"] == len(original)
    for when, other in (("before", original), ("after", protected)):
        got = num[when]
        ir = interval_risk(original, other, cols, k=k)
        assert got["n_interval_risk"] == ir.n_at_risk, when
        assert got["interval_risk"] == pytest.approx(ir.share, rel=1e-12), when
        complete = (original[cols].notna() & protected[cols].notna()).all(axis=1)
        link = linkage_risk(original[complete], other[complete], cols, workers=1)
        assert got["linkage_share_nearest"] == pytest.approx(link.share_nearest, rel=1e-12)
        assert got["linkage_share_second"] == pytest.approx(link.share_second, rel=1e-12)
        assert got["linkage_expected_correct_share"] == pytest.approx(
            link.expected_correct.mean(), rel=1e-12)
    loss = summary["information_loss"]
    assert loss["il1_columns"] == cols
    assert loss["eigen_difference"] == pytest.approx(
        eigen_difference(original, protected, cols), rel=1e-9, abs=1e-15)


def test_noise_run_reports_numeric_risk_equal_to_direct_calls(capsys, tmp_path, monkeypatch,
                                                              data, check_html):
    csv, frame = data
    proc, s, prot, out = _protect(capsys, tmp_path, monkeypatch, csv, "--noise", "income,exp",
                                  "--noise-level", "0.2", "--seed", "3")
    _check_against_direct_calls(s, frame, prot, NUM, 0.05)
    num = s["risk"]["numeric"]
    # the input against itself: every record inside its interval and nearest to itself;
    # the tie-fair share is the mean of 1/(copies of the record's values), counted here
    assert num["before"]["interval_risk"] == 1.0 and num["before"]["linkage_share_nearest"] == 1.0
    copies = frame.groupby(NUM)[NUM[0]].transform("size")
    assert num["before"]["linkage_expected_correct_share"] == pytest.approx(
        (1 / copies).mean(), rel=1e-12)
    assert num["before"]["linkage_expected_correct_share"] < 1
    assert num["after"]["interval_risk"] < 1 and num["linkage_n_left_out"] == 0
    # the terminal and the report say it
    assert "interval risk (sdcMicro's dRisk, k = 0.05): 100% -> " in proc.stdout
    assert "record linkage to own original: nearest 100% -> " in proc.stdout
    html = (out / "report.html").read_text()
    check_html(html)
    assert "Disclosure risk of the numeric variables" in html
    assert "Difference of eigenvalues (sdcMicro)" in html


def test_json_carries_the_block_and_bigger_noise_lowers_the_risk(capsys, tmp_path,
                                                                 monkeypatch, data):
    csv, _ = data
    shares = []
    for level in ("0.02", "1.0"):
        proc, s, _, _ = _protect(capsys, tmp_path / level, monkeypatch, csv, "--noise",
                                 "income,exp", "--noise-level", level, "--seed", "3", "--json")
        assert json.loads(proc.stdout)["risk"]["numeric"] == s["risk"]["numeric"]
        shares.append(s["risk"]["numeric"]["after"])
    small, big = shares
    assert big["interval_risk"] < small["interval_risk"]
    assert big["linkage_share_nearest"] < small["linkage_share_nearest"]


def test_microaggregation_groups_share_at_most_one_correct_link(capsys, tmp_path, monkeypatch,
                                                                data):
    csv, frame = data
    _, s, prot, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--microaggregate",
                             "income,exp", "--mdav-k", "3", "--interval-k", "0.2")
    _check_against_direct_calls(s, frame, prot, NUM, 0.2)
    link = linkage_risk(frame, prot, NUM, workers=1)
    # records shown with one protected value: only the originals nearest to it can be
    # linked right, so their expected correct links sum to at most 1 (groups of >= 3)
    group = prot.groupby(NUM).ngroup().to_numpy()
    sizes = np.bincount(group)
    assert sizes.min() >= 3
    per_value = np.bincount(group, weights=link.expected_correct)
    assert (per_value <= 1 + 1e-12).all()
    assert s["risk"]["numeric"]["after"]["linkage_expected_correct_share"] <= 1 / 3 + 1e-12


def test_missing_values_leave_records_out_of_the_linkage_with_a_note(capsys, tmp_path,
                                                                    monkeypatch, data):
    _, frame = data
    f = frame.copy()
    f.loc[[0, 5, 9], "income"] = np.nan
    csv = tmp_path / "na.csv"
    f.to_csv(csv, index=False)
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "top_code", "column": "income", "threshold": 5000},
        {"step": "noise", "columns": ["exp"], "level": 0.1}]}))
    proc, s, prot, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--recipe", str(recipe),
                                "--seed", "2")
    num = s["risk"]["numeric"]
    assert num["linkage_n_left_out"] == 3 and num["linkage_n_records"] == len(f) - 3
    _check_against_direct_calls(s, f, prot, NUM, 0.05)
    assert any("3 with a missing value are left out" in n for n in s["risk"]["notes"])
    assert "(3 records with a missing value left out)" in proc.stdout


def test_no_numeric_step_no_numeric_risk(capsys, tmp_path, monkeypatch, data):
    csv, _ = data
    _, s, _, out = _protect(capsys, tmp_path, monkeypatch, csv, "--suppress-k", "2")
    assert "numeric" not in s["risk"]
    assert "eigen_difference" not in s["information_loss"]
    assert "Disclosure risk of the numeric variables" not in (out / "report.html").read_text()


@pytest.mark.parametrize("value", ["0", "-0.1", "nan", "inf"])
def test_bad_interval_k_is_one_line_error(capsys, tmp_path, monkeypatch, data, value,
                                          protect_no_work):
    csv, _ = data
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "age,sex", "--noise",
                          "income", f"--interval-k={value}", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "--interval-k", "positive")
    assert not (tmp_path / "o").exists()


def test_interval_k_without_a_numeric_step_is_refused(capsys, tmp_path, monkeypatch, data,
                                                      protect_no_work):
    csv, _ = data
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "age,sex", "--suppress-k",
                          "2", "--interval-k", "0.1", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "--interval-k", "--noise", "--microaggregate")


def test_infinite_input_values_leave_the_column_out_of_il1_with_a_note(capsys, tmp_path,
                                                                     monkeypatch):
    # IL1 divides by the input's standard deviation, the interval risk by the protected
    # one's: undefined with an infinite value in the input, even after a top code removed
    # it. The run completes, the column is named in information_loss.il1_skipped, and
    # neither IL1, the eigenvalue difference nor risk.numeric is reported for it.
    frame = pd.DataFrame({"age": list("aabbaabbab"), "sex": list("mfmfmfmfmf"),
                          "income": [10, 50, 200, np.inf, 30, 150, 60, 70, 80, 90.0],
                          "exp": [1.0, 4, 2, 8, 5, 7, 3, 6, 9, 2]})
    csv = tmp_path / "inf.csv"
    tmp_path.mkdir(parents=True, exist_ok=True)
    frame.to_csv(csv, index=False)
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "top_code", "column": "income", "threshold": 100}]}))
    proc, s, prot, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--recipe", str(recipe))
    assert np.isfinite(prot["income"]).all() and prot["income"].max() == 100
    line = [x for x in proc.stdout.splitlines() if x.strip().startswith("income")]
    assert len(line) == 1 and "IL1 and numeric risk skipped (infinite values" in line[0]
    loss = s["information_loss"]
    assert list(loss["il1_skipped"]) == ["income"]
    assert "infinite values in the input" in loss["il1_skipped"]["income"]
    assert "il1" not in loss["per_variable"]["income"]
    assert loss["per_variable"]["income"]["n_changed"] == 3  # the shares are still there
    assert "il1_columns" not in loss and "eigen_difference" not in loss
    assert "numeric" not in s["risk"]
    # a finite numeric column top-coded in the same run keeps IL1 and the numeric risk
    recipe.write_text(json.dumps({"steps": [
        {"step": "top_code", "column": "income", "threshold": 100},
        {"step": "top_code", "column": "exp", "threshold": 7}]}))
    _, s, prot, _ = _protect(capsys, tmp_path / "two", monkeypatch, csv, "--recipe",
                             str(recipe))
    loss = s["information_loss"]
    assert loss["il1_columns"] == ["exp"] and list(loss["il1_skipped"]) == ["income"]
    assert s["risk"]["numeric"]["variables"] == ["exp"]
    assert loss["per_variable"]["exp"]["il1"] == pytest.approx(
        il1(frame, prot, ["exp"]), rel=1e-12)
