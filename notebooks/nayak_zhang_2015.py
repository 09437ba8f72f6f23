# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Nayak & Zhang (2015): correct-match probability and PRAM that bounds it
#
# Seed `002`: T. Nayak, C. Zhang, *Measuring Identification Risk in Microdata
# Release and Its Control by Post-randomization* (slides, The George Washington
# University, 6 November 2015).
#
# An intruder knows a target's key values and picks at random one of the
# released records that share them; a *correct match* is picking the target's
# own record. Before any perturbation, `P(CM) = 1/f` with `f` the size of the
# target's cell. Nayak-Zhang PRAM randomises the singleton and doubleton cells
# in groups of `k` cells with `p_ii = 1 - theta/T_i`,
# `p_ji = theta/((k-1) T_i)`, chosen so that
# `P(CM | S_j = a, X_B = c_j) <= xi` for every released count `a`, via the bound
# `phi(theta) = (T - theta)/(T(T - theta) + theta^2) <= xi`.
#
# This notebook reproduces, with `sdcbayes.protection`:
#
# * the six-record example: John is matched with probability 1, Susan 0.5;
# * the printed 5 x 5 transition matrix of the example;
# * "E(number of units moving out of cell i) = theta" and `E(S_i | T_i) = T_i`;
# * theta from xi, the limit `xi >= 1/3`, and the minimum group size `k`;
# * the correct-match probabilities before and after PRAM, exactly (checked
#   against enumeration of all 5^6 outcomes) and by simulation.

# %%
import numpy as np
import pandas as pd

from sdcbayes.protection import (
    apply_transition,
    correct_match_probability,
    nayak_zhang_cm_probability,
    nayak_zhang_matrix,
    nayak_zhang_min_group_size,
    nayak_zhang_phi,
    nayak_zhang_pram,
    nayak_zhang_theta,
)

# %% [markdown]
# ## The example and the correct-match probability before PRAM

# %%
EXAMPLE = pd.DataFrame(
    {
        "name": ["John", "Mike", "Larry", "Susan", "Jane", "Rachel"],
        "sex": ["M", "M", "M", "F", "F", "F"],
        "race": ["White", "Black", "Black", "White", "Other", "White"],
        "residency": ["VA", "MD", "VA", "MD", "MD", "MD"],
        "vin": list("abcdef"),
    }
)
KEYS = ["sex", "race", "residency"]
CELL = ["c1", "c2", "c3", "c4", "c5", "c4"]  # the seed's cross-classification of the keys
before = correct_match_probability(EXAMPLE, KEYS)
print(EXAMPLE.assign(cell=CELL, P_CM_before=before).to_string(index=False))
# "P{John is correctly matched} = 1", "P{Susan is correctly matched} = 0.5"
assert before[0] == 1.0 and before[3] == 0.5
np.testing.assert_array_equal(before, [1, 1, 1, 0.5, 1, 0.5])

# %% [markdown]
# ## The transition matrix of the example
#
# Cells `c1..c5` have counts `T = 1, 1, 1, 2, 1`; one group of `k = 5` cells.
# The seed prints the matrix with entry `(i, j)` = probability of moving from
# `c_j` to `c_i` (columns sum to 1); `nayak_zhang_matrix` is row-stochastic
# (row = from), so the printed matrix is its transpose.

# %%
T = np.array([1, 1, 1, 2, 1])


def printed_matrix(t: float) -> np.ndarray:
    """Seed 002's matrix for the example, as printed."""
    return np.array(
        [
            [1 - t, t / 4, t / 4, t / 8, t / 4],
            [t / 4, 1 - t, t / 4, t / 8, t / 4],
            [t / 4, t / 4, 1 - t, t / 8, t / 4],
            [t / 4, t / 4, t / 4, 1 - t / 2, t / 4],
            [t / 4, t / 4, t / 4, t / 8, 1 - t],
        ]
    )


for theta in (0.2, 0.5, 1.0):
    ours = nayak_zhang_matrix(T, theta)
    np.testing.assert_allclose(ours.T, printed_matrix(theta), atol=1e-15)
    # "E(number of units moving out of cell i) = T_i - T_i p_ii = theta", for all cells
    np.testing.assert_allclose(T * (1 - np.diag(ours)), theta, atol=1e-15)
    # unbiased: E(S | T) = T P = T
    np.testing.assert_allclose(T @ ours, T, atol=1e-15)
