"""The CLI speaks in options, never in Python: every wording rule is live, no error leaks.

The library names the fix of a problem in Python spelling (``pass
allow_weights_below_one=True``, ``more than max_levels=1000``, ``missing='drop'``,
``tune=2000``); ``sdcbayes.cli.cli_wording`` rewrites those into command-line options
with the regex table ``_CLI_WORDING``. When a library message is reworded, its rule
stops matching without a sound. These tests make that loud:

* ``test_wording_rule_is_live``: for each case, the CLI is run in-process on input
  that makes the *real* library raise (or warn); every message handed to
  ``cli_wording`` is recorded, and the case's rules must match the raw library
  message, the rewritten option must appear in the one stderr line, and every
  ``--option`` the line names must exist on the command that was run (so a fix is
  never an option the command lacks).
* ``test_every_rule_has_a_live_case``: the rules proven by the cases are exactly the
  table's rules, so a new rule needs a case and a dead one must be removed.
* ``test_no_python_spelling_in_cli_errors``: one-line errors of representative failure
  modes of every command carry no Python spelling (``name=True``, ``snake_case=``,
  ``name='text'``, a library keyword followed by ``=``, ``pandas.``/``DataFrame``).
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import run_in_process

import sdcbayes.cli as cli_module


# --------------------------------------------------------------------------- helpers
def _library_keywords() -> set[str]:
    """Keyword names of the library functions the commands call (cheap modules only)."""
    from sdcbayes import protection as P
    from sdcbayes.microdata import Microdata, read_microdata
    from sdcbayes.risk.assess import assess_closed_form
    from sdcbayes.risk.decisions import decide
    from sdcbayes.risk.suda import suda

    funcs = [Microdata.__init__, read_microdata, assess_closed_form, decide, suda,
             P.local_suppression, P.invariant_pram, P.nayak_zhang_pram, P.mdav, P.add_noise,
             P.merge_levels, P.band, P.top_code]
    names = {p for f in funcs for p in inspect.signature(f).parameters}
    # fit()/assess_posterior()/check_diagnostics() keywords (their modules import PyMC)
    names |= {"draws", "tune", "chains", "target_accept", "random_seed", "method", "structure",
              "strict", "n_classes", "structural_zeros", "K"}
    return {n for n in names if len(n) > 1 and n not in ("self", "frame", "kwargs")}


PYTHON_SPELLING = re.compile(
    r"=(True|False|None)\b"            # flag=True, keys=None
    r"|\b[a-z]+_[a-z0-9_]*="           # snake_case keyword: options use hyphens
    r"|\b[a-z_]+='"                    # missing='drop'
    r"|\bpandas\.|\bDataFrame\b|\bMicrodata\b"
    r"|\b(" + "|".join(sorted(_library_keywords(), key=len, reverse=True)) + r")="
)


def assert_speaks_cli(proc, command: str) -> str:
    """One ``sdcbayes: error:`` line (exit 2), no Python spelling, only existing options."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("sdcbayes: error:"), line
    assert_no_python(line, command)
    return line


def assert_no_python(line: str, command: str) -> None:
    hit = PYTHON_SPELLING.search(line)
    assert hit is None, f"Python spelling {hit.group(0)!r} in: {line}"
    # "--opt" belongs to the command run; "sdcbayes protect --recipe" to protect
    for other, opt in re.findall(r"(?:sdcbayes (\w+) )?(--[a-z][a-z0-9-]*)", line):
        cmd = cli_module.cli.commands[other or command]
        known = {o for p in cmd.params for o in p.opts} | {"--help"}
        # click naming the user's typo (its wording up to 8.2.0, and after)
        if f"No such option '{opt}'" in line or f"No such option: {opt} " in line:
            continue
        assert opt in known, f"{opt} is no option of `sdcbayes {other or command}`: {line}"


