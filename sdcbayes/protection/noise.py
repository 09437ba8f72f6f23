"""Noise addition for numeric variables (seed 001, section 4.2.2).

Two forms (Brand 2002, as in sdcMicro's ``addNoise``):

* **uncorrelated additive noise**: z_j = x_j + ε_j with ε_j ~ N(0, (α σ_j)²)
  independently per variable and record, σ_j the standard deviation of x_j.
  Means are preserved in expectation; variances grow by the factor 1 + α²;
  correlations shrink.
* **correlated noise**: z = x + ε with ε ~ N(0, α Σ), Σ the covariance matrix
  of the variables. Means are preserved in expectation, the covariance becomes
  (1 + α) Σ, so correlation coefficients are preserved.

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

__all__ = ["add_noise"]


@stamped
def add_noise(
    frame: pd.DataFrame,
    columns: Sequence[str] | str,
    level: float = 0.1,
    *,
    method: str = "additive",
    seed: Any = None,
) -> ProtectionResult:
    """Add random noise to numeric variables (seed 001, section 4.2.2).

    Parameters
    ----------
    frame : pandas.DataFrame
        Not modified.
    columns : str or sequence of str
        Numeric variables without missing values (boolean columns are refused).
    level : float, default 0.1
        The noise level α >= 0. ``"additive"``: noise standard deviation α σ_j
        per variable. ``"correlated"``: noise covariance α Σ.
    method : {"additive", "correlated"}, default "additive"
        Independent noise per variable, or noise with the covariance structure of
        the original variables (seed 001, section 4.2.2).
    seed : int, Generator or None
        None draws a seed from the operating system; the seed used is recorded
        as ``summary["seed"]`` (passing it back repeats the run exactly).

    Returns
    -------
    ProtectionResult
        ``log``: one row per variable: ``variable``, ``sd_original``,
        ``noise_sd`` (nominal), ``mean_abs_change``. ``summary``: ``method``,
        ``level``, ``noise_covariance`` (nested list), ``seed``. ``provenance``:
        the call's stamp.
    """
    frame = check_frame(frame)
    columns = check_columns(frame, columns, "columns")
    if method not in ("additive", "correlated"):
        raise InputError(f"method={method!r} must be 'additive' or 'correlated'")
    # bool is a number to Python and NumPy: level=True would silently mean α = 1
    if (
        isinstance(level, (bool, np.bool_))
        or not isinstance(level, (int, float, np.integer, np.floating))
        or not np.isfinite(level)
        or level < 0
    ):
        raise InputError(f"level={level!r} must be a non-negative number (the noise level α)")
    x = _numeric_matrix(frame, columns, "noise addition")
    if x.shape[0] < 2:
        raise InputError("noise addition needs at least 2 records to estimate the variances")
    rng, seed_used = seeded_rng(seed)
    cov = np.atleast_2d(np.cov(x, rowvar=False, ddof=1))
    sd = np.sqrt(np.diag(cov))
    if method == "additive":
        noise_cov = np.diag((level * sd) ** 2)
        eps = rng.standard_normal(x.shape) * (level * sd)
    else:
        noise_cov = level * cov
        # Cholesky may fail on a singular Σ: an eigen-decomposition is safe.
        vals, vecs = np.linalg.eigh(noise_cov)
        root = vecs * np.sqrt(np.clip(vals, 0.0, None))
        eps = rng.standard_normal(x.shape) @ root.T
    z = x + eps
    out = output_frame(frame)  # unchanged columns shared under copy-on-write
    for j, col in enumerate(columns):
        out[col] = z[:, j]
    log = pd.DataFrame(
        {
            "variable": columns,
            "sd_original": sd,
            "noise_sd": np.sqrt(np.diag(noise_cov)),
            "mean_abs_change": np.abs(eps).mean(axis=0),
        }
    )
    summary = {
        "method": f"noise_{method}",
        "columns": columns,
        "level": float(level),
        "noise_covariance": noise_cov.tolist(),
        "seed": seed_used,
    }
    return ProtectionResult(out, log, summary)
