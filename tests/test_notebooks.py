"""Execute every worked-example notebook (``notebooks/*.py``, jupytext percent format).

Each notebook reproduces a seed paper's printed numbers and *asserts* them, so a
notebook that stops reproducing its paper exits non-zero and fails here. They
run as plain scripts in a fresh interpreter (``sys.executable``, the one with
sdcbayes installed), with an empty temporary working directory that must stay
empty: notebooks display results, they do not write files.

The folder is found relative to this file: with ``--import-mode=importlib`` and
a non-editable install the checkout's ``notebooks/`` is still next to ``tests/``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.py")) if NOTEBOOK_DIR.is_dir() else []
# Each notebook takes a few seconds; the limit is generous for a loaded 2-core machine.
TIMEOUT_S = 180


def test_notebooks_are_present():
    # An empty parametrisation would be skipped silently: fail instead.
    assert NOTEBOOK_DIR.is_dir(), f"notebook folder missing: {NOTEBOOK_DIR}"
    assert NOTEBOOKS, f"no notebooks (*.py) found in {NOTEBOOK_DIR}"
    names = {p.name for p in NOTEBOOKS}
    for expected in (
        "mokken_1992.py",
        "tour.py",
        "ihsn_guide.py",
        "nayak_zhang_2015.py",
        "zaslavsky_horton_1998.py",
        "polettini_individual_risk.py",
    ):
        assert expected in names, f"{expected} missing from {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_a_percent_script_citing_its_seed(path):
    text = path.read_text(encoding="utf-8")
    assert "format_name: percent" in text, "jupytext header missing"
    cells = text.split("\n# %%")
    assert len(cells) >= 3, "expected several `# %%` cells"
    first = cells[1]
    assert first.startswith(" [markdown]"), "the first cell must be the markdown header"
    assert "Seed `00" in first, "the header must cite the seed it reproduces"
    assert "assert" in text, "a reproduction notebook must assert the printed numbers"
    assert "../shared" not in text and "/work/" not in text, "embed data as literals"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONPATH", None)  # import the installed package, not the checkout folders
    try:
        proc = subprocess.run(
            [sys.executable, str(path)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"{path.name} ran longer than {TIMEOUT_S} s: {err}")
    tail = (proc.stdout[-3000:] + "\n--- stderr ---\n" + proc.stderr[-6000:]).strip()
    assert proc.returncode == 0, f"{path.name} exited with {proc.returncode}:\n{tail}"
    assert proc.stdout.strip(), f"{path.name} printed nothing"
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert not leftovers, f"{path.name} wrote files into its working directory: {leftovers}"
