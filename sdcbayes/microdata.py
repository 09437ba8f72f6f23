"""Microdata and their cell table: the data layer of sdcbayes.

Reads survey microdata (:func:`read_microdata`), validates them and turns the
key variables into the cell table every model and risk measure works on
(:class:`Microdata`, :class:`CellTable`).

Notation (``ARCHITECTURE.md``; Polettini, seed ``004_``, section 1.1): cross-classifying
the key variables gives a cell space of size K; cell k holds f_k sample records
and F_k population units; F_k is estimated by the weight sum
Fhat_k = Σ_{i ∈ k} w_i (seed ``004_``, eq. 4, with w_i the inverse inclusion
probability). Counts of counts m_j = #{k : f_k = j} are the sufficient
statistics of the Poisson-gamma model (Mokken et al., seed ``000_``, eq. 10;
``ARCHITECTURE.md``), with m_0 = K − #observed cells.

This module may import NumPy and pandas only (pyreadstat and pyarrow are
imported inside :func:`read_microdata` when a file needs them), so that
``import sdcbayes`` stays cheap.

How it stays fast: every key is coded as integers (categorical codes, or an
order-preserving factorisation), the codes are packed into one int64 per record
by mixed radix (re-factorising when the product of the radices would overflow),
cells are numbered by a dense look-up or :func:`numpy.unique`, and f_k, Fhat_k
are :func:`numpy.bincount` sums. No Python loop runs over records or cells.
"""

from __future__ import annotations

import json
import math
import os
import re
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import DataError, InputError, warn_at_caller

__all__ = [
    "DEFAULT_MAX_LEVELS",
    "MISSING_LEVEL",
    "MISSING_POLICIES",
    "READABLE_EXTENSIONS",
    "CellTable",
    "Microdata",
    "MicrodataWarning",
    "as_pandas_frame",
    "read_microdata",
    "require_one_cell_per_record",
    "require_population_beyond_sample",
    "require_unique_index",
    "resolve_columns",
]

#: Missing-key policies understood by :class:`Microdata`.
MISSING_POLICIES = ("wildcard", "category", "drop")

#: The name of the level a missing key value is under ``missing="category"`` where a
#: model lists a key's levels (:meth:`sdcbayes.models.latent_class.LatentClassModel.
#: from_microdata` appends it last to a key with a missing value); the released-file
#: risk and ``protect`` read the fit's levels with it.
MISSING_LEVEL = "<missing>"

#: Default bound on the number of distinct values of one key variable. A key
#: with more levels is almost certainly a continuous variable passed by mistake.
DEFAULT_MAX_LEVELS = 1000

#: At most this many key variables (the missingness pattern of a cell is a bit mask).
MAX_KEYS = 62

_INT64_MAX = np.iinfo(np.int64).max


class MicrodataWarning(UserWarning):
    """The data were usable, but :class:`Microdata` changed what they stand for.

    Issued, for example, under ``missing="drop"`` when every record of a stratum is
    dropped and that stratum's weight goes to the other strata's kept records
    (:class:`Microdata`, ``missing``). The message names the columns, values and
    counts concerned and how to avoid the change.
    """


# --------------------------------------------------------------------------------------
# integer coding helpers (vectorised; loops run over keys or missingness patterns only)
# --------------------------------------------------------------------------------------


def _code_column(series: pd.Series) -> tuple[np.ndarray, pd.Index, int]:
    """Code one key column as int64 in ``[0, n_levels)``, ``-1`` for missing.

    Returns ``(codes, levels, n_declared)``: categoricals keep their declared
    categories (unobserved ones included, they belong to the cell space), other
    levels keep the column's dtype;
    other columns are factorised in sorted order (insertion order when the
    values cannot be sorted, e.g. mixed types), so cell numbers read naturally.
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy().astype(np.int64)
        return codes, dtype.categories, len(dtype.categories)
    if isinstance(dtype, np.dtype) and dtype.kind in "iu" and len(series):
        # Integers in a short range: a dense look-up table is ~3x faster than hashing.
        values = series.to_numpy()
        lo, hi = int(values.min()), int(values.max())
        span = hi - lo + 1
        # (not for uint64 codes beyond int64: the levels are built in int64)
        if span <= 4 * len(values) + 1024 and hi <= _INT64_MAX:
            shifted = (values - lo).astype(np.int64, copy=False)
            present = np.bincount(shifted, minlength=span) > 0
            lookup = np.cumsum(present) - 1
            # the labels keep the column's dtype (uint8 stays uint8), as factorize's do
            levels = pd.Index((np.flatnonzero(present) + lo).astype(values.dtype, copy=False))
            return lookup[shifted], levels, len(levels)
    try:
        codes, uniques = pd.factorize(series, sort=True, use_na_sentinel=True)
    except TypeError:  # unorderable mixed types: keep first-seen order
        try:
            codes, uniques = pd.factorize(series, sort=False, use_na_sentinel=True)
        except TypeError as exc:  # unhashable values (lists, dicts, ...)
            raise DataError(
                f"key {series.name!r} holds values that cannot be compared ({_one_line(exc)}); "
                "store scalars (numbers or text) in key columns"
            ) from None
    return np.asarray(codes, dtype=np.int64), pd.Index(uniques), len(uniques)


def _compact(packed: np.ndarray, total: int) -> tuple[np.ndarray, int, np.ndarray]:
    """Renumber int64 codes in ``[0, total)`` densely, keeping their order.

    Returns ``(dense_codes, n_distinct, distinct_values)`` with ``dense_codes``
    int64. A look-up table when the code range is small (O(n + total), int32
    table to stay in cache), a sort otherwise.
    """
    n = packed.size
    if total <= max(8 * n, 1 << 23) and total < np.iinfo(np.int32).max:
        present = np.zeros(total, dtype=bool)
        present[packed] = True
        lookup = np.cumsum(present, dtype=np.int32)
        lookup -= 1
        uniques = np.flatnonzero(present)
        return lookup[packed].astype(np.int64), int(uniques.size), uniques
    uniques, inverse = np.unique(packed, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64, copy=False), int(uniques.size), uniques


def _pack(columns: list[np.ndarray], radices: list[int]) -> tuple[np.ndarray, int, bool]:
    """Mixed-radix packing of non-negative integer codes into one int64.

    The packed code sorts like the tuple of codes (first column most
    significant). When the product of the radices would overflow int64, the
    partial code is renumbered densely (``_compact``) before continuing, which
    keeps the order.

    Returns ``(packed, total, exact)`` with ``0 <= packed < total``; ``exact`` is
    False when a renumbering happened (the codes can then not be unpacked by
    division).
    """
    packed = columns[0].astype(np.int64, copy=True)
    total = int(radices[0])
    exact = True
    for codes, radix in zip(columns[1:], radices[1:], strict=True):
        if total * int(radix) > _INT64_MAX:
            packed, total, _ = _compact(packed, total)
            exact = False
        packed *= int(radix)
        packed += codes
        total *= int(radix)
    return packed, total, exact


def _unpack(packed: np.ndarray, radices: list[int]) -> list[np.ndarray]:
    """Inverse of an exact :func:`_pack`: the code columns, first key first."""
    out = []
    rest = packed.copy()
    for radix in reversed(radices):
        rest, code = np.divmod(rest, int(radix))
        out.append(code)
    return out[::-1]


def _group(
    columns: list[np.ndarray], radices: list[int]
) -> tuple[np.ndarray, int, list[np.ndarray]]:
    """Group rows by their tuple of codes, groups numbered in sorted tuple order.

    Returns ``(group_of_row, n_groups, group_codes)`` with ``group_codes`` one
    array per column giving each group's codes (decoded from the packed values,
    or gathered from a representative row when the packing had to renumber).
    """
    packed, total, exact = _pack(columns, radices)
    group, n_groups, uniques = _compact(packed, total)
    if exact:
        return group, n_groups, _unpack(uniques, radices)
    rep = np.empty(n_groups, dtype=np.int64)
    rep[group] = np.arange(group.size, dtype=np.int64)  # any row represents its group
    return group, n_groups, [c[rep] for c in columns]


#: Sub-problems of :func:`_wildcard_counts` with at most this many (query, data, key)
#: comparisons are finished by direct pairwise comparison: cheaper than splitting them.
_DIRECT_COMPARISONS = 1 << 14


def _wildcard_counts(
    data: np.ndarray,
    weights: np.ndarray,
    queries: np.ndarray,
    radices,
    stratum_data: np.ndarray | None = None,
    stratum_queries: np.ndarray | None = None,
    n_strata: int = 1,
    *,
    direct_comparisons: int | None = None,
) -> np.ndarray:
    """Sum of ``weights`` over data rows that wildcard-match each query row.

    Rows are int64 code matrices with -1 for missing (observed codes in
    ``[0, radices[j])``); a data row matches a query row when they agree on
    every key observed in both (and on the stratum, which is never missing).
    ``weights`` is one value per data row, shape (n_data,), or several,
    shape (n_data, m); the result has shape (n_queries,) or (n_queries, m).
    Shared by :class:`Microdata` (``missing="wildcard"``) and
    :mod:`sdcbayes.protection.suppression`.

    The search takes the keys one at a time (most levels first) and keeps
    (data rows, query rows) that may still match in groups that agree on every
    key observed in both so far. At key j a group splits in three: queries
    missing j (they keep all data rows), queries observed on j against data
    missing j, and both observed, where the group is refined by the value of
    j. Groups with no rows on one side are dropped, which is what keeps the
    work near the number of actual matches rather than the number of pairs of
    missingness patterns. Keys observed in every row of both sides are folded
    in together, and sub-problems of at most ``direct_comparisons`` (default
    :data:`_DIRECT_COMPARISONS`) comparisons are compared pairwise.
    """
    direct = _DIRECT_COMPARISONS if direct_comparisons is None else int(direct_comparisons)
    weights = np.asarray(weights, dtype=np.float64)
    n_keys = data.shape[1]
    out = np.zeros((queries.shape[0], *weights.shape[1:]), dtype=np.float64)
    if queries.shape[0] == 0 or data.shape[0] == 0:
        return out
    if stratum_data is None:
        g_d = np.zeros(data.shape[0], dtype=np.int64)
        g_q = np.zeros(queries.shape[0], dtype=np.int64)
        n_g = 1
    else:
        g_d = np.asarray(stratum_data, dtype=np.int64)
        g_q = np.asarray(stratum_queries, dtype=np.int64)
        n_g = int(n_strata)

    def group_sums(gd, w, ng):
        if w.ndim == 1:
            return np.bincount(gd, weights=w, minlength=ng)
        return np.column_stack([np.bincount(gd, weights=w[:, c], minlength=ng)
                                for c in range(w.shape[1])])

    # Contiguous columns: the search gathers one key of many rows at a time.
    d_cols = [np.ascontiguousarray(data[:, j]) for j in range(n_keys)]
    q_cols = [np.ascontiguousarray(queries[:, j]) for j in range(n_keys)]
    # Keys with many levels first: they split groups finest, so pruning starts early.
    order = [int(j) for j in np.argsort(-np.asarray(radices, dtype=np.int64), kind="stable")]
    # Explicit stack of nodes (next key position, data rows, query rows, their groups, n groups).
    stack = [(0, np.arange(data.shape[0]), np.arange(queries.shape[0]), g_d, g_q, n_g)]
    while stack:
        pos, di, qi, gd, gq, ng = stack.pop()
        if di.size * qi.size * (n_keys - pos + 1) <= direct:
            match = gq[:, None] == gd[None, :]
            for j in order[pos:]:
                a = q_cols[j][qi][:, None]
                b = d_cols[j][di][None, :]
                match &= (a == b) | (a < 0) | (b < 0)
            out[qi] += match @ weights[di]
            continue
        fold_d, fold_q, fold_r = [], [], []
        while pos < n_keys:
            j = order[pos]
            cd, cq = d_cols[j][di], q_cols[j][qi]
            md, mq = cd < 0, cq < 0
            if md.any() or mq.any():
                break
            fold_d.append(cd)
            fold_q.append(cq)
            fold_r.append(int(radices[j]))
            pos += 1
        if fold_r:
            node = _refine(di, qi, gd, gq, ng, fold_d, fold_q, fold_r)
            if node is None:
                continue
            di, qi, gd, gq, ng = node
            if pos < n_keys:  # the key that stopped the fold, on the surviving rows
                cd, cq = d_cols[j][di], q_cols[j][qi]
                md, mq = cd < 0, cq < 0
        if pos == n_keys:
            out[qi] += group_sums(gd, weights[di], ng)[gq]
            continue
        oq = ~mq
        children = []
        if mq.any():  # key j is a wildcard in these queries: every data row stays
            children.append(_prune(di, qi[mq], gd, gq[mq], ng))
        if oq.any():
            if md.any():  # key j is a wildcard in these data rows
                children.append(_prune(di[md], qi[oq], gd[md], gq[oq], ng))
            od = ~md
            if od.any():
                split = _refine(
                    di[od], qi[oq], gd[od], gq[oq], ng, [cd[od]], [cq[oq]], [int(radices[j])]
                )
                children.append(split)
        stack.extend((pos + 1, *node) for node in children if node is not None)
    return out


_Node = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]


def _prune(di: np.ndarray, qi: np.ndarray, gd: np.ndarray, gq: np.ndarray, ng: int) -> _Node | None:
    """Drop the rows of groups that have no rows on the other side (None: nothing left)."""
    has_q = np.zeros(ng, dtype=bool)
    has_q[gq] = True
    kd = has_q[gd]
    if not kd.any():
        return None
    has_d = np.zeros(ng, dtype=bool)
    has_d[gd[kd]] = True
    kq = has_d[gq]
    return di[kd], qi[kq], gd[kd], gq[kq], ng


def _refine(
    di: np.ndarray,
    qi: np.ndarray,
    gd: np.ndarray,
    gq: np.ndarray,
    ng: int,
    cols_d: list[np.ndarray],
    cols_q: list[np.ndarray],
    radices: list[int],
) -> _Node | None:
    """Split the groups by the (observed) values in ``cols_*``; keep groups with both sides.

    New groups are numbered densely. When the packed (group, values) range is small
    this is a presence table (no sort); otherwise a sort of the packed codes, with
    :func:`_pack` renumbering before an int64 overflow.
    """
    nd = di.size
    total = ng * math.prod(radices)  # Python int: cannot overflow
    if total <= 4 * (nd + qi.size) + 4096:
        code_d, code_q = gd, gq
        for a, b, r in zip(cols_d, cols_q, radices, strict=True):
            code_d = code_d * r + a
            code_q = code_q * r + b
        side = np.zeros(total, dtype=np.int8)
        side[code_d] = 1
        side[code_q] |= 2
        both = side == 3
    else:
        cols = [np.concatenate([gd, gq])] + [
            np.concatenate([a, b]) for a, b in zip(cols_d, cols_q, strict=True)
        ]
        uniq, inv = np.unique(_pack(cols, [ng, *radices])[0], return_inverse=True)
        inv = inv.reshape(-1)
        code_d, code_q = inv[:nd], inv[nd:]
        both = np.zeros(uniq.size, dtype=bool)
        both[code_d] = True
        seen_q = np.zeros(uniq.size, dtype=bool)
        seen_q[code_q] = True
        both &= seen_q
    new_id = np.cumsum(both) - 1
    n_new = int(new_id[-1]) + 1
    if n_new == 0:
        return None
    kd, kq = both[code_d], both[code_q]
    return di[kd], qi[kq], new_id[code_d[kd]], new_id[code_q[kq]], n_new


def _first_position(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _row_ref(frame: pd.DataFrame, position: int) -> str:
    """Name the record at ``position`` (0-based) in a message, counting from 1.

    One convention for every record named in an error (audit UX F5, where "record 5"
    counted from 0 in two messages, said so in a third, and the ragged-line error gave
    1-based file lines): ``record 6 (line 7 of the file)`` for a frame
    :func:`read_microdata` read from a CSV/TSV file, untouched since (the line is
    found again in the file, :func:`_csv_record_line`); else ``record 6, counting from
    1``; for an index other than ``0..n-1`` also the label, ``record 4, counting from
    1 (index label 1003)``: the position alone would send a user who looks the record
    up with ``frame.loc[...]`` to another record whenever the labels are not the
    positions.
    """
    index = frame.index
    number = position + 1
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        line = _csv_record_line(frame, position)
        if line is not None:
            return f"record {number} (line {line} of the file)"
        return f"record {number}, counting from 1"
    return f"record {number}, counting from 1 (index label {_label_text(index[position])})"


def _csv_record_line(frame: pd.DataFrame, position: int) -> int | None:
    """The line of the CSV/TSV file where record ``position`` (0-based) starts, or None.

    Only for a frame whose ``attrs["csv_source"]`` (:func:`_read_csv`) still describes
    it (as many rows as the file has records); the file is read again up to that
    record, as :func:`_ragged_line` reads it (blank lines skipped, a quoted value may
    span lines), so this costs nothing unless an error names a record. pandas carries
    ``attrs`` through ``sort_values``, ``sample``, ``reset_index`` and edits, so the
    record found is compared with the frame's row (:func:`_same_record`) and the line
    is named only when they agree (audit AU3 G3): a reordered frame, or a file
    changed on disk since, gives None ("counting from 1") rather than a wrong line.
    """
    import csv

    src = frame.attrs.get("csv_source")
    if not isinstance(src, dict) or src.get("n_records") != len(frame):
        return None
    try:
        p = Path(src["path"])
        with _csv_open(p, src.get("encoding")) as fh:
            for _ in range(src["skip"]):
                fh.readline()
            reader = csv.reader(fh, delimiter=src["sep"])
            start, header, seen = src["skip"] + 1, True, -1
            for row in reader:
                if row and not header:
                    seen += 1
                    if seen == position:
                        same = _same_record(row, frame.iloc[position], src["names"],
                                            src["sep"] == ";")
                        return start if same else None
                header = header and not row
                start = src["skip"] + reader.line_num + 1
    except (OSError, KeyError, TypeError, ValueError, IndexError, UnicodeError, csv.Error):
        return None
    return None


def _same_record(fields: list[str], row: pd.Series, names: list[str],
                 decimal_comma: bool) -> bool:
    """Whether the file's ``fields`` (under header ``names``) hold the values of ``row``.

    Each column of ``row`` that the file has is compared as :func:`_read_csv` typed
    it: a text with the stripped field, a number with the field read as a number
    (a decimal comma in a semicolon file). A missing value matches any field (an
    ``NA``, a blank, a ``--na-values`` code); columns the file lacks are not compared.
    Not every record is told apart (two records may be equal), but a row moved by a
    sort or an edit almost always differs from the record in its place.
    """
    if len(fields) != len(names):
        return False
    for col, value in row.items():
        if col not in names:
            continue
        text = fields[names.index(col)].strip()
        if isinstance(value, (str, np.str_)):
            if text != value:
                return False
            continue
        try:
            if pd.isna(value):
                continue
        except (TypeError, ValueError):
            return False
        if isinstance(value, (bool, np.bool_)):
            return False  # _read_csv gives no booleans: the frame was changed
        if isinstance(value, (int, float, np.integer, np.floating)):
            try:
                number = float(text.replace(",", ".") if decimal_comma else text)
            except ValueError:
                return False
            if number != float(value):
                return False
            continue
        return False  # a type _read_csv does not give (a category, a date): changed
    return True


def _counted(n: int, what: str) -> str:
    """``"1 value"``, ``"2 values"``: a count and its noun, in the number it needs."""
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _first_at(n: int) -> str:
    """``"at"`` for the one offending record, ``"first at"`` for the first of several."""
    return "at" if n == 1 else "first at"


def _label_text(label: Any) -> str:
    # NumPy scalars as Python ones: 1003, not np.int64(1003)
    if isinstance(label, np.generic):
        label = label.item()
    elif isinstance(label, tuple):  # a MultiIndex label
        label = tuple(v.item() if isinstance(v, np.generic) else v for v in label)
    return repr(label)


def as_pandas_frame(data: Any) -> Any:
    """``data`` as a pandas DataFrame when it is a polars DataFrame or a pyarrow Table.

    Anything that is not a pandas DataFrame but has a ``to_pandas()`` method is
    converted (one copy; the caller's object is untouched); everything else is
    returned as it is, for the caller's own type check.
    """
    if not isinstance(data, pd.DataFrame) and callable(getattr(data, "to_pandas", None)):
        return data.to_pandas()
    return data


def require_unique_index(frame: pd.DataFrame, what: str = "frame") -> None:
    """Raise :class:`DataError` when ``frame``'s index repeats a label.

    Results indexed like the frame (``records`` of an assessment) are matched to
    it by label (``frame.join(records)``, ``records.loc[label]``); a repeated
    label (e.g. after ``pandas.concat`` without ``ignore_index=True``) would
    match each of its records to all of them, adding rows and changing sums.
    """
    index = frame.index
    if index.is_unique:
        return
    dup = index[index.duplicated(keep="first")].unique()
    shown = ", ".join(_label_text(x) for x in dup[:5]) + (", ..." if len(dup) > 5 else "")
    raise DataError(
        f"the {what}'s index repeats {len(dup)} label(s) ({shown}); results are indexed "
        f"like the {what} and joined to it by label, so each label must be unique: pass "
        f"{what}.reset_index(drop=True), or set a unique id column as the index "
        f"({what}.set_index('id'))"
    )


def _quote_list(names) -> str:
    return ", ".join(repr(str(x)) for x in names)


def _short_name(name, width: int = 40) -> str:
    """A column name for a message, cut to ``width`` characters (``"abc..."``).

    A file read with a wrong encoding can have a "column name" holding records of the
    file (audit AU3 G2): an error quoting it whole would print microdata.
    """
    text = str(name)
    return text if len(text) <= width else text[:width - 3] + "..."


def _names_shown(names, limit: int = 20) -> str:
    """The first ``limit`` of ``names`` (each cut by :func:`_short_name`), and how many more."""
    names = [str(n) for n in names]
    shown = ", ".join(_short_name(n) for n in names[:limit])
    return shown + (f", … {len(names) - limit} more" if len(names) > limit else "")


# --------------------------------------------------------------------------------------
# the cell table
# --------------------------------------------------------------------------------------


class CellTable:
    """One row per observed key combination: f_k, Fhat_k, and counts of counts.

    Built by :class:`Microdata` (``md.cells``); not meant to be constructed by hand.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per cell, numbered ``0 .. n_cells-1`` in the order of the key
        codes (first key most significant; missing sorts last). Columns: the key
        columns (labels, with the input dtype), ``fk`` (sample frequency; under
        ``missing="wildcard"`` it includes the wildcard matches, see
        :class:`Microdata`), ``Fk_hat`` (Fhat_k = Σ w_i, seed ``004_`` eq. 4;
        equal to ``fk`` without weights) and ``f_exact`` (the number of records
        whose key values, missing included, are exactly those of the cell).
    fk : numpy.ndarray
        ``table["fk"]``: int64, or float64 when ``missing="wildcard"`` with
        ``0 < alpha < 1`` and some key is missing (fractional wildcard matches).
    Fk_hat : numpy.ndarray
        ``table["Fk_hat"]`` as float64.
    f_exact : numpy.ndarray
        int64 record count of the exact partition; ``f_exact.sum() == n_records``.
        Equals ``fk`` when no key value is missing.
    counts_of_counts : pandas.Series
        m_j = #{k : f_exact_k = j} for the observed j >= 1 (name ``m``, index name
        ``count``). It comes from the exact partition so that m_j are integers
        and Σ_j j·m_j = n_records, as the Poisson-gamma likelihood on counts of
        counts requires (seed ``000_``, eq. 10-12); records with missing keys
        form their own cells here.
    K : int
        Size of the cell space: the product of the numbers of levels of the keys,
        or the value given by the user.
    m0 : int
        K − n_cells (empty cells), clipped at 0.
    n_records, n_cells : int
        Records in the table (excluding those dropped by ``missing="drop"``) and cells.
    has_missing : numpy.ndarray
        bool per cell: some key value of the cell is missing.
    by_stratum : pandas.DataFrame or None
        With a strata column: one row per observed (cell, stratum), columns
        ``cell``, ``stratum`` (label), ``fk`` (exact record count of the cell in
        the stratum) and ``Fk_hat`` (weight sum). Cells are defined by the keys
        alone; these are the per-subpopulation frequencies used by models with
        one (alpha, beta) per subpopulation (seed ``000_``, eq. 11-12). Exact
        partition: no wildcard matching across records.
    counts_of_counts_by_stratum : pandas.Series or None
        m_j per stratum from ``by_stratum["fk"]``: MultiIndex (``stratum``,
        ``count``), name ``m``.
    """

    def __init__(
        self,
        *,
        table: pd.DataFrame,
        f_exact: np.ndarray,
        has_missing: np.ndarray,
        K: int,
        keys: list[str],
        by_stratum: pd.DataFrame | None,
    ) -> None:
        self.table = table
        self.keys = list(keys)
        self.fk = table["fk"].to_numpy()
        self.Fk_hat = table["Fk_hat"].to_numpy()
        self.f_exact = f_exact
        self.has_missing = has_missing
        self.K = int(K)
        self.n_cells = int(f_exact.size)
        self.n_records = int(f_exact.sum())
        self.m0 = max(self.K - self.n_cells, 0)
        self.by_stratum = by_stratum

    @cached_property
    def counts_of_counts(self) -> pd.Series:
        """m_j = #{cells with j records} for j >= 1 (exact partition)."""
        m = np.bincount(self.f_exact)
        j = np.flatnonzero(m)
        j = j[j > 0]
        return pd.Series(m[j], index=pd.Index(j, name="count"), name="m")

    @cached_property
    def counts_of_counts_by_stratum(self) -> pd.Series | None:
        """m_j per stratum: MultiIndex (``stratum``, ``count``), name ``m``."""
        if self.by_stratum is None:
            return None
        m = self.by_stratum.groupby(["stratum", "fk"], observed=True, sort=True).size()
        m.index = m.index.set_names(["stratum", "count"])
        return m.rename("m")

    @property
    def n_sample_uniques(self) -> int:
        """Number of cells (equivalently records) with f_k = 1."""
        return int(np.count_nonzero(self.fk == 1))

    def __len__(self) -> int:
        return self.n_cells

    def __repr__(self) -> str:
        return (
            f"CellTable(n_records={self.n_records}, n_cells={self.n_cells}, K={self.K}, "
            f"sample_uniques={self.n_sample_uniques}, keys={self.keys})"
        )


