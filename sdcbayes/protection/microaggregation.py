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

Other orders. :func:`ordered_microaggregation` is sdcMicro's methods "simple"
(file order), "single" (sorted by one variable) and "pca" (sorted by the first
principal component; Defays & Anwar 1998): the records are put in one order and
cut into consecutive groups of k, all columns sharing the groups, in n log n
time (0.1 s for 10⁵ records, p = 3). All functions here replace a group by
sdcMicro's ``measure``: the mean, the median, a trimmed mean or the "one-step"
mean (``aggregate``). sdcMicro's robust and clustering methods ("rmd",
"mcdpca", "pppca", "clustpca", "clustmcdpca", "clustpppca", "influence") are
not offered: they rest on random subsets or random starts that cannot be
matched exactly (:func:`ordered_microaggregation` says why for each).

This module may import NumPy and pandas only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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

__all__ = [
    "mdav_groups",
    "mdav",
    "sorted_groups",
    "sorted_microaggregation",
    "ordered_microaggregation",
]

#: Replacement statistics of a group (sdcMicro's ``measure``).
AGGREGATES = ("mean", "median", "trim", "onestep")
#: Methods of :func:`ordered_microaggregation` (sdcMicro's method names).
ORDERED_METHODS = ("simple", "single", "pca")


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


def _check_strata(frame: pd.DataFrame, strata: Any, columns: list[str]) -> list[str] | None:
    """The stratum columns (None without), refused where they are also aggregated."""
    strata_l = check_columns(frame, strata, "strata") if strata is not None else None
    if strata_l and set(strata_l) & set(columns):
        raise InputError(
            f"columns {sorted(set(strata_l) & set(columns))} are both aggregated and strata; "
            "leave them out of one of the two"
        )
    return strata_l


def _check_aggregate(aggregate: object, trim: object) -> float:
    """The trimming fraction, once ``aggregate`` and ``trim`` are known to be valid."""
    if aggregate not in AGGREGATES:
        raise InputError(
            f"aggregate={aggregate!r} must be one of {', '.join(map(repr, AGGREGATES))}")
    if isinstance(trim, (bool, np.bool_)) or not isinstance(trim, (int, float, np.number)) \
            or not 0 <= trim <= 0.5:
        raise InputError(f"trim={trim!r} must be a number from 0 to 0.5 (the fraction cut "
                         "from each end of a group)")
    if trim and aggregate != "trim":
        raise InputError(f"trim={trim!r} applies to aggregate='trim'; got aggregate="
                         f"{aggregate!r} (leave trim at 0 or choose aggregate='trim')")
    return float(trim)


def _group_values(x: np.ndarray, group: np.ndarray, aggregate: str,
                  trim: float = 0.0) -> np.ndarray:
    """Replacement value of each group and column (sdcMicro's ``means`` helper).

    Parameters
    ----------
    x : numpy.ndarray
        (n, p) values.
    group : numpy.ndarray
        0-based group number of each row, every number 0..G-1 used.
    aggregate : {"mean", "median", "trim", "onestep"}
        sdcMicro's ``measure`` (``R/microaggregation.R``, ``means``): the mean;
        the median; R's trimmed mean ``mean(x, trim)`` (drop ``floor(s * trim)``
        values at each end of a group of s, the median when ``trim`` is 0.5);
        the "one-step" mean, the mean after clipping each value to
        median ± (3/1.486) · MAD, MAD = 1.4826 · median |x − median| (R's
        ``mad``; the 3/1.486 is sdcMicro's constant, not 3/1.4826).
    trim : float
        Fraction for ``aggregate="trim"``.

    Returns
    -------
    numpy.ndarray
        (G, p) values.
    """
    n_groups = int(group.max()) + 1
    size = np.bincount(group, minlength=n_groups)
    if aggregate == "median" or (aggregate == "trim" and trim >= 0.5):
        return pd.DataFrame(x).groupby(group).median().to_numpy()
    if aggregate == "mean" or (aggregate == "trim" and np.all(np.floor(size * trim) == 0)):
        return np.column_stack([np.bincount(group, weights=x[:, j], minlength=n_groups) / size
                                for j in range(x.shape[1])])
    if aggregate == "trim":
        cut = np.floor(size * trim).astype(np.int64)  # R: lo = floor(n * trim) + 1, 1-based
        out = np.empty((n_groups, x.shape[1]))
        for j in range(x.shape[1]):
            order = np.lexsort((x[:, j], group))  # by group, then value
            g = group[order]
            start = np.concatenate([[0], np.cumsum(size)[:-1]])
            rank = np.arange(x.shape[0]) - start[g]  # 0-based rank within its group
            keep = (rank >= cut[g]) & (rank < size[g] - cut[g])
            out[:, j] = (np.bincount(g[keep], weights=x[order[keep], j], minlength=n_groups)
                         / (size - 2 * cut))
        return out
    # onestep: clip to median +- 3/1.486 * mad within the group, then the mean
    med = pd.DataFrame(x).groupby(group).median().to_numpy()
    mad = 1.4826 * pd.DataFrame(np.abs(x - med[group])).groupby(group).median().to_numpy()
    half = 3 / 1.486 * mad
    clipped = np.clip(x, (med - half)[group], (med + half)[group])
    return np.column_stack([np.bincount(group, weights=clipped[:, j], minlength=n_groups) / size
                            for j in range(x.shape[1])])


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
    trim: float = 0.0,
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
    aggregate : {"mean", "median", "trim", "onestep"}, default "mean"
        Replacement value of each group; the mean preserves the column means
        exactly. sdcMicro's mdav always takes the mean (its ``measure`` is
        ignored for mdav); the other statistics are sdcMicro's ``measure`` of
        its other methods, applied here to the MDAV groups (see
        :func:`ordered_microaggregation`).
    trim : float, default 0
        With ``aggregate="trim"``: the fraction cut from each end of a group
        (R's ``mean(x, trim)``; 0.5 gives the median).

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
    trim = _check_aggregate(aggregate, trim)
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
    values = _group_values(x, group, aggregate, trim)
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
        "trim": trim,
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
    trim: float = 0.0,
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
    aggregate : {"mean", "median", "trim", "onestep"}, default "mean"
        Replacement value of each group (sdcMicro's ``measure``; see
        :func:`ordered_microaggregation`). With several columns this is
        sdcMicro's method "onedims", which takes all four; sdcMicro's
        ``mafast`` (one variable) takes a function, so only "mean" and
        "median" there.
    trim : float, default 0
        With ``aggregate="trim"``: the fraction cut from each end of a group.

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
    strata_l = _check_strata(frame, strata, columns)
    trim = _check_aggregate(aggregate, trim)
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
        value = _group_values(x[:, [j]], group, aggregate, trim)[:, 0]
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
        "trim": trim,
        "n_groups": n_groups,
        "group_of_record": group_of,
    }
    return ProtectionResult(out, log, summary)


