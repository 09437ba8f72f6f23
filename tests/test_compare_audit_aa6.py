"""Audit AA6: `sdcbayes compare` against `sdcbayes assess`, the same model on the same data.

* F1: ``--strata`` (and the demo's own stratum, ``region``) reaches compare's
  Microdata, so a latent-class row whose stratum is a key is extrapolated stratum by
  stratum (risk/posterior_assess.py, ``_stratum_key_rates``) as assess extrapolates it:
  the same tau1, tau2 and ER, and risk exactly 1/f_k in a stratum taken in full.
* F2: the help says where compare's sampler defaults differ from assess's.
* F3: ``kappa-prior=`` and ``cluster-correction=`` latent-class options, with assess's
  ``--kappa-prior`` / ``--cluster-correction`` numbers; bad values refused before any fit.
* F4: the input caveats assess prints (weights summing below their count; the closed
  form without weights) are printed by compare and kept in summary.json's warnings.
* F5: rows fitted by MAP record no tuning; alpha is not stamped under --missing category.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

# equal explicit settings for both commands (compare's and assess's defaults differ, F2)
LC_RUN = ("--draws", "20", "--chains", "2", "--tune", "20", "--seed", "3")
STRAT_KEYS = "age_group,sex,region,marital_status"
FULL_REGIONS = ("R01", "R05", "R09")  # sampled in full: weight 1


@pytest.fixture(scope="module")
def strat_csv(tmp_path_factory):
    """2,000 demo records, weight w2 constant within each region; three regions in full."""
    from sdcbayes.datasets import load_demo

    t = load_demo().sample.iloc[:2000].copy()
    regions = sorted(t["region"].unique())
    w = {r: [1.0, 5.0, 20.0, 50.0][i % 4] for i, r in enumerate(regions)}
    t["w2"] = t["region"].map(w)
    assert set(FULL_REGIONS) <= {r for r, v in w.items() if v == 1.0}
    path = tmp_path_factory.mktemp("aa6") / "strat.csv"
    t.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    """A 5% stratified sample (461 records) with households and unequal weights."""
    from sdcbayes.datasets.census import simulate_population
    from sdcbayes.datasets.sampling import draw_sample

    pop = simulate_population(4000, seed=3)
    s = draw_sample(pop, keys=("age_group", "sex", "education", "household_size"),
                    fraction=0.05, design="stratified", seed=5)
    path = tmp_path_factory.mktemp("aa6s") / "small.csv"
    s.sample.to_csv(path, index=False)
    return path


SMALL_KEYS = "age_group,sex,education,household_size"


@pytest.fixture
def no_fit(monkeypatch):
    """Every route by which compare fits a model fails the test if taken."""
    import sdcbayes.inference
    import sdcbayes.risk.compare
    import sdcbayes.risk.posterior_assess

    def boom(*args, **kwargs):
        raise AssertionError("a model was fitted before the input was checked")

    monkeypatch.setattr(sdcbayes.inference, "fit", boom, raising=False)
    monkeypatch.setattr(sdcbayes.risk.posterior_assess, "assess_posterior", boom)
    monkeypatch.setattr(sdcbayes.risk.compare, "_plug_in_posterior", boom)


def _row(out, name):
    return next(r for r in json.loads((out / "summary.json").read_text())["comparison"]
                if r["name"] == name)


def _same_as_assess(row, a):
    assert row["tau1"] == a["tau1"]
    assert row["tau2"] == a["tau2"]
    assert row["er"] == a["expected_reidentifications"]
    assert [row["tau1_lo"], row["tau1_hi"]] == a["tau1_interval"]
    assert [row["er_lo"], row["er_hi"]] == a["expected_reidentifications_interval"]


# --------------------------------------------------------------------------- F1: strata
def test_strata_key_extrapolates_per_stratum_as_assess(capsys, strat_csv, tmp_path):
    """Audit: compare gave tau1 44.5, ER 170.9 and risk 0.869 for the 47 sample uniques of
    the regions taken in full, where assess --strata region gave 55.3, 188.1 and 1."""
    common = (str(strat_csv), "--keys", STRAT_KEYS, "--weight", "w2", "--strata", "region",
              *LC_RUN)
    out_c, out_a = tmp_path / "c", tmp_path / "a"
    proc = run_in_process(capsys, "compare", *common, "--models", "lc=latent-class",
                          "--out", str(out_c), "-q")
    assert proc.returncode == 0, proc.stderr
    proc = run_in_process(capsys, "assess", *common, "--model", "latent-class",
                          "--out", str(out_a), "-q", "--no-posterior")
    assert proc.returncode == 0, proc.stderr
    a = json.loads((out_a / "summary.json").read_text())
    _same_as_assess(_row(out_c, "lc"), a)
    # a stratum sampled in full has no population beyond its records: risk exactly 1/f_k
    d = pd.read_csv(out_c / "decisions.csv")
    uniques = d[(d.fk == 1) & d.region.isin(FULL_REGIONS)]
    assert len(uniques) > 10
    np.testing.assert_allclose(uniques["risk_lc"], 1.0, rtol=1e-12)
    s = json.loads((out_c / "summary.json").read_text())
    assert s["settings"]["strata"] == "region"
    assert s["provenance"]["data"]["strata"] == "region"
    # assess's note on the per-stratum extrapolation, named by its model
    assert any(n.startswith("lc: the stratum 'region' is one of the keys")
               for n in s["notes"]), s.get("notes")
    assert "region" in (out_c / "report.html").read_text()


def test_demo_takes_its_own_stratum_as_assess_does(capsys, tmp_path):
    """No DATA: the demo's region is the stratum (as assess takes it); with region a key
    the latent-class row gives assess's numbers (audit: tau1 1.288 vs assess 1.333)."""
    common = ("--keys", STRAT_KEYS, *LC_RUN, "--threshold", "0.05")
    out_c, out_a = tmp_path / "c", tmp_path / "a"
    proc = run_in_process(capsys, "compare", *common, "--models", "lc=latent-class",
                          "--out", str(out_c), "-q")
    assert proc.returncode == 0, proc.stderr
    proc = run_in_process(capsys, "assess", *common, "--out", str(out_a), "-q",
                          "--no-posterior")
    assert proc.returncode == 0, proc.stderr
    a = json.loads((out_a / "summary.json").read_text())
    row = _row(out_c, "lc")
    _same_as_assess(row, a)
    assert row["n_above_threshold"] == a["n_above_threshold"]
    s = json.loads((out_c / "summary.json").read_text())
    assert s["settings"]["strata"] == "region"
    assert s["provenance"]["data"]["n_strata"] == 12


