"""``protect --method exact|approx``: the closed form's formula wherever protect reads it.

assess's ``--method`` (the same choices and default, ``sdcbayes._cliutils
.closed_form_method_option``): ``exact`` E(1/F | f) (Benedetti-Franconi, seed 004 eq. 3)
or ``approx``, the approximation sdcMicro's measure_risk and localSupp read. In protect it
sets the risk before and after, the risk a ``suppress_risk`` step (``--suppress-risk``, a
recipe's step) reads, and under ``--model latent-class`` the closed form kept beside the
model. The reference for the numbers is ``assess --model closed-form --method ...`` on the
same files, and sdcMicro's own ``localSupp`` output stored by R
(tests/data/sdcmicro_r/protection/localsupp_testdata.csv.gz, its README).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

R_OUT = Path(__file__).parent / "data" / "sdcmicro_r" / "protection"
SDCMICRO_KEYS = "urbrur,roof,walls,water,electcon,relat,sex"
#: The numbers protect's before/after and assess's summary.json share.
COMPARED = ("expected_reidentifications", "expected_reidentification_rate", "max_risk",
            "n_above_benchmark", "n_sample_uniques", "n_cells")


def _survey(n: int = 300, seed: int = 11) -> pd.DataFrame:
    """A weighted sample whose small cells make exact and approx differ visibly."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.choice(["0-19", "20-39", "40-59", "60+"], n),
        "sex": rng.choice(["f", "m"], n),
        "region": rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1]),
        "w": rng.uniform(2, 12, n).round(3),
    })


