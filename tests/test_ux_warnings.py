"""Warnings a first-time user missed or saw twice (user audit UX: F4, F6, F7, F12).

- F4: ``suda --missing`` lists missing-value codes; the rule words of the other
  commands' ``--missing`` (wildcard, category, drop) are refused in one line, and a
  code that matches no key value is warned about once.
- F6: ``protect`` says once that a key writes one number two ways (the input's
  caveat), not again for the protected file.
- F7: ``compare`` says a warning several models give once, naming them, and does not
  advise running ``sdcbayes compare``.
- F12: ``protect`` warns, before the steps run, that noise, micro-aggregation or rank
  swapping of a constant column changes nothing.

All CLI runs are in this process with the working directory set to ``tmp_path``.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

WARN = "sdcbayes: warning: "


def _warning_lines(stderr: str, fragment: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith(WARN) and fragment in ln]


# --------------------------------------------------------------------------- F4: suda
@pytest.fixture()
def suda_csv(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(4)
    n = 80
    frame = pd.DataFrame({"age": rng.choice([20, 30, 40, 50], n),
                          "sex": rng.choice(["m", "f"], n),
                          "region": rng.choice(["a", "b", "c"], n)})
    frame.loc[:5, "age"] = -9  # six records coded missing on age
    frame.to_csv(tmp_path / "s.csv", index=False)
    return tmp_path / "s.csv"


@pytest.mark.parametrize("word", ["category", "wildcard", "drop", "Category"])
def test_suda_missing_refuses_rule_words(capsys, suda_csv, word):
    proc = run_in_process(capsys, "suda", str(suda_csv), "--keys", "age,sex,region",
                          "--missing", word, "--out", "o")
    assert_one_line_error(proc, f"--missing {word!r}", "suda's --missing lists missing-value "
                          "codes", "matches no value", "--na-values")
    assert not (suda_csv.parent / "o").exists()  # refused before any work


def test_suda_missing_code_matching_nothing_warns_once(capsys, suda_csv):
    proc = run_in_process(capsys, "suda", str(suda_csv), "--keys", "age,sex,region",
                          "--missing", "-9,-998,x", "--out", "o")
    assert proc.returncode == 0, proc.stderr
    lines = _warning_lines(proc.stderr, "--missing")
    assert len(lines) == 1, proc.stderr
    assert "'-998', 'x' match no value of the keys" in lines[0]
    assert "'-9'" not in lines[0]  # -9 is on age: it matches
    s = json.loads((suda_csv.parent / "o" / "summary.json").read_text())
    assert s["warnings"] == [lines[0].removeprefix(WARN)]
    assert s["n_missing_key_records"] == 6  # the code that matches still works
    # every code matches: no warning
    proc = run_in_process(capsys, "suda", str(suda_csv), "--keys", "age,sex,region",
                          "--missing", "-9", "--out", "o2")
    assert proc.returncode == 0, proc.stderr
    assert not _warning_lines(proc.stderr, "--missing"), proc.stderr


def test_suda_missing_code_given_to_na_values_too_is_not_warned(capsys, suda_csv):
    # --na-values made -9 missing as the file was read: --missing -9 then matches nothing,
    # but the code is not wrong
    proc = run_in_process(capsys, "suda", str(suda_csv), "--keys", "age,sex,region",
                          "--na-values", "-9", "--missing", "-9", "--out", "o")
    assert proc.returncode == 0, proc.stderr
    assert not _warning_lines(proc.stderr, "--missing"), proc.stderr


# --------------------------------------------------------------------------- F6: protect
def test_protect_says_split_numbers_once(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # edu writes 0 as '0' and '0.0', 1 as '1' and '1.0'; the two '1.0' records are the only
    # ones of their cell, so 3-anonymity blanks them: the protected file keeps one number
    # written two ways where the input had two (the repeated warning said "and 1 more")
    edu = ["0"] * 20 + ["0.0"] * 20 + ["1"] * 18 + ["1.0"] * 2
    text = "edu,sex,w\n" + "".join(f"{e},{'mf'[i % 2]},10\n" for i, e in enumerate(edu))
    # sex splits the '1.0' pair into two cells of one
    (tmp_path / "m.csv").write_text(text)
    proc = run_in_process(capsys, "protect", "m.csv", "--keys", "edu,sex", "--weight", "w",
                          "--suppress-k", "3", "--out", "o")
    assert proc.returncode == 0, proc.stderr
    lines = _warning_lines(proc.stderr, "different texts of one number")
    assert len(lines) == 1, proc.stderr
    assert "and 1 more number" in lines[0]  # the input's counts
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert [w for w in s["warnings"] if "different texts of one number" in w] == \
        [lines[0].removeprefix(WARN)]
    # the '1.0' records were blanked: the after-assessment had a caveat to repeat
    released = pd.read_csv(tmp_path / "o" / "protected.csv", dtype=str)
    assert (released["edu"] == "1.0").sum() == 0
    assert (released["edu"] == "0.0").sum() == 20


# --------------------------------------------------------------------------- F7: compare
def test_merge_model_warnings_says_a_shared_warning_once():
    from sdcbayes.commands.compare import merge_model_warnings
    from sdcbayes.inference.diagnostics import check_truncation

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, all_used = check_truncation(np.full(100, 30), 30)
        _, most_used = check_truncation(np.r_[np.full(97, 30), np.full(3, 29)], 30)
    msgs = [f"lc: {all_used}", "lc-poisson: parameter tau1 has R-hat 1.019 > 1.01",
            f"lc-poisson: {all_used}", "a warning of the whole run"]
    out = merge_model_warnings(msgs, ["lc", "lc-poisson"])
    assert out == [f"lc, lc-poisson: {all_used}", msgs[1], msgs[3]]
    # one number differs (the share of draws): listed per model
    out = merge_model_warnings([f"lc: {all_used}", f"lc-poisson: {most_used}"],
                               ["lc", "lc-poisson"])
    assert out == ["lc, lc-poisson: " + all_used.replace("in 100% of", "in 100% (lc), "
                                                         "97% (lc-poisson) of")]
    # two numbers differ, or one model twice: kept apart
    two = ["a: tau1 R-hat 1.02 > 1.01 in 3 chains", "b: tau1 R-hat 1.03 > 1.01 in 4 chains"]
    assert merge_model_warnings(two, ["a", "b"]) == two
    same_model = ["a: tau1 R-hat 1.02 > 1.01", "a: tau1 R-hat 1.03 > 1.01"]
    assert merge_model_warnings(same_model, ["a", "b"]) == same_model


def test_compare_predictive_check_does_not_advise_compare():
    from sdcbayes.cli import cli_wording
    from sdcbayes.inference.diagnostics import check_predictive_uniques

    row = {"observed": 414, "mean": 493, "interval": (462, 525), "p_value": 1.0,
           "p_lower": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        msg = check_predictive_uniques(row)
    assert "sdcbayes compare" in cli_wording(msg, "assess")  # where it is advice
    in_compare = cli_wording(msg, "compare")
    assert "sdcbayes compare" not in in_compare and "compare models" not in in_compare
    assert in_compare.endswith("look for keys of very many levels (recode them) and check "
                               "structural zeros")


def test_compare_says_a_warning_of_two_models_once(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(7)
    n = 120
    pd.DataFrame({"a": rng.choice(list("xyz"), n),
                  "b": rng.choice(list("pq"), n)}).to_csv(tmp_path / "c.csv", index=False)
    # no weights: each closed-form model is warned of it
    proc = run_in_process(capsys, "compare", "c.csv", "--keys", "a,b",
                          "--models", "cf1=closed-form,cf2=closed-form", "--out", "o")
    assert proc.returncode == 0, proc.stderr
    from sdcbayes.cli import CLOSED_FORM_NO_WEIGHTS_NOTE

    shared = f"cf1, cf2: {CLOSED_FORM_NO_WEIGHTS_NOTE}"
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith(WARN)]
    assert lines == [WARN + shared], proc.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["warnings"] == [shared]


# --------------------------------------------------------------------------- F12: protect
@pytest.fixture()
def const_csv(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(12)
    n = 60
    pd.DataFrame({"age": rng.choice(["20s", "30s", "40s"], n), "sex": rng.choice(["m", "f"], n),
                  "w": 20.0, "income": rng.lognormal(8, 0.5, n).round(0),
                  "const": 5.0}).to_csv(tmp_path / "k.csv", index=False)
    return tmp_path / "k.csv"


def test_protect_warns_of_constant_columns_for_each_option(capsys, const_csv):
    proc = run_in_process(capsys, "protect", "k.csv", "--keys", "age,sex", "--weight", "w",
                          "--noise", "const,income", "--microaggregate", "const",
                          "--rank-swap", "const", "--out", "o")
    assert proc.returncode == 0, proc.stderr
    lines = _warning_lines(proc.stderr, "is constant")
    assert [ln.removeprefix(WARN).split(":")[0] for ln in lines] == \
        ["--microaggregate", "--rank-swap", "--noise"], proc.stderr
    for ln, what in zip(lines, ["micro-aggregation", "rank swapping", "noise"], strict=True):
        assert f"column 'const' is constant (every value is 5.0), so {what} changes " \
               "nothing" in ln
        assert "leave it out of --" in ln and "income" not in ln
    s = json.loads((const_csv.parent / "o" / "summary.json").read_text())
    assert [w for w in s["warnings"] if "is constant" in w] == \
        [ln.removeprefix(WARN) for ln in lines]
    # what the warning says: the column is as it was, and has no IL1
    released = pd.read_csv(const_csv.parent / "o" / "protected.csv")
    assert (released["const"] == 5.0).all()
    assert "il1" not in s["information_loss"]["per_variable"]["const"]


def test_protect_warns_of_a_constant_column_before_the_steps(capsys, const_csv, monkeypatch):
    from sdcbayes.commands import protect
    from sdcbayes.exceptions import InputError

    def stop(*args, **kwargs):
        raise InputError("stopped in the step")

    monkeypatch.setattr(protect, "_run_step", stop)
    (const_csv.parent / "r.json").write_text(json.dumps(
        {"steps": [{"step": "noise", "columns": ["income", "const"], "level": 0.1}]}))
    proc = run_in_process(capsys, "protect", "k.csv", "--keys", "age,sex", "--weight", "w",
                          "--recipe", "r.json", "--out", "o")
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    warned = _warning_lines(proc.stderr, "is constant")
    assert len(warned) == 1 and warned[0].startswith(
        f"{WARN}step 1 (noise): column 'const' is constant"), proc.stderr
    assert 'leave it out of the step\'s "columns"' in warned[0]
    assert lines.index(warned[0]) < len(lines) - 1 and "stopped in the step" in lines[-1]


def test_protect_no_constant_warning_for_varying_columns(capsys, const_csv):
    proc = run_in_process(capsys, "protect", "k.csv", "--keys", "age,sex", "--weight", "w",
                          "--noise", "income", "--out", "o")
    assert proc.returncode == 0, proc.stderr
    assert not _warning_lines(proc.stderr, "is constant"), proc.stderr


@pytest.mark.parametrize("word", ["category", "Drop", "wildcard"])
def test_suda_api_refuses_a_bare_rule_word_as_missing(word):
    # the CLI refuses them in --missing; the function as well, where a code list is meant
    # (a rule word in a list is taken as the code it says it is)
    from sdcbayes.exceptions import InputError
    from sdcbayes.risk.suda import suda

    frame = pd.DataFrame({"a": list("xxyz"), "b": list("1122")})
    with pytest.raises(InputError, match="not a rule"):
        suda(frame, ["a", "b"], missing=word)
    assert suda(frame, ["a", "b"], missing=[word]).summary()["n_records"] == 4
