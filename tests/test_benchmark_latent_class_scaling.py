"""benchmarks/latent_class_scaling.py: the default model on large files.

Checked on a small size (the benchmark itself runs 10^4 to 10^6 records): the sample is
a simple random sample of 10% of a synthetic census, its weight N/n, and its true tau1
and tau2 those of a direct count over the population; the peak-memory reader and the
summary lookup the table relies on.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchtools import load_benchmark

from sdcbayes.datasets.census import simulate_population
from sdcbayes.datasets.demo import DEMO_KEYS


@pytest.fixture(scope="module")
def lcs():
    return load_benchmark("latent_class_scaling.py")


def test_sample_and_truth_against_a_direct_count(lcs):
    n = 3000
    sample, (tau1, tau2) = lcs.make_sample(n, seed=2)
    pop = simulate_population(int(round(n / lcs.FRACTION / lcs.PERSONS_PER_HOUSEHOLD)), seed=2)
    keys = list(DEMO_KEYS)
    assert len(sample) == n and list(sample.columns) == keys + ["weight"]
    assert sample["weight"].iloc[0] == pytest.approx(len(pop) / n)
    assert 0.08 < n / len(pop) < 0.12
    # truth by brute force: population counts of the sample uniques' key combinations
    key = lambda f: f[keys].astype(str).agg("|".join, axis=1)  # noqa: E731
    F = key(pop).value_counts()
    fk = key(sample).value_counts()
    uniques = fk.index[fk.to_numpy() == 1]
    Fu = F.reindex(uniques).to_numpy()
    assert tau1 == (Fu == 1).sum() and tau2 == pytest.approx((1.0 / Fu).sum(), rel=1e-12)
    # the sample is a subset of the population's rows: every sample cell exists there
    assert F.reindex(fk.index).notna().all()
    assert (F.reindex(fk.index).to_numpy() >= fk.to_numpy()).all()


def test_peak_memory_and_summary_lookup(lcs):
    peak = lcs.peak_mib()
    big = np.ones(40 * 2**20 // 8)  # 40 MiB touched: the high-water mark is at least that
    big += 1.0
    assert lcs.peak_mib() >= max(peak, 40.0)
    assert lcs._find({"a": 1, "b": {"c": {"sampling_time_s": 2.5}}}, "sampling_time_s") == 2.5
    assert lcs._find({"a": 1}, "missing") is None
    del big


def test_interval_summary_coverage_and_z(lcs):
    # interval half-width 1.645 -> posterior sd 1: z is the error itself
    rows = [{"size": 10, "tau1": 100 + e, "tau1_true": 100.0, "tau1_lo": 100 + e - 1.645,
             "tau1_hi": 100 + e + 1.645, "tau2": 50.0, "tau2_true": 50.0, "tau2_lo": 49.0,
             "tau2_hi": 51.0} for e in (0.5, 2.5)]
    rows.append({**rows[0], "size": 20})
    lines = lcs.interval_summary(rows)
    assert len(lines) == 2
    assert "2 samples" in lines[0]
    # z: 0.5 and 2.5, sd (ddof 1) 1.41
    assert "tau1 error +1.5%, cover 0.50, mean z +1.5, z sd 1.4" in lines[0]
    assert "tau2 error +0.0%, cover 1.00, mean z +0.0, z sd 0.0" in lines[0]
    assert "1 samples" in lines[1] and "cover 1.00, mean z +0.5, z sd nan" in lines[1]


def test_household_twins_against_a_direct_count(lcs):
    n = 2000
    sample, (tau1, _), pop, index = lcs.make_sample(n, seed=3, population=True)
    keys = list(DEMO_KEYS)
    got = lcs.household_twins(pop, keys, index)
    # brute force: per sample unique, its population twins split by household
    key = pop[keys].astype(str).agg("|".join, axis=1)
    hh = pop["household_id"].to_numpy()
    fk = key.iloc[index].value_counts()
    uniques = [i for i in index if fk[key.iloc[i]] == 1]
    own = 0
    t1 = t1_without = 0
    for i in uniques:
        twins = np.flatnonzero(key.to_numpy() == key.iloc[i])
        twins = twins[twins != i]
        in_own = int((hh[twins] == hh[i]).sum())
        own += in_own > 0
        t1 += twins.size == 0
        t1_without += twins.size - in_own == 0
    assert got == {"uniques": len(uniques), "tau1": t1, "tau1_without_own_household": t1_without,
                   "with_own_household_twin": own}
    assert got["tau1"] == tau1
    # a census of families: siblings of one sex and age group make some such twins
    assert 0 < own < len(uniques) and t1_without >= t1


def test_interval_summary_per_truncation_level(lcs):
    row = {"size": 10, "tau1": 100.0, "tau1_true": 100.0, "tau1_lo": 99.0, "tau1_hi": 101.0,
           "tau2": 50.0, "tau2_true": 50.0, "tau2_lo": 49.0, "tau2_hi": 51.0}
    lines = lcs.interval_summary([{**row, "classes": 30}, {**row, "classes": 100, "tau1": 98.0}])
    assert len(lines) == 2 and "at H = 30, 1 samples" in lines[0]
    assert "at H = 100" in lines[1] and "tau1 error -2.0%" in lines[1]
