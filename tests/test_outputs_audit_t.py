"""Audit T's findings on the outputs of ``compare``, ``decide``, ``suda`` and ``protect``.

Finding 1: compare's changed cells show key codes as the input has them. 2: percentages
(targets, shares, rates) with enough digits (:func:`sdcbayes.report.percent`). 3: protect's
log.csv writes integer codes as integers. 4: compare's ``n_above_threshold`` in the report.
5: protect's information-loss counts are integers. 6: compare's settings and row types, its
interval note. 7: suda says which missing-value rule its counts follow. 8: protect's
k-anonymity wording. 9: cosmetics (step parameters, seeds, labels, decide's ml note). 10: the
README's field lists, ``decisions.csv``'s ``cell``, decide's publish rule at R1 = R0 = 0.
Extras: Nayak-Zhang PRAM leaves missing key values missing; a step that changes the weight
column is warned about.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from clitools import run_in_process

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

#: tiny.csv of the audit: 8 records, one missing B; every count checked by hand there.
TINY = "A,B,C,w\nx,1,p,10\nx,1,q,10\nx,2,p,10\ny,1,p,10\ny,1,p,10\ny,1,q,10\ny,2,q,10\nx,,p,10\n"


class _Tables(HTMLParser):
    """Tables of a page (list of rows of cell texts) and its paragraphs' text."""

    def __init__(self):
        super().__init__()
        self.tables, self.text, self._cell, self._in = [], [], None, 0

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self.tables:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        self.text.append(data)


def _page(path: Path) -> _Tables:
    p = _Tables()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def _table_with(page: _Tables, header_cell: str) -> list[list[str]]:
    return next(t for t in page.tables if t and header_cell in t[0])


def percent(share):
    from sdcbayes.report import percent as p

    return p(share)


def key_value(value):
    from sdcbayes.report import key_value as k

    return k(value)


def _run(capsys, *args):
    proc = run_in_process(capsys, *map(str, args))
    assert proc.returncode == 0, proc.stderr
    return proc


# --------------------------------------------------------------------------- data
def _na_frame(n: int = 300, seed: int = 3) -> pd.DataFrame:
    """Integer-coded keys; ``water`` has blanks (pandas reads it as float: 3.0)."""
    rng = np.random.default_rng(seed)
    water = rng.integers(1, 5, n).astype(float)
    water[rng.choice(n, 25, replace=False)] = np.nan
    return pd.DataFrame({
        "urb": rng.integers(1, 3, n),
        "water": water,
        "sex": rng.integers(1, 3, n),
        "age": rng.integers(1, 8, n),
        "w": rng.uniform(20, 60, n).round(1),
    })


def _write_int_csv(frame: pd.DataFrame, path: Path) -> Path:
    """Integer codes written as 3 (not 3.0), blanks as empty fields: as a user's file."""
    out = frame.copy()
    for c in ("water",):
        out[c] = out[c].astype("Int64")
    out.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """One compare run (closed form and a tiny latent-class fit, --threshold) for 1, 4, 6, 10."""
    from sdcbayes.cli import main

    tmp = tmp_path_factory.mktemp("cmp")
    data = _write_int_csv(_na_frame(), tmp / "na.csv")
    out = tmp / "out"
    rc = main(["compare", str(data), "--keys", "urb,water,sex,age", "--weight", "w",
               "--missing", "category", "--models",
               "closed=closed-form,lc=latent-class:classes=5",
               "--draws", "20", "--tune", "20", "--chains", "1", "--seed", "1",
               "--threshold", "0.1", "--out", str(out), "-q"])
    assert rc == 0
    return data, out, json.loads((out / "summary.json").read_text())


# --------------------------------------------------------------------------- finding 1
def test_key_value_shows_codes_as_the_input_has_them():
    assert str(key_value(3.0)) == "3" and str(key_value(np.float64(1.0))) == "1"
    assert str(key_value(float("nan"))) == "–" and str(key_value(None)) == "–"
    assert str(key_value("a<b")) == "a&lt;b" and str(key_value(2.5)) == "2.5"


def test_compare_changed_cells_show_integer_codes_and_missing_as_dash(compared):
    _, out, s = compared
    assert s["n_changed_cells"] > 0
    rows = _table_with(_page(out / "report.html"), "water")
    header, body = rows[0], rows[1:]
    water = [r[header.index("water")] for r in body]
    assert water, rows
    assert not any(v.endswith(".0") or v == "nan" for r in body for v in r), body
    assert set(water) <= {"1", "2", "3", "4", "–"}
    # the rows are decisions.csv's changed rows, in order, with its codes
    dec = pd.read_csv(out / "decisions.csv", dtype=str, keep_default_na=False)
    changed = dec[dec["changed"].str.lower() == "true"].head(len(body))
    assert [v or "–" for v in changed["water"]] == water


