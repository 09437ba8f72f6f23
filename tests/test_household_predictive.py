"""The household ER's posterior predictive interval (both posterior routes, protect).

Per parameter draw one population is drawn, the one the ER's predictive draw uses; the
household ER draw is that population's realised Σ_h |h| (1 - Π_{i∈h}(1 - 1/F_i)), each
record with its cell's drawn F (``assess_from_posterior``) or its pattern's drawn F_p
(``assess_released``, the records of a pattern sharing it). Its quantiles are the
``household_expected_reidentifications_interval`` (``household_interval_kind``
predictive); the per-draw sdcMicro formula on r_i(θ), whose mean stays the estimate,
gives the ``_hyper_interval`` (file_draws' ``_conditional_mean``, as the ER's).

Oracles: the same populations drawn again from the evaluators' own streams
(``_draw_observed`` for the latent-class cells, the negative binomials of
``_simulate_exact`` for the Poisson-gamma cells, where two cells of one f have independent
F) and the household sum taken record by record; a census (F = f in every draw: the
draws are the formula's); households of one record (the household draws are the ER's);
the released file's own F_p (a hook on ``_Households.add_predictive``) against the records'
households; the calibration over truths drawn from the model's own parameters; a file
without blanks (``assess_released`` = ``assess_from_posterior`` seed for seed); thinning
(``max_household_draws``); Poisson-gamma's normal route (no F drawn: over θ only, said so);
protect's terminal rows, summary.json and report.html, and an older summary without the
kind.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from released_reference import posterior_from_draws
from scipy import stats

from sdcbayes import Microdata
from sdcbayes.models.latent_class import LatentClassModel
from sdcbayes.protection import local_suppression
from sdcbayes.risk import released as released_module
from sdcbayes.risk.measures import household_expected_reidentifications
from sdcbayes.risk.posterior import (
    CHUNK_ELEMENTS,
    _negbin_excess,
    poisson_gamma_groups,
    poisson_gamma_rho,
)
from sdcbayes.risk.posterior_assess import (
    HYPER_INTERVAL_KIND,
    INTERVAL_KIND,
    assess_from_posterior,
    evaluate_poisson_cells,
    latent_class_pi,
)
from sdcbayes.risk.released import _draw_observed, assess_released

# hand-built posteriors: their convergence is not the point
pytestmark = pytest.mark.filterwarnings(
    "ignore::sdcbayes.inference.diagnostics.ConvergenceWarning",
    "ignore::RuntimeWarning")

KEYS = ["a", "b", "c"]
HH = "household_expected_reidentifications"


def _frame(n: int = 90, seed: int = 7, weight: float | None = None,
           levels: tuple[int, int, int] = (3, 2, 5)) -> pd.DataFrame:
    """Three keys, households of 1-4 records (not adjacent), weights."""
    rng = np.random.default_rng(seed)
    hid = np.repeat(np.arange(n), rng.integers(1, 5, n))[:n]
    return pd.DataFrame({
        "a": rng.choice([f"a{i}" for i in range(levels[0])], n),
        "b": rng.choice([f"b{i}" for i in range(levels[1])], n),
        "c": rng.choice([f"c{i}" for i in range(levels[2])], n),
        "hid": rng.permutation(hid),
        "w": rng.uniform(5, 20, n) if weight is None else weight})


def _theta(spec, S: int, H: int = 3, seed: int = 3, spread: float | None = None):
    """w (S, H) and per key phi (S, H, L): independent draws, or around one point."""
    rng = np.random.default_rng(seed)
    if spread is None:
        return (rng.dirichlet(np.ones(H), S),
                [rng.dirichlet(np.ones(L), (S, H)) for L in spec.n_levels])
    w0 = rng.dirichlet(np.ones(H))
    phi0 = [rng.dirichlet(np.full(L, 0.8), H) for L in spec.n_levels]
    w = np.array([rng.dirichlet(spread * w0 + 0.5) for _ in range(S)])
    phi = [np.stack([np.stack([rng.dirichlet(spread * p[h] + 0.5) for h in range(H)])
                     for _ in range(S)]) for p in phi0]
    return w, phi


def _lc(df, S=30, kappa=None, seed=3, spread=None, chains=2, **md_kw):
    md = Microdata(df, KEYS, weight="w", household="hid", **md_kw)
    spec = LatentClassModel.from_microdata(md, n_classes=3)
    w, phi = _theta(spec, S, seed=seed, spread=spread)
    return md, posterior_from_draws(md, spec, w, phi, kappa, chains=chains)


def _household_er(invF: np.ndarray, hh: np.ndarray) -> np.ndarray:
    """Brute force: per draw Σ_h |h| (1 - Π_{i∈h}(1 - invF_i)), invF (draws, records)."""
    out = np.zeros(invF.shape[0])
    for h in np.unique(hh):
        mem = hh == h
        out += mem.sum() * (1.0 - np.prod(1.0 - invF[:, mem], axis=1))
    return out


def _assert_household_draws(res, invF: np.ndarray, hh: np.ndarray) -> np.ndarray:
    """``res``'s ER and household ER draws are those of the populations ``invF`` (draws,
    records: each record's drawn 1/F); the interval is predictive, the estimate the mean
    of the per-draw formula given θ. Returns the brute-force household draws."""
    fd, s = res.file_draws, res.summary
    # the oracle's populations are the ER's (validates it), then the household sums
    np.testing.assert_allclose(invF.sum(axis=1), fd["expected_reidentifications"].values.ravel(),
                               rtol=1e-12)
    oracle = _household_er(invF, hh)
    np.testing.assert_allclose(fd[HH].values.ravel(), oracle, rtol=1e-12)
    assert s[HH + "_interval"] == pytest.approx(list(np.quantile(oracle, [0.05, 0.95])),
                                                rel=1e-12)
    assert s["household_interval_kind"] == INTERVAL_KIND
    assert s[HH] == pytest.approx(fd[HH + "_conditional_mean"].values.mean(), rel=1e-12)
    return oracle


# ------------------------------------------------------------------ (a) the oracles


@pytest.mark.parametrize("kappa", [None, "mixed"], ids=["poisson", "kappa"])
def test_latent_class_draws_are_the_realised_household_er_of_the_drawn_populations(kappa):
    df = _frame()
    S = 30
    kap = None if kappa is None else np.where(np.arange(S) % 4 == 1, np.inf,
                                              np.linspace(0.4, 6.0, S))
    md, idata = _lc(df, S=S, kappa=kap)
    res = assess_from_posterior(md, idata, "latent-class", random_seed=5)
    # the populations again, from evaluate_poisson_cells' own stream (_draw_observed)
    pi, n, N = latent_class_pi(md, idata)
    fk = np.asarray(md.cells.fk, dtype=float)
    X = _draw_observed(fk, pi, None, kap is not None,
                       np.full(S, np.inf) if kap is None else kap, n, N, 5)
    cell = np.asarray(md.record_cell)
    invF = 1.0 / (fk[cell][None, :] + X[:, cell])  # (draws, records): a tiny file
    oracle = _assert_household_draws(res, invF, md.household_index)
    fd, s = res.file_draws, res.summary
    # the hyper interval: the per-draw formula on r_i(θ), as before
    given = fd[HH + "_conditional_mean"].values.ravel()
    assert s[HH + "_hyper_interval"] == pytest.approx(list(np.quantile(given, [0.05, 0.95])),
                                                      rel=1e-12)
    # households with mates: the realised values differ from the formula draw by draw
    assert np.max(np.abs(given - oracle)) > 0.1


def test_poisson_gamma_cells_of_one_f_draw_their_own_f():
    """Shared groups (one per distinct f): the household draw pairs records by cell, so two
    sample uniques of one household have independent F, as in the ER's draw."""
    df = _frame(n=150, seed=4, levels=(4, 3, 6))
    md = Microdata(df, KEYS, household="hid", sampling_fraction=0.05)
    rng = np.random.default_rng(2)
    chains, draws = 2, 40
    alpha = rng.uniform(0.3, 0.8, (chains, draws))
    beta = rng.uniform(1e-3, 2e-2, (chains, draws))
    post = xr.Dataset({"alpha": (("chain", "draw"), alpha), "beta": (("chain", "draw"), beta)})
    n, N = float(len(df)), len(df) / 0.05
    res = assess_from_posterior(md, post, "poisson-gamma", N=N, random_seed=9,
                                predictive="exact")
    # _simulate_exact's draws: one chunk of cells (the file is tiny), a fresh stream
    fk = np.asarray(md.cells.fk, dtype=float)
    S = chains * draws
    assert fk.size <= CHUNK_ELEMENTS // S
    g = poisson_gamma_groups(fk, alpha.ravel(), beta.ravel(), n, N)
    r = np.broadcast_to(g.r, (S, g.f.size))[:, g.cell_group]
    rho = np.broadcast_to(np.asarray(poisson_gamma_rho(alpha.ravel(), beta.ravel(), n, N))
                          [:, None], r.shape)
    F = fk[None, :] + _negbin_excess(np.random.default_rng(9), r, rho)
    cell = np.asarray(md.record_cell)
    invF = 1.0 / F[:, cell]
    fd = res.file_draws
    np.testing.assert_allclose(invF.sum(axis=1), fd["expected_reidentifications"].values.ravel(),
                               rtol=1e-12)
    np.testing.assert_allclose(fd[HH].values.ravel(), _household_er(invF, md.household_index),
                               rtol=1e-12)
    # the case that needs cells, not groups: mates in different cells of one f
    hh = md.household_index
    f_rec = fk[cell]
    assert any(np.unique(cell[(hh == h) & (f_rec == 1)]).size > 1 for h in np.unique(hh))
    assert res.summary["household_interval_kind"] == INTERVAL_KIND


