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
  mapped back. ``laplace=False`` gives, as 1 chain x 1 draw, the posterior mode in
  the model's own parameters (no Jacobian: the maximum of prior x likelihood, the
  penalised maximum-likelihood estimate, the MLE under flat priors). That is **not**
  the point the Laplace draws are centred on: their centre is the mode of the
  density of the unconstrained parameters (e.g. of ``log alpha``, Jacobian
  included), which mapped back is the draws' median under elementwise transforms
  (log, logit), and for a positive parameter typically lies above the constrained
  mode (e.g. alpha 0.895 against 0.553 on a small Poisson-gamma table, K = 60 cells
  of which 16 observed). Its stamped ``settings`` say ``draws: 1, chains: 1``, the
  run that happened, whatever was asked for.

Compiled once: a model that declares its graph structure (``graph_key()`` and
``data_values()``, as :class:`~sdcbayes.models.poisson_gamma.PoissonGammaModel` does)
is compiled once per structure (:func:`compiled_model`, an LRU cache of
:data:`COMPILED_CACHE_SIZE` structures); later fits swap the data in with
:func:`pymc.set_data`. Its "nuts" fits run PyMC's NUTS step on the cached log-posterior
gradient, chains one after the other, started at the posterior mode (jittered by
±2 Laplace sd) with the mass matrix initialised at the Laplace variances, so tuning
starts at the posterior's scale; draws, deterministics and ``log_likelihood`` come
from one cached point function. Options meant for :func:`pymc.sample`
(``**sampler_kwargs``) or ``cores > 1`` take :func:`pymc.sample` itself. "nutpie"
keeps its numba compilation per structure as well (slow first fit, fast later ones).