theta_show = 0.5
print(f"transition matrix at theta = {theta_show} (seed's layout: column = from):")
print(pd.DataFrame(nayak_zhang_matrix(T, theta_show).T, index=[f"to c{i}" for i in range(1, 6)],
                   columns=[f"from c{i}" for i in range(1, 6)]).to_string())

# %% [markdown]
# ## theta from xi, and the minimum group size
#
# `P(CM | S_j = 1) <= phi(theta)`; solve `phi_T(theta) <= xi` for the counts
# `T = 1, 2` that are randomised. Doubletons need `phi_2(theta) <= xi`, and
# `phi_2(1) = 1/3`: with `theta <= 1` the method is "limited to xi >= 1/3".
# Then `k` is the smallest group size for which the exact `P(CM | S_j = 1)` and
# `P(CM | S_j = 2)` are at most `xi` for every make-up of groups of `k..2k-1` cells
# (the seed solves `k` from `P(CM | S_j = 2) <= P(CM | S_j = 1)`, a sufficient
# condition only). `theta` is checked against a brute-force grid search for the
# smallest value meeting the bound.

# %%
grid = np.linspace(0.0, 1.0, 100_001)
phi_max = np.maximum(nayak_zhang_phi(grid, 1), nayak_zhang_phi(grid, 2))
rows = []
for xi in (1 / 3, 0.4, 0.5, 0.75, 0.9):
    theta = nayak_zhang_theta(xi)
    k = nayak_zhang_min_group_size(xi, theta)
    brute = grid[phi_max <= xi + 1e-12].min()
    rows.append({"xi": xi, "theta": theta, "theta (grid search)": brute,
                 "phi_1(theta)": float(nayak_zhang_phi(theta, 1)),
                 "phi_2(theta)": float(nayak_zhang_phi(theta, 2)), "k": k})
    assert abs(theta - brute) <= 1e-5
    assert max(nayak_zhang_phi(theta, 1), nayak_zhang_phi(theta, 2)) <= xi + 1e-12
theta_table = pd.DataFrame(rows)
print(theta_table.round(6).to_string(index=False))
assert theta_table.loc[0, "theta"] == 1.0 and abs(nayak_zhang_phi(1.0, 2) - 1 / 3) < 1e-15
try:
    nayak_zhang_theta(0.3)
except Exception as err:  # InputError: below the 1/3 limit
    print("xi = 0.3:", err)
else:
    raise AssertionError("xi < 1/3 must be refused")

# %% [markdown]
# ## Correct-match probability after PRAM: exact
#
# With `xi = 1/3`: `theta = 1`, `k = 3`; the example's five small cells form one
# group (the remainder joins the last group), exactly the seed's 5 x 5 matrix.
# At `theta = 1` every singleton leaves its cell for sure (`p_ii = 0`), so only
# Susan and Rachel can be matched. With `xi = 1/2`: `theta = 0.618` (minimum group
# size 2; here the five cells are kept as the seed's one group of five), and
# singletons may stay.
#
# `nayak_zhang_cm_probability` gives `P(CM | S_j = a)` in closed form (sums of
# binomials). We check it by enumerating all `5^6 = 15 625` destinations of the
# six people, and also compute the unconditional `P(CM) = E[I(stay)/S_j]`.
# (For `a >= 3`, `P(CM | S_j = a) <= 1/a <= 1/3` trivially.)

# %%
unit_cell = np.array([0, 1, 2, 3, 4, 3])  # John, Mike, Larry, Susan, Jane, Rachel
dest = np.indices((5,) * 6).reshape(6, -1).T  # every outcome, (15625, 6)


