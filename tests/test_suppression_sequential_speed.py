"""local_suppression(method="sequential"): the fast search gives the plain rule's result.

``_sequential_pass`` finds each queued record's nearest patterns through hashed
distance-1 tables, a scan of all patterns, or (for key sets too large to pack) one-hot
distance products, and splits a pass into blocks. Every path is compared here,
suppression by suppression, with a plain statement of sdcMicro's record-by-record rule
(``reference_sequential``: a loop over records, O(n^2 p) per record), on small random
files with missing values, strata, combs and several k.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

import sdcbayes.protection.suppression as supp
from sdcbayes.protection import local_suppression, wildcard_frequencies


def reference_sequential(codes, k, importance, strata=None, combs=None, distances=None):
    """sdcMicro's localSuppression (alpha = 1) record by record; codes -1 = missing.

    Within each stratum (k lowered to the stratum size) and each key subset of the
    sizes in ``combs`` (default: all keys): passes over the records with f_i < k in
    increasing f_i (file order for ties); each record blanks the least important key
    on which it differs from one of its nearest records (smallest Hamming distance
    above 0, keys observed in both); nothing when every record matches it.
    ``distances`` (a list) receives each processed record's nearest distance (None
    when every record matches it).
    """
    x = codes.copy()
    n, p = x.shape
    strata = np.zeros(n, dtype=int) if strata is None else np.asarray(strata)
    for size in combs or [p]:
        for sub in itertools.combinations(range(p), size):
            sub = list(sub)
            order = np.argsort(-np.asarray(importance)[sub], kind="stable")
            for s in np.unique(strata):
                rows = np.flatnonzero(strata == s)
                y = x[np.ix_(rows, sub)]
                _reference_stratum(y, min(k, rows.size), order, distances)
                x[np.ix_(rows, sub)] = y
    return x


def _reference_stratum(y, k, order, distances):
    n, p = y.shape

    def differ(i, j, c):
        return y[i, c] >= 0 and y[j, c] >= 0 and y[i, c] != y[j, c]

    while True:
        f = [sum(not any(differ(i, j, c) for c in range(p)) for j in range(n))
             for i in range(n)]
        queue = [i for i in np.argsort(f, kind="stable") if f[i] < k]
        if not queue:
            return
        for i in queue:
            d = [sum(differ(i, j, c) for c in range(p)) for j in range(n)]
            positive = [dj for dj in d if dj > 0]
            if not positive:
                if distances is not None:
                    distances.append(None)
                continue
            m = min(positive)
            if distances is not None:
                distances.append(m)
            near = [j for j in range(n) if d[j] == m]
            for c in order:
                if y[i, c] >= 0 and any(differ(i, j, c) for j in near):
                    y[i, c] = -1
                    break


def random_file(seed, n, cards, p_missing, n_strata=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"k{j}": rng.integers(0, c, n) for j, c in enumerate(cards)})
    for c in list(df.columns):
        df[c] = df[c].mask(rng.random(n) < p_missing)
    if n_strata:
        df["s"] = rng.integers(0, n_strata, n)
    return df


#: monkeypatches selecting each path of _sequential_pass
PATHS = {
    "default": {},
    "all tabled": {"_SEQUENTIAL_TABLE_BREAK_EVEN": 0},
    "some tabled": {"_SEQUENTIAL_TABLE_BREAK_EVEN": 2},
    "tiny blocks": {"_SEQUENTIAL_TABLE_BREAK_EVEN": 0, "_SEQUENTIAL_BLOCK_KEYS": 40},
    "products": {"_SEQUENTIAL_KEY_LIMIT": 1, "_SEQUENTIAL_BLOCK_CELLS": 300},
}

CASES = [  # seed, n, cards, p_missing, k, n_strata, combs
    (0, 120, (3, 4, 2, 5, 3), 0.0, 2, 0, None),
    (1, 120, (3, 4, 2, 5, 3), 0.0, 3, 0, None),
    (2, 150, (4, 6, 2, 8, 3), 0.1, 3, 0, None),
    (3, 120, (3, 4, 2, 5, 3), 0.25, 2, 0, None),
    (4, 100, (3, 3, 4, 2), 0.05, 5, 0, None),
    (5, 150, (3, 5, 4, 6), 0.1, 3, 3, None),
    (6, 90, (3, 4, 2, 5), 0.15, 2, 0, [3, 2]),
    (7, 80, (6, 7, 5), 0.0, 4, 2, [3, 1]),
]


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("case", CASES, ids=[f"seed{c[0]}" for c in CASES])
def test_every_path_matches_the_record_by_record_rule(monkeypatch, path, case):
    seed, n, cards, p_missing, k, n_strata, combs = case
    for name, value in PATHS[path].items():
        monkeypatch.setattr(supp, name, value)
    df = random_file(seed, n, cards, p_missing, n_strata)
    keys = [c for c in df.columns if c != "s"]
    imp = np.random.default_rng(seed + 100).permutation(len(keys)) + 1
    kw = {"strata": "s"} if n_strata else {}
    res = local_suppression(df, keys, k=k, importance=imp.tolist(), combs=combs,
                            method="sequential", **kw)
    codes = df[keys].fillna(-1).to_numpy(dtype=np.int64)
    expected = reference_sequential(codes, k, imp, df["s"].to_numpy() if n_strata else None,
                                    combs)
    np.testing.assert_array_equal(res.frame[keys].isna().to_numpy(), expected < 0)
    assert res.summary["total_suppressions"] == int(((expected < 0) & (codes >= 0)).sum())
    for size in combs or [len(keys)]:
        for sub in itertools.combinations(keys, size):
            f = wildcard_frequencies(res.frame, list(sub), strata=kw.get("strata"))
            if not n_strata:
                assert f.min() >= min(k, len(df))


def test_only_records_without_a_neighbour_at_distance_one_scan(monkeypatch):
    # With tables for every queued pattern, a record is compared with all patterns only
    # when no pattern is at distance 1 (the quadratic step the tables replace).
    monkeypatch.setattr(supp, "_SEQUENTIAL_TABLE_BREAK_EVEN", 0)
    scans = []
    scan = supp._scan_nearest

    def counted(*args):
        scans.append(args[3])
        return scan(*args)

    monkeypatch.setattr(supp, "_scan_nearest", counted)
    df = random_file(11, 200, (4, 6, 3, 8, 5), 0.05)
    keys = list(df.columns)
    imp = np.arange(1, len(keys) + 1)
    res = local_suppression(df, keys, k=3, importance=imp.tolist(), method="sequential")
    distances = []
    expected = reference_sequential(df.fillna(-1).to_numpy(dtype=np.int64), 3, imp,
                                    distances=distances)
    np.testing.assert_array_equal(res.frame.isna().to_numpy(), expected < 0)
    assert distances.count(1) > 100  # most records have a neighbour at distance 1
    assert len(scans) == sum(d != 1 for d in distances)


def test_distance_one_tables_follow_patterns_that_come_and_go():
    rng = np.random.default_rng(5)
    radices = [4, 3, 5, 3]  # levels + 1
    universe = np.unique(np.column_stack(
        [rng.integers(-1, r - 1, 300) for r in radices]).astype(np.int16), axis=0)
    queries = universe[rng.choice(len(universe), 40, replace=False)]
    queries = queries[(queries >= 0).any(axis=1)]
    masks = np.unique(universe < 0, axis=0)
    weights = np.cumprod([1] + radices[:-1]).astype(np.int64)
    tables = supp._DistanceOneTables(queries, masks, weights, int(np.prod(radices)))
    present = rng.random(len(universe)) < 0.5
    tables.add_all(universe[present])

    def brute(q):
        both = (universe >= 0) & (q >= 0)
        diff = both & (universe != q)
        one = present & (diff.sum(axis=1) == 1)
        return diff[one].any(axis=0)

    for _ in range(60):
        for r, q in enumerate(queries):
            np.testing.assert_array_equal(tables.keys_at_distance_one(r), brute(q))
        u = int(rng.integers(len(universe)))
        tables.update(universe[u:u + 1], np.array([-1 if present[u] else 1]))
        present[u] = not present[u]


@pytest.mark.parametrize("p", [5, 70])
def test_unique_rows_by_bit_codes_or_rows(p):
    mask = np.random.default_rng(p).random((200, p)) < 0.03
    rows, inv = supp._unique_rows(mask)
    assert len(np.unique(rows, axis=0)) == len(rows) == len(np.unique(mask, axis=0))
    np.testing.assert_array_equal(rows[inv], mask)
