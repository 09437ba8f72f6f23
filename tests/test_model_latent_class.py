"""Latent-class model: likelihood, Gibbs sampler, structural zeros, risk formulas.

References: Dunson & Xing (2009) and Manrique-Vallier & Reiter (2014) for the
model and sampler; Skinner & Holmes (1998) / seed ``001_…`` section 3.4 for the
Poisson risk formulas. Every check compares with an independent computation:
exact enumeration, importance sampling from the prior, brute-force sums or
simulation with fixed seeds.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import (
    EM_LEARN_MASS,
    PHI_MASS_GRID,
    PHI_MASS_START,
    PHI_PRIOR_DEFAULT,
    LatentClassModel,
    StructuralZeros,
    _expected_inverse_frequency_f,
    _safe_names,
    detect_structural_zeros,
    expected_inverse_frequency,
    latent_class_loglik,
    prob_population_unique,
    profile_mass_loglik,
    replicate_counts_of_counts,
    simulate_tau,
    stick_breaking_weights,
)


def _random_params(rng, H, n_levels, a=1.0):
    w = stick_breaking_weights(rng.beta(1.0, 2.0, size=H - 1))
    phi = [rng.dirichlet(np.full(L, a), size=H) for L in n_levels]
    return w, phi


def _all_cells(n_levels):
    return np.array(list(itertools.product(*[range(L) for L in n_levels])))


def _simulate_records(rng, w, phi, n):
    z = rng.choice(len(w), size=n, p=w)
    cols = [(rng.random(n)[:, None] > np.cumsum(p[z], axis=1)).sum(axis=1) for p in phi]
    return np.minimum(np.column_stack(cols), [p.shape[1] - 1 for p in phi])


# ------------------------------------------------------------------ likelihood


def test_stick_breaking_weights_sum_to_one_and_match_definition():
    V = np.array([0.3, 0.5, 0.9])
    w = stick_breaking_weights(V)
    np.testing.assert_allclose(w, [0.3, 0.7 * 0.5, 0.7 * 0.5 * 0.9, 0.7 * 0.5 * 0.1])
    assert w.sum() == pytest.approx(1.0)


def test_loglik_equals_record_level_sum():
    # sum_k f_k log pi_k over distinct cells == sum over records of log pi_{k(i)}
    rng = np.random.default_rng(0)
    n_levels = [3, 2, 4]
    w, phi = _random_params(rng, 4, n_levels)
    rec = _simulate_records(rng, w, phi, 500)
    cells, counts = np.unique(rec, axis=0, return_counts=True)
    pi_rec = np.array([sum(w[h] * np.prod([phi[j][h, r[j]] for j in range(3)]) for h in range(4))
                       for r in rec])
    assert latent_class_loglik(cells, counts, w, phi) == pytest.approx(np.log(pi_rec).sum(),
                                                                       rel=1e-12)


def test_pymc_route_keeps_the_weight_class_in_the_posterior():
    # a weighted fit adds the key "__weight_class__"; its variable used to be named
    # phi___weight_class__, which PyMC takes for an internal one and leaves out of the
    # posterior, so fit(..., method="nuts") failed after sampling (log-likelihood)
    from sdcbayes import Microdata
    from sdcbayes.inference import fit

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 120), "b": rng.integers(0, 2, 120),
                          "w": rng.choice([5.0, 20.0], 120)})
    model = LatentClassModel.from_microdata(Microdata(frame, keys=["a", "b"], weight="w"),
                                            n_classes=2)
    assert any("weight_class" in str(k) for k in model.keys)
    with pytest.warns(Warning, match="only 3 draws per chain"):  # a graph check, not a fit
        idata = fit(model, method="nuts", draws=3, tune=3, chains=1, random_seed=1)
    names = set(idata.posterior.data_vars)
    assert {"phi_a", "phi_b", "phi_weight_class"} <= names, names
    assert _safe_names(["x-1", "x_1", "__y__", "%"]) == ["x_1", "x_1_1", "y", "key3"]


@pytest.mark.parametrize("with_zeros", [False, True])
def test_pymc_loglik_matches_numpy(with_zeros):
    rng = np.random.default_rng(1)
    n_levels = [3, 2, 4]
    keys = ["a", "b", "c"]
    rules = [{"a": [0], "b": [1]}, {"a": [0, 1], "c": [3]}] if with_zeros else None
    w0, phi0 = _random_params(rng, 3, n_levels)
    rec = _simulate_records(rng, w0, phi0, 300)
    if with_zeros:
        sz = StructuralZeros(rules, keys, [range(L) for L in n_levels])
        rec = rec[~sz.contains(rec)]
    cells, counts = np.unique(rec, axis=0, return_counts=True)
    model = LatentClassModel(cells, counts, n_levels, keys=keys, n_classes=5,
                             structural_zeros=rules)
    pm_model = model.build()
    w, phi = _random_params(rng, 5, n_levels, a=2.0)
    V = w[:-1] / (1.0 - np.r_[0.0, np.cumsum(w)[:-2]])
    values = {"alpha": 0.7, "V": V, **{f"phi_{k}": p for k, p in zip(keys, phi, strict=True)}}
    point = {}
    for rv in pm_model.free_RVs:
        tr = pm_model.rvs_to_transforms[rv]
        val = np.asarray(values[rv.name], dtype=float)
        point[pm_model.rvs_to_values[rv].name] = (
            tr.forward(val, *rv.owner.inputs).eval() if tr is not None else val
        )
    def compiled(name):
        # the graph in terms of the value variables; FAST_COMPILE: no C compilation
        out = pm_model.replace_rvs_by_values([pm_model[name]])[0]
        return pm_model.compile_fn(out, inputs=pm_model.value_vars, on_unused_input="ignore",
                                   mode="FAST_COMPILE")

    expected = model.loglik(w, phi)
    assert float(compiled("loglik")(point)) == pytest.approx(expected, abs=1e-8)
    # and the Deterministic w is the stick-breaking of V
    np.testing.assert_allclose(compiled("w")(point), w, atol=1e-12)


# ------------------------------------------------------------------ structural zeros


def test_structural_zero_rectangles_are_disjoint_and_cover_the_union():
    rng = np.random.default_rng(2)
    n_levels = [4, 3, 3, 2]
    keys = list("abcd")
    levels = [list(range(L)) for L in n_levels]
    rules = []
    for _ in range(6):
        rule = {}
        for j in rng.choice(4, size=rng.integers(1, 4), replace=False):
            sel = rng.choice(n_levels[j], size=rng.integers(1, n_levels[j] + 1), replace=False)
            rule[keys[j]] = sel.tolist()
        rules.append(rule)
    rules.append({"a": {"not": [0]}, "b": [2]})
    sz = StructuralZeros(rules, keys, levels)
    cells = _all_cells(n_levels)
    in_union = np.zeros(len(cells), dtype=bool)
    for rule in rules:
        m = np.ones(len(cells), dtype=bool)
        for k, v in rule.items():
            j = keys.index(k)
            lv = [x for x in range(n_levels[j]) if x not in v["not"]] if isinstance(v, dict) else v
            m &= np.isin(cells[:, j], lv)
        in_union |= m
    np.testing.assert_array_equal(sz.contains(cells), in_union)
    per_rect = np.ones((len(cells), sz.n_rectangles), dtype=bool)
    for j in range(4):
        per_rect &= sz.masks[j].T[cells[:, j]]
    assert per_rect.sum(axis=1).max() == 1  # disjoint
    np.testing.assert_array_equal(per_rect.any(axis=1), in_union)
    # class mass of S = brute-force sum over enumerated cells of S
    w, phi = _random_params(rng, 3, n_levels)
    brute = np.array([sum(np.prod([phi[j][h, c[j]] for j in range(4)]) for c in cells[in_union])
                      for h in range(3)])
    np.testing.assert_allclose(sz.class_mass(phi), brute, rtol=1e-12)


def test_truncated_cell_probabilities_put_zero_mass_on_structural_zeros():
    rng = np.random.default_rng(3)
    n_levels = [3, 3, 2]
    rules = [{"k0": [0], "k1": {"not": [0]}}, {"k0": [2], "k2": [1]}]
    cells = np.array([[0, 0, 0], [1, 1, 1], [2, 0, 0], [1, 2, 0]])
    model = LatentClassModel(cells, [1, 2, 1, 3], n_levels, keys=["k0", "k1", "k2"],
                             n_classes=4, structural_zeros=rules)
    w, phi = _random_params(rng, 4, n_levels)
    full = _all_cells(n_levels)
    pi = model.cell_probabilities(w, phi, full)
    inside = model.structural_zeros.contains(full)
    assert inside.sum() == 2 * 2 + 3  # (0, 1|2, any of 2) and (2, any of 3, 1)
    assert np.all(pi[inside] == 0.0)
    assert pi.sum() == pytest.approx(1.0, abs=1e-12)
    # the truncated log-likelihood is the log of these renormalised probabilities
    idx = [np.flatnonzero((full == c).all(axis=1))[0] for c in cells]
    assert model.loglik(w, phi) == pytest.approx(np.dot([1, 2, 1, 3], np.log(pi[idx])), rel=1e-12)


def test_data_inside_structural_zeros_and_bad_rules_are_rejected():
    cells = np.array([[0, 1], [1, 0]])
    with pytest.raises(InputError, match="structural-zero set"):
        LatentClassModel(cells, [1, 1], [2, 2], keys=["a", "b"], structural_zeros=[{"a": [0],
                                                                                      "b": [1]}])
    with pytest.raises(InputError, match="unknown key"):
        LatentClassModel(cells, [1, 1], [2, 2], keys=["a", "b"], structural_zeros=[{"z": [0]}])
    with pytest.raises(InputError, match="does not have"):
        LatentClassModel(cells, [1, 1], [2, 2], keys=["a", "b"], structural_zeros=[{"a": [7]}])
    with pytest.raises(InputError, match="unknown prior"):
        LatentClassModel(cells, [1, 1], [2, 2], priors={"beta": {"dist": "Gamma"}})


def test_detect_structural_zeros_finds_planted_implication_and_pair():
    rng = np.random.default_rng(4)
    n = 3000
    age = rng.choice(["child", "adult", "old"], size=n, p=[0.25, 0.5, 0.25])
    occ = np.where(age == "child", "X", rng.choice(["a", "b", "c"], size=n))
    colour = rng.choice(["red", "blue", "green"], size=n)
    shape = rng.choice(["sq", "tri"], size=n)
    shape[(colour == "red")] = "sq"  # red never with tri: a pair zero
    frame = pd.DataFrame({"age": age, "occ": occ, "colour": colour, "shape": shape})
    cands = detect_structural_zeros(frame, ["age", "occ", "colour", "shape"])
    imp = cands[cands.kind == "implication"]
    assert ((imp.key == "age") & (imp.level == "child") & (imp.other_key == "occ")
            & (imp.other_level == "X")).any()
    # a red implies sq, found as an implication; no spurious rule among independent keys
    across = cands.key.isin(["age", "occ"]) & cands.other_key.isin(["colour", "shape"])
    assert not across.any()
    assert ((cands.key == "colour") & (cands.level == "red") & (cands.other_key == "shape")).any()
    rule = imp.loc[imp.level == "child", "rule"].iloc[0]
    model = LatentClassModel.from_frame(frame, ["age", "occ"], structural_zeros=[rule])
    assert model.structural_zeros.n_rectangles == 1


def test_detect_structural_zeros_reads_numbers_and_missing_values_as_their_strings():
    # levels are compared as strings (9 sorts after 10, NaN is the level "nan"), the
    # pair tables counted as pd.crosstab counts them
    rng = np.random.default_rng(8)
    n = 2000
    grp = rng.choice([9, 10, 11], size=n)
    occ = np.where(grp == 9, "X", rng.choice(["a", "b", np.nan], size=n).astype(object))
    frame = pd.DataFrame({"grp": grp, "occ": occ})
    cands = detect_structural_zeros(frame, ["grp", "occ"])
    imp = cands[cands.key == "grp"].iloc[0]
    assert (imp.kind, imp.key, imp.level, imp.other_key, imp.other_level) == (
        "implication", "grp", "9", "occ", "X")
    n_u, n_v = (grp == 9).sum(), (occ == "X").sum()
    assert imp.expected == pytest.approx(n_u * (n - n_v) / n)
    # and the converse (X only in group 9); the zeros of 10 and 11 with X are covered by
    # it, and "nan" meets 10 and 11 like any level: nothing else is a candidate
    assert len(cands) == 2 and set(cands.kind) == {"implication"}
    other = cands[cands.key == "occ"].iloc[0]
    assert (other.key, other.level, other.other_key, other.other_level) == ("occ", "X", "grp", "9")


def test_confirmed_rules_of_the_benchmark_forbid_no_population_record():
    # the "user-confirmed" structural zeros of benchmarks/latent_class_accuracy.py must be
    # true zeros of the whole file (the population), or the truncated model is wrong
    from benchtools import load_benchmark

    from sdcbayes.validation import SkipDesign, load_population

    bench = load_benchmark("latent_class_accuracy.py")
    checked = 0
    for name, rules in bench.CONFIRMED_RULES.items():
        if not rules:
            continue
        try:
            pop = load_population(name)
        except SkipDesign as exc:
            pytest.skip(str(exc))
        frame = pop.frame[list(pop.keys)].astype(str)
        levels = [sorted(frame[k].unique()) for k in pop.keys]
        sz = StructuralZeros(rules, pop.keys, levels)
        codes = np.column_stack([pd.Categorical(frame[k], categories=levels[j]).codes
                                 for j, k in enumerate(pop.keys)])
        assert not sz.contains(codes).any(), name
        # and every rule removes something: it names cells that could otherwise occur
        assert sz.n_rectangles >= len(rules)
        checked += 1
    assert checked == 6  # adult9, scotland7, scotland13, eusilc, eusilc-distinct, eusilc-multi


def test_detect_structural_zeros_finds_planted_subset():
    # never-married people are never husband or wife (a set of two levels of rel),
    # while meeting both other levels: a "subset" candidate, with the whole set Z
    rng = np.random.default_rng(13)
    n = 4000
    mar = rng.choice(["never", "married", "divorced"], size=n, p=[0.4, 0.45, 0.15])
    rel = rng.choice(["husband", "wife", "child", "other"], size=n)
    single = mar != "married"
    rel[single] = rng.choice(["child", "other"], size=single.sum())
    noise = rng.choice(list("abcd"), size=n)
    frame = pd.DataFrame({"mar": mar, "rel": rel, "noise": noise})
    cands = detect_structural_zeros(frame, ["mar", "rel", "noise"])
    sub = cands[(cands.kind == "subset") & (cands.key == "mar")]
    assert set(sub.level) == {"never", "divorced"}
    for z in sub.other_level:
        assert sorted(z) == ["husband", "wife"]
    # expected count of the set under independence: n_u * (n_husband + n_wife) / n
    row = sub[sub.level == "never"].iloc[0]
    n_u = (mar == "never").sum()
    assert row.expected == pytest.approx(n_u * np.isin(rel, ["husband", "wife"]).sum() / n)
    assert not (cands.key.eq("noise") | cands.other_key.eq("noise")).any()
    model = LatentClassModel.from_frame(frame, ["mar", "rel"], structural_zeros=list(sub.rule))
    full = _all_cells(model.n_levels)
    assert model.structural_zeros.contains(full).sum() == 4  # 2 marital levels x 2 roles


# ------------------------------------------------------------------ Gibbs sampler


def test_gibbs_recovers_a_two_class_population():
    rng = np.random.default_rng(5)
    n_levels = [3, 3, 3, 3]
    w = np.array([0.6, 0.4])
    phi = [np.array([[0.8, 0.15, 0.05], [0.1, 0.2, 0.7]]) for _ in n_levels]
    rec = _simulate_records(rng, w, phi, 3000)
    cells, counts = np.unique(rec, axis=0, return_counts=True)
    model = LatentClassModel(cells, counts, n_levels, n_classes=8)
    # EM-started classes split the true ones; 600 sweeps let the DP prior merge them
    idata = model.sample(draws=300, tune=600, chains=1, random_seed=1, store="all")
    true_pi = model.cell_probabilities(w, phi)
    est = idata.posterior["pi"].mean(("chain", "draw")).values
    # the posterior mean is closer to the truth than the raw sample proportions
    tv_model = 0.5 * np.abs(est - true_pi).sum()
    tv_raw = 0.5 * np.abs(counts / counts.sum() - true_pi).sum()
    assert tv_model < 0.65 * tv_raw, (tv_model, tv_raw)
    # class labels are not identified and a true class may be split among several
    # near-identical classes, so compare an identifiable functional: the ratio of
    # the probabilities of the cells (0,0,0,0) and (2,2,2,2), one per true class
    i0 = np.flatnonzero((cells == 0).all(axis=1))[0]
    i2 = np.flatnonzero((cells == 2).all(axis=1))[0]
    ratio = (idata.posterior["pi"].sel(cell=i0) / idata.posterior["pi"].sel(cell=i2)).values
    true_ratio = true_pi[i0] / true_pi[i2]
    assert np.median(ratio) == pytest.approx(true_ratio, rel=0.25)
    # the two-class mixture is recovered up to label switching and splitting:
    # the largest weights of a fit started from EM (:meth:`fit_em`) match
    fit = model.fit_em(n_restarts=3, random_seed=2, n_classes=2)
    np.testing.assert_allclose(fit["w"], w, atol=0.03)
    np.testing.assert_allclose(fit["phi"][0], phi[0], atol=0.05)
    assert fit["loglik"] >= model.loglik(w, phi) - 1e-6  # the MLE beats the truth


def test_em_with_structural_zero_matches_brute_force_truncated_mle():
    # one class, 2 x 2 keys, cell (1, 1) impossible: pi_k = p_a q_b / (1 - (1-p)(1-q)).
    # The EM with augmented records (expected NegBin count) must reach the maximum of
    # the truncated likelihood (Manrique-Vallier & Reiter 2014, eq. 2), found here
    # on a fine grid.
    cells = np.array([[0, 0], [0, 1], [1, 0]])
    counts = np.array([40, 25, 10])
    model = LatentClassModel(cells, counts, [2, 2], keys=["k0", "k1"], n_classes=2,
                             structural_zeros=[{"k0": [1], "k1": [1]}],
                             priors={"phi": {"a": 1e-9}})
    fit = model.fit_em(n_restarts=1, max_iter=5000, tol=1e-13, random_seed=0, n_classes=1)
    g = np.linspace(1e-4, 1 - 1e-4, 2001)
    p, q = np.meshgrid(g, g, indexing="ij")
    ll = (counts[0] * np.log(p * q) + counts[1] * np.log(p * (1 - q))
          + counts[2] * np.log((1 - p) * q) - counts.sum() * np.log1p(-(1 - p) * (1 - q)))
    i, j = np.unravel_index(np.argmax(ll), ll.shape)
    assert fit["phi"][0][0, 0] == pytest.approx(g[i], abs=2e-3)
    assert fit["phi"][1][0, 0] == pytest.approx(g[j], abs=2e-3)
    assert fit["loglik"] == pytest.approx(ll[i, j], abs=1e-3)
    # without the augmentation the fit would be the untruncated MLE p = 65/75, q = 50/75
    assert abs(fit["phi"][0][0, 0] - 65 / 75) > 0.02


def test_em_pruning_removes_classes_and_predicts_new_records_better():
    # Figueiredo & Jain (2002): classes explaining fewer than d/2 records are removed.
    # 400 records from 3 classes, H = 20: the unpruned EM overfits (a class per
    # handful of records); the pruned one keeps fewer classes and gives fresh records
    # from the same population a higher log-likelihood.
    rng = np.random.default_rng(12)
    n_levels = [8] * 5
    w = np.array([0.5, 0.3, 0.2])
    phi = [rng.dirichlet(np.full(8, 0.5), size=3) for _ in n_levels]
    cells, counts = np.unique(_simulate_records(rng, w, phi, 400), axis=0, return_counts=True)
    test_cells, test_counts = np.unique(_simulate_records(rng, w, phi, 20_000), axis=0,
                                        return_counts=True)
    model = LatentClassModel(cells, counts, n_levels, n_classes=20)
    pruned = model.fit_em(n_restarts=2, random_seed=0)
    full = model.fit_em(n_restarts=2, random_seed=0, prune=False)
    assert full["n_classes"] == 20
    assert 3 <= pruned["n_classes"] <= 10
    # every surviving class explains at least d/2 = 17.5 records
    assert pruned["w"][: pruned["n_classes"]].min() * 400 >= 17.5 - 1e-6
    assert np.all(pruned["w"][pruned["n_classes"]:] == 0)
    held = [latent_class_loglik(test_cells, test_counts, f["w"], f["phi"]) / 20_000
            for f in (pruned, full)]
    assert held[0] > held[1] + 0.05, held
    assert full["loglik"] > pruned["loglik"]  # the unpruned fit wins in-sample only


def _prior_importance(model, functional, n_draws, rng):
    """Posterior mean of functional(w, pi) by importance sampling from the prior.

    With learnt profile masses (``mass="learn"``) each draw also takes log M_j uniform
    on PHI_MASS_GRID, and the functional is called as functional(w, pi, log_mass).
    """
    H = model.H
    a0, b0 = model.priors["alpha"]["alpha"], model.priors["alpha"]["beta"]
    alpha = rng.gamma(a0, 1.0 / b0, size=n_draws)
    V = rng.beta(1.0, np.maximum(alpha, 1e-300)[:, None] * np.ones((1, H - 1)))
    w = stick_breaking_weights(V)
    log_m = None
    if model.learns_phi_mass:
        log_m = np.log(rng.choice(PHI_MASS_GRID, size=(n_draws, len(model.n_levels))))
        phi = []
        for j in range(len(model.n_levels)):  # Dirichlet(M_j eta_j) draw by draw
            g = rng.standard_gamma(np.exp(log_m[:, j, None, None]) * model.phi_base(j)
                                   * np.ones((1, H, 1)))
            phi.append(g / g.sum(axis=2, keepdims=True))
    else:
        phi = [rng.dirichlet(np.full(L, model.phi_concentration(j)), size=(n_draws, H))
               for j, L in enumerate(model.n_levels)]
    # vectorised log-likelihood over draws (products, not the module's log-space code)
    prod = w[:, None, :] * np.ones((1, model.codes.shape[0], 1))
    for j in range(len(phi)):
        prod = prod * phi[j][:, :, model.codes[:, j]].transpose(0, 2, 1)
    pi_star = prod.sum(axis=2)                           # (draws, cells)
    ll = np.log(pi_star) @ model.counts
    if model.structural_zeros is not None:
        # brute force: enumerate every cell of the 2 x 2 space and sum those in S
        full = _all_cells(model.n_levels)
        in_s = full[model.structural_zeros.contains(full)]
        mass = sum((w * np.prod([phi[j][:, :, c[j]] for j in range(len(phi))], axis=0)).sum(1)
                   for c in in_s)
        ll -= model.n * np.log1p(-mass)
        pi_star = pi_star / (1.0 - mass)[:, None]
    lw = ll - ll.max()
    wt = np.exp(lw) / np.exp(lw).sum()
    vals = functional(w, pi_star) if log_m is None else functional(w, pi_star, log_m)
    mean = wt @ vals
    ess = 1.0 / (wt ** 2).sum()
    return mean, np.sqrt(wt @ (vals - mean) ** 2 / ess)


@pytest.mark.parametrize("with_zeros", [False, True])
def test_gibbs_stationary_distribution_matches_importance_sampling(with_zeros):
    # 2 keys x 2 levels, H = 2: the posterior of pi_(0,0) and of w_1 by prior
    # importance sampling vs the Gibbs sampler (with structural zero (1, 1) the
    # truncated likelihood of Manrique-Vallier & Reiter 2014, eq. 2).
    cells = np.array([[0, 0], [0, 1], [1, 0]] + ([] if with_zeros else [[1, 1]]))
    counts = np.array([4, 2, 1] + ([] if with_zeros else [3]))
    rules = [{"k0": [1], "k1": [1]}] if with_zeros else None
    model = LatentClassModel(cells, counts, [2, 2], keys=["k0", "k1"], n_classes=2,
                             structural_zeros=rules, priors={"phi": {"a": 1.0}})

    def functional(w, pi):
        return np.column_stack([pi[:, 0], w[:, 0]])

    is_mean, is_se = _prior_importance(model, functional, 100_000, np.random.default_rng(6))
    # w_1 depends on the labelling: random starts ("margins") visit both labellings
    idata = model.sample(draws=4000, tune=200, chains=2, random_seed=7, store="all",
                         init="margins")
    _assert_pi00_and_w1_match(idata, is_mean, is_se)


def _assert_pi00_and_w1_match(idata, is_mean, is_se):
    """The Gibbs means of pi_(0,0) and w_1 within 4 standard errors of importance
    sampling's (batch means: 40 batches per chain)."""
    pi00 = idata.posterior["pi"].sel(cell=0).values
    w1 = idata.posterior["w"].sel(latent_class=0).values
    for k, draws in enumerate((pi00, w1)):
        batches = draws.reshape(draws.shape[0], 40, -1).mean(axis=2).ravel()
        se = batches.std(ddof=1) / np.sqrt(batches.size)
        assert abs(draws.mean() - is_mean[k]) < 4 * np.hypot(se, is_se[k]) + 1e-3, (
            k, draws.mean(), is_mean[k], se, is_se[k])


