"""Negative-binomial F | f model with uncertain p_k (Benedetti-Franconi; Polettini, seed 004).

The risk is computed here, independently of sdcbayes.risk, from seed 004 eq. 6
(p^f/f * 2F1(f, f; f+1; 1-p), scipy.special.hyp2f1, small f) and checked against the
seed's own closed forms for f = 1, 2, 3 (section 2).
"""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import stats
from scipy.special import expit, hyp2f1, logit

from sdcbayes.exceptions import DataError, InputError
from sdcbayes.models.negbin import (
    NEAR_ONE_P,
    NEAR_ONE_SIGMA_FACTOR,
    NegativeBinomialModel,
    near_one_spread,
    near_one_warning,
    sigma_unlearnable,
    within_cell_spread,
)


def _fit(model, draws=300, tune=300, chains=2, seed=0):
    """NUTS through the project's fit when it is there, else pm.sample directly."""
    try:
        from sdcbayes.inference.fitting import fit
    except ImportError:  # pragma: no cover
        fit = None
    if fit is not None:
        return fit(
            model, method="nuts", draws=draws, tune=tune, chains=chains, random_seed=seed, cores=1
        )
    return pm.sample(
        draws=draws,
        tune=tune,
        chains=chains,
        cores=1,
        random_seed=seed,
        progressbar=False,
        model=model.build(),
        compute_convergence_checks=False,
    )


def bf_risk(f, p):
    """E(1/F | f, p) = p^f / f * 2F1(f, f; f + 1; 1 - p) (seed 004, eq. 6)."""
    return p**f / f * hyp2f1(f, f, f + 1, 1 - p)


def test_reference_risk_matches_seed004_closed_forms():
    # Seed 004, section 2: f = 1, 2, 3 in elementary functions; p = 1 gives 1/f.
    p = np.array([0.01, 0.1, 0.37, 0.8])
    q = 1 - p
    np.testing.assert_allclose(bf_risk(1, p), p / q * np.log(1 / p), rtol=1e-12)
    np.testing.assert_allclose(bf_risk(2, p), p / q**2 * (p * np.log(p) + q), rtol=1e-10)
    # f = 3: the seed's intermediate expression is right ...
    intermediate = (
        p**3
        / 3
        * (3 * q * (3 * q - 2) - 6 * (q - 1) ** 2 * np.log(1 - q))
        / (2 * (q - 1) ** 2 * q**3)
    )
    np.testing.assert_allclose(bf_risk(3, p), intermediate, rtol=1e-9)
    # ... but its final simplification is printed with q^2 where q^3 is needed (typo in
    # the seed): p / (2 q^3) [q (3q - 2) - 2 p^2 log p]. Pin both facts.
    corrected = p / (2 * q**3) * (q * (3 * q - 2) - 2 * p**2 * np.log(p))
    printed = p / (2 * q**2) * (q * (3 * q - 2) - 2 * p**2 * np.log(p))
    np.testing.assert_allclose(bf_risk(3, p), corrected, rtol=1e-9)
    assert not np.allclose(bf_risk(3, p), printed, rtol=1e-3)
    assert bf_risk(4, 1.0) == pytest.approx(0.25)


def _fake_microdata(rng, n_cells=200, spread=0.3, max_f=6, logit_p_mean=-3.0):
    """Records whose logit inverse weights scatter by `spread` around a cell value."""
    fk = rng.integers(1, max_f, n_cells)
    record_cell = np.repeat(np.arange(n_cells), fk)
    eta = rng.normal(logit_p_mean, 0.5, n_cells)
    x = eta[record_cell] + rng.normal(0.0, spread, record_cell.size)
    weights = 1.0 / expit(x)
    cells = types.SimpleNamespace(fk=fk, Fk_hat=np.bincount(record_cell, weights))
    return types.SimpleNamespace(cells=cells, weights=weights, record_cell=record_cell)


