"""benchmarks/overdispersion_oracle.py: the oracle kappa and the spread of the errors."""

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark


@pytest.fixture(scope="module")
def oracle():
    return load_benchmark("overdispersion_oracle.py")


GRID = np.array([0.5, 1.0, 2.0, 4.0, np.inf])


def test_oracle_kappa_interpolates_in_log_kappa(oracle):
    curve = np.array([10.0, 12.0, 14.0, 16.0, 20.0])  # tau1 rises with kappa
    assert oracle.oracle_kappa(curve, 13.0, GRID) == pytest.approx(np.sqrt(2.0))
    assert oracle.oracle_kappa(curve, 9.0, GRID) == 0.5  # even the most clumping overshoots
    assert oracle.oracle_kappa(curve, 17.0, GRID) == np.inf  # beyond the finite grid


def test_error_spread_against_hand_computation(oracle):
    # three replicates' relative errors at each kappa of the grid
    errors = np.array([[-0.20, -0.10, 0.00, 0.05, 0.10],
                       [-0.10, 0.00, 0.10, 0.15, 0.20],
                       [-0.30, -0.05, 0.08, 0.10, 0.30]])
    cv = np.array([0.10, -0.20, 0.04])
    out = oracle.error_spread(errors, cv, GRID)
    # mean errors by kappa: -0.2, -0.05, 0.06, 0.1, 0.2: kappa 1 is closest to zero
    assert out["fixed_kappa"] == 1.0
    assert out["fixed_error_sd"] == pytest.approx(np.std([-0.10, 0.00, -0.05], ddof=1))
    assert out["poisson_error_sd"] == pytest.approx(np.std([0.10, 0.20, 0.30], ddof=1))
    assert out["cv_error_mean"] == pytest.approx(-0.02)
    assert out["cv_error_sd"] == pytest.approx(np.std(cv, ddof=1))
    one = oracle.error_spread(errors[:1], cv[:1], GRID)  # one replicate: no spread, no NaN
    assert one["cv_error_sd"] == 0.0 and one["fixed_kappa"] == 2.0


def test_lattice_kappa_sizes_and_a_sample_of_twins(oracle):
    from sdcbayes.models.latent_class import KAPPA_GRID, LatentClassModel

    rng = np.random.default_rng(11)
    # 80 distinct combinations, each held by exactly two records: no part-unique is
    # unique in the whole sample, the extreme of clumping
    combos = pd.DataFrame({k: rng.integers(0, 12, 80).astype(str) for k in "abc"})
    combos = combos.drop_duplicates().reset_index(drop=True)
    frame = pd.concat([combos, combos], ignore_index=True)
    model = LatentClassModel.from_frame(frame, list("abc"), n_classes=5)
    lat = oracle.lattice_kappa(model, np.random.default_rng(0))
    # parts of n/8 hold fewer than CV_MIN_PART = 25 records: sizes 2 and 4 only
    assert set(lat) == {(2, 1), (4, 1), (4, 2)}
    assert all(k in KAPPA_GRID for k in lat.values())
    # targets that hold the whole sample leave no part-unique unique: the strongest
    # clumping the grid offers matches best
    assert lat[(2, 1)] <= 0.1 and lat[(4, 1)] <= 0.1


def test_kappa_agreement_log_scale_and_cap(oracle):
    orc = np.array([0.5, 1.0, 2.0, 4.0])
    same = oracle.kappa_agreement(orc, orc, GRID)
    assert same["kappa_corr"] == pytest.approx(1.0)
    assert same["cv_log_sd"] == pytest.approx(np.std(np.log(orc), ddof=1))
    assert same["oracle_log_sd"] == same["cv_log_sd"]
    # reversed order: perfectly anti-correlated on the log scale
    assert oracle.kappa_agreement(orc, orc[::-1], GRID)["kappa_corr"] == pytest.approx(-1.0)
    # inf (Poisson cells) is capped at the largest finite grid value, 4: no NaN, no inf
    capped = oracle.kappa_agreement(np.array([0.5, 1.0, np.inf]), np.array([np.inf, 1.0, 0.5]),
                                    GRID)
    assert np.isfinite(capped["kappa_corr"])
    assert capped["oracle_log_sd"] == pytest.approx(np.std(np.log([0.5, 1.0, 4.0]), ddof=1))
    # a cross-validation that never moves cannot correlate
    flat = oracle.kappa_agreement(orc, np.full(4, 2.0), GRID)
    assert np.isnan(flat["kappa_corr"]) and flat["cv_log_sd"] == 0.0