@pytest.fixture
def survey(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # every command runs where its files are
    _survey().to_csv("survey.csv", index=False)
    return "survey.csv"


def _summary(out: str) -> dict:
    return json.loads((Path(out) / "summary.json").read_text(encoding="utf-8"))


def _protect(capsys, data: str, out: str, *args: str) -> dict:
    proc = run_in_process(capsys, "protect", data, *args, "--out", out)
    assert proc.returncode == 0, proc.stderr
    return _summary(out) | {"_stdout": proc.stdout}


def _assess(capsys, data: str, method: str, out: str) -> dict:
    proc = run_in_process(capsys, "assess", data, "--keys", "age,sex,region", "--weight", "w",
                          "--model", "closed-form", "--method", method, "--quiet",
                          "--out", out)
    assert proc.returncode == 0, proc.stderr
    return _summary(out)


# --------------------------------------------------------------------------- (1) numbers
def test_approx_before_and_after_are_assess_approx_and_the_default_stays_exact(capsys,
                                                                                survey):
    common = ["--keys", "age,sex,region", "--weight", "w", "--suppress-k", "3", "--quiet"]
    approx = _protect(capsys, survey, "pa", *common, "--method", "approx")
    default = _protect(capsys, survey, "pd", *common)
    ref = {(m, f): _assess(capsys, f, m, f"a_{m}_{i}")
           for m in ("exact", "approx")
           for i, f in enumerate((survey, "pa/protected.csv", "pd/protected.csv"))}
    for run, method, protected in ((approx, "approx", "pa/protected.csv"),
                                   (default, "exact", "pd/protected.csv")):
        for side, data in (("before", survey), ("after", protected)):
            got, want = run["risk"][side], ref[(method, data)]
            for key in COMPARED:
                assert got[key] == pytest.approx(want[key], rel=1e-12, abs=0), (method, side, key)
    # the suppression itself reads no risk: both runs wrote the same file, and only the
    # formula tells the two apart (a small weighted file: exact and approx differ by more
    # than rounding, so a run that ignored --method would fail above)
    assert (Path("pa/protected.csv").read_bytes() == Path("pd/protected.csv").read_bytes())
    for side in ("before", "after"):
        a, e = (r["risk"][side]["expected_reidentifications"] for r in (approx, default))
        assert abs(a - e) > 1e-3 * e, side


def test_misclassification_adjustment_reads_the_chosen_formula(survey):
    # after PRAM of a key (commit a93492e) each record's risk is M_jj r_i: with --method
    # approx r_i is the approximate risk, the unadjusted numbers too
    from sdcbayes import Microdata
    from sdcbayes.commands.protect import _risk
    from sdcbayes.risk.assess import assess_closed_form

    frame = pd.read_csv(survey)
    keep = np.random.default_rng(3).uniform(0.5, 1.0, len(frame))
    for method in ("exact", "approx"):
        r = assess_closed_form(Microdata(frame, ["age", "sex", "region"], weight="w"),
                               method=method).records["risk"].to_numpy()
        out, _ = _risk(frame, ["age", "sex", "region"], "w", 3, threshold=0.2, keep=keep,
                       method=method)
        assert out["expected_reidentifications"] == pytest.approx((keep * r).sum(), rel=1e-12)
        assert out["n_above_threshold"] == np.count_nonzero(keep * r > 0.2)
        unadjusted = out["misclassification"]["unadjusted"]
        assert unadjusted["expected_reidentifications"] == pytest.approx(r.sum(), rel=1e-12)


def test_pram_of_a_key_with_approx_runs_end_to_end(capsys, survey):
    s = _protect(capsys, survey, "o", "--keys", "age,sex,region", "--weight", "w",
                 "--pram", "region", "--seed", "4", "--method", "approx", "--quiet")
    after = s["risk"]["after"]
    ref = _assess(capsys, "o/protected.csv", "approx", "a")
    # the unadjusted numbers are the approximate risk of the released file read as true
    assert after["misclassification"]["unadjusted"]["expected_reidentifications"] == \
        pytest.approx(ref["expected_reidentifications"], rel=1e-12)
    assert after["expected_reidentifications"] < ref["expected_reidentifications"]


# --------------------------------------------------------------------------- (2) localSupp
@pytest.fixture(scope="module")
def r_localsupp():
    return pd.read_csv(R_OUT / "localsupp_testdata.csv.gz")


@pytest.fixture
def testdata_csv(sdcmicro_csv, tmp_path, monkeypatch):
    # read before the chdir: the shared data folder is found beside the working directory
    frame = sdcmicro_csv("testdata.csv")
    monkeypatch.chdir(tmp_path)
    frame.to_csv("testdata.csv", index=False)
    return "testdata.csv"


def _blanked_water(capsys, data: str, out: str, *args: str) -> np.ndarray:
    proc = run_in_process(capsys, "protect", data, "--keys", SDCMICRO_KEYS,
                          "--weight", "household_weights", *args, "--quiet", "--out", out)
    assert proc.returncode == 0, proc.stderr
    return pd.read_csv(Path(out) / "protected.csv")["water"].isna().to_numpy()


def test_suppress_risk_with_approx_blanks_localsupps_records(capsys, testdata_csv,
                                                             r_localsupp):
    # localSupp(obj, threshold = 0.15, keyVar = "water") on createSdcObj(testdata, keys,
    # weightVar = "household_weights"): R blanked water in 76 records
    r_blanked = r_localsupp["blanked_water_015"].to_numpy() == 1
    assert r_blanked.sum() == 76
    step = ["--suppress-risk", "0.15", "--suppress-risk-key", "water"]
    approx = _blanked_water(capsys, testdata_csv, "approx", *step, "--method", "approx")
    np.testing.assert_array_equal(approx, r_blanked)
    # The default exact form blanks the same 76 here: above 0.1 the two formulas agree to
    # far below the gap between any record's risk and 0.15 (the nearest is 0.1577); they
    # part on the small risks (up to 2.4% near 0.04).
    exact = _blanked_water(capsys, testdata_csv, "exact", *step)
    np.testing.assert_array_equal(exact, r_blanked)


def test_suppress_risk_reads_method_where_the_formulas_part(capsys, testdata_csv,
                                                           r_localsupp):
    # At 0.041 (between a cell's approx risk 0.04141 and its exact 0.04041) localSupp
    # blanks the records whose risk, R's obj@risk$individual stored beside its runs, is
    # above the threshold (its rule, checked against R's blanks at 0.15 and 0.05 in
    # test_sdcmicro_r_protection.py): 224 records. --method approx blanks exactly those,
    # also through a recipe's suppress_risk step; the exact form leaves 3 of them.
    r_blanked = r_localsupp["risk"].to_numpy() > 0.041
    assert r_blanked.sum() == 224
    step = ["--suppress-risk", "0.041", "--suppress-risk-key", "water"]
    approx = _blanked_water(capsys, testdata_csv, "approx", *step, "--method", "approx")
    np.testing.assert_array_equal(approx, r_blanked)
    Path("recipe.json").write_text(json.dumps(
        {"steps": [{"step": "suppress_risk", "threshold": 0.041, "key": "water"}]}))
    recipe = _blanked_water(capsys, testdata_csv, "recipe", "--recipe", "recipe.json",
                            "--method", "approx")
    np.testing.assert_array_equal(recipe, r_blanked)
    exact = _blanked_water(capsys, testdata_csv, "exact", *step)
    assert not (exact & ~r_blanked).any()  # a subset of localSupp's records
    assert (r_blanked & ~exact).sum() == 3


# --------------------------------------------------------------------------- (3) refusal
def test_bad_method_is_refused_in_one_line_before_any_work(capsys, survey, protect_no_work):
    proc = run_in_process(capsys, "protect", survey, "--keys", "age,sex,region",
                          "--weight", "w", "--suppress-k", "3", "--method", "approximate",
                          "--out", "o")
    assert_one_line_error(proc, "--method", "'approximate'", "'exact'", "'approx'")
    assert not Path("o").exists()


# --------------------------------------------------------------------------- (4) stamp
def test_method_is_stamped_and_named(capsys, survey, check_html):
    from sdcbayes.commands.protect import RISK_ESTIMATOR, RISK_ESTIMATORS

    common = ["--keys", "age,sex,region", "--weight", "w", "--suppress-risk", "0.2"]
    approx = _protect(capsys, survey, "pa", *common, "--method", "approx")
    default = _protect(capsys, survey, "pd", *common)
    assert approx["provenance"]["settings"]["method"] == "approx"  # as assess stamps it
    assert default["provenance"]["settings"]["method"] == "exact"
    assert RISK_ESTIMATORS["exact"] == RISK_ESTIMATOR == "closed form (Benedetti-Franconi)"
    assert approx["risk"]["estimator"] == RISK_ESTIMATORS["approx"] != RISK_ESTIMATOR
    assert default["risk"]["estimator"] == RISK_ESTIMATOR
    assert f"risk: {RISK_ESTIMATORS['approx']}; it understates" in approx["_stdout"]
    note = next(n for n in approx["risk"]["notes"] if n.startswith("Risk before and after"))
    assert note.startswith(f"Risk before and after: the {RISK_ESTIMATORS['approx']},")
    page = Path("pa/report.html").read_text(encoding="utf-8")
    check_html(page)
    assert "<td>method</td><td>approx</td>" in page.replace(" ", "")  # the settings table
    # the risk table's note names the formula the run used
    assert "with the approximation sdcMicro&#x27;s measure_risk uses" in page \
        or "with the approximation sdcMicro's measure_risk uses" in page
    plain = Path("pd/report.html").read_text(encoding="utf-8")
    assert "computed exactly" in plain and "computed exactly" not in page


def test_the_demo_numbers_the_approx_note_quotes_hold():
    # the note quotes the demo's closed form before and after k = 3 local suppression of
    # the formula --method chose (tests/test_protect_audit_dd5.py checks the exact ones)
    from sdcbayes import Microdata
    from sdcbayes.commands.protect import _estimator_notes
    from sdcbayes.datasets import demo_keys, load_demo
    from sdcbayes.protection import local_suppression
    from sdcbayes.risk.assess import assess_closed_form

    keys = list(demo_keys())
    sample = load_demo().sample
    prot = local_suppression(sample, keys, k=3).frame
    note = _estimator_notes("weight", "approx")[0]
    for f in (sample, prot):
        er = assess_closed_form(Microdata(f, keys, weight="weight"),
                                method="approx").summary["expected_reidentifications"]
        assert f"{er:.2f}" in note, (er, note)


def test_latent_class_keeps_the_closed_form_of_the_method(capsys, survey):
    # under --model latent-class --method sets the closed form beside the model, stamped
    # as closed_form_method ("method" there is the fit's sampler, gibbs)
    from sdcbayes.commands.protect import RISK_ESTIMATORS

    s = _protect(capsys, survey, "lc", "--keys", "age,sex,region", "--weight", "w",
                 "--suppress-k", "3", "--model", "latent-class", "--method", "approx",
                 "--draws", "20", "--tune", "20", "--chains", "1", "--seed", "2", "--quiet")
    settings = s["provenance"]["settings"]
    assert settings["closed_form_method"] == "approx" and settings["method"] == "gibbs"
    cf = s["risk"]["closed_form"]
    assert cf["estimator"] == RISK_ESTIMATORS["approx"]
    for side, data in (("before", survey), ("after", "lc/protected.csv")):
        want = _assess(capsys, data, "approx", f"a_{side}")
        assert cf[side]["expected_reidentifications"] == pytest.approx(
            want["expected_reidentifications"], rel=1e-12)
