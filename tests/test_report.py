"""report.html: self-contained, valid, and rendered by a real browser when one is installed."""

from __future__ import annotations

import shutil
import struct
import subprocess

import numpy as np
import pytest

from sdcbayes import Microdata
from sdcbayes.report import fmt, render, svg_histogram, svg_lines, table
from sdcbayes.risk.assess import assess_closed_form

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def demo_closed_form():
    from sdcbayes.datasets import load_demo

    demo = load_demo()
    md = Microdata(demo.sample, keys=list(demo.keys), weight=demo.weight, household=demo.household)
    return assess_closed_form(md), md


@pytest.fixture(scope="module")
def report_html(demo_closed_form):
    from sdcbayes.report import assessment_report

    res, md = demo_closed_form
    summary = dict(res.summary) | {"data": "demo", "provenance": res.provenance}
    return assessment_report(res, md, summary)


# Problems as the diagnostics write them (one with characters HTML must escape), and
# settings nested as a latent-class fit stores them in summary.json.
PROBLEMS = [
    "parameter tau1 has R-hat 1.123 > 1.01: the chains disagree; run longer (tune=5000)",
    "parameter tau2 has bulk ESS 13 < 400: increase draws & tune",
    "observed sample uniques 541 lie outside the model's <predicted> 90% interval",
]


@pytest.fixture(scope="module")
def flagged(demo_closed_form):
    """(html, summary) of a report whose summary carries problems and nested settings."""
    from sdcbayes.report import assessment_report

    res, md = demo_closed_form
    prov = dict(res.provenance) | {
        "priors": {"alpha": {"dist": "Gamma", "alpha": 0.25, "beta": 0.25}},
        "settings": {"quantiles": [0.05, 0.95], "options": {"n_classes": 30, "store": "all"},
                     "threshold": None},
    }
    summary = dict(res.summary) | {
        "data": "demo",
        "provenance": prov,
        "diagnostics": {
            "chains": 4, "draws": 100, "max_r_hat": 1.123, "max_r_hat_at": "tau1",
            "min_ess_bulk": np.float64(13.2), "min_ess_bulk_at": "tau2",
            "divergences": None, "diagnosed_on": ["tau1", "tau2"], "problems": PROBLEMS,
        },
        "overdispersion": {
            "kappa_median": 7.9, "kappa_interval": [1.26, 1000.0], "cv_ratios": [4, 8],
            "cv_kappa_median_by_ratio": {"4": 0.53, "8": 0.61}, "share_poisson": float("nan"),
        },
    }
    return assessment_report(res, md, summary), summary


def _before_details(page):
    # the full provenance is a JSON dump by design; everything before it is for reading
    return page.split("<details>")[0]


def test_report_has_no_python_reprs(flagged, check_html):
    page, _ = flagged
    check_html(page)
    shown = _before_details(page)
    # raw and as html.escape writes them (the old report escaped the quotes of its reprs)
    for repr_start in ("['", "{'", "[&#x27;", "{&#x27;", "{&quot;", "[&quot;"):
        assert repr_start not in shown, repr_start
    for word in ("None", "nan", "np.float64", "inf<"):
        assert f">{word}" not in shown, word
    # nested settings read as text
    assert "4: 0.53, 8: 0.61" in shown
    assert "<td>4, 8</td>" in shown  # two ratios, not an interval
    # an interval stays an interval, its two bounds in one format (audit Z2, F9)
    assert "[1.26, 1,000.00]" in shown
    assert "Gamma(alpha=0.25, beta=0.25)" in shown
    assert "n_classes: 30, store: all" in shown


