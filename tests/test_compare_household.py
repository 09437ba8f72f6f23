"""``sdcbayes compare --household``: every model's household risk, as ``assess --household``.

With households every row of the comparison, the closed form's included, carries
sdcMicro's household (hierarchical) expected re-identifications with their interval and
its kind (risk/compare.py, ``_household_columns``): comparison.csv's ``household_er``,
``household_er_lo``, ``household_er_hi``, ``household_interval_kind`` and
``household_expected_reidentified_households`` (with ``_lo``, ``_hi``), summary.json's
comparison rows under assess's key names, a column of report.html's risk table and the
terminal table.
They are checked against separate ``sdcbayes assess --household`` runs of each model
with the same data, settings and seed; without households there are none; with
one-record households the household ER is the ER.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from clitools import main_captured, run_in_process

KEYS = "age_group,sex,education,household_size"
# equal explicit settings for both commands (their defaults differ); MAP for negbin
RUN = ("--draws", "20", "--chains", "2", "--tune", "20", "--seed", "3")
MODELS = "nb=negbin,lc=latent-class:classes=5,closed=closed-form"
HOUSEHOLD_KEYS = ("household_expected_reidentifications",
                  "household_expected_reidentifications_interval", "household_interval_kind")


@pytest.fixture(scope="module")
def sample():
    """A 5% stratified sample (461 records, 434 households, 25 of them of 2-3 records)."""
    from sdcbayes.datasets.census import simulate_population
    from sdcbayes.datasets.sampling import draw_sample

    pop = simulate_population(4000, seed=3)
    return draw_sample(pop, keys=tuple(KEYS.split(",")), fraction=0.05,
                       design="stratified", seed=5)


@pytest.fixture(scope="module")
def small_csv(sample, tmp_path_factory):
    path = tmp_path_factory.mktemp("hh") / "small.csv"
    sample.sample.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def compared(small_csv, tmp_path_factory):
    """One ``compare --household`` run of a negbin (MAP), a latent-class and the closed form."""
    out = tmp_path_factory.mktemp("hhc") / "out"
    rc, stdout, stderr = main_captured(
        "compare", str(small_csv), "--keys", KEYS, "--weight", "weight",
        "--household", "household_id", "--models", MODELS, "--fit-method", "map", *RUN,
        "--out", str(out))
    assert rc == 0, stderr
    return out, stdout


def _assess(capsys, small_csv, tmp_path, *model_args):
    out = tmp_path / "a"
    proc = run_in_process(capsys, "assess", str(small_csv), "--keys", KEYS, "--weight",
                          "weight", "--household", "household_id", *model_args,
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "summary.json").read_text())


def _rows(out):
    return {r["name"]: r for r in json.loads((out / "summary.json").read_text())["comparison"]}


@pytest.mark.parametrize("name, model_args", [
    ("nb", ("--model", "negbin", "--fit-method", "map", *RUN, "--no-posterior")),
    ("lc", ("--model", "latent-class", "--classes", "5", *RUN, "--no-posterior")),
])
def test_posterior_rows_are_assess_household(capsys, compared, small_csv, tmp_path, name,
                                             model_args):
    """Same model, data, settings and seed: assess's household numbers, bit for bit."""
    out, _ = compared
    a = _assess(capsys, small_csv, tmp_path, *model_args)
    row = _rows(out)[name]
    assert a["n_households"] == 434
    for key in HOUSEHOLD_KEYS:
        assert row[key] == a[key], key
    # the same rows' tau1 and ER agree too: the comparison fitted the model assess fitted
    assert row["er"] == a["expected_reidentifications"]
    # assess's re-identified households (each household once) and their interval too
    for key in ("household_expected_reidentified_households",
                "household_expected_reidentified_households_interval"):
        assert row[key] == a[key], key
    # the household risk of households of several records exceeds the record risk sum
    assert row["household_expected_reidentifications"] > row["er"]


def test_closed_form_row_is_assess_household(capsys, compared, small_csv, tmp_path):
    """assess --model closed-form's estimate and re-identified households; the interval
    is the plug-in's predictive, of the row's kind (assess gives the closed form none)."""
    out, _ = compared
    a = _assess(capsys, small_csv, tmp_path, "--model", "closed-form")
    row = _rows(out)["closed"]
    for key in ("household_expected_reidentifications",
                "household_expected_reidentified_households"):
        assert row[key] == pytest.approx(a[key], rel=1e-12), key
    lo, hi = row["household_expected_reidentifications_interval"]
    assert lo < row["household_expected_reidentifications"] < hi
    assert row["household_interval_kind"] == row["interval_kind"]
    assert "plug-in" in row["household_interval_kind"]
    # one re-identified record per household at most: fewer households than records
    assert (row["household_expected_reidentified_households"]
            < row["household_expected_reidentifications"])


