"""benchmarks/cv_profile_mass.py: the profile mass chosen by the cross-validation.

Checked: the candidates (the default first, then a fixed mass on the keys of >= 20
levels), that the rule takes the first candidate whose parts' Poisson prediction reaches
the held-out count (the cross-validation replaced by a stub that records the prior it was
given), the last one when none does; the ``interpolate`` rule (the model's
``profile_mass_cv``); and the summary's bias, RMSE and coverage.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchtools import load_benchmark

from sdcbayes.models.latent_class import PHI_PRIOR_DEFAULT


@pytest.fixture(scope="module")
def cpm():
    return load_benchmark("cv_profile_mass.py")


def test_candidates(cpm):
    c = cpm.candidates([64, 256])
    assert c[0] == PHI_PRIOR_DEFAULT and c[0] is not PHI_PRIOR_DEFAULT
    assert [x["mass"] for x in c[1:]] == [64.0, 256.0]
    assert all(x["min_levels"] == 20 and x["a"] == "marginal" for x in c[1:])


@pytest.mark.parametrize(("needed", "expected"), [(0, "learn"), (100, 128.0), (10_000, 256.0)])
def test_rule_takes_the_first_prior_that_reaches_the_count(cpm, monkeypatch, needed, expected):
    seen = []

    def fake_cv(model, **kw):
        mass = model.priors["phi"]["mass"]
        seen.append(mass)
        # the Poisson prediction grows with the mass; the learnt one counts as mass 1
        m = 1.0 if mass == "learn" else float(mass)
        return {"observed": 1000, "predicted_poisson": 1000 - needed + m}

    monkeypatch.setattr(cpm, "overdispersion_cv", fake_cv)
    rng = np.random.default_rng(0)
    frame = __import__("pandas").DataFrame({"a": rng.integers(0, 3, 200).astype(str),
                                            "b": rng.integers(0, 25, 200).astype(str)})
    levels = {k: sorted(frame[k].unique()) for k in frame}
    phi, tried = cpm.choose_prior(frame, ["a", "b"], levels, None, 20_000, [64, 128, 256])
    assert phi["mass"] == expected
    assert seen == ["learn", 64.0, 128.0, 256.0][: len(seen)] and len(tried) == len(seen)
    if needed == 10_000:  # none reaches it: the last, after trying all
        assert len(seen) == 4


def test_summary(cpm):
    rows = [{"tau1": 110.0, "tau1_true": 100.0, "tau1_lo": 101.0, "tau1_hi": 120.0,
             "tau2": 50.0, "tau2_true": 50.0, "tau2_lo": 45.0, "tau2_hi": 55.0},
            {"tau1": 90.0, "tau1_true": 100.0, "tau1_lo": 80.0, "tau1_hi": 100.0,
             "tau2": 55.0, "tau2_true": 50.0, "tau2_lo": 50.0, "tau2_hi": 60.0}]
    s = cpm.summary(rows)
    assert s.startswith("2 samples: ")
    assert "tau1 bias +0.00%, rmse 10.00%, coverage 0.50" in s
    assert "tau2 bias +5.00%, rmse 7.07%, coverage 1.00" in s


def test_the_fit_is_the_default_model_with_the_chosen_prior(cpm, monkeypatch):
    got = {}
    monkeypatch.setattr(cpm, "latent_class_method", lambda **kw: got.update(kw) or "m")
    phi = cpm.candidates([64])[1]
    assert cpm.default_method("adult9", ("age", "sex"), {"age": ["1"]}, phi, 3) == "m"
    # the cross-validated overdispersion of the default (latent_class_method's own default
    # is Poisson cells), the confirmed rules, the codebook, the harness's seed
    assert got["overdispersion"] == "cv" and got["priors"] == {"phi": phi}
    assert got["seed"] == 3 and got["levels"] == {"age": ["1"]}
    assert "structural_zeros" in got


@pytest.mark.parametrize(("needed", "expected"), [(65, 64 * 2**0.5), (55, 32 * 2**0.5),
                                                  (40, "learn")])
def test_interpolated_rule_finds_the_crossing_in_log_mass(cpm, monkeypatch, needed, expected):
    # Poisson prediction 10 per doubling of the mass; the learnt mass is 32 on the key of
    # 25 levels (its part_phi_mass; the key of 3 levels does not count)
    def fake_cv(model, **kw):
        mass = model.priors["phi"]["mass"]
        m = 32.0 if mass == "learn" else float(mass)
        return {"observed": 1000, "predicted_poisson": 1000 - needed + 10 * np.log2(m),
                "part_phi_mass": [3.0, 32.0]}

    # the rule is the model's (profile_mass_cv), whose cross-validation is the module's
    import sdcbayes.models.latent_class as lcm

    monkeypatch.setattr(lcm, "overdispersion_cv", fake_cv)
    rng = np.random.default_rng(0)
    frame = __import__("pandas").DataFrame({"a": rng.integers(0, 3, 300).astype(str),
                                            "b": rng.integers(0, 25, 300).astype(str)})
    levels = {k: sorted(frame[k].unique()) for k in frame}
    phi, _ = cpm.choose_prior(frame, ["a", "b"], levels, None, 20_000, [64, 128, 256],
                              rule="interpolate")
    if expected == "learn":
        assert phi["mass"] == "learn"
    else:
        assert phi["mass"] == pytest.approx(expected, rel=1e-9)
        assert phi["min_levels"] == 20 and phi["a"] == "marginal"