@pytest.fixture
def recorded(monkeypatch):
    """The raw library messages ``cli_wording`` receives during a run."""
    seen: list[str] = []
    original = cli_module.cli_wording

    def recording(message: str, command: str | None = None) -> str:
        seen.append(message)
        return original(message, command)

    # main() and _fit_posterior look the name up in sdcbayes.cli; decide and compare
    # import it from there at call time
    monkeypatch.setattr(cli_module, "cli_wording", recording)
    return seen


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("wording")
    rng = np.random.default_rng(11)
    n = 1500
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 8, n).astype(float),
            "sex": rng.choice(["m", "f"], n),
            "region": rng.integers(1, 5, n).astype(float),
            "w": rng.uniform(20, 80, n),
            "hid": np.repeat(np.arange(n // 3), 3).astype(float),
            "income": rng.normal(30_000, 10_000, n).round(2),  # 1500 levels: continuous
        }
    )
    edits = {
        "good": {},
        "below_one": {("w", 9): 0.5},
        "no_hid": {("hid", 11): np.nan},
        "no_region": {("region", 7): np.nan},
        "one_missing_age": {("age", 5): np.nan},
    }
    paths = {}
    for name, cells in edits.items():
        f = frame.copy()
        for (col, row), v in cells.items():
            f.loc[row, col] = v
        paths[name] = d / f"{name}.csv"
        f.to_csv(paths[name], index=False)
    paths["all_missing_sex"] = d / "all_missing_sex.csv"
    frame.assign(sex=np.nan).to_csv(paths["all_missing_sex"], index=False)
    paths["xlsx"] = d / "survey.xlsx"
    paths["xlsx"].write_bytes(b"PK not really")
    domains = pd.DataFrame({"area": list("abcdef"), "cnt": [1, 0, 3, 2, 5, 1],
                            "ss": [10, 8, 20, 15, 30, 9], "pop": [100, 90, 300, 120, 500, 80]})
    paths["domains"] = d / "domains.csv"
    domains.to_csv(paths["domains"], index=False)
    return paths


# --------------------------------------------------------------------------- (a) live rules
W = dict(cli_module._CLI_WORDING)


def rule(fragment: str) -> str:
    """The one pattern of the table that contains ``fragment``."""
    hits = [p for p in W if fragment in p]
    assert len(hits) == 1, (fragment, hits)
    return hits[0]


BELOW_ONE = rule("allow_weights_below_one")
MAX_LEVELS = rule("max_levels=")
RAISE_LEVELS = rule("raise max_levels")
CUT = rule("pandas\\.cut")
LEAVE = rule("household|strata")
USE_MISSING = rule("use missing=")
MISSING = rule(r"\bmissing='(")
EITHER = rule("give either weight=")
FRACTION = rule("must be\\b")
TO_NUMERIC = rule("to_numeric")
TUNE = rule("tune=")
DRAWS = rule("increase draws")
TARGET = rule("target_accept")
STRUCTURE = rule("structure=")
CLASSES = rule("n_classes=")
PANDAS = rule("read it with pandas")
KEY_ROLE = rule("remove it from keys")
NEGBIN_WEIGHT = rule("pass weight=<column>")
POPULATION = rule("give the microdata a weight")
NO_WEIGHTS = rule("no weight= or sampling_fraction=")
CENSUS = rule("sampling_fraction=1 says so")

