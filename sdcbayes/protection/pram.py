"""Post-randomisation (PRAM) of categorical variables.

Two mechanisms:

* **Invariant PRAM** (seed 001, section 4.1.3; Gouweleeuw, Kooiman,
  Willenborg & de Wolf 1998, cited in seed 002): each value of a variable is
  changed at random by a transition matrix whose invariant distribution is the
  observed one, so the expected frequencies after PRAM equal the observed
  frequencies. Construction as in sdcMicro's ``pram``: a matrix P with
  diagonal entries p_ii drawn uniformly in [pd, 1] and the rest of each row
  spread evenly; its "backward" matrix Q with q_ji = p_ij T_i / λ_j,
  λ = T'P; R = PQ satisfies T'R = T'; finally R_α = αR + (1 − α)I (α tunes
  the amount of change) keeps the invariance.

* **Nayak-Zhang PRAM** (seed 002): a data-dependent matrix, applied to the
  cross-classified key ("cells"), within groups of cells. In a group of k
  cells with counts T_i (seed 002, "Our choice of PRAM matrix"):
  p_ii = 1 − θ/T_i and p_ji = θ/((k − 1) T_i) (j ≠ i), where the seed writes
  p_ji = P(i → j). The expected number of units leaving a cell is θ, so the
  released counts are unbiased, E(S_i | T) = T_i. θ is the smallest value with
  φ_T(θ) = (T − θ)/(T(T − θ) + θ²) <= ξ for T = 1 and 2 (seed 002, "Solution of
  θ and k"), which bounds the correct-match probability
  P(CM | S_j = a, X_B = c_j) <= ξ for a = 1; a = 2 is handled by the minimum
  group size k, and a >= 3 gives at most 1/3 <= ξ.

Matrices here are row-stochastic: ``P[i, j]`` is the probability that a value in
category i is released as j (the transpose of the seed's display).

This module may import NumPy, SciPy and pandas only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.protection.base import (
    ProtectionResult,
    check_columns,
    check_frame,
    code_strata,
    codes_of,
    output_frame,
    pack_rows,
    rng_from,
    seeded_rng,
    stamped,
)

__all__ = [
    "invariant_transition_matrix",
    "invariant_pram",
    "apply_transition",
    "nayak_zhang_phi",
    "nayak_zhang_theta",
    "nayak_zhang_matrix",
    "nayak_zhang_cm_probability",
    "nayak_zhang_min_group_size",
    "nayak_zhang_pram",
    "correct_match_probability",
    "keep_probability",
    "nayak_zhang_keep_probability",
    "MISCLASSIFICATION_METHOD",
]

#: How ``protect`` names the risk after PRAM of a key (summary.json ``risk.after``).
MISCLASSIFICATION_METHOD = "misclassification-adjusted, Shlomo & Skinner 2010"


# --------------------------------------------------------------------------- helpers


def apply_transition(codes: Any, matrix: Any, rng: Any = None) -> np.ndarray:
    """Draw a new category for each code from row ``codes[i]`` of ``matrix``.

    Parameters
    ----------
    codes : array_like of int
        Category numbers 0..L − 1; codes < 0 (missing) are returned unchanged.
    matrix : array_like
        (L, L) row-stochastic matrix: finite, non-negative, every row summing to 1
        within 1e-9. ``matrix[i, j]`` is the probability that category i becomes j.
    rng : int, Generator or None
        Seed or Generator (see :func:`sdcbayes.protection.base.rng_from`).

    Returns
    -------
    numpy.ndarray
        int64 codes, same shape as ``codes``.

    Raises
    ------
    InputError
        A matrix that is not square, finite, non-negative and row-stochastic; codes
        that are not integers or are >= L; an unusable seed.

    Notes
    -----
    One uniform draw per value (in the order of ``codes``), looked up in the
    cumulative row of its code with :func:`numpy.searchsorted`. The records are
    grouped by code once (a radix sort), so the cost is O(n + L²), not O(n·L).
    """
    m = _check_stochastic(matrix, "matrix")
    c = np.asarray(codes)
    if c.dtype.kind == "f" and np.isfinite(c).all() and (c == np.round(c)).all():
        c = c.astype(np.int64)  # whole numbers stored as float are accepted
    if c.dtype.kind not in "iu":
        raise InputError(
            f"codes must be integer category numbers (dtype {c.dtype} given); pass the "
            "codes of the categories, -1 for missing (e.g. from pandas.factorize)"
        )
    c = c.astype(np.int64, copy=False)
    if c.size and int(c.max()) >= m.shape[0]:
        raise InputError(
            f"codes go up to {int(c.max())} but matrix is {m.shape[0]}x{m.shape[0]}; "
            f"codes must be in 0..{m.shape[0] - 1} (or negative for missing)"
        )
    return _draw(c, m, rng_from(rng))


def _draw(codes: np.ndarray, matrix: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`apply_transition` on checked input (int64 codes < L, stochastic matrix)."""
    n_cat = matrix.shape[0]
    out = codes.copy()
    cum = np.cumsum(matrix, axis=1)
    cum[:, -1] = 1.0  # guard against rounding: the last category closes every row
    u = rng.random(codes.shape)  # drawn for every value, as before: same stream
    flat_c, flat_u, flat_out = codes.reshape(-1), u.reshape(-1), out.reshape(-1)
    obs = np.flatnonzero(flat_c >= 0)
    c = flat_c[obs]
    # Group the records by code once; a uint16 key gets NumPy's O(n) radix sort.
    key = c.astype(np.uint16) if n_cat <= 65536 else c
    order = obs[np.argsort(key, kind="stable")]
    counts = np.bincount(c, minlength=n_cat)
    ends = np.cumsum(counts)
    u_sorted = flat_u[order]
    drawn = np.empty(order.size, dtype=np.int64)
    for i in np.flatnonzero(counts):
        lo, hi = ends[i] - counts[i], ends[i]
        drawn[lo:hi] = np.searchsorted(cum[i], u_sorted[lo:hi], side="right")
    flat_out[order] = drawn
    return flat_out.reshape(codes.shape)


#: How far from 1 a row of a transition matrix may sum: the rounding of probabilities
#: given as decimals (a row of ten 0.1 sums to 0.9999999999999999). Every row-sum check
#: of a PRAM matrix uses it (:func:`_check_stochastic`, :func:`check_matrix_rows`).
ROW_SUM_TOLERANCE = 1e-9


def check_matrix_rows(rows: Mapping[Any, Mapping[Any, Any]], name: str) -> None:
    """The rows of a ``{from level: {to level: p}}`` matrix, before its levels are known.

    Each probability a number in [0, 1], each row summing to 1 (within
    :data:`ROW_SUM_TOLERANCE`); the rows are named by their level. ``sdcbayes protect``
    checks a recipe's matrices with it before any work (whether the levels are the
    column's is known only at the step); ``invariant_pram`` checks the same on the
    L x L matrix (:func:`_check_stochastic`).

    Raises
    ------
    InputError
        Naming the matrix (``name``) and the row.
    """
    for frm, row in rows.items():
        probs = list(row.values())
        bad = [p for p in probs if isinstance(p, bool) or not isinstance(
            p, (int, float, np.integer, np.floating)) or not 0 <= p <= 1]
        if bad:
            raise InputError(
                f"{name}, row {level_text(frm)!r}, holds {_plain(bad[0])!r}; give "
                "probabilities between 0 and 1")
        total = math.fsum(float(p) for p in probs)
        if abs(total - 1.0) > ROW_SUM_TOLERANCE:
            raise InputError(
                f"{name}, row {level_text(frm)!r}, sums to {total:.12g}; each row holds the "
                "probabilities of the released levels of one level and must sum to 1: "
                "normalise it")


