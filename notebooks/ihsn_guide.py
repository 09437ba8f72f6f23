# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # IHSN *Introduction to Statistical Disclosure Control*: Tables 1-3
#
# Seed `001`: M. Templ, B. Meindl, A. Kowarik, S. Chen, *Introduction to
# Statistical Disclosure Control (SDC)*, IHSN Working Paper No. 007 (2014),
# Section 3.
#
# This notebook reproduces, with sdcbayes:
#
# * **Table 1** (Section 3.1): sample frequencies and record-level risks of an
#   eight-record file (sdcMicro's `francdat`), and the expected number of
#   re-identifications 0.966 (Section 3.4) -- `sdcbayes.Microdata` and
#   `sdcbayes.risk.assess.assess_closed_form`;
# * **Table 2** (Section 3.2): k-anonymity and distinct l-diversity --
#   `sdcbayes.risk.measures`;
# * the household risk example 0.15355 (Section 3.3) and the benchmark rule
#   (Section 3.4);
# * **Table 3** (Section 3.5): SUDA scores and DIS-SUDA risks --
#   `sdcbayes.risk.suda`, including the two columns of the printed table that do
#   not line up.
#
# Every reproduced number is asserted equal to the printed one at the printed
# precision.

# %%
import numpy as np
import pandas as pd

from sdcbayes import Microdata
from sdcbayes.risk.assess import assess_closed_form
from sdcbayes.risk.measures import (
    benchmark_rule,
    household_risk,
    k_anonymity_violations,
    l_diversity,
    mad,
)
from sdcbayes.risk.suda import msu_size_weights, suda

# %% [markdown]
# ## Table 1: frequencies, sample uniques and record-level risk
#
# Table 1 is sdcMicro's `francdat` file (keys `Key1..Key4` = age group, gender,
# income, education; sampling weight `w`). The guide lists the records in a
# different order from the file: its records 1-8 are francdat rows
# 1, 8, 2, 3, 4, 6, 5, 7 (matched by weight; records sharing a key pattern share
# `f_k` and risk). The risk is the Benedetti-Franconi `E(1/F_k | f_k)` under a
# negative binomial model with plug-in `p_k = f_k / Fhat_k` (seed 004, eq. 3).

# %%
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
KEYS = ["Key1", "Key2", "Key3", "Key4"]
GUIDE_ORDER = [0, 7, 1, 2, 3, 5, 4, 6]  # 0-based francdat row of the guide's records 1..8
AGE = {1: "20s", 3: "30s", 4: "40s", 6: "60s"}
GENDER = {2: "Male", 3: "Female"}
EDUCATION = {1: "High school", 4: "Middle school", 5: "University"}

# Table 1 as printed, in the guide's record order: f_k, weight, risk (3 decimals).
PRINTED_T1 = pd.DataFrame(
    {
        "fk": [2, 2, 2, 2, 1, 1, 1, 1],
        "w": [18, 92, 45.5, 39, 17, 8, 541, 5],
        "risk": [0.017, 0.017, 0.022, 0.022, 0.177, 0.297, 0.012, 0.402],
    },
    index=pd.RangeIndex(1, 9, name="record"),
)

md = Microdata(FRANCDAT, keys=KEYS, weight="w")
result = assess_closed_form(md)
rec = result.records.iloc[GUIDE_ORDER].reset_index(drop=True)
rec.index = PRINTED_T1.index

table1 = pd.DataFrame(
    {
        "age": FRANCDAT["Key1"].iloc[GUIDE_ORDER].map(AGE).to_numpy(),
        "gender": FRANCDAT["Key2"].iloc[GUIDE_ORDER].map(GENDER).to_numpy(),
        "income code": FRANCDAT["Key3"].iloc[GUIDE_ORDER].to_numpy(),
        "education": FRANCDAT["Key4"].iloc[GUIDE_ORDER].map(EDUCATION).to_numpy(),
        "w": FRANCDAT["w"].iloc[GUIDE_ORDER].to_numpy(),
        "fk printed": PRINTED_T1["fk"],
        "fk": rec["fk"].astype(int).to_numpy(),
        "Fk_hat": rec["Fk_hat"].to_numpy(),
        "risk printed": PRINTED_T1["risk"],
        "risk": rec["risk"].round(4).to_numpy(),
    },
    index=PRINTED_T1.index,
)
print(table1.to_string())

# the guide's record order is the one recovered from the weights
np.testing.assert_array_equal(table1["w"], PRINTED_T1["w"])
np.testing.assert_array_equal(rec["fk"].astype(int), PRINTED_T1["fk"])
# printed to 3 decimals: within half a unit of the last digit
assert np.all(np.abs(rec["risk"].to_numpy() - PRINTED_T1["risk"].to_numpy()) <= 5e-4)
# Section 3.1: records 5-8 are the four sample uniques
assert result.summary["n_sample_uniques"] == 4
assert np.array_equal(np.flatnonzero(rec["fk"].to_numpy() == 1) + 1, [5, 6, 7, 8])

