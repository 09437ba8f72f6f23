"""Data shuffling (:func:`sdcbayes.protection.shuffle`, sdcMicro's ``shuffle``).

Parity with sdcMicro's actual output: ``tests/data/sdcmicro_r/shuffle.R`` ran sdcMicro
5.8.0's ``shuffle`` on the first 1500 records of testdata (five settings) and stored, beside
R's shuffled and perturbed values, the normal draws R made (MASS's ``mvrnorm``) and the
mean and covariance each draw was made with. Fed those draws in place of its own,
``shuffle`` must give R's shuffled values exactly (a rank reassignment: equal values), its
perturbed values and draw parameters to arithmetic precision. Then properties of
sdcbayes's own seeded runs, refusals before any work, and ``sdcbayes protect --shuffle`` /
a recipe's ``shuffle`` step.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process, run_main
from scipy import stats

from sdcbayes.exceptions import InputError
from sdcbayes.microdata import read_microdata
from sdcbayes.protection import shuffle
from sdcbayes.protection import shuffling as shmod  # the module
from sdcbayes.protection.infoloss import il1

R_DIR = Path(__file__).parent / "data" / "sdcmicro_r" / "shuffle"
NUM = ["expend", "income", "savings"]
#: the library's warning about a categorical predictor under "ds" with sdcMicro's model
INDICATOR_WARNING = r"shuffle: predictor\(s\) .* enter as indicators"
#: for tests that use such a predictor on purpose (the warning is tested on its own)
quiet_indicators = pytest.mark.filterwarnings(
    "ignore:.*enter as indicators of their levels:UserWarning")

#: shuffle.R's settings: columns, predictors, method, covmethod, weights column
R_CONFIGS = {
    "ds_spearman": (NUM, ["urbrur", "walls", "age", "sex"], "ds", "spearman", None),
    "ds_pearson": (NUM, ["urbrur", "walls", "age", "sex"], "ds", "pearson", None),
    "ds_onepredictor": (["income", "savings"], ["age"], "ds", "spearman", None),
    "mvn_spearman": (NUM, ["urbrur", "walls", "age"], "mvn", "spearman", None),
    "mvn_pearson_weighted": (NUM, ["urbrur", "walls", "age"], "mvn", "pearson",
                             "household_weights"),
}


def _testdata(sdcmicro_csv) -> pd.DataFrame:
    """shuffle.R's input: the first 1500 records, walls a factor (R: ``factor(walls)``)."""
    d = sdcmicro_csv("testdata.csv").iloc[:1500].copy()
    d["walls"] = d["walls"].astype("category")
    return d


