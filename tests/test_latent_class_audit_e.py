"""Audit E's findings on the latent-class cross-validation and its stamps.

F1: with ``profile_mass="cv"`` the posterior ``assess_posterior`` returns (posterior.nc) is
stamped with the prior the chains ran with, as the summary's provenance is. F2: the
cross-validations' and the predictive check's random streams do not depend on the number
of chains (the chains' own seeds unchanged). F3: clustered parts that cannot make a
ratio's parts drop it (or cut records), warned, with the real parts recorded. F4: a
``fit()`` posterior of the latent-class model is refused with a message naming the route.
F6: parts too small to learn kappa are warned and recorded as prior-dominated.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import sdcbayes.models.latent_class as lcm
from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.inference.diagnostics import SdcbayesWarning
from sdcbayes.inference.posterior import provenance
from sdcbayes.models.latent_class import (
    CV_MIN_PART,
    KAPPA_GRID,
    LatentClassModel,
    overdispersion_cv,
)
from sdcbayes.risk.posterior_assess import assess_from_posterior, assess_posterior

# the tests' chains are a few draws long: their diagnostics are not what is checked
pytestmark = [
    pytest.mark.filterwarnings("ignore::sdcbayes.inference.diagnostics.ConvergenceWarning"),
    pytest.mark.filterwarnings("ignore::sdcbayes.inference.diagnostics.TruncationWarning"),
]


def _frame(n=400, seed=3, levels=(5, 4, 6, 3)):
    # a two-class mixture on a few small keys
    rng = np.random.default_rng(seed)
    cls = rng.integers(0, 2, n)
    cols = {}
    for j, L in enumerate(levels):
        p0, p1 = rng.dirichlet(np.ones(L)), rng.dirichlet(np.ones(L) * 0.5)
        u = rng.random(n)
        cols[f"k{j}"] = np.where(cls == 0, np.searchsorted(np.cumsum(p0), u),
                                 np.searchsorted(np.cumsum(p1), u)).clip(0, L - 1)
    return pd.DataFrame(cols)


# ------------------------------------------------------------------------------ F1


def test_profile_mass_cv_posterior_stamped_with_the_prior_used(monkeypatch):
    # a stubbed cross-validation whose Poisson prediction rises with the mass, so that
    # profile_mass="cv" fixes a mass (as in test_latent_class_profile_mass.py)
    def cv(model, *, random_seed=None, **kw):
        mass = model.priors["phi"]["mass"]
        m = 32.0 if mass == "learn" else float(mass)
        weights = np.zeros(KAPPA_GRID.size)
        weights[40] = 1.0
        return {"method": "cv", "grid": KAPPA_GRID, "weights": weights, "observed": 100.0,
                "predicted_poisson": 80.0 + 8.0 * np.log2(m / 32.0),
                "part_phi_mass": [32.0 if model.learns_mass(j) else 1.0
                                  for j in range(len(model.keys))]}

    monkeypatch.setattr(lcm, "overdispersion_cv", cv)
    rng = np.random.default_rng(0)
    n = 400
    z = rng.random(n) < 0.5
    df = pd.DataFrame({"a": np.where(z, rng.integers(0, 12, n), rng.integers(8, 24, n)),
                       "b": rng.integers(0, 3, n), "c": rng.integers(0, 4, n)})
    md = Microdata(df, keys=["a", "b", "c"], sampling_fraction=0.05)
    r = assess_posterior(md, model="latent-class", n_classes=6, draws=5, tune=5, chains=1,
                         random_seed=1, profile_mass="cv", cores=1)
    chosen = r.summary["profile_mass"]["mass"]
    assert chosen == pytest.approx(np.sqrt(128.0 * 256.0))  # a fixed mass was chosen
    assert r.provenance["priors"]["phi"]["mass"] == pytest.approx(chosen)
    # the posterior's own stamps (what posterior.nc stores) agree with the summary
    assert json.loads(r.idata.attrs["priors"])["phi"]["mass"] == pytest.approx(chosen)
    assert provenance(r.idata)["priors"]["phi"]["mass"] == pytest.approx(chosen)
    assert provenance(r.idata)["priors"] == r.provenance["priors"]


# ------------------------------------------------------------------------------ F2


def test_cv_and_ppc_streams_do_not_depend_on_chains():
    df = _frame(400, seed=1)
    m = LatentClassModel.from_frame(df, list(df.columns), n_classes=8)
    kw = dict(draws=4, tune=2, N=8000.0, random_seed=123, overdispersion="cv", cores=1, ppc=2)
    one = m.sample(chains=1, **kw)
    three = m.sample(chains=3, **kw)
    # one seed, one kappa posterior (before: seeded from spawn(chains + 1)[-1])
    assert one.attrs["overdispersion"] == three.attrs["overdispersion"]
    # chain 0 is the same chain, its kappa draws too (drawn from the same posterior)
    for name in ("pi", "kappa"):
        np.testing.assert_array_equal(one.posterior[name].values[0],
                                      three.posterior[name].values[0])
    # the predictive check's replicates of chain 0 (before: spawn(chains + 2)[-1])
    np.testing.assert_array_equal(one.posterior_predictive["m"].values[0],
                                  three.posterior_predictive["m"].values[0])


def test_chain_seeds_unchanged_and_aux_streams_fixed():
    for chains in (1, 2, 4):
        seeds, cv_seed, ppc_seed = lcm._sample_seeds(7, chains)
        ref = np.random.SeedSequence(7).spawn(chains)  # the chains' seeds as before
        assert [s.generate_state(4).tolist() for s in seeds] == \
            [s.generate_state(4).tolist() for s in ref]
        assert cv_seed.spawn_key == (lcm.CV_SPAWN_KEY,)
        assert ppc_seed.spawn_key == (lcm.PPC_SPAWN_KEY,)
        assert cv_seed.entropy == ppc_seed.entropy == 7
    # the auxiliary streams are distinct from every chain's and from each other
    _, cv_seed, ppc_seed = lcm._sample_seeds(7, 1)
    assert cv_seed.generate_state(4).tolist() != ppc_seed.generate_state(4).tolist()


# ------------------------------------------------------------------------------ F3


def _clustered_model(n_households, n=400):
    df = _frame(n, seed=3)
    df["hh"] = np.arange(n) % n_households
    md = Microdata(df, keys=["k0", "k1", "k2", "k3"], household="hh", sampling_fraction=0.05)
    return LatentClassModel.from_microdata(md, n_classes=8)


def test_clustered_cv_drops_ratios_whose_parts_merge():
    # 5 households of 80 records: quarters cut at household boundaries make 4 parts,
    # eighths (parts of 50) cannot: they merge, and the ratio is not used
    with pytest.warns(SdcbayesWarning, match=r"household .*ratio\(s\) \[8\] not used"):
        od = overdispersion_cv(_clustered_model(5), random_seed=1, max_ratio=20)
    assert od["ratios"] == [4] and od["partition_ratios"] == [4]
    assert od["partition_parts"] == [4] and od["smallest_part"] >= CV_MIN_PART
    assert od["cut"] == "clusters" and od["clusters"] == 5
    assert not od["prior_dominated"] and "caveats" in od


def test_clustered_cv_falls_back_to_halves_then_records():
    # two households: no ratio's parts, halves of whole households
    with pytest.warns(SdcbayesWarning, match="halves used instead"):
        od = overdispersion_cv(_clustered_model(2), random_seed=1, max_ratio=20)
    assert od["ratios"] == [2] and od["partition_parts"] == [2] and od["cut"] == "clusters"
    assert od["smallest_part"] == 200
    # one household: its halves would be one part (the whole sample, a flat likelihood);
    # the records are cut instead, and the likelihood reads something
    with pytest.warns(SdcbayesWarning, match="cut records, not households"):
        od = overdispersion_cv(_clustered_model(1), random_seed=1, max_ratio=20)
    assert od["ratios"] == [2] and od["partition_parts"] == [2] and od["cut"] == "records"
    assert np.ptp(od["partition_loglik"]) > 0 and od["sd"] > 0


def test_clustered_cv_unchanged_for_small_households():
    # households of 10 records: every ratio makes its parts, no warning, same as before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        od = overdispersion_cv(_clustered_model(40), random_seed=1, max_ratio=20)
    assert od["ratios"] == [4, 8] and od["partition_parts"] == [4, 8]
    assert od["cut"] == "clusters" and "caveats" not in od and not od["prior_dominated"]


# ------------------------------------------------------------------------------ F4


def test_fit_posterior_of_the_latent_class_model_is_refused_with_the_route():
    df = _frame(120, seed=3, levels=(3, 3))
    md = Microdata(df, keys=["k0", "k1"], sampling_fraction=0.1)
    m = LatentClassModel.from_microdata(md, n_classes=2)
    # the variables fit() would store: those of build(), which has no pi
    names = [v.name for v in m.build().free_RVs + m.build().deterministics]
    assert "pi" not in names and "w" in names
    rng = np.random.default_rng(0)
    post = xr.Dataset({
        "w": (("chain", "draw", "latent_class"), rng.dirichlet(np.ones(2), (1, 4))),
        "phi_k0": (("chain", "draw", "latent_class", "level_k0"),
                   rng.dirichlet(np.ones(3), (1, 4, 2))),
    })
    with pytest.raises(InputError, match=r"inference\.fit.*assess_posterior"):
        assess_from_posterior(md, post, "latent-class")
    # and the docstrings no longer offer ADVI / MAP
    assert "ADVI" not in m.build.__doc__.splitlines()[0]
    assert "for ADVI/MAP" not in lcm.__doc__


def test_fit_advi_is_refused_for_the_latent_class_model():
    from sdcbayes.inference import fit

    df = _frame(60, seed=3, levels=(3, 3))
    m = LatentClassModel.from_frame(df, ["k0", "k1"], n_classes=2)
    with pytest.raises(InputError, match="not supported"):
        fit(m, method="advi", draws=5)


# ------------------------------------------------------------------------------ F6


def test_tiny_sample_cv_is_warned_and_recorded_prior_dominated():
    df = _frame(30, seed=2, levels=(3, 3))
    md = Microdata(df, keys=["k0", "k1"], sampling_fraction=0.1)
    with pytest.warns(SdcbayesWarning, match="prior-dominated"):
        r = assess_posterior(md, model="latent-class", n_classes=4, draws=4, tune=2,
                             chains=1, random_seed=1, cores=1)
    od = r.summary["overdispersion"]
    assert od["method"] == "cv" and od["cv_prior_dominated"] is True
    assert od["cv_partition_parts"] == [2] and od["cv_ratios"] == [2]
    assert any("prior" in c for c in od["cv_caveats"])


def test_normal_sample_cv_is_not_flagged():
    df = _frame(400, seed=1)
    m = LatentClassModel.from_frame(df, list(df.columns), n_classes=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        od = overdispersion_cv(m, random_seed=1, max_ratio=20)
    assert od["ratios"] == [4, 8] and od["partition_parts"] == [4, 8]
    assert od["prior_dominated"] is False and "caveats" not in od
    assert od["smallest_part"] == 400 // 8
