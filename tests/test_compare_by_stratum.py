"""`sdcbayes compare --strata`: each model's per-stratum table, as `sdcbayes assess` has it.

Before, compare entered the stratum into the models but wrote no per-stratum numbers
(README: "compare writes no per-stratum table"); now by_stratum.csv (long form: one row
per model and stratum), summary.json's ``by_stratum`` (per model, assess's list) and a
"Risk by stratum" section of report.html. Without a stratum column nothing changes.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from clitools import run_in_process

KEYS = "age_group,sex,education,household_size"
# equal explicit settings for both commands (compare's and assess's defaults differ:
# README, compare)
LC_RUN = ("--draws", "20", "--chains", "2", "--tune", "20", "--seed", "3")
COLUMNS = ["name", "stratum", "n_records", "n_sample_uniques", "expected_reidentifications"]


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    """A 5% stratified sample (461 records, 12 regions) with unequal weights."""
    from sdcbayes.datasets.census import simulate_population
    from sdcbayes.datasets.sampling import draw_sample

    pop = simulate_population(4000, seed=3)
    s = draw_sample(pop, keys=("age_group", "sex", "education", "household_size"),
                    fraction=0.05, design="stratified", seed=5)
    path = tmp_path_factory.mktemp("cbs") / "small.csv"
    s.sample.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def compared(small_csv, tmp_path_factory):
    """compare (closed form and latent-class) and assess of each, same settings and seed."""
    from sdcbayes.cli import main  # capsys is function-scoped: main called directly

    base = tmp_path_factory.mktemp("cbs_runs")
    common = (str(small_csv), "--keys", KEYS, "--weight", "weight", "--strata", "region")
    runs = {
        "c": ("compare", *common, *LC_RUN, "--models", "closed=closed-form,lc=latent-class"),
        "closed": ("assess", *common, "--model", "closed-form"),
        "lc": ("assess", *common, *LC_RUN, "--model", "latent-class", "--no-posterior"),
    }
    for name, args in runs.items():
        rc = main([*args, "--out", str(base / name), "-q"])
        assert rc == 0, name
    return base


def _summary(folder):
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def test_by_stratum_equals_assess_per_model(compared):
    """Closed form and latent-class: the per-stratum list is the one assess writes."""
    s = _summary(compared / "c")
    assert list(s["by_stratum"]) == ["closed", "lc"]
    for name in ("closed", "lc"):
        a = _summary(compared / name)
        assert len(a["by_stratum"]) == 12
        assert s["by_stratum"][name] == a["by_stratum"]


def test_strata_sum_to_each_models_er(compared):
    s = _summary(compared / "c")
    table = pd.read_csv(compared / "c" / "comparison.csv").set_index("name")
    long = pd.read_csv(compared / "c" / "by_stratum.csv")
    assert list(long.columns) == COLUMNS
    assert list(long["name"].unique()) == ["closed", "lc"]
    for name, er in table["er"].items():
        rows = long[long["name"] == name]
        assert len(rows) == 12
        assert rows["expected_reidentifications"].sum() == pytest.approx(er, rel=1e-12)
        assert rows["n_records"].sum() == 461
        assert sum(r["expected_reidentifications"] for r in s["by_stratum"][name]) \
            == pytest.approx(er, rel=1e-12)
    # the CSV is summary.json's lists, long
    for name, rows in s["by_stratum"].items():
        got = long[long["name"] == name].drop(columns="name").to_dict(orient="records")
        assert [r["stratum"] for r in got] == [r["stratum"] for r in rows]
        for g, r in zip(got, rows, strict=True):
            assert (g["n_records"], g["n_sample_uniques"]) == (r["n_records"],
                                                               r["n_sample_uniques"])
            assert g["expected_reidentifications"] == pytest.approx(
                r["expected_reidentifications"], rel=1e-12)
    # records and sample uniques are the file's, the same under every model
    by_model = {n: g.drop(columns=["name", "expected_reidentifications"])
                .reset_index(drop=True) for n, g in long.groupby("name", sort=False)}
    pd.testing.assert_frame_equal(by_model["closed"], by_model["lc"])


def test_listed_as_output_and_in_report(compared):
    s = _summary(compared / "c")
    assert "by_stratum.csv" in s["output_files"]
    html = (compared / "c" / "report.html").read_text(encoding="utf-8")
    assert "Risk by stratum" in html
    assert "R01" in html


def test_without_strata_nothing_changes_and_rerun_removes_the_file(compared, small_csv,
                                                                    tmp_path):
    """No stratum column: no file, no field, no section; a rerun into a folder that held
    by_stratum.csv removes it (output_files lists it, see _cliutils.previous_outputs)."""
    from sdcbayes.cli import main

    out = tmp_path / "rerun"
    args = [str(small_csv), "--keys", KEYS, "--weight", "weight", "--models",
            "closed=closed-form", "--out", str(out), "-q"]
    assert main(["compare", *args, "--strata", "region"]) == 0
    assert (out / "by_stratum.csv").is_file()
    assert main(["compare", *args]) == 0
    s = _summary(out)
    assert not (out / "by_stratum.csv").exists()
    assert "by_stratum" not in s
    assert s["output_files"] == ["summary.json", "comparison.csv", "decisions.csv",
                                 "frontiers.csv", "report.html"]
    assert "Risk by stratum" not in (out / "report.html").read_text(encoding="utf-8")


def test_console_lists_the_file(capsys, small_csv, tmp_path):
    proc = run_in_process(capsys, "compare", str(small_csv), "--keys", KEYS, "--weight",
                          "weight", "--strata", "region", "--models", "closed=closed-form",
                          "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "by_stratum.csv" in proc.stdout


def test_report_caps_strata_by_highest_risk_under_any_model():
    """60 strata: the 50 with the most expected re-identifications under any model, in
    that order, and a note on the 10 left out."""
    from sdcbayes.report import MAX_STRATA_SHOWN, _comparison_stratum_section

    n = MAX_STRATA_SHOWN + 10
    # model a ranks strata s00.. low to high, model b high to low except s00 and s01,
    # which only model b makes risky: each must be shown, though model a ranks it last
    a = [{"stratum": f"s{i:02d}", "n_records": 10, "n_sample_uniques": 2,
          "expected_reidentifications": float(i)} for i in range(n)]
    b = [dict(r, expected_reidentifications=1000.0 if i < 2 else 0.0)
         for i, r in enumerate(a)]
    html = _comparison_stratum_section({"a": a, "b": b})
    shown = [f"s{i:02d}" for i in range(n) if f">s{i:02d}<" in html]
    assert len(shown) == MAX_STRATA_SHOWN
    assert {"s00", "s01"} <= set(shown)
    # the rest by model a's risk: s59 down to s12; s02 .. s11 left out
    assert set(shown) == {"s00", "s01", *(f"s{i:02d}" for i in range(12, n))}
    assert "10 more are not" in html
    assert "by_stratum.csv" in html
    assert html.index(">s00<") < html.index(">s59<")  # b's 1000 ranks first
    # all fit: every stratum in its own order, no note
    few = _comparison_stratum_section({"a": a[:5], "b": b[:5]})
    assert [few.index(f">s{i:02d}<") for i in range(5)] == sorted(
        few.index(f">s{i:02d}<") for i in range(5))
    assert "more are not" not in few