# --------------------------------------------------------------------------------------
# Microdata
# --------------------------------------------------------------------------------------


class Microdata:
    r"""Survey microdata with key variables, weights, strata and households.

    Validates everything in ``__init__`` (before any heavy work) and never
    modifies ``frame``. The cell table is built lazily on first access of
    :attr:`cells` or :attr:`record_cell` and cached.

    Parameters
    ----------
    frame : pandas.DataFrame
        The sample, one row per record. A polars DataFrame or a pyarrow Table (anything
        with a ``to_pandas()`` method) is converted first; :attr:`frame` is then the
        converted copy. Its index labels must be unique: per-record results are indexed
        like the frame and joined to it by label.
    keys : str or sequence of str
        Key (quasi-identifying) variables. Categorical columns keep their declared
        categories (unobserved ones count in K); other columns are coded by their
        observed distinct values, those of every input record (under
        ``missing="drop"`` a level seen only on dropped records counts in K too: it
        exists in the population the file samples, as a declared category does).
    weight : str, optional
        Column of survey weights w_i (inverse inclusion probabilities). Then
        Fhat_k = Σ_{i∈k} w_i (seed ``004_``, eq. 4). Must be finite, positive and,
        unless ``allow_weights_below_one=True``, at least 1, on every record kept
        (those of records ``missing="drop"`` leaves out are not checked; see there).
    household : str, optional
        Household (cluster) id column, for household risk; no missing ids allowed.
    strata : str, optional
        Stratum (subpopulation) column; no missing values allowed. Cells are
        defined by the keys alone; see :attr:`CellTable.by_stratum`. It may be one
        of the keys (each cell then lies in one stratum); the weight and household
        columns may not.
    missing : {"wildcard", "category", "drop"}
        What a missing key value means.

        ``"wildcard"`` (default; sdcMicro's ``freqCalc`` semantics, so the numbers
        agree with sdcMicro): a missing value stands for any level of that key.
        Two records *match* when they agree on every key observed in both. Let a
        record be *complete* (no key missing), *partial* (some) or *empty* (all).
        Then

        - a complete record counts the complete records with its key values
          (weight 1) and the matching partial records (weight ``alpha``); with a
          single key it also counts the empty records (weight ``alpha``), with
          several keys it does not (sdcMicro leaves them out);
        - a partial record counts the records with exactly its key values,
          missing positions included (weight 1), the matching complete records
          (weight 1) and the matching other partial and empty records
          (weight ``alpha``);
        - an empty record matches everything: f = n and Fhat = Σ w.

        Fhat_k uses the same matches and weights applied to w_i. Cells are the
        distinct key combinations with missing kept as a marker (so a partial
        record's cell is its own pattern), and ``fk``/``Fk_hat`` of a cell are
        those of its records. The counts of counts come from the exact partition
        (:attr:`CellTable.counts_of_counts`).
        ``"category"``: missing is one more level of that key (it adds one level
        to K for each key that has missing values).
        ``"drop"``: records with any missing key are excluded; their
        ``record_cell`` is -1 and their number is reported as ``n_dropped``.
        The persons they stand for are still in the population, so with weights
        (a weight column or ``sampling_fraction``) the kept records are taken to
        stand for them too, missingness being at random within strata: the kept
        weights are multiplied by Σ w (all records) / Σ w (kept records) within
        each stratum (over the whole file without ``strata``), the weighting-class
        non-response adjustment (Kalton & Flores-Cervantes 2003, "Weighting
        methods", J. Official Statistics 19(2), 81-97, section 2, cell weighting).
        The weight sum, the population size N of the posterior models, then stays
        the file's Σ w, and Fhat_k (the adjusted weights summed over the cell, so
        the closed form's p̂_k = f_k / Fhat_k) estimates the cell's count in the
        whole population. :meth:`summary` gives both sums (``sum_weights_input``,
        ``sum_weights_kept``). A dropped record's weight is not validated: it
        counts where a kept record's would be accepted (a finite number, positive,
        at least 1 unless ``allow_weights_below_one``); any other (missing, text,
        zero, 0.5) stands for no one, in neither sum (``n_dropped_unweighted``). A
        stratum every record of which is dropped has no record left to stand for
        it: as a weighting class without respondents it is collapsed with the
        others (ibid.), its weight spread over all kept records in proportion to
        their adjusted weights, so the sum stays the file's; a
        :class:`MicrodataWarning` says so, and :meth:`summary` names the strata
        (``strata_without_records``, ``n_dropped_collapsed``,
        ``sum_weights_collapsed``). Without weights nothing is rescaled
        (Fhat_k = f_k: the kept records are the population). With
        ``sampling_fraction`` the weight sum is N = n_input / f: the kept records
        weigh 1/f times (records / kept records) of their stratum. An ``N`` given to a model is the
        population size as it is. Levels seen only on dropped records still count
        in K (see ``keys``).
    alpha : float, default 1.0
        Weight in [0, 1] of a wildcard match (sdcMicro's ``alpha``); only used
        with ``missing="wildcard"``. ``alpha < 1`` makes ``fk`` fractional.
    K : int, optional
        Size of the cell space. Default: product over keys of the number of
        levels (declared categories, or distinct values observed in the input,
        dropped records included). Validated
        against the number of observed complete cells (the table is then built
        at once).
    sampling_fraction : float, optional
        Alternative to ``weight`` for a simple random sample: every w_i = 1/π.
        Without ``weight`` or ``sampling_fraction``, Fhat_k = f_k, so p̂_k = 1 and
        the Benedetti-Franconi risk reduces to 1/f_k (seed ``004_``, eq. 3).
    allow_weights_below_one : bool, default False
        Accept weights in (0, 1) (e.g. normalised weights). Off by default since
        then Fhat_k < f_k is possible, which no population can produce.
    max_levels : int, default 1000
        Most distinct values one key may have; more means a continuous variable
        was passed as a key (recode it into bands) or the bound must be raised.

    Attributes
    ----------
    frame : pandas.DataFrame
        The input frame (not a copy; never modified).
    keys : list of str
    weight, household, strata : str or None
    missing : str
    alpha : float
    levels : dict of str to pandas.Index
        The levels of each key (declared categories or sorted observed values, with
        the column's dtype).
    n_levels : dict of str to int
        Number of levels per key, as used in K (missing counted under "category").
    weights : numpy.ndarray or None
        float64 weights per input record (from ``weight`` or ``sampling_fraction``);
        under ``missing="drop"`` the kept records' weights are the adjusted ones (see
        ``missing``), the dropped records' as given.
    sum_weights_input, sum_weights_kept : float or None
        Under ``missing="drop"`` with dropped records and weights: the weight sums of
        all input records (dropped ones with a usable weight, see ``missing``) and of
        the kept ones, before the adjustment; else None.
    household_index : numpy.ndarray or None
        int64 household codes per input record (sorted order of the ids).
    household_levels : pandas.Index or None
    stratum_index : numpy.ndarray or None
        int64 stratum codes per input record; ``strata_levels`` their labels.
    missing_key : numpy.ndarray
        bool per input record: some key value is missing.
    dropped : numpy.ndarray
        bool per input record: excluded by ``missing="drop"``.
    n_input, n_records, n_dropped, n_missing_key_records : int

    Notes
    -----
    Cost: coding the keys is O(n) per key (categorical codes are free; integer
    columns in a short range use a look-up table; other dtypes are hashed by
    :func:`pandas.factorize`, strings being the slowest); packing, numbering the
    cells and the bincounts are O(n) more. Measured on a 2-core machine, 10^6
    records and 5 keys (8·10^5 cells), ``Microdata(...).cells`` takes about 0.08 s
    of CPU with integer or categorical keys, 0.16 s with two string keys, and
    about 0.23 s with ``missing="wildcard"`` and 4000 records with missing keys.
    The wildcard matching is a search that prunes key by key
    (:func:`_wildcard_counts`), so its cost follows the matches, not the pairs
    of missingness patterns: with 5 % of each key missing, 10 keys and 2·10^4
    records (173 patterns) take 0.07 s, 15 keys and 10^5 records (about 1000
    patterns) 0.5 s, 8 keys and 10^6 records (a third of them with a missing
    key) about 6 s.

    Raises
    ------
    InputError
        Bad options (unknown policy, alpha outside [0, 1], ...).
    DataError
        Unusable data: missing columns, no rows, a repeated index label, a key with
        too many levels, bad weights, missing household ids or strata.

    Warns
    -----
    MicrodataWarning
        ``missing="drop"`` dropped every record of a stratum, whose weight then goes
        to the other strata's kept records (see ``missing``). A key column of a CSV
        file read by :func:`read_microdata` writes one number as two texts (``"3"``
        and ``"3.0"``, ``"01"`` and ``"1"``), which are kept as two levels.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": ["m", "f", "m"], "age": [30, 30, 30], "w": [10.0, 5, 20]})
    >>> md = Microdata(df, keys=["sex", "age"], weight="w")
    >>> md.cells.table[["sex", "age", "fk", "Fk_hat"]].to_dict("list")
    {'sex': ['f', 'm'], 'age': [30, 30], 'fk': [1, 2], 'Fk_hat': [5.0, 30.0]}
    >>> md.record_cell.tolist()
    [1, 0, 1]
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        keys,
        weight: str | None = None,
        household: str | None = None,
        strata: str | None = None,
        missing: str = "wildcard",
        alpha: float = 1.0,
        K: int | None = None,
        sampling_fraction: float | None = None,
        allow_weights_below_one: bool = False,
        max_levels: int = DEFAULT_MAX_LEVELS,
    ) -> None:
        # ---- options (cheap checks first, nothing touches the data yet) ----
        frame = as_pandas_frame(frame)  # polars and pyarrow tables: one conversion
        if not isinstance(frame, pd.DataFrame):
            raise InputError(
                f"frame must be a pandas DataFrame (or a polars DataFrame or pyarrow Table), "
                f"got {type(frame).__name__}; read files with sdcbayes.read_microdata(path)"
            )
        keys = self._normalise_keys(keys)
        if len(keys) > MAX_KEYS:
            raise InputError(
                f"{len(keys)} keys given; at most {MAX_KEYS} are supported, use fewer keys"
            )
        if missing not in MISSING_POLICIES:
            raise InputError(
                f"missing={missing!r} is not a missing-key policy; "
                f"use one of {', '.join(repr(p) for p in MISSING_POLICIES)}"
            )
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.number)) or not (
            0.0 <= float(alpha) <= 1.0
        ):
            raise InputError(
                f"alpha={alpha!r} must be a number in [0, 1] (the weight of a wildcard match)"
            )
        if (
            isinstance(max_levels, bool)
            or not isinstance(max_levels, (int, np.integer))
            or max_levels < 1
        ):
            raise InputError(f"max_levels={max_levels!r} must be a positive integer, e.g. 1000")
        if K is not None and (
            isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1
        ):
            raise InputError(
                f"K={K!r} must be a positive integer (the size of the cell space) or None"
            )
        if weight is not None and sampling_fraction is not None:
            raise InputError(
                "give either weight= or sampling_fraction=, not both "
                "(sampling_fraction sets every weight to 1/fraction)"
            )
        if sampling_fraction is not None:
            ok = isinstance(sampling_fraction, (int, float, np.number)) and not isinstance(
                sampling_fraction, bool
            )
            if not ok or not (0.0 < float(sampling_fraction) <= 1.0) or not math.isfinite(
                float(sampling_fraction)
            ):
                raise InputError(
                    f"sampling_fraction={sampling_fraction!r} must be in (0, 1], "
                    "e.g. 0.01 for a 1% sample"
                )
        for role, col in (("weight", weight), ("household", household), ("strata", strata)):
            if col is not None and not isinstance(col, str):
                raise InputError(f"{role}= must be a column name (str) or None, got {col!r}")
            # a stratum may be a key (region, often known to an intruder): the cells
            # are the keys' alone, and each then lies in one stratum
            if col is not None and col in keys and role != "strata":
                raise InputError(
                    f"column {col!r} is both a key and the {role} column; "
                    f"remove it from keys or from {role}="
                )

        # ---- columns and rows ----
        wanted = keys + [c for c in (weight, household, strata) if c is not None]
        absent = [c for c in dict.fromkeys(wanted) if c not in frame.columns]
        if absent:
            shown = [str(c) for c in frame.columns[:20]]
            more = ", ..." if frame.shape[1] > 20 else ""
            raise DataError(
                f"column(s) {_quote_list(absent)} not in the data (available: "
                f"{', '.join(shown)}{more}); check the spelling of keys/weight/household/strata"
            )
        if not frame.columns.is_unique:
            dup = frame.columns[frame.columns.duplicated()].unique()
            clash = [c for c in dict.fromkeys(wanted) if c in set(dup)]
            if clash:
                raise DataError(
                    f"column name(s) {_quote_list(clash)} occur more than once in the data; "
                    "rename the duplicates"
                )
        n = len(frame)
        if n == 0:
            raise DataError("the data have no rows; pass a table with at least one record")
        require_unique_index(frame)  # records are indexed like the frame and joined by label

        self.frame = frame
        self.keys = keys
        self.weight = weight
        self.household = household
        self.strata = strata
        self.missing = missing
        self.alpha = float(alpha)
        self.sampling_fraction = None if sampling_fraction is None else float(sampling_fraction)
        self.allow_weights_below_one = bool(allow_weights_below_one)
        self.max_levels = int(max_levels)
        self.n_input = n
        self._K_given = None if K is None else int(K)

        # Column objects are kept (pandas' copy-on-write makes them snapshots) for the
        # labels of the cell table; codes are our own arrays, never views of the frame.
        self._key_series = {k: frame[k] for k in keys}

        # ---- missing keys, weights, ids: cheap checks before the keys are coded ----
        miss_cols = {k: self._key_series[k].isna().to_numpy() for k in keys}
        missing_key = np.zeros(n, dtype=bool)
        for k in keys:
            missing_key |= miss_cols[k]
        self.missing_key = missing_key
        self.n_missing_key_records = int(missing_key.sum())
        if missing == "drop":
            self.dropped = missing_key.copy()
        else:
            self.dropped = np.zeros(n, dtype=bool)
        self.n_dropped = int(self.dropped.sum())
        self.n_records = n - self.n_dropped
        if self.n_records == 0:
            raise DataError(
                f"all {n} records have a missing key value and missing='drop' removes them; "
                "use missing='wildcard' or 'category', or impute the keys"
            )
        kept = ~self.dropped
        self.weights = self._validate_weights(frame, kept)
        self.household_index, self.household_levels = self._code_id(frame, household, "household")
        self.stratum_index, self.strata_levels = self._code_id(frame, strata, "strata")
        self.sum_weights_input: float | None = None
        self.sum_weights_kept: float | None = None
        self._strata_without_records: list[str] = []
        self._n_dropped_collapsed = 0
        self._sum_weights_collapsed = 0.0
        self._n_dropped_unweighted = 0
        self._weights_given: np.ndarray | None = None
        if self.n_dropped and self.weights is not None:
            self._reweight_for_dropped()

        # ---- keys: code as integers (-1 = missing), count levels ----
        codes: dict[str, np.ndarray] = {}
        self.levels: dict[str, pd.Index] = {}
        declared: dict[str, int] = {}
        for k in keys:
            s = self._key_series[k]
            c, lev, nd = _code_column(s)
            if isinstance(s.dtype, pd.CategoricalDtype):  # count observed, not declared
                n_obs = int(np.count_nonzero(np.bincount(c + 1, minlength=nd + 1)[1:]))
            else:
                n_obs = nd
            if n_obs > self.max_levels:
                raise DataError(
                    f"key {k!r} has {n_obs} distinct values, more than max_levels="
                    f"{self.max_levels}: it looks continuous; recode it into bands "
                    "(e.g. pandas.cut) or raise max_levels"
                )
            codes[k] = c
            self.levels[k] = lev
            declared[k] = nd

        # Radix per key: levels, plus one marker code for missing under wildcard/category.
        self.n_levels: dict[str, int] = {}
        self._radix: dict[str, int] = {}
        self._marker: dict[str, int] = {}  # code of "missing" in the packed key, -1 if none
        for k in keys:
            has_na = bool(miss_cols[k][kept].any())
            nd = max(declared[k], 1)
            if has_na and missing in ("wildcard", "category"):
                codes[k] = np.where(miss_cols[k], nd, codes[k])
                self._radix[k], self._marker[k] = nd + 1, nd
            else:
                self._radix[k], self._marker[k] = nd, -1
            self.n_levels[k] = declared[k] + int(has_na and missing == "category")
            if missing == "wildcard" and self.n_levels[k] == 0:
                # Missing in every record: a wildcard everywhere matches every level, so
                # the key splits nothing; as a constant it leaves K as the other keys
                # make it (its zero observed levels used to make K = 0).
                self.n_levels[k] = 1
        self._codes = codes
        self._missing_cols = miss_cols
        for note in (_numbers_written_two_ways(frame, keys, self.levels)
                     + _quoted_missing_texts(frame, keys, self.levels)):
            warn_at_caller(note, MicrodataWarning)

        if self._K_given is not None:
            # Building the table now is the only way to check K against the cells.
            cells = self.cells
            n_space = cells.n_cells
            if missing == "wildcard":  # cells with a wildcard are not points of the space
                n_space -= int(np.count_nonzero(cells.has_missing))
            if self._K_given < n_space:
                raise DataError(
                    f"K={self._K_given} is smaller than the {n_space} observed cells; "
                    "K is the size of the whole cell space, give a larger value or leave K=None"
                )

    # ---------------------------------------------------------------- validation helpers

    @staticmethod
    def _normalise_keys(keys) -> list[str]:
        if isinstance(keys, str):
            keys = [keys]
        if isinstance(keys, (set, frozenset)):
            # the first key is the most significant one of the cell numbering and the
            # table's column order: a set's order changes with the string hash seed
            raise InputError(
                "keys must be an ordered sequence of column names, got a set (its order "
                "changes from run to run); pass a list, e.g. keys=['age', 'sex'] or "
                "keys=sorted(keys)"
            )
        try:
            keys = list(keys)
        except TypeError:
            raise InputError(
                f"keys must be a list of column names, got {type(keys).__name__}; "
                "e.g. keys=['age', 'sex']"
            ) from None
        if not keys:
            raise InputError(
                "keys is empty; pass at least one key variable, e.g. keys=['age', 'sex']"
            )
        bad = [k for k in keys if not isinstance(k, str)]
        if bad:
            raise InputError(
                f"keys must be column names (str), got {bad!r}; e.g. keys=['age'] (for a frame "
                "whose column names are not strings, rename them first: frame.rename(columns=str))"
            )
        dup = [k for k in dict.fromkeys(keys) if keys.count(k) > 1]
        if dup:
            raise InputError(f"key(s) {_quote_list(dup)} listed more than once; list each key once")
        return keys

    def _validate_weights(self, frame: pd.DataFrame, kept: np.ndarray) -> np.ndarray | None:
        if self.sampling_fraction is not None:
            return np.full(self.n_input, 1.0 / self.sampling_fraction)
        if self.weight is None:
            return None
        col = self.weight
        s = frame[col]
        converted = None
        if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
            # Numbers stored as object (after pandas.concat, read_excel, a transpose) or as
            # the categorical read_microdata makes of a weight with a value label are
            # weights all the same; name the values that are no number, so the user can
            # find them in the file.
            vals = s.to_numpy(dtype=object)
            present = ~pd.isna(s).to_numpy()
            if pd.api.types.is_bool_dtype(s.dtype):
                bad = present
            else:
                converted = pd.to_numeric(pd.Series(vals, dtype=object), errors="coerce")
                converted = converted.to_numpy(dtype=np.float64, na_value=np.nan)
                # a record missing="drop" leaves out is not checked (its text reads as
                # no weight: it stands for no one, see _reweight_for_dropped)
                bad = present & np.isnan(converted) & kept
            if bad.any():
                i = _first_position(bad)
                v = str(vals[i])
                shown = list(dict.fromkeys(str(x) for x in vals[bad]))
                others = ""
                if len(shown) > 1:  # name them all (a few), to find them in the file
                    others = "; they are " + ", ".join(repr(x) for x in shown[:5]) + (
                        ", ..." if len(shown) > 5 else "")
                comma = ", and a comma, as thousands or decimal mark, is not read as one"
                if "," in v:
                    # a semicolon CSV read "12,5" as 12.5 unless the column also holds a
                    # "." ("2.500": a thousands separator; audit Z6 F2): name that value
                    point = present & ~bad & np.array(["." in str(x) for x in vals])
                    if point.any():
                        comma = (f", and the column also holds {str(vals[point][0])!r}: one "
                                 "column cannot use both ',' and '.' as the decimal mark, "
                                 "and thousands separators are not read; save the numbers "
                                 "with one decimal mark and no thousands separator")
                n_bad = int(bad.sum())
                raise DataError(
                    f"weight column {col!r} is not numeric (dtype {s.dtype}): "
                    + (f"{n_bad} values are not numbers (first at " if n_bad > 1
                       else "1 value is not a number (at ")
                    + f"{_row_ref(frame, i)}: {v!r})"
                    + (comma if "," in v else "") + others
                    + "; make every value a number or drop those records (in Python, e.g. "
                    "pandas.to_numeric)"
                )
        # A private float64 copy: never a view a caller could write through to the frame.
        if converted is not None:
            w = converted
        else:
            w = np.array(s.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64,
                         copy=True)
        # dropped records are not checked: one without a usable weight stands for no one
        # (_reweight_for_dropped), one is no error
        wk = np.where(kept, w, 1.0)
        bad = ~np.isfinite(wk)
        if bad.any():
            where = _row_ref(frame, _first_position(bad))
            listed = frame.attrs.get("na_values")
            why = (f"; na_values (--na-values) {', '.join(map(str, listed))} apply to the "
                   "weight too: a weight equal to one of them is missing" if listed else "")
            raise DataError(
                f"weight column {col!r} has "
                f"{_counted(int(bad.sum()), 'missing or non-finite value')} "
                f"({_first_at(int(bad.sum()))} {where}{why}); impute them or drop those records"
            )
        bad = wk <= 0
        if bad.any():
            i = _first_position(bad)
            raise DataError(
                f"weight column {col!r} has "
                f"{_counted(int(bad.sum()), 'zero or negative value')} "
                f"({_first_at(int(bad.sum()))} {_row_ref(frame, i)}: {w[i]:g}); survey "
                "weights must be positive, fix or drop those records"
            )
        bad = wk < 1
        if bad.any() and not self.allow_weights_below_one:
            i = int(np.argmin(wk))
            raise DataError(
                f"weight column {col!r} has {_counted(int(bad.sum()), 'value')} below 1 "
                f"(smallest {w[i]:g} at "
                f"{_row_ref(frame, i)}), so Fk_hat < fk would be possible; use inverse "
                "inclusion "
                "probabilities (>= 1) or pass allow_weights_below_one=True"
            )
        # The weight sum is N, and every Fhat_k is part of it: beyond float64's range it
        # is inf, and the risks 0 (1e308 per record gave tau1 = 2e-308 after a bare NumPy
        # overflow warning, audit BB4). Dropped records' usable weights count too
        # (_reweight_for_dropped adds them).
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.sum(np.where(np.isfinite(w) & (w > 0), w, 0.0))
        if not np.isfinite(total):
            raise DataError(
                f"weight column {col!r} sums to more than {np.finfo(np.float64).max:.3g}, "
                f"the largest number a float holds (largest weight {np.nanmax(wk):g}); no "
                "population is that large: check that it is the weight column, or rescale it"
            )
        return w

    def _reweight_for_dropped(self) -> None:
        """Let the kept records stand for the dropped ones (``missing="drop"``).

        Weighting-class non-response adjustment (Kalton & Flores-Cervantes 2003,
        section 2, cell weighting), the strata as classes: every kept weight of stratum
        s is multiplied by Σ_{i∈s} w_i / Σ_{i∈s, kept} w_i, so each stratum keeps its
        weight total and N = Σ w is the file's, not the kept records'.

        A stratum none of whose records is kept is a class without respondents; it is
        collapsed with the others (ibid., section 2: classes too small are collapsed):
        its dropped weight L is spread over every kept record by one more factor
        (T + L) / T, T the kept strata's adjusted total, i.e. in proportion to the
        adjusted weights, so the kept strata keep their shares and N stays the file's.
        The strata are named in a :class:`MicrodataWarning` and in :meth:`summary`.

        Dropped weights are not validated (:meth:`_validate_weights`): a dropped weight
        counts where it would be accepted on a kept record (finite, positive, at least 1
        unless ``allow_weights_below_one``); any other (text, missing, zero, 0.5) stands
        for no one and is counted in ``n_dropped_unweighted``.
        """
        w = self.weights
        kept = ~self.dropped
        usable = self.dropped & np.isfinite(w) & (w > 0)
        if not self.allow_weights_below_one:
            usable &= w >= 1
        if self.stratum_index is None:
            st, n_st = np.zeros(self.n_input, dtype=np.int64), 1
        else:
            st, n_st = self.stratum_index, len(self.strata_levels)
        w_kept = np.bincount(st[kept], weights=w[kept], minlength=n_st)
        w_drop = np.bincount(st[usable], weights=w[usable], minlength=n_st)
        present = w_kept > 0  # kept weights are positive: strata with a kept record
        factor = np.ones(n_st)
        factor[present] = (w_kept[present] + w_drop[present]) / w_kept[present]
        lost = np.flatnonzero(~present & (w_drop > 0))
        lost_weight = float(w_drop[lost].sum())
        if lost.size:
            # collapse the empty classes with all the others: one factor on top
            adjusted_total = float((w_kept + w_drop)[present].sum())
            factor[present] *= (adjusted_total + lost_weight) / adjusted_total
        adjusted = w.copy()
        adjusted[kept] = w[kept] * factor[st[kept]]
        # require_population_beyond_sample judges the file's own weights, those that count
        given = w.copy()
        given[self.dropped & ~usable] = np.nan
        self._weights_given = given
        self.weights = adjusted
        self.sum_weights_input = float(w_kept.sum() + w_drop.sum())
        self.sum_weights_kept = float(w_kept.sum())
        self._n_dropped_unweighted = int(self.n_dropped - usable.sum())
        if lost.size:
            names = [str(v) for v in self.strata_levels.take(lost)]
            n_lost = int(np.count_nonzero(usable & np.isin(st, lost)))
            self._strata_without_records = names
            self._n_dropped_collapsed = n_lost
            self._sum_weights_collapsed = lost_weight
            which = ("stratum " if len(names) == 1 else "strata ") + _quote_list(names)
            warn_at_caller(
                f"missing='drop' left out every record of {which} (strata column "
                f"{self.strata!r}; {n_lost} record{'s' * (n_lost != 1)}, weight "
                f"{lost_weight:g}): no kept record "
                "of that stratum stands for them, so their weight goes to the kept records of "
                "the other strata in proportion to their weights, and N stays the file's "
                f"{self.sum_weights_input:g}; to keep those records, use missing='wildcard' or "
                "'category', or impute their keys",
                MicrodataWarning,
            )

    def _code_id(
        self, frame: pd.DataFrame, col: str | None, role: str
    ) -> tuple[np.ndarray | None, pd.Index | None]:
        if col is None:
            return None, None
        s = frame[col]
        isna = s.isna().to_numpy()
        if isna.any():
            n_na = int(isna.sum())
            what = _counted(n_na, "missing id" if role == "household" else "missing value")
            raise DataError(
                f"{role} column {col!r} has {what} ({_first_at(n_na)} "
                f"{_row_ref(frame, _first_position(isna))}); give every record a {role} "
                f"value or leave {role}=None"
            )
        try:
            codes, uniques = pd.factorize(s, sort=True)
        except TypeError:
            codes, uniques = pd.factorize(s, sort=False)
        return np.asarray(codes, dtype=np.int64), pd.Index(uniques)

    # ---------------------------------------------------------------- the cell table

    @cached_property
    def K(self) -> int:
        """Size of the cell space (Python int: may exceed int64)."""
        if self._K_given is not None:
            return self._K_given
        return math.prod(self.n_levels[k] for k in self.keys)

    @cached_property
    def _partition(self) -> tuple[np.ndarray, list[np.ndarray], int]:
        """Exact partition of the kept records: (record_cell, cell key codes, n_cells).

        Cell key codes are per key, int64 per cell, with the missing marker
        ``self._marker[k]`` where the cell's value is missing.
        """
        kept = ~self.dropped
        all_kept = self.n_dropped == 0
        cols = [self._codes[k] if all_kept else self._codes[k][kept] for k in self.keys]
        radices = [self._radix[k] for k in self.keys]
        cell, n_cells, cell_codes = _group(cols, radices)
        if all_kept:
            record_cell = cell
        else:
            record_cell = np.full(self.n_input, -1, dtype=np.int64)
            record_cell[kept] = cell
        record_cell.flags.writeable = False  # shared by md.record_cell and the risk layer
        return record_cell, cell_codes, n_cells

    @property
    def record_cell(self) -> np.ndarray:
        """int64 cell of each input record, in input order (-1: dropped)."""
        return self._partition[0]

    def _labels(self, key: str, codes: np.ndarray) -> pd.Series:
        """Key labels of the cells, with the dtype of the input column (NA for missing)."""
        codes = np.where(codes == self._marker[key], -1, codes) if self._marker[key] >= 0 else codes
        dtype = self._key_series[key].dtype
        if isinstance(dtype, pd.CategoricalDtype):
            values = pd.Categorical.from_codes(codes, dtype=dtype)
        else:
            # the levels' own array type (its dtype's NA for -1); the module-level
            # pd.api.extensions.take warns on it in pandas 2.2
            values = self.levels[key].array.take(codes, allow_fill=True)
        return pd.Series(values, name=key, copy=False)

    @cached_property
    def cells(self) -> CellTable:
        """The cell table (built on first access, then cached)."""
        record_cell, cell_codes, n_cells = self._partition
        if self.n_dropped:
            kept = record_cell >= 0
            rc = record_cell[kept]
            w = None if self.weights is None else self.weights[kept]
        else:
            rc, w = record_cell, self.weights
        f_exact = np.bincount(rc, minlength=n_cells).astype(np.int64)
        F_exact = (
            f_exact.astype(np.float64)
            if w is None
            else np.bincount(rc, weights=w, minlength=n_cells)
        )
        has_missing = np.zeros(n_cells, dtype=bool)
        if any(self._marker[k] >= 0 for k in self.keys):
            observed = np.zeros(n_cells, dtype=np.int64)  # bit j: key j observed in the cell
            for j, k in enumerate(self.keys):
                observed |= (cell_codes[j] != self._marker[k]).astype(np.int64) << j
            has_missing = observed != (1 << len(self.keys)) - 1
        if self.missing == "wildcard" and has_missing.any():
            fk, Fk_hat = self._wildcard(observed, cell_codes, f_exact, F_exact)
            if self.alpha in (0.0, 1.0):  # every match counts 0 or 1: integer counts
                fk = np.rint(fk).astype(np.int64)
        else:
            fk, Fk_hat = f_exact, F_exact
        if w is None:
            Fk_hat = np.asarray(fk, dtype=np.float64)

        data = {k: self._labels(k, cell_codes[j]) for j, k in enumerate(self.keys)}
        data.update(fk=fk, Fk_hat=Fk_hat, f_exact=f_exact)
        table = pd.DataFrame(data, copy=False)
        table.index.name = "cell"

        by_stratum = None
        if self.stratum_index is not None:
            st = self.stratum_index[record_cell >= 0] if self.n_dropped else self.stratum_index
            by_stratum = self._by_stratum(rc, st, n_cells, w)
        return CellTable(
            table=table,
            f_exact=f_exact,
            has_missing=has_missing,
            K=self.K,
            keys=self.keys,
            by_stratum=by_stratum,
        )

    def _wildcard(
        self,
        observed: np.ndarray,
        cell_codes: list[np.ndarray],
        f_exact: np.ndarray,
        F_exact: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """sdcMicro's wildcard frequencies of the cells, by wildcard searches.

        The match weights of :class:`Microdata` (``missing="wildcard"``) depend on
        the class of the cell (complete, partial, empty) and of the cell it
        matches, so two searches of :func:`_wildcard_counts` do it, each summing
        (f, Fhat) of the matching cells of one class with that class's weight:

        - complete cells: their own count, plus ``alpha`` times the matching
          partial cells (a complete cell matches no other complete cell);
        - partial cells: the matching complete cells (weight 1) and partial cells
          (weight ``alpha``). A partial cell matches no other cell of its own
          pattern (they differ on an observed key), so this sum holds the cell
          itself with weight ``alpha`` instead of 1, which is corrected after;
        - the empty cells match everything: partial cells add ``alpha`` times
          their total (complete cells too, with a single key only: sdcMicro
          leaves them out otherwise), and they get the totals themselves.

        The search prunes key by key, so the cost follows the matches, not the
        pairs of missingness patterns (that pairwise loop was quadratic in the
        number of patterns). Complete cells are not searched against each other:
        with most records complete that self-join would be the largest part.
        """
        nk = len(self.keys)
        full = (1 << nk) - 1
        alpha = self.alpha
        radices = [self._radix[k] for k in self.keys]
        codes = np.column_stack([
            np.where(c == self._marker[k], -1, c) if self._marker[k] >= 0 else c
            for k, c in zip(self.keys, cell_codes, strict=True)
        ])
        # without weights Fhat = f: one column to sum
        counts = np.column_stack(
            [f_exact.astype(np.float64)] + ([] if self.weights is None else [F_exact])
        )
        empty = observed == 0
        complete = observed == full
        partial = ~empty & ~complete
        out = counts.copy()
        if partial.any():
            if alpha > 0.0:
                out[complete] += _wildcard_counts(
                    codes[partial], alpha * counts[partial], codes[complete], radices
                )
                source = ~empty  # alpha = 0: partial cells add nothing, leave them out
            else:
                source = complete
            factor = np.where(complete[source], 1.0, alpha)
            out[partial] = _wildcard_counts(
                codes[source], counts[source] * factor[:, None], codes[partial], radices
            )
            # a partial cell is its own exact match: weight 1, the search gave it alpha
            out[partial] += (1.0 - alpha) * counts[partial]
        totals = counts[empty].sum(axis=0)
        if nk > 1:
            out[partial] += alpha * totals
        else:
            out[complete] += alpha * totals
        out[empty] = counts.sum(axis=0)
        return out[:, 0], out[:, -1]

    def _by_stratum(
        self, rc: np.ndarray, st: np.ndarray, n_cells: int, w: np.ndarray | None
    ) -> pd.DataFrame:
        pair, n_pairs, (cell, stratum) = _group([rc, st], [n_cells, len(self.strata_levels)])
        counts = np.bincount(pair, minlength=n_pairs).astype(np.int64)
        wsum = (
            counts.astype(np.float64)
            if w is None
            else np.bincount(pair, weights=w, minlength=n_pairs)
        )
        return pd.DataFrame(
            {
                "cell": cell,
                "stratum": self.strata_levels.take(stratum),
                "fk": counts,
                "Fk_hat": wsum,
            }
        )

    # ---------------------------------------------------------------- outputs

    def record_table(self) -> pd.DataFrame:
        """One row per input record, in input order: ``record``, ``cell``, ``fk``, ``Fk_hat``.

        ``record`` is the 0-based row number. Records dropped by ``missing="drop"``
        have ``cell`` -1 and NaN ``fk``/``Fk_hat`` (``fk`` is then float).
        """
        rc = self.record_cell
        cells = self.cells
        if self.n_dropped:
            fk = np.append(cells.fk.astype(np.float64), np.nan)[rc]
            Fk = np.append(cells.Fk_hat, np.nan)[rc]
        else:
            fk, Fk = cells.fk[rc], cells.Fk_hat[rc]
        return pd.DataFrame(
            {"record": np.arange(rc.size, dtype=np.int64), "cell": rc, "fk": fk, "Fk_hat": Fk}
        )

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable description of the data and their cell table."""
        cells = self.cells
        out: dict[str, Any] = {
            "n_records": int(cells.n_records),
            "n_input_records": int(self.n_input),
            "n_cells": int(cells.n_cells),
            "n_sample_uniques": cells.n_sample_uniques,
            "keys": {k: int(self.n_levels[k]) for k in self.keys},
            "K": int(self.K),
            "K_given": self._K_given is not None,
            "weight": self.weight,
            "sampling_fraction": self.sampling_fraction,
            # without weights every record stands for itself (Fk_hat = fk)
            "sum_weights": float(cells.n_records)
            if self.weights is None
            else float(self.weights[~self.dropped].sum()),
            "missing": self.missing,
            "alpha": self.alpha,
            "n_missing_key_records": int(self.n_missing_key_records),
            "n_dropped": int(self.n_dropped),
        }
        if self.sum_weights_input is not None:
            # missing="drop": the kept weights were rescaled to stand for the dropped
            # records too; the sums before that, so a reader sees what was done
            out["sum_weights_input"] = self.sum_weights_input
            out["sum_weights_kept"] = self.sum_weights_kept
            if self._n_dropped_unweighted:
                out["n_dropped_unweighted"] = self._n_dropped_unweighted
            if self._strata_without_records:
                # their weight was spread over every kept record (_reweight_for_dropped)
                out["strata_without_records"] = self._strata_without_records
                out["n_dropped_collapsed"] = self._n_dropped_collapsed
                out["sum_weights_collapsed"] = self._sum_weights_collapsed
        out |= {
            "household": self.household,
            "n_households": None if self.household_levels is None else len(self.household_levels),
            "strata": self.strata,
            "n_strata": None if self.strata_levels is None else len(self.strata_levels),
        }
        json.dumps(out)  # fail here, not in the CLI, if anything is not serialisable
        return out

    def __repr__(self) -> str:
        return (
            f"Microdata(n_records={self.n_records}, keys={self.keys}, weight={self.weight!r}, "
            f"missing={self.missing!r})"
        )


