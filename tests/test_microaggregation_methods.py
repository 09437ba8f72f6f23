"""sdcMicro's ordered micro-aggregation methods and measures, against its actual output.

The R outputs in ``tests/data/sdcmicro_r/microaggregation_methods/`` were written by
``tests/data/sdcmicro_r/microaggregation_methods.R`` (R 4.2.2, sdcMicro 5.8.0; stamp,
regeneration command and file list in that folder's README.md):
``microaggregation(x, variables = c("expend", "income", "savings"), aggr, method,
measure, trim, varsort, strata_variables)$mx`` on the first 1502 records of sdcMicro's
``testdata`` (read here through ``sdcmicro_csv``: the same bytes), for methods
"simple", "single", "pca" and "onedims", measures "mean", "median", "trim" and
"onestep", with and without strata. R is not needed here.

Tolerance: rtol 1e-12. The partitions must be identical (a different group moves a value
by far more); the group statistics then differ only by summation order (R's colMeans and
mean accumulate in long double), a few units in the last place.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes.exceptions import InputError
from sdcbayes.protection import microaggregation as M
from sdcbayes.protection.microaggregation import (
    mdav,
    ordered_microaggregation,
    sorted_microaggregation,
)

R_OUT = Path(__file__).parent / "data" / "sdcmicro_r" / "microaggregation_methods"
NUM = ["expend", "income", "savings"]
N_USED = 1502  # the R script's n_used
RTOL = 1e-12  # summation order only (module docstring)
RUNS = pd.read_csv(R_OUT / "runs.csv", keep_default_na=False)


@pytest.fixture(scope="module")
def r_mx() -> pd.DataFrame:
    return pd.read_csv(R_OUT / "microaggregation_methods_testdata.csv.gz")


@pytest.fixture
def testdata(sdcmicro_csv) -> pd.DataFrame:
    return sdcmicro_csv("testdata.csv").iloc[:N_USED].reset_index(drop=True)


def run_sdcbayes(frame: pd.DataFrame, run: pd.Series):
    """The sdcbayes call that corresponds to one row of runs.csv."""
    strata = run["strata"].split("+") if run["strata"] else None
    kw = {"aggregate": run["measure"], "trim": float(run["trim"])}
    if run["measure"] != "trim":
        kw["trim"] = 0.0  # sdcMicro ignores its trim then; sdcbayes refuses a stray one
    if run["method"] == "onedims":  # each variable sorted on its own
        return sorted_microaggregation(frame, NUM, int(run["aggr"]), strata=strata, **kw)
    varsort = NUM[int(run["varsort"]) - 1] if run["method"] == "single" else None
    return ordered_microaggregation(frame, NUM, int(run["aggr"]), method=run["method"],
                                    varsort=varsort, strata=strata, **kw)


@pytest.mark.parametrize("name", RUNS["name"].tolist())
def test_equals_sdcmicro_output(name, r_mx, testdata):
    run = RUNS.set_index("name").loc[name]
    res = run_sdcbayes(testdata, run)
    for v in NUM:
        np.testing.assert_allclose(res.frame[v].to_numpy(), r_mx[f"{name}_{v}"].to_numpy(),
                                   rtol=RTOL, atol=0, err_msg=f"{name} {v}")


def test_runs_cover_every_method_measure_and_strata():
    # the parity cases above exercise what the R script promises
    assert set(RUNS["method"]) == {"simple", "single", "pca", "onedims"}
    assert set(RUNS["measure"]) == {"mean", "median", "trim", "onestep"}
    assert (RUNS["strata"] != "").sum() >= 3
    assert {3, 5} <= set(RUNS.loc[RUNS["measure"] == "mean", "aggr"])
    # 1502 = 3 * 500 + 2 = 4 * 375 + 2 = 5 * 300 + 2: every run has a larger last group
    assert all(N_USED % k == 2 for k in RUNS["aggr"])


def test_pca_axis_is_r_axis(testdata):
    """sdcbayes's orientation (largest loading positive) is the one R's LAPACK gave here.

    Were it not, the order would be reversed; test_flipped_axis_moves_the_larger_group
    states what changes then.
    """
    axes = pd.read_csv(R_OUT / "pca_axes.csv").set_index("stratum")
    res = ordered_microaggregation(testdata, NUM, 3, method="pca")
    np.testing.assert_allclose(res.summary["first_component"]["all"], axes.loc["all"],
                               rtol=1e-9)  # an eigenvector: rounding amplified by the gap
    res = ordered_microaggregation(testdata, NUM, 3, method="pca", strata="sex")
    for s in ("1", "2"):
        np.testing.assert_allclose(res.summary["first_component"][s], axes.loc[f"sex={s}"],
                                   rtol=1e-9)


def test_small_stratum_sdcmicro_stops_sdcbayes_makes_one_group(testdata):
    # the R script's case: 13 records, strata of 8 and 5, aggr 3; sdcMicro's indexMicro
    # needs 2 * aggr records per stratum
    msg = (R_OUT / "small_stratum_error.txt").read_text().strip()
    assert msg == "Too less observations (5) for aggregate =3"
    small = testdata.iloc[:13].assign(grp=[1] * 8 + [2] * 5)
    res = ordered_microaggregation(small, NUM, 3, method="single", strata="grp")
    g = res.summary["group_of_record"]
    assert len(set(g[8:])) == 1 and len(set(g[:8]) & set(g[8:])) == 0  # 5 records, one group
    np.testing.assert_allclose(res.frame["income"].iloc[8:], small["income"].iloc[8:].mean(),
                               rtol=1e-15)
    assert sorted(res.log["size"]) == [3, 5, 5]  # 8 = 3 + 5; the small stratum whole


# --------------------------------------------------------------------------- properties
@pytest.fixture
def synthetic() -> pd.DataFrame:
    rng = np.random.default_rng(20261126)
    x = rng.lognormal(size=(103, 3)) @ np.array([[1, .5, .2], [0, 1, .3], [0, 0, 1]])
    return pd.DataFrame(x, columns=["a", "b", "c"]).assign(s=rng.integers(0, 3, 103))


@pytest.mark.parametrize("method", ["simple", "single", "pca"])
@pytest.mark.parametrize("k", [2, 4, 7])
def test_group_sizes_and_means(synthetic, method, k):
    res = ordered_microaggregation(synthetic, ["a", "b", "c"], k, method=method, strata="s")
    sizes = res.log.groupby("stratum")["size"]
    for label, part in sizes:
        n = int((synthetic["s"].astype(str) == label).sum())
        # indexMicro: n // k groups, all of k except the last, k + n mod k
        assert part.tolist() == [k] * (n // k - 1) + [k + n % k]
    # the mean keeps every column's total, within each stratum too
    for col in ("a", "b", "c"):
        got = res.frame.groupby("s")[col].sum().to_numpy()
        np.testing.assert_allclose(got, synthetic.groupby("s")[col].sum().to_numpy(),
                                   rtol=1e-12)
    # every record's value is the mean of its group's original values
    g = res.summary["group_of_record"]
    means = synthetic.groupby(g)["a"].transform("mean")
    np.testing.assert_allclose(res.frame["a"], means, rtol=1e-12)
    assert synthetic.columns.tolist() == res.frame.columns.tolist()


def test_single_sorts_on_varsort_ties_in_file_order():
    df = pd.DataFrame({"x": [5.0, 1.0, 5.0, 1.0, 5.0, 1.0, 9.0],
                       "y": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]})
    # sorted on x, ties in file order (R's stable radix sort): rows 1, 3 | 5, 0 | 2, 4, 6;
    # R printed microaggregation(df, c("x", "y"), aggr = 2, method = "single")$mx$y as
    # 3.5 3.0 5.0 3.0 5.0 3.5 5.0 (sdcMicro 5.8.0, run here)
    res = ordered_microaggregation(df, ["x", "y"], 2, method="single", varsort="x")
    assert res.frame["y"].tolist() == [3.5, 3.0, 5.0, 3.0, 5.0, 3.5, 5.0]
    # on y: file order, so the same as "simple"
    a = ordered_microaggregation(df, ["x", "y"], 2, method="single", varsort="y").frame
    b = ordered_microaggregation(df, ["x", "y"], 2, method="simple").frame
    pd.testing.assert_frame_equal(a, b)


def test_measures_on_one_group():
    # one group of 5; R: mean(c(1,2,3,4,100), trim = 0.2) = mean(2, 3, 4) = 3; onestep:
    # median 3, mad 1.4826 * median(|x - 3|) = 1.4826, limits 3 -+ 3/1.486 * 1.4826, so
    # 100 -> 3 + 2.99313..., the others kept
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 100.0], "y": [5.0, 4.0, 3.0, 2.0, 1.0]})
    got = {m: ordered_microaggregation(df, ["x", "y"], 5, method="simple", aggregate=m,
                                       trim=0.2 if m == "trim" else 0.0).frame["x"].iloc[0]
           for m in ("mean", "median", "trim", "onestep")}
    assert got["mean"] == 22.0 and got["median"] == 3.0 and got["trim"] == 3.0
    assert got["onestep"] == pytest.approx((1 + 2 + 3 + 4 + 3 + 3 / 1.486 * 1.4826) / 5,
                                           rel=1e-15)
    half = ordered_microaggregation(df, ["x", "y"], 5, method="simple", aggregate="trim",
                                    trim=0.5).frame["x"].iloc[0]
    assert half == 3.0  # R's mean(x, trim >= 0.5) is the median


def test_mdav_takes_the_new_measures_on_its_groups(synthetic):
    cols = ["a", "b", "c"]
    base = mdav(synthetic, cols, 4)
    g = base.summary["group_of_record"]
    for measure, trim in (("trim", 0.25), ("onestep", 0.0)):
        res = mdav(synthetic, cols, 4, aggregate=measure, trim=trim)
        np.testing.assert_array_equal(res.summary["group_of_record"], g)  # same groups
        for col in cols:  # the statistic of each MDAV group, computed directly
            for grp in np.unique(g)[:5]:
                v = np.sort(synthetic[col].to_numpy()[g == grp])
                if measure == "trim":
                    cut = int(np.floor(v.size * trim))
                    expect = v[cut:v.size - cut].mean()
                else:
                    med = np.median(v)
                    lim = 3 / 1.486 * 1.4826 * np.median(np.abs(v - med))
                    expect = np.clip(v, med - lim, med + lim).mean()
                assert res.frame[col].to_numpy()[g == grp][0] == pytest.approx(expect,
                                                                                rel=1e-13)


def test_flipped_axis_moves_the_larger_group(synthetic, monkeypatch):
    """Where R's LAPACK gives the other sign, the order is reversed (documented)."""
    cols = ["a", "b", "c"]
    frame = synthetic.iloc[:101]  # 101 = 3 * 33 + 2 = 101 * 1
    ours = {k: ordered_microaggregation(frame, cols, k, method="pca") for k in (3, 101)}
    orient = M._orient_component
    monkeypatch.setattr(M, "_orient_component", lambda v: -orient(v))  # the other sign
    flipped = {k: ordered_microaggregation(frame, cols, k, method="pca") for k in (3, 101)}
    # n divisible by k: the same partition, whichever way the axis points
    pd.testing.assert_frame_equal(ours[101].frame, flipped[101].frame)
    # otherwise the larger group (k + n mod k = 5) sits at the other end of the axis
    a = ours[3].log.set_index("group")
    b = flipped[3].log.set_index("group")
    assert a["size"].iloc[-1] == 5 and b["size"].iloc[-1] == 5
    assert set(a["records"].iloc[0]) <= set(b["records"].iloc[-1])
    assert set(b["records"].iloc[0]) <= set(a["records"].iloc[-1])


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"method": "rmd"}, "covMcd"),
    ({"method": "mcdpca"}, "cov.mcd"),
    ({"method": "pppca"}, "projection-pursuit"),
    ({"method": "clustpca"}, "random starts"),
    ({"method": "influence"}, "random starts"),
    ({"method": "mdav"}, "mdav()"),
    ({"method": "onedims"}, "sorted_microaggregation()"),
    ({"method": "spiral"}, "must be one of"),
    ({"columns": ["a"]}, "at least two columns"),
    ({"method": "pca", "varsort": "a"}, "applies to method 'single'"),
    ({"method": "single", "varsort": "s"}, "must be one of the columns"),
    ({"aggregate": "mode"}, "aggregate='mode'"),
    ({"aggregate": "trim", "trim": 0.6}, "from 0 to 0.5"),
    ({"aggregate": "trim", "trim": True}, "from 0 to 0.5"),
    ({"trim": 0.2}, "applies to aggregate='trim'"),
    ({"k": 0}, "k=0"),
    ({"k": 60, "strata": "s"}, "fewer than k=60"),
    ({"strata": "a"}, "both aggregated and strata"),
    ({"columns": ["a", "s2"]}, "constant"),
    ({"columns": ["a", "txt"]}, "txt"),
])
def test_bad_input_refused(synthetic, kwargs, fragment):
    frame = synthetic.assign(s2=1.0, txt="x")
    before = frame.copy()
    kw = {"columns": ["a", "b"], "k": 3, "method": "pca"} | kwargs
    with pytest.raises(InputError) as err:
        ordered_microaggregation(frame, **kw)
    assert fragment in str(err.value)
    pd.testing.assert_frame_equal(frame, before)


