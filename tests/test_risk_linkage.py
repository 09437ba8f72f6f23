"""Distance-based record linkage risk (seed 001, section 3.6).

Checked by hand on a tiny file, against a brute-force distance matrix, against a
closed form for uniform noise on a grid (Monte Carlo with a fixed seed), and for
the seed's qualitative claim that more noise means less linkage.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.risk.linkage import linkage_risk


def brute_force_rank(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 + number of originals strictly closer than the own one, capped at 3 (full matrix)."""
    d = np.sqrt(((b[:, None, :] - a[None, :, :]) ** 2).sum(axis=2))
    own = np.diag(d)
    closer = (d < own[:, None] * (1 - 1e-9)).sum(axis=1)
    return np.minimum(1 + closer, 3)


def test_tiny_example_by_hand():
    # originals 0, 1, 3; protected 0.1 (own at 0.1: nearest), 0.6 (own 1 at 0.4, 0 at 0.6:
    # nearest), 1.9 (1 at 0.9 is closer than own 3 at 1.1: second nearest)
    orig = pd.DataFrame({"x": [0.0, 1.0, 3.0]})
    prot = pd.DataFrame({"x": [0.1, 0.6, 1.9]})
    res = linkage_risk(orig, prot, standardize=False)
    np.testing.assert_array_equal(res.rank, [1, 1, 2])
    np.testing.assert_allclose(res.distance, [0.1, 0.4, 1.1])
    assert res.share_nearest == pytest.approx(2 / 3)
    assert res.share_second == pytest.approx(1 / 3)
    assert res.share_linked == 1.0
    # 2-D, standardised: sd of x = 1, sd of y = 10 -> y differences count a tenth
    orig2 = pd.DataFrame({"x": [0.0, 1.0, 2.0], "y": [0.0, 10.0, 20.0]})
    prot2 = pd.DataFrame({"x": [0.0, 1.6, 2.0], "y": [0.0, 10.0, -2.0]})
    res2 = linkage_risk(orig2, prot2)
    # record 1 at (1.6, 1.0) in sd units: own (1, 1) at 0.6, (2, 2) at sqrt(0.16 + 1);
    # record 2 at (2, -0.2): own (2, 2) at 2.2, (0, 0) at 2.01, (1, 1) at 1.56 -> third
    np.testing.assert_array_equal(res2.rank, [1, 1, 3])
    np.testing.assert_allclose(res2.scale, [1.0, 10.0])


def test_ties_count_for_the_intruder():
    # protected 0.5 is equally far from originals 0 and 1: rank 1 (tie), expected 1/2
    res = linkage_risk(np.array([[0.0], [1.0], [5.0]]), np.array([[0.5], [1.0], [5.0]]),
                       standardize=False)
    np.testing.assert_array_equal(res.rank, [1, 1, 1])
    np.testing.assert_array_equal(res.n_tied, [2, 1, 1])
    np.testing.assert_allclose(res.expected_correct, [0.5, 1, 1])
    # duplicated originals: a protected copy ties with both
    res = linkage_risk(np.array([[2.0], [2.0]]), np.array([[2.0], [2.0]]))
    np.testing.assert_array_equal(res.n_tied, [2, 2])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_brute_force_distance_matrix(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(300, 3)) * np.array([1.0, 5.0, 0.2])
    b = a + rng.normal(scale=0.3, size=a.shape) * np.array([1.0, 5.0, 0.2])
    res = linkage_risk(a, b)
    sa, sb = a / a.std(axis=0, ddof=1), b / a.std(axis=0, ddof=1)
    np.testing.assert_array_equal(res.rank, brute_force_rank(sa, sb))
    raw = linkage_risk(a, b, standardize=False)
    np.testing.assert_array_equal(raw.rank, brute_force_rank(a, b))


