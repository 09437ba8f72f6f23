"""Audits Z2 (F2, F3) and Z3 (findings 2 and 5): compare's predictive check, the
population under ``missing="drop"``, Poisson-gamma cell spaces beyond 2**53 and 2**63,
and negbin's logit inverse weights above 1e9."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.inference.diagnostics import PredictiveCheckWarning
from sdcbayes.risk.assess import assess_closed_form

nan = np.nan


# ----------------------------------------------------------------------------------------
# Z2 F2: compare_models runs the latent-class predictive check, as `sdcbayes assess` does
# ----------------------------------------------------------------------------------------

#: Two latent classes cannot describe b = a of 25 levels: the replicates hold some 200
#: cells seen once where the sample has none, a misfit the check flags.
LC_SPEC = [{"name": "lc", "model": "latent-class",
            "options": {"n_classes": 2, "overdispersion": None}}]
LC_FIT = {"draws": 40, "tune": 20, "chains": 2, "random_seed": 1}


@pytest.fixture(scope="module")
def misfit_md():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 25, 400)
    frame = pd.DataFrame({"a": a, "b": a, "c": rng.integers(0, 2, 400), "w": 50.0})
    return Microdata(frame, keys=["a", "b", "c"], weight="w")


def _compare(md, **kwargs):
    from sdcbayes.risk.compare import compare_models

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = compare_models(md, LC_SPEC, **LC_FIT, **kwargs)
    return res, caught


def test_compare_runs_the_predictive_check_and_warns_of_the_misfit(misfit_md):
    from sdcbayes.risk.posterior_assess import assess_posterior, default_ppc

    res, caught = _compare(misfit_md)
    # the default: assess's own number of replicates, at most the draws
    assert res.settings["ppc"] == min(default_ppc(misfit_md.n_records, 2), LC_FIT["draws"])
    misfit = [str(w.message) for w in caught if issubclass(w.category, PredictiveCheckWarning)]
    assert len(misfit) == 1
    assert misfit[0].startswith("lc: predictive check: the sample has 0 cells seen once, fewer")
    table = res.summary()["predictive_checks"]["lc"]
    assert [r["count"] for r in table] == [1, 2, 3, 4, 5]
    assert table[0]["observed"] == 0 and table[0]["interval"][0] > 100
    # the same check as assess_posterior (the API of `sdcbayes assess`) on the same fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = assess_posterior(misfit_md, "latent-class", method="gibbs", n_classes=2,
                             overdispersion=None, ppc=res.settings["ppc"], **LC_FIT)
    assert a.summary["predictive_check"] == table
    assert res.table.loc[0, "tau1"] == pytest.approx(a.summary["tau1"], rel=1e-12)


def test_compare_ppc_zero_runs_no_check(misfit_md):
    res, caught = _compare(misfit_md, ppc=0)
    assert res.settings["ppc"] == 0
    assert res.summary()["predictive_checks"] == {}
    assert not [w for w in caught if issubclass(w.category, PredictiveCheckWarning)]


@pytest.mark.parametrize("bad", [-1, 2.5, True, "50"])
def test_compare_ppc_is_checked_before_any_fit(misfit_md, bad):
    from sdcbayes.risk.compare import compare_models

    with pytest.raises(InputError, match=r"ppc must be None or an integer >= 0"):
        compare_models(misfit_md, LC_SPEC, ppc=bad, **LC_FIT)


def test_compare_without_latent_class_stamps_no_ppc(misfit_md):
    from sdcbayes.risk.compare import compare_models

    res = compare_models(misfit_md, [{"name": "cf", "model": "closed-form"}], random_seed=1)
    assert res.settings["ppc"] is None and res.summary()["predictive_checks"] == {}


# ----------------------------------------------------------------------------------------
# Z2 F3: missing="drop" keeps the population; the kept records stand for the dropped ones
# ----------------------------------------------------------------------------------------


def _drop_frame():
    # stratum s1: weights 10, 20 kept, 30 dropped (factor 60/30 = 2);
    # stratum s2: 5, 5, 5 kept, 15 and 15 dropped (factor 45/15 = 3); overall 105/45
    return pd.DataFrame({
        "a": [1, 1, nan, 1, 2, 2, nan, 2],
        "b": ["x", "y", "x", "x", "x", "x", "y", None],
        "s": ["s1", "s1", "s1", "s2", "s2", "s2", "s2", "s2"],
        "w": [10.0, 20, 30, 5, 5, 5, 15, 15],
    })


def test_drop_rescales_the_kept_weights_to_the_file_total():
    f = _drop_frame()
    md = Microdata(f, keys=["a", "b"], weight="w", missing="drop")
    factor = f.w.sum() / f.w[f.a.notna() & f.b.notna()].sum()  # 105 / 45
    s = md.summary()
    assert s["sum_weights"] == pytest.approx(105.0, rel=1e-12)
    assert s["sum_weights_input"] == 105.0 and s["sum_weights_kept"] == 45.0
    assert s["n_dropped"] == 3 and s["n_records"] == 5
    # cells (1,x): 10 + 5, (1,y): 20, (2,x): 5 + 5, every one times the one factor
    t = md.cells.table
    got = dict(zip(zip(t.a, t.b, strict=True), t.Fk_hat, strict=True))
    want = {(1.0, "x"): 15 * factor, (1.0, "y"): 20 * factor, (2.0, "x"): 10 * factor}
    assert got == pytest.approx(want, rel=1e-12)
    assert float(np.sum(md.cells.Fk_hat)) == pytest.approx(f.w.sum(), rel=1e-12)
    # the given weights of the dropped records stay as they were
    assert md.weights[md.dropped].tolist() == [30.0, 15.0, 15.0]


def test_drop_rescales_within_strata_and_the_closed_form_reads_the_adjusted_weights():
    f = _drop_frame()
    md = Microdata(f, keys=["a", "b"], weight="w", missing="drop", strata="s")
    # s1: kept 10 + 20 of 60 -> x2; s2: kept 5 + 5 + 5 of 45 -> x3
    kept = md.weights[~md.dropped]
    np.testing.assert_allclose(kept, [20.0, 40.0, 15.0, 15.0, 15.0], rtol=1e-12)
    by = md.cells.by_stratum.groupby("stratum")["Fk_hat"].sum()
    assert by.to_dict() == pytest.approx({"s1": 60.0, "s2": 45.0}, rel=1e-12)
    # the closed form (F-hat = the cell's weight sum) is that of the kept records
    # carrying the adjusted weights: the same cells, F-hat and risks
    k = f[f.a.notna() & f.b.notna()].assign(w=kept)
    ref = Microdata(k, keys=["a", "b"], weight="w", strata="s")
    np.testing.assert_allclose(md.cells.Fk_hat, ref.cells.Fk_hat, rtol=1e-12)
    got, want = assess_closed_form(md), assess_closed_form(ref)
    np.testing.assert_allclose(got.cells["risk"], want.cells["risk"], rtol=1e-12)
    assert got.summary["expected_reidentifications"] == pytest.approx(
        want.summary["expected_reidentifications"], rel=1e-12)
    # a larger population: each kept record's risk is below its unadjusted one
    old = Microdata(f[f.a.notna() & f.b.notna()], keys=["a", "b"], weight="w")
    assert np.all(got.cells["risk"].to_numpy() < assess_closed_form(old).cells["risk"].to_numpy())


def test_drop_with_sampling_fraction_keeps_the_population_n_over_f():
    f = _drop_frame()
    md = Microdata(f, keys=["a", "b"], sampling_fraction=0.1, missing="drop")
    assert md.summary()["sum_weights"] == pytest.approx(8 / 0.1, rel=1e-12)
    assert md.summary()["sampling_fraction"] == 0.1
    np.testing.assert_allclose(md.weights[~md.dropped], 8 / 0.1 / 5, rtol=1e-12)


def test_drop_without_missing_values_changes_nothing():
    f = _drop_frame().dropna()
    for strata in (None, "s"):
        dropped = Microdata(f, keys=["a", "b"], weight="w", missing="drop", strata=strata)
        plain = Microdata(f, keys=["a", "b"], weight="w", missing="category", strata=strata)
        np.testing.assert_array_equal(dropped.weights, f.w.to_numpy())
        np.testing.assert_array_equal(dropped.cells.Fk_hat, plain.cells.Fk_hat)
        s = dropped.summary()
        assert "sum_weights_input" not in s and "sum_weights_kept" not in s
        assert {k: v for k, v in s.items() if k != "missing"} == {
            k: v for k, v in plain.summary().items() if k != "missing"}


def test_drop_without_weights_rescales_nothing():
    md = Microdata(_drop_frame(), keys=["a", "b"], missing="drop")
    assert md.weights is None
    np.testing.assert_array_equal(md.cells.Fk_hat, md.cells.fk)
    assert "sum_weights_input" not in md.summary()


def test_drop_dropped_records_without_a_usable_weight_count_in_neither_sum():
    f = _drop_frame()
    f.loc[2, "w"] = nan  # dropped (a missing): its weight was never checked
    md = Microdata(f, keys=["a", "b"], weight="w", missing="drop")
    s = md.summary()
    assert s["sum_weights_input"] == 75.0 and s["sum_weights_kept"] == 45.0
    assert s["n_dropped_unweighted"] == 1
    assert s["sum_weights"] == pytest.approx(75.0, rel=1e-12)


def test_drop_a_stratum_without_kept_records_is_named():
    f = _drop_frame()
    f.loc[1, "b"] = None
    f.loc[0, "a"] = nan  # s1: every record dropped
    from sdcbayes.microdata import MicrodataWarning

    with pytest.warns(MicrodataWarning, match="stratum 's1'"):
        md = Microdata(f, keys=["a", "b"], weight="w", missing="drop", strata="s")
    s = md.summary()
    assert s["strata_without_records"] == ["s1"]
    # s1's weight is spread over the kept records (audit AA9): N stays the file's
    assert s["sum_weights_input"] == 105.0 and s["sum_weights"] == pytest.approx(105.0)
    assert s["n_dropped_collapsed"] == 3 and s["sum_weights_collapsed"] == 60.0


def test_drop_population_of_the_posterior_models():
    from sdcbayes.models.poisson_gamma import PoissonGammaModel
    from sdcbayes.risk.posterior_assess import assess_posterior

    rng = np.random.default_rng(5)
    n = 300
    f = pd.DataFrame({"a": rng.integers(0, 6, n).astype(float), "b": rng.integers(0, 4, n),
                      "w": rng.uniform(20, 60, n)})
    f.loc[rng.random(n) < 0.1, "a"] = nan
    md = Microdata(f, keys=["a", "b"], weight="w", missing="drop")
    total = float(f.w.sum())
    # the default N: the file's weight sum, not the kept records' (87,986 vs 97,176 on
    # the audit's example)
    assert PoissonGammaModel.from_microdata(md).data_summary()["N"] == pytest.approx(total)
    fit = {"draws": 20, "tune": 10, "chains": 1, "random_seed": 1, "method": "gibbs",
           "n_classes": 4, "overdispersion": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = assess_posterior(md, "latent-class", **fit)
        given = assess_posterior(md, "latent-class", N=12345.0, **fit)
    assert default.summary["population_size"] == pytest.approx(total, rel=1e-12)
    # an N given refers to the population already: kept as given
    assert given.summary["population_size"] == 12345.0
    assert PoissonGammaModel.from_microdata(md, N=12345.0).data_summary()["N"] == 12345.0


# ----------------------------------------------------------------------------------------
# Z3 finding 2: Poisson-gamma cell spaces of 2**53 cells and more (and beyond int64)
# ----------------------------------------------------------------------------------------


def _many_keys(n_keys: int, n: int = 300) -> Microdata:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"k{i}": rng.integers(0, 20, n) for i in range(n_keys)})
    return Microdata(frame.assign(w=25.0), keys=[f"k{i}" for i in range(n_keys)], weight="w")


@pytest.mark.parametrize("n_keys", [14, 15])  # K = 1.6e18 (> 2**53), 3.3e19 (> 2**63)
def test_poisson_gamma_takes_a_cell_space_beyond_2_53_and_int64(n_keys):
    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    md = _many_keys(n_keys)
    assert md.K == 20**n_keys  # every level observed
    assert md.K >= (2**53 if n_keys == 14 else 2**63)
    model = PoissonGammaModel.from_microdata(md)
    ds = model.data_summary()
    assert ds["K"] == md.K and isinstance(ds["K"], int)  # exact, not the float's
    m = model.data_values()["m"]
    assert np.isfinite(m).all() and m[0] == pytest.approx(float(md.K - md.cells.n_cells))
    assert model.data_values()["K"] == float(md.K)
    if md.K < 2**63:  # m_0 still exact in int64
        assert int(model.observed()["m"].values[0]) == md.K - md.cells.n_cells


def test_poisson_gamma_big_int_K_directly():
    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    K = 3 * 2**64 + 1
    model = PoissonGammaModel({1: 10, 2: 3}, K, 500.0)
    assert model.data_summary()["K"] == K
    # per subpopulation, a list of Python ints beyond int64
    sub = PoissonGammaModel({"a": {1: 4}, "b": {1: 2, 2: 1}}, [K, K + 2], [100.0, 80.0],
                            structure="separate")
    assert [d["K"] for d in sub.data_summary()["domains"].values()] == [K, K + 2]
    with pytest.raises(InputError, match=r"K = .* is beyond float64"):
        PoissonGammaModel({1: 10}, 10**400, 500.0)
    for bad in ("1e20", True):  # still no sizes
        with pytest.raises(InputError, match="K must be a number"):
            PoissonGammaModel({1: 10}, bad, 500.0)


def test_poisson_gamma_replicates_beyond_int64_are_refused_by_name():
    import xarray as xr

    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    model = PoissonGammaModel.from_microdata(_many_keys(15))
    params = xr.Dataset({"alpha": (("chain", "draw"), [[0.5]]),
                         "beta": (("chain", "draw"), [[1e-19]])})
    with pytest.raises(InputError, match=r"cannot be drawn for a cell space of K = 3\.28e\+19 .*"
                                         r"int64.*the fit and the risk do not need them"):
        model.simulate(params, np.random.default_rng(0))
    # below 2**63 they are drawn
    small = PoissonGammaModel.from_microdata(_many_keys(14))
    draws = small.simulate(params, np.random.default_rng(0))["m"].values
    assert draws.sum() == 20**14


def test_poisson_gamma_assess_posterior_on_15_keys_of_20_levels():
    from sdcbayes.risk.posterior_assess import assess_posterior

    md = _many_keys(15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 20 draws: r_hat/ESS of a toy fit warn
        r = assess_posterior(md, model="poisson-gamma", draws=20, tune=20, chains=1,
                             random_seed=1, progressbar=False)
    s = r.summary
    assert 0.0 <= s["tau1"] <= s["n_sample_uniques"] and math.isfinite(s["tau2"])
    assert np.all(np.isfinite(r.cells["risk"].to_numpy()))


# ----------------------------------------------------------------------------------------
# Z3 finding 5: negbin's logit(1/w) is exact for weights above 1e9
# ----------------------------------------------------------------------------------------


def _huge_weights(scale: float) -> Microdata:
    rng = np.random.default_rng(0)
    n = 120
    frame = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n),
                          "w": scale * rng.uniform(1, 3, n)})
    return Microdata(frame, keys=["a", "b"], weight="w")


def test_within_cell_spread_of_weights_above_1e9():
    from sdcbayes.models.negbin import sigma_unlearnable, within_cell_spread

    md = _huge_weights(1e10)
    ss, df = within_cell_spread(md.weights, md.record_cell)
    assert df == 120 - md.cells.n_cells
    assert sigma_unlearnable(ss, df) is None  # was "constant within every cell"
    # logit(1/w) = -log(w) - log1p(-1/w): the same spread as the weights' own logs
    w, cell = md.weights, md.record_cell
    x = -np.log(w) - np.log1p(-1.0 / w)
    mean = np.bincount(cell, weights=x) / np.bincount(cell)
    assert ss == pytest.approx(float(np.sum((x - mean[cell]) ** 2)), rel=1e-9)
    # and it is the spread of 1e6 * the same U(1, 3) to 1e-5: -log(w - 1) ~ -log w
    ss6, _ = within_cell_spread(_huge_weights(1e6).weights, md.record_cell)
    assert ss == pytest.approx(ss6, rel=1e-5)


def test_logit_inverse_weight_exact_and_held_only_at_one():
    from sdcbayes.models.negbin import EPS, _logit_inverse

    w = np.array([1e20, 1e10, 25.0, 2.0, 1.0 + 1e-6])
    np.testing.assert_allclose(_logit_inverse(w), -np.log(w - 1.0), rtol=1e-15)
    # w -> 1 (and below, weights below 1 allowed): logit(1 - EPS), as before
    cap = math.log((1.0 - EPS) / EPS)
    np.testing.assert_allclose(_logit_inverse(np.array([1.0, 0.5, 1.0 + 1e-12])), cap,
                               rtol=1e-12)


def test_negbin_centres_of_cells_above_1e9():
    from sdcbayes.models.negbin import NegativeBinomialModel

    md = _huge_weights(1e10)
    model = NegativeBinomialModel.from_microdata(md)
    fk, F = md.cells.fk.astype(float), md.cells.Fk_hat
    # m_k = logit(f_k / F_k) = -log(F_k / f_k - 1), not the clip logit(1e-9) = -20.7
    np.testing.assert_allclose(model.logit_p_hat, -np.log(F / fk - 1.0), rtol=1e-14)
    assert model.logit_p_hat.max() < -22.0 and np.unique(model.logit_p_hat).size == fk.size
    p = model.cell_p(np.array([0.0]), np.random.default_rng(0))
    np.testing.assert_allclose(p[0], fk / F, rtol=1e-9)  # sigma 0: the plug-in


def test_negbin_assess_posterior_on_weights_1e10():
    from sdcbayes.risk.posterior_assess import assess_posterior

    md = _huge_weights(1e10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = assess_posterior(md, model="negbin", draws=20, tune=20, chains=1, random_seed=1,
                             progressbar=False)
    er = r.summary["expected_reidentifications"]
    cf = assess_closed_form(md).summary["expected_reidentifications"]
    assert 0.5 * cf < er < 2.0 * cf  # about 1e-8: the closed form's order


def test_drop_population_check_reads_the_files_weights():
    from sdcbayes.microdata import require_population_beyond_sample

    f = _drop_frame()
    # weights normalised to the file's 8 records: N = n, no population beyond the file;
    # the kept records' scaled weights (sum 8 > 5 kept) must not hide that
    norm = f.assign(w=f.w / f.w.sum() * len(f))
    md = Microdata(norm, keys=["a", "b"], weight="w", missing="drop",
                   allow_weights_below_one=True)
    assert md.summary()["sum_weights"] == pytest.approx(8.0)
    with pytest.raises(InputError, match=r"the weights sum to N=8, not more than the n=8"):
        require_population_beyond_sample(md, "latent-class")
    # a census (weights all 1) with dropped records: the dropped persons are the
    # population beyond the kept records, N = 8 > n = 5, and nothing is refused
    census = Microdata(f.assign(w=1.0), keys=["a", "b"], weight="w", missing="drop")
    require_population_beyond_sample(census, "latent-class")
    np.testing.assert_allclose(census.weights[~census.dropped], 8 / 5, rtol=1e-12)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # kappa all inf: no NaN warning
def test_compare_takes_a_census_of_three_records():
    """Under 4 records the cross-validated kappa cannot be fitted, but a census needs none:
    compare assesses it exactly, as assess does, instead of refusing it."""
    from sdcbayes.risk.compare import compare_models

    frame = pd.DataFrame({"age": [30, 30, 41], "sex": ["m", "m", "f"], "w": 1.0})
    md = Microdata(frame, keys=["age", "sex"], weight="w")
    res = compare_models(md, [{"name": "lc", "model": "latent-class"}], draws=20, tune=20,
                         chains=2, random_seed=1)
    row = res.table.set_index("name").loc["lc"] if "name" in res.table else res.table.iloc[0]
    assert row["tau1"] == 1.0 and row["er"] == 2.0
