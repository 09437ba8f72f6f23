r"""Skinner-Elliot (2002) DIS measure: probability of a correct match given a unique match.

An intruder takes a population unit at random and looks for its key values in the
released sample. Among the population units whose key matches exactly one sample
record (cells with f_k = 1), the match is correct when the unit is that record
(Skinner & Elliot 2002, "A measure of disclosure risk for microdata", JRSS B 64,
855-867, the definition of theta; the paper is not among the seeds, so no
equation numbers are cited):

.. math::

    \theta = P(\mathrm{CM} \mid \mathrm{UM})
           = \frac{\sum_k I(f_k = 1)}{\sum_k F_k\, I(f_k = 1)} .

Under Bernoulli sampling at rate :math:`\pi` (within a cell of size F,
:math:`P(f = 1) = F\pi(1-\pi)^{F-1}` and :math:`P(f = 2) = \binom F2 \pi^2(1-\pi)^{F-2}`),
:math:`E[(F_k - 1) I(f_k = 1)] = \tfrac{2(1-\pi)}{\pi} P(f_k = 2)`, so the
denominator has the unbiased estimator :math:`n_1 + 2(1-\pi)n_2/\pi` and

.. math::

    \hat\theta = \frac{\pi n_1}{\pi n_1 + 2(1-\pi) n_2}

(Skinner & Elliot 2002, their estimator of theta), with n_1, n_2 the numbers of
sample cells of size 1 and 2. No model is needed: it is the "Data Intrusion Simulation" measure that
DIS-SUDA distributes over records (IHSN guide, seed ``001_``, section 3.5).

The denominator estimator is unbiased; the ratio is not, and with few sample
uniques it is noisy and biased upward. In a simulation of simple random samples
(N = 20 000 records in 15 000 cells with gamma(0.3) cell probabilities, 2000
samples per row; audit CC3, a smaller version in ``tests/test_risk_audit_cc3.py``):

=========  ==========  ============  ==================  ========
pi         mean est.   mean theta    sd(est. - theta)    bias
=========  ==========  ============  ==================  ========
0.01       0.183       0.156         0.097               +17 %
0.02       0.169       0.163         0.036               +3 %
0.05       0.185       0.184         0.017               +0.7 %
>= 0.2     --          --            0.007 to 0.012      < 0.2 %
=========  ==========  ============  ==================  ========

:func:`dis_variance` estimates the spread of the error ``theta_hat - theta``
(delta method); report it with the estimate.

"No sample uniques" (n_1 = 0) makes theta 0/0; :func:`dis_estimate` and
:func:`dis_truth` both return NaN there.

Imports NumPy only (plus the project's exceptions and the NumPy-only shape check
of :mod:`sdcbayes.risk.individual`); the functions broadcast, and arguments whose
shapes do not broadcast, or that are not numeric, raise :class:`InputError`.
"""

from __future__ import annotations

import numpy as np

from sdcbayes.exceptions import InputError
from sdcbayes.risk.individual import _broadcast

__all__ = [
    "dis_estimate",
    "dis_from_frequencies",
    "dis_truth",
    "dis_variance",
    "dis_variance_from_frequencies",
]


def _numeric(x, name: str, what: str = "numeric counts") -> np.ndarray:
    """``x`` as a float array; non-numeric input is an InputError naming ``name``."""
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"{name} must be {what}, got {x!r:.60}; convert it to numbers first."
        ) from exc


def _counts(x, name: str, *, minimum: float) -> np.ndarray:
    arr = _numeric(x, name)
    bad = ~np.isfinite(arr) | (arr < minimum) | (arr != np.round(arr))
    if np.any(bad):
        raise InputError(
            f"{name} must hold whole numbers >= {minimum:g} (got {arr[bad].ravel()[0]:g}); "
            "drop NaN cells and pass counts."
        )
    return arr


def _cell_counts_and_fraction(sampling_fraction, **counts) -> list[np.ndarray]:
    """Check counts of sample cells (finite, >= 0, whole) and pi in (0, 1]; broadcast them."""
    arrays = {name: _numeric(x, name) for name, x in counts.items()}
    pi = _numeric(sampling_fraction, "sampling_fraction", "a number in (0, 1], e.g. n/N")
    if not np.all((pi > 0) & (pi <= 1)):
        raise InputError("sampling_fraction must be in (0, 1]; pass n/N, e.g. 0.05.")
    names = " and ".join(", ".join(arrays).rsplit(", ", 1))
    # NaN fails every comparison, so test for the valid range, not the invalid one
    if not all(np.all(np.isfinite(a) & (a >= 0)) for a in arrays.values()):
        raise InputError(f"{names} are counts of cells and must be finite and >= 0.")
    # counts of cells are whole numbers; a fractional one is an expected count or a
    # per-record average passed by mistake, and the estimator's unbiasedness argument
    # (module docstring) is about the observed counts
    for name, arr in arrays.items():
        frac = arr != np.round(arr)
        if np.any(frac):
            raise InputError(
                f"{name} is a count of sample cells and must be a whole number, got "
                f"{arr[frac].ravel()[0]:g}; pass the numbers of cells with f_k = 1, 2 (and 3) "
                "(dis_from_frequencies counts them from the f_k)."
            )
    return _broadcast(**arrays, sampling_fraction=pi)


