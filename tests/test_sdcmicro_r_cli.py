"""The command line against sdcMicro 5.8.0's own output, end to end, on sdcMicro's data files.

``tests/test_sdcmicro_r_risk.py`` and ``tests/test_sdcmicro_r_protection.py`` check the
Python API against R's stored outputs (``tests/data/sdcmicro_r/risk/`` and
``.../protection/``; their README.md files say what each file holds and how R wrote it).
Here the same numbers are read back from what ``sdcbayes assess``, ``suda`` and ``protect``
write (records.csv, summary.json, the protected CSV) after they read the same CSV files
themselves: the CLI types a CSV column by column from its text, reads missing-value codes
and integer-coded keys its own way, and writes numbers back as text, so a value could be
lost or changed on the way in or out where the API, handed a pandas frame, is right.

The tolerances are the API tests' (the R values have 17 significant digits): rtol 1e-12 for
sums and means (summation order), exact for counts and blanked cells, and the looser ones
where sdcMicro's own arithmetic is (its "exact" risk for large f_k, DIS-SUDA in single
precision), each explained where it is used. The commands run in this process
(``main_captured``) in a temporary folder; each runs once per module and its output is
shared by the tests that read it. The CSVs come from the ``sdcmicro_csv`` fixture (the
tests skip on a clone without the shared data folder); R is not needed.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import main_captured

R_DIR = Path(__file__).parent / "data" / "sdcmicro_r"
RISK = R_DIR / "risk"
PROT = R_DIR / "protection"

K5 = ["urbrur", "roof", "walls", "water", "sex"]
K7 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
KE = ["db040", "hsize", "rb090", "age", "pb220a"]  # pb220a: 2720 unquoted NA (wildcards)
NUM = ["expend", "income", "savings"]

# risk.R's cases: (file, keys, weight, household id, further options). testdata_na.csv.gz is
# risk.R's own output, its missing values written as R writes them (an unquoted NA, which the
# CLI reads as missing); test_quoted_na_is_a_level_without_na_values checks a quoted "NA".
CASES = {
    "testdata_k7_sw": ("testdata.csv", K7, "sampling_weight", "ori_hid", ()),
    "testdata_k7_hw": ("testdata.csv", K7, "household_weights", "ori_hid", ()),
    "testdata_k5_hw": ("testdata.csv", K5, "household_weights", "ori_hid", ()),
    "eusilc_k5": ("eusilc.csv", KE, "rb050", "db030", ()),
    "testdata_na_k7_hw": ("testdata_na.csv.gz", K7, "household_weights", "ori_hid", ()),
}
RATES = (0.01, 0.005, 0.002, 0.001)  # measure_risk_summary.csv's max_global_risk values


def r_table(path: Path, **kwargs) -> pd.DataFrame:
    return pd.read_csv(path, **kwargs)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, sdcmicro_csv):
    """A folder holding the data files, as a user has them, where the commands run."""
    from sdcbayes.validation import shared_data_dir

    folder = tmp_path_factory.mktemp("sdcmicro_cli")
    for name in ("testdata.csv", "eusilc.csv", "free1.csv"):
        sdcmicro_csv(name, nrows=1)  # skips the test where the shared data folder lacks it
        shutil.copy(shared_data_dir() / "sdcmicro" / name, folder / name)
    shutil.copy(RISK / "testdata_na.csv.gz", folder / "testdata_na.csv.gz")
    return folder


@pytest.fixture(scope="module")
def cli(workdir):
    """``run(out, *args)``: ``sdcbayes ARGS --out OUT -q`` in ``workdir``, once per ``out``."""
    done: dict[str, Path] = {}

    def run(out: str, *args: str) -> Path:
        if out not in done:
            with pytest.MonkeyPatch.context() as mp:
                mp.chdir(workdir)
                rc, _, stderr = main_captured(*args, "--out", out, "-q")
            assert rc == 0, stderr
            done[out] = workdir / out
        return done[out]

    return run


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def records(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / "records.csv")


# ------------------------------------------------------------------------------------
# 1. assess --model closed-form: freqCalc, indivRisk, measure_risk
# ------------------------------------------------------------------------------------


def assess(cli, case: str, method: str, rate: float | None = None) -> Path:
    file, keys, w, hid, extra = CASES[case]
    args = ["assess", file, "--keys", ",".join(keys), "--weight", w, "--household", hid,
            "--model", "closed-form", "--method", method, *extra]
    if rate is not None:
        args += ["--max-global-risk", str(rate)]
    return cli(f"assess_{case}_{method}_{rate}", *args)


@pytest.mark.parametrize("case", list(CASES))
def test_assess_approx_records_equal_r(cli, case):
    # records.csv: fk (freqCalc), Fk_hat (Fk), risk (indivRisk "approx" = measure_risk's
    # rk), household_risk (measure_risk's hier_risk), row i = record i of the input
    ref = r_table(RISK / f"records_{case}.csv.gz")
    rec = records(assess(cli, case, "approx", 0.01))
    assert len(rec) == len(ref)
    np.testing.assert_array_equal(rec["record"].to_numpy(), np.arange(len(ref)))
    np.testing.assert_array_equal(rec["fk"].to_numpy(), ref["fk"].to_numpy())
    # weight sums and the risk: summation order only (max rel. differences seen 2.2e-16
    # and 3.7e-16, as through the API: the CSV round trip loses nothing)
    np.testing.assert_allclose(rec["Fk_hat"].to_numpy(), ref["Fk"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(rec["risk"].to_numpy(), ref["rk_approx"].to_numpy(),
                               rtol=1e-12, atol=0)
    # 1 - prod(1 - rk) over the household, the product's order differs: tiny household
    # risks differ relatively more (max abs. difference seen 5e-16)
    np.testing.assert_allclose(rec["household_risk"].to_numpy(), ref["hier_risk"].to_numpy(),
                               rtol=1e-11, atol=1e-15)


@pytest.mark.parametrize("case", list(CASES))
def test_assess_approx_summary_equals_measure_risk(cli, case):
    summ = r_table(RISK / "measure_risk_summary.csv")
    s = summ[(summ["case"] == case) & (summ["max_global_risk"] == 0.01)].iloc[0]
    out = summary(assess(cli, case, "approx", 0.01))
    n = len(r_table(RISK / f"records_{case}.csv.gz"))
    assert out["n_records"] == out["n_records_input"] == n
    assert out["expected_reidentifications"] == pytest.approx(s["global_risk_ER"], rel=1e-12)
    assert out["expected_reidentification_rate"] == pytest.approx(s["global_risk"], rel=1e-12)
    assert out["household_expected_reidentifications"] == pytest.approx(s["hier_risk_ER"],
                                                                        rel=1e-12)
    # measure_risk's hier_risk (the file's figure) is hier_risk_ER / n
    assert out["household_expected_reidentifications"] / n == pytest.approx(s["hier_risk"],
                                                                            rel=1e-12)
    # freqCalc's n1: records in cells of one, missing values matching every value
    assert out["n_sample_uniques"] == s["n1"]
    # R's global_threshold is NA at 0.01 in every case (the file meets the target)
    assert np.isnan(s["global_threshold"]) and out["global_threshold"] is None


@pytest.mark.parametrize("case, rate", [(c, r) for c in CASES for r in RATES[1:]])
def test_assess_max_global_risk_equals_global_threshold(cli, case, rate):
    # --max-global-risk RATE -> summary.json's global_threshold, measure_risk(...,
    # max_global_risk = RATE)$global_threshold; last-bit differences of the risks move it
    # by an ulp at most (seen 4.3e-19 absolute)
    summ = r_table(RISK / "measure_risk_summary.csv")
    s = summ[(summ["case"] == case) & np.isclose(summ["max_global_risk"], rate)].iloc[0]
    got = summary(assess(cli, case, "approx", rate))["global_threshold"]
    if np.isnan(s["global_threshold"]):
        assert got is None
    else:
        assert got == pytest.approx(s["global_threshold"], rel=1e-12)


def test_assess_global_thresholds_are_exercised():
    # most (case, rate) pairs above have a threshold, so the comparison is not all NA
    summ = r_table(RISK / "measure_risk_summary.csv")
    assert summ["global_threshold"].notna().sum() >= 10


@pytest.mark.parametrize("case", list(CASES))
def test_assess_exact_records_equal_r_where_r_is_accurate(cli, workdir, case):
    # --method exact (the default) against indivRisk(method = "exact"): sdcMicro's formula
    # loses digits as f grows and is NaN once p^(1 - f) overflows (the API test's comment,
    # tests/test_sdcmicro_r_risk.py): rtol 1e-11 for f <= 100 (max seen 6.2e-13), 1e-5
    # beyond where R is finite (2.8e-6, R's rounding); where R is NaN the CLI writes a
    # finite risk at most the approximate one
    ref = r_table(RISK / f"records_{case}.csv.gz")
    rec = records(assess(cli, case, "exact"))
    np.testing.assert_array_equal(rec["fk"].to_numpy(), ref["fk"].to_numpy())
    risk, r_exact, fk = rec["risk"].to_numpy(), ref["rk_exact"].to_numpy(), ref["fk"].to_numpy()
    finite = np.isfinite(r_exact)
    small = finite & (fk <= 100)
    assert small.any()
    np.testing.assert_allclose(risk[small], r_exact[small], rtol=1e-11, atol=0)
    np.testing.assert_allclose(risk[finite & ~small], r_exact[finite & ~small], rtol=1e-5)
    nan = ~finite
    assert np.all(np.isfinite(risk[nan]) & (risk[nan] > 0))
    assert np.all(risk[nan] <= ref["rk_approx"].to_numpy()[nan])
    # the household risk from the written exact risks: 1 - prod(1 - r) over each
    # household of the input (measure_risk's hier_risk rule; R's file holds it on "approx")
    ids = pd.read_csv(workdir / CASES[case][0], usecols=[CASES[case][3]]).iloc[:, 0]
    hh = 1 - pd.Series(1 - risk).groupby(ids.to_numpy()).transform("prod").to_numpy()
    np.testing.assert_allclose(rec["household_risk"].to_numpy(), hh, rtol=1e-11, atol=1e-15)


def test_quoted_na_is_a_level_without_na_values(cli, workdir):
    # The documented reading (read_microdata's Notes): a quoted "NA" is the text NA, a level
    # of its own (Namibia), an unquoted NA is missing. The same file with its NA quoted:
    # without --na-values its all-NA records (every 401st) and scattered NA cells are not
    # wildcards and match only each other, so fewer records share a cell and the file's risk
    # comes out far above R's; with --na-values NA they are R's missing values again
    summ = r_table(RISK / "measure_risk_summary.csv")
    s = summ[summ["case"] == "testdata_na_k7_hw"].iloc[0]
    na = pd.read_csv(RISK / "testdata_na.csv.gz", dtype=str, keep_default_na=False)
    assert (na[K7] == "NA").any(axis=None)
    text = na.to_csv(index=False, lineterminator="\n")
    # every unquoted NA field quoted; nothing else changes
    (workdir / "testdata_quoted_na.csv").write_text(
        re.sub(r"(?<![^,\n])NA(?![^,\n])", '"NA"', text), encoding="utf-8")
    _, keys, w, hid, _ = CASES["testdata_na_k7_hw"]
    args = ("assess", "testdata_quoted_na.csv", "--keys", ",".join(keys), "--weight", w,
            "--household", hid, "--model", "closed-form", "--method", "approx")
    level = summary(cli("assess_quoted_na_as_level", *args))
    assert level["provenance"]["data"]["n_missing_key_records"] == 0
    assert level["n_sample_uniques"] > 3 * s["n1"]  # 296 against freqCalc's 94
    assert level["expected_reidentifications"] > 2 * s["global_risk_ER"]
    missing = summary(cli("assess_quoted_na_missing", *args, "--na-values", "NA"))
    unquoted = summary(assess(cli, "testdata_na_k7_hw", "approx"))
    assert missing["provenance"]["data"]["n_missing_key_records"] \
        == unquoted["provenance"]["data"]["n_missing_key_records"] \
        == int((na[K7] == "NA").any(axis=1).sum())
    assert missing["n_sample_uniques"] == unquoted["n_sample_uniques"] == s["n1"]
    np.testing.assert_allclose(missing["expected_reidentifications"],
                               s["global_risk_ER"], rtol=1e-12)


# ------------------------------------------------------------------------------------
# 2. assess --sensitive: ldiversity
# ------------------------------------------------------------------------------------

SENSITIVE = ["electcon", "relat", "income"]
LD_MEASURES = {"Distinct": "distinct", "Entropy": "entropy", "Recursive": "recursive"}


@pytest.fixture(scope="module")
def ldiv(cli):
    # ldiversity(testdata, keyVars = K5, ldiv_index = c("electcon", "relat", "income"))
    # with its default l_recurs_c = 2 (--l-diversity-c's default)
    return cli("assess_ldiversity", "assess", "testdata.csv", "--keys", ",".join(K5),
               "--weight", "household_weights", "--model", "closed-form",
               "--sensitive", ",".join(SENSITIVE))


def test_assess_sensitive_columns_equal_ldiversity(ldiv):
    ref = r_table(RISK / "ldiversity_testdata_k5.csv.gz")
    rec = records(ldiv)
    assert len(ref.columns) == 3 * len(SENSITIVE)
    for var in SENSITIVE:
        for r_name, name in LD_MEASURES.items():
            got = rec[f"{var}_{name}_l"].to_numpy()
            want = ref[f"{var}_{r_name}_Ldiversity"].to_numpy()
            if name == "entropy":  # exp(-sum p log p): max rel. difference seen 3.5e-15
                np.testing.assert_allclose(got, want, rtol=1e-12)
            else:
                np.testing.assert_array_equal(got, want)


def test_assess_sensitive_summary_counts_from_ldiversity(ldiv):
    # summary.json's l_diversity per variable: the records in cells whose records all share
    # one value (R's distinct l-diversity 1) and the distinct measure's spread over records
    ref = r_table(RISK / "ldiversity_testdata_k5.csv.gz")
    block = summary(ldiv)["l_diversity"]
    assert block["n_records"] == len(ref)
    for var in SENSITIVE:
        v = block["variables"][var]
        distinct = ref[f"{var}_Distinct_Ldiversity"].to_numpy()
        assert v["n_records_distinct_1"] == int((distinct == 1).sum())
        assert v["n_records_distinct_below_2"] == int((distinct < 2).sum())
        assert v["distinct"]["min"] == distinct.min() and v["distinct"]["max"] == distinct.max()
        assert v["distinct"]["mean"] == pytest.approx(distinct.mean(), rel=1e-12)
        entropy = ref[f"{var}_Entropy_Ldiversity"].to_numpy()
        assert v["entropy"]["mean"] == pytest.approx(entropy.mean(), rel=1e-12)


# ------------------------------------------------------------------------------------
# 3. suda: suda2 (defaults missing = -999, DisFraction = 0.01, original_scores = TRUE)
# ------------------------------------------------------------------------------------

SUDA = {
    "testdata": ("testdata.csv", ["urbrur", "roof", "walls", "water", "sex", "relat"], ()),
    "free1": ("free1.csv", ["REGION", "SEX", "AGE", "MARSTAT", "KINDPERS", "EDUC1", "ETNI"],
              ()),
    # R's NA keys (never in an MSU, matching nothing)
    "testdata_na": ("testdata_na.csv.gz", K7, ()),
}


def run_suda(cli, name: str) -> Path:
    file, keys, extra = SUDA[name]
    # --dis-fraction 0.01 and --score-method elliot are the defaults; given, as R's are
    return cli(f"suda_{name}", "suda", file, "--keys", ",".join(keys), "--dis-fraction",
               "0.01", "--score-method", "elliot", *extra)


@pytest.mark.parametrize("name", list(SUDA))
def test_suda_scores_and_contributions_equal_suda2(cli, name):
    keys = SUDA[name][1]
    ref = r_table(RISK / f"suda2_{name}.csv.gz")
    folder = run_suda(cli, name)
    rec = records(folder)
    assert len(rec) == len(ref)
    np.testing.assert_array_equal(rec["suda_score"].to_numpy(), ref["score"].to_numpy())
    for key in keys:  # contributionPercent (a share in [0, 1]); max abs. difference seen 0
        np.testing.assert_allclose(rec[f"contribution_{key}"].to_numpy(),
                                   ref[f"{key}_contribution"].to_numpy(), rtol=0, atol=1e-12)
    # attribute_contributions: 100 * colSums(share * score) / sum(score)
    attr = r_table(RISK / f"suda2_{name}_attributes.csv")
    got = summary(folder)["attribute_contributions"]
    assert list(got) == list(attr["variable"]) == keys
    np.testing.assert_allclose(list(got.values()), attr["contribution"].to_numpy(), rtol=1e-12)
    assert summary(folder)["suda_score_total"] == ref["score"].sum()


@pytest.mark.parametrize("name", list(SUDA))
def test_suda_dis_scores_equal_suda2_to_float_precision(cli, name):
    # sdcMicro computes DIS, U/DIS and the exponent Q in single precision (src/Suda2.h,
    # the API test's comment), sdcbayes in double: rtol 5e-7 (max rel. difference seen
    # 2.3e-7); zero exactly where R's is
    ref = r_table(RISK / f"suda2_{name}.csv.gz")
    folder = run_suda(cli, name)
    got = records(folder)["dis_suda_score"].to_numpy()
    r_dis = ref["disScore"].to_numpy()
    np.testing.assert_array_equal(got > 0, r_dis > 0)
    np.testing.assert_allclose(got, r_dis, rtol=5e-7, atol=0)
    s = summary(folder)
    assert s["dis_suda_score_max"] == pytest.approx(r_dis.max(), rel=5e-7)
    assert s["dis_suda_score_sum"] == pytest.approx(r_dis.sum(), rel=5e-7)


# ------------------------------------------------------------------------------------
# 4. protect: localSuppression, microaggregation, topBotCoding/globalRecode/groupAndRename
# ------------------------------------------------------------------------------------

IMPORTANCE = {"default": (), "reversed": ("--importance", "7,6,5,4,3,2,1"),
              "given": ("--importance", "1,4,2,6,3,7,5")}  # ranks in the order of K7


def text_of(path: Path) -> pd.DataFrame:
    """A CSV's cells as the text written (no typing, nothing read as missing)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def protect(cli, out: str, *args: str) -> Path:
    return cli(out, "protect", "testdata.csv", "--keys", ",".join(K7), "--seed", "1", *args)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("importance", list(IMPORTANCE))
