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


def test_start_mass_smooths_the_learnt_keys_profiles_only(run):
    model, _, _, _ = run
    j = model.keys.index("country_of_birth")
    model.start_mass = None
    plain = model._init_state(np.random.default_rng(4), "em", 1)
    try:
        model.start_mass = 1e12  # so large that the profiles are the base
        flat = model._init_state(np.random.default_rng(4), "em", 1)
        model.start_mass = 100.0
        mid = model._init_state(np.random.default_rng(4), "em", 1)
    finally:
        model.start_mass = None
    base = model.phi_base(j)
    np.testing.assert_allclose(np.exp(flat["log_phi"][j]), np.broadcast_to(base, (model.H,
                                                                                 base.size)),
                               rtol=1e-6, atol=1e-12)
    for k in range(len(model.keys)):  # the other keys' profiles and the weights unchanged
        if k != j:
            np.testing.assert_array_equal(flat["log_phi"][k], plain["log_phi"][k])
    np.testing.assert_array_equal(flat["V"], plain["V"])
    # M = 100: each class's profile is (n_h phi_h + 100 base) / (n_h + 100), still a profile
    from sdcbayes.models.latent_class import stick_breaking_weights

    n_h = model.n * stick_breaking_weights(plain["V"])[:, None]
    want = (n_h * np.exp(plain["log_phi"][j]) + 100.0 * base) / (n_h + 100.0)
    np.testing.assert_allclose(np.exp(mid["log_phi"][j]), want, rtol=1e-12)
    np.testing.assert_allclose(np.exp(mid["log_phi"][j]).sum(axis=1), 1.0, rtol=1e-12)


def test_start_from_em_at_a_fixed_mass(cm, run):
    model, N, _, _ = run
    phi = {k: v for k, v in model.priors["phi"].items() if k != "mass"}
    fixed = LatentClassModel(model.codes, model.counts, model.n_levels, keys=model.keys,
                             levels=model.levels, n_classes=model.H,
                             priors={**model.priors, "phi": {**phi, "mass": 512.0}},
                             class_weights=model.class_weights)
    assert not fixed.learns_phi_mass
    want = fixed._init_state(np.random.default_rng(8), "em", 1)
    model.start_mass, model.start_how = 512.0, "em"
    try:
        got = model._init_state(np.random.default_rng(8), "em", 1)
    finally:
        model.start_mass, model.start_how = None, "smooth"
    np.testing.assert_array_equal(got["V"], want["V"])
    for a, b in zip(got["log_phi"], want["log_phi"], strict=True):
        np.testing.assert_array_equal(a, b)
    j = model.keys.index("country_of_birth")
    assert got["phi_mass"][j] == 512.0 and got["phi_mass"].shape == (len(model.keys),)
    # and the chains run from it (the sampler takes the masses per key)
    traj = cm.trajectory(model, N, 5, 1, seed=1, label_moves=False, start_mass=512.0,
                         start_how="em")
    assert traj["tau1_expected"].shape == (1, 5) and np.isfinite(traj["log2_mass"]).all()
    assert model.start_mass == 512.0  # trajectory leaves the start it was given
    model.start_mass, model.start_how = None, "smooth"


def test_hold_mass_holds_the_first_sweeps_then_draws(cm, run):
    from sdcbayes.models.latent_class import PHI_MASS_GRID

    model, N, _, _ = run
    traj = cm.trajectory(model, N, 6, 2, seed=2, label_moves=False, hold=(3000.0, 4))
    model.hold = None
    M = 2.0 ** traj["log2_mass"][..., 0]
    np.testing.assert_allclose(M[:, :4], 3000.0)
    assert np.isin(np.round(M[:, 4:], 6), np.round(PHI_MASS_GRID, 6)).all()
    # the conditionals are recorded through the hold
    assert np.isfinite(traj["mass_conditional"]).all()
    with pytest.raises(SystemExit):
        cm.main(["--hold-mass", "4096"])


def test_start_classes_is_the_samplers_option(cm, run):
    model, N, _, _ = run
    traj = cm.trajectory(model, N, 3, 2, seed=5, label_moves=False, start_classes=6)
    # the first sweep allocates among the EM start's classes only (the rest weigh 1e-12)
    assert traj["classes"][:, 0].max() <= 6
    with pytest.raises(SystemExit):
        cm.main(["--start-classes", "0"])


def test_split_merge_is_the_samplers_option_and_its_table_counts_the_moves(cm, run):
    model, N, _, traj = run
    sm = cm.trajectory(model, N, SWEEPS, CHAINS, seed=3, label_moves=False, split_merge=5)
    acc = sm["split_merge_accepted"]
    assert acc.shape == (CHAINS, SWEEPS) and acc.sum() > 0
    assert not np.array_equal(sm["tau1_expected"], traj["tau1_expected"])
    t = cm.block_table(sm, 4)
    row = t[(t.sweeps == "10-20") & (t.chain == 0)].iloc[0]
    assert row["split_merge_accepted"] == acc[0, 10:20].sum()
    assert "split_merge_accepted" not in cm.block_table(traj, 4)
    with pytest.raises(SystemExit):
        cm.main(["--split-merge", "-1"])
