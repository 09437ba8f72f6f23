"""Local suppression to k-anonymity (seed 001, sections 3.2 and 4.1.2).

k-anonymity is checked against an independent brute-force O(n^2) loop over
pairs of records with wildcard semantics (a missing value matches every
level), and cross-checked with sdcbayes.Microdata(missing="wildcard").
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.protection import default_importance, local_suppression, wildcard_frequencies


def brute_force_fk(frame: pd.DataFrame, keys, strata=None) -> np.ndarray:
    """f_i = #{j : records i and j agree on every key observed in both}, by a double loop."""
    rows = frame[list(keys)].astype(object).to_numpy()
    miss = frame[list(keys)].isna().to_numpy()
    st = None if strata is None else frame[strata].astype(str).to_numpy()
    n = len(frame)
    out = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for j in range(n):
            if st is not None and st[i] != st[j]:
                continue
            match = True
            for c in range(rows.shape[1]):
                if miss[i, c] or miss[j, c]:
                    continue
                if rows[i, c] != rows[j, c]:
                    match = False
                    break
            out[i] += match
    return out


def random_frame(seed: int, n: int = 60, cards=(3, 2, 4, 5), p_missing: float = 0.0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"k{j}": rng.integers(0, c, n) for j, c in enumerate(cards)})
    df["k1"] = np.where(df["k1"] == 0, "a", "b")  # a string key too
    df["k2"] = pd.Categorical.from_codes(df["k2"].to_numpy(), categories=list("wxyz"))
    if p_missing:
        for c in df.columns:
            df[c] = df[c].mask(rng.random(n) < p_missing)
    df["other"] = rng.normal(size=n)
    df["stratum"] = rng.integers(0, 2, n)
    return df