def test_protect_sequential_suppression_blanks_rs_cells(cli, workdir, k, importance):
    # localSuppression(testdata[, K7], keyVars = K7, k, importance): the written file has
    # a blank exactly at R's (record, key) cells and every other cell as the input wrote it
    folder = protect(cli, f"protect_ls_k{k}_{importance}", "--suppress-k", str(k),
                     "--suppress-method", "sequential", *IMPORTANCE[importance])
    cfg = f"k{k}_{importance}"
    cells = r_table(PROT / "localsuppression_cells.csv.gz")
    cells = cells[cells["config"] == cfg]
    blank = pd.DataFrame(False, index=range(4580), columns=K7)
    for rec, var in zip(cells["record"] - 1, cells["variable"], strict=True):
        blank.loc[rec, var] = True
    original = text_of(workdir / "testdata.csv")
    written = text_of(folder / "protected.csv")
    assert list(written.columns) == list(original.columns)
    assert len(written) == len(original)
    for col in original.columns:
        if col in K7:
            np.testing.assert_array_equal(written[col] == "", blank[col].to_numpy(), err_msg=col)
            keep = ~blank[col].to_numpy()
            np.testing.assert_array_equal(written[col][keep], original[col][keep])
        else:
            np.testing.assert_array_equal(written[col], original[col], err_msg=col)
    # the summary's counts per key are localSuppression's, and the file is k-anonymous
    # (R's own freqCalc on its output: min fk = k)
    counts = r_table(PROT / "localsuppression_counts.csv")
    counts = counts[counts["config"] == cfg]
    s = summary(folder)
    assert s["steps"][0]["result"]["suppressions"] == dict(
        zip(counts["variable"], counts["suppressed"].tolist(), strict=True))
    scalars = r_table(PROT / "scalars.csv").set_index("name")["value"]
    assert scalars[f"ls_{cfg}_min_fk"] == k
    assert s["risk"]["after"]["k_anonymity_violations"] == 0


