"""The blanked part's speed-ups change nothing: sdcbayes.risk.released, risk.posterior.

Three changes to ``_score_blanked`` and the quadrature, each checked for equality with
what it replaced (never for time): each pattern's top cells are ranked once
(``PatternSums.top_cells_many`` over the blanked patterns, not once more per batch); the
predictive draw's top cells take the ``pi`` and ``lam`` the batch computed for the
quadrature (its draws to the bit those of ``_Predictive.top_sum`` computing them itself);
and ``inverse_moment_sum_rows`` takes the step-2h tanh-sinh rule where it agrees with
step 4h (the full rule's value to 1e-13 relative on random rows within its odds bound).
Then three more, each the computation it replaced to the bit: ``PatternSums.cells_many``
sums over the classes once per distinct cell of a batch (``_cells_by_table``), one
``weights_many`` serves a batch's ``sums_many`` and ``cells_many``, and the predictive
draw's top cells come from a pool of generators given each cell's PCG64 state
(``_Predictive._gamma_poisson``), their listings summed per pattern without
``np.add.at`` (the quadrature's own, tests/test_inverse_moment_speed.py).
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


# ------------------------------------------- the top cells' table, shared weights, the pool
#
# PatternSums.cells_many sums over the classes once per distinct cell of the call where
# they are few (a batch of patterns with one free key lists its levels over and over), the
# batch shares one weights_many between sums_many and cells_many, and the predictive draw
# gives a pool of generators each cell's PCG64 state instead of making one per cell. Each
# against the straightforward computation it replaced, to the bit: the remainder is a
# difference of sums whose cancellation turns a last bit of pi or lam into about 1e-11 of
# a risk, and the predictive draws must be assess_from_posterior's seed for seed.


def _ps(seed, *, S=6, H=5, levels=(4, 7, 3, 6), zeros=False, rate=False):
    from sdcbayes.models.latent_class import StructuralZeros

    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(H), S)
    phi = [rng.dirichlet(np.full(L, 0.5), (S, H)) for L in levels]
    sz = None
    if zeros:  # two disjoint forbidden rectangles
        keys = [f"k{j}" for j in range(len(levels))]
        sz = StructuralZeros([{"k0": ["0"], "k1": ["1", "2"]}, {"k0": ["1"], "k2": ["0"]}],
                             keys, [[str(i) for i in range(L)] for L in levels])
    key_rate = (1, rng.uniform(0, 3, levels[1])) if rate else None
    return PatternSums(w, phi, rng.uniform(1, 30, (S, H)), 250.0, structural_zeros=sz,
                       key_rate=key_rate), levels


def _rect_and_cells(ps, levels, free, rng, P):
    """A rectangle with ``free`` keys (None: every level; a list: a recoded subset) and the
    top cells (P rectangles' codes) of P fixed-level combinations."""
    rect = ps.rectangle([free.get(j, 0) for j in range(len(levels))])
    fixed = np.stack([rng.integers(0, L, P) for L in levels], axis=1)
    return rect, fixed, ps.top_cells_many(rect, fixed, 16)


@pytest.mark.parametrize("zeros,rate", [(False, False), (True, False), (False, True),
                                        (True, True)])
@pytest.mark.parametrize("free", [{1: None}, {3: [0, 2, 5]}, {1: None, 3: None},
                                  {0: None, 1: [1, 2, 4], 2: None}])
def test_cells_by_distinct_cell_are_the_listing_to_the_bit(monkeypatch, zeros, rate, free):
    ps, levels = _ps(3, zeros=zeros, rate=rate)
    rng = np.random.default_rng(len(free))
    taken = []
    orig = PatternSums._cells_by_table

    def spy(self, *args):
        taken.append(True)
        return orig(self, *args)

    monkeypatch.setattr(PatternSums, "_cells_by_table", spy)
    for P in (1, 2, 9):
        rect, fixed, tops = _rect_and_cells(ps, levels, free, rng, P)
        for sl in (slice(None), slice(1, 4), np.array([0, 3, 5])):
            got = ps.cells_many(rect, tops, sl)
            with monkeypatch.context() as m:
                m.setattr(PatternSums, "_TABLE_RATIO", 0)  # every cell listed, as before
                want = ps.cells_many(rect, tops, sl)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
            # one weights_many shared by the sums and the cells: the same values
            wts = ps.weights_many(rect, fixed, sl)
            shared = ps.cells_many(rect, tops, sl, weights=wts[0])
            np.testing.assert_array_equal(shared[0], got[0])
            np.testing.assert_array_equal(shared[1], got[1])
            own, given = ps.sums_many(rect, fixed, sl), ps.sums_many(rect, fixed, sl,
                                                                      weights=wts)
            for k in own:
                np.testing.assert_array_equal(given[k], own[k], err_msg=k)
    assert taken  # the distinct cells' table was used, not only the listing


def test_cells_by_distinct_cell_when_cells_repeat_and_when_too_many():
    ps, levels = _ps(8, H=4)
    rect = ps.rectangle([0, None, 0, None])
    rng = np.random.default_rng(2)
    # many rectangles listing the same few cells (twice within one), and one of two cells
    codes = np.zeros((12, 5, 4), np.int64)
    codes[:, :, 0] = rng.integers(0, 4, (12, 1))
    codes[:, :, 1] = rng.integers(0, 2, (12, 5))
    codes[:, :, 3] = rng.integers(0, 2, (12, 5))
    assert ps._distinct_cells(codes, [1, 3]) is not None
    # every cell of the free keys' 42, for 2 cells per rectangle: too many for a table
    spread = np.zeros((42, 2, 4), np.int64)
    spread[:, 0, 1], spread[:, 0, 3] = np.divmod(np.arange(42), 6)
    spread[:, 1, 1] = 1
    assert ps._distinct_cells(spread, [1, 3]) is None
    for c in (codes, spread):  # each rectangle's cells as the one-rectangle method's
        got = ps.cells_many(rect, c, slice(1, 5))
        for p in range(c.shape[0]):
            one = ps.rectangle([int(c[p, 0, 0]), None, int(c[p, 0, 2]), None])
            p1, l1 = ps.cells(one, c[p], slice(1, 5))
            np.testing.assert_array_equal(got[0][p], p1)
            np.testing.assert_array_equal(got[1][p], l1)


def _keyed_draws(seed, keys, k1, fin, scale, lam):
    """Per key its own SeedSequence generator: S gammas, then S Poisson draws (the plain
    construction the pool replaced)."""
    X = []
    for key, sc, la in zip(keys, scale, lam, strict=True):
        g = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))
        gam = g.standard_gamma(k1)
        X.append(np.minimum(g.poisson(np.where(fin, gam * sc, la)), released._COUNT_MAX))
    return np.array(X, dtype=np.int64).reshape(len(keys), k1.size)


