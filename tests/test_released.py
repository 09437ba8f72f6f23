"""Posterior risk of a released (locally suppressed) file: sdcbayes.risk.released.

The checks the released-file risk rests on: the file without blanks is the package's own
assessment; pattern sums equal the brute-force listing of cells; Poisson draws are exact;
the quadrature matches the closed forms and a direct series; the top cells make the
evaluation exact and rescue the adversarial pattern; a Monte Carlo simulation of the
model agrees; refusals; memory does not grow with records when the patterns are fixed.
Small synthetic models and hand-built posteriors, plus one short Gibbs fit.
"""

from __future__ import annotations

import itertools
import json
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from released_reference import posterior_from_draws
from scipy import stats
from scipy.special import hyp1f1

import sdcbayes
from sdcbayes import _compat
from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import (
    LatentClassModel,
    PatternSums,
    pattern_sums,
    pattern_top_cells,
)
from sdcbayes.risk.individual import negbin_inverse_moment
from sdcbayes.risk.posterior import inverse_moment_sum
from sdcbayes.risk.posterior_assess import assess_from_posterior, assess_posterior
from sdcbayes.risk.released import assess_released

# the hand-built posteriors have 1-3 draws per chain: their convergence is not the point
# (test_diagnostics_are_checked_and_warned_as_the_fits checks that it is reported)
pytestmark = pytest.mark.filterwarnings(
    "ignore::sdcbayes.inference.diagnostics.ConvergenceWarning")

# ----------------------------------------------------------------------------- helpers


def _frame(levels, n, seed, weights=None):
    """Records with categorical keys of the given level counts (every level declared)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"k{j}": pd.Categorical(rng.integers(0, L, n), categories=range(L))
                       for j, L in enumerate(levels)})
    if weights is not None:
        df["w"] = rng.choice(weights, n)
    return df


def _posterior(md, *, S=6, H=4, seed=0, kappa=2.0, N=None, design=False, phi=None, w=None,
               chains=2):
    """A hand-built latent-class posterior on md's cells, consistent with its profiles."""
    spec = LatentClassModel.from_microdata(md, weights=design, n_classes=H)
    rng = np.random.default_rng(seed)
    if w is None:
        w = rng.dirichlet(np.ones(H), S)
    if phi is None:
        phi = [rng.dirichlet(np.ones(L), (S, H)) for L in spec.n_levels]
    idata = posterior_from_draws(md, spec, w, phi, kappa, chains=chains, design=design, N=N)
    return idata, spec, w, phi


def _all_cells(n_levels):
    return np.array(list(itertools.product(*[range(L) for L in n_levels])), dtype=np.int64)


def _exact_by_listing(md, spec, w, phi, kappa, N, pattern, lam_of=None):
    """E(1/F_p | draw) by listing every cell of the pattern (exact NB pgfs), per draw.

    ``pattern``: per key a level, -1 (every level) or a collection of levels (a recoded
    value). ``lam_of(pkg, cells)``: the listed cells' excess from their per-class
    probabilities ``pkg`` (cells, classes); default the class-by-class excess
    ``n pkg @ e`` at population size N. ``md`` is not used (the callers' signature).
    """
    J = spec.n_keys
    cells = _all_cells(spec.n_levels[:J])
    sets = [np.arange(spec.n_levels[j]) if np.ndim(a) == 0 and a < 0 else
            np.atleast_1d(a) if np.ndim(a) == 0 else np.asarray(sorted(a))
            for j, a in enumerate(pattern)]
    cells = cells[np.all([np.isin(cells[:, j], sets[j]) for j in range(J)], axis=0)]
    look = {tuple(c): f for c, f in zip(spec.key_codes.tolist(), spec.key_counts, strict=True)}
    fc = np.array([look.get(tuple(c), 0.0) for c in cells.tolist()])
    e = spec.excess_rates(N) if lam_of is None else None
    n = spec.n
    out = []
    for s in range(w.shape[0]):
        pkg = spec.key_cell_probabilities(w[s], [p[s] for p in phi], key_codes=cells,
                                          by_class=True)
        pi = pkg.sum(axis=1)
        lam = n * pkg @ e if lam_of is None else lam_of(pkg, cells)
        if np.isinf(kappa[s]):
            out.append(inverse_moment_sum(fc.sum(), np.zeros((1, 0)), np.ones((1, 0)),
                                          lam[None, :])[0])
            continue
        b = kappa[s] + n * pi
        out.append(inverse_moment_sum(fc.sum(), (kappa[s] + fc)[None, :],
                                      (b / (b + lam))[None, :])[0])
    return np.array(out), fc.sum()


