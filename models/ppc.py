"""Prior and posterior predictive checks on counts of counts (shared helpers).

A superpopulation model of cell frequencies in which the K cells are exchangeable
(the Poisson-gamma model of Bethlehem, Keller and Pannekoek; seed ``000_…`` eq. 10)
makes the sample counts of counts multinomial: with ``p_j = P(f_k = j | theta)``,

.. math::

    (m_0, m_1, \\dots, m_{J-1}, m_{\\ge J}) \\mid \\theta
        \\sim \\mathrm{Multinomial}(K;\\ p_0, \\dots, p_{J-1}, P(f \\ge J)).

So a replicate of the whole counts-of-counts table costs one multinomial draw per
posterior draw, whatever the size of the cell space K (never K cell draws). The
check a methodologist reads is whether the observed number of sample uniques
``m_1``, doubles ``m_2``, ... lies inside the predictive interval.

May import NumPy, SciPy, pandas and xarray only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from sdcbayes.exceptions import InputError


def negbin_count_probabilities(alpha, nbeta, max_count: int) -> np.ndarray:
    """Probabilities of a sample cell count ``0, 1, …, max_count − 1`` and ``≥ max_count``.

    ``f ~ NegBin(alpha, p = 1/(1 + n beta))`` (seed ``000_…`` eq. 10 with the sample
    size n in place of N, Bernoulli sampling). Broadcasts over the parameters; the
    category axis is appended last.

    Parameters
    ----------
    alpha, nbeta : array_like
        Gamma shape and ``n * beta`` (the scale of the sample cell mean).
    max_count : int
        Counts ``>= max_count`` are pooled in the last category.

    Returns
    -------
    numpy.ndarray
        Shape ``broadcast(alpha, nbeta).shape + (max_count + 1,)``; sums to 1.
    """
    alpha = np.asarray(alpha, dtype=float)[..., None]
    nbeta = np.asarray(nbeta, dtype=float)[..., None]
    p = 1.0 / (1.0 + nbeta)
    j = np.arange(max_count)
    pmf = stats.nbinom.pmf(j, alpha, p)
    tail = stats.nbinom.sf(max_count - 1, alpha, p)
    return np.concatenate([pmf, np.broadcast_to(tail, pmf.shape[:-1] + (1,))], axis=-1)


def simulate_counts_of_counts(
    alpha, nbeta, K, max_count: int, rng: np.random.Generator
) -> np.ndarray:
    """Draw counts of counts ``(m_0, …, m_{J-1}, m_{≥J})`` from K exchangeable NegBin cells.

    One multinomial draw per parameter set (see module docstring); ``K`` broadcasts
    against ``alpha`` and ``nbeta`` (e.g. one K per subpopulation).

    Returns
    -------
    numpy.ndarray of int64
        Shape ``broadcast(alpha, nbeta, K).shape + (max_count + 1,)``.
    """
    probs = negbin_count_probabilities(alpha, nbeta, max_count)
    K = np.broadcast_to(np.asarray(K, dtype=np.int64), probs.shape[:-1])
    # numpy takes the last category as 1 - sum(others); clip rounding excess first.
    probs = np.clip(probs, 0.0, 1.0)
    head = probs[..., :-1].sum(axis=-1, keepdims=True)
    probs[..., :-1] = np.where(head > 1.0, probs[..., :-1] / head, probs[..., :-1])
    return rng.multinomial(K, probs)


def predictive_table(
    observed: xr.DataArray,
    simulated: xr.DataArray,
    counts: Sequence[int] = (0, 1, 2, 3, 4, 5),
    prob: float = 0.9,
    sample_dims: Sequence[str] = ("chain", "draw"),
) -> pd.DataFrame:
    """Compare observed counts of counts with their predictive distribution.

    Parameters
    ----------
    observed : xarray.DataArray
        Observed ``m_j`` with a ``count`` dim (and optionally ``domain``).
    simulated : xarray.DataArray
        Predictive draws with dims ``sample_dims`` + the dims of ``observed``.
    counts : sequence of int
        Which j to tabulate (1 = sample uniques, 2 = doubles, …); j missing from
        ``observed`` counts as ``m_j = 0``.
    prob : float
        Mass of the central predictive interval.
    sample_dims : sequence of str
        The dims of ``simulated`` that index the draws (reduced over): ``("chain",
        "draw")``, or ``("chain", "ppc_draw")`` for a latent-class fit.

    Returns
    -------
    pandas.DataFrame
        One row per j (and domain): observed, predictive mean, interval bounds, the
        predictive p-value ``p_value`` = ``P(m_rep >= m_obs)`` (near 0: the sample
        holds more than the model predicts) and its lower-tail twin ``p_lower`` =
        ``P(m_rep <= m_obs)`` (near 0: it holds fewer). Both count the ties, so a small
        discrete count that the replicates often equal (m_obs = 0 where they hold 0 or
        1) is in neither tail; ``1 - p_value`` alone would flag it.
    """
    if not 0 < prob < 1:
        raise InputError(f"prob must lie in (0, 1); got {prob}: pass e.g. prob=0.9")
    if any(isinstance(c, bool) or not isinstance(c, int | np.integer) or c < 0 for c in counts):
        # reindexing would tabulate a count that cannot occur as m_j = 0 with p = 1
        raise InputError(
            f"counts must be integers >= 0 (the j of m_j: 1 = sample uniques); got {list(counts)}"
        )
    counts = [int(c) for c in counts]
    sim = simulated.reindex(count=counts, fill_value=0)
    obs = observed.reindex(count=counts, fill_value=0)
    sample_dims = list(sample_dims)
    lo_q, hi_q = (1 - prob) / 2, 1 - (1 - prob) / 2
    table = xr.Dataset(
        {
            "observed": obs,
            "mean": sim.mean(sample_dims),
            "lower": sim.quantile(lo_q, dim=sample_dims).drop_vars("quantile"),
            "upper": sim.quantile(hi_q, dim=sample_dims).drop_vars("quantile"),
            "p_value": (sim >= obs).mean(sample_dims),
            "p_lower": (sim <= obs).mean(sample_dims),
        }
    )
    frame = table.to_dataframe()
    frame["inside"] = (frame["observed"] >= frame["lower"]) & (
        frame["observed"] <= frame["upper"]
    )
    return frame


def counts_mapping_to_dataarray(counts: Mapping[int, int]) -> xr.DataArray:
    """A mapping ``j -> m_j`` as a DataArray with dim ``count``."""
    j = np.array(sorted(counts), dtype=np.int64)
    return xr.DataArray(
        np.array([counts[k] for k in j], dtype=np.int64), coords={"count": j}, dims="count"
    )