def test_problems_are_a_warning_list_at_the_top(flagged):
    import html

    page, _ = flagged
    box_start = page.index("<div class='warn'")
    box = page[box_start:page.index("</div>", box_start)]
    assert box_start < page.index("<h2>")  # before the first section
    assert box.count("<li>") == len(PROBLEMS)
    for problem in PROBLEMS:
        assert f"<li>{html.escape(problem)}</li>" in box
    # the diagnostics table keeps numbers; the texts are not repeated in it
    start = page.index("Sampling diagnostics")
    diag = page[start:page.index("</table>", start)]
    assert "R-hat 1.123 &gt;" not in diag and "problems" not in diag
    assert "largest R-hat (at tau1)</td><td class=\"num\">1.123</td>" in diag
    assert "divergent transitions</td><td>–</td>" in diag


def test_report_without_problems_has_no_warning_box(report_html):
    assert "class='warn'" not in report_html


def test_report_defines_its_quantities_inline(flagged, report_html):
    import re
    from pathlib import Path

    import sdcbayes

    repo = Path(sdcbayes.__file__).resolve().parents[1]
    for page in (flagged[0], report_html):
        assert "DESIGN.md" not in page
        assert "<dt>τ1</dt>" in page and "<dt>τ2</dt>" in page
        assert ("Σ over sample uniques of P(F<sub>k</sub> = 1 | f<sub>k</sub> = 1)" in page)
        assert "Σ over sample uniques of E(1/F<sub>k</sub> | f<sub>k</sub> = 1)" in page
        assert "Σ over records of E(1/F<sub>k</sub> | f<sub>k</sub>)" in page
        # every file the page points to exists in the repository
        if (repo / "README.md").exists():
            for ref in set(re.findall(r"[\w./-]+\.md\b", page)):
                assert (repo / ref).exists(), ref


def test_render_collects_every_warning_and_note_list(check_html):
    summary = {
        "warnings": "one <b>string</b>",
        "diagnostics": {"problems": ["p1", "p1"]},  # a repeat shows once
        "nested": {"deeper": {"warnings": ["w2"]}},
        "notes": ["a note"],
        "provenance": {"warnings": ["inputs, not findings"]},
    }
    page = render("x", [("h", "<p>body</p>")], None, summary)
    check_html(page)
    warn = page[page.index("<div class='warn'"):page.index("</div>")]
    assert "<li>one &lt;b&gt;string&lt;/b&gt;</li>" in warn
    assert warn.count("<li>") == 3 and "w2" in warn and "inputs" not in page
    assert "<div class='info'><p>Notes</p><ul><li>a note</li></ul></div>" in page
    assert "class='warn'" not in render("x", [], None, {"diagnostics": {"problems": []}})


def test_report_is_valid_and_self_contained(report_html, check_html):
    checker = check_html(report_html)
    assert {"svg", "table", "h1", "h2"} <= checker.tags
    for heading in ("File-level risk", "Data and keys", "Model", "Per-record risk distribution",
                    "riskiest key combinations", "Household risk", "How this report was produced"):
        assert heading in report_html


def test_report_shows_no_raw_records_by_default(report_html):
    # household ids (raw identifiers of records) never appear in the cell table
    assert "household_id</th>" not in report_html


def _png_size(path):
    with open(path, "rb") as fh:
        head = fh.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_report_renders_in_headless_chromium(report_html, tmp_path, check_html):
    """Render with Chromium when the machine has it (Debian package `chromium`).

    Without a browser the page is still validated structurally (balanced tags, no
    scripts or network references), so this test always asserts something.
    """
    page = tmp_path / "report.html"
    page.write_text(report_html, encoding="utf-8")
    if CHROMIUM is None:
        check_html(report_html)
        return
    shot = tmp_path / "shot.png"
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
         page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the browser parsed the whole page: the last section and the inline SVG survive
    assert "How this report was produced" in dom.stdout
    assert dom.stdout.count("<svg") == report_html.count("<svg")
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile2'}",
         f"--screenshot={shot}", "--window-size=1000,1200", page.as_uri()],
        capture_output=True, timeout=120, check=True,
    )
    assert _png_size(shot) == (1000, 1200)


