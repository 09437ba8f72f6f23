"""`sdcbayes decide --domain COL1,COL2`: domains named by several columns (user audit F2).

The README tutorial's ``domains.csv`` names each domain by ``region`` and ``age_group``;
``--domain`` took one column, so decisions.csv and report.html numbered the domains
by row. With several columns the outputs keep each column under its name and the report
joins the values ("R01 / 0-9"). The reference is an independent route: the same table
with the label joined beforehand in pandas, run with one ``--domain`` column, must give
the same decisions. Every run uses ``--hyperparameters ml`` (no sampling: a fraction of
a second), in this process (``clitools.run_in_process``) with ``tmp_path`` as the
working directory.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from clitools import assert_one_line_error, run_in_process

COUNTS = ["--y", "y", "--n", "n", "--N", "N", "--hyperparameters", "ml"]


@pytest.fixture
def table(tmp_path, monkeypatch):
    """4 regions x 3 age groups, rows shuffled (so input order is no sort order)."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(5)
    regions, ages = ["R01", "R02", "R03", "R04"], ["0-9", "10-19", "20+"]
    frame = pd.DataFrame([(r, a) for r in regions for a in ages],
                         columns=["region", "age_group"])
    m = len(frame)
    frame["n"] = rng.integers(5, 60, m)
    frame["N"] = frame["n"] * rng.integers(3, 30, m)
    frame["y"] = rng.binomial(frame["n"], rng.beta(1.0, 8.0, m))
    frame = frame.sample(frac=1.0, random_state=2).reset_index(drop=True)
    frame.to_csv("domains.csv", index=False)
    return frame


def _decide(capsys, path, *domain, out):
    return run_in_process(capsys, "decide", path, *COUNTS, *domain, "--out", out, "-q")


def test_two_domain_columns_equal_one_prejoined_column(table, tmp_path, capsys):
    proc = _decide(capsys, "domains.csv", "--domain", "region,age_group", out="two")
    assert proc.returncode == 0, proc.stderr
    # independent route: the label joined in pandas, one --domain column
    joined = table.assign(label=table["region"] + " / " + table["age_group"])
    joined.drop(columns=["region", "age_group"]).to_csv("joined.csv", index=False)
    proc = _decide(capsys, "joined.csv", "--domain", "label", out="one")
    assert proc.returncode == 0, proc.stderr

    two = pd.read_csv(tmp_path / "two" / "decisions.csv", dtype={"age_group": str})
    one = pd.read_csv(tmp_path / "one" / "decisions.csv")
    assert list(two.columns) == ["region", "age_group", "R1", "R0", "ratio", "publish",
                                 "order"]
    # one row per input row, in input order, each column holding the input's values
    assert two["region"].tolist() == table["region"].tolist()
    assert two["age_group"].tolist() == table["age_group"].tolist()
    assert (two["region"] + " / " + two["age_group"]).tolist() == one["label"].tolist()
    pd.testing.assert_frame_equal(two.iloc[:, 2:], one.iloc[:, 1:])

    fr2 = pd.read_csv(tmp_path / "two" / "frontier.csv", dtype={"age_group": str})
    fr1 = pd.read_csv(tmp_path / "one" / "frontier.csv")
    assert list(fr2.columns[:4]) == ["step", "position", "region", "age_group"]
    assert fr2.iloc[0][["region", "age_group"]].isna().all()  # step 0: nothing published
    pos = fr2["position"].iloc[1:].astype(int)
    assert fr2["region"].iloc[1:].tolist() == table["region"].iloc[pos].tolist()
    assert fr2["age_group"].iloc[1:].tolist() == table["age_group"].iloc[pos].tolist()
    assert ((fr2["region"] + " / " + fr2["age_group"]).iloc[1:].tolist()
            == fr1["label"].iloc[1:].tolist())

    s2 = json.loads((tmp_path / "two" / "summary.json").read_text())
    s1 = json.loads((tmp_path / "one" / "summary.json").read_text())
    assert s2["columns"]["domain"] == ["region", "age_group"]
    assert s1["columns"]["domain"] == "label"  # one column: a string, as before

    # report.html names each domain by its joined values, under the joined column names
    html = (tmp_path / "two" / "report.html").read_text(encoding="utf-8")
    assert "<th>region / age_group</th>" in html
    for label in one["label"]:  # 12 domains: all in the publication-order table
        assert f"<td>{label}</td>" in html, label


