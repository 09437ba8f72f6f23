"""benchmarks/excess_shape.py: the sample uniques' predicted population frequencies by band."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark
from scipy import stats

from sdcbayes.models.latent_class import (
    LatentClassModel,
    expected_inverse_frequency,
    prob_population_unique,
)


@pytest.fixture(scope="module")
def es():
    return load_benchmark("excess_shape.py")


def draws(seed=0, D=40, C=25):
    rng = np.random.default_rng(seed)
    lam = rng.gamma(1.0, 2.0, (D, C))
    smean = rng.uniform(0.05, 1.0, (D, C))
    kappa = np.where(rng.random((D, 1)) < 0.3, np.inf, rng.gamma(2.0, 1.0, (D, 1)))
    return lam, smean, kappa


def test_pmf_is_the_negative_binomial_and_poisson_at_infinite_kappa(es):
    lam, smean, kappa = draws()
    pmf = es.excess_pmf(lam, smean, kappa, x_max=30)
    x = np.arange(30)[:, None, None]
    b = kappa + smean
    with np.errstate(invalid="ignore"):  # inf / inf where kappa is infinite: not used
        nb = stats.nbinom.pmf(x, kappa + 1.0, b / (b + lam))
    po = stats.poisson.pmf(x, lam)
    expect = np.where(np.isfinite(kappa)[None], nb, po)
    np.testing.assert_allclose(pmf, expect, rtol=1e-9, atol=1e-300)
    # its zero term is the model's own P(F = 1 | f = 1)
    np.testing.assert_allclose(pmf[0], prob_population_unique(lam, kappa, smean), rtol=1e-12)


def test_bands_add_up_and_agree_with_simulation(es):
    lam, smean, kappa = draws(1)
    inv = expected_inverse_frequency(lam, kappa, smean)
    counts, invs = es.predicted_bands(lam, smean, kappa, inv)
    C = lam.shape[1]
    assert counts.sum() == pytest.approx(C)
    assert invs.sum() == pytest.approx(inv.sum(axis=1).mean())
    assert counts[0] == pytest.approx(invs[0])  # F = 1: the count is the 1/F sum
    assert counts[0] == pytest.approx(prob_population_unique(lam, kappa, smean).sum(1).mean())
    # an independent route: F = 1 + X simulated from the gamma-Poisson, banded as observed
    rng = np.random.default_rng(5)
    S = 400
    sim_c, sim_i = np.zeros(counts.size), np.zeros(counts.size)
    for d in range(lam.shape[0]):
        k = kappa[d, 0]
        if np.isfinite(k):
            u = rng.gamma(k + 1.0, 1.0 / (k + smean[d]), (S, C))
        else:
            u = np.ones((S, C))
        F = 1 + rng.poisson(lam[d] * u)
        c, i = es.observed_bands(F.ravel())
        sim_c += c / S
        sim_i += i / S
    sim_c /= lam.shape[0]
    sim_i /= lam.shape[0]
    np.testing.assert_allclose(sim_c, counts, rtol=0.03, atol=0.05)
    np.testing.assert_allclose(sim_i, invs, rtol=0.03, atol=0.02)


def test_observed_bands(es):
    c, i = es.observed_bands([1, 1, 2, 3, 4, 5, 6, 10, 11, 40])
    assert es.band_labels() == ["1", "2", "3", "4-5", "6-10", "11+"]
    np.testing.assert_array_equal(c, [2, 1, 1, 2, 2, 2])
    np.testing.assert_allclose(i, [2, 0.5, 1 / 3, 0.25 + 0.2, 1 / 6 + 0.1, 1 / 11 + 1 / 40])


def test_sample_rows_cover_every_sample_unique(es):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({k: rng.choice(list("abcdefgh"[:L]), 400) for k, L in
                          (("x", 8), ("y", 5), ("z", 4))})
    model = LatentClassModel.from_frame(frame, ["x", "y", "z"], n_classes=4)
    su = int((model.key_counts == 1).sum())

    class Truth:  # sample uniques' records get F = 1, 2, 3, ...: every band is used
        record_fk = np.ones(su, dtype=int)
        record_Fk = np.arange(1, su + 1)

    rows = pd.DataFrame(es.sample_rows("toy", 0, model, 10 * model.n, Truth, seed=1))
    assert su > 10 and list(rows.band) == es.band_labels()
    assert rows.obs_count.sum() == su
    assert rows.pred_count.sum() == pytest.approx(su)
    assert rows.obs_inv.sum() == pytest.approx(np.sum(1.0 / np.arange(1, su + 1)))
    s = es.summarise(pd.concat([rows, rows])).set_index("band")
    assert s.at["1", "count_ratio"] == pytest.approx(1.0 / rows.pred_count.iloc[0])
    # one oracle row per sample, read from the band rows
    o = es.summarise_oracles(rows)
    assert len(o) == 1 and np.isfinite(o.oracle1.iloc[0]) and np.isfinite(o.oracle2.iloc[0])
    assert (rows.cv_lo <= rows.cv_median).all() and (rows.cv_median <= rows.cv_hi).all()
    assert o.oracle_in_90.iloc[0] in (0.0, 1.0)


def test_kappa_quantiles_and_the_oracle_inside_the_range(es):
    grid = np.array([0.1, 1.0, 10.0, np.inf])
    lo, med, hi = es.kappa_quantiles(grid, [0.02, 0.5, 0.3, 0.18])
    assert (lo, med, hi) == (np.log(1.0), np.log(1.0), np.inf)
    lo, med, hi = es.kappa_quantiles(grid, [0.1, 0.1, 0.8, 0.0])
    assert (lo, med, hi) == (np.log(0.1), np.log(10.0), np.log(10.0))
    per = pd.DataFrame({"design": ["a"] * 4, "replicate": range(4),
                        "cv_lo": [0.0, 0.0, 0.0, 0.0], "cv_median": [1.0] * 4,
                        "cv_hi": [2.0, 2.0, np.inf, 2.0], "oracle1": [1.5, 2.5, 9.2, 9.2],
                        "censored1": [0, 0, 1, 1], "oracle2": [1.5, 2.5, 9.2, 9.2]})
    # inside; above the range; censored above with Poisson in range; without it
    assert es.summarise_oracles(per).oracle_in_90.iloc[0] == pytest.approx(0.5)


def test_oracle_kappas_find_the_kappa_that_made_the_truth(es):
    from sdcbayes.models.latent_class import KAPPA_GRID

    rng = np.random.default_rng(2)
    # rare cells (n pi well below 1): P(F = 1 | f = 1) and E(1/F) rise with kappa, as on
    # the real designs' sample uniques
    lam, smean = rng.uniform(0.01, 1.0, (40, 25)), rng.uniform(0.01, 0.1, (40, 25))
    k_true = KAPPA_GRID[30]  # a finite grid point
    t1 = prob_population_unique(lam, k_true, smean).sum(axis=1).mean()
    t2 = expected_inverse_frequency(lam, k_true, smean).sum(axis=1).mean()
    o = es.oracle_kappas(lam, smean, t1, t2)
    assert o["oracle1"] == pytest.approx(np.log(k_true), abs=1e-6)
    assert o["oracle2"] == pytest.approx(np.log(k_true), abs=1e-6)
    assert o["censored1"] == o["censored2"] == 0
    # a truth beyond every kappa's mean is censored at the grid's end
    o = es.oracle_kappas(lam, smean, lam.shape[1] + 1.0, 0.0)
    assert o["censored1"] == 1 and o["censored2"] == -1
    assert o["oracle1"] == pytest.approx(np.log(KAPPA_GRID[-2]))
    assert o["oracle2"] == pytest.approx(np.log(KAPPA_GRID[0]))
