"""Fixes of audit AA9 (microdata layer): missing="drop" with a stratum whose every record
is dropped, the weights of dropped records, integer key labels, and the wording of the
freqCalc rule. Reference numbers are worked out by hand from the frames below."""

from __future__ import annotations

import inspect
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import run_main

from sdcbayes.exceptions import DataError
from sdcbayes.microdata import Microdata, MicrodataWarning, kept_weights

nan = np.nan
README = (Path(__file__).parents[1] / "README.md").read_text("utf-8")


# --------------------------------------------------------------------------- F1


def _lost_frame():
    # file total 360; A: kept 10+20+30 = 60, dropped 40; B: kept 60, dropped 50;
    # C: every record (70, 80) dropped -> 150 that no kept record of C stands for
    return pd.DataFrame({
        "a": [1, 1, 2, nan, 2, 1, nan, nan],
        "b": ["x", "y", "x", "x", None, "y", "y", "x"],
        "w": [10.0, 20, 30, 40, 50, 60, 70, 80],
        "s": ["A", "A", "A", "A", "B", "B", "C", "C"],
    })


def test_drop_a_lost_stratum_keeps_its_weight_in_n_and_warns():
    f = _lost_frame()
    with pytest.warns(MicrodataWarning) as rec:
        md = Microdata(f, keys=["a", "b"], weight="w", strata="s", missing="drop")
    msg = " ".join(str(r.message) for r in rec)
    assert "stratum 'C'" in msg and "strata column 's'" in msg
    assert "2 records" in msg and "weight 150" in msg and "360" in msg
    assert "\n" not in msg
    s = md.summary()
    # before the fix: 210 (stratum C's 150 lost)
    assert s["sum_weights"] == pytest.approx(360.0, rel=1e-12)
    assert kept_weights(md).sum() == pytest.approx(360.0, rel=1e-12)
    assert float(np.sum(md.cells.Fk_hat)) == pytest.approx(360.0, rel=1e-12)
    assert s["sum_weights_input"] == 360.0 and s["sum_weights_kept"] == 120.0
    assert s["strata_without_records"] == ["C"]
    assert s["n_dropped_collapsed"] == 2 and s["sum_weights_collapsed"] == 150.0
    # per stratum 100/60 and 110/60, then 360/210 on every kept record (C collapsed
    # with A and B in proportion to their adjusted totals 100 and 110)
    g = 360 / 210
    want = [10 * 100 / 60 * g, 20 * 100 / 60 * g, 30 * 100 / 60 * g, 60 * 110 / 60 * g]
    np.testing.assert_allclose(md.weights[~md.dropped], want, rtol=1e-12)
    by = md.cells.by_stratum.groupby("stratum")["Fk_hat"].sum()
    assert by.to_dict() == pytest.approx({"A": 100 * g, "B": 110 * g}, rel=1e-12)
    # the dropped records' weights stay as given
    assert md.weights[md.dropped].tolist() == [40.0, 50.0, 70.0, 80.0]


def test_drop_without_a_lost_stratum_does_not_warn():
    f = _lost_frame().iloc[:6]
    with warnings.catch_warnings():
        warnings.simplefilter("error", MicrodataWarning)
        md = Microdata(f, keys=["a", "b"], weight="w", strata="s", missing="drop")
    s = md.summary()
    assert s["sum_weights"] == pytest.approx(210.0, rel=1e-12)
    assert "strata_without_records" not in s and "n_dropped_collapsed" not in s


def test_drop_a_lost_stratum_of_unweighted_records_has_nothing_to_collapse():
    f = _lost_frame()
    f.loc[[6, 7], "w"] = nan  # C's records stand for no one
    with warnings.catch_warnings():
        warnings.simplefilter("error", MicrodataWarning)
        md = Microdata(f, keys=["a", "b"], weight="w", strata="s", missing="drop")
    s = md.summary()
    assert s["sum_weights"] == pytest.approx(210.0, rel=1e-12)
    assert s["n_dropped_unweighted"] == 2 and "strata_without_records" not in s


