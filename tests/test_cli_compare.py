"""`sdcbayes compare`: outputs, columns, and bad input refused before any fit.

The full run fits a negative-binomial model (MAP/Laplace, small draws) plus the
closed form on a small synthetic sample written to CSV; the outputs are checked
against each other (decisions.csv flags vs the ``changed`` marker, comparison.csv
vs summary.json). The demo path is run with the closed form only (no fit) to check
that the truth is shown. Bad input is refused in one line, exit 2, before any fit
(the fitting entry points are replaced by ones that fail the test) and, in a fresh
interpreter, before PyMC is imported. ``--target-accept`` is followed to ``compare_models``
and the summary, and the divergence advice is checked to name that option.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from clitools import EXE, assert_one_line_error, run_in_process


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    from sdcbayes.datasets.census import simulate_population
    from sdcbayes.datasets.sampling import draw_sample

    pop = simulate_population(4000, seed=3)
    s = draw_sample(pop, keys=("age_group", "sex", "education", "household_size"),
                    fraction=0.05, design="stratified", seed=5)
    path = tmp_path_factory.mktemp("cmp") / "sample.csv"
    s.sample.to_csv(path, index=False)
    return path


KEYS = "age_group,sex,education,household_size"


@pytest.fixture
def no_fit(monkeypatch):
    """Every route by which ``compare`` fits or assesses a model fails the test if taken.

    Bad input must be refused before any of them: PyMC's ``fit``, the latent-class
    Gibbs sampler (``assess_posterior``) and the closed form's plug-in posterior.
    """
    import sdcbayes.inference
    import sdcbayes.risk.compare
    import sdcbayes.risk.posterior_assess

    def boom(*args, **kwargs):
        raise AssertionError("a model was fitted or assessed before the input was checked")

    monkeypatch.setattr(sdcbayes.inference, "fit", boom, raising=False)
    monkeypatch.setattr(sdcbayes.risk.posterior_assess, "assess_posterior", boom)
    monkeypatch.setattr(sdcbayes.risk.compare, "_plug_in_posterior", boom)


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["--models", "pg=poisson-gamma:alfa.sigma=5"], ["'alfa'", "alpha", "omega"]),
        (["--models", "pg=poisson-gamma:alpha.sigma=5,beta.sigma=1"], ["'beta'"]),
        (["--models", "x=poisson-gama"], ["poisson-gama"]),
        (["--models", "pg=poisson-gamma:alpha=5"], ["PRIOR.FIELD=VALUE"]),
        (["--models", "a=negbin,a=closed-form"], ["duplicate"]),
        (["--disclosure-loss", "uniques-equal"], ["missing parameter"]),
        (["--suppression-loss", "uniques-equal:S=1"], ["disclosure loss"]),
        (["--alternative", "uniques-equal:S=1"], ["DISCLOSURE/SUPPRESSION"]),
        (["--target-risk", "1.5"], ["--target-risk"]),
        (["--models", "lc=latent-class:alfa.a=1"], ["'alfa'", "alpha", "phi"]),
        (["--models", "lc=latent-class:classes=0"], ["classes"]),
        (["--models", "lc=latent-class:overdispersion=often"], ["overdispersion"]),
        (["--models", "nb=negbin:classes=5"], ["only latent-class"]),
        (["--models", "lc=latent-class:alpha.dist=HalfNormal"], ["Gamma"]),
    ],
)
def test_bad_input_one_line_before_fitting(capsys, csv_file, tmp_path, extra, fragments,
                                           no_fit):
    proc = run_in_process(capsys, "compare", str(csv_file), "--keys", KEYS, "--weight",
                          "weight", "--out", str(tmp_path / "o"), *extra)
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "o").exists()


def test_bad_prior_name_fails_fast_in_a_fresh_process(csv_file, tmp_path):
    """The console script's entry point in a cold interpreter: refused before PyMC loads."""
    args = ["compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
            "--models", "pg=poisson-gamma:alpha.sigma=5,omegaa.sigma=1,nb=negbin:sgma.sigma=1",
            "--out", str(tmp_path / "o")]
    code = ("import sys\nfrom sdcbayes.cli import main\nrc = main(sys.argv[1:])\n"
            "print('pymc imported:', 'pymc' in sys.modules)\nsys.exit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert_one_line_error(proc, "'omegaa'", "'sgma'")
    assert proc.stdout.strip() == "pymc imported: False", proc.stdout
    assert not (tmp_path / "o").exists()


def test_priors_file_is_validated(capsys, csv_file, tmp_path):
    pf = tmp_path / "priors.json"
    pf.write_text(json.dumps({"nobody": {"sigma": {"sigma": 1}}}))
    proc = run_in_process(capsys, "compare", str(csv_file), "--keys", KEYS, "--weight",
                          "weight", "--models", "nb=negbin", "--priors-file", str(pf),
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "'nobody'", "--priors-file")
    pf.write_text(json.dumps({"nb": {"sigmaa": {"sigma": 1}}}))
    proc = run_in_process(capsys, "compare", str(csv_file), "--keys", KEYS, "--weight",
                          "weight", "--models", "nb=negbin", "--priors-file", str(pf),
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "'sigmaa'")


def test_negbin_needs_weights_before_fitting(capsys, csv_file, tmp_path):
    proc = run_in_process(capsys, "compare", str(csv_file), "--keys", KEYS,
                          "--models", "nb=negbin", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "weight")


def test_full_run_outputs_and_columns(capsys, csv_file, tmp_path, check_html):
    out = tmp_path / "out"
    pf = tmp_path / "priors.json"
    pf.write_text(json.dumps({"nb-tight": {"sigma": {"sigma": 0.5}}}))
    proc = run_in_process(
        capsys, "compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
        "--models", "nb-tight=negbin:sigma.sigma=0.3,closed=closed-form",
        "--priors-file", str(pf), "--fit-method", "map", "--draws", "50", "--chains", "2",
        "--seed", "3", "--alternative", "uniques-equal:S=10/y", "--threshold", "0.1",
        "--out", str(out), "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert sorted(p.name for p in out.iterdir()) == [
        "comparison.csv", "decisions.csv", "frontiers.csv", "report.html", "summary.json"]

    cmp_ = pd.read_csv(out / "comparison.csv")
    assert cmp_["name"].tolist() == ["nb-tight", "closed"]
    for col in ("elpd_loo", "elpd_loo_se", "loo_rank", "elpd_diff", "loo_note", "tau1",
                "tau1_lo", "tau1_hi", "tau2", "tau2_lo", "tau2_hi", "er", "er_lo", "er_hi",
                "max_r_hat", "min_ess_bulk", "divergences", "fit_seconds", "n_published",
                "n_suppressed", "suppression_at_target", "n_above_threshold"):
        assert col in cmp_.columns, col
    # negbin: one observation, so its LOO ranks nothing (audit AA7)
    assert np.isnan(cmp_["loo_rank"].iloc[0]) and "one observation" in cmp_["loo_note"].iloc[0]
    assert np.isnan(cmp_["elpd_loo"].iloc[1]) and np.isnan(cmp_["loo_rank"].iloc[1])
    # inline override wins over the priors file (0.3, not 0.5)
    assert json.loads(cmp_["priors"].iloc[0])["sigma"]["sigma"] == 0.3

    dec = pd.read_csv(out / "decisions.csv")
    pub = dec[["publish_nb-tight", "publish_closed"]].to_numpy(dtype=bool)
    changed = pub.any(axis=1) & ~pub.all(axis=1)
    np.testing.assert_array_equal(dec["changed"].to_numpy(dtype=bool), changed)
    for k in KEYS.split(","):
        assert k in dec.columns
    assert dec["fk"].sum() == len(pd.read_csv(csv_file))

    s = json.loads((out / "summary.json").read_text())
    assert s["command"] == "compare"
    assert s["n_changed_cells"] == int(changed.sum())
    assert s["loss_pairs"] == ["reidentifications/y", "uniques-equal:S=10/y"]
    assert [m["name"] for m in s["models"]] == ["nb-tight", "closed"]
    assert s["decisions"]["nb-tight"]["n_published"] == int(pub[:, 0].sum())

    fr = pd.read_csv(out / "frontiers.csv")
    assert set(fr["model"]) == {"nb-tight", "closed"}
    assert set(fr["pair"]) == set(s["loss_pairs"])

    html = (out / "report.html").read_text()
    c = check_html(html)
    assert "svg" in c.tags
    assert html.count("<svg") == 2  # one frontier plot per loss pair
    assert "Frontier under uniques-equal:S=10/y" in html


def test_demo_closed_form_only_shows_the_truth(capsys, tmp_path):
    from sdcbayes.datasets import load_demo

    out = tmp_path / "demo"
    proc = run_in_process(capsys, "compare", "--models", "closed=closed-form",
                          "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "truth" in proc.stdout and "cells whose decision changes" in proc.stdout
    truth = load_demo().truth
    cmp_ = pd.read_csv(out / "comparison.csv")
    assert cmp_["tau1_true"].iloc[0] == pytest.approx(truth.tau1)
    assert cmp_["tau2_true"].iloc[0] == pytest.approx(truth.tau2)
    assert cmp_["er_true"].iloc[0] == pytest.approx(truth.expected_reidentifications)
    assert "truth" in (out / "report.html").read_text()


# --------------------------------------------------------------------------- --target-accept
@pytest.fixture
def recorded_compare(monkeypatch):
    """Keyword arguments the command hands to ``compare_models`` (the real one runs).

    The command imports ``compare_models`` from its module at call time, so patching the
    module attribute intercepts it. Callables appended to ``hooks`` run inside, where a
    real fit would warn, so the command's warning path sees the library's own message.
    """
    import sdcbayes.risk.compare as rc

    real = rc.compare_models
    calls: list[dict] = []
    hooks: list = []

    def recording(md, specs, **kwargs):
        calls.append(kwargs)
        for hook in hooks:
            hook()
        return real(md, specs, **kwargs)

    monkeypatch.setattr(rc, "compare_models", recording)
    return calls, hooks


def test_target_accept_option_reaches_compare_models(capsys, csv_file, tmp_path,
                                                     recorded_compare):
    """--target-accept is passed on and recorded; default 0.9; none for MAP/ADVI.

    ``compare_models`` passing it to the NUTS sampler is checked against the sampler's
    adapted step size in tests/test_risk_compare.py; the closed form keeps this fast.
    """
    calls, _ = recorded_compare
    base = ["compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
            "--models", "c=closed-form", "--seed", "1", "-q"]
    for extra, expected in ((["--target-accept", "0.97"], 0.97), ([], 0.9),
                            (["--fit-method", "map", "--target-accept", "0.97"], None)):
        out = tmp_path / f"o{len(calls)}"
        proc = run_in_process(capsys, *base, *extra, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert calls[-1]["target_accept"] == (0.97 if "0.97" in extra else 0.9)
        s = json.loads((out / "summary.json").read_text())
        assert s["settings"]["target_accept"] == expected, (extra, s["settings"])
    assert len(calls) == 3


def test_cores_option_reaches_compare_models(capsys, csv_file, tmp_path, recorded_compare):
    # compare_models handing it to each fit: tests/test_risk_compare.py
    calls, _ = recorded_compare
    base = ["compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
            "--models", "c=closed-form", "--seed", "1", "-q"]
    for extra, expected in ((["--cores", "2"], 2), ([], None)):
        out = tmp_path / f"o{len(calls)}"
        proc = run_in_process(capsys, *base, *extra, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert calls[-1]["cores"] == expected
        s = json.loads((out / "summary.json").read_text())
        assert s["settings"]["cores"] == expected
    proc = run_in_process(capsys, *base, "--cores", "0", "--out", str(tmp_path / "bad"))
    assert proc.returncode == 2 and "--cores" in proc.stderr


@pytest.mark.parametrize("value", ["1", "0.5", "0.3", "high"])
def test_target_accept_out_of_range_is_one_line(capsys, csv_file, tmp_path, value):
    proc = run_in_process(capsys, "compare", str(csv_file), "--keys", KEYS, "--weight",
                          "weight", "--models", "c=closed-form", "--target-accept", value,
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "--target-accept")
    assert not (tmp_path / "o").exists()


def test_divergence_warning_names_an_option_compare_has(capsys, csv_file, tmp_path,
                                                        recorded_compare):
    """The library's divergence advice ("raise target_accept") reaches the user as
    ``raise --target-accept``, and that option exists on ``sdcbayes compare``."""
    from sdcbayes.cli import cli
    from sdcbayes.inference.diagnostics import check_diagnostics

    _, hooks = recorded_compare
    # the sampler's own check, fed 3 divergences (a real fit rarely diverges on cue)
    hooks.append(lambda: check_diagnostics({"chains": 2, "divergences": 3}))
    proc = run_in_process(capsys, "compare", str(csv_file), "--keys", KEYS, "--weight",
                          "weight", "--models", "c=closed-form", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    warned = [ln for ln in proc.stderr.splitlines() if ln.startswith("sdcbayes: warning:")]
    assert len(warned) == 1 and "3 divergent transitions" in warned[0], proc.stderr
    assert "raise --target-accept" in warned[0] and "target_accept" not in warned[0]
    options = {o for p in cli.commands["compare"].params for o in p.opts}
    assert "--target-accept" in options


# --------------------------------------------------------------------------- latent-class
def test_latent_class_with_wildcard_missing_keys_is_one_line(capsys, csv_file, tmp_path,
                                                            no_fit):
    """The latent-class model needs each record in one cell: refused before fitting,
    with the fix as options (``--missing category``), as ``sdcbayes assess`` words it."""
    df = pd.read_csv(csv_file)
    df.loc[:4, "education"] = np.nan
    path = tmp_path / "holes.csv"
    df.to_csv(path, index=False)
    proc = run_in_process(capsys, "compare", str(path), "--keys", KEYS, "--weight", "weight",
                          "--models", "lc=latent-class,closed=closed-form",
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "each record in one cell", "--missing category",
                          "--missing wildcard")
    assert "missing='" not in proc.stderr
    assert not (tmp_path / "o").exists()
    # so does the Poisson-gamma model (its wildcard cells lie outside the K cells): one
    # refusal for every model of the comparison, before any model is named (audit Q, 2)
    proc = run_in_process(capsys, "compare", str(path), "--keys", KEYS, "--weight", "weight",
                          "--models", "pg=poisson-gamma", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "5 records have missing key values", "each record in one cell",
                          "--missing category")
    assert not (tmp_path / "o").exists()


def test_latent_class_needs_the_population_size(capsys, csv_file, tmp_path):
    proc = run_in_process(capsys, "compare", str(csv_file), "--keys", KEYS,
                          "--models", "lc=latent-class", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "'lc' (latent-class)", "population size")


def test_latent_class_cross_validation_needs_four_records(capsys, tmp_path):
    """Too few records to split for the cross-validated kappa: refused before fitting (it
    used to fail after "fitting ...", naming a Python keyword); Poisson cells still fit."""
    path = tmp_path / "three.csv"
    pd.DataFrame({"age": [30, 30, 41], "sex": ["m", "m", "f"]}).to_csv(path, index=False)
    proc = run_in_process(capsys, "compare", str(path), "--keys", "age,sex",
                          "--sampling-fraction", "0.1", "--models", "lc=latent-class",
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "'lc' (latent-class)", "at least 4 records", "got 3",
                          "overdispersion to none")
    assert "fitting" not in proc.stdout + proc.stderr
    assert not (tmp_path / "o").exists()
    proc = run_in_process(capsys, "compare", str(path), "--keys", "age,sex",
                          "--sampling-fraction", "0.1", "--models",
                          "lc=latent-class:overdispersion=none,cf=closed-form", "--draws", "50",
                          "--tune", "50", "--quiet", "--out", str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "p" / "comparison.csv").exists()


def test_latent_class_run(capsys, csv_file, tmp_path):
    """latent-class next to the closed form: Gibbs row, no LOO, options recorded."""
    out = tmp_path / "lc"
    pf = tmp_path / "priors.json"
    pf.write_text(json.dumps({"lc": {"phi": {"a": 0.5}}}))
    proc = run_in_process(
        capsys, "compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
        "--models", "lc=latent-class:classes=4,overdispersion=none,closed=closed-form",
        "--priors-file", str(pf),
        "--draws", "40", "--tune", "30", "--chains", "2", "--seed", "3",
        "--alternative", "uniques-equal:S=10/y", "--out", str(out), "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    cmp_ = pd.read_csv(out / "comparison.csv").set_index("name")
    lc = cmp_.loc["lc"]
    assert lc["model"] == "latent-class" and lc["method"] == "gibbs"
    assert np.isnan(lc["elpd_loo"]) and "log-likelihood" in lc["loo_note"]
    for col in ("tau1", "tau2", "er"):
        assert lc[f"{col}_lo"] <= lc[col] <= lc[f"{col}_hi"], col
    s = json.loads((out / "summary.json").read_text())
    assert s["models"][0] == {"name": "lc", "model": "latent-class",
                              "priors": {"phi": {"a": 0.5}},
                              "options": {"n_classes": 4, "overdispersion": None}}
    # the priors file adds to the spec without dropping its options
    assert json.loads(lc["priors"])["phi"] == {"dist": "Dirichlet", "a": 0.5}
    fr = pd.read_csv(out / "frontiers.csv")
    assert set(fr["model"]) == {"lc", "closed"}
    # --tune given: every model's row records it, the closed form none
    assert lc["tune"] == 30 and np.isnan(cmp_.loc["closed", "tune"])
    assert s["settings"]["tune"] == 30


def test_tune_default_is_per_model(capsys, csv_file, tmp_path, monkeypatch):
    """Without --tune the latent-class row gets its own burn-in (that of `assess`), and
    the progress line and the table say so (defaults shrunk to keep the test fast)."""
    import sdcbayes.risk.compare as rc

    monkeypatch.setitem(rc.COMPARE_TUNE_DEFAULTS, "latent-class", 25)
    monkeypatch.setitem(rc.COMPARE_TUNE_DEFAULTS, "nuts", 15)
    out = tmp_path / "lc"
    proc = run_in_process(
        capsys, "compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
        "--models", "lc=latent-class:classes=4,overdispersion=none,pg=poisson-gamma",
        "--fit-method", "map", "--draws", "30", "--chains", "2", "--seed", "3",
        "--out", str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert "latent-class model(s) (gibbs: 2 chains x 30 draws after 25 tuning steps)" \
        in proc.stderr
    cmp_ = pd.read_csv(out / "comparison.csv").set_index("name")
    # MAP tunes nothing: its row records none, as assess records it (audit AA6 F5); the
    # NUTS default: tests/test_risk_compare.py::test_tune_defaults_per_model
    assert cmp_.loc["lc", "tune"] == 25 and np.isnan(cmp_.loc["pg", "tune"])
    s = json.loads((out / "summary.json").read_text())
    assert s["settings"]["tune"] is None
    assert s["settings"]["tune_defaults"] == {"latent-class": 25, "nuts": 15}


def test_default_models_leave_out_what_the_file_cannot_support(capsys, csv_file, tmp_path):
    """Without --models, negbin (needs unequal weights) is left out with a note, not an error;
    named with --models it is still refused (test_negbin_needs_weights_before_fitting)."""
    out = tmp_path / "default"
    proc = run_in_process(
        capsys, "compare", str(csv_file), "--keys", KEYS, "--sampling-fraction", "0.05",
        "--fit-method", "map", "--draws", "30", "--tune", "20", "--chains", "2", "--seed", "1",
        "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    note = [ln for ln in proc.stderr.splitlines() if "left out of the default comparison" in ln]
    assert len(note) == 1 and "'negbin'" in note[0] and "constant" in note[0]
    # the fix is a model compare has, not the library's sigma=<value>
    assert "compare closed-form instead" in note[0] and "sigma=" not in note[0]
    table = pd.read_csv(out / "comparison.csv")
    assert list(table.name) == ["latent-class", "pg-default", "pg-wide", "closed"]
    summary = json.loads((out / "summary.json").read_text())
    assert [d["name"] for d in summary["models_left_out"]] == ["negbin"]


def test_latent_class_chain_start_option(capsys, csv_file, tmp_path):
    """chain-start=bootstrap reaches the sampler: the row's fit differs from the EM start's
    with the same seed, and the option is recorded."""
    out = tmp_path / "cs"
    proc = run_in_process(
        capsys, "compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
        "--models", "lc=latent-class:classes=4,lc-boot=latent-class:classes=4,"
        "chain-start=bootstrap", "--draws", "20", "--tune", "10", "--chains", "2",
        "--seed", "3", "--out", str(out), "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["models"][1]["options"] == {"n_classes": 4, "init": "bootstrap"}
    rows = pd.read_csv(out / "comparison.csv").set_index("name")
    assert rows.loc["lc", "tau1"] != rows.loc["lc-boot", "tau1"]
    proc = run_in_process(
        capsys, "compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
        "--models", "lc=latent-class:chain-start=margins", "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, "chain-start=", "bootstrap")


def test_latent_class_profile_mass_option(capsys, csv_file, tmp_path):
    """profile-mass=cv reaches the fit: its choice is the prior recorded for the row."""
    out = tmp_path / "pm"
    proc = run_in_process(
        capsys, "compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
        "--models", "lc=latent-class:classes=4,profile-mass=cv",
        "--draws", "20", "--tune", "10", "--chains", "1", "--seed", "3", "--out", str(out),
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["models"][0]["options"] == {"n_classes": 4, "profile_mass": "cv"}
    lc = pd.read_csv(out / "comparison.csv").set_index("name").loc["lc"]
    # no key of 20 levels here: the learnt prior is kept, and recorded as the one used
    assert json.loads(lc["priors"])["phi"]["mass"] == "learn"
    assert lc["tau1_lo"] <= lc["tau1"] <= lc["tau1_hi"]
    # needs the cross-validated overdispersion: one line, exit 2
    proc = run_in_process(
        capsys, "compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
        "--models", "lc=latent-class:profile-mass=cv,overdispersion=none",
        "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, "profile-mass=cv", "overdispersion=cv")


# --------------------------------------------------------------------------- console output
def test_warnings_name_their_model_and_logs_get_no_progress_table(csv_file, tmp_path):
    """Two fits with the same parameters (omega, beta, ...) both warn: each line says
    whose fit it is about. stderr is a pipe here (a log): plain progress lines, not
    PyMC's live table ("Progre… Diverg…"), which would stay in the log."""
    out = tmp_path / "w"
    proc = subprocess.run(
        [EXE, "compare", str(csv_file), "--keys", KEYS, "--weight", "weight",
         "--models", "pg=poisson-gamma,pg-wide=poisson-gamma:alpha.sigma=5,closed=closed-form",
         # 2 x 20 draws: bulk and tail ESS below 200 in every fit, so both models warn
         "--draws", "20", "--tune", "20", "--chains", "2", "--seed", "2", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    warned = [ln for ln in proc.stderr.splitlines() if ln.startswith("sdcbayes: warning:")]
    # "pg, pg-wide: ...": a warning both fits give is said once, naming both (audit UX F7)
    heads = [ln.removeprefix("sdcbayes: warning: ").split(": ", 1) for ln in warned]
    owners = [head.split(", ") for head, _ in heads]
    assert {o for names in owners for o in names} == {"pg", "pg-wide"}, proc.stderr
    assert all(names == sorted(names, key=["pg", "pg-wide"].index) for names in owners)
    texts = [text for _, text in heads]
    assert len(set(texts)) == len(texts), proc.stderr  # no text said twice
    assert any("pg-wide" in names and "parameter" in text and "ESS" in text
               for names, text in zip(owners, texts, strict=True))
    # progress: a line per chain and model, no rich table
    assert sum(ln.startswith("chain ") for ln in proc.stderr.splitlines()) == 4, proc.stderr
    assert "Diverg" not in proc.stderr and "━" not in proc.stderr
    # only the closed form's intervals are marked as the plug-in's
    rows = {ln.split()[0]: ln for ln in proc.stdout.splitlines() if ln.startswith("  ")}
    assert "]*" not in rows["pg"] and "]*" not in rows["pg-wide"]


def test_closed_form_interval_is_marked_as_the_plug_ins(capsys, tmp_path):
    """The closed form's console interval is the plug-in's predictive spread, not a
    posterior interval (`assess --model closed-form` shows none): marked, with a
    footnote that says so in comparison.csv's words (its interval_kind)."""
    out = tmp_path / "demo"
    proc = run_in_process(capsys, "compare", "--models", "closed=closed-form",
                          "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    row = next(ln for ln in proc.stdout.splitlines() if ln.strip().startswith("closed "))
    # tau1, tau2, ER and household ER (the demo's households)
    assert row.count("]*") == 4, row
    cmp_ = pd.read_csv(out / "comparison.csv").iloc[0]
    # tau2 with its interval, as comparison.csv gives it (audit UX F9)
    assert f"tau2 {cmp_['tau2']:.1f} [{cmp_['tau2_lo']:.1f}, {cmp_['tau2_hi']:.1f}]*" in row
    kind = cmp_["interval_kind"]
    foot = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("* ")]
    assert len(foot) == 1 and kind in foot[0] and "not a posterior interval" in foot[0]


def _summary_table(names, models, elpd, household):
    """A comparison table as compare_models returns it, for ``_print_summary`` alone."""
    n = len(names)
    t = pd.DataFrame({
        "name": names, "model": models,
        "tau1": [21.9] * n, "tau1_lo": [15.0] * n, "tau1_hi": [30.0] * n,
        "tau2": [72.54] * n, "tau2_lo": [64.71] * n, "tau2_hi": [81.03] * n,
        "er": [98.7] * n, "er_lo": [90.4] * n, "er_hi": [107.2] * n,
        "elpd_loo": elpd, "loo_rank": [0.0, 1.0][:n], "n_suppressed": [622] * n,
    })
    if household:
        t["household_er"], t["household_er_lo"], t["household_er_hi"] = 280.9, 255.0, 305.3
    return t


@pytest.mark.parametrize("wide", [False, True])
def test_tau2_interval_shown_and_the_table_no_wider_than_its_legend(capsys, wide):
    """tau2 has its interval like tau1 and ER (audit UX F9); a row that would then be
    wider than the legend line above the table (two latent-class fits ranked by LOO,
    household ER) gets tau2 on a sub-row under tau1, so no row grows past it."""
    from pathlib import Path
    from types import SimpleNamespace

    from sdcbayes.commands.compare import _print_summary

    names = ["lc-poisson-long", "lc-multinomial"] if wide else ["pg"]
    models = ["latent-class"] * 2 if wide else ["poisson-gamma"]
    elpd = [-12345.6, -12350.1] if wide else [float("nan")]
    result = SimpleNamespace(table=_summary_table(names, models, elpd, wide),
                             pairs=["reidentifications/y"])
    s = {"sdcbayes_version": "0", "target_risk": 0.2, "data": "x.csv", "truth": None,
         "n_changed_cells": 3, "n_cells": 40}
    _print_summary(result, s, Path("out"))
    lines = capsys.readouterr().out.splitlines()
    legend = next(ln for ln in lines if ln.startswith("  tau1: "))
    table = lines[lines.index(legend) + 1:]
    table = table[:next(i for i, ln in enumerate(table) if ln.startswith("written: "))]
    assert all(len(ln) <= len(legend) for ln in table), table
    tau2 = "tau2 72.5 [64.7, 81.0]"
    assert sum(tau2 in ln for ln in table) == len(names), table
    for name in names:
        i = next(i for i, ln in enumerate(table) if ln.split()[0] == name)
        column = table[i].index("tau1 ")
        if wide:  # the next line holds tau2 alone, under tau1
            assert tau2 not in table[i]
            assert table[i + 1].index(tau2) == column and table[i + 1].strip() == tau2
        else:  # beside tau1, before ER, as in report.html
            assert table[i].index(tau2) < table[i].index("ER ")
