"""Prior and posterior predictive checks of the observed summaries.

A model that can replicate its data exposes ``simulate(params, rng) ->
xarray.Dataset`` and ``observed() -> xarray.Dataset`` (for the Poisson-gamma
model: the counts of counts ``m``). These functions draw the parameters (from
the prior through PyMC, or from a fitted posterior) and add ``prior_predictive``
/ ``posterior_predictive`` groups, so a methodologist sees whether the model
reproduces the observed number of sample uniques, doubles, etc.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pymc as pm

from sdcbayes import _compat
from sdcbayes.exceptions import InputError
from sdcbayes.inference.fitting import _quiet_pymc_logs
from sdcbayes.inference.posterior import get_group, has_group
from sdcbayes.models.base import check_whole, checked_seed, predictive_stamps
from sdcbayes.models.ppc import predictive_table

__all__ = ["posterior_predictive", "predictive_check", "prior_predictive"]


def _check_model(model) -> None:
    if not (hasattr(model, "simulate") and hasattr(model, "observed")):
        raise InputError(
            f"model {getattr(model, 'name', model)!r} cannot replicate its data "
            "(no simulate/observed methods); predictive checks are not available for it"
        )


def _check_simulate_kwargs(model, simulate_kwargs) -> None:
    """Refuse options ``model.simulate`` does not take, before any draw (with a close match)."""
    if not simulate_kwargs:
        return
    params = inspect.signature(model.simulate).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    own = [k for k in params if k not in ("self", "params", "rng")]
    unknown = sorted(set(simulate_kwargs) - set(own))
    if unknown:
        words = []
        for key in unknown:
            close = difflib.get_close_matches(key, own, n=1)
            words.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise InputError(
            f"unknown option(s) {', '.join(words)} for the {getattr(model, 'name', 'model')} "
            f"model's replicates; it takes {own}"
        )


def _stamp(dataset, model, seed: int, kind: str) -> None:
    """Provenance of the draws on a group's attrs (seed, model, priors, data, version)."""
    dataset.attrs.update(predictive_stamps(model, seed, kind))


def _check_counts(counts) -> list[int]:
    """``counts`` as a list of non-negative integers, or an InputError naming the bad ones."""
    try:
        if isinstance(counts, str | bytes):
            raise TypeError
        counts = list(counts)
    except TypeError:
        raise InputError(f"counts must be a sequence of integers >= 0; got {counts!r}") from None
    bad = [c for c in counts
           if isinstance(c, bool) or not isinstance(c, int | np.integer) or c < 0]
    if bad:
        raise InputError(
            f"counts must be integers >= 0 (the j of m_j: 1 = sample uniques); got {bad}"
        )
    return [int(c) for c in counts]


def prior_predictive(model, draws: int = 500, random_seed: int | None = None, **simulate_kwargs):
    """Draw parameters from the prior and replicate the observed summaries.

    Parameters
    ----------
    model : SuperpopulationModel
        A model with ``simulate`` and ``observed`` (e.g.
        :class:`~sdcbayes.models.poisson_gamma.PoissonGammaModel`).
    draws : int
        Prior draws, a whole number >= 1.
    random_seed : int, optional
        Seed (an integer >= 0). Without one a seed is drawn from the operating system;
        either way it is stamped (``random_seed`` in the attrs), so passing it back
        repeats the draws.
    **simulate_kwargs
        Options of ``model.simulate`` (the Poisson-gamma model's ``max_count``);
        unknown names are refused.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        Groups ``prior`` (parameters, dims ``chain`` = 1, ``draw``),
        ``prior_predictive`` (e.g. ``m`` with dims ``chain, draw, [domain,] count``)
        and ``observed_data``; ``idata.attrs`` and the ``prior`` and
        ``prior_predictive`` attrs hold ``random_seed``, ``model``, ``priors``,
        ``data_summary`` and ``sdcbayes_version``.

    Raises
    ------
    InputError
        Before any draw: a model that cannot replicate its data, bad ``draws`` or
        ``random_seed``, an option ``model.simulate`` does not take.
    """
    _check_model(model)
    draws = check_whole("draws", draws, 1)
    seed = checked_seed(random_seed)
    _check_simulate_kwargs(model, simulate_kwargs)
    rng = np.random.default_rng(seed)
    pm_model = model.build()
    names = [v.name for v in pm_model.free_RVs + pm_model.deterministics]
    # PyMC logs "Sampling: [alpha, ...]" at INFO on every call; fit is quiet, so is this
    with _quiet_pymc_logs(False):
        idata = pm.sample_prior_predictive(
            draws=draws, model=pm_model, var_names=names, random_seed=int(rng.integers(2**31))
        )
    sims = model.simulate(get_group(idata, "prior"), rng, **simulate_kwargs)
    _stamp(sims, model, seed, "prior")
    _compat.set_group(idata, "prior_predictive", sims)
    if not has_group(idata, "observed_data"):
        _compat.set_group(idata, "observed_data", model.observed())
    stamps = predictive_stamps(model, seed, "prior")
    idata["prior"].attrs.update(stamps)  # the group itself (get_group may copy it)
    idata.attrs.update(stamps)
    return idata


