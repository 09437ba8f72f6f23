"""protect's --suppress-method and --microaggregate-method (and the recipe's "method").

The sequential suppression reproduces sdcMicro's printed count on its testdata2
(``tests/testthat/test_localSuppression.R:66``: 97 values for k = 2, where the greedy
default blanks 109); the sorted micro-aggregation is sdcMicro's ``mafast``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from clitools import assert_one_line_error, run_in_process

from sdcbayes.protection import local_suppression, sorted_microaggregation

KEYS2 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]


def _testdata2(tmp_path, sdcmicro_csv):
    frame = sdcmicro_csv("testdata2.csv")
    path = tmp_path / "testdata2.csv"
    frame.to_csv(path, index=False)
    return frame, path


def _suppressions(out) -> int:
    summary = json.loads((out / "summary.json").read_text())
    return summary["steps"][0]["result"]["total_suppressions"]


def test_suppress_method_option_and_recipe(tmp_path, capsys, sdcmicro_csv):
    frame, path = _testdata2(tmp_path, sdcmicro_csv)
    keys = ",".join(KEYS2)
    counts = {}
    for method in ("greedy", "sequential"):
        out = tmp_path / f"opt_{method}"
        proc = run_in_process(capsys, "protect", str(path), "--keys", keys, "--suppress-k", "2",
                              "--suppress-method", method, "--seed", "1", "--out", str(out),
                              "-q")
        assert proc.returncode == 0, proc.stderr
        counts[method] = _suppressions(out)
        expect = local_suppression(frame, KEYS2, k=2, method=method).summary
        assert counts[method] == expect["total_suppressions"]
    assert counts == {"greedy": 109, "sequential": 97}
    # the recipe's "method" gives the same
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [{"step": "suppress", "k": 2,
                                             "method": "sequential"}]}))
    out = tmp_path / "recipe"
    proc = run_in_process(capsys, "protect", str(path), "--keys", keys, "--recipe", str(recipe),
                          "--seed", "1", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert _suppressions(out) == 97


def test_method_options_need_their_step_and_valid_values(tmp_path, capsys, sdcmicro_csv):
    _, path = _testdata2(tmp_path, sdcmicro_csv)
    keys = ",".join(KEYS2)
    proc = run_in_process(capsys, "protect", str(path), "--keys", keys,
                          "--suppress-method", "sequential", "--out", str(tmp_path / "a"))
    assert_one_line_error(proc, "--suppress-method", "--suppress-k")
    proc = run_in_process(capsys, "protect", str(path), "--keys", keys, "--suppress-k", "2",
                          "--microaggregate-method", "sorted", "--out", str(tmp_path / "b"))
    assert_one_line_error(proc, "--microaggregate-method", "--microaggregate")
    recipe = tmp_path / "bad.json"
    recipe.write_text(json.dumps({"steps": [{"step": "suppress", "k": 2, "method": "fast"}]}))
    proc = run_in_process(capsys, "protect", str(path), "--keys", keys, "--recipe", str(recipe),
                          "--out", str(tmp_path / "c"))
    assert_one_line_error(proc, "method", "greedy", "sequential", "fast")
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()


def test_sorted_microaggregation_option(tmp_path, capsys):
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 50), "x": rng.normal(100, 20, 50).round(2),
                          "y": rng.normal(0, 1, 50).round(3)})
    path = tmp_path / "f.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "a", "--microaggregate", "x,y",
                          "--microaggregate-method", "sorted", "--mdav-k", "4",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out / "protected.csv")
    expect = sorted_microaggregation(frame, ["x", "y"], 4).frame
    np.testing.assert_allclose(got[["x", "y"]].to_numpy(), expect[["x", "y"]].to_numpy(),
                               rtol=1e-12)
    # each column on its own: x's groups are blocks of its own sorted values
    order = np.argsort(frame["x"].to_numpy(), kind="stable")
    blocks = np.minimum(np.arange(50) // 4, 50 // 4 - 1)  # the remainder joins the last
    means = pd.Series(frame["x"].to_numpy()[order]).groupby(blocks).transform("mean")
    np.testing.assert_allclose(got["x"].to_numpy()[order], means.to_numpy(), rtol=1e-9)