# --------------------------------------------------------------------------- R parity
@pytest.mark.parametrize("config", list(R_CONFIGS))
def test_rebuilds_sdcmicro_shuffle_from_r_draws(config, sdcmicro_csv, monkeypatch):
    cols, preds, method, cov, weights = R_CONFIGS[config]
    data = _testdata(sdcmicro_csv)
    r = pd.read_csv(R_DIR / f"{config}.csv.gz")
    params = pd.read_csv(R_DIR / "draw_parameters.csv")
    calls: list[int] = []

    def r_draws(mean, sigma):
        # R's d-th mvrnorm call: its parameters must be ours (deterministic arithmetic on
        # the same data, so to rounding: rtol 1e-9 of the matrix's scale), its draws R's
        d = len(calls) + 1
        calls.append(d)
        p = params[(params["config"] == config) & (params["draw"] == d)]
        k = len(mean)
        r_sigma = p[[f"sigma_{j + 1}" for j in range(k)]].to_numpy()
        np.testing.assert_allclose(sigma, r_sigma, rtol=1e-9,
                                   atol=1e-9 * np.abs(r_sigma).max())
        np.testing.assert_allclose(mean, p["mu"].to_numpy(), rtol=1e-9, atol=1e-12)
        return r[[f"draw{d}_{j + 1}" for j in range(k)]].to_numpy()

    # shuffle's own sampler replaced by R's draws: the public function, end to end
    monkeypatch.setattr(shmod, "_mvrnorm", lambda rng, n: r_draws)
    perturbed: list[np.ndarray] = []
    real = shmod._perturbed
    monkeypatch.setattr(shmod, "_perturbed",
                        lambda *a: perturbed.append(real(*a)) or perturbed[-1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = shuffle(data, cols, preds, method=method, covmethod=cov, weights=weights, seed=1)
    # sdcMicro's model with factor(walls) under "ds": warned (and still R's output)
    warned = [w for w in caught if "enter as indicators" in str(w.message)]
    assert len(warned) == (method == "ds" and "walls" in preds), [str(w.message) for w in caught]
    assert calls == ([1] if method == "ds" else [1, 2])
    # R's Y*: the same arithmetic in another order (BLAS, lm's QR): 1e-9 of its scale
    r_pert = r[[f"perturbed_{c}" for c in cols]].to_numpy()
    np.testing.assert_allclose(perturbed[0], r_pert, rtol=1e-9,
                               atol=1e-9 * np.abs(r_pert).max())
    # the released values: exactly R's (each an original value, placed by rank)
    for c in cols:
        np.testing.assert_array_equal(res.frame[c].to_numpy(dtype=np.float64),
                                      r[f"shuffled_{c}"].to_numpy())
    untouched = [c for c in data.columns if c not in cols]
    pd.testing.assert_frame_equal(res.frame[untouched], data[untouched])
    # R's model.matrix columns: factor(walls) (levels 2, 3, 9 here) as walls3, walls9
    r_cols = pd.read_csv(R_DIR / "model_columns.csv").set_index("config")["columns"]
    assert res.summary["model_columns"] == r_cols[config].split()


def test_mlm_is_refused_because_sdcmicro_fails_on_it():
    # shuffle.R ran method = "mlm" and stored R's error (predict() given a matrix)
    assert "must be a data.frame, not a matrix" in (R_DIR / "mlm_error.txt").read_text()
    frame = _synthetic(50, seed=1)
    with pytest.raises(InputError, match=r"method='mlm' is not offered.*'ds'.*'mvn'"):
        shuffle(frame, ["y1", "y2"], ["s", "g"], method="mlm")


# --------------------------------------------------------------------------- properties
def _synthetic(n: int, seed: int) -> pd.DataFrame:
    """Two lognormal responses tied to numeric predictors s, t and a 3-level one, g."""
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], n)
    s, t = rng.normal(size=n), rng.normal(size=n)
    shift = pd.Series(g).map({"a": 0.0, "b": 0.8, "c": -0.6}).to_numpy()
    z1 = 0.6 * s + 0.5 * shift + 0.6 * rng.normal(size=n)
    z2 = 0.5 * z1 - 0.3 * s + 0.5 * t + 0.6 * rng.normal(size=n)
    return pd.DataFrame({"y1": np.exp(z1).round(2), "y2": np.round(np.exp(z2) * 100),
                         "z1": z1, "z2": z2, "s": s, "t": t, "g": g, "txt": "v",
                         "other": np.arange(n)})


@quiet_indicators
def test_margins_exact_dtypes_kept_input_untouched():
    frame = _synthetic(2000, seed=2)
    frame["y2"] = frame["y2"].astype(np.int64)
    before = frame.copy()
    res = shuffle(frame, ["y1", "y2"], ["s", "g"], seed=5)
    pd.testing.assert_frame_equal(frame, before)
    for c in ("y1", "y2"):
        assert res.frame[c].dtype == frame[c].dtype
        np.testing.assert_array_equal(np.sort(res.frame[c].to_numpy()),
                                      np.sort(frame[c].to_numpy()))
        assert (res.frame[c].to_numpy() != frame[c].to_numpy()).mean() > 0.9
    pd.testing.assert_frame_equal(res.frame[["s", "g", "other"]], frame[["s", "g", "other"]])
    assert list(res.log["variable"]) == ["y1", "y2"]
    assert res.summary["seed"] == 5 and res.summary["model_columns"] == ["s", "gb", "gc"]
    assert res.summary["indicator_predictors"] == ["g"]


@pytest.mark.parametrize("covmethod, cols", [("spearman", ["y1", "y2"]),
                                             ("pearson", ["z1", "z2"])])
