"""Released-file risk of a latent-class fit WITH structural zeros (the truncated mixture).

A fit with structural zeros S (Manrique-Vallier & Reiter 2014, eq. 2) stores the truncated
pi and lam: u_c / (1 - m) outside S, 0 in S, m the untruncated mass of S per draw.
:class:`~sdcbayes.models.latent_class.PatternSums` with ``structural_zeros=`` sums over a
pattern's cells outside S by subtracting, per disjoint rectangle R_r of S, the same sums
over p & R_r; :func:`~sdcbayes.risk.released.assess_released` reads the rules the fit
stamped, checks them against the stored mass, and scores the released file from them.
Checked: the sums against a brute-force listing of every cell (a pattern half in S, one
mostly in S, one wholly in S); no rule is the untruncated result to the bit; the released
risk against the exact listing of each rectangle's cells (hand-built draws and a short
Gibbs fit), the batches against the per-pattern reference, a census's exact 1/F; the
predictive ER against an oracle that draws every cell (those in S: none); the refusals,
also of ``sdcbayes protect --structural-zeros``; and one protect run end to end.
"""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest
import test_released_predictive as trp
from clitools import assert_one_line_error, run_in_process
from released_reference import posterior_from_draws, score_blanked_loop
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

# hand-built posteriors and a short fit: their convergence is not the point
pytestmark = pytest.mark.filterwarnings(
    "ignore::sdcbayes.inference.diagnostics.ConvergenceWarning",
    "ignore::RuntimeWarning")

# ------------------------------------------------------------- 1. PatternSums with S

LEVELS = (3, 4, 5, 3)
KEYS4 = [f"k{j}" for j in range(4)]
# overlapping rules (split into disjoint rectangles) and a "not" rule
RULES4 = [{"k0": ["0"], "k1": ["0", "1", "2"]},
          {"k2": {"not": ["4"]}, "k3": ["2"]},
          {"k0": ["0", "1"], "k1": ["1", "2"], "k2": ["0", "1", "2"]}]


def _draws(seed=0, S=5, H=3):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(H), S)
    phi = [rng.dirichlet(np.full(L, 0.7), (S, H)) for L in LEVELS]
    # k1's level 3 rare: the pattern k0 = 0 then lies mostly in S (rule 1 forbids the rest)
    phi[1][:, :, 3] *= 0.01
    phi[1] /= phi[1].sum(axis=2, keepdims=True)
    E = rng.uniform(1.0, 30.0, (S, H))
    return w, phi, E, 250.0


def _zeros(rules=RULES4):
    return StructuralZeros(rules, KEYS4, [[str(i) for i in range(L)] for L in LEVELS])


def _brute(w, phi, E, n, sz, rect):
    """The truncated sums over every cell of ``rect`` (per key a level list, None: all)."""
    cells = np.array(list(itertools.product(*[range(L) for L in LEVELS])), np.int64)
    keep = np.ones(len(cells), bool)
    for j, a in enumerate(rect):
        if a is not None:
            keep &= np.isin(cells[:, j], np.atleast_1d(a))
    share = 1.0 - keep[~sz.contains(cells)].sum() / max(keep.sum(), 1)
    c = cells[keep & ~sz.contains(cells)]
    m = np.array([w[s] @ sz.class_mass([p[s] for p in phi]) for s in range(w.shape[0])])
    u = np.ones(w.shape + (len(c),))
    for j, p in enumerate(phi):
        u *= p[:, :, c[:, j]]
    pi = np.einsum("sh,shk->sk", w, u) / (1 - m)[:, None]
    lam = n * np.einsum("sh,shk->sk", w * E, u) / (1 - m)[:, None]
    return {"pi": pi.sum(1), "lam": lam.sum(1), "lam_y": (lam * n * pi).sum(1),
            "lam2": (lam ** 2).sum(1)}, share, c


PATTERNS = {
    "all": [None] * 4,
    "half": [1, None, None, None],
    "mostly": [0, None, None, None],
    "recoded": [[0, 1], [1, 2, 3], None, 2],
    "wholly": [0, [0, 1], None, None],
    "cell-in-S": [0, 0, 0, 0],
    "cell-outside": [2, 3, 4, 0],
}


