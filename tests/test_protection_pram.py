"""PRAM: Nayak-Zhang (seed 002) and invariant PRAM (seed 001, section 4.1.3).

Reference numbers: seed 002's 6-record example (correct-match probabilities of
John and Susan, and the printed 5x5 transition matrix), the ξ >= 1/3 limit
(θ = 1 gives φ = 1/3 for doubletons). Closed forms are checked against
brute-force enumeration of every PRAM outcome and against simulation with
fixed seeds. The text of seed 001 available here stops before section 4.1.3,
so invariant PRAM is checked against its defining property T'R = T'
(Gouweleeuw et al. 1998), algebraically and by simulation.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.protection import (
    apply_transition,
    correct_match_probability,
    invariant_pram,
    invariant_transition_matrix,
    nayak_zhang_cm_probability,
    nayak_zhang_matrix,
    nayak_zhang_min_group_size,
    nayak_zhang_phi,
    nayak_zhang_pram,
    nayak_zhang_theta,
)

# Seed 002, "Example": six people, three keys, one non-key variable (VIN).
SEED002 = pd.DataFrame(
    {
        "name": ["John", "Mike", "Larry", "Susan", "Jane", "Rachel"],
        "sex": ["M", "M", "M", "F", "F", "F"],
        "race": ["White", "Black", "Black", "White", "Other", "White"],
        "residency": ["VA", "MD", "VA", "MD", "MD", "MD"],
        "vin": list("abcdef"),
    }
)
SEED002_KEYS = ["sex", "race", "residency"]


def seed002_printed_matrix(theta: float) -> np.ndarray:
    """The matrix printed in seed 002 for cells c1..c5 (c4 = Susan & Rachel), as printed.

    Entry (i, j) is the seed's p_ij, the probability of moving from c_j to c_i.
    """
    t = theta
    return np.array(
        [
            [1 - t, t / 4, t / 4, t / 8, t / 4],
            [t / 4, 1 - t, t / 4, t / 8, t / 4],
            [t / 4, t / 4, 1 - t, t / 8, t / 4],
            [t / 4, t / 4, t / 4, 1 - t / 2, t / 4],
            [t / 4, t / 4, t / 4, t / 8, 1 - t],
        ]
    )


def test_seed002_correct_match_probabilities():
    p = correct_match_probability(SEED002, SEED002_KEYS)
    assert p[0] == 1.0  # "P{John is correctly matched} = 1"
    assert p[3] == 0.5  # "P{Susan is correctly matched} = 0.5"
    np.testing.assert_array_equal(p, [1, 1, 1, 0.5, 1, 0.5])


@pytest.mark.parametrize("theta", [0.2, 0.5, 1.0])
def test_seed002_matrix_reproduced(theta):
    # Cells in the seed's order c1..c5 have counts 1, 1, 1, 2, 1; our matrices are
    # row-stochastic (row = from), the seed prints the transpose.
    ours = nayak_zhang_matrix([1, 1, 1, 2, 1], theta)
    np.testing.assert_allclose(ours.T, seed002_printed_matrix(theta), atol=1e-15)
    np.testing.assert_allclose(ours.sum(axis=1), 1.0)
    # "E(number of units moving out of cell i) = θ" for every cell, and E(S | T) = T.
    counts = np.array([1, 1, 1, 2, 1.0])
    np.testing.assert_allclose(counts * (1 - np.diag(ours)), theta)
    np.testing.assert_allclose(counts @ ours, counts)


def test_seed002_example_through_nayak_zhang_pram():
    before = SEED002.copy(deep=True)
    res = nayak_zhang_pram(SEED002, SEED002_KEYS, xi=1 / 3, seed=3)
    pd.testing.assert_frame_equal(SEED002, before)
    s = res.summary
    # All five cells are singletons or doubletons; with k = 3 the remainder joins the
    # last group, so they form the single group of five cells of the seed's example.
    assert s["theta"] == 1.0 and s["group_size"] == 3
    assert s["n_groups"] == 1 and s["n_cells_randomised"] == 5 and s["n_records_randomised"] == 6
    assert s["max_cm_probability"] <= 1 / 3 + 1e-12
    # Non-key variables are untouched; released key combinations are original cells.
    pd.testing.assert_series_equal(res.frame["vin"], SEED002["vin"])
    pd.testing.assert_series_equal(res.frame["name"], SEED002["name"])
    orig_cells = set(map(tuple, SEED002[SEED002_KEYS].to_numpy()))
    assert set(map(tuple, res.frame[SEED002_KEYS].to_numpy())) <= orig_cells
    # With θ = 1 every singleton leaves its cell for sure (p_ii = 1 − θ/T_i = 0).
    singles = [0, 1, 2, 4]
    moved = set(res.log["record"])
    assert set(singles) <= moved
    assert s["n_moved"] == len(res.log)


@pytest.mark.parametrize("xi", [1 / 3, 0.4, 0.5, 0.6, 0.75, 0.9])
def test_theta_solves_phi_le_xi_with_equality_at_the_boundary(xi):
    theta = nayak_zhang_theta(xi)
    phis = [float(nayak_zhang_phi(theta, t)) for t in (1, 2)]
    assert max(phis) <= xi + 1e-12
    assert max(phis) == pytest.approx(xi, abs=1e-12)  # the binding constraint is tight
    # Smallest such θ: brute-force grid search over [0, 1].
    grid = np.linspace(0, 1, 200_001)
    ok = np.maximum(nayak_zhang_phi(grid, 1), nayak_zhang_phi(grid, 2)) <= xi + 1e-12
    assert grid[ok].min() == pytest.approx(theta, abs=1e-5)


def test_xi_one_third_is_the_limit():
    assert nayak_zhang_theta(1 / 3) == 1.0
    assert float(nayak_zhang_phi(1.0, 2)) == pytest.approx(1 / 3, abs=1e-15)
    with pytest.raises(InputError, match="1/3"):
        nayak_zhang_theta(0.3)


def brute_force_cm(counts, theta):
    """P(CM | S_j = a) for the first unit of each cell by enumerating all moves."""
    counts = list(counts)
    k = len(counts)
    cell_of_unit = [c for c, t in enumerate(counts) for _ in range(t)]
    p = nayak_zhang_matrix(counts, theta)
    out = {}
    for j in range(k):
        target = cell_of_unit.index(j)
        num = np.zeros(8)
        den = np.zeros(8)
        for dest in itertools.product(range(k), repeat=len(cell_of_unit)):
            prob = np.prod([p[cell_of_unit[u], d] for u, d in enumerate(dest)])
            a = sum(d == j for d in dest)
            den[a] += prob
            if dest[target] == j:
                num[a] += prob / a
        with np.errstate(invalid="ignore"):
            out[j] = num / den
    return out


@pytest.mark.parametrize("counts,theta", [([1, 2, 1], 0.7), ([2, 2, 1, 1], 1.0), ([1, 1, 2], 0.4)])
def test_exact_cm_probability_matches_enumeration(counts, theta):
    exact = nayak_zhang_cm_probability(counts, theta, (1, 2, 3))
    brute = brute_force_cm(counts, theta)
    for j in range(len(counts)):
        for ai, a in enumerate((1, 2, 3)):
            b = brute[j][a]
            if np.isnan(b):
                assert np.isnan(exact[ai, j])
            else:
                assert exact[ai, j] == pytest.approx(b, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("xi", [1 / 3, 0.5, 0.75])
def test_min_group_size_meets_the_seed_criterion(xi):
    theta = nayak_zhang_theta(xi)
    k = nayak_zhang_min_group_size(xi, theta)
    # For every group of k..2k−1 singleton/doubleton cells: P(CM|S=a) <= ξ for a = 1, 2
    # (seed 002's goal; a >= 3 is <= 1/3 by itself), checked exactly (NaN fails).
    for size in range(k, 2 * k):
        for n1 in range(size + 1):
            counts = [1] * n1 + [2] * (size - n1)
            pr = nayak_zhang_cm_probability(counts, theta, (1, 2))
            assert (pr <= xi + 1e-12).all()


def _replicated_table(reps: int) -> tuple[pd.DataFrame, np.ndarray]:
    # Per replicate: six small cells (T = 1, 2, 1, 2, 1, 1) and one cell of 5.
    # With k = 3 the six small cells form two groups per replicate, never mixing replicates.
    counts = np.array([1, 2, 1, 2, 1, 1, 5])
    cell = np.repeat(np.arange(counts.size), counts)
    rep = np.repeat(np.arange(reps), cell.size)
    df = pd.DataFrame({"rep": rep, "cell": np.tile(cell, reps)})
    return df, counts


def test_simulation_bound_and_unbiasedness():
    reps = 20_000
    df, counts = _replicated_table(reps)
    xi = 1 / 3
    res = nayak_zhang_pram(df, ["rep", "cell"], xi=xi, seed=20151106)
    assert res.summary["group_size"] == 3 and res.summary["n_groups"] == 2 * reps
    new_cell = res.frame["cell"].to_numpy().reshape(reps, -1)
    assert (res.frame["rep"] == df["rep"]).all()
    orig_cell = df["cell"].to_numpy().reshape(reps, -1)[0]
    released = np.stack([(new_cell == c).sum(axis=1) for c in range(counts.size)], axis=1)

    # Unbiasedness E(S_j | T) = T_j, within 4 Monte Carlo standard errors.
    mean = released.mean(axis=0)
    se = released.std(axis=0, ddof=1) / np.sqrt(reps)
    assert (np.abs(mean - counts) <= 4 * se + 1e-12).all()
    assert (released[:, 6] == 5).all()  # the large cell is not randomised

    # P(CM | S_j = a) <= ξ, by simulation, against the exact values of each group.
    groups = [np.array([1, 2, 1]), np.array([2, 1, 1])]
    n_checked = 0
    for unit, c in enumerate(orig_cell[:-5]):
        stayed = new_cell[:, unit] == c
        s_j = released[:, c]
        g, pos = divmod(int(c), 3)
        exact = nayak_zhang_cm_probability(groups[g], 1.0, (1, 2))[:, pos]
        for ai, a in enumerate((1, 2)):
            sel = s_j == a
            if sel.sum() < 200:
                continue
            cm = stayed[sel] / a
            est = cm.mean()
            err = cm.std(ddof=1) / np.sqrt(sel.sum())
            assert est <= xi + 4 * err
            assert abs(est - exact[ai]) <= 4 * err + 1e-9
            n_checked += 1
    assert n_checked >= 12  # every unit is checked at a = 1 and a = 2


# --------------------------------------------------------------------------- invariant PRAM


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_invariant_matrix_has_the_observed_distribution_as_invariant(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 50, size=rng.integers(2, 9)).astype(float)
    counts[0] = max(counts[0], 1)
    r = invariant_transition_matrix(counts, pd_min=0.6, alpha=0.7, seed=seed)
    assert (r >= -1e-15).all()
    np.testing.assert_allclose(r.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(counts @ r, counts, atol=1e-9)
    pi = counts / counts.sum()
    np.testing.assert_allclose(pi @ r, pi, atol=1e-12)
    np.testing.assert_allclose(invariant_transition_matrix(counts, alpha=0.0), np.eye(counts.size))


def test_invariant_pram_preserves_expected_counts_by_simulation():
    counts = np.array([120, 50, 25, 5])
    codes = np.repeat(np.arange(4), counts)
    r = invariant_transition_matrix(counts, pd_min=0.5, alpha=1.0, seed=1)
    assert (np.diag(r) < 0.999).all()  # it does change values
    reps = 4000
    rng = np.random.default_rng(99)
    new = apply_transition(np.tile(codes, reps), r, rng).reshape(reps, -1)
    released = np.stack([(new == c).sum(axis=1) for c in range(4)], axis=1)
    mean = released.mean(axis=0)
    se = released.std(axis=0, ddof=1) / np.sqrt(reps)
    assert (np.abs(mean - counts) <= 4 * se).all()
    # And the transition frequencies follow R.
    trans = np.array([[np.mean(new[:, codes == i] == j) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(trans, r, atol=0.01)


def test_invariant_pram_on_a_frame():
    rng = np.random.default_rng(5)
    n = 300
    df = pd.DataFrame(
        {
            "roof": pd.Categorical(rng.choice(["tin", "tile", "straw"], n, p=[0.6, 0.3, 0.1])),
            "water": rng.choice([1, 2, 3, 4], n),
            "region": rng.choice(["N", "S"], n),
            "income": rng.normal(size=n),
        }
    )
    df.loc[[3, 7], "roof"] = np.nan
    before = df.copy(deep=True)
    res = invariant_pram(df, ["roof", "water"], strata="region", seed=11)
    pd.testing.assert_frame_equal(df, before)
    assert isinstance(res.frame["roof"].dtype, pd.CategoricalDtype)
    assert res.frame["roof"].isna().sum() == 2 and res.frame.loc[[3, 7], "roof"].isna().all()
    pd.testing.assert_series_equal(res.frame["income"], df["income"])
    for col in ("roof", "water"):
        diff = (res.frame[col].astype(object) != df[col].astype(object)) & df[col].notna()
        assert res.summary["changed"][col] == diff.sum() == (res.log["variable"] == col).sum()
        # Per stratum, the matrix used keeps that stratum's counts invariant.
        levels = res.summary["levels"][col]
        for stratum, mat in res.summary["matrices"][col].items():
            sub = df.loc[df["region"] == stratum, col].dropna()
            t = sub.astype(object).map({v: i for i, v in enumerate(levels)}).value_counts()
            t = t.reindex(range(len(levels)), fill_value=0).to_numpy(float)
            np.testing.assert_allclose(t @ np.array(mat), t, atol=1e-9)
    res2 = invariant_pram(df, ["roof", "water"], strata="region", seed=11)
    pd.testing.assert_frame_equal(res.frame, res2.frame)  # reproducible from the seed


def test_pram_input_errors():
    with pytest.raises(InputError, match="not found"):
        invariant_pram(SEED002, ["nope"])
    with pytest.raises(InputError, match="pd="):
        invariant_transition_matrix([1, 2], pd_min=0.0)
    with pytest.raises(InputError, match="group size"):
        nayak_zhang_pram(SEED002.iloc[:2], SEED002_KEYS, xi=1 / 3)


@pytest.mark.slow
@pytest.mark.parametrize("xi", [1 / 3, 0.5, 0.75])
def test_simulation_bound_many_replicates(xi):
    # Slow tier: 200 000 replicates, several ξ; groups of k = 2 or 3 divide the six small cells.
    reps = 200_000
    df, counts = _replicated_table(reps)
    res = nayak_zhang_pram(df, ["rep", "cell"], xi=xi, seed=7)
    k, theta = res.summary["group_size"], res.summary["theta"]
    assert 6 % k == 0
    new_cell = res.frame["cell"].to_numpy().reshape(reps, -1)
    orig_cell = df["cell"].to_numpy().reshape(reps, -1)[0]
    released = np.stack([(new_cell == c).sum(axis=1) for c in range(counts.size)], axis=1)
    se = released.std(axis=0, ddof=1) / np.sqrt(reps)
    assert (np.abs(released.mean(axis=0) - counts) <= 4 * se + 1e-12).all()
    for unit, c in enumerate(orig_cell[:-5]):
        g, pos = divmod(int(c), k)
        exact = nayak_zhang_cm_probability(counts[g * k : (g + 1) * k], theta, (1, 2))[:, pos]
        stayed = new_cell[:, unit] == c
        for ai, a in enumerate((1, 2)):
            sel = released[:, c] == a
            if sel.sum() < 1000:
                continue
            cm = stayed[sel] / a
            err = cm.std(ddof=1) / np.sqrt(sel.sum())
            assert cm.mean() <= xi + 4 * err
            assert abs(cm.mean() - exact[ai]) <= 4 * err + 1e-9


def test_stratum_labels_of_several_columns_do_not_collide():
    # ("a-b", "c") and ("a", "b-c") joined with a plain "-" both read "a-b-c"
    n = 40
    df = pd.DataFrame({"s1": ["a-b", "a"] * (n // 2), "s2": ["c", "b-c"] * (n // 2),
                       "x": list("xyzxy") * (n // 5)})
    res = invariant_pram(df, ["x"], strata=["s1", "s2"], seed=1)
    labels = list(res.summary["matrices"]["x"])
    assert len(labels) == 2 and len(set(labels)) == 2
    assert sorted(labels) == sorted(["a\\-b-c", "a-b\\-c"])
    # a single stratum column keeps its plain values as labels
    single = invariant_pram(df, ["x"], strata="s1", seed=1)
    assert sorted(single.summary["matrices"]["x"]) == ["a", "a-b"]
    # values without "-" read as before
    plain = pd.DataFrame({"s1": [1, 2] * 10, "s2": [3] * 20, "x": list("xy") * 10})
    assert sorted(invariant_pram(plain, ["x"], strata=["s1", "s2"], seed=1)
                  .summary["matrices"]["x"]) == ["1-3", "2-3"]


def test_pd_bounds_the_first_stage_matrix_not_the_keep_probability():
    # The released matrix is R_a = aR + (1 - a)I with R = PQ: its diagonal (the probability
    # that a value is kept) can fall below pd, never below 1 - alpha (documented in --pram-pd).
    counts = np.array([600, 66, 1478, 1755, 584, 26, 36, 35], dtype=float)
    r = invariant_transition_matrix(counts, pd_min=0.95, alpha=0.5, seed=1,
                                    random_diagonal=False)
    keep = np.diag(r)
    assert keep.min() < 0.95
    assert keep.min() >= 0.5 - 1e-12
    np.testing.assert_allclose(counts @ r, counts, rtol=1e-9)
    full = invariant_transition_matrix(counts, pd_min=0.95, alpha=1.0, seed=1,
                                       random_diagonal=False)
    assert np.diag(full).min() < 0.95 * 0.95  # alpha = 1: no floor at all from pd


# --------------------------------------------------------------------------- audit G: 1, 8, 10, 11


def _per_record_reference(codes, matrix, seed):
    """apply_transition's definition, one record at a time (the stream: one uniform each)."""
    cum = np.cumsum(matrix, axis=1)
    cum[:, -1] = 1.0
    u = np.random.default_rng(seed).random(codes.shape)
    out = codes.copy()
    for i in np.ndindex(codes.shape):
        if codes[i] >= 0:
            out[i] = np.searchsorted(cum[codes[i]], u[i], side="right")
    return out