#: id -> (command, args (files, out) -> argv tail, rules proven, fragments of the line)
CASES = {
    "weights-below-one-assess": (
        "assess", lambda f: [f["below_one"], "--keys", "age,sex", "--weight", "w"],
        [BELOW_ONE], ["'w'", "below 1", "pass --allow-weights-below-one"]),
    "weights-below-one-protect": (
        "protect", lambda f: [f["below_one"], "--keys", "age,sex", "--weight", "w",
                              "--suppress-k", "2"],
        [BELOW_ONE], ["pass --allow-weights-below-one"]),
    "weights-below-one-compare": (
        "compare", lambda f: [f["below_one"], "--keys", "age,sex", "--weight", "w",
                              "--models", "c=closed-form"],
        [BELOW_ONE], ["pass --allow-weights-below-one"]),
    "continuous-key-assess": (
        "assess", lambda f: [f["good"], "--keys", "age,income"],
        [MAX_LEVELS, RAISE_LEVELS, CUT],
        ["'income'", "1500 distinct values", "more than --max-levels 1000", "raise --max-levels",
         '"band" step of sdcbayes protect --recipe']),
    "continuous-key-protect": (
        "protect", lambda f: [f["good"], "--keys", "age,income", "--suppress-k", "2"],
        [MAX_LEVELS, RAISE_LEVELS, CUT], ["more than --max-levels 1000", "raise --max-levels"]),
    "continuous-key-compare": (
        "compare", lambda f: [f["good"], "--keys", "age,income", "--models", "c=closed-form"],
        [MAX_LEVELS, RAISE_LEVELS, CUT], ["more than --max-levels 1000", "raise --max-levels"]),
    "negative-max-levels": (
        "assess", lambda f: [f["good"], "--keys", "age", "--max-levels", "-1"],
        [MAX_LEVELS], ["--max-levels -1 must be a positive integer"]),
    "household-missing-assess": (
        "assess", lambda f: [f["no_hid"], "--keys", "age", "--household", "hid"],
        [LEAVE], ["'hid'", "record 12 (line 13 of the file)", "leave out --household"]),
    "household-missing-compare": (
        "compare", lambda f: [f["no_hid"], "--keys", "age", "--household", "hid",
                              "--models", "c=closed-form"],
        [LEAVE], ["leave out --household"]),
    "strata-missing": (
        "assess", lambda f: [f["no_region"], "--keys", "age", "--strata", "region"],
        [LEAVE], ["'region'", "record 8 (line 9 of the file)", "leave out --strata"]),
    "drop-removes-every-record": (
        "assess", lambda f: [f["all_missing_sex"], "--keys", "age,sex", "--missing", "drop"],
        [USE_MISSING, MISSING],
        ["--missing drop removes them", "use --missing wildcard or --missing category"]),
    "latent-class-needs-complete-keys": (
        # checked by assess before the fit is announced, with microdata's message
        "assess", lambda f: [f["one_missing_age"], "--keys", "age,sex", "--sampling-fraction",
                             "0.1"],
        [MISSING], ["use --missing category", "--missing drop", "--model closed-form"]),
    "weight-and-sampling-fraction": (
        "assess", lambda f: [f["good"], "--keys", "age", "--weight", "w",
                             "--sampling-fraction", "0.05", "--model", "closed-form"],
        [EITHER], ["give either --weight or --sampling-fraction, not both",
                   "(--sampling-fraction sets every weight"]),
    "sampling-fraction-above-one": (
        "assess", lambda f: [f["good"], "--keys", "age", "--sampling-fraction", "1.5",
                             "--model", "closed-form"],
        [FRACTION], ["--sampling-fraction 1.5 must be in (0, 1]"]),
    "non-numeric-weight": (
        "assess", lambda f: [f["good"], "--keys", "age", "--weight", "sex",
                             "--model", "closed-form"],
        [TO_NUMERIC], ["weight column 'sex' is not numeric",
                       "(first at record 1 (line 2 of the file): ",
                       "drop those records in the file"]),
    "unknown-file-type": (
        "assess", lambda f: [f["xlsx"], "--keys", "age"],
        [PANDAS], ["'.xlsx'", "save the data as one of"]),
    "key-is-also-the-weight": (
        "assess", lambda f: [f["good"], "--keys", "age,w", "--weight", "w",
                             "--model", "closed-form"],
        [KEY_ROLE], ["remove it from --keys or from --weight"]),
    "negbin-needs-weights-compare": (
        "compare", lambda f: [f["good"], "--keys", "age,sex", "--models", "c=negbin"],
        [NEGBIN_WEIGHT], ["needs sampling weights", "pass --weight COLUMN"]),
    "latent-class-needs-population-compare": (
        "compare", lambda f: [f["good"], "--keys", "age,sex", "--models", "c=latent-class"],
        [POPULATION], ["needs the population size", "give --weight COLUMN or --sampling-fraction"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_wording_rule_is_live(case, files, recorded, tmp_path, capsys):
    command, make, rules, fragments = CASES[case]
    out = tmp_path / "out"
    argv = [command, *map(str, make(files)), "--out", str(out)]
    line = assert_speaks_cli(run_in_process(capsys, *argv), command)
    raw = " ".join(recorded)
    for rule in rules:
        assert re.search(rule, raw), f"rule {rule!r} no longer matches the library: {raw}"
    for frag in fragments:
        assert frag in line, (frag, line)
    assert not out.exists()


def test_diagnostic_rules_are_live_in_assess_and_decide(files, recorded, tmp_path, capsys,
                                                        monkeypatch):
    """R-hat, ESS and divergence messages of a real (tiny) NUTS fit, worded as options.

    4 draws x 2 chains leave R-hat and ESS bad on their own; a run without divergences
    is the usual case, so the diagnostics computed from the real posterior get 3
    divergences added: the message itself is still check_diagnostics' own.
    """
    import sdcbayes.inference.fitting as fitting

    real = fitting.compute_diagnostics

    def with_divergences(idata, *a, **k):
        d = real(idata, *a, **k)
        d["max_r_hat"] = max(d["max_r_hat"], 1.5)  # ties the R-hat message to no seed luck
        return d | {"divergences": 3}

    monkeypatch.setattr(fitting, "compute_diagnostics", with_divergences)
    tiny = ["--draws", "4", "--tune", "4", "--chains", "2", "--seed", "1"]
    proc = run_in_process(capsys, "assess", "--model", "poisson-gamma", *tiny, "--strict",
                          "--out", str(tmp_path / "a"), "-q")
    line = assert_speaks_cli(proc, "assess")
    raw = " ".join(recorded)
    for rule in (TUNE, DRAWS, TARGET, STRUCTURE):
        assert re.search(rule, raw), f"rule {rule!r} no longer matches the library: {raw}"
    for frag in ("--tune 2000", "increase --draws (and --tune)", "raise --target-accept"):
        assert frag in line, (frag, line)
    assert "structure" not in line

    # decide prints the same problems as warnings: its own --tune/--draws/--target-accept.
    # No progress bar: rich may hold a stream that an earlier test's capsys has closed.
    real_fit = fitting.fit
    monkeypatch.setattr(fitting, "fit",
                        lambda *a, **k: real_fit(*a, **(k | {"progressbar": False})))
    recorded.clear()
    proc = run_in_process(capsys, "decide", str(files["domains"]), "--y", "cnt", "--n", "ss",
                          "--N", "pop", *tiny, "--max-draws", "4", "--out", str(tmp_path / "d"))
    assert proc.returncode == 0, proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("sdcbayes: warning:")]
    assert any("raise --target-accept" in w for w in warnings), proc.stderr
    for w in warnings:
        assert_no_python(w, "decide")
    assert re.search(TARGET, " ".join(recorded))
    _assert_outputs_speak_cli(tmp_path / "d", "raise --target-accept", "decide")


def test_truncation_rule_is_live(recorded, tmp_path, capsys):
    """Two latent classes on the demo: both occupied in every draw, the warning names --classes."""
    proc = run_in_process(capsys, "assess", "--classes", "2", "--overdispersion", "none",
                          "--draws", "20", "--tune", "10", "--chains", "1", "--seed", "1",
                          "--out", str(tmp_path / "a"), "-q")
    assert proc.returncode == 0, proc.stderr
    raw = " ".join(recorded)
    assert re.search(CLASSES, raw), f"rule {CLASSES!r} no longer matches the library: {raw}"
    lines = [ln for ln in proc.stderr.splitlines() if "truncation binds" in ln]
    assert len(lines) == 1 and lines[0].startswith("sdcbayes: warning:"), proc.stderr
    assert "refit with more classes (--classes 4)" in lines[0], lines[0]
    assert_no_python(lines[0], "assess")
    _assert_outputs_speak_cli(tmp_path / "a", "(--classes 4)", "assess")


def test_truncation_rule_of_compare_names_its_models_item(recorded, tmp_path, capsys):
    """compare has no --classes: the fix is the classes= item of the model's --models entry."""
    proc = run_in_process(capsys, "compare", "--models",
                          "lc2=latent-class:classes=2,overdispersion=none",
                          "--draws", "20", "--tune", "10", "--chains", "1", "--seed", "1",
                          "--out", str(tmp_path / "c"), "-q")
    # -q: nothing on stdout, the warning still on stderr (as assess does)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert re.search(CLASSES, " ".join(recorded))
    lines = [ln for ln in proc.stderr.splitlines() if "truncation binds" in ln]
    assert len(lines) == 1 and lines[0].startswith("sdcbayes: warning: lc2"), proc.stderr
    assert "(classes=4 in the model's --models item)" in lines[0], lines[0]
    assert "--classes" not in lines[0]
    assert_no_python(lines[0], "compare")
    _assert_outputs_speak_cli(tmp_path / "c", "(classes=4 in the model's --models item)",
                              "compare")


def _assert_outputs_speak_cli(out: Path, fragment: str, command: str) -> None:
    """summary.json's warnings and problems, and report.html, word fixes as the console does."""
    import html as html_module

    found: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("warnings", "problems") and isinstance(v, list):
                    found.extend(str(x) for x in v)
                elif k != "provenance":
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads((out / "summary.json").read_text()))
    assert any(fragment in m for m in found), found
    for m in found:
        assert_no_python(m, command)
    page = html_module.unescape((out / "report.html").read_text())
    assert fragment in page
    assert not re.search(CLASSES, page)


def test_closed_form_no_weights_rules_are_live(files, recorded, tmp_path, capsys):
    """The closed form's caveat of a file without weights, in assess's options, said once."""
    proc = run_in_process(capsys, "assess", str(files["good"]), "--keys", "age,sex",
                          "--model", "closed-form", "--out", str(tmp_path / "o"), "-q")
    assert proc.returncode == 0, proc.stderr
    raw = " ".join(recorded)
    assert re.search(NO_WEIGHTS, raw) and re.search(CENSUS, raw), raw
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("sdcbayes: warning:")]
    assert len(lines) == 1 and "Warning" not in proc.stderr, proc.stderr
    assert "no --weight or --sampling-fraction:" in lines[0]
    assert "--sampling-fraction 1 says so" in lines[0]
    assert_no_python(lines[0], "assess")


