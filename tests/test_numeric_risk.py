"""Numeric variables' risk and loss as sdcMicro reports them after noise or micro-aggregation.

* :func:`sdcbayes.risk.linkage.interval_risk`: sdcMicro's ``dRisk`` (R/dRisk.R, method
  SDID of Mateo-Sanz, Sebe & Domingo-Ferrer 2004), checked against a per-record loop
  written from the definition and a hand-worked example;
* :func:`sdcbayes.protection.infoloss.eigen_difference`: sdcMicro's ``dUtility(method =
  "eigen")`` (R/dUtility.R), checked against a direct NumPy computation (complete data)
  and a pairwise loop (missing values, R's ``pairwise.complete.obs``);
* tie-fair record linkage after micro-aggregation: records sharing one protected value
  share at most one correct link.
"""

from __future__ import annotations

import math
import statistics

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


def test_tie_fair_linkage_after_microaggregation_is_at_most_one_over_k():
    # univariate sort-and-block micro-aggregation by hand: groups of k = 3 share their mean
    rng = np.random.default_rng(8)
    n, k = 90, 3
    x = pd.DataFrame({"v": rng.normal(size=n), "w": rng.normal(size=n)})
    order = np.argsort(x["v"].to_numpy())
    group = np.empty(n, dtype=int)
    group[order] = np.arange(n) // k
    z = x.groupby(group).transform("mean")
    res = linkage_risk(x, z, ["v", "w"], workers=1)
    per_group = pd.Series(res.expected_correct).groupby(group).sum()
    # at most the original nearest to the shared value is linked right: one link per group
    assert (per_group <= 1 + 1e-12).all()
    assert res.expected_correct.mean() <= 1 / k + 1e-12
    assert res.expected_correct.mean() > 0  # some are linked
