"""Information loss: direct measures and benchmarking indicators (seed 001, section 5).

Direct measures (section 5.1) compare the original and protected values:

* IL1 (Yancey, Winkler & Creecy 2002) for numeric variables,
  IL1 = 1/(n p) Σ_i Σ_j |x_ij − z_ij| / (√2 S_j), S_j the standard deviation of
  the original variable j (sdcMicro ``dUtility(method="IL1old")``; with
  ``average=False`` the plain sum, sdcMicro's ``"IL1s"``);
* the relative difference of the eigenvalues of the standardized original and
  protected variables' covariance (correlation) matrices, sdcMicro
  ``dUtility(method="eigen")``, printed as its "Difference of Eigenvalues";
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

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError, warn_at_caller
from sdcbayes.protection.base import check_columns, check_frame, check_row_order

__all__ = [
    "il1",
    "eigen_difference",
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
    check_row_order(original, protected)
    return cols


def _real_matrices(
    original: pd.DataFrame, protected: pd.DataFrame, cols: list[str], measure: str
) -> tuple[np.ndarray, np.ndarray]:
    """Both frames' ``cols`` as float64 (NaN for missing); non-real columns refused."""
    mats = []
    for role, frame in (("original", original), ("protected", protected)):
        bad = [c for c in cols if not pd.api.types.is_numeric_dtype(frame[c])]
        if bad:
            raise InputError(
                f"columns {bad} of the {role} frame are not numeric; {measure} compares "
                "numeric variables (leave categorical ones out)"
            )
        cplx = [c for c in cols if pd.api.types.is_complex_dtype(frame[c])]
        if cplx:
            # a float conversion would drop the imaginary parts with only a warning
            raise InputError(
                f"columns {cplx} of the {role} frame are complex; {measure} needs real "
                "values (pass the real part or the modulus)"
            )
        mats.append(frame[cols].to_numpy(dtype=np.float64, na_value=np.nan))
    return mats[0], mats[1]


def _original_spread(x: np.ndarray, cols: list[str], measure: str) -> tuple[np.ndarray, list]:
    """Sample sd (ddof = 1) of each original column, NaN below two observed values.

    Refuses infinite values and constant columns (two or more observed values, all
    equal): the measure divides by the spread. Returns the sds and the columns
    with fewer than two observed values (no spread), for the caller to decide.
    """
    inf = [c for c, v in zip(cols, np.isinf(x).any(axis=0), strict=True) if v]
    if inf:
        raise InputError(
            f"columns {inf} have infinite values in the original; {measure} scales by "
            "each variable's spread, which is then undefined: recode (top-code) or drop them"
        )
    n_obs = np.isfinite(x).sum(axis=0)
    s = np.full(len(cols), np.nan)
    for j in np.flatnonzero(n_obs > 1):  # no "degrees of freedom" warning below 2 values
        s[j] = np.std(x[np.isfinite(x[:, j]), j], ddof=1)
    const = [c for c, k, v in zip(cols, n_obs, s, strict=True) if k > 1 and not v > 0]
    if const:
        raise InputError(
            f"columns {const} are constant in the original; {measure} scales by each "
            "variable's spread, drop them"
        )
    return s, [c for c, k in zip(cols, n_obs, strict=True) if k < 2]


def il1(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    columns: Sequence[str] | str,
    *,
    average: bool = True,
) -> float:
    """Compute IL1 of numeric variables (seed 001, section 5.1; Yancey et al. 2002).

    IL1 = 1/(n p) Σ_i Σ_j |x_ij − z_ij| / (√2 S_j) with S_j the sample standard
    deviation (ddof = 1) of the original variable. Pairs where either value is
    missing are left out of the sum (as sdcMicro does), the divisor stays n p.
    This is sdcMicro's ``dUtility(method = "IL1old")``, and ``average=False`` its
    ``"IL1s"``; it is not the "IL1" that sdcMicro's ``print(sdc, "numrisk")``
    shows (``dUtility(method = "IL1")``, a sum of the percentage-relative
    changes 100 |x − z| / |x|).

    Parameters
    ----------
    original, protected : pandas.DataFrame
        Same records in the same order: rows are paired by position. Frames
        with identical indexes, or with indexes that differ as sets, are paired
        as they are; the same unique index labels in a different order raise
        :class:`~sdcbayes.exceptions.InputError` (pass
        ``protected.loc[original.index]``).
    columns : str or sequence of str
        Numeric variables.
    average : bool, default True
        Divide by n p (IL1); False returns the sum (sdcMicro's IL1s).

    Returns
    -------
    float
        IL1 (``average=True``) or the plain sum IL1s; 0 when nothing changed.

    Raises
    ------
    InputError
        Unknown, repeated, non-numeric or complex columns, different numbers of
        rows, rows in a different order (see above); original columns that are
        constant, have infinite values or fewer than two observed values (S_j
        undefined).
    """
    cols = _aligned(original, protected, columns)
    x, z = _real_matrices(original, protected, cols, "IL1")
    s, few = _original_spread(x, cols, "IL1")
    if few:
        raise InputError(
            f"columns {few} have fewer than two observed values in the original; IL1 "
            "scales by their standard deviation, which needs two: drop them"
        )
    terms = np.abs(x - z) / (np.sqrt(2.0) * s)
    total = float(np.nansum(terms))
    return total / x.size if average else total