def test_ds_keeps_rank_correlations_with_numeric_predictors(covmethod, cols):
    # 20,000 records: Spearman's rho has a sampling sd below 1/sqrt(n) = 0.007, and the
    # shuffled file is a fresh draw from the fitted copula, so the difference of the two
    # has an sd of about 0.01; 0.03 is three of them. The dependence is strong (rho 0.65
    # between y1 and s, 0.3 to 0.4 between the columns and between y2 and t), so a
    # shuffle that lost it (a plain permutation: rho about 0) fails by ten tolerances.
    # Pearson's r is the copula's correlation only for normal margins: z1, z2 (the
    # module docstring: on skewed columns "pearson" attenuates the correlations)
    frame = _synthetic(20_000, seed=3)
    res = shuffle(frame, cols, ["s", "t"], covmethod=covmethod, seed=11)
    pairs = [(a, b) for a in cols for b in ("s", "t")] + [tuple(cols)]
    for a, b in pairs:
        before = stats.spearmanr(frame[a], frame[b])[0]
        after = stats.spearmanr(res.frame[a], res.frame[b] if b in cols else frame[b])[0]
        assert abs(after - before) < 0.03, (a, b, before, after)
    assert stats.spearmanr(frame[cols[0]], frame["s"])[0] > 0.6


def test_ds_attenuates_rank_correlations_with_indicator_predictors():
    # documented: an indicator's two-valued normal scores are not the normal copula the
    # 2 sin(pi r / 6) conversion assumes, so its rank correlation with a shuffled column
    # keeps its sign but shrinks (0.29 -> 0.21 for y1 and g == "b" here), as in sdcMicro;
    # "normal-scores" keeps it (0.29 -> 0.29), to the 0.03 of the test above
    frame = _synthetic(20_000, seed=3)
    with pytest.warns(UserWarning, match=INDICATOR_WARNING + r".*covmethod='normal-scores'"):
        res = shuffle(frame, ["y1", "y2"], ["s", "g"], seed=11)
    fixed = shuffle(frame, ["y1", "y2"], ["s", "g"], covmethod="normal-scores", seed=11)
    for level in ("b", "c"):
        x = frame["g"] == level
        before = stats.spearmanr(frame["y1"], x)[0]
        after = stats.spearmanr(res.frame["y1"], x)[0]
        assert abs(before) > 0.25 and 0.4 < after / before < 0.95, (level, before, after)
        assert abs(stats.spearmanr(fixed.frame["y1"], x)[0] - before) < 0.03, level


def _five_levels(n: int, seed: int) -> pd.DataFrame:
    """Two columns tied to each other and to a 5-level factor g (its effects -1.4 .. 1.4).

    y1 = exp(a + e1), y2 = a + 0.3 e1 + e2 with a = 0.7 (-2, -1, 0, 1, 2)[g]: most of the
    columns' rank correlation (0.64) runs through g; gnum is g as a number.
    """
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 5, n)
    a = 0.7 * np.array([-2.0, -1.0, 0.0, 1.0, 2.0])[g]
    e1 = rng.normal(size=n)
    return pd.DataFrame({"y1": np.exp(a + e1), "y2": a + 0.3 * e1 + rng.normal(size=n),
                         "g": pd.Categorical(np.array(list("vwxyz"))[g]),
                         "gnum": g.astype(np.float64)})


