"""Audit Z3 findings 1, 3 and 6 on risk/posterior_assess.py.

1. The latent-class model with unequal weights extrapolates class by class over the weight
   classes of every stratum; when the stratum is a key, each cell's population lies in its
   own stratum, so a stratum taken in full (weights 1) must give its records risk 1/f_k.
3. With every weight 1 the results are exact: no convergence warnings, ``strict`` raises
   nothing, and ``diagnostics["note"]`` says so (as ``sdcbayes assess`` does).
6. ``assess_posterior(model="negbin", sigma=...)`` fixes sigma, as the refusal advises.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import sdcbayes
from sdcbayes.exceptions import InputError
from sdcbayes.inference.diagnostics import ConvergenceWarning
from sdcbayes.risk.posterior_assess import (
    EXACT_NOTE,
    _latent_class_excess,
    _posterior_dataset,
    assess_from_posterior,
    assess_posterior,
    evaluate_poisson_cells,
    latent_class_groups,
    latent_class_pi,
    population_is_sample,
)

SMALL = dict(draws=60, tune=100, chains=2, random_seed=1, cores=1)


def _census_stratum_design():
    """Stratum A taken in full (weights 1) beside B, a 1% sample of 15,000 (weights 100).

    Returns the sample (keys a, b, c and the stratum s; households of two records within
    a stratum; t a column that is no key) and the true tau1, counted on the population.
    """
    rng = np.random.default_rng(7)
    levels = {"a": 6, "b": 5, "c": 8}
    pop_a = pd.DataFrame({k: rng.integers(0, L, 150) for k, L in levels.items()}).assign(s="A")
    pop_b = pd.DataFrame({k: rng.integers(0, L, 15_000) for k, L in levels.items()}).assign(
        s="B")
    sample = pd.concat([pop_a, pop_b.sample(150, random_state=3)], ignore_index=True)
    sample["w"] = np.where(sample.s == "A", 1.0, 100.0)
    sample["hh"] = np.arange(len(sample)) // 2  # 150 records per stratum: no mixed household
    sample["t"] = rng.integers(0, 3, len(sample))
    keys = ["a", "b", "c", "s"]
    pop_count = pd.concat([pop_a, pop_b]).groupby(keys).size()
    sample_count = sample.groupby(keys).size()
    uniques = sample_count[sample_count == 1].index
    true_tau1 = int((pop_count.loc[uniques] == 1).sum())
    return sample, keys, true_tau1


@pytest.fixture(scope="module")
def design():
    sample, keys, true_tau1 = _census_stratum_design()
    md = sdcbayes.Microdata(sample, keys=keys, weight="w", household="hh", strata="s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short chains: R-hat warnings are expected
        res = assess_posterior(md, **SMALL)  # the default model, overdispersion="cv"
    return sample, keys, true_tau1, md, res


# --------------------------------------------------------------------------- finding 1
def test_a_census_stratum_that_is_a_key_has_risk_one_over_f(design):
    sample, _, true_tau1, md, res = design
    rec = res.records.join(sample)
    in_a = rec[rec.s == "A"]
    # A's excess mean is n pi_k (1 - 1) = 0 in every draw, so no Monte Carlo error: its
    # records' risk is 1/f_k up to rounding, and their intervals have no width
    np.testing.assert_allclose(in_a.risk, 1.0 / in_a.fk, rtol=0, atol=1e-12)
    np.testing.assert_allclose(in_a.risk_lo, 1.0 / in_a.fk, rtol=0, atol=1e-12)
    np.testing.assert_allclose(in_a.risk_hi, 1.0 / in_a.fk, rtol=0, atol=1e-12)
    # before the fix: mean risk 0.78 for A's sample uniques, which are population uniques
    uniques_a = in_a[in_a.fk == 1]
    assert len(uniques_a) > 40
    assert true_tau1 >= len(uniques_a)
    cells_a = res.cells.loc[res.cells.s == "A"]
    su = cells_a[cells_a.fk == 1]
    np.testing.assert_allclose(su.p_unique, 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(cells_a.F_lo, cells_a.fk)
    np.testing.assert_array_equal(cells_a.F_hi, cells_a.fk)
    # households within A: 1 - prod(1 - 1/f) exactly
    hh_a = in_a.groupby("hh").fk.apply(lambda f: 1.0 - np.prod(1.0 - 1.0 / f))
    np.testing.assert_allclose(in_a.groupby("hh").household_risk.first(), hh_a, atol=1e-12)
    # the file: the truth inside the interval (before: 52 [23, 76] against >= 82)
    s = res.summary
    lo, hi = s["tau1_interval"]
    assert lo <= true_tau1 <= hi, (true_tau1, s["tau1"], s["tau1_interval"])
    assert s["tau1"] >= len(uniques_a) - 1e-9
    assert s["extrapolation"] == {"by": "stratum", "strata": "s",
                                  "mean_weight_by_stratum": {"A": 1.0, "B": 100.0}}
    assert any("stratum 's' is one of the keys" in note for note in s["notes"])


def test_the_loss_groups_use_the_same_stratum_rates(design):
    _, _, _, md, res = design
    groups = latent_class_groups(md, res.idata)
    pi, n, N = latent_class_pi(md, res.idata)
    in_a = (md.cells.table.s == "A").to_numpy()
    # no excess in A: F = f with probability 1 in every draw
    assert np.all(groups.rho[:, in_a] == 1.0)
    # Poisson draws of B (kappa infinite) keep the limit's size R: rho = R / (R + lam)
    kap = _posterior_dataset(res.idata)["kappa"].values.reshape(-1)
    pois = ~np.isfinite(kap)
    if pois.any():
        R = groups.r[pois][:, ~in_a]
        lam = R * (1.0 / groups.rho[pois][:, ~in_a] - 1.0)
        np.testing.assert_allclose(lam, n * pi[pois][:, ~in_a] * 99.0, rtol=1e-6)


def test_a_stratum_that_is_no_key_leaves_the_fit_s_own_excess(design):
    sample, keys, _, md, res = design
    post = _posterior_dataset(res.idata)
    pi, n, N = latent_class_pi(md, res.idata)
    lam = _latent_class_excess(res.idata, post, N)
    assert lam is not None  # unequal weights: the fit's class-by-class lam
    kappa = post["kappa"].values.reshape(-1)
    direct = evaluate_poisson_cells(md.cells.fk, pi, n, N, kappa=kappa, excess=lam,
                                    random_seed=5)
    got = {}
    for label, strata in (("none", None), ("not a key", "t")):
        other = sdcbayes.Microdata(sample, keys=keys, weight="w", strata=strata)
        r = assess_from_posterior(other, res.idata, "latent-class", random_seed=5)
        assert "extrapolation" not in r.summary and "notes" not in r.summary
        got[label] = r
        # the fit's own lam, bit for bit
        np.testing.assert_array_equal(r.cells.risk.to_numpy(), direct.risk_mean)
        assert r.summary["tau1"] == float(direct.draws["tau1_mean"].mean())
    np.testing.assert_array_equal(got["none"].records.risk, got["not a key"].records.risk)
    # and that lam is what misplaces B's population into A's cells
    in_a = (md.cells.table.s == "A").to_numpy()
    assert np.all(direct.risk_mean[in_a] < 1.0 / md.cells.fk[in_a] + 1e-12)
    assert np.mean(direct.risk_mean[in_a] * md.cells.fk[in_a]) < 0.95


def test_equal_weights_with_the_stratum_a_key_are_unchanged():
    # equal weights: no design variable, (N - n) pi = n pi (wbar_h - 1) for every stratum
    sample, keys, _ = _census_stratum_design()
    sample = sample.assign(w=20.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = assess_posterior(sdcbayes.Microdata(sample, keys=keys, weight="w", strata="s"),
                             overdispersion=None, **SMALL)
        b = assess_posterior(sdcbayes.Microdata(sample, keys=keys, weight="w"),
                             overdispersion=None, **SMALL)
    np.testing.assert_array_equal(a.records.risk, b.records.risk)
    assert a.summary["tau1_interval"] == b.summary["tau1_interval"]
    assert "extrapolation" not in a.summary


# --------------------------------------------------------------------------- finding 3
@pytest.fixture(scope="module")
def census():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 6, 200), "b": rng.integers(0, 5, 200),
                          "c": rng.integers(0, 8, 200)}).assign(w=1.0)
    return frame


@pytest.mark.parametrize("model", ["latent-class", "poisson-gamma"])
def test_a_census_is_exact_without_convergence_warnings(census, model):
    md = sdcbayes.Microdata(census, keys=["a", "b", "c"], weight="w")
    assert population_is_sample(md, model)
    kw = SMALL if model == "latent-class" else {k: v for k, v in SMALL.items() if k != "cores"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = assess_posterior(md, model=model, strict=True, **kw)  # strict: no raise
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    diag = res.summary["diagnostics"]
    assert diag["note"] == EXACT_NOTE
    assert not [p for p in diag.get("problems") or [] if "R-hat" in p or "ESS" in p]
    fk = md.cells.fk
    assert res.summary["tau1"] == pytest.approx(int(np.sum(fk == 1)), abs=1e-9)
    assert res.summary["expected_reidentifications"] == pytest.approx(len(fk), abs=1e-9)
    # the posterior's own stamp (posterior.nc) says the same
    from sdcbayes.inference.posterior import provenance

    stamped = provenance(res.idata)["diagnostics"]
    assert stamped["note"] == EXACT_NOTE
    assert not [p for p in stamped.get("problems") or [] if "R-hat" in p or "ESS" in p]


def test_when_the_sample_is_the_population():
    frame = pd.DataFrame({"a": [1, 2, 2, 3], "w": [1.0, 1.0, 1.0, 1.0]})
    ones = sdcbayes.Microdata(frame, keys=["a"], weight="w")
    assert population_is_sample(ones, "latent-class")
    assert population_is_sample(ones, "poisson-gamma")
    assert not population_is_sample(ones, "negbin")  # its population is per cell
    assert not population_is_sample(ones, "latent-class", N=10)
    full = sdcbayes.Microdata(frame, keys=["a"], sampling_fraction=1.0)
    assert population_is_sample(full, "latent-class")
    half = sdcbayes.Microdata(frame, keys=["a"], sampling_fraction=0.5)
    assert not population_is_sample(half, "latent-class")
    assert population_is_sample(half, "latent-class", N=4)
    uneven = sdcbayes.Microdata(frame.assign(w=[1.0, 2.0, 3.0, 4.0]), keys=["a"], weight="w")
    assert not population_is_sample(uneven, "latent-class", N=4)  # scaled class by class


def test_a_sample_keeps_its_convergence_warnings_and_strict(census):
    md = sdcbayes.Microdata(census.assign(w=30.0), keys=["a", "b", "c"], weight="w")
    assert not population_is_sample(md, "latent-class")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = assess_posterior(md, draws=5, tune=5, chains=2, random_seed=1, cores=1,
                               overdispersion=None)
    assert "note" not in res.summary["diagnostics"]


# --------------------------------------------------------------------------- finding 6
def test_negbin_takes_a_fixed_sigma(census):
    # weights constant within every cell: sigma cannot be learnt, and the refusal says
    # "pass sigma=<value>", which assess_posterior now takes
    md = sdcbayes.Microdata(census.assign(w=20.0), keys=["a", "b", "c"], weight="w")
    nuts = dict(draws=50, tune=50, chains=2, random_seed=1)
    with pytest.raises(InputError, match="pass sigma=<value>"):
        assess_posterior(md, model="negbin", **nuts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = assess_posterior(md, model="negbin", sigma=1e-6, **nuts)
    assert res.provenance["priors"]["sigma"] == {"dist": "Fixed", "value": 1e-6}
    # sigma -> 0 is the closed form (Benedetti-Franconi)
    from sdcbayes.risk.assess import assess_closed_form

    closed = assess_closed_form(md).summary["expected_reidentifications"]
    assert res.summary["expected_reidentifications"] == pytest.approx(closed, rel=1e-6)


@pytest.mark.parametrize("model", ["latent-class", "poisson-gamma"])
def test_sigma_is_refused_for_other_models(census, model):
    md = sdcbayes.Microdata(census.assign(w=20.0), keys=["a", "b", "c"], weight="w")
    with pytest.raises(InputError, match="sigma fixes the within-cell spread of the negbin"):
        assess_posterior(md, model=model, sigma=0.5, draws=5, tune=5, chains=2)


def test_cli_census_of_three_records_needs_no_cross_validation(tmp_path):
    """A census of 3 records (under the cross-validation's 4) is exact, not refused."""
    import json

    from click.testing import CliRunner

    from sdcbayes.cli import cli

    data = tmp_path / "three.csv"
    pd.DataFrame({"age": [30, 30, 41], "sex": ["m", "m", "f"]}).to_csv(data, index=False)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["assess", str(data), "--keys", "age,sex",
                                   "--sampling-fraction", "1", "--draws", "20", "--tune", "20",
                                   "--chains", "2", "--seed", "1", "--quiet", "--out", str(out)])
    assert res.exit_code == 0, res.output
    s = json.loads((out / "summary.json").read_text())
    assert s["tau1"] == 1.0 and s["expected_reidentifications"] == 2.0
    assert s["diagnostics"]["note"] == EXACT_NOTE
