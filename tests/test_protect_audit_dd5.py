"""Audit DD5: protect names its risk estimator; risk-threshold, linked suppression; PRAM matrices.

* F1: ``protect``'s "before -> after" risk is the closed form (Benedetti-Franconi); the
  terminal, summary.json (``risk.estimator``, ``risk.notes``) and report.html say so and,
  for a sample file, that it understates the risk (the demo numbers it quotes are
  checked against the demo's known population).
* F2: :func:`sdcbayes.protection.risk_suppression` (sdcMicro's ``localSupp``) against a
  brute-force computation and sdcMicro's documented ``francdat`` example;
  ``protect --suppress-risk R [--suppress-risk-key KEY]`` and the recipe step
  ``suppress_risk``.
* F8: linked ("ghost") columns follow their key's blanks (sdcMicro's ``ghostVars``):
  ``local_suppression(linked=...)``, ``--linked KEY=COL``.
* F9: a recipe ``pram`` step with a user transition matrix (``matrices``), inline or as a
  CSV in the long form of ``pram_matrices.csv``, checked before any work.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.protection import invariant_pram, local_suppression, risk_suppression
from sdcbayes.risk.assess import assess_closed_form

ESTIMATOR = "closed form (Benedetti-Franconi)"


@pytest.fixture
def survey(tmp_path):
    """A weighted sample with a key (region) and a column that reveals it (district)."""
    rng = np.random.default_rng(5)
    n = 400
    region = rng.choice(["north", "south", "east", "west"], n, p=[0.4, 0.3, 0.2, 0.1])
    # each district lies in one region: the district alone tells the region
    district = np.array([f"{r[:1]}{d}" for r, d in zip(region, rng.integers(1, 4, n),
                                                         strict=True)])
    frame = pd.DataFrame({
        "age": rng.choice(["0-19", "20-39", "40-59", "60+"], n),
        "sex": rng.choice(["f", "m"], n),
        "region": region,
        "district": district,
        "occupation": rng.choice([f"o{i}" for i in range(12)], n),
        "w": rng.uniform(5, 60, n).round(3),
    })
    path = tmp_path / "survey.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _recipe(tmp_path, steps, name="r.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"seed": 3, "steps": steps}))
    return path


def _summary(out):
    return json.loads((out / "summary.json").read_text())


# --------------------------------------------------------------------------- F1
def test_protect_names_the_estimator_and_its_bias_on_a_sample(capsys, tmp_path, survey):
    path, _ = survey
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex,region,occupation",
                          "--weight", "w", "--suppress-k", "3", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"risk: {ESTIMATOR}; it understates a sample's risk" in proc.stdout
    risk = _summary(out)["risk"]
    assert risk["estimator"] == ESTIMATOR
    caveat = [n for n in risk["notes"] if n.startswith("Risk before and after")]
    assert len(caveat) == 1
    assert "14.88 against a true 29.19" in caveat[0]
    assert "cannot yet measure a file with suppressed values" in caveat[0]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "14.88 against a true 29.19" in page  # in the report's notes box


def test_protect_without_weight_names_the_estimator_without_the_sample_caveat(
        capsys, tmp_path, survey):
    # without a weight the file is its own population, where the closed form is exact
    path, _ = survey
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--pram", "region",
                          "--seed", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"risk: {ESTIMATOR}\n" in proc.stdout
    risk = _summary(out)["risk"]
    assert risk["estimator"] == ESTIMATOR
    assert "notes" not in risk  # no suppression, no sample: nothing to add


def test_the_demo_numbers_the_caveat_quotes_hold():
    # the note's numbers: closed form before/after k = 3 local suppression of the demo, and
    # the truth from its population (a released record's F counts the population units
    # that match its non-blank keys)
    from sdcbayes.commands.protect import _estimator_notes
    from sdcbayes.datasets import demo_keys, load_demo
    from sdcbayes.datasets.demo import _demo_population

    demo = load_demo()
    keys = list(demo_keys())
    sample = demo.sample
    prot = local_suppression(sample, keys, k=3).frame
    closed = [assess_closed_form(Microdata(f, keys, weight="weight")).summary[
        "expected_reidentifications"] for f in (sample, prot)]
    pop = _demo_population()
    miss = prot[keys].isna().to_numpy()
    pats, inv = np.unique(miss, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    F = np.zeros(len(prot))
    for p, pat in enumerate(pats):
        ks = [k for k, m in zip(keys, pat, strict=True) if not m]
        rows = np.flatnonzero(inv == p)
        cnt = pop.groupby(ks, observed=True).size().rename("F").reset_index()
        sub = prot.iloc[rows][ks].astype(object).merge(
            cnt.astype({k: object for k in ks}), on=ks, how="left")
        F[rows] = sub["F"].to_numpy()
    assert np.all(F >= 1)
    note = _estimator_notes("weight")[0]
    for value in (closed[0], demo.truth.expected_reidentifications, closed[1],
                  float((1 / F).sum())):
        assert f"{value:.2f}" in note, (value, note)
    assert closed[1] < 0.55 * (1 / F).sum()  # the closed form is about half the truth


# --------------------------------------------------------------------------- F2
def _brute_closed_form(frame, keys, weight):
    """E(1/F | f) by summing the negative binomial F - f | f ~ NB(f, p), p = f / sum(w)."""
    f = frame.groupby(keys)[keys[0]].transform("size").to_numpy()
    total = frame.groupby(keys)[weight].transform("sum").to_numpy()
    out = np.empty(len(frame))
    for i, (fi, wi) in enumerate(zip(f, total, strict=True)):
        p = min(1.0, fi / wi)
        if p == 1.0:
            out[i] = 1 / fi
            continue
        y = np.arange(0, 20000)
        logpmf = (np.array([math.lgamma(fi + k) for k in y]) - math.lgamma(fi)
                  - np.array([math.lgamma(k + 1) for k in y])
                  + fi * math.log(p) + y * math.log1p(-p))
        out[i] = float(np.sum(np.exp(logpmf) / (fi + y)))
    return out


def test_risk_suppression_against_brute_force(survey):
    _, frame = survey
    keys = ["age", "sex", "region", "occupation"]
    brute = _brute_closed_form(frame, keys, "w")
    package = assess_closed_form(Microdata(frame, keys, weight="w")).records["risk"]
    np.testing.assert_allclose(package.to_numpy(), brute, rtol=1e-6)
    threshold = float(np.quantile(brute, 0.8))
    res = risk_suppression(frame, keys, package, threshold, key="occupation")
    above = brute > threshold
    assert above.sum() > 10 and (~above).sum() > 10
    blank = res.frame["occupation"].isna().to_numpy()
    np.testing.assert_array_equal(blank, above)
    np.testing.assert_array_equal(res.log["record"].to_numpy(), np.flatnonzero(above))
    assert (res.log["original"].to_numpy() == frame["occupation"].to_numpy()[above]).all()
    for col in ("age", "sex", "region", "district", "w"):  # only the chosen key changes
        pd.testing.assert_series_equal(res.frame[col], frame[col])
    assert res.summary["n_above_threshold"] == int(above.sum())
    assert res.summary["suppressions"] == {"occupation": int(above.sum())}
    # a blank is a wildcard: no record's risk rises
    after = assess_closed_form(Microdata(res.frame, keys, weight="w")).records["risk"]
    assert np.all(after.to_numpy() <= package.to_numpy() + 1e-12)
    # the provenance summarises the risks instead of listing them
    assert res.provenance["settings"]["risk"]["n"] == len(frame)


def test_risk_suppression_default_key_and_alignment(survey):
    _, frame = survey
    keys = ["age", "sex", "region", "occupation"]
    risk = assess_closed_form(Microdata(frame, keys, weight="w")).records["risk"]
    res = risk_suppression(frame, keys, risk, 0.05)
    assert res.summary["key"] == "occupation"  # the most levels: blanked first by default
    # a Series in another order is aligned by its index
    shuffled = risk.sample(frac=1.0, random_state=2)
    again = risk_suppression(frame, keys, shuffled, 0.05)
    pd.testing.assert_frame_equal(again.frame, res.frame)


def test_risk_suppression_francdat_as_sdcmicro_documents():
    # sdcMicro's localSupp example and test_localSupp.R: francdat, keys Key1-Key4, w,
    # localSupp(f, keyVar = "Key4", threshold = 0.15); the record risks are the IHSN
    # guide's Table 1 (seed 001): 0.1771, 0.2971 and 0.4024 exceed 0.15 (records 4, 6, 7).
    francdat = pd.DataFrame({
        "Key1": [1, 1, 1, 3, 4, 4, 6, 1], "Key2": [2, 2, 2, 3, 3, 3, 2, 2],
        "Key3": [5, 1, 1, 1, 1, 1, 1, 5], "Key4": [1, 1, 1, 5, 4, 1, 5, 1],
        "w": [18, 45.5, 39, 17, 541, 8, 5, 92]})
    keys = ["Key1", "Key2", "Key3", "Key4"]
    before = assess_closed_form(Microdata(francdat, keys, weight="w")).records["risk"]
    res = risk_suppression(francdat, keys, before, 0.15, key="Key4")
    assert res.frame["Key4"].isna().to_numpy().nonzero()[0].tolist() == [3, 5, 6]
    after = assess_closed_form(Microdata(res.frame, keys, weight="w")).records["risk"]
    # test_localSupp.R: expect_true(all(indivf$rk - indivf2$rk >= 0))
    assert np.all(before.to_numpy() - after.to_numpy() >= 0)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"threshold": 1.0}, "must be a risk in [0, 1)"),
    ({"threshold": -0.1}, "must be a risk in [0, 1)"),
    ({"threshold": 0.1, "key": "district"}, "not among the keys"),
    ({"threshold": 0.1, "risk": [0.5] * 3}, "one value per record"),
    ({"threshold": 0.1, "risk": "bad"}, "must be numbers"),
    ({"threshold": 0.1, "risk": np.full(400, 1.5)}, "outside [0, 1]"),
    ({"threshold": 0.1, "risk": pd.Series(0.5, index=np.arange(1000, 1400))},
     "index is not the frame's"),
])
def test_risk_suppression_refuses_bad_input(survey, kwargs, fragment):
    _, frame = survey
    args = {"risk": np.full(len(frame), 0.2)} | kwargs
    with pytest.raises(InputError, match=None) as err:
        risk_suppression(frame, ["age", "sex", "region"], **args)
    assert fragment in str(err.value)


def test_protect_suppress_risk(capsys, tmp_path, survey):
    path, frame = survey
    keys = ["age", "sex", "region", "occupation"]
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", ",".join(keys), "--weight",
                          "w", "--suppress-risk", "0.05", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    s = _summary(out)
    step = s["steps"][0]
    assert step["name"] == "suppress_risk"
    assert step["parameters"] == {"threshold": 0.05, "key": "occupation"}  # default stamped
    risk = assess_closed_form(Microdata(frame, keys, weight="w")).records["risk"].to_numpy()
    protected = pd.read_csv(out / "protected.csv")
    np.testing.assert_array_equal(protected["occupation"].isna().to_numpy(), risk > 0.05)
    assert s["risk"]["threshold"] == 0.05
    assert s["risk"]["before"]["n_above_threshold"] == int((risk > 0.05).sum())
    assert s["risk"]["after"]["n_above_threshold"] < s["risk"]["before"]["n_above_threshold"]
    assert "records with risk above 0.05" in proc.stdout
    assert s["information_loss"]["per_variable"]["occupation"]["n_suppressed"] == int(
        (risk > 0.05).sum())


def test_recipe_suppress_risk_runs_on_what_the_steps_before_leave(capsys, tmp_path, survey):
    path, frame = survey
    keys = ["age", "sex", "region", "occupation"]
    recipe = _recipe(tmp_path, [
        {"step": "recode", "column": "occupation", "mapping": {"o0": "o1", "o2": "o1"}},
        {"step": "suppress_risk", "threshold": 0.04, "key": "age"}])
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", ",".join(keys), "--weight",
                          "w", "--recipe", str(recipe), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    recoded = frame.assign(occupation=frame["occupation"].replace({"o0": "o1", "o2": "o1"}))
    risk = assess_closed_form(Microdata(recoded, keys, weight="w")).records["risk"].to_numpy()
    protected = pd.read_csv(out / "protected.csv")
    np.testing.assert_array_equal(protected["age"].isna().to_numpy(), risk > 0.04)


@pytest.mark.parametrize("args, fragments", [
    (["--suppress-risk", "1"], ["threshold (--suppress-risk) must be a number >= 0 and < 1"]),
    (["--suppress-risk", "-0.2"], ["threshold (--suppress-risk) must be a number >= 0"]),
    (["--suppress-risk-key", "age"], ["--suppress-risk-key chooses the key", "--suppress-risk R"]),
    (["--suppress-risk", "0.1", "--suppress-risk-key", "district"],
     ["--suppress-risk-key 'district' is not among --keys", "add it to --keys"]),
    (["--linked", "region=district"], ["--linked follows the blanks", "--suppress-k K"]),
    (["--suppress-k", "3", "--linked", "region"], ["--linked 'region' must read KEY=COL1,COL2"]),
    (["--suppress-k", "3", "--linked", "region=sex"],
     ["--linked: 'sex' (linked to 'region') is a key", "leave it out of --linked"]),
    (["--suppress-k", "3", "--linked", "region=w"], ["'w' (linked to 'region') is the weight"]),
    (["--suppress-k", "3", "--linked", "district=region"],
     ["--linked: 'district' is not among the keys the step suppresses"]),
    (["--suppress-k", "3", "--linked", "region=distrct"], ["--linked 'distrct'"]),
])
def test_protect_new_options_refused_before_any_work(capsys, tmp_path, survey, protect_no_work,
                                                      args, fragments):
    path, _ = survey
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex,region", "--weight",
                          "w", *args, "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()


@pytest.mark.parametrize("step, fragments", [
    ({"step": "suppress_risk"}, ["missing parameter(s) ['threshold']"]),
    ({"step": "suppress_risk", "threshold": 1.5}, ["step 1 (suppress_risk): threshold must be"]),
    ({"step": "suppress_risk", "threshold": 0.1, "key": "district"},
     ["step 1 (suppress_risk): key 'district' is not among --keys"]),
    ({"step": "suppress_risk", "threshold": 0.1, "linked": ["district"]},
     ["step 1 (suppress_risk): linked must map each key"]),
    ({"step": "suppress", "k": 3, "linked": {"region": "district", "sex": ["region"]}},
     ["'region' (linked to 'sex') is a key of the step"]),
])
def test_recipe_new_parameters_refused_before_any_work(capsys, tmp_path, survey, protect_no_work,
                                                       step, fragments):
    path, _ = survey
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex,region", "--recipe",
                          str(_recipe(tmp_path, [step])), "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()


def test_suppress_risk_is_a_listed_step():
    from sdcbayes.commands.protect import STEPS

    assert STEPS["suppress_risk"] == (("threshold",), ("key", "linked", "household_keys"))
    assert "linked" in STEPS["suppress"][1] and "matrices" in STEPS["pram"][1]


def test_chain_check_knows_suppress_risk_and_linked_blanks(capsys, tmp_path, survey,
                                                           protect_no_work):
    # a later step that needs complete values in a column the suppression may blank
    path, _ = survey
    out = tmp_path / "o"
    for steps, fragment in (
        ([{"step": "suppress_risk", "threshold": 0.1, "key": "region"},
          {"step": "pram", "columns": ["age"], "strata": ["region"]}],
         "stratum column 'region' may have missing values after step 1 (suppress_risk)"),
        ([{"step": "suppress", "k": 3, "keys": ["age", "sex", "region"],
           "linked": {"region": ["district"]}},
          {"step": "pram", "columns": ["age"], "strata": ["district"]}],
         "stratum column 'district' may have missing values after step 1 (suppress)"),
    ):
        proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex,region",
                              "--recipe", str(_recipe(tmp_path, steps)), "--out", str(out))
        assert_one_line_error(proc, fragment)


# --------------------------------------------------------------------------- F8
def test_linked_column_follows_the_key_so_it_no_longer_reveals_it(survey):
    _, frame = survey
    keys = ["age", "sex", "region", "occupation"]
    plain = local_suppression(frame, keys, k=3)
    blanked = plain.frame["region"].isna().to_numpy()
    assert blanked.sum() > 0
    # without links the district gives the suppressed region back, for every such record
    region_of = frame.groupby("district")["region"].first()
    assert region_of.groupby(level=0).size().max() == 1
    recovered = plain.frame.loc[blanked, "district"].map(region_of)
    assert (recovered.to_numpy() == frame.loc[blanked, "region"].to_numpy()).all()

    res = local_suppression(frame, keys, k=3, linked={"region": "district"})
    pd.testing.assert_frame_equal(res.frame[keys], plain.frame[keys])  # keys as without
    np.testing.assert_array_equal(res.frame["district"].isna().to_numpy(), blanked)
    assert res.summary["linked"] == {"region": ["district"]}
    assert res.summary["linked_suppressions"] == {"district": int(blanked.sum())}
    rows = res.log[res.log["variable"] == "district"]
    assert (rows["linked_to"] == "region").all()
    np.testing.assert_array_equal(rows["record"].to_numpy(), np.flatnonzero(blanked))


def test_linked_counts_only_new_blanks_and_leaves_missing_values(survey):
    _, frame = survey
    f = frame.copy()
    f.loc[:9, "district"] = np.nan  # already missing: not a new blank
    res = local_suppression(f, ["age", "sex", "region", "occupation"], k=3,
                            linked={"region": ["district"]})
    new = res.frame["region"].isna().to_numpy() & f["district"].notna().to_numpy()
    assert res.summary["linked_suppressions"]["district"] == int(new.sum())


@pytest.mark.parametrize("linked, fragment", [
    ({"region": ["sex"]}, "'sex' (linked to 'region') is a key of the step"),
    ({"district": ["region"]}, "not among the keys"),
    ({"region": ["nope"]}, "not found in the frame"),
    (["district"], "linked must map a key"),
])
def test_linked_refused(survey, linked, fragment):
    _, frame = survey
    with pytest.raises(InputError) as err:
        local_suppression(frame, ["age", "sex", "region"], k=3, linked=linked)
    assert fragment in str(err.value)


def test_protect_linked_option(capsys, tmp_path, survey):
    path, _ = survey
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex,region,occupation",
                          "--weight", "w", "--suppress-k", "3", "--linked", "region=district",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    protected = pd.read_csv(out / "protected.csv")
    region_blank = protected["region"].isna()
    assert region_blank.sum() > 0
    assert protected.loc[region_blank, "district"].isna().all()
    s = _summary(out)
    assert s["steps"][0]["parameters"]["linked"] == {"region": ["district"]}
    assert s["steps"][0]["result"]["linked_suppressions"] == {"district": int(region_blank.sum())}
    assert s["information_loss"]["per_variable"]["district"]["n_suppressed"] == int(
        region_blank.sum())
    log = pd.read_csv(out / "log.csv")
    assert set(log.loc[log["variable"] == "district", "linked_to"]) == {"region"}


# --------------------------------------------------------------------------- F9
def test_pram_matrix_as_labels_matches_numeric_levels():
    df = pd.DataFrame({"r": np.repeat([1, 2, 3], [50, 30, 20])})
    rows = {"1": {"1": 0.9, "2": 0.1}, "2": {"2": 1.0}, 3: {3: 0.5, 1: 0.5}}
    res = invariant_pram(df, "r", matrices={"r": rows}, seed=1)
    np.testing.assert_allclose(res.summary["matrices"]["r"]["all"],
                               [[0.9, 0.1, 0], [0, 1, 0], [0.5, 0, 0.5]])
    # T'R = (55, 35, 10) against T = (50, 30, 20): not invariant, and said so
    assert res.summary["user_matrices"]["r"] == {"invariant": False,
                                                 "max_expected_count_change": 10.0}
    ident = invariant_pram(df, "r", matrices={"r": {1: {1: 1}, 2: {2: 1}, 3: {3: 1}}}, seed=1)
    assert ident.summary["user_matrices"]["r"]["invariant"] is True
    assert ident.summary["changed"] == {"r": 0}


@pytest.mark.parametrize("rows, fragment", [
    ({"1": {"1": 1}, "2": {"2": 1}}, "no row for the level '3'"),
    ({"1": {"1": 1}, "2": {"2": 1}, "3": {"9": 1}}, "names the level '9'"),
    ({"1": {"1": 0.5}, "2": {"2": 1}, "3": {"3": 1}}, "do not sum to 1"),
])
def test_pram_matrix_labels_refused(rows, fragment):
    df = pd.DataFrame({"r": np.repeat([1, 2, 3], [50, 30, 20])})
    with pytest.raises(InputError) as err:
        invariant_pram(df, "r", matrices={"r": rows}, seed=1)
    assert fragment in str(err.value)


def test_recipe_pram_matrices_from_the_long_form_protect_writes(capsys, tmp_path, survey):
    path, frame = survey
    first = tmp_path / "first"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--pram", "region",
                          "--seed", "7", "--out", str(first), "-q")
    assert proc.returncode == 0, proc.stderr
    written = pd.read_csv(first / "pram_matrices.csv")
    sub = tmp_path / "recipes"
    sub.mkdir()
    (sub / "m.csv").write_bytes((first / "pram_matrices.csv").read_bytes())
    # the file's path is read from the recipe's folder
    recipe = _recipe(sub, [{"step": "pram", "columns": ["region"], "matrices": "m.csv"}])
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--recipe",
                          str(recipe), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    s = _summary(out)
    result = s["steps"][0]["result"]
    # the invariant matrix the first run drew, given back: still invariant
    assert result["user_matrices"]["region"]["invariant"] is True
    assert s["steps"][0]["parameters"]["matrices"] == str(sub / "m.csv")
    again = pd.read_csv(out / "pram_matrices.csv")
    pd.testing.assert_frame_equal(again.drop(columns="step"), written.drop(columns="step"))
    assert result["changed"]["region"] > 0


def test_recipe_pram_inline_matrix(capsys, tmp_path, survey):
    path, frame = survey
    swap = {"north": {"north": 0.5, "south": 0.5}, "south": {"south": 1},
            "east": {"east": 1}, "west": {"west": 1}}
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--recipe",
                          str(_recipe(tmp_path, [{"step": "pram", "columns": ["region"],
                                                  "matrices": {"region": swap}}])),
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    protected = pd.read_csv(out / "protected.csv")
    moved = (protected["region"] != frame["region"])
    # only north records move, and only to south
    assert moved.sum() > 0
    assert (frame.loc[moved, "region"] == "north").all()
    assert (protected.loc[moved, "region"] == "south").all()
    assert _summary(out)["steps"][0]["result"]["user_matrices"]["region"]["invariant"] is False


@pytest.mark.parametrize("matrices, fragments", [
    ({"region": {"north": {"north": 0.7}}}, ["row 'north', sums to 0.7", "normalise it"]),
    ({"region": {"north": {"north": 1.2, "south": -0.2}}}, ["between 0 and 1"]),
    ({"age": {"0-19": {"0-19": 1}}}, ["not among the step's columns"]),
    ({"region": {"north": {"north": 1}, "south": {"south": 1}, "east": {"east": 1}}},
     ["step 1 (pram): matrices['region'] has no row for the level 'west'"]),
    ({"region": {"north": {"nord": 1}, "south": {"south": 1}, "east": {"east": 1},
                 "west": {"west": 1}}}, ["names the level 'nord'"]),
    ("missing.csv", ["matrices file not found", "recipe's folder"]),
    ([1, 2], ["matrices must be the path of a CSV"]),
])
def test_recipe_pram_matrices_refused_before_any_work(capsys, tmp_path, survey, protect_no_work,
                                                      matrices, fragments):
    path, _ = survey
    out = tmp_path / "o"
    recipe = _recipe(tmp_path, [{"step": "pram", "columns": ["region"], "matrices": matrices}])
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--recipe",
                          str(recipe), "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()


def test_recipe_pram_matrices_file_with_several_strata_refused(capsys, tmp_path, survey,
                                                               protect_no_work):
    path, _ = survey
    pd.DataFrame({"variable": ["region"] * 2, "stratum": ["f", "m"], "from": ["north"] * 2,
                  "to": ["north"] * 2, "probability": [1.0, 1.0]}).to_csv(
        tmp_path / "m.csv", index=False)
    recipe = _recipe(tmp_path, [{"step": "pram", "columns": ["region"], "matrices": "m.csv"}])
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--recipe",
                          str(recipe), "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "several strata for 'region'", "keep one stratum's rows")


def test_protect_measures_without_raw_python_warnings(tmp_path, survey):
    # the closed form's own warning of a file without weights would reach the terminal as
    # a raw Python warning, once per measurement (before, the suppress_risk step, after)
    from clitools import run_cli

    path, _ = survey
    proc = run_cli("protect", str(path), "--keys", "age,sex,region", "--suppress-risk", "0.5",
                   "--out", "o", "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Warning:" not in proc.stderr and "warnings.warn" not in proc.stderr, proc.stderr
    assert (tmp_path / "o" / "summary.json").exists()


def test_terminal_keeps_the_suppression_sub_row_under_k_anonymity(capsys, tmp_path, survey):
    """The 'as the suppression judges it' row refines the k-anonymity row, not the threshold's."""
    path, _ = survey
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex,region,occupation",
                          "--weight", "w", "--suppress-k", "3", "--suppress-risk", "0.05",
                          "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = [ln.strip() for ln in proc.stdout.splitlines()]
    k_row = next(i for i, ln in enumerate(lines) if ln.startswith("records violating 3-anon"))
    assert lines[k_row + 1].startswith("as the suppression judges it"), lines
    assert lines[k_row + 2].startswith("records with risk above 0.05"), lines


