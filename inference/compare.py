"""PSIS-LOO on weighted pointwise log-likelihoods, and model comparison.

Models fitted to counts of counts store one log-likelihood entry per distinct
count j, standing for ``m_j`` exchangeable cells (``log_likelihood`` holds the
*total* contribution ``m_j log p(j | theta)``; the weights ``m_j`` are the
``constant_data`` variable named by the posterior's ``loglik_weight_var``
stamp). Leaving out one cell of value j gives the importance ratios
``1/p(j | theta_s)`` — identical for all ``m_j`` such cells — so Pareto-smoothed
importance sampling (Vehtari, Gelman and Gabry 2017) run once per distinct j
gives each of those cells' ``elpd_loo,i`` exactly, and

.. math::

    \\widehat{\\mathrm{elpd}}_{\\mathrm{loo}} = \\sum_j m_j\\, \\widehat{\\mathrm{elpd}}_{j},\\quad
    \\mathrm{se} = \\sqrt{n\\, \\mathrm{Var}_m(\\widehat{\\mathrm{elpd}}_{j})},\\quad
    n = \\sum_j m_j,

with ``Var_m`` the m-weighted variance: the same numbers as ``arviz.loo`` on the
expanded one-entry-per-cell log-likelihood (its relative efficiency depends on
the posterior only), at the cost of the distinct values. Do not call
``arviz.loo`` directly on these posteriors: it would treat each distinct value
as one observation.

Models without a weight stamp (one entry per observation) get unit weights.

The unit that is left out is what the model's likelihood counts, so it differs by
model family (``n_data_points`` is the number of such units):

* Poisson-gamma (counts of counts): one *cell* of the key's cell space, the
  ``m_0 = K - #observed cells`` empty cells included (each count j weighted by
  ``m_j``), so ``n_data_points = K`` (summed over the domains of the hierarchical
  model), not the records nor the observed cells; ``elpd_loo`` and ``se`` grow with
  K (``se`` as its square root);
* beta-binomial: one *domain* (with covariates one entry per domain; without, one
  entry per distinct ``(y, n)`` pair weighted by its number of domains, the
  ``pair_count`` of ``models/beta_binomial.py``);
* negative binomial (``models/negbin.py``): its only observation is the pooled
  within-cell sum of squares ``within_ss``, so ``n_data_points = 1``. Leaving it out
  leaves out all the data: ``elpd_loo`` is then a PSIS estimate of the density of
  ``within_ss`` under the prior predictive, no check of predictions, and no standard
  error, difference standard error or stacking weight exists (NaN; :func:`loo` and
  :func:`compare` warn, :class:`LooWarning`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr
from scipy import optimize
from scipy.special import logsumexp

from sdcbayes import _compat
from sdcbayes.exceptions import InputError, warn_at_caller
from sdcbayes.inference.diagnostics import SdcbayesWarning
from sdcbayes.inference.posterior import get_group, provenance

__all__ = ["LooWarning", "WeightedLoo", "compare", "loo"]

_SAMPLE_DIMS = ("chain", "draw")
#: Fewest posterior draws PSIS-LOO is run on: on one draw (a MAP point estimate) there
#: are no importance ratios to smooth, and ArviZ fails with an IndexError.
_MIN_DRAWS = 2
#: Fewest data points (left-out units) for which LOO gives a standard error and can
#: compare fits: with one, the standard error sqrt(n Var) is undefined (not 0).
_MIN_DATA_POINTS = 2


class LooWarning(SdcbayesWarning):
    """LOO of fewer than two data points: no standard error, and no comparison of fits."""


def _few_points_note(n: float) -> str:
    """Why LOO of ``n < 2`` data points has no standard error and compares nothing."""
    return (
        f"the log-likelihood has {n:g} data point(s) (e.g. the negative-binomial model's "
        "one within-cell sum of squares, which summarises every record): leaving it out "
        "leaves out all the data, so elpd_loo only estimates that observation's prior "
        "predictive density; its standard error, the standard error of a difference and "
        "the stacking weights are undefined (NaN), and LOO cannot compare such fits"
    )


@dataclass
class WeightedLoo:
    """PSIS-LOO of a posterior whose log-likelihood entries carry cell weights.

    Attributes
    ----------
    elpd_loo, se, p_loo : float
        Expected log pointwise predictive density, its standard error, and the
        effective number of parameters, summed over all ``n_data_points`` units.
        ``se`` is NaN for fewer than 2 units (``note`` says why).
    n_data_points : int
        Number of left-out units ``sum_j m_j``, which depends on the model family
        (module docstring): for Poisson-gamma the cells of the key's cell space, the
        empty cells (``m_0``) included, so K, not the records nor the observed cells;
        for beta-binomial the domains; for the negative-binomial model 1 (its one
        within-cell sum of squares).
    loo_i, pareto_k, weights : xarray.DataArray
        Per distinct entry: ``elpd_loo`` of one cell, Pareto k, and how many cells
        it stands for (dim ``obs``, a stacked copy of the log-likelihood dims).
    good_k : float
        Pareto-k threshold (ArviZ's ``min(1 - 1/log10(S), 0.7)``).
    n_bad_k : int
        Cells whose Pareto k exceeds ``good_k``.
    note : str
        Empty, or why the estimate compares nothing (fewer than 2 data points).
    """

    elpd_loo: float
    se: float
    p_loo: float
    n_data_points: int
    loo_i: xr.DataArray
    pareto_k: xr.DataArray
    weights: xr.DataArray
    good_k: float
    n_bad_k: int
    note: str = ""

    @property
    def warning(self) -> bool:
        """Whether any cell has an unreliable PSIS estimate (Pareto k > good_k)."""
        return self.n_bad_k > 0


def _loglik_and_weights(idata, var_name: str | None):
    ll_group = get_group(idata, "log_likelihood")
    names = list(ll_group.data_vars)
    if var_name is None:
        if len(names) != 1:
            raise InputError(
                f"the posterior has log-likelihoods {names}; pass var_name= to choose one"
            )
        var_name = names[0]
    elif var_name not in names:
        raise InputError(f"no log-likelihood {var_name!r}; available: {names}")
    ll = ll_group[var_name]
    weight_var = provenance(idata).get("loglik_weight_var") or ""
    if weight_var:
        weights = get_group(idata, "constant_data")[weight_var]
        weights = weights.broadcast_like(ll.isel(chain=0, draw=0, drop=True))
    else:
        weights = xr.ones_like(ll.isel(chain=0, draw=0, drop=True), dtype=float)
    obs_dims = [d for d in ll.dims if d not in _SAMPLE_DIMS]
    if obs_dims:
        ll = ll.stack(obs=obs_dims)
        weights = weights.stack(obs=obs_dims)
    else:
        ll, weights = ll.expand_dims(obs=[0], axis=-1), weights.expand_dims(obs=[0])
    keep = (weights > 0).values
    ll, weights = ll.isel(obs=keep), weights.isel(obs=keep).astype(float)
    # Stored entries are totals m_j log p(j); one cell's pointwise value is log p(j).
    per_cell = ll / weights if weight_var else ll
    return var_name, per_cell, weights


def loo(idata, var_name: str | None = None) -> WeightedLoo:
    """Compute PSIS-LOO through :func:`arviz.loo`, one PSIS per distinct entry, weighted by cells.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        A posterior from :func:`sdcbayes.inference.fit` (with ``log_likelihood``).
    var_name : str, optional
        The log-likelihood variable, when there are several.

    Returns
    -------
    WeightedLoo
        ``elpd_loo = sum_j m_j elpd_j``, its standard error ``sqrt(n Var_m(elpd_j))``
        and ``p_loo = sum_j m_j (lppd_j - elpd_j)`` (Vehtari, Gelman and Gabry 2017,
        weighted by the cell counts ``m_j`` as in the module docstring), with the
        per-entry values and Pareto k. The left-out unit is the model's: for
        Poisson-gamma one cell of the key's cell space, empty cells included
        (``n_data_points = K``, so elpd and se grow with K); for beta-binomial one
        domain; the negative-binomial model has one observation only
        (``n_data_points = 1``), and ``se`` is then NaN.

    Raises
    ------
    InputError
        Fewer than 2 posterior draws (a MAP point estimate), no
        ``log_likelihood`` group, an unknown ``var_name``.

    Warns
    -----
    LooWarning
        Fewer than 2 data points: ``se`` is NaN, and the estimate cannot compare fits.
    """
    res = _loo(idata, var_name)
    if res.note:
        warn_at_caller(f"LOO: {res.note}", LooWarning)
    return res


def _loo(idata, var_name: str | None = None) -> WeightedLoo:
    """:func:`loo` without its warning (:func:`compare` warns once for all its fits)."""
    post = get_group(idata, "posterior")
    n_draws = int(post.sizes.get("chain", 1) * post.sizes.get("draw", 1))
    if n_draws < _MIN_DRAWS:
        settings = provenance(idata).get("settings") or {}
        point = isinstance(settings, dict) and settings.get("method") == "map"
        raise InputError(
            f"LOO needs posterior draws; this posterior holds {n_draws}"
            + (" (a MAP point estimate, method='map' with laplace=False)" if point else "")
            + ": refit with method='nuts', or method='map' with laplace=True (draws from the "
            "Laplace approximation)"
        )
    var_name, per_cell, weights = _loglik_and_weights(idata, var_name)
    obs_index = per_cell.indexes["obs"]
    flat = per_cell.drop_vars(list(per_cell["obs"].coords)).assign_coords(
        obs=np.arange(per_cell.sizes["obs"])
    )
    ll_ds = xr.Dataset({var_name: flat.transpose("chain", "draw", "obs")})
    tmp = _compat.make_container(posterior=post, log_likelihood=ll_ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto-k warnings are reported, weighted, below
        res_loo_i, res_k, res_good_k = _compat.loo_pointwise(tmp, var_name)
    w = weights.values
    loo_i = np.asarray(res_loo_i.values, dtype=float)
    k = np.asarray(res_k.values, dtype=float)
    S = flat.sizes["chain"] * flat.sizes["draw"]
    lppd_i = logsumexp(flat.values.reshape(S, -1), axis=0) - np.log(S)
    n = float(w.sum())
    elpd = float((w * loo_i).sum())
    var = float((w * (loo_i - elpd / n) ** 2).sum() / n)
    good_k = float(res_good_k or 0.7)
    coords = {"obs": obs_index}

    def labelled(a, name):
        return xr.DataArray(a, dims="obs", coords=coords, name=name)

    few = n < _MIN_DATA_POINTS
    return WeightedLoo(
        elpd_loo=elpd,
        # sqrt(n Var) of one point is 0 by arithmetic, not a standard error of zero
        se=float("nan") if few else float(np.sqrt(n * var)),
        p_loo=float((w * (lppd_i - loo_i)).sum()),
        n_data_points=int(round(n)),
        loo_i=labelled(loo_i, "loo_i"),
        pareto_k=labelled(k, "pareto_k"),
        weights=labelled(w, "weight"),
        good_k=good_k,
        n_bad_k=int(round(w[k > good_k].sum())),
        note=_few_points_note(n) if few else "",
    )


def _stacking_weights(loo_matrix: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Stacking weights (Yao et al. 2018) with each entry counted ``w`` times.

    Maximises ``sum_i w_i log sum_k s_k exp(elpd_ik)`` over the simplex (SLSQP, as
    ArviZ does on unweighted entries).
    """
    M = loo_matrix.shape[1]
    if M == 1:
        return np.ones(1)
    dens = np.exp(loo_matrix - loo_matrix.max(axis=1, keepdims=True))
    wn = w / w.sum()

    def neg(s):
        return -(wn * np.log(dens @ s)).sum()

    def grad(s):
        return -(wn[:, None] * dens / (dens @ s)[:, None]).sum(axis=0)

    res = optimize.minimize(
        neg,
        np.full(M, 1.0 / M),
        jac=grad,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * M,
        constraints={"type": "eq", "fun": lambda s: s.sum() - 1.0},
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    weights = np.clip(res.x, 0.0, None)
    return weights / weights.sum()


def _different_data(a, b) -> list[str]:
    """The observed / constant data variables the two posteriors share but hold differently."""
    from sdcbayes.inference.posterior import has_group

    out = []
    for group in ("observed_data", "constant_data"):
        if not (has_group(a, group) and has_group(b, group)):
            continue
        ga, gb = get_group(a, group), get_group(b, group)
        for v in sorted(set(ga.data_vars) & set(gb.data_vars)):
            x, y = np.asarray(ga[v].values), np.asarray(gb[v].values)
            if x.shape != y.shape or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"
                                                       and y.dtype.kind == "f"):
                out.append(f"{group} {v!r}")
    return out


def compare(fits: dict, var_name: str | None = None) -> pd.DataFrame:
    """Compare models/priors fitted to the same data by weighted PSIS-LOO.

    Parameters
    ----------
    fits : dict of str to arviz.InferenceData or xarray.DataTree
        Posteriors from :func:`sdcbayes.inference.fit`, on the same data (same
        log-likelihood entries and weights, e.g. the same counts of counts, and the
        same observed and constant data).
    var_name : str, optional
        The log-likelihood variable of every fit, when a fit has several
        (:func:`loo`).

    Returns
    -------
    pandas.DataFrame
        One row per fit, best first, columns as :func:`arviz.compare`: ``rank``,
        ``elpd_loo``, ``p_loo``, ``elpd_diff`` (to the best), ``weight`` (stacking),
        ``se``, ``dse`` (standard error of the difference, from the paired
        per-cell differences), ``warning`` (any Pareto k > good_k), plus
        ``n_bad_k``, ``n_data_points`` (the left-out units, :func:`loo`), ``model``
        and ``method`` from the provenance stamps. With fewer than 2 data points (the
        negative-binomial model) ``se``, ``dse`` and ``weight`` are NaN: the rows are
        ordered by ``elpd_loo``, but that one-point estimate cannot compare the fits.

    Raises
    ------
    InputError
        Fits made on different data: other log-likelihood entries or cell weights, or
        other values of an observed or constant data variable they share (fits of one
        model to two domain tables have unit weights, so the weights alone cannot
        tell them apart).

    Warns
    -----
    LooWarning
        Fewer than 2 data points (once for all the fits).
    """
    if not isinstance(fits, dict) or len(fits) < 1:
        raise InputError("compare needs a dict {name: posterior} with at least one fit")
    results = {name: _loo(idata, var_name) for name, idata in fits.items()}
    names = list(results)
    ref = results[names[0]]
    for name in names[1:]:
        r = results[name]
        same = r.loo_i.sizes["obs"] == ref.loo_i.sizes["obs"] and np.array_equal(
            r.weights.values, ref.weights.values
        )
        if same:
            same = r.weights.indexes["obs"].equals(ref.weights.indexes["obs"])
        if not same:
            raise InputError(
                f"fits {names[0]!r} and {name!r} were not made on the same data (different "
                "log-likelihood entries or cell weights); compare models fitted to one table"
            )
        differ = _different_data(fits[names[0]], fits[name])
        if differ:
            raise InputError(
                f"fits {names[0]!r} and {name!r} were not made on the same data (different "
                f"{', '.join(differ[:5])}); compare models fitted to one table"
            )
    w = ref.weights.values
    n = w.sum()
    few = n < _MIN_DATA_POINTS
    L = np.column_stack([results[nm].loo_i.values for nm in names])
    if few:
        # one point: the stacking optimum puts all weight on whichever fit has the
        # larger density there (1 / 0), and sqrt(n Var) of a difference is 0 by arithmetic
        stack = np.full(len(names), np.nan)
        warn_at_caller(f"compare: {ref.note}", LooWarning)
    else:
        stack = _stacking_weights(L, w)
    order = np.argsort([-results[nm].elpd_loo for nm in names], kind="stable")
    best = names[order[0]]
    rows = []
    for rank, idx in enumerate(order):
        nm = names[idx]
        r = results[nm]
        d = results[best].loo_i.values - r.loo_i.values
        dmean = (w * d).sum() / n
        dse = math.nan if few else float(np.sqrt(n * (w * (d - dmean) ** 2).sum() / n))
        stamps = provenance(fits[nm])
        settings = stamps.get("settings") or {}
        rows.append(
            {
                "name": nm,
                "rank": rank,
                "elpd_loo": r.elpd_loo,
                "p_loo": r.p_loo,
                "elpd_diff": results[best].elpd_loo - r.elpd_loo,
                "weight": float(stack[idx]),
                "se": r.se,
                "dse": dse,
                "warning": r.warning,
                "n_bad_k": r.n_bad_k,
                "n_data_points": r.n_data_points,
                "model": stamps.get("model", ""),
                "method": settings.get("method", "") if isinstance(settings, dict) else "",
            }
        )
    return pd.DataFrame(rows).set_index("name")
