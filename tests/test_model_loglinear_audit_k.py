"""Audit K findings on ``sdcbayes.models.loglinear`` (F1, F2, F3, F4, F8).

Reference numbers come from independent routes: E(1/F | f) from the Poisson and
negative-binomial series summed term by term (pmf by its ratio recurrence,
normalised), the negbin excess mean E(F - f | f = 1) from a first-principles
simulation of the gamma-Poisson superpopulation and Bernoulli sampling (Skinner &
Shlomo 2008, section 2), and the Poisson theta from its closed form.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.models.loglinear import (
    LoglinearModel,
    expected_inverse_frequency,
    posterior_risk,
)

LEVELS = [3, 4, 2]


def _cells(seed=0):
    """Distinct observed cells of a small 3-key table and their counts."""
    rng = np.random.default_rng(seed)
    table = np.array(list(itertools.product(*[range(L) for L in LEVELS])))
    f = rng.poisson(np.exp(1.0 + rng.normal(0, 0.8, len(table))))
    obs = f > 0
    return table[obs], f[obs].astype(float)


# ------------------------------------------------------------------ brute-force series


def _series(log_ratio, mode: int, f: float, hi: int) -> float:
    """sum_x p(x)/(f + x) / sum_x p(x), x = 0..hi, p from log p(x+1)/p(x) around the mode."""
    up = np.concatenate([[0.0], np.cumsum(log_ratio(np.arange(mode, hi)))])
    down = -np.cumsum(log_ratio(np.arange(mode - 1, -1, -1)))
    x = np.concatenate([np.arange(mode, hi + 1), np.arange(mode - 1, -1, -1)])
    lp = np.concatenate([up, down])
    assert lp[hi - mode] < -80  # the upper tail beyond hi is negligible
    p = np.exp(lp)
    return math.fsum(p / (f + x)) / math.fsum(p)  # fsum: exactly rounded, any order


def _brute_poisson(f, m):
    # F = f + X, X ~ Po(m): p(x+1)/p(x) = m/(x+1)
    hi = int(m + 15 * math.sqrt(m) + 200)
    return _series(lambda x: math.log(m) - np.log(x + 1.0), int(m), f, hi)


def _brute_negbin(f, lam, pi, kappa):
    # Lambda | f ~ Gamma(kappa + f, rate kappa/lam + pi), X | Lambda ~ Po((1 - pi) Lambda):
    # X ~ NegBin(r = kappa + f, success prob rho), p(x+1)/p(x) = (x + r)/(x + 1) (1 - rho)
    rate = kappa / lam + pi
    q = (1 - pi) / (rate + 1 - pi)
    rho = 1 - q
    r = kappa + f
    mean, sd = r * q / rho, math.sqrt(r * q) / rho
    hi = int(mean + 15 * sd + 90 / rho + 200)
    mode = int(max(0.0, (r - 1) * q / rho))
    return _series(lambda x: np.log((x + r) / (x + 1.0)) + math.log(q), mode, f, hi)


# ------------------------------------------------------------------ F3: E(1/F | f) exact

# the audit's failing cases (pi = 0.001, f = 2, lambda up to 1e5) and a grid around them
GRID = [(pi, f, lam) for pi in (0.001, 0.05) for f in (1, 2, 3, 7, 60)
        for lam in (0.3, 5.0, 5000.0, 1e4, 1e5)]


def test_expected_inverse_frequency_poisson_exact_at_large_lambda():
    worst = 0.0
    for pi, f, lam in GRID:
        ref = _brute_poisson(f, (1 - pi) * lam)
        got = expected_inverse_frequency(f, lam, pi)
        worst = max(worst, abs(got / ref - 1))
    # the 48-point rule gave -15% at (pi, f, lam) = (0.001, 2, 5000) and -100% at 1e5
    assert worst < 1e-10
    # vectorised over (draw, cell), as posterior_risk calls it
    f = np.array([[2.0, 3.0], [2.0, 7.0]])
    lam = np.array([[5000.0, 1e5], [1e4, 0.3]])
    ref = np.vectorize(lambda fv, lv: _brute_poisson(fv, 0.999 * lv))(f, lam)
    np.testing.assert_allclose(expected_inverse_frequency(f, lam, 0.001), ref, rtol=1e-10)


@pytest.mark.parametrize("kappa", [0.5, 2.0, 50.0])
def test_expected_inverse_frequency_negbin_exact_at_large_lambda(kappa):
    worst = 0.0
    for pi, f, lam in GRID:
        ref = _brute_negbin(f, lam, pi, kappa)
        got = expected_inverse_frequency(f, lam, pi, kappa)
        worst = max(worst, abs(got / ref - 1))
    assert worst < 1e-10
    lam = np.array([[5000.0, 1e5]])
    got = expected_inverse_frequency(np.array([[2.0, 2.0]]), lam, 0.001,
                                     np.full((1, 2), kappa))
    ref = [_brute_negbin(2, lv, 0.001, kappa) for lv in lam[0]]
    np.testing.assert_allclose(got[0], ref, rtol=1e-10)


def test_expected_inverse_frequency_limits():
    # no excess (lambda = 0, or a census pi = 1): 1/f exactly, both families
    f = np.array([1.0, 2.0, 5.0])
    np.testing.assert_allclose(expected_inverse_frequency(f, 0.0, 0.01), 1 / f, rtol=1e-15)
    np.testing.assert_allclose(expected_inverse_frequency(f, 0.0, 0.01, 1.5), 1 / f, rtol=1e-15)
    np.testing.assert_allclose(expected_inverse_frequency(f, 7.0, 1.0, 1.5), 1 / f, rtol=1e-15)
    # an overflowed lambda: Lambda | f ~ Gamma(kappa + f, rate pi), finite E(1/F)
    val = expected_inverse_frequency(2.0, np.inf, 0.01, 1.5)
    assert val == pytest.approx(_brute_negbin(2, 1e300, 0.01, 1.5), rel=1e-10)


def test_negbin_with_infinite_or_huge_kappa_is_the_poisson_model():
    # kappa = inf raised (rho = inf/inf) and a huge kappa lost 1 - rho to rounding:
    # kappa = 1e20 gave E(1/F | f=1) = 1 (no excess) where the Poisson limit is 0.66
    from sdcbayes.models.loglinear import prob_population_unique, simulate_excess

    lam = np.array([0.0, 1.0, 100.0, 1e4])
    pi = 0.1
    for f in (1.0, 3.0):
        pois = expected_inverse_frequency(f, lam, pi)
        ref = [_brute_poisson(f, (1 - pi) * lv) if lv else 1 / f for lv in lam]
        np.testing.assert_allclose(pois, ref, rtol=1e-10)
        for kappa in (1e12, 1e20, np.inf):
            np.testing.assert_allclose(expected_inverse_frequency(f, lam, pi, kappa), pois,
                                       rtol=1e-7)
        # below the switch the negbin route still agrees with its own series
        got = expected_inverse_frequency(f, lam[1:], pi, 1e6)
        ref = [_brute_negbin(f, lv, pi, 1e6) for lv in lam[1:]]
        np.testing.assert_allclose(got, ref, rtol=1e-8)
    np.testing.assert_allclose(prob_population_unique(lam, pi, np.inf),
                               np.exp(-(1 - pi) * lam), rtol=1e-15)
    # draws: Poisson moments where kappa is infinite, negbin ones where it is 2
    rng = np.random.default_rng(5)
    lam2 = np.tile([50.0, 50.0], (40_000, 1))
    x = simulate_excess(lam2, pi, rng, kappa=np.array([np.inf, 2.0]), f=1)
    m = (1 - pi) * 50.0
    assert x[:, 0].mean() == pytest.approx(m, rel=0.01)
    assert x[:, 0].var() == pytest.approx(m, rel=0.05)  # Poisson: variance = mean
    rho = (2.0 + pi * 50.0) / (2.0 + 50.0)
    assert x[:, 1].mean() == pytest.approx(3.0 * (1 - rho) / rho, rel=0.02)


def test_posterior_risk_reidentifications_exact_at_small_sampling_fraction():
    # expected re-identifications sum_k f_k E(1/F_k | f_k) over cells with f = 2, 3 at
    # pi = 0.001 and fitted means 5 (lambda = 5000), the audit's ordinary cell
    codes = np.array([[0, 0], [0, 1], [1, 0]])
    model = LoglinearModel(codes, [1, 2, 3], [2, 2])
    pi = 0.001
    mu = np.array([[0.5, 5.0, 5.0], [1.0, 10.0, 100.0]])
    res = posterior_risk(model, np.log(mu), pi, rng=0)
    lam = mu / pi
    per_cell = np.vectorize(lambda fv, lv: fv * _brute_poisson(fv, (1 - pi) * lv))
    ref = per_cell(np.array([1, 2, 3]), lam).sum(axis=1).mean()
    assert res["expected_reidentifications"] == pytest.approx(ref, rel=1e-10)


# ------------------------------------------------------------------ F4: theta, negbin


def _simulated_excess_given_unique(lam, kappa, pi, rng, m=1_000_000):
    """Mean and standard error of F - f given f = 1, simulated from first principles."""
    Lam = rng.gamma(kappa, lam / kappa, m)  # superpopulation: Lambda ~ Gamma(kappa, kappa/lam)
    f = rng.poisson(pi * Lam)               # Bernoulli sampling: f | Lambda ~ Po(pi Lambda)
    Lam1 = Lam[f == 1]
    x = rng.poisson((1 - pi) * Lam1)        # the records outside the sample
    return x.mean(), x.std() / math.sqrt(x.size)


def test_posterior_risk_theta_negbin_against_simulation():
    # two draws (kappa 0.5 and 1) and two sample uniques (lambda 2 and 6) plus two other cells
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    model = LoglinearModel(codes, [1, 1, 3, 2], [2, 2], family="negbin")
    pi = 0.05
    kappa = np.array([0.5, 1.0])
    lam = np.array([[2.0, 6.0, 60.0, 40.0], [2.0, 6.0, 60.0, 40.0]])
    res = posterior_risk(model, np.log(pi * lam), pi, kappa, rng=0)
    rng = np.random.default_rng(2024)
    total, var = 0.0, 0.0
    for k in (0, 1):  # the sample uniques
        for s in (0, 1):
            mean, se = _simulated_excess_given_unique(lam[s, k], kappa[s], pi, rng)
            total += mean / 2  # posterior mean over the two draws
            var += (se / 2) ** 2
    n1 = 2
    theta_ref = n1 / (n1 + total)
    se_theta = n1 / (n1 + total) ** 2 * math.sqrt(var)
    # the Poisson excess (1 - pi) lambda gives theta 0.208 here; the simulation 0.126
    assert abs(res["theta"] - theta_ref) < 4 * se_theta
    assert se_theta < 0.002 * theta_ref  # the check is sharp enough to see the Poisson value


def test_posterior_risk_theta_poisson_closed_form():
    codes = np.array([[0, 0], [0, 1], [1, 0]])
    model = LoglinearModel(codes, [1, 1, 4], [2, 2])
    pi = 0.1
    mu = np.array([[0.2, 1.5, 3.0], [0.4, 0.5, 2.0]])
    res = posterior_risk(model, np.log(mu), pi, rng=0)
    excess = (1 - pi) * (mu[:, :2] / pi).mean(axis=0).sum()
    assert res["theta"] == pytest.approx(2 / (2 + excess), rel=1e-12)


# ------------------------------------------------------------------ F1, F2, F8: input


def test_constructor_refuses_a_bad_cell_table():
    codes, f = _cells()
    with pytest.raises(InputError, match="repeated rows"):  # record-level rows (F1)
        LoglinearModel(np.vstack([codes, codes[:1]]), np.r_[f, 1], LEVELS)
    with pytest.raises(InputError, match="keys gives 1 names but codes has 3"):  # F2
        LoglinearModel(codes, f, LEVELS, keys=["age"])
    with pytest.raises(InputError, match="keys must be a list"):
        LoglinearModel(codes, f, LEVELS, keys="abc")
    with pytest.raises(InputError, match="given more than once"):
        LoglinearModel(codes, f, LEVELS, keys=["a", "a", "b"])
    with pytest.raises(InputError, match="levels must give"):
        LoglinearModel(codes, f, LEVELS, levels=[[0, 1, 2], [0, 1, 2, 3]])
    with pytest.raises(InputError, match="one label per level"):
        LoglinearModel(codes, f, LEVELS, levels=[[0, 1, 2], [0, 1, 2], [0, 1]])
    with pytest.raises(InputError, match="whole numbers"):  # not truncated silently
        LoglinearModel(codes + 0.5, f, LEVELS)
    with pytest.raises(InputError, match="n_levels"):
        LoglinearModel(codes, f, [3, 4.9, 2])
    with pytest.raises(InputError, match="finite whole numbers >= 1"):
        LoglinearModel(codes, np.r_[np.inf, f[1:]], LEVELS)


@pytest.mark.parametrize("kw, match", [
    ({"n_importance": 0}, "n_importance must be a whole number >= 1"),
    ({"n_importance": 2.5}, "n_importance must be a whole number >= 1"),
    ({"max_exact_cells": -1}, "max_exact_cells must be a whole number >= 0"),
    ({"max_exact_cells": math.inf}, "max_exact_cells must be a whole number >= 0"),
    ({"interactions": 3}, "use 'all', 'none' or a list of key pairs"),
    ({"interactions": None}, "use 'all', 'none' or a list of key pairs"),
    ({"interactions": [3]}, "is not a pair of keys"),
    ({"interactions": ["ab"]}, "is not a pair of keys"),
])
def test_constructor_refuses_bad_options(kw, match):
    codes, f = _cells()
    with pytest.raises(InputError, match=match):
        LoglinearModel(codes, f, LEVELS, **kw)


def test_fit_laplace_and_draws_refuse_bad_counts():
    codes, f = _cells()
    model = LoglinearModel(codes, f, LEVELS, interactions="none")
    for kw, match in [({"max_iter": 0}, "max_iter"), ({"max_iter": 2.5}, "max_iter"),
                      ({"init_scale": 0.0}, "init_scale"), ({"tol": math.nan}, "tol"),
                      ({"exact_trace_limit": -1}, "exact_trace_limit"),
                      ({"scales": {(0, 1): -1.0}}, "scales")]:
        with pytest.raises(InputError, match=match):
            model.fit_laplace(**kw)
    fit = model.fit_laplace(max_iter=1)  # one iteration is a valid request
    assert fit.n_iter == 1
    with pytest.raises(InputError, match="n_draws"):
        fit.draws(0, np.random.default_rng(0))


def test_valid_input_unchanged():
    codes, f = _cells()
    ref = LoglinearModel(codes, f, LEVELS, family="negbin")
    # whole-valued floats, a tuple of keys and whole-valued float options are accepted
    alt = LoglinearModel(codes.astype(float), f.astype(np.int32), [3.0, 4.0, 2.0],
                         keys=("key0", "key1", "key2"), family="negbin",
                         n_importance=2e5, max_exact_cells=5e6)
    assert alt.codes.dtype == np.int64 and alt.n_levels.dtype == np.int64
    np.testing.assert_array_equal(alt.codes, ref.codes)
    assert alt.keys == ref.keys and alt.levels == ref.levels == [list(range(L)) for L in LEVELS]
    assert alt.data_summary() == ref.data_summary() and alt.options() == ref.options()
    assert alt.loglik(ref.prior_mean, 2.0) == ref.loglik(ref.prior_mean, 2.0)
    # pairs given as index arrays still work
    m = LoglinearModel(codes, f, LEVELS, interactions=np.array([[0, 1], [2, 1]]))
    assert m.pairs == [(0, 1), (1, 2)]


def test_from_frame_refuses_missing_values_and_bad_keys():
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"a": rng.integers(0, 3, 200).astype(str), "b": rng.integers(0, 4, 200),
                       "c": rng.integers(0, 2, 200)})
    with pytest.raises(InputError, match="the keys have missing values"):
        LoglinearModel.from_frame(df.assign(a=df["a"].where(df.index > 0)), ["a", "b", "c"])
    with pytest.raises(InputError, match=r"keys must be a list of column names; got 'a' "
                                         r"\(for one key write \['a'\]\)"):
        LoglinearModel.from_frame(df, "a")
    with pytest.raises(InputError, match=r"key\(s\) \['d'\] are not columns"):
        LoglinearModel.from_frame(df, ["a", "d"])
    with pytest.raises(InputError, match="given more than once"):
        LoglinearModel.from_frame(df, ["a", "a"])
    with pytest.raises(InputError, match="keys is empty"):
        LoglinearModel.from_frame(df, [])
    m = LoglinearModel.from_frame(df, df.columns)  # any list-like of names
    assert m.keys == ["a", "b", "c"] and m.n == 200
    np.testing.assert_array_equal(np.bincount(m.record_cell), m.counts)
