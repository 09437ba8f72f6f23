"""Audit U (sdcbayes at 10^5-10^7 records): the CLI's reading and its slow steps.

F3: ``assess``, ``suda`` and ``compare`` read only the columns their options name
(resolved against the file's header first), with every column as the whole file's
read gives it; ``protect`` still reads everything (it writes the file back).
F1: ``protect``'s MDAV micro-aggregation, quadratic in the records, warns before
the work on a large file (the threshold is patched down so the test stays cheap).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

import sdcbayes.microdata as microdata
from sdcbayes.microdata import _read_header, read_microdata


def _survey(n: int = 400, seed: int = 7) -> pd.DataFrame:
    """Keys, weight, household, stratum, and unused columns around them."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "x_unused": rng.normal(size=n).round(3),
        "hh": np.repeat(np.arange(n // 2), 2),
        "age": rng.choice(["0-19", "20-39", "40-59", "60+"], n),
        "sex": rng.choice(["f", "m"], n),
        "note": rng.choice(["a", "b", "c"], n),
        "region": rng.choice(["N", "S", "E"], n),
        "w": rng.uniform(5, 30, n).round(2),
        "income": rng.lognormal(10, 1, n).round(0),
        "y_unused": rng.normal(size=n).round(3),
    })


@pytest.fixture()
def spy(monkeypatch):
    """Record the ``columns`` of every read_microdata call made by the CLI."""
    calls: list = []
    real = microdata.read_microdata

    def recording(path, **kw):
        calls.append(kw.get("columns"))
        return real(path, **kw)

    monkeypatch.setattr(microdata, "read_microdata", recording)
    return calls


# ----------------------------------------------------------------------------------- F3
@pytest.mark.parametrize("ext", [".csv", ".parquet"])
def test_assess_reads_only_the_named_columns(tmp_path, monkeypatch, capsys, spy, ext):
    monkeypatch.chdir(tmp_path)
    frame = _survey()
    path = tmp_path / f"s{ext}"
    frame.to_csv(path, index=False) if ext == ".csv" else frame.to_parquet(path, index=False)
    narrow = tmp_path / f"n{ext}"
    cols = ["hh", "age", "sex", "region", "w"]
    (frame[cols].to_csv(narrow, index=False) if ext == ".csv"
     else frame[cols].to_parquet(narrow, index=False))
    args = ["--keys", "sex,age", "--weight", "w", "--household", "hh", "--strata", "region",
            "--model", "closed-form", "-q"]
    proc = run_in_process(capsys, "assess", str(path), *args, "--out", str(tmp_path / "o1"))
    assert proc.returncode == 0, proc.stderr
    # the named columns only, in the file's order
    assert spy == [["hh", "age", "sex", "region", "w"]]
    proc = run_in_process(capsys, "assess", str(narrow), *args, "--out", str(tmp_path / "o2"))
    assert proc.returncode == 0, proc.stderr
    # the same result as a file holding only those columns
    assert (tmp_path / "o1/records.csv").read_bytes() == (tmp_path / "o2/records.csv").read_bytes()
    s1 = json.loads((tmp_path / "o1/summary.json").read_text())
    s2 = json.loads((tmp_path / "o2/summary.json").read_text())
    for k in ("n_records", "n_cells", "n_sample_uniques", "expected_reidentifications",
              "tau1", "tau2", "by_stratum", "household_expected_reidentifications"):
        assert s1[k] == s2[k], k


