"""Audit K, latent-class part: constructor and argument checks, provenance, memory.

The expected numbers come from routes independent of the code under test: record
counts by ``collections.Counter``, the conditional risks of Poisson cells summed with
scipy (E(1/F | f) = sum_x Po(x; lambda) / (f + x), P(F = 1 | f = 1) = exp(-lambda)).
"""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import sdcbayes
from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.inference.posterior import load_posterior, provenance, save_posterior
from sdcbayes.models import latent_class as lc
from sdcbayes.models.latent_class import LatentClassModel
from sdcbayes.provenance import json_safe


def records(n=300, seed=0):
    """Records of three keys from a two-class mixture."""
    rng = np.random.default_rng(seed)
    z = rng.random(n) < 0.4
    return pd.DataFrame({
        "a": np.where(z, rng.integers(0, 3, n), rng.integers(2, 6, n)),
        "b": np.where(z, rng.integers(0, 2, n), rng.integers(1, 4, n)),
        "c": rng.integers(0, 3, n),
    })


@pytest.fixture(scope="module")
def frame():
    return records()


@pytest.fixture(scope="module")
def model(frame):
    return LatentClassModel.from_frame(frame, ["a", "b", "c"], n_classes=3)


def quick(m, **kw):
    """A tiny Gibbs run."""
    return m.sample(**({"draws": 4, "tune": 2, "chains": 1, "em_restarts": 1} | kw))


# ------------------------------------------------------------------- F1: distinct cells
def test_record_level_rows_are_refused_and_the_cell_table_is_not(frame):
    codes = frame.to_numpy()
    with pytest.raises(InputError, match="repeated rows.*np.unique"):
        LatentClassModel(codes, np.ones(len(codes)), [6, 4, 3], n_classes=3)
    cells, counts = np.unique(codes, axis=0, return_counts=True)
    m = LatentClassModel(cells, counts, [6, 4, 3], n_classes=3)
    tally = Counter(map(tuple, codes))  # the records' cells, counted by hand
    assert m.data_summary()["n_cells"] == len(tally)
    assert m.data_summary()["n_sample_uniques"] == sum(v == 1 for v in tally.values())
    assert m.n == len(codes)


def test_repeated_cell_and_weight_class_rows_are_refused():
    codes = np.array([[0, 0], [1, 0], [1, 1], [1, 0]])  # (cell 1, class 0) twice
    with pytest.raises(InputError, match="repeated rows"):
        LatentClassModel(codes, [1, 2, 1, 1], [2, 2], n_classes=2,
                         class_weights=[10.0, 40.0])


# ------------------------------------------------------------ F2: keys and levels lengths
@pytest.mark.parametrize("kw, match", [
    ({"keys": ["a"]}, "keys gives 1 names but codes has 3 columns"),
    ({"keys": ["a", "b", "c", "d"]}, "keys gives 4 names"),
    ({"levels": [list(range(6)), list(range(4))]}, "levels must give the level labels"),
    ({"levels": [list(range(6)), list(range(4)), ["x", "y"]]}, "2 labels for 3 levels"),
])
def test_keys_and_levels_must_match_the_columns(model, kw, match):
    with pytest.raises(InputError, match=match):
        LatentClassModel(model.codes, model.counts, model.n_levels, n_classes=3, **kw)


def test_keys_as_tuple_or_index_are_still_taken(model):
    for keys in (("a", "b", "c"), pd.Index(["a", "b", "c"])):
        m = LatentClassModel(model.codes, model.counts, model.n_levels, keys=keys, n_classes=3)
        assert m.keys == ["a", "b", "c"]


# ------------------------------------------------------- F7: silent coercions refused
@pytest.mark.parametrize("counts_fn", [
    lambda c: np.where(np.arange(c.size) == 0, np.inf, c),
    lambda c: c + 0.5,
])
def test_counts_must_be_finite_whole_numbers(model, counts_fn):
    with pytest.raises(InputError, match="finite whole numbers >= 1"):
        LatentClassModel(model.codes, counts_fn(model.counts), model.n_levels, n_classes=3)


def test_n_levels_must_be_whole(model):
    with pytest.raises(InputError, match="n_levels must give one whole number"):
        LatentClassModel(model.codes, model.counts, [6, 4.9, 3], n_classes=3)


@pytest.mark.parametrize("H", [2.7, "5", True, None, np.nan])
def test_n_classes_must_be_a_whole_number(model, H):
    with pytest.raises(InputError, match="n_classes .* must be a whole number >= 2"):
        LatentClassModel(model.codes, model.counts, model.n_levels, n_classes=H)


