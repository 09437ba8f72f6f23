"""Distance-based record linkage risk and interval risk of a protected (perturbed) file.

Seed ``001_…`` (Templ, Meindl, Kowarik & Chen 2014, IHSN *Introduction to SDC*),
section 3.6, after Pagliuca & Seri (1999): a protected file ``A'`` is made from
the original ``A`` record by record. For each record ``r`` of ``A'`` compute its
distance to every record of ``A`` and find the nearest (``r1``) and second
nearest (``r2``). If ``r1`` is the original record ``r`` was made from, ``r`` is
linked; the seed also counts the case where the original is ``r2``. The share of
protected records linked to their own original is the file's linkage risk.

Here: Euclidean distance on the chosen numeric variables, each divided by its
standard deviation in the original file (so that noise and scale are comparable
across variables; ``standardize=False`` keeps the raw units). For record ``i``
of the protected file the *rank* of its original is ``1 +`` the number of
original records strictly closer than it (competition ranking): ties count in
the intruder's favour, which makes the shares upper bounds. ``rank = 1`` is
"nearest", ``2`` "second nearest", and ``3`` stands for "third or further". The
tie-fair version, an intruder picking at random among the records at the
smallest distance, is ``expected_correct``: ``1/t_i`` when the original is
among the ``t_i`` nearest at equal distance, else 0. Distances equal to within
a relative ``1e-9`` are ties.

Cost: no ``n x n`` distance matrix. The original file is reduced to its
distinct rows (one hash pass per variable) and one k-d tree
(``scipy.spatial.cKDTree``) is built on them. A protected record equal to its
own original needs no search: its rank is 1 and its ties are the copies of its
row. Every other record gets one 2-nearest-neighbour query, bounded by its own
distance, and a ball query only when a second original lies within that
distance. Discrete (integer-coded) variables therefore cost about
``O(n log d)`` for ``d`` distinct rows instead of ``O(n^2 / d)``: 1e6 records
on 3 variables with 5 levels each take about 0.5 s. For continuous variables
the 2-nearest-neighbour queries dominate, ``O(n log n)`` with a constant that
grows with the number of variables; on 6 standard-normal variables and one
core, 1e6 records take about 15 s (noise 0.1 sd, mostly linked) to 30 s (noise
0.5 sd, mostly not); ``workers`` spreads the queries over CPU cores.

The module also gives :func:`interval_risk`, sdcMicro's interval disclosure
risk of numeric variables (``dRisk``; Mateo-Sanz, Sebe & Domingo-Ferrer 2004,
method SDID): the share of records whose original values all lie within
``± k`` standard deviations of their protected values. It needs no search.

Imports NumPy, SciPy and pandas only (plus the project's exceptions, version and
JSON helper) -- never PyMC.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from sdcbayes._version import __version__
from sdcbayes.exceptions import InputError
from sdcbayes.microdata import _group, as_pandas_frame
from sdcbayes.protection.base import check_row_order
from sdcbayes.provenance import json_safe

__all__ = ["IntervalRiskResult", "LinkageResult", "interval_risk", "linkage_risk"]

#: Distances equal to within this relative tolerance are ties.
_TIE_RTOL = 1e-9

# cKDTree compares squared distances: below this scale a square can underflow to 0,
# so exact-equality shortcuts are not used when such values occur (see _link).
_UNDERFLOW_SAFE = 1e-140
# Nearest-neighbour queries are bounded per group of records with similar own
# distances (SciPy takes one bound per call); this many records per group at least.
_GROUP_SIZE = 4096
_MAX_GROUPS = 32


@dataclass(frozen=True)
class LinkageResult:
    """Per-record linkage outcome and file-level shares.

    Attributes
    ----------
    variables : list of str
        Variables the distance uses.
    rank : numpy.ndarray
        int64 per protected record: 1 (own original nearest), 2 (second
        nearest), 3 (third or further).
    n_tied : numpy.ndarray
        int64: original records at the smallest distance, the own one included,
        when ``rank == 1`` (1 = no tie); 0 otherwise.
    distance : numpy.ndarray
        Distance from each protected record to its own original.
    scale : numpy.ndarray
        Divisor of each variable (its standard deviation in the original, or 1).
    settings : dict
        The settings the result was computed with (``variables``,
        ``standardize``, ``tie_rtol``, ``distance``), repeated in
        :meth:`summary` so that a saved summary can be traced back.
    """

    variables: list[str]
    rank: np.ndarray
    n_tied: np.ndarray
    distance: np.ndarray
    scale: np.ndarray
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def n_records(self) -> int:
        """Number of protected records."""
        return int(self.rank.size)

    @property
    def share_nearest(self) -> float:
        """Share of protected records whose nearest original is their own (seed 001, 3.6)."""
        return float(np.mean(self.rank == 1))

    @property
    def share_second(self) -> float:
        """Share whose own original is the second nearest."""
        return float(np.mean(self.rank == 2))

    @property
    def share_linked(self) -> float:
        """Share linked to the nearest or the second nearest original."""
        return float(np.mean(self.rank <= 2))

    @property
    def expected_correct(self) -> np.ndarray:
        """Per record: probability of a correct link, picking at random among tied nearest.

        This links each protected record to the originals (the direction of the
        ranks). Records that share one protected value (a micro-aggregation
        group) share its tied nearest originals: each member among them gets
        ``1/t``, the others 0, so a group's values sum to at most 1. It is not
        ``1/k`` per member, the other direction's value (an original facing
        ``k`` equal protected records), though the file-level mean agrees when
        the nearest original is a group member.
        """
        out = np.zeros(self.n_records)
        hit = self.rank == 1
        out[hit] = 1.0 / self.n_tied[hit]
        return out

    def records_frame(self) -> pd.DataFrame:
        """One row per protected record, in input order.

        Columns ``record``, ``rank``, ``n_tied``, ``distance``, ``linked_nearest``,
        ``linked_second``, ``expected_correct``.
        """
        return pd.DataFrame(
            {
                "record": np.arange(self.n_records, dtype=np.int64),
                "rank": self.rank,
                "n_tied": self.n_tied,
                "distance": self.distance,
                "linked_nearest": self.rank == 1,
                "linked_second": self.rank == 2,
                "expected_correct": self.expected_correct,
            }
        )

    def summary(self) -> dict[str, Any]:
        """File-level shares and provenance, JSON-serialisable (plain Python types).

        Besides the shares: ``sdcbayes_version`` and ``settings`` (the
        variables, ``standardize``, the relative tie tolerance ``tie_rtol``, the
        distance, and the ``scale`` each variable was divided by), so that a
        summary written to JSON can be traced back and reproduced.
        """
        settings = dict(self.settings)
        settings.setdefault("variables", list(self.variables))
        settings["scale"] = [float(v) for v in self.scale]
        return {
            "sdcbayes_version": __version__,
            "method": "distance-based record linkage",
            "variables": list(self.variables),
            "n_records": self.n_records,
            "share_nearest": self.share_nearest,
            "share_second": self.share_second,
            "share_linked": self.share_linked,
            "expected_correct_share": float(self.expected_correct.mean()),
            "n_ties_at_nearest": int(np.count_nonzero(self.n_tied > 1)),
            "settings": json_safe(settings),
        }


def _as_matrix(
    data: Any,
    variables: Sequence[str] | None,
    role: str,
    *,
    measure: str = "distance-based linkage",
    allow_missing: bool = False,
) -> tuple[np.ndarray, list[str]]:
    if variables is not None:
        _check_distinct(list(variables), measure)
    if isinstance(data, pd.DataFrame):
        names = list(data.columns) if variables is None else list(variables)
        absent = [v for v in names if v not in data.columns]
        if absent:
            raise InputError(
                f"variable(s) {', '.join(map(repr, absent))} not in the {role} file; "
                f"available columns: {', '.join(map(str, data.columns))}."
            )
        # a label the frame itself repeats would select several columns as one variable
        _check_distinct([c for c in data.columns if c in set(names)], measure,
                        f"the {role} file's column labels")
        bad = [v for v in names if not pd.api.types.is_numeric_dtype(data[v])]
        if bad:
            raise InputError(
                f"variable(s) {', '.join(map(repr, bad))} of the {role} file are not numeric; "
                f"{measure} needs numeric variables (code categories first)."
            )
        cplx = [v for v in names if pd.api.types.is_complex_dtype(data[v])]
        if cplx:
            raise InputError(
                f"variable(s) {', '.join(map(repr, cplx))} of the {role} file are complex; "
                f"{measure} needs real values (pass the real part or the modulus)."
            )
        x = data[names].to_numpy(dtype=float)
    else:
        raw = np.asarray(data)
        if np.iscomplexobj(raw):
            # a float conversion would drop the imaginary parts with only a warning
            raise InputError(
                f"the {role} file is complex; {measure} needs real values "
                "(pass the real part or the modulus)."
            )
        x = np.asarray(raw, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2:
            raise InputError(
                f"the {role} file must be a DataFrame or a 2-D array, got {x.ndim} dimensions; "
                "pass records x variables."
            )
        names = (
            [f"var{j + 1}" for j in range(x.shape[1])] if variables is None else list(variables)
        )
        if len(names) != x.shape[1]:
            raise InputError(
                f"{len(names)} variable name(s) for {x.shape[1]} column(s) of the {role} file; "
                "pass one name per column."
            )
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise InputError(f"the {role} file has shape {x.shape}; it needs records and variables.")
    if allow_missing:
        if np.isinf(x).any():
            raise InputError(
                f"the {role} file has infinite values in the {measure} variables; "
                f"recode or drop them before measuring the {measure}."
            )
    elif not np.isfinite(x).all():
        raise InputError(
            f"the {role} file has missing or infinite values in the linkage variables; "
            "impute or drop them before measuring linkage risk."
        )
    return x, [str(v) for v in names]


def _check_distinct(names: list[Any], measure: str, where: str = "variables") -> None:
    """Refuse a repeated variable: it would silently count twice (double weight)."""
    dup = sorted({str(v) for v in names if names.count(v) > 1})
    if dup:
        raise InputError(
            f"{where} repeat {', '.join(map(repr, dup))}; {measure} would count such a "
            "variable twice. Name each variable once."
        )


def _paired_matrices(original: Any, protected: Any, variables: Any, measure: str,
                     needs: str, allow_missing: bool = False
                     ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The original's and the protected file's variables as matrices, record by record.

    Tables (pandas, or anything with ``to_pandas()``, converted first: else
    ``variables`` would be ignored) are read by column name, arrays by position;
    ``variables`` None takes every column of ``original``. ``measure`` and ``needs``
    name the measure in messages.

    Raises
    ------
    InputError
        Different shapes, rows in a different order (:func:`check_row_order`), or what
        :func:`_as_matrix` refuses.
    """
    original, protected = as_pandas_frame(original), as_pandas_frame(protected)
    if variables is None and isinstance(original, pd.DataFrame):
        variables = list(original.columns)
    x, names = _as_matrix(original, variables, "original", measure=measure,
                          allow_missing=allow_missing)
    z, _ = _as_matrix(
        protected, names if isinstance(protected, pd.DataFrame) else variables, "protected",
        measure=measure, allow_missing=allow_missing,
    )
    if x.shape != z.shape:
        raise InputError(
            f"original has {x.shape[0]} records x {x.shape[1]} variables, protected "
            f"{z.shape[0]} x {z.shape[1]}; {needs} needs the protected file "
            "made record by record from the original, in the same order."
        )
    check_row_order(original, protected)
    return x, z, names


