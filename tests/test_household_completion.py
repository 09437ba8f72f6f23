"""The released file as an intruder holding its household ids reads it.

Once the household id is released (``protect --household`` releases it unchanged), a
household-level key blanked in one member is read off a household mate who shows it, and a
key equal to each household's number of records (household size in a sample of whole
households) is counted off the file exactly, whatever the file shows: a blank in one
member or in all, a band after a recode, a PRAMmed value, a value missing in the input.
:func:`~sdcbayes.protection.suppression.household_completion` fills those values, and
``protect --household`` scores the completed file (and the input as the ids complete it,
before), closed form and latent-class alike, while the file it writes keeps them as
released. Checked here on small frames built by hand (which values are filled, with which
value, in which dtype, and which are not) and on the demo sample
(greedy k = 3 on the five other keys, household_size a key of the risk that follows
country_of_birth's blanks as a linked column: the risk after is ``assess_closed_form`` of
the written file with household_size shown again, an oracle built without the function).
A suppression step itself never blanks household_size under ``--household``
(tests/test_household_count_strata.py): here its blanks come from the link.
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from clitools import main_captured

from sdcbayes.exceptions import InputError
from sdcbayes.protection.suppression import (
    household_completion,
    household_count_keys,
    household_level_keys,
)

NAN = np.nan


def _frames():
    """Households 1-4; region household-level, size the record count, sex personal."""
    original = pd.DataFrame({
        "hid": [1, 1, 1, 2, 2, 3, 4, 4],
        "region": ["n", "n", "n", "s", "s", "e", "w", "w"],
        "size": [3, 3, 3, 2, 2, 1, 2, 2],
        "sex": list("fmfmfmfm"),
    })
    return original


def _copies(*frames):
    return [f.copy(deep=True) for f in frames]


def _check_unchanged(frames, copies):
    for f, c in zip(frames, copies, strict=True):
        pd.testing.assert_frame_equal(f, c)


def test_a_blank_a_mate_shows_is_filled_and_disagreeing_mates_fill_nothing():
    original = _frames()
    protected = original.copy()
    protected.loc[[0, 3], "region"] = None  # household 1 and 2: mates show n and s
    protected.loc[5, "region"] = None       # household 3: alone, no mate
    protected.loc[7, "sex"] = None          # not household-level: never filled
    frames = (original, protected)
    copies = _copies(*frames)
    done, counts = household_completion(original, protected, ["region", "sex"], "hid")
    assert done.loc[0, "region"] == "n" and done.loc[3, "region"] == "s"
    assert pd.isna(done.loc[5, "region"]) and pd.isna(done.loc[7, "sex"])
    assert counts == {"region": {"from_mates": 2, "counted": 0}}
    pd.testing.assert_frame_equal(done.drop(columns="region"), protected.drop(columns="region"))
    assert done["region"].dtype == protected["region"].dtype
    _check_unchanged(frames, copies)
    # household 1's shown mates disagree (PRAM of a mate, say): nothing filled there
    pram = protected.copy()
    pram.loc[2, "region"] = "w"
    done, counts = household_completion(original, pram, ["region", "sex"], "hid")
    assert pd.isna(done.loc[0, "region"]) and done.loc[3, "region"] == "s"
    assert counts == {"region": {"from_mates": 1, "counted": 0}}


def test_a_recoded_key_is_filled_with_the_value_the_mate_shows():
    original = _frames()
    protected = original.assign(region=original["region"].map(
        {"n": "north", "s": "south", "e": "east", "w": "west"}))
    protected.loc[[1, 6], "region"] = None
    done, counts = household_completion(original, protected, ["region"], "hid")
    assert done.loc[1, "region"] == "north" and done.loc[6, "region"] == "west"
    assert counts == {"region": {"from_mates": 2, "counted": 0}}


def test_a_key_equal_to_the_household_count_is_counted():
    original = _frames()
    protected = original.astype({"size": float})
    protected.loc[[0, 1, 2], "size"] = NAN  # household 1 blanked in every member
    protected.loc[5, "size"] = NAN          # household 3, alone
    protected.loc[6, "size"] = NAN          # household 4: its mate shows 2
    frames = (original, protected)
    copies = _copies(*frames)
    assert household_count_keys(original, ["region", "size", "sex"], "hid") == ["size"]
    done, counts = household_completion(original, protected, ["region", "size", "sex"], "hid")
    # the count of the records with each id, the mate's blank too; written as the input
    # writes it (integers)
    assert done["size"].tolist() == [3, 3, 3, 2, 2, 1, 2, 2]
    assert done["size"].dtype == original["size"].dtype
    assert counts == {"size": {"from_mates": 0, "counted": 5}}
    _check_unchanged(frames, copies)


def test_a_count_key_recoded_into_bands_is_read_as_the_exact_count():
    """The intruder holding the ids counts each household's records: a band ("2+"), a
    blank, a PRAMmed value all read as the exact count, written as the input writes it."""
    original = pd.DataFrame({"hid": [1, 1, 1, 2, 2, 3, 4, 4, 5, 5, 5],
                             "size": [3, 3, 3, 2, 2, 1, 2, 2, 3, 3, 3]})
    bands = {1: "1", 2: "2+", 3: "2+"}
    protected = original.assign(size=original["size"].map(bands))
    protected.loc[[0, 1, 2, 3, 4, 5, 9], "size"] = None  # households 1-3 in every member
    assert household_count_keys(original, ["size"], "hid") == ["size"]
    done, counts = household_completion(original, protected, ["size"], "hid")
    pd.testing.assert_series_equal(done["size"], original["size"])
    # every record but none shows its count: bands and blanks alike
    assert counts == {"size": {"from_mates": 0, "counted": 11}}
    pd.testing.assert_frame_equal(done.drop(columns="size"), protected.drop(columns="size"))
    # PRAM of one member (household 5 shows 1 for 3 records): read as the count all the same
    pram = original.copy()
    pram.loc[10, "size"] = 1
    done, counts = household_completion(original, pram, ["size"], "hid")
    pd.testing.assert_series_equal(done["size"], original["size"])
    assert counts == {"size": {"from_mates": 0, "counted": 1}}


def test_one_missing_value_switches_nothing_off():
    """An item-missing member is no second value of a household-level key, nor a value
    that differs from the count (audit F2): the other households' blanks are still read,
    and the missing count is the household's count."""
    original = _frames()
    original.loc[1, "region"] = None  # household 1: one member's region not known
    original.loc[6, "size"] = NAN     # household 4: one member's size not known
    protected = original.copy()
    protected.loc[[0, 3], "region"] = None      # household 1's mate shows n, 2's shows s
    protected.loc[[0, 1, 2, 5], "size"] = NAN   # household 1 in every member, 3 alone
    keys = ["region", "size", "sex"]
    assert household_level_keys(original, keys, "hid") == ["region", "size"]
    assert household_count_keys(original, keys, "hid") == ["size"]
    done, counts = household_completion(original, protected, keys, "hid")
    assert done.loc[0, "region"] == "n" and done.loc[3, "region"] == "s"
    assert pd.isna(done.loc[1, "region"])  # not known, and no count
    assert done["size"].tolist() == [3.0, 3.0, 3.0, 2.0, 2.0, 1.0, 2.0, 2.0]
    assert counts == {"region": {"from_mates": 2, "counted": 0},
                      "size": {"from_mates": 0, "counted": 5}}


