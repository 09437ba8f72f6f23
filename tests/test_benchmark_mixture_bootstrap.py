"""benchmarks/mixture_bootstrap.py: the bootstrap of the mixture's plug-in, and the
recorded intervals widened by it.

The plug-in sums are checked against the formulas on a hand-set fit, the bootstrap on a
toy sample (its own EM plug-in first, resamples scattering about it), the widening on
made-up records where the answer is known: no widening at sd 0, the estimate never moved.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark, made_up_records

from sdcbayes.models.latent_class import KAPPA_GRID, LatentClassModel


@pytest.fixture(scope="module")
def mb():
    return load_benchmark("mixture_bootstrap.py")


def test_plug_in_sums_are_the_formulas(mb):
    # two classes set by hand on 3 x 4 keys; two cells taken as the sample uniques
    model = LatentClassModel(np.array([[0, 0], [1, 1], [2, 3]]), [1, 2, 1], [3, 4],
                             n_classes=2)
    fit = {"w": [0.7, 0.3], "phi": [[[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]],
                                    [[0.4, 0.3, 0.2, 0.1], [0.1, 0.1, 0.3, 0.5]]]}
    codes = np.array([[0, 0], [2, 3]])
    pi = np.array([0.7 * 0.6 * 0.4 + 0.3 * 0.1 * 0.1, 0.7 * 0.1 * 0.1 + 0.3 * 0.7 * 0.5])
    N, n = 400.0, 4.0
    grid = np.array([0.5, 2.0, np.inf])
    s1, s2 = mb.plug_in_sums(model, fit, codes, N, n, grid)
    lam = (N - n) * pi
    # Poisson: e^-lam and (1 - e^-lam)/lam
    assert s1[2] == pytest.approx(np.exp(-lam).sum())
    assert s2[2] == pytest.approx(((1 - np.exp(-lam)) / lam).sum())
    # gamma cells: (b / (b + lam))^(k + 1), b = k + n pi
    for j, k in enumerate(grid[:2]):
        b = k + n * pi
        assert s1[j] == pytest.approx(((b / (b + lam)) ** (k + 1)).sum())
    # clumping keeps more uniques unique; E(1/F) >= P(F = 1)
    assert s1[0] > s1[1] > s1[2] and np.all(s2 >= s1)


def _toy(seed=2, n=200):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({k: rng.choice([f"v{i}" for i in range(6)], n,
                                        p=[0.35, 0.25, 0.15, 0.1, 0.1, 0.05])
                          for k in ("x", "y", "z", "u")})
    return LatentClassModel.from_frame(frame, ["x", "y", "z", "u"], n_classes=4)


def test_bootstrap_sums_refit_resamples_on_the_same_uniques(mb):
    toy = _toy()
    N = 20 * toy.n
    grid = np.array([0.5, 2.0, np.inf])
    out = mb.bootstrap_sums(toy, N, 6, np.random.default_rng(1), grid)
    assert out["b1"].shape == (6, 3) and out["em1"].shape == (3,)
    # the whole sample's plug-in is the EM fit's with the same stream
    fit = toy.fit_em(n_restarts=mb.EM_RESTARTS - 1, random_seed=np.random.default_rng(1))
    codes = toy.key_codes[toy.key_counts == 1]
    em1, em2 = mb.plug_in_sums(toy, fit, codes, N, toy.n, grid)
    assert np.allclose(out["em1"], em1) and np.allclose(out["em2"], em2)
    # every resample is a sum over the same uniques: at most their number, and it scatters
    assert np.all((out["b1"] > 0) & (out["b1"] <= codes.shape[0]))
    assert np.all(out["b1"].std(axis=0) > 0)
    # seeded: the same stream gives the same resamples
    again = mb.bootstrap_sums(toy, N, 6, np.random.default_rng(1), grid)
    assert np.array_equal(again["b2"], out["b2"])


def test_bootstrap_sums_refuse_a_weighted_sample(mb):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({k: rng.choice(["a", "b", "c"], 60) for k in ("x", "y")})
    weighted = LatentClassModel.from_frame(frame, ["x", "y"], n_classes=2,
                                           weights=pd.Series(np.where(np.arange(60) < 30,
                                                                      10.0, 30.0)))
    with pytest.raises(ValueError, match="equal weights"):
        mb.bootstrap_sums(weighted, 1200.0, 2, rng)


def test_widened_rows_keep_the_estimate_and_widen_by_the_sd(mb):
    data = made_up_records()
    w = mb.rule_weights(data["loglik"][0], data["ratios"][0], "default")
    assert w[10] > 0.999
    base = mb.sample_row(data, 0, "default", w)
    zero = mb.widened_row(data, 0, "default", w, np.zeros(KAPPA_GRID.size),
                          np.zeros(KAPPA_GRID.size), np.random.default_rng(0))
    assert zero["rule"] == "default+boot1"
    assert (zero["lo1"], zero["hi1"], zero["est1"]) == (base["lo1"], base["hi1"], base["est1"])
    # sd 5 added to draws of sd 5: the 90% interval's width grows by about sqrt(2)
    wide = mb.widened_row(data, 0, "default", w, np.full(KAPPA_GRID.size, 5.0),
                          np.full(KAPPA_GRID.size, 5.0), np.random.default_rng(0), scale=1.0)
    ratio = (wide["hi1"] - wide["lo1"]) / (base["hi1"] - base["lo1"])
    assert ratio == pytest.approx(np.sqrt(2), rel=0.15)
    assert wide["est1"] == base["est1"] and wide["est2"] == base["est2"]
    half = mb.widened_row(data, 0, "default", w, np.full(KAPPA_GRID.size, 5.0),
                          np.full(KAPPA_GRID.size, 5.0), np.random.default_rng(0), scale=0.5)
    assert half["rule"] == "default+boot0.5"
    assert (half["hi1"] - half["lo1"]) < (wide["hi1"] - wide["lo1"])


def test_score_rows_and_missing_samples(mb):
    data = made_up_records()
    g = KAPPA_GRID.size
    boot = {"design": np.array(["toy/1%", "toy/1%"]), "replicate": np.array([0, 2]),
            "sd1": np.zeros((2, g)), "sd2": np.zeros((2, g))}
    per = mb.score(data, boot)
    assert per.rule.tolist() == ["default", "default+boot0.5", "default+boot1"] * 2
    assert per.replicate.tolist() == [0, 0, 0, 2, 2, 2]
    # no bootstrap scatter: every widened interval is the rule's own
    assert per.groupby("replicate").lo1.nunique().eq(1).all()
    bad = {**boot, "replicate": np.array([0, 5])}
    with pytest.raises(ValueError, match="not in the records"):
        mb.score(data, bad)


def test_boot_sds_join_runs_of_different_sizes(mb, tmp_path):
    g = KAPPA_GRID.size
    rng = np.random.default_rng(0)
    a = {"design": np.array(["x"]), "replicate": np.array([0]),
         "b1": rng.standard_normal((1, 4, g)), "b2": rng.standard_normal((1, 4, g))}
    b = {"design": np.array(["y", "y"]), "replicate": np.array([0, 1]),
         "b1": rng.standard_normal((2, 7, g)), "b2": rng.standard_normal((2, 7, g))}
    np.savez(tmp_path / "a.npz", **a)
    np.savez(tmp_path / "b.npz", **b)
    out = mb.boot_sds([tmp_path / "a.npz", tmp_path / "b.npz"])
    assert out["design"].tolist() == ["x", "y", "y"] and out["sd1"].shape == (3, g)
    assert np.allclose(out["sd2"][2], b["b2"][1].std(axis=0, ddof=1))
