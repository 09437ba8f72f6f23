"""report.html fixes from audit L (F3, F4, F8, F9 and the report parts of F11).

Each test fails on the report before its fix. Expected texts are built from the
result objects (their summaries, cells and provenance), not pasted numbers: the
interval level from ``summary["interval_level"]`` (F3), the strata from
``summary["by_stratum"]`` and the threshold from ``summary["risk_threshold"]`` (F4),
the benchmark caveat from the line the terminal printed (F8), the data summary from
the run's stamp (F9), key values from ``result.cells`` (F11).
"""

from __future__ import annotations

import dataclasses
import html as html_module
import json
import re
import types

import numpy as np
import pandas as pd
import pytest
from clitools import run_in_process

from sdcbayes import Microdata
from sdcbayes.report import assessment_report, comparison_report, esc, fmt
from sdcbayes.risk.assess import assess_closed_form


# --------------------------------------------------------------------------- helpers
def _rows(page: str, label: str) -> list[list[str]]:
    """The cells (inner HTML) after the first cell of every table row labelled ``label``."""
    found = re.findall(rf"<tr><td>{re.escape(label)}</td>(.*?)</tr>", page)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in found]


def _body(page: str) -> str:
    """What a reader sees: the page before the raw provenance JSON."""
    return page.split("<details>")[0]