# --------------------------------------------------------------------------- finding 2
@pytest.mark.parametrize("share, text", [
    (0.004, "0.4%"), (0.125, "12.5%"), (0.00004, "0.004%"), (0.475, "47.5%"), (0, "0%"),
    (1, "100%"), (0.2, "20%"), (4.853e-4, "0.0485%"), (0.0266, "2.66%"), (None, "–"),
])
def test_percent_keeps_significant_digits(share, text):
    assert percent(share) == text


@pytest.mark.parametrize("target, text", [("0.004", "0.4%"), ("0.125", "12.5%")])
def test_decide_target_share_is_not_rounded_to_whole_percent(capsys, tmp_path, target, text):
    dom = tmp_path / "d.csv"
    rng = np.random.default_rng(0)
    n = rng.integers(20, 60, 30)
    pd.DataFrame({"y": rng.binomial(n, 0.1), "n": n, "N": n * 20}).to_csv(dom, index=False)
    proc = _run(capsys, "decide", dom, "--y", "y", "--n", "n", "--N", "N", "--target-risk",
                target, "--hyperparameters", "ml", "--out", tmp_path / "o")
    assert f"suppression needed for {text} risk" in proc.stdout
    page = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert f"down to {text} of its full-publication value" in page
    assert "down to 0% " not in page and "down to 12% " not in page


def test_compare_target_share_in_percent_with_digits(compared):
    _, out, s = compared
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f"disclosure loss is {percent(s['target_risk'])} of its" in page


def test_rates_show_in_percent_not_scientific_notation(capsys, tmp_path):
    data = tmp_path / "t.csv"
    data.write_text(TINY)
    _run(capsys, "protect", data, "--keys", "A,B,C", "--weight", "w", "--suppress-k", "2",
         "--out", tmp_path / "o")
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    rows = _table_with(_page(tmp_path / "o" / "report.html"), "original")
    rate = next(r for r in rows if r[0] == "expected re-identification rate")
    assert rate[1:] == [percent(s["risk"]["before"]["expected_reidentification_rate"]),
                        percent(s["risk"]["after"]["expected_reidentification_rate"])]
    assert all(v.endswith("%") and "e-" not in v for v in rate[1:])


def test_assess_report_rate_in_percent(capsys, tmp_path):
    data = tmp_path / "t.csv"
    data.write_text(TINY)
    _run(capsys, "assess", data, "--keys", "A,B,C", "--weight", "w", "--model", "closed-form",
         "--out", tmp_path / "o")
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    rows = _table_with(_page(tmp_path / "o" / "report.html"), "estimate")
    rate = next(r for r in rows if r[0] == "expected re-identification rate")
    assert rate[1] == percent(s["expected_reidentification_rate"])


# --------------------------------------------------------------------------- finding 3
def test_protect_log_writes_integer_codes_of_a_column_with_blanks(capsys, tmp_path):
    data = tmp_path / "t.csv"
    data.write_text(TINY)
    _run(capsys, "protect", data, "--keys", "A,B,C", "--weight", "w", "--suppress-k", "2",
         "--out", tmp_path / "o")
    log = (tmp_path / "o" / "log.csv").read_text().splitlines()
    assert "1,suppress,6,B,2" in log, log
    assert not any(line.endswith(".0") for line in log), log


def test_protect_log_integer_codes_from_spss(capsys, tmp_path):
    frame = _na_frame(200)
    path = tmp_path / "d.sav"
    pyreadstat.write_sav(frame, str(path))
    _run(capsys, "protect", path, "--keys", "urb,water,sex,age", "--weight", "w",
         "--suppress-k", "3", "--out", tmp_path / "o")
    log = pd.read_csv(tmp_path / "o" / "log.csv", dtype=str)
    sup = log[log["method"] == "suppress"]
    assert len(sup) and sup["original"].str.fullmatch(r"\d+").all(), sup