def test_stick_fractions_keep_log_one_minus_v_where_it_underflows():
    """V ~ Beta(a, b): E log(1 - V) = digamma(b) - digamma(a + b) (1 - V ~ Beta(b, a)).

    At b = 0.01 nearly every 1 - V is below 1e-12 and rounds V to 1: a clip there caps
    log(1 - V) at -27.6 where its mean is about -102, which kept the Gibbs sampler's
    alpha away from 0 (w_1's posterior mean 0.59 against 0.667 in the test below, at
    14 standard errors over 160,000 draws). At b >= 0.2 the draws are rng.beta's.
    """
    from scipy.special import digamma, polygamma

    from sdcbayes.models.latent_class import _stick_fractions

    a = np.array([11.0, 11.0, 3.0])
    b = np.array([0.01, 0.05, 2.0])
    n = 20_000
    rng = np.random.default_rng(5)
    draws = [_stick_fractions(rng, a, b) for _ in range(n)]
    V = np.array([d[0] for d in draws])
    log1mV = np.array([d[1] for d in draws])
    exact = digamma(b) - digamma(a + b)
    sd = np.sqrt(polygamma(1, b) - polygamma(1, a + b))
    assert np.all(np.abs(log1mV.mean(0) - exact) < 4 * sd / np.sqrt(n)), (log1mV.mean(0), exact)
    assert np.all(np.isfinite(log1mV)) and np.all((V > 0) & (V <= 1))
    assert log1mV[:, 0].min() < -1000  # far beyond any clip
    # b >= 0.2 everywhere: the same draws as rng.beta with the old clip (stored runs repeat)
    a2, b2 = np.array([2.0, 5.0]), np.array([0.3, 40.0])
    V2, l2 = _stick_fractions(np.random.default_rng(9), a2, b2)
    old = np.clip(np.random.default_rng(9).beta(a2, b2), 1e-300, 1.0 - 1e-12)
    np.testing.assert_array_equal(V2, old)
    np.testing.assert_array_equal(l2, np.log1p(-old))