# ----------------------------------------------------------------- sufficient statistics, logp


def test_within_cell_spread_matches_groupby():
    rng = np.random.default_rng(1)
    md = _fake_microdata(rng, n_cells=50)
    cell = md.record_cell.copy()
    cell[::7] = -1  # excluded records are ignored
    ss, df = within_cell_spread(md.weights, cell)
    keep = cell >= 0
    frame = pd.DataFrame({"cell": cell[keep], "x": logit(1 / md.weights[keep])})
    g = frame.groupby("cell")["x"]
    assert ss == pytest.approx((g.var(ddof=0) * g.size()).sum(), rel=1e-12)
    assert df == int((g.size() - 1).sum())


def audit_like_weights(seed=0):
    """Weights like the audit's eusilc file (AA10 finding 1): pooled sigma-hat about 0.09.

    450 cells of 3 records (nu = 900) and 100 uniques; logit(1/w) = cell value (around
    -6.5, weights of several hundred) + Normal(0, 0.089). Returns weights and record_cell.
    """
    rng = np.random.default_rng(seed)
    f = np.r_[np.full(450, 3), np.ones(100, dtype=int)]
    cell = np.repeat(np.arange(f.size), f)
    x = rng.normal(-6.5, 1.0, f.size)[cell] + rng.normal(0.0, 0.089, cell.size)
    return 1.0 / expit(x), cell


def _pooled_sd_by_groupby(weights, cell):
    """sqrt(S / nu) computed independently: pandas variances of logit(1/w) per cell."""
    frame = pd.DataFrame({"cell": cell, "x": logit(np.minimum(1 / weights, 1 - 1e-9))})
    g = frame.groupby("cell")["x"]
    return float(np.sqrt((g.var(ddof=0) * g.size()).sum() / (g.size() - 1).sum()))


def test_one_weight_of_one_is_flagged_with_both_sigma_hats():
    # Audit AA10 finding 1: one record of weight 1.0 among 2000 moved sigma-hat from
    # 0.089 to 0.737 (logit(1/w) capped at 20.7, some 27 logit units from its cellmates).
    w, cell = audit_like_weights()
    assert near_one_spread(w, cell) is None  # no such weight: nothing to stamp or warn
    before = _pooled_sd_by_groupby(w, cell)
    assert before == pytest.approx(0.089, abs=0.01)
    w1 = w.copy()
    w1[3] = 1.0  # in a cell of 3 records
    info = near_one_spread(w1, cell)
    assert info["n_records"] == 1 and info["p_min"] == NEAR_ONE_P == 0.95
    assert info["changed"] is True
    # both values by an independent computation: all records, and the record left out
    # (1e-8: logit(1 - 1e-9) rounds 1 - 1e-9 first, -log(w - 1) at its floor does not)
    assert info["sigma_hat"] == pytest.approx(_pooled_sd_by_groupby(w1, cell), rel=1e-8)
    assert info["sigma_hat"] == pytest.approx(0.74, abs=0.02)
    keep = np.arange(w1.size) != 3
    assert info["sigma_hat_without"] == pytest.approx(
        _pooled_sd_by_groupby(w1[keep], cell[keep]), rel=1e-10)
    assert info["sigma_hat_without"] == pytest.approx(before, rel=0.01)
    assert info["within_df_without"] == 899
    msg = near_one_warning(info)
    assert msg.startswith("1 record(s)")
    assert f"{info['sigma_hat']:.3g} with them" in msg
    assert f"{info['sigma_hat_without']:.3g} without them" in msg
    for fix in ("Check those weights", "sigma=", "--model closed-form", "latent-class"):
        assert fix in msg
    # 1.01 (p = 0.99) and a weight below 1 (p capped at 1) are near 1 too
    for near in (1.01, 0.9):
        w2 = w.copy()
        w2[3] = near
        assert near_one_spread(w2, cell)["changed"] is True


