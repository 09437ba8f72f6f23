"""Helpers shared by the CLI tests: run the console script as a user does.

On ``sys.path`` through pytest's ``pythonpath = ["tests"]`` setting (only this
folder: the package itself is still imported from the installed copy).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

EXE = shutil.which("sdcbayes") or str(Path(sys.executable).with_name("sdcbayes"))


def run_cli(*args: str, cwd: Path | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run ``sdcbayes ARGS`` in a subprocess (the installed console script)."""
    return subprocess.run(
        [EXE, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def run_in_process(capsys, *args: str) -> subprocess.CompletedProcess:
    """The console script's entry point, called in this process (no interpreter start-up).

    ``sdcbayes.cli.main`` is what the ``sdcbayes`` script runs; bad-input cases use it
    directly so that a dozen of them cost a fraction of a second each.
    """
    from sdcbayes.cli import main

    capsys.readouterr()
    rc = main(list(args))
    cap = capsys.readouterr()
    return subprocess.CompletedProcess(args, rc, cap.out, cap.err)


def assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2, one stderr line ``sdcbayes: error: …`` holding every fragment."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("sdcbayes: error:")
    assert "Traceback" not in proc.stderr
    for frag in fragments:
        assert frag in lines[0], lines[0]