def test_gibbs_with_label_moves_from_em_starts_matches_importance_sampling():
    """The sampler with the label moves keeps the posterior: w_1, which depends on the
    classes' order, and pi, which does not, match importance sampling from EM starts."""
    cells = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    model = LatentClassModel(cells, np.array([4, 2, 1, 3]), [2, 2], keys=["k0", "k1"],
                             n_classes=2, priors={"phi": {"a": 1.0}})

    def functional(w, pi):
        return np.column_stack([pi[:, 0], w[:, 0]])

    is_mean, is_se = _prior_importance(model, functional, 100_000, np.random.default_rng(6))
    idata = model.sample(draws=4000, tune=200, chains=2, random_seed=7, store="all",
                         init="em", label_moves=True)
    assert idata.attrs["label_moves"] == 1
    _assert_pi00_and_w1_match(idata, is_mean, is_se)
    with pytest.raises(InputError, match="label_moves"):
        model.sample(draws=5, tune=0, chains=1, label_moves="yes")



_SM_CODES = np.array([[0, 0], [0, 1], [1, 1], [2, 0]])
_SM_F = np.array([3, 2, 1, 1])


def _allocation_posterior(conc, alpha, H=3, learnt=None):
    """Every count matrix A of the records of the cells ``_SM_CODES`` (counts ``_SM_F``)
    over H classes, and its exact posterior given alpha and the profiles' Dirichlet
    concentrations ``conc``, V and the profiles integrated out: the cells' multinomial
    coefficients, the stick-breaking terms prod_{h<H} B(1 + m_h, alpha + sum_{l>h} m_l) /
    B(1, alpha) (Ishwaran & James 2001) and each class's Dirichlet-multinomial, written
    out here rather than taken from the module. ``learnt``: {key: base}, keys whose
    concentration is M * base with M uniform on PHI_MASS_GRID, summed over the grid."""
    from scipy.special import betaln, gammaln

    def compositions(n):
        return [c for c in itertools.product(range(n + 1), repeat=H) if sum(c) == n]

    states = np.array(list(itertools.product(*[compositions(int(n)) for n in _SM_F])), float)

    def log_post(A):
        m = A.sum(axis=0)
        tail = np.cumsum(m[::-1])[::-1]
        lp = -gammaln(A + 1.0).sum() + (betaln(1.0 + m[:-1], alpha + tail[1:])
                                        - betaln(1.0, alpha)).sum()
        for j, b in enumerate(conc):
            terms = []
            for bg in ([b] if j not in (learnt or {}) else
                       [M * learnt[j] for M in PHI_MASS_GRID]):
                t = 0.0
                for h in range(H):
                    c = np.bincount(_SM_CODES[:, j], weights=A[:, h], minlength=b.size)
                    t += (gammaln(bg.sum()) - gammaln(bg.sum() + c.sum())
                          + (gammaln(bg + c) - gammaln(bg)).sum())
                terms.append(t)
            lp += np.log(np.mean(np.exp(np.array(terms) - max(terms)))) + max(terms)
        return lp

    lp = np.array([log_post(A) for A in states])
    p = np.exp(lp - lp.max())
    return states, p / p.sum()


def _within_batch_errors(seen, exact, n_batches=40, k=4.0):
    """Means of the rows of ``seen`` (draws x functionals, in chain order) within k
    batch-means standard errors of ``exact``."""
    batches = seen.reshape(n_batches, -1, seen.shape[-1]).mean(axis=1)
    se = batches.std(axis=0, ddof=1) / np.sqrt(n_batches)
    z = (seen.mean(axis=0) - exact) / se
    assert np.all(np.abs(z) < k), (seen.mean(axis=0), exact, z)


