"""The profile mass chosen by the cross-validation (``profile_mass_cv``, ``profile_mass="cv"``).

The rule is checked on a stubbed cross-validation whose Poisson prediction is a known
function of the mass (which candidates are tried, the crossing interpolated in log mass,
one seed for every run); the demo sample checks, with the real cross-validation, the
mechanism the rule rests on (a larger mass raises the held-out prediction); the sampler,
the harness method and the CLI check the plumbing (the learnt mass kept gives the
default's draws bit for bit; a chosen mass is the prior the chains run with and is
stamped).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process, run_main

import sdcbayes.models.latent_class as lcm
from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import (
    KAPPA_GRID,
    LatentClassModel,
    profile_mass_cv,
    profile_mass_span,
)
from sdcbayes.validation import latent_class_method

LEARNT = 32.0


def _model(seed=0, n=800):
    # one key of 24 levels (its profile mass is learnt), two small ones
    rng = np.random.default_rng(seed)
    z = rng.random(n) < 0.5
    a = np.where(z, rng.integers(0, 12, n), rng.integers(8, 24, n))
    b = np.where(z, rng.integers(0, 2, n), rng.integers(1, 3, n))
    c = rng.integers(0, 4, n)
    cells, f = np.unique(np.column_stack([a, b, c]), axis=0, return_counts=True)
    return LatentClassModel(cells, f, [24, 3, 4], keys=["a", "b", "c"], n_classes=6)


def _stub(calls, observed=100.0, slope=8.0):
    """A cross-validation whose Poisson prediction is 80 + slope log2(M / LEARNT)."""
    def cv(model, *, random_seed=None, **kw):
        mass = model.priors["phi"]["mass"]
        m = LEARNT if mass == "learn" else float(mass)
        calls.append({"mass": mass, "u": np.random.default_rng(random_seed).random(), **kw})
        weights = np.zeros(KAPPA_GRID.size)
        weights[10 if mass == "learn" else 40] = 1.0  # a kappa per prior: which one is used
        return {"method": "cv", "grid": KAPPA_GRID, "weights": weights,
                "observed": observed, "predicted_poisson": 80.0 + slope * np.log2(m / LEARNT),
                "part_phi_mass": [LEARNT if model.learns_mass(j) else 1.0
                                  for j in range(len(model.keys))]}
    return cv


def _stubbed(monkeypatch, **kw):
    """Put :func:`_stub` in place of the cross-validation; returns its list of calls."""
    calls = []
    monkeypatch.setattr(lcm, "overdispersion_cv", _stub(calls, **kw))
    return calls


def test_learnt_mass_kept_where_it_reaches_the_held_out_count(monkeypatch):
    calls = _stubbed(monkeypatch, observed=70.0)
    model = _model()
    out = profile_mass_cv(model, random_seed=3, ratios=(4, 8))
    assert out["model"] is model and len(calls) == 1
    assert calls[0]["ratios"] == (4, 8)  # the options reach the cross-validation
    assert out["summary"]["mass"] == "learn" and out["summary"]["learnt_mass"] == LEARNT
    assert out["overdispersion"]["predicted_poisson"] == 80.0


def test_mass_interpolated_at_the_crossing_in_log_mass(monkeypatch):
    calls = _stubbed(monkeypatch)
    model = _model()
    out = profile_mass_cv(model, random_seed=3)
    # predictions 80, 88 (64), 96 (128), 104 (256): the count 100 is crossed half way
    # between 128 and 256 in log mass, i.e. at sqrt(128 * 256); that mass gets its own run
    expected = float(np.sqrt(128.0 * 256.0))
    assert [c["mass"] for c in calls][:4] == ["learn", 64.0, 128.0, 256.0]
    assert calls[4]["mass"] == pytest.approx(expected)
    assert len(calls) == 5
    assert out["summary"]["mass"] == pytest.approx(expected)
    assert [t["mass"] for t in out["summary"]["tried"]][:4] == ["learn", 64.0, 128.0, 256.0]
    phi = out["model"].priors["phi"]
    assert phi["mass"] == pytest.approx(expected) and phi["a"] == "marginal"
    assert phi["min_levels"] == model.priors["phi"]["min_levels"]
    # the other keys keep 1/L per level; the chosen mass is fixed, no longer learnt
    assert out["model"].learns_phi_mass is False and model.learns_phi_mass is True
    np.testing.assert_allclose(out["model"].phi_concentration(1), 1.0 / 3)
    assert out["model"].phi_concentration(0).sum() == pytest.approx(expected)
    assert out["overdispersion"]["predicted_poisson"] == pytest.approx(100.0)
    # every run sees the same partitions (one seed, re-used)
    assert len({c["u"] for c in calls}) == 1


def test_candidates_above_the_learnt_mass_only_and_the_largest_when_none_reaches(monkeypatch):
    calls = _stubbed(monkeypatch, observed=1e6)
    profile_mass_cv(_model(), masses=(16, 32, 64, 2048))
    # 16 and 32 (the learnt mass itself) are not tried; nothing reaches: the last one
    assert [c["mass"] for c in calls] == ["learn", 64.0, 2048.0]
    calls.clear()
    out = profile_mass_cv(_model(), masses=(64, 2048))
    assert out["summary"]["mass"] == 2048.0 and out["model"].priors["phi"]["mass"] == 2048.0
    assert len(calls) == 3  # the last candidate's run is the chosen model's
    assert out["summary"]["reached"] is False


def test_unreached_learnt_keeps_the_learnt_mass_after_trying_every_candidate(monkeypatch):
    calls = _stubbed(monkeypatch, observed=1e6)
    model = _model()
    out = profile_mass_cv(model, masses=(64, 2048), unreached="learnt", random_seed=3)
    assert [c["mass"] for c in calls] == ["learn", 64.0, 2048.0]  # all tried first
    assert out["model"] is model and out["summary"]["mass"] == "learn"
    assert out["summary"]["reached"] is False
    assert out["overdispersion"] is out["learnt_overdispersion"]
    assert out["overdispersion"]["predicted_poisson"] == 80.0  # the learnt prior's run
    # where a candidate reaches the count it changes nothing: the crossing as before
    monkeypatch.setattr(lcm, "overdispersion_cv", _stub(calls))
    for unreached in ("learnt", "largest"):
        out = profile_mass_cv(model, unreached=unreached, random_seed=3)
        assert out["summary"]["mass"] == pytest.approx(np.sqrt(128.0 * 256.0))
        assert out["summary"]["reached"] is True
    calls.clear()
    with pytest.raises(InputError, match="unreached"):
        profile_mass_cv(model, unreached="smallest")
    assert calls == []


def test_bad_prior_or_masses_fail_before_any_cross_validation(monkeypatch):
    calls = _stubbed(monkeypatch)
    model = _model()
    inverse = model.with_priors({"phi": {"dist": "Dirichlet", "a": "inverse"}})
    with pytest.raises(InputError, match="learnt profile prior"):
        profile_mass_cv(inverse)
    for bad in ((), (128, 64), (0, 64)):
        with pytest.raises(InputError, match="increasing"):
            profile_mass_cv(model, masses=bad)
    assert calls == []
    with pytest.raises(InputError, match="profile_mass"):
        model.sample(draws=5, tune=0, chains=1, profile_mass="cv")  # no overdispersion='cv'
    with pytest.raises(InputError, match="profile_mass"):
        model.sample(draws=5, tune=0, chains=1, overdispersion="cv", profile_mass="all")
    with pytest.raises(InputError, match="cluster_correction"):
        model.sample(draws=5, tune=0, chains=1, overdispersion="cv", profile_mass="cv",
                     cluster_correction="cv")  # no clusters known
    with pytest.raises(InputError, match="profile_mass"):
        latent_class_method(profile_mass="cv")  # overdispersion None
    assert calls == []


def test_learnt_mass_kept_gives_the_default_draws(monkeypatch):
    # the real cross-validation, its observed count lowered so that the learnt mass is kept
    real = lcm.overdispersion_cv
    calls = []

    def cv(model, **kw):
        calls.append(model.priors["phi"]["mass"])
        return {**real(model, **kw), "observed": 0}

    monkeypatch.setattr(lcm, "overdispersion_cv", cv)
    model = _model()
    kw = dict(draws=15, tune=10, chains=2, N=16_000.0, random_seed=5, store="all",
              overdispersion="cv", cores=1)
    default = model.sample(**kw)
    chosen = model.sample(profile_mass="cv", **kw)
    assert calls == ["learn", "learn"]  # no candidate tried: one run each
    for name in ("pi", "w", "kappa", "phi_mass"):
        np.testing.assert_array_equal(default.posterior[name].values,
                                      chosen.posterior[name].values)
    assert json.loads(chosen.attrs["profile_mass"])["mass"] == "learn"
    assert chosen.attrs["priors"] == default.attrs["priors"]


def test_a_chosen_mass_is_the_prior_the_chains_run_with(monkeypatch):
    calls = _stubbed(monkeypatch)
    model = _model()
    idata = model.sample(draws=10, tune=5, chains=2, N=16_000.0, random_seed=5,
                         overdispersion="cv", profile_mass="cv", cores=1)
    expected = float(np.sqrt(128.0 * 256.0))
    prior = json.loads(idata.attrs["priors"])["phi"]
    assert prior["mass"] == pytest.approx(expected)
    assert "phi_mass" not in idata.posterior  # fixed, not learnt
    # kappa drawn from the chosen model's cross-validated posterior (the stub's point)
    assert np.all(idata.posterior["kappa"].values == KAPPA_GRID[40])
    summary = json.loads(idata.attrs["profile_mass"])
    assert summary["mass"] == pytest.approx(expected) and summary["learnt_mass"] == LEARNT
    assert len(summary["tried"]) == 4
    # the cross-validations ran with the sampler's settings: the population's N/n
    assert calls[0]["max_ratio"] == pytest.approx(16_000.0 / model.n)


def test_a_larger_mass_raises_the_held_out_prediction_on_the_demo():
    # the mechanism the rule rests on, with the real cross-validation: on the demo sample
    # the learnt mass leaves its part-uniques more often unique than even Poisson cells
    # predict, and each larger mass of the many-level keys raises that prediction
    from sdcbayes.datasets import load_demo
    from sdcbayes.microdata import Microdata

    demo = load_demo()
    md = Microdata(demo.sample, keys=list(demo.keys), weight=demo.weight)
    model = LatentClassModel.from_microdata(md)  # weight classes, as `sdcbayes assess`
    N = float(np.asarray(md.weights).sum())
    out = profile_mass_cv(model, random_seed=1, em_restarts=1, max_ratio=N / model.n,
                          masses=(1024.0, 8192.0))
    tried = out["summary"]["tried"]
    pred = [t["predicted_poisson"] for t in tried]
    assert tried[0]["observed"] > pred[0]  # the learnt mass falls short
    assert [t["mass"] for t in tried] == ["learn", 1024.0, 8192.0]
    assert pred[0] < pred[1] < pred[2]


@pytest.mark.parametrize("rule", ["cv", "span"])
def test_harness_method_notes_the_mass(rule):
    rng = np.random.default_rng(0)
    n = 600
    sample = pd.DataFrame({"a": rng.integers(0, 24, n).astype(str),
                           "b": rng.integers(0, 3, n).astype(str), "w": 10.0})
    method = latent_class_method(n_classes=4, draws=10, tune=5, overdispersion="cv",
                                 profile_mass=rule, structural_zeros=None, em_restarts=2)
    est = method(sample, ["a", "b"], "w", 6000)
    assert "profile mass " in est.note
    assert est.intervals["tau1"][0] <= est.tau1 <= est.intervals["tau1"][1]


def _cli_demo(rule, tmp_path, capsys):
    """``assess --profile-prior <rule>``: refused without the cross-validated overdispersion
    (one line, exit 2, nothing written), then run on the demo; (process, output folder)."""
    proc = run_in_process(capsys, "assess", "--profile-prior", rule, "--overdispersion",
                          "none", "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, f"--profile-prior {rule}", "--overdispersion cv")
    assert not (tmp_path / "x").exists()
    out = tmp_path / rule
    proc = run_main(capsys, "assess", "--profile-prior", rule, "--draws", "20",
                    "--tune", "10", "--chains", "2", "--seed", "1", "--no-posterior",
                    "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return proc, out


def test_cli_profile_prior_cv(tmp_path, capsys):
    proc, out = _cli_demo("cv", tmp_path, capsys)
    assert "profile mass, keys of >= 20 levels" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    pm = summary["profile_mass"]
    assert pm["tried"][0]["mass"] == "learn"
    # the stamped prior is the one the chains ran with
    assert summary["provenance"]["priors"]["phi"]["mass"] == pm["mass"]
    assert summary["provenance"]["settings"]["profile_mass"] == "cv"


def test_accuracy_harness_passes_the_option(monkeypatch):
    from types import SimpleNamespace

    from benchtools import load_benchmark

    bench = load_benchmark("latent_class_accuracy.py")
    seen, unreached = [], []

    class Stop(Exception):
        pass

    def method(**kw):
        seen.append(kw["profile_mass"])
        unreached.append(kw["profile_mass_unreached"])
        raise Stop

    monkeypatch.setattr(bench, "latent_class_method", method)
    monkeypatch.setattr(bench, "populations_with_codebook",
                        lambda names: iter([("adult6", SimpleNamespace(keys=["a"]), None)]))
    for argv, want in (([], None), (["--profile-mass", "cv"], "cv"),
                       (["--profile-mass", "span"], "span")):
        with pytest.raises(Stop):
            bench.main(argv)
        assert seen[-1] == want
    for argv, want in (([], None), (["--profile-mass-unreached", "largest"], "largest")):
        with pytest.raises(Stop):
            bench.main(["--profile-mass", "span", *argv])
        assert unreached[-1] == want
    # --em-learn-mass sets the module's EM_LEARN_MASS, which fit_em reads at each call
    monkeypatch.setattr(lcm, "EM_LEARN_MASS", "converged")  # restored after the test
    with pytest.raises(Stop):
        bench.main(["--em-learn-mass", "always"])
    assert lcm.EM_LEARN_MASS == "always"
    with pytest.raises(Stop):
        bench.main([])
    assert lcm.EM_LEARN_MASS == "converged"


# ---------------------------------------------------------------- the mass as a range
def test_span_is_the_default_model_where_the_learnt_mass_reaches_the_count(monkeypatch):
    calls = _stubbed(monkeypatch, observed=70.0)
    model = _model()
    out = profile_mass_span(model, random_seed=3)
    assert out["model"] is model and len(calls) == 1
    assert out["summary"]["rule"] == "cv-span" and out["summary"]["mass"] == "learn"
    assert "low" not in out["summary"]


def test_span_is_the_default_model_where_no_candidate_reaches_the_count(monkeypatch):
    calls = _stubbed(monkeypatch, observed=1e6)
    model = _model()
    out = profile_mass_span(model, random_seed=3)
    assert len(calls) == 1 + len(lcm.PROFILE_MASS_CANDIDATES)
    assert out["model"] is model and out["summary"]["mass"] == "learn"
    assert out["summary"]["reached"] is False and out["overdispersion"]["weights"][10] == 1.0
    # the first version (stored results before the option existed) spanned up to the largest
    out = profile_mass_span(model, random_seed=3, unreached="largest")
    assert np.exp(out["model"]._mass_span["log_high"]) == pytest.approx(
        lcm.PROFILE_MASS_CANDIDATES[-1])


def test_span_runs_from_the_learnt_masses_to_the_crossing(monkeypatch):
    _stubbed(monkeypatch)
    model = _model()
    out = profile_mass_span(model, random_seed=3)
    expected = float(np.sqrt(128.0 * 256.0))
    span = out["model"]._mass_span
    assert out["model"] is not model and not hasattr(model, "_mass_span")
    np.testing.assert_array_equal(span["keys"], [True, False, False])
    assert np.exp(span["log_high"]) == pytest.approx(expected)
    # the low end's kappa is the learnt prior's cross-validation, the high end's the chosen's
    assert out["overdispersion"]["weights"][10] == 1.0
    assert span["kappa_high"][1][40] == 1.0
    assert out["summary"]["rule"] == "cv-span"
    assert out["summary"]["mass"] == pytest.approx(expected)
    # the prior stays the learnt one (the span moves its draws of M, not the prior)
    assert out["model"].priors == model.priors


def test_span_sampler_draws_the_mass_over_its_range_and_kappa_with_it(monkeypatch):
    _stubbed(monkeypatch)
    model = _model()
    kw = dict(draws=200, tune=5, chains=2, N=16_000.0, random_seed=5, overdispersion="cv",
              cores=1)
    # the conditional draw of M (data-dependent) held at 8, so that what the span adds
    # is seen alone: log M = (1 - u) log 8 + u log high with u ~ U(0, 1)
    monkeypatch.setattr(LatentClassModel, "_learn_mass", lambda self, c, j, rng=None: 8.0)
    idata = model.sample(profile_mass="span", **kw)
    high = float(np.sqrt(128.0 * 256.0))
    m = idata.posterior["phi_mass"].sel(key="a").values.ravel()
    u = (np.log(m) - np.log(8.0)) / (np.log(high) - np.log(8.0))
    assert u.min() >= -1e-12 and u.max() <= 1 + 1e-12
    # uniform: mean 1/2, sd 1/sqrt(12) = 0.29; 400 draws give a mean within 0.5 +- 0.05
    # (3.5 standard errors)
    assert abs(u.mean() - 0.5) < 0.05 and np.std(u) == pytest.approx(12 ** -0.5, rel=0.15)
    # the keys of fewer levels keep their fixed mass (1/L per level)
    np.testing.assert_allclose(idata.posterior["phi_mass"].sel(key="b").values, 1.0)
    # kappa from the high end's posterior with probability u: about half of the draws
    k = idata.posterior["kappa"].values.ravel()
    assert set(np.unique(k)) == {KAPPA_GRID[10], KAPPA_GRID[40]}
    assert abs(np.mean(k == KAPPA_GRID[40]) - 0.5) < 0.1
    summary = json.loads(idata.attrs["profile_mass"])
    assert summary["rule"] == "cv-span" and summary["mass"] == pytest.approx(high)
    assert json.loads(idata.attrs["priors"])["phi"]["mass"] == "learn"


def test_span_checks_its_input():
    model = _model()
    with pytest.raises(InputError, match="positive high mass"):
        model.with_mass_span(-1.0)
    inverse = model.with_priors({"phi": {"dist": "Dirichlet", "a": "inverse"}})
    with pytest.raises(InputError, match="learns"):
        inverse.with_mass_span(100.0)
    with pytest.raises(InputError, match="profile_mass"):
        model.sample(draws=5, tune=0, chains=1, profile_mass="span")  # no overdispersion='cv'
    with pytest.raises(InputError, match="learnt profile prior"):
        profile_mass_span(inverse)
    with pytest.raises(InputError, match="profile_mass"):
        latent_class_method(profile_mass="range", overdispersion="cv")
    with pytest.raises(InputError, match="profile_mass_unreached"):
        latent_class_method(profile_mass="span", overdispersion="cv",
                            profile_mass_unreached="last")
    with pytest.raises(InputError, match="profile_mass_unreached"):
        latent_class_method(overdispersion="cv", profile_mass_unreached="learnt")


def test_cli_profile_prior_span(tmp_path, capsys, monkeypatch):
    proc, out = _cli_demo("span", tmp_path, capsys)
    summary = json.loads((out / "summary.json").read_text())
    pm = summary["profile_mass"]
    # on the demo the learnt mass falls short of the held-out count and so does every
    # candidate (the parts' prediction gains about 7 of the 30-odd it lacks from 16
    # times the mass): the span keeps the learnt mass, and says why
    assert pm["rule"] == "cv-span" and pm["mass"] == "learn" and pm["reached"] is False
    # every candidate above the learnt mass is tried. The learnt mass is the whole sample's
    # EM fit in the cross-validation's random stream, which was reseeded so that it does
    # not depend on --chains (audit E, F2): on this seed its EM now ends at mass 256
    # (before: 16, below every candidate), so 512 and 1024 are tried
    assert [t["mass"] for t in pm["tried"]] == [
        "learn", *[m for m in lcm.PROFILE_MASS_CANDIDATES
                   if m > pm["learnt_mass"] * (1 + 1e-6)]], pm
    predicted = np.array([t["predicted_poisson"] for t in pm["tried"]])
    observed = np.array([t["observed"] for t in pm["tried"]])
    # (that the prediction rises with the mass was read here from 16 to 1024; from the
    # reseeded stream's 256 to 1024 it moves within the parts' noise, audit E F2: the
    # mechanism is checked by test_a_larger_mass_raises_the_held_out_prediction_on_the_demo)
    assert np.all(predicted < observed)
    assert "learnt; no larger mass reaches the held-out count" in proc.stdout
    # the prior the chains ran with is the learnt one (the span moves its draws)
    assert summary["provenance"]["priors"]["phi"]["mass"] == "learn"
    assert summary["provenance"]["settings"]["profile_mass"] == "span"
    # where a mass reaches it (a stubbed cross-validation: the crossing sqrt(128 256)),
    # the row gives the range's top
    monkeypatch.setattr(lcm, "overdispersion_cv", _stub([]))
    out = tmp_path / "stubbed"
    proc = run_in_process(capsys, "assess", "--profile-prior", "span", "--draws", "10",
                          "--tune", "5", "--chains", "1", "--seed", "1", "--no-posterior",
                          "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    pm = json.loads((out / "summary.json").read_text())["profile_mass"]
    assert pm["mass"] == pytest.approx(np.sqrt(128.0 * 256.0)) and pm["reached"] is True
    assert f"learnt, spread up to {pm['mass']:.3g} (cross-validated)" in proc.stdout


def test_accuracy_harness_phi_mass_top_moves_the_grids_end(monkeypatch):
    """--phi-mass-top ends the learnt mass's grid elsewhere, for the draws and the
    marginal likelihood alike (restored after the test)."""
    from benchtools import load_benchmark

    from sdcbayes.models.latent_class import LatentClassModel, profile_mass_loglik

    bench = load_benchmark("latent_class_accuracy.py")
    monkeypatch.setattr(lcm, "PHI_MASS_GRID", lcm.PHI_MASS_GRID)
    monkeypatch.setattr(profile_mass_loglik, "__defaults__", profile_mass_loglik.__defaults__)
    grid = bench.set_phi_mass_top(17)
    assert grid[0] == 0.25 and grid[-1] == 2.0 ** 17 and np.allclose(np.diff(np.log2(grid)), 0.5)
    assert lcm.PHI_MASS_GRID is grid and profile_mass_loglik.__defaults__[0] is grid
    # a key whose class counts follow its base exactly: the marginal likelihood rises to
    # the grid's end, so EM's mode is the new top, not 8192
    codes = np.array([[0, lv] for lv in range(25)] + [[1, lv] for lv in range(25)])
    model = LatentClassModel(codes, np.full(50, 40), [2, 25], n_classes=2,
                             priors={"phi": {"dist": "Dirichlet", "a": "marginal",
                                             "mass": "learn", "min_levels": 20}})
    counts = np.full((25, 2), 400.0)
    assert profile_mass_loglik(counts, model.phi_base(1)).shape == grid.shape
    assert model._learn_mass(counts, 1) == 2.0 ** 17
    with pytest.raises(SystemExit):
        bench.set_phi_mass_top(-3)