@pytest.mark.parametrize("n_cat", [1, 2, 7, 300])
def test_apply_transition_matches_its_per_record_definition(n_cat):
    # Grouping the records by code once must give the very draws of the per-record
    # definition for the same Generator stream (missing codes untouched, shape kept).
    rng = np.random.default_rng(n_cat)
    codes = rng.integers(-1, n_cat, size=(500, 2))
    m = rng.random((n_cat, n_cat))
    if n_cat > 1:
        m[:, n_cat // 2] = 0.0  # a category that is never drawn
    m /= m.sum(axis=1, keepdims=True)
    got = apply_transition(codes, m, np.random.default_rng(3))
    np.testing.assert_array_equal(got, _per_record_reference(codes, m, 3))
    assert got.shape == codes.shape and (got[codes < 0] == codes[codes < 0]).all()
    if n_cat > 1:
        assert not (got == n_cat // 2).any()


def test_apply_transition_accepts_a_seed_or_none():
    codes = np.arange(6) % 3
    m = np.full((3, 3), 1 / 3)
    np.testing.assert_array_equal(apply_transition(codes, m, 12),
                                  apply_transition(codes, m, np.random.default_rng(12)))
    assert apply_transition(codes, m, None).shape == (6,)
    assert apply_transition(codes.astype(float), m, 1).dtype == np.int64  # whole floats
    with pytest.raises(InputError, match="seed="):
        apply_transition(codes, m, "abc")


@pytest.mark.parametrize(
    ("codes", "matrix", "fragments"),
    [
        ([0], [[0.5, 0.5]], ["square"]),
        ([0], [[0.2, 0.2], [0.1, 0.1]], ["2 row(s) that do not sum to 1", "row 0 sums to 0.4"]),
        ([0], [[1.5, -0.5], [0.0, 1.0]], ["negative"]),
        ([0], [[np.nan, 1.0], [0.0, 1.0]], ["missing or infinite"]),
        ([0], [[0.5, 0.5], [0.5, 0.5 + 1e-8]], ["do not sum to 1"]),
        ([0, 5], np.eye(2), ["up to 5", "0..1"]),
        ([0.5], np.eye(2), ["integer"]),
        ([True], np.eye(2), ["integer"]),
    ],
    ids=["not-square", "rows-short", "negative", "nan", "off-by-1e-8", "code-too-big",
         "fraction-code", "bool-code"],
)
def test_apply_transition_validates_its_input(codes, matrix, fragments):
    with pytest.raises(InputError) as err:
        apply_transition(np.asarray(codes), np.asarray(matrix), 0)
    for frag in fragments:
        assert frag in str(err.value)


def test_apply_transition_rows_within_1e9_are_accepted():
    m = np.array([[0.5, 0.5 + 5e-10], [0.0, 1.0]])
    assert apply_transition(np.array([0, 1]), m, 0).tolist()[1] == 1


def test_invariant_pram_refuses_more_levels_than_max_levels():
    df = pd.DataFrame({"id": np.arange(1001), "g": np.arange(1001) % 6})
    with pytest.raises(InputError) as err:
        invariant_pram(df, ["g", "id"], seed=1)
    msg = str(err.value)
    for frag in ("'id'", "1001 levels", "max_levels (1000)", "recode"):
        assert frag in msg
    assert "max_levels=" not in msg  # the CLI would rewrite that into its own --max-levels
    with pytest.raises(InputError, match="'g' has 6 levels"):
        invariant_pram(df, "g", max_levels=5, seed=1)
    assert invariant_pram(df, "g", max_levels=6, seed=1).summary["max_levels"] == 6
    for bad in (0, True, 2.5):
        with pytest.raises(InputError, match="max_levels="):
            invariant_pram(df, "g", max_levels=bad)


def test_invariant_pram_refuses_a_continuous_column():
    df = pd.DataFrame({"x": [1.0, 2.5, 3.0, np.nan], "w": [1.0, 2.0, np.nan, 2.0]})
    with pytest.raises(InputError) as err:
        invariant_pram(df, "x", seed=1)
    for frag in ("'x'", "continuous", "2.5", "mdav", "add_noise"):
        assert frag in str(err.value)
    # whole numbers stored as float (a CSV column with gaps) are categories
    res = invariant_pram(df, "w", seed=1, alpha=1.0, pd_min=0.3)
    assert res.frame["w"].dtype == np.float64 and np.isnan(res.frame.loc[2, "w"])


def test_invariant_pram_summary_matrices_are_arrays():
    # Arrays, not nested lists (8 bytes an entry); ordered like summary["levels"].
    df = pd.DataFrame({"x": list("abcab") * 4, "s": [1, 2] * 10})
    res = invariant_pram(df, "x", strata="s", seed=2)
    for mat in res.summary["matrices"]["x"].values():
        assert isinstance(mat, np.ndarray) and mat.shape == (3, 3)
        np.testing.assert_allclose(mat.sum(axis=1), 1.0)


def _dtype_frame(dtype: str, n: int = 300) -> pd.Series:
    rng = np.random.default_rng(5)
    if dtype.startswith("Int64"):
        values = pd.array(rng.integers(0, 4, n), dtype="Int64")
        if dtype == "Int64+NA":
            values[::7] = pd.NA
        return pd.Series(values)
    if dtype == "category":
        s = pd.Series(pd.Categorical(rng.choice(list("abcd"), n), categories=list("abcde")))
        s[::9] = np.nan
        return s
    if dtype in ("int64", "uint8"):
        return pd.Series(rng.integers(0, 4, n).astype(dtype))
    if dtype == "bool":
        return pd.Series(rng.random(n) < 0.5)
    s = pd.Series(rng.choice(list("abcd"), n).astype(object), dtype=dtype)
    s[::11] = None
    return s


@pytest.mark.parametrize("dtype", ["string[pyarrow]", "string[python]", "object", "Int64",
                                   "Int64+NA", "category", "int64", "uint8", "bool"])
def test_invariant_pram_keeps_the_column_dtype(dtype):
    if dtype == "string[pyarrow]":
        pytest.importorskip("pyarrow")
    col = _dtype_frame(dtype)
    df = pd.DataFrame({"v": col})
    before = df.copy(deep=True)
    res = invariant_pram(df, "v", alpha=1.0, pd_min=0.3, seed=4)
    pd.testing.assert_frame_equal(df, before)
    out = res.frame["v"]
    assert out.dtype == col.dtype, (out.dtype, col.dtype)
    na = col.isna().to_numpy()
    np.testing.assert_array_equal(out.isna().to_numpy(), na)
    assert set(out[~na]) <= set(col[~na])
    changed = (out[~na].astype(object) != col[~na].astype(object)).sum()
    assert changed == res.summary["changed"]["v"] > 0


def test_nayak_zhang_group_size_must_be_an_integer():
    df = pd.DataFrame({"a": np.arange(40), "b": np.arange(40) % 3})
    for bad in (2.7, 3.0, True, "3", 1):
        with pytest.raises(InputError, match="group_size="):
            nayak_zhang_pram(df, ["a", "b"], xi=0.5, group_size=bad, seed=1)
    res = nayak_zhang_pram(df, ["a", "b"], xi=0.5, group_size=np.int64(4), seed=1)
    assert res.summary["group_size"] == 4


@pytest.mark.parametrize("a", [0, [1, 0], 1.5, -1, []])
def test_nayak_zhang_cm_probability_needs_positive_integer_a(a):
    with pytest.raises(InputError, match="integers >= 1"):
        nayak_zhang_cm_probability([1, 2, 1], 0.5, a=a)