@pytest.mark.parametrize("learn", [False, True])
def test_split_merge_moves_keep_the_collapsed_posterior_of_the_allocations(learn):
    """The split-merge moves alone visit the cells' allocations with their exact
    posterior given alpha and the profile prior (V and the profiles integrated out).

    Four cells of 3, 2, 1 and 1 records, two keys, H = 3: the 540 count matrices A
    enumerated (:func:`_allocation_posterior`). Four functionals (one class occupied,
    three, cell 0 in one class, class 0 occupied) over 20,000 moves, within 4
    batch-means standard errors (40 batches of 500 moves; the standard error is the
    batches', so it grows as the moves shrink and the bound stays 4 of them). Measured
    on this seed, the largest error is 1.2 of them (both params), while a copy of the
    move that leaves out the proposal's probability in the merge puts one 52 off, the
    pick of the classes in the split's or in the merge's ratio 11.5-13.8, both 23-28,
    the cells' multinomial coefficients in the target 20-24 or in the proposal 21-23
    (at 10,000 moves the weakest of them, the split's pick, is 7.3 off). With key 0's mass
    learnt (``learn``: its concentration M * (0.2, 0.3, 0.5), M uniform on
    PHI_MASS_GRID and summed over in the target), the same functionals.
    """
    from sdcbayes.models.latent_class import _split_merge

    conc = [np.full(3, 0.5), np.array([0.3, 1.2])]
    H, alpha = 3, 0.8
    learnt = {0: np.array([0.2, 0.3, 0.5])} if learn else None
    states, p = _allocation_posterior(conc, alpha, H, learnt)

    def stats(A):
        occ = (A.sum(axis=-2) > 0).sum(axis=-1)
        return np.stack([occ == 1, occ == 3, A[..., 0, :].max(axis=-1) == _SM_F[0],
                         A[..., :, 0].sum(axis=-1) > 0], axis=-1).astype(float)

    rng = np.random.default_rng(0)
    A = np.zeros((4, H))
    A[:, 0] = _SM_F
    n_moves = 20_000
    seen = np.empty((n_moves, 4))
    accepted = 0
    for t in range(n_moves):
        accepted += _split_merge(A, _SM_CODES, conc, alpha, rng, learnt=learnt)
        assert np.array_equal(A.sum(axis=1), _SM_F)
        seen[t] = stats(A)
    _within_batch_errors(seen, p @ stats(states))
    assert 0.1 < accepted / n_moves < 0.9


@pytest.mark.parametrize("with_zeros", [False, True])
def test_split_merge_sweep_draws_v_and_the_profiles_from_the_moved_allocation(
        monkeypatch, with_zeros):
    """After an accepted move the sweep draws V and the profiles from the moved
    allocation, augmented records included: a stand-in move sends every record to the
    last class, and the Beta and Dirichlet draws that follow must see that (the fast
    check of what the slow test below measures statistically)."""
    import sdcbayes.models.latent_class as lc

    rules = [{"a": ["2"], "b": ["1"]}] if with_zeros else None
    model = LatentClassModel(_SM_CODES, _SM_F, [3, 2], keys=["a", "b"], n_classes=3,
                             priors={"phi": {"a": 0.5}}, structural_zeros=rules,
                             levels=[["0", "1", "2"], ["0", "1"]])
    seen = {"moves": 0, "beta_a": [], "beta_b": [], "dirichlet": [], "records": [],
            "alpha": []}

    def merge_all(alloc, codes, conc, alpha, rng, n_moves=1, learnt=None, counts=None):
        seen["records"].append(alloc.sum())
        seen["alpha"].append(alpha)
        total = alloc.sum(axis=1)
        alloc[:] = 0.0
        alloc[:, -1] = total
        seen["moves"] += 1
        return 1

    stick, dirichlet = lc._stick_fractions, lc._log_dirichlet

    def record_stick(rng, a, b):
        if seen["moves"]:
            seen["beta_a"].append(np.array(a))
            seen["beta_b"].append(np.array(b) - seen["alpha"][-1])
        return stick(rng, a, b)

    def record_dirichlet(rng, conc):
        if seen["moves"]:
            seen["dirichlet"].append(np.array(conc))
        return dirichlet(rng, conc)

    monkeypatch.setattr(lc, "_split_merge", merge_all)
    monkeypatch.setattr(lc, "_stick_fractions", record_stick)
    monkeypatch.setattr(lc, "_log_dirichlet", record_dirichlet)
    idata = model.sample(draws=4, tune=0, chains=1, random_seed=0, init="margins",
                         split_merge=1)
    assert seen["moves"] == 4
    np.testing.assert_array_equal(idata.sample_stats["n_classes_used"].values, 1)
    np.testing.assert_array_equal(idata.sample_stats["split_merge_accepted"].values, 1)
    n_aug = idata.sample_stats["n_augmented"].values.ravel()
    np.testing.assert_array_equal(seen["records"], _SM_F.sum() + n_aug)
    assert with_zeros == (n_aug.sum() > 0)
    # V_h ~ Beta(1 + m_h, alpha + sum_{l>h} m_l): the first two classes empty, the last
    # holding every record
    for a, b, total in zip(seen["beta_a"], seen["beta_b"], seen["records"], strict=True):
        np.testing.assert_array_equal(a, [1.0, 1.0])
        np.testing.assert_allclose(b, [total, total])
    assert len(seen["dirichlet"]) == 2 * 4
    for i, conc in enumerate(seen["dirichlet"]):
        j, sweep = i % 2, i // 2
        np.testing.assert_allclose(conc[:, :2], 0.5)  # the empty classes: the prior
        assert conc[:, 2].sum() - 0.5 * conc.shape[0] == _SM_F.sum() + n_aug[sweep]
        if not with_zeros:
            np.testing.assert_allclose(conc[:, 2] - 0.5, np.bincount(
                _SM_CODES[:, j], weights=_SM_F, minlength=conc.shape[0]))


@pytest.mark.slow
def test_gibbs_with_split_merge_visits_the_exact_number_of_classes():
    """The whole sampler with the split-merge moves (then V, alpha and the profiles drawn
    from the new allocation) keeps the posterior: the share of sweeps with 1, 2 and 3
    occupied classes against the exact one of :func:`_allocation_posterior`, alpha held
    at 1 by a Gamma(10^4, 10^4) prior (sd 0.01). Measured: within 1.4 batch-means
    standard errors; drawing the profiles from the counts before the moves, or V from
    the sizes before them, puts it 7 and 13 standard errors off. About 45 s: slow tier.
    """
    conc = [np.full(3, 0.5), np.full(2, 0.5)]
    states, p = _allocation_posterior(conc, 1.0)
    occ = (states.sum(axis=1) > 0).sum(axis=1)
    exact = np.array([p[occ == k].sum() for k in (1, 2, 3)])
    model = LatentClassModel(_SM_CODES, _SM_F, [3, 2], keys=["a", "b"], n_classes=3,
                             priors={"phi": {"a": 0.5},
                                     "alpha": {"dist": "Gamma", "alpha": 1e4, "beta": 1e4}})
    idata = model.sample(draws=20_000, tune=200, chains=4, random_seed=1, store="all",
                         init="margins", split_merge=2)
    k = idata.sample_stats["n_classes_used"].values.ravel()
    _within_batch_errors(np.stack([k == j for j in (1, 2, 3)], axis=-1).astype(float), exact,
                         n_batches=160)
    assert idata.sample_stats["split_merge_accepted"].values.mean() > 0.05


def test_gibbs_with_split_merge_matches_importance_sampling():
    """The sampler with the split-merge moves keeps the joint posterior (the moves, then
    V, alpha, the learnt mass and the profiles from their conditionals): log M_0 and a
    rare cell's pi against prior importance sampling, with a learnt profile mass (the
    moves take the sweep's mass) and three classes, checked as without the moves."""
    m = _learnt({"alpha": {"dist": "Gamma", "alpha": 50.0, "beta": 50.0}})
    m3 = LatentClassModel(m.codes, m.counts, m.n_levels, keys=m.keys, n_classes=3,
                          priors=m.priors)
    is_mean, is_se = _prior_importance(
        m3, lambda w, pi, log_m: np.column_stack([log_m[:, 0], pi[:, 3]]), 200_000,
        np.random.default_rng(1))
    idata = m3.sample(draws=4000, tune=300, chains=2, random_seed=11, store="all",
                      init="margins", split_merge=2)
    assert idata.attrs["split_merge"] == 2
    acc = idata.sample_stats["split_merge_accepted"].values
    assert acc.shape == (2, 4000) and acc.mean() > 0.05
    for i, draws in enumerate((np.log(idata.posterior["phi_mass"].values[..., 0]),
                               idata.posterior["pi"].sel(cell=3).values)):
        batches = draws.reshape(2, 20, -1).mean(axis=2).ravel()
        se = batches.std(ddof=1) / np.sqrt(batches.size)
        assert abs(draws.mean() - is_mean[i]) < 4 * np.hypot(se, is_se[i]), (
            draws.mean(), is_mean[i], se, is_se[i])
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(InputError, match="split_merge"):
            m3.sample(draws=2, tune=0, chains=1, split_merge=bad)


def test_gibbs_with_split_merge_and_structural_zeros_matches_importance_sampling():
    """With structural zeros the moves carry the augmented records, drawn cell by cell:
    pi of two cells against prior importance sampling under the truncated likelihood
    (Manrique-Vallier & Reiter 2014, eq. 2), three classes."""
    from sdcbayes.models.latent_class import _augmented_cells

    model = LatentClassModel(np.array([[0, 0], [0, 1], [1, 0]]), np.array([4, 2, 1]), [2, 2],
                             keys=["k0", "k1"], n_classes=3, priors={"phi": {"a": 1.0}},
                             structural_zeros=[{"k0": [1], "k1": [1]}])
    is_mean, is_se = _prior_importance(model, lambda w, pi: pi[:, [0, 2]], 100_000,
                                       np.random.default_rng(6))
    idata = model.sample(draws=4000, tune=200, chains=2, random_seed=7, store="all",
                         init="margins", split_merge=2)
    assert idata.sample_stats["split_merge_accepted"].values.mean() > 0.05
    assert idata.sample_stats["n_augmented"].values.mean() > 0.5
    for i, cell in enumerate((0, 2)):
        draws = idata.posterior["pi"].sel(cell=cell).values
        batches = draws.reshape(2, 40, -1).mean(axis=2).ravel()
        se = batches.std(ddof=1) / np.sqrt(batches.size)
        assert abs(draws.mean() - is_mean[i]) < 4 * np.hypot(se, is_se[i]), (
            cell, draws.mean(), is_mean[i], se, is_se[i])
    # the augmented cells: every record in its rectangle, its free key drawn from its
    # class's profile (rule: k0 = 2, k1 free; 20,000 records of class 0, none of class 1)
    sz = StructuralZeros([{"k0": ["2"]}], ["k0", "k1"], [["0", "1", "2"], ["0", "1", "2"]])
    phi = [np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]),
           np.array([[0.6, 0.3, 0.1], [0.1, 0.1, 0.8]])]
    cells, alloc = _augmented_cells(np.array([[20_000], [0]]), phi, sz,
                                    np.random.default_rng(0))
    assert sz.contains(cells).all() and (cells[:, 0] == 2).all()
    np.testing.assert_array_equal(alloc.sum(axis=0), [20_000, 0])
    share = np.bincount(cells[:, 1], weights=alloc[:, 0], minlength=3) / 20_000
    assert np.all(np.abs(share - phi[1][0]) < 4 * np.sqrt(phi[1][0] * (1 - phi[1][0]) / 20_000))

