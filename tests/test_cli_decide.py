"""`sdcbayes decide`, run as a user runs it.

A missing file, the ML route (its provenance stamps the command line, ``sys.argv``) and a
posterior fit's progress in a log go through the installed console script (a subprocess);
the other runs call its entry point, ``sdcbayes.cli.main``, in this process
(``clitools.run_main`` and ``run_in_process``: the same code without an interpreter
start-up and PyMC's import per run).

Reference numbers: seed 003 (Zaslavsky & Horton 1998), Table 2, through the CLI
with the seed's fixed hyperparameters alpha = 1, beta = 10; everything else is
checked against the Python API on the same input.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_cli, run_in_process, run_main
from scipy import stats


def assert_printed(value: float, printed: str, what: str = "") -> None:
    """``value`` rounds to the printed number (half a unit in its last digit)."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    tol = 0.5 * 10.0**-decimals + 1e-12
    assert abs(value - float(printed)) <= tol, f"{what}: {value!r} vs printed {printed}"


# --- seed 003, Table 2 (literals copied from tests/test_risk_decisions.py) -------------
# Two domain types (n, N) = (3, 8) with probability 0.25 and (5, 20) with 0.75;
# L1 = y exp(-Y/10), L0 = y, alpha = 1, beta = 10. Columns: n N y, then the cumulative
# sum_pub P R1 and the sum P L0 of the suppressed rest, in the printed publication order.
TABLE2 = """
3 8 0 0.000 0.409
5 20 0 0.000 0.409
5 20 5 0.0004 0.408
5 20 4 0.005 0.398
5 20 3 0.026 0.357
5 20 2 0.096 0.247
3 8 3 0.097 0.244
3 8 2 0.110 0.227
5 20 1 0.246 0.048
3 8 1 0.287 0.000
"""


@pytest.fixture(scope="module")
def table2_csv(tmp_path_factory):
    # Weights P(n, N) P(y | n, N) from scipy's beta-binomial (independent of sdcbayes).
    rows = [
        {"dom": f"{n}/{N}/{y}", "y": y, "n": n, "N": N, "w": p * stats.betabinom.pmf(y, n, 1, 10)}
        for n, N, p in ((3, 8, 0.25), (5, 20, 0.75))
        for y in range(n + 1)
    ]
    path = tmp_path_factory.mktemp("t2") / "table2.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_table2_order_and_cumulative_columns_through_cli(table2_csv, tmp_path, capsys):
    out = tmp_path / "t2"
    proc = run_main(
        capsys, "decide", str(table2_csv), "--y", "y", "--n", "n", "--N", "N", "--domain", "dom",
        "--weight", "w", "--alpha", "1", "--beta", "10", "--out", str(out), "-q",
    )
    assert proc.returncode == 0, proc.stderr
    fr = pd.read_csv(out / "frontier.csv", keep_default_na=False, na_values=[""])
    printed = [line.split() for line in TABLE2.strip().splitlines()]
    assert len(fr) == len(printed) + 1  # row 0: nothing published
    assert fr["disclosure_share"].iloc[0] == 0 and fr["nonpublication_share"].iloc[0] == 1
    for j, row in enumerate(printed, start=1):
        assert fr["dom"].iloc[j] == "/".join(row[:3]), f"publication order at line {j}"
        assert_printed(fr["disclosure"].iloc[j], row[3], f"sum_pub P R1 at line {j}")
        assert_printed(fr["nonpublication"].iloc[j], row[4], f"sum P L0 at line {j}")
    # Section 4: "the cumulative sum 0.026 ... and 0.357" after the first five lines.
    assert_printed(fr["disclosure"].iloc[5], "0.026")
    assert_printed(fr["nonpublication"].iloc[5], "0.357")
    # Shares are the sums normalised to [0, 1].
    np.testing.assert_allclose(
        fr["disclosure_share"], fr["disclosure"] / fr["disclosure"].iloc[-1], rtol=1e-12
    )
    dec = pd.read_csv(out / "decisions.csv")
    assert list(dec.columns) == ["dom", "R1", "R0", "ratio", "publish", "order"]
    assert dec["dom"].tolist() == pd.read_csv(table2_csv)["dom"].tolist()  # input order
    # Table 1 (n = 3, N = 8): R1 = 0.846, 1.479, 1.939 for y = 1, 2, 3.
    for y, printed_r1 in ((1, "0.846"), (2, "1.479"), (3, "1.939")):
        assert_printed(dec.loc[dec["dom"] == f"3/8/{y}", "R1"].item(), printed_r1, f"R1({y})")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["hyperparameters"]["source"] == "fixed"
    assert summary["hyperparameters"]["alpha"] == {"mean": 1.0, "interval_90": None}
    assert summary["hyperparameters"]["beta"] == {"mean": 10.0, "interval_90": None}


