"""One ``fit(model, method=…)`` for every superpopulation model.

Methods (registry :data:`METHODS`):

* ``"nuts"`` (default) — PyMC's NUTS sampler;
* ``"nutpie"`` — the nutpie NUTS implementation (optional extra
  ``sdcbayes[nutpie]``); a :class:`~sdcbayes.exceptions.MissingDependencyError`
  names the package when it is absent;
* ``"advi"`` — mean-field ADVI (started at the Laplace approximation, Adam
  steps), ``chains x draws`` independent draws from the fitted approximation;
* ``"map"`` — the posterior mode with a Laplace approximation: draws from the
  Gaussian ``N(mode, H^{-1})`` in PyMC's unconstrained space (log for positive
  parameters), ``H`` the Hessian of ``-log p`` at the mode (Jacobian included),
  mapped back. ``laplace=False`` gives the mode alone as 1 chain x 1 draw.

All return the same container with the same groups: ``posterior`` (dims
``chain``, ``draw``, …), ``log_likelihood``, ``observed_data``, ``constant_data``
(and ``sample_stats`` for the samplers), stamped with provenance
(:mod:`sdcbayes.inference.posterior`), so nothing downstream branches on how the
posterior was obtained.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from collections.abc import Callable
from typing import Any

import arviz as az
import numpy as np
import pymc as pm
from pymc.backends.arviz import find_constants, find_observations
from pymc.blocking import DictToArrayBijection
from scipy import optimize

from sdcbayes._version import __version__
from sdcbayes.exceptions import InputError, MissingDependencyError, ModelError
from sdcbayes.inference.diagnostics import (
    ConvergenceWarning,
    check_diagnostics,
    compute_diagnostics,
)
from sdcbayes.inference.posterior import get_group, stamp
from sdcbayes.provenance import stamp as provenance_stamp

__all__ = ["METHODS", "fit"]


def _require_nutpie() -> None:
    if importlib.util.find_spec("nutpie") is None:
        raise MissingDependencyError(
            "method='nutpie' needs the optional package 'nutpie', which is not installed: "
            "pip install 'sdcbayes[nutpie]' (or pip install nutpie), or use method='nuts'"
        )


def _sample(pm_model, *, draws, chains, tune, random_seed, target_accept, cores, progressbar,
            nuts_sampler, **kwargs):
    if cores is None:
        # Sequential chains by default: these models cost microseconds per gradient, and
        # each worker process would first import PyMC and load the compiled graph
        # (measured 2x slower on 2 cores; benchmarks/fit_poisson_gamma.py).
        cores = 1
    with warnings.catch_warnings():
        # PyMC's own convergence messages are replaced by ours (they name a fix).
        warnings.filterwarnings("ignore", message=".*(rhat|r_hat|effective samples).*")
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=random_seed,
            target_accept=target_accept,
            progressbar=progressbar,
            nuts_sampler=nuts_sampler,
            compute_convergence_checks=False,
            idata_kwargs={"log_likelihood": True},
            model=pm_model,
            **kwargs,
        )


def _fit_nuts(pm_model, **kw):
    kw.pop("advi_iterations"), kw.pop("laplace")
    return _sample(pm_model, nuts_sampler="pymc", **kw)


def _fit_nutpie(pm_model, **kw):
    _require_nutpie()
    kw.pop("advi_iterations"), kw.pop("laplace")
    return _sample(pm_model, nuts_sampler="nutpie", **kw)


def _data_groups(pm_model) -> dict[str, Any]:
    dims = pm_model.named_vars_to_dims
    obs, const = find_observations(pm_model), find_constants(pm_model)
    return {
        "observed_data": obs,
        "constant_data": const,
        "dims": {k: list(v) for k, v in dims.items()},
        "coords": {k: list(v) for k, v in pm_model.coords.items()},
    }


def _posterior_from_value_draws(pm_model, values: np.ndarray, chains: int, draws: int):
    """Map unconstrained draws (S, n_par) to an InferenceData with constrained values."""
    value_vars = pm_model.value_vars
    outputs = [
        v
        for v in pm_model.unobserved_value_vars
        if v.name in {rv.name for rv in pm_model.free_RVs + pm_model.deterministics}
    ]
    fn = pm_model.compile_fn(outputs, inputs=value_vars, point_fn=False, on_unused_input="ignore")
    info = DictToArrayBijection.map({v.name: pm_model.initial_point()[v.name] for v in value_vars})
    cols: dict[str, list] = {v.name: [] for v in outputs}
    # A loop over posterior draws (not records or cells): each call is microseconds.
    for row in values:
        point = DictToArrayBijection.rmap(info._replace(data=row))
        for v, res in zip(outputs, fn(**point), strict=True):
            cols[v.name].append(res)
    posterior = {
        name: np.asarray(vals).reshape((chains, draws) + np.shape(vals[0]))
        for name, vals in cols.items()
    }
    groups = _data_groups(pm_model)
    idata = az.from_dict(
        posterior=posterior,
        observed_data=groups["observed_data"],
        constant_data=groups["constant_data"],
        coords=groups["coords"],
        dims=groups["dims"],
    )
    return idata


def _find_mode(pm_model, jacobian: bool, random_seed):
    value_vars = pm_model.value_vars
    ip = pm_model.initial_point(random_seed=random_seed)
    x0 = DictToArrayBijection.map({v.name: ip[v.name] for v in value_vars})
    logp = pm_model.compile_logp(jacobian=jacobian)
    dlogp = pm_model.compile_dlogp(jacobian=jacobian)

    def to_point(x):
        return DictToArrayBijection.rmap(x0._replace(data=x))

    def neg_logp(x):
        return -float(logp(to_point(x)))

    def neg_dlogp(x):
        return -np.asarray(dlogp(to_point(x)), dtype=float)

    res = optimize.minimize(neg_logp, x0.data, jac=neg_dlogp, method="BFGS",
                            options={"gtol": 1e-6, "maxiter": 5000})
    if not (res.success and np.all(np.isfinite(res.x))):
        # Newton steps in a trust region: counts of counts make the log posterior very
        # sharp, and BFGS line searches from the default start can overshoot.
        d2logp = pm_model.compile_d2logp(jacobian=jacobian, negate_output=False)
        res = optimize.minimize(
            neg_logp,
            x0.data,
            jac=neg_dlogp,
            hess=lambda x: -np.asarray(d2logp(to_point(x)), dtype=float),
            method="trust-exact",
            options={"gtol": 1e-8, "maxiter": 1000},
        )
    grad = -np.asarray(dlogp(to_point(res.x)), dtype=float)
    if not (np.all(np.isfinite(res.x)) and np.max(np.abs(grad)) < 1e-3):
        raise ModelError(
            f"the posterior mode search did not converge ({res.message}); use method='nuts' "
            "or tighter priors"
        )
    return res, to_point, x0


def _fit_map(pm_model, *, draws, chains, random_seed, laplace, **_):
    rng = np.random.default_rng(random_seed)
    res, to_point, _x0 = _find_mode(pm_model, jacobian=laplace, random_seed=random_seed)
    if not laplace:
        idata = _posterior_from_value_draws(pm_model, res.x[None, :], 1, 1)
        return idata, {"mode_converged": bool(res.success)}
    d2logp = pm_model.compile_d2logp(jacobian=True, negate_output=False)
    hess = -np.asarray(d2logp(to_point(res.x)), dtype=float)
    hess = (hess + hess.T) / 2
    try:
        chol = np.linalg.cholesky(np.linalg.inv(hess))
    except np.linalg.LinAlgError:
        raise ModelError(
            "the Hessian at the posterior mode is not positive definite, so the Laplace "
            "approximation does not exist; use method='nuts' or tighter priors"
        ) from None
    z = rng.standard_normal((chains * draws, res.x.size))
    values = res.x[None, :] + z @ chol.T
    idata = _posterior_from_value_draws(pm_model, values, chains, draws)
    return idata, {"mode_converged": bool(res.success), "laplace": True}


#: Adam step size for ADVI (started at the Laplace approximation, see _fit_advi).
ADVI_LEARNING_RATE = 0.003


def _fit_advi(pm_model, *, draws, chains, random_seed, progressbar, advi_iterations, **_):
    rng = np.random.default_rng(random_seed)
    # Start from the Laplace approximation (mode, sqrt of the diagonal of H^-1): counts of
    # counts are so informative that ADVI from PyMC's default start (sd ~ 0.7 on the log
    # scale) needs tens of thousands of steps to shrink; a small Adam step then refines it
    # with little stochastic-optimisation noise in the mean.
    res, to_point, _x0 = _find_mode(pm_model, jacobian=True, random_seed=random_seed)
    d2logp = pm_model.compile_d2logp(jacobian=True, negate_output=False)
    hess = -np.asarray(d2logp(to_point(res.x)), dtype=float)
    try:
        sd = np.sqrt(np.diag(np.linalg.inv((hess + hess.T) / 2)))
    except np.linalg.LinAlgError:
        sd = np.full(res.x.size, 0.1)
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, 0.1)
    with pm_model:
        approx = pm.fit(
            n=advi_iterations,
            method="advi",
            start=to_point(res.x),
            start_sigma=to_point(sd),
            obj_optimizer=pm.adam(learning_rate=ADVI_LEARNING_RATE),
            random_seed=int(rng.integers(2**31)),
            progressbar=progressbar,
        )
    loss = np.asarray(approx.hist, dtype=float)
    if not np.all(np.isfinite(loss[-100:])):
        raise ModelError("ADVI diverged (non-finite loss); use method='nuts' or tighter priors")
    sampled = approx.sample(chains * draws, random_seed=int(rng.integers(2**31)),
                            return_inferencedata=True)
    post = get_group(sampled, "posterior").isel(chain=0, drop=True)
    posterior = {
        name: post[name].values.reshape((chains, draws) + post[name].shape[1:])
        for name in post.data_vars
    }
    groups = _data_groups(pm_model)
    idata = az.from_dict(
        posterior=posterior,
        observed_data=groups["observed_data"],
        constant_data=groups["constant_data"],
        coords=groups["coords"],
        dims=groups["dims"],
    )
    tenth = max(len(loss) // 10, 1)
    tail, prev = loss[-tenth:], loss[-2 * tenth : -tenth]
    rel = float(abs(prev.mean() - tail.mean()) / max(abs(tail.mean()), 1.0)) if prev.size else 0.0
    if rel > 0.01:
        warnings.warn(
            f"ADVI loss still changed by {rel:.1%} over the last tenth of {advi_iterations} "
            "iterations: raise advi_iterations, or use method='nuts'",
            ConvergenceWarning,
            stacklevel=3,
        )
    return idata, {"final_loss": float(tail.mean()), "loss_relative_change": rel}


#: method name -> implementation; every one returns the same kind of container.
METHODS: dict[str, Callable] = {
    "nuts": _fit_nuts,
    "nutpie": _fit_nutpie,
    "advi": _fit_advi,
    "map": _fit_map,
}


def fit(
    model,
    method: str = "nuts",
    draws: int = 1000,
    chains: int = 4,
    random_seed: int | None = None,
    *,
    tune: int = 1000,
    strict: bool = False,
    target_accept: float = 0.9,
    cores: int | None = None,
    progressbar: bool = False,
    advi_iterations: int = 10_000,
    laplace: bool = True,
    rhat_threshold: float = 1.01,
    ess_threshold: float | None = None,
    **sampler_kwargs,
):
    """Fit a superpopulation model and return its stamped posterior.

    Parameters
    ----------
    model : sdcbayes.models.base.SuperpopulationModel
        Anything with ``build() -> pm.Model``, ``name``, ``priors`` and
        ``data_summary()``.
    method : {"nuts", "nutpie", "advi", "map"}
        See the module docstring. "map" is a Laplace approximation unless
        ``laplace=False`` (then the mode alone, 1 chain x 1 draw).
    draws, chains : int
        Posterior draws per chain, and chains (ADVI and Laplace draws are
        independent; they are arranged as ``chains x draws`` all the same).
    random_seed : int, optional
        Seed for reproducible fits.
    tune : int
        NUTS tuning steps per chain.
    strict : bool
        Raise :class:`~sdcbayes.exceptions.ConvergenceError` instead of warning when
        R-hat, ESS or divergences flag a problem.
    target_accept : float
        NUTS target acceptance rate (raise towards 0.99 against divergences).
    cores : int, optional
        Parallel chain processes (default 1: sequential chains, faster for models on
        sufficient statistics; raise it for expensive models).
    advi_iterations : int
        Optimisation steps for ADVI.
    rhat_threshold, ess_threshold : float
        Diagnostic thresholds (default 1.01 and 100 x chains).
    **sampler_kwargs
        Passed to :func:`pymc.sample` (NUTS methods only).

    Returns
    -------
    arviz.InferenceData
        Groups posterior, log_likelihood, observed_data, constant_data (and
        sample_stats for NUTS); provenance in the posterior attrs and
        ``idata.attrs``: ``sdcbayes_version``, ``model``, ``model_options``,
        ``priors``, ``data_summary``, ``settings``, ``diagnostics`` (``max_r_hat``,
        ``min_ess_bulk``, ``min_ess_tail``, ``divergences``), ``loglik_weight_var``.

    Warns
    -----
    ConvergenceWarning
        Naming the parameter and a fix, when a diagnostic fails (not in strict mode).
    """
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; use one of {sorted(METHODS)}")
    for value, what in ((draws, "draws"), (chains, "chains")):
        if not isinstance(value, int | np.integer) or value < 1:
            raise InputError(f"{what} must be a positive integer; got {value!r}")
    if sampler_kwargs and method not in ("nuts", "nutpie"):
        raise InputError(
            f"options {sorted(sampler_kwargs)} apply to the samplers only, not method={method!r}"
        )
    if method == "nutpie":
        _require_nutpie()  # before building or compiling anything
    pm_model = model.build()
    settings = {
        "method": method,
        "draws": int(draws),
        "chains": int(chains),
        "tune": int(tune) if method in ("nuts", "nutpie") else None,
        "random_seed": random_seed,
        "target_accept": target_accept if method in ("nuts", "nutpie") else None,
    }
    result = METHODS[method](
        pm_model,
        draws=draws,
        chains=chains,
        tune=tune,
        random_seed=random_seed,
        target_accept=target_accept,
        cores=cores,
        progressbar=progressbar,
        advi_iterations=advi_iterations,
        laplace=laplace,
        **sampler_kwargs,
    )
    extra: dict[str, Any] = {}
    if isinstance(result, tuple):
        idata, extra = result
        settings |= {"laplace": laplace} if method == "map" else {}
        if method == "advi":
            settings["advi_iterations"] = advi_iterations
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            pm.compute_log_likelihood(
                idata, model=pm_model, extend_inferencedata=True, progressbar=False
            )
    else:
        idata = result

    if method in ("nuts", "nutpie"):
        diagnostics = compute_diagnostics(idata)
        diagnostics["problems"] = check_diagnostics(
            diagnostics, strict=strict, rhat_threshold=rhat_threshold, ess_threshold=ess_threshold
        )
    else:
        # Independent draws from an approximation: R-hat/ESS/divergences do not apply.
        diagnostics = {
            "chains": int(chains),
            "draws": int(get_group(idata, "posterior").sizes["draw"]),
            "max_r_hat": math.nan,
            "min_ess_bulk": math.nan,
            "min_ess_tail": math.nan,
            "divergences": 0,
            "problems": [],
        } | extra

    options = model.options() if hasattr(model, "options") else {}
    record = provenance_stamp(
        model.name, priors=model.priors, data_summary=model.data_summary(), settings=settings
    )
    stamp(
        idata,
        sdcbayes_version=__version__,
        model=model.name,
        model_options=options,
        priors=model.priors,
        data_summary=model.data_summary(),
        settings=settings,
        diagnostics=diagnostics,
        loglik_weight_var=getattr(model, "loglik_weight_var", None) or "",
        provenance={k: record[k] for k in ("versions", "command", "created")},
    )
    return idata
