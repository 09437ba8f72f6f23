"""The expected re-identified households of the posterior models (each household once).

sdcMicro's household risk 1 - Π_{i∈h}(1 - r_i) (seed ``001_…`` Section 3.3) summed once
per household, the closed form's ``household_expected_reidentified_households``, now
also for the posterior models, exactly parallel to the household ER Σ_h |h|(1 - Π(...)):
the estimate the mean over the draws of Σ_h (1 - Π(1 - r_i(θ))), the ``_hyper_interval``
its quantiles, the ``_interval`` the quantiles of the drawn populations' realised
Σ_h (1 - Π(1 - 1/F_i)) (the populations of the household ER's predictive draws), of the
same ``household_interval_kind``; file_draws named as the household ER's.

Oracles (brute force over records and households): the per-draw record risks of one-draw
posteriors (tests/test_released_household.py's ``_per_draw``); the drawn populations
again from the evaluator's own stream (as tests/test_household_predictive.py draws them)
and the released file's own drawn F_p (a hook on ``_Households.add_predictive``);
households of one record (the sum is the household ER, which is the ER); the closed
form's own value; compare's rows and ``sdcbayes assess --household``'s summary.json.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from released_reference import posterior_from_draws
from test_compare_household import LIB_RUN, LIB_SPECS, RUN, _assess, _md, sample, small_csv
from test_household_predictive import HH, _frame, _household_er, _lc, spy_released_draws
from test_released_household import _per_draw, _theta

from sdcbayes import Microdata
from sdcbayes.models.latent_class import LatentClassModel
from sdcbayes.protection import local_suppression
from sdcbayes.risk.assess import assess_closed_form
from sdcbayes.risk.posterior_assess import (
    HYPER_INTERVAL_KIND,
    INTERVAL_KIND,
    assess_from_posterior,
    latent_class_pi,
)
from sdcbayes.risk.released import _draw_observed, assess_released

__all__ = ["sample", "small_csv"]  # the fixtures, imported for pytest to find here

pytestmark = pytest.mark.filterwarnings(
    "ignore::sdcbayes.inference.diagnostics.ConvergenceWarning",
    "ignore::RuntimeWarning")

KEYS = ["a", "b", "c"]
HHH = "household_expected_reidentified_households"
QS = [0.05, 0.95]


def _households(x: np.ndarray, hh: np.ndarray) -> np.ndarray:
    """Brute force: per draw Σ_h (1 - Π_{i∈h}(1 - x_i)), x (draws, records), NaN: left out."""
    out = np.zeros(x.shape[0])
    kept = ~np.isnan(x[0])
    for h in np.unique(hh[kept]):
        mem = (hh == h) & kept
        out += 1.0 - np.prod(1.0 - x[:, mem], axis=1)
    return out


def _assert_households(res, given: np.ndarray, realised: np.ndarray) -> None:
    """``res``'s households: estimate, intervals and draws from the brute-force sums."""
    fd, s = res.file_draws, res.summary
    np.testing.assert_allclose(fd[HHH + "_conditional_mean"].values.ravel(), given,
                               rtol=1e-12)
    np.testing.assert_allclose(fd[HHH].values.ravel(), realised, rtol=1e-12)
    assert s[HHH] == pytest.approx(given.mean(), rel=1e-12)
    assert s[HHH + "_hyper_interval"] == pytest.approx(list(np.quantile(given, QS)),
                                                       rel=1e-12)
    assert s[HHH + "_interval"] == pytest.approx(list(np.quantile(realised, QS)), rel=1e-12)
    assert s["household_interval_kind"] == INTERVAL_KIND
    # each household at most once: fewer than the records' sum where mates exist
    assert s[HHH] < s[HH]


def test_assess_from_posterior_households_are_the_brute_force():
    df = _frame(n=60, seed=3)
    S = 6
    kappa = np.array([0.7, np.inf, 3.0, 1.5, np.inf, 6.0])
    md = Microdata(df, KEYS, weight="w", household="hid")
    spec = LatentClassModel.from_microdata(md, n_classes=3)
    w, phi = _theta(spec, S=S)
    idata = posterior_from_draws(md, spec, w, phi, kappa)
    res = assess_from_posterior(md, idata, "latent-class", random_seed=5)
    # given θ: each draw's record risks from its one-draw posterior (a file without
    # blanks is assess_from_posterior's, tests/test_released_household.py)
    R = _per_draw(md, df, spec, w, phi, kappa).T  # (draws, records)
    hh = md.household_index
    np.testing.assert_allclose(
        _household_er(R, hh), res.file_draws[HH + "_conditional_mean"].values.ravel(),
        rtol=1e-12)  # validates the oracle's risks
    # predictive: the populations again, from evaluate_poisson_cells' stream
    pi, n, N = latent_class_pi(md, idata)
    fk = np.asarray(md.cells.fk, dtype=float)
    X = _draw_observed(fk, pi, None, True, kappa, n, N, 5)
    cell = np.asarray(md.record_cell)
    invF = 1.0 / (fk[cell][None, :] + X[:, cell])
    np.testing.assert_allclose(_household_er(invF, hh),
                               res.file_draws[HH].values.ravel(), rtol=1e-12)
    _assert_households(res, _households(R, hh), _households(invF, hh))