MICRO = {  # run: (options, R's column prefix)
    "mdav3": (("--mdav-k", "3"), "mdav3"),
    "mdav5": (("--mdav-k", "5"), "mdav5"),
    # sorted: each column on its own (R's method "onedims")
    "sorted3": (("--mdav-k", "3", "--microaggregate-method", "sorted"), "onedims3"),
}


def microaggregate(cli, run: str, *extra: str) -> Path:
    return protect(cli, f"protect_{run}{'_'.join(extra)}", "--microaggregate", ",".join(NUM),
                   *MICRO[run][0], *extra)


@pytest.mark.parametrize("run", list(MICRO))
def test_protect_microaggregation_written_equals_r(cli, workdir, run):
    # microaggregation(testdata[, NUM], method = "mdav" / "onedims", aggr)$mx, read back
    # from the written CSV: group means, summation order only (rtol 1e-12, observed
    # <= 4.7e-16 through the API)
    folder = microaggregate(cli, run)
    r_micro = r_table(PROT / "microaggregation_testdata.csv.gz")
    written = pd.read_csv(folder / "protected.csv")
    for v in NUM:
        np.testing.assert_allclose(written[v].to_numpy(dtype=float),
                                   r_micro[f"{MICRO[run][1]}_{v}"].to_numpy(), rtol=1e-12,
                                   atol=0, err_msg=v)
    # the other columns as the input wrote them
    original, text = text_of(workdir / "testdata.csv"), text_of(folder / "protected.csv")
    for col in original.columns.difference(NUM):
        np.testing.assert_array_equal(text[col], original[col], err_msg=col)