# --------------------------------------------------------------------------------------
# reading files
# --------------------------------------------------------------------------------------

#: File endings read by :func:`read_microdata`, with the reader used.
#: What each extension is, in a user's words (error messages name formats, not readers).
_FORMAT_NAMES = {
    ".csv": "CSV", ".csv.gz": "gzipped CSV", ".tsv": "tab-separated text",
    ".parquet": "Parquet", ".pq": "Parquet", ".sav": "SPSS", ".zsav": "compressed SPSS",
    ".por": "SPSS portable", ".dta": "Stata", ".sas7bdat": "SAS", ".xpt": "SAS transport",
}

READABLE_EXTENSIONS = {
    ".csv": "pandas.read_csv",
    ".csv.gz": "pandas.read_csv",
    ".tsv": "pandas.read_csv (tab-separated)",
    ".parquet": "pandas.read_parquet (pyarrow)",
    ".pq": "pandas.read_parquet (pyarrow)",
    ".sav": "pyreadstat.read_sav",
    ".zsav": "pyreadstat.read_sav",
    ".por": "pyreadstat.read_por",
    ".dta": "pyreadstat.read_dta",
    ".sas7bdat": "pyreadstat.read_sas7bdat",
    ".xpt": "pyreadstat.read_xport",
}


def require_one_cell_per_record(md, model: str, instead: str) -> None:
    """Refuse wildcard cells for a model of the cell space, before any work.

    With ``missing="wildcard"`` a record with a missing key value sits in a cell that
    overlaps every cell it matches: no point of the K-cell space, and its weight sum
    counts the matched records again. The latent-class and Poisson-gamma models need
    each record in exactly one cell.

    Parameters
    ----------
    md : Microdata
        (or an object with ``cells.has_missing`` and ``missing``; without ``missing``
        nothing is refused.)
    model : str
        The model's name, as the message should call it ("latent-class").
    instead : str
        The other way out, in the caller's spelling (a Python function or a CLI option).

    Raises
    ------
    InputError
        Some cell has a missing key value matched as a wildcard.
    """
    if getattr(md, "missing", None) != "wildcard":
        return
    n = int(np.sum(md.cells.has_missing))
    if n:
        raise InputError(
            f"{n} key combinations have a missing value, which missing='wildcard' matches "
            f"to every level; the {model} model needs each record in one cell: use "
            "missing='category' (missing is a level of its own) or missing='drop', or "
            f"{instead}"
        )


