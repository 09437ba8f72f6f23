"""Micro-aggregation of numeric variables with MDAV (seed 001, section 4.2.1).

Micro-aggregation partitions the records into groups of at least k similar
records and replaces each value by its group mean, so every record shares its
(numeric) values with at least k − 1 others while the means are preserved
exactly. MDAV ("maximum distance to average vector"; Domingo-Ferrer &
Mateo-Sanz 2002, Domingo-Ferrer & Torra 2005, the default method of sdcMicro's
``microaggregation``, used in seed 001 section 7.4 with k = 3) builds the groups:

1. while at least 3k records remain: x̄ = centroid of the remaining records;
   x_r = the record farthest from x̄; x_s = the record farthest from x_r; form a
   group of x_r and its k − 1 nearest records, remove it, then a group of x_s and
   its k − 1 nearest remaining records, remove it;
2. if 2k..3k − 1 records remain: x_r = farthest from their centroid; a group of
   x_r and its k − 1 nearest; the rest form the last group;
3. otherwise (k..2k − 1 records) they form the last group.

Every group has between k and 2k − 1 records. Distances are Euclidean on
standardised variables (z-scores) unless ``standardize=False``.

One variable. sdcMicro's ``microaggregation(method="mdav")`` does not run MDAV
on a single variable: it calls ``mafast`` (``R/microaggregation.R``, the
``length(variables) == 1`` branch), which sorts the values and groups
consecutive blocks of k from the smallest, the remainder (fewer than k values)
joining the last, largest group. That is :func:`sorted_microaggregation` here.
:func:`mdav` on one column runs MDAV in one dimension, which takes groups from
both ends and leaves the remainder in the middle: on sdcMicro's ``testdata``
with k = 3, 2,291 of the 4,580 ``expend`` values come out different from
sdcMicro's. With two or more variables :func:`mdav` reproduces sdcMicro's
partition (``src/Mdav.cpp``; on ``testdata`` expend, income, savings with
k = 3: 1,526 groups, 1,525 of 3 and one of 5).

Cost: MDAV is quadratic, O(n²p/k) (each of the ~n/k groups measures its
distance to every remaining record; sdcMicro's MDAV is too). Measured for
``mdav_groups`` with p = 3, k = 3 on one core: about 0.5 s for n = 10 000,
1.7 s for n = 20 000 and 17 s for n = 50 000, so roughly 1 min for 10⁵ and
hours for 10⁶ records. For large files run it within strata or blocks (call
:func:`mdav` on each subset, e.g. per region, or on blocks of records sorted by
a main variable): the cost falls by the number of blocks, and every group still
has at least k records of its block.

This module may import NumPy and pandas only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.protection.base import (
    ProtectionResult,
    check_columns,
    check_frame,
    check_numeric_columns,
    code_strata,
    output_frame,
    stamped,
)

__all__ = ["mdav_groups", "mdav", "sorted_groups", "sorted_microaggregation"]


def _numeric_matrix(frame: pd.DataFrame, columns: list[str],
                    method: str = "micro-aggregation") -> np.ndarray:
    """The numeric ``columns`` as a float matrix; ``method`` names the step in errors."""
    check_numeric_columns(frame, columns, method)
    x = frame[columns].to_numpy(dtype=np.float64)
    if not np.isfinite(x).all():
        rows = np.flatnonzero(~np.isfinite(x).all(axis=1))[:5].tolist()
        raise InputError(
            f"columns {columns} have missing or infinite values (rows {rows}...); impute or "
            f"drop them before {method}"
        )
    return x


def _check_k(k: object, n: int) -> None:
    # bool is an int to Python: k=True would silently mean k = 1 (no aggregation)
    if isinstance(k, (bool, np.bool_)) or not (isinstance(k, (int, np.integer)) and 1 <= k):
        raise InputError(f"k={k!r} must be an integer >= 1 (the minimum group size)")
    if n < k:
        raise InputError(f"only {n} records for groups of k={k}; lower k or add records")


def mdav_groups(x: np.ndarray, k: int) -> np.ndarray:
    """MDAV partition of the rows of ``x`` into groups of k to 2k − 1 rows.

    Parameters
    ----------
    x : numpy.ndarray
        (n, p) matrix, already scaled as the distances should see it.
    k : int
        Minimum group size, 1 <= k <= n.

    Returns
    -------
    numpy.ndarray
        int64 group number of each row (0-based, in order of formation).

    Notes
    -----
    O(n²p/k) time (see the module docstring for measured times); split large
    files into strata or blocks first.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    n = x.shape[0]
    _check_k(k, n)
    group = np.full(n, -1, dtype=np.int64)
    # Working copies of the remaining rows, compacted after each group: the loop
    # runs over groups (each depends on the previous ones), every step inside it
    # is vectorised over records. The column sums are updated incrementally.
    rows = np.arange(n)
    xs = x.copy()
    col_sum = xs.sum(axis=0)
    g = 0

    def sqdist(point: np.ndarray) -> np.ndarray:
        diff = xs - point
        return np.einsum("ij,ij->i", diff, diff)

    def without(a: np.ndarray, cut: np.ndarray) -> np.ndarray:
        # Rows of ``a`` except the sorted positions ``cut``, order kept: k + 1
        # contiguous blocks, several times faster than a boolean-mask gather.
        bounds = zip(np.concatenate([[0], cut + 1]), np.concatenate([cut, [a.shape[0]]]),
                     strict=True)
        return np.concatenate([a[lo:hi] for lo, hi in bounds])

    def take_group(center: int) -> None:
        nonlocal rows, xs, col_sum, g
        d = sqdist(xs[center])
        d[center] = -1.0  # the centre belongs to its own group whatever the ties
        near = np.argpartition(d, k - 1)[:k]
        group[rows[near]] = g
        g += 1
        col_sum = col_sum - xs[near].sum(axis=0)
        cut = np.sort(near)
        rows, xs = without(rows, cut), without(xs, cut)

    while rows.size >= 3 * k:
        r = int(np.argmax(sqdist(col_sum / rows.size)))
        r_point = xs[r].copy()
        take_group(r)
        take_group(int(np.argmax(sqdist(r_point))))  # x_s: farthest from x_r
    if rows.size >= 2 * k:
        take_group(int(np.argmax(sqdist(col_sum / rows.size))))
    if rows.size:
        group[rows] = g
    return group