def posterior_predictive(model, idata, random_seed: int | None = None, **simulate_kwargs):
    """Replicate the observed summaries for every posterior draw (adds ``posterior_predictive``).

    The group is added to ``idata`` in place (replacing an earlier one) and
    ``idata`` is returned.

    Parameters
    ----------
    model : SuperpopulationModel
        The model ``idata`` was fitted with (``simulate`` and ``observed``).
    idata : arviz.InferenceData or xarray.DataTree
        Its posterior, from :func:`sdcbayes.inference.fit`.
    random_seed : int, optional
        As for :func:`prior_predictive`; stamped on the ``posterior_predictive`` attrs
        with ``model``, ``priors``, ``data_summary`` and ``sdcbayes_version``.
    **simulate_kwargs
        Options of ``model.simulate`` (``max_count``); unknown names are refused.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        The same ``idata`` object, modified in place: its ``posterior_predictive``
        group (e.g. ``m`` with dims ``chain, draw, [domain,] count``) holds one
        replicate per posterior draw and carries the stamps above.

    Raises
    ------
    InputError
        The posterior's stamps (:func:`sdcbayes.inference.fit`) name another model or
        other data than ``model``'s: its parameters would replicate another table.
        Also, before any draw, a bad ``random_seed`` or an option ``model.simulate``
        does not take.
    """
    _check_model(model)
    from sdcbayes.models.base import check_posterior_of

    seed = checked_seed(random_seed)
    _check_simulate_kwargs(model, simulate_kwargs)
    if hasattr(model, "data_summary"):
        check_posterior_of(model, idata, "posterior_predictive")
    rng = np.random.default_rng(seed)
    sims = model.simulate(get_group(idata, "posterior"), rng, **simulate_kwargs)
    _stamp(sims, model, seed, "posterior")
    _compat.set_group(idata, "posterior_predictive", sims)  # replacing an earlier one
    return idata


def predictive_check(
    model,
    idata,
    kind: str = "posterior",
    counts: Sequence[int] | None = None,
    prob: float = 0.9,
    var: str = "m",
) -> pd.DataFrame:
    """Tabulate observed vs predicted ``m_j`` (sample uniques at j = 1, doubles at 2, …).

    Parameters
    ----------
    model : SuperpopulationModel
        The model whose ``observed()`` summaries are compared with the replicates.
    idata : arviz.InferenceData or xarray.DataTree
        With a ``prior_predictive`` or ``posterior_predictive`` group (from
        :func:`prior_predictive` / :func:`posterior_predictive`).
    kind : {"posterior", "prior"}, default "posterior"
        Which predictive group to compare with the observed summaries.
    counts : sequence of int, optional
        The j of the rows. Default 0, 1, ..., 5, cut below the replicates' pooled tail
        (``max_count``, by default one more than the largest observed count: a sparse
        file whose largest cell holds 3 records gets 0..3).
    prob : float, default 0.9
        Mass of the central predictive interval, in (0, 1): 0.9 gives the 5 % and
        95 % quantiles (:func:`sdcbayes.models.ppc.predictive_table`).
    var : str, default "m"
        The replicated variable of the predictive group and of ``model.observed()``
        (``"m"``, the counts of counts).

    Returns
    -------
    pandas.DataFrame
        One row per j (and domain), indexed by ``count`` (and ``domain``): columns
        ``observed``, ``mean`` (predictive mean), ``lower`` and ``upper`` (the central
        ``prob`` interval), ``p_value`` (``P(m_rep >= m_obs)``; near 0: more than
        the model predicts), ``p_lower`` (``P(m_rep <= m_obs)``; near 0: fewer) and
        ``inside`` (whether the observed value lies in the interval).

    Raises
    ------
    InputError
        An unknown ``kind``, bad ``counts`` or ``prob``, a missing predictive group or
        variable, or counts that reach the replicates' pooled tail.
    """
    if kind not in ("posterior", "prior"):
        raise InputError(f"kind must be 'posterior' or 'prior'; got {kind!r}")
    if counts is not None:
        counts = _check_counts(counts)
    group = f"{kind}_predictive"
    if not has_group(idata, group):
        raise InputError(
            f"no {group} group: call sdcbayes.inference.{kind}_predictive(model, ...) first"
        )
    replicates = get_group(idata, group)
    if var not in replicates:
        raise InputError(
            f"the {group} group has no variable {var!r}; its variables: "
            f"{sorted(map(str, replicates.data_vars))} (the counts of counts are 'm')"
        )
    sim = replicates[var]
    tail_from = sim.attrs.get("tail_from")
    if counts is None:
        # the tail row pools ">= tail_from": a count there is not a count of its own
        counts = [c for c in range(6) if tail_from is None or c < tail_from]
    if tail_from is not None and any(c >= tail_from for c in counts):
        raise InputError(
            f"counts {list(counts)} reach the pooled tail (>= {tail_from}); "
            f"ask for counts below {tail_from} or simulate with a larger max_count"
        )
    # a latent-class fit replicates at a subset of its draws (dim ppc_draw)
    sample_dims = [d for d in sim.dims if d in ("chain", "draw", "ppc_draw")]
    return predictive_table(model.observed()[var], sim, counts=counts, prob=prob,
                            sample_dims=sample_dims)
