"""Noise addition for numeric variables (seed 001, section 4.2.2; sdcMicro's ``addNoise``).

The methods of sdcMicro 5.8.0's ``addNoise`` (``method`` there, the same name here):

* ``"additive"`` (Brand 2002): z_j = x_j + ε_j with ε_j ~ N(0, (α σ_j)²)
  independently per variable and record, σ_j the standard deviation of x_j.
  Means are preserved in expectation; variances grow by the factor 1 + α²;
  correlations shrink.
* ``"correlated"`` (Brand 2002): z = x + ε with ε ~ N(0, α Σ), Σ the covariance
  matrix of the variables. Means are preserved in expectation, the covariance
  becomes (1 + α) Σ, so correlation coefficients are preserved.
* ``"correlated2"`` (sdcMicro's code; named after Kim 1986 in its documentation):
  z_j = √(1 - δ²) x_j + (1 - √(1 - δ²)) x̄_j + δ σ_j e_j, e_j standard normal,
  independently per variable. Means and variances are preserved in expectation;
  covariances (and correlations) shrink by the factor 1 - δ².
* ``"restr"`` (sdcMicro's "restricted" noise): z_j = c x_j + (1 - c) x̄_j with
  Kim's (1986) factor c; as in sdcMicro there is no random part. Means and
  correlations are preserved exactly, the covariance becomes c² Σ. Being a known
  affine map it is undone exactly, x_j = (z_j - z̄_j) / c + z̄_j (z̄ = x̄; c is
  ``summary["restr_factor"]``, or the ratio of the two files' standard deviations):
  no protection against an intruder who knows the method.
* ``"ROMM"`` (random orthogonal matrix masking, Ting, Fienberg & Trottini 2008):
  z = T x with T the Gram-Schmidt orthonormalisation of I + p M, M an n × n
  matrix of standard normals. The uncentred cross-products x'x are preserved
  exactly. p is at most ``ROMM_MAX_P`` (2^53).

``"outdect"`` (noise on outliers only) is refused: its multivariate outlier rule
calls robustbase's ``covMcd`` (FAST-MCD, random subsets), which cannot be
reproduced here.

This module may import NumPy and pandas only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.protection.base import (
    ProtectionResult,
    check_columns,
    check_frame,
    output_frame,
    seeded_rng,
    stamped,
)
from sdcbayes.protection.microaggregation import _numeric_matrix

__all__ = ["NOISE_METHODS", "add_noise"]


#: ``method`` values of :func:`add_noise`, sdcMicro's names (``"outdect"`` is refused).
NOISE_METHODS = ("additive", "correlated", "correlated2", "restr", "ROMM")
#: ROMM draws an n × n matrix and orthonormalises it (n² memory, n³ time): above this
#: many records it is refused rather than left to exhaust the memory.
ROMM_MAX_RECORDS = 5000
#: ROMM's largest p, 2^53 ≈ 9.0e15. T is the Q of I + p M = p (M + I / p), the same as
#: that of M + I / p; from p = 2^53 on, I / p (at most 2^-53, float64's unit roundoff)
#: is below the rounding of M's entries, of order 1, so T is the orthonormalised M
#: whatever p: a larger p perturbs no more, and near p = 1e306 I + p M overflows
#: float64 (every value NaN). Refused above this rather than computed to no effect.
ROMM_MAX_P = 2.0**53


def _is_number(v: Any) -> bool:
    # bool is a number to Python and NumPy: level=True would silently mean α = 1
    return (not isinstance(v, (bool, np.bool_))
            and isinstance(v, (int, float, np.integer, np.floating)) and bool(np.isfinite(v)))


def _check_parameters(method: Any, level: Any, delta: Any, p: Any) -> None:
    """Refuse a bad method or parameter before any work (the rules of sdcMicro's formulas)."""
    if method == "outdect":
        raise InputError(
            "method='outdect' is not available: sdcMicro's outdect finds the outliers it "
            "perturbs with robustbase's covMcd (FAST-MCD on random subsets), which sdcbayes "
            "cannot reproduce; choose one of " + ", ".join(repr(m) for m in NOISE_METHODS))
    if method not in NOISE_METHODS:
        raise InputError(f"method={method!r} must be one of "
                         + ", ".join(repr(m) for m in NOISE_METHODS))
    if not _is_number(level) or level < 0:
        raise InputError(f"level={level!r} must be a non-negative number (the noise level α)")
    if not _is_number(delta) or not 0 < delta <= 1:
        # √(1 - δ²) needs δ <= 1 and the mean term (1 - √(1 - δ²)) / δ needs δ > 0
        raise InputError(f"delta={delta!r} must be a number in (0, 1] (correlated2's noise "
                         "share δ; sdcMicro's default 0.1)")
    if not _is_number(p) or p <= 0:
        raise InputError(f"p={p!r} must be a positive number (ROMM's perturbation weight in "
                         "I + p M; sdcMicro's default 0.001)")
    if method == "ROMM" and p > ROMM_MAX_P:
        raise InputError(
            f"p={p!r} is above ROMM's largest p, 2**53 ≈ 9.0e15: beyond it the identity in "
            "I + p M is lost to float64 rounding (T is the orthonormalised M, whatever p) "
            "and near 1e306 I + p M overflows; choose p <= 2**53 (p = 1000 already gives a T "
            "as far from the identity as any larger p)")


def _restr_factor(n: int, level: float) -> float:
    """The factor c of sdcMicro's ``addNoise_restr`` (Kim 1986).

    Below 500 records √((n - 1 - α) / ((n + 1)(1 + α))), else √((n - 1) / (n + n α - 1)).
    """
    if n < 500:
        return float(np.sqrt((n - 1 - level) / ((n + 1) * (1 + level))))
    return float(np.sqrt((n - 1) / (n + n * level - 1)))


def _romm_matrix(draws: np.ndarray, p: float) -> np.ndarray:
    """The orthogonal T of ROMM: Gram-Schmidt orthonormalisation of the columns of I + p M.

    sdcMicro's ``orthonormalization`` is classical Gram-Schmidt, whose result is the Q
    of the QR decomposition with a positive diagonal of R; Householder QR computes it
    stably (the same T to rounding while I + p M is well conditioned, as for small p).
    """
    n = draws.shape[0]
    # add_noise refuses p above ROMM_MAX_P; a direct call with a huge p (or non-finite
    # draws) would otherwise orthonormalise inf/NaN into an all-NaN T without an error
    if not (_is_number(p) and np.isfinite(draws).all()):
        raise InputError(f"ROMM: p={p!r} and the random matrix M must be finite numbers")
    with np.errstate(over="ignore", invalid="ignore"):
        a = np.eye(n) + p * draws
    if not np.isfinite(a).all():
        raise InputError(f"ROMM: I + p M overflows float64 for p={p!r}; choose p <= 2**53 "
                         "(ROMM_MAX_P)")
    q, r = np.linalg.qr(a)
    d = np.diag(r)
    if not (np.isfinite(q).all() and np.isfinite(d).all()):
        raise InputError(f"ROMM: the orthonormalisation of I + p M is not finite for "
                         f"p={p!r}; choose a smaller p")
    # sdcMicro stops on "colinears vectors" when a singular value of I + p M is <= 1e-8;
    # here the same bound on R's diagonal (the distances Gram-Schmidt divides by)
    if np.abs(d).min() <= 1e-8:
        raise InputError(f"ROMM: I + p M is numerically singular for p={p!r}; choose a "
                         "smaller p (or another seed)")
    return q * np.sign(d)


def _noise_from_draws(x: np.ndarray, draws: np.ndarray | None, method: str,
                      level: float = 0.1, delta: float = 0.1, p: float = 0.001) -> np.ndarray:
    """The protected matrix given the method's standard normal draws (sdcMicro's formulas).

    Parameters
    ----------
    x : ndarray, shape (n, m)
        The original values.
    draws : ndarray or None
        ``"additive"``, ``"correlated"``, ``"correlated2"``: shape (n, m), column j the
        draws for variable j (R's order: ``rnorm`` column after column, or
        ``matrix(rnorm(n * m), n)`` for ``mvrnorm``). ``"ROMM"``: the n × n matrix M.
        ``"restr"``: None (it draws nothing). For ``"correlated"`` draw column k
        multiplies the k-th eigenvector of ``numpy.linalg.eigh`` (increasing
        eigenvalues); MASS::mvrnorm pairs it with the k-th in decreasing order (signs
        LAPACK's), so R's realisation is this one with the columns reversed and signed
        (``tests/test_noise_methods.py``); the distribution is the same.
    method, level, delta, p
        As :func:`add_noise` (checked there).

    Returns
    -------
    ndarray, shape (n, m)
    """
    n = x.shape[0]
    if method == "restr":
        c = _restr_factor(n, level)
        return c * x + (1 - c) * x.mean(axis=0)
    if method == "ROMM":
        return _romm_matrix(draws, p) @ x
    sd = np.sqrt(np.diag(np.atleast_2d(np.cov(x, rowvar=False, ddof=1))))
    if method == "additive":
        return x + draws * (level * sd)
    if method == "correlated":
        # Cholesky may fail on a singular Σ: an eigen-decomposition is safe.
        vals, vecs = np.linalg.eigh(level * np.atleast_2d(np.cov(x, rowvar=False, ddof=1)))
        root = vecs * np.sqrt(np.clip(vals, 0.0, None))
        return x + draws @ root.T
    # correlated2, as sdcMicro computes it: x d1 + δ rnorm(n, (1 - d1) / δ x̄, σ)
    d1 = np.sqrt(1 - delta**2)
    return x * d1 + delta * ((1 - d1) / delta * x.mean(axis=0) + sd * draws)


@stamped
def add_noise(
    frame: pd.DataFrame,
    columns: Sequence[str] | str,
    level: float = 0.1,
    *,
    method: str = "additive",
    delta: float = 0.1,
    p: float = 0.001,
    seed: Any = None,
) -> ProtectionResult:
    """Add random noise to numeric variables (seed 001, section 4.2.2; sdcMicro's addNoise).

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    columns : str or sequence of str
        Numeric variables without missing values (boolean columns are refused).
    level : float, default 0.1
        The noise level α >= 0, sdcMicro's ``noise / 100``. ``"additive"``: noise
        standard deviation α σ_j per variable. ``"correlated"``: noise covariance α Σ.
        ``"restr"``: sets the shrinking factor c. Unused by ``"correlated2"`` and
        ``"ROMM"`` (as in sdcMicro).
    method : {"additive", "correlated", "correlated2", "restr", "ROMM"}, default "additive"
        sdcMicro's methods (module docstring; ``"outdect"`` is refused):

        - ``"additive"`` (Brand 2002): z_j = x_j + α σ_j e_j, independent standard
          normal e; means preserved in expectation, variances times 1 + α².
        - ``"correlated"`` (Brand 2002): z = x + ε, ε ~ N(0, α Σ); means preserved in
          expectation, covariance (1 + α) Σ, so the correlations are preserved.
        - ``"correlated2"`` (sdcMicro's formula, which its documentation attributes to
          Kim 1986): z_j = d x_j + (1 - d) x̄_j + δ σ_j e_j with d = √(1 - δ²) and
          e_j independent standard normal per variable; means and variances are
          preserved in expectation (exactly when the draws have mean 0, variance 1 and
          no correlation with x), covariances between variables shrink by 1 - δ².
          Unlike Kim's transformation of correlated noise it does not preserve the
          covariances.
        - ``"restr"`` (sdcMicro's "restricted" noise; Kim 1986's factor):
          z_j = c x_j + (1 - c) x̄_j with c = √((n - 1) / (n + n α - 1)) from 500
          records on, √((n - 1 - α) / ((n + 1)(1 + α))) below. No random part (none in
          sdcMicro either): means and correlations preserved exactly, covariance c² Σ.
          Being deterministic it is undone exactly from the released file:
          x_j = (z_j - z̄_j) / c + z̄_j, since z̄_j = x̄_j and c is
          ``summary["restr_factor"]`` (or sd(z_j) / sd(x_j); even without c, each
          file standardised by its own mean and sd is the same). It gives no
          protection against an intruder who knows the method, and risk measures
          computed on the original scale (interval risk, record linkage) understate
          the risk after it (``sdcbayes protect`` warns). Below 500 records the level
          must be below n - 1 (c > 0); from 500 records on any level gives
          0 < c <= 1, but a level so large that c (x_j - x̄_j) vanishes against x̄_j
          in float64 (c = 0 when n α overflows) would replace a variable by its mean,
          and is refused.
          sdcMicro 5.8.0 adds the shift (1 - c) x̄ recycled down the rows of its data
          frame (record i of variable j gets the mean of variable ((j - 1) n + i - 1)
          mod m + 1), a slip of ``cc * x + d``; sdcbayes adds each variable's own.
        - ``"ROMM"`` (random orthogonal matrix masking; Ting, Fienberg & Trottini 2008,
          as sdcMicro implements it): z = T x with T the Gram-Schmidt orthonormalisation
          of I + p M, M n × n standard normal. T is orthogonal, so x'x (the uncentred
          sums of squares and cross-products) is preserved exactly; means and
          covariances are not. Needs n² memory and n³ time: refused above
          ``ROMM_MAX_RECORDS`` (5000) records.
    delta : float, default 0.1
        ``"correlated2"``'s δ in (0, 1] (sdcMicro's ``delta``); ignored otherwise.
    p : float, default 0.001
        ``"ROMM"``'s perturbation weight, 0 < p <= ``ROMM_MAX_P`` = 2^53 (sdcMicro's
        ``p``; beyond 2^53 the identity in I + p M is lost to float64 rounding and T
        no longer depends on p, and near 1e306 I + p M overflows); ignored otherwise.
    seed : int, Generator or None
        None draws a seed from the operating system; the seed used is recorded
        as ``summary["seed"]`` (passing it back repeats the run exactly).

    Returns
    -------
    ProtectionResult
        ``log``: one row per variable: ``variable``, ``sd_original``,
        ``noise_sd`` (nominal sd of the random part: α σ_j, √(α Σ_jj), δ σ_j, 0 for
        ``"restr"``, NaN for ``"ROMM"``), ``mean_abs_change``. ``summary``: ``method``
        (``"noise_<method>"``), ``columns``, ``level`` (None where unused),
        ``noise_covariance`` (nested list; None for ``"ROMM"``), ``seed``, and
        ``delta`` (``"correlated2"``), ``p`` (``"ROMM"``), ``restr_factor`` (c,
        ``"restr"``). ``provenance``: the call's stamp.

    References
    ----------
    Brand, R. (2002). Microdata protection through noise addition. In *Inference
    Control in Statistical Databases*, LNCS 2316, 97-116.
    Kim, J. J. (1986). A method for limiting disclosure in microdata based on random
    noise and transformation. *Proceedings of the Section on Survey Research Methods*,
    American Statistical Association, 370-374.
    Ting, D., Fienberg, S. E. and Trottini, M. (2008). Random orthogonal matrix masking
    methodology for microdata release. *International Journal of Information and
    Computer Security* 2, 86-105.
    Templ, M., Meindl, B. and Kowarik, A. (2015). Statistical disclosure control for
    micro-data using the R package sdcMicro. *Journal of Statistical Software* 67(4).
    """
    frame = check_frame(frame)
    columns = check_columns(frame, columns, "columns")
    _check_parameters(method, level, delta, p)
    x = _numeric_matrix(frame, columns, "noise addition")
    n = x.shape[0]
    if n < 2:
        raise InputError("noise addition needs at least 2 records to estimate the variances")
    if method == "restr" and n < 500 and not level < n - 1:
        # sdcMicro's small-sample factor √((n - 1 - α) / ...) needs α < n - 1
        raise InputError(f"level={level!r}: method 'restr' needs level < n - 1 = {n - 1} "
                         f"with {n} records (below 500 records its factor is "
                         "√((n - 1 - α) / ((n + 1)(1 + α))))")
    if method == "restr":
        with np.errstate(over="ignore"):
            c_restr = _restr_factor(n, float(level))
        if not c_restr > 0:
            # from 500 records on any level gives c in (0, 1], but n α can overflow to c = 0
            raise InputError(f"level={level!r}: method 'restr' shrinks by c = "
                             f"√((n - 1) / (n + n α - 1)), which is 0 in float64 here (every "
                             "value would become its variable's mean); choose a smaller level")
    if method == "ROMM" and n > ROMM_MAX_RECORDS:
        raise InputError(f"method 'ROMM' draws an n × n matrix: {n} records exceed its limit "
                         f"of {ROMM_MAX_RECORDS}; split the file into parts of at most "
                         f"{ROMM_MAX_RECORDS} records and protect each yourself (T then mixes "
                         "records within a part only), or choose another method")
    rng, seed_used = seeded_rng(seed)
    cov = np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
    sd = np.sqrt(np.diag(cov))
    extra: dict[str, Any] = {}
    draws: np.ndarray | None = None
    noise_cov: np.ndarray | None
    if method == "additive":
        noise_cov = np.diag((level * sd) ** 2)
        draws = rng.standard_normal(x.shape)
    elif method == "correlated":
        noise_cov = level * cov
        draws = rng.standard_normal(x.shape)
    elif method == "correlated2":
        noise_cov = np.diag((delta * sd) ** 2)
        draws = rng.standard_normal(x.shape)
        extra["delta"] = float(delta)
    elif method == "restr":
        noise_cov = np.zeros_like(cov)
        extra["restr_factor"] = c_restr
    else:  # ROMM
        noise_cov = None
        draws = rng.standard_normal((n, n))
        extra["p"] = float(p)
    z = _noise_from_draws(x, draws, method, level=level, delta=delta, p=p)
    if method == "restr":
        # c > 0 so tiny that c (x - x̄) rounds away against x̄: the variable would be
        # replaced by its mean, which is no noise (and nothing the risk could measure)
        gone = [col for j, col in enumerate(columns)
                if np.ptp(x[:, j]) > 0 and np.ptp(z[:, j]) == 0]
        if gone:
            raise InputError(f"level={level!r}: method 'restr' shrinks by c = {c_restr:.3g}, "
                             "so small that every value of " + ", ".join(map(repr, gone))
                             + " rounds to its mean in float64; choose a smaller level")
    out = output_frame(frame)  # unchanged columns shared under copy-on-write
    for j, col in enumerate(columns):
        out[col] = z[:, j]
    log = pd.DataFrame(
        {
            "variable": columns,
            "sd_original": sd,
            "noise_sd": (np.full(len(columns), np.nan) if noise_cov is None
                         else np.sqrt(np.diag(noise_cov))),
            "mean_abs_change": np.abs(z - x).mean(axis=0),
        }
    )
    summary = {
        "method": f"noise_{method}",
        "columns": columns,
        "level": None if method in ("correlated2", "ROMM") else float(level),
        "noise_covariance": None if noise_cov is None else noise_cov.tolist(),
        "seed": seed_used,
        **extra,
    }
    return ProtectionResult(out, log, summary)