@stamped
def mdav(
    frame: pd.DataFrame,
    columns: Sequence[str] | str,
    k: int = 3,
    *,
    standardize: bool = True,
    aggregate: str = "mean",
) -> ProtectionResult:
    """Micro-aggregate numeric variables with MDAV (seed 001, section 4.2.1).

    All ``columns`` are aggregated jointly (one partition, multivariate
    distances). For univariate micro-aggregation as sdcMicro does it (its
    ``microaggregation`` with one variable, ``mafast``: sort and cut into
    consecutive groups of k), use :func:`sorted_microaggregation`; MDAV on one
    column forms different groups (see the module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    columns : str or sequence of str
        Numeric variables, without missing values (boolean columns are refused).
    k : int, default 3
        Minimum group size (seed 001, Listing 3: MDAV with k = 3).
        The cost is O(n²p/k) (about 17 s for 50 000 records, p = 3, k = 3; see
        the module docstring): for large files call it within strata or blocks.
    standardize : bool, default True
        Measure distances on z-scores (variables on different scales count alike).
    aggregate : {"mean", "median"}, default "mean"
        Replacement value of each group; the mean preserves the column means
        exactly.

    Returns
    -------
    ProtectionResult
        ``frame``: the columns replaced by group values (as float).
        ``log``: one row per group: ``group``, ``size``, ``records`` (list of
        0-based positions) and the replacement value of each column.
        ``summary``: ``k``, ``n_groups``, ``min_group_size``,
        ``max_group_size``, ``group_of_record`` (array).
    """
    frame = check_frame(frame)
    columns = check_columns(frame, columns, "columns")
    if aggregate not in ("mean", "median"):
        raise InputError(f"aggregate={aggregate!r} must be 'mean' or 'median'")
    x = _numeric_matrix(frame, columns)
    _check_k(k, x.shape[0])  # before standardising: an empty frame would warn first
    z = x
    if standardize:
        sd = x.std(axis=0, ddof=1) if x.shape[0] > 1 else np.ones(x.shape[1])
        sd = np.where(sd > 0, sd, 1.0)
        z = (x - x.mean(axis=0)) / sd
    group = mdav_groups(z, k)
    n_groups = int(group.max()) + 1
    sizes = np.bincount(group, minlength=n_groups)
    if aggregate == "mean":
        values = np.column_stack(
            [
                np.bincount(group, weights=x[:, j], minlength=n_groups) / sizes
                for j in range(x.shape[1])
            ]
        )
    else:
        values = (
            pd.DataFrame(x, columns=range(x.shape[1])).groupby(group).median().to_numpy()
        )
    out = output_frame(frame)  # unchanged columns shared under copy-on-write
    for j, col in enumerate(columns):
        out[col] = values[group, j]
    order = np.argsort(group, kind="stable")
    splits = np.split(order, np.cumsum(sizes)[:-1])
    log = pd.DataFrame(
        {"group": np.arange(n_groups), "size": sizes, "records": [s.tolist() for s in splits]}
    )
    for j, col in enumerate(columns):
        log[col] = values[:, j]
    summary = {
        "method": "mdav",
        "columns": columns,
        "k": int(k),
        "standardize": bool(standardize),
        "aggregate": aggregate,
        "n_groups": n_groups,
        "min_group_size": int(sizes.min()),
        "max_group_size": int(sizes.max()),
        "group_of_record": group,
    }
    return ProtectionResult(out, log, summary)


