"""Audit Q's command-line findings (does the documentation say what the software does?).

Finding 2: ``compare`` on a file with missing key values under the default ``--missing
wildcard`` is refused in one line before anything is printed or fitted, and
``compare_models`` says why when no model is left. Finding 3: confirmed structural-zero
rules from a file (``assess --structural-zeros RULES.json``, ``compare``'s
``latent-class:structural-zeros=RULES.json``), checked before any work. Finding 9:
``--na-values`` in assess, compare, protect and suda; ``protect`` writes the codes back
where no step changed the cell. Findings 11, 12, 17: help texts. Finding 14: ``decide``
numbers its domains in decisions.csv. Finding 17: ``decide`` prints its own progress
line, not PyMC's log lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from clitools import assert_one_line_error, run_cli, run_in_process

#: The smallest latent-class fit that runs: a few seconds.
TINY_LC = ["--draws", "20", "--tune", "20", "--chains", "1", "--ppc", "0",
           "--overdispersion", "none", "--classes", "5", "--seed", "1"]
KEYS = "age,sex,occupation"

AGES = ["0-9", "10-19", "20-39", "40-64", "65+"]
JOBS = ["none", "student", "clerical", "craft", "retired"]


def _frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    """Records whose children (age 0-9) all have occupation 'none': a structural zero."""
    rng = np.random.default_rng(seed)
    age = rng.choice(AGES, n)
    job = rng.choice(JOBS[1:], n)
    job = np.where(age == "0-9", "none", job)
    return pd.DataFrame({"age": age, "sex": rng.choice(["f", "m"], n), "occupation": job,
                         "w": rng.uniform(10, 40, n).round(2)})


@pytest.fixture()
def survey(tmp_path) -> Path:
    path = tmp_path / "survey.csv"
    _frame().to_csv(path, index=False)
    return path


def _rules(tmp_path: Path, content, name: str = "rules.json") -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content),
                    encoding="utf-8")
    return path


def _option(command: str, name: str):
    from sdcbayes.cli import cli

    return next(p for p in cli.commands[command].params if p.name == name)


# --------------------------------------------------------------------------- finding 2
def test_compare_refuses_wildcard_missing_keys_up_front(capsys, tmp_path):
    df = _frame()
    df.loc[[3, 7], "occupation"] = np.nan
    path = tmp_path / "holes.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "compare", str(path), "--keys", KEYS, "--weight", "w",
                          "--out", str(out))
    # one line, nothing printed before it (no note, no "fitting 0 model(s)"), no folder
    assert_one_line_error(proc, "2 records have missing key values", "--missing wildcard",
                          "each record in one cell", "--missing category",
                          "--missing drop")
    assert "fitting" not in proc.stderr and "note" not in proc.stderr
    assert "[{" not in proc.stderr and proc.stdout == ""
    assert not out.exists()
    # what the message names works: --missing drop runs (the closed form alone, fast)
    proc = run_in_process(capsys, "compare", str(path), "--keys", KEYS, "--weight", "w",
                          "--missing", "drop", "--models", "closed=closed-form",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr


def test_compare_models_help_no_longer_says_only_two_models_are_left_out():
    text = _option("compare", "models").help
    assert "latent-class and poisson-gamma with --missing wildcard" not in text
    assert "refused for every model" in text
    assert "category" in _option("compare", "missing").help


def test_compare_models_with_no_model_left_says_why():
    from sdcbayes.exceptions import InputError
    from sdcbayes.microdata import Microdata
    from sdcbayes.risk.compare import compare_models

    df = _frame()
    df.loc[[3, 7], "occupation"] = np.nan
    md = Microdata(df, keys=KEYS.split(","), weight="w")  # missing="wildcard"
    with pytest.raises(InputError) as err:
        compare_models(md, [])
    msg = str(err.value)
    assert "2 record(s) have missing key values" in msg
    assert "missing='category'" in msg and "missing='drop'" in msg
    assert "[{" not in msg  # no Python-list example
    with pytest.raises(InputError, match="give at least one model specification"):
        compare_models(Microdata(df, keys=KEYS.split(","), weight="w", missing="drop"), [])


# --------------------------------------------------------------------------- finding 3
RULE = [{"age": ["0-9"], "occupation": {"not": ["none"]}}]


def test_assess_takes_confirmed_structural_zero_rules_from_a_file(capsys, survey, tmp_path):
    rules = _rules(tmp_path, RULE)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(survey), "--keys", KEYS, "--weight", "w",
                          "--structural-zeros", str(rules), *TINY_LC, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "structural-zero rules" in proc.stdout and "given" in proc.stdout
    settings = json.loads((out / "summary.json").read_text())["provenance"]["settings"]
    assert settings["structural_zeros"] == "given"
    assert settings["structural_zero_rules"] == RULE
    assert settings["structural_zeros_file"] == str(rules)


@pytest.mark.parametrize(("content", "fragments"), [
    (None, ["no such file", "none, auto"]),
    ("[{\"age\": [\"0-9\"]", ["not valid JSON"]),
    ({"age": ["0-9"]}, ["JSON object, not a list"]),
    ([], ["holds no rule", "--structural-zeros none"]),
    (["age"], ["rule 1 must be a non-empty mapping"]),
    ([{"age": {"but": ["0-9"]}}], ["rule 1, key 'age'", '{"not": [levels]}']),
    ([{"ocupation": ["none"]}], ["'ocupation'", "did you mean 'occupation'"]),
    ([{"age": ["0-99"], "occupation": ["none"]}], ["level(s) of 'age'", "'0-99'",
                                                   "did you mean '0-9'"]),
    ([{"age": ["10-19"], "occupation": ["student"]}], ["rule 1 forbids combinations the "
                                                       "data contain", "age=10-19"]),
])
def test_assess_structural_zero_rules_are_checked_before_any_work(capsys, survey, tmp_path,
                                                                  content, fragments):
    rules = tmp_path / "missing.json" if content is None else _rules(tmp_path, content)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(survey), "--keys", KEYS, "--weight", "w",
                          "--structural-zeros", str(rules), *TINY_LC, "--out", str(out))
    assert_one_line_error(proc, f"--structural-zeros {rules}", *fragments)
    assert "fitting" not in proc.stderr and not out.exists()


def test_compare_latent_class_takes_a_rules_file(capsys, survey, tmp_path):
    rules = _rules(tmp_path, RULE)
    out = tmp_path / "o"
    models = f"lc=latent-class:structural-zeros={rules},overdispersion=none,classes=5"
    proc = run_in_process(capsys, "compare", str(survey), "--keys", KEYS, "--weight", "w",
                          "--models", models, "--draws", "20", "--tune", "20",
                          "--chains", "1", "--seed", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    # finding 17: the term assess uses
    assert "after 20 tuning steps" in proc.stderr and "burn-in" not in proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["models"][0]["options"]["structural_zeros"] == RULE
    assert summary["structural_zeros_files"] == {"lc": str(rules)}
    # a level the data lack: one line naming the model and the file, nothing fitted
    bad = _rules(tmp_path, [{"age": ["0-99"], "occupation": ["none"]}], "bad.json")
    proc = run_in_process(capsys, "compare", str(survey), "--keys", KEYS, "--weight", "w",
                          "--models", f"lc=latent-class:structural-zeros={bad}",
                          "--out", str(tmp_path / "o2"))
    assert_one_line_error(proc, f"--models lc structural-zeros={bad}", "'0-99'",
                          "did you mean '0-9'")
    assert "fitting" not in proc.stderr and not (tmp_path / "o2").exists()


# --------------------------------------------------------------------------- finding 9
@pytest.fixture()
def coded(tmp_path) -> Path:
    """-9 means 'refused' in occupation and in the weight-free column inc."""
    df = _frame()
    df["inc"] = np.arange(len(df)) * 10
    df.loc[[0, 4, 9], "occupation"] = "-9"
    df.loc[[1, 5], "inc"] = -9
    path = tmp_path / "coded.csv"
    df.to_csv(path, index=False)
    return path


def test_assess_na_values_makes_codes_missing(capsys, coded, tmp_path):
    common = ["assess", str(coded), "--keys", KEYS, "--weight", "w", "--model",
              "closed-form", "--missing", "drop", "-q"]
    proc = run_in_process(capsys, *common, "--out", str(tmp_path / "plain"))
    assert proc.returncode == 0, proc.stderr
    proc = run_in_process(capsys, *common, "--na-values", "-9,99", "--out", str(tmp_path / "na"))
    assert proc.returncode == 0, proc.stderr
    plain = json.loads((tmp_path / "plain" / "summary.json").read_text())
    na = json.loads((tmp_path / "na" / "summary.json").read_text())
    assert plain["n_records"] == 200 and na["n_records"] == 197  # the -9 records dropped
    assert na["provenance"]["input"]["na_values"] == ["-9", "99"]
    assert "na_values" not in plain["provenance"]["input"]
    # an empty list is refused in one line
    proc = run_in_process(capsys, *common, "--na-values", ",", "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, "--na-values is empty", "--na-values -9,99,.")


def test_compare_na_values(capsys, coded, tmp_path):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "compare", str(coded), "--keys", KEYS, "--weight", "w",
                          "--models", "closed=closed-form", "--na-values", "-9",
                          "--out", str(out), "-q")
    # -9 is now a missing key value: wildcard is refused, as for an empty field
    assert_one_line_error(proc, "3 records have missing key values", "--missing category")
    proc = run_in_process(capsys, "compare", str(coded), "--keys", KEYS, "--weight", "w",
                          "--models", "closed=closed-form", "--na-values", "-9",
                          "--missing", "drop", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["input"]["na_values"] == ["-9"]


def test_suda_na_values_matches_missing_codes(capsys, coded, tmp_path):
    common = ["suda", str(coded), "--keys", KEYS, "-q"]
    assert run_in_process(capsys, *common, "--missing", "-9",
                          "--out", str(tmp_path / "m")).returncode == 0
    assert run_in_process(capsys, *common, "--na-values", "-9",
                          "--out", str(tmp_path / "na")).returncode == 0
    assert run_in_process(capsys, *common, "--out", str(tmp_path / "plain")).returncode == 0
    m = pd.read_csv(tmp_path / "m" / "records.csv")
    na = pd.read_csv(tmp_path / "na" / "records.csv")
    plain = pd.read_csv(tmp_path / "plain" / "records.csv")
    pd.testing.assert_frame_equal(m, na)
    assert not m.equals(plain)
    s = json.loads((tmp_path / "na" / "summary.json").read_text())
    assert s["provenance"]["input"]["na_values"] == ["-9"]


def test_protect_na_values_keeps_the_codes_in_a_csv(capsys, coded, tmp_path):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(coded), "--keys", KEYS, "--suppress-k", "2",
                          "--na-values", "-9", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    text = pd.read_csv(out / "protected.csv", dtype=str, keep_default_na=False)
    src = pd.read_csv(coded, dtype=str, keep_default_na=False)
    assert (text.loc[[0, 4, 9], "occupation"] == "-9").all()
    assert (text.loc[[1, 5], "inc"] == "-9").all()
    assert (text["inc"] == src["inc"]).all()  # no step touched inc
    # the suppressions are the only changes
    log = pd.read_csv(out / "log.csv")
    changed = (text != src).to_numpy().sum()
    assert changed == len(log) > 0


@pytest.mark.parametrize("ext", [".sav", ".dta"])
def test_protect_na_values_keeps_the_codes_in_spss_and_stata(capsys, tmp_path, ext):
    rng = np.random.default_rng(1)
    n = 120
    df = pd.DataFrame({"age": rng.integers(1, 5, n).astype(float),
                       "sex": rng.integers(1, 3, n).astype(float),
                       "inc": rng.normal(1000, 200, n).round(1)})
    df.loc[[0, 5, 9], "age"] = -9
    df.loc[[1, 7], "inc"] = -9
    labels = {"age": {1: "young", 2: "mid", 3: "old", 4: "very old", -9: "Refused"},
              "sex": {1: "m", 2: "f"}}
    path = tmp_path / f"t{ext}"
    write, read = ((pyreadstat.write_sav, pyreadstat.read_sav) if ext == ".sav"
                   else (pyreadstat.write_dta, pyreadstat.read_dta))
    write(df, str(path), variable_value_labels=labels)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--suppress-k",
                          "3", "--na-values", "-9", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    got, meta = read(str(out / f"protected{ext}"))
    assert (got.loc[[0, 5, 9], "age"] == -9).all()
    assert (got.loc[[1, 7], "inc"] == -9).all()
    assert {float(k): v for k, v in meta.variable_value_labels["age"].items()}[-9.0] == "Refused"
    np.testing.assert_array_equal(got["inc"], df["inc"])  # no step touched inc
    # the codes were missing for the steps: none of them was suppressed or counted
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["input"]["na_values"] == ["-9"]


@pytest.mark.parametrize("command", ["assess", "compare", "protect", "suda"])
def test_na_values_is_an_option_of_every_reading_command(command):
    assert "--na-values -9,99,." in _option(command, "na_values").help


def test_suda_help_explains_missing_against_na_values():
    text = _option("suda", "missing_codes").help
    assert "key columns" in text and "--na-values" in text


# --------------------------------------------------------------------------- 11, 12, 17
def test_assess_weight_help_says_p_1_is_the_closed_forms():
    text = _option("assess", "weight").help
    assert "--model closed-form counts every record as its own population (p = 1)" in text
    assert "posterior models" in text and "refuse" in text


@pytest.mark.parametrize("command", ["suda", "protect"])
def test_suda_and_protect_help_list_every_input_format(capsys, command):
    proc = run_in_process(capsys, command, "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for ext in (".csv.gz", ".tsv", ".parquet", ".pq", ".zsav", ".por", ".dta", ".sas7bdat",
                ".xpt"):
        assert ext in text, (command, ext)


@pytest.mark.parametrize("command", ["assess", "compare", "protect"])
def test_max_levels_help_shows_its_default(command):
    from sdcbayes.microdata import DEFAULT_MAX_LEVELS

    assert f"[default: {DEFAULT_MAX_LEVELS}]" in _option(command, "max_levels").help


def test_quiet_help_is_worded_the_same_in_every_command():
    texts = {c: _option(c, "quiet").help for c in ("assess", "compare", "decide", "protect",
                                                   "suda")}
    assert set(texts.values()) == {"Print nothing on success but warnings (on stderr)."}


def test_protect_recipe_help_names_where_the_format_is():
    text = _option("protect", "recipe").help
    assert "README section 'Protection recipes'" in text
    assert "module documentation" not in text


def test_compare_tune_help_says_tuning_steps():
    text = _option("compare", "tune").help
    assert "burn-in sweeps" not in text and "Tuning" in text


# --------------------------------------------------------------------------- finding 14
@pytest.fixture()
def domains(tmp_path) -> Path:
    rng = np.random.default_rng(3)
    m = 12
    n = rng.integers(20, 60, m)
    y = rng.binomial(n, 0.15)
    path = tmp_path / "domains.csv"
    pd.DataFrame({"y": y, "n": n, "N": n * 8}).to_csv(path, index=False)
    return path


def test_decide_numbers_the_domains_without_domain(capsys, domains, tmp_path):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "decide", str(domains), "--y", "y", "--n", "n", "--N", "N",
                          "--alpha", "1", "--beta", "10", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    dec = pd.read_csv(out / "decisions.csv")
    assert list(dec.columns) == ["domain", "R1", "R0", "ratio", "publish", "order"]
    assert dec["domain"].tolist() == list(range(12))
    table = pd.read_csv(domains)
    np.testing.assert_array_equal(dec["R0"], table["y"])  # L0 = y, row by row
    # the report's tables number the domains the same way
    html = (out / "report.html").read_text()
    assert "<th>domain</th>" in html


# --------------------------------------------------------------------------- finding 17
def test_decide_prints_its_own_progress_not_pymc_log_lines(domains, tmp_path):
    proc = run_cli("decide", str(domains), "--y", "y", "--n", "n", "--N", "N",
                   "--draws", "20", "--tune", "20", "--chains", "1", "--max-draws", "10",
                   "--seed", "1", "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "fitting beta-binomial (nuts: 1 chains x 20 draws after 20 tuning steps)" \
        in proc.stderr
    for chatter in ("Initializing NUTS", "Sequential sampling", "NUTS: [", "Sampling 1 chain"):
        assert chatter not in proc.stderr, proc.stderr
    # --quiet: not even the progress line
    proc = run_cli("decide", str(domains), "--y", "y", "--n", "n", "--N", "N",
                   "--draws", "20", "--tune", "20", "--chains", "1", "--max-draws", "10",
                   "--seed", "1", "--out", str(tmp_path / "q"), "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "fitting" not in proc.stderr and "Initializing" not in proc.stderr