def test_pattern_sums_with_zeros_equal_the_listing_of_every_cell():
    w, phi, E, n = _draws()
    sz = _zeros()
    assert sz.n_rectangles > len(RULES4)  # the overlapping rules were split
    ps = PatternSums(w, phi, E, n, structural_zeros=sz)
    m = np.array([w[s] @ sz.class_mass([p[s] for p in phi]) for s in range(w.shape[0])])
    np.testing.assert_allclose(ps.mass, m, rtol=1e-13)
    shares = {}
    for name, rect in PATTERNS.items():
        ref, shares[name], _ = _brute(w, phi, E, n, sz, rect)
        got = ps.sums(ps.rectangle([-1 if a is None else a for a in rect]))
        for k in ref:
            np.testing.assert_allclose(got[k], ref[k], rtol=1e-12, atol=0, err_msg=(name, k))
            assert (got[k] >= 0).all()
    # the patterns are what their names say (share of the pattern's cells in S, by count;
    # "mostly": by mass too, k1's level 3 being rare)
    assert 0.2 < shares["half"] < 0.8 and shares["mostly"] > 0.5
    assert shares["wholly"] == 1.0 and shares["all"] > 0.2
    untrunc = PatternSums(w, phi, E, n).sums(ps.rectangle([0, -1, -1, -1]))["pi"]
    assert (ps.sums(ps.rectangle([0, -1, -1, -1]))["pi"] * (1 - m) < 0.05 * untrunc).all()
    # the truncated mixture sums to 1 over the key space
    np.testing.assert_allclose(ps.sums(ps.rectangle([-1] * 4))["pi"], 1.0, rtol=1e-13)
    # the helper passes the zeros on
    rects = [[-1 if a is None else a for a in r] for r in PATTERNS.values()]
    got = pattern_sums(w, phi, E, n, rects, structural_zeros=sz)
    for i, rect in enumerate(PATTERNS.values()):
        ref = _brute(w, phi, E, n, sz, rect)[0]
        np.testing.assert_allclose(got["lam2"][i], ref["lam2"], rtol=1e-12, atol=0)


def test_many_rectangles_cells_and_top_cells_with_zeros():
    w, phi, E, n = _draws(1)
    sz = _zeros()
    ps = PatternSums(w, phi, E, n, structural_zeros=sz)
    # k0 and k3 fixed per rectangle, k1 free, k2 recoded {0, 1, 2}: some rectangles
    # wholly, partly and not in S
    rect = ps.rectangle([0, -1, [0, 1, 2], 0])
    fixed = np.array([[a, 0, 0, b] for a in range(3) for b in range(3)])
    many = ps.sums_many(rect, fixed, slice(1, 4))
    for p, (a, b) in enumerate(fixed[:, [0, 3]]):
        ref = _brute(w, phi, E, n, sz, [a, None, [0, 1, 2], b])[0]
        one = ps.sums(ps.rectangle([a, -1, [0, 1, 2], b]), slice(1, 4))
        for k in ref:
            np.testing.assert_allclose(many[k][p], ref[k][1:4], rtol=1e-12, atol=0)
            np.testing.assert_array_equal(many[k][p], one[k])  # one rectangle: the same sums
    # cells: 0 in S, the truncated pi and lam outside; the key space's pi sums to 1
    cells = np.array(list(itertools.product(*[range(L) for L in LEVELS])), np.int64)
    pi, lam = ps.cells(ps.rectangle([-1] * 4), cells)
    inside = sz.contains(cells)
    assert inside.any() and (pi[:, inside] == 0).all() and (lam[:, inside] == 0).all()
    np.testing.assert_allclose(pi.sum(axis=1), 1.0, rtol=1e-13)
    ref = _brute(w, phi, E, n, sz, [None] * 4)[0]
    np.testing.assert_allclose((lam * n * pi).sum(axis=1), ref["lam_y"], rtol=1e-12)
    codes = np.stack([cells[cells[:, 0] == a][:7] for a in range(3)])  # (3, 7, J)
    pim, lamm = ps.cells_many(ps.rectangle([0, -1, -1, -1]), codes)
    for p in range(3):
        one = ps.cells(ps.rectangle([p, -1, -1, -1]), codes[p])
        np.testing.assert_allclose(pim[p], one[0], rtol=1e-14, atol=0)
        np.testing.assert_allclose(lamm[p], one[1], rtol=1e-14, atol=0)
    assert (pim[ps.in_zeros(codes)[:, None, :].repeat(w.shape[0], 1)] == 0).all()
    # top cells: none in S; the many form lists them, in_zeros leaves them out alike
    for rect_l in ([0, -1, -1, -1], [1, -1, -1, 2], [-1, -1, -1, -1]):
        r = ps.rectangle(rect_l)
        top = ps.top_cells(r, 30)
        assert not sz.contains(top).any()
        # k0 = 0: its top levels of k1 (0, 1, 2; 3 is rare) are all in S, so none is left
        # (no other cell takes their place: the remainder holds the pattern's cells)
        assert (top.shape[0] == 0) == (rect_l[0] == 0)
        fx = np.array([[max(a, 0) for a in rect_l]])
        many_top = ps.top_cells_many(r, fx, 30)[0]
        np.testing.assert_array_equal(many_top[~ps.in_zeros(many_top)], top)
        plain = PatternSums(w, phi, E, n).top_cells(r, 30)
        np.testing.assert_array_equal(plain[~sz.contains(plain)], top)
    assert ps.top_cells(ps.rectangle([0, 0, 0, 0]), 4).shape == (0, 4)  # its cell is in S
    top = pattern_top_cells(w, phi, [1, -1, -1, -1], 30, structural_zeros=sz)
    assert top.shape[0] and not sz.contains(top).any()


