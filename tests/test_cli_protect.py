"""`sdcbayes protect`: steps equal the Python API, risk before/after is right, bad input fails.

k-anonymity violations are checked against a brute-force count of wildcard matches
(seed 001, section 3.2; the semantics of ``Microdata(missing="wildcard")``, i.e.
sdcMicro's freqCalc), independent of the package's cell tables.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_cli, run_in_process

KEYS = ["age", "sex", "region"]


def wildcard_fk(frame: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Brute force: for each record, the records matching it on every key observed in both.

    A complete record does not count records whose keys are all missing (sdcMicro's rule
    with several keys); every other pair matches when no observed pair of values differs.
    """
    v = frame[keys].astype(object).to_numpy()
    miss = pd.isna(frame[keys]).to_numpy()
    s = v.astype(str)
    differ = (s[:, None, :] != s[None, :, :]) & ~miss[:, None, :] & ~miss[None, :, :]
    match = ~differ.any(axis=2)
    complete = ~miss.any(axis=1)
    empty = miss.all(axis=1)
    match &= ~(complete[:, None] & empty[None, :])
    return match.sum(axis=1)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame(
        {
            "age": rng.choice(["20s", "30s", "40s", "50s", "60s"], n),
            "sex": rng.choice(["m", "f"], n),
            "region": rng.integers(1, 7, n),
            "income": rng.lognormal(8, 1, n).round(0),
            "exp": rng.lognormal(7, 1, n).round(1),
            "w": rng.uniform(20, 80, n),
        }
    )
    d = tmp_path_factory.mktemp("data")
    frame.to_csv(d / "p.csv", index=False)
    frame.to_parquet(d / "p.parquet", index=False)
    return d, frame


FLAGS = ["--recode", "age:20s+30s=20-39", "--suppress-k", "3",
         "--importance", "age=3,sex=1,region=2", "--pram", "region",
         "--microaggregate", "income,exp", "--noise", "income", "--seed", "4"]


def python_api_pipeline(frame: pd.DataFrame, seed: int):
    from sdcbayes import protection as P

    rng = np.random.default_rng(seed)
    r = [P.merge_levels(frame, "age", {"20s": "20-39", "30s": "20-39"})]
    importance = {"age": 3, "sex": 1, "region": 2}
    r.append(P.local_suppression(r[-1].frame, KEYS, 3, importance=importance))
    r.append(P.invariant_pram(r[-1].frame, ["region"], pd_min=0.8, seed=rng))
    r.append(P.mdav(r[-1].frame, ["income", "exp"], 3))
    r.append(P.add_noise(r[-1].frame, ["income"], 0.1, seed=rng))
    return r


