"""Self-contained HTML reports (plots as inline SVG; no scripts, no network).

A statistical office sends ``report.html`` around by e-mail, so the page holds
everything: CSS inline, plots as inline SVG drawn here (no matplotlib import,
which keeps closed-form runs fast), and the exact command and versions.
"""

from __future__ import annotations

import html
import json
import math
import re
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
.warn{border:1px solid #e0b252;border-left:6px solid #c0392b;background:#fff7e6;
padding:.5em 1em;margin:1em 0;border-radius:3px}
.warn p{margin:.2em 0;font-weight:bold;color:#8a1f11}
.warn ul{margin:.3em 0 .2em 1.2em;padding:0}
.info{border:1px solid #ccd;border-left:6px solid #4a78a8;background:#f4f7fb;
padding:.5em 1em;margin:1em 0;border-radius:3px}
.info p{margin:.2em 0;font-weight:bold}
.info ul{margin:.3em 0 .2em 1.2em;padding:0}
dl.defs dt{font-weight:bold;margin-top:.4em}
dl.defs dd{margin:0 0 0 1.5em}
"""


def esc(value: Any) -> str:
    """HTML-escape ``str(value)``."""
    return html.escape(str(value), quote=True)


class Html(str):
    """Text that is already HTML: :func:`fmt` (and so :func:`table`) passes it through.

    Lets a caller put rendered markup (e.g. a key-aware setting value) in a table cell
    without it being escaped a second time.
    """


MISSING = "–"  # what a table shows for None, NaN, pandas NA and empty lists


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (float, np.floating)) and math.isnan(float(value)):
        return True
    # pandas.NA / NaT without importing pandas (closed-form runs stay light)
    return type(value).__name__ in ("NAType", "NaTType")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _nested(value: Any, digits: int) -> str:
    """``fmt`` of a value inside a list or mapping: compound values in parentheses."""
    text = fmt(value, digits)
    compound = (isinstance(value, Mapping) and len(value) > 0) or (
        isinstance(value, (list, tuple, set, frozenset, np.ndarray))
        and len(value) > 1
        and not _is_interval(value)
    )
    return f"({text})" if compound else text


def _is_interval(value: Any) -> bool:
    return (
        isinstance(value, (list, tuple, np.ndarray))
        and len(value) == 2
        and all(_is_number(v) or _is_missing(v) for v in value)
    )


def _mapping_text(d: Mapping[Any, Any], digits: int) -> str:
    """A mapping as readable text: ``4: 5.012, 8: 10`` or ``Gamma(alpha=0.25, beta=0.25)``.

    A prior (a mapping with a ``dist`` entry) reads as the distribution with its
    parameters; anything else as ``key: value`` pairs.
    """
    if not d:
        return MISSING
    dist = d.get("dist") if isinstance(d.get("dist"), str) else None
    if dist is not None:
        args = ", ".join(f"{esc(k)}={_nested(v, digits)}" for k, v in d.items() if k != "dist")
        return f"{esc(dist)}({args})"
    return ", ".join(f"{esc(k)}: {_entry_text(k, v, digits)}" for k, v in d.items())


def _is_seed(key: Any, value: Any) -> bool:
    """A seed (a setting named ``seed``, ``random_seed``, …): shown as its plain digits."""
    return "seed" in str(key).lower() and isinstance(value, (int, np.integer)) \
        and not isinstance(value, (bool, np.bool_))


def _entry_text(key: Any, value: Any, digits: int) -> str:
    """One entry of a mapping, as text.

    A seed without thousands separators (it is copied into ``--seed``), empty
    ``priors`` as "defaults", anything else as :func:`_nested`.
    """
    if _is_seed(key, value):
        return str(int(value))
    if str(key) == "priors" and (value is None or (isinstance(value, Mapping) and not value)):
        return "defaults"
    return _nested(value, digits)


def fmt(value: Any, digits: int = 4) -> str:
    """Format a value for a table cell as HTML-safe text, never a Python repr.

    Parameters
    ----------
    value : Any
        Integers print plainly with thousands separators, floats to ``digits``
        significant digits; ``None``, NaN and empty containers as "–", infinities as
        "∞"; a pair of numbers as an interval ``[lo, hi]``, both bounds in one
        format (:func:`_interval_text`); other lists as
        comma-separated items; mappings as ``key: value`` pairs (a prior, a mapping
        with ``dist``, as ``Dist(a=1, b=2)``); :class:`Html` unchanged.
    digits : int, optional
        Significant digits of floats.

    Returns
    -------
    str
        Escaped text, safe to put between tags.
    """
    if isinstance(value, Html):
        return str(value)
    if _is_missing(value):
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v != 0 and (abs(v) >= 1e9 or abs(v) < 1e-3):
            return f"{v:.{digits - 1}e}"
        if abs(v) >= 1000:
            return f"{v:,.0f}" if float(v).is_integer() else f"{v:,.1f}"
        if float(v).is_integer():
            return f"{v:.{max(digits - 3, 1)}f}"
        return f"{v:.{digits}g}"
    if isinstance(value, str):
        return esc(value)
    if isinstance(value, Mapping):
        return _mapping_text(value, digits)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple, set, frozenset)):
        if _is_interval(value):
            return _interval_text(value[0], value[1], digits)
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return ", ".join(_nested(v, digits) for v in items) if items else MISSING
    if isinstance(value, np.generic):  # other numpy scalars (str_, datetime64, ...)
        return esc(value.item())
    return esc(value)


def _decimals(text: str) -> int:
    """Digits after the decimal point of a fixed-point number's text ("212.0" -> 1)."""
    return len(text.split(".", 1)[1]) if "." in text else 0


def _interval_text(lo: Any, hi: Any, digits: int = 4) -> str:
    """An interval ``[lo, hi]`` whose two bounds share one format.

    :func:`fmt` of each bound alone would mix precisions ("[212.0, 226]" for 212 and
    225.996): here both bounds take the decimals of the more precise one, or both
    scientific notation when either needs it. Two whole numbers stay as :func:`fmt`
    writes them; a missing or infinite bound as "–" or "∞".
    """
    finite = [float(v) for v in (lo, hi)
              if _is_number(v) and not _is_missing(v) and math.isfinite(float(v))]
    if len(finite) < 2 or all(isinstance(v, (int, np.integer)) for v in (lo, hi)):
        return f"[{fmt(lo, digits)}, {fmt(hi, digits)}]"
    if any(v != 0 and (abs(v) >= 1e9 or abs(v) < 1e-3) for v in finite):
        a, b = ("0" if v == 0 else f"{v:.{digits - 1}e}" for v in finite)
    else:
        d = max(_decimals(fmt(v, digits)) for v in finite)
        a, b = (f"{v:,.{d}f}" for v in finite)
    return f"[{a}, {b}]"


def _estimate_interval_text(value: Any, lo: Any, hi: Any, digits: int = 4) -> str:
    """An estimate and its interval, ``48.00 [41.93, 54.38]``, all three in one format.

    The estimate takes the interval's decimals (:func:`_interval_text`), so that a mean
    of 48.0004 beside two-decimal bounds does not read "48", like a whole count; and
    scientific notation where the interval has it. A whole-number interval (τ1's
    quantiles of counts, ``[8, 19]``) leaves the estimate as :func:`fmt` writes it, as
    does a missing or infinite estimate or bound.
    """
    return " ".join(_estimate_interval_parts(value, lo, hi, digits))


def _estimate_interval_parts(value: Any, lo: Any, hi: Any, digits: int = 4) -> tuple[str, str]:
    """The estimate's text and its interval's, in one format (see :func:`_estimate_interval_text`).

    For tables that put the two in separate columns (assess's file-level risk): "101.21"
    beside "[94.78, 108.07]", not "101.2".
    """
    interval = _interval_text(lo, hi, digits)
    if not _is_number(value) or _is_missing(value) or not math.isfinite(float(value)) \
            or isinstance(value, (bool, np.bool_)):
        return fmt(value, digits), interval
    bounds = interval[1:-1].split(", ")
    v = float(value)
    if len(bounds) != 2 or not all(_looks_numeric(b) for b in bounds):
        return fmt(value, digits), interval
    if any("e" in b for b in bounds):
        text = "0" if v == 0 else f"{v:.{digits - 1}e}"
    else:
        d = max(_decimals(b) for b in bounds)
        if d == 0 and not float(v).is_integer():
            # whole-number bounds of counts: the mean keeps fmt's decimals
            return fmt(value, digits), interval
        text = f"{v:,.{d}f}"
    return text, interval


def _looks_numeric(text: str) -> bool:
    """A bound as :func:`_interval_text` writes a finite number ("1,234.5", "3.1e-05")."""
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def percent(share: Any, digits: int = 3) -> str:
    """A share (a fraction such as 0.004) as a percentage: ``0.4%``, ``12.5%``, ``0.004%``.

    The one format of percentages in the reports and on the console: ``digits``
    significant digits (at least the units), trailing zeros dropped, never rounded
    to 0% unless the share is 0, never in scientific notation. None/NaN give "–".
    """
    if _is_missing(share):
        return MISSING
    v = 100 * float(share)
    if math.isinf(v):
        return ("∞" if v > 0 else "−∞") + "%"
    if v == 0:
        return "0%"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    text = f"{v:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}%"


def _percent_cell(value: Any) -> Any:
    """A share as a table cell in percent (see :func:`percent`); an interval as ``[lo, hi]``."""
    if _is_interval(value):
        lo, hi = value
        return Html(f"[{percent(lo)}, {percent(hi)}]")
    if value is None or value == "":
        return value
    return Html(percent(value)) if _is_number(value) else value


def key_value(value: Any) -> Html:
    """A key code as text, as the input and the CSV files write it.

    A code read as a float because its column has missing values (3.0) shows as 3;
    a missing value shows as "–" (:data:`MISSING`); anything else as its text.
    """
    if _is_missing(value):
        return Html(MISSING)
    if isinstance(value, (float, np.floating)) and float(value).is_integer() \
            and abs(float(value)) < 2**53:
        return Html(esc(int(value)))
    if isinstance(value, (np.generic,)):
        value = value.item()
    return Html(esc(value))


def setting_text(key: Any, value: Any) -> str:
    """A parameter or setting as plain ``key=value`` text (JSON-like values, no reprs).

    Lists as ``[a, b]``, mappings as ``{"a": 1}``; a seed as its plain digits.
    """
    return f"{key}={json.dumps(_json_plain(value), ensure_ascii=False)}" \
        if not isinstance(value, str) else f"{key}={value}"


def _json_plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset, np.ndarray)):
        return [_json_plain(v) for v in (value.tolist() if isinstance(value, np.ndarray)
                                         else value)]
    if isinstance(value, np.generic):
        return value.item()
    if _is_missing(value):
        return None
    return value


def setting(key: Any, value: Any) -> Html:
    """A setting's value as :class:`Html`, reading lists by the setting's name.

    Only a setting named as an interval (``..._interval``) shows a pair of numbers as
    ``[lo, hi]``; any other list (e.g. ``cv_ratios``) is its comma-separated items,
    so that two ratios do not read as an interval.
    """
    if _is_seed(key, value):
        return Html(str(int(value)))
    if isinstance(value, (list, tuple, np.ndarray)) and "interval" not in str(key):
        items = list(value)
        return Html(", ".join(_nested(v, 4) for v in items) if items else MISSING)
    return Html(fmt(value))


def table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None) -> str:
    """An HTML table; numeric cells are right-aligned."""
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        cells = []
        for v in row:
            cls = ' class="num"' if _is_number(v) or isinstance(v, _Number) else ""
            cells.append(f"<td{cls}>{fmt(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def dict_table(d: Mapping[str, Any], header: Sequence[str] = ("quantity", "value")) -> str:
    """A two-column table of a mapping; nested values read as text (see :func:`setting`)."""
    return table([(k, v if _is_number(v) and not _is_seed(k, v) else setting(k, v))
                  for k, v in d.items()],
                 header=header)


# Keys of a summary (at any depth) whose lists are warnings for the top of the page;
# notes (a list, or one string such as diagnostics.note on exact results) go in a box
# under them.
_WARNING_KEYS = ("problems", "warnings")
_NOTE_KEYS = ("notes", "note")


def _collect(summary: Any, keys: Sequence[str]) -> list[str]:
    """The strings under ``keys`` anywhere in ``summary``, in order, without repeats.

    Walks nested mappings (not the provenance, which records inputs, not findings);
    a value may be one string or a list of them. Texts are taken as they are, so a
    new kind of problem shows without changes here.
    """
    found: list[str] = []

    def walk(node: Any) -> None:
        if not isinstance(node, Mapping):
            return
        for k, v in node.items():
            if k == "provenance":
                continue
            if k in keys:
                items = [v] if isinstance(v, str) else (v if isinstance(v, (list, tuple)) else [])
                found.extend(str(x) for x in items if x is not None and str(x).strip())
            elif isinstance(v, Mapping):
                walk(v)

    walk(summary)
    return list(dict.fromkeys(found))


def message_box(items: Sequence[str], title: str, kind: str = "warn") -> str:
    """A styled box with ``title`` and the escaped ``items`` as a list ("" when empty).

    Parameters
    ----------
    items : sequence of str
        Plain-text messages; each is HTML-escaped.
    title : str
        The box's heading line.
    kind : {"warn", "info"}
        ``warn``: red-edged warning box; ``info``: a neutral note box.
    """
    if not items:
        return ""
    lis = "".join(f"<li>{esc(m)}</li>" for m in items)
    role = " role='alert'" if kind == "warn" else ""
    return f"<div class='{kind}'{role}><p>{esc(title)}</p><ul>{lis}</ul></div>"


def summary_boxes(summary: Mapping[str, Any]) -> str:
    """Warning and note boxes for every warning/note list ``summary`` carries."""
    warn = _collect(summary, _WARNING_KEYS)
    notes = _collect(summary, _NOTE_KEYS)
    return message_box(
        warn,
        f"{len(warn)} warning{'s' if len(warn) != 1 else ''}: read before using these numbers",
    ) + message_box(notes, "Notes", kind="info")


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
    markers: Sequence[str] = (),
) -> str:
    """Line plot of several ``{label: (x, y)}`` series as inline SVG (e.g. a frontier).

    The series named in ``markers`` also get a dot at every point (a series of one point
    has no line).
    """
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
        if label in markers:
            parts.extend(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3.5" fill="{col}"/>'
                         for a, b in zip(sx(x), sy(y), strict=True))
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


