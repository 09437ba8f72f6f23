"""What users read in the reports and terminal summaries (audit Z2, F4-F9; audit Z3, 7).

Each test fails before its fix. Reports are rendered in-process from small results
(closed forms, a hand-made negbin posterior, an ML ``decide`` run) or from summary
dicts; expected texts come from the results' own summaries, not pasted numbers.
"""

from __future__ import annotations

import dataclasses
import html as html_module
import re
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import run_in_process

from sdcbayes import Microdata, _compat
from sdcbayes.report import (
    PARAMETERS_ONLY,
    PREDICTIVE,
    _model_section,
    assessment_report,
    comparison_report,
    fmt,
    percent,
    protection_report,
    render,
    suda_report,
)

README = Path(__file__).resolve().parents[1] / "README.md"


def _text(page: str) -> str:
    """What a reader sees before the raw provenance: tags dropped, entities decoded."""
    body = page.split("<details>")[0]
    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def _row(page: str, label: str) -> list[str]:
    """The cells (decoded text) of the first table row whose first cell is ``label``."""
    m = re.search(rf"<tr><td>{re.escape(label)}</td>(.*?)</tr>", page)
    assert m, label
    return [html_module.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))]


def _header(page: str, first: str) -> list[str]:
    m = re.search(rf"<tr><th>{re.escape(first)}</th>(.*?)</tr>", page)
    assert m, first
    return [first, *(html_module.unescape(c) for c in re.findall(r"<th>(.*?)</th>", m.group(1)))]