# --------------------------------------------------------------------------- ordered

#: sdcMicro methods not offered, with the reason (their results depend on robust fits
#: or clusterings that cannot be reproduced exactly here).
_NOT_OFFERED = {
    "rmd": "it ranks records by a robust Mahalanobis distance from robustbase::covMcd, "
           "whose random subsets cannot be reproduced exactly",
    "mcdpca": "it sorts on a principal component of MASS::cov.mcd's robust covariance, "
              "drawn from random subsets",
    "pppca": "it sorts on a projection-pursuit principal component (prcompRob) whose "
             "ties and robust scale make it a different method; use method 'pca'",
    "clustpca": "it clusters the records first (cluster::clara, kmeans) from random starts",
    "clustmcdpca": "it clusters the records first (cluster::clara, kmeans) from random "
                   "starts",
    "clustpppca": "it clusters the records first (cluster::clara, kmeans) from random "
                  "starts",
    "influence": "it clusters the records first (cluster::clara, kmeans) from random starts",
}


def _orient_component(v: np.ndarray) -> np.ndarray:
    """The first principal axis with its largest-magnitude loading positive.

    An eigenvector's sign is arbitrary: R's ``princomp`` keeps whatever LAPACK's
    ``dsyevr`` returns, which differs between LAPACK builds (and from NumPy's
    ``dsyevd``). A fixed rule makes the order reproducible; the first of equal
    magnitudes decides.
    """
    return v if v[int(np.argmax(np.abs(v)))] >= 0 else -v