#: The sources the reports cite, by their inline short form: a regular expression
#: matching the short citation in the page's HTML, and the full reference listed once
#: under "References" (:func:`references_section`). These are the papers of the
#: project's reference folder (seeds 000-004); a reader outside the project can look
#: them up by these references, not by the folder's file names.
REFERENCES: tuple[tuple[str, str], ...] = (
    (r"Mokken et al\.",
     "Mokken, R.J., Kooiman, P., Pannekoek, J. and Willenborg, L.C.R.J. (1992). Disclosure "
     "risks for microdata. <i>Statistica Neerlandica</i> 46(1), 49–67."),
    (r"Templ et al\.",
     "Templ, M., Meindl, B., Kowarik, A. and Chen, S. (2014). Introduction to Statistical "
     "Disclosure Control (SDC). IHSN Working Paper No. 007, International Household Survey "
     "Network."),
    (r"Nayak (?:&amp;|&|and) Zhang|Nayak-Zhang",
     "Nayak, T. and Zhang, C. (2015). Measuring identification risk in microdata release "
     "and its control by post-randomization. The George Washington University."),
    (r"Zaslavsky (?:&amp;|&|and) Horton",
     "Zaslavsky, A.M. and Horton, N.J. (1998). Balancing disclosure risk against the loss "
     "of nonpublication. <i>Journal of Official Statistics</i> 14(4), 411–419."),
    (r"Polettini",
     "Polettini, S. A note on the individual risk of disclosure. ISTAT (EU project CASC, "
     "Computational Aspects of Statistical Confidentiality)."),
)


def references_section(html_text: str) -> str:
    """The "References" list of the sources ``html_text`` cites ("" when none).

    Only the references whose short form (:data:`REFERENCES`) occurs in the page, in
    the order of :data:`REFERENCES`, so that each report lists what it cites and
    nothing else.
    """
    cited = [full for pattern, full in REFERENCES if re.search(pattern, html_text)]
    if not cited:
        return ""
    return "<ul class='refs'>" + "".join(f"<li>{c}</li>" for c in cited) + "</ul>"


def render(title: str, sections: Sequence[tuple[str, str]], provenance: Mapping | None,
           summary: Mapping[str, Any] | None = None) -> str:
    """Assemble a complete HTML page from ``(heading, html)`` sections.

    With ``summary``, its warnings (e.g. the sampling diagnostics' ``problems``) and
    notes come first, in boxes under the title: a reader who stops at the headline
    numbers must still see that they are unreliable. The sources the page cites follow
    the sections under "References" (:func:`references_section`), before the
    provenance.
    """
    body = [f"<h1>{esc(title)}</h1>"]
    if summary:
        boxes = summary_boxes(summary)
        if boxes:
            body.append(boxes)
    for heading, content in sections:
        body.append(f"<h2>{esc(heading)}</h2>\n{content}")
    refs = references_section("\n".join(body))
    if refs:
        body.append(f"<h2>References</h2>\n{refs}")
    if provenance:
        versions = provenance.get("versions", {})
        body.append("<h2>How this report was produced</h2>")
        body.append(f"<p>Command:</p><pre>{esc(provenance.get('command', ''))}</pre>")
        settings = provenance.get("settings")
        if isinstance(settings, Mapping) and settings:
            body.append("<p>Settings:</p>" + dict_table(settings, header=("setting", "value")))
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


#: Summary fields that count records (their intervals are quantiles of a count: shown
#: as whole numbers, [6, 19]).
_COUNT_FIELDS = frozenset({"tau1", "n_above_benchmark", "n_above_threshold",
                           "population_uniques", "n_sample_uniques"})


class _Number(Html):
    """A number already formatted (escaped text): :func:`table` right-aligns it as a number."""


#: Summary fields that are shares: shown in percent (:func:`percent`).
_PERCENT_FIELDS = frozenset({"expected_reidentification_rate"})

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
    "median_risk": "median record risk (the benchmark rule's centre)",
    "n_households": "households",
    "household_expected_reidentifications": "household expected re-identifications (records)",
    "household_expected_reidentified_households": "expected re-identified households",
}


def global_threshold_row(summary: Mapping[str, Any]) -> tuple[str, str]:
    """Label and value of ``--max-global-risk``'s row (sdcMicro's global threshold).

    One wording for the terminal (``sdcbayes.cli``) and report.html: the threshold and
    the records above it, or why there is none to give.
    """
    t, n_above = summary["global_threshold"], summary["n_above_global_threshold"]
    label = f"global threshold for a rate < {percent(summary['max_global_risk'])}"
    if t is None or math.isnan(t):  # sdcMicro's NA: nothing to protect
        # the rate of the risks the threshold was computed on (for the posterior models the
        # mean of the posterior-mean risks, not the predictive mean of ER / n)
        return label, (f"none needed: the rate, {percent(summary['rate_at_global_threshold'])}"
                       ", is below it already")
    what = summary["global_threshold_risk"]
    if t == 0:  # no risk value of the file is below the target
        return label, (f"0: every record's risk is at or above the target; all {n_above:,} "
                       f"records with a risk above 0 are to be protected ({what})")
    return label, f"{t:.4g}: protect the {n_above:,} records above it ({what})"


_MODEL_TEXT = {
    "closed-form": (
        "Benedetti-Franconi individual risk: with an improper prior on cell probabilities, "
        "F<sub>k</sub> − f<sub>k</sub> | f<sub>k</sub> is negative binomial with success "
        "probability p<sub>k</sub>, estimated by f<sub>k</sub>/F̂<sub>k</sub> (Polettini, "
        "eq. 1–3). This plug-in is known to understate risk badly on real files. Its "
        "intervals, where given, are predictive given the plug-in p̂<sub>k</sub>: they leave "
        "out the uncertainty about p<sub>k</sub>; use a posterior model for intervals that "
        "take it in."
    ),
    "poisson-gamma": (
        "Poisson-gamma superpopulation model (Bethlehem, Keller and Pannekoek 1990; Mokken et "
        "al. 1992, eq. 10–12): cell probabilities π<sub>k</sub> ~ Gamma(α, β), fitted with a "
        "full posterior on the sample counts of counts (empty cells included). Per-cell risks "
        "are the closed-form conditionals given each posterior draw, averaged over draws; "
        "file-level intervals include the randomness of the unknown F<sub>k</sub>."
    ),
    "negbin": (
        "Negative-binomial F | f (Benedetti-Franconi) with uncertain inclusion probabilities "
        "p<sub>k</sub>: logit p<sub>k</sub> is centred on logit(f<sub>k</sub>/F̂<sub>k</sub>) "
        "with a spread learnt from the within-cell variation of the weights."
    ),
    "latent-class": (
        "Latent-class superpopulation model (Dunson and Xing 2009; Manrique-Vallier and "
        "Reiter 2014): cell probabilities π<sub>k</sub> are a mixture, over a truncated "
        "Dirichlet process of classes, of products of one multinomial per key, so rare "
        "combinations borrow strength from the keys' joint structure; fitted by a Gibbs "
        "sampler started from EM fits. Under simple random sampling F<sub>k</sub> − "
        "f<sub>k</sub> is Poisson with mean (N − n)π<sub>k</sub>, or negative binomial when "
        "the cells are overdispersed around the mixture. This is the recommended model: far "
        "less biased than the closed form on real files, but its intervals are still too "
        "narrow (README, Accuracy)."
    ),
}


#: The two kinds of interval of a posterior assessment (risk/posterior_assess.py):
#: predictive (parameters and the unknown F_k) and over the parameters alone.
PREDICTIVE = "posterior predictive"
PARAMETERS_ONLY = "parameters' posterior"

# The quantities of the file-level table, defined here because the page travels alone.
_FILE_LEVEL_DEFINITIONS_HEAD = (
    "<p class='note'>Notation: k runs over the key combinations (cells); f<sub>k</sub> and "
    "F<sub>k</sub> are the numbers of sample and population records in cell k (F<sub>k</sub> "
    "is unknown); a sample unique is a record alone in its cell (f<sub>k</sub> = 1). "
    "Expectations and probabilities are under the model, given the sample.</p>"
    "<dl class='defs note'>"
    "<dt>per-record risk r<sub>i</sub></dt>"
    "<dd>E(1/F<sub>k</sub> | f<sub>k</sub>) for the cell k of record i: the chance that an "
    "intruder who matches the record's key values to a population register picks the right "
    "person.</dd>"
    "<dt>expected re-identifications</dt>"
    "<dd>Σ over records of E(1/F<sub>k</sub> | f<sub>k</sub>) = Σ<sub>i</sub> r<sub>i</sub> "
    "(sdcMicro's global risk); the rate divides it by the number of records.</dd>"
    "<dt>τ1</dt>"
    "<dd>Expected number of sample uniques that are also population uniques: Σ over sample "
    "uniques of P(F<sub>k</sub> = 1 | f<sub>k</sub> = 1).</dd>"
    "<dt>τ2</dt>"
    "<dd>Expected number of correct matches of sample uniques: Σ over sample uniques of "
    "E(1/F<sub>k</sub> | f<sub>k</sub> = 1).</dd>"
    "<dt>benchmark rule</dt>"
    "<dd>Records with r<sub>i</sub> &gt; 0.1 and r<sub>i</sub> &gt; median(r) + 2 MAD(r) "
    "(sdcMicro's rule; MAD scaled by 1.4826).</dd>"
    "<dt>household risk</dt>"
    "<dd>1 − Π(1 − r<sub>j</sub>) over the members j of the record's household: the chance "
    "that at least one member is re-identified. Household expected re-identifications "
    "(records) sums it over records, expected re-identified households over households.</dd>"
)


def interval_level_text(level: Any) -> str | None:
    """``"90%"`` for an ``interval_level`` of 0.9; None when the level is unknown.

    A result's intervals run from its first to its last quantile
    (``summary["interval_level"]``), so a report names that level, never a fixed one.
    """
    if not _is_number(level) or _is_missing(level):
        return None
    return percent(float(level))


def _interval_name(summary: Mapping[str, Any]) -> str:
    """The intervals' name for a header: ``"50% interval"``, or ``"interval"`` if unknown."""
    pct = interval_level_text(summary.get("interval_level"))
    return f"{pct} interval" if pct else "interval"


def _quantile_bounds(summary: Mapping[str, Any]) -> tuple[float, float] | None:
    qs = summary.get("quantiles")
    if isinstance(qs, (list, tuple)) and qs and all(_is_number(q) for q in qs):
        return float(min(qs)), float(max(qs))
    return None


def _file_level_definitions(summary: Mapping[str, Any], intervals: bool = True) -> str:
    """The notation and definitions under the file-level table, naming the run's level.

    ``intervals``: whether the table shows intervals (a closed form's without
    ``interval_kind``, or of a file that is its own population, does not). A closed form's
    intervals are defined as what they are, predictive given the plug-in
    (:func:`_plug_in_interval_definitions`).
    """
    if summary.get("model") == "closed-form":
        return _FILE_LEVEL_DEFINITIONS_HEAD + _plug_in_interval_definitions(
            summary, intervals) + "</dl>"
    if not intervals:
        return _FILE_LEVEL_DEFINITIONS_HEAD + "</dl>"
    bounds = _quantile_bounds(summary)
    what = (f"From the {fmt(bounds[0])} to the {fmt(bounds[1])} quantile of the posterior "
            "predictive distribution" if bounds is not None else "Posterior predictive")
    hh_pred = _household_predictive(summary)
    return (
        _FILE_LEVEL_DEFINITIONS_HEAD
        + f"<dt>{esc(_interval_name(summary))}</dt>"
        f"<dd>{what} for τ1, τ2 and the expected re-identifications"
        + (" and the household expected re-identifications (per drawn population the "
           "realised Σ 1 − Π(1 − 1/F<sub>k(j)</sub>) over the records' households)"
           if hh_pred else "")
        + f" (column “interval of”: {PREDICTIVE}): parameter uncertainty and the "
        "randomness of the unknown F<sub>k</sub>. The rows of the benchmark rule"
        + (" and the risk threshold are" if hh_pred
           else ", the risk threshold and the households are")
        + f" over the {PARAMETERS_ONLY} only: per posterior draw a count or a "
        "sum over the records' risks r<sub>i</sub>(θ), without the randomness of "
        "F<sub>k</sub>, so narrower than a predictive interval (posterior models only; the "
        "closed form gives point estimates).</dd>"
        "<dt>estimate</dt>"
        "<dd>The posterior mean; for τ1, τ2 and the expected re-identifications the mean "
        "over the posterior of their expectation given the parameters (Rao-Blackwellised). "
        "A mean is no quantile, so an estimate can lie outside its own interval: with "
        "skewed draws, or for a count whose predictive interval holds whole numbers only "
        "(τ1 = 0.00001 with the interval [0, 0]: a sample unique almost surely not unique "
        "in the population). "
        "The same holds for the risks of records.csv and of the cells below against their "
        "risk_lo and risk_hi.</dd>"
        "</dl>"
    )


#: The "interval of" column of a closed form's rows (its summary's ``interval_kind``,
#: risk.assess.PLUG_IN_INTERVAL_KIND, shortened).
PLUG_IN_PREDICTIVE = "predictive given the plug-in p̂ (no parameter uncertainty)"


def _plug_in_interval_definitions(summary: Mapping[str, Any], intervals: bool) -> str:
    """The closed form's interval and estimate, defined (entries of the definitions list).

    Its intervals (``assess --model closed-form``; risk.assess.plug_in_predictive) draw
    the unknown F_k given the plug-in p̂_k, as compare's closed-form row's; where every
    p̂_k is 1 there is none, and ``interval_note`` says why.
    """
    note = summary.get("interval_note")
    if not intervals:
        return (f"<dt>interval</dt><dd>{esc(note)}.</dd>" if note else "")
    bounds = _quantile_bounds(summary)
    what = (f"From the {fmt(bounds[0])} to the {fmt(bounds[1])} quantile"
            if bounds is not None else "The quantiles")
    n = summary.get("plug_in_draws")
    over = f" over {n:,} replicates" if isinstance(n, int) else ""
    hh = ("; the household rows: per drawn population the realised Σ 1 − Π(1 − "
          "1/F<sub>k(j)</sub>) over the records' households"
          if "household_expected_reidentifications_interval" in summary else "")
    return (
        f"<dt>{esc(_interval_name(summary))}</dt>"
        f"<dd>{what}{esc(over)} of the population counts drawn given the plug-in: "
        "F<sub>k</sub> − f<sub>k</sub> ~ NegBin(f<sub>k</sub>, p̂<sub>k</sub>), "
        "p̂<sub>k</sub> = f<sub>k</sub>/F̂<sub>k</sub>, independently per cell, and in each "
        "drawn population the realised τ1 (sample uniques with F<sub>k</sub> = 1), τ2 "
        "(Σ 1/F<sub>k</sub> over them) and re-identifications Σ f<sub>k</sub>/F<sub>k</sub>"
        f"{hh} (column “interval of”: {esc(PLUG_IN_PREDICTIVE)}). The randomness of the "
        "unknown F<sub>k</sub> only: p̂<sub>k</sub> is taken as known, so the interval is "
        "narrower than one that took its uncertainty in (a posterior model's). The same "
        "draws as "
        "<code>sdcbayes compare</code>'s closed-form row for the same seed. The rows of the "
        "benchmark rule and the risk threshold have none (their risks are fixed).</dd>"
        "<dt>estimate</dt>"
        "<dd>The closed form's: E(1/F<sub>k</sub> | f<sub>k</sub>) at p̂<sub>k</sub>, the "
        "mean of the draws above; with method approx sdcMicro's approximation of it, which "
        "can lie off the draws' centre (the interval is that of the same draws: the "
        "realised counts need no formula).</dd>"
    )


