"""Audit BB2: `sdcbayes protect` checks the whole chain of steps before any work.

Finding 1: a step that conflicts with what an earlier step leaves (a key the
suppression may blank, then micro-aggregated; a banded column micro-aggregated; a
micro-aggregated or fractionally top-coded column PRAM'd; a suppressed key used as a
stratum) was found only after the earlier steps had run, and the error blamed the
input file. Now refused before the "before" risk, naming the step; an error a method
still raises mid-run names its step too. Finding 2: suppression.py's quoted counts
name their key set. Finding 3: a recipe's suppress step takes one k per entry of
``combs`` and its errors name the recipe field ``k``, not ``--suppress-k``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

import sdcbayes.commands.protect as protect_mod

KEYS = "age,sex,region"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(7)
    n = 300
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "sex": rng.choice(["m", "f"], n),
            "region": rng.integers(1, 7, n),
            "hours": rng.integers(0, 99, n),
            "income": rng.lognormal(8, 1, n).round(0),
            "w": rng.uniform(20, 80, n),
        }
    )
    frame["inc_na"] = frame["income"].mask(frame.index == 5)
    d = tmp_path_factory.mktemp("bb2")
    frame.to_csv(d / "p.csv", index=False)
    return d / "p.csv", frame


@pytest.fixture
def risk_calls(monkeypatch):
    """Every call of the risk measure: the "before" risk is the run's first work."""
    calls = []
    real = protect_mod._risk

    def spy(*args, **kwargs):
        calls.append(args[1:3])
        return real(*args, **kwargs)

    monkeypatch.setattr(protect_mod, "_risk", spy)
    return calls


def _recipe(tmp_path, steps) -> str:
    p = tmp_path / "recipe.json"
    p.write_text(json.dumps({"seed": 1, "steps": steps}))
    return str(p)


CONFLICTS = {
    # options: the order is fixed (suppress before micro-aggregation and noise)
    "suppress-then-microaggregate-key": (
        ["--suppress-k", "2", "--microaggregate", "age"], None,
        ["step 2 (microaggregate): column 'age' may have missing values after step 1 "
         "(suppress) blanks key cells", "leave 'age' out of --keys", "--recipe"]),
    "suppress-then-noise-key": (
        ["--suppress-k", "2", "--noise", "age"], None,
        ["step 2 (noise): column 'age' may have missing values after step 1 (suppress)"]),
    "suppress-then-pram-strata-key": (
        [], [{"step": "suppress", "k": 3},
             {"step": "pram", "columns": ["hours"], "strata": ["region"]}],
        ["step 2 (pram): stratum column 'region' may have missing values after step 1 "
         "(suppress) blanks key cells", "stratify before that step"]),
    "microaggregate-then-pram": (
        [], [{"step": "microaggregate", "columns": ["hours", "income"], "k": 3},
             {"step": "pram", "columns": ["hours"]}],
        ["step 2 (pram): column 'hours' is continuous after step 1 (microaggregate) "
         "replaces it by group means"]),
    "noise-then-pram": (
        [], [{"step": "noise", "columns": ["hours"]}, {"step": "pram", "columns": ["hours"]}],
        ["step 2 (pram): column 'hours' is continuous after step 1 (noise)"]),
    "band-then-microaggregate": (
        [], [{"step": "band", "column": "hours", "breaks": [0, 20, 40, 100]},
             {"step": "microaggregate", "columns": ["hours", "income"], "k": 3}],
        ["step 2 (microaggregate): column 'hours' is categorical after step 1 (band)"]),
    "band-then-top-code": (
        [], [{"step": "band", "column": "hours", "breaks": [0, 20, 40, 100]},
             {"step": "top_code", "column": "hours", "threshold": 50}],
        ["step 2 (top_code): column 'hours' is not numeric", "as step 1 (band) leaves it"]),
    "fractional-top-code-then-pram": (
        [], [{"step": "top_code", "column": "hours", "threshold": 50.5, "replacement": 50.5},
             {"step": "pram", "columns": ["hours"]}],
        ["step 2 (pram): column 'hours' is continuous (values such as 50.5)",
         "as step 1 (top_code) leaves it"]),
    "input-missing-microaggregate": (
        ["--microaggregate", "inc_na"], None,
        ["step 1 (microaggregate): column 'inc_na' has missing or infinite values (first at "
         "record 6 (line 7 of the file))"]),
}


