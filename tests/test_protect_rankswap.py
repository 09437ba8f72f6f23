"""`sdcbayes protect --rank-swap` / a recipe's ``rank_swap`` step.

The written file must equal :func:`sdcbayes.protection.rank_swap` called directly with the
seed ``protect`` records (the Python function as the independent route), ``risk.numeric``
and the information loss must equal the library's measures on the written file against the
input, and every refusal must come before any work as one line, worded as the options or
the recipe's fields. The step chain: a column an earlier suppression blanks may be rank-
swapped (its blanks stay blank), and what the swap leaves (blanks, group means) is carried
to the steps after it.
"""

from __future__ import annotations

import html as html_module
import inspect
import json
import re

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process, run_main

from sdcbayes.microdata import read_microdata
from sdcbayes.protection import eigen_difference, il1, local_suppression, rank_swap
from sdcbayes.risk.linkage import interval_risk, linkage_risk

NUM = ["income", "exp"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(8)
    n = 240
    frame = pd.DataFrame({
        "age": rng.integers(20, 30, n),  # a numeric key (ten whole years)
        "sex": rng.choice(["m", "f"], n),
        "income": rng.lognormal(8, 0.8, n).round(0),
        "exp": rng.lognormal(6, 0.7, n).round(1),
        "hours": rng.integers(0, 60, n),
        "hid": np.arange(n) // 2,
        "w": rng.uniform(20, 60, n).round(2),
    })
    d = tmp_path_factory.mktemp("rankswap")
    frame.to_csv(d / "p.csv", index=False)
    # the input as protect reads it: equal values are ranked by a seeded hash of each
    # record's whole content, so the other columns' types count too (flag is text here)
    return d / "p.csv", read_microdata(d / "p.csv")


def _protect(capsys, tmp_path, monkeypatch, csv, *args, keys="sex"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    proc = run_main(capsys, "protect", str(csv), "--keys", keys, *args, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    return proc, summary, pd.read_csv(out / "protected.csv"), out


def _recipe(tmp_path, steps, seed=None):
    p = tmp_path / "recipe.json"
    p.write_text(json.dumps({"steps": steps} | ({"seed": seed} if seed is not None else {})))
    return str(p)


# --------------------------------------------------------------------------- the run
def test_written_columns_equal_rank_swap_run_directly(capsys, tmp_path, monkeypatch, data,
                                                      check_html):
    csv, frame = data
    proc, s, prot, out = _protect(capsys, tmp_path, monkeypatch, csv, "--rank-swap",
                                  "income,exp", "--rank-swap-p", "10", "--seed", "7")
    direct = rank_swap(frame, NUM, p=10, seed=7)  # protect's one stream: default_rng(7)
    for c in NUM:
        np.testing.assert_allclose(prot[c], direct.frame[c], rtol=1e-12)
    pd.testing.assert_frame_equal(prot.drop(columns=NUM), frame.drop(columns=NUM))
    # log.csv: the method's row per variable, after the step and method columns
    log = pd.read_csv(out / "log.csv")
    assert list(log.columns[:3]) == ["step", "method", "variable"]
    assert (log["step"] == 1).all() and (log["method"] == "rank_swap").all()
    for col in ("variable", "n_observed", "n_top", "n_bottom", "n_ranked", "rank_range",
                "n_swapped", "n_changed"):
        assert log[col].tolist() == direct.log[col].tolist(), col
    np.testing.assert_allclose(log["correlation"], direct.log["correlation"], rtol=1e-12)
    # summary.json: the method's summary without the per-record source rows
    assert s["seed"] == 7
    (step,) = s["steps"]
    assert step["name"] == "rank_swap" and step["parameters"]["p"] == 10.0
    r = step["result"]
    assert "source_of_record" not in r and "seed" not in r
    assert r["rank_range"] == direct.summary["rank_range"]
    assert r["criterion"] == "p" and r["criterion_value"] == 10.0
    assert r["columns_not_swapped"] == []
    # the terminal line; the report's parameters
    ranges = direct.summary["rank_range"]
    assert (f"step 1 (rank_swap, p = 10): rank range income {ranges['income']} records"
            in proc.stdout)
    html = (out / "report.html").read_text()
    check_html(html)
    assert "rank_swap" in html and "Disclosure risk of the numeric variables" in html
    # a recipe with the same step and seed writes the same file
    _, s2, prot2, _ = _protect(capsys, tmp_path / "recipe", monkeypatch, csv, "--recipe",
                               _recipe(tmp_path, [{"step": "rank_swap", "columns": NUM,
                                                   "p": 10}], seed=7))
    pd.testing.assert_frame_equal(prot2, prot)
    assert s2["steps"][0]["result"] == r


def test_without_grouping_each_column_keeps_its_values(capsys, tmp_path, monkeypatch, data):
    csv, frame = data
    _, s, prot, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--rank-swap",
                             "income,hours", "--rank-swap-r0", "0.8", "--rank-swap-top", "0",
                             "--rank-swap-bottom", "0", "--seed", "3")
    for c in ("income", "hours"):
        assert sorted(prot[c]) == sorted(frame[c]), c  # the multiset, exactly
        assert (prot[c] != frame[c]).mean() > 0.5, c  # yet most records changed
    assert pd.api.types.is_integer_dtype(prot["hours"].dtype)  # integers stay integers
    r = s["steps"][0]["result"]
    assert r["criterion"] == "r0" and r["top_percent"] == 0 and r["bottom_percent"] == 0


def test_numeric_risk_and_loss_equal_direct_measures_on_the_written_file(
        capsys, tmp_path, monkeypatch, data):
    csv, frame = data
    _, s, prot, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--rank-swap", "income,exp",
                             "--interval-k", "0.1", "--seed", "5")
    num = s["risk"]["numeric"]
    assert num["variables"] == NUM and num["interval_k"] == 0.1
    for when, other in (("before", frame), ("after", prot)):
        ir = interval_risk(frame, other, NUM, k=0.1)
        assert num[when]["n_interval_risk"] == ir.n_at_risk, when
        assert num[when]["interval_risk"] == pytest.approx(ir.share, rel=1e-12)
        link = linkage_risk(frame, other, NUM, workers=1)
        assert num[when]["linkage_share_nearest"] == pytest.approx(link.share_nearest,
                                                                   rel=1e-12)
    assert num["after"]["interval_risk"] < 1
    loss = s["information_loss"]
    assert loss["il1_columns"] == NUM
    assert loss["il1_numeric"] == pytest.approx(il1(frame, prot, NUM), rel=1e-9)
    assert loss["eigen_difference"] == pytest.approx(eigen_difference(frame, prot, NUM),
                                                     rel=1e-9, abs=1e-15)
    # the default range: sdcMicro's r0 = 0.95, applied by the method
    r = s["steps"][0]["result"]
    assert r["criterion"] == "r0" and r["criterion_value"] == 0.95 and r["r0"] is None


def test_option_defaults_are_the_methods(data):
    from sdcbayes.commands.protect import RANK_SWAP_GROUP_PERCENT

    params = inspect.signature(rank_swap).parameters
    assert params["top_percent"].default == RANK_SWAP_GROUP_PERCENT
    assert params["bottom_percent"].default == RANK_SWAP_GROUP_PERCENT


def test_a_range_below_one_record_is_warned_about_in_option_words(capsys, tmp_path,
                                                                  monkeypatch, data):
    csv, frame = data
    proc, s, prot, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--rank-swap", "income",
                                "--rank-swap-p", "0.1", "--seed", "1")
    assert s["steps"][0]["result"]["columns_not_swapped"] == ["income"]
    warned = [ln for ln in proc.stderr.splitlines() if "(rank_swap)" in ln]
    assert len(warned) == 1 and warned[0].startswith("sdcbayes: warning: step 1 (rank_swap)")
    assert "below one record" in warned[0] and "raise --rank-swap-p" in warned[0]
    assert "UserWarning" not in proc.stderr  # the method's own warning is not shown raw
    assert any("below one record" in w for w in s["warnings"])
    # nothing swapped: only the top and bottom groups changed
    with pytest.warns(UserWarning, match="nothing is swapped"):
        direct = rank_swap(frame, ["income"], p=0.1, seed=1)
    assert direct.log["n_swapped"].tolist() == [0]


