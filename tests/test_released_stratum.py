"""Released-file risk of a latent-class fit whose stratum is one of the keys.

With unequal weights and the stratum s a key, :func:`~sdcbayes.risk.posterior_assess.
assess_from_posterior` extrapolates each key cell at its own stratum's rate,
lam_c = n pi_c e_{c_s}, e_l = max(wbar_l, 1) - 1 (``_stratum_key_rates``);
:class:`~sdcbayes.models.latent_class.PatternSums` does the same with ``key_rate=(s, e)``
and :func:`~sdcbayes.risk.released.assess_released` passes it. Checked: the sums, cells and
top cells against a brute-force listing of every cell (the stratum fixed, blank or recoded;
E ones or class rates; e per level or per draw), with structural zeros too; a blank
stratum is the sum over its levels; a constant e is the scalar path; the released risk
against the exact listing of each rectangle (hand-built draws, with and without
structural zeros, the stratum recoded); batches against the per-pattern reference;
strata taken in full keep risk 1/f_p and F_p = f_p in every predictive draw; a file
without blanks is assess_from_posterior's seed for seed; a short Gibbs fit of the audit's
census-stratum design; the refusal where n >= N.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from released_reference import posterior_from_draws, score_blanked_loop
from test_audit_z_posterior import _census_stratum_design
from test_released import _exact_by_listing

import sdcbayes
import sdcbayes.risk.released as released
from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import (
    LatentClassModel,
    PatternSums,
    StructuralZeros,
    pattern_sums,
    pattern_top_cells,
)
from sdcbayes.risk.posterior_assess import assess_from_posterior, assess_posterior
from sdcbayes.risk.released import assess_released

# hand-built posteriors and short fits: their convergence is not the point
pytestmark = pytest.mark.filterwarnings(
    "ignore::sdcbayes.inference.diagnostics.ConvergenceWarning")

SUMS = ("pi", "lam", "lam_y", "lam2")

# ------------------------------------------------- 1. PatternSums with a key rate

LV = (4, 3, 5, 3)  # key 1 is the stratum (not the first key)
S_KEY = 1
E_LV = np.array([0.0, 4.0, 19.0])  # level 0 taken in full: no excess
N_SUM = 200.0
KEYS4 = [f"k{j}" for j in range(4)]
CELLS4 = np.array(list(itertools.product(*[range(L) for L in LV])), np.int64)


def _draws(seed=0, S=4, H=3):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(H), S)
    phi = [rng.dirichlet(np.full(L, 0.7), (S, H)) for L in LV]
    return w, phi, rng.uniform(1.0, 9.0, (S, H))


def _brute(w, phi, E, e, rect, sz=None):
    """The four sums and every cell's pi, lam over ``rect`` (per key a level list, None:
    all), lam_c = n sum_h w_h E_h prod phi * e[c_s]; with S the truncated mixture."""
    S = w.shape[0]
    e = np.broadcast_to(e, (S, LV[S_KEY]))
    u = np.ones(w.shape + (len(CELLS4),))
    for j, p in enumerate(phi):
        u *= p[:, :, CELLS4[:, j]]
    pi = np.einsum("sh,shc->sc", w, u)
    lam = N_SUM * np.einsum("sh,shc->sc", w * E, u) * e[:, CELLS4[:, S_KEY]]
    keep = np.ones(len(CELLS4), bool)
    for j, a in enumerate(rect):
        if a is not None:
            keep &= np.isin(CELLS4[:, j], np.atleast_1d(a))
    if sz is not None:
        m = np.array([w[s] @ sz.class_mass([p[s] for p in phi]) for s in range(S)])
        pi, lam = pi / (1 - m)[:, None], lam / (1 - m)[:, None]
        out = sz.contains(CELLS4)
        pi[:, out], lam[:, out] = 0.0, 0.0
    pi, lam = pi[:, keep], lam[:, keep]
    sums = {"pi": pi.sum(1), "lam": lam.sum(1), "lam_y": (lam * N_SUM * pi).sum(1),
            "lam2": (lam ** 2).sum(1)}
    return sums, CELLS4[keep], pi, lam


RECTS = {
    "s fixed, k0 free": [None, [1], [2], [0]],
    "s fixed, k0 k2 free": [None, [2], None, [1]],
    "s fixed at a census level": [None, [0], [3], None],
    "s fixed, one cell": [[1], [2], [4], [0]],
    "s blank": [[3], None, [0], [2]],
    "all blank": [None, None, None, None],
    "s blank, k2 recoded": [[0], None, [1, 3, 4], [1]],
    "s recoded": [None, [1, 2], [2], [0]],
    "s and k2 recoded": [[2], [0, 2], [0, 1], None],
    "s recoded, nothing else free": [[1], [0, 1], [4], [2]],
    "s recoded to the census level": [None, [0], None, [0]],
}


def _r(ps, rect):
    return ps.rectangle([-1 if a is None else a for a in rect])


@pytest.mark.parametrize("per_draw", [False, True], ids=["e-per-level", "e-per-draw"])
@pytest.mark.parametrize("classes", [False, True], ids=["E-ones", "E-class-rates"])
def test_sums_and_cells_equal_the_listing_of_every_cell(per_draw, classes):
    w, phi, E = _draws()
    if not classes:
        E = np.ones_like(E)
    e = E_LV * np.array([[1.0], [0.5], [2.0], [1.5]]) if per_draw else E_LV
    ps = PatternSums(w, phi, E, N_SUM, key_rate=(S_KEY, e))
    for name, rect in RECTS.items():
        ref, cells, pi_c, lam_c = _brute(w, phi, E, e, rect)
        r = _r(ps, rect)
        got = ps.sums(r)
        for k in SUMS:
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-13, atol=0, err_msg=(name, k))
        # cells: today's pi, lam times e at each cell's own stratum level
        pi, lam = ps.cells(r, cells)
        np.testing.assert_allclose(pi, pi_c, rtol=1e-13, atol=0, err_msg=name)
        np.testing.assert_allclose(lam, lam_c, rtol=1e-13, atol=0, err_msg=name)
    assert (ps.sums(_r(ps, RECTS["s fixed at a census level"]))["lam"] == 0).all()
    assert (ps.sums(_r(ps, RECTS["s recoded to the census level"]))["lam2"] == 0).all()
    # a batch whose rows fix the stratum at different levels (k0 free, k2 recoded)
    rect = ps.rectangle([-1, 0, [1, 3], 0])
    fixed = np.array([[0, s, 0, k3] for s in range(3) for k3 in range(3)])
    many = ps.sums_many(rect, fixed, slice(1, 4))
    codes = []
    for p, (s, k3) in enumerate(fixed[:, [1, 3]]):
        ref, cells, pi_c, lam_c = _brute(w, phi, E, e, [None, [s], [1, 3], [k3]])
        one = ps.sums(ps.rectangle([-1, s, [1, 3], k3]), slice(1, 4))
        for k in SUMS:
            np.testing.assert_allclose(many[k][p], ref[k][1:4], rtol=1e-13, atol=0)
            np.testing.assert_array_equal(many[k][p], one[k])  # the same sums, to the bit
        codes.append(cells[:5])
    codes = np.stack(codes)
    pim, lamm = ps.cells_many(rect, codes, slice(1, 4))
    for p in range(len(fixed)):
        one = ps.cells(ps.rectangle([-1, *fixed[p, 1:2], [1, 3], fixed[p, 3]]), codes[p],
                       slice(1, 4))
        np.testing.assert_allclose(pim[p], one[0], rtol=1e-14, atol=0)
        np.testing.assert_allclose(lamm[p], one[1], rtol=1e-14, atol=0)
    # a blank stratum in the batch: the cells_many factor is per cell
    rect = ps.rectangle([0, -1, 2, -1])
    codes = np.stack([CELLS4[(CELLS4[:, 0] == a) & (CELLS4[:, 2] == 2)][::2] for a in range(4)])
    pim, lamm = ps.cells_many(rect, codes)
    for a in range(4):
        _, cells, pi_c, lam_c = _brute(w, phi, E, e, [[a], None, [2], None])
        np.testing.assert_allclose(lamm[a], lam_c[:, ::2], rtol=1e-13, atol=0)
        np.testing.assert_allclose(pim[a], pi_c[:, ::2], rtol=1e-13, atol=0)
    # the helper passes the key rate on
    rects = [[-1 if a is None else a for a in r] for r in RECTS.values()]
    got = pattern_sums(w, phi, E, N_SUM, rects, key_rate=(S_KEY, e))
    for i, rect in enumerate(RECTS.values()):
        np.testing.assert_allclose(got["lam2"][i], _brute(w, phi, E, e, rect)[0]["lam2"],
                                   rtol=1e-13, atol=0)


def test_a_blank_stratum_is_the_sum_over_its_levels():
    w, phi, E = _draws(1)
    ps = PatternSums(w, phi, np.ones((4, 1)), N_SUM, key_rate=(S_KEY, E_LV))
    for base in ([None, None, [2], [1]], [[3], None, None, None], [[1], None, [0, 4], [2]]):
        blank = ps.sums(_r(ps, base))
        parts = [ps.sums(_r(ps, [base[0], [lv], *base[2:]])) for lv in range(LV[S_KEY])]
        for k in SUMS:
            np.testing.assert_allclose(sum(p[k] for p in parts), blank[k], rtol=1e-14,
                                       atol=0, err_msg=(base, k))


def test_a_constant_rate_is_the_scalar_path():
    w, phi, E = _draws(2)
    plain = PatternSums(w, phi, np.full((4, 1), 7.5), N_SUM)
    rated = PatternSums(w, phi, np.ones((4, 1)), N_SUM, key_rate=(S_KEY, np.full(3, 7.5)))
    for name, rect in RECTS.items():
        a, b = plain.sums(_r(plain, rect)), rated.sums(_r(rated, rect))
        for k in SUMS:
            np.testing.assert_allclose(b[k], a[k], rtol=1e-14, atol=0, err_msg=(name, k))
        # the same top cells (a constant factor does not change the ranking)
        np.testing.assert_array_equal(plain.top_cells(_r(plain, rect), 9),
                                      rated.top_cells(_r(rated, rect), 9))


RULES4 = [{"k0": ["0"], "k2": ["1", "2"]},  # the stratum free in the pieces
          {"k1": ["2"], "k3": ["0"]},  # the stratum named: fixed or cut in the pieces
          {"k0": ["1", "2"], "k1": ["0", "1"], "k2": {"not": ["0"]}}]


def _zeros4():
    return StructuralZeros(RULES4, KEYS4, [[str(i) for i in range(L)] for L in LV])


def test_key_rate_with_structural_zeros_equals_the_listing():
    w, phi, E = _draws(3)
    sz = _zeros4()
    e = E_LV * np.array([[1.0], [0.5], [2.0], [1.5]])
    ps = PatternSums(w, phi, E, N_SUM, structural_zeros=sz, key_rate=(S_KEY, e))
    for name, rect in RECTS.items():
        ref, cells, pi_c, lam_c = _brute(w, phi, E, e, rect, sz)
        r = _r(ps, rect)
        got = ps.sums(r)
        for k in SUMS:
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-12, atol=0, err_msg=(name, k))
            assert (got[k] >= 0).all()
        pi, lam = ps.cells(r, cells)
        np.testing.assert_allclose(pi, pi_c, rtol=1e-13, atol=0, err_msg=name)
        np.testing.assert_allclose(lam, lam_c, rtol=1e-13, atol=0, err_msg=name)
        top = ps.top_cells(r, 30)
        assert not sz.contains(top).any()
    assert ps.mass.min() > 0.01  # S has mass: the zeros matter
    # a batch: the stratum fixed per row (some rows in rule 2's level), and free
    for rect_l, fixed in (([-1, 0, [1, 2, 3], 0],
                           [[0, s, 0, k3] for s in range(3) for k3 in range(3)]),
                          ([0, -1, -1, 0], [[a, 0, 0, k3] for a in range(4) for k3 in range(3)])):
        r = ps.rectangle(rect_l)
        fixed = np.array(fixed)
        many = ps.sums_many(r, fixed)
        for p, row in enumerate(fixed):
            lists = [None if lv is None else (lv if lv.size > 1 else [row[j]])
                     for j, lv in enumerate(r)]
            ref = _brute(w, phi, E, e, lists, sz)[0]
            for k in SUMS:
                np.testing.assert_allclose(many[k][p], ref[k], rtol=1e-12, atol=0,
                                           err_msg=(rect_l, row.tolist(), k))
        codes = ps.top_cells_many(r, fixed, 40)
        pim, lamm = ps.cells_many(r, codes)
        inside = ps.in_zeros(codes)
        assert inside.any() and (lamm[np.repeat(inside[:, None], 4, 1)] == 0).all()
        for p in range(len(fixed)):
            one_l = [-1 if lv is None else (lv if lv.size > 1 else fixed[p, j])
                     for j, lv in enumerate(r)]
            one = ps.cells(ps.rectangle(one_l), codes[p])
            np.testing.assert_allclose(lamm[p], one[1], rtol=1e-14, atol=0)


def test_top_cells_rank_the_stratum_by_its_excess():
    """A blank stratum whose biggest level is taken in full: its cells (no excess) would
    take the top slots for nothing; ranked by e_l x marginal they come last."""
    w, phi, E = _draws(4)
    phi[S_KEY][:] = np.array([0.8, 0.15, 0.05])  # the census level holds most of pi
    plain = PatternSums(w, phi, np.ones((4, 1)), N_SUM)
    rated = PatternSums(w, phi, np.ones((4, 1)), N_SUM, key_rate=(S_KEY, E_LV))
    r = plain.rectangle([1, -1, 2, -1])  # the stratum and k3 free: 2 levels each at T=4
    assert set(plain.top_cells(r, 4)[:, S_KEY]) == {0, 1}
    assert set(rated.top_cells(r, 4)[:, S_KEY]) == {1, 2}
    many = rated.top_cells_many(r, np.array([[1, 0, 2, 0], [3, 0, 0, 0]]), 4)
    np.testing.assert_array_equal(many[0], rated.top_cells(r, 4))
    np.testing.assert_array_equal(many[1], rated.top_cells(rated.rectangle([3, -1, 0, -1]), 4))
    np.testing.assert_array_equal(
        pattern_top_cells(w, phi, [1, -1, 2, -1], 4, key_rate=(S_KEY, E_LV)),
        rated.top_cells(r, 4))
    # the stratum fixed: the other keys' ranking, as without the key rate
    for rect in ([1, 2, -1, -1], [-1, 0, 3, -1]):
        np.testing.assert_array_equal(rated.top_cells(rated.rectangle(rect), 9),
                                      plain.top_cells(plain.rectangle(rect), 9))


def test_key_rate_is_checked():
    w, phi, E = _draws()
    for bad, what in (((4, E_LV), "key index"), (("1", E_LV), "key index"),
                      ((1.5, E_LV), "key index"), ((S_KEY, E_LV[:2]), "shape"),
                      ((S_KEY, -E_LV), ">= 0"), ((S_KEY, E_LV * np.nan), "finite"),
                      ((S_KEY, np.ones((3, 3))), "shape"), (E_LV, "key index")):
        with pytest.raises(InputError, match=what):
            PatternSums(w, phi, E, N_SUM, key_rate=bad)


# ------------------------------------------------- 2. the released file's risk

KEYS = ["k0", "st", "k2"]  # the stratum st is the middle key
ST = 1
ST_LEVELS = 5  # 4 has no record: a declared category
ST_W = {0: 1.0, 1: 1.0, 2: 6.0, 3: 25.0}  # strata 0 and 1 taken in full
E_ST = np.array([0.0, 0.0, 5.0, 24.0, 0.0])  # max(wbar_l, 1) - 1; 0 without records
RULES = [{"k0": ["0"], "k2": ["1", "2"]}, {"st": ["3"], "k2": ["0"]}]


def _frame(n=170, seed=0, rules=None):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "k0": pd.Categorical(rng.choice(3, n, p=[0.5, 0.3, 0.2]), categories=range(3)),
        "st": pd.Categorical(rng.choice(4, n, p=[0.3, 0.2, 0.25, 0.25]),
                             categories=range(ST_LEVELS)),
        "k2": pd.Categorical(rng.choice(3, n, p=[0.2, 0.5, 0.3]), categories=range(3))})
    df["w"] = df["st"].astype(int).map(ST_W).astype(float)
    if rules:  # the sample has no cell in S
        sz = StructuralZeros(rules, KEYS, [[str(i) for i in range(L)] for L in (3, 5, 3)])
        codes = np.column_stack([df[k].astype(int).to_numpy() for k in KEYS])
        df = df[~sz.contains(codes)].reset_index(drop=True)
    return df


def _case(kappa, *, S=6, H=3, seed=0, rules=None):
    df = _frame(300 if rules else 170, seed, rules)  # about 170 records either way
    md = sdcbayes.Microdata(df, KEYS, weight="w", strata="st")
    spec = LatentClassModel.from_microdata(md, weights=True, n_classes=H,
                                           structural_zeros=rules)
    rng = np.random.default_rng(seed + 10)
    w = rng.dirichlet(np.ones(H), S)
    phi = [rng.dirichlet(np.ones(L), (S, H)) for L in spec.n_levels]  # with the weight class
    idata = posterior_from_draws(md, spec, w, phi, kappa, design=True)
    return df, md, spec, w, phi, idata


def _listing(spec, w, phi, kappa, rect, e=E_ST):
    """E(1/F_p | draw) listing every cell of ``rect`` (per key a set of levels) with
    lam_c = n pi_c e[c_st] (exact NB / Poisson pgfs; test_released's listing)."""
    return _exact_by_listing(None, spec, w, phi, kappa, None, rect,
                             lam_of=lambda pkg, cells: spec.n * pkg.sum(axis=1) * e[cells[:, ST]])


def _blank(df, spec_rows):
    rel = df.copy()
    for cols, rows in spec_rows:
        for c in cols:
            rel[c] = rel[c].astype(object)
            rel.iloc[rows, rel.columns.get_loc(c)] = np.nan
    return rel


# blanks: the stratum; k0; the stratum and k2; k0 and k2 (the stratum shown)
BLANKS = [(["st"], slice(0, 30)), (["k0"], slice(30, 60)), (["st", "k2"], slice(60, 75)),
          (["k0", "k2"], slice(75, 95))]
KAPPA = np.array([0.5, 3.0, np.inf, 1.0, np.inf, 8.0])
CENSUS_MAP = {0: "census", 1: "census", 2: 2, 3: 3, 4: 4}


def _rect(df, rel, spec, md, i, st_map=None):
    orig = spec.key_codes[md.record_cell[i]]
    rect = []
    for j, k in enumerate(KEYS):
        if pd.isna(rel.iloc[i][k]):
            rect.append(range(spec.n_levels[j]))
        elif j == ST and st_map is not None:
            rect.append([v for v in range(ST_LEVELS) if st_map[v] == st_map[int(orig[j])]])
        else:
            rect.append([int(orig[j])])
    return rect


@pytest.mark.parametrize("rules", [None, RULES], ids=["no-zeros", "structural-zeros"])
def test_risk_is_the_listing_of_each_rectangle(rules):
    """Top cells cover every pattern (5 levels at most on a free key): exact."""
    df, md, spec, w, phi, idata = _case(KAPPA, rules=rules)
    assert spec.class_weights is not None and "lam" in idata.posterior
    rel = _blank(df, BLANKS)
    out = assess_released(md, rel, idata, top_cells=125, random_seed=1)
    checked = 0
    for i in range(0, 100, 2):
        listed, f = _listing(spec, w, phi, KAPPA, _rect(df, rel, spec, md, i))
        assert out.records["f_p"].iloc[i] == f
        assert out.records["risk"].iloc[i] == pytest.approx(listed.mean(), rel=1e-10), i
        checked += 1
    assert checked == 50
    # the stratum recoded: strata 0 and 1 merged (both taken in full), and blanks beside
    rec = rel.copy()
    rec["st"] = rec["st"].astype(object).map(lambda v: v if pd.isna(v) else CENSUS_MAP[v])
    out = assess_released(md, rec, idata, top_cells=125, random_seed=1,
                          recodes={"st": CENSUS_MAP})
    for i in range(30, 100, 3):
        listed, f = _listing(spec, w, phi, KAPPA, _rect(df, rec, spec, md, i, CENSUS_MAP))
        assert out.records["f_p"].iloc[i] == f
        assert out.records["risk"].iloc[i] == pytest.approx(listed.mean(), rel=1e-10), i
    assert out.summary["extrapolation"]["by"] == "stratum"
    if rules:
        assert out.summary["structural_zero_rules"] == spec.structural_zeros.to_list()


def test_strata_taken_in_full_keep_risk_one_over_f():
    """e = 0 in strata 0 and 1 (weights 1): a pattern fixing the stratum there, shown or
    recoded to {0, 1}, has no excess in any cell: risk 1/f_p with no width, F_p = f_p in
    every predictive draw. Blanking the stratum mixes in the sampled strata."""
    df, md, spec, w, phi, idata = _case(KAPPA)
    census = np.flatnonzero(df["st"].astype(int).isin([0, 1]).to_numpy())
    blank_rows = census[:40]
    rel = df.copy()
    rel["k0"] = rel["k0"].astype(object)
    rel.iloc[blank_rows, 0] = np.nan  # k0 hidden, the stratum shown
    rel["k2"] = rel["k2"].astype(object)
    rel.iloc[blank_rows[::3], 2] = np.nan
    base = assess_released(md, df, idata, top_cells=4, random_seed=5)
    out = assess_released(md, rel, idata, top_cells=4, random_seed=5)
    r = out.records.iloc[blank_rows]
    np.testing.assert_allclose(r["risk"], 1.0 / r["f_p"], rtol=1e-14, atol=0)
    np.testing.assert_allclose(r["risk_lo"], 1.0 / r["f_p"], rtol=1e-14, atol=0)
    np.testing.assert_allclose(r["risk_hi"], 1.0 / r["f_p"], rtol=1e-14, atol=0)
    np.testing.assert_allclose(r["F_mean"], r["f_p"], rtol=1e-14, atol=0)
    assert (r["f_p"] > base.records["f_p"].iloc[blank_rows]).any()
    # predictive: every other record's draw is the same (the observed cells' X drawn first,
    # as assess_from_posterior draws them), and each blanked census record contributes
    # 1/f_p instead of 1/f_k in every draw
    shift = (1.0 / r["f_p"]).sum() - (1.0 / base.records["f_p"].iloc[blank_rows]).sum()
    for v in ("expected_reidentifications", "expected_reidentifications_conditional_mean"):
        diff = out.file_draws[v].values - base.file_draws[v].values
        np.testing.assert_allclose(diff, shift, rtol=1e-11, atol=1e-12, err_msg=v)
    # recoded to the two census strata, k0 hidden: still no excess
    rec = rel.copy()
    rec["st"] = rec["st"].astype(object).map(CENSUS_MAP)
    out = assess_released(md, rec, idata, top_cells=4, random_seed=5,
                          recodes={"st": CENSUS_MAP})
    r = out.records.iloc[blank_rows]
    np.testing.assert_allclose(r["risk"], 1.0 / r["f_p"], rtol=1e-14, atol=0)
    np.testing.assert_allclose(r["risk_hi"], 1.0 / r["f_p"], rtol=1e-14, atol=0)
    # the stratum hidden: the sampled strata's population counts too
    mixed = _blank(df, [(["st"], blank_rows)])
    out = assess_released(md, mixed, idata, top_cells=4, random_seed=5)
    r = out.records.iloc[blank_rows]
    assert (r["f_p"] >= base.records["f_p"].iloc[blank_rows]).all()
    assert (r["risk"] < 1.0 / r["f_p"] * (1 - 1e-3)).all()


@pytest.mark.parametrize("kappa", [np.where(np.arange(40) % 5 == 0, np.inf,
                                              np.linspace(0.5, 20.0, 40)), None],
                         ids=["overdispersed", "poisson"])
def test_no_blank_file_is_assess_from_posterior_seed_for_seed(kappa):
    df, md, spec, w, phi, idata = _case(kappa, S=40, seed=2)
    rel = assess_released(md, df, idata, random_seed=23)
    ref = assess_from_posterior(md, idata, "latent-class", random_seed=23)
    np.testing.assert_allclose(rel.records["risk"], ref.records["risk"], rtol=1e-13, atol=0)
    for v in ("expected_reidentifications", "expected_reidentifications_conditional_mean"):
        np.testing.assert_allclose(rel.file_draws[v].values, ref.file_draws[v].values,
                                   rtol=1e-13, atol=0, err_msg=v)
    assert rel.summary["extrapolation"] == ref.summary["extrapolation"] == {
        "by": "stratum", "strata": "st",
        "mean_weight_by_stratum": {"0": 1.0, "1": 1.0, "2": 6.0, "3": 25.0}}
    assert rel.summary["notes"] == ref.summary["notes"]
    assert any("stratum 'st' is one of the keys" in x for x in rel.summary["notes"])


@pytest.mark.parametrize("rules", [None, RULES], ids=["no-zeros", "structural-zeros"])
@pytest.mark.parametrize("top_cells", [0, 4])
def test_batches_equal_the_per_pattern_reference(monkeypatch, top_cells, rules):
    """The remainder's moment match (top cells that do not cover): batches = loop."""
    df, md, spec, w, phi, idata = _case(np.array([0.5, 3.0, np.inf, 1.0, 0.2, 8.0]), seed=3,
                                        rules=rules)
    rel = _blank(df, [*BLANKS, (["k0", "st", "k2"], slice(95, 100))])
    a = assess_released(md, rel, idata, top_cells=top_cells, random_seed=0, draw_chunk=4)
    with monkeypatch.context() as m:
        m.setattr(released, "_score_blanked", score_blanked_loop)
        b = assess_released(md, rel, idata, top_cells=top_cells, random_seed=0, draw_chunk=4)
    for c in ["f_p", "risk", "risk_lo", "risk_hi", "F_mean"]:
        np.testing.assert_allclose(a.records[c].to_numpy(float), b.records[c].to_numpy(float),
                                   rtol=1e-12, atol=0, err_msg=c)
    for v in a.file_draws.data_vars:
        np.testing.assert_allclose(a.file_draws[v].values, b.file_draws[v].values,
                                   rtol=1e-12, atol=0, err_msg=v)


@pytest.mark.filterwarnings("ignore::sdcbayes.microdata.MicrodataWarning")
def test_a_stratum_whose_records_were_all_dropped_has_no_excess():
    """missing="drop" leaves out stratum 3 (k0 missing there): its weight goes to the
    other strata, and its level of the stratum key (like the declared level 4) gets
    e = 0: a blanked stratum counts the population of the kept strata alone."""
    df = _frame()
    df["k0"] = df["k0"].astype(float)
    df.loc[df["st"].astype(int) == 3, "k0"] = np.nan
    md = sdcbayes.Microdata(df, KEYS, weight="w", strata="st", missing="drop")
    kept = np.asarray(md.record_cell) >= 0
    assert (df["st"].astype(int)[~kept] == 3).all() and (~kept).sum() > 20
    wk = np.asarray(md.weights, float)[kept]
    N = float(wk.sum())
    spec = LatentClassModel.from_microdata(md, weights=True, n_classes=3)
    rng = np.random.default_rng(3)
    w = rng.dirichlet(np.ones(3), 6)
    phi = [rng.dirichlet(np.ones(L), (6, 3)) for L in spec.n_levels]
    idata = posterior_from_draws(md, spec, w, phi, KAPPA, design=True, N=N)
    rel = _blank(df, [(["st"], slice(0, 40))])
    out = assess_released(md, rel, idata, top_cells=125, random_seed=0)
    st = df["st"].astype(int).to_numpy()[kept]
    e = np.zeros(ST_LEVELS)  # wbar_l - 1 of the kept records, their weights scaled to N
    for lv in np.unique(st):
        e[lv] = max(N / wk.sum() * wk[st == lv].mean(), 1.0) - 1.0
    assert e[3] == 0 and e[0] > 0  # stratum 0 was taken in full, but holds dropped weight
    checked = 0
    for i in np.flatnonzero(kept[:40]):
        listed, f = _listing(spec, w, phi, KAPPA, _rect(df, rel, spec, md, i), e=e)
        assert out.records["f_p"].iloc[i] == f
        assert out.records["risk"].iloc[i] == pytest.approx(listed.mean(), rel=1e-10), i
        checked += 1
    assert checked > 20 and out.records["risk"].iloc[:40][~kept[:40]].isna().all()


def test_refuses_a_sample_that_is_the_population():
    """A fit for N = n: before any work, in assess_from_posterior's words."""
    df, md, spec, w, phi, _ = _case(KAPPA)
    idata = posterior_from_draws(md, spec, w, phi, KAPPA, design=True, N=float(len(df)))
    rel = _blank(df, BLANKS)
    with pytest.raises(InputError, match="cell weights need n < N") as got:
        assess_released(md, rel, idata)
    with pytest.raises(InputError, match="cell weights need n < N") as ref:
        assess_from_posterior(md, idata, "latent-class")
    assert str(got.value).startswith(str(ref.value))


# ------------------------------------------------- 3. a Gibbs fit (audit Z3's design)


@pytest.fixture(scope="module")
def census_fit():
    sample, keys, _ = _census_stratum_design()
    md = sdcbayes.Microdata(sample, keys=keys, weight="w", strata="s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = assess_posterior(md, draws=15, tune=30, chains=2, random_seed=1, cores=1,
                               n_classes=6, store_profiles=True, ppc=0)
    return sample, keys, md, res


@pytest.mark.filterwarnings("ignore")  # a short fit: convergence is not the point here
def test_a_gibbs_fit_with_a_census_stratum(census_fit):
    sample, keys, md, res = census_fit
    # no blank: assess_from_posterior's numbers, seed for seed
    same = assess_released(md, sample, res.idata, random_seed=4)
    ref = assess_from_posterior(md, res.idata, "latent-class", random_seed=4)
    np.testing.assert_allclose(same.records["risk"], ref.records["risk"], rtol=1e-13, atol=0)
    np.testing.assert_allclose(same.file_draws["expected_reidentifications"].values,
                               ref.file_draws["expected_reidentifications"].values,
                               rtol=1e-13, atol=0)
    assert same.summary["extrapolation"] == ref.summary["extrapolation"]
    # local suppression on a, b, c (s kept): stratum A's records keep risk 1/f_p exactly
    rng = np.random.default_rng(0)
    rel = sample.copy()
    for k in ("a", "b", "c"):
        rel[k] = rel[k].astype(object)
        rel.loc[rng.random(len(rel)) < 0.25, k] = np.nan
    rel["s"] = rel["s"].astype(object)
    rel.loc[rel.index[::7], "s"] = np.nan  # and the stratum hidden for some
    out = assess_released(md, rel, res.idata, random_seed=4)
    rec = out.records.join(sample[["s"]])
    shown_a = (rec.s == "A") & rel["s"].notna() & (rec.blanks > 0)
    assert shown_a.sum() > 20
    a = rec[shown_a]
    np.testing.assert_allclose(a.risk, 1.0 / a.f_p, rtol=1e-14, atol=0)
    np.testing.assert_allclose(a.risk_lo, a.risk_hi, rtol=1e-14, atol=0)
    np.testing.assert_allclose(a.F_mean, a.f_p, rtol=1e-14, atol=0)
    # the stratum hidden: f_p counts both strata, and B's population lowers the risk
    hid = rec[rel["s"].isna().to_numpy()]
    assert (hid.risk < 1.0 / hid.f_p).all()
    assert out.summary["extrapolation"]["mean_weight_by_stratum"] == {"A": 1.0, "B": 100.0}