def test_pca_needs_more_records_than_columns_per_stratum():
    df = pd.DataFrame({"a": [1.0, 2, 3, 4, 5, 6], "b": [2.0, 1, 4, 3, 6, 5],
                       "c": [0.0, 1, 0, 2, 5, 1], "s": [1, 1, 1, 2, 2, 2]})
    with pytest.raises(InputError, match="more records than columns in stratum '1'"):
        ordered_microaggregation(df, ["a", "b", "c"], 1, method="pca", strata="s")


def test_missing_values_refused():
    df = pd.DataFrame({"a": [1.0, np.nan, 3, 4, 5, 6], "b": [2.0, 1, 4, 3, 6, 5]})
    with pytest.raises(InputError, match="missing or infinite"):
        ordered_microaggregation(df, ["a", "b"], 3, method="simple")


def test_sorted_and_mdav_refuse_bad_measures(synthetic):
    with pytest.raises(InputError, match="aggregate='mode'"):
        sorted_microaggregation(synthetic, ["a"], 3, aggregate="mode")
    with pytest.raises(InputError, match="applies to aggregate='trim'"):
        mdav(synthetic, ["a", "b"], 3, trim=0.1)


# --------------------------------------------------------------------------- CLI
def test_cli_ordered_methods(tmp_path, capsys, monkeypatch, synthetic):
    monkeypatch.chdir(tmp_path)
    synthetic.assign(key=np.arange(103) % 4).to_csv("d.csv", index=False)
    proc = run_in_process(capsys, "protect", "d.csv", "--keys", "key",
                          "--microaggregate", "a,b,c", "--mdav-k", "4",
                          "--microaggregate-method", "single", "--microaggregate-varsort", "b",
                          "--microaggregate-measure", "trim", "--microaggregate-trim", "0.25",
                          "--out", "o", "--quiet")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(tmp_path / "o" / "protected.csv")
    want = ordered_microaggregation(synthetic, ["a", "b", "c"], 4, method="single",
                                    varsort="b", aggregate="trim", trim=0.25).frame
    for col in ("a", "b", "c"):
        np.testing.assert_allclose(got[col], want[col], rtol=1e-12)
    # a recipe step takes the same settings
    (tmp_path / "r.json").write_text(
        '[{"step": "microaggregate", "columns": ["a", "b"], "k": 3, "method": "pca", '
        '"aggregate": "onestep"}]')
    proc = run_in_process(capsys, "protect", "d.csv", "--keys", "key", "--recipe", "r.json",
                          "--out", "o2", "--quiet")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(tmp_path / "o2" / "protected.csv")
    want = ordered_microaggregation(synthetic, ["a", "b"], 3, method="pca",
                                    aggregate="onestep").frame
    np.testing.assert_allclose(got["a"], want["a"], rtol=1e-12)


