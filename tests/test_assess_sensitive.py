"""``sdcbayes assess --sensitive``: l-diversity of sensitive variables from the command line.

records.csv's columns are checked against :func:`sdcbayes.risk.l_diversity` on the
records' key cells and against a plain pandas recount; summary.json's counts are
recounted from records.csv; bad options are one-line errors before any output.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, main_captured, run_cli, run_in_process

from sdcbayes.microdata import Microdata, read_microdata
from sdcbayes.risk import l_diversity
from sdcbayes.risk.assess import cells_to_records

KEYS = ["a", "b"]
MEASURES = ("distinct", "entropy", "recursive")


def _frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "a": rng.choice(["a0", "a1", "a2", "a3", "a4", "a5"], n, p=[.4, .3, .1, .1, .05, .05]),
        "b": rng.choice(["b0", "b1", "b2", "b3"], n, p=[.5, .3, .15, .05]),
        # skewed, so that small cells often share one value
        "s1": rng.choice(["x", "y", "z"], n, p=[.8, .15, .05]).astype(object),
        "s2": rng.integers(0, 3, n),
        "w": rng.uniform(5, 20, n).round(2),
        "hh": np.arange(n) // 2,
    })
    frame.loc[rng.choice(n, 6, replace=False), "a"] = np.nan  # missing key values
    frame.loc[rng.choice(n, 15, replace=False), "s1"] = np.nan  # missing sensitive values
    return frame


def _assess(path: Path, out: Path, *extra: str) -> tuple[str, str]:
    rc, stdout, stderr = main_captured(
        "assess", str(path), "--keys", ",".join(KEYS), "--weight", "w",
        "--model", "closed-form", "--out", str(out), *extra)
    assert rc == 0, stderr
    return stdout, stderr


def _expected(frame: pd.DataFrame, sensitive: list[str], *, c: float = 2.0,
              missing: str = "wildcard") -> pd.DataFrame:
    """The library's per-cell l-diversity on the records' key cells, mapped to records."""
    md = Microdata(frame, KEYS, weight="w", missing=missing)
    ld = l_diversity(md.record_cell, frame[sensitive], c=c)
    return pd.DataFrame({col: cells_to_records(ld[col].to_numpy(), md.record_cell)
                         for col in ld.columns})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("sensitive")
    frame = _frame()
    path = d / "survey.csv"
    frame.to_csv(path, index=False)
    # one seed: the closed form's predictive intervals are drawn
    stdout, _ = _assess(path, d / "out", "--sensitive", "s1,s2", "--seed", "1")
    _assess(path, d / "plain", "--seed", "1")
    return {"frame": frame, "path": path, "out": d / "out", "plain": d / "plain",
            "stdout": stdout, "dir": d}


def test_records_columns_are_the_library_l_diversity_of_each_records_cell(run):
    rec = pd.read_csv(run["out"] / "records.csv")
    exp = _expected(run["frame"], ["s1", "s2"])
    for var in ("s1", "s2"):
        for m, lib in zip(MEASURES, ("Distinct", "Entropy", "Recursive"), strict=True):
            np.testing.assert_allclose(rec[f"{var}_{m}_l"], exp[f"{var}_{lib}_Ldiversity"],
                                       rtol=1e-12)
    # two sensitive variables: sdcbayes' Multi* columns too
    np.testing.assert_allclose(rec["multi_entropy_l"], exp["MultiEntropy_Ldiversity"],
                               rtol=1e-12)
    np.testing.assert_array_equal(rec["multi_recursive_l"], exp["MultiRecursive_Ldiversity"])


def test_distinct_and_entropy_l_recounted_with_pandas(run):
    # sdcMicro's convention: cells are exact key patterns (a missing key equals a missing
    # key, groupby dropna=False), a missing sensitive value is one more category when the
    # cell has real values; a cell missing it throughout has distinct 0 and entropy 1
    frame = run["frame"]

    def distinct(s):
        n = s.nunique(dropna=True)
        return n + int(n > 0 and s.isna().any())

    def entropy(s):
        if s.notna().sum() == 0:
            return 1.0
        p = s.value_counts(normalize=True, dropna=False).to_numpy()
        return float(np.exp(-(p * np.log(p)).sum()))

    groups = frame.groupby(KEYS, dropna=False)["s1"]
    rec = pd.read_csv(run["out"] / "records.csv")
    np.testing.assert_array_equal(rec["s1_distinct_l"], groups.transform(distinct))
    np.testing.assert_allclose(rec["s1_entropy_l"], groups.transform(entropy), rtol=1e-12)
    # the records with a missing key value have their own exact-pattern cells here
    assert frame["a"].isna().sum() == 6


def test_summary_counts_recounted_from_records_csv(run):
    rec = pd.read_csv(run["out"] / "records.csv")
    s = json.loads((run["out"] / "summary.json").read_text())
    ld = s["l_diversity"]
    assert ld["sensitive"] == ["s1", "s2"] and ld["c"] == 2.0
    assert ld["n_records"] == len(rec) and ld["n_cells"] == rec["cell"].nunique()
    for var in ("s1", "s2"):
        v = ld["variables"][var]
        d = rec[f"{var}_distinct_l"]
        assert v["n_records_distinct_1"] == int((d == 1).sum())
        assert v["n_cells_distinct_1"] == rec.loc[d == 1, "cell"].nunique()
        assert v["n_records_distinct_below_2"] == int((d < 2).sum())
        assert v["n_cells_distinct_below_2"] == rec.loc[d < 2, "cell"].nunique()
        for m in MEASURES:
            x = rec[f"{var}_{m}_l"]
            got = v[m]
            assert got["min"] == x.min() and got["max"] == x.max()
            assert got["median"] == pytest.approx(x.median(), rel=1e-12)
            assert got["q25"] == pytest.approx(x.quantile(0.25), rel=1e-12)
            assert got["q75"] == pytest.approx(x.quantile(0.75), rel=1e-12)
            assert got["mean"] == pytest.approx(x.mean(), rel=1e-12)
    assert ld["multi"]["recursive"]["min"] == rec["multi_recursive_l"].min()
    assert ld["multi"]["entropy"]["mean"] == pytest.approx(rec["multi_entropy_l"].mean())
    # the data is skewed: some cells share one value, so the counts are not vacuous
    assert ld["variables"]["s1"]["n_cells_distinct_1"] > 0
    # the stamp names the sensitive variables and the constant
    assert s["provenance"]["data"]["sensitive"] == ["s1", "s2"]
    assert s["provenance"]["settings"]["l_diversity_c"] == 2.0
    # the terminal prints one line per variable, with summary.json's counts
    for var in ("s1", "s2"):
        v = ld["variables"][var]
        line = next(li for li in run["stdout"].splitlines() if f"l-diversity of {var}" in li)
        assert (f"{v['n_records_distinct_1']:,} records in {v['n_cells_distinct_1']:,} cells "
                "share one value (distinct l = 1)") in line


def test_report_has_the_l_diversity_section(run, check_html):
    html = (run["out"] / "report.html").read_text(encoding="utf-8")
    check_html(html)
    s = json.loads((run["out"] / "summary.json").read_text())
    section = html[html.index("<h2>Attribute disclosure: l-diversity</h2>"):]
    row = section[section.index("<td>s1</td>"):].split("</tr>")[0]
    v = s["l_diversity"]["variables"]["s1"]
    assert f">{v['n_cells_distinct_1']:,}<" in row and f">{v['n_records_distinct_1']:,}<" in row
    assert "all together (multi)" in section


def test_without_sensitive_nothing_changes(run):
    plain = pd.read_csv(run["plain"] / "records.csv")
    with_l = pd.read_csv(run["out"] / "records.csv")
    assert not any(c.endswith("_l") for c in plain.columns)
    pd.testing.assert_frame_equal(with_l[plain.columns], plain)
    a = json.loads((run["plain"] / "summary.json").read_text())
    b = json.loads((run["out"] / "summary.json").read_text())
    assert "l_diversity" not in a and "sensitive" not in a["provenance"]["data"]
    assert "l_diversity_c" not in a["provenance"]["settings"]
    assert "l-diversity" not in (run["plain"] / "report.html").read_text(encoding="utf-8")
    skip = {"l_diversity", "provenance"}
    assert {k: v for k, v in a.items() if k not in skip} == {
        k: v for k, v in b.items() if k not in skip}


def test_missing_drop_and_c(run):
    # --missing drop: the dropped records are in no cell (empty in records.csv) and
    # counted nowhere; --l-diversity-c reaches the recursive measure; one variable, no
    # Multi* columns
    out = run["dir"] / "drop"
    _assess(run["path"], out, "--sensitive", "s2", "--missing", "drop",
            "--l-diversity-c", "1.5")
    rec = pd.read_csv(out / "records.csv")
    exp = _expected(run["frame"], ["s2"], c=1.5, missing="drop")
    dropped = run["frame"]["a"].isna().to_numpy()
    assert rec.loc[dropped, ["s2_distinct_l", "s2_entropy_l", "s2_recursive_l"]].isna().all(
        axis=None)
    np.testing.assert_array_equal(rec["s2_recursive_l"], exp["s2_Recursive_Ldiversity"])
    assert not exp["s2_Recursive_Ldiversity"].equals(
        _expected(run["frame"], ["s2"], missing="drop")["s2_Recursive_Ldiversity"])
    assert "multi_entropy_l" not in rec and "multi_recursive_l" not in rec
    ld = json.loads((out / "summary.json").read_text())["l_diversity"]
    assert ld["c"] == 1.5 and "multi" not in ld
    assert ld["n_records"] == int((~dropped).sum())
    d = rec["s2_distinct_l"]
    assert ld["variables"]["s2"]["n_records_distinct_1"] == int((d == 1).sum())


def test_posterior_model_gives_the_same_l_diversity(run):
    # l-diversity does not depend on the model: a (tiny) latent-class run gives the
    # closed form's columns and summary
    out = run["dir"] / "lc"
    _tiny = ["--draws", "5", "--tune", "5", "--chains", "1", "--ppc", "0",
             "--overdispersion", "none", "--classes", "2", "--seed", "1", "--no-posterior",
             "-q"]
    rc, _, stderr = main_captured(
        "assess", str(run["path"]), "--keys", ",".join(KEYS), "--weight", "w",
        "--missing", "category", "--sensitive", "s1,s2", "--out", str(out), *_tiny)
    assert rc == 0, stderr
    rec = pd.read_csv(out / "records.csv")
    exp = _expected(run["frame"], ["s1", "s2"], missing="category")
    np.testing.assert_array_equal(rec["s1_distinct_l"], exp["s1_Distinct_Ldiversity"])
    np.testing.assert_allclose(rec["multi_entropy_l"], exp["MultiEntropy_Ldiversity"],
                               rtol=1e-12)
    closed = json.loads((run["out"] / "summary.json").read_text())["l_diversity"]
    assert json.loads((out / "summary.json").read_text())["l_diversity"] == closed


def test_demo_occupation(tmp_path, capsys):
    # the demo's default keys leave occupation and relationship out
    out = tmp_path / "demo"
    proc = run_in_process(capsys, "assess", "--model", "closed-form", "--sensitive",
                          "occupation", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    from sdcbayes.datasets import load_demo

    demo = load_demo()
    md = Microdata(demo.sample, list(demo.keys), weight=demo.weight)
    ld = l_diversity(md.record_cell, demo.sample[["occupation"]])
    rec = pd.read_csv(out / "records.csv")
    np.testing.assert_array_equal(
        rec["occupation_distinct_l"],
        cells_to_records(ld["occupation_Distinct_Ldiversity"].to_numpy(), md.record_cell))


@pytest.mark.parametrize(("args", "fragments"), [
    (["--sensitive", "a"], ["--sensitive 'a'", "--keys", "leave it out"]),
    (["--sensitive", "s1,nope"], ["--sensitive 'nope'", "survey.csv"]),
    (["--sensitive", "w"], ["--sensitive 'w'", "--weight", "leave it out of --sensitive"]),
    (["--sensitive", "hh", "--household", "hh"], ["--sensitive 'hh'", "--household"]),
    (["--sensitive", "s1,s1"], ["'s1' more than once"]),
    (["--sensitive", ","], ["--sensitive names no column"]),
    (["--sensitive", "s1", "--l-diversity-c", "0"], ["--l-diversity-c", "> 0", "got 0"]),
    (["--sensitive", "s1", "--l-diversity-c", "-1"], ["--l-diversity-c", "> 0"]),
    (["--sensitive", "s1", "--l-diversity-c", "nan"], ["--l-diversity-c", "finite"]),
    (["--sensitive", "s1", "--l-diversity-c", "inf"], ["--l-diversity-c", "finite"]),
    (["--l-diversity-c", "3"], ["--l-diversity-c", "give --sensitive"]),
], ids=["key", "absent", "weight", "household", "twice", "empty", "c0", "c-neg", "c-nan",
        "c-inf", "c-alone"])
def test_refusals_are_one_line_before_any_output(run, capsys, tmp_path, args, fragments):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(run["path"]), "--keys", ",".join(KEYS),
                          "--weight", "w", "--model", "closed-form", *args, "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert proc.stdout == "" and not out.exists()


def test_refusal_in_a_subprocess(run, tmp_path):
    # the console script as a user runs it: the same one line, exit 2
    proc = run_cli("assess", str(run["path"]), "--keys", "a,b", "--weight", "w",
                   "--model", "closed-form", "--sensitive", "b", "--out", "o", cwd=tmp_path)
    assert_one_line_error(proc, "--sensitive 'b' is one of --keys")
    assert not (tmp_path / "o").exists()


def test_sav_by_label(tmp_path, capsys):
    pyreadstat = pytest.importorskip("pyreadstat")
    frame = _frame(n=120, seed=5).dropna(subset=["a"]).reset_index(drop=True)
    frame["s1"] = frame["s1"].fillna("")  # SPSS strings have no missing value
    path = tmp_path / "survey.sav"
    labels = {"a": "Age group", "b": "Region", "s1": "Illness status", "s2": "Income band",
              "w": "Weight", "hh": "Household"}
    pyreadstat.write_sav(frame, str(path), column_labels=[labels[c] for c in frame.columns])
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(path), "--keys", "age GROUP,b", "--weight",
                          "w", "--model", "closed-form", "--sensitive", "illness status,s2",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    rec = pd.read_csv(out / "records.csv")
    # outputs name the columns, not the labels typed
    assert "s1_distinct_l" in rec and "s2_distinct_l" in rec
    s = json.loads((out / "summary.json").read_text())
    assert s["l_diversity"]["sensitive"] == ["s1", "s2"]
    # as the file reads back (an empty SPSS string is a missing value there)
    read = read_microdata(path)
    assert read["s1"].isna().any()
    md = Microdata(read, KEYS, weight="w")
    ld = l_diversity(md.record_cell, read[["s1"]])
    np.testing.assert_array_equal(
        rec["s1_distinct_l"],
        cells_to_records(ld["s1_Distinct_Ldiversity"].to_numpy(), md.record_cell))
    # a key named by its label is still a key
    proc = run_in_process(capsys, "assess", str(path), "--keys", "a,b", "--weight", "w",
                          "--model", "closed-form", "--sensitive", "Region",
                          "--out", str(tmp_path / "bad"))
    assert_one_line_error(proc, "--sensitive 'b' is one of --keys")
    assert not (tmp_path / "bad").exists()


def test_help_names_the_options_and_the_columns(capsys):
    proc = run_in_process(capsys, "assess", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "--sensitive VARS" in text and "--l-diversity-c C" in text
    for name in ("<var>_distinct_l", "multi_recursive_l", "l_diversity", "l_recurs_c"):
        assert name in text, name