# --------------------------------------------------------------------------- the chain
def test_a_key_blanked_by_an_earlier_suppression_is_swapped_its_blanks_kept(
        capsys, tmp_path, monkeypatch, data):
    csv, frame = data
    # age suppressed first (least important), so the suppression blanks some of it
    proc, s, prot, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--suppress-k", "3",
                                "--importance", "age=3,sex=1,hours=2",
                                "--rank-swap", "age", "--rank-swap-p", "20",
                                "--rank-swap-top", "0", "--rank-swap-bottom", "0",
                                "--seed", "2", keys="age,sex,hours")
    assert [st["name"] for st in s["steps"]] == ["suppress", "rank_swap"]  # the fixed order
    supp = local_suppression(frame, ["age", "sex", "hours"], 3,  # uses no random numbers
                             importance={"age": 3, "sex": 1, "hours": 2})
    blanks = supp.frame["age"].isna()
    assert blanks.any()  # the suppression did blank the key
    expected = rank_swap(supp.frame, ["age"], p=20, top_percent=0, bottom_percent=0, seed=2)
    np.testing.assert_array_equal(prot["age"].isna(), blanks)  # blanks stay blank
    np.testing.assert_array_equal(prot["age"][~blanks], expected.frame["age"][~blanks])
    assert sorted(prot["age"][~blanks]) == sorted(supp.frame["age"][~blanks])
    # a rank-swapped key is warned about
    assert "--rank-swap changes the key 'age'" in proc.stderr
    assert "risk after reads the swapped values as true" in proc.stderr
    # its numeric risk: the linkage on the records the suppression left complete
    assert s["risk"]["numeric"]["linkage_n_left_out"] == int(blanks.sum())


