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


# ------------------------------------------------------------------------------------
# row order (rows are paired by position)
# ------------------------------------------------------------------------------------


def _pair(seed: int = 6, n: int = 60):
    rng = np.random.default_rng(seed)
    orig = pd.DataFrame({"x": rng.normal(size=n), "y": rng.normal(size=n),
                         "c": rng.choice(list("ab"), n)})
    prot = orig.copy()
    prot["x"] += rng.normal(scale=0.05, size=n)
    return orig, prot


def test_reordered_protected_frame_is_refused():
    orig, prot = _pair()
    shuffled = prot.sort_values("y")  # same labels, other order
    with pytest.raises(InputError, match=r"different order.*protected\.loc\[original\.index\]"):
        il1(orig, shuffled, ["x", "y"])
    with pytest.raises(InputError, match="different order"):
        categorical_loss(orig, shuffled, "c")
    # the suggested fix gives the aligned numbers
    assert il1(orig, shuffled.loc[orig.index], ["x", "y"]) == il1(orig, prot, ["x", "y"])


def test_positional_pairing_kept_for_identical_or_unrelated_indexes():
    orig, prot = _pair()
    expected = il1(orig, prot, ["x", "y"])
    # labels that differ as sets (an index reset on one side): paired by position
    relabelled = prot.set_axis(np.arange(100, 100 + len(prot)))
    assert il1(orig, relabelled, ["x", "y"]) == expected
    assert categorical_loss(orig, relabelled, "c")["share_changed"].item() == 0.0
    # a non-unique index cannot be told apart from a reordering: paired by position
    dup = orig.set_axis([0, 0] + list(range(2, len(orig))))
    assert il1(dup, prot.set_axis(dup.index[::-1]), ["x", "y"]) >= 0.0


# ------------------------------------------------------------------------------------
# mean_ci / proportion_ci / benchmark input checks
# ------------------------------------------------------------------------------------


def _weighted(seed: int = 7, n: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.normal(10, 2, n), "w": rng.uniform(1, 3, n),
                         "g": rng.choice(list("ab"), n)})


@pytest.mark.parametrize(
    "weights, match",
    [
        (lambda w: -w, "negative"),
        (lambda w: np.r_[w[:15], -w[15:]], "negative"),
        (lambda w: np.r_[w[:29], np.nan], "missing"),
        (lambda w: np.r_[w[:29], np.inf], "infinite"),
        (lambda w: np.zeros_like(w), "sum to 0"),
    ],
)
def test_mean_ci_refuses_bad_weights(weights, match):
    df = _weighted()
    bad = df.assign(w=weights(df["w"].to_numpy()))
    with pytest.raises(InputError, match=match):
        mean_ci("x", "w")(bad)
    with pytest.raises(InputError, match=match):
        proportion_ci("g", "a", weight="w")(bad)
    with pytest.raises(InputError, match=match):
        benchmark(df, bad, [mean_ci("x", "w")])


@pytest.mark.parametrize("level", [95, 0, 1, 1.0, -0.5, np.nan, True, "0.95"])
def test_level_outside_zero_one_is_refused_when_built(level):
    for build in (lambda: mean_ci("x", level=level),
                  lambda: proportion_ci("g", "a", level=level),
                  lambda: ols_ci("x", "w", level=level)):
        with pytest.raises(InputError, match="0.95, not 95"):
            build()


def test_mean_ci_needs_two_observed_records():
    df = _weighted()
    with pytest.raises(InputError, match="at least 2"):
        mean_ci("x")(df.head(1))
    with pytest.raises(InputError, match="at least 2"):
        mean_ci("x", "w")(df.assign(x=[1.0] + [np.nan] * (len(df) - 1)))


def test_unknown_columns_are_named_before_any_statistic_runs():
    df = _weighted()
    calls = []

    def counting(frame):
        calls.append(1)
        return mean_ci("x")(frame)

    for stat, name in [(mean_ci("nope"), "nope"), (mean_ci("x", "wt"), "wt"),
                       (proportion_ci("g", "a", weight="wt"), "wt"), (ols_ci("x", ["z"]), "z")]:
        with pytest.raises(InputError, match=f"'{name}'.*not in the original"):
            benchmark(df, df, [counting, stat])
        assert calls == []
        with pytest.raises(InputError, match=f"'{name}'.*not in the frame"):
            stat(df)
    with pytest.raises(InputError, match="not in the protected"):
        benchmark(df, df.drop(columns="w"), [counting, mean_ci("x", "w")])
    assert calls == []
    with pytest.raises(InputError, match="column name"):
        mean_ci(["x", "w"])
    with pytest.raises(InputError, match="not a callable"):
        benchmark(df, df, ["x"])
