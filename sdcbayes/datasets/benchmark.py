"""A large, memory-lean synthetic file for speed and memory benchmarks.

Only NumPy and pandas are imported here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError

__all__ = ["BENCHMARK_CARDINALITIES", "BENCHMARK_KEYS", "make_benchmark_file"]

BENCHMARK_KEYS: tuple[str, ...] = ("key1", "key2", "key3", "key4", "key5")
BENCHMARK_CARDINALITIES: tuple[int, ...] = (10, 2, 5, 20, 8)
_ZIPF_EXPONENT = 0.8  # skewed marginals: cell sizes vary over orders of magnitude
_HOUSEHOLD_SIZE_P = np.array([0.15, 0.2, 0.25, 0.25, 0.15])  # sizes 1..5, mean 3.05


def make_benchmark_file(n_records: int, seed: int | np.random.Generator = 0) -> pd.DataFrame:
    r"""A benchmark file of independent categorical keys, weights and households.

    Generative model: ``n_records`` records in consecutive households of 1 to
    5 records (mean about 3); five independent keys ``key1``..``key5`` with
    10, 2, 5, 20 and 8 levels and Zipf-like marginals
    :math:`p_j \propto j^{-0.8}` (so the 16,000-cell table has small and large
    cells); a weight per household, uniform on [50, 150], shared by its
    members. Nothing is derived from a census: the file only exercises the
    speed and memory of the cell-table and risk code.

    Memory: keys are Categoricals with int8 codes, household ids int32,
    weights float64 -- about 17 bytes per record (1e7 records: ~170 MB).

    Parameters
    ----------
    n_records : int
        Number of records (>= 1).
    seed : int or numpy.random.Generator, default 0
        Seed; the output is a deterministic function of it.

    Returns
    -------
    pandas.DataFrame
        Columns ``household_id`` (int32), ``key1``..``key5`` (Categoricals
        with labels such as ``"key4_07"``), ``weight`` (float64).

    Raises
    ------
    InputError
        If ``n_records`` is not a positive integer.
    """
    if (
        isinstance(n_records, bool)
        or not isinstance(n_records, (int, np.integer))
        or n_records < 1
    ):
        raise InputError(
            f"n_records must be a positive integer, got {n_records!r}; pass e.g. 1_000_000."
        )
    rng = np.random.default_rng(seed)
    n = int(n_records)

    # Households: enough sizes to cover n records, the last one truncated.
    n_hh = n // 3 + 16
    size_cdf = np.cumsum(_HOUSEHOLD_SIZE_P)[:-1]
    sizes = 1 + np.searchsorted(size_cdf, rng.random(n_hh), side="right")
    while sizes.sum() < n:  # practically never: the sizes sum to ~1.02 n
        sizes = np.concatenate([sizes, np.full(n_hh, 3)])
    household = np.repeat(np.arange(sizes.size, dtype=np.int32), sizes)[:n]
    n_used = int(household[-1]) + 1
    weight = rng.uniform(50.0, 150.0, n_used)[household]

    columns: dict[str, object] = {"household_id": household}
    for name, k in zip(BENCHMARK_KEYS, BENCHMARK_CARDINALITIES, strict=True):
        cdf = np.cumsum(np.arange(1, k + 1, dtype=float) ** (-_ZIPF_EXPONENT))
        cdf = (cdf / cdf[-1]).astype(np.float32)
        # Inverse CDF as a running count of thresholds passed: one pass per
        # category (<= 20), int8 throughout, faster than a binary search.
        u = rng.random(n, dtype=np.float32)
        codes = np.zeros(n, dtype=np.int8)
        for threshold in cdf[:-1]:
            codes += u >= threshold
        labels = [f"{name}_{j:02d}" for j in range(k)]
        columns[name] = pd.Categorical.from_codes(codes, categories=labels)
    columns["weight"] = weight
    return pd.DataFrame(columns)
