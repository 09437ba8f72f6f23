"""Every command stamps the input file it read: path, size and SHA-256 in summary.json.

The digest is checked against :mod:`hashlib` over the file's bytes (what ``sha256sum``
prints), so a summary can be traced to the very file it was computed from.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from clitools import run_in_process

from sdcbayes.provenance import file_fingerprint, stamp


@pytest.fixture
def records(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "records.csv"
    pd.DataFrame({"age": rng.integers(0, 6, 200), "sex": rng.integers(1, 3, 200),
                  "region": rng.integers(0, 4, 200), "w": 20.0}).to_csv(path, index=False)
    return path


@pytest.fixture
def domains(tmp_path):
    rng = np.random.default_rng(4)
    N = rng.integers(200, 2000, 12)
    n = rng.binomial(N, 0.05)
    path = tmp_path / "domains.csv"
    pd.DataFrame({"y": rng.binomial(n, 0.3), "n": n, "N": N}).to_csv(path, index=False)
    return path


def _expected(path):
    data = path.read_bytes()
    return {"path": str(path), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _summary(folder):
    return json.loads((folder / "summary.json").read_text())


@pytest.mark.parametrize("args", [
    ["assess", "--model", "closed-form", "--weight", "w"],
    ["suda"],
    ["protect", "--suppress-k", "2"],
    ["compare", "--weight", "w", "--models", "cf=closed-form"],
], ids=["assess", "suda", "protect", "compare"])
def test_commands_stamp_the_input_files_fingerprint(records, tmp_path, capsys, args):
    out = tmp_path / "out"
    proc = run_in_process(capsys, args[0], str(records), "--keys", "age,sex,region",
                          *args[1:], "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert _summary(out)["provenance"]["input"] == _expected(records)


def test_decide_stamps_the_domain_file(domains, tmp_path, capsys):
    out = tmp_path / "out"
    proc = run_in_process(capsys, "decide", str(domains), "--y", "y", "--n", "n", "--N", "N",
                          "--hyperparameters", "ml", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert _summary(out)["provenance"]["input"] == _expected(domains)


def test_the_demo_has_no_input_file(tmp_path, capsys):
    out = tmp_path / "out"
    proc = run_in_process(capsys, "assess", "--model", "closed-form", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert _summary(out)["provenance"]["input"] is None


def test_fingerprint_of_a_file_larger_than_one_block(tmp_path):
    # read block by block: the digest is the whole file's, not its first MiB's
    path = tmp_path / "big.bin"
    path.write_bytes(np.random.default_rng(0).bytes(3 * 2**20 + 17))
    assert file_fingerprint(path) == _expected(path)
    assert stamp("m", input_file=path)["input"] == _expected(path)
    assert "input" not in stamp("m")
