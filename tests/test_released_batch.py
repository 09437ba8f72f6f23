"""The released-file risk scores its blanked patterns in batches: sdcbayes.risk.released.

``_score_blanked`` (patterns x draws arrays, one batch per free-key specification and
number of explicit cells) against ``score_blanked_loop`` (tests/released_reference.py),
the per-pattern evaluation it replaced, kept as the reference: every output of
``assess_released`` (risks, their quantiles, F_mean, f_p, the per-draw ER and counts above
a threshold) to 1e-12 relative, for top cells 0, 4 and 16, Poisson, finite and mixed kappa
and weight classes (the predictive ER draws too, but both take the package's
``_Predictive`` streams, so only the assembly of the explicit cells' X is independent
there); the reference refuses a recoded file; the
batched PatternSums methods against their one-rectangle siblings (also with a recoded,
subset-of-levels key); ``inverse_moment_sum_rows`` against ``inverse_moment_sum``; the
observed-cell lookup against a brute-force scan; and the batches' size within the
memory budget. Small hand-built posteriors (as tests/test_released.py builds them).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from released_reference import posterior_from_draws, score_blanked_loop
from test_released import _frame

import sdcbayes
import sdcbayes.risk.released as released
from sdcbayes.models.latent_class import LatentClassModel, PatternSums
from sdcbayes.risk.posterior import _ROWS_BLOCK, inverse_moment_sum, inverse_moment_sum_rows
from sdcbayes.risk.released import assess_released

# the hand-built posteriors have a few draws per chain: their convergence is not the point
pytestmark = pytest.mark.filterwarnings(
    "ignore::sdcbayes.inference.diagnostics.ConvergenceWarning")

RTOL = 1e-12


def _posterior(md, *, S=8, H=4, seed=0, kappa=2.0, design=False, chains=2):
    """A hand-built latent-class posterior on md's cells, consistent with its profiles."""
    spec = LatentClassModel.from_microdata(md, weights=design, n_classes=H)
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(H), S)
    # uneven profiles: some cells large, so the top cells and the remainder both matter
    phi = [rng.dirichlet(np.full(L, 0.4), (S, H)) for L in spec.n_levels]
    return posterior_from_draws(md, spec, w, phi, kappa, chains=chains, design=design)


def _blanked(df, keys, seed, share=0.35):
    """The file with random key values suppressed: one to all keys of about ``share``."""
    rng = np.random.default_rng(seed)
    rel = df.copy()
    for i in np.flatnonzero(rng.random(len(df)) < share):
        for j in rng.choice(len(keys), rng.integers(1, len(keys) + 1), replace=False):
            rel.iloc[i, rel.columns.get_loc(keys[j])] = np.nan
    return rel


def _both(monkeypatch, md, rel, idata, **kw):
    """assess_released batched, then with the per-pattern reference loop (one seed)."""
    kw.setdefault("random_seed", 0)  # the predictive draws of both from one seed
    a = assess_released(md, rel, idata, **kw)
    with monkeypatch.context() as m:
        m.setattr(released, "_score_blanked", score_blanked_loop)
        b = assess_released(md, rel, idata, **kw)
    return a, b


def _assert_same(a, b):
    cols = ["f_p", "risk", "risk_lo", "risk_hi", "F_mean"]
    for c in cols + [c for c in a.records.columns if c.startswith("risk_q")]:
        np.testing.assert_allclose(a.records[c].to_numpy(float), b.records[c].to_numpy(float),
                                   rtol=RTOL, atol=0, err_msg=c)
    for c in cols:
        np.testing.assert_allclose(a.cells[c].to_numpy(float), b.cells[c].to_numpy(float),
                                   rtol=RTOL, atol=0, err_msg=c)
    assert set(a.file_draws.data_vars) == set(b.file_draws.data_vars)
    for v in a.file_draws.data_vars:
        np.testing.assert_allclose(a.file_draws[v].values, b.file_draws[v].values,
                                   rtol=RTOL, atol=0, err_msg=v)
    for k in ("expected_reidentifications", "expected_reidentifications_blanked_records"):
        assert a.summary[k] == pytest.approx(b.summary[k], rel=RTOL)
    for k in ("n_patterns", "n_blanked_patterns", "n_above_threshold_at_mean_risk",
              "n_above_benchmark_at_mean_risk"):
        assert a.summary.get(k) == b.summary.get(k)


