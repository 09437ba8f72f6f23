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

Imports NumPy only (plus the project's exceptions and the NumPy-only shape check
of :mod:`sdcbayes.risk.individual`); the functions broadcast, and arguments whose
shapes do not broadcast, or that are not numeric, raise :class:`InputError`.
"""

from __future__ import annotations

import numpy as np

from sdcbayes.exceptions import InputError
from sdcbayes.risk.individual import _broadcast

__all__ = ["dis_estimate", "dis_from_frequencies", "dis_truth"]


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


def dis_estimate(n1, n2, sampling_fraction):
    r"""Skinner-Elliot estimate :math:`\hat\theta = \pi n_1 / (\pi n_1 + 2(1-\pi) n_2)`.

    Skinner & Elliot (2002), estimator of theta (see the module docstring for the derivation).

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
        The estimate; NaN where n1 = n2 = 0 (no sample uniques: theta undefined).

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
        cells) and U = P = 0 gives 0, not NaN.
    """
    n1 = _numeric(n1, "n1")
    n2 = _numeric(n2, "n2")
    pi = _numeric(sampling_fraction, "sampling_fraction", "a number in (0, 1], e.g. n/N")
    if not np.all((pi > 0) & (pi <= 1)):
        raise InputError("sampling_fraction must be in (0, 1]; pass n/N, e.g. 0.05.")
    # NaN fails every comparison, so test for the valid range, not the invalid one
    if not (np.all(np.isfinite(n1) & (n1 >= 0)) and np.all(np.isfinite(n2) & (n2 >= 0))):
        raise InputError("n1 and n2 are counts of cells and must be finite and >= 0.")
    # counts of cells are whole numbers; a fractional one is an expected count or a
    # per-record average passed by mistake, and the estimator's unbiasedness argument
    # (module docstring) is about the observed counts
    for name, arr in (("n1", n1), ("n2", n2)):
        frac = arr != np.round(arr)
        if np.any(frac):
            raise InputError(
                f"{name} is a count of sample cells and must be a whole number, got "
                f"{arr[frac].ravel()[0]:g}; pass the numbers of cells with f_k = 1 and "
                "f_k = 2 (dis_from_frequencies counts them from the f_k)."
            )
    n1, n2, pi = _broadcast(n1=n1, n2=n2, sampling_fraction=pi)
    num = pi * n1
    den = num + 2.0 * (1.0 - pi) * n2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


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
