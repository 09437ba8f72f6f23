"""Fixes from the audit of the Bayesian side (FINDINGS.md of audit C, F1-F6).

Each test fails on the code before its fix. References are independent of the code
under test where one exists: SciPy's beta-binomial pmf summed by brute force (F2),
SciPy's Gamma log-density (F4); otherwise the same posterior read through two routes
that must agree (F1), or a known answer built into the input (F3, F6).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError

# ------------------------------------------------- F1, F6: weighted latent-class fit


@pytest.fixture(scope="module")
def weighted_fit():
    """A small two-stratum design (weights 10 and 80) fitted by the Gibbs sampler.

    kappa drawn from a two-point posterior {1, 10}, so its interval has two ends.
    """
    import warnings

    from sdcbayes.risk.posterior_assess import assess_posterior

    rng = np.random.default_rng(3)
    n = 240
    s = rng.choice([0, 1], n, p=[0.7, 0.3])
    frame = pd.DataFrame({"a": rng.integers(0, 4, n) + 4 * s, "b": rng.integers(0, 3, n)})
    frame["w"] = np.where(s == 0, 10.0, 80.0)
    md = Microdata(frame, keys=["a", "b"], weight="w")
    with warnings.catch_warnings():  # 12 draws: the ESS warnings are expected
        warnings.simplefilter("ignore")
        res = assess_posterior(md, model="latent-class", draws=12, tune=8, chains=1,
                               random_seed=1, n_classes=3, cores=1,
                               quantiles=(0.95, 0.5, 0.05),
                               overdispersion={"grid": [1.0, 10.0], "weights": [0.5, 0.5]})
    return md, res


def test_weighted_latent_class_posterior_dataset_route_equals_inferencedata(weighted_fit):
    # F1: idata.posterior alone lost the weight_classes stamp and silently used
    # (N - n) pi (ER 30% low on a two-stratum design); it must read the fit's own lam
    from sdcbayes.risk.posterior_assess import assess_from_posterior, latent_class_groups

    md, res = weighted_fit
    assert "weight_classes" in res.idata.posterior.attrs
    full = assess_from_posterior(md, res.idata, "latent-class", random_seed=1)
    alone = assess_from_posterior(md, res.idata.posterior, "latent-class", random_seed=1)
    for k in ("expected_reidentifications", "tau1", "tau2"):
        assert alone.summary[k] == pytest.approx(full.summary[k], rel=1e-12)
    np.testing.assert_allclose(alone.cells["risk"], full.cells["risk"], rtol=1e-12)
    # the lam it reads is not (N - n) pi here: the two routes would differ without it
    g_full = latent_class_groups(md, res.idata)
    g_alone = latent_class_groups(md, res.idata.posterior)
    np.testing.assert_allclose(g_alone.rho, g_full.rho, rtol=1e-12)


def test_weighted_latent_class_posterior_without_stamp_is_refused(weighted_fit):
    # F1: a weighted fit's posterior group that lost its stamp (e.g. saved alone by an
    # older version) is refused, naming the fix, rather than read as (N - n) pi
    from sdcbayes.risk.posterior_assess import assess_from_posterior

    md, res = weighted_fit
    post = res.idata.posterior.copy()
    post.attrs = {k: v for k, v in post.attrs.items() if not k.startswith("weight_classes")}
    with pytest.raises(InputError, match="pass the InferenceData"):
        assess_from_posterior(md, post, "latent-class", random_seed=1)


def test_unweighted_latent_class_dataset_with_lam_is_accepted():
    # F1: equal weights (no design variable) are legitimately unstamped, lam = (N - n) pi
    from sdcbayes.risk.posterior_assess import assess_from_posterior

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 6, 300), "b": rng.integers(0, 5, 300)})
    md = Microdata(frame, keys=["a", "b"])
    C, N, n = md.cells.n_cells, 3000.0, 300.0
    pi = rng.dirichlet(np.ones(C), size=6).reshape(2, 3, C)
    ds = xr.Dataset({"pi": (("chain", "draw", "cell"), pi),
                     "lam": (("chain", "draw", "cell"), (N - n) * pi)},
                    coords={"chain": [0, 1], "draw": [0, 1, 2], "cell": np.arange(C)})
    with_lam = assess_from_posterior(md, ds, "latent-class", N=N, random_seed=1)
    without = assess_from_posterior(md, ds.drop_vars("lam"), "latent-class", N=N,
                                    random_seed=1)
    assert with_lam.summary["expected_reidentifications"] == pytest.approx(
        without.summary["expected_reidentifications"], rel=1e-12)


def test_latent_class_kappa_interval_uses_sorted_quantiles(weighted_fit):
    # F6: quantiles=(0.95, 0.5, 0.05) reversed the kappa interval (lo 10, hi 1)
    _, res = weighted_fit
    lo, hi = res.summary["overdispersion"]["kappa_interval"]
    assert lo <= hi
    assert (lo, hi) == (1.0, 10.0)


# -------------------------------------------------------- F2: per-domain draws


def _brute_R1(y, n, N, A, B, loss):
    """Each domain averaged over its own draws: sum_t BetaBin pmf(t) L(y, y + t)."""
    out = []
    for i in range(y.size):
        t = np.arange(N[i] - n[i] + 1)
        pmf = stats.betabinom.pmf(t[None, :], N[i] - n[i], A[:, i:i + 1] + y[i],
                                  B[:, i:i + 1] + n[i] - y[i])
        out.append(np.mean(pmf @ loss(y[i], y[i] + t, n[i], N[i])))
    return np.array(out)


def test_decide_per_domain_draws_average_each_domain_over_its_own():
    # F2: (draw, domain) alpha was flattened into draws shared by every domain
    # (R1 [0, 0.604, 1.058] against the per-domain [0, 0.644, 0.899], n_draws 600)
    from sdcbayes.risk.decisions import decide
    from sdcbayes.risk.losses import parse_loss

    rng = np.random.default_rng(0)
    y, n, N = np.array([0, 1, 4]), np.array([5, 5, 5]), np.array([20, 20, 20])
    S = 200
    A = np.column_stack([rng.gamma(50, 0.2 / 50, S), rng.gamma(50, 1.0 / 50, S),
                         rng.gamma(50, 5.0 / 50, S)])
    B = np.full((S, 3), 2.0)
    expect = _brute_R1(y, n, N, A, B, parse_loss("uniques-equal:S=10"))
    np.testing.assert_allclose(expect, [0, 0.644, 0.899], atol=1e-3)  # the audit's numbers
    res = decide(y, n, N, alpha=A, beta=B, c=1.0, per_domain=True)
    np.testing.assert_allclose(res.table["R1"].to_numpy(), expect, rtol=1e-10, atol=1e-15)
    assert res.hyperparameters["n_draws"] == S and res.hyperparameters["per_domain"]
    # (chain, draw, domain), a shared scalar beta, and a DataArray with a domain dim
    for alpha, beta in ((A.reshape(2, 100, 3), 2.0),
                        (xr.DataArray(A.T.reshape(3, 2, 100), dims=("domain", "chain", "draw")),
                         np.full((2, 100), 2.0))):
        r = decide(y, n, N, alpha=alpha, beta=beta, c=1.0)
        np.testing.assert_allclose(r.table["R1"].to_numpy(), expect, rtol=1e-10, atol=1e-15)
        assert r.hyperparameters["n_draws"] == S


def test_decide_one_dim_draws_stay_shared():
    # F2: a 1-D array is shared draws even with one value per domain (documented)
    from sdcbayes.risk.decisions import decide

    y, n, N = np.array([0, 1, 4]), np.array([5, 5, 5]), np.array([20, 20, 20])
    a = np.array([0.5, 1.0, 2.0])
    shared = decide(y, n, N, alpha=a, beta=2.0, c=1.0)
    assert "per_domain" not in shared.hyperparameters
    assert shared.hyperparameters["n_draws"] == 3
    flat = decide(y, n, N, alpha=np.tile(a, (4, 1)).T.reshape(-1), beta=2.0, c=1.0)
    np.testing.assert_allclose(shared.table["R1"], flat.table["R1"], rtol=1e-12)


def test_decide_refuses_inconsistent_draw_shapes():
    from sdcbayes.risk.decisions import decide

    y, n, N = np.array([0, 1, 4]), np.array([5, 5, 5]), np.array([20, 20, 20])
    with pytest.raises(InputError, match="same number of draws"):
        decide(y, n, N, alpha=np.ones((200, 3)), beta=np.ones(7), per_domain=True)
    with pytest.raises(InputError, match="4 domains"):
        decide(y, n, N, alpha=xr.DataArray(np.ones((2, 4)), dims=("draw", "domain")),
               beta=1.0)
    with pytest.raises(InputError, match="broadcastable"):
        decide(y, n, N, alpha=np.ones((4, 5)), beta=np.ones(7))


# -------------------------------------------------------- F3: summary_table means


def test_summary_table_mean_per_label_of_an_extra_dim():
    # F3: every label got the mean over all labels' companions (50 for both)
    from sdcbayes.risk.posterior import summary_table

    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {"x": (("chain", "draw", "domain"), rng.normal([0, 100], 1, (2, 50, 2))),
         "x_conditional_mean": (("chain", "draw", "domain"),
                                np.broadcast_to([0.0, 100.0], (2, 50, 2)).copy())},
        coords={"domain": ["a", "b"]})
    tab = summary_table(ds).set_index("quantity")
    assert tab.loc["x[domain=a]", "mean"] == 0.0
    assert tab.loc["x[domain=b]", "mean"] == 100.0
    assert tab.loc["x[domain=b]", "lo"] > 90


# ------------------------------------------------- F4: latent-class alpha prior


def test_latent_class_alpha_prior_log_density_in_double_precision():
    # F4: Gamma(0.25, 0.25) from Python floats was a float32 constant (off by 5.6e-9)
    import pymc as pm

    from sdcbayes.models.latent_class import LatentClassModel

    rng = np.random.default_rng(2)
    recs = np.column_stack([rng.integers(0, L, 40) for L in (3, 4)])
    cells, counts = np.unique(recs, axis=0, return_counts=True)
    model = LatentClassModel(cells, counts, [3, 4], n_classes=3).build()
    got = pm.logp(model["alpha"], 0.8).eval()
    assert got == pytest.approx(stats.gamma.logpdf(0.8, 0.25, scale=4.0), rel=0, abs=1e-12)


# ------------------------------------------------- audit I: posteriors read as what they are
# Fake posteriors (arviz.from_dict) stand in for fits: the code under test only reads them.


def _md_of(seed: int, n: int, w: float, **kw) -> Microdata:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.integers(0, 10, n), "b": rng.integers(0, 6, n), "w": w})
    return Microdata(frame, keys=["a", "b"], weight="w", missing="category", **kw)


def _fake_posterior(model: str | None = None, data_summary=None, model_options=None,
                    constant_data=None, **params):
    """An InferenceData with (2, 50) draws of ``params`` and fit-like stamps."""
    import json

    from sdcbayes import _compat

    rng = np.random.default_rng(0)
    # (low, high): uniform draws; an array: the draws themselves
    post = {k: v if isinstance(v, np.ndarray) else rng.uniform(*v, size=(2, 50))
            for k, v in params.items()}
    idata = _compat.from_dict(posterior=post, constant_data=constant_data or {},
                         dims={"p": ["cell"]})
    stamps = {"model": model, "data_summary": data_summary, "model_options": model_options}
    for k, v in stamps.items():
        if v is not None:
            value = v if isinstance(v, str) else json.dumps(v)
            idata.posterior.attrs[k] = value
            idata.attrs[k] = value
    return idata


def test_common_beta_poisson_gamma_posterior_is_refused_not_read_as_domain_0():
    # I.1: scalar alpha/beta passed the guard and n, N were domain 0's (ER 35.26, not 1.49)
    from sdcbayes.risk.posterior_assess import assess_from_posterior

    md = _md_of(3, 120, 25.0)
    const = {"n": np.array([20.0, 100.0]), "N": np.array([100.0, 5000.0])}
    stamped = _fake_posterior("poisson-gamma", model_options={"structure": "common_beta",
                                                              "tie": False},
                              constant_data=const, alpha=(0.5, 1.0), beta=(0.01, 0.02))
    with pytest.raises(InputError, match=r"structure='common_beta'.*structure='pooled'"):
        assess_from_posterior(md, stamped, "poisson-gamma", random_seed=1)
    # without stamps the per-domain constant data alone refuses it
    bare = _fake_posterior(constant_data=const, alpha=(0.5, 1.0), beta=(0.01, 0.02))
    with pytest.raises(InputError, match=r"'n' holds 2 values .*structure='pooled'"):
        assess_from_posterior(md, bare, "poisson-gamma", random_seed=1)


def test_posterior_of_another_model_is_refused_by_its_stamp():
    # I.2: a beta-binomial (alpha-beta) posterior was read as Gamma shape and scale
    from sdcbayes.risk.posterior_assess import assess_from_posterior

    md = _md_of(3, 80, 25.0)
    bb = _fake_posterior("beta-binomial", alpha=(0.5, 1.0), beta=(1.0, 2.0),
                         constant_data={"n": np.array([10.0, 12.0]),
                                        "N": np.array([100.0, 150.0])})
    with pytest.raises(InputError, match=r"fitted with the 'beta-binomial' model.*not "
                                         r"'poisson-gamma'"):
        assess_from_posterior(md, bb, "poisson-gamma", random_seed=1)
    nb = _fake_posterior("negbin", alpha=(0.5, 1.0), beta=(0.01, 0.02))
    with pytest.raises(InputError, match="pass model='negbin'"):
        assess_from_posterior(md, nb, "poisson-gamma", random_seed=1)


def test_posterior_fitted_to_another_file_is_refused():
    # I.4: file A's posterior assessed on file B ran silently with A's n and N
    from sdcbayes.models.negbin import NegativeBinomialModel
    from sdcbayes.models.poisson_gamma import PoissonGammaModel
    from sdcbayes.risk.posterior_assess import assess_from_posterior

    A, B = _md_of(3, 80, 25.0), _md_of(4, 400, 5.0)
    ds_A = PoissonGammaModel.from_microdata(A).data_summary()
    idA = _fake_posterior("poisson-gamma", data_summary=ds_A,
                          model_options={"structure": "pooled", "tie": False},
                          alpha=(0.5, 1.0), beta=(0.01, 0.02))
    assess_from_posterior(A, idA, "poisson-gamma", random_seed=1)  # its own file: fine
    with pytest.raises(InputError, match=r"another cell table than md's \(n_cells 4\d \(fit\) "
                                         r"vs 60 \(md\).*fit the poisson-gamma model"):
        assess_from_posterior(B, idA, "poisson-gamma", random_seed=1)
    # negbin: same cells and counts, other weights
    C = A.cells.n_cells
    nbA = NegativeBinomialModel.from_microdata(A, sigma=0.3).data_summary()
    idnb = _fake_posterior("negbin", data_summary=nbA, p=np.full((2, 50, C), 0.04))
    assess_from_posterior(A, idnb, "negbin", random_seed=1)
    heavier = Microdata(A.frame.assign(w=50.0), keys=["a", "b"], weight="w",
                        missing="category")
    with pytest.raises(InputError, match=r"sum_weights 2000 \(fit\) vs 4000 \(md\)"):
        assess_from_posterior(heavier, idnb, "negbin", random_seed=1)


def test_bb_predict_population_and_posterior_predictive_check_the_fitted_data():
    # I.4: another model's posterior with this model's y, n, N was accepted
    from sdcbayes.inference import posterior_predictive
    from sdcbayes.models.beta_binomial import BetaBinomialDomainModel
    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    bb1 = BetaBinomialDomainModel([1, 0, 3], [10, 12, 30], [100, 150, 400],
                                  parameterisation="alpha-beta")
    bb2 = BetaBinomialDomainModel([2, 5, 1], [20, 40, 10], [200, 300, 100],
                                  parameterisation="alpha-beta")
    idata = _fake_posterior("beta-binomial", data_summary=bb1.data_summary(),
                            alpha=(0.5, 1.0), beta=(5.0, 9.0))
    assert bb1.predict_population(idata, random_seed=1).shape == (2, 50, 3)
    with pytest.raises(InputError, match=r"predict_population: .*other data.*total_y"):
        bb2.predict_population(idata, random_seed=1)
    pg1 = PoissonGammaModel({1: 30, 2: 10, 3: 5}, K=500, N=5000)
    pg2 = PoissonGammaModel({1: 300, 2: 40, 3: 5}, K=5000, N=50000)
    idpg = _fake_posterior("poisson-gamma", data_summary=pg1.data_summary(),
                           alpha=(0.5, 1.0), beta=(1e-4, 2e-4))
    posterior_predictive(pg1, idpg, random_seed=1)
    with pytest.raises(InputError, match=r"posterior_predictive: .*other data"):
        posterior_predictive(pg2, idpg, random_seed=1)
    with pytest.raises(InputError, match=r"fitted with the 'poisson-gamma' model"):
        bb1.predict_population(idpg, random_seed=1)


def test_predictive_typo_and_bad_seed_are_refused_before_fitting(monkeypatch):
    # I.5: predictive='exakt' was refused only after the sampler run; seed -1 was NumPy's
    # ValueError
    import sdcbayes.inference as inference
    from sdcbayes.risk.posterior_assess import assess_from_posterior, assess_posterior

    def no_fit(*args, **kwargs):
        raise AssertionError("fit must not run for a bad argument")

    monkeypatch.setattr(inference, "fit", no_fit)
    md = _md_of(3, 80, 25.0)
    with pytest.raises(InputError, match=r"predictive must be one of .*'exakt'"):
        assess_posterior(md, model="poisson-gamma", draws=10, tune=10, chains=1,
                         random_seed=1, predictive="exakt")
    with pytest.raises(InputError, match=r"predictive='normal'.*negbin"):
        assess_posterior(md, model="negbin", draws=10, tune=10, chains=1, random_seed=1,
                         predictive="normal")
    with pytest.raises(InputError, match=r"random_seed must be None .* got -1"):
        assess_posterior(md, model="poisson-gamma", draws=10, tune=10, chains=1,
                         random_seed=-1)
    idata = _fake_posterior(alpha=(0.5, 1.0), beta=(0.01, 0.02))
    with pytest.raises(InputError, match=r"random_seed must be None .* got -1"):
        assess_from_posterior(md, idata, "poisson-gamma", random_seed=-1)


def test_prior_vectors_and_supports_are_refused_up_front():
    # I.6: a vector mu for scalar alpha failed at compile time (SpecifyShape); a Normal on
    # positive alpha or on the BB mean in (0, 1) was silently truncated
    from sdcbayes.models.beta_binomial import BetaBinomialDomainModel
    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    coc = {1: 30, 2: 10, 3: 5, 5: 2}
    with pytest.raises(InputError, match=r"prior 'alpha' .*mu=\[0.0, 1.0\] has the wrong size"):
        PoissonGammaModel(coc, K=500, N=5000, priors={"alpha": {"mu": [0.0, 1.0]}})
    with pytest.raises(InputError, match=r"prior 'alpha' .*Normal puts mass outside .*"
                                         r"positive.*LogNormal"):
        PoissonGammaModel(coc, K=500, N=5000,
                          priors={"alpha": {"dist": "Normal", "mu": 0.5, "sigma": 1}})
    y, n, N = [1, 0, 3], [10, 12, 30], [100, 150, 400]
    with pytest.raises(InputError, match=r"prior 'mean' .*probability in \(0, 1\).*Beta"):
        BetaBinomialDomainModel(y, n, N, priors={"mean": {"dist": "Normal", "mu": 0.5,
                                                          "sigma": 1}})
    # what fits is accepted: a positive distribution, a per-domain vector under "separate",
    # one coefficient prior per covariate, a real-valued intercept
    PoissonGammaModel(coc, K=500, N=5000, priors={"alpha": {"dist": "Gamma", "alpha": 2,
                                                            "beta": 1}})
    PoissonGammaModel({"a": coc, "b": coc}, K=500, N=[5000, 6000], structure="separate",
                      priors={"alpha": {"mu": [0.0, 1.0]}})
    BetaBinomialDomainModel(y, n, N, covariates=np.array([[0.1, 1], [0.2, 0], [0.3, 1]]),
                            priors={"coefficients": {"sigma": [1.0, 2.0]},
                                    "intercept": {"dist": "Normal", "mu": -2, "sigma": 1}})


def test_negbin_fixed_sigma_refuses_unknown_priors():
    # I.7: with sigma fixed, a typo (or a list) was dropped without a word
    from sdcbayes.models.negbin import NegativeBinomialModel

    with pytest.raises(InputError, match=r"unknown prior\(s\) \['sigmaa'\]"):
        NegativeBinomialModel([1, 2, 3], [10.0, 20.0, 40.0], sigma=0.5,
                              priors={"sigmaa": {"dist": "HalfNormal", "sigma": 3}})
    with pytest.raises(InputError, match="must be a mapping"):
        NegativeBinomialModel([1, 2, 3], [10.0, 20.0, 40.0], sigma=0.5, priors=[("sigma", 1)])


def test_negbin_refuses_wildcard_cells_before_fitting():
    # I.3: wildcard-inflated f_k were counted as records in ER and the benchmark counts
    from sdcbayes.models.negbin import NegativeBinomialModel

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.integers(0, 5, 60).astype(float),
                          "b": rng.integers(0, 4, 60), "w": rng.uniform(10, 30, 60)})
    frame.loc[:5, "a"] = np.nan
    md = Microdata(frame, keys=["a", "b"], weight="w")  # missing="wildcard", the default
    with pytest.raises(InputError, match=r"negative-binomial model needs each record in one "
                                         r"cell.*missing='category'.*missing='drop'"):
        NegativeBinomialModel.from_microdata(md)
    ok = Microdata(frame, keys=["a", "b"], weight="w", missing="category")
    assert NegativeBinomialModel.from_microdata(ok).fk.sum() == 60


def test_posterior_brought_to_wildcard_cells_is_refused():
    # A posterior applied to a wildcard file (unstamped, or stamped with matching counts)
    # counted each wildcard cell's inflated f_k as records: ER 1.43 where the records
    # summed to 0.90. The fitted models refuse such files, so must the risk from draws.
    from sdcbayes.risk.posterior_assess import assess_from_posterior, posterior_groups

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.integers(0, 5, 60).astype(float),
                          "b": rng.integers(0, 4, 60), "w": rng.uniform(10, 30, 60)})
    frame.loc[:5, "a"] = np.nan
    wild = Microdata(frame, keys=["a", "b"], weight="w")  # missing="wildcard"
    assert wild.cells.fk.sum() > 60  # the inflation the refusal is about
    C = wild.cells.n_cells
    nb = _fake_posterior(p=np.full((2, 50, C), 0.04))  # unstamped: taken as it is
    pg = _fake_posterior(alpha=(0.5, 1.0), beta=(0.01, 0.02))
    for post, model in ((nb, "negbin"), (pg, "poisson-gamma")):
        with pytest.raises(InputError, match=rf"the {model} model needs each record in one "
                                             r"cell.*missing='category'.*closed form"):
            assess_from_posterior(wild, post, model, random_seed=1)
        with pytest.raises(InputError, match="needs each record in one cell"):
            posterior_groups(wild, post, model)
    # missing as a level of its own: one cell per record, and the same draws are read
    cat = Microdata(frame, keys=["a", "b"], weight="w", missing="category")
    res = assess_from_posterior(cat, _fake_posterior(p=np.full((2, 50, cat.cells.n_cells), 0.04)),
                                "negbin", random_seed=1)
    assert res.records["risk"].sum() == pytest.approx(res.summary["expected_reidentifications"])
    # no missing value matched: a wildcard file is one cell per record and is read
    full = Microdata(frame.dropna(), keys=["a", "b"], weight="w")
    assess_from_posterior(full, pg, "poisson-gamma", random_seed=1)


def test_map_without_laplace_stamps_the_draws_it_returns():
    # I.8: draws=50, chains=2 were stamped on a 1 x 1 posterior
    from sdcbayes.inference import fit, provenance
    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    idata = fit(PoissonGammaModel({1: 30, 2: 10, 3: 5, 5: 2}, K=500, N=5000), method="map",
                laplace=False, draws=50, chains=2, random_seed=3)
    assert idata.posterior["alpha"].shape == (1, 1)
    stamps = provenance(idata)
    assert (stamps["settings"]["draws"], stamps["settings"]["chains"]) == (1, 1)
    assert stamps["diagnostics"]["chains"] == 1


def test_model_options_are_refused_when_malformed():
    # I.9: tie="no" was read as True; N=inf said "below the sample size"; duplicate labels
    from sdcbayes.models.negbin import NegativeBinomialModel
    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    coc = {1: 30, 2: 10}
    with pytest.raises(InputError, match="tie must be True or False; got 'no'"):
        PoissonGammaModel(coc, K=500, N=5000, tie="no")
    assert PoissonGammaModel(coc, K=500, N=5000, tie=np.True_).tie is True
    with pytest.raises(InputError, match=r"N = \[inf\] must be finite"):
        PoissonGammaModel(coc, K=500, N=np.inf)
    with pytest.raises(InputError, match="duplicate labels"):
        NegativeBinomialModel([1, 2], [10.0, 20.0], sigma=0.5, cell_names=["x", "x"])


def test_predictive_check_defaults_fit_sparse_files():
    # I.10: counts 0..5 reached the pooled tail whenever the largest count was < 5
    from sdcbayes.inference import posterior_predictive, predictive_check
    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    m = PoissonGammaModel({1: 300, 2: 40, 3: 5}, K=5000, N=50000)
    idata = posterior_predictive(m, _fake_posterior(alpha=(0.5, 1.0), beta=(1e-4, 2e-4)),
                                 random_seed=1)
    table = predictive_check(m, idata)
    assert list(table.index) == [0, 1, 2, 3]
    with pytest.raises(InputError, match="pooled tail"):
        predictive_check(m, idata, counts=(0, 1, 2, 3, 4, 5))


def test_nuts_fit_warnings_are_stored_in_the_summary_diagnostics():
    # the warnings a poisson-gamma fit prints were stored nowhere (only four numbers)
    import warnings

    from sdcbayes.inference.diagnostics import ConvergenceWarning
    from sdcbayes.risk.posterior_assess import assess_posterior

    md = _md_of(3, 200, 20.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = assess_posterior(md, model="poisson-gamma", draws=30, tune=30, chains=2,
                               random_seed=1)
    printed = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    diag = res.summary["diagnostics"]
    assert printed, "30 draws should not pass the ESS checks"
    assert diag["problems"] == printed
    assert diag["chains"] == 2 and diag["draws"] == 30
    worst = diag["min_ess_bulk_at"]
    assert worst in diag["diagnosed_on"]
    assert any(worst in p for p in printed)