# --------------------------------------------------------------------------- one definition
def test_stamped_summarises_named_arguments():
    # @stamped(summarise=...): the named argument is stamped as its digest, the rest as
    # @stamped stamps them
    from sdcbayes.protection.base import ProtectionResult, stamped

    @stamped(summarise={"values": lambda v: {"n": len(v)}})
    def method(frame, columns, values, level=2):
        return ProtectionResult(frame.copy(), pd.DataFrame())

    frame = pd.DataFrame({"a": [1, 2, 3]})
    res = method(frame, "a", [0.1, 0.2, 0.3])
    assert res.provenance["model"] == "method"
    assert res.provenance["settings"] == {"columns": "a", "values": {"n": 3}, "level": 2}
    assert res.provenance["data"]["variables"] == ["a"]
    with pytest.raises(TypeError, match="names no argument"):
        stamped(summarise={"vals": len})(method.__wrapped__)


def test_risk_suppression_is_stamped_as_every_method_with_the_risks_summarised(survey):
    _, frame = survey
    keys = ["age", "sex", "region", "occupation"]
    risk = assess_closed_form(Microdata(frame, keys, weight="w")).records["risk"].to_numpy()
    risk = risk.copy()
    risk[[4, 9]] = np.nan
    res = risk_suppression(frame, keys, risk, 0.05, linked={"region": ["district"]})
    st = res.provenance["settings"]
    # every argument but the frame, as given (the chosen key is in the summary), the
    # per-record risks as a digest: never n floats
    assert set(st) == {"keys", "risk", "threshold", "key", "linked", "household",
                       "household_keys"}
    assert st["risk"] == {"n": len(frame), "n_missing": 2,
                          "max": pytest.approx(float(np.nanmax(risk)), rel=1e-15)}
    assert st["key"] is None and res.summary["key"] == "occupation"
    assert st["linked"] == {"region": ["district"]}
    assert res.provenance["model"] == "risk_suppression"
    assert res.provenance["data"] == {"n_records": len(frame), "n_columns": frame.shape[1],
                                      "variables": keys}


