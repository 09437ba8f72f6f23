"""Comparison of models, priors and losses (``sdcbayes.risk.compare``, issue 4).

One comparison of four specifications (Poisson-gamma with default and wide priors,
negative binomial, closed form) is fitted once (MAP/Laplace, small draws) on a small
synthetic stratified sample and checked against independent computations: PSIS-LOO
recomputed from each posterior, the closed-form row against
``assess_closed_form``, the cell disclosure risks against brute-force summation of
the loss over the negative-binomial predictive (``decisions.negbin_expected_loss``),
and the changed-decision list against the per-model publish flags.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.risk.compare import (
    REIDENTIFICATION_LOSS,
    compare_models,
    expected_loss_enumerated,
    parse_model_specs,
    validate_specs,
)
from sdcbayes.risk.decisions import negbin_expected_loss
from sdcbayes.risk.individual import negbin_inverse_moment
from sdcbayes.risk.losses import parse_loss

SPECS = [
    {"name": "pg", "model": "poisson-gamma"},
    {"name": "pg-wide", "model": "poisson-gamma", "priors": {"alpha": {"sigma": 5}}},
    {"name": "nb", "model": "negbin"},
    {"name": "closed", "model": "closed-form"},
]
ALT = "uniques-equal:S=10/y"


def small_sample():
    from sdcbayes.datasets.census import simulate_population
    from sdcbayes.datasets.sampling import draw_sample

    pop = simulate_population(4000, seed=3)
    return draw_sample(pop, keys=("age_group", "sex", "education", "household_size"),
                       fraction=0.05, design="stratified", seed=5)


@pytest.fixture(scope="module")
def sample():
    return small_sample()


@pytest.fixture(scope="module")
def md(sample):
    from sdcbayes.microdata import Microdata

    return Microdata(sample.sample, keys=list(sample.keys), weight=sample.weight)


@pytest.fixture(scope="module")
def result(md, sample):
    truth = {"tau1": sample.truth.tau1, "tau2": sample.truth.tau2,
             "expected_reidentifications": sample.truth.expected_reidentifications}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compare_models(md, SPECS, method="map", draws=100, chains=2, random_seed=1,
                              alternatives=[ALT], threshold=0.1, truth=truth)


# --------------------------------------------------------------------------- the table


def test_one_row_per_spec_with_intervals_containing_the_means(result, sample):
    t = result.table
    assert t["name"].tolist() == [s["name"] for s in SPECS]
    assert t["model"].tolist() == [s["model"] for s in SPECS]
    for col in ("tau1", "tau2", "er"):
        lo, mean, hi = (t[f"{col}{sfx}"].to_numpy(dtype=float) for sfx in ("_lo", "", "_hi"))
        assert np.all(np.isfinite(mean)), col
        assert np.all(lo <= mean) and np.all(mean <= hi), (col, lo, mean, hi)
        assert np.all(hi > lo), col  # predictive intervals are not degenerate
    assert np.all(t["fit_seconds"].iloc[:3] > 0) and np.isnan(t["fit_seconds"].iloc[3])
    assert (t["tau1_true"] == sample.truth.tau1).all()
    assert (t["tau2_true"] == sample.truth.tau2).all()
    assert "n_above_threshold" in t.columns
    # a wider prior on alpha changes the merged prior stamped in the table
    assert '"sigma": 5' in t.loc[1, "priors"] and '"sigma": 2.5' in t.loc[0, "priors"]


def test_settings_say_what_each_model_used(result):
    # the Python API's stamp, not only the CLI's summary: method="map" is the PyMC
    # models' method, the closed form used its plug-in
    for settings in (result.settings, result.provenance["settings"]):
        assert "method" not in settings
        assert settings["fit_method"] == "map"
        assert settings["methods"] == {"pg": "map", "pg-wide": "map", "nb": "map",
                                       "closed": "plug-in"}


def test_loo_filled_only_within_a_likelihood_family(result):
    from sdcbayes.inference import loo

    t = result.table.set_index("name")
    assert np.isnan(t.loc["closed", ["elpd_loo", "elpd_loo_se", "loo_rank", "elpd_diff"]]
                    .astype(float)).all()
    assert "no likelihood" in t.loc["closed", "loo_note"]
    # each Poisson-gamma posterior's elpd recomputed directly from its own fit
    for name in ("pg", "pg-wide"):
        direct = loo(result.assessments[name].idata).elpd_loo
        assert t.loc[name, "elpd_loo"] == pytest.approx(direct, rel=1e-12)
    # ranks and differences are within the family: the two Poisson-gamma fits
    pg = t.loc[["pg", "pg-wide"]]
    assert sorted(pg["loo_rank"].astype(int)) == [0, 1]
    best = pg["elpd_loo"].max()
    np.testing.assert_allclose(pg["elpd_diff"], best - pg["elpd_loo"], rtol=0, atol=1e-9)
    # negbin has one observation (the within-cell sum of squares): its LOO cannot rank
    # fits (audit AA7), so its columns stay empty, the one-point LOO kept in result.loo
    assert np.isnan(t.loc["nb", ["elpd_loo", "loo_rank", "elpd_diff"]].astype(float)).all()
    assert "cannot compare these fits" in t.loc["nb", "loo_note"]
    with pytest.warns(Warning):  # one data point: no standard error
        direct = loo(result.assessments["nb"].idata).elpd_loo
    assert result.loo["negbin"].loc["nb", "elpd_loo"] == pytest.approx(direct, rel=1e-12)
    for name in ("pg", "pg-wide", "nb"):
        assert "not comparable across likelihoods" in t.loc[name, "loo_note"]
    assert set(result.loo) == {"poisson-gamma", "negbin"}
    assert set(result.loo["poisson-gamma"].index) == {"pg", "pg-wide"}


def test_closed_form_row_is_the_plug_in_assessment(result, md):
    from sdcbayes.risk.assess import assess_closed_form

    ref = assess_closed_form(md).summary
    row = result.table.set_index("name").loc["closed"]
    assert row["tau1"] == pytest.approx(ref["tau1"], rel=1e-10)
    assert row["tau2"] == pytest.approx(ref["tau2"], rel=1e-10)
    assert row["er"] == pytest.approx(ref["expected_reidentifications"], rel=1e-10)


# --------------------------------------------------------------------------- decisions


def test_changed_cells_equal_a_direct_comparison_of_publish_flags(result):
    flags = {name: res.table["publish"].to_numpy(dtype=bool)
             for name, res in result.decision_results.items()}
    stacked = np.column_stack(list(flags.values()))
    direct = np.flatnonzero([len(set(row)) > 1 for row in stacked.tolist()])
    np.testing.assert_array_equal(result.changed_cells, direct)
    d = result.decisions
    for name, f in flags.items():
        np.testing.assert_array_equal(d[f"publish_{name}"].to_numpy(dtype=bool), f)
    np.testing.assert_array_equal(np.flatnonzero(d["changed"].to_numpy()), direct)
    # the closed form and the Poisson-gamma model disagree on some cells on this file
    assert result.changed_cells.size > 0


def test_reidentification_risk_against_brute_force_summation(result, md):
    """R1 = f E(1/F | f): the closed form per draw vs summing f/F over NegBin(r, rho)."""
    from sdcbayes.risk.posterior_assess import posterior_groups

    fk = np.asarray(md.cells.fk, dtype=float)
    for name, model in (("pg", "poisson-gamma"), ("closed", None)):
        R1 = result.decision_results[name].table["R1"].to_numpy()
        if model is None:  # plug-in: F - f ~ NegBin(f, f / F_hat)
            p = np.minimum(fk / np.asarray(md.cells.Fk_hat), 1.0)
            brute = negbin_expected_loss(REIDENTIFICATION_LOSS, fk, 1.0, 1.0, fk, p)
        else:
            g = posterior_groups(md, result.assessments[name].idata, model)
            per = negbin_expected_loss(REIDENTIFICATION_LOSS, g.f[None, :], 1.0, 1.0,
                                       np.broadcast_to(g.r, (g.n_draws, g.f.size)),
                                       np.broadcast_to(g.rho, (g.n_draws, g.f.size)))
            brute = per.mean(axis=0)[g.cell_group]
        np.testing.assert_allclose(R1, brute, rtol=1e-8)
        R0 = result.decision_results[name].table["R0"].to_numpy()
        np.testing.assert_array_equal(R0, fk)  # suppression loss y: the records lost


def test_default_pair_orders_cells_by_individual_risk(result):
    for name, res in result.decision_results.items():
        ratio = res.table["ratio"].to_numpy()
        np.testing.assert_allclose(ratio, result.decisions[f"risk_{name}"].to_numpy(), rtol=1e-12)


def test_frontiers_per_model_and_pair(result, md):
    fr = result.frontiers
    m = md.cells.n_cells
    assert result.pairs == ["reidentifications/y", "uniques-equal:S=10/y"]
    for name in result.decision_results:
        for pair in result.pairs:
            sub = fr[(fr["model"] == name) & (fr["pair"] == pair)]
            assert len(sub) == m + 1
            D, S = sub["disclosure_share"].to_numpy(), sub["nonpublication_share"].to_numpy()
            assert (D[0], S[0], D[-1], S[-1]) == (0.0, 1.0, 1.0, 0.0)
            assert np.all(np.diff(D) >= 0) and np.all(np.diff(S) <= 0)
    sup = result.suppression.set_index(["model", "pair"])["suppression_at_target"]
    for name, res in result.decision_results.items():
        assert sup[(name, "reidentifications/y")] == pytest.approx(res.suppression_at_target)
        assert 0 < sup[(name, ALT)] < 1
    js = result.summary()
    assert js["n_changed_cells"] == result.changed_cells.size
    assert [r["name"] for r in js["comparison"]] == [s["name"] for s in SPECS]


# --------------------------------------------------------------------------- enumeration


def _brute_expected_loss(loss, f, n, N, r, rho):
    """E[L(f, f + X, n, N)], X ~ NegBin(r, rho), summed term by term by scipy's pmf."""
    from scipy import stats

    out = np.empty(f.shape)
    for idx in np.ndindex(f.shape):
        if rho[idx] >= 1.0:
            out[idx] = float(loss(f[idx], f[idx], n, N))
            continue
        x = np.arange(int(stats.nbinom.ppf(1 - 1e-15, r[idx], rho[idx])) + 1, dtype=float)
        p = stats.nbinom.pmf(x, r[idx], rho[idx])
        out[idx] = float(np.sum(np.asarray(loss(f[idx], f[idx] + x, n, N), float) * p))
    return out