def _check_stochastic(matrix: Any, name: str) -> np.ndarray:
    """``matrix`` as float64 after checking it is a square row-stochastic matrix."""
    try:
        m = np.asarray(matrix, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a square matrix of probabilities") from None
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise InputError(f"{name} must be a non-empty square matrix, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise InputError(f"{name} has missing or infinite entries; give probabilities")
    if (m < 0).any():
        raise InputError(f"{name} has negative entries; give probabilities >= 0")
    sums = m.sum(axis=1)
    off = np.flatnonzero(np.abs(sums - 1.0) > ROW_SUM_TOLERANCE)
    if off.size:
        raise InputError(
            f"{name} has {off.size} row(s) that do not sum to 1 (row {off[0]} sums to "
            f"{sums[off[0]]:.12g}); row i holds the probabilities of the released "
            "categories of category i (row-stochastic): normalise the rows"
        )
    return m


def _check_max_levels(max_levels: Any) -> int:
    if (
        isinstance(max_levels, bool)
        or not isinstance(max_levels, (int, np.integer))
        or max_levels < 1
    ):
        raise InputError(f"max_levels={max_levels!r} must be a positive integer, e.g. 1000")
    return int(max_levels)


def _check_pram_column(series: pd.Series, col: str, n_lev: int, max_levels: int) -> None:
    """Refuse continuous columns and columns with too many levels for dense matrices."""
    dtype = series.dtype
    if not isinstance(dtype, pd.CategoricalDtype) and pd.api.types.is_float_dtype(dtype):
        v = series.to_numpy(dtype=np.float64, na_value=np.nan)
        v = v[np.isfinite(v)]
        frac = v[v != np.round(v)]
        if frac.size:
            raise InputError(
                f"column {col!r} is continuous (values such as {frac[0]:g}); PRAM changes "
                "categories: protect a continuous variable with micro-aggregation (mdav) or "
                "noise (add_noise), or band it into categories first"
            )
    if n_lev > max_levels:
        # worded without "max_levels=": the CLI rewrites that into its own --max-levels
        raise InputError(
            f"column {col!r} has {n_lev} levels, more than max_levels ({max_levels}) for "
            f"PRAM, which builds dense {n_lev}x{n_lev} transition matrices; recode it into "
            "fewer levels first (merge_levels, or band for a numeric variable), or pass a "
            "larger max_levels"
        )


# --------------------------------------------------------------------------- invariant PRAM


def invariant_transition_matrix(
    counts: Sequence[float] | np.ndarray,
    pd_min: float = 0.8,
    alpha: float = 0.5,
    *,
    seed: Any = None,
    random_diagonal: bool = True,
) -> np.ndarray:
    """Invariant PRAM matrix R_α for observed category counts T (seed 001, sec. 4.1.3).

    Gouweleeuw et al. (1998) construction, as in sdcMicro's ``pram``:

    * P: p_ii = d_i, p_ij = (1 − d_i)/(L − 1) for j ≠ i, with d_i ~ U(pd_min, 1)
      (or d_i = pd_min when ``random_diagonal`` is False);
    * λ = T'P, the expected counts after applying P;
    * Q: q_ji = p_ij T_i / λ_j (the backward matrix; rows sum to 1);
    * R = PQ, which satisfies T'R = T' (invariance);
    * R_α = αR + (1 − α)I.

    Parameters
    ----------
    counts : array_like
        Observed counts T_i >= 0 of the L categories.
    pd_min : float, default 0.8
        Minimum diagonal entry of the first-stage matrix P, in (0, 1]. It bounds
        P only, not the released matrix: the probability that a value is kept,
        the diagonal of R_α, can be lower than ``pd_min`` (R = PQ chains P with
        the backward matrix Q); it is at least 1 − α. Same as sdcMicro's ``pd``.
    alpha : float, default 0.5
        Amount of perturbation in [0, 1]; 0 gives the identity.
    seed : int, Generator or None
        Randomness of the diagonal entries.
    random_diagonal : bool, default True
        Draw d_i uniformly in [pd_min, 1] (sdcMicro) or use d_i = pd_min.

    Returns
    -------
    numpy.ndarray
        (L, L) row-stochastic matrix R_α with T'R_α = T'.
    """
    t = np.asarray(counts, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or (t < 0).any() or not np.isfinite(t).all():
        raise InputError("counts must be a non-empty 1-d array of non-negative numbers")
    _check_pd_alpha(pd_min, alpha)
    n_cat = t.size
    if n_cat == 1:
        return np.ones((1, 1))
    rng = rng_from(seed)
    d = rng.uniform(pd_min, 1.0, n_cat) if random_diagonal else np.full(n_cat, pd_min)
    p = np.repeat(((1.0 - d) / (n_cat - 1))[:, None], n_cat, axis=1)
    np.fill_diagonal(p, d)
    lam = t @ p
    # Q[j, i] = P[i, j] T_i / λ_j; a category with λ_j = 0 never occurs after P.
    with np.errstate(invalid="ignore", divide="ignore"):
        q = (p * t[:, None]).T / lam[:, None]
    q[lam <= 0] = np.eye(n_cat)[lam <= 0]
    r = p @ q
    return alpha * r + (1.0 - alpha) * np.eye(n_cat)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _check_pd_alpha(pd_min: Any, alpha: Any) -> None:
    if not (_is_number(pd_min) and 0.0 < pd_min <= 1.0):
        raise InputError(f"pd={pd_min!r} must be a number in (0, 1] (the minimum diagonal of P)")
    if not (_is_number(alpha) and 0.0 <= alpha <= 1.0):
        raise InputError(
            f"alpha={alpha!r} must be a number in [0, 1] (the amount of perturbation)"
        )


@stamped
def invariant_pram(
    frame: pd.DataFrame,
    columns: Sequence[str] | str,
    *,
    pd_min: float = 0.8,
    alpha: float = 0.5,
    strata: Sequence[str] | str | None = None,
    matrices: dict[str, np.ndarray] | None = None,
    seed: Any = None,
    max_levels: int = 1000,
) -> ProtectionResult:
    """Invariant PRAM of categorical variables, each variable independently (seed 001, 4.1.3).

    For each column (and each stratum, when given) the observed level counts T
    define the matrix of :func:`invariant_transition_matrix`; every value is
    replaced by a draw from its row. The expected level counts after PRAM
    equal T. Missing values are left as they are. The released column keeps
    the input's dtype (categorical, ``string``, ``object``, ``Int64``, ...).

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    columns : str or sequence of str
        Categorical variables to randomise (all levels of a categorical dtype
        take part, unused ones included). A float column with non-integer
        values is refused: it is continuous (use :func:`~sdcbayes.protection.mdav`
        or :func:`~sdcbayes.protection.add_noise`).
    pd_min, alpha : float
        See :func:`invariant_transition_matrix`. ``pd_min`` bounds the diagonal
        of the first-stage matrix P, not the probability that a value is kept,
        which can be lower (at least 1 − ``alpha``).
    strata : str or sequence of str, optional
        Apply PRAM within each stratum, with the stratum's own counts.
    matrices : dict, optional
        Column -> user transition matrix, used instead of the invariant one, and
        in every stratum (mu-Argus's and sdcMicro's ``pram`` with a given
        matrix). Either an L x L array (row-stochastic, ordered like the
        column's levels: categories, or sorted values) or a mapping
        ``{from level: {to level: probability}}`` (levels as values or as text,
        ``"3"`` for 3; entries not given are 0), the form of ``protect``'s
        ``pram_matrices.csv``. Every level that occurs needs its row; an unused
        category without one keeps its value. Such a matrix need not be
        invariant: ``summary["user_matrices"]`` says per column whether it keeps
        the expected counts of each stratum (T'R = T', seed 001, 4.1.3).
    seed : int, Generator or None
        None draws a seed from the operating system; the seed used is recorded
        as ``summary["seed"]`` (passing it back repeats the run exactly).
    max_levels : int, default 1000
        Most levels one column may have (the default of
        :class:`~sdcbayes.microdata.Microdata` for a key). PRAM works with dense
        L x L matrices, 8 L² bytes each per stratum (8 MB at L = 1000), and the
        O(L³) product R = PQ; a column with more levels is usually an ID or a
        continuous variable, and is refused.

    Returns
    -------
    ProtectionResult
        ``log``: one row per changed value (``record``, ``variable``,
        ``original``, ``released``). ``summary``: ``changed`` (per variable),
        ``matrices`` (variable -> {stratum -> L x L float array, rows and
        columns ordered like ``levels``}), ``levels`` (variable -> list of
        level labels), ``seed``, parameters. ``provenance``: the call's stamp.

    Raises
    ------
    InputError
        Before any work: unknown columns, bad ``pd_min``/``alpha``/``max_levels``,
        a continuous column, more than ``max_levels`` levels, or a user matrix
        that is not row-stochastic or does not match the column's levels (a level
        it names that the column lacks, or a level of the column without a row).
    """
    frame = check_frame(frame)
    columns = check_columns(frame, columns, "columns")
    strata_l = check_columns(frame, strata, "strata") if strata is not None else None
    if strata_l and set(strata_l) & set(columns):
        # within a stratum of a column, the column has one level: nothing could change
        raise InputError(
            f"columns {sorted(set(strata_l) & set(columns))} are both PRAM'd and strata: "
            "within one of its strata a column has a single level, so PRAM could not change "
            "it; leave them out of the strata or out of the PRAM'd columns"
        )
    matrices = dict(matrices or {})
    unknown = [c for c in matrices if c not in columns]
    if unknown:
        raise InputError(f"matrices given for {unknown}, which are not among columns {columns}")
    _check_pd_alpha(pd_min, alpha)
    max_levels = _check_max_levels(max_levels)
    rng, seed_used = seeded_rng(seed)
    coded = {}
    for col in columns:  # every column checked before any randomisation
        codes, levels = codes_of(frame[col])
        n_lev = len(levels)
        _check_pram_column(frame[col], col, n_lev, max_levels)
        if col in matrices:
            given = matrices[col]
            if isinstance(given, Mapping):
                given = _matrix_from_rows(given, codes, levels, col)
            m = _check_stochastic(given, f"matrices[{col!r}]")
            if m.shape[0] != n_lev:
                raise InputError(
                    f"matrices[{col!r}] is {m.shape[0]}x{m.shape[0]} but {col!r} has "
                    f"{n_lev} levels {list(levels)[:10]}; give one row per level"
                )
            matrices[col] = m
        coded[col] = (codes, levels)
    stratum, stratum_names = code_strata(frame, strata_l)
    # Records of each stratum, in input order, from one sort (not one scan per stratum).
    by_stratum = np.split(
        np.argsort(stratum, kind="stable"),
        np.cumsum(np.bincount(stratum, minlength=len(stratum_names)))[:-1],
    )
    out = output_frame(frame)
    logs, changed, used, level_lists = [], {}, {}, {}
    user: dict[str, Any] = {}
    for col in columns:
        codes, levels = coded[col]
        n_lev = len(levels)
        if n_lev == 0:
            changed[col] = 0
            continue
        new = codes.copy()
        used[col] = {}
        for sel, s_name in zip(by_stratum, stratum_names, strict=True):
            c = codes[sel]
            if col in matrices:
                m = matrices[col]  # one array shared by the strata
                t = np.bincount(c[c >= 0], minlength=n_lev).astype(float)
                # how far the matrix moves the stratum's expected counts: 0 if invariant
                drift = float(np.abs(t @ m - t).max()) if t.size else 0.0
                worst = user.setdefault(col, {"max_expected_count_change": 0.0})
                worst["max_expected_count_change"] = max(
                    worst["max_expected_count_change"], drift)
            else:
                counts = np.bincount(c[c >= 0], minlength=n_lev).astype(float)
                m = invariant_transition_matrix(counts, pd_min, alpha, seed=rng)
            new[sel] = _draw(c, m, rng)
            used[col][s_name] = m
        idx = np.flatnonzero(new != codes)
        changed[col] = int(idx.size)
        level_lists[col] = [_plain(v) for v in levels]
        released = np.asarray(levels, dtype=object)[new]
        released[new < 0] = None
        if isinstance(frame[col].dtype, pd.CategoricalDtype):
            out[col] = pd.Categorical.from_codes(new, dtype=frame[col].dtype)
        else:
            # Each released value is copied from a record holding that level, so the
            # column keeps its dtype (string, object, Int64, ...) and missing values.
            obs = np.flatnonzero(codes >= 0)
            lev, pos = np.unique(codes[obs], return_index=True)
            first = np.zeros(n_lev, dtype=np.int64)
            first[lev] = obs[pos]
            source = np.arange(len(frame))
            source[idx] = first[new[idx]]
            vals = frame[col].iloc[source]
            vals.index = frame.index
            out[col] = vals
        logs.append(
            pd.DataFrame(
                {
                    "record": idx.astype(np.int64),
                    "variable": col,
                    "original": frame[col].to_numpy(dtype=object)[idx],
                    "released": released[idx],
                }
            )
        )
    log = pd.concat(logs, ignore_index=True) if logs else _empty_log()
    summary = {
        "method": "invariant_pram",
        "columns": columns,
        "pd": pd_min,
        "alpha": alpha,
        "strata": strata_l,
        "max_levels": max_levels,
        "changed": changed,
        "total_changed": int(sum(changed.values())),
        "matrices": used,
        "levels": level_lists,
        "seed": seed_used,
    }
    if user:
        # invariant: T'R = T' in every stratum, up to rounding of the probabilities
        n_obs = {c: max(1, int((coded[c][0] >= 0).sum())) for c in user}
        summary["user_matrices"] = {
            c: {"invariant": v["max_expected_count_change"] <= 1e-9 * n_obs[c], **v}
            for c, v in user.items()
        }
    return ProtectionResult(out, log, summary)


def level_text(v: Any) -> str:
    """A level as text: whole floats without ".0", NumPy scalars as Python's.

    The one spelling of a level in text: ``sdcbayes protect`` writes the levels of
    ``pram_matrices.csv`` (and of its messages) with it, and :func:`_matrix_from_rows`
    matches a matrix's text labels to a column's levels with it, so a file ``protect``
    wrote reads back.
    """
    v = _plain(v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _matrix_from_rows(
    rows: Mapping[Any, Any], codes: np.ndarray, levels: pd.Index, col: str
) -> np.ndarray:
    """A ``{from: {to: p}}`` mapping as the L x L matrix of the column's levels.

    Labels match a level by value, or else by text (:func:`level_text`), so the
    text levels of a CSV fit a numeric column. A level the column lacks, or one
    that occurs without a row, is refused; an unused category without a row keeps
    its value (identity row).
    """
    n_lev = len(levels)
    by_value = {}
    for i, lev in enumerate(levels):
        try:
            by_value.setdefault(_plain(lev), i)
        except TypeError:  # unhashable level: matched by text only
            pass
    by_text: dict[str, int] = {}
    for i, lev in enumerate(levels):
        by_text.setdefault(level_text(lev), i)
    shown = ", ".join(level_text(v) for v in list(levels)[:20])

    def index(label: Any) -> int:
        try:
            if label in by_value and not isinstance(label, bool):
                return by_value[label]
        except TypeError:
            pass
        i = by_text.get(level_text(label))
        if i is None:
            raise InputError(
                f"matrices[{col!r}] names the level {level_text(label)!r}, which {col!r} "
                f"does not have; its levels are {shown}"
            )
        return i

    m = np.zeros((n_lev, n_lev))
    seen = np.zeros(n_lev, dtype=bool)
    for frm, row in rows.items():
        i = index(frm)
        if seen[i]:
            raise InputError(
                f"matrices[{col!r}] gives two rows for the level {level_text(levels[i])!r}; "
                "give one row per level"
            )
        seen[i] = True
        if not isinstance(row, Mapping):
            raise InputError(
                f"matrices[{col!r}] row {level_text(frm)!r} must map released levels to "
                "probabilities"
            )
        for to, p in row.items():
            j = index(to)
            try:
                m[i, j] += float(p)
            except (TypeError, ValueError):
                raise InputError(
                    f"matrices[{col!r}] row {level_text(frm)!r} holds {p!r}; give "
                    "probabilities"
                ) from None
    counts = np.bincount(codes[codes >= 0], minlength=n_lev)
    lacking = np.flatnonzero(~seen & (counts > 0))
    if lacking.size:
        raise InputError(
            f"matrices[{col!r}] has no row for the level {level_text(levels[lacking[0]])!r} "
            f"({counts[lacking[0]]} records) and {lacking.size - 1} more; give a row for "
            "every level that occurs"
        )
    unused = np.flatnonzero(~seen)
    m[unused, unused] = 1.0  # unused categories: kept as they are (they draw nothing)
    return m


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _empty_log() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "record": np.array([], dtype=np.int64),
            "variable": np.array([], dtype=object),
            "original": np.array([], dtype=object),
            "released": np.array([], dtype=object),
        }
    )


# --------------------------------------------------------------------------- Nayak-Zhang


def nayak_zhang_phi(theta: float | np.ndarray, count: float | np.ndarray = 1) -> np.ndarray:
    """φ(θ) = (T − θ)/(T(T − θ) + θ²), the bound on P(CM | S_j = 1) (seed 002).

    Seed 002, "Solution of θ and k": with T = T_j the original count of the
    target's cell, P(CM | S_j = 1, X_B = c_j, T) <= φ(θ), because the number of
    units moving into the cell, N, has P(N = 1)/P(N = 0) >= E N = θ. (The seed
    states the bound only; derivation: N is a sum of independent Bernoulli(p_i) with
    Σ p_i = θ, so P(N = 1)/P(N = 0) = Σ p_i/(1 − p_i) >= θ; with s = 1 − θ/T and
    the T − 1 other units of the cell staying independently with probability s,
    Bayes' rule as in :func:`nayak_zhang_cm_probability` gives
    P(CM | S_j = 1) = s/(T s + (1 − s) P(N = 1)/P(N = 0)) <= s/(T s + (1 − s) θ),
    which is φ(θ).)

    Parameters
    ----------
    theta : float or array_like
        Expected number of units leaving each cell, θ in [0, T].
    count : float or array_like, default 1
        Original count T of the target's cell; broadcast against ``theta``.

    Returns
    -------
    numpy.ndarray
        φ_T(θ), broadcast over the inputs (a 0-d array for scalars).
    """
    theta = np.asarray(theta, dtype=np.float64)
    t = np.asarray(count, dtype=np.float64)
    return (t - theta) / (t * (t - theta) + theta**2)


def nayak_zhang_theta(xi: float, counts: Sequence[int] = (1, 2)) -> float:
    """Smallest θ in [0, 1] with φ_T(θ) <= ξ for every T in ``counts`` (seed 002).

    Solved in closed form: (T − θ) <= ξ(T(T − θ) + θ²) ⟺
    ξθ² + (1 − ξT)θ − T(1 − ξT) >= 0, whose positive root is the boundary
    (φ_T decreases on [0, 1] for T <= 2). The seed
    requires ξ >= 1/3 ("limited to ξ >= 1/3"): for doubletons θ = 1 gives
    φ_2(1) = 1/3 exactly.

    Parameters
    ----------
    xi : float
        Bound on the correct-match probability, 1/3 <= ξ < 1.
    counts : sequence of int, default (1, 2)
        Cell counts T that are randomised (singletons and doubletons).

    Returns
    -------
    float
        θ, with φ_T(θ) = ξ for the binding T (equality at the boundary).
    """
    if not (isinstance(xi, (int, float, np.floating)) and 0.0 < xi < 1.0):
        raise InputError(f"xi={xi!r} must be a probability in [1/3, 1); e.g. xi=0.5")
    if xi < 1.0 / 3.0 - 1e-12:
        raise InputError(
            f"xi={xi!r} is below 1/3, which Nayak-Zhang PRAM cannot guarantee (Nayak & Zhang 2015: "
            "'limited to xi >= 1/3'); use xi >= 1/3"
        )
    thetas = []
    for t in counts:
        t = float(t)
        if 1.0 / t <= xi:  # φ_T(0) = 1/T already meets the bound
            thetas.append(0.0)
            continue
        a, b, c = xi, 1.0 - xi * t, -t * (1.0 - xi * t)
        root = (-b + np.sqrt(b * b - 4.0 * a * c)) / (2.0 * a)
        thetas.append(float(root))
    theta = max(thetas)
    # θ = 1 is the largest allowed value (p_ii = 1 − θ for singletons); ξ = 1/3 hits it.
    return float(min(theta, 1.0))


def nayak_zhang_matrix(counts: Sequence[float] | np.ndarray, theta: float) -> np.ndarray:
    """Nayak-Zhang transition matrix of one group of cells (seed 002).

    Row-stochastic: ``P[i, i] = 1 − θ/T_i``, ``P[i, j] = θ/((k − 1) T_i)`` for
    j ≠ i, with k the number of cells of the group; the seed prints the
    transpose (its p_ji is the probability of moving from c_i to c_j).

    Parameters
    ----------
    counts : array_like
        Original counts T_i of the k >= 2 cells of the group.
    theta : float
        Expected number of units leaving each cell, 0 <= θ <= min T_i.

    Returns
    -------
    numpy.ndarray of float, shape ``(k, k)``
        The row-stochastic transition matrix, ``P[i, j]`` = P(a unit of cell i is
        released in cell j).

    Raises
    ------
    InputError
        Fewer than 2 cells, or θ outside [0, min T_i].
    """
    t = np.asarray(counts, dtype=np.float64)
    k = t.size
    if k < 2:
        raise InputError("a Nayak-Zhang group needs at least 2 cells")
    if not (0.0 <= theta <= t.min()):
        raise InputError(f"theta={theta!r} must be in [0, min T_i] so probabilities are valid")
    p = np.repeat((theta / ((k - 1) * t))[:, None], k, axis=1)
    np.fill_diagonal(p, 1.0 - theta / t)
    return p


def _binom_pmf_head(n: np.ndarray, p: np.ndarray, upto: int) -> np.ndarray:
    """The pmf of Bin(n, p) at 0..upto (broadcast over n, p), last axis the value."""
    from scipy import stats  # imported here: keeps `import sdcbayes` cheap

    x = np.arange(upto + 1)
    return stats.binom.pmf(x, np.asarray(n)[..., None], np.asarray(p)[..., None])


def nayak_zhang_cm_probability(
    counts: Sequence[float] | np.ndarray, theta: float, a: int | Sequence[int] = (1, 2)
) -> np.ndarray:
    """Exact P(CM | S_j = a, X_B = c_j, T) for every cell j of one group (seed 002).

    The intruder knows target B's original cell c_j, sees S_j released records
    in c_j and picks one at random; a correct match needs B to have stayed in
    c_j. With Z = (other units of c_j that stay) + (units moving in from the
    other cells), S_j = I(B stays) + Z and

        P(CM | S_j = a) = s P(Z = a − 1) / (a [s P(Z = a − 1) + (1 − s) P(Z = a)]),

    s = 1 − θ/T_j. Z is a sum of binomials: Bin(T_j − 1, s) and, for the cells
    of each count T, Bin(T·m_T, θ/((k − 1)T)). Evaluated exactly. (Bayes' rule
    over whether B stays: P(B stays, S_j = a) = s P(Z = a − 1) and
    P(B moves, S_j = a) = (1 − s) P(Z = a); given that B stays, the random pick
    among the a records is B with probability 1/a. The seed bounds this
    probability but does not print it.)

    Parameters
    ----------
    counts : array_like
        Original counts T_j of the k cells of the group.
    theta : float
        Expected number of units leaving each cell.
    a : int or sequence of int, default (1, 2)
        Released counts S_j >= 1 to condition on (``a = 0`` is refused: no record
        is released in the cell, so there is no match to be correct).

    Returns
    -------
    numpy.ndarray
        Shape (len(a), k): rows follow ``a``, columns the cells. NaN where
        P(S_j = a) = 0.
    """
    t = np.asarray(counts, dtype=np.float64)
    k = t.size
    a_in = np.atleast_1d(np.asarray(a))
    if (
        a_in.ndim != 1
        or a_in.size == 0
        or a_in.dtype.kind not in "iu"
        or (a_in < 1).any()
    ):
        raise InputError(
            f"a={a!r} must be one or more integers >= 1 (the number S_j of released "
            "records in the target's cell; with S_j = 0 there is nothing to match)"
        )
    a_arr = a_in.astype(np.int64)
    top = int(a_arr.max())
    levels, inv = np.unique(t, return_inverse=True)
    n_per = np.bincount(inv, minlength=levels.size)
    out = np.full((a_arr.size, k), np.nan)
    # Cells with the same count have the same probability: loop over distinct counts.
    for li, tj in enumerate(levels):
        s = 1.0 - theta / tj
        pmf = _binom_pmf_head(tj - 1, s, top)
        others = n_per.copy()
        others[li] -= 1
        for lv, m in zip(levels, others, strict=True):
            if m == 0:
                continue
            part = _binom_pmf_head(lv * m, theta / ((k - 1) * lv), top)
            pmf = np.convolve(pmf, part)[: top + 1]
        for ai, av in enumerate(a_arr):
            num = s * pmf[av - 1]
            den = num + (1.0 - s) * pmf[av]
            if den > 0:
                out[ai, inv == li] = num / (av * den)
    return out


def nayak_zhang_min_group_size(
    xi: float, theta: float | None = None, *, counts: Sequence[int] = (1, 2), k_max: int = 50
) -> int:
    """Smallest group size k that meets the seed's guarantee for every group make-up.

    Seed 002, "Solution of θ and k": the goal is P(CM | S_j = a, X_B = c_j, T) <= ξ
    for every a > 0 and every cell j. For a >= 3 it holds by itself
    (P(CM | S_j = a) <= 1/a <= 1/3 <= ξ), so k is the smallest group size for
    which the exact P(CM | S_j = 1) and P(CM | S_j = 2)
    (:func:`nayak_zhang_cm_probability`) are at most ξ in every cell, whatever the
    mix of singleton and doubleton cells, for every group size k..2k − 1 (groups
    of at least k cells, the remainder joins the last group). A make-up in which
    S_j = 1 or 2 cannot occur fails as well: for 0 < θ < 1 that never happens; at
    θ = 1 (ξ = 1/3) it is a group of two singleton cells, which swap their records
    for certain. So k = 3 for every ξ below 1/2 (ξ = 1/3 included), k = 2 from 1/2 on.

    The seed reaches the goal through the chain
    P(CM | S_j = 2) <= P(CM | S_j = 1) <= φ(θ) <= ξ and solves k from its first
    link. That chain is a sufficient condition only, needed when P(CM | S_j = 2)
    is not computed; here it is computed exactly, so the link is not required.
    Requiring it made k jump just above ξ = 1/3 (θ near 1, where both
    probabilities of a singleton cell are tiny and P2 slightly exceeds P1):
    ξ = 0.34 gave k = 50, ξ = 0.3335 found no k, though k = 3 meets the goal.

    Parameters
    ----------
    xi : float
        Bound on the correct-match probability, 1/3 <= ξ < 1.
    theta : float, optional
        The θ of the matrices; default :func:`nayak_zhang_theta` of ``xi`` and ``counts``.
    counts : sequence of int, default (1, 2)
        Cell counts T that are randomised (singletons and doubletons).
    k_max : int, default 50
        Largest group size tried. Each group size is checked once (groups of up
        to 2 k_max − 1 cells), which bounds the cost of the search.

    Returns
    -------
    int
        The smallest group size k >= 2 meeting the goal for every group of
        k..2k − 1 cells.

    Raises
    ------
    InputError
        A ``xi`` outside [1/3, 1) (when ``theta`` is derived), a ``k_max`` below 2,
        or no group size up to ``k_max`` meets the bound.
    """
    if (
        isinstance(k_max, (bool, np.bool_))
        or not isinstance(k_max, (int, np.integer))
        or k_max < 2
    ):
        raise InputError(f"k_max={k_max!r} must be an integer >= 2 (the largest group size tried)")
    if theta is None:
        theta = nayak_zhang_theta(xi, counts)
    counts = [int(c) for c in counts]
    passed: dict[int, bool] = {}

    def ok(h: int) -> bool:
        """Whether P(CM | S_j = a) <= ξ, a = 1, 2, in every cell of every h-cell group."""
        if h not in passed:
            passed[h] = True
            for mix in _mixes(h, counts):
                pr = nayak_zhang_cm_probability(mix, theta, (1, 2))
                # NaN (P(S_j = a) = 0) fails too: for 0 < θ < 1 it cannot occur; at
                # θ = 1 a group of two singletons swaps its records for certain (undone
                # by swapping back), and any θ just below 1 gives it P(CM | S_j = 2) = 1/2.
                if not (pr <= xi + 1e-12).all():
                    passed[h] = False
                    break
        return passed[h]

    g = 2
    while g <= k_max:
        bad = next((h for h in range(g, 2 * g) if not ok(h)), None)
        if bad is None:
            return g
        # every g' <= bad would again contain the failing size: go past it
        g = bad + 1
    raise InputError(
        f"no group size up to k_max={k_max} meets the bound xi={xi} with theta={theta} for "
        "every mix of singleton and doubleton cells; pass group_size= to nayak_zhang_pram "
        "(its summary reports the exact max_cm_probability of the groups formed), or raise xi"
    )


def _mixes(g: int, counts: list[int]) -> list[np.ndarray]:
    """All multisets of ``g`` cell counts drawn from ``counts`` (one array each)."""
    if len(counts) == 1:
        return [np.full(g, counts[0])]
    out = []
    for n_first in range(g + 1):
        for rest in _mixes(g - n_first, counts[1:]):
            out.append(np.concatenate([np.full(n_first, counts[0]), rest]))
    return out


@stamped
def nayak_zhang_pram(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    xi: float = 1.0 / 3.0,
    *,
    theta: float | None = None,
    group_size: int | None = None,
    seed: Any = None,
) -> ProtectionResult:
    """Nayak-Zhang PRAM of the cross-classified key (seed 002, "Our perturbation mechanism").

    1. θ: the smallest value with φ_T(θ) <= ξ for T = 1, 2 (:func:`nayak_zhang_theta`).
    2. k: the minimum group size (:func:`nayak_zhang_min_group_size`).
    3. Only singleton and doubleton cells are randomised: they are taken in the
       order of their key values (neighbouring cells together) and cut into
       groups of k cells; the remainder joins the last group.
    4. Each group is randomised independently with the matrix of
       :func:`nayak_zhang_matrix`: a unit of cell i stays with probability
       1 − θ/T_i, otherwise moves to one of the other k_g − 1 cells of its group
       uniformly. The whole key combination of a moved record is replaced by
       that of its new cell, so the released file only has observed cells.

    Missing key values: a record with a missing key value (e.g. one that local
    suppression blanked) is left as it is, and its cell is no destination: drawing
    it another cell's values would refill the suppressed value (undoing the
    k-anonymity the suppression reached) and blank another record's. Such records
    are counted in the summary's ``n_records_missing_key_kept``; the groups and the
    guarantee are formed over the complete cells only.

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    keys : str or sequence of str
        Key variables; their cross-classification defines the cells.
    xi : float, default 1/3
        Bound on P(CM | S_j = a, X_B = c_j), ξ >= 1/3.
    theta : float, optional
        Override θ (then the guarantee is only what the summary reports).
    group_size : int, optional
        Override the minimum group size k.
    seed : int, Generator or None
        None draws a seed from the operating system; the seed used is recorded
        as ``summary["seed"]`` (passing it back repeats the run exactly).

    Returns
    -------
    ProtectionResult
        ``log``: one row per moved record: ``record``, ``cell_from``, ``cell_to``
        (0-based cell numbers in sorted key order), ``group``, and the original
        and released value of each key (``<key>_original``, ``<key>_released``).
        ``summary``: ``xi``, ``theta``, ``group_size``, ``n_groups``,
        ``n_cells_randomised``, ``n_records_randomised``, ``n_moved``,
        ``max_cm_probability`` (exact, over the groups formed, a = 1, 2),
        ``n_records_missing_key_kept`` (records with a missing key value, not randomised),
        ``seed``. ``provenance``: the call's stamp.

    Raises
    ------
    InputError
        Bad ξ, or fewer singleton and doubleton cells than the group size.
    """
    frame = check_frame(frame)
    keys = check_columns(frame, keys, "keys")
    if theta is None:
        theta = nayak_zhang_theta(xi)
    elif not (0.0 <= theta <= 1.0):
        raise InputError(f"theta={theta!r} must be in [0, 1]; leave it unset to solve φ(θ) <= ξ")
    if group_size is not None and (
        isinstance(group_size, (bool, np.bool_))
        or not isinstance(group_size, (int, np.integer))
        or group_size < 2
    ):
        raise InputError(
            f"group_size={group_size!r} must be an integer >= 2 (the number of cells per "
            "group); leave it unset for the minimum that meets xi"
        )
    k = nayak_zhang_min_group_size(xi, theta) if group_size is None else int(group_size)
    rng, seed_used = seeded_rng(seed)

    cols, rad = [], []
    for key in keys:
        c, lev = codes_of(frame[key])
        cols.append(c + 1)  # missing is level 0 of its own
        rad.append(len(lev) + 1)
    packed = pack_rows(cols, rad)
    _, rep, cell, counts = np.unique(
        packed, return_index=True, return_inverse=True, return_counts=True
    )
    cell = cell.reshape(-1)
    # cells with a missing key value (code 0) stay out: their records keep their values
    incomplete_rec = np.zeros(len(frame), dtype=bool)
    for c in cols:
        incomplete_rec |= np.asarray(c) == 0
    incomplete = np.zeros(counts.size, dtype=bool)
    incomplete[cell[incomplete_rec]] = True
    n_kept = int(incomplete_rec.sum())
    small = np.flatnonzero((counts <= 2) & ~incomplete)  # sorted by key values
    n_small = small.size
    n = len(frame)
    if n_small == 0:
        return ProtectionResult(
            output_frame(frame),
            _nz_empty_log(keys),
            _nz_summary(xi, theta, k, 0, 0, 0, 0, np.nan, n_kept, seed_used),
        )
    if n_small < k:
        raise InputError(
            f"only {n_small} singleton/doubleton cells but the minimum group size for "
            f"xi={xi:.4g} is {k}; raise xi, pass a smaller group_size, or recode keys first"
        )
    n_groups = n_small // k
    group_of_small = np.minimum(np.arange(n_small) // k, n_groups - 1)
    group_sizes = np.bincount(group_of_small, minlength=n_groups)
    pos_in_group = np.arange(n_small) - np.concatenate([[0], np.cumsum(group_sizes)[:-1]])[
        group_of_small
    ]
    group_start = np.concatenate([[0], np.cumsum(group_sizes)[:-1]])

    small_index = np.full(counts.size, -1, dtype=np.int64)
    small_index[small] = np.arange(n_small)
    rec_small = small_index[cell]
    sel = np.flatnonzero(rec_small >= 0)
    si = rec_small[sel]
    g = group_of_small[si]
    kg = group_sizes[g]
    t_i = counts[small[si]].astype(np.float64)
    move = rng.random(sel.size) < theta / t_i
    offset = rng.integers(1, np.maximum(kg, 2))  # 1..k_g − 1: uniform over the other cells
    new_pos = np.where(move, (pos_in_group[si] + offset) % kg, pos_in_group[si])
    new_small = group_start[g] + new_pos
    new_cell = cell.copy()
    new_cell[sel] = small[new_small]

    source = np.arange(n)
    moved = np.flatnonzero(new_cell != cell)
    source[moved] = rep[new_cell[moved]]
    out = output_frame(frame)
    for key in keys:
        vals = frame[key].iloc[source]
        vals.index = frame.index
        out[key] = vals

    log = pd.DataFrame(
        {
            "record": moved.astype(np.int64),
            "cell_from": cell[moved].astype(np.int64),
            "cell_to": new_cell[moved].astype(np.int64),
            "group": group_of_small[small_index[cell[moved]]].astype(np.int64),
        }
    )
    for key in keys:
        log[f"{key}_original"] = frame[key].to_numpy(dtype=object)[moved]
        log[f"{key}_released"] = frame[key].to_numpy(dtype=object)[source[moved]]

    # Exact worst case over the groups actually formed (one per distinct make-up).
    worst = 0.0
    makeups = {
        (int(sz), int(n1))
        for sz, n1 in zip(
            group_sizes,
            np.bincount(group_of_small, weights=counts[small] == 1, minlength=n_groups),
            strict=True,
        )
    }
    for sz, n1 in makeups:
        mix = np.concatenate([np.ones(n1), np.full(sz - n1, 2.0)])
        pr = nayak_zhang_cm_probability(mix, theta, (1, 2))
        worst = max(worst, float(np.nanmax(pr)) if np.isfinite(pr).any() else 0.0)
    summary = _nz_summary(
        xi, theta, k, n_groups, n_small, int(sel.size), int(moved.size), worst, n_kept,
        seed_used,
    )
    return ProtectionResult(out, log, summary)


def _nz_empty_log(keys: list[str]) -> pd.DataFrame:
    cols = {c: np.array([], dtype=np.int64) for c in ("record", "cell_from", "cell_to", "group")}
    for key in keys:
        cols[f"{key}_original"] = np.array([], dtype=object)
        cols[f"{key}_released"] = np.array([], dtype=object)
    return pd.DataFrame(cols)


def _nz_summary(xi, theta, k, n_groups, n_cells, n_records, n_moved, worst,
                n_kept: int = 0, seed: Any = None) -> dict[str, Any]:
    return {
        "method": "nayak_zhang_pram",
        "xi": float(xi),
        "theta": float(theta),
        "group_size": int(k),
        "n_groups": int(n_groups),
        "n_cells_randomised": int(n_cells),
        "n_records_randomised": int(n_records),
        "n_moved": int(n_moved),
        "max_cm_probability": float(worst),
        "n_records_missing_key_kept": int(n_kept),
        "seed": seed,
    }


def correct_match_probability(frame: pd.DataFrame, keys: Sequence[str] | str) -> np.ndarray:
    """P(record i is correctly matched) = 1/f_i for unperturbed data (seed 002, "Example").

    The intruder knows the target's key values and picks at random among the
    f_i records that share them (missing values are a level of their own).
    Seed 002's example: John (a unique) 1, Susan (one of two) 0.5.

    Parameters
    ----------
    frame : pandas.DataFrame
        The released (unperturbed) file. Not modified.
    keys : str or sequence of str
        Key variables the intruder knows.

    Returns
    -------
    numpy.ndarray of float, shape ``(record,)``
        1/f_i for each record, in row order, f_i the number of records sharing
        its key combination.

    Raises
    ------
    InputError
        A ``frame`` that is not a DataFrame, or unknown ``keys``.
    """
    frame = check_frame(frame)
    keys = check_columns(frame, keys, "keys")
    cols, rad = [], []
    for key in keys:
        c, lev = codes_of(frame[key])
        cols.append(c + 1)
        rad.append(len(lev) + 1)
    _, inv, counts = np.unique(pack_rows(cols, rad), return_inverse=True, return_counts=True)
    return 1.0 / counts[inv.reshape(-1)]


# --------------------------------------------------------------------------- risk after PRAM


def keep_probability(
    frame: pd.DataFrame,
    matrices: Any,
    strata: Sequence[str] | str | None = None,
) -> np.ndarray:
    """Per released record, the probability M_jj that PRAM kept its released key values.

    Shlomo & Skinner (2010, "Assessing the protection provided by misclassification-based
    disclosure limitation methods for survey microdata", Ann. Appl. Stat. 4(3),
    1291-1310, doi:10.1214/09-AOAS317): with M_jk = P(released combination j | true
    combination k), the probability that a released record in combination j is the
    target an intruder knows to be in j is approximately M_jj / Σ_k M_jk F_k. The
    denominator is the count of population units PRAM would put in j, which the
    released sample (a sample of the misclassified population) estimates: the risk of
    a released record is M_jj times its usual risk computed on the released file.
    Variables PRAMmed independently make M_jj the product, over the PRAMmed columns, of
    each column's diagonal entry R_jj at the released value (in the record's stratum
    when PRAM ran per stratum); an unPRAMmed column contributes 1. The record's own
    stratum's matrix is exact where the stratum is released and among the keys; where
    it is not, the inflow into j comes from every stratum's units and this is an
    approximation.

    The approximation treats the released record as a random draw from the units PRAM
    puts in j (P(true j | released j) ≈ M_jj F_j / Σ_k M_jk F_k) and ignores that
    being a released *sample unique* is itself evidence of having been kept (a kept
    unit has one competitor fewer in j). It is poor, and understates the risk, where
    that evidence is strong: large sampling fractions together with large off-diagonal
    inflow into small cells (in a simulation with 4 x 30 cells of which half hold 1-3
    units, matrix diagonals 0.7-0.85: 0.1% low at a 2% sample, 3% at 10%, 10% at 30%).
    For a file read as the whole population (no weights: plug-in risk 1/f̃_j), M_jj/f̃_j
    overstated the exact expected correct matches by 0.3% and by 13% in two such
    simulated populations: there the adjusted risk is a rough, rather high, figure.

    Parameters
    ----------
    frame : pandas.DataFrame
        The released file. Not modified.
    matrices : mapping or pandas.DataFrame
        The transition matrices, in one of two forms:

        * the ``summary`` of :func:`invariant_pram` (or its
          :class:`~sdcbayes.protection.base.ProtectionResult`): ``matrices`` (column ->
          stratum label -> L x L array) and ``levels`` (column -> level labels); its
          ``strata`` is used when ``strata`` is not given;
        * the long table of ``sdcbayes protect``'s ``pram_matrices.csv`` (columns
          ``variable``, ``from``, ``to``, ``probability``, optionally ``stratum`` and
          ``step``): only the diagonal rows are read.

        Only the columns they hold count as PRAMmed.
    strata : str or sequence of str, optional
        The stratum columns PRAM ran within (their labels as
        :func:`~sdcbayes.protection.base.code_strata` writes them, e.g. in
        ``pram_matrices.csv``'s ``stratum``).

    Returns
    -------
    numpy.ndarray of float, shape ``(record,)``
        M_jj of each record, in row order. A missing released value of a PRAMmed
        column contributes 1: PRAM leaves a missing value missing, and a value blanked
        after PRAM is released as no value at all; the closed form reads the blank as a
        wildcard, which already counts every value it may hide.

    Raises
    ------
    InputError
        Before any work: a column or stratum column the frame lacks, a table without
        the long form's columns, a table holding one column from two steps (successive
        PRAMs compose to a matrix whose diagonal is not the product of theirs), a
        released level or stratum the matrices have no row for.
    """
    frame = check_frame(frame)
    if isinstance(matrices, ProtectionResult):
        matrices = matrices.summary
    diag, given_strata = _diagonals(matrices)
    if strata is None:
        strata = given_strata
    strata_l = check_columns(frame, strata, "strata") if strata else None
    check_columns(frame, list(diag), "PRAMmed columns")
    stratum, names = code_strata(frame, strata_l)
    out = np.ones(len(frame))
    for col, by_stratum in diag.items():
        codes, levels = codes_of(frame[col])
        text = [level_text(v) for v in levels]
        lookup = np.ones((len(names), max(len(levels), 1)))
        used = np.zeros_like(lookup, dtype=bool)
        ok = codes >= 0
        used[stratum[ok], codes[ok]] = True
        for si, s_name in enumerate(names):
            row = by_stratum.get(s_name)
            for li in np.flatnonzero(used[si]):
                if row is None or text[li] not in row:
                    where = "" if strata_l is None else f" in stratum {s_name!r}"
                    raise InputError(
                        f"the matrices of {col!r} have no row for its released level "
                        f"{text[li]!r}{where}; pass the matrices of this release"
                        + ("" if strata_l else " (and strata= if PRAM ran per stratum)")
                    )
                lookup[si, li] = row[text[li]]
        out[ok] *= lookup[stratum[ok], codes[ok]]
    return out


def _diagonals(matrices: Any) -> tuple[dict[str, dict[str, dict[str, float]]], Any]:
    """Column -> stratum label -> {level text: R_jj}, and the strata the matrices name."""
    if isinstance(matrices, pd.DataFrame):
        need = {"variable", "from", "to", "probability"}
        if not need <= set(matrices.columns):
            raise InputError(
                f"the matrix table has columns {list(matrices.columns)}; it needs "
                f"{sorted(need)} (the long form of protect's pram_matrices.csv)"
            )
        if "step" in matrices.columns:
            steps = matrices.groupby("variable")["step"].nunique()
            twice = sorted(steps.index[steps > 1].astype(str))
            if twice:
                raise InputError(
                    f"the matrix table PRAMs {twice} in more than one step; the keep "
                    "probability of successive PRAMs is the diagonal of their product, "
                    "not the product of their diagonals: pass one step's rows"
                )
        t = matrices
        d = t[t["from"].map(level_text) == t["to"].map(level_text)]
        stratum = d["stratum"].map(str) if "stratum" in d.columns else pd.Series("all", d.index)
        out: dict[str, dict[str, dict[str, float]]] = {}
        for var, s_name, frm, p in zip(d["variable"].map(str), stratum, d["from"].map(level_text),
                                       d["probability"].astype(float), strict=True):
            out.setdefault(var, {}).setdefault(s_name, {})[frm] = float(p)
        # a level whose row the table holds without its diagonal entry is kept with 0
        for var, s_name, frm in zip(t["variable"].map(str),
                                    t["stratum"].map(str) if "stratum" in t.columns
                                    else pd.Series("all", t.index),
                                    t["from"].map(level_text), strict=True):
            out.setdefault(var, {}).setdefault(s_name, {}).setdefault(frm, 0.0)
        return out, None
    if isinstance(matrices, Mapping) and "matrices" in matrices and "levels" in matrices:
        out = {}
        for col, by_stratum in (matrices["matrices"] or {}).items():
            text = [level_text(v) for v in matrices["levels"][col]]
            out[col] = {s: dict(zip(text, np.diag(np.asarray(m, dtype=float)).tolist(),
                                    strict=True))
                        for s, m in by_stratum.items()}
        return out, matrices.get("strata")
    raise InputError(
        "matrices must be invariant_pram's result (or its summary) or the long table of "
        f"pram_matrices.csv, not {type(matrices).__name__}"
    )


def nayak_zhang_keep_probability(
    original: pd.DataFrame, released: pd.DataFrame, keys: Sequence[str] | str, summary: Any
) -> np.ndarray:
    """Per released record, M_jj of Nayak-Zhang PRAM: 1 − θ/T_j in a randomised cell.

    Seed 002's matrix keeps a unit of cell j with probability p_jj = 1 − θ/T_j (T_j the
    cell's count in the step's input) when j is a randomised cell (complete, T_j <= 2),
    and 1 otherwise; a released record is always in one of the input's cells. The risk
    after is then M_jj times the released-file risk, as for :func:`keep_probability`
    (Shlomo & Skinner 2010, same approximation and caveats).

    Parameters
    ----------
    original, released : pandas.DataFrame
        The step's input and output (same rows). Not modified.
    keys : str or sequence of str
        The step's keys.
    summary : mapping or ProtectionResult
        :func:`nayak_zhang_pram`'s summary (``theta``, ``n_cells_randomised``).

    Returns
    -------
    numpy.ndarray of float, shape ``(record,)``

    Raises
    ------
    InputError
        Frames of different lengths, unknown keys, a summary without ``theta``.
    """
    original, released = check_frame(original), check_frame(released)
    keys = check_columns(original, keys, "keys")
    check_columns(released, keys, "keys")
    if len(original) != len(released):
        raise InputError(f"original has {len(original)} records, released {len(released)}; "
                         "pass the step's input and output")
    if isinstance(summary, ProtectionResult):
        summary = summary.summary
    if not isinstance(summary, Mapping) or "theta" not in summary:
        raise InputError("summary must be nayak_zhang_pram's summary (with theta)")
    n = len(original)
    out = np.ones(n)
    if not summary.get("n_cells_randomised"):
        return out
    both = pd.concat([original[keys], released[keys]], ignore_index=True)
    cols, rad = [], []
    for key in keys:
        c, lev = codes_of(both[key])
        cols.append(c + 1)
        rad.append(len(lev) + 1)
    _, cell = np.unique(pack_rows(cols, rad), return_inverse=True)
    cell = cell.reshape(-1)
    complete = np.all(np.column_stack(cols) > 0, axis=1)
    t = np.bincount(cell[:n], minlength=int(cell.max()) + 1).astype(float)
    rel, rel_ok = cell[n:], complete[n:]
    small = rel_ok & (t[rel] <= 2) & (t[rel] > 0)
    out[small] = 1.0 - float(summary["theta"]) / t[rel[small]]
    return out