def test_no_rule_is_the_untruncated_result_to_the_bit():
    w, phi, E, n = _draws(2)
    plain = PatternSums(w, phi, E, n)
    for rules in ([], [{"k0": {"not": ["0", "1", "2"]}}]):  # none; one forbidding nothing
        none = PatternSums(w, phi, E, n, structural_zeros=_zeros(rules))
        assert none.structural_zeros is None and (none.mass == 0).all()
        for rect_l in PATTERNS.values():
            r = plain.rectangle([-1 if a is None else a for a in rect_l])
            a, b = plain.sums(r), none.sums(r)
            for k in a:
                np.testing.assert_array_equal(a[k], b[k])
            fx = np.array([[0 if x is None or np.ndim(x) else x for x in rect_l]] * 2)
            a, b = plain.sums_many(r, fx), none.sums_many(r, fx)
            for k in a:
                np.testing.assert_array_equal(a[k], b[k])
            np.testing.assert_array_equal(plain.top_cells(r, 9), none.top_cells(r, 9))
            tm = plain.top_cells_many(r, fx, 9)
            np.testing.assert_array_equal(tm, none.top_cells_many(r, fx, 9))
            for x, y in zip(plain.cells(r, tm[0]), none.cells(r, tm[0]), strict=True):
                np.testing.assert_array_equal(x, y)
            for x, y in zip(plain.cells_many(r, tm), none.cells_many(r, tm), strict=True):
                np.testing.assert_array_equal(x, y)
            assert not none.in_zeros(tm).any()


def test_pattern_sums_refuse_zeros_on_other_keys():
    w, phi, E, n = _draws()
    other = StructuralZeros([{"a": ["0"]}], ["a", "b"], [["0", "1"], ["0", "1"]])
    with pytest.raises(InputError, match="keys of phi"):
        PatternSums(w, phi, E, n, structural_zeros=other)
    with pytest.raises(InputError, match="StructuralZeros"):
        PatternSums(w, phi, E, n, structural_zeros=RULES4)


# ---------------------------------------------------- 2. the released file's risk with S

KEYS = trp.KEYS  # k0, k1, k2 of trp.LEVELS = (3, 4, 5): the oracle's key space
RULES = [{"k0": ["0"], "k1": ["0", "1"]}, {"k1": ["3"], "k2": {"not": ["0", "1"]}}]


def _outside(df, rules=RULES):
    """The records whose cell no rule forbids (a sample has no cell in S)."""
    sz = StructuralZeros(rules, KEYS, [[str(i) for i in range(L)] for L in trp.LEVELS])
    codes = np.column_stack([df[k].astype(int).to_numpy() for k in KEYS])
    return df[~sz.contains(codes)].reset_index(drop=True)


