"""``sdcbayes protect`` with a ``swap`` step (targeted record swapping, sdcMicro's recordSwap).

The algorithm is tested in tests/test_swapping.py; here the wiring: the step is the
library's ``record_swap`` with the step's arguments and the run's stream (default
``risk_variables``: ``--keys`` less the swapped columns), the invariants of a swap are
recounted from the files written (never from the run's own numbers), log.csv holds one
row per changed value, the recipe equals the options, ``--seed`` repeats the run, and
every refusal is one line, exit 2, before any work.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, main_captured, run_in_process

KEYS = "age_group,sex,marital_status,education,country_of_birth"
HH = "household_id"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    from sdcbayes.datasets import load_demo

    path = tmp_path_factory.mktemp("swap") / "demo.csv"
    load_demo().sample.to_csv(path, index=False)
    return path


def swap_args(demo: Path, out: Path, *extra: str, seed: str = "1") -> list[str]:
    return ["protect", str(demo), "--keys", KEYS, "--weight", "weight", "--household", HH,
            "--swap", "region", "--swap-similar", "household_size", "--swap-rate", "0.05",
            "--seed", seed, "--out", str(out), "--quiet", *extra]


@pytest.fixture(scope="module")
def swapped(demo) -> Path:
    out = demo.parent / "out"
    rc, _, err = main_captured(*swap_args(demo, out))
    assert rc == 0, err
    return out


def read_str(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def test_the_written_file_is_record_swap_with_the_runs_stream(demo, swapped):
    from sdcbayes.cli import read_data
    from sdcbayes.protection import record_swap

    frame = read_data(demo, quiet=True)
    # the run's stream: default_rng(--seed), the swap being the first random step
    lib = record_swap(frame, household=HH, hierarchy=["region"], similar="household_size",
                      risk_variables=KEYS.split(","), swap_rate=0.05, k_anonymity=3,
                      seed=np.random.default_rng(1))
    prot = read_str(swapped / "protected.csv")
    assert prot["region"].tolist() == lib.frame["region"].astype(str).tolist()
    step = json.loads((swapped / "summary.json").read_text())["steps"][0]
    assert step["name"] == "swap"
    assert step["result"]["swapped_households"] == lib.summary["swapped_households"]
    # another seed swaps other households: the stream is the run's, not a fixed one
    other = record_swap(frame, household=HH, hierarchy=["region"], similar="household_size",
                        risk_variables=KEYS.split(","), seed=np.random.default_rng(2))
    assert prot["region"].tolist() != other.frame["region"].astype(str).tolist()


def test_swap_invariants_recounted_from_the_files(demo, swapped):
    orig, prot = read_str(demo), read_str(swapped / "protected.csv")
    assert list(prot.columns) == list(orig.columns) and len(prot) == len(orig)
    # every non-geographic value is kept, row by row
    rest = [c for c in orig.columns if c != "region"]
    assert prot[rest].equals(orig[rest])
    # each household keeps one region
    assert prot.groupby(HH)["region"].nunique().max() == 1
    # per region, the numbers of households of each size are unchanged
    def by_region(f):
        hh = f.drop_duplicates(HH)
        return pd.crosstab(hh["region"], hh["household_size"])
    pd.testing.assert_frame_equal(by_region(orig), by_region(prot))
    moved = (orig["region"] != prot["region"]).groupby(orig[HH]).any()
    summary = json.loads((swapped / "summary.json").read_text())
    result = summary["steps"][0]["result"]
    n_hh = orig[HH].nunique()
    assert result["households"] == n_hh
    # a swapped household lies in another region afterwards: the changed households
    assert result["swapped_households"] == int(moved.sum())
    assert result["swapped_records"] == int((orig["region"] != prot["region"]).sum())
    assert result["swap_rate_achieved"] == pytest.approx(moved.sum() / n_hh)
    assert moved.sum() >= 0.05 * n_hh  # the rate is reached (no household lacked a donor)
    assert result["n_no_donor"] == 0 and result["no_donor_households"] == []
    assert set(result) >= {"high_risk_households", "swapped_pairs", "target_households"}
    json.dumps(result, allow_nan=False)  # JSON as it stands
    # the information loss of the swapped column counts the changed values
    loss = summary["information_loss"]["per_variable"]
    assert list(loss) == ["region"]
    assert loss["region"]["n_changed"] == int((orig["region"] != prot["region"]).sum())


def test_log_rows_are_the_changed_values(demo, swapped):
    orig, prot = read_str(demo), read_str(swapped / "protected.csv")
    log = read_str(swapped / "log.csv")
    assert list(log.columns) == ["step", "method", "record", "variable", "original",
                                 "released"]
    assert set(log["step"]) == {"1"} and set(log["method"]) == {"swap"}
    assert set(log["variable"]) == {"region"}
    changed = np.flatnonzero((orig["region"] != prot["region"]).to_numpy())
    assert log["record"].astype(int).tolist() == changed.tolist()
    assert log["original"].tolist() == orig["region"].iloc[changed].tolist()
    assert log["released"].tolist() == prot["region"].iloc[changed].tolist()


def test_parameters_report_and_recipe_equal_options_and_seed_repeats(demo, swapped, tmp_path):
    summary = json.loads((swapped / "summary.json").read_text())
    params = summary["steps"][0]["parameters"]
    assert params == {"hierarchy": ["region"], "similar": ["household_size"],
                      "swap_rate": 0.05, "k": 3, "carry_along": [],
                      "risk_variables": KEYS.split(",")}
    assert summary["provenance"]["settings"]["steps"] == [params | {"step": "swap"}]
    html = (swapped / "report.html").read_text()
    assert "<td>swap</td>" in html and "hierarchy" in html
    assert "swapped values" not in html  # no key swapped: the risk after is the input's
    # a recipe with the same step (defaults left out) writes the same files
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"seed": 1, "steps": [
        {"step": "swap", "hierarchy": "region", "similar": "household_size"}]}))
    rc, _, err = main_captured("protect", str(demo), "--keys", KEYS, "--weight", "weight",
                               "--household", HH, "--recipe", str(recipe), "--out",
                               str(tmp_path / "r"), "--quiet")
    assert rc == 0, err
    for name in ("protected.csv", "log.csv"):
        assert (tmp_path / "r" / name).read_bytes() == (swapped / name).read_bytes()
    again = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert again["steps"] == summary["steps"]
    # --seed repeats the run; another seed swaps other households
    rc, _, err = main_captured(*swap_args(demo, tmp_path / "s"))
    assert rc == 0, err
    assert (tmp_path / "s" / "protected.csv").read_bytes() == \
        (swapped / "protected.csv").read_bytes()
    rc, _, err = main_captured(*swap_args(demo, tmp_path / "t", seed="2"))
    assert rc == 0, err
    assert (tmp_path / "t" / "protected.csv").read_bytes() != \
        (swapped / "protected.csv").read_bytes()


def test_swap_of_no_key_is_noted_as_unseen_by_the_risk(swapped):
    # region is no key: every record keeps its keys, so the risk after is the risk before,
    # which the run's risk notes say (summary.json and the report's notes)
    s = json.loads((swapped / "summary.json").read_text())
    before, after = s["risk"]["before"], s["risk"]["after"]
    assert before["expected_reidentifications"] == after["expected_reidentifications"]
    assert before["n_sample_uniques"] == after["n_sample_uniques"]
    note = ("step 1 (swap): region is not a key, so the risk after does not see the swap (the "
            "risk reads --keys only); add region to --keys to measure the risk with geography")
    assert note in s["risk"]["notes"]
    assert note in (swapped / "report.html").read_text()


def test_a_swap_carrying_the_household_count_is_warned_about(demo, tmp_path):
    # household_size counts each household's records: carried along with the region to
    # a household of another size, it is still counted exactly off the released ids, and
    # the risk after reads the exact count, so the swap of it protects nothing
    data = tmp_path / "tenure.csv"  # a household-level profile that is not the size
    frame = read_str(demo)
    frame.assign(tenure=pd.to_numeric(frame[HH]) % 2).to_csv(data, index=False)
    out = tmp_path / "o"
    rc, _, err = main_captured(
        "protect", str(data), "--keys", KEYS + ",household_size", "--weight", "weight",
        "--household", HH, "--swap", "region", "--swap-similar", "tenure",
        "--swap-carry-along", "household_size", "--swap-k", "1", "--seed", "1",
        "--out", str(out))
    assert rc == 0, err
    assert "step 1 (swap) swaps household_size, but household_size is each household's " \
        "number of records" in " ".join(err.split())
    released = read_str(out / "protected.csv")
    moved = released["household_size"] != frame["household_size"]
    assert moved.any()  # the warning is about a real change
    s = json.loads((out / "summary.json").read_text())
    assert s["risk"]["household_completion"]["counted"] == int(moved.sum())


def test_swap_of_a_key_runs_before_suppression_and_is_noted(demo, tmp_path):
    # region among the keys: the options run swap, then suppression (census order); the
    # risk after counts the records whose region the swap changed as non-matching, which
    # the report says
    out = tmp_path / "o"
    rc, stdout, err = main_captured(
        "protect", str(demo), "--keys", KEYS + ",region", "--weight", "weight",
        "--household", HH, "--suppress-k", "3", "--swap", "region", "--swap-similar",
        "household_size", "--seed", "1", "--out", str(out))
    assert rc == 0, err
    s = json.loads((out / "summary.json").read_text())
    assert [st["name"] for st in s["steps"]] == ["swap", "suppress"]
    # the terminal's swap line, its numbers recounted from the files (suppression blanks
    # region too, so the swap's changes are read off log.csv)
    orig, log = read_str(demo), read_str(out / "log.csv")
    rows = log[log["method"] == "swap"]["record"].astype(int)
    moved, n_hh = orig[HH].iloc[rows].nunique(), orig[HH].nunique()
    assert f"step 1 (swap): {moved:,} of {n_hh:,} households swapped" in stdout
    # region is swapped, so counted within units it is not a risk variable
    assert s["steps"][0]["parameters"]["risk_variables"] == KEYS.split(",")
    assert "records a swap made non-matching count 0" in (out / "report.html").read_text()
    assert s["risk"]["after"]["misclassification"]["swapped_records"] > 0
    # a key swapped: the risk after sees the swap, so no note says it does not
    assert not any("does not see the swap" in n for n in s["risk"].get("notes") or [])


@pytest.fixture
def not_constant(demo, tmp_path) -> Path:
    """The demo with one member of a multi-person household in another region."""
    df = pd.read_csv(demo)
    size = df.groupby(HH)[HH].transform("size")
    row = df.index[size > 1][0]
    df.loc[row, "region"] = "R01" if df.loc[row, "region"] != "R01" else "R02"
    path = tmp_path / "bad.csv"
    df.to_csv(path, index=False)
    return path


def base(data: Path, out: Path, *extra: str) -> list[str]:
    return ["protect", str(data), "--keys", KEYS, "--weight", "weight", "--out", str(out),
            *extra]


@pytest.mark.parametrize("extra, fragments", [
    (("--swap", "region", "--swap-similar", "household_size"),
     ("--swap exchanges the geography of whole households", "--household")),
    (("--household", HH, "--swap", "regio", "--swap-similar", "household_size"),
     ("--swap", "'regio'")),
    (("--household", HH, "--swap", "region", "--swap-similar", "household_sz"),
     ("--swap-similar", "'household_sz'")),
    (("--household", HH, "--swap", "region"), ("--swap needs --swap-similar",)),
    (("--household", HH, "--swap-rate", "0.1"), ("--swap-rate is a setting of --swap",)),
    (("--household", HH, "--swap", "region", "--swap-similar", "household_size",
      "--swap-rate", "1.5"), ("swap_rate (--swap-rate) must be a number >= 0 and <= 1",)),
    (("--household", HH, "--swap", "region", "--swap-similar", HH),
     ("the household column 'household_id' is also in similar",)),
    (("--household", HH, "--swap", HH, "--swap-similar", "household_size"),
     ("household column 'household_id'",)),
    (("--household", HH, "--swap-risk-variables", "sex"),
     ("--swap-risk-variables is a setting of --swap",)),
    (("--household", HH, "--swap", "region", "--swap-similar", "household_size",
      "--swap-risk-variables", ","), ("--swap-risk-variables is empty",)),
    (("--household", HH, "--swap", "region", "--swap-similar", "household_size",
      "--swap-risk-variables", "age_grp"), ("--swap-risk-variables", "'age_grp'")),
    (("--household", HH, "--swap", "region", "--swap-similar", "household_size",
      "--swap-risk-variables", "sex,region"),
     ("['region'] is in both hierarchy and risk_variables",)),
])
def test_refusals_are_one_line_before_any_work(demo, tmp_path, capsys, protect_no_work,
                                               extra, fragments):
    proc = run_in_process(capsys, *base(demo, tmp_path / "o", *extra))
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "o").exists()


def test_hierarchy_not_constant_within_households_is_refused(not_constant, tmp_path, capsys,
                                                             protect_no_work):
    proc = run_in_process(capsys, *base(
        not_constant, tmp_path / "o", "--household", HH, "--swap", "region",
        "--swap-similar", "household_size"))
    assert_one_line_error(proc, "step 1 (swap): hierarchy column 'region' differs between "
                                "members of 1 household(s)")
    assert not (tmp_path / "o").exists()


def test_swap_after_a_suppression_that_blanks_the_column_is_refused(demo, tmp_path, capsys,
                                                                    protect_no_work):
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "suppress", "k": 3},
        {"step": "swap", "hierarchy": ["region"], "similar": ["household_size"]}]}))
    proc = run_in_process(capsys, "protect", str(demo), "--keys", KEYS + ",region",
                          "--household", HH, "--recipe", str(recipe), "--out",
                          str(tmp_path / "o"))
    assert_one_line_error(proc, "step 2 (swap): hierarchy column 'region' may no longer hold "
                                "one value per household", "after step 1 (suppress)",
                          "put the swap step before that one")
    assert "fixed order" not in proc.stderr  # a recipe can reorder: no note on the options
    assert not (tmp_path / "o").exists()


def test_latent_class_refuses_a_swapped_key_before_any_work(demo, tmp_path, capsys,
                                                            protect_no_work):
    proc = run_in_process(capsys, "protect", str(demo), "--keys", KEYS + ",region",
                          "--weight", "weight", "--household", HH, "--swap", "region",
                          "--swap-similar", "household_size", "--model", "latent-class",
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "step 1 (swap) changes the values of key(s) region by "
                                "exchanging them between households", "--model closed-form")
    assert not (tmp_path / "o").exists()


def test_latent_class_route_takes_a_swap_of_other_columns(demo):
    # no key swapped: the released-file risk scores the keys as they are (no fit here)
    from sdcbayes.cli import read_data
    from sdcbayes.commands.protect import _check_released_route, _validate_step

    frame = read_data(demo, quiet=True)
    keys = KEYS.split(",")
    step = _validate_step(1, {"step": "swap", "hierarchy": ["region"],
                              "similar": "household_size"}, frame, keys, household=HH)
    _check_released_route([step], frame, keys, "weight")  # no error
    with_region = _validate_step(1, {"step": "swap", "hierarchy": ["region"],
                                     "similar": "household_size"}, frame, keys + ["region"],
                                 household=HH)
    from sdcbayes.exceptions import InputError

    with pytest.raises(InputError, match="changes the values of key"):
        _check_released_route([with_region], frame, keys + ["region"], "weight")


def test_check_record_swap_input_refuses_as_record_swap_without_drawing(demo, monkeypatch):
    import sdcbayes.protection.swapping as mod
    from sdcbayes.exceptions import InputError

    frame = pd.read_csv(demo)
    args = dict(household=HH, hierarchy="region", similar="household_size",
                risk_variables=KEYS.split(","))
    with pytest.raises(InputError) as lib:
        mod.record_swap(frame, **args, carry_along=["age"])  # differs within households

    def boom(*a, **k):
        raise AssertionError("the check drew a seed")

    monkeypatch.setattr(mod, "seeded_rng", boom)
    with pytest.raises(InputError) as check:
        mod.check_record_swap_input(frame, **args, carry_along=["age"])
    assert str(check.value) == str(lib.value)
    assert "carry_along column 'age' differs between members" in str(check.value)
    assert mod.check_record_swap_input(frame, **args) == {
        "hierarchy": ["region"], "similar": [["household_size"]],
        "risk_variables": KEYS.split(","), "carry_along": []}


# --------------------------------------------------------------------------- audit AU F5, F8


def test_pairs_listed_in_the_step_result_match_the_files(demo, swapped):
    # summary.json's step result lists the pairs: [selected household, donor, level]
    orig, prot = read_str(demo), read_str(swapped / "protected.csv")
    result = json.loads((swapped / "summary.json").read_text())["steps"][0]["result"]
    pairs = result["pairs"]
    assert len(pairs) == result["swapped_pairs"] > 0
    before = orig.drop_duplicates(HH).set_index(HH)["region"]
    after = prot.drop_duplicates(HH).set_index(HH)["region"]
    before.index, after.index = before.index.astype(int), after.index.astype(int)
    moved = set(before.index[before != after])
    assert {h for p in pairs for h in p[:2]} == moved  # each moved household in one pair
    for h, d, level in pairs:
        assert level == "region"
        assert after[h] == before[d] and after[d] == before[h] and before[h] != before[d]


def test_far_above_the_rate_is_warned_and_swap_risk_variables_fixes_it(demo, swapped,
                                                                        tmp_path):
    # five fine keys, k = 3: nearly every household is at risk within its region, and all
    # are swapped whatever --swap-rate; the warning says so and names the two settings
    orig, prot = read_str(demo), read_str(swapped / "protected.csv")
    n_hh = orig[HH].nunique()
    moved = int((orig["region"] != prot["region"]).groupby(orig[HH]).any().sum())
    assert moved > 2 * 0.05 * n_hh and moved > 0.10 * n_hh  # the run is far above 5%
    s = json.loads((swapped / "summary.json").read_text())
    warned = [w for w in s["warnings"] if "far above the rate asked" in w]
    assert len(warned) == 1
    assert warned[0].startswith(f"step 1 (swap): {moved:,} of {n_hh:,} households swapped")
    assert "(--swap-risk-variables COLS)" in warned[0] and "lower --swap-k" in warned[0]
    assert "5 risk variable(s) " + ", ".join(KEYS.split(",")) in warned[0]
    # --swap-risk-variables: the step counts those columns only (the library's numbers)
    from sdcbayes.cli import read_data
    from sdcbayes.protection import record_swap

    out = tmp_path / "rv"
    rc, _, err = main_captured(*swap_args(demo, out, "--swap-risk-variables", "age_group,sex"))
    assert rc == 0, err
    s2 = json.loads((out / "summary.json").read_text())
    assert s2["steps"][0]["parameters"]["risk_variables"] == ["age_group", "sex"]
    lib = record_swap(read_data(demo, quiet=True), household=HH, hierarchy=["region"],
                      similar="household_size", risk_variables=["age_group", "sex"],
                      swap_rate=0.05, k_anonymity=3, seed=np.random.default_rng(1))
    prot2 = read_str(out / "protected.csv")
    assert prot2["region"].tolist() == lib.frame["region"].astype(str).tolist()
    moved2 = int((orig["region"] != prot2["region"]).groupby(orig[HH]).any().sum())
    assert moved2 < 2 * 0.05 * n_hh  # near the rate asked: no warning
    assert not any("far above the rate asked" in w for w in s2["warnings"])


@pytest.mark.parametrize("asked, achieved, warned", [
    (0.05, 0.10, False),  # exactly 2x: not above
    (0.05, 0.1001, True),
    (0.0, 0.05, False),   # high-risk only: up to +0.05 is fine
    (0.0, 0.0501, True),
    (0.5, 0.99, False),   # less than 2x
    (0.2, 0.2499, False),
])
def test_swap_rate_warning_threshold(asked, achieved, warned):
    from sdcbayes.commands.protect import _swap_rate_warnings

    result = {"swap_rate": asked, "swap_rate_achieved": achieved, "households": 1000,
              "swapped_households": round(1000 * achieved), "high_risk_households": 10,
              "k_anonymity": 3, "risk_variables": ["age", "sex"]}
    option = {"step": "swap", "_option": "--swap"}
    out = _swap_rate_warnings([option], [{"step": 1, "name": "swap", "result": result}])
    assert bool(out) is warned
    if warned:  # a recipe step names its fields, not the options
        recipe = _swap_rate_warnings([{"step": "swap"}],
                                     [{"step": 1, "name": "swap", "result": result}])
        assert "the step's \"risk_variables\"" in recipe[0] and "its \"k\"" in recipe[0]
        assert "--swap" not in recipe[0]


def test_swap_line_counts_the_selections_left_unmade():
    from sdcbayes.commands.protect import _swap_lines

    r = {"swapped_households": 8, "households": 100, "swap_rate_achieved": 0.08,
         "swap_rate": 0.5, "high_risk_households": 0, "k_anonymity": 3, "n_no_donor": 2,
         "unfilled_selections": 21}
    line = _swap_lines([{"step": 1, "name": "swap", "result": r}])[0]
    assert line.endswith("; 2 selected but left unswapped for want of a donor; 21 of the "
                         "rate's selections unmade (their unit ran out of households with a "
                         "donor)")
    assert "unmade" not in _swap_lines([{"step": 1, "name": "swap",
                                         "result": r | {"unfilled_selections": 0}}])[0]


def test_pairs_listed_are_capped(demo, monkeypatch):
    # summary.json lists the first SWAP_PAIRS_LISTED pairs, in the order record_swap formed
    # them (its log: selected household first); the counts keep the whole number
    import sdcbayes.commands.protect as cmd
    from sdcbayes.cli import read_data
    from sdcbayes.protection import record_swap

    frame = read_data(demo, quiet=True)
    res = record_swap(frame, household=HH, hierarchy=["region"], similar="household_size",
                      risk_variables=["age_group", "sex"], swap_rate=0.1, seed=3)
    monkeypatch.setattr(cmd, "SWAP_PAIRS_LISTED", 3)
    out = cmd._swap_value_log(res, frame, ["region"])
    sel = res.log[res.log["role"] == "selected"]
    assert len(sel) > 3 and out.summary["swapped_pairs"] == len(sel)
    assert out.summary["pairs"] == [[int(h), int(d), "region"] for h, d in
                                    zip(sel["household"][:3], sel["partner"][:3], strict=True)]
