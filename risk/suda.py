"""SUDA and DIS-SUDA: special uniques, their scores and record-level risk.

Seed ``001_…`` (Templ, Meindl, Kowarik & Chen 2014, IHSN *Introduction to SDC*),
section 3.5 and its Table 3; the scoring and DIS-SUDA formulas are pinned down
against sdcMicro's ``suda2`` (``R/suda2.R`` and ``src/Suda2.h`` of
sdcTools/sdcMicro, written from the IHSN/OECD C++ code), because the seed prints
them only in words.

Definitions (seed 001, section 3.5)
------------------------------------
A record is *unique* on a set ``S`` of key variables when no other record has
its values on ``S``. A *minimal sample unique* (MSU) of a record is a set ``S``
on which it is unique while it is unique on no proper subset of ``S``; checking
the ``|S|`` subsets ``S - {a}`` suffices, because uniqueness only grows with
``S``. Each MSU of size ``k`` scores, with ``ATT`` key variables and maximum MSU
size ``M`` (``score_method="elliot"``, the seed's formula)

.. math:: w_k = \\prod_{i=k}^{\\min(M,\\,ATT-1)} (ATT - i)
          = \\frac{(ATT-k)!}{(ATT-\\min(M, ATT-1)-1)!},

and a record's SUDA score is the sum of the scores of its MSUs. With the
default ``M = ATT`` this is ``(ATT - k)!`` -- sdcMicro's ``original_scores =
TRUE`` and ARCHITECTURE.md's "(M - k)!" with M the number of keys; the seed's product
written literally up to ``i = M = ATT`` would contain the factor 0, so the
product stops at ``ATT - 1`` (an MSU of all ``ATT`` keys scores 1, as in
sdcMicro). A smaller ``M`` drops MSUs larger than ``M`` and divides every score
by the same constant ``(ATT - M - 1)!``. ``score_method="ihsn"`` is the older
IHSN/OECD weighting (sdcMicro ``original_scores = FALSE``),
``w_k = (2^{ATT-k} - 1) k! (ATT-k)! / ATT!``.

Per-variable contribution (sdcMicro): the share of a record's score that comes
from MSUs containing the variable, ``c_{iv} = sum_{MSU m of i, v in m} w_{|m|}
/ s_i`` (0 when ``s_i = 0``); a record's shares sum to its score-weighted mean
MSU size, not to 1. File level: ``100 sum_i c_{iv} s_i / sum_i s_i`` percent.

DIS-SUDA (Elliot & Manning 2003 as implemented by sdcMicro): with ``U``
records unique on all keys, ``P`` records in pairs (full-key cells of exactly
two records) and sampling fraction ``pi`` (``dis_fraction``), the data
intrusion simulation estimate of the probability that a unique match is
correct is

.. math:: \\mathrm{DIS} = \\frac{U\\pi}{U\\pi + P(1-\\pi)},

and it is spread over the records with positive SUDA score ``s_i`` by

.. math:: d_i = \\left(1 + \\frac{U/\\mathrm{DIS} - U}{s_i^{Q} \\sum_j s_j^{-Q}}\\right)^{-1},
          \\qquad Q = 1 + (8 - ATT)/20,

``d_i = 0`` when ``s_i = 0``. What is conserved is the total odds of a false
match: ``sum_i (1 - d_i)/d_i = U/DIS - U``; when every unique has a positive
score this says that the harmonic mean of the ``d_i`` over the uniques equals
DIS (and with equal scores every ``d_i = DIS``, so they sum to ``U DIS``). The
arithmetic sum of the ``d_i`` is *not* ``U DIS`` in general.

Missing values (sdcMicro's SUDA2 behaviour): a missing key value is never part
of an MSU, and it matches no value -- a record with a missing value on a key of
``S`` neither has an MSU at ``S`` nor counts in the frequencies on ``S``; it
still counts on the sets that avoid that key. For ``U`` and ``P`` (full-key
cells) missing is one more level, as in sdcMicro's duplicate scan.

Differences from sdcMicro ``suda2`` (by design): 1 or 2 keys are handled as they
are (sdcMicro pads with constant dummy columns, which changes ``ATT`` and
``Q``); ``U`` counts every full-key unique (sdcMicro counts only uniques alone in
their hash bucket, which undercounts on large files); computation in float64
(sdcMicro keeps DIS and the sampling fraction in single precision, so its
DIS-SUDA agrees to about 1e-7 relative).

Algorithm
---------
Records are first collapsed to their distinct full-key combinations; only a
combination seen once can hold an MSU (a repeated one is never unique), the
others only count. Attribute subsets are then visited level by level (size 1,
2, ..., ``M``). The groups of the distinct combinations on ``S`` are refined
from those on a subset ``S - {a}`` of the previous level by renumbering the
pairs ``(group, code of a)`` (a look-up table, or a hash factorisation when the
code range is large); combinations alone in their group are dropped from the
group lists, since they stay alone on every superset, so the lists thin out as
``S`` grows. A candidate has an MSU at ``S`` when it is alone on ``S`` while it
was not unique on any ``S - {a}`` (flags kept from the previous level).
SUDA2-style pruning: a subset is not grouped at all when no candidate is still
non-unique on all of its ``S - {a}`` (its uniques are then known without
counting), and a candidate unique on every subset of a level is dropped, since
it can have no larger MSU. Cost ``O(sum_{k<=M} C(ATT, k) n_distinct)`` time at
worst; memory the candidates' uniqueness flags of one level plus, within a
budget, that level's group lists.

Imports NumPy and pandas only (plus the project's exceptions and the NumPy-only count
and shape checks of :mod:`sdcbayes.risk.dis` and :mod:`sdcbayes.risk.individual`) --
never PyMC.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.microdata import as_pandas_frame
from sdcbayes.provenance import stamp
from sdcbayes.risk.dis import _counts
from sdcbayes.risk.individual import _broadcast

__all__ = [
    "SCORE_METHODS",
    "MsuSearch",
    "SudaResult",
    "dis_estimate",
    "dis_q_exponent",
    "dis_suda_scores",
    "find_msus",
    "msu_size_weights",
    "suda",
]

#: ``"elliot"``: the seed's (ATT - k)! weighting (sdcMicro ``original_scores=TRUE``);
#: ``"ihsn"``: the older IHSN/OECD weighting (sdcMicro ``original_scores=FALSE``).
SCORE_METHODS: tuple[str, ...] = ("elliot", "ihsn")

#: Refuse more attribute subsets than this (the search is linear in their number).
_MAX_SUBSETS = 1 << 20
#: Memory (bytes) for the cached group lists of one level; beyond it a subset's
#: groups are rebuilt from the single keys (slower, same result).
_GROUP_CACHE_BYTES = 512 * 2**20
#: Bins for the dense-renumbering look-up table, relative to the number of rows.
_DENSE_TABLE_FACTOR = 16
_DENSE_TABLE_MIN = 1 << 20
#: Pack key codes into one int64 while the code range stays below this.
_INT62 = 1 << 62

#: DIS-SUDA intervals of sdcMicro's ``print.suda2`` (for the summary).
_DIS_BREAKS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
_DIS_LABELS = (
    "== 0",
    "(0.0, 0.1]",
    "(0.1, 0.2]",
    "(0.2, 0.3]",
    "(0.3, 0.4]",
    "(0.4, 0.5]",
    "(0.5, 0.6]",
    "(0.6, 0.7]",
    "> 0.7",
)


# --------------------------------------------------------------------------------------
# closed forms: MSU scores and DIS
# --------------------------------------------------------------------------------------


def _check_n_keys(n_keys: Any) -> int:
    if isinstance(n_keys, bool) or not isinstance(n_keys, (int, np.integer)) or n_keys < 1:
        raise InputError(f"n_keys must be a positive integer, got {n_keys!r}; pass e.g. 4.")
    return int(n_keys)


def _check_max_size(max_size: Any, n_keys: int) -> int:
    if max_size is None:
        return n_keys
    if (
        isinstance(max_size, bool)
        or not isinstance(max_size, (int, np.integer))
        or not 1 <= max_size <= n_keys
    ):
        raise InputError(
            f"max_size must be an integer from 1 to the number of keys ({n_keys}), "
            f"got {max_size!r}; pass e.g. max_size={min(3, n_keys)} or None for all keys."
        )
    return int(max_size)


def msu_size_weights(
    n_keys: int, max_size: int | None = None, method: str = "elliot"
) -> np.ndarray:
    r"""Score of one MSU of size ``k = 1, ..., max_size``.

    Seed 001, section 3.5 (the formula after "a score is computed by"):

    .. math:: w_k = \prod_{i=k}^{\min(M, ATT-1)} (ATT - i)

    with ``ATT = n_keys`` and ``M = max_size``; for ``M = ATT`` this is
    ``(ATT - k)!`` (sdcMicro ``suda2(original_scores=TRUE)``). The seed's
    example (``ATT = 4``, ``M = 3``) scores an MSU of size 1 with
    ``3 * 2 * 1 = 6`` and one of size 2 with ``2 * 1 = 2``.
    ``method="ihsn"``: ``w_k = (2^{ATT-k} - 1) k! (ATT-k)! / ATT!`` (sdcMicro
    ``original_scores=FALSE``, the weighting behind the DIS-SUDA column of the
    seed's Table 3); it ignores ``max_size`` except for the length.

    Parameters
    ----------
    n_keys : int
        Number of key variables ``ATT`` (>= 1).
    max_size : int, optional
        Largest MSU size ``M`` considered (1..n_keys); default ``n_keys``.
    method : {"elliot", "ihsn"}
        Weighting, see above.

    Returns
    -------
    numpy.ndarray
        float64 of length ``max_size``; entry ``k - 1`` scores an MSU of size k.
    """
    att = _check_n_keys(n_keys)
    m = _check_max_size(max_size, att)
    if method == "elliot":
        top = min(m, att - 1)
        # empty product (k > top, only k = ATT) is 1, as in sdcMicro
        return np.array(
            [float(math.prod(att - i for i in range(k, top + 1))) for k in range(1, m + 1)]
        )
    if method == "ihsn":
        fact_att = math.factorial(att)
        return np.array(
            [
                (2.0 ** (att - k) - 1.0) * math.factorial(k) * math.factorial(att - k) / fact_att
                for k in range(1, m + 1)
            ]
        )
    raise InputError(
        f"score method {method!r} is unknown; use one of {', '.join(map(repr, SCORE_METHODS))}."
    )


def _check_fraction(dis_fraction: Any) -> float:
    try:
        pi = float(dis_fraction)
    except (TypeError, ValueError):
        pi = float("nan")
    if not 0.0 < pi <= 1.0:
        raise InputError(
            f"dis_fraction (the sampling fraction) must be in (0, 1], got {dis_fraction!r}; "
            "pass e.g. 0.01 for a 1% sample."
        )
    return pi


def dis_estimate(n_uniques: Any, n_in_pairs: Any, dis_fraction: Any) -> np.ndarray | float:
    r"""File-level DIS estimate: probability that a unique match is correct.

    Skinner & Elliot (2002), as used by DIS-SUDA (seed 001, section 3.5;
    sdcMicro ``src/Suda2.h``):

    .. math:: \mathrm{DIS} = \frac{U\pi}{U\pi + P(1-\pi)}

    with ``U`` records unique on all keys, ``P`` records in full-key cells of
    exactly two records and ``pi`` the sampling fraction. 0 when ``U = 0``
    (sdcMicro's convention; :func:`sdcbayes.risk.dis.dis_estimate` gives NaN).
    Broadcasts (NumPy rules). Its bias and spread with few sample uniques, and a
    standard error, are in :mod:`sdcbayes.risk.dis`.

    Parameters
    ----------
    n_uniques, n_in_pairs : array_like
        ``U`` and ``P``, whole numbers >= 0. ``P`` counts RECORDS in pairs: twice
        the number of pair cells, so it is even.
    dis_fraction : float
        Sampling fraction ``pi`` in (0, 1].

    Returns
    -------
    float or numpy.ndarray

    Raises
    ------
    InputError
        If ``U`` or ``P`` is NaN, infinite, negative or not a whole number, if
        ``P`` is odd, if their shapes do not broadcast, or if ``pi`` is outside
        (0, 1].

    See Also
    --------
    sdcbayes.risk.dis.dis_estimate : the same estimate from the number of unique
        cells and of pair CELLS (its second argument is ``P / 2``); NaN, not 0,
        where ``U = 0``.
    """
    # the checks of risk.dis: a negative or NaN P used to fall back to U * pi
    # (dis_estimate(3, -10, 0.1) gave 0.3) and a negative U to 0
    pi = _check_fraction(dis_fraction)
    u = _counts(n_uniques, "n_uniques (U, records unique on all keys)", minimum=0)
    p = _counts(n_in_pairs, "n_in_pairs (P, records in cells of two)", minimum=0)
    if np.any(p % 2 != 0):
        raise InputError(
            f"n_in_pairs counts the RECORDS in cells of exactly two, so it is even; got "
            f"{p[p % 2 != 0].ravel()[0]:g}. Pass twice the number of pair cells (or use "
            "sdcbayes.risk.dis.dis_estimate, which takes the number of pair cells)."
        )
    u, p = _broadcast(n_uniques=u, n_in_pairs=p)
    num = u * pi
    den = num + p * (1.0 - pi)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(u > 0, num / np.where(den > 0, den, 1.0), 0.0)
    return float(out) if out.ndim == 0 else out


def dis_q_exponent(n_keys: int) -> float:
    """DIS-SUDA exponent ``Q = 1 + (8 - ATT)/20`` (sdcMicro ``src/Suda2.h``)."""
    return 1.0 + (8.0 - _check_n_keys(n_keys)) / 20.0


def dis_suda_scores(
    scores: Any, n_uniques: int, dis: float, n_keys: int
) -> np.ndarray:
    r"""Record-level DIS-SUDA: the file-level DIS spread over records by score.

    Elliot & Manning (2003) as implemented by sdcMicro (``src/Suda2.h``; seed
    001, section 3.5 describes it in words):

    .. math:: d_i = \left(1 + \frac{U/\mathrm{DIS} - U}
              {s_i^{Q}\,\sum_{j: s_j>0} s_j^{-Q}}\right)^{-1}, \quad
              Q = 1 + \frac{8 - ATT}{20},

    and ``d_i = 0`` for ``s_i = 0``. Identity: ``sum_i (1 - d_i)/d_i = U/DIS
    - U`` over the records with ``s_i > 0``. The result does not change when
    every score is multiplied by the same constant.

    Parameters
    ----------
    scores : array_like
        SUDA scores ``s_i >= 0`` of all records (1-D).
    n_uniques : int
        ``U``, records unique on all keys.
    dis : float
        File-level DIS (:func:`dis_estimate`).
    n_keys : int
        ``ATT``, the number of key variables (sets ``Q``). From 28 keys on ``Q <= 0``
        and the scores no longer rise with ``s_i``: warned
        (:class:`~sdcbayes.inference.diagnostics.SdcbayesWarning`).

    Returns
    -------
    numpy.ndarray
        float64, same shape as ``scores``.
    """
    # what suda() passes is always valid; a caller's slip (dis = 5, a negative or NaN
    # score, U < 0) gave scores outside [0, 1] or a silent 0 (audit CC1 F2)
    s = np.asarray(scores, dtype=float)
    bad = ~np.isfinite(s) | (s < 0)
    if bad.any():
        raise InputError(
            f"scores must be SUDA scores, finite and >= 0; got {s[bad].ravel()[0]:g}. Pass "
            "what suda() reports (SudaResult.scores).")
    u = float(_counts(n_uniques, "n_uniques (U, records unique on all keys)", minimum=0))
    dis = float(dis) if isinstance(dis, (int, float, np.number)) else float("nan")
    if not 0.0 <= dis <= 1.0:  # 0: dis_estimate's value for U = 0 (every d_i is then 0)
        raise InputError(
            f"dis must be a probability in [0, 1], the file-level DIS of dis_estimate; got "
            f"{dis:g}.")
    q = dis_q_exponent(n_keys)
    if q <= 0:
        # Q = 1 + (8 - ATT)/20 reaches 0 at 28 keys: beyond, s^Q falls as s rises, so
        # a higher SUDA score would get a lower DIS-SUDA (the method's, as sdcMicro's)
        from sdcbayes.exceptions import warn_at_caller
        from sdcbayes.inference.diagnostics import SdcbayesWarning

        warn_at_caller(
            f"DIS-SUDA's exponent Q = 1 + (8 - {int(n_keys)} keys)/20 = {q:g} is not "
            "positive (28 keys or more), so its scores fall as the SUDA score rises: the "
            "method is not meant for so many keys; read the SUDA scores, or use fewer keys",
            SdcbayesWarning)
    out = np.zeros_like(s)
    pos = s > 0
    if not pos.any() or dis <= 0:
        return out
    sq = s[pos] ** q
    adj = np.sum(1.0 / sq)
    false_odds = u / dis - u  # total odds of a false unique match
    out[pos] = 1.0 / (1.0 + false_odds / (sq * adj))
    return out


# --------------------------------------------------------------------------------------
# grouping helpers (vectorised over records; loops run over keys or subsets only)
# --------------------------------------------------------------------------------------


def _dense(raw: np.ndarray, total: int) -> tuple[np.ndarray, int]:
    """Renumber int64 codes in ``[0, total)`` densely; returns ``(int32 ids, n_groups)``.

    A look-up table when the code range is small (O(n + total)), pandas' hash
    factorisation otherwise (O(n), about 3x faster than a sort at 10^6 codes).
    """
    n = raw.size
    if total <= max(_DENSE_TABLE_FACTOR * n, _DENSE_TABLE_MIN):
        present = np.zeros(total, dtype=bool)
        present[raw] = True
        lookup = np.cumsum(present, dtype=np.int32)
        n_groups = int(lookup[-1]) if total else 0
        lookup -= 1
        return lookup[raw], n_groups
    ids, uniques = pd.factorize(raw, sort=False)
    return ids.astype(np.int32, copy=False), int(uniques.size)


def _group_from_keys(
    codes: Sequence[np.ndarray], radix: Sequence[int], keys: Sequence[int]
) -> tuple[np.ndarray, int]:
    """Groups of the rows on the key columns ``keys`` (``codes[a]`` is column ``a``).

    Mixed-radix packing into int64 (one renumbering at the end); renumbered on
    the way only when the product of the radices would overflow.
    """
    raw = codes[keys[0]].astype(np.int64)
    total = int(radix[keys[0]])
    for a in keys[1:]:
        r = int(radix[a])
        if total * r >= _INT62:  # int64 would overflow: renumber first
            ids, total = _dense(raw, total)
            raw = ids.astype(np.int64)
        raw *= r
        raw += codes[a]
        total *= r
    return _dense(raw, total)


# --------------------------------------------------------------------------------------
# the MSU search
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MsuSearch:
    """Minimal sample uniques (MSUs) of a file, one entry per MSU.

    Attributes
    ----------
    record : numpy.ndarray
        int64 record number (input order) of each MSU.
    keys_mask : numpy.ndarray
        int64 bit mask of each MSU's key variables (bit ``a`` set: key ``a``).
    size : numpy.ndarray
        int64 number of keys in each MSU.
    n_records, n_keys, max_size : int
        Shape of the search.
    n_uniques : int
        ``U``: records unique on all keys (missing counted as a level).
    n_in_pairs : int
        ``P``: records in full-key cells of exactly two records.
    n_distinct : int
        Distinct full-key combinations.
    n_subsets_grouped : int
        Attribute subsets whose groups were actually computed (the rest pruned).
    """

    record: np.ndarray
    keys_mask: np.ndarray
    size: np.ndarray
    n_records: int
    n_keys: int
    max_size: int
    n_uniques: int
    n_in_pairs: int
    n_distinct: int
    n_subsets_grouped: int

    def counts(self) -> np.ndarray:
        """int64 ``(n_records, max_size)``: MSUs of size ``k`` of each record at ``k - 1``."""
        out = np.zeros((self.n_records, self.max_size), dtype=np.int64, order="F")
        for k in range(1, self.max_size + 1):  # loop over sizes, not records
            out[:, k - 1] = np.bincount(self.record[self.size == k], minlength=self.n_records)
        return out

    def scores(self, weights: np.ndarray) -> np.ndarray:
        """Sum over each record's MSUs of ``weights[size - 1]`` (float64, per record)."""
        w = np.asarray(weights, dtype=float)[self.size - 1]
        return np.bincount(self.record, weights=w, minlength=self.n_records)

    def key_scores(self, weights: np.ndarray) -> np.ndarray:
        """``(n_records, n_keys)``: sum of ``weights[size - 1]`` over MSUs containing each key."""
        w = np.asarray(weights, dtype=float)[self.size - 1]
        out = np.zeros((self.n_records, self.n_keys), order="F")
        for a in range(self.n_keys):  # loop over keys, not records
            has = (self.keys_mask >> a) & 1 == 1
            out[:, a] = np.bincount(self.record[has], weights=w[has], minlength=self.n_records)
        return out

    def as_frame(self, keys: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per MSU: ``record``, ``size`` and ``keys`` (the key names joined by ``+``)."""
        names = list(keys) if keys is not None else [f"key{a + 1}" for a in range(self.n_keys)]
        labels = {}
        for mask in np.unique(self.keys_mask):  # loop over distinct key sets
            labels[int(mask)] = "+".join(n for a, n in enumerate(names) if (int(mask) >> a) & 1)
        order = np.lexsort((self.keys_mask, self.size, self.record))
        return pd.DataFrame(
            {
                "record": self.record[order],
                "size": self.size[order],
                "keys": pd.Series(self.keys_mask[order]).map(labels).to_numpy(),
            }
        )


def find_msus(codes: Any, max_size: int | None = None) -> MsuSearch:
    """Find the minimal sample uniques (MSUs) of every record (seed 001, section 3.5).

    Parameters
    ----------
    codes : array_like
        Integer key codes ``(n_records, n_keys)``, any negative value for a
        missing value. Any integer coding works; only equality matters.
    max_size : int, optional
        Largest MSU size searched (1..n_keys); default all keys.

    Returns
    -------
    MsuSearch

    Notes
    -----
    See the module docstring for the algorithm and the treatment of missing
    values (never part of an MSU, matching no value).
    """
    arr = np.asarray(codes)
    if arr.ndim != 2 or arr.shape[1] < 1 or arr.shape[0] < 1:
        raise InputError(
            f"codes must be a 2-D integer array (records x keys) with at least one row and "
            f"column, got shape {arr.shape}; pass e.g. frame[keys].to_numpy()."
        )
    if arr.dtype.kind not in "iub":
        raise InputError(
            f"codes must hold integers, got dtype {arr.dtype}; code the keys first "
            "(e.g. with pandas.factorize) or call suda() on the DataFrame."
        )
    n, n_keys = arr.shape
    m = _check_max_size(max_size, n_keys)
    n_subsets = sum(math.comb(n_keys, k) for k in range(1, m + 1))
    if n_subsets > _MAX_SUBSETS:
        raise InputError(
            f"{n_keys} keys with max_size={m} give {n_subsets} attribute subsets, too many "
            f"(limit {_MAX_SUBSETS}); pass a smaller max_size or fewer keys."
        )

    # Code each key in [0, radix) with missing as the last level; the codes need
    # not be dense, a few unused levels only widen the look-up tables. A missing
    # level never yields an MSU (masked by `valid`) and matches no real value, so
    # the counts on S are those of sdcMicro's item lists.
    cols: list[np.ndarray] = []
    valid: list[np.ndarray | None] = []  # None: no value of this key is missing
    radix: list[int] = []
    for a in range(n_keys):  # loop over keys, not records
        col = np.ascontiguousarray(arr[:, a]).astype(np.int64, copy=False)
        lo, hi = int(col.min()), int(col.max())
        ok = None if lo >= 0 else col >= 0
        if ok is not None:
            hi = int(col[ok].max()) if ok.any() else -1
            lo = 0
        if hi < _DENSE_TABLE_FACTOR * n + _DENSE_TABLE_MIN:
            code = col if ok is None else np.where(ok, col, hi + 1)
            n_levels = hi + 1
        else:  # huge code values: renumber them
            code, n_levels = _dense_any(col if ok is None else np.where(ok, col, -1))
            if ok is not None:
                code = np.where(ok, code - 1, n_levels - 1)  # -1 sorted first
                n_levels -= 1
        cols.append(code)
        valid.append(ok)
        radix.append(n_levels + (ok is not None))

    # Collapse records to distinct full-key combinations (missing = a level).
    full_ids, n_distinct = _group_from_keys(cols, radix, list(range(n_keys)))
    mult = np.bincount(full_ids, minlength=n_distinct)
    # one record per combination: which one does not matter for repeated
    # combinations (identical codes), and a unique one has a single record
    first = np.empty(n_distinct, dtype=np.int64)
    first[full_ids] = np.arange(n)
    cand_rows = np.flatnonzero(mult == 1)  # distinct rows that can hold an MSU
    n_uniques = int(cand_rows.size)
    n_in_pairs = 2 * int(np.count_nonzero(mult == 2))
    candidates = first[cand_rows]  # their record numbers

    codes_d = [c[first] for c in cols]
    valid_c = [None if v is None else v[candidates] for v in valid]
    hits: list[tuple[int, int, np.ndarray]] = []
    n_grouped = 0
    if cand_rows.size:
        n_grouped = _search(codes_d, radix, valid_c, cand_rows, m, hits)

    if hits:
        record = np.concatenate([candidates[h[2]] for h in hits])
        keys_mask = np.concatenate([np.full(h[2].size, h[0], dtype=np.int64) for h in hits])
        size = np.concatenate([np.full(h[2].size, h[1], dtype=np.int64) for h in hits])
    else:
        record = keys_mask = size = np.zeros(0, dtype=np.int64)
    return MsuSearch(
        record=record,
        keys_mask=keys_mask,
        size=size,
        n_records=n,
        n_keys=n_keys,
        max_size=m,
        n_uniques=n_uniques,
        n_in_pairs=n_in_pairs,
        n_distinct=int(n_distinct),
        n_subsets_grouped=n_grouped,
    )


def _dense_any(col: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense codes of arbitrary int64 values, in sorted order."""
    levels, inverse = np.unique(col, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), int(levels.size)


#: Groups of the distinct rows on one attribute subset, singletons left out:
#: ``(members, ids, n_groups)`` -- the rows in groups of two or more, their group
#: numbers (in ``[0, n_groups)``, gaps allowed). A row alone on a subset stays alone
#: on every superset, so refining only ``members`` is enough, and they thin out
#: quickly as subsets grow.
_Groups = tuple[np.ndarray, np.ndarray, int]


def _refine_groups(parent: _Groups, codes: np.ndarray, radix: int) -> _Groups:
    """Groups on ``S + {a}`` from the groups on ``S`` and the codes of key ``a``."""
    members, ids, n_groups = parent
    if members.size == 0:
        return parent
    raw = ids.astype(np.int64) * radix
    raw += codes[members]
    new_ids, n_new = _dense(raw, n_groups * radix)
    size = np.bincount(new_ids, minlength=n_new)
    keep = size[new_ids] >= 2
    return members[keep], new_ids[keep], n_new


def _search(
    codes_d: list[np.ndarray],
    radix: list[int],
    valid_c: list[np.ndarray | None],
    cand_rows: np.ndarray,
    max_size: int,
    hits: list[tuple[int, int, np.ndarray]],
) -> int:
    """Level-wise MSU search over attribute subsets.

    Appends ``(keys_mask, size, candidate positions)`` to ``hits`` for every
    subset that is an MSU of some candidates; returns the number of subsets
    whose groups were computed.
    """
    n_d = codes_d[0].size
    n_keys = len(codes_d)
    alive = np.arange(cand_rows.size)  # candidates still able to get an MSU
    rows = cand_rows  # their distinct-row numbers
    # previous level: uniqueness flags of the alive candidates, and (some) groups
    everything: _Groups = (np.arange(n_d), np.zeros(n_d, dtype=np.int32), 1)
    prev_unique: dict[int, np.ndarray] = {0: np.zeros(rows.size, dtype=bool)}
    prev_groups: dict[int, _Groups] = {0: everything}
    in_group = np.zeros(n_d, dtype=bool)  # scratch: rows in a group of two or more
    n_grouped = 0

    for k in range(1, max_size + 1):
        cur_unique: dict[int, np.ndarray] = {}
        cur_groups: dict[int, _Groups] = {}
        cache_bytes = 0
        still_open = np.zeros(rows.size, dtype=bool)  # valid and non-unique on some S
        for subset in combinations(range(n_keys), k):
            mask = sum(1 << a for a in subset)
            masks = [valid_c[a] for a in subset if valid_c[a] is not None]
            valid_s = np.logical_and.reduce(masks) if masks else None
            unique_below = prev_unique[mask & ~(1 << subset[0])].copy()
            for a in subset[1:]:
                unique_below |= prev_unique[mask & ~(1 << a)]
            # unique on some S - {a} => unique on S (when valid on S), never an MSU here
            open_s = ~unique_below
            if valid_s is not None:
                open_s &= valid_s
                unique_s = unique_below & valid_s
            else:
                unique_s = unique_below
            open_idx = np.flatnonzero(open_s)
            if open_idx.size:
                groups = _groups_of(subset, mask, prev_groups, codes_d, radix, everything)
                n_grouped += 1
                in_group[groups[0]] = True
                single = ~in_group[rows[open_idx]]
                in_group[groups[0]] = False
                msu = open_idx[single]
                if msu.size:
                    unique_s[msu] = True
                    hits.append((mask, k, alive[msu]))
                still_open[open_idx[~single]] = True
                size_bytes = groups[0].nbytes + groups[1].nbytes
                if cache_bytes + size_bytes <= _GROUP_CACHE_BYTES:
                    cur_groups[mask] = groups
                    cache_bytes += size_bytes
            cur_unique[mask] = unique_s
        # A candidate unique on every subset of this level (where valid) can have
        # no larger MSU: drop it, and stop when none is left.
        if not still_open.any() or k == max_size:
            break
        if not still_open.all():
            alive = alive[still_open]
            rows = rows[still_open]
            valid_c = [None if v is None else v[still_open] for v in valid_c]
            cur_unique = {s: u[still_open] for s, u in cur_unique.items()}
        prev_unique = cur_unique
        prev_groups = cur_groups
    return n_grouped


def _groups_of(
    subset: tuple[int, ...],
    mask: int,
    prev_groups: dict[int, _Groups],
    codes_d: list[np.ndarray],
    radix: list[int],
    everything: _Groups,
) -> _Groups:
    """Groups of the distinct rows on ``subset``, refined from a cached parent when possible."""
    best = None
    for a in subset:  # the cached parent with the fewest members is the cheapest
        parent = prev_groups.get(mask & ~(1 << a))
        if parent is not None and (best is None or parent[0].size < best[1][0].size):
            best = (a, parent)
    if best is not None:
        a, parent = best
        return _refine_groups(parent, codes_d[a], int(radix[a]))
    groups = everything
    for a in subset:  # not cached: build it up key by key
        groups = _refine_groups(groups, codes_d[a], int(radix[a]))
    return groups


# --------------------------------------------------------------------------------------
# input coding
# --------------------------------------------------------------------------------------


def _missing_values(missing: Any) -> list[Any]:
    """``missing=`` as a list of codes; a bare rule word of the other models is refused."""
    if missing is None:
        return []
    if isinstance(missing, str) and missing.strip().lower() in ("wildcard", "category", "drop"):
        # the Microdata/assess missing= rule, which SUDA does not take: as a code it would
        # silently match nothing
        raise InputError(
            f"missing={missing!r} lists the codes that mean missing in the keys, not a rule: "
            "SUDA has one rule, sdcMicro's suda2 (a missing value matches no value and is "
            "never part of a minimal sample unique); give the codes, e.g. missing=[-999], or "
            f"missing=[{missing!r}] if {missing!r} really is a code in the data")
    if isinstance(missing, (list, tuple, set, frozenset, np.ndarray, pd.Index)):
        return list(missing)
    return [missing]


def _code_input(
    frame_or_codes: Any, keys: Any, missing: Any
) -> tuple[np.ndarray, list[str]]:
    """Integer codes ``(n, n_keys)`` with ``-1`` for missing, and the key names."""
    extra = _missing_values(missing)
    if isinstance(frame_or_codes, pd.DataFrame):
        frame = frame_or_codes
        if keys is None:
            raise InputError(
                "no key variables given; pass keys=[...] naming columns of the data, "
                f"e.g. keys={list(map(str, frame.columns[:3]))}."
            )
        key_list = [keys] if isinstance(keys, str) else list(keys)
        if not key_list:
            raise InputError("the list of key variables is empty; name at least one column.")
        dup = sorted({str(k) for k in key_list if key_list.count(k) > 1})
        if dup:
            raise InputError(f"key variables repeated: {', '.join(dup)}; name each key once.")
        absent = [k for k in key_list if k not in frame.columns]
        if absent:
            raise InputError(
                f"key column(s) {', '.join(map(repr, absent))} not in the data; "
                f"available columns: {', '.join(map(str, frame.columns))}."
            )
        # a repeated column name selects a table, not one key: frame[k].dtype would fail
        # with an AttributeError (audit CC1 F1)
        several = [k for k in key_list if isinstance(frame[k], pd.DataFrame)]
        if several:
            raise InputError(
                f"key name(s) {', '.join(map(repr, several))} select more than one column "
                "of the data (repeated column names); rename the columns so each key "
                "names one, or drop the copies."
            )
        if len(frame) == 0:
            raise InputError("the data have no records; pass a file with at least one row.")
        codes = np.empty((len(frame), len(key_list)), dtype=np.int64, order="F")
        for j, k in enumerate(key_list):  # loop over keys, not records
            col = frame[k]
            miss = col.isna().to_numpy()
            if extra:
                miss = miss | col.isin(extra).to_numpy()
            c = None
            if isinstance(col.dtype, pd.CategoricalDtype):
                c = col.cat.codes.to_numpy().astype(np.int64)
            elif col.dtype.kind == "i" or (col.dtype.kind == "u" and col.dtype.itemsize < 8):
                # Non-negative integers are codes already (gaps only widen tables). Nullable
                # Int64 (e.g. local_suppression output) holds pd.NA, which has no int64
                # value: give it -1 here instead of casting a masked array.
                c = np.array(col.to_numpy(dtype=np.int64, na_value=-1), copy=True)
                if (c[~miss] < 0).any():
                    c = None
            if c is None:
                try:
                    c, _ = pd.factorize(col, use_na_sentinel=True)
                except TypeError as exc:
                    raise InputError(
                        f"key {k!r} holds values that cannot be compared ({exc}); "
                        "store numbers or text in key columns."
                    ) from None
                c = np.asarray(c, dtype=np.int64)
            c[miss] = -1
            codes[:, j] = c
        return codes, [str(k) for k in key_list]

    arr = np.asarray(frame_or_codes)
    if arr.ndim != 2:
        raise InputError(
            f"data must be a pandas DataFrame or a 2-D array (records x keys), got "
            f"{type(frame_or_codes).__name__} with {arr.ndim} dimension(s); pass a DataFrame."
        )
    n, n_keys = arr.shape
    if n == 0 or n_keys == 0:
        raise InputError(f"the data have shape {arr.shape}; pass at least one record and one key.")
    if keys is None:
        names = [f"key{j + 1}" for j in range(n_keys)]
    else:
        names = [keys] if isinstance(keys, str) else [str(k) for k in keys]
        if len(names) != n_keys:
            raise InputError(
                f"{len(names)} key name(s) for an array with {n_keys} column(s); "
                "pass one name per column or keys=None."
            )
    codes = np.empty((n, n_keys), dtype=np.int64, order="F")
    for j in range(n_keys):  # loop over keys, not records
        col = pd.Series(arr[:, j])
        miss = col.isna().to_numpy()
        if extra:
            miss = miss | col.isin(extra).to_numpy()
        c, _ = pd.factorize(col, use_na_sentinel=True)
        c = np.asarray(c, dtype=np.int64)
        c[miss] = -1
        codes[:, j] = c
    return codes, names


# --------------------------------------------------------------------------------------
# the front function and its result
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SudaResult:
    """SUDA scores, DIS-SUDA scores and contributions of every record.

    Attributes
    ----------
    keys : list of str
        Key variables, in the order given.
    max_size : int
        Largest MSU size searched.
    score_method : str
        ``"elliot"`` or ``"ihsn"`` (see :func:`msu_size_weights`).
    dis_fraction : float
        Sampling fraction used by DIS.
    size_weights : numpy.ndarray
        Score of one MSU of size ``k`` at index ``k - 1``.
    scores : numpy.ndarray
        SUDA score per record (input order), float64.
    dis_scores : numpy.ndarray
        DIS-SUDA score per record, float64 in [0, 1].
    contributions : pandas.DataFrame
        Per record (index ``record``), one column per key: the share of the
        record's score from MSUs containing the key (0 when the score is 0).
    msu_counts : pandas.DataFrame
        Per record, number of MSUs of each size (columns ``1..max_size``,
        column index named ``msu_size``).
    n_uniques, n_in_pairs : int
        ``U`` and ``P`` of the DIS estimate.
    dis : float
        File-level DIS estimate (:func:`dis_estimate`).
    q : float
        DIS-SUDA exponent ``Q``.
    n_distinct : int
        Distinct full-key combinations.
    msus : MsuSearch
        The MSUs themselves (``msus.as_frame(keys)``: one row per MSU).
    provenance : dict
        :func:`sdcbayes.provenance.stamp` of the run, as the risk results carry:
        ``sdcbayes_version``, ``model`` (``"suda"``), ``settings`` (``max_size``
        as given and as used, ``dis_fraction``, ``missing``, ``score_method``),
        ``data`` (``n_records``, ``keys``, the input's type), library versions and
        the command. Empty for a result built by hand.
    """

    keys: list[str]
    max_size: int
    score_method: str
    dis_fraction: float
    size_weights: np.ndarray
    scores: np.ndarray = field(repr=False)
    dis_scores: np.ndarray = field(repr=False)
    contributions: pd.DataFrame = field(repr=False)
    msu_counts: pd.DataFrame = field(repr=False)
    n_uniques: int
    n_in_pairs: int
    dis: float
    q: float
    n_distinct: int
    msus: MsuSearch = field(repr=False)
    provenance: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def n_records(self) -> int:
        """Number of records."""
        return int(self.scores.size)

    def attribute_contributions(self) -> pd.Series:
        """Percent of the total SUDA score due to each key (sdcMicro's definition).

        ``100 sum_i c_{iv} s_i / sum_i s_i``; 0 for every key when no record has
        an MSU. Percentages add up to more than 100 when MSUs have several keys.
        """
        total = float(self.scores.sum())
        raw = self.contributions.to_numpy().T @ self.scores
        pct = 100.0 * raw / total if total > 0 else np.zeros(len(self.keys))
        return pd.Series(pct, index=pd.Index(self.keys, name="key"), name="contribution")

    def records_frame(self) -> pd.DataFrame:
        """One row per record in input order: the columns of ``records.csv``.

        Columns ``record`` (0-based row number), ``suda_score``,
        ``dis_suda_score`` and ``contribution_<key>`` for each key.
        """
        out = {
            "record": np.arange(self.n_records, dtype=np.int64),
            "suda_score": self.scores,
            "dis_suda_score": self.dis_scores,
        }
        for k in self.keys:
            out[f"contribution_{k}"] = self.contributions[k].to_numpy()
        return pd.DataFrame(out)

    def summary(self) -> dict[str, Any]:
        """File-level summary (plain Python types, ready for ``summary.json``)."""
        from sdcbayes._version import __version__

        per_size = self.msu_counts.to_numpy().sum(axis=0)
        d = self.dis_scores
        cuts = np.concatenate([[-np.inf], np.array(_DIS_BREAKS) + np.finfo(float).eps, [np.inf]])
        hist = np.histogram(d, bins=cuts)[0]
        return {
            "sdcbayes_version": __version__,
            "method": "suda",
            "n_records": self.n_records,
            "keys": list(self.keys),
            "n_keys": len(self.keys),
            "max_size": self.max_size,
            "score_method": self.score_method,
            "msu_size_scores": [float(w) for w in self.size_weights],
            "dis_fraction": self.dis_fraction,
            "n_distinct": self.n_distinct,
            "n_sample_uniques": self.n_uniques,
            "n_in_pairs": self.n_in_pairs,
            "dis": self.dis,
            "dis_q": self.q,
            "n_records_with_msu": int(np.count_nonzero(self.scores > 0)),
            "n_msus": int(per_size.sum()),
            "n_msus_by_size": {str(k + 1): int(c) for k, c in enumerate(per_size)},
            "suda_score_total": float(self.scores.sum()),
            "suda_score_max": float(self.scores.max()) if self.scores.size else 0.0,
            "dis_suda_score_max": float(d.max()) if d.size else 0.0,
            "dis_suda_score_sum": float(d.sum()),
            "dis_suda_intervals": {lab: int(c) for lab, c in zip(_DIS_LABELS, hist, strict=True)},
            "attribute_contributions": {
                k: float(v) for k, v in self.attribute_contributions().items()
            },
        }


def suda(
    frame_or_codes: Any,
    keys: Sequence[str] | str | None = None,
    max_size: int | None = None,
    dis_fraction: float = 0.01,
    missing: Any = None,
    score_method: str = "elliot",
) -> SudaResult:
    """SUDA and DIS-SUDA scores of every record (seed 001, section 3.5).

    Parameters
    ----------
    frame_or_codes : pandas.DataFrame or array_like
        The microdata (``keys`` name the key columns), or a 2-D array of key
        values (records x keys; ``keys`` are then optional column names). A
        polars DataFrame or a pyarrow Table (anything with a ``to_pandas()``
        method) is converted first, as :class:`~sdcbayes.microdata.Microdata` does.
    keys : list of str, optional
        Key variables (required for a DataFrame).
    max_size : int, optional
        Largest MSU size ``M`` (1..number of keys); default all keys.
    dis_fraction : float, default 0.01
        Sampling fraction ``pi`` for the DIS estimate (sdcMicro ``DisFraction``).
    missing : scalar or list, optional
        Values that code a missing key value, in addition to NaN/None (e.g.
        ``-999``, sdcMicro's default code). Missing values are never part of an
        MSU and match no value.
    score_method : {"elliot", "ihsn"}, default "elliot"
        MSU weighting, see :func:`msu_size_weights`.

    Returns
    -------
    SudaResult

    Raises
    ------
    InputError
        Unknown or repeated keys, bad ``max_size``, ``dis_fraction`` or
        ``score_method``.

    Examples
    --------
    The seed's Table 3 (ages, genders, incomes, education of 8 records) gives
    SUDA scores 0, 0, 0, 0, 8, 4, 6, 8 with ``max_size=3`` (and with the
    default), see ``tests/test_risk_suda.py``.
    """
    if score_method not in SCORE_METHODS:
        raise InputError(
            f"score_method {score_method!r} is unknown; use one of "
            f"{', '.join(map(repr, SCORE_METHODS))}."
        )
    pi = _check_fraction(dis_fraction)
    input_type = type(frame_or_codes).__name__
    # a polars/pyarrow table is a frame with named columns, not an array of key values
    frame_or_codes = as_pandas_frame(frame_or_codes)
    codes, names = _code_input(frame_or_codes, keys, missing)
    n_keys = len(names)
    m = _check_max_size(max_size, n_keys)
    found = find_msus(codes, m)
    weights = msu_size_weights(n_keys, m, score_method)

    scores = found.scores(weights)  # (n,) float64
    # contributions: score-weighted MSU counts per key, divided by the score
    contrib = found.key_scores(weights)
    has = scores > 0
    contrib[has] /= scores[has, None]
    dis = float(dis_estimate(found.n_uniques, found.n_in_pairs, pi))
    dis_scores = dis_suda_scores(scores, found.n_uniques, dis, n_keys)

    index = pd.RangeIndex(codes.shape[0], name="record")
    # F-ordered arrays become DataFrames without a transposing copy
    contributions = pd.DataFrame(
        contrib, index=index, columns=pd.Index(names, name="key"), copy=False
    )
    msu_counts = pd.DataFrame(
        found.counts(), index=index, columns=pd.Index(range(1, m + 1), name="msu_size"),
        copy=False,
    )
    return SudaResult(
        keys=names,
        max_size=m,
        score_method=score_method,
        dis_fraction=pi,
        size_weights=weights,
        scores=scores,
        dis_scores=dis_scores,
        contributions=contributions,
        msu_counts=msu_counts,
        n_uniques=found.n_uniques,
        n_in_pairs=found.n_in_pairs,
        dis=dis,
        q=dis_q_exponent(n_keys),
        n_distinct=found.n_distinct,
        msus=found,
        provenance=stamp(
            "suda",
            data_summary={"n_records": int(codes.shape[0]), "keys": names,
                          "input_type": input_type},
            settings={"max_size": max_size, "max_size_used": m, "dis_fraction": pi,
                      "missing": _missing_values(missing), "score_method": score_method},
        ),
    )
