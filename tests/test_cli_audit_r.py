"""Audit R's findings 2-9 (robustness of the commands and their Python twins).

Finding 2: ``read_microdata(na_values=-9)``. Finding 3: a single-valued option given
twice, a CSV header naming a column twice. Finding 4: ``--classes 1``. Finding 5:
negbin with wildcard cells, refused before "fitting". Finding 6: posterior models with
weights summing to n or less. Finding 7: a stratum that is also a key. Finding 8: error
messages in command-line words. Finding 9: cosmetics (the exact case's diagnostics,
compare's "fitting 0 model(s)", decimal commas, an all-missing key, noise on a key).
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes.exceptions import DataError, InputError
from sdcbayes.microdata import Microdata, read_microdata

KEYS = "age,sex,region"
#: The smallest latent-class fit: a few seconds.
TINY_LC = ["--draws", "20", "--tune", "20", "--chains", "1", "--ppc", "0",
           "--overdispersion", "none", "--classes", "5", "--seed", "1"]


def _frame(n: int = 200, seed: int = 0, w=None) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(1, 8, n),
        "sex": rng.choice(["f", "m"], n),
        "region": rng.choice(list("ABCDE"), n),
        "w": rng.uniform(10, 30, n).round(2) if w is None else w,
        "inc": rng.normal(2000, 500, n).round(2),
    })


def _csv(tmp_path: Path, frame: pd.DataFrame, name: str = "d.csv") -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


@pytest.fixture()
def base(tmp_path) -> Path:
    return _csv(tmp_path, _frame())


# --------------------------------------------------------------------------- finding 2
@pytest.mark.parametrize("codes", [-9, -9.0, "-9", [-9], ["-9", "."], (-9, 99)])
def test_na_values_takes_one_number_or_text(tmp_path, codes):
    path = _csv(tmp_path, pd.DataFrame({"a": [-9, 1, 2], "b": ["x", "-9", "y"]}))
    got = read_microdata(path, na_values=codes)
    assert got["a"].isna().tolist() == [True, False, False]
    assert got["b"].isna().tolist() == [False, True, False]


@pytest.mark.parametrize("codes", [{"a": -9}, [None], True, [["-9"]]])
def test_na_values_of_another_type_is_refused_with_the_fix(tmp_path, codes):
    path = _csv(tmp_path, pd.DataFrame({"a": [-9, 1, 2]}))
    with pytest.raises(InputError, match=r"na_values=-9 or na_values=\['-9', '\.'\]"):
        read_microdata(path, na_values=codes)


# --------------------------------------------------------------------------- finding 3
@pytest.mark.parametrize(("args", "fragments"), [
    (["--keys", "age", "--keys", "sex"],
     ["--keys given twice; list all keys in one --keys age,sex"]),
    (["--keys=age", "--keys", "sex,region"],
     ["--keys given twice; list all keys in one --keys age,sex,region"]),
    (["--keys", KEYS, "--model", "negbin", "--model", "closed-form"],
     ["--model given twice ('negbin', 'closed-form')", "give it once"]),
    (["--keys", KEYS, "--weight", "w", "--weight", "inc", "--model", "closed-form"],
     ["--weight given twice"]),
])
def test_assess_refuses_a_single_valued_option_given_twice(capsys, base, tmp_path, args,
                                                           fragments):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(base), *args, "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()


@pytest.mark.parametrize("command, args", [
    ("protect", ["--keys", KEYS, "--suppress-k", "2", "--suppress-k", "3"]),
    ("suda", ["--keys", KEYS, "--max-size", "2", "--max-size", "3"]),
    ("compare", ["--keys", KEYS, "--models", "c=closed-form", "--models", "d=closed-form"]),
    ("decide", ["--y", "y", "--y", "n", "--n", "n", "--N", "N"]),
])
def test_every_command_refuses_a_single_valued_option_given_twice(capsys, base, tmp_path,
                                                                  command, args):
    option = args[-4] if command != "decide" else "--y"
    data = base
    if command == "decide":
        data = _csv(tmp_path, pd.DataFrame({"y": [1, 2], "n": [5, 6], "N": [50, 60]}), "dom.csv")
    proc = run_in_process(capsys, command, str(data), *args, "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, f"{option} given twice")


def test_options_meant_to_repeat_still_repeat(capsys, tmp_path):
    df = _frame()
    df["age"] = df["age"].map({1: "a1", 2: "a2", 3: "a3", 4: "a4", 5: "a5", 6: "a6", 7: "a7"})
    path = _csv(tmp_path, df)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS,
                          "--recode", "age:a1+a2=young", "--recode", "region:A+B=AB",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out / "protected.csv")
    assert "young" in set(got["age"]) and "AB" in set(got["region"])
    assert not {"a1", "a2"} & set(got["age"]) and not {"A", "B"} & set(got["region"])
    # a flag given twice means the same thing: not refused
    proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS, "--weight", "w",
                          "--model", "closed-form", "-q", "--quiet", "--out", str(out / "a"))
    assert proc.returncode == 0, proc.stderr


def test_repeated_header_name_is_refused_as_in_a_data_frame(capsys, tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("age,sex,age,w\n4,f,5,10\n6,m,7,10\n", encoding="utf-8")
    with pytest.raises(DataError, match="column name\\(s\\) 'age' occur more than once"):
        read_microdata(path)
    with pytest.raises(DataError, match="occur more than once"):
        read_microdata(path, columns=["sex"])
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(path), "--keys", "age,sex", "--weight", "w",
                          "--model", "closed-form", "--out", str(out))
    assert_one_line_error(proc, "column name(s) 'age' occur more than once in 'dup.csv'",
                          "rename the duplicates")
    assert not out.exists()
    # the DataFrame route says the same
    frame = pd.DataFrame([[4, "f", 5, 10.0]], columns=["age", "sex", "age", "w"])
    with pytest.raises(DataError, match="column name\\(s\\) 'age' occur more than once"):
        Microdata(frame, keys=["age", "sex"], weight="w")


# --------------------------------------------------------------------------- finding 4
def test_one_latent_class_is_refused_before_fitting(capsys, base, tmp_path):
    proc = run_in_process(capsys, "assess", str(base), "--keys", KEYS, "--weight", "w",
                          "--classes", "1", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "--classes must be at least 2", "got 1")
    assert "fitting" not in proc.stderr
    proc = run_in_process(capsys, "compare", str(base), "--keys", KEYS, "--weight", "w",
                          "--models", "lc=latent-class:classes=1", "--out", str(tmp_path / "c"))
    assert_one_line_error(proc, "'lc'", "classes=", ">= 2", "got 1")
    assert "fitting" not in proc.stderr


# --------------------------------------------------------------------------- finding 5
def test_negbin_with_wildcard_cells_is_refused_before_fitting(capsys, tmp_path):
    df = _frame()
    df.loc[[3, 7], "region"] = np.nan
    path = _csv(tmp_path, df)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS, "--weight", "w",
                          "--model", "negbin", "--fit-method", "map", "--out", str(out))
    assert_one_line_error(proc, "negbin model needs each record in one cell",
                          "--missing category", "--missing drop", "--model closed-form")
    assert "fitting" not in proc.stderr and "sdcbayes.risk" not in proc.stderr
    assert not out.exists()


# --------------------------------------------------------------------------- finding 6
NO_POPULATION = ["not more than the 200 records",
                 "no population beyond the sample can be extrapolated",
                 "fix the weights (they should sum to the population size)",
                 "--sampling-fraction", "--model closed-form"]


@pytest.mark.parametrize("weights, total", [
    (np.full(200, 0.5), "100"),                  # N < n
    (np.tile([0.5, 1.5], 100), "200"),            # unequal weights normalised to n
])
@pytest.mark.parametrize("model", [["--model", "latent-class", *TINY_LC],
                                   ["--model", "poisson-gamma", "--fit-method", "map"]])
def test_weights_summing_to_n_or_less_are_refused_before_fitting(capsys, tmp_path, weights,
                                                                 total, model):
    path = _csv(tmp_path, _frame(w=weights))
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS, "--weight", "w",
                          "--allow-weights-below-one", "--missing", "category", *model,
                          "--out", str(out))
    assert_one_line_error(proc, f"the weights sum to {total},", *NO_POPULATION)
    assert "fitting" not in proc.stderr
    assert not out.exists()
    # compare: the same refusal, named by the model
    proc = run_in_process(capsys, "compare", str(path), "--keys", KEYS, "--weight", "w",
                          "--allow-weights-below-one", "--missing", "category",
                          "--models", "lc=latent-class", "--out", str(out))
    assert_one_line_error(proc, "'lc' (latent-class)", f"the weights sum to {total},",
                          "leave the poisson-gamma and latent-class models out")
    assert "fitting" not in proc.stderr


def test_assess_posterior_refuses_weights_summing_to_n_before_any_fit(monkeypatch):
    import sdcbayes.inference as inference
    from sdcbayes.risk.posterior_assess import assess_posterior

    def no_fit(*a, **k):  # pragma: no cover - reached only if the check is missing
        raise AssertionError("fitted")

    monkeypatch.setattr(inference, "fit", no_fit)
    md = Microdata(_frame(w=np.tile([0.5, 1.5], 100)), keys=KEYS.split(","), weight="w",
                   missing="category", allow_weights_below_one=True)
    for model in ("poisson-gamma", "latent-class"):
        with pytest.raises(InputError) as err:
            assess_posterior(md, model=model, draws=5, tune=5, chains=1)
        msg = str(err.value)
        assert "the weights sum to N=200, not more than the n=200 records" in msg
        assert "pass N=..." in msg and "assess_closed_form" in msg


def test_the_sample_as_the_population_still_gives_exact_results(capsys, tmp_path):
    df = _frame(w=np.ones(200))
    path = _csv(tmp_path, df)
    md = Microdata(df, keys=KEYS.split(","), weight="w")
    uniques, cells = md.cells.n_sample_uniques, md.cells.n_cells
    for extra in (["--weight", "w"], ["--sampling-fraction", "1"]):
        out = tmp_path / f"o{len(extra[0])}"
        proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS, *extra,
                              "--model", "poisson-gamma", "--fit-method", "map", "--seed", "1",
                              "--out", str(out), "-q")
        assert proc.returncode == 0, proc.stderr
        s = json.loads((out / "summary.json").read_text())
        assert s["tau1"] == pytest.approx(uniques) and s["tau2"] == pytest.approx(uniques)
        assert s["expected_reidentifications"] == pytest.approx(cells)


def test_a_weight_class_below_its_record_count_is_warned_about(capsys, tmp_path):
    path = _csv(tmp_path, _frame(w=np.tile([0.5, 3.0], 100)))
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS, "--weight", "w",
                          "--allow-weights-below-one", "--missing", "category", *TINY_LC,
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "weight class(es)" in ln]
    assert len(lines) == 1 and lines[0].startswith("sdcbayes: warning: 1 weight class(es) "
                                                   "have weights summing below their sample "
                                                   "count"), proc.stderr
    assert "mean weight 0.5: 100 records, weights summing to 50" in lines[0]
    summary = json.loads((out / "summary.json").read_text())
    assert any("weight class(es)" in w for w in summary["warnings"])


# --------------------------------------------------------------------------- finding 7
def test_a_stratum_may_be_a_key_in_assess(capsys, base, tmp_path):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(base), "--keys", KEYS, "--weight", "w",
                          "--strata", "region", "--model", "closed-form", "--out", str(out),
                          "-q")
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    rows = s["by_stratum"]
    assert [r["stratum"] for r in rows] == list("ABCDE")
    assert sum(r["n_records"] for r in rows) == s["n_records"]
    assert sum(r["n_sample_uniques"] for r in rows) == s["n_sample_uniques"]
    assert sum(r["expected_reidentifications"] for r in rows) == pytest.approx(
        s["expected_reidentifications"])
    # each cell lies in one stratum: the by-stratum table has one row per cell
    md = Microdata(pd.read_csv(base), keys=KEYS.split(","), weight="w", strata="region")
    assert len(md.cells.by_stratum) == md.cells.n_cells
    # the weight and the household may still not be keys
    with pytest.raises(InputError, match="both a key and the weight column"):
        Microdata(pd.read_csv(base), keys=["age", "w"], weight="w")


def test_a_stratum_may_be_a_key_of_a_posterior_model(capsys, base, tmp_path):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(base), "--keys", KEYS, "--weight", "w",
                          "--strata", "region", *TINY_LC, "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert sum(r["expected_reidentifications"] for r in s["by_stratum"]) == pytest.approx(
        s["expected_reidentifications"])


@pytest.mark.parametrize("args, fragments", [
    (["--suppress-k", "3"], ["--strata 'region': also among the step's keys",
                             "suppression could blank a key value that is also its record's "
                             "stratum", "leave it out of the strata"]),
    (["--pram", "region"], ["--strata 'region': also among the step's PRAM'd columns",
                            "PRAM could not change it"]),
])
def test_protect_refuses_a_stratum_its_step_would_change(capsys, base, tmp_path, args,
                                                         fragments):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(base), "--keys", KEYS, *args,
                          "--strata", "region", "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()
    # the library says why too
    from sdcbayes import protection as P

    frame = pd.read_csv(base)
    with pytest.raises(InputError, match="suppression could blank"):
        P.local_suppression(frame, KEYS.split(","), 3, strata="region")
    with pytest.raises(InputError, match="PRAM could not change it"):
        P.invariant_pram(frame, ["region"], strata="region", seed=1)


def test_protect_pram_within_strata_of_a_key_still_works(capsys, base, tmp_path):
    proc = run_in_process(capsys, "protect", str(base), "--keys", KEYS, "--pram", "sex",
                          "--strata", "region", "--seed", "1", "--out", str(tmp_path / "o"),
                          "-q")
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- finding 8
def test_suda_names_max_size_as_its_option(capsys, tmp_path):
    rng = np.random.default_rng(0)
    names = [f"k{j}" for j in range(32)]
    path = _csv(tmp_path, pd.DataFrame(rng.integers(0, 2, (20, 32)), columns=names))
    proc = run_in_process(capsys, "suda", str(path), "--keys", ",".join(names),
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "32 keys combined up to all of them (--max-size, by default "
                          "the number of keys)", "give --max-size 5 or less, or fewer keys")
    assert "max_size" not in proc.stderr
    proc = run_in_process(capsys, "suda", str(path), "--keys", ",".join(names),
                          "--max-size", "9", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "32 keys with --max-size 9 give", "give --max-size 5 or less")
    # the size named is accepted
    from sdcbayes.risk.suda import _MAX_SUBSETS

    assert sum(__import__("math").comb(32, k) for k in range(1, 6)) <= _MAX_SUBSETS


def test_protect_names_mdav_k_and_nayak_zhang_xi(capsys, tmp_path):
    path = _csv(tmp_path, _frame(n=1))
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--microaggregate",
                          "inc", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "only 1 record for groups of at least 3 records",
                          "lower --mdav-k")
    assert "k=" not in proc.stderr
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--nayak-zhang-xi",
                          "0.5", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "for --nayak-zhang-xi 0.5 is 2", "raise --nayak-zhang-xi",
                          '"group_size" in a "nayak_zhang" step of a --recipe')
    assert "pass a smaller group_size" not in proc.stderr


def test_a_column_name_with_a_comma_is_named_as_the_problem(capsys, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('"reg,ion",sex,w\nA,m,10\nB,f,10\n', encoding="utf-8")
    proc = run_in_process(capsys, "assess", str(path), "--keys", "reg,ion,sex",
                          "--model", "closed-form", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "column 'reg,ion' in c.csv has a comma in its name",
                          "rename the column")
    assert "did you mean" not in proc.stderr


def test_close_match_prefers_the_name_as_written(capsys, tmp_path):
    path = _csv(tmp_path, pd.DataFrame({"area": ["a", "b"], "y": [1, 2], "n": [5, 6],
                                        "N": [50, 60]}), "dom.csv")
    proc = run_in_process(capsys, "decide", str(path), "--y", "y", "--n", "n", "--N", "NN",
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "--N 'NN' (did you mean 'N'?)")
    # a name that differs only in case suggests that column
    frame = pd.DataFrame({"age": [1], "sex": ["m"]})
    from sdcbayes.microdata import resolve_columns

    with pytest.raises(DataError, match=r"'AGE' \(did you mean 'age'\?\)"):
        resolve_columns(frame, ["AGE"])


@pytest.mark.parametrize("text", ["", "\n\n\n"])
def test_an_empty_file_says_so(capsys, tmp_path, text):
    path = tmp_path / "e.csv"
    path.write_text(text, encoding="utf-8")
    proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS,
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "the file is empty (no header line)")
    assert "No columns to parse" not in proc.stderr


def test_a_ragged_line_is_named_by_its_number(capsys, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('age,sex,region,w\n1,m,A,10\n\n"2\n",f,B,10\n3,m\n4,f,C,10\n',
                    encoding="utf-8")
    proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS,
                          "--out", str(tmp_path / "o"))
    # line 6 of the file: a blank line and a quoted field over two lines come before
    assert_one_line_error(proc, "line 6 has 2 field(s), the header has 4 (3,m)")


# --------------------------------------------------------------------------- finding 9
def test_no_convergence_warnings_when_the_sample_is_the_population(capsys, tmp_path):
    path = _csv(tmp_path, _frame(w=np.ones(200)))
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS, "--weight", "w",
                          *TINY_LC, "--strict", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "R-hat" not in proc.stderr.replace("convergence checks (R-hat, ESS)", "")
    assert "ESS " not in proc.stderr and "sdcbayes: warning: parameter" not in proc.stderr
    assert "sdcbayes: note: the sample is the whole population" in proc.stderr
    diag = json.loads((out / "summary.json").read_text())["diagnostics"]
    assert not [p for p in diag["problems"] if "R-hat" in p or "ESS" in p]
    assert "the results are exact" in diag["note"]


def test_compare_with_the_closed_form_alone_fits_nothing(capsys, base, tmp_path):
    proc = run_in_process(capsys, "compare", str(base), "--keys", KEYS, "--weight", "w",
                          "--models", "c=closed-form", "--out", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "fitting" not in proc.stderr


def test_protect_writes_decimal_commas_back_to_a_semicolon_file(capsys, tmp_path):
    path = tmp_path / "s.csv"
    rows = ["age;sex;region;w;inc"] + [
        f"{1 + i % 3};{'mf'[i % 2]};{'AB'[i % 2]};10,5;{1000 + 7 * i},25" for i in range(12)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", KEYS, "--microaggregate",
                          "inc", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    lines = (out / "protected.csv").read_text(encoding="utf-8").splitlines()
    inc = [ln.split(";")[4] for ln in lines[1:]]
    assert all(re.fullmatch(r"\d+(,\d+)?", v) for v in inc), inc
    assert any("," in v for v in inc) and not any("." in v for v in inc)
    assert [ln.split(";")[3] for ln in lines[1:]] == ["10,5"] * 12  # untouched
    back = read_microdata(out / "protected.csv")
    assert back["inc"].dtype == float and back["w"].tolist() == [10.5] * 12


def test_a_key_missing_everywhere_is_warned_about(capsys, base, tmp_path):
    df = _frame().assign(region=np.nan)
    path = _csv(tmp_path, df, "nomissing.csv")
    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(path), "--keys", KEYS, "--weight", "w",
                          "--model", "closed-form", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert ("sdcbayes: warning: key 'region' is missing in every record; it matches "
            "everything and adds nothing to the key") in proc.stderr
    assert any("missing in every record" in w
               for w in json.loads((out / "summary.json").read_text())["warnings"])
    # a key present somewhere: no such warning
    proc = run_in_process(capsys, "assess", str(base), "--keys", KEYS, "--weight", "w",
                          "--model", "closed-form", "--out", str(tmp_path / "b"), "-q")
    assert "missing in every record" not in proc.stderr


@pytest.mark.parametrize("option, fragment", [
    ("--noise", "which becomes continuous: every record gets a value of its own"),
    ("--microaggregate", "which gets group means as values"),
])
def test_noise_or_microaggregation_on_a_key_is_warned_about(capsys, base, tmp_path, option,
                                                            fragment):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(base), "--keys", KEYS, option, "age",
                          "--seed", "1", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert f"sdcbayes: warning: {option} changes the key 'age', {fragment}" in proc.stderr
    assert any(fragment in w for w in json.loads((out / "summary.json").read_text())["warnings"])
    # on a column that is not a key: no warning
    proc = run_in_process(capsys, "protect", str(base), "--keys", KEYS, option, "inc",
                          "--seed", "1", "--out", str(tmp_path / "p"), "-q")
    assert "changes the key" not in proc.stderr


def test_wording_rules_of_this_audit_match_the_library():
    """The protect and suda rules rewrite the library's own messages (not a copy)."""
    from sdcbayes import protection as P
    from sdcbayes.cli import _CLI_WORDING_BY_COMMAND
    from sdcbayes.risk.suda import suda

    frame = _frame(n=1)
    raised = []
    for call in (lambda: P.mdav(frame, ["inc"], 3),
                 lambda: P.nayak_zhang_pram(frame, KEYS.split(","), xi=0.5, seed=1),
                 lambda: suda(_frame(n=5).assign(**{f"k{j}": 0 for j in range(30)}),
                              [*KEYS.split(","), *[f"k{j}" for j in range(30)]])):
        with pytest.raises(InputError) as err, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
        raised.append(" ".join(str(err.value).split()))
    rules = _CLI_WORDING_BY_COMMAND["protect"][-2:] + _CLI_WORDING_BY_COMMAND["suda"]
    for (pattern, _), message in zip(rules, raised, strict=True):
        assert re.search(pattern, message), (pattern, message)
