"""Output folders, approximations' diagnostics and report sizes (audit BB1; BB3 finding 3).

Each test fails before its fix:

- BB1 1, 2: an existing ``--out`` that is read-only, or that this user cannot write, or
  that holds a file of the user's that cannot be moved, is refused before any work (it
  failed only after the fit, and root replaced a read-only folder silently); a rerun keeps
  the folder's permission bits, setgid bit and group.
- BB1 6: SIGTERM while the folder is being written leaves no hidden ``.OUT.partial-*``
  folder, and a signal in the middle of the swap leaves the new output in place.
- BB1 4: MAP/ADVI fits show "n/a (approximation)" in report.html and compare's report,
  and no divergences in comparison.csv/summary.json; ``compute_diagnostics`` gives None
  without a ``diverging`` statistic.
- BB1 5: report.html lists at most 50 strata, the riskiest, and says how many more.
- BB1 8: compare's report prints an estimate at its interval's precision.
- BB3 3: the short-run warning names ``--draws`` and the latent-class default 500.

Tests may run as root, whom file permissions do not stop: the read-only folder is refused
by its mode bits (whoever runs), and "this user cannot write" is simulated by an
``os.access`` that says no for the one folder, so no test depends on who runs it.
"""

from __future__ import annotations

import dataclasses
import html as html_module
import json
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process, run_main

import sdcbayes._cliutils as cliutils
from sdcbayes import _compat
from sdcbayes.exceptions import InputError
from sdcbayes.report import (
    MAX_STRATA_SHOWN,
    _estimate_interval_text,
    _model_section,
    _stratum_section,
    comparison_report,
)

KEYS = "age,sex"


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.csv"
    pd.DataFrame({"age": [1, 1, 2, 2, 3, 3, 4, 4, 5], "sex": [1, 2, 1, 2, 1, 2, 1, 2, 1],
                  "w": [10.0] * 9}).to_csv(path, index=False)
    return path


def assess(capsys, data, out, *args):
    return run_in_process(capsys, "assess", str(data), "--keys", KEYS, "--weight", "w",
                          "--model", "closed-form", "--out", str(out), "-q", *args)


def no_work(monkeypatch):
    """Make reading the data fail the test: a refusal must come before any work."""
    def fail(*args, **kwargs):
        pytest.fail("work started")

    monkeypatch.setattr("sdcbayes.cli.read_data", fail)
    monkeypatch.setattr("sdcbayes.cli.load_input", fail)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def deny_access(monkeypatch, *paths: Path) -> None:
    """``os.access`` says no for ``paths`` (what a user without the permission sees)."""
    real = os.access
    denied = {os.path.realpath(p) for p in paths}

    def access(path, mode, *args, **kwargs):
        if os.path.realpath(path) in denied and mode & os.W_OK:
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(cliutils.os, "access", access)


# --------------------------------------------------------------------------- BB1 1 and 2
def test_a_read_only_earlier_output_is_refused_before_any_work(
        tmp_path, capsys, data, monkeypatch):
    out = tmp_path / "prev"
    assert assess(capsys, data, out).returncode == 0
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    out.chmod(0o555)
    try:
        no_work(monkeypatch)
        proc = assess(capsys, data, out)
        assert_one_line_error(proc, f"--out {out} is read-only (mode 0555)",
                              f"chmod u+w {out}", "choose another folder")
        assert stat.S_IMODE(out.stat().st_mode) == 0o555
        assert snapshot(out) == before  # the results the user protected, byte for byte
        assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "prev"]
    finally:
        out.chmod(0o755)


def test_an_empty_read_only_folder_is_refused(tmp_path, capsys, data, monkeypatch):
    out = tmp_path / "ro"
    out.mkdir(mode=0o555)
    out.chmod(0o555)  # whatever the umask
    try:
        no_work(monkeypatch)
        assert_one_line_error(assess(capsys, data, out), f"--out {out} is read-only")
        assert list(out.iterdir()) == [] and stat.S_IMODE(out.stat().st_mode) == 0o555
    finally:
        out.chmod(0o755)


def test_a_folder_this_user_cannot_write_is_refused(tmp_path, capsys, data, monkeypatch):
    # writable by its mode, not by this user (another owner, no group write): os.access
    out = tmp_path / "theirs"
    assert assess(capsys, data, out).returncode == 0
    before = snapshot(out)
    deny_access(monkeypatch, out)
    no_work(monkeypatch)
    proc = assess(capsys, data, out)
    assert_one_line_error(proc, f"--out {out} cannot be written (Permission denied)",
                          "write permission", "choose another folder")
    assert snapshot(out) == before


