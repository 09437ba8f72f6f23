"""Local suppression to reach k-anonymity (seed 001, sections 3.2 and 4.1.2).

A file is k-anonymous when every record shares its key pattern with at least
k − 1 other records (seed 001, section 3.2). Local suppression replaces single
key values by missing values until that holds (section 4.1.2). A missing value
is a *wildcard*: it matches every level of its key, the semantics of sdcMicro's
``freqCalc`` and of :class:`sdcbayes.Microdata` with ``missing="wildcard"``.
The frequency f_i of record i is then the number of records j that agree with
i on every key where both are observed.

The algorithm (:func:`local_suppression`) is a greedy that works on distinct
key patterns ("cells"), never on single records:

1. compute the wildcard frequency of every cell (see "Cost" below);
2. for every cell with f < k, try suppressing each key and compute the new
   frequency (the same search, with the modified cells as queries);
3. in every violating cell suppress the least important key whose suppression
   raises the cell's frequency (the least important observed key if none does);
4. repeat until no cell violates k-anonymity.

The greedy blanks a value in every violating record itself, and no pass tries
to put values back. Fewer blanks would often pass the same test: on sdcMicro's
``testdata`` (urbrur, water, sex, age; k = 3) 627 of the greedy's 674
suppressions can be restored one by one with every f_i >= 3 kept. But each
restored record is again the only one showing its exact key values; it passes
only because a few blanked records match it as wildcards (323 records exactly
unique, against none after the greedy). Wildcard k-anonymity is that weak, so
suppressions are not minimised.

Suppression only adds wildcards, so no frequency ever decreases: cells that
satisfy k-anonymity keep satisfying it, every pass adds one missing value to
each violating record, and the loop ends after at most (number of keys) passes.
Importance follows sdcMicro's ``localSuppression``: 1 is the most important key
(suppressed last); by default the keys with more levels are less important.

Cost. Without missing values a frequency is one sort of the packed key codes,
O(n log n). With missing values the records no longer fall into disjoint
cells: a record with missing keys M matches every record that agrees with it on
the keys observed in both, so the work depends on how many distinct
missingness patterns there are and on how many records of different patterns
actually agree. The search (``_wildcard_counts``) takes the keys one at a time,
splits the records by whether the key is missing and drops groups that can no
longer match, so the work tracks the matches rather than the (pattern,
pattern) pairs; a NumPy step per search node, in a Python loop over nodes. In
the worst case (few levels per key, many patterns, most records with a missing
value) it grows towards (number of patterns)^2 nodes. The greedy runs the
search (number of keys + 1) times per pass and needs at most (number of keys)
passes, more with ``combs`` (once per key subset). Measured on 2 CPU cores:
1e5 records, 9 keys with 6 to 38 levels, 10 % of values missing (about 250
patterns): a frequency in 0.7 s, local suppression to k = 3 in 12 s.

Sequential method (``method="sequential"``): sdcMicro's ``localSuppression`` and
``kAnon`` (``R/localSuppression.R``, ``suppSubset``; ``src/calcSuppInds.cpp``;
sdcTools/sdcMicro commit cf32510), with its ``alpha = 1``. Each pass takes the
records with f_i < k in decreasing order of risk 1/f_i (ties in file order) and,
one record at a time, finds its nearest records: those at the smallest Hamming
distance above 0, counting only keys observed in both (a missing value matches
anything). It blanks the least important key on which the record differs from
one of them, and the next record already sees that blank as a wildcard. The
frequencies are recomputed after the pass (a record that became k-anonymous
through an earlier record's blank in the same pass is still blanked, as in
sdcMicro), and passes repeat until the file is k-anonymous. A record that by its
turn matches every record of its stratum is left alone (sdcMicro stops with the
error "the length of the index vector is 0"). On sdcMicro's
``testdata2`` (7 keys, k = 2) this gives sdcMicro's 97 suppressions (109 with
its age strata) against the greedy's 109 (139); on ``testdata`` (k = 3, 5) 293
and 500 against 308 and 565, but on the demo sample (k = 3) with its six default
keys (``load_demo().keys``: age_group, sex, marital_status, education,
country_of_birth, household_size) 791 against 782, so neither method always
suppresses fewer values (on the keys of the README's protection example, age_group
(there named age), sex, region and occupation, k = 3: 807 against 806).

Differences from sdcMicro, deliberate: (1) with ``combs`` each key subset ranks
the importance of its own keys (sdcMicro indexes ``importance`` by the keys'
column numbers in the data, ``importance[kV]``, which reverses or drops the
ranks unless the keys are the first columns: its printed 11 for the set.seed(3)
toy with importance (3, 2, 1) and combs 3:2 is 10 here); (2) sdcMicro first
keeps only k records of every key combination with more than k (a speed-up).
Without missing values that changes neither the violating records, their order
nor the set of nearest patterns, so the results are equal; with missing values
sdcMicro's thinning groups a missing value with the column's first value and
can drop records that others match as wildcards, so it may suppress in records
that are k-anonymous in the full file. Here frequencies and neighbours are
always those of the full file (within the stratum).

Its cost: a pass compares distinct key patterns, not records, and the patterns
present change by one pattern emptying or appearing per record. A record with a
pattern at Hamming distance 1 (most records) finds those neighbours by lookups in
sorted tables of packed key tuples (``_DistanceOneTables``), built per block of
queued records and kept current on each event: about (distinct missingness
masks) x (keys) per record, plus (present patterns) x (keys + 1) per block to
fill the tables. A record without one, and the records of a missingness mask that
few queued records share (tables would cost more than they save), are compared
with every present pattern, (patterns) x (keys) each; so with missing values
spread over many keys (many distinct masks) a pass approaches (violating records)
x (patterns) again. Key sets whose packed tuples overflow int64 fall back to
one-hot distance products (quadratic as well). Measured on 2 shared CPU cores:
sdcMicro's testdata (4,580 records, 7 keys) 0.05 s; 1e4 synthetic records with 5
keys 0.4 to 0.5 s; 1e5 simulated census records with 9 keys (2 to 151 levels) of
which half violate 3-anonymity 7 s (the greedy 1 s; before the tables 58 s);
simulated census files with 7 keys: 1e6 records (49,000 violating) 4.3 to 4.9 s
CPU (before 46 s), 1e7 records 38 s (before: over 300 s); 3e4 of the census
records with 5 % of key values missing 5 s (no tables pay there).

Risk-threshold suppression (:func:`risk_suppression`): sdcMicro's ``localSupp``
and mu-Argus's individual-risk route. Given each record's individual risk r_i
(computed by the caller: the closed form, or a posterior mean), one key is blanked
in every record with r_i above a threshold; one key, one pass, no k-anonymity
target. Linked ("ghost") columns (``linked=``, both functions) follow their key's
blanks, sdcMicro's ``ghostVars``.

Households (``household=``, ``household_keys=``, both functions). A key with one
value in every household (household size, the household's region) that a step blanks
in one member but not in a mate is read off the mate once the household id is released
(:func:`household_completion` fills such blanks, and counts a key that is each household's
number of records, for the risk of the released file). With ``household_keys`` each such
key blanked by the step in one member is blanked in every member of the household after
the step reached its target: only wildcards are added, so no frequency falls and the
file stays k-anonymous.

This module may import NumPy, pandas, :mod:`sdcbayes.protection.base` (whose
``stamped`` stamps the results) and :mod:`sdcbayes.microdata`'s wildcard search; no
risk or model module (a risk threshold reads the risks its caller computed).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.microdata import _DIRECT_COMPARISONS as _microdata_direct_comparisons
from sdcbayes.microdata import _wildcard_counts as _wildcard_search
from sdcbayes.protection.base import (
    ProtectionResult,
    check_columns,
    check_frame,
    check_row_order,
    code_strata,
    codes_of,
    output_frame,
    pack_rows,
    stamped,
    with_missing,
)

__all__ = [
    "local_suppression",
    "risk_suppression",
    "wildcard_frequencies",
    "default_importance",
    "default_risk_key",
    "household_level_keys",
    "household_count_keys",
    "household_completion",
]


# --------------------------------------------------------------------------- frequencies


#: Sub-problems with at most this many (query, data, key) comparisons are finished by
#: direct pairwise comparison: cheaper than splitting them further.
_DIRECT_COMPARISONS = _microdata_direct_comparisons


def _wildcard_counts(
    data: np.ndarray,
    weights: np.ndarray,
    queries: np.ndarray,
    radices: Sequence[int],
    stratum_data: np.ndarray | None = None,
    stratum_queries: np.ndarray | None = None,
    n_strata: int = 1,
) -> np.ndarray:
    """Sum of ``weights`` over data rows that wildcard-match each query row.

    The search of :func:`sdcbayes.microdata._wildcard_counts` (shared with
    :class:`sdcbayes.Microdata`), with this module's :data:`_DIRECT_COMPARISONS`.
    """
    return _wildcard_search(
        data, weights, queries, radices, stratum_data, stratum_queries, n_strata,
        direct_comparisons=_DIRECT_COMPARISONS,
    )


def _code_keys(frame: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, list[pd.Index]]:
    codes, levels = [], []
    for key in keys:
        c, lev = codes_of(frame[key])
        codes.append(c)
        levels.append(lev)
    return np.column_stack(codes) if codes else np.zeros((len(frame), 0), np.int64), levels


def _code_strata(frame: pd.DataFrame, strata: list[str] | None) -> tuple[np.ndarray, int]:
    codes, names = code_strata(frame, strata)
    return codes, len(names)


def wildcard_frequencies(
    frame: pd.DataFrame, keys: Sequence[str] | str, strata: Sequence[str] | str | None = None
) -> np.ndarray:
    """Per-record sample frequency f_i with missing key values as wildcards.

    f_i is the number of records j (i included) of the same stratum that agree
    with record i on every key observed in both: sdcMicro's ``freqCalc`` with
    ``alpha = 1`` (seed 001, section 3.1, f_k; section 3.2, k-anonymity holds
    when f_i >= k for every record).

    Parameters
    ----------
    frame : pandas.DataFrame
    keys : str or sequence of str
        Key variables; missing values are wildcards.
    strata : str or sequence of str, optional
        Frequencies are computed within each stratum.

    Returns
    -------
    numpy.ndarray
        int64 array (n_records,), in input order.
    """
    frame = check_frame(frame)
    keys = check_columns(frame, keys, "keys")
    strata_l = check_columns(frame, strata, "strata") if strata is not None else None
    codes, levels = _code_keys(frame, keys)
    s, n_s = _code_strata(frame, strata_l)
    radices = [len(lev) + 1 for lev in levels]
    cell, rows, counts, cs = _distinct(codes, s, radices, n_s)
    fk = _wildcard_counts(rows, counts.astype(float), rows, radices, cs, cs, n_s)
    return np.rint(fk[cell]).astype(np.int64)


def _distinct(
    codes: np.ndarray, stratum: np.ndarray, radices: Sequence[int], n_strata: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct (stratum, key pattern) rows: cell of each record, rows, counts, strata."""
    cols = [stratum] + [codes[:, j] + 1 for j in range(codes.shape[1])]
    packed = pack_rows(cols, [n_strata] + [int(r) for r in radices])
    _, first, cell, counts = np.unique(
        packed, return_index=True, return_inverse=True, return_counts=True
    )
    cell = cell.reshape(-1)
    return cell, codes[first], counts, stratum[first]


