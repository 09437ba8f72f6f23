"""sdcbayes's warnings point at the caller's line, not into the package.

A fixed ``stacklevel`` named a file inside sdcbayes as the source whenever a
warning was raised a few calls deep (``assess_posterior`` -> ``fit`` ->
``check_diagnostics``); ``warn_at_caller`` walks out of the package instead.
"""

from __future__ import annotations

import warnings

import pytest

import sdcbayes
from sdcbayes.datasets import load_demo
from sdcbayes.exceptions import warn_at_caller
from sdcbayes.inference.diagnostics import ConvergenceWarning, check_diagnostics
from sdcbayes.risk.posterior_assess import assess_posterior


def _deep(depth):
    # stands in for the package's own call chain only if it lived in the package; here
    # it is the caller's code, so the warning points at this file
    if depth:
        return _deep(depth - 1)
    warn_at_caller("x", UserWarning)


def test_direct_call_points_at_this_file():
    with pytest.warns(UserWarning) as rec:
        _deep(3)
    assert rec[0].filename == __file__


def test_package_call_chain_is_skipped():
    diagnostics = {"max_r_hat": 1.5, "max_r_hat_at": "alpha", "min_ess_bulk": 1e4,
                   "min_ess_bulk_at": "alpha", "min_ess_tail": 1e4, "min_ess_tail_at": "alpha",
                   "divergences": 0, "chains": 4, "draws": 1000}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        check_diagnostics(diagnostics)
    ours = [w for w in rec if issubclass(w.category, ConvergenceWarning)]
    assert ours, "no ConvergenceWarning raised"
    # the old stacklevel=3 pointed two frames above check_diagnostics: into pytest here,
    # into sdcbayes/risk/posterior_assess.py through assess_posterior
    assert all(w.filename == __file__ for w in ours), [w.filename for w in ours]


def test_warning_through_assess_posterior_points_here():
    demo = load_demo()
    md = sdcbayes.Microdata(demo.sample, keys=demo.keys[:2], weight=demo.weight)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        # few draws: R-hat/ESS warnings are certain
        assess_posterior(md, model="poisson-gamma", draws=20, tune=20, chains=2,
                                  random_seed=1)
    ours = [w for w in rec if issubclass(w.category, ConvergenceWarning)]
    assert ours and all(w.filename == __file__ for w in ours), [w.filename for w in ours]


def test_warning_reissued_on_leaving_a_context_manager_points_here():
    from sdcbayes.risk.compare import _warnings_named

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with _warnings_named("model A"):
            check_diagnostics({"max_r_hat": 1.5, "max_r_hat_at": "alpha", "min_ess_bulk": 1e4,
                               "min_ess_bulk_at": "alpha", "min_ess_tail": 1e4,
                               "min_ess_tail_at": "alpha", "divergences": 0, "chains": 4,
                               "draws": 1000})
    ours = [w for w in rec if issubclass(w.category, ConvergenceWarning)]
    assert ours and all(str(w.message).startswith("model A: ") for w in ours)
    assert all(w.filename == __file__ for w in ours), [w.filename for w in ours]