def test_pool_of_generators_draws_each_cells_own_stream():
    rng = np.random.default_rng(0)
    kap = np.array([2.0, np.inf, 0.3, 40.0, np.inf, 7.0])
    pred = released._Predictive(12345, np.zeros((kap.size, 0), np.int32), None, kap, 300.0)
    n = released._Predictive._POOL + 37  # more cells than the pool: two rounds
    keys = [(1, *rng.integers(0, 50, 3).tolist()) for _ in range(n)]
    scale = 10 ** rng.uniform(-3, 2, (n, kap.size))
    lam = 10 ** rng.uniform(-3, 3, (n, kap.size))
    lam[:3] = 0.0
    want = _keyed_draws(12345, keys, pred.k1, pred.fin, scale, lam)
    np.testing.assert_array_equal(pred._gamma_poisson(keys, scale, lam), want)
    # again (the pool's generators reset to each cell's start), and keys past 32 bits
    np.testing.assert_array_equal(pred._gamma_poisson(keys[:5], scale[:5], lam[:5]),
                                  want[:5])
    big = [(1, 2 ** 40, 3), (1, 0, 2 ** 33)]
    np.testing.assert_array_equal(pred._gamma_poisson(big, scale[:2], lam[:2]),
                                  _keyed_draws(12345, big, pred.k1, pred.fin, scale[:2],
                                               lam[:2]))
    # the states are PCG64(SeedSequence)'s own
    for key in keys[:4]:
        st = released._pcg64_states(released._spawn_states(12345, np.array([key])))[0]
        bg = np.random.PCG64(np.random.SeedSequence(12345, spawn_key=key))
        assert st == bg.state


def test_top_sum_adds_each_listing_as_the_plain_loop(monkeypatch):
    """Cells listed by several patterns (and twice by one), several owner chunks: summed
    per pattern as np.add.at of each listing's keyed draw."""
    ps, levels = _ps(4, S=7, H=3)
    kap = np.array([np.inf, 2.0, 0.7, np.inf, 15.0, 3.0, 400.0])
    pred = released._Predictive(77, np.zeros((kap.size, 0), np.int32), ps, kap, 250.0)
    rng = np.random.default_rng(5)
    rect = ps.rectangle([0, None, 0, None])
    fixed = np.stack([rng.integers(0, L, 30) for L in levels], axis=1)
    fixed[10:20] = fixed[:10]  # the same rectangles again: their cells listed again
    tops = ps.top_cells_many(rect, fixed, 9)
    tops[:, 4] = tops[:, 0]  # a cell twice in one pattern's list
    valid = rng.random(tops.shape[:2]) < 0.8
    monkeypatch.setattr(released, "CHUNK_ELEMENTS", 400)  # several owner chunks
    for params in (None, ps.cells_many(rect, tops)):
        xt = pred.top_sum(rect, tops, valid, params)
        pic, lamc = ps.cells_many(rect, tops)  # (P, draws, T)
        cells, inv = np.unique(tops[valid], axis=0, return_inverse=True)
        pos = np.argwhere(valid)
        first = np.unique(inv.reshape(-1), return_index=True)[1]
        pc = pic[pos[first, 0], :, pos[first, 1]]
        lc = lamc[pos[first, 0], :, pos[first, 1]]
        scale = np.where(pred.fin, lc / (pred.k1 + pred.n * pc), 0.0)
        X = _keyed_draws(77, [(1, *c) for c in cells.tolist()], pred.k1, pred.fin, scale, lc)
        want = np.zeros_like(xt)
        np.add.at(want, pos[:, 0], X[inv.reshape(-1)])
        np.testing.assert_array_equal(xt, want)
    assert int(valid.sum()) > 2 * cells.shape[0] > 0  # most cells listed more than once