def dis_estimate(n1, n2, sampling_fraction):
    r"""Skinner-Elliot estimate :math:`\hat\theta = \pi n_1 / (\pi n_1 + 2(1-\pi) n_2)`.

    Skinner & Elliot (2002), estimator of theta (see the module docstring for the
    derivation, and for its bias and spread with few sample uniques; the standard
    error is :func:`dis_variance`).

    Parameters
    ----------
    n1, n2 : array_like
        Numbers of sample CELLS of size 1 and 2 (unique cells = unique records;
        n2 counts each pair once, so it is half the number of records in pairs);
        whole numbers >= 0.
    sampling_fraction : array_like
        pi in (0, 1].

    Returns
    -------
    numpy.ndarray
        The estimate; NaN where n1 = 0 (no sample uniques: theta is 0/0, as in
        :func:`dis_truth`). Until audit CC3, n1 = 0 < n2 gave 0.

    Raises
    ------
    InputError
        If n1 or n2 is negative, NaN, infinite or not a whole number, or pi is outside
        (0, 1]; if an argument is not numeric; if the shapes of n1, n2 and pi do not
        broadcast.

    See Also
    --------
    sdcbayes.risk.suda.dis_estimate : the same estimate from U and P, where its
        second argument P is the number of RECORDS in pairs (2 n2, twice the pair
        cells) and U = 0 gives 0 (sdcMicro's convention), not NaN.
    """
    n1, n2, pi = _cell_counts_and_fraction(sampling_fraction, n1=n1, n2=n2)
    num = pi * n1
    den = num + 2.0 * (1.0 - pi) * n2  # > 0 wherever n1 > 0, since pi > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n1 > 0, num / np.where(den > 0, den, 1.0), np.nan)


def dis_variance(n1, n2, n3, sampling_fraction):
    r"""Estimated variance of the DIS estimate's error :math:`\hat\theta - \theta`.

    Under Bernoulli sampling at rate :math:`\pi` the cells are independent and
    :math:`\hat\theta - \theta = n_1/(n_1 + \hat B) - n_1/(n_1 + B)` with
    :math:`B = \sum_k (F_k - 1) I(f_k = 1)` and its unbiased estimator
    :math:`\hat B = 2(1-\pi) n_2/\pi` (module docstring). Per cell
    :math:`D_k = \tfrac{2(1-\pi)}{\pi} I(f_k = 2) - (F_k - 1) I(f_k = 1)` has mean 0 and,
    the two events being disjoint,
    :math:`E D_k^2 = \tfrac{4(1-\pi)^2}{\pi^2} P(f_k = 2) + (F_k - 1)^2 P(f_k = 1)`.
    The same binomial identities that give :math:`\hat B`,
    :math:`E[(F-1) I(f=1)] = \tfrac{2(1-\pi)}{\pi} P(f=2)` and
    :math:`E[(F-1)(F-2) I(f=1)] = \tfrac{6(1-\pi)^2}{\pi^2} P(f=3)`, make
    :math:`\hat V_B = [4(1-\pi)^2 n_2 + 2\pi(1-\pi) n_2 + 6(1-\pi)^2 n_3]/\pi^2`
    unbiased for :math:`\operatorname{Var}(\hat B - B)`, and the delta method
    (:math:`\partial\theta/\partial B = -n_1/(n_1 + B)^2 = -\theta^2/n_1`) gives

    .. math::

        \hat V(\hat\theta - \theta)
          = \frac{\hat\theta^4}{n_1^2} \hat V_B
          = \frac{2 \pi^2 n_1^2 (1-\pi)\,[(2-\pi) n_2 + 3(1-\pi) n_3]}
                 {[\pi n_1 + 2(1-\pi) n_2]^4} .

    Derived here; Skinner & Elliot (2002) also give a variance estimator built from
    n_1, n_2 and n_3, which this is meant to match, but the paper is not among the
    seeds and this formula was not checked against it. It was checked by
    simulation (the module docstring's population, 2000 samples per row; a smaller
    version in ``tests/test_risk_audit_cc3.py``): the mean of ``sqrt(dis_variance)``
    against the observed sd of :math:`\hat\theta - \theta` was 0.0179 vs 0.0180 at
    pi = 0.05, 0.0130 vs 0.0136 at 0.1, 0.0120 vs 0.0121 at 0.5 under Bernoulli
    sampling (simple random sampling: 0.0177 vs 0.0172, 0.0130 vs 0.0125, 0.0120 vs
    0.0113), with 94-96 % coverage of :math:`\hat\theta \pm 1.96\,\mathrm{se}`.
    With few sample uniques it understates the error: at pi = 0.01 (n = 200,
    about 30 sample uniques) 0.074 vs 0.096, coverage 93 %, and the estimate is
    then also biased upward by about 17 % (module docstring).

    This is the spread of the estimate around the realised theta of the sample
    (the quantity :func:`dis_truth` computes), not the sampling variance of
    :math:`\hat\theta` alone: at pi = 0.9 the two differ (0.007 vs 0.002).

    Parameters
    ----------
    n1, n2, n3 : array_like
        Numbers of sample CELLS of size 1, 2 and 3 (each cell counted once);
        whole numbers >= 0.
    sampling_fraction : array_like
        pi in (0, 1].

    Returns
    -------
    numpy.ndarray
        The variance estimate; 0 at pi = 1 (theta is then known: 1); NaN where
        n1 = 0 (theta undefined).

    Raises
    ------
    InputError
        As :func:`dis_estimate`, for n1, n2, n3 and pi.
    """
    n1, n2, n3, pi = _cell_counts_and_fraction(sampling_fraction, n1=n1, n2=n2, n3=n3)
    den = pi * n1 + 2.0 * (1.0 - pi) * n2
    num = 2.0 * (pi * n1) ** 2 * (1.0 - pi) * ((2.0 - pi) * n2 + 3.0 * (1.0 - pi) * n3)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n1 > 0, num / np.where(den > 0, den, 1.0) ** 4, np.nan)