def test_categorical_predictor_breaks_sdcmicro_model_normal_scores_keeps_correlations():
    # B1: with g as a factor, sdcMicro's model (spearman/pearson converted by
    # 2 sin(pi r / 6)) mis-states the indicators' two-valued scores, and the rank
    # correlation *between the shuffled columns* falls (0.633 -> 0.48, pearson 0.28:
    # documented), far beyond sampling error: with 20,000 records a kept correlation moves
    # by an sd of about 0.01 (test_ds_keeps_rank_correlations_with_numeric_predictors),
    # 0.03 is three. "normal-scores" (the GADP step on the scores' own covariance) keeps
    # it, and the correlations with the levels; g given as a number (documented advice)
    # loses less (0.61) than as a factor
    frame = _five_levels(20_000, seed=13)
    before = stats.spearmanr(frame["y1"], frame["y2"])[0]
    assert 0.6 < before < 0.68

    def after(res):
        return stats.spearmanr(res.frame["y1"], res.frame["y2"])[0]

    for cov in ("spearman", "pearson"):
        with pytest.warns(UserWarning, match=INDICATOR_WARNING):
            broken = shuffle(frame, ["y1", "y2"], ["g"], covmethod=cov, seed=2)
        assert after(broken) < before - 0.1, (cov, before, after(broken))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither is warned about
        fixed = shuffle(frame, ["y1", "y2"], ["g"], covmethod="normal-scores", seed=2)
        number = shuffle(frame, ["y1", "y2"], ["gnum"], seed=2)
    assert abs(after(fixed) - before) < 0.03, (before, after(fixed))
    assert after(broken) + 0.05 < after(number) < before, (before, after(number))
    assert fixed.summary["covmethod"] == "normal-scores"
    for level in "wxyz":
        x = frame["g"] == level
        for c in ("y1", "y2"):
            r0 = stats.spearmanr(frame[c], x)[0]
            assert abs(stats.spearmanr(fixed.frame[c], x)[0] - r0) < 0.03, (c, level)
    # the margins are still exact
    np.testing.assert_array_equal(np.sort(fixed.frame["y1"]), np.sort(frame["y1"]))


def test_normal_scores_keeps_numeric_predictors_correlations_too():
    # the scores' covariance is a valid model for continuous columns as well: every pair of
    # the numeric-predictor test within its 0.03, with a categorical predictor beside them
    frame = _synthetic(20_000, seed=3)
    frame["gb"] = frame["g"] == "b"
    res = shuffle(frame, ["y1", "y2"], ["s", "t", "g"], covmethod="normal-scores", seed=11)
    for a, b in [("y1", "y2"), ("y1", "s"), ("y2", "s"), ("y2", "t"), ("y1", "gb"),
                 ("y2", "gb")]:
        before = stats.spearmanr(frame[a], frame[b])[0]
        got = stats.spearmanr(res.frame[a], res.frame[b] if b in ("y1", "y2") else frame[b])
        assert abs(got[0] - before) < 0.03, (a, b, before, got[0])


