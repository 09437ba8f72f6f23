"""``protect --household``: a key the released household ids count is never blanked.

In a sample of whole households, household size equals each household's number of
records; with the ids released it is counted off the file, so a blank of it hides nothing
(:func:`~sdcbayes.protection.suppression.household_completion` reads it as shown).
Under ``--household`` a ``suppress`` step therefore runs with such a key taken out of its
keys, within each household's exact record count (a temporary stratum column, never
written: k-anonymity over the other keys within each count is k-anonymity over all keys
with household size read exactly, seed 001 section 3.2 with blanks as wildcards), and a
``suppress_risk`` step does not blank it. Checked on the demo
(greedy and sequential k = 3; the written file has no blank of household_size and the file
as the intruder completes it is 3-anonymous, recounted here by brute force over all pairs
of records), with ``--household-keys auto`` and a recipe's ``household_keys``, ``combs``
(every subset of m keys k-anonymous), a key recoded into bands (the intruder counts the
exact value: suppressed within the exact counts, not the bands), a count key with a value
missing in the input (read as its count before and after), the refusals before any work,
and without ``--household`` (unchanged).
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, main_captured, run_in_process

from sdcbayes.protection.suppression import (
    household_completion,
    local_suppression,
    wildcard_frequencies,
)

KEYS = ["age_group", "sex", "marital_status", "education", "country_of_birth",
        "household_size"]
HH = "household_id"
NOTE = ("step 1 (suppress): household_size is each household's number of records, counted "
        "off the file once the household id (household_id) is released: suppressed within "
        "each household's exact number of records instead of blanked")


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory):
    from sdcbayes.datasets import load_demo

    path = tmp_path_factory.mktemp("count_strata") / "demo.csv"
    load_demo().sample.to_csv(path, index=False)
    return path


def _protect(path, out, *args):
    rc, stdout, err = main_captured(
        "protect", str(path), "--keys", ",".join(KEYS), "--weight", "weight", "--seed", "1",
        *args, "--out", str(out))
    assert rc == 0, err
    return {"out": stdout, "err": err, "dir": out,
            "summary": json.loads((out / "summary.json").read_text())}


@pytest.fixture(scope="module")
def runs(demo_path):
    """The demo, greedy k = 3: with --household, with --household-keys auto, without."""
    tmp = demo_path.parent
    common = ["--suppress-k", "3"]
    return {"hh": _protect(demo_path, tmp / "hh", *common, "--household", HH),
            "auto": _protect(demo_path, tmp / "auto", *common, "--household", HH,
                             "--household-keys", "auto"),
            "plain": _protect(demo_path, tmp / "plain", *common)}


def _read(path):
    from sdcbayes.cli import read_data

    return read_data(path, quiet=True)


def _min_frequency(frame: pd.DataFrame, keys: list[str]) -> int:
    """Smallest number of records matching a record on ``keys``, a blank matching anything.

    Brute force over all pairs (independent of the library's frequency code).
    """
    codes = np.column_stack([pd.factorize(frame[k].astype(str).where(frame[k].notna()))[0]
                             for k in keys])
    best = len(frame)
    for start in range(0, len(codes), 500):
        a = codes[start:start + 500, None, :]
        b = codes[None, :, :]
        match = ((a == b) | (a < 0) | (b < 0)).all(axis=2)
        best = min(best, int(match.sum(axis=1).min()))
    return best


def test_the_demo_never_blanks_household_size_and_is_3_anonymous_as_read(demo_path, runs):
    original = _read(demo_path)
    written = _read(runs["hh"]["dir"] / "protected.csv")
    # the written file: no blank of household_size, other keys blanked
    assert not written["household_size"].isna().any()
    assert written[KEYS[:-1]].isna().to_numpy().any()
    completed, filled = household_completion(original, written, KEYS, HH)
    assert filled == {}  # nothing left for the ids to give away
    assert _min_frequency(completed, KEYS) >= 3
    # the same without the count key moved is not 3-anonymous as read (the issue fixed)
    plain = local_suppression(original, KEYS, 3).frame
    assert plain["household_size"].isna().any()
    assert _min_frequency(household_completion(original, plain, KEYS, HH)[0], KEYS) < 3
    s = runs["hh"]["summary"]
    result = s["steps"][0]["result"]
    assert result["count_keys_as_strata"] == ["household_size"]
    assert result["strata"] == ["household_size"] and "household_size" not in result["keys"]
    assert "count_keys_as_strata" not in s["steps"][0]["parameters"]  # as given
    after = s["risk"]["after"]
    assert after["k_anonymity_violations"] == after["k_anonymity_violations_suppression"] == 0
    assert after["n_sample_uniques"] == 0
    assert s["risk"]["household_completion"]["total"] == 0
    # one note, on stderr and in summary.json; no count or mates warning is left
    assert NOTE in s["warnings"]
    assert runs["hh"]["err"].count(NOTE) == 1
    assert not any(w.startswith("--household") for w in s["warnings"])


def test_household_keys_auto_changes_nothing_more(runs):
    a, b = (_read(runs[n]["dir"] / "protected.csv") for n in ("hh", "auto"))
    pd.testing.assert_frame_equal(a, b)
    r = runs["auto"]["summary"]["steps"][0]["result"]
    # none of the keys left is household-level: nothing to keep consistent
    assert r["household_keys"] == [] and r["count_keys_as_strata"] == ["household_size"]
    assert runs["auto"]["summary"]["risk"]["after"] == runs["hh"]["summary"]["risk"]["after"]


def test_without_household_the_suppression_is_the_librarys(demo_path, runs):
    written = _read(runs["plain"]["dir"] / "protected.csv")
    original = _read(demo_path)
    ref = local_suppression(original, KEYS, 3)
    assert written["household_size"].isna().sum() == ref.summary["suppressions"][
        "household_size"] > 0
    pd.testing.assert_frame_equal(written[KEYS].isna(), ref.frame[KEYS].isna())
    s = runs["plain"]["summary"]
    assert "count_keys_as_strata" not in s["steps"][0]["result"]
    assert not any("number of records" in w for w in s["warnings"])


def _recipe(tmp_path, *steps):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"steps": list(steps)}))
    return path


@pytest.mark.parametrize("listed, kept", [
    (["household_size", "age_group"], ["age_group"]),
    (["household_size"], None),
])
def test_recipe_household_keys_naming_the_count_key(demo_path, tmp_path, listed, kept):
    recipe = _recipe(tmp_path, {"step": "suppress", "k": 3, "household_keys": listed})
    run = _protect(demo_path, tmp_path / "o", "--household", HH, "--recipe", str(recipe))
    s = run["summary"]
    r = s["steps"][0]["result"]
    assert s["steps"][0]["parameters"]["household_keys"] == listed
    assert r["count_keys_as_strata"] == ["household_size"]
    note = next(w for w in s["warnings"] if w.startswith("step 1 (suppress)"))
    assert "dropped from household_keys" in note
    if kept is None:  # no key left to keep consistent: run without household keys
        assert "household_keys" not in r and "run without household keys" in note
    else:
        assert r["household_keys"] == kept and "run without" not in note
        assert r["household_suppressions"]["age_group"] > 0
    written = _read(tmp_path / "o" / "protected.csv")
    assert not written["household_size"].isna().any()
    assert _min_frequency(household_completion(_read(demo_path), written, KEYS, HH)[0],
                          KEYS) >= 3


@pytest.mark.parametrize("step", [
    {"step": "suppress", "k": 3, "method": "sequential"},
    {"step": "suppress", "k": 3, "combs": [2], "importance": [1, 2, 3, 4, 5, 6]},
    {"step": "suppress", "k": 3, "strata": ["region"],
     "linked": {"household_size": ["relationship"], "age_group": ["age_band"]}},
])
def test_sequential_combs_and_strata(demo_path, tmp_path, step):
    recipe = _recipe(tmp_path, step)
    run = _protect(demo_path, tmp_path / "o", "--household", HH, "--recipe", str(recipe))
    r = run["summary"]["steps"][0]["result"]
    assert r["count_keys_as_strata"] == ["household_size"]
    assert r["strata"] == step.get("strata", []) + ["household_size"]
    original = _read(demo_path)
    written = _read(tmp_path / "o" / "protected.csv")
    assert not written["household_size"].isna().any()
    completed = household_completion(original, written, KEYS, HH)[0]
    if "combs" in step:  # every pair of keys, the count key's pairs too
        for pair in itertools.combinations(KEYS, 2):
            assert wildcard_frequencies(completed, list(pair)).min() >= 3, pair
    elif "strata" in step:  # within each region; household_size's linked column untouched
        assert wildcard_frequencies(completed, KEYS, strata=["region"]).min() >= 3
        assert not written["relationship"].isna().any()
        assert written["age_band"].isna().sum() > 0
        assert "household_size" not in r["linked"]
    else:
        assert _min_frequency(completed, KEYS) >= 3


def _violators(frame: pd.DataFrame, keys: list[str], k: int) -> int:
    """Records matched by fewer than k records, a blank matching anything (brute force)."""
    codes = np.column_stack([pd.factorize(frame[c].astype(str).where(frame[c].notna()))[0]
                             for c in keys])
    n = 0
    for start in range(0, len(codes), 500):
        match = ((codes[start:start + 500, None, :] == codes[None, :, :])
                 | (codes[start:start + 500, None, :] < 0) | (codes[None, :, :] < 0)).all(2)
        n += int((match.sum(axis=1) < k).sum())
    return n


def _counts(frame: pd.DataFrame) -> pd.Series:
    """Each record's household's number of records (what the released ids give)."""
    return frame.groupby(HH)[HH].transform("size")


def _within_counts(original: pd.DataFrame, k: int = 3) -> pd.DataFrame:
    """The oracle: the library's suppression of the other keys within the exact counts."""
    data = original.assign(n_records=_counts(original))
    return local_suppression(data, KEYS[:-1], k, strata=["n_records"]).frame


@pytest.mark.parametrize("how", ["option", "recipe"])
def test_a_count_key_recoded_into_bands_is_suppressed_within_the_exact_counts(
        demo_path, tmp_path, how):
    """The intruder holding the ids counts each household's records exactly, whatever band
    the file shows: the step runs within the exact counts, not the bands, and the file
    with the counts read back is 3-anonymous."""
    if how == "option":
        args = ["--recode", "household_size:5+6+7+8=5+", "--suppress-k", "3",
                "--household-keys", "auto"]
    else:
        args = ["--recipe", str(_recipe(
            tmp_path, {"step": "recode", "column": "household_size",
                       "mapping": {"5": "5+", "6": "5+", "7": "5+", "8": "5+"}},
            {"step": "suppress", "k": 3}))]
    run = _protect(demo_path, tmp_path / "o", "--household", HH, *args)
    s = run["summary"]
    r = s["steps"][1]["result"]
    assert r["count_keys_as_strata"] == ["household_size"]
    assert r["strata"] == ["household_size"] and "household_size" not in r["keys"]
    assert NOTE.replace("step 1", "step 2") in s["warnings"]
    # the recode protects nothing: warned once
    warned = [w for w in s["warnings"] if "step 1 (recode) recodes household_size" in w]
    assert len(warned) == 1 and "the risk after reads the exact count" in warned[0]
    original = _read(demo_path)
    written = _read(tmp_path / "o" / "protected.csv")
    # the released column is the band of each household's record count, never blank
    band = _counts(written).map(lambda c: str(c) if c < 5 else "5+")
    assert (written["household_size"].astype(str) == band).all()
    # the step's blanks are those of the suppression within the exact counts (bands would
    # pool households of 5 to 8 records and blank fewer values)
    pd.testing.assert_frame_equal(written[KEYS[:-1]].isna(),
                                  _within_counts(original)[KEYS[:-1]].isna())
    # the file as the intruder reads it (exact counts) is 3-anonymous, recounted by brute force
    exact = written.assign(household_size=_counts(written))
    assert _violators(exact, KEYS, 3) == 0
    after = s["risk"]["after"]
    assert after["k_anonymity_violations"] == after["k_anonymity_violations_suppression"] == 0
    assert s["risk"]["household_completion"]["keys"]["household_size"]["counted"] == int(
        (written["household_size"].astype(str) != _counts(written).astype(str)).sum()) > 0
    # the temporary stratum column is nowhere in the outputs
    log = pd.read_csv(tmp_path / "o" / "log.csv")
    assert set(log["variable"].dropna()) <= set(KEYS)
    assert list(written.columns) == list(original.columns)
    for name in ("log.csv", "summary.json", "report.html", "protected.csv"):
        assert "_household_records" not in (tmp_path / "o" / name).read_text(), name


def test_a_missing_count_value_is_its_count_before_and_after(demo_path, tmp_path):
    """One household_size missing in the input: still a count key (audit F2), read as its
    household's count before and after, and the step runs within the exact counts (no key,
    no note that it stays one)."""
    from sdcbayes import Microdata
    from sdcbayes.risk.assess import assess_closed_form

    original = _read(demo_path)
    assert not original[KEYS].isna().to_numpy().any()
    original.loc[0, "household_size"] = np.nan
    path = tmp_path / "na1.csv"
    original.to_csv(path, index=False)
    run = _protect(path, tmp_path / "o", "--household", HH, "--suppress-k", "3")
    s = run["summary"]
    r = s["steps"][0]["result"]
    assert r["count_keys_as_strata"] == ["household_size"]
    assert "household_size" not in r["suppressions"]
    assert NOTE in s["warnings"] and not any("missing value" in w for w in s["warnings"])
    written = _read(tmp_path / "o" / "protected.csv")
    assert written["household_size"].isna().tolist() == original["household_size"].isna(
        ).tolist()  # the file written keeps the input's missing value, blanks no other
    pd.testing.assert_frame_equal(written[KEYS[:-1]].isna(),
                                  _within_counts(original)[KEYS[:-1]].isna())
    exact = written.assign(household_size=_counts(written))
    assert _violators(exact, KEYS, 3) == 0
    assert s["risk"]["after"]["k_anonymity_violations"] == 0
    assert s["risk"]["household_completion"]["keys"]["household_size"]["counted"] == 1
    # before: the input with the missing value read as its count
    md = Microdata(original.assign(household_size=_counts(original)), KEYS, weight="weight",
                   household=HH)
    raw = Microdata(original, KEYS, weight="weight", household=HH)
    ref, on_raw = assess_closed_form(md).summary, assess_closed_form(raw).summary
    b = s["risk"]["before"]
    assert b["n_missing_key_records"] == 0  # the input has one
    for key in ("expected_reidentifications", "household_expected_reidentifications",
                "n_sample_uniques"):
        assert b[key] == pytest.approx(ref[key], rel=1e-12), key
    # (the missing value read as a wildcard would give another risk before)
    assert on_raw["expected_reidentifications"] != pytest.approx(
        ref["expected_reidentifications"], rel=1e-9)


def test_suppress_risk_default_key_skips_the_count_key(demo_path, tmp_path):
    # household_size (8 levels) is the default key (most levels) of these two
    rc, _, err = main_captured(
        "protect", str(demo_path), "--keys", "sex,household_size", "--weight", "weight",
        "--household", HH, "--suppress-risk", "0.05", "--seed", "1", "--out",
        str(tmp_path / "o"))
    assert rc == 0, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["steps"][0]["parameters"]["key"] == s["steps"][0]["result"]["key"] == "sex"
    assert any(w.startswith("step 1 (suppress_risk): household_size is each household's "
                            "number of records") and "sex blanked instead" in w
               for w in s["warnings"])
    rc, _, err = main_captured(
        "protect", str(demo_path), "--keys", "sex,household_size", "--weight", "weight",
        "--suppress-risk", "0.05", "--seed", "1", "--out", str(tmp_path / "p"))
    assert rc == 0, err
    s = json.loads((tmp_path / "p" / "summary.json").read_text())
    assert s["steps"][0]["result"]["key"] == "household_size"  # without --household


@pytest.mark.parametrize("args, fragments", [
    (["--suppress-risk", "0.1", "--suppress-risk-key", "household_size"],
     ["--suppress-risk-key 'household_size' is each household's number of records",
      "name another key"]),
    (["--recipe", "RECIPE"],
     ["step 1 (suppress): its only key household_size is each household's number of "
      "records", "add other keys to the step's \"keys\""]),
    (["--recipe", "RISK"], ["step 1 (suppress_risk): key 'household_size'"]),
])
def test_refusals_before_any_work(capsys, tmp_path, demo_path, protect_no_work, args,
                                  fragments):
    steps = {"RECIPE": {"step": "suppress", "k": 3, "keys": ["household_size"]},
             "RISK": {"step": "suppress_risk", "threshold": 0.1, "key": "household_size"}}
    args = [str(_recipe(tmp_path, steps[a])) if a in steps else a for a in args]
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(demo_path), "--keys", ",".join(KEYS),
                          "--weight", "weight", "--household", HH, *args, "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()