#: The benchmark rule flags records above max(0.1, median + 2 MAD): once the median
#: record is above this, the rule flags only outliers of a risky file.
BENCHMARK_RISK = 0.1


def benchmark_caveat(summary: Mapping[str, Any], command_line: bool = False) -> str | None:
    """The caveat on the benchmark-rule count when most records are risky, else None.

    Shared by the terminal summary of ``sdcbayes assess`` and :func:`assessment_report`
    so that the two cannot say different things.

    Parameters
    ----------
    summary : mapping
        A result's summary (``median_risk``; no caveat when ``n_above_threshold`` is
        there: that count already shows every risky record).
    command_line : bool
        Name the fix as the command-line option (``--threshold 0.1``) rather than the
        Python keyword (``threshold=0.1``).

    Returns
    -------
    str or None
    """
    median = summary.get("median_risk")
    if "n_above_threshold" in summary or not _is_number(median) or not median > BENCHMARK_RISK:
        return None
    fix = (f"--threshold {BENCHMARK_RISK:g}" if command_line
           else f"threshold={BENCHMARK_RISK:g}")
    return (f"median risk {median:.2f} > {BENCHMARK_RISK:g}: the benchmark rule flags only "
            f"outliers; {fix} counts every risky record")


# Columns of the riskiest-cells table, explained when present.
_CELL_COLUMNS = {
    "fk": "the number of sample records in the cell (f<sub>k</sub>)",
    "Fk_hat": "F̂<sub>k</sub>, the sum of the cell's weights (estimated population count)",
    "f_exact": "records in the cell counting missing key values exactly",
    "risk": "E(1/F<sub>k</sub> | f<sub>k</sub>), the risk of each record in the cell",
    "p_unique": "P(F<sub>k</sub> = 1 | f<sub>k</sub> = 1), sample uniques only",
    "F_mean": "posterior predictive mean of F<sub>k</sub>",
}


#: Riskiest-cells columns that count records: whole numbers, shown without ".0".
_CELL_COUNT_COLUMNS = frozenset({"fk", "f_exact", "F_lo", "F_hi"})

#: Cell columns whose _lo/_hi are quantiles over the parameters' posterior of a
#: conditional given the parameters (not predictive); F_lo/F_hi are predictive.
_PARAMETER_ONLY_COLUMNS = ("risk", "p_unique")

#: File-level rows whose interval is over the parameters' posterior only: a count or
#: sum over the records' risks r_i(θ) per draw (risk/posterior_assess.py). The household
#: row's is predictive where ``household_interval_kind`` says so (:func:`_household_predictive`;
#: a summary.json from before it was has no kind and an interval over the parameters).
_PARAMETER_ONLY_ROWS = frozenset(
    {"n_above_benchmark", "n_above_threshold", "household_expected_reidentifications",
     "household_expected_reidentified_households"})
#: The household rows whose interval's kind ``household_interval_kind`` gives.
_HOUSEHOLD_ROWS = frozenset(
    {"household_expected_reidentifications", "household_expected_reidentified_households"})


def _household_predictive(summary: Mapping[str, Any]) -> bool:
    """Whether a summary's household ER interval is posterior predictive (its kind says so)."""
    return str(summary.get("household_interval_kind") or "").startswith("predictive")


def _cell_columns_note(columns: Sequence[str], interval: str = "interval") -> str:
    """The riskiest-cells table's columns explained, each interval with its kind.

    ``risk_lo``/``risk_hi`` and ``p_unique_lo``/``p_unique_hi`` are quantiles over the
    parameters' posterior of the cell's conditional risk given the parameters;
    ``F_lo``/``F_hi`` are quantiles of the posterior predictive of F_k.
    """
    items = [f"{esc(c)}: {_CELL_COLUMNS[c]}" for c in columns if c in _CELL_COLUMNS]
    names = [str(c) for c in columns]
    bounded = [c[:-3] for c in names if c.endswith("_lo") and f"{c[:-3]}_hi" in names]
    given = [b for b in bounded if b in _PARAMETER_ONLY_COLUMNS]
    if given:
        items.append(
            ", ".join(f"{esc(b)}_lo, {esc(b)}_hi" for b in given)
            + f": the bounds of the {esc(interval)} over the {PARAMETERS_ONLY} only (the "
            "quantiles over θ of the cell's E(1/F<sub>k</sub> | f<sub>k</sub>, θ) and "
            "P(F<sub>k</sub> = 1 | f<sub>k</sub> = 1, θ), without the randomness of "
            "F<sub>k</sub>); risk and p_unique are posterior means and can lie outside "
            "them when the draws are skewed")
    if "F" in bounded:
        items.append(f"F_lo, F_hi: the bounds of the {esc(interval)} of the {PREDICTIVE} "
                     "distribution of F<sub>k</sub>")
    other = [c for c in names if c.endswith(("_lo", "_hi"))
             and c[:-3] not in (*given, *(["F"] if "F" in bounded else []))]
    if other:
        items.append(f"{esc(', '.join(other))}: the bounds of the {esc(interval)}")
    return "<p class='note'>Columns: " + "; ".join(items) + ".</p>" if items else ""


def _cv_parts_text(ratios) -> str:
    """'a quarter or an eighth' from the cross-validation's ratios ([4, 8]; [2] = halves)."""
    names = {2: "a half", 3: "a third", 4: "a quarter", 8: "an eighth"}
    if not isinstance(ratios, list) or not ratios:
        return "part"
    words = [names.get(r, f"1/{r}") if isinstance(r, int) else str(r) for r in ratios]
    return " or ".join(words)


#: Fields of ``summary["overdispersion"]`` holding kappa values, where JSON's null
#: stands for kappa = ∞ (Poisson cells); elsewhere null means "does not apply".
_KAPPA_FIELDS = ("kappa_median", "kappa_interval", "cv_kappa_median_by_ratio")


