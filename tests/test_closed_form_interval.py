"""The closed form's predictive intervals given the plug-in p (assess and compare share them).

``assess_closed_form(md, interval=True, ...)`` and ``sdcbayes assess --model closed-form``
give 90% intervals of ER, tau1, tau2 (and the household numbers) over the unknown F_k
drawn given p_k = f_k / F_hat_k (Benedetti-Franconi, seed 004 eq. 1-4), computed by
``risk.assess.plug_in_predictive``, the function that also gives ``compare``'s
closed-form row its intervals.
"""

from __future__ import annotations

import json
from contextlib import nullcontext

import numpy as np
import pandas as pd
import pytest
from clitools import run_main

import sdcbayes
from sdcbayes.datasets import load_demo
from sdcbayes.exceptions import InputError
from sdcbayes.microdata import MicrodataWarning
from sdcbayes.risk.assess import (
    PLUG_IN_DEGENERATE_NOTE,
    PLUG_IN_INTERVAL_KIND,
    assess_closed_form,
)
from sdcbayes.risk.individual import benedetti_franconi_risk, plugin_inclusion_probability

INTERVAL_KEYS = ("expected_reidentifications_interval", "tau1_interval", "tau2_interval")
HH_KEYS = ("household_expected_reidentifications_interval",
           "household_expected_reidentified_households_interval")


@pytest.fixture(scope="module")
def demo_md():
    d = load_demo()
    return sdcbayes.Microdata(d.sample, keys=d.keys, weight=d.weight, household=d.household,
                              missing="category")


def _tiny_frame(n_cells: int = 300, seed: int = 0) -> pd.DataFrame:
    """A weighted file of ``n_cells`` key combinations seen 1 to 4 times."""
    rng = np.random.default_rng(seed)
    f = rng.choice([1, 1, 1, 2, 2, 3, 4], size=n_cells)
    key = np.repeat(np.arange(n_cells), f)
    return pd.DataFrame({"k": [f"c{i:03d}" for i in key],
                         "w": rng.uniform(1.5, 12.0, size=key.size)})


def _brute_force(md, n: int, seed: int) -> dict[str, np.ndarray]:
    """ER, tau1, tau2 per drawn population: F_k - f_k ~ NegBin(f_k, p_k) as its gamma-Poisson
    mixture (lambda ~ Gamma(f_k, (1 - p_k)/p_k), X ~ Poisson(lambda)), drawn here."""
    fk = np.asarray(md.cells.fk, dtype=float)
    p = fk / np.asarray(md.cells.Fk_hat, dtype=float)
    rng = np.random.default_rng(seed)
    lam = rng.gamma(fk, (1.0 - p) / p, size=(n, fk.size))
    F = fk + rng.poisson(lam)
    u = fk == 1
    return {"er": (fk / F).sum(axis=1), "tau1": (F[:, u] == 1).sum(axis=1),
            "tau2": (1.0 / F[:, u]).sum(axis=1)}


# ---------------------------------------------------------------- (1) same as compare's row


def test_assess_interval_is_compares_closed_form_row(demo_md):
    from sdcbayes.risk.compare import compare_models

    seed, S = 11, 120
    row = compare_models(demo_md, [{"name": "cf", "model": "closed-form"}], random_seed=seed,
                         plug_in_draws=S).table.iloc[0]
    s = assess_closed_form(demo_md, interval=True, random_seed=seed, n_draws=S).summary
    assert s["interval_kind"] == row["interval_kind"] == PLUG_IN_INTERVAL_KIND
    for key, col in (("expected_reidentifications", "er"), ("tau1", "tau1"), ("tau2", "tau2")):
        assert s[f"{key}_interval"] == [row[f"{col}_lo"], row[f"{col}_hi"]], key
    assert s["household_expected_reidentifications_interval"] == [row["household_er_lo"],
                                                                  row["household_er_hi"]]
    assert s["household_expected_reidentified_households_interval"] == [
        row["household_expected_reidentified_households_lo"],
        row["household_expected_reidentified_households_hi"]]
    assert s["household_interval_kind"] == row["household_interval_kind"]


