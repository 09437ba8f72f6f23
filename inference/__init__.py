"""Fitting, diagnostics and posterior access (``sdcbayes.inference``).

May import: PyMC, ArviZ, xarray, ``sdcbayes`` and ``sdcbayes.models``. Posterior
groups are read through :func:`sdcbayes.inference.posterior.get_group` only, so
the switch from ``InferenceData`` to ``xarray.DataTree`` is a one-line change.

Public names
------------
fit
    One entry point for NUTS, nutpie, ADVI and MAP/Laplace; stamped posteriors.
loo, compare
    PSIS-LOO with cell weights (counts of counts) and model comparison.
get_group, save_posterior, load_posterior, provenance, fit_diagnostics
    Posterior access and I/O.
prior_predictive, posterior_predictive, predictive_check
    Replicated counts of counts against the observed ones.
SdcbayesWarning, ConvergenceWarning
    Warnings issued on purpose (diagnostics).
"""

from sdcbayes.inference.compare import WeightedLoo, compare, loo
from sdcbayes.inference.diagnostics import (
    ConvergenceWarning,
    SdcbayesWarning,
    check_diagnostics,
    compute_diagnostics,
)
from sdcbayes.inference.fitting import METHODS, fit
from sdcbayes.inference.posterior import (
    fit_diagnostics,
    get_group,
    has_group,
    load_posterior,
    provenance,
    save_posterior,
)
from sdcbayes.inference.predictive import (
    posterior_predictive,
    predictive_check,
    prior_predictive,
)

__all__ = [
    "METHODS",
    "ConvergenceWarning",
    "SdcbayesWarning",
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
