"""Numeric variables' risk and loss as sdcMicro reports them after noise or micro-aggregation.

* :func:`sdcbayes.risk.linkage.interval_risk`: sdcMicro's ``dRisk`` (R/dRisk.R, method
  SDID of Mateo-Sanz, Sebe & Domingo-Ferrer 2004), checked against a per-record loop
  written from the definition and a hand-worked example;
* :func:`sdcbayes.protection.infoloss.eigen_difference`: sdcMicro's ``dUtility(method =
  "eigen")`` (R/dUtility.R), checked against a direct NumPy computation (complete data)
  and a pairwise loop (missing values, R's ``pairwise.complete.obs``);
* tie-fair record linkage after micro-aggregation: a hand-worked example (equidistant
  members, a non-member nearest) and an O(n²) brute force on integer data with real ties;
  records sharing one protected value share at most one correct link.
"""

from __future__ import annotations

import math
import statistics
import warnings

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.protection.infoloss import eigen_difference
from sdcbayes.risk.linkage import interval_risk, linkage_risk


def brute_interval_risk(x: np.ndarray, z: np.ndarray, k: float) -> np.ndarray:
    """Per record, from the definition: every original value within k sd of the protected one.

    sd: the protected column's sample standard deviation over its observed values (R's
    ``sd(na.rm = TRUE)``, NA below two values); a comparison involving a missing value
    (or a missing sd) counts as inside, as ``rowSums(..., na.rm = TRUE) == 0`` does.
    """
    n, p = x.shape
    sds = []
    for j in range(p):
        obs = [float(v) for v in z[:, j] if not math.isnan(v)]
        sds.append(statistics.stdev(obs) if len(obs) > 1 else math.nan)
    out = []
    for i in range(n):
        inside = True
        for j in range(p):
            xi, zi, s = x[i, j], z[i, j], sds[j]
            if math.isnan(xi) or math.isnan(zi) or math.isnan(s):
                continue
            if xi < zi - k * s or xi > zi + k * s:
                inside = False
        out.append(inside)
    return np.array(out)


@pytest.mark.parametrize("k", [0.01, 0.05, 0.3])
def test_interval_risk_equals_a_per_record_loop(k):
    rng = np.random.default_rng(11)
    n = 150
    x = pd.DataFrame({"a": rng.normal(size=n), "b": rng.gamma(2.0, 3.0, n),
                      "c": rng.integers(0, 5, n).astype(float)})
    z = x + rng.normal(scale=[0.05, 1.0, 0.0], size=x.shape)
    x.loc[[3, 7], "a"] = np.nan  # missing in the original
    z.loc[[7, 12], "b"] = np.nan  # missing in the protected file
    res = interval_risk(x, z, k=k)
    want = brute_interval_risk(x.to_numpy(), z.to_numpy(), k)
    np.testing.assert_array_equal(res.at_risk, want)
    assert res.n_at_risk == int(want.sum())
    assert res.share == want.mean()
    assert 0 < res.n_at_risk < n  # the example is not degenerate
    assert res.k == k and res.settings["k"] == k and res.variables == ["a", "b", "c"]


def test_interval_risk_hand_worked_example():
    # protected sd: [0, 1, 2] -> 1 exactly, [10, 20, 30] -> 10; k = 0.5: half-widths 0.5, 5
    z = pd.DataFrame({"u": [0.0, 1.0, 2.0], "v": [10.0, 20.0, 30.0]})
    x = pd.DataFrame({"u": [0.5, 1.6, 2.0], "v": [15.0, 20.0, 36.0]})
    # record 0: |0.5 - 0| = 0.5 and |15 - 10| = 5, both on the closed boundary: at risk;
    # record 1: u is 0.6 away: not; record 2: v is 6 away: not
    res = interval_risk(x, z, ["u", "v"], k=0.5)
    assert res.at_risk.tolist() == [True, False, False]
    assert res.share == pytest.approx(1 / 3) and res.n_at_risk == 1
    np.testing.assert_allclose(res.sd, [1.0, 10.0])
    # one variable only: record 1 is still out, record 2 now in
    assert interval_risk(x, z, "v", k=0.5).at_risk.tolist() == [True, True, False]
    # a missing value counts as inside (sdcMicro's na.rm = TRUE): record 2 judged on u only
    x_na = x.assign(v=[15.0, 20.0, np.nan])
    assert interval_risk(x_na, z, k=0.5).at_risk.tolist() == [True, False, True]