def test_protect_writes_aggregated_values_in_full(cli):
    # The protected CSV writes each double's shortest round-trip text (pandas' repr), so
    # what it holds is the library's value to the last bit, not a rounding of it:
    # microaggregation means such as 56066666.666666664 keep all 17 digits
    from sdcbayes.protection.microaggregation import mdav

    folder = microaggregate(cli, "mdav3")
    text = text_of(folder / "protected.csv")
    direct = mdav(pd.read_csv(folder.parent / "testdata.csv"), NUM, 3).frame
    for v in NUM:  # Python's float() of the text: the nearest double, correctly rounded
        np.testing.assert_array_equal(text[v].map(float).to_numpy(),
                                      direct[v].to_numpy(dtype=float), err_msg=v)
    assert text["income"].str.replace(".", "", regex=False).str.len().max() >= 17


@pytest.mark.parametrize("interval_k, name", [(None, "default"), ("0.1", "k0.1"),
                                              ("0.01", "k0.01")])
def test_protect_mdav_interval_risk_equals_drisk(cli, interval_k, name):
    # summary.json's risk.numeric.after: dRisk(x, xm = mdav3) with k = 0.05 (the default
    # --interval-k), 0.1, 0.01: the same records at risk, so the same share exactly
    extra = () if interval_k is None else ("--interval-k", interval_k)
    num = summary(microaggregate(cli, "mdav3", *extra))["risk"]["numeric"]
    scalars = r_table(PROT / "scalars.csv").set_index("name")["value"]
    r_share = scalars[f"dRisk_{name}_mdav3"]
    assert num["variables"] == NUM and num["n_records"] == 4580
    assert num["interval_k"] == (0.05 if interval_k is None else float(interval_k))
    assert num["after"]["n_interval_risk"] == round(r_share * 4580)
    assert num["after"]["interval_risk"] == pytest.approx(r_share, rel=1e-12)


