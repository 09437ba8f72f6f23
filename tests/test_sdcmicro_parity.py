"""Regression tests: sdcbayes reproduces numbers of sdcMicro (R).

Source: sdcTools/sdcMicro at commit cf3251017482bb215f0a9abf4a930f502399fb72; file:line
below refer to that commit. Each test says whether its numbers are

- *printed*: asserted (or, for SUDA, written out in commented-out tests) in sdcMicro's own
  ``tests/testthat`` files, so they are R's output; or
- *reasoned*: computed by an sdcMicro man-page example; the number here comes from a plain
  Python re-statement of sdcMicro's R/C++ code (no R run), which sdcbayes matches.

Tolerances: rtol 1e-6 against values printed with 7-8 significant digits (their rounding is
up to 1.4e-7 relative); tighter where the reference has more digits.

Several sdcMicro tests build their data with ``set.seed(3)`` and ``runif``. ``RRunif``
reproduces R's default generator (Mersenne-Twister, R's seed scrambling, ``unif_rand``); it
is checked against values R prints. Where the data are short they are hard-coded as well.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from rtools import RRunif

from sdcbayes import Microdata
from sdcbayes.protection.infoloss import il1
from sdcbayes.protection.microaggregation import mdav
from sdcbayes.protection.pram import invariant_transition_matrix
from sdcbayes.protection.recode import bottom_code, top_code
from sdcbayes.risk.assess import assess_closed_form, cells_to_records
from sdcbayes.risk.measures import benchmark_rule, l_diversity, n_k_anonymity_violations
from sdcbayes.risk.suda import suda

# sdcMicro runs these without weights (w = NULL) as the file itself, the population: the
# closed form's warning of a file without weights is expected here
pytestmark = pytest.mark.filterwarnings(
    "ignore:no weight= or sampling_fraction=:sdcbayes.microdata.MicrodataWarning")

@pytest.fixture(scope="module")
def testdata(sdcmicro_csv):
    return sdcmicro_csv("testdata.csv")


# ------------------------------------------------------------------------------------
# R's set.seed / runif
# ------------------------------------------------------------------------------------


def _seed3_keys():
    """sdcMicro test_calcRisks.R:2-7 (= test_suda2.R:136-141, commented out):
    set.seed(3); runif(30, 1, 100); then round(runif(10, 1, 4 / 6 / 3))."""
    r = RRunif(3)
    num = r(30, 1, 100)
    keys = {"Var4": np.round(r(10, 1, 4)), "Var5": np.round(r(10, 1, 6)),
            "Var6": np.round(r(10, 1, 3))}
    return num, keys


# hard-coded copies of R-generated data (checked against RRunif below)
SEED3_KEYS = {
    "Var4": [2, 2, 2, 2, 2, 2, 4, 2, 3, 2],
    "Var5": [2, 5, 2, 4, 3, 2, 1, 2, 3, 5],
    "Var6": [1, 1, 3, 3, 3, 3, 2, 1, 1, 2],
}
nan = np.nan
# test_calcRisks.R:31-52: set.seed(3); runif(20, 1, 100); six rounded key columns; NAs
SEED3_MISSING = {
    "Var6": [nan, 1, nan, nan],
    "Var7": [2, nan, nan, 4],
    "Var8": [4, 5, nan, 3],
    "Var9": [nan, 2, nan, 2],
    "Var10": [5, nan, nan, 2],
    "Var11": [1, 2, nan, 2],
}


def test_r_runif_reproduces_r():
    # R: set.seed(42); runif(3) prints 0.9148060 0.9370754 0.2861395;
    #    set.seed(1); runif(3) prints 0.2655087 0.3721239 0.5728534
    np.testing.assert_allclose(RRunif(42)(3), [0.9148060, 0.9370754, 0.2861395], rtol=1e-6)
    np.testing.assert_allclose(RRunif(1)(3), [0.2655087, 0.3721239, 0.5728534], rtol=1e-6)
    # Var3 after set.seed(3), to the 15 digits printed in sdcMicro's test_suda2.R:109-111
    num, keys = _seed3_keys()
    np.testing.assert_allclose(
        num[20:30],
        [23.5919862471055, 2.51765935891308, 13.7691743019968, 10.2448109227698,
         24.4516157396138, 79.3235935377888, 60.3734250029083, 91.1046233826783,
         56.4820308389608, 75.8147721474525],
        rtol=1e-13,
    )
    for name, values in SEED3_KEYS.items():
        np.testing.assert_array_equal(keys[name], values)
    r = RRunif(3)
    r(20, 1, 100)
    drawn = {name: np.round(r(4, 1, hi))
             for name, hi in zip(SEED3_MISSING, [2, 4, 6, 3, 5, 2], strict=True)}
    for name, values in SEED3_MISSING.items():
        v = np.asarray(values, dtype=float)
        seen = ~np.isnan(v)
        np.testing.assert_array_equal(drawn[name][seen], v[seen])


# ------------------------------------------------------------------------------------
# B1. indivRisk, inline data (printed: tests/testthat/test_indivRisk.R)
# ------------------------------------------------------------------------------------

_IR_FULL = [2, 3, 2, 2, 3, 3, 1, 2, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, 1, 2, 1, 1, 1, 1]
_IR_MISS = [2, 3, 2, 2, 3, 3, 1, nan, 3, 3, 3, 3, 3, 3, 4, 3, 1, 3, nan, 2, 1, 1, nan, 1]
_IR_WEIGHT = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51]

# (data, method): (test_indivRisk.R line of the expect_equal, printed rk)
_IR_EXPECTED = {
    ("full", "approx"): (14, [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883,
                              0.01877883, 0.03931625, 0.01369863]),
    ("full", "exact"): (35, [0.01355297, 0.08579129, 0.01355297, 0.17707583, 0.01877883,
                             0.01877883, 0.03931625, 0.01355297]),
    ("missing", "approx"): (118, [0.013698630, 0.085791288, 0.010554090, 0.032466112,
                                  0.009836066, 0.009836066, 0.039316254, 0.005973716]),
    ("missing", "exact"): (139, [0.013552968, 0.085791288, 0.010504889, 0.032466112,
                                 0.009756889, 0.009756889, 0.039316254, 0.005962551]),
}
# without weights (freqCalc without w: Fk = fk, so rk = 1/fk), rounded to 5 digits in R:
# test_indivRisk.R:67 (full), :171 (missing)
_IR_UNWEIGHTED = {"full": [1 / 3, 1, 1 / 3, 1, 0.5, 0.5, 1, 1 / 3],
                  "missing": [1 / 3, 1, 0.25, 0.5, 1 / 3, 1 / 3, 1, 0.2]}


def _indivrisk_frame(which: str) -> pd.DataFrame:
    # R: array(c(...), dim = c(8, 3)) fills column by column
    values = np.array(_IR_FULL if which == "full" else _IR_MISS, dtype=float)
    frame = pd.DataFrame(values.reshape(3, 8).T, columns=["A", "B", "C"])
    frame["weight"] = _IR_WEIGHT
    return frame


@pytest.mark.parametrize("which, method", list(_IR_EXPECTED))
def test_indivrisk_weighted(which, method):
    # sdcMicro: fr <- freqCalc(sample_Data, keyVars = 1:3, w = 4);
    # indivRisk(fr, method = ..., qual = 1, survey = TRUE)$rk (R/indivRisk.R:74-124);
    # missing keys match every value (freqCalc's wildcard, sdcbayes missing="wildcard")
    _line, expected = _IR_EXPECTED[(which, method)]
    md = Microdata(_indivrisk_frame(which), ["A", "B", "C"], weight="weight",
                   missing="wildcard")
    risk = assess_closed_form(md, method=method).records["risk"].to_numpy()
    np.testing.assert_allclose(risk, expected, rtol=1e-6)


@pytest.mark.parametrize("which", ["full", "missing"])
@pytest.mark.parametrize("method", ["approx", "exact"])
def test_indivrisk_unweighted_is_one_over_fk(which, method):
    md = Microdata(_indivrisk_frame(which).drop(columns="weight"), ["A", "B", "C"],
                   missing="wildcard")
    risk = assess_closed_form(md, method=method).records["risk"].to_numpy()
    np.testing.assert_allclose(risk, _IR_UNWEIGHTED[which], rtol=1e-12)


# ------------------------------------------------------------------------------------
# B2. calcRisks on set.seed(3) data (printed: tests/testthat/test_calcRisks.R)
# ------------------------------------------------------------------------------------


def test_calcrisks_seed3_no_missing():
    # test_calcRisks.R:15-24: keys Var4..Var6, no weights
    res = assess_closed_form(Microdata(pd.DataFrame(SEED3_KEYS), list(SEED3_KEYS)),
                             method="approx")
    rec, s = res.records, res.summary
    np.testing.assert_allclose(rec["risk"], [0.5, 1, 0.5, 1, 1, 0.5, 1, 0.5, 1, 1], rtol=1e-12)
    np.testing.assert_array_equal(rec["fk"], [2, 1, 2, 1, 1, 2, 1, 2, 1, 1])
    np.testing.assert_allclose(rec["Fk_hat"], [2, 1, 2, 1, 1, 2, 1, 2, 1, 1])
    assert s["expected_reidentifications"] == pytest.approx(8, rel=1e-12)  # risk_ER, l.18
    assert s["expected_reidentification_rate"] == pytest.approx(0.8, rel=1e-12)  # risk, l.17


def test_calcrisks_seed3_missing_values():
    # test_calcRisks.R:56-65: six keys, wildcard missing; record 3 has every key missing
    # (every other record has a missing key too, so the all-missing difference of the
    # README's "Missing key values" does not show here)
    frame = pd.DataFrame(SEED3_MISSING)
    res = assess_closed_form(Microdata(frame, list(SEED3_MISSING), missing="wildcard"),
                             method="approx")
    rec, s = res.records, res.summary
    np.testing.assert_allclose(rec["risk"], [0.5, 0.5, 0.25, 0.5], rtol=1e-12)
    np.testing.assert_array_equal(rec["fk"], [2, 2, 4, 2])
    np.testing.assert_allclose(rec["Fk_hat"], [2, 2, 4, 2])
    assert s["expected_reidentifications"] == pytest.approx(1.75, rel=1e-12)  # l.59
    assert s["expected_reidentification_rate"] == pytest.approx(0.4375, rel=1e-12)  # l.58


# ------------------------------------------------------------------------------------
# B3. l-diversity (a-c printed: tests/testthat/test_ldiversity.R; d reasoned)
# ------------------------------------------------------------------------------------


def _ldiv_records(md, sensitive):
    ld = l_diversity(md.record_cell, sensitive)
    return {c: cells_to_records(ld[c].to_numpy(), md.record_cell) for c in ld.columns}, ld


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_ldiversity_keys_with_missing(missing):
    # test_ldiversity.R:6-40 (ldiversity(..., missing = -999)): occupation NA in rows 1-3;
    # groups are exact key patterns with NA equal to NA (src/Measure_Risk.h:45-58)
    t = pd.DataFrame({
        "sex": ["female"] * 3 + ["male"] * 2 + ["female"] * 2,
        "occupation": [None] * 3 + ["teacher"] * 2 + ["nurse"] * 2,
        "ethnicity": ["other"] * 5 + ["majority"] * 2,
        "sensitive": [1, 0, 2, 1, 0, 0, 1],
    })
    md = Microdata(t, ["sex", "occupation", "ethnicity"], missing=missing)
    rec, _ = _ldiv_records(md, {"sensitive": t["sensitive"]})
    np.testing.assert_array_equal(rec["sensitive_Distinct_Ldiversity"], [3, 3, 3, 2, 2, 2, 2])


def test_ldiversity_keeps_record_order():
    # test_ldiversity.R:45-62: id = (3, 1, 2), sens = (10, 20, 10): distinct 1 everywhere
    u = pd.DataFrame({"id": [3, 1, 2], "sens": [10, 20, 10]})
    md = Microdata(u, ["id"])
    rec, _ = _ldiv_records(md, {"sens": u["sens"]})
    np.testing.assert_array_equal(rec["sens_Distinct_Ldiversity"], [1, 1, 1])


def test_ldiversity_several_sensitive_variables():
    # test_ldiversity.R:66-75: distinct 2 (A, B, A) and 3 (X, Y, Z)
    m = pd.DataFrame({"key": [1, 1, 1], "sens1": list("ABA"), "sens2": list("XYZ")})
    md = Microdata(m, ["key"])
    _, ld = _ldiv_records(md, {"sens1": m["sens1"], "sens2": m["sens2"]})
    assert ld["sens1_Distinct_Ldiversity"].iloc[0] == 2
    assert ld["sens2_Distinct_Ldiversity"].iloc[0] == 3


def test_ldiversity_testdata_summary(testdata):
    # Reasoned: man/measure_risk.Rd:125-132, ldiversity(testdata, keyVars = c("urbrur",
    # "roof", "walls", "water", "sex"), ldiv_index = c("electcon", "relat")); per-record
    # distinct l-diversity summarised as R's summary() would (quantile type 7 = pandas)
    k5 = ["urbrur", "roof", "walls", "water", "sex"]
    md = Microdata(testdata, k5)
    rec, _ = _ldiv_records(md, {"electcon": testdata["electcon"], "relat": testdata["relat"]})
    expected = {  # min, Q1, median, mean, Q3, max; mean as R prints it (4 significant digits)
        "electcon": ([1, 2, 3, 3, 3], 2.3745, 5e-5),
        "relat": ([1, 5, 5, 7, 8], 5.524, 5e-4),
    }
    for var, (quantiles, mean, tol) in expected.items():
        x = pd.Series(rec[f"{var}_Distinct_Ldiversity"])
        np.testing.assert_array_equal(x.quantile([0, 0.25, 0.5, 0.75, 1]).to_numpy(), quantiles)
        assert abs(x.mean() - mean) <= tol

    # entropy l-diversity = exp(-sum p ln p) per exact key pattern (src/Measure_Risk.h:86-98)
    def entropy(s):
        p = s.value_counts(normalize=True).to_numpy()
        return np.exp(-(p * np.log(p)).sum())

    ref = testdata.groupby(k5)["electcon"].transform(entropy).to_numpy()
    np.testing.assert_allclose(rec["electcon_Entropy_Ldiversity"], ref, rtol=1e-12)


# ------------------------------------------------------------------------------------
# B5. SUDA (printed in commented-out tests of tests/testthat/test_suda2.R)
# ------------------------------------------------------------------------------------


def test_suda_book_example():
    # test_suda2.R:67-74 ("suda2 book example"): expect_equal(su$score[5:8], c(4, 2, 6, 8)).
    # Commented out in sdcMicro because R >= 4 turns the character keys into NA
    # (as.numeric in R/suda2.R); sdcbayes reads the labels.
    tab = pd.DataFrame({
        "age": ["20s"] * 7 + ["60s"],
        "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
        "income": ["50k+", "50k+"] + ["50k-"] * 6,
        "education": ["highschool"] * 4 + ["university", "highschool", "middleschool",
                                           "university"],
    })
    np.testing.assert_array_equal(suda(tab, list(tab.columns)).scores[4:8], [4, 2, 6, 8])


def test_suda_seed3_scores_and_contributions():
    # test_suda2.R:136-153 (set.seed(3) sdcObj, keys Var4..Var6): score
    # c(0, 1, 0, 2, 2, 0, 4, 0, 3, 2) and contributionPercent[, 1] (Var4)
    # c(0, 0, 0, 0, 0.5, 0, 0.5, 0, 0.666666666666667, 0.5)
    res = suda(pd.DataFrame(SEED3_KEYS), ["Var4", "Var5", "Var6"])
    np.testing.assert_array_equal(res.scores, [0, 1, 0, 2, 2, 0, 4, 0, 3, 2])
    np.testing.assert_allclose(res.contributions["Var4"].to_numpy(),
                               [0, 0, 0, 0, 0.5, 0, 0.5, 0, 0.666666666666667, 0.5],
                               rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------------------------
# B6. measure_risk on testdata, method "approx" (reasoned from R/measure_risk.R and
# R/indivRisk.R; settings of man/measure_risk.Rd:109-141 and, for 7 keys, the keys of
# man/report.Rd:41-45 on testdata)
# ------------------------------------------------------------------------------------

_K5 = ["urbrur", "roof", "walls", "water", "sex"]
_K7 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
# keys, weight, household: ER, (high with 3·mad, with 2·mad), (fk < 2, 3, 5), household ER
_MEASURE_RISK = {
    "k5": (_K5, None, None, 93.0, (165, 165), (12, 24, 79), None),
    "k5-weighted-households": (_K5, "sampling_weight", "ori_hid", 1.5272044885, (0, 0),
                               (12, 24, 79), 7.1770285713),
    "k5-electcon-weighted": (["urbrur", "roof", "walls", "water", "electcon"],
                             "sampling_weight", None, 0.9106180883, (0, 0), (2, 8, 46), None),
    "k7-weighted-households": (_K7, "sampling_weight", "ori_hid", 10.7782989187, (0, 0),
                               (157, 281, 458), 51.8129274360),
    "k7-household-weights": (_K7, "household_weights", None, 39.4229057064, (139, 139),
                             (157, 281, 458), None),
}


@pytest.mark.parametrize("case", list(_MEASURE_RISK))
def test_measure_risk_testdata(testdata, case):
    keys, w, hid, er, high, viol, hh_er = _MEASURE_RISK[case]
    # measure_risk calls indivRisk with its default method = "approx" (R/measure_risk.R:224,
    # R/indivRisk.R:53); sdcbayes's default is "exact" (README, "--method approx")
    res = assess_closed_form(Microdata(testdata, keys, weight=w, household=hid),
                             method="approx")
    s, risk = res.summary, res.records["risk"].to_numpy()
    n = len(testdata)
    # global_risk_ER = sum(rk), global_risk = ER / n; printed above to 10 decimals
    assert s["expected_reidentifications"] == pytest.approx(er, rel=1e-9)
    assert s["expected_reidentification_rate"] == pytest.approx(er / n, rel=1e-9)
    # "obs. with higher risk": rk > median + 3·mad and rk > 0.1 (print.measure_risk,
    # R/measure_risk.R:479); 2·mad in print.sdcMicroObj (R/printFunctions.R:161)
    assert int(benchmark_rule(risk, n_mad=3).sum()) == high[0]
    assert int(benchmark_rule(risk, n_mad=2).sum()) == high[1]
    # kAnon_violations: sum(fk < k) (R/methods.r:255-270)
    fk = res.records["fk"]
    assert [n_k_anonymity_violations(fk, k) for k in (2, 3, 5)] == list(viol)
    if hh_er is not None:
        # hier_risk_ER: sum over records of 1 - prod(1 - rk) in the household
        # (R/measure_risk.R:280-285)
        assert s["household_expected_reidentifications"] == pytest.approx(hh_er, rel=1e-9)


# ------------------------------------------------------------------------------------
# B7. top/bottom coding (printed), PRAM matrix (reasoned), IL1 (reasoned)
# ------------------------------------------------------------------------------------

_TOP = [17.63611, 0, 0, 33.44570, 0, 0, 13.33871, 30.16549, 0, 0]
_BOTTOM = [0, 80.94412, 39.10929, 0, 60.60797, 60.83501, 0, 0, 58.18338, 63.46695]


@pytest.mark.parametrize("with_missing", [False, True])
def test_top_bottom_coding(with_missing):
    # tests/testthat/test_topBotCoding.R:2-3, 14-20 (and 27-34, 42-48 with NA in records
    # 1, 2, 7): Var1 = set.seed(3); runif(30, 1, 100)[1:10]; topBotCoding(value = 35,
    # replacement = 0): top codes x > 35, bottom codes x < 35, NA stays NA
    x = RRunif(3)(30, 1, 100)[:10]
    top, bottom = np.array(_TOP, dtype=float), np.array(_BOTTOM, dtype=float)
    if with_missing:
        x[[0, 1, 6]] = top[[0, 1, 6]] = bottom[[0, 1, 6]] = np.nan
    frame = pd.DataFrame({"Var1": x})
    np.testing.assert_allclose(top_code(frame, "Var1", 35, replacement=0).frame["Var1"],
                               top, rtol=1e-6, atol=0)
    np.testing.assert_allclose(bottom_code(frame, "Var1", 35, replacement=0).frame["Var1"],
                               bottom, rtol=1e-6, atol=0)


def _sdcmicro_pram_matrix(counts, pd_min, alpha):
    """R/pram.R:426-444 with the diagonal fixed at pd_min (R draws runif(L, pd, 1)),
    loops as in R. R's p divides the table by the sum of the factor codes (l.433); Q does
    not depend on p's scale."""
    t = np.asarray(counts, dtype=float)
    n_lev = t.size
    P = np.full((n_lev, n_lev), (1 - pd_min) / (n_lev - 1))
    np.fill_diagonal(P, pd_min)
    p = t / np.sum(np.arange(1, n_lev + 1) * t)
    Q = P.copy()
    for k in range(n_lev):
        s = np.sum(p * P[:, k])
        for j in range(n_lev):
            Q[k, j] = P[j, k] * p[j] / s
    return alpha * (P @ Q) + (1 - alpha) * np.eye(n_lev)