# %% [markdown]
# "Using the example from Table 1, the expected number of re-identifications is
# 0.966, the sum of the last column" (Section 3.4). The printed 0.966 is the sum
# of the *rounded* column; the unrounded sum is 0.96653 (which the guide
# truncates).

# %%
er = result.summary["expected_reidentifications"]
er_rounded = float(np.round(result.records["risk"].to_numpy(), 3).sum())
print(f"ER unrounded = {er:.5f}; sum of the 3-decimal column = {er_rounded:.3f} (printed 0.966)")
assert round(er_rounded, 3) == 0.966
assert 0.966 <= er < 0.967

# %% [markdown]
# ## Table 2: k-anonymity and l-diversity
#
# Six inpatient records with keys gender and age group and the sensitive
# variable "medical condition". The table satisfies 3-anonymity, but the three
# women in their twenties all have cancer: distinct l-diversity 1, so an intruder
# learns the condition with certainty. The three men are 2-diverse. And "all
# records in the previous example [Table 1] violate 3-anonymity".

# %%
TABLE2 = pd.DataFrame(
    {
        "gender": ["Male"] * 3 + ["Female"] * 3,
        "age": ["30s"] * 3 + ["20s"] * 3,
        "condition": ["Cancer", "Heart Disease", "Cancer", "Cancer", "Cancer", "Cancer"],
    }
)
PRINTED_DISTINCT_L = [2, 2, 2, 1, 1, 1]

md2 = Microdata(TABLE2, keys=["gender", "age"])
fk2 = md2.cells.fk[md2.record_cell]
ldiv = l_diversity(md2.record_cell, {"condition": TABLE2["condition"].to_numpy()})
table2 = TABLE2.assign(
    fk=fk2,
    violates_3_anonymity=k_anonymity_violations(fk2, 3),
    distinct_l=ldiv["condition_Distinct_Ldiversity"].to_numpy()[md2.record_cell],
    entropy_l=ldiv["condition_Entropy_Ldiversity"].to_numpy()[md2.record_cell].round(4),
    printed_distinct_l=PRINTED_DISTINCT_L,
)
table2.index = pd.RangeIndex(1, 7, name="record")
print(table2.to_string())

assert not table2["violates_3_anonymity"].any()  # Table 2 is 3-anonymous
np.testing.assert_array_equal(table2["distinct_l"], PRINTED_DISTINCT_L)
# Table 1's file: every record violates 3-anonymity, the 4 uniques violate 2-anonymity
fk1 = result.records["fk"].astype(int).to_numpy()
assert k_anonymity_violations(fk1, 3).all()
assert k_anonymity_violations(fk1, 2).sum() == 4

# %% [markdown]
# ## Household risk (Section 3.3)
#
# "If we consider a single household of three members, whose individual
# disclosure risks are 0.1, 0.05 and 0.01, ... the disclosure risk for the entire
# household will be calculated as 1 - (1-0.1) x (1-0.05) x (1-0.01) = 0.15355."

# %%
hh = household_risk([0.1, 0.05, 0.01], ["h1", "h1", "h1"])
print("household risk of each member:", hh)
assert np.all(np.round(hh, 5) == 0.15355)

# %% [markdown]
# ## Benchmark rule (Section 3.4)
#
# Flag records with `r > 0.1` and `r > median(r) + 2 MAD(r)` (MAD scaled by
# 1.4826, as R's `mad`). On Table 1: median 0.022 (printed risks), MAD
# 1.4826 x 0.0075 = 0.0111, cut 0.0442, so the guide's records 5, 6 and 8
# (risks 0.177, 0.297, 0.402) are flagged. The guide states the rule without
# applying it; these numbers are worked by hand from the printed column.

# %%
printed_r = PRINTED_T1["risk"].to_numpy()
flag_printed = benchmark_rule(printed_r)
flag_ours = benchmark_rule(rec["risk"].to_numpy())
print(f"median {np.median(printed_r):.4f}, MAD {mad(printed_r):.4f}, "
      f"cut {np.median(printed_r) + 2 * mad(printed_r):.4f}")
print("flagged records (printed risks):", (np.flatnonzero(flag_printed) + 1).tolist())
print("flagged records (sdcbayes risks):", (np.flatnonzero(flag_ours) + 1).tolist())
assert abs(mad(printed_r) - 1.4826 * 0.0075) < 1e-12
assert (np.flatnonzero(flag_printed) + 1).tolist() == [5, 6, 8]
assert np.array_equal(flag_ours, flag_printed)
assert result.summary["n_above_benchmark"] == 3

# %% [markdown]
# ## Table 3: SUDA scores and DIS-SUDA
#
# Same eight records. An MSU (minimal sample unique) of size `k` scores
# `prod_{i=k}^{M} (ATT - i)` with `ATT = 4` attributes and maximum MSU size
# `M = 3`: record 8 has MSUs {60s} (3 x 2 x 1 = 6) and {Male, University}
# (2 x 1 = 2), so its SUDA score is 8. The printed SUDA column is
# 0, 0, 0, 0, 8, 4, 6, 8.
#
# The income labels lost their `<`/`>` in the seed's text; records 1-2 and 3-4
# are the two pairs (f_k = 2), so they differ in income, and records 5-8 share
# the income of 3-4.