def _case(kappa, *, S=6, H=3, seed=0, same=False, N=None, n=150, weight=8.0, design=False):
    """A hand-built posterior with the zeros RULES; ``design``: unequal weights (3 or 15),
    the records' weight class a design variable of the mixture."""
    df = _outside(trp._frame(n, 1, weight=weight))
    if design:
        df["w"] = np.random.default_rng(9).choice([3.0, 15.0], len(df))
    md = sdcbayes.Microdata(df, KEYS, weight="w")
    spec = LatentClassModel.from_microdata(md, n_classes=H, structural_zeros=RULES,
                                           weights=design)
    w, phi = trp._theta(S, seed, H=H, same=same)
    if design:  # the weight class's profiles too
        rng = np.random.default_rng(seed + 1)
        phi = [*phi, rng.dirichlet(np.ones(2), (S, H))]
    idata = posterior_from_draws(md, spec, w, phi, kappa, N=N, design=design)
    return df, md, spec, w, phi, idata


def _pattern(rel, md, spec, i):
    return np.where(rel.iloc[i][KEYS].isna(), -1, spec.key_codes[md.record_cell[i]])


@pytest.mark.parametrize("design", [False, True], ids=["equal-weights", "weight-classes"])
def test_risk_with_zeros_is_the_listing_of_each_rectangle(design):
    """Top cells cover every pattern (2 blanks at most: 8 levels a free key): exact."""
    kappa = np.array([0.5, 3.0, np.inf, 1.0, np.inf, 8.0])
    df, md, spec, w, phi, idata = _case(kappa, design=design)
    assert (spec.class_weights is not None) == design
    rel = trp._released(df)
    assert spec.structural_zeros is not None and idata.posterior[
        "mass_structural_zero"].values.min() > 0.01
    out = assess_released(md, rel, idata, top_cells=64, random_seed=1)
    N = float(md.weights.sum())
    for i in range(0, len(df), 3):
        listed, f = _exact_by_listing(md, spec, w, phi, kappa, N, _pattern(rel, md, spec, i))
        assert out.records["f_p"].iloc[i] == f
        assert out.records["risk"].iloc[i] == pytest.approx(listed.mean(), rel=1e-10), i
    # the untruncated mixture is another answer (the zeros matter here)
    plain = LatentClassModel.from_microdata(md, n_classes=3, weights=design)
    i = int(np.flatnonzero(rel["k1"].isna().to_numpy() & (df["k0"] == 0).to_numpy())[0])
    untrunc, _ = _exact_by_listing(md, plain, w, phi, kappa, N, _pattern(rel, md, spec, i))
    assert abs(out.records["risk"].iloc[i] - untrunc.mean()) > 1e-3 * untrunc.mean()
    # the rules read, in the summary and the provenance
    assert out.summary["structural_zero_rules"] == spec.structural_zeros.to_list()
    assert out.provenance["settings"]["structural_zero_rules"] == out.summary[
        "structural_zero_rules"]


@pytest.mark.parametrize("top_cells", [0, 4])
def test_batches_with_zeros_equal_the_per_pattern_reference(monkeypatch, top_cells):
    """The remainder's moment match too (top cells that do not cover): batches = loop."""
    kappa = np.array([0.5, 3.0, np.inf, 1.0, 0.2, 8.0])
    df, md, spec, w, phi, idata = _case(kappa, seed=3)
    rel = trp._released(df)
    rel.iloc[70:80, [0, 1, 2]] = np.nan  # the whole key space: the mass of S left out
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


def test_poisson_draws_with_zeros_count_the_whole_population():
    """kappa = inf: X_p ~ Po(lam_p) exactly; a record blank on every key has F = N on
    average (the truncated pi sum to 1 outside S: the untruncated ones would fall short)."""
    df, md, spec, w, phi, idata = _case(None, seed=4)
    rel = trp._released(df)
    rel.iloc[70:80, [0, 1, 2]] = np.nan
    out = assess_released(md, rel, idata, random_seed=0)
    full = np.flatnonzero(rel[KEYS].isna().all(axis=1).to_numpy())
    np.testing.assert_allclose(out.records["F_mean"].iloc[full], float(md.weights.sum()),
                               rtol=1e-12)
    N = float(md.weights.sum())
    kappa = np.full(w.shape[0], np.inf)
    for i in (0, 30, 45, 65):
        listed, f = _exact_by_listing(md, spec, w, phi, kappa, N, _pattern(rel, md, spec, i))
        assert out.records["risk"].iloc[i] == pytest.approx(listed.mean(), rel=1e-10), i