# ------------------------------------------------------------- 1. no blank: the package


def test_store_profiles_leaves_the_chains_and_the_default_alone():
    df = _frame((3, 4, 2), 150, 1, weights=[4.0, 12.0])
    md = sdcbayes.Microdata(df, ["k0", "k1", "k2"], weight="w")
    spec = LatentClassModel.from_microdata(md, n_classes=4)
    N = float(df.w.sum())
    plain = spec.sample(draws=4, tune=3, chains=2, N=N, random_seed=3, store="all", cores=1)
    kept = spec.sample(draws=4, tune=3, chains=2, N=N, random_seed=3, store="all", cores=1,
                       store_profiles=True)
    assert not any(str(v).startswith("phi_") for v in plain.posterior.data_vars)
    assert np.array_equal(plain.posterior["pi"].values, kept.posterior["pi"].values)
    assert kept.posterior["phi_weight_class"].dims == ("chain", "draw", "latent_class",
                                                       "level_weight_class")
    assert json.loads(kept.attrs["settings"])["store_profiles"] is True
    assert json.loads(plain.attrs["settings"])["store_profiles"] is False
    with pytest.raises(InputError, match="store_profiles"):
        spec.sample(draws=2, tune=1, chains=1, store_profiles="yes")


@pytest.mark.filterwarnings("ignore")  # a short fit: convergence is not the point here
@pytest.mark.parametrize("design", [True, False], ids=["weight-classes", "equal-weights"])
def test_no_blank_equals_assess_from_posterior_on_a_gibbs_fit(design):
    df = _frame((3, 5, 4), 300, 2, weights=[3.0, 15.0] if design else [10.0])
    md = sdcbayes.Microdata(df, ["k0", "k1", "k2"], weight="w")
    res = assess_posterior(md, draws=30, chains=2, tune=30, random_seed=5, cores=1,
                           n_classes=6, store_profiles=True, ppc=0)
    assert res.provenance["settings"]["store_profiles"] is True
    rel = assess_released(md, df, res.idata)
    ref = assess_from_posterior(md, res.idata, "latent-class")
    a, b = rel.summary["expected_reidentifications"], ref.summary["expected_reidentifications"]
    assert abs(a - b) <= 1e-10 * b
    np.testing.assert_allclose(rel.records["risk"], ref.records["risk"], rtol=1e-10, atol=0)
    np.testing.assert_allclose(rel.records["risk_hi"], ref.records["risk_hi"], rtol=1e-10)
    assert rel.records.index.equals(df.index)
    assert rel.summary["n_blanked_records"] == 0
    # the interval is labelled for what it is: over the parameters, not predictive
    assert rel.summary["interval_kind"].startswith("predictive")
    assert rel.summary["hyper_interval_kind"].startswith("hyper")
    lo, hi = rel.summary["expected_reidentifications_hyper_interval"]
    assert lo <= a <= hi


@pytest.mark.parametrize("kappa", [None, 0.7], ids=["poisson", "kappa"])
def test_no_blank_equals_assess_from_posterior_on_a_built_posterior(kappa):
    df = _frame((4, 3, 5), 200, 3, weights=[20.0])
    md = sdcbayes.Microdata(df, ["k0", "k1", "k2"], weight="w")
    idata, *_ = _posterior(md, kappa=kappa)
    rel = assess_released(md, df, idata)
    ref = assess_from_posterior(md, idata, "latent-class")
    assert abs(rel.summary["expected_reidentifications"]
               - ref.summary["expected_reidentifications"]) <= 1e-10 * \
        ref.summary["expected_reidentifications"]
    np.testing.assert_allclose(rel.records["risk"], ref.records["risk"], rtol=1e-10, atol=0)


