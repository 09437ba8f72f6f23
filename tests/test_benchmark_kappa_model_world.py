"""benchmarks/kappa_model_world.py: the cross-validated kappa in samples drawn from the fit.

The sampler is checked against the negative binomial it claims to draw exactly (cell by
cell on a key space small enough to enumerate), the rows and the summary on a toy sample.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark

from sdcbayes.models.latent_class import LatentClassModel


@pytest.fixture(scope="module")
def mw():
    return load_benchmark("kappa_model_world.py")


def _tiny(structural_zeros=None):
    # 3 x 4 keys, two classes; the fit is set by hand, so the check does not rest on EM
    cells = np.array([[0, 0], [1, 1], [2, 3]])
    model = LatentClassModel(cells, [1, 2, 1], [3, 4], keys=["a", "b"], n_classes=2,
                             structural_zeros=structural_zeros)
    fit = {"w": np.array([0.7, 0.3]),
           "phi": [np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]]),
                   np.array([[0.4, 0.3, 0.2, 0.1], [0.1, 0.1, 0.3, 0.5]])]}
    return model, fit


@pytest.mark.parametrize("kappa", [0.4, np.inf])
def test_simulated_cells_are_negative_binomial(mw, kappa):
    # every cell of the key space: the share of draws it is empty and its mean count
    # against NB(kappa, n pi_k) (Poisson at inf), with the rule {a = 2, b = 0} a
    # structural zero that must never be drawn
    model, fit = _tiny(structural_zeros=[{"a": [2], "b": [0]}])
    all_cells = np.indices((3, 4)).reshape(2, -1).T
    pi = model.cell_probabilities(fit["w"], fit["phi"], codes=all_cells)
    assert pi[8] == 0.0 and pi.sum() == pytest.approx(1.0)
    n, reps = 12.0, 6000
    rng = np.random.default_rng(5)
    counts = np.zeros((reps, 12))
    for i in range(reps):
        cells, f = mw.simulate_sample(model, fit, kappa, rng, n=n)
        counts[i, cells[:, 0] * 4 + cells[:, 1]] = f
    assert not counts[:, 8].any()
    mu = n * pi
    if np.isfinite(kappa):
        p0 = (kappa / (kappa + mu)) ** kappa
        var = mu + mu**2 / kappa
    else:
        p0, var = np.exp(-mu), mu
    ok = pi > 0
    # 4.5 Monte Carlo standard errors: a cell-by-cell check that holds with these seeds
    se0 = np.sqrt(p0 * (1 - p0) / reps)
    assert np.all(np.abs((counts == 0).mean(axis=0)[ok] - p0[ok]) < 4.5 * se0[ok])
    se = np.sqrt(var / reps)
    assert np.all(np.abs(counts.mean(axis=0)[ok] - mu[ok]) < 4.5 * se[ok])
    # the overdispersion shows in the variance of the largest cell
    j = int(np.argmax(mu))
    assert counts[:, j].var() == pytest.approx(var[j], rel=0.15)


def test_rows_and_summary(mw, monkeypatch):
    # a toy sample; the cross-validation replaced by a stub returning a fixed read per
    # model size keeps the test fast while checking the plumbing and the summary's sums
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({k: rng.choice([f"v{i}" for i in range(8)], 300)
                          for k in ("x", "y", "z")})
    toy = LatentClassModel.from_frame(frame, ["x", "y", "z"], n_classes=4)
    seen = []

    def fake_read(model, N, seed):
        seen.append(model.n)
        return 0.0 if model is toy else np.log(2.0)

    monkeypatch.setattr(mw, "_read", fake_read)
    truth = type("T", (), {"tau1": float((toy.key_counts == 1).sum()) * 0.5})()
    rows = mw.sample_rows("toy/1%", 0, toy, 30 * toy.n, truth, 0, kappas=(0.5, 4.0), draws=3)
    assert len(rows) == 1 + 2 * 3 and rows[0]["kappa0"] != rows[0]["kappa0"]  # nan first
    assert [r["kappa0"] for r in rows[1:]] == [0.5] * 3 + [4.0] * 3
    # the simulated samples are about the real one's size (Poisson, sd sqrt(300))
    assert all(abs(r["n"] - 300) < 80 for r in rows[1:]) and len(seen) == 7
    table = mw.summarise(pd.DataFrame(rows)).set_index("kappa0")
    assert table.loc["real", "read_mean"] == 0.0
    assert table.loc["0.5", "offset"] == pytest.approx(np.log(2.0) - np.log(0.5))
    assert table.loc["4", "offset"] == pytest.approx(np.log(2.0) - np.log(4.0))
    assert table.loc["4", "read_sd"] == 0.0 and table.loc["0.5", "samples"] == 1


def test_simulated_total_is_poisson_with_poisson_cells(mw):
    # Poisson cells, no structural zeros: the sample's size is Poisson(n)
    model, fit = _tiny()
    rng = np.random.default_rng(1)
    totals = np.array([mw.simulate_sample(model, fit, np.inf, rng, n=40.0)[1].sum()
                       for _ in range(3000)])
    assert abs(totals.mean() - 40) < 4 * np.sqrt(40 / 3000)
    assert totals.var() == pytest.approx(40, rel=0.1)
