"""Input checks of the Python API: prior specifications and fit's options.

Every bad input must fail at once with an :class:`InputError` naming the problem
and the fix -- before any PyMC graph is built or compiled -- instead of a TypeError
deep inside PyMC at build or sampling time.
"""

import importlib
import inspect
import logging
import math
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.inference import ConvergenceWarning, fit, provenance
from sdcbayes.models.base import (
    SuperpopulationModel,
    distribution_parameters,
    merge_priors,
    prior_problems,
    prior_to_rv,
)
from sdcbayes.models.latent_class import LatentClassModel
from sdcbayes.models.poisson_gamma import STRUCTURES, PoissonGammaModel

COC, K, N = {1: 50, 2: 20, 3: 5}, 300, 10_000
DEFAULTS = {
    "alpha": {"dist": "LogNormal", "mu": 0.0, "sigma": 2.5},
    # a model's own configuration (the latent-class profile prior): not PyMC's to check
    "phi": {"dist": "Dirichlet", "a": "marginal", "mass": "learn"},
}


def quiet_fit(*args, **kwargs):
    # short chains: their convergence warnings are not what is tested here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit(*args, **kwargs)


@pytest.fixture
def small_model():
    return PoissonGammaModel(COC, K=K, N=N)


# ------------------------------------------------------------------ priors
@pytest.mark.parametrize("priors", [[{"alpha": {"sigma": 2}}], [], ("alpha",), "alpha", 3])
def test_priors_that_are_not_a_mapping_are_refused(priors):
    with pytest.raises(InputError, match=r"must be a mapping.*\{'alpha': \{'sigma': 2\}\}"):
        merge_priors(DEFAULTS, priors, "m")
    with pytest.raises(InputError, match="must be a mapping"):
        PoissonGammaModel(COC, K=K, N=N, priors=priors)


def test_unknown_prior_parameters_are_listed_with_the_valid_ones_and_a_suggestion():
    with pytest.raises(InputError) as info:
        PoissonGammaModel(COC, K=K, N=N, priors={"alpha": {"sgima": 1, "bogus": 2}})
    msg = str(info.value)
    assert "prior 'alpha' of model 'poisson-gamma'" in msg
    assert "['sgima', 'bogus']" in msg  # all of them, in one error
    assert "did you mean 'sigma'?" in msg
    assert "['mu', 'sigma', 'tau']" in msg  # LogNormal's parameters


@pytest.mark.parametrize("arg", ["dims", "shape", "size", "rng", "dtype", "observed"])
def test_arguments_that_are_not_parameters_are_refused(arg):
    with pytest.raises(InputError, match=rf"no parameter\(s\) \['{arg}'\].*set by the model"):
        merge_priors(DEFAULTS, {"alpha": {arg: 3}}, "m")
    assert arg not in distribution_parameters(pm.Normal)


def test_unknown_distribution_is_refused_with_prior_to_rv_wording():
    with pytest.raises(InputError) as merged:
        merge_priors(DEFAULTS, {"alpha": {"dist": "Nrmal", "sigma": 1}}, "m")
    with pytest.raises(InputError) as built:
        with pm.Model():
            prior_to_rv(pm, "alpha", {"dist": "Nrmal", "sigma": 1})
    # one helper words both: the same sentence, the model named where it is known
    assert str(merged.value) == str(built.value).replace("prior 'alpha'",
                                                         "prior 'alpha' of model 'm'")
    assert "PyMC has no distribution 'Nrmal' (did you mean 'Normal'?); use a name such as" \
        in str(merged.value)
    # an attribute of pymc that is no distribution, and a name that is no string
    for dist in ("sample", "Model", 3, None):
        with pytest.raises(InputError, match="PyMC has no distribution"):
            merge_priors(DEFAULTS, {"alpha": {"dist": dist}}, "m")


@pytest.mark.parametrize("value", ["abc", None, True, float("nan"), math.inf, [1.0, "x"], []])
def test_non_numeric_parameter_values_are_refused(value):
    with pytest.raises(InputError, match=r"prior 'alpha' of model 'm'.*finite numbers.*sigma="):
        merge_priors(DEFAULTS, {"alpha": {"sigma": value}}, "m")


def test_problems_of_several_priors_come_in_one_error():
    defaults = {"a": {"dist": "HalfNormal", "sigma": 1.0}, "b": {"dist": "Gamma", "alpha": 2.0,
                                                                  "beta": 1.0}}
    with pytest.raises(InputError) as info:
        merge_priors(defaults, {"a": {"sigma": "wide"}, "b": {"alhpa": 1}}, "m")
    assert "prior 'a'" in str(info.value) and "'alhpa'" in str(info.value)


