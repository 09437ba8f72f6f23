"""What a first-time user reads: citations and terminal labels (UX audit F1, F8).

F1: --help and report.html cite the sources by author and year (Templ et al. 2014,
Zaslavsky & Horton 1998, ...), not by the project's internal file labels ("seed 001"),
which a user cannot look up and which read like a random seed next to --seed.
F8: the terminal's jargon is explained where the user meets it (assess --help, protect
--help), the protect table's per-variable lines have a header, the latent-class blank
row says what its number is, and compare spells out ER and gives no rank to a fit
that has nothing to be ranked against.
"""

from __future__ import annotations

import ast
import re
import types
from pathlib import Path

import click
import numpy as np
import pandas as pd
from clitools import run_in_process

from sdcbayes.cli import cli

PACKAGE = Path(__file__).resolve().parents[1] / "sdcbayes"
#: the internal labels of the reference files: "seed 001", "Seed 003", "seed-003 loss"
SEED_LABEL = re.compile(r"\b[Ss]eeds?[\s`-]*0\d\d")


def _help_texts() -> dict[str, str]:
    """Every command's help and every option's help, by "command --option"."""
    texts = {"sdcbayes": cli.help or ""}
    for name, command in cli.commands.items():
        texts[name] = command.help or ""
        for param in command.params:
            if isinstance(param, click.Option):
                texts[f"{name} {param.opts[0]}"] = param.help or ""
    return texts


def test_help_cites_sources_by_author_not_by_internal_file_label():
    texts = _help_texts()
    cited = {k: v for k, v in texts.items() if SEED_LABEL.search(v)}
    assert not cited, cited
    # the sources by author and year where the options rest on them
    assert "Zaslavsky & Horton 1998" in texts["decide --disclosure-loss"]
    assert "Zaslavsky & Horton" in texts["compare --disclosure-loss"]
    assert "Templ et al. 2014" in texts["suda --score-method"]
    assert "Templ et al. 2014" in texts["protect --pram"]
    assert "Nayak & Zhang 2015" in texts["protect --nayak-zhang-xi"]


def _shown_strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module that are not docstrings (what it can show)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs]


def test_report_strings_cite_sources_by_author_not_by_internal_file_label():
    # docstrings may cite the seed files (developers' guide); report.html may not
    found = [(line, s[:80]) for line, s in _shown_strings(PACKAGE / "report.py")
             if SEED_LABEL.search(s)]
    assert not found, found


def test_report_lists_the_references_it_cites_and_only_those():
    from sdcbayes.report import REFERENCES, render

    page = render("t", [("a", "<p>MDAV (Templ et al. 2014, 4.2.1); the rule of Zaslavsky "
                              "&amp; Horton 1998, Figure 1.</p>")], None)
    refs = page.split("<h2>References</h2>")[1].split("</ul>")[0]
    assert refs.count("<li>") == 2
    assert "Templ, M., Meindl, B., Kowarik, A. and Chen, S. (2014)" in refs
    assert "IHSN Working Paper No. 007" in refs
    assert "Zaslavsky, A.M. and Horton, N.J. (1998)" in refs
    assert "Journal of Official Statistics</i> 14(4)" in refs
    for author in ("Mokken", "Polettini", "Nayak"):
        assert author not in refs, author
    # before the provenance, after the sections
    assert page.index("References") > page.index("Zaslavsky &amp; Horton 1998, Figure 1")
    # a page that cites nothing has no list
    assert "References" not in render("t", [("a", "<p>nothing cited</p>")], None)
    # every reference names its authors' first surname as the pattern does
    assert len(REFERENCES) == 5


def test_protect_report_cites_templ_and_polettini_with_their_references():
    from sdcbayes.report import protection_report

    s = {"keys": ["a", "b"], "weight": "w", "steps": [],
         "risk": {"before": {"n_missing_key_records": 0}, "after": {"n_missing_key_records": 0},
                  "k": 2},
         "information_loss": {"per_variable": {"a": {"share_changed": 0.0,
                                                     "share_suppressed": 0.1}}}}
    page = protection_report(s)
    body = page.split("<details>")[0]
    assert not SEED_LABEL.search(body)
    assert "Benedetti-Franconi; Polettini, eq. 1–3" in body
    refs = body.split("<h2>References</h2>")[1]
    assert "Polettini, S. A note on the individual risk of disclosure" in refs


# --------------------------------------------------------------------------- F8
def test_assess_help_explains_the_benchmark_rule_and_the_parameter_only_interval():
    text = " ".join((cli.commands["assess"].help or "").split())
    assert "median absolute deviation (MAD)" in text
    assert 'marked "parameter uncertainty only"' in text
    assert "randomness of the unknown population counts" in text