def test_start_classes_starts_from_an_em_fit_of_that_many_classes():
    rng = np.random.default_rng(2)
    w, phi = _random_params(rng, 4, [3, 4, 2])
    recs = _simulate_records(rng, w, phi, 400)
    cells, counts = np.unique(recs, axis=0, return_counts=True)
    model = LatentClassModel(cells, counts, [3, 4, 2], n_classes=8)
    fit = model._fit_em_padded(3, 1, np.random.default_rng(0))
    assert fit["w"].shape == (8,) and np.all(fit["w"][3:] == 0)
    assert [p.shape for p in fit["phi"]] == [(8, 3), (8, 4), (8, 2)]
    for p in fit["phi"]:
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
    st = model._init_state(np.random.default_rng(0), "em", 1, start_classes=3)
    assert np.all(stick_breaking_weights(st["V"])[3:] < 1e-10)
    idata = model.sample(draws=3, tune=0, chains=2, random_seed=1, start_classes=3)
    assert idata.sample_stats["n_classes_used"].values[:, 0].max() <= 3
    for bad in (0, 9, 2.5, True):
        with pytest.raises(InputError, match="start_classes"):
            model.sample(draws=3, tune=0, chains=1, start_classes=bad)
    with pytest.raises(InputError, match="init='em'"):
        model.sample(draws=3, tune=0, chains=1, start_classes=2, init="margins")


def test_label_swaps_leave_the_labelling_posterior_unchanged():
    """The label-switching moves keep the posterior of the classes' order.

    Four classes of fixed sizes (6, 3, 2, 1) under truncated stick-breaking with
    alpha = 1.5: integrating V out, an order (m_0, ..., m_3) has posterior mass
    prod_{h<3} B(1 + m_h, alpha + sum_{l>h} m_l) (Ishwaran & James 2001), 24 orders.
    A chain of V | order (its Beta conditionals) and the moves must visit the orders
    with those frequencies. At 20,000 steps the largest error of the 24 is about
    0.006; a sign error in either move's acceptance, or move 2 without its swap of V,
    gives 0.03-0.12.
    """
    from scipy.special import betaln

    from sdcbayes.models.latent_class import _label_swaps

    rng = np.random.default_rng(3)
    counts, alpha, n_iter = (6, 3, 2, 1), 1.5, 20_000
    m = np.array(counts, dtype=float)
    freq: dict[tuple, int] = {}
    for _ in range(n_iter):
        tail = np.cumsum(m[::-1])[::-1]
        V = rng.beta(1.0 + m[:-1], alpha + tail[1:])
        perm, V, _ = _label_swaps(m, V, rng)
        assert sorted(perm) == [0, 1, 2, 3]
        m = m[perm]
        freq[tuple(m)] = freq.get(tuple(m), 0) + 1
    orders = sorted(set(itertools.permutations(counts)))
    logp = np.array([betaln(1.0 + np.array(o[:-1]),
                            alpha + np.cumsum(np.array(o[::-1]))[::-1][1:]).sum()
                     for o in orders])
    exact = np.exp(logp - logp.max())
    exact /= exact.sum()
    seen = np.array([freq.get(tuple(float(x) for x in o), 0) for o in orders]) / n_iter
    assert np.abs(seen - exact).max() < 0.015, np.abs(seen - exact).max()
    # the moves do move: the largest class is not stuck at the front
    assert seen[[o[0] != 6 for o in orders]].sum() > 0.3


def test_resample_draws_the_records_with_replacement():
    # a bootstrap resample: n records, only observed cells, each cell's count
    # Binomial(n, f/n) -- mean f and variance f (1 - f/n) over resamples
    rng = np.random.default_rng(21)
    cells = np.array([[0, 0, 0], [0, 1, 1], [1, 0, 2], [1, 1, 0], [2, 1, 1]])
    counts = np.array([1, 3, 10, 2, 4])
    model = LatentClassModel(cells, counts, [3, 2, 3], n_classes=3,
                             structural_zeros=[{"key0": [2], "key1": [0]}])
    n, R = counts.sum(), 4000
    got = np.zeros((R, counts.size))
    for r in range(R):
        rs = model.resample(rng)
        assert rs.n == n and rs.H == 3 and rs.structural_zeros is model.structural_zeros
        idx = [int(np.flatnonzero((cells == c).all(axis=1))[0]) for c in rs.codes]
        got[r, idx] = rs.counts
    np.testing.assert_allclose(got.mean(axis=0), counts,
                               atol=4 * np.sqrt(counts * (1 - counts / n) / R).max())
    np.testing.assert_allclose(got.var(axis=0), counts * (1 - counts / n), rtol=0.1)
    a, b = model.resample(np.random.default_rng(3)), model.resample(np.random.default_rng(3))
    np.testing.assert_array_equal(a.codes, b.codes)
    np.testing.assert_array_equal(a.counts, b.counts)
    # a design variable's weight classes travel with the records
    weighted = LatentClassModel(np.column_stack([cells, [0, 1, 0, 1, 1]]), counts,
                                [3, 2, 3, 2], n_classes=3, class_weights=[5.0, 20.0])
    rs = weighted.resample(np.random.default_rng(4))
    np.testing.assert_array_equal(rs.class_weights, [5.0, 20.0])
    assert rs.n_keys == 3


def test_bootstrap_chain_start_is_the_em_fit_of_a_resample():
    rng = np.random.default_rng(8)
    n_levels = [4, 3, 5]
    w, phi = _random_params(rng, 3, n_levels, a=0.5)
    frame = pd.DataFrame(_simulate_records(rng, w, phi, 300), columns=["x", "y", "z"])
    model = LatentClassModel.from_frame(frame.astype(str), ["x", "y", "z"], n_classes=6)
    st = model._init_state(np.random.default_rng(5), "bootstrap", 2)
    g = np.random.default_rng(5)
    fit = model.resample(g).fit_em(n_restarts=2, random_seed=g)
    for got, want in zip(st["log_phi"], fit["phi"], strict=True):
        np.testing.assert_allclose(got, np.log(want))
    own = model._init_state(np.random.default_rng(5), "em", 2)
    assert not all(np.allclose(a, b) for a, b in zip(st["log_phi"], own["log_phi"],
                                                      strict=True))
    with pytest.raises(InputError, match="'em', 'bootstrap' or 'margins'"):
        model.sample(draws=5, tune=0, init="resample")


def test_gibbs_from_bootstrap_starts_matches_importance_sampling():
    # the start changes where the chains begin, not what they converge to: pi of a
    # cell (invariant to the class labels) against prior importance sampling
    cells = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    model = LatentClassModel(cells, np.array([4, 2, 1, 3]), [2, 2], keys=["k0", "k1"],
                             n_classes=2, priors={"phi": {"a": 1.0}})

    def functional(w, pi):
        return pi[:, :1]

    is_mean, is_se = _prior_importance(model, functional, 100_000, np.random.default_rng(6))
    idata = model.sample(draws=4000, tune=200, chains=4, random_seed=9, store="all",
                         init="bootstrap")
    draws = idata.posterior["pi"].sel(cell=0).values
    batches = draws.reshape(draws.shape[0], 40, -1).mean(axis=2).ravel()
    se = batches.std(ddof=1) / np.sqrt(batches.size)
    assert abs(draws.mean() - is_mean[0]) < 4 * np.hypot(se, is_se[0]) + 1e-3


def _toy_model():
    """400 records of a 3-class mixture on 4 x 3 x 5 cells, fitted with H = 6."""
    rng = np.random.default_rng(8)
    n_levels = [4, 3, 5]
    w, phi = _random_params(rng, 3, n_levels, a=0.5)
    rec = _simulate_records(rng, w, phi, 400)
    frame = pd.DataFrame(rec, columns=["x", "y", "z"]).astype(str)
    model = LatentClassModel.from_frame(frame, ["x", "y", "z"], n_classes=6)
    return model


def test_sample_returns_labelled_inference_data():
    model = _toy_model()
    idata = model.sample(draws=20, tune=10, chains=2, N=4000, random_seed=0)
    n_su = int((model.counts == 1).sum())
    assert idata.posterior["pi"].dims == ("chain", "draw", "cell")
    assert idata.posterior["pi"].shape == (2, 20, n_su)
    assert idata.posterior["w"].dims == ("chain", "draw", "latent_class")
    np.testing.assert_allclose(idata.posterior["w"].sum("latent_class"), 1.0)
    assert "lam" not in idata.posterior  # (N - n) pi: stored with weight classes only
    assert set(idata.posterior_predictive.data_vars) == {"tau1", "tau2"}
    np.testing.assert_array_equal(idata.posterior["pi"].cell, np.flatnonzero(model.counts == 1))
    np.testing.assert_allclose(
        idata.posterior["tau1_expected"],
        np.exp(-(4000 - 400) * idata.posterior["pi"]).sum("cell"), rtol=1e-12)
    with pytest.raises(InputError, match="population size"):
        model.sample(draws=5, tune=0, N=10)


# ------------------------------------------------------------------ predictive check


def _exact_counts_of_counts(w, phi, n, kappa, sz, key_cols, max_count=6):
    """E[m_j] summed cell by cell over the whole (truncated) cell space."""
    from scipy import stats

    cells = _all_cells([p.shape[1] for p in phi])
    pi = sum(w[h] * np.prod([p[h, cells[:, j]] for j, p in enumerate(phi)], axis=0)
             for h in range(len(w)))
    if sz is not None:
        pi = np.where(sz.contains(cells), 0.0, pi)
    pi = pi / pi.sum()
    # key cells: sum over the design column, if any
    _, key_of = np.unique(cells[:, :key_cols], axis=0, return_inverse=True)
    m = n * np.bincount(key_of.ravel(), weights=pi)
    j = np.arange(1, max_count)[:, None]
    if kappa is None:
        head, tail = stats.poisson.pmf(j, m), stats.poisson.sf(max_count - 1, m)
    else:
        pr = kappa / (kappa + m)
        head, tail = stats.nbinom.pmf(j, kappa, pr), stats.nbinom.sf(max_count - 1, kappa, pr)
    return np.append(head.sum(axis=1), tail.sum())


@pytest.mark.parametrize("kappa, with_zeros, design", [(None, True, False), (0.7, True, False),
                                                       (2.5, False, True)])
