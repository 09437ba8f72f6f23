"""Posterior household risk (audit AA1): sdcMicro's formula on the record risk's own draws.

Given a draw theta_s, household h has risk 1 - prod_{i in h}(1 - r_i(theta_s)) (sdcMicro's
``measure_risk`` household formula, seed ``001_…`` Section 3.3). The references below are
independent of the code under test: the product is taken record by record over every
draw, and the record risks r_i(theta_s) come from the per-draw conditionals the record
risk itself uses. The audit found the household step on 500 thinned draws while the
record risk used all 2000, so a one-record household's risk differed from its record's
(by up to 0.015) and could fall below it; these tests use more than 500 draws.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from sdcbayes import Microdata
from sdcbayes.risk.individual import negbin_inverse_moment
from sdcbayes.risk.posterior import (
    evaluate_groups,
    negbin_groups,
    poisson_gamma_groups,
    summary_table,
)
from sdcbayes.risk.posterior_assess import assess_from_posterior, evaluate_poisson_cells

S_DRAWS = 900  # more than the 500 draws the household step used to be thinned to


def _negbin_case(seed=0, C=40):
    """Per-cell groups whose risk moves a lot between draws (p_k uncertain)."""
    rng = np.random.default_rng(seed)
    fk = rng.integers(1, 5, C)
    p = rng.uniform(0.05, 0.9, (S_DRAWS, C))
    return fk, negbin_groups(fk, p)


def _pg_case(seed=0, C=60):
    """Poisson-gamma groups (one per distinct f): many households share a composition."""
    rng = np.random.default_rng(seed)
    fk = rng.integers(1, 4, C)
    alpha = rng.uniform(0.3, 0.8, S_DRAWS)
    beta = rng.uniform(1e-3, 5e-2, S_DRAWS)
    return fk, poisson_gamma_groups(fk, alpha, beta, float(fk.sum()), 40.0 * fk.sum())


def _record_risk_draws(groups):
    """r_i(theta_s) per draw and group: E(1/F | f, theta_s) (seed 004 eq. 6)."""
    S = groups.n_draws
    r, rho = np.broadcast_arrays(groups.r, groups.rho)
    G = groups.f.size
    return negbin_inverse_moment(groups.f[None, :], np.broadcast_to(r, (S, G)),
                                 np.broadcast_to(rho, (S, G)))


def _records(fk, groups):
    """One row per record: its cell's group."""
    cell = np.repeat(np.arange(fk.size), fk)
    return groups.cell_group[cell]


def _pairs(hh, group):
    G = int(group.max()) + 1
    pair, cnt = np.unique(hh * G + group, return_counts=True)
    return pair // G, pair % G, cnt.astype(float)


@pytest.mark.parametrize("case", [_negbin_case, _pg_case])
def test_one_record_households_take_their_records_risk_and_the_er_per_draw(case):
    fk, groups = case()
    group = _records(fk, groups)
    n = group.size
    ev = evaluate_groups(groups, household_pairs=_pairs(np.arange(n), group),
                         n_households=n, random_seed=1)
    np.testing.assert_allclose(ev.household_risk_mean, ev.risk_mean[group], rtol=1e-12)
    # the household ER per draw is the conditional ER per draw, on the same draws
    assert ev.draws["household_er"].shape == (S_DRAWS,)
    np.testing.assert_allclose(ev.draws["household_er"], ev.draws["er_mean"], rtol=1e-12)