# %%
TABLE3 = pd.DataFrame(
    {
        "age": ["20s", "20s", "20s", "20s", "30s", "40s", "40s", "60s"],
        "gender": ["Male"] * 4 + ["Female"] * 3 + ["Male"],
        "income": ["50k+", "50k+"] + ["50k-"] * 6,
        "education": ["High school"] * 4
        + ["University", "High school", "Middle school", "University"],
    },
    index=pd.RangeIndex(1, 9, name="record"),
)
PRINTED_SUDA = [0, 0, 0, 0, 8, 4, 6, 8]
PRINTED_DIS_SUDA = [0.00, 0.00, 0.00, 0.00, 0.0149, 0.0111, 0.0057, 0.0149]

w = msu_size_weights(4, 3)
print("MSU scores for sizes 1, 2, 3 (ATT = 4, M = 3):", w)
assert list(w) == [6, 2, 1]

res3 = suda(TABLE3.reset_index(drop=True), list(TABLE3.columns), max_size=3)
msus = res3.msus.as_frame(list(TABLE3.columns))
print(msus.assign(record=msus["record"] + 1).to_string(index=False))  # guide's 1-based records
out3 = TABLE3.assign(suda=res3.scores, suda_printed=PRINTED_SUDA)
print(out3.to_string())
np.testing.assert_array_equal(res3.scores, PRINTED_SUDA)
# record 8: one MSU of size 1 ({60s}) and one of size 2 ({Male, University})
assert res3.msu_counts.loc[7, 1] == 1 and res3.msu_counts.loc[7, 2] == 1
# M = ATT = 4 (sdcMicro's default) gives the same scores: no MSU of size 4 here
np.testing.assert_array_equal(suda(TABLE3, list(TABLE3.columns)).scores, PRINTED_SUDA)

# %% [markdown]
# ### The DIS-SUDA column
#
# The DIS-SUDA column does **not** follow from the SUDA column next to it. It is
# what sdcMicro's `suda2` gives on `francdat` in *file* order with the older
# IHSN/OECD MSU weights (`original_scores = FALSE`) and `DisFraction = 0.01`:
# francdat rows 4..7 give 0.0149, 0.0111, 0.0057, 0.0149. In the file, row 5 is
# the 40s woman with *middle-school* education and row 6 the one with *high
# school*; Table 3 lists them the other way round (records 6 = high school,
# 7 = middle school), so in the printed table the DIS-SUDA values of records 6
# and 7 belong to each other's rows -- the two columns are not aligned row by
# row. With the guide's own scores (8, 4, 6, 8) DIS-SUDA would differ again.
#
# DIS (Elliot & Manning 2003): `U = 4` uniques, `P = 4` records in pairs,
# `DIS = U pi / (U pi + P (1 - pi)) = 0.01`.

# %%
FRANCDAT_OF_TABLE3 = GUIDE_ORDER  # Table 3 lists Table 1's records in the same order
res_ihsn = suda(FRANCDAT, KEYS, score_method="ihsn", dis_fraction=0.01)
res_elliot = suda(FRANCDAT, KEYS, dis_fraction=0.01)
file_order = GUIDE_ORDER[:4] + [3, 4, 5, 6]  # uniques in francdat's file order
dis_check = pd.DataFrame(
    {
        "DIS-SUDA printed": PRINTED_DIS_SUDA,
        "IHSN scores, file order": res_ihsn.dis_scores[file_order].round(4),
        "IHSN scores, Table 3 rows": res_ihsn.dis_scores[FRANCDAT_OF_TABLE3].round(4),
        "guide's scores, Table 3 rows": res_elliot.dis_scores[FRANCDAT_OF_TABLE3].round(4),
    },
    index=TABLE3.index,
)
print(dis_check.to_string())
print(f"U = {res_ihsn.n_uniques}, P = {res_ihsn.n_in_pairs}, DIS = {res_ihsn.dis:.4f}")

# the printed column, to its 4 decimals, in file order
np.testing.assert_allclose(res_ihsn.dis_scores[file_order], PRINTED_DIS_SUDA, atol=5e-5)
assert res_ihsn.n_uniques == 4 and res_ihsn.n_in_pairs == 4
assert abs(res_ihsn.dis - 0.01) < 1e-12
# ... and not in the rows of Table 3: records 6 and 7 are swapped
row_aligned = res_ihsn.dis_scores[FRANCDAT_OF_TABLE3]
assert abs(row_aligned[5] - 0.0111) > 1e-3 and abs(row_aligned[6] - 0.0057) > 1e-3
# the guide's (Elliot) scores in francdat order are 8, 6, 4, 8 for rows 4..7
np.testing.assert_array_equal(res_elliot.scores[FRANCDAT_OF_TABLE3], PRINTED_SUDA)