def test_unseeded_run_stamps_a_seed_that_repeats_it(data, tmp_path):
    d, _ = data
    common = ["protect", str(d / "p.csv"), "--keys", ",".join(KEYS), "--pram", "region",
              "--noise", "income"]
    first = run_cli(*common, "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    seed = summary["seed"]
    assert isinstance(seed, int)
    # the steps draw from the run's stream: no step reads as unseeded ("seed": null)
    assert all("seed" not in s["result"] for s in summary["steps"]), summary["steps"]
    again = run_cli(*common, "--seed", str(seed), "--out", str(tmp_path / "b"))
    assert again.returncode == 0, again.stderr
    a, b = (pd.read_csv(tmp_path / x / "protected.csv") for x in "ab")
    pd.testing.assert_frame_equal(a, b)
    # PRAM and noise did act: the protected file is not the input
    assert not a["income"].equals(pd.read_csv(d / "p.csv")["income"])


def test_csv_steps_match_python_api_and_risk_before_after(data, tmp_path):
    d, frame = data
    out = tmp_path / "out"
    proc = run_cli("protect", str(d / "p.csv"), "--keys", ",".join(KEYS), "--weight", "w",
                   *FLAGS, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "before -> after" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "log.csv", "pram_matrices.csv", "protected.csv", "report.html", "summary.json"
    ]
    results = python_api_pipeline(frame, 4)
    expected = results[-1].frame
    got = pd.read_csv(out / "protected.csv")
    assert list(got.columns) == list(frame.columns)  # same columns, same order
    pd.testing.assert_frame_equal(got, pd.read_csv(io.StringIO(expected.to_csv(index=False))))

    log = pd.read_csv(out / "log.csv")
    assert list(log.columns[:2]) == ["step", "method"]
    assert log.groupby("step").size().to_dict() == {
        i: len(r.log) for i, r in enumerate(results, start=1) if len(r.log)
    }

    summary = json.loads((out / "summary.json").read_text())
    assert [s["name"] for s in summary["steps"]] == [
        "recode", "suppress", "pram", "microaggregate", "noise"
    ]
    from sdcbayes import Microdata
    from sdcbayes.risk.assess import assess_closed_form

    for when, f in (("before", frame), ("after", expected)):
        want = assess_closed_form(Microdata(f, KEYS, weight="w")).summary
        risk = summary["risk"][when]
        # after PRAM of the key region the risk after is misclassification-adjusted
        # (tests/test_pram_risk.py checks it); the closed form reads the released file as is
        read = risk["misclassification"]["unadjusted"] if when == "after" else risk
        assert read["expected_reidentifications"] == pytest.approx(
            want["expected_reidentifications"], rel=1e-12
        )
        assert risk["n_sample_uniques"] == want["n_sample_uniques"]
        assert risk["k_anonymity_violations"] == int((wildcard_fk(f, KEYS) < 3).sum()), when
    assert summary["risk"]["k"] == 3
    assert summary["risk"]["before"]["k_anonymity_violations"] > 0
    # Suppression made the file 3-anonymous; PRAM of a key afterwards may undo some of it,
    # but expected re-identifications must have fallen.
    assert (summary["risk"]["after"]["expected_reidentifications"]
            < summary["risk"]["before"]["expected_reidentifications"])
    assert "misclassification" not in summary["risk"]["before"]
    assert (summary["risk"]["after"]["expected_reidentifications"]
            < summary["risk"]["after"]["misclassification"]["unadjusted"][
                "expected_reidentifications"])
    loss = summary["information_loss"]["per_variable"]
    assert loss["age"]["n_changed"] == int(frame["age"].isin(["20s", "30s"]).sum())
    from sdcbayes.protection.infoloss import il1

    assert loss["income"]["il1"] == pytest.approx(il1(frame, expected, ["income"]), rel=1e-12)
    assert "il1" not in loss["region"]  # a categorical key: IL1 would be meaningless
    html = (out / "report.html").read_text()
    assert "before and after" in html and "<script" not in html


def test_json_recipe_equals_options_and_parquet_keeps_format(data, tmp_path):
    d, frame = data
    recipe = {
        "seed": 4,
        "steps": [
            {"step": "recode", "column": "age", "mapping": {"20s": "20-39", "30s": "20-39"}},
            {"step": "suppress", "k": 3, "importance": {"age": 3, "sex": 1, "region": 2}},
            {"step": "pram", "columns": ["region"], "pd": 0.8},
            {"step": "microaggregate", "columns": ["income", "exp"], "k": 3},
            {"step": "noise", "columns": ["income"], "level": 0.1},
        ],
    }
    rpath = tmp_path / "recipe.json"
    rpath.write_text(json.dumps(recipe))
    out = tmp_path / "out"
    proc = run_cli("protect", str(d / "p.parquet"), "--keys", ",".join(KEYS),
                   "--recipe", str(rpath), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    got = pd.read_parquet(out / "protected.parquet")
    expected = python_api_pipeline(frame, 4)[-1].frame
    # as text with one spelling of missing: pandas 2 reads Parquet's nulls in object
    # columns as None, the pipeline in memory holds NaN
    def as_text(df):
        return df.astype(object).where(df.notna(), "<NA>").astype(str)

    pd.testing.assert_frame_equal(as_text(got), as_text(expected))
    assert got.isna().to_numpy().sum() > 0  # the suppression's NA survived the round trip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seed"] == 4 and summary["protected_file"] == "protected.parquet"


def test_spss_file_is_written_as_spss_with_value_labels(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    rng = np.random.default_rng(5)
    n = 150
    frame = pd.DataFrame(
        {
            "age": rng.integers(1, 6, n).astype(float),
            "sex": rng.integers(1, 3, n).astype(float),
            "inc": rng.lognormal(8, 1, n),
        }
    )
    labels = {"age": {1.0: "20s", 2.0: "30s", 3.0: "40s", 4.0: "50s", 5.0: "60s"},
              "sex": {1.0: "male", 2.0: "female"}}
    src = tmp_path / "survey.sav"
    pyreadstat.write_sav(frame, str(src), variable_value_labels=labels)
    out = tmp_path / "out"
    proc = run_cli("protect", str(src), "--keys", "age,sex", "--recode", "age:20s+30s=young",
                   "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    df, meta = pyreadstat.read_sav(str(out / "protected.sav"))
    # Untouched labels keep their codes; the new category gets a new code and label.
    assert meta.variable_value_labels["sex"] == {1.0: "male", 2.0: "female"}
    age = meta.variable_value_labels["age"]
    assert {k: v for k, v in age.items() if v != "young"} == {3.0: "40s", 4.0: "50s", 5.0: "60s"}
    young = [k for k, v in age.items() if v == "young"]
    assert young == [6.0]
    np.testing.assert_array_equal(df["age"] == 6.0, frame["age"].isin([1.0, 2.0]))
    np.testing.assert_array_equal(df["sex"], frame["sex"])
    np.testing.assert_allclose(df["inc"], frame["inc"])


@pytest.mark.parametrize(
    ("make_args", "fragments"),
    [
        (lambda d, t: [str(t / "nope.csv"), "--keys", "age", "--suppress-k", "3"], ["nope.csv"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age,colour", "--suppress-k", "3"], ["colour"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age"], ["no protection step"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--recode", "age:20s"],
         ["COL:OLD1+OLD2=NEW"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--recode", "age:20s+90s=x"], ["90s"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--recode", "agee:20s=x"], ["agee"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--suppress-k", "0"], ["--suppress-k"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--importance", "age=1"],
         ["--suppress-k"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--pram", "region", "--pram-pd", "2"],
         ["--pram-pd"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--nayak-zhang-xi", "0.2"],
         ["--nayak-zhang-xi"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--noise", "wage"], ["wage"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--recipe", str(t / "none.json")],
         ["none.json"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--recipe", str(t / "r.json"),
                       "--suppress-k", "2"], ["not both"]),
        (lambda d, t: [str(d / "p.csv"), "--keys", "age", "--weight", "wt", "--suppress-k", "2"],
         ["wt"]),
    ],
    ids=["missing-file", "unknown-key", "no-steps", "bad-recode-syntax", "unknown-level",
         "unknown-recode-column", "bad-k", "importance-alone", "bad-pram-pd", "bad-xi",
         "unknown-noise-column", "missing-recipe", "recipe-and-options", "unknown-weight"],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(data, tmp_path, capsys, make_args,
                                                          fragments):
    d, _ = data
    (tmp_path / "r.json").write_text(json.dumps({"steps": [{"step": "suppress", "k": 2}]}))
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", *make_args(d, tmp_path), "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


@pytest.mark.parametrize(
    ("recipe", "fragments"),
    [
        ({"steps": [{"step": "scramble", "columns": ["age"]}]},
         ["scramble", "valid steps", "suppress"]),
        ({"steps": [{"step": "suppress", "k": 3, "kk": 2}]}, ["kk"]),
        ({"steps": [{"step": "noise"}]}, ["columns"]),
        ({"steps": []}, ["non-empty list"]),
        ({"steps": [{"step": "suppress", "k": 2}], "sed": 1}, ["sed"]),
        ("{not json", ["not valid JSON"]),
        # wrong types: one line naming the parameter, never a traceback
        ({"steps": [{"step": "band", "column": "income", "breaks": ["a", "b"]}]},
         ["breaks", "strictly increasing numbers", '["a", "b"]']),
        ({"steps": [{"step": "band", "column": "income", "breaks": [0, 1e9], "labels": 5}]},
         ["labels", "one per band", "got 5"]),
        ({"steps": [{"step": "band", "column": "income", "breaks": [0, 1e9],
                     "labels": [{"a": 1}]}]}, ["labels", "strings or numbers"]),
        ({"steps": [{"step": "recode", "column": "age", "mapping": {"20s": [2]}}]},
         ["mapping", '"20s": [2]']),
        ({"steps": [{"step": "pram", "columns": ["region"], "alpha": None}]},
         ["alpha", "got null", "leave it out"]),
        ({"steps": [{"step": "pram", "columns": ["region"], "pd": None}]},
         ["step 1 (pram): pd must be", "got null"]),
        ({"steps": [{"step": "suppress", "k": None}]},
         ["step 1 (suppress): k must be", "got null"]),
        ({"steps": [{"step": "pram", "columns": ["region"], "max_levels": 0.5}]},
         ["max_levels must be an integer >= 1", "got 0.5"]),
        ({"steps": [{"step": "band", "column": "income", "breaks": [0, 1e9], "right": "false"}]},
         ["right", "true or false", '"false"']),
        ({"steps": [{"step": "microaggregate", "columns": ["income"], "standardize": "no"}]},
         ["standardize", "true or false", '"no"']),
        ({"steps": [{"step": "microaggregate", "columns": ["income"], "standardize": None}]},
         ["standardize", "got null"]),
    ],
    ids=["unknown-step", "unknown-parameter", "missing-parameter", "empty", "unknown-entry",
         "bad-json", "breaks-text", "labels-number", "labels-mapping", "mapping-list",
         "alpha-null", "pd-null", "k-null", "max-levels-fraction", "right-text", "standardize-text",
         "standardize-null"],
)
def test_bad_recipes_are_rejected(data, tmp_path, capsys, recipe, fragments):
    d, _ = data
    rpath = tmp_path / "recipe.json"
    rpath.write_text(recipe if isinstance(recipe, str) else json.dumps(recipe))
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(d / "p.csv"), "--keys", "age", "--recipe",
                          str(rpath), "--out", str(out))
    assert_one_line_error(proc, *fragments)
    assert not out.exists()


def test_yaml_recipe_needs_pyyaml(data, tmp_path, capsys):
    d, _ = data
    rpath = tmp_path / "recipe.yaml"
    rpath.write_text("steps:\n  - step: suppress\n    k: 2\n")
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(d / "p.csv"), "--keys", "age,sex",
                          "--recipe", str(rpath), "--out", str(out), "-q")
    try:
        import yaml  # noqa: F401
    except ImportError:
        assert_one_line_error(proc, "PyYAML", "JSON")
        assert not out.exists()
    else:
        assert proc.returncode == 0, proc.stderr
        assert json.loads((out / "summary.json").read_text())["steps"][0]["name"] == "suppress"


def test_help_explains_options(capsys):
    proc = run_in_process(capsys, "protect", "--help")
    assert proc.returncode == 0
    for opt in ("--keys", "--recipe", "--recode", "--suppress-k", "--importance", "--pram",
                "--nayak-zhang-xi", "--microaggregate", "--noise", "--seed", "--weight", "--out"):
        assert opt in proc.stdout


def test_pram_pd_help_says_it_bounds_p_not_the_keep_probability(capsys):
    proc = run_in_process(capsys, "protect", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "smallest probability that a value is kept" not in text
    assert "first-stage matrix P" in text
    assert "does not bound the probability that a value is kept" in text


def test_boolean_recipe_parameters_are_recorded_as_given(data, tmp_path, capsys):
    d, _ = data
    rpath = tmp_path / "recipe.json"
    rpath.write_text(json.dumps({"seed": 1, "steps": [
        {"step": "band", "column": "exp", "breaks": [0, 1000, 1e12], "right": True},
        {"step": "microaggregate", "columns": ["income"], "standardize": False},
    ]}))
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(d / "p.csv"), "--keys", "age,sex",
                          "--recipe", str(rpath), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    steps = json.loads((out / "summary.json").read_text())["steps"]
    assert steps[0]["parameters"]["right"] is True
    assert steps[1]["parameters"]["standardize"] is False
    assert steps[1]["result"]["standardize"] is False
    got = pd.read_csv(out / "protected.csv")
    assert set(got["exp"].dropna()) <= {"[0, 1000]", "(1000, 1e+12]"}


def test_recipe_max_levels_lets_pram_take_a_column_of_many_levels(tmp_path, capsys):
    # 1,200 levels: refused at PRAM's default cap of 1,000, PRAMed with the step's own cap
    rng = np.random.default_rng(5)
    data = tmp_path / "d.csv"
    pd.DataFrame({"age": rng.integers(0, 5, 2400),
                  "code": np.tile(np.arange(1200), 2)}).to_csv(data, index=False)
    results = {}
    for cap in (None, 1200):
        step = {"step": "pram", "columns": ["code"]} | ({"max_levels": cap} if cap else {})
        rpath = tmp_path / f"r{cap}.json"
        rpath.write_text(json.dumps({"seed": 1, "steps": [step]}))
        out = tmp_path / f"out{cap}"
        results[cap] = (run_in_process(capsys, "protect", str(data), "--keys", "age",
                                       "--recipe", str(rpath), "--out", str(out), "-q"), out)
    assert_one_line_error(results[None][0], "1200 levels", 'raise "max_levels"')
    proc, out = results[1200]
    assert proc.returncode == 0, proc.stderr
    step = json.loads((out / "summary.json").read_text())["steps"][0]
    assert step["parameters"]["max_levels"] == 1200
    got = pd.read_csv(out / "protected.csv")["code"]
    assert got.between(0, 1199).all() and (got != np.tile(np.arange(1200), 2)).any()


def test_recode_after_suppression_of_an_integer_key(data, tmp_path, capsys):
    # suppression turns the integer key into nullable Int64 (pd.NA); the recode must cope
    d, frame = data
    rpath = tmp_path / "recipe.json"
    rpath.write_text(json.dumps({"steps": [
        {"step": "suppress", "k": 3, "keys": ["age", "sex", "region"]},
        {"step": "recode", "column": "region", "mapping": {"1": 2}},
    ]}))
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(d / "p.csv"), "--keys", "age,sex,region",
                          "--recipe", str(rpath), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    suppressed = _suppressed_cells(out)
    assert any(c == "region" for _, c in suppressed)
    got = pd.read_csv(out / "protected.csv", dtype=str, keep_default_na=False)["region"]
    blank = np.array([(i, "region") in suppressed for i in range(len(frame))])
    assert (got[blank] == "").all()
    expected = frame["region"].replace({1: 2}).astype(str)
    assert got[~blank].tolist() == expected[~blank].tolist()  # integers, 1 merged into 2
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"][1]["result"]["n_changed"] == int(
        ((frame["region"] == 1) & ~blank).sum())


# --------------------------------------------------------------------------- variable labels
SAV_LABELS = ["Age group", "Sex", "Region", "Monthly income", "Final weight"]


@pytest.fixture(scope="module")
def labelled_sav(tmp_path_factory):
    """An SPSS file whose users know its variables by label (v1 = "Age group", ...)."""
    pyreadstat = pytest.importorskip("pyreadstat")
    rng = np.random.default_rng(12)
    n = 240
    frame = pd.DataFrame(
        {
            "v1": rng.integers(1, 6, n).astype(float),
            "v2": rng.integers(1, 3, n).astype(float),
            "v3": rng.integers(1, 4, n).astype(float),
            "v4": rng.lognormal(8, 1, n).round(0),
            "v5": rng.uniform(20, 80, n),
        }
    )
    path = tmp_path_factory.mktemp("sav") / "s.sav"
    pyreadstat.write_sav(
        frame, str(path), column_labels=SAV_LABELS,
        variable_value_labels={"v1": {1.0: "20s", 2.0: "30s", 3.0: "40s", 4.0: "50s",
                                      5.0: "60s"},
                               "v2": {1.0: "male", 2.0: "female"}},
    )
    return path


def _protect_outputs(out):
    import pyreadstat

    summary = json.loads((out / "summary.json").read_text())
    df, _ = pyreadstat.read_sav(str(out / "protected.sav"))
    return summary, df, pd.read_csv(out / "log.csv")


def test_variable_labels_in_options_and_recipe_equal_column_names(labelled_sav, tmp_path,
                                                                  capsys):
    # k = 12: about 10 records per (stratum, age, sex) cell, so suppression has work to do
    by_name = ["--keys", "v1,v2", "--weight", "v5", "--recode", "v1:20s+30s=young",
               "--suppress-k", "12", "--importance", "v1=2,v2=1", "--strata", "v3",
               "--pram", "v2", "--microaggregate", "v4", "--noise", "v4", "--seed", "7"]
    # labels in every variable-naming option, in any case and with blanks around them
    by_label = ["--keys", "Age group, SEX ", "--weight", "final weight",
                "--recode", "age GROUP:20s+30s=young", "--suppress-k", "12",
                "--importance", "Age group=2,Sex=1", "--strata", "region",
                "--pram", "Sex", "--microaggregate", "Monthly income", "--noise",
                "monthly income", "--seed", "7"]
    recipe = {
        "seed": 7,
        "steps": [
            {"step": "recode", "column": "Age group", "mapping": {"20s": "young",
                                                                  "30s": "young"}},
            {"step": "suppress", "k": 12, "importance": {"Age group": 2, "Sex": 1},
             "strata": ["Region"]},
            {"step": "pram", "columns": ["Sex"], "pd": 0.8, "strata": "region"},
            {"step": "microaggregate", "columns": ["Monthly income"], "k": 3},
            {"step": "noise", "columns": "Monthly income", "level": 0.1},
        ],
    }
    rpath = tmp_path / "recipe.json"
    rpath.write_text(json.dumps(recipe))
    runs = {"name": by_name, "label": by_label,
            "recipe": ["--keys", "Age group,Sex", "--weight", "Final weight",
                       "--recipe", str(rpath)]}
    results = {}
    for name, args in runs.items():
        out = tmp_path / name
        proc = run_in_process(capsys, "protect", str(labelled_sav), *args, "--out", str(out),
                              "-q")
        assert proc.returncode == 0, proc.stderr
        results[name] = _protect_outputs(out)

    s_name, df_name, log_name = results["name"]
    # outputs speak column names, whatever the user typed
    assert s_name["keys"] == ["v1", "v2"] and s_name["weight"] == "v5"
    params = {s["name"]: s["parameters"] for s in s_name["steps"]}
    assert params["recode"]["column"] == "v1"
    assert params["suppress"]["importance"] == {"v1": 2.0, "v2": 1.0}
    assert params["suppress"]["strata"] == ["v3"] and params["pram"]["strata"] == ["v3"]
    assert params["pram"]["columns"] == ["v2"] and params["noise"]["columns"] == ["v4"]
    assert set(s_name["information_loss"]["per_variable"]) == {"v1", "v2", "v4"}  # v3: strata
    # the stratum variable reached the suppression step: its log names each value's stratum
    suppressed = log_name[log_name["method"] == "suppress"]
    assert len(suppressed) > 0
    assert set(suppressed["stratum"].astype(float)) <= {1.0, 2.0, 3.0}
    for other in ("label", "recipe"):
        s, df, log = results[other]
        for key in ("keys", "weight", "seed", "risk", "information_loss", "protected_file"):
            assert s[key] == s_name[key], (other, key)
        assert [st["parameters"] for st in s["steps"]] == [st["parameters"]
                                                           for st in s_name["steps"]], other
        pd.testing.assert_frame_equal(df, df_name)
        pd.testing.assert_frame_equal(log, log_name)


def test_unknown_label_is_one_line_error_before_any_work(labelled_sav, tmp_path, capsys):
    out = tmp_path / "out"
    # console script, as a user runs it: a misspelt label in a step option
    proc = run_cli("protect", str(labelled_sav), "--keys", "Age group,Sex", "--suppress-k",
                   "2", "--pram", "Regoin", "--out", str(out))
    assert_one_line_error(proc, "--pram 'Regoin'", "neither a column name nor a variable label",
                          "s.sav", "did you mean 'Region' (label of 'v3')", "check the spelling")
    assert not out.exists()
    # in a recipe the message points at the step and entry; a later step's typo is found
    # before the first step runs
    for step, fragments in (
        ({"step": "suppress", "k": 2, "importance": {"Age grup": 1, "Sex": 2}},
         ["step 2 (suppress) importance 'Age grup'", "did you mean 'Age group'"]),
        ({"step": "pram", "columns": ["Sex"], "strata": ["Regon"]},
         ["step 2 (pram) strata 'Regon'", "'Region' (label of 'v3')"]),
        ({"step": "top_code", "column": "Monthly incme", "threshold": 5000},
         ["step 2 (top_code) column 'Monthly incme'", "'Monthly income' (label of 'v4')"]),
    ):
        rpath = tmp_path / "r.json"
        rpath.write_text(json.dumps({"steps": [{"step": "recode", "column": "Sex",
                                                "mapping": {"male": "m"}}, step]}))
        proc = run_in_process(capsys, "protect", str(labelled_sav), "--keys", "Age group,Sex",
                              "--recipe", str(rpath), "--out", str(out))
        assert_one_line_error(proc, *fragments)
        assert not out.exists()
    for args, fragments in (
        (["--suppress-k", "2", "--strata", "regio"], ["--strata 'regio'"]),
        (["--suppress-k", "2", "--importance", "Agegroup=1,Sex=2"], ["--importance 'Agegroup'"]),
        (["--recode", "Sexx:male=m"], ["--recode 'Sexx'", "'Sex' (label of 'v2')"]),
        (["--noise", "income"], ["--noise 'income'"]),
        (["--strata", "Region", "--noise", "v4"], ["--strata applies to", "--suppress-k"]),
    ):
        proc = run_in_process(capsys, "protect", str(labelled_sav), "--keys", "Age group,Sex",
                              *args, "--out", str(out))
        assert_one_line_error(proc, *fragments)
        assert not out.exists()


# --------------------------------------------------------------------------- metadata kept
# The rule: nothing of the user's file is lost beyond what the protection changes. A
# user-missing code (SPSS "99 = Refused", declared missing) is the user's data: it must
# come back as that code, still declared missing, and stay distinguishable from the
# system-missing values sdcbayes's suppression writes.
META_LABELS = {"age": "Age group", "sex": "Sex", "edu": "Education", "inc": "Monthly income",
               "w": "Final weight"}
META_VALUE_LABELS = {"age": {1.0: "20s", 2.0: "30s", 3.0: "40s", 4.0: "50s", 5.0: "60s",
                             9.0: "Refused"},
                     "sex": {1.0: "male", 2.0: "female"}}
META_FORMATS = {"age": "F1.0", "sex": "F1.0", "edu": "F2.0", "inc": "F8.2", "w": "F6.1"}


def _meta_frame(n: int = 160, seed: int = 21) -> pd.DataFrame:
    """Keys age, sex, edu with user-missing codes in age (9) and edu (98-99), inc with -1."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.integers(1, 6, n).astype(float),
            "sex": rng.integers(1, 3, n).astype(float),
            "edu": rng.integers(1, 5, n).astype(float),
            "inc": rng.lognormal(8, 1, n).round(2),
            "w": rng.uniform(20, 80, n).round(1),
        }
    )
    frame.loc[[3, 40, 77], "age"] = 9.0  # "Refused": declared missing
    frame.loc[[5, 90], "edu"] = 99.0  # inside the declared range 98-99
    frame.loc[[6, 91], "inc"] = -1.0  # a non-key user-missing code, untouched by any step
    frame.loc[12, "inc"] = np.nan  # a system-missing value of the user's own
    return frame


@pytest.fixture(scope="module")
def meta_sav(tmp_path_factory):
    pyreadstat = pytest.importorskip("pyreadstat")
    frame = _meta_frame()
    path = tmp_path_factory.mktemp("meta") / "vl.sav"
    pyreadstat.write_sav(
        frame, str(path), column_labels=META_LABELS, variable_value_labels=META_VALUE_LABELS,
        missing_ranges={"age": [9.0], "edu": [{"lo": 98.0, "hi": 99.0}], "inc": [-1.0]},
        variable_format=META_FORMATS,
        variable_measure={"age": "ordinal", "sex": "nominal", "edu": "ordinal",
                          "inc": "scale", "w": "scale"},
        file_label="Test survey",
    )
    return path


def _suppressed_cells(out) -> set[tuple[int, str]]:
    log = pd.read_csv(out / "log.csv")
    sup = log[log["method"] == "suppress"]
    return set(zip(sup["record"].astype(int), sup["variable"], strict=True))


def test_spss_output_keeps_labels_formats_and_user_missing_codes(meta_sav, tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    out = tmp_path / "out"
    proc = run_cli("protect", str(meta_sav), "--keys", "age,sex,edu", "--weight", "w",
                   "--suppress-k", "4", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    src_raw, src_meta = pyreadstat.read_sav(str(meta_sav), user_missing=True)
    raw, meta = pyreadstat.read_sav(str(out / "protected.sav"), user_missing=True)
    plain, _ = pyreadstat.read_sav(str(out / "protected.sav"))

    # variable labels, value labels, missing declarations, formats, measures, file label
    assert meta.column_names_to_labels == META_LABELS
    assert meta.variable_value_labels == META_VALUE_LABELS
    assert meta.missing_ranges == src_meta.missing_ranges
    assert meta.missing_ranges["edu"] == [{"lo": 98.0, "hi": 99.0}]
    assert meta.original_variable_types == META_FORMATS
    assert meta.variable_measure == src_meta.variable_measure
    assert meta.file_label == "Test survey"

    suppressed = _suppressed_cells(out)
    assert suppressed, "k = 4 must make the suppression work"
    summary = json.loads((out / "summary.json").read_text())
    result = summary["steps"][0]["result"]
    # pre-existing (user-)missing values are not counted as suppressions
    assert result["total_suppressions"] == len(suppressed)
    assert result["missing_before"] == {"age": 3, "sex": 0, "edu": 2}
    for col in ("age", "sex", "edu", "inc", "w"):
        mask = np.array([(i, col) in suppressed for i in range(len(raw))])
        # sdcbayes's suppressions are system-missing, whatever the user-missing read
        assert raw[col][mask].isna().all(), col
        assert plain[col][mask].isna().all(), col
        # every other value is the user's: user-missing codes included (9, 99, -1)
        pd.testing.assert_series_equal(raw[col][~mask], src_raw[col][~mask], check_names=False)
        assert result["suppressions"].get(col, 0) == int(mask.sum())
        if col in summary["information_loss"]["per_variable"]:
            loss = summary["information_loss"]["per_variable"][col]
            assert loss["n_suppressed"] == int(mask.sum()), col
    # suppression blanks observed values only: every user-missing code comes back
    assert (raw["age"] == 9.0).sum() == 3 and (raw["edu"] == 99.0).sum() == 2
    assert sorted(np.flatnonzero(raw["inc"].to_numpy() == -1.0)) == [6, 91]
    # ... and still declared missing: the default read turns them into NaN
    assert plain["age"][raw["age"] == 9.0].isna().all()
    assert plain["edu"][raw["edu"] == 99.0].isna().all()
    assert plain["inc"][[6, 91, 12]].isna().all() and np.isnan(raw["inc"][12])


def test_stata_output_keeps_variable_and_value_labels_and_formats(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    frame = _meta_frame()
    frame.loc[frame["age"] == 9.0, "age"] = np.nan  # Stata: no user-missing ranges
    frame.loc[frame["edu"] == 99.0, "edu"] = np.nan
    frame.loc[frame["inc"] == -1.0, "inc"] = np.nan
    src = tmp_path / "vl.dta"
    formats = {"age": "%8.0g", "sex": "%8.0g", "edu": "%9.0f", "inc": "%10.2f", "w": "%9.1f"}
    value_labels = {"age": {1: "20s", 2: "30s", 3: "40s", 4: "50s", 5: "60s"},
                    "sex": {1: "male", 2: "female"}}
    pyreadstat.write_dta(frame, str(src), column_labels=META_LABELS,
                         variable_value_labels=value_labels, variable_format=formats,
                         file_label="Test survey")
    out = tmp_path / "out"
    proc = run_cli("protect", str(src), "--keys", "age,sex,edu", "--weight", "w",
                   "--suppress-k", "4", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    got, meta = pyreadstat.read_dta(str(out / "protected.dta"))
    assert meta.column_names_to_labels == META_LABELS
    assert meta.variable_value_labels == value_labels
    assert meta.original_variable_types == formats
    assert meta.file_label == "Test survey"
    suppressed = _suppressed_cells(out)
    assert suppressed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"][0]["result"]["total_suppressions"] == len(suppressed)
    for col in frame.columns:
        mask = np.array([(i, col) in suppressed for i in range(len(got))])
        assert got[col][mask].isna().all()
        pd.testing.assert_series_equal(got[col][~mask], frame[col][~mask], check_names=False)


def test_csv_integer_columns_stay_integer_text(tmp_path):
    rng = np.random.default_rng(8)
    n = 120
    frame = pd.DataFrame({"age": rng.integers(18, 90, n), "sex": rng.integers(1, 3, n),
                          "edu": rng.integers(1, 5, n), "score": rng.integers(0, 4, n) + 0.5})
    src = tmp_path / "p.csv"
    frame.to_csv(src, index=False)
    text = src.read_text().splitlines()
    # a blank in an integer column: pandas reads the column as float
    text[5] = "," + text[5].split(",", 1)[1]
    src.write_text("\n".join(text) + "\n")
    out = tmp_path / "out"
    proc = run_cli("protect", str(src), "--keys", "age,sex,edu", "--suppress-k", "3",
                   "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out / "protected.csv", dtype=str, keep_default_na=False)
    before = pd.read_csv(src, dtype=str, keep_default_na=False)
    suppressed = _suppressed_cells(out)
    assert any(c == "age" for _, c in suppressed)
    for col in ("age", "sex", "edu"):
        assert not got[col].str.contains(r"\.").any(), col  # 34, never 34.0
        mask = np.array([(i, col) in suppressed for i in range(n)])
        assert (got[col][mask] == "").all()
        assert got[col][~mask].tolist() == before[col][~mask].tolist(), col
    assert got["score"].tolist() == before["score"].tolist()  # a float column stays float


def test_spss_new_category_code_avoids_user_missing_codes(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    frame = _meta_frame()
    frame.loc[[7, 8], "sex"] = 3.0  # "No answer", declared missing; no value label
    src = tmp_path / "s.sav"
    pyreadstat.write_sav(frame, str(src), variable_value_labels=META_VALUE_LABELS,
                         missing_ranges={"sex": [3.0]})
    out = tmp_path / "out"
    proc = run_cli("protect", str(src), "--keys", "age,sex", "--recode",
                   "sex:male+female=person", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    raw, meta = pyreadstat.read_sav(str(out / "protected.sav"), user_missing=True)
    plain, _ = pyreadstat.read_sav(str(out / "protected.sav"))
    # the new category must not take code 3 (the next after 1, 2): it would read as missing
    assert meta.variable_value_labels["sex"] == {4.0: "person"}
    assert meta.missing_ranges["sex"] == [{"lo": 3.0, "hi": 3.0}]
    assert sorted(np.flatnonzero(raw["sex"].to_numpy() == 3.0)) == [7, 8]
    others = ~frame.index.isin([7, 8])
    assert (plain["sex"][others] == 4.0).all()
    assert plain["sex"][[7, 8]].isna().all()


def test_semicolon_csv_is_read_and_written_with_semicolons(tmp_path):
    rng = np.random.default_rng(9)
    n = 120
    frame = pd.DataFrame({"age": rng.integers(18, 90, n), "sex": rng.integers(1, 3, n),
                          "edu": rng.integers(1, 5, n)})
    src = tmp_path / "semi.csv"
    frame.to_csv(src, index=False, sep=";")
    out = tmp_path / "out"
    proc = run_cli("protect", str(src), "--keys", "age,sex,edu", "--suppress-k", "3",
                   "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    header = (out / "protected.csv").read_text().splitlines()[0]
    assert header == "age;sex;edu"
    got = pd.read_csv(out / "protected.csv", sep=";")
    suppressed = _suppressed_cells(out)
    assert suppressed  # the keys were read as three columns, so k-anonymity had work to do
    for col in ("age", "sex", "edu"):
        mask = np.array([(i, col) in suppressed for i in range(n)])
        assert got[col][mask].isna().all()
        assert (got[col][~mask] == frame[col][~mask]).all(), col


# --------------------------------------------------------------------------- round trips
ROUND_TRIP_CSV = """id,zip,sex,age,code,note,score,flag
001,01234,m,20s,NA,hello,1.50,TRUE
002,01234,m,20s,7,"a,b",2.25,FALSE
003,02345,f,30s,-99,,3,TRUE
004,02345,f,30s,8,x,1e3,FALSE
005,02345,f,40s,9,y,4.0,TRUE
006,01234,m,20s,10,z,5,FALSE
"""


def test_csv_cells_no_step_changed_keep_their_text(tmp_path):
    # pandas parsing would write 001 as 1, 01234 as 1234, NA as "", TRUE as True,
    # 1.50 as 1.5 and 1e3 as 1000.0
    src = tmp_path / "rt.csv"
    src.write_text(ROUND_TRIP_CSV)
    out = tmp_path / "out"
    proc = run_cli("protect", str(src), "--keys", "sex,age", "--suppress-k", "2",
                   "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert _suppressed_cells(out) == {(4, "age")}
    lines = ROUND_TRIP_CSV.splitlines()
    lines[5] = "005,02345,f,,9,y,4.0,TRUE"  # the one suppression: an empty field
    assert (out / "protected.csv").read_text().splitlines() == lines


def test_csv_changed_columns_keep_the_text_of_unchanged_cells(tmp_path):
    src = tmp_path / "rt.csv"
    src.write_text(ROUND_TRIP_CSV)
    out = tmp_path / "out"
    # the parsed zip codes are 1234 and 2345: the recode names the value, the text keeps 0
    proc = run_cli("protect", str(src), "--keys", "sex,age", "--recode", "zip:1234=999",
                   "--microaggregate", "score", "--mdav-k", "3", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out / "protected.csv", dtype=str, keep_default_na=False)
    before = pd.read_csv(src, dtype=str, keep_default_na=False)
    assert got["zip"].tolist() == ["999", "999", "02345", "02345", "02345", "999"]
    score = pd.read_csv(out / "protected.csv")["score"]
    assert score.round(6).nunique() == 2  # two groups of three share their means
    assert score.sum() == pytest.approx(1.5 + 2.25 + 3 + 1000 + 4 + 5)
    for col in ("id", "sex", "age", "code", "note", "flag"):
        assert got[col].tolist() == before[col].tolist(), col


def test_log_keeps_integer_originals_next_to_numeric_steps(data, tmp_path, capsys):
    d, frame = data
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(d / "p.csv"), "--keys", "age,sex,region",
                          "--suppress-k", "3", "--microaggregate", "income,exp", "--out",
                          str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    log = pd.read_csv(out / "log.csv", dtype=str, keep_default_na=False)
    region = log[(log["method"] == "suppress") & (log["variable"] == "region")]
    assert len(region)
    records = region["record"].astype(int).to_numpy()
    # 7, as the suppression logged it; the concatenation with MDAV's float log gave 7.0
    assert region["original"].tolist() == frame["region"].to_numpy()[records].astype(str).tolist()
    assert (log.loc[log["method"] == "microaggregate", "size"] != "").all()


def test_stata_integer_columns_are_not_widened_to_double(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    rng = np.random.default_rng(4)
    n = 60
    frame = pd.DataFrame({"sex": rng.integers(1, 3, n).astype("int8"),
                          "age": rng.integers(20, 60, n).astype("int16"),
                          "other": np.arange(n, dtype="int32"),
                          "x": rng.normal(size=n)})
    src = tmp_path / "t.dta"
    frame.to_stata(src, write_index=False)
    out = tmp_path / "out"
    proc = run_cli("protect", str(src), "--keys", "sex,age", "--suppress-k", "3",
                   "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    got, meta = pyreadstat.read_dta(str(out / "protected.dta"))
    # pyreadstat writes integers as long at best (no byte/int): long, not double
    types = meta.readstat_variable_types
    assert types["sex"] == types["age"] == types["other"] == "int32"
    assert types["x"] == "double"
    assert got["other"].tolist() == list(range(n))
    suppressed = _suppressed_cells(out)
    assert suppressed
    for col in ("sex", "age"):
        mask = np.array([(i, col) in suppressed for i in range(n)])
        assert got[col][mask].isna().all()
        assert (got[col][~mask] == frame[col][~mask]).all()


def test_spss_codes_sharing_a_label_and_padded_labels_keep_their_codes(tmp_path):
    # read_microdata names codes that share a label "other [8]"/"other [9]" and strips
    # labels; the writer must put back the file's own codes and label texts
    pyreadstat = pytest.importorskip("pyreadstat")
    n = 40
    frame = pd.DataFrame({
        "job": np.tile([1.0, 2.0, 8.0, 9.0], n // 4),
        "sex": np.repeat([1.0, 2.0], n // 2),
        "w": np.full(n, 10.0),
    })
    labels = {"job": {1.0: "clerk ", 2.0: "farmer", 8.0: "other", 9.0: "other"},
              "sex": {1.0: "m", 2.0: "f"}}
    src = tmp_path / "shared.sav"
    pyreadstat.write_sav(frame, str(src), variable_value_labels=labels)
    out = tmp_path / "out"
    proc = run_cli("protect", str(src), "--keys", "job,sex", "--weight", "w",
                   "--suppress-k", "2", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    raw, meta = pyreadstat.read_sav(str(out / "protected.sav"))
    np.testing.assert_array_equal(raw["job"].to_numpy(), frame["job"].to_numpy())
    _, src_meta = pyreadstat.read_sav(str(src), metadataonly=True)
    assert meta.variable_value_labels["job"] == src_meta.variable_value_labels["job"]
    assert sorted(meta.variable_value_labels["job"]) == [1.0, 2.0, 8.0, 9.0]


def test_spss_unlabelled_codes_stay_unlabelled_beside_a_clashing_label(tmp_path, capsys):
    # code 3 is labelled "4" and code 4 is unlabelled: read_microdata names them "4 [3]"
    # and "4 [4]"; the writer put "4 [4]" on code 4 as a new label (7 checks a plain one)
    pyreadstat = pytest.importorskip("pyreadstat")
    frame = pd.DataFrame({"a": np.tile([3.0, 4.0, 1.0, 7.0], 10),
                          "b": np.repeat([1.0, 2.0], 20)})
    src = tmp_path / "clash.sav"
    pyreadstat.write_sav(frame, str(src), variable_value_labels={"a": {3.0: "4", 1.0: "one"}})
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(src), "--keys", "a,b", "--suppress-k", "2",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    raw, meta = pyreadstat.read_sav(str(out / "protected.sav"))
    np.testing.assert_array_equal(raw["a"].to_numpy(), frame["a"].to_numpy())
    assert meta.variable_value_labels["a"] == {1.0: "one", 3.0: "4"}


# ---- PRAM's matrices: pram_matrices.csv, not summary.json (audit AA4, finding 3) ------------
def pram_strata_frame(n: int = 1500, n_levels: int = 40, seed: int = 11) -> pd.DataFrame:
    """A country-of-birth-like variable of many levels, skewed, within 48 strata."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_levels + 1) ** 1.2
    return pd.DataFrame({
        "age": rng.choice(["20s", "30s", "40s", "50s"], n),
        "sex": rng.choice(["m", "f"], n),
        "region": rng.choice([f"R{i}" for i in range(6)], n),
        "cob": rng.choice([f"C{i:02d}" for i in range(n_levels)], n, p=p / p.sum()),
    })


def test_pram_matrices_are_a_csv_beside_a_small_summary(tmp_path, capsys):
    from sdcbayes import protection as P

    frame = pram_strata_frame()
    frame.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(tmp_path / "d.csv"), "--keys", "age,sex,cob",
                          "--pram", "cob", "--strata", "region,age,sex", "--seed", "5",
                          "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "pram_matrices.csv" in proc.stdout  # the "written:" line names it
    summary = json.loads((out / "summary.json").read_text())
    assert "pram_matrices.csv" in summary["output_files"]
    result = summary["steps"][0]["result"]
    # 48 strata x 40 x 40 matrices were 76,800 numbers in the summary; now a digest
    assert "matrices" not in result and result["matrices_file"] == "pram_matrices.csv"
    assert (out / "summary.json").stat().st_size < 20_000

    # the CSV holds every non-zero entry of the rows the records were drawn from, exactly:
    # the same matrices as the Python API run on the run's one stream (seed 5)
    api = P.invariant_pram(frame, ["cob"], pd_min=0.8, strata=["region", "age", "sex"],
                           seed=np.random.default_rng(5))
    pd.testing.assert_frame_equal(pd.read_csv(out / "protected.csv"), api.frame)
    # the probabilities parsed by Python's float (correctly rounded): pandas 2.2's default
    # parser may miss the written repr by 1 ulp, and pandas 3 deprecates its
    # float_precision="round_trip" (audit DD1 F10); the file itself is exact
    table = pd.read_csv(out / "pram_matrices.csv", keep_default_na=False,
                        dtype={"probability": str})
    table["probability"] = table["probability"].map(float)
    assert list(table.columns) == ["step", "variable", "stratum", "from", "to", "probability"]
    assert set(table["step"]) == {1} and set(table["variable"]) == {"cob"}
    levels = api.summary["levels"]["cob"]
    mats = api.summary["matrices"]["cob"]
    assert set(table["stratum"]) == set(mats) and len(mats) == 48
    pos = {lev: k for k, lev in enumerate(levels)}
    diag = []
    label = frame["region"] + "-" + frame["age"] + "-" + frame["sex"]  # code_strata's labels
    n_of = frame.groupby([label, frame["cob"]]).size()
    for (stratum, source), rows in table.groupby(["stratum", "from"]):
        m = mats[stratum]
        i = pos[source]
        got = np.zeros(len(levels))
        got[[pos[t] for t in rows["to"]]] = rows["probability"].to_numpy()
        np.testing.assert_array_equal(got, m[i])  # bit for bit: the row, zeros included
        diag.append((got[i], n_of[(stratum, source)]))
    # rows of the levels that occur in each stratum, and only those
    occurring = frame.groupby(["region", "age", "sex"])["cob"].nunique().sum()
    assert table.groupby(["stratum", "from"]).ngroups == occurring
    d = np.array(diag)
    keep = result["keep_probability"]["cob"]
    assert keep["min"] == d[:, 0].min() and keep["max"] == d[:, 0].max()
    assert keep["expected_share_kept"] == pytest.approx(
        (d[:, 0] * d[:, 1]).sum() / len(frame), rel=1e-12)
    assert keep["n_strata"] == 48
    assert table.loc[(table["stratum"] == keep["min_stratum"]) & (table["from"] == keep[
        "min_level"]) & (table["to"] == keep["min_level"]), "probability"].item() == keep["min"]

    # listed in output_files: a later run without PRAM into the folder takes it away
    again = run_in_process(capsys, "protect", str(tmp_path / "d.csv"), "--keys", "age,sex",
                           "--recode", "age:20s+30s=young", "--out", str(out), "-q")
    assert again.returncode == 0, again.stderr
    assert not (out / "pram_matrices.csv").exists()


def test_pram_matrices_csv_of_a_recipe_with_two_pram_steps(data, tmp_path, capsys):
    d, frame = data
    recipe = {"seed": 2, "steps": [
        {"step": "pram", "columns": ["region", "age"], "pd": 0.7},
        {"step": "pram", "columns": ["region"], "strata": ["sex"]},
    ]}
    (tmp_path / "r.json").write_text(json.dumps(recipe))
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(d / "p.csv"), "--keys", ",".join(KEYS),
                          "--recipe", str(tmp_path / "r.json"), "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out / "pram_matrices.csv")
    assert table.groupby("step")["variable"].unique().map(sorted).to_dict() == {
        1: ["age", "region"], 2: ["region"]}
    assert set(table.loc[table["step"] == 1, "stratum"]) == {"all"}
    assert set(table.loc[table["step"] == 2, "stratum"]) == {"f", "m"}
    # each row of a matrix sums to one; integer levels are written as the input has them
    sums = table.groupby(["step", "variable", "stratum", "from"])["probability"].sum()
    np.testing.assert_allclose(sums, 1.0, rtol=0, atol=1e-12)
    assert set(table.loc[table["variable"] == "region", "from"].astype(int)) == set(
        frame["region"])


def test_pram_file_named_by_the_user_in_out_is_refused_before_work(data, tmp_path, capsys):
    d, _ = data
    out = tmp_path / "out"
    first = run_in_process(capsys, "protect", str(d / "p.csv"), "--keys", "age",
                           "--recode", "age:20s+30s=young", "--out", str(out), "-q")
    assert first.returncode == 0, first.stderr
    (out / "pram_matrices.csv").write_text("mine\n")  # the user's, not an output
    proc = run_in_process(capsys, "protect", str(d / "p.csv"), "--keys", "age",
                          "--pram", "region", "--out", str(out), "-q")
    assert proc.returncode == 2 and "pram_matrices.csv" in proc.stderr, proc.stderr
    assert (out / "pram_matrices.csv").read_text() == "mine\n"


# ---- --recode of levels holding "+" (audit AA4, finding 4) ---------------------------------
@pytest.fixture()
def plus_levels(tmp_path):
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({
        "age": rng.choice(["60-69", "70-79", "80+"], 200),
        "x": rng.choice(["a", "b", "a+b", "c"], 200),
        "sex": rng.choice(["m", "f"], 200),
    })
    frame.to_csv(tmp_path / "d.csv", index=False)
    return tmp_path / "d.csv", frame


def test_recode_names_a_level_holding_a_plus(plus_levels, tmp_path, capsys):
    path, frame = plus_levels
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex",
                          "--recode", "age:70-79+80+=70+", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(out / "protected.csv")
    want = frame["age"].where(frame["age"] == "60-69", "70+")
    pd.testing.assert_series_equal(got["age"], want)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"][0]["parameters"]["mapping"] == {"70-79": "70+", "80+": "70+"}
    # a second recode sees the first one's levels: "70+" is one of them now
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex",
                          "--recode", "age:70-79+80+=70+", "--recode", "age:60-69+70+=60+",
                          "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert set(pd.read_csv(out / "protected.csv")["age"]) == {"60+"}
    # ordinary levels as before, also beside a level holding "+" ("a+c" reads a, c)
    proc = run_in_process(capsys, "protect", str(path), "--keys", "x,sex",
                          "--recode", "x:a+c=ac", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert set(pd.read_csv(out / "protected.csv")["x"]) == {"ac", "b", "a+b"}


@pytest.mark.parametrize(
    ("spec", "fragments"),
    [
        ("x:a+b=y", ["'a+b' splits on '+' into levels in more than one way",
                     '["a+b"] or ["a", "b"]', "its levels are", "--recipe",
                     '"mapping": {"a+b": "y"}']),
        ("age:70-79+80=70+", ["'70-79+80' does not split on '+' into levels",
                              "its levels are", "80+", "--recipe", '"column": "age"']),
        ("age:70-79+90s=x", ["level '90s' does not occur in the column"]),
    ],
    ids=["ambiguous", "no-split", "unknown-ordinary-level"],
)
def test_recode_plus_split_refused_in_one_line_before_work(plus_levels, tmp_path, capsys, spec,
                                                           fragments):
    path, _ = plus_levels
    out = tmp_path / "out"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", "--recode", spec,
                          "--out", str(out))
    assert_one_line_error(proc, "--recode of", *fragments)
    assert not out.exists()