def test_histogram_counts_every_value(check_html):
    values = np.array([0.05, 0.15, 0.15, 0.95, np.nan])
    svg = svg_histogram(values, bins=np.linspace(0, 1, 11), title="t")
    # one bar per non-empty bin, with its count in the tooltip
    assert svg.count("<rect") == 1 + 3
    assert ": 2</title>" in svg and svg.count(": 1</title>") == 2
    check_html(render("x", [("h", svg)], None))


def test_lines_and_tables_escape_text(check_html):
    svg = svg_lines({"a<b": (np.arange(3), np.arange(3))}, title="<t>")
    assert "a&lt;b" in svg and "&lt;t&gt;" in svg
    html = table([("<script>", 1.5)], header=("k", "v"))
    assert "<script>" not in html
    check_html(render("x", [("h", svg + html)], None))


@pytest.mark.parametrize(
    ("value", "text"),
    [(3, "3"), (12345, "12,345"), (97176.24, "97,176.2"), (0.02525, "0.02525"),
     (1e-5, "1.000e-05"), (None, "–"), (True, "yes"), ((0.1, 0.25), "[0.10, 0.25]"),
     # never a Python repr: missing values, infinities, containers, numpy types
     (float("nan"), "–"), (np.float64("nan"), "–"), (np.inf, "∞"), (-np.inf, "−∞"),
     (np.int64(7), "7"), (np.bool_(False), "no"), ([], "–"),
     (["tau1", "tau2", "er"], "tau1, tau2, er"), (np.array([1, 2, 3]), "1, 2, 3"),
     ({"4": 0.53, "8": 0.61}, "4: 0.53, 8: 0.61"), ({}, "–"),
     ({"a": {"b": 1, "c": [1, 2, 3]}}, "a: (b: 1, c: (1, 2, 3))"),
     ({"dist": "HalfNormal", "sigma": 5}, "HalfNormal(sigma=5)"),
     (["it's", "<x>"], "it&#x27;s, &lt;x&gt;")],
)
def test_number_formatting(value, text):
    assert fmt(value) == text


def test_calibration_report_plots_each_design_and_tabulates_its_error(check_html):
    import pandas as pd

    from sdcbayes.report import calibration_report

    edges = np.linspace(0, 1, 11)
    rows = []
    for design in ("a/srs/1%", "b/srs/5%"):
        for method, shift in (("model", 0.0), ("plug-in", 0.2)):
            n = np.array([50, 0, 30, 0, 0, 0, 0, 0, 0, 20])
            p = (edges[:-1] + 0.05)
            rows.append(pd.DataFrame({"design": design, "method": method, "bin_lo": edges[:-1],
                                      "bin_hi": edges[1:], "n": n,
                                      "mean_predicted": np.where(n > 0, p, np.nan),
                                      "observed": np.where(n > 0, np.clip(p - shift, 0, 1),
                                                           np.nan)}))
    page = calibration_report(pd.concat(rows, ignore_index=True))
    check_html(page)
    # a plot per design, a line per method beside the diagonal, and the ECE table
    assert page.count("<svg") == 2 and page.count("<polyline") == 2 * 3
    assert page.count("<circle") == 2 * 2 * 3  # a dot per non-empty bin and method
    assert "a/srs/1%" in page and "calibrated" in page
    assert "<td>0.125</td>" in page  # the plug-in's ECE: (50 * 0.05 + 30 * 0.2 + 20 * 0.2) / 100


@pytest.mark.parametrize(("ratios", "words"), [([4, 8], "a quarter or an eighth"),
                                               ([2], "a half")])
def test_overdispersion_text_names_the_parts_the_cv_used(demo_closed_form, ratios, words):
    # the cross-validation falls back to halves on small samples and large fractions
    # (audit E, finding F5); the text said "a quarter or an eighth" whatever it used
    from sdcbayes.report import assessment_report

    res, md = demo_closed_form
    summary = dict(res.summary) | {"overdispersion": {"kappa_median": 2.0, "cv_ratios": ratios}}
    page = assessment_report(res, md, summary)
    assert f"mixture fitted to {words} of the records" in page