def test_merge_semantics_are_kept():
    # a spec with "dist" replaces the default whole; otherwise it updates it
    out = merge_priors(DEFAULTS, {"alpha": {"dist": "HalfNormal", "sigma": np.float64(2)}}, "m")
    assert out["alpha"] == {"dist": "HalfNormal", "sigma": 2.0}
    out = merge_priors(DEFAULTS, {"alpha": {"sigma": 1}}, "m")
    assert out["alpha"] == {"dist": "LogNormal", "mu": 0.0, "sigma": 1}
    assert DEFAULTS["alpha"]["sigma"] == 2.5  # defaults untouched
    # arrays of numbers are parameter values too (a Dirichlet's weights)
    out = merge_priors({"p": {"dist": "Dirichlet", "a": [1.0, 1.0]}}, {"p": {"a": [0.5, 2]}}, "m")
    assert out["p"]["a"] == [0.5, 2]
    assert merge_priors(DEFAULTS, None, "m") == DEFAULTS


def test_model_configuration_priors_are_left_to_the_model():
    # the latent-class profile prior is no PyMC Dirichlet: the model checks it itself
    out = merge_priors(DEFAULTS, {"phi": {"a": "inverse", "min_levels": 5}}, "m")
    assert out["phi"]["a"] == "inverse"
    model = LatentClassModel([[0, 0], [1, 1]], [1, 2], [2, 2], n_classes=2,
                             priors={"phi": {"a": "inverse"}})
    assert model.priors["phi"] == {"dist": "Dirichlet", "a": "inverse"}
    # name-only defaults (risk.compare checks names before a model exists): names only
    assert merge_priors({"x": {}}, {"x": {"sigma": "later"}}, "m") == {"x": {"sigma": "later"}}


def test_models_with_their_own_checks_are_checked_at_build():
    # the latent-class model checks its priors itself and must not import PyMC for it
    # (tests/test_risk_compare.py); prior_to_rv checks whatever reaches PyMC
    assert merge_priors(DEFAULTS, {"alpha": {"sgima": 1}}, "m", check_pymc=False)["alpha"] \
        == {"dist": "LogNormal", "mu": 0.0, "sigma": 2.5, "sgima": 1}
    with pm.Model(), pytest.raises(InputError, match=r"prior 'alpha': LogNormal has no "
                                                      r"parameter\(s\) \['sgima'\]"):
        prior_to_rv(pm, "alpha", {"dist": "LogNormal", "sgima": 1})
    with pm.Model(), pytest.raises(InputError, match=r"parameters must be finite.*sigma='x'"):
        prior_to_rv(pm, "alpha", {"dist": "LogNormal", "sigma": "x"})
    with pytest.raises(InputError, match="the latent-class Gibbs sampler needs alpha"):
        LatentClassModel([[0, 0], [1, 1]], [1, 2], [2, 2], n_classes=2,
                         priors={"alpha": {"sgima": 1}})


def _model_classes():
    out = []
    for module in ("beta_binomial", "latent_class", "loglinear", "negbin", "poisson_gamma"):
        mod = importlib.import_module(f"sdcbayes.models.{module}")
        out += [c for _, c in inspect.getmembers(mod, inspect.isclass)
                if issubclass(c, SuperpopulationModel) and c is not SuperpopulationModel
                and c.__module__ == mod.__name__]
    return out


def test_every_model_default_prior_passes():
    classes = _model_classes()
    assert len(classes) == 5, classes
    sets = [(c.name, c.default_priors) for c in classes]
    sets += [(f"poisson-gamma {s} tie={t}", PoissonGammaModel._defaults(s, t))
             for s in STRUCTURES for t in (False, True)]
    checked = 0
    for name, defaults in sets:
        # an empty update of every prior runs every check without changing anything
        assert merge_priors(defaults, {k: {} for k in defaults}, name) == defaults
        for prior, spec in defaults.items():
            if prior_problems(pm, prior, spec, name):
                # only the latent-class profile prior is the model's own configuration
                assert (name, prior) == ("latent-class", "phi"), (name, prior, spec)
            else:
                checked += 1
    assert checked >= 20


