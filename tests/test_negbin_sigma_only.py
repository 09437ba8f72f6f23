"""The negative-binomial model samples sigma alone; the cells' p are exact Monte Carlo (audit P5).

Model (seed 004, eq. 2 and 4; :class:`sdcbayes.models.negbin.NegativeBinomialModel`):
``logit p_k = m_k + sigma z_k / sqrt(f_k)``, ``m_k = logit(f_k / Fhat_k)``, and the
within-cell sum of squares ``S | sigma ~ sigma^2 chi^2_nu``. The offsets ``z_k`` never
enter the likelihood, so a posteriori they are iid Normal(0, 1), independent of sigma;
``fit`` samples sigma and draws them afterwards (``complete_posterior``). Checked here
against independent computations: sigma's posterior by 1-D quadrature, the law of the
offsets by a KS test, and the file-level risk (seed 004, eq. 6) by quadrature over sigma
and Gauss-Hermite over z, through ``assess_posterior`` and ``sdcbayes assess``.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from clitools import run_in_process
from scipy import stats
from scipy.special import expit, hyp2f1, logit

from sdcbayes.exceptions import InputError
from sdcbayes.inference import fit
from sdcbayes.inference.diagnostics import ConvergenceWarning
from sdcbayes.inference.posterior import provenance
from sdcbayes.microdata import Microdata
from sdcbayes.models.base import check_posterior_of
from sdcbayes.models.negbin import NegativeBinomialModel, offset_generator
from sdcbayes.risk.posterior_assess import assess_posterior

FK = np.array([1, 1, 2, 3, 5, 1, 4])
FHAT = np.array([55.0, 4.0, 31.0, 12.5, 9.0, 1.0, 80.0])  # one p_hat = 1 (weights <= 1)


def _offsets(idata, model, sigma, group="posterior"):
    """z = sqrt(f) (logit p - m) / sigma, from the stored p (the model's formula inverted)."""
    p = idata[group]["p"].transpose("chain", "draw", "cell").values
    m = logit(np.clip(model.p_hat, 1e-9, 1 - 1e-9))
    return np.sqrt(model.fk) * (logit(p) - m) / np.asarray(sigma)[..., None]


def _quiet_fit(model, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # short chains in some tests
        return fit(model, **kw)


def sigma_by_quadrature(within_ss, within_df, prior_sd=1.0, grid=200_001):
    """Posterior of sigma on a grid: HalfNormal(prior_sd) x Gamma(nu/2, rate 1/(2 sigma^2))."""
    s = np.linspace(1e-4, 3.0, grid)
    lp = stats.halfnorm.logpdf(s, scale=prior_sd) + stats.gamma.logpdf(
        within_ss, within_df / 2, scale=2 * s**2)
    w = np.exp(lp - lp.max())
    return s, w / w.sum()


# ----------------------------------------------------------------- the graph and the stamps


def test_only_sigma_is_sampled_and_only_p_is_stored():
    model = NegativeBinomialModel(FK, FHAT, within_ss=3.0, within_df=9)
    assert [rv.name for rv in model.build().free_RVs] == ["sigma"]
    idata = _quiet_fit(model, draws=50, tune=50, chains=2, random_seed=4)
    post = idata.posterior
    assert set(post.data_vars) == {"sigma", "p"}  # no p_offset, no logit_p
    assert post["p"].dims == ("chain", "draw", "cell") and post["p"].dtype == np.float64
    assert post["p"].shape == (2, 50, FK.size)
    stamps = provenance(idata)
    assert stamps["model"] == "negbin" and stamps["settings"]["random_seed"] == 4
    assert stamps["data_summary"] == model.data_summary()
    assert stamps["priors"] == model.priors and stamps["sdcbayes_version"]
    assert stamps["diagnostics"]["diagnosed_on"] == ["sigma"]
    check_posterior_of(model, idata, "test")  # recognised as this model's posterior
    other = NegativeBinomialModel(FK, FHAT[::-1], within_ss=3.0, within_df=9)
    with pytest.raises(InputError, match="data_fingerprint"):
        check_posterior_of(other, idata, "test")


def test_same_seed_same_p_other_seed_other_p():
    model = NegativeBinomialModel(FK, FHAT, within_ss=3.0, within_df=9)
    a, b, c = (_quiet_fit(model, draws=20, tune=20, chains=1, random_seed=s) for s in (7, 7, 8))
    assert np.array_equal(a.posterior["p"].values, b.posterior["p"].values)
    assert not np.array_equal(a.posterior["p"].values, c.posterior["p"].values)
    # the offsets come from offset_generator(stamped seed), draw after draw in C order
    sigma = a.posterior["sigma"].values
    z = offset_generator(7).standard_normal(sigma.shape + (FK.size,))
    np.testing.assert_allclose(_offsets(a, model, sigma), z, rtol=1e-6, atol=1e-6)


def test_cell_p_in_chunks_equals_one_call(monkeypatch):
    import sdcbayes.models.negbin as negbin

    model = NegativeBinomialModel(FK, FHAT, sigma=0.3)
    sigma = np.random.default_rng(0).uniform(0.1, 1.0, (2, 9))
    whole = model.cell_p(sigma, np.random.default_rng(5))
    monkeypatch.setattr(negbin, "_CHUNK_ELEMENTS", 2 * FK.size + 1)  # 2 draws per chunk
    chunked = model.cell_p(sigma, np.random.default_rng(5))
    assert np.array_equal(whole, chunked)
    z = np.random.default_rng(5).standard_normal(sigma.shape + (FK.size,))
    m = logit(np.clip(model.p_hat, 1e-9, 1 - 1e-9))
    np.testing.assert_allclose(whole, expit(m + sigma[..., None] * z / np.sqrt(FK)),
                               rtol=1e-13)


# ----------------------------------------------------------------- distributions


def test_sigma_posterior_matches_quadrature_on_adult_statistics():
    # The posterior of sigma depends on the data only through (S, nu): Adult, 6 keys,
    # fnlwgt weights (audit P5) has nu = 24008 and pooled sd 0.7006151808316983, where
    # quadrature gives mean 0.700644, sd 0.003198. Three cells carry those statistics.
    nu = 24008
    ss = 0.7006151808316983**2 * nu
    model = NegativeBinomialModel([1, 2, 4], [30.0, 50.0, 60.0], within_ss=ss, within_df=nu)
    s, w = sigma_by_quadrature(ss, nu)
    mean = float(np.sum(w * s))
    sd = float(np.sqrt(np.sum(w * s * s) - mean**2))
    assert mean == pytest.approx(0.700644, abs=1e-6) and sd == pytest.approx(0.003198, abs=1e-6)
    idata = fit(model, draws=1000, tune=500, chains=2, random_seed=11)
    draws = idata.posterior["sigma"].values.ravel()
    ess = provenance(idata)["diagnostics"]["min_ess_bulk"]
    assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(ess)
    assert draws.std() == pytest.approx(sd, rel=0.1)  # sd of an sd: ~2% at ESS ~ 1000
    assert stats.kstest(draws, lambda x: np.interp(x, s, np.cumsum(w))).pvalue > 0.001


def test_offsets_are_iid_standard_normal_independent_of_sigma():
    # 300 cells x 2 x 200 draws: given sigma, sqrt(f) (logit p - m) / sigma ~ N(0, 1).
    rng = np.random.default_rng(2)
    fk = rng.integers(1, 6, 300)
    Fk = fk / expit(rng.normal(-3.0, 0.8, 300))
    model = NegativeBinomialModel(fk, Fk, within_ss=0.09 * 900, within_df=900)
    idata = _quiet_fit(model, draws=200, tune=200, chains=2, random_seed=3)
    sigma = idata.posterior["sigma"].values
    z = _offsets(idata, model, sigma)
    assert stats.kstest(z.ravel(), "norm").pvalue > 0.001  # 120,000 offsets
    # cell by cell too (no cell shifted or rescaled): means and sds of 400 draws
    assert np.max(np.abs(z.mean(axis=(0, 1)))) < 5 / np.sqrt(400)
    assert np.max(np.abs(z.std(axis=(0, 1)) - 1)) < 5 / np.sqrt(2 * 400)
    # independent of sigma: the correlation of sigma with each draw's mean offset
    r = np.corrcoef(sigma.ravel(), z.mean(axis=-1).ravel())[0, 1]
    assert abs(r) < 4 / np.sqrt(sigma.size)


# ----------------------------------------------------------------- fixed sigma, MAP


def test_fixed_sigma_has_nothing_to_sample_and_is_pure_monte_carlo():
    model = NegativeBinomialModel(FK, FHAT, sigma=0.4)
    assert model.build().free_RVs == []
    idata = fit(model, draws=300, chains=2, random_seed=5)
    assert set(idata.posterior.data_vars) == {"p"}
    assert idata.posterior["p"].shape == (2, 300, FK.size)
    z = _offsets(idata, model, np.full((2, 300), 0.4))
    assert stats.kstest(z.ravel(), "norm").pvalue > 0.001
    stamps = provenance(idata)
    assert stamps["settings"]["draws"] == 300 and stamps["settings"]["chains"] == 2
    assert stamps["diagnostics"]["sampled"] is False
    assert stamps["data_summary"]["sigma_fixed"] == 0.4
    check_posterior_of(model, idata, "test")
    # the predictive check reads the stored p (and has no within_ss to replicate)
    table = model.posterior_predictive(idata, random_seed=1).summary()
    assert "within_ss" not in table.index
    # sigma = 0 is the plug-in closed form exactly
    zero = fit(NegativeBinomialModel(FK, FHAT, sigma=0.0), draws=5, chains=1, random_seed=1)
    np.testing.assert_allclose(zero.posterior["p"].values[0],
                               np.broadcast_to(expit(logit(np.clip(FK / FHAT, 1e-9, 1 - 1e-9))),
                                               (5, FK.size)), rtol=1e-12)


@pytest.mark.parametrize("sigma", [None, 0.4])
def test_map_point_estimate_puts_the_offsets_at_their_mode(sigma):
    # laplace=False is the joint mode: z = 0 (the old graph's p_offset mode), p = p_hat
    kw = {"sigma": sigma} if sigma is not None else {"within_ss": 3.0, "within_df": 9}
    model = NegativeBinomialModel(FK, FHAT, **kw)
    idata = fit(model, method="map", laplace=False, random_seed=1)
    assert idata.posterior["p"].shape == (1, 1, FK.size)
    np.testing.assert_allclose(idata.posterior["p"].values[0, 0],
                               expit(logit(np.clip(FK / FHAT, 1e-9, 1 - 1e-9))), rtol=1e-12)
    # the Laplace draws of the old graph had z exactly N(0, 1) (the log posterior is
    # -z^2/2 plus a function of sigma): here they are drawn so
    laplace = fit(model, method="map", draws=200, chains=2, random_seed=1)
    s = laplace.posterior["sigma"].values if sigma is None else np.full((2, 200), sigma)
    assert stats.kstest(_offsets(laplace, model, s).ravel(), "norm").pvalue > 0.001


def test_prior_predictive_draws_p_from_the_sigma_prior():
    # without the p_hat = 1 cell: prior sigmas of 3 would round its p to 1 (logit inf)
    keep = FHAT > 1
    model = NegativeBinomialModel(FK[keep], FHAT[keep], within_ss=3.0, within_df=9)
    check = model.prior_predictive(samples=400, random_seed=2)
    prior = check.idata.prior
    assert set(prior.data_vars) == {"sigma", "p"}
    z = _offsets(check.idata, model, prior["sigma"].values, group="prior")
    assert stats.kstest(z.ravel(), "norm").pvalue > 0.001
    fixed = NegativeBinomialModel(FK, FHAT, sigma=0.4).prior_predictive(samples=30, random_seed=2)
    assert fixed.idata.prior["p"].shape == (1, 30, FK.size)
    assert set(fixed.statistics.data_vars) == {"population_total", "tau1", "tau2"}


# ----------------------------------------------------------------- risk through the public route


def small_frame(seed=11, n_cells=40):
    """25 cells, 59 records; logit inverse weights scatter by 0.4 around a cell value."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 8, n_cells), rng.integers(0, 5, n_cells)
    pairs = sorted(set(zip(a.tolist(), b.tolist(), strict=True)))
    fk = rng.integers(1, 5, len(pairs))
    rows = []
    for (x, y), f in zip(pairs, fk, strict=True):  # builds a 59-record test file
        eta = rng.normal(-3.0, 0.6)
        rows += [(x, y, 1.0 / expit(eta + rng.normal(0.0, 0.4))) for _ in range(f)]
    return pd.DataFrame(rows, columns=["a", "b", "w"])


def bf_risk(f, p):
    """E(1/F | f, p) = p^f / f * 2F1(f, f; f + 1; 1 - p) (seed 004, eq. 6)."""
    return p**f / f * hyp2f1(f, f, f + 1, 1 - p)


def risk_by_quadrature(model):
    """ER, tau1, tau2 under the model: sigma on a grid, z by Gauss-Hermite (no sampling).

    ER = sum_k f_k E r_k, tau1 = sum_{f_k = 1} E p_k (P(F = 1 | f = 1, p) = p) and
    tau2 = sum_{f_k = 1} E r_k, with r_k of seed 004, eq. 6.
    """
    s, w = sigma_by_quadrature(model.within_ss, model.within_df, grid=20_001)
    keep = w > 1e-12
    s, w = s[keep], w[keep] / w[keep].sum()
    x, gw = np.polynomial.hermite_e.hermegauss(60)
    gw = gw / np.sqrt(2 * np.pi)
    fk = model.fk.astype(float)
    m = logit(np.clip(model.p_hat, 1e-9, 1 - 1e-9))
    p = expit(m + s[:, None, None] * x[None, :, None] / np.sqrt(fk))
    risk = np.einsum("s,z,szk->k", w, gw, bf_risk(fk, p))
    mean_p = np.einsum("s,z,szk->k", w, gw, p)
    u = fk == 1
    return {"expected_reidentifications": float(np.sum(fk * risk)),
            "tau1": float(mean_p[u].sum()), "tau2": float(risk[u].sum())}


#: The implementation that sampled the offsets with NUTS (before audit P5), same data
#: and settings (draws=1000, chains=2, tune=500, random_seed=3): a second Monte Carlo
#: estimate of the same numbers.
OLD_NUTS_OFFSETS = {"expected_reidentifications": 2.573120248730148,
                    "tau1": 0.39538677477541373, "tau2": 1.1202804464351634}


@pytest.fixture(scope="module")
def small_assessment():
    md = Microdata(small_frame(), ["a", "b"], weight="w", missing="category")
    res = assess_posterior(md, model="negbin", draws=1000, chains=2, tune=500, random_seed=3)
    return md, res


def test_assess_posterior_matches_quadrature_and_the_old_sampler(small_assessment):
    md, res = small_assessment
    model = NegativeBinomialModel.from_microdata(md)
    exact = risk_by_quadrature(model)
    # Monte Carlo errors from the draws themselves: per-draw conditional means
    fk = model.fk.astype(float)
    p = res.idata.posterior["p"].values.reshape(-1, fk.size)
    u = fk == 1
    per_draw = {"expected_reidentifications": (fk * bf_risk(fk, p)).sum(1),
                "tau1": p[:, u].sum(1), "tau2": bf_risk(1.0, p[:, u]).sum(1)}
    for name, d in per_draw.items():
        got = res.summary[name]
        assert got == pytest.approx(d.mean(), rel=1e-10)  # what the summary reports
        # offsets independent draw to draw; sigma mixes well (ESS >= half the draws)
        se = d.std() / np.sqrt(d.size / 2)
        assert abs(got - exact[name]) < 4 * se, (name, got, exact[name], se)
        # the old implementation: two independent estimates, each within its error
        assert abs(got - OLD_NUTS_OFFSETS[name]) < 4 * np.sqrt(2) * se, name
        assert abs(OLD_NUTS_OFFSETS[name] - exact[name]) < 4 * se, name


def test_cli_assess_negbin_gives_the_library_numbers(small_assessment, tmp_path, capsys):
    _, res = small_assessment
    path = tmp_path / "small.csv"
    small_frame().to_csv(path, index=False)
    proc = run_in_process(capsys, "assess", str(path), "--keys", "a,b", "--weight", "w",
                          "--model", "negbin", "--draws", "1000", "--chains", "2",
                          "--tune", "500", "--seed", "3", "--missing", "category", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    for name in ("expected_reidentifications", "tau1", "tau2", "n_above_benchmark"):
        assert summary[name] == pytest.approx(res.summary[name], rel=1e-12), name


# ----------------------------------------------------------------- weights near 1 (audit AA10)


def audit_like_frame(weight_of_one=True, seed=0):
    """Like the audit's eusilc file: 450 cells of 3 records and 100 uniques, sigma-hat 0.09.

    logit(1/w) = cell value (around -6.5) + Normal(0, 0.089); with ``weight_of_one`` the
    fourth record (in a cell of 3) has weight 1.0, which sets sigma-hat to about 0.75.
    """
    rng = np.random.default_rng(seed)
    f = np.r_[np.full(450, 3), np.ones(100, dtype=int)]
    cell = np.repeat(np.arange(f.size), f)
    x = rng.normal(-6.5, 1.0, f.size)[cell] + rng.normal(0.0, 0.089, cell.size)
    w = 1.0 / expit(x)
    if weight_of_one:
        w[3] = 1.0
    return pd.DataFrame({"a": cell // 25, "b": cell % 25, "w": w})


NEAR_ONE_TEXT = "have weights near 1"


def test_a_weight_of_one_warns_through_assess_with_both_sigma_hats():
    md = Microdata(audit_like_frame(), ["a", "b"], weight="w", missing="category")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = assess_posterior(md, model="negbin", draws=300, chains=1, tune=300,
                               random_seed=5)
    from sdcbayes.inference.diagnostics import SdcbayesWarning

    ours = [w for w in caught if NEAR_ONE_TEXT in str(w.message)]
    assert len(ours) == 1 and issubclass(ours[0].category, SdcbayesWarning)
    assert ours[0].filename == __file__  # at the user's call, as the other caveats
    info = res.summary["negbin_near_one_weights"]
    assert info["n_records"] == 1 and info["changed"] is True
    assert info["sigma_hat"] == pytest.approx(0.75, abs=0.03)
    assert info["sigma_hat_without"] == pytest.approx(0.089, abs=0.01)
    msg = str(ours[0].message)
    assert msg in res.summary["warnings"]
    assert f"{info['sigma_hat']:.3g} with them" in msg
    assert f"{info['sigma_hat_without']:.3g} without them" in msg
    # both values stamped in the fit's own provenance (posterior.nc keeps them)
    stamped = provenance(res.idata)["data_summary"]["near_one_weights"]
    assert stamped["sigma_hat"] == info["sigma_hat"]
    assert stamped["sigma_hat_without"] == info["sigma_hat_without"]
    # the diagnostic changes nothing of the model: the learnt sigma is the inflated one
    assert float(res.idata.posterior["sigma"].mean()) == pytest.approx(0.75, abs=0.05)


def test_a_file_without_weights_near_one_is_silent_and_unstamped(small_assessment):
    md, res = small_assessment
    assert "negbin_near_one_weights" not in res.summary
    assert not any(NEAR_ONE_TEXT in m for m in res.summary.get("warnings", []))
    assert "near_one_weights" not in provenance(res.idata)["data_summary"]
    md = Microdata(audit_like_frame(weight_of_one=False), ["a", "b"], weight="w",
                   missing="category")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = assess_posterior(md, model="negbin", draws=100, chains=1, tune=100,
                               random_seed=5)
    assert not any(NEAR_ONE_TEXT in str(w.message) for w in caught)
    assert "negbin_near_one_weights" not in res.summary


def test_cli_assess_negbin_echoes_the_weights_near_one_warning(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "near_one.csv"
    audit_like_frame().to_csv(path, index=False)
    proc = run_in_process(capsys, "assess", str(path), "--keys", "a,b", "--weight", "w",
                          "--model", "negbin", "--draws", "200", "--chains", "1",
                          "--tune", "200", "--seed", "3", "--missing", "category", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    info = summary["negbin_near_one_weights"]
    warned = [line for line in proc.stderr.splitlines() if NEAR_ONE_TEXT in line]
    assert len(warned) == 1 and warned[0].startswith("sdcbayes: warning: 1 record(s)")
    assert f"{info['sigma_hat']:.3g} with them" in warned[0]
    assert "--model closed-form" in warned[0]
    assert any(NEAR_ONE_TEXT in m for m in summary["warnings"])
