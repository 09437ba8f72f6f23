"""Shared test fixtures."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest


class _Checker(HTMLParser):
    """Checks that every opened element is closed in order (void elements aside)."""

    VOID = {"meta", "br", "img", "hr", "input", "link", "rect", "line", "polyline", "path"}

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unexpected </{tag}>, open: {self.stack[-3:]}")
        else:
            self.stack.pop()


def _check_html(text: str) -> _Checker:
    c = _Checker()
    c.feed(text)
    c.close()
    assert not c.errors, c.errors[:5]
    assert not c.stack, c.stack
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text and "<script" not in text  # self-contained, no network
    return c


@pytest.fixture()
def check_html():
    """Validate a self-contained HTML page: balanced tags, no scripts, no network."""
    return _check_html


@pytest.fixture(scope="session")
def sdcmicro_csv():
    """Read one of sdcMicro's data files from the shared data folder, or skip the test.

    The files (``testdata.csv``, ``testdata2.csv``, ``free1.csv``, ...) live in
    ``shared_data_dir() / "sdcmicro"``, beside the development checkout only; a fresh
    clone has no such folder, so the tests that compare against sdcMicro on them skip
    there with the path they looked at and how to point to the data (README command (2)
    promises a green suite on a clean clone). Tests on inline reference numbers never use
    this fixture, so they always run.

    Returns
    -------
    callable
        ``read(name, **read_csv_kwargs) -> pandas.DataFrame``.
    """
    import pandas as pd

    from sdcbayes.validation import DATA_ENV, shared_data_dir

    def read(name: str, **kwargs) -> pd.DataFrame:
        path = shared_data_dir() / "sdcmicro" / name
        if not path.is_file():
            pytest.skip(f"sdcMicro data file {name} not found at {path}; set "
                        f"{DATA_ENV}=/path/to/shared/data to run this test")
        return pd.read_csv(path, **kwargs)

    return read


@pytest.fixture(scope="session")
def cf_comparison():
    """A closed-form comparison on 200 records (its table and summary are read only).

    Shared by the report and output audits' tests (tests/test_audit_z_reports.py,
    tests/test_outputs_audit_bb1.py), which read it and never change it.
    """
    import numpy as np
    import pandas as pd

    from sdcbayes import Microdata
    from sdcbayes.risk.compare import compare_models

    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.integers(0, 10, 200), "b": rng.integers(0, 6, 200),
                          "w": 25.0})
    md = Microdata(frame, keys=["a", "b"], weight="w")
    return compare_models(md, [{"name": "cf", "model": "closed-form"}], random_seed=1,
                          plug_in_draws=20)


@pytest.fixture
def protect_no_work(monkeypatch):
    """Fail loudly if ``protect`` measures risk, runs a step or starts a fit.

    A refusal must come before all three (its one-line error, exit 2, no output folder).
    """
    from sdcbayes import cli
    from sdcbayes.commands import protect

    def boom(*args, **kwargs):
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(protect, "_risk", boom)
    monkeypatch.setattr(protect, "_run_step", boom)
    monkeypatch.setattr(cli, "_fit_posterior", boom)
