"""benchmarks/uniqueness_by_group.py: per-sample-unique predictions against the truth."""

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark

from sdcbayes.validation import (
    Population,
    _draw,
    _draw_households,
    _population_cells,
    truth_of_sample,
)


@pytest.fixture(scope="module")
def ubg():
    return load_benchmark("uniqueness_by_group.py")


def test_by_group_sums_and_errors(ubg):
    table = pd.DataFrame({
        "hsize": ["1", "1", "2", "2", "2"],
        "age": [10, 30, 50, 70, 90],
        "lambda": [0.1, 0.5, 3.0, 5.0, 20.0],
        "pred_unique": [0.9, 0.5, 0.1, 0.0, 0.0],
        "true_unique": [1.0, 1.0, 0.0, 1.0, 0.0],
        "pred_inverse": [0.95, 0.7, 0.4, 0.2, 0.05],
        "true_inverse": [1.0, 1.0, 0.5, 1.0, 0.25],
    })
    g = ubg.by_group(table, "hsize")
    assert g.loc["1", "sample_uniques"] == 2 and g.loc["2", "sample_uniques"] == 3
    assert g.loc["1", "pred_unique"] == pytest.approx(1.4)
    assert g.loc["1", "tau1_error"] == pytest.approx(1.4 / 2 - 1)
    assert g.loc["2", "tau2_error"] == pytest.approx(0.65 / 1.75 - 1)
    cut = ubg.by_group(table, "age:40,80")
    assert cut.sample_uniques.tolist() == [2, 2, 1]
    lam = ubg.by_group(table, "lambda")
    assert lam.sample_uniques.sum() == 5 and len(lam) == 5  # bands 0-0.3, 0.3-1, 2-4, 4-8, 16+


def test_sample_unique_table_matches_the_harness_truth(ubg):
    rng = np.random.default_rng(7)
    N = 3000
    frame = pd.DataFrame({
        "a": rng.choice(list("abcdef"), N, p=[0.4, 0.2, 0.15, 0.1, 0.1, 0.05]),
        "b": rng.choice(list("xyz"), N),
        "c": rng.integers(0, 25, N).astype(str),
    })
    pop = Population(name="toy", frame=frame, keys=("a", "b", "c"), strata=None)
    levels = {k: sorted(frame[k].unique()) for k in pop.keys}
    table = ubg.sample_unique_table("toy", pop, levels, 0.1, replicates=1, seed=3)
    index, _ = _draw(np.random.default_rng([3, 0]), None, 0.1, N)
    truth = truth_of_sample(*_population_cells(frame, list(pop.keys)), index)
    # one row per sample unique, scored against the harness's own truth
    assert len(table) == (truth.record_fk == 1).sum()
    assert table.true_unique.sum() == truth.tau1
    assert table.true_inverse.sum() == pytest.approx(truth.tau2)
    assert table.pred_unique.between(0, 1).all()
    assert (table.pred_inverse >= table.pred_unique - 1e-12).all()  # E(1/F) >= P(F = 1)
    assert (table["lambda"] > 0).all()


def test_household_samples_take_whole_households_and_score_the_same_truth(ubg):
    rng = np.random.default_rng(8)
    n_hh = 1200
    size = rng.integers(1, 4, n_hh)
    hh = np.repeat(np.arange(n_hh), size)
    frame = pd.DataFrame({
        "a": rng.choice(list("abcdef"), hh.size, p=[0.4, 0.2, 0.15, 0.1, 0.1, 0.05]),
        "b": rng.choice(list("xyz"), hh.size),
        "c": rng.integers(0, 25, hh.size).astype(str),
        "hid": hh,
    })
    pop = Population(name="toy", frame=frame, keys=("a", "b", "c"), household="hid")
    levels = {k: sorted(frame[k].unique()) for k in pop.keys}
    table = ubg.sample_unique_table("toy", pop, levels, 0.1, replicates=1, seed=3,
                                    kind="household")
    index, _ = _draw_households(np.random.default_rng([3, 0]), hh, 0.1)
    assert np.unique(hh[index]).size == round(0.1 * n_hh)
    assert np.array_equal(np.bincount(hh[index], minlength=n_hh)[np.unique(hh[index])],
                          size[np.unique(hh[index])])  # whole households
    truth = truth_of_sample(*_population_cells(frame, list(pop.keys)), index)
    assert len(table) == (truth.record_fk == 1).sum()
    assert table.true_unique.sum() == truth.tau1
    assert table.pred_unique.between(0, 1).all()