@pytest.mark.parametrize("steps, fragments", [
    # the suppression's blanks pass through the swap: micro-aggregation after it refuses them
    ([{"step": "suppress", "k": 3}, {"step": "rank_swap", "columns": ["age"]},
      {"step": "microaggregate", "columns": ["age"]}],
     ["step 3 (microaggregate)", "'age' may have missing values after step 1 (suppress)"]),
    # group means: PRAM after the swap refuses a continuous column
    ([{"step": "rank_swap", "columns": ["hours"]}, {"step": "pram", "columns": ["hours"]}],
     ["step 2 (pram)", "continuous after step 1 (rank_swap) replaces its extremes"]),
    # a column banded into categories is not rank-swapped
    ([{"step": "band", "column": "hours", "breaks": [0, 30, 60]},
      {"step": "rank_swap", "columns": ["hours"]}],
     ["step 2 (rank_swap)", "'hours' is categorical after step 1 (band)",
      "rank swapping needs numeric"]),
])
def test_step_chain_refusals(capsys, tmp_path, monkeypatch, data, protect_no_work, steps,
                             fragments):
    csv, _ = data
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "age,sex", "--recipe",
                          _recipe(tmp_path, steps), "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "o").exists()


def test_chain_without_grouping_keeps_a_whole_column_for_pram(capsys, tmp_path, monkeypatch,
                                                              data):
    csv, frame = data
    steps = [{"step": "rank_swap", "columns": ["hours"], "p": 5, "top_percent": 0,
              "bottom_percent": 0}, {"step": "pram", "columns": ["hours"]}]
    _, s, prot, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--recipe",
                             _recipe(tmp_path, steps), "--seed", "1")
    assert [st["name"] for st in s["steps"]] == ["rank_swap", "pram"]
    assert set(prot["hours"]) <= set(frame["hours"])