def test_a_user_folder_that_cannot_be_moved_is_refused(tmp_path, capsys, data, monkeypatch):
    # a folder of the user's is carried into the new output: moving a folder to another
    # parent needs write permission on it (rename(2)), which failed after the fit
    out = tmp_path / "prev"
    assert assess(capsys, data, out).returncode == 0
    (out / "mine").mkdir()
    (out / "mine" / "a.txt").write_text("a")
    deny_access(monkeypatch, out / "mine")
    no_work(monkeypatch)
    proc = assess(capsys, data, out)
    assert_one_line_error(proc, f"--out {out} holds mine", "cannot be moved",
                          "move it out of the folder")
    assert (out / "mine" / "a.txt").read_text() == "a"


def test_check_out_dir_refuses_a_read_only_folder_directly(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    out.chmod(0o500)
    try:
        with pytest.raises(InputError, match=r"read-only \(mode 0500\).*chmod u\+w"):
            cliutils.check_out_dir(out, writes=["summary.json"])
    finally:
        out.chmod(0o755)
    cliutils.check_out_dir(out, writes=["summary.json"])  # writable again: accepted


def _other_gid() -> int | None:
    """A group this process may give a folder that is not the one it gets by default."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return os.getegid() + 4242  # root may give any group
    others = [g for g in os.getgroups() if g != os.getegid()]
    return others[0] if others else None


def test_a_rerun_keeps_the_folder_mode_setgid_and_group(tmp_path, capsys, data):
    out = tmp_path / "shared"
    assert assess(capsys, data, out).returncode == 0
    (out / "notes.txt").write_text("mine")
    gid = _other_gid()
    if gid is not None:
        os.chown(out, -1, gid)
    out.chmod(0o2770)  # closed to others, new files in the folder's group
    want = out.stat()
    assert stat.S_IMODE(want.st_mode) == 0o2770  # the set-up itself
    assert assess(capsys, data, out, "--threshold", "0.2").returncode == 0
    got = out.stat()
    # the rerun did replace the folder
    assert json.loads((out / "summary.json").read_text())["risk_threshold"] == 0.2
    assert stat.S_IMODE(got.st_mode) == 0o2770  # was 0o755 (the umask's)
    assert got.st_gid == want.st_gid
    for name in ("summary.json", "records.csv", "report.html"):  # as a setgid folder gives
        assert (out / name).stat().st_gid == want.st_gid, name
    assert (out / "notes.txt").read_text() == "mine"


def test_a_new_folder_still_gets_the_umask_mode(tmp_path, capsys, data):
    out = tmp_path / "new"
    assert assess(capsys, data, out).returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == cliutils._output_mode()


# --------------------------------------------------------------------------- BB1 6
_KILLED_WRITER = """
import os, signal, sys, time
from pathlib import Path
from sdcbayes._cliutils import write_output_folder

def first(p):
    p.write_text(json_text)

def killed(p):
    p.write_text("half")
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)  # the signal ends the run here
    p.write_text("never")

json_text = '{"sdcbayes_version": "0", "output_files": ["records.csv"], "run": "%s"}'
write_output_folder(Path("out"), {"summary.json": first, "records.csv": killed})
"""


def _run_python(code: str, cwd: Path, threads: int = 1) -> subprocess.CompletedProcess:
    env = os.environ | {v: str(threads) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env)


def test_sigterm_while_writing_leaves_no_partial_folder(tmp_path):
    proc = _run_python(_KILLED_WRITER % "new", tmp_path)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr  # as the shell reports a kill
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no .out.partial-XXXX


def test_sigterm_during_a_rerun_keeps_the_old_output(tmp_path):
    out = tmp_path / "out"
    old = {"sdcbayes_version": "0", "output_files": ["records.csv"], "run": "old"}
    cliutils.write_output_folder(out, {
        "summary.json": lambda p: p.write_text(json.dumps(old)),
        "records.csv": lambda p: p.write_text("old"),
    })
    (out / "notes.txt").write_text("mine")
    proc = _run_python(_KILLED_WRITER % "new", tmp_path)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert json.loads((out / "summary.json").read_text())["run"] == "old"
    assert (out / "records.csv").read_text() == "old"
    assert (out / "notes.txt").read_text() == "mine"


_KILLED_IN_SWAP = """
import os, pathlib, signal
from pathlib import Path
import numpy  # its BLAS threads (the caller asks for 4): a signal sent to the process may
# be delivered through one of them, so blocking it in the main thread alone defers nothing
from sdcbayes._cliutils import write_output_folder

