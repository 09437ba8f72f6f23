"""``sdcbayes protect --sensitive``: l-diversity of sensitive variables before and after.

The before is ``sdcbayes assess --sensitive`` on the input, the after ``assess
--sensitive`` on the protected file as the risk after reads it (the file written; with
``--household`` the file with the blanks the released ids give away filled), compared
through summary.json; one count is recounted with a pandas groupby; bad options and a
step that would change a sensitive column are one-line errors before any work; without
``--sensitive`` nothing changes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, main_captured, run_in_process

KEYS = "a,b"
SENSITIVE = "s1,s2"


def _frame(n_households: int = 200, seed: int = 5) -> pd.DataFrame:
    """Households of two: ``a`` per person, ``b``, ``g`` and ``hs`` per household."""
    rng = np.random.default_rng(seed)
    n = 2 * n_households
    per_household = np.repeat(np.arange(n_households), 2)
    frame = pd.DataFrame({
        "hh": per_household,
        "a": rng.choice(["a0", "a1", "a2", "a3", "a4", "a5"], n,
                        p=[.4, .3, .1, .1, .05, .05]).astype(object),
        # a household-level key, so that a blank in one member is shown by the other
        "b": rng.choice(["b0", "b1", "b2", "b3"], n_households,
                        p=[.5, .3, .15, .05])[per_household],
        # skewed, so that small cells often share one value
        "s1": rng.choice(["x", "y", "z"], n, p=[.8, .15, .05]).astype(object),
        "s2": rng.integers(0, 3, n),
        "w": rng.uniform(5, 20, n).round(2),
        "g": rng.choice(["R1", "R2", "R3"], n_households)[per_household],
        "hs": 2,
    })
    frame.loc[rng.choice(n, 5, replace=False), "a"] = np.nan  # missing key values
    frame.loc[rng.choice(n, 12, replace=False), "s1"] = np.nan  # missing sensitive values
    return frame


def _assess_ldiv(path: Path, out: Path) -> dict:
    """``assess --sensitive``'s summary.json l_diversity block of ``path``."""
    rc, _, err = main_captured("assess", str(path), "--keys", KEYS, "--weight", "w",
                               "--model", "closed-form", "--sensitive", SENSITIVE,
                               "--out", str(out), "--quiet")
    assert rc == 0, err
    return json.loads((out / "summary.json").read_text())["l_diversity"]


def _protect(path: Path, out: Path, *extra: str) -> tuple[dict, str]:
    rc, stdout, err = main_captured("protect", str(path), "--keys", KEYS, "--weight", "w",
                                    "--seed", "1", "--out", str(out), *extra)
    assert rc == 0, err
    return json.loads((out / "summary.json").read_text()), stdout


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sensitive") / "survey.csv"
    _frame().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def suppressed(data):
    out = data.parent / "supp"
    summary, stdout = _protect(data, out, "--suppress-k", "3", "--sensitive", SENSITIVE)
    return {"out": out, "summary": summary, "stdout": stdout}


def test_before_is_assess_on_the_input_after_is_assess_on_the_written_file(data, suppressed):
    risk = suppressed["summary"]["risk"]
    before, after = risk["before"]["l_diversity"], risk["after"]["l_diversity"]
    assert before == _assess_ldiv(data, data.parent / "assess_in")
    # suppression only: reading the written file back gives the keys the risk after read
    assert after == _assess_ldiv(suppressed["out"] / "protected.csv",
                                 data.parent / "assess_out")
    # the suppression blanked key values, which form cells of their own
    assert suppressed["summary"]["steps"][0]["result"]["total_suppressions"] > 0
    assert after["n_cells"] != before["n_cells"]
    prov = suppressed["summary"]["provenance"]
    assert prov["data"]["sensitive"] == ["s1", "s2"] and prov["settings"]["l_diversity_c"] == 2


def test_after_count_recounted_with_pandas_on_the_protected_file(suppressed):
    # sdcMicro's grouping: exact key patterns, a blank equal only to a blank (dropna=False);
    # a missing sensitive value is one more value where the cell has real ones
    prot = pd.read_csv(suppressed["out"] / "protected.csv")
    assert prot[["a", "b"]].isna().any(axis=None)

    def distinct(s):
        n = s.nunique(dropna=True)
        return n + int(n > 0 and s.isna().any())

    d = prot.groupby(["a", "b"], dropna=False)["s1"].transform(distinct)
    v = suppressed["summary"]["risk"]["after"]["l_diversity"]["variables"]["s1"]
    assert v["n_records_distinct_1"] == int((d == 1).sum()) > 0
    assert v["n_records_distinct_below_2"] == int((d < 2).sum())


def test_terminal_and_report_show_before_and_after(suppressed):
    risk = suppressed["summary"]["risk"]
    html = (suppressed["out"] / "report.html").read_text()
    assert "l-diversity of the sensitive variables, before and after" in html
    for var in ("s1", "s2"):
        b = risk["before"]["l_diversity"]["variables"][var]["n_records_distinct_1"]
        a = risk["after"]["l_diversity"]["variables"][var]["n_records_distinct_1"]
        line = next(x for x in suppressed["stdout"].splitlines()
                    if x.strip().startswith(f"l-diversity of {var}"))
        assert f"{b:,} -> {a:,} records in cells sharing one value" in line


