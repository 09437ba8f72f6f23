"""benchmarks/chain_mixing.py: the demo's chains sweep by sweep.

Checked on a few sweeps: the watching subclass leaves the draws unchanged, the recorded
conditional of the profile mass is the one the draws come from, and the block table's
means are the trajectory's.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchtools import load_benchmark

from sdcbayes.models.latent_class import LatentClassModel

SWEEPS, CHAINS = 40, 2


@pytest.fixture(scope="module")
def cm():
    return load_benchmark("chain_mixing.py")


@pytest.fixture(scope="module")
def run(cm):
    model, N, tau1 = cm.demo_model()
    return model, N, tau1, cm.trajectory(model, N, SWEEPS, CHAINS, seed=3, label_moves=False)


def test_watching_leaves_the_draws_unchanged(run):
    model, N, _, traj = run
    plain = LatentClassModel(model.codes, model.counts, model.n_levels, keys=model.keys,
                             levels=model.levels, n_classes=model.H, priors=model.priors,
                             class_weights=model.class_weights)
    idata = plain.sample(draws=SWEEPS, tune=0, chains=CHAINS, N=N, random_seed=3, cores=1)
    np.testing.assert_array_equal(idata.posterior["tau1_expected"].values,
                                  traj["tau1_expected"])
    np.testing.assert_array_equal(idata.sample_stats["n_classes_used"].values,
                                  traj["classes"])


def test_mass_conditional_is_what_the_draws_come_from(run):
    _, _, tau1, traj = run
    assert tau1 == 147  # the demo's truth, as the README quotes it
    assert list(traj["learnt_keys"]) == ["country_of_birth"]  # the one key of >= 20 levels
    cond = traj["mass_conditional"]
    assert cond.shape == (CHAINS, SWEEPS, 1, 2) and np.isfinite(cond).all()
    assert np.all(cond[..., 1] > 0)
    # each sweep's M is a draw from the recorded conditional: over 80 draws the mean
    # difference has sd about 0.25 / sqrt(80) = 0.03 in log2 units
    diff = traj["log2_mass"][..., 0] - cond[..., 0, 0]
    assert abs(diff.mean()) < 0.15, diff.mean()
    assert np.abs(diff).max() < 6 * cond[..., 0, 1].max()


def test_block_table_means_and_diagnostics(cm, run):
    _, _, _, traj = run
    t = cm.block_table(traj, blocks=4)
    assert len(t) == 4 * CHAINS and list(t["sweeps"].unique()) == ["0-10", "10-20", "20-30",
                                                                    "30-40"]
    row = t[(t.sweeps == "10-20") & (t.chain == 1)].iloc[0]
    assert row["tau1_expected"] == pytest.approx(traj["tau1_expected"][1, 10:20].mean())
    assert row["classes"] == pytest.approx(traj["classes"][1, 10:20].mean())
    assert row["log2_M[country_of_birth]"] == pytest.approx(traj["log2_mass"][1, 10:20, 0].mean())
    rhat, ess = cm.second_half_diagnostics(traj["tau1_expected"])
    assert rhat > 0.9 and 1 <= ess <= CHAINS * SWEEPS


def test_label_moves_option_runs_and_differs(cm, run):
    model, N, _, traj = run
    on = cm.trajectory(model, N, SWEEPS, CHAINS, seed=3, label_moves=True)
    assert on["tau1_expected"].shape == traj["tau1_expected"].shape
    assert not np.array_equal(on["tau1_expected"], traj["tau1_expected"])
    with pytest.raises(SystemExit):
        cm.main(["--label-moves", "sometimes"])
