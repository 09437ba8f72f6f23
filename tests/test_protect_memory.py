"""Protection steps share the columns they leave alone, and change nothing else.

`sdcbayes protect` chains steps; each used to return a deep copy of the whole frame, so
a run held one copy of the data per step besides the risk tables (audit F6: ~14 copies
of the input at 10^7 records). The methods now copy only the columns they change
(:func:`sdcbayes.protection.base.output_frame`), which is safe only under pandas'
copy-on-write. These tests pin what must not move with that:

- the protected file, ``log.csv`` and the numbers of ``summary.json`` of a small run are
  those of the same run with every step deep-copying the whole frame;
- no protection function modifies its input frame (values, columns and dtypes), not
  even when the caller then edits the returned frame in place;
- under copy-on-write an unchanged column is shared, not copied.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import run_in_process

from sdcbayes import protection as P
from sdcbayes.protection import base
from sdcbayes.protection.base import _copy_on_write

KEYS = ["age_group", "sex", "occupation", "education", "hsize"]


def _survey(n: int = 4000) -> pd.DataFrame:
    """A small census-like file (fixed seed): categorical keys, strata, weights, income."""
    rng = np.random.default_rng(20261125)
    return pd.DataFrame(
        {
            "region": rng.choice([f"R{i}" for i in range(1, 6)], n),
            "age_group": rng.choice([f"a{i}" for i in range(8)], n, p=[.2, .2, .15, .15, .1,
                                                                       .1, .06, .04]),
            "sex": rng.choice(["m", "f"], n),
            "occupation": rng.choice([f"o{i}" for i in range(12)], n),
            "education": rng.choice([f"e{i}" for i in range(5)], n),
            "hsize": rng.integers(1, 7, n),
            "income": rng.lognormal(9.5, 1.0, n).round(0).astype(np.int64),
            "w": rng.uniform(5, 50, n).round(2),
        }
    )


RECIPE = {
    "seed": 7,
    "steps": [
        {"step": "recode", "column": "age_group", "mapping": {"a6": "a6+", "a7": "a6+"}},
        {"step": "top_code", "column": "income", "threshold": 60000},
        {"step": "pram", "columns": ["occupation"], "pd": 0.8, "strata": ["region"]},
        {"step": "suppress", "k": 3},
        {"step": "nayak_zhang", "xi": 0.5},
    ],
}

def _numbers(summary: dict) -> dict:
    """The numbers of summary.json that the steps and the risk measures produce."""
    risk = summary["risk"]
    return {
        "before": {k: risk["before"][k] for k in sorted(risk["before"])},
        "after": {k: risk["after"][k] for k in sorted(risk["after"])},
        "steps": [st["result"] for st in summary["steps"]],
        "information_loss": summary["information_loss"],
    }


def _protect(tmp_path, capsys, name: str) -> tuple[bytes, bytes, dict]:
    data = tmp_path / "survey.csv"
    _survey().to_csv(data, index=False)
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps(RECIPE), encoding="utf-8")
    out = tmp_path / name
    proc = run_in_process(capsys, "protect", str(data), "--keys", ",".join(KEYS),
                          "--weight", "w", "--recipe", str(recipe), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return ((out / "protected.csv").read_bytes(), (out / "log.csv").read_bytes(),
            _numbers(summary))


def test_protect_outputs_equal_those_of_deep_copies(tmp_path, capsys, monkeypatch):
    # the steps' shared columns change nothing: the same run with every step deep-copying
    # the whole frame (as before output_frame) writes the same bytes and numbers
    shared = _protect(tmp_path, capsys, "shared")
    monkeypatch.setattr(base, "_copy_on_write", lambda: False)
    copied = _protect(tmp_path, capsys, "copied")
    assert shared[0] == copied[0] and shared[1] == copied[1]
    assert json.loads(json.dumps(shared[2])) == json.loads(json.dumps(copied[2]))
    assert shared[2]["after"]["n_sample_uniques"] < shared[2]["before"]["n_sample_uniques"]


def _typed_frame(n: int = 600) -> pd.DataFrame:
    """Columns of every dtype a step meets: categorical, object, str, int, Int64, float, bool."""
    rng = np.random.default_rng(11)
    df = pd.DataFrame(
        {
            "cat": pd.Categorical(rng.choice(["x", "y", "z", "u"], n)),
            "obj": pd.Series(rng.choice(["p", "q", "r"], n), dtype=object),
            "txt": pd.Series(rng.choice(["s1", "s2", "s3"], n), dtype="string"),
            "num": rng.integers(0, 5, n),
            "nullable": pd.array(rng.integers(0, 3, n), dtype="Int64"),
            "income": rng.lognormal(8, 1, n).round(1),
            "flag": rng.random(n) < 0.5,
            "stratum": rng.choice(["A", "B"], n),
            "untouched": np.arange(n, dtype=np.int64),
        }
    )
    df.loc[::37, "obj"] = None
    df.loc[::41, "nullable"] = pd.NA
    df.loc[::43, "income"] = np.nan
    return df


CALLS = {
    "merge_levels_cat": lambda f: P.merge_levels(f, "cat", {"x": "xy", "y": "xy"}),
    "merge_levels_obj": lambda f: P.merge_levels(f, "obj", {"p": "pq", "q": "pq"}),
    "merge_levels_int": lambda f: P.merge_levels(f, "num", {3: 2, 4: 2}),
    "band": lambda f: P.band(f, "income", [0, 1000, 5000, 1e9]),
    "top_code": lambda f: P.top_code(f, "income", 5000),
    "bottom_code": lambda f: P.bottom_code(f, "num", 1),
    "suppress_greedy": lambda f: P.local_suppression(f, ["cat", "obj", "num", "nullable"], 3),
    "suppress_sequential": lambda f: P.local_suppression(
        f, ["cat", "txt", "num", "flag"], 3, method="sequential"),
    "suppress_strata": lambda f: P.local_suppression(f, ["cat", "obj", "num"], 4,
                                                     strata=["stratum"]),
    "mdav": lambda f: P.mdav(f, ["num"], 3),
    "sorted_microaggregation": lambda f: P.sorted_microaggregation(f, ["num"], 3),
    "noise": lambda f: P.add_noise(f, ["num"], seed=3),
    "pram": lambda f: P.invariant_pram(f, ["cat", "obj", "txt"], seed=3),
    "pram_strata": lambda f: P.invariant_pram(f, ["cat", "num"], strata=["stratum"], seed=3),
    "nayak_zhang": lambda f: P.nayak_zhang_pram(f, ["cat", "obj", "num", "nullable"], xi=0.5,
                                                seed=3),
}


def _assert_same(df: pd.DataFrame, snapshot: pd.DataFrame) -> None:
    assert list(df.columns) == list(snapshot.columns)
    assert df.dtypes.equals(snapshot.dtypes)
    assert df.index.equals(snapshot.index)
    assert df.equals(snapshot)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_protection_never_modifies_its_input(name):
    df = _typed_frame()
    snapshot = df.copy(deep=True)
    res = CALLS[name](df)
    _assert_same(df, snapshot)
    # the step did something, and its frame keeps the input's columns and rows
    assert list(res.frame.columns) == list(df.columns)
    assert len(res.frame) == len(df)
    # a caller editing the result in place, every column, never reaches the input
    out = res.frame
    for j, c in enumerate(out.columns):
        observed = out[c].dropna()
        out.iloc[0, j] = observed.iloc[-1]
    out.iloc[1:4, out.columns.get_loc("untouched")] = -1
    _assert_same(df, snapshot)
    # and a later step run on the result leaves the earlier frame and the input alone
    before_next = res.frame.copy(deep=True)
    CALLS["suppress_greedy"](res.frame)
    _assert_same(res.frame, before_next)
    _assert_same(df, snapshot)


@pytest.mark.parametrize("name", ["merge_levels_cat", "top_code", "suppress_greedy", "pram",
                                  "nayak_zhang", "mdav", "noise"])
def test_unchanged_columns_shared_under_copy_on_write(name):
    df = _typed_frame()
    res = CALLS[name](df)
    shared = np.shares_memory(res.frame["untouched"].to_numpy(), df["untouched"].to_numpy())
    # copy-on-write (pandas >= 3) makes sharing safe; without it every column is copied
    assert shared is _copy_on_write()


def test_frame_equal_after_chained_steps():
    """The protect chain's result equals the same chain on deep copies of each frame."""
    df = _typed_frame()
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    a = P.merge_levels(df, "cat", {"x": "xy", "y": "xy"}).frame
    a = P.invariant_pram(a, ["obj"], strata=["stratum"], seed=rng_a).frame
    a = P.local_suppression(a, ["cat", "obj", "num"], 3).frame
    b = P.merge_levels(df.copy(deep=True), "cat", {"x": "xy", "y": "xy"}).frame.copy(deep=True)
    b = P.invariant_pram(b, ["obj"], strata=["stratum"], seed=rng_b).frame.copy(deep=True)
    b = P.local_suppression(b, ["cat", "obj", "num"], 3).frame.copy(deep=True)
    _assert_same(a, b)