# ------------------------------------------------------------ 2. pattern sums, by listing


def _rectangles(n_levels, rng, count):
    out = []
    for _ in range(count):
        rect = []
        for L in n_levels:
            u = rng.random()
            rect.append(-1 if u < 0.35 else int(rng.integers(L)) if u < 0.75 else
                        sorted(rng.choice(L, size=max(2, L // 2), replace=False).tolist()))
        out.append(rect)
    return out


def test_pattern_sums_equal_the_listed_cells_with_weight_classes():
    rng = np.random.default_rng(11)
    levels, G, H, S = (3, 4, 2, 5), 3, 5, 3
    codes = _all_cells(levels + (G,))[rng.random(len(_all_cells(levels + (G,)))) < 0.3]
    spec = LatentClassModel(codes, np.ones(len(codes)), list(levels) + [G], n_classes=H,
                            class_weights=[5.0, 20.0, 60.0])
    w = rng.dirichlet(np.ones(H), S)
    phi = [rng.dirichlet(np.ones(L), (S, H)) for L in spec.n_levels]
    N, n = 4000.0, spec.n
    e = spec.excess_rates(N)
    E = phi[-1] @ e
    rects = _rectangles(levels, rng, 25)
    got = pattern_sums(w, phi[:-1], E, n, rects)
    cells = _all_cells(levels)
    for i, rect in enumerate(rects):
        inside = np.all([(np.isin(cells[:, j], r) if isinstance(r, list) else
                          (r < 0) | (cells[:, j] == r)) for j, r in enumerate(rect)], axis=0)
        for s in range(S):
            pkg = spec.key_cell_probabilities(w[s], [p[s] for p in phi],
                                              key_codes=cells[inside], by_class=True)
            pi, lam = pkg.sum(axis=1), n * pkg @ e
            want = {"pi": pi.sum(), "lam": lam.sum(), "lam_y": (lam * n * pi).sum(),
                    "lam2": (lam ** 2).sum()}
            for k, v in want.items():
                assert got[k][i, s] == pytest.approx(v, rel=1e-12, abs=1e-300), (k, rect)
    # the top cells of a rectangle lie in it, and with T >= its size are all its cells
    top = pattern_top_cells(w, phi[:-1], [1, -1, -1, 0], 100)
    assert {tuple(c) for c in top.tolist()} == {(1, b, c, 0) for b in range(4)
                                                for c in range(2)}
    ps = PatternSums(w, phi[:-1], E, n)
    top = ps.top_cells(ps.rectangle([1, [0, 2], -1, 0]), 3)
    assert top.shape == (1, 4) and top[0, 1] in (0, 2)


# ----------------------------------------------------------- 3.-4. quadrature and Poisson


def test_inverse_moment_sum_matches_the_closed_forms():
    rng = np.random.default_rng(0)
    worst = 0.0
    for f in (1, 2, 5, 30, 300, 3000):
        r = rng.uniform(0.3, 40, 200)
        rho = rng.uniform(0.001, 0.999, 200)
        a = inverse_moment_sum(f, r[:, None], rho[:, None])
        b = negbin_inverse_moment(np.full(200, float(f)), r, rho)
        lam = rng.uniform(0, 500, 200)
        c = inverse_moment_sum(f, np.zeros((200, 0)), np.ones((200, 0)), lam)
        d = hyp1f1(1, f + 1, -lam) / f
        worst = max(worst, np.max(np.abs(a / b - 1)), np.max(np.abs(c / d - 1)))
    assert worst < 1e-11


def test_inverse_moment_sum_of_three_negative_binomials_against_a_series():
    r = np.array([[0.7, 3.0, 12.0]])
    rho = np.array([[0.4, 0.8, 0.95]])
    x = np.arange(4000)
    pmf = np.ones(1)
    for rc, pc in zip(r[0], rho[0], strict=True):
        pmf = np.convolve(pmf, stats.nbinom.pmf(x, rc, pc))[:x.size]
    for f in (1, 3, 40):
        series = np.sum(pmf / (f + x))
        assert inverse_moment_sum(f, r, rho)[0] == pytest.approx(series, rel=1e-11)
    # a Poisson part and an empty cell (r = 0) fold in as factors of the product
    pois = stats.poisson.pmf(x, 2.5)
    both = np.convolve(pmf, pois)[:x.size]
    got = inverse_moment_sum(2, np.c_[r, [[0.0]]], np.c_[rho, [[0.3]]], [2.5])[0]
    assert got == pytest.approx(np.sum(both / (2 + x)), rel=1e-11)


def test_poisson_draws_are_exact():
    df = _frame((3, 6, 4), 120, 4, weights=[8.0, 30.0])
    md = sdcbayes.Microdata(df, ["k0", "k1", "k2"], weight="w")
    idata, spec, w, phi = _posterior(md, kappa=np.inf, design=True)
    rel = df.copy()
    rel.loc[rel.index[:40], "k1"] = np.nan
    rel.loc[rel.index[30:60], "k2"] = np.nan
    out = assess_released(md, rel, idata, top_cells=0)
    N = float(df.w.sum())
    kap = np.full(w.shape[0], np.inf)
    for i in (0, 35, 50):
        pattern = np.where(rel.iloc[i][["k0", "k1", "k2"]].isna(), -1,
                           spec.key_codes[md.record_cell[i]])
        listed, f = _exact_by_listing(md, spec, w, phi, kap, N, pattern)
        # the 1F1 of the pattern's total excess, lam_p by listing
        J = spec.n_keys
        cells = _all_cells(spec.n_levels[:J])
        inside = np.all([(pattern[j] < 0) | (cells[:, j] == pattern[j]) for j in range(J)], 0)
        lam_p = np.array([(spec.n * spec.key_cell_probabilities(
            w[s], [p[s] for p in phi], key_codes=cells[inside], by_class=True)
            @ spec.excess_rates(N)).sum() for s in range(w.shape[0])])
        exact = hyp1f1(1.0, f + 1.0, -lam_p) / f
        np.testing.assert_allclose(listed, exact, rtol=1e-12)
        assert out.records["risk"].iloc[i] == pytest.approx(exact.mean(), rel=1e-12)
        assert out.records["f_p"].iloc[i] == f


# ------------------------------------------------------------------------ 5. top cells


def test_top_cells_covering_the_pattern_give_the_exact_value():
    df = _frame((2, 5, 4), 90, 6, weights=[6.0, 25.0])
    md = sdcbayes.Microdata(df, ["k0", "k1", "k2"], weight="w")
    kappa = np.array([0.5, 3.0, np.inf, 1.0, 8.0, 0.2])
    idata, spec, w, phi = _posterior(md, kappa=kappa, design=True)
    rel = df.copy()
    rel.loc[rel.index[:30], ["k1", "k2"]] = np.nan  # 20 cells per pattern
    rel.loc[rel.index[30:50], "k2"] = np.nan
    out = assess_released(md, rel, idata, top_cells=20, draw_chunk=4)
    N = float(df.w.sum())
    for i in (0, 7, 29, 31, 45):
        pattern = np.where(rel.iloc[i][["k0", "k1", "k2"]].isna(), -1,
                           spec.key_codes[md.record_cell[i]])
        listed, f = _exact_by_listing(md, spec, w, phi, kappa, N, pattern)
        assert out.records["risk"].iloc[i] == pytest.approx(listed.mean(), rel=1e-10)
    # the draw chunks do not change the result
    again = assess_released(md, rel, idata, top_cells=20, draw_chunk=64)
    np.testing.assert_allclose(again.records["risk"], out.records["risk"], rtol=1e-13)


def _adversarial():
    """One unobserved cell of excess 40 among 100 tiny ones; the record is a sample unique.

    Keys x (2 levels) and c (101 levels); one class (two identical ones), phi_x = (1 - a,
    a), phi_c = 0.9 on level 0 and 0.001 on each other level. The released record has
    x = 1, c = 5 (the only x = 1 record) with c suppressed: its pattern holds the observed
    cell (1, 5) and 100 unobserved cells, of which (1, 0) has excess mean 40 (the others
    0.0002 to 0.001 of c's mass, unequal, so that the matched remainder is approximate).
    """
    n = 200
    rng = np.random.default_rng(8)
    tail = 0.1 * rng.dirichlet(np.full(100, 5.0))
    c = rng.choice(101, n - 1, p=np.r_[0.9, tail])
    df = pd.DataFrame({"x": pd.Categorical(np.r_[np.zeros(n - 1, int), 1], categories=[0, 1]),
                       "c": pd.Categorical(np.r_[c, 5], categories=range(101))})
    N = n + 40 / (0.9 * 1e-3)
    df["w"] = N / n
    md = sdcbayes.Microdata(df, ["x", "c"], weight="w")
    S, H = 2, 2
    phi = [np.broadcast_to([1 - 1e-3, 1e-3], (S, H, 2)).copy(),
           np.broadcast_to(np.r_[0.9, tail], (S, H, 101)).copy()]
    idata, spec, w, phi = _posterior(md, S=S, H=H, kappa=1.0, phi=phi,
                                     w=np.full((S, H), 0.5), chains=1)
    rel = df.copy()
    rel.loc[rel.index[-1], "c"] = np.nan
    return md, rel, idata, spec, w, phi, float(N)


def test_top_cells_rescue_a_pattern_with_one_large_unobserved_cell():
    md, rel, idata, spec, w, phi, N = _adversarial()
    exact, f = _exact_by_listing(md, spec, w, phi, np.ones(2), N, np.array([1, -1]))
    assert f == 1
    top4 = assess_released(md, rel, idata, top_cells=4).records["risk"].iloc[-1]
    pure = assess_released(md, rel, idata, top_cells=0).records["risk"].iloc[-1]
    assert abs(top4 / exact.mean() - 1) < 0.01
    assert abs(pure / exact.mean() - 1) > 0.10


# ----------------------------------------------------------------------- 6. Monte Carlo


def test_monte_carlo_from_the_model_agrees():
    """Cell by cell: u ~ Gamma(kappa, kappa), keep u where Po(n pi u) equals the sample's
    count (the cells are independent given the draw), X ~ Po(lam u). 40,000 replicates per
    pattern: the method (exact here: the top cells cover each pattern) must lie within 4
    standard errors (a false alarm 6e-5 per pattern)."""
    df = _frame((2, 3, 4), 60, 9, weights=[5.0, 12.0])
    md = sdcbayes.Microdata(df, ["k0", "k1", "k2"], weight="w")
    idata, spec, w, phi = _posterior(md, S=2, kappa=1.5, design=True, seed=4, chains=1)
    rel = df.copy()
    rel.loc[rel.index[:20], "k2"] = np.nan
    rel.loc[rel.index[20:30], ["k1", "k2"]] = np.nan
    out = assess_released(md, rel, idata)
    N = float(df.w.sum())
    rng = np.random.default_rng(12)
    R = 20_000
    J = spec.n_keys
    cells_all = _all_cells(spec.n_levels[:J])
    look = {tuple(c): f for c, f in zip(spec.key_codes.tolist(), spec.key_counts, strict=True)}
    for i in (0, 5, 25):
        pattern = np.where(rel.iloc[i][["k0", "k1", "k2"]].isna(), -1,
                           spec.key_codes[md.record_cell[i]])
        inside = np.all([(pattern[j] < 0) | (cells_all[:, j] == pattern[j])
                         for j in range(J)], 0)
        cells = cells_all[inside]
        fc = np.array([look.get(tuple(c), 0.0) for c in cells.tolist()])
        inv = []
        for s in range(2):
            pkg = spec.key_cell_probabilities(w[s], [p[s] for p in phi], key_codes=cells,
                                              by_class=True)
            pi, lam = pkg.sum(axis=1), spec.n * pkg @ spec.excess_rates(N)
            X = np.zeros(R)
            for c in range(len(cells)):
                got = np.empty(0)
                while got.size < R:
                    u = rng.gamma(1.5, 1 / 1.5, 8 * R)
                    got = np.r_[got, u[rng.poisson(spec.n * pi[c] * u) == fc[c]]]
                X += rng.poisson(lam[c] * got[:R])
            inv.append(1.0 / (fc.sum() + X))
        inv = np.concatenate(inv)
        mc, se = inv.mean(), inv.std() / np.sqrt(inv.size)
        assert abs(out.records["risk"].iloc[i] - mc) < 4 * se, (i, mc, se)


# ------------------------------------------------------------------------ 8. refusals


@pytest.fixture(scope="module")
def small():
    df = _frame((3, 4, 3), 80, 10, weights=[10.0])
    md = sdcbayes.Microdata(df, ["k0", "k1", "k2"], weight="w")
    idata, *_ = _posterior(md)
    return df, md, idata


def test_refuses_changed_values_and_other_records(small):
    df, md, idata = small
    pram = df.copy()
    pram["k1"] = pram["k1"].astype(object)
    pram.loc[pram.index[3], "k1"] = (df["k1"].iloc[3] + 1) % 4
    with pytest.raises(InputError, match="PRAM, noise or recoding"):
        assess_released(md, pram, idata)
    with pytest.raises(InputError, match="same|order|records"):
        assess_released(md, df.iloc[:-1], idata)
    with pytest.raises(InputError, match="order"):
        assess_released(md, df.iloc[::-1], idata)
    with pytest.raises(InputError, match="lacks the key"):
        assess_released(md, df.drop(columns="k2"), idata)
    # a number read back as another type is the same value
    same = df.copy()
    same["k0"] = same["k0"].astype(float)
    assert assess_released(md, same, idata).summary["n_blanks"] == 0


def test_refuses_a_posterior_without_profiles(small):
    df, md, idata = small
    bare = idata.copy()
    post = _compat.group_as_dataset(bare.posterior)  # a tree node under ArviZ 1
    _compat.set_group(bare, "posterior", post.drop_vars(
        [v for v in post.data_vars if str(v).startswith("phi_")]))
    with pytest.raises(InputError, match="store_profiles=True"):
        assess_released(md, df, bare)


def test_refuses_what_is_not_supported_yet(small):
    df, md, idata = small
    sz = idata.copy()
    sz.posterior["mass_structural_zero"] = sz.posterior["mass_structural_zero"] + 0.01
    with pytest.raises(InputError, match="structural zeros .*but no stamped rules"):
        assess_released(md, df, sz)
    cc = idata.copy()
    cc.attrs["cluster_correction"] = "{}"
    with pytest.raises(InputError, match="cluster correction"):
        assess_released(md, df, cc)
    holes = df.copy()
    holes["k0"] = holes["k0"].astype(object)
    holes.loc[holes.index[0], "k0"] = np.nan
    # missing="category" and "drop" are scored (tests/test_released_recode.py); the wildcard
    # reading has no latent-class fit
    md_missing = sdcbayes.Microdata(holes, ["k0", "k1", "k2"], weight="w", missing="wildcard")
    with pytest.raises(InputError, match="missing='category'"):
        assess_released(md_missing, holes, idata)
    # a stratum that is a key is no longer refused: extrapolated stratum by stratum, as
    # assess_from_posterior does (tests/test_released_stratum.py checks the numbers)
    st = _frame((2, 4, 3), 120, 12)
    st["w"] = np.where(st["k0"] == 0, 4.0, 20.0)
    md_st = sdcbayes.Microdata(st, ["k0", "k1", "k2"], weight="w", strata="k0")
    id_st, *_ = _posterior(md_st, design=True)
    rel_st = st.copy()
    rel_st.loc[rel_st.index[:10], "k1"] = np.nan
    got = assess_released(md_st, rel_st, id_st, random_seed=0).summary["extrapolation"]
    assert got == {"by": "stratum", "strata": "k0",
                   "mean_weight_by_stratum": {"0": 4.0, "1": 20.0}}
    with pytest.raises(InputError, match="top_cells"):
        assess_released(md, df, idata, top_cells=-1)


def test_diagnostics_are_checked_and_warned_as_the_fits(small):
    """The ER's R-hat/ESS are checked as assess_posterior checks a latent-class fit: the
    problems in summary["diagnostics"]["problems"], each a ConvergenceWarning."""
    from sdcbayes.inference.diagnostics import ConvergenceWarning

    df, md, idata = small  # 2 chains x 3 draws: too short to diagnose
    rel = df.copy()
    rel.loc[rel.index[:5], "k1"] = np.nan
    with pytest.warns(ConvergenceWarning) as caught:
        diag = assess_released(md, rel, idata).summary["diagnostics"]
    assert diag["diagnosed_on"] == ["expected_reidentifications"]
    assert any("only 3 draws per chain" in p for p in diag["problems"])
    assert {str(w.message) for w in caught} == set(diag["problems"])
    assert "note" not in diag


def test_no_convergence_check_where_the_sample_is_the_population():
    import warnings

    from sdcbayes.risk.posterior_assess import EXACT_NOTE

    df = _frame((3, 4, 3), 80, 10, weights=[1.0])  # every weight 1: N = n, exact results
    md = sdcbayes.Microdata(df, ["k0", "k1", "k2"], weight="w")
    idata, *_ = _posterior(md)
    rel = df.copy()
    rel.loc[rel.index[:5], "k1"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        diag = assess_released(md, rel, idata).summary["diagnostics"]
    assert diag["problems"] == [] and diag["note"] == EXACT_NOTE


def test_refuses_profiles_that_do_not_reproduce_pi(small):
    df, md, idata = small
    bad = idata.copy()
    bad.posterior["pi"] = bad.posterior["pi"] * 1.01
    with pytest.raises(InputError, match="do not reproduce"):
        assess_released(md, df, bad)


def test_check_released_turns_only_the_mismatches_into_text(monkeypatch):
    """Values that compare equal as they are cost no text conversion (the check is one
    comparison per key on a file whose shown values are unchanged)."""
    from types import SimpleNamespace

    from sdcbayes.risk import released as rmod

    n = 1000
    rng = np.random.default_rng(0)
    orig = pd.DataFrame({"a": rng.integers(0, 5, n), "b": rng.choice(["x", "y"], n)})
    rel = orig.astype({"a": float})
    rel.loc[rel.index[:7], "b"] = np.nan
    md = SimpleNamespace(keys=["a", "b"], frame=orig)
    mixed = orig.astype({"a": str})  # column a read back as text, one value as "3.0"
    mixed.loc[mixed.index[0], "a"] = f"{orig['a'].iloc[0]}.0"
    seen = []
    real = pd.Series.astype

    def spy(self, dtype, *args, **kwargs):
        if dtype is str:
            seen.append(len(self))
        return real(self, dtype, *args, **kwargs)

    monkeypatch.setattr(pd.Series, "astype", spy)
    blank = rmod._check_released(md, rel)
    assert blank.sum() == 7 and seen == []
    # text and numbers read back as other types are still the same values
    assert rmod._check_released(md, mixed).sum() == 0
    assert seen == [n, n]  # the mismatches only: column a's, as text, once each side
    mixed.loc[mixed.index[1], "a"] = "9"
    with pytest.raises(InputError, match="1 released value"):
        rmod._check_released(md, mixed)


# ---------------------------------------------------------------------- 7. memory


def test_memory_does_not_grow_with_records_when_patterns_are_fixed():
    """Doubling the records (the same patterns) adds O(records) bookkeeping, far below a
    draws x records array (400 draws: 3,200 bytes per record)."""
    base = _frame((4, 5, 6), 25_000, 13, weights=[30.0])
    base.loc[base.sample(frac=0.2, random_state=1).index, "k1"] = np.nan
    peaks = []
    for copies in (1, 2):
        rel = pd.concat([base] * copies, ignore_index=True)
        orig = rel.copy()
        orig["k1"] = pd.concat([_frame((4, 5, 6), 25_000, 13)["k1"]] * copies,
                               ignore_index=True)
        md = sdcbayes.Microdata(orig, ["k0", "k1", "k2"], weight="w")
        idata, *_ = _posterior(md, S=400, H=5, kappa=1.0)
        tracemalloc.start()
        out = assess_released(md, rel, idata)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert out.summary["n_blanked_records"] == int(rel["k1"].isna().sum())
    per_record = (peaks[1] - peaks[0]) / 25_000
    print(f"peaks {peaks}, {per_record:.0f} bytes per added record")
    assert per_record < 400  # bytes per added record; a (400, records) array: 3,200
