"""Provenance stamps and the one JSON-safe converter every writer uses."""

import json
import math
from pathlib import Path

import numpy as np

from sdcbayes import __version__
from sdcbayes.provenance import json_safe, stamp


def test_json_safe_makes_plain_valid_json():
    obj = {
        1: np.float64("nan"),
        "a": [np.int64(3), np.bool_(True), (1.5, float("inf"))],
        "b": np.arange(3),
        "p": Path("x/y"),
        "n": None,
    }
    out = json_safe(obj)
    assert out == {"1": None, "a": [3, True, [1.5, None]], "b": [0, 1, 2], "p": "x/y", "n": None}
    text = json.dumps(out, allow_nan=False)  # raises on NaN: none may remain
    assert type(json.loads(text)["a"][1]) is bool


def test_stamp_records_model_priors_data_and_versions():
    s = stamp("poisson-gamma", priors={"alpha": {"dist": "LogNormal"}}, data_summary={"n": 3},
              settings={"draws": 10})
    assert s["sdcbayes_version"] == __version__
    assert s["model"] == "poisson-gamma" and s["priors"]["alpha"]["dist"] == "LogNormal"
    assert s["data"] == {"n": 3} and s["settings"] == {"draws": 10}
    assert s["versions"]["numpy"] == np.__version__
    assert not math.isnan(len(s["created"]))