def eigen_difference(
    original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | str
) -> float:
    """Relative difference of eigenvalues of the standardized variables (sdcMicro "eigen").

    sdcMicro's ``dUtility(method = "eigen")`` (``R/dUtility.R``; Templ 2017,
    *Statistical Disclosure Control for Microdata*, Springer, section on
    information loss of continuous variables), which ``print(sdc, "numrisk")``
    shows, times 100, as the "Difference of Eigenvalues":

        D = Σ_j |e1_j − e2_j| / e1_j,

    e1 and e2 the eigenvalues, each sorted in decreasing order, of
    ``var(scale(x))`` and ``var(scale(z))``: the covariance matrices of the
    original and the protected variables, each variable centred and divided by
    its own standard deviation (ddof = 1) in its own file. D is 0 when the
    protected file has the original's correlation structure; with one variable
    both matrices are [1], so D is 0 whatever the protection.

    Missing values as sdcMicro reads them: ``scale`` leaves them out of each
    variable's mean and standard deviation, and the covariance of each pair of
    variables uses the records where both are observed (R's
    ``use = "pairwise.complete.obs"``, here :meth:`pandas.DataFrame.cov`, which
    also centres each pair on its complete records).

    Parameters
    ----------
    original, protected : pandas.DataFrame
        Same records in the same order, paired by position as in :func:`il1`.
    columns : str or sequence of str
        Numeric variables.

    Returns
    -------
    float
        D >= 0. NaN where sdcMicro's ``try`` gives NA or the ratio is undefined:

        * a variable with fewer than two observed values in the original or the
          protected file, or constant in the protected file (its standardized
          values are undefined; sdcMicro gives NA);
        * a pair of variables with fewer than two records observed in both;
        * an original matrix whose smallest eigenvalue is at most 1e-12 times the
          number of variables: singular (e.g. a variable given under two names),
          where the ratio would divide by rounding noise, or -- possible with
          pairwise-complete covariances, which need not form a positive
          semi-definite matrix -- clearly negative, where the "relative
          difference" to a negative eigenvalue means nothing. sdcMicro returns
          a finite number in this last case; here it is NaN.

    Raises
    ------
    InputError
        Unknown, repeated, non-numeric or complex columns, different numbers of
        rows, rows in a different order; an original column that is constant
        (two or more observed values, all equal) or has infinite values, as for
        :func:`il1`.
    """
    cols = _aligned(original, protected, columns)
    what = "the eigenvalue difference"
    x, z = _real_matrices(original, protected, cols, what)
    _, few = _original_spread(x, cols, what)
    if few:
        return float("nan")  # sd undefined: R's scale() gives NaN, dUtility gives NA

    def eigenvalues(m: np.ndarray) -> np.ndarray | None:
        with np.errstate(invalid="ignore", divide="ignore"):
            n_obs = np.isfinite(m).sum(axis=0)
            if (n_obs < 2).any():
                return None
            sd = np.nanstd(m, axis=0, ddof=1)
            if not (sd > 0).all():
                return None  # R: scale() gives NaN, eigen() fails, dUtility gives NA
            scaled = (m - np.nanmean(m, axis=0)) / sd
        # pairwise-complete covariance, each pair centred on its own records (R's var)
        cov = pd.DataFrame(scaled).cov(min_periods=2).to_numpy()
        if not np.isfinite(cov).all():
            return None
        return np.sort(np.linalg.eigvalsh(cov))[::-1]

    e1, e2 = eigenvalues(x), eigenvalues(z)
    if e1 is None or e2 is None or e1[-1] <= 1e-12 * len(cols):
        return float("nan")
    return float(np.sum(np.abs(e1 - e2) / e1))


