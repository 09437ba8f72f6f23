"""Audit W: log-linear risk under unequal weights, input checks, missing keys, from_microdata.

Finding 1: the plug-in log-linear fit divided every cell by one sampling fraction
n / sum(w); under unequal weights each observed cell now gets its own rate
f_k / F_hat_k (Skinner & Shlomo 2008's lambda_k = mu_k / pi_k; the Benedetti-Franconi
plug-in). The reference is the truth of a population simulated with a fixed seed (the
audit's stratified example: 20 % in one stratum, 1 % in the other).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.models.loglinear import (
    LoglinearModel,
    expected_inverse_frequency,
    posterior_risk,
    prob_population_unique,
    simulate_excess,
)
from sdcbayes.risk.loglinear import fit_loglinear

KEYS = ["s", "x", "y", "z"]


@pytest.fixture(scope="module")
def stratified():
    """The audit's population (200,000 units) and a Bernoulli sample at 20 % / 1 %."""
    rng = np.random.default_rng(5)
    N = 200_000
    pop = pd.DataFrame({
        "s": rng.choice(["A", "B"], N, p=[0.5, 0.5]),
        "x": rng.integers(0, 40, N),
        "y": rng.integers(0, 30, N),
        "z": rng.choice(12, N, p=np.r_[0.5, np.full(11, 0.5 / 11)]),
    })
    rate = np.where(pop.s == "A", 0.20, 0.01)
    take = rng.random(N) < rate
    samp = pop[take].reset_index(drop=True)
    samp["w"] = 1 / rate[take]

    def code(d):  # one integer per key combination
        return (((d.s == "B").to_numpy() * 40 + d.x.to_numpy()) * 30
                + d.y.to_numpy()) * 12 + d.z.to_numpy()

    F = np.bincount(code(pop), minlength=2 * 40 * 30 * 12)
    f = np.bincount(code(samp), minlength=F.size)
    su = f == 1
    truth = {"tau1": int((F[su] == 1).sum()), "tau2": float((1.0 / F[su]).sum())}
    return samp, truth


def _prediction_sd(fit):
    """sd of tau1 and a bound on the sd of tau2 given the sample, under the fitted model.

    tau1 is a sum of independent indicators with probabilities p_k; tau2 a sum of
    independent 1/F_k in (0, 1], whose variance is at most r_k (1 - r_k) (Bhatia-Davis).
    """
    su = fit.fk == 1
    p = fit.prob_population_unique()[su]
    r = fit.expected_inverse_frequency()[su]
    return np.sqrt((p * (1 - p)).sum()), np.sqrt((r * (1 - r)).sum())


def test_unequal_weights_use_each_cells_rate(stratified):
    samp, truth = stratified
    assert truth == {"tau1": 244, "tau2": pytest.approx(1622.03, abs=0.01)}
    fit = fit_loglinear(Microdata(samp, KEYS, weight="w"), interactions="main")
    sd1, sd2 = _prediction_sd(fit)
    # the main-effects model is the true one here (independent keys, the stratum a key),
    # so the plug-in is within its prediction error of the truth; one rate n/sum(w) gave
    # 357.2 and 1219.9 (7 and 12 sd away)
    assert abs(fit.tau1 - truth["tau1"]) < 3 * sd1
    assert abs(fit.tau2 - truth["tau2"]) < 3 * sd2
    assert fit.tau1 == pytest.approx(246.8, abs=0.05)
    assert fit.tau2 == pytest.approx(1627.9, abs=0.05)
    # the cell rates are the strata's: the weight is constant within a cell here
    stratum = fit.levels[0].take(fit.cell_codes[:, 0])
    np.testing.assert_allclose(fit.cell_sampling_fraction,
                               np.where(stratum == "A", 0.2, 0.01), rtol=1e-12)
    assert fit.sampling_fraction == pytest.approx(len(samp) / samp.w.sum())
    np.testing.assert_allclose(fit.lam, fit.mu / fit.cell_sampling_fraction)
    assert "pi" in fit.cell_table().columns
    # a DataFrame with weights= is the same fit
    fit_df = fit_loglinear(samp, KEYS, weights="w")
    assert fit_df.tau1 == fit.tau1 and fit_df.tau2 == fit.tau2
    # an explicit sampling_fraction overrides the weights (one rate, the old numbers)
    one = fit_loglinear(samp, KEYS, weights="w", sampling_fraction=fit.sampling_fraction)
    assert one.cell_sampling_fraction is None
    assert one.tau1 == pytest.approx(357.2, abs=0.05)
    assert abs(one.tau1 - truth["tau1"]) > 3 * sd1