@pytest.mark.parametrize("case", [_negbin_case, _pg_case])
def test_household_risk_is_the_all_draw_mean_of_sdcmicros_formula(case):
    fk, groups = case(seed=3)
    group = _records(fk, groups)
    n = group.size
    rng = np.random.default_rng(7)
    # households of 1-4 records, mates often in one cell; ids shuffled (not contiguous runs)
    hh = rng.permutation(np.repeat(np.arange(n), rng.integers(1, 5, n))[:n])
    H = int(hh.max()) + 1
    ev = evaluate_groups(groups, household_pairs=_pairs(hh, group), n_households=H,
                         random_seed=1)
    inv = _record_risk_draws(groups)  # (draws, groups)
    mean = np.zeros(H)
    er = np.zeros(S_DRAWS)
    for h in np.unique(hh):
        members = group[hh == h]
        risk = 1.0 - np.prod(1.0 - inv[:, members], axis=1)  # every draw
        mean[h] = risk.mean()
        er += members.size * risk
    np.testing.assert_allclose(ev.household_risk_mean, mean, rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(ev.draws["household_er"], er, rtol=1e-11)
    # 1 - prod(1 - r_j) >= r_i in every draw, so the means keep the order
    assert np.all(ev.household_risk_mean[hh] >= ev.risk_mean[group] * (1 - 1e-12))


def test_same_composition_households_share_their_risk_whatever_the_ids():
    fk, groups = _pg_case(seed=5)
    group = _records(fk, groups)
    n = group.size
    rng = np.random.default_rng(2)
    hh = rng.integers(0, n // 3, n)
    H = int(hh.max()) + 1
    a = evaluate_groups(groups, household_pairs=_pairs(hh, group), n_households=H,
                        random_seed=1)
    relabel = rng.permutation(H)
    hp, gp, cp = _pairs(relabel[hh], group)
    order = rng.permutation(hp.size)  # pairs in any order
    b = evaluate_groups(groups, household_pairs=(hp[order], gp[order], cp[order]),
                        n_households=H, random_seed=1)
    np.testing.assert_allclose(b.household_risk_mean[relabel], a.household_risk_mean,
                               rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(b.draws["household_er"], a.draws["household_er"], rtol=1e-12)


def test_thinning_is_opt_in_and_keeps_one_record_households_exact():
    fk, groups = _negbin_case(seed=4)
    group = _records(fk, groups)
    n = group.size
    hh = np.arange(n) // 2  # pairs of records, the last one alone when n is odd
    hh[-3:] = [n, n + 1, n + 2]  # three households of one record
    H = n + 3
    ev = evaluate_groups(groups, household_pairs=_pairs(hh, group), n_households=H,
                         random_seed=1, max_household_draws=100)
    assert ev.draws["household_er"].shape == (100,)
    solo = np.bincount(hh, minlength=H) == 1
    rec_solo = solo[hh]
    np.testing.assert_allclose(ev.household_risk_mean[hh[rec_solo]],
                               ev.risk_mean[group[rec_solo]], rtol=1e-12)
    # the others: the mean over the 100 evenly spaced draws
    keep = np.linspace(0, S_DRAWS - 1, 100).round().astype(np.int64)
    inv = _record_risk_draws(groups)[keep]
    h = 0
    members = group[hh == h]
    assert members.size == 2
    expect = np.mean(1.0 - np.prod(1.0 - inv[:, members], axis=1))
    assert ev.household_risk_mean[h] == pytest.approx(expect, rel=1e-12)


def test_shared_cell_mates_get_sdcmicros_formula_not_the_expected_realised_risk():
    """Audit AA1 finding 2, as the docstrings state it: two mates in one cell of f = 2
    with F - f ~ Po(1) get 1 - (1 - E[1/F])^2 = 0.6004, not E[1 - (1 - 1/F)^2] = 0.5885."""
    S = 10
    n, N = 2.0, 102.0
    pi = np.full((S, 1), 0.01)  # m = (N - n) pi = 1
    ev = evaluate_poisson_cells([2], pi, n, N, random_seed=0,
                                household_pairs=(np.array([0]), np.array([0]), np.array([2.0])),
                                n_households=1)
    x = np.arange(200)
    pmf = stats.poisson.pmf(x, 1.0)
    e_inv = np.sum(pmf / (2 + x))
    assert ev.risk_mean[0] == pytest.approx(e_inv, rel=1e-10)
    assert ev.household_risk_mean[0] == pytest.approx(1 - (1 - e_inv) ** 2, rel=1e-10)
    assert ev.household_risk_mean[0] == pytest.approx(0.6004, abs=5e-5)
    realised = np.sum(pmf * (1 - (1 - 1 / (2 + x)) ** 2))
    assert realised == pytest.approx(0.5885, abs=5e-5)


def test_assessment_household_draws_are_the_chain_draw_of_the_others():
    rng = np.random.default_rng(8)
    n = 2000
    frame = pd.DataFrame({"a": rng.integers(0, 25, n), "b": rng.integers(0, 10, n),
                          "solo": np.arange(n)})
    md = Microdata(frame, keys=["a", "b"], household="solo", sampling_fraction=0.05)
    chains, draws = 2, 300  # 600 draws
    post = xr.Dataset({
        "alpha": (("chain", "draw"), rng.uniform(0.3, 0.8, (chains, draws))),
        "beta": (("chain", "draw"), rng.uniform(1e-3, 2e-2, (chains, draws))),
    })
    res = assess_from_posterior(md, post, "poisson-gamma", N=n / 0.05, random_seed=1)
    # named as the ER's: the predictive draws, and given θ the _conditional_mean; with
    # households of one record each is the ER's own
    her = res.file_draws["household_expected_reidentifications"]
    assert her.dims == ("chain", "draw")
    np.testing.assert_allclose(
        her.values, res.file_draws["expected_reidentifications"].values, rtol=1e-12)
    np.testing.assert_allclose(
        res.file_draws["household_expected_reidentifications_conditional_mean"].values,
        res.file_draws["expected_reidentifications_conditional_mean"].values, rtol=1e-12)
    r = res.records
    np.testing.assert_allclose(r["household_risk"], r["risk"], rtol=1e-12)
    s = res.summary
    assert s["household_expected_reidentifications"] == pytest.approx(
        s["expected_reidentifications"], rel=1e-12)
    table = summary_table(res.file_draws)
    row = table.set_index("quantity").loc["household_expected_reidentifications"]
    assert row["mean"] == pytest.approx(s["household_expected_reidentifications"], rel=1e-12)


# ------------------------------------------------------------------ command line (finding 3, 4)


def test_demo_truth_has_the_household_er_only_when_asked():
    from sdcbayes.cli import load_input
    from sdcbayes.datasets import load_demo
    from sdcbayes.risk.compare import _check_truth

    demo = load_demo()
    roles = dict(weight=None, household=None, strata=None)
    *_, truth, _ = load_input(None, None, quiet=True, household_truth=True, **roles)
    assert truth["household_expected_reidentifications"] == pytest.approx(
        demo.truth.household_expected_reidentifications)
    assert truth["household_expected_reidentifications"] == pytest.approx(502.0, abs=0.01)
    # without household_truth the truth keeps the three file-level keys
    *_, truth_c, _ = load_input(None, None, quiet=True, **roles)
    assert "household_expected_reidentifications" not in truth_c
    assert _check_truth(truth_c) is not None
    # another household column than the demo's has no known truth
    other = dict(roles, household=demo.strata)
    *_, truth_o, _ = load_input(None, None, quiet=True, household_truth=True, **other)
    assert "household_expected_reidentifications" not in truth_o


def _posterior_summary(**extra):
    """A posterior model's summary.json as _print_summary reads it, plus ``extra``."""
    return {
        "sdcbayes_version": "x", "model": "latent-class", "method": "gibbs", "data": "d",
        "n_records": 10, "n_cells": 5, "n_sample_uniques": 2,
        "expected_reidentifications": 1.0, "expected_reidentifications_interval": [0.5, 1.5],
        "expected_reidentification_rate": 0.1,
        "tau1": 1.0, "tau1_interval": [0.5, 1.5], "tau2": 1.0, "tau2_interval": [0.5, 1.5],
    } | extra


def test_console_marks_the_household_interval_as_over_theta_and_prints_its_truth(tmp_path,
                                                                                  capsys):
    from sdcbayes.cli import _print_summary

    s = _posterior_summary(
        n_above_benchmark=3.0, n_above_benchmark_interval=[2.0, 4.0],
        household_expected_reidentifications=502.73,
        household_expected_reidentifications_interval=[490.27, 515.03],
        truth={"tau1": 1.0, "tau2": 1.0, "expected_reidentifications": 1.0,
               "household_expected_reidentifications": 502.0},
    )
    _print_summary(s, tmp_path)
    line = next(x for x in capsys.readouterr().out.splitlines()
                if x.lstrip().startswith("household expected re-identifications"))
    assert line.split("household expected re-identifications")[1].strip() == (
        "502.73  [490.27, 515.03] parameter uncertainty only   (true 502.00)")


def test_console_marks_the_benchmark_count_interval_as_over_theta(tmp_path, capsys):
    from sdcbayes.cli import _print_summary

    s = _posterior_summary(
        n_above_benchmark=383.8, n_above_benchmark_interval=[369.0, 400.0],
        risk_threshold=0.1, n_above_threshold=5.0, n_above_threshold_interval=[4, 6],
    )
    _print_summary(s, tmp_path)
    lines = capsys.readouterr().out.splitlines()
    bench = next(x for x in lines if x.lstrip().startswith("records above benchmark"))
    assert bench.rstrip().endswith("383.8  [369, 400] parameter uncertainty only")
    thr = next(x for x in lines if x.lstrip().startswith("records with risk > 0.1"))
    assert thr.rstrip().endswith("5  [4, 6] parameter uncertainty only")


def test_compare_household_help_says_compare_reports_household_risk():
    from sdcbayes.commands.compare import command as compare

    (opt,) = [p for p in compare.params if "--household" in p.opts]
    assert "compare reports no household risk" not in opt.help
    assert "as `sdcbayes assess --household` reports them" in opt.help
    assert "data summary" in opt.help
    assert "adds household risk" not in opt.help