def test_indicator_warning_only_where_the_model_is_wrong():
    frame = _synthetic(300, seed=5)
    frame["flag"] = np.random.default_rng(0).random(len(frame)) < 0.4  # boolean: indicators
    with pytest.warns(UserWarning, match=r"predictor\(s\) \['g', 'flag'\] enter as indicators"
                      r".*covmethod='pearson'"):
        res = shuffle(frame, ["y1", "y2"], ["s", "g", "flag"], covmethod="pearson", seed=1)
    assert res.summary["indicator_predictors"] == ["g", "flag"]
    for kwargs in ({"predictors": ["s", "t"]},
                   {"predictors": ["s", "g"], "covmethod": "normal-scores"},
                   {"predictors": ["s", "g"], "method": "mvn"}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = shuffle(frame, ["y1", "y2"], kwargs.pop("predictors"), seed=1, **kwargs)
    assert res.summary["indicator_predictors"] == ["g"]  # recorded, but mvn is not warned


def test_mvn_does_not_keep_the_records_relation_to_predictors():
    # documented: sdcMicro's "mvn" ranks by a freshly drawn sample, not the records' own
    # predictors; rho with s is about 0 (sd 1/sqrt(n) = 0.007 at n = 20,000)
    frame = _synthetic(20_000, seed=4)
    res = shuffle(frame, ["y1", "y2"], ["s", "g"], method="mvn", seed=12)
    assert stats.spearmanr(frame["y1"], frame["s"])[0] > 0.4
    assert abs(stats.spearmanr(res.frame["y1"], frame["s"])[0]) < 0.03


def test_sdcmicro_mvn_distorts_the_columns_mutual_rank_correlations(sdcmicro_csv):
    # documented from R's own output: testdata's expend and savings are unrelated (rank
    # correlation below 0.05 in absolute value); sdcMicro's mvn shuffle of them orders
    # both by regression fits on one drawn sample, and releases a correlation of -0.63
    data = _testdata(sdcmicro_csv)
    r = pd.read_csv(R_DIR / "mvn_spearman.csv.gz")
    assert abs(stats.spearmanr(data["expend"], data["savings"])[0]) < 0.05
    assert stats.spearmanr(r["shuffled_expend"], r["shuffled_savings"])[0] < -0.5


@quiet_indicators
def test_seed_repeats_and_drawn_seed_is_recorded():
    frame = _synthetic(300, seed=5)
    a = shuffle(frame, ["y1", "y2"], ["s", "g"], seed=21)
    b = shuffle(frame, ["y1", "y2"], ["s", "g"], seed=21)
    c = shuffle(frame, ["y1", "y2"], ["s", "g"], seed=22)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame["y1"].equals(c.frame["y1"])
    d = shuffle(frame, ["y1", "y2"], ["s", "g"], method="mvn")
    assert isinstance(d.summary["seed"], int)
    e = shuffle(frame, ["y1", "y2"], ["s", "g"], method="mvn", seed=d.summary["seed"])
    pd.testing.assert_frame_equal(d.frame, e.frame)
    assert d.provenance["settings"]["seed"] == d.summary["seed"]


def test_weights_enter_mvn_only():
    frame = _synthetic(400, seed=6)
    frame["w"] = np.random.default_rng(0).uniform(1, 5, len(frame))
    a = shuffle(frame, ["y1", "y2"], ["s", "g"], method="mvn", weights="w", seed=3)
    b = shuffle(frame, ["y1", "y2"], ["s", "g"], method="mvn", weights=frame["w"].to_numpy(),
                seed=3)
    c = shuffle(frame, ["y1", "y2"], ["s", "g"], method="mvn", seed=3)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame["y1"].equals(c.frame["y1"])  # the weighted regression differs
    assert a.summary["weights"] == "w" and b.summary["weights"] == "array"


@pytest.mark.parametrize("kwargs, message", [
    ({"columns": ["y1"]}, "at least 2 numeric variables"),
    ({"columns": ["y1", "s"]}, r"both shuffled \(columns\) and predictors"),
    ({"columns": ["y1", "nope"]}, "not found"),
    ({"predictors": []}, "predictors is empty: data shuffling conditions on at least one"),
    ({"predictors": ["s", "g", "g2"]},
     r"columns 'gc', 'g2y' \(from 'g', 'g2'\) are exactly collinear: one of them"),
    ({"predictors": ["s", "s_lin", "t"]},
     r"columns 's', 's_lin' \(from 's', 's_lin'\) are exactly collinear"),
    ({"predictors": ["s", "t", "s_plus_t"]}, r"columns 's', 't', 's_plus_t' .* collinear"),
    ({"predictors": ["g", "gb3"]}, r"columns 'gb', 'gb3' .* collinear"),
    ({"predictors": ["s", "s_exp"]}, "exactly collinear in their ranks"),
    ({"predictors": ["s", "s_exp"], "covmethod": "normal-scores"}, "collinear in their ranks"),
    ({"method": "mvn", "covmethod": "normal-scores"}, "'normal-scores' is a setting of"),
    ({"columns": ["y1", "txt"]}, "not numeric"),
    ({"columns": ["y1", "y_na"]}, "missing or infinite"),
    ({"predictors": ["g_na"]}, "predictor 'g_na' has missing values"),
    ({"predictors": ["one"]}, "has 1 level"),
    ({"predictors": ["s", "const"]}, "constant"),
    ({"method": "mlm"}, "sdcMicro 5.8.0's own 'mlm' fails"),
    ({"method": "egadp"}, "must be one of 'ds', 'mvn'"),
    ({"covmethod": "mcd"}, "covmethod='spearman'.*or 'pearson'"),
    ({"covmethod": "kendall"}, "must be one of 'spearman', 'pearson'"),
    ({"weights": "w"}, "not used by method='ds'"),
    ({"method": "mvn", "weights": [1.0, 2.0]}, "2 values for 60 records"),
    ({"method": "mvn", "weights": "w_neg"}, "positive and finite"),
])
def test_bad_input_is_refused_before_any_work(kwargs, message, monkeypatch):
    frame = _synthetic(60, seed=7)
    frame["y_na"] = frame["y1"].where(frame.index != 5)
    frame["g_na"] = frame["g"].where(frame.index != 9)
    frame["one"] = "x"
    frame["const"] = 1.0
    frame["w"] = 1.0
    frame["w_neg"] = frame["s"]
    # nested: g2 groups g's levels a, b; an affine function of s; a sum; an indicator of g
    frame["g2"] = frame["g"].map({"a": "x", "b": "x", "c": "y"})
    frame["s_lin"] = 2.0 * frame["s"] - 1.0
    frame["s_plus_t"] = frame["s"] + frame["t"]
    frame["gb3"] = 3.0 * (frame["g"] == "b") + 1.0
    frame["s_exp"] = np.exp(frame["s"])  # equal ranks: collinear for spearman's model
    before = frame.copy()

    def no_work(*args):
        raise AssertionError("the model ran before the input was refused")

    monkeypatch.setattr(shmod, "_perturbed", no_work)
    args = {"columns": ["y1", "y2"], "predictors": ["s", "g"]} | kwargs
    with pytest.raises(InputError, match=message):
        shuffle(frame, args.pop("columns"), args.pop("predictors"), **args)
    pd.testing.assert_frame_equal(frame, before)


def test_collinear_predictors_are_refused_near_collinear_ones_run():
    frame = _synthetic(100, seed=8)
    frame["s2"] = frame["s"]
    with pytest.raises(InputError, match="exactly collinear.*drop the redundant predictor"):
        shuffle(frame, ["y1", "y2"], ["s", "s2"], seed=1)
    # a strong but real dependence (correlation about 1 - 5e-7) is a valid model
    frame["s3"] = frame["s"] + 1e-3 * np.random.default_rng(0).normal(size=len(frame))
    shuffle(frame, ["y1", "y2"], ["s", "s3"], covmethod="pearson", seed=1)
    # exp(s) beside s: equal ranks, but not collinear values, which "pearson" correlates
    frame["s_exp"] = np.exp(frame["s"])
    shuffle(frame, ["y1", "y2"], ["s", "s_exp"], covmethod="pearson", seed=1)


def test_size_rule_is_stated_as_applied():
    # N6: n >= columns + model-matrix columns + 2; 4 records for 2 + 1 are refused,
    # and the message says 5 are needed, which run
    frame = _synthetic(60, seed=7)
    with pytest.raises(InputError, match=r"4 records .* needs at least 5 records"):
        shuffle(frame.iloc[:4], ["y1", "y2"], ["s"], seed=1)
    res = shuffle(frame.iloc[:5], ["y1", "y2"], ["s"], seed=1)
    assert sorted(res.frame["y1"]) == sorted(frame["y1"].iloc[:5])


# --------------------------------------------------------------------------- the CLI
@pytest.fixture(scope="module")
def cli_data(tmp_path_factory):
    frame = _synthetic(400, seed=9)
    frame["age"] = np.random.default_rng(1).integers(20, 30, len(frame))
    frame["w"] = np.random.default_rng(2).uniform(20, 60, len(frame)).round(2)
    frame["g2"] = frame["g"].map({"a": "x", "b": "x", "c": "y"})  # groups g's levels
    d = tmp_path_factory.mktemp("shuffle")
    frame.to_csv(d / "p.csv", index=False)
    return d / "p.csv", read_microdata(d / "p.csv")


def _protect(capsys, tmp_path, monkeypatch, csv, *args, keys="g"):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    proc = run_main(capsys, "protect", str(csv), "--keys", keys, *args, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads((out / "summary.json").read_text()), \
        pd.read_csv(out / "protected.csv"), out


@quiet_indicators  # the library call below; the command's warning: the next test
def test_cli_options_write_the_library_run(capsys, tmp_path, monkeypatch, cli_data):
    csv, frame = cli_data
    proc, s, prot, out = _protect(capsys, tmp_path, monkeypatch, csv, "--shuffle", "y1,y2",
                                  "--shuffle-by", "s,g", "--shuffle-cov", "pearson",
                                  "--seed", "7")
    direct = shuffle(frame, ["y1", "y2"], ["s", "g"], covmethod="pearson", seed=7)
    for c in ("y1", "y2"):
        np.testing.assert_array_equal(prot[c].to_numpy(), direct.frame[c].to_numpy())
    step = s["steps"][0]
    assert step["name"] == "shuffle"
    assert step["parameters"] == {"columns": ["y1", "y2"], "predictors": ["s", "g"],
                                  "method": "ds", "covmethod": "pearson"}
    log = pd.read_csv(out / "log.csv")
    assert list(log["variable"]) == ["y1", "y2"] and (log["method"] == "shuffle").all()
    # a numeric step: IL1 of the written file and the numeric risk
    assert s["risk"]["numeric"]["variables"] == ["y1", "y2"]
    assert s["information_loss"]["il1_numeric"] == pytest.approx(
        il1(frame, prot, ["y1", "y2"]), rel=1e-9)


def test_cli_warns_once_about_indicators_and_normal_scores_is_offered(capsys, tmp_path,
                                                                    monkeypatch, cli_data):
    csv, frame = cli_data
    proc, s, _, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--shuffle", "y1,y2",
                             "--shuffle-by", "s,g", "--seed", "7")
    mine = [w for w in s["warnings"] if "enters as indicators" in w]
    assert len(mine) == 1, s["warnings"]
    assert mine[0].startswith("--shuffle-by 'g' enters as indicators of its levels")
    for fragment in ("--shuffle-cov spearman", "between the shuffled variables",
                     "use --shuffle-cov normal-scores", "give an ordered categorical as a number"):
        assert fragment in mine[0]
    lines = [x for x in proc.stderr.splitlines() if "enters as indicators" in x]
    assert lines == [f"sdcbayes: warning: {mine[0]}"]
    assert "UserWarning" not in proc.stderr  # the library's own warning is not shown too
    # the remedy: no warning, the library's normal-scores run written
    (tmp_path / "b").mkdir()
    proc, s, prot, _ = _protect(capsys, tmp_path / "b", monkeypatch, csv, "--shuffle", "y1,y2",
                                "--shuffle-by", "s,g", "--shuffle-cov", "normal-scores",
                                "--seed", "7")
    assert not any("indicators" in w for w in s["warnings"]) and "indicators" not in proc.stderr
    direct = shuffle(frame, ["y1", "y2"], ["s", "g"], covmethod="normal-scores", seed=7)
    np.testing.assert_array_equal(prot["y2"].to_numpy(), direct.frame["y2"].to_numpy())
    assert s["steps"][0]["parameters"]["covmethod"] == "normal-scores"
    # a recipe's step is warned in its own words
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"seed": 4, "steps": [
        {"step": "shuffle", "columns": ["y1", "y2"], "predictors": ["g"]}]}))
    (tmp_path / "c").mkdir()
    _, s, _, _ = _protect(capsys, tmp_path / "c", monkeypatch, csv, "--recipe", str(recipe))
    mine = [w for w in s["warnings"] if "enters as indicators" in w]
    assert len(mine) == 1 and mine[0].startswith("step 1 (shuffle): predictor(s) 'g' enters")
    assert 'set the step\'s "covmethod" to "normal-scores"' in mine[0]