def test_the_default_risk_key_is_one_function_for_library_and_command(capsys, tmp_path,
                                                                       survey, monkeypatch):
    from sdcbayes.protection import suppression

    path, frame = survey
    keys = ["age", "sex", "region", "occupation"]
    assert suppression.default_risk_key(frame, keys) == "occupation"  # the most levels
    monkeypatch.setattr(suppression, "default_risk_key", lambda frame, keys: "sex")
    risk = np.full(len(frame), 0.5)
    assert risk_suppression(frame, keys, risk, 0.1).summary["key"] == "sex"
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", ",".join(keys), "--weight",
                          "w", "--suppress-risk", "0.05", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert _summary(out)["steps"][0]["parameters"]["key"] == "sex"


def test_protect_checks_linked_with_the_library_rules(capsys, tmp_path, survey, protect_no_work,
                                                      monkeypatch):
    # the keys and strata rules are suppression._check_linked's, named as the option
    from sdcbayes.protection import suppression

    path, frame = survey
    seen = []
    real_check = suppression._check_linked

    def check(frame, keys, strata, linked):
        seen.append((list(keys), strata, linked))
        raise InputError("linked: refused by the library")

    monkeypatch.setattr(suppression, "_check_linked", check)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex,region",
                          "--weight", "w", "--suppress-k", "3", "--linked",
                          "region=district", "--out", str(out))
    assert_one_line_error(proc, "--linked: refused by the library")
    assert seen == [(["age", "sex", "region"], None, {"region": ["district"]})]
    # a stratum in the recipe, in the library's wording (protect_no_work's patch stays)
    monkeypatch.setattr(suppression, "_check_linked", real_check)
    recipe = _recipe(tmp_path, [{"step": "suppress", "k": 3, "keys": ["age", "sex"],
                                 "strata": ["region"], "linked": {"sex": ["region"]}}])
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--recipe",
                          str(recipe), "--out", str(out))
    assert_one_line_error(proc, "step 1 (suppress): linked: 'region' (linked to 'sex') is a "
                          "stratum of the step")
    with pytest.raises(InputError, match="'region' \\(linked to 'sex'\\) is a stratum"):
        local_suppression(frame, ["age", "sex"], k=3, strata=["region"],
                          linked={"sex": ["region"]})