real = pathlib.Path.rename
def rename(self, target):
    result = real(self, target)
    if ".old-" in str(target):  # the old folder moved away, the new not yet in place
        os.kill(os.getpid(), signal.SIGTERM)
    return result
pathlib.Path.rename = rename

text = '{"sdcbayes_version": "0", "output_files": [], "run": "new"}'
write_output_folder(Path("out"), {"summary.json": lambda p: p.write_text(text)})
"""


def test_sigterm_in_the_swap_leaves_the_new_output_in_place(tmp_path):
    out = tmp_path / "out"
    cliutils.write_output_folder(out, {"summary.json": lambda p: p.write_text(
        json.dumps({"sdcbayes_version": "0", "output_files": [], "run": "old"}))})
    (out / "notes.txt").write_text("mine")
    proc = _run_python(_KILLED_IN_SWAP, tmp_path, threads=4)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    # held back until the swap was complete: never a missing `out`, no hidden folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert json.loads((out / "summary.json").read_text())["run"] == "new"
    assert (out / "notes.txt").read_text() == "mine"


def test_the_signal_handlers_are_restored_and_a_programs_own_is_left_alone(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    cliutils.write_output_folder(tmp_path / "a", {"x.txt": lambda p: p.write_text("x")})
    assert signal.getsignal(signal.SIGTERM) == before
    seen = []

    def own(signum, frame):
        seen.append(signum)

    previous = signal.signal(signal.SIGTERM, own)
    try:
        def write(p):
            os.kill(os.getpid(), signal.SIGTERM)
            p.write_text("x")

        cliutils.write_output_folder(tmp_path / "b", {"x.txt": write})
        assert signal.getsignal(signal.SIGTERM) is own
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert seen == [signal.SIGTERM] and (tmp_path / "b" / "x.txt").read_text() == "x"


# --------------------------------------------------------------------------- BB1 4
def test_compute_diagnostics_has_no_divergences_without_a_sampler():
    from sdcbayes.inference.diagnostics import check_diagnostics, compute_diagnostics

    rng = np.random.default_rng(0)
    post = {"alpha": rng.normal(size=(2, 200))}
    assert compute_diagnostics(_compat.from_dict(posterior=post))["divergences"] is None
    div = np.zeros((2, 200), dtype=bool)
    div[0, :2] = True
    sampled = _compat.from_dict(posterior=post, sample_stats={"diverging": div})
    assert compute_diagnostics(sampled)["divergences"] == 2
    short = _compat.from_dict(posterior={"alpha": rng.normal(size=(2, 3))})
    assert compute_diagnostics(short)["divergences"] is None
    # None is read as no divergences by the check
    with pytest.warns(Warning):
        assert not any("divergent" in p for p in check_diagnostics(
            compute_diagnostics(short)))


def _map_summary(method: str = "map") -> dict:
    """summary.json of a MAP/ADVI assess run, as audit BB1 found it (divergences 0)."""
    return {
        "model": "poisson-gamma", "method": method,
        "diagnostics": {"max_r_hat": None, "min_ess_bulk": None, "min_ess_tail": None,
                        "divergences": 0, "chains": 4, "draws": 1000, "laplace": True,
                        "mode_converged": True, "problems": []},
        "provenance": {"settings": {"method": method, "chains": 4, "draws": 1000}},
    }


def _cells(page: str, label: str) -> list[str]:
    """The decoded cells of the table row whose first cell starts with ``label``."""
    for row in re.findall(r"<tr>(.*?)</tr>", page):
        cells = [html_module.unescape(re.sub(r"<[^>]+>", "", c))
                 for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        if cells and cells[0].startswith(label):
            return cells
    raise AssertionError(f"no row {label!r}")


@pytest.mark.parametrize("method", ["map", "advi"])
def test_assess_report_says_n_a_for_an_approximation(method):
    page = _model_section(_map_summary(method))
    text = " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", page)).split())
    assert "n/a (approximation)" in text and "not Markov chains" in text
    assert _cells(page, "divergent transitions")[1] == "n/a (approximation)"  # was 0
    assert _cells(page, "largest R-hat")[1] == "n/a (approximation)"
    assert _cells(page, "sets of draws from the approximation")[1] == "4"
    assert _cells(page, "draws per set")[1] == "1,000"
    assert _cells(page, "mode found")[1] == "yes"
    assert "Sampling diagnostics" not in text


def test_a_map_point_estimate_is_not_called_a_laplace_approximation():
    s = _map_summary()
    # fit(method="map", laplace=False): its diagnostics have no `laplace`, its settings do
    del s["diagnostics"]["laplace"]
    s["diagnostics"] |= {"chains": 1, "draws": 1}
    s["provenance"]["settings"] |= {"laplace": False, "chains": 1, "draws": 1}
    text = " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", _model_section(s))).split())
    assert "posterior mode alone (a point estimate, one draw)" in text
    assert "Laplace (normal) approximation" not in text


def test_a_sampled_fit_keeps_its_divergence_count():
    s = _map_summary()
    s["provenance"]["settings"]["method"] = "nuts"
    s["diagnostics"] = {"max_r_hat": 1.002, "divergences": 3, "chains": 4, "draws": 1000}
    page = _model_section(s)
    assert _cells(page, "divergent transitions")[1] == "3"
    assert _cells(page, "chains")[1] == "4"


def test_compare_shows_no_divergences_for_approximations(cf_comparison):
    from sdcbayes.commands.compare import _typed_summary

    base = cf_comparison.table
    # the rows as compare_models makes them: a fit without a sampler has divergences None
    table = pd.concat([base.assign(name="pg", method="map", divergences=np.nan),
                       base.assign(name="nb", method="advi", divergences=np.nan),
                       base.assign(name="nuts", method="nuts", divergences=2.0)],
                      ignore_index=True)
    result = dataclasses.replace(cf_comparison, table=table)
    rows = _typed_summary(result.summary())["comparison"]
    assert [r["divergences"] for r in rows] == [None, None, 2]
    page = comparison_report(result, result.summary())
    diag = page.split("Sampling diagnostics and fit time")[1]
    assert _cells(diag, "pg")[1:5] == ["n/a (approximation)"] * 4
    assert _cells(diag, "nb")[4] == "n/a (approximation)"
    assert _cells(diag, "nuts")[4] == "2"
    assert "no Markov chains to diagnose" in diag


def test_compare_cli_writes_no_divergences_for_a_map_fit(capsys, tmp_path):
    from sdcbayes.datasets.census import simulate_population
    from sdcbayes.datasets.sampling import draw_sample

    pop = simulate_population(3000, seed=3)
    s = draw_sample(pop, keys=("age_group", "sex", "education"), fraction=0.05,
                    design="stratified", seed=5)
    path = tmp_path / "sample.csv"
    s.sample.to_csv(path, index=False)
    out = tmp_path / "out"
    proc = run_in_process(
        capsys, "compare", str(path), "--keys", "age_group,sex,education", "--weight",
        "weight", "--models", "nb=negbin,closed=closed-form", "--fit-method", "map",
        "--draws", "30", "--chains", "2", "--seed", "3", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out / "comparison.csv", keep_default_na=False, dtype=str)
    row = table.set_index("name").loc["nb"]
    assert row["method"] == "map" and row["divergences"] == ""  # was 0
    summary = json.loads((out / "summary.json").read_text())
    by_name = {r["name"]: r for r in summary["comparison"]}
    assert by_name["nb"]["divergences"] is None
    page = (out / "report.html").read_text()
    assert _cells(page.split("Sampling diagnostics and fit time")[1], "nb")[4] \
        == "n/a (approximation)"


# --------------------------------------------------------------------------- BB1 5
def test_report_lists_at_most_50_strata_the_riskiest_first():
    rows = [{"stratum": f"s{i}", "n_records": 10, "n_sample_uniques": 1,
             "expected_reidentifications": float(i % 200)} for i in range(1000)]
    page = _stratum_section(rows)
    body = re.findall(r"<tr><td>(s\d+)</td>", page)
    assert len(body) == MAX_STRATA_SHOWN == 50  # was 1,000
    shown = {int(s[1:]) % 200 for s in body}
    assert min(shown) >= 190  # the 50 riskiest: 5 strata each of risk 190 ... 199
    text = html_module.unescape(re.sub(r"<[^>]+>", " ", page))
    assert "950 more are not" in text and "holds all 1,000" in text
    # a short list keeps its own order and says nothing of more
    few = _stratum_section(rows[:5])
    assert re.findall(r"<tr><td>(s\d+)</td>", few) == ["s0", "s1", "s2", "s3", "s4"]
    assert "more are not" not in few


def test_assess_report_with_many_strata_stays_small(capsys, tmp_path):
    rng = np.random.default_rng(4)
    n = 1200
    path = tmp_path / "d.csv"
    pd.DataFrame({"age": rng.integers(0, 8, n), "sex": rng.integers(0, 2, n),
                  "psu": np.arange(n) // 2, "w": 20.0}).to_csv(path, index=False)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS, "--weight", "w",
                          "--strata", "psu", "--model", "closed-form", "--out", str(out),
                          "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["by_stratum"]) == 600  # summary.json keeps them all
    page = (out / "report.html").read_text()
    section = page.split("Risk by stratum")[1].split("</table>")[0]
    assert section.count("<tr>") == 50 + 1  # the header row and 50 strata (was 601)
    top = sorted(summary["by_stratum"], key=lambda r: -r["expected_reidentifications"])
    assert f"<td>{top[0]['stratum']}</td>" in section
    assert "550 more are not" in html_module.unescape(page)


# --------------------------------------------------------------------------- BB1 8
def test_estimate_and_interval_share_one_precision():
    assert _estimate_interval_text(48.0004, 41.93, 54.38) == "48.00 [41.93, 54.38]"  # was 48
    assert _estimate_interval_text(0.712, 0.0, 3.0) == "0.7 [0.0, 3.0]"
    assert _estimate_interval_text(1234.56, 1200.3, 1300.8) == "1,234.6 [1,200.3, 1,300.8]"
    assert _estimate_interval_text(3e-5, 1e-5, 5e-5) == "3.000e-05 [1.000e-05, 5.000e-05]"
    # whole-number bounds of a count: the mean keeps its decimals
    assert _estimate_interval_text(13.31, np.int64(8), np.int64(19)) == "13.31 [8, 19]"
    assert _estimate_interval_text(None, 1.5, 2.5) == "– [1.5, 2.5]"


def test_compare_report_prints_estimates_at_the_intervals_precision(cf_comparison):
    t = cf_comparison.table.assign(er=48.0004, er_lo=41.93, er_hi=54.38)
    result = dataclasses.replace(cf_comparison, table=t)
    page = comparison_report(result, result.summary())
    assert "48.00 [41.93, 54.38]" in html_module.unescape(page)
    assert "48 [41.93" not in page


# --------------------------------------------------------------------------- BB3 3
def test_short_run_warning_names_the_samplers_default():
    from sdcbayes.cli import cli_wording
    from sdcbayes.inference.diagnostics import check_diagnostics

    with pytest.warns(Warning):
        gibbs = check_diagnostics({"draws": 3, "chains": 1}, sampler="gibbs")[0]
    with pytest.warns(Warning):
        nuts = check_diagnostics({"draws": 3, "chains": 1})[0]
    assert "latent-class default of 500 draws per chain" in gibbs and "1000" not in gibbs
    assert "default of 1000 draws per chain" in nuts
    assert "draws=" not in gibbs and "draws=" not in nuts  # was "(draws=1000)"
    assert "increase --draws (and --tune)" in cli_wording(gibbs)


def test_latent_class_short_run_warns_with_the_cli_option(capsys, tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "d.csv"
    pd.DataFrame({"k0": rng.integers(0, 3, 200), "k1": rng.integers(0, 3, 200),
                  "k2": rng.integers(0, 3, 200)}).to_csv(path, index=False)
    proc = run_main(capsys, "assess", str(path), "--keys", "k0,k1,k2",
                    "--sampling-fraction", "0.1", "--classes", "3", "--draws", "3",
                    "--chains", "1", "--tune", "0", "--overdispersion", "none", "--ppc", "0",
                    "--seed", "1", "--no-posterior", "--out", str(tmp_path / "o"), "-q")
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if "only 3 draws per chain" in x)
    assert "increase --draws (and --tune)" in line
    assert "latent-class default of 500" in line and "draws=1000" not in line
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert any("latent-class default of 500" in p for p in summary["diagnostics"]["problems"])
