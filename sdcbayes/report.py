"""Self-contained HTML reports (plots as inline SVG; no scripts, no network).

A statistical office sends ``report.html`` around by e-mail, so the page holds
everything: CSS inline, plots as inline SVG drawn here (no matplotlib import,
which keeps closed-form runs fast), and the exact command and versions.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:980px;
margin:2em auto;padding:0 1em;color:#1b1b1b;line-height:1.45}
h1{font-size:1.6em;border-bottom:2px solid #345;padding-bottom:.2em}
h2{font-size:1.2em;margin-top:1.8em;color:#234}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ccd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#eef2f7}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{background:#f4f4f6;padding:.1em .3em;border-radius:3px;font-size:.9em}
pre{padding:.6em;overflow-x:auto;white-space:pre-wrap}
.note{color:#555;font-size:.9em}
svg{max-width:100%;height:auto}
"""


def esc(value: Any) -> str:
    """HTML-escape ``str(value)``."""
    return html.escape(str(value), quote=True)


def fmt(value: Any, digits: int = 4) -> str:
    """Format a number for a table: integers plainly, floats to ``digits`` significant."""
    if value is None:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            return str(v)
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return f"{v:.{digits - 1}e}"
        if float(v).is_integer() and abs(v) < 1e6:
            return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{max(digits - 3, 1)}f}"
        return f"{v:.{digits}g}"
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return f"[{fmt(value[0], digits)}, {fmt(value[1], digits)}]"
    return esc(value)


def table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    """An HTML table; numeric cells are right-aligned."""
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        cells = []
        for v in row:
            numeric = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
                v, bool
            )
            cls = ' class="num"' if numeric else ""
            cells.append(f"<td{cls}>{fmt(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def dict_table(d: Mapping[str, Any]) -> str:
    """A two-column table of a flat mapping."""
    return table([(k, v) for k, v in d.items()], header=("quantity", "value"))


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for mult in (1, 2, 2.5, 5, 10):
        if (hi - lo) / (step * mult) <= n:
            step *= mult
            break
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step + 1e-9) + 1)]