# ------------------------------------------------------------------ fit options
class _Unbuildable:
    """A model that fails if fit builds it: the checks must come first."""

    name = "unbuildable"
    priors: dict = {}

    def build(self):
        raise AssertionError("fit built the model before checking its options")

    def data_summary(self):
        return {}


@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"tune": -1}, "tune must be an integer >= 0"),
    ({"tune": 10.0}, "tune must be an integer >= 0"),
    ({"tune": True}, "tune must be an integer >= 0"),
    ({"draws": True}, "draws must be a positive integer"),
    ({"target_accept": 1.0}, "target_accept must be a number strictly between 0 and 1"),
    ({"target_accept": 0}, "target_accept must be a number strictly between 0 and 1"),
    ({"target_accept": "0.9"}, "target_accept must be a number strictly between 0 and 1"),
    ({"target_accept": float("nan")}, "target_accept must be a number strictly between"),
    ({"random_seed": "abc"}, r"random_seed must be None .* or an integer >= 0; got 'abc'"),
    ({"random_seed": -1}, r"random_seed must be None .* or an integer >= 0; got -1"),
    ({"random_seed": 1.5}, "random_seed must be None"),
    ({"random_seed": np.random.default_rng(1)}, "random_seed must be None"),
    ({"method": "advi", "advi_iterations": 0}, "advi_iterations must be a positive integer"),
    ({"rhat_threshold": 1.0}, "rhat_threshold must be a number > 1"),
    ({"rhat_threshold": None}, "rhat_threshold must be a number > 1"),
    ({"ess_threshold": 0}, "ess_threshold must be None .* or a number > 0"),
    ({"ess_threshold": "many"}, "ess_threshold must be None .* or a number > 0"),
    ({"cores": 0}, "cores must be None or a positive integer"),
    ({"cores": 2.0}, "cores must be None or a positive integer"),
    ({"laplace": "yes"}, "laplace must be True or False"),
    ({"strict": 1}, "strict must be True or False"),
    ({"draw": 10}, r"unknown option\(s\) 'draw' \(did you mean 'draws'\?\)"),
    ({"max_tree_depth": 8}, r"'max_tree_depth' \(did you mean 'max_treedepth'\?\)"),
    ({"target_acept": 0.95}, r"did you mean 'target_accept'\?"),
    ({"method": "map", "draw": 10}, r"unknown option\(s\) 'draw'"),
    ({"nuts_sampler": "numpyro"}, r"\['nuts_sampler'\] are set by fit itself"),
    ({"idata_kwargs": {}}, r"\['idata_kwargs'\] are set by fit itself"),
])
def test_bad_options_are_refused_before_anything_is_built(kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        fit(_Unbuildable(), **kwargs)


def test_good_options_reach_the_build():
    # numpy integers and the documented spellings pass the checks
    for kwargs in ({"random_seed": np.int64(3), "tune": np.int32(0), "cores": np.int64(1)},
                   {"random_seed": 0, "target_accept": 0.5, "ess_threshold": 10,
                    "rhat_threshold": 1.05, "laplace": np.bool_(False)},
                   {"max_treedepth": 8, "step_scale": 0.2, "nuts": {"max_treedepth": 8},
                    "init": "adapt_diag", "early_max_treedepth": 6}):
        with pytest.raises(AssertionError, match="fit built the model"):
            fit(_Unbuildable(), **kwargs)


def test_nuts_step_option_is_passed_and_pymc_chatter_is_silenced(small_model, caplog):
    caplog.set_level(logging.INFO, logger="pymc")
    idata = quiet_fit(small_model, draws=20, tune=20, chains=1, random_seed=1,
                      max_treedepth=2, progressbar=False)
    # the option reached PyMC's NUTS step
    assert int(idata.sample_stats["tree_depth"].max()) <= 2
    assert int(idata.sample_stats["reached_max_treedepth"].sum()) > 0
    pymc_info = [r for r in caplog.records
                 if r.name.startswith("pymc") and r.levelno == logging.INFO]
    assert pymc_info == [], [r.getMessage() for r in pymc_info]
    assert logging.getLogger("pymc").level == logging.INFO  # restored
    # with a progress bar PyMC's messages are kept
    caplog.clear()
    quiet_fit(small_model, draws=20, tune=20, chains=1, random_seed=1, max_treedepth=8,
              progressbar=True)
    messages = " ".join(r.getMessage() for r in caplog.records if r.name.startswith("pymc"))
    assert "Initializing NUTS" in messages and "ampling" in messages


# ------------------------------------------------------------------ seeds
def _settings(idata):
    return provenance(idata)["settings"]


def test_unseeded_map_fit_stamps_a_seed_that_repeats_it(small_model):
    first = fit(small_model, method="map", draws=30, chains=2)
    seed = _settings(first)["random_seed"]
    assert isinstance(seed, int) and seed >= 0
    again = fit(small_model, method="map", draws=30, chains=2, random_seed=seed)
    assert _settings(again)["random_seed"] == seed
    np.testing.assert_array_equal(again.posterior["alpha"].values, first.posterior["alpha"].values)
    other = fit(small_model, method="map", draws=30, chains=2)
    assert _settings(other)["random_seed"] != seed  # drawn afresh each time


def test_unseeded_nuts_fit_stamps_a_seed_that_repeats_it(small_model):
    first = quiet_fit(small_model, draws=50, tune=50, chains=1)
    seed = _settings(first)["random_seed"]
    assert isinstance(seed, int)
    again = quiet_fit(small_model, draws=50, tune=50, chains=1, random_seed=seed)
    np.testing.assert_array_equal(again.posterior["alpha"].values, first.posterior["alpha"].values)


# ------------------------------------------------------------------ methods per model
def test_latent_class_model_refuses_map_and_advi_up_front(monkeypatch):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 3, 60), "b": rng.integers(0, 2, 60)})
    model = LatentClassModel.from_frame(frame, ["a", "b"], n_classes=2)

    def boom():
        raise AssertionError("built the PyMC graph")

    monkeypatch.setattr(model, "build", boom)
    for method in ("map", "advi"):
        with pytest.raises(InputError) as info:
            fit(model, method=method, draws=10, chains=1)
        msg = str(info.value)
        assert f"fit(method={method!r}) is not supported for the latent-class model" in msg
        assert "model.sample(" in msg and "assess_posterior(md, model='latent-class')" in msg
        assert "method='nuts'" in msg
    with pytest.raises(AssertionError, match="built the PyMC graph"):  # nuts goes on
        fit(model, method="nuts", draws=10, tune=10, chains=1)