@pytest.fixture(scope="module")
def domains(tmp_path_factory):
    rng = np.random.default_rng(11)
    m = 30
    n = rng.integers(4, 40, m)
    N = n * rng.integers(2, 12, m)
    y = rng.binomial(n, rng.beta(1.5, 10.0, m))
    frame = pd.DataFrame({"area": [f"A{i:02d}" for i in range(m)], "cnt": y, "ss": n, "pop": N})
    frame = frame.sample(frac=1.0, random_state=3).reset_index(drop=True)  # not sorted
    path = tmp_path_factory.mktemp("dom") / "domains.csv"
    frame.to_csv(path, index=False)
    return path, frame


ALTS = ("uniques-equal:S=1/y", "known-respondents:S=10/y", "uniques-equal:S=10/constant")


def test_ml_route_matches_python_api(domains, tmp_path):
    path, frame = domains
    out = tmp_path / "ml"
    args = ["decide", str(path), "--y", "cnt", "--n", "ss", "--N", "pop", "--domain", "area",
            "--hyperparameters", "ml", "--target-risk", "0.3", "--out", str(out), "--json"]
    for a in ALTS:
        args += ["--alternative", a]
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)

    from sdcbayes.risk.beta_binomial import fit_beta_binomial
    from sdcbayes.risk.decisions import decide

    expected = decide(
        frame["cnt"], frame["ss"], frame["pop"], fit_method="ml", alternatives=list(ALTS),
        target_risk=0.3, domain_names=frame["area"],
    )
    dec = pd.read_csv(out / "decisions.csv")
    assert list(dec.columns) == ["area", "R1", "R0", "ratio", "publish", "order"]
    assert dec["area"].tolist() == frame["area"].tolist()
    for col in ("R1", "R0"):
        np.testing.assert_allclose(dec[col], expected.table[col], rtol=1e-12)
    np.testing.assert_array_equal(dec["publish"], expected.table["publish"])
    fr = pd.read_csv(out / "frontier.csv")
    assert list(fr.columns[:5]) == [
        "step", "position", "area", "disclosure_share", "nonpublication_share"
    ]
    assert fr["disclosure_share"].between(0, 1).all()
    assert fr["nonpublication_share"].between(0, 1).all()
    np.testing.assert_allclose(
        fr["disclosure_share"], expected.frontier["disclosure_share"], rtol=1e-12, atol=1e-15
    )
    summary = json.loads((out / "summary.json").read_text())
    assert summary == printed
    fit = fit_beta_binomial(frame["cnt"], frame["ss"])
    assert summary["hyperparameters"]["source"] == "ml"
    assert summary["hyperparameters"]["alpha"]["mean"] == pytest.approx(fit.alpha, rel=1e-12)
    sat = summary["suppression_at_target"]
    assert sat["reference"] == pytest.approx(expected.suppression_at_target, rel=1e-12)
    assert sat["random_suppression"] == pytest.approx(0.7)
    assert sorted(sat["alternatives"]) == sorted(expected.summary()["suppression_at_target"]
                                                 ["alternatives"])
    # The reference ranking is the optimum: no alternative needs less suppression (seed 003,
    # Section 4: "the lowest that can be attained with any nondisclosure rule").
    assert all(v >= sat["reference"] - 1e-12 for v in sat["alternatives"].values())
    assert summary["provenance"]["command"].startswith("sdcbayes decide")
    html = (out / "report.html").read_text()
    # frontier plot: reference + 3 alternatives + random suppression
    assert html.count("<polyline") == 2 + len(ALTS)
    assert "Jensen" in html and "<script" not in html