def test_cli_recipe_step_and_order_with_rank_swap_and_noise(capsys, tmp_path, monkeypatch,
                                                          cli_data):
    csv, frame = cli_data
    tmp_path.mkdir(exist_ok=True)
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"seed": 4, "steps": [
        {"step": "shuffle", "columns": ["y1", "y2"], "predictors": ["s", "g"],
         "method": "mvn"}]}))
    _, s, prot, _ = _protect(capsys, tmp_path, monkeypatch, csv, "--recipe", str(recipe))
    direct = shuffle(frame, ["y1", "y2"], ["s", "g"], method="mvn", seed=4)
    np.testing.assert_array_equal(prot["y1"].to_numpy(), direct.frame["y1"].to_numpy())
    assert s["steps"][0]["parameters"]["covmethod"] == "spearman"  # the default, stamped
    # options: rank swapping, then shuffling, then noise (module docstring's order)
    (tmp_path / "b").mkdir()
    _, s, _, _ = _protect(capsys, tmp_path / "b", monkeypatch, csv, "--noise", "age",
                          "--shuffle", "y1,y2", "--shuffle-by", "s", "--rank-swap", "s",
                          "--seed", "1")
    assert [st["name"] for st in s["steps"]] == ["rank_swap", "shuffle", "noise"]


