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
def report_html():
    from sdcbayes.datasets import load_demo
    from sdcbayes.report import assessment_report

    demo = load_demo()
    md = Microdata(demo.sample, keys=list(demo.keys), weight=demo.weight, household=demo.household)
    res = assess_closed_form(md)
    summary = dict(res.summary) | {"data": "demo", "provenance": res.provenance}
    return assessment_report(res, md, summary)


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
     (1e-5, "1.000e-05"), (None, "–"), (True, "yes"), ((0.1, 0.25), "[0.1, 0.25]")],
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