# --------------------------------------------------------------------------- finding 4
def test_compare_report_shows_records_above_the_threshold(compared):
    _, out, s = compared
    rows = _table_with(_page(out / "report.html"), "τ1")
    col = rows[0].index("records with risk above 0.1")
    by_name = {r[0]: r[col] for r in rows[1:]}
    closed = next(r for r in s["comparison"] if r["name"] == "closed")
    assert isinstance(closed["n_above_threshold"], int)
    assert by_name["closed"] == f"{closed['n_above_threshold']:,}"
    assert by_name["lc"] not in ("", "–")


# --------------------------------------------------------------------------- finding 5
def test_protect_information_loss_counts_are_integers(capsys, tmp_path):
    data = tmp_path / "t.csv"
    data.write_text(TINY)
    _run(capsys, "protect", data, "--keys", "A,B,C", "--weight", "w", "--suppress-k", "2",
         "--out", tmp_path / "o")
    text = (tmp_path / "o" / "summary.json").read_text()
    per = json.loads(text)["information_loss"]["per_variable"]
    for v in per.values():
        for k in ("n", "n_changed", "n_suppressed"):
            assert type(v[k]) is int, (k, v)
    rows = _table_with(_page(tmp_path / "o" / "report.html"), "values changed")
    assert [r[2] for r in rows[1:]] == ["0", "1", "2"]


# --------------------------------------------------------------------------- finding 6
def test_compare_settings_say_what_each_model_used(compared):
    _, out, s = compared
    for settings in (s["settings"], s["provenance"]["settings"]):
        assert "method" not in settings
        assert settings["fit_method"] is None  # no model was fitted by NUTS
        assert settings["methods"] == {"closed": "plug-in", "lc": "gibbs"}
    page = _page(out / "report.html")
    settings_rows = _table_with(page, "setting")
    assert not any(r[0] == "method" and r[1] == "nuts" for r in settings_rows)


def test_compare_rows_have_their_own_types(compared):
    _, _, s = compared
    rows = {r["name"]: r for r in s["comparison"]}
    assert type(rows["lc"]["tune"]) is int and rows["closed"]["tune"] is None
    assert rows["closed"]["priors"] is None and rows["closed"]["likelihood_family"] is None
    assert "" not in [v for r in rows.values() for v in r.values()]


def test_compare_interval_note_separates_the_closed_form(compared):
    _, out, _ = compared
    text = " ".join(" ".join(_page(out / "report.html").text).split())
    assert "For the posterior models means are posterior means and intervals posterior " \
           "predictive" in text
    assert "the closed form's are not" in text


# --------------------------------------------------------------------------- finding 7
def test_suda_says_which_missing_rule_its_sample_uniques_follow(capsys, tmp_path):
    data = tmp_path / "t.csv"
    data.write_text(TINY)
    _run(capsys, "suda", data, "--keys", "A,B,C", "--out", tmp_path / "o")
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["n_sample_uniques"] == 6 and s["n_missing_key_records"] == 1
    assert "--missing category" in s["missing_rule"] and "wildcard" in s["missing_rule"]
    assert s["provenance"]["data"]["n_missing_key_records"] == 1
    text = " ".join(" ".join(_page(tmp_path / "o" / "report.html").text).split())
    assert "1 record has a missing key value" in text
    assert "a level of its own, as under assess --missing category" in text
    suda_section = README.split("**`suda`**")[1].split("**`protect`**")[0]
    assert "missing_rule" in suda_section and "--missing\nwildcard" in suda_section


# --------------------------------------------------------------------------- finding 8
def test_protect_k_anonymity_wording_follows_the_all_missing_rule(capsys, tmp_path):
    data = tmp_path / "m.csv"
    data.write_text("A,B,w\nx,1,10\nx,1,10\ny,2,10\n,,10\nx,2,10\ny,1,10\ny,1,10\n")
    _run(capsys, "protect", data, "--keys", "A,B", "--weight", "w", "--suppress-k", "3",
         "--out", tmp_path / "o")
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    page = (tmp_path / "o" / "report.html").read_text(encoding="utf-8")
    assert "matches no complete record" not in page
    assert "a record whose keys are all missing counts every record" in page
    assert "Missing key values" in page
    notes = " ".join(s["risk"].get("notes") or [])
    assert "matches no complete record" not in notes
    protect_section = README.split("**`protect`**")[1].split("**k-anonymity")[0]
    assert "all missing counts every" in " ".join(protect_section.split())