def test_cli_writes_the_columns_report_and_table(compared, check_html):
    out, stdout = compared
    cmp_ = pd.read_csv(out / "comparison.csv").set_index("name")
    cols = ["household_er", "household_er_lo", "household_er_hi", "household_interval_kind",
            "household_expected_reidentified_households",
            "household_expected_reidentified_households_lo",
            "household_expected_reidentified_households_hi"]
    # after the ER's interval kind, in this order
    i = list(cmp_.columns).index("interval_kind")
    assert list(cmp_.columns)[i + 1: i + 8] == cols
    rows = _rows(out)
    for name, r in rows.items():
        lo, hi = r["household_expected_reidentifications_interval"]
        assert cmp_.loc[name, "household_er"] == pytest.approx(
            r["household_expected_reidentifications"], rel=1e-12)
        assert [cmp_.loc[name, "household_er_lo"], cmp_.loc[name, "household_er_hi"]] \
            == pytest.approx([lo, hi], rel=1e-12)
        assert cmp_.loc[name, "household_interval_kind"] == r["household_interval_kind"]
        assert "household_er" not in r and "household_er_lo" not in r  # assess's names only
    assert not np.isnan(cmp_.loc[:, "household_expected_reidentified_households"]).any()
    html = (out / "report.html").read_text()
    check_html(html)
    assert "<th>household re-identifications</th>" in html
    assert "sdcbayes assess --household" in html
    h = rows["lc"]
    lo, hi = h["household_expected_reidentifications_interval"]
    assert (f"household ER {h['household_expected_reidentifications']:.1f} "
            f"[{lo:.1f}, {hi:.1f}]") in stdout


def _md(sample, household=None):
    from sdcbayes.microdata import Microdata

    return Microdata(sample.sample, keys=KEYS.split(","), weight=sample.weight,
                     household=household)


LIB_SPECS = [{"name": "lc", "model": "latent-class", "options": {"n_classes": 5}},
             {"name": "closed", "model": "closed-form"}]
LIB_RUN = {"draws": 20, "chains": 2, "tune": 20, "random_seed": 3, "plug_in_draws": 50}


def test_without_households_nothing_is_added(sample):
    from sdcbayes.report import comparison_report
    from sdcbayes.risk.compare import compare_models

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare_models(_md(sample), LIB_SPECS, **LIB_RUN)
    assert not [c for c in res.table.columns if "household" in c]
    for row in res.summary()["comparison"]:
        assert not [k for k in row if "household" in k]
    assert "household re-identifications" not in comparison_report(res, res.summary())


def test_one_record_households_give_the_er(sample):
    """Households of one record: the household risk is the record's, so household ER = ER
    (mean and, drawn from the same populations, interval) for every model."""
    from sdcbayes.risk.compare import compare_models

    assert sample.sample["person_id"].is_unique
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare_models(_md(sample, household="person_id"), LIB_SPECS, **LIB_RUN)
    t = res.table.set_index("name")
    for col in ("er", "er_lo", "er_hi"):
        np.testing.assert_allclose(t[f"household_{col}"], t[col], rtol=1e-12, err_msg=col)
    assert t.loc["closed", "household_expected_reidentified_households"] == pytest.approx(
        t.loc["closed", "er"], rel=1e-12)


def test_demo_has_its_households_and_their_truth(capsys, tmp_path):
    """The demo takes its own household column, as assess does, and its true household
    expected re-identifications sit beside the estimate."""
    from sdcbayes.datasets import load_demo

    out = tmp_path / "demo"
    proc = run_in_process(capsys, "compare", "--models", "closed=closed-form",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    demo = load_demo()
    cmp_ = pd.read_csv(out / "comparison.csv")
    assert cmp_["household_er_true"].iloc[0] == pytest.approx(
        demo.truth.household_expected_reidentifications)
    # and each household once (the truth compare and assess show as "(true ...)")
    assert cmp_["household_expected_reidentified_households_true"].iloc[0] == pytest.approx(
        demo.truth.household_expected_reidentified_households)
    s = json.loads((out / "summary.json").read_text())
    assert s["truth"]["household_expected_reidentifications"] == pytest.approx(
        demo.truth.household_expected_reidentifications)
    assert s["truth"]["household_expected_reidentified_households"] == pytest.approx(
        demo.truth.household_expected_reidentified_households)
    a_out = tmp_path / "a"
    proc = run_in_process(capsys, "assess", "--model", "closed-form", "--out", str(a_out),
                          "-q")
    assert proc.returncode == 0, proc.stderr
    a = json.loads((a_out / "summary.json").read_text())
    assert s["comparison"][0]["household_expected_reidentifications"] == pytest.approx(
        a["household_expected_reidentifications"], rel=1e-12)