# ------------------------------------------------ 1. batched = the per-pattern evaluation

KAPPAS = {
    "poisson": None,  # no kappa in the posterior: every draw Poisson
    "finite": 2.0,
    "mixed": np.array([np.inf, 2.0, 0.7, np.inf, 15.0, np.inf, 3.0, 400.0]),
}


@pytest.mark.parametrize("top_cells", [0, 4, 16])
@pytest.mark.parametrize("kappa", sorted(KAPPAS))
@pytest.mark.parametrize("design", [False, True])
def test_batches_equal_the_per_pattern_evaluation(monkeypatch, top_cells, kappa, design):
    levels = (4, 6, 3, 5)
    keys = [f"k{j}" for j in range(len(levels))]
    df = _frame(levels, 260, 11, weights=[3.0, 9.0, 25.0] if design else [6.0])
    md = sdcbayes.Microdata(df, keys, weight="w")
    idata = _posterior(md, kappa=KAPPAS[kappa], design=design, seed=5)
    rel = _blanked(df, keys, 12)
    # draw chunks of 3 over 8 draws (uneven), a small budget: several batches per group
    monkeypatch.setattr(released, "CHUNK_ELEMENTS", 3000)
    a, b = _both(monkeypatch, md, rel, idata, top_cells=top_cells, draw_chunk=3,
                 threshold=0.2, quantiles=(0.05, 0.5, 0.95))
    assert a.summary["n_blanked_patterns"] > 40
    _assert_same(a, b)


def test_batches_equal_the_loop_with_the_default_budget(monkeypatch):
    """One batch per group and K (no budget split), the default draw chunk."""
    levels = (3, 7, 2, 4, 5)
    keys = [f"k{j}" for j in range(len(levels))]
    df = _frame(levels, 400, 21, weights=[5.0])
    md = sdcbayes.Microdata(df, keys, weight="w")
    idata = _posterior(md, kappa=np.array([1.5, np.inf, 8.0, 0.3]), S=4, seed=9)
    rel = _blanked(df, keys, 22, share=0.5)
    a, b = _both(monkeypatch, md, rel, idata, threshold=0.1)
    _assert_same(a, b)


def test_a_key_of_one_level_blanked_or_shown_is_one_pattern_group(monkeypatch):
    """A one-level key is every level either way (the rectangle's normalisation)."""
    levels = (1, 5, 4)
    keys = [f"k{j}" for j in range(len(levels))]
    df = _frame(levels, 150, 31, weights=[7.0])
    md = sdcbayes.Microdata(df, keys, weight="w")
    idata = _posterior(md, seed=3)
    rel = _blanked(df, keys, 32, share=0.6)
    groups = list(released._pattern_groups(
        PatternSums(np.ones((1, 1)), [np.ones((1, 1, L)) for L in levels], 1.0, 1.0),
        np.array([[-1, 2, 1], [0, 2, 1], [-1, -1, 3]]), np.array([0, 1, 2])))
    assert [g[1].tolist() for g in groups] in ([[0, 1], [2]], [[2], [0, 1]])
    a, b = _both(monkeypatch, md, rel, idata, top_cells=4)
    _assert_same(a, b)