All return the same container with the same groups: ``posterior`` (dims
``chain``, ``draw``, …), ``log_likelihood``, ``observed_data``, ``constant_data``
(and ``sample_stats`` for the samplers), stamped with provenance
(:mod:`sdcbayes.inference.posterior`), so nothing downstream branches on how the
posterior was obtained.
"""

from __future__ import annotations

import difflib
import importlib.util
import inspect
import math
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymc as pm
from pymc.backends.arviz import find_constants, find_observations
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt
from scipy import optimize

from sdcbayes import _compat
from sdcbayes._version import __version__
from sdcbayes.exceptions import InputError, MissingDependencyError, ModelError, warn_at_caller
from sdcbayes.inference.diagnostics import (
    ConvergenceWarning,
    check_diagnostics,
    compute_diagnostics,
)
from sdcbayes.inference.posterior import get_group, stamp
from sdcbayes.models.base import quiet_logs
from sdcbayes.provenance import check_seed_spelling, seed_or_drawn
from sdcbayes.provenance import stamp as provenance_stamp

__all__ = ["COMPILED_CACHE_SIZE", "METHODS", "compiled_model", "fit"]


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
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores,
            random_seed=random_seed,
            target_accept=target_accept,
            progressbar=_live_progress(progressbar),
            nuts_sampler=nuts_sampler,
            compute_convergence_checks=False,
            # PyMC 6 deprecates idata_kwargs={"log_likelihood": True} (FutureWarning)
            idata_kwargs={} if _compat.PYMC_6 else {"log_likelihood": True},
            model=pm_model,
            **kwargs,
        )
    if _compat.PYMC_6 and pm_model.observed_RVs:
        pm.compute_log_likelihood(idata, model=pm_model, extend_inferencedata=True,
                                  progressbar=False)
    return idata


#: How many compiled model structures :func:`fit` keeps (least recently used dropped).
COMPILED_CACHE_SIZE = 8
_COMPILED: OrderedDict[Hashable, _Compiled] = OrderedDict()


@dataclass
class _Compiled:
    """One model structure, compiled once and reused for every fit with new data.

    ``logp_dlogp`` is the NUTS target (log posterior and gradient in PyMC's
    unconstrained space, Jacobian included, flat parameter vector); ``point_fn`` maps
    one unconstrained draw to the constrained free variables, the deterministics and
    the pointwise log-likelihood of each observed variable.
    """

    pm_model: Any
    logp_dlogp: Any
    point_fn: Any
    out_names: list[str]
    loglik_names: list[str]
    info: Any  # point-map info of the flat parameter vector
    x0: np.ndarray  # PyMC's initial point, unconstrained
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the compiled nutpie model


def _compile(pm_model) -> _Compiled:
    func = pm_model.logp_dlogp_function(ravel_inputs=True)
    func.trust_input = True  # we always pass a float64 vector of the right size
    func.set_extra_values({})
    value_vars = pm_model.continuous_value_vars
    names = {rv.name for rv in pm_model.free_RVs + pm_model.deterministics}
    outputs = [v for v in pm_model.unobserved_value_vars if v.name in names]
    loglik = pm_model.logp(vars=pm_model.observed_RVs, sum=False)
    point_fn = pm_model.compile_fn(
        outputs + loglik, inputs=value_vars, point_fn=False, on_unused_input="ignore"
    )
    ip = pm_model.initial_point()
    x0 = DictToArrayBijection.map({v.name: ip[v.name] for v in value_vars})
    return _Compiled(
        pm_model=pm_model,
        logp_dlogp=func,
        point_fn=point_fn,
        out_names=[v.name for v in outputs],
        loglik_names=[rv.name for rv in pm_model.observed_RVs],
        info=x0.point_map_info,
        x0=np.asarray(x0.data, dtype=float),
    )


def compiled_model(model) -> _Compiled:
    """The compiled graph of ``model``, from the cache when its structure was fitted before.

    Models exposing ``graph_key()`` and ``data_values()`` (e.g.
    :class:`~sdcbayes.models.poisson_gamma.PoissonGammaModel`) are compiled once per
    key: a later fit only swaps the data in with :func:`pymc.set_data`. Other models
    are built and compiled afresh.
    """
    key = model.graph_key() if hasattr(model, "graph_key") else None
    if key is not None and key in _COMPILED:
        comp = _COMPILED.pop(key)
        _COMPILED[key] = comp  # most recently used last
        with warnings.catch_warnings():
            # set_data warns when a data length changes without coords; we pass them.
            warnings.simplefilter("ignore", UserWarning)
            pm.set_data(model.data_values(), model=comp.pm_model, coords=model.coords)
        return comp
    comp = _compile(model.build())
    if key is not None:
        _COMPILED[key] = comp
        while len(_COMPILED) > COMPILED_CACHE_SIZE:
            _COMPILED.popitem(last=False)
    return comp


def _mode_and_hessian(comp: _Compiled):
    """Posterior mode (BFGS on the cached gradient) and ``H``, the Hessian of ``-log p``.

    Unconstrained space, Jacobian included; ``H`` by central differences of the exact
    gradient (2 n gradient calls, no extra compilation). ``None`` when the search
    ends at a non-finite point; ``converged`` reports BFGS's own test.
    """
    func = comp.logp_dlogp

    def neg(x):
        lp, grad = func(np.asarray(x, dtype=float))
        if not np.isfinite(lp):
            return np.inf, np.zeros_like(x)
        return -float(lp), -np.asarray(grad, dtype=float)

    with np.errstate(all="ignore"):
        res = optimize.minimize(neg, comp.x0, jac=True, method="BFGS",
                                options={"gtol": 1e-6, "maxiter": 2000})
        x = res.x
        if not np.all(np.isfinite(x)) or not np.isfinite(neg(x)[0]):
            return None
        h = 1e-5 * np.maximum(1.0, np.abs(x))
        hess = np.empty((x.size, x.size))
        for i in range(x.size):  # loop over parameters, not records or cells
            e = np.zeros_like(x)
            e[i] = h[i]
            hess[:, i] = (neg(x + e)[1] - neg(x - e)[1]) / (2 * h[i])
    converged = bool(res.success) or float(np.max(np.abs(neg(x)[1]))) < 1e-3
    return x, (hess + hess.T) / 2, converged


def _laplace_start(comp: _Compiled) -> tuple[np.ndarray, np.ndarray] | None:
    """Posterior mode and Laplace variances (diagonal of H^-1), unconstrained space.

    The NUTS chains start near the mode and the mass matrix starts at these variances,
    so tuning does not spend its first windows shrinking from PyMC's unit scale to
    the posterior's (sd ~ 0.01 on the log scale for counts of counts of 10^4 cells).
    ``None`` when the mode search fails (then PyMC's default start is used).
    """
    found = _mode_and_hessian(comp)
    if found is None:
        return None
    x, hess, _ = found
    try:
        var = np.diag(np.linalg.inv(hess))
    except np.linalg.LinAlgError:
        var = np.full(x.size, np.nan)
    var = np.where(np.isfinite(var) & (var > 0), var, 1.0)
    return x, var


def _fit_map_cached(comp: _Compiled, *, draws, chains, random_seed):
    """Laplace approximation on a compiled model (see ``_fit_map``), no recompilation."""
    found = _mode_and_hessian(comp)
    if found is None or not found[2]:
        return None  # let _fit_map try its fallbacks and name the problem
    x, hess, converged = found
    try:
        chol = np.linalg.cholesky(np.linalg.inv(hess))
    except np.linalg.LinAlgError:
        return None
    rng = np.random.default_rng(random_seed)
    z = rng.standard_normal((chains * draws, x.size))
    idata = _posterior_from_value_draws(comp.pm_model, x[None, :] + z @ chol.T, chains, draws,
                                        comp=comp)
    return idata, {"mode_converged": converged, "laplace": True}


#: Stats of PyMC's NUTS kept in ``sample_stats``, under PyMC's InferenceData names.
_NUTS_STATS = {
    "diverging": "diverging",
    "energy": "energy",
    "energy_error": "energy_error",
    "max_energy_error": "max_energy_error",
    "model_logp": "lp",
    "mean_tree_accept": "acceptance_rate",
    "depth": "tree_depth",
    "tree_size": "n_steps",
    "step_size": "step_size",
    "step_size_bar": "step_size_bar",
    "index_in_trajectory": "index_in_trajectory",
    "reached_max_treedepth": "reached_max_treedepth",
}


def _fit_nuts_cached(comp: _Compiled, *, draws, chains, tune, random_seed, target_accept,
                     progressbar):
    """Sequential NUTS chains on a compiled model: PyMC's NUTS step, no recompilation.

    Same algorithm as :func:`pymc.sample` with ``init="jitter+adapt_diag"`` except the
    start: each chain starts at the posterior mode plus uniform jitter of ±2 Laplace
    standard deviations (over-dispersed, so R-hat can still see chains disagree), with
    the diagonal mass matrix initialised at the Laplace variances (:func:`_laplace_start`).
    """
    pm_model = comp.pm_model
    rng = np.random.default_rng(random_seed)
    chain_rngs = rng.spawn(chains)
    start = _laplace_start(comp)
    if start is None:  # PyMC's default: jitter of ±1 around the initial point, unit scale
        centre, var, spread = comp.x0, np.ones(comp.x0.size), 1.0
    else:
        centre, var = start
        spread = 2.0 * np.sqrt(var)
    n_par = centre.size
    values = np.empty((chains, draws, n_par))
    stats: dict[str, np.ndarray] = {}
    with ExitStack() as stack:
        progress = None
        for c, crng in enumerate(chain_rngs):  # loop over chains
            x = centre + spread * crng.uniform(-1.0, 1.0, n_par)
            potential = QuadPotentialDiagAdapt(n_par, x, var, 10, rng=crng.spawn(1)[0])
            step = pm.NUTS(model=pm_model, logp_dlogp_func=comp.logp_dlogp,
                           potential=potential, target_accept=target_accept, rng=crng)
            if progress is None:  # needs a step (its columns); one bar per chain
                progress = stack.enter_context(
                    _progress_bar(step, chains=chains, draws=draws, tune=tune,
                                  progressbar=progressbar)
                )
            q = RaveledVars(x, comp.info)
            # A loop over MCMC iterations (not records or cells), as in pymc.sample.
            for i in range(tune + draws):
                if i == tune:
                    step.stop_tuning()
                q, st = step.astep(q)
                progress.update(chain_idx=c, is_last=False, draw=i, tuning=i < tune,
                                stats=st)
                if i >= tune:
                    d = i - tune
                    values[c, d] = q.data
                    for name, out in _NUTS_STATS.items():
                        if name in st[0]:
                            if out not in stats:
                                # the value's own dtype: lp comes as a 0-d ndarray, whose
                                # type() would make an object array (az.summary fails on
                                # it); pm.sample stores it as float64
                                stats[out] = np.empty((chains, draws),
                                                      dtype=np.asarray(st[0][name]).dtype)
                            stats[out][c, d] = st[0][name]
            progress.update(chain_idx=c, is_last=True, draw=tune + draws - 1, tuning=False,
                            stats=st)
    idata = _posterior_from_value_draws(pm_model, values.reshape(-1, n_par), chains, draws,
                                        comp=comp, sample_stats=stats)
    return idata


class _NoProgress:
    """Stands in for a progress bar when ``progressbar=False`` (one no-op call per draw)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, **_):
        pass