def dis_from_frequencies(fk, sampling_fraction) -> float:
    """:func:`dis_estimate` from the sample cell frequencies f_k of the observed cells.

    Parameters
    ----------
    fk : array_like of int
        One entry per CELL: the sample frequency of each key combination present
        in the sample (whole numbers >= 1), not one entry per record. A per-record
        vector (each record's cell frequency, as ``measures.*`` return) counts every
        pair twice and understates theta (0.053 instead of 0.1 in one example).
    sampling_fraction : float
        pi in (0, 1].

    Returns
    -------
    float

    Raises
    ------
    InputError
        If an f_k is not a whole number >= 1 (NaN, negative, zero, fractional) or pi
        is outside (0, 1].

    See Also
    --------
    sdcbayes.risk.suda.dis_estimate : takes the number of RECORDS in pairs (twice
        the pair cells counted here) as its second argument.
    """
    fk = _counts(fk, "fk (sample frequency per observed cell)", minimum=1)
    return float(dis_estimate(np.count_nonzero(fk == 1), np.count_nonzero(fk == 2),
                              sampling_fraction))


def dis_variance_from_frequencies(fk, sampling_fraction) -> float:
    """:func:`dis_variance` from the sample cell frequencies f_k of the observed cells.

    Parameters
    ----------
    fk : array_like of int
        One entry per CELL, as :func:`dis_from_frequencies` (whole numbers >= 1).
    sampling_fraction : float
        pi in (0, 1].

    Returns
    -------
    float
        Estimated variance of ``dis_from_frequencies(fk, pi) - theta``; its square
        root is the standard error. NaN without sample uniques.

    Raises
    ------
    InputError
        As :func:`dis_from_frequencies`.
    """
    fk = _counts(fk, "fk (sample frequency per observed cell)", minimum=1)
    n1, n2, n3 = (np.count_nonzero(fk == j) for j in (1, 2, 3))
    return float(dis_variance(n1, n2, n3, sampling_fraction))


def dis_truth(fk, Fk) -> float:
    r"""True :math:`\theta = \sum_k I(f_k=1) / \sum_k F_k I(f_k=1)` (Skinner & Elliot 2002).

    Parameters
    ----------
    fk, Fk : array_like
        Sample and population frequencies, one entry per CELL (not per record),
        paired by position. Cells of the population table absent from the sample
        may be included with f_k = 0 (they do not enter theta). f_k must be whole
        numbers >= 0 and F_k whole numbers >= f_k (a cell holds its sample).

    Returns
    -------
    float
        NaN without sample uniques.

    Raises
    ------
    InputError
        On NaN, negative or fractional counts, F_k < f_k, or shapes that differ.

    See Also
    --------
    dis_from_frequencies : the estimate of theta from the sample alone.
    """
    fk = _counts(fk, "fk (sample frequency per cell)", minimum=0)
    Fk = _counts(Fk, "Fk (population frequency per cell)", minimum=0)
    if fk.shape != Fk.shape:
        raise InputError(
            f"fk and Fk must have one entry per cell each, got shapes {fk.shape} and "
            f"{Fk.shape}; pass the sample and population frequency of the same cells."
        )
    if np.any(Fk < fk):
        raise InputError(
            "Fk < fk in some cell (the population frequency is below the sample one); "
            "pass population counts F_k for the same cells, in the same order."
        )
    unique = fk == 1
    den = Fk[unique].sum()
    return float(np.count_nonzero(unique) / den) if den > 0 else float("nan")