def test_demo_default_keys_numbers_unchanged_by_its_stratum(capsys, tmp_path):
    """The demo's own keys do not include region: its stratum is stamped and changes no
    number (the closed form's tau1, tau2 and ER as before the fix, audit AA6 table)."""
    out = tmp_path / "c"
    proc = run_in_process(capsys, "compare", "--models", "closed=closed-form", "--seed", "1",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    row = _row(out, "closed")
    assert row["tau1"] == pytest.approx(21.946263320903658, rel=1e-12)
    assert row["tau2"] == pytest.approx(72.49682339838071, rel=1e-12)
    assert row["er"] == pytest.approx(98.68175678810431, rel=1e-12)
    s = json.loads((out / "summary.json").read_text())
    assert s["provenance"]["data"]["strata"] == "region"


def test_unknown_strata_column_is_one_line(capsys, small_csv, tmp_path, no_fit):
    proc = run_in_process(capsys, "compare", str(small_csv), "--keys", SMALL_KEYS,
                          "--weight", "weight", "--strata", "regoin",
                          "--models", "c=closed-form", "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, "regoin")


# --------------------------------------------------------------------------- F2: help
def test_help_says_where_the_defaults_differ_from_assess(capsys):
    proc = run_in_process(capsys, "compare", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "assess's default 4" in text  # --chains
    assert "1000 for poisson-gamma and negbin" in text  # --draws
    assert "500 for NUTS (assess: 1000)" in text  # --tune
    assert "assess 4 x 1000 after 1000" in text  # --models
    assert "phi.a=inverse" in text and "--profile-prior inverse" in text
    assert "kappa-prior=" in text and "cluster-correction=" in text
    assert "--strata" in text


# --------------------------------------------------------------------------- F3: options
def test_kappa_prior_and_cluster_correction_give_assess_numbers(capsys, small_csv, tmp_path):
    common = (str(small_csv), "--keys", SMALL_KEYS, "--weight", "weight",
              "--household", "household_id", *LC_RUN)
    out_c, out_a = tmp_path / "c", tmp_path / "a"
    proc = run_in_process(
        capsys, "compare", *common, "--models",
        "lc=latent-class:kappa-prior=log-uniform,cluster-correction=cv,classes=5",
        "--out", str(out_c), "-q")
    assert proc.returncode == 0, proc.stderr
    proc = run_in_process(capsys, "assess", *common, "--kappa-prior", "log-uniform",
                          "--cluster-correction", "cv", "--classes", "5",
                          "--out", str(out_a), "-q", "--no-posterior")
    assert proc.returncode == 0, proc.stderr
    a = json.loads((out_a / "summary.json").read_text())
    assert a["overdispersion"]["kappa_prior"] == "log-uniform"  # the option took effect
    _same_as_assess(_row(out_c, "lc"), a)
    s = json.loads((out_c / "summary.json").read_text())
    assert s["models"][0]["options"] == {"kappa_prior": "log-uniform",
                                         "cluster_correction": "cv", "n_classes": 5}


def test_kappa_prior_changes_the_fit(capsys, small_csv, tmp_path):
    """kappa-prior reaches the sampler: another prior, another row, same seed."""
    out = tmp_path / "c"
    proc = run_in_process(
        capsys, "compare", str(small_csv), "--keys", SMALL_KEYS, "--weight", "weight",
        *LC_RUN, "--models", "hc=latent-class:classes=5,"
        "ln=latent-class:classes=5,kappa-prior=log-normal:3:0.1", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert _row(out, "hc")["er"] != _row(out, "ln")["er"]


def test_phi_inverse_is_assess_profile_prior_inverse(capsys, small_csv, tmp_path):
    """The --models help names phi.a=inverse as assess's --profile-prior inverse."""
    common = (str(small_csv), "--keys", SMALL_KEYS, "--weight", "weight", *LC_RUN)
    out_c, out_a = tmp_path / "c", tmp_path / "a"
    proc = run_in_process(capsys, "compare", *common, "--models",
                          "lc=latent-class:classes=5,phi.a=inverse", "--out", str(out_c), "-q")
    assert proc.returncode == 0, proc.stderr
    proc = run_in_process(capsys, "assess", *common, "--classes", "5", "--profile-prior",
                          "inverse", "--out", str(out_a), "-q", "--no-posterior")
    assert proc.returncode == 0, proc.stderr
    _same_as_assess(_row(out_c, "lc"), json.loads((out_a / "summary.json").read_text()))


@pytest.mark.parametrize(
    ("models", "extra", "fragments"),
    [
        ("lc=latent-class:kappa-prior=cauchy", (), ["kappa-prior=", "log-uniform"]),
        ("lc=latent-class:kappa-prior=log-uniform,overdispersion=none", (),
         ["kappa-prior=", "overdispersion=cv"]),
        ("lc=latent-class:cluster-correction=yes", (), ["cluster-correction=", "'cv'"]),
        ("lc=latent-class:cluster-correction=cv", (), ["cluster-correction=cv", "--household"]),
        ("nb=negbin:kappa-prior=log-uniform", (), ["only latent-class"]),
    ],
)
def test_bad_latent_class_options_refused_before_fitting(capsys, small_csv, tmp_path, models,
                                                         extra, fragments, no_fit):
    proc = run_in_process(capsys, "compare", str(small_csv), "--keys", SMALL_KEYS,
                          "--weight", "weight", "--models", models, *extra,
                          "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, *fragments)


def test_default_kappa_prior_is_not_passed_on(monkeypatch):
    """kappa-prior=half-cauchy:1 is assess's default: not passed to the sampler, as assess."""
    from sdcbayes.risk.compare import _kappa_prior_of

    assert _kappa_prior_of(None) is None
    assert _kappa_prior_of("half-cauchy:1") is None
    assert _kappa_prior_of("half-cauchy") is None
    assert _kappa_prior_of("log-uniform") is not None
    assert _kappa_prior_of("half-cauchy:2") == ("half-cauchy", 2.0)


# --------------------------------------------------------------------------- F4: caveats
@pytest.fixture(scope="module")
def low_weights_csv(tmp_path_factory, small_csv):
    t = pd.read_csv(small_csv)
    t.loc[:60, "weight"] = 0.6
    path = tmp_path_factory.mktemp("aa6w") / "loww.csv"
    t.to_csv(path, index=False)
    return path


def _caveat(lines, model):
    return [ln for ln in lines if "weights summing below their sample count" in ln
            and model in ln]


def test_weights_below_count_warned_as_assess_warns(capsys, low_weights_csv, tmp_path):
    data = (str(low_weights_csv), "--keys", SMALL_KEYS, "--weight", "weight",
            "--allow-weights-below-one")
    common = (*data, "--fit-method", "map", "--draws", "100", "--chains", "2", "--seed", "1")
    out_c, out_nb, out_cf = tmp_path / "c", tmp_path / "nb", tmp_path / "cf"
    proc = run_in_process(capsys, "compare", *common, "--models", "nb=negbin,closed=closed-form",
                          "--out", str(out_c), "-q")
    assert proc.returncode == 0, proc.stderr
    stderr = proc.stderr.splitlines()
    nb_line = _caveat(stderr, "negative-binomial")
    cf_line = _caveat(stderr, "closed form")
    assert len(nb_line) == 1 and nb_line[0].startswith("sdcbayes: warning: nb: ")
    assert len(cf_line) == 1 and cf_line[0].startswith("sdcbayes: warning: closed: ")
    s = json.loads((out_c / "summary.json").read_text())
    assert _caveat(s["warnings"], "negative-binomial") and _caveat(s["warnings"], "closed form")
    # the very texts assess prints, with the model's name first
    proc = run_in_process(capsys, "assess", *common, "--model", "negbin",
                          "--out", str(out_nb), "-q", "--no-posterior")
    assert proc.returncode == 0, proc.stderr
    a_nb = json.loads((out_nb / "summary.json").read_text())
    proc = run_in_process(capsys, "assess", *data, "--model", "closed-form",
                          "--out", str(out_cf), "-q")
    assert proc.returncode == 0, proc.stderr
    a_cf = json.loads((out_cf / "summary.json").read_text())
    assert nb_line[0].removeprefix("sdcbayes: warning: nb: ") in a_nb["warnings"]
    assert cf_line[0].removeprefix("sdcbayes: warning: closed: ") in a_cf["warnings"]
    assert a_nb["n_cells_weights_below_count"] > 0
    # the numbers were equal before; they still are
    assert _row(out_c, "closed")["tau1"] == pytest.approx(a_cf["tau1"], rel=1e-12)
    assert _row(out_c, "nb")["tau1"] == a_nb["tau1"]


def test_closed_form_without_weights_says_so(capsys, small_csv, tmp_path):
    out = tmp_path / "c"
    proc = run_in_process(capsys, "compare", str(small_csv), "--keys", SMALL_KEYS,
                          "--models", "closed=closed-form", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    from sdcbayes.cli import CLOSED_FORM_NO_WEIGHTS_NOTE

    expected = f"closed: {CLOSED_FORM_NO_WEIGHTS_NOTE}"
    assert f"sdcbayes: warning: {expected}" in proc.stderr.splitlines()
    s = json.loads((out / "summary.json").read_text())
    assert s["warnings"] == [expected]
    # every sample unique has risk 1: tau1 = tau2 = the number of sample uniques
    row = _row(out, "closed")
    n_uniques = int((pd.read_csv(out / "decisions.csv")["fk"] == 1).sum())
    assert row["tau1"] == row["tau2"] == n_uniques
    # with weights: no such caveat
    proc = run_in_process(capsys, "compare", str(small_csv), "--keys", SMALL_KEYS,
                          "--weight", "weight", "--models", "closed=closed-form",
                          "--out", str(tmp_path / "w"), "-q")
    assert proc.returncode == 0 and "whole population" not in proc.stderr


# --------------------------------------------------------------------------- F5: provenance
def test_map_rows_record_no_tuning(capsys, small_csv, tmp_path):
    out = tmp_path / "c"
    proc = run_in_process(capsys, "compare", str(small_csv), "--keys", SMALL_KEYS,
                          "--weight", "weight", "--models", "pg=poisson-gamma",
                          "--fit-method", "map", "--seed", "1", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert _row(out, "pg")["tune"] is None
    assert np.isnan(pd.read_csv(out / "comparison.csv").set_index("name").loc["pg", "tune"])


@pytest.mark.parametrize(("missing", "alpha"), [("category", None), ("wildcard", 1.0)])
def test_alpha_not_stamped_where_unused(capsys, small_csv, tmp_path, missing, alpha):
    out = tmp_path / "c"
    proc = run_in_process(capsys, "compare", str(small_csv), "--keys", SMALL_KEYS,
                          "--weight", "weight", "--missing", missing,
                          "--models", "c=closed-form", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "summary.json").read_text())["provenance"]["data"]
    assert "alpha" in data and data["alpha"] == alpha