class _LineProgress(_NoProgress):
    """Plain progress on stderr: one line per chain when it finishes.

    Used when stderr is a pipe or a log file (PyMC's live table would stay in it),
    and as the fallback when PyMC's progress-bar machinery cannot drive our own loop
    (its API is internal and has changed between releases).
    """

    def __init__(self, chains: int, draws: int, tune: int):
        self.chains, self.draws, self.tune = chains, draws, tune
        self.divergences = [0] * chains

    def update(self, *, chain_idx, is_last, draw, tuning, stats):
        if not tuning and stats and stats[0].get("diverging"):
            self.divergences[chain_idx] += 1
        if is_last:
            import sys

            print(
                f"chain {chain_idx + 1}/{self.chains}: {self.tune} tuning steps and "
                f"{self.draws} draws done, {self.divergences[chain_idx]} divergences",
                file=sys.stderr,
                flush=True,
            )


def _live_display() -> bool:
    """Whether PyMC's live progress display suits stderr: a terminal or a notebook.

    On a pipe or a log file rich cannot redraw in place, so it leaves its whole table
    in the log ("Progre… Diverg…", a row per chain); notebooks show it as a widget.
    """
    import sys

    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError, OSError):  # no stream, or a closed one
        return False
    try:
        from rich.console import Console

        if Console(file=sys.stderr).is_jupyter:  # Jupyter's stderr is no TTY
            return True
        from pymc.progress_bar.marimo_progress import in_marimo_notebook

        return bool(in_marimo_notebook())
    except Exception:  # internals of rich/PyMC (ImportError, API changes): no live display
        return False