def test_interval_risk_of_a_file_against_itself_is_one():
    rng = np.random.default_rng(2)
    x = pd.DataFrame(rng.normal(size=(40, 2)), columns=["a", "b"])
    x.iloc[5, 0] = np.nan
    x["c"] = 3.0  # constant: sd 0, the interval is the value itself
    res = interval_risk(x, x)
    assert res.share == 1.0 and res.n_at_risk == 40
    assert res.summary()["share"] == 1.0 and res.summary()["settings"]["k"] == 0.05


@pytest.mark.parametrize("k", [0, 0.0, -0.1, float("nan"), float("inf"), True, "0.05", None])
def test_interval_risk_refuses_a_bad_k(k):
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    with pytest.raises(InputError, match="positive finite number"):
        interval_risk(x, x, k=k)


def test_interval_risk_input_errors_name_the_fix():
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0], "s": ["x", "y", "z"]})
    with pytest.raises(InputError, match="not numeric"):
        interval_risk(x, x, ["a", "s"])
    with pytest.raises(InputError, match="not in the original"):
        interval_risk(x, x, ["zz"])
    with pytest.raises(InputError, match="same order"):
        interval_risk(x[["a"]], x[["a"]].iloc[:2])
    with pytest.raises(InputError, match="infinite"):
        interval_risk(x[["a"]], x[["a"]].replace(3.0, np.inf))
    with pytest.raises(InputError):  # same labels, other order
        interval_risk(x[["a"]], x[["a"]].iloc[::-1])


def direct_eigen_difference(x: np.ndarray, z: np.ndarray) -> float:
    """Σ |e1 − e2| / e1 over the correlation matrices' eigenvalues (complete data)."""
    e1 = np.sort(np.linalg.eigvals(np.corrcoef(x, rowvar=False)).real)[::-1]
    e2 = np.sort(np.linalg.eigvals(np.corrcoef(z, rowvar=False)).real)[::-1]
    return float(np.sum(np.abs(e1 - e2) / e1))


def pairwise_scaled_cov(m: np.ndarray) -> np.ndarray:
    """R's var(scale(m), use = "pairwise.complete.obs"), written as loops."""
    n, p = m.shape
    s = np.empty_like(m)
    for j in range(p):
        obs = [v for v in m[:, j] if not math.isnan(v)]
        mu, sd = statistics.fmean(obs), statistics.stdev(obs)
        s[:, j] = (m[:, j] - mu) / sd
    out = np.empty((p, p))
    for a in range(p):
        for b in range(p):
            rows = [i for i in range(n) if not (math.isnan(s[i, a]) or math.isnan(s[i, b]))]
            va, vb = s[rows, a], s[rows, b]
            out[a, b] = np.sum((va - va.mean()) * (vb - vb.mean())) / (len(rows) - 1)
    return out


def test_eigen_difference_equals_a_direct_computation():
    rng = np.random.default_rng(5)
    n = 60
    a = rng.normal(size=n)
    x = pd.DataFrame({"a": a, "b": a + rng.normal(size=n), "c": rng.gamma(2.0, 1.0, n)})
    z = x + rng.normal(scale=0.4, size=x.shape)
    got = eigen_difference(x, z, ["a", "b", "c"])
    assert got == pytest.approx(direct_eigen_difference(x.to_numpy(), z.to_numpy()), rel=1e-10)
    assert got > 0.01
    assert eigen_difference(x, x, ["a", "b", "c"]) == 0.0
    # one variable: both matrices are [1] (up to rounding of the standardization)
    assert eigen_difference(x, z, "a") == pytest.approx(0.0, abs=1e-12)