def test_the_reference_refuses_a_recoded_file_and_takes_an_identity_recode(monkeypatch):
    """The loop reads a shown code as the level: a recoded key is refused, clearly."""
    levels = (3, 5, 4)
    keys = [f"k{j}" for j in range(len(levels))]
    df = _frame(levels, 150, 51, weights=[5.0])
    md = sdcbayes.Microdata(df, keys, weight="w")
    idata = _posterior(md, seed=6)
    rel = _blanked(df, keys, 52)
    # an identity recode: the codes are the levels, the batches' numbers
    a, b = _both(monkeypatch, md, rel, idata, top_cells=4,
                 recodes={"k1": {v: v for v in range(5)}})
    _assert_same(a, b)
    merge = {0: "lo", 1: "lo", 2: 2, 3: 3, 4: 4}
    rec = rel.copy()
    rec["k1"] = rec["k1"].astype(object).map(lambda v: v if pd.isna(v) else merge[v])
    with monkeypatch.context() as m:
        m.setattr(released, "_score_blanked", score_blanked_loop)
        with pytest.raises(ValueError, match=r"suppression-only.*'k1' is recoded"):
            assess_released(md, rec, idata, recodes={"k1": merge}, random_seed=0)


def test_batches_stay_within_the_memory_budget(monkeypatch):
    """patterns x draws x cells and patterns x draws within CHUNK_ELEMENTS, unless one."""
    levels = (4, 6, 3, 5)
    keys = [f"k{j}" for j in range(len(levels))]
    df = _frame(levels, 300, 41, weights=[6.0])
    md = sdcbayes.Microdata(df, keys, weight="w")
    idata = _posterior(md, seed=4)
    rel = _blanked(df, keys, 42, share=0.6)
    budget = 2000
    monkeypatch.setattr(released, "CHUNK_ELEMENTS", budget)
    seen = []
    inner = released._score_batch

    def spy(ctx, rect, pb, fb, order, st, ct, csum, K, *rest):
        seen.append((pb.size, K, min(ctx.draw_chunk, ctx.kap.size), ctx.kap.size))
        return inner(ctx, rect, pb, fb, order, st, ct, csum, K, *rest)

    monkeypatch.setattr(released, "_score_batch", spy)
    out = assess_released(md, rel, idata, top_cells=4, draw_chunk=4)
    assert sum(s[0] for s in seen) == out.summary["n_blanked_patterns"]
    assert any(s[0] > 1 for s in seen)  # batches, not one pattern at a time
    for nb, K, dc, S in seen:
        assert nb == 1 or (nb * dc * (K + 1) <= budget and nb * S <= budget)


# --------------------------------------------------------- 2. the batched building blocks


def _pattern_sums(seed=0, S=5, H=3, levels=(4, 5, 3, 6)):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(H), S)
    phi = [rng.dirichlet(np.full(L, 0.5), (S, H)) for L in levels]
    return PatternSums(w, phi, rng.uniform(1, 30, (S, H)), 250.0), levels


@pytest.mark.parametrize("free", [
    [None, 1, None, 2],  # two suppressed keys
    [None, None, None, None],  # every key suppressed
    [0, [0, 2, 4], None, 3],  # a recoded key (a subset of levels) and a suppressed one
    [[1, 3], [0, 1], 2, [2, 3, 5]],  # recoded keys only
])
def test_many_rectangle_methods_equal_the_one_rectangle_methods(free):
    ps, levels = _pattern_sums()
    rect = ps.rectangle([0 if (a is not None and np.ndim(a) == 0) else a for a in free])
    fixed_keys = [j for j, lv in enumerate(rect) if lv is not None and lv.size == 1]
    combos = list(itertools.product(*[range(levels[j]) for j in fixed_keys]))[:7] or [()]
    fixed = np.zeros((len(combos), len(levels)), np.int64)
    for i, c in enumerate(combos):
        fixed[i, fixed_keys] = c
    sl = slice(1, 4)
    sm = ps.sums_many(rect, fixed, sl)
    tops = ps.top_cells_many(rect, fixed, 9, slice(None))
    pi_x, lam_x = ps.cells_many(rect, tops, sl)
    for i in range(len(combos)):
        one = ps.rectangle([fixed[i, j] if j in fixed_keys else
                            (None if rect[j] is None else rect[j]) for j in range(len(levels))])
        s1 = ps.sums(one, sl)
        for k in ("pi", "lam", "lam_y", "lam2"):
            np.testing.assert_allclose(sm[k][i], s1[k], rtol=1e-15, atol=0, err_msg=k)
        t1 = ps.top_cells(one, 9, slice(None))
        assert np.array_equal(tops[i], t1)
        p1, l1 = ps.cells(one, t1, sl)
        assert np.array_equal(pi_x[i], p1) and np.array_equal(lam_x[i], l1)  # to the bit