def _live_progress(progressbar):
    """``progressbar`` where PyMC's live display suits stderr, else ``False``.

    For the sampler loops that only PyMC (or nutpie) draws progress for: off rather
    than a table left in a log (:func:`_live_display`).
    """
    return progressbar if progressbar and _live_display() else False


def _progress_bar(step, *, chains: int, draws: int, tune: int, progressbar):
    """The progress display of the compiled-once NUTS loop.

    PyMC's own (``MCMCProgressBarManager``: a rich bar per chain on stderr with
    divergences, step size and gradient evaluations, as :func:`pymc.sample` shows)
    on a terminal or in a notebook; :class:`_LineProgress` when stderr is a pipe or
    a file (where the rich table would stay in the log, :func:`_live_display`) or
    PyMC's progress machinery is unavailable; :class:`_NoProgress` when
    ``progressbar`` is false. ``progressbar`` takes PyMC's values too
    (``"combined"``, ``"split+stats"``, ...).
    """
    if not progressbar:
        return _NoProgress()
    if not _live_display():
        return _LineProgress(chains, draws, tune)
    try:
        from pymc.progress_bar import MCMCProgressBarManager

        return MCMCProgressBarManager(step_method=step, chains=chains, draws=draws, tune=tune,
                                      progressbar=progressbar)
    except (ImportError, TypeError, AttributeError, ValueError):
        return _LineProgress(chains, draws, tune)


def _fit_nutpie_cached(comp: _Compiled, *, draws, chains, tune, random_seed, target_accept,
                       progressbar):
    """Run nutpie's NUTS on a compiled model; the nutpie (numba) compilation is kept too.

    nutpie compiles its own copy of the graph (slow: numba), once per model structure;
    later fits swap the data in with ``with_data``. Its posterior (which also holds
    the unconstrained values) is mapped to the common container by the cached point
    function, which adds the deterministics and ``log_likelihood``.
    """
    _require_nutpie()
    import nutpie

    compiled = comp.extra.get("nutpie")
    if compiled is None:
        compiled = nutpie.compile_pymc_model(comp.pm_model)
        comp.extra["nutpie"] = compiled
    data = {v.name: v.get_value() for v in comp.pm_model.data_vars}
    seed = int(np.random.default_rng(random_seed).integers(2**31))
    # nutpie >= 0.16 keeps the unconstrained draws only when asked, in a group of their own
    # (before: beside the constrained ones in the posterior)
    import inspect

    own_group = "store_unconstrained" in inspect.signature(nutpie.sample).parameters
    raw = nutpie.sample(compiled.with_data(**data), draws=draws, tune=tune, chains=chains,
                        cores=1, seed=seed, target_accept=target_accept,
                        progress_bar=_live_progress(progressbar), save_warmup=False,
                        **({"store_unconstrained": True} if own_group else {}))
    post = get_group(raw, "unconstrained_posterior" if own_group else "posterior")
    # Unconstrained draws in the order of the flat parameter vector.
    cols = [post[name].values.reshape(chains * draws, -1) for name, *_ in comp.info]
    values = np.concatenate(cols, axis=1)
    stats = get_group(raw, "sample_stats")
    keep = {name: stats[name].values for name in ("diverging", "energy", "tree_depth",
                                                  "n_steps", "step_size", "lp")
            if name in stats}
    return _posterior_from_value_draws(comp.pm_model, values, chains, draws, comp=comp,
                                       sample_stats=keep)


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


