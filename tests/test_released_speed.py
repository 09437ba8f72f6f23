"""The blanked part's speed-ups change nothing: sdcbayes.risk.released, risk.posterior.

Three changes to ``_score_blanked`` and the quadrature, each checked for equality with
what it replaced (never for time): each pattern's top cells are ranked once
(``PatternSums.top_cells_many`` over the blanked patterns, not once more per batch); the
predictive draw's top cells take the ``pi`` and ``lam`` the batch computed for the
quadrature (its draws to the bit those of ``_Predictive.top_sum`` computing them itself);
and ``inverse_moment_sum_rows`` takes the step-2h tanh-sinh rule where it agrees with
step 4h (the full rule's value to 1e-13 relative on random rows within its odds bound).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_inverse_moment_speed import _frozen_rows
from test_released import _frame
from test_released_batch import _assert_same, _blanked, _both, _posterior

import sdcbayes
import sdcbayes.risk.posterior as posterior
import sdcbayes.risk.released as released
from sdcbayes.models.latent_class import PatternSums
from sdcbayes.risk.released import assess_released

pytestmark = pytest.mark.filterwarnings(
    "ignore::sdcbayes.inference.diagnostics.ConvergenceWarning")


def _case(seed=5, kappa=2.0):
    levels = (4, 6, 3, 5)
    keys = [f"k{j}" for j in range(len(levels))]
    df = _frame(levels, 260, 11, weights=[6.0])
    md = sdcbayes.Microdata(df, keys, weight="w")
    return md, _blanked(df, keys, 12), _posterior(md, kappa=kappa, seed=seed)


def test_top_cells_are_ranked_once_per_pattern(monkeypatch):
    md, rel, idata = _case()
    ranked = []
    orig = PatternSums.top_cells_many

    def spy(self, rect, fixed, T, sl=slice(None)):
        ranked.append(len(fixed))
        return orig(self, rect, fixed, T, sl)

    monkeypatch.setattr(PatternSums, "top_cells_many", spy)
    monkeypatch.setattr(released, "CHUNK_ELEMENTS", 3000)  # several batches per group
    a = assess_released(md, rel, idata, top_cells=16, draw_chunk=3, random_seed=0)
    assert sum(ranked) == a.summary["n_blanked_patterns"] > 40
    # and the results are the per-pattern reference's (tests/test_released_batch.py)
    monkeypatch.setattr(PatternSums, "top_cells_many", orig)
    _assert_same(*_both(monkeypatch, md, rel, idata, top_cells=16, draw_chunk=3))


@pytest.mark.parametrize("kappa", [2.0, np.array([np.inf, 2.0, 0.7, np.inf, 15.0, np.inf,
                                                  3.0, 400.0])])
def test_predictive_top_cells_from_the_batch_params_are_bit_identical(monkeypatch, kappa):
    md, rel, idata = _case(kappa=kappa)
    monkeypatch.setattr(released, "CHUNK_ELEMENTS", 3000)
    a = assess_released(md, rel, idata, top_cells=16, draw_chunk=3, random_seed=4)
    orig = released._Predictive.top_sum
    given = []

    def own(self, rect, tops, valid, params=None):
        given.append(params is not None and params[0].shape[0] == tops.shape[0])
        return orig(self, rect, tops, valid)  # computing pi and lam itself, as before

    monkeypatch.setattr(released._Predictive, "top_sum", own)
    b = assess_released(md, rel, idata, top_cells=16, draw_chunk=3, random_seed=4)
    assert given and all(given)
    for v in a.file_draws.data_vars:
        np.testing.assert_array_equal(a.file_draws[v].values, b.file_draws[v].values)


def _tame_rows(seed, n, K):
    """Random rows with every cell's odds at most 10: f to 3000, Poisson means to 1e7."""
    rng = np.random.default_rng(seed)
    f = np.maximum(1.0, np.round(rng.choice([1.0, 2.0, 3.0, 7.0, 40.0, 300.0, 3000.0], n)
                                 * rng.choice([1.0, 1.0, 1.5], n)))
    r = 10 ** rng.uniform(-3, rng.uniform(-1, 5, (n, 1)), (n, K + 1))
    odds = 10 ** rng.uniform(-12, 1, (n, K + 1))
    lam = rng.choice([0, 0, 1e-3, 1, 50, 1e3, 1e5, 1e7], n) * rng.uniform(0.5, 2, n)
    return f, r, 1.0 / (1.0 + odds), lam


@pytest.mark.parametrize("K", [0, 3, 16])
def test_coarse_rule_agrees_with_the_full_rule_within_its_odds_bound(K):
    for seed in range(4):
        args = _tame_rows(100 * K + seed, 900, K)
        np.testing.assert_allclose(posterior.inverse_moment_sum_rows(*args),
                                   _frozen_rows(*args), rtol=1e-13, atol=0)


def test_released_like_rows_take_the_coarse_rule(monkeypatch):
    """About half the nodes: the rows of a released file pass the level check."""
    f, r, rho, lam = _tame_rows(7, 3000, 6)
    rho = np.maximum(rho, 1.0 / (1.0 + 3.0))  # odds at most 3, as a released file's
    f = np.minimum(f, 150.0)
    lam = np.minimum(lam, 50.0)
    evaluated = []
    orig = posterior._minus_log_g

    def count(fb, ab, rb, big, coef, sel, nodes):
        evaluated.append(sel.size * nodes.size)
        return orig(fb, ab, rb, big, coef, sel, nodes)

    monkeypatch.setattr(posterior, "_minus_log_g", count)
    new = posterior.inverse_moment_sum_rows(f, r, rho, lam)
    np.testing.assert_allclose(new, _frozen_rows(f, r, rho, lam), rtol=1e-13, atol=0)
    assert sum(evaluated) < 0.6 * f.size * posterior._TS_W.size