# --------------------------------------------------------------------------- finding 9
def test_protect_report_parameters_seed_and_missing_label(capsys, tmp_path):
    data = tmp_path / "t.csv"
    data.write_text(TINY)
    _run(capsys, "protect", data, "--keys", "A,B,C", "--weight", "w", "--suppress-k", "2",
         "--importance", "A=1,B=2,C=3", "--seed", "2395621825", "--out", tmp_path / "o")
    page = _page(tmp_path / "o" / "report.html")
    steps = _table_with(page, "parameters")
    params = steps[1][2]
    assert "keys=[\"A\", \"B\", \"C\"]" in params and "['A'" not in params, params
    assert "importance={" in params and "\"A\": 1" in params, params
    settings = _table_with(page, "setting")
    seed = next(r for r in settings if r[0] == "seed")
    assert seed[1] == "2395621825"
    risk = _table_with(page, "original")
    labels = [r[0] for r in risk]
    assert "records with a missing key value" in labels
    assert not any("(suppressed)" in lab for lab in labels)


def test_compare_settings_empty_priors_read_defaults(compared):
    _, out, _ = compared
    settings = _table_with(_page(out / "report.html"), "setting")
    models = next(r for r in settings if r[0] == "models")[1]
    assert "priors: defaults" in models and "(–)" not in models, models
    seed = next(r for r in settings if r[0] == "random_seed")
    assert seed[1] == "1"


def test_decide_ml_note_says_point_estimate(capsys, tmp_path):
    dom = tmp_path / "d.csv"
    pd.DataFrame({"y": [0, 1, 3, 0, 5, 2], "n": [10, 12, 30, 8, 40, 20],
                  "N": [200, 240, 600, 160, 800, 400]}).to_csv(dom, index=False)
    _run(capsys, "decide", dom, "--y", "y", "--n", "n", "--N", "N", "--hyperparameters", "ml",
         "--out", tmp_path / "o")
    text = " ".join(" ".join(_page(tmp_path / "o" / "report.html").text).split())
    assert "given the point estimate of the hyperparameters (maximum likelihood" in text
    assert "and over the hyperparameters" not in text


def test_compare_console_counts_have_thousands_separators():
    import inspect

    from sdcbayes.commands import compare

    src = inspect.getsource(compare._print_summary)
    assert "{r.n_suppressed:,}" in src


# --------------------------------------------------------------------------- finding 10
def test_decide_publishes_domains_without_disclosure_loss(capsys, tmp_path):
    dom = tmp_path / "d.csv"
    pd.DataFrame({"y": [0, 1, 3, 0, 5, 2], "n": [10, 12, 30, 8, 40, 20],
                  "N": [200, 240, 600, 160, 800, 400]}).to_csv(dom, index=False)
    _run(capsys, "decide", dom, "--y", "y", "--n", "n", "--N", "N", "--hyperparameters", "ml",
         "--target-risk", "0.01", "--out", tmp_path / "o")
    dec = pd.read_csv(tmp_path / "o" / "decisions.csv")
    zero = dec[(dec["R1"] == 0) & (dec["R0"] == 0)]
    assert len(zero) == 2 and zero["publish"].all() and zero["ratio"].isna().all()
    assert "R1 = R0 = 0 when y = 0" not in README  # the rule as written below
    assert "or R1 = 0" in README and "R1 = R0 = 0, is" in " ".join(README.split())


def test_compare_decisions_have_the_cell_numbers_of_changed_cells(compared):
    _, out, s = compared
    dec = pd.read_csv(out / "decisions.csv")
    assert dec.columns[0] == "cell" and dec["cell"].tolist() == list(range(len(dec)))
    assert dec.loc[dec["changed"], "cell"].tolist() == s["changed_cells"]


@pytest.mark.parametrize("field", [
    # decide
    "`columns`", "`unit`", "`n_domains`", "`disclosure_loss`", "`target_risk`", "`at_bound`",
    "`n_draws_used`",
    # suda
    "`n_records_with_msu`", "`n_in_pairs`", "`n_distinct`", "`dis_q`", "`score_method`",
    "`attribute_contributions_note`", "`missing_codes`",
    # compare
    "`loss_pairs`", "`reference_pair`", "`n_changed_cells`", "`tau1_true`", "`fit_method`",
    # protect
    "`protected_file`", "`il1_numeric`", "`il1_columns`", "`n_missing_key_records`",
    "`suppression_keys`", "`suppression_strata`", "n_records_missing_key_kept`",
    "`eigen_difference`", "`interval_risk`", "`linkage_n_left_out`", "`linkage_expected_correct_share`",
])
def test_readme_documents_the_summary_fields(field):
    output_files = README.split("## Output files")[1].split("## Model catalogue")[0]
    recipes = README.split("## Protection recipes")[1].split("## Output files")[0]
    assert field in output_files or field in recipes