def test_near_one_rule_leaves_ordinary_weights_and_shared_spread_alone():
    w, cell = audit_like_weights()
    # weight 2 (p = 0.5) is an ordinary weight, and a unique's weight enters no spread
    w2 = w.copy()
    w2[3] = 2.0
    w2[-1] = 1.0  # the last record is a sample unique
    assert near_one_spread(w2, cell) is None
    # excluded records (negative cell) are ignored
    cut = cell.copy()
    cut[3] = -1
    w3 = w.copy()
    w3[3] = 1.0
    assert near_one_spread(w3, cut) is None
    # a spread the other records share (sigma about 2): one weight of 1.04 moves
    # sigma-hat far less than 1.5-fold, so it is stamped but not warned of
    rng = np.random.default_rng(4)
    x = rng.normal(-3.0, 1.0, 550)[cell] + rng.normal(0.0, 2.0, cell.size)
    wide = 1.0 / expit(x)
    wide[wide <= 1 / NEAR_ONE_P] = 1.2  # no near-1 weight by chance
    wide[3] = 1.04
    info = near_one_spread(wide, cell)
    assert info["n_records"] == 1 and info["changed"] is False
    assert 1.0 < info["sigma_hat"] / info["sigma_hat_without"] < NEAR_ONE_SIGMA_FACTOR
    assert near_one_warning(info) is None
    # the spread there is comes from near-1 weights alone: nothing left without them
    w4 = np.full(6, 40.0)
    w4[[0, 3]] = 1.0
    info = near_one_spread(w4, np.array([0, 0, 0, 1, 1, 1]))
    assert info["changed"] is True and info["sigma_hat_without"] == 0.0
    assert "no spread is left to learn without them" in near_one_warning(info)


def test_near_one_diagnostic_is_stamped_and_other_files_are_unchanged():
    w, cell = audit_like_weights()
    fk = np.bincount(cell)
    Fk = np.bincount(cell, weights=w)
    cells = types.SimpleNamespace(fk=fk, Fk_hat=Fk, n_cells=fk.size)
    md = types.SimpleNamespace(cells=cells, weights=w, record_cell=cell)
    model = NegativeBinomialModel.from_microdata(md)
    ss, df = within_cell_spread(w, cell)
    plain = NegativeBinomialModel(fk, Fk, within_ss=ss, within_df=df)
    # no weight near 1: the summary (the fit's stamp) is what it was, key for key
    assert model.near_one is None
    assert model.data_summary() == plain.data_summary()
    w1 = w.copy()
    w1[3] = 1.0
    md1 = types.SimpleNamespace(cells=types.SimpleNamespace(
        fk=fk, Fk_hat=np.bincount(cell, weights=w1), n_cells=fk.size),
        weights=w1, record_cell=cell)
    stamped = NegativeBinomialModel.from_microdata(md1).data_summary()["near_one_weights"]
    assert stamped["sigma_hat"] == pytest.approx(0.74, abs=0.02)
    assert stamped["sigma_hat_without"] == pytest.approx(0.089, abs=0.01)
    # a fixed sigma learns nothing from the weights: nothing to check
    fixed = NegativeBinomialModel.from_microdata(md1, sigma=0.1)
    assert fixed.near_one is None and "near_one_weights" not in fixed.data_summary()


def _inputs_of(fn, point):
    """The point restricted to the compiled function's inputs: PyMC up to 5.25 refuses
    extra values, later ones ask for every value variable of the model."""
    names = {i.variable.name for i in fn.f.maker.inputs}
    return {k: v for k, v in point.items() if k in names}


