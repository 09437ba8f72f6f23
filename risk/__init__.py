"""Risk measures, closed forms and decisions (``sdcbayes.risk``).

The closed-form modules import NumPy, SciPy, pandas and xarray only -- never
PyMC or ArviZ -- so a closed-form assessment starts in well under a second.
Array functions work on point values and on ``(chain, draw, cell)`` arrays alike;
labelled wrappers add dims and provenance. The posterior part of the layer
(:mod:`sdcbayes.risk.posterior`, :mod:`sdcbayes.risk.posterior_assess`) consumes
fitted posteriors through ``sdcbayes.inference``.

Modules (see ARCHITECTURE.md): ``individual`` (Benedetti-Franconi / Polettini),
``poisson_gamma`` (Bethlehem-Keller-Pannekoek), ``mokken`` (Mokken et al.),
``beta_binomial`` and ``losses`` (Zaslavsky-Horton), ``decisions``, ``measures``
(household risk, k-anonymity, l-diversity, benchmark rule, global threshold,
unsafe combinations of keys: ``risky_cells``), ``suda``,
``linkage``, ``loglinear`` and ``dis`` (baselines), ``assess`` (closed-form file
assessment), ``posterior`` / ``posterior_assess`` (posterior risk), ``released`` (posterior
risk of a released file with suppressed key values, from the original's fit).

The most used functions are re-exported here lazily (importing this package
imports none of its modules until a name is used). ``suda`` is not among them:
the function shares its module's name (use ``sdcbayes.risk.suda.suda``).
"""

from __future__ import annotations

import importlib
import importlib.util

_EXPORTS = {
    "benedetti_franconi_risk": "individual",
    "negbin_inverse_moment": "individual",
    "polettini_closed_form": "individual",
    "fit_poisson_gamma": "poisson_gamma",
    "prob_population_unique": "poisson_gamma",
    "expected_inverse_frequency": "poisson_gamma",
    "expected_population_uniques": "poisson_gamma",
    "tau_estimates": "poisson_gamma",
    "fit_beta_binomial": "beta_binomial",
    "posterior_predictive_pmf": "beta_binomial",
    "expected_loss": "beta_binomial",
    "parse_loss": "losses",
    "decide": "decisions",
    "household_risk": "measures",
    "benchmark_rule": "measures",
    "k_anonymity_violations": "measures",
    "l_diversity": "measures",
    "risky_cells": "measures",
    "global_risk_threshold": "measures",
    "linkage_risk": "linkage",
    "interval_risk": "linkage",
    "fit_loglinear": "loglinear",
    "assess_closed_form": "assess",
    "assess_released": "released",
    "inverse_moment_sum": "posterior",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        # a submodule, imported on first use (``sdcbayes.risk.mokken`` after
        # ``import sdcbayes``), as a notebook reaches for it
        if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}"):
            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module 'sdcbayes.risk' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sdcbayes.risk.{module}"), name)


def __dir__():
    return sorted(set(globals()) | set(__all__))