def test_equal_weights_give_exactly_the_one_rate_numbers():
    rng = np.random.default_rng(6)
    df = pd.DataFrame({"a": rng.integers(0, 12, 300), "b": rng.integers(0, 10, 300),
                       "c": rng.integers(0, 15, 300), "w": 37.3})
    for inter in ("main", "two-way"):
        fit = fit_loglinear(Microdata(df, ["a", "b", "c"], weight="w"), interactions=inter)
        pi = 300 / df.w.sum()  # the rate the code has always used
        ref = fit_loglinear(df, ["a", "b", "c"], interactions=inter, sampling_fraction=pi)
        assert fit.cell_sampling_fraction is None and fit.sampling_fraction == pi
        assert fit.tau1 == ref.tau1 and fit.tau2 == ref.tau2
        assert fit.expected_reidentifications == ref.expected_reidentifications
        su = fit.fk == 1
        assert su.sum() > 100
        assert fit.tau1 == pytest.approx(np.exp(-(fit.mu[su] / pi) * (1 - pi)).sum(), rel=1e-13)
        assert fit_loglinear(df, ["a", "b", "c"], interactions=inter, weights="w").tau2 \
            == ref.tau2


def test_cell_rate_is_capped_at_one():
    # weights below 1 in a cell would give f_k / F_hat_k > 1: capped, as the
    # Benedetti-Franconi plug-in caps F_hat_k below at f_k
    df = pd.DataFrame({"a": ["p", "q", "q", "r"], "b": ["u", "u", "v", "v"]})
    fit = fit_loglinear(df, ["a", "b"], weights=[0.5, 10.0, 10.0, 20.0])
    np.testing.assert_allclose(fit.cell_sampling_fraction, [1.0, 0.1, 0.1, 0.05])
    assert fit.prob_population_unique()[0] == 1.0  # a census cell: F = f
    with pytest.raises(InputError, match="finite and > 0"):
        fit_loglinear(df, ["a", "b"], weights=[1.0, 0.0, 2.0, 2.0])
    with pytest.raises(InputError, match="one value per record"):
        fit_loglinear(df, ["a", "b"], weights=[1.0, 2.0])
    with pytest.raises(InputError, match="not a column"):
        fit_loglinear(df, ["a", "b"], weights="w")


# ------------------------------------------------------------------ finding 3: missing keys


def _with_missing():
    return pd.DataFrame({"a": ["x", "x", "y", np.nan, "y", "z"],
                         "b": ["p", "p", "q", "p", "r", "r"]})


def test_wildcard_microdata_with_missing_keys_is_refused():
    md = Microdata(_with_missing(), ["a", "b"], sampling_fraction=0.1)  # missing="wildcard"
    # it made NaN a level of its own: 4 sample uniques where the Microdata sees fewer
    with pytest.raises(InputError, match=r"missing='category'.*missing='drop'"):
        fit_loglinear(md)
    # without missing keys the wildcard policy changes nothing
    fit = fit_loglinear(Microdata(_with_missing().dropna(), ["a", "b"], sampling_fraction=0.1))
    assert fit.fk.sum() == 5


def test_microdata_missing_policy_is_followed():
    cat = fit_loglinear(Microdata(_with_missing(), ["a", "b"], sampling_fraction=0.1,
                                  missing="category"))
    assert cat.fk.sum() == 6 and len(cat.levels[0]) == 4  # x, y, z and missing
    assert int((cat.fk == 1).sum()) == 4
    drop = fit_loglinear(Microdata(_with_missing(), ["a", "b"], sampling_fraction=0.1,
                                   missing="drop"))
    ref = fit_loglinear(_with_missing().dropna(), ["a", "b"], sampling_fraction=0.1)
    assert drop.fk.sum() == 5
    np.testing.assert_array_equal(drop.mu, ref.mu)


# ------------------------------------------------------------------ finding 4: input


def test_fit_loglinear_refuses_a_vector_sampling_fraction_and_one_key_two_way():
    df = pd.DataFrame({"a": list("xxyyzz"), "b": list("pqpqpr")})
    with pytest.raises(InputError, match="one number in"):  # was a bare TypeError
        fit_loglinear(df, ["a", "b"], sampling_fraction=np.full(6, 0.1))
    with pytest.raises(InputError, match="one number in"):
        fit_loglinear(df, ["a", "b"], sampling_fraction="0.1")
    with pytest.raises(InputError, match=r"\(0, 1\]"):
        fit_loglinear(df, ["a", "b"], sampling_fraction=5)
    # was the main-effects fit labelled "two-way"
    with pytest.raises(InputError, match="at least two keys.*interactions='main'"):
        fit_loglinear(df, ["a"], "two-way", sampling_fraction=0.1)
    assert fit_loglinear(df, ["a"], "main", sampling_fraction=0.1).interactions == "main"