def _distinct_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of ``x`` by exact float equality (``-0.0 == 0.0``).

    Returns
    -------
    code : numpy.ndarray
        intp per row: the number of its distinct row.
    first : numpy.ndarray
        Position of the first occurrence of each distinct row.
    counts : numpy.ndarray
        int64 multiplicity of each distinct row.
    """
    n = x.shape[0]
    # one hash pass per column ("+ 0.0" turns -0.0 into 0.0, which compares equal to
    # it), then the codes grouped as the cell table groups keys (radix packing)
    columns, radices = [], []
    for j in range(x.shape[1]):
        col_code, levels = pd.factorize(x[:, j] + 0.0)
        columns.append(col_code.astype(np.int64))
        radices.append(max(len(levels), 1))
    code, n_rows, _ = _group(columns, radices)
    first = np.empty(n_rows, dtype=np.intp)
    first[code[::-1]] = np.arange(n - 1, -1, -1)  # the last write is the first occurrence
    counts = np.bincount(code, minlength=n_rows).astype(np.int64)
    return code.astype(np.intp), first, counts


def _ball_counts(
    tree: cKDTree, points: np.ndarray, radius: np.ndarray, counts: np.ndarray, workers: int
) -> np.ndarray:
    """Originals within ``radius`` of each point (tree of distinct rows, weights ``counts``)."""
    if np.all(counts == 1):
        return np.asarray(
            tree.query_ball_point(points, r=radius, return_length=True, workers=workers),
            dtype=np.int64,
        )
    found = tree.query_ball_point(points, r=radius, workers=workers)
    lengths = np.fromiter(map(len, found), dtype=np.intp, count=len(found))
    flat = np.fromiter(chain.from_iterable(found), dtype=np.intp, count=int(lengths.sum()))
    ends = np.cumsum(lengths)
    total = np.concatenate([[0], np.cumsum(counts[flat])])
    return total[ends] - total[ends - lengths]


def _link(a: np.ndarray, b: np.ndarray, workers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank, ties and own distance of each protected row ``b[i]`` among the originals ``a``.

    Same definitions as a full distance matrix (see the module docstring), with
    cKDTree's distances: ``rank = 1 + #{j: d_ij < own_i (1 - rtol)}`` capped at 3,
    and for ``rank == 1``, ``n_tied = max(1, #{j: d_ij <= own_i (1 + rtol) + tiny})``.
    """
    n = a.shape[0]
    own = np.sqrt(np.sum((b - a) ** 2, axis=1))
    # Discrete variables repeat rows massively; a k-d tree over repeated points
    # degenerates (leaves of n/levels identical points), so the tree holds each
    # distinct original row once and ``counts`` carries its multiplicity.
    code, first, counts = _distinct_rows(a)
    distinct = a[first]
    n_distinct = distinct.shape[0]
    # sliding-midpoint splits: quicker to build and query here than median splits
    tree = cKDTree(distinct, balanced_tree=False)
    rank = np.ones(n, dtype=np.int64)
    n_tied = np.zeros(n, dtype=np.int64)

    # A record equal to its own original (own distance 0): nothing is strictly
    # closer than 0, so rank 1; its ties are the originals at squared distance 0,
    # i.e. the copies of its row -- unless values so small that their squares
    # underflow occur, when the general path below handles it as before.
    same = np.all(b == a, axis=1)
    if np.any((a != 0) & (np.abs(a) < _UNDERFLOW_SAFE)):
        same[:] = False
    n_tied[same] = counts[code[same]]

    rest = np.flatnonzero(~same)
    if rest.size == 0:
        return rank, n_tied, own
    k = min(2, n)
    radius = own[rest] * (1.0 + _TIE_RTOL) + np.finfo(float).tiny
    # Only originals within the own distance matter, so each query is bounded
    # (neighbours farther away come back as inf, which changes no count); SciPy
    # takes one bound per call, hence groups of records with similar own distance.
    nearest = np.empty((rest.size, k))
    nearest_idx = np.empty((rest.size, k), dtype=np.intp)
    order = np.argsort(radius, kind="stable")
    n_groups = int(min(_MAX_GROUPS, max(1, rest.size // _GROUP_SIZE)))
    # within a group, query in the tree's leaf order of each record's own original
    # (a protected record lies near it): neighbouring queries visit the same
    # leaves, which saves a third of the time on large files
    leaf_position = np.empty(n_distinct, dtype=np.intp)
    leaf_position[tree.indices] = np.arange(n_distinct)
    near = leaf_position[code[rest]]
    for group in np.array_split(order, n_groups):
        if group.size == 0:
            continue
        group = group[np.argsort(near[group], kind="stable")]
        # margin far above rounding: every original within radius (1 + 1e-12) is found
        bound = float(radius[group].max()) * (1.0 + 1e-6)
        d, i = tree.query(b[rest[group]], k=k, distance_upper_bound=bound, workers=workers)
        nearest[group] = np.reshape(d, (group.size, k))
        nearest_idx[group] = np.reshape(i, (group.size, k))
    first_d = nearest[:, 0]
    if k == 2:
        # the second nearest original is the nearest distinct row again when that
        # row occurs twice or more
        valid = nearest_idx[:, 0] < n_distinct
        mult = np.zeros(rest.size, dtype=np.int64)
        mult[valid] = counts[nearest_idx[valid, 0]]
        second_d = np.where(mult >= 2, first_d, nearest[:, 1])
    else:
        second_d = np.full(rest.size, np.inf)
    # strictly closer than the own original, with a relative tolerance for ties
    threshold = own[rest] * (1.0 - _TIE_RTOL)
    closer = (first_d < threshold).astype(np.int64) + (second_d < threshold)
    rank[rest] = 1 + closer  # closer == 2 means third or further: rank 3

    hit = np.flatnonzero(closer == 0)
    n_tied[rest[hit]] = 1
    # Ties need a ball query only when a second original lies within the own
    # distance (plus a margin above rounding: cKDTree compares squared
    # distances), or when the radius is so small that its square underflows.
    tied = hit[(second_d[hit] <= radius[hit] * (1.0 + 1e-12)) | (radius[hit] < 1e-100)]
    if tied.size:
        found = _ball_counts(tree, b[rest[tied]], radius[tied], counts, workers)
        n_tied[rest[tied]] = np.maximum(found, 1)
    return rank, n_tied, own


def linkage_risk(
    original: Any,
    protected: Any,
    variables: str | Sequence[str] | None = None,
    standardize: bool = True,
    *,
    workers: int = -1,
) -> LinkageResult:
    """Distance-based record linkage risk (seed 001, section 3.6).

    Parameters
    ----------
    original, protected : pandas.DataFrame or array_like
        A polars DataFrame or a pyarrow Table (anything with a ``to_pandas()``
        method) is converted first, as :class:`~sdcbayes.microdata.Microdata` does.
        The original file and the protected file made from it, record ``i`` of
        ``protected`` from record ``i`` of ``original`` (same number of rows):
        records are paired by position. Two frames with identical indexes, or
        with indexes that differ as sets, are paired as they are; the same
        unique index labels in a different order raise :class:`InputError`
        (pass ``protected.loc[original.index]``).
    variables : str or list of str, optional
        Numeric variables to compare; default all columns (of ``original``). A
        single string is one variable name.
    standardize : bool, default True
        Divide each variable by its standard deviation in the original file
        (variables constant there keep their units).
    workers : int, default -1
        Threads for the k-d tree queries, as in :meth:`scipy.spatial.cKDTree.query`
        (-1: all CPU cores). The result does not depend on it.

    Returns
    -------
    LinkageResult
        ``.share_nearest`` is the seed's linkage risk; ``.share_second`` and
        ``.share_linked`` the second-nearest share and the total.

    Raises
    ------
    InputError
        Different numbers of records, rows in a different order (see above),
        unknown, repeated, non-numeric or complex variables, missing values.
    """
    if isinstance(variables, str):
        variables = [variables]  # one name, not a sequence of one-letter names
    x_orig, x_prot, names = _paired_matrices(original, protected, variables,
                                             "distance-based linkage", "record linkage")
    n = x_orig.shape[0]
    scale = np.ones(x_orig.shape[1])
    if standardize and n > 1:
        sd = x_orig.std(axis=0, ddof=1)
        scale = np.where(sd > 0, sd, 1.0)  # a constant variable keeps its units
    a = x_orig / scale
    b = x_prot / scale
    span = np.maximum(a.max(axis=0), b.max(axis=0)) - np.minimum(a.min(axis=0), b.min(axis=0))
    with np.errstate(over="ignore"):
        widest = float(np.sum(span**2))
    if not np.isfinite(widest):
        # squared distances across the data overflow; SciPy's k-d tree would raise a
        # bare ValueError (or fail inside a worker thread)
        raise InputError(
            "the linkage variables span so wide a range after scaling that squared distances "
            "overflow; rescale them (standardize=True divides each by its standard deviation)."
        )
    rank, n_tied, own = _link(a, b, workers)
    return LinkageResult(
        variables=names,
        rank=rank,
        n_tied=n_tied,
        distance=own,
        scale=scale,
        settings={
            "variables": list(names),
            "standardize": bool(standardize),
            "tie_rtol": _TIE_RTOL,
            "distance": "euclidean",
        },
    )


@dataclass(frozen=True)
class IntervalRiskResult:
    """Per-record outcome of the interval disclosure risk (sdcMicro's ``dRisk``).

    Attributes
    ----------
    variables : list of str
        Variables the intervals are put on.
    at_risk : numpy.ndarray
        bool per record: its original value lies inside the interval around its
        protected value on every variable.
    sd : numpy.ndarray
        Standard deviation (ddof = 1, missing values left out) of each protected
        variable, the unit of the intervals' half-width ``k * sd``.
    settings : dict
        ``k``, ``variables``, ``interval`` and ``missing`` (how a missing value
        counts), repeated in :meth:`summary`.
    """

    variables: list[str]
    at_risk: np.ndarray
    sd: np.ndarray
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def k(self) -> float:
        """Half-width of the intervals as a fraction of each protected variable's sd."""
        return float(self.settings["k"])

    @property
    def n_records(self) -> int:
        """Number of records."""
        return int(self.at_risk.size)

    @property
    def n_at_risk(self) -> int:
        """Records whose original values all lie inside their intervals."""
        return int(np.count_nonzero(self.at_risk))

    @property
    def share(self) -> float:
        """Share of records at risk: sdcMicro's ``dRisk``, the upper end of its risk interval."""
        return self.n_at_risk / self.n_records

    def summary(self) -> dict[str, Any]:
        """File-level result and settings, JSON-serialisable (plain Python types)."""
        settings = dict(self.settings)
        settings["sd"] = [float(v) for v in self.sd]
        return {
            "sdcbayes_version": __version__,
            "method": "interval disclosure risk (SDID; sdcMicro dRisk)",
            "variables": list(self.variables),
            "n_records": self.n_records,
            "n_at_risk": self.n_at_risk,
            "share": self.share,
            "settings": json_safe(settings),
        }


def _check_interval_k(k: Any) -> float:
    """``k`` as a positive finite float, or :class:`InputError` naming the fix."""
    ok = isinstance(k, (int, float, np.integer, np.floating)) and not isinstance(
        k, (bool, np.bool_)
    )
    if not ok or not (np.isfinite(float(k)) and float(k) > 0):
        raise InputError(
            f"k={k!r} must be a positive finite number, the intervals' half-width as a "
            "fraction of each protected variable's standard deviation; e.g. k=0.05 "
            "(sdcMicro's default). k=0 is refused: the interval would shrink to the "
            "protected value itself."
        )
    return float(k)


def interval_risk(
    original: Any,
    protected: Any,
    variables: str | Sequence[str] | None = None,
    k: float = 0.05,
) -> IntervalRiskResult:
    """Interval disclosure risk of numeric variables (sdcMicro ``dRisk``, method SDID).

    Mateo-Sanz, Sebe & Domingo-Ferrer (2004), "Outlier protection in continuous
    microdata masking", *Privacy in Statistical Databases* (PSD 2004), LNCS 3050,
    pp. 201-215 (SDID, standard-deviation-based interval disclosure), as sdcMicro
    computes it (``R/dRisk.R``, ``dRiskWORK``; Templ 2017, *Statistical
    Disclosure Control for Microdata*, Springer). Around each protected value
    ``z_ij`` the closed interval ``[z_ij - k s_j, z_ij + k s_j]`` is put, ``s_j``
    the standard deviation of protected variable ``j`` (ddof = 1, missing values
    left out). Record ``i`` is at risk when its original value ``x_ij`` lies inside
    the interval for every variable ``j``; the file's risk is the share of records
    at risk. sdcMicro prints it as the upper end of the numeric key variables'
    disclosure risk, "between [0.00%; X%]"; it is 1 for an unprotected file.

    Missing values, as sdcMicro's current code reads them
    (``rowSums(x < mi | x > ma, na.rm = TRUE) == 0``): a comparison with a
    missing original or protected value counts as inside, so a record missing a
    value is judged on its other variables (and is at risk when all are missing).
    A protected variable with fewer than two observed values has no standard
    deviation: its comparisons count as inside too.

    Parameters
    ----------
    original, protected : pandas.DataFrame or array_like
        The original file and the protected file made from it, record ``i`` of
        ``protected`` from record ``i`` of ``original``, paired by position as in
        :func:`linkage_risk` (the same unique index labels in a different order
        raise :class:`InputError`). Polars and pyarrow tables are converted.
    variables : str or list of str, optional
        Numeric variables; default all columns (of ``original``). A single string
        is one variable name.
    k : float, default 0.05
        Half-width of the intervals as a fraction of the protected variable's
        standard deviation (sdcMicro's default 0.05). Must be positive and finite;
        ``k = 0`` is refused (the interval would be the protected value itself,
        which counts unchanged values, not disclosure within a tolerance).

    Returns
    -------
    IntervalRiskResult
        ``.at_risk`` per record, ``.share`` (sdcMicro's ``dRisk``), ``.n_at_risk``,
        ``.sd`` and ``.settings``.

    Raises
    ------
    InputError
        ``k`` not positive and finite; different numbers of records or rows in a
        different order; unknown, repeated (a variable named twice would count
        twice), non-numeric or complex variables; infinite values.
    """
    k = _check_interval_k(k)
    if isinstance(variables, str):
        variables = [variables]
    x, z, names = _paired_matrices(original, protected, variables, "interval risk",
                                   "the interval risk", allow_missing=True)
    observed = np.isfinite(z)
    n_obs = observed.sum(axis=0)
    sd = np.full(z.shape[1], np.nan)
    for j in np.flatnonzero(n_obs > 1):  # R's sd(na.rm = TRUE): NA below 2 values
        sd[j] = np.std(z[observed[:, j], j], ddof=1)
    lo = z - k * sd
    hi = z + k * sd
    # comparisons with NaN are False: a missing value counts as inside (na.rm = TRUE)
    outside = (x < lo) | (x > hi)
    at_risk = ~outside.any(axis=1)
    return IntervalRiskResult(
        variables=names,
        at_risk=at_risk,
        sd=sd,
        settings={
            "k": k,
            "variables": list(names),
            "interval": "closed, protected value +- k * sd of the protected variable (ddof=1)",
            "missing": "a comparison with a missing value counts as inside (sdcMicro)",
        },
    )