def test_one_class_points_to_the_independence_model(model):
    with pytest.raises(InputError, match=r"fit_loglinear\(interactions='main'\)"):
        LatentClassModel(model.codes, model.counts, model.n_levels, n_classes=1)
    # whole floats and NumPy integers are whole numbers
    assert LatentClassModel(model.codes, model.counts, model.n_levels, n_classes=3.0).H == 3
    assert LatentClassModel(model.codes, model.counts, model.n_levels,
                            n_classes=np.int64(4)).H == 4


def test_from_frame_refuses_a_bare_string_and_repeated_keys(frame):
    with pytest.raises(InputError, match=r"list of column names; got 'a' \(for one key write "
                                         r"\['a'\]\)"):
        LatentClassModel.from_frame(frame, "a", n_classes=2)
    with pytest.raises(InputError, match=r"keys \['a'\] are given more than once"):
        LatentClassModel.from_frame(frame, ["a", "a"], n_classes=2)
    one = LatentClassModel.from_frame(frame, ["a"], n_classes=2)  # the list form works
    assert one.n == len(frame) and one.keys == ["a"]


# ------------------------------------------------------------------- F6/F7: priors
@pytest.mark.parametrize("alpha", [
    {"dist": "Gamma", "alpha": 1},                       # beta missing
    {"dist": "Gamma", "beta": 1},                        # alpha missing
    {"dist": "Gamma", "alpha": -1, "beta": 1},           # draws of alpha exactly 0
    {"dist": "Gamma", "alpha": 1, "beta": 0},
    {"dist": "Gamma", "alpha": np.inf, "beta": 1},
    {"dist": "Gamma", "alpha": 1, "beta": np.nan},
    {"dist": "Gamma", "alpha": True, "beta": 1},
])
def test_alpha_prior_needs_both_parameters_finite_and_positive(model, alpha):
    with pytest.raises(InputError, match="needs Gamma parameters alpha and beta"):
        LatentClassModel(model.codes, model.counts, model.n_levels, n_classes=3,
                         priors={"alpha": alpha})
    with pytest.raises(InputError, match="needs Gamma parameters alpha and beta"):
        model.with_priors({"alpha": alpha})


@pytest.mark.parametrize("phi", [
    {"a": np.inf},
    {"a": "marginal", "mass": np.inf},
    {"a": "marginal", "mass": [1.0, np.inf, 2.0]},
    {"a": "marginal", "mass": "learn", "small_mass": np.inf},
])
def test_phi_prior_must_be_finite(model, phi):
    with pytest.raises(InputError, match="positive finite"):
        LatentClassModel(model.codes, model.counts, model.n_levels, n_classes=3,
                         priors={"phi": phi})


def test_a_bad_prior_fails_before_the_cross_validation(model, monkeypatch):
    def boom(*a, **k):  # pragma: no cover - must not run
        raise AssertionError("the cross-validation ran")

    monkeypatch.setattr(lc, "overdispersion_cv", boom)
    with pytest.raises(InputError, match="alpha and beta"):
        LatentClassModel(model.codes, model.counts, model.n_levels, n_classes=3,
                         priors={"alpha": {"dist": "Gamma", "alpha": 1}}).sample(
            draws=2, tune=0, chains=1, N=1e4, overdispersion="cv")


# ------------------------------------------------------------ F6: fit_em and sample
@pytest.mark.parametrize("kw, name", [
    ({"n_restarts": 0}, "n_restarts"), ({"n_restarts": 1.5}, "n_restarts"),
    ({"max_iter": 0}, "max_iter"), ({"max_iter": "10"}, "max_iter"),
    ({"n_classes": 0}, "n_classes"), ({"n_classes": -1}, "n_classes"),
    ({"n_classes": 4}, "n_classes"), ({"n_classes": 2.5}, "n_classes"),
    ({"random_seed": "x"}, "random_seed"), ({"random_seed": -1}, "random_seed"),
    ({"random_seed": True}, "random_seed"), ({"random_seed": 1.5}, "random_seed"),
])
def test_fit_em_arguments(model, kw, name):
    with pytest.raises(InputError, match=name):
        model.fit_em(**kw)


def test_fit_em_is_stamped_with_the_seed_that_repeats_it(model):
    # fit_em gave estimates without the seed it drew: an unseeded EM fit could not be
    # repeated, nor told apart from one of another model
    fit = model.fit_em(n_restarts=2, max_iter=20)
    prov = fit["provenance"]
    assert prov["model"] == model.name and prov["data"] == model.data_summary()
    st = prov["settings"]
    assert st["method"] == "em" and isinstance(st["random_seed"], int)
    assert (st["n_restarts"], st["max_iter"], st["n_classes"]) == (2, 20, model.H)
    again = model.fit_em(n_restarts=2, max_iter=20, random_seed=st["random_seed"])
    np.testing.assert_array_equal(again["w"], fit["w"])
    assert again["loglik"] == fit["loglik"]
    # a Generator is used as given (its stream continues), and stamped as such
    g = model.fit_em(n_restarts=1, max_iter=5, random_seed=np.random.default_rng(0))
    assert g["provenance"]["settings"]["random_seed"] == "generator"