# ------------------------------------------------------------------ finding 2: closed forms


@pytest.mark.parametrize("call, match", [
    (lambda: prob_population_unique(-5.0, 0.1), "lam .* >= 0"),           # gave 90.0
    (lambda: prob_population_unique(np.nan, 0.1), "lam .* >= 0"),
    (lambda: prob_population_unique(2.0, 1.5), r"sampling_fraction .*\(0, 1\]"),  # 2.72
    (lambda: prob_population_unique(2.0, 0.0), r"sampling_fraction .*\(0, 1\]"),
    (lambda: prob_population_unique(2.0, 0.1, 0.0), "kappa .* > 0"),
    (lambda: prob_population_unique(2.0, 0.1, 1.0, f=1.5), "whole numbers >= 0"),
    (lambda: prob_population_unique(np.ones(3), 0.1, np.ones(2)), "do not broadcast"),
    (lambda: expected_inverse_frequency(1, 2.0, 5.0), r"\(0, 1\]"),        # gave 5.0
    (lambda: expected_inverse_frequency(0, 2.0, 0.1), "whole numbers >= 1"),  # gave inf
    (lambda: expected_inverse_frequency(2.5, 2.0, 0.1), "whole numbers >= 1"),
    (lambda: expected_inverse_frequency(1, 2.0, 0.1, kappa=0.0), "kappa"),  # gave 0.2558
    (lambda: expected_inverse_frequency(1, 2.0, 0.1, kappa=np.nan), "kappa"),
    (lambda: expected_inverse_frequency(1, -1.0, 0.1), "lam"),
    (lambda: expected_inverse_frequency([1, 2], [1.0, 2.0, 3.0], 0.1), "do not broadcast"),
    (lambda: expected_inverse_frequency(1, 2.0, "ten percent"), "sampling_fraction"),
    (lambda: simulate_excess(-1.0, 0.1, np.random.default_rng(0)), "lam"),
    (lambda: simulate_excess(1.0, 1.2, np.random.default_rng(0)), "sampling_fraction"),
    (lambda: simulate_excess(1.0, 0.1, np.random.default_rng(0), kappa=-2.0), "kappa"),
    (lambda: simulate_excess(np.inf, 0.1, np.random.default_rng(0)), "finite"),
])
def test_closed_forms_refuse_bad_input(call, match):
    with pytest.raises(InputError, match=match):
        call()


def test_closed_forms_accept_per_cell_rates():
    lam = np.array([[2.0, 30.0, 0.5], [1.0, 10.0, 4.0]])
    pi = np.array([0.2, 0.01, 0.5])
    f = np.array([1.0, 1.0, 3.0])
    for kappa in (None, 2.0):
        got = expected_inverse_frequency(f, lam, pi, kappa)
        ref = np.array([[float(expected_inverse_frequency(f[k], lam[s, k], pi[k], kappa))
                         for k in range(3)] for s in range(2)])
        np.testing.assert_allclose(got, ref, rtol=1e-14)
        got = prob_population_unique(lam, pi, kappa, f)
        ref = np.array([[float(prob_population_unique(lam[s, k], pi[k], kappa, f[k]))
                         for k in range(3)] for s in range(2)])
        np.testing.assert_allclose(got, ref, rtol=1e-14)
    # an overflowed lambda keeps its negbin limit (rate pi), as before
    assert np.isfinite(expected_inverse_frequency(2.0, np.inf, 0.01, 1.5))


def test_posterior_risk_refuses_bad_input():
    model = LoglinearModel(np.array([[0, 0], [0, 1], [1, 0]]), [1, 3, 2], [2, 2])
    lm = np.log(np.array([[0.5, 2.0, 1.5]]))
    for args, kw, match in [
        ((lm, 5.0), {}, r"\(0, 1\]"),            # bare NumPy ValueError before
        ((lm, 0.0), {}, r"\(0, 1\]"),
        ((lm,), {}, "sampling_fraction is missing"),
        ((lm[:, :2], 0.1), {}, r"shape \(draws, 3\)"),  # IndexError before
        ((lm[0], 0.1), {}, r"shape \(draws, 3\)"),
        ((lm * np.nan, 0.1), {}, "NaN"),
        ((lm, np.array([0.1, 0.2])), {}, "one per observed cell"),
        ((lm, 0.1), {"kappa": np.array([1.0, 2.0])}, "one per draw"),  # broadcast error
        ((lm, 0.1), {"kappa": np.array([0.0])}, "kappa"),
        ((lm, 0.1), {"prob": 1.5}, "prob"),
    ]:
        with pytest.raises(InputError, match=match):
            posterior_risk(model, *args, **kw)


