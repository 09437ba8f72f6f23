"""The command line, run as a user runs it.

The demo run, the help, a rerun and one refusal go through the installed console script
(a subprocess); the fits and the other refusals call its entry point,
``sdcbayes.cli.main``, in this process (``clitools.run_main``: the same code without an
interpreter start-up and PyMC's import per run, Python's warnings on stderr as the script
prints them; ``capfd`` also catches what a library writes to file descriptor 2). No test
here that runs in this process reads a fit's log lines from stderr: those need a
subprocess (see ``clitools.run_main``).
"""

from __future__ import annotations

import csv
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_cli, run_in_process, run_main

#: The demo run's chains. "short": the checks below read what the run prints and writes,
#: not how well it converged, and 50 draws keep the default predictive check (50 replicates
#: per chain, 4 chains); "default": the README's run with no option at all (500 draws after
#: 2,000 sweeps, about a minute), in the slow tier.
DEMO_CHAINS = {"short": ["--draws", "50", "--tune", "50"], "default": []}


@pytest.fixture(scope="module",
                params=["short", pytest.param("default", marks=pytest.mark.slow)])
def demo_run(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "out"
    proc = run_cli("assess", *DEMO_CHAINS[request.param], "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return proc, out


def test_demo_run_prints_summary_with_truth(demo_run):
    proc, out = demo_run
    text = proc.stdout
    for label in ("records", "sample uniques", "expected re-identifications", "tau1", "tau2"):
        assert label in text
    assert text.count("(true ") >= 2  # truth printed beside tau1 and tau2
    assert "cell overdispersion kappa" in text and "diagnostics" in text
    assert "predictive check: cells seen once" in text and "cells seen 3 times" in text


def test_demo_output_folder_follows_design(demo_run, check_html):
    _, out = demo_run
    summary = json.loads((out / "summary.json").read_text())
    for key in (
        "sdcbayes_version",
        "model",
        "n_records",
        "n_cells",
        "n_sample_uniques",
        "expected_reidentifications",
        "tau1",
        "tau2",
        "n_above_benchmark",
        "household_expected_reidentifications",
    ):
        assert key in summary, key
    # the default run is the recommended posterior model, with intervals beside the truth
    assert summary["model"] == "latent-class"
    assert summary["truth"]["tau1"] >= 0
    for q in ("tau1", "tau2", "expected_reidentifications"):
        lo, hi = summary[q + "_interval"]
        assert lo <= summary[q] <= hi, q
    # the cells' cross-validated overdispersion is reported (None = Poisson, JSON has no inf)
    od = summary["overdispersion"]
    assert od["method"] == "cv" and od["cv_observed_uniques"] == summary["n_sample_uniques"]
    assert 0.0 <= od["share_poisson"] <= 1.0
    # and how kappa was learnt: the model module's defaults, stamped with the result
    from sdcbayes.models import latent_class as lcm

    assert od["cv_splits"] == lcm.CV_SPLITS and od["cv_parts_fit"] == lcm.CV_PREDICTIVE
    assert od["cv_ratios"] == list(lcm.CV_RATIOS)  # the demo's 3,908 records allow eighths
    # each ratio's own median kappa (JSON keys are strings; None = Poisson)
    by_ratio = {int(r): (np.inf if k is None else k)
                for r, k in od["cv_kappa_median_by_ratio"].items()}
    assert sorted(by_ratio) == list(lcm.CV_RATIOS) and min(by_ratio.values()) > 0
    assert od["kappa_prior"].startswith(lcm.KAPPA_PRIOR[0])
    # the parts' dispersion of the held-out count (the default CV_DISPERSION = "parts")
    assert lcm.CV_DISPERSION == "parts" and od["cv_dispersion"] >= 1.0
    assert summary["provenance"]["settings"]["overdispersion"] == "cv"
    # the posterior predictive check of the sample's counts of counts (--ppc, default 50)
    ppc = summary["predictive_check"]
    assert [r["count"] for r in ppc] == [1, 2, 3, 4, 5]
    assert ppc[0]["observed"] == summary["n_sample_uniques"]
    for r in ppc:
        lo, hi = r["interval"]
        assert lo <= r["mean"] <= hi and 0.0 <= r["p_value"] <= 1.0
    assert summary["provenance"]["settings"]["ppc"] == 50
    with open(out / "records.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames
        rows = list(reader)
    assert header[:5] == ["record", "cell", "fk", "Fk_hat", "risk"]
    assert "household_risk" in header
    assert len(rows) == summary["n_records_input"]
    assert [int(r["record"]) for r in rows] == list(range(len(rows)))
    risks = np.array([float(r["risk"]) for r in rows])
    assert np.all((risks > 0) & (risks <= 1))
    assert risks.sum() == pytest.approx(summary["expected_reidentifications"], rel=1e-9)
    html = (out / "report.html").read_text()
    checker = check_html(html)
    assert "svg" in checker.tags and "table" in checker.tags


def test_rerun_replaces_previous_output(demo_run, tmp_path):
    _, out = demo_run
    target = tmp_path / "again"
    shutil.copytree(out, target)
    (target / "records.csv").write_text("stale")
    proc = run_cli("assess", "--model", "closed-form", "--out", str(target), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert (target / "records.csv").read_text().startswith("record,")
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name or ".old-" in p.name]


def test_json_flag_prints_summary(tmp_path, capsys):
    # a short chain: this checks the flag, not the fit
    proc = run_main(capsys, "assess", "--out", str(tmp_path / "o"), "--json",
                    "--draws", "30", "--tune", "10", "--chains", "2", "--seed", "1")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["model"] == "latent-class"


@pytest.fixture()
def small_csv(tmp_path):
    rng = np.random.default_rng(3)
    n = 200
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 8, n),
            "sex": rng.choice(["m", "f"], n),
            "region": rng.integers(1, 5, n),
            "w": rng.uniform(20, 80, n),
            "hid": np.repeat(np.arange(n // 2), 2),
        }
    )
    path = tmp_path / "small.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_file_run_matches_python_api(small_csv, tmp_path, capsys):
    path, frame = small_csv
    out = tmp_path / "res"
    proc = run_main(
        capsys, "assess", str(path), "--keys", "age,sex,region", "--weight", "w",
        "--household", "hid", "--model", "closed-form", "--out", str(out), "-q",
    )
    assert proc.returncode == 0, proc.stderr
    from sdcbayes import Microdata
    from sdcbayes.risk.assess import assess_closed_form

    expected = assess_closed_form(
        Microdata(frame, keys=["age", "sex", "region"], weight="w", household="hid")
    )
    got = pd.read_csv(out / "records.csv")
    np.testing.assert_allclose(got["risk"], expected.records["risk"], rtol=1e-12)
    np.testing.assert_allclose(
        got["household_risk"], expected.records["household_risk"], rtol=1e-12
    )


def test_closed_form_without_weights_warns_that_the_file_is_the_population(small_csv, tmp_path,
                                                                            capfd):
    path, _ = small_csv
    bare = run_main(capfd, "assess", str(path), "--keys", "age,sex,region", "--model",
                    "closed-form", "--out", str(tmp_path / "bare"), "-q")
    assert bare.returncode == 0, bare.stderr
    lines = [ln for ln in bare.stderr.splitlines() if ln.startswith("sdcbayes: warning:")]
    assert len(lines) == 1 and "whole population" in lines[0], bare.stderr
    assert "--weight or --sampling-fraction" in lines[0]
    summary = json.loads((tmp_path / "bare" / "summary.json").read_text())
    assert summary["warnings"] == [lines[0].removeprefix("sdcbayes: warning: ")]
    risk = pd.read_csv(tmp_path / "bare" / "records.csv")
    assert (risk.loc[risk.fk == 1, "risk"] == 1).all()  # what the warning says
    weighted = run_main(capfd, "assess", str(path), "--keys", "age,sex,region",
                        "--weight", "w", "--model", "closed-form",
                        "--out", str(tmp_path / "w"), "-q")
    assert weighted.returncode == 0 and "warning" not in weighted.stderr, weighted.stderr
    assert "warnings" not in json.loads((tmp_path / "w" / "summary.json").read_text())


def test_benchmark_row_notes_a_file_whose_median_record_is_risky(tmp_path, capsys):
    # 300 records over 600 cells with weights 1.5: most records are sample uniques of risk
    # about 0.8, median + 2 MAD lies above them all and the benchmark rule flags nobody
    rng = np.random.default_rng(1)
    path = tmp_path / "risky.csv"
    pd.DataFrame({"a": rng.integers(0, 30, 300), "b": rng.integers(0, 20, 300),
                  "w": 1.5}).to_csv(path, index=False)
    args = ["assess", str(path), "--keys", "a,b", "--weight", "w", "--model", "closed-form"]
    proc = run_in_process(capsys, *args, "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    risk = pd.read_csv(tmp_path / "r" / "records.csv")["risk"]
    assert s["median_risk"] == pytest.approx(risk.median(), rel=1e-12)
    assert s["median_risk"] > 0.1 and s["n_above_benchmark"] == 0
    note = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("note")]
    assert len(note) == 1 and f"median risk {risk.median():.2f} > 0.1" in note[0], proc.stdout
    assert "--threshold 0.1" in note[0]
    # with --threshold the count itself is shown, and the note is not
    proc = run_in_process(capsys, *args, "--threshold", "0.1", "--out", str(tmp_path / "t"))
    assert proc.returncode == 0 and "median risk" not in proc.stdout
    row = [ln for ln in proc.stdout.splitlines() if "records with risk > 0.1" in ln]
    assert len(row) == 1 and row[0].split()[-1] == f"{(risk > 0.1).sum():,}", proc.stdout


def test_closed_form_takes_weights_below_one_and_fractional_wildcard_counts(tmp_path, capsys):
    # both used to stop with an error about pk or fk although the options exist for them
    path = tmp_path / "low.csv"
    pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": [1, None, 1, 2, 1],
                  "w": [0.5, 0.5, 5.0, 5.0, 8.0]}).to_csv(path, index=False)
    proc = run_in_process(capsys, "assess", str(path), "--keys", "a", "--weight", "w",
                          "--allow-weights-below-one", "--model", "closed-form",
                          "--out", str(tmp_path / "low"), "-q")
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sdcbayes: warning: 1 key combination")
    s = json.loads((tmp_path / "low" / "summary.json").read_text())
    assert s["warnings"] == [lines[0].removeprefix("sdcbayes: warning: ")]
    proc = run_in_process(capsys, "assess", str(path), "--keys", "a,b", "--weight", "w",
                          "--allow-weights-below-one", "--alpha", "0.5", "--model",
                          "closed-form", "--out", str(tmp_path / "half"), "-q")
    assert proc.returncode == 0, proc.stderr
    rec = pd.read_csv(tmp_path / "half" / "records.csv")
    assert (rec["fk"] % 1 != 0).any() and rec["risk"].between(0, 1).all()