def test_a_census_gives_the_formula_in_every_draw():
    """N = n: F = f in every drawn population, so the predictive draws are sdcMicro's
    formula on 1/f (as is the draw given θ), the interval a point."""
    df = _frame(n=80, seed=5, weight=1.0)
    md, idata = _lc(df, S=8, kappa=np.linspace(0.5, 4.0, 8))
    res = assess_from_posterior(md, idata, "latent-class", random_seed=1)
    f_rec = np.asarray(md.cells.fk, dtype=float)[np.asarray(md.record_cell)]
    want = household_expected_reidentifications(1.0 / f_rec, md.household_index)
    for name in (HH, HH + "_conditional_mean"):
        np.testing.assert_allclose(res.file_draws[name].values.ravel(), want, rtol=1e-12)
    for name in (HH + "_interval", HH + "_hyper_interval"):
        assert res.summary[name] == pytest.approx([want, want], rel=1e-12)


def test_one_record_households_draw_the_ers_predictive_draws():
    df = _frame(n=70, seed=2)
    df["hid"] = np.arange(len(df))
    md, idata = _lc(df, S=20, kappa=np.linspace(0.5, 9.0, 20))
    res = assess_from_posterior(md, idata, "latent-class", random_seed=3)
    fd = res.file_draws
    np.testing.assert_array_equal(fd[HH].values, fd["expected_reidentifications"].values)
    np.testing.assert_allclose(fd[HH + "_conditional_mean"].values,
                               fd["expected_reidentifications_conditional_mean"].values,
                               rtol=1e-12)
    s = res.summary
    assert s[HH + "_interval"] == s["expected_reidentifications_interval"]
    assert s[HH + "_hyper_interval"] == pytest.approx(
        s["expected_reidentifications_hyper_interval"], rel=1e-12)


