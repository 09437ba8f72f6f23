"""``protect --household COL``: household (hierarchical) risk before and after protection.

Closed form: ``risk.before``/``risk.after`` carry ``assess_closed_form``'s household keys of
``Microdata(..., household=COL)`` on the input and on the protected file as an intruder with
the released household ids completes it (a blanked household-level key read off a mate who
shows it: :func:`_completed`, built here without the library's ``household_completion``);
the written file keeps its blanks. Under
``--model latent-class`` the fit is ``assess --household``'s (its cross-validation keeps
households whole): before is its household ER, after the protected file's from
:func:`~sdcbayes.risk.released.assess_released` (posterior predictive interval as the
ER's, ``household_interval_kind``, and ``_hyper_interval`` over the parameters only) on the
completed file too; the closed form beside it. The column is released unchanged,
a step that would change it is refused before any work, and a blanked household-level key
that a household mate shows is warned about. One short fit (2 chains x 100 draws after 200
sweeps) on a small weighted file with households.
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from clitools import assert_one_line_error, main_captured, run_in_process

KEYS = ["age", "sex", "region", "occupation"]
SHORT = ["--draws", "100", "--tune", "200", "--chains", "2"]
HH_KEYS = ("n_households", "household_expected_reidentifications",
           "household_expected_reidentified_households")


def _survey(n: int = 400, seed: int = 5) -> pd.DataFrame:
    """A weighted sample of households of 1-3 records; region is the household's."""
    rng = np.random.default_rng(seed)
    hid = np.repeat(np.arange(n), rng.integers(1, 4, n))[:n] + 1000
    df = pd.DataFrame({
        "age": rng.choice(["0-19", "20-39", "40-59", "60+"], n),
        "sex": rng.choice(["f", "m"], n),
        "region": rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1]),
        "occupation": rng.choice([f"o{i}" for i in range(12)], n),
        "income": rng.gamma(2.0, 1000.0, n).round(2),
        "hid": hid,
        "w": rng.uniform(5, 60, n).round(3),
    })
    df["region"] = df.groupby("hid")["region"].transform("first")  # a household-level key
    return df


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Closed form with and without --household, latent-class with it; and a noise-only run."""
    tmp = tmp_path_factory.mktemp("protect_household")
    path = tmp / "survey.csv"
    _survey().to_csv(path, index=False)
    # region (a household-level key) blanked first, so that mates show some of its blanks
    common = [str(path), "--keys", ",".join(KEYS), "--weight", "w", "--suppress-k", "3",
              "--importance", "age=1,sex=2,occupation=3,region=4", "--noise", "income",
              "--seed", "1"]
    res = {"path": path, "tmp": tmp}
    for name, extra in (("cf", ["--household", "hid"]), ("plain", []),
                        ("lc", ["--household", "hid", "--model", "latent-class", *SHORT])):
        rc, out, err = main_captured("protect", *common, *extra, "--out", str(tmp / name))
        assert rc == 0, err
        res[name] = {"out": out, "err": err, "dir": tmp / name,
                     "summary": json.loads((tmp / name / "summary.json").read_text()),
                     "report": (tmp / name / "report.html").read_text(encoding="utf-8")}
    return res


def _md(frame, **kw):
    from sdcbayes import Microdata

    return Microdata(frame, KEYS, weight="w", **kw)


def _completed(frame: pd.DataFrame, released: pd.DataFrame) -> pd.DataFrame:
    """``released`` with each blanked region a household mate shows filled in.

    region is the survey's one household-level key; no step recodes or randomises it, so
    a mate shows the input's value. The written file keeps at least one such blank.
    """
    blank = released["region"].isna() & frame["region"].notna()
    shown = released["region"].notna().groupby(frame["hid"]).transform("any")
    assert (blank & shown).any()
    return released.assign(region=released["region"].where(~(blank & shown), frame["region"]))


def test_closed_form_is_assess_closed_form_on_the_input_and_the_protected_file(runs):
    from sdcbayes.cli import read_data
    from sdcbayes.risk.assess import assess_closed_form

    s = runs["cf"]["summary"]
    frame = read_data(runs["path"], quiet=True)
    written = read_data(runs["cf"]["dir"] / "protected.csv", quiet=True)
    protected = _completed(frame, written)  # the released ids give the mates' regions away
    for when, data in (("before", frame), ("after", protected)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = assess_closed_form(_md(data, household="hid")).summary
        for key in HH_KEYS:
            assert s["risk"][when][key] == pytest.approx(ref[key], rel=1e-12), (when, key)
    assert s["risk"]["after"]["household_expected_reidentifications"] < \
        s["risk"]["before"]["household_expected_reidentifications"]
    assert s["household"] == "hid"
    assert s["provenance"]["data"]["household"] == "hid"
    assert s["provenance"]["data"]["n_households"] == frame["hid"].nunique()
    c = s["risk"]["household_completion"]
    assert c["keys"] == {"region": {"from_mates": c["total"], "counted": 0}}
    # region is a key of the suppression: the mates' regions undo some of its k-anonymity
    assert s["risk"]["after"]["k_anonymity_violations_suppression"] > 0
    assert any("key values the released household ids give away read as given" in n
               for n in s["risk"]["notes"])
    assert c["total"] == int((written["region"].isna() & protected["region"].notna()).sum())
    # the rest is the run without --household before; after, that run scores the written
    # file (its blanks read as hidden), this one the completed file
    plain = runs["plain"]["summary"]
    assert {k: v for k, v in s["risk"]["before"].items() if k not in HH_KEYS} == \
        plain["risk"]["before"]
    assert "household_completion" not in plain["risk"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_written, on_completed = (assess_closed_form(_md(d)).summary
                                    for d in (written, protected))
    for key in ("expected_reidentifications", "n_sample_uniques", "max_risk"):
        assert plain["risk"]["after"][key] == pytest.approx(on_written[key], rel=1e-12), key
        assert s["risk"]["after"][key] == pytest.approx(on_completed[key], rel=1e-12), key
    assert s["risk"]["after"]["expected_reidentifications"] > \
        plain["risk"]["after"]["expected_reidentifications"]
    assert plain["household"] is None
    assert not any(k in plain["risk"][w] for k in HH_KEYS for w in ("before", "after"))
    for text in ("household expected re-identifications", "Household column"):
        assert text not in runs["plain"]["out"] and text not in runs["plain"]["report"]


def test_the_household_column_is_released_unchanged(runs):
    frame = pd.read_csv(runs["path"])
    for name in ("cf", "lc"):
        protected = pd.read_csv(runs[name]["dir"] / "protected.csv")
        pd.testing.assert_series_equal(protected["hid"], frame["hid"])


def test_terminal_report_and_json_show_the_household_rows(runs, capsys, tmp_path):
    from sdcbayes.report import PREDICTIVE, fmt

    cf = runs["cf"]
    b, a = cf["summary"]["risk"]["before"], cf["summary"]["risk"]["after"]
    assert re.search(r"household expected re-identifications\s+" + re.escape(
        f"{b['household_expected_reidentifications']:.2f} -> "
        f"{a['household_expected_reidentifications']:.2f}") + "$", cf["out"], re.M)
    page = cf["report"]
    for label in ("households", "household expected re-identifications (records)",
                  "expected re-identified households", "Household column: hid"):
        assert label in page, label
    assert fmt(a["household_expected_reidentified_households"]) in page
    # latent-class: the model's row, predictive as the ER's, the closed form beside it
    lc = runs["lc"]
    r = lc["summary"]["risk"]
    lb, la = r["before"], r["after"]
    line = next(x for x in lc["out"].splitlines()
                if x.strip().startswith("household expected re-identifications"))
    lo, hi = lb["household_expected_reidentifications_interval"]
    alo, ahi = la["household_expected_reidentifications_interval"]
    assert (f"{lb['household_expected_reidentifications']:.2f} [{lo:.2f}, {hi:.2f}] predictive"
            f" -> {la['household_expected_reidentifications']:.2f} [{alo:.2f}, {ahi:.2f}] "
            "predictive") in line
    cfb, cfa = r["closed_form"]["before"], r["closed_form"]["after"]
    after_line = lc["out"].split(line, 1)[1].splitlines()[1]
    assert re.search(r"closed form \(sdcMicro\)\s+" + re.escape(
        f"{cfb['household_expected_reidentifications']:.2f} -> "
        f"{cfa['household_expected_reidentifications']:.2f}"), after_line)
    page = lc["report"]
    for label in ("household expected re-identifications (latent-class), 90% interval",
                  "household expected re-identifications, closed form (sdcMicro)",
                  f"<tr><td>interval of</td><td>{PREDICTIVE}</td><td>{PREDICTIVE}</td></tr>",
                  "Household column: hid", "its interval is posterior predictive"):
        assert label in page, label
    assert page.count(f"<td>interval of</td><td>{PREDICTIVE}</td><td>{PREDICTIVE}</td>") == 2
    assert any("--household hid" in n and "posterior predictive" in n
               and "_hyper_interval over the parameters only" in n for n in r["notes"])
    # --json carries the keys
    out = tmp_path / "j"
    proc = run_in_process(capsys, "protect", str(runs["path"]), "--keys", ",".join(KEYS),
                          "--weight", "w", "--household", "hid", "--suppress-k", "3",
                          "--importance", "age=1,sex=2,occupation=3,region=4", "--noise",
                          "income", "--seed", "1", "--json", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    js = json.loads(proc.stdout)
    assert js["household"] == "hid"
    assert js["risk"]["after"]["household_expected_reidentifications"] == pytest.approx(
        a["household_expected_reidentifications"], rel=1e-12)


def _fit(frame, household="hid"):
    from sdcbayes.risk.posterior_assess import assess_posterior

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the short fit's convergence warnings
        return assess_posterior(
            _md(frame, **({"household": household} if household else {})), draws=100,
            chains=2, tune=200, random_seed=1, method="gibbs", store_profiles=True)


def test_latent_class_before_is_assess_household_and_after_assess_released(runs):
    from sdcbayes.cli import read_data
    from sdcbayes.risk.released import INTERVAL_KIND, assess_released

    frame = read_data(runs["path"], quiet=True)
    fit = _fit(frame)
    r = runs["lc"]["summary"]["risk"]
    b, a = r["before"], r["after"]
    # before: the fit assess --household makes (its cross-validation keeps households whole)
    for key in ("expected_reidentifications", "tau1", "tau2",
                "household_expected_reidentifications", "n_households"):
        assert b[key] == pytest.approx(fit.summary[key], rel=1e-12), key
    for key in ("household_expected_reidentifications_interval",
                "household_expected_reidentifications_hyper_interval"):
        assert b[key] == pytest.approx(fit.summary[key], rel=1e-12), key
    assert r["fit"]["overdispersion"] == fit.summary["overdispersion"]
    # not the fit without households (kappa is cross-validated on other parts)
    plain = _fit(frame, household=None)
    assert plain.summary["expected_reidentifications"] != pytest.approx(
        b["expected_reidentifications"], rel=1e-9)
    # after: the protected file, as the released ids complete it, scored from the same fit
    written = read_data(runs["lc"]["dir"] / "protected.csv", quiet=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct, on_written = (
            assess_released(_md(frame, household="hid"), d, fit.idata, random_seed=1).summary
            for d in (_completed(frame, written), written))
    assert a["expected_reidentifications"] > on_written["expected_reidentifications"]
    for key in ("household_expected_reidentifications", "n_households",
                "expected_reidentifications"):
        assert a[key] == pytest.approx(direct[key], rel=1e-12), key
    for key in ("household_expected_reidentifications_interval",
                "household_expected_reidentifications_hyper_interval"):
        assert a[key] == pytest.approx(direct[key], rel=1e-12), key
    # predictive as the ER's beside it; the hyper interval (over θ) inside it here
    assert b["household_interval_kind"] == a["household_interval_kind"] == INTERVAL_KIND
    for d in (b, a):
        (lo, hi), (hlo, hhi) = (d["household_expected_reidentifications_interval"],
                                d["household_expected_reidentifications_hyper_interval"])
        assert hi - lo > hhi - hlo
    assert a["household_expected_reidentifications"] < b["household_expected_reidentifications"]
    # the closed form's household numbers beside it, as --model closed-form writes them
    assert r["closed_form"]["after"] == runs["cf"]["summary"]["risk"]["after"]


def test_a_run_that_changes_no_key_keeps_the_household_er(runs):
    rc, _, err = main_captured(
        "protect", str(runs["path"]), "--keys", ",".join(KEYS), "--weight", "w",
        "--household", "hid", "--noise", "income", "--seed", "1",
        "--model", "latent-class", *SHORT, "--out", str(runs["tmp"] / "noise"))
    assert rc == 0, err
    r = json.loads((runs["tmp"] / "noise" / "summary.json").read_text())["risk"]
    for key in ("household_expected_reidentifications",
                "household_expected_reidentifications_interval",
                "household_expected_reidentifications_hyper_interval"):
        assert r["after"][key] == pytest.approx(r["before"][key], rel=1e-12), key


def test_household_mates_showing_a_blanked_key_are_warned_about(runs):
    frame = pd.read_csv(runs["path"])
    for name in ("cf", "lc"):
        rel = pd.read_csv(runs[name]["dir"] / "protected.csv")
        blank = rel["region"].isna() & frame["region"].notna()
        shown = rel["region"].notna().groupby(frame["hid"]).transform("any")
        n, m = int(blank.sum()), int((blank & shown).sum())
        assert 0 < m < n
        warned = [w for w in runs[name]["summary"]["warnings"] if w.startswith("--household")]
        assert len(warned) == 1
        assert f"'region' {m} of its {n}" in warned[0]
        assert "occupation" not in warned[0] and "age" not in warned[0]  # not household-level
        assert runs[name]["err"].count("sdcbayes: warning: --household hid:") == 1
    assert not any("household" in w for w in runs["plain"]["summary"]["warnings"])


# --------------------------------------------------------------------------- refusals
@pytest.fixture
def survey_file(tmp_path):
    path = tmp_path / "survey.csv"
    _survey().to_csv(path, index=False)
    return path


@pytest.mark.parametrize("model", ["closed-form", "latent-class"])
@pytest.mark.parametrize("args, fragments", [
    (["--household", "region", "--suppress-k", "3"],
     ["column 'region' is both a key and the household column",
      "remove it from --keys or from --household"]),
    (["--household", "w", "--suppress-k", "3"],
     ["--household and --weight name the same column 'w'"]),
    (["--household", "hidd", "--suppress-k", "3"], ["--household", "hidd", "hid"]),
    (["--household", "hid", "--recode", "hid:1000+1001=1"],
     ["step 1 (recode) changes the household column 'hid'", "leave out --household"]),
    (["--household", "hid", "--pram", "hid", "--seed", "1"],
     ["step 1 (pram) changes the household column 'hid'"]),
    (["--household", "hid", "--noise", "hid"],
     ["step 1 (noise) changes the household column 'hid'"]),
    (["--household", "hid", "--microaggregate", "hid"],
     ["step 1 (microaggregate) changes the household column 'hid'"]),
    (["--household", "hid", "--suppress-k", "3", "--linked", "age=hid"],
     ["step 1 (suppress) changes the household column 'hid'"]),
])
def test_a_bad_household_is_refused_before_any_work(capsys, tmp_path, survey_file, protect_no_work,
                                                   args, fragments, model):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(survey_file), "--keys", ",".join(KEYS),
                          "--weight", "w", "--model", model, *args, "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()


def test_a_recipe_step_on_the_household_column_is_refused(capsys, tmp_path, survey_file,
                                                           protect_no_work):
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "suppress", "keys": ["age", "sex", "hid"], "k": 2}]}))
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(survey_file), "--keys", ",".join(KEYS),
                          "--weight", "w", "--household", "hid", "--recipe", str(recipe),
                          "--out", str(out))
    assert_one_line_error(proc, "step 1 (suppress) changes the household column 'hid'")
    assert not out.exists()


@pytest.mark.parametrize("model", ["closed-form", "latent-class"])
@pytest.mark.parametrize("na", [False, True], ids=["blank", "na-values-code"])
def test_missing_household_ids_are_refused_before_any_step(capsys, tmp_path, monkeypatch,
                                                           model, na):
    from sdcbayes import cli
    from sdcbayes.commands import protect

    def boom(*args, **kwargs):
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(protect, "_run_step", boom)
    monkeypatch.setattr(cli, "_fit_posterior", boom)
    df = _survey()
    df["hid"] = df["hid"].astype(object)
    df.loc[[3, 17], "hid"] = -9 if na else None
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", ",".join(KEYS), "--weight",
                          "w", "--household", "hid", "--suppress-k", "3", "--model", model,
                          *(["--na-values", "-9"] if na else []), "--out", str(out))
    assert_one_line_error(proc, "household column 'hid' has 2 missing ids",
                          "leave out --household")
    assert "fitting" not in proc.stderr
    assert not out.exists()


def test_the_household_may_be_a_steps_stratum(capsys, tmp_path, survey_file):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(survey_file), "--keys", ",".join(KEYS),
                          "--weight", "w", "--household", "hid", "--suppress-k", "2",
                          "--strata", "hid", "--seed", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert "household_expected_reidentifications" in s["risk"]["after"]


def test_the_household_column_of_an_spss_file_is_released_as_read(capsys, tmp_path):
    df = _survey(n=200)
    path = tmp_path / "s.sav"
    pyreadstat.write_sav(df, str(path), column_labels={"hid": "Household number"})
    out = tmp_path / "o"
    # the household named by its variable label, as --weight may be
    proc = run_in_process(capsys, "protect", str(path), "--keys", ",".join(KEYS), "--weight",
                          "w", "--household", "Household number", "--suppress-k", "3",
                          "--seed", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    got, meta = pyreadstat.read_sav(str(out / "protected.sav"))
    pd.testing.assert_series_equal(got["hid"], pyreadstat.read_sav(str(path))[0]["hid"])
    assert meta.column_names_to_labels["hid"] == "Household number"
    assert json.loads((out / "summary.json").read_text())["household"] == "hid"


# --------------------------------------------------------------------------- counted sizes
def test_a_key_that_counts_the_household_records_is_warned_about():
    """Household size equal to each household's number of records: its blanks are counted
    off the file once the id is released, in one member or in all."""
    from sdcbayes.commands.protect import _household_count_warnings

    df = pd.DataFrame({"hid": [1, 1, 2, 3, 3, 3], "size": [2, 2, 1, 3, 3, 3],
                       "sex": list("fmfmfm")})
    prot = df.astype({"size": float})
    prot.loc[[0, 3, 4, 5], "size"] = np.nan  # household 3 blanked in every member
    warned = _household_count_warnings(df, prot, ["size", "sex"], "hid")
    assert len(warned) == 1 and "'size' (4 blanked)" in warned[0]
    assert "counted off the file" in warned[0] and "the risk after reads them as the exact " \
        "count" in warned[0] and "understates" not in warned[0]
    # levels written as text (a categorical of "1", "2", "3") are numbers too
    as_text = df.assign(size=df["size"].astype(str).astype("category"))
    assert _household_count_warnings(as_text, prot, ["size", "sex"], "hid") == warned
    # a household-level key that is not the count (household 2: size 2, one record), nothing
    # blanked, or no --household: no warning
    other = df.assign(size=[2, 2, 2, 3, 3, 3])
    assert _household_count_warnings(other, prot, ["size", "sex"], "hid") == []
    assert _household_count_warnings(df, df, ["size", "sex"], "hid") == []
    assert _household_count_warnings(df, prot, ["size", "sex"], None) == []
    # sizes recoded into bands: the blanks are read as the exact count all the same (the
    # intruder counts the records), whether or not a record shows a count's band
    bands = prot.assign(size=df["size"].map({1: "1", 2: "2+", 3: "2+"}).where(
        prot["size"].notna()))
    assert _household_count_warnings(df, bands, ["size", "sex"], "hid") == warned


def test_one_missing_value_leaves_the_mates_warning_on():
    """An item-missing member is no second value of a household-level key (audit F2)."""
    from sdcbayes.commands.protect import _household_mates_warnings

    df = pd.DataFrame({"hid": [1, 1, 2, 2, 3, 3], "region": ["a", None, "b", "b", "c", "c"],
                       "sex": list("fmfmfm")})
    prot = df.copy()
    prot.loc[[2, 4], "region"] = None  # their mates show b and c
    warned = _household_mates_warnings(df, prot, ["region", "sex"], "hid")
    assert len(warned) == 1 and "'region' 2 of its 2" in warned[0]
    assert "the risk after reads them as shown" in warned[0]


def test_the_demo_household_size_is_never_blanked_by_the_suppression(tmp_path):
    """Under --household the suppression runs within household sizes instead of blanking
    them (tests/test_household_count_strata.py), --household-keys auto too: nothing is
    left for the count warning, which fires for blanks that come from elsewhere (a linked
    column, tests/test_household_completion.py)."""
    from sdcbayes.datasets import demo_keys, load_demo

    path = tmp_path / "demo.csv"
    load_demo().sample.to_csv(path, index=False)
    rc, _, err = main_captured(
        "protect", str(path), "--keys", ",".join(demo_keys()), "--weight", "weight",
        "--household", "household_id", "--household-keys", "auto", "--suppress-k", "3",
        "--out", str(tmp_path / "o"), "--quiet")
    assert rc == 0, err
    assert "shown by a household mate" not in err
    assert "equals the number of records" not in err
    assert "household_size is each household's number of records" in err
    assert not pd.read_csv(tmp_path / "o" / "protected.csv")["household_size"].isna().any()


def _demo(tmp_path):
    from sdcbayes.datasets import load_demo

    path = tmp_path / "demo.csv"
    load_demo().sample.to_csv(path, index=False)
    return path


def test_pram_of_the_count_key_is_warned_about_and_read_as_the_count(tmp_path):
    """PRAM of household size protects nothing once the ids are released: warned once, and
    the risk after reads the exact counts, so with no other step it is the risk before."""
    from sdcbayes.datasets import demo_keys

    path = _demo(tmp_path)
    rc, _, err = main_captured(
        "protect", str(path), "--keys", ",".join(demo_keys()), "--weight", "weight",
        "--household", "household_id", "--pram", "household_size", "--seed", "1",
        "--out", str(tmp_path / "o"), "--quiet")
    assert rc == 0, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    warned = [w for w in s["warnings"] if "(pram) PRAMs household_size" in w]
    assert len(warned) == 1 and "the risk after reads the exact count" in warned[0]
    assert err.count("(pram) PRAMs household_size") == 1
    written = pd.read_csv(tmp_path / "o" / "protected.csv")
    frame = pd.read_csv(path)
    changed = int((written["household_size"] != frame["household_size"]).sum())
    assert changed > 0
    assert s["risk"]["household_completion"]["counted"] == changed
    b, a = s["risk"]["before"], s["risk"]["after"]
    for key in ("expected_reidentifications", "household_expected_reidentifications",
                "n_sample_uniques", "k_anonymity_violations"):
        assert a[key] == pytest.approx(b[key], rel=1e-12), key


@pytest.mark.parametrize("missing", [[], ["--missing", "category"]], ids=["none", "category"])
def test_latent_class_reads_a_recoded_count_key_as_the_exact_count(tmp_path, monkeypatch,
                                                                   missing):
    """--model latent-class with a count key recoded into bands and one of its values missing
    in the input (no --missing needed: the ids give it): the fit reads the input as the ids
    complete it, and after is assess_released of the completed file with the count key at
    its exact counts, no recode of it passed. The fit and the scored frame are caught on
    their way (one short fit)."""
    from sdcbayes.commands import protect
    from sdcbayes.risk.released import assess_released

    df = _survey()
    df["size"] = df.groupby("hid")["hid"].transform("size")
    df.loc[0, "size"] = np.nan  # one missing count
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    seen = {}
    real = protect._score_released

    def spy(md, frame, fit, **kw):
        seen.update(md=md, frame=frame, fit=fit, recodes=kw.get("recodes"))
        return real(md, frame, fit, **kw)

    monkeypatch.setattr(protect, "_score_released", spy)
    keys = [*KEYS, "size"]
    rc, _, err = main_captured(
        "protect", str(path), "--keys", ",".join(keys), "--weight", "w", "--household", "hid",
        "--recode", "size:2+3=2+", "--recode", "age:0-19+20-39=0-39", "--suppress-k", "3",
        "--model", "latent-class", *SHORT, *missing, "--seed", "1", "--out",
        str(tmp_path / "o"), "--quiet")
    assert rc == 0, err
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    written = pd.read_csv(tmp_path / "o" / "protected.csv")
    values = set(written["size"].dropna().astype(str))  # the band and 1 (written 1.0)
    assert "2+" in values and len(values) == 2
    count = df.groupby("hid")["hid"].transform("size")
    # the fit's input: the count filled in; the scored frame: the exact counts
    assert not seen["md"].frame["size"].isna().any() and seen["md"].n_missing_key_records == 0
    assert seen["frame"]["size"].astype(float).tolist() == count.astype(float).tolist()
    assert set(seen["recodes"]) == {"age"}  # the count key's recode is not passed
    # the oracle: the written file with size replaced by the counts and region read off
    # the mates, scored from the same draws with age's recode alone
    completed = written.assign(size=count.astype(float))
    blank = completed["region"].isna()
    shown = completed["region"].notna().groupby(completed["hid"]).transform("any")
    first = completed.groupby("hid")["region"].transform("first")
    completed["region"] = completed["region"].where(~(blank & shown), first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = assess_released(seen["md"], completed, seen["fit"].idata,
                              recodes={"age": seen["recodes"]["age"]},
                              random_seed=1).summary
    a = s["risk"]["after"]
    for key in ("expected_reidentifications", "household_expected_reidentifications"):
        assert a[key] == pytest.approx(ref[key], rel=1e-12), key
