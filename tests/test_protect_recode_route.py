"""``protect --model latent-class`` with recoded keys and with missing key values.

The released-file risk scores a key recoded level by level (recode, band, top and
bottom coding) through a complete map from each level of the fit to its released value,
:func:`sdcbayes.commands.protect._key_level_maps`, made by running the steps on the
levels themselves. Checked here against the same steps run on the demo file (every
record's released value is the map's image of its original value, or blank), and the
refusals that remain (PRAM, noise, micro-aggregation of a key; ``--missing`` without
the model; missing key values without ``--missing``), all before any work. No test
here fits the model: the calls it would make are captured instead, and the maps are
scored through ``assess_released`` from a hand-built posterior on a census (every
record's risk 1/F by brute force); a refusal of ``assess_released`` reaches the user
as protect's bug, with the command line's advice.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes.commands import protect

DEMO_KEYS = ["age_group", "sex", "marital_status", "education", "country_of_birth",
             "household_size", "age"]


@pytest.fixture(scope="module")
def demo():
    from sdcbayes.datasets import load_demo

    return load_demo().sample


@pytest.fixture(scope="module")
def demo_md(demo):
    from sdcbayes.microdata import Microdata

    return Microdata(demo, keys=DEMO_KEYS, weight="weight")


def _checked(raw, frame, keys=DEMO_KEYS):
    """The recipe's steps as ``protect`` checks them before any work."""
    steps = [protect._validate_step(i, dict(s), frame, keys, source="demo", weight="weight")
             for i, s in enumerate(raw, start=1)]
    protect._check_recode_levels(steps, frame)
    protect._check_step_chain(steps, frame)
    return steps


def _applied(steps, frame):
    """The steps run on the file, as ``protect`` runs them."""
    rng = np.random.default_rng(1)
    current = frame
    for s in steps:
        current = protect._run_step(s, current, rng).frame
    return current


FOREIGN = {f"F{i:03d}": "foreign" for i in range(1, 151)}  # every declared foreign category
RECIPES = {
    "recode": [{"step": "recode", "column": "age_group",
                "mapping": {"0-9": "0-19", "10-19": "0-19", "60-69": "60+", "70-79": "60+",
                            "80+": "60+"}}],
    "recode-declared-categories": [{"step": "recode", "column": "country_of_birth",
                                    "mapping": FOREIGN}],
    "band": [{"step": "band", "column": "age", "breaks": [0, 18, 40, 65, 200]}],
    "top-code": [{"step": "top_code", "column": "age", "threshold": 80}],
    "bottom-code": [{"step": "bottom_code", "column": "age", "threshold": 5,
                     "replacement": 3}],
    "combined": [
        {"step": "top_code", "column": "age", "threshold": 85, "replacement": 90},
        {"step": "bottom_code", "column": "age", "threshold": 2},
        {"step": "band", "column": "age", "breaks": [0, 20, 40, 60, 80, 100],
         "labels": ["a", "b", "c", "d", "e"]},
        {"step": "recode", "column": "age", "mapping": {"d": "60+", "e": "60+"}},
        {"step": "recode", "column": "age_group", "mapping": {"0-9": "0-19", "10-19": "0-19"}},
        {"step": "recode", "column": "age_group", "mapping": {"0-19": "young"}},
    ],
    "recode-after-suppress": [
        {"step": "suppress", "k": 3, "keys": ["age_group", "sex", "country_of_birth"]},
        {"step": "recode", "column": "country_of_birth", "mapping": FOREIGN},
        {"step": "recode", "column": "age_group", "mapping": {"70-79": "70+", "80+": "70+"}},
    ],
}
RECODED = {
    "recode": {"age_group": (9, 6)},
    "recode-declared-categories": {"country_of_birth": (151, 2)},
    "band": {"age": (100, 4)},
    "top-code": {"age": (100, 81)},
    "bottom-code": {"age": (100, 96)},
    "combined": {"age": (100, 4), "age_group": (9, 8)},
    "recode-after-suppress": {"country_of_birth": (151, 2), "age_group": (9, 8)},
}