def test_many_rectangle_methods_refuse_a_bad_fixed_array():
    ps, _ = _pattern_sums()
    rect = ps.rectangle([0, None, 1, None])
    with pytest.raises(sdcbayes.InputError, match="fixed"):
        ps.sums_many(rect, np.zeros((3, 2), np.int64))
    with pytest.raises(sdcbayes.InputError, match="levels of key 0"):
        ps.sums_many(rect, np.array([[9, 0, 0, 0]]))


def test_inverse_moment_sum_rows_equals_inverse_moment_sum():
    rng = np.random.default_rng(7)
    rows, C = 2 * _ROWS_BLOCK + 37, 9  # three row blocks, the last partial
    f = rng.integers(1, 40, rows).astype(float)
    r = rng.uniform(0.1, 30, (rows, C))
    rho = rng.uniform(1e-4, 1, (rows, C))
    r[:, 4] = 0.0  # a padding cell on every row: skipped
    rho[::3, 6] = 1.0  # a cell zero on some rows only
    lam = rng.uniform(0, 50, rows)
    for args in ((f, r, rho), (f, r, rho, lam), (f, r[:, :0], rho[:, :0], lam)):
        np.testing.assert_allclose(inverse_moment_sum_rows(*args), inverse_moment_sum(*args),
                                   rtol=1e-13, atol=0)
    with pytest.raises(sdcbayes.InputError, match="rho"):
        inverse_moment_sum_rows(f, r, -rho)


@pytest.mark.parametrize("free", [[None, 1, None], [[0, 2], None, 1], [None, None, None]])
def test_observed_cells_are_the_sample_cells_in_the_rectangle(free):
    rng = np.random.default_rng(3)
    levels = [4, 5, 3]
    cells = np.unique(rng.integers(0, 4, (60, 3)) % np.array(levels), axis=0)
    ps = PatternSums(np.ones((1, 1)), [np.ones((1, 1, L)) for L in levels], 1.0, 1.0)
    rect = ps.rectangle([0 if (a is not None and np.ndim(a) == 0) else a for a in free])
    fixed_keys = [j for j, lv in enumerate(rect) if lv is not None and lv.size == 1]
    fixed = np.array([[a, b, c] for a in range(4) for b in range(5) for c in range(3)])
    fixed[:, [j for j in range(3) if j not in fixed_keys]] = 0
    fixed = np.unique(fixed, axis=0)
    order, start, count = released._observed_cells(cells, levels, rect, fixed)
    for p in range(fixed.shape[0]):
        inside = np.all([(cells[:, j] == fixed[p, j]) if j in fixed_keys else
                         np.isin(cells[:, j], np.arange(levels[j]) if rect[j] is None
                                 else rect[j]) for j in range(3)], axis=0)
        assert order[start[p]:start[p] + count[p]].tolist() == np.flatnonzero(inside).tolist()


def test_codes_stay_exact_past_int64():
    """Keys whose level product overflows int64: compacted codes, the same answers."""
    rng = np.random.default_rng(5)
    levels = [100_000] * 5  # 1e25 cells
    a = rng.integers(0, 3, (40, 5)) * 33_333
    b = np.vstack([a[::3], rng.integers(0, 3, (10, 5)) * 33_333 + 1])
    ca, cb = released._joint_codes(a, b, levels)
    same = (a[:, None, :] == b[None, :, :]).all(axis=2)
    assert np.array_equal(ca[:, None] == cb[None, :], same)
    cs = released._CellSet(np.unique(a, axis=0), levels)
    assert not cs.linear
    assert np.array_equal(cs.contains(b), same.any(axis=0))
    small = released._CellSet(np.unique(a % 7, axis=0), [7] * 5)
    assert small.linear
    assert np.array_equal(small.contains(b % 7), ((a % 7)[:, None, :] == (b % 7)[None]).all(
        axis=2).any(axis=0))