def test_protect_mdav_information_loss_equals_dutility(cli):
    # information_loss.il1_numeric: dUtility(x, xm = mdav3, method = "IL1old") (rtol 1e-12);
    # eigen_difference: method "eigen", whose |e1 - e2| / e1 terms nearly cancel, so the
    # two eigen-decompositions' rounding is amplified (rtol 1e-9, observed 1.2e-12)
    loss = summary(microaggregate(cli, "mdav3"))["information_loss"]
    scalars = r_table(PROT / "scalars.csv").set_index("name")["value"]
    assert loss["il1_columns"] == NUM
    assert loss["il1_numeric"] == pytest.approx(scalars["dUtility_IL1old_mdav3"], rel=1e-12)
    assert loss["eigen_difference"] == pytest.approx(scalars["dUtility_eigen_mdav3"], rel=1e-9)
    # IL1old is the mean of the per-variable il1 (sum over records and variables of
    # |x - z| / (sqrt(2) sd) over n p), so the per-variable figures add up to IL1s / n
    per = [loss["per_variable"][v]["il1"] for v in NUM]
    assert sum(per) / len(NUM) == pytest.approx(scalars["dUtility_IL1old_mdav3"], rel=1e-12)
    assert sum(per) * 4580 == pytest.approx(scalars["dUtility_IL1s_mdav3"], rel=1e-12)