def test_cli_shuffled_key_is_warned_about(capsys, tmp_path, monkeypatch, cli_data):
    csv, _ = cli_data
    proc, s, _, out = _protect(capsys, tmp_path, monkeypatch, csv, "--shuffle", "age,y1",
                               "--shuffle-by", "g", "--seed", "1", keys="age,g")
    assert any("--shuffle changes the key 'age'" in w and "reassigns them between records" in w
               for w in s["warnings"])
    assert "--shuffle changes the key 'age'" in proc.stderr
    # the report says the risk after reads the shuffled key's values as true
    report = (out / "report.html").read_text()
    assert "After step 1 (shuffle)" in report
    assert "The same holds for shuffled values" in report


@pytest.mark.parametrize("args, fragments", [
    (["--shuffle", "y1,y2"], ["--shuffle needs --shuffle-by"]),
    (["--shuffle-by", "s"], ["--shuffle-by is a setting of --shuffle"]),
    (["--shuffle", "y1", "--shuffle-by", "s"], ["step 1 (shuffle)", "at least 2"]),
    (["--shuffle", "y1,s", "--shuffle-by", "s"], ["in both --shuffle and --shuffle-by"]),
    (["--shuffle", "y1,y2", "--shuffle-by", "nope"], ["--shuffle-by", "nope"]),
    (["--shuffle", "y1,g", "--shuffle-by", "s"], ["step 1 (shuffle)", "'g'", "not numeric"]),
    (["--suppress-k", "3", "--shuffle", "y1,y2", "--shuffle-by", "g"],
     ["step 2 (shuffle)", "predictor 'g' may have missing values after step 1",
      "the step options run in a fixed order: to reorder the steps, give them in a --recipe"]),
    (["--shuffle", "y1,y2", "--shuffle-by", "s,g,g2"],
     ["step 1 (shuffle)", "'gc', 'g2y' (from 'g', 'g2') are exactly collinear"]),
    (["--shuffle", "y1,y2", "--shuffle-by", "s", "--shuffle-method", "mvn", "--shuffle-cov",
      "normal-scores"], ["step 1 (shuffle)", "'normal-scores' is a setting of method='ds'"]),
])
def test_cli_bad_input_one_line(capsys, tmp_path, monkeypatch, cli_data, args, fragments):
    csv, _ = cli_data
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "g", *args,
                          "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "out").exists()


