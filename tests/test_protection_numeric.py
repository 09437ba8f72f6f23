"""Micro-aggregation (MDAV) and noise addition (seed 001, sections 4.2.1-4.2.2).

Seed 001's Table 4 (a micro-aggregation example) is not part of the seed text
available here (the transcription stops in section 3.6), so it cannot be
reproduced; MDAV is checked on hand-made data and against its definition.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.protection import add_noise, il1, mdav, mdav_groups


def test_mdav_hand_example():
    # Two well separated clusters of three: MDAV with k = 3 finds them.
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0]})
    res = mdav(df, "x", k=3)
    assert res.frame["x"].tolist() == [2.0, 2.0, 2.0, 11.0, 11.0, 11.0]
    assert sorted(res.log["size"]) == [3, 3]


@pytest.mark.parametrize("seed,k,n", [(0, 3, 100), (1, 5, 97), (2, 2, 31), (3, 4, 400)])
def test_mdav_groups_sizes_and_means(seed, k, n):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {"a": rng.lognormal(size=n), "b": rng.normal(50, 10, n), "c": rng.integers(0, 9, n)}
    )
    before = df.copy(deep=True)
    res = mdav(df, ["a", "b", "c"], k=k)
    pd.testing.assert_frame_equal(df, before)
    g = res.summary["group_of_record"]
    sizes = np.bincount(g)
    assert sizes.sum() == n and sizes.min() >= k and sizes.max() <= 2 * k - 1
    # Means preserved exactly; every record carries its group's mean.
    np.testing.assert_allclose(res.frame[["a", "b", "c"]].mean(), df[["a", "b", "c"]].mean(),
                               rtol=1e-12)
    for col in ("a", "b", "c"):
        grp_mean = df[col].groupby(g).transform("mean")
        np.testing.assert_allclose(res.frame[col], grp_mean, rtol=1e-12)
    assert res.log["size"].tolist() == sizes.tolist()
    assert all(len(r) == s for r, s in zip(res.log["records"], res.log["size"]))


def test_mdav_first_group_follows_the_definition():
    # First group: the record farthest from the centroid plus its k − 1 nearest records.
    rng = np.random.default_rng(8)
    x = rng.normal(size=(40, 2))
    k = 4
    g = mdav_groups(x, k)
    r = np.argmax(((x - x.mean(axis=0)) ** 2).sum(axis=1))
    nearest = np.argsort(((x - x[r]) ** 2).sum(axis=1))[:k]
    assert set(np.flatnonzero(g == 0)) == set(nearest)
    # Second group: farthest remaining record from x_r plus its k − 1 nearest remaining.
    rest = np.setdiff1d(np.arange(40), nearest)
    s = rest[np.argmax(((x[rest] - x[r]) ** 2).sum(axis=1))]
    near_s = rest[np.argsort(((x[rest] - x[s]) ** 2).sum(axis=1))[:k]]
    assert set(np.flatnonzero(g == 1)) == set(near_s)


def test_mdav_input_errors():
    df = pd.DataFrame({"a": [1.0, np.nan, 3.0], "s": list("xyz")})
    with pytest.raises(InputError, match="missing"):
        mdav(df, "a", k=2)
    with pytest.raises(InputError, match="not numeric; micro-aggregation needs") as err:
        mdav(df, "s", k=2)
    assert "sdcbayes.protection" not in str(err.value)  # no Python name in a CLI line
    with pytest.raises(InputError, match="records for groups"):
        mdav(pd.DataFrame({"a": [1.0, 2.0]}), "a", k=3)


def test_il1_by_hand_on_mdav_example():
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0]})
    prot = mdav(df, "x", k=3).frame
    # |x − z| = 1, 0, 1, 1, 0, 1; S = sd(x) = sqrt(125.5 / 5); IL1 = 4 / (6 √2 S).
    s = np.sqrt(125.5 / 5)
    assert il1(df, prot, "x") == pytest.approx(4 / (6 * np.sqrt(2) * s), rel=1e-14)
    assert il1(df, prot, "x", average=False) == pytest.approx(4 / (np.sqrt(2) * s), rel=1e-14)


def _correlated_data(n, seed):
    rng = np.random.default_rng(seed)
    cov = np.array([[4.0, 1.2, -0.6], [1.2, 1.0, 0.3], [-0.6, 0.3, 2.0]])
    x = rng.multivariate_normal([10.0, 0.0, -5.0], cov, size=n)
    return pd.DataFrame(x, columns=["a", "b", "c"])


def test_additive_noise_level_and_means():
    df = _correlated_data(20_000, 1)
    before = df.copy(deep=True)
    res = add_noise(df, ["a", "b", "c"], level=0.5, method="additive", seed=2)
    pd.testing.assert_frame_equal(df, before)
    eps = (res.frame - df).to_numpy()
    sd = df.std(ddof=1).to_numpy()
    n = len(df)
    # Noise sd = α σ_j (relative SE of an sd estimate ~ 1/sqrt(2n) = 0.5 %).
    np.testing.assert_allclose(eps.std(axis=0, ddof=1), 0.5 * sd, rtol=0.03)
    assert (np.abs(eps.mean(axis=0)) <= 4 * 0.5 * sd / np.sqrt(n)).all()
    # Independent noise: correlations between the noise terms vanish.
    c = np.corrcoef(eps, rowvar=False)
    assert np.abs(c[np.triu_indices(3, 1)]).max() < 4 / np.sqrt(n)
    np.testing.assert_allclose(res.log["noise_sd"], 0.5 * sd)


def test_correlated_noise_preserves_correlations():
    df = _correlated_data(20_000, 3)
    alpha = 0.5
    res = add_noise(df, ["a", "b", "c"], level=alpha, method="correlated", seed=4)
    r0 = np.corrcoef(df.to_numpy(), rowvar=False)
    r1 = np.corrcoef(res.frame.to_numpy(), rowvar=False)
    # SE of a correlation ~ (1 − r²)/sqrt(n) <= 0.007; noise adds a little more.
    np.testing.assert_allclose(r1, r0, atol=0.03)
    cov0 = np.cov(df.to_numpy(), rowvar=False)
    cov1 = np.cov(res.frame.to_numpy(), rowvar=False)
    np.testing.assert_allclose(np.diag(cov1), (1 + alpha) * np.diag(cov0), rtol=0.05)
    # Same seed, same output; different seed, different output.
    again = add_noise(df, ["a", "b", "c"], level=alpha, method="correlated", seed=4)
    pd.testing.assert_frame_equal(res.frame, again.frame)
    other = add_noise(df, ["a", "b", "c"], level=alpha, method="correlated", seed=5)
    assert not np.allclose(res.frame.to_numpy(), other.frame.to_numpy())


def test_noise_input_errors():
    df = _correlated_data(10, 0)
    with pytest.raises(InputError, match="method"):
        add_noise(df, "a", method="multiplicative")
    with pytest.raises(InputError, match="level"):
        add_noise(df, "a", level=-1)
    # the step named is noise addition, not micro-aggregation (whose check it shares)
    with pytest.raises(InputError, match="not numeric; noise addition needs") as err:
        add_noise(df.assign(s="x"), "s")
    assert "micro-aggregation" not in str(err.value)
    bad = df.copy()
    bad.loc[3, "a"] = np.nan
    with pytest.raises(InputError, match="drop them before noise addition"):
        add_noise(bad, "a")


# --------------------------------------------------------------------------- audit G, 3 and 11


def _mdav_groups_reference(x, k):
    """MDAV as the module docstring states it, with plain boolean-mask compaction."""
    n = x.shape[0]
    group, rows, g = np.full(n, -1), np.arange(n), 0
    while rows.size >= 2 * k:
        xs = x[rows]
        r = int(np.argmax(((xs - xs.mean(axis=0)) ** 2).sum(axis=1)))
        centres = [r]
        if rows.size >= 3 * k:
            centres.append(None)  # x_s, chosen after the first group is removed
        r_point = xs[r].copy()
        for c in centres:
            xs = x[rows]
            if c is None:
                c = int(np.argmax(((xs - r_point) ** 2).sum(axis=1)))
            d = ((xs - xs[c]) ** 2).sum(axis=1)
            d[c] = -1.0
            near = np.argsort(d, kind="stable")[:k]
            group[rows[near]] = g
            g += 1
            rows = np.delete(rows, near)
    group[rows] = g
    return group


@pytest.mark.parametrize("seed", range(6))
def test_mdav_groups_match_the_reference_partition(seed):
    # No ties (continuous data): the block-wise compaction gives the textbook partition.
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(10, 200)), int(rng.integers(2, 6))
    x = rng.normal(size=(n, 3))
    np.testing.assert_array_equal(mdav_groups(x, k), _mdav_groups_reference(x, k))


def test_mdav_and_noise_refuse_boolean_parameters_and_columns():
    df = _correlated_data(20, 0).assign(flag=lambda d: d["a"] > 0)
    with pytest.raises(InputError, match="k=True must be an integer"):
        mdav(df, "a", k=True)
    with pytest.raises(InputError, match="k=True must be an integer"):
        mdav_groups(df[["a"]].to_numpy(), True)
    for level in (True, "0.1", np.nan):
        with pytest.raises(InputError, match="level=.* must be a non-negative number"):
            add_noise(df, "a", level=level)
    with pytest.raises(InputError, match=r"\['flag'\] are boolean.*micro-aggregation"):
        mdav(df, ["a", "flag"])
    with pytest.raises(InputError, match=r"\['flag'\] are boolean.*noise addition"):
        add_noise(df, "flag")
    with pytest.raises(InputError, match="boolean"):
        add_noise(df.astype({"flag": "boolean"}), "flag")


def test_mdav_on_an_empty_frame_refuses_without_warnings():
    import warnings

    empty = pd.DataFrame({"x": np.array([], dtype=float)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "Mean of empty slice" before the InputError
        with pytest.raises(InputError, match="only 0 records"):
            mdav(empty, "x")