# --------------------------------------------------------------------------- importance


def default_importance(frame: pd.DataFrame, keys: Sequence[str] | str) -> dict[str, int]:
    """sdcMicro's default importance: keys with fewer levels are more important.

    Rank 1 goes to the key with the fewest distinct observed values (suppressed
    last), rank ``len(keys)`` to the key with the most (suppressed first); ties
    keep the order of ``keys``.

    Parameters
    ----------
    frame : pandas.DataFrame
        The microdata.
    keys : str or sequence of str
        The key columns to rank.

    Returns
    -------
    dict of str to int
        Each key's rank, 1 = most important; the ``importance`` argument of
        :func:`local_suppression`.
    """
    frame = check_frame(frame)
    keys = check_columns(frame, keys, "keys")
    n_levels = np.array([frame[k].nunique(dropna=True) for k in keys])
    order = np.argsort(n_levels, kind="stable")
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(1, len(keys) + 1)
    return {k: int(r) for k, r in zip(keys, rank, strict=True)}


def _importance_ranks(
    frame: pd.DataFrame, keys: list[str], importance: Any
) -> dict[str, int]:
    if importance is None:
        return default_importance(frame, keys)
    if isinstance(importance, Mapping):
        unknown = [k for k in importance if k not in keys]
        absent = [k for k in keys if k not in importance]
        if unknown or absent:
            raise InputError(
                f"importance must give one rank per key: unknown {unknown}, missing {absent}; "
                f"use the keys {keys}"
            )
        values = [importance[k] for k in keys]
    else:
        values = list(importance)
        if len(values) != len(keys):
            raise InputError(
                f"importance has {len(values)} entries for {len(keys)} keys; give one rank "
                "per key (1 = most important, suppressed last)"
            )
    try:
        values = [float(v) for v in values]
    except (TypeError, ValueError):
        raise InputError(
            f"importance {values!r} must be numbers; give ranks, 1 = most important"
        ) from None
    if not all(np.isfinite(values)):
        raise InputError("importance must be finite numbers; give ranks, 1 = most important")
    return dict(zip(keys, values, strict=True))


# --------------------------------------------------------------------------- greedy


def _greedy(
    codes: np.ndarray,
    stratum: np.ndarray,
    n_strata: int,
    radices: Sequence[int],
    k_record: np.ndarray,
    priority: np.ndarray,
    max_passes: int,
) -> tuple[np.ndarray, int]:
    """Suppress (set to -1) entries of ``codes`` in place until every f_i >= k_i.

    ``priority[j]`` orders the keys: lower values are suppressed first.
    Returns (codes, number of passes).
    """
    n_keys = codes.shape[1]
    key_order = np.argsort(priority, kind="stable")  # least important first
    passes = 0
    while True:
        cell, rows, counts, cs = _distinct(codes, stratum, radices, n_strata)
        w = counts.astype(np.float64)
        k_cell = np.zeros(rows.shape[0], dtype=np.int64)
        k_cell[cell] = k_record
        fk = _wildcard_counts(rows, w, rows, radices, cs, cs, n_strata)
        viol = np.flatnonzero(fk < k_cell)
        if viol.size == 0:
            return codes, passes
        if passes >= max_passes:  # pragma: no cover - guarded by the monotonicity argument
            raise RuntimeError("local suppression did not converge; this is a bug")
        passes += 1
        v_rows = rows[viol]
        v_strata = cs[viol]
        # New frequency of each violating cell if key j alone were suppressed there.
        gain = np.zeros((viol.size, n_keys), dtype=bool)
        observed = v_rows >= 0
        for j in range(n_keys):
            sel = np.flatnonzero(observed[:, j])
            if sel.size == 0:
                continue
            q = v_rows[sel].copy()
            q[:, j] = -1
            fj = _wildcard_counts(rows, w, q, radices, cs, v_strata[sel], n_strata)
            gain[sel, j] = fj > fk[viol][sel]
        # First key in importance order (least important first) that raises f;
        # failing that, the first observed key in that order.
        gain_o = gain[:, key_order]
        obs_o = observed[:, key_order]
        has_gain = gain_o.any(axis=1)
        pick = np.where(has_gain, gain_o.argmax(axis=1), obs_o.argmax(axis=1))
        chosen = key_order[pick]
        # A violating cell whose keys are all missing would match its whole stratum,
        # which is >= k_record by construction, so ``obs_o`` has a True in every row.
        to_cell = np.full(rows.shape[0], -1, dtype=np.int64)
        to_cell[viol] = chosen
        col = to_cell[cell]
        rec = np.flatnonzero(col >= 0)
        codes[rec, col[rec]] = -1


# --------------------------------------------------------------------------- sequential


#: Lookup keys (distinct queued patterns x missingness masks x keys) held by one block of
#: the sequential method's distance-1 tables: bounds their memory (a few int64 arrays of
#: twice this length while they are built, about 100 MB).
_SEQUENTIAL_BLOCK_KEYS = 1_000_000

#: The distance-1 tables pack a blanked key tuple and its table number into one int64;
#: when (number of tables) x (product of the radices) reaches this, the pass falls back
#: to the one-hot distance products (:func:`_sequential_pass_products`).
_SEQUENTIAL_KEY_LIMIT = 2**62

#: Cost of keeping one key of a distance-1 table current relative to comparing one key
#: of one pattern in a scan (measured, order of magnitude): decides which queued
#: patterns get tables (:func:`_sequential_pass`).
_SEQUENTIAL_TABLE_BREAK_EVEN = 150

#: Cells of the block distance matrix (query patterns x patterns) computed at once by the
#: fallback: bounds its memory (float32: 4 bytes each) and its BLAS call size.
_SEQUENTIAL_BLOCK_CELLS = 4_000_000


def _pattern_features(pats: np.ndarray, offsets: np.ndarray, n_features: int,
                      sign: float) -> np.ndarray:
    """Rows ``[observed_1..observed_p, sign * one-hot of each observed level]`` (float32).

    The product of query features (sign -1) and pattern features (sign +1) is the
    Hamming distance with missing values as wildcards: the keys observed in both
    minus the keys equal in both. One BLAS product replaces p elementwise passes.
    """
    n, p = pats.shape
    out = np.zeros((n, n_features), dtype=np.float32)
    obs = pats >= 0
    out[:, :p] = obs
    r, c = np.nonzero(obs)
    out[r, p + offsets[c] + pats[r, c]] = sign
    return out


def _move_to_blanked(all_pats: np.ndarray, cnt: np.ndarray, index: dict, q: int, col: int,
                     n_cur: int) -> tuple[int, int, bool]:
    """Move one record from pattern ``q`` to the same pattern with key ``col`` blanked.

    The blanked pattern may be new (appended at ``n_cur``, recorded in ``index``), or
    one present or emptied earlier. Returns its number, the new ``n_cur`` and whether
    it is new (the caller then adds its own representation of it).
    """
    cnt[q] -= 1
    new = all_pats[q].copy()
    new[col] = -1
    key = new.tobytes()
    u = index.get(key)
    created = u is None
    if created:
        u = n_cur
        n_cur += 1
        index[key] = u
        all_pats[u] = new
    cnt[u] += 1
    return u, n_cur, created


