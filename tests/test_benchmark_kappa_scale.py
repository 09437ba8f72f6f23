"""benchmarks/kappa_scale.py: the cross-validated kappa by part size and extrapolation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark

from sdcbayes.models.latent_class import KAPPA_GRID, LatentClassModel


@pytest.fixture(scope="module")
def ks():
    return load_benchmark("kappa_scale.py")


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({k: rng.choice(list("abcdefgh"[:L]), 400) for k, L in
                          (("x", 8), ("y", 5), ("z", 4))})
    return LatentClassModel.from_frame(frame, ["x", "y", "z"], n_classes=4)


def test_reads_count_the_part_uniques_left_unique(ks, toy):
    rows = pd.DataFrame(ks.part_reads(toy, np.random.default_rng(0), em_restarts=1))
    assert [(r, e) for r, e in zip(rows.r, rows.e, strict=True)] == [
        (2, 1), (4, 1), (4, 3), (8, 1), (8, 3), (8, 7)]
    su = int((toy.key_counts == 1).sum())
    # the whole rest (e = r - 1): a part-unique left alone by the rest is a sample unique,
    # and every sample unique is unique in its part
    whole = rows[rows.e == rows.r - 1]
    assert su > 20 and (whole.observed == su).all()
    # nested subsets of the rest: a larger one leaves fewer part-uniques alone
    r8 = rows[rows.r == 8].set_index("e").observed
    assert r8[1] >= r8[3] >= r8[7] and r8[1] > r8[7]
    assert rows.censored.isin([-1, 0, 1]).all()
    logk = np.log(KAPPA_GRID[np.isfinite(KAPPA_GRID)])
    assert rows.read.between(logk[0], logk[-1]).all()
    # at the Poisson end the prediction is the sum of e^-lambda, below the part-uniques
    assert (rows.predicted_poisson > 0).all()
    with pytest.raises(ValueError, match="ratio 4"):
        ks.part_reads(toy, np.random.default_rng(0), plan={4: (5,)})


def test_em_oracle_finds_the_kappa_of_the_plug_in(ks):
    # sparse keys (n pi well below 1 for the sample uniques, as on the real designs):
    # the plug-in tau1 rises with kappa
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({k: rng.choice([f"v{i}" for i in range(10)], 300)
                          for k in ("x", "y", "z", "u")})
    toy = LatentClassModel.from_frame(frame, ["x", "y", "z", "u"], n_classes=4)
    priors, fit = ks.part_priors(toy, np.random.default_rng(1), 1)
    assert priors == toy.priors  # no learnt profile mass on these keys
    su = np.flatnonzero(toy.key_counts == 1)
    N = 10.0 * toy.n
    pi = np.asarray(toy.key_cell_probabilities(fit["w"], fit["phi"], toy.key_codes[su]))
    curve = ks._curve((N - toy.n) * pi[None, :], toy.n * pi[None, :])
    i = 25  # a finite grid point inside the curve's range
    row = ks.em_oracle(toy, fit, N, curve[i])
    assert row["r"] == 1 and row["e"] == 9 and row["censored"] == 0
    assert row["read"] == pytest.approx(np.log(KAPPA_GRID[i]), abs=1e-6)
    assert row["predicted_poisson"] == pytest.approx(curve[-1])
    # a truth above every kappa's plug-in is censored at the grid's top
    assert ks.em_oracle(toy, fit, N, su.size + 1.0)["censored"] == 1


def test_summarise_means_per_cell_over_samples_with_an_oracle(ks):
    per = pd.DataFrame({
        "design": ["d"] * 6, "replicate": [0, 0, 0, 1, 1, 1],
        "r": [4, 8, 1, 4, 8, 1], "e": [3, 7, 19, 3, 7, 19],
        "read": [0.5, -0.5, 1.0, 1.5, 0.5, 9.0], "censored": [0, 1, 0, 0, 0, 1]})
    s = ks.summarise(per).set_index("design")
    # sample 1's EM oracle is censored: only sample 0 counts
    assert list(s.columns[:3]) == ["r4e3", "r8e7", "em_oracle"]
    assert s.at["d", "r4e3"] == 0.5 and s.at["d", "em_oracle"] == 1.0
    assert s.at["d", "samples"] == 1 and s.at["d", "censored_reads"] == 0.5
    gibbs = pd.DataFrame({"design": ["d", "d"], "replicate": [0, 1], "rule": "default",
                          "cv_median": [0.2, 0.4], "oracle": [-0.3, 0.1], "censored": [0, 0]})
    s = ks.summarise(per, gibbs).set_index("design")
    assert s.at["d", "gibbs_oracle"] == -0.3 and s.at["d", "default_median"] == 0.2
