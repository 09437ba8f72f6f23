"""Data shuffling of numeric variables (Muralidhar & Sarathy 2006; sdcMicro's ``shuffle``).

Data shuffling perturbs confidential numeric variables Y (at least two) given
non-confidential predictors S and then releases, in each column, the *original*
values reassigned to the records by the ranks of the perturbed ones. Every
released value is an original value of its column, so each column's margin
(mean, variance, quantiles: its multiset of values) is preserved exactly; with
numeric predictors, the rank correlations among Y and between Y and S are
preserved approximately (method ``"ds"``; with categorical predictors only
under ``covmethod="normal-scores"``, below). References: K. Muralidhar and
R. Sarathy, "Data shuffling - a new masking approach for numerical data",
Management Science 52(5):658-670, 2006; K. Muralidhar, R. Parsa and R.
Sarathy, "A general additive data perturbation method for database security",
Management Science 45(10):1399-1415, 1999 (GADP).

The steps follow sdcMicro 5.8.0's ``shuffle`` (``R/shuffle.R``, ``shuffleWORK``)
line by line:

``"ds"`` (Muralidhar & Sarathy 2006, the default)
    1. the predictors enter as R's model matrix without intercept: a numeric
       column as it is, a categorical one as 0/1 indicators of its levels but the
       first (treatment contrasts);
    2. every column of M = (Y, S) is ranked (ties: average rank), turned into the
       percentile p = (rank - 0.5) / n and the normal score x* = Φ⁻¹(p);
    3. ρ = 2 sin(π r / 6), r the rank (``"spearman"``) or Pearson (``"pearson"``)
       correlation matrix of M (the conversion of a rank correlation into the
       normal-copula correlation, Muralidhar & Sarathy 2006, section 4; sdcMicro
       applies it to the Pearson matrix too);
    4. Y* = S* ρ_SS⁻¹ ρ_SY + e, e ~ N(0, ρ_YY - ρ_YS ρ_SS⁻¹ ρ_SY) (the conditional
       normal of Y* given S*, the GADP step on the normal scores);
    5. column by column, the i-th smallest original value goes to the record with
       the i-th smallest perturbed value (equal perturbed values: the earlier row
       first, R's stable ``order``).

``covmethod="normal-scores"`` (this package's, not sdcMicro's; ``"ds"`` only)
    Steps 3 and 4 use C, the sample covariance matrix of the normal scores
    themselves, in place of 2 sin(π r / 6): Y* = S* C_SS⁻¹ C_SY + e,
    e ~ N(0, C_YY - C_YS C_SS⁻¹ C_SY). This is the GADP step (Muralidhar, Parsa
    and Sarathy 1999), which reproduces the covariance matrix of its input
    (Cov(S*, Y*) = C_SS C_SS⁻¹ C_SY = C_SY, Cov(Y*) = C_YS C_SS⁻¹ C_SY + C_YY -
    C_YS C_SS⁻¹ C_SY = C_YY, up to the noise's sampling error), applied to the
    scores. C is a valid covariance matrix for any mix of continuous, tied and
    0/1 columns, so it also holds when a predictor enters as indicators, whose
    two-valued scores step 3's conversion mis-states (below).

``"mvn"`` (sdcMicro's simplification)
    A sample of n records is drawn from a normal distribution with the column
    means of M and its rank (``"spearman"``) or Pearson covariance matrix; on
    that sample sdcMicro's EGADP function runs (a least-squares regression of the
    drawn responses on the drawn predictors, weighted by ``weights``; a second
    normal draw V, regressed on both and rescaled by the inverses of the two
    residual covariance matrices), and its result ranks the original values as
    in step 5. Unlike ``"ds"``, the perturbed values are computed from the
    drawn sample, not from the records' own predictors: the released values are
    not tied to the records' predictors (their rank correlation with the
    predictors is about 0), and as every column is ordered by a regression fit
    on the same drawn predictors, the columns' mutual rank correlations are
    not kept either (sdcMicro's own output on testdata: expend and savings,
    unrelated, come out at -0.63; 0.27 -> 0.44 and 0.27 -> 0.996 in this
    package's tests and benchmark). sdcMicro's EGADP noise term is the residual
    matrix times the *inverses* of the two residual covariance matrices (not of
    their square roots), which makes it negligible: on testdata (R's draws) at
    most 7.6e-8 with ``"spearman"`` and 1.3e-19 with ``"pearson"``, below the
    smallest gap between two fitted values (1.7e-6 and 0.89), so the order is
    that of the fitted values. It is here for parity with sdcMicro.

How well ``"ds"`` keeps rank correlations (``tests/test_shuffle.py``, 20,000
records): with numeric predictors and ``"spearman"``, to sampling error (0.654
-> 0.657 between a column and a predictor, 0.291 -> 0.289 between the two
columns). The conversion 2 sin(π r / 6) holds for continuous pairs only, so:

* with a categorical predictor (indicators: two-valued normal scores, whose
  variance is below 1 and whose correlations are not 2 sin(π r / 6)), the
  model's covariance of Y* is wrong, and ``"spearman"`` and ``"pearson"`` keep
  neither the rank correlations with the indicators nor those *between the
  shuffled columns*, as in sdcMicro, which computes the same: 0.291 -> 0.269
  between the columns and 0.292 -> 0.207 with a level, with a 3-level predictor
  beside a numeric one; 0.633 -> 0.476 (``"pearson"``: 0.28) between two
  columns tied to a 5-level predictor; on the demo file, income-hours 0.549 ->
  0.21 given the 9-level age group and -> -0.008 given the 18-level age band
  (0.550 given age as a number; means of 4 seeds). ``shuffle`` warns.
  ``"normal-scores"`` keeps them (0.291 -> 0.288, 0.292 -> 0.288; 0.633 ->
  0.632; demo 0.551, 0.549, and 0.552 given five categorical predictors): to
  sampling error, but for 0.689 -> 0.669 where a factor's five groups barely
  overlap (the model's errors are homoscedastic, the groups' scores are not).
  Else an ordered categorical can be given as a number, which attenuates less
  (0.633 -> 0.606 for the 5 tied levels: ties are not continuous either), or
  left out. With numeric predictors ``"spearman"`` is the better choice (demo,
  given age: 0.550; ``"normal-scores"`` 0.531);
* ``"pearson"`` feeds the Pearson correlation of the raw values to that
  conversion: on skewed (lognormal) columns the correlations shrink (0.65 ->
  0.57); on normal ones they are kept.

What differs from sdcMicro:

* the random numbers cannot match R's, so results equal sdcMicro's in
  distribution; fed R's normal draws, the result equals R's value for value
  (``tests/test_shuffle.py``);
* ``covmethod="normal-scores"`` is this package's (above);
* exactly collinear model-matrix columns (nested categorical predictors, a
  predictor that is a linear function of others) are refused before any work:
  their correlation matrix is singular, but its conversion 2 sin(π r / 6) is
  not, so the same arithmetic as sdcMicro's runs on an impossible model (demo
  file, income-hours 0.549 -> 0.16 given both age group and age band);
* missing values are refused (sdcMicro imputes a random observed value for the
  model and blanks the released value again, so a column's margin is not kept);
* ``method="mlm"`` is refused: in sdcMicro 5.8.0 it fails (``predict`` is given a
  matrix: "'data' must be a data.frame, not a matrix or an array");
  ``covmethod="mcd"`` and ``regmethod="MM"`` (robust estimators from robustbase
  and MASS) are not offered;
* ``weights`` are refused with ``"ds"``, which does not use them (sdcMicro
  accepts and ignores them); sdcMicro's extra EGADP output (``gadp=TRUE``), which
  does not enter the shuffled values, is not computed;
* a categorical predictor's levels are those of a pandas Categorical in its
  order, else the sorted distinct values (R sorts strings in the session's
  locale: with mixed case the first, dropped level may differ); unused
  categories are dropped (R keeps them as all-zero columns and then fails);
  an ordered Categorical gets treatment contrasts too (R: polynomial ones).

Cost: a few sorts and normal quantiles per column and a small (k + q) matrix
algebra: about linear in n (``benchmarks/shuffle.py``).

This module may import NumPy, SciPy and pandas only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import special, stats

from sdcbayes.exceptions import InputError, warn_at_caller
from sdcbayes.protection.base import (
    ProtectionResult,
    check_columns,
    check_frame,
    output_frame,
    seeded_rng,
    stamped,
)
from sdcbayes.protection.microaggregation import _numeric_matrix

__all__ = ["shuffle"]

METHODS = ("ds", "mvn")
COVMETHODS = ("spearman", "pearson", "normal-scores")

#: a draw function: (mean vector, covariance matrix) -> (n, len(mean)) normal sample
Draw = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _check_choices(method: Any, covmethod: Any) -> None:
    if method == "mlm":
        raise InputError(
            "method='mlm' is not offered: sdcMicro 5.8.0's own 'mlm' fails (its predict() is "
            "given a matrix); use method='ds' (data shuffling) or 'mvn'"
        )
    if method not in METHODS:
        raise InputError(f"method={method!r} must be one of {', '.join(map(repr, METHODS))}")
    if covmethod == "mcd":
        raise InputError(
            "covmethod='mcd' (robustbase's MCD in sdcMicro) is not offered; use "
            "covmethod='spearman' (rank correlations, the default) or 'pearson'"
        )
    if covmethod not in COVMETHODS:
        raise InputError(
            f"covmethod={covmethod!r} must be one of {', '.join(map(repr, COVMETHODS))}"
        )
    if covmethod == "normal-scores" and method != "ds":
        raise InputError(
            "covmethod='normal-scores' is a setting of method='ds' (the covariance of the "
            "records' normal scores); method='mvn' takes 'spearman' or 'pearson'"
        )


def _enters_as_number(series: pd.Series) -> bool:
    """Whether a predictor enters the model matrix as a number (else as indicators)."""
    return (pd.api.types.is_numeric_dtype(series.dtype)
            and not pd.api.types.is_bool_dtype(series.dtype)
            and not isinstance(series.dtype, pd.CategoricalDtype))


def _levels(series: pd.Series, name: str) -> list[Any]:
    """The levels of a categorical predictor, first (dropped) level first."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        used = set(series.dropna().unique())
        return [c for c in series.cat.categories if c in used]
    values = series.dropna().unique().tolist()
    try:
        return sorted(values)
    except TypeError as err:
        raise InputError(
            f"predictor {name!r} mixes values that cannot be ordered ({err}); convert it to "
            "strings or to a pandas Categorical with the level order wanted"
        ) from None


