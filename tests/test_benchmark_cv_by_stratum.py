"""benchmarks/cv_by_stratum.py: the cross-validation's held-out count split by stratum.

Checked: the kappa reading against a prediction curve built to cross T at a known
kappa (and its censoring at the grid's ends); on a small sample, that the strata's
rows add up to what a random partition must give (every sample unique is unique in
its part: T summed over the parts and strata is the number of sample uniques, for
each ratio), that predictions converge at the grid's top and stay within the
part-uniques' count; and the summary's pooled reading. The population-scale rows: summed
over the strata they are kappa_rules.record_sample's per-kappa tau1 means on the same
model and seeds, and each stratum's counts are its sample uniques and their truths.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark


@pytest.fixture(scope="module")
def cbs():
    return load_benchmark("cv_by_stratum.py")


def _rows(cbs, T, pred, **extra):
    return pd.DataFrame([{"T": T, "m": 100, **{f"P{i}": v for i, v in enumerate(pred)},
                          **extra}])


def test_point_kappa_reads_where_the_prediction_meets_t(cbs):
    logk = np.log(cbs.GRID)
    pred = 50.0 + 10.0 * (logk - logk[0])  # rises linearly in log kappa
    target = np.log(2.0)
    T = 50.0 + 10.0 * (target - logk[0])
    assert cbs.point_kappa(_rows(cbs, T, pred)) == pytest.approx(target, abs=1e-6)
    # summed over rows: two halves of the same curve read the same kappa
    two = pd.concat([_rows(cbs, T / 2, pred / 2), _rows(cbs, T / 2, pred / 2)])
    assert cbs.point_kappa(two) == pytest.approx(target, abs=1e-6)
    # T outside the predictions: the grid's ends (censored readings)
    assert cbs.point_kappa(_rows(cbs, 1.0, pred)) == pytest.approx(logk[0])
    assert cbs.point_kappa(_rows(cbs, 1e6, pred)) == pytest.approx(logk[-1])


def test_held_out_rows_add_up(cbs):
    rng = np.random.default_rng(3)
    n = 240
    frame = pd.DataFrame({"a": rng.choice(list("abcdefgh"), n),
                          "b": rng.choice(list("pqrst"), n, p=[.4, .3, .15, .1, .05]),
                          "c": rng.choice(list("xyz"), n)})
    stratum = (frame.a.isin(["a", "b"])).to_numpy().astype(int)
    w = np.where(stratum == 1, 5.0, 30.0)
    rows = pd.DataFrame(cbs.held_out_by_stratum(frame, ["a", "b", "c"], stratum, weights=w,
                                                ratios=(2, 4), n_classes=3, seed=1))
    assert set(rows.stratum) <= {0, 1} and set(rows.ratio) == {2, 4}
    cells = frame.agg("|".join, axis=1)
    uniques = int((cells.value_counts() == 1).sum())
    for _, g in rows.groupby("ratio"):
        assert g["T"].sum() == uniques  # each sample unique is unique in its own part
        assert g.m.sum() >= uniques
    pcols = [f"P{i}" for i in range(cbs.GRID.size)]
    pred = rows[pcols].to_numpy()
    # at the grid's top the cells are nearly Poisson: the prediction has converged
    assert pred[:, -1].sum() == pytest.approx(pred[:, -2].sum(), rel=0.01)
    assert np.all(pred >= 0) and np.all(pred <= rows.m.to_numpy()[:, None] + 1e-9)
    # the stratum split is a split: both strata hold part-uniques here
    assert rows.groupby("stratum").m.sum().min() > 0
    rows = rows.assign(kind="x", replicate=0)
    summ = cbs.summarise(rows).set_index("stratum")
    assert summ.at["all", "log_kappa_pooled"] == pytest.approx(cbs.point_kappa(rows))
    assert summ.at["all", "samples"] == 1


def test_population_rows_are_the_samplers_tau1_split_by_stratum(cbs):
    # the same model, seeds and sampler as kappa_rules.record_sample: summed over the
    # strata, the predicted counts are its per-kappa posterior means of tau1, and the
    # truth counts every sample unique once
    rules = load_benchmark("kappa_rules.py")
    rng = np.random.default_rng(7)
    n = 300
    frame = pd.DataFrame({"a": rng.choice(list("abcdefgh"), n),
                          "b": rng.choice(list("pqrst"), n, p=[.4, .3, .15, .1, .05]),
                          "c": rng.choice(list("xyz"), n)})
    stratum = frame.a.isin(["a", "b"]).to_numpy().astype(int)
    w = np.where(stratum == 1, 5.0, 30.0)
    N = float(w.sum())
    truth = rng.random(n) < 0.4  # any labelling: only its sums per stratum are checked
    rows = pd.DataFrame(cbs.population_by_stratum(frame, ["a", "b", "c"], stratum, truth, N,
                                                  weights=w, seed=2))
    model = rules.LatentClassModel.from_frame(
        frame, ["a", "b", "c"], n_classes=30,
        priors={"phi": dict(rules.PHI_PRIOR_DEFAULT)}, weights=pd.Series(w))
    rec = rules.record_sample(model, N, 2, [0, 1])
    pcols = [f"P{i}" for i in range(cbs.GRID.size)]
    np.testing.assert_allclose(rows[pcols].sum().to_numpy(), rec["m1"][:cbs.GRID.size],
                               rtol=1e-10)
    cells = frame.agg("|".join, axis=1)
    unique = cells.map(cells.value_counts()).to_numpy() == 1
    assert rows.m.sum() == unique.sum()
    for s, g in rows.groupby("stratum"):
        assert g.m.sum() == (unique & (stratum == s)).sum()
        assert g["T"].sum() == (unique & (stratum == s) & truth).sum()