def test_pram_matrix_rows_are_checked_in_one_place(capsys, tmp_path, survey, protect_no_work,
                                                   monkeypatch):
    from sdcbayes.protection import pram

    # the mapping form's rows, named by their level (as protect writes it)
    with pytest.raises(InputError, match="m, row '2', sums to 0.7;"):
        pram.check_matrix_rows({2.0: {2.0: 0.7}}, "m")
    with pytest.raises(InputError, match="m, row 'a', holds True; give probabilities"):
        pram.check_matrix_rows({"a": {"a": True}}, "m")
    with pytest.raises(InputError, match="holds nan"):
        pram.check_matrix_rows({"a": {"a": float("nan")}}, "m")
    pram.check_matrix_rows({"a": {"a": 0.1 * 3, "b": 0.7}}, "m")  # rounding: within 1e-9
    # protect's check before any work is this one
    monkeypatch.setattr(pram, "check_matrix_rows", lambda rows, name: (_ for _ in ()).throw(
        InputError(f"{name}: refused by pram")))
    path, _ = survey
    recipe = _recipe(tmp_path, [{"step": "pram", "columns": ["region"],
                                 "matrices": {"region": {"north": {"north": 1}}}}])
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--recipe",
                          str(recipe), "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "step 1 (pram): the matrix of 'region': refused by pram")


def test_level_text_is_the_one_spelling_of_a_level():
    from sdcbayes.commands import protect
    from sdcbayes.protection.pram import level_text

    assert [level_text(v) for v in (2.0, np.float32(3.0), np.int64(4), 2.5, "a", True)] == [
        "2", "3", "4", "2.5", "a", "True"]
    assert not hasattr(protect, "_as_text")
    # protect matches a level given as text with it (a float column's 3.0 is "3")
    lookup = protect._level_lookup(pd.Series([1.0, 3.0, np.float32(2.0)], dtype=object),
                                   ["3", "2"], "--recode")
    assert lookup == {"3": 3.0, "2": 2.0}
