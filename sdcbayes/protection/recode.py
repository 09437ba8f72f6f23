"""Global recoding (seed 001, section 4.1.1).

Global recoding makes the key variables coarser for *all* records: merging
categories of a categorical variable, cutting a numeric variable into bands,
and top or bottom coding (values above/below a threshold replaced by the
threshold or another value). Each function returns a new frame and a log.

This module may import NumPy and pandas only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.protection.base import (
    ProtectionResult,
    check_columns,
    check_frame,
    output_frame,
    same_cells,
    stamped,
)

__all__ = ["merge_levels", "band", "top_code", "bottom_code"]


def _one_column(frame: pd.DataFrame, column: Any) -> str:
    cols = check_columns(frame, column, "column")
    if len(cols) != 1:
        raise InputError(f"column={column!r} must name one column; recode columns one at a time")
    return cols[0]


@stamped
def merge_levels(
    frame: pd.DataFrame, column: str, mapping: Mapping[Any, Any]
) -> ProtectionResult:
    """Merge categories: every value ``old`` in ``mapping`` becomes ``mapping[old]``.

    Values not in ``mapping`` are kept; missing values stay missing. A new
    level that is missing (``None``, ``numpy.nan``, ``pandas.NA``) blanks the
    old level: its values become missing (and, in a categorical column, it
    leaves the categories). A
    categorical column stays categorical, with the merged categories in order of
    first appearance among the old categories. Other columns keep their dtype
    (``int64``, nullable ``Int64``, ``string``, ...) unless the new levels do not
    fit it: integer levels merged into ``2.5`` give a float column, into text an
    ``object`` column.

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    column : str
        The categorical (or any) variable whose levels are merged.
    mapping : mapping
        Old level -> new level, e.g. ``{"20s": "20-39", "30s": "20-39"}``.

    Returns
    -------
    ProtectionResult
        ``log``: one row per mapped level: ``variable``, ``original``,
        ``recoded``, ``n_records``. ``summary``: ``n_changed`` (records whose
        value changed), ``levels_before``, ``levels_after``.

    Raises
    ------
    InputError
        A level of ``mapping`` does not occur in the column (likely a typo), or a
        new level is not a single value.
    """
    frame = check_frame(frame)
    col = _one_column(frame, column)
    if not isinstance(mapping, Mapping) or not mapping:
        raise InputError("mapping must be a non-empty dict old level -> new level")
    bad = [v for v in mapping.values() if not pd.api.types.is_scalar(v)]
    if bad:
        raise InputError(
            f"new levels {bad[:5]} of mapping are not single values; map each old level to "
            "one label (a string or a number)"
        )
    s = frame[col]
    is_cat = isinstance(s.dtype, pd.CategoricalDtype)
    present = pd.Index(s.cat.categories) if is_cat else pd.Index(s.dropna().unique())
    unknown = [k for k in mapping if k not in present]
    if unknown:
        raise InputError(
            f"levels {unknown} of mapping do not occur in column {col!r}; use its levels "
            f"{list(present[:20])}"
        )
    mapped = s.isin(list(mapping)).to_numpy()
    if is_cat:
        old = list(s.cat.categories)
        new_of_old = [mapping.get(c, c) for c in old]
        # a missing new level is no category (pandas refuses null categories): code -1
        new_cats = list(dict.fromkeys(v for v in new_of_old if not pd.isna(v)))
        position = {v: i for i, v in enumerate(new_cats)}
        code_map = np.array(
            [-1 if pd.isna(v) else position[v] for v in new_of_old] + [-1], dtype=np.int64
        )
        codes = s.cat.codes.to_numpy()
        recoded = pd.Series(
            pd.Categorical.from_codes(code_map[codes], categories=new_cats, ordered=s.cat.ordered),
            index=s.index,
        )
    else:
        recoded = _replaced(s, dict(mapping))
    out = output_frame(frame)
    out[col] = recoded
    counts = s.value_counts(dropna=True)
    log = pd.DataFrame(
        {
            "variable": col,
            "original": list(mapping.keys()),
            "recoded": list(mapping.values()),
            "n_records": [int(counts.get(k, 0)) for k in mapping],
        }
    )
    # mapped positions hold observed values: a new level that is missing counts as a change
    changed = mapped & ~same_cells(s, recoded)
    summary = {
        "method": "merge_levels",
        "variable": col,
        "n_changed": int(changed.sum()),
        "levels_before": int(s.nunique(dropna=True)),
        "levels_after": int(recoded.nunique(dropna=True)),
    }
    return ProtectionResult(out, log, summary)


def _replaced(s: pd.Series, mapping: dict[Any, Any]) -> pd.Series:
    """``s`` with every value in ``mapping`` replaced, in ``s``'s dtype where it fits.

    ``Series.replace`` keeps the dtype of unmapped values (``Series.map`` would
    leave NaN there and turn int64 into float64) and upcasts plain NumPy dtypes
    itself; nullable dtypes that cannot hold a new level raise instead, and get
    ``Float64`` (numbers) or ``object``.
    """
    if s.dtype != object:
        try:
            return s.replace(mapping)
        except (TypeError, ValueError):
            pass
        new = list(mapping.values())
        numbers = all(
            isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))
            for v in new
        )
        if pd.api.types.is_numeric_dtype(s.dtype) and numbers:
            return s.astype("Float64").replace(mapping)
    # object: mapped per distinct value, not via replace (pandas 2.2 would downcast the
    # result and warn); missing values are left exactly as they were.
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    new_of = np.empty(len(uniques), dtype=object)
    for i, u in enumerate(uniques):
        new_of[i] = mapping.get(u, u)
    values = s.to_numpy(dtype=object, copy=True)
    obs = codes >= 0
    values[obs] = new_of[codes[obs]]
    return pd.Series(values, index=s.index, name=s.name, dtype=object)


@stamped
def band(
    frame: pd.DataFrame,
    column: str,
    breaks: Sequence[float],
    *,
    labels: Sequence[Any] | None = None,
    right: bool = False,
) -> ProtectionResult:
    """Cut a numeric variable into bands (intervals) given by ``breaks``.

    With ``right=False`` (default) the bands are [b_0, b_1), [b_1, b_2), ...,
    the last one closed [b_{m−1}, b_m]; with ``right=True`` they are
    [b_0, b_1], (b_1, b_2], .... The result is an ordered categorical.

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    column : str
        Numeric variable.
    breaks : sequence of float
        Strictly increasing, covering every observed value.
    labels : sequence, optional
        One label per band (default: pandas interval labels as strings,
        e.g. ``"[20, 30)"``).
    right : bool, default False
        Close the bands on the right, ``(b_{i−1}, b_i]`` (the first one closed on
        both sides), instead of on the left.

    Returns
    -------
    ProtectionResult
        ``log``: one row per band: ``variable``, ``band``, ``lower``, ``upper``,
        ``n_records``. ``summary``: ``breaks``, ``n_bands``.
    """
    frame = check_frame(frame)
    col = _one_column(frame, column)
    s = frame[col]
    if not pd.api.types.is_numeric_dtype(s.dtype):
        raise InputError(f"column {col!r} is not numeric; band numeric variables only")
    b = np.asarray(breaks, dtype=np.float64)
    if b.ndim != 1 or b.size < 2 or not (np.diff(b) > 0).all():
        raise InputError(
            f"breaks={list(breaks)!r} must be at least two strictly increasing numbers"
        )
    v = s.to_numpy(dtype=np.float64, na_value=np.nan)
    obs = ~np.isnan(v)
    if (v[obs] < b[0]).any() or (v[obs] > b[-1]).any():
        raise InputError(
            f"values of {col!r} outside the breaks [{b[0]}, {b[-1]}] (observed range "
            f"[{np.nanmin(v)}, {np.nanmax(v)}]); extend the breaks, e.g. with -inf/inf"
        )
    n_bands = b.size - 1
    if labels is None:
        def fmt(x: float) -> str:
            return f"{x:g}"

        if right:
            labels = [
                ("[" if i == 0 else "(") + f"{fmt(b[i])}, {fmt(b[i + 1])}]" for i in range(n_bands)
            ]
        else:
            labels = [
                f"[{fmt(b[i])}, {fmt(b[i + 1])}" + ("]" if i == n_bands - 1 else ")")
                for i in range(n_bands)
            ]
    labels = list(labels)
    if len(labels) != n_bands or len(set(labels)) != n_bands:
        raise InputError(f"labels must be {n_bands} distinct values, one per band")
    # Band index: searchsorted puts each value in its interval; the closed end goes inside.
    if right:
        idx = np.searchsorted(b, v, side="left") - 1
        idx = np.where(v == b[0], 0, idx)
    else:
        idx = np.searchsorted(b, v, side="right") - 1
        idx = np.where(v == b[-1], n_bands - 1, idx)
    idx = np.where(obs, idx, -1).astype(np.int64)
    out = output_frame(frame)
    out[col] = pd.Categorical.from_codes(idx, categories=labels, ordered=True)
    log = pd.DataFrame(
        {
            "variable": col,
            "band": labels,
            "lower": b[:-1],
            "upper": b[1:],
            "n_records": np.bincount(idx[idx >= 0], minlength=n_bands),
        }
    )
    summary = {"method": "band", "variable": col, "breaks": b.tolist(), "n_bands": n_bands}
    return ProtectionResult(out, log, summary)


def _threshold_code(
    frame: pd.DataFrame, column: str, threshold: float, replacement: Any, top: bool
) -> ProtectionResult:
    frame = check_frame(frame)
    col = _one_column(frame, column)
    s = frame[col]
    what = "top" if top else "bottom"
    is_bool = pd.api.types.is_bool_dtype(s.dtype)
    if is_bool or not pd.api.types.is_numeric_dtype(s.dtype):
        # bool passes is_numeric_dtype, but a yes/no variable has no top or bottom
        raise InputError(
            f"column {col!r} is {'boolean' if is_bool else 'not numeric'}; {what} code "
            "numeric variables only (merge_levels recodes categories)"
        )
    if not _finite_number(threshold):
        raise InputError(
            f"threshold={threshold!r} must be a finite number (e.g. 90), not "
            f"{type(threshold).__name__}"
        )
    if replacement is not None and not _finite_number(replacement):
        raise InputError(
            f"replacement={replacement!r} must be a finite number (the value given to the "
            f"coded records, e.g. 90), or None for the threshold; to blank values use "
            "local suppression"
        )
    rep = threshold if replacement is None else replacement
    v = s.to_numpy(dtype=np.float64, na_value=np.nan)
    hit = (v > threshold) if top else (v < threshold)
    out = output_frame(frame)
    new = s.copy()
    if hit.any():
        if pd.api.types.is_integer_dtype(s.dtype) and float(rep) != int(rep):
            new = new.astype(np.float64)
        new = new.mask(pd.Series(hit, index=s.index), rep)
    out[col] = new
    idx = np.flatnonzero(hit)
    log = pd.DataFrame(
        {
            "record": idx.astype(np.int64),
            "variable": col,
            "original": s.to_numpy()[idx],
            "recoded": np.full(idx.size, rep, dtype=np.float64),
        }
    )
    summary = {
        "method": "top_code" if top else "bottom_code",
        "variable": col,
        "threshold": float(threshold),
        "replacement": float(rep),
        "n_changed": int(idx.size),
    }
    return ProtectionResult(out, log, summary)


def _finite_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and bool(np.isfinite(value))
    )


@stamped
def top_code(
    frame: pd.DataFrame, column: str, threshold: float, *, replacement: float | None = None
) -> ProtectionResult:
    """Top coding: values above ``threshold`` become ``replacement`` (default the threshold).

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    column : str
        Numeric variable (boolean columns are refused). Missing values stay missing.
    threshold : float
        Finite number.
    replacement : float, optional
        Finite number given to the coded values (default: the threshold). An
        integer column stays integer unless the replacement has a fraction (then
        float). Missing (NaN) is not accepted: blank values with local suppression.

    Returns
    -------
    ProtectionResult
        ``log``: one row per changed value (``record``, ``variable``, ``original``,
        ``recoded``); ``summary["n_changed"]``.

    Raises
    ------
    InputError
        A non-numeric or boolean column, a threshold or replacement that is not a
        finite number (checked before any work).
    """
    return _threshold_code(frame, column, threshold, replacement, top=True)


@stamped
def bottom_code(
    frame: pd.DataFrame, column: str, threshold: float, *, replacement: float | None = None
) -> ProtectionResult:
    """Bottom coding: values below ``threshold`` become ``replacement`` (default the threshold).

    The mirror of :func:`top_code` (seed 001, section 4.1.1).

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    column : str
        Numeric variable (boolean columns are refused). Missing values stay missing.
    threshold : float
        Finite number.
    replacement : float, optional
        Finite number given to the coded values (default: the threshold). An
        integer column stays integer unless the replacement has a fraction (then
        float). Missing (NaN) is not accepted: blank values with local suppression.

    Returns
    -------
    ProtectionResult
        ``log``: one row per changed value (``record``, ``variable``, ``original``,
        ``recoded``); ``summary["n_changed"]``.

    Raises
    ------
    InputError
        A non-numeric or boolean column, a threshold or replacement that is not a
        finite number (checked before any work).
    """
    return _threshold_code(frame, column, threshold, replacement, top=False)