def test_household_after_is_assess_on_the_completed_file(data, tmp_path):
    # the risk after reads the blanks the released ids give away as shown; so does the
    # l-diversity after (the cells an intruder groups the released records into)
    from sdcbayes.cli import read_data
    from sdcbayes.protection.suppression import household_completion

    # b (household-level) suppressed first, so that mates show what it blanks
    summary, _ = _protect(data, tmp_path / "o", "--household", "hh", "--suppress-k", "4",
                          "--importance", "a=1,b=2", "--sensitive", SENSITIVE, "--quiet")
    assert summary["risk"]["household_completion"]["total"] > 1
    completed, _ = household_completion(read_data(data, quiet=True),
                                        read_data(tmp_path / "o" / "protected.csv", quiet=True),
                                        ["a", "b"], "hh")
    completed.to_csv(tmp_path / "completed.csv", index=False)
    after = summary["risk"]["after"]["l_diversity"]
    assert after == _assess_ldiv(tmp_path / "completed.csv", tmp_path / "ac")
    # ... not the file as written, whose blanks are cells of their own
    assert after != _assess_ldiv(tmp_path / "o" / "protected.csv", tmp_path / "aw")


def test_pram_of_a_sensitive_variable_is_allowed_and_after_reads_released_values(data,
                                                                                 tmp_path):
    summary, _ = _protect(data, tmp_path / "o", "--pram", "s1", "--pram-pd", "0.6",
                          "--sensitive", SENSITIVE, "--quiet")
    prot = pd.read_csv(tmp_path / "o" / "protected.csv")
    orig = pd.read_csv(data)
    assert (prot["s1"].fillna("") != orig["s1"].fillna("")).any()  # PRAM changed values
    after = summary["risk"]["after"]["l_diversity"]
    assert after == _assess_ldiv(tmp_path / "o" / "protected.csv", tmp_path / "a")
    assert after["variables"]["s1"] != summary["risk"]["before"]["l_diversity"]["variables"]["s1"]


def test_latent_class_model_reports_the_same_model_free_l_diversity(data, suppressed,
                                                                    tmp_path):
    # the cells are the keys' patterns: no model enters them (a short fit, its numbers unused)
    summary, _ = _protect(data, tmp_path / "o", "--suppress-k", "3", "--sensitive", SENSITIVE,
                          "--model", "latent-class", "--missing", "category", "--draws", "10",
                          "--chains", "1", "--tune", "10", "--quiet")
    for side in ("before", "after"):
        assert summary["risk"][side]["l_diversity"] == \
            suppressed["summary"]["risk"][side]["l_diversity"]
    assert "l-diversity of the sensitive variables" in (tmp_path / "o" / "report.html").read_text()


def test_without_sensitive_nothing_changes(data, suppressed, tmp_path):
    plain, stdout = _protect(data, tmp_path / "o", "--suppress-k", "3")
    risk = suppressed["summary"]["risk"]
    for side in ("before", "after"):
        assert "l_diversity" not in plain["risk"][side]
        assert {k: v for k, v in risk[side].items() if k != "l_diversity"} == \
            plain["risk"][side]
    assert "sensitive" not in plain["provenance"]["data"]
    assert "l_diversity_c" not in plain["provenance"]["settings"]
    assert "l-diversity" not in stdout
    assert "l-diversity" not in (tmp_path / "o" / "report.html").read_text()
    assert (tmp_path / "o" / "protected.csv").read_bytes() == \
        (suppressed["out"] / "protected.csv").read_bytes()


def test_a_column_named_multi_is_refused_by_assess_only():
    # records.csv's multi_* columns would clash in assess; protect writes no records.csv
    from sdcbayes.cli import check_sensitive_roles
    from sdcbayes.exceptions import InputError

    with pytest.raises(InputError, match="named 'multi'"):
        check_sensitive_roles(["multi", "s1"], ["a"], {"weight": None, "household": None})
    check_sensitive_roles(["multi", "s1"], ["a"], {"weight": None, "household": None},
                          records_csv=False)


@pytest.mark.parametrize("extra, fragments", [
    (("--suppress-k", "3", "--sensitive", "a"), ("--sensitive 'a' is one of --keys",)),
    (("--suppress-k", "3", "--sensitive", "w"), ("--sensitive 'w' is the --weight column",)),
    (("--household", "hh", "--suppress-k", "3", "--sensitive", "hh"),
     ("--sensitive 'hh' is the --household column",)),
    (("--suppress-k", "3", "--sensitive", "s9"), ("--sensitive", "'s9'")),
    (("--suppress-k", "3", "--sensitive", "s1,s1"), ("--sensitive names 's1' more than once",)),
    (("--suppress-k", "3", "--l-diversity-c", "3"),
     ("--l-diversity-c is the constant of the recursive l-diversity of --sensitive",)),
    (("--suppress-k", "3", "--sensitive", "s1", "--l-diversity-c", "0"),
     ("--l-diversity-c must be a finite number > 0",)),
    (("--recode", "s1:x+y=xy", "--sensitive", "s1"),
     ("step 1 (recode) changes the --sensitive column(s) 's1'",)),
    (("--noise", "s2", "--sensitive", "s1,s2"),
     ("step 1 (noise) changes the --sensitive column(s) 's2'",)),
    (("--suppress-k", "3", "--linked", "a=s1", "--sensitive", "s1"),
     ("step 1 (suppress) changes the --sensitive column(s) 's1'",)),
    (("--household", "hh", "--swap", "g", "--swap-similar", "hs", "--sensitive", "g"),
     ("step 1 (swap) changes the --sensitive column(s) 'g'",)),
])
def test_refusals_are_one_line_before_any_work(data, tmp_path, capsys, protect_no_work,
                                               extra, fragments):
    proc = run_in_process(capsys, "protect", str(data), "--keys", KEYS, "--weight", "w",
                          "--out", str(tmp_path / "o"), *extra)
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "o").exists()