@pytest.fixture(scope="module")
def posterior():
    """A posterior assessment with households: a hand-made negbin posterior (fast)."""
    from sdcbayes.risk.posterior_assess import assess_from_posterior

    rng = np.random.default_rng(0)
    n = 240
    frame = pd.DataFrame({"a": rng.integers(0, 10, n), "b": rng.integers(0, 6, n),
                          "hh": np.repeat(np.arange(n // 3), 3), "w": 25.0})
    md = Microdata(frame, keys=["a", "b"], weight="w", household="hh")
    p = rng.uniform(0.02, 0.2, size=(2, 50, md.cells.n_cells))
    idata = _compat.from_dict(posterior={"p": p}, dims={"p": ["cell"]})
    res = assess_from_posterior(md, idata, "negbin", threshold=0.05, random_seed=1)
    return res, md


# --------------------------------------------------------------------------- F4
def test_file_level_rows_name_their_intervals_kind(posterior):
    res, md = posterior
    s = res.summary
    page = assessment_report(res, md, s)
    assert _header(page, "quantity")[:4] == ["quantity", "estimate", "90% interval",
                                            "interval of"]
    # τ1, τ2, ER and the household ER (per drawn population, its realised value):
    # predictive; the counts over r_i(θ) per draw: parameters only
    assert s["household_interval_kind"].startswith("predictive")
    for label in ("τ1: sample uniques that are population uniques",
                  "τ2: expected correct matches among sample uniques",
                  "expected re-identifications",
                  "household expected re-identifications (records)"):
        assert _row(page, label)[2] == PREDICTIVE, label
    for label in ("records above the benchmark rule",
                  f"records with risk above {fmt(s['risk_threshold'])}"):
        assert _row(page, label)[2] == PARAMETERS_ONLY, label
    text = _text(page)
    assert ("The rows of the benchmark rule and the risk threshold are over "
            "the parameters' posterior only") in text
    assert "and the household expected re-identifications (per drawn population" in text
    # a summary.json from before the predictive household interval (no kind): θ only
    old = {k: v for k, v in s.items() if k != "household_interval_kind"}
    page = assessment_report(res, md, old)
    assert _row(page, "household expected re-identifications (records)")[2] == PARAMETERS_ONLY
    assert ("The rows of the benchmark rule, the risk threshold and the households are over "
            "the parameters' posterior only") in _text(page)


def test_cell_columns_name_their_intervals_kind(posterior):
    res, md = posterior
    assert {"risk_lo", "p_unique_lo", "F_lo"} <= set(res.cells.columns)
    text = _text(assessment_report(res, md, res.summary))
    assert ("risk_lo, risk_hi, p_unique_lo, p_unique_hi: the bounds of the 90% interval "
            "over the parameters' posterior only") in text
    assert ("F_lo, F_hi: the bounds of the 90% interval of the posterior predictive "
            "distribution of F k") in text
    # no column is left under the one definition that fitted only some of them
    assert "columns ending in _lo and _hi" not in text


# --------------------------------------------------------------------------- Z3 7
def test_report_and_readme_say_an_estimate_can_lie_outside_its_interval(posterior):
    res, md = posterior
    text = _text(assessment_report(res, md, res.summary))
    assert "an estimate can lie outside its own interval" in text
    assert "Rao-Blackwellised" in text
    readme = README.read_text(encoding="utf-8")
    records = readme[readme.index("`records.csv`: one row per input record"):]
    records = records[:records.index("`posterior.nc`")]
    assert "outside" in records
    # the field table's row points to the block below the table that explains it
    assert "| `*_interval` | posterior models: " in readme
    fields = readme[readme.index("**`*_interval`** (posterior models)"):]
    fields = fields[:fields.index("\n\n**")]
    assert "can lie outside" in fields
    assert "parameters' posterior only" in fields  # the benchmark and household intervals


# --------------------------------------------------------------------------- F5
def _overdispersion(**changes):
    od = {"method": "cv", "kappa_median": 7.94, "kappa_interval": [1.259, 794.3],
          "share_poisson": 0.08, "cv_observed_uniques": 541, "kappa_prior": "half-cauchy(1)",
          "cv_parts_fit": "em", "cv_ratios": [4, 8],
          "cv_kappa_median_by_ratio": {"4": 6.31, "8": None}}
    return {"model": "latent-class", "method": "gibbs", "overdispersion": od | changes}


def test_infinite_kappa_reads_as_infinity_and_other_nulls_as_missing():
    text = _text(_model_section(_overdispersion(kappa_interval=[1.259, None])))
    # each field: its readable label, its value, its summary.json name (UX audit F9)
    assert "kappa, interval [1.259, ∞] kappa_interval" in text
    assert "kappa's median for each part size r 4: 6.31, 8: ∞ cv_kappa_median_by_ratio" in text
    text = _text(_model_section(_overdispersion(kappa_median=None, kappa_interval=[None, None])))
    assert "kappa, posterior median ∞ kappa_median" in text
    assert "kappa, interval [∞, ∞] kappa_interval" in text
    # a fixed kappa: the cross-validation's fields do not apply, and are not infinite
    fixed = _model_section(_overdispersion(method="fixed", cv_observed_uniques=None,
                                           kappa_prior=None, cv_parts_fit=None))
    text = _text(fixed)
    assert "none (inf)" not in text
    for field in ("cv_observed_uniques", "kappa_prior", "cv_parts_fit"):
        assert f"– {field}" in text, field


# --------------------------------------------------------------------------- F6
EXACT = "the sample is the whole population: the results are exact"


def _console_summary(**diag):
    return {
        "sdcbayes_version": "x", "model": "latent-class", "method": "gibbs", "data": "d",
        "n_records": 10, "n_cells": 5, "n_sample_uniques": 2,
        "expected_reidentifications": 1.0, "expected_reidentifications_interval": [1.0, 1.0],
        "expected_reidentification_rate": 0.1,
        "tau1": 1.0, "tau1_interval": [1.0, 1.0], "tau2": 1.0, "tau2_interval": [1.0, 1.0],
        "n_above_benchmark": 2.0, "n_above_benchmark_interval": [2.0, 2.0],
        "diagnostics": {"max_r_hat": None, "min_ess_bulk": 200.0, "min_ess_tail": 200.0,
                        "divergences": None} | diag,
        "provenance": {"settings": {"method": "gibbs"}},
    }


def _diagnostics_line(capsys, tmp_path, summary) -> str:
    from sdcbayes.cli import _print_summary

    _print_summary(summary, tmp_path)
    return next(x for x in capsys.readouterr().out.splitlines() if "max r_hat" in x)


def test_console_says_why_r_hat_is_missing(capsys, tmp_path):
    exact = _diagnostics_line(capsys, tmp_path, _console_summary(chains=2, note=EXACT))
    assert "max r_hat n/a (exact results)" in exact and "one chain" not in exact
    one = _diagnostics_line(capsys, tmp_path, _console_summary(chains=1))
    assert "max r_hat n/a (one chain)" in one
    # two chains and no note: not "one chain"
    two = _diagnostics_line(capsys, tmp_path, _console_summary(chains=2))
    assert "max r_hat n/a," in two and "one chain" not in two


def test_exact_results_note_reaches_the_notes_box():
    page = render("t", [("s", "<p>x</p>")], None, _console_summary(chains=2, note=EXACT))
    box = re.search(r"<div class='info'><p>Notes</p><ul>(.*?)</ul></div>", page)
    assert box and f"<li>{EXACT}</li>" in box.group(1)


# --------------------------------------------------------------------------- F7
def _x_ticks(svg: str) -> list[float]:
    labels = re.findall(r'font-size="11" text-anchor="middle">([^<]*)</text>', svg)
    return [float(v) for v in labels]


def test_suda_dis_histogram_axis_starts_at_zero_when_every_score_is_zero():
    n = 50
    result = types.SimpleNamespace(scores=np.zeros(n), dis_scores=np.zeros(n))
    summary = {"n_records": n, "keys": ["a", "b"], "max_size": 2, "score_method": "elliot",
               "n_msus_by_size": {}}
    page = suda_report(result, summary)
    svgs = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert len(svgs) == 1  # no SUDA score is positive: only the DIS-SUDA plot
    ticks = _x_ticks(svgs[0])
    assert ticks and min(ticks) == 0 and max(ticks) <= 1
    # every record in the bar at 0
    assert re.search(rf"<title>0–[0-9.e-]+: {n}</title>", svgs[0])


# --------------------------------------------------------------------------- F8
@pytest.fixture(scope="module")
def decided(tmp_path_factory):
    """An ML ``decide`` run (fast): its stdout, summary and report, and the result."""
    import json

    tmp = tmp_path_factory.mktemp("decide")
    rng = np.random.default_rng(3)
    n = rng.integers(20, 60, 40)
    pd.DataFrame({"y": rng.binomial(n, 0.15), "n": n, "N": n * 25}).to_csv(tmp / "d.csv",
                                                                          index=False)
    return tmp, json


def _decide(capsys, tmp):
    proc = run_in_process(capsys, "decide", str(tmp / "d.csv"), "--y", "y", "--n", "n",
                          "--N", "N", "--hyperparameters", "ml", "--out", str(tmp / "o"))
    assert proc.returncode == 0, proc.stderr
    return proc


def test_decide_shows_the_realised_shares_and_that_the_target_is_interpolated(capsys,
                                                                             decided):
    tmp, json = decided
    proc = _decide(capsys, tmp)
    s = json.loads((tmp / "o" / "summary.json").read_text())
    t = s["totals"]
    # the decisions' own shares differ from the interpolated one (whole domains)
    assert percent(t["nonpublication_share"]) != percent(s["suppression_at_target"]["reference"])
    line = next(x for x in proc.stdout.splitlines() if "these decisions" in x)
    assert (f"publish {percent(t['disclosure_share'])} of the disclosure loss, suppress "
            f"{percent(t['nonpublication_share'])} of the nonpublication loss") in line
    target = next(x for x in proc.stdout.splitlines() if "suppression needed for" in x)
    assert "interpolated on the frontier" in target
    page = (tmp / "o" / "report.html").read_text(encoding="utf-8")
    text = _text(page)
    assert "of its full-publication value, interpolated on the frontier" in text
    assert (f"the decisions above, whole domains, suppress {percent(t['nonpublication_share'])}"
            f" of the nonpublication loss and publish {percent(t['disclosure_share'])} of "
            "the disclosure loss") in text
    assert _row(page, "disclosure share these decisions publish") == [
        percent(t["disclosure_share"])]
    assert _row(page, "nonpublication share these decisions suppress") == [
        percent(t["nonpublication_share"])]
    # the sensitivity table in percent, as the text above it
    ref = next(r for r in s["sensitivity"] if r["role"] == "reference")
    assert _row(page, f"{ref['pair']} (reference)")[0] == percent(ref["suppression_at_target"])


# --------------------------------------------------------------------------- F9
def test_console_shares_use_the_percent_helper(capsys, tmp_path):
    from sdcbayes.cli import _print_summary

    s = _console_summary(chains=4, max_r_hat=1.001, classes_used_mean=14.9,
                         classes_used_max=29, classes_truncation=30,
                         share_draws_all_classes_used=0.004)
    s["expected_reidentification_rate"] = 4e-5
    _print_summary(s, tmp_path)
    out = capsys.readouterr().out
    assert "(all in 0.4% of draws)" in out
    rate = next(x for x in out.splitlines() if x.strip().startswith("rate"))
    assert rate.split()[-1] == percent(4e-5) == "0.004%"


def test_compare_report_shows_divergences_as_a_count(cf_comparison):
    result = cf_comparison
    # a NUTS model's row: the table's float column holds its divergences as 0.0
    table = result.table.assign(divergences=0.0, max_r_hat=1.002)
    page = comparison_report(dataclasses.replace(result, table=table), result.summary())
    diag = page.split("Sampling diagnostics and fit time")[1]
    cells = _row(diag, "cf")
    assert cells[3] == "0", cells


def test_decide_report_labels_draws_per_chain(capsys, decided):
    from sdcbayes.report import decision_report

    tmp, json = decided
    _decide(capsys, tmp)
    s = json.loads((tmp / "o" / "summary.json").read_text())
    # the result object of the same run, through the Python API
    from sdcbayes.risk.decisions import decide

    frame = pd.read_csv(tmp / "d.csv")
    result = decide(frame["y"].to_numpy(), frame["n"].to_numpy(), frame["N"].to_numpy(),
                    fit_method="ml")
    diag = {"chains": 2, "draws": 200, "max_r_hat": 1.0, "min_ess_bulk": 300.0,
            "min_ess_tail": 300.0, "divergences": 0}
    page = decision_report(result, s | {"diagnostics": diag})
    section = page.split("Sampling diagnostics")[1]
    assert _row(section, "draws per chain") == ["200"]
    assert "<tr><td>draws</td>" not in section


@pytest.mark.parametrize(("interval", "text"), [
    ((212.0, 225.996), "[212.0, 226.0]"),       # was "[212.0, 226]"
    ((225.66, 247.96), "[225.7, 248.0]"),       # was "[225.7, 248]"
    ((2.9e-5, 0.00479), "[2.900e-05, 4.790e-03]"),  # was "[2.900e-05, 0.00479]"
    ((122.0, 151.0), "[122.0, 151.0]"),
    ((369, 400), "[369, 400]"),
    ((1.259, None), "[1.259, –]"),
])
def test_an_intervals_bounds_share_one_format(interval, text):
    assert fmt(interval) == text


def test_compare_report_intervals_share_one_format(cf_comparison):
    result = cf_comparison
    table = result.table.assign(tau2=218.3, tau2_lo=212.0, tau2_hi=225.996)
    page = comparison_report(dataclasses.replace(result, table=table), result.summary())
    risk = page.split("Risk: ")[1]
    assert "218.3 [212.0, 226.0]" in _row(risk, "cf")[1]


def test_protect_note_says_the_missing_row_counts_records():
    s = {"keys": ["a", "b"], "weight": "w", "steps": [],
         "risk": {"before": {"n_missing_key_records": 3}, "after": {"n_missing_key_records": 5},
                  "k": 2}}
    text = _text(protection_report(s))
    assert "the original column counts the values missing in the input" not in text
    assert ("“records with a missing key value” counts records, so a record missing two "
            "values counts once") in text


def test_compare_report_shows_each_latent_class_fits_predictive_check(cf_comparison):
    """compare's summary carries the latent-class fits' predictive checks (audit Z2 F2);
    its report shows them as assess's does, with both tails."""
    result = cf_comparison
    s = result.summary()
    rows = [{"count": 1, "observed": 7, "mean": 9.5, "interval": [5.0, 14.0],
             "p_value": 0.81, "p_lower": 0.27}]
    page = comparison_report(result, {**s, "predictive_checks": {"lc": rows}})
    section = page.split("Predictive check of lc")[1]
    cells = [html_module.unescape(c) for c in re.findall(
        r"<td[^>]*>(.*?)</td>", section.split("</tr>")[1])]
    assert cells == ["1", "7", "9.5", "[5, 14]", "0.810", "0.270"], cells
    assert "p (at most as many)" in section
    assert "Predictive check of" not in comparison_report(result, s)  # none fitted


def test_dropped_records_weight_sums_are_labelled():
    """missing='drop' rescales the kept weights (audit Z2 F3): the data table names both
    sums before the adjustment in words, not as raw field names."""
    from sdcbayes.risk.assess import assess_closed_form

    frame = pd.DataFrame({"a": ["x", "y", None, "x", "z"], "b": [1, 2, 1, 1, 2],
                          "w": [10.0, 20.0, 30.0, 10.0, 40.0]})
    md = Microdata(frame, keys=["a", "b"], weight="w", missing="drop")
    res = assess_closed_form(md)
    text = _text(assessment_report(res, md, res.summary))
    assert "sum of the weights of all input records" in text
    assert "before their adjustment for the dropped records" in text
    assert "sum weights input" not in text


# --------------------------------------------------------------------------- UX audit F9
def _cell_column(page: str, column: str) -> list[str]:
    """The riskiest-cells table's cells (decoded text) in ``column``."""
    section = page.split("riskiest key combinations")[1].split("</table>")[0]
    header = re.findall(r"<th>(.*?)</th>", section)
    i = header.index(column)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row)[i]
            for row in re.findall(r"<tr><td.*?</tr>", section)]


def test_counts_show_as_whole_numbers_and_estimates_in_their_intervals_decimals(posterior):
    res, md = posterior
    s = dict(res.summary) | {
        "tau1": 12.22, "tau1_interval": [6.0, 19.0],
        "expected_reidentifications": 101.2147,
        "expected_reidentifications_interval": [94.78, 108.07],
        # an interpolated quantile of a count: rounded as the terminal rounds it
        "n_above_benchmark": 223.695, "n_above_benchmark_interval": [163.0, 300.05]}
    page = assessment_report(res, md, s)
    assert _row(page, "τ1: sample uniques that are population uniques")[:2] == [
        "12.22", "[6, 19]"]
    # was "101.2" beside "[94.78, 108.07]"
    assert _row(page, "expected re-identifications")[:2] == ["101.21", "[94.78, 108.07]"]
    assert _row(page, "records above the benchmark rule")[:2] == ["223.7", "[163, 300]"]
    # the estimate stays right-aligned as a number
    assert re.search(r"<tr><td>expected re-identifications</td><td class=\"num\">101.21<",
                     page)
    # the cells' predictive bounds of F_k are counts: no ".0"
    for column in ("fk", "F_lo", "F_hi"):
        cells = _cell_column(page, column)
        assert cells and all(re.fullmatch(r"[\d,]+|–", c) for c in cells), (column, cells)


def test_cell_legend_and_overdispersion_fields_are_explained(posterior):
    res, md = posterior
    text = _text(assessment_report(res, md, res.summary))
    assert "fk: the number of sample records in the cell" in text
    assert "fk: f k , records in the sample" not in text  # was "fk: fk, records ..."
    od = _text(_model_section(_overdispersion(share_poisson=0.25, cv_splits=1,
                                              cv_dispersion=1.0)))
    assert "share of draws with Poisson cells (kappa ∞) 0.25 share_poisson" in od
    assert "how the mixture is fitted to each part em cv_parts_fit" in od
    assert "random partitions of the records per part size 1 cv_splits" in od
    assert "variance factor of the held-out count" in od


def test_compare_report_shows_tau1_bounds_as_counts(cf_comparison):
    result = cf_comparison
    table = result.table.assign(tau1=218.3, tau1_lo=212.0, tau1_hi=225.996)
    page = comparison_report(dataclasses.replace(result, table=table), result.summary())
    assert _row(page.split("Risk: ")[1], "cf")[0] == "218.3 [212, 226]"  # was [212.0, 226.0]