def _model_matrix(frame: pd.DataFrame,
                  predictors: list[str]) -> tuple[np.ndarray, list[str], list[str]]:
    """R's ``model.matrix(~ predictors)`` without the intercept column.

    Numeric columns enter as they are, boolean, string and categorical ones as
    indicators of every level but the first (R's treatment contrasts; a column is
    named predictor + level, as R names it). Returns the matrix, its column names
    and the predictor each column comes from.
    """
    blocks, names, origin = [], [], []
    for p in predictors:
        s = frame[p]
        if pd.api.types.is_complex_dtype(s.dtype):
            raise InputError(f"predictor {p!r} is complex; pass its real part")
        if _enters_as_number(s):
            blocks.append(_numeric_matrix(frame, [p], "shuffling")[:, 0])
            names.append(str(p))
            origin.append(p)
            continue
        if s.isna().any():
            rows = np.flatnonzero(s.isna().to_numpy())[:5].tolist()
            raise InputError(
                f"predictor {p!r} has missing values (rows {rows}...); impute or drop them "
                "before shuffling"
            )
        levels = _levels(s, p)
        if len(levels) < 2:
            raise InputError(
                f"predictor {p!r} has {len(levels)} level; a categorical predictor needs at "
                "least 2 (drop it from the predictors)"
            )
        for level in levels[1:]:
            blocks.append((s == level).to_numpy(dtype=np.float64))
            names.append(f"{p}{level}")
            origin.append(p)
    return np.column_stack(blocks), names, origin