def test_every_rule_has_a_live_case():
    proven = {r for _, _, rules, _ in CASES.values() for r in rules}
    proven |= {NO_WEIGHTS, CENSUS}  # test_closed_form_no_weights_rules_are_live
    proven |= {TUNE, DRAWS, TARGET, STRUCTURE}  # test_diagnostic_rules_are_live_...
    proven.add(CLASSES)  # test_truncation_rule_is_live
    assert proven == set(W), set(W) ^ proven
    assert len(W) == len(cli_module._CLI_WORDING)  # no pattern listed twice


PROTECT_RULES = [p for p, _ in cli_module._CLI_WORDING_BY_COMMAND["protect"]]


@pytest.mark.parametrize("column, rule_fragment, fragments", [
    ("code", "more than max_levels", ["1200 levels, more than the 1000 PRAM accepts",
                                      '(--recode, or a "band" step of a --recipe)',
                                      'raise "max_levels" in a "pram" step of a --recipe']),
    ("income", "micro-aggregation", ["(--microaggregate) or noise (--noise)",
                                     '(a "band" step of a --recipe)']),
])
def test_protect_pram_rules_are_live(column, rule_fragment, fragments, recorded, tmp_path,
                                     capsys):
    # invariant_pram's refusals name its Python keywords and sibling functions; protect's
    # own rules turn them into its options and recipe steps
    rng = np.random.default_rng(3)
    data = tmp_path / "d.csv"
    pd.DataFrame({"age": rng.integers(0, 5, 1200), "code": np.arange(1200),
                  "income": rng.normal(0, 1, 1200).round(3)}).to_csv(data, index=False)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(data), "--keys", "age", "--pram", column,
                          "--out", str(out))
    line = assert_speaks_cli(proc, "protect")
    (pattern,) = [p for p in PROTECT_RULES if rule_fragment in p]
    assert re.search(pattern, " ".join(recorded)), "the rule no longer matches the library"
    for frag in fragments:
        assert frag in line, (frag, line)
    assert not out.exists()