def test_eigen_difference_with_missing_values_is_pairwise_complete():
    rng = np.random.default_rng(6)
    n = 50
    x = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    x["b"] += x["a"]
    z = x + rng.normal(scale=0.3, size=x.shape)
    x.loc[[1, 2, 3], "a"] = np.nan
    z.loc[[2, 9], "c"] = np.nan
    e1 = np.sort(np.linalg.eigvalsh(pairwise_scaled_cov(x.to_numpy())))[::-1]
    e2 = np.sort(np.linalg.eigvalsh(pairwise_scaled_cov(z.to_numpy())))[::-1]
    want = float(np.sum(np.abs(e1 - e2) / e1))
    assert eigen_difference(x, z, ["a", "b", "c"]) == pytest.approx(want, rel=1e-10)


def test_eigen_difference_undefined_cases():
    x = pd.DataFrame({"a": [1.0, 2.0, 4.0, 7.0], "b": [3.0, 1.0, 2.0, 5.0]})
    # a protected variable made constant: its standardized values are undefined (R: NA)
    assert math.isnan(eigen_difference(x, x.assign(b=2.0), ["a", "b"]))
    # a variable given twice: singular original correlation matrix, the ratio undefined
    dup = x.assign(c=x["a"])
    assert math.isnan(eigen_difference(dup, dup + 0.1 * np.arange(4)[:, None], ["a", "b", "c"]))
    with pytest.raises(InputError, match="constant in the original"):
        eigen_difference(x.assign(b=1.0), x, ["a", "b"])
    with pytest.raises(InputError, match="not numeric"):
        eigen_difference(x.assign(s=list("wxyz")), x.assign(s=list("wxyz")), ["a", "s"])


def brute_linkage(x: np.ndarray, z: np.ndarray, rtol: float = 1e-9):
    """Rank, ties and tie-fair correct link of each protected record, from the definition.

    O(n²) distances from protected record i to every original j; rank = 1 + the number
    of originals strictly closer than i's own (capped at 3); for rank 1 the ties are the
    originals within the own distance, each the intruder's pick with probability 1/t.
    Distances equal to within a relative ``rtol`` are ties (the module's documented rule).
    """
    d = np.sqrt(((z[:, None, :] - x[None, :, :]) ** 2).sum(axis=2))
    own = np.diag(d)
    closer = (d < own[:, None] * (1 - rtol)).sum(axis=1)
    rank = np.minimum(1 + closer, 3)
    tied = (d <= own[:, None] * (1 + rtol)).sum(axis=1)
    n_tied = np.where(rank == 1, tied, 0)
    expected = np.where(rank == 1, 1.0 / np.maximum(tied, 1), 0.0)
    return rank, n_tied, expected


def test_tie_fair_linkage_hand_worked_groups():
    # micro-aggregated by hand, groups replaced by their means (one variable, raw units):
    # A {1, 3} -> 2: the originals 1 and 3 are equidistant, each member gets 1/2;
    # B {4, 5, 6} -> 5: the member 5 is the nearest (distance 0), 4 and 6 rank 2;
    # C {0, 10, 14} -> 8: the non-member original 8 (of D) is nearest, every member 0;
    # D {8, 30, 31} -> 23: 30 is nearest (7; 31 at 8, 14 at 9), the others 0.
    groups = [[1, 3], [4, 5, 6], [0, 10, 14], [8, 30, 31]]
    x = np.array([v for g in groups for v in g], dtype=float)
    z = np.array([np.mean(g) for g in groups for _ in g])
    res = linkage_risk(x[:, None], z[:, None], standardize=False, workers=1)
    want = [0.5, 0.5, 0, 1, 0, 0, 0, 0, 0, 1, 0]
    np.testing.assert_allclose(res.expected_correct, want, rtol=0, atol=1e-15)
    assert res.rank.tolist() == [1, 1, 2, 1, 2, 3, 2, 3, 3, 1, 2]
    assert res.n_tied.tolist() == [2, 2, 0, 1, 0, 0, 0, 0, 0, 1, 0]
    assert res.summary()["expected_correct_share"] == pytest.approx(3 / 11, rel=1e-15)
    rank, n_tied, expected = brute_linkage(x[:, None], z[:, None])
    np.testing.assert_array_equal(res.rank, rank)
    np.testing.assert_array_equal(res.n_tied, n_tied)