def _check_not_collinear(s: np.ndarray, names: list[str], origin: list[str],
                         ranks: bool = False) -> None:
    """Refuse model-matrix columns that are exactly collinear (with the intercept).

    The model uses the predictors' correlation matrix, which is invariant to
    centring: it is singular exactly when the centred model matrix has rank below
    its number of columns (nested categorical predictors, whose indicators sum to
    one another's; a numeric predictor that is a linear function of others, or
    equals an indicator). The rank is counted as NumPy's ``matrix_rank`` does, on
    columns scaled to unit length: singular values below σ_max · max(n, q) · eps
    (Press et al., Numerical Recipes, 3rd ed., section 2.6) are zero. Rounding in an
    exact linear relation leaves σ_min near σ_max · eps; a real, if strong,
    dependence (correlation 0.999999: σ_min ≈ 1e-3 σ_max) is far above it. The
    columns taking part are those with weight in a null vector. Constant columns
    are refused before this (they have no length to scale).

    ``ranks``: ``s`` holds the columns' ranks or normal scores, which "ds" with
    "spearman" or "normal-scores" correlates (there a predictor that is a monotone
    function of another, exp(x) beside x, has equal ranks: collinear).
    """
    if s.shape[1] < 2:
        return
    z = s - s.mean(axis=0)
    z /= np.linalg.norm(z, axis=0)
    _, sv, vt = np.linalg.svd(z, full_matrices=False)
    null = vt[sv <= sv.max() * max(z.shape) * np.finfo(np.float64).eps]
    if not len(null):
        return
    # a null vector has unit length: a column in the relation weighs about
    # 1/sqrt(q) or more in it, one outside it rounding (1e-15)
    involved = np.flatnonzero(np.abs(null).max(axis=0) > 1e-8)
    cols = [names[j] for j in involved]
    preds = list(dict.fromkeys(origin[j] for j in involved))
    shown = ", ".join(map(repr, cols[:8])) + (f" and {len(cols) - 8} more" if len(cols) > 8
                                               else "")
    count = ("one of them is a linear combination" if len(null) == 1 else
             f"{len(null)} of them are linear combinations")
    why = (" in their ranks, which the model correlates (e.g. a predictor that is a "
           "monotone function of another)" if ranks else
           f": {count} of the others (nested categorical predictors, "
           "whose levels group one another's, or a numeric predictor that is a linear "
           "function of others)")
    raise InputError(
        f"the predictors' model-matrix columns {shown} (from {', '.join(map(repr, preds))}) "
        f"are exactly collinear{why}, so the model's correlation matrix is singular; drop "
        "the redundant predictor"
    )