@pytest.mark.parametrize("run, r_pair", [("mdav5", "mdav5"), ("sorted3", "onedims3"),
                                         ("recode", "topbot")])
def test_protect_numeric_scores_equal_r_on_more_pairs(cli, workdir, run, r_pair):
    # tests/data/sdcmicro_r/cli.R's dUtility and dRisk of R's own protected file on the
    # pairs protection.R does not score (R's files equal the written ones, tests above).
    # Tolerances as for mdav3: rtol 1e-12 for IL1, 1e-9 for the eigenvalue difference
    # (observed at most 5.8e-12 here), the interval risk exactly (counts of records)
    scalars = r_table(R_DIR / "cli" / "scalars.csv").set_index("name")["value"]
    if run == "recode":
        folder = recipe_run(cli, workdir)
    else:
        folder = microaggregate(cli, run)
    s = summary(folder)
    loss, num = s["information_loss"], s["risk"]["numeric"]
    assert sorted(loss["il1_columns"]) == sorted(NUM)  # the recipe's order: its steps'
    assert loss["il1_numeric"] == pytest.approx(scalars[f"dUtility_IL1old_{r_pair}"], rel=1e-12)
    il1s = sum(loss["per_variable"][v]["il1"] for v in NUM) * 4580
    assert il1s == pytest.approx(scalars[f"dUtility_IL1s_{r_pair}"], rel=1e-12)
    assert loss["eigen_difference"] == pytest.approx(scalars[f"dUtility_eigen_{r_pair}"],
                                                     rel=1e-9)
    r_share = scalars[f"dRisk_default_{r_pair}"]
    assert num["after"]["n_interval_risk"] == round(r_share * 4580)
    assert num["after"]["interval_risk"] == pytest.approx(r_share, rel=1e-12)


