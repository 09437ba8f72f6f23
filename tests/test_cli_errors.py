"""Every failure mode of ``sdcbayes assess``, as a user meets it.

The cases that stop before any fitting call the console script's entry point,
``sdcbayes.cli.main``, in this process (the ``run`` fixture, ``clitools.run_main``): the
same code as the script without an interpreter start-up per case, with ``capfd`` the
stdout and stderr a terminal would show (what a reader library writes to file descriptor
2, and Python's warnings, included). Two run the installed script in a subprocess: an
--out that is a file, and the strict fit, whose one stderr line also says that PyMC's log
lines stay off (log records never reach stderr under pytest, ``clitools.run_main``).

Each case checks: exit status 2, exactly one stderr line starting with
``sdcbayes: error:``, the offending column or value named, the fix named in
command-line terms (an option, not a Python keyword), and no output folder.
Cases already covered by ``test_cli.py`` (missing --keys, unknown key/weight/
household column, unknown --model, bad --alpha, negative weights, a foreign
output folder) are not repeated here.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from clitools import run_cli, run_main
from test_cli_wording import _library_keywords, assert_no_python

#: A library keyword in snake_case, even without ``=`` ("raise target_accept"): the
#: command line spells it as an option (``--target-accept``). PYTHON_SPELLING, the
#: guard shared with test_cli_wording.py, catches the keyword forms with ``=``.
BARE_SNAKE_KEYWORD = re.compile(
    r"\b(" + "|".join(sorted((k for k in _library_keywords() if "_" in k), key=len,
                              reverse=True)) + r")\b"
)


def assert_speaks_options(line: str) -> None:
    """No Python spelling of a fix, and every --option named is one of `sdcbayes assess`."""
    assert_no_python(line, "assess")
    hit = BARE_SNAKE_KEYWORD.search(line)
    assert hit is None, f"library keyword {hit.group(0)!r} in: {line}"


def check_error(proc, out: Path, *fragments: str, guard: bool = True) -> str:
    """One ``sdcbayes: error:`` line (exit 2) holding ``fragments``, no output left.

    ``guard=False`` skips only the Python-spelling guard, for a known leak that a
    strict xfail test pins separately (so the rest of the case stays checked).
    """
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("sdcbayes: error:"), line
    assert "Traceback" not in proc.stderr
    for frag in fragments:
        assert frag in line, (frag, line)
    if guard:
        assert_speaks_options(line)
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if ".partial-" in p.name]
    return line


@pytest.fixture()
def run(capfd):
    """``run(*args)``: ``sdcbayes ARGS`` in this process, as a CompletedProcess."""
    return lambda *args: run_main(capfd, *args)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(5)
    n = 1500
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 8, n),
            "sex": rng.choice(["m", "f"], n),
            "w": rng.uniform(20, 80, n),
            "hid": np.repeat(np.arange(n // 3), 3).astype(float),
            "income": rng.normal(30_000, 10_000, n).round(2),  # continuous: 1500 levels
        }
    )
    paths = {"good": d / "good.csv"}
    frame.to_csv(paths["good"], index=False)
    frame.iloc[:0].to_csv(d / "empty.csv", index=False)
    paths["empty"] = d / "empty.csv"
    for name, col, row, value in (
        ("nonfinite", "w", 17, np.inf),
        ("zero", "w", 4, 0.0),
        ("below_one", "w", 9, 0.5),
        ("no_hid", "hid", 11, np.nan),
    ):
        bad = frame.copy()
        bad.loc[row, col] = value
        if name == "nonfinite":
            bad.loc[3, "w"] = np.nan
        paths[name] = d / f"{name}.csv"
        bad.to_csv(paths[name], index=False)
    paths["xlsx"] = d / "survey.xlsx"
    paths["xlsx"].write_bytes(b"PK not really")
    paths["corrupt_sav"] = d / "broken.sav"
    paths["corrupt_sav"].write_bytes(b"$FL2 truncated")
    paths["corrupt_parquet"] = d / "broken.parquet"
    paths["corrupt_parquet"].write_bytes(b"garbage")
    paths["afile"] = d / "results.txt"
    paths["afile"].write_text("not a folder")
    return paths


def test_file_problems(files, tmp_path, run):
    out = tmp_path / "out"
    proc = run("assess", str(tmp_path / "survey.sav"), "--keys", "age", "--out", str(out))
    check_error(proc, out, "survey.sav", "file not found", "check the path")
    proc = run("assess", str(files["xlsx"]), "--keys", "age", "--out", str(out))
    line = check_error(proc, out, "survey.xlsx", "'.xlsx'", "save the data as one of")
    assert ".sav" in line and ".dta" in line and ".sas7bdat" in line and ".parquet" in line
    for key in ("corrupt_sav", "corrupt_parquet"):
        proc = run("assess", str(files[key]), "--keys", "age", "--out", str(out))
        # the guard on these two lines: test_corrupt_file_message_names_no_python_reader
        check_error(proc, out, files[key].name, "could not read",
                    "check that the file is complete", guard=False)
    proc = run("assess", str(files["empty"]), "--keys", "age", "--out", str(out))
    check_error(proc, out, "no rows", "at least one record")


def test_in_process_cases_see_the_warnings_a_subprocess_prints(files, tmp_path, run,
                                                               monkeypatch):
    # the in-process cases keep the subprocess's check: a warning while the file is read
    # (pandas' DtypeWarning, say) printed on stderr before the error line is a second line
    import sdcbayes.microdata as microdata

    read = microdata.read_microdata

    def noisy(*args, **kwargs):
        warnings.warn("Columns (3) have mixed types", pd.errors.DtypeWarning, stacklevel=2)
        return read(*args, **kwargs)

    monkeypatch.setattr(microdata, "read_microdata", noisy)
    out = tmp_path / "out"
    proc = run("assess", str(files["zero"]), "--keys", "age,sex", "--weight", "w",
               "--out", str(out))
    assert "DtypeWarning: Columns (3) have mixed types" in proc.stderr, proc.stderr
    with pytest.raises(AssertionError):
        check_error(proc, out, "'w'", "zero or negative")


def test_corrupt_file_message_names_no_python_reader(files, tmp_path, capsys):
    from clitools import run_in_process  # in-process: no interpreter start-up

    for key in ("corrupt_sav", "corrupt_parquet"):
        proc = run_in_process(capsys, "assess", str(files[key]), "--keys", "age",
                              "--out", str(tmp_path / "out"))
        line = check_error(proc, tmp_path / "out", files[key].name, "could not read",
                           guard=False)
        assert_speaks_options(line)


def test_key_problems(files, tmp_path, run):
    out = tmp_path / "out"
    # a continuous variable as a key: names it, its level count, and the recode fix
    proc = run("assess", str(files["good"]), "--keys", "age,income", "--out", str(out))
    check_error(proc, out, "'income'", "1500 distinct values", "recode", "--max-levels")
    # a misspelt key: the close match is suggested
    proc = run("assess", str(files["good"]), "--keys", "age,sexx", "--out", str(out))
    check_error(proc, out, "'sexx'", "did you mean 'sex'", "check the spelling")
    # an unknown --missing policy lists the valid ones
    proc = run("assess", str(files["good"]), "--keys", "age", "--missing", "impute",
               "--out", str(out))
    check_error(proc, out, "--missing", "'impute'", "wildcard", "category", "drop")


def test_weight_and_household_problems(files, tmp_path, run):
    out = tmp_path / "out"
    args = ("--keys", "age,sex", "--weight", "w", "--out", str(out))
    proc = run("assess", str(files["nonfinite"]), *args)
    check_error(proc, out, "'w'", "2 missing or non-finite", "record 4 (line 5 of the file)",
                "impute")
    proc = run("assess", str(files["zero"]), *args)
    check_error(proc, out, "'w'", "zero or negative", "record 5 (line 6 of the file)", "positive")
    proc = run("assess", str(files["below_one"]), *args)
    check_error(proc, out, "'w'", "below 1", "0.5", "record 10 (line 11 of the file)",
                "--allow-weights-below-one")
    proc = run("assess", str(files["no_hid"]), "--keys", "age", "--household", "hid",
               "--out", str(out))
    check_error(proc, out, "'hid'", "1 missing id (at record 12 (line 13 of the file))",
                "--household")
    # the flag named in the message does accept such weights
    ok = run("assess", str(files["below_one"]), *args[:-1], str(tmp_path / "ok"),
             "--allow-weights-below-one", "--model", "closed-form", "-q")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == "" and (tmp_path / "ok" / "summary.json").exists()


def test_out_pointing_at_a_file(files, tmp_path):
    target = files["afile"]
    proc = run_cli("assess", str(files["good"]), "--keys", "age", "--out", str(target))
    check_error(proc, tmp_path / "never", str(target.name), "is a file", "folder")
    assert target.read_text() == "not a folder"


def test_out_under_a_file(files, tmp_path, run):
    # --out afile/sub: the folder can never be made there; refused before any work
    target = files["afile"]
    proc = run("assess", str(files["good"]), "--keys", "age", "--model", "closed-form",
               "--out", str(target / "sub"))
    check_error(proc, tmp_path / "never", str(target.name), "is a file", "folder")
    assert target.read_text() == "not a folder"


def test_variable_labels_accepted_and_unknown_label_suggested(tmp_path, run):
    frame = pd.DataFrame(
        {"v1": [1.0, 2.0, 1.0, 3.0], "v2": [1.0, 1.0, 2.0, 2.0], "wt": [10.0, 20, 30, 40]}
    )
    path = tmp_path / "s.sav"
    pyreadstat.write_sav(frame, str(path), column_labels=["Age group", "Sex", "Final weight"],
                         variable_value_labels={"v2": {1: "male", 2: "female"}})
    by_label = tmp_path / "by_label"
    proc = run("assess", str(path), "--keys", "age GROUP,Sex", "--weight", "final weight",
               "--model", "closed-form", "--out", str(by_label), "-q")
    assert proc.returncode == 0, proc.stderr
    by_name = tmp_path / "by_name"
    proc = run("assess", str(path), "--keys", "v1,v2", "--weight", "wt", "--model",
               "closed-form", "--out", str(by_name), "-q")
    assert proc.returncode == 0, proc.stderr
    a = pd.read_csv(by_label / "records.csv")
    b = pd.read_csv(by_name / "records.csv")
    pd.testing.assert_frame_equal(a, b)
    assert np.isclose(a["risk"].sum(), b["risk"].sum())
    out = tmp_path / "out"
    proc = run("assess", str(path), "--keys", "Age grup", "--out", str(out))
    check_error(proc, out, "'Age grup'", "did you mean 'Age group' (label of 'v1')",
                "check the spelling")


def test_strict_non_convergence_names_parameter_and_fix(tmp_path):
    out = tmp_path / "strict"
    proc = run_cli(
        "assess", "--model", "poisson-gamma", "--draws", "4", "--tune", "4",
        "--chains", "2", "--seed", "1", "--strict", "--out", str(out), "-q",
    )
    line = check_error(proc, out, "sampling diagnostics failed", "parameter ")
    # every diagnostic names its parameter and a fix in option form
    assert any(p in line for p in ("alpha", "beta", "omega", "mu")), line
    assert "--tune" in line or "--draws" in line, line


def test_large_file_status_on_stderr_unless_quiet(files, tmp_path, monkeypatch, capsys):
    # In-process with the row threshold lowered: a real 10^6-row file costs seconds.
    import sdcbayes.cli as cli

    monkeypatch.setattr(cli, "LARGE_FILE_ROWS", 100)
    monkeypatch.setattr(cli, "LARGE_FILE_BYTES", 1000)
    # weighted: without weights the closed form warns (on stderr, also under -q) that it
    # takes the file as the population (tests/test_cli.py); here only status lines are at stake
    args = ["assess", str(files["good"]), "--keys", "age,sex", "--weight", "w", "--model",
            "closed-form"]
    assert cli.main([*args, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert f"reading {files['good']}" in err and "MB) ..." in err
    assert "(1,500 rows); building the cell table ..." in err
    for flag in ("-q", "--json"):
        assert cli.main([*args, flag, "--out", str(tmp_path / flag.strip("-"))]) == 0
        assert capsys.readouterr().err == ""


def test_decide_and_compare_take_variable_labels(tmp_path, capsys):
    """Every column option of decide and compare takes an SPSS label; outputs name columns."""
    import json

    from clitools import assert_one_line_error, run_in_process

    domains = pd.DataFrame({"d": [1.0, 2, 3, 4, 5, 6], "yy": [1.0, 0, 3, 2, 5, 1],
                            "nn": [10.0, 8, 20, 15, 30, 9], "pp": [100.0, 90, 300, 120, 500, 80],
                            "m": [1.0, 2, 1, 1, 3, 1]})
    dpath = tmp_path / "domains.sav"
    pyreadstat.write_sav(domains, str(dpath), column_labels=[
        "Area code", "Sample count", "Sample size", "Population", "Multiplicity"])
    runs = {
        "name": ["--y", "yy", "--n", "nn", "--N", "pp", "--domain", "d", "--weight", "m"],
        "label": ["--y", "sample COUNT", "--n", "Sample size", "--N", "population",
                  "--domain", "Area code", "--weight", "multiplicity"],
    }
    got = {}
    for name, args in runs.items():
        out = tmp_path / f"decide-{name}"
        proc = run_in_process(capsys, "decide", str(dpath), *args, "--hyperparameters", "ml",
                              "--out", str(out), "-q")
        assert proc.returncode == 0, proc.stderr
        got[name] = pd.read_csv(out / "decisions.csv")
        summary = json.loads((out / "summary.json").read_text())
        assert summary["columns"] == {"y": "yy", "n": "nn", "N": "pp", "domain": "d",
                                      "weight": "m"}
    assert list(got["label"].columns)[0] == "d"
    pd.testing.assert_frame_equal(got["label"], got["name"])
    proc = run_in_process(capsys, "decide", str(dpath), "--y", "Sample cont", "--n", "nn",
                          "--N", "pp", "--out", str(tmp_path / "bad"))
    assert_one_line_error(proc, "--y 'Sample cont'", "did you mean 'Sample count' (label of 'yy')")

    rng = np.random.default_rng(2)
    n = 300
    micro = pd.DataFrame({"v1": rng.integers(1, 6, n).astype(float),
                          "v2": rng.integers(1, 3, n).astype(float),
                          "v3": rng.uniform(20, 80, n),
                          "v4": np.repeat(np.arange(n // 3), 3).astype(float)})
    mpath = tmp_path / "micro.sav"
    pyreadstat.write_sav(micro, str(mpath),
                         column_labels=["Age group", "Sex", "Final weight", "Household id"])
    runs = {"name": ["--keys", "v1,v2", "--weight", "v3", "--household", "v4"],
            "label": ["--keys", "age group,SEX", "--weight", "Final weight", "--household",
                      "household ID"]}
    tables = {}
    for name, args in runs.items():
        out = tmp_path / f"compare-{name}"
        proc = run_in_process(capsys, "compare", str(mpath), *args, "--models", "c=closed-form",
                              "--seed", "1",
                              "--out", str(out), "-q")
        assert proc.returncode == 0, proc.stderr
        tables[name] = (pd.read_csv(out / "comparison.csv"), pd.read_csv(out / "decisions.csv"))
    for a, b in zip(tables["label"], tables["name"], strict=True):
        pd.testing.assert_frame_equal(a.drop(columns=["fit_seconds"], errors="ignore"),
                                      b.drop(columns=["fit_seconds"], errors="ignore"))
    assert {"v1", "v2"} <= set(tables["label"][1].columns)
    proc = run_in_process(capsys, "compare", str(mpath), "--keys", "v1", "--household",
                          "Household", "--models", "c=closed-form", "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, "--household 'Household'", "'Household id' (label of 'v4')")


@pytest.mark.parametrize(
    "message",
    [
        "raise target_accept (e.g. 0.95)",        # bare keyword
        "pass allow_weights_below_one=True",      # PYTHON_SPELLING
        "more than max_levels=1000",
        "run more tuning steps (tune=2000)",
        "use missing='drop'",
        "raise --no-such-option",                 # an option assess lacks
    ],
)
def test_check_error_rejects_python_spelling(tmp_path, message):
    # the guard can fail: a line in Python spelling, otherwise well formed, is refused
    import subprocess

    proc = subprocess.CompletedProcess([], 2, "", f"sdcbayes: error: 'w': {message}\n")
    with pytest.raises(AssertionError):
        check_error(proc, tmp_path / "never", "'w'")
    fixed = subprocess.CompletedProcess([], 2, "", "sdcbayes: error: 'w': raise --max-levels\n")
    assert check_error(fixed, tmp_path / "never", "'w'").endswith("raise --max-levels")


def test_posterior_model_on_a_file_needs_the_population_size(files, tmp_path, run):
    """The default model estimates F_k: without weights or n/N it stops before any fitting."""
    out = tmp_path / "out"
    proc = run("assess", str(files["good"]), "--keys", "age,sex", "--out", str(out))
    check_error(proc, out, "--model latent-class", "population size", "--weight",
                "--sampling-fraction", "--model closed-form")
    assert "fitting" not in proc.stderr
    proc = run("assess", str(files["good"]), "--keys", "age,sex", "--model",
               "poisson-gamma", "--out", str(out))
    check_error(proc, out, "--model poisson-gamma", "population size")


def test_cross_validation_needs_four_records(tmp_path, run):
    """Too few records to split for the cross-validated kappa: one line naming the fix,
    before "fitting ..." (the library's message named a Python keyword, after it)."""
    data = tmp_path / "three.csv"
    pd.DataFrame({"age": [30, 30, 41], "sex": ["m", "m", "f"]}).to_csv(data, index=False)
    out = tmp_path / "out"
    proc = run("assess", str(data), "--keys", "age,sex", "--sampling-fraction", "0.1",
               "--out", str(out))
    check_error(proc, out, "--overdispersion cv", "at least 4 records", "got 3",
                "--overdispersion none")
    assert "fitting" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("weights", [[10, 20, 10, 4], [10, 20, 10, 4, 7]])
def test_negbin_without_a_within_cell_spread(tmp_path, weights, run):
    """negbin learns sigma from the weights' spread within cells: without one (constant
    weights in every cell; no cell of two records) one line before "fitting ...", naming
    the option that fits instead (the library's fix, sigma=<value>, has no option here)."""
    n = len(weights)
    frame = pd.DataFrame({"age": [30, 31, 30, 40, 50][:n], "sex": ["m", "f", "m", "f", "m"][:n],
                          "w": weights})
    if n == 5:  # every record a cell of its own
        frame["age"] = [30, 31, 32, 40, 50]
    data = tmp_path / "nb.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "out"
    proc = run("assess", str(data), "--keys", "age,sex", "--weight", "w", "--model",
               "negbin", "--out", str(out))
    line = check_error(proc, out, "--model negbin", "within", "--model closed-form")
    assert "sigma=" not in line
    assert "fitting" not in proc.stdout + proc.stderr