def test_a_value_missing_in_the_input_is_the_count_of_a_count_key_only():
    original = pd.DataFrame({"hid": [1, 1, 2, 2, 3],
                             "size": [2.0, 2.0, NAN, NAN, 1.0],  # household 2: not known
                             "region": ["a", "a", None, None, "b"]})
    protected = original.copy()
    protected.loc[0, "size"] = NAN
    protected.loc[4, "region"] = None
    assert household_count_keys(original, ["size", "region"], "hid") == ["size"]
    done, counts = household_completion(original, protected, ["size", "region"], "hid")
    # household 2's two records are counted too: the input's type (float)
    assert done["size"].tolist() == [2.0, 2.0, 2.0, 2.0, 1.0]
    assert done["size"].dtype == np.float64
    assert done["region"].isna().tolist() == [False, False, True, True, True]  # never filled
    assert counts == {"size": {"from_mates": 0, "counted": 3}}
    # the input read as the ids complete it (protect's "before"): only the missing counts
    done, counts = household_completion(original, original, ["size", "region"], "hid")
    assert done["size"].tolist() == [2.0, 2.0, 2.0, 2.0, 1.0]
    assert counts == {"size": {"from_mates": 0, "counted": 2}}
    pd.testing.assert_frame_equal(done.drop(columns="size"), original.drop(columns="size"))
    # a count no record of the input shows, as text: the digits
    text = pd.DataFrame({"hid": [1, 1, 2], "size": ["2", "2", None]})
    done, counts = household_completion(text, text, ["size"], "hid")
    assert done["size"].tolist() == ["2", "2", "1"] and counts["size"]["counted"] == 1