#: The models whose population is one total N (the weights' sum, or n / sampling
#: fraction), extrapolated beyond the sample (:func:`require_population_beyond_sample`).
POPULATION_TOTAL_MODELS = ("poisson-gamma", "latent-class")


def kept_weights(md) -> np.ndarray | None:
    """The weights of the records ``md`` keeps, as floats; None without weights.

    Records that ``missing="drop"`` left out are removed.
    """
    weights = getattr(md, "weights", None)
    if weights is None:
        return None
    w = np.asarray(weights, dtype=float)
    dropped = getattr(md, "dropped", None)
    return w if dropped is None else w[~np.asarray(dropped, dtype=bool)]


def require_population_beyond_sample(md, model: str, *, instead: str | None = None) -> None:
    """Refuse weights that leave no population beyond the sample, before any fit.

    The Poisson-gamma and latent-class models take the population size N from the
    weights' sum. Weights summing to less than the n records (accepted with
    ``allow_weights_below_one``) give N < n, which no model can extrapolate to; unequal
    weights summing to exactly n (weights normalised to the sample size) give N = n,
    which the models would take for a census, every cell's population its sample count.
    Both are refused. Weights all equal to 1 (and a sampling fraction of 1) say the
    sample *is* the population: N = n is then meant, and the results are exact.

    Parameters
    ----------
    md : Microdata
        Its kept records' weights are read (nothing without weights: a sampling
        fraction gives N = n / fraction >= n); under ``missing="drop"``, the weights
        given to every input record (the kept ones are scaled to their total).
    model : str
        The model; only :data:`POPULATION_TOTAL_MODELS` are checked.
    instead : str, optional
        The other ways out, in the caller's spelling (command-line options); by
        default Python's (``N=``, ``sampling_fraction=``, the closed form).

    Raises
    ------
    InputError
        The weights' sum and the record count, and the fixes.
    """
    w = kept_weights(md)
    if model not in POPULATION_TOTAL_MODELS or w is None:
        return
    given = getattr(md, "_weights_given", None)
    if given is not None:
        # missing="drop" scaled the kept weights to the file's total (Microdata, missing):
        # whether the weights leave a population beyond the records is the whole file's
        # question. Weights all 1 there: a census whose dropped persons are the population
        # beyond the kept records; normalised weights: N = the file's n, refused as below.
        w = given[np.isfinite(given) & (given > 0)]
    n = int(w.size)
    total = float(w.sum())
    if n == 0 or total > n * (1.0 + 1e-9):
        return
    if total >= n * (1.0 - 1e-9) and np.allclose(w, 1.0, rtol=0.0, atol=1e-9):
        return  # every weight 1: a census, N = n exactly
    if instead is not None:
        raise InputError(
            f"the weights sum to {total:g}, not more than the {n} records, so no population "
            "beyond the sample can be extrapolated: fix the weights (they should sum to the "
            f"population size), {instead}"
        )
    raise InputError(
        f"the weights sum to N={total:g}, not more than the n={n} records, so no population "
        "beyond the sample can be extrapolated: fix the weights (they should sum to the "
        "population size), pass N=... (the population size) or build the Microdata with "
        "sampling_fraction=, or use the closed form (sdcbayes.risk.assess.assess_closed_form)"
    )