def test_expected_loss_enumerated_against_brute_force_and_decisions():
    rng = np.random.default_rng(7)
    f = rng.integers(1, 40, size=(6, 5)).astype(float)
    r = f + rng.gamma(0.5, 1.0, size=f.shape)
    rho = rng.uniform(0.03, 1.0, size=f.shape)
    rho[0, :3] = 1.0  # no unsampled population: F = f exactly
    for spec in ("uniques-equal:S=10", "threshold:Ymin=3", "Y", "uniques-gamma:S=5,a=2"):
        loss = parse_loss(spec)
        a = expected_loss_enumerated(loss, f, 50.0, 900.0, r, rho)
        np.testing.assert_allclose(a, _brute_expected_loss(loss, f, 50.0, 900.0, r, rho),
                                   rtol=1e-10, atol=1e-300, err_msg=spec)
        # the decisions module's entry point gives the same numbers (it delegates here)
        b = negbin_expected_loss(loss, f, 50.0, 900.0, r, rho)
        np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=spec)
    # f/F summed over the support is f E(1/F), seed 004 eq. 6 in closed form
    a = expected_loss_enumerated(REIDENTIFICATION_LOSS, f, 1.0, 1.0, r, rho)
    np.testing.assert_allclose(a, f * negbin_inverse_moment(f, r, rho), rtol=1e-10)