KEYS = ["k0", "k1", "k2", "k3"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wildcard_frequencies_match_brute_force(seed):
    df = random_frame(seed, n=50, p_missing=0.15)
    np.testing.assert_array_equal(wildcard_frequencies(df, KEYS), brute_force_fk(df, KEYS))
    np.testing.assert_array_equal(
        wildcard_frequencies(df, KEYS, strata="stratum"), brute_force_fk(df, KEYS, "stratum")
    )


def many_pattern_frame(seed: int, n: int, n_keys: int, huge_levels: bool = False):
    """Keys with few observed values and many missingness patterns, two strata.

    ``huge_levels``: categorical keys with 400 (mostly unused) categories, so the
    packed key range exceeds int64 and the renumbering path of ``pack_rows`` runs.
    """
    rng = np.random.default_rng(seed)
    cols = {}
    for j in range(n_keys):
        v = rng.integers(0, int(rng.integers(1, 5)), n)
        if huge_levels:
            cats = [f"c{i}" for i in range(400)]
            cols[f"k{j}"] = pd.Categorical.from_codes(v * 97, categories=cats)
        else:
            cols[f"k{j}"] = v.astype(float)
    df = pd.DataFrame(cols)
    df = df.mask(rng.random(df.shape) < rng.uniform(0.0, 0.5))
    df["s"] = rng.integers(0, 2, n)
    return df


@pytest.mark.parametrize("direct", ["default", "never"])
@pytest.mark.parametrize("seed", range(12))
def test_wildcard_search_matches_brute_force_with_many_patterns(seed, direct, monkeypatch):
    # The search must give exactly the O(n^2) frequencies, also when no sub-problem is
    # small enough for the direct pairwise comparison (every split and refinement runs).
    from sdcbayes.protection import suppression

    if direct == "never":
        monkeypatch.setattr(suppression, "_DIRECT_COMPARISONS", 0)
    n_keys = 3 + seed % 5
    df = many_pattern_frame(seed, n=40 + 7 * seed, n_keys=n_keys, huge_levels=seed % 3 == 2)
    keys = [f"k{j}" for j in range(n_keys)]
    np.testing.assert_array_equal(wildcard_frequencies(df, keys), brute_force_fk(df, keys))
    np.testing.assert_array_equal(
        wildcard_frequencies(df, keys, strata="s"), brute_force_fk(df, keys, "s")
    )


def test_wildcard_search_int64_overflow_without_missing(monkeypatch):
    # No missing values: all keys are packed in one step, 401^9 > int64 max.
    from sdcbayes.protection import suppression

    monkeypatch.setattr(suppression, "_DIRECT_COMPARISONS", 0)
    rng = np.random.default_rng(3)
    cats = [f"c{i}" for i in range(400)]
    df = pd.DataFrame(
        {f"k{j}": pd.Categorical.from_codes(rng.integers(0, 2, 80) * 397, categories=cats)
         for j in range(9)}
    )
    df["s"] = rng.integers(0, 2, 80)
    keys = [f"k{j}" for j in range(9)]
    np.testing.assert_array_equal(wildcard_frequencies(df, keys), brute_force_fk(df, keys))
    np.testing.assert_array_equal(
        wildcard_frequencies(df, keys, strata="s"), brute_force_fk(df, keys, "s")
    )


def test_local_suppression_with_many_patterns_is_k_anonymous(monkeypatch):
    from sdcbayes.protection import suppression

    monkeypatch.setattr(suppression, "_DIRECT_COMPARISONS", 0)
    df = many_pattern_frame(5, n=90, n_keys=6)
    keys = [f"k{j}" for j in range(6)]
    res = local_suppression(df, keys, k=3, strata="s")
    assert brute_force_fk(res.frame, keys, "s").min() >= 3


@pytest.mark.parametrize("seed,k", [(0, 2), (1, 3), (2, 3), (3, 5), (4, 3)])
def test_k_anonymity_after_suppression_brute_force(seed, k):
    df = random_frame(seed, n=60, p_missing=0.05 if seed % 2 else 0.0)
    before = df.copy(deep=True)
    res = local_suppression(df, KEYS, k=k)
    pd.testing.assert_frame_equal(df, before)  # input untouched
    fk = brute_force_fk(res.frame, KEYS)
    assert fk.min() >= k
    # Only key values are touched, and only by setting them to missing.
    was = df[KEYS].isna().to_numpy()
    now = res.frame[KEYS].isna().to_numpy()
    assert (now | ~was).all()  # missing stays missing
    new = now & ~was
    kept = ~now
    orig_vals = df[KEYS].astype(object).to_numpy()
    assert (orig_vals[kept] == res.frame[KEYS].astype(object).to_numpy()[kept]).all()
    pd.testing.assert_series_equal(res.frame["other"], df["other"])
    # The log and the summary count exactly the new missing values, per variable.
    assert len(res.log) == new.sum() == res.summary["total_suppressions"]
    per_var = res.log["variable"].value_counts().reindex(KEYS, fill_value=0)
    assert per_var.to_dict() == res.summary["suppressions"]
    assert per_var.to_dict() == dict(zip(KEYS, new.sum(axis=0).tolist()))
    # Logged originals are the original values at the logged positions.
    for rec, var, orig in res.log[["record", "variable", "original"]].itertuples(index=False):
        assert df[var].iloc[rec] == orig


def test_cross_check_with_microdata_wildcard_cells():
    microdata = pytest.importorskip("sdcbayes.microdata")
    df = random_frame(7, n=80, p_missing=0.1)
    res = local_suppression(df, KEYS, k=3)
    md = microdata.Microdata(res.frame, KEYS, missing="wildcard")
    fk_md = np.asarray(md.cells.table["fk"])[md.record_cell]
    np.testing.assert_array_equal(fk_md, wildcard_frequencies(res.frame, KEYS))
    assert fk_md.min() >= 3


def test_per_stratum():
    df = random_frame(11, n=70)
    res = local_suppression(df, KEYS, k=3, strata="stratum")
    assert brute_force_fk(res.frame, KEYS, "stratum").min() >= 3
    assert set(res.log["stratum"]) <= {"0", "1"}
    # Stratified k-anonymity implies the unstratified one, and needs at least as many suppressions.
    plain = local_suppression(df, KEYS, k=3)
    assert res.summary["total_suppressions"] >= plain.summary["total_suppressions"]


def test_small_stratum_gets_k_lowered():
    df = pd.DataFrame({"a": [1, 2, 3, 1, 1, 1], "b": list("xyzxxx"), "s": [0, 0, 1, 1, 1, 1]})
    res = local_suppression(df, ["a", "b"], k=3, strata="s")
    assert res.summary["strata_below_k"] == 1
    fk = brute_force_fk(res.frame, ["a", "b"], "s")
    assert (fk[:2] >= 2).all() and (fk[2:] >= 3).all()


@pytest.mark.parametrize("combs,k", [([2], 3), ([3, 2], [2, 4])])
def test_all_key_subsets(combs, k):
    df = random_frame(5, n=60)
    res = local_suppression(df, KEYS, k=k, combs=combs)
    ks = [k] * len(combs) if np.isscalar(k) else k
    for size, kk in zip(combs, ks):
        for subset in itertools.combinations(KEYS, size):
            assert brute_force_fk(res.frame, list(subset)).min() >= kk, subset


def test_importance_decides_which_key_is_suppressed():
    # Record 4 (m, 30s) is unique; suppressing either key alone makes it 3-fold.
    df = pd.DataFrame(
        {
            "sex": ["m", "m", "f", "f", "m", "f", "f"],
            "age": ["20s", "20s", "30s", "30s", "30s", "40s", "40s"],
        }
    )
    # Default (sdcMicro): more levels = less important, so age (3 levels) goes first.
    assert default_importance(df, ["sex", "age"]) == {"sex": 1, "age": 2}
    res = local_suppression(df, ["sex", "age"], k=2)
    assert res.summary["suppressions"] == {"sex": 0, "age": 1}
    assert res.log.loc[0, "record"] == 4
    res2 = local_suppression(df, ["sex", "age"], k=2, importance={"sex": 2, "age": 1})
    assert res2.summary["suppressions"] == {"sex": 1, "age": 0}
    assert brute_force_fk(res2.frame, ["sex", "age"]).min() >= 2


def test_already_anonymous_file_is_untouched():
    df = pd.DataFrame({"a": [1, 1, 1, 2, 2, 2], "b": list("xxxyyy")})
    res = local_suppression(df, ["a", "b"], k=3)
    assert res.summary["total_suppressions"] == 0 and res.log.empty
    pd.testing.assert_frame_equal(res.frame, df)


def test_existing_missing_values_are_wildcards_not_new_suppressions():
    df = pd.DataFrame({"a": [1, 1, np.nan], "b": ["x", "x", "y"]})
    res = local_suppression(df, ["a", "b"], k=2)
    assert res.summary["missing_before"] == {"a": 1, "b": 0}
    assert brute_force_fk(res.frame, ["a", "b"]).min() >= 2
    assert res.summary["total_suppressions"] == len(res.log)


def test_integer_keys_stay_integer():
    df = pd.DataFrame({"a": [1, 1, 1, 2], "b": [5, 5, 5, 6]})
    res = local_suppression(df, ["a", "b"], k=2)
    for c in ("a", "b"):
        assert pd.api.types.is_integer_dtype(res.frame[c].dtype)
    assert brute_force_fk(res.frame, ["a", "b"]).min() >= 2


def test_bad_input_raises_input_error():
    df = random_frame(0, n=10)
    with pytest.raises(InputError, match="not found"):
        local_suppression(df, ["k0", "nope"], k=2)
    with pytest.raises(InputError, match="k="):
        local_suppression(df, KEYS, k=0)
    with pytest.raises(InputError, match="importance"):
        local_suppression(df, KEYS, k=2, importance=[1, 2])
    with pytest.raises(InputError, match="combs"):
        local_suppression(df, KEYS, k=2, combs=[5])
    with pytest.raises(InputError, match="both keys and strata"):
        local_suppression(df, KEYS, k=2, strata="k0")


def test_benchmark_size_is_k_anonymous():
    # The benchmark file: 1e4 records, 5 keys with 10, 2, 5, 20, 8 levels (its
    # time is measured by benchmarks/local_suppression.py, not asserted here).
    rng = np.random.default_rng(20240601)
    cards = [10, 2, 5, 20, 8]
    df = pd.DataFrame({f"v{j}": rng.integers(0, c, 10_000) for j, c in enumerate(cards)})
    keys = list(df.columns)
    res = local_suppression(df, keys, k=3)
    assert wildcard_frequencies(res.frame, keys).min() >= 3
    # Every record that violated 3-anonymity needs at least one suppression of its own
    # or in others; the greedy never suppresses in records that were fine.
    violated = wildcard_frequencies(df, keys) < 3
    touched = np.zeros(len(df), dtype=bool)
    touched[res.log["record"].to_numpy()] = True
    assert not (touched & ~violated).any()


def test_stratum_labels_in_the_log_are_unambiguous():
    # two strata whose values joined with a plain "-" would both read "a-b-c"
    df = pd.DataFrame({"k1": [1, 2, 3, 1, 2, 3], "k2": list("xyzxyz"),
                       "s1": ["a-b"] * 3 + ["a"] * 3, "s2": ["c"] * 3 + ["b-c"] * 3})
    res = local_suppression(df, ["k1", "k2"], k=2, strata=["s1", "s2"])
    assert res.summary["total_suppressions"] > 0
    by_stratum = res.log.groupby("stratum")["record"].apply(lambda r: set(r // 3))
    assert set(by_stratum.index) == {"a\\-b-c", "a-b\\-c"}
    assert all(len(groups) == 1 for groups in by_stratum)  # each label is one stratum