@pytest.mark.parametrize("name", list(RECIPES))
def test_level_maps_give_every_records_released_value(demo, demo_md, name):
    steps = _checked(RECIPES[name], demo)
    maps = protect._key_level_maps(steps, demo, demo_md, DEMO_KEYS)
    released = _applied(steps, demo)
    # the recoded keys, each complete: every level of the fit, observed or only declared
    assert set(maps) == set(RECODED[name])
    counts = protect._recode_counts(maps)
    for k, (n_levels, n_values) in RECODED[name].items():
        assert list(maps[k]) == list(demo_md.levels[k])
        assert counts[k] == {"levels": n_levels, "released_values": n_values}
    for k in DEMO_KEYS:
        orig = demo[k].astype(object).to_numpy()
        rel = released[k].astype(object).to_numpy()
        shown = ~pd.isna(rel)
        expected = np.array([maps[k][v] for v in orig], dtype=object) if k in maps else orig
        assert list(rel[shown]) == list(expected[shown]), k
        assert shown.sum() > 0
    if name == "recode-after-suppress":
        # the suppression blanked some values; they stay blank, the rest are the map's
        assert (~pd.isna(released[DEMO_KEYS[:5]].astype(object))).to_numpy().sum() < \
            demo[DEMO_KEYS[:5]].size


def test_unobserved_declared_categories_are_mapped_too(demo, demo_md):
    # 101 of the 151 country_of_birth categories have no sample record: inferring the map
    # from the file's pairs would miss them, the levels do not
    steps = _checked(RECIPES["recode-declared-categories"], demo)
    image = protect._key_level_maps(steps, demo, demo_md, DEMO_KEYS)["country_of_birth"]
    unseen = set(demo_md.levels["country_of_birth"]) - set(demo["country_of_birth"])
    assert len(unseen) == 101
    assert {image[v] for v in unseen} == {"foreign"}
    assert image["native"] == "native"


def test_steps_that_change_no_key_give_no_map(demo, demo_md):
    steps = _checked([{"step": "suppress", "k": 3, "keys": ["age_group", "sex"]},
                      {"step": "top_code", "column": "age", "threshold": 200}], demo)
    # a top code above every value changes nothing: the call stays today's
    assert protect._key_level_maps(steps, demo, demo_md, DEMO_KEYS) == {}


def test_the_steps_are_not_changed_by_the_map(demo, demo_md):
    steps = _checked(RECIPES["combined"], demo)
    before = json.dumps(steps, default=str)
    protect._key_level_maps(steps, demo, demo_md, DEMO_KEYS)
    assert json.dumps(steps, default=str) == before


def test_missing_category_maps_the_missing_level_to_itself():
    from sdcbayes.microdata import Microdata

    frame = pd.DataFrame({"a": ["x", "y", "z", None] * 10, "b": ["u", "v"] * 20,
                          "w": 10.0})
    md = Microdata(frame, keys=["a", "b"], weight="w", missing="category")
    steps = _checked([{"step": "recode", "column": "a", "mapping": {"x": "xy", "y": "xy"}}],
                     frame, keys=["a", "b"])
    maps = protect._key_level_maps(steps, frame, md, ["a", "b"])
    assert maps == {"a": {"x": "xy", "y": "xy", "z": "z", protect.MISSING_LEVEL:
                          protect.MISSING_LEVEL}}
    md = Microdata(frame, keys=["a", "b"], weight="w", missing="drop")
    assert protect._key_level_maps(steps, frame, md, ["a", "b"]) == {
        "a": {"x": "xy", "y": "xy", "z": "z"}}


# ---------------------------------------------------------------- the call it makes
class _Fit:
    idata = object()


class _Released:
    def __init__(self):
        self.summary = {"diagnostics": {}}


@pytest.mark.parametrize("recodes", [None, {}, {"sex": {"male": "m", "female": "f"}}])
def test_assess_released_gets_recodes_only_when_a_key_is_recoded(monkeypatch, demo_md,
                                                                 recodes):
    import sdcbayes.risk.released as released_mod

    calls = []

    def fake(md, frame, posterior, **kwargs):
        calls.append(kwargs)
        return _Released()

    monkeypatch.setattr(released_mod, "assess_released", fake)
    protect._score_released(demo_md, None, _Fit(), quiet=True, recodes=recodes)
    assert calls == [{"recodes": recodes} if recodes else {}]