def test_tie_fair_linkage_after_microaggregation_equals_brute_force():
    # integer-coded data (many equal originals) micro-aggregated in sorted blocks of k:
    # group means often land at equal distance from several originals (real ties)
    rng = np.random.default_rng(8)
    n, k = 120, 3
    x = pd.DataFrame({"v": rng.integers(0, 5, n), "w": rng.integers(0, 4, n)}).astype(float)
    order = np.lexsort((x["w"].to_numpy(), x["v"].to_numpy()))
    group = np.empty(n, dtype=int)
    group[order] = np.arange(n) // k
    z = x.groupby(group).transform("mean")
    res = linkage_risk(x, z, ["v", "w"], standardize=False, workers=1)
    rank, n_tied, expected = brute_linkage(x.to_numpy(), z.to_numpy())
    np.testing.assert_array_equal(res.rank, rank)
    np.testing.assert_array_equal(res.n_tied, n_tied)
    np.testing.assert_allclose(res.expected_correct, expected, rtol=1e-12, atol=0)
    # the example exercises what it names: ties split a link (0 < p < 1), and some
    # group's shared value is nearest to a non-member's original (all its members 0)
    assert ((expected > 0) & (expected < 1)).any()
    d = np.sqrt(((z.to_numpy()[:, None, :] - x.to_numpy()[None, :, :]) ** 2).sum(axis=2))
    nearest_outside = [
        g for g in range(n // k)
        if d[np.flatnonzero(group == g)[0]].min()
        < d[np.flatnonzero(group == g)[0], group == g].min() * (1 - 1e-9)
    ]
    assert nearest_outside
    for g in nearest_outside:
        assert (res.expected_correct[group == g] == 0).all()
    # one shared value, at most one correct link: per group sum <= 1, mean <= 1/k
    per_group = np.bincount(group, weights=res.expected_correct)
    assert (per_group <= 1 + 1e-12).all()
    assert res.expected_correct.mean() <= 1 / k + 1e-12


def test_interval_risk_protected_column_with_one_observed_value_counts_as_inside():
    # protected b has one observed value: no sd (R's sd gives NA), so every comparison
    # on b counts as inside, even where the original is far from it (record 2: 100 vs 5)
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [0.0, 50.0, 100.0, 7.0]})
    z = pd.DataFrame({"a": [1.0, 2.0, 3.0, 9.0], "b": [np.nan, np.nan, 5.0, np.nan]})
    res = interval_risk(x, z, k=0.05)
    assert math.isnan(res.sd[1])
    assert res.at_risk.tolist() == [True, True, True, False]  # judged on a alone
    np.testing.assert_array_equal(res.at_risk, brute_interval_risk(x.to_numpy(),
                                                                    z.to_numpy(), 0.05))
    assert res.summary()["settings"]["sd"][1] is None  # JSON-safe


def test_interval_risk_constant_protected_column_against_a_different_original():
    # sd 0: the interval is the protected value itself, inside only where equal
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "c": [3.0, 2.9, 3.0, 4.0]})
    z = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "c": [3.0, 3.0, 3.0, 3.0]})
    res = interval_risk(x, z, k=0.5)
    assert res.sd[1] == 0.0
    assert res.at_risk.tolist() == [True, False, True, False]


def test_interval_risk_nullable_integers_and_arrays():
    x = pd.DataFrame({"a": pd.array([1, 2, None, 4, 5, 6], dtype="Int64"),
                      "b": pd.array([10, 20, 30, 40, None, 60], dtype="Int64")})
    z = pd.DataFrame({"a": pd.array([1, 3, 3, None, 5, 9], dtype="Int64"),
                      "b": pd.array([11, 20, 30, 41, 50, 60], dtype="Int64")})
    xf = x.to_numpy(dtype=float, na_value=np.nan)
    zf = z.to_numpy(dtype=float, na_value=np.nan)
    for k in (0.05, 0.5):
        want = brute_interval_risk(xf, zf, k)
        res = interval_risk(x, z, k=k)
        np.testing.assert_array_equal(res.at_risk, want)
        np.testing.assert_array_equal(interval_risk(xf, zf, k=k).at_risk, want)  # arrays
    assert 0 < interval_risk(x, z, k=0.05).n_at_risk < 6


