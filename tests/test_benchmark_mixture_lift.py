"""benchmarks/mixture_lift.py: the mixture's lift of the uniques' pi under prior variants.

The variants are checked for the prior they set, the rows on a toy sample drawn in its
model's world (the truth's expectations against their closed forms at Poisson cells,
the same chains' seed for every variant), and the summary's sums on a made-up table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark

from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import LatentClassModel


@pytest.fixture(scope="module")
def ml():
    return load_benchmark("mixture_lift.py")


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(11)
    # two groups with different profiles, so that EM finds structure
    g = rng.random(400) < 0.4
    frame = pd.DataFrame({k: np.where(g, rng.choice([f"a{i}" for i in range(6)], 400),
                                      rng.choice([f"b{i}" for i in range(6)], 400))
                          for k in ("x", "y", "z")})
    return LatentClassModel.from_frame(frame, ["x", "y", "z"], n_classes=4)


def test_variants_set_the_prior_they_name(ml, toy):
    assert ml.variant_model(toy, "default") is toy
    assert ml.variant_model(toy, "classes=3").H == 3
    a = ml.variant_model(toy, "alpha=0.1").priors["alpha"]
    # held at 0.1: mean 0.1, sd sqrt(0.1) / 100 = 0.003
    assert a["alpha"] / a["beta"] == pytest.approx(0.1)
    assert np.sqrt(a["alpha"]) / a["beta"] == pytest.approx(np.sqrt(0.1) / 100)
    assert ml.variant_model(toy, "small-mass=30").priors["phi"]["small_mass"] == 30.0
    learn_all = ml.variant_model(toy, "learn-all")
    assert learn_all.priors["phi"]["min_levels"] == 2
    # every key's mass learnt, against none of these 6-level keys by default
    assert all(learn_all.learns_mass(j) for j in range(3))
    assert not any(toy.learns_mass(j) for j in range(3))
    for bad in ("classes=x", "alpha=-1", "alpha", "learn-all=2", "bogus"):
        with pytest.raises(InputError, match="unknown prior variant"):
            ml.variant_model(toy, bad)


def test_lift_rows_truth_and_seeds(ml, toy):
    N = 4000.0
    rows = ml.lift_rows("toy/10%", 0, toy, N, 5, np.inf, ["default", "classes=2", "default"],
                        tune=20)
    assert [r["variant"] for r in rows] == ["default", "classes=2", "default"]
    r = rows[0]
    # the drawn sample has the real one's size; its population about N records
    assert r["n"] == toy.n and abs(r["N"] - N) < 5 * np.sqrt(N)
    # the truth's expectations at Poisson cells in closed form, from the process's pi:
    # P(F = 1 | f = 1) = exp(-lam), E(1/F | f = 1) = (1 - exp(-lam)) / lam, lam = (N - n) pi
    rng = np.random.default_rng([5, 0, 96])
    _, fit = ml.part_priors(toy, rng, ml.EM_RESTARTS - 1)
    sample, _, N_pop = ml.population_sample(toy, fit, np.inf, N, rng)
    assert N_pop == r["N"]
    codes = sample.key_codes[sample.key_counts == 1]
    assert codes.shape[0] == r["uniques"]
    lam = (N_pop - r["n"]) * ml.fit_probabilities(toy, fit, codes)
    assert r["tau1_star"] == pytest.approx(np.exp(-lam).sum(), rel=1e-9)
    assert r["tau2_star"] == pytest.approx(((1 - np.exp(-lam)) / lam).sum(), rel=1e-9)
    # the same chains' seed for every variant: the default twice gives the same numbers
    for k in ("est1", "est2", "sd1", "log_pi_err", "classes"):
        assert rows[2][k] == rows[0][k]
    assert rows[1]["classes"] <= 2 < 4
    for row in rows:
        assert 0.0 <= row["log_pi_cover"] <= 1.0 and row["log_pi_sd"] > 0
        assert row["log_pi_rmse"] >= abs(row["log_pi_err"])


def test_summary_sums(ml):
    per = pd.DataFrame({
        "design": ["d"] * 4, "replicate": [0, 1, 0, 1], "variant": ["a", "a", "b", "b"],
        "tau1_star": [100.0, 200.0, 100.0, 200.0], "tau2_star": [150.0, 250.0, 150.0, 250.0],
        "est1": [110.0, 180.0, 100.0, 200.0], "sd1": [5.0, 10.0, 5.0, 10.0],
        "est2": [150.0, 275.0, 150.0, 250.0], "classes": [10.0, 12.0, 5.0, 5.0],
        "log_pi_err": [0.1, 0.3, 0.0, 0.0], "log_pi_sd": [0.5] * 4,
        "log_pi_rmse": [0.6] * 4, "log_pi_cover": [0.9] * 4, "seconds": [1.0] * 4})
    s = ml.summarise(per).set_index("variant")
    # the harness's ratio of means (290 / 300 - 1), not the mean of per-sample ratios (0)
    assert s.loc["a", "bias1"] == pytest.approx((110 + 180) / (100 + 200) - 1)
    assert s.loc["a", "bias2"] == pytest.approx((150 + 275) / (150 + 250) - 1)
    assert s.loc["a", "z1"] == pytest.approx((2.0 - 2.0) / 2)
    assert s.loc["a", "err_sd1"] == pytest.approx(np.std([0.1, -0.1], ddof=1))
    assert s.loc["a", "classes"] == 11.0 and s.loc["a", "log_pi_err"] == pytest.approx(0.2)
    assert s.loc["b", "bias1"] == 0.0 and s.loc["b", "samples"] == 2