def test_cli_shuffled_key_is_refused_under_latent_class(capsys, tmp_path, monkeypatch,
                                                         cli_data):
    csv, _ = cli_data
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "age,g", "--weight", "w",
                          "--model", "latent-class", "--shuffle", "age,y1", "--shuffle-by",
                          "s", "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, "step 1 (shuffle) changes the values of key(s) age",
                          "reassigning them between records", "--model closed-form")


def test_cli_recipe_empty_predictors_named_as_such(capsys, tmp_path, monkeypatch, cli_data):
    # N7: an empty list is a list of column names; the message says it must not be empty
    csv, _ = cli_data
    monkeypatch.chdir(tmp_path)
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "shuffle", "columns": ["y1", "y2"], "predictors": []}]}))
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "g", "--recipe", str(recipe),
                          "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, "step 1 (shuffle)", "predictors must be a non-empty list")


def test_cli_recipe_unsupported_method_is_named(capsys, tmp_path, monkeypatch, cli_data):
    csv, _ = cli_data
    monkeypatch.chdir(tmp_path)
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"steps": [
        {"step": "shuffle", "columns": ["y1", "y2"], "predictors": ["s"],
         "covmethod": "mcd"}]}))
    proc = run_in_process(capsys, "protect", str(csv), "--keys", "g", "--recipe", str(recipe),
                          "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, "step 1 (shuffle)", "covmethod='mcd'", "'pearson'")