@pytest.mark.parametrize("options, steps, fragments", CONFLICTS.values(), ids=CONFLICTS)
def test_step_conflicts_are_refused_before_any_work(data, tmp_path, capsys, risk_calls,
                                                    options, steps, fragments):
    path, _ = data
    args = list(options) + (["--recipe", _recipe(tmp_path, steps)] if steps else [])
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--weight", "w",
                          *args, "--seed", "1", "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert risk_calls == []  # refused before the "before" risk, so before every step
    assert not out.exists()


WORKING = {
    "suppress-then-microaggregate-non-key": [
        {"step": "suppress", "k": 3}, {"step": "microaggregate", "columns": ["income"]}],
    "whole-top-code-then-pram": [
        {"step": "top_code", "column": "hours", "threshold": 50},
        {"step": "pram", "columns": ["hours"]}],
    # no value above 200.5: nothing replaced, the column stays whole
    "fraction-replacing-nothing-then-pram": [
        {"step": "top_code", "column": "hours", "threshold": 200.5, "replacement": 200.5},
        {"step": "pram", "columns": ["hours"]}],
    "stratify-before-suppress": [
        {"step": "pram", "columns": ["hours"], "strata": ["region"]},
        {"step": "suppress", "k": 3}],
    "k1-suppress-blanks-nothing": [
        {"step": "suppress", "k": 1},
        {"step": "pram", "columns": ["hours"], "strata": ["region"]}],
    "band-then-recode-labels": [
        {"step": "band", "column": "hours", "breaks": [0, 20, 40, 100],
         "labels": ["<20", "20-39", "40+"]},
        {"step": "recode", "column": "hours", "mapping": {"<20": "<40", "20-39": "<40"}}],
    "microaggregate-then-noise": [
        {"step": "microaggregate", "columns": ["hours", "income"]},
        {"step": "noise", "columns": ["hours"]}],
}


@pytest.mark.parametrize("steps", WORKING.values(), ids=WORKING)
def test_chains_that_work_are_not_refused(data, tmp_path, capsys, steps):
    path, _ = data
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--weight", "w",
                          "--recipe", _recipe(tmp_path, steps), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [s["name"] for s in summary["steps"]] == [s["step"] for s in steps]


def test_a_method_error_during_the_run_names_its_step(data, tmp_path, capsys, risk_calls):
    path, _ = data
    out = tmp_path / "out"
    # k above the records: named with its step, and now checked before any work (the
    # "before" risk included), as every step's check is
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--recode",
                          "sex:m=x", "--microaggregate", "income", "--mdav-k", "1000",
                          "--out", str(out))
    assert_one_line_error(proc, "step 2 (microaggregate): only 300 records for groups of "
                                "at least 1000 records")
    assert len(risk_calls) == 0
    assert not out.exists()


def test_noise_on_the_weight_is_warned_before_the_steps_and_blamed_after(data, tmp_path,
                                                                         capsys, monkeypatch):
    path, _ = data
    seen_at_first_step = []
    real = protect_mod._run_step

    def spy(step, frame, rng):
        seen_at_first_step.append(capsys.readouterr().err)  # stderr so far
        return real(step, frame, rng)

    monkeypatch.setattr(protect_mod, "_run_step", spy)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--weight", "w",
                          "--noise", "w", "--noise-level", "2", "--seed", "1",
                          "--out", str(out))
    warned = seen_at_first_step[-1]  # the run's own step (the chain check runs none)
    assert "sdcbayes: warning: step(s) 1 (noise) change the weight column 'w'" in warned
    assert "can make weights zero, negative or below 1" in warned
    assert proc.returncode == 2
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("sdcbayes: error: after the steps, the protected file: weight "
                            "column 'w' has")
    assert "holds what step(s) 1 (noise) made of it, not the input's values" in error
    assert not out.exists()


# --------------------------------------------------------------------------- finding 3
def test_recipe_suppress_takes_one_k_per_subset_size(data, tmp_path, capsys):
    from sdcbayes.protection import local_suppression

    path, frame = data
    out = tmp_path / "out"
    steps = [{"step": "suppress", "k": [5, 3], "combs": [3, 2]}]
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--recipe",
                          _recipe(tmp_path, steps), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    result = summary["steps"][0]["result"]
    expected = local_suppression(frame, KEYS.split(","), k=[5, 3], combs=[3, 2]).summary
    assert result["k"] == [5, 3] and result["combs"] == [3, 2]
    assert result["total_suppressions"] == expected["total_suppressions"] > 0
    assert summary["risk"]["k"] == 5  # the k of the full key set (subsets of 3 keys)
    assert summary["risk"]["after"]["k_anonymity_violations_suppression"] == 0