@pytest.mark.parametrize("unused", [False, True], ids=["categories-kept", "category-dropped"])
def test_categorical_columns_stay_categorical(unused):
    original = _frames().astype({"size": "category", "region": "category"})
    protected = original.copy()
    protected["size"] = protected["size"].mask(protected["hid"].isin([1, 3]))
    protected["region"] = protected["region"].mask(pd.Series([True] + [False] * 7))
    if unused:  # nobody shows 3 (household 1's size) nor 1 any more
        protected["size"] = protected["size"].cat.remove_unused_categories()
    frames = (original, protected)
    copies = _copies(*frames)
    done, counts = household_completion(original, protected, ["region", "size"], "hid")
    for k in ("region", "size"):
        assert isinstance(done[k].dtype, pd.CategoricalDtype), k
    assert done["size"].astype(int).tolist() == original["size"].astype(int).tolist()
    assert done["region"].tolist() == original["region"].tolist()
    assert counts == {"region": {"from_mates": 1, "counted": 0},
                      "size": {"from_mates": 0, "counted": 4}}
    pd.testing.assert_series_equal(done["size"], original["size"])  # the input's categories
    _check_unchanged(frames, copies)


def test_text_and_nullable_integer_columns():
    original = _frames().assign(size=lambda d: d["size"].astype("Int64"))
    protected = original.copy()
    protected.loc[[0, 1, 2], "size"] = pd.NA
    protected.loc[7, "region"] = None
    done, counts = household_completion(original, protected, ["region", "size"], "hid")
    assert str(done["size"].dtype) == "Int64" and done["size"].tolist()[:3] == [3, 3, 3]
    assert done["region"].dtype == protected["region"].dtype and done.loc[7, "region"] == "w"
    assert counts == {"region": {"from_mates": 1, "counted": 0},
                      "size": {"from_mates": 0, "counted": 3}}
    # sizes written as text: counted too, a released value that is not the count as well
    text = _frames().assign(size=lambda d: d["size"].astype(str))
    shown = text.copy()
    shown.loc[[0, 1, 2, 5], "size"] = None
    done, counts = household_completion(text, shown, ["size"], "hid")
    assert done["size"].tolist() == text["size"].tolist()
    assert counts == {"size": {"from_mates": 0, "counted": 4}}
    shown.loc[3, "size"] = "3"  # household 2 has 2 records: still read as 2
    done, counts = household_completion(text, shown, ["size"], "hid")
    assert done["size"].tolist() == text["size"].tolist()
    assert counts == {"size": {"from_mates": 0, "counted": 5}}


def test_the_count_is_written_as_the_input_writes_it():
    """The input's sizes are integers, the protected file writes them as text: the
    completed column holds the input's integers (the levels a fit of the input has)."""
    original = pd.DataFrame({"hid": [1, 1, 2, 2, 3], "size": [2, 2, 2, 2, 1]})
    protected = original.assign(size=["2.0", "2.0", None, None, None])
    done, counts = household_completion(original, protected, ["size"], "hid")
    pd.testing.assert_series_equal(done["size"], original["size"])
    assert counts == {"size": {"from_mates": 0, "counted": 3}}  # "2.0" is the count


def test_nothing_blanked_nothing_filled_and_bad_input_refused():
    original = _frames()
    done, counts = household_completion(original, original, ["region", "size"], "hid")
    assert counts == {}
    pd.testing.assert_frame_equal(done, original)
    assert done is not original
    with pytest.raises(InputError, match="original has 8 records and protected 7"):
        household_completion(original, original.iloc[:7], ["region"], "hid")
    with pytest.raises(InputError, match=r"columns of protected \['region'\] not found"):
        household_completion(original, original.drop(columns="region"), ["region"], "hid")
    with pytest.raises(InputError, match="household"):
        household_completion(original, original, ["region"], "hidd")
    with pytest.raises(InputError, match="different order"):
        household_completion(original, original.iloc[::-1], ["region"], "hid")


# --------------------------------------------------------------------------- protect
KEYS_OPT = "age_group,sex,marital_status,education,country_of_birth,household_size"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """protect on the demo, --household household_id, household_size a key of the risk.

    Greedy k = 3 on the five other keys, household_size linked to country_of_birth: it is
    blanked wherever country_of_birth is (a suppression step never blanks it as a key under
    --household, as its blanks would be counted back).
    """
    from sdcbayes.datasets import load_demo

    tmp = tmp_path_factory.mktemp("completion")
    path = tmp / "demo.csv"
    load_demo().sample.to_csv(path, index=False)
    recipe = tmp / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "suppress", "k": 3, "keys": KEYS_OPT.split(",")[:-1],
         "linked": {"country_of_birth": ["household_size"]}}]}))
    rc, out, err = main_captured(
        "protect", str(path), "--keys", KEYS_OPT, "--weight", "weight", "--household",
        "household_id", "--recipe", str(recipe), "--seed", "1", "--out", str(tmp / "o"))
    assert rc == 0, err
    return {"path": path, "dir": tmp / "o", "out": out, "err": err,
            "summary": json.loads((tmp / "o" / "summary.json").read_text()),
            "report": (tmp / "o" / "report.html").read_text(encoding="utf-8")}