def test_posterior_smoke(domains, tmp_path, capsys):
    path, frame = domains
    out = tmp_path / "post"
    proc = run_main(
        capsys, "decide", str(path), "--y", "cnt", "--n", "ss", "--N", "pop",
        "--draws", "20", "--tune", "20", "--chains", "1", "--max-draws", "8", "--seed", "5",
        "--out", str(out), "-q",
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    h = summary["hyperparameters"]
    assert h["source"] == "posterior draws"
    assert h["n_draws"] == 20 and h["n_draws_used"] == 8
    lo, hi = h["alpha"]["interval_90"]
    assert 0 < lo <= h["alpha"]["mean"] <= hi
    assert {"max_r_hat", "min_ess_bulk", "divergences"} <= set(summary["diagnostics"])
    assert summary["settings"]["max_draws"] == 8
    dec = pd.read_csv(out / "decisions.csv")
    # no --domain: the domains numbered by row from 0 (audit Q, finding 14)
    assert list(dec.columns) == ["domain", "R1", "R0", "ratio", "publish", "order"]
    assert dec["domain"].tolist() == list(range(len(frame)))
    assert len(dec) == len(frame)
    np.testing.assert_array_equal(dec["R0"], frame["cnt"])  # L0 = y


def test_unseeded_posterior_stamps_a_seed_that_repeats_it(domains, tmp_path, capsys):
    path, _ = domains
    common = ["decide", str(path), "--y", "cnt", "--n", "ss", "--N", "pop", "--draws", "10",
              "--tune", "10", "--chains", "1", "-q"]
    first = run_main(capsys, *common, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr
    s1 = json.loads((tmp_path / "a" / "summary.json").read_text())
    seed = s1["settings"]["seed"]
    assert isinstance(seed, int)
    again = run_main(capsys, *common, "--seed", str(seed), "--out", str(tmp_path / "b"))
    assert again.returncode == 0, again.stderr
    s2 = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s2["settings"]["seed"] == seed
    assert s2["hyperparameters"] == s1["hyperparameters"]


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["--y", "nope"], ["nope"]),
        (["--disclosure-loss", "uniques-eqaul:S=10"], ["uniques-eqaul", "uniques-equal:S=..."]),
        (["--suppression-loss", "rows"], ["rows", "constant"]),
        (["--alternative", "uniques-equal:S=1"], ["DISCLOSURE/SUPPRESSION"]),
        (["--alternative", "bogus/y"], ["bogus"]),
        (["--target-risk", "0"], ["--target-risk"]),
        (["--target-risk", "1.5"], ["--target-risk"]),
        (["--alpha", "1"], ["--beta"]),
        (["--c", "-1"], ["--c"]),
    ],
    ids=["missing-column", "bad-disclosure-loss", "bad-suppression-loss", "bad-alternative",
         "unknown-alternative-loss", "target-0", "target-1.5", "alpha-without-beta", "bad-c"],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    domains, tmp_path, capsys, extra, fragments
):
    # Default (posterior) route: the error must come before any fitting (PyMC would log).
    path, _ = domains
    # A later option overrides an earlier one (click), so `extra` can replace a column.
    args = ["decide", str(path), "--y", "cnt", "--n", "ss", "--N", "pop", *extra]
    out = tmp_path / "out"
    proc = run_in_process(capsys, *args, "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


@pytest.mark.parametrize(
    ("edit", "fragments"),
    [
        (lambda f: f.assign(cnt=f["ss"] + 1), ["y (cnt) > n (ss)"]),
        (lambda f: f.assign(pop=f["ss"] - 1), ["n (ss) > N (pop)"]),
        (lambda f: f.assign(cnt=f["cnt"] + 0.5), ["whole numbers"]),
        (lambda f: f.assign(area="same"), ["repeats"]),
    ],
    ids=["y-above-n", "n-above-N", "fractional-count", "duplicate-domain"],
)
def test_bad_counts_are_rejected(domains, tmp_path, capsys, edit, fragments):
    _, frame = domains
    bad = tmp_path / "bad.csv"
    edit(frame.copy()).to_csv(bad, index=False)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "decide", str(bad), "--y", "cnt", "--n", "ss", "--N", "pop",
                          "--domain", "area", "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()


def test_missing_file_through_the_console_script(tmp_path):
    out = tmp_path / "out"
    proc = run_cli("decide", str(tmp_path / "nope.csv"), "--y", "a", "--n", "b", "--N", "c",
                   "--out", str(out))
    assert_one_line_error(proc, "nope.csv")
    assert not out.exists()


def test_help_explains_options(capsys):
    proc = run_in_process(capsys, "decide", "--help")
    assert proc.returncode == 0
    for opt in ("--y", "--n", "--N", "--disclosure-loss", "--suppression-loss", "--alternative",
                "--target-risk", "--hyperparameters", "--max-draws", "--alpha", "--out"):
        assert opt in proc.stdout


def test_help_says_what_grows_with_the_number_of_domains(capsys):
    # audit AA4 finding 1: "expect tens of seconds, mostly model compilation" held for
    # small tables only; the fit runs on the distinct (y, n) pairs, the risk step on the
    # domains times --max-draws
    proc = run_in_process(capsys, "decide", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "mostly model compilation" not in text
    assert "distinct (y, n) pairs" in text
    assert "linearly with the number of distinct (y, n, N) rows times --max-draws" in text


def test_help_documents_every_disclosure_loss_form():
    from sdcbayes.cli import cli
    from sdcbayes.risk.losses import LOSS_NAMES

    opt = next(p for p in cli.commands["decide"].params if "--disclosure-loss" in p.opts)
    nonpublication = {"constant", "y", "Y", "n", "N"}
    for form in LOSS_NAMES:  # e.g. "uniques-proportions:pi=..."
        name, _, params = form.partition(":")
        if name in nonpublication:
            continue
        assert f"{name}:" in opt.help, name
        for p in params.split(","):
            assert f"{p.removesuffix('...')}" in opt.help, (name, p)
    assert "uniques-proportions:pi=0.5/0.3/0.2" in opt.help


def _binomial_domains(path, seed):
    """20 domains whose class proportion is one p = 0.3: no spread beyond sampling."""
    rng = np.random.default_rng(seed)
    n = rng.integers(5, 60, 20)
    pd.DataFrame({"area": [f"a{i}" for i in range(20)], "y": rng.binomial(n, 0.3), "n": n,
                  "N": 10 * n}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("seed", [1, 4], ids=["optimiser-at-its-cap", "stopped-on-flat"])
def test_ml_on_the_boundary_warns_and_names_the_posterior_route(tmp_path, capsys, seed):
    # seed 1: alpha + beta reach the fit's cap (1e8); seed 4: the search stops short of
    # it (alpha 5e5), on a likelihood no higher than the binomial's. Where it stops on
    # that flat likelihood is the optimiser's business (it moved from 6.8e6 when the
    # gradient became exact): what matters is an intra-domain correlation ~0
    path = _binomial_domains(tmp_path / "flat.csv", seed)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "decide", str(path), "--y", "y", "--n", "n", "--N", "N",
                          "--domain", "area", "--hyperparameters", "ml", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sdcbayes: warning: "), proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["hyperparameters"]["alpha"]["mean"] > 1e5  # rho = 1/(alpha + beta + 1) < 1e-5
    assert "overdispersion estimated at zero" in lines[0]
    assert "--hyperparameters posterior" in lines[0]  # the fix, as an option of decide
    assert f"{s['hyperparameters']['alpha']['mean']:.4g}" in lines[0]
    assert s["warnings"] == [lines[0].removeprefix("sdcbayes: warning: ")]
    from sdcbayes.cli import cli

    choices = next(p for p in cli.commands["decide"].params if "--hyperparameters" in p.opts)
    assert "posterior" in choices.type.choices
    # --json and --quiet: stdout holds the summary or nothing; the warning still reaches
    # stderr, as assess's warnings do
    proc = run_in_process(capsys, "decide", str(path), "--y", "y", "--n", "n", "--N", "N",
                          "--hyperparameters", "ml", "--out", str(tmp_path / "j"), "--json")
    assert proc.returncode == 0 and proc.stderr.strip() == lines[0]
    assert json.loads(proc.stdout)["warnings"] == s["warnings"]
    proc = run_in_process(capsys, "decide", str(path), "--y", "y", "--n", "n", "--N", "N",
                          "--hyperparameters", "ml", "--out", str(tmp_path / "q"), "-q")
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr.strip() == lines[0]


def test_ml_with_spread_between_domains_does_not_warn(domains, tmp_path, capsys):
    path, _ = domains
    out = tmp_path / "ok"
    proc = run_in_process(capsys, "decide", str(path), "--y", "cnt", "--n", "ss", "--N", "pop",
                          "--hyperparameters", "ml", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    assert json.loads((out / "summary.json").read_text())["warnings"] == []


def test_posterior_progress_leaves_no_table_in_a_log(domains, tmp_path):
    # stderr is a pipe (a log): PyMC's live table ("Progre… Diverg…") would stay in it
    path, _ = domains
    proc = run_cli("decide", str(path), "--y", "cnt", "--n", "ss", "--N", "pop",
                   "--draws", "10", "--tune", "10", "--chains", "1", "--max-draws", "5",
                   "--seed", "5", "--out", str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    assert "Diverg" not in proc.stderr and "━" not in proc.stderr, proc.stderr