RECIPE = {"steps": [
    # topBotCoding(income, 9e7, 9.5e7, "top"), (expend, 1e6, 5e5, "bottom"),
    # (savings, 5e6, 5e6, "top"): protection.R's settings
    {"step": "top_code", "column": "income", "threshold": 9e7, "replacement": 9.5e7},
    {"step": "bottom_code", "column": "expend", "threshold": 1e6, "replacement": 5e5},
    {"step": "top_code", "column": "savings", "threshold": 5e6},
    # globalRecode(age, breaks = c(-1, 9, 19, 39, 59, 95)): cut's right-closed bands
    {"step": "band", "column": "age", "breaks": [-1, 9, 19, 39, 59, 95], "right": True},
    # groupAndRename(factor(water), c("1", "2"), "1_2"), (roof, c("5", "6", "9"), "other")
    {"step": "recode", "column": "water", "mapping": {"1": "1_2", "2": "1_2"}},
    {"step": "recode", "column": "roof", "mapping": {"5": "other", "6": "other",
                                                     "9": "other"}},
]}


def recipe_run(cli, workdir) -> Path:
    (workdir / "recode.json").write_text(json.dumps(RECIPE), encoding="utf-8")
    return protect(cli, "protect_recode", "--recipe", "recode.json")


@pytest.fixture(scope="module")
def recoded(cli, workdir):
    return recipe_run(cli, workdir)


