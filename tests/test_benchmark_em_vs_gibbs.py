"""benchmarks/em_vs_gibbs.py: tau1 with Poisson cells from the EM point and the Gibbs average."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark

from sdcbayes.models.latent_class import LatentClassModel


@pytest.fixture(scope="module")
def eg():
    return load_benchmark("em_vs_gibbs.py")


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({k: rng.choice(list("abcdefgh"[:L]), 400) for k, L in
                          (("x", 8), ("y", 5), ("z", 4))})
    return LatentClassModel.from_frame(frame, ["x", "y", "z"], n_classes=4)


def test_both_count_every_sample_unique_when_nothing_lies_outside(eg, model):
    # N = n: no one outside the sample, so every sample unique is population-unique
    su = int((model.key_counts == 1).sum())
    em, gibbs = eg.em_and_gibbs_tau1(model, model.n, seed=1)
    assert su > 10 and em == pytest.approx(su) and gibbs == pytest.approx(su)


def test_a_larger_population_leaves_fewer_uniques_alone(eg, model):
    em10, gibbs10 = eg.em_and_gibbs_tau1(model, 10 * model.n, seed=1)
    em100, gibbs100 = eg.em_and_gibbs_tau1(model, 100 * model.n, seed=1)
    su = int((model.key_counts == 1).sum())
    assert 0 < em100 < em10 < su and 0 < gibbs100 < gibbs10 < su
    # the EM point is deterministic given its seed
    assert eg.em_and_gibbs_tau1(model, 10 * model.n, seed=1)[0] == em10


def test_summary_is_ratio_of_means(eg):
    per = pd.DataFrame({"design": ["a", "a", "b"], "replicate": [0, 1, 0],
                        "truth1": [10.0, 30.0, 5.0], "em_tau1": [8.0, 24.0, 5.0],
                        "gibbs_tau1": [11.0, 33.0, 4.0]})
    s = eg.summarise_gap(per).set_index("design")
    assert s.at["a", "em_rel"] == pytest.approx(-0.2)
    assert s.at["a", "gibbs_rel"] == pytest.approx(0.1)
    assert s.at["b", "em_rel"] == pytest.approx(0.0)
    assert s.at["b", "gibbs_rel"] == pytest.approx(-0.2)
