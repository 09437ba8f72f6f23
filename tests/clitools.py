"""Helpers shared by the CLI tests: run the console script as a user does.

On ``sys.path`` through pytest's ``pythonpath = ["tests"]`` setting (only this
folder: the package itself is still imported from the installed copy).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import warnings
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


def main_captured(*args: str) -> tuple[int, str, str]:
    """``sdcbayes ARGS`` in this process: (exit status, stdout, stderr).

    For module-scoped fixtures, which cannot use capsys: the streams are redirected
    instead.
    """
    import contextlib
    import io

    from sdcbayes.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


#: Warning categories a fresh interpreter does not print (Python's default filters, no -W
#: option; a DeprecationWarning only where ``__main__`` triggers it, which a library never is).
HIDDEN_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def run_main(capsys, *args: str) -> subprocess.CompletedProcess:
    """:func:`run_in_process`, with Python's warnings on stderr as the script shows them.

    For tests that once ran the script in a subprocess and read its stderr: under pytest a
    warning raised during the run (pandas reading a file, NumPy in a fit) is recorded for
    pytest's summary instead of being printed, so a check such as "one stderr line" would
    no longer see it. Here the warnings a fresh interpreter prints follow the run's stderr,
    formatted as Python prints them (``warnings.formatwarning``); pytest's filters still
    apply, so a warning that the configuration turns into an error still fails the test.
    Pass ``capfd`` to also get what a library writes to file descriptor 2 directly.

    Not emulated (keep such tests in a subprocess): log records. Under pytest the root
    logger has handlers, so PyMC adds no handler of its own and Python's last-resort
    handler stays idle; PyMC's "Initializing NUTS ..." and other libraries' log lines never
    reach stderr here.
    """
    from sdcbayes.cli import main

    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        rc = main(list(args))
    cap = capsys.readouterr()
    shown = "".join(
        warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
        for w in caught if not issubclass(w.category, HIDDEN_WARNINGS)
    )
    return subprocess.CompletedProcess(args, rc, cap.out, cap.err + shown)


def assert_one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2, one stderr line ``sdcbayes: error: …`` holding every fragment."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("sdcbayes: error:")
    assert "Traceback" not in proc.stderr
    for frag in fragments:
        assert frag in lines[0], lines[0]
