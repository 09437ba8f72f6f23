"""Fixes from audit Y of the public Python API (FINDINGS.md, findings 1 and 2).

1. ``assess_posterior(md)`` fitted the Poisson-gamma model with 1000 tuning steps,
   while the README and ``sdcbayes assess`` call the latent-class model, 2000 burn-in
   sweeps, the default (on the demo tau1 24 [17, 32] against a true 147). It now fits
   what ``sdcbayes assess`` fits; an explicit ``model="poisson-gamma"`` keeps its NUTS
   defaults.
2. ``quantiles=0.9`` (or ``(0.9,)``) was accepted and gave intervals of width 0.

The default settings are read from what reaches the sampler (monkeypatched), not from
2000 real sweeps; the real fits use a few draws.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.risk import posterior_assess as pa
from sdcbayes.risk.posterior_assess import assess_from_posterior, assess_posterior

SCALAR_MESSAGE = ("quantiles is a sequence of probabilities, e.g. (0.05, 0.95) for a 90% "
                  "interval; got 0.9")


def _md(seed: int = 5, n: int = 300, **kw) -> Microdata:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({k: rng.choice(list("abcdef"[:L]), n) for k, L in
                          (("x", 6), ("y", 4), ("z", 3))})
    kw.setdefault("sampling_fraction", 0.1)
    return Microdata(frame, keys=["x", "y", "z"], **kw)


class _Stop(Exception):
    """Raised by a stand-in sampler once it has seen its arguments."""


@pytest.fixture
def seen(monkeypatch):
    """What reaches the latent-class route and the NUTS fit, without sampling."""
    import sdcbayes.inference as inference

    calls: list[dict] = []

    def latent_class(md, **kw):
        calls.append({"route": "latent-class"} | kw)
        raise _Stop

    def fit(spec, **kw):
        calls.append({"route": "fit", "model": spec.name} | kw)
        raise _Stop

    monkeypatch.setattr(pa, "_assess_latent_class", latent_class)
    monkeypatch.setattr(inference, "fit", fit)
    return calls


# ----------------------------------------------------------------- 1. the default model


def test_signature_defaults_are_the_latent_class_model_and_per_model_settings():
    sig = inspect.signature(assess_posterior)
    assert sig.parameters["model"].default == "latent-class"
    for name in ("draws", "chains", "tune"):
        assert sig.parameters[name].default is None, name


@pytest.mark.parametrize("model", ["latent-class", "poisson-gamma"])
def test_sampler_defaults_are_those_of_sdcbayes_assess(model, tmp_path, capsys, monkeypatch):
    # the CLI reads the API's table: a changed entry changes what `assess` runs
    from clitools import run_in_process

    def stop(*args, **kwargs):
        raise InputError("stopped before the fit")

    key = "latent-class" if model == "latent-class" else "nuts"
    monkeypatch.setitem(pa.SAMPLER_DEFAULTS, key, {"draws": 37, "chains": 3, "tune": 41})
    monkeypatch.setattr(pa, "assess_posterior", stop)
    proc = run_in_process(capsys, "assess", "--model", model, "--out", str(tmp_path / "o"))
    line = next(x for x in proc.stderr.splitlines() if x.startswith("fitting"))
    assert "3 chains x 37 draws" in line and "41" in line, line


def test_sampler_default_values():
    assert pa.SAMPLER_DEFAULTS["latent-class"] == {"draws": 500, "chains": 4, "tune": 2000}
    # the NUTS models keep what assess_posterior gave them before
    assert pa.SAMPLER_DEFAULTS["nuts"] == {"draws": 1000, "chains": 4, "tune": 1000}


def test_default_call_runs_the_latent_class_gibbs_sampler_with_2000_sweeps(seen):
    md = _md()
    with pytest.raises(_Stop):
        assess_posterior(md, random_seed=1)
    (call,) = seen
    assert call["route"] == "latent-class"
    assert call["method"] == "gibbs"
    assert (call["draws"], call["chains"], call["tune"]) == (500, 4, 2000)
    assert call["n_classes"] == 30


def test_latent_class_fills_only_the_settings_left_out(seen):
    md = _md()
    with pytest.raises(_Stop):
        assess_posterior(md, model="latent-class", tune=50, random_seed=1)
    with pytest.raises(_Stop):
        assess_posterior(md, draws=7, chains=2, tune=0, random_seed=1)
    assert [(c["draws"], c["chains"], c["tune"]) for c in seen] == [(500, 4, 50), (7, 2, 0)]


@pytest.mark.parametrize("model", ["poisson-gamma", "negbin"])
def test_explicit_nuts_models_keep_their_former_defaults(seen, model):
    md = _md(weight=None) if model == "poisson-gamma" else _weighted_md()
    with pytest.raises(_Stop):
        assess_posterior(md, model=model, random_seed=1)
    with pytest.raises(_Stop):
        assess_posterior(md, model=model, draws=200, chains=2, tune=300, random_seed=1)
    first, given = seen
    assert first["route"] == "fit" and first["method"] == "nuts"
    # 1000 draws, 4 chains, 1000 tuning steps: the former signature's defaults
    assert (first["draws"], first["chains"], first["tune"]) == (1000, 4, 1000)
    assert (given["draws"], given["chains"], given["tune"]) == (200, 2, 300)


def _weighted_md() -> Microdata:
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"a": rng.integers(0, 6, 200), "b": rng.integers(0, 4, 200),
                          "w": rng.uniform(5.0, 20.0, 200)})
    return Microdata(frame, keys=["a", "b"], weight="w")


def test_default_fit_is_stamped_latent_class_with_the_settings_used():
    from sdcbayes.inference.posterior import posterior_stamps

    md = _md()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 20 draws of one chain: ESS warnings expected
        res = assess_posterior(md, draws=20, chains=1, tune=10, random_seed=1, n_classes=4,
                               em_restarts=1, overdispersion=None)
    assert res.summary["model"] == "latent-class"
    assert res.summary["method"] == "gibbs"
    settings = res.provenance["settings"]
    assert (settings["draws"], settings["chains"], settings["tune"]) == (20, 1, 10)
    assert res.idata.posterior.sizes["draw"] == 20 and res.idata.posterior.sizes["chain"] == 1
    stamps = posterior_stamps(res.idata)
    assert stamps["model"] == "latent-class"
    assert stamps["settings"]["tune"] == 10


def test_default_burn_in_is_stamped_when_left_out():
    # a real run with tune left out: 2000 sweeps of a small file (4 classes, one chain)
    md = _md(n=150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = assess_posterior(md, draws=5, chains=1, random_seed=2, n_classes=4,
                               em_restarts=1, overdispersion=None)
    settings = res.provenance["settings"]
    assert (settings["draws"], settings["chains"], settings["tune"]) == (5, 1, 2000)
    assert res.summary["model"] == "latent-class"


def test_wildcard_file_with_missing_keys_gets_the_clear_error_before_any_work(monkeypatch):
    def started(*args, **kwargs):
        raise AssertionError("assess_posterior started working before refusing its input")

    monkeypatch.setattr(pa, "seed_or_drawn", started)
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.integers(0, 5, 80).astype(float),
                          "b": rng.integers(0, 4, 80)})
    frame.loc[:5, "a"] = np.nan
    wild = Microdata(frame, keys=["a", "b"], sampling_fraction=0.1)  # missing="wildcard"
    with pytest.raises(InputError, match=r"the latent-class model needs each record in one "
                                         r"cell.*missing='category'.*missing='drop'.*closed "
                                         r"form"):
        assess_posterior(wild, random_seed=1)


# ----------------------------------------------------------------- 2. quantiles


@pytest.fixture
def no_work(monkeypatch):
    def started(*args, **kwargs):
        raise AssertionError("work started before the quantiles were refused")

    monkeypatch.setattr(pa, "seed_or_drawn", started)


def test_scalar_quantiles_are_refused_before_fitting(no_work):
    md = _md()
    for model in ("latent-class", "poisson-gamma"):
        with pytest.raises(InputError) as err:
            assess_posterior(md, model=model, quantiles=0.9, draws=5, chains=1, tune=0)
        assert str(err.value) == SCALAR_MESSAGE


@pytest.mark.parametrize(
    "quantiles, match",
    [
        (np.float64(0.9), "quantiles is a sequence of probabilities.*got 0.9"),
        ((0.9,), r"at least two different probabilities.*got \[0.9\]"),
        ([0.5, 0.5], r"at least two different probabilities.*got \[0.5, 0.5\]"),
        ((), r"at least two different probabilities.*got \[\]"),
        ("0.05,0.95", "quantiles is a sequence of probabilities.*got '0.05,0.95'"),
        ([[0.05, 0.95]], "flat sequence of probabilities"),
        ((0.05, 1.5), "quantiles must lie strictly between 0 and 1"),
    ],
    ids=["numpy-scalar", "one", "repeated", "empty", "text", "nested", "above-one"],
)
def test_quantiles_that_give_no_interval_are_refused(no_work, quantiles, match):
    with pytest.raises(InputError, match=match):
        assess_posterior(_md(), quantiles=quantiles, draws=5, chains=1, tune=0)


def _spread_posterior():
    rng = np.random.default_rng(0)
    shape = (2, 40)
    return xr.Dataset(
        {"alpha": (("chain", "draw"), rng.uniform(0.5, 2.0, shape)),
         "beta": (("chain", "draw"), rng.uniform(0.005, 0.05, shape))},
        coords={"chain": np.arange(2), "draw": np.arange(40)},
    )


def test_every_public_function_with_quantiles_refuses_a_scalar_and_one_quantile():
    from sdcbayes.risk.posterior import evaluate_groups, summarise_draws, summary_table

    md = _md(weight=None)
    draws = xr.Dataset({"tau1": (("chain", "draw"), np.arange(8.0).reshape(2, 4))})
    calls = {
        "assess_from_posterior": lambda q: assess_from_posterior(
            md, _spread_posterior(), "poisson-gamma", quantiles=q, random_seed=1),
        "evaluate_groups": lambda q: evaluate_groups(None, quantiles=q),
        "evaluate_poisson_cells": lambda q: pa.evaluate_poisson_cells(
            [1, 2], np.full((3, 2), 0.1), 10.0, 100.0, quantiles=q),
        "summary_table": lambda q: summary_table(draws, quantiles=q),
        "summarise_draws": lambda q: summarise_draws(np.arange(10.0), quantiles=q),
    }
    for name, call in calls.items():
        with pytest.raises(InputError) as err:
            call(0.9)
        assert str(err.value) == SCALAR_MESSAGE, name
        with pytest.raises(InputError, match="at least two different probabilities"):
            call((0.9,))


def test_valid_quantiles_in_any_order_give_an_ascending_interval_of_width():
    from sdcbayes.risk.posterior import summarise_draws, summary_table

    x = np.arange(101.0)
    mean, qs = summarise_draws(x, quantiles=(0.95, 0.05))
    assert mean == 50.0
    np.testing.assert_allclose(qs, [5.0, 95.0])
    draws = xr.Dataset({"tau1": (("chain", "draw"), x[:100].reshape(2, 50))})
    row = summary_table(draws, quantiles=(0.9, 0.1)).iloc[0]
    assert row["lo"] < row["hi"]
    assert row["lo"] == pytest.approx(np.quantile(x[:100], 0.1))