def test_a_scoring_refusal_is_reported_as_protects_bug_with_cli_advice(monkeypatch,
                                                                      demo_md):
    """assess_released's refusals speak to Python callers (recodes=, Microdata(...)); one
    that gets past protect's checks is protect's bug: CLI advice, the detail for the
    report, one line."""
    import sdcbayes.risk.released as released_mod
    from sdcbayes.exceptions import InputError

    def fake(md, frame, posterior, **kwargs):
        raise InputError("3 released value(s) of key 'sex' differ from the original: pass "
                         "recodes={'sex': {...}} (every level of the fit)")

    monkeypatch.setattr(released_mod, "assess_released", fake)
    with pytest.raises(InputError) as err:
        protect._score_released(demo_md, None, _Fit(), quiet=True)
    msg = str(err.value)
    assert "\n" not in msg
    head, report = msg.split("(for the report: ")
    assert "a bug in protect, please report it" in head
    assert "meanwhile use --model closed-form" in head
    assert "recodes=" not in head and "Microdata" not in head
    assert report.startswith("3 released value(s) of key 'sex'")


def test_protects_level_maps_score_a_census_exactly():
    """The level maps of a recipe (top coding with a fractional replacement on an integer
    key, a band, a recode, then suppression) through assess_released on the protected
    file: on a census (N = n) every record's risk is 1/F, F counted by brute force over
    the released values (a new blank matches anything), under --missing category and
    drop (reviewer's r10: max |risk F - 1| 1e-15, ER 98.37 and 82.37)."""
    from test_released import _posterior

    from sdcbayes.microdata import MISSING_LEVEL, Microdata
    from sdcbayes.risk.released import assess_released

    rng = np.random.default_rng(5)
    n = 400
    df = pd.DataFrame({"age": rng.choice(["0-19", "20-39", "40-59", "60+"], n),
                       "sex": rng.choice(["f", "m"], n), "hh": rng.integers(1, 8, n),
                       "yrs": rng.integers(0, 90, n), "w": 1.0})
    df["age"] = df["age"].astype(object)
    df.loc[rng.random(n) < 0.05, "age"] = None
    keys = ["age", "sex", "hh", "yrs"]
    ers = {}
    for policy in ("category", "drop"):
        steps = _checked([
            {"step": "top_code", "column": "hh", "threshold": 5, "replacement": 5.5},
            {"step": "band", "column": "yrs", "breaks": [0, 30, 60, 90]},
            {"step": "recode", "column": "age", "mapping": {"0-19": "0-39", "20-39": "0-39"}},
            {"step": "suppress", "k": 3, "keys": keys}], df, keys=keys)
        md = Microdata(df, keys=keys, weight="w", missing=policy)
        maps = protect._key_level_maps(steps, df, md, keys)
        assert sorted(maps) == ["age", "hh", "yrs"]
        rel = _applied(steps, df)
        kept = np.asarray(md.record_cell) >= 0
        idata, *_ = _posterior(md, N=float(kept.sum()))
        res = assess_released(md, rel, idata, recodes=maps, N=float(kept.sum()))
        # every record's released value, the original's missing value as its level
        pop = pd.DataFrame({k: [MISSING_LEVEL if pd.isna(x) else maps[k][x] if k in maps
                                else x for x in df[k].astype(object)] for k in keys})
        newb = (rel[keys].isna() & df[keys].notna()).to_numpy()
        assert newb.sum() > 0 and res.summary["n_blanks"] == int(newb[kept].sum())
        idx = np.flatnonzero(kept)
        F = np.array([np.all([np.ones(idx.size, bool) if newb[i, j] else
                              (pop[k].iloc[idx] == pop[k].iloc[i]).to_numpy()
                              for j, k in enumerate(keys)], axis=0).sum() for i in idx])
        risk = res.records["risk"].to_numpy()
        np.testing.assert_allclose(risk[idx], 1 / F, rtol=1e-12, atol=0)
        assert np.isnan(risk[~kept]).all()
        assert res.summary["n_recoded_patterns"] > 0
        ers[policy] = res.summary["expected_reidentifications"]
        assert ers[policy] == pytest.approx((1 / F).sum(), rel=1e-12)
    assert ers == pytest.approx({"category": 98.3679, "drop": 82.3679}, abs=1e-4)