def test_protect_top_bottom_coding_and_recodes_equal_r(recoded, workdir):
    ref = r_table(PROT / "recode_testdata.csv.gz",
                  dtype={c: str for c in ["age_label", "water_grouped", "roof_grouped"]})
    written = pd.read_csv(recoded / "protected.csv", dtype={"water": str, "roof": str,
                                                            "age": str})
    for col, r_name in [("income", "income_top"), ("expend", "expend_bottom"),
                        ("savings", "savings_top")]:  # identical: values replaced, no arithmetic
        np.testing.assert_array_equal(written[col].to_numpy(dtype=float),
                                      ref[r_name].to_numpy(dtype=float), err_msg=col)
    np.testing.assert_array_equal(written["water"], ref["water_grouped"])
    np.testing.assert_array_equal(written["roof"], ref["roof_grouped"])
    # band's labels are "(9, 19]" where cut writes "(9,19]", and its first band is closed,
    # "[-1, 9]" (documented; the API test does the same)
    ours = written["age"].str.replace(", ", ",").str.replace("[", "(")
    np.testing.assert_array_equal(ours, ref["age_label"])
    # the columns no step touched, as the input wrote them
    original, text = text_of(workdir / "testdata.csv"), text_of(recoded / "protected.csv")
    for col in ["urbrur", "walls", "electcon", "relat", "sex", "hhcivil", "ori_hid",
                "sampling_weight", "household_weights"]:
        np.testing.assert_array_equal(text[col], original[col], err_msg=col)


def test_protect_top_bottom_coding_counts(recoded, workdir):
    # the summary counts the values R's rule x[x > value] (x[x < value]) replaces
    data = pd.read_csv(workdir / "testdata.csv")
    loss = summary(recoded)["information_loss"]["per_variable"]
    for col, hit in [("income", data["income"] > 9e7), ("expend", data["expend"] < 1e6),
                     ("savings", data["savings"] > 5e6)]:
        changed = int((hit & (data[col] != {"income": 9.5e7, "expend": 5e5,
                                            "savings": 5e6}[col])).sum())
        assert loss[col]["n_changed"] == changed > 0
    # and the steps' own counts are R's rule's, a value already at the replacement included
    steps = summary(recoded)["steps"]
    for step, (col, hit) in zip(steps[:3], [("income", data["income"] > 9e7),
                                            ("expend", data["expend"] < 1e6),
                                            ("savings", data["savings"] > 5e6)], strict=True):
        assert step["result"]["n_changed"] == int(hit.sum()), col
