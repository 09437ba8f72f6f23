"""Audit N findings on risk/linkage.py, risk/mokken.py and risk/dis.py.

- Finding 4: ``linkage_risk`` was quadratic in n on discrete variables (a k-d
  tree over massively repeated rows). The fast path must give exactly the
  ranks and ties of a full distance matrix; a counting wrapper around the k-d
  tree checks the structure that keeps it near-linear (no timing assertions).
- Finding 7: ``variables="age"`` is one variable, not the columns a, g, e.
- Finding 9: ``LinkageResult.summary()`` carries ``sdcbayes_version`` and the
  settings, and is JSON-serialisable.
- Finding 12: shape mismatches and non-numeric input in mokken.py / dis.py
  raise an InputError naming the arguments, not a raw NumPy error; valid
  input, xarray on different dimensions included, gives the same numbers.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import sdcbayes
from sdcbayes.exceptions import InputError
from sdcbayes.risk import dis
from sdcbayes.risk import linkage as lk
from sdcbayes.risk import mokken as mk
from sdcbayes.risk.linkage import linkage_risk

RTOL = 1e-9  # the module's tie tolerance, restated: the reference below is independent


def brute_force_link(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank (capped at 3), ties at the nearest distance and own distance, from a full matrix.

    Definitions of the module docstring: rank = 1 + #originals strictly closer
    than the own one (relative tolerance 1e-9); for rank 1, n_tied = #originals
    within the own distance (same tolerance), at least 1; else 0.
    """
    d = np.sqrt(((b[:, None, :] - a[None, :, :]) ** 2).sum(axis=2))
    own = np.diag(d)
    closer = (d < own[:, None] * (1 - RTOL)).sum(axis=1)
    rank = np.minimum(1 + closer, 3)
    within = (d <= own[:, None] * (1 + RTOL) + np.finfo(float).tiny).sum(axis=1)
    n_tied = np.where(rank == 1, np.maximum(within, 1), 0)
    return rank, n_tied, own


