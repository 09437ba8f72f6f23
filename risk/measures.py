"""Classic file-level SDC measures: global risk, benchmark, households, k-anonymity, l-diversity.

Seed ``001_…`` (Templ, Meindl, Kowarik & Chen 2014, IHSN *Introduction to SDC*),
Sections 3.1-3.4, and ARCHITECTURE.md "Notation"; definitions matched to sdcMicro
(``measure_risk``, ``ldiversity``, ``print.sdcMicroObj``) where the guide is
silent. :func:`risky_cells` counts the unsafe cells of every combination of keys
up to a dimension (sdcMicro's ``riskyCells``, mu-Argus's combinations). Everything
is vectorised over records (``np.bincount``, sorting), so a
file of 10^7 records takes well under a second per measure.

Inputs are per-record arrays in input order: ``record_risk`` (``r_i``, e.g.
``E(1/F_k | f_k)`` of the record's cell), ``fk`` (the sample frequency of the
record's cell), ``Fk_hat`` (its weight sum), household codes, or a
record -> cell index (``Microdata.record_cell``; ``-1`` = excluded record).
Arrays are paired by position; two pandas Series with different indexes are
refused (as in :mod:`sdcbayes.risk.individual`), never paired silently.

Records without a risk (NaN, e.g. dropped by ``Microdata(missing="drop")``) are
left out everywhere, as in :func:`sdcbayes.risk.assess.assess_closed_form`: the
rates divide by the records that have a risk, and a household's risk is the
product over its members that have one (see :func:`household_risk`).

Imports NumPy, pandas and sdcbayes' data layer and input checks (no SciPy).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from sdcbayes._version import __version__
from sdcbayes.exceptions import InputError
from sdcbayes.microdata import Microdata, _group
from sdcbayes.models.base import whole_number
from sdcbayes.risk.individual import _series_index

__all__ = [
    "benchmark_rule",
    "check_max_global_risk",
    "expected_reidentification_rate",
    "expected_reidentifications",
    "file_summary",
    "global_risk_threshold",
    "household_expected_reidentifications",
    "household_risk",
    "k_anonymity_violations",
    "l_diversity",
    "mad",
    "n_k_anonymity_violations",
    "n_sample_uniques",
    "risky_cells",
    "weighted_k_anonymity_violations",
]

#: Consistency constant of the MAD for the normal distribution (R's ``mad`` default).
MAD_CONSTANT = 1.4826


#: pandas' inferred kinds of an object array that hold only numbers (and missing values).
_NUMBER_KINDS = ("integer", "floating", "mixed-integer-float", "decimal", "boolean", "empty")


def _as_numbers(x, name: str, what: str) -> np.ndarray:
    """``x`` as a 1-d numeric array (bool, int or float; missing values as NaN).

    The one gate for the per-record arrays of this module: None, text, dates and
    tables (2-d) are refused with an :class:`InputError` that names ``name`` and
    the fix, where plain ``np.asarray`` would let them through as a NaN, a
    string comparison or a silently flattened table.
    """
    if x is None:
        raise InputError(f"{name} is None; pass {what} (an array, a list or a pandas Series)")
    arr = np.asarray(x)
    if arr.dtype.kind == "O":
        kind = pd.api.types.infer_dtype(arr.ravel(), skipna=True)
        if kind not in _NUMBER_KINDS:
            raise InputError(
                f"{name} must be numeric ({what}) but holds {kind} values; convert it "
                "first, e.g. pd.to_numeric(values)"
            )
        arr = pd.to_numeric(arr.ravel()).astype(float).reshape(arr.shape)  # None/NA -> NaN
    elif arr.dtype.kind not in "biuf":
        raise InputError(
            f"{name} must be numeric ({what}) but has dtype {arr.dtype}; convert it first, "
            "e.g. pd.to_numeric(values)"
        )
    if arr.ndim > 1:
        raise InputError(
            f"{name} has shape {arr.shape}; pass a 1-d array ({what}), e.g. one column, "
            "or .ravel() it first if flattening the table is what you mean"
        )
    return arr.reshape(-1)


def _risk(record_risk, name: str = "record_risk") -> np.ndarray:
    r = _as_numbers(record_risk, name, "one risk per record").astype(float, copy=False)
    if np.any((r < 0) | (r > 1)):
        raise InputError(f"{name} must lie in [0, 1] (a probability); fix the risk column")
    return r


def _not_negative(arr: np.ndarray, name: str, what: str) -> np.ndarray:
    """``arr`` unchanged; InputError when it holds a negative or infinite value.

    A frequency or a weight sum is a finite count >= 0. Fractions pass (the wildcard
    fk of ``missing="wildcard"`` with ``0 < alpha < 1`` are fractional); NaN means
    "no count" and passes too.
    """
    bad = (arr < 0) | np.isinf(arr)  # NaN compares False
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{name} must hold {what}, finite numbers >= 0, but entry {i} is {arr[i].item()!r}; "
            "fix the column (NaN marks an entry without a count)"
        )
    return arr


def _counts(fk, name: str = "fk") -> np.ndarray:
    arr = _as_numbers(fk, name, "one sample frequency per record or cell")
    return _not_negative(arr, name, "sample frequencies")


def _is_bool(x) -> bool:
    # NumPy's bool is no subclass of Python's: refuse both (True is no k, c or count).
    return isinstance(x, (bool, np.bool_))


def _n_known(r: np.ndarray) -> int:
    """Number of records that have a risk (not NaN)."""
    return int(np.count_nonzero(~np.isnan(r)))


def _nansum(x: np.ndarray) -> float:
    # np.nansum copies the array; take the plain sum unless a NaN is present.
    total = float(np.sum(x))
    return float(np.nansum(x)) if np.isnan(total) else total


def _k(k) -> int:
    v = whole_number(k)
    if v is None or v < 1:
        raise InputError(
            f"The 'k' parameter must be an int in the range [1, inf). Got {k!r} instead."
        )
    return v


# --- global risk (seed 001, Section 3.4) --------------------------------------


def expected_reidentifications(record_risk) -> float:
    """Return the expected number of re-identifications, ``ER = sum_i r_i``.

    Seed 001, Section 3.4 ("the easiest measure of global risk is to sum up the
    record-level disclosure risks"; 0.966 for its Table 1). NaN risks are
    skipped, as in sdcMicro's ``global_risk_ER``.
    """
    return _nansum(_risk(record_risk))


def expected_reidentification_rate(record_risk) -> float:
    """``ER / n`` with ``n`` the records that have a risk (sdcMicro's ``global_risk``).

    Records whose risk is NaN (dropped for missing keys by
    ``Microdata(missing="drop")``) are left out of both sums, as in
    :func:`sdcbayes.risk.assess.assess_closed_form` (whose ``n_records`` counts
    the kept records). sdcMicro divides by all records, which is the same
    number there: it never drops a record (a missing key matches anything, as
    with sdcbayes' default ``missing="wildcard"``). NaN when no record has a risk.
    """
    r = _risk(record_risk)
    n = _n_known(r)
    return _nansum(r) / n if n else float("nan")


def check_max_global_risk(max_global_risk) -> float:
    """Check a target re-identification rate: a number strictly between 0 and 1.

    The bounds are sdcMicro's (``measure_risk`` stops with "max_global_risk argument
    must be between 0 and 1!"). :func:`sdcbayes.risk.assess.assess_closed_form`,
    :func:`sdcbayes.risk.posterior_assess.assess_from_posterior` and
    :func:`~sdcbayes.risk.posterior_assess.assess_posterior` check with it; ``sdcbayes
    assess --max-global-risk`` checks the same bounds first, in its option's words.

    Parameters
    ----------
    max_global_risk : float
        The target as given by the user.

    Returns
    -------
    float
        ``max_global_risk`` as a float.

    Raises
    ------
    InputError
        For a non-number (a bool or text included) or a value outside (0, 1).
    """
    ok_type = (isinstance(max_global_risk, (int, float, np.integer, np.floating))
               and not _is_bool(max_global_risk))
    value = float(max_global_risk) if ok_type else float("nan")
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise InputError(
            f"max_global_risk must be a rate strictly between 0 and 1 (the expected "
            f"re-identifications per record to stay under); got {max_global_risk!r}: pass "
            "e.g. 0.01 for 1% (sdcMicro's default)"
        )
    return value


def global_risk_threshold(record_risk, max_global_risk: float = 0.01) -> float:
    r"""Return the individual-risk threshold that brings the file under a global-risk target.

    sdcMicro's ``measure_risk(..., max_global_risk)`` ``global_threshold``
    (R/measure_risk.R and its C++ routine ``measure_threshold``, which follow the
    mu-Argus 4.1 manual, Section 2.3.4.1): records above the threshold ``t`` are to be
    protected, and a protected record is taken to keep a risk of ``t`` (mu-Argus's
    assumption behind the rule). The file's re-identification rate (seed 001,
    Section 3.4: ER / n, :func:`expected_reidentification_rate`) after protection is
    then

    .. math:: \rho(t) = \frac{1}{n} \sum_i \min(r_i, t),

    and ``t`` is the largest risk value ``r_j`` of the file, below the largest one,
    with :math:`\rho(r_j) <` ``max_global_risk`` (strict). The candidates are the
    distinct risk values only, so tied records are all above or all below ``t``.

    Parameters
    ----------
    record_risk : array_like, shape ``(record,)``
        Individual risk of each record, in [0, 1] (e.g. the closed-form risk
        sdcMicro uses, or a posterior mean record risk); NaN for records without
        one.
    max_global_risk : float, default 0.01
        The target rate (expected re-identifications per record), strictly between
        0 and 1; sdcMicro's default 0.01.

    Returns
    -------
    float
        The threshold ``t``: protecting the records with ``r_i > t`` (strictly
        above) meets the target. Two special values, as sdcMicro's:

        - NaN (sdcMicro's ``NA``) when the file meets the target already
          (:math:`\sum_i r_i < n \cdot` ``max_global_risk``: nothing to protect), and
          when no record has a risk;
        - 0.0 when no risk value of the file is low enough, i.e. the smallest
          risk is at or above ``max_global_risk`` (every record with a risk above
          0 must be protected); sdcMicro's tests print this 0 for their small files
          at the default 0.01 (test_calcRisks.R, test_globalRecode.R).

    Raises
    ------
    InputError
        Before any work: ``max_global_risk`` outside (0, 1) or not a number, or
        ``record_risk`` not a 1-d array of probabilities.

    Notes
    -----
    Records whose risk is NaN (dropped for missing keys by
    ``Microdata(missing="drop")``) are left out, as everywhere in this module: ``n``
    counts the records that have a risk, as in :func:`expected_reidentification_rate`.
    sdcMicro has no such records (it drops none); given an NA risk its routine
    returns NA. Its running sum (one subtraction per record) and the sums here may
    differ in the last bits, which matters only where :math:`n\rho(t)` equals the
    target to the last bit.

    Examples
    --------
    >>> global_risk_threshold([0.5, 0.2, 0.1, 0.01, 0.01], max_global_risk=0.05)
    0.01
    >>> global_risk_threshold([0.02, 0.01, 0.01], max_global_risk=0.1)  # met already
    nan
    """
    rate = check_max_global_risk(max_global_risk)
    r = _risk(record_risk)
    r = r[~np.isnan(r)]
    n = r.size
    if n == 0:
        return float("nan")
    target = rate * n  # sdcMicro compares expected re-identifications, ER < rate * n
    values, counts = np.unique(r, return_counts=True)  # ascending distinct risks
    # rho(t) * n at each distinct value t: the records at or below t keep their risk,
    # the ones above are brought down to t
    below_sum = np.cumsum(values * counts)
    n_above = n - np.cumsum(counts)
    capped = below_sum + values * n_above
    if capped[-1] < target:  # t = max(r) protects nothing: the file is safe as it is
        return float("nan")
    ok = np.flatnonzero(capped[:-1] < target)  # the largest value is never a candidate
    return float(values[ok[-1]]) if ok.size else 0.0


def n_sample_uniques(fk) -> int:
    """Count sample uniques, ``#{records : f_k = 1}`` (seed 001, Section 3.1).

    Works with per-record or per-cell ``fk`` alike: a sample-unique cell holds
    exactly one record.
    """
    return int(np.count_nonzero(_counts(fk) == 1))


# --- benchmark rule (seed 001, Section 3.4) ------------------------------------


def mad(x, constant: float = MAD_CONSTANT) -> float:
    """Median absolute deviation ``constant * median(|x - median(x)|)`` (R's ``stats::mad``)."""
    x = _as_numbers(x, "x", "the values to spread").astype(float, copy=False)
    x = x[~np.isnan(x)]  # as R's mad(na.rm = TRUE): a missing risk is no evidence either way
    med = np.median(x)
    return float(constant * np.median(np.abs(x - med)))


def benchmark_rule(record_risk, *, threshold: float = 0.1, n_mad: float = 2.0) -> np.ndarray:
    r"""Flag records whose risk is high and above the main part of the data.

    Seed 001, Section 3.4, "benchmark approach" (its inequality is lost in the
    seed's text; this is the form of sdcMicro's ``print.sdcMicroObj``,
    ``R/printFunctions.R``): flag record ``i`` when

    .. math:: r_i > 0.1 \quad\text{and}\quad r_i > \mathrm{median}(r) + 2\,\mathrm{MAD}(r),

    with ``MAD`` scaled by 1.4826 (R's ``mad``), both inequalities strict. Note that
    sdcMicro's ``print.measure_risk`` and ``print.indivRisk`` use ``3 * mad``
    instead; pass ``n_mad=3`` to match those.

    Records whose risk is NaN (e.g. dropped for missing keys) are never flagged and
    do not move the median or the MAD, as with R's ``na.rm = TRUE``.

    Parameters
    ----------
    record_risk : array_like, shape ``(record,)``
        Individual risk of each record, in [0, 1] (NaN for records without one).
    threshold : float, default 0.1
        The floor, strictly between 0 and 1 (a risk, not a percentage: at 1 or
        above nothing could ever be flagged). Checked by
        :func:`sdcbayes.risk.assess.check_threshold`, as ``assess --threshold``.
    n_mad : float, default 2.0
        How many MADs above the median, a finite number >= 0.

    Returns
    -------
    ndarray of bool, shape ``(record,)``
        True for each record the rule flags (risk above both cuts); False for the
        others and for records whose risk is NaN.
    """
    # assess imports this module, so its check is imported here, not at the top.
    from sdcbayes.risk.assess import check_threshold

    if threshold is None:
        raise InputError("benchmark_rule needs a threshold strictly between 0 and 1, e.g. 0.1")
    threshold = check_threshold(threshold)
    is_number = isinstance(n_mad, (int, float, np.integer, np.floating)) and not _is_bool(n_mad)
    if not (is_number and math.isfinite(n_mad) and n_mad >= 0):
        raise InputError(
            f"n_mad must be a finite number >= 0 (how many MADs above the median); got "
            f"{n_mad!r}: pass e.g. n_mad=2 (sdcMicro's print) or n_mad=3"
        )
    n_mad = float(n_mad)
    r = _risk(record_risk)
    known = ~np.isnan(r)
    if not known.any():
        return np.zeros(r.size, dtype=bool)
    cut = np.median(r[known]) + n_mad * mad(r[known])
    return (r > threshold) & (r > cut)  # NaN compares False: never flagged


# --- household risk (seed 001, Section 3.3) ------------------------------------


def _per_record(values, size: int, name: str, item: str, other: str) -> np.ndarray:
    """``values`` as a 1-d array of one ``item`` per record.

    InputError for a table (2-d) or a length other than ``other``'s ``size``.
    """
    v = np.asarray(values)
    if v.ndim > 1:
        raise InputError(
            f"{name} has shape {v.shape}; pass a 1-d array, one {item} per record (one "
            "column), or .ravel() it first if flattening the table is what you mean"
        )
    v = v.reshape(-1)
    if v.size != size:
        raise InputError(
            f"{name} has {v.size} entries but {other} has {size}; give one per record"
        )
    return v


def _household_codes(household_codes, size: int) -> tuple[np.ndarray, int]:
    if household_codes is None:
        raise InputError("household_codes is None; pass one household id per record")
    h = _per_record(household_codes, size, "household_codes", "household id", "record_risk")
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

    Members without a risk (NaN: records dropped by ``Microdata(missing="drop")``)
    are left out of the product, and their own entry is NaN; a household none of
    whose members has a risk is NaN. This is the convention of
    :func:`sdcbayes.risk.assess.assess_closed_form` (which calls this function),
    so both routes give the same household risk and
    :func:`household_expected_reidentifications`. It differs from sdcMicro's
    ``1 - prod(1 - r)`` (NA for a household with an NA member, then skipped by
    ``hier_risk_ER``) only where sdcMicro would have NA risks, and it never has
    them on its own: it drops no record but lets a missing key match anything,
    as sdcbayes' default ``missing="wildcard"`` does.

    Parameters
    ----------
    record_risk : array_like, shape ``(record,)``
        Individual risk of each record, in [0, 1] (NaN for records without one).
    household_codes : array_like, shape ``(record,)``
        Any hashable household ids (integer codes take a fast path). Paired with
        ``record_risk`` by position; two pandas Series must share one index.

    Returns
    -------
    ndarray, shape ``(record,)``
        The household risk of each record's household, in input order (NaN for
        records without a risk).

    Raises
    ------
    InputError
        On risks outside [0, 1], None, text or 2-d input, lengths that differ,
        missing household ids, or two Series with different indexes.
    """
    _series_index(record_risk=record_risk, household_codes=household_codes)
    r = _risk(record_risk)
    h, n_h = _household_codes(household_codes, r.size)
    known = ~np.isnan(r)
    all_known = bool(known.all())
    certain = r >= 1.0  # NaN compares False
    # log1p(-1) = -inf: count the certain members apart instead of summing infinities;
    # members without a risk add log1p(0) = 0, i.e. they are left out of the product.
    log_surv = np.bincount(
        h, weights=np.log1p(-np.where(certain | ~known, 0.0, r)), minlength=n_h
    )
    n_certain = np.bincount(h, weights=certain, minlength=n_h)
    hh = np.where(n_certain > 0, 1.0, -np.expm1(log_surv))
    if all_known:
        return hh[h]
    n_with_risk = np.bincount(h, weights=known, minlength=n_h)
    hh[n_with_risk == 0] = np.nan  # no member has a risk: undefined
    out = hh[h]
    out[~known] = np.nan  # a record outside the assessed file has no household risk
    return out


def household_expected_reidentifications(record_risk, household_codes) -> float:
    """Sum over records of the household risk (sdcMicro's ``hier_risk_ER``).

    Seed 001, Section 3.3, summed as in Section 3.4: each record contributes
    its household's risk, so a household of size ``m`` counts ``m`` times (the
    expected number of records disclosed when a re-identified member exposes
    the whole household). Records without a risk contribute nothing and are left
    out of their household's product (see :func:`household_risk`), so this
    equals ``assess_closed_form(...).summary["household_expected_reidentifications"]``.
    """
    return _nansum(household_risk(record_risk, household_codes))


# --- k-anonymity (seed 001, Section 3.2) ---------------------------------------


def k_anonymity_violations(fk, k: int) -> np.ndarray:
    """Flag records violating k-anonymity, ``f_k < k`` (seed 001, Section 3.2).

    Returns a boolean mask over the entries of ``fk`` (per record when ``fk``
    is per record). All eight records of seed 001's Table 1 violate 3-anonymity.

    Parameters
    ----------
    fk : array_like
        Sample frequency of each record's key combination (or of each cell),
        finite and >= 0 (fractional counts are fine); NaN (no count) is never a
        violation.
    k : int
        The k of k-anonymity, a whole number >= 1.

    Returns
    -------
    numpy.ndarray of bool
        Same shape as ``fk``: True where ``fk < k``.

    Raises
    ------
    InputError
        On ``k`` not a whole number >= 1, or ``fk`` not numeric, 2-d, negative
        or infinite.
    """
    k = _k(k)
    return _counts(fk) < k  # NaN (no count) compares False: no violation


def n_k_anonymity_violations(fk, k: int) -> int:
    """Count records violating k-anonymity (per-record ``fk``)."""
    return int(np.count_nonzero(k_anonymity_violations(fk, k)))


def weighted_k_anonymity_violations(Fk_hat, k: int) -> np.ndarray:
    r"""Flag records whose estimated population frequency ``\hat F_k`` is below k.

    The population-level version of seed 001, Section 3.2, on the weight sums
    ``Fk_hat`` (sdcMicro's ``Fk`` column): the seed's rule f_k >= k with the sample
    frequency replaced by the design-based (Horvitz-Thompson) estimate
    ``Fk_hat = sum_i w_i`` of the population frequency (seed 004, eq. 4). This
    variant is the package's own; the seed states the rule for f_k only.
    ``Fk_hat`` must be finite and >= 0 (an InputError otherwise); NaN (no weight
    sum) is never a violation.
    """
    k = _k(k)
    F = _as_numbers(Fk_hat, "Fk_hat", "one weight sum per record or cell").astype(float)
    _not_negative(F, "Fk_hat", "weight sums (estimated population frequencies)")
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


def _list_like(x) -> bool:
    return isinstance(x, (list, tuple, set, frozenset, dict, np.ndarray, pd.Series))


def _one_value_each(name) -> InputError:
    return InputError(
        f"sensitive variable {name!r} holds lists (or other containers) as values; give "
        "each record one value, a number or a text (e.g. join a list into one string "
        "first, or pass each element as a variable of its own)"
    )


def _codes(values, n: int, name) -> np.ndarray:
    try:
        v = _per_record(values, n, f"sensitive variable {name!r}", "value", "record_cell")
    except (InputError, ValueError):
        # np.asarray turns a list of lists into a table (or fails when they are ragged):
        # name the list values, not the shape. Looked at only on failure, so valid input
        # pays nothing.
        if isinstance(values, (list, tuple)) and any(map(_list_like, values)):
            raise _one_value_each(name) from None
        raise
    try:
        codes, _ = pd.factorize(v, use_na_sentinel=True)  # NaN / None -> -1 (missing)
    except TypeError:  # unhashable values, e.g. a Series of lists: no category to count
        raise _one_value_each(name) from None
    return codes


def _sensitive_columns(sensitive) -> dict:
    """``{name: values}`` from a mapping, a DataFrame or a named Series."""
    if isinstance(sensitive, pd.DataFrame):
        return {col: sensitive[col] for col in sensitive.columns}
    if isinstance(sensitive, pd.Series):
        if sensitive.name is None:
            raise InputError(
                "sensitive is a pandas Series without a name, so the result's columns "
                "cannot be named; pass {\"illness\": values} or a DataFrame such as "
                "df[[\"illness\"]]"
            )
        return {sensitive.name: sensitive}  # the sdcMicro habit: ldiv_index="illness"
    if isinstance(sensitive, Mapping):
        return dict(sensitive)
    raise InputError(
        f"sensitive must name its variables: got {type(sensitive).__name__}; pass "
        "{\"illness\": values}, a DataFrame such as df[[\"illness\"]] or a named Series"
    )


def _positive_c(c) -> float:
    try:
        value = float(c)
        # float("2") would let text through: c is a number, as k is (see _k)
        bad = (_is_bool(c) or isinstance(c, (str, bytes))
               or not (math.isfinite(value) and value > 0))
    except (TypeError, ValueError):
        bad = True
    if bad:
        raise InputError(
            f"the recursive l-diversity constant c must be a finite number > 0 "
            f"(sdcMicro's l_recurs_c), not text; got {c!r}: pass e.g. c=2"
        )
    return value


def _n_cells(n_cells, cell: np.ndarray) -> int:
    if n_cells is None:
        return int(cell.max()) + 1 if cell.size else 0
    n_c = whole_number(n_cells)
    if n_c is None or n_c < 0:
        raise InputError(
            f"n_cells must be a whole number >= 0 (the number of cells, e.g. "
            f"len(md.cells)); got {n_cells!r}"
        )
    if cell.size and cell.max() >= n_c:
        raise InputError(
            f"record_cell holds cell {int(cell.max())} but n_cells is {n_c}; raise n_cells"
        )
    return n_c


def l_diversity(
    record_cell, sensitive, *, c: float = 2.0, n_cells: int | None = None
) -> pd.DataFrame:
    r"""Distinct, entropy and recursive (c, l)-diversity of sensitive variables per cell.

    Seed 001, Section 3.2 (Machanavajjhala et al. 2007): a cell (group of records
    sharing the key pattern) is l-diverse if its sensitive variable has at least
    l "well-represented" values. The three per-variable measures match
    sdcMicro's ``ldiversity`` (``src/Measure_Risk.h``), with ``p_v`` the share of
    value ``v`` in the cell:

    - distinct: the number of distinct values;
    - entropy: :math:`\exp(-\sum_v p_v \log p_v)`;
    - recursive (c, l): with counts sorted :math:`r_1 \ge r_2 \ge \dots \ge r_m`,
      the largest :math:`l \ge 2` with :math:`r_1 < c\,(r_l + \dots + r_m)`, else 1;
    - for several sensitive variables, ``MultiEntropy`` / ``MultiRecursive``:
      for each variable, the entropy / recursive l within every sub-group of the
      cell fixed by the *other* sensitive variables, minimised over sub-groups
      and variables.

    The two Multi* columns are sdcbayes' reading of the definition sdcMicro
    intends, not a copy of its output, and need not agree with it: sdcMicro's
    ``Compute_Multi_LDiversity`` (``src/Measure_Risk.h``, read at commit
    cf3251017482) hands ``compute_group_ldiversity`` one freshly ``init_var``'d
    variable, which that function loops over as an array of
    ``MAX_SENSITIVE_VAR`` (99) variables: it skips the variable itself (its
    ``Require_Ldiversity`` is FALSE, so the sub-group entropy and recursive l
    read back are never computed) and reads past it on the stack, with an
    uninitialised ``Nb_Missing_Value_In_Group``. sdcMicro's
    ``MultiEntropy_Ldiversity`` and ``MultiRecursive_Ldiversity`` are therefore
    undefined behaviour, values no definition can match.

    Missing values (NaN/None) form one extra category for distinct and entropy
    when the cell also has real values, and are ignored by the recursive
    measure: as sdcMicro with missing values coded as its ``missing`` code
    (default -999). sdcMicro counts each R ``NA`` as a separate value (NA never
    equals a stored category in ``src/Framework.h``), so its numbers differ for
    a sensitive variable with ``NA``. A cell whose values are all missing gets
    distinct 0, entropy 1, recursive 0. A cell without records (``n_cells`` above the
    observed cells, or a code no kept record has) is NaN in every column: its
    diversity is undefined. The count columns are then float; they are int64
    when every cell has records.

    Parameters
    ----------
    record_cell : array_like of int, shape ``(record,)``
        Cell of each record; negative = excluded record.
    sensitive : mapping name -> array_like, pandas DataFrame or named pandas Series
        The sensitive variable(s), one value per record, paired with
        ``record_cell`` by position (pandas Series must share one index). A
        named Series ``s`` is taken as ``{s.name: s}``.
    c : float
        The recursive-diversity constant (sdcMicro's ``l_recurs_c``, default 2),
        a finite number > 0.
    n_cells : int, optional
        Number of cells, >= 0 (default ``max(record_cell) + 1``).

    Returns
    -------
    pandas.DataFrame
        One row per cell (index ``cell``), columns ``<var>_Distinct_Ldiversity``,
        ``<var>_Entropy_Ldiversity``, ``<var>_Recursive_Ldiversity`` per variable
        and, with two or more variables, ``MultiEntropy_Ldiversity`` and
        ``MultiRecursive_Ldiversity``. ``attrs`` holds ``sdcbayes_version`` and
        ``settings`` (``c``, ``n_cells``, ``sensitive``). Map a column to records
        with ``sdcbayes.risk.assess.cells_to_records(df[col].to_numpy(),
        record_cell)``, which gives excluded records (``record_cell == -1``)
        NaN; plain ``df.to_numpy()[record_cell]`` would give them the last
        cell's row, since NumPy reads index -1 as "the last".

    Raises
    ------
    InputError
        On non-integer ``record_cell``, a ``sensitive`` that names no variable,
        sensitive values that are lists or other containers, lengths that differ,
        ``c`` not a number > 0 (text such as ``"2"`` included), ``n_cells`` below 0
        or below the cells present, or pandas Series with different indexes.
    """
    cols = _sensitive_columns(sensitive)
    _series_index(record_cell=record_cell,
                  **{f"sensitive[{name!r}]": v for name, v in cols.items()})
    cell = np.asarray(record_cell)
    if cell.dtype.kind not in "iu":
        raise InputError("record_cell must be integer cell codes (Microdata.record_cell)")
    if cell.ndim > 1:
        raise InputError(
            f"record_cell has shape {cell.shape}; pass one cell per record "
            "(Microdata.record_cell)"
        )
    cell = cell.reshape(-1)
    if not cols:
        raise InputError("give at least one sensitive variable, e.g. {'illness': values}")
    c = _positive_c(c)
    n_c = _n_cells(n_cells, cell)
    keep = cell >= 0
    codes = {name: _codes(v, cell.size, name)[keep] for name, v in cols.items()}
    cell = cell[keep].astype(np.int64)
    present = np.bincount(cell, minlength=n_c) > 0
    out = {}
    for name, v in codes.items():
        d, e, r = _group_ldiv(cell, v, n_c, c)
        out[f"{name}_Distinct_Ldiversity"] = d
        out[f"{name}_Entropy_Ldiversity"] = e
        out[f"{name}_Recursive_Ldiversity"] = r
    if len(codes) > 1:
        names = list(codes)
        # missing (-1) becomes code 0, so every column is a code in [0, radix)
        radix = {o: int(v.max()) + 2 if v.size else 1 for o, v in codes.items()}
        multi_e = np.full(n_c, np.inf)
        multi_r = np.full(n_c, np.iinfo(np.int64).max)
        for name in names:
            others = [o for o in names if o != name]
            # Sub-groups: cells split by the values of the other sensitive variables,
            # grouped by one packed int64 code per record (a 1-d sort, where a
            # row-wise np.unique(axis=0) sorts structured rows several times slower);
            # _group renumbers before an int64 overflow.
            sub, n_sub, sub_codes = _group(
                [cell] + [codes[o] + 1 for o in others], [n_c] + [radix[o] for o in others]
            )
            _, e, r = _group_ldiv(sub, codes[name], n_sub, c)
            sub_cell = sub_codes[0]
            np.minimum.at(multi_e, sub_cell, e)
            np.minimum.at(multi_r, sub_cell, r)
        out["MultiEntropy_Ldiversity"] = multi_e
        out["MultiRecursive_Ldiversity"] = multi_r
    if not present.all():
        # an empty cell has no values: every measure is undefined there (NaN), not 0 or 1
        out = {col: np.where(present, v, np.nan) for col, v in out.items()}
    frame = pd.DataFrame(out, index=pd.RangeIndex(n_c, name="cell"))
    frame.attrs["sdcbayes_version"] = __version__
    frame.attrs["settings"] = {
        "c": c,
        "n_cells": n_c,
        "sensitive": [str(name) for name in codes],
    }
    return frame


# --- unsafe combinations (sdcMicro riskyCells; mu-Argus) -------------------------

#: The most key combinations :func:`risky_cells` tabulates in one call (sum over the
#: dimensions d of C(p, d)): 15 keys up to all 15 of them are 32,767; beyond this limit
#: the table is too long to read and the run too long to wait for.
MAX_COMBINATIONS = 100_000

#: How :func:`risky_cells` treats a missing key value.
RISKY_CELLS_MISSING = ("category", "drop")


def _whole_at_least_one(value, name: str, fix: str) -> int:
    """``value`` as an int when it is a whole number >= 1 (not a bool, not text)."""
    v = whole_number(value)  # None for a bool, text or a fraction
    if v is None or v < 1:
        raise InputError(f"{name} must be a whole number >= 1; got {value!r}: {fix}")
    return v


def _risky_keys(frame: pd.DataFrame, keys) -> list:
    # one name is one key; an ordered, non-empty list of distinct names (Microdata's rules)
    keys = Microdata._normalise_keys(keys)
    absent = [k for k in keys if k not in frame.columns]
    if absent:
        shown = ", ".join(str(c) for c in frame.columns[:20])
        more = ", ..." if frame.shape[1] > 20 else ""
        raise InputError(
            f"key(s) {', '.join(repr(k) for k in absent)} not in the data (available: "
            f"{shown}{more}); check the spelling of keys"
        )
    if not frame.columns.is_unique:
        clash = [k for k in keys if int((frame.columns == k).sum()) > 1]
        if clash:
            raise InputError(
                f"column name(s) {', '.join(repr(k) for k in clash)} occur more than once in "
                "the data; rename the duplicates"
            )
    return keys


def _risky_levels(levels, keys: list) -> list[int]:
    if isinstance(levels, Mapping):
        unknown = [k for k in levels if k not in keys]
        lacking = [k for k in keys if k not in levels]
        if unknown or lacking:
            raise InputError(
                "levels must give one identification level per key: "
                + "; ".join(p for p in (
                    f"not keys: {', '.join(repr(k) for k in unknown)}" if unknown else "",
                    f"no level for: {', '.join(repr(k) for k in lacking)}" if lacking else "",
                ) if p)
                + "; pass e.g. levels={" + ", ".join(f"{k!r}: 1" for k in keys[:2]) + ", ...}"
            )
        levels = [levels[k] for k in keys]
    elif isinstance(levels, (str, bytes)) or not hasattr(levels, "__len__"):
        raise InputError(
            f"levels must be a list of whole numbers >= 1, one per key (1 = most "
            f"identifying), got {levels!r}: pass e.g. levels=[1, 1, 2]"
        )
    levels = list(levels)
    if len(levels) != len(keys):
        raise InputError(
            f"levels has {len(levels)} entries but there are {len(keys)} keys; give one "
            "identification level per key, in the order of keys"
        )
    return [_whole_at_least_one(v, f"the identification level of key {k!r}",
                                "levels are whole numbers, 1 for the most identifying keys")
            for k, v in zip(keys, levels, strict=True)]


def _risky_thresholds(threshold, max_dim, levels, n_keys: int) -> tuple[list[int], int]:
    """Per-dimension thresholds and the largest dimension (see :func:`risky_cells`)."""
    fix = ("a cell of at most this many records is unsafe; pass e.g. threshold=3, or one "
           "per dimension such as threshold=(50, 25, 10, 5)")
    if isinstance(threshold, np.ndarray) and threshold.ndim == 0:
        threshold = threshold.item()  # np.array(5): one number, not a sequence
    scalar = not hasattr(threshold, "__len__") or isinstance(threshold, (str, bytes))
    values = [threshold] if scalar else list(threshold)
    if not values:
        raise InputError(f"threshold is empty; {fix}")
    ths = [_whole_at_least_one(t, "threshold" if scalar else f"threshold[{i}]", fix)
           for i, t in enumerate(values)]
    if levels is not None:
        if max_dim is not None:
            raise InputError(
                "give either max_dim or levels, not both: with identification levels the "
                "largest combination has as many keys as there are distinct levels"
            )
        if len(ths) != 1:
            raise InputError(
                f"with identification levels one threshold applies to every table; got "
                f"{len(ths)} thresholds: pass a single number, e.g. threshold={ths[0]}"
            )
        return ths * len(set(levels)), len(set(levels))
    if max_dim is None:
        if scalar:
            raise InputError(
                "a single threshold needs max_dim, the largest number of keys combined: "
                "pass e.g. max_dim=3, or one threshold per dimension, e.g. "
                "threshold=(50, 25, 10)"
            )
        max_dim = len(ths)
    d = _whole_at_least_one(max_dim, "max_dim", f"the combinations have 1 to {n_keys} keys")
    if d > n_keys:
        raise InputError(
            f"max_dim={max_dim!r} is more than the {n_keys} key(s); pass max_dim <= {n_keys}"
        )
    if len(ths) == 1:
        ths = ths * d
    elif len(ths) != d:
        raise InputError(
            f"threshold has {len(ths)} entries but max_dim is {d}; give one threshold per "
            f"dimension 1..{d}, or a single number for all of them"
        )
    return ths, d


def risky_cells(
    frame,
    keys,
    threshold,
    *,
    max_dim: int | None = None,
    levels=None,
    missing: str = "category",
) -> pd.DataFrame:
    r"""Unsafe cells in every combination of 1 to ``max_dim`` keys (sdcMicro's ``riskyCells``).

    mu-Argus's first look at a file: for every combination of ``d`` key variables
    (``d = 1, ..., max_dim``), cross-classify the records and call a cell *unsafe*
    when its sample frequency is at most the threshold of that dimension
    (sdcMicro's ``N <= threshold[d]``); count the unsafe cells and the records in
    them. Low-dimensional combinations with unsafe cells show which keys drive the
    risk, where the full cross-classification (k-anonymity, sample uniques) only
    says that there is one. Seed ``001_…`` (Section 3.5) makes the same point for
    sample uniques: a record unique on all keys may already be unique on a subset
    of them.

    This is sdcMicro's ``riskyCells`` (``R/riskyCells.R``, read at commit
    ``ceaaf20b920b``, and its ``tests/testthat/test_riskyCells.R``). Its reference
    page says it "mimics the approach taken in mu-argus" and refers to the mu-Argus
    5.1 manual (CBS) for the identification levels; that manual was not available
    here, so mu-Argus's behaviour is taken as sdcMicro reproduces it. The terms:

    - counts are unweighted sample frequencies of the cells present in the data
      (a combination of values no record has is no cell);
    - ``threshold`` is one whole number for every dimension or one per dimension
      1..``max_dim``, as sdcMicro's ``threshold = c(50, 25, 10, 5)`` with
      ``maxDim = 4``;
    - with identification ``levels`` (sdcMicro's ``useIdentificationLevel = TRUE``)
      one threshold applies to every table and the combinations go up to as many
      keys as there are distinct levels. sdcMicro's code at that commit forms
      every combination up to that size: its construction of mu-Argus's tables
      from the levels (which would leave some combinations out) is commented out,
      and this function follows the code, so that the numbers agree. The levels
      are recorded in ``attrs["settings"]``;
    - rows come in sdcMicro's order: by dimension, the combinations of each
      dimension in the order of ``itertools.combinations(keys, d)`` (R's
      ``combn``).

    sdcMicro's result has ``unsafe_cells`` and the key and threshold columns;
    ``n_cells``, ``unsafe_records`` and ``n_records`` are added here.

    Parameters
    ----------
    frame : pandas.DataFrame
        The microdata (a polars DataFrame or pyarrow Table is converted). From a
        :class:`sdcbayes.Microdata` ``md``, pass ``md.frame`` and ``md.keys``.
    keys : str or list of str
        The key variables (column names), in the order the combinations take them.
    threshold : int or sequence of int
        Whole numbers >= 1: a cell with at most this many records is unsafe. One
        number applies to every dimension; a sequence gives dimension 1, 2, ...
        in turn (its length is ``max_dim``). With ``levels``, a single number.
    max_dim : int, optional
        The largest number of keys combined, 1 to ``len(keys)``. Default: the
        number of thresholds when ``threshold`` is a sequence (a single
        threshold needs ``max_dim``). Not with ``levels``.
    levels : sequence of int or mapping key -> int, optional
        Identification level of each key (whole numbers >= 1, 1 = most
        identifying; sdcMicro's ``level``). The combinations then go up to as many
        keys as there are distinct levels.
    missing : {"category", "drop"}, default "category"
        A missing key value (NaN, None, pandas NA). ``"category"``: one more value
        of its key, forming cells of its own, as sdcMicro counts (its
        documentation is silent; its code groups with data.table, which keeps NA
        as a value). ``"drop"``: a record with a missing value in one of a
        combination's keys is left out of that combination's table only
        (``n_records`` says how many were tabulated). A code such as -9 is an
        ordinary value either way: make it missing first (``frame.replace``).

    Returns
    -------
    pandas.DataFrame
        One row per key combination, with columns ``dimension`` (its number of
        keys), ``key_1`` ... ``key_<max_dim>`` (its keys, None beyond
        ``dimension``), ``threshold``, ``n_records`` (records tabulated),
        ``n_cells`` (cells present), ``unsafe_cells`` (cells with at most
        ``threshold`` records) and ``unsafe_records`` (records in them). ``attrs``
        holds ``sdcbayes_version`` and ``settings`` (``keys``, ``threshold`` per
        dimension, ``max_dim``, ``levels``, ``missing``, ``n_records_input``).

    Raises
    ------
    InputError
        Before any counting: ``frame`` not a data frame; ``keys`` empty, repeated
        or not columns of ``frame``; a threshold that is not a whole number >= 1
        (text, a bool, 0, 2.5), or as many thresholds as neither 1 nor
        ``max_dim``; ``max_dim`` not a whole number in 1..``len(keys)``, or missing
        with a single threshold; ``levels`` with ``max_dim``, with several
        thresholds, or not one whole number >= 1 per key; an unknown ``missing``;
        more than :data:`MAX_COMBINATIONS` combinations.

    Notes
    -----
    Each combination is one vectorised group-by (the keys' integer codes packed
    into one int64 per record, then counted), so the cost is the number of
    combinations, sum over d of C(p, d), times the records: for p = 15 keys up to
    d = 4, 1,940 passes over the file.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": list("mmmf"), "age": [20, 20, 30, 30]})
    >>> risky_cells(df, ["sex", "age"], threshold=(1, 1))[
    ...     ["key_1", "key_2", "unsafe_cells", "unsafe_records"]]
      key_1 key_2  unsafe_cells  unsafe_records
    0   sex  None             1               1
    1   age  None             0               0
    2   sex   age             2               2
    """
    from itertools import combinations

    from sdcbayes.microdata import _code_column, as_pandas_frame

    frame = as_pandas_frame(frame)
    if not isinstance(frame, pd.DataFrame):
        raise InputError(
            f"frame must be a pandas DataFrame (or a polars DataFrame or pyarrow Table), got "
            f"{type(frame).__name__}; read files with sdcbayes.read_microdata(path)"
        )
    keys = _risky_keys(frame, keys)
    if missing not in RISKY_CELLS_MISSING:
        raise InputError(
            f"missing={missing!r} is not a policy for missing key values here; use "
            f"{' or '.join(repr(m) for m in RISKY_CELLS_MISSING)}"
        )
    level_list = None if levels is None else _risky_levels(levels, keys)
    ths, d_max = _risky_thresholds(threshold, max_dim, level_list, len(keys))
    n_comb = sum(math.comb(len(keys), d) for d in range(1, d_max + 1))
    if n_comb > MAX_COMBINATIONS:
        raise InputError(
            f"{len(keys)} keys up to {d_max} at a time give {n_comb:,} combinations, more "
            f"than {MAX_COMBINATIONS:,}; lower max_dim or give fewer keys"
        )

    # each key coded once: int64 codes in [0, radix), missing as code 0 ("category") or
    # flagged ("drop"); a combination's cells are then a group-by on packed codes
    codes, radix, absent = {}, {}, {}
    for k in keys:
        c, _, nd = _code_column(frame[k])
        miss = c < 0
        if missing == "category":
            codes[k], radix[k] = c + 1, nd + 1
        else:
            codes[k], radix[k] = np.where(miss, 0, c), max(nd, 1)
        absent[k] = miss if miss.any() else None
    n = len(frame)
    rows = []
    for d in range(1, d_max + 1):
        t = ths[d - 1]
        for combo in combinations(keys, d):
            cols = [codes[k] for k in combo]
            gaps = [absent[k] for k in combo if absent[k] is not None]
            if missing == "drop" and gaps:
                keep = ~np.logical_or.reduce(gaps)
                cols = [c[keep] for c in cols]
            n_rec = cols[0].size
            if n_rec:
                group, n_groups, _ = _group(cols, [radix[k] for k in combo])
                size = np.bincount(group, minlength=n_groups)
            else:  # every record misses one of the keys ("drop"): an empty table
                size = np.zeros(0, dtype=np.int64)
            unsafe = size <= t
            rows.append((d, *combo, *([None] * (d_max - d)), t, n_rec, int(size.size),
                         int(np.count_nonzero(unsafe)), int(size[unsafe].sum())))
    columns = ["dimension", *(f"key_{i}" for i in range(1, d_max + 1)), "threshold",
               "n_records", "n_cells", "unsafe_cells", "unsafe_records"]
    values = list(zip(*rows, strict=True))  # rows: at least one combination
    out = pd.DataFrame({
        # key columns as object, None beyond a row's dimension (a list of tuples would
        # turn that None into NaN); the counts as int64
        c: pd.Series(v, dtype=object if c.startswith("key_") else np.int64)
        for c, v in zip(columns, values, strict=True)
    })
    out.attrs["sdcbayes_version"] = __version__
    out.attrs["settings"] = {
        "keys": list(keys),
        "threshold": ths,
        "max_dim": d_max,
        "levels": None if level_list is None else dict(zip(keys, level_list, strict=True)),
        "missing": missing,
        "n_records_input": n,
    }
    return out


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
        Per-record re-identification risk; NaN for records outside the
        assessment (dropped for missing keys), which are left out of every
        measure but ``n_records_input``.
    fk : array_like, shape ``(record,)``
        Sample frequency of each record's cell.
    household_codes : array_like, optional
        Household id per record; adds the household measures (members without a
        risk are left out of their household's product, see
        :func:`household_risk`).
    k_anonymity : int or iterable of int
        The k for which violations are counted; one int ``k`` means ``(k,)``.
    benchmark_threshold, benchmark_n_mad : float
        Passed to :func:`benchmark_rule`.

    The three arrays are paired by position; pandas Series among them must
    share one index.

    Returns
    -------
    dict
        ``sdcbayes_version``, ``n_records`` (records with a risk),
        ``n_records_input``, ``n_sample_uniques``, ``expected_reidentifications``,
        ``expected_reidentification_rate`` (over ``n_records``, as
        :func:`sdcbayes.risk.assess.assess_closed_form`), ``n_above_benchmark``,
        ``k_anonymity_violations`` (``{k: count}``), ``settings`` (the k levels,
        benchmark threshold and n_mad, whether households were given) and, with
        households, ``household_expected_reidentifications`` and
        ``household_expected_reidentification_rate``. JSON-serialisable.
    """
    _series_index(record_risk=record_risk, fk=fk, household_codes=household_codes)
    r = _risk(record_risk)
    f = _counts(fk)
    if f.size != r.size:
        raise InputError(
            f"fk has {f.size} entries but record_risk has {r.size}; give one per record"
        )
    if isinstance(k_anonymity, (int, np.integer)) and not _is_bool(k_anonymity):
        k_anonymity = (k_anonymity,)  # file_summary(..., k_anonymity=3) means "k = 3"
    try:
        ks = [_k(k) for k in k_anonymity]
    except TypeError:
        raise InputError(
            f"k_anonymity must be an int or a list of ints (e.g. (2, 3, 5)); "
            f"got {k_anonymity!r}"
        ) from None
    above = benchmark_rule(r, threshold=benchmark_threshold, n_mad=benchmark_n_mad)
    n = _n_known(r)
    out = {
        "sdcbayes_version": __version__,
        "n_records": n,
        "n_records_input": int(r.size),
        "n_sample_uniques": n_sample_uniques(f),
        "expected_reidentifications": expected_reidentifications(r),
        "expected_reidentification_rate": expected_reidentification_rate(r),
        "n_above_benchmark": int(np.count_nonzero(above)),
        "k_anonymity_violations": {k: n_k_anonymity_violations(f, k) for k in ks},
    }
    if household_codes is not None:
        her = household_expected_reidentifications(r, household_codes)
        out["household_expected_reidentifications"] = her
        out["household_expected_reidentification_rate"] = her / n if n else float("nan")
    out["settings"] = {
        "k_anonymity": ks,
        "benchmark_threshold": float(benchmark_threshold),
        "benchmark_n_mad": float(benchmark_n_mad),
        "households": household_codes is not None,
    }
    return out
