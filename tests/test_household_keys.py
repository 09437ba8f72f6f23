"""Household keys kept consistent by local suppression (``household_keys``).

Once the household id is released, a household-level key (one shown value in every
household, an item-missing member being no other value: household size, the household's
region) that a suppression blanked in one member but a
mate still shows is read off the mate (``protect --household``'s risk after reads it as
shown: tests/test_household_completion.py), so the blank protects nothing. With
``household_keys`` (library: :func:`local_suppression`, :func:`risk_suppression`;
``protect --household-keys`` and a recipe's ``household_keys``) such a blank is copied to
every member of the household after the suppression reached k-anonymity. Checked here:
every household then agrees on each household key, only blanks are added to the plain
suppression (same method), k-anonymity still holds (recounted with
:func:`wildcard_frequencies`), "auto" detection, the refusals before any work, the
``--household`` warning's disappearance and the demo's numbers.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process
from test_protect_household import _survey

from sdcbayes.exceptions import InputError
from sdcbayes.protection import suppression as S
from sdcbayes.protection.suppression import (
    household_level_keys,
    local_suppression,
    risk_suppression,
    wildcard_frequencies,
)

HH = "household_id"
KEYS = ["age", "sex", "region", "occupation"]
IMPORTANCE = "age=1,sex=2,occupation=3,region=4"  # region blanked first


@pytest.fixture(scope="module")
def demo():
    from sdcbayes.datasets import demo_keys, load_demo

    return load_demo().sample, demo_keys()


def _agree(frame: pd.DataFrame, household, key: str) -> bool:
    """Every household all blank or all showing one value of ``key``."""
    g = frame.groupby(household, sort=False)[key]
    n_shown = g.count()
    size = g.size()
    return bool(((n_shown == 0) | ((n_shown == size) & (g.nunique() == 1))).all())


def _mates_leak(original: pd.DataFrame, released: pd.DataFrame, household, key: str
                ) -> tuple[int, int]:
    """(blanked values a household mate shows, blanked values) of ``key``."""
    blank = released[key].isna() & original[key].notna()
    shown = released[key].notna().groupby(original[household]).transform("any")
    return int((blank & shown).sum()), int(blank.sum())


def _only_blanks_added(original, plain, consistent, keys) -> np.ndarray:
    """Assert ``consistent`` = ``plain`` + blanks; return the added blanks (records x keys)."""
    p = plain[keys].isna().to_numpy()
    c = consistent[keys].isna().to_numpy()
    assert not (p & ~c).any()  # every blank of the plain suppression is kept
    shown = ~c
    for j, k in enumerate(keys):  # every value shown is the input's
        assert (consistent[k][shown[:, j]].astype(str)
                == original[k][shown[:, j]].astype(str)).all(), k
    return c & ~p


# --------------------------------------------------------------------------- library
@pytest.mark.parametrize("method", ["greedy", "sequential"])
def test_household_keys_are_consistent_and_only_blanks_are_added(demo, method):
    sample, keys = demo
    plain = local_suppression(sample, keys, 3, method=method)
    res = local_suppression(sample, keys, 3, method=method, household=HH,
                            household_keys=["household_size"])
    assert _agree(res.frame, sample[HH], "household_size")
    assert not _agree(plain.frame, sample[HH], "household_size")
    added = _only_blanks_added(sample, plain.frame, res.frame, keys)
    j = keys.index("household_size")
    n_added = res.summary["household_suppressions"]["household_size"]
    assert added[:, j].sum() == n_added > 0
    assert added.sum() == n_added  # no other key changed
    # the suppressions include them; the log marks them
    assert res.summary["suppressions"]["household_size"] == \
        plain.summary["suppressions"]["household_size"] + n_added
    assert res.summary["total_suppressions"] == plain.summary["total_suppressions"] + n_added
    mates = res.log[res.log["household_mate"]]
    assert len(mates) == n_added and set(mates["variable"]) == {"household_size"}
    assert set(mates["record"]) == set(np.flatnonzero(added[:, j]))
    assert res.summary["household"] == HH and res.summary["household_keys"] == ["household_size"]
    # still 3-anonymous under wildcard matching: blanks only raise the frequencies
    f_plain = wildcard_frequencies(plain.frame, keys)
    f = wildcard_frequencies(res.frame, keys)
    assert f.min() >= 3 and (f >= f_plain).all()


def test_demo_greedy_k3_household_size_numbers(demo):
    sample, keys = demo
    plain = local_suppression(sample, keys, 3)
    res = local_suppression(sample, keys, 3, household=HH, household_keys=["household_size"])
    assert _mates_leak(sample, plain.frame, HH, "household_size") == (46, 48)
    # the added blanks: every member of a household with a blank, less the blanks
    hit = plain.frame["household_size"].isna().groupby(sample[HH]).transform("any")
    expected = int(hit.sum()) - 48
    assert res.summary["household_suppressions"] == {"household_size": expected}
    assert expected == 103
    assert _mates_leak(sample, res.frame, HH, "household_size") == (0, 48 + 103)
    assert wildcard_frequencies(res.frame, keys).min() >= 3
    # "auto" finds household_size alone among the demo's keys
    auto = local_suppression(sample, keys, 3, household=HH, household_keys="auto")
    assert auto.summary["household_keys"] == ["household_size"]
    pd.testing.assert_frame_equal(auto.frame, res.frame)


def test_auto_detection():
    df = pd.DataFrame({
        "hid": [1, 1, 2, 2, 3, 4, 4],
        "size": [2, 2, 2, 2, 1, 2, 2],           # household-level
        "region": ["a", "a", "b", "b", "a", None, None],  # missing in a whole household
        "tenure": ["o", "o", "r", None, "o", "r", "r"],   # missing in one member only
        "age": [30, 5, 40, 41, 70, 20, 20],
    })
    keys = ["age", "size", "region", "tenure"]
    # judged among the shown values: household 2's missing tenure is no second value
    # (audit F2), so one item-missing member no longer takes tenure off the list
    assert household_level_keys(df, keys, "hid") == ["size", "region", "tenure"]
    res = local_suppression(df, keys, 2, household="hid", household_keys="auto")
    assert res.summary["household_keys"] == ["size", "region", "tenure"]
    for k in ("size", "region"):
        assert _agree(res.frame, df["hid"], k)
    # tenure: among the members the input shows, a household is all blank or all shown,
    # and the missing member stays missing (only blanks are added: still 2-anonymous)
    known = df["tenure"].notna()
    assert _agree(res.frame[known], df["hid"][known], "tenure")
    assert res.frame.loc[~known, "tenure"].isna().all()
    assert wildcard_frequencies(res.frame, keys).min() >= 2
    # a personal key with two shown values in one household is not household-level
    assert household_level_keys(df.assign(tenure=["o", "r", "r", None, "o", "r", "r"]),
                                keys, "hid") == ["size", "region"]


def test_linked_columns_follow_the_added_blanks(demo):
    sample, keys = demo
    df = sample.assign(size_text=sample["household_size"].astype(str))
    res = local_suppression(df, keys, 3, linked={"household_size": ["size_text"]},
                            household=HH, household_keys=["household_size"])
    pd.testing.assert_series_equal(res.frame["size_text"].isna(),
                                   res.frame["household_size"].isna(), check_names=False)
    linked_mates = res.log[(res.log["variable"] == "size_text") & res.log["household_mate"]]
    assert len(linked_mates) == res.summary["household_suppressions"]["household_size"]
    assert (linked_mates["linked_to"] == "household_size").all()


def test_risk_suppression_spreads_its_key_to_household_mates(demo):
    sample, keys = demo
    risk = np.random.default_rng(3).uniform(0, 0.3, len(sample))
    plain = risk_suppression(sample, keys, risk, 0.2, key="household_size")
    res = risk_suppression(sample, keys, risk, 0.2, key="household_size", household=HH,
                           household_keys="auto")
    assert _agree(res.frame, sample[HH], "household_size")
    added = _only_blanks_added(sample, plain.frame, res.frame, keys)
    assert added.sum() == res.summary["household_suppressions"]["household_size"] > 0
    assert res.summary["suppressions"]["household_size"] == int(
        res.frame["household_size"].isna().sum())
    assert res.summary["n_above_threshold"] == plain.summary["n_above_threshold"]
    # a listed key the step does not blank adds nothing
    other = risk_suppression(sample, keys, risk, 0.2, key="age_group", household=HH,
                             household_keys=["household_size"])
    assert other.summary["household_suppressions"] == {"household_size": 0}
    assert not other.log["household_mate"].any()


def _small():
    return pd.DataFrame({"hid": [1, 1, 2, 2, 3], "size": [2, 2, 2, 2, 1],
                         "sex": list("mfmfm"), "w": [1.0] * 5})


@pytest.mark.parametrize("kwargs, fragments", [
    ({"household": "hidd", "household_keys": "auto"}, ["household", "hidd", "not found"]),
    ({"household": "sex", "household_keys": "auto"},
     ["household column 'sex' is a key of the step", "leave it out of the keys"]),
    ({"household": "hid", "household_keys": ["w"]},
     ["household_keys ['w'] are not among the keys", "'auto'"]),
    ({"household_keys": "auto"}, ["household_keys='auto' needs household="]),
    ({"household_keys": ["size"]}, ["needs household="]),
    ({"household": "hid"}, ["household='hid' is used with household_keys"]),
    ({"household": "hid", "household_keys": ["size"], "linked": {"sex": ["hid"]}},
     ["household column 'hid' is linked to 'sex'"]),
    ({"household": "gap", "household_keys": "auto"},
     ["household column 'gap' has 1 missing ids", "leave out household"]),
])
@pytest.mark.parametrize("function", ["local", "risk"])
def test_library_refusals_before_any_work(monkeypatch, kwargs, fragments, function):
    def boom(*args, **kw):
        raise AssertionError("work started before the input was checked")

    monkeypatch.setitem(S._METHODS, "greedy", boom)
    monkeypatch.setattr(S, "_blanked_output", boom)
    df = _small().assign(gap=[1, 1, None, 2, 3])
    with pytest.raises(InputError) as e:
        if function == "local":
            local_suppression(df, ["size", "sex"], 2, **kwargs)
        else:
            risk_suppression(df, ["size", "sex"], [0.5] * 5, 0.1, key="size", **kwargs)
    for frag in fragments:
        assert frag in str(e.value), str(e.value)


# --------------------------------------------------------------------------- protect
# households of 1-3 records, region the household's (test_protect_household's file)


@pytest.fixture(scope="module")
def survey_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("household_keys") / "survey.csv"
    _survey().to_csv(path, index=False)
    return path


def _protect(capsys, path, out, *args):
    proc = run_in_process(capsys, "protect", str(path), "--keys", ",".join(KEYS), "--weight",
                          "w", "--household", "hid", "--seed", "1", *args, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads((out / "summary.json").read_text())


def test_protect_household_keys_auto(capsys, tmp_path, survey_path):
    frame = pd.read_csv(survey_path)
    common = ["--suppress-k", "3", "--importance", IMPORTANCE]
    plain_proc, plain = _protect(capsys, survey_path, tmp_path / "plain", *common)
    proc, s = _protect(capsys, survey_path, tmp_path / "hk", *common,
                       "--household-keys", "auto")
    released = pd.read_csv(tmp_path / "hk" / "protected.csv")
    plain_released = pd.read_csv(tmp_path / "plain" / "protected.csv")
    assert _agree(released, frame["hid"], "region")
    assert _mates_leak(frame, released, "hid", "region")[0] == 0
    leak, n_blank = _mates_leak(frame, plain_released, "hid", "region")
    assert 0 < leak < n_blank
    added = _only_blanks_added(frame, plain_released, released, KEYS)
    result = s["steps"][0]["result"]
    assert s["steps"][0]["parameters"]["household_keys"] == "auto"
    assert result["household_keys"] == ["region"]  # the only household-level key
    n = result["household_suppressions"]["region"]
    assert added.sum() == added[:, KEYS.index("region")].sum() == n > 0
    # log.csv marks the added blanks
    log = pd.read_csv(tmp_path / "hk" / "log.csv")
    assert int(log["household_mate"].sum()) == n
    assert set(log.loc[log["household_mate"], "variable"]) == {"region"}
    # the terminal says so, and the warning is gone (it is there without the option)
    assert f"step 1 (suppress): {n} values blanked in household mates (household_keys: " \
        f"region {n})" in proc.stdout
    assert "values blanked in household mates" not in plain_proc.stdout
    assert not any(w.startswith("--household") for w in s["warnings"])
    assert "--household hid" not in proc.stderr
    warned = [w for w in plain["warnings"] if w.startswith("--household hid")]
    assert len(warned) == 1 and f"'region' {leak} of its {n_blank}" in warned[0]
    assert "--household-keys auto" in warned[0]
    # the risk after reads the mates' regions as shown without the option, none with it
    assert plain["risk"]["household_completion"]["keys"] == {
        "region": {"from_mates": leak, "counted": 0}}
    assert s["risk"]["household_completion"] == {"keys": {}, "from_mates": 0, "counted": 0,
                                                 "total": 0}
    line = "as the released household ids give them away"
    assert line in plain_proc.stdout and line not in proc.stdout
    # still 3-anonymous as the suppression judges it
    assert s["risk"]["after"]["k_anonymity_violations_suppression"] == 0
    assert wildcard_frequencies(released, KEYS).min() >= 3


def test_protect_household_keys_with_suppress_risk(capsys, tmp_path, survey_path):
    frame = pd.read_csv(survey_path)
    _, s = _protect(capsys, survey_path, tmp_path / "o", "--suppress-risk", "0.1",
                    "--suppress-risk-key", "region", "--household-keys", "region")
    released = pd.read_csv(tmp_path / "o" / "protected.csv")
    assert _agree(released, frame["hid"], "region")
    r = s["steps"][0]["result"]
    assert s["steps"][0]["name"] == "suppress_risk"
    assert r["household_suppressions"]["region"] > 0
    assert r["suppressions"]["region"] == int(released["region"].isna().sum())


def test_recipe_household_keys(capsys, tmp_path, survey_path):
    frame = pd.read_csv(survey_path)
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "suppress", "k": 3, "importance": {"age": 1, "sex": 2, "occupation": 3,
                                                    "region": 4},
         "household_keys": ["region"]},
        {"step": "suppress_risk", "threshold": 0.05, "key": "region",
         "household_keys": "auto"}]}))
    proc, s = _protect(capsys, survey_path, tmp_path / "o", "--recipe", str(recipe))
    released = pd.read_csv(tmp_path / "o" / "protected.csv")
    assert _agree(released, frame["hid"], "region")
    r1, r2 = (st["result"] for st in s["steps"])
    assert r1["household_keys"] == r2["household_keys"] == ["region"]
    assert r1["household_suppressions"]["region"] > 0
    assert "step 1 (suppress):" in proc.stdout and "step 2 (suppress_risk):" in proc.stdout
    assert not any(w.startswith("--household") for w in s["warnings"])
    # a recipe's household key is a key of the step, given by name or variable label alike
    assert s["steps"][0]["parameters"]["household_keys"] == ["region"]


def test_protect_household_keys_under_latent_class(capsys, tmp_path, survey_path):
    frame = pd.read_csv(survey_path)
    _, s = _protect(capsys, survey_path, tmp_path / "o", "--suppress-k", "3", "--importance",
                    IMPORTANCE, "--household-keys", "auto", "--model", "latent-class",
                    "--draws", "100", "--tune", "200", "--chains", "2")
    released = pd.read_csv(tmp_path / "o" / "protected.csv")
    assert _agree(released, frame["hid"], "region")
    after = s["risk"]["after"]
    assert after["household_expected_reidentifications"] < \
        s["risk"]["before"]["household_expected_reidentifications"]
    assert s["steps"][0]["result"]["household_suppressions"]["region"] > 0


@pytest.mark.parametrize("args, fragments", [
    (["--suppress-k", "3", "--household-keys", "auto"],
     ["--household-keys", "add --household COL"]),
    (["--household", "hid", "--noise", "income", "--household-keys", "auto"],
     ["--household-keys", "add --suppress-k K or --suppress-risk R"]),
    (["--household", "hid", "--suppress-k", "3", "--household-keys", " "],
     ["--household-keys is empty"]),
    (["--household", "hid", "--suppress-k", "3", "--household-keys", "income"],
     ["--household-keys 'income': not among the step's keys", "or auto"]),
    (["--household", "hid", "--suppress-k", "3", "--household-keys", "regio"],
     ["--household-keys", "regio", "region"]),
])
def test_protect_refusals_before_any_work(capsys, tmp_path, survey_path, protect_no_work, args,
                                          fragments):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(survey_path), "--keys", ",".join(KEYS),
                          "--weight", "w", *args, "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()


@pytest.mark.parametrize("step, household, fragments", [
    ({"step": "suppress", "k": 3, "household_keys": "auto"}, False,
     ["step 1 (suppress): household_keys", "add --household COL"]),
    ({"step": "suppress", "k": 3, "keys": ["age", "sex"], "household_keys": ["region"]}, True,
     ["step 1 (suppress): household_keys 'region': not among the step's keys (age, sex)"]),
    ({"step": "suppress_risk", "threshold": 0.1, "household_keys": 3}, True,
     ["step 1 (suppress_risk): household_keys must be \"auto\" or a list", "got 3"]),
    ({"step": "pram", "columns": ["age"], "household_keys": "auto"}, True,
     ["step 1 (pram): unknown parameter(s) ['household_keys']"]),
    (None, True, ["--household-keys applies to the step options",
                  "\"household_keys\" inside the suppress and suppress_risk steps"]),
])
def test_recipe_refusals_before_any_work(capsys, tmp_path, survey_path, protect_no_work, step,
                                         household, fragments):
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [step or {"step": "suppress", "k": 3}]}))
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(survey_path), "--keys", ",".join(KEYS),
                          "--weight", "w", *(["--household", "hid"] if household else []),
                          "--recipe", str(recipe),
                          *([] if step else ["--household-keys", "auto"]), "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()