def _frame(seed: int = 0, n: int = 300) -> pd.DataFrame:
    """Integer key codes that are labels (birth years, postcodes) and a stratum code."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "birth_year": rng.integers(1930, 2005, n),
        "postcode": rng.choice([10001, 75008, 2000], n),
        "region": rng.choice([1001, 2002, 3003], n),
        "w": rng.uniform(5.0, 30.0, n),
    })


@pytest.fixture(scope="module")
def closed_form():
    md = Microdata(_frame(), keys=["birth_year", "postcode"], weight="w", strata="region")
    return assess_closed_form(md, threshold=0.05), md


@pytest.fixture(scope="module")
def posterior_half():
    """A posterior assessment with 50% intervals (quantiles 0.25, 0.5, 0.75).

    A hand-made negbin posterior (p per cell): fast, and its level is not the 90% the
    report used to print whatever the result's.
    """
    from sdcbayes import _compat
    from sdcbayes.risk.posterior_assess import assess_from_posterior

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 10, 200), "b": rng.integers(0, 6, 200),
                          "w": 25.0})
    md = Microdata(frame, keys=["a", "b"], weight="w")
    p = rng.uniform(0.02, 0.2, size=(2, 50, md.cells.n_cells))
    idata = _compat.from_dict(posterior={"p": p}, dims={"p": ["cell"]})
    res = assess_from_posterior(md, idata, "negbin", quantiles=(0.25, 0.5, 0.75),
                                threshold=0.05, random_seed=1)
    return res, md


# --------------------------------------------------------------------------- F3
def test_assessment_report_names_the_results_interval_level(posterior_half):
    res, md = posterior_half
    s = res.summary
    assert s["interval_level"] != 0.9
    name = f"{100 * s['interval_level']:.3g}% interval"  # "50% interval"
    page = assessment_report(res, md, s)
    assert f"<th>{name}</th>" in page
    assert f"<dt>{name}</dt>" in page
    lo_q, hi_q = min(s["quantiles"]), max(s["quantiles"])
    assert f"From the {fmt(lo_q)} to the {fmt(hi_q)} quantile of the posterior" in page
    assert f"the bounds of the {name}" in page  # the cell table's _lo/_hi columns
    assert "90% interval" not in page
    # the interval shown is the result's
    lo, hi = s["tau1_interval"]
    row = _rows(page, "τ1: sample uniques that are population uniques")[0]
    # τ1 counts records: its quantiles as whole numbers (UX audit F9)
    assert row[:2] == [fmt(s["tau1"]), f"[{round(lo)}, {round(hi)}]"]


@pytest.fixture(scope="module")
def comparison():
    from sdcbayes.risk.compare import compare_models

    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.integers(0, 10, 200), "b": rng.integers(0, 6, 200),
                          "w": 25.0})
    md = Microdata(frame, keys=["a", "b"], weight="w")
    specs = [{"name": "cf1", "model": "closed-form"}, {"name": "cf2", "model": "closed-form"}]
    return compare_models(md, specs, random_seed=1, plug_in_draws=50)


def _with_levels(result, levels: dict[str, float]):
    """``result`` whose assessments report the given interval levels."""
    assessments = {name: types.SimpleNamespace(summary={**a.summary,
                                                        "interval_level": levels[name]})
                   for name, a in result.assessments.items()}
    return dataclasses.replace(result, assessments=assessments)


def _risk_rows(page: str, names) -> dict[str, list[str]]:
    return {n: re.search(rf"<tr><td>{n}</td>(.*?)</tr>", page.split("Risk: ")[1]).group(1)
            for n in names}


def test_comparison_report_names_each_rows_level(comparison):
    names = list(comparison.assessments)
    levels = {n: a.summary["interval_level"] for n, a in comparison.assessments.items()}
    assert len(set(levels.values())) == 1
    level = f"{100 * levels[names[0]]:.3g}%"
    page = comparison_report(comparison, comparison.summary())
    assert f"Risk: estimates with {level} intervals" in page
    # a level the rows do not have is not printed
    half = comparison_report(_with_levels(comparison, dict.fromkeys(names, 0.5)),
                             comparison.summary())
    assert "Risk: estimates with 50% intervals" in half and "90% intervals" not in half
    # mixed levels: no common heading, each row says its own
    mixed = comparison_report(_with_levels(comparison, {names[0]: 0.5, names[1]: 0.8}),
                              comparison.summary())
    assert "Risk: estimates with intervals (levels per row)" in mixed
    assert "90% intervals" not in mixed
    rows = _risk_rows(mixed, names)
    assert "50%, " in rows[names[0]] and "80%, " in rows[names[1]]


# --------------------------------------------------------------------------- F4
def test_report_has_the_strata_and_the_thresholds_value(closed_form, check_html):
    from sdcbayes.cli import by_stratum

    res, md = closed_form
    s = dict(res.summary) | {"by_stratum": by_stratum(md, res.cells)}
    full = assessment_report(res, md, s)
    check_html(full)
    page = _body(full)
    assert "<h2>Risk by stratum</h2>" in page
    for entry in s["by_stratum"]:
        row = _rows(page, esc(str(entry["stratum"])))
        assert row == [[fmt(entry["n_records"]), fmt(entry["n_sample_uniques"]),
                        fmt(entry["expected_reidentifications"])]], entry
    # the threshold the count used, in the row's label
    label = f"records with risk above {fmt(s['risk_threshold'])}"
    assert _rows(page, label) == [[fmt(s["n_above_threshold"])]]
    # no strata, no section
    assert "Risk by stratum" not in assessment_report(res, md, res.summary)


def test_stratum_labels_are_escaped():
    frame = _frame().assign(region=lambda f: np.where(f["region"] == 1001, "<b>&", "x"))
    md = Microdata(frame, keys=["birth_year", "postcode"], weight="w", strata="region")
    res = assess_closed_form(md)
    from sdcbayes.cli import by_stratum

    page = assessment_report(res, md, dict(res.summary) | {"by_stratum": by_stratum(md,
                                                                                      res.cells)})
    assert "<td>&lt;b&gt;&amp;</td>" in page and "<b>&" not in page


# --------------------------------------------------------------------------- F8
def _risky_csv(tmp_path):
    # 300 records over 600 cells with weights 1.5: the median record risk is about 0.8
    rng = np.random.default_rng(1)
    path = tmp_path / "risky.csv"
    pd.DataFrame({"a": rng.integers(0, 30, 300), "b": rng.integers(0, 20, 300),
                  "w": 1.5}).to_csv(path, index=False)
    return path


def test_benchmark_caveat_in_report_is_the_terminals(tmp_path, capsys, check_html):
    path = _risky_csv(tmp_path)
    args = ["assess", str(path), "--keys", "a,b", "--weight", "w", "--model", "closed-form"]
    proc = run_in_process(capsys, *args, "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert s["median_risk"] > 0.1 and "n_above_threshold" not in s
    note = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip().startswith("note")]
    assert len(note) == 1, proc.stdout
    printed = note[0].removeprefix("note").strip()
    assert f"median risk {s['median_risk']:.2f}" in printed
    assert s["benchmark_caveat"] == printed  # summary.json carries it too
    raw = (tmp_path / "r" / "report.html").read_text()
    check_html(raw)
    page = html_module.unescape(_body(raw))
    assert printed in page  # the very text the terminal printed, CLI wording included
    assert "--threshold 0.1" in page and "threshold=" not in page
    # with --threshold the count is shown and neither says it
    proc = run_in_process(capsys, *args, "--threshold", "0.1", "--out", str(tmp_path / "t"))
    assert proc.returncode == 0 and "flags only" not in proc.stdout
    assert json.loads((tmp_path / "t" / "summary.json").read_text())["benchmark_caveat"] is None
    assert "flags only" not in (tmp_path / "t" / "report.html").read_text()


def test_benchmark_caveat_in_python_report_names_the_keyword(tmp_path):
    frame = pd.read_csv(_risky_csv(tmp_path))
    md = Microdata(frame, keys=["a", "b"], weight="w")
    res = assess_closed_form(md)
    page = html_module.unescape(_body(assessment_report(res, md, res.summary)))
    assert f"median risk {res.summary['median_risk']:.2f} > 0.1" in page
    assert "flags only outliers; threshold=0.1 counts every risky record" in page
    assert "--threshold" not in page
    with_threshold = assess_closed_form(md, threshold=0.1)
    assert "flags only" not in assessment_report(with_threshold, md, with_threshold.summary)


# --------------------------------------------------------------------------- F9
def test_data_and_keys_shows_the_runs_stamped_data(tmp_path, capsys):
    path = tmp_path / "keys.csv"
    frame = _frame()
    frame.loc[::7, "postcode"] = np.nan
    frame.to_csv(path, index=False)
    proc = run_in_process(capsys, "assess", str(path), "--keys", "birth_year,postcode",
                          "--weight", "w", "--model", "closed-form", "--missing", "category",
                          "--out", str(tmp_path / "r"), "-q")
    assert proc.returncode == 0, proc.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    data = s["provenance"]["data"]
    assert data["alpha"] is None  # the CLI's stamp: no wildcard match was weighed
    page = _body((tmp_path / "r" / "report.html").read_text())
    assert _rows(page, "alpha (weight of a wildcard match)") == [[fmt(data["alpha"])]]
    assert _rows(page, "missing key values read as") == [[fmt(data["missing"])]]


def test_data_and_keys_falls_back_to_the_microdata(closed_form):
    res, md = closed_form
    ds = md.summary()
    s = {k: v for k, v in res.summary.items() if k != "provenance"}
    bare = types.SimpleNamespace(records=res.records, cells=res.cells)  # no provenance
    page = _body(assessment_report(bare, md, s))
    assert _rows(page, "alpha (weight of a wildcard match)") == [[fmt(ds["alpha"])]]


# --------------------------------------------------------------------------- F11
def test_key_values_are_labels_and_counts_stay_numbers(closed_form):
    res, md = closed_form
    page = assessment_report(res, md, res.summary)
    top = res.cells.sort_values("risk", ascending=False).head(20)
    show = [c for c in top.columns if c != "cell"]
    got = re.search(r"riskiest key combinations</h2>\n<table>\n<tr>.*?</tr>\n<tr>(.*?)</tr>",
                    page).group(1)
    # itertuples keeps each column's dtype (a row Series would make 1932 a float)
    first = dict(zip(show, next(top[show].itertuples(index=False, name=None)), strict=True))
    want = [esc(first[c]) if c in md.keys else fmt(first[c]) for c in show]
    assert re.findall(r"<td[^>]*>(.*?)</td>", got) == want
    assert all("," not in w for c, w in zip(show, want, strict=True) if c in md.keys)
    assert int(first["birth_year"]) >= 1000  # a code that a separator would have split
    assert int(top["postcode"].max()) >= 1000 and f"<td>{top['postcode'].max()}</td>" in page


def test_python_report_shows_the_results_provenance(closed_form):
    res, md = closed_form
    assert "provenance" not in res.summary
    page = assessment_report(res, md, res.summary)
    assert "<h2>How this report was produced</h2>" in page
    assert esc(res.provenance["created"]) in page
    assert esc(res.provenance["command"]) in page


def test_data_summary_has_readable_labels(closed_form):
    res, md = closed_form
    ds = md.summary()
    page = _body(assessment_report(res, md, res.summary))
    data = page.split("<h2>Data and keys</h2>")[1].split("<h2>")[0]
    labels = re.findall(r"<tr><td>(.*?)</td>", data)
    assert not [x for x in labels if "_" in x and x not in md.keys], labels
    assert _rows(data, "records in the input") == [[fmt(ds["n_input_records"])]]
    assert _rows(data, "K given by the user") == [[fmt(ds["K_given"])]]