def test_cli_assess_interval_is_compares(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a = run_main(capsys, "assess", "--model", "closed-form", "--seed", "5", "--out", "a")
    c = run_main(capsys, "compare", "--models", "cf=closed-form", "--seed", "5", "--out", "c")
    assert a.returncode == 0, a.stderr
    assert c.returncode == 0, c.stderr
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    row = json.loads((tmp_path / "c" / "summary.json").read_text())["comparison"][0]
    for key, col in (("expected_reidentifications", "er"), ("tau1", "tau1"), ("tau2", "tau2")):
        assert s[f"{key}_interval"] == [row[f"{col}_lo"], row[f"{col}_hi"]], key
    for key in HH_KEYS:  # the demo has households: both commands use them
        assert s[key] == row[key], key
    assert s["interval_kind"] == row["interval_kind"] == PLUG_IN_INTERVAL_KIND


# ---------------------------------------------------------------- (2) independent check


def test_interval_matches_brute_force_predictive():
    md = sdcbayes.Microdata(_tiny_frame(), keys=["k"], weight="w")
    S, n_bf = 4000, 20000
    s = assess_closed_form(md, interval=True, random_seed=2, n_draws=S).summary
    bf = _brute_force(md, n_bf, seed=99)
    # the interval's ends are the 5% and 95% quantiles of the brute-force draws: the share
    # of those strictly below / at most each end brackets the level, within the MC error of
    # both (sd of a 5% share: sqrt(.05 * .95 / 4000) = 0.0034 and 0.0015 here; 0.015 is
    # about 4 sd of their difference). Strict and non-strict shares cope with atoms (tau1).
    for key, name in (("er", "expected_reidentifications"), ("tau1", "tau1"),
                      ("tau2", "tau2")):
        lo, hi = s[f"{name}_interval"]
        x = bf[key]
        assert np.mean(x < lo) <= 0.05 + 0.015 and np.mean(x <= lo) >= 0.05 - 0.015, name
        assert np.mean(x < hi) <= 0.95 + 0.015 and np.mean(x <= hi) >= 0.95 - 0.015, name
        # the estimate is the predictive mean: within 4 standard errors of the draws' mean
        se = x.std() / np.sqrt(n_bf)
        assert abs(x.mean() - s[name]) < 4 * se, name


def test_wildcard_interval_is_over_records_not_cell_counts():
    # a missing key value matches every level (sdcMicro's wildcard): such a record counts in
    # the f_k of several cells but is one record, so the ER draws sum over records, and their
    # mean is the closed form's ER (the sum of the f_k would overshoot it)
    from sdcbayes.risk.assess import plug_in_predictive

    frame = _tiny_frame(120, seed=3)
    frame["b"] = np.where(np.arange(len(frame)) % 7 == 0, None, "x")
    md = sdcbayes.Microdata(frame, keys=["k", "b"], weight="w")
    assert md.cells.fk.sum() > md.n_records  # the wildcards do count twice
    s = assess_closed_form(md, interval=True, random_seed=6, n_draws=3000).summary
    er = plug_in_predictive(md, n_draws=3000, random_seed=6)["draws"]["er"]
    assert abs(er.mean() - s["expected_reidentifications"]) < 4 * er.std() / np.sqrt(er.size)
    lo, hi = s["expected_reidentifications_interval"]
    assert lo < s["expected_reidentifications"] < hi


# ---------------------------------------------------------------- (3) estimates unchanged


def test_estimates_unchanged_by_interval(demo_md):
    plain = assess_closed_form(demo_md)
    with_iv = assess_closed_form(demo_md, interval=True, random_seed=1, n_draws=50)
    for key, value in plain.summary.items():
        assert with_iv.summary[key] == value, key  # bit for bit
    pd.testing.assert_frame_equal(plain.records, with_iv.records)
    # and they are the closed-form formulas (seed 004 eq. 1-4), summed per cell here
    fk = np.asarray(demo_md.cells.fk, dtype=float)
    p = plugin_inclusion_probability(fk, np.asarray(demo_md.cells.Fk_hat, dtype=float))
    r = benedetti_franconi_risk(fk, p, method="exact")
    u = fk == 1
    s = with_iv.summary
    assert s["expected_reidentifications"] == pytest.approx(float((fk * r).sum()), rel=1e-12)
    assert s["tau1"] == pytest.approx(float(p[u].sum()), rel=1e-12)
    assert s["tau2"] == pytest.approx(float(r[u].sum()), rel=1e-12)
    assert "expected_reidentifications_interval" not in plain.summary
    assert "random_seed" not in plain.provenance["settings"]


# ---------------------------------------------------------------- (4) seed, p = 1, approx


def test_seed_repeats_and_is_stamped(demo_md):
    a = assess_closed_form(demo_md, interval=True, random_seed=4, n_draws=60)
    b = assess_closed_form(demo_md, interval=True, random_seed=4, n_draws=60)
    c = assess_closed_form(demo_md, interval=True, random_seed=5, n_draws=60)
    assert all(a.summary[k] == b.summary[k] for k in (*INTERVAL_KEYS, *HH_KEYS))
    assert a.summary["expected_reidentifications_interval"] != \
        c.summary["expected_reidentifications_interval"]
    assert a.provenance["settings"]["random_seed"] == 4
    # without a seed one is drawn and stamped; passing it back repeats the intervals
    d = assess_closed_form(demo_md, interval=True, n_draws=60)
    seed = d.provenance["settings"]["random_seed"]
    assert isinstance(seed, int) and seed >= 0
    e = assess_closed_form(demo_md, interval=True, random_seed=seed, n_draws=60)
    assert all(d.summary[k] == e.summary[k] for k in (*INTERVAL_KEYS, *HH_KEYS))


@pytest.mark.parametrize("how", ["no weights", "census"])
def test_file_as_its_own_population_has_no_interval(how):
    frame = _tiny_frame(40)
    kw = {"sampling_fraction": 1.0} if how == "census" else {}
    md = sdcbayes.Microdata(frame, keys=["k"], **kw)
    # without weights the closed form warns that it takes the file as the population
    with pytest.warns(MicrodataWarning) if how == "no weights" else nullcontext():
        s = assess_closed_form(md, interval=True, random_seed=1).summary
    assert s["interval_note"] == PLUG_IN_DEGENERATE_NOTE
    assert not any(k in s for k in (*INTERVAL_KEYS, "interval_kind"))
    # the counts themselves: every F_k = f_k, so ER is the number of cells
    assert s["expected_reidentifications"] == pytest.approx(md.cells.n_cells)


def test_approx_takes_the_same_draws():
    md = sdcbayes.Microdata(_tiny_frame(), keys=["k"], weight="w")
    ex = assess_closed_form(md, interval=True, random_seed=8, n_draws=200).summary
    ap = assess_closed_form(md, "approx", interval=True, random_seed=8, n_draws=200).summary
    for k in INTERVAL_KEYS:
        assert ap[k] == ex[k], k
    # only the estimate follows the formula: sdcMicro's approximation
    fk = np.asarray(md.cells.fk, dtype=float)
    p = fk / np.asarray(md.cells.Fk_hat, dtype=float)
    er_approx = float((fk * benedetti_franconi_risk(fk, p, method="approx")).sum())
    assert ap["expected_reidentifications"] == pytest.approx(er_approx, rel=1e-12)
    assert ap["expected_reidentifications"] != ex["expected_reidentifications"]


def test_household_intervals_bracket_their_estimate(demo_md):
    s = assess_closed_form(demo_md, interval=True, random_seed=3, n_draws=200).summary
    assert s["household_interval_kind"] == PLUG_IN_INTERVAL_KIND
    for key in HH_KEYS:
        lo, hi = s[key]
        assert lo < s[key.removesuffix("_interval")] < hi, key
    # no households: none of their keys
    md = sdcbayes.Microdata(_tiny_frame(), keys=["k"], weight="w")
    s2 = assess_closed_form(md, interval=True, random_seed=3, n_draws=50).summary
    assert not any(k in s2 for k in (*HH_KEYS, "household_interval_kind"))


@pytest.mark.parametrize("kwargs, fragment", [
    ({"n_draws": 1}, "n_draws"), ({"random_seed": -1}, "random_seed"),
    ({"interval": "yes"}, "interval"), ({"quantiles": (0.9,)}, "quantiles"),
])
def test_bad_interval_options_are_refused(kwargs, fragment):
    md = sdcbayes.Microdata(_tiny_frame(20), keys=["k"], weight="w")
    with pytest.raises(InputError, match=fragment):
        assess_closed_form(md, **({"interval": True} | kwargs))


# ---------------------------------------------------------------- (5) the command


def test_cli_summary_terminal_and_report(capsys, tmp_path, monkeypatch, check_html):
    monkeypatch.chdir(tmp_path)
    proc = run_main(capsys, "assess", "--model", "closed-form", "--seed", "7", "--draws", "10",
                    "--out", "out")
    assert proc.returncode == 0, proc.stderr
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["interval_kind"] == PLUG_IN_INTERVAL_KIND
    assert s["provenance"]["settings"]["random_seed"] == 7
    assert s["plug_in_draws"] == 400  # --draws is the samplers': not the replicates
    assert (f"estimates are the closed form's with [90% intervals, {PLUG_IN_INTERVAL_KIND}]"
            in proc.stdout)
    lo, hi = s["expected_reidentifications_interval"]
    er_line = next(x for x in proc.stdout.splitlines() if "expected re-identifications " in x)
    assert f"[{lo:.2f}, {hi:.2f}]" in er_line
    lo, hi = s["tau2_interval"]
    assert f"[{lo:.2f}, {hi:.2f}]" in proc.stdout
    # --seed is used now: the warning names --draws, not --seed
    warn = [x for x in proc.stderr.splitlines() if "ignores them" in x]
    assert warn and "--draws" in warn[0] and "--seed" not in warn[0]
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    check_html(html)
    assert "predictive given the plug-in p̂ (no parameter uncertainty)" in html
    lo, hi = s["tau2_interval"]
    assert f"[{lo:.2f}, {hi:.2f}]" in html


# ---------------------------------------------------------------- (6) compare, p = 1 everywhere


@pytest.mark.parametrize("how", ["no weights", "census"])
def test_compare_row_of_its_own_population_has_no_interval(how):
    # audit AU4 G1: compare printed [x, x] intervals where assess says there is none
    from sdcbayes.risk.compare import compare_models

    frame = _tiny_frame(40)
    kw = {"sampling_fraction": 1.0} if how == "census" else {}
    md = sdcbayes.Microdata(frame, keys=["k"], **kw)
    with pytest.warns(MicrodataWarning) if how == "no weights" else nullcontext():
        res = compare_models(md, [{"name": "cf", "model": "closed-form"}], random_seed=2,
                             plug_in_draws=20)
        s = assess_closed_form(md, interval=True, random_seed=2, n_draws=20).summary
    row = res.table.iloc[0]
    assert row["interval_note"] == s["interval_note"] == PLUG_IN_DEGENERATE_NOTE
    assert row["interval_kind"] == ""
    for key, col in (("expected_reidentifications", "er"), ("tau1", "tau1"), ("tau2", "tau2")):
        assert np.isnan(row[f"{col}_lo"]) and np.isnan(row[f"{col}_hi"]), col
        assert row[col] == pytest.approx(s[key], rel=1e-12), col  # the estimates stay
    # the assessment carries assess's summary: the note, no interval kind or level
    a = res.assessments["cf"].summary
    assert a["interval_note"] == PLUG_IN_DEGENERATE_NOTE
    assert not any(k in a for k in ("interval_kind", "interval_level"))
    js = res.summary()["comparison"][0]
    assert js["interval_note"] == PLUG_IN_DEGENERATE_NOTE and js["er_lo"] is None


def test_compare_with_weights_has_no_interval_note():
    from sdcbayes.risk.compare import compare_models

    md = sdcbayes.Microdata(_tiny_frame(40), keys=["k"], weight="w")
    t = compare_models(md, [{"name": "cf", "model": "closed-form"}], random_seed=2,
                       plug_in_draws=20).table
    assert "interval_note" not in t.columns
    assert t.loc[0, "er_lo"] < t.loc[0, "er"] < t.loc[0, "er_hi"]


@pytest.mark.parametrize("how", [[], ["--sampling-fraction", "1"]])
def test_cli_compare_of_its_own_population_says_no_interval(capsys, tmp_path, monkeypatch,
                                                            check_html, how):
    monkeypatch.chdir(tmp_path)
    _tiny_frame(40).to_csv("d.csv", index=False)
    a = run_main(capsys, "assess", "d.csv", "--keys", "k", *how, "--model", "closed-form",
                 "--seed", "4", "--out", "a")
    c = run_main(capsys, "compare", "d.csv", "--keys", "k", *how, "--models",
                 "cf=closed-form", "--seed", "4", "--out", "c")
    assert a.returncode == 0, a.stderr
    assert c.returncode == 0, c.stderr
    note = json.loads((tmp_path / "a" / "summary.json").read_text())["interval_note"]
    assert note == PLUG_IN_DEGENERATE_NOTE
    # terminal: the estimates without brackets, the note as the footnote
    line = next(x for x in c.stdout.splitlines() if x.strip().startswith("cf "))
    assert "[" not in line and "tau1 " in line and "ER " in line
    assert f"* closed form: {note}" in c.stdout
    assert "90% interval" not in c.stdout
    row = json.loads((tmp_path / "c" / "summary.json").read_text())["comparison"][0]
    assert row["interval_note"] == note
    assert all(row[f"{col}_{end}"] is None for col in ("tau1", "tau2", "er")
               for end in ("lo", "hi"))
    csv = pd.read_csv(tmp_path / "c" / "comparison.csv", keep_default_na=False)
    assert csv.loc[0, "interval_note"] == note and csv.loc[0, "er_lo"] == ""
    html = (tmp_path / "c" / "report.html").read_text(encoding="utf-8")
    check_html(html)
    assert "Risk: estimates (no intervals)" in html and "[–, –]" not in html
    assert "no interval: every key combination" in html