def test_a_key_that_is_also_the_stratum_is_read_once(tmp_path, monkeypatch, capsys, spy):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.csv"
    _survey().to_csv(path, index=False)
    proc = run_in_process(capsys, "assess", str(path), "--keys", "region,sex", "--strata",
                          "region", "--model", "closed-form", "-q", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert spy == [["sex", "region"]]


def test_suda_and_compare_read_only_their_columns(tmp_path, monkeypatch, capsys, spy):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.parquet"
    _survey().to_parquet(path, index=False)
    proc = run_in_process(capsys, "suda", str(path), "--keys", "age,sex,note", "-q",
                          "--out", str(tmp_path / "su"))
    assert proc.returncode == 0, proc.stderr
    proc = run_in_process(capsys, "compare", str(path), "--keys", "age,sex", "--weight", "w",
                          "--household", "hh", "--models", "closed=closed-form", "--seed", "1",
                          "-q", "--out", str(tmp_path / "co"))
    assert proc.returncode == 0, proc.stderr
    assert spy == [["age", "sex", "note"], ["hh", "age", "sex", "w"]]


def test_protect_still_reads_every_column(tmp_path, monkeypatch, capsys, spy):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.csv"
    _survey().to_csv(path, index=False)
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--suppress-k",
                          "2", "--seed", "1", "-q", "--out", str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    assert spy and spy[0] is None
    written = pd.read_csv(tmp_path / "p/protected.csv")
    assert list(written.columns) == list(_survey().columns)


@pytest.mark.parametrize("command,option", [("assess", "--weight"), ("suda", "--keys"),
                                            ("compare", "--household")])
def test_misspelt_column_listed_with_all_columns_before_reading(tmp_path, monkeypatch, capsys,
                                                                 spy, command, option):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.csv"
    _survey().to_csv(path, index=False)
    args = {"--weight": ["--keys", "age,sex", "--weight", "ww", "--model", "closed-form"],
            "--keys": ["--keys", "age,sexx"],
            "--household": ["--keys", "age,sex", "--household", "hhh", "--weight", "w",
                            "--models", "closed=closed-form"]}[option]
    proc = run_in_process(capsys, command, str(path), *args, "--out", str(tmp_path / "o"))
    every = ", ".join(_survey().columns)
    assert_one_line_error(proc, option, "did you mean", f"(columns: {every})")
    assert spy == []  # refused from the header alone: no record read


def _labelled(tmp_path, ext: str):
    """An SPSS or Stata file: value labels, variable labels, a user-missing code, -9s."""
    pyreadstat = pytest.importorskip("pyreadstat")
    rng = np.random.default_rng(3)
    n = 300
    data = pd.DataFrame({
        "junk": rng.normal(size=n),
        "v1": rng.integers(1, 5, n).astype(float),
        "v2": rng.integers(1, 3, n).astype(float),
        "v3": rng.choice([1.0, 2.0, 3.0, 9.0], n),
        "v4": rng.integers(1, 40, n).astype(float),
        "w": rng.uniform(5, 50, n).round(2),
    })
    data.loc[:10, "v4"] = -9.0
    labels = {"v1": {1: "north", 2: "south", 3: "east", 4: "west", 6: "unused"},
              "v2": {1: "male", 2: "female"}, "v3": {1: "a", 2: "b", 3: "b", 9: "refused"}}
    names = ["Junk", "Region", "Sex", "Group", "Age in years", "Weight"]
    path = tmp_path / f"lab{ext}"
    if ext == ".sav":
        pyreadstat.write_sav(data, path, column_labels=names,
                             variable_value_labels={c: {float(k): v for k, v in lab.items()}
                                                    for c, lab in labels.items()},
                             missing_ranges={"v3": [9.0]})
    else:
        pyreadstat.write_dta(data, path, column_labels=names, variable_value_labels=labels)
    return path


def _semicolon_csv(tmp_path):
    """Decimal commas, padded texts, missing tokens, and codes 012 / 12."""
    path = tmp_path / "semi.csv"
    path.write_text("id;code;name;w;unused\n1;012;\" a \";1,5;x\n2;12;a;2,25;y\n3;12; NA;3;z\n"
                    "4;.;\"NA\";4,5;\n5;012;None;5;q\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", ["sav", "dta", "csv", "semicolon", "parquet"])
def test_a_column_read_alone_is_the_whole_files_column(tmp_path, kind):
    """read_microdata(columns=...) gives each column as the whole file's read does."""
    if kind in ("sav", "dta"):
        path = _labelled(tmp_path, f".{kind}")
        cols, na = ["v1", "v3", "v4"], ["-9"]
    elif kind == "semicolon":
        path, cols, na = _semicolon_csv(tmp_path), ["code", "name", "w"], ["None"]
    else:
        path = tmp_path / f"s.{kind}"
        frame = _survey()
        frame.to_csv(path, index=False) if kind == "csv" else frame.to_parquet(path)
        cols, na = ["age", "w", "income"], ["S"]
    whole = read_microdata(path, na_values=na)
    part = read_microdata(path, columns=cols, na_values=na)
    pd.testing.assert_frame_equal(part, whole[cols])
    for c in cols:  # categories (value labels, in their order) and dtypes alike
        assert part[c].dtype == whole[c].dtype, c
    labels = whole.attrs.get("column_labels")  # of the columns read
    assert part.attrs.get("column_labels") == (
        None if labels is None else {c: lab for c, lab in labels.items() if c in cols})
    if kind == "semicolon":  # the CSV rules hold in a column read alone
        assert part["code"].tolist() == ["012", "12", "12", ".", "012"]  # two codes, not 12
        assert part["w"].tolist() == [1.5, 2.25, 3.0, 4.5, 5.0]  # decimal commas
        # stripped; " NA" (padded) and None (na_values) missing; a quoted "NA" a level
        assert part["name"].isna().tolist() == [False, False, True, False, True]
        assert part["name"].dropna().tolist() == ["a", "a", "NA"]


@pytest.mark.parametrize("kind", ["sav", "dta", "csv", "semicolon", "parquet"])
def test_header_has_the_whole_files_columns_and_labels(tmp_path, kind):
    if kind in ("sav", "dta"):
        path = _labelled(tmp_path, f".{kind}")
    elif kind == "semicolon":
        path = _semicolon_csv(tmp_path)
    else:
        path = tmp_path / f"s.{kind}"
        frame = _survey()
        frame.to_csv(path, index=False) if kind == "csv" else frame.to_parquet(path)
    header, whole = _read_header(path), read_microdata(path)
    assert len(header) == 0
    assert list(header.columns) == list(whole.columns)
    assert header.attrs.get("column_labels") == whole.attrs.get("column_labels")


def test_header_of_parquet_leaves_out_a_stored_index(tmp_path):
    path = tmp_path / "i.parquet"
    _survey().set_index("hh").to_parquet(path)  # a named index, stored as a column
    whole = read_microdata(path)
    assert "hh" not in whole.columns
    assert list(_read_header(path).columns) == list(whole.columns)


def test_labels_resolve_and_results_match_the_whole_file(tmp_path, monkeypatch, capsys, spy):
    """Keys by variable label: only their columns read, the result unchanged."""
    monkeypatch.chdir(tmp_path)
    path = _labelled(tmp_path, ".sav")
    proc = run_in_process(capsys, "assess", str(path), "--keys", "region,Group,age in years",
                          "--weight", "Weight", "--na-values", "-9", "--model", "closed-form",
                          "-q", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert spy == [["v1", "v3", "v4", "w"]]
    from sdcbayes.microdata import Microdata
    from sdcbayes.risk.assess import assess_closed_form

    whole = read_microdata(path, na_values=["-9"])
    expected = assess_closed_form(Microdata(whole, keys=["v1", "v3", "v4"], weight="w"))
    records = pd.read_csv(tmp_path / "o/records.csv")
    np.testing.assert_allclose(records["risk"].to_numpy(),
                               expected.records["risk"].to_numpy(), rtol=1e-12)
    summary = json.loads((tmp_path / "o/summary.json").read_text())
    assert summary["n_cells"] == expected.summary["n_cells"]


# ----------------------------------------------------------------------------------- F1
def _numeric(tmp_path, n=60):
    rng = np.random.default_rng(11)
    path = tmp_path / "num.csv"
    pd.DataFrame({"sex": rng.choice(["f", "m"], n), "age": rng.integers(18, 90, n),
                  "income": rng.lognormal(10, 1, n).round(0)}).to_csv(path, index=False)
    return path


def test_mdav_on_many_records_warns_before_the_work(tmp_path, monkeypatch, capsys):
    import sys

    import sdcbayes.commands.protect as protect
    import sdcbayes.protection as P

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(protect, "MDAV_WARN_RECORDS", 50)
    real = P.mdav

    def marked(*a, **kw):  # the step's start, as stderr sees it
        print("MDAV-STARTS", file=sys.stderr)
        return real(*a, **kw)

    monkeypatch.setattr(P, "mdav", marked)
    path = _numeric(tmp_path)
    proc = run_in_process(capsys, "protect", str(path), "--keys", "sex", "--microaggregate",
                          "age,income", "--seed", "1", "-q", "--out", str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    warning = next(line for line in err.splitlines() if "runs MDAV on 60 records" in line)
    assert warning.startswith("sdcbayes: warning: --microaggregate runs MDAV")
    assert "O(n^2/k)" in warning and "roughly" in warning and "k=3" in warning
    assert "--microaggregate-method sorted" in warning
    assert err.index("runs MDAV on") < err.index("MDAV-STARTS")  # before the work
    assert err.count("runs MDAV on") == 1  # printed once, not again at the end
    summary = json.loads((tmp_path / "p/summary.json").read_text())
    assert any("runs MDAV on 60 records" in w for w in summary["warnings"])


def test_mdav_warning_in_a_recipe_names_the_steps_method(tmp_path, monkeypatch, capsys):
    import sdcbayes.commands.protect as protect

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(protect, "MDAV_WARN_RECORDS", 50)
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "microaggregate", "columns": ["age", "income"], "k": 5}]}))
    proc = run_in_process(capsys, "protect", str(_numeric(tmp_path)), "--keys", "sex",
                          "--recipe", str(recipe), "--seed", "1", "--json",
                          "--out", str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    assert 'step 1 (microaggregate) runs MDAV on 60 records' in proc.stderr
    assert 'give the step "method": "sorted"' in proc.stderr and "k=5" in proc.stderr


@pytest.mark.parametrize("extra", [[], ["--microaggregate-method", "sorted"]])
def test_no_mdav_warning_below_the_threshold_or_with_sorted(tmp_path, monkeypatch, capsys,
                                                            extra):
    import sdcbayes.commands.protect as protect

    monkeypatch.chdir(tmp_path)
    if extra:  # the sorted method is n log n: never warned, however large
        monkeypatch.setattr(protect, "MDAV_WARN_RECORDS", 50)
    proc = run_in_process(capsys, "protect", str(_numeric(tmp_path)), "--keys", "sex",
                          "--microaggregate", "age,income", *extra, "--seed", "1", "-q",
                          "--out", str(tmp_path / "p"))
    assert proc.returncode == 0, proc.stderr
    assert "runs MDAV" not in proc.stderr
    summary = json.loads((tmp_path / "p/summary.json").read_text())
    assert not any("runs MDAV" in w for w in summary["warnings"])


def test_mdav_estimate_follows_the_square_of_the_records():
    from sdcbayes.commands.protect import _mdav_cost_warnings

    step = {"step": "microaggregate", "columns": ["a", "b"], "k": 3, "_option": "--microaggregate"}
    assert _mdav_cost_warnings([step], 50_000) == []
    assert "roughly 50 s at k=3" in _mdav_cost_warnings([step], 100_000)[0]
    assert "roughly 83 min at k=3" in _mdav_cost_warnings([step], 1_000_000)[0]
    assert "roughly 6 days" in _mdav_cost_warnings([step], 10_000_000)[0]


def test_microaggregate_help_states_the_cost(capsys):
    proc = run_in_process(capsys, "protect", "--help")
    text = " ".join(proc.stdout.split())
    assert "O(n^2/k)" in text and "over an hour for 10^6" in text


# ----------------------------------------------------------------------------------- F4
def _csv_values(tmp_path, values, sep=","):
    path = tmp_path / "c.csv"
    path.write_text("x" + sep + "y\n" + "".join(f"{v}{sep}1\n" for v in values),
                    encoding="utf-8")
    return read_microdata(path)["x"]


def test_canonical_numbers_skip_the_distinct_count(tmp_path, monkeypatch):
    """The common case (no +, no leading zero) is decided without hashing every value."""
    import pyarrow.compute as pc

    def refuse(*a, **kw):
        raise AssertionError("count_distinct called")

    monkeypatch.setattr(pc, "count_distinct", refuse)
    col = _csv_values(tmp_path, ["12", "-3", "0", "7", "120"])
    assert col.dtype == np.int64 and col.tolist() == [12, -3, 0, 7, 120]
    col = _csv_values(tmp_path, ["1.5", "2", "0.25", "-0.5", ""])
    assert col.dtype == np.float64 and col.tolist()[:4] == [1.5, 2.0, 0.25, -0.5]


@pytest.mark.parametrize("values,expected", [
    (["012", "12", "5"], ["012", "12", "5"]),        # two codes: text
    (["+7", "7"], ["+7", "7"]),                       # a sign makes another text
    (["-0", "0", "3"], ["-0", "0", "3"]),
    (["-07", "-7"], ["-07", "-7"]),
    # beyond 2**53 two integers share a float64 (the 0.5 makes the column float)
    (["9007199254740993", "9007199254740992", "0.5"],
     ["9007199254740993", "9007199254740992", "0.5"]),
])
def test_codes_keep_their_identity(tmp_path, values, expected):
    assert _csv_values(tmp_path, values).tolist() == expected


def test_zero_padded_codes_alone_and_big_integers_convert(tmp_path):
    col = _csv_values(tmp_path, ["01", "02", "12"])
    assert col.dtype == np.int64 and col.tolist() == [1, 2, 12]
    col = _csv_values(tmp_path, ["+7", "8"])
    assert col.tolist() == [7, 8]
    col = _csv_values(tmp_path, ["9007199254740993", "9007199254740992"])  # int64: exact
    assert col.dtype == np.int64 and col.tolist() == [9007199254740993, 9007199254740992]


def test_decimal_commas_and_missing_tokens_still_hold(tmp_path):
    col = _csv_values(tmp_path, ["1,5", "012", "NA", " ", "2,25"], sep=";")
    assert col.isna().tolist() == [False, False, True, True, False]
    assert col.dropna().tolist() == [1.5, 12.0, 2.25]  # "012" alone: a number
    col = _csv_values(tmp_path, ["1,5", "012", "12"], sep=";")
    assert col.tolist() == ["1,5", "012", "12"]  # two integer codes give one number: text