def test_fit_em_one_class_is_the_independence_model(model):
    fit = model.fit_em(n_classes=1, n_restarts=1, random_seed=0)
    assert fit["w"].shape == (1,)
    fit = model.fit_em(n_classes=model.H, n_restarts=1, max_iter=1, random_seed=0)
    assert fit["w"].shape == (model.H,)


@pytest.mark.parametrize("kw, name", [
    ({"em_restarts": 0}, "em_restarts"), ({"em_restarts": 2.5}, "em_restarts"),
    ({"N": np.inf}, "N"), ({"N": "1e6"}, "N"), ({"N": True}, "N"), ({"N": 10.0}, "N"),
    ({"random_seed": "seed"}, "random_seed"), ({"random_seed": -3}, "random_seed"),
    ({"random_seed": True}, "random_seed"),
])
def test_sample_arguments_before_any_work(model, monkeypatch, kw, name):
    def boom(*a, **k):  # pragma: no cover - must not run
        raise AssertionError("work started")

    monkeypatch.setattr(LatentClassModel, "fit_em", boom)
    monkeypatch.setattr(lc, "overdispersion_cv", boom)
    with pytest.raises(InputError, match=name):
        model.sample(**({"draws": 2, "tune": 0, "chains": 1, "N": 1e4,
                         "overdispersion": "cv"} | kw))


def test_sample_takes_a_generator_and_stamps_the_seed_it_drew(model):
    a = quick(model, N=1e4, random_seed=np.random.default_rng(5))
    b = quick(model, N=1e4, random_seed=np.random.default_rng(5))
    np.testing.assert_array_equal(a.posterior["pi"].values, b.posterior["pi"].values)
    seed = provenance(a)["settings"]["random_seed"]
    assert isinstance(seed, int)
    again = quick(model, N=1e4, random_seed=seed)  # the stamp repeats the run
    np.testing.assert_array_equal(again.posterior["pi"].values, a.posterior["pi"].values)


# ------------------------------------------------------------------- F5: provenance
def test_sample_stamps_provenance_and_an_unseeded_run_repeats(model, tmp_path):
    idata = quick(model, N=2e4, store="all", chains=2)  # random_seed=None
    for attrs in (idata.attrs, idata.posterior.attrs):
        assert attrs["sdcbayes_version"] == sdcbayes.__version__
        assert attrs["model"] == "latent-class"
    prov = provenance(idata)
    assert prov["data_summary"] == json_safe(model.data_summary())
    assert prov["data_summary"]["n_records"] == 300
    assert prov["priors"] == json_safe(model.priors)
    st = prov["settings"]
    assert {k: st[k] for k in ("method", "draws", "chains", "tune", "thin", "N", "store",
                               "init", "em_restarts", "overdispersion")} == {
        "method": "gibbs", "draws": 4, "chains": 2, "tune": 2, "thin": 1, "N": 2e4,
        "store": "all", "init": "em", "em_restarts": 1, "overdispersion": None}
    assert isinstance(st["random_seed"], int)
    assert {"numpy", "sdcbayes"} <= set(prov["provenance"]["versions"])
    again = quick(model, N=2e4, store="all", chains=2, random_seed=st["random_seed"])
    np.testing.assert_array_equal(again.posterior["pi"].values, idata.posterior["pi"].values)
    # save_posterior needs the stamps (it refused an unstamped sample() posterior)
    back = load_posterior(save_posterior(idata, tmp_path / "lc.nc"))
    assert provenance(back)["settings"]["random_seed"] == st["random_seed"]


def test_profile_mass_run_stamps_the_settings_that_repeat_it(model, monkeypatch):
    chosen = model.with_priors({"phi": {"dist": "Dirichlet", "a": "marginal", "mass": 64.0}})

    def fake_choice(m, **kw):  # the choice itself is tested elsewhere: fixed here
        return {"model": chosen, "overdispersion": {"grid": np.array([np.inf]),
                                                    "weights": np.array([1.0])},
                "summary": {"mass": 64.0}}

    monkeypatch.setattr(lc, "profile_mass_cv", fake_choice)
    idata = quick(model, N=1e4, overdispersion="cv", profile_mass="cv", random_seed=3)
    prov = provenance(idata)
    assert prov["settings"]["profile_mass"] == "cv"
    assert prov["settings"]["overdispersion"] == "cv"
    assert prov["settings"]["random_seed"] == 3
    assert json.loads(idata.attrs["priors"])["phi"]["mass"] == 64.0  # the prior used


