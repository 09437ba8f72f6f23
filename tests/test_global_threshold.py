"""sdcMicro's global threshold for a target rate (audit DD5, finding F2).

``measure_risk(obj, max_global_risk = 0.01)`` reports ``global_threshold``: the
individual risk above which records are to be protected so that the file's
re-identification rate falls below the target, each protected record keeping a risk
of the threshold (mu-Argus 4.1 manual, Section 2.3.4.1). sdcbayes had only
``--threshold``, which counts records above a given value. Checked here:
:func:`sdcbayes.risk.measures.global_risk_threshold` against a brute force over the
candidate thresholds and against a record-by-record replay of sdcMicro's procedure,
on random risks with and without ties; sdcMicro's printed numbers (its tests);
the special values (target met already: NaN; not reachable by any risk value: 0);
``assess_closed_form(max_global_risk=)`` and ``sdcbayes assess --max-global-risk``.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_main

from sdcbayes.exceptions import InputError
from sdcbayes.risk.measures import global_risk_threshold


def brute_force(r, rate):
    """The largest risk value below the maximum whose capped rate is under ``rate``."""
    r = np.asarray(r, dtype=float)
    r = r[~np.isnan(r)]
    n = r.size
    if n == 0 or r.sum() < rate * n:
        return math.nan
    best = None
    for t in np.unique(r)[:-1]:  # every distinct value but the largest
        if np.minimum(r, t).sum() < rate * n:
            best = t if best is None else max(best, t)
    return 0.0 if best is None else float(best)


def replay(r, rate):
    """sdcMicro's procedure record by record (descending risk), as its C++ routine runs it.

    Returned as sdcMicro's R wrapper reports it: NA (here NaN) when the threshold found
    equals both the first risk and the last one looked at (the file is safe already).
    """
    r = sorted((float(x) for x in r), reverse=True)
    n = len(r)
    target = rate * n
    remaining = sum(r)
    if n == 0:
        return math.nan
    current = r[0]
    if remaining < target:
        return math.nan  # threshold = current = the first risk: NA in R
    above, threshold = 0, 0.0
    for x in r:
        if x != current:
            if remaining + x * above < target:
                threshold = x
                break
            current = x
        above += 1
        remaining -= x
    return math.nan if current == threshold else threshold


def random_risks(rng, n, ties):
    if ties:  # few distinct values, as cells share a risk
        return rng.choice(rng.uniform(0, 0.6, size=12), size=n)
    return rng.beta(0.4, 4.0, size=n)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ties", [False, True])
def test_matches_brute_force_and_sdcmicros_procedure(seed, ties):
    rng = np.random.default_rng(seed)
    r = random_risks(rng, int(rng.integers(1, 300)), ties)
    for rate in (0.001, 0.01, 0.03, 0.05, 0.1, 0.2, 0.5):
        got = global_risk_threshold(r, rate)
        want = brute_force(r, rate)
        assert (math.isnan(got) and math.isnan(want)) or got == want, (rate, got, want)
        sdc = replay(r, rate)
        assert (math.isnan(got) and math.isnan(sdc)) or got == sdc, (rate, got, sdc)


@pytest.mark.parametrize("seed", range(6))
def test_threshold_meets_the_target_and_the_next_value_up_does_not(seed):
    rng = np.random.default_rng(100 + seed)
    r = random_risks(rng, 500, ties=bool(seed % 2))
    rate = 0.5 * r.mean()  # never met already
    t = global_risk_threshold(r, rate)
    assert 0 < t < r.max()
    assert np.minimum(r, t).mean() < rate
    higher = np.unique(r[r > t]).min()
    assert np.minimum(r, higher).mean() >= rate
    # tied records fall on one side: t is a risk value, and exactly those above it count
    assert np.any(r == t)


def test_sdcmicros_printed_thresholds():
    # sdcMicro's tests print global$threshold 0 at max_risk 0.01 for these individual
    # risks (test_calcRisks.R, without and with missing values; test_globalRecode.R): no
    # risk is below 1%, so every record is to be protected
    cases = [
        [0.5, 1.0, 0.5, 1.0, 1.0, 0.5, 1.0, 0.5, 1.0, 1.0],
        [0.50, 0.50, 0.25, 0.50],
        [0.1] * 10,
        [1 / 6, 1 / 6, 1 / 6, 1 / 6, 0.5, 1 / 6, 0.5, 1 / 6, 0.5, 0.5],
        [1 / 7, 1 / 7, 1 / 7, 1 / 7, 1 / 3, 1 / 7, 0.1, 1 / 7, 1 / 3, 0.5],
        [1 / 8, 1 / 8, 1 / 8, 1 / 8, 1 / 3, 1 / 8, 0.1, 1 / 8, 1 / 3, 1 / 8],
    ]
    for r in cases:
        assert global_risk_threshold(r, 0.01) == 0.0
        assert global_risk_threshold(r) == 0.0  # sdcMicro's default max_global_risk


def test_special_values():
    # met already: sdcMicro's NA
    assert math.isnan(global_risk_threshold([0.02, 0.01, 0.01], 0.1))
    # an exact tie with the target is not under it (strict, as sdcMicro's "<")
    assert global_risk_threshold([0.25, 0.25, 0.25, 0.25], 0.25) == 0.0
    assert math.isnan(global_risk_threshold([0.25, 0.25, 0.25, 0.25], 0.2500001))
    # no record with a risk
    assert math.isnan(global_risk_threshold([], 0.01))
    assert math.isnan(global_risk_threshold([np.nan, np.nan], 0.01))
    # a zero risk is a candidate like any other
    assert global_risk_threshold([0.3, 0.0, 0.0], 0.05) == 0.0
    # a worked case: n = 5, target 0.25 expected re-identifications; at t = 0.1 the
    # capped sum is 0.1 + 0.1 + 0.1 + 0.01 + 0.01 = 0.32, at t = 0.01 it is 0.05
    assert global_risk_threshold([0.5, 0.2, 0.1, 0.01, 0.01], 0.05) == 0.01
    assert global_risk_threshold([0.5, 0.2, 0.1, 0.01, 0.01], 0.07) == 0.1


def test_records_without_a_risk_are_left_out():
    rng = np.random.default_rng(7)
    r = rng.beta(0.5, 5, size=200)
    with_nan = np.insert(r, [0, 50, 50, 199], np.nan)
    for rate in (0.01, 0.05):
        assert global_risk_threshold(with_nan, rate) == global_risk_threshold(r, rate)
    # a pandas Series with missing values, too
    assert global_risk_threshold(pd.Series(with_nan), 0.01) == global_risk_threshold(r, 0.01)


@pytest.mark.parametrize("bad", [0, 1, -0.1, 1.5, math.nan, math.inf, True, "0.01", None])
def test_target_outside_zero_one_is_refused(bad):
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        global_risk_threshold([0.1, 0.2], bad)


def test_risks_that_are_no_probabilities_are_refused():
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        global_risk_threshold([0.1, 1.2], 0.01)
    with pytest.raises(InputError, match="1-d"):
        global_risk_threshold([[0.1, 0.2]], 0.01)


# --- assess_closed_form ----------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_md():
    import sdcbayes
    from sdcbayes.datasets import DEMO_KEYS, DEMO_WEIGHT, load_demo

    demo = load_demo()
    frame = getattr(demo, "sample", demo)
    return sdcbayes.Microdata(frame, keys=list(DEMO_KEYS), weight=DEMO_WEIGHT)


def test_assess_closed_form_default_is_unchanged(demo_md):
    from sdcbayes.risk.assess import assess_closed_form

    a = assess_closed_form(demo_md)
    assert not any("global_threshold" in k or k == "max_global_risk" for k in a.summary)
    assert "max_global_risk" not in a.provenance["settings"]
    assert a.summary["expected_reidentifications"] == pytest.approx(98.68, abs=0.005)


def test_assess_closed_form_gives_the_threshold_on_the_individual_risk(demo_md):
    from sdcbayes.risk.assess import assess_closed_form

    a = assess_closed_form(demo_md, max_global_risk=0.01)
    s = a.summary
    r = a.records["risk"].to_numpy()
    t = global_risk_threshold(r, 0.01)
    assert s["max_global_risk"] == 0.01
    assert s["global_threshold"] == t
    # the demo's rate is 2.5%: a threshold strictly inside the risks, and it works
    assert 0 < t < r.max()
    assert s["n_above_global_threshold"] == int(np.count_nonzero(r > t)) > 0
    assert s["rate_at_global_threshold"] == pytest.approx(np.minimum(r, t).mean())
    assert s["rate_at_global_threshold"] < 0.01 < s["expected_reidentification_rate"]
    assert s["global_threshold_risk"] == "closed-form individual risk"
    assert a.provenance["settings"]["max_global_risk"] == 0.01
    assert "global threshold" in repr(a)
    # a target the file meets already: nothing to protect
    met = assess_closed_form(demo_md, max_global_risk=0.3).summary
    assert math.isnan(met["global_threshold"]) and met["n_above_global_threshold"] == 0


def test_assess_closed_form_refuses_a_bad_target_before_any_work():
    from sdcbayes.risk.assess import assess_closed_form

    class NoCells:  # a stand-in whose cell table must never be built
        record_cell = np.zeros(2, dtype=int)

        @property
        def cells(self):
            raise AssertionError("the cell table was built before the check")

    with pytest.raises(InputError, match="max_global_risk"):
        assess_closed_form(NoCells(), max_global_risk=5)


# --- assess_posterior / assess_from_posterior -----------------------------------------


def _small_md():
    import sdcbayes

    rng = np.random.default_rng(4)
    n = 300
    frame = pd.DataFrame({"a": rng.choice(list("pqrs"), n), "b": rng.choice(list("xyz"), n),
                          "c": rng.integers(0, 6, n).astype(str),
                          "w": rng.choice([5.0, 20.0], n)})
    return sdcbayes.Microdata(frame, keys=["a", "b", "c"], weight="w")


@pytest.mark.filterwarnings("ignore")  # a short fit: convergence is not the point here
def test_posterior_assessments_give_the_threshold_on_the_posterior_mean_risk():
    from sdcbayes.risk.assess import global_threshold_summary
    from sdcbayes.risk.posterior_assess import assess_from_posterior, assess_posterior

    md = _small_md()
    res = assess_posterior(md, draws=20, tune=20, chains=2, random_seed=3, n_classes=5,
                           overdispersion=None, ppc=0, cores=1, max_global_risk=0.05)
    s = res.summary
    want = global_threshold_summary(res.records["risk"].to_numpy(), 0.05,
                                    "posterior mean record risk")
    assert {k: s[k] for k in want} == pytest.approx(want, nan_ok=True)
    assert s["global_threshold_risk"] == "posterior mean record risk"
    assert res.provenance["settings"]["max_global_risk"] == 0.05
    # the same entries from the stored posterior, and none without the option
    again = assess_from_posterior(md, res.idata, "latent-class", max_global_risk=0.05).summary
    assert {k: again[k] for k in want} == pytest.approx(want, nan_ok=True)
    plain = assess_from_posterior(md, res.idata, "latent-class")
    assert not any("global_threshold" in k or k == "max_global_risk" for k in plain.summary)
    assert "max_global_risk" not in plain.provenance["settings"]


def test_posterior_assessments_refuse_a_bad_target_before_any_work(monkeypatch):
    from sdcbayes.risk import posterior_assess as pa

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before the check")

    monkeypatch.setattr(pa, "_fit_and_assess", no_fit)
    md = _small_md()
    for bad in (0, 1.5, "0.01", True):
        with pytest.raises(InputError, match="max_global_risk must be a rate strictly"):
            pa.assess_posterior(md, max_global_risk=bad)
        # before the posterior is read: None is no posterior at all
        with pytest.raises(InputError, match="max_global_risk must be a rate strictly"):
            pa.assess_from_posterior(md, None, "latent-class", max_global_risk=bad)


# --- sdcbayes assess --max-global-risk ------------------------------------------------


def test_cli_closed_form_writes_and_prints_the_threshold(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "cf"
    proc = run_main(capsys, "assess", "--model", "closed-form", "--max-global-risk", "0.01",
                    "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    r = pd.read_csv(out / "records.csv")["risk"].to_numpy()
    t = global_risk_threshold(r, 0.01)
    assert s["global_threshold"] == pytest.approx(t, rel=1e-12)
    assert s["n_above_global_threshold"] == int(np.count_nonzero(r > t))
    assert s["global_threshold_risk"] == "closed-form individual risk"
    line = [x for x in proc.stdout.splitlines() if "global threshold" in x]
    assert len(line) == 1
    assert f"{t:.4g}" in line[0] and f"{s['n_above_global_threshold']:,} records" in line[0]
    assert "rate < 1%" in line[0]
    page = (out / "report.html").read_text()
    assert "global threshold for a rate &lt; 1%" in page
    assert f"protect the {s['n_above_global_threshold']:,} records above it" in page


def test_cli_posterior_model_uses_the_posterior_mean_record_risk(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "lc"
    proc = run_main(capsys, "assess", "--model", "latent-class", "--draws", "20", "--tune",
                    "20", "--chains", "2", "--seed", "3", "--ppc", "0", "--overdispersion",
                    "none", "--max-global-risk", "0.05", "--no-posterior", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    r = pd.read_csv(out / "records.csv")["risk"].to_numpy()  # the posterior mean per record
    t = global_risk_threshold(r, 0.05)
    assert s["max_global_risk"] == 0.05
    assert s["global_threshold"] == pytest.approx(t, rel=1e-12)
    assert s["n_above_global_threshold"] == int(np.count_nonzero(r > t))
    assert s["global_threshold_risk"] == "posterior mean record risk"
    assert sum("global threshold" in x for x in proc.stdout.splitlines()) == 1


def test_cli_met_target_prints_none_needed(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "met"
    proc = run_main(capsys, "assess", "--model", "closed-form", "--max-global-risk", "0.5",
                    "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["global_threshold"] is None and s["n_above_global_threshold"] == 0
    assert "none needed" in proc.stdout
    assert "none needed: the rate, " in (out / "report.html").read_text()


@pytest.mark.parametrize("bad", ["0", "1", "5", "-0.01", "nan"])
def test_cli_refuses_a_rate_outside_zero_one_before_any_work(tmp_path, capsys, monkeypatch,
                                                             bad):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "bad"
    proc = run_main(capsys, "assess", "--max-global-risk", bad, "--out", str(out))
    assert_one_line_error(proc, "--max-global-risk", "strictly between 0 and 1", "0.01")
    assert not out.exists()
    assert "fitting" not in proc.stderr