def test_protect_help_explains_il1_tie_fair_and_the_suppressions_row():
    texts = {k: " ".join(v.split()) for k, v in _help_texts().items()}
    assert "IL1" in texts["protect --noise"] and "standard deviation" in texts["protect --noise"]
    assert "'tie-fair'" in texts["protect --interval-k"]
    assert "picks at random among equally near" in texts["protect --interval-k"]
    assert "'as the suppression judges it'" in texts["protect --suppress-k"]


def _small_survey(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    n = 200
    frame = pd.DataFrame({"age": rng.choice(["0-29", "30-59", "60+"], n),
                          "sex": rng.choice(["f", "m"], n),
                          "region": rng.choice([f"r{i}" for i in range(8)], n),
                          "w": rng.uniform(5, 50, n).round(2)})
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    return path


def test_protect_terminal_heads_the_per_variable_lines(capsys, tmp_path):
    path = _small_survey(tmp_path)
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex,region",
                          "--weight", "w", "--suppress-k", "3", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    lines = [ln.strip() for ln in proc.stdout.splitlines()]
    sub = next(i for i, ln in enumerate(lines) if ln.startswith("as the suppression judges it"))
    # the header comes after the suppression's sub-row, and every variable's line follows it
    assert lines[sub + 1].startswith("information loss per variable"), lines
    assert [ln.split()[0] for ln in lines[sub + 2:sub + 5]] == ["age", "sex", "region"]
    assert all("changed" in ln for ln in lines[sub + 2:sub + 5])


def test_latent_class_blank_row_says_what_its_number_is(capsys):
    from sdcbayes.commands.protect import _latent_class_lines

    side = {"expected_reidentifications": 10.0,
            "expected_reidentifications_interval": [8.0, 12.0]}
    after = side | {"n_blanked_records": 806, "n_blanks": 810,
                    "expected_reidentifications_blanked_records": 2.42,
                    "expected_reidentifications_blanked_records_interval": [2.27, 2.65]}
    s = {"risk": {"before": side, "after": after,
                  "closed_form": {"before": {"expected_reidentifications": 11.0},
                                  "after": {"expected_reidentifications": 3.0}},
                  "fit": {"interval_level": 0.9, "method": "gibbs", "chains": 2, "draws": 10,
                          "tune": 10, "seed": 1}}}
    rows = dict(_latent_class_lines(s))
    assert rows["  records with a blank"] == (
        "806 (810 values), expected re-identifications among them 2.42 [2.27, 2.65] predictive")
    capsys.readouterr()


def _compare_table(models: list[str]) -> pd.DataFrame:
    n = len(models)
    return pd.DataFrame({
        "name": [f"m{i}" for i in range(n)], "model": models,
        "elpd_loo": [-4124.4 if m == "poisson-gamma" else np.nan for m in models],
        "loo_rank": [float(i) if m == "poisson-gamma" else np.nan
                     for i, m in enumerate(models)],
        "tau1": 8.8, "tau1_lo": 4.0, "tau1_hi": 14.0, "tau2": 43.3, "tau2_lo": 38.0,
        "tau2_hi": 49.0, "er": 83.6,
        "er_lo": 77.7, "er_hi": 90.5, "n_suppressed": 824})


def _compare_out(capsys, tmp_path, models: list[str]) -> str:
    from sdcbayes.commands.compare import _print_summary

    result = types.SimpleNamespace(table=_compare_table(models), pairs=["reidentifications/y"])
    s = {"sdcbayes_version": "x", "target_risk": 0.2, "data": "d", "n_changed_cells": 0,
         "n_cells": 10}
    _print_summary(result, s, tmp_path)
    return capsys.readouterr().out


def test_compare_terminal_spells_out_er_and_ranks_only_within_a_likelihood(capsys, tmp_path):
    out = _compare_out(capsys, tmp_path, ["latent-class", "poisson-gamma"])
    # spelt out before its first use in the table
    legend = out.index("ER: expected re-identifications")
    assert legend < out.index("ER 83.6")
    # the only Poisson-gamma fit: nothing to rank against
    assert "elpd -4124.4 (only model of its likelihood)" in out
    assert "rank" not in out
    # two fits of one likelihood: ranked, and the rank says what it is
    out = _compare_out(capsys, tmp_path, ["poisson-gamma", "poisson-gamma"])
    assert "(rank 0 of 2 poisson-gamma fits, 0 = best)" in out
    assert "(rank 1 of 2 poisson-gamma fits, 0 = best)" in out