def _rank_matrix(x: np.ndarray) -> np.ndarray:
    return stats.rankdata(x, axis=0, method="average")


def _cor(x: np.ndarray, covmethod: str) -> np.ndarray:
    """R's ``cor(x, method=covmethod)``: Spearman is Pearson on average ranks."""
    return np.corrcoef(_rank_matrix(x) if covmethod == "spearman" else x, rowvar=False)


def _cov(x: np.ndarray, covmethod: str) -> np.ndarray:
    """R's ``cov(x, method=covmethod)``: Spearman is the covariance of the ranks."""
    return np.atleast_2d(np.cov(_rank_matrix(x) if covmethod == "spearman" else x,
                                rowvar=False))


def _normal_scores(x: np.ndarray) -> np.ndarray:
    """Φ⁻¹((rank - 0.5) / n) per column, average ranks for ties (sdcMicro's ``ds``)."""
    return special.ndtri((_rank_matrix(x) - 0.5) / x.shape[0])


def _lm(y: np.ndarray, x: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Fitted values and residuals of R's ``lm(y ~ x, weights)`` (with intercept)."""
    design = np.column_stack([np.ones(x.shape[0]), x])
    if weights is None:
        coef = np.linalg.lstsq(design, y, rcond=None)[0]
    else:
        root = np.sqrt(weights)[:, None]
        coef = np.linalg.lstsq(design * root, y * root, rcond=None)[0]
    fitted = design @ coef
    return fitted, y - fitted  # lm's residuals are y - fitted, weighted fit or not


def _inverse_square(cov: np.ndarray) -> np.ndarray:
    """``solve(Y %*% Y)``, Y the symmetric square root of ``cov``, as sdcMicro computes it."""
    vals, vecs = np.linalg.eigh(cov)
    root = (vecs * np.sqrt(vals)) @ vecs.T
    return np.linalg.inv(root @ root)


def _egadp(resp: np.ndarray, pred: np.ndarray, covmethod: str,
           weights: np.ndarray | None, draw: Draw) -> np.ndarray:
    """The EGADP step of sdcMicro's ``shuffle`` (regmethod "lm"), used by method "mvn"."""
    fitted, resid = _lm(resp, pred, weights)
    cvs = _cov(resid, covmethod)
    v = draw(resp.mean(axis=0), _cov(resp, covmethod))
    _, vres = _lm(v, np.column_stack([pred, resp]), None)
    cvv = _cov(vres, covmethod)
    return fitted + vres @ _inverse_square(cvv) @ _inverse_square(cvs)


def _perturbed(y: np.ndarray, s: np.ndarray, method: str, covmethod: str,
               weights: np.ndarray | None, draw: Draw) -> np.ndarray:
    """The perturbed values Y* whose ranks reorder the original values.

    ``draw(mean, cov)`` returns an (n, len(mean)) normal sample (MASS's
    ``mvrnorm`` in sdcMicro); :func:`shuffle` draws from its seeded generator,
    the parity test passes R's own draws. ``"ds"``: steps 2 to 4 of the module
    docstring, ρ from ``covmethod`` ("spearman", "pearson": sdcMicro's 2 sin(π r / 6);
    "normal-scores": the scores' own covariance matrix, the GADP step on them).
    """
    k = y.shape[1]
    m = np.column_stack([y, s])
    if method == "ds":
        scores = _normal_scores(m)
        if covmethod == "normal-scores":
            # valid for indicators and ties too: Y* gets the scores' covariance back
            rho = np.cov(scores, rowvar=False)
        else:
            rho = 2.0 * np.sin(np.pi * _cor(m, covmethod) / 6.0)
        r_ys, r_yy, r_ss = rho[:k, k:], rho[:k, :k], rho[k:, k:]
        try:
            coef = np.linalg.solve(r_ss, r_ys.T)  # ρ_SS⁻¹ ρ_SY
        except np.linalg.LinAlgError:
            raise InputError(
                "the predictors' correlation matrix is singular (a predictor repeats "
                "another, or is a combination or a monotone function of others, equal in "
                "ranks); drop the redundant predictor"
            ) from None
        sigma = r_yy - r_ys @ coef
        return scores[:, k:] @ coef + draw(np.zeros(k), sigma)
    newxs = draw(m.mean(axis=0), _cov(m, covmethod))
    return _egadp(newxs[:, :k], newxs[:, k:], covmethod, weights, draw)


def _rank_sources(y: np.ndarray, ystar: np.ndarray) -> np.ndarray:
    """Per column, the row whose original value each record receives.

    The i-th smallest original value goes to the record with the i-th smallest
    perturbed value (sdcMicro's ``reverseMap``; R's ``order`` is stable, so equal
    values keep row order, as NumPy's stable sort).
    """
    src = np.empty(y.shape, dtype=np.int64)
    for j in range(y.shape[1]):
        src[np.argsort(ystar[:, j], kind="stable"), j] = np.argsort(y[:, j], kind="stable")
    return src


def _mvrnorm(rng: np.random.Generator, n: int) -> Draw:
    """A seeded normal sampler built as MASS's ``mvrnorm``: Z Λ^½ Qᵀ + μ."""
    def draw(mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
        cov = np.atleast_2d(cov)
        vals, vecs = np.linalg.eigh(cov)
        if not np.all(np.isfinite(vals)) or vals.min() < -1e-6 * abs(vals.max()):
            raise InputError(
                "the covariance matrix of the shuffling model is not positive definite; "
                "drop constant or redundant variables"
            )
        root = vecs * np.sqrt(np.clip(vals, 0.0, None))
        return rng.standard_normal((n, len(mean))) @ root.T + mean
    return draw


@stamped(summarise={"weights": lambda w: None if w is None else
                    (w if isinstance(w, str) else "per-record array")})
def shuffle(
    frame: pd.DataFrame,
    columns: Sequence[str],
    predictors: Sequence[str] | str,
    *,
    method: str = "ds",
    covmethod: str = "spearman",
    weights: str | Sequence[float] | np.ndarray | None = None,
    seed: Any = None,
) -> ProtectionResult:
    """Shuffle numeric variables given predictors (sdcMicro's ``shuffle``).

    Muralidhar and Sarathy's data shuffling (Management Science 52(5):658-670,
    2006): the confidential ``columns`` are perturbed by the GADP model
    (Muralidhar, Parsa and Sarathy, Management Science 45:1399-1415, 1999) on
    normal scores, conditional on the ``predictors``, and each column's original
    values are then reassigned to the records in the order of the perturbed
    values (module docstring: the steps and where they follow sdcMicro 5.8.0).

    Preserved: each column's multiset of values exactly (every released value is
    an original value of its column: means, variances, quantiles unchanged);
    with ``"ds"``, ``"spearman"`` and numeric predictors only, the rank
    correlations among the columns and with the predictors approximately (to
    sampling error of order 1/sqrt(n)). A categorical predictor (indicators)
    breaks sdcMicro's model: then ``"spearman"`` and ``"pearson"`` keep neither
    the correlations with its levels nor those *between the columns* (0.633 ->
    0.476 between two columns tied to a 5-level predictor; demo file 0.549 ->
    -0.008 given an 18-level one), and a warning says so; ``"normal-scores"``
    keeps them (0.632; 0.549); else give an ordered categorical as a number
    (0.606), or leave it out (module docstring). Not
    preserved: the records' own values (a record's released value is another
    record's of similar rank given the predictors, plus noise).

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    columns : sequence of str
        At least two numeric variables without missing values (sdcMicro's
        formula responses).
    predictors : str or sequence of str
        Non-confidential variables the shuffle conditions on (the formula's right
        side), none of them in ``columns``, without missing values. Numeric
        columns enter as they are; boolean, string and categorical columns as
        indicators of every level but the first (R's treatment contrasts). An
        integer-coded categorical variable enters as a number unless given as a
        pandas Categorical (R: ``factor()``). At least one; model-matrix columns
        must not be exactly collinear (nested categorical predictors are).
    method : {"ds", "mvn"}, default "ds"
        ``"ds"``: data shuffling of Muralidhar & Sarathy. ``"mvn"``: sdcMicro's
        simplification from a freshly drawn normal copula, for parity only: it
        keeps neither the records' relation to the predictors nor the columns'
        mutual rank correlations (module docstring). sdcMicro's ``"mlm"`` fails in
        sdcMicro 5.8.0 and is refused.
    covmethod : {"spearman", "pearson", "normal-scores"}, default "spearman"
        Correlation/covariance estimator. ``"normal-scores"`` (``"ds"`` only, not
        in sdcMicro): the covariance of the normal scores themselves, right for
        categorical predictors too (module docstring); with numeric predictors
        ``"spearman"`` is as good and is sdcMicro's. sdcMicro's ``"mcd"``
        (robustbase) is refused, as is a robust regression (``regmethod="MM"``,
        not offered).
    weights : str, array-like or None
        Only with ``"mvn"``: positive weights of its regression (a column name or
        one number per record). ``"ds"`` uses no weights and refuses them.
    seed : int, Generator or None
        None draws a seed from the operating system; the seed used is recorded
        as ``summary["seed"]``.

    Returns
    -------
    ProtectionResult
        ``frame``: the columns shuffled (their dtypes kept), everything else as
        it was. ``log``: one row per column: ``variable``, ``n_changed``
        (records whose value changed), ``rank_correlation`` (Spearman, original
        against released). ``summary``: ``method`` ("shuffle"), ``shuffle_method``,
        ``covmethod``, ``columns``, ``predictors``, ``model_columns`` (the
        predictors' model-matrix columns), ``indicator_predictors`` (those entered
        as indicators), ``weights`` (the column name, "array" or None), ``seed``.

    Raises
    ------
    InputError
        Before any work: fewer than two columns, no predictor, a column or
        predictor that is missing, repeated, shared between the two lists, not
        numeric (columns), with missing or infinite values, a categorical
        predictor with one level, exactly collinear model-matrix columns, fewer
        records than columns plus model-matrix columns plus 2, an unsupported
        method or covmethod, weights with ``"ds"`` or not positive.

    Warns
    -----
    UserWarning
        With ``"ds"`` and ``"spearman"`` or ``"pearson"``, when a predictor enters
        as indicators (the correlations are not kept; ``"normal-scores"`` is the
        remedy).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.normal(size=50), "b": rng.normal(size=50),
    ...                    "g": rng.choice(["x", "y"], 50)})
    >>> res = shuffle(df, ["a", "b"], "g", covmethod="normal-scores", seed=1)
    >>> sorted(res.frame["a"]) == sorted(df["a"])
    True
    """
    frame = check_frame(frame)
    columns = check_columns(frame, columns, "columns")
    if not isinstance(predictors, str) and len(list(predictors)) == 0:
        raise InputError(
            "predictors is empty: data shuffling conditions on at least one non-confidential "
            "variable (sdcMicro's formula needs a right side); name one, or use rank "
            "swapping or noise, which need none"
        )
    predictors = check_columns(frame, predictors, "predictors")
    _check_choices(method, covmethod)
    if len(columns) < 2:
        raise InputError(
            f"columns {columns}: shuffling needs at least 2 numeric variables (sdcMicro's "
            "shuffle too); add another confidential variable or use rank swapping or noise"
        )
    both = [c for c in columns if c in predictors]
    if both:
        raise InputError(
            f"{both} are both shuffled (columns) and predictors; a variable is one or the other"
        )
    y = _numeric_matrix(frame, columns, "shuffling")
    s, model_columns, origin = _model_matrix(frame, predictors)
    n = y.shape[0]
    w = _check_weights(frame, weights, method, n)
    need = len(columns) + len(model_columns) + 2
    if n < need:
        raise InputError(
            f"{n} records for {len(columns)} columns and {len(model_columns)} predictor "
            f"model-matrix columns; shuffling needs at least {need} records (the columns "
            "plus the model-matrix columns plus 2): add records or drop predictors"
        )
    m = np.column_stack([y, s])
    constant = [name for name, col in zip(columns + model_columns, m.T, strict=True)
                if col.min() == col.max()]
    if constant:
        raise InputError(
            f"{constant} are constant; their correlations are undefined: drop them from "
            "the columns or predictors"
        )
    _check_not_collinear(s, model_columns, origin)
    if method == "ds" and covmethod != "pearson":  # the matrix the model correlates
        _check_not_collinear(_rank_matrix(s) if covmethod == "spearman" else _normal_scores(s),
                             model_columns, origin, ranks=True)
    indicators = [p for p in predictors if not _enters_as_number(frame[p])]
    if method == "ds" and covmethod != "normal-scores" and indicators:
        warn_at_caller(
            f"shuffle: predictor(s) {indicators} enter as indicators of their levels, for "
            f"which method='ds' with covmethod={covmethod!r} (sdcMicro's model: 2 sin(pi r "
            "/ 6) of the correlations, right for continuous pairs only) keeps neither the "
            "rank correlations with them nor those between the shuffled columns (e.g. "
            "0.633 -> 0.476 between two columns tied to a 5-level predictor); use "
            "covmethod='normal-scores', or give an ordered categorical as a number, or "
            "leave it out"
        )
    rng, seed_used = seeded_rng(seed)
    ystar = _perturbed(y, s, method, covmethod, w, _mvrnorm(rng, n))
    src = _rank_sources(y, ystar)
    out = output_frame(frame)  # unchanged columns shared under copy-on-write
    rows_log = []
    for j, col in enumerate(columns):
        out[col] = frame[col].iloc[src[:, j]].set_axis(frame.index)
        new = y[src[:, j], j]
        rows_log.append({
            "variable": col,
            "n_changed": int((new != y[:, j]).sum()),
            "rank_correlation": float(stats.spearmanr(y[:, j], new)[0]),
        })
    summary = {
        "method": "shuffle",
        "shuffle_method": method,
        "covmethod": covmethod,
        "columns": columns,
        "predictors": predictors,
        "model_columns": model_columns,
        "indicator_predictors": indicators,
        "weights": None if weights is None else (weights if isinstance(weights, str)
                                                 else "array"),
        "seed": seed_used,
    }
    return ProtectionResult(out, pd.DataFrame(rows_log), summary)


def _check_weights(frame: pd.DataFrame, weights: Any, method: str,
                   n: int) -> np.ndarray | None:
    if weights is None:
        return None
    if method == "ds":
        raise InputError(
            "weights are not used by method='ds' (sdcMicro's data shuffling ignores them); "
            "drop weights, or use method='mvn', whose regression is weighted"
        )
    if isinstance(weights, str):
        check_columns(frame, [weights], "weights")
        w = _numeric_matrix(frame, [weights], "shuffling (weights)")[:, 0]
    else:
        try:
            w = np.asarray(weights, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            raise InputError("weights must be a column name or one number per record") from None
        if w.size != n:
            raise InputError(f"weights has {w.size} values for {n} records; give one per record")
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise InputError("weights must be positive and finite for every record")
    return w