def test_uniform_noise_on_a_grid_closed_form():
    # Originals 0, 1, ..., n-1; protected x_i + e_i, e ~ U(-h, h). For an interior record
    # the own original is nearest iff |e| < 1/2, second nearest iff 1/2 < |e| < 1, so with
    # h = 1.5: P(nearest) = P(second) = 1/3. Monte Carlo, n = 4000, fixed seed: binomial
    # sd 0.0075 plus an edge effect of ~1/n; tolerance 0.03 (4 sd).
    rng = np.random.default_rng(7)
    n, h = 4000, 1.5
    x = np.arange(n, dtype=float)[:, None]
    res = linkage_risk(x, x + rng.uniform(-h, h, size=x.shape), standardize=False)
    assert res.share_nearest == pytest.approx(1 / 3, abs=0.03)
    assert res.share_second == pytest.approx(1 / 3, abs=0.03)
    # h = 0.4 < 1/2: always nearest
    res = linkage_risk(x, x + rng.uniform(-0.4, 0.4, size=x.shape), standardize=False)
    assert res.share_nearest == 1.0


def test_share_decreases_with_noise():
    rng = np.random.default_rng(11)
    orig = pd.DataFrame(rng.normal(size=(800, 2)) * [1.0, 3.0], columns=["income", "age"])
    base_noise = rng.normal(size=orig.shape)
    shares = []
    for level in (0.0, 0.05, 0.2, 0.5, 1.0):  # noise sd as a fraction of each sd
        prot = orig + base_noise * level * orig.std(ddof=1).to_numpy()
        shares.append(linkage_risk(orig, prot).share_nearest)
    assert shares[0] == 1.0
    assert all(s1 > s2 for s1, s2 in zip(shares, shares[1:], strict=False))
    assert shares[-1] < 0.2


def test_outputs():
    res = linkage_risk(pd.DataFrame({"x": [0.0, 1.0, 3.0]}), pd.DataFrame({"x": [0.1, 0.6, 1.9]}))
    rec = res.records_frame()
    assert list(rec.columns) == [
        "record", "rank", "n_tied", "distance", "linked_nearest", "linked_second",
        "expected_correct",
    ]
    s = res.summary()
    assert s["share_nearest"] == pytest.approx(2 / 3) and s["n_records"] == 3


@pytest.mark.parametrize(
    ("orig", "prot", "kw", "match"),
    [
        (pd.DataFrame({"x": [1.0, 2.0]}), pd.DataFrame({"x": [1.0]}), {}, "same order"),
        (pd.DataFrame({"x": [1.0, 2.0]}), pd.DataFrame({"x": [1.0, 2.0]}), {"variables": ["y"]},
         "not in the original"),
        (pd.DataFrame({"x": ["a", "b"]}), pd.DataFrame({"x": ["a", "b"]}), {}, "not numeric"),
        (pd.DataFrame({"x": [1.0, np.nan]}), pd.DataFrame({"x": [1.0, 2.0]}), {}, "missing"),
    ],
)
def test_bad_input(orig, prot, kw, match):
    with pytest.raises(InputError, match=match):
        linkage_risk(orig, prot, **kw)


def test_reordered_protected_frame_is_refused():
    # same index labels in another order: positional pairing would compare different records
    rng = np.random.default_rng(8)
    orig = pd.DataFrame({"x": rng.normal(size=80), "y": rng.normal(size=80)})
    prot = orig + rng.normal(scale=0.05, size=orig.shape)
    shuffled = prot.sort_values("y")
    with pytest.raises(InputError, match=r"different order.*protected\.loc\[original\.index\]"):
        linkage_risk(orig, shuffled)
    aligned = linkage_risk(orig, prot)
    fixed = linkage_risk(orig, shuffled.loc[orig.index])
    np.testing.assert_array_equal(fixed.rank, aligned.rank)
    # indexes that differ as sets, or arrays, are paired by position as before
    relabelled = linkage_risk(orig, prot.set_axis(np.arange(80) + 1000))
    np.testing.assert_array_equal(relabelled.rank, aligned.rank)
    np.testing.assert_array_equal(linkage_risk(orig.to_numpy(), prot.to_numpy()).rank, aligned.rank)
