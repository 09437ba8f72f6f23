"""benchmarks/kappa_model_world.py: the cross-validated kappa in samples drawn from the fit.

The sampler is checked against the negative binomial it claims to draw exactly (cell by
cell on a key space small enough to enumerate), the rows and the summary on a toy sample.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark, toy_latent_class

from sdcbayes.models.latent_class import KAPPA_GRID, LatentClassModel


@pytest.fixture(scope="module")
def mw():
    return load_benchmark("kappa_model_world.py")


def _tiny(structural_zeros=None):
    # 3 x 4 keys, two classes; the fit is set by hand, so the check does not rest on EM
    cells = np.array([[0, 0], [1, 1], [2, 3]])
    model = LatentClassModel(cells, [1, 2, 1], [3, 4], keys=["a", "b"], n_classes=2,
                             structural_zeros=structural_zeros)
    fit = {"w": np.array([0.7, 0.3]),
           "phi": [np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]]),
                   np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.1, 0.3, 0.5]])]}
    return model, fit


@pytest.mark.parametrize("kappa", [0.4, np.inf])
def test_simulated_cells_are_negative_binomial(mw, kappa):
    # every cell of the key space: the share of draws it is empty and its mean count
    # against NB(kappa, n pi_k) (Poisson at inf), with the rule {a = 2, b = 0} a
    # structural zero that must never be drawn
    model, fit = _tiny(structural_zeros=[{"a": [2], "b": [0]}])
    all_cells = np.indices((3, 4)).reshape(2, -1).T
    pi = model.cell_probabilities(fit["w"], fit["phi"], codes=all_cells)
    assert pi[8] == 0.0 and pi.sum() == pytest.approx(1.0)
    n, reps = 12.0, 6000
    rng = np.random.default_rng(5)
    counts = np.zeros((reps, 12))
    for i in range(reps):
        cells, f = mw.simulate_sample(model, fit, kappa, rng, n=n)
        counts[i, cells[:, 0] * 4 + cells[:, 1]] = f
    assert not counts[:, 8].any()
    mu = n * pi
    if np.isfinite(kappa):
        p0 = (kappa / (kappa + mu)) ** kappa
        var = mu + mu**2 / kappa
    else:
        p0, var = np.exp(-mu), mu
    ok = pi > 0
    # 4.5 Monte Carlo standard errors: a cell-by-cell check that holds with these seeds
    se0 = np.sqrt(p0 * (1 - p0) / reps)
    assert np.all(np.abs((counts == 0).mean(axis=0)[ok] - p0[ok]) < 4.5 * se0[ok])
    se = np.sqrt(var / reps)
    assert np.all(np.abs(counts.mean(axis=0)[ok] - mu[ok]) < 4.5 * se[ok])
    # the overdispersion shows in the variance of the largest cell
    j = int(np.argmax(mu))
    assert counts[:, j].var() == pytest.approx(var[j], rel=0.15)


def test_rows_and_summary(mw, monkeypatch):
    # a toy sample; the cross-validation replaced by a stub returning a fixed read per
    # model size keeps the test fast while checking the plumbing and the summary's sums
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({k: rng.choice([f"v{i}" for i in range(8)], 300)
                          for k in ("x", "y", "z")})
    toy = LatentClassModel.from_frame(frame, ["x", "y", "z"], n_classes=4)
    seen = []

    def fake_read(model, N, seed):
        seen.append(model.n)
        return 0.0 if model is toy else np.log(2.0)

    monkeypatch.setattr(mw, "_read", fake_read)
    truth = type("T", (), {"tau1": float((toy.key_counts == 1).sum()) * 0.5})()
    rows = mw.sample_rows("toy/1%", 0, toy, 30 * toy.n, truth, 0, kappas=(0.5, 4.0), draws=3)
    assert len(rows) == 1 + 2 * 3 and rows[0]["kappa0"] != rows[0]["kappa0"]  # nan first
    assert [r["kappa0"] for r in rows[1:]] == [0.5] * 3 + [4.0] * 3
    # the simulated samples are about the real one's size (Poisson, sd sqrt(300))
    assert all(abs(r["n"] - 300) < 80 for r in rows[1:]) and len(seen) == 7
    table = mw.summarise(pd.DataFrame(rows)).set_index("kappa0")
    assert table.loc["real", "read_mean"] == 0.0
    assert table.loc["0.5", "offset"] == pytest.approx(np.log(2.0) - np.log(0.5))
    assert table.loc["4", "offset"] == pytest.approx(np.log(2.0) - np.log(4.0))
    assert table.loc["4", "read_sd"] == 0.0 and table.loc["0.5", "samples"] == 1


def test_simulated_total_is_poisson_with_poisson_cells(mw):
    # Poisson cells, no structural zeros: the sample's size is Poisson(n)
    model, fit = _tiny()
    rng = np.random.default_rng(1)
    totals = np.array([mw.simulate_sample(model, fit, np.inf, rng, n=40.0)[1].sum()
                       for _ in range(3000)])
    assert abs(totals.mean() - 40) < 4 * np.sqrt(40 / 3000)
    assert totals.var() == pytest.approx(40, rel=0.1)


def test_population_rows_run_the_default_on_a_sample_of_a_drawn_population(mw):
    toy = toy_latent_class()
    N = 20 * toy.n
    rows = mw.population_rows("toy/5%", 0, toy, N, None, 0, kappas=(0.5,), draws=1,
                              at_kappa0=True, bootstrap=3)
    assert len(rows) == 1
    row = rows[0]
    # the drawn sample has the real one's size; the population is Poisson(N) records
    assert row["n"] == toy.n and abs(row["N"] - N) < 5 * np.sqrt(N)
    assert row["world"] == "population" and row["kappa0"] == 0.5
    assert 0 <= row["tau1"] <= toy.n and row["censored"] in (-1, 0, 1)
    logk = np.log(KAPPA_GRID[np.isfinite(KAPPA_GRID)])
    assert logk[0] <= row["gibbs_oracle"] <= logk[-1]
    assert logk[0] <= row["read_q05"] <= row["read"] <= row["read_q95"]
    # the default's own estimates and intervals of the drawn sample's tau1 and tau2
    assert row["lo1"] <= row["hi1"] and row["lo2"] <= row["hi2"]
    assert 0 < row["est2"] and row["tau1"] <= row["tau2"]
    # the run at kappa0: kappa known, so its interval of tau1 is no wider than the
    # default's, which also carries kappa's doubt (same chains' seeds)
    assert row["k0_lo1"] <= row["k0_est1"] <= row["k0_hi1"]
    assert row["k0_hi1"] - row["k0_lo1"] <= row["hi1"] - row["lo1"]
    assert row["k0_lo2"] <= row["k0_est2"] <= row["k0_hi2"]
    # the split: the expectation at the process's own pi lies among the uniques' count,
    # F's noise and the posterior sd are positive
    assert 0 < row["tau1_star"] < (toy.key_counts == 1).sum() + 1
    assert row["noise_sd1"] > 0 and row["k0_post_sd1"] > 0
    # the EM plug-in at kappa0 and its bootstrap over the same uniques
    n_unique = (toy.key_counts == 1).sum()
    assert 0 < row["em_k0"] <= n_unique and 0 < row["boot_mean"] <= n_unique
    assert row["boot_sd"] > 0


def test_summarise_population_offsets_over_uncensored_samples(mw):
    per = pd.DataFrame({"design": "x", "kappa0": 0.5, "world": "population",
                        "read": [0.0, 1.0, np.inf, 2.0],
                        "gibbs_oracle": [-1.0, -1.0, 0.0, 5.0], "censored": [0, 0, 0, 1]})
    out = mw.summarise_population(per).iloc[0]
    assert (out.samples, out.censored) == (4, 1)
    # the Poisson point read as the grid's top, log 10^4
    top = np.log(1e4)
    assert out.read_mean == pytest.approx((0.0 + 1.0 + top) / 3)
    assert out.offset == pytest.approx((1.0 + 2.0 + top) / 3)
    assert out.oracle_mean == pytest.approx(-2.0 / 3)
    assert "cover1" not in out
    # with estimates: bias over the mean truth, coverage over every sample
    est = per.assign(tau1=[10.0, 10.0, 20.0, 20.0], est1=[11.0, 9.0, 22.0, 30.0],
                     lo1=[5.0, 5.0, 21.0, 25.0], hi1=[15.0, 15.0, 30.0, 35.0],
                     tau2=20.0, est2=20.0, lo2=19.0, hi2=21.0)
    out = mw.summarise_population(est).iloc[0]
    assert out.bias1 == pytest.approx((1 - 1 + 2 + 10) / 4 / 15)
    assert out.cover1 == 0.5 and out.cover2 == 1.0 and out.bias2 == 0.0
    # errors over the implied posterior sd, width / 3.29
    z = np.array([1.0, -1.0, 2.0, 10.0]) / (np.array([10.0, 10.0, 9.0, 10.0]) / 3.2897)
    assert out.z_mean1 == pytest.approx(z.mean(), rel=1e-4)
    assert out.z_sd1 == pytest.approx(z.std(ddof=1), rel=1e-4)
    assert "k0_cover1" not in out and "kappa_below" not in out
    # the run at kappa0 summarised alike; the read's range against log kappa0 = -0.69
    k0 = est.assign(k0_est1=est.tau1, k0_lo1=est.tau1 - 1, k0_hi1=est.tau1 + 1,
                    k0_est2=25.0, k0_lo2=24.0, k0_hi2=26.0,
                    read_q05=[-2.0, -0.5, -3.0, -1.0], read_q95=[0.0, 1.0, -1.0, 0.0])
    out = mw.summarise_population(k0).iloc[0]
    assert out.k0_cover1 == 1.0 and out.k0_bias1 == 0.0 and out.k0_z_sd1 == 0.0
    assert out.k0_cover2 == 0.0 and out.k0_bias2 == pytest.approx(0.25)
    assert out.kappa_below == 0.25 and out.kappa_above == 0.25
    assert "k0_param_z_sd1" not in out
    # the split at kappa0: the mixture's error over its posterior sd, F's noise over its sd
    split = k0.assign(tau1_star=[11.0, 9.0, 20.0, 22.0], k0_post_sd1=[1.0, 1.0, 2.0, 2.0],
                      noise_sd1=[1.0, 1.0, 1.0, 2.0])
    out = mw.summarise_population(split).iloc[0]
    err = np.array([-1.0, 1.0, 0.0, -2.0])
    assert out.k0_param_err_sd1 == pytest.approx(err.std(ddof=1))
    assert out.k0_post_sd1 == 1.5
    assert out.k0_param_z_mean1 == pytest.approx(np.mean(err / [1, 1, 2, 2]))
    assert out.noise_z_sd1 == pytest.approx(np.std([1.0, -1.0, 0.0, 1.0], ddof=1))
    assert "boot_sd" not in out
    # the EM plug-in's error over samples against the bootstrap
    boot = split.assign(k0_log_pi_err=[0.1, 0.3, 0.2, 0.2], em_k0=[10.0, 10.0, 18.0, 20.0],
                        boot_mean=[12.0, 11.0, 20.0, 20.0], boot_sd=[1.0, 2.0, 3.0, 2.0])
    out = mw.summarise_population(boot).iloc[0]
    assert out.k0_log_pi_err == pytest.approx(0.2)
    assert out.em_err_mean == pytest.approx(np.mean([-1.0, 1.0, -2.0, -2.0]))
    assert out.em_err_sd == pytest.approx(np.std([-1.0, 1.0, -2.0, -2.0], ddof=1))
    assert out.boot_sd == 2.0 and out.boot_shift == pytest.approx(1.25)
    # the kappa0 run widened: implied sd 1 / 3.29 * 2 and the bootstrap's, in quadrature
    sd = np.sqrt((2.0 / 3.2897) ** 2 + np.array([1.0, 2.0, 3.0, 2.0]) ** 2)
    z = np.zeros(4) / sd  # k0_est1 is the truth in this frame
    assert out.k0_boot_cover1 == 1.0 and out.k0_boot_z_mean1 == pytest.approx(z.mean())
    wide = boot.assign(k0_est1=boot.tau1 + [3.0, -3.0, 1.0, 0.0])
    out = mw.summarise_population(wide).iloc[0]
    z = np.array([3.0, -3.0, 1.0, 0.0]) / sd
    assert out.k0_boot_z_sd1 == pytest.approx(z.std(ddof=1), rel=1e-4)
    assert out.k0_boot_cover1 == pytest.approx(np.mean(np.abs(z) <= 1.6449), abs=1e-9)


def test_population_rows_carry_the_predictive_check(mw):
    # the check's rows are predictive_counts' of the same fit: the drawn sample's counts
    # of counts, the replicates' mean and p; the fit's own numbers do not depend on it
    toy = toy_latent_class()
    N = 20 * toy.n
    plain = mw.population_rows("toy/5%", 0, toy, N, None, 0, kappas=(0.5,), draws=1,
                               tune=30)[0]
    row = mw.population_rows("toy/5%", 0, toy, N, None, 0, kappas=(0.5,), draws=1,
                             tune=30, ppc=4)[0]
    for key in ("read", "est1", "lo1", "hi1", "est2", "tau1", "tau2"):
        assert row[key] == plain[key], key
    assert not any(k.startswith("ppc_") for k in plain)
    labels = ["m1", "m2", "m3", "m4", "m5", "m6+"]
    obs = [row[f"ppc_obs_{m}"] for m in labels]
    # the drawn sample's records are all in the counts of counts: sum_j j m_j (m6+ at
    # least 6 each) is at most n, with equality when no cell is seen six times or more
    assert sum((j + 1) * o for j, o in enumerate(obs[:5])) + 6 * obs[5] <= row["n"]
    assert obs[0] > 0 and row["ppc_mean_m1"] > 0
    assert all(0.0 <= row[f"ppc_p_{m}"] <= 1.0 for m in labels)


def test_summarise_ppc_shares_and_difference(mw):
    per = pd.DataFrame({"design": "x", "kappa0": 0.5,
                        "ppc_obs_m1": [100, 110, 90, 100], "ppc_mean_m1": 100.0,
                        "ppc_p_m1": [0.5, 0.01, 0.99, 0.03],
                        "ppc_obs_m2": [1, 2, 3, 2], "ppc_mean_m2": 2.0,
                        "ppc_p_m2": [0.9, 0.01, 0.01, 0.5]})
    out = mw.summarise_ppc(per).set_index("m")
    assert out.loc["m1", "observed"] == 100.0 and out.loc["m1", "diff %"] == 0.0
    assert out.loc["m1", "p < 0.05"] == 0.5 and out.loc["m1", "p > 0.95"] == 0.25
    # fewer than 5 predicted: no tail shares (p is 1 whenever none is observed)
    assert np.isnan(out.loc["m2", "p < 0.05"]) and out.loc["m2", "samples"] == 4
    assert mw.summarise_ppc(per.drop(columns=[c for c in per if c.startswith("ppc")])).empty


def test_population_rows_at_poisson_cells(mw):
    # kappa0 = inf: a Poisson population, the Gibbs run at kappa fixed at inf, and the
    # truth's expectation at the process's own pi with Poisson cells
    toy = toy_latent_class()
    row = mw.population_rows("toy/5%", 0, toy, 20 * toy.n, None, 0, kappas=(np.inf,),
                             draws=1, at_kappa0=True, tune=30)[0]
    n_unique = (toy.key_counts == 1).sum()
    assert np.isinf(row["kappa0"]) and 0 < row["tau1_star"] < n_unique + 1
    assert row["noise_sd1"] > 0 and row["k0_lo1"] <= row["k0_est1"] <= row["k0_hi1"]