def _case(kind: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Small original/protected pairs with the tie structures the fast path must handle."""
    rng = np.random.default_rng(seed)
    n = 150
    if kind == "discrete":  # few levels: massive exact ties; PRAM-like change of one variable
        a = rng.integers(0, 3, size=(n, 3)).astype(float)
        b = a.copy()
        flip = rng.random(n) < 0.3
        b[flip, 0] = rng.integers(0, 3, flip.sum())
    elif kind == "continuous":  # a third of the records left unchanged
        a = rng.normal(size=(n, 3)) * [1.0, 10.0, 0.1]
        b = a + rng.normal(scale=0.3, size=a.shape) * [1.0, 10.0, 0.1]
        keep = rng.random(n) < 0.3
        b[keep] = a[keep]
    elif kind == "mixed":  # one coded variable, two continuous ones perturbed for half
        a = np.column_stack([rng.integers(0, 4, n), rng.normal(size=n), rng.normal(size=n)])
        b = a.copy()
        noisy = rng.random(n) < 0.5
        b[noisy, 1:] += rng.normal(scale=0.2, size=(noisy.sum(), 2))
    elif kind == "midpoints":  # exact ties at a distance > 0 (grid midpoints, unit shifts)
        a = rng.integers(0, 4, size=(n, 2)).astype(float)
        b = a + rng.choice([-0.5, 0.0, 0.5, 1.0], size=a.shape)
    else:  # "tolerance": relative changes inside (5e-10) and outside (2e-9) the tie tolerance,
        # negative zeros and sign flips
        a = rng.integers(-2, 3, size=(n, 2)).astype(float) * rng.choice([1.0, -0.0], size=(n, 2))
        b = a * (1 + rng.choice([0.0, 5e-10, 2e-9], size=a.shape))
        flip = rng.random(n) < 0.2
        b[flip] *= -1
    return a, b


@pytest.mark.parametrize("kind", ["discrete", "continuous", "mixed", "midpoints", "tolerance"])
@pytest.mark.parametrize("seed", [0, 1])
def test_linkage_ranks_and_ties_equal_a_full_distance_matrix(kind, seed):
    a, b = _case(kind, seed)
    for standardize in (False, True):
        res = linkage_risk(a, b, standardize=standardize)
        scale = res.scale
        rank, n_tied, own = brute_force_link(a / scale, b / scale)
        np.testing.assert_array_equal(res.rank, rank)
        np.testing.assert_array_equal(res.n_tied, n_tied)
        np.testing.assert_allclose(res.distance, own, rtol=1e-12)
    # the cases do exercise ties: otherwise n_tied would be a trivial check
    if kind in ("discrete", "midpoints", "tolerance"):
        assert np.any(res.n_tied > 1)


def test_linkage_with_every_record_of_a_larger_discrete_file_tied():
    # 3 binary variables, 2000 records: every unchanged record ties with ~250 copies
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2, size=(2000, 3)).astype(float)
    b = a.copy()
    flip = rng.random(2000) < 0.1
    b[flip, 2] = 1 - b[flip, 2]
    res = linkage_risk(a, b, standardize=False)
    rank, n_tied, _ = brute_force_link(a, b)
    np.testing.assert_array_equal(res.rank, rank)
    np.testing.assert_array_equal(res.n_tied, n_tied)
    assert n_tied.max() > 200


def test_discrete_linkage_searches_a_tree_of_distinct_rows_only(monkeypatch):
    # Finding 4: with 5 levels on 3 variables the tree must hold the 125 distinct rows,
    # not 20 000 copies (that degenerated to ~n/125 points per leaf and per ball), and
    # records equal to their original need no search at all. A counting stand-in for
    # cKDTree records the tree size and the number of query points.
    real = lk.cKDTree
    built: list[int] = []
    queried: list[int] = []

    class CountingTree:
        def __init__(self, data, **kwargs):
            self._tree = real(data, **kwargs)
            built.append(len(data))

        def __getattr__(self, name):
            return getattr(self._tree, name)

        def query(self, x, *args, **kwargs):
            queried.append(len(x))
            return self._tree.query(x, *args, **kwargs)

        def query_ball_point(self, x, *args, **kwargs):
            queried.append(len(x))
            return self._tree.query_ball_point(x, *args, **kwargs)

    rng = np.random.default_rng(3)
    n = 20_000
    a = rng.integers(0, 5, size=(n, 3)).astype(float)
    b = a.copy()
    flip = rng.random(n) < 0.2
    b[flip, 0] = rng.integers(0, 5, flip.sum())
    same = ~(b != a).any(axis=1)
    monkeypatch.setattr(lk, "cKDTree", CountingTree)
    res = linkage_risk(a, b, standardize=False)

    assert built == [125]
    # one k-NN query (and at most one ball query) per changed record, none for the others
    assert sum(queried) <= 2 * np.count_nonzero(~same)
    # unchanged records are rank 1, tied with every copy of their row
    _, row, counts = np.unique(a, axis=0, return_inverse=True, return_counts=True)
    assert np.all(res.rank[same] == 1)
    np.testing.assert_array_equal(res.n_tied[same], counts[row.ravel()][same])


def test_linkage_variables_as_a_single_string_is_one_variable():
    # Finding 7: "age" used to become the columns 'a', 'g', 'e' when those existed
    o = pd.DataFrame(
        {"a": [1.0, 2, 3, 4], "g": [9.0, 1, 5, 2], "e": [0.0, 3, 3, 1], "age": [30.0, 40, 50, 60]}
    )
    res = linkage_risk(o, o + 0.1, variables="age")
    assert res.variables == ["age"]
    np.testing.assert_array_equal(res.rank, linkage_risk(o, o + 0.1, variables=["age"]).rank)
    # and a name whose letters are not columns no longer fails on 'i', 'n', 'c', ...
    o2 = pd.DataFrame({"income": [1.0, 2, 3, 4], "age": [30.0, 40, 50, 60]})
    assert linkage_risk(o2, o2 + 0.1, variables="income").variables == ["income"]
    # arrays: one name for one column
    x = np.arange(5.0)[:, None]
    assert linkage_risk(x, x + 0.1, variables="income").variables == ["income"]


def test_linkage_summary_carries_version_and_settings():
    # Finding 9: a summary written to JSON can be traced back to the call
    o = pd.DataFrame({"x": [0.0, 1.0, 3.0], "y": [2.0, 2.0, 5.0]})
    res = linkage_risk(o, o + [0.1, -0.2], variables=["y", "x"], standardize=False)
    s = res.summary()
    assert s["sdcbayes_version"] == sdcbayes.__version__
    assert s["settings"]["variables"] == ["y", "x"]
    assert s["settings"]["standardize"] is False
    assert s["settings"]["tie_rtol"] == RTOL
    assert s["settings"]["scale"] == [1.0, 1.0]
    assert json.loads(json.dumps(s)) == s  # plain JSON, no NumPy scalars
    # the standardised call records its choice and its divisors
    s2 = linkage_risk(o, o + 0.1).summary()
    assert s2["settings"]["standardize"] is True
    assert s2["settings"]["scale"] == pytest.approx(list(o.std(ddof=1)))


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda: mk.disclosure_risk([0.1, 0.2], [0.1, 0.2, 0.3], 100), ["f_a (2,)", "f_u (3,)"]),
        (lambda: mk.expected_disclosures([0.1, 0.2], 0.1, [1, 2, 3]), ["f_a (2,)", "n (3,)"]),
        (lambda: mk.subpopulation_risk([0.1, 0.2], [0.1, 0.2, 0.3], 100), ["f_a", "f_u"]),
        (lambda: mk.total_risk([0.1, 0.05], [0.01, 0.02, 0.03], 100), ["f_a", "f_u"]),
        # n is one value per result: it must fit f_a, f_u without the key axis
        (lambda: mk.total_risk([[0.1, 0.05]] * 4, [[0.01, 0.02]] * 4, [1, 2, 3]),
         ["n (3,)", "without the key axis (4,)"]),
        (lambda: mk.disclosure_risk_hypergeometric([0.1, 0.2], 0.1, [1, 2, 3], 100),
         ["f_a (2,)", "n (3,)"]),
        (lambda: mk.maximal_sample_fraction(0.01, [0.1, 0.2], [0.1, 0.2, 0.3], 1000),
         ["f_a (2,)", "f_u (3,)"]),
        (lambda: mk.uniques_fraction([100, 200], [0.5, 1, 2], 0.01), ["N (2,)", "alpha (3,)"]),
        (lambda: mk.poisson_gamma_alpha([0.1, 0.2], [1, 2, 3]), ["beta (2,)", "k (3,)"]),
        (lambda: mk.expected_union_size([100, 200], [1, 2, 3], 2), ["N (2,)", "a (3,)"]),
        (lambda: mk.multiple_investigator_risk([0.1, 0.2], 10, [100, 200, 300], 5, 2),
         ["f_u (2,)", "N (3,)"]),
        (lambda: mk.minimal_subpopulation_size(0.01, [10, 20], [0.1, 0.2, 0.3], 1.0, 0.01),
         ["a (2,)", "f (3,)"]),
        (lambda: mk.maximal_subpopulation_risk([1, 2, 3], 0.1, [[0.1, 0.2]] * 2),
         ["a (3,)", "without the subpopulation axis (2,)"]),
        (lambda: mk.maximal_subpopulation_risk([1, 2, 3], 0.1, [[0.1, 0.2]] * 2, [[50, 60]] * 2,
                                               method="binomial"),
         ["a (3,)", "without the subpopulation axis (2,)"]),
        (lambda: mk.expected_union_size_unequal([100, 200, 300], [[1, 2]] * 2),
         ["N (3,)", "without the investigator axis (2,)"]),
        (lambda: dis.dis_estimate([1, 2], [1, 2, 3], 0.1), ["n1 (2,)", "n2 (3,)"]),
        (lambda: dis.dis_estimate([1, 2], 2, [0.1, 0.2, 0.3]),
         ["n1 (2,)", "sampling_fraction (3,)"]),
        (lambda: dis.dis_estimate("a", 1, 0.1), ["n1 must be numeric"]),
        (lambda: dis.dis_estimate(1, [None, "x"], 0.1), ["n2 must be numeric"]),
        (lambda: dis.dis_estimate(1, 2, "ten percent"), ["sampling_fraction must be a number"]),
    ],
)
def test_mokken_and_dis_shape_and_type_errors_name_the_arguments(call, names):
    # Finding 12: these were raw "operands could not be broadcast" / "could not convert"
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    for name in names:
        assert name in message
    assert "\n" not in message


def test_mokken_and_dis_numbers_unchanged_for_valid_broadcasting_input():
    # posterior draws (4, 3) against per-key (3,) values and scalars: plain NumPy rules
    rng = np.random.default_rng(5)
    f_u = rng.uniform(0.001, 0.01, size=(4, 3))
    f_a = np.array([0.2, 0.1, 0.05])
    np.testing.assert_allclose(
        mk.disclosure_risk(f_a, f_u, 50.0), -np.expm1(50.0 * np.log1p(-f_a * f_u)), rtol=1e-14
    )
    np.testing.assert_allclose(
        mk.subpopulation_risk(f_a, f_u, [10.0, 20.0, 30.0]),
        -np.expm1(-(np.array([10.0, 20.0, 30.0]) * f_a * f_u).sum(axis=-1)),
        rtol=1e-14,
    )
    # a per draw against f_u (draw, subpopulation): a fits the reduced shape
    a = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(
        mk.maximal_subpopulation_risk(a, 0.1, f_u), -np.expm1(-a * (0.1 * f_u).max(axis=-1))
    )
    theta = dis.dis_estimate([10, 20], 5, [0.1, 0.2])
    # pi n1 / (pi n1 + 2 (1 - pi) n2) element by element
    np.testing.assert_allclose(theta, [1 / (1 + 2 * 0.9 * 5), 4 / (4 + 2 * 0.8 * 5)])


def test_multiple_investigator_risk_with_dataarrays_on_different_dims():
    # N per region and a per draw, equal lengths on different dims: broadcast by name
    # to (region, draw), never paired by position
    N = xr.DataArray([1000.0, 5000.0, 20000.0], dims="region")
    a = xr.DataArray([10.0, 50.0, 200.0], dims="draw")
    r = mk.multiple_investigator_risk(0.01, 100.0, N, a, 3)
    assert set(r.dims) == {"region", "draw"}
    ref = np.array(
        [[mk.multiple_investigator_risk(0.01, 100.0, n_, a_, 3) for a_ in a.values]
         for n_ in N.values]
    )
    np.testing.assert_allclose(r.transpose("region", "draw").values, ref, rtol=1e-14)
    # and keyword DataArrays on different dims in disclosure_risk
    f_u = xr.DataArray([0.01, 0.02, 0.03], dims="region")
    r2 = mk.disclosure_risk(f_a=a / 1e4, f_u=f_u, n=100.0)
    ref2 = np.array([[mk.disclosure_risk(x / 1e4, y, 100.0) for x in a.values]
                     for y in f_u.values])
    np.testing.assert_allclose(r2.transpose("region", "draw").values, ref2, rtol=1e-14)