def categorical_loss(
    original: pd.DataFrame, protected: pd.DataFrame, columns: Sequence[str] | str
) -> pd.DataFrame:
    """Share of changed and of suppressed values per categorical variable (seed 001, 5.1).

    Parameters
    ----------
    original, protected : pandas.DataFrame
        Same records in the same order, paired by position as in :func:`il1`
        (the same unique index labels in a different order raise
        :class:`~sdcbayes.exceptions.InputError`).
    columns : str or sequence of str
        Categorical variables.

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
    Broadcasts over arrays. A zero-width interval (a point) counts as fully covered
    (ratio 1) when it lies inside the other interval, else 0.

    Parameters
    ----------
    lo1, hi1 : float or array_like
        Bounds of the first interval(s), e.g. from the original file.
    lo2, hi2 : float or array_like
        Bounds of the second interval(s), e.g. from the protected file; broadcast
        against ``lo1`` and ``hi1``.

    Returns
    -------
    numpy.ndarray of float
        J in [0, 1], broadcast over the inputs: 1 for identical intervals, 0 for
        disjoint ones (a 0-d array for scalar inputs); NaN where a bound is NaN
        (an interval that could not be computed is not disjoint from the other).

    Raises
    ------
    InputError
        When an interval has ``hi < lo``.
    """
    lo1, hi1, lo2, hi2 = (np.asarray(v, dtype=np.float64) for v in (lo1, hi1, lo2, hi2))
    if ((hi1 < lo1) | (hi2 < lo2)).any():
        raise InputError("every interval needs lo <= hi")
    o = np.clip(np.minimum(hi1, hi2) - np.maximum(lo1, lo2), 0.0, None)
    # A zero-width interval (a point) counts as fully covered when it lies inside the other.
    with np.errstate(invalid="ignore", divide="ignore"):
        r1 = np.where(hi1 > lo1, o / (hi1 - lo1), (lo1 >= lo2) & (lo1 <= hi2))
        r2 = np.where(hi2 > lo2, o / (hi2 - lo2), (lo2 >= lo1) & (lo2 <= hi1))
    known = ~(np.isnan(lo1) | np.isnan(hi1) | np.isnan(lo2) | np.isnan(hi2))
    return np.where(known, 0.5 * (r1 + r2), np.nan)


Statistic = Callable[[pd.DataFrame], pd.DataFrame]


def _frame(names: list[str], est: Any, lo: Any, hi: Any) -> pd.DataFrame:
    return pd.DataFrame(
        {"estimate": np.atleast_1d(est), "lo": np.atleast_1d(lo), "hi": np.atleast_1d(hi)},
        index=pd.Index(names, name="parameter"),
    )


def _check_level(level: Any) -> float:
    """The confidence level as a float strictly between 0 and 1."""
    ok = isinstance(level, (int, float, np.integer, np.floating)) and not isinstance(
        level, (bool, np.bool_)
    )
    if not ok or not 0.0 < float(level) < 1.0:
        raise InputError(
            f"level={level!r} must be a confidence level strictly between 0 and 1; "
            "give 0.95, not 95"
        )
    return float(level)


def _check_name(name: Any, role: str) -> None:
    if name is None or not isinstance(name, Hashable):
        raise InputError(f"{role}={name!r} must be one column name; e.g. {role}='income'")


def _require_columns(frame: Any, names: Sequence[str], statistic: str) -> None:
    """Clear error for columns a statistic needs but ``frame`` lacks."""
    check_frame(frame, "frame")
    absent = [c for c in names if c not in frame.columns]
    if absent:
        raise InputError(
            f"{statistic} needs column(s) {absent}, not in the frame; available columns: "
            f"{list(map(str, frame.columns))}. Pass the name of an existing column"
        )


def _float_column(frame: pd.DataFrame, name: str, role: str) -> np.ndarray:
    try:
        return frame[name].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise InputError(
            f"{role} column {name!r} is not numeric ({frame[name].dtype}); give a numeric "
            "column (proportion_ci for a categorical one)"
        ) from None