def _kappa_infinite(od: Mapping[str, Any]) -> dict[str, Any]:
    """``od`` with the null kappas read as ∞, every other null left missing ("–")."""

    def inf(v: Any) -> Any:
        if v is None:
            return math.inf
        if isinstance(v, Mapping):
            return {k: inf(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [inf(x) for x in v]
        return v

    return {k: inf(v) if k in _KAPPA_FIELDS else v for k, v in od.items()}


#: Readable labels of ``summary["overdispersion"]``'s fields (risk/posterior_assess.py
#: writes them; the cross-validation's are models/latent_class.py's ``cv_kappa``).
_OVERDISPERSION_LABELS = {
    "method": "how kappa is set (cv: cross-validation)",
    "kappa_median": "kappa, posterior median",
    "kappa_interval": "kappa, interval",
    "share_poisson": "share of draws with Poisson cells (kappa ∞)",
    "cv_observed_uniques": "held-out sample uniques, observed",
    "cv_predicted_uniques_poisson": "held-out sample uniques that Poisson cells predict",
    "kappa_prior": "prior of kappa",
    "cv_parts_fit": "how the mixture is fitted to each part",
    "cv_splits": "random partitions of the records per part size",
    "cv_ratios": "part sizes: 1/r of the records, for r",
    "cv_partition_parts": "parts each partition has",
    "cv_prior_dominated": "parts too small for the data to move kappa's prior",
    "cv_kappa_median_by_ratio": "kappa's median for each part size r",
    "cv_dispersion": "variance factor of the held-out count (1: none beyond Bernoulli)",
    "cv_caveats": "what the cross-validation could not do",
}


def _overdispersion_table(od: Mapping[str, Any]) -> str:
    """The overdispersion fields, each with a readable label and its summary.json name.

    A field without a label (one added later) shows its name as the label; every value
    reads as :func:`dict_table` shows it.
    """
    rows = [(_OVERDISPERSION_LABELS.get(k, k.replace("_", " ")),
             v if _is_number(v) else setting(k, v), Html(f"<code>{esc(k)}</code>"))
            for k, v in od.items()]
    return table(rows, header=("quantity", "value", "summary.json field"))


def _model_section(summary: Mapping[str, Any]) -> str:
    model = summary.get("model", "")
    parts = [
        f"<p><b>{esc(model)}</b> — {esc(summary.get('method', ''))}.</p>",
        f"<p>{_MODEL_TEXT.get(model, '')}</p>",
    ]
    prov = summary.get("provenance") or {}
    priors = prov.get("priors")
    if priors:
        parts.append(
            "<p>Priors:</p>"
            + table([(k, Html(fmt(v))) for k, v in priors.items()],
                    header=("parameter", "prior"))
        )
    od = summary.get("overdispersion")
    if od:
        parts.append(
            "<p>Cell overdispersion (gamma mixing of each cell's rate around the mixture, "
            "kappa learnt by cross-validation of the sample uniques inside the sample, a "
            f"mixture fitted to {_cv_parts_text(od.get('cv_ratios'))} of the records "
            "predicting which of its uniques the rest leaves unique; kappa ∞ = no "
            "overdispersion, Poisson cells; – = does not apply):</p>"
            + _overdispersion_table(_kappa_infinite(od))
        )
    ppc = summary.get("predictive_check")
    if ppc:
        parts.append(predictive_check_section(ppc))
    diag = summary.get("diagnostics")
    if diag:
        settings = (prov.get("settings") if isinstance(prov, Mapping) else None) or {}
        method = settings.get("method")
        if method in APPROXIMATIONS:
            # fit(method="map", laplace=False) stamps laplace in its settings only
            laplace = diag.get("laplace", settings.get("laplace"))
            what = ("The fit is the posterior mode alone (a point estimate, one draw)"
                    if method == "map" and laplace is False
                    else "The draws are independent draws from the "
                         + _APPROXIMATION_TEXT[method])
            parts.append(f"<p>Diagnostics: n/a (approximation). {esc(what)}, not Markov "
                         "chains, so R-hat, effective sample sizes and divergent transitions "
                         "do not apply; “chains” are sets of such draws (warnings, if any, "
                         "are at the top of the report):</p>"
                         + diagnostics_table(diag, method=method))
        else:
            parts.append("<p>Sampling diagnostics (warnings, if any, are at the top of the "
                         "report):</p>" + diagnostics_table(diag))
    return "".join(parts)


def predictive_check_section(ppc: Sequence[Mapping[str, Any]]) -> str:
    """The latent-class fit's posterior predictive check (``summary["predictive_check"]``).

    One row per j (cells seen j times): observed, predicted mean, 90% interval and the
    two tails, ``p_value`` = P(m_rep >= m_obs) and ``p_lower`` = P(m_rep <= m_obs)
    (:func:`sdcbayes.models.ppc.predictive_table`; older summaries lack ``p_lower``).
    """
    lower = all("p_lower" in r for r in ppc)
    rows = [(r["count"], r["observed"], f"{r['mean']:.1f}",
             f"[{r['interval'][0]:.0f}, {r['interval'][1]:.0f}]", f"{r['p_value']:.3f}")
            + ((f"{r['p_lower']:.3f}",) if lower else ()) for r in ppc]
    header = ("seen (times)", "observed", "predicted mean", "90% interval",
              "p (at least as many)") + (("p (at most as many)",) if lower else ())
    return ("<p>Posterior predictive check: replicate samples drawn from the fitted model "
            "(with its cells' overdispersion), against the sample's number of key "
            "combinations seen once, twice, ... (p: the share of replicates with at least, "
            "or at most, as many; near 0 the model does not reproduce the sample there, "
            "except that p (at most as many) near 0 for cells seen three times or more "
            "also comes where the model holds, as its cross-validated overdispersion errs towards "
            "clumping: benchmarks/README.md, 'The predictive check in the model's own "
            "world'):</p>" + table(rows, header=header))


_DIAGNOSTIC_LABELS = {
    "chains": "chains",
    "draws": "draws per chain",
    "max_r_hat": "largest R-hat",
    "min_ess_bulk": "smallest bulk ESS",
    "min_ess_tail": "smallest tail ESS",
    "divergences": "divergent transitions",
    "classes_used_mean": "latent classes occupied (mean over draws)",
    "classes_used_max": "latent classes occupied (most)",
    "classes_truncation": "latent classes available (truncation)",
    "share_draws_all_classes_used": "share of draws occupying every class",
}


#: Fit methods whose draws come from an approximation of the posterior, not a sampler
#: (``provenance.settings.method``): no chains to compare, no divergent transitions.
APPROXIMATIONS = ("map", "advi")
_APPROXIMATION_TEXT = {
    "map": "Laplace (normal) approximation at the posterior mode",
    "advi": "ADVI (mean-field variational) approximation of the posterior",
}
#: Labels of an approximation's rows: its "chains" are sets of independent draws.
_APPROXIMATION_LABELS = {
    "chains": "sets of draws from the approximation (“chains”)",
    "draws": "draws per set",
    "laplace": "Laplace approximation (no: the mode alone)",
    "mode_converged": "mode found (the optimiser converged)",
}
#: What the terminal (sdcbayes.cli) and the reports print for an approximation's diagnostics.
NOT_APPLICABLE_APPROXIMATION = "n/a (approximation)"


def diagnostics_table(diag: Mapping[str, Any], method: str | None = None) -> str:
    """The sampling diagnostics as a table of numbers, with the quantities they cover.

    ``problems``/``warnings`` are left out (they go to the warning box at the top);
    ``<name>_at`` (the parameter where an extreme is reached) joins its number's label,
    and lists of names (``diagnosed_on``) become a note under the table. A value that
    does not apply (e.g. divergences of a Gibbs sampler) shows as "–".

    Parameters
    ----------
    diag : mapping
        summary.json's ``diagnostics``.
    method : str, optional
        The fit method (``provenance.settings.method``). For an approximation
        (:data:`APPROXIMATIONS`) R-hat, ESS and divergences read "n/a (approximation)",
        as on the terminal, whatever the stamp holds (an older fit stamped divergences
        0), and chains and draws are labelled as sets of draws from the approximation.
    """
    approximation = method in APPROXIMATIONS
    rows, lists = [], []
    for k, v in diag.items():
        if k in _WARNING_KEYS or k in _NOTE_KEYS or k.endswith("_at"):
            continue
        if isinstance(v, (list, tuple)) and not _is_interval(v):
            lists.append((k, v))
            continue
        if approximation:
            if k in ("max_r_hat", "min_ess_bulk", "min_ess_tail", "divergences"):
                rows.append((_DIAGNOSTIC_LABELS[k], NOT_APPLICABLE_APPROXIMATION))
                continue
            if k in _APPROXIMATION_LABELS:
                rows.append((_APPROXIMATION_LABELS[k], v))
                continue
        label = _DIAGNOSTIC_LABELS.get(k, k.replace("_", " "))
        at = diag.get(f"{k}_at")
        if at is not None and not _is_missing(v):
            label += f" (at {at})"
        rows.append((label, v if _is_number(v) or _is_missing(v) else setting(k, v)))
    notes = "".join(
        f"<p class='note'>{esc(k.replace('_', ' ')).capitalize()}: {setting(k, v)}.</p>"
        for k, v in lists
    )
    return table(rows, header=("diagnostic", "value")) + notes


#: Labels of the data summary (:meth:`sdcbayes.Microdata.summary`) in "Data and keys".
_DATA_LABELS = {
    "n_records": "records assessed",
    "n_input_records": "records in the input",
    "n_cells": "key combinations (cells)",
    "n_sample_uniques": "sample uniques",
    "K": "possible key combinations (K)",
    "K_given": "K given by the user",
    "weight": "weight column",
    "sampling_fraction": "sampling fraction",
    "sum_weights": "sum of the weights (estimated population size)",
    "missing": "missing key values read as",
    "alpha": "alpha (weight of a wildcard match)",
    "n_missing_key_records": "records with a missing key value",
    "n_dropped": "records dropped",
    "sum_weights_input": "sum of the weights of all input records",
    "sum_weights_kept": "sum of the kept records' weights, before their adjustment for the "
                        "dropped records",
    "n_dropped_unweighted": "dropped records without a usable weight",
    "strata_without_records": "strata whose every record was dropped",
    "n_dropped_collapsed": "their dropped records, whose weight the kept records of all "
                           "strata carry",
    "sum_weights_collapsed": "the weight of those records",
    "household": "household column",
    "n_households": "households",
    "strata": "stratum column",
    "n_strata": "strata",
}

#: Columns of the by-stratum table (``summary["by_stratum"]``, written by the CLI).
_STRATUM_LABELS = {
    "n_records": "records",
    "n_sample_uniques": "sample uniques",
    "expected_reidentifications": "expected re-identifications",
}


def _label(value: Any) -> Html:
    """A key value or stratum as text: a code such as 10001 is a label, not a quantity."""
    return Html(MISSING if _is_missing(value) else esc(value))


#: Most strata report.html lists. A stratum column of PSU or cluster ids has tens of
#: thousands of levels: listed in full they made report.html grow to megabytes (50,001
#: strata: 4.9 MB); summary.json keeps them all.
MAX_STRATA_SHOWN = 50


def _stratum_risk(row: Mapping[str, Any]) -> float:
    """A stratum's expected re-identifications, for ordering (missing: last)."""
    v = row.get("expected_reidentifications")
    return float(v) if _is_number(v) and not _is_missing(v) else -math.inf


def _stratum_section(by_stratum: Sequence[Mapping[str, Any]],
                     limit: int = MAX_STRATA_SHOWN) -> str:
    """The per-stratum results (records, sample uniques, expected re-identifications).

    At most ``limit`` strata, in their own order when all fit and otherwise the
    ``limit`` with the most expected re-identifications (ties in their own order),
    with a line saying how many more there are and where they all are.
    """
    extra = [k for row in by_stratum for k in row if k != "stratum" and k not in _STRATUM_LABELS]
    cols = [*_STRATUM_LABELS, *dict.fromkeys(extra)]
    shown = list(by_stratum)
    more = ""
    if len(shown) > limit:
        # sorted() is stable: strata of equal risk keep their order
        shown = sorted(shown, key=_stratum_risk, reverse=True)[:limit]
        more = (f"<p class='note'>The {limit:,} strata with the most expected "
                f"re-identifications are shown; {len(by_stratum) - limit:,} more are not. "
                f"summary.json (by_stratum) holds all {len(by_stratum):,}.</p>")
    rows = [[_label(r.get("stratum")), *(r.get(c) for c in cols)] for r in shown]
    header = ["stratum", *(_STRATUM_LABELS.get(c, c.replace("_", " ")) for c in cols)]
    return (
        table(rows, header=header)
        + more
        + "<p class='note'>The key combinations span the strata: a record's risk is its "
        "cell's, whatever its stratum; a stratum's expected re-identifications sum its "
        "records' risks. Dropped records count nowhere.</p>"
    )


def _l_diversity_section(ldiv: Mapping[str, Any]) -> str:
    """The l-diversity section of ``assess --sensitive``'s report.

    The cells whose records share one sensitive value, and the distinct, entropy and
    recursive l-diversity over the records (summary.json's ``l_diversity``; seed 001,
    Section 3.2, after Machanavajjhala et al. 2007).
    """
    def stat(v: Mapping[str, Any], measure: str) -> str:
        x = v.get(measure) or {}
        return f"{fmt(x.get('min'), 3)} / {fmt(x.get('median'), 3)}"

    rows = []
    for var, v in ldiv["variables"].items():
        rows.append([var, v.get("n_cells_distinct_1"), v.get("n_records_distinct_1"),
                     v.get("n_records_distinct_below_2"), stat(v, "distinct"),
                     stat(v, "entropy"), stat(v, "recursive")])
    multi = ldiv.get("multi")
    if isinstance(multi, Mapping):
        rows.append(["all together (multi)", "", "", "", "",
                     stat(multi, "entropy"), stat(multi, "recursive")])
    header = ["sensitive variable", "cells sharing one value (distinct l = 1)",
              "their records", "records with distinct l < 2", "distinct l: min / median",
              "entropy l: min / median",
              f"recursive ({fmt(ldiv.get('c'))}, l): min / median"]
    return (
        table(rows, header=header)
        + "<p class='note'>Cells: "
        + esc(ldiv.get("cells", "the records' key patterns"))
        + ". Distinct l is the number of values of the sensitive variable in the cell; "
        "entropy l is exp(−Σ p log p) over their shares; recursive (c, l) the largest l "
        "at which the most frequent value's count stays below c times the summed counts "
        "of the l-th most frequent value and all rarer ones (1 if there is none). A cell "
        "with distinct l = 1 tells whoever finds a person in it the person's value "
        "(attribute disclosure), whatever the re-identification risk. Records with "
        "distinct l &lt; 2 also count cells whose value is missing in every record. "
        "Minimum and median are over records; records.csv gives each record's cell's "
        "values, summary.json (l_diversity) the quartiles.</p>"
    )


def assessment_report(result, md, summary: Mapping[str, Any], top: int = 20, *,
                      command_line: bool = False) -> str:
    """The ``report.html`` of ``sdcbayes assess``.

    Sections: file-level risk (with the truth for the demo sample), risk by stratum
    (when ``summary`` has ``by_stratum``), data and key summary, model, the per-record
    risk distribution, the riskiest key combinations (cell level only: no raw
    records), household risk, the l-diversity of the sensitive variables (when
    ``summary`` has ``l_diversity``: ``assess --sensitive``) and the provenance
    (command and versions).

    Parameters
    ----------
    result : Assessment or PosteriorAssessment
    md : sdcbayes.Microdata
        The microdata assessed (its summary is the fallback of "Data and keys").
    summary : mapping
        The result's summary, possibly extended (``data``, ``truth``, ``by_stratum``,
        ``provenance``); without ``provenance``, ``result.provenance`` is shown.
    top : int
        Rows of the riskiest-cells table.
    command_line : bool
        Word fixes as command-line options (the CLI), not Python keywords.
    """
    prov = summary.get("provenance") or getattr(result, "provenance", None) or None
    if prov and not summary.get("provenance"):
        # result.provenance is the stamp of a Python run: show it as the CLI's is shown
        summary = {**summary, "provenance": prov}
    truth = summary.get("truth") or {}
    interval = _interval_name(summary)
    rows = []
    for key, label in _SUMMARY_LABELS.items():
        if key not in summary:
            continue
        if key == "n_above_threshold" and _is_number(summary.get("risk_threshold")):
            label = f"records with risk above {fmt(summary['risk_threshold'])}"
        row = [label, summary[key]]
        lo_hi = summary.get(f"{key}_interval")
        if key in _COUNT_FIELDS and _is_interval(lo_hi):
            # quantiles of a count: [6, 19], not [6.0, 19.0]
            lo_hi = [_count(v) for v in lo_hi]
        row.append(lo_hi if lo_hi is not None else "")
        if _is_interval(lo_hi) and key not in _PERCENT_FIELDS:
            # the estimate in its interval's decimals: 101.21 beside [94.78, 108.07]
            est, iv_text = _estimate_interval_parts(summary[key], *lo_hi)
            row[1:3] = [_Number(esc(est)), Html(esc(iv_text))]
        # the interval's kind: a row over r_i(θ) per draw has no F_k randomness in it
        given = key in _PARAMETER_ONLY_ROWS and not (
            key in _HOUSEHOLD_ROWS and _household_predictive(summary))
        row.append("" if lo_hi is None
                   # the closed form's: F_k drawn given the plug-in, no parameters
                   else PLUG_IN_PREDICTIVE if summary.get("model") == "closed-form"
                   else PARAMETERS_ONLY if given else PREDICTIVE)
        row.append(truth.get(key, "") if truth else "")
        if key in _PERCENT_FIELDS:  # a rate: in percent, as the console shows it
            row = [row[0], *(_percent_cell(v) for v in row[1:])]
        rows.append(row)
    if "global_threshold" in summary:  # --max-global-risk: sdcMicro's global threshold
        rows.append([*global_threshold_row(summary), "", "", ""])
    header = ["quantity", "estimate", interval, "interval of", "truth"]
    # drop columns that are empty for this run (no intervals for closed forms, no truth
    # outside the demo)
    keep = [0, 1] + [i for i in (2, 3, 4) if any(r[i] != "" for r in rows)]
    header = [header[i] for i in keep]
    rows = [[r[i] for i in keep] for r in rows]
    caveat = benchmark_caveat(summary, command_line=command_line)
    sections = [
        (
            "File-level risk",
            table(rows, header=header)
            + message_box([caveat] if caveat else [], "The benchmark rule", kind="info")
            + _file_level_definitions(summary, intervals=2 in keep),
        )
    ]
    by_stratum = summary.get("by_stratum")
    if isinstance(by_stratum, (list, tuple)) and by_stratum:
        sections.append(("Risk by stratum", _stratum_section(by_stratum)))
    # the run's own stamp first: the CLI records there what the run used (e.g. alpha
    # None under missing='category' or 'drop'), which md.summary() does not know
    stamped = (prov or {}).get("data") if isinstance(prov, Mapping) else None
    ds = stamped if isinstance(stamped, Mapping) and stamped else md.summary()
    key_rows = [(_DATA_LABELS.get(k, k.replace("_", " ")), v) for k, v in ds.items()
                if not isinstance(v, (dict, list))]
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
    sections.append(("Model", _model_section(summary)))
    risk = result.records["risk"].to_numpy()
    top_risk = float(np.nanmax(risk)) if np.isfinite(risk).any() else 1.0
    upper = min(1.0, max(0.05, np.ceil(top_risk * 20) / 20))  # zoom to the data
    plots = svg_histogram(
        risk,
        bins=np.linspace(0, upper, 41),
        title="Per-record risk",
        xlabel="risk r = E(1/F | f)",
        log_y=True,
        markers={"0.1": 0.1},
    )
    sections.append(("Per-record risk distribution", plots))
    cells = result.cells.sort_values("risk", ascending=False).head(top)
    show = [c for c in cells.columns if c not in ("cell",)]
    keys = set(getattr(md, "keys", ()) or ())
    is_key = [c in keys for c in show]
    # counts of records (F_lo/F_hi: quantiles of the predictive count) as whole numbers
    is_count = [c in _CELL_COUNT_COLUMNS for c in show]
    cell_rows = ([_label(v) if k else _count(v) if n else v
                  for v, k, n in zip(row, is_key, is_count, strict=True)]
                 for row in cells[show].itertuples(index=False, name=None))
    sections.append(
        (
            f"The {len(cells)} riskiest key combinations",
            table(cell_rows, header=show)
            + _cell_columns_note(show, interval)
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
    ldiv = summary.get("l_diversity")
    if isinstance(ldiv, Mapping) and ldiv.get("variables"):
        sections.append(("Attribute disclosure: l-diversity", _l_diversity_section(ldiv)))
    return render(
        f"Disclosure-risk assessment — {summary.get('model')}",
        sections,
        summary.get("provenance"),
        summary,
    )


# --------------------------------------------------------------------------- decide
#: How the suppression at the target is read off the frontier (risk/decisions.py,
#: suppression_at_target): the decide summary and report say it next to the number.
INTERPOLATED = "interpolated on the frontier"


def _realised_rows(s: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The shares the published decisions realise (``summary["totals"]``), as rows."""
    totals = s.get("totals") or {}
    if not totals:
        return []
    return [
        ("disclosure share these decisions publish",
         _percent_cell(totals.get("disclosure_share"))),
        ("nonpublication share these decisions suppress",
         _percent_cell(totals.get("nonpublication_share"))),
    ]


def _realised_text(s: Mapping[str, Any]) -> str:
    """What the decisions realise, from ``summary["totals"]``.

    E.g. ``suppress 3.86% of the nonpublication loss and publish 17.4% of the
    disclosure loss``.
    """
    totals = s.get("totals") or {}
    return (f"suppress {percent(totals.get('nonpublication_share'))} of the nonpublication "
            f"loss and publish {percent(totals.get('disclosure_share'))} of the disclosure "
            "loss")


def decision_report(result, summary: Mapping[str, Any], domain_col: str | None = None,
                    top: int = 30) -> str:
    """The ``report.html`` of ``sdcbayes decide`` (Zaslavsky & Horton 1998, seed 003).

    Sections: losses and hyperparameters, the decisions at the chosen trade-off,
    the frontier (reference losses, each alternative ranking evaluated under the
    reference losses, and random suppression, as in the seed's Figure 1), the
    sensitivity table, the Jensen check (seed 003, Section 3: plugging in
    ``E[Y | y]`` understates a loss convex in ``Y``) and the domains in
    publication order. The domains are named by ``result.table["domain"]`` (the CLI
    joins several ``--domain`` columns' values, ``"R01 / 0-9"``), under the heading
    ``domain_col`` (their names joined alike; None: ``domain``).
    """
    s = summary
    h = s.get("hyperparameters") or {}

    def hp(name):
        v = h.get(name)
        if isinstance(v, Mapping):
            return [v.get("mean"), v.get("interval_90")]
        return [v, "–"]

    setting_rows = [
        ("disclosure loss L1 (publish)", (s.get("disclosure_loss") or {}).get("spec", "")),
        ("nonpublication loss L0 (suppress)", (s.get("suppression_loss") or {}).get("spec", "")),
        ("hyperparameters from", h.get("source", "")),
        ("domains", s.get("n_domains")),
        ("target disclosure share", _percent_cell(s.get("target_risk"))),
        ("trade-off c (publish if R1 < c·R0)", s.get("c") if s.get("c") is not None else "∞"),
        ("c chosen by", s.get("c_source")),
        ("domains published", s.get("n_published")),
        ("domains suppressed", s.get("n_suppressed")),
        *_realised_rows(s),
    ]
    hyper_rows = [(name, *hp(name)) for name in ("alpha", "beta", "mean", "concentration")
                  if name in h]
    sections = [
        (
            "Losses and decisions",
            table(setting_rows, header=("item", "value"))
            + "<p class='note'>R1 and R0 are posterior expected losses of publishing and of "
            "suppressing each domain, averaged over the predictive distribution of the "
            "population count Y and "
            + ("over the posterior of the hyperparameters" if h.get("source") not in
               ("ml", "fixed") else
               "given the point estimate of the hyperparameters ("
               + ("maximum likelihood" if h.get("source") == "ml" else "fixed")
               + "; nothing is averaged over them)")
            + " (Zaslavsky &amp; Horton 1998, Section 2). A domain with R1 = R0 = 0 (y = 0: "
            "no disclosure loss either way) is published.</p>",
        ),
        (
            "Hyperparameters of the Beta prior",
            table(hyper_rows, header=("parameter", "estimate", "90% interval"))
            + (
                "<p class='note'>A point estimate (maximum likelihood or fixed): no interval, "
                "and its uncertainty is not carried into the risks.</p>"
                if h.get("source") in ("ml", "fixed")
                else ""
            ),
        ),
    ]
    diag = s.get("diagnostics")
    if diag:
        drows = [(_DIAGNOSTIC_LABELS.get(k, k), diag.get(k)) for k in
                 ("chains", "draws", "max_r_hat", "min_ess_bulk", "min_ess_tail", "divergences")]
        # its problems go to the warning box at the top of the page (render)
        sections.append(("Sampling diagnostics", table(drows, header=("diagnostic", "value"))))
    series = {"reference: " + (s.get("disclosure_loss") or {}).get("spec", ""): (
        result.frontier["disclosure_share"].to_numpy(),
        result.frontier["nonpublication_share"].to_numpy(),
    )}
    for label, fr in result.alternative_frontiers.items():
        series[f"ranked by {label}"] = (
            fr["disclosure_share"].to_numpy(), fr["nonpublication_share"].to_numpy()
        )
    rb = result.random_baseline
    series["random suppression"] = (
        rb["disclosure_share"].to_numpy(), rb["nonpublication_share"].to_numpy()
    )
    # shares in percent, as the text above the table and the console give them
    sens_rows = [("random suppression", _percent_cell(1.0 - float(s.get("target_risk", 0))),
                  "", "")]
    for row in result.sensitivity.itertuples(index=False):
        sens_rows.insert(
            len(sens_rows) - 1,
            (row.pair + (" (reference)" if row.role == "reference" else ""),
             *(_percent_cell(v) for v in (row.suppression_at_target,
                                          row.suppression_at_target_min,
                                          row.suppression_at_target_max))),
        )
    sections.append(
        (
            "Frontier: disclosure against nonpublication",
            svg_lines(
                series,
                title="Share of disclosure risk published vs share of data suppressed",
                xlabel="disclosure share (0 = nothing published, 1 = all)",
                ylabel="nonpublication share",
                xlim=(0.0, 1.0),
                ylim=(0.0, 1.0),
                width=720,
            )
            + "<p class='note'>Domains are published in order of R1/R0; each point is the "
            "state after publishing one more domain, both losses normalised to run from 0 to "
            "1 (Zaslavsky &amp; Horton 1998, Figure 1). Alternative rankings are evaluated "
            "with the reference losses; the straight line is random suppression.</p>"
            + f"<p>Suppression needed to bring disclosure risk down to "
            f"{percent(float(s.get('target_risk', 0)))} of its full-publication value, "
            f"{INTERPOLATED} (publishing the marginal domain with a probability"
            + (f"; the decisions above, whole domains, {_realised_text(s)}"
               if s.get("totals") else "")
            + "):</p>"
            + table(sens_rows, header=("ranking", "suppressed share", "min over ties",
                                       "max over ties")),
        )
    )
    if result.jensen is not None:
        j = result.jensen
        jt = s.get("jensen") or {}
        labels = result.table["domain"].to_numpy()
        biggest = np.argsort(-np.abs(j["bias"].to_numpy()), kind="stable")[:top]
        jrows = [
            (labels[i], float(j["E_Y"].iloc[i]), float(j["plug_in_R1"].iloc[i]),
             float(j["R1"].iloc[i]), float(j["bias"].iloc[i]))
            for i in biggest
        ]
        sections.append(
            (
                "Jensen check: plug-in against expected loss",
                table(
                    [("total plug-in L1(y, E[Y])", jt.get("plug_in_total")),
                     ("total expected R1 = E[L1(y, Y)]", jt.get("expected_total")),
                     ("relative bias of the plug-in", jt.get("relative_bias"))],
                    header=("quantity", "value"),
                )
                + f"<p>The {len(jrows)} domains where the plug-in is furthest off:</p>"
                + table(jrows, header=(domain_col or "domain", "E[Y | y]", "plug-in L1",
                                       "R1", "R1 − plug-in"))
                + "<p class='note'>Zaslavsky &amp; Horton 1998, Section 3: for a loss "
                "convex in Y (the uniques losses) plugging in the posterior mean of Y is "
                "never larger than the expected loss, so plug-in rules understate "
                "disclosure risk.</p>",
            )
        )
    t = result.table.sort_values("order").head(top)
    drows = [
        (r.domain, r.R1, r.R0, r.ratio, bool(r.publish))
        for r in t.itertuples(index=False)
    ]
    sections.append(
        (
            f"The first {len(drows)} domains in publication order",
            table(drows, header=(domain_col or "domain", "R1", "R0", "R1/R0", "publish")),
        )
    )
    return render("Publish or suppress: decisions by expected loss", sections,
                  s.get("provenance"), s)


# --------------------------------------------------------------------------- suda
def _msu_score_text(s: Mapping[str, Any]) -> str:
    """How one MSU is scored, for the summary's ``score_method`` and ``max_size``.

    The weights of :func:`sdcbayes.risk.suda.msu_size_weights`: ``elliot`` scores an
    MSU of size k ``(M − k)! / (M − m − 1)!`` with M keys and largest size m searched,
    i.e. ``(M − k)!`` when m >= M − 1; ``ihsn`` scores it
    ``(2^(M−k) − 1) k! (M − k)! / M!`` whatever m.
    """
    n_keys = len(s.get("keys") or [])
    m = s.get("max_size")
    method = s.get("score_method", "elliot")
    among = f"an MSU of size k among the M = {n_keys} keys scores" if n_keys else \
        "an MSU of size k among M keys scores"
    if method == "ihsn":
        return (f"{among} (2^(M − k) − 1)·k!·(M − k)!/M! (the older IHSN/OECD weighting, "
                "sdcMicro's original_scores = FALSE).")
    if isinstance(m, int) and n_keys and n_keys - m - 1 >= 2:  # 0! = 1! = 1: no change
        return (f"{among} (M − k)!/(M − m − 1)! = (M − k)!/{n_keys - m - 1}!, with m = {m} "
                "the largest MSU size searched (the product of M − i over i = k..m; Templ et "
                "al. 2014, section 3.5).")
    return f"{among} (M − k)! (Templ et al. 2014, section 3.5)."


#: How ``suda`` counts missing key values (summary.json's ``missing_rule``), for its report.
SUDA_MISSING_RULE = (
    "missing values as sdcMicro's suda2: a missing key value is never part of a minimal "
    "sample unique and matches no value; in U and P (cells on all keys) a missing value is "
    "a level of its own, as under assess --missing category. assess and protect count "
    "sample uniques under --missing wildcard by default (a missing value matches every "
    "value), which gives fewer on a file with missing key values: compare the two only "
    "under the same rule"
)


def _suda_missing_note(s: Mapping[str, Any]) -> str:
    """The missing-value rule of suda's counts, loud when the keys have missing values."""
    n = s.get("n_missing_key_records")
    head = ("" if not isinstance(n, int) or n <= 0 else "1 record has a missing key value. "
            if n == 1 else f"{fmt(n)} records have a missing key value. ")
    return f"<p class='note'>{esc(head)}Sample uniques (U) count {esc(SUDA_MISSING_RULE)}.</p>"


def suda_report(result, summary: Mapping[str, Any]) -> str:
    """The ``report.html`` of ``sdcbayes suda`` (seed 001, section 3.5).

    Sections: file-level results (MSU counts, DIS estimate), the distribution of
    SUDA and DIS-SUDA scores, the DIS-SUDA bands of sdcMicro's print method and
    the contribution of each key to the total score. No record is shown.
    """
    s = summary
    rows = [
        ("records", s.get("n_records")),
        ("key variables", ", ".join(map(str, s.get("keys", [])))),
        ("largest MSU size searched", s.get("max_size")),
        ("MSU weighting", s.get("score_method")),
        ("records with at least one MSU", s.get("n_records_with_msu")),
        ("minimal sample uniques (MSUs)", s.get("n_msus")),
        ("sample uniques on all keys (U; a missing value is a level of its own)",
         s.get("n_sample_uniques")),
        ("records in pairs on all keys (P)", s.get("n_in_pairs")),
        *([("records with a missing key value", s["n_missing_key_records"])]
          if "n_missing_key_records" in s else []),
        ("sampling fraction for DIS", s.get("dis_fraction")),
        ("DIS: P(correct match | unique match)", s.get("dis")),
        ("largest SUDA score", s.get("suda_score_max")),
        ("largest DIS-SUDA score", s.get("dis_suda_score_max")),
    ]
    by_size = s.get("n_msus_by_size") or {}
    sections = [
        (
            "File-level results",
            table(rows, header=("quantity", "value"))
            + "<p class='note'>A minimal sample unique (MSU) of a record is a smallest set "
            "of keys on which no other record shares its values; "
            + esc(_msu_score_text(s))
            + " DIS-SUDA calibrates the scores to the data intrusion simulation estimate of a "
            "correct match.</p>"
            + _suda_missing_note(s),
        ),
        (
            "MSUs by size",
            table(list(by_size.items()), header=("MSU size", "number of MSUs")),
        ),
    ]
    scores = np.asarray(result.scores, dtype=float)
    positive = scores[scores > 0]
    plots = (
        svg_histogram(
            positive,
            bins=min(40, max(1, np.unique(positive).size)),
            title="SUDA scores of records with at least one MSU",
            xlabel="SUDA score",
            log_y=True,
        )
        if positive.size
        else "<p class='note'>No record has a special unique on these keys.</p>"
    )
    dis = np.asarray(result.dis_scores, dtype=float)
    finite = dis[np.isfinite(dis)]
    top_dis = float(finite.max()) if finite.size else 0.0
    # a probability: the axis starts at 0 and zooms to the data as the risk plot does
    # (NumPy's own range for all-zero scores would be -0.5 .. 0.5)
    upper = min(1.0, max(0.05, np.ceil(top_dis * 20) / 20))
    plots += svg_histogram(
        dis,
        bins=np.linspace(0, upper, 41),
        title="DIS-SUDA scores (all records)",
        xlabel="DIS-SUDA score (estimated probability of a correct match)",
        log_y=True,
    )
    sections.append(("Score distribution", plots))
    bands = s.get("dis_suda_intervals") or {}
    if bands:
        sections.append(
            ("DIS-SUDA bands", table(list(bands.items()), header=("DIS-SUDA score", "records")))
        )
    contrib = s.get("attribute_contributions") or {}
    if contrib:
        sections.append(
            (
                "Contribution of each key",
                table(sorted(contrib.items(), key=lambda kv: -kv[1]),
                      header=("key", "% of total SUDA score"))
                + "<p class='note'>Share of the total score from MSUs containing the key "
                "(sdcMicro's definition); shares add up to more than 100% when MSUs have "
                "several keys. Recoding or suppressing the top keys lowers risk most.</p>",
            )
        )
    return render("Special uniques: SUDA and DIS-SUDA", sections, s.get("provenance"), s)


# --------------------------------------------------------------------------- protect
_PROTECT_RISK_LABELS = {
    "n_records": "records",
    "n_cells": "key combinations (cells)",
    "n_sample_uniques": "sample uniques",
    "k_anonymity_violations": "records violating k-anonymity (f < k)",
    "expected_reidentifications": "expected re-identifications",
    "expected_reidentification_rate": "expected re-identification rate",
    # --household: assess's labels (only a side with the key shows a row)
    "n_households": "households",
    "household_expected_reidentifications": "household expected re-identifications (records)",
    "household_expected_reidentified_households": "expected re-identified households",
    "max_risk": "largest record risk",
    "n_above_benchmark": "records above the benchmark rule",
    "n_above_threshold": "records above the risk threshold",
    "n_missing_key_records": "records with a missing key value",
}


def _household_note(s: Mapping[str, Any], latent_class: bool = False) -> str:
    """What protect's household rows are (``--household``; "" without)."""
    if not s.get("household"):
        return ""
    text = (
        f"Household column: {esc(s.get('household'))} (released unchanged). Household risk 1 − "
        "Π(1 − r<sub>j</sub>) over the members j of a record's household (sdcMicro's "
        "hier_risk), summed over records; expected re-identified households sums it once "
        "per household.")
    if latent_class:
        b = ((s.get("risk") or {}).get("before") or {})
        text += (
            " Under the latent-class model per posterior draw, the members independent given "
            "the parameters, then averaged over the draws (as <code>sdcbayes assess "
            "--household</code>); "
            + ("its interval is posterior predictive, as the expected re-identifications' "
               "(per drawn population the realised Σ 1 − Π(1 − 1/F<sub>j</sub>), each record "
               "with its drawn F; summary.json's _hyper_interval is over the parameters' "
               "posterior only)" if _household_predictive(b)
               else "its interval is over the parameters' posterior only")
            + ". The fit's cross-validation keeps households whole.")
    done = (s.get("risk") or {}).get("household_completion") or {}
    text += (" With the household ids released, a blanked household-level key (one value in "
             "every household) that a household mate shows is read off the mate, and a key "
             "equal to the household's number of records is counted off the file exactly, "
             "whatever the file shows (a blank, a band, a PRAMmed value, a value missing in "
             "the input): the protected column reads those values so"
             + (f", {int(done['total']):,} here ({int(done.get('from_mates') or 0):,} "
                f"shown by a mate, {int(done.get('counted') or 0):,} counted; summary.json's "
                "risk.household_completion)" if "total" in done else "")
             + ", while the protected file keeps them as released; the risk before reads "
             "the input so too.")
    return f"<p class='note'>{text}</p>"


def _k_anonymity_note(s: Mapping[str, Any]) -> str:
    """What the two k-anonymity rows count (only when a suppression step ran)."""
    risk = s.get("risk") or {}
    if "k_anonymity_violations_suppression" not in (risk.get("after") or {}):
        return ""
    strata = risk.get("suppression_strata")
    return (
        "<p class='note'>Records violating k-anonymity: f &lt; k over the whole file, f as "
        "<code>assess</code> counts it under <code>--missing wildcard</code>: sdcMicro's "
        "freqCalc rule (a missing value matches any value, but with two or more keys a "
        "complete record does not count the records whose keys are all missing, while a "
        "record whose keys are all missing counts every record of the file; README, "
        "“Missing key values”); the row “as the suppression judges "
        "it” counts them as local "
        "suppression does, every missing value matching any value, on its keys "
        f"{esc(', '.join(map(str, risk.get('suppression_keys') or [])))}"
        + (f", within the strata of {esc(', '.join(map(str, strata)))}" if strata else "")
        + ".</p>"
    )


def _randomised_note(s: Mapping[str, Any]) -> str:
    """The caveat of the "protected" column after PRAM, Nayak-Zhang PRAM or a swap ("" without).

    A swap (record swapping, or rank swapping of numeric variables) counts when it
    exchanged a key (a hierarchy or carry-along column, a rank-swapped column, among the
    keys): the risk after reads rank-swapped values as true (an intruder can look near a
    numeric value). After PRAM of a key the risk after is misclassification-adjusted
    (summary.json ``risk.after.misclassification``, Shlomo & Skinner 2010), and after a
    record swap of a key the records it changed count as non-matching and the others'
    risks are counted on their pre-swap cells (the block's ``swap`` and
    ``adjusted_on_released_counts``, Shlomo, Tudor & Groom 2010): one sentence says each,
    and PRAM or the record swap is then no step this caveat is about (unless the block
    says why it was not adjusted).
    """
    from sdcbayes.protection.pram import MISCLASSIFICATION_METHOD

    steps = s.get("steps") or []
    keys = set(map(str, s.get("keys") or []))
    mis = ((s.get("risk") or {}).get("after") or {}).get("misclassification") or {}
    adjusted = bool(mis) and "not_adjusted_because" not in mis
    swap_block = mis.get("swap") if adjusted else None
    pram_adjusted = adjusted and MISCLASSIFICATION_METHOD in str(mis.get("method"))
    read_true = (f"read as true, "
                 f"{fmt((mis.get('unadjusted') or {}).get('expected_reidentifications'))} "
                 "expected re-identifications")
    said = ""
    if pram_adjusted:
        said = (f"Risk after: {MISCLASSIFICATION_METHOD}: each record's risk times the "
                "probability PRAM kept its key values"
                + ("" if swap_block else
                   f" (mean {fmt(mis.get('mean_keep_probability'))}); {read_true}") + ".")
    if swap_block:
        blanked = sum(e.get("blanked_records") or 0 for e in swap_block.get("steps") or [])
        on_released = (mis.get("adjusted_on_released_counts") or {}).get(
            "expected_reidentifications")
        said += ((" " if said else "Risk after: ")
                 + f"{fmt(mis.get('swapped_records'))} records a swap made non-matching "
                 f"count 0 ({swap_block.get('method')}: they show another household's key "
                 "values, so an intruder who knows a target's true keys does not find it "
                 "there, and a match on its released keys is someone else; "
                 f"{swap_block.get('reference')})"
                 + (f"; {fmt(blanked)} swapped records whose changed keys were blanked later "
                    "keep their risk (a blank matches the true value)" if blanked else "")
                 + "; the others' risks are counted on their pre-swap cells (F is the "
                 "count of their true values, which the released cells understate where "
                 "the swap moved rare records out"
                 + (f"; on the released cells, "
                    f"{fmt(on_released)} expected re-identifications"
                    if on_released is not None else "") + ")"
                 + (f"; mean factor {fmt(mis.get('mean_keep_probability'))}"
                    if pram_adjusted else "") + f"; {read_true}.")
    if adjusted:
        what = " and ".join(["PRAMmed"] * pram_adjusted + ["swapped"] * bool(swap_block))
        said += (" Adjusted: the expected re-identifications, "
                 "their rate, the largest risk, the counts above the benchmark and threshold "
                 "and the household risk; the cells, sample uniques and k-anonymity still read "
                 f"the {what} values as true (they can rise where the actual risk fell).")
        for st in steps:  # Nayak-Zhang's own bound, beside the adjusted risk
            p = (st.get("result") or {}).get("max_cm_probability")
            if st.get("name") == "nayak_zhang" and isinstance(p, int | float) \
                    and math.isfinite(p):
                said += (f" Step {st.get('step')} bounds a correct match's probability by "
                         f"at most {fmt(p)} (max_cm_probability).")
    elif mis:
        method = str(mis.get("method"))  # "none: the risk after reads the ... keys as true"
        what = " or ".join(["PRAM"] * ("PRAMmed" in method or "swapped" not in method)
                           + ["the swap"] * ("swapped" in method))
        said = f"Risk after: not adjusted for {what} ({mis.get('not_adjusted_because')})."

    def changed(st: Mapping[str, Any]) -> set[str]:
        p = st.get("parameters") or {}
        cols = (p.get("columns") or [] if st.get("name") in ("pram", "rank_swap", "shuffle")
                else [*(p.get("hierarchy") or []), *(p.get("carry_along") or [])])
        return set(map(str, cols))

    # Nayak-Zhang randomises the keys; PRAM and the swaps matter here when they changed a key
    random_steps = [st for st in steps if (st.get("name") == "nayak_zhang" and not adjusted) or (
        st.get("name") in (("rank_swap", "shuffle") if swap_block
                           else ("swap", "rank_swap", "shuffle") if adjusted
                           else ("pram", "swap", "rank_swap", "shuffle"))
        and keys & changed(st))]
    if not random_steps:
        return f"<p class='note'>{esc(said)}</p>" if said else ""
    named = ", ".join(f"step {st.get('step')} ({st.get('name')})" for st in random_steps)
    swapped = any(st.get("name") == "swap" for st in random_steps)
    rank_swapped = any(st.get("name") == "rank_swap" for st in random_steps)
    shuffled = any(st.get("name") == "shuffle" for st in random_steps)
    text = (
        (said + " " if said else "")
        + f"After {named}: the “protected” column treats the randomised values as if they "
        "were true. An intruder who knows values were randomised cannot trust a match, so "
        "this measure ignores the protection PRAM gives; it can rise (new sample uniques) "
        "where the actual risk fell."
        + (" The same holds for swapped values: a matched record's geography may be "
           "another household's." if swapped else "")
        + (" The same holds for rank-swapped values: a matched record's value may be another "
           "record's, a few ranks away." if rank_swapped else "")
        + (" The same holds for shuffled values: a matched record's value is another "
           "record's, reassigned by rank." if shuffled else "")
    )
    for st in random_steps:
        p = (st.get("result") or {}).get("max_cm_probability")
        if st.get("name") == "nayak_zhang" and p is not None:
            text += (
                f" The risk that accounts for the randomisation is that of step "
                f"{st.get('step')}: a correct match has probability at most {fmt(p)} "
                "(max_cm_probability)."
            )
    return f"<p class='note'>{esc(text)}</p>"


def _closed_form_formula(s: Mapping[str, Any]) -> str:
    """How protect's closed form was computed: its ``--method`` (stamped in the settings)."""
    settings = (s.get("provenance") or {}).get("settings") or {}
    method = settings.get("closed_form_method") or settings.get("method")
    if method == "approx":
        return "with the approximation sdcMicro's measure_risk uses (--method approx)"
    return "computed exactly (sdcMicro's measure_risk approximates it: --method approx)"


def protection_report(summary: Mapping[str, Any]) -> str:
    """The ``report.html`` of ``sdcbayes protect`` (seed 001, sections 4-5).

    Sections: the steps applied, risk before and after (closed-form
    Benedetti-Franconi risk, seed 004 eq. 1-3; k-anonymity with missing values
    as wildcards, seed 001 section 3.2, also as the suppression step judges it),
    information loss per variable (seed 001 section 5.1) and the provenance. After
    PRAM of a key or Nayak-Zhang PRAM a note says that the "after" risk is
    misclassification-adjusted (Shlomo & Skinner 2010), after a record swap of a key that
    the records it changed count as non-matching (Shlomo, Tudor & Groom 2010), and after
    rank swapping of a key that it treats the swapped values as true. With ``--sensitive``
    a section gives the l-diversity before and after
    (:func:`_protection_l_diversity_section`). Under ``protect --model latent-class``
    (summary.json's ``risk.closed_form``) the risk is the model's, with the closed form
    beside it and a section on the fit (:func:`_protection_report_latent_class`).
    """
    s = summary
    risk = s.get("risk") or {}
    if risk.get("closed_form") is not None:  # protect --model latent-class
        return _protection_report_latent_class(s)
    before, after = risk.get("before") or {}, risk.get("after") or {}
    rows = _protection_risk_rows(before, after, _PROTECT_RISK_LABELS, risk.get("k"))
    sections = [
        _protection_steps_section(s),
        (
            "Disclosure risk before and after",
            table(rows, header=("quantity", "original", "protected"))
            + "<p class='note'>Closed-form individual risk r = E(1/F | f) with the plug-in "
            "p = f/F̂ (Benedetti-Franconi; Polettini, eq. 1–3), "
            + esc(_closed_form_formula(s)) + "; "
            "missing key values (e.g. after local suppression) match any value: in the "
            "original column the values missing in the input, in the protected one also those "
            "the steps blanked; “records with a missing key value” counts records, so a "
            "record missing two values counts once. "
            f"Key variables: {esc(', '.join(map(str, s.get('keys', []))))}; weight: "
            f"{esc(s.get('weight') or 'none (every record its own population)')}.</p>"
            + _household_note(s)
            + _k_anonymity_note(s)
            + _randomised_note(s),
        ),
    ]
    sections += _protection_l_diversity_section(s)
    sections += _protection_numeric_risk_section(s)
    sections += _protection_loss_section(s)
    return render("Protection: risk before and after", sections, s.get("provenance"), s)


def _protection_steps_section(s: Mapping[str, Any]) -> tuple[str, str]:
    """The "Steps applied, in order" section of protect's report (either risk model)."""
    step_rows = []
    for st in s.get("steps") or []:
        params = ", ".join(setting_text(p, v) for p, v in (st.get("parameters") or {}).items())
        step_rows.append((st.get("step"), st.get("name"), params))
    return (
        "Steps applied, in order",
        table(step_rows, header=("#", "method", "parameters"))
        # a note on the file (e.g. Parquet for SAS input) is in the box at the top
        + f"<p>Protected file: <code>{esc(s.get('protected_file', ''))}</code></p>",
    )


def _protection_risk_rows(before: Mapping[str, Any], after: Mapping[str, Any],
                          labels: Mapping[str, str], k: Any) -> list[tuple[Any, Any, Any]]:
    """Rows (label, before, after) of protect's risk table for the keys of ``labels``.

    Only the keys either side has; the k-anonymity row names its k and, after a
    suppression step, is followed by the count as the suppression judges it (its keys
    and strata); rates as percentages.
    """
    rows: list[tuple[Any, Any, Any]] = []
    for key, label in labels.items():
        if key not in before and key not in after:
            continue
        if key == "k_anonymity_violations":
            label = f"records violating {k}-anonymity (f < {k})"
        b, a = before.get(key), after.get(key)
        if key in _PERCENT_FIELDS:
            b, a = _percent_cell(b), _percent_cell(a)
        rows.append((label, b, a))
        if key == "k_anonymity_violations" and "k_anonymity_violations_suppression" in after:
            rows.append((f"records violating {k}-anonymity as the suppression judges it",
                         before.get("k_anonymity_violations_suppression"),
                         after.get("k_anonymity_violations_suppression")))
    return rows


def _protection_l_diversity_section(s: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The l-diversity section of ``protect --sensitive``: before and after (none without it).

    ``risk.before.l_diversity`` and ``risk.after.l_diversity`` are assess's block
    (:func:`_l_diversity_section`; seed 001, Section 3.2, after Machanavajjhala et al.
    2007) on the input's and the protected file's key cells.
    """
    risk = s.get("risk") or {}
    b = (risk.get("before") or {}).get("l_diversity")
    a = (risk.get("after") or {}).get("l_diversity")
    if not isinstance(b, Mapping) or not isinstance(a, Mapping):
        return []

    def stat(v: Mapping[str, Any], measure: str) -> str:
        x = v.get(measure) or {}
        return f"{fmt(x.get('min'), 3)} / {fmt(x.get('median'), 3)}"

    def cells(v: Mapping[str, Any]) -> str:
        return f"{v.get('n_records_distinct_1')} (in {v.get('n_cells_distinct_1')} cells)"

    rows = []
    for var, vb in (b.get("variables") or {}).items():
        va = (a.get("variables") or {}).get(var) or {}
        rows += [
            (var, "records in cells sharing one value (distinct l = 1)", cells(vb), cells(va)),
            ("", "records with distinct l < 2", vb.get("n_records_distinct_below_2"),
             va.get("n_records_distinct_below_2")),
            ("", "distinct l: min / median", stat(vb, "distinct"), stat(va, "distinct")),
            ("", "entropy l: min / median", stat(vb, "entropy"), stat(va, "entropy")),
            ("", f"recursive ({fmt(b.get('c'))}, l): min / median", stat(vb, "recursive"),
             stat(va, "recursive")),
        ]
    return [(
        "l-diversity of the sensitive variables, before and after",
        table(rows, header=("sensitive variable", "quantity", "original", "protected"))
        + "<p class='note'>As <code>sdcbayes assess --sensitive</code> computes it "
        "(sdcMicro's ldiversity) on the key cells of the original file and of the protected "
        "one: the exact key patterns, a missing key value (a blank the steps made, too) a "
        "value of its own"
        + (", the blanks the released household ids give away read as shown (as the risk "
           "after reads them)" if s.get("household") else "")
        + "; the sensitive values as released (after PRAM of one, its released values). A "
        "cell with distinct l = 1 tells whoever finds a person in it the person's value "
        "(attribute disclosure). Records with distinct l &lt; 2 also count cells whose "
        "value is missing in every record. Minimum and median over records; summary.json "
        "(risk.before.l_diversity, risk.after.l_diversity) gives the quartiles.</p>",
    )]


def _protection_numeric_risk_section(s: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Disclosure risk of the numeric variables a numeric step changed (``risk.numeric``).

    sdcMicro's interval risk ``dRisk`` (Mateo-Sanz, Sebe & Domingo-Ferrer 2004, SDID)
    and distance-based record linkage to the input (seed 001, section 3.6), before (the
    input against itself) and after; none without the block.
    """
    num = (s.get("risk") or {}).get("numeric")
    if not isinstance(num, Mapping):
        return []
    b, a = num.get("before") or {}, num.get("after") or {}
    k = num.get("interval_k")
    rows = [(f"interval risk (sdcMicro's dRisk, k = {fmt(k)})",
             _percent_cell(b.get("interval_risk")), _percent_cell(a.get("interval_risk"))),
            ("records at interval risk", b.get("n_interval_risk"), a.get("n_interval_risk"))]
    linked = "linkage_share_nearest" in a
    if linked:
        rows += [
            ("record linkage: own original nearest", _percent_cell(b.get("linkage_share_nearest")),
             _percent_cell(a.get("linkage_share_nearest"))),
            ("record linkage: own original second nearest",
             _percent_cell(b.get("linkage_share_second")),
             _percent_cell(a.get("linkage_share_second"))),
            ("record linkage: expected correct links (tie-fair)",
             _percent_cell(b.get("linkage_expected_correct_share")),
             _percent_cell(a.get("linkage_expected_correct_share"))),
        ]
    left_out = num.get("linkage_n_left_out") or 0
    return [(
        "Disclosure risk of the numeric variables",
        table(rows, header=("quantity", "original", "protected"))
        + f"<p>Variables: {esc(', '.join(map(str, num.get('variables') or [])))}.</p>"
        + "<p class='note'>Interval risk: around each protected value an interval of ± k "
        "standard deviations of the protected variable is put; a record is at risk when its "
        "original values all lie inside (closed intervals; a missing value counts as inside), "
        "the share of records at risk is the upper end of sdcMicro's “disclosure risk "
        "between [0%; X%]” (dRisk, method SDID of Mateo-Sanz, Sebe and Domingo-Ferrer "
        "2004); the original against itself gives 100%. Record linkage (Templ et al. 2014, "
        "section 3.6, after Pagliuca and Seri): each protected record is linked to the nearest "
        "original record in Euclidean distance on the variables divided by their standard "
        "deviations in the input; “nearest” counts the records whose own original is the "
        "nearest, ties in the intruder's favour, the tie-fair share the expected correct "
        "links of an intruder picking at random among the originals at the smallest "
        "distance (below 100% in the original where records share their values)"
        + (f"; computed on the {fmt(num.get('linkage_n_records'))} records with every "
           f"variable observed in both files, {fmt(left_out)} left out" if left_out and linked
           else "")
        + ("; skipped: too few records with every variable observed in both files"
           if not linked else "")
        + ".</p>",
    )]


def _protection_loss_section(s: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The "Information loss" section of protect's report (none when nothing changed)."""
    sections: list[tuple[str, str]] = []
    loss = (s.get("information_loss") or {}).get("per_variable") or {}
    if loss:
        lrows = [
            (var, v.get("n_changed"), v.get("n_suppressed"), _percent_cell(v.get("share_lost")),
             v.get("il1"))
            for var, v in loss.items()
        ]
        il1_all = (s.get("information_loss") or {}).get("il1_numeric")
        eig = (s.get("information_loss") or {}).get("eigen_difference")
        has_eig = "eigen_difference" in (s.get("information_loss") or {})
        sections.append(
            (
                "Information loss",
                table(lrows, header=("variable", "values changed", "values suppressed",
                                     "share lost", "IL1"))
                + (f"<p>IL1 over all numeric variables changed: {fmt(il1_all)}</p>"
                   if il1_all is not None else "")
                + (f"<p>Difference of eigenvalues (sdcMicro): {percent(eig)}</p>"
                   if has_eig else "")
                + "<p class='note'>Templ et al. 2014, section 5.1: share of values changed "
                "or set to missing; IL1 = mean |x − z| / (√2 S) for numeric variables "
                "(Yancey, Winkler and Creecy 2002)"
                + ("; difference of eigenvalues Σ |e1 − e2| / e1 over the eigenvalues of the "
                   "correlation matrices of the original and the protected numeric variables "
                   "(sdcMicro's dUtility “eigen”, 0 when the correlations are kept; 0 for one "
                   "variable)" if has_eig else "")
                + ".</p>",
            )
        )
    return sections


#: Counts of protect's risk that do not depend on the risk model: ``protect --model
#: latent-class`` keeps them (from the closed-form measurement) in ``risk.before`` and
#: ``risk.after``, and its report shows them; the last is the k-anonymity row's sub-row.
PROTECT_MODEL_FREE = ("n_records", "n_cells", "n_sample_uniques", "k_anonymity_violations",
                      "n_missing_key_records", "k_anonymity_violations_suppression")
#: Rows of protect's latent-class risk table that do not depend on the model.
_PROTECT_MODEL_FREE_LABELS = {
    key: _PROTECT_RISK_LABELS[key] for key in PROTECT_MODEL_FREE if key in _PROTECT_RISK_LABELS}


def _protection_report_latent_class(s: Mapping[str, Any]) -> str:
    """The report.html of ``protect --model latent-class``.

    The risk table gives the model's expected re-identifications (before: the fit's
    assessment of the input; after: the protected file scored from the same draws; both
    with posterior predictive intervals, an older summary's after-interval over the
    parameters only, labelled so), the blanked
    records' share, the closed form's numbers beside them (sdcMicro parity) and the
    model-free counts; a section gives the fit and its diagnostics before and after.
    """
    risk = s.get("risk") or {}
    before, after = risk.get("before") or {}, risk.get("after") or {}
    cf = risk.get("closed_form") or {}
    cf_b, cf_a = cf.get("before") or {}, cf.get("after") or {}
    fit = risk.get("fit") or {}
    k = risk.get("k")
    level = interval_level_text(fit.get("interval_level")) or "90%"

    def iv(d: Mapping[str, Any], value: str, interval: str) -> str:
        lo, hi = (d.get(interval) or [None, None])[:2]
        return _estimate_interval_text(d.get(value), lo, hi)

    # the released-file interval is predictive; a summary.json from before it was (0.x)
    # has the interval over the parameters only, and says which it shows
    after_pred = "expected_reidentifications_interval" in after
    suffix = "_interval" if after_pred else "_hyper_interval"
    rows = _protection_risk_rows(before, after, _PROTECT_MODEL_FREE_LABELS, k)
    rows += [
        (f"expected re-identifications (latent-class), {level} interval",
         iv(before, "expected_reidentifications", "expected_reidentifications_interval"),
         iv(after, "expected_reidentifications", "expected_reidentifications" + suffix)),
        ("interval of", PREDICTIVE, PREDICTIVE if after_pred else f"{PARAMETERS_ONLY} only"),
        ("expected re-identification rate (latent-class)",
         _percent_cell(before.get("expected_reidentification_rate")),
         _percent_cell(after.get("expected_reidentification_rate"))),
        ("records with a blank (values blanked)", 0,
         f"{after.get('n_blanked_records')} ({after.get('n_blanks')})"),
        ("their expected re-identifications (latent-class)", "–",
         iv(after, "expected_reidentifications_blanked_records",
            "expected_reidentifications_blanked_records" + suffix)),
        ("largest record risk (latent-class)", before.get("max_risk"), after.get("max_risk")),
        ("records above the benchmark rule at their mean risk (latent-class)",
         before.get("n_above_benchmark_at_mean_risk"),
         after.get("n_above_benchmark_at_mean_risk")),
        ("expected re-identifications, closed form (sdcMicro)",
         cf_b.get("expected_reidentifications"), cf_a.get("expected_reidentifications")),
        ("records above the benchmark rule, closed form", cf_b.get("n_above_benchmark"),
         cf_a.get("n_above_benchmark")),
    ]
    if "n_above_threshold" in cf_a:
        rows.append(("records above the risk threshold, closed form (the step's measure)",
                     cf_b.get("n_above_threshold"), cf_a.get("n_above_threshold")))
    if "household_expected_reidentifications" in before:  # --household
        def hh_kind(d: Mapping[str, Any]) -> str:
            # a summary.json from before the predictive one has no kind: over θ only
            return PREDICTIVE if _household_predictive(d) else f"{PARAMETERS_ONLY} only"

        rows += [
            ("households", before.get("n_households"), after.get("n_households")),
            (f"household expected re-identifications (latent-class), {level} interval",
             iv(before, "household_expected_reidentifications",
                "household_expected_reidentifications_interval"),
             iv(after, "household_expected_reidentifications",
                "household_expected_reidentifications_interval")),
            ("interval of", hh_kind(before), hh_kind(after)),
        ]
        if "household_expected_reidentified_households" in before:
            # the same risks once per household, its interval of the same kind
            rows.append((
                f"expected re-identified households (latent-class), {level} interval",
                iv(before, "household_expected_reidentified_households",
                   "household_expected_reidentified_households_interval"),
                iv(after, "household_expected_reidentified_households",
                   "household_expected_reidentified_households_interval")))
        rows += [
            ("household expected re-identifications, closed form (sdcMicro)",
             cf_b.get("household_expected_reidentifications"),
             cf_a.get("household_expected_reidentifications")),
            ("expected re-identified households, closed form",
             cf_b.get("household_expected_reidentified_households"),
             cf_a.get("household_expected_reidentified_households")),
        ]
    fit_rows = [
        ("fitted on", fit.get("fitted_on")),
        ("sampler", f"{fit.get('method')}: {fit.get('chains')} chains x {fit.get('draws')} "
                    f"draws after {fit.get('tune')} sweeps, seed {fit.get('seed')}"),
        ("population size N (weights' sum)", fit.get("population_size")),
        ("unobserved key combinations per pattern evaluated exactly", fit.get("top_cells")),
    ]
    od = fit.get("overdispersion") or {}
    if od:
        lo, hi = (od.get("kappa_interval") or [None, None])[:2]
        fit_rows.append(("cell overdispersion kappa (median, interval; none: Poisson)",
                         f"{fmt(od.get('kappa_median'))} [{fmt(lo)}, {fmt(hi)}]"))
    sections = [
        _protection_steps_section(s),
        (
            "Disclosure risk before and after",
            table(rows, header=("quantity", "original", "protected"))
            + "<p class='note'>Latent-class model (what <code>sdcbayes assess</code> fits), "
            "fitted once on the original file. Original: its assessment, posterior means with "
            f"{esc(level)} posterior predictive intervals (the parameters and the unknown "
            "population counts F together). Protected: the released file scored from the same "
            "draws: a record's F sums the population counts of every key combination its shown "
            "values fit (a blank matches every level, a recoded value every level it merges); "
            "its risk is the posterior mean of E(1/F | parameters), and the interval of its "
            "expected re-identifications "
            + ("is posterior predictive too (one population per parameter draw, shared by "
               "every released record)" if after_pred else
               "is over the parameters' posterior only, not predictive, so narrower")
            + ". The closed-form rows are Benedetti-Franconi's plug-in "
            "(Polettini, eq. 1–3), " + esc(_closed_form_formula(s)) + ", with missing key "
            "values matching "
            "any value; it understates a sample's risk. "
            f"Key variables: {esc(', '.join(map(str, s.get('keys', []))))}; weight: "
            f"{esc(s.get('weight') or 'none')}.</p>"
            + _household_note(s, latent_class=True)
            + _k_anonymity_note(s)
            + _randomised_note(s),
        ),
        (
            "Risk model: the fit and its diagnostics",
            dict_table(dict(fit_rows), header=("setting", "value"))
            + "<h3>Original (the fit: τ1, τ2 and expected re-identifications)</h3>"
            + diagnostics_table(before.get("diagnostics") or {}, fit.get("method"))
            + "<h3>Protected (expected re-identifications given the parameters)</h3>"
            + diagnostics_table(after.get("diagnostics") or {}, fit.get("method")),
        ),
    ]
    sections += _protection_l_diversity_section(s)
    sections += _protection_numeric_risk_section(s)
    sections += _protection_loss_section(s)
    return render("Protection: risk before and after", sections, s.get("provenance"), s)


# --------------------------------------------------------------------------- compare
def _whole(v: Any) -> Any:
    """A count that is a whole number as an int (415.0 -> 415); others unchanged."""
    if isinstance(v, (float, np.floating)) and math.isfinite(float(v)) \
            and float(v).is_integer():
        return int(v)
    return None if _is_missing(v) else v


def _count(v: Any) -> Any:
    """A count, or a quantile of one, as a whole number (19.0 -> 19, 300.05 -> 300).

    Quantiles of integer draws can be interpolated between two counts; as the terminal
    does, they are shown rounded to the nearest whole number. Missing stays missing
    (None), anything not a finite number unchanged.
    """
    if _is_number(v) and math.isfinite(float(v)):
        return int(round(float(v)))
    return None if _is_missing(v) else v


def _comparison_stratum_section(by_stratum: Mapping[str, Sequence[Mapping[str, Any]]],
                                limit: int = MAX_STRATA_SHOWN) -> str:
    """Compare's per-stratum results: every model's expected re-identifications side by side.

    ``by_stratum`` is summary.json's: per model name, the list ``sdcbayes assess``
    writes (:func:`_stratum_section`). Records and sample uniques are the file's, the
    same under every model. At most ``limit`` strata, in their own order when all fit
    and otherwise the ``limit`` with the most expected re-identifications under any
    model (ties in their own order), with a line saying how many more there are and
    where they all are.
    """
    names = list(by_stratum)
    per_model = [list(by_stratum[n]) for n in names]
    strata = per_model[0]
    # one model's i-th row is every model's i-th stratum (sdcbayes.cli.by_stratum keeps
    # the strata in md.strata_levels' order)
    risks = [[_stratum_risk(rows[i]) for rows in per_model] for i in range(len(strata))]
    order = list(range(len(strata)))
    more = ""
    if len(order) > limit:
        order = sorted(order, key=lambda i: max(risks[i]), reverse=True)[:limit]
        more = (f"<p class='note'>The {limit:,} strata with the most expected "
                f"re-identifications under any model are shown; {len(strata) - limit:,} "
                f"more are not. by_stratum.csv (and summary.json's by_stratum) holds all "
                f"{len(strata):,}.</p>")
    rows = [[_label(strata[i].get("stratum")), strata[i].get("n_records"),
             strata[i].get("n_sample_uniques"),
             *(rows_of[i].get("expected_reidentifications") for rows_of in per_model)]
            for i in order]
    header = ["stratum", _STRATUM_LABELS["n_records"], _STRATUM_LABELS["n_sample_uniques"],
              *names]
    return (
        "<p>Records and sample uniques per stratum, then each model's expected "
        "re-identifications there (one column per model, named as in the comparison).</p>"
        + table(rows, header=header)
        + more
        + "<p class='note'>Per model, a stratum's expected re-identifications sum its "
        "records' risks (as <code>sdcbayes assess --strata</code> reports them); a model's "
        "strata add up to its expected re-identifications above. The key combinations span "
        "the strata: a record's risk is its cell's, whatever its stratum. Dropped records "
        "count nowhere.</p>"
    )


def comparison_report(result, summary: Mapping[str, Any], top: int = 30) -> str:
    """The ``report.html`` of ``sdcbayes compare`` (issue 4).

    Sections: the model specifications and priors; the comparison table (PSIS-LOO
    within a likelihood family only, tau1, tau2 and expected re-identifications (with
    households also the household ones) with
    their intervals (each row's level, from its assessment) and the truth when
    known; with a stratum column, each model's expected re-identifications per
    stratum), diagnostics, fit time; the decisions per
    model at the target (seed 003, Sections 2 and 4); one frontier plot per loss pair
    with one curve per model and random suppression (seed 003, Figure 1); the cells
    whose decision changes between models.
    """
    s = summary
    t = result.table
    spec_rows = [(r.name, r.model, r.method, r.priors or "–") for r in t.itertuples(index=False)]
    truth = s.get("truth") or {}

    def iv(mean, lo, hi):
        return _estimate_interval_text(mean, lo, hi)

    # each row's own level (its assessment's quantiles): one heading when they agree,
    # a level per row when they do not, never a level no row has
    assessments = getattr(result, "assessments", None) or {}
    levels = [interval_level_text((getattr(assessments.get(r.name), "summary", None) or {})
                                  .get("interval_level"))
              for r in t.itertuples(index=False)]

    def no_interval(r) -> str:
        # the closed form of a file that is its own population (every plug-in p = 1) has
        # no interval, as in `assess`: its note instead (comparison.csv interval_note)
        note = getattr(r, "interval_note", "")
        return note if isinstance(note, str) else ""

    # a row without an interval has no level: the others' decide the heading
    with_level = [lv for r, lv in zip(t.itertuples(index=False), levels, strict=True)
                  if not no_interval(r)]
    one_level = len(set(with_level)) == 1 and with_level[0] is not None
    risk_title = (f"Risk: estimates with {with_level[0]} intervals" if one_level
                  else "Risk: estimates with intervals (levels per row)" if with_level
                  else "Risk: estimates (no intervals)")
    # --household: the household expected re-identifications in a column after the ER
    households = "household_er" in t.columns
    risk_rows = [
        # τ1's bounds are quantiles of a count: [6, 19], not [6.0, 19.0]
        (r.name, iv(r.tau1, _count(r.tau1_lo), _count(r.tau1_hi)),
         iv(r.tau2, r.tau2_lo, r.tau2_hi),
         iv(r.er, r.er_lo, r.er_hi),
         *((iv(r.household_er, r.household_er_lo, r.household_er_hi),) if households else ()),
         r.interval_kind if one_level else f"{level or 'level unknown'}, {r.interval_kind}")
        if not no_interval(r) else
        (r.name, fmt(r.tau1), fmt(r.tau2), fmt(r.er),
         *((fmt(r.household_er),) if households else ()), no_interval(r))
        for r, level in zip(t.itertuples(index=False), levels, strict=True)
    ]
    if truth:
        risk_rows.append(("truth", fmt(truth.get("tau1")), fmt(truth.get("tau2")),
                          fmt(truth.get("expected_reidentifications")),
                          *((fmt(truth.get("household_expected_reidentifications")),)
                            if households else ()), "known (simulated data)"))
    loo_rows = [
        (r.name, r.likelihood_family or "–", None if r.elpd_loo != r.elpd_loo else r.elpd_loo,
         None if r.elpd_loo_se != r.elpd_loo_se else r.elpd_loo_se,
         None if r.loo_rank != r.loo_rank else int(r.loo_rank),
         None if r.elpd_diff != r.elpd_diff else r.elpd_diff, r.loo_note)
        for r in t.itertuples(index=False)
    ]

    def num(v):
        return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v

    def chain_diagnostics(r):
        if getattr(r, "method", None) in APPROXIMATIONS:
            # independent draws from an approximation: as the assess report and terminal
            return (NOT_APPLICABLE_APPROXIMATION,) * 4
        # divergences: a count (the table's float column would show 0 as 0.0)
        return (num(r.max_r_hat), num(r.min_ess_bulk), num(r.min_ess_tail),
                _whole(num(r.divergences)))

    diag_rows = [(r.name, *chain_diagnostics(r), num(r.fit_seconds))
                 for r in t.itertuples(index=False)]
    dec_rows = [
        (r.name, r.n_published, r.n_suppressed, num(r.c), r.suppression_at_target)
        for r in t.itertuples(index=False)
    ]
    threshold = (s.get("settings") or {}).get("threshold")
    if "n_above_threshold" in t.columns:
        # --threshold: records whose risk exceeds it (the closed form a count, a posterior
        # model the posterior mean of the count)
        risk_rows = [(*row[:-1], _whole(n), row[-1]) for row, n in
                     zip(risk_rows, list(t["n_above_threshold"]) + [None] * (len(risk_rows)
                                                                          - len(t)),
                         strict=True)]
    risk_header = ("model", "τ1", "τ2", "expected re-identifications",
                   *(("household re-identifications",) if households else ()),
                   *((f"records with risk above {fmt(threshold)}",)
                     if "n_above_threshold" in t.columns else ()),
                   "interval")
    hh_note = ""
    if households:
        # assess's count: the households with a record in the assessment
        n_hh = next((a.summary.get("n_households") for a in assessments.values()
                     if isinstance(getattr(a, "summary", None), Mapping)), None)
        hh_note = (
            "<p class='note'>Household re-identifications: sdcMicro's household "
            "(hierarchical) risk, a record re-identified when any member of its household "
            "is: Σ<sub>h</sub> |h| (1 − Π<sub>i∈h</sub>(1 − r<sub>i</sub>))"
            + (f" over the {n_hh:,} households" if isinstance(n_hh, int) else "")
            + ", as <code>sdcbayes assess --household</code> reports it for the model and "
            "seed; its interval is of the row's kind (comparison.csv "
            "household_interval_kind). Not given per stratum.</p>")
    sections = [
        ("Models", table(spec_rows, header=("name", "model", "method", "priors (merged)"))),
        (
            risk_title,
            table(risk_rows, header=risk_header)
            + "<p class='note'>τ1: sample uniques that are population uniques; τ2: expected "
            "correct matches among sample uniques; expected re-identifications: Σ f<sub>k</sub>"
            " E(1/F<sub>k</sub>). For the posterior models means are posterior means and "
            "intervals posterior predictive (parameter uncertainty and the randomness of the "
            "unknown F<sub>k</sub>); the closed form's are not: its intervals are the "
            "randomness of F<sub>k</sub> given the plug-in p = f/F̂ alone, with no parameter "
            "uncertainty (column “interval”).</p>" + hh_note,
        ),
    ]
    by_stratum = s.get("by_stratum")
    if isinstance(by_stratum, Mapping) and by_stratum and all(
            isinstance(v, (list, tuple)) and v for v in by_stratum.values()):
        sections.append(("Risk by stratum", _comparison_stratum_section(by_stratum)))
    sections += [
        (
            "Fit: PSIS-LOO within a likelihood family",
            table(loo_rows, header=("model", "likelihood", "elpd_loo", "se", "rank",
                                    "elpd_diff", "note"))
            + "<p class='note'>LOO compares models of the same data only: the Poisson-gamma "
            "fits share the counts of counts; the negative-binomial model's likelihood is the "
            "within-cell spread of the weights; the closed form has no likelihood, and the "
            "latent-class model's Gibbs fit stores no pointwise log-likelihood (no LOO; compare "
            "it by its risks and decisions). Numbers from different likelihoods are not "
            "comparable and are not ranked against each other.</p>",
        ),
        (
            "Sampling diagnostics and fit time",
            table(diag_rows, header=("model", "max r_hat", "min ESS bulk", "min ESS tail",
                                     "divergences", "fit seconds"))
            + ("<p class='note'>n/a (approximation): a MAP (Laplace) or ADVI fit draws "
               "independently from an approximation of the posterior; there are no Markov "
               "chains to diagnose.</p>"
               if any(getattr(r, "method", None) in APPROXIMATIONS
                      for r in t.itertuples(index=False)) else ""),
        ),
        (
            f"Decisions at the target ({result.pairs[0]})",
            table(dec_rows, header=("model", "cells published", "cells suppressed",
                                    "trade-off c", "suppressed share at target"))
            + f"<p class='note'>Cells are published in order of R1/R0 until the disclosure "
            f"loss is {percent(float(s.get('target_risk') or 0))} of its full-publication "
            "value (Zaslavsky &amp; Horton 1998, Sections 2 and 4). Under the default pair "
            "R1/R0 is the individual risk E(1/F<sub>k</sub>).</p>",
        ),
    ]
    fr = result.frontiers
    for pair in result.pairs:
        series = {}
        for name in fr["model"].unique():
            sub = fr[(fr["model"] == name) & (fr["pair"] == pair)]
            series[str(name)] = (sub["disclosure_share"].to_numpy(),
                                 sub["nonpublication_share"].to_numpy())
        series["random suppression"] = (np.array([0.0, 1.0]), np.array([1.0, 0.0]))
        sup = result.suppression[result.suppression["pair"] == pair]
        sections.append(
            (
                f"Frontier under {pair}",
                svg_lines(series, title=f"Frontier per model: {pair}",
                          xlabel="disclosure share (0 = nothing published, 1 = all)",
                          ylabel="nonpublication share", xlim=(0.0, 1.0), ylim=(0.0, 1.0),
                          width=720)
                + table([(r.model, r.suppression_at_target) for r in sup.itertuples()],
                        header=("model", "suppressed share at target"))
                + "<p class='note'>Each model's cells in its own order of R1/R0 under this "
                "pair, both losses normalised to run from 0 to 1 (Zaslavsky &amp; Horton 1998, "
                "Figure 1).</p>",
            )
        )
    for name, ppc in (s.get("predictive_checks") or {}).items():
        # each latent-class fit's check, as the assess report shows it (misfit: warned)
        sections.append((f"Predictive check of {name}", predictive_check_section(ppc)))
    d = result.decisions
    changed = d[d["changed"]]
    pub_cols = [c for c in d.columns if str(c).startswith("publish_")]
    key_cols = [c for c in d.columns if c not in pub_cols and not str(c).startswith("risk_")
                and c not in ("changed", "Fk_hat", "f_exact")]
    crow = [
        tuple(key_value(r[c]) if c != "fk" else int(r[c]) for c in key_cols)
        + tuple("publish" if bool(r[c]) else "suppress" for c in pub_cols)
        for _, r in changed.head(top).iterrows()
    ]
    sections.append(
        (
            f"Cells whose decision changes ({len(changed):,} of {len(d):,})",
            (table(crow, header=[str(c) for c in key_cols]
                   + [str(c)[len("publish_"):] for c in pub_cols])
             if crow else "<p>The models agree on every cell.</p>")
            + (f"<p class='note'>First {top} shown; all are in decisions.csv.</p>"
               if len(changed) > top else ""),
        )
    )
    return render("Comparing models and priors: risk, fit and decisions", sections,
                  s.get("provenance"), s)


def calibration_report(calibration, title: str = "Calibration of P(F = 1 | f = 1)",
                       provenance: Mapping | None = None) -> str:
    """A calibration plot (reliability diagram) per design, as a self-contained page.

    ``calibration``: the binned table of :func:`sdcbayes.validation.calibration_table`
    (several designs concatenated). Each design's plot shows, per method, the observed
    share of population uniques against the mean predicted P(F = 1 | f = 1) in every
    non-empty bin (dots joined by lines; a method that gives every sample unique the same
    probability has one dot), beside the diagonal of perfect calibration; a table gives
    :func:`sdcbayes.validation.calibration_error` (ECE) per design and method.
    Methods without record-level predictions have no bins and no line.
    """
    from sdcbayes.validation import calibration_error

    err = calibration_error(calibration)
    sections = [(
        "Expected calibration error",
        "<p>Sample-unique records pooled over the replicates; ECE is the records' mean "
        "distance from the diagonal (binned), max gap that of the worst bin holding at "
        "least 1% of them.</p>"
        + table([(r.design, r.method, f"{r.records:,}", fmt(r.mean_predicted, 3),
                  fmt(r.observed, 3), fmt(r.ece, 3), fmt(r.max_gap, 3))
                 for r in err.itertuples()],
                header=("design", "method", "records", "mean predicted", "observed share",
                        "ECE", "max gap")),
    )]
    for design, g in calibration.groupby("design", sort=False):
        series = {"calibrated": (np.array([0.0, 1.0]), np.array([0.0, 1.0]))}
        for method, m in g.groupby("method", sort=False):
            m = m[m["n"] > 0]
            if len(m):
                series[method] = (m["mean_predicted"].to_numpy(float),
                                  m["observed"].to_numpy(float))
        sections.append((str(design), svg_lines(
            series, title=str(design), xlabel="mean predicted P(F=1|f=1) in the bin",
            ylabel="share population-unique", xlim=(0.0, 1.0), ylim=(0.0, 1.0),
            markers=[k for k in series if k != "calibrated"])))
    return render(title, sections, provenance)