def _posterior_from_value_draws(pm_model, values: np.ndarray, chains: int, draws: int, *,
                                comp: _Compiled | None = None, sample_stats=None):
    """Map unconstrained draws (S, n_par) to an InferenceData with constrained values.

    With ``comp`` (a compiled model) its cached point function is used, and the
    ``log_likelihood`` group (pointwise ``log p``, as :func:`pymc.compute_log_likelihood`
    gives it) and ``sample_stats`` are added.
    """
    if comp is None:
        value_vars = pm_model.value_vars
        outputs = [
            v
            for v in pm_model.unobserved_value_vars
            if v.name in {rv.name for rv in pm_model.free_RVs + pm_model.deterministics}
        ]
        fn = pm_model.compile_fn(outputs, inputs=value_vars, point_fn=False,
                                 on_unused_input="ignore")
        info = DictToArrayBijection.map(
            {v.name: pm_model.initial_point()[v.name] for v in value_vars}
        )
        out_names, ll_names = [v.name for v in outputs], []
    else:
        fn, info = comp.point_fn, RaveledVars(comp.x0, comp.info)
        out_names, ll_names = comp.out_names, comp.loglik_names
    names = out_names + ll_names
    cols: dict[str, list] = {name: [] for name in names}
    # A loop over posterior draws (not records or cells): each call is microseconds.
    for row in values:
        point = DictToArrayBijection.rmap(info._replace(data=row))
        for name, res in zip(names, fn(**point), strict=True):
            cols[name].append(res)

    def arrange(name):
        vals = cols[name]
        return np.asarray(vals).reshape((chains, draws) + np.shape(vals[0]))

    groups = _data_groups(pm_model)
    extra = {}
    if ll_names:
        extra["log_likelihood"] = {name: arrange(name) for name in ll_names}
    if sample_stats is not None:
        extra["sample_stats"] = sample_stats
    idata = _compat.from_dict(
        posterior={name: arrange(name) for name in out_names},
        observed_data=groups["observed_data"],
        constant_data=groups["constant_data"],
        coords=groups["coords"],
        dims=groups["dims"],
        **extra,
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
    # Two modes on purpose. laplace=False is the point estimate: the mode in the model's
    # own parameters (no Jacobian), which is the penalised MLE, the MLE under flat
    # priors, and does not depend on the transform PyMC happens to pick; the Gaussian
    # must be centred where it is fitted, the unconstrained mode (Jacobian included, as
    # _mode_and_hessian), whose image is the draws' median. Documented in fit().
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
            # PyMC writes each sigma into a flat slice: a (classes, levels) matrix
            # variable must come ravelled (otherwise a broadcast error).
            start_sigma={k: np.ravel(v) for k, v in to_point(sd).items()},
            obj_optimizer=pm.adam(learning_rate=ADVI_LEARNING_RATE),
            random_seed=int(rng.integers(2**31)),
            progressbar=_live_progress(progressbar),
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
    idata = _compat.from_dict(
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
        warn_at_caller(
            f"ADVI loss still changed by {rel:.1%} over the last tenth of {advi_iterations} "
            "iterations: raise advi_iterations, or use method='nuts'",
            ConvergenceWarning,
        )
    return idata, {"final_loss": float(tail.mean()), "loss_relative_change": rel}


#: method name -> implementation; every one returns the same kind of container.
METHODS: dict[str, Callable] = {
    "nuts": _fit_nuts,
    "nutpie": _fit_nutpie,
    "advi": _fit_advi,
    "map": _fit_map,
}


@contextmanager
def _quiet_pymc_logs(progressbar):
    """PyMC's INFO chatter off while fitting without a progress bar.

    ``pymc.sample`` and ``pymc.fit`` log "Initializing NUTS using jitter+adapt_diag...",
    "Sequential sampling (...)" and the like at INFO whatever ``progressbar`` says; a
    quiet fit should print nothing (:func:`sdcbayes.models.base.quiet_logs`: raised to
    WARNING, warnings still show). With a progress bar they are left alone.
    """
    if progressbar:
        yield
        return
    with quiet_logs():
        yield


#: Largest deterministic (elements per draw) whose R-hat and ESS a fit computes.
_DIAGNOSE_DETERMINISTIC_MAX = 1000


def _diagnosed_variables(pm_model, post) -> list[str]:
    """The posterior variables whose R-hat and ESS :func:`fit` computes.

    Every free random variable, and the deterministics of at most
    ``_DIAGNOSE_DETERMINISTIC_MAX`` elements a draw (e.g. the hierarchical model's
    per-domain ``alpha``, ``mu``). Per-cell deterministics are left out: they are
    functions of the free variables, whose diagnostics they nearly repeat, and would cost
    time on large files (vectorised, the three statistics take 1.8 s for 5,000 elements
    of 4 x 500 draws: ``OMP_NUM_THREADS=1 python benchmarks/diagnostics.py``, README
    "Convergence diagnostics").
    """
    free = [rv.name for rv in pm_model.free_RVs if rv.name in post]
    small = [
        rv.name for rv in pm_model.deterministics
        if rv.name in post
        and post[rv.name].size // max(post.sizes["chain"] * post.sizes["draw"], 1)
        <= _DIAGNOSE_DETERMINISTIC_MAX
    ]
    return free + small


#: Options of :func:`pymc.sample` that :func:`fit` sets itself (passing them twice
#: would be a TypeError inside PyMC).
_SET_BY_FIT = frozenset({"nuts_sampler", "compute_convergence_checks", "idata_kwargs", "model",
                         "return_inferencedata"})


def _sampler_options() -> set[str]:
    """Keyword arguments :func:`pymc.sample` accepts: its own and its NUTS step's.

    ``pymc.sample`` passes its ``**kwargs`` on to the step methods: NUTS's and its
    base classes' ``__init__`` parameters (``max_treedepth``, ``step_scale``, ...),
    a dictionary per step name (``nuts={...}``), and the deprecated ``start``.
    """
    # The defining module's function: pm.sample may be wrapped or replaced (tests do).
    from pymc.sampling.mcmc import sample
    from pymc.step_methods import STEP_METHODS
    from pymc.step_methods.hmc import NUTS

    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = {p.name for p in inspect.signature(sample).parameters.values() if p.kind in named}
    for cls in NUTS.__mro__:
        init = cls.__dict__.get("__init__")
        if init is not None and cls is not object:
            names |= {p.name for p in inspect.signature(init).parameters.values()
                      if p.kind in named and p.name != "self"}
    names |= {step.name for step in STEP_METHODS} | {"start"}
    return names


def _is_int(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _is_real(value) -> bool:
    return (isinstance(value, int | float | np.integer | np.floating)
            and not isinstance(value, bool | np.bool_) and math.isfinite(value))


def _check_options(*, tune, target_accept, random_seed, advi_iterations, rhat_threshold,
                   ess_threshold, cores, laplace, strict, sampler_kwargs) -> None:
    """Refuse bad options of :func:`fit` before anything is built or compiled."""
    problems = []
    if not (_is_int(tune) and tune >= 0):
        problems.append(f"tune must be an integer >= 0; got {tune!r}")
    if not (_is_real(target_accept) and 0 < target_accept < 1):
        problems.append(f"target_accept must be a number strictly between 0 and 1 (e.g. 0.9, "
                        f"raise it towards 0.99 against divergences); got {target_accept!r}")
    if not (random_seed is None or (_is_int(random_seed) and random_seed >= 0)):
        problems.append(f"random_seed must be None (a seed is drawn and stamped) or an integer "
                        f">= 0; got {random_seed!r}")
    if not (_is_int(advi_iterations) and advi_iterations >= 1):
        problems.append(f"advi_iterations must be a positive integer; got {advi_iterations!r}")
    if not (_is_real(rhat_threshold) and rhat_threshold > 1):
        problems.append(f"rhat_threshold must be a number > 1 (e.g. 1.01); got {rhat_threshold!r}")
    if not (ess_threshold is None or (_is_real(ess_threshold) and ess_threshold > 0)):
        problems.append(f"ess_threshold must be None (100 x chains) or a number > 0; got "
                        f"{ess_threshold!r}")
    if not (cores is None or (_is_int(cores) and cores >= 1)):
        problems.append(f"cores must be None or a positive integer; got {cores!r}")
    for value, what in ((laplace, "laplace"), (strict, "strict")):
        if not isinstance(value, bool | np.bool_):
            problems.append(f"{what} must be True or False; got {value!r}")
    if problems:
        raise InputError("; ".join(problems))
    if not sampler_kwargs:
        return
    # 'rng' is even a NUTS option, which fit sets from random_seed
    check_seed_spelling(sampler_kwargs)
    accepted = _sampler_options()
    unknown = sorted(set(sampler_kwargs) - accepted)
    if unknown:
        own = [p for p in inspect.signature(fit).parameters if p not in ("model", "sampler_kwargs")]
        words = []
        for key in unknown:
            close = difflib.get_close_matches(key, own + sorted(accepted - _SET_BY_FIT), n=1)
            words.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise InputError(
            f"unknown option(s) {', '.join(words)}: fit passes extra options to pymc.sample, "
            "which does not take them; fix the spelling or leave them out"
        )
    clash = sorted(set(sampler_kwargs) & _SET_BY_FIT)
    if clash:
        raise InputError(f"option(s) {clash} are set by fit itself; leave them out "
                         "(method= chooses the sampler)")


def _check_model(model) -> None:
    """Refuse what is no sdcbayes model (None, a dict), naming the model classes."""
    missing = [a for a in ("build", "data_summary") if not callable(getattr(model, a, None))]
    if missing or not isinstance(getattr(model, "name", None), str) \
            or not hasattr(model, "priors"):
        raise InputError(
            f"fit needs a model, such as sdcbayes.models.poisson_gamma.PoissonGammaModel, "
            "beta_binomial.BetaBinomialDomainModel, negbin.NegativeBinomialModel, "
            "loglinear.LoglinearModel or latent_class.LatentClassModel (with build(), name, "
            f"priors and data_summary()); got {type(model).__name__}: {model!r:.80}"
        )


def _check_method_supported(model, method: str) -> None:
    """Refuse a method the model declares it cannot be fitted with, naming what it can.

    A model lists its methods in ``supported_fit_methods`` (default: all of
    :data:`METHODS`); a model with a sampler of its own (``model.sample``, the
    latent-class Gibbs sampler) is pointed to it.
    """
    name = getattr(model, "name", type(model).__name__)
    supported = getattr(model, "supported_fit_methods", None)
    if supported is None or method in supported:
        return
    ways = [f"method={m!r}" for m in supported if m in METHODS]
    if callable(getattr(model, "sample", None)):
        ways.insert(0, f"the model's own sampler, model.sample(...) (what "
                       f"sdcbayes.risk.posterior_assess.assess_posterior(md, model={name!r}) "
                       "runs)")
    raise InputError(
        f"fit(method={method!r}) is not supported for the {name} model (it supports "
        f"{list(supported)}); use " + (" or ".join(ways) if ways else "another model")
    )


def _run(model, method, comp, pm_model, settings, *, draws, chains, tune, random_seed,
         target_accept, cores, progressbar, advi_iterations, laplace, sampler_kwargs):
    """Dispatch one fit to its method; returns the posterior and the method's extras.

    ``settings`` gets the method's own entries (``laplace``, ``advi_iterations``).
    """
    cached = comp is not None
    if cached and method == "nuts":
        result = _fit_nuts_cached(comp, draws=draws, chains=chains, tune=tune,
                                  random_seed=random_seed, target_accept=target_accept,
                                  progressbar=progressbar)
    elif cached and method == "map":
        result = _fit_map_cached(comp, draws=draws, chains=chains, random_seed=random_seed)
        if result is None:
            result = _fit_map(model.build(), draws=draws, chains=chains,
                              random_seed=random_seed, laplace=laplace)
    elif cached:
        result = _fit_nutpie_cached(comp, draws=draws, chains=chains, tune=tune,
                                    random_seed=random_seed, target_accept=target_accept,
                                    progressbar=progressbar)
    else:
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
        if "log_likelihood" not in _compat.group_names(idata):  # the cached point function adds it
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                pm.compute_log_likelihood(
                    idata, model=pm_model, extend_inferencedata=True, progressbar=False
                )
    else:
        idata = result

    return idata, extra


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
        ``data_summary()``. A model with a ``complete_posterior(idata, settings)``
        method has it called after sampling, to add draws that need no sampler (the
        negative-binomial model's per-cell ``p`` given ``sigma``); when its graph has
        nothing free to sample, that call alone makes the posterior.
    method : {"nuts", "nutpie", "advi", "map"}
        See the module docstring. "map" is a Laplace approximation unless
        ``laplace=False``: then the posterior mode in the model's own parameters
        (no Jacobian), 1 chain x 1 draw, which is not the Laplace draws' centre
        (the unconstrained-space mode, Jacobian included; module docstring). A model may
        restrict them (``supported_fit_methods``; the latent-class model takes
        "nuts" and "nutpie", its own Gibbs sampler ``model.sample`` being the
        supported route).
    draws, chains : int
        Posterior draws per chain, and chains (ADVI and Laplace draws are
        independent; they are arranged as ``chains x draws`` all the same).
    random_seed : int, optional
        Seed (an integer >= 0) for reproducible fits. Without one a seed is drawn
        from the operating system; either way it is stamped in the settings, so
        passing the stamped seed back repeats the fit exactly.
    tune : int
        NUTS tuning steps per chain.
    strict : bool
        Raise :class:`~sdcbayes.exceptions.ConvergenceError` instead of warning when
        R-hat, ESS or divergences flag a problem.
    target_accept : float
        NUTS target acceptance rate (raise towards 0.99 against divergences).
    cores : int, optional
        Parallel chain processes (default 1: sequential chains, faster for models on
        sufficient statistics; raise it for expensive models: it takes
        :func:`pymc.sample`, which recompiles the graph). NUTS draws depend on it
        (the two paths differ), so it is stamped in the settings.
    progressbar : bool or str
        Show sampling progress on stderr (off by default in the Python API; the CLI
        turns it on unless ``--quiet``/``--json``). The compiled-once NUTS path drives
        PyMC's own progress bars (one per chain: draws, divergences, step size;
        PyMC's string modes such as ``"combined"`` work too), or prints one line per
        finished chain when PyMC's progress machinery is unavailable. PyMC's live
        display is kept for terminals and notebooks: when stderr is a pipe or a file
        (a log), the compiled-once NUTS path prints the lines instead and the other
        samplers show no progress. Without a progress bar PyMC's INFO log messages
        ("Initializing NUTS ...", "Sequential sampling ...") are silenced too.
    advi_iterations : int
        Optimisation steps for ADVI.
    laplace : bool
        For ``method="map"``: True (default) draws ``chains x draws`` from the Laplace
        approximation at the mode; False returns the posterior mode in the model's own
        parameters as 1 chain x 1 draw (see ``method``). Ignored by the other methods.
    rhat_threshold, ess_threshold : float
        Diagnostic thresholds (default 1.01 and 100 x chains).
    **sampler_kwargs
        Passed to :func:`pymc.sample` (NUTS methods only); giving any makes the fit use
        :func:`pymc.sample` rather than the compiled-once sampler. Its own options and
        its NUTS step's (``max_treedepth``, ``step_scale``, ``nuts={...}``) are
        accepted; any other name is refused, with the closest valid one.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        Groups posterior, log_likelihood, observed_data, constant_data (and
        sample_stats for NUTS); provenance in the posterior attrs and
        ``idata.attrs``: ``sdcbayes_version``, ``model``, ``model_options``,
        ``priors``, ``data_summary``, ``settings``, ``diagnostics`` (``max_r_hat``,
        ``min_ess_bulk``, ``min_ess_tail``, ``divergences``; for NUTS ``diagnosed_on``,
        the variables diagnosed: the free ones and the small deterministics),
        ``loglik_weight_var``.

    Raises
    ------
    InputError
        Before anything is built: something that is no model, an unknown method or
        option, a value out of range, a method the model does not support.

    Warns
    -----
    ConvergenceWarning
        Naming the parameter and a fix, when a diagnostic fails (not in strict mode).
    """
    # Every option is checked before anything is built or compiled.
    _check_model(model)
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; use one of {sorted(METHODS)}")
    for value, what in ((draws, "draws"), (chains, "chains")):
        if not _is_int(value) or value < 1:
            raise InputError(f"{what} must be a positive integer; got {value!r}")
    _check_options(tune=tune, target_accept=target_accept, random_seed=random_seed,
                   advi_iterations=advi_iterations, rhat_threshold=rhat_threshold,
                   ess_threshold=ess_threshold, cores=cores, laplace=laplace, strict=strict,
                   sampler_kwargs=sampler_kwargs)
    if sampler_kwargs and method not in ("nuts", "nutpie"):
        raise InputError(
            f"options {sorted(sampler_kwargs)} apply to the samplers only, not method={method!r}"
        )
    _check_method_supported(model, method)
    if method == "nutpie":
        _require_nutpie()  # before building or compiling anything
    # Unseeded fits draw their seed here and stamp it, so that any fit can be repeated.
    random_seed = int(seed_or_drawn(random_seed))
    # The compiled-once path: NUTS on a model that declares its graph structure, with
    # PyMC's own sampler loop otherwise (options for pymc.sample, parallel chains).
    cached = hasattr(model, "graph_key") and (
        (method in ("nuts", "nutpie") and not sampler_kwargs and (cores is None or cores == 1))
        or (method == "map" and laplace)
    )
    comp = compiled_model(model) if cached else None
    pm_model = comp.pm_model if cached else model.build()
    settings = {
        "method": method,
        "draws": int(draws),
        "chains": int(chains),
        "tune": int(tune) if method in ("nuts", "nutpie") else None,
        "random_seed": random_seed,
        "target_accept": target_accept if method in ("nuts", "nutpie") else None,
        # NUTS draws depend on it (cores > 1 runs PyMC's own sampler, not the compiled
        # path above): stamped so that the settings repeat the run
        "cores": 1 if cores is None else int(cores),
    }
    # A model may finish the posterior itself after sampling (``complete_posterior``:
    # draws that need no sampler, e.g. negbin's per-cell p given sigma, exact Monte Carlo
    # seeded by the stamped seed); with nothing free to sample, that step is the fit.
    complete = getattr(model, "complete_posterior", None)
    sampled = complete is None or bool(pm_model.free_RVs)
    with _quiet_pymc_logs(progressbar):
        if sampled:
            idata, extra = _run(model, method, comp, pm_model, settings, draws=draws,
                                chains=chains, tune=tune, random_seed=random_seed,
                                target_accept=target_accept, cores=cores,
                                progressbar=progressbar, advi_iterations=advi_iterations,
                                laplace=laplace, sampler_kwargs=sampler_kwargs)
        else:
            groups = _data_groups(pm_model)
            idata = _compat.from_dict(observed_data=groups["observed_data"],
                                      constant_data=groups["constant_data"],
                                      coords=groups["coords"], dims=groups["dims"])
            extra = {"sampled": False}
            settings |= {"laplace": laplace} if method == "map" else {}
        if complete is not None:
            complete(idata, settings)
    # the draws and chains returned, not those asked for: the MAP point estimate
    # (laplace=False) is one draw of one chain whatever draws/chains said
    shape = get_group(idata, "posterior").sizes
    settings["draws"], settings["chains"] = int(shape["draw"]), int(shape["chain"])
    if method in ("nuts", "nutpie") and sampled:
        diagnosed = _diagnosed_variables(pm_model, get_group(idata, "posterior"))
        diagnostics = compute_diagnostics(idata, var_names=diagnosed)
        diagnostics["diagnosed_on"] = diagnosed
        diagnostics["problems"] = check_diagnostics(
            diagnostics, strict=strict, rhat_threshold=rhat_threshold, ess_threshold=ess_threshold
        )
    else:
        # Independent draws (an approximation, or exact Monte Carlo when nothing was
        # sampled): R-hat/ESS/divergences do not apply (divergences None, as
        # compute_diagnostics gives without a sampler: 0 would read "NUTS found none")
        diagnostics = {
            "chains": settings["chains"],
            "draws": int(get_group(idata, "posterior").sizes["draw"]),
            "max_r_hat": math.nan,
            "min_ess_bulk": math.nan,
            "min_ess_tail": math.nan,
            "divergences": None,
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