def _closed_form(frame):
    from sdcbayes import Microdata
    from sdcbayes.risk.assess import assess_closed_form

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return assess_closed_form(Microdata(frame, KEYS_OPT.split(","), weight="weight",
                                            household="household_id")).summary


def test_protect_scores_the_completed_demo_file(demo_run):
    from sdcbayes.cli import read_data

    original = read_data(demo_run["path"], quiet=True)
    written = read_data(demo_run["dir"] / "protected.csv", quiet=True)
    blanks = written["household_size"].isna() & original["household_size"].notna()
    assert blanks.sum() > 0  # the written file keeps the blanks
    # the oracle: every household_size is the household's count, none recoded, so with the
    # ids released the intruder has all of them back
    completed = written.assign(household_size=written["household_size"].where(
        written["household_size"].notna(), original["household_size"]))
    assert (completed["household_size"] == original.groupby("household_id")[
        "household_id"].transform("size")).all()
    s = demo_run["summary"]
    after, ref, plain = s["risk"]["after"], _closed_form(completed), _closed_form(written)
    for key in ("expected_reidentifications", "n_sample_uniques", "max_risk",
                "household_expected_reidentifications",
                "household_expected_reidentified_households"):
        assert after[key] == pytest.approx(ref[key], rel=1e-12), key
    assert after["expected_reidentifications"] > plain["expected_reidentifications"] + 1
    assert after["household_expected_reidentifications"] > \
        plain["household_expected_reidentifications"] + 1
    # k-anonymity after counted on the completed file too: household_size shown again
    # (the suppression's keys, without it, stay 3-anonymous)
    assert after["k_anonymity_violations"] > after["k_anonymity_violations_suppression"] == 0
    # the counts: every blank is counted (a count key is never read off a mate)
    c = s["risk"]["household_completion"]
    assert c["keys"] == {"household_size": {"from_mates": 0, "counted": int(blanks.sum())}}
    assert c["total"] == int(blanks.sum()) == c["from_mates"] + c["counted"]
    # the information loss stays that of the written file
    share = s["information_loss"]["per_variable"]["household_size"]["share_suppressed"]
    assert share == pytest.approx(blanks.mean(), rel=1e-12)


def test_protect_says_so_in_the_terminal_report_and_warnings(demo_run, check_html):
    check_html(demo_run["report"])
    c = demo_run["summary"]["risk"]["household_completion"]
    line = (f"risk after reads {c['total']:,} key values as the released household ids give "
            f"them away: household_size {c['counted']:,} counted (the exact number of "
            "records)")
    assert re.search("^" + re.escape(line) + "$", demo_run["out"], re.M)
    assert (f"the protected column reads those values so, {c['total']:,} here "
            f"({c['from_mates']:,} shown by a mate, {c['counted']:,} counted") in demo_run["report"]
    warned = [w for w in demo_run["summary"]["warnings"] if w.startswith("--household")]
    # the count warning alone: a count key's blanks are counted, not read off a mate
    assert len(warned) == 1
    assert "'household_size' (" in warned[0] and "the risk after reads them as the exact " \
        "count" in warned[0] and "do not release the household id" in warned[0]
    assert "understates" not in warned[0] and "--household-keys auto" not in warned[0]


def test_the_terminal_says_the_suppressions_count_is_on_the_completed_file(demo_run):
    """The k-anonymity sub-row is counted on the file the ids complete (audit F7)."""
    s = demo_run["summary"]
    b, a = s["risk"]["before"], s["risk"]["after"]
    assert s["risk"]["household_completion"]["total"] > 0
    row = re.search(r"^ +as the suppression judges it, on the file the ids complete +(\S.*)$",
                    demo_run["out"], re.M)
    assert row, repr(demo_run["out"])
    assert row.group(1) == (f"{b['k_anonymity_violations_suppression']:,} -> "
                            f"{a['k_anonymity_violations_suppression']:,}")


def test_without_household_nothing_is_completed(demo_run, tmp_path):
    rc, out, err = main_captured(
        "protect", str(demo_run["path"]), "--keys", KEYS_OPT, "--weight", "weight",
        "--recipe", str(demo_run["path"].parent / "r.json"), "--seed", "1",
        "--out", str(tmp_path / "o"))
    assert rc == 0, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert "household_completion" not in s["risk"]
    assert "household ids give them away" not in out
    from sdcbayes.cli import read_data

    written = read_data(tmp_path / "o" / "protected.csv", quiet=True)
    assert s["risk"]["after"]["expected_reidentifications"] == pytest.approx(
        _closed_form(written)["expected_reidentifications"], rel=1e-12)