# ---------------------------------------------------------------- through the command
def _survey(n: int = 400, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.choice(["0-19", "20-39", "40-59", "60+"], n),
        "sex": rng.choice(["f", "m"], n),
        "region": rng.choice(["north", "south", "east", "west"], n),
        "hhsize": rng.integers(1, 7, n),
        "income": rng.gamma(2.0, 1000.0, n).round(2),
        "w": rng.uniform(5, 60, n).round(3),
    })


@pytest.fixture
def survey_file(tmp_path):
    path = tmp_path / "survey.csv"
    _survey().to_csv(path, index=False)
    return path


class _Reached(Exception):
    """Raised in place of the fit: the checks passed."""


@pytest.fixture
def at_the_fit(monkeypatch):
    """Stop the command where it would fit, keeping the fit's input and the level maps."""
    seen = {}
    real = protect._key_level_maps

    def maps(*args, **kwargs):
        seen["maps"] = real(*args, **kwargs)
        return seen["maps"]

    def fit(md, *args, **kwargs):
        seen["md"] = md
        raise _Reached

    monkeypatch.setattr(protect, "_key_level_maps", maps)
    monkeypatch.setattr(protect, "_fit_latent_class", fit)
    return seen


@pytest.mark.parametrize("args, fragments", [
    (["--pram", "region", "--seed", "1"],
     ["step 1 (pram) changes the values of key(s) region at random"]),
    (["--nayak-zhang-xi", "0.5"], ["step 1 (nayak_zhang) changes the values of key(s)",
                                   "at random"]),
    (["--microaggregate", "hhsize"],
     ["step 1 (microaggregate) changes the values of key(s) hhsize to a value per group of "
      "records"]),
    (["--noise", "hhsize,income"],
     ["step 1 (noise) changes the values of key(s) hhsize at random"]),
    (["--recode", "age:0-19+20-39=0-39", "--pram", "region"],
     ["step 2 (pram) changes the values of key(s) region"]),
])
def test_random_steps_on_keys_are_still_refused_before_any_work(
        capsys, tmp_path, survey_file, protect_no_work, args, fragments):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(survey_file), "--keys",
                          "age,sex,region,hhsize", "--weight", "w",
                          "--model", "latent-class", *args, "--out", str(out))
    assert_one_line_error(proc, *fragments, "no function of the record's own",
                          "recode, band, top_code, bottom_code", "use --model closed-form",
                          "out of the step")
    assert not out.exists()


def test_a_recoded_weight_is_still_refused(capsys, tmp_path, survey_file, protect_no_work):
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "top_code", "column": "w", "threshold": 50}]}))
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(survey_file), "--keys", "age,sex",
                          "--weight", "w", "--model", "latent-class", "--recipe", str(recipe),
                          "--out", str(out))
    assert_one_line_error(proc, "step 1 (top_code) changes the weight column 'w'",
                          "--model closed-form")
    assert not out.exists()


@pytest.mark.parametrize("args, recoded", [
    (["--recode", "age:0-19+20-39=0-39", "--suppress-k", "3"],
     {"age": {"0-19": "0-39", "20-39": "0-39", "40-59": "40-59", "60+": "60+"}}),
    (["--suppress-k", "3"], {}),
])
def test_recoded_keys_reach_the_fit_with_their_maps(capsys, tmp_path, survey_file,
                                                    at_the_fit, args, recoded):
    out = tmp_path / "o"
    with pytest.raises(_Reached):
        run_in_process(capsys, "protect", str(survey_file), "--keys", "age,sex,region",
                       "--weight", "w", "--model", "latent-class", *args, "--out", str(out))
    assert at_the_fit["maps"] == recoded
    assert at_the_fit["md"].missing == "wildcard"  # no missing keys: Microdata's default