def test_domain_columns_by_variable_label(table, tmp_path, capsys):
    pyreadstat.write_sav(table, "domains.sav", column_labels=[
        "Region code", "Age group", "Sample size", "Population", "Professionals"])
    proc = _decide(capsys, "domains.sav", "--domain", "region code, Age group", out="sav")
    assert proc.returncode == 0, proc.stderr
    dec = pd.read_csv(tmp_path / "sav" / "decisions.csv", dtype={"age_group": str})
    assert list(dec.columns[:2]) == ["region", "age_group"]  # outputs use the column names
    assert dec["age_group"].tolist() == table["age_group"].tolist()


def test_repeated_combination_is_refused_naming_it_and_its_records(table, tmp_path, capsys):
    bad = table.copy()
    # record 7 (line 8 of the file) gets record 3's region and age group
    bad.loc[6, ["region", "age_group"]] = bad.loc[2, ["region", "age_group"]].to_numpy()
    bad.to_csv("dup.csv", index=False)
    r, a = bad.loc[2, "region"], bad.loc[2, "age_group"]
    proc = _decide(capsys, "dup.csv", "--domain", "region,age_group", out="out")
    assert_one_line_error(proc, f"region='{r}', age_group='{a}'",
                          "record 3 (line 4 of the file) and record 7 (line 8 of the file)",
                          "each domain needs one row")
    assert not (tmp_path / "out").exists()


def test_one_column_that_repeats_points_to_several_columns(table, tmp_path, capsys):
    # the tutorial's case: region alone repeats, region,age_group does not
    proc = _decide(capsys, "domains.csv", "--domain", "region", out="out")
    assert_one_line_error(proc, "--domain column 'region' repeats label",
                          "--domain COL,COL")
    assert not (tmp_path / "out").exists()


def test_missing_domain_value_is_refused(table, tmp_path, capsys):
    bad = table.copy()
    bad.loc[4, "age_group"] = None  # record 5, line 6 of the file
    bad.to_csv("missing.csv", index=False)
    proc = _decide(capsys, "missing.csv", "--domain", "region,age_group", out="out")
    assert_one_line_error(proc, "--domain column 'age_group' has a missing label",
                          "record 5 (line 6 of the file)")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["order", "step"])
def test_domain_column_named_like_an_output_column_is_refused(table, tmp_path, capsys, name):
    table.rename(columns={"age_group": name}).to_csv("clash.csv", index=False)
    proc = _decide(capsys, "clash.csv", "--domain", f"region,{name}", out="out")
    assert_one_line_error(proc, f"--domain column '{name}' is named like an output column")
    assert not (tmp_path / "out").exists()


def test_column_named_twice_is_refused(table, tmp_path, capsys):
    proc = _decide(capsys, "domains.csv", "--domain", "region,age_group,region", out="out")
    assert_one_line_error(proc, "--domain names column 'region' twice")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("edit", "extra", "fragments"),
    [
        (lambda f: f.assign(y=f["y"].where(f.index != 2, f["n"] + 1)), [],
         ["y (y) > n (n) in record 3 (line 4 of the file)"]),
        (lambda f: f.assign(n=f["n"].astype(float).where(f.index != 5, 2.5)), [],
         ["--n column 'n'", "record 6 (line 7 of the file) holds '2.5'"]),
        (lambda f: f.assign(w=np.where(f.index == 8, 1.5, 1.0)), ["--weight", "w"],
         ["--weight column 'w' holds 1.5 (record 9 (line 10 of the file))"]),
    ],
    ids=["y-above-n", "fractional-count", "fractional-weight"],
)
def test_records_in_messages_count_from_1(table, tmp_path, capsys, edit, extra, fragments):
    edit(table.copy()).to_csv("bad.csv", index=False)
    proc = _decide(capsys, "bad.csv", "--domain", "region,age_group", *extra, out="out")
    assert_one_line_error(proc, *fragments)
    assert "0-based" not in proc.stderr
    assert not (tmp_path / "out").exists()