def test_within_ss_loglik_is_scaled_chi_square():
    model = NegativeBinomialModel([1, 2, 3], [10.0, 30.0, 25.0], within_ss=2.7, within_df=14)
    pm_model = model.build()
    fn = pm_model.compile_logp(vars=pm_model.observed_RVs, jacobian=False)
    for sigma in (0.2, 0.45, 1.3):
        # S ~ sigma^2 chi^2_nu: density chi2.pdf(S / sigma^2, nu) / sigma^2.
        expected = stats.chi2.logpdf(2.7 / sigma**2, 14) - 2 * np.log(sigma)
        point = {"sigma_log__": np.log(sigma)}  # sigma is the graph's only free variable
        got = fn(_inputs_of(fn, point))
        assert got == pytest.approx(expected, abs=1e-8)


class _FixedOffsets:
    """Stands in for a generator: ``standard_normal`` returns the given offsets."""

    def __init__(self, z):
        self.z = np.asarray(z, dtype=float)

    def standard_normal(self, shape):
        return np.broadcast_to(self.z, shape)


def test_p_is_centred_on_the_plug_in_with_standard_error_sigma_over_sqrt_f():
    # p is no longer a graph node (the offsets were a free variable that NUTS sampled,
    # audit P5): it is drawn after sampling by cell_p, whose formula is pinned here.
    fk = np.array([1, 2, 5])
    Fk = np.array([40.0, 30.0, 12.0])
    model = NegativeBinomialModel(fk, Fk, sigma=0.4)
    z = np.array([0.3, -1.2, 2.0])
    p = model.cell_p(np.array([0.4]), _FixedOffsets(z))[0]
    np.testing.assert_allclose(p, expit(logit(fk / Fk) + 0.4 * z / np.sqrt(fk)), rtol=1e-12)


# ----------------------------------------------------------------- reduction to the closed form

FK = np.array([1, 1, 2, 3, 5, 1])
FHAT = np.array([55.0, 4.0, 31.0, 12.5, 9.0, 1.0])  # last: p_hat = 1, risk 1/f


@pytest.fixture(scope="module")
def fixed_sigma_fits():
    """Fits with sigma fixed: nothing to sample, so fit draws p by exact Monte Carlo.

    (These were pm.sample runs of the offsets by NUTS on one compiled graph; the graph
    now holds no per-cell variable, audit P5.)
    """
    from sdcbayes.inference.fitting import fit

    return {sigma: fit(NegativeBinomialModel(FK, FHAT, sigma=sigma), draws=500, chains=2,
                       random_seed=1)
            for sigma in (0.0, 0.02, 0.1, 0.5)}


def _logit_normal_risk(f, m, s, n_nodes=80):
    """E r(f, expit(m + s Z)), Z ~ N(0, 1), by Gauss-Hermite quadrature (not the graph)."""
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    return np.sum(w * bf_risk(f, expit(m + s * x))) / np.sqrt(2 * np.pi)


def test_sigma_zero_gives_the_plug_in_risk_exactly(fixed_sigma_fits):
    post = fixed_sigma_fits[0.0].posterior
    risk = bf_risk(FK, post["p"].values).mean(axis=(0, 1))
    plug_in = bf_risk(FK, np.minimum(FK / FHAT, 1.0))
    np.testing.assert_allclose(risk, plug_in, rtol=1e-7)  # p = 1 - 1e-9 in the last cell
    assert plug_in[-1] == pytest.approx(1.0)


def test_posterior_mean_risk_converges_to_plug_in_as_sigma_shrinks(fixed_sigma_fits):
    plug_in = bf_risk(FK, np.minimum(FK / FHAT, 1.0))
    gaps = []
    for sigma in (0.5, 0.1, 0.02):
        post = fixed_sigma_fits[sigma].posterior
        draws = bf_risk(FK, post["p"].values).reshape(-1, FK.size)
        mean = draws.mean(axis=0)
        # Against the logit-normal integral: the posterior of p is what the docstring says.
        m = logit(np.clip(FK / FHAT, 1e-9, 1 - 1e-9))
        exact = np.array(
            [_logit_normal_risk(f, mk, sigma / np.sqrt(f)) for f, mk in zip(FK, m, strict=True)]
        )
        mcse = draws.std(axis=0) / np.sqrt(draws.shape[0] / 2)  # ESS >= half the draws here
        assert np.all(np.abs(mean - exact) <= 4 * mcse + 1e-12), (sigma, mean, exact)
        gaps.append(np.max(np.abs(mean - plug_in) / plug_in))
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 2e-3  # O(sigma^2) bias plus Monte Carlo error at sigma = 0.02
    assert gaps[0] > 0.01  # and sigma = 0.5 does change the risk