def test_released_households_are_the_brute_force(monkeypatch):
    """Blanks: per draw the one-draw posteriors' risks, and the F_p each pattern drew."""
    df = _frame(n=70, seed=4)
    S = 6
    kappa = np.array([1.5, np.inf, 0.8, 3.0, np.inf, 2.0])
    md = Microdata(df, KEYS, weight="w", household="hid")
    spec = LatentClassModel.from_microdata(md, n_classes=3)
    w, phi = _theta(spec, S=S)
    rel = local_suppression(df, KEYS, 3).frame
    seen = spy_released_draws(monkeypatch)
    out = assess_released(md, rel, posterior_from_draws(md, spec, w, phi, kappa),
                          random_seed=2)
    monkeypatch.undo()
    assert out.summary["n_blanked_records"] > 0
    inv = np.full((S, out.cells.shape[0]), np.nan)
    for e, pb in seen:
        inv[:, pb] = e
    invF = inv[:, out.records["pattern"].to_numpy()]
    R = _per_draw(md, rel, spec, w, phi, kappa).T
    hh = md.household_index
    np.testing.assert_allclose(_household_er(invF, hh), out.file_draws[HH].values.ravel(),
                               rtol=1e-12)  # the hook's F_p are the household ER's
    _assert_households(out, _households(R, hh), _households(invF, hh))


def test_one_record_households_count_the_household_er_which_is_the_er():
    df = _frame(n=50, seed=2)
    df["hid"] = np.arange(len(df))
    md, idata = _lc(df, S=10, kappa=np.linspace(0.5, 9.0, 10))
    res = assess_from_posterior(md, idata, "latent-class", random_seed=3)
    fd, s = res.file_draws, res.summary
    np.testing.assert_array_equal(fd[HHH].values, fd[HH].values)
    np.testing.assert_array_equal(fd[HHH].values, fd["expected_reidentifications"].values)
    np.testing.assert_allclose(fd[HHH + "_conditional_mean"].values,
                               fd["expected_reidentifications_conditional_mean"].values,
                               rtol=1e-12)
    for suffix in ("", "_interval", "_hyper_interval"):
        assert s[HHH + suffix] == pytest.approx(s[HH + suffix], rel=1e-12)
    assert s[HHH + "_interval"] == s["expected_reidentifications_interval"]


def test_the_closed_form_keeps_its_value_and_has_no_interval():
    df = _frame(n=80, seed=6)
    md = Microdata(df, KEYS, weight="w", household="hid")
    s = assess_closed_form(md).summary
    r = assess_closed_form(md).records["risk"].to_numpy()
    assert s[HHH] == pytest.approx(_households(r[None, :], md.household_index)[0],
                                   rel=1e-12)
    assert HHH + "_interval" not in s


def test_compare_rows_carry_the_posterior_households(sample):
    from sdcbayes.risk.compare import compare_models

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare_models(_md(sample, household="household_id"), LIB_SPECS, **LIB_RUN)
    t = res.table.set_index("name")
    cols = list(res.table.columns)
    i = cols.index("household_interval_kind")
    assert cols[i + 1: i + 4] == [HHH, HHH + "_lo", HHH + "_hi"]
    rows = {r["name"]: r for r in res.summary()["comparison"]}
    for name in ("lc", "closed"):
        a = res.assessments[name].summary
        lo, hi = a[HHH + "_interval"]
        assert [t.loc[name, HHH + "_lo"], t.loc[name, HHH + "_hi"]] == [lo, hi]
        assert rows[name][HHH + "_interval"] == [lo, hi]
        assert HHH + "_lo" not in rows[name]
        assert lo <= t.loc[name, HHH] <= hi
    # a posterior row: assess's estimate; the closed form keeps assess_closed_form's
    assert t.loc["lc", HHH] == res.assessments["lc"].summary[HHH]
    md = _md(sample, household="household_id")
    assert t.loc["closed", HHH] == pytest.approx(assess_closed_form(md).summary[HHH],
                                                 rel=1e-12)