# --------------------------------------------------------------------------- validation


def test_spec_syntax():
    specs = parse_model_specs(
        "pg-wide=poisson-gamma:alpha.sigma=5,omega.sigma=2.5,negbin,closed=closed-form"
    )
    assert [(s.name, s.model) for s in specs] == [
        ("pg-wide", "poisson-gamma"), ("negbin", "negbin"), ("closed", "closed-form")]
    assert specs[0].priors == {"alpha": {"sigma": 5}, "omega": {"sigma": 2.5}}
    d = parse_model_specs("x=poisson-gamma:alpha.dist=HalfNormal")[0]
    assert d.priors == {"alpha": {"dist": "HalfNormal"}}


@pytest.mark.parametrize(
    ("specs", "fragments"),
    [
        ([{"name": "a", "model": "poisson-gamma", "priors": {"alfa": {}, "beta": {}}}],
         ["'alfa'", "'beta'", "alpha", "omega"]),
        ([{"name": "a", "model": "negbin", "priors": {"tau": {"sigma": 1}}}], ["'tau'", "sigma"]),
        ([{"name": "a", "model": "poisson-gama"}], ["poisson-gama", "closed-form"]),
        ([{"name": "a", "model": "negbin"}, {"name": "a", "model": "closed-form"}], ["duplicate"]),
        ([{"name": "c", "model": "closed-form", "priors": {"alpha": {}}}], ["no priors"]),
        ([{"name": "a", "model": "negbin", "prior": {}}], ["unknown key", "'prior'"]),
        (["pg=poisson-gamma:alpha=5"], ["PRIOR.FIELD=VALUE"]),
        (["alpha.sigma=5"], ["NAME=MODEL first"]),
        ([], ["at least one"]),
        # latent-class specifications: priors and options
        ([{"name": "a", "model": "latent-class", "priors": {"beta": {"sigma": 1}}}],
         ["'beta'", "alpha", "phi"]),
        ([{"name": "a", "model": "negbin", "options": {"n_classes": 5}}], ["only latent-class"]),
        ([{"name": "a", "model": "latent-class", "options": {"n_clases": 5}}],
         ["n_clases", "n_classes"]),
        ([{"name": "a", "model": "latent-class", "options": {"overdispersion": "yes"}}],
         ["overdispersion"]),
        (["lc=latent-class:classes=x"], ["n_classes"]),
        # a prior's support against the parameter's range, before any model is fitted
        ([{"name": "a", "model": "poisson-gamma",
           "priors": {"alpha": {"dist": "Normal", "mu": 0, "sigma": 1}}}],
         ["'alpha'", "Normal puts mass outside", "positive"]),
        ([{"name": "a", "model": "negbin", "priors": {"sigma": {"dist": "Normal"}}}],
         ["'sigma'", "Normal puts mass outside"]),
    ],
)
def test_bad_specs_are_one_error(specs, fragments):
    with pytest.raises(InputError) as err:
        validate_specs(specs)
    msg = str(err.value)
    assert "\n" not in msg
    for frag in fragments:
        assert frag in msg, msg