def test_thinned_household_draws_are_the_kept_draws_of_the_full_ones():
    """``max_household_draws``: both household draws on the same evenly spaced draws, the
    predictive ones those draws' of the unthinned run (the F are drawn for every draw)."""
    df = _frame(n=90, seed=6)
    md, idata = _lc(df, S=40, kappa=np.linspace(0.5, 5.0, 40))
    pi, n, N = latent_class_pi(md, idata)
    cell = np.asarray(md.record_cell)
    C = md.cells.n_cells
    pair, cnt = np.unique(md.household_index * C + cell, return_counts=True)
    kw = dict(household_pairs=(pair // C, pair % C, cnt.astype(float)),
              n_households=int(md.household_index.max()) + 1, random_seed=4,
              kappa=np.linspace(0.5, 5.0, 40))
    full = evaluate_poisson_cells(md.cells.fk, pi, n, N, **kw)
    thin = evaluate_poisson_cells(md.cells.fk, pi, n, N, max_household_draws=7, **kw)
    rows = np.linspace(0, 39, 7).round().astype(np.int64)
    for key in ("household_er_predictive", "household_er"):
        assert thin.draws[key].shape == (7,)
        np.testing.assert_allclose(thin.draws[key], full.draws[key][rows], rtol=1e-12)
    np.testing.assert_array_equal(thin.draws["er"], full.draws["er"])


def test_the_normal_route_draws_no_f_and_says_its_interval_is_over_theta():
    df = _frame(n=120, seed=8)
    md = Microdata(df, KEYS, household="hid", sampling_fraction=0.05)
    rng = np.random.default_rng(1)
    post = xr.Dataset({"alpha": (("chain", "draw"), rng.uniform(0.3, 0.8, (2, 30))),
                       "beta": (("chain", "draw"), rng.uniform(1e-3, 2e-2, (2, 30)))})
    normal = assess_from_posterior(md, post, "poisson-gamma", N=len(df) / 0.05,
                                   random_seed=1, predictive="normal")
    exact = assess_from_posterior(md, post, "poisson-gamma", N=len(df) / 0.05,
                                  random_seed=1, predictive="exact")
    s = normal.summary
    assert s["household_interval_kind"] == HYPER_INTERVAL_KIND
    assert s[HH + "_interval"] == s[HH + "_hyper_interval"]
    assert HH + "_conditional_mean" not in normal.file_draws
    # the same estimate and hyper interval as the exact route, whose interval is wider
    assert s[HH] == pytest.approx(exact.summary[HH], rel=1e-12)
    assert s[HH + "_hyper_interval"] == pytest.approx(exact.summary[HH + "_hyper_interval"],
                                                      rel=1e-12)
    lo, hi = exact.summary[HH + "_interval"]
    assert hi - lo > s[HH + "_hyper_interval"][1] - s[HH + "_hyper_interval"][0]


# ------------------------------------------------------------------ (b) calibration


def test_interval_covers_truths_drawn_from_the_models_own_parameters():
    """Calibration: a truth is the realised household ER of a population drawn from a
    posterior draw of the parameters (a draw of the posterior predictive). 300 truths;
    the 90% predictive interval holds them at a rate a two-sided binomial test does not
    reject at 1%; the interval over the parameters only holds far fewer (seeds as here:
    267 and 222 of 300)."""
    df = _frame(n=150, seed=1, weight=8.0, levels=(3, 4, 5))
    S = 2000
    kappa = np.exp(np.random.default_rng(12).normal(np.log(2.0), 0.4, S))
    md, idata = _lc(df, S=S, kappa=kappa, seed=11, spread=60.0)
    res = assess_from_posterior(md, idata, "latent-class", random_seed=13)
    lo, hi = res.summary[HH + "_interval"]
    hlo, hhi = res.summary[HH + "_hyper_interval"]
    pi, n, N = latent_class_pi(md, idata)
    fk = np.asarray(md.cells.fk, dtype=float)
    cell = np.asarray(md.record_cell)
    rng = np.random.default_rng(14)
    truths = []
    for s in rng.integers(0, S, 300):
        # X_c | f_c ~ NegBin(κ + f_c, b/(b + λ_c)), b = κ + n π_c, λ_c = (N - n) π_c
        lam, b = (N - n) * pi[s], kappa[s] + n * pi[s]
        F = fk + rng.negative_binomial(kappa[s] + fk, b / (b + lam))
        truths.append(_household_er(1.0 / F[cell][None, :], md.household_index)[0])
    truths = np.array(truths)
    inside = int(((truths >= lo) & (truths <= hi)).sum())
    assert stats.binomtest(inside, truths.size, 0.9).pvalue >= 0.01, inside
    inside_hyper = int(((truths >= hlo) & (truths <= hhi)).sum())
    assert stats.binomtest(inside_hyper, truths.size, 0.9, alternative="less").pvalue < 0.01, \
        inside_hyper


# ------------------------------------------------------------------ (c) the released file


@pytest.mark.parametrize("kappa", [None, 0.7], ids=["poisson", "kappa"])
def test_released_file_without_blanks_is_assess_from_posterior_seed_for_seed(kappa):
    df = _frame(n=120, seed=11)
    md, idata = _lc(df, S=24, kappa=kappa)
    got = assess_released(md, df, idata, random_seed=23)
    ref = assess_from_posterior(md, idata, "latent-class", random_seed=23)
    for name in (HH, HH + "_conditional_mean"):
        np.testing.assert_allclose(got.file_draws[name].values, ref.file_draws[name].values,
                                   rtol=1e-13, atol=0)
    for name in (HH + "_interval", HH + "_hyper_interval"):
        assert got.summary[name] == pytest.approx(ref.summary[name], rel=1e-13), name
    assert got.summary["household_interval_kind"] == ref.summary["household_interval_kind"] \
        == INTERVAL_KIND
    # the household draws move with the F draws: another seed, other draws
    other = assess_released(md, df, idata, random_seed=24)
    assert not np.allclose(other.file_draws[HH].values, got.file_draws[HH].values)


def spy_released_draws(monkeypatch) -> list:
    """The (1/F_p, pattern) pairs the released file's household gathering is handed.

    A hook on ``_Households.add_predictive`` that records each call's arguments and
    passes them on; the list fills as :func:`assess_released` runs.
    """
    seen = []
    real = released_module._Households.add_predictive

    def hook(self, inv, pb):
        seen.append((np.array(inv, copy=True), np.asarray(pb).copy()))
        real(self, inv, pb)

    monkeypatch.setattr(released_module._Households, "add_predictive", hook)
    return seen


def test_released_draws_combine_the_patterns_own_drawn_f(monkeypatch):
    """Blanks and recodes: the F_p each pattern drew (a hook on the gathering) are the ER
    draw's (Σ_p m_p/F_p), and the household draw is Σ_h |h|(1 - Π(1 - 1/F_p(i)))."""
    df = _frame(n=100, seed=3)
    md, idata = _lc(df, S=16, kappa=np.where(np.arange(16) % 3 == 0, np.inf, 1.5))
    seen = spy_released_draws(monkeypatch)
    rel = local_suppression(df, KEYS, 3).frame
    out = assess_released(md, rel, idata, random_seed=2)
    assert out.summary["n_blanked_records"] > 0
    P = out.cells.shape[0]
    inv = np.full((16, P), np.nan)
    for e, pb in seen:
        assert np.all(np.isnan(inv[:, pb]))  # each pattern once
        inv[:, pb] = e
    assert not np.isnan(inv).any()
    pat = out.records["pattern"].to_numpy()
    invF = inv[:, pat]  # (draws, records): each record with its pattern's F_p
    _assert_household_draws(out, invF, md.household_index)


# ------------------------------------------------------------------ (d) protect, the CLI


def _risk_side(kind: str | None, hyper: bool = True) -> dict:
    side = {"n_households": 40, HH: 12.5, HH + "_interval": [10.0, 15.0]}
    if hyper:
        side[HH + "_hyper_interval"] = [11.0, 14.0]
    if kind is not None:
        side["household_interval_kind"] = kind
    return side


def test_protect_household_keys_carry_the_kind_and_the_hyper_interval():
    from sdcbayes.commands.protect import _household_lines, _household_posterior

    fresh = {"expected_reidentifications": 3.0} | _risk_side(INTERVAL_KIND)
    got = _household_posterior(fresh)
    assert got == _risk_side(INTERVAL_KIND)
    # a summary without the kind (an earlier version's): its interval was over θ only
    old = _household_posterior({"expected_reidentifications": 3.0}
                               | _risk_side(None, hyper=False))
    assert old["household_interval_kind"] == HYPER_INTERVAL_KIND
    assert HH + "_hyper_interval" not in old
    cf = {"before": {}, "after": {}}
    (label, text), = _household_lines(got, got, cf)
    assert label == "household expected re-identifications"
    assert text == "12.50 [10.00, 15.00] predictive -> 12.50 [10.00, 15.00] predictive"
    (_, text), = _household_lines(_risk_side(None, hyper=False), got, cf)
    assert text == ("12.50 [10.00, 15.00] parameter uncertainty only -> "
                    "12.50 [10.00, 15.00] predictive")


def test_protect_report_labels_the_household_interval_by_its_kind():
    from sdcbayes.report import PARAMETERS_ONLY, PREDICTIVE, _protection_report_latent_class

    def page(before, after):
        s = {"command": "protect", "household": "hid", "keys": KEYS, "weight": "w",
             "steps": [], "risk": {"before": before, "after": after, "closed_form": {},
                                   "fit": {"interval_level": 0.9}}}
        return _protection_report_latent_class(s)

    new = page(_risk_side(INTERVAL_KIND), _risk_side(INTERVAL_KIND))
    assert f"<td>interval of</td><td>{PREDICTIVE}</td><td>{PREDICTIVE}</td>" in new
    assert "its interval is posterior predictive" in new
    # an older summary.json (no kind, no hyper interval) still renders, over θ only
    old = page(_risk_side(None, hyper=False), _risk_side(None, hyper=False))
    only = f"{PARAMETERS_ONLY} only".replace("'", "&#x27;")
    assert f"<td>interval of</td><td>{only}</td><td>{only}</td>" in old
    assert "its interval is over the parameters" in old


def test_assess_terminal_row_says_predictive_where_it_is(tmp_path, capsys):
    from sdcbayes.cli import _print_summary

    base = {
        "sdcbayes_version": "x", "model": "latent-class", "method": "gibbs", "data": "d",
        "n_records": 10, "n_cells": 5, "n_sample_uniques": 2,
        "expected_reidentifications": 1.0, "expected_reidentifications_interval": [0.5, 1.5],
        "expected_reidentification_rate": 0.1,
        "tau1": 1.0, "tau1_interval": [0.5, 1.5], "tau2": 1.0, "tau2_interval": [0.5, 1.5],
        "n_above_benchmark": 3.0, "n_above_benchmark_interval": [2.0, 4.0],
        HH: 502.73, HH + "_interval": [488.1, 517.2], HH + "_hyper_interval": [490.27, 515.03],
        "truth": {"tau1": 1.0, "tau2": 1.0, "expected_reidentifications": 1.0, HH: 502.0},
    }
    for kind, want in ((INTERVAL_KIND, "502.73  [488.10, 517.20] predictive   (true 502.00)"),
                       (HYPER_INTERVAL_KIND,
                        "502.73  [488.10, 517.20] parameter uncertainty only   (true 502.00)")):
        _print_summary(base | {"household_interval_kind": kind}, tmp_path)
        line = next(x for x in capsys.readouterr().out.splitlines()
                    if x.lstrip().startswith("household expected re-identifications"))
        assert line.split("household expected re-identifications")[1].strip() == want