def test_replicate_counts_of_counts_match_the_cell_by_cell_expectation(kappa, with_zeros,
                                                                         design):
    # the replicate is drawn record by record (thinned to clusters of log-series sizes
    # with kappa); its mean must equal the sum over every cell of P(f_k = j) under
    # Po(n pi*_k) or NegBin(kappa, mean n pi*_k), computed here without simulation
    rng = np.random.default_rng(11)
    n_levels = [3, 4, 2] if design else [3, 4]
    w, phi = _random_params(rng, 3, n_levels, a=1.0)
    sz = (StructuralZeros([{"x": ["2"], "y": ["0", "3"]}], ["x", "y"],
                          [["0", "1", "2"], ["0", "1", "2", "3"]]) if with_zeros else None)
    n, reps = 15.0, 6000
    sims = np.array([replicate_counts_of_counts(w, phi, n, rng, kappa=kappa,
                                                structural_zeros=sz, design=design)
                     for _ in range(reps)])
    exact = _exact_counts_of_counts(w, phi, n, kappa, sz, key_cols=2)
    z = (sims.mean(axis=0) - exact) / (sims.std(axis=0) / np.sqrt(reps))
    assert np.all(np.abs(z) < 4), (exact, sims.mean(axis=0), z)
    # the expected size is n (the rates of f_k sum to n over the allowed key cells)
    assert exact[:-1] @ np.arange(1, 6) < n


def test_uniques_kappa_reads_the_cells_overdispersion_around_known_probabilities():
    from scipy import stats

    from sdcbayes.models.latent_class import expected_sample_uniques, uniques_kappa

    rng = np.random.default_rng(0)
    K, n = 100_000, 4000.0
    pi = rng.dirichlet(np.full(K, 0.05))
    # the estimator's expectation over f is the exact sum over every cell of P(f_k = 1)
    for kappa in (0.4, np.inf):
        exact = (stats.poisson.pmf(1, n * pi) if not np.isfinite(kappa)
                 else stats.nbinom.pmf(1, kappa, kappa / (kappa + n * pi))).sum()
        assert expected_sample_uniques(pi[None], n * pi, n, kappa) == pytest.approx(exact)
    reads = {}
    for k0 in (0.4, np.inf):
        est = []
        for _ in range(5):
            u = rng.gamma(k0, 1 / k0, K) if np.isfinite(k0) else 1.0
            f = rng.poisson(n * pi * u)
            seen = f > 0
            est.append(uniques_kappa(pi[seen][None], f[seen], n))
        reads[k0] = np.array(est)
    assert abs(np.median(np.log(reads[0.4])) - np.log(0.4)) < 0.2, reads
    assert np.median(reads[np.inf]) > 20, reads


def test_sample_ppc_keeps_the_draws_and_feeds_predictive_check():
    from sdcbayes.inference import predictive_check

    model = _toy_model()
    kw = dict(draws=20, tune=10, chains=2, N=4000, random_seed=0, overdispersion=3.0)
    plain = model.sample(**kw)
    checked = model.sample(**kw, ppc=7)
    # the replicates draw from a stream of their own: the chains are unchanged
    for v in ("pi", "kappa", "tau1_expected"):
        np.testing.assert_array_equal(plain.posterior[v], checked.posterior[v])
    np.testing.assert_array_equal(plain.posterior_predictive["tau1"],
                                  checked.posterior_predictive["tau1"])
    m = checked.posterior_predictive["m"]
    assert m.dims == ("chain", "ppc_draw", "count") and m.shape == (2, 7, 6)
    np.testing.assert_array_equal(m["ppc_draw"], [0, 3, 6, 10, 13, 16, 19])
    # the same seed gives the same replicates
    np.testing.assert_array_equal(model.sample(**kw, ppc=7).posterior_predictive["m"], m)
    obs = model.observed()["m"]
    f = model.counts.astype(int)
    assert int(obs.sel(count=1)) == int((f == 1).sum())
    assert int((obs * obs["count"]).sum()) == 400
    table = predictive_check(model, checked, counts=(1, 2, 3))
    assert list(table.index) == [1, 2, 3]
    np.testing.assert_allclose(table["mean"], m.sel(count=[1, 2, 3]).mean(("chain", "ppc_draw")))
    assert table.loc[1, "observed"] == int((f == 1).sum())
    for bad in (-1, 1.5, True):
        with pytest.raises(InputError, match="ppc must be an integer"):
            model.sample(draws=5, tune=0, ppc=bad)


def test_ppc_flags_clumping_that_poisson_cells_cannot_reproduce():
    # records written twice (pairs of identical records) give the sample twice the
    # doubles a smooth mixture with Poisson cells predicts: the check must say so,
    # while on the mixture's own records it must not
    rng = np.random.default_rng(21)
    n_levels = [6, 5, 7, 4]
    w, phi = _random_params(rng, 3, n_levels, a=0.6)
    own = _simulate_records(rng, w, phi, 600)
    twins = np.vstack([own[:300], own[:300]])
    p = {}
    for name, rec in (("own", own), ("twins", twins)):
        frame = pd.DataFrame(rec, columns=list("abcd")).astype(str)
        model = LatentClassModel.from_frame(frame, list("abcd"), n_classes=6)
        idata = model.sample(draws=40, tune=40, chains=2, random_seed=1, ppc=40)
        from sdcbayes.inference import predictive_check

        p[name] = predictive_check(model, idata, counts=(1, 2))["p_value"]
    assert p["twins"].loc[2] < 0.001 and p["twins"].loc[1] > 0.999
    # a posterior predictive p-value is not uniform even in the model's own world (over
    # three data seeds, 0.02-0.94 for m1 and m2 after 40 sweeps): only the extremes flag
    assert 0.005 < p["own"].loc[1] < 0.995 and 0.005 < p["own"].loc[2] < 0.995


# ------------------------------------------------------------------ risk formulas


def test_risk_formulas_match_simulated_populations_and_samples():
    # F_k ~ Po(N pi_k), Bernoulli sampling at n/N: among samples with f_k = 1,
    # F_k - 1 ~ Po((N - n) pi_k) exactly (Poisson thinning).
    rng = np.random.default_rng(9)
    N, n = 50_000, 2_500
    pi = np.array([2e-6, 2e-5, 6e-5, 2e-4])
    reps = 400_000
    F = rng.poisson(N * pi, size=(reps, pi.size))
    f = rng.binomial(F, n / N)
    lam = (N - n) * pi
    for k in range(pi.size):
        sel = f[:, k] == 1
        Fk = F[sel, k]
        se = 1.0 / np.sqrt(sel.sum())
        assert (Fk == 1).mean() == pytest.approx(prob_population_unique(lam[k]), abs=4 * se)
        assert (1.0 / Fk).mean() == pytest.approx(expected_inverse_frequency(lam[k]), abs=4 * se)
    # the predictive draws of tau are unbiased for the sum of the closed forms
    lam2 = rng.gamma(0.5, 2.0, size=300)
    t1, t2 = simulate_tau(np.broadcast_to(lam2, (20_000, 300)), rng)
    assert t1.mean() == pytest.approx(np.exp(-lam2).sum(), abs=4 * t1.std() / np.sqrt(20_000))
    assert t2.mean() == pytest.approx(expected_inverse_frequency(lam2).sum(),
                                      abs=4 * t2.std() / np.sqrt(20_000))


def test_inverse_moment_general_f_matches_series():
    from scipy.stats import poisson

    x = np.arange(400)
    for f in (1, 2, 3, 7):
        for lam in (1e-8, 0.3, 4.0, 40.0):
            brute = (poisson.pmf(x, lam) / (f + x)).sum()
            assert _expected_inverse_frequency_f(f, lam) == pytest.approx(brute, rel=1e-10)


def test_marginal_phi_prior_concentrations_and_checks():
    # 3 keys; k0 has a codebook level (2) the sample lacks
    cells = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 1]])
    counts = np.array([5, 2, 3])
    kw = dict(keys=["k0", "k1", "k2"], n_classes=2)
    m = LatentClassModel(cells, counts, [3, 2, 2], priors={"phi": {"a": "marginal",
                                                                  "mass": 11.0}}, **kw)
    # a_jl = M (m_jl + 1/L_j) / (n + 1), n = 10: k0 counts 8, 2, 0 of L = 3
    assert np.allclose(m.phi_concentration(0), 11.0 * (np.array([8, 2, 0]) + 1 / 3) / 11.0)
    assert np.allclose(m.phi_concentration(2), [2.5, 8.5])
    assert m.phi_concentration(0).sum() == pytest.approx(11.0)  # total mass M per key
    inv = LatentClassModel(cells, counts, [3, 2, 2], **kw)
    assert np.allclose(inv.phi_concentration(0), 1 / 3)     # the default, unchanged
    # the PyMC graph takes the per-level concentrations
    import pymc as pm
    with m.build():
        a_graph = pm.draw(pm.modelcontext(None)["phi_k0"].owner.inputs[-1])
    assert np.allclose(a_graph, np.tile(m.phi_concentration(0), (2, 1)))
    for bad in ({"a": "marginal"}, {"a": "marginal", "mass": 0}, {"a": 1.0, "mass": 2.0},
                {"a": "marginal", "mass": True}, {"a": "uniform"}, {"a": 1.0, "mass": "learn"},
                {"a": "marginal", "mass": "learnt"}):
        with pytest.raises(InputError, match="prior 'phi'"):
            LatentClassModel(cells, counts, [3, 2, 2], priors={"phi": bad}, **kw)


def test_gibbs_with_marginal_phi_prior_matches_importance_sampling():
    # per-level concentrations a_jl = 2 (m_jl + 1/L_j) / (n + 1): k0 has 8, 1, 1 of n = 10
    # -> a = (1.52, 0.24, 0.24). The posterior mean of the rare cell (1, 0)'s pi by the
    # Gibbs sampler against prior importance sampling; the uniform prior a = 1 gives a
    # different answer (0.108 against 0.075), so a sampler that ignored the per-level
    # concentrations would fail
    cells = np.array([[0, 0], [0, 1], [1, 0], [2, 1]])
    counts = np.array([6, 2, 1, 1])
    means = {}
    for name, prior in (("uniform", {"a": 1.0}), ("marginal", {"a": "marginal", "mass": 2.0})):
        model = LatentClassModel(cells, counts, [3, 2], keys=["k0", "k1"], n_classes=2,
                                 priors={"phi": prior})
        means[name] = _prior_importance(model, lambda w, pi: pi[:, 2:3], 100_000,
                                        np.random.default_rng(6))
    (is_mean,), (is_se,) = means["marginal"]
    assert abs(means["uniform"][0][0] - is_mean) > 20 * is_se
    idata = model.sample(draws=4000, tune=200, chains=2, random_seed=7, store="all",
                         init="margins")
    draws = idata.posterior["pi"].sel(cell=2).values
    batches = draws.reshape(draws.shape[0], 40, -1).mean(axis=2).ravel()
    se = batches.std(ddof=1) / np.sqrt(batches.size)
    assert abs(draws.mean() - is_mean) < 4 * np.hypot(se, is_se) + 1e-3, (draws.mean(), is_mean)