def test_posterior_risk_per_cell_rates():
    model = LoglinearModel(np.array([[0, 0], [0, 1], [1, 0], [1, 1]]), [1, 1, 3, 2], [2, 2])
    lm = np.log(np.array([[0.5, 2.0, 1.5, 3.0], [0.7, 1.0, 2.5, 2.0]]))
    scalar = posterior_risk(model, lm, 0.1, rng=0)
    same = posterior_risk(model, lm, np.full(4, 0.1), rng=0)
    for key in ("tau1", "tau2", "expected_reidentifications", "theta"):
        assert same[key] == pytest.approx(scalar[key], rel=1e-14)
    pi = np.array([0.2, 0.01, 0.1, 0.1])
    res = posterior_risk(model, lm, pi, rng=0)
    lam = np.exp(lm) / pi
    assert res["tau1"] == pytest.approx(np.exp(-lam[:, :2] * (1 - pi[:2])).sum(1).mean())
    excess = ((1 - pi[:2]) * lam[:, :2]).mean(0).sum()
    assert res["theta"] == pytest.approx(2 / (2 + excess))


# ------------------------------------------------------------------ finding 5: from_microdata


def test_from_microdata_follows_the_microdata():
    df = _with_missing().assign(w=[10.0, 10.0, 20.0, 20.0, 10.0, 10.0])
    md = Microdata(df, ["a", "b"], weight="w", missing="category")
    m = LoglinearModel.from_microdata(md, interactions="none")
    assert m.keys == ["a", "b"] and m.levels[0] == ["x", "y", "z", "<missing>"]
    assert m.n == 6 and (m.counts == 1).sum() == 4
    np.testing.assert_array_equal(np.bincount(m.record_cell), m.counts)
    # unequal weights: one rate per cell, f_k / F_hat_k
    F_hat = np.bincount(m.record_cell, weights=df.w.to_numpy())
    np.testing.assert_allclose(m.sampling_fraction, m.counts / F_hat)
    # the same cells and counts as the plug-in fit
    fit = fit_loglinear(md)
    assert sorted(m.counts) == sorted(fit.fk)
    drop = LoglinearModel.from_microdata(Microdata(df, ["a", "b"], weight="w", missing="drop"))
    assert drop.n == 5 and drop.levels[0] == ["x", "y", "z"]
    with pytest.raises(InputError, match="missing='category'"):
        LoglinearModel.from_microdata(Microdata(df, ["a", "b"], weight="w"))
    eq = LoglinearModel.from_microdata(Microdata(df.dropna(), ["a", "b"],
                                                 sampling_fraction=0.1), family="negbin")
    assert eq.sampling_fraction == 0.1 and eq.family == "negbin"
    plain = LoglinearModel.from_microdata(Microdata(df.dropna(), ["a", "b"]))
    assert plain.sampling_fraction is None


def test_from_microdata_bayesian_risk_with_unequal_weights(stratified):
    samp, truth = stratified
    m = LoglinearModel.from_microdata(Microdata(samp, KEYS, weight="w"), interactions="none")
    lf = m.fit_laplace()
    lm = lf.observed_log_mu(lf.draws(200, np.random.default_rng(0)))
    res = posterior_risk(m, lm, rng=0)  # the per-cell rates recorded by from_microdata
    lo, hi = res["intervals"]["tau1"]
    assert lo <= truth["tau1"] <= hi
    lo, hi = res["intervals"]["tau2"]
    assert lo <= truth["tau2"] <= hi
    one = posterior_risk(m, lm, len(samp) / samp.w.sum(), rng=0)
    assert not one["intervals"]["tau1"][0] <= truth["tau1"] <= one["intervals"]["tau1"][1]


def test_weights_summing_below_the_sample_size_are_refused():
    df = pd.DataFrame({"a": ["p", "q", "q", "r"], "b": ["u", "u", "v", "v"]})
    with pytest.raises(InputError, match=r"weights sum to less than the number of records"):
        fit_loglinear(df, ["a", "b"], weights=[0.5, 0.5, 0.9, 2.0])
