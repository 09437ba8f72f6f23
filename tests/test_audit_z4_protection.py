"""Audit Z4 (protection methods): Nayak-Zhang group size and rank-deficient OLS.

1. ``nayak_zhang_min_group_size`` required P(CM | S=2) <= P(CM | S=1) in every cell,
   a sufficient condition of seed 002 that fails by tiny margins for singleton cells
   when θ is near 1: just above ξ = 1/3 it refused (0.3335), or returned 500 (0.334,
   after 147 s), 50 (0.34), 20 (0.35), although k = 3 meets the seed's goal
   max_a P(CM | S_j = a) <= ξ.
2. ``ols_ci`` reported finite, narrow intervals for coefficients a rank-deficient
   design does not identify, and ``benchmark`` an overlap of 0.0 for them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdcbayes.exceptions import InputError
from sdcbayes.protection import pram as pram_mod
from sdcbayes.protection import sorted_microaggregation
from sdcbayes.protection.infoloss import benchmark, ci_overlap, ols_ci
from sdcbayes.protection.pram import (
    nayak_zhang_cm_probability,
    nayak_zhang_min_group_size,
    nayak_zhang_pram,
    nayak_zhang_theta,
)

# --------------------------------------------------------------------------- Nayak-Zhang


def _worst(theta: float, size: int) -> float:
    """Exact max over a = 1, 2, every cell and every mix of ``size`` cells of
    P(CM | S_j = a); inf when some S_j = 1 or 2 cannot occur (NaN)."""
    worst = 0.0
    for n1 in range(size + 1):
        counts = [1] * n1 + [2] * (size - n1)
        pr = nayak_zhang_cm_probability(counts, theta, (1, 2))
        worst = max(worst, np.inf if np.isnan(pr).any() else float(pr.max()))
    return worst


def _meets(xi: float, theta: float, k: int) -> bool:
    return all(_worst(theta, h) <= xi + 1e-12 for h in range(k, 2 * k))


@pytest.mark.parametrize("xi", [1 / 3, 0.3335, 0.334, 0.34, 0.35, 0.40])
def test_audit_xis_get_the_smallest_k_meeting_the_goal(xi):
    # Old: 3, InputError, 500 (147 s), 50, 20, 5.
    theta = nayak_zhang_theta(xi)
    k = nayak_zhang_min_group_size(xi)
    assert k == 3
    assert _meets(xi, theta, k)
    assert not _meets(xi, theta, k - 1)  # k = 2 does not: smallest


def test_audit_worst_cm_probabilities_at_k3():
    # The audit's table: exact worst P(CM | S=a), a = 1, 2, groups of 3..5 cells.
    expected = {1 / 3: 0.3182, 0.3335: 0.3184, 0.334: 0.3189, 0.34: 0.3255, 0.35: 0.3364}
    for xi, w in expected.items():
        theta = nayak_zhang_theta(xi)
        got = max(_worst(theta, h) for h in range(3, 6))
        assert got == pytest.approx(w, abs=1e-4)
        assert got <= xi


@pytest.mark.parametrize("xi,old_k", [(1 / 3, 3), (0.45, 3), (0.75, 2), (0.9, 2)])
def test_k_unchanged_where_the_old_search_was_minimal(xi, old_k):
    assert nayak_zhang_min_group_size(xi) == old_k


@pytest.mark.parametrize("xi,old_k,new_k", [(0.38, 7, 3), (0.42, 4, 3), (0.5, 3, 2),
                                            (0.6, 3, 2)])
def test_k_smaller_where_the_old_search_was_over_conservative(xi, old_k, new_k):
    # The old k was not the smallest meeting the goal: the sufficient condition
    # P2 <= P1 failed for cells far below ξ.
    theta = nayak_zhang_theta(xi)
    k = nayak_zhang_min_group_size(xi)
    assert k == new_k < old_k
    assert _meets(xi, theta, k)
    assert k == 2 or not _meets(xi, theta, k - 1)


@pytest.mark.parametrize("xi", [1 / 3, 0.3334, 0.34, 0.37, 0.41, 0.44, 0.47, 0.5, 0.55, 0.7])
def test_matches_a_brute_force_search(xi):
    theta = nayak_zhang_theta(xi)
    ref = next(g for g in range(2, 30) if _meets(xi, theta, g))
    assert nayak_zhang_min_group_size(xi) == ref


def test_xi_one_third_keeps_k3_no_deterministic_swap():
    # θ = 1: two singleton cells in a group swap for certain; S_j = 2 cannot occur
    # (NaN), which must not count as meeting the bound.
    theta = nayak_zhang_theta(1 / 3)
    assert theta == 1.0
    assert np.isnan(nayak_zhang_cm_probability([1, 1], theta, (1, 2))[1]).all()
    assert nayak_zhang_min_group_size(1 / 3) == 3


def test_search_cost_is_bounded_and_error_suggests_group_size(monkeypatch):
    calls = []
    real = pram_mod.nayak_zhang_cm_probability

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pram_mod, "nayak_zhang_cm_probability", counting)
    # θ = 0.5 is too small for ξ = 0.34 (a singleton keeps its record w.p. 1/2).
    with pytest.raises(InputError, match="group_size=") as err:
        nayak_zhang_min_group_size(0.34, 0.5, k_max=20)
    assert "k_max=20" in str(err.value)
    # each group size 2..2 k_max − 1 is checked at most once, one call per mix
    assert len(calls) <= sum(h + 1 for h in range(2, 40))
    with pytest.raises(InputError, match="k_max"):
        nayak_zhang_min_group_size(0.5, k_max=1)


def test_nayak_zhang_pram_on_unique_cells_uses_small_groups():
    df = pd.DataFrame({"a": np.arange(40), "b": 0})  # 40 sample-unique cells
    for xi in (0.3335, 0.35):
        res = nayak_zhang_pram(df, ["a", "b"], xi=xi, seed=1)
        assert res.summary["group_size"] == 3  # was InputError / 20
        assert res.summary["n_groups"] == 13
        assert res.summary["max_cm_probability"] <= xi


# --------------------------------------------------------------------------- OLS rank


def _data(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x1": rng.normal(size=n), "g": rng.normal(size=n)})
    df["y"] = 2 + 3 * df.x1 + 0.5 * df.g + rng.normal(size=n)
    return df


def _textbook(y: np.ndarray, x: np.ndarray, level: float = 0.95):
    xx = np.column_stack([np.ones(len(y)), x])
    beta = np.linalg.solve(xx.T @ xx, xx.T @ y)
    n, p = xx.shape
    r = y - xx @ beta
    se = np.sqrt(np.diag(r @ r / (n - p) * np.linalg.inv(xx.T @ xx)))
    t = stats.t.ppf(0.5 + level / 2, n - p)
    return beta, beta - t * se, beta + t * se


def test_constant_regressor_after_protection_gives_nan():
    df = _data()
    prot = sorted_microaggregation(df, "g", k=31).frame
    assert prot["g"].nunique() == 1
    with pytest.warns(UserWarning, match=r"y~\(Intercept\)', 'y~g'"):
        out = ols_ci("y", ["x1", "g"])(prot)
    # Old: y~g = 0.1675 [0.1429, 0.1922], intercept 1.968 (an arbitrary share).
    assert out.loc[["y~(Intercept)", "y~g"]].isna().all().all()
    # x1 is identified: the same as the fit without g, with n − 2 degrees of freedom.
    beta, lo, hi = _textbook(prot["y"].to_numpy(), prot["x1"].to_numpy())
    np.testing.assert_allclose(out.loc["y~x1"].to_numpy(), [beta[1], lo[1], hi[1]], rtol=1e-10)


def test_collinear_regressors_give_nan():
    df = _data().assign(x2=lambda d: 2 * d.x1)
    with pytest.warns(UserWarning, match=r"y~x1', 'y~x2'"):
        out = ols_ci("y", ["x1", "x2"])(df)
    # Old: β_x1 = 0.578 [0.514, 0.643], β_x2 = 1.157 [1.027, 1.286].
    assert out.loc[["y~x1", "y~x2"]].isna().all().all()
    beta, lo, hi = _textbook(df["y"].to_numpy(), df["x1"].to_numpy())
    np.testing.assert_allclose(
        out.loc["y~(Intercept)"].to_numpy(), [beta[0], lo[0], hi[0]], rtol=1e-10
    )


def test_full_rank_fit_is_unchanged_and_silent():
    df = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ols_ci("y", ["x1", "g"])(df)
    beta, lo, hi = _textbook(df["y"].to_numpy(), df[["x1", "g"]].to_numpy())
    np.testing.assert_allclose(out["estimate"], beta, rtol=1e-10)
    np.testing.assert_allclose(out["lo"], lo, rtol=1e-10)
    np.testing.assert_allclose(out["hi"], hi, rtol=1e-10)


def test_benchmark_marks_unidentified_coefficients_not_comparable():
    df = _data()
    prot = sorted_microaggregation(df, "g", k=31).frame
    with pytest.warns(UserWarning, match="cannot be estimated"):
        out = benchmark(df, prot, {"ols": ols_ci("y", ["x1", "g"])}).set_index("parameter")
    # Old: ci_overlap 0.0 for g and 0.944 for the intercept.
    for par in ("y~(Intercept)", "y~g"):
        assert not out.loc[par, "comparable"]
        assert np.isnan(out.loc[par, "ci_overlap"])
        assert np.isnan(out.loc[par, "relative_difference"])
    assert out.loc["y~x1", "comparable"]
    assert 0.0 < out.loc["y~x1", "ci_overlap"] <= 1.0
    same = benchmark(df, df.copy(), {"ols": ols_ci("y", ["x1", "g"])})
    assert same["comparable"].all() and (same["ci_overlap"] == 1.0).all()


def test_ci_overlap_of_a_missing_interval_is_nan():
    got = ci_overlap([0, 0, np.nan], [1, 1, np.nan], [0, np.nan, 0], [1, np.nan, 1])
    assert got[0] == 1.0 and np.isnan(got[1]) and np.isnan(got[2])


def test_k_is_monotone_in_xi():
    # A looser bound never needs larger groups (the old search gave 3, error, 500, 50 ...).
    xis = np.linspace(1 / 3, 0.99, 40)
    ks = [nayak_zhang_min_group_size(float(x)) for x in xis]
    assert ks == [3 if x < 0.5 else 2 for x in xis]


def test_rank_check_never_builds_an_n_by_n_matrix(monkeypatch):
    """The identification check takes the thin SVD: a full one is (n, n), 80 GB at 1e5."""
    import sdcbayes.protection.infoloss as il

    real = np.linalg.svd

    def thin_only(a, full_matrices=True, **kw):
        assert not full_matrices, "full SVD of an (n, p) design"
        return real(a, full_matrices=full_matrices, **kw)

    monkeypatch.setattr(il.np.linalg, "svd", thin_only)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 2))
    rank, aliased = il._aliased(np.column_stack([np.ones(500), x, 2 * x[:, 0]]))
    assert rank == 3 and aliased.tolist() == [False, True, False, True]