def svg_histogram(
    values: np.ndarray,
    *,
    bins: int | np.ndarray = 40,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "records",
    log_y: bool = False,
    markers: Mapping[str, float] | None = None,
    width: int = 640,
    height: int = 300,
) -> str:
    """Histogram of ``values`` as an inline SVG string.

    ``markers`` draws labelled vertical lines (e.g. a risk threshold).
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return "<p class='note'>(no values to plot)</p>"
    counts, edges = np.histogram(v, bins=bins)
    return _svg_bars(counts, edges, title, xlabel, ylabel, log_y, markers, width, height)


def _svg_bars(counts, edges, title, xlabel, ylabel, log_y, markers, width, height) -> str:
    ml, mr, mt, mb = 60, 15, 30, 45
    pw, ph = width - ml - mr, height - mt - mb
    x0, x1 = float(edges[0]), float(edges[-1])
    if x1 <= x0:
        x1 = x0 + 1.0
    c = counts.astype(float)
    yv = np.log10(c + 1) if log_y else c
    ymax = float(yv.max()) or 1.0

    def sx(x):
        return ml + (x - x0) / (x1 - x0) * pw

    def sy(y):
        return mt + ph - y / ymax * ph

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{esc(title)}">',
        f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="#fafbfd" stroke="#ccd"/>',
    ]
    for i, y in enumerate(yv):
        if c[i] <= 0:
            continue
        xa, xb = sx(edges[i]), sx(edges[i + 1])
        parts.append(
            f'<rect x="{xa:.2f}" y="{sy(y):.2f}" width="{max(xb - xa - 0.5, 0.5):.2f}" '
            f'height="{mt + ph - sy(y):.2f}" fill="#4a78a8"><title>{edges[i]:.4g}–'
            f"{edges[i + 1]:.4g}: {int(c[i])}</title></rect>"
        )
    for t in _ticks(x0, x1):
        parts.append(
            f'<text x="{sx(t):.1f}" y="{mt + ph + 16}" font-size="11" '
            f'text-anchor="middle">{t:.3g}</text>'
        )
    ymax_label = f"{int(round(10**ymax - 1)):,}" if log_y else f"{int(round(ymax)):,}"
    parts.append(
        f'<text x="{ml - 6}" y="{mt + 10}" font-size="11" text-anchor="end">{ymax_label}</text>'
    )
    parts.append(f'<text x="{ml - 6}" y="{mt + ph}" font-size="11" text-anchor="end">0</text>')
    for label, xv in (markers or {}).items():
        if x0 <= xv <= x1:
            parts.append(
                f'<line x1="{sx(xv):.1f}" x2="{sx(xv):.1f}" y1="{mt}" y2="{mt + ph}" '
                f'stroke="#c0392b" stroke-dasharray="4,3"/>'
                f'<text x="{sx(xv) + 4:.1f}" y="{mt + 12}" font-size="11" '
                f'fill="#c0392b">{esc(label)}</text>'
            )
    parts.append(
        f'<text x="{ml + pw / 2}" y="{height - 8}" font-size="12" '
        f'text-anchor="middle">{esc(xlabel)}</text>'
    )
    ylab = ylabel + (" (log scale)" if log_y else "")
    parts.append(
        f'<text x="14" y="{mt + ph / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {mt + ph / 2})">{esc(ylab)}</text>'
    )
    parts.append(
        f'<text x="{ml}" y="{mt - 10}" font-size="13" font-weight="bold">{esc(title)}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def svg_lines(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    xlim: tuple[float, float] | None = None,
    ylim: tuple[float, float] | None = None,
    width: int = 640,
    height: int = 360,
) -> str:
    """Line plot of several ``{label: (x, y)}`` series as inline SVG (e.g. a frontier)."""
    palette = ["#1f5fa0", "#c0392b", "#27864a", "#8e44ad", "#d68910", "#555555"]
    ml, mr, mt, mb = 60, 150, 30, 45
    pw, ph = width - ml - mr, height - mt - mb
    allx = np.concatenate([np.asarray(x, float) for x, _ in series.values()])
    ally = np.concatenate([np.asarray(y, float) for _, y in series.values()])
    x0, x1 = xlim or (float(np.nanmin(allx)), float(np.nanmax(allx)))
    y0, y1 = ylim or (float(np.nanmin(ally)), float(np.nanmax(ally)))
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = y1 if y1 > y0 else y0 + 1

    def sx(x):
        return ml + (np.asarray(x, float) - x0) / (x1 - x0) * pw

    def sy(y):
        return mt + ph - (np.asarray(y, float) - y0) / (y1 - y0) * ph

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{esc(title)}">',
        f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="#fafbfd" stroke="#ccd"/>',
    ]
    for i, (label, (x, y)) in enumerate(series.items()):
        x = np.asarray(x, float)
        y = np.asarray(y, float)
        if x.size > 2000:  # thin long curves; the picture does not change
            idx = np.unique(np.linspace(0, x.size - 1, 2000).astype(int))
            x, y = x[idx], y[idx]
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(sx(x), sy(y), strict=True))
        col = palette[i % len(palette)]
        parts.append(f'<polyline fill="none" stroke="{col}" stroke-width="1.8" points="{pts}"/>')
        ly = mt + 14 + 16 * i
        parts.append(
            f'<line x1="{ml + pw + 10}" x2="{ml + pw + 28}" y1="{ly - 4}" y2="{ly - 4}" '
            f'stroke="{col}" stroke-width="2"/><text x="{ml + pw + 32}" y="{ly}" '
            f'font-size="11">{esc(label)}</text>'
        )
    for t in _ticks(x0, x1):
        parts.append(
            f'<text x="{float(sx(t)):.1f}" y="{mt + ph + 16}" font-size="11" '
            f'text-anchor="middle">{t:.3g}</text>'
        )
    for t in _ticks(y0, y1):
        parts.append(
            f'<text x="{ml - 6}" y="{float(sy(t)) + 4:.1f}" font-size="11" '
            f'text-anchor="end">{t:.3g}</text>'
        )
    parts.append(
        f'<text x="{ml + pw / 2}" y="{height - 8}" font-size="12" '
        f'text-anchor="middle">{esc(xlabel)}</text>'
        f'<text x="14" y="{mt + ph / 2}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {mt + ph / 2})">{esc(ylabel)}</text>'
        f'<text x="{ml}" y="{mt - 10}" font-size="13" font-weight="bold">{esc(title)}</text>'
        "</svg>"
    )
    return "".join(parts)


def render(title: str, sections: Sequence[tuple[str, str]], provenance: Mapping | None) -> str:
    """Assemble a complete HTML page from ``(heading, html)`` sections."""
    body = [f"<h1>{esc(title)}</h1>"]
    for heading, content in sections:
        body.append(f"<h2>{esc(heading)}</h2>\n{content}")
    if provenance:
        versions = provenance.get("versions", {})
        body.append("<h2>How this report was produced</h2>")
        body.append(f"<p>Command:</p><pre>{esc(provenance.get('command', ''))}</pre>")
        body.append(
            table(sorted(versions.items()), header=("package", "version"))
            + f"<p class='note'>Created {esc(provenance.get('created', ''))}.</p>"
        )
        body.append(
            "<details><summary>Full provenance (JSON)</summary><pre>"
            + esc(json.dumps(provenance, indent=2, default=str))
            + "</pre></details>"
        )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


_SUMMARY_LABELS = {
    "n_records": "records",
    "n_cells": "key combinations (cells)",
    "n_sample_uniques": "sample uniques",
    "expected_reidentifications": "expected re-identifications",
    "expected_reidentification_rate": "expected re-identification rate",
    "tau1": "τ1: sample uniques that are population uniques",
    "tau2": "τ2: expected correct matches among sample uniques",
    "n_above_benchmark": "records above the benchmark rule",
    "n_above_threshold": "records above the risk threshold",
    "max_risk": "largest record risk",
    "n_households": "households",
    "household_expected_reidentifications": "household expected re-identifications (records)",
    "household_expected_reidentified_households": "expected re-identified households",
}


def assessment_report(result, md, summary: Mapping[str, Any], top: int = 20) -> str:
    """The ``report.html`` of ``sdcbayes assess``.

    Sections: file-level risk (with the truth for the demo sample), data and key
    summary, model, the per-record risk distribution, the riskiest key
    combinations (cell level only: no raw records), household risk and the
    provenance (command and versions).
    """
    truth = summary.get("truth") or {}
    rows = []
    for key, label in _SUMMARY_LABELS.items():
        if key not in summary:
            continue
        row = [label, summary[key]]
        lo_hi = summary.get(f"{key}_interval")
        row.append(lo_hi if lo_hi is not None else "")
        row.append(truth.get(key, "") if truth else "")
        rows.append(row)
    header = ["quantity", "estimate", "90% interval", "truth" if truth else ""]
    sections = [
        (
            "File-level risk",
            table(rows, header=header)
            + "<p class='note'>Expected re-identifications is the sum of per-record risks "
            "r<sub>i</sub> = E(1/F<sub>k</sub> | f<sub>k</sub>) (sdcMicro's global risk). "
            "τ1 and τ2 are defined in DESIGN.md (Notation).</p>",
        )
    ]
    ds = md.summary()
    key_rows = [(k, v) for k, v in ds.items() if not isinstance(v, (dict, list))]
    levels = ds.get("key_levels") or ds.get("keys")
    sections.append(
        (
            "Data and keys",
            f"<p>Source: <code>{esc(summary.get('data', ''))}</code></p>"
            + table(key_rows, header=("item", "value"))
            + (
                "<p>Key variables and their numbers of levels:</p>"
                + table(list(levels.items()), header=("key", "levels"))
                if isinstance(levels, dict)
                else ""
            ),
        )
    )
    sections.append(
        (
            "Model",
            f"<p><b>{esc(summary.get('model'))}</b> — {esc(summary.get('method', ''))}.</p>"
            "<p>Benedetti-Franconi individual risk: with an improper prior on cell "
            "probabilities, F<sub>k</sub> − f<sub>k</sub> | f<sub>k</sub> is negative binomial "
            "with success probability p<sub>k</sub>, estimated by f<sub>k</sub>/F̂<sub>k</sub> "
            "(Polettini, seed 004, eq. 1–3). This plug-in is known to understate risk badly "
            "on real files (VALIDATION_NOTES); use a posterior model for honest intervals.</p>",
        )
    )
    risk = result.records["risk"].to_numpy()
    plots = svg_histogram(
        risk,
        bins=np.linspace(0, 1, 41),
        title="Per-record risk",
        xlabel="risk r = E(1/F | f)",
        log_y=True,
        markers={"0.1": 0.1},
    )
    sections.append(("Per-record risk distribution", plots))
    cells = result.cells.sort_values("risk", ascending=False).head(top)
    show = [c for c in cells.columns if c not in ("cell",)]
    sections.append(
        (
            f"The {len(cells)} riskiest key combinations",
            table(cells[show].itertuples(index=False, name=None), header=show)
            + "<p class='note'>Cell level only; no raw records are shown.</p>",
        )
    )
    if "household_risk" in result.records:
        sections.append(
            (
                "Household risk",
                svg_histogram(
                    result.records["household_risk"].to_numpy(),
                    bins=np.linspace(0, 1, 41),
                    title="Household risk per record: 1 − Π(1 − r_i)",
                    xlabel="household risk",
                    log_y=True,
                ),
            )
        )
    return render(
        f"Disclosure-risk assessment — {summary.get('model')}",
        sections,
        summary.get("provenance"),
    )
