"""benchmarks/cv_pairs.py: the clumping of the cross-validation's failures, and the kappa
likelihood's standardised discrepancy.

The failures are checked on a partition worked by hand, the clumping index's claim --
that the failures' count has variance rho times its mean, where independent Bernoulli
events would have at most their mean -- by simulation, the partition sizes against
overdispersion_cv's, the sign and size of z on a likelihood built from known
discrepancies, and the model's-world rows on a toy sample.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark, toy_latent_class

from sdcbayes.models.latent_class import KAPPA_GRID


@pytest.fixture(scope="module")
def cp():
    return load_benchmark("cv_pairs.py")


def test_failures_by_hand(cp):
    # cells: 0 (x2, split), 1 (x1, a sample unique), 2 (x3: two in part 0, one in part 1),
    # 3 (x3, one per part), 4 (x2, both in part 1)
    cell = np.array([0, 0, 1, 2, 2, 2, 3, 3, 3, 4, 4])
    part = np.array([0, 1, 0, 0, 0, 1, 0, 1, 2, 1, 1])
    e = cp.failures(cell, part)
    np.testing.assert_array_equal(e, [2, 0, 1, 3, 0])
    total, rho = cp.clumping(e)
    assert total == 6 and rho == pytest.approx((4 + 1 + 9) / 6)
    assert cp.clumping(np.zeros(3))[0] == 0 and np.isnan(cp.clumping(np.zeros(3))[1])
    # every failure half of a split pair: rho = 2
    assert cp.clumping(cp.failures([0, 0, 1, 1], [0, 1, 1, 0]))[1] == 2.0


def test_random_parts_sizes_as_the_cross_validation_cuts(cp):
    rng = np.random.default_rng(0)
    for n, ratio in ((488, 4), (488, 8), (37, 8)):
        part = cp.random_parts(n, ratio, rng)
        sizes = np.bincount(part, minlength=ratio)
        expected = [(i + 1) * n // ratio - i * n // ratio for i in range(ratio)]
        np.testing.assert_array_equal(sizes, expected)


def test_failure_count_variance_is_rho_times_its_mean(cp):
    # a sparse Poisson world: most occupied cells hold one record, the failures come from
    # split pairs; over many samples Var(failures) / E[failures] matches the mean of
    # sum e^2 / the mean of sum e, about 2, while Bernoulli events would give at most 1
    rng = np.random.default_rng(11)
    mu = np.full(20000, 0.03)
    totals, sq = [], []
    for _ in range(3000):
        counts = rng.poisson(mu)
        cell = np.repeat(np.arange(mu.size), counts)
        e = cp.failures(cell, cp.random_parts(cell.size, 4, rng))
        totals.append(e.sum())
        sq.append((e**2).sum())
    totals = np.asarray(totals, dtype=float)
    ratio = totals.var(ddof=1) / totals.mean()
    rho = np.mean(sq) / totals.mean()
    assert rho == pytest.approx(2.0, abs=0.05)
    assert ratio == pytest.approx(rho, rel=0.1)


def test_signed_z_recovers_known_discrepancies(cp):
    # count T against a prediction that rises with kappa: loglik = -(T - P)^2 / 2
    pred = np.linspace(80.0, 120.0, KAPPA_GRID.size)
    T = np.array([95.0, 110.0])
    loglik = -((T[:, None] - pred[None, :]) ** 2) / 2
    for i in (5, 30, 50):
        np.testing.assert_allclose(cp.signed_z(loglik, i), T - pred[i])
    assert cp.grid_index(np.inf) == KAPPA_GRID.size - 1
    assert KAPPA_GRID[cp.grid_index(0.5)] == pytest.approx(0.501, abs=1e-3)
    assert KAPPA_GRID[cp.grid_index(1.35)] == pytest.approx(1.259, abs=1e-3)


def test_model_world_rows_and_summary(cp):
    toy = toy_latent_class()
    rows = pd.DataFrame(cp.model_world_rows("toy/5%", 0, toy, 20.0 * toy.n, 0.5, draws=2))
    assert set(rows.draw) == {0, 1} and set(rows.ratio) <= {2, 4, 8}
    assert np.isfinite(rows.z).all() and (rows.phi >= 1).all()
    # seeded: the same rows again
    again = pd.DataFrame(cp.model_world_rows("toy/5%", 0, toy, 20.0 * toy.n, 0.5, draws=2))
    pd.testing.assert_frame_equal(rows, again)
    d = pd.DataFrame({"design": "d", "kappa0": 0.5, "ratio": 4, "replicate": [0, 0, 1, 1],
                      "z": [1.0, 3.0, -1.0, -1.0], "phi": [2.0, 2.0, 3.0, 3.0]})
    (row,) = cp.summarise_z(d).to_dict("records")
    assert row["z_mean"] == pytest.approx(0.5)
    assert row["z_sd"] == pytest.approx(np.std([1.0, 3.0, -1.0, -1.0], ddof=1))
    # about each sample's own mean: deviations +-1 and 0, 0 on 4 - 2 degrees of freedom
    assert row["z_sd_within"] == pytest.approx(1.0)
    assert row["phi"] == 2.5
