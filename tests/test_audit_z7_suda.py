"""Audit Z7: DIS-SUDA beyond 27 keys, and the CLI's --dis-fraction range."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from clitools import run_in_process

from sdcbayes.inference.diagnostics import SdcbayesWarning
from sdcbayes.risk.suda import dis_suda_scores, suda


def _frame(n_keys: int, n: int = 60, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({f"k{j}": rng.integers(0, 3, n) for j in range(n_keys)})


def test_dis_suda_warns_where_its_exponent_is_not_positive():
    """Q = 1 + (8 - ATT)/20 <= 0 from 28 keys: a higher score would get a lower DIS-SUDA."""
    scores = np.array([0.0, 10.0, 20.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        low = dis_suda_scores(scores, 2, 0.1, 27)  # Q = 0.05 > 0: silent
    assert low[2] > low[1]
    with pytest.warns(SdcbayesWarning, match="30 keys.*not positive"):
        high = dis_suda_scores(scores, 2, 0.1, 30)
    assert high[2] < high[1]  # what the warning says


def test_suda_cli_echoes_the_warning_and_takes_a_fraction_of_one(tmp_path, capsys):
    path = tmp_path / "wide.csv"
    frame = _frame(29)
    frame.to_csv(path, index=False)
    out = tmp_path / "o"
    keys = ",".join(frame.columns)
    proc = run_in_process(capsys, "suda", str(path), "--keys", keys, "--max-size", "2",
                          "--dis-fraction", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("sdcbayes: warning:")]
    assert len(lines) == 1 and "not positive" in lines[0], proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["warnings"] == [lines[0].removeprefix("sdcbayes: warning: ")]
    assert s["dis_fraction"] == 1.0
    with pytest.warns(SdcbayesWarning, match="not positive"):
        expected = suda(frame, list(frame.columns), max_size=2, dis_fraction=1.0)
    assert s["dis"] == pytest.approx(expected.dis)