class _NutsOnly(_Unbuildable):
    name = "nuts-only"
    supported_fit_methods = ("nuts",)


class _OwnSampler(_NutsOnly):
    name = "own-sampler"

    def sample(self):  # pragma: no cover - never called
        raise AssertionError


def test_models_declare_their_fit_methods():
    with pytest.raises(InputError, match=r"not supported for the nuts-only model \(it supports "
                                         r"\['nuts'\]\); use method='nuts'$"):
        fit(_NutsOnly(), method="map")
    with pytest.raises(InputError, match=r"use the model's own sampler, model\.sample\(\.\.\.\)"):
        fit(_OwnSampler(), method="advi")
    # declared methods, and models that declare none, go on to the build
    with pytest.raises(AssertionError, match="fit built the model"):
        fit(_NutsOnly(), method="nuts")
    with pytest.raises(AssertionError, match="fit built the model"):
        fit(_Unbuildable(), method="map")


# ------------------------------------------------------------------ ADVI
class _MatrixModel:
    """A free variable with two dimensions, as the latent-class profiles have."""

    name = "matrix"
    priors: dict = {}

    def build(self):
        with pm.Model(coords={"row": [0, 1], "col": [0, 1, 2]}) as model:
            mu = pm.Normal("mu", 0.0, 1.0, dims=("row", "col"))
            pm.Normal("y", mu=mu, sigma=1.0, observed=np.arange(6.0).reshape(2, 3) / 6,
                      dims=("row", "col"))
        return model

    def data_summary(self):
        return {}


def test_advi_starts_a_matrix_valued_variable():
    # PyMC writes each start sigma into a flat slice: an unravelled (2, 3) one failed
    idata = quiet_fit(_MatrixModel(), method="advi", draws=10, chains=1, advi_iterations=200,
                      random_seed=1)
    assert idata.posterior["mu"].shape == (1, 10, 2, 3)


def test_latent_class_priors_that_are_not_a_mapping_get_the_base_error():
    # used to be an AttributeError ('list' object has no attribute 'get') in its __init__
    with pytest.raises(InputError, match=r"priors for model 'latent-class' must be a mapping"):
        LatentClassModel([[0, 0], [1, 1]], [1, 2], [2, 2], n_classes=2, priors=[("phi", {})])
    assert LatentClassModel.supported_fit_methods == ("nuts", "nutpie")