def test_learnt_sigma_shrinks_to_closed_form_when_weights_barely_vary():
    rng = np.random.default_rng(5)
    md = _fake_microdata(rng, n_cells=60, spread=0.005)
    model = NegativeBinomialModel.from_microdata(md)
    post = _fit(model, seed=2).posterior
    assert float(post["sigma"].quantile(0.95)) < 0.01
    fk, Fk = md.cells.fk, md.cells.Fk_hat
    risk = bf_risk(fk, post["p"].values).mean(axis=(0, 1))
    np.testing.assert_allclose(risk, bf_risk(fk, fk / Fk), rtol=2e-3)


# ----------------------------------------------------------------- learning sigma


@pytest.fixture(scope="module")
def learnt_fit():
    rng = np.random.default_rng(2)
    md = _fake_microdata(rng, n_cells=300, spread=0.3)
    model = NegativeBinomialModel.from_microdata(md)
    return md, model, _fit(model, seed=4)


def test_sigma_is_recovered(learnt_fit):
    md, model, idata = learnt_fit
    sigma = idata.posterior["sigma"]
    lo, hi = sigma.quantile([0.005, 0.995]).values
    assert lo < 0.3 < hi
    # With nu ~ 900 degrees of freedom the posterior sits on the pooled within-cell sd.
    assert float(sigma.mean()) == pytest.approx(
        np.sqrt(model.within_ss / model.within_df), rel=0.02
    )
    assert idata.posterior["p"].dims == ("chain", "draw", "cell")


def test_posterior_predictive_check(learnt_fit):
    md, model, idata = learnt_fit
    table = model.posterior_predictive(idata, random_seed=3).summary()
    assert set(table.index) == {"population_total", "tau1", "tau2", "within_ss"}
    assert table.loc["within_ss", "observed"] == pytest.approx(model.within_ss)
    assert 0.01 < table.loc["within_ss", "ppp"] < 0.99
    assert table.loc["population_total", "observed"] == pytest.approx(md.cells.Fk_hat.sum())


def test_population_simulation_uses_failures_before_f_successes(fixed_sigma_fits):
    # At sigma = 0, F_k = f_k + NegBin(f_k, p_hat): E F_k = f_k / p_hat = Fhat_k, and
    # P(F = 1 | f = 1) = p_hat, so E tau1 = sum_{f=1} p_hat (seed 004, eq. 2).
    model = NegativeBinomialModel(FK, FHAT, sigma=0.0)
    check = model.posterior_predictive(fixed_sigma_fits[0.0], random_seed=7)
    total = check.statistics["population_total"].values.ravel()
    p_hat = np.minimum(FK / FHAT, 1.0)
    var_total = np.sum(FK * (1 - p_hat) / p_hat**2)
    assert abs(total.mean() - FHAT.sum()) < 4 * np.sqrt(var_total / total.size)
    tau1 = check.statistics["tau1"].values.ravel()
    expected = p_hat[FK == 1].sum()
    assert abs(tau1.mean() - expected) < 4 * tau1.std() / np.sqrt(tau1.size)
    assert "within_ss" not in check.statistics  # nothing observed when sigma is fixed