def test_profile_mass_loglik_matches_monte_carlo_integration():
    # the Dirichlet-multinomial marginal of class-by-level counts against the mean of
    # prod_l phi_l^c_l over Dirichlet(M eta) draws, class by class; an empty class adds 0
    rng = np.random.default_rng(0)
    c = np.array([[3.0, 0.0, 0.0], [1.0, 2.0, 0.0], [0.0, 1.0, 0.0]])
    eta = np.array([0.5, 0.3, 0.2])
    got = profile_mass_loglik(c, eta, np.array([0.5, 2.0, 20.0]))
    for M, g in zip((0.5, 2.0, 20.0), got, strict=True):
        phi = rng.dirichlet(M * eta, size=(400_000, 2))
        mc = sum(np.log(np.mean(np.prod(phi[:, h, :] ** c[:, h], axis=1))) for h in range(2))
        assert g == pytest.approx(mc, abs=0.02), M
    assert np.allclose(profile_mass_loglik(c[:, :2], eta), profile_mass_loglik(c, eta))


def _learnt(priors=None, **kw):
    cells = np.array([[0, 0], [1, 1], [2, 2], [0, 1], [2, 0], [1, 2]])
    counts = np.array([4, 4, 3, 1, 1, 1])
    return LatentClassModel(cells, counts, [3, 3], keys=["a", "b"], n_classes=2,
                            priors={"phi": {"a": "marginal", "mass": "learn"}, **(priors or {})},
                            **kw)


def test_learnt_mass_draws_follow_its_conditional():
    # the Gibbs step draws M_j from exp(profile_mass_loglik) on the grid (uniform prior)
    m = _learnt()
    c = np.array([[6.0, 0.0], [1.0, 4.0], [0.0, 2.0]])
    lp = profile_mass_loglik(c, m.phi_base(0))
    p = np.exp(lp - lp.max())
    p /= p.sum()
    rng = np.random.default_rng(3)
    draws = np.array([m._learn_mass(c, 0, rng) for _ in range(20_000)])
    freq = np.array([(draws == g).mean() for g in PHI_MASS_GRID])
    assert np.abs(freq - p).max() < 4 * np.sqrt(p.max() / 20_000)
    assert m._learn_mass(c, 0) == PHI_MASS_GRID[np.argmax(lp)]      # EM: the mode


def test_gibbs_with_learnt_mass_matches_importance_sampling():
    # M_j uniform on PHI_MASS_GRID, profiles Dirichlet(M_j eta_j): the posterior mean of
    # log M_0 and of a rare cell's pi by prior importance sampling against the Gibbs
    # sampler. The data move log M from its prior mean 3.8 to about 5.4, so a sampler
    # that kept M at its start (log 16 = 2.8) or ignored the counts would fail. alpha is
    # held near 1 so that the two classes' weights mix (the sampler switches slowly
    # between one and two occupied classes when alpha may be tiny)
    m = _learnt({"alpha": {"dist": "Gamma", "alpha": 50.0, "beta": 50.0}})
    is_mean, is_se = _prior_importance(
        m, lambda w, pi, log_m: np.column_stack([log_m[:, 0], pi[:, 3]]), 200_000,
        np.random.default_rng(1))
    idata = m.sample(draws=8000, tune=300, chains=2, random_seed=11, store="all",
                     init="margins")
    for i, draws in enumerate((np.log(idata.posterior["phi_mass"].values[..., 0]),
                               idata.posterior["pi"].sel(cell=3).values)):
        batches = draws.reshape(2, 20, -1).mean(axis=2).ravel()
        se = batches.std(ddof=1) / np.sqrt(batches.size)
        assert abs(draws.mean() - is_mean[i]) < 4 * np.hypot(se, is_se[i]), (
            draws.mean(), is_mean[i])
    assert np.log(idata.posterior["phi_mass"].values).mean() > 4.8
    assert idata.posterior["phi_mass"].dims == ("chain", "draw", "key")


def _class_and_marginal_keys():
    """Two classes: k0 and k2 follow the class, k1 (20 levels) is the same in both."""
    rng = np.random.default_rng(5)
    cls = rng.integers(0, 2, size=3000)
    k0 = np.where(cls == 0, rng.choice(4, size=3000, p=[0.7, 0.2, 0.05, 0.05]),
                  rng.choice(4, size=3000, p=[0.05, 0.05, 0.2, 0.7]))
    k2 = np.where(cls == 0, rng.integers(0, 2, size=3000), 2 + rng.integers(0, 2, size=3000))
    k1 = rng.choice(20, size=3000, p=rng.dirichlet(np.full(20, 2.0)))
    frame = pd.DataFrame({"k0": k0, "k1": k1, "k2": k2}).astype(str)
    return frame, LatentClassModel.from_frame(
        frame, ["k0", "k1", "k2"], n_classes=5,
        priors={"phi": {"a": "marginal", "mass": "learn"}})


def test_learnt_mass_separates_keys_that_follow_the_classes_from_those_that_do_not():
    # two classes: key 0 follows the class, key 1 (20 levels) is the same in both
    # (drawn from one distribution), so the classes' profiles of key 1 are the marginal:
    # EM and the Gibbs sampler put a small mass on key 0 and a large one on key 1
    frame, m = _class_and_marginal_keys()
    em = m.fit_em(n_restarts=2, random_seed=0)
    assert em["phi_mass"][1] >= 256 and em["phi_mass"][0] <= 16, em["phi_mass"]
    idata = m.sample(draws=100, tune=100, chains=1, random_seed=0)
    med = idata.posterior["phi_mass"].median(("chain", "draw")).values
    assert med[1] >= 256 and med[0] <= 16, med
    # the inverse prior stores no mass; the PyMC graph makes M_j a variable
    assert LatentClassModel.from_frame(frame, ["k0", "k1", "k2"], n_classes=5,
                                       priors={"phi": {"a": "inverse"}}).fit_em(
        n_restarts=1, random_seed=0)["phi_mass"] is None
    with m.build() as pm_model:
        names = {v.name for v in pm_model.free_RVs}
    assert {"log_phi_mass_k0", "log_phi_mass_k1", "log_phi_mass_k2"} <= names


def test_em_learns_the_mass_also_where_the_classes_have_not_converged():
    # the data of the test above: stopped after 30 sweeps at the starting mass (the
    # classes formed, not yet converged: 41 sweeps), learn_mass="always" still learns M
    # in a phase of its own; with one budget for both phases (the default) M stays at
    # the starting mass (16) for every key, as on Adult 6 keys at 5% (300-400 sweeps)
    _, m = _class_and_marginal_keys()
    em = m.fit_em(n_restarts=1, random_seed=0, max_iter=30, learn_mass="always")
    assert em["n_iter"] > 30  # the learning phase ran
    assert em["phi_mass"][1] >= 256 and em["phi_mass"][0] <= 16, em["phi_mass"]
    # the default (EM_LEARN_MASS, what the measured results used): not converged at the
    # starting mass within max_iter, M stays there
    assert EM_LEARN_MASS == "converged"
    em = m.fit_em(n_restarts=1, random_seed=0, max_iter=30)
    np.testing.assert_array_equal(em["phi_mass"], PHI_MASS_START)
    with pytest.raises(InputError, match="learn_mass"):
        m.fit_em(n_restarts=1, learn_mass="sometimes")


def test_min_levels_keeps_the_inverse_prior_on_keys_with_few_levels():
    # min_levels: only keys with at least that many levels are centred on the marginal
    # (and learn their mass); the others keep 1/L_j and their mass is not drawn
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"k0": rng.integers(0, 25, 400), "k1": rng.integers(0, 3, 400),
                          "k2": rng.integers(0, 4, 400)}).astype(str)
    keys = ["k0", "k1", "k2"]
    hyb = LatentClassModel.from_frame(frame, keys, n_classes=4, priors={"phi": {
        "a": "marginal", "mass": "learn", "min_levels": 20}})
    inv = LatentClassModel.from_frame(frame, keys, n_classes=4, priors={"phi": {"a": "inverse"}})
    assert [hyb.learns_mass(j) for j in range(3)] == [True, False, False]
    for j in (1, 2):
        np.testing.assert_array_equal(hyb.phi_concentration(j), inv.phi_concentration(j))
    idata = hyb.sample(draws=30, tune=20, chains=1, random_seed=1)
    pm_ = idata.posterior["phi_mass"].values[0]
    assert np.all(pm_[:, 1:] == 1.0) and np.unique(pm_[:, 0]).size > 1
    # above every key's level count nothing is learnt: draws identical to the default's
    none = LatentClassModel.from_frame(frame, keys, n_classes=4, priors={"phi": {
        "a": "marginal", "mass": "learn", "min_levels": 26}})
    assert not none.learns_phi_mass
    a = none.sample(draws=20, tune=10, chains=1, random_seed=3).posterior["pi"].values
    b = inv.sample(draws=20, tune=10, chains=1, random_seed=3).posterior["pi"].values
    np.testing.assert_array_equal(a, b)
    with pytest.raises(InputError, match="prior 'phi'"):
        LatentClassModel.from_frame(frame, keys, priors={"phi": {
            "a": "marginal", "mass": "learn", "min_levels": 2.5}})


