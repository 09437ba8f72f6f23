"""Unequal weights in the latent-class model (models/latent_class.py, "Unequal weights").

The records' weight class is a design variable of the mixture and the population
is extrapolated class by class, lambda_k = n sum_g pi_kg (w_g - 1). Checked: equal
weights give exactly the model without weights (simple random sampling); the
class-by-class excess against a brute-force sum over the whole cell space (whose
total is N - n when the fit reproduces the class sizes); the Gibbs draws' lam
against the closed form at the same parameters; and on a simulated population
whose over-sampled stratum differs in its keys, that the weighted model recovers
tau1 where one extrapolation N/n for all understates it. The cross-validation's
weighted parts (``parts="weights"``): part sizes whose rest mirrors the population's
class rates, and, with every part fitted exactly, a held-out prediction that matches
the count it predicts only when made class by class.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.microdata import Microdata
from sdcbayes.models.latent_class import (
    MAX_WEIGHT_CLASSES,
    WEIGHT_BINS,
    WEIGHT_CLASS_KEY,
    LatentClassModel,
    _weighted_part_sizes,
    overdispersion_cv,
    weight_classes,
)
from sdcbayes.validation import latent_class_method


def test_weight_classes_are_the_strata_or_quantile_bins():
    assert weight_classes(np.full(7, 12.5)) is None  # SRS: no design variable
    w = np.array([4.0, 36.0, 4.0, 36.0, 36.0, 10.0])
    index, cw, labels = weight_classes(w)
    np.testing.assert_array_equal(cw, [4.0, 10.0, 36.0])
    np.testing.assert_array_equal(cw[index], w)
    assert len(labels) == 3
    rng = np.random.default_rng(0)
    wc = rng.lognormal(3.0, 0.5, 1000)  # calibrated weights: all distinct
    index, cw, _ = weight_classes(wc)
    assert cw.size == WEIGHT_BINS > 1
    sizes = np.bincount(index)
    assert sizes.min() >= 1000 // WEIGHT_BINS - 2  # quantile bins: equal sizes
    # each class carries its Horvitz-Thompson ratio N_g / n_g and the classes are ordered
    np.testing.assert_allclose(cw, [wc[index == g].mean() for g in range(cw.size)])
    assert np.all(np.diff(cw) > 0)
    many = np.repeat(np.arange(1.0, MAX_WEIGHT_CLASSES + 2), 3)
    assert weight_classes(many)[1].size == WEIGHT_BINS
    for bad in ([1.0, np.nan], [1.0, 0.0], [2.0, -1.0]):
        with pytest.raises(InputError, match="positive and finite"):
            weight_classes(bad)


def _frame(seed=0, n=400):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.choice(list("pq"), n),
                         "c": rng.choice(list("uvwst"), n, p=[.4, .3, .2, .07, .03])})


def test_equal_weights_are_the_model_without_weights():
    frame = _frame()
    plain = LatentClassModel.from_frame(frame, ["a", "b", "c"], n_classes=4)
    equal = LatentClassModel.from_frame(frame.assign(w=25.0), ["a", "b", "c"], n_classes=4,
                                        weights="w")
    assert equal.class_weights is None and equal.keys == ["a", "b", "c"]
    np.testing.assert_array_equal(plain.codes, equal.codes)
    a = plain.sample(draws=20, tune=10, chains=1, N=10_000, random_seed=3)
    b = equal.sample(draws=20, tune=10, chains=1, N=10_000, random_seed=3)
    for v in ("pi", "tau1_expected"):
        np.testing.assert_array_equal(a.posterior[v].values, b.posterior[v].values)
    assert "lam" not in a.posterior and "lam" not in b.posterior  # no weight classes


@pytest.fixture(scope="module")
def design_model():
    frame = _frame(seed=1)
    # stratum 1 over-sampled (weight 5), stratum 0 under-sampled (weight 40)
    w = np.where(frame["c"].isin(["s", "t"]) | (np.arange(len(frame)) % 3 == 0), 5.0, 40.0)
    model = LatentClassModel.from_frame(frame, ["a", "b", "c"], n_classes=4, weights=w)
    return frame, w, model


def test_design_model_key_cells(design_model):
    frame, w, model = design_model
    assert model.keys[-1] == WEIGHT_CLASS_KEY and model.n_keys == 3
    np.testing.assert_array_equal(model.class_weights, [5.0, 40.0])
    keys_only = LatentClassModel.from_frame(frame, ["a", "b", "c"], n_classes=4)
    # the key cells are the cells of the model without weights, in the same order
    np.testing.assert_array_equal(model.key_codes, keys_only.codes)
    np.testing.assert_array_equal(model.key_counts, keys_only.counts)
    assert model.codes.shape[0] > model.key_codes.shape[0]  # some cells span both classes
    assert model.data_summary()["weight_classes"] == [5.0, 40.0]
    assert model.data_summary()["keys"] == ["a", "b", "c"]
    # the weights' total is N: the excess rates are the class weights minus one
    N = float(w.sum())
    np.testing.assert_allclose(model.excess_rates(N), [4.0, 39.0])
    np.testing.assert_allclose(model.excess_rates(2 * N), [9.0, 79.0])


def test_class_by_class_excess_sums_to_n_minus_n_over_the_cell_space(design_model):
    _, w, model = design_model
    em = model.fit_em(n_restarts=2, random_seed=0)
    levels = [range(L) for L in model.n_levels[:-1]]
    every = np.array(list(itertools.product(*levels)))
    pi_kg = model.key_cell_probabilities(em["w"], em["phi"], every, by_class=True)
    assert pi_kg.shape == (every.shape[0], 2)
    assert pi_kg.sum() == pytest.approx(1.0, abs=1e-9)
    N = float(w.sum())
    n = model.n
    lam = n * pi_kg @ model.excess_rates(N)
    # the class margins of the fit are the sample's (n_g / n, up to the Dirichlet prior),
    # so the excess over all cells is sum_g n_g (w_g - 1) = N - n
    np.testing.assert_allclose(pi_kg.sum(axis=0) * n, np.bincount(
        np.searchsorted([5.0, 40.0], w)), rtol=2e-3)
    assert lam.sum() == pytest.approx(N - n, rel=2e-3)
    # an SRS model at the same fit would put (N - n) pi_k on each cell: the over-sampled
    # class's cells get less, the other's more
    srs = (N - n) * pi_kg.sum(axis=1)
    share5 = pi_kg[:, 0] / pi_kg.sum(axis=1)
    assert np.all((lam < srs) == (share5 > np.bincount(np.searchsorted([5.0, 40.0], w))[0] / n)
                  | np.isclose(lam, srs))


def test_gibbs_lam_is_the_class_by_class_excess(design_model):
    _, w, model = design_model
    N = float(w.sum())
    idata = model.sample(draws=15, tune=10, chains=2, N=N, random_seed=4, store="all")
    post = idata.posterior
    C = model.key_codes.shape[0]
    assert post["pi"].sizes["cell"] == C == post["lam"].sizes["cell"]
    assert idata.observed_data["fk"].values.tolist() == model.key_counts.tolist()
    lam = post["lam"].values.reshape(-1, C)
    pi = post["pi"].values.reshape(-1, C)
    # per draw lam_k / (n pi_k) is a weighted mean of the excess rates 4 and 39
    ratio = lam / (model.n * pi)
    assert ratio.min() >= 4.0 - 1e-9 and ratio.max() <= 39.0 + 1e-9
    assert ratio.std() > 1.0  # and it does vary by cell
    # tau1_expected is the sum over the sample uniques of exp(-lam) (Poisson cells)
    su = model.key_counts == 1
    np.testing.assert_allclose(post["tau1_expected"].values.reshape(-1),
                               np.exp(-lam[:, su]).sum(axis=1), rtol=1e-10)


def test_cross_validation_runs_on_key_cells(design_model):
    _, w, model = design_model
    od = overdispersion_cv(model, random_seed=0, ratios=(2, 4), em_restarts=1)
    assert od["weights"].sum() == pytest.approx(1.0)
    assert od["ratios"] == [2, 4]
    # observed part-uniques that stay unique: at most the key cells' sample uniques
    assert 0 < od["observed"] <= int((model.key_counts == 1).sum())


def test_weighted_part_sizes_mirror_the_population_rates():
    n_g = np.array([500, 1500, 40])
    excess = np.array([4.0, 39.0, 9.0])
    for target in (2000 / 4, 2000 / 8, 2000 / 2):
        a_g = _weighted_part_sizes(n_g, excess, target)
        assert abs(a_g.sum() - target) <= n_g.size  # rounding, class by class
        rho = (n_g - a_g) / a_g
        # rest per part record proportional to the population's rate (to the rounding of
        # the smallest class: 40 records)
        np.testing.assert_allclose(rho / rho[1], excess / excess[1], rtol=0.1)
        np.testing.assert_allclose(rho[0] / rho[1], excess[0] / excess[1], rtol=0.01)
    # a class extrapolated at rate 0 keeps all its records in every part; an empty one none;
    # a small class keeps at least one record
    a_g = _weighted_part_sizes(np.array([300, 900, 0, 2]), np.array([0.0, 50.0, 5.0, 500.0]),
                               400)
    assert a_g[0] == 300 and a_g[2] == 0 and a_g[3] == 1
    assert a_g.sum() == pytest.approx(400, abs=4)


def _two_strata_sample(seed, n0=1500, n1=500):
    """Keys independent within each stratum, different across them: the sample is exactly
    a two-class mixture. Stratum 1 (weight 5) is over-sampled, stratum 0 has weight 40."""
    rng = np.random.default_rng(seed)
    frames = [pd.DataFrame({k: rng.choice(p.size, n, p=p) for k, p in probs.items()})
              for n, probs in ((n0, _STRATUM_P[0]), (n1, _STRATUM_P[1]))]
    frame = pd.concat(frames, ignore_index=True).astype(str)
    return frame, np.r_[np.full(n0, 40.0), np.full(n1, 5.0)]


_ZIPF = 1.0 / np.arange(1, 41) ** 1.1
_STRATUM_P = [{"k1": _ZIPF / _ZIPF.sum(), "k2": np.full(8, 1 / 8),
               "k3": np.array([.4, .3, .2, .1])},
              {"k1": _ZIPF[::-1] / _ZIPF.sum(), "k2": np.full(8, 1 / 8),
               "k3": np.array([.1, .2, .3, .4])}]


def test_weighted_parts_predict_the_rest_class_by_class(monkeypatch):
    """Every part fitted exactly (the true pi_kg of its composition, monkeypatched in
    for the EM fit): with Poisson cells the count of part-uniques left unique by the rest
    must match its prediction. It does for random parts (one rate for all classes) and
    for weighted parts only with the rest's class-by-class rates: predicting the rest of
    a weighted part at one rate (n - n_A) pi_k misses by about 11 standard deviations
    over these six samples (checked by hand); the class-by-class prediction within 3."""
    def exact(self, w, phi, key_codes=None, *, by_class=False):
        kc = np.asarray(self.key_codes if key_codes is None else key_codes)
        value = [np.array([int(v) for v in self.levels[j]])[kc[:, j]] for j in range(3)]
        # weight classes are ordered by weight: class 0 is stratum 1 (weight 5)
        pg = np.stack([np.prod([_STRATUM_P[h][k][value[j]]
                                for j, k in enumerate(("k1", "k2", "k3"))], axis=0)
                       for h in (1, 0)], axis=1)
        pi = pg * (self._class_n / self.n)  # the part's class shares, known exactly
        return pi if by_class else pi.sum(axis=1)

    monkeypatch.setattr(LatentClassModel, "fit_em", lambda self, **kw: {
        "w": None, "phi": None, "phi_mass": [1.0] * len(self.n_levels)})
    monkeypatch.setattr(LatentClassModel, "key_cell_probabilities", exact)
    totals = {"random": np.zeros(3), "weights": np.zeros(3)}
    for seed in range(6):
        frame, w = _two_strata_sample(seed)
        model = LatentClassModel.from_frame(frame, ["k1", "k2", "k3"], n_classes=4, weights=w)
        for parts in totals:
            od = overdispersion_cv(model, random_seed=seed, em_restarts=1, parts=parts,
                                   ratios=(4,))
            assert od.get("parts", "random") == parts
            totals[parts] += [od["observed"], od["predicted_poisson"], od["sd"] ** 2]
    for parts, (observed, predicted, var) in totals.items():
        assert abs(observed - predicted) < 3.0 * np.sqrt(var), parts
    # the weighted parts hold more part-uniques (the over-sampled stratum is sparser in
    # them than in the sample) and overlap: their count is not the sample uniques'
    assert totals["weights"][0] > totals["random"][0]


def test_weighted_parts_refusals_and_the_model_without_weights(design_model):
    _, _, model = design_model
    with pytest.raises(InputError, match="parts must be"):
        overdispersion_cv(model, parts="strata")
    with pytest.raises(InputError, match="predictive='em'"):
        overdispersion_cv(model, parts="weights", predictive="gibbs")
    frame = _frame(seed=3)
    plain = LatentClassModel.from_frame(frame, ["a", "b", "c"], n_classes=3)
    a = overdispersion_cv(plain, random_seed=2, em_restarts=1, parts="weights")
    b = overdispersion_cv(plain, random_seed=2, em_restarts=1)
    # without weight classes the parts are random: the same result, unlabelled
    assert "parts" not in a
    np.testing.assert_array_equal(a["weights"], b["weights"])


def test_from_microdata_rows_are_cell_class_pairs():
    frame = _frame(seed=2, n=300)
    frame["w"] = np.where(frame["a"] == "x", 3.0, 30.0)
    md = Microdata(frame, keys=["a", "c"], weight="w")
    model = LatentClassModel.from_microdata(md, n_classes=3)
    np.testing.assert_array_equal(model.key_counts, md.cells.f_exact)
    table = md.cells.table
    for j, k in enumerate(["a", "c"]):
        assert [model.levels[j][c] for c in model.key_codes[:, j]] == table[k].tolist()
    np.testing.assert_array_equal(model.class_weights, [3.0, 30.0])
    off = LatentClassModel.from_microdata(md, n_classes=3, weights=False)
    assert off.class_weights is None


def test_assess_uses_the_class_by_class_excess():
    import warnings

    from sdcbayes.risk.posterior_assess import assess_from_posterior, evaluate_poisson_cells

    frame = _frame(seed=3, n=300)
    frame["w"] = np.where(frame["c"].isin(["s", "t", "w"]), 4.0, 40.0)
    md = Microdata(frame, keys=["a", "b", "c"], weight="w")
    model = LatentClassModel.from_microdata(md, n_classes=3)
    N = float(frame["w"].sum())
    idata = model.sample(draws=20, tune=10, chains=2, N=N, random_seed=1, store="all")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = assess_from_posterior(md, idata, "latent-class", random_seed=0)
    lam = idata.posterior["lam"].values.reshape(-1, md.cells.n_cells)
    su = md.cells.f_exact == 1
    # the file-level conditional mean of tau1 is that of the model's own excess means
    assert res.summary["tau1"] == pytest.approx(np.exp(-lam[:, su]).sum(axis=1).mean(), rel=1e-9)
    with pytest.raises(InputError, match="same N"):
        assess_from_posterior(md, idata, "latent-class", N=2 * N)
    pi = idata.posterior["pi"].values.reshape(-1, md.cells.n_cells)
    with pytest.raises(InputError, match="not both"):
        evaluate_poisson_cells(md.cells.fk, pi, model.n, N, excess=lam,
                               cell_weight=np.full(pi.shape[1], 5.0))


def _stratified_population(seed=11):
    """Two strata: a large one (keys common) and a small one whose members have rare,
    stratum-specific key values; the small stratum is over-sampled ninefold."""
    rng = np.random.default_rng(seed)
    NA, NB = 36_000, 4_000
    a = pd.DataFrame({"k1": rng.choice(8, NA), "k2": rng.choice(6, NA),
                      "k3": rng.choice(5, NA, p=[.3, .3, .2, .15, .05])})
    p1 = 1.0 / np.arange(1, 61) ** 0.7
    b = pd.DataFrame({"k1": rng.choice(60, NB, p=p1 / p1.sum()) + 8, "k2": rng.choice(6, NB) + 6,
                      "k3": rng.choice(5, NB, p=[.05, .05, .1, .3, .5])})
    pop = pd.concat([a.assign(s=0), b.assign(s=1)], ignore_index=True)
    for k in ("k1", "k2", "k3"):
        pop[k] = pop[k].astype(str)
    return pop, {0: 600, 1: 600}


def test_stratified_informative_design_tau1_recovered():
    pop, take = _stratified_population()
    rng = np.random.default_rng(5)
    idx = np.concatenate([rng.choice(np.flatnonzero(pop.s == h), m, replace=False)
                          for h, m in take.items()])
    sample = pop.iloc[idx].reset_index(drop=True)
    Nh = pop.s.value_counts().to_dict()
    sample["w"] = sample.s.map({h: Nh[h] / m for h, m in take.items()})
    keys = ["k1", "k2", "k3"]
    # truth: sample uniques unique in the population
    cell = lambda d: d[keys].agg("|".join, axis=1)  # noqa: E731
    F = cell(pop).value_counts()
    fs = cell(sample).value_counts()
    su = fs.index[fs == 1]
    truth = float((F.loc[su] == 1).sum())
    N = len(pop)
    kwargs = dict(n_classes=10, draws=60, tune=40, chains=2, structural_zeros=None, seed=1)
    weighted = latent_class_method(**kwargs)(sample, keys, "w", N)
    srs = latent_class_method(**kwargs, weights=False)(sample, keys, "w", N)
    # one rate N/n for all extrapolates the over-sampled stratum's rare cells 8x too far
    assert srs.tau1 < 0.8 * truth
    assert abs(weighted.tau1 - truth) < 0.5 * abs(srs.tau1 - truth)
    lo, hi = weighted.intervals["tau1"]
    assert lo <= truth <= hi
    # the note says how many of the 10 classes the chains occupy (does the truncation bind?)
    used = float(weighted.note.split("classes occupied ")[1].split(" of 10 (all in ")[0])
    assert 1 <= used <= 10


def test_method_note_reports_a_binding_truncation_without_warning():
    # two classes on three keys: both occupied in every draw, so the truncation binds;
    # the harness's note says so (check_truncation's numbers) instead of warning per fit
    import warnings

    from sdcbayes.inference.diagnostics import TruncationWarning

    pop, _ = _stratified_population()
    sample = pop.sample(400, random_state=2).reset_index(drop=True)
    sample["w"] = len(pop) / len(sample)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)
        est = latent_class_method(n_classes=2, draws=20, tune=10, chains=1,
                                  structural_zeros=None, overdispersion=None,
                                  weights=False, seed=1)(sample, ["k1", "k2", "k3"], "w",
                                                         len(pop))
    assert "classes occupied 2.0 of 2 (all in 100%)" in est.note, est.note
