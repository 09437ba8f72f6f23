"""Closed-form assessment end to end: Microdata -> per-record risk -> file summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcbayes import Microdata
from sdcbayes.risk.assess import assess_closed_form, cells_to_records

# IHSN guide (seed 001_, Table 1) = sdcMicro's `francdat` (shared/data/sdcmicro/francdat.csv),
# kept here because a fresh clone has no shared folder.
FRANCDAT = pd.DataFrame(
    {
        "Num1": [0.3, 0.12, 0.18, 1.9, 1.0, 1.0, 0.1, 0.15],
        "Key1": [1, 1, 1, 3, 4, 4, 6, 1],
        "Num2": [0.4, 0.22, 0.8, 9.0, 1.3, 1.4, 0.01, 0.5],
        "Key2": [2, 2, 2, 3, 3, 3, 2, 2],
        "Key3": [5, 1, 1, 1, 1, 1, 1, 5],
        "Key4": [1, 1, 1, 5, 4, 1, 5, 1],
        "Num3": [4, 22, 8, 91, 13, 14, 1, 5],
        "w": [18, 45.5, 39, 17, 541, 8, 5, 92],
    }
)
# Table 1, last column (record-level risk), and "the expected number of re-identifications
# is 0.966, the sum of the last column" (seed 001_, section 3.4).
IHSN_TABLE1_RISK = [0.0171, 0.0220, 0.0220, 0.1771, 0.0117, 0.2971, 0.4024, 0.0171]
IHSN_TABLE1_FK = [2, 2, 2, 1, 1, 1, 1, 2]


@pytest.fixture(scope="module")
def francdat_result():
    md = Microdata(FRANCDAT, keys=["Key1", "Key2", "Key3", "Key4"], weight="w")
    return md, assess_closed_form(md)


def test_ihsn_table1_record_risks(francdat_result):
    _, res = francdat_result
    np.testing.assert_array_equal(res.records["fk"], IHSN_TABLE1_FK)
    np.testing.assert_allclose(res.records["risk"], IHSN_TABLE1_RISK, atol=5e-5)


def test_ihsn_expected_reidentifications(francdat_result):
    _, res = francdat_result
    # the guide truncates 0.96653 to 0.966
    assert 0.966 <= res.summary["expected_reidentifications"] < 0.967
    assert res.summary["n_sample_uniques"] == 4
    assert res.summary["n_records"] == 8


def test_tau_plugins_follow_definitions(francdat_result):
    md, res = francdat_result
    cells = res.cells
    su = cells["fk"] == 1
    # tau1 plug-in: sum over sample uniques of P(F=1 | f=1) = p_k (negative binomial, r = 1)
    assert res.summary["tau1"] == pytest.approx(float((1 / cells.loc[su, "Fk_hat"]).sum()))
    assert res.summary["tau2"] == pytest.approx(float(cells.loc[su, "risk"].sum()))


def test_input_frame_untouched(francdat_result):
    before = FRANCDAT.copy(deep=True)
    Microdata(FRANCDAT, keys=["Key1", "Key2"], weight="w")
    pd.testing.assert_frame_equal(FRANCDAT, before)


def test_household_risk_is_one_minus_product():
    frame = FRANCDAT.assign(hid=[1, 1, 2, 2, 2, 3, 4, 4])
    md = Microdata(frame, keys=["Key1", "Key2", "Key3", "Key4"], weight="w", household="hid")
    res = assess_closed_form(md)
    r = res.records["risk"].to_numpy()
    expect = np.empty(8)
    for h in np.unique(frame["hid"]):
        members = (frame["hid"] == h).to_numpy()
        expect[members] = 1 - np.prod(1 - r[members])
    np.testing.assert_allclose(res.records["household_risk"], expect, rtol=1e-12)
    assert res.summary["household_expected_reidentifications"] == pytest.approx(expect.sum())


def test_cells_to_records_marks_dropped_records_nan():
    out = cells_to_records(np.array([0.5, 0.25]), np.array([1, -1, 0]))
    assert out[0] == 0.25 and np.isnan(out[1]) and out[2] == 0.5


def test_threshold_count():
    md = Microdata(FRANCDAT, keys=["Key1", "Key2", "Key3", "Key4"], weight="w")
    res = assess_closed_form(md, threshold=0.1)
    assert res.summary["n_above_threshold"] == sum(r > 0.1 for r in IHSN_TABLE1_RISK)


def test_labelled_view_has_record_and_cell_dims(francdat_result):
    _, res = francdat_result
    ds = res.to_xarray()
    assert ds["risk"].dims == ("record",)
    assert ds["cell_risk"].dims == ("cell",)
    assert ds.attrs["model"] == "closed-form"


def test_dropped_records_keep_their_row_with_missing_risk():
    frame = FRANCDAT.astype({"Key1": "float"})
    frame.loc[2, "Key1"] = np.nan
    md = Microdata(frame, keys=["Key1", "Key2", "Key3", "Key4"], weight="w", missing="drop")
    res = assess_closed_form(md)
    assert len(res.records) == 8
    assert res.records["fk"].isna().tolist() == [i == 2 for i in range(8)]
    assert np.isnan(res.records.loc[2, "risk"])
    assert res.summary["n_records"] == 7
    # the other records' risks are those of the 7-record file whose weights stand for the
    # dropped record too (scaled to the file's weight total; audit Z2 F3)
    kept = frame.drop(index=2)
    kept = kept.assign(w=kept["w"] * frame["w"].sum() / kept["w"].sum())
    md7 = Microdata(kept, keys=["Key1", "Key2", "Key3", "Key4"], weight="w")
    np.testing.assert_allclose(
        res.records["risk"].drop(index=2), assess_closed_form(md7).records["risk"], rtol=1e-12
    )


def test_fractional_wildcard_counts_get_the_exact_risk():
    # missing="wildcard" with alpha = 0.5: a record matching another through a missing
    # key counts half (fk = 1.5); the closed form is the negative binomial of real size f
    from scipy import stats

    frame = pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": [1, np.nan, 1, 2, 1],
                          "w": [10.0, 20.0, 30.0, 40.0, 50.0]})
    md = Microdata(frame, keys=["a", "b"], weight="w", alpha=0.5)
    fk = md.cells.fk
    assert np.any(fk != np.round(fk))  # the case that used to fail
    res = assess_closed_form(md)
    x = np.arange(200_000)
    for f, F in zip(md.cells.fk, md.cells.Fk_hat, strict=True):
        brute = np.sum(stats.nbinom.pmf(x, f, f / F) / (f + x))
        cell = (res.cells["fk"] == f) & (res.cells["Fk_hat"] == F)
        assert cell.any()
        np.testing.assert_allclose(res.cells.loc[cell, "risk"], brute, rtol=1e-10)


def test_weights_below_one_take_the_cell_as_fully_sampled():
    # cell a=1 has two records of weight 0.5: F_hat = 1 < f = 2, p = f/F_hat = 2
    frame = pd.DataFrame({"a": [1, 1, 2, 2, 3], "w": [0.5, 0.5, 5.0, 5.0, 8.0]})
    md = Microdata(frame, keys=["a"], weight="w", allow_weights_below_one=True)
    res = assess_closed_form(md)
    np.testing.assert_allclose(res.records["risk"].iloc[:2], 0.5)  # 1/f, the most f allows
    assert res.summary["n_cells_weights_below_count"] == 1
    assert len(res.summary["warnings"]) == 1 and "1/f_k" in res.summary["warnings"][0]
    ok = assess_closed_form(Microdata(frame.assign(w=[1.0, 1, 5, 5, 8]), keys=["a"],
                                      weight="w"))
    assert "warnings" not in ok.summary


@pytest.mark.filterwarnings("ignore::sdcbayes.inference.diagnostics.ConvergenceWarning")
def test_negbin_warns_of_weights_below_count_like_the_closed_form():
    # the same file: cell a=1's weights sum to 1 < f = 2, taken as fully sampled
    from sdcbayes.inference.diagnostics import SdcbayesWarning
    from sdcbayes.risk.posterior_assess import assess_posterior

    frame = pd.DataFrame({"a": [1, 1, 2, 2, 3, 3], "w": [0.5, 0.5, 5.0, 7.0, 8.0, 4.0]})
    md = Microdata(frame, keys=["a"], weight="w", allow_weights_below_one=True)
    with pytest.warns(SdcbayesWarning, match="1 key combination.*below their sample count"):
        res = assess_posterior(md, model="negbin", draws=200, chains=1, tune=200,
                               random_seed=1)
    assert res.summary["n_cells_weights_below_count"] == 1
    assert any("negative-binomial" in w and "1/f_k" in w for w in res.summary["warnings"])
    # p_hat = 1 - 1e-9 on the logit scale: the records' risk is 1/f to ~1e-8
    np.testing.assert_allclose(res.records["risk"].iloc[:2], 0.5, atol=1e-6)