def test_every_protect_rule_has_a_live_case():
    cases = ("more than max_levels", "micro-aggregation",
             # audit R: mdav's k and nayak_zhang_pram's group_size (tests/test_cli_audit_r.py)
             "lower k or add records", "group_size")
    assert sorted(PROTECT_RULES) == sorted(p for p in PROTECT_RULES for c in cases if c in p)


def test_wording_is_idempotent_and_leaves_cli_text_alone():
    # A message already in CLI words (e.g. from the commands themselves) is not touched.
    text = ("--keys 'x' is neither a column name nor a variable label; "
            "use --missing wildcard or --missing category; raise --max-levels")
    assert cli_module.cli_wording(text) == text
    once = cli_module.cli_wording("more than max_levels=1000; pass allow_weights_below_one=True")
    assert once == "more than --max-levels 1000; pass --allow-weights-below-one"
    assert cli_module.cli_wording(once) == once


# --------------------------------------------------------------------------- (b) the guard
def _recipe(tmp: Path, content) -> str:
    p = tmp / "recipe.json"
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(p)


#: Representative failure modes of every command: (command, argv tail (files, tmp)).
FAILURES = {
    # assess
    "assess-no-keys": ("assess", lambda f, t: [f["good"]]),
    "assess-unknown-key": ("assess", lambda f, t: [f["good"], "--keys", "agee"]),
    "assess-unknown-weight": ("assess", lambda f, t: [f["good"], "--keys", "age", "--weight",
                                                      "wt"]),
    "assess-bad-alpha": ("assess", lambda f, t: [f["good"], "--keys", "age", "--alpha", "2"]),
    "assess-bad-threshold": ("assess", lambda f, t: [f["good"], "--keys", "age",
                                                     "--threshold", "1"]),
    "assess-fit-method": ("assess", lambda f, t: [f["good"], "--keys", "age", "--model",
                                                  "negbin", "--fit-method", "gibbs"]),
    "assess-bad-draws": ("assess", lambda f, t: [f["good"], "--keys", "age", "--model",
                                                 "negbin", "--draws", "0"]),
    "assess-no-file": ("assess", lambda f, t: [t / "none.csv", "--keys", "age"]),
    "assess-bad-missing": ("assess", lambda f, t: [f["good"], "--keys", "age", "--missing",
                                                   "impute"]),
    "assess-unknown-option": ("assess", lambda f, t: [f["good"], "--keys", "age", "--kays",
                                                      "x"]),
    "assess-zero-max-levels": ("assess", lambda f, t: [f["good"], "--keys", "age",
                                                       "--max-levels", "0"]),
    # protect
    "protect-no-step": ("protect", lambda f, t: [f["good"], "--keys", "age"]),
    "protect-unknown-pram": ("protect", lambda f, t: [f["good"], "--keys", "age", "--pram",
                                                      "regoin"]),
    "protect-unknown-strata": ("protect", lambda f, t: [f["good"], "--keys", "age",
                                                        "--suppress-k", "2", "--strata", "x"]),
    "protect-strata-alone": ("protect", lambda f, t: [f["good"], "--keys", "age", "--noise",
                                                      "income", "--strata", "region"]),
    "protect-bad-importance": ("protect", lambda f, t: [f["good"], "--keys", "age",
                                                        "--suppress-k", "2", "--importance",
                                                        "age=x"]),
    "protect-unknown-level": ("protect", lambda f, t: [f["good"], "--keys", "age", "--recode",
                                                       "sex:z=y"]),
    "protect-recipe-unknown-step": ("protect", lambda f, t: [
        f["good"], "--keys", "age", "--recipe", _recipe(t, {"steps": [{"step": "shuffle"}]})]),
    "protect-recipe-bad-number": ("protect", lambda f, t: [
        f["good"], "--keys", "age", "--recipe",
        _recipe(t, {"steps": [{"step": "pram", "columns": ["sex"], "pd": 3}]})]),
    "protect-recipe-unknown-column": ("protect", lambda f, t: [
        f["good"], "--keys", "age", "--recipe",
        _recipe(t, {"steps": [{"step": "suppress", "k": 2, "importance": {"agee": 1}}]})]),
    "protect-recipe-bad-json": ("protect", lambda f, t: [
        f["good"], "--keys", "age", "--recipe", _recipe(t, "{no")]),
    "protect-recipe-internal-key": ("protect", lambda f, t: [
        f["good"], "--keys", "age", "--recipe",
        _recipe(t, {"steps": [{"step": "suppress", "k": 2, "_option": "--x"}]})]),
    # suda
    "suda-dup-keys": ("suda", lambda f, t: [f["good"], "--keys", "age,age"]),
    "suda-max-size": ("suda", lambda f, t: [f["good"], "--keys", "age,sex", "--max-size",
                                            "3"]),
    "suda-fraction": ("suda", lambda f, t: [f["good"], "--keys", "age", "--dis-fraction",
                                            "0"]),
    "suda-unknown-key": ("suda", lambda f, t: [f["good"], "--keys", "age,sexx"]),
    # decide
    "decide-unknown-column": ("decide", lambda f, t: [f["domains"], "--y", "cnt", "--n", "ss",
                                                      "--N", "popp"]),
    "decide-bad-loss": ("decide", lambda f, t: [f["domains"], "--y", "cnt", "--n", "ss", "--N",
                                                "pop", "--disclosure-loss", "unique:S=3"]),
    "decide-alpha-alone": ("decide", lambda f, t: [f["domains"], "--y", "cnt", "--n", "ss",
                                                   "--N", "pop", "--alpha", "1"]),
    "decide-counts": ("decide", lambda f, t: [f["domains"], "--y", "ss", "--n", "cnt", "--N",
                                              "pop"]),
    # compare
    "compare-bad-spec": ("compare", lambda f, t: ["--models", "x=poisson"]),
    "compare-unknown-prior": ("compare", lambda f, t: ["--models",
                                                       "x=poisson-gamma:gamma.sigma=2"]),
    "compare-target": ("compare", lambda f, t: ["--target-risk", "2"]),
    "compare-no-keys": ("compare", lambda f, t: [f["good"]]),
    "compare-bad-loss": ("compare", lambda f, t: ["--suppression-loss", "uniques-equal:S=2"]),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_no_python_spelling_in_cli_errors(case, files, tmp_path, capsys):
    command, make = FAILURES[case]
    out = tmp_path / "out"
    argv = [command, *map(str, make(files, tmp_path)), "--out", str(out)]
    assert_speaks_cli(run_in_process(capsys, *argv), command)
    assert not out.exists()


def test_guard_catches_python_spelling():
    # The guard itself can fail: library phrasings it must flag, CLI phrasings it must pass.
    for bad in ("pass allow_weights_below_one=True", "leave household=None",
                "use missing='wildcard'", "tune=2000", "more than max_levels=10",
                "pass the DataFrame to Microdata", "(e.g. pandas.cut)", "alpha=2 must be"):
        assert PYTHON_SPELLING.search(bad), bad
    for good in ("--recode age:20s+30s=20-39", "uniques-gamma:S=10,a=2", "threshold:Ymin=5",
                 "--importance age=3,sex=1", "pg-wide=poisson-gamma:alpha.sigma=5"):
        assert not PYTHON_SPELLING.search(good), good