def test_assess_cli_summary_terminal_and_report_have_the_households(capsys, small_csv,
                                                                     tmp_path):
    from sdcbayes.cli import _print_summary

    a = _assess(capsys, small_csv, tmp_path, "--model", "latent-class", "--classes", "5",
                *RUN, "--no-posterior")
    lo, hi = a[HHH + "_interval"]
    hlo, hhi = a[HHH + "_hyper_interval"]
    assert lo <= a[HHH] <= hi and hlo <= a[HHH] <= hhi
    assert a["household_interval_kind"] == INTERVAL_KIND
    assert a[HHH] < a[HH]
    page = (tmp_path / "a" / "report.html").read_text()
    assert "<td>expected re-identified households</td>" in page
    _print_summary(a, tmp_path)
    line = next(x for x in capsys.readouterr().out.splitlines()
                if x.lstrip().startswith("expected re-identified households"))
    assert line.split("expected re-identified households")[1].strip() == (
        f"{a[HHH]:.2f}  [{lo:.2f}, {hi:.2f}] predictive")


def test_protect_carries_the_households_to_its_rows_and_report():
    """protect --model latent-class: risk.before/after copy the posterior summary's keys;
    the terminal and report.html show them beside the household ER, of its kind."""
    from sdcbayes.commands.protect import _household_lines, _household_posterior
    from sdcbayes.report import _protection_report_latent_class

    df = _frame(n=60, seed=8)
    md, idata = _lc(df, S=10, kappa=np.linspace(0.5, 4.0, 10))
    s = assess_from_posterior(md, idata, "latent-class", random_seed=2).summary
    side = _household_posterior(s)
    for suffix in ("", "_interval", "_hyper_interval"):
        assert side[HHH + suffix] == s[HHH + suffix]
    cf = {"before": {}, "after": {}}
    rows = dict(_household_lines(side, side, cf))
    lo, hi = s[HHH + "_interval"]
    one = f"{s[HHH]:.2f} [{lo:.2f}, {hi:.2f}] predictive"
    assert rows["  expected re-identified households"] == f"{one} -> {one}"
    page = _protection_report_latent_class({
        "command": "protect", "household": "hid", "keys": KEYS, "weight": "w", "steps": [],
        "risk": {"before": side, "after": side, "closed_form": {},
                 "fit": {"interval_level": 0.9}}})
    assert "expected re-identified households (latent-class), 90% interval" in page


def test_truth_counts_each_sampled_household_once():
    """A household sample's truth: Σ_h (1 - Π_{i∈h}(1 - 1/F_i)) over its households."""
    from sdcbayes.datasets.census import simulate_population
    from sdcbayes.datasets.sampling import draw_sample

    s = draw_sample(simulate_population(600, seed=2), keys=("age_group", "sex", "region"),
                    fraction=0.2, design="household", seed=3)
    hh = s.sample["household_id"].to_numpy()
    want = _households(s.truth.record_risk[None, :], hh)[0]
    assert s.truth.household_expected_reidentified_households == pytest.approx(want,
                                                                               rel=1e-12)
    assert s.truth.summary()[HHH] == s.truth.household_expected_reidentified_households
    assert want < s.truth.household_expected_reidentifications
    # other designs have no household truth
    srs = draw_sample(simulate_population(200, seed=2), keys=("age_group", "sex"),
                      fraction=0.2, design="srs", seed=3)
    assert srs.truth.household_expected_reidentified_households is None


def test_poisson_gamma_normal_route_gives_them_over_theta_only():
    """No F drawn: the interval is the hyper interval, of the kind the household ER's is;
    the estimate and hyper interval are the exact route's."""
    md = Microdata(_frame(n=120, seed=8), KEYS, household="hid", sampling_fraction=0.05)
    rng = np.random.default_rng(1)
    post = xr.Dataset({"alpha": (("chain", "draw"), rng.uniform(0.3, 0.8, (2, 20))),
                       "beta": (("chain", "draw"), rng.uniform(1e-3, 2e-2, (2, 20)))})
    normal, exact = (assess_from_posterior(md, post, "poisson-gamma", N=120 / 0.05,
                                           random_seed=1, predictive=p).summary
                     for p in ("normal", "exact"))
    assert normal["household_interval_kind"] == HYPER_INTERVAL_KIND
    assert normal[HHH + "_interval"] == normal[HHH + "_hyper_interval"]
    for key in (HHH, HHH + "_hyper_interval"):
        assert normal[key] == pytest.approx(exact[key], rel=1e-12)
    assert exact[HHH + "_interval"] != exact[HHH + "_hyper_interval"]
