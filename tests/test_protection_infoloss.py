"""Information loss (seed 001, section 5): direct measures and benchmarking indicators."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdcbayes.exceptions import InputError
from sdcbayes.protection import (
    benchmark,
    categorical_loss,
    ci_overlap,
    il1,
    local_suppression,
    mean_ci,
    ols_ci,
    proportion_ci,
)


def test_il1_by_hand_two_variables():
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [10.0, 10.0, 20.0, 20.0]})
    z = pd.DataFrame({"a": [1.5, 2.0, 3.0, 3.0], "b": [10.0, 12.0, 20.0, 20.0]})
    sa = np.sqrt(5 / 3)  # sd of 1..4 with ddof 1
    sb = np.sqrt(100 / 3)  # sd of 10, 10, 20, 20
    expected = ((0.5 + 1.0) / sa + 2.0 / sb) / (np.sqrt(2) * 8)
    assert il1(x, z, ["a", "b"]) == pytest.approx(expected, rel=1e-14)
    assert il1(x, x, ["a", "b"]) == 0.0
    with pytest.raises(InputError, match="rows"):
        il1(x, z.iloc[:3], "a")


def test_categorical_loss_by_hand():
    x = pd.DataFrame({"s": list("mmffm"), "r": ["A", "B", "A", None, "C"]})
    z = pd.DataFrame({"s": ["m", None, "f", "m", "m"], "r": ["A", "A", None, None, "C"]})
    out = categorical_loss(x, z, ["s", "r"])
    assert out.loc["s", ["n_changed", "n_suppressed"]].tolist() == [1, 1]
    assert out.loc["r", ["n_changed", "n_suppressed"]].tolist() == [1, 1]
    assert out.loc["s", "share_lost"] == pytest.approx(0.4)


def test_suppression_share_matches_the_log():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"k{j}": rng.integers(0, c, 300) for j, c in enumerate([4, 3, 6])})
    res = local_suppression(df, list(df.columns), k=3)
    loss = categorical_loss(df, res.frame, list(df.columns))
    assert loss["n_suppressed"].to_dict() == res.summary["suppressions"]
    assert (loss["n_changed"] == 0).all()


def test_ci_overlap_cases():
    assert ci_overlap(0, 1, 0, 1) == 1.0
    assert ci_overlap(0, 1, 2, 3) == 0.0
    # [0, 2] and [1, 2]: o = 1, J = (1/2 + 1/1)/2.
    assert ci_overlap(0, 2, 1, 2) == pytest.approx(0.75)
    # Nested [0, 4] and [1, 2]: o = 1, J = (1/4 + 1)/2.
    assert ci_overlap(0, 4, 1, 2) == pytest.approx(0.625)
    np.testing.assert_allclose(ci_overlap([0, 0], [1, 1], [0, 2], [1, 3]), [1.0, 0.0])


def test_mean_and_proportion_intervals_by_formula():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"y": rng.normal(5, 2, 200), "w": rng.uniform(1, 3, 200),
                       "g": rng.choice(["a", "b"], 200)})
    res = mean_ci("y")(df)
    m, s, n = df["y"].mean(), df["y"].std(ddof=1), len(df)
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(res.iloc[0].to_numpy(), [m, m - z * s / np.sqrt(n),
                                                         m + z * s / np.sqrt(n)], rtol=1e-12)
    wres = mean_ci("y", weight="w")(df)
    mw = np.average(df["y"], weights=df["w"])
    sew = np.sqrt(n / (n - 1) * np.sum(df["w"] ** 2 * (df["y"] - mw) ** 2)) / df["w"].sum()
    np.testing.assert_allclose(wres.iloc[0].to_numpy(), [mw, mw - z * sew, mw + z * sew])
    pres = proportion_ci("g", "a")(df)
    p = (df["g"] == "a").mean()
    se = np.sqrt(p * (1 - p) / (n - 1))  # s/sqrt(n) of a 0/1 variable
    np.testing.assert_allclose(pres.iloc[0].to_numpy(), [p, p - z * se, p + z * se], rtol=1e-12)


def test_ols_matches_scipy_linregress():
    rng = np.random.default_rng(4)
    x = rng.normal(size=100)
    df = pd.DataFrame({"x": x, "y": 1.5 + 2.0 * x + rng.normal(size=100)})
    res = ols_ci("y", ["x"])(df)
    lr = stats.linregress(df["x"], df["y"])
    t = stats.t.ppf(0.975, 98)
    slope = res.loc["y~x"]
    np.testing.assert_allclose(
        slope.to_numpy(), [lr.slope, lr.slope - t * lr.stderr, lr.slope + t * lr.stderr],
        rtol=1e-10)
    assert res.loc["y~(Intercept)", "estimate"] == pytest.approx(lr.intercept, rel=1e-10)


def test_benchmark_table():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": rng.normal(size=500), "g": rng.choice(list("ab"), 500)})
    df["y"] = 1 + df["x"] + rng.normal(size=500)
    same = benchmark(df, df.copy(), {"mean": mean_ci("y"), "ols": ols_ci("y", "x")})
    assert (same["ci_overlap"] == 1.0).all() and (same["relative_difference"] == 0).all()
    assert same["parameter"].tolist() == ["mean(y)", "y~(Intercept)", "y~x"]
    shifted = df.copy()
    shifted["y"] += 10
    out = benchmark(df, shifted, [mean_ci("y")])
    assert out.loc[0, "ci_overlap"] == 0.0
    assert out.loc[0, "relative_difference"] == pytest.approx(10 / abs(df["y"].mean()))