def _pca_order(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order of the rows by their first principal-component score, and the axis.

    As sdcMicro's ``micro_pca``: ``princomp(scale(x))``, i.e. the eigenvector of
    the largest eigenvalue of the (divisor n) covariance of the z-scores
    (sd with divisor n − 1), scores of the centred z-scores; sorted ascending,
    ties in input order (R's ``sort(index.return = TRUE)`` is a stable radix
    sort).
    """
    z = (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)
    z = z - z.mean(axis=0)  # princomp centres again (cov.wt's centre)
    cov = z.T @ z / z.shape[0]
    _, vectors = np.linalg.eigh(cov)
    axis = _orient_component(vectors[:, -1])
    return np.argsort(z @ axis, kind="stable"), axis


@stamped
def ordered_microaggregation(
    frame: pd.DataFrame,
    columns: Sequence[str] | str,
    k: int = 3,
    *,
    method: str = "pca",
    varsort: str | None = None,
    strata: Sequence[str] | str | None = None,
    aggregate: str = "mean",
    trim: float = 0.0,
) -> ProtectionResult:
    """Micro-aggregate records put in one order: sdcMicro's "simple", "single", "pca".

    The records are ordered, cut into consecutive groups of k and every value
    of ``columns`` is replaced by its group's statistic (Templ, Meindl &
    Kowarik 2015, JSS 67(4), section 3.4; seed 001, section 4.2.1), all
    columns with the same groups:

    - ``"simple"``: the file order (sdcMicro's benchmark: no sorting);
    - ``"single"``: sorted by one variable, ``varsort`` (sdcMicro's ``varsort``);
    - ``"pca"``: sorted by the first principal component of the z-scores
      (Defays & Anwar 1998, "Masking microdata using micro-aggregation", J.
      Official Statistics 14(4); sdcMicro's ``micro_pca``: ``princomp(scale(x))``).

    The cut is sdcMicro's ``indexMicro``: blocks of k from the first record in
    the order, the last n mod k records joining the last block (so one group
    has k to 2k − 1 records, at the end of the order). This reproduces
    ``sdcMicro::microaggregation(x, variables, aggr = k, method, measure, trim,
    varsort, strata_variables)`` (5.8.0, ``R/microaggregation.R``) to the last
    bits of the group statistics, with these choices:

    - PCA direction: an eigenvector's sign is arbitrary and R keeps LAPACK's,
      which varies between LAPACK builds. sdcbayes makes the largest-magnitude
      loading positive (``summary["first_component"]``). Where R's axis points
      the other way the order is reversed: with n divisible by k the groups are
      the same; otherwise the larger group sits at the other end of the axis.
    - Small strata: sdcMicro stops when a stratum has fewer than 2k records
      ("Too less observations"); sdcbayes makes one group of a stratum with k to
      2k − 1 records and refuses fewer than k.
    - One column: sdcMicro ignores the method and calls ``mafast``; here one
      column is refused (use :func:`sorted_microaggregation`).
    - Weights: sdcMicro's weighted mean and median (``weights``) are not
      offered; all records count alike (sdcMicro's default).

    sdcMicro's "mdav" is :func:`mdav` and "onedims" is
    :func:`sorted_microaggregation`. Not offered, as they cannot be matched
    exactly: "rmd" (robust Mahalanobis distances from ``robustbase::covMcd``,
    random subsets), "mcdpca" (``MASS::cov.mcd``), "pppca" (projection
    pursuit), "clustpca", "clustmcdpca", "clustpppca" and "influence" (cluster
    analysis from random starts first).

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    columns : sequence of str
        At least two numeric variables, without missing values.
    k : int, default 3
        Group size (sdcMicro's ``aggr``).
    method : {"pca", "single", "simple"}, default "pca"
        How the records are ordered (above).
    varsort : str, optional
        With ``method="single"``: the column sorted on (ties in file order);
        default the first of ``columns`` (sdcMicro's ``varsort = 1``).
    strata : str or sequence of str, optional
        Aggregate within each stratum (sdcMicro's ``strata_variables``): each
        stratum is ordered and cut on its own, its PCA fitted on its records.
    aggregate : {"mean", "median", "trim", "onestep"}, default "mean"
        sdcMicro's ``measure``: the mean (keeps each column's mean), the
        median, the trimmed mean (``trim``), or the one-step mean (each value
        clipped to median ± (3/1.486) MAD of its group first).
    trim : float, default 0
        With ``aggregate="trim"``: the fraction cut from each end of a group,
        0 to 0.5 (R's ``mean(x, trim)``: ``floor(size * trim)`` values at each
        end; 0.5 is the median).

    Returns
    -------
    ProtectionResult
        ``frame``: the columns replaced by group values (as float).
        ``log``: one row per group: ``stratum`` (with ``strata``), ``group``,
        ``size``, ``records`` (0-based positions, in the order) and the value
        of each column.
        ``summary``: ``method``, ``columns``, ``k``, ``varsort``, ``strata``,
        ``aggregate``, ``trim``, ``n_groups``, ``min_group_size``,
        ``max_group_size``, ``group_of_record`` (int64 array) and, for "pca",
        ``first_component`` (stratum label -> loadings, as oriented).

    Raises
    ------
    InputError
        An unknown or not-offered method, fewer than two columns, non-numeric
        or incomplete columns, a bad k, aggregate or trim, ``varsort`` not
        among ``columns`` or given without method "single", a stratum column
        also aggregated, a stratum with fewer than k records; for "pca" a
        column constant within a stratum or a stratum with no more records
        than columns (``princomp`` needs more).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"x": [1.0, 9.0, 2.0, 8.0, 3.0, 7.0],
    ...                    "y": [2.0, 0.0, 1.0, 5.0, 4.0, 3.0]})
    >>> ordered_microaggregation(df, ["x", "y"], k=3, method="single").frame["x"].tolist()
    [2.0, 8.0, 2.0, 8.0, 2.0, 8.0]
    """
    frame = check_frame(frame)
    if method in _NOT_OFFERED:
        raise InputError(f"method {method!r} (sdcMicro) is not offered: {_NOT_OFFERED[method]}; "
                         f"choose one of {', '.join(map(repr, ORDERED_METHODS))}, or mdav")
    if method in ("mdav", "onedims"):
        raise InputError(f"method {method!r} is a function of its own: use "
                         + ("mdav()" if method == "mdav" else "sorted_microaggregation()"))
    if method not in ORDERED_METHODS:
        raise InputError(f"method={method!r} must be one of "
                         f"{', '.join(map(repr, ORDERED_METHODS))}")
    columns = check_columns(frame, columns, "columns")
    if len(columns) < 2:
        raise InputError(
            f"ordered micro-aggregation needs at least two columns; got {columns}. For one "
            "variable use sorted_microaggregation (sdcMicro's microaggregation calls mafast "
            "for one variable whatever the method)")
    if varsort is not None:
        if method != "single":
            raise InputError(f"varsort={varsort!r} applies to method 'single'; drop it or "
                             "choose method='single'")
        if varsort not in columns:
            raise InputError(f"varsort={varsort!r} must be one of the columns {columns}")
    sort_col = columns.index(varsort) if varsort is not None else 0
    strata_l = _check_strata(frame, strata, columns)
    trim = _check_aggregate(aggregate, trim)
    x = _numeric_matrix(frame, columns)
    _check_k(k, x.shape[0])
    stratum, labels = code_strata(frame, strata_l) if strata_l else (
        np.zeros(x.shape[0], dtype=np.int64), ["all"])
    sizes = np.bincount(stratum, minlength=len(labels))
    small = np.flatnonzero(sizes < k)
    if small.size:
        raise InputError(
            f"{small.size} strata have fewer than k={k} records (e.g. {labels[small[0]]!r}: "
            f"{int(sizes[small[0]])}); lower k or merge strata")
    by_stratum = np.argsort(stratum, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    if method == "pca":  # checked for every stratum before any fit
        for s in range(len(labels)):
            part = x[by_stratum[bounds[s]:bounds[s + 1]]]
            where = "" if not strata_l else f" in stratum {labels[s]!r}"
            if part.shape[0] <= part.shape[1]:
                raise InputError(
                    f"method 'pca' needs more records than columns{where} ({part.shape[0]} "
                    f"for {part.shape[1]}); merge strata or use method 'single'")
            const = [c for c, col in zip(columns, part.T, strict=True) if np.ptp(col) == 0]
            if const:
                raise InputError(
                    f"columns {const} are constant{where}: their z-scores, which method 'pca' "
                    "needs, are undefined; drop them or use method 'single'")
    group = np.empty(x.shape[0], dtype=np.int64)
    position = np.empty(x.shape[0], dtype=np.int64)  # rank in the order, within stratum
    axes: dict[str, list[float]] = {}
    first = 0
    for s in range(len(labels)):
        rows = by_stratum[bounds[s]:bounds[s + 1]]  # file order within the stratum
        if method == "simple":
            order = np.arange(rows.size)
        elif method == "single":
            order = np.argsort(x[rows, sort_col], kind="stable")
        else:
            order, axis = _pca_order(x[rows])
            axes[str(labels[s])] = axis.tolist()
        m = rows.size
        rank = np.empty(m, dtype=np.int64)
        rank[order] = np.arange(m)
        # sdcMicro's indexMicro: blocks of k, the last n mod k join the last block
        group[rows] = np.minimum(rank // k, m // k - 1) + first
        position[rows] = rank
        first += m // k
    values = _group_values(x, group, aggregate, trim)
    out = output_frame(frame)  # unchanged columns shared under copy-on-write
    for j, col in enumerate(columns):
        out[col] = values[group, j]
    size = np.bincount(group, minlength=first)
    members = np.lexsort((position, group))
    log = pd.DataFrame({"group": np.arange(first), "size": size,
                        "records": [r.tolist() for r in
                                    np.split(members, np.cumsum(size)[:-1])]})
    if strata_l:
        some_row = np.zeros(first, dtype=np.int64)
        some_row[group] = np.arange(x.shape[0])
        log.insert(0, "stratum", np.asarray(labels, dtype=object)[stratum[some_row]])
    for j, col in enumerate(columns):
        log[col] = values[:, j]
    summary = {
        "method": method,
        "columns": columns,
        "k": int(k),
        "varsort": columns[sort_col] if method == "single" else None,
        "strata": strata_l,
        "aggregate": aggregate,
        "trim": trim,
        "n_groups": first,
        "min_group_size": int(size.min()),
        "max_group_size": int(size.max()),
        "group_of_record": group,
    }
    if method == "pca":
        summary["first_component"] = axes
    return ProtectionResult(out, log, summary)