# --------------------------------------------------------------------------- univariate


def sorted_groups(values: np.ndarray, k: int) -> np.ndarray:
    """Groups of consecutive sorted values: sdcMicro's ``mafast`` partition.

    The values are sorted (ties in input order, as R's stable ``order``) and
    cut into blocks of k from the smallest; the last n mod k values join the
    last block, so every group has k records except the largest, which has
    k to 2k − 1.

    Parameters
    ----------
    values : numpy.ndarray
        One-dimensional, without missing values.
    k : int
        Group size, 1 <= k <= len(values).

    Returns
    -------
    numpy.ndarray
        int64 group number of each value (0 = the smallest values).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1:
        raise InputError(f"values must be one-dimensional; got shape {values.shape}")
    n = values.size
    _check_k(k, n)
    rank = np.empty(n, dtype=np.int64)
    rank[np.argsort(values, kind="stable")] = np.arange(n)
    # positions n - n mod k .. n - 1 would start an incomplete block: they join the last
    return np.minimum(rank // k, n // k - 1)


@stamped
def sorted_microaggregation(
    frame: pd.DataFrame,
    columns: Sequence[str] | str,
    k: int = 3,
    *,
    strata: Sequence[str] | str | None = None,
    aggregate: str = "mean",
) -> ProtectionResult:
    """Univariate micro-aggregation by sorting, as sdcMicro's ``mafast`` (seed 001, 4.2.1).

    Each column is aggregated on its own: its values are sorted and cut into
    consecutive groups of k from the smallest (the remainder of fewer than k
    values joins the last, largest group), and every value is replaced by its
    group's mean (seed 001, section 4.2.1: micro-aggregation replaces values by
    the mean of groups of at least k similar records). This is what sdcMicro's
    ``microaggregation(method="mdav")`` does for a single variable (it calls
    ``mafast``, ``R/mafast.R``), and what ``mafast`` does for each of several
    variables. :func:`mdav` on one column (MDAV in one dimension) forms other
    groups; see the module docstring.

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    columns : str or sequence of str
        Numeric variables, without missing values; each gets its own groups.
    k : int, default 3
        Group size (sdcMicro's ``aggr``); every stratum needs at least k records.
    strata : str or sequence of str, optional
        Aggregate within each stratum (sdcMicro's ``by``); stratum columns need
        no particular type but must not be among ``columns``.
    aggregate : {"mean", "median"}, default "mean"
        Replacement value of each group (sdcMicro's ``measure``).

    Returns
    -------
    ProtectionResult
        ``frame``: the columns replaced by group values (as float).
        ``log``: one row per (column, group): ``variable``, ``stratum`` (when
        ``strata`` is given), ``group``, ``size``, ``low`` and ``high`` (the
        original values it spans), ``value``.
        ``summary``: ``method`` ("sorted_microaggregation"), ``columns``, ``k``,
        ``strata``, ``aggregate``, ``n_groups`` (dict column -> count),
        ``group_of_record`` (dict column -> int64 array of group numbers,
        numbered across strata).

    Raises
    ------
    InputError
        Unknown, non-numeric or incomplete columns, a bad k or aggregate, a
        stratum with fewer than k records, or a column used as a stratum too.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"x": [5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 7.0]})
    >>> sorted_microaggregation(df, "x", k=3).frame["x"].tolist()
    [6.25, 2.0, 6.25, 2.0, 2.0, 6.25, 6.25]
    """
    frame = check_frame(frame)
    columns = check_columns(frame, columns, "columns")
    strata_l = check_columns(frame, strata, "strata") if strata is not None else None
    if strata_l and set(strata_l) & set(columns):
        raise InputError(
            f"columns {sorted(set(strata_l) & set(columns))} are both aggregated and strata; "
            "leave them out of one of the two"
        )
    if aggregate not in ("mean", "median"):
        raise InputError(f"aggregate={aggregate!r} must be 'mean' or 'median'")
    x = _numeric_matrix(frame, columns)
    _check_k(k, x.shape[0])
    if strata_l:
        stratum, labels = code_strata(frame, strata_l)
    else:
        stratum, labels = np.zeros(x.shape[0], dtype=np.int64), [None]
    sizes = np.bincount(stratum, minlength=len(labels))
    small = np.flatnonzero(sizes < k)
    if small.size:
        raise InputError(
            f"{small.size} strata have fewer than k={k} records (e.g. {labels[small[0]]!r}: "
            f"{int(sizes[small[0]])}); lower k or merge strata"
        )
    out = output_frame(frame)  # unchanged columns shared under copy-on-write
    n_groups: dict[str, int] = {}
    group_of: dict[str, np.ndarray] = {}
    parts = []
    by_stratum = np.argsort(stratum, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    for j, col in enumerate(columns):
        group = np.empty(x.shape[0], dtype=np.int64)
        first = 0
        for s in range(len(labels)):
            rows = by_stratum[bounds[s]:bounds[s + 1]]
            g = sorted_groups(x[rows, j], k)
            group[rows] = g + first
            first += int(g.max()) + 1
        size = np.bincount(group, minlength=first)
        if aggregate == "mean":
            value = np.bincount(group, weights=x[:, j], minlength=first) / size
        else:
            value = pd.Series(x[:, j]).groupby(group).median().to_numpy()
        out[col] = value[group]
        lows = pd.Series(x[:, j]).groupby(group).agg(["min", "max"])
        part = pd.DataFrame({"variable": col, "group": np.arange(first), "size": size,
                             "low": lows["min"].to_numpy(), "high": lows["max"].to_numpy(),
                             "value": value})
        if strata_l:
            some_row = np.zeros(first, dtype=np.int64)
            some_row[group] = np.arange(x.shape[0])  # any record of a group names its stratum
            part.insert(1, "stratum", np.asarray(labels, dtype=object)[stratum[some_row]])
        parts.append(part)
        n_groups[col] = first
        group_of[col] = group
    log = pd.concat(parts, ignore_index=True)
    summary = {
        "method": "sorted_microaggregation",
        "columns": columns,
        "k": int(k),
        "strata": strata_l,
        "aggregate": aggregate,
        "n_groups": n_groups,
        "group_of_record": group_of,
    }
    return ProtectionResult(out, log, summary)