@pytest.mark.parametrize(("args", "fragments"), [
    (["--microaggregate", "a", "--microaggregate-method", "pca"],
     ["--microaggregate-method pca", "two or more columns"]),
    (["--microaggregate", "a,b", "--microaggregate-varsort", "a"],
     ["--microaggregate-varsort", "method \"single\""]),
    (["--microaggregate", "a,b", "--microaggregate-method", "single",
      "--microaggregate-varsort", "c"], ["must be one of the columns"]),
    (["--microaggregate", "a,b", "--microaggregate-trim", "0.2"],
     ["--microaggregate-trim", "trim"]),
    (["--microaggregate", "a,b", "--microaggregate-measure", "trim",
      "--microaggregate-trim", "0.7"], ["--microaggregate-trim", "<= 0.5"]),
    (["--microaggregate-measure", "median"], ["--microaggregate-measure", "--microaggregate"]),
])
def test_cli_bad_settings(tmp_path, capsys, monkeypatch, synthetic, args, fragments):
    monkeypatch.chdir(tmp_path)
    synthetic.assign(key=np.arange(103) % 4).to_csv("d.csv", index=False)
    proc = run_in_process(capsys, "protect", "d.csv", "--keys", "key", *args, "--out", "o")
    assert proc.returncode == 2
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "o").exists()