def _extension(path: Path) -> str:
    name = path.name.lower()
    for ext in sorted(READABLE_EXTENSIONS, key=len, reverse=True):
        if name.endswith(ext):
            return ext
    return path.suffix.lower()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _code_text(v) -> str:
    """A code written as text, as :func:`_label_column` names unlabelled codes (7.0 -> "7")."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _label_column(values: pd.Series, labels: dict, missing=None) -> pd.Categorical:
    """Codes with value labels -> categorical of the label names.

    Categories are the labels in the order of their codes (all declared labels,
    observed or not: they belong to the cell space), followed by observed values
    that have no label, written as text (``7.0`` -> ``"7"``). Labels are
    stripped of surrounding blanks. A label on a code for which ``missing(code)``
    is true (declared user-missing: its records are NaN) is left out, since that
    category could never be observed. Codes that share one label stay distinct
    levels, named ``"label [code]"`` (``"other [8]"``, ``"other [9]"``): merging
    them would understate the risk of a file that carries both codes. The same
    holds for an unlabelled code whose text is the label of another code (code 4
    unlabelled, code 9 labelled ``"4"``): both are named that way (``"4 [4]"``,
    ``"4 [9]"``).
    """
    fmt = _code_text
    kept = {k: str(v).strip() for k, v in labels.items() if not (missing and missing(k))}
    ordered = sorted(kept.items(), key=lambda kv: (str(type(kv[0])), kv[0]))
    uses: dict[str, int] = {}
    for _, lab in ordered:
        uses[lab] = uses.get(lab, 0) + 1
    names = {k: (f"{lab} [{fmt(k)}]" if uses[lab] > 1 else lab) for k, lab in ordered}
    mapped = values.map(names)
    unlabelled = mapped.isna() & values.notna()
    text = values[unlabelled].map(fmt)
    clash = set(text) & set(names.values())
    if clash:  # the unlabelled code and the labelled one would merge into one level
        names = {k: (f"{n} [{fmt(k)}]" if n in clash else n) for k, n in names.items()}
        mapped = values.map(names)
        text = text.map(lambda t: f"{t} [{t}]" if t in clash else t)
    cats = list(dict.fromkeys(names[k] for k, _ in ordered))
    if unlabelled.any():
        mapped = mapped.astype(object)
        mapped[unlabelled] = text
        extra = [t for t in pd.unique(text.to_numpy(dtype=object)) if t not in set(cats)]
        cats += sorted(extra, key=lambda t: (len(t), t))
    return pd.Categorical(mapped, categories=cats)


def _strip_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Strip surrounding blanks from the text values and text categories of ``frame``.

    ``"a "``, ``" a"`` and ``"a"`` are one level: fixed-width exports pad text, and
    SPSS's reader already drops trailing blanks, so without this one data set would
    give different cells in different formats. A text that is empty after
    stripping becomes missing, as an empty CSV field is.
    """
    for col in frame.columns:
        s = frame[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = s.cat.categories
            if cats.dtype.kind == "O" or pd.api.types.is_string_dtype(cats.dtype):
                new = [c.strip() if isinstance(c, str) else c for c in cats]
                if new != list(cats):
                    fixed = [c if c != "" else np.nan for c in new]
                    dedup = list(dict.fromkeys(c for c in fixed if not pd.isna(c)))
                    codes = s.cat.codes.to_numpy()
                    lookup = np.array(fixed + [np.nan], dtype=object)
                    frame[col] = pd.Categorical(lookup[codes], categories=dedup,
                                                ordered=s.cat.ordered)
        elif s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            codes, uniques = pd.factorize(s, use_na_sentinel=True)
            if not len(uniques):
                continue
            uniq = np.asarray(uniques, dtype=object)
            new = np.array([v.strip() if isinstance(v, str) else v for v in uniq], dtype=object)
            new[new == ""] = np.nan
            if all(a is b or a == b for a, b in zip(new, uniq, strict=True)):
                continue
            out = np.append(new, np.nan)[codes]  # code -1 (missing) -> the appended NaN
            frame[col] = pd.Series(out, index=s.index, name=col, dtype=s.dtype)
    return frame


def _text_encoding_error(p: Path, head: bytes) -> DataError | None:
    """The error for a text file in UTF-16 or UTF-32, from its first bytes; else None.

    Excel's "Unicode Text" export is UTF-16 with a byte-order mark (``FF FE``), which
    the UTF-8 reader refuses at byte 0; read as Latin-1 it would be letters separated
    by NUL bytes, so the way out named is UTF-8 (or pandas with ``encoding='utf-16'``).
    A header that holds NUL bytes without a mark is UTF-16/32 too: UTF-8 text has none.
    """
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        name = "UTF-32"
    elif head.startswith((b"\xff\xfe", b"\xfe\xff")):
        name = "UTF-16"
    elif b"\x00" in head:
        name = "UTF-16 or UTF-32 (it holds NUL bytes)"
    else:
        return None
    enc = "utf-32" if name == "UTF-32" else "utf-16"
    if name.startswith("UTF-16 or"):
        # No byte-order mark: Python's "utf-16" codec then refuses the file ("UTF-16
        # stream does not start with BOM", audit AU3 G1), so the byte order is named.
        enc = _bomless_codec(head)
    return DataError(
        f"could not read '{p.name}': it is {name} text, not UTF-8 (Excel's 'Unicode Text' "
        f"export is UTF-16); give its encoding, --encoding {enc} (read_microdata(..., "
        f"encoding='{enc}') in Python), or save it as UTF-8 (Excel: 'CSV UTF-8'; or "
        f"convert it: iconv -f {enc.upper()} -t UTF-8 '{p.name}' > utf8.csv)"
    )


def _byte_order(head: bytes) -> str | None:
    """``"utf-16-le"`` and the like when the first bytes show UTF-16/32 and their order."""
    if head.startswith(b"\xff\xfe\x00\x00"):
        return "utf-32-le"
    if head.startswith(b"\x00\x00\xfe\xff"):
        return "utf-32-be"
    if head.startswith(b"\xff\xfe"):
        return "utf-16-le"
    if head.startswith(b"\xfe\xff"):
        return "utf-16-be"
    if b"\x00" in head:
        guess = _bomless_codec(head)
        return None if " or " in guess else guess
    return None


def _bomless_codec(head: bytes) -> str:
    """The codec of UTF-16/32 text without a byte-order mark, guessed from its first bytes.

    ASCII text (a CSV header) in UTF-16-LE is ``r\\x00e\\x00``, in UTF-16-BE
    ``\\x00r\\x00e``; UTF-32 has three NUL bytes per ASCII character. When the
    bytes do not tell (too few of them), both UTF-16 orders are named.
    """
    if len(head) >= 4 and head[1:4] == b"\x00\x00\x00" and head[0]:
        return "utf-32-le"
    if len(head) >= 4 and head[:3] == b"\x00\x00\x00" and head[3]:
        return "utf-32-be"
    if len(head) >= 2 and head[0] and not head[1]:
        return "utf-16-le"
    if len(head) >= 2 and not head[0] and head[1]:
        return "utf-16-be"
    return "utf-16-le or utf-16-be"


#: File types whose text encoding is fixed or stored in the file, which pyreadstat's
#: reader cannot be told (Parquet is UTF-8 by definition; read_por has no ``encoding``).
_NO_ENCODING = {".parquet": "Parquet files are UTF-8 by definition",
                ".pq": "Parquet files are UTF-8 by definition",
                ".por": "SPSS portable files carry their own character set, and pyreadstat's "
                        "read_por takes no encoding"}


def _codec_name(encoding, ext: str, p: Path, what: str = "encoding=") -> str:
    """``encoding``'s canonical codec name (``latin-1`` -> ``iso8859-1``), checked for ``p``.

    ``what`` names the setting in messages (``--encoding`` on the command line).

    Raises
    ------
    InputError
        Not a text, an unknown codec, or a file type whose encoding cannot be given
        (:data:`_NO_ENCODING`).
    """
    import codecs

    if not isinstance(encoding, str):
        raise InputError(f"{what} must be a codec name such as 'latin-1', got "
                         f"{type(encoding).__name__}")
    try:
        info = codecs.lookup(encoding.strip())
    except LookupError:
        info = None
    # rot13, hex, base64 are codecs but not text encodings (bytes<->bytes or str<->str):
    # refused here, not later with "use codecs.open()" (audit AU3 N2)
    if info is None or not getattr(info, "_is_text_encoding", True):
        raise InputError(
            f"{what} {encoding!r} is not a text encoding Python knows; give a codec name such "
            "as utf-8, latin-1 (ISO-8859-1), cp1252 (Windows Western European), iso8859-15 "
            "or utf-16") from None
    name = info.name
    if ext in _NO_ENCODING:
        raise InputError(f"{what} cannot be given for '{p.name}': {_NO_ENCODING[ext]}; "
                         f"leave out {what}")
    return name


def _check_encoding(encoding, ext: str, p: Path) -> str | None:
    """The text encoding to read ``p`` with: None for UTF-8 (the default), else its name.

    ``encoding`` is a Python codec name or alias (``latin-1``, ``cp1252``,
    ``utf-16``), looked up with :func:`codecs.lookup` and returned under its
    canonical name (``iso8859-1``), which pyarrow, pandas and pyreadstat's iconv all
    take for the common Western ones (:func:`_codec_name`). UTF-8 given explicitly is
    the default for CSV/TSV files (a byte-order mark is skipped as without it); for the
    files read by pyreadstat it is passed on as ``"utf-8"``, since leaving it out there
    means the encoding the file declares, not UTF-8 (audit AU3 B2).

    Raises
    ------
    InputError
        Not a text, an unknown codec, or a file type whose encoding cannot be given
        (:data:`_NO_ENCODING`).
    """
    if encoding is None:
        return None
    name = _codec_name(encoding, ext, p)
    if ext in (".csv", ".csv.gz", ".tsv"):
        return None if name in ("utf-8", "utf-8-sig") else name
    return "utf-8" if name == "utf-8-sig" else name


#: Excel's separator line, ``sep=;`` before the header (a spreadsheet reads the file
#: with that separator whatever the locale's); one character, as Excel writes it.
_SEP_LINE = re.compile(r"sep=(.)", re.IGNORECASE)


def _csv_layout(path: Path, ext: str = ".csv", encoding: str | None = None) -> tuple[str, int]:
    """The separator of a CSV/TSV file and the number of lines before its header.

    :func:`_csv_head`'s first two items.
    """
    return _csv_head(path, ext, encoding)[:2]


def _csv_head(path: Path, ext: str = ".csv", encoding: str | None = None
              ) -> tuple[str, int, str | None, str]:
    """The separator of a CSV/TSV file, the lines before its header, its conventions.

    Spreadsheets in many European locales save "CSV" with semicolons (the comma being
    the decimal mark); read with commas such a file is one column whose name holds the
    whole header. So in a ``.csv`` whose header has no comma outside quoted names, the
    most frequent of ``;``, tab and ``|`` there is taken (a ``.tsv`` is tab-separated).
    The header is the first line that is not blank (the readers skip blank lines: a
    detector looking at the first physical line read a semicolon file that opens with a
    blank line as one column, audit BB4 F3). An Excel separator line ``sep=X`` before
    it sets the separator to ``X`` and is skipped, as Excel reads it.

    ``encoding``: the file's text encoding (:func:`_check_encoding`; None: UTF-8).

    Returns
    -------
    (sep, skip, sep_line, eol)
        ``skip``: the lines before the header (blank ones and the ``sep=`` line), which
        both readers are told to skip, so that they read the same header line.
        ``sep_line``: the ``sep=X`` line as written (its case kept, no line ending), or
        None; ``eol``: ``"\r\n"`` when the file's first line ends in CRLF, else
        ``"\n"`` -- the conventions ``protect`` writes its CSV back with.

    Raises
    ------
    DataError
        The file is UTF-16 or UTF-32 text (:func:`_text_encoding_error`) and no
        ``encoding`` is given.
    """
    import gzip

    default = "\t" if ext == ".tsv" else ","
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    skip, header, given, sep_text, eol = 0, None, None, None, None
    try:
        with opener(path, "rb") as fh:
            head = fh.read(4)
        bad = _text_encoding_error(path, head) if encoding is None else None
        if bad is not None:
            raise bad
        order = _byte_order(head)
        if (encoding in ("utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
                and order is not None and order[:6] == encoding[:6] and order != encoding):
            # the other byte order decodes without an error, into CJK-looking text
            raise _header_not_text(path, encoding, head, f"is in {order} byte order (by its "
                                   "first bytes)")
        with opener(path, "rt", encoding=encoding or "utf-8-sig", errors="replace",
                    newline="") as fh:
            while True:
                # at most _HEADER_LIMIT characters at a time: a wrong codec can find no
                # line break in the whole file (UTF-16-LE read as UTF-16-BE)
                line = fh.readline(_HEADER_LIMIT + 1)
                if not line:
                    break
                if len(line) > _HEADER_LIMIT and not line.endswith(("\n", "\r")):
                    if not any(c in line for c in ",;\t|"):
                        raise _header_not_text(path, encoding, head, "is over "
                                               f"{_HEADER_LIMIT:,} characters long with "
                                               "no separator in it")
                    line += fh.readline()  # a wide header: read the rest of the line
                if eol is None:
                    eol = "\r\n" if line.endswith("\r\n") else "\n"
                text = line.rstrip("\r\n")
                if not text.strip():  # pandas skips it; so does pyarrow, once told to
                    skip += 1
                    continue
                sep_line = _SEP_LINE.fullmatch(text)
                if sep_line is not None and given is None and sep_line.group(1) != '"':
                    given, skip, sep_text = sep_line.group(1), skip + 1, text
                    continue
                header = text
                break
    except (OSError, EOFError):
        return default, 0, None, "\n"  # the reader below reports what is wrong with the file
    eol = eol or "\n"
    if header is not None and "\x00" in header:
        if encoding is None:
            raise _text_encoding_error(path, b"\x00")
        # UTF-16 read with a one-byte codec: names such as 'r\x00e\x00g\x00' (AU3 G2)
        raise _header_not_text(path, encoding, head, "holds NUL characters")
    if given is not None:
        return given, skip, sep_text, eol
    if header is None or ext == ".tsv":
        return default, skip, None, eol
    # a quoted name may hold any separator ("inc, net";"k"): count those outside quotes
    header = re.sub(r'"(?:[^"]|"")*"', "", header)
    if "," in header:
        return ",", skip, None, eol
    counts = {c: header.count(c) for c in (";", "\t", "|")}
    best = max(counts, key=counts.get)
    return (best if counts[best] > 0 else ","), skip, None, eol


#: The longest header line (in characters) read without a separator in it: a wrong
#: ``--encoding`` can decode a whole file without a line break, and its "column
#: names", the file's records, would then fill the errors (audit AU3 G2).
_HEADER_LIMIT = 65536


def _header_not_text(p: Path, encoding: str | None, head: bytes, what: str) -> DataError:
    """The error for a header line that shows the file is not in ``encoding``.

    ``what`` says what is wrong with the line; ``head``, the file's first bytes, picks
    the encoding suggested (UTF-16/32 by a byte-order mark or NUL bytes). The header
    itself is not quoted: in a wrong codec it can be the whole file.
    """
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        hint = "it starts with a UTF-32 byte-order mark: give --encoding utf-32"
    elif head.startswith((b"\xff\xfe", b"\xfe\xff")):
        hint = "it starts with a UTF-16 byte-order mark: give --encoding utf-16"
    elif b"\x00" in head:
        hint = ("it holds NUL bytes, as UTF-16 text does: give --encoding "
                f"{_bomless_codec(head)}")
    else:
        hint = ("give the file's own encoding with --encoding (encoding= in read_microdata): "
                "utf-8 (the default), latin-1 or cp1252 for Western European files from "
                "Windows")
    return DataError(
        f"could not read '{p.name}': its header line {what}, so the file is not "
        f"{encoding or 'UTF-8'} text; {hint}"
    )


def _csv_separator(path: Path) -> str:
    """The separator of a .csv file: ``","``, or the one its header line uses instead.

    :func:`_csv_layout`'s separator (``protect`` writes its output with it).
    """
    return _csv_layout(path)[0]


#: Texts read as missing in CSV/TSV files by :func:`read_microdata`. pandas' own
#: list is much longer and turns real levels into missing values ("None" = no
#: religion, "NA" = Namibia, "NULL", "n/a"); this one holds what common writers
#: put for a missing value: an empty field (pandas, Excel, SPSS/Stata exports),
#: ``NA`` (R's ``write.csv``), ``#N/A`` (Excel) and ``NaN``/``nan`` (NumPy
#: numbers written as text). Others ('.', '-9', 'NULL') via ``na_values=``.
CSV_NA_VALUES = ("", "NA", "#N/A", "NaN", "nan")


_INTEGER_TEXT = r"^[+-]?[0-9]+$"


def _csv_numbers(text, decimal_comma: bool):
    """Arrow string array without nulls -> numeric arrow array, or None if not numbers.

    Arrow's casts are the fast path: to float64 first (it refuses hexadecimal
    ``0x10``, which the cast to int64 would take), then to int64 when every
    number is whole; pandas' parser is the fall-back for what they refuse. A
    column is integer only when its texts are integer literals (``5.`` and
    ``1e3`` keep it float). With ``decimal_comma`` a comma is the decimal mark,
    and a column holding both a comma and a point (``12,5`` and ``2.500``, a
    thousands separator) is no numbers (None).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    head = pc.unique(text.slice(0, 200)).to_pylist()
    try:  # a text column is refused here, before any work on the whole column
        pd.to_numeric(pd.Series([t.replace(",", ".") if decimal_comma else t for t in head],
                                dtype=object))
    except (ValueError, TypeError):
        return None
    tries = [text]
    if decimal_comma and pc.any(pc.match_substring(text, ",")).as_py():
        if pc.any(pc.match_substring(text, ".")).as_py():
            # "12,5" next to "2.500": one column cannot have two decimal marks, and the
            # "." is then a thousands separator, which is not read (audit Z6 F2). Text:
            # a key keeps its codes, a weight is refused naming the value.
            return None
        tries.append(pc.replace_substring(text, ",", "."))
    for t in tries:
        try:
            real = pc.cast(t, pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        x = real.to_numpy(zero_copy_only=False)
        with np.errstate(invalid="ignore"):
            if not np.all((x == np.round(x)) & (np.abs(x) < 2.0**63)):
                return real
        if pc.any(pc.match_substring(t, ".")).as_py():
            return real  # "3.0": float as written (and a failed cast costs ~30x)
        try:  # exact for integers beyond 2**53, where the float is not
            return pc.cast(t, pa.int64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # "5.", "1e3", "+7"
            if pc.all(pc.match_substring_regex(t, _INTEGER_TEXT)).as_py():
                return pc.cast(real, pa.int64())
            return real
    for t in tries:
        uniques = pc.unique(t)
        try:  # stops at the first text that is no number: cheap for text columns
            num = pd.to_numeric(pd.Series(uniques.to_pylist(), dtype=object))
        except (ValueError, TypeError):
            continue
        if num.dtype.kind in "iuf":
            return pc.take(pa.array(num.to_numpy()), pc.index_in(t, value_set=uniques))
    return None


#: Texts that may give the number of another text: a sign ``+``, a leading zero
#: (``012``, ``-07``, ``05.1``), a negative zero (``-0``, ``-0.0``), 16 digits or more
#: (beyond 2**53 two integers, and beyond 15 significant digits two decimals, can
#: share a float64), a decimal part of two digits or more ending in zero (``5.10``
#: is 5.1), a decimal mark first or last (``.5``, ``5.``), and any other character
#: (``1e3``). Texts without any of these are canonical, so distinct ones give
#: distinct numbers, except a one-digit ``.0`` (``6.0``, as pandas writes a whole
#: float) next to an integer text (``6``): :func:`_same_identity` checks that pair.
_NONCANONICAL = (r"^(?:[+-]?0[0-9]|\+|-0(?:[.,]0*)?$|-?[0-9.,]{16})"
                 r"|[.,][0-9]+0$|[.,]$|^-?[.,]|[^-0-9.,]")


def _same_identity(text, num) -> bool:
    """Whether no two different texts give one number (``012``/``12``, ``5.1``/``5.10``).

    Such texts are different codes (also ``6`` and ``6.0``). ``text`` holds the
    texts as the file has them (a decimal comma included: :func:`_csv_numbers`
    keeps a column that mixes both marks as text).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    # The common case at a fraction of the cost: regex passes instead of hashing every
    # text and every number (count_distinct took 40% of a 10^6-record CSV read, audit U
    # F4). Audit Z6 F1: decimal texts ("05.1", "05.10") are checked too.
    if not pc.any(pc.match_substring_regex(text, _NONCANONICAL)).as_py():
        # (substring tests, ~8x faster than a regex pass)
        whole = pc.or_(pc.ends_with(text, ".0"), pc.ends_with(text, ",0"))
        if not pc.any(whole).as_py():
            return True
        mark = pc.or_(pc.match_substring(text, "."), pc.match_substring(text, ","))
        if pc.all(mark).as_py():
            return True  # "6.0" without any integer text "6": canonical as well
    if pa.types.is_floating(num.type):
        num = pc.add(num, 0.0)  # -0.0 + 0.0 is 0.0: arrow's hashing tells the zeros apart
    return pc.count_distinct(text).as_py() == pc.count_distinct(num).as_py()


def _same_number_groups(texts, decimal_comma: bool) -> list[list[str]]:
    """The distinct texts among ``texts`` that give one number, in groups of two or more.

    ``[["1", "1.0"], ["01", "2", "2.0"]]``-like (each group shortest text first, the
    groups by their number), for the warning that such texts are kept as different
    codes (:func:`_numbers_written_two_ways`). Numbers as pandas reads them
    (:func:`pandas.to_numeric`; with ``decimal_comma`` ``"1,0"`` is 1.0), the two
    zeros as one; texts that are no number are in no group. It costs a hash of the
    distinct texts: called for a column :func:`_same_identity` has found split, and
    on a key's levels.
    """
    t = pd.Series(pd.unique(np.asarray(texts, dtype=object)), dtype=object)
    t = t[t.map(lambda v: isinstance(v, str) and "_" not in v)]  # float("1_0") is 10
    if t.empty:
        return []
    num = pd.to_numeric(t.str.replace(",", ".", regex=False) if decimal_comma else t,
                        errors="coerce").astype(float) + 0.0  # -0.0 + 0.0 is 0.0
    both = pd.DataFrame({"text": t.to_numpy(), "number": num.to_numpy()})
    both = both[both["number"].notna() & both["number"].duplicated(keep=False)]
    return [sorted(g, key=lambda x: (len(x), x))
            for _, g in both.groupby("number", sort=True)["text"]]


def _quoted_missing_texts(frame: pd.DataFrame, keys, levels=None) -> list[str]:
    """Warnings for the key columns of a CSV file holding numbers and a quoted ``"NA"``.

    :func:`read_microdata` reads a quoted ``"NA"`` as the text NA, a level (Namibia),
    and an unquoted NA as missing, as R's ``write.csv`` writes them. A writer that
    quotes every field writes missing values as ``"NA"`` too: then a key of numbers
    gets a level "NA" that matches only itself instead of a missing value that matches
    every level, and the risk comes out far higher (sdcMicro's testdata with missing
    keys: 296 sample uniques instead of 94). The CSV reader marks such columns in
    ``frame.attrs["quoted_missing_texts"]``; this names, for each of ``keys`` so marked
    that still holds the text (``levels``: each key's values, if known), the count and
    the fix.
    """
    marked = frame.attrs.get("quoted_missing_texts") or {}
    notes = []
    for k in keys:
        if k not in marked or k not in frame.columns:
            continue
        text = marked[k]["text"]
        values = levels[k] if levels is not None and k in levels else frame[k].dropna()
        if text not in set(map(str, values)):  # rows taken out since the file was read
            continue
        notes.append(
            f"key {k!r} holds numbers and the quoted text {text!r} "
            f"({marked[k]['count']:,} record{'s' * (marked[k]['count'] != 1)} in the file): "
            f"the reader takes a quoted {text!r} as a level of its own (e.g. Namibia), which "
            "matches only itself, not as a missing value, which matches every level; if it "
            f"means missing, read the file with --na-values {text} (na_values= in "
            "read_microdata)")
    return notes


def _numbers_written_two_ways(frame: pd.DataFrame, keys, levels=None) -> list[str]:
    """Warnings for the key columns of a CSV file that write one number as two texts.

    :func:`read_microdata` keeps ``"3"`` and ``"3.0"`` (``"01"`` and ``"1"``) as two
    codes, as documented, so a key holding both has two levels where the file most
    likely meant one (two exports concatenated: an int column and pandas' float one):
    more cells and sample uniques, a risk 40% higher on the demo (audit BB4 F1). The
    CSV reader marks such columns in ``frame.attrs["split_numbers"]``; this names, for
    each of ``keys`` so marked whose values still hold such texts, an example and the
    fix. ``levels``: the distinct values of each key, if known (:class:`Microdata`
    has them); else they are taken from the column. Other frames give no warning.
    """
    marked = frame.attrs.get("split_numbers") or {}
    notes = []
    for k in keys:
        if k not in marked or k not in frame.columns:
            continue
        values = levels[k] if levels is not None and k in levels else frame[k].dropna()
        groups = _same_number_groups(values, bool(marked[k].get("decimal_comma")))
        if not groups:  # rows taken out since the file was read
            continue
        g = groups[0]
        shown = ", ".join(repr(x) for x in g[:-1]) + f" and {g[-1]!r}"
        more = (f" (and {len(groups) - 1} more number{'s' * (len(groups) > 2)} written in "
                "two or more ways)" if len(groups) > 1 else "")
        notes.append(
            f"key {k!r}: {shown} are different texts of one number{more}; the file's "
            "reader keeps each text as a code of its own, so they are different levels "
            "(more key combinations and sample uniques: a higher risk); if they are one "
            f"code, write every code one way in the file (e.g. recode {g[-1]!r} to "
            f"{g[0]!r}) and read it again; if they are different codes (NACE 05.1 and "
            "05.10), nothing needs changing")
    return notes


def _csv_column(text, index, name, defaults, declared, decimal_comma: bool,
                splits: dict | None = None, quoted: dict | None = None) -> pd.Series:
    """One CSV column, read as raw text -> stripped text, or numbers when that loses nothing.

    ``text`` is the column as the file has it (an arrow array of strings), null
    where an unquoted field is exactly one of the missing texts. Missing is then:
    null; a text blank once stripped; a stripped text among ``declared`` (the
    caller's ``na_values``, quoted or not); a *padded* field whose stripped text
    is among ``defaults`` (:data:`CSV_NA_VALUES`: `` NA`` in a hand-written file).
    A quoted default such as ``"NA"`` (Namibia, as R's ``write.csv`` writes it)
    is a level. A lone ``"."`` is missing in a column whose other values are all
    numbers (a SAS/Stata missing number). The column becomes numeric (int64, or
    float64 with missing values or decimals) when every other value parses as a
    number and no two different texts give the same number: ``"012"`` and
    ``"12"``, ``"05.1"`` and ``"05.10"``, ``"6"`` and ``"6.0"`` are different
    codes and keep the column text; zero-padded codes alone (``"01"`` … ``"12"``)
    convert. In a numeric column a number equal to a listed number in
    ``declared`` is missing too (``"-9.0"`` for ``-9``), as
    :func:`_apply_na_values` has it for the other formats. Integers beyond 2**53
    with missing values give a nullable ``Int64`` column (float64 would merge them).
    A column kept as text because two of its texts give one number is noted in
    ``splits`` (``splits[name] = {"decimal_comma": ...}``), for the warning of
    :func:`_numbers_written_two_ways`. A column kept as text only because some of its
    values are a quoted default missing text (``"NA"`` among numbers: a writer that
    quotes every field) is noted in ``quoted`` (``quoted[name] = {"text": ..., "count":
    ...}``), for the warning of :func:`_quoted_missing_texts`.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    raw = text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text
    if raw.type != pa.large_string():
        raw = raw.cast(pa.large_string())
    text = pc.utf8_trim_whitespace(raw)

    def among(values):
        return pc.is_in(text, value_set=pa.array(sorted(values), type=pa.large_string()))

    na = pc.equal(text, "")
    numbers = []
    if declared:
        na = pc.or_(na, among(declared))
        for code in declared:  # the listed codes that are numbers, for a numeric column
            try:
                if "_" not in code:  # float("1_0") is 10.0; no CSV field is read so
                    numbers.append(float(code.replace(",", ".") if decimal_comma else code))
            except ValueError:
                continue
    padded = pc.not_equal(text, raw)
    if pc.any(padded).as_py():
        na = pc.or_(na, pc.and_(padded, among(defaults)))
    na = pc.fill_null(na, True)  # null: an unquoted missing text
    dot = pc.fill_null(pc.and_not(pc.equal(text, "."), na), False)
    for gap in (na, pc.or_(na, dot)) if pc.any(dot).as_py() else (na,):
        some = pc.any(gap).as_py()
        kept = pc.filter(text, pc.invert(gap)) if some else text
        if len(kept) == 0:
            break
        num = _csv_numbers(kept, decimal_comma)
        if num is None:
            continue
        if not _same_identity(kept, num):
            if splits is not None:  # the texts stay codes; a key is warned about
                splits[name] = {"decimal_comma": decimal_comma}
            break
        arr = num.to_numpy(zero_copy_only=False)
        present = None
        if numbers:  # "-9.0" (pandas' float column) is the listed -9 too (audit Z6 F3)
            hit = np.isin(arr, numbers)
            if hit.any():
                present = ~np.asarray(gap.to_numpy(zero_copy_only=False), dtype=bool)
                present[np.flatnonzero(present)[hit]] = False
                arr, some = arr[~hit], True
        if not some and arr.dtype.kind in "iu":
            return pd.Series(arr, index=index, name=name)
        if present is None:
            present = ~np.asarray(gap.to_numpy(zero_copy_only=False), dtype=bool)
        if arr.dtype.kind in "iu" and arr.size and (
                arr.max() > 2**53 or arr.min() < -(2**53)):
            # float64 would merge distinct integers (ids of 17 digits): nullable Int64,
            # as pyarrow reads such a Parquet column (audit Z6 F4)
            values = np.zeros(len(text), dtype=np.int64)
            values[present] = arr
            return pd.Series(pd.arrays.IntegerArray(values, ~present), index=index, name=name)
        full = np.full(len(text), np.nan)
        full[present] = arr
        return pd.Series(full, index=index, name=name)
    if quoted is not None:
        q = pc.fill_null(pc.and_not(among(defaults), na), False)
        if pc.any(q).as_py():
            rest = pc.filter(text, pc.invert(pc.or_(q, na)))
            if len(rest) and _csv_numbers(rest, decimal_comma) is not None:
                texts = pc.value_counts(pc.filter(text, q)).to_pylist()
                top = max(texts, key=lambda t: t["counts"])
                quoted[name] = {"text": top["values"], "count": int(pc.sum(q).as_py())}
    out = pc.if_else(na, pa.scalar(None, pa.large_string()), text).to_pandas()
    if out.dtype == object:  # pandas < 3: object column, None -> NaN as read_csv has it
        out = out.astype(object).where(out.notna(), np.nan)
    out.index, out.name = index, name
    return out


def _not_utf8(p: Path, exc: Exception, names: list[str] | None = None,
              encoding: str | None = None, sep: str | None = None,
              skip: int = 0) -> DataError:
    """The error for a text file that is not UTF-8 (or not ``encoding``), naming the ways out.

    It says where: the file's first line that does not decode (counting from 1) and,
    for a CSV whose header ``names`` and separator are known, the column by its
    header, not pyarrow's own wording ("In CSV column #2: CSV conversion error to
    large_string: invalid UTF8 data", a 0-based position; audit UX F11).
    """
    where = _undecodable_line(p, encoding or "utf-8-sig", names, sep, skip)
    try:
        import gzip

        with (gzip.open if p.name.lower().endswith(".gz") else open)(p, "rb") as fh:
            head = fh.read(4)
    except (OSError, EOFError):
        head = b""
    if encoding is not None:
        if (b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff"))
                and not isinstance(exc, UnicodeDecodeError)):
            # Python's "utf-16"/"utf-32" want a byte-order mark ("UTF-16 stream does not
            # start with BOM", a plain UnicodeError): name the byte order (audit AU3 G1)
            return DataError(
                f"could not read '{p.name}': it is not {encoding} text (it has no byte-order "
                f"mark); give the byte order with --encoding {_bomless_codec(head)} "
                "(encoding= in read_microdata)"
            )
        why = "" if where or isinstance(exc, UnicodeDecodeError) else f" ({_one_line(exc)})"
        return DataError(
            f"could not read '{p.name}': it is not {encoding} text{where}{why}; give the "
            "file's own encoding with --encoding (encoding= in read_microdata): latin-1 or "
            "cp1252 for Western European files from Windows, utf-8 by default"
        )
    # UTF-16/32 (Excel's "Unicode Text"): Latin-1 would garble it (audit BB4 F4)
    utf16 = _text_encoding_error(p, head) if head else None
    if utf16 is not None:
        return utf16
    # No silent retry in Latin-1: it decodes any bytes, right or wrong.
    return DataError(
        f"could not read '{p.name}': it is not UTF-8 text{where}; give its encoding, "
        "--encoding latin-1 (or cp1252 for a Windows file; in Python read_microdata(..., "
        "encoding='latin-1')), or save it as UTF-8 (Excel: 'CSV UTF-8')"
    )


def _undecodable_line(p: Path, encoding: str, names, sep, skip: int) -> str:
    """`` (line 7, column 'region': byte 0xe9)``: where a text file first fails to decode.

    Empty when the file cannot be read or decodes whole (the error came from elsewhere).
    Read line by line in binary, so only up to the bad line; the column is the field
    of that line holding the bad byte, named by its header when the line has as many
    fields as the header (a quoted separator may shift it: then no column is named).
    """
    import codecs
    import gzip

    try:
        decoder = codecs.getincrementaldecoder(encoding)()
        with (gzip.open if p.name.lower().endswith(".gz") else open)(p, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    decoder.decode(raw)
                except UnicodeDecodeError as e:
                    column = ""
                    if names and sep and number > skip + 1:
                        fields = raw.split(sep.encode("ascii", "replace"))
                        if len(fields) == len(names):
                            at = raw[:e.start].count(sep.encode("ascii", "replace"))
                            column = f", column {names[at]!r}"
                    return f" (line {number}{column}: byte 0x{raw[e.start]:02x})"
    except (OSError, EOFError, LookupError, IndexError, UnicodeError):
        return ""  # UnicodeError: a UTF-16/32 codec's missing byte-order mark
    return ""


def _csv_open(p: Path, encoding: str | None = None):
    import gzip

    opener = gzip.open if p.name.lower().endswith(".gz") else open
    return opener(p, "rt", encoding=encoding or "utf-8-sig", newline="")


def _csv_header(p: Path, sep: str, skip: int = 0, encoding: str | None = None) -> list[str]:
    """The column names of a CSV file, as ``pandas.read_csv`` gives them, checked.

    ``skip``: the lines before the header (:func:`_csv_layout`); ``encoding``: the
    file's text encoding (None: UTF-8, :func:`_check_encoding`).

    Refused (:class:`DataError`): a file with no header line (empty, or blank lines
    only), and a header that names a column twice (pandas would rename the second
    ``age`` to ``age.1`` without a word, and ``age`` would be the first one silently).
    """
    from pandas.errors import EmptyDataError

    try:
        enc = encoding or "utf-8"  # pandas skips a UTF-8 byte-order mark
        names = [str(c) for c in pd.read_csv(p, sep=sep, nrows=0, skiprows=skip,
                                             encoding=enc).columns]
        raw = pd.read_csv(p, sep=sep, nrows=1, header=None, dtype=str, skiprows=skip,
                          keep_default_na=False, encoding=enc).iloc[0].tolist()
    except EmptyDataError:
        raise DataError(
            f"could not read '{p.name}': the file is empty (no header line); give a file "
            "whose first line names the columns, e.g. age,sex,region,w"
        ) from None
    seen: dict[str, int] = {}
    for name in raw:
        if str(name).strip():
            seen[str(name)] = seen.get(str(name), 0) + 1
    dup = [name for name, count in seen.items() if count > 1]
    if dup:
        raise DataError(
            f"column name(s) {_quote_list(dup)} occur more than once in '{p.name}'; rename "
            "the duplicates"
        )
    return names


def _ragged_line(p: Path, sep: str, width: int, skip: int = 0,
                 encoding: str | None = None) -> tuple[int, int, str] | None:
    """The first line of a CSV file whose field count differs from the header's.

    ``(line number, fields, text)`` (the line of the file where the record starts,
    counting from 1; blank lines are skipped as the reader skips them, and the
    ``skip`` lines before the header, :func:`_csv_layout`), or None.
    """
    import csv

    try:
        with _csv_open(p, encoding) as fh:
            for _ in range(skip):
                fh.readline()
            reader = csv.reader(fh, delimiter=sep)
            start = skip + 1
            header = True
            for row in reader:
                if row and not header and len(row) != width:
                    text = sep.join(row)
                    return start, len(row), text if len(text) <= 60 else text[:57] + "..."
                header = header and not row
                start = skip + reader.line_num + 1
    except (OSError, UnicodeError, csv.Error):
        return None
    return None


def _read_csv(p: Path, sep: str, columns, na_values, skip: int = 0,
              encoding: str | None = None) -> pd.DataFrame:
    """Read a CSV/TSV file, every value keeping its identity (:func:`_csv_column`).

    pyarrow's reader takes every column as text, and keeps quoted fields apart
    from unquoted ones (pandas cannot: R writes a missing value as ``NA`` and the
    level Namibia as ``"NA"``); each column is then stripped and typed. The
    header is read by pandas, so that column names are as ``pandas.read_csv``
    gives them (a blank one ``Unnamed: 2``; a repeated name is refused,
    :func:`_csv_header`).
    A line with more or fewer fields than the header is an error (pandas filled
    missing fields, and took an extra first field for the row index). ``skip``: the
    lines before the header (:func:`_csv_layout`: blank ones, Excel's ``sep=;``);
    ``encoding``: the file's text encoding (None: UTF-8, :func:`_check_encoding`),
    which pyarrow decodes with Python's codec. ``attrs["csv_source"]`` remembers the
    file and its layout, so that an error can name a record's line (:func:`_row_ref`).
    """
    import pyarrow as pa
    import pyarrow.csv as pcsv

    declared = {str(v).strip() for v in na_values or ()}
    defaults = set(CSV_NA_VALUES)
    names = _csv_header(p, sep, skip, encoding)
    # pyarrow reads the header line as a row of its own (f0, f1, ...: positions,
    # so repeated or blank names and blank lines before the header are no matter)
    fields = [f"f{j}" for j in range(len(names))]
    keep = fields if columns is None else [fields[names.index(c)] for c in columns]
    try:
        table = pcsv.read_csv(
            p,
            # skip_rows counts blank lines too, as _csv_layout does
            read_options=pcsv.ReadOptions(autogenerate_column_names=True, skip_rows=skip,
                                          encoding=encoding or "utf8"),
            parse_options=pcsv.ParseOptions(delimiter=sep, newlines_in_values=True),
            convert_options=pcsv.ConvertOptions(
                column_types={f: pa.large_string() for f in fields},
                include_columns=keep, null_values=sorted(defaults | declared),
                strings_can_be_null=True, quoted_strings_can_be_null=False))
    except UnicodeError as exc:  # pyarrow decoding with a codec of --encoding
        raise _not_utf8(p, exc, names, encoding, sep, skip) from exc
    except pa.ArrowInvalid as exc:
        if "invalid UTF8" in str(exc):  # the header was UTF-8, a later line is not
            raise _not_utf8(p, exc, names, encoding, sep, skip) from exc
        ragged = (_ragged_line(p, sep, len(names), skip, encoding) if "Expected" in str(exc)
                  else None)
        if ragged is not None:
            line, count, text = ragged
            raise DataError(
                f"could not read '{p.name}' as a CSV file: line {line} has {count} field(s), "
                f"the header has {len(names)} ({text}); give every line as many fields as "
                "the header (a value holding the separator must be quoted)"
            ) from exc
        raise
    table = table.slice(1)
    table = table.rename_columns([names[fields.index(f)] for f in keep])
    index = pd.RangeIndex(table.num_rows)
    splits: dict[str, dict] = {}
    quoted: dict[str, dict] = {}
    frame = pd.DataFrame({
        c: _csv_column(table.column(j), index, c, defaults, declared, sep == ";", splits,
                       quoted)
        for j, c in enumerate(table.column_names)
    }, index=index)
    if splits:  # Microdata warns for the keys among them (_numbers_written_two_ways)
        frame.attrs["split_numbers"] = splits
    if quoted:  # and for these (_quoted_missing_texts)
        frame.attrs["quoted_missing_texts"] = quoted
    frame.attrs["csv_source"] = {"path": str(p), "sep": sep, "skip": skip,
                                 "encoding": encoding, "n_records": len(frame),
                                 "names": list(names)}
    return frame


def _readable_path(path) -> tuple[Path, str]:
    """``path`` as a :class:`~pathlib.Path` of an existing file of a readable type, and its ending.

    Raises
    ------
    InputError
        Not a path, no such file, a folder, or an ending not in :data:`READABLE_EXTENSIONS`.
    """
    try:
        p = Path(os.fspath(path))
    except TypeError:
        raise InputError(
            f"path must be a file name, got {type(path).__name__}; pass e.g. 'survey.sav'"
        ) from None
    if not p.exists():
        raise InputError(f"file not found: '{p}'; check the path and the working directory")
    if p.is_dir():
        raise InputError(f"'{p}' is a folder, not a file; give the path of the data file")
    ext = _extension(p)
    if ext not in READABLE_EXTENSIONS:
        raise InputError(
            f"cannot read '{p.name}': unknown file type '{ext or '(none)'}'; save the data as "
            f"one of {', '.join(READABLE_EXTENSIONS)} (or read it with pandas and pass the "
            "DataFrame to Microdata)"
        )
    return p, ext


def _read_header(path, encoding: str | None = None) -> pd.DataFrame:
    """The columns of a microdata file, without its records: an empty DataFrame.

    Its columns are those :func:`read_microdata` gives (a CSV header as pandas reads
    it, checked as :func:`_csv_header` checks it; a Parquet schema without the pandas
    index columns, which the reader makes the index; the variables of an SPSS, Stata
    or SAS file), and for the files read by pyreadstat ``attrs["column_labels"]``
    holds the variable labels, as :func:`read_microdata` fills it. So
    :func:`resolve_columns` resolves names and labels (and words its errors, listing
    the columns) on it as on the whole file, and a caller can then read only the
    columns it needs (``read_microdata(path, columns=...)``). It costs the header
    line, the Parquet footer or the pyreadstat metadata, nothing per record.
    ``encoding``: as :func:`read_microdata`'s.

    Raises
    ------
    InputError
        As :func:`read_microdata`, for the path and the encoding.
    DataError
        The header could not be read (an empty CSV, a repeated column name, a
        damaged file).
    """
    p, ext = _readable_path(path)
    encoding = _check_encoding(encoding, ext, p)
    labels: dict[str, str] | None = None
    sep, skip = None, 0
    try:
        if ext in (".csv", ".csv.gz", ".tsv"):
            sep, skip = _csv_layout(p, ext, encoding)
            names = _csv_header(p, sep, skip, encoding)
        elif ext in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            _parquet_names(p)  # a repeated name refused
            schema = pq.read_schema(p)
            # pandas' stored index columns (a named or non-range index) come back as the
            # frame's index, not as columns
            meta = schema.pandas_metadata or {}
            index = {c for c in meta.get("index_columns", []) if isinstance(c, str)}
            names = [c for c in schema.names if c not in index]
        else:
            _, meta = _readstat_reader(ext)(str(p), metadataonly=True,
                                            **_readstat_encoding(encoding))
            names = list(meta.column_names)
            to_labels = getattr(meta, "column_names_to_labels", None) or {}
            # as _read_readstat keeps them
            labels = {str(c): str(lab).strip() for c, lab in to_labels.items()
                      if c in set(names) and lab is not None and str(lab).strip()}
    except (InputError, DataError):
        raise
    except UnicodeError as exc:  # UnicodeDecodeError, or "UTF-16 stream does not start with BOM"
        raise _not_utf8(p, exc, None, encoding, sep, skip) from exc
    except Exception as exc:  # any parser failure -> one readable line, as read_microdata
        if encoding is not None and "character set" in str(exc):
            raise _readstat_charset_error(p, encoding) from exc
        raise DataError(
            f"could not read '{p.name}' as a {_FORMAT_NAMES[ext]} file: {_one_line(exc)}; "
            "check that the file is complete and of that type"
        ) from exc
    frame = pd.DataFrame(columns=names)
    if labels is not None:
        frame.attrs["column_labels"] = labels
    return frame


def read_microdata(path, *, columns=None, na_values=None, encoding=None) -> pd.DataFrame:
    """Read a microdata file into a DataFrame, value labels becoming categories.

    Parameters
    ----------
    path : str or path-like
        The file. Its ending picks the reader (:data:`READABLE_EXTENSIONS`):
        ``.csv``/``.csv.gz``/``.tsv`` (pandas; a ``.csv`` whose header line has no
        comma but semicolons, tabs or bars is read with that separator; blank lines
        before the header are skipped, and so is Excel's separator line ``sep=;``,
        whose separator is used),
        ``.parquet``/``.pq`` (pyarrow),
        SPSS ``.sav``/``.zsav``/``.por``, Stata ``.dta``, SAS ``.sas7bdat`` and
        SAS transport ``.xpt`` (all via pyreadstat: ``read_sav``, ``read_por``,
        ``read_dta``, ``read_sas7bdat``, ``read_xport``).
    columns : list of str, optional
        Read only these columns (faster for wide files).
    na_values : str, number, or sequence of them, optional
        More values that mean "missing" in this file (``"."``, ``"-9"``,
        ``"NULL"``; one code alone, or a number such as -9, which is taken as
        its text ``"-9"``), in every format. In CSV/TSV files, fields whose
        stripped text is listed (on top of :data:`CSV_NA_VALUES`), and in a
        column read as numbers also a number equal to a listed number (``-9.0``,
        as pandas writes -9 in a float column). In the other formats,
        after reading: a number equal to a listed number (``"-9"`` matches -9
        and -9.0), a text whose stripped text is listed, and, in a column with
        value labels, a category whose name or whose code in the file is listed
        (the category is then removed, so it does not count in K). Survey files
        in any format often carry codes such as -9 or -8 for non-response.
    encoding : str, optional
        The text encoding of the file, a Python codec name (``"latin-1"``,
        ``"cp1252"``, ``"utf-16"``; :func:`codecs.lookup`). CSV/TSV files are
        read as UTF-8 by default (an initial byte-order mark skipped); a Latin-1
        or Windows-1252 export, common at statistical offices, needs
        ``encoding="latin-1"`` or ``"cp1252"``. SPSS ``.sav``/``.zsav``, Stata
        ``.dta``, SAS ``.sas7bdat`` and ``.xpt``: passed to pyreadstat's reader,
        overriding the encoding the file declares (for old files that declare
        none or a wrong one; ``"utf-8"`` too, which for these files is not the
        default). Refused for Parquet (UTF-8 by definition) and SPSS
        portable ``.por`` files (``read_por`` takes none).

    Returns
    -------
    pandas.DataFrame
        For SPSS and Stata files, every column with value labels becomes a
        categorical whose categories are the label names in the order of their
        codes (declared labels included even when unobserved, so they count in
        the cell space K); observed values without a label become extra
        categories written as text. User-defined missing values (SPSS) are NaN.
        SAS value labels live in a separate catalog file and are not applied.
        For the files read by pyreadstat, the variable labels are kept in
        ``frame.attrs["column_labels"]`` (dict column name -> label, columns
        without a label left out), so that :func:`resolve_columns` can accept a
        label where a column name is expected; nothing else reads them
        (:class:`Microdata` works on column names only). CSV and Parquet files
        have no variable labels: the key is then absent.
        A Parquet column stored as a pandas categorical or an Arrow dictionary (an R
        factor written by ``arrow``) keeps all its categories, used or not, so they
        count in K as SPSS and Stata value labels do; drop them with
        ``frame[k].cat.remove_unused_categories()`` for observed levels only.
        CSV columns kept as text because two of their texts give one number (below)
        are listed in ``frame.attrs["split_numbers"]``; :class:`Microdata` warns
        (:class:`MicrodataWarning`) when one of them is a key.

    Notes
    -----
    CSV/TSV files are read as text and typed column by column, so that no
    value changes identity on the way in:

    - Missing: an empty or blank field; an unquoted field whose text is one of
      :data:`CSV_NA_VALUES` (``NA``, ``#N/A``, ``NaN``, ``nan``); a field, quoted
      or not, whose text is one of ``na_values``; and a lone ``"."`` in a column
      whose other values are all numbers (how SAS and Stata write a missing
      number). A quoted ``"NA"`` is a level: R's ``write.csv`` writes a missing
      value as ``NA`` and the text ``NA`` (Namibia) as ``"NA"``. ``None``,
      ``NULL``, ``n/a`` are levels unless listed in ``na_values``.
    - Numbers: a column becomes numeric (int64, or float64 when it has missing
      values or decimals; nullable ``Int64`` for integers beyond 2**53 with
      missing values) when all its other values are numbers and no two
      different texts give one number. ``"012"`` and ``"12"``, ``"05.1"`` and
      ``"05.10"``, ``"6"`` and ``"6.0"`` are two codes each, so such a column
      stays text; zero-padded codes alone (``"01"`` … ``"12"``) become numbers.
      Such a key is warned about when :class:`Microdata` is built on it (two
      exports concatenated, one writing ``3`` and one ``3.0``, split every code
      in two and raise the risk).
      In a semicolon-separated ``.csv`` a comma is the decimal mark (``10,5`` =
      10.5), the European spreadsheet convention; thousands separators are not
      read, and a column holding both a comma and a point (``12,5`` and
      ``2.500``) stays text.
    - The file must be UTF-8 (an initial byte-order mark is fine) unless
      ``encoding`` names another. Without it, UTF-16 and UTF-32 files (Excel's
      "Unicode Text") and other non-UTF-8 text are refused with a message saying
      where the first byte that is not UTF-8 is, and naming ``encoding`` (for
      UTF-16 without a byte-order mark, ``"utf-16-le"`` or ``"utf-16-be"`` by its
      first bytes). A header line that holds NUL characters, or runs past 65,536
      characters with no separator, is refused as not in ``encoding`` (a wrong
      codec), without being quoted.

    In every format, text values (and category names, value labels included)
    are stripped of surrounding blanks, and a text that is then empty is
    missing: ``"a "`` and ``"a"`` are one level, as SPSS's own reader has them.
    Column names are kept as written; :func:`resolve_columns` accepts a name
    without its surrounding blanks.

    SPSS and Stata value labels on codes declared missing (SPSS user-missing
    values, Stata ``.a``-``.z``) are not categories (no record can hold them).
    Codes that share one label stay two levels, ``"label [code]"``.

    Raises
    ------
    InputError
        The file does not exist, its ending is not one of the above,
        ``na_values`` is neither a code nor a list of codes, or ``encoding`` is
        not a known codec or is given for a Parquet or ``.por`` file.
    DataError
        The file could not be parsed (a text file not in UTF-8 included), or
        ``columns`` names columns it lacks.
    """
    p, ext = _readable_path(path)
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else list(columns)
    if na_values is not None:
        na_values = _na_value_list(na_values)
    encoding = _check_encoding(encoding, ext, p)
    sep, skip = None, 0
    try:
        if ext in (".csv", ".csv.gz", ".tsv"):
            sep, skip = _csv_layout(p, ext, encoding)
            if columns is not None:
                _check_columns(columns, _csv_header(p, sep, skip, encoding), p)
            frame = _read_csv(p, sep, columns, na_values, skip, encoding)
        elif ext in (".parquet", ".pq"):
            names = _parquet_names(p)
            if columns is not None:
                _check_columns(columns, names, p)
            frame = _strip_text(pd.read_parquet(p, engine="pyarrow", columns=columns))
        else:
            frame = _strip_text(_read_readstat(p, ext, columns, encoding))
    except (InputError, DataError):
        raise
    except UnicodeError as exc:  # UnicodeDecodeError, or "UTF-16 stream does not start with BOM"
        raise _not_utf8(p, exc, None, encoding, sep, skip) from exc
    except Exception as exc:  # any parser failure -> one readable line
        if encoding is not None and "character set" in str(exc):
            raise _readstat_charset_error(p, encoding) from exc
        raise DataError(
            f"could not read '{p.name}' as a {_FORMAT_NAMES[ext]} file: {_one_line(exc)}; "
            "check that the file is complete and of that type"
        ) from exc
    if columns is not None:
        frame = frame[columns]
    if na_values and ext not in (".csv", ".csv.gz", ".tsv"):
        frame = _apply_na_values(frame, na_values)
    for attr in ("column_labels", "split_numbers"):
        kept = frame.attrs.get(attr)
        if kept is not None:  # only the columns kept (pandas carries attrs through frame[...])
            frame.attrs[attr] = {c: v for c, v in kept.items() if c in frame.columns}
    if na_values:  # so that Microdata can say why a weight is missing (audit Z6 F7)
        frame.attrs["na_values"] = list(na_values)
    return frame


def _parquet_names(p: Path) -> list[str]:
    """The column names of a Parquet file, a repeated one refused as in a CSV header."""
    from collections import Counter

    import pyarrow.parquet as pq

    names = pq.read_schema(p).names
    seen = Counter(names)  # one pass: a wide file's names.count per name was quadratic
    dup = [n for n, c in seen.items() if c > 1]
    if dup:  # pyarrow's own error names FieldRef internals (audit Z6 F6)
        raise DataError(
            f"column name(s) {_quote_list(dup)} occur more than once in '{p.name}'; rename "
            "the duplicates"
        )
    return names


def _na_value_list(na_values) -> list:
    """``na_values`` as a list: one code (a text or a number, e.g. -9) or a list of them."""
    def code(v) -> bool:
        return isinstance(v, (str, int, float, np.integer, np.floating)) and not isinstance(
            v, (bool, np.bool_))

    def text(v) -> str:
        # a number as a CSV writes it: -9 and -9.0 are "-9" (a CSV field matches by text)
        if isinstance(v, str):
            return v
        return str(int(v)) if float(v).is_integer() else repr(float(v))

    if code(na_values):
        return [text(na_values)]
    if isinstance(na_values, (list, tuple, set, frozenset, np.ndarray, pd.Index, pd.Series)):
        listed = list(na_values)
        if all(code(v) for v in listed):
            return [text(v) for v in listed]
        bad = next(v for v in listed if not code(v))
        raise InputError(
            f"na_values holds {bad!r} ({type(bad).__name__}); give codes as texts or numbers, "
            "e.g. na_values=-9 or na_values=['-9', '.']"
        )
    raise InputError(
        f"na_values must be a code (a text or a number) or a list of them, e.g. "
        f"na_values=-9 or na_values=['-9', '.']; got {type(na_values).__name__}"
    )


def _apply_na_values(frame: pd.DataFrame, na_values) -> pd.DataFrame:
    """Set the values listed in ``na_values`` missing, in a frame read from a non-CSV file.

    Numbers match as numbers (``"-9"`` is -9 and -9.0), texts once stripped; in a
    categorical, a category matches by its name or by its code in the file
    (``attrs["value_codes"]``), and is removed.
    """
    texts = {str(v).strip() for v in na_values}
    numbers = set()
    for t in texts:
        try:
            numbers.add(float(t))
        except ValueError:
            continue

    def listed(v) -> bool:
        if isinstance(v, str):
            return v.strip() in texts
        if isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)):
            return float(v) in numbers
        return False

    value_codes = frame.attrs.get("value_codes", {})
    for col in frame.columns:
        s = frame[col]
        if isinstance(s.dtype, pd.CategoricalDtype):
            codes = value_codes.get(str(col), {})
            drop = [c for c in s.cat.categories if listed(c) or listed(codes.get(c))]
            if drop:
                # set_categories keeps the order (pandas 3's remove_categories sorts)
                frame[col] = s.cat.set_categories(
                    [c for c in s.cat.categories if c not in set(drop)]
                )
                if str(col) in value_codes:
                    value_codes[str(col)] = {c: v for c, v in codes.items() if c not in drop}
        elif pd.api.types.is_bool_dtype(s.dtype):
            continue
        elif pd.api.types.is_numeric_dtype(s.dtype):
            if numbers:
                hit = s.isin(sorted(numbers)).to_numpy(dtype=bool, na_value=False)
                if hit.any():
                    frame[col] = s.mask(hit)
        else:  # text or mixed object values: one test per distinct value
            codes, uniques = pd.factorize(s, use_na_sentinel=True)
            hit_unique = np.array([listed(v) for v in uniques], dtype=bool)
            hit = np.append(hit_unique, False)[codes]  # code -1 (missing) stays as it is
            if hit.any():
                frame[col] = s.mask(hit)
    return frame


def _check_columns(columns, available, p: Path) -> None:
    absent = [c for c in columns if c not in set(available)]
    if absent:
        raise DataError(
            f"column(s) {_quote_list(absent)} not in '{p.name}' (available: "
            f"{_names_shown(available)}); check the column names"
        )


def _missing_code(ext: str, ranges):
    """Predicate telling whether a labelled code is declared missing (never a category).

    SPSS: the code falls in one of the column's ``missing_ranges`` (values or
    ``lo``-``hi`` ranges). Stata: labels on ``.a``-``.z`` come keyed by the letter.
    """
    pairs = [(e["lo"], e["hi"]) if isinstance(e, dict) else (e, e) for e in ranges or []]

    def missing(code) -> bool:
        if ext == ".dta" and isinstance(code, str):
            return True
        for lo, hi in pairs:
            try:
                if lo <= code <= hi:
                    return True
            except TypeError:  # text range against a number, or the reverse
                continue
        return False

    return missing


def _category_codes(labels: dict, categories, values=None) -> dict:
    """Category name -> its code in the file, for the labelled categories of a column.

    Inverts :func:`_label_column`'s naming (stripped labels, ``"label [code]"``);
    with the column's raw ``values``, also the unlabelled codes it named
    ``"code [code]"`` (their text was another code's label).
    """
    names = set(map(str, categories))
    out = {}
    for code, lab in labels.items():
        text = str(lab).strip()
        num = int(code) if isinstance(code, float) and code.is_integer() else code
        for name in (text, f"{text} [{num}]"):
            if name in names:
                out[name] = code
    if values is not None and any(n.endswith("]") for n in names - set(out)):
        for v in pd.unique(values.dropna()):
            t = _code_text(v)
            if f"{t} [{t}]" in names and v not in labels:
                out[f"{t} [{t}]"] = v.item() if isinstance(v, np.generic) else v
    return out


def _readstat_reader(ext: str):
    """The pyreadstat reader of a file ending (``.sav`` -> ``pyreadstat.read_sav``)."""
    import pyreadstat

    return {
        ".sav": pyreadstat.read_sav,
        ".zsav": pyreadstat.read_sav,
        ".por": pyreadstat.read_por,
        ".dta": pyreadstat.read_dta,
        ".sas7bdat": pyreadstat.read_sas7bdat,
        ".xpt": pyreadstat.read_xport,
    }[ext]


def _readstat_encoding(encoding: str | None) -> dict:
    """The ``encoding=`` of pyreadstat's reader, from :func:`_check_encoding` ({} for UTF-8).

    pyreadstat hands it to iconv, which takes the canonical Python names of the common
    codecs (``iso8859-1``, ``cp1252``) but not every alias (``latin-1`` is refused).
    """
    return {} if encoding is None else {"encoding": encoding}


def _readstat_charset_error(p: Path, encoding: str) -> DataError:
    """The error for an ``encoding`` pyreadstat's iconv does not know, naming its spellings."""
    return DataError(
        f"could not read '{p.name}' with encoding {encoding!r}: pyreadstat (iconv) does "
        "not know that character set; give it as iconv names it (e.g. ISO-8859-1, "
        "WINDOWS-1252, CP1250), or leave out --encoding to use the one the file declares"
    )


def _read_readstat(p: Path, ext: str, columns, encoding: str | None = None) -> pd.DataFrame:
    reader = _readstat_reader(ext)
    enc = _readstat_encoding(encoding)
    if columns is not None:
        _, meta = reader(str(p), metadataonly=True, **enc)
        _check_columns(columns, meta.column_names, p)
    frame, meta = reader(str(p), usecols=columns, **enc)
    labels = getattr(meta, "variable_value_labels", None) or {}
    ranges: dict = {}
    if labels and ext in (".sav", ".zsav"):
        # the user-missing declarations are only reported when asked for (read_por has
        # no such option: portable files expose none)
        _, full = reader(str(p), metadataonly=True, user_missing=True, **enc)
        ranges = getattr(full, "missing_ranges", None) or {}
    value_codes: dict[str, dict] = {}
    for col, lab in labels.items():
        if col in frame.columns and lab:
            raw = frame[col]
            frame[col] = _label_column(raw, lab, _missing_code(ext, ranges.get(col)))
            value_codes[str(col)] = _category_codes(lab, frame[col].cat.categories, raw)
    if value_codes:  # category -> code, for a writer that puts the codes back
        frame.attrs["value_codes"] = value_codes
    names_to_labels = getattr(meta, "column_names_to_labels", None) or {}
    frame.attrs["column_labels"] = {
        str(c): str(lab).strip()
        for c, lab in names_to_labels.items()
        if c in frame.columns and lab is not None and str(lab).strip()
    }
    return frame


# --------------------------------------------------------------------------------------
# variable names given by the user
# --------------------------------------------------------------------------------------


def resolve_columns(
    frame: pd.DataFrame, names, *, option: str = "--keys", source: str | None = None
) -> list[str]:
    """Map variable names given by a user to column names of ``frame``.

    Each name is, in this order: a column name (exact match); a column name
    once surrounding blanks are ignored on both sides (one such column); or the variable
    label of exactly one column, compared without regard to case or surrounding
    blanks (labels from ``frame.attrs["column_labels"]``, which
    :func:`read_microdata` fills for SPSS, Stata and SAS files). SPSS users know
    their variables by label ("Age in years") as often as by name (``v23``).

    Parameters
    ----------
    frame : pandas.DataFrame
        The data; only its columns and ``attrs["column_labels"]`` are read.
    names : str or sequence of str
        What the user wrote, one variable per item.
    option : str
        How the names were given (``"--keys"``, ``"--weight"``, ``"keys="``), for
        the error message.
    source : str, optional
        The file name, for the error message.

    Returns
    -------
    list of str
        The column names, in the order of ``names``.

    Raises
    ------
    DataError
        One line naming every name that is neither a column nor a label, with the
        close matches among column names and labels (:func:`difflib.get_close_matches`),
        or a label shared by several columns, with those columns.
    """
    import difflib

    names = [names] if isinstance(names, str) else list(names)
    columns = [str(c) for c in frame.columns]
    present = set(columns)
    labels = {
        str(c): str(lab)
        for c, lab in (frame.attrs.get("column_labels") or {}).items()
        if str(c) in present and lab
    }
    by_label: dict[str, list[str]] = {}
    for col, lab in labels.items():
        by_label.setdefault(lab.strip().casefold(), []).append(col)
    where = f" in {source}" if source else " in the data"

    by_stripped: dict[str, list[str]] = {}
    for col in columns:
        by_stripped.setdefault(col.strip(), []).append(col)

    resolved: list[str] = []
    unknown: list[str] = []
    for name in names:
        if name in frame.columns:
            resolved.append(name)
            continue
        # a header written "age " (spreadsheet exports) is found as "age"
        near = by_stripped.get(str(name).strip(), [])
        if len(near) == 1:
            resolved.append(near[0])
            continue
        if len(near) > 1:
            raise DataError(
                f"{option} {name!r} matches several columns once blanks are ignored{where} "
                f"({_quote_list(near)}); rename them so that they differ"
            )
        hits = by_label.get(str(name).strip().casefold(), [])
        if len(hits) == 1:
            resolved.append(hits[0])
        elif len(hits) > 1:
            raise DataError(
                f"{option} {name!r} is the variable label of several columns{where} "
                f"({_quote_list(hits)}); give the column name instead"
            )
        else:
            unknown.append(str(name))
    if not unknown:
        return resolved

    if option.startswith("--"):
        # a command-line list is split at commas: a column whose name holds one cannot be
        # named there at all (its pieces arrive as names of their own)
        pieces = {n.strip() for n in unknown}
        for col in columns:
            if "," in col and pieces & {p.strip() for p in col.split(",")}:
                raise DataError(
                    f"column {col!r}{where} has a comma in its name, which {option} cannot "
                    "name (it splits its list at commas); rename the column in the file"
                )

    # Close matches among names and labels: a name equal but for case first, then close
    # ones with the case as written (--N NN: 'N', not 'n'), then close ones in any case;
    # a label is shown with the column it belongs to.
    candidates: dict[str, str] = {}
    for col in columns:
        candidates.setdefault(col.casefold(), repr(_short_name(col)))
    for col, lab in labels.items():
        candidates.setdefault(lab.strip().casefold(),
                              f"{_short_name(lab.strip())!r} (label of {_short_name(col)!r})")

    def suggestions(name: str) -> list[str]:
        text = name.strip()
        same = [repr(_short_name(c)) for c in columns
                if c.strip().casefold() == text.casefold()]
        if same:
            return same[:3]
        exact = difflib.get_close_matches(text, columns, n=3, cutoff=0.6)
        if exact:
            return [repr(_short_name(c)) for c in exact]
        close = difflib.get_close_matches(text.casefold(), list(candidates), n=3, cutoff=0.6)
        return [candidates[c] for c in close]

    parts = []
    for name in unknown:
        close = suggestions(name)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        parts.append(f"{name!r}{hint}")
    shown = _names_shown(columns)
    what = "is neither a column name nor a variable label" if len(unknown) == 1 else (
        "are neither column names nor variable labels"
    )
    raise DataError(
        f"{option} {', '.join(parts)} {what}{where}; check the spelling (columns: {shown})"
    )