# --------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("args, fragments", [
    (["--suppress-k", "2", "--rank-swap-p", "5"],
     ["--rank-swap-p is a setting of --rank-swap", "add --rank-swap COLUMNS"]),
    (["--suppress-k", "2", "--rank-swap-top", "0"], ["--rank-swap-top", "add --rank-swap"]),
    (["--suppress-k", "2", "--rank-swap-k0", "0.2"], ["--rank-swap-k0", "add --rank-swap"]),
    (["--rank-swap", "income", "--rank-swap-p", "5", "--rank-swap-r0", "0.9"],
     ["--rank-swap-p and --rank-swap-r0 are both given", "give one of"]),
    (["--rank-swap", "income", "--rank-swap-p", "0"],
     ["step 1 (rank_swap): p (--rank-swap-p) must be a number > 0 and <= 100; got 0.0"]),
    (["--rank-swap", "income", "--rank-swap-p", "101"], ["--rank-swap-p", "<= 100"]),
    (["--rank-swap", "income", "--rank-swap-r0", "1"], ["--rank-swap-r0", "< 1"]),
    (["--rank-swap", "income", "--rank-swap-r0", "nan"], ["--rank-swap-r0", "got NaN"]),
    (["--rank-swap", "income", "--rank-swap-k0", "0"], ["--rank-swap-k0", "> 0"]),
    (["--rank-swap", "income", "--rank-swap-top", "100"], ["--rank-swap-top", "< 100"]),
    (["--rank-swap", "income", "--rank-swap-bottom", "-1"], ["--rank-swap-bottom", ">= 0"]),
    (["--rank-swap", "income", "--rank-swap-top", "60", "--rank-swap-bottom", "40"],
     ["--rank-swap-top and --rank-swap-bottom add up to 100%", "below 100"]),
    (["--rank-swap", ""], ["columns must be a non-empty list"]),
    (["--rank-swap", "wage"], ["wage"]),
    (["--rank-swap", "sex"], ["step 1 (rank_swap): column 'sex' is not numeric"]),
    (["--rank-swap", "hid", "--household", "hid"], ["changes the household column 'hid'"]),
    (["--rank-swap", "income", "--sensitive", "income"],
     ["changes the --sensitive column(s) 'income'"]),
    (["--rank-swap", "age", "--model", "latent-class", "--weight", "w"],
     ["step 1 (rank_swap) changes the values of key(s) age by exchanging them between "
      "records", "--model closed-form"]),
    (["--rank-swap", "w", "--model", "latent-class", "--weight", "w"],
     ["step 1 (rank_swap) changes the weight column 'w'"]),
])
def test_bad_options_are_one_line_errors_before_any_work(capsys, tmp_path, monkeypatch, data,
                                                         protect_no_work, args, fragments):
    csv, _ = data
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "age,sex", *args,
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, *fragments)
    assert not re.search(r"\b[a-z]+_[a-z0-9_]*=", proc.stderr)  # no Python keyword spelling
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("step, fragments", [
    ({"columns": ["income"], "p": 0}, ["step 2 (rank_swap): p must be a number > 0"]),
    ({"columns": ["income"], "r0": 0.9, "k0": 1}, ["step 2 (rank_swap): r0 and k0 are both"]),
    ({"columns": ["income"], "p": 5, "r0": 0.9, "k0": 1}, ["p and r0 and k0 are all given"]),
    ({"columns": ["income"], "top_percent": None},
     ["top_percent must be a number >= 0 and < 100; got null", "leave it out"]),
    ({"columns": ["income"], "top_percent": 50, "bottom_percent": 50},
     ["top_percent and bottom_percent add up to 100%"]),
    ({"columns": ["income"], "p": True}, ["p must be a number", "got true"]),
    ({"columns": ["income"], "level": 0.1},
     ["step 2 (rank_swap): unknown parameter(s) ['level']",
      "optionally ['p', 'r0', 'k0', 'top_percent', 'bottom_percent']"]),
    ({"p": 5}, ["step 2 (rank_swap): missing parameter(s) ['columns']"]),
    ({"columns": ["sex"]}, ["step 2 (rank_swap): column 'sex' is not numeric"]),
])
def test_recipe_step_errors_name_the_step(capsys, tmp_path, monkeypatch, data,
                                          protect_no_work, step, fragments):
    csv, _ = data
    monkeypatch.chdir(tmp_path)
    steps = [{"step": "suppress", "k": 2}, {"step": "rank_swap", **step}]
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "age,sex", "--recipe",
                          _recipe(tmp_path, steps), "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("params", [
    {"p": 0}, {"p": 100.5}, {"r0": 0}, {"r0": 1}, {"k0": -1}, {"top_percent": 100},
    {"bottom_percent": -0.5}, {"top_percent": 70, "bottom_percent": 30},
    {"p": 5, "k0": 1},
])
def test_protect_refuses_what_the_method_refuses(capsys, tmp_path, monkeypatch, data,
                                                 protect_no_work, params):
    csv, frame = data
    from sdcbayes.exceptions import InputError

    with pytest.raises(InputError):
        rank_swap(frame, ["income"], **params)
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "sex", "--recipe",
                          _recipe(tmp_path, [{"step": "rank_swap", "columns": ["income"],
                                              **params}]), "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "step 1 (rank_swap)")