def test_census_with_zeros_gives_exact_inverse_counts():
    """N = n: no one outside the sample; each record's risk is 1/F, F counted by hand."""
    df, md, spec, w, phi, idata = _case(np.array([0.5, 3.0, np.inf, 1.0, np.inf, 8.0]),
                                        N=None, weight=1.0)
    rel = trp._released(df)
    out = assess_released(md, rel, idata, N=float(len(df)), random_seed=2)
    shown = rel[KEYS]
    F = np.array([((df[KEYS].astype(int) == shown.iloc[i].astype(float)) | shown.iloc[i]
                   .isna().to_numpy()).all(axis=1).sum() for i in range(len(df))])
    np.testing.assert_allclose(out.records["risk"], 1.0 / F, rtol=1e-12)
    assert out.summary["expected_reidentifications"] == pytest.approx((1.0 / F).sum(),
                                                                      rel=1e-12)


@pytest.mark.filterwarnings("ignore")  # a short fit: convergence is not the point here
def test_a_gibbs_fit_with_zeros_is_read_back_from_its_stamps():
    """A real fit: its stamped rules reproduce its stored mass and pi; exact listing."""
    df = _outside(trp._frame(260, 4, weight=12.0))
    md = sdcbayes.Microdata(df, KEYS, weight="w")
    fit = assess_posterior(md, draws=6, chains=2, tune=10, random_seed=5, cores=1,
                           n_classes=4, store_profiles=True, ppc=0, structural_zeros=RULES)
    # no blank: the package's own assessment of the fit
    same = assess_released(md, df, fit.idata, random_seed=1)
    ref = assess_from_posterior(md, fit.idata, "latent-class")
    np.testing.assert_allclose(same.records["risk"], ref.records["risk"], rtol=1e-10)
    rel = trp._released(df)
    out = assess_released(md, rel, fit.idata, top_cells=64, random_seed=1)
    post = fit.idata.posterior
    flat = {v: post[v].values.reshape((-1,) + post[v].shape[2:]) for v in post.data_vars}
    w = flat["w"]
    phi = [flat[f"phi_{k}"] for k in KEYS]
    kappa = flat["kappa"] if "kappa" in flat else np.full(w.shape[0], np.inf)
    spec = LatentClassModel.from_microdata(md, n_classes=4, structural_zeros=RULES)
    for i in range(0, len(df), 9):
        listed, f = _exact_by_listing(md, spec, w, phi, kappa, float(md.weights.sum()),
                                      _pattern(rel, md, spec, i))
        assert out.records["risk"].iloc[i] == pytest.approx(listed.mean(), rel=1e-9), i
    assert out.summary["structural_zero_rules"] == spec.structural_zeros.to_list()


def test_predictive_draw_with_zeros_against_the_oracle():
    """Known parameters, top cells covering: the oracle draws every cell (none in S)."""
    kappa = 0.5
    df, md, spec, w, phi, idata = _case(kappa, S=2000, seed=2, same=True, weight=3.0)
    rel = trp._nested(df)
    oracle = trp._Oracle(md, rel)
    oracle.spec = spec  # the truncated mixture: pi = lam = 0 in S, so X = 0 there
    out = assess_released(md, rel, idata, top_cells=64, random_seed=3)
    pred = out.file_draws["expected_reidentifications"].values.ravel()
    true = oracle.er(w[0], [p[0] for p in phi], kappa, 20_000, np.random.default_rng(4))
    se = np.sqrt(pred.var() / pred.size + true.var() / true.size)
    assert abs(pred.mean() - true.mean()) < 4 * se, (pred.mean(), true.mean(), se)
    assert pred.std() == pytest.approx(true.std(), rel=0.08)
    cm = out.file_draws["expected_reidentifications_conditional_mean"].values.ravel()
    assert abs(cm[0] - true.mean()) < 4 * true.std() / np.sqrt(true.size)


# ------------------------------------------------------------------------- 3. refusals


