"""Classic file-level SDC measures: global risk, benchmark, households, k-anonymity, l-diversity.

Seed ``001_…`` (Templ, Meindl, Kowarik & Chen 2014, IHSN *Introduction to SDC*),
Sections 3.1-3.4, and DESIGN.md "Notation"; definitions matched to sdcMicro
(``measure_risk``, ``ldiversity``, ``print.sdcMicroObj``) where the guide is
silent. Everything is vectorised over records (``np.bincount``, sorting), so a
file of 10^7 records takes well under a second per measure.

Inputs are per-record arrays in input order: ``record_risk`` (``r_i``, e.g.
``E(1/F_k | f_k)`` of the record's cell), ``fk`` (the sample frequency of the
record's cell), ``Fk_hat`` (its weight sum), household codes, or a
record -> cell index (``Microdata.record_cell``; ``-1`` = excluded record).

Imports NumPy and pandas only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError

__all__ = [
    "benchmark_rule",
    "expected_reidentification_rate",
    "expected_reidentifications",
    "file_summary",
    "household_expected_reidentifications",
    "household_risk",
    "k_anonymity_violations",
    "l_diversity",
    "mad",
    "n_k_anonymity_violations",
    "n_sample_uniques",
    "weighted_k_anonymity_violations",
]

#: Consistency constant of the MAD for the normal distribution (R's ``mad`` default).
MAD_CONSTANT = 1.4826


def _risk(record_risk) -> np.ndarray:
    r = np.asarray(record_risk, dtype=float).ravel()
    if np.any((r < 0) | (r > 1)):
        raise InputError("record_risk must lie in [0, 1] (a probability); fix the risk column")
    return r


def _nansum(x: np.ndarray) -> float:
    # np.nansum copies the array; take the plain sum unless a NaN is present.
    total = float(np.sum(x))
    return float(np.nansum(x)) if np.isnan(total) else total


def _k(k) -> int:
    try:
        bad = isinstance(k, bool) or not float(k).is_integer() or k < 1
    except (TypeError, ValueError):
        bad = True
    if bad:
        raise InputError(
            f"The 'k' parameter must be an int in the range [1, inf). Got {k!r} instead."
        )
    return int(k)


# --- global risk (seed 001, Section 3.4) --------------------------------------


def expected_reidentifications(record_risk) -> float:
    """Return the expected number of re-identifications, ``ER = sum_i r_i``.

    Seed 001, Section 3.4 ("the easiest measure of global risk is to sum up the
    record-level disclosure risks"; 0.966 for its Table 1). NaN risks are
    skipped, as in sdcMicro's ``global_risk_ER``.
    """
    return _nansum(_risk(record_risk))


def expected_reidentification_rate(record_risk) -> float:
    """``ER / n`` over all records (sdcMicro's ``global_risk``); NaN for an empty file."""
    r = _risk(record_risk)
    return _nansum(r) / r.size if r.size else float("nan")


def n_sample_uniques(fk) -> int:
    """Count sample uniques, ``#{records : f_k = 1}`` (seed 001, Section 3.1).

    Works with per-record or per-cell ``fk`` alike: a sample-unique cell holds
    exactly one record.
    """
    return int(np.count_nonzero(np.asarray(fk).ravel() == 1))


# --- benchmark rule (seed 001, Section 3.4) ------------------------------------


def mad(x, constant: float = MAD_CONSTANT) -> float:
    """Median absolute deviation ``constant * median(|x - median(x)|)`` (R's ``stats::mad``)."""
    x = np.asarray(x, dtype=float).ravel()
    x = x[~np.isnan(x)]  # as R's mad(na.rm = TRUE): a missing risk is no evidence either way
    med = np.median(x)
    return float(constant * np.median(np.abs(x - med)))


def benchmark_rule(record_risk, *, threshold: float = 0.1, n_mad: float = 2.0) -> np.ndarray:
    r"""Flag records whose risk is high and above the main part of the data.

    Seed 001, Section 3.4, "benchmark approach": flag record ``i`` when

    .. math:: r_i > 0.1 \quad\text{and}\quad r_i > \mathrm{median}(r) + 2\,\mathrm{MAD}(r),

    with ``MAD`` scaled by 1.4826 (R's ``mad``), both inequalities strict --
    exactly sdcMicro's ``print.sdcMicroObj`` (``R/printFunctions.R``). Note that
    sdcMicro's ``print.measure_risk`` and ``print.indivRisk`` use ``3 * mad``
    instead; pass ``n_mad=3`` to match those.

    Records whose risk is NaN (e.g. dropped for missing keys) are never flagged and
    do not move the median or the MAD, as with R's ``na.rm = TRUE``.

    Returns
    -------
    ndarray of bool, shape ``(record,)``
    """
    r = _risk(record_risk)
    known = ~np.isnan(r)
    if not known.any():
        return np.zeros(r.size, dtype=bool)
    cut = np.median(r[known]) + n_mad * mad(r[known])
    return (r > threshold) & (r > cut)  # NaN compares False: never flagged


# --- household risk (seed 001, Section 3.3) ------------------------------------


def _household_codes(household_codes, size: int) -> tuple[np.ndarray, int]:
    h = np.asarray(household_codes).ravel()
    if h.size != size:
        raise InputError(
            f"household_codes has {h.size} entries but record_risk has {size}; give one per record"
        )
    if h.dtype.kind in "iu" and (h.size == 0 or (h.min() >= 0 and h.max() < 2 * h.size + 1)):
        return h.astype(np.intp, copy=False), int(h.max()) + 1 if h.size else 0
    codes, uniques = pd.factorize(h)
    if np.any(codes < 0):
        raise InputError("household_codes has missing values; give every record a household id")
    return codes, len(uniques)


def household_risk(record_risk, household_codes) -> np.ndarray:
    r"""Per-record household risk ``1 - prod_{j in h(i)} (1 - r_j)``.

    Seed 001, Section 3.3: the risk that at least one member of the household is
    re-identified, members independent (the guide's example: risks 0.1, 0.05,
    0.01 give 0.15355); sdcMicro's ``hier_risk``. Computed as
    ``-expm1(sum log1p(-r_j))`` per household with ``np.bincount`` (accurate
    for tiny risks); a member with ``r_j = 1`` makes the household risk exactly 1.
    A NaN member risk makes its household's risk NaN.

    Parameters
    ----------
    record_risk : array_like, shape ``(record,)``
    household_codes : array_like, shape ``(record,)``
        Any hashable household ids (integer codes take a fast path).

    Returns
    -------
    ndarray, shape ``(record,)``
        The household risk of each record's household, in input order.
    """
    r = _risk(record_risk)
    h, n_h = _household_codes(household_codes, r.size)
    certain = r >= 1.0
    # log1p(-1) = -inf: count the certain members apart instead of summing infinities.
    log_surv = np.bincount(h, weights=np.log1p(-np.where(certain, 0.0, r)), minlength=n_h)
    n_certain = np.bincount(h, weights=certain, minlength=n_h)
    hh = np.where(n_certain > 0, 1.0, -np.expm1(log_surv))
    return hh[h]


def household_expected_reidentifications(record_risk, household_codes) -> float:
    """Sum over records of the household risk (sdcMicro's ``hier_risk_ER``).

    Seed 001, Section 3.3, summed as in Section 3.4: each record contributes
    its household's risk, so a household of size ``m`` counts ``m`` times (the
    expected number of records disclosed when a re-identified member exposes
    the whole household).
    """
    return _nansum(household_risk(record_risk, household_codes))


# --- k-anonymity (seed 001, Section 3.2) ---------------------------------------


def k_anonymity_violations(fk, k: int) -> np.ndarray:
    """Flag records violating k-anonymity, ``f_k < k`` (seed 001, Section 3.2).

    Returns a boolean mask over the entries of ``fk`` (per record when ``fk``
    is per record). All eight records of seed 001's Table 1 violate 3-anonymity.
    """
    k = _k(k)
    return np.asarray(fk).ravel() < k


def n_k_anonymity_violations(fk, k: int) -> int:
    """Count records violating k-anonymity (per-record ``fk``)."""
    return int(np.count_nonzero(k_anonymity_violations(fk, k)))


def weighted_k_anonymity_violations(Fk_hat, k: int) -> np.ndarray:
    r"""Flag records whose estimated population frequency ``\hat F_k`` is below k.

    The population-level version of seed 001, Section 3.2, on the weight sums
    ``Fk_hat`` (sdcMicro's ``Fk`` column).
    """
    k = _k(k)
    F = np.asarray(Fk_hat, dtype=float).ravel()
    return F < k


# --- l-diversity (seed 001, Section 3.2) ---------------------------------------


def _group_ldiv(group, value, n_groups: int, c: float):
    """Distinct, entropy and recursive (c, l)-diversity of ``value`` within ``group``.

    ``value`` are integer codes, ``-1`` = missing. Returns three arrays of
    length ``n_groups``.
    """
    n_codes = int(value.max()) + 2 if value.size else 1
    pair = group.astype(np.int64) * n_codes + (value.astype(np.int64) + 1)
    upair, cnt = np.unique(pair, return_counts=True)  # sorted by (group, value)
    g = upair // n_codes
    is_missing = (upair % n_codes) == 0
    size = np.bincount(group, minlength=n_groups).astype(float)
    n_present = np.bincount(g[~is_missing], minlength=n_groups)
    has_missing = np.bincount(g[is_missing], minlength=n_groups) > 0
    # sdcMicro counts "missing" as one more category only next to real values.
    distinct = n_present + (has_missing & (n_present > 0))
    counted = ~is_missing | (n_present[g] > 0)
    prop = cnt / size[g]
    plogp = np.where(counted, prop * np.log(prop), 0.0)
    entropy = np.exp(-np.bincount(g, weights=plogp, minlength=n_groups))
    # Recursive (c, l): sort present categories by count, descending, within group;
    # l = max{j >= 2 : r_1 < c (r_j + ... + r_m)}, else 1 (Machanavajjhala et al. 2007).
    gp, cp = g[~is_missing], cnt[~is_missing].astype(float)
    order = np.lexsort((-cp, gp))
    gp, cp = gp[order], cp[order]
    start = np.searchsorted(gp, gp, side="left")
    rank = np.arange(gp.size) - start + 1  # 1-based rank within the group
    total = np.bincount(gp, weights=cp, minlength=n_groups)
    before = np.cumsum(cp) - cp  # global running sum before each position
    suffix = total[gp] - (before - before[start])  # r_j + ... + r_m within the group
    r1 = cp[start]
    ok = (rank >= 2) & (c * suffix > r1)
    recursive = np.where(n_present > 0, 1 + np.bincount(gp, weights=ok, minlength=n_groups), 0)
    return distinct.astype(np.int64), entropy, recursive.astype(np.int64)


def _codes(values, n: int, name: str) -> np.ndarray:
    v = np.asarray(values).ravel()
    if v.size != n:
        raise InputError(
            f"sensitive variable {name!r} has {v.size} values but there are {n} records; "
            "give one value per record"
        )
    codes, _ = pd.factorize(v, use_na_sentinel=True)  # NaN / None -> -1 (missing)
    return codes


def l_diversity(
    record_cell, sensitive, *, c: float = 2.0, n_cells: int | None = None
) -> pd.DataFrame:
    r"""Distinct, entropy and recursive (c, l)-diversity of sensitive variables per cell.

    Seed 001, Section 3.2 (Machanavajjhala et al. 2007): a cell (group of records
    sharing the key pattern) is l-diverse if its sensitive variable has at least
    l "well-represented" values. Definitions match sdcMicro's ``ldiversity``
    (``src/Measure_Risk.h``), with ``p_v`` the share of value ``v`` in the cell:

    - distinct: the number of distinct values;
    - entropy: :math:`\exp(-\sum_v p_v \log p_v)`;
    - recursive (c, l): with counts sorted :math:`r_1 \ge r_2 \ge \dots \ge r_m`,
      the largest :math:`l \ge 2` with :math:`r_1 < c\,(r_l + \dots + r_m)`, else 1;
    - for several sensitive variables, ``MultiEntropy`` / ``MultiRecursive``:
      for each variable, the entropy / recursive l within every sub-group of the
      cell fixed by the *other* sensitive variables, minimised over sub-groups
      and variables.

    Missing values (NaN/None) form one extra category for distinct and entropy
    when the cell also has real values, and are ignored by the recursive
    measure (as sdcMicro). A cell whose values are all missing gets distinct 0,
    entropy 1, recursive 0.

    Parameters
    ----------
    record_cell : array_like of int, shape ``(record,)``
        Cell of each record; negative = excluded record.
    sensitive : mapping name -> array_like, or pandas DataFrame
        The sensitive variable(s), one value per record.
    c : float
        The recursive-diversity constant (sdcMicro's ``l_recurs_c``, default 2).
    n_cells : int, optional
        Number of cells (default ``max(record_cell) + 1``).

    Returns
    -------
    pandas.DataFrame
        One row per cell (index ``cell``), columns ``<var>_Distinct_Ldiversity``,
        ``<var>_Entropy_Ldiversity``, ``<var>_Recursive_Ldiversity`` per variable
        and, with two or more variables, ``MultiEntropy_Ldiversity`` and
        ``MultiRecursive_Ldiversity``. Map to records with
        ``df.to_numpy()[record_cell]``.
    """
    cell = np.asarray(record_cell).ravel()
    if cell.dtype.kind not in "iu":
        raise InputError("record_cell must be integer cell codes (Microdata.record_cell)")
    if isinstance(sensitive, pd.DataFrame):
        sensitive = {col: sensitive[col].to_numpy() for col in sensitive.columns}
    if not sensitive:
        raise InputError("give at least one sensitive variable, e.g. {'illness': values}")
    c = float(c)
    if not c > 0:
        raise InputError(f"the recursive l-diversity constant c must be positive; got {c}")
    keep = cell >= 0
    n_c = int(cell.max()) + 1 if n_cells is None and cell.size else int(n_cells or 0)
    if cell.size and cell.max() >= n_c:
        raise InputError(
            f"record_cell holds cell {int(cell.max())} but n_cells is {n_c}; raise n_cells"
        )
    codes = {name: _codes(v, cell.size, name)[keep] for name, v in sensitive.items()}
    cell = cell[keep].astype(np.int64)
    out = {}
    for name, v in codes.items():
        d, e, r = _group_ldiv(cell, v, n_c, c)
        out[f"{name}_Distinct_Ldiversity"] = d
        out[f"{name}_Entropy_Ldiversity"] = e
        out[f"{name}_Recursive_Ldiversity"] = r
    if len(codes) > 1:
        names = list(codes)
        multi_e = np.full(n_c, np.inf)
        multi_r = np.full(n_c, np.iinfo(np.int64).max)
        for name in names:
            others = np.column_stack([cell] + [codes[o] for o in names if o != name])
            # Sub-groups: cells split by the values of the other sensitive variables.
            sub_keys, sub = np.unique(others, axis=0, return_inverse=True)
            sub = sub.ravel()
            _, e, r = _group_ldiv(sub, codes[name], len(sub_keys), c)
            sub_cell = sub_keys[:, 0]
            np.minimum.at(multi_e, sub_cell, e)
            np.minimum.at(multi_r, sub_cell, r)
        present = np.bincount(cell, minlength=n_c) > 0
        out["MultiEntropy_Ldiversity"] = np.where(present, multi_e, np.nan)
        out["MultiRecursive_Ldiversity"] = np.where(present, multi_r, 0)
    return pd.DataFrame(out, index=pd.RangeIndex(n_c, name="cell"))


# --- file summary ----------------------------------------------------------------


def file_summary(
    record_risk,
    fk,
    household_codes=None,
    *,
    k_anonymity=(2, 3, 5),
    benchmark_threshold: float = 0.1,
    benchmark_n_mad: float = 2.0,
) -> dict:
    """File-level measures of seed 001, Sections 3.1-3.4, as plain Python numbers.

    Parameters
    ----------
    record_risk : array_like, shape ``(record,)``
        Per-record re-identification risk.
    fk : array_like, shape ``(record,)``
        Sample frequency of each record's cell.
    household_codes : array_like, optional
        Household id per record; adds the household measures.
    k_anonymity : iterable of int
        The k for which violations are counted.

    Returns
    -------
    dict
        ``n_records``, ``n_sample_uniques``, ``expected_reidentifications``,
        ``expected_reidentification_rate``, ``n_above_benchmark``,
        ``k_anonymity_violations`` (``{k: count}``) and, with households,
        ``household_expected_reidentifications`` and
        ``household_expected_reidentification_rate``. JSON-serialisable.
    """
    r = _risk(record_risk)
    f = np.asarray(fk).ravel()
    if f.size != r.size:
        raise InputError(
            f"fk has {f.size} entries but record_risk has {r.size}; give one per record"
        )
    above = benchmark_rule(r, threshold=benchmark_threshold, n_mad=benchmark_n_mad)
    out = {
        "n_records": int(r.size),
        "n_sample_uniques": n_sample_uniques(f),
        "expected_reidentifications": expected_reidentifications(r),
        "expected_reidentification_rate": expected_reidentification_rate(r),
        "n_above_benchmark": int(np.count_nonzero(above)),
        "k_anonymity_violations": {int(k): n_k_anonymity_violations(f, k) for k in k_anonymity},
    }
    if household_codes is not None:
        her = household_expected_reidentifications(r, household_codes)
        out["household_expected_reidentifications"] = her
        out["household_expected_reidentification_rate"] = her / r.size if r.size else float("nan")
    return out