def test_poisson_gamma_prior_mirror_matches_the_model_class():
    from sdcbayes.models.poisson_gamma import PoissonGammaModel
    from sdcbayes.risk.compare import _POISSON_GAMMA_PRIOR_NAMES

    assert set(_POISSON_GAMMA_PRIOR_NAMES) == set(PoissonGammaModel._defaults("pooled", False))


def test_bad_input_fails_before_fitting_and_without_pymc(tmp_path):
    """Every check runs before PyMC is imported: a typo costs no fit (and no 5-10 s import)."""
    code = (
        "import sys\n"
        "from sdcbayes.exceptions import InputError\n"
        "from sdcbayes.microdata import Microdata\n"
        "import pandas as pd\n"
        "from sdcbayes.risk.compare import compare_models\n"
        "df = pd.DataFrame({'a': [1, 1, 2, 2], 'b': [0, 0, 1, 1], 'w': [10., 10., 15., 15.]})\n"
        "md = Microdata(df, keys=['a', 'b'], weight='w')\n"
        "bad = [\n"
        "  [{'name': 'pg', 'model': 'poisson-gamma', 'priors': {'alfa': {'sigma': 1}}}],\n"
        "  [{'name': 'nb', 'model': 'negbin'}],\n"  # weights constant within cells
        "]\n"
        "for specs in bad:\n"
        "    try:\n"
        "        compare_models(md, specs)\n"
        "    except InputError as e:\n"
        "        print('ERR', e)\n"
        "    else:\n"
        "        raise SystemExit('no error')\n"
        "for kw in ({'disclosure_loss': 'nope'}, {'alternatives': ['uniques-equal:S=1']},\n"
        "           {'target_risk': 2.0}, {'target_accept': 1.0}):\n"
        "    try:\n"
        "        compare_models(md, [{'name': 'c', 'model': 'closed-form'}], **kw)\n"
        "    except InputError as e:\n"
        "        print('ERR', e)\n"
        "    else:\n"
        "        raise SystemExit('no error')\n"
        "assert 'pymc' not in sys.modules, 'PyMC imported before validation finished'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 6 and all(x.startswith("ERR") for x in lines), proc.stdout
    assert "'alfa'" in lines[0] and "constant within every cell" in lines[1]
    assert "target_accept" in lines[5] and "between 0 and 1" in lines[5]


def test_negbin_without_weights_is_refused_before_fitting():
    import pandas as pd

    from sdcbayes.microdata import Microdata

    md0 = Microdata(pd.DataFrame({"a": [1, 1, 2], "b": [0, 1, 0]}), keys=["a", "b"])
    for spec in ({"name": "nb", "model": "negbin"}, {"name": "pg", "model": "poisson-gamma"}):
        with pytest.raises(InputError, match="weight"):
            compare_models(md0, [spec])


def test_negbin_on_wildcard_cells_is_refused_before_any_model_is_fitted(monkeypatch):
    import pandas as pd

    import sdcbayes.risk.compare as compare_module
    from sdcbayes.microdata import Microdata

    # the closed form listed first must not run: the negbin's data problem comes first
    monkeypatch.setattr(compare_module, "_plug_in_posterior",
                        lambda *a, **k: pytest.fail("a model was fitted before the check"))
    df = pd.DataFrame({"a": [1, 1, 2, None], "b": [0, 1, 0, 1], "w": [10.0, 12.0, 15.0, 20.0]})
    md0 = Microdata(df, keys=["a", "b"], weight="w")
    with pytest.raises(InputError, match="negbin model needs each record in one cell"):
        compare_models(md0, [{"name": "c", "model": "closed-form"},
                             {"name": "nb", "model": "negbin"}])


# --------------------------------------------------------------------------- the sampler


def test_target_accept_reaches_the_nuts_sampler(md, monkeypatch):
    """``target_accept`` is NUTS's: its dual averaging adapts the step size to it.

    The fits are captured from :func:`sdcbayes.inference.fit` (compare_models looks it
    up at call time) and judged by the sampler's own output, not by the argument: a
    0.99 target must give a far smaller adapted step and a higher mean acceptance than
    0.6 (measured: step 0.31 vs 2.3, acceptance 0.99 vs 0.76 on this sample). One chain
    of 150 + 100 steps of the two-parameter Poisson-gamma model: a second or so after
    the one-off compilation.
    """
    import json

    import sdcbayes.inference as inference

    real_fit = inference.fit
    fits = []

    def recording_fit(*args, **kwargs):
        idata = real_fit(*args, **kwargs)
        fits.append((kwargs, idata))
        return idata

    monkeypatch.setattr(inference, "fit", recording_fit)
    got = {}
    for ta in (0.6, 0.99):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 1 chain: R-hat undefined, by design here
            res = compare_models(md, [{"name": "pg", "model": "poisson-gamma"}],
                                 method="nuts", draws=100, tune=150, chains=1, random_seed=1,
                                 target_accept=ta, max_draws=20)
        kwargs, idata = fits[-1]
        assert kwargs["target_accept"] == ta
        assert json.loads(idata.attrs["settings"])["target_accept"] == ta
        assert res.settings["target_accept"] == ta
        assert res.assessments["pg"].provenance["settings"]["target_accept"] == ta
        ss = idata.sample_stats
        got[ta] = (float(ss["step_size"].mean()), float(ss["acceptance_rate"].mean()))
    assert len(fits) == 2
    (step_lo, acc_lo), (step_hi, acc_hi) = got[0.6], got[0.99]
    assert step_lo > 2 * step_hi, got
    assert acc_hi > 0.9 and acc_hi > acc_lo + 0.1, got


def test_target_accept_is_recorded_as_none_for_approximations(result):
    # MAP/Laplace draws are independent: no sampler, no acceptance target
    assert result.settings["target_accept"] is None


# --------------------------------------------------------------------------- latent-class

LC_SPECS = [
    {"name": "lc", "model": "latent-class", "options": {"n_classes": 5}},
    {"name": "closed", "model": "closed-form"},
]
LC_FIT = {"draws": 60, "tune": 40, "chains": 2, "random_seed": 1}


@pytest.fixture(scope="module")
def lc_result(md):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 60 draws: r_hat/ESS of a toy fit may warn
        return compare_models(md, LC_SPECS, alternatives=[ALT], **LC_FIT)


def test_latent_class_row(lc_result):
    t = lc_result.table.set_index("name")
    row = t.loc["lc"]
    assert row["model"] == "latent-class" and row["method"] == "gibbs"
    for col in ("tau1", "tau2", "er"):
        lo, mean, hi = (float(row[f"{col}{sfx}"]) for sfx in ("_lo", "", "_hi"))
        assert np.isfinite([lo, mean, hi]).all() and lo <= mean <= hi and lo < hi, col
    # no LOO: the Gibbs fit keeps no pointwise log-likelihood, and says so
    assert np.isnan(row[["elpd_loo", "elpd_loo_se", "p_loo", "loo_rank", "elpd_diff"]]
                    .astype(float)).all()
    assert "log-likelihood" in row["loo_note"] and row["likelihood_family"] == ""
    assert lc_result.loo == {}
    # diagnostics of the identifiable functionals; a Gibbs sampler has no divergences
    assert np.isfinite(row["max_r_hat"]) and np.isfinite(row["min_ess_bulk"])
    assert np.isnan(row["divergences"]) and row["fit_seconds"] > 0
    assert '"phi"' in row["priors"] and '"alpha"' in row["priors"]
    assert lc_result.summary()["models"][0]["options"] == {"n_classes": 5}
    assert lc_result.decision_results["lc"].summary()["n_published"] == row["n_published"]
    # the closed-form row is untouched: no options key, its own note
    assert "options" not in lc_result.summary()["models"][1]
    assert "no likelihood" in t.loc["closed", "loo_note"]


def test_tune_defaults_per_model(lc_result, md, monkeypatch):
    """``tune=None`` gives each model its own default; the rows say what each used.

    The Gibbs chains drift for a thousand sweeps or more from their EM starts, so the
    latent-class row gets the burn-in ``sdcbayes assess`` gives it, not NUTS's 500.
    """
    import sdcbayes.risk.compare as rc
    from sdcbayes.risk.posterior_assess import SAMPLER_DEFAULTS

    assert rc.COMPARE_TUNE_DEFAULTS["latent-class"] == SAMPLER_DEFAULTS["latent-class"]["tune"]
    assert rc.COMPARE_TUNE_DEFAULTS["nuts"] == 500
    assert rc.tune_for("latent-class", None) == 2000
    assert rc.tune_for("poisson-gamma", None) == rc.tune_for("negbin", None) == 500
    assert rc.tune_for("latent-class", 7) == rc.tune_for("negbin", 7) == 7
    # explicit tune: every row records it, the closed form none
    t = lc_result.table.set_index("name")
    assert t.loc["lc", "tune"] == LC_FIT["tune"] and pd.isna(t.loc["closed", "tune"])
    assert lc_result.settings["tune"] == LC_FIT["tune"]
    # default route: the latent-class default is what the fit used (same numbers as an
    # explicit run with that many sweeps; a small default keeps the test fast)
    monkeypatch.setitem(rc.COMPARE_TUNE_DEFAULTS, "latent-class", LC_FIT["tune"])
    monkeypatch.setitem(rc.COMPARE_TUNE_DEFAULTS, "nuts", 3)
    fit = {k: v for k, v in LC_FIT.items() if k != "tune"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dflt = compare_models(md, LC_SPECS, alternatives=[ALT], **fit)
    assert dflt.settings["tune"] is None
    assert dflt.settings["tune_defaults"] == {"latent-class": LC_FIT["tune"], "nuts": 3}
    pd.testing.assert_frame_equal(dflt.table.drop(columns="fit_seconds"),
                                  lc_result.table.drop(columns="fit_seconds"))
    assert dflt.assessments["lc"].provenance["settings"]["tune"] == LC_FIT["tune"]
    with pytest.raises(InputError, match="tune"):
        compare_models(md, LC_SPECS, tune=-1, **fit)


def test_latent_class_row_equals_sdcbayes_assess(lc_result, md):
    """Same data, settings and seed as ``sdcbayes assess``'s default model: same numbers.

    ``sdcbayes assess`` fits it with ``--overdispersion cv`` by default (the Python
    ``assess_posterior`` leaves overdispersion off unless asked).
    """
    from sdcbayes.risk.posterior_assess import assess_posterior

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = assess_posterior(md, "latent-class", n_classes=5, overdispersion="cv", **LC_FIT)
    s = a.summary
    assert s["method"] == "gibbs" and s["overdispersion"]["method"] != "fixed"
    row = lc_result.table.set_index("name").loc["lc"]
    for key, col in (("tau1", "tau1"), ("tau2", "tau2"), ("expected_reidentifications", "er")):
        assert row[col] == pytest.approx(s[key], rel=1e-12), col
        assert [row[f"{col}_lo"], row[f"{col}_hi"]] == pytest.approx(s[f"{key}_interval"])
    np.testing.assert_allclose(lc_result.decisions["risk_lc"], a.cells["risk"], rtol=1e-12)
    # the default pair's R1 is f E(1/F | f): the cell's records times the assessed risk
    R1 = lc_result.decision_results["lc"].table["R1"].to_numpy()
    np.testing.assert_allclose(R1, np.asarray(md.cells.fk) * a.cells["risk"], rtol=1e-12)


def test_unseeded_comparison_stamps_one_seed_for_all_models(lc_result, md):
    unseeded = {k: v for k, v in LC_FIT.items() if k != "random_seed"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = compare_models(md, LC_SPECS, **unseeded)
        seed = first.settings["random_seed"]
        assert isinstance(seed, int)
        again = compare_models(md, LC_SPECS, random_seed=seed, **unseeded)
    # every model got the drawn seed, and the stamped seed repeats the comparison
    assert first.assessments["lc"].provenance["settings"]["random_seed"] == seed
    pd.testing.assert_frame_equal(first.table.drop(columns="fit_seconds"),
                                  again.table.drop(columns="fit_seconds"))


def test_latent_class_groups_mean_is_the_assessed_F_mean(lc_result, md):
    """The groups' NegBin means, averaged over draws, are assess's E(F_k | f_k).

    The stratified sample has unequal weights, so the fit extrapolates weight class by
    weight class (its own ``lam``); groups built from (N - n) pi would miss this.
    """
    from sdcbayes.risk.posterior_assess import latent_class_groups, posterior_groups

    a = lc_result.assessments["lc"]
    assert a.idata.attrs.get("weight_classes")  # the lam route is exercised
    g = latent_class_groups(md, a.idata)
    assert g.per_cell and g.r.shape == (120, md.cells.n_cells)
    mean = (g.r * (1.0 - g.rho) / g.rho).mean(axis=0) + g.f
    np.testing.assert_allclose(mean, a.cells["F_mean"], rtol=1e-6)
    g2 = posterior_groups(md, a.idata, "latent-class")
    np.testing.assert_array_equal(g2.rho, g.rho)
    # under ALT the lc row's R1 is the enumeration over these groups
    from sdcbayes.risk.compare import expected_loss_enumerated

    loss = parse_loss(ALT.split("/")[0])
    n = float(md.cells.n_records)
    N = float(a.summary["population_size"])
    idx = np.unique(np.linspace(0, 119, 100).round().astype(int))  # max_draws=100
    want = expected_loss_enumerated(loss, g.f[None, :], n, N, g.r[idx], g.rho[idx]).mean(axis=0)
    fr = lc_result.frontiers
    assert len(fr[(fr["model"] == "lc") & (fr["pair"] == ALT)]) == md.cells.n_cells + 1
    from sdcbayes.risk.compare import _cell_risks

    got = _cell_risks(loss, g, g.f, n, N, None, 100)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # compare builds the groups on those draws only: the same rows, the same risks
    gi = latent_class_groups(md, a.idata, draw_index=idx)
    assert gi.r.shape == (idx.size, md.cells.n_cells)
    np.testing.assert_array_equal(gi.rho, g.rho[idx])
    np.testing.assert_array_equal(gi.r, g.r[idx])
    np.testing.assert_allclose(_cell_risks(loss, gi, g.f, n, N, None, 100), want, rtol=1e-12)
    with pytest.raises(InputError, match="draw_index"):
        latent_class_groups(md, a.idata, draw_index=[0, 120])


def _tiny_md():
    import pandas as pd

    from sdcbayes.microdata import Microdata

    # cells (a, b): f = 1, 1, 1, 2, 3, 5
    rows = [(0, 0), (0, 1), (1, 0), (1, 1), (1, 1), (2, 0), (2, 0), (2, 0)] + [(2, 1)] * 5
    df = pd.DataFrame(rows, columns=["a", "b"])
    return Microdata(df, keys=["a", "b"], sampling_fraction=0.25)


def _tiny_posterior(md, kappa):
    import xarray as xr

    rng = np.random.default_rng(11)
    C = md.cells.n_cells
    fk = np.asarray(md.cells.fk, dtype=float)
    # pi near f/n, jittered per draw (4 draws)
    pi = rng.dirichlet(fk * 20.0, size=4)
    data = {"pi": (("chain", "draw", "cell"), pi[None])}
    if kappa is not None:
        data["kappa"] = (("chain", "draw"), np.asarray(kappa, dtype=float)[None])
    return xr.Dataset(data, coords={"chain": [0], "draw": np.arange(4), "cell": np.arange(C)})


@pytest.mark.parametrize("kappa", [[0.4, 3.0, np.inf, 25.0], None])
def test_latent_class_groups_against_the_model_closed_forms(kappa):
    """NegBin(r, rho) per draw and cell against models/latent_class.py's own forms.

    P(F = 1 | f = 1) = rho**r against ``prob_population_unique``; f E(1/F | f) summed
    over the predictive against ``expected_inverse_frequency_f`` (every f); a threshold
    loss against Monte Carlo from ``simulate_excess``. Finite kappa, a draw with kappa =
    inf (Poisson) and a posterior without kappa (Poisson cells, the NegBin limit).
    """
    from sdcbayes.models.latent_class import (
        expected_inverse_frequency_f,
        prob_population_unique,
        simulate_excess,
    )
    from sdcbayes.risk.posterior_assess import latent_class_groups

    md = _tiny_md()
    post = _tiny_posterior(md, kappa)
    g = latent_class_groups(md, post)
    n, N = 13.0, 52.0
    pi = post["pi"].values[0]
    lam = (N - n) * pi
    f = np.asarray(md.cells.fk, dtype=float)
    kap = None if kappa is None else np.asarray(kappa, dtype=float)[:, None]
    np.testing.assert_array_equal(g.f, f)
    np.testing.assert_array_equal(g.cell_group, np.arange(f.size))
    # P(F = 1 | f = 1): the NegBin zero probability rho**r
    u = f == 1
    p1 = prob_population_unique(lam, kap, n * pi)
    np.testing.assert_allclose((g.rho ** g.r)[:, u], p1[:, u], rtol=1e-6)
    # E(f/F | f) by enumeration = f E(1/F | f) of the model
    R1 = expected_loss_enumerated(REIDENTIFICATION_LOSS, f[None, :], n, N, g.r, g.rho)
    np.testing.assert_allclose(R1, f * expected_inverse_frequency_f(f, lam, kap, n * pi),
                               rtol=1e-6)
    # a threshold loss against the model's own simulator
    loss = parse_loss("threshold:Ymin=4")
    exact = expected_loss_enumerated(loss, f[None, :], n, N, g.r, g.rho)
    rng = np.random.default_rng(5)
    M = 200_000
    kk = None if kap is None else kap[:, :, None]
    x = simulate_excess(np.broadcast_to(lam[:, :, None], lam.shape + (M,)), rng, kk,
                        (n * pi)[:, :, None], f=f[None, :, None])
    mc = np.asarray(loss(f[None, :, None], f[None, :, None] + x, n, N), dtype=float).mean(axis=2)
    np.testing.assert_allclose(exact, mc, atol=5e-3)
    assert np.all(exact[:, u] > 0.05)  # not trivially 0 where it matters


def test_latent_class_bad_input_fails_before_fitting_and_without_pymc(tmp_path):
    """Wildcard-missing keys, a missing population size, unknown prior names, options."""
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import pandas as pd\n"
        "from sdcbayes.exceptions import InputError\n"
        "from sdcbayes.microdata import Microdata\n"
        "from sdcbayes.risk.compare import compare_models\n"
        "df = pd.DataFrame({'a': [1, 1, 2, np.nan, 3], 'b': [0, 0, 1, 1, 0]})\n"
        "wild = Microdata(df, keys=['a', 'b'], sampling_fraction=0.1)\n"
        "cat = Microdata(df, keys=['a', 'b'], sampling_fraction=0.1, missing='category')\n"
        "nopop = Microdata(df, keys=['a', 'b'], missing='category')\n"
        "lc = {'name': 'lc', 'model': 'latent-class'}\n"
        "bad = [\n"
        "  (wild, [lc]),\n"
        "  (nopop, [lc]),\n"
        "  (cat, [dict(lc, priors={'alfa': {'alpha': 1}})]),\n"
        "  (cat, [dict(lc, priors={'alpha': {'dist': 'HalfNormal', 'sigma': 1}})]),\n"
        "  (cat, [dict(lc, options={'n_classes': 0})]),\n"
        "  (cat, [dict(lc, options={'profile_mass': 'cv', 'overdispersion': None})]),\n"
        "  (cat, [dict(lc, options={'profile_mass': 'all'})]),\n"
        "  (cat, [dict(lc, options={'init': 'margins'})]),\n"
        "]\n"
        "for md, specs in bad:\n"
        "    try:\n"
        "        compare_models(md, specs)\n"
        "    except InputError as e:\n"
        "        print('ERR', ' '.join(str(e).split()))\n"
        "    else:\n"
        "        raise SystemExit('no error')\n"
        "assert 'pymc' not in sys.modules, 'PyMC imported before validation finished'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 8 and all(x.startswith("ERR") for x in lines), proc.stdout
    assert "each record in one cell" in lines[0] and "missing='category'" in lines[0]
    assert "population size" in lines[1]
    assert "'alfa'" in lines[2] and "'phi'" in lines[2]
    assert "Gamma" in lines[3]
    assert "n_classes" in lines[4]
    assert "profile-mass=cv" in lines[5] and "overdispersion=cv" in lines[5]
    assert "profile_mass" in lines[6] and "'all'" in lines[6]
    assert "chain-start=" in lines[7] and "'bootstrap'" in lines[7]


def test_latent_class_spec_syntax():
    specs = parse_model_specs(
        "lc=latent-class,lc-pois=latent-class:overdispersion=none,classes=10,phi.a=0.5,"
        "structural-zeros=auto,classes=latent-class:alpha.alpha=1,closed=closed-form,"
        "lc-mass=latent-class:profile-mass=cv,lc-span=latent-class:profile-mass=span,"
        "lc-boot=latent-class:chain-start=bootstrap"
    )
    assert [(s.name, s.model) for s in specs] == [
        ("lc", "latent-class"), ("lc-pois", "latent-class"), ("classes", "latent-class"),
        ("closed", "closed-form"), ("lc-mass", "latent-class"), ("lc-span", "latent-class"),
        ("lc-boot", "latent-class")]
    assert specs[6].options == {"init": "bootstrap"}
    assert specs[4].options == {"profile_mass": "cv"}
    assert specs[5].options == {"profile_mass": "span"}
    assert specs[0].options == {} and specs[0].priors == {}
    assert specs[1].options == {"overdispersion": None, "n_classes": 10,
                                "structural_zeros": "auto"}
    assert specs[1].priors == {"phi": {"a": 0.5}}
    assert specs[2].priors == {"alpha": {"alpha": 1}}
    assert specs[1].to_dict()["options"]["n_classes"] == 10
    assert "options" not in specs[3].to_dict()


def test_a_fits_warnings_carry_its_name():
    """compare_models re-issues each fit's sdcbayes warnings as "<model>: <message>" (same
    category, so filters and the CLI treat them as before); others pass unchanged."""
    import warnings

    from sdcbayes.inference.diagnostics import ConvergenceWarning
    from sdcbayes.risk.compare import _warnings_named

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _warnings_named("pg-wide"):
            warnings.warn("parameter beta has bulk ESS 30 < 200", ConvergenceWarning,
                          stacklevel=1)
            warnings.warn("something of numpy's", RuntimeWarning, stacklevel=1)
    assert [(w.category, str(w.message)) for w in caught] == [
        (ConvergenceWarning, "pg-wide: parameter beta has bulk ESS 30 < 200"),
        (RuntimeWarning, "something of numpy's")]


# --------------------------------------------------------------------------- cores
class _Stop(Exception):
    pass


def test_cores_reach_every_fit_and_are_stamped(md, monkeypatch):
    import sdcbayes.inference as inference
    import sdcbayes.risk.posterior_assess as pa

    seen: dict[str, object] = {}
    real_fit = inference.fit

    def recording_fit(*args, **kwargs):
        seen["fit"] = kwargs.get("cores")
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(inference, "fit", recording_fit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # 30 draws: ArviZ 1's PSIS-LOO needs at least 25 (README, "The two commands")
        res = compare_models(md, [{"name": "pg", "model": "poisson-gamma"}], method="map",
                             draws=30, chains=1, random_seed=1, cores=2)
    assert seen["fit"] == 2
    assert res.settings["cores"] == 2 and res.provenance["settings"]["cores"] == 2
    assert res.assessments["pg"].provenance["settings"]["cores"] == 2

    def stop(*args, **kwargs):  # the latent-class fit: its options, then no work
        seen["latent-class"] = kwargs.get("cores")
        raise _Stop

    monkeypatch.setattr(pa, "assess_posterior", stop)
    with pytest.raises(_Stop):
        compare_models(md, [{"name": "lc", "model": "latent-class"}], cores=2)
    assert seen["latent-class"] == 2


@pytest.mark.parametrize("cores", [0, -1, 1.5, True, "2"])
def test_bad_cores_are_refused_before_any_fit(md, cores):
    with pytest.raises(InputError, match="cores must be None or an integer >= 1"):
        compare_models(md, [{"name": "pg", "model": "poisson-gamma"}], cores=cores)