def test_refusals_of_stamps_that_do_not_fit():
    df, md, spec, w, phi, idata = _case(2.0)
    rel = trp._released(df)
    good = assess_released(md, rel, idata, random_seed=0)
    assert np.isfinite(good.summary["expected_reidentifications"])

    def stamped(summary):
        bad = idata.copy()
        bad.attrs = dict(idata.attrs)
        if summary is None:
            bad.attrs.pop("data_summary")
        else:
            bad.attrs["data_summary"] = json.dumps(summary)
        return bad

    # other rules than the fit's (one of its two): their mass is not the stored one
    with pytest.raises(InputError, match="do not reproduce its mass_structural_zero"):
        assess_released(md, rel, stamped({"structural_zeros": RULES[:1]}))
    # mass stored, no rules stamped: the forbidden cells unknown
    with pytest.raises(InputError, match="no stamped rules"):
        assess_released(md, rel, stamped(None))
    # a level md_original's keys do not have; a rule forbidding a cell of the sample
    with pytest.raises(InputError, match="do not fit md_original's keys and levels"):
        assess_released(md, rel, stamped({"structural_zeros": [{"k0": ["7"]}]}))
    with pytest.raises(InputError, match="forbid .* cell"):
        assess_released(md, rel, stamped({"structural_zeros": [{"k0": ["1"]}]}))
    with pytest.raises(InputError, match="must be a list of rules"):
        assess_released(md, rel, stamped({"structural_zeros": "auto"}))


# ---------------------------------------------------------- 4. sdcbayes protect's option


def _survey(tmp_path, n=300, seed=7):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"age": rng.choice(["child", "adult", "senior"], n, p=[.2, .5, .3]),
                       "job": rng.choice(["none", "clerk", "farmer", "teacher"], n),
                       "region": rng.choice(list("nsewcx"), n),
                       "w": rng.uniform(5, 40, n).round(2)})
    df.loc[df.age == "child", "job"] = "none"  # children have no job: a structural zero
    path = tmp_path / "survey.csv"
    df.to_csv(path, index=False)
    return path


CHILD_RULES = [{"age": ["child"], "job": {"not": ["none"]}}]


def _rules(tmp_path, rules=CHILD_RULES, name="rules.json"):
    path = tmp_path / name
    path.write_text(json.dumps(rules) if not isinstance(rules, str) else rules)
    return path


def test_protect_refuses_structural_zeros_before_any_work(tmp_path, capsys):
    data = _survey(tmp_path)
    rules = _rules(tmp_path)
    base = [str(data), "--keys", "age,job,region", "--weight", "w", "--suppress-k", "2"]
    cases = [
        # without --model latent-class: the closed form fits nothing
        ([*base, "--structural-zeros", str(rules)], ("--structural-zeros", "closed-form")),
        ([*base, "--model", "latent-class", "--structural-zeros", "auto"],
         ("--structural-zeros auto", "unconfirmed")),
        ([*base, "--model", "latent-class", "--structural-zeros", str(tmp_path / "no.json")],
         ("no such file",)),
        ([*base, "--model", "latent-class", "--structural-zeros",
          str(_rules(tmp_path, "[{\"age\": [", "bad.json"))], ("not valid JSON",)),
        ([*base, "--model", "latent-class", "--structural-zeros",
          str(_rules(tmp_path, [{"age": ["kid"]}], "typo.json"))], ("'kid'", "age")),
        ([*base, "--model", "latent-class", "--structural-zeros",
          str(_rules(tmp_path, [{"age": ["adult"], "job": ["clerk"]}], "data.json"))],
         ("forbids combinations the data contain",)),
    ]
    for i, (args, fragments) in enumerate(cases):
        out = tmp_path / f"out{i}"
        proc = run_in_process(capsys, "protect", *args, "--out", str(out))
        assert_one_line_error(proc, *fragments)
        assert "fitting" not in proc.stderr and not out.exists()


@pytest.mark.filterwarnings("ignore")  # a short fit: convergence is not the point here
def test_protect_fits_and_scores_with_the_rules(tmp_path, capsys):
    data = _survey(tmp_path)
    rules = _rules(tmp_path)
    out = tmp_path / "lc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        proc = run_in_process(capsys, "protect", str(data), "--keys", "age,job,region",
                              "--weight", "w", "--suppress-k", "4", "--model", "latent-class",
                              "--structural-zeros", str(rules), "--draws", "20", "--tune",
                              "30", "--chains", "2", "--seed", "1", "--quiet", "--out",
                              str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    fit = summary["risk"]["fit"]
    assert fit["structural_zero_rules"] == CHILD_RULES
    assert fit["structural_zeros_file"] == str(rules)
    assert summary["provenance"]["settings"]["structural_zero_rules"] == CHILD_RULES
    after = summary["risk"]["after"]
    assert after["n_blanked_records"] > 0
    assert 0 < after["expected_reidentifications"] < summary["risk"]["before"][
        "expected_reidentifications"]