@pytest.fixture()
def with_inf(data, tmp_path):
    _, frame = data
    f = frame.copy()
    f.loc[3, "income"] = np.inf
    f.loc[[5, 9], "exp"] = np.nan
    csv = tmp_path / "inf.csv"
    f.to_csv(csv, index=False)
    return csv, f


def test_infinite_values_are_refused(capsys, tmp_path, monkeypatch, with_inf,
                                     protect_no_work):
    csv, _ = with_inf
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "sex", "--rank-swap",
                          "income", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "step 1 (rank_swap): column 'income' has infinite values "
                          "(first at record 4 (line 5 of the file))")


def test_a_top_code_before_the_swap_removes_infinite_values(with_inf):
    from sdcbayes.commands.protect import _check_step_chain, _validate_step

    csv, f = with_inf
    # the values are followed through level steps: the top code leaves no infinite value
    steps = [{"step": "top_code", "column": "income", "threshold": 1e6},
             {"step": "rank_swap", "columns": ["income"], "p": 5}]
    steps = [_validate_step(i, s, f, ["sex"]) for i, s in enumerate(steps, start=1)]
    _check_step_chain(steps, f)  # passes
    with pytest.raises(Exception, match=r"step 1 \(rank_swap\): column 'income' has infinite"):
        _check_step_chain(steps[1:], f)


def test_missing_values_stay_missing(capsys, tmp_path, monkeypatch, with_inf):
    csv, f = with_inf
    _, s, prot, _ = _protect(capsys, tmp_path / "run", monkeypatch, csv, "--rank-swap",
                             "exp,hours", "--rank-swap-p", "5", "--seed", "4")
    np.testing.assert_array_equal(prot["exp"].isna(), f["exp"].isna())
    direct = rank_swap(f, ["exp", "hours"], p=5, seed=4)
    np.testing.assert_allclose(prot["exp"], direct.frame["exp"], rtol=1e-12)
    assert s["risk"]["numeric"]["linkage_n_left_out"] == 2


def test_rank_swapped_weight_is_warned_about(capsys, tmp_path, monkeypatch, data):
    csv, _ = data
    proc, s, _, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--rank-swap", "w",
                             "--weight", "w", "--seed", "1")
    assert "step(s) 1 (rank_swap) change the weight column 'w'" in proc.stderr
    assert any("change the weight column" in w for w in s["warnings"])


def test_report_says_a_rank_swapped_key_is_read_as_true(capsys, tmp_path, monkeypatch, data):
    csv, _ = data
    _, s, _, out = _protect(capsys, tmp_path, monkeypatch, csv, "--rank-swap", "age",
                            "--seed", "1", keys="age,sex")
    html = " ".join(html_module.unescape((out / "report.html").read_text()).split())
    assert "After step 1 (rank_swap)" in html
    assert "rank-swapped values: a matched record's value may be another record's" in html
    assert any("--rank-swap changes the key 'age'" in w for w in s["warnings"])