def test_small_mass_centres_the_keys_with_few_levels_on_their_marginal_with_a_fixed_mass():
    # small_mass: the keys below min_levels are centred on their sample marginal with that
    # fixed total mass (not learnt); the keys at or above it are as without it
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"k0": rng.integers(0, 25, 400),
                          "k1": rng.choice(3, 400, p=[0.7, 0.2, 0.1]),
                          "k2": rng.integers(0, 4, 400)}).astype(str)
    keys = ["k0", "k1", "k2"]
    hyb = LatentClassModel.from_frame(frame, keys, n_classes=4, priors={"phi": {
        "a": "marginal", "mass": "learn", "min_levels": 20}})
    small = LatentClassModel.from_frame(frame, keys, n_classes=4, priors={"phi": {
        "a": "marginal", "mass": "learn", "min_levels": 20, "small_mass": 4}})
    assert [small.learns_mass(j) for j in range(3)] == [True, False, False]
    np.testing.assert_array_equal(small.phi_concentration(0), hyb.phi_concentration(0))
    for j in (1, 2):
        m = frame[keys[j]].value_counts().reindex(small.levels[j]).to_numpy(float)
        L = m.size
        np.testing.assert_allclose(small.phi_concentration(j), 4 * (m + 1 / L) / (400 + 1))
        assert small.phi_concentration(j).sum() == pytest.approx(4.0)
    # the skewed key's common level gets most of the mass, unlike 1/L_j
    assert small.phi_concentration(1)[0] > 2.5 > hyb.phi_concentration(1)[0] * 3
    idata = small.sample(draws=20, tune=10, chains=1, random_seed=1)
    pm_ = idata.posterior["phi_mass"].values[0]
    np.testing.assert_allclose(pm_[:, 1:], 4.0)  # fixed, stored as the key's total mass
    assert json.loads(idata.attrs["priors"])["phi"]["small_mass"] == 4
    # the harness's --phi-a marginal:learn:20:4 is this prior
    from benchtools import load_benchmark

    bench = load_benchmark("latent_class_accuracy.py")
    assert bench.phi_prior_spec("marginal:learn:20:4") == {
        "a": "marginal", "mass": "learn", "min_levels": 20, "small_mass": 4.0}
    assert bench.phi_prior_spec("marginal:learn:20") == {
        "a": "marginal", "mass": "learn", "min_levels": 20}
    assert {**bench.phi_prior_spec("default"), "small_mass": 4} == small.priors["phi"]
    for bad in (0, -1, "learn", True):
        with pytest.raises(InputError, match="small_mass"):
            LatentClassModel.from_frame(frame, keys, priors={"phi": {
                "a": "marginal", "mass": "learn", "min_levels": 20, "small_mass": bad}})


def test_the_default_profile_prior_learns_the_mass_of_keys_with_20_levels_or_more():
    # the default is the hybrid prior (PHI_PRIOR_DEFAULT); {"a": "inverse"} (no dist)
    # replaces it whole, without inheriting its mass or level threshold
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"k0": rng.integers(0, 20, 300), "k1": rng.integers(0, 19, 300),
                          "k2": rng.integers(0, 3, 300)}).astype(str)
    keys = ["k0", "k1", "k2"]
    levels = {k: [str(x) for x in range(L)] for k, L in zip(keys, (20, 19, 3), strict=True)}
    default = LatentClassModel.from_frame(frame, keys, n_classes=4, levels=levels)
    assert default.priors["phi"] == PHI_PRIOR_DEFAULT
    assert [default.learns_mass(j) for j in range(3)] == [True, False, False]
    inv = LatentClassModel.from_frame(frame, keys, n_classes=4, levels=levels,
                                      priors={"phi": {"a": "inverse"}})
    assert inv.priors["phi"] == {"dist": "Dirichlet", "a": "inverse"}
    assert not inv.learns_phi_mass
    np.testing.assert_allclose(inv.phi_concentration(0), np.full(20, 1 / 20))
    # the default's key 0 is centred on its sample marginal, the others as the inverse's
    m0 = np.bincount(frame.k0.astype(int), minlength=20)
    np.testing.assert_allclose(default.phi_base(0), (m0 + 1 / 20) / (m0.sum() + 1))
    for j in (1, 2):
        np.testing.assert_array_equal(default.phi_concentration(j), inv.phi_concentration(j))
    # a number per level replaces it whole too
    assert LatentClassModel.from_frame(frame, keys, n_classes=4, priors={
        "phi": {"a": 0.5}}).priors["phi"] == {"dist": "Dirichlet", "a": 0.5}


def test_benchmark_overdispersion_option_reads_cv_none_or_a_kappa():
    import argparse

    from benchtools import load_benchmark

    from sdcbayes.models.latent_class import kappa_prior

    bench = load_benchmark("latent_class_accuracy.py")
    assert bench._overdispersion("cv") == "cv"
    assert bench._overdispersion("none") is None
    assert bench._overdispersion("0.45") == 0.45
    for bad in ("0", "-1", "nan", "poisson", "log-normal:1", "log-normal:0:-1"):
        with pytest.raises(argparse.ArgumentTypeError, match="kappa > 0|log-normal"):
            bench._overdispersion(bad)
    # log kappa normal, as weights on the grid (no cross-validation); and as the CV's prior
    od = bench._overdispersion("log-normal:-0.5:0.8")
    assert od["method"] == "log-normal" and od["prior"] == [-0.5, 0.8]
    np.testing.assert_allclose(od["weights"],
                               kappa_prior(od["grid"], ("log-normal", (-0.5, 0.8))))
    assert bench._kappa_prior("log-normal:-0.5:0.8") == ("log-normal", (-0.5, 0.8))
    assert bench._kappa_prior("half-cauchy:2") == ("half-cauchy", 2.0)
    with pytest.raises(SystemExit, match="log-normal"):
        bench._kappa_prior("log-normal:x:1")


def test_benchmark_reads_the_classes_occupied_from_the_notes():
    from benchtools import load_benchmark

    bench = load_benchmark("latent_class_accuracy.py")
    note = ("rhat tau1 1.001 tau2 1.000; classes occupied {} of 30 (all in {}%); "
            "0 structural-zero rules; n=9")
    rows = pd.DataFrame({
        "design": ["a", "a", "a", "b", "c"], "method": "latent-class",
        "quantity": ["tau1", "tau1", "tau2", "tau1", "tau1"],
        "note": [note.format(27.5, 10), note.format(30.0, 90), note.format(1.0, 0),
                 note.format(12.25, 0), "rhat tau1 1.001 tau2 1.000; n=9"]})
    got = bench.classes_occupied(rows)
    assert list(got.index) == ["a", "b"]  # c's note (an older run) carries none
    assert got.loc["a"].tolist() == [28.75, 30.0, 50.0]
    assert got.loc["b"].tolist() == [12.25, 30.0, 0.0]


def test_sweep_kernels_equal_the_plain_formulas_bit_for_bit():
    """The Gibbs sweep's fast kernels (contiguous gathers, one exponential per entry, one
    stacked sparse product) give the plain formulas' numbers exactly, so speeding them up
    left every stored draw as it was."""
    from scipy.special import logsumexp as scipy_logsumexp

    from sdcbayes.models.latent_class import _log_cell_terms, _normalise_rows

    rng = np.random.default_rng(11)
    n_levels = [7, 2, 13, 4]
    H, K = 6, 300
    codes = np.unique(np.column_stack([rng.integers(0, L, size=K) for L in n_levels]), axis=0)
    _, phi = _random_params(rng, H, n_levels, a=0.3)
    log_phi = [np.log(p) for p in phi]
    plain = np.zeros((codes.shape[0], H))
    for j, lp in enumerate(log_phi):
        plain += lp.T[codes[:, j]]
    terms = _log_cell_terms(codes, log_phi)
    np.testing.assert_array_equal(terms, plain)
    # a class of weight 0 (-inf) stays out of every row's sum and gets probability 0
    with np.errstate(divide="ignore"):
        lw = np.log(np.array([0.3, 0.2, 0.0, 0.25, 0.15, 0.1]))
    lp = plain + lw
    lse, q = _normalise_rows(lp.copy())
    np.testing.assert_allclose(lse, scipy_logsumexp(lp, axis=1), rtol=1e-13)
    np.testing.assert_allclose(q, np.exp(lp - lse[:, None]), rtol=1e-12, atol=0)
    np.testing.assert_allclose(q.sum(axis=1), 1.0, rtol=1e-14)
    assert (q[:, 2] == 0).all()
    # per-class level counts from one stacked product equal one product per key
    counts = rng.integers(1, 4, size=codes.shape[0])
    model = LatentClassModel(codes, counts, n_levels, n_classes=H)
    alloc = rng.multinomial(counts, q).astype(float)
    stacked = model._level_counter()(alloc)
    for j, onehot in enumerate(model._onehots()):
        np.testing.assert_array_equal(stacked[j], onehot @ alloc)
        assert stacked[j].shape == (n_levels[j], H)
        np.testing.assert_array_equal(stacked[j].sum(axis=0), alloc.sum(axis=0))


def test_harness_method_notes_the_predictive_check_and_the_harness_summarises_it():
    from benchtools import load_benchmark

    from sdcbayes.datasets import DEMO_KEYS, simulate_population
    from sdcbayes.validation import Design, Population, latent_class_method, run_design

    pop = Population(name="tiny", frame=simulate_population(n_households=800, seed=5),
                     keys=tuple(DEMO_KEYS))
    lc = latent_class_method(n_classes=6, draws=10, tune=10, chains=1, em_restarts=1,
                             structural_zeros=None, ppc=5)
    res = run_design(Design(pop, 0.2, kind="srs", replicates=2), {"latent-class": lc})
    note = res.query("quantity == 'tau1'").note.iloc[0]
    assert "ppc m1 " in note and " m6+ " in note
    bench = load_benchmark("latent_class_accuracy.py")
    rows = bench.ppc_notes(res)
    assert len(rows) == 2 * 6 and set(rows.m) == {"m1", "m2", "m3", "m4", "m5", "m6+"}
    assert rows.p.between(0, 1).all()
    # the observed counts of counts are the sample's: m1 is its number of sample uniques
    su = res.query("quantity == 'tau1'").set_index("replicate").n_sample_uniques
    m1 = rows[rows.m == "m1"].set_index("replicate").observed
    assert (m1 == su.loc[m1.index]).all()
    summ = bench.ppc_summary(res)
    np.testing.assert_allclose(summ.loc[("tiny/srs/20%", "m1"), "observed"], m1.mean())
    assert summ["samples"].eq(2).all()
    small = summ.predicted < 5  # a small discrete count: no tail shares
    assert summ.loc[small, "p > 0.95"].isna().all() and summ.loc[~small, "p > 0.95"].notna().all()
    assert small.any() and (~small).any()
    with pytest.raises(SystemExit):
        bench.main(["--ppc", "-1"])


def test_harness_method_passes_split_merge_and_notes_the_accepted_moves():
    from sdcbayes.datasets import DEMO_KEYS, simulate_population
    from sdcbayes.validation import Design, Population, latent_class_method, run_design

    pop = Population(name="tiny", frame=simulate_population(n_households=800, seed=5),
                     keys=tuple(DEMO_KEYS))
    notes = {}
    for sm in (0, 3):
        lc = latent_class_method(n_classes=6, draws=10, tune=10, chains=1, em_restarts=1,
                                 structural_zeros=None, split_merge=sm)
        res = run_design(Design(pop, 0.2, kind="srs", replicates=1), {"lc": lc})
        notes[sm] = res.query("quantity == 'tau1'").note.iloc[0]
    assert "split-merge accepted" in notes[3] and "per sweep" in notes[3]
    assert "split-merge" not in notes[0]
    from benchtools import load_benchmark

    with pytest.raises(SystemExit):
        load_benchmark("latent_class_accuracy.py").main(["--split-merge", "-1"])