def test_interval_risk_message_names_the_measure_once():
    x = pd.DataFrame({"a": [1.0, 2.0, np.inf]})
    with pytest.raises(InputError, match="infinite") as err:
        interval_risk(x, x)
    assert "risk risk" not in str(err.value)


@pytest.mark.parametrize("measure", [interval_risk, linkage_risk])
def test_repeated_or_complex_variables_are_refused(measure):
    x = pd.DataFrame({"a": [1.0, 2.0, 4.0], "b": [3.0, 1.0, 2.0]})
    # a variable named twice would count twice (double weight in the distance)
    with pytest.raises(InputError, match="repeat 'b'"):
        measure(x, x, ["a", "b", "b"])
    with pytest.raises(InputError, match="repeat 'x'"):
        measure(x.to_numpy(), x.to_numpy(), ["x", "x"])
    both = pd.concat([x, x[["a"]]], axis=1)  # the frame itself has two columns "a"
    with pytest.raises(InputError, match="repeat 'a'"):
        measure(both, both, ["a", "b"])
    # complex values are refused, not cut to their real part
    c = x.assign(b=x["b"] + 1j)
    with pytest.raises(InputError, match="complex"):
        measure(c, c, ["a", "b"])
    with pytest.raises(InputError, match="complex"):
        measure(c.to_numpy(), c.to_numpy())


def test_infoloss_refuses_complex_and_names_infinite_and_sparse_columns():
    from sdcbayes.protection.infoloss import il1

    x = pd.DataFrame({"a": [1.0, 2.0, 4.0, 7.0], "b": [3.0, 1.0, 2.0, 5.0]})
    c = x.assign(b=x["b"] + 1j)
    for fn in (il1, eigen_difference):
        with pytest.raises(InputError, match="complex"):
            fn(c, c, ["a", "b"])
        with pytest.raises(InputError, match="repeats"):
            fn(x, x, ["a", "a"])
        with pytest.raises(InputError, match="infinite values"):
            fn(x.assign(b=[3.0, np.inf, 2.0, 5.0]), x, ["a", "b"])
    with pytest.raises(InputError, match="fewer than two observed values"):
        il1(x.assign(b=[np.nan, np.nan, 2.0, np.nan]), x, ["a", "b"])


def test_eigen_difference_original_with_one_observed_value_is_nan_without_warnings():
    # R: scale() of a variable with one value gives NaN, eigen() fails, dUtility gives NA
    x = pd.DataFrame({"a": [1.0, 2.0, 4.0, 7.0], "b": [np.nan, 3.0, np.nan, np.nan]})
    z = pd.DataFrame({"a": [1.5, 2.0, 4.0, 6.0], "b": [1.0, 3.0, 2.0, 5.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(eigen_difference(x, z, ["a", "b"]))
        assert math.isnan(eigen_difference(x.iloc[:1], z.iloc[:1], ["a"]))  # one record


def test_eigen_difference_indefinite_pairwise_matrix_is_nan():
    # pairwise-complete covariances need not form a positive semi-definite matrix: here
    # the original's has a clearly negative eigenvalue (sdcMicro returns a finite number;
    # a relative difference to a negative eigenvalue means nothing: NaN, as documented)
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [2.0, 1.0, 4.0, 3.0],
                      "c": [1.0, np.nan, 3.0, 5.0]})
    e = np.linalg.eigvalsh(pairwise_scaled_cov(x.to_numpy()))
    assert e.min() < -0.1
    assert math.isnan(eigen_difference(x, x + 0.01 * np.arange(4)[:, None], ["a", "b", "c"]))
