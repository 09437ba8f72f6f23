"""Audit F, findings 3-5: protect/decide input checks, k-anonymity counts, report wording.

* protect --suppress-k above the number of records is refused; a stratum below k is
  warned about; k-anonymity is also counted as the suppression step judges it.
* A recipe's recode of a level that will not occur is refused before any work.
* --nayak-zhang-xi 1 is refused up front, in the option's words.
* Modifier options without their step (protect) and sampler options without a
  posterior (decide) are refused; decide's --seed is warned about.
* report.html: the SUDA score note follows --score-method and --max-size; the
  protect report says how the "after" risk reads randomised keys (adjusted for the
  misclassification since PRAM of a key is scored by Shlomo & Skinner's approximation).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

SMALL = "a,b,c,d\nx,1,foo,1.5\ny,2,bar,2.5\nx,1,baz,\nz,2,foo,4\n"


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.csv"
    path.write_text(SMALL)
    return path


@pytest.fixture
def no_work(monkeypatch):
    """Fail loudly if protect starts measuring risk (its first piece of work)."""
    from sdcbayes.commands import protect

    def boom(*args, **kwargs):
        raise AssertionError("risk measured before the input was checked")

    monkeypatch.setattr(protect, "_risk", boom)


def _recipe(tmp_path, steps):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"steps": steps}))
    return path


# --------------------------------------------------------------------------- finding 3
def test_suppress_k_above_records_refused(capsys, tmp_path, small, no_work):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--suppress-k", "10",
                          "--out", str(out))
    assert_one_line_error(proc, "--suppress-k 10 exceeds the 4 records; choose k <= 4")
    assert not out.exists()
    recipe = _recipe(tmp_path, [{"step": "suppress", "k": 5}])
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--recipe",
                          str(recipe), "--out", str(out))
    assert_one_line_error(proc, "step 1 (suppress): k 5 exceeds the 4 records",
                          "choose k <= 4")


def test_k_equal_to_records_still_runs(capsys, tmp_path, small):
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--suppress-k", "4",
                          "--out", str(tmp_path / "o"), "-q")
    assert proc.returncode == 0, proc.stderr


def test_stratum_below_k_warned(capsys, tmp_path, small):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--suppress-k", "3",
                          "--strata", "c", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sdcbayes: warning: step 1 (suppress): 3 "
                                                   "strata of c hold fewer than k=3"), lines
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["warnings"]) == 1 and "k was lowered" in summary["warnings"][0]
    # strata of 2, 1 and 1 records: none can reach 3, all four records stay below k
    assert summary["risk"]["after"]["k_anonymity_violations_suppression"] == 4
    assert summary["risk"]["suppression_strata"] == ["c"]
    html = (out / "report.html").read_text()
    assert "k was lowered to the stratum size" in html


def test_after_count_uses_the_suppression_definition(capsys, tmp_path):
    from sdcbayes.protection import wildcard_frequencies

    rng = np.random.default_rng(4)
    n = 120
    frame = pd.DataFrame({"a": rng.choice(list("pqrst"), n), "b": rng.integers(1, 6, n),
                          "s": rng.choice(["u", "v"], n)})
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(data), "--keys", "a,b", "--suppress-k", "3",
                          "--strata", "s", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    risk = summary["risk"]
    protected = pd.read_csv(out / "protected.csv")
    for when, f in (("before", frame), ("after", protected)):
        want = int((wildcard_frequencies(f, ["a", "b"], ["s"]) < 3).sum())
        assert risk[when]["k_anonymity_violations_suppression"] == want, when
    assert risk["before"]["k_anonymity_violations_suppression"] > 0
    assert risk["after"]["k_anonymity_violations_suppression"] == 0  # the step reached it
    assert "as the suppression judges it" in (out / "report.html").read_text()


def test_differing_definitions_are_explained(capsys, tmp_path):
    # A record with both keys missing matches everyone for the suppression, but no
    # complete record in sdcMicro's freqCalc: the step sees 3-anonymity, freqCalc does not.
    data = tmp_path / "e.csv"
    data.write_text("a,b,v\nx,1,1\nx,1,2\n,,3\n")
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(data), "--keys", "a,b", "--suppress-k", "3",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    risk = json.loads((out / "summary.json").read_text())["risk"]
    assert risk["after"]["k_anonymity_violations_suppression"] == 0
    assert risk["after"]["k_anonymity_violations"] == 2
    assert len(risk["notes"]) == 1
    assert "sdcMicro's freqCalc" in risk["notes"][0]
    assert "0 as local suppression (step 1) judges it" in risk["notes"][0]
    assert "0 as local suppression (step 1) judges it" in (out / "report.html").read_text()


# --------------------------------------------------------------------------- finding 4
def test_recipe_recode_level_checked_before_work(capsys, tmp_path, small, no_work):
    out = tmp_path / "o"
    recipe = _recipe(tmp_path, [
        {"step": "microaggregate", "columns": ["d"], "k": 2},
        {"step": "recode", "column": "a", "mapping": {"99": "x"}},
    ])
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--recipe",
                          str(recipe), "--out", str(out))
    assert_one_line_error(proc, "step 2 (recode) of 'a'", "level '99' does not occur")
    assert not out.exists()
    # a level an earlier recode removed is caught too
    recipe = _recipe(tmp_path, [
        {"step": "recode", "column": "a", "mapping": {"x": "w"}},
        {"step": "recode", "column": "a", "mapping": {"x": "v"}},
    ])
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--recipe",
                          str(recipe), "--out", str(out))
    assert_one_line_error(proc, "step 2 (recode) of 'a' (as step(s) 1 leave it)",
                          "level 'x' does not occur")
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--recode",
                          "b:7=1", "--out", str(out))
    assert_one_line_error(proc, "--recode of 'b'", "level '7' does not occur")
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--recode",
                          "a:x=w", "--recode", "a:x=v", "--out", str(out))
    assert_one_line_error(proc, "--recode of 'a' (after the earlier --recode)",
                          "level 'x' does not occur")


def test_recode_of_a_level_an_earlier_recode_made_runs(capsys, tmp_path, small):
    out = tmp_path / "o"
    recipe = _recipe(tmp_path, [
        {"step": "recode", "column": "a", "mapping": {"x": "w"}},
        {"step": "recode", "column": "a", "mapping": {"w": "v", "y": "v"}},
        {"step": "band", "column": "d", "breaks": [0, 2, 5]},
    ])
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--recipe",
                          str(recipe), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert pd.read_csv(out / "protected.csv")["a"].tolist() == ["v", "v", "v", "z"]


def test_nayak_zhang_xi_one_refused_up_front(capsys, tmp_path, small, no_work):
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--nayak-zhang-xi",
                          "1", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "--nayak-zhang-xi", ">= 1/3 and < 1", "got 1.0")


@pytest.mark.parametrize("option, value, step", [
    ("--pram-pd", "0.5", "--pram"),
    ("--mdav-k", "2", "--microaggregate"),
    ("--noise-level", "0.2", "--noise"),
])
def test_modifier_without_its_step_refused(capsys, tmp_path, small, no_work, option, value,
                                           step):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(small), "--keys", "a,b", "--suppress-k", "2",
                          option, value, "--out", str(out))
    assert_one_line_error(proc, option, f"add {step} COLUMNS")
    assert not out.exists()


DOMAINS = "area,y,n,N\na0,0,10,334\na1,2,18,113\na2,0,5,63\na3,1,27,267\na4,3,12,90\n"


@pytest.mark.parametrize("route", [("--alpha", "1", "--beta", "10"),
                                   ("--hyperparameters", "ml")])
def test_decide_sampler_options_without_sampling_refused(capsys, tmp_path, route):
    dom = tmp_path / "dom.csv"
    dom.write_text(DOMAINS)
    out = tmp_path / "o"
    base = ["decide", str(dom), "--y", "y", "--n", "n", "--N", "N", *route, "--out", str(out)]
    proc = run_in_process(capsys, *base, "--draws", "7", "--max-draws", "2")
    assert_one_line_error(proc, "--draws, --max-draws set the posterior sampler",
                          "leave out --draws, --max-draws")
    assert not out.exists()
    for opt, v in (("--chains", "3"), ("--tune", "5"), ("--target-accept", "0.95")):
        assert_one_line_error(run_in_process(capsys, *base, opt, v), opt)


def test_decide_seed_without_sampling_warned(capsys, tmp_path):
    dom = tmp_path / "dom.csv"
    dom.write_text(DOMAINS)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "decide", str(dom), "--y", "y", "--n", "n", "--N", "N",
                          "--alpha", "1", "--beta", "10", "--seed", "3", "--out", str(out),
                          "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == ("sdcbayes: warning: --seed is ignored: --alpha/--beta fix "
                                   "the hyperparameters and sample nothing; nothing in this "
                                   "run is random")
    assert any("--seed is ignored" in w
               for w in json.loads((out / "summary.json").read_text())["warnings"])


# --------------------------------------------------------------------------- finding 5
@pytest.fixture
def suda_file(tmp_path):
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({f"k{j}": rng.integers(0, 3, 40) for j in range(4)})
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("extra, wanted", [
    ((), "among the M = 4 keys scores (M − k)! (Templ"),
    (("--max-size", "3"), "among the M = 4 keys scores (M − k)! (Templ"),
    (("--max-size", "1"), "scores (M − k)!/(M − m − 1)! = (M − k)!/2!, with m = 1"),
    (("--score-method", "ihsn"), "scores (2^(M − k) − 1)·k!·(M − k)!/M!"),
])
def test_suda_report_states_the_score_used(capsys, tmp_path, suda_file, extra, wanted):
    from sdcbayes.risk.suda import msu_size_weights

    out = tmp_path / "o"
    proc = run_in_process(capsys, "suda", str(suda_file), "--keys", "k0,k1,k2,k3", *extra,
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text()
    assert wanted in html
    if not wanted.endswith("(Templ"):  # (M - k)! alone would be wrong for these
        assert "keys scores (M − k)! (Templ" not in html
    # the formulas shown are the weights used (M = 4)
    fact = np.array([1, 1, 2, 6, 24], dtype=float)
    k = np.arange(1, 5)
    assert np.allclose(msu_size_weights(4, 1), fact[4 - k[:1]] / fact[2])
    assert np.allclose(msu_size_weights(4, 3), fact[4 - k[:3]])
    assert np.allclose(msu_size_weights(4, method="ihsn"),
                       (2.0 ** (4 - k) - 1) * fact[k] * fact[4 - k] / fact[4])


def _keyed_file(tmp_path):
    rng = np.random.default_rng(11)
    n = 200
    frame = pd.DataFrame({"a": rng.integers(0, 8, n), "b": rng.integers(0, 6, n),
                          "c": rng.choice(["p", "q", "r"], n), "g": rng.choice(["m", "f"], n)})
    path = tmp_path / "k.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("steps, nz", [
    (("--pram", "c"), False),
    (("--nayak-zhang-xi", "0.5"), True),
])
def test_protect_report_says_how_randomised_keys_are_read(capsys, tmp_path, steps, nz):
    data = _keyed_file(tmp_path)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(data), "--keys", "a,b,c", *steps, "--seed",
                          "1", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text()
    assert "misclassification-adjusted, Shlomo &amp; Skinner 2010" in html
    assert "treats the randomised values as if they were true" not in html
    assert ("max_cm_probability" in html) == nz
    if nz:
        summary = json.loads((out / "summary.json").read_text())
        p = summary["steps"][0]["result"]["max_cm_probability"]
        assert f"at most {p:.4g}" in html


def test_protect_report_without_randomisation_has_no_such_note(capsys, tmp_path):
    data = _keyed_file(tmp_path)
    for i, steps in enumerate((("--suppress-k", "2"), ("--pram", "g", "--suppress-k", "2"))):
        out = tmp_path / f"o{i}"  # PRAM of a non-key (g) leaves the key risk as it is
        proc = run_in_process(capsys, "protect", str(data), "--keys", "a,b,c", *steps,
                              "--seed", "1", "--out", str(out), "-q")
        assert proc.returncode == 0, proc.stderr
        assert "randomised values" not in (out / "report.html").read_text()