def mean_ci(column: str, weight: str | None = None, level: float = 0.95) -> Statistic:
    """Build a statistic for :func:`benchmark`: the (weighted) mean of ``column`` with a normal CI.

    Normal-approximation interval estimate ± z se, z the standard normal quantile
    at (1 + level)/2. Unweighted: x̄ ± z s/√n (s with ddof = 1). Weighted: the
    ratio (Hájek) estimator x̄_w = Σ w x / Σ w with the Taylor-linearised
    (delta-method) standard error √(n/(n − 1) Σ w² (x − x̄_w)²) / Σ w, the
    with-replacement variance of the linearised values w_i (x_i − x̄_w) / Σ w
    (e.g. Wolter 2007, *Introduction to Variance Estimation*, ch. 6; no finite
    population correction). With unit weights the two coincide. Records with a
    missing value (suppressed) are left out.

    Parameters
    ----------
    column : str
        Numeric column.
    weight : str, optional
        Column of survey weights: finite and >= 0 in every record, with a
        positive sum over the records where ``column`` is observed.
    level : float, default 0.95
        Confidence level, strictly between 0 and 1.

    Returns
    -------
    callable
        Takes a frame, returns a one-row DataFrame (``estimate``, ``lo``,
        ``hi``). Its attribute ``columns`` names the columns it reads, which
        :func:`benchmark` checks before running any statistic.

    Raises
    ------
    InputError
        At once: ``level`` outside (0, 1), a name that is not a single column
        label. When run: absent or non-numeric columns; negative, missing or
        infinite weights, or weights summing to 0; fewer than 2 records with an
        observed value (a standard error needs 2; no NaN interval is returned).
    """
    from scipy import stats  # imported here: keeps `import sdcbayes` cheap

    _check_name(column, "column")
    if weight is not None:
        _check_name(weight, "weight")
    z = stats.norm.ppf(0.5 + _check_level(level) / 2.0)
    needs = [column] if weight is None else [column, weight]

    def stat(frame: pd.DataFrame) -> pd.DataFrame:
        _require_columns(frame, needs, f"mean_ci({column!r})")
        x = _float_column(frame, column, "mean_ci")
        if weight is None:
            w = np.ones_like(x)
        else:
            w = _float_column(frame, weight, "weight")
            bad = ~np.isfinite(w) | (w < 0)
            if bad.any():
                raise InputError(
                    f"weight column {weight!r} has {int(bad.sum())} negative, missing or "
                    "infinite value(s); survey weights must be finite and >= 0"
                )
        ok = np.isfinite(x)
        x, w = x[ok], w[ok]
        n = x.size
        if n < 2:
            raise InputError(
                f"mean_ci({column!r}) has {n} record(s) with an observed value; a confidence "
                "interval needs at least 2"
            )
        total = np.sum(w)
        if not total > 0:
            raise InputError(
                f"the weights in {weight!r} sum to 0 over the records with {column!r} "
                "observed; give positive weights"
            )
        m = np.sum(w * x) / total
        se = np.sqrt(n / (n - 1) * np.sum(w**2 * (x - m) ** 2)) / total
        return _frame([f"mean({column})"], m, m - z * se, m + z * se)

    stat.columns = tuple(needs)  # type: ignore[attr-defined]
    return stat


def proportion_ci(
    column: str, value: Any, weight: str | None = None, level: float = 0.95
) -> Statistic:
    """Build a statistic for :func:`benchmark`: the share of records with ``column == value``.

    The mean of the indicator I(column == value) with :func:`mean_ci`'s interval
    (and its checks of ``weight`` and ``level``); records with the value missing
    are left out. Unweighted this is the Wald (normal-approximation) interval
    p̂ ± z √(p̂ (1 − p̂) / (n − 1)) (the n − 1 from the ddof = 1 standard deviation
    of the indicator); weighted, :func:`mean_ci`'s linearised interval of the
    weighted share.

    Parameters
    ----------
    column : str
        Categorical (or any) column compared with ``value``.
    value : object
        The category whose share is estimated (compared with ``==``).
    weight : str, optional
        Column of survey weights, as for :func:`mean_ci`.
    level : float, default 0.95
        Confidence level, strictly between 0 and 1.

    Returns
    -------
    callable
        Takes a frame, returns a one-row DataFrame (``estimate``, ``lo``, ``hi``)
        indexed by ``"share(column==value)"``. Its attribute ``columns`` names the
        columns it reads, which :func:`benchmark` checks before running any statistic.

    Raises
    ------
    InputError
        At once: ``level`` outside (0, 1), a name that is not a single column label.
        When run: as for :func:`mean_ci` (absent columns, bad weights, fewer than 2
        records with an observed value).
    """
    _check_name(column, "column")
    inner_name = "__indicator__"
    inner = mean_ci(inner_name, weight, level)  # validates weight and level now
    needs = [column] if weight is None else [column, weight]

    def stat(frame: pd.DataFrame) -> pd.DataFrame:
        _require_columns(frame, needs, f"proportion_ci({column!r})")
        s = frame[column]
        ind = (s == value).astype(np.float64).where(s.notna())
        tmp = pd.DataFrame({inner_name: ind})
        if weight is not None:
            tmp[weight] = frame[weight].to_numpy()
        res = inner(tmp)
        res.index = pd.Index([f"share({column}=={value})"], name="parameter")
        return res

    stat.columns = tuple(needs)  # type: ignore[attr-defined]
    return stat


