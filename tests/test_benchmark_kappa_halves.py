"""benchmarks/kappa_halves.py: kappa read on half-samples, and the kappa posterior widened
by their scatter.

The summaries are checked on weights and tables worked by hand, the half-sample on a toy
model, the widening against the normal it convolves with, and the scoring on made-up
records whose per-kappa draws move with kappa, so that a wider kappa range must widen the
interval and leave the weights' centre alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark, made_up_records, toy_latent_class

from sdcbayes.models.latent_class import KAPPA_GRID, LatentClassModel


@pytest.fixture(scope="module")
def kh():
    return load_benchmark("kappa_halves.py")


def test_read_summary_caps_the_poisson_point(kh):
    grid = np.array([0.5, 2.0, np.inf])
    med, mean = kh.read_summary([0.25, 0.25, 0.5], grid)
    assert med == pytest.approx(np.log(2.0))       # cumulative weight reaches 1/2 there
    assert mean == pytest.approx(0.25 * np.log(0.5) + 0.25 * np.log(2.0) + 0.5 * kh.LOG_TOP)
    assert kh.read_summary([0.0, 0.0, 2.0], grid) == (kh.LOG_TOP, kh.LOG_TOP)


def test_half_sample_draws_half_the_records_without_replacement(kh):
    cells = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [2, 1]])
    counts = np.array([1, 3, 10, 2, 5])
    model = LatentClassModel(cells, counts, [3, 2], n_classes=2)
    rng = np.random.default_rng(3)
    for _ in range(50):
        half = kh.half_sample(model, rng)
        assert half.n == counts.sum() // 2
        idx = [int(np.flatnonzero((cells == c).all(axis=1))[0]) for c in half.codes]
        assert np.all(half.counts <= counts[idx])     # never more than the sample holds


def test_widen_is_a_normal_convolution_in_log_kappa(kh):
    lg = np.minimum(np.log(KAPPA_GRID), kh.LOG_TOP)
    w = np.zeros(KAPPA_GRID.size)
    mid = int(np.argmin(np.abs(lg - np.median(lg[np.isfinite(np.log(KAPPA_GRID))]))))
    w[mid] = 1.0
    np.testing.assert_array_equal(kh.widen(w, 0.0), w)
    v = kh.widen(w, 0.8)
    assert v.sum() == pytest.approx(1.0) and v.argmax() == mid
    # the spread mass has the normal's sd (the grid is fine enough; far from its ends)
    assert np.sqrt(v @ (lg - lg[mid]) ** 2) == pytest.approx(0.8, rel=0.05)
    assert v @ lg == pytest.approx(lg[mid], abs=0.02)


def test_summary_by_hand(kh):
    per = pd.DataFrame({"design": "d", "replicate": [0, 0, 1, 1], "half": [0, 1, 0, 1],
                        "full_med": [1.0, 1.0, 3.0, 3.0], "full_mean": [1.0, 1.0, 2.0, 2.0],
                        "med": [1.0, 2.0, 3.0, 3.0], "mean": [2.0, 4.0, 2.0, 3.0]})
    (row,) = kh.summarise(per).to_dict("records")
    assert row["samples"] == 2 and row["halves"] == 2
    assert row["between_sd_mean"] == pytest.approx(np.std([1.0, 2.0], ddof=1))
    # within-sample variances of the means 2 and 0.5: root of their mean
    assert row["within_sd_mean"] == pytest.approx(np.sqrt((2.0 + 0.5) / 2))
    assert row["within_sd_med"] == pytest.approx(np.sqrt((0.5 + 0.0) / 2))
    assert row["half_offset"] == pytest.approx(((3.0 - 1.0) + (2.5 - 2.0)) / 2)


def test_score_widens_kappa_range_not_its_centre(kh):
    # tau1's draws rise with kappa's grid index: spreading kappa's weight widens the interval
    data = made_up_records(samples=2, slope=2.0)
    per = pd.DataFrame({"design": "toy/1%", "replicate": [0, 0, 1, 1], "half": [0, 1, 0, 1],
                        "full_med": 0.0, "full_mean": 0.0, "med": 0.0,
                        "mean": [0.0, 1.0, 0.0, 0.0]})
    rows = kh.score(data, per)
    assert rows.rule.tolist() == ["default", "halves-design1", "halves-sample1",
                                  "halves-design0.5", "halves-sample0.5"] * 2
    r0 = rows[rows.replicate == 0].set_index("rule")
    width = r0.hi1 - r0.lo1
    assert width["halves-sample1"] > width["halves-sample0.5"] > width["default"]
    # sample 1's halves agree: its own sd is 0 and its interval the default's
    r1 = rows[rows.replicate == 1].set_index("rule")
    assert r1.loc["halves-sample1", "lo1"] == r1.loc["default", "lo1"]
    assert r1.loc["halves-design1", "hi1"] > r1.loc["default", "hi1"]
    with pytest.raises(ValueError, match="not in the records"):
        kh.score(data, per.assign(replicate=[0, 0, 5, 5]))


def test_half_rows_read_the_whole_sample_once_and_each_half(kh):
    toy = toy_latent_class(n=300)
    rows = kh.half_rows("toy/5%", 0, toy, 20 * toy.n, None, 0, halves=3)
    assert [r["half"] for r in rows] == [0, 1, 2]
    assert len({(r["full_med"], r["full_mean"]) for r in rows}) == 1
    lg_top = kh.LOG_TOP
    assert all(np.log(KAPPA_GRID[0]) <= r["mean"] <= lg_top for r in rows)
    # reproducible from the seed
    again = kh.half_rows("toy/5%", 0, toy, 20 * toy.n, None, 0, halves=3)
    assert [r["mean"] for r in again] == [r["mean"] for r in rows]
    weighted = LatentClassModel(np.array([[0, 0, 0], [1, 1, 1]]), [2, 3], [2, 2, 2],
                                n_classes=2, class_weights=[5.0, 20.0])
    with pytest.raises(ValueError, match="equal weights"):
        kh.half_rows("w", 0, weighted, 100.0, None, 0)