def test_readme_provenance_data_per_command():
    text = " ".join(README.split("## Output files")[1].split("**`assess`**")[0].split())
    for part in ("for `protect` the input's records", "for `suda` records",
                 "for `decide` the number of domains"):
        assert part in text


def test_protect_provenance_data_holds_levels_and_weight_sum(capsys, tmp_path):
    data = tmp_path / "t.csv"
    data.write_text(TINY)
    _run(capsys, "protect", data, "--keys", "A,B,C", "--weight", "w", "--suppress-k", "2",
         "--out", tmp_path / "o")
    d = json.loads((tmp_path / "o" / "summary.json").read_text())["provenance"]["data"]
    assert d["key_levels"] == {"A": 2, "B": 2, "C": 2} and d["sum_weights"] == 80.0
    assert d["n_cells"] == 7 and d["n_missing_key_records"] == 1


def test_decide_posterior_settings_name_the_fit_method():
    import inspect

    from sdcbayes.commands import decide

    src = Path(inspect.getsourcefile(decide)).read_text(encoding="utf-8")
    assert '"fit_method": "nuts"' in src and '"method": "nuts"' not in src


# --------------------------------------------------------------------------- extras
def test_nayak_zhang_leaves_missing_key_values_missing():
    from sdcbayes.protection import nayak_zhang_pram

    rng = np.random.default_rng(1)
    n = 120
    frame = pd.DataFrame({"a": rng.integers(0, 6, n).astype(float),
                          "b": rng.choice(list("pqrstu"), n).astype(object)})
    frame.loc[rng.choice(n, 15, replace=False), "a"] = np.nan
    frame.loc[rng.choice(n, 10, replace=False), "b"] = None
    miss = frame.isna().any(axis=1).to_numpy()
    res = nayak_zhang_pram(frame, ["a", "b"], seed=2)
    out = res.frame
    assert res.summary["n_moved"] > 0
    assert res.summary["n_records_missing_key_kept"] == int(miss.sum())
    # the incomplete records keep their values; no complete record gets a missing value
    pd.testing.assert_frame_equal(out[miss], frame[miss])
    assert not out[~miss].isna().any().any()
    assert not set(res.log["record"]) & set(np.flatnonzero(miss))


def test_suppress_then_nayak_zhang_does_not_refill_suppressed_values(capsys, tmp_path):
    rng = np.random.default_rng(4)
    n = 400
    frame = pd.DataFrame({"age": rng.integers(1, 9, n), "sex": rng.integers(1, 3, n),
                          "reg": rng.integers(1, 6, n), "w": 20})
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"seed": 1, "steps": [
        {"step": "suppress", "k": 2}, {"step": "nayak_zhang", "xi": 0.5}]}))
    _run(capsys, "protect", data, "--keys", "age,sex,reg", "--weight", "w", "--recipe",
         recipe, "--out", tmp_path / "o")
    log = pd.read_csv(tmp_path / "o" / "log.csv", dtype=str, keep_default_na=False)
    suppressed = {(r.record, r.variable) for r in log[log["method"] == "suppress"].itertuples()}
    assert suppressed
    prot = pd.read_csv(tmp_path / "o" / "protected.csv", dtype=str, keep_default_na=False)
    for rec, var in suppressed:
        assert prot.loc[int(rec), var] == "", (rec, var)
    moved = log[log["method"] == "nayak_zhang"]
    assert len(moved)
    for key in ("age", "sex", "reg"):
        assert (moved[f"{key}_released"] != "").all() and (moved[f"{key}_original"] != "").all()
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["risk"]["after"]["n_missing_key_records"] == int((prot[["age", "sex", "reg"]] == "")
                                                              .any(axis=1).sum())


def test_a_step_changing_the_weight_is_warned_about(capsys, tmp_path):
    data = tmp_path / "t.csv"
    frame = pd.read_csv(pd.io.common.StringIO(TINY))
    frame["w"] = [10, 12, 30, 11, 9, 10, 14, 10]
    frame.to_csv(data, index=False)
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "top_code", "column": "w", "threshold": 20}]}))
    proc = _run(capsys, "protect", data, "--keys", "A,B,C", "--weight", "w", "--recipe",
                recipe, "--out", tmp_path / "o")
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert any("change the weight column 'w'" in m for m in s["warnings"])
    assert "change the weight column" in proc.stderr
    assert re.search(r"changes the `--weight` column", README)