def exact_after(xi: float) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Correct-match probabilities after PRAM at xi: closed form vs enumeration."""
    theta = nayak_zhang_theta(xi)
    M = nayak_zhang_matrix(T, theta)
    prob = np.prod(M[unit_cell[None, :], dest], axis=1)
    assert abs(prob.sum() - 1) < 1e-12
    exact = nayak_zhang_cm_probability(T, theta, (1, 2))  # (a, cell)
    rows = []
    for u, name in enumerate(EXAMPLE["name"]):
        j = unit_cell[u]
        S = (dest == j).sum(axis=1)
        cm = np.where(dest[:, u] == j, 1.0 / np.maximum(S, 1), 0.0)
        row = {"xi": round(xi, 4), "theta": round(theta, 4), "name": name, "cell": CELL[u],
               "P(CM) before": before[u], "P(CM) after": float(prob @ cm)}
        for ai, a in enumerate((1, 2)):
            p_a = prob[S == a].sum()
            brute = float(prob[S == a] @ cm[S == a] / p_a) if p_a > 0 else np.nan
            row[f"P(CM|S={a}) enumeration"] = brute
            row[f"P(CM|S={a}) closed form"] = exact[ai, j]
            assert np.isnan(brute) == np.isnan(exact[ai, j])
            if not np.isnan(brute):
                assert abs(brute - exact[ai, j]) < 1e-12, (name, a)
                assert brute <= xi + 1e-12  # the seed's goal
        rows.append(row)
    return pd.DataFrame(rows), M, exact


after = {}
for xi in (1 / 3, 0.5):
    table, M_xi, exact_xi = exact_after(xi)
    after[xi] = (table, M_xi, exact_xi)
    with pd.option_context("display.width", 220):
        print(table.round(4).to_string(index=False))
    assert np.all(table["P(CM) after"] < table["P(CM) before"])
# at xi = 1/2 the singletons' bound is tight: phi_1(theta) = 1/2 >= P(CM | S = 1)
table_half = after[0.5][0]
assert np.all(table_half["P(CM|S=1) closed form"] <= nayak_zhang_phi(nayak_zhang_theta(0.5), 1))

# %% [markdown]
# ## A simulation showing the bound
#
# 200 000 independent PRAM releases of the example (the seed's matrix at
# `xi = 1/2`, `theta = 0.618`), with a fixed seed. For each person and released count
# `a = S_j` of their cell, the share of releases in which the intruder's random
# pick is the target's own record estimates `P(CM | S_j = a)`; it agrees with the
# exact value within Monte Carlo error and stays below `xi = 1/2`.

# %%
XI = 0.5
_, M, exact = after[XI]
R = 200_000
rng = np.random.default_rng(20151106)
sim = apply_transition(np.tile(unit_cell, R), M, rng).reshape(R, 6)
counts = np.stack([(sim == c).sum(axis=1) for c in range(5)], axis=1)  # (R, cell)
# unbiasedness E(S | T) = T, within 4 standard errors
se = counts.std(axis=0, ddof=1) / np.sqrt(R)
print("mean released counts:", counts.mean(axis=0).round(4), " original:", T)
assert np.all(np.abs(counts.mean(axis=0) - T) <= 4 * se)

rows = []
for u, name in enumerate(EXAMPLE["name"]):
    j = unit_cell[u]
    S = counts[:, j]
    cm = np.where(sim[:, u] == j, 1.0 / np.maximum(S, 1), 0.0)
    for ai, a in enumerate((1, 2)):
        sel = S == a
        est, err = cm[sel].mean(), cm[sel].std(ddof=1) / np.sqrt(sel.sum())
        rows.append({"name": name, "a": a, "releases": int(sel.sum()),
                     "simulated": est, "+/- s.e.": err, "exact": exact[ai, j]})
        assert abs(est - exact[ai, j]) <= 4 * err + 1e-12, (name, a)
        assert est <= XI + 4 * err
    # the unconditional probability, too
    target = table_half.loc[u, "P(CM) after"]
    assert abs(cm.mean() - target) <= 4 * cm.std(ddof=1) / np.sqrt(R) + 1e-12
print(pd.DataFrame(rows).round(5).to_string(index=False))

# %% [markdown]
# ## The same through `nayak_zhang_pram` on the data frame (xi = 1/3)
#
# The data-frame front end solves `theta` and `k`, groups the singleton and
# doubleton cells, randomises each group and reports the worst exact
# correct-match probability. Non-key variables are untouched and released key
# combinations are always original cells.

# %%
res = nayak_zhang_pram(EXAMPLE, KEYS, xi=1 / 3, seed=3)
print(res.summary)
print(res.frame.to_string(index=False))
s = res.summary
assert s["theta"] == 1.0 and s["group_size"] == 3 and s["n_groups"] == 1
assert s["n_cells_randomised"] == 5 and s["n_records_randomised"] == 6
assert s["max_cm_probability"] <= 1 / 3 + 1e-12
assert (res.frame["vin"] == EXAMPLE["vin"]).all()
assert set(map(tuple, res.frame[KEYS].to_numpy())) <= set(map(tuple, EXAMPLE[KEYS].to_numpy()))