def _scan_nearest(
    cols: np.ndarray, cnt: np.ndarray, n_cur: int, q: int, key_order: np.ndarray
) -> int:
    """Blanked key of a record of pattern ``q``, by its distance to every present pattern.

    The rule of :func:`_sequential_pass` by per-key comparison (``cols`` holds the
    patterns column by column, ``cols[j, u]``). -1 when every present pattern matches.
    """
    qp = cols[:, q]
    d = np.zeros(n_cur, dtype=np.int16)
    for j in np.flatnonzero(qp >= 0):
        c = cols[j, :n_cur]
        d += (c != qp[j]) & (c >= 0)
    d[cnt[:n_cur] == 0] = 0  # absent patterns never count
    pos = d > 0
    if not pos.any():
        return -1
    nb = cols[:, np.flatnonzero(d == d[pos].min())]
    differs = ((nb >= 0) & (nb != qp[:, None]) & (qp >= 0)[:, None]).any(axis=1)
    return int(key_order[np.argmax(differs[key_order])])


class _DistanceOneTables:
    """Present patterns at Hamming distance 1 from each query pattern of a block.

    For a query pattern q with missing keys Mq and an observed key j, a present
    pattern u is at distance exactly 1 from q, differing on j, when u_j is observed,
    u_j != q_j, and u agrees with q on every other key observed in both. Grouped by
    u's missing keys R outside Mq and j (R = M minus Mq and j for a missingness
    mask M that some present pattern has), these u are

    - the patterns with u_j observed whose values with Mq and j blanked equal q's
      with Mq, R and j blanked (table N(Mq, j)),
    - minus those among them with u_j = q_j: the patterns whose values with Mq
      blanked equal q's with Mq and R blanked (table X(Mq)).

    So q has such a neighbour at j if ``N - X > 0`` for some M. A blanked tuple is
    packed by mixed radix (a missing value is digit 0, level c is digit c + 1) and
    the table number is prepended, one int64 per key. The tables hold the keys the
    block's queries look up (sorted) and, for each, the number of present patterns
    with it; a pattern that appears or empties adds or removes its keys. A
    pattern has (p + 1) keys per missingness mask of the queries (their
    "classes"), so the tables are worth it only for classes with many queries.
    """

    def __init__(self, qpats: np.ndarray, masks: np.ndarray, weights: np.ndarray,
                 radix_product: int) -> None:
        p = qpats.shape[1]
        self.weights, self.radix_product = weights, radix_product
        qmask = qpats < 0
        classes, qcls = _unique_rows(qmask)
        self.classes_int = classes.astype(np.int64)
        n_c = classes.shape[0]
        # table numbers: N(class c, key j) is c * (p + 1) + j, X(class c) is c * (p + 1) + p
        first_table = np.arange(n_c, dtype=np.int64) * (p + 1)
        self.n_table_r = (first_table[:, None] + np.arange(p)) * radix_product
        self.x_table_r = (first_table + p) * radix_product
        self.n_valid = ~classes
        cq = self._digits(qpats)
        base = cq.sum(axis=1)[:, None] - cq @ masks.T.astype(np.int64)  # q, M blanked
        in_m = masks[None, :, :]
        cj = cq[:, None, :]
        table = first_table[qcls][:, None, None]
        keys_n = (table + np.arange(p)) * radix_product + (
            base[:, :, None] - np.where(in_m, 0, cj))
        keys_x = (table + p) * radix_product + (base[:, :, None] + np.where(in_m, cj, 0))
        valid = np.broadcast_to(~qmask[:, None, :], keys_n.shape)
        n_valid = int(np.count_nonzero(valid))
        shape = keys_n.shape
        keys = np.concatenate([keys_n[valid], keys_x[valid]])
        del keys_n, keys_x, base
        self.keys, inv = np.unique(keys, return_inverse=True)
        del keys
        inv = inv.reshape(-1).astype(np.int32)  # at most 2 x _SEQUENTIAL_BLOCK_KEYS
        # keys of unobserved query keys point to a slot that stays 0
        self.look_n = np.full(shape, self.keys.size, dtype=np.int32)
        self.look_n[valid] = inv[:n_valid]
        self.look_x = np.full(shape, self.keys.size, dtype=np.int32)
        self.look_x[valid] = inv[n_valid:]
        self.count = np.zeros(self.keys.size + 1, dtype=np.int64)
        self.last = self.keys.size - 1

    def _digits(self, pats: np.ndarray) -> np.ndarray:
        return (pats.astype(np.int64) + 1) * self.weights

    def add_all(self, pats: np.ndarray) -> None:
        """Add the keys of present patterns ``pats`` (rows), in chunks."""
        n_c, p = self.n_table_r.shape
        chunk = max(1, _SEQUENTIAL_BLOCK_KEYS // (n_c * (p + 1)))
        for s in range(0, pats.shape[0], chunk):
            part = pats[s:s + chunk]
            c = self._digits(part)
            base = c.sum(axis=1)[:, None] - c @ self.classes_int.T  # u, class blanked
            valid = (part >= 0)[:, None, :] & self.n_valid
            keys_n = self.n_table_r + (base[:, :, None] - c[:, None, :])
            keys_x = self.x_table_r + base
            keys = np.concatenate([keys_n[valid], keys_x.reshape(-1)])
            at = np.minimum(np.searchsorted(self.keys, keys), self.last)
            at = at[self.keys[at] == keys]
            self.count += np.bincount(at, minlength=self.count.size)

    def update(self, pats: np.ndarray, signs: np.ndarray) -> None:
        """Add (sign 1) or remove (-1) the keys of a few patterns (rows).

        One call per record: the pattern it leaves and the one it joins may share keys.
        """
        c = (pats.astype(np.int64) + 1) * self.weights
        base = c.sum(axis=1)[:, None] - c @ self.classes_int.T  # each class blanked
        valid = self.n_valid & (pats >= 0)[:, None, :]
        keys = np.concatenate([
            (self.n_table_r + (base[:, :, None] - c[:, None, :]))[valid],
            (self.x_table_r + base).reshape(-1),
        ])
        sign = np.concatenate([np.repeat(signs, valid.sum(axis=(1, 2))),
                               np.repeat(signs, base.shape[1])])
        at = np.minimum(np.searchsorted(self.keys, keys), self.last)
        found = self.keys[at] == keys
        np.add.at(self.count, at[found], sign[found])

    def keys_at_distance_one(self, row: int) -> np.ndarray:
        """Per key: whether a present pattern at distance 1 from query ``row`` differs on it."""
        return ((self.count[self.look_n[row]] - self.count[self.look_x[row]]) > 0).any(axis=0)


def _unique_rows(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of a boolean matrix and the row number of each.

    ``np.unique(axis=0)``, by bit codes when they fit in int64 (much faster).
    """
    n, p = mask.shape
    if p > 62:
        rows, inv = np.unique(mask, axis=0, return_inverse=True)
        return rows, inv.reshape(-1)
    codes, inv = np.unique(mask @ (np.int64(1) << np.arange(p, dtype=np.int64)),
                           return_inverse=True)
    return (codes[:, None] >> np.arange(p)) & 1 == 1, inv.reshape(-1)


#: Signs of the table updates of one record (pattern left emptied, pattern joined new).
_EVENT_SIGNS = {(True, True): np.array([-1, 1]), (True, False): np.array([-1]),
                (False, True): np.array([1])}


def _sequential_pass(
    pats: np.ndarray,
    counts: np.ndarray,
    queue: np.ndarray,
    key_order: np.ndarray,
    radices: Sequence[int],
) -> np.ndarray:
    """One pass of sdcMicro's record-by-record suppression within one stratum.

    ``pats`` (U, p) are the stratum's distinct key patterns (-1 missing) with their
    record ``counts``; ``queue`` the pattern of each violating record, in processing
    order. Each record in turn is compared with the patterns present *now* (earlier
    records of the pass already carry their new blank); its nearest patterns are
    those at the smallest Hamming distance above 0 (a missing value matches every
    level), and its blanked key is the least important one on which it differs from
    one of them. Returns the blanked key (column) of each queued record, -1 for a
    record that by its turn matches every pattern (nothing left to blank against).

    Patterns, not records, are compared: the choice depends only on which patterns
    exist, and a pass changes that by one pattern emptying or appearing at a time.
    Most records have a pattern at distance 1. For the records whose missingness
    mask many queued records share, those are found by lookups in sorted tables
    (:class:`_DistanceOneTables`, kept current on each event), so such a record
    costs about (missingness masks) x (keys). The others, and records with no
    pattern at distance 1, are compared with every present pattern
    (:func:`_scan_nearest`).
    """
    n_pats, p = pats.shape
    n_queue = queue.size
    radix = [int(r) for r in radices]
    radix_product = int(np.prod(radix, dtype=object))
    n_classes = _unique_rows(pats[np.unique(queue)] < 0)[0].shape[0]
    if radix_product * n_classes * (p + 1) >= _SEQUENTIAL_KEY_LIMIT:
        levels = np.asarray(radix, dtype=np.int64) - 1
        offsets = np.concatenate([[0], np.cumsum(levels)[:-1]]).astype(np.int64)
        return _sequential_pass_products(pats, counts, queue, key_order, offsets,
                                         p + int(levels.sum()))
    weights = np.cumprod([1] + radix[:-1]).astype(np.int64)
    cap = n_pats + n_queue  # each record adds at most one new pattern
    all_pats = np.empty((cap, p), dtype=pats.dtype)
    all_pats[:n_pats] = pats
    cols = np.empty((p, cap), dtype=pats.dtype)  # the same, by key: contiguous scans
    cols[:, :n_pats] = pats.T
    cnt = np.zeros(cap, dtype=np.int64)
    cnt[:n_pats] = counts
    index = {all_pats[u].tobytes(): u for u in range(n_pats)}
    n_cur = n_pats
    chosen = np.empty(n_queue, dtype=np.int64)
    eye = np.eye(p, dtype=bool)
    start = 0
    while start < n_queue:
        present = np.flatnonzero(cnt[:n_cur] > 0)
        present_masks = _unique_rows(all_pats[present] < 0)[0]
        stop = n_queue
        while True:
            uq, qinv = np.unique(queue[start:stop], return_inverse=True)
            qinv = qinv.reshape(-1)
            qmask = all_pats[uq] < 0
            # the masks of the patterns this block's records can create: their own, one
            # key more
            created = (qmask[:, None, :] | eye)[~qmask]
            masks = _unique_rows(np.concatenate([present_masks, created]))[0]
            # Tables for a mask class pay when its records' scans would cost more than
            # building its queries' keys and keeping its keys of every present pattern
            # current.
            classes, q_cls = _unique_rows(qmask)
            n_rec = np.bincount(q_cls[qinv], minlength=classes.shape[0])
            n_q = np.bincount(q_cls, minlength=classes.shape[0])
            n_obs = p - classes.sum(axis=1)
            scan_cost = n_rec * n_obs * present.size
            table_cost = _SEQUENTIAL_TABLE_BREAK_EVEN * (
                (p + 1) * (present.size + 2 * (stop - start)) + n_q * masks.shape[0] * n_obs)
            tabled = np.flatnonzero((scan_cost >= table_cost)[q_cls])
            if tabled.size * masks.shape[0] * p <= _SEQUENTIAL_BLOCK_KEYS or (
                    stop - start == 1):
                break
            stop = start + (stop - start) // 2
        row = np.full(uq.size, -1, dtype=np.int64)
        tables = None
        if tabled.size:
            row[tabled] = np.arange(tabled.size)
            tables = _DistanceOneTables(all_pats[uq[tabled]], masks, weights, radix_product)
            tables.add_all(all_pats[present])
        for t in range(start, stop):
            qi = qinv[t - start]
            q = uq[qi]
            col = -1
            if row[qi] >= 0:
                at_one = tables.keys_at_distance_one(row[qi])
                if at_one.any():
                    col = int(key_order[np.argmax(at_one[key_order])])
            if col < 0:
                col = _scan_nearest(cols, cnt, n_cur, q, key_order)
                if col < 0:
                    # earlier blanks of the pass made every pattern match this record: it
                    # needs no blank (sdcMicro stops here: "the length of the index vector
                    # is 0")
                    chosen[t] = -1
                    continue
            chosen[t] = col
            u, n_cur, is_new = _move_to_blanked(all_pats, cnt, index, q, col, n_cur)
            if is_new:
                cols[:, u] = all_pats[u]
            if tables is not None:
                gone, came = bool(cnt[q] == 0), bool(cnt[u] == 1)
                if gone or came:
                    changed = [v for v, e in ((q, gone), (u, came)) if e]
                    tables.update(all_pats[changed], _EVENT_SIGNS[gone, came])
        start = stop
    return chosen


def _sequential_pass_products(
    pats: np.ndarray,
    counts: np.ndarray,
    queue: np.ndarray,
    key_order: np.ndarray,
    offsets: np.ndarray,
    n_features: int,
) -> np.ndarray:
    """:func:`_sequential_pass` by one-hot distance products (same arguments and result).

    The fallback for key sets whose packed tuples would overflow int64. The
    distances of a block of queued records to all patterns are one BLAS product;
    within the block a pattern that empties is masked and a pattern that appears
    gets its column, so every record sees exactly the current patterns. Each
    record scans its row: quadratic in the violating records.
    """
    n_pats, p = pats.shape
    n_queue = queue.size
    cap = n_pats + n_queue  # each record adds at most one new pattern
    all_pats = np.empty((cap, p), dtype=pats.dtype)
    all_pats[:n_pats] = pats
    cnt = np.zeros(cap, dtype=np.int64)
    cnt[:n_pats] = counts
    index = {all_pats[u].tobytes(): u for u in range(n_pats)}
    feats = np.zeros((cap, n_features), dtype=np.float32)
    feats[:n_pats] = _pattern_features(pats, offsets, n_features, 1.0)
    n_cur = n_pats
    far = np.float32(p + 1)  # no pattern is this far: marks absent patterns
    chosen = np.empty(n_queue, dtype=np.int64)
    block = max(1, min(n_queue, _SEQUENTIAL_BLOCK_CELLS // max(cap, 1)))
    for start in range(0, n_queue, block):
        stop = min(start + block, n_queue)
        uq, qinv = np.unique(queue[start:stop], return_inverse=True)
        qf = _pattern_features(all_pats[uq], offsets, n_features, -1.0)
        n0 = n_cur
        width = n0 + (stop - start)  # room for the patterns this block creates
        dist = np.full((uq.size, width), far, dtype=np.float32)
        dist[:, :n0] = qf @ feats[:n0].T
        dist[:, :n0][:, cnt[:n0] == 0] = far
        for t in range(stop - start):
            qi = qinv[t]
            q = uq[qi]
            row = dist[qi]
            m = np.min(np.where(row > 0, row, far))
            if m >= far:
                # earlier blanks of the pass made every pattern match this record: it
                # needs no blank (sdcMicro stops here: "the length of the index vector is 0")
                chosen[start + t] = -1
                continue
            near = np.flatnonzero(row == m)
            qp = all_pats[q]
            nb = all_pats[near]
            differs = ((nb >= 0) & (nb != qp) & (qp >= 0)).any(axis=0)
            col = int(key_order[np.argmax(differs[key_order])])
            chosen[start + t] = col
            u, n_cur, created = _move_to_blanked(all_pats, cnt, index, q, col, n_cur)
            if cnt[q] == 0:
                dist[:, q] = far
            if created:
                feats[u] = _pattern_features(all_pats[u][None, :], offsets, n_features, 1.0)[0]
            if cnt[u] == 1 and u < width:
                dist[:, u] = qf @ feats[u]
    return chosen


def _sequential(
    codes: np.ndarray,
    stratum: np.ndarray,
    n_strata: int,
    radices: Sequence[int],
    k_record: np.ndarray,
    priority: np.ndarray,
    max_passes: int,
) -> tuple[np.ndarray, int]:
    """sdcMicro's ``localSuppression`` order: suppress record by record (in place).

    Each pass takes the records with f_i < k_i in increasing order of f_i (sdcMicro:
    decreasing risk 1/f_i; ties in file order) and blanks one key in each
    (:func:`_sequential_pass`); the frequencies are recomputed after the pass, as
    sdcMicro does, and passes repeat until every f_i >= k_i. Strata never share a
    neighbour, so each is searched on its own. ``priority[j]`` orders the keys:
    lower values are suppressed first. Returns (codes, number of passes).
    """
    key_order = np.argsort(priority, kind="stable")  # least important first
    levels = np.asarray(radices, dtype=np.int64) - 1
    small = np.int16 if int(levels.max(initial=0)) < np.iinfo(np.int16).max else np.int64
    passes = 0
    while True:
        cell, rows, counts, cs = _distinct(codes, stratum, radices, n_strata)
        fk = _wildcard_counts(rows, counts.astype(np.float64), rows, radices, cs, cs, n_strata)
        f_rec = np.rint(fk[cell]).astype(np.int64)
        violating = np.flatnonzero(f_rec < k_record)
        if violating.size == 0:
            return codes, passes
        if passes >= max_passes:  # pragma: no cover - guarded by the monotonicity argument
            raise RuntimeError("local suppression did not converge; this is a bug")
        passes += 1
        # sdcMicro's order: decreasing risk 1/f, ties in file order (R's stable order)
        violating = violating[np.lexsort((violating, f_rec[violating]))]
        v_strata = cs[cell[violating]]
        for s in np.unique(v_strata):
            recs = violating[v_strata == s]
            in_s = np.flatnonzero(cs == s)
            local = np.full(rows.shape[0], -1, dtype=np.int64)
            local[in_s] = np.arange(in_s.size)
            cols = _sequential_pass(
                rows[in_s].astype(small), counts[in_s], local[cell[recs]], key_order, radices
            )
            done = cols >= 0
            codes[recs[done], cols[done]] = -1


@stamped
def local_suppression(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    k: int | Sequence[int] = 3,
    *,
    importance: Mapping[str, float] | Sequence[float] | None = None,
    strata: Sequence[str] | str | None = None,
    combs: Sequence[int] | int | None = None,
    method: str = "greedy",
    linked: Mapping[str, Sequence[str] | str] | None = None,
    household: str | None = None,
    household_keys: Sequence[str] | str | None = None,
) -> ProtectionResult:
    """Suppress key values until the file is k-anonymous (seed 001, section 4.1.2).

    Missing values (existing and new) are wildcards that match every level,
    so k-anonymity is judged by :func:`wildcard_frequencies` (seed 001,
    section 3.2: f_i >= k for every record). Two algorithms (``method``), both
    described in the module docstring: ``"greedy"`` blanks, in every violating
    key pattern at once, the least important key whose suppression raises its
    frequency; ``"sequential"`` is sdcMicro's ``localSuppression``/``kAnon``
    (record by record, each record's blank taken from its nearest records,
    the file updated after every record), which usually suppresses fewer values.

    Parameters
    ----------
    frame : pandas.DataFrame
        The microdata; not modified.
    keys : str or sequence of str
        Categorical key variables.
    k : int or sequence of int, default 3
        The k of k-anonymity. With ``combs``, one k per entry of ``combs`` (or
        one k for all). Within a stratum of fewer than k records, k is lowered
        to the stratum size and the summary counts those strata
        (``strata_below_k``). This differs from current sdcMicro, whose
        ``suppSubset`` stops with an error ("k is larger or equal the group
        size (in at least one stratum)"); only its older versions lowered k.
    importance : mapping or sequence of numbers, optional
        Rank of each key, 1 = most important (suppressed last), as in
        sdcMicro's ``localSuppression``. Default :func:`default_importance`
        (keys with more levels are suppressed first).
    strata : str or sequence of str, optional
        Reach k-anonymity within each stratum (records of different strata
        never match). Stratum columns must not have missing values.
    combs : int or sequence of int, optional
        Sizes m of key subsets: k-anonymity is reached for every subset of m
        keys, in the order given (sdcMicro's ``combs``). Default: the full set
        of keys only.
    method : {"greedy", "sequential"}, default "greedy"
        ``"sequential"`` reproduces sdcMicro's ``localSuppression`` (and
        ``kAnon``) with ``alpha = 1``: on sdcMicro's ``testdata2`` (keys urbrur,
        roof, walls, water, electcon, relat, sex; k = 2) it suppresses 97 values
        as sdcMicro does, 109 with strata of ``cut(age, 5)``, where the greedy
        suppresses 109 and 139. Two deliberate differences from sdcMicro: with
        ``combs`` each key subset ranks the importance of *its* keys (sdcMicro
        indexes ``importance`` by the keys' column numbers in the data, which
        reverses or loses the ranks unless the keys are the first columns), and
        frequencies are always those of the full file (sdcMicro thins key
        combinations with more than k records to k first; see the module
        docstring).
    linked : mapping of str to str or sequence of str, optional
        Linked ("ghost") variables: key -> the columns that depend on it, e.g.
        ``{"region": ["district"]}``. Every value of the key this step blanks is
        blanked in its linked columns too, so that a district cannot reveal the
        region it lies in (sdcMicro's ``ghostVars`` of ``createSdcObj`` and
        ``addGhostVars``: "all suppressions of the key-variable being also applied
        on the corresponding 'ghost'-variables"). Linked columns take no part in
        the frequencies and may be neither keys nor strata. One deliberate
        difference: sdcMicro copies every missing value of the key after the step,
        also those missing in the input; here only the step's own blanks are copied,
        so no value the input released is taken back for a reason the step did not
        create (the two differ only where a key is missing in the input while its
        linked column is observed).
    household : str, optional
        Column of household ids (no missing ids; not a key, not a linked column),
        used with ``household_keys``.
    household_keys : sequence of str or "auto", optional
        Keys to keep consistent within households: after k-anonymity is reached,
        each of these keys that the step blanked in one member of a household is
        blanked in every member where it is observed (and in its linked columns).
        Why: a household-level key (one value per household, e.g. household size
        or the household's region) blanked in one member but shown by a mate is
        read off the mate once the household id is released, so the blank hides
        nothing (:func:`household_completion` reads it as shown). ``"auto"``: the keys with
        one shown value in every household of ``frame`` (:func:`household_level_keys`; an
        item-missing member is no other value, and is never blanked). Only blanks
        are added, so every wildcard frequency can only grow and the file stays
        k-anonymous. A listed key need not be household-level
        (its blank then spreads to members whose values differ).

    Returns
    -------
    ProtectionResult
        ``frame``: a copy with suppressed values set to missing (integer keys
        become nullable ``Int64``). ``log``: one row per suppressed value, with
        columns ``record`` (0-based position), ``variable``, ``original``,
        ``stratum`` (the stratum label, when ``strata`` is given).
        ``summary``: ``suppressions`` (dict variable -> count of new missing
        values), ``total_suppressions``, ``missing_before`` (dict),
        ``importance``, ``k``, ``combs``, ``passes``, ``strata_below_k``,
        ``algorithm`` (``method``); with ``linked`` also ``linked`` (key -> list
        of columns) and ``linked_suppressions`` (linked column -> count of new
        missing values; those values are in ``log`` too, one row each, with
        ``linked_to`` naming the key). With ``household``: ``household``,
        ``household_keys`` (the keys kept consistent, ``"auto"`` resolved) and
        ``household_suppressions`` (key -> count of the values blanked because a
        household mate's was; included in ``suppressions``), and ``log`` gets a
        column ``household_mate`` (True for those values, and for linked values
        that followed them).

    Raises
    ------
    InputError
        Before any work: unknown columns, bad k, importance, combs, method or
        linked; a ``household`` column that is missing, has missing ids, is a key
        or a linked column; ``household_keys`` that are not keys of the step, or
        without ``household``; ``household`` without ``household_keys``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": list("mmmff"), "age": ["20s"] * 3 + ["30s", "40s"]})
    >>> res = local_suppression(df, ["sex", "age"], k=2)
    >>> res.summary["suppressions"]
    {'sex': 0, 'age': 2}
    """
    frame = check_frame(frame)
    if not isinstance(method, str) or method not in _METHODS:
        raise InputError(
            f"method={method!r} must be one of {list(_METHODS)}: 'greedy' (all violating "
            "key patterns per pass) or 'sequential' (sdcMicro's localSuppression, record by "
            "record; usually fewer suppressions)"
        )
    keys = check_columns(frame, keys, "keys")
    strata_l = check_columns(frame, strata, "strata") if strata is not None else None
    if strata_l and set(strata_l) & set(keys):
        both = sorted(set(strata_l) & set(keys))
        raise InputError(
            f"columns {both} are both keys and strata: suppression could blank a key value "
            "that is also its record's stratum, and records that differ on a key never "
            "match anyway; leave them out of the strata (or stratify by a copy of the "
            "column under another name)"
        )
    if combs is None:
        comb_sizes = [len(keys)]
    else:
        comb_sizes = [combs] if np.isscalar(combs) else list(combs)
        bad = [
            c
            for c in comb_sizes
            if not (isinstance(c, (int, np.integer)) and 1 <= c <= len(keys))
        ]
        if bad or not comb_sizes:
            raise InputError(
                f"combs={combs!r} must be subset sizes between 1 and {len(keys)} (the number "
                "of keys); e.g. combs=[3, 2]"
            )
    ks = [k] if np.isscalar(k) else list(k)
    if len(ks) == 1:
        ks = ks * len(comb_sizes)
    if len(ks) != len(comb_sizes):
        raise InputError(
            f"k has {len(ks)} values for {len(comb_sizes)} subset sizes in combs; give one k "
            "or one k per entry of combs"
        )
    for kk in ks:
        if not isinstance(kk, (int, np.integer)) or isinstance(kk, bool) or kk < 1:
            raise InputError(f"k={kk!r} must be an integer >= 1 (the k of k-anonymity); e.g. k=3")

    links = _check_linked(frame, keys, strata_l, linked)
    hh, hh_keys = _check_households(frame, keys, links, household, household_keys)
    ranks = _importance_ranks(frame, keys, importance)
    codes, levels = _code_keys(frame, keys)
    radices = [len(lev) + 1 for lev in levels]
    stratum, n_strata = _code_strata(frame, strata_l)
    stratum_size = np.bincount(stratum, minlength=n_strata)
    missing_before = codes < 0

    run = _METHODS[method]
    passes = 0
    strata_below = 0
    for size, kk in zip(comb_sizes, ks, strict=True):
        k_rec = np.minimum(int(kk), stratum_size[stratum])
        strata_below = max(strata_below, int(np.count_nonzero(stratum_size < kk)))
        for subset in itertools.combinations(range(len(keys)), size):
            sub = list(subset)
            # Larger rank = less important = suppressed first: priority = -rank.
            prio = -np.array([ranks[keys[j]] for j in sub], dtype=float)
            sub_codes = codes[:, sub].copy()
            sub_codes, p = run(
                sub_codes,
                stratum,
                n_strata,
                [radices[j] for j in sub],
                k_rec,
                prio,
                max_passes=len(sub) + 1,
            )
            codes[:, sub] = sub_codes
            passes += p

    new = (codes < 0) & ~missing_before
    mates = _household_blanks(frame, keys, new, hh, hh_keys)  # k-anonymous by now
    out, log, linked_counts = _blanked_output(frame, keys, new, links, mates)
    if strata_l:
        names = np.asarray(code_strata(frame, strata_l)[1], dtype=object)
        log["stratum"] = names[stratum[log["record"].to_numpy()]]
    per_var = {key: int(new[:, j].sum()) for j, key in enumerate(keys)}
    summary = {
        "method": "local_suppression",
        "keys": keys,
        "k": [int(x) for x in ks] if combs is not None else int(ks[0]),
        "combs": comb_sizes if combs is not None else None,
        "importance": {key: ranks[key] for key in keys},
        "strata": strata_l,
        "suppressions": per_var,
        "total_suppressions": int(new.sum()),
        "missing_before": {key: int(missing_before[:, j].sum()) for j, key in enumerate(keys)},
        "passes": passes,
        "strata_below_k": strata_below,
        "algorithm": method,
    }
    if links:
        summary["linked"] = links
        summary["linked_suppressions"] = linked_counts
    summary |= _household_summary(household, keys, hh_keys, mates)
    return ProtectionResult(out, log, summary)


#: The algorithms of :func:`local_suppression` (its ``method``).
_METHODS = {"greedy": _greedy, "sequential": _sequential}


# --------------------------------------------------------------------------- risk threshold


def _record_values(frame: pd.DataFrame, values: Any, what: str) -> np.ndarray:
    """Per-record numbers in the frame's row order (a Series is aligned by its index)."""
    if isinstance(values, pd.Series) and not values.index.equals(frame.index):
        if not (values.index.is_unique and frame.index.is_unique) or len(values) != len(
            frame
        ) or values.index.get_indexer(frame.index).min(initial=0) < 0:
            raise InputError(
                f"{what} is a Series whose index is not the frame's; pass one value per "
                "record, indexed like the frame (e.g. assess_closed_form(md).records['risk'] "
                "for md built on this frame) or as an array in the frame's row order"
            )
        values = values.reindex(frame.index)
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be numbers, one per record") from None
    if arr.shape != (len(frame),):
        raise InputError(
            f"{what} has shape {arr.shape} but the frame has {len(frame)} records; pass one "
            "value per record, in the frame's row order"
        )
    return arr


def default_risk_key(frame: pd.DataFrame, keys: Sequence[str]) -> str:
    """The key :func:`risk_suppression` blanks by default: the least important one.

    The key ranked last by :func:`default_importance` (the one with the most levels),
    which :func:`local_suppression` also blanks first; ``sdcbayes protect`` names it
    before any work with this same function.
    """
    ranks = default_importance(frame, list(keys))
    return max(keys, key=lambda k: ranks[k])


def _risk_digest(risk: Any) -> dict[str, Any]:
    """The per-record risks as :func:`risk_suppression`'s stamp holds them: a summary.

    Their number, how many are NaN and the largest; a list of n floats has no place in a
    provenance record. Order-free, so a Series aligned by its index gives the same.
    """
    r = np.asarray(risk, dtype=np.float64).reshape(-1)
    finite = np.isfinite(r)
    return {"n": int(r.size), "n_missing": int(np.isnan(r).sum()),
            "max": float(r[finite].max()) if finite.any() else None}


@stamped(summarise={"risk": _risk_digest})
def risk_suppression(
    frame: pd.DataFrame,
    keys: Sequence[str] | str,
    risk: Any,
    threshold: float = 0.15,
    *,
    key: str | None = None,
    linked: Mapping[str, Sequence[str] | str] | None = None,
    household: str | None = None,
    household_keys: Sequence[str] | str | None = None,
) -> ProtectionResult:
    """Blank one key in every record whose individual risk exceeds ``threshold``.

    sdcMicro's ``localSupp(obj, threshold, keyVar)`` (R/localSupp.R: the records
    with risk r_i > threshold get the key ``keyVar`` set to missing, one key, one
    pass) and mu-Argus's individual-risk protection, which suppresses the key
    values of the records above a risk threshold (Franconi and Polettini,
    "Individual risk estimation in mu-Argus"; seed 001, sections 3.3 and 4.1.2).
    The blank is a wildcard (module docstring), so after the step such a record
    matches every level of the key and its risk can only fall. Nothing is
    recomputed here: a record still above the threshold afterwards needs another
    key (call again with the risk of the result, as sdcMicro's example says:
    "select another keyVar and run localSupp once again").

    Parameters
    ----------
    frame : pandas.DataFrame
        The microdata; not modified.
    keys : str or sequence of str
        The key variables the risk was measured on; ``key`` is one of them.
    risk : array-like or pandas.Series
        Individual risk r_i of every record, e.g. the closed form
        ``assess_closed_form(Microdata(frame, keys, weight=...)).records["risk"]``
        (Benedetti-Franconi, seed 004 eq. 1-3; with ``method="approx"`` it is the
        risk sdcMicro's ``localSupp`` reads from its object, the default ``"exact"``
        differs from it) or a posterior mean risk. A Series is aligned to
        the frame by its index, anything else is taken in row order. A NaN risk
        (a record a model dropped) is never above the threshold.
    threshold : float, default 0.15
        Records with risk strictly above it are suppressed (sdcMicro's default
        0.15); 0 <= threshold < 1.
    key : str, optional
        The key to blank (sdcMicro's ``keyVar``, which it requires). Default: the
        least important key of :func:`default_importance`, the one with the most
        levels, which :func:`local_suppression` also blanks first.
    linked : mapping of str to str or sequence of str, optional
        Linked ("ghost") columns, as in :func:`local_suppression`: the blanks of
        ``key`` are copied to the columns linked to it (sdcMicro's ``localSupp``
        transfers them to its ``ghostVars`` too).
    household, household_keys : optional
        As in :func:`local_suppression`: where ``key`` is one of ``household_keys``
        (``"auto"``: the keys with one value in every household of ``frame``), its
        blank in one member of a household is copied to every member, so that no
        mate shows the blanked value once the household id is released.

    Returns
    -------
    ProtectionResult
        ``frame``: a copy with the key blanked in the records above the
        threshold. ``log``: one row per blanked value (``record``, ``variable``,
        ``original``; ``linked_to`` with ``linked``; ``household_mate`` with
        ``household``). ``summary``: ``keys``, ``key``, ``threshold``,
        ``n_above_threshold`` (records with r_i above it), ``already_missing`` (of
        those, records whose key was missing already), ``suppressions`` (key ->
        count, household mates' blanks included), ``total_suppressions``, with
        ``linked`` ``linked`` and ``linked_suppressions``, and with ``household``
        ``household``, ``household_keys`` and ``household_suppressions``.

    Raises
    ------
    InputError
        Before any work: unknown columns, a ``key`` that is not among ``keys``, a
        threshold outside [0, 1), risks that are not one number in [0, 1] (or NaN)
        per record, bad ``linked``, ``household`` or ``household_keys`` (as
        :func:`local_suppression`).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": list("mmff"), "age": ["20s", "20s", "30s", "40s"]})
    >>> res = risk_suppression(df, ["sex", "age"], [0.1, 0.1, 0.6, 0.2], 0.15, key="age")
    >>> res.frame["age"].tolist()
    ['20s', '20s', nan, nan]
    """
    frame = check_frame(frame)
    keys = check_columns(frame, keys, "keys")
    if not _is_number(threshold) or not 0 <= float(threshold) < 1:
        raise InputError(
            f"threshold {threshold!r} must be a risk in [0, 1): records whose individual "
            "risk is above it are suppressed (sdcMicro's default 0.15)"
        )
    threshold = float(threshold)
    if key is None:
        key = default_risk_key(frame, keys)
    elif key not in keys:
        raise InputError(f"key {key!r} is not among the keys {keys}; choose one of them")
    links = _check_linked(frame, keys, None, linked)
    hh, hh_keys = _check_households(frame, keys, links, household, household_keys)
    # only the chosen key is blanked: links of the other keys have nothing to follow
    links = {key: links[key]} if key in links else {}
    r = _record_values(frame, risk, "risk")
    bad = np.flatnonzero(~np.isnan(r) & ((r < 0) | (r > 1)))
    if bad.size:
        raise InputError(
            f"risk holds values outside [0, 1] (record {bad[0]}: {r[bad[0]]:g}); pass the "
            "individual risks r_i, probabilities of re-identification"
        )
    above = np.nan_to_num(r, nan=-1.0) > threshold
    j = keys.index(key)
    observed = frame[key].notna().to_numpy()
    new = np.zeros((len(frame), len(keys)), dtype=bool)
    new[:, j] = above & observed
    mates = _household_blanks(frame, keys, new, hh, hh_keys)
    out, log, linked_counts = _blanked_output(frame, keys, new, links, mates)
    summary = {
        "method": "risk_suppression",
        "keys": keys,
        "key": key,
        "threshold": threshold,
        "n_above_threshold": int(above.sum()),
        "already_missing": int((above & ~observed).sum()),
        "suppressions": {key: int(new[:, j].sum())},
        "total_suppressions": int(new.sum()),
    }
    if links:
        summary["linked"] = links
        summary["linked_suppressions"] = linked_counts
    summary |= _household_summary(household, keys, hh_keys, mates)
    # stamped by @stamped, the per-record risks summarised (_risk_digest)
    return ProtectionResult(out, log, summary)


def _is_number(v: Any) -> bool:
    """A real, finite number (not a boolean)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return False
    return bool(np.isfinite(v))


# --------------------------------------------------------------------------- output


def _check_linked(
    frame: pd.DataFrame, keys: list[str], strata: list[str] | None, linked: Any
) -> dict[str, list[str]]:
    """``linked`` as key -> list of linked columns, checked (:class:`InputError`)."""
    if linked is None:
        return {}
    if not isinstance(linked, Mapping):
        raise InputError(
            f"linked must map a key to the columns that depend on it, e.g. "
            f"{{'region': ['district']}}; got {linked!r}"
        )
    out: dict[str, list[str]] = {}
    # the wording is also `sdcbayes protect --linked`'s (it names the option in place of
    # the leading "linked", and adds the weight, which only it knows)
    for key, cols in linked.items():
        if key not in keys:
            raise InputError(
                f"linked: {key!r} is not among the keys the step suppresses "
                f"({', '.join(map(str, keys))}); link columns to one of them"
            )
        cols_l = check_columns(frame, cols, f"linked columns of {key!r}")
        for c in cols_l:
            role = "a key" if c in keys else "a stratum" if c in (strata or ()) else None
            if role:
                raise InputError(
                    f"linked: {c!r} (linked to {key!r}) is {role} of the step; a linked "
                    "column only follows its key's blanks: leave it out of linked"
                )
        out[key] = cols_l
    return out


def household_level_keys(frame: pd.DataFrame, keys: Sequence[str] | str,
                         household: str) -> list[str]:
    """The keys with one value in every household: ``household_keys="auto"``.

    Judged among the shown values: a household whose non-missing values of the key agree
    is consistent, a missing value being no second value (an item-missing member hides
    its own value, not the household's; a mate still shows it). A household with no
    shown value is consistent too. (Were a missing value a value of its own, one
    item-missing member anywhere would take the key off the list for the whole file.)

    Parameters
    ----------
    frame : pandas.DataFrame
    keys : str or sequence of str
        The keys to look at, returned in this order.
    household : str
        Column of household ids; records with a missing id are left out.

    Returns
    -------
    list of str
    """
    frame = check_frame(frame)
    keys = check_columns(frame, keys, "keys")
    hh = np.asarray(pd.factorize(frame[check_columns(frame, household, "household")[0]])[0],
                    dtype=np.int64)
    out = []
    for key in keys:
        codes = np.asarray(pd.factorize(frame[key])[0], dtype=np.int64)  # -1: missing
        seen = (hh >= 0) & (codes >= 0)
        pairs = np.unique(hh[seen] * (int(codes.max(initial=0)) + 1) + codes[seen])
        # one (household, value) pair per household showing a value
        if len(pairs) == len(np.unique(hh[seen])):
            out.append(key)
    return out


def _numbers(col: pd.Series) -> np.ndarray:
    """A column's values as floats (NaN where missing or not a number; "3" counts as 3)."""
    return pd.to_numeric(pd.Series(np.asarray(col, dtype=object), index=col.index),
                         errors="coerce").to_numpy(float)


def _household_codes(frame: pd.DataFrame, household: str) -> tuple[np.ndarray, np.ndarray]:
    """Household codes (-1 for a missing id) and each record's household's record count.

    A record with a missing id counts 0.
    """
    hh = np.asarray(pd.factorize(frame[household])[0], dtype=np.int64)
    has_id = hh >= 0
    size = np.zeros(len(frame), dtype=np.int64)
    if has_id.any():
        size[has_id] = np.bincount(hh[has_id])[hh[has_id]]
    return hh, size


def household_count_keys(frame: pd.DataFrame, keys: Sequence[str] | str,
                         household: str) -> list[str]:
    """The keys that equal, in every household, the household's number of records.

    In a sample of whole households a key such as household size is, in every household,
    the number of records carrying the household's id; once the id is released it can be
    counted off the file, whatever a step blanked. Judged among the shown values (a
    missing value is ignored, as in :func:`household_level_keys`): a key whose shown
    values are all numbers (a level written as text, ``"3"``, counts as 3) equal to their
    household's record count, at least one value shown. Records with a missing id are
    left out. Whatever a step makes of such a key (a blank, a band, a PRAMmed value), the
    intruder holding the ids counts the exact value: :func:`household_completion` writes
    it back.

    Parameters
    ----------
    frame : pandas.DataFrame
    keys : str or sequence of str
        The keys to look at, returned in this order.
    household : str
        Column of household ids.

    Returns
    -------
    list of str
    """
    frame = check_frame(frame)
    keys = check_columns(frame, keys, "keys")
    household = check_columns(frame, household, "household")[0]
    hh, size = _household_codes(frame, household)
    out = []
    for key in household_level_keys(frame, keys, household):
        seen = frame[key].notna().to_numpy() & (hh >= 0)
        values = _numbers(frame[key])[seen]
        if seen.any() and not np.isnan(values).any() and np.all(values == size[seen]):
            out.append(key)
    return out


def _count_in_type(col: pd.Series, count: int) -> Any:
    """``count`` written as ``col`` writes its values (for a count no record of it shows).

    A numeric column (or categorical of numbers) gets the number in its dtype, a column
    of text the digits, any other column the integer.
    """
    dtype = col.dtype.categories.dtype if isinstance(col.dtype, pd.CategoricalDtype) \
        else col.dtype
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        return pd.array([count], dtype=dtype)[0]
    shown = col.dropna()
    if pd.api.types.is_string_dtype(dtype) and (
            not len(shown) or all(isinstance(v, str) for v in shown.to_numpy(dtype=object))):
        return str(count)
    return count


def _exact_counts(original: pd.Series, shown: pd.Series, size: np.ndarray,
                  has_id: np.ndarray) -> tuple[pd.Series, int]:
    """A count key as the released ids give it: each household's record count.

    ``original``: the key in the input (its representation is kept: a record whose input
    value equals its count keeps that value; any other record with an id gets the value
    the input writes for its count, the first record showing it, or :func:`_count_in_type`
    where none does). ``shown``: the released values, kept for records without an id.
    ``size``: each record's household's record count under the released ids. Returns the
    column and the number of records with an id whose released value is not their count
    (blank, recoded, PRAMmed, missing in the input).
    """
    nums = _numbers(original)
    counted = int(np.count_nonzero(has_id & ~(_numbers(shown) == size)))
    need = has_id & ~(nums == size)
    col = original
    if need.any():
        reps = {}
        for c in np.unique(size[need]):
            at = np.flatnonzero(nums == c)
            reps[c] = original.iloc[at[0]] if at.size else _count_in_type(original, int(c))
        values = pd.Series([reps[c] for c in size[need]], index=original.index[need],
                           dtype=object).reindex(original.index)
        if not isinstance(original.dtype, pd.CategoricalDtype):
            try:  # the input's dtype (a float column with missing values stays float)
                values = values.astype(original.dtype)
            except (TypeError, ValueError):
                pass
        col = _with_values(original, need, values)
    if not has_id.all():  # no id, nothing to count: the released value
        col = _with_values(col, ~has_id, shown)
    return col, counted


def household_completion(original: pd.DataFrame, protected: pd.DataFrame,
                         keys: Sequence[str] | str, household: str
                         ) -> tuple[pd.DataFrame, dict[str, dict[str, int]]]:
    """The protected file as an intruder holding its household ids reads it.

    A released household id groups a household's records, which gives away two kinds of
    key value:

    - from a mate: a household-level key of ``original`` (one shown value in every
      household, :func:`household_level_keys`: the household's region; an item-missing
      member does not make it another value) blanked in one member is the value its
      household mates show. Filled where the mates' shown values in ``protected`` agree (a
      recoded key's released value, if a step recoded it); where they disagree (PRAM of
      the key, say) the household is left as it is. A value missing in ``original`` is
      not filled.
    - counted: a key equal, in every household of ``original``, to the household's number
      of records (:func:`household_count_keys`: household size in a sample of whole
      households) is the number of records with the id, whatever ``protected`` shows: a
      blank (in one member or in all), a band after a recode, a PRAMmed value, noise, a
      value missing in ``original``. Every record with an id gets its household's exact
      record count in ``protected``, written as ``original`` writes it (its own value
      where that is the count, else the value ``original`` writes for that count, else
      the count in the column's type: :func:`_count_in_type`), so a recode, top coding or
      PRAM of such a key protects nothing and the completed column holds the input's
      levels.

    Every risk measure reads a blank as hidden (a wildcard, seed 004's frequencies with
    missing values matching any value; sdcMicro's ``freqCalc``), so the risk of a released
    file whose household ids are released is that of the completed frame, not of
    ``protected`` (``protect --household`` scores it so; with ``protected=original`` the
    input as the ids complete it, its "before").

    Parameters
    ----------
    original : pandas.DataFrame
        The input of the protection steps (what "household-level" and "the count" are
        judged on, and the representation a count key is written in).
    protected : pandas.DataFrame
        The protected file, the records in ``original``'s order (paired by position).
        Neither frame is modified.
    keys : str or sequence of str
        The key variables.
    household : str
        Column of household ids, in both frames: ``protected``'s (the released ids)
        group the records; records with a missing id are neither filled nor mates, and
        keep their released values.

    Returns
    -------
    completed : pandas.DataFrame
        A new frame: ``protected`` with those values filled (a count key's column in
        ``original``'s representation).
    counts : dict
        Per key with a value filled, ``{"from_mates": n, "counted": m}``: ``from_mates``
        the blanks a mate shows (a household-level key that is no count), ``counted`` the
        records whose released value of a count key is not the exact count (blank,
        recoded, PRAMmed, missing in ``original``).

    Raises
    ------
    InputError
        Not two DataFrames of as many records, a key or ``household`` missing from one,
        or the same index labels in another order.
    """
    original = check_frame(original, "original")
    protected = check_frame(protected, "protected")
    keys = check_columns(original, keys, "keys")
    household = check_columns(original, household, "household")[0]
    check_columns(protected, [*keys, household], "columns of protected")
    if len(original) != len(protected):
        raise InputError(
            f"original has {len(original)} records and protected {len(protected)}; pass the "
            "protected file of original, record for record")
    check_row_order(original, protected)
    hh, size = _household_codes(protected, household)  # the released ids
    has_id = hh >= 0
    n_hh = int(hh.max()) + 1 if has_id.any() else 0
    out = output_frame(protected)
    counts: dict[str, dict[str, int]] = {}
    level = household_level_keys(original, keys, household)
    counting = set(household_count_keys(original, level, household)) if level else set()
    for key in level:
        col = protected[key]
        if key in counting:  # the number of records with the id, whatever is shown
            out[key], n = _exact_counts(original[key].set_axis(col.index), col, size, has_id)
            if n:
                counts[key] = {"from_mates": 0, "counted": n}
            continue
        shown = col.notna().to_numpy() & has_id
        blank = ~col.notna().to_numpy() & original[key].notna().to_numpy() & has_id
        if not blank.any():
            continue
        # from a mate: the households whose shown values are one value (one code)
        codes = np.asarray(pd.factorize(col)[0], dtype=np.int64)
        lo = np.full(n_hh, np.iinfo(np.int64).max)
        hi = np.full(n_hh, -1)
        np.minimum.at(lo, hh[shown], codes[shown])
        np.maximum.at(hi, hh[shown], codes[shown])
        agree = (hi >= 0) & (lo == hi)
        from_mate = blank & agree[np.maximum(hh, 0)]
        if not from_mate.any():
            continue
        first = np.full(n_hh, -1, dtype=np.int64)
        pos = np.flatnonzero(shown)
        first[hh[pos[::-1]]] = pos[::-1]  # a shown member of each household (the first)
        take = np.arange(len(col))
        take[from_mate] = first[hh[from_mate]]
        out[key] = col.iloc[take].set_axis(col.index)
        counts[key] = {"from_mates": int(from_mate.sum()), "counted": 0}
    return out, counts


def _with_values(col: pd.Series, mask: np.ndarray, values: pd.Series) -> pd.Series:
    """``col`` with ``values`` where ``mask`` (a categorical gains their levels)."""
    m = pd.Series(mask, index=col.index)
    if isinstance(col.dtype, pd.CategoricalDtype):
        new = [v for v in pd.unique(values[mask].to_numpy(dtype=object))
               if v not in set(col.cat.categories)]
        if new:
            col = col.cat.add_categories(new)
        values = pd.Series(pd.Categorical(values.to_numpy(dtype=object),
                                          categories=col.cat.categories), index=col.index)
    return col.where(~m, values)  # other dtypes: pandas' common type (int into float)


def _check_households(
    frame: pd.DataFrame, keys: list[str], links: dict[str, list[str]], household: Any,
    household_keys: Any,
) -> tuple[np.ndarray | None, list[str]]:
    """``household`` as household codes and ``household_keys`` as a list, checked.

    Raised before any work (:class:`InputError`); ``(None, [])`` without ``household``.
    """
    if household is None:
        if household_keys is not None:
            raise InputError(
                f"household_keys={household_keys!r} needs household=, the column of "
                "household ids within which the keys are kept consistent; give it, or leave "
                "out household_keys")
        return None, []
    if isinstance(household, (list, tuple)) or household not in frame.columns:
        check_columns(frame, [household] if isinstance(household, str) else household,
                      "household")  # its message names the columns
        raise InputError(f"household must be one column name; got {household!r}")
    if household in keys:
        raise InputError(
            f"household column {household!r} is a key of the step: the step could blank the "
            "ids that group its records; leave it out of the keys")
    followers = [k for k, cols in links.items() if household in cols]
    if followers:
        raise InputError(
            f"household column {household!r} is linked to {followers[0]!r}: it would be "
            "blanked with that key, leaving records without a household; leave it out of "
            "linked")
    n_missing = int(frame[household].isna().sum())
    if n_missing:
        raise InputError(
            f"household column {household!r} has {n_missing} missing ids; every record "
            "needs one (give a record living alone an id of its own), or leave out household")
    if household_keys is None:
        raise InputError(
            f"household={household!r} is used with household_keys, the keys to keep "
            "consistent within households: give household_keys='auto' (the keys with one "
            "value per household) or a list of keys")
    if isinstance(household_keys, str) and household_keys == "auto":
        hk = household_level_keys(frame, keys, household)
    else:
        hk = check_columns(frame, household_keys, "household_keys")
        stray = [k for k in hk if k not in keys]
        if stray:
            raise InputError(
                f"household_keys {stray} are not among the keys the step suppresses "
                f"({', '.join(map(str, keys))}); name keys of the step, or 'auto'")
    return pd.factorize(frame[household])[0], hk


def _household_blanks(frame: pd.DataFrame, keys: list[str], new: np.ndarray,
                      hh: np.ndarray | None, hh_keys: list[str]) -> np.ndarray | None:
    """Blank each household key in every member where the step blanked it in one.

    ``new`` (records x keys, the step's blanks) is updated in place; returns the
    blanks added (same shape), None without households. Values missing in the input
    are no blank of the step and spread nothing (as ``linked`` copies only the step's
    own blanks).
    """
    if hh is None:
        return None
    added = np.zeros_like(new)
    n_hh = int(hh.max()) + 1 if hh.size else 0
    for key in hh_keys:
        j = keys.index(key)
        hit = np.bincount(hh, weights=new[:, j], minlength=n_hh) > 0
        added[:, j] = hit[hh] & ~new[:, j] & frame[key].notna().to_numpy()
        new[:, j] |= added[:, j]
    return added


def _household_summary(household: str | None, keys: list[str], hh_keys: list[str],
                       added: np.ndarray | None) -> dict[str, Any]:
    """The summary's household entries (none without ``household``)."""
    if household is None:
        return {}
    return {"household": household, "household_keys": hh_keys,
            "household_suppressions": {k: int(added[:, keys.index(k)].sum())
                                       for k in hh_keys}}


def _blanked_output(
    frame: pd.DataFrame, keys: list[str], new: np.ndarray, links: dict[str, list[str]],
    mates: np.ndarray | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """The protected frame, the log and the linked counts for new blanks ``new``.

    ``new[:, j]`` marks the records whose key ``keys[j]`` the step blanked; each
    linked column of a key is blanked where the key was and the column is observed.
    The log has one row per blanked value (``record``, ``variable``, ``original``,
    and with links ``linked_to``: the key a linked value followed, None for a key),
    sorted by record and variable. With ``mates`` (the blanks :func:`_household_blanks`
    added, a part of ``new``) also ``household_mate``: True for those blanks and for
    the linked values that followed them.
    """
    out = output_frame(frame)
    masks: dict[str, np.ndarray] = {}
    origin: dict[str, np.ndarray] = {}  # linked column -> the key each blank followed
    for j, key in enumerate(keys):
        if new[:, j].any():
            masks[key] = new[:, j]
    linked_counts: dict[str, int] = {}
    for key, cols in links.items():
        j = keys.index(key)
        for c in cols:
            # a value missing already is no new blank; a column linked to two keys
            # follows both (its blank counted once, for the first key)
            m = new[:, j] & frame[c].notna().to_numpy()
            if c in masks:
                m &= ~masks[c]
                masks[c] = masks[c] | m
            else:
                masks[c] = m
                origin[c] = np.full(len(frame), None, dtype=object)
            origin[c][m] = key
            linked_counts[c] = linked_counts.get(c, 0) + int(m.sum())
    rec_parts, var_parts, orig_parts, link_parts, mate_parts = [], [], [], [], []
    for col, mask in masks.items():
        if not mask.any():
            continue
        out[col] = with_missing(frame, col, mask)
        idx = np.flatnonzero(mask)
        if mates is not None:
            if col in origin:  # a linked value: whether the key's blank it followed was added
                followed = origin[col][idx]
                part = np.zeros(idx.size, dtype=bool)
                for key in set(followed):
                    sel = followed == key
                    part[sel] = mates[idx[sel], keys.index(key)]
                mate_parts.append(part)
            else:
                mate_parts.append(mates[idx, keys.index(col)])
        rec_parts.append(idx)
        var_parts.append(np.full(idx.size, col, dtype=object))
        # only the suppressed values as objects, not the whole column
        orig_parts.append(frame[col].iloc[idx].to_numpy(dtype=object))
        link_parts.append(origin[col][idx] if col in origin
                          else np.full(idx.size, None, dtype=object))
    if rec_parts:
        log = pd.DataFrame(
            {
                "record": np.concatenate(rec_parts).astype(np.int64),
                "variable": np.concatenate(var_parts),
                "original": np.concatenate(orig_parts),
            }
        )
    else:
        log = pd.DataFrame(
            {
                "record": np.array([], dtype=np.int64),
                "variable": np.array([], dtype=object),
                "original": np.array([], dtype=object),
            }
        )
    if links:
        log["linked_to"] = (np.concatenate(link_parts) if link_parts
                            else np.array([], dtype=object))
    if mates is not None:
        log["household_mate"] = (np.concatenate(mate_parts) if mate_parts
                                 else np.array([], dtype=bool))
    log = log.sort_values(["record", "variable"], kind="stable").reset_index(drop=True)
    return out, log, linked_counts