@pytest.mark.parametrize("column", ["roof", "walls", "water"])
@pytest.mark.parametrize("pd_min, alpha", [(0.8, 0.5), (0.6, 1.0)])
def test_pram_invariant_matrix(testdata, column, pd_min, alpha):
    counts = testdata[column].value_counts().sort_index().to_numpy(float)
    got = invariant_transition_matrix(counts, pd_min, alpha, random_diagonal=False)
    np.testing.assert_allclose(got, _sdcmicro_pram_matrix(counts, pd_min, alpha),
                               rtol=0, atol=1e-14)
    np.testing.assert_allclose(counts @ got, counts, rtol=1e-12)  # T'R = T'


def test_il1_after_mdav(testdata):
    # Reasoned: R/dUtility.R:105-118, IL1s = sum |x - z| / (sqrt(2) sd), sd with n - 1;
    # IL1old = IL1s / (n p); on testdata after the default MDAV (k = 3) of expend, income,
    # savings, whose partition equals sdcMicro's src/Mdav.cpp (audit S, B7/B8). Not the
    # "IL1" of print(sdc, "numrisk") (R/dUtility.R:98, a sum of 100 |x - z| / |x|).
    cols = ["expend", "income", "savings"]
    protected = mdav(testdata, cols, 3).frame
    assert il1(testdata, protected, cols, average=False) == pytest.approx(533.3433570,
                                                                          rel=1e-9)
    assert il1(testdata, protected, cols) == pytest.approx(0.0388168382, rel=1e-9)
