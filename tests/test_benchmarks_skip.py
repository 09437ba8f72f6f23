"""Documented commands run as written (audit V): benchmark scripts without the shared
data and from any folder, and README.md's tutorial, output fields and command table.

Without the shared data folder (a user's fresh clone) a script that needs a population
prints why it skips and exits with status 1, as ``latent_class_accuracy.py`` does, with
no traceback (audit V, finding 1). Stored results named by bare file name, as
benchmarks/README.md used to, are found in ``benchmarks/results/`` (finding 2).

Each script runs in a subprocess from an empty working directory, with
``SDCBAYES_SHARED_DATA`` pointing at an empty (or absent) folder: it overrides the
folders :func:`sdcbayes.validation.shared_data_dir` would find beside the checkout, so
the data are really hidden. Every run stops before any fitting (about 2 s each).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _run(tmp_path: Path, script: str, *args: str,
         data_dir: Path | None) -> subprocess.CompletedProcess:
    """Run ``benchmarks/<script>`` in ``tmp_path``; ``data_dir`` (when given) as the shared
    data folder."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    if data_dir is not None:
        env["SDCBAYES_SHARED_DATA"] = str(data_dir)
    return subprocess.run([sys.executable, str(BENCH / script), *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)


# the cheapest documented configuration of each script (audit V's bench_cmds.txt)
NEEDS_DATA = [
    ("negbin_fit.py", "--draws", "20", "--tune", "20"),
    ("cv_by_stratum.py", "--population", "scotland13", "--fraction", "0.01",
     "--replicates", "1", "--kinds", "srs"),
    ("cv_profile_mass.py", "--population", "adult6", "--fraction", "0.1", "--replicates", "1"),
    ("cv_pairs.py", "--index", "--populations", "adult9", "--fractions", "0.01",
     "--kinds", "srs", "--replicates", "1"),
    ("cv_pairs.py", "--model-world", "--populations", "adult9", "--fractions", "0.01",
     "--replicates", "1"),
    # the reference behaviour the others follow
    ("latent_class_accuracy.py", "--populations", "adult6", "--fractions", "0.01",
     "--replicates", "1", "--baselines", ""),
]


@pytest.mark.parametrize("absent", [False, True], ids=["empty-folder", "no-folder"])
@pytest.mark.parametrize("command", NEEDS_DATA, ids=lambda c: " ".join(c[:2]))
def test_skips_with_a_message_without_the_shared_data(tmp_path, command, absent):
    data = tmp_path / "data"
    if not absent:
        data.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    proc = _run(work, *command, data_dir=data)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    skip = [line for line in proc.stderr.splitlines() if line.startswith("skip ")]
    assert len(skip) == 1, proc.stderr
    # it names the folder it looked in and how to point to the data
    assert str(data) in skip[0]
    assert "SDCBAYES_SHARED_DATA" in skip[0]
    assert ("is absent" in skip[0]) == absent
    assert proc.stdout == ""  # stopped before printing any table


def test_kappa_transfer_without_features_says_why_it_stops(tmp_path):
    # overdispersion_oracle_20 has no sample features: they are redrawn from the data
    proc = _run(tmp_path, "kappa_transfer.py", "--train", "kappa_transfer_train_15.csv.gz",
                "--evaluate", "overdispersion_oracle_20.csv.gz", data_dir=tmp_path / "none")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1
    assert "skip adult9:" in proc.stderr
    assert "cannot be redrawn without the population" in proc.stderr


# benchmarks/README.md's commands on stored results, with the bare file names they used
BARE_NAMES = [
    (("kappa_transfer.py", "--train", "kappa_transfer_train_15.csv.gz"),
     # the fit benchmarks/README.md quotes: 4.29 - 0.05 log(n/N) - 5.34 u, sd 1.70
     "log kappa = 4.286 -0.051 log_fraction -5.339 unique_share; residual sd 1.701"),
    (("kappa_rules.py", "--evaluate", "kappa_rules_50.csv.gz"), "max_abs_bias1"),
    (("kappa_halves.py", "--summarise", "kappa_halves.csv.gz"), "scotland13/srs/10%"),
]


@pytest.mark.parametrize("command, expected", BARE_NAMES, ids=[c[0] for c, _ in BARE_NAMES])
def test_bare_stored_names_are_read_from_results(tmp_path, command, expected):
    proc = _run(tmp_path, *command, data_dir=None)
    assert proc.returncode == 0, proc.stderr
    assert expected in proc.stdout


def test_a_file_in_the_working_directory_wins_over_the_stored_one(tmp_path):
    # a user's own kappa_halves.csv.gz (one design of the stored table) is read, not
    # the stored file of the same name
    import pandas as pd

    stored = pd.read_csv(BENCH / "results" / "kappa_halves.csv.gz")
    first = stored.design.iloc[0]
    stored[stored.design == first].to_csv(tmp_path / "kappa_halves.csv.gz", index=False)
    proc = _run(tmp_path, "kappa_halves.py", "--summarise", "kappa_halves.csv.gz",
                data_dir=None)
    assert proc.returncode == 0, proc.stderr
    assert first in proc.stdout
    others = set(stored.design) - {first}
    assert others and not any(d in proc.stdout for d in others)


def test_bare_name_found_nowhere_is_still_an_error(tmp_path):
    proc = _run(tmp_path, "kappa_rules.py", "--evaluate", "no_such_file.csv.gz",
                data_dir=None)
    assert proc.returncode != 0
    assert "no_such_file.csv.gz" in proc.stderr


# --------------------------------------------------------------------------------------
# README.md as written (audit V, findings 4-6): the tutorial's files, where summary.json
# keeps the printed warnings, compare's latent-class options
# --------------------------------------------------------------------------------------

ROOT = BENCH.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
SDCBAYES = [sys.executable, "-c", "from sdcbayes.cli import main; main()"]


def _section(title: str) -> str:
    return README.split(f"\n## {title}\n")[1].split("\n## ")[0]


def _block(text: str, lang: str) -> str:
    """The first fenced block of ``lang`` in ``text``."""
    return text.split(f"```{lang}\n")[1].split("```")[0]


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([*SDCBAYES, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def tutorial_files(tmp_path_factory):
    """The folder where the tutorial's Python lines (README.md) wrote its files."""
    folder = tmp_path_factory.mktemp("tutorial")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-c", _block(_section("A five-minute tutorial"),
                                                        "python")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return folder


def test_tutorial_files_are_described_and_written(tutorial_files):
    tutorial = _section("A five-minute tutorial")
    assert "None is shipped" in tutorial
    assert (tutorial_files / "survey.sav").is_file()
    assert (tutorial_files / "survey2.csv").is_file()
    # the tutorial's own command on the file it wrote
    proc = _cli(tutorial_files, "assess", "survey.sav", "--keys", "age,sex,region,occupation",
                "--weight", "w", "--model", "closed-form", "--method", "approx", "--out", "r2")
    assert proc.returncode == 0, proc.stderr
    assert "sample uniques                                 414" in proc.stdout


def test_recipe_example_prints_the_quoted_numbers(tutorial_files):
    recipes = " ".join(_section("Protection recipes").split())
    (tutorial_files / "recipe.json").write_text(_block(_section("Protection recipes"), "json"))
    proc = _cli(tutorial_files, "protect", "survey2.csv", "--keys", "age,sex,region,occupation",
                "--weight", "w", "--recipe", "recipe.json", "--out", "protected2")
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    for before, after in (("414", "0"), ("103.89", "14.96"), ("806", "0")):
        assert f"{before} → {after}" in recipes  # as the README quotes them
        assert f"{before} -> {after}" in out
    assert "occupation 20.5% suppressed" in recipes
    assert "occupation 0% changed, 20.5% suppressed" in out


def test_printed_warnings_are_where_the_readme_says(tutorial_files, tmp_path):
    fields = _section("Output files")
    assert len([line for line in fields.splitlines()
                if line.startswith("| `warnings`, `data` |")]) == 1
    # the row's explanation: the block below the field table, up to `records.csv`'s list
    row = [fields.split("\n**`warnings`**", 1)[1].split("\n\n`records.csv`", 1)[0]]
    assert "`diagnostics.problems`" in row[0]
    # a fit's warnings (short chains, few classes: convergence and truncation) are the
    # diagnostics' problems, word for word, and there is no `warnings` key
    proc = _cli(tmp_path, "assess", "--seed", "1", "--draws", "20", "--tune", "10",
                "--chains", "2", "--ppc", "0", "--overdispersion", "none", "--classes", "5",
                "--no-posterior", "--out", "lc")
    assert proc.returncode == 0, proc.stderr
    printed = [line.split("sdcbayes: warning: ", 1)[1] for line in proc.stderr.splitlines()
               if line.startswith("sdcbayes: warning: ")]
    assert any("latent classes are occupied" in w for w in printed)
    summary = json.loads((tmp_path / "lc" / "summary.json").read_text())
    assert "warnings" not in summary
    assert summary["diagnostics"]["problems"] == printed
    # an input warning (a closed-form run without weights) is under `warnings`
    assert "a closed-form run without weights" in row[0]
    proc = _cli(tutorial_files, "assess", "survey.sav", "--keys", "age,sex,region,occupation",
                "--model", "closed-form", "--out", "noweights")
    assert proc.returncode == 0, proc.stderr
    printed = [line.split("sdcbayes: warning: ", 1)[1] for line in proc.stderr.splitlines()
               if line.startswith("sdcbayes: warning: ")]
    summary = json.loads((tutorial_files / "noweights" / "summary.json").read_text())
    assert len(printed) == 1 and "whole population" in printed[0]
    assert summary["warnings"] == printed


def test_compare_row_names_every_option_and_latent_class_option():
    from sdcbayes.risk.compare import _CLI_OPTION_NAMES, LATENT_CLASS_OPTIONS

    # the command reference's compare subsection: its synopsis and description
    row = [_section("Command reference").split("\n### `compare`\n")[1].split("\n### ")[0]]
    assert "```text\nsdcbayes compare [DATA] --keys" in row[0]
    helptext = _cli(ROOT, "compare", "--help").stdout
    # click indents an option by two spaces, its wrapped help by more
    options = set(re.findall(r"^  (?:-\w, )?(--[a-z][a-z-]*)", helptext, flags=re.M))
    options -= {"--quiet", "--json", "--help"}  # every command's, documented once above
    assert options and not [o for o in sorted(options) if o not in row[0]]
    # latent-class's OPTION=VALUE items of --models: every one the parser takes
    assert set(_CLI_OPTION_NAMES.values()) == set(LATENT_CLASS_OPTIONS)
    for name in _CLI_OPTION_NAMES:
        assert f"{name}=" in row[0], name


@pytest.mark.parametrize("command", ["assess", "decide", "suda", "compare", "protect"])
def test_command_synopsis_names_every_option(command):
    # each command's subsection opens with its synopsis in a text block: every option
    # `sdcbayes COMMAND --help` lists is in it, and nothing else is called an option there
    part = _section("Command reference").split(f"\n### `{command}`\n")[1].split("\n### ")[0]
    synopsis = _block(part, "text")
    assert synopsis.startswith(f"sdcbayes {command} ")
    helptext = _cli(ROOT, command, "--help").stdout
    options = set(re.findall(r"^  (?:-\w, )?(--[a-z][a-z-]*)", helptext, flags=re.M))
    options |= set(re.findall(r"^  --[a-z][a-z-]* / (--[a-z][a-z-]*)", helptext, flags=re.M))
    options -= {"--help"}
    assert options, helptext
    # compare's --models items are named after assess's options ("as assess's --classes, …")
    named = set(re.findall(r"(--[a-z][a-z-]*)", re.sub(r"as assess's[^;]*;", "", synopsis)))
    assert not sorted(options - named), f"{command}: options not in the README synopsis"
    assert not sorted(named - options), f"{command}: README synopsis names unknown options"


def test_vs_sdcmicro_times_sdcbayes_alone_without_r(tmp_path):
    # a fresh machine has no R: the sdcMicro column says so and sdcbayes is still timed;
    # a tiny file, every operation, so that an API change breaks this and not the study
    out = _run(tmp_path, "vs_sdcmicro.py", "--sizes", "300", "--repeats", "1", "--no-r",
               data_dir=None)
    assert out.returncode == 0, out.stderr
    assert "sdcMicro: not timed (--no-r" in out.stdout
    rows = [line for line in out.stdout.splitlines() if line.rstrip().endswith("-")
            and "300" in line]
    # 7 operations and the greedy suppression, each with its sdcbayes time and no ratio
    assert len(rows) == 8, out.stdout
    for line in rows:
        fields = line.split()
        assert fields[-3] == "-" and float(fields[-2]) >= 0, line