@pytest.mark.parametrize("step, fragments", [
    ({"step": "suppress", "k": [5, 3]}, ["step 1 (suppress): k lists 2 values but the step "
                                         "has no combs"]),
    ({"step": "suppress", "k": [5, 3, 2], "combs": [3, 2]},
     ["k lists 3 values but combs [3, 2] lists 2 subset size(s)"]),
    ({"step": "suppress", "k": [5, 0], "combs": [3, 2]},
     ["step 1 (suppress): k must be a whole number >= 1", "got [5, 0]"]),
    ({"step": "suppress", "k": None}, ["step 1 (suppress): k must be an integer >= 1",
                                       "got null"]),
    ({"step": "suppress", "k": 2, "combs": [4]}, ["combs must be", "between 1 and 3"]),
], ids=["list-without-combs", "list-length", "list-entry", "null", "combs-above-keys"])
def test_recipe_k_errors_name_the_recipe_field(data, tmp_path, capsys, step, fragments):
    path, _ = data
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--recipe",
                          _recipe(tmp_path, [step]), "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert "--suppress-k" not in proc.stderr
    assert not out.exists()


def test_option_k_errors_still_name_the_option(data, tmp_path, capsys):
    path, _ = data
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--suppress-k", "0",
                          "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, "k (--suppress-k) must be an integer >= 1")


# --------------------------------------------------------------------------- finding 2
def test_suppression_docstring_counts_name_their_key_set():
    import sdcbayes
    from sdcbayes.protection import local_suppression, suppression

    doc = " ".join(suppression.__doc__.split())
    demo = sdcbayes.load_demo()
    keys = list(demo.keys)
    assert f"six default keys (``load_demo().keys``: {', '.join(keys)}) 791 against 782" in doc
    assert "age_group (there named age), sex, region and occupation, k = 3: 807 against 806" \
        in doc
    counts = {m: local_suppression(demo.sample, keys, 3, method=m).summary[
        "total_suppressions"] for m in ("sequential", "greedy")}
    assert counts == {"sequential": 791, "greedy": 782}
    tutorial = ["age_group", "sex", "region", "occupation"]
    counts = {m: local_suppression(demo.sample, tutorial, 3, method=m).summary[
        "total_suppressions"] for m in ("sequential", "greedy")}
    assert counts == {"sequential": 807, "greedy": 806}


# --------------------------------------------------------------- reader follow-ups (BB4)
def test_protect_prints_a_split_key_warning_once_as_one_line(tmp_path, capsys):
    """A key writing one number two ways (audit BB4 F1) is a one-line note, said once.

    Before: Microdata's warning escaped as a raw Python warning, once for the risk
    before and once for the risk after protection.
    """
    from clitools import run_main

    rng = np.random.default_rng(3)
    n = 120
    size = rng.integers(1, 5, n).astype(str).astype(object)
    size[::2] = [f"{v}.0" for v in size[::2]]  # half the rows written as floats
    frame = pd.DataFrame({"age": rng.integers(20, 30, n), "size": size,
                          "w": rng.uniform(20, 30, n)})
    path = tmp_path / "mixed.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    proc = run_main(capsys, "protect", str(path), "--keys", "age,size", "--weight", "w",
                    "--suppress-k", "2", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "different texts of one number" in ln]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("sdcbayes: warning: key 'size': ")
    assert "MicrodataWarning" not in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert sum("different texts of one number" in w for w in summary["warnings"]) == 1


def test_protect_keeps_integers_of_a_file_with_an_excel_sep_line(tmp_path, capsys):
    """protect reads the input's text again to keep its integers: it skips the sep= line.

    Before: that second read took ``sep=;`` for the header, so the integer column with
    a blank came back written as ``5,0``.
    """
    rows = ["sep=;", "age;region;hours;w"]
    rng = np.random.default_rng(5)
    for i in range(60):
        hours = "" if i == 3 else str(int(rng.integers(1, 9)))
        rows.append(f"{20 + i % 7};{i % 3};{hours};{25 + i % 5},5")
    path = tmp_path / "excel.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,region",
                          "--weight", "w", "--suppress-k", "2", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    written = (out / "protected.csv").read_text(encoding="utf-8").splitlines()
    # the sep= line is written back (audit AU3 N3), then the header
    assert written[:2] == ["sep=;", "age;region;hours;w"]
    hours = [line.split(";")[2] for line in written[2:]]
    assert hours[3] == "" and all(h.isdigit() for i, h in enumerate(hours) if i != 3), hours