def ols_ci(y: str, x: Sequence[str], level: float = 0.95) -> Statistic:
    """Build a statistic for :func:`benchmark`: OLS coefficients of ``y`` on ``x`` (with intercept).

    The classical (homoscedastic) OLS interval β̂_j ± t_{n−r} √(σ̂² [(X'X)^{-1}]_jj)
    with σ̂² = RSS / (n − r), the t quantile at (1 + level)/2 with n − r degrees of
    freedom, r the rank of the design (the number of coefficients p when the
    regressors are not collinear); complete cases only (seed 001, Figure 3
    compares regression coefficients and their intervals before and after
    protection).

    A rank-deficient design (a regressor that protection made constant, or
    exactly collinear regressors such as x2 = 2·x1) does not identify every
    coefficient: any split of the identified combination fits equally well.
    Those coefficients get NaN estimate and interval, with a warning naming them;
    the identified ones keep their unique estimate and use (X'X)^+ and n − r
    degrees of freedom (the standard least-squares theory of estimable
    functions, e.g. Searle, Linear Models, 1971, ch. 5).

    Parameters
    ----------
    y : str
        Numeric response column.
    x : str or sequence of str
        Numeric regressor column(s); an intercept is added.
    level : float, default 0.95
        Confidence level, strictly between 0 and 1.

    Returns
    -------
    callable
        Takes a frame, returns a DataFrame with one row per coefficient
        (``"y~(Intercept)"``, ``"y~x1"``, ...) and columns ``estimate``, ``lo``,
        ``hi`` (NaN for a coefficient the frame does not identify). Its attribute
        ``columns`` names the columns it reads, which :func:`benchmark` checks
        before running any statistic.

    Warns
    -----
    UserWarning
        When run on a frame whose design is rank-deficient, naming the
        coefficients returned as NaN.

    Raises
    ------
    InputError
        At once: ``level`` outside (0, 1), a name that is not a single column label.
        When run: absent columns, or no more complete records than coefficients.
    """
    from scipy import stats  # imported here: keeps `import sdcbayes` cheap

    _check_name(y, "y")
    xs = [x] if isinstance(x, str) else list(x)
    for name in xs:
        _check_name(name, "x")
    level = _check_level(level)

    def stat(frame: pd.DataFrame) -> pd.DataFrame:
        _require_columns(frame, [y, *xs], f"ols_ci({y!r})")
        data = frame[[y, *xs]].astype(np.float64).dropna()
        yy = data[y].to_numpy()
        xx = np.column_stack([np.ones(len(data)), data[xs].to_numpy()])
        n, p = xx.shape
        names = [f"{y}~(Intercept)"] + [f"{y}~{c}" for c in xs]
        if n <= p:
            raise InputError(f"only {n} complete records for {p} coefficients; use fewer x")
        rank, aliased = _aliased(xx)
        beta, *_ = np.linalg.lstsq(xx, yy, rcond=None)
        resid = yy - xx @ beta
        sigma2 = resid @ resid / (n - rank)
        # (X'X)^+ gives the right variance for the identified coefficients (estimable
        # functions); the others get NaN below.
        se = np.sqrt(np.diag(sigma2 * np.linalg.pinv(xx.T @ xx)))
        t = stats.t.ppf(0.5 + level / 2.0, n - rank)
        lo, hi = beta - t * se, beta + t * se
        if aliased.any():
            lost = [names[j] for j in np.flatnonzero(aliased)]
            warn_at_caller(
                f"ols_ci({y!r}): the regressors are collinear or constant in this frame (rank "
                f"{rank} of {p} coefficients), so {lost} cannot be estimated: NaN returned. "
                "Drop one of the collinear regressors to estimate the others"
            )
            beta, lo, hi = (np.where(aliased, np.nan, v) for v in (beta, lo, hi))
        return _frame(names, beta, lo, hi)

    stat.columns = (y, *xs)  # type: ignore[attr-defined]
    return stat