def small_md(seed=3, n=400):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.integers(0, 12, n), "b": rng.integers(0, 4, n)})
    return Microdata(frame, keys=["a", "b"])


def test_stamped_posterior_is_assessed_and_er_matches_brute_force():
    from sdcbayes.risk.posterior_assess import assess_from_posterior

    md = small_md()
    N = 8000.0
    m = LatentClassModel.from_microdata(md, n_classes=3)
    idata = quick(m, N=N, store="all", random_seed=2, draws=3)
    assert "lam" not in idata.posterior  # F9: (N - n) pi, not stored
    res = assess_from_posterior(md, idata, "latent-class", random_seed=0)
    # brute force: ER = sum_k f_k E(1/F_k | f_k), F_k - f_k ~ Po((N - n) pi_k), per draw
    pi = idata.posterior["pi"].values.reshape(-1, md.cells.n_cells)
    f = np.asarray(md.cells.fk, dtype=float)
    x = np.arange(6000)[:, None]  # support: the Poisson means are below 1000
    er = [float(np.sum(f * np.sum(stats.poisson.pmf(x, (N - m.n) * p) / (f + x), axis=0)))
          for p in pi]
    got = res.file_draws["expected_reidentifications_conditional_mean"].values.ravel()
    np.testing.assert_allclose(got, er, rtol=1e-9)
    assert res.provenance["settings"]["method"] == "gibbs"  # the fit's stamped settings


# ------------------------------------------------------------------- F9: lam
def test_lam_is_not_stored_without_weight_classes_and_tau_uses_it(model):
    N = 3e4
    idata = quick(model, N=N, store="uniques", random_seed=1, draws=3)
    assert "lam" not in idata.posterior
    # P(F = 1 | f = 1) = exp(-(N - n) pi) summed over the uniques, draw by draw
    pi = idata.posterior["pi"].values
    tau1 = np.exp(-(N - model.n) * pi).sum(axis=-1)
    np.testing.assert_allclose(idata.posterior["tau1_expected"].values, tau1, rtol=1e-12)


def test_excess_means_without_stored_lam(model):
    N = 3e4
    idata = quick(model, N=N, store="all", random_seed=1, draws=3)
    # bit for bit what the sampler stored as lam before: (N - n) pi in float64
    np.testing.assert_array_equal(lc.excess_means(idata),
                                  (N - 300.0) * idata.posterior["pi"].values)
    with pytest.raises(InputError, match="without N"):
        lc.excess_means(quick(model, store="all", random_seed=1, draws=3))


def test_lam_is_stored_with_weight_classes():
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame({"a": rng.integers(0, 8, n), "b": rng.integers(0, 3, n),
                          "w": np.where(rng.random(n) < 0.5, 10.0, 40.0)})
    m = LatentClassModel.from_frame(frame, ["a", "b"], weights="w", n_classes=3)
    N = float(frame["w"].sum())
    idata = quick(m, N=N, random_seed=1, draws=3, store="all")
    lam = idata.posterior["lam"].values
    pi = idata.posterior["pi"].values
    # class by class: not one ratio (N - n) for every cell
    ratio = lam / pi
    assert not np.allclose(ratio, ratio[..., :1])
    assert json.loads(idata.attrs["weight_classes"]) == [10.0, 40.0]
    np.testing.assert_array_equal(lc.excess_means(idata), lam)


def test_sample_docstring_gives_the_memory_formula():
    doc = LatentClassModel.sample.__doc__
    assert "8 bytes x chains x draws x stored" in doc


# ------------------------------------------------------------------- F10: resample
def test_resample_keeps_the_mass_span(frame):
    m = LatentClassModel.from_frame(
        frame, ["a", "b", "c"], n_classes=3,
        priors={"phi": {"dist": "Dirichlet", "a": "marginal", "mass": "learn"}})
    spanned = m.with_mass_span(1000.0)
    r = spanned.resample(np.random.default_rng(0))
    assert r._mass_span["log_high"] == pytest.approx(math.log(1000.0))
    np.testing.assert_array_equal(r._mass_span["keys"], [True, True, True])
    # the draws of the resample's learnt masses are spread towards the high end
    idata = quick(r, random_seed=0, draws=20, tune=5)
    plain = quick(m.resample(np.random.default_rng(0)), random_seed=0, draws=20, tune=5)
    assert float(idata.posterior["phi_mass"].mean()) > float(plain.posterior["phi_mass"].mean())
    assert not hasattr(m.resample(np.random.default_rng(0)), "_mass_span")