def test_recipe_band_and_top_code_of_keys_reach_the_fit(capsys, tmp_path, survey_file,
                                                       at_the_fit):
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "suppress", "k": 3, "keys": ["age", "sex"]},
        {"step": "top_code", "column": "hhsize", "threshold": 5},
        {"step": "band", "column": "hhsize", "breaks": [1, 3, 5], "labels": ["1-2", "3-5"],
         "right": False}]}))
    with pytest.raises(_Reached):
        run_in_process(capsys, "protect", str(survey_file), "--keys", "age,sex,hhsize",
                       "--weight", "w", "--model", "latent-class", "--recipe", str(recipe),
                       "--out", str(tmp_path / "o"))
    assert at_the_fit["maps"] == {"hhsize": {1: "1-2", 2: "1-2", 3: "3-5", 4: "3-5",
                                             5: "3-5", 6: "3-5"}}


def test_missing_with_closed_form_is_refused_before_any_work(capsys, tmp_path, survey_file,
                                                             protect_no_work):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(survey_file), "--keys", "age,sex",
                          "--weight", "w", "--suppress-k", "3", "--missing", "category",
                          "--out", str(out))
    assert_one_line_error(proc, "--missing sets the latent-class fit",
                          "--model closed-form fits nothing", "match every value",
                          "add --model latent-class, or leave it out")
    assert not out.exists()


@pytest.fixture
def holes_file(tmp_path):
    frame = _survey()
    frame.loc[[3, 7], "region"] = np.nan
    frame.loc[[7, 9], "sex"] = np.nan
    path = tmp_path / "holes.csv"
    frame.to_csv(path, index=False)
    return path


def test_missing_keys_without_missing_are_refused_with_the_way_out(capsys, tmp_path,
                                                                   holes_file, protect_no_work):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(holes_file), "--keys", "age,sex,region",
                          "--weight", "w", "--suppress-k", "3", "--model", "latent-class",
                          "--out", str(out))
    assert_one_line_error(proc, "3 record(s) of the input have a missing value of key(s) "
                          "sex, region", "--missing category", "--missing drop",
                          "--model closed-form")
    assert not out.exists()


@pytest.mark.parametrize("policy", ["category", "drop"])
def test_missing_keys_with_missing_reach_the_fit_read_as_asked(capsys, tmp_path, holes_file,
                                                               at_the_fit, policy):
    with pytest.raises(_Reached):
        run_in_process(capsys, "protect", str(holes_file), "--keys", "age,sex,region",
                       "--weight", "w", "--recode", "age:0-19+20-39=0-39", "--suppress-k",
                       "3", "--model", "latent-class", "--missing", policy,
                       "--out", str(tmp_path / "o"))
    md = at_the_fit["md"]
    assert md.missing == policy
    assert set(at_the_fit["maps"]) == {"age"}


def test_terminal_line_names_the_recoded_keys_and_missing(capsys):
    diag = {"max_r_hat": 1.0, "min_ess_bulk": 400.0}
    s = {"risk": {
        "before": {"expected_reidentifications": 10.0,
                   "expected_reidentifications_interval": [9.0, 11.0], "diagnostics": diag},
        "after": {"expected_reidentifications": 5.0,
                  "expected_reidentifications_hyper_interval": [4.5, 5.5],
                  "expected_reidentifications_blanked_records": 1.0,
                  "expected_reidentifications_blanked_records_hyper_interval": [0.9, 1.1],
                  "n_blanked_records": 3, "n_blanks": 4, "diagnostics": diag},
        "closed_form": {"before": {"expected_reidentifications": 4.0},
                        "after": {"expected_reidentifications": 2.0}},
        "fit": {"interval_level": 0.9, "method": "gibbs", "chains": 4, "draws": 500,
                "tune": 2000, "seed": 1, "missing": "category",
                "recoded_keys": {"age_group": {"levels": 9, "released_values": 4}}},
    }}
    protect._latent_class_lines(s)
    line = capsys.readouterr().out
    assert "seed 1, --missing category)" in line
    assert "age_group recoded (9 levels -> 4)" in line


def test_notes_say_how_recoded_and_missing_values_are_read():
    plain = protect._latent_class_notes()
    assert len(plain) == 1
    both = protect._latent_class_notes(recoded=True, missing="drop")
    assert both[0] == plain[0]
    assert "matches every level of the input it stands for" in both[1]
    assert "--missing drop" in both[2] and "left out of the fit" in both[2]
