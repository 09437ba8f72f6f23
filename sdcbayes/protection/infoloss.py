"""Information loss: direct measures and benchmarking indicators (seed 001, section 5).

Direct measures (section 5.1) compare the original and protected values:

* IL1 (Yancey, Winkler & Creecy 2002) for numeric variables,
  IL1 = 1/(n p) Σ_i Σ_j |x_ij − z_ij| / (√2 S_j), S_j the standard deviation of
  the original variable j (sdcMicro ``dUtility(method="IL1old")``; with
  ``average=False`` the plain sum, sdcMicro's ``"IL1s"``);
* for categorical variables, the share of values changed and the share
  suppressed (set to missing).

Benchmarking indicators (section 5.2) compare estimates of statistics users
care about, computed on the original and the protected file: the relative
difference of the estimates and the overlap of their confidence intervals
(Karr et al. 2006): for intervals (l, u) and (l', u') with overlap
o = max(0, min(u, u') − max(l, l')), J = ½ (o/(u − l) + o/(u' − l')); J = 1 for
identical intervals, 0 for disjoint ones.

This module may import NumPy, SciPy and pandas only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.protection.base import check_columns, check_frame

__all__ = [
    "il1",
    "categorical_loss",
    "ci_overlap",
    "mean_ci",
    "proportion_ci",
    "ols_ci",
    "benchmark",
]


def _aligned(original: pd.DataFrame, protected: pd.DataFrame, columns: Any) -> list[str]:
    check_frame(original, "original")
    check_frame(protected, "protected")
    cols = check_columns(original, columns, "columns")
    check_columns(protected, cols, "columns")
    if len(original) != len(protected):
        raise InputError(
            f"original has {len(original)} rows and protected {len(protected)}; compare a file "
            "with its own protected version (same records, same order)"
        )
    return cols


def il1(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    columns: Sequence[str] | str,
    *,
    average: bool = True,
) -> float:
    """IL1 of numeric variables (seed 001, section 5.1; Yancey et al. 2002).

    IL1 = 1/(n p) Σ_i Σ_j |x_ij − z_ij| / (√2 S_j) with S_j the sample standard
    deviation (ddof = 1) of the original variable. Pairs where either value is
    missing are left out of the sum (as sdcMicro does), the divisor stays n p.

    Parameters
    ----------
    original, protected : pandas.DataFrame
        Same records in the same order.
    columns : str or sequence of str
        Numeric variables.
    average : bool, default True
        Divide by n p (IL1); False returns the sum (sdcMicro's IL1s).
    """
    cols = _aligned(original, protected, columns)
    x = original[cols].to_numpy(dtype=np.float64, na_value=np.nan)
    z = protected[cols].to_numpy(dtype=np.float64, na_value=np.nan)
    s = np.nanstd(x, axis=0, ddof=1)
    if (~(s > 0)).any():
        bad = [c for c, v in zip(cols, s, strict=True) if not v > 0]
        raise InputError(f"columns {bad} are constant; IL1 scales by their spread, drop them")
    terms = np.abs(x - z) / (np.sqrt(2.0) * s)
    total = float(np.nansum(terms))
    return total / x.size if average else total


def categorical_loss(
    original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | str
) -> pd.DataFrame:
    """Share of changed and of suppressed values per categorical variable (seed 001, 5.1).

    Returns
    -------
    pandas.DataFrame
        Indexed by variable: ``n``, ``n_changed`` (both observed, different),
        ``n_suppressed`` (observed originally, missing after), ``share_changed``,
        ``share_suppressed``, ``share_lost`` (their sum), all shares over n.
    """
    cols = _aligned(original, protected, columns)
    rows = {}
    for c in cols:
        a = original[c].reset_index(drop=True)
        b = protected[c].reset_index(drop=True)
        a_obs = a.notna().to_numpy()
        b_obs = b.notna().to_numpy()
        both = a_obs & b_obs
        diff = np.zeros(len(a), dtype=bool)
        diff[both] = a[both].astype(object).to_numpy() != b[both].astype(object).to_numpy()
        sup = a_obs & ~b_obs
        n = len(a)
        rows[c] = {
            "n": n,
            "n_changed": int(diff.sum()),
            "n_suppressed": int(sup.sum()),
            "share_changed": diff.sum() / n if n else np.nan,
            "share_suppressed": sup.sum() / n if n else np.nan,
        }
    out = pd.DataFrame.from_dict(rows, orient="index")
    out["share_lost"] = out["share_changed"] + out["share_suppressed"]
    out.index.name = "variable"
    return out


def ci_overlap(lo1: Any, hi1: Any, lo2: Any, hi2: Any) -> np.ndarray:
    """Confidence-interval overlap J (Karr et al. 2006; seed 001, section 5.2).

    J = ½ (o/(hi1 − lo1) + o/(hi2 − lo2)), o = max(0, min(hi1, hi2) − max(lo1, lo2)).
    Broadcasts over arrays.
    """
    lo1, hi1, lo2, hi2 = (np.asarray(v, dtype=np.float64) for v in (lo1, hi1, lo2, hi2))
    if ((hi1 < lo1) | (hi2 < lo2)).any():
        raise InputError("every interval needs lo <= hi")
    o = np.clip(np.minimum(hi1, hi2) - np.maximum(lo1, lo2), 0.0, None)
    # A zero-width interval (a point) counts as fully covered when it lies inside the other.
    with np.errstate(invalid="ignore", divide="ignore"):
        r1 = np.where(hi1 > lo1, o / (hi1 - lo1), (lo1 >= lo2) & (lo1 <= hi2))
        r2 = np.where(hi2 > lo2, o / (hi2 - lo2), (lo2 >= lo1) & (lo2 <= hi1))
    return 0.5 * (r1 + r2)


Statistic = Callable[[pd.DataFrame], pd.DataFrame]


def _frame(names: list[str], est: Any, lo: Any, hi: Any) -> pd.DataFrame:
    return pd.DataFrame(
        {"estimate": np.atleast_1d(est), "lo": np.atleast_1d(lo), "hi": np.atleast_1d(hi)},
        index=pd.Index(names, name="parameter"),
    )


def mean_ci(column: str, weight: str | None = None, level: float = 0.95) -> Statistic:
    """A statistic for :func:`benchmark`: the (weighted) mean of ``column`` with a normal CI.

    Unweighted: x̄ ± z s/√n. Weighted: the ratio estimator Σ w x / Σ w with the
    linearised standard error √(n/(n − 1) Σ w² (x − x̄_w)²) / Σ w. Records with
    a missing value (suppressed) are left out.
    """
    from scipy import stats  # imported here: keeps `import sdcbayes` cheap

    z = stats.norm.ppf(0.5 + level / 2.0)

    def stat(frame: pd.DataFrame) -> pd.DataFrame:
        x = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
        w = (
            np.ones_like(x)
            if weight is None
            else frame[weight].to_numpy(dtype=np.float64, na_value=np.nan)
        )
        ok = np.isfinite(x) & np.isfinite(w)
        x, w = x[ok], w[ok]
        n = x.size
        m = np.sum(w * x) / np.sum(w)
        se = np.sqrt(n / (n - 1) * np.sum(w**2 * (x - m) ** 2)) / np.sum(w)
        return _frame([f"mean({column})"], m, m - z * se, m + z * se)

    return stat


def proportion_ci(
    column: str, value: Any, weight: str | None = None, level: float = 0.95
) -> Statistic:
    """A statistic for :func:`benchmark`: the share of records with ``column == value``.

    The mean of the indicator with :func:`mean_ci`'s interval; records with the
    value missing are left out.
    """
    inner_name = "__indicator__"

    def stat(frame: pd.DataFrame) -> pd.DataFrame:
        s = frame[column]
        ind = (s == value).astype(np.float64).where(s.notna())
        tmp = pd.DataFrame({inner_name: ind})
        if weight is not None:
            tmp[weight] = frame[weight].to_numpy()
        res = mean_ci(inner_name, weight, level)(tmp)
        res.index = pd.Index([f"share({column}=={value})"], name="parameter")
        return res

    return stat


def ols_ci(y: str, x: Sequence[str], level: float = 0.95) -> Statistic:
    """A statistic for :func:`benchmark`: OLS coefficients of ``y`` on ``x`` (with intercept).

    Classical standard errors σ̂² (X'X)^{-1}, t quantiles with n − p degrees of
    freedom; complete cases only (seed 001, Figure 3 compares regression
    coefficients and their intervals before and after protection).
    """
    from scipy import stats  # imported here: keeps `import sdcbayes` cheap

    xs = [x] if isinstance(x, str) else list(x)

    def stat(frame: pd.DataFrame) -> pd.DataFrame:
        data = frame[[y, *xs]].astype(np.float64).dropna()
        yy = data[y].to_numpy()
        xx = np.column_stack([np.ones(len(data)), data[xs].to_numpy()])
        n, p = xx.shape
        if n <= p:
            raise InputError(f"only {n} complete records for {p} coefficients; use fewer x")
        beta, *_ = np.linalg.lstsq(xx, yy, rcond=None)
        resid = yy - xx @ beta
        sigma2 = resid @ resid / (n - p)
        se = np.sqrt(np.diag(sigma2 * np.linalg.pinv(xx.T @ xx)))
        t = stats.t.ppf(0.5 + level / 2.0, n - p)
        names = [f"{y}~(Intercept)"] + [f"{y}~{c}" for c in xs]
        return _frame(names, beta, beta - t * se, beta + t * se)

    return stat


def benchmark(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    statistics: Mapping[str, Statistic] | Sequence[Statistic],
) -> pd.DataFrame:
    """Benchmarking indicators: estimates before and after protection (seed 001, 5.2).

    Parameters
    ----------
    original, protected : pandas.DataFrame
    statistics : mapping name -> callable, or sequence of callables
        Each callable takes a frame and returns a DataFrame indexed by parameter
        with columns ``estimate``, ``lo``, ``hi`` (see :func:`mean_ci`,
        :func:`proportion_ci`, :func:`ols_ci`).

    Returns
    -------
    pandas.DataFrame
        One row per (statistic, parameter): ``estimate_original``,
        ``lo_original``, ``hi_original``, the same for ``protected``,
        ``relative_difference`` = (protected − original)/|original| and
        ``ci_overlap`` (:func:`ci_overlap`).
    """
    check_frame(original, "original")
    check_frame(protected, "protected")
    items = (
        list(statistics.items())
        if isinstance(statistics, Mapping)
        else [(f"stat{i}", s) for i, s in enumerate(statistics)]
    )
    if not items:
        raise InputError("statistics is empty; pass e.g. [mean_ci('income')]")
    parts = []
    for name, fn in items:
        a = fn(original)
        b = fn(protected)
        both = a.add_suffix("_original").join(b.add_suffix("_protected"), how="outer")
        both.insert(0, "statistic", name)
        parts.append(both.reset_index())
    out = pd.concat(parts, ignore_index=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["relative_difference"] = (
            out["estimate_protected"] - out["estimate_original"]
        ) / np.abs(out["estimate_original"])
    out["ci_overlap"] = ci_overlap(
        out["lo_original"], out["hi_original"], out["lo_protected"], out["hi_protected"]
    )
    return out