@pytest.mark.parametrize("model", ["latent-class", "poisson-gamma"])
def test_models_of_the_cell_space_refuse_wildcard_cells_in_one_line(model, tmp_path, capsys):
    # a wildcard cell overlaps the cells it matches: Poisson-gamma used to stop with
    # "K = [30.0] must be an integer at least the number of observed cells [36]"
    rng = np.random.default_rng(0)
    b = rng.integers(0, 5, 200).astype(float)
    b[:10] = np.nan
    path = tmp_path / "holes.csv"
    pd.DataFrame({"a": rng.integers(0, 6, 200), "b": b, "w": 20.0}).to_csv(path, index=False)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(path), "--keys", "a,b", "--weight", "w",
                          "--model", model, "--out", str(out))
    assert_one_line_error(proc, f"the {model} model needs each record in one cell",
                          "--missing category", "--model closed-form")
    assert "fitting" not in proc.stderr and not out.exists()


def test_strata_give_the_risk_per_stratum(small_csv, tmp_path, capsys):
    path, frame = small_csv
    out = tmp_path / "st"
    proc = run_main(capsys, "assess", str(path), "--keys", "age,sex", "--weight", "w",
                    "--strata", "region", "--model", "closed-form", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    rec = pd.read_csv(out / "records.csv")
    rows = summary["by_stratum"]
    assert [r["stratum"] for r in rows] == sorted(frame["region"].unique())
    for r in rows:  # brute force from records.csv and the input's strata
        here = (frame["region"] == r["stratum"]).to_numpy()
        assert r["n_records"] == here.sum()
        assert r["n_sample_uniques"] == (rec.loc[here, "fk"] == 1).sum()
        assert r["expected_reidentifications"] == pytest.approx(rec.loc[here, "risk"].sum())
    assert sum(r["expected_reidentifications"] for r in rows) == pytest.approx(
        summary["expected_reidentifications"])
    plain = run_main(capsys, "assess", str(path), "--keys", "age,sex", "--weight", "w",
                     "--model", "closed-form", "--out", str(tmp_path / "plain"), "-q")
    assert plain.returncode == 0
    assert "by_stratum" not in json.loads((tmp_path / "plain" / "summary.json").read_text())


@pytest.mark.parametrize(
    ("make_args", "fragments"),
    [
        (lambda p, t: ["assess", str(t / "nope.csv"), "--keys", "age"], ["nope.csv"]),
        (lambda p, t: ["assess", str(p)], ["--keys"]),
        (lambda p, t: ["assess", str(p), "--keys", "age,colour"], ["colour"]),
        (lambda p, t: ["assess", str(p), "--keys", "age", "--weight", "wt"], ["wt"]),
        (lambda p, t: ["assess", str(p), "--keys", "age", "--model", "magic"], ["magic"]),
        (lambda p, t: ["assess", str(p), "--keys", "age", "--alpha", "3"], ["--alpha"]),
        (lambda p, t: ["assess", str(p), "--keys", "age", "--household", "none"], ["none"]),
        (lambda p, t: ["assess", str(p), "--keys", "age", "--cores", "0"], ["--cores"]),
    ],
    ids=[
        "missing-file",
        "no-keys",
        "unknown-key",
        "unknown-weight",
        "unknown-model",
        "bad-alpha",
        "unknown-household",
        "bad-cores",
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(small_csv, tmp_path, make_args, fragments,
                                                         capfd):
    path, _ = small_csv
    out = tmp_path / "out"
    proc = run_main(capfd, *make_args(path, tmp_path), "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


def test_bad_weights_are_reported_before_any_output(small_csv, tmp_path, capfd):
    path, frame = small_csv
    bad = frame.copy()
    bad.loc[5, "w"] = -3.0
    bad_path = tmp_path / "bad.csv"
    bad.to_csv(bad_path, index=False)
    out = tmp_path / "out"
    proc = run_main(capfd, "assess", str(bad_path), "--keys", "age,sex", "--weight", "w",
                    "--out", str(out))
    assert_one_line_error(proc, "w")
    assert not out.exists()


def test_refuses_to_overwrite_a_foreign_folder(small_csv, tmp_path):
    path, _ = small_csv
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.tex").write_text("do not delete")
    proc = run_cli("assess", str(path), "--keys", "age", "--out", str(out))
    assert_one_line_error(proc, "precious")
    assert (out / "thesis.tex").read_text() == "do not delete"


def test_help_explains_options():
    proc = run_cli("assess", "--help")
    assert proc.returncode == 0
    for opt in ("--keys", "--weight", "--household", "--model", "--missing", "--out"):
        assert opt in proc.stdout


def test_posterior_model_writes_intervals_diagnostics_and_posterior(tmp_path, capsys):
    out = tmp_path / "pg"
    proc = run_main(
        capsys, "assess", "--model", "poisson-gamma", "--draws", "150", "--tune", "150",
        "--chains", "2", "--seed", "3", "--out", str(out), "-q",
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == "poisson-gamma"
    for key in ("tau1", "tau2", "expected_reidentifications"):
        lo, hi = summary[f"{key}_interval"]
        assert lo <= summary[key] <= hi
    assert {"max_r_hat", "min_ess_bulk", "divergences"} <= set(summary["diagnostics"])
    records = pd.read_csv(out / "records.csv")
    assert {"risk", "risk_lo", "risk_hi"} <= set(records.columns)
    assert (records["risk_lo"] <= records["risk"]).all()
    assert (records["risk"] <= records["risk_hi"]).all()
    from sdcbayes import _compat

    idata = _compat.open_netcdf(str(out / "posterior.nc"))
    assert idata.posterior.attrs["model"] == "poisson-gamma"


def test_default_ppc_bounds_the_replicated_records():
    from sdcbayes.risk.posterior_assess import PPC_PER_CHAIN, PPC_RECORD_BUDGET, default_ppc

    assert default_ppc(3908, 4) == PPC_PER_CHAIN == 50  # the demo
    assert default_ppc(10**6, 4) == 5 and 5 * 4 * 10**6 <= PPC_RECORD_BUDGET
    assert default_ppc(10**8, 4) == 1  # at least one replicate per chain


def test_posterior_options_validated_before_fitting(tmp_path, capfd):
    out = tmp_path / "x"
    proc = run_main(capfd, "assess", "--model", "poisson-gamma", "--draws", "0",
                    "--out", str(out))
    assert_one_line_error(proc, "--draws")
    proc = run_main(capfd, "assess", "--ppc", "-1", "--out", str(out))
    assert_one_line_error(proc, "--ppc", "0: no predictive check")
    assert not out.exists()


def test_latent_class_model_runs_from_the_cli(tmp_path, capsys):
    out = tmp_path / "lc"
    proc = run_main(
        capsys, "assess", "--model", "latent-class", "--draws", "40", "--tune", "40",
        "--chains", "2", "--seed", "2", "--out", str(out), "--json",
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["model"] == "latent-class"
    lo, hi = summary["tau1_interval"]
    assert lo <= summary["tau1"] <= hi
    assert (out / "posterior.nc").exists()
    # --ppc above --draws replicates at every draw (40 per chain)
    assert summary["provenance"]["settings"]["ppc"] == 40
    assert len(summary["predictive_check"]) == 5
    # the default profile prior learns the mass of the demo's country of birth (over 100 levels)
    from sdcbayes.models.latent_class import PHI_PRIOR_DEFAULT

    assert summary["provenance"]["priors"]["phi"] == PHI_PRIOR_DEFAULT


def test_chains_on_threads_change_nothing_and_the_posterior_file_is_optional(tmp_path, capsys):
    # --cores 1 runs the chains one after another, --cores 2 on two threads: the same draws
    runs = {}
    for cores in ("1", "2"):
        out = tmp_path / f"c{cores}"
        proc = run_main(capsys, "assess", "--draws", "30", "--tune", "20", "--chains", "2",
                        "--seed", "4", "--cores", cores, "--no-posterior",
                        "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert "written:" in proc.stdout and "posterior.nc" not in proc.stdout
        assert sorted(p.name for p in out.iterdir()) == ["records.csv", "report.html",
                                                          "summary.json"]
        runs[cores] = json.loads((out / "summary.json").read_text())
    for key in ("tau1", "tau2", "expected_reidentifications"):
        assert runs["1"][key] == runs["2"][key]
        assert runs["1"][f"{key}_interval"] == runs["2"][f"{key}_interval"]
    assert (tmp_path / "c1" / "records.csv").read_bytes() == (
        tmp_path / "c2" / "records.csv").read_bytes()
    # the run time's setting is not a setting of the result
    assert "cores" not in runs["2"]["provenance"]["settings"]


def test_profile_prior_inverse_restores_one_over_l_on_every_key(tmp_path, capfd):
    runs = {}
    for prior in ("learn", "inverse"):
        out = tmp_path / prior
        proc = run_main(
            capfd, "assess", "--draws", "30", "--tune", "30", "--chains", "1", "--seed", "2",
            "--overdispersion", "none", "--profile-prior", prior, "--out", str(out), "--json",
        )
        assert proc.returncode == 0, proc.stderr
        runs[prior] = json.loads(proc.stdout)
    assert runs["inverse"]["provenance"]["priors"]["phi"] == {"dist": "Dirichlet", "a": "inverse"}
    assert runs["learn"]["provenance"]["priors"]["phi"]["mass"] == "learn"
    # 1/L on the country's many levels lets small classes claim their members' rare
    # countries, so fewer sample uniques are population-unique than with the learnt mass
    assert runs["inverse"]["tau1"] < runs["learn"]["tau1"]
    proc = run_main(capfd, "assess", "--profile-prior", "uniform",
                    "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, "--profile-prior")


def test_fit_method_must_suit_the_model(tmp_path, capfd):
    proc = run_main(capfd, "assess", "--model", "latent-class", "--fit-method", "nuts",
                    "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, "gibbs")
    proc = run_main(capfd, "assess", "--model", "poisson-gamma", "--fit-method", "gibbs",
                    "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, "nuts")


def test_cluster_correction_needs_households_and_reports_its_factors(small_csv, tmp_path, capfd):
    path, _ = small_csv
    # without a household column (or with another model) there is nothing to correct:
    # one line, exit 2, before any work
    for extra in ([], ["--household", "hid", "--model", "closed-form"]):
        proc = run_main(capfd, "assess", str(path), "--keys", "age,sex,region",
                        "--weight", "w", "--cluster-correction", "cv", *extra,
                        "--out", str(tmp_path / "x"))
        assert_one_line_error(proc, "--household")
        assert not (tmp_path / "x").exists()
    out = tmp_path / "cc"
    proc = run_main(capfd, "assess", str(path), "--keys", "age,sex,region", "--weight", "w",
                    "--household", "hid", "--cluster-correction", "cv", "--draws", "20",
                    "--tune", "20", "--chains", "1", "--seed", "1", "--classes", "5",
                    "--overdispersion", "none", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "household mates' rate factor (sizes 2/3/4+)" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["cluster_correction"]["factor_by_size"]) == {"2", "3", "4"}
    assert summary["provenance"]["settings"]["cluster_correction"] == "cv"


def test_chain_start_bootstrap_is_stamped_and_needs_the_latent_class_model(tmp_path, capfd):
    proc = run_main(capfd, "assess", "--model", "closed-form", "--chain-start",
                    "bootstrap", "--out", str(tmp_path / "x"))
    assert_one_line_error(proc, "--chain-start", "latent-class")
    assert not (tmp_path / "x").exists()
    runs = {}
    for start in ("em", "bootstrap"):
        out = tmp_path / start
        proc = run_main(capfd, "assess", "--draws", "20", "--tune", "10", "--chains", "3",
                        "--seed", "4", "--overdispersion", "none", "--chain-start", start,
                        "--out", str(out), "--json")
        assert proc.returncode == 0, proc.stderr
        runs[start] = json.loads(proc.stdout)
    settings = runs["bootstrap"]["provenance"]["settings"]
    assert settings["init"] == "bootstrap" and runs["em"]["provenance"]["settings"]["init"] == "em"
    # the same seed, other starts: other draws
    assert runs["bootstrap"]["tau1"] != runs["em"]["tau1"]


def test_kappa_prior_option_reweights_the_cross_validation(tmp_path, capfd):
    # a bad prior, or a prior with nothing to reweight: one line, exit 2, nothing written
    for extra, word in ((["--kappa-prior", "log-normal:0"], "log-normal"),
                        (["--kappa-prior", "gamma:2"], "half-cauchy"),
                        (["--kappa-prior", "log-normal:0:1", "--overdispersion", "none"],
                         "--overdispersion cv"),
                        (["--kappa-prior", "log-uniform", "--model", "closed-form"],
                         "--model latent-class")):
        proc = run_main(capfd, "assess", *extra, "--out", str(tmp_path / "x"))
        assert_one_line_error(proc, word)
        assert not (tmp_path / "x").exists()
    # a tight prior far below the default's median pulls kappa there (strong clumping)
    runs = {}
    for name, extra in (("default", []), ("tight", ["--kappa-prior", "log-normal:-3:0.2"])):
        out = tmp_path / name
        proc = run_main(capfd, "assess", "--draws", "30", "--tune", "30", "--chains", "1",
                        "--seed", "3", *extra, "--out", str(out), "--json")
        assert proc.returncode == 0, proc.stderr
        runs[name] = json.loads(proc.stdout)
    od = runs["tight"]["overdispersion"]
    assert od["kappa_prior"] == "log-normal(-3, 0.2)"
    assert runs["default"]["overdispersion"]["kappa_prior"] == "half-cauchy(1)"
    assert od["kappa_median"] < 0.2 < (runs["default"]["overdispersion"]["kappa_median"] or 1e9)
    assert runs["tight"]["provenance"]["settings"]["kappa_prior"] == ["log-normal", [-3.0, 0.2]]
