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
    res = decide(y, n, N, alpha=A, beta=B, c=1.0)
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
        decide(y, n, N, alpha=np.ones((200, 3)), beta=np.ones(7))
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
