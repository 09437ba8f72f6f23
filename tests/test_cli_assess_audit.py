"""Fixes from the audit of ``sdcbayes assess`` (outputs, errors, options that do not apply).

Each test fails without its fix. They run the console script's entry point in this
process on the closed form (the demo or a tiny file), or fail before any work.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat

import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

import sdcbayes._cliutils as cliutils
from sdcbayes.cli import _print_summary, cli


def closed_form(capsys, out, *args):
    return run_in_process(capsys, "assess", "--model", "closed-form", "--out", str(out), "-q",
                          *args)


@pytest.fixture
def small_csv(tmp_path):
    path = tmp_path / "small.csv"
    pd.DataFrame({"age": [1, 1, 2, 2, 3, 3, 4], "sex": [1, 2, 1, 2, 1, 2, 1],
                  "w": [10.0] * 7}).to_csv(path, index=False)
    return path


# --------------------------------------------------------------------------- finding 1
def test_a_foreign_summary_json_does_not_make_a_folder_ours(tmp_path, capsys):
    out = tmp_path / "project"
    out.mkdir()
    (out / "summary.json").write_text('{"chapter": 3}')
    (out / "thesis.tex").write_text("do not delete")
    proc = closed_form(capsys, out)
    assert_one_line_error(proc, "project", "did not write", "thesis.tex")
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "thesis.tex"]
    assert (out / "thesis.tex").read_text() == "do not delete"
    assert (out / "summary.json").read_text() == '{"chapter": 3}'


def test_a_rerun_keeps_the_users_files_but_not_the_old_runs_outputs(tmp_path, capsys):
    out = tmp_path / "risk"
    assert closed_form(capsys, out).returncode == 0
    (out / "notes.txt").write_text("my notes")
    (out / "drafts").mkdir()
    (out / "drafts" / "a.md").write_text("draft")
    # an earlier posterior run's draws (listed as its output): not carried into a
    # closed-form output; a posterior.nc the old run did not list is the user's
    (out / "posterior.nc").write_bytes(b"stale draws")
    summary = json.loads((out / "summary.json").read_text())
    summary["output_files"].append("posterior.nc")
    (out / "summary.json").write_text(json.dumps(summary))
    proc = closed_form(capsys, out)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "drafts", "notes.txt", "records.csv", "report.html", "summary.json"]
    assert (out / "notes.txt").read_text() == "my notes"
    assert (out / "drafts" / "a.md").read_text() == "draft"
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name or ".old-" in p.name]


def test_an_output_of_protect_is_known_by_its_protected_file(tmp_path):
    out = tmp_path / "p"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps(
        {"sdcbayes_version": "0.0.1", "protected_file": "protected.sav"}))
    assert "protected.sav" in cliutils.previous_outputs(out)
    assert "notes.txt" not in cliutils.previous_outputs(out)
    (out / "summary.json").write_text("not json")
    assert cliutils.previous_outputs(out) is None


# --------------------------------------------------------------------------- finding 2
def test_an_out_name_too_long_is_refused_before_any_work(tmp_path, capsys):
    out = tmp_path / ("x" * 300)
    proc = closed_form(capsys, out)
    assert_one_line_error(proc, "cannot be written", "choose another folder")
    assert list(tmp_path.iterdir()) == []


def test_an_out_under_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "somefile.txt").write_text("x")
    proc = closed_form(capsys, tmp_path / "somefile.txt" / "sub")
    assert_one_line_error(proc, "which is a file")
    assert (tmp_path / "somefile.txt").read_text() == "x"


def test_an_unwritable_out_is_found_by_the_probe_before_the_fit(tmp_path, capsys, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(cliutils.tempfile, "mkdtemp", read_only)
    # the probe fails first: the demo is never even loaded
    monkeypatch.setattr("sdcbayes.datasets.load_demo", lambda: pytest.fail("work started"))
    proc = closed_form(capsys, tmp_path / "ro")
    assert_one_line_error(proc, "ro cannot be written (Read-only file system)")


def test_an_os_error_at_the_end_is_one_line(tmp_path, capsys, monkeypatch):
    def fail(out, writers):
        raise OSError(errno.ENOSPC, "No space left on device", str(out))

    monkeypatch.setattr("sdcbayes.cli.write_output_folder", fail)
    proc = closed_form(capsys, tmp_path / "o")
    assert_one_line_error(proc, "No space left on device", str(tmp_path / "o"))


# --------------------------------------------------------------------------- finding 3
@pytest.mark.parametrize("command", ["assess", "compare", "decide", "protect"])
def test_a_negative_seed_is_refused_in_one_line(command, tmp_path, capsys):
    proc = run_in_process(capsys, command, "--seed", "-1", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "--seed", "-1")
    assert not (tmp_path / "o").exists()


def test_a_negative_recipe_seed_is_refused(tmp_path, capsys, small_csv):
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"seed": -1, "steps": [{"step": "suppress", "k": 2}]}))
    proc = run_in_process(capsys, "protect", str(small_csv), "--keys", "age,sex", "--recipe",
                          str(recipe), "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "seed must be a whole number >= 0")


# --------------------------------------------------------------------------- finding 11
def test_fit_settings_stamp_the_cores():
    from test_inference import COC_SMALL, K_SMALL

    from sdcbayes.inference import fit, provenance
    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    idata = fit(PoissonGammaModel(COC_SMALL, K=K_SMALL, N=10_000), method="map", draws=20,
                chains=1, random_seed=1)
    assert provenance(idata)["settings"]["cores"] == 1


# --------------------------------------------------------------------------- finding 12
@pytest.mark.parametrize("model, extra, fragments", [
    ("closed-form", ["--fit-method", "map"], ["--fit-method map", "closed-form"]),
    ("closed-form", ["--classes", "3"], ["--classes", "latent-class"]),
    ("closed-form", ["--structural-zeros", "auto"], ["--structural-zeros"]),
    ("closed-form", ["--overdispersion", "none"], ["--overdispersion"]),
    ("closed-form", ["--profile-prior", "inverse"], ["--profile-prior"]),
    ("closed-form", ["--ppc", "5"], ["--ppc"]),
    ("poisson-gamma", ["--method", "approx"], ["--method approx", "closed-form"]),
    ("poisson-gamma", ["--classes", "3"], ["--classes"]),
    ("poisson-gamma", ["--ppc", "7"], ["--ppc"]),
    ("latent-class", ["--method", "approx"], ["--method approx"]),
    ("closed-form", ["--missing", "category", "--alpha", "0.3"],
     ["--alpha", "--missing category"]),
])
def test_options_that_change_a_run_the_model_does_not_do_are_refused(
        model, extra, fragments, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sdcbayes.datasets.load_demo", lambda: pytest.fail("work started"))
    proc = run_in_process(capsys, "assess", "--model", model, *extra,
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "o").exists()


def test_sampler_options_given_to_the_closed_form_are_reported_as_ignored(tmp_path, capsys):
    out = tmp_path / "o"
    proc = closed_form(capsys, out, "--seed", "9", "--draws", "50", "--chains", "3",
                       "--tune", "5", "--target-accept", "0.99", "--strict")
    assert proc.returncode == 0, proc.stderr
    line = [x for x in proc.stderr.splitlines() if "ignores them" in x]
    assert len(line) == 1 and line[0].startswith("sdcbayes: warning: ")
    for option in ("--draws", "--chains", "--tune", "--strict", "--target-accept"):
        assert option in line[0]
    # --seed is not ignored: it draws the closed form's predictive intervals, and is stamped
    assert "--seed" not in line[0]
    summary = json.loads((out / "summary.json").read_text())
    assert line[0].removeprefix("sdcbayes: warning: ") in summary["warnings"]
    assert summary["provenance"]["settings"]["random_seed"] == 9


def test_alpha_is_accepted_with_wildcards(tmp_path, capsys):
    proc = closed_form(capsys, tmp_path / "o", "--alpha", "0.5")
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- finding 10
def test_demo_truth_only_for_the_demos_own_keys(tmp_path, capsys):
    proc = run_in_process(capsys, "assess", "--model", "closed-form", "--keys", "age_group,sex",
                          "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "(true " not in proc.stdout
    assert "truth" not in json.loads((tmp_path / "o" / "summary.json").read_text())


def test_demo_takes_a_sampling_fraction_instead_of_its_weights(tmp_path, capsys):
    out = tmp_path / "o"
    proc = closed_form(capsys, out, "--sampling-fraction", "0.04")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "summary.json").read_text())["provenance"]["data"]
    assert data["weight"] is None and data["sampling_fraction"] == 0.04


# --------------------------------------------------------------------------- finding 14
def test_output_folder_gets_the_umask_mode(tmp_path, capsys):
    old = os.umask(0o022)
    try:
        proc = closed_form(capsys, tmp_path / "o")
    finally:
        os.umask(old)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE((tmp_path / "o").stat().st_mode) == 0o755


# --------------------------------------------------------------------------- findings 15, 16
def _summary(method="nuts"):
    return {
        "sdcbayes_version": "x", "model": "poisson-gamma", "method": method, "data": "d",
        "n_records": 10, "n_cells": 5, "n_sample_uniques": 2,
        "expected_reidentifications": 1.0, "expected_reidentifications_interval": [0.5, 1.5],
        "expected_reidentification_rate": 0.1,
        "tau1": 1.0, "tau1_interval": [0.5, 1.5], "tau2": 1.0, "tau2_interval": [0.5, 1.5],
        "n_above_benchmark": 517.0, "n_above_benchmark_interval": [517.0, 517.0],
        "household_expected_reidentifications": 593.19,
        "household_expected_reidentifications_interval": [577.9, 610.2],
        "diagnostics": {"max_r_hat": None, "min_ess_bulk": None, "min_ess_tail": None,
                        "divergences": 0},
        "provenance": {"settings": {"method": method}},
    }


def test_console_prints_whole_counts_as_integers_and_the_household_interval(tmp_path, capsys):
    _print_summary(_summary(), tmp_path)
    text = capsys.readouterr().out
    assert re.search(r"records above benchmark.*  517  \[517, 517\]", text), text
    assert "517.0" not in text
    assert re.search(r"household expected re-identifications\s+593\.19  \[577\.90, 610\.20\]",
                     text), text


def test_console_says_an_approximation_has_no_sampler_diagnostics(tmp_path, capsys):
    _print_summary(_summary("map"), tmp_path)
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if "diagnostics" in x)
    assert "n/a (approximation)" in line and "divergences" not in line


def test_help_names_outputs_formats_labels_and_cores(capsys):
    from sdcbayes.microdata import READABLE_EXTENSIONS

    proc = run_in_process(capsys, "assess", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "posterior.nc" in text.split("--out")[1].split("--posterior")[0]
    for ext in READABLE_EXTENSIONS:
        assert ext in text, ext
    assert "value label" in text and "cell space" in text
    assert "--seed repeats a run only with the same --cores" in text


def test_key_that_is_also_the_weight_is_worded_as_options(small_csv, tmp_path, capsys):
    proc = run_in_process(capsys, "assess", str(small_csv), "--keys", "age,w", "--weight", "w",
                          "--model", "closed-form", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "remove it from --keys or from --weight")
    assert "weight=" not in proc.stderr


def test_every_command_still_has_a_non_negative_seed_option():
    for name in ("assess", "compare", "decide", "protect"):
        opt = next(p for p in cli.commands[name].params if p.name == "seed")
        assert opt.type.min == 0, name


def test_alpha_is_not_stamped_where_no_wildcard_matches(tmp_path, capsys):
    out = tmp_path / "o"
    proc = closed_form(capsys, out, "--missing", "category")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "summary.json").read_text())["provenance"]["data"]
    assert data["missing"] == "category" and data["alpha"] is None


def test_compare_demo_takes_a_sampling_fraction_instead_of_its_weights(tmp_path, capsys):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "compare", "--models", "c=closed-form",
                          "--sampling-fraction", "0.04", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("model, fit_method, args, fragment", [
    ("latent-class", "gibbs", ["--target-accept", "0.99"], "--fit-method gibbs ignores it"),
    ("poisson-gamma", "map", ["--target-accept", "0.99"], "--fit-method map ignores it"),
    ("poisson-gamma", "map", ["--tune", "10"], "--tune sets NUTS' warm-up"),
    ("poisson-gamma", "nuts", ["--method", "exact"], "--model poisson-gamma ignores it"),
])
def test_harmless_options_a_posterior_model_ignores_are_warned_of(model, fit_method, args,
                                                                  fragment):
    from sdcbayes.cli import check_applicable

    with cli.commands["assess"].make_context("assess", list(args)) as ctx, ctx:
        notes = check_applicable(model=model, fit_method=fit_method, method=ctx.params["method"],
                                 missing="wildcard", profile_prior="learn")
    assert len(notes) == 1 and fragment in notes[0], notes


def test_nothing_is_warned_of_for_options_that_apply():
    from sdcbayes.cli import check_applicable

    with cli.commands["assess"].make_context(
            "assess", ["--target-accept", "0.95", "--tune", "5", "--seed", "1"]) as ctx, ctx:
        assert check_applicable(model="poisson-gamma", fit_method="nuts", method="exact",
                                missing="wildcard", profile_prior="learn") == []


@pytest.mark.parametrize("fit_method, tuning", [("map", False), ("advi", False),
                                                ("nuts", True)])
def test_fitting_line_names_tuning_steps_only_for_samplers(fit_method, tuning, tmp_path, capsys,
                                                           monkeypatch):
    from sdcbayes.exceptions import InputError

    def stop(*args, **kwargs):
        raise InputError("stopped before the fit")

    monkeypatch.setattr("sdcbayes.risk.posterior_assess.assess_posterior", stop)
    proc = run_in_process(capsys, "assess", "--model", "poisson-gamma", "--fit-method",
                          fit_method, "--out", str(tmp_path / "o"))
    line = next(x for x in proc.stderr.splitlines() if x.startswith("fitting"))
    assert ("tuning steps" in line) == tuning, line


def test_summary_settings_stamp_the_cores_of_a_nuts_model(tmp_path, capsys):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", "--model", "poisson-gamma", "--fit-method", "map",
                          "--draws", "20", "--chains", "1", "--seed", "1", "--no-posterior",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((out / "summary.json").read_text())["provenance"]["settings"]
    assert settings["cores"] == 1
    # the fit's own stamp: a MAP fit has no tuning steps to record
    assert settings["tune"] is None and settings["laplace"] is True
