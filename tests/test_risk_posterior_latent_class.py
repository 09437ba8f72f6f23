"""Latent-class posterior through risk/ (issue 7): Poisson conditionals per cell and draw.

References are independent of the code under test: Poisson probabilities summed by
brute force with scipy (E(1/F | f), P(F = 1 | f = 1)), the exact Poisson-binomial
distribution of tau1 by convolution, Monte Carlo simulation of F_k given the cell
means with fixed seeds, and the demo sample's known truth (its population is known).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.risk.measures import benchmark_rule, household_risk
from sdcbayes.risk.posterior_assess import (
    PosteriorAssessment,
    assess_from_posterior,
    evaluate_poisson_cells,
)

X_MAX = 2000  # brute-force support; the Poisson means below are < 300, the tail is < 1e-300


def brute_inverse(f, m):
    """E(1/(f + X)), X ~ Po(m), by direct summation."""
    x = np.arange(X_MAX)
    return float(np.sum(stats.poisson.pmf(x, m) / (f + x)))


def brute_inverse_var(f, m):
    x = np.arange(X_MAX)
    p = stats.poisson.pmf(x, m)
    return float(np.sum(p / (f + x) ** 2) - np.sum(p / (f + x)) ** 2)


def pi_posterior(pi_draws, chains):
    """An xarray posterior group holding pi (chain, draw, cell)."""
    pi_draws = np.asarray(pi_draws, dtype=float)
    S, C = pi_draws.shape
    return xr.Dataset(
        {"pi": (("chain", "draw", "cell"), pi_draws.reshape(chains, S // chains, C))},
        coords={"chain": np.arange(chains), "draw": np.arange(S // chains),
                "cell": np.arange(C)},
    )


N_POP = 40_000.0


@pytest.fixture(scope="module")
def small_md():
    rng = np.random.default_rng(7)
    n = 2000
    frame = pd.DataFrame(
        {
            "a": rng.integers(0, 60, n),
            "b": rng.integers(0, 12, n) * (rng.random(n) < 0.6),
            "hh": rng.integers(0, 700, n),
        }
    )
    return Microdata(frame, keys=["a", "b"], household="hh")


def cell_pi(md, seed=0):
    """Cell probabilities spread over two decades (Poisson means (N-n) pi from 0.2 to ~60)."""
    rng = np.random.default_rng(seed)
    C = md.cells.n_cells
    return 10 ** rng.uniform(-5.3, -2.8, C)


# ------------------------------------------------------------ degenerate posterior


@pytest.fixture(scope="module")
def degenerate(small_md):
    pi = cell_pi(small_md)
    post = pi_posterior(np.broadcast_to(pi, (60, pi.size)), chains=2)
    res = assess_from_posterior(small_md, post, "latent-class", N=N_POP, threshold=0.05,
                                random_seed=3)
    return small_md, pi, res


def test_degenerate_cells_equal_poisson_closed_forms(degenerate):
    md, pi, res = degenerate
    n = md.cells.n_records
    m = (N_POP - n) * pi  # F - f | pi ~ Po((N - n) pi)
    cells = res.cells
    fk = cells["fk"].to_numpy()
    u = fk == 1
    assert 20 < u.sum() < len(fk)  # uniques and non-uniques both present
    expect = np.array([brute_inverse(f, mk) for f, mk in zip(fk, m, strict=True)])
    for col in ("risk", "risk_lo", "risk_hi"):
        np.testing.assert_allclose(cells[col], expect, rtol=1e-8)
    np.testing.assert_allclose(cells.loc[u, "p_unique"], stats.poisson.pmf(0, m[u]), rtol=1e-8)
    assert cells.loc[~u, "p_unique"].isna().all()
    np.testing.assert_allclose(cells["F_mean"], fk + m, rtol=1e-12)
    # predictive F quantiles: one simulated F per draw (60 draws), within the Poisson range
    lo = fk + stats.poisson.ppf(0.001, m)
    hi = fk + stats.poisson.ppf(0.999, m)
    assert np.all((cells["F_lo"] >= lo) & (cells["F_hi"] <= hi) & (cells["F_lo"] <= cells["F_hi"]))


def test_degenerate_file_level_equals_closed_forms(degenerate):
    md, pi, res = degenerate
    n = md.cells.n_records
    m = (N_POP - n) * pi
    fk = md.cells.fk
    u = fk == 1
    s = res.summary
    inv = np.array([brute_inverse(f, mk) for f, mk in zip(fk, m, strict=True)])
    assert s["tau1"] == pytest.approx(stats.poisson.pmf(0, m[u]).sum(), rel=1e-8)
    assert s["tau2"] == pytest.approx(inv[u].sum(), rel=1e-8)
    assert s["expected_reidentifications"] == pytest.approx((fk * inv).sum(), rel=1e-8)
    for key in ("tau1", "tau2", "expected_reidentifications"):
        lo, hi = s[f"{key}_hyper_interval"]
        assert lo == pytest.approx(s[key], rel=1e-10) and hi == pytest.approx(s[key], rel=1e-10)
        lo, hi = s[f"{key}_interval"]  # the randomness of F_k still widens the predictive
        assert lo < s[key] < hi
    # record-level measures on the (constant) risks
    r = res.records["risk"].to_numpy()
    np.testing.assert_allclose(r, inv[md.record_cell], rtol=1e-8)
    assert s["n_above_benchmark_interval"] == [benchmark_rule(r).sum()] * 2
    assert s["n_above_threshold"] == np.count_nonzero(r > 0.05)
    hh = household_risk(r, md.household_index)
    np.testing.assert_allclose(res.records["household_risk"], hh, rtol=1e-10)
    assert s["household_expected_reidentifications"] == pytest.approx(hh.sum(), rel=1e-10)
    assert s["model"] == "latent-class" and s["population_size"] == N_POP


# ------------------------------------------------------- non-degenerate posterior


@pytest.fixture(scope="module")
def varying(small_md):
    rng = np.random.default_rng(12)
    pi = cell_pi(small_md, seed=1)
    draws = pi * rng.lognormal(0.0, 0.4, size=(80, pi.size))  # posterior spread per cell
    res = assess_from_posterior(small_md, pi_posterior(draws, chains=2), "latent-class",
                                N=N_POP, random_seed=4, quantiles=(0.05, 0.5, 0.95))
    return small_md, draws, res


def test_records_carry_their_cells_values(varying):
    md, _, res = varying
    assert isinstance(res, PosteriorAssessment)
    rec, cells = res.records, res.cells
    assert len(rec) == md.n_input
    for col in ("risk", "risk_lo", "risk_hi"):
        np.testing.assert_array_equal(rec[col], cells[col].to_numpy()[rec["cell"]])
    np.testing.assert_array_equal(rec["risk_q0.5"],
                                  res.cell_posterior["risk_quantile"].values[1][rec["cell"]])
    assert res.file_draws["tau1"].dims == ("chain", "draw")
    assert res.file_draws["tau1"].shape == (2, 40)


def test_cell_summaries_are_reductions_of_per_draw_closed_forms(varying):
    md, draws, res = varying
    n = md.cells.n_records
    fk = md.cells.fk
    for k in np.flatnonzero(fk == 1)[:3].tolist() + np.flatnonzero(fk > 2)[:3].tolist():
        per_draw = np.array([brute_inverse(fk[k], (N_POP - n) * p) for p in draws[:, k]])
        row = res.cells.iloc[k]
        assert row["risk"] == pytest.approx(per_draw.mean(), rel=1e-8)
        assert row["risk_lo"] == pytest.approx(np.quantile(per_draw, 0.05), rel=1e-8)
        assert row["risk_hi"] == pytest.approx(np.quantile(per_draw, 0.95), rel=1e-8)


def test_file_level_means_are_sums_of_cell_means(varying):
    md, _, res = varying
    s, cells = res.summary, res.cells
    u = cells["fk"].to_numpy() == 1
    assert s["tau1"] == pytest.approx(cells.loc[u, "p_unique"].sum(), rel=1e-10)
    assert s["tau2"] == pytest.approx(cells.loc[u, "risk"].sum(), rel=1e-10)
    assert s["expected_reidentifications"] == pytest.approx(
        (cells["fk"] * cells["risk"]).sum(), rel=1e-10
    )
    # and the mean risk of the records is ER / n
    assert res.records["risk"].mean() == pytest.approx(
        s["expected_reidentifications"] / md.cells.n_records, rel=1e-10
    )


def test_predictive_tau_matches_exact_distribution_and_simulation():
    """F-randomness of tau1, tau2, ER given fixed cell means (constant posterior)."""
    rng = np.random.default_rng(21)
    C, S = 150, 6000
    fk = np.where(rng.random(C) < 0.7, 1, rng.integers(2, 6, C))
    n, N = 1000.0, 50_000.0
    m = rng.uniform(0.05, 4.0, C)
    pi = np.broadcast_to(m / (N - n), (S, C))
    ev = evaluate_poisson_cells(fk, pi, n, N, random_seed=5)
    u = fk == 1
    p = np.exp(-m[u])
    # tau1 | pi is Poisson-binomial: exact pmf by convolution over the sample uniques
    pmf = np.array([1.0])
    for pk in p:
        pmf = np.convolve(pmf, [1 - pk, pk])
    cdf = np.cumsum(pmf)
    t1 = ev.draws["tau1"]
    se = np.sqrt((p * (1 - p)).sum() / S)
    assert t1.mean() == pytest.approx(p.sum(), abs=4 * se)
    assert t1.var() == pytest.approx((p * (1 - p)).sum(), rel=0.08)
    for q in (0.05, 0.5, 0.95):  # empirical quantiles within one of the exact ones
        exact_q = int(np.searchsorted(cdf, q))
        assert abs(np.quantile(t1, q) - exact_q) <= 1
    # tau2 and ER: an independent Monte Carlo simulation of F_k = f_k + Po(m_k)
    sim = fk[None, :] + np.random.default_rng(99).poisson(m, size=(S, C))
    for key, w in (("tau2", u.astype(float)), ("er", fk.astype(float))):
        ref = (w / sim).sum(axis=1)
        var = float((w**2 * np.array([brute_inverse_var(f, mk) for f, mk in zip(fk, m)])).sum())
        assert ref.var() == pytest.approx(var, rel=0.08)  # the reference itself is right
        x = ev.draws[key]
        assert x.mean() == pytest.approx(ev.draws[f"{key}_mean"][0], abs=4 * np.sqrt(var / S))
        assert x.var() == pytest.approx(var, rel=0.08)
        assert stats.ks_2samp(x, ref).pvalue > 1e-3


def test_bad_posteriors_are_rejected(small_md):
    C = small_md.cells.n_cells
    with pytest.raises(InputError, match="store='all'"):
        assess_from_posterior(small_md, pi_posterior(np.full((4, C - 3), 1e-4), 2),
                              "latent-class", N=N_POP)
    with pytest.raises(InputError, match="no cell probabilities"):
        assess_from_posterior(small_md, xr.Dataset({"p": (("chain", "draw"), np.ones((2, 2)))}),
                              "latent-class", N=N_POP)
    with pytest.raises(InputError, match="predictive"):
        assess_from_posterior(small_md, pi_posterior(np.full((4, C), 1e-4), 2),
                              "latent-class", N=N_POP, predictive="normal")
    with pytest.raises(InputError, match="population size"):
        assess_from_posterior(small_md, pi_posterior(np.full((4, C), 1e-4), 2), "latent-class")


def test_from_microdata_keeps_the_cell_table_order():
    from sdcbayes.models.latent_class import LatentClassModel

    frame = pd.DataFrame({"x": ["b", "a", "b", "c", "a", "a"], "y": [2, 1, 1, 2, 1, 1],
                          "z": ["u", "u", "v", None, "u", "u"]})
    md = Microdata(frame, keys=["x", "y"], sampling_fraction=0.1)
    model = LatentClassModel.from_microdata(md, n_classes=3)
    np.testing.assert_array_equal(model.counts, md.cells.f_exact)
    table = md.cells.table
    for j, k in enumerate(["x", "y"]):
        labels = [model.levels[j][c] for c in model.codes[:, j]]
        assert labels == table[k].tolist()
    md_missing = Microdata(frame, keys=["x", "z"], sampling_fraction=0.1)
    with pytest.raises(InputError, match="each record in one cell"):
        LatentClassModel.from_microdata(md_missing)
    md_cat = Microdata(frame, keys=["x", "z"], sampling_fraction=0.1, missing="category")
    model = LatentClassModel.from_microdata(md_cat, n_classes=3)
    assert "<missing>" in model.levels[1] and model.counts.sum() == 6


# ------------------------------------------------------------- the sampler route


@pytest.fixture(scope="module")
def demo_fit(tmp_path_factory):
    import warnings

    from sdcbayes.datasets import load_demo
    from sdcbayes.risk.assess import assess_closed_form
    from sdcbayes.risk.posterior_assess import assess_posterior

    demo = load_demo()
    md = Microdata(demo.sample, keys=list(demo.keys), weight=demo.weight,
                   household=demo.household)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few draws: ESS warnings expected
        res = assess_posterior(md, model="latent-class", draws=40, tune=40, chains=2,
                               random_seed=2, em_restarts=1)
    return demo, md, res, assess_closed_form(md).summary


def test_latent_class_route_on_demo(demo_fit, tmp_path):
    import json

    from sdcbayes.inference.posterior import load_posterior, save_posterior

    demo, md, res, closed = demo_fit
    s = res.summary
    assert len(res.records) == md.n_input and len(res.cells) == md.cells.n_cells
    assert res.cell_posterior.sizes["cell"] == md.cells.n_cells
    rec = res.records
    assert rec["risk_lo"].le(rec["risk"]).all() and rec["risk"].le(rec["risk_hi"]).all()
    for key in ("expected_reidentifications", "tau1", "tau2",
                "household_expected_reidentifications"):
        lo, hi = s[f"{key}_interval"]
        assert lo <= s[key] <= hi, key
    truth = demo.truth
    # the latent-class model sees the dependence of the keys that the plug-in misses
    assert abs(s["tau1"] - truth.tau1) < abs(closed["tau1"] - truth.tau1)
    assert abs(s["tau2"] - truth.tau2) < abs(closed["tau2"] - truth.tau2)
    # the Python route fits what `sdcbayes assess` fits: the cross-validated overdispersion
    assert s["overdispersion"]["method"] == "cv" and "kappa" in res.idata.posterior
    assert res.provenance["settings"]["overdispersion"] == "cv"
    d = s["diagnostics"]
    assert d["diagnosed_on"] == ["tau1", "tau2", "expected_reidentifications"]
    assert d["max_r_hat"] is not None and d["min_ess_bulk"] > 0
    # the occupied classes of the truncated Dirichlet process, read from the draws
    used = res.idata.sample_stats["n_classes_used"].values
    assert d["classes_truncation"] == 30 and d["classes_used_max"] == used.max()
    assert d["classes_used_mean"] == pytest.approx(used.mean())
    assert d["share_draws_all_classes_used"] == pytest.approx(np.mean(used == 30))
    json.dumps(s)
    path = save_posterior(res.idata, tmp_path)
    back = load_posterior(path)
    assert back.posterior.attrs["model"] == "latent-class"
    assert back.posterior["pi"].sizes["cell"] == md.cells.n_cells


def test_check_truncation_reports_and_warns_only_where_every_class_is_used():
    import warnings

    from sdcbayes.inference.diagnostics import TruncationWarning, check_truncation

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # below the threshold: no warning at all
        out, msg = check_truncation(np.array([[27, 30, 28, 30], [29, 26, 25, 24]]), 30)
    assert msg is None
    assert out == {"classes_used_mean": 27.375, "classes_used_max": 30,
                   "classes_truncation": 30, "share_draws_all_classes_used": 0.25}
    with pytest.warns(TruncationWarning, match="n_classes=60"):
        out, msg = check_truncation([30, 30, 29, 30], 30)
    assert out["share_draws_all_classes_used"] == 0.75 and "75% of the draws" in msg
    with pytest.raises(ValueError, match="no draws"):
        check_truncation([], 30)


def test_check_predictive_uniques_warns_only_in_the_tails():
    import warnings

    from sdcbayes.inference.diagnostics import PredictiveCheckWarning, check_predictive_uniques

    row = {"count": 1, "observed": 541, "mean": 524.0, "interval": [482.0, 564.0]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inside the tails: no warning at all
        for p in (0.01, 0.24, 0.99):
            assert check_predictive_uniques(row | {"p_value": p}) is None
    with pytest.warns(PredictiveCheckWarning, match="more than"):
        msg = check_predictive_uniques(row | {"observed": 1676, "p_value": 0.0})
    assert "1,676 cells seen once" in msg and "524 [482, 564]" in msg
    with pytest.warns(PredictiveCheckWarning, match="fewer than"):
        assert "fewer" in check_predictive_uniques(row | {"p_value": 0.995})
    with pytest.warns(PredictiveCheckWarning, match="fewer than"):
        assert "fewer" in check_predictive_uniques(row | {"p_value": 1.0, "p_lower": 0.004})


def test_predictive_check_counts_ties_in_both_tails():
    """No sample uniques where the replicates hold 0 or 1 (audit Z2 F1): P(rep >= 0) is 1
    by definition, yet 0 is the replicates' most common value, so no misfit warning."""
    import warnings

    import xarray as xr

    from sdcbayes.inference.diagnostics import check_predictive_uniques
    from sdcbayes.models.ppc import predictive_table

    sim = xr.DataArray(np.array([[0, 0, 1, 0, 0, 1, 0, 0, 0, 0]] * 2)[..., None],
                       dims=("chain", "draw", "count"), coords={"count": [1]})
    obs = xr.DataArray(np.array([0]), dims="count", coords={"count": [1]})
    r = predictive_table(obs, sim, counts=[1]).loc[1]
    assert r.p_value == 1.0 and r.p_lower == pytest.approx(0.8)
    row = {"count": 1, "observed": 0, "mean": float(r["mean"]),
           "interval": [float(r.lower), float(r.upper)], "p_value": float(r.p_value),
           "p_lower": float(r.p_lower)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_predictive_uniques(row) is None


def test_a_model_that_misses_the_uniques_says_so(tmp_path):
    """A key of 600 levels seen about twice each (a record id in all but name): the
    mixture predicts far fewer uniques than the sample has, and the fit's summary and
    warnings say so rather than print tau1 as if nothing were wrong."""
    import warnings

    from sdcbayes.inference.diagnostics import PredictiveCheckWarning
    from sdcbayes.risk.posterior_assess import assess_posterior

    rng = np.random.default_rng(11)
    n = 1200
    frame = pd.DataFrame({"idk": rng.integers(0, 600, n), "sex": rng.integers(0, 2, n),
                          "w": np.full(n, 20.0)})
    md = Microdata(frame, keys=["idk", "sex"], weight="w", max_levels=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", PredictiveCheckWarning)
        with pytest.warns(PredictiveCheckWarning, match="does not reproduce the sample"):
            res = assess_posterior(md, model="latent-class", draws=40, tune=40, chains=2,
                                   random_seed=1, overdispersion=None, em_restarts=1, ppc=20)
    once = res.summary["predictive_check"][0]
    assert once["count"] == 1 and once["p_value"] < 0.01
    assert any("predictive check" in p for p in res.summary["diagnostics"]["problems"])


def test_structural_zero_rules_are_stamped_in_the_settings():
    """--structural-zeros auto reads rules off the sample: the result says which it used."""
    import warnings

    from sdcbayes.risk.posterior_assess import assess_posterior

    rng = np.random.default_rng(5)
    n = 600
    a = rng.integers(0, 5, n)
    b = np.where(a == 0, 0, rng.integers(0, 4, n))  # children are never married: a -> b
    frame = pd.DataFrame({"a": a.astype(str), "b": b.astype(str), "w": np.full(n, 30.0)})
    md = Microdata(frame, keys=["a", "b"], weight="w")
    runs = {}
    for zeros in (None, "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs[zeros] = assess_posterior(md, model="latent-class", draws=20, tune=10,
                                           chains=1, random_seed=1, overdispersion=None,
                                           em_restarts=1, structural_zeros=zeros)
    off = runs[None].provenance["settings"]
    on = runs["auto"].provenance["settings"]
    assert off["structural_zeros"] is None and off["structural_zero_rules"] == []
    assert on["structural_zeros"] == "auto"
    assert on["structural_zero_rules"] == [{"a": ["0"], "b": {"not": ["0"]}}]


def test_a_binding_truncation_is_reported_not_raised_under_strict(demo_fit, monkeypatch):
    """Two classes on the demo's six keys: both occupied in every draw."""
    import warnings

    import sdcbayes.inference.diagnostics as diagnostics
    from sdcbayes.inference.diagnostics import TruncationWarning
    from sdcbayes.risk.posterior_assess import assess_posterior

    _, md, _, _ = demo_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("always", TruncationWarning)
        with pytest.warns(TruncationWarning, match="all 2 latent classes"):
            res = assess_posterior(md, model="latent-class", draws=30, tune=20, chains=1,
                                   random_seed=3, n_classes=2, overdispersion=None,
                                   em_restarts=1, strict=False)
    d = res.summary["diagnostics"]
    assert d["share_draws_all_classes_used"] == 1.0 and d["classes_truncation"] == 2
    assert any("truncation binds" in p for p in d["problems"])
    # a caveat of the model, not a sampler failure: a strict fit whose sampler checks pass
    # (30 draws of one chain would fail ESS: those checks are passed here) warns and goes on
    monkeypatch.setattr(diagnostics, "check_diagnostics", lambda *a, **k: [])
    with pytest.warns(TruncationWarning):
        strict = assess_posterior(md, model="latent-class", draws=30, tune=20, chains=1,
                                  random_seed=3, n_classes=2, overdispersion=None,
                                  em_restarts=1, strict=True)
    assert strict.summary["diagnostics"]["problems"] == [msg for msg in d["problems"]
                                                         if "truncation" in msg]


def test_latent_class_route_rejects_other_samplers(demo_fit):
    from sdcbayes.risk.posterior_assess import assess_posterior

    _, md, _, _ = demo_fit
    with pytest.raises(InputError, match="Gibbs"):
        assess_posterior(md, model="latent-class", method="nuts", draws=5, tune=5)
    with pytest.raises(InputError, match="unknown option"):
        assess_posterior(md, model="latent-class", draws=5, tune=5, target_accept=0.9)


def test_start_classes_label_and_split_merge_moves_reach_the_sampler_and_settings(demo_fit):
    import warnings

    from sdcbayes.risk.posterior_assess import assess_posterior

    _, md, _, _ = demo_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = assess_posterior(md, model="latent-class", draws=5, tune=0, chains=2,
                               random_seed=3, em_restarts=1, overdispersion=None,
                               start_classes=4, label_moves=True)
    assert res.idata.attrs["start_classes"] == 4 and res.idata.attrs["label_moves"] == 1
    settings = res.provenance["settings"]
    assert settings["start_classes"] == 4 and settings["label_moves"] is True
    # the first sweep allocates among the EM start's four classes (label moves may
    # reorder them, not add any)
    assert res.idata.sample_stats["n_classes_used"].values[:, 0].max() <= 4
    with pytest.raises(InputError, match="start_classes"):
        assess_posterior(md, model="latent-class", draws=5, tune=0, start_classes=31)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = assess_posterior(md, model="latent-class", draws=5, tune=0, chains=1,
                               random_seed=3, em_restarts=1, overdispersion=None,
                               split_merge=3)
    assert res.idata.attrs["split_merge"] == 3
    assert res.provenance["settings"]["split_merge"] == 3
    assert res.idata.sample_stats["split_merge_accepted"].shape == (1, 5)
    with pytest.raises(InputError, match="split_merge"):
        assess_posterior(md, model="latent-class", draws=5, tune=0, split_merge=-2)


def test_unseeded_run_stamps_the_seed_that_repeats_it():
    import warnings

    from sdcbayes.risk.posterior_assess import assess_posterior

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({k: rng.choice(list("abcdef"[:L]), 300) for k, L in
                          (("x", 6), ("y", 4), ("z", 3))})
    md = Microdata(frame, keys=["x", "y", "z"], sampling_fraction=0.1)
    kw = {"model": "latent-class", "draws": 20, "tune": 10, "chains": 1, "n_classes": 4,
          "em_restarts": 1, "overdispersion": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few draws: ESS warnings expected
        first = assess_posterior(md, **kw)
        seed = first.provenance["settings"]["random_seed"]
        assert isinstance(seed, int)
        again = assess_posterior(md, random_seed=seed, **kw)
        other = assess_posterior(md, random_seed=seed + 1, **kw)
    assert again.provenance["settings"]["random_seed"] == seed
    for key in ("tau1", "tau2", "expected_reidentifications"):
        assert again.summary[key] == first.summary[key], key
    assert other.summary["tau1"] != first.summary["tau1"]


def test_latent_class_route_does_not_import_pymc(tmp_path):
    # its Gibbs sampler needs ArviZ for the posterior, never PyMC or PyTensor (0.5 s, 20 MB)
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import pandas as pd\n"
        "from sdcbayes.microdata import Microdata\n"
        "from sdcbayes.risk.posterior_assess import assess_posterior\n"
        "rng = np.random.default_rng(0)\n"
        "df = pd.DataFrame({'a': rng.integers(0, 5, 300), 'b': rng.integers(0, 4, 300)})\n"
        "md = Microdata(df, keys=['a', 'b'], sampling_fraction=0.1, missing='category')\n"
        "r = assess_posterior(md, 'latent-class', draws=10, tune=5, chains=2, random_seed=1,\n"
        "                     n_classes=4)\n"
        "assert r.summary['tau1'] >= 0\n"
        "print(sorted(m for m in ('pymc', 'pytensor') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"