def _aliased(xx: np.ndarray) -> tuple[int, np.ndarray]:
    """Rank of the design and which coefficients it does not identify.

    Coefficient j is identified (estimable) iff the unit vector e_j lies in the
    row space of X, i.e. iff the null space of X has no component along j.
    Rank and null space from the SVD with NumPy's ``matrix_rank`` tolerance
    σ_max · max(n, p) · ε (Golub & Van Loan, Matrix Computations, 5.5.8), on the
    columns scaled to unit length so that a regressor's units do not matter.
    """
    norms = np.linalg.norm(xx, axis=0)
    scaled = xx / np.where(norms > 0, norms, 1.0)
    # n > p is checked by the caller, so the thin SVD's vt is (p, p): the whole row
    # space and null space, without an (n, n) U (80 GB at 10^5 records)
    sv, vt = np.linalg.svd(scaled, full_matrices=False)[1:]
    tol = sv.max() * max(xx.shape) * np.finfo(np.float64).eps if sv.size else 0.0
    rank = int((sv > tol).sum())
    null = vt[rank:]  # rows spanning the null space (of the scaled design: same zero pattern)
    aliased = (np.abs(null) > 1e-8).any(axis=0) if null.size else np.zeros(xx.shape[1], bool)
    return rank, aliased


def benchmark(
    original: pd.DataFrame,
    protected: pd.DataFrame,
    statistics: Mapping[str, Statistic] | Sequence[Statistic],
) -> pd.DataFrame:
    """Benchmarking indicators: estimates before and after protection (seed 001, 5.2).

    Parameters
    ----------
    original, protected : pandas.DataFrame
        The file before and after protection; each statistic is computed on both.
    statistics : mapping name -> callable, or sequence of callables
        Each callable takes a frame and returns a DataFrame indexed by parameter
        with columns ``estimate``, ``lo``, ``hi`` (see :func:`mean_ci`,
        :func:`proportion_ci`, :func:`ols_ci`). The columns a statistic names
        in its ``columns`` attribute (those three set it) are checked in both
        frames before any statistic runs.

    Returns
    -------
    pandas.DataFrame
        One row per (statistic, parameter): ``estimate_original``,
        ``lo_original``, ``hi_original``, the same for ``protected``,
        ``relative_difference`` = (protected − original)/|original|,
        ``ci_overlap`` (:func:`ci_overlap`) and ``comparable``: False where an
        estimate or interval is missing (NaN) on either side, e.g. a regression
        coefficient that protection made unidentifiable (:func:`ols_ci`) or a
        parameter only one file has; ``relative_difference`` and ``ci_overlap``
        are then NaN rather than a spurious 0.

    Raises
    ------
    InputError
        No statistics, a statistic that is not callable or whose columns are
        missing from either frame, or the statistic's own input errors (for
        :func:`mean_ci`: bad weights, fewer than 2 observed records).
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
    # Statistics built here name their columns: check both frames before any runs.
    for name, fn in items:
        if not callable(fn):
            raise InputError(
                f"statistic {name!r} is {type(fn).__name__}, not a callable; pass e.g. "
                "mean_ci('income')"
            )
        needs = getattr(fn, "columns", ())
        for role, frame in (("original", original), ("protected", protected)):
            absent = [c for c in needs if c not in frame.columns]
            if absent:
                raise InputError(
                    f"statistic {name!r} needs column(s) {absent}, not in the {role} frame; "
                    f"available columns: {list(map(str, frame.columns))}"
                )
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
    sides = [f"{c}_{w}" for c in ("estimate", "lo", "hi") for w in ("original", "protected")]
    out["comparable"] = out[sides].notna().all(axis=1)
    out.loc[~out["comparable"], ["relative_difference", "ci_overlap"]] = np.nan
    return out
