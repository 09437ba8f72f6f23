"""Fitting, diagnostics and posterior access (``sdcbayes.inference``).

May import: PyMC, ArviZ, xarray, ``sdcbayes`` and ``sdcbayes.models``. Posterior
groups are read through :func:`sdcbayes.inference.posterior.get_group` only; the
container is ``arviz.InferenceData`` (ArviZ 0.x, PyMC 5) or ``xarray.DataTree``
(ArviZ 1, PyMC 6), the differences kept in :mod:`sdcbayes._compat`.

Public names
------------
fit, METHODS
    One entry point for NUTS, nutpie, ADVI and MAP/Laplace; stamped posteriors.
    ``METHODS`` is the registry of fitting methods, ``{"nuts", "nutpie", "advi",
    "map"}`` to their functions (the values ``fit(method=...)`` takes).
loo, compare, WeightedLoo
    PSIS-LOO with cell weights (counts of counts) and model comparison;
    ``WeightedLoo`` is what :func:`loo` returns.
get_group, has_group, save_posterior, load_posterior, provenance, fit_diagnostics
    Posterior access (a group as a Dataset; whether a group is present) and I/O.
compute_diagnostics, check_diagnostics
    R-hat, ESS and divergences of a posterior, and the warnings (or errors, strict)
    they call for; :func:`fit` runs both.
prior_predictive, posterior_predictive, predictive_check
    Replicated counts of counts against the observed ones.
SdcbayesWarning, ConvergenceWarning, TruncationWarning, PredictiveCheckWarning
    Warnings issued on purpose (diagnostics).
"""

from sdcbayes.inference.compare import WeightedLoo, compare, loo
from sdcbayes.inference.diagnostics import (
    ConvergenceWarning,
    PredictiveCheckWarning,
    SdcbayesWarning,
    TruncationWarning,
    check_diagnostics,
    compute_diagnostics,
)
from sdcbayes.inference.posterior import (
    fit_diagnostics,
    get_group,
    has_group,
    load_posterior,
    provenance,
    save_posterior,
)

# PyMC (0.5 s and 20 MB to import beyond ArviZ) loads with the first use of these names: the
# latent-class route (its own Gibbs sampler) reads diagnostics and posteriors from this
# package without ever fitting a PyMC model
_LAZY = {"METHODS": "fitting", "fit": "fitting", "posterior_predictive": "predictive",
         "predictive_check": "predictive", "prior_predictive": "predictive"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"sdcbayes.inference.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sdcbayes.inference' has no attribute {name!r}")

__all__ = [
    "METHODS",
    "ConvergenceWarning",
    "PredictiveCheckWarning",
    "SdcbayesWarning",
    "TruncationWarning",
    "WeightedLoo",
    "check_diagnostics",
    "compare",
    "compute_diagnostics",
    "fit",
    "fit_diagnostics",
    "get_group",
    "has_group",
    "load_posterior",
    "loo",
    "posterior_predictive",
    "predictive_check",
    "prior_predictive",
    "provenance",
    "save_posterior",
]
