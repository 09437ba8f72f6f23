"""Audit P: the classic superpopulation models (Poisson-gamma, beta-binomial, negbin) and
the generic inference layer (fit, loo/compare, predictive checks).

Each test fails without its fix; fits are small (MAP-Laplace or a few hundred NUTS
draws, fixed seeds).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sdcbayes.exceptions import InputError
from sdcbayes.inference import (
    compare,
    fit,
    loo,
    posterior_predictive,
    predictive_check,
    prior_predictive,
)
from sdcbayes.inference.posterior import stamp
from sdcbayes.models.beta_binomial import BetaBinomialDomainModel
from sdcbayes.models.negbin import NegativeBinomialModel
from sdcbayes.models.poisson_gamma import PoissonGammaModel

COC = {1: 5000, 2: 1200, 3: 400, 5: 100}
SMALL = {1: 50, 2: 12, 3: 4, 5: 1}
# Same n, N, K, n_cells, sample uniques and largest count as SMALL: only m_2.. differ.
SMALL_TWIN = {1: 50, 2: 13, 3: 2, 4: 1, 5: 1}
BB_n = np.array([50, 80, 30, 60, 40])


def _bb(y, priors=None):
    return BetaBinomialDomainModel(y, BB_n, BB_n * 20, priors=priors)


def _map(model, seed=1):
    return fit(model, method="map", draws=100, chains=2, random_seed=seed)


# ----------------------------------------------------------------------------------- P1
@pytest.mark.parametrize("K", [3_000_000_000, 5_000_000_000])
def test_pg_logp_beyond_int32_matches_scipy_negbin_sum(K):
    # Seed 000 eq. 10: log L = sum_j m_j log NegBin(j; alpha, 1/(1 + n beta)), with
    # m_0 = K - #cells > 2**31. pm.Data used to cast m to int32, wrapping m_0 to a
    # negative weight (-1294973996 at K = 3e9): the logp was off by 13 000.
    model = PoissonGammaModel(COC, K, 1e6)
    pm_model = model.build()
    m = pm_model["m"].get_value()
    m0 = K - sum(COC.values())
    assert m.dtype == np.float64 and m[0] == m0
    n = sum(j * v for j, v in COC.items())
    alpha, omega = 0.01, 1.0
    p = 1.0 / (1.0 + n * omega / (K * alpha))
    expected = m0 * stats.nbinom.logpmf(0, alpha, p) + sum(
        v * stats.nbinom.logpmf(j, alpha, p) for j, v in COC.items())
    loglik = pm_model.compile_fn(pm_model.logp(vars=pm_model.observed_RVs),
                                 inputs=pm_model.value_vars, on_unused_input="ignore")
    got = float(loglik({"alpha_log__": np.log(alpha), "omega_log__": np.log(omega)}))
    # rel 1e-10: PyTensor 3 (PyMC 6) compiles with Numba, ~1e-11 from the C backend's sum;
    # the int32 wrap this guards against was off by 13 000
    assert got == pytest.approx(expected, rel=1e-10)


def test_pg_weights_beyond_int32_reach_loo_and_the_posterior():
    # The stored weights feed LOO: m_0 < 0 was dropped (keep = weights > 0), so the
    # LOO counted 3e9 cells as 6700. With the right m_0 the posterior mean number of
    # population uniques matches the same table at K = 2e9 (mu hardly depends on K).
    idata = _map(PoissonGammaModel(COC, 3_000_000_000, 1e6))
    assert float(idata.constant_data["m"][0]) == 3_000_000_000 - 6700
    assert loo(idata).n_data_points == 3_000_000_000
    ref = _map(PoissonGammaModel(COC, 2_000_000_000, 1e6))
    mu, mu_ref = float(idata.posterior["mu"].mean()), float(ref.posterior["mu"].mean())
    assert mu == pytest.approx(mu_ref, rel=0.01) and mu > 1000


def test_other_integer_data_is_not_cast_to_int32():
    # Beta-binomial N_i is stored (constant_data) as float64: N_i >= 2**31 stays exact.
    N = np.array([3_000_000_000, 100])
    bb = BetaBinomialDomainModel([1, 2], [10, 10], N)
    assert bb.build()["N"].get_value().tolist() == [3e9, 100.0]
    # n_i (BetaBinomial's integer n) cannot be held: refused, not wrapped
    with pytest.raises(InputError, match="2\\*\\*31"):
        BetaBinomialDomainModel([1, 2], [2**31, 10], [2**32, 100])
    nb = NegativeBinomialModel([1, 2, 3], [10.0, 20.0, 30.0], sigma=0.5)
    assert nb.build()["fk"].get_value().dtype == np.float64


# ----------------------------------------------------------------------------------- P2
def test_compare_refuses_fits_to_different_data_with_unit_weights():
    fa = _map(_bb([3, 10, 2, 7, 4]))
    fb = _map(_bb([20, 40, 15, 30, 20]))
    with pytest.raises(InputError, match="not made on the same data.*observed_data 'y'"):
        compare({"A": fa, "B": fb})
    # the same table under another prior is still compared
    fc = _map(_bb([3, 10, 2, 7, 4], priors={"concentration": {"sigma": 1.0}}))
    table = compare({"A": fa, "C": fc})
    assert set(table.index) == {"A", "C"}


# ----------------------------------------------------------------------------------- P3
def test_pg_zero_subpopulations_refused():
    with pytest.raises(InputError, match="no subpopulation"):
        PoissonGammaModel(pd.DataFrame(), 100, 1000)


# ----------------------------------------------------------------------------------- P4
def test_bb_and_nb_posterior_predictive_refuse_a_foreign_posterior():
    fa = _map(_bb([3, 10, 2, 7, 4]))
    with pytest.raises(InputError, match="other data"):
        _bb([20, 40, 15, 30, 20]).posterior_predictive(fa, random_seed=1)
    # its own posterior is accepted
    assert _bb([3, 10, 2, 7, 4]).posterior_predictive(fa, random_seed=1).kind == "posterior"
    na = NegativeBinomialModel([1, 2, 3, 1], [10.0, 30.0, 50.0, 5.0], within_ss=2.0,
                               within_df=3)
    nb = NegativeBinomialModel([1, 2, 3, 1], [100.0, 300.0, 500.0, 50.0], within_ss=2.0,
                               within_df=3)
    fna = fit(na, draws=100, tune=100, chains=2, random_seed=1, cores=1)
    with pytest.raises(InputError, match="other data"):
        nb.posterior_predictive(fna, random_seed=1)


# ----------------------------------------------------------------------------------- P6
@pytest.mark.parametrize("bad", [2.5, 0, -1, True])
def test_pg_simulate_refuses_bad_max_count(bad):
    model = PoissonGammaModel(SMALL, 400, 20000)
    import xarray as xr

    params = xr.Dataset({"alpha": (("chain", "draw"), np.full((1, 3), 0.5)),
                         "beta": (("chain", "draw"), np.full((1, 3), 1 / 200))})
    with pytest.raises(InputError, match="max_count must be a whole number >= 1"):
        model.simulate(params, np.random.default_rng(0), max_count=bad)


# ----------------------------------------------------------------------------------- P7
@pytest.mark.parametrize("kwargs, match", [
    ({"draws": 0}, "draws must be a whole number >= 1"),
    ({"draws": 2.5}, "draws must be a whole number >= 1"),
    ({"random_seed": "x"}, "random_seed must be None"),
    ({"random_seed": -1}, "random_seed must be None"),
    ({"max_cout": 4}, "did you mean 'max_count'"),
])
def test_prior_predictive_checks_its_options_first(kwargs, match):
    with pytest.raises(InputError, match=match):
        prior_predictive(PoissonGammaModel(SMALL, 400, 20000), **kwargs)


def test_posterior_predictive_checks_seed_and_options_and_loo_refuses_a_point():
    model = PoissonGammaModel(SMALL, 400, 20000)
    idata = _map(model)
    with pytest.raises(InputError, match="random_seed must be None"):
        posterior_predictive(model, idata, random_seed=-1)
    with pytest.raises(InputError, match="did you mean 'max_count'"):
        posterior_predictive(model, idata, max_cout=4)
    point = fit(model, method="map", laplace=False, random_seed=1)
    with pytest.raises(InputError, match="LOO needs posterior draws.*laplace=True"):
        loo(point)


@pytest.mark.parametrize("thing", [None, {"a": 1}])
def test_fit_refuses_what_is_no_model(thing):
    with pytest.raises(InputError, match="fit needs a model, such as"):
        fit(thing)


def test_pg_non_numeric_sizes_refused():
    with pytest.raises(InputError, match="K must be a number"):
        PoissonGammaModel(SMALL, "abc", 20000)
    with pytest.raises(InputError, match="N must be a number"):
        PoissonGammaModel({"a": SMALL, "b": SMALL_TWIN}, 400, ["x", "y"])


# ----------------------------------------------------------------------------------- P8
def test_pg_stamp_tells_tables_with_equal_totals_apart():
    a, b = PoissonGammaModel(SMALL, 400, 20000), PoissonGammaModel(SMALL_TWIN, 400, 20000)
    totals = ("n", "N", "K", "n_cells", "n_sample_uniques", "max_count")
    assert all(a.data_summary()[k] == b.data_summary()[k] for k in totals)
    fa = _map(a)
    with pytest.raises(InputError, match="counts_of_counts"):
        posterior_predictive(b, fa, random_seed=1)
    posterior_predictive(a, fa, random_seed=1)  # its own table passes


def test_pg_posterior_stamped_without_the_table_still_checks():
    # A posterior stamped before counts_of_counts joined the summary is checked on the
    # totals it has, and accepted for its own table.
    a = PoissonGammaModel(SMALL, 400, 20000)
    fa = _map(a)
    old = {k: v for k, v in a.data_summary().items() if k != "counts_of_counts"}
    stamp(fa, data_summary=old)
    posterior_predictive(a, fa, random_seed=1)
    other = PoissonGammaModel({1: 49, 2: 12, 3: 4, 5: 1}, 400, 20000)
    with pytest.raises(InputError, match="n_sample_uniques"):
        posterior_predictive(other, fa, random_seed=1)


def test_bb_and_nb_stamps_tell_permuted_tables_apart():
    # same totals and counts of y = 0, 1, 2: only which domain holds which y differs
    a, b = _bb([3, 10, 2, 7, 4]), _bb([10, 3, 2, 7, 4])
    fa = _map(a)
    with pytest.raises(InputError, match="data_fingerprint"):
        b.predict_population(fa, random_seed=1)
    na = NegativeBinomialModel([1, 2, 3], [10.0, 30.0, 50.0], sigma=0.5)
    nb = NegativeBinomialModel([1, 2, 3], [30.0, 10.0, 50.0], sigma=0.5)
    assert na.data_summary()["data_fingerprint"] != nb.data_summary()["data_fingerprint"]
    assert {k: v for k, v in na.data_summary().items() if k != "data_fingerprint"} == \
        {k: v for k, v in nb.data_summary().items() if k != "data_fingerprint"}


# ----------------------------------------------------------------------------------- P9
def test_bb_from_microdata_refuses_a_class_value_that_matches_nothing():
    frame = pd.DataFrame({"d": ["a", "a", "b", "b"], "c": [1, 0, 1, 1]})
    with pytest.raises(InputError, match="matches no record.*int64"):
        BetaBinomialDomainModel.from_microdata(frame, "d", "c", "1", {"a": 100, "b": 100})
    ok = BetaBinomialDomainModel.from_microdata(frame, "d", "c", 1, {"a": 100, "b": 100})
    assert ok.y.tolist() == [1, 2]


def test_nb_refuses_bool_sigma_and_fractional_df():
    with pytest.raises(InputError, match="sigma must be a number"):
        NegativeBinomialModel([1, 2], [10.0, 20.0], sigma=True)
    with pytest.raises(InputError, match="within_df must be a whole number"):
        NegativeBinomialModel([1, 2], [10.0, 20.0], within_ss=1.0, within_df=3.7)


def test_pg_refuses_bool_counts_and_hierarchy_of_one():
    with pytest.raises(InputError, match="integer pairs"):
        PoissonGammaModel({1: True, 2: 3}, 100, 1000)
    with pytest.raises(InputError, match="two or more subpopulations"):
        PoissonGammaModel({"a": SMALL}, 400, 20000, structure="hierarchical")
    assert PoissonGammaModel({"a": SMALL}, 400, 20000).structure == "separate"
    assert PoissonGammaModel({"a": SMALL, "b": SMALL_TWIN}, 400, 20000).structure == \
        "hierarchical"


# ---------------------------------------------------------------------------------- P10
def test_prior_predictive_stamps_its_seed_and_repeats_with_it():
    model = PoissonGammaModel(SMALL, 400, 20000)
    first = prior_predictive(model, draws=30)
    seed = first.attrs["random_seed"]
    assert isinstance(seed, int) and first.attrs["model"] == "poisson-gamma"
    assert first.prior_predictive.attrs["random_seed"] == seed
    assert {"priors", "data_summary", "sdcbayes_version"} <= set(first.attrs)
    again = prior_predictive(model, draws=30, random_seed=seed)
    assert np.array_equal(first.prior_predictive["m"].values, again.prior_predictive["m"].values)


def test_posterior_predictive_group_stamps_its_seed():
    model = PoissonGammaModel(SMALL, 400, 20000)
    idata = _map(model)
    posterior_predictive(model, idata)
    attrs = dict(idata.posterior_predictive.attrs)
    assert attrs["predictive"] == "posterior" and attrs["model"] == "poisson-gamma"
    first = idata.posterior_predictive["m"].values.copy()
    posterior_predictive(model, idata, random_seed=attrs["random_seed"])
    assert np.array_equal(first, idata.posterior_predictive["m"].values)
    # the fit's own stamps are left as they were
    assert idata.attrs["settings"] == idata.posterior.attrs["settings"]
    assert predictive_check(model, idata).shape[0] > 0


def test_bb_predictive_check_carries_its_seed():
    model = _bb([3, 10, 2, 7, 4])
    check = model.prior_predictive(samples=20)
    assert isinstance(check.random_seed, int)
    assert check.idata.prior_predictive.attrs["random_seed"] == check.random_seed
    again = model.prior_predictive(samples=20, random_seed=check.random_seed)
    assert np.array_equal(check.idata.prior_predictive["y"].values,
                          again.idata.prior_predictive["y"].values)


# ----------------------------------------------------------------------------------- P5
def test_nb_population_statistics_in_chunks_equal_one_draw_of_all(monkeypatch):
    # The draws x cells array of F is simulated a few draws at a time; the generator
    # fills in C order, so the statistics equal those of one call over all draws.
    import xarray as xr

    import sdcbayes.models.negbin as negbin

    fk = np.array([1, 1, 2, 3, 1, 5])
    model = NegativeBinomialModel(fk, fk * np.array([4.0, 9.0, 3.0, 2.0, 30.0, 1.5]), sigma=0.3)
    p = np.random.default_rng(3).uniform(0.05, 0.95, size=(2, 7, fk.size))
    pda = xr.DataArray(p, dims=("chain", "draw", "cell"))
    monkeypatch.setattr(negbin, "_CHUNK_ELEMENTS", 2 * fk.size + 1)  # 2 draws per chunk
    got = model._population_statistics(pda, np.random.default_rng(5), max_draws=1000)
    F = fk + np.random.default_rng(5).negative_binomial(np.broadcast_to(fk, p.shape), p)
    assert np.array_equal(got["population_total"].values, F.sum(-1))
    assert np.array_equal(got["tau1"].values, np.sum((fk == 1) & (F == 1), -1))
    assert np.allclose(got["tau2"].values, np.sum(np.where(fk == 1, 1.0 / F, 0.0), -1),
                       rtol=1e-15)
