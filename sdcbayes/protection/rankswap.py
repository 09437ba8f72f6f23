"""Rank swapping of numeric variables (Moore 1996; sdcMicro's ``rankSwap``).

Rank swapping is the third classic perturbative method for continuous variables,
beside noise (:mod:`~sdcbayes.protection.noise`) and micro-aggregation
(:mod:`~sdcbayes.protection.microaggregation`). Each variable is treated on its
own (Moore, "Controlled data-swapping techniques for masking public use
microdata", U.S. Bureau of the Census, SRD Report RR 96-04, 1996; as sdcMicro's
``rankSwap`` and mu-Argus):

1. the observed values are ranked, the largest first (sdcMicro's order);
2. top and bottom grouping: the ``floor(n_obs * top_percent / 100)`` largest
   values are all replaced by their mean, likewise the
   ``floor(n_obs * bottom_percent / 100)`` smallest, the products exact for the
   percentages as written in decimal (2.3 % of 3000 is 69); grouped values take
   no part in the swapping (sdcMicro's C++ ``RankSwap``, ``src/RankSwapping.h``,
   flags them as swapped);
3. the m remaining values are swapped in rank order: each value not yet swapped,
   at rank i, is exchanged with a value drawn uniformly among the values not yet
   swapped at ranks i + 1 .. i + L, L = floor(P m) the rank range. The range is
   *one-sided* (the partner lies later in the order) as in Moore's procedure and
   in sdcMicro, so two swapped values differ in rank by 1 .. L. A value with no
   unswapped value left in its window (near the end of the order) stays in place.

Values are only exchanged, so each column keeps its multiset of values (mean,
variance, quantiles) exactly, except where top/bottom grouping replaced values by
a group mean, which keeps the column sum.

The rank range (Moore 1996, as coded in sdcMicro's C++): either given directly
as a percentage ``p`` of the m records that are swapped (P = p / 100), or derived
per variable from

* ``r0``, the correlation-preservation factor R0 = R1 / R2 (R1 the correlation of
  two fields after swapping, R2 before): P = sqrt(2 V (1 - R0)) / Δ;
* ``k0``, the subset-mean preservation factor (|X̄1 - X̄2| <= 2 K0 X̄1 / sqrt(N_S)
  for the subset means before and after swapping): P = sqrt(8/3) K0 |x̄| / Δ;

where x̄ and V are the mean and the (population, divisor m) variance of the m
values that are swapped, and Δ = |b - t|, t the smallest top-grouped value (the
largest value when there is no top group) and b the largest bottom-grouped value
(the smallest value when there is none). P above 1 is capped at 1.

What R0 delivers. For m evenly spaced values (a uniform variable, V = Δ²/12)
the procedure above pairs values whose rank distance d has, away from the ends
of the order, the density (ln 2 / L) 2^(d / L) on (0, L] (when a value's turn
comes, the free share of its window grows from 1/2 at rank i + 1 to 1 at i + L), so
E[d²] = c L² with c = ∫₀¹ u² ln2 2^u du = 2 - 4/ln2 + 2/ln²2 ≈ 0.392, and the
correlation of a variable with its swapped self is about 1 - 6 c P² ≈ 1 - 2.35 P².
Two fields swapped independently keep about the product of those correlations,
1 - 4.7 P² for two uniform fields, while Moore's formula sets 1 - R0 = P² Δ² / (2V)
= 6 P²: the achieved R1 / R2 is at least R0 for uniform variables (R0 = 0.95
gives about 0.96). For skewed variables the tails move further in value than the
middle, and R0 is a target, not a guarantee.

Where this follows sdcMicro (``R/rankSwap.R``, ``src/RankSwapping.h``, sdcMicro
5.8.0) exactly: the default R0 = 0.95 when none of ``p``, ``r0``, ``k0`` is given
and the rule that at most one is given; the largest-first order; the top/bottom
group means; the variance, mean and Δ in Moore's formulas,
computed per variable on the values that are swapped; the range counted in those
m values; the uniform choice among the unswapped values of the window; missing
values left missing and out of the ranking.

Where it differs:

* the random numbers cannot match R's, so results equal sdcMicro's in
  distribution, not value by value;
* the top/bottom group sizes: here floor(n_obs * pct / 100) exactly; sdcMicro's
  C++ computes ``(int)(n_obs * (pct * 0.01f))`` in single precision, and
  ``5.0f * 0.01f`` is 0.049999997f, so where n_obs * pct / 100 is a whole number
  (every multiple of 20 records at the default 5 %; also at 2.5, 10, 15, 20 %)
  sdcMicro groups one value fewer at each end (20 records at 5 %: no group);
* sdcMicro's window is ranks i + 1 .. i + floor(P m) - 1 (a C++ ``<``); here it
  is i + 1 .. i + floor(P m), sdcMicro's documented |i - j| <= P N / 100;
* sdcMicro documents ``P`` as a percentage but passes it to the C++ unscaled, so
  ``rankSwap(P = 5)`` there swaps across the whole file; here ``p`` is a
  percentage as documented: sdcMicro's ``P = 0.05`` is ``p=5`` here;
* ties between equal values are ranked by a seeded hash of each record's
  content, not by row position, so for a given seed permuting the rows permutes
  the result the same way (records identical in every column are
  interchangeable and may trade their new values);
* missing values are kept as missing (sdcMicro replaces them by a sentinel and
  back, which fails when the sentinel occurs among the data); infinite values
  are refused.

Cost: the swapping loop is sequential (each choice depends on the earlier ones)
and runs in Python over lists with one pre-drawn uniform number per attempt
(rejection sampling: a draw that lands on a value already swapped is redrawn;
about 1.2 draws per value at p <= 15): about 0.5 s per million values, sort
included (1.5 s for 10^6 records x 3 variables on one core; ``benchmarks/rankswap.py``).

This module may import NumPy and pandas only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError, warn_at_caller
from sdcbayes.protection.base import (
    ProtectionResult,
    check_columns,
    check_frame,
    check_numeric_columns,
    output_frame,
    seeded_rng,
    stamped,
)

__all__ = ["rank_swap", "rank_range_fraction"]

#: sdcMicro's ``rankSwap`` sets R0 = 0.95 when none of P, R0, K0 is given.
DEFAULT_R0 = 0.95


def _is_number(value: Any) -> bool:
    # bool is a number to Python and NumPy: p=True would silently mean 1 %
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and bool(np.isfinite(value))
    )


def _check_parameters(p: Any, r0: Any, k0: Any, top_percent: Any,
                      bottom_percent: Any) -> tuple[str, float]:
    """Validate the range parameters; return the criterion used and its value."""
    given = [name for name, v in (("p", p), ("r0", r0), ("k0", k0)) if v is not None]
    if len(given) > 1:
        raise InputError(
            f"{' and '.join(given)} are all given; give only one of p, r0 and k0 (they are "
            "three ways of setting the same rank range, as in sdcMicro's rankSwap)"
        )
    if p is not None and not (_is_number(p) and 0 < p <= 100):
        raise InputError(
            f"p={p!r} must be a number in (0, 100]: the largest rank distance of two swapped "
            "values, as a percentage of the records swapped"
        )
    if r0 is not None and not (_is_number(r0) and 0 < r0 < 1):
        raise InputError(
            f"r0={r0!r} must be a number in (0, 1): the share of a correlation kept after "
            "swapping (r0 = 1 swaps nothing)"
        )
    if k0 is not None and not (_is_number(k0) and k0 > 0):
        raise InputError(
            f"k0={k0!r} must be a positive number: the subset-mean preservation factor"
        )
    for name, v in (("top_percent", top_percent), ("bottom_percent", bottom_percent)):
        if not (_is_number(v) and 0 <= v < 100):
            raise InputError(
                f"{name}={v!r} must be a number in [0, 100): the percentage of the "
                f"{'largest' if name == 'top_percent' else 'smallest'} values grouped "
                "(replaced by their mean) before swapping; 0 groups none"
            )
    if top_percent + bottom_percent >= 100:
        raise InputError(
            f"top_percent + bottom_percent = {top_percent + bottom_percent} leaves nothing to "
            "swap; keep their sum below 100"
        )
    if not given:
        return "r0", DEFAULT_R0
    name = given[0]
    return name, float({"p": p, "r0": r0, "k0": k0}[name])


def _observed_values(frame: pd.DataFrame, columns: list[str]) -> dict[str, np.ndarray]:
    """Each column as float64 with NaN for missing; refuses bool, complex, non-numeric, inf."""
    check_numeric_columns(frame, columns, "rank swapping")
    values = {}
    for c in columns:
        x = frame[c].to_numpy(dtype=np.float64, na_value=np.nan)
        if np.isinf(x).any():
            rows = np.flatnonzero(np.isinf(x))[:5].tolist()
            raise InputError(
                f"column {c!r} has infinite values (rows {rows}...); replace them by missing "
                "or by a finite top code before rank swapping"
            )
        values[c] = x
    return values


def rank_range_fraction(values: np.ndarray, criterion: str, value: float,
                        top_value: float, bottom_value: float) -> float:
    """Moore's rank range P (a fraction of the m values swapped) for one variable.

    Parameters
    ----------
    values : numpy.ndarray
        The m values that take part in the swapping (observed, not grouped).
    criterion : {"p", "r0", "k0"}
        What ``value`` is: the percentage p itself, R0 or K0.
    value : float
    top_value, bottom_value : float
        t, the smallest top-grouped value (the largest value without top group),
        and b, the largest bottom-grouped value (the smallest without bottom group).

    Returns
    -------
    float
        P in [0, 1] (Moore 1996 as in sdcMicro's ``src/RankSwapping.h``):
        ``p / 100``; from R0, ``sqrt(2 V (1 - R0)) / Δ``; from K0,
        ``sqrt(8/3) K0 |x̄| / Δ``; x̄ and V the mean and population variance of
        ``values``, Δ = |b - t|; 0 when Δ = 0 or there are no values; capped at 1.
    """
    if criterion == "p":
        return min(value / 100.0, 1.0)
    if values.size == 0:
        return 0.0
    delta = abs(bottom_value - top_value)
    if delta == 0:
        return 0.0
    if criterion == "r0":
        frac = math.sqrt(2.0 * float(values.var()) * (1.0 - value)) / delta
    else:
        frac = math.sqrt(8.0 / 3.0) * value * abs(float(values.mean())) / delta
    return min(frac, 1.0)


def _group_size(n_obs: int, percent: float) -> int:
    """floor(n_obs * percent / 100), exact for the percentage as written in decimal.

    In binary floating point 3000 * 2.3 / 100 is 68.99999999999999, which floors
    to 68; the shortest decimal of the float (``repr``: "2.3") is what the user
    gave, and rational arithmetic on it gives 69.
    """
    return math.floor(n_obs * Fraction(repr(float(percent))) / 100)


def _swap_partners(m: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """Partner of each of m ranked positions (its own position when not swapped).

    Position i, if not yet swapped, is paired with a position drawn uniformly
    among the unswapped ones in i + 1 .. min(i + width, m - 1). Sequential by
    nature; plain Python over lists (several times faster than NumPy scalars).
    """
    partner = list(range(m))
    if m < 2 or width < 1:
        return np.asarray(partner, dtype=np.int64)
    taken = bytearray(m)
    batch = max(1024, min(m, 1 << 20))
    draws = rng.random(batch).tolist()
    at = 0
    # Every position already taken ahead of i is the partner of an earlier position
    # j < i, so it lies in (i, j + width] within i's window: their number ``pending``
    # tells how many of the window's positions are free without scanning it.
    pending = 0
    for i in range(m):
        if taken[i]:
            pending -= 1
            continue
        span = min(width, m - 1 - i)
        if span <= pending:  # nothing free in the window (end of the order)
            continue
        while True:  # rejection: uniform over the free positions of the window
            if at == batch:
                draws = rng.random(batch).tolist()
                at = 0
            j = i + 1 + int(draws[at] * span)
            at += 1
            if not taken[j]:
                break
        taken[j] = 1
        partner[i] = j
        partner[j] = i
        pending += 1
    return np.asarray(partner, dtype=np.int64)


def _mix64(h: np.ndarray, salt: np.uint64) -> np.ndarray:
    """SplitMix64 finaliser of ``h ^ salt``: a seeded pseudo-random key per hash."""
    z = h ^ salt
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _row_hashes(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """A hash of each record's content (every column; the swapped ones if others fail)."""
    try:
        return pd.util.hash_pandas_object(frame, index=False).to_numpy(dtype=np.uint64)
    except TypeError:  # unhashable cells (lists, dicts) in some other column
        return pd.util.hash_pandas_object(frame[columns], index=False).to_numpy(
            dtype=np.uint64)


@stamped
def rank_swap(
    frame: pd.DataFrame,
    columns: Sequence[str] | str,
    p: float | None = None,
    *,
    top_percent: float = 5,
    bottom_percent: float = 5,
    r0: float | None = None,
    k0: float | None = None,
    seed: Any = None,
) -> ProtectionResult:
    """Rank-swap numeric variables (Moore 1996; sdcMicro's ``rankSwap``).

    Each column is swapped on its own: its observed values are ranked (largest
    first), the ``top_percent`` largest and ``bottom_percent`` smallest are
    replaced by their group means, and each remaining value not yet swapped is
    exchanged with one drawn uniformly among the values not yet swapped that
    follow it within the rank range L = floor(P m) (one-sided: ranks i + 1 ..
    i + L; m the number of values swapped). See the module docstring for the
    formulas of P and for where this follows sdcMicro and where it differs.

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    columns : str or sequence of str
        Numeric variables (integer or float, nullable types included; boolean
        columns are refused). Missing values stay missing and take no part in
        the ranking; infinite values are refused.
    p : float, optional
        The rank range as a percentage of the m values swapped, in (0, 100]:
        two swapped values differ in rank by at most floor(p m / 100).
    top_percent, bottom_percent : float, default 5
        Percentages (in [0, 100), sum below 100) of the largest and smallest
        observed values grouped before swapping: the floor(n_obs * percent /
        100) largest (smallest) values, the percentage read as the decimal it is
        written as, are replaced by the group's mean and not swapped (sdcMicro's
        ``TopPercent``, ``BottomPercent``; see the module docstring for where its
        group sizes differ). 0 groups none.
    r0 : float, optional
        Correlation-preservation factor R0 = R1 / R2 in (0, 1) (R1, R2 the
        correlation of two fields after and before swapping); sets, per
        variable, P = sqrt(2 V (1 - R0)) / Δ (Moore 1996). When none of ``p``,
        ``r0``, ``k0`` is given, r0 = 0.95 (sdcMicro's default).
    k0 : float, optional
        Subset-mean preservation factor K0 > 0 (|X̄1 - X̄2| <= 2 K0 X̄1 /
        sqrt(N_S)); sets, per variable, P = sqrt(8/3) K0 |x̄| / Δ. At most one of
        ``p``, ``r0``, ``k0`` may be given.
    seed : int, Generator or None
        None draws a seed from the operating system; the seed used is recorded
        as ``summary["seed"]``; passing it back repeats the run exactly. For a
        given seed, permuting the rows of ``frame`` permutes the result the same
        way (ties are ranked by a seeded hash of each record's content). The
        columns are swapped in the order given, from one random stream.

    Returns
    -------
    ProtectionResult
        ``frame``: the swapped columns; a column keeps its dtype when no value
        was grouped, and becomes float64 (missing as NaN) when one was.
        ``log``: one row per variable: ``variable``, ``n_observed``,
        ``n_missing``, ``n_top``, ``n_bottom`` (values grouped), ``top_mean``,
        ``bottom_mean`` (the groups' values; NaN without group), ``n_ranked``
        (m), ``rank_range`` (L, records), ``rank_range_percent`` (100 P),
        ``n_swapped`` (records that received another record's value),
        ``n_changed`` (records whose value changed), ``mean_abs_change`` (over
        the observed values), ``correlation`` (Pearson, original vs swapped
        values, observed records). ``summary``: ``method`` ("rank_swap"),
        ``columns``, ``criterion`` ("p", "r0" or "k0") and ``criterion_value``,
        ``p``, ``r0``, ``k0`` as given, ``top_percent``, ``bottom_percent``,
        ``rank_range`` and ``rank_range_percent`` (dicts by column),
        ``source_of_record`` (dict column -> int64 array: the row position whose
        original value each record holds, its own when not swapped), ``seed``.

    Raises
    ------
    InputError
        Unknown, repeated, non-numeric, boolean or complex columns, or columns
        with infinite values; more
        than one of ``p``, ``r0``, ``k0``; a parameter out of its range; a bad
        seed. All before any work.

    Warns
    -----
    UserWarning
        When a column's rank range is below one record, so that nothing is
        swapped although its values differ.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"x": [5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 7.0, 8.0]})
    >>> res = rank_swap(df, "x", p=30, top_percent=0, bottom_percent=0, seed=1)
    >>> sorted(res.frame["x"]) == sorted(df["x"])
    True
    """
    frame = check_frame(frame)
    columns = check_columns(frame, columns, "columns")
    criterion, criterion_value = _check_parameters(p, r0, k0, top_percent, bottom_percent)
    values = _observed_values(frame, columns)
    rng, seed_used = seeded_rng(seed)

    n = len(frame)
    salt = rng.integers(0, 2**64, dtype=np.uint64)  # drawn always: one stream per seed
    tie_key: np.ndarray | None = None  # hashed only when some column has ties
    out = output_frame(frame)  # unchanged columns shared under copy-on-write
    rows_log = []
    ranges: dict[str, int] = {}
    percents: dict[str, float] = {}
    sources: dict[str, np.ndarray] = {}
    for col in columns:
        x = values[col]
        obs = np.flatnonzero(~np.isnan(x))
        xo = x[obs]
        # largest first; equal values by the seeded content key, not by row position
        by_value = np.argsort(-xo, kind="stable")
        if (np.diff(xo[by_value]) == 0).any():
            if tie_key is None:
                tie_key = _mix64(_row_hashes(frame, columns), salt)
            by_value = np.lexsort((tie_key[obs], -xo))
        order = obs[by_value]
        n_obs = order.size
        n_top = _group_size(n_obs, top_percent)
        n_bottom = _group_size(n_obs, bottom_percent)
        top_rows, mid_rows = order[:n_top], order[n_top:n_obs - n_bottom]
        bottom_rows = order[n_obs - n_bottom:]
        # t and b of Moore's Δ, as sdcMicro: the group boundaries, else the extremes
        top_value = x[order[n_top - 1]] if n_top else (x[order[0]] if n_obs else np.nan)
        bottom_value = (x[bottom_rows[0]] if n_bottom
                        else (x[order[-1]] if n_obs else np.nan))
        mid = x[mid_rows]
        m = mid_rows.size
        frac = rank_range_fraction(mid, criterion, criterion_value, top_value, bottom_value)
        # p m / 100 computed once in floating point: guard against 4.9999… for 5
        width = min(math.floor(frac * m * (1 + 1e-12)), max(m - 1, 0))
        if width < 1 and m >= 2 and mid.min() < mid.max():  # (equal values: no loss)
            warn_at_caller(
                f"rank swapping of {col!r}: the rank range is {frac * m:.3g} records "
                f"(P = {100 * frac:.3g} % of {m}), below one, so nothing is swapped; "
                "raise p (or lower r0, raise k0)"
            )
        partner = _swap_partners(m, width, rng)
        src = np.arange(n, dtype=np.int64)
        src[mid_rows] = mid_rows[partner]
        new = x[src]
        top_mean = float(x[top_rows].mean()) if n_top else np.nan
        bottom_mean = float(x[bottom_rows].mean()) if n_bottom else np.nan
        if n_top or n_bottom:
            new[top_rows] = top_mean
            new[bottom_rows] = bottom_mean
            out[col] = pd.Series(new, index=frame.index)
        else:  # only exchanges: the original values, dtype and all
            out[col] = frame[col].iloc[src].set_axis(frame.index)
        xs, ns = x[obs], new[obs]
        change = np.abs(ns - xs)
        rows_log.append({
            "variable": col,
            "n_observed": int(n_obs),
            "n_missing": int(n - n_obs),
            "n_top": int(n_top),
            "n_bottom": int(n_bottom),
            "top_mean": top_mean,
            "bottom_mean": bottom_mean,
            "n_ranked": int(m),
            "rank_range": int(width),
            "rank_range_percent": 100.0 * frac,
            "n_swapped": int((partner != np.arange(m)).sum()),
            "n_changed": int((change > 0).sum()),
            "mean_abs_change": float(change.mean()) if n_obs else np.nan,
            "correlation": _correlation(xs, ns),
        })
        ranges[col] = int(width)
        percents[col] = 100.0 * frac
        sources[col] = src
    log = pd.DataFrame(rows_log)
    summary = {
        "method": "rank_swap",
        "columns": columns,
        "criterion": criterion,
        "criterion_value": criterion_value,
        "p": None if p is None else float(p),
        "r0": None if r0 is None else float(r0),
        "k0": None if k0 is None else float(k0),
        "top_percent": float(top_percent),
        "bottom_percent": float(bottom_percent),
        "rank_range": ranges,
        "rank_range_percent": percents,
        "source_of_record": sources,
        "seed": seed_used,
    }
    return ProtectionResult(out, log, summary)


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation; NaN when either side is constant or has < 2 values."""
    if a.size < 2:
        return float("nan")
    da, db = a - a.mean(), b - b.mean()
    den = math.sqrt(float(da @ da) * float(db @ db))
    return float(da @ db) / den if den > 0 else float("nan")