def test_cli_drop_with_a_lost_stratum_keeps_the_file_total(capsys, tmp_path):
    # the audit's lost.csv: 600 records of weight 50 in strata A, B, C; every C record
    # has a missing key
    rng = np.random.default_rng(1)
    n = 600
    df = pd.DataFrame({"a": rng.integers(0, 4, n).astype(float),
                       "b": rng.integers(0, 3, n).astype(float),
                       "s": np.repeat(["A", "B", "C"], n // 3), "w": 50.0})
    df.loc[df.s == "C", "a"] = nan
    df.to_csv(tmp_path / "lost.csv", index=False)
    out = {}
    for strata in (["--strata", "s"], []):
        proc = run_main(capsys, "assess", str(tmp_path / "lost.csv"), "--keys", "a,b",
                        "--weight", "w", *strata, "--missing", "drop", "--model",
                        "closed-form", "--quiet", "--out", str(tmp_path / f"o{len(strata)}"))
        assert proc.returncode == 0, proc.stderr
        s = json.loads((tmp_path / f"o{len(strata)}" / "summary.json").read_text())
        out[bool(strata)] = (s, proc.stderr)
    s, err = out[True]
    # before the fix: 20000 (stratum C's 10000 lost) and 0.25 expected re-identifications
    assert s["provenance"]["data"]["sum_weights"] == pytest.approx(30000.0, rel=1e-12)
    assert s["provenance"]["data"]["strata_without_records"] == ["C"]
    assert "stratum 'C'" in err and "200 records" in err
    # one line in the command's words, kept in summary.json's warnings too
    lines = [x for x in err.splitlines() if "stratum 'C'" in x]
    assert len(lines) == 1 and lines[0].startswith("sdcbayes: warning: ")
    assert "missing=" not in lines[0] and "--missing" in lines[0]
    assert any("stratum 'C'" in w for w in s["warnings"])
    # compare reads the file through the same helper
    proc = run_main(capsys, "compare", str(tmp_path / "lost.csv"), "--keys", "a,b",
                    "--weight", "w", "--strata", "s", "--missing", "drop", "--models",
                    "closed=closed-form", "--quiet", "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    assert len([x for x in proc.stderr.splitlines() if "stratum 'C'" in x]) == 1
    cmp_summary = json.loads((tmp_path / "cmp" / "summary.json").read_text())
    assert any("stratum 'C'" in w for w in cmp_summary["warnings"])
    # every stratum's kept records weigh the same here: the strata change nothing now
    assert s["expected_reidentifications"] == pytest.approx(
        out[False][0]["expected_reidentifications"], rel=1e-9)
    assert "stratum 'C'" not in out[False][1]


# --------------------------------------------------------------------------- F3


def test_drop_text_weight_on_a_dropped_record_stands_for_no_one():
    d = pd.DataFrame({"a": [1, 2, nan, 1], "w": pd.Series([10, 20, "n/a", 30], dtype=object)})
    md = Microdata(d, keys="a", weight="w", missing="drop")  # raised before the fix
    s = md.summary()
    assert s["n_dropped_unweighted"] == 1
    assert s["sum_weights_input"] == 60.0 and s["sum_weights"] == pytest.approx(60.0)
    # a kept record's text weight is still refused
    d.loc[0, "w"] = "n/a"
    with pytest.raises(DataError, match="not numeric"):
        Microdata(d, keys="a", weight="w", missing="drop")


def test_drop_weight_below_one_on_a_dropped_record_counts_only_where_allowed():
    d = pd.DataFrame({"a": [1, 2, nan, 1], "w": [10.0, 20, 0.5, 30]})
    md = Microdata(d, keys="a", weight="w", missing="drop")
    s = md.summary()
    # before the fix: accepted into sum_weights_input (60.5)
    assert s["sum_weights_input"] == 60.0 and s["n_dropped_unweighted"] == 1
    md = Microdata(d, keys="a", weight="w", missing="drop", allow_weights_below_one=True)
    s = md.summary()
    assert s["sum_weights_input"] == 60.5 and "n_dropped_unweighted" not in s
    assert s["sum_weights"] == pytest.approx(60.5, rel=1e-12)


# --------------------------------------------------------------------------- F4, F6


def test_drop_sampling_fraction_scales_the_kept_weights_and_readme_says_so():
    md = Microdata(pd.DataFrame({"a": [1, nan, 2, nan]}), keys="a", sampling_fraction=0.1,
                   missing="drop")
    np.testing.assert_allclose(md.weights[~md.dropped], [20.0, 20.0], rtol=1e-12)
    assert md.summary()["sum_weights"] == pytest.approx(40.0, rel=1e-12)
    text = " ".join(README.split())
    assert "`--sampling-fraction` and `N=` are used as given" not in text
    assert "scaled up by their stratum's dropped share" in text


def test_drop_a_level_seen_only_on_dropped_records_counts_in_k_as_documented():
    d = pd.DataFrame({"a": ["p", "q", "r", "p"], "b": [1, 2, nan, 1]})
    md = Microdata(d, keys=["a", "b"], missing="drop")
    assert md.n_levels == {"a": 3, "b": 2} and md.K == 6
    assert "'r'" not in repr(md.cells.table["a"].tolist())
    doc = " ".join(Microdata.__doc__.split())
    assert "a level seen only on dropped records counts in K" in doc
    assert "a key level seen only on dropped records still counts in K" in " ".join(
        README.split())


# --------------------------------------------------------------------------- F5


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "uint32", "int64"])
def test_integer_key_labels_keep_the_input_dtype(dtype):
    d = pd.DataFrame({"a": np.array([3, 1, 3, 7], dtype=dtype), "b": [1, 1, 2, 2]})
    md = Microdata(d, keys=["a", "b"])
    assert md.cells.table["a"].dtype == np.dtype(dtype)  # int64 before the fix
    assert md.levels["a"].dtype == np.dtype(dtype)
    assert md.cells.table["a"].tolist() == [1, 3, 3, 7]
    assert md.record_table()["fk"].tolist() == [1, 1, 1, 1]


# --------------------------------------------------------------------------- F2


def test_wildcard_rule_as_sdcmicros_own_tests_and_the_docs_say_it():
    # sdcMicro tests/testthat/test_freqCalc.R, "one column and one row with NAs":
    # record 3 has every key missing and gets fk = n = 8, Fk = sum w = 394
    w = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51]
    a = np.array([2, 3, nan, 2, 3, 3, 1, 2, 3, 3, nan, 3, 3, 3, 4, 3] + [nan] * 8,
                 dtype=float).reshape(3, 8).T
    d = pd.DataFrame({"A": a[:, 0], "B": a[:, 1], "C": a[:, 2], "w": w})
    rt = Microdata(d, keys=["A", "B", "C"], weight="w").record_table()
    assert rt.fk.tolist() == [4, 4, 8, 4, 4, 4, 2, 4]
    np.testing.assert_allclose(rt.Fk_hat, [125, 184.5, 394, 125, 184.5, 184.5, 162.5, 125])
    # "with NAs": complete record 0 (2, 3, 1) counts the partial record 2 (2, 3, NA)
    a = np.array([2, 3, 2, 2, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, nan, 2, 1, 1, nan, 1],
                 dtype=float).reshape(3, 8).T
    d = pd.DataFrame({"A": a[:, 0], "B": a[:, 1], "C": a[:, 2], "w": w})
    assert Microdata(d, keys=["A", "B", "C"], weight="w").record_table().fk.tolist() == [
        3, 1, 4, 2, 2, 2, 1, 3]
    from sdcbayes import report
    from sdcbayes.commands import protect

    for text in (README, protect._risk.__doc__,
                 inspect.getsource(protect._k_anonymity_notes),
                 inspect.getsource(report._k_anonymity_note)):
        flat = " ".join(re.sub(r'"\s*\n\s*"', "", text).split())
        assert "complete records only" not in flat
        assert "would count it as violating" not in flat
        assert "A known difference from sdcMicro" not in flat
    flat = " ".join(README.split())
    assert "with two or more keys not the records whose keys are all missing" in flat