def test_prior_predictive_check():
    rng = np.random.default_rng(8)
    model = NegativeBinomialModel.from_microdata(_fake_microdata(rng, n_cells=30))
    check = model.prior_predictive(samples=200, random_seed=1)
    assert check.statistics.sizes == {"chain": 1, "draw": 200}
    table = check.summary()
    assert np.isnan(table.loc["tau1", "observed"])
    assert table.loc["within_ss", "observed"] == pytest.approx(model.within_ss)


# ----------------------------------------------------------------- errors


def test_sigma_unlearnable_names_the_reason_not_the_fix():
    # the reason alone (each caller adds its own fix); None where sigma can be learnt
    assert sigma_unlearnable(0.0, 0).startswith("no cell has two or more weighted records")
    assert sigma_unlearnable([0.0, 0.0], [1, 2]).startswith("weights are constant")
    assert sigma_unlearnable(0.3, 2) is None
    for ss, df in ((0.0, 0), (0.0, 3)):
        assert "sigma=" not in sigma_unlearnable(ss, df)
    # on records: one cell of three with unequal weights has a spread, equal weights none
    assert sigma_unlearnable(*within_cell_spread([10.0, 20.0, 40.0], [0, 0, 0])) is None
    assert sigma_unlearnable(*within_cell_spread([10.0, 10.0, 40.0], [0, 0, 1])) is not None
    # the model adds the library's fix
    with pytest.raises(InputError, match="constant within every cell.*pass sigma=<value>"):
        NegativeBinomialModel([1, 2], [3.0, 4.0], within_ss=0.0, within_df=1)


def test_bad_input_is_rejected_with_a_fix():
    with pytest.raises(InputError, match="whole numbers >= 1"):
        NegativeBinomialModel([0, 2], [3.0, 4.0], sigma=0.1)
    with pytest.raises(InputError, match="positive and finite"):
        NegativeBinomialModel([1, 2], [3.0, -4.0], sigma=0.1)
    with pytest.raises(InputError, match="needs within_ss and within_df"):
        NegativeBinomialModel([1, 2], [3.0, 4.0])
    with pytest.raises(InputError, match="constant within every cell"):
        NegativeBinomialModel([1, 2], [3.0, 4.0], within_ss=0.0, within_df=1)
    with pytest.raises(InputError, match="no cell has two or more"):
        NegativeBinomialModel([1, 1], [3.0, 4.0], within_ss=0.0, within_df=0)
    with pytest.raises(InputError, match="drop the prior"):
        NegativeBinomialModel([1, 2], [3.0, 4.0], sigma=0.1, priors={"sigma": {"sigma": 2.0}})
    with pytest.raises(InputError, match=r"valid names are \['sigma'\]"):
        NegativeBinomialModel(
            [1, 2], [3.0, 4.0], within_ss=1.0, within_df=1, priors={"tau": {"sigma": 2.0}}
        )
    md = types.SimpleNamespace(
        cells=types.SimpleNamespace(fk=[1], Fk_hat=[2.0]), weights=None, record_cell=[0]
    )
    with pytest.raises(DataError, match="weight=<column>"):
        NegativeBinomialModel.from_microdata(md)


# ----------------------------------------------------------------- slow: calibration


@pytest.mark.slow
def test_sigma_interval_coverage_over_replicates():
    """90% intervals of sigma cover the truth ~90% of the time (100 replicates, prior truths)."""
    rng = np.random.default_rng(17)
    hits = []
    for rep in range(100):
        sigma = abs(rng.normal(0.0, 0.5))
        md = _fake_microdata(rng, n_cells=25, spread=sigma, max_f=4)
        model = NegativeBinomialModel.from_microdata(md, priors={"sigma": {"sigma": 0.5}})
        post = _fit(model, draws=400, tune=400, seed=rep).posterior
        lo, hi = post["sigma"].quantile([0.05, 0.95]).values
        hits.append(lo < sigma < hi)
    print({"sigma": float(np.mean(hits))})  # shown with -rP
    assert 0.80 <= np.mean(hits) <= 0.97, np.mean(hits)
