"""An --out folder that holds the run's own input, or files of the user's named like outputs.

A run replaces an earlier sdcbayes output in --out. Before these fixes an input file
in that folder (``suda Z/protected.csv --out Z`` after ``protect ... --out Z``) was
deleted or overwritten, and a user's file named like any command's output was lost.
Now such a run is refused before any work (exit 2, one line), each summary.json lists
the files its run wrote (``output_files``), and only those are taken for old outputs.
Every test runs the console script's entry point in this process on tiny files, with
the closed form where a risk model is needed.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

import sdcbayes._cliutils as cliutils

KEYS = "age,sex"


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.csv"
    pd.DataFrame({"age": [1, 1, 2, 2, 3, 3, 4, 4, 5], "sex": [1, 2, 1, 2, 1, 2, 1, 2, 1],
                  "w": [10.0] * 9}).to_csv(path, index=False)
    return path


def protect(capsys, data, out, *args):
    return run_in_process(capsys, "protect", str(data), "--keys", KEYS, "--suppress-k", "2",
                          "--seed", "1", "--out", str(out), "-q", *args)


def assess(capsys, data, out, *args):
    return run_in_process(capsys, "assess", *([str(data)] if data else []), "--keys", KEYS,
                          "--model", "closed-form", "--out", str(out), "-q", *args)


def suda(capsys, data, out):
    return run_in_process(capsys, "suda", str(data), "--keys", KEYS, "--out", str(out), "-q")


def snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def no_work(monkeypatch):
    """Make reading any data file fail the test: a refusal must come before it."""
    def fail(*args, **kwargs):
        pytest.fail("work started")

    monkeypatch.setattr("sdcbayes.cli.read_data", fail)
    monkeypatch.setattr("sdcbayes.cli.load_input", fail)


# --------------------------------------------------------------------------- (a) inputs
@pytest.mark.parametrize("command", [suda, assess], ids=["suda", "assess"])
def test_a_previous_output_used_as_data_in_its_own_folder_is_refused(
        command, tmp_path, capsys, data, monkeypatch):
    out = tmp_path / "Z"
    assert protect(capsys, data, out).returncode == 0
    before = snapshot(out)
    no_work(monkeypatch)
    proc = command(capsys, out / "protected.csv", out)
    assert_one_line_error(proc, f"DATA {out / 'protected.csv'} lies in --out {out}",
                          "choose another --out or move the file out first")
    assert snapshot(out) == before  # nothing deleted, byte for byte


def test_protecting_the_protected_file_into_its_own_folder_is_refused(
        tmp_path, capsys, data, monkeypatch):
    out = tmp_path / "Y"
    assert protect(capsys, data, out).returncode == 0
    before = snapshot(out)
    no_work(monkeypatch)
    proc = protect(capsys, out / "protected.csv", out)
    assert_one_line_error(proc, "DATA", "protected.csv", f"--out {out}", "choose another --out")
    assert snapshot(out) == before


def test_relative_and_symlinked_paths_to_an_old_output_are_refused(
        tmp_path, capsys, data, monkeypatch):
    out = tmp_path / "Z"
    assert protect(capsys, data, out).returncode == 0
    before = snapshot(out)
    (tmp_path / "link").symlink_to(out, target_is_directory=True)
    (tmp_path / "p.csv").symlink_to(out / "protected.csv")
    monkeypatch.chdir(tmp_path)
    no_work(monkeypatch)
    for path, where in [("Z/protected.csv", "Z"), ("link/protected.csv", "Z"),
                        ("p.csv", "Z"), ("Z/protected.csv", "link"), ("Z/../Z/log.csv", "Z")]:
        proc = suda(capsys, path, where)
        assert_one_line_error(proc, f"DATA {path}", f"lies in --out {where}")
    assert snapshot(out) == before


def test_other_input_files_in_out_are_checked_too(tmp_path, capsys, data, monkeypatch):
    # decide's DOMAINS, compare's --priors-file, protect's --recipe: refused before any
    # work when they would be replaced (a folder of ours written by hand: no fit needed)
    out = tmp_path / "o"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps(
        {"sdcbayes_version": "0.1.0", "output_files": ["frontier.csv", "log.csv"]}))
    (out / "frontier.csv").write_text("d,y,n,N\n1,1,2,20\n")
    (out / "log.csv").write_text("{}")
    before = snapshot(out)
    no_work(monkeypatch)
    proc = run_in_process(capsys, "decide", str(out / "frontier.csv"), "--y", "y", "--n", "n",
                          "--N", "N", "--hyperparameters", "ml", "--out", str(out))
    assert_one_line_error(proc, "DOMAINS", "frontier.csv", "lies in --out")
    proc = run_in_process(capsys, "compare", str(data), "--keys", KEYS, "--priors-file",
                          str(out / "log.csv"), "--out", str(out))
    assert_one_line_error(proc, "--priors-file", "log.csv", "lies in --out")
    (out / "report.html").write_text('{"steps": [{"step": "suppress", "k": 2}]}')
    before["report.html"] = (out / "report.html").read_bytes()
    # report.html is no old output here, but protect writes one: the recipe would be replaced
    proc = run_in_process(capsys, "protect", str(data), "--keys", KEYS, "--recipe",
                          str(out / "report.html"), "--out", str(out))
    assert_one_line_error(proc, "--recipe", "report.html", "where this run writes its own")
    assert snapshot(out) == before


def test_an_input_of_the_users_own_in_out_is_used_and_carried_over(tmp_path, capsys, data):
    out = tmp_path / "risk"
    assert assess(capsys, data, out).returncode == 0
    notes = out / "notes.csv"
    notes.write_bytes(data.read_bytes())
    proc = assess(capsys, notes, out)
    assert proc.returncode == 0, proc.stderr
    assert notes.read_bytes() == data.read_bytes()
    assert json.loads((out / "summary.json").read_text())["data"] == str(notes)
    assert sorted(p.name for p in out.iterdir()) == [
        "notes.csv", "records.csv", "report.html", "summary.json"]
    # protect too, over its own earlier output (another command's is refused, audit UX
    # F3): its input stays, its protected file is written beside it
    out = tmp_path / "prot"
    assert protect(capsys, data, out).returncode == 0
    notes = out / "notes.csv"
    notes.write_bytes(data.read_bytes())
    assert protect(capsys, notes, out).returncode == 0
    assert notes.read_bytes() == data.read_bytes()
    assert sorted(p.name for p in out.iterdir()) == [
        "log.csv", "notes.csv", "protected.csv", "report.html", "summary.json"]


def test_an_out_that_does_not_exist_yet_is_no_problem(tmp_path, capsys, data):
    out = tmp_path / "new" / "deeper"
    assert protect(capsys, data, out).returncode == 0
    assert (out / "protected.csv").exists()


# --------------------------------------------------------------------------- (b) ownership
def test_a_users_file_named_like_another_commands_output_survives(tmp_path, capsys, data):
    # the same command twice (another command's output is refused, audit UX F3)
    out = tmp_path / "X"
    assert protect(capsys, data, out).returncode == 0
    (out / "decisions.csv").write_text("my decisions")
    (out / "frontier.csv").write_text("my frontier")
    (out / "records.csv").write_text("my records")
    (out / "notes.txt").write_text("my notes")
    proc = protect(capsys, data, out)
    assert proc.returncode == 0, proc.stderr
    assert (out / "decisions.csv").read_text() == "my decisions"
    assert (out / "frontier.csv").read_text() == "my frontier"
    assert (out / "records.csv").read_text() == "my records"
    assert (out / "notes.txt").read_text() == "my notes"
    assert sorted(p.name for p in out.iterdir()) == [
        "decisions.csv", "frontier.csv", "log.csv", "notes.txt", "protected.csv",
        "records.csv", "report.html", "summary.json"]


def test_a_folder_of_an_older_version_still_has_its_outputs_replaced_by_name(
        tmp_path, capsys, data):
    out = tmp_path / "old"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps(
        {"command": "protect", "sdcbayes_version": "0.0.9", "protected_file": "protected.sav"}))
    for name in ("records.csv", "log.csv", "protected.sav", "posterior.nc"):
        (out / name).write_text("stale")
    (out / "notes.txt").write_text("mine")
    assert cliutils.previous_outputs(out) == cliutils.OUTPUT_FILES | {"protected.sav"}
    # protect again (another command's earlier output is refused, audit UX F3)
    proc = protect(capsys, data, out)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "log.csv", "notes.txt", "protected.csv", "report.html", "summary.json"]
    assert (out / "log.csv").read_text() != "stale"


def test_previous_outputs_reads_the_list_of_written_files(tmp_path):
    out = tmp_path / "p"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps(
        {"sdcbayes_version": "0.1.0", "protected_file": "protected.sav",
         "output_files": ["summary.json", "protected.sav", "log.csv", "report.html"]}))
    assert cliutils.previous_outputs(out) == {"summary.json", "protected.sav", "log.csv",
                                              "report.html"}
    # summary.json is always the run's own, listed or not
    (out / "summary.json").write_text(json.dumps(
        {"sdcbayes_version": "0.1.0", "output_files": ["records.csv"]}))
    assert cliutils.previous_outputs(out) == {"summary.json", "records.csv"}


def test_each_summary_lists_exactly_the_files_its_run_wrote(tmp_path, capsys, data):
    domains = tmp_path / "dom.csv"
    pd.DataFrame({"y": [1, 3, 0, 5, 2, 4], "n": [10, 20, 5, 30, 12, 25],
                  "N": [100, 300, 40, 500, 150, 260]}).to_csv(domains, index=False)
    runs = {
        "assess": ["assess", str(data), "--keys", KEYS, "--model", "closed-form"],
        "suda": ["suda", str(data), "--keys", KEYS],
        "protect": ["protect", str(data), "--keys", KEYS, "--suppress-k", "2", "--seed", "1"],
        "decide": ["decide", str(domains), "--y", "y", "--n", "n", "--N", "N",
                   "--hyperparameters", "ml"],
        "compare": ["compare", str(data), "--keys", KEYS, "--weight", "w",
                    "--models", "c=closed-form"],
    }
    for name, args in runs.items():
        out = tmp_path / f"out-{name}"
        proc = run_in_process(capsys, *args, "--out", str(out), "--json")
        assert proc.returncode == 0, (name, proc.stderr)
        written = json.loads((out / "summary.json").read_text())
        assert sorted(written["output_files"]) == sorted(p.name for p in out.iterdir()), name
        assert json.loads(proc.stdout) == written, name  # --json still prints summary.json


# --------------------------------------------------------------------------- (c) user files
def test_a_users_file_named_like_this_runs_output_is_refused_before_work(
        tmp_path, capsys, data, monkeypatch):
    out = tmp_path / "X"
    assert assess(capsys, data, out).returncode == 0
    (out / "protected.csv").write_text("my own protected file")
    before = snapshot(out)
    no_work(monkeypatch)
    proc = protect(capsys, data, out)
    assert_one_line_error(proc, f"--out {out} holds protected.csv", "not an earlier sdcbayes "
                          "output", "move or rename it")
    assert snapshot(out) == before


def test_posterior_nc_of_the_users_is_refused_only_where_the_run_writes_one(
        tmp_path, capsys, data, monkeypatch):
    out = tmp_path / "X"
    assert assess(capsys, data, out).returncode == 0
    (out / "posterior.nc").write_text("mine")
    # the closed form writes no posterior.nc: the user's is carried over
    assert assess(capsys, data, out).returncode == 0
    assert (out / "posterior.nc").read_text() == "mine"
    no_work(monkeypatch)
    proc = run_in_process(capsys, "assess", str(data), "--keys", KEYS, "--weight", "w",
                          "--model", "poisson-gamma", "--out", str(out))
    assert_one_line_error(proc, "holds posterior.nc")
    assert (out / "posterior.nc").read_text() == "mine"
