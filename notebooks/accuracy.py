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
# # Accuracy on known populations: every method, every real design (issue 7)
#
# Seed `001` (the IHSN guide, section 3.4) gives the file-level risk measures
# tau1 (sample uniques that are population-unique) and tau2 (their expected
# correct matches); seed `000` (Mokken et al.) and `004` (Polettini) the
# closed-form estimators. Their bias on real files is the reason this project
# exists. This notebook rebuilds, from the stored per-replicate results of the
# benchmark scripts, the method x design x metric table of the README, and checks the
# numbers quoted there and in the accuracy studies of `benchmarks/README.md` ("the
# README" below means either):
#
# * populations: the Adult file (48,842 records; 6 and 9 key variables) and the
#   Scotland census teaching file (63,388 records; 7 and 13 keys), each taken as
#   the whole population, simple random samples at 1%, 5% and 10% (12 designs);
#   at the end, a file kept out of every choice (the synthetic EU-SILC);
# * methods: Benedetti-Franconi with p = f/F̂ (what sdcMicro and mu-Argus report),
#   the Poisson-gamma plug-in, the Poisson log-linear plug-ins with main effects
#   and all two-way interactions (where the cross-classification has at most 2e6
#   cells: not Scotland 13 keys nor Adult 9 keys at 5-10%), Skinner-Elliot's DIS (theta only),
#   and the latent-class model (the default of `sdcbayes assess`), whose cells are
#   gamma-overdispersed by a cross-validated amount;
# * metrics: relative bias and RMSE, 90% interval coverage and width.
#
# Commands that produced the stored results (the shared data folder beside the
# checkout; about 1 h and 2 x 45 min on this 2-core machine):
#
# ```
# python benchmarks/accuracy.py --replicates 100 --methods benedetti-franconi,poisson-gamma,loglinear-main,dis --csv closed_form_100.csv
# python benchmarks/accuracy.py --replicates 50 --methods loglinear-2way --populations scotland7,scotland13 --csv loglinear_two_way_50.csv
# python benchmarks/accuracy.py --replicates 50 --methods loglinear-2way --populations adult6,adult9 --csv loglinear_two_way_50_adult.csv
# python benchmarks/latent_class_accuracy.py --populations adult6,scotland7 --replicates 50 --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations adult9,scotland13 --replicates 50 --csv b.csv
# (defaults: 2 chains x 150 draws after 100, H = 30, confirmed structural zeros,
# --overdispersion cv at scale ratios 4 and 8, one random partition each, the
# held-out count's variance times the parts' dispersion, half-Cauchy prior on
# kappa^-1/2; the same with --cv-dispersion binomial --kappa-prior log-uniform is the
# previous default, stored as latent_class_50_binomial_loguniform.csv.gz)
# ```
#
# (the last two also score the baselines on the same 50 samples). Every latent-class run
# stored before the section "The default since the synthetic census" used the 1/L_j profile
# prior, the default then: add `--phi-a inverse` to reproduce them. The goal of
# issue 7 -- |relative bias| <= 10% for tau1 and tau2 (or an absolute bias <= 2
# where the true tau1 is below 20), 90% coverage in [85%, 95%], and a lower
# relative RMSE than every baseline -- is checked design by design at the end.

# %%
import io
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from sdcbayes.validation import (
    COVERAGE_BAND,
    calibration_error,
    coverage_band_probability,
    coverage_p_value,
    goal_table,
    interval_errors,
    summarise,
)

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
closed = pd.read_csv(RESULTS / "closed_form_100.csv.gz")
# the two-way log-linear plug-in (IPF over the whole cross-classification) on the Scotland
# and, run later on the same seed-0 samples, the Adult designs; where the table has more than
# 2e6 cells (Scotland 13 keys, Adult 9 keys at 5% and 10%) it gives no estimate
two_way = pd.concat([pd.read_csv(RESULTS / "loglinear_two_way_50.csv.gz"),
                     pd.read_csv(RESULTS / "loglinear_two_way_50_adult.csv.gz")],
                    ignore_index=True)
_tw = two_way[two_way.quantity == "tau1"].groupby("design").estimate
assert two_way.design.nunique() == 12 and (_tw.size() == 50).all()
assert set(_tw.count()[_tw.count() == 0].index) == {
    "scotland13/srs/1%", "scotland13/srs/5%", "scotland13/srs/10%", "adult9/srs/10%"}
assert _tw.count()["adult9/srs/5%"] == 1  # one sample's table fits under the cap
latent = pd.read_csv(RESULTS / "latent_class_50.csv.gz")
previous = pd.read_csv(RESULTS / "latent_class_50_binomial_loguniform.csv.gz")

# every design has its replicates: >= 100 for the closed forms, >= 50 for the posterior model
reps = closed.groupby(["design", "method"]).replicate.nunique()
assert reps.min() >= 100 and closed.design.nunique() == 12, reps.min()
lc_reps = latent[latent.method == "latent-class"].groupby("design").replicate.nunique()
assert lc_reps.min() >= 50 and lc_reps.size == 12, lc_reps
print("replicates per design: closed forms", reps.min(), "| latent class", lc_reps.min())

# %% [markdown]
# ## The full table
#
# One row per design, method and quantity: mean truth and estimate, relative bias
# and RMSE (ratios of means over replicates), 90% coverage and mean width (posterior
# model only). Closed-form methods over 100 replicates, the latent-class model over
# 50 (with the baselines re-scored on its 50 samples).

# %%
table = pd.concat([summarise(closed), summarise(two_way),
                   summarise(latent[latent.method == "latent-class"])], ignore_index=True)
table = table[table.quantity.isin(["tau1", "tau2", "expected_reidentifications"])]
pd.set_option("display.width", 200)
pd.set_option("display.max_rows", 500)
show = table[["design", "method", "quantity", "replicates", "truth", "estimate",
              "rel_bias", "rel_rmse", "coverage", "width"]]
print(show.round(3).to_string(index=False))

# %% [markdown]
# ## The README's summary: tau1 and tau2 bias in % at 1/5/10%
#
# Rebuilt here and compared with the table in the README, so that the README
# cannot drift from the stored results.

# %%
LABELS = {"adult6": "Adult 6 keys", "adult9": "Adult 9 keys",
          "scotland7": "Scotland 7 keys", "scotland13": "Scotland 13 keys"}
METHODS = ["benedetti-franconi", "poisson-gamma", "loglinear-main", "latent-class"]


def signed_pct(x):
    """A rate as a whole percentage with its sign (no "-0": a rounded zero is +0)."""
    return f"{int(round(100 * x)):+d}".replace("-", "−")


def band_goal(summary):
    """``goal_table`` of the latent-class model's rows alone (variants compared on the
    same samples, no baseline beside them): with no other method's RMSE to beat its
    ``rmse_ok`` is NaN and its ``met`` False, so ``met`` here is the goal's bias and
    coverage parts for tau1 and tau2, what these comparisons count."""
    goal = goal_table(summary, "latent-class")
    parts = [f"{q}_{p}_ok" for q in ("tau1", "tau2") for p in ("bias", "cover")]
    assert goal[["tau1_rmse_ok", "tau2_rmse_ok"]].isna().all().all()  # no baseline here
    return goal.assign(met=goal[parts].all(axis=1))


def goal_counts(goal):
    """Designs meeting the whole goal, and the bias, RMSE and coverage parts (tau1 and tau2)."""
    both = {part: int(goal[[f"tau1_{part}_ok", f"tau2_{part}_ok"]].all(axis=1).sum())
            for part in ("bias", "rmse", "cover")}
    return int(goal.met.sum()), both["bias"], both["rmse"], both["cover"]


def bias_cell(method, pop, table=table, kind="srs"):
    parts = []
    for q in ("tau1", "tau2"):
        vals = []
        for frac in ("1%", "5%", "10%"):
            row = table[(table.design == f"{pop}/{kind}/{frac}") & (table.method == method)
                        & (table.quantity == q)]
            vals.append(signed_pct(row.rel_bias.iloc[0]))
        parts.append("/".join(vals))
    return " · ".join(parts)


rows = [f"| {LABELS[p]} 1/5/10% | " + " | ".join(bias_cell(m, p) for m in METHODS) + " |"
        for p in LABELS]
print("\n".join(rows))

# the README's tables, and those of the accuracy studies in benchmarks/README.md
_root = Path(__file__).resolve().parents[1]
readme = "\n".join((_root / f).read_text(encoding="utf-8")
                    for f in ("README.md", "benchmarks/README.md"))
for line in rows:
    assert line in readme, f"README accuracy table differs from the stored results:\n{line}"
# the two-way plug-in's understatement of tau1 on Adult, where it runs (README, "Accuracy")
_tw_bias = summarise(two_way).set_index(["design", "quantity"]).rel_bias.xs("tau1", level=1)
_tw_adult = {d: round(100 * float(b)) for d, b in _tw_bias.dropna().items()
             if d.startswith("adult")}
assert _tw_adult == {"adult6/srs/1%": -97, "adult6/srs/5%": -61, "adult6/srs/10%": -34,
                     "adult9/srs/1%": -90, "adult9/srs/5%": -26}, _tw_adult
assert ("understates\nτ1 by 34–97% on Adult (Adult 6 keys −97/−61/−34%, Adult 9 keys at 1% "
        "−90%; −26% on the one\nAdult 9 keys 5% sample it fits)") in readme

# %% [markdown]
# ## Quarters and eighths against halves (50 replicates each, same samples)
#
# The overdispersion kappa is learnt by cross-validation: a mixture fitted to one
# part of the sample predicts which of its uniques the rest of the sample leaves
# unique. Until that run the parts were halves (four random halvings); the default
# is now one partition into quarters and one into eighths, their kappa posteriors
# mixed, because the kappa a fit needs falls as the extrapolation factor grows and
# the population's factor N/n is 10 to 100 (README, "Accuracy";
# `benchmarks/overdispersion_oracle.py`). The halves, re-run with
#
# ```
# python benchmarks/latent_class_accuracy.py --populations scotland13,adult6 --replicates 50 --cv-ratios 2 --overdispersion-splits 4 --cv-dispersion binomial --kappa-prior log-uniform --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations adult9,scotland7 --replicates 50 --cv-ratios 2 --overdispersion-splits 4 --cv-dispersion binomial --kappa-prior log-uniform --csv b.csv
# ```
#
# are stored in `latent_class_50_halves.csv.gz` and compared with quarters and
# eighths under the same prior and variance (the previous default,
# `latent_class_50_binomial_loguniform.csv.gz`).

# %%
halves = pd.read_csv(RESULTS / "latent_class_50_halves.csv.gz")


def compare_runs(base, other, names):
    """Latent-class tau1/tau2 of two stored runs side by side (columns suffixed by
    names), printed with each quantity's mean |bias|, mean relative RMSE and number
    of designs with 90% coverage in [0.85, 0.95]; returns the merged table and those
    means as {quantity: {(metric, name): value}}."""
    a, b = (summarise(run[run.method == "latent-class"]) for run in (base, other))
    both = a.merge(b, on=["design", "quantity"], suffixes=tuple(f"_{x}" for x in names))
    both = both[both.quantity.isin(["tau1", "tau2"])]
    cols = [f"{m}_{x}" for m in ("rel_bias", "coverage", "rel_rmse") for x in names]
    print(both[["design", "quantity", *cols]].round(3).to_string(index=False))
    means = {}
    for q in ("tau1", "tau2"):
        x = both[both.quantity == q]
        means[q] = {(m, name): v for name in names for m, v in (
            ("bias", x[f"rel_bias_{name}"].abs().mean()),
            ("rmse", x[f"rel_rmse_{name}"].mean()),
            ("in_range", int(x[f"coverage_{name}"].between(*COVERAGE_BAND).sum())))}
        print(f"{q}: mean |bias|, mean relative RMSE, designs with coverage in [0.85, 0.95]: "
              + " vs ".join(f"{means[q]['bias', name]:.3f}, {means[q]['rmse', name]:.3f}, "
                            f"{means[q]['in_range', name]} ({name})" for name in names))
    return both, means


ratio_cmp, ratio_means = compare_runs(halves, previous, ("halves", "default"))
# what the README says: lower mean |bias| and RMSE for both, the sparsest design fixed
for q in ("tau1", "tau2"):
    assert ratio_means[q]["bias", "default"] < 0.5 * ratio_means[q]["bias", "halves"]
    assert ratio_means[q]["rmse", "default"] < ratio_means[q]["rmse", "halves"]
t1_ratio = ratio_cmp[ratio_cmp.quantity == "tau1"].set_index("design")
assert t1_ratio.loc["scotland13/srs/1%", "rel_bias_halves"] > 0.15
assert abs(t1_ratio.loc["scotland13/srs/1%", "rel_bias_default"]) < 0.05

# %% [markdown]
# ## Other cross-validations, measured against halves (50 replicates each, same samples)
#
# Before the scale ratios, two changes to the halves were tried. Halves learn the
# overdispersion kappa from penalised-EM fits of each half, with a prior uniform in
# log kappa, over four halvings. The alternative
# (`overdispersion_cv(predictive="gibbs", prior=KAPPA_PRIOR_HALF_CAUCHY)`, two
# halvings) fits each half by the Gibbs sampler, so that the held-out prediction
# averages over the posterior of pi as the risk does, and puts a half-Cauchy(0, 1)
# prior on the coefficient of variation kappa^(-1/2) of the cell effects. Both runs
# used the same design seeds, hence the same samples:
#
# ```
# python benchmarks/latent_class_accuracy.py --populations scotland13,adult6 --replicates 50 --cv-ratios 2 --overdispersion-splits 2 --cv-dispersion binomial --cv-predictive gibbs --kappa-prior half-cauchy:1 --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations adult9,scotland7 --replicates 50 --cv-ratios 2 --overdispersion-splits 2 --cv-dispersion binomial --cv-predictive gibbs --kappa-prior half-cauchy:1 --csv b.csv
# ```

# %%
alternative = pd.read_csv(RESULTS / "latent_class_50_gibbs_halfcauchy.csv.gz")
change, _ = compare_runs(halves, alternative, ("halves", "alt"))
t1 = change[change.quantity == "tau1"].set_index("design")
# what the README says: the alternative helps the sparse key sets and hurts the dense
# ones, and on average it is no better than halves, so it was not adopted
sparse = t1[t1.index.str.startswith(("adult9", "scotland13"))]
dense = t1[t1.index.str.startswith("scotland7")]
assert (sparse.rel_bias_alt.abs() < sparse.rel_bias_halves.abs()).all()
assert (dense.rel_bias_alt.abs() > dense.rel_bias_halves.abs()).all()
assert t1.rel_bias_alt.abs().mean() >= t1.rel_bias_halves.abs().mean()

# %% [markdown]
# The prior alone (EM-fitted halves, half-Cauchy prior, four halvings:
# `--cv-ratios 2 --overdispersion-splits 4 --cv-dispersion binomial --kappa-prior
# half-cauchy:1`, same samples) moves the same way, less far: lower
# bias on Adult 9 keys and on Scotland 13 keys at 1%, higher on the dense key sets.

# %%
prior_only = pd.read_csv(RESULTS / "latent_class_50_halfcauchy.csv.gz")
po = summarise(prior_only[prior_only.method == "latent-class"])
po = po[po.quantity == "tau1"].set_index("design").reindex(t1.index)
print(f"prior alone: tau1 mean |bias| {po.rel_bias.abs().mean():.3f}, mean relative RMSE "
      f"{po.rel_rmse.mean():.3f}; goal met on "
      f"{int(goal_table(summarise(prior_only), 'latent-class').met.sum())} designs")
assert po.rel_bias.abs().mean() >= t1.rel_bias_halves.abs().mean()
print((po.rel_bias - t1.rel_bias_halves).round(3).to_string())
better = po.rel_bias.abs() < t1.rel_bias_halves.abs()
assert better[t1.index.str.startswith("adult9")].all() and better["scotland13/srs/1%"]

# %% [markdown]
# ## The held-out count's dispersion, with the half-Cauchy prior (the default now)
#
# Each part's mixture is fitted to n/r records, and its prediction of the part's
# count is noisier than the Bernoulli variance the kappa likelihood assumed: on the
# sparse key sets the parts of one partition disagree 1.4-3.7 times more (in
# variance; medians per design, printed below).
# The default now multiplies that variance by the parts' quasi-likelihood dispersion
# (`overdispersion_cv(dispersion="parts")`) and, as the flatter likelihood lets the
# prior matter, puts the half-Cauchy(0, 1) prior on kappa^-1/2 (the log-uniform one
# hands the grid's Poisson end the mass). Against the previous default (Bernoulli
# variance, log-uniform prior), the same 50 samples per design:

# %%
disp_cmp, disp_means = compare_runs(previous, latent, ("previous", "default"))
prev_goal = goal_table(summarise(previous), "latent-class")
new_goal = goal_table(summarise(latent), "latent-class")
print(f"goal met on {int(prev_goal.met.sum())} (previous) vs {int(new_goal.met.sum())} (default)")
phis = latent[(latent.method == "latent-class") & (latent.quantity == "tau1")].note.str.extract(
    r"cv dispersion ([0-9.e+]+)", expand=False).astype(float).fillna(1.0)
phi_med = phis.groupby(latent.loc[phis.index, "design"]).median()
print("median dispersion per design:\n", phi_med.round(2).to_string(), sep="")
phi_sparse = phi_med.index.str.startswith(("adult9", "scotland13"))
assert phi_med[phi_sparse].between(1.4, 3.8).all() and (phi_med[~phi_sparse] <= 1.6).all()
# what the README says: more designs meet the goal, lower RMSE, a little more bias
assert int(prev_goal.met.sum()) == 4 and int(new_goal.met.sum()) == 6
for q in ("tau1", "tau2"):
    assert disp_means[q]["rmse", "default"] < disp_means[q]["rmse", "previous"]
    assert disp_means[q]["in_range", "default"] > disp_means[q]["in_range", "previous"]
    assert disp_means[q]["bias", "default"] < 0.025
d13 = disp_cmp[disp_cmp.design.str.startswith("scotland13")]
assert (d13.coverage_default >= 0.85).all() and (d13.coverage_previous < 0.85).any()

# %% [markdown]
# ## A constant model error for the intervals? Calibrated on one population, checked on the other
#
# Under the previous default (Bernoulli variance of the held-out count, log-uniform
# prior; stored in `latent_class_50_binomial_loguniform.csv.gz`), most misses of the
# coverage goal came with a small bias (a few percent of tau1) and intervals of the
# same size. Could a fixed relative model error sigma_m,
# added on the log scale to each interval, fix them? Approximating each stored 90%
# interval by a normal on the log scale (which keeps the designs in range), sigma_m is
# chosen on a 0-4% grid to minimise the mean |coverage - 0.9| over one population's six
# designs (tau1 and tau2) and checked on the other population's.

# %%
lcq = previous[(previous.method == "latent-class")
               & previous.quantity.isin(["tau1", "tau2"])].copy()
Z90 = 1.6448536269514722
lcq["log_sd"] = (np.log(lcq.hi.clip(lower=0.5)) - np.log(lcq.lo.clip(lower=0.5))) / (2 * Z90)
lcq["log_err"] = np.abs(np.log(lcq.truth.clip(lower=0.5)) - np.log(lcq.estimate.clip(lower=0.5)))


def coverage_with_model_error(sub, sigma_m):
    covered = sub.log_err <= Z90 * np.sqrt(sub.log_sd ** 2 + sigma_m ** 2)
    return covered.groupby([sub.design, sub.quantity]).mean().unstack()


def n_in_range(cov):
    return int(cov.apply(lambda c: c.between(*COVERAGE_BAND)).all(axis=1).sum())


SIGMA_GRID = np.arange(0.0, 0.0401, 0.0025)
calibrated = {}
for train, test in (("adult", "scotland"), ("scotland", "adult")):
    tr = lcq[lcq.population.str.startswith(train)]
    te = lcq[lcq.population.str.startswith(test)]
    loss = [float((coverage_with_model_error(tr, sm) - 0.9).abs().mean().mean())
            for sm in SIGMA_GRID]
    best = float(SIGMA_GRID[int(np.argmin(loss))])
    before_cov, after_cov = coverage_with_model_error(te, 0.0), coverage_with_model_error(te, best)
    calibrated[train] = (best, n_in_range(before_cov), n_in_range(after_cov))
    gap_before = float((before_cov - 0.9).abs().mean().mean())
    gap_after = float((after_cov - 0.9).abs().mean().mean())
    print(f"calibrated on {train}: sigma_m = {best:.4f}; on {test}: mean |coverage - 0.9| "
          f"{gap_before:.3f} -> {gap_after:.3f}, designs in range {n_in_range(before_cov)} -> "
          f"{n_in_range(after_cov)}")
# the approximation keeps the stored count of designs in range (4 of 12)
assert n_in_range(coverage_with_model_error(lcq, 0.0)) == 4
# what the README says: the two populations want different model errors, and neither
# population's choice puts more of the other's designs in range
assert calibrated["adult"][0] >= 2 * calibrated["scotland"][0] > 0
assert all(after <= before for _, before, after in calibrated.values())

# %% [markdown]
# ## Record level: calibration (Brier score) and ranking (AUC)
#
# Over the sample uniques of each replicate: the Brier score of the predicted
# P(F_k = 1 | f_k = 1) against the true population uniqueness, and the AUC of that
# prediction for telling population uniques from the rest (0.5 = no ranking: the
# Benedetti-Franconi and Poisson-gamma plug-ins give every sample unique of a file
# the same probability under equal weights). Means over the 50 samples the
# latent-class model was scored on.

# %%
record = summarise(latent)
record = record[record.quantity == "tau1"]
brier = record.pivot(index="design", columns="method", values="brier")
auc = record.pivot(index="design", columns="method", values="auc")
print("Brier score (lower is better)\n", brier.round(3).to_string(), sep="")
print("\nAUC (higher is better)\n", auc.round(3).to_string(), sep="")
best_brier = int((brier.idxmin(axis=1) == "latent-class").sum())
best_auc = int((auc.idxmax(axis=1) == "latent-class").sum())
print(f"\nlatent class: lowest Brier on {best_brier} of 12 designs, highest AUC on {best_auc}")
assert best_brier == 12 and best_auc >= 11

# %% [markdown]
# ### Calibration plots
#
# The binned calibration of P(F = 1 | f = 1) (ten equal bins; records pooled over
# replicates), the data of a reliability diagram, for the default model and the
# baselines on the first 20 samples of each SRS design (the same samples, and for the
# latent class the same estimates, as the stored runs above):
#
# ```
# python benchmarks/latent_class_accuracy.py --populations adult6,adult9 --replicates 20 --calibration-csv a.csv --calibration-html a.html
# python benchmarks/latent_class_accuracy.py --populations scotland7,scotland13 --replicates 20 --calibration-csv b.csv --calibration-html b.html
# ```
#
# (about 25 min on both cores; the HTML pages hold one plot per design), the two CSVs
# stored together as `calibration_20.csv.gz`. `sdcbayes.report.calibration_report`
# draws the plots from it.

# %%
cal20 = pd.read_csv(RESULTS / "calibration_20.csv.gz")
cal_err = calibration_error(cal20)
ece = cal_err.pivot(index="design", columns="method", values="ece")
print("expected calibration error (lower is better)\n", ece.round(3).to_string(), sep="")
lc_err = cal_err[cal_err.method == "latent-class"].set_index("design")
print(lc_err[["records", "mean_predicted", "observed", "max_gap"]].round(3).to_string())
# what the README states: the latent class has the lowest ECE on all 12 designs (0.011 to
# 0.049; the baselines 0.043 to 0.58), its mean prediction is within 0.015 of the observed
# share except on Scotland 13 keys at 1% (0.62 against 0.58), and its worst bin holding 1%
# of the records is off by at most 0.135 (Scotland 7 keys at 5%)
baselines = [m for m in ece.columns if m != "latent-class"]
assert (ece["latent-class"] < ece[baselines].min(axis=1)).all()
assert [round(ece["latent-class"].min(), 3), round(ece["latent-class"].max(), 3)] == [
    0.011, 0.049]
assert [round(ece[baselines].min().min(), 3), round(ece[baselines].max().max(), 2)] == [
    0.043, 0.58]
in_large = (lc_err.mean_predicted - lc_err.observed).abs()
assert in_large.drop("scotland13/srs/1%").max() < 0.016
assert round(lc_err.at["scotland13/srs/1%", "mean_predicted"], 2) == 0.62
assert round(lc_err.at["scotland13/srs/1%", "observed"], 2) == 0.58
assert lc_err.max_gap.idxmax() == "scotland7/srs/5%" and lc_err.max_gap.max() < 0.136
# the same on the first 20 stratified samples of each design (the commands with --kind
# stratified; stored as `calibration_20_stratified.csv.gz`): 0.007 to 0.055, the lowest on
# all 12; within 0.008 in the large except at 1% on Adult 9 keys (+0.031) and Scotland 13
# keys (-0.034); worst bin off by at most 0.126
s_err = calibration_error(pd.read_csv(RESULTS / "calibration_20_stratified.csv.gz"))
s_ece = s_err.pivot(index="design", columns="method", values="ece")
print("stratified: expected calibration error\n", s_ece.round(3).to_string(), sep="")
assert (s_ece["latent-class"] < s_ece[baselines].min(axis=1)).all()
assert [round(s_ece["latent-class"].min(), 3), round(s_ece["latent-class"].max(), 3)] == [
    0.007, 0.055]
s_lc = s_err[s_err.method == "latent-class"].set_index("design")
s_large = s_lc.mean_predicted - s_lc.observed
assert s_large.drop(["adult9/stratified/1%", "scotland13/stratified/1%"]).abs().max() < 0.0085
assert [round(s_large[d], 3) for d in ("adult9/stratified/1%", "scotland13/stratified/1%")] == [
    0.031, -0.034]
assert s_lc.max_gap.max() < 0.127

# %% [markdown]
# ## The goal, design by design (latent-class model, 50 replicates)
#
# Bias: |relative bias| <= 10% for tau1 and tau2, or |mean error| <= 2 where the
# mean true tau1 is below 20. Coverage: the 90% intervals of tau1 and tau2 cover
# the truth in 85-95% of replicates. RMSE: lower relative RMSE than each baseline
# scored on the same samples.

# %%
lc = summarise(latent)
goal = goal_table(lc, "latent-class")
print(goal.round(3).to_string(index=False))
n_met, n_bias, n_rmse, n_cover = goal_counts(goal)
print(f"\ngoal met on {n_met} of {len(goal)} designs; bias met on {n_bias}, "
      f"RMSE below every baseline on {n_rmse}, coverage met on {n_cover}")
# what the README states about the goal, checked against the stored results
assert n_met == 6 and len(goal) == 12
assert n_bias == 12 and n_rmse == 12 and n_cover == 6
assert set(goal.design[goal.met]) == {
    "adult6/srs/1%", "adult6/srs/5%", "scotland7/srs/1%",
    "scotland13/srs/1%", "scotland13/srs/5%", "scotland13/srs/10%"}
assert np.all(np.isfinite(lc.rel_bias))

# %% [markdown]
# ## Which coverage misses are the model's? The Monte Carlo error of 50 replicates
#
# With 50 replicates the number of intervals covering is Binomial(50, c): even exactly
# calibrated intervals (c = 0.90) land in 85-95% with probability 0.77 per quantity,
# so "in range on all 12 designs" would be luck (probability below 0.05 even if tau1
# and tau2 always agreed). The exact binomial p-value of each coverage count against
# 90% (`goal_table`'s `_cover_p`) separates the misses a method owns (p < 0.05) from
# those 50 replicates cannot tell from calibrated ones.

# %%
band_50 = coverage_band_probability(50)
print(f"P(coverage in [0.85, 0.95] | calibrated, 50 replicates) = {band_50:.3f}; "
      f"100: {coverage_band_probability(100):.3f}; 200: {coverage_band_probability(200):.3f}")
assert 0.76 < band_50 < 0.77 and band_50**12 < 0.05


def consistent_designs(goal, alpha=0.05):
    """Designs whose tau1 and tau2 coverage counts are both consistent with 90%."""
    ok = (goal.tau1_cover_p >= alpha) & (goal.tau2_cover_p >= alpha)
    return list(goal.design[ok])


print(goal[["design", "tau1_coverage", "tau1_cover_p", "tau2_coverage",
            "tau2_cover_p"]].round(3).to_string(index=False))
srs_consistent = consistent_designs(goal)
print("coverage consistent with 90% (p >= 0.05, tau1 and tau2):", ", ".join(srs_consistent))
# the README's count: the 6 designs in range and Scotland 7 keys at 5% (tau1 0.98),
# whose miss 50 replicates cannot tell from calibration
assert len(srs_consistent) == 7
assert set(srs_consistent) == set(goal.design[goal.met]) | {"scotland7/srs/5%"}

# %% [markdown]
# ## 100 replicates per SRS design
#
# 50 further samples per design, drawn with design seed 1 (replicate r from
# `default_rng([1, r])`, independent of seed 0's), the same default model:
#
# ```
# python benchmarks/latent_class_accuracy.py --replicates 50 --seed 1 --populations adult6,scotland13 --csv a.csv
# python benchmarks/latent_class_accuracy.py --replicates 50 --seed 1 --populations adult9,scotland7 --csv b.csv
# ```
#
# stored as `latent_class_50_seed1.csv.gz` (the baselines re-scored on its samples)
# and pooled with seed 0's. At 100 replicates calibrated intervals land in 85-95%
# with probability 0.94 per quantity, and a coverage of 0.80 or 0.98 is p < 0.01.

# %%


def pooled_goal(runs, label):
    """Pool stored runs of the 12 designs (50 replicates each, different design
    seeds) and score the goal; returns the summary, the goal table, its counts (met,
    bias, RMSE, coverage), the designs consistent with 90%, those whose coverage the
    model owns (p < 0.01 for tau1 or tau2), and per quantity (tau1, tau2) the
    latent-class model's mean |bias|, mean relative RMSE and largest |bias| over the
    designs."""
    table = summarise(pd.concat(runs, ignore_index=True))
    lc_rows = table[table.method == "latent-class"]
    n_reps = 50 * len(runs)
    assert (lc_rows.replicates == n_reps).all() and lc_rows.design.nunique() == 12
    goal = goal_table(table, "latent-class")
    print(goal.round(3).to_string(index=False))
    counts, consistent = goal_counts(goal), consistent_designs(goal)
    met, bias, rmse, cover = counts
    print(f"\n{label}, {n_reps} replicates: goal met on {met} of {len(goal)} designs; bias met on "
          f"{bias}, RMSE below every baseline on {rmse}, coverage met on {cover}; coverage "
          f"consistent with 90% on {len(consistent)}: {', '.join(consistent)}")
    gi = goal.set_index("design")
    owned = {d for d in gi.index if min(gi.at[d, "tau1_cover_p"], gi.at[d, "tau2_cover_p"]) < 0.01}
    lc_tau = lc_rows[lc_rows.quantity.isin(["tau1", "tau2"])]
    means = {q: (float(x.rel_bias.abs().mean()), float(x.rel_rmse.mean()),
                 float(x.rel_bias.abs().max())) for q, x in lc_tau.groupby("quantity")}
    print("mean |bias|, mean relative RMSE, largest |bias|:",
          {q: tuple(round(v, 4) for v in x) for q, x in means.items()})
    return table, goal, counts, consistent, owned, means


def cov_pair(goal, design):
    return tuple(round(goal.at[design, f"{q}_coverage"], 2) for q in ("tau1", "tau2"))


seed1 = pd.read_csv(RESULTS / "latent_class_50_seed1.csv.gz")
h_table, h_goal, (h_met, h_bias, h_rmse, h_cover), h_consistent, owned, h_mean = pooled_goal(
    [latent, seed1], "SRS")
# what the README states about 100 replicates: the same bias and RMSE parts, and
# coverage consistent with 90% exactly where it is in range
assert h_bias == 12 and h_rmse == 12 and h_met == 5 and h_cover == 5
assert set(h_goal.design[h_goal.met]) == set(h_consistent) == {
    "adult6/srs/1%", "scotland7/srs/1%", "scotland7/srs/5%",
    "scotland13/srs/5%", "scotland13/srs/10%"}
hg = h_goal.set_index("design")
# the misses the model owns (p < 0.01 for tau1 or tau2) ...
assert owned == {"adult6/srs/10%", "adult9/srs/1%", "adult9/srs/5%", "adult9/srs/10%"}, owned
# ... and the three that 100 replicates put just outside (tau2, 0.01 <= p < 0.05)
assert set(hg.index) - owned - set(h_consistent) == {
    "adult6/srs/5%", "scotland7/srs/10%", "scotland13/srs/1%"}
assert [round(hg.at[d, "tau2_coverage"], 2) for d in
        ("adult6/srs/5%", "scotland7/srs/10%", "scotland13/srs/1%")] == [0.83, 0.97, 0.96]
assert round(h_mean["tau1"][0], 3) == 0.020 and round(h_mean["tau1"][1], 3) == 0.074
assert max(h_mean[q][2] for q in h_mean) < 0.05  # the README: within 5% on every design
band_100 = coverage_band_probability(100)
# all 12 designs in range for a calibrated model: tau1 and tau2 independent .. identical
assert round(band_100**24, 2) == 0.21 and round(band_100**12, 2) == 0.45

# %% [markdown]
# ## 150 replicates per SRS design
#
# 50 more samples per design (design seed 2), the same default model:
#
# ```
# python benchmarks/latent_class_accuracy.py --replicates 50 --seed 2 --populations adult6,scotland13 --csv a.csv
# python benchmarks/latent_class_accuracy.py --replicates 50 --seed 2 --populations adult9,scotland7 --csv b.csv
# ```
#
# (about 45 min on both cores) stored as `latent_class_50_seed2.csv.gz`, pooled with
# seeds 0 and 1. At 150 replicates calibrated intervals land in 85-95% with
# probability 0.96 per quantity.

# %%
seed2 = pd.read_csv(RESULTS / "latent_class_50_seed2.csv.gz")
t_table, t_goal, (t_met, t_bias, t_rmse, t_cover), t_consistent, t_owned, t_mean = pooled_goal(
    [latent, seed1, seed2], "SRS")
# what the README states about 150 replicates
assert t_bias == 12 and t_rmse == 12 and t_met == 6 and t_cover == 6
assert set(t_goal.design[t_goal.met]) == set(t_consistent) == {
    "adult6/srs/1%", "adult6/srs/5%", "scotland7/srs/1%", "scotland7/srs/5%",
    "scotland7/srs/10%", "scotland13/srs/5%"}
assert t_owned == owned  # the same four misses the model owns (p < 0.01)
tg = t_goal.set_index("design")
assert set(tg.index) - t_owned - set(t_consistent) == {"scotland13/srs/1%", "scotland13/srs/10%"}
assert (round(tg.at["scotland13/srs/1%", "tau1_coverage"], 2),
        round(tg.at["scotland13/srs/10%", "tau2_coverage"], 2)) == (0.95, 0.83)
assert [round(t_mean[q][0], 3) for q in ("tau1", "tau2")] == [0.019, 0.006]
assert [round(t_mean[q][1], 3) for q in ("tau1", "tau2")] == [0.074, 0.038]
assert round(t_mean["tau1"][2], 3) == 0.042 > t_mean["tau2"][2]  # tau1, Adult 9 keys at 1%
band_150 = coverage_band_probability(150)
assert round(band_150, 2) == 0.96
assert (round(band_150**24, 2), round(band_150**12, 2)) == (0.38, 0.62)

# %% [markdown]
# ## 200 replicates per SRS design
#
# 50 more samples per design (design seed 3), the same default model:
#
# ```
# python benchmarks/latent_class_accuracy.py --replicates 50 --seed 3 --csv c.csv
# ```
#
# (about 1 h 40 min on one core, Scotland 13 keys at 10% run beside it with
# `--populations scotland13 --fractions 0.1`) stored as `latent_class_50_seed3.csv.gz`,
# pooled with seeds 0, 1 and 2. At 200 replicates calibrated intervals land in 85-95%
# with probability 0.99 per quantity, so all 12 designs in range would be expected
# with probability 0.73-0.85.

# %%
seed3 = pd.read_csv(RESULTS / "latent_class_50_seed3.csv.gz")
f_table, f_goal, (f_met, f_bias, f_rmse, f_cover), f_consistent, f_owned, f_mean = pooled_goal(
    [latent, seed1, seed2, seed3], "SRS")
# what the README states about 200 replicates: Scotland 13 keys at 1% joins (7 of 12);
# the four misses of 150 replicates stay, Scotland 13 keys at 10% joins them (tau2 0.83)
assert f_bias == 12 and f_rmse == 12 and f_met == 7 and f_cover == 7
assert set(f_goal.design[f_goal.met]) == set(f_consistent) == set(t_consistent) | {
    "scotland13/srs/1%"}
assert f_owned == owned | {"scotland13/srs/10%"}
fg = f_goal.set_index("design")
assert cov_pair(fg, "scotland13/srs/1%") == (0.94, 0.93)
assert cov_pair(fg, "scotland13/srs/10%") == (0.87, 0.83)
assert [cov_pair(fg, d) for d in sorted(owned)] == [  # Adult 6 10%, Adult 9 1%, 10%, 5%
    (0.57, 0.45), (0.78, 0.78), (0.76, 0.84), (0.99, 1.0)]
assert [round(f_mean[q][0], 4) for q in ("tau1", "tau2")] == [0.0187, 0.0056]
assert [round(f_mean[q][1], 4) for q in ("tau1", "tau2")] == [0.0743, 0.0384]
band_200 = coverage_band_probability(200)
assert (round(band_200, 2), round(band_200**24, 2), round(band_200**12, 2)) == (0.99, 0.73, 0.85)
# the standardised errors tell the same story: shifts on Adult 6 keys and Adult 9 keys at
# 10%, too narrow at Adult 9 keys at 1%, too wide at 5%; Scotland 13 keys at 10%: tau2
# 0.7 posterior sd low
z200 = interval_errors(pd.concat([latent, seed1, seed2, seed3], ignore_index=True)
                       .query("method == 'latent-class'"))
z2 = z200.pivot(index="design", columns="quantity", values=["z_mean", "z_sd"])
assert (z200.replicates == 200).all()
assert [round(z2["z_mean"].at["adult6/srs/10%", q], 2) for q in ("tau1", "tau2")] == [-1.48, -1.79]
assert [round(z2["z_sd"].at["adult9/srs/1%", q], 2) for q in ("tau1", "tau2")] == [1.4, 1.47]
assert [round(z2["z_sd"].at["adult9/srs/5%", q], 2) for q in ("tau1", "tau2")] == [0.62, 0.58]
assert round(z2["z_mean"].at["scotland13/srs/10%", "tau2"], 2) == -0.69

# %% [markdown]
# ## Where the intervals miss: off centre or too narrow
#
# Coverage alone does not say why an interval misses. `interval_errors` divides each
# replicate's error by the posterior standard deviation its 90% interval implies
# (width / 3.29): calibrated intervals give standardised errors of mean 0 and
# standard deviation 1. Over the 150 SRS replicates the spread is right (sd 0.83-1.12)
# on every design but Adult 9 keys at 1% (too narrow) and 5% (too wide); the other
# misses are shifts: Adult 6 keys at 10% sits 1.5 (tau1) and 1.8 (tau2) posterior sd
# low, Adult 9 keys at 10% 1.0 high.

# %%
z = interval_errors(pd.concat([latent, seed1, seed2], ignore_index=True)
                    .query("method == 'latent-class'"))
zt = z.pivot(index="design", columns="quantity", values=["z_mean", "z_sd"])
print(zt.round(2).reindex(pd.unique(z.design)).to_string())
zm, zs = zt["z_mean"], zt["z_sd"]
assert (z.replicates == 150).all() and len(z) == 24
assert [round(zm.at["adult6/srs/10%", q], 2) for q in ("tau1", "tau2")] == [-1.52, -1.84]
assert [round(zm.at["adult9/srs/10%", q], 2) for q in ("tau1", "tau2")] == [1.04, 0.74]
assert [round(zs.at["adult9/srs/1%", q], 2) for q in ("tau1", "tau2")] == [1.41, 1.47]
assert [round(zs.at["adult9/srs/5%", q], 2) for q in ("tau1", "tau2")] == [0.62, 0.56]
rest = zt.drop(index=["adult6/srs/10%", "adult9/srs/1%", "adult9/srs/5%", "adult9/srs/10%"])
assert rest["z_mean"].abs().max().max() < 0.7
assert round(rest["z_sd"].min().min(), 2) == 0.83 and round(rest["z_sd"].max().max(), 2) == 1.12

# %% [markdown]
# ## What the model's own misses came from: the cross-validated overdispersion
#
# The diagnosis that led to the parts' dispersion, on the previous default's
# replicates. Each stored replicate notes the median of its kappa posterior. On the sparse key
# sets (Adult 9 keys, Scotland 13 keys) a replicate's tau1 error follows its kappa:
# samples whose cross-validation reads less clumping (larger kappa) overstate tau1.
# Between replicates kappa varies more than its posterior within one replicate says
# (Adult 9 keys at 1%: medians from 0.3 to 63 between the 10th and 90th
# percentiles), hence the narrow intervals there; on
# the dense sets (Adult 6 keys, Scotland 7 keys) kappa sits near Poisson and the
# error does not follow it.

# %%
lc1 = previous[(previous.method == "latent-class") & (previous.quantity == "tau1")].copy()
lc1["kappa"] = lc1.note.str.extract(r"kappa median ([0-9.e+]+)", expand=False).astype(float)
lc1["rel_err"] = (lc1.estimate - lc1.truth) / lc1.truth
kappa_err = pd.DataFrame(
    {design: {"kappa_q10": g.kappa.quantile(0.1), "kappa_median": g.kappa.median(),
              "kappa_q90": g.kappa.quantile(0.9),
              "corr_logkappa_err": np.corrcoef(np.log(g.kappa), g.rel_err)[0, 1]}
     for design, g in lc1.groupby("design", sort=False)}).T
print(kappa_err.round(2).to_string())
sparse = kappa_err.index.str.startswith(("adult9", "scotland13"))
assert (kappa_err.corr_logkappa_err[sparse] > 0.5).all()
assert (kappa_err.corr_logkappa_err[~sparse].abs() < 0.4).all()

# %% [markdown]
# ## Stratified samples with unequal weights (50 replicates per design)
#
# The real designs drawn as stratified samples with n_h proportional to sqrt(N_h)
# (strata: income for Adult, residence type -- household or communal
# establishment -- for Scotland; the small stratum over-sampled, weights N_h/n_h
# differing by a factor of about 1.8 on Adult and 7 on Scotland). The latent-class
# model takes the records' weight class as a design variable of the mixture and
# extrapolates the population class by class (`models/latent_class.py`, "Unequal
# weights"); the baselines use the weights as sdcMicro does (F-hat = sum of weights).
#
# ```
# python benchmarks/latent_class_accuracy.py --kind stratified --populations scotland13,scotland7 --replicates 50 --csv a.csv
# python benchmarks/latent_class_accuracy.py --kind stratified --populations adult9,adult6 --replicates 50 --csv b.csv
# (the previous default adds --cv-dispersion binomial --kappa-prior log-uniform)
# python benchmarks/accuracy.py --kind stratified --replicates 100 --csv closed_form_100_stratified.csv
# ```
#
# stored as `latent_class_50_stratified.csv.gz` (all 12 designs; the previous
# default in `latent_class_50_stratified_binomial_loguniform.csv.gz`) and
# `closed_form_100_stratified.csv.gz` (the closed forms over 100 replicates).

# %%
strat = pd.read_csv(RESULTS / "latent_class_50_stratified.csv.gz")
s_reps = strat[strat.method == "latent-class"].groupby("design").replicate.nunique()
assert s_reps.min() >= 50 and s_reps.size == 12, s_reps
s_table = summarise(strat)
s_show = s_table[s_table.quantity.isin(["tau1", "tau2", "expected_reidentifications"])]
print(s_show[["design", "method", "quantity", "replicates", "truth", "estimate", "rel_bias",
              "rel_rmse", "coverage", "width"]].round(3).to_string(index=False))


def pct(design, method, q):
    row = s_table[(s_table.design == design) & (s_table.method == method)
                  & (s_table.quantity == q)]
    return signed_pct(row.rel_bias.iloc[0])


def strat_row(design):
    pop, _, frac = design.split("/")
    cells = [" · ".join(pct(design, m, q) for q in ("tau1", "tau2")) for m in METHODS]
    lc_rows = s_table[(s_table.design == design) & (s_table.method == "latent-class")]
    cover = " · ".join(f"{lc_rows[lc_rows.quantity == q].coverage.iloc[0]:.2f}"
                       for q in ("tau1", "tau2"))
    return f"| {LABELS[pop]} {frac} | " + " | ".join(cells) + f" | {cover} |"


order = {p: i for i, p in enumerate(LABELS)}
designs = sorted(s_reps.index, key=lambda d: (order[d.split("/")[0]], float(d.split("/")[2][:-1])))
s_rows = [strat_row(d) for d in designs]
print("\n".join(s_rows))
for line in s_rows:
    assert line in readme, f"README stratified table differs from the stored results:\n{line}"
s_goal = goal_table(s_table, "latent-class")
print(s_goal.round(3).to_string(index=False))
s_met, s_bias, s_rmse, s_cover = goal_counts(s_goal)
print(f"\nstratified: goal met on {s_met} of {len(s_goal)} designs; bias met on "
      f"{s_bias}, RMSE below every baseline on {s_rmse}, coverage met on {s_cover}")
# what the README states about the stratified designs
assert len(s_goal) == 12 and s_bias == 12 and s_rmse == 12 and s_met == 6 and s_cover == 6
assert set(s_goal.design[s_goal.met]) == {
    "adult6/stratified/1%", "adult6/stratified/5%", "scotland7/stratified/1%",
    "scotland7/stratified/5%", "scotland7/stratified/10%", "scotland13/stratified/1%"}
print("stratified, coverage consistent with 90% (p >= 0.05, tau1 and tau2):",
      ", ".join(consistent_designs(s_goal)))
assert set(consistent_designs(s_goal)) == set(s_goal.design[s_goal.met]) | {
    "scotland13/stratified/5%", "scotland13/stratified/10%"}

# the previous default (Bernoulli variance of the held-out count, log-uniform prior)
# on the same stratified samples
s_prev = pd.read_csv(RESULTS / "latent_class_50_stratified_binomial_loguniform.csv.gz")
_, s_means = compare_runs(s_prev, strat, ("previous", "default"))
s_prev_goal = goal_table(summarise(s_prev), "latent-class")
print(f"stratified goal met on {int(s_prev_goal.met.sum())} (previous) vs {s_met} (default)")
assert int(s_prev_goal.met.sum()) == 3
for q in ("tau1", "tau2"):
    assert s_means[q]["rmse", "default"] < s_means[q]["rmse", "previous"]
    assert s_means[q]["bias", "default"] < s_means[q]["bias", "previous"]

# %% [markdown]
# ### 100 stratified replicates
#
# 50 further stratified samples per design (design seed 1), the same default model:
#
# ```
# python benchmarks/latent_class_accuracy.py --kind stratified --replicates 50 --seed 1 --populations adult9,adult6 --csv a.csv
# python benchmarks/latent_class_accuracy.py --kind stratified --replicates 50 --seed 1 --populations scotland13,scotland7 --csv b.csv
# ```
#
# stored as `latent_class_50_stratified_seed1.csv.gz` and pooled with seed 0's 50.

# %%
s_seed1 = pd.read_csv(RESULTS / "latent_class_50_stratified_seed1.csv.gz")
(s_hundred, sh_goal, (sh_met, sh_bias, sh_rmse, sh_cover), sh_consistent, sh_owned,
 sh_mean) = pooled_goal([strat, s_seed1], "stratified")
# what the README states: the goal met on all Scotland designs and Adult 6 keys at 1% and
# 5%, coverage consistent with 90% exactly there; the misses are the SRS ones (p < 0.01)
assert sh_bias == 12 and sh_rmse == 12 and sh_met == 8 and sh_cover == 8
assert set(sh_goal.design[sh_goal.met]) == set(sh_consistent) == {
    f"{p}/stratified/{f}" for p in ("scotland7", "scotland13") for f in ("1%", "5%", "10%")
} | {"adult6/stratified/1%", "adult6/stratified/5%"}
assert sh_owned == {"adult6/stratified/10%", "adult9/stratified/1%", "adult9/stratified/5%",
                     "adult9/stratified/10%"}
assert round(sh_mean["tau1"][0], 3) == 0.016 and round(sh_mean["tau1"][1], 3) == 0.071

# %% [markdown]
# ### 150 stratified replicates
#
# 50 more stratified samples per design (design seed 2; `--kind stratified --seed 2`,
# the same two commands as above, about 50 min on both cores), stored as
# `latent_class_50_stratified_seed2.csv.gz` and pooled with seeds 0 and 1; and where the
# intervals miss (`interval_errors`).

# %%
s_seed2 = pd.read_csv(RESULTS / "latent_class_50_stratified_seed2.csv.gz")
(s150, s150_goal, (s150_met, s150_bias, s150_rmse, s150_cover), s150_consistent, s150_owned,
 s150_mean) = pooled_goal([strat, s_seed1, s_seed2], "stratified")
# what the README states: met on 7 (Scotland 13 keys at 10% drops out: tau2 0.82), the
# same 7 consistent with 90%; the SRS misses, and Scotland 13 keys at 10%, are owned
assert s150_bias == 12 and s150_rmse == 12 and s150_met == 7 and s150_cover == 7
met_150 = set(sh_consistent) - {"scotland13/stratified/10%"}  # the 100-replicate 8, less one
assert len(met_150) == 7 and set(s150_goal.design[s150_goal.met]) == set(s150_consistent) == met_150
assert s150_owned == sh_owned | {"scotland13/stratified/10%"}
s150g = s150_goal.set_index("design")
assert round(s150g.at["scotland13/stratified/10%", "tau2_coverage"], 2) == 0.82
assert {q: tuple(round(v, 3) for v in x[:2]) for q, x in s150_mean.items()} == {
    "tau1": (0.016, 0.071), "tau2": (0.011, 0.038)}
assert round(s150_mean["tau1"][2], 3) == 0.054 > s150_mean["tau2"][2]  # tau1, Adult 9 keys, 1%
sz_ = interval_errors(pd.concat([strat, s_seed1, s_seed2], ignore_index=True)
                      .query("method == 'latent-class'"))
szt = sz_.pivot(index="design", columns="quantity", values=["z_mean", "z_sd"])
print(szt.round(2).reindex(pd.unique(sz_.design)).to_string())
# the same pattern as the SRS designs: shifts at 10%, Adult 9 keys too narrow at 1%
# and too wide at 5%
assert [round(szt["z_mean"].at["adult6/stratified/10%", q], 2) for q in ("tau1", "tau2")] == [
    -1.14, -1.4]
assert [round(szt["z_mean"].at["adult9/stratified/10%", q], 2) for q in ("tau1", "tau2")] == [
    1.1, 0.84]
assert [round(szt["z_sd"].at["adult9/stratified/1%", q], 2) for q in ("tau1", "tau2")] == [
    1.44, 1.5]
assert [round(szt["z_sd"].at["adult9/stratified/5%", q], 2) for q in ("tau1", "tau2")] == [
    0.68, 0.66]
assert round(szt["z_mean"].at["scotland13/stratified/10%", "tau2"], 2) == -0.72

# %% [markdown]
# ### 200 stratified replicates
#
# 50 more stratified samples per design (design seed 3), the same default model and
# the three baselines on the same samples:
#
# ```
# python benchmarks/latent_class_accuracy.py --kind stratified --replicates 50 --seed 3 --baselines "" --csv lc.csv
# python benchmarks/accuracy.py --kind stratified --replicates 50 --seed 3 --methods benedetti-franconi,poisson-gamma,loglinear-main --csv base.csv
# ```
#
# (about 70 min on one core, the baselines 2 min beside it), the two CSVs concatenated
# and stored as `latent_class_50_stratified_seed3.csv.gz`, pooled with seeds 0, 1 and 2.

# %%
s_seed3 = pd.read_csv(RESULTS / "latent_class_50_stratified_seed3.csv.gz")
# the baselines ran in another process: the same samples (sizes and truths agree)
_k = ["design", "replicate", "quantity"]
_same = (s_seed3[s_seed3.method == "latent-class"][_k + ["n", "truth"]]
         .merge(s_seed3[s_seed3.method == "poisson-gamma"][_k + ["n", "truth"]], on=_k))
assert len(_same) == (s_seed3.method == "latent-class").sum() and (_same.n_x == _same.n_y).all()
assert np.allclose(_same.truth_x, _same.truth_y, equal_nan=True)
(s200, s200_goal, (s200_met, s200_bias, s200_rmse, s200_cover), s200_consistent, s200_owned,
 s200_mean) = pooled_goal([strat, s_seed1, s_seed2, s_seed3], "stratified")
s200g = s200_goal.set_index("design")
# what the README states about 200 stratified replicates: the same 7 designs meet the
# goal (Adult 6 keys at 5% stays in range, 0.94 and 0.90, though tau1's 0.945 is no
# longer consistent with 90% at the 5% level); the same five misses are the model's
assert s200_bias == 12 and s200_rmse == 12 and s200_met == 7 and s200_cover == 7
assert set(s200_goal.design[s200_goal.met]) == met_150
assert set(s200_consistent) == met_150 - {"adult6/stratified/5%"}
assert cov_pair(s200g, "adult6/stratified/5%") == (0.94, 0.9)
assert s200_owned == s150_owned
assert [cov_pair(s200g, d) for d in sorted(s200_owned)] == [  # Adult 6 10%, Adult 9 1/10/5%,
    (0.68, 0.56), (0.72, 0.78), (0.74, 0.82), (0.98, 0.98), (0.88, 0.82)]  # Scotland 13 10%
assert {q: tuple(round(v, 3) for v in x[:2]) for q, x in s200_mean.items()} == {
    "tau1": (0.016, 0.07), "tau2": (0.01, 0.037)}
assert round(s200_mean["tau1"][2], 3) == 0.054  # tau1, Adult 9 keys at 1%
sz200 = interval_errors(pd.concat([strat, s_seed1, s_seed2, s_seed3], ignore_index=True)
                        .query("method == 'latent-class'"))
assert (sz200.replicates == 200).all()
sz2 = sz200.pivot(index="design", columns="quantity", values=["z_mean", "z_sd"])
# the SRS pattern again: off centre at 10% (Adult 6 keys low, Adult 9 keys high), Adult 9
# keys too narrow at 1% and too wide at 5%, Scotland 13 keys at 10% tau2 0.7 sd low
assert [round(sz2["z_mean"].at["adult6/stratified/10%", q], 2) for q in ("tau1", "tau2")] == [
    -1.19, -1.43]
assert [round(sz2["z_mean"].at["adult9/stratified/10%", q], 2) for q in ("tau1", "tau2")] == [
    1.07, 0.8]
assert [round(sz2["z_sd"].at["adult9/stratified/1%", q], 2) for q in ("tau1", "tau2")] == [
    1.39, 1.43]
assert [round(sz2["z_sd"].at["adult9/stratified/5%", q], 2) for q in ("tau1", "tau2")] == [
    0.66, 0.63]
assert round(sz2["z_mean"].at["scotland13/stratified/10%", "tau2"], 2) == -0.73

# %% [markdown]
# ### The closed forms over 100 stratified replicates
#
# Relative bias of tau1 and tau2 of the baselines (sdcMicro's F-hat = sum of the
# weights), 100 replicates per design; the ranges the README quotes.

# %%
s_closed = pd.read_csv(RESULTS / "closed_form_100_stratified.csv.gz")
sc_reps = s_closed.groupby(["design", "method"]).replicate.nunique()
assert sc_reps.min() >= 100 and s_closed.design.nunique() == 12, sc_reps.min()
sc_table = summarise(s_closed)
for q in ("tau1", "tau2"):
    print(q, "relative bias\n",
          sc_table[sc_table.quantity == q].pivot(index="design", columns="method",
                                                 values="rel_bias").round(2).to_string(), sep="")
sc1 = sc_table[sc_table.quantity == "tau1"].set_index(["method", "design"]).rel_bias
for method, (lo, hi) in {"benedetti-franconi": (-0.98, -0.19), "poisson-gamma": (-0.92, -0.50),
                         "loglinear-main": (0.12, 1.38)}.items():
    got = sc1[method]
    assert round(got.min(), 2) == lo and round(got.max(), 2) == hi, (method, got.min(), got.max())

# %% [markdown]
# ## Measured, not the default: the profile prior's mass learnt on keys of many levels
#
# The class profiles' Dirichlet prior puts 1/L_j on every level of key j. On keys with
# many levels (Adult's age, 74 single years, and native country, 42) that lets a class
# of a few dozen records reproduce its members' rare levels. The option
# `priors={"phi": {"a": "marginal", "mass": "learn", "min_levels": 20}}` centres the
# profiles of the keys with at least 20 levels on the key's sample marginal and learns
# their mass M_j from the data (uniform in log M; the Gibbs sampler draws it from the
# Dirichlet-multinomial of the class counts; the cross-validation's parts take the
# whole sample's masses); keys with fewer levels keep 1/L_j. No Scotland key has 20
# levels, so its results are the default's bit for bit; the Adult designs were re-run
# on the same samples (latent-class rows only; the baselines are the stored ones):
#
# ```
# python benchmarks/latent_class_accuracy.py --phi-a marginal:learn:20 --replicates 50 --seed S --baselines "" --populations adult6 --csv a.csv
# python benchmarks/latent_class_accuracy.py --phi-a marginal:learn:20 --replicates 50 --seed S --baselines "" --populations adult9 --csv b.csv
# ```
#
# for S = 0, 1, 2 (about 1 h 45 min on both cores), stored as
# `latent_class_50_learnt_mass_adult{,_seed1,_seed2}.csv.gz`.

# %%
ADULT = ("adult6", "adult9")


def with_learnt_mass(default_run, learnt):
    """The default's run with its Adult latent-class rows replaced by the learnt-mass
    model's, checked to be the same samples (same truth per design and replicate)."""
    lc_adult = (default_run.method == "latent-class") & default_run.population.isin(ADULT)
    assert set(learnt.population) == set(ADULT) and set(learnt.method) == {"latent-class"}
    pair = default_run[lc_adult].merge(learnt, on=["design", "replicate", "quantity"])
    assert len(pair) == lc_adult.sum() == len(learnt)
    assert np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
    return pd.concat([default_run[~lc_adult], learnt], ignore_index=True)


def learnt_mass_study(default_runs, stem, label):
    """Seeds 0, 1, 2 of the learnt-mass runs stored as ``{stem}{,_seed1,_seed2}``,
    each in place of its default run's Adult latent-class rows: ``pooled_goal`` of
    the 150 replicates, and the Adult designs' standardised errors (z_mean, z_sd)."""
    runs = [with_learnt_mass(run, pd.read_csv(RESULTS / f"{stem}{sfx}.csv.gz"))
            for run, sfx in zip(default_runs, ("", "_seed1", "_seed2"), strict=True)]
    pooled = pooled_goal(runs, f"{label}, learnt mass on keys of >= 20 levels")
    z = interval_errors(pd.concat(runs, ignore_index=True)
                        .query("method == 'latent-class' and population in @ADULT"))
    zt = z.pivot(index="design", columns="quantity", values=["z_mean", "z_sd"])
    print(zt.round(2).reindex(pd.unique(z.design)).to_string())
    return pooled, zt


((l_table, l_goal, (l_met, l_bias, l_rmse, l_cover), l_consistent, l_owned, l_mean),
 lzt) = learnt_mass_study((latent, seed1, seed2), "latent_class_50_learnt_mass_adult", "SRS")
lg = l_goal.set_index("design")


# what the README states: the same count (6 of 12); Adult 9 keys at 10% joins (0.74 ·
# 0.82 -> 0.87 · 0.93), Adult 6 keys at 1% leaves on tau2 0.95 (0.94 with the default);
# both 10% shifts halve; the intervals' spread on Adult 9 keys at 1% and 5% is unchanged
assert l_bias == 12 and l_rmse == 12 and l_met == 6 and l_cover == 6
assert set(l_goal.design[l_goal.met]) == set(t_goal.design[t_goal.met]) - {
    "adult6/srs/1%"} | {"adult9/srs/10%"}
assert l_owned == {"adult6/srs/10%", "adult9/srs/1%", "adult9/srs/5%"}
assert [cov_pair(lg, d) for d in ("adult6/srs/10%", "adult9/srs/10%", "adult6/srs/1%",
                                  "adult9/srs/5%", "adult9/srs/1%")] == [
    (0.85, 0.71), (0.87, 0.93), (0.92, 0.95), (0.95, 0.97), (0.77, 0.79)]
assert [cov_pair(tg, d) for d in ("adult6/srs/10%", "adult9/srs/10%")] == [(0.55, 0.43),
                                                                            (0.74, 0.82)]
assert [round(lg.at["adult6/srs/10%", f"{q}_bias"], 3) for q in ("tau1", "tau2")] == [
    -0.015, -0.009]
assert [round(tg.at["adult6/srs/10%", f"{q}_bias"], 3) for q in ("tau1", "tau2")] == [
    -0.031, -0.019]
lzm, lzs = lzt["z_mean"], lzt["z_sd"]
assert [round(lzm.at["adult6/srs/10%", q], 2) for q in ("tau1", "tau2")] == [-0.71, -0.91]
assert [round(lzm.at["adult9/srs/10%", q], 2) for q in ("tau1", "tau2")] == [0.58, 0.3]
assert [round(lzs.at["adult9/srs/1%", q], 2) for q in ("tau1", "tau2")] == [1.42, 1.53]
assert [round(lzs.at["adult9/srs/5%", q], 2) for q in ("tau1", "tau2")] == [0.73, 0.66]
assert [round(l_mean[q][0], 4) for q in ("tau1", "tau2")] == [0.0175, 0.0056]
assert [round(l_mean[q][1], 4) for q in ("tau1", "tau2")] == [0.0731, 0.0372]
assert round(l_mean["tau1"][2], 3) == 0.05  # tau1, Adult 9 keys at 1% (+4.2% by default)

# %% [markdown]
# ### The learnt mass on the stratified designs
#
# The same option on the stratified samples (Adult only; Scotland is unchanged by
# construction), the same samples as the default's:
#
# ```
# python benchmarks/latent_class_accuracy.py --kind stratified --phi-a marginal:learn:20 --replicates 50 --seed S --baselines "" --populations adult6 --csv a.csv
# python benchmarks/latent_class_accuracy.py --kind stratified --phi-a marginal:learn:20 --replicates 50 --seed S --baselines "" --populations adult9 --csv b.csv
# ```
#
# for S = 0, 1, 2 (about 2 h 45 min on both cores), stored as
# `latent_class_50_stratified_learnt_mass_adult{,_seed1,_seed2}.csv.gz`.

# %%
((sl_table, sl_goal, (sl_met, sl_bias, sl_rmse, sl_cover), sl_consistent, sl_owned, sl_mean),
 slzt) = learnt_mass_study((strat, s_seed1, s_seed2),
                           "latent_class_50_stratified_learnt_mass_adult", "stratified")
slg = sl_goal.set_index("design")
for d in slg.index[slg.index.str.startswith("adult")]:
    print(d, "default", cov_pair(s150g, d), "learnt", cov_pair(slg, d))
# what the README states: met on 8 of 12 against the default's 7 -- Adult 9 keys at 10%
# joins (0.71 · 0.81 -> 0.85 · 0.89); Adult 6 keys at 10% comes from 0.71 · 0.57 to
# 0.91 · 0.82 (tau2 still owned, p = 0.002); Adult 9 keys at 1% stays too narrow and its
# tau1 bias grows (+5.4% -> +6.8%), at 5% too wide; the means hardly move
assert sl_bias == 12 and sl_rmse == 12 and sl_met == 8 and sl_cover == 8
assert set(sl_goal.design[sl_goal.met]) == set(sl_consistent) == met_150 | {
    "adult9/stratified/10%"}
assert sl_owned == s150_owned - {"adult9/stratified/10%"}
assert [cov_pair(slg, d) for d in ("adult9/stratified/10%", "adult6/stratified/10%",
                                   "adult9/stratified/1%", "adult9/stratified/5%")] == [
    (0.85, 0.89), (0.91, 0.82), (0.73, 0.74), (0.99, 0.99)]
assert [cov_pair(s150g, d) for d in ("adult9/stratified/10%", "adult6/stratified/10%")] == [
    (0.71, 0.81), (0.71, 0.57)]
assert [round(slg.at["adult9/stratified/1%", "tau1_bias"], 3),
        round(s150g.at["adult9/stratified/1%", "tau1_bias"], 3)] == [0.068, 0.054]
assert [round(slg.at["adult6/stratified/10%", f"{q}_bias"], 3) for q in ("tau1", "tau2")] == [
    -0.011, -0.007]
assert [round(slzt["z_sd"].at["adult9/stratified/1%", q], 2) for q in ("tau1", "tau2")] == [
    1.51, 1.64]
assert {q: tuple(round(v, 3) for v in x[:2]) for q, x in sl_mean.items()} == {
    "tau1": (0.016, 0.07), "tau2": (0.011, 0.038)}

# %% [markdown]
# ## The default since the synthetic census: the learnt profile mass
#
# The synthetic census of the foundation issue (`sdcbayes.datasets.simulate_population`,
# 40,000 households, 91,923 persons; the demo's six keys: 10-year age group, sex,
# marital status, education, country of birth, household size) had not been through
# the harness. Its country of birth has 150 levels with a Zipf tail (p_j ∝ j^-1.2 among
# the foreign-born), and under the 1/L_j profile prior a small class claims its
# members' rare countries: the mixture understates tau1 by 12-40%. With the mass of
# the keys of at least 20 levels learnt (here only the country) it comes within 4% at
# 5% and 10%; the 1% design (910 persons) stays far off. Commands (about 25 min on
# both cores):
#
# ```
# python benchmarks/accuracy.py --populations synthetic --replicates 100 --csv closed_form_100_synthetic.csv
# python benchmarks/accuracy.py --populations synthetic --kind stratified --replicates 100 --csv closed_form_100_stratified_synthetic.csv
# python benchmarks/latent_class_accuracy.py --populations synthetic --replicates 50 --phi-a inverse --csv latent_class_50_synthetic_inverse.csv
# python benchmarks/latent_class_accuracy.py --populations synthetic --replicates 50 --baselines "" --csv latent_class_50_synthetic.csv
# (and the last two with --kind stratified: latent_class_50_stratified_synthetic{_inverse,}.csv)
# ```
#
# No structural zeros are passed on the synthetic census (its rules, no married or
# educated under-tens, were not confirmed for this run).

# %%
SYN = {"srs": ("closed_form_100_synthetic.csv.gz", "latent_class_50_synthetic_inverse.csv.gz",
               "latent_class_50_synthetic.csv.gz"),
       "stratified": ("closed_form_100_stratified_synthetic.csv.gz",
                      "latent_class_50_stratified_synthetic_inverse.csv.gz",
                      "latent_class_50_stratified_synthetic.csv.gz")}
syn_tables, syn_goals = {}, {}
for kind, (cf_file, inv_file, lc_file) in SYN.items():
    cf, inv, lcd = (pd.read_csv(RESULTS / f) for f in (cf_file, inv_file, lc_file))
    assert cf.groupby(["design", "method"]).replicate.nunique().min() >= 100
    # the same 50 samples for both priors (and the baselines scored on them)
    pair = (inv[inv.method == "latent-class"].merge(lcd, on=["design", "replicate", "quantity"]))
    assert len(pair) == len(lcd) and np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
    assert set(lcd.method) == {"latent-class"} and (pair.n_x == pair.n_y).all()
    runs = pd.concat([inv.replace({"method": {"latent-class": "latent-class-inverse"}}), lcd],
                     ignore_index=True)
    # baselines over their own 100 replicates; the models over the 50 (the goal's RMSE
    # comparison scores the baselines on the models' samples)
    syn_tables[kind] = pd.concat([summarise(cf), summarise(runs[runs.method.str.startswith(
        "latent-class")])], ignore_index=True)
    syn_goals[kind] = goal_table(summarise(runs), "latent-class")
    print(kind, "\n", syn_goals[kind].round(3).to_string(index=False), sep="")

SYN_METHODS = {"benedetti-franconi": "Benedetti-Franconi",
               "poisson-gamma": "Poisson-gamma plug-in",
               "loglinear-main": "log-linear main effects",
               "loglinear-2way": "log-linear two-way",
               "latent-class-inverse": "latent class, 1/L_j",
               "latent-class": "latent class (default)"}


def syn_cover(table, method, kind):
    out = []
    for frac in ("1%", "5%", "10%"):
        t = table[(table.design == f"synthetic/{kind}/{frac}") & (table.method == method)]
        out.append("·".join(f"{t[t.quantity == q].coverage.iloc[0]:.2f}" for q in ("tau1", "tau2")))
    return " / ".join(out)


syn_rows = []
for m, label in SYN_METHODS.items():
    cells = [bias_cell(m, "synthetic", table=syn_tables[k], kind=k) for k in ("srs", "stratified")]
    cover = (" | " + " | ".join(syn_cover(syn_tables[k], m, k) for k in ("srs", "stratified"))
             if m.startswith("latent") else " | – | –")
    syn_rows.append(f"| {label} | " + " | ".join(cells) + cover + " |")
print("\n".join(syn_rows))
for line in syn_rows:
    assert line in readme, f"README synthetic-census table differs from the stored results:\n{line}"
sg = {k: g.set_index("design") for k, g in syn_goals.items()}
# what the README states: the 1/L_j prior understates tau1 at every design (12-40%); the
# learnt mass comes within 4% at 5% and 10% and meets the goal at 10% (SRS); at 1% both
# are a third low and the main-effects log-linear plug-in has the lower RMSE
syn_b = {k: t[t.quantity == "tau1"].set_index(["method", "design"]).rel_bias
         for k, t in syn_tables.items()}
assert [round(syn_b["srs"]["latent-class-inverse", f"synthetic/srs/{f}"], 3)
        for f in ("1%", "5%", "10%")] == [-0.397, -0.184, -0.119]
assert [round(syn_b["srs"]["latent-class", f"synthetic/srs/{f}"], 3)
        for f in ("1%", "5%", "10%")] == [-0.334, -0.04, -0.007]
assert [round(syn_b["stratified"]["latent-class", f"synthetic/stratified/{f}"], 3)
        for f in ("1%", "5%", "10%")] == [-0.308, 0.01, 0.039]
assert list(sg["srs"].index[sg["srs"].met]) == ["synthetic/srs/10%"]
assert not sg["stratified"].met.any()
for k in ("srs", "stratified"):
    g = sg[k]
    assert not g.tau1_rmse_ok.iloc[0] and g.tau1_rmse_ok.iloc[1:].all()  # 1%: log-linear
assert [cov_pair(sg["srs"], f"synthetic/srs/{f}") for f in ("5%", "10%")] == [
    (0.84, 0.74), (0.92, 0.88)]
assert [cov_pair(sg["stratified"], f"synthetic/stratified/{f}") for f in ("5%", "10%")] == [
    (0.98, 0.94), (0.62, 0.6)]
_syn1 = pd.read_csv(RESULTS / SYN["srs"][2]).query("design == 'synthetic/srs/1%' and "
                                                  "quantity == 'tau1'")
assert round(_syn1.note.str.extract(r"kappa median ([\d.e+]+)")[0].astype(float).median(), 1) == 0.5

# %% [markdown]
# ### Household samples of the synthetic census
#
# The demo is a household sample; the harness now draws those too (`--kind household`: a
# simple random sample of households, every member taken, weights H/m; the latent-class
# cross-validation then cuts parts of whole households):
#
# ```
# python benchmarks/accuracy.py --populations synthetic --kind household --replicates 100 --csv closed_form_100_household_synthetic.csv
# python benchmarks/latent_class_accuracy.py --populations synthetic --kind household --replicates 50 --csv latent_class_50_household_synthetic.csv
# ```
#
# (about 10 min on both cores).

# %%
hh_cf = pd.read_csv(RESULTS / "closed_form_100_household_synthetic.csv.gz")
hh_lc = pd.read_csv(RESULTS / "latent_class_50_household_synthetic.csv.gz")
assert hh_cf.groupby(["design", "method"]).replicate.nunique().min() >= 100
assert (hh_lc[hh_lc.method == "latent-class"].groupby("design").replicate.nunique() == 50).all()
assert hh_lc[hh_lc.method == "latent-class"].note.str.contains("cv by household").all()
hh_table = pd.concat([summarise(hh_cf), summarise(hh_lc[hh_lc.method == "latent-class"])],
                     ignore_index=True)
hh_b = hh_table[hh_table.quantity == "tau1"].pivot(index="method", columns="design",
                                                    values="rel_bias")
print(hh_b.round(3).to_string())
hh_goal = goal_table(summarise(hh_lc), "latent-class").set_index("design")
print(hh_goal.round(3).to_string())
HH = [f"synthetic/household/{f}" for f in ("1%", "5%", "10%")]
# what the README states: on household samples the latent class understates tau1 by 41%,
# 14% and 8% (against 33%, 4% and 1% on samples of persons), intervals that miss; the
# main-effects log-linear plug-in has the lower RMSE at 1% and 5%
assert [round(hh_goal.at[d, "tau1_bias"], 3) for d in HH] == [-0.411, -0.14, -0.084]
assert [round(hh_goal.at[d, "tau2_bias"], 3) for d in HH] == [-0.254, -0.075, -0.044]
assert (hh_goal.tau1_coverage < 0.1).all() and not hh_goal.met.any()
assert list(hh_goal.tau1_rmse_ok) == [False, False, True]
assert [round(hh_b.at["loglinear-main", d], 3) for d in HH] == [-0.005, 0.14, 0.134]

# %% [markdown]
# ### The default over 200 replicates per design
#
# The learnt-mass runs of design seeds 0-2 above and one more seed on Adult (Scotland's
# keys have at most 14 levels, so its results are the 1/L_j runs' bit for bit):
#
# ```
# python benchmarks/latent_class_accuracy.py --populations adult6,adult9 --replicates 50 --seed 3 --baselines "" --csv a.csv
# python benchmarks/latent_class_accuracy.py --kind stratified --populations adult6,adult9 --replicates 50 --seed 3 --baselines "" --csv b.csv
# ```
#
# (about 50 min on both cores) stored as
# `latent_class_50{,_stratified}_learnt_mass_adult_seed3.csv.gz`. Their Adult rows at 1%
# predate commit 2b836c6 (the Gibbs sampler's exact draw of log(1 - V), which changes the
# draws on sparse designs); the same samples rerun with today's code,
#
# ```
# python benchmarks/latent_class_accuracy.py --populations adult6,adult9 --fractions 0.01 --replicates 50 --seed S --baselines "" [--kind stratified] --csv c.csv
# ```
#
# for S = 0-3 (4-9 min each on one core), are stored as
# `latent_class_50{,_stratified}_default_adult_1pct{,_seed1,_seed2,_seed3}.csv.gz` and
# take their place below.

# %%
def default_runs(inverse_runs, stem, rerun_stem=None):
    """The 1/L_j runs of seeds 0-3 with their Adult latent-class rows replaced by the
    learnt-mass runs ``{stem}{,_seed1,_seed2,_seed3}`` (the default model), and with
    ``rerun_stem`` their Adult 1% rows in turn by ``{rerun_stem}{...}``: the same samples
    rerun with today's code. The learnt-mass files were stored before commit 2b836c6 (the
    Gibbs sampler's exact draw of log(1 - V) where alpha + tail < 0.2), which changed the
    draws on the sparse 1% designs (rerun today, the 5% and 10% rows of replicate 0 are the
    stored ones to 1e-17):
    the studies below, each run beside the stored default, compare with the stored rows."""
    runs = []
    for run, sfx in zip(inverse_runs, ("", "_seed1", "_seed2", "_seed3"), strict=True):
        learnt = pd.read_csv(RESULTS / f"{stem}{sfx}.csv.gz")
        if rerun_stem is None:
            runs.append(with_learnt_mass(run, learnt))
            continue
        rerun = pd.read_csv(RESULTS / f"{rerun_stem}{sfx}.csv.gz")
        assert set(rerun.design) == {"adult6/" + rerun.kind.iloc[0] + "/1%",
                                     "adult9/" + rerun.kind.iloc[0] + "/1%"}
        old = learnt[learnt.design.isin(set(rerun.design))]
        same = old.merge(rerun, on=["design", "replicate", "quantity"])
        assert len(same) == len(old) == len(rerun)  # the same samples, the same truths
        assert np.allclose(same.truth_x, same.truth_y, equal_nan=True)
        learnt = pd.concat([learnt[~learnt.design.isin(set(rerun.design))], rerun],
                           ignore_index=True)
        runs.append(with_learnt_mass(run, learnt))
    return runs


_inverse = {"srs": (latent, seed1, seed2, seed3), "stratified": (strat, s_seed1, s_seed2, s_seed3)}
_stem = {"srs": "latent_class_50", "stratified": "latent_class_50_stratified"}
# the stored runs (the studies' baseline) and today's (the table: Adult 1% rerun)
d_runs = {k: default_runs(_inverse[k], f"{_stem[k]}_learnt_mass_adult") for k in _inverse}
d_today = {k: default_runs(_inverse[k], f"{_stem[k]}_learnt_mass_adult",
                           f"{_stem[k]}_default_adult_1pct") for k in _inverse}
d_pooled = {k: pooled_goal(r, f"{k}, the default") for k, r in d_today.items()}
d_goal = {k: p[1].set_index("design") for k, p in d_pooled.items()}
d_z = {k: interval_errors(pd.concat(r, ignore_index=True).query("method == 'latent-class'"))
       .pivot(index="design", columns="quantity", values=["z_mean", "z_sd"])
       for k, r in d_today.items()}
for k, z in d_z.items():
    print(k, "\n", z.round(2).to_string(), sep="")


def default_row(pop, frac):
    cells = []
    for kind in ("srs", "stratified"):
        g = d_goal[kind].loc[f"{pop}/{kind}/{frac}"]
        cells.append(" · ".join(signed_pct(g[f"{q}_bias"]) for q in ("tau1", "tau2")))
        # 3 decimals: a coverage of 200 replicates is a multiple of 0.005, exact there; 2
        # decimals rounded its halves both ways (0.955 showed as 0.95, inside the band)
        cells.append(" · ".join(f"{g[f'{q}_coverage']:.3f}" for q in ("tau1", "tau2")))
    return f"| {LABELS[pop]} {frac} | " + " | ".join(cells) + " |"


d_rows = [default_row(p, f) for p in LABELS for f in ("1%", "5%", "10%")]
print("\n".join(d_rows))
for line in d_rows:
    assert line in readme, f"README table of the default differs from the stored results:\n{line}"
# what the README states: 8 of 12 designs meet the goal for both kinds (7 and 7 with the
# 1/L_j prior), exactly those consistent with 90%; bias and RMSE parts everywhere; the owned
# misses: Adult 9 keys at 1% (too narrow) and 5% (too wide), tau2 on Adult 6 keys and
# Scotland 13 keys at 10%
for kind, (_, goal, (met, bias, rmse, cover), consistent, owned, _) in d_pooled.items():
    assert (met, bias, rmse, cover) == (8, 12, 12, 8), kind
    assert set(goal.design[goal.met]) == set(consistent), kind
    assert owned == {f"adult9/{kind}/1%", f"adult9/{kind}/5%", f"adult6/{kind}/10%",
                     f"scotland13/{kind}/10%"}, (kind, owned)
assert {k: [round(p[5][q][0], 4) for q in ("tau1", "tau2")] for k, p in d_pooled.items()} == {
    "srs": [0.0165, 0.0057], "stratified": [0.0161, 0.011]}
assert {k: round(p[5]["tau1"][1], 3) for k, p in d_pooled.items()} == {
    "srs": 0.073, "stratified": 0.07}
# the largest |bias| of tau1 and tau2 (README, "In brief": within 5% and 7%)
assert max(d_pooled["srs"][5][q][2] for q in ("tau1", "tau2")) < 0.05
assert max(d_pooled["stratified"][5][q][2] for q in ("tau1", "tau2")) < 0.071
assert [tuple(d_goal[k].loc[f"adult9/{k}/5%", ["tau1_coverage", "tau2_coverage"]])
        for k in d_goal] == [(0.955, 0.965), (0.99, 0.995)]
assert [round(d_goal[k].at[f"adult9/{k}/1%", "tau1_bias"], 3) for k in d_goal] == [0.044, 0.071]
# Holm's correction over each kind's 24 tests: every owned miss stays below 0.05 but tau2 on
# Adult 6 keys at 10% in the stratified samples (adjusted 0.08, unadjusted 0.004)
_holm = {k: {d for d in g.index if min(g.at[d, "tau1_cover_p_holm"],
                                        g.at[d, "tau2_cover_p_holm"]) < 0.05}
         for k, g in d_goal.items()}
assert _holm == {k: {f"adult9/{k}/1%", f"adult9/{k}/5%", f"scotland13/{k}/10%"}
                 | ({f"adult6/{k}/10%"} if k == "srs" else set()) for k in d_goal}, _holm
assert round(d_goal["stratified"].at["adult6/stratified/10%", "tau2_cover_p_holm"], 2) == 0.08
assert round(d_goal["stratified"].at["adult6/stratified/10%", "tau2_cover_p"], 3) == 0.004
assert "0.835, adjusted p 0.08; unadjusted\n0.004" in readme
assert [d_goal[k].at[f"adult6/{k}/10%", "tau2_coverage"] for k in d_goal] == [0.74, 0.835]
assert [cov_pair(d_goal[k], f"scotland13/{k}/10%")[1] for k in d_goal] == [0.83, 0.82]
for k, z in d_z.items():
    assert 1.4 <= z["z_sd"].at[f"adult9/{k}/1%", "tau1"] and z["z_sd"].at[
        f"adult9/{k}/1%", "tau2"] < 1.6
    assert 0.55 < z["z_sd"].loc[f"adult9/{k}/5%"].min() and z["z_sd"].loc[
        f"adult9/{k}/5%"].max() < 0.75
    assert -0.9 < z["z_mean"].at[f"adult6/{k}/10%", "tau2"] < -0.7
    assert -0.75 < z["z_mean"].at[f"scotland13/{k}/10%", "tau2"] < -0.65

# %% [markdown]
# ### A sample's error follows its kappa read
#
# Each replicate's z (error over the posterior sd its 90% interval implies) against the
# median kappa its cross-validation read (stamped in the result's note), on the Adult 9
# keys designs of the 200-replicate runs above: the correlation with log kappa, and
# coverage and mean implied sd by third of the samples ordered by their read (the read is
# on a grid: ties broken in replicate order).

# %%
def by_kappa_read(runs, design):
    """Per replicate of ``design``: tau1's z, log kappa read, covered; and the summary."""
    r = pd.concat(runs, ignore_index=True).query(
        "method == 'latent-class' and quantity == 'tau1' and design == @design").copy()
    r["log_kappa"] = np.log(r.note.str.extract(r"kappa median ([0-9.e+]+)")[0].astype(float))
    r["sd"] = (r.hi - r.lo) / (2 * 1.6448536269514722)
    r["z"] = (r.estimate - r.truth) / r.sd
    r["covered"] = (r.lo <= r.truth) & (r.truth <= r.hi)
    third = pd.qcut(r.log_kappa.rank(method="first"), 3, labels=["low", "mid", "high"])
    thirds = r.groupby(third, observed=True).agg(
        kappa=("log_kappa", lambda x: float(np.exp(x.median()))), coverage=("covered", "mean"),
        sd=("sd", "mean"))
    return float(np.corrcoef(r.log_kappa, r.z)[0, 1]), thirds


kread = {(k, f): by_kappa_read(d_today[k], f"adult9/{k}/{f}")
         for k in d_today for f in ("1%", "5%", "10%")}
for key, (corr, thirds) in kread.items():
    print(key, f"corr {corr:.2f}", "\n", thirds.round(2).to_string(), sep="")
# what the README states: at 1% correlation 0.89 and 0.85; the third reading kappa highest
# (median 2.0 and 3.2) covers 0.46 and 0.33 with intervals 22% and 28% narrower than the
# lowest third's, which covers 0.91 and 0.99 (ties in the read broken in replicate order);
# at 5% and 10% the correlation is 0.66-0.72
assert [round(kread[(k, "1%")][0], 2) for k in d_runs] == [0.89, 0.85]
lo_hi = {k: kread[(k, "1%")][1].loc[["low", "high"]] for k in d_runs}
assert [round(t.at["high", "kappa"], 1) for t in lo_hi.values()] == [2.0, 3.2]
assert [round(t.at["high", "coverage"], 2) for t in lo_hi.values()] == [0.46, 0.33]
assert [round(t.at["low", "coverage"], 2) for t in lo_hi.values()] == [0.91, 0.99]
assert [round(1 - t.at["high", "sd"] / t.at["low", "sd"], 2) for t in lo_hi.values()] == [
    0.22, 0.28]
assert all(0.655 <= kread[(k, f)][0] < 0.725 for k in d_runs for f in ("5%", "10%"))

# %% [markdown]
# ### Weighting the cross-validation by population uniqueness: measured, not the default
#
# On the synthetic census at 1% the cross-validation's clumping comes from the
# part-uniques of native-born persons (common cells, which are never population-unique)
# while the foreign-born ones, which carry tau1, stay unique about as often as the parts
# predict. `overdispersion_cv(focus="population")` weighs each part-unique by its
# population uniqueness under the whole sample's fit, exp(-lambda_k), so that kappa is
# learnt where tau1 is decided. 20 samples per design (the default's first 20):
#
# ```
# python benchmarks/latent_class_accuracy.py --populations P --fractions F --replicates 20 --cv-focus population --baselines "" --csv focus_P_F.csv
# ```
#
# for seven designs, stored together as `latent_class_20_cv_focus_population.csv.gz`.

# %%
focus = pd.read_csv(RESULTS / "latent_class_20_cv_focus_population.csv.gz")
_default_files = {"adult6": "latent_class_50_learnt_mass_adult.csv.gz",
                  "adult9": "latent_class_50_learnt_mass_adult.csv.gz",
                  "scotland7": "latent_class_50.csv.gz", "scotland13": "latent_class_50.csv.gz",
                  "eusilc-multi": "latent_class_50_learnt_mass_eusilc_multi.csv.gz",
                  "synthetic": "latent_class_50_synthetic.csv.gz"}
# each population's default run (Adult and EU-SILC: the learnt-mass files), first 20 samples
_dflt = pd.concat([pd.read_csv(RESULTS / f).query("method == 'latent-class' and population == @p")
                   for p, f in _default_files.items()], ignore_index=True)
_dflt = _dflt[_dflt.design.isin(focus.design.unique()) & (_dflt.replicate < 20)]
assert (focus.groupby("design").replicate.nunique() == 20).all()
assert (_dflt.groupby("design").replicate.nunique() == 20).all()
_both = focus.merge(_dflt, on=["design", "replicate", "quantity"],
                    suffixes=("_focus", "_default"))
assert len(_both) == len(focus) and np.allclose(_both.truth_focus, _both.truth_default,
                                                equal_nan=True)
focus_cmp = pd.concat([summarise(focus).assign(run="focus"),
                       summarise(_dflt).assign(run="default")], ignore_index=True)
focus_cmp = focus_cmp[focus_cmp.quantity == "tau1"].pivot(
    index="design", columns="run", values=["rel_bias", "coverage"])
print(focus_cmp.round(3).to_string())
fb = focus_cmp["rel_bias"].round(3)
# what the README states: the synthetic census at 1% halves its understatement, the sparse
# real designs go up (Adult 9 keys at 1% and 10%, Scotland 13 keys at 1%), the rest stay
assert tuple(fb.loc["synthetic/srs/1%"][["default", "focus"]]) == (-0.342, -0.174)
assert tuple(fb.loc["adult9/srs/1%"][["default", "focus"]]) == (0.031, 0.094)
assert tuple(fb.loc["adult9/srs/10%"][["default", "focus"]]) == (0.012, 0.047)
assert tuple(fb.loc["scotland13/srs/1%"][["default", "focus"]]) == (0.072, 0.11)
for d in ("adult6/srs/10%", "scotland7/srs/1%", "eusilc-multi/srs/5%"):
    assert abs(fb.at[d, "focus"] - fb.at[d, "default"]) < 0.025, d
fc = focus_cmp["coverage"]
assert (fc.at["adult9/srs/1%", "default"], fc.at["adult9/srs/1%", "focus"]) == (0.85, 0.55)
assert (fc.at["adult9/srs/10%", "default"], fc.at["adult9/srs/10%", "focus"]) == (0.8, 0.05)

# %% [markdown]
# ## A held-out file: the synthetic EU-SILC
#
# Every choice above was made looking at the four key sets of Adult and Scotland.
# `sdcmicro/eusilc.csv` (laeken's synthetic EU-SILC: 14,827 persons in 6,000
# households) was kept out of all of them and run once, with the same defaults:
# keys region (9), household size (9), sex, age (99 values) and citizenship ('NA'
# for the 2,720 persons under 16, a structural zero with age >= 16; confirmed in
# `benchmarks/latent_class_accuracy.py`), simple random samples of persons at 1, 5
# and 10%. Its households are copies of templates: a household's region, size and
# members (sex, age, citizenship) recur up to 12 times, so 53% of the persons have
# an exact key twin by construction and cannot be population-unique. `eusilc-distinct`
# keeps each household composition once (3,627 households, 10,039 persons, 30%
# population-unique), a population without the copies -- but not without an artifact of
# its own: a one-person household's composition is its member's key, so all 670 of them
# are population-unique there by construction. `eusilc-multi` (measured after
# `eusilc-distinct`, below) keeps the persons of multi-person households only.
#
# ```
# python benchmarks/accuracy.py --populations eusilc --replicates 100 --csv a.csv
# python benchmarks/accuracy.py --populations eusilc-distinct --replicates 100 --csv b.csv
# python benchmarks/latent_class_accuracy.py --populations eusilc --replicates 50 --baselines "" --csv c.csv
# python benchmarks/latent_class_accuracy.py --populations eusilc-distinct --replicates 50 --baselines "" --csv d.csv
# (and the last two with --phi-a marginal:learn:20)
# ```
#
# stored as `closed_form_100_eusilc.csv.gz`, `latent_class_50_eusilc.csv.gz` and
# `latent_class_50_learnt_mass_eusilc.csv.gz` (about 50 min on one core in all).

# %%
eu_closed = pd.read_csv(RESULTS / "closed_form_100_eusilc.csv.gz")
eu_lc = pd.read_csv(RESULTS / "latent_class_50_eusilc.csv.gz")
eu_learnt = pd.read_csv(RESULTS / "latent_class_50_learnt_mass_eusilc.csv.gz").assign(
    method="latent-class, learnt mass")
assert (eu_closed.groupby(["design", "method"]).replicate.nunique() == 100).all()
assert (eu_lc.groupby("design").replicate.nunique() == 50).all() and eu_lc.design.nunique() == 6
# the latent-class runs drew the closed forms' first 50 samples: same truth per replicate
pair = eu_lc.merge(eu_closed[eu_closed.method == "benedetti-franconi"],
                   on=["design", "replicate", "quantity"])
assert len(pair) == len(eu_lc) and np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
pair = eu_lc.merge(eu_learnt, on=["design", "replicate", "quantity"])
assert len(pair) == len(eu_lc) and np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
# scored on the same 50 samples per design
eu_table = summarise(pd.concat([eu_closed[eu_closed.replicate < 50], eu_lc, eu_learnt],
                               ignore_index=True))
eu_tau = eu_table[eu_table.quantity.isin(["tau1", "tau2"])]
eu_show = eu_tau.pivot_table(index=["design", "method"], columns="quantity",
                             values=["rel_bias", "rel_rmse", "coverage"], sort=False)
print(eu_show.round(3).to_string())
eu_goal = goal_table(eu_table[eu_table.method != "latent-class, learnt mass"], "latent-class")
print(eu_goal.round(3).to_string(index=False))
ei = eu_tau.set_index(["design", "method", "quantity"])


def eu(design, method, q, col="rel_bias"):
    return round(float(ei.at[(design, method, q), col]), 3)


# the copies: every sample-based estimator is far off; the latent-class model
# overstates tau1 by about half (its cross-validation sees almost Poisson cells:
# a copy of a sampled person is itself in the sample with probability about the
# sampling fraction), only the two-way log-linear plug-in comes near, at 10%
copies = [f"eusilc/srs/{f}" for f in ("1%", "5%", "10%")]
assert [eu(d, "latent-class", "tau1") for d in copies] == [0.576, 0.565, 0.478]
assert all(0.35 < eu(d, "poisson-gamma", "tau1") < 0.45 for d in copies)
assert eu("eusilc/srs/10%", "loglinear-2way", "tau1") == -0.075
assert not eu_goal.met.any()
# without the copies the default meets the bias and RMSE parts on tau1 and tau2 at 5%
# and 10% and covers tau1 (0.92, 0.88); tau2 sits 1-1.5 posterior sd low (-3.8%,
# -1.8%), so its coverage misses (0.56, 0.72); at 1% (100 records) -10% and -14%
distinct = [f"eusilc-distinct/srs/{f}" for f in ("1%", "5%", "10%")]
eg = eu_goal.set_index("design")
assert [(eu(d, "latent-class", "tau1"), eu(d, "latent-class", "tau2")) for d in distinct] == [
    (-0.104, -0.143), (-0.011, -0.038), (-0.005, -0.018)]
assert [cov_pair(eg, d) for d in distinct] == [(0.86, 0.42), (0.92, 0.56), (0.88, 0.72)]
assert eg.loc[distinct[1:], ["tau1_bias_ok", "tau2_bias_ok", "tau1_rmse_ok",
                             "tau2_rmse_ok", "tau1_cover_ok"]].all().all()
ez = interval_errors(eu_lc).set_index(["design", "quantity"])
assert [round(ez.at[(d, "tau2"), "z_mean"], 2) for d in distinct[1:]] == [-1.51, -1.08]
assert all(0.95 < ez.at[(d, q), "z_sd"] < 1.05 for d in distinct[1:] for q in ("tau1", "tau2"))
# the learnt profile mass (age has 99 levels) does not transfer: tau1 +5.7% at 5% and
# 10% instead of -1.1% and -0.5%, a larger RMSE, coverage 0.76 and 0.66
assert [eu(d, "latent-class, learnt mass", "tau1") for d in distinct[1:]] == [0.057, 0.057]
assert all(eu(d, "latent-class, learnt mass", "tau1", "rel_rmse")
           > eu(d, "latent-class", "tau1", "rel_rmse") for d in distinct[1:])
assert [eu(d, "latent-class, learnt mass", "tau1", "coverage") for d in distinct[1:]] == [
    0.76, 0.66]

# %% [markdown]
# Found after the run above: on `eusilc-distinct` the file-level tau1 is right at 5%
# because two errors cancel. `python benchmarks/uniqueness_by_group.py --population
# eusilc-distinct --fraction 0.05 --replicates 10 --by "lambda;hsize"` (the same
# samples and defaults; about 1 min): the 342 sample uniques of one-person households
# (all population-unique by construction) get 179 expected population uniques, those of
# larger households 1,321 against 1,175 true (+12%). `eusilc-multi` leaves the
# one-person households out (2,957 households, 9,369 persons, 25% population-unique):
#
# ```
# python benchmarks/accuracy.py --populations eusilc-multi --replicates 100 --csv e.csv
# python benchmarks/latent_class_accuracy.py --populations eusilc-multi --replicates 50 --baselines "" --csv f.csv
# ```
#
# stored as `closed_form_100_eusilc_multi.csv.gz` and `latent_class_50_eusilc_multi.csv.gz`
# (about 7 min on one core).

# %%
def held_out_run(closed_file, latent_file):
    """A held-out population's closed forms (100 replicates) and default latent class
    (50, the closed forms' first 50 samples), scored on the same 50 samples: the latent
    class rows, the summary and the goal table (by design)."""
    closed = pd.read_csv(RESULTS / closed_file)
    lc = pd.read_csv(RESULTS / latent_file)
    assert (closed.groupby(["design", "method"]).replicate.nunique() == 100).all()
    assert (lc.groupby("design").replicate.nunique() == 50).all() and lc.design.nunique() == 3
    pair = lc.merge(closed[closed.method == "benedetti-franconi"],
                    on=["design", "replicate", "quantity"])
    assert len(pair) == len(lc) and np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
    table = summarise(pd.concat([closed[closed.replicate < 50], lc], ignore_index=True))
    tau = table[table.quantity.isin(["tau1", "tau2"])]
    print(tau.pivot_table(index=["design", "method"], columns="quantity",
                          values=["rel_bias", "rel_rmse", "coverage"], sort=False)
          .round(3).to_string())
    goal = goal_table(table, "latent-class").set_index("design")
    print(goal.round(3).to_string())
    return lc, tau, goal


em_lc, em_tau, em_goal = held_out_run("closed_form_100_eusilc_multi.csv.gz",
                                      "latent_class_50_eusilc_multi.csv.gz")
emi = em_tau.set_index(["design", "method", "quantity"])
multi = [f"eusilc-multi/srs/{f}" for f in ("1%", "5%", "10%")]


def em(design, method, q, col="rel_bias"):
    return round(float(emi.at[(design, method, q), col]), 3)


# the default overstates tau1 by 12-13% at 5% and 10%, with intervals that do not
# cover (0.40, 0.24): off the goal on the held-out file; still the smallest tau1 RMSE
# of all methods there (the Poisson-gamma plug-in +22%, the main-effects log-linear
# +70%, Benedetti-Franconi -67 to -96%)
assert [(em(d, "latent-class", "tau1"), em(d, "latent-class", "tau2")) for d in multi] == [
    (-0.043, -0.153), (0.118, -0.001), (0.127, 0.021)]
assert [cov_pair(em_goal, d) for d in multi] == [(0.9, 0.56), (0.4, 0.86), (0.24, 0.64)]
assert em_goal.tau1_rmse_ok.all() and not em_goal.met.any()
assert all(0.2 < em(d, "poisson-gamma", "tau1") < 0.25 for d in multi[1:])
# why: the cross-validation reads these cells as Poisson (median kappa 40-200 at every
# ratio), while the kappa that reproduces the true tau1 is about 1 (medians 1.4 and 1.0
# at 5% and 10% over 10 samples: `python benchmarks/overdispersion_oracle.py
# --populations eusilc-multi --fractions 0.05,0.1 --replicates 10 --kappa-prior
# half-cauchy:1 --cv-dispersion parts`); the clumping the population needs is not
# visible at the sample's scale, as with the copies of `eusilc`
# the learnt profile mass (`--phi-a marginal:learn:20`, stored as
# `latent_class_50_learnt_mass_eusilc_multi.csv.gz`) is worse here too: +17.6%, +18.9%
em_learnt = pd.read_csv(RESULTS / "latent_class_50_learnt_mass_eusilc_multi.csv.gz")
eml = summarise(em_learnt).set_index(["design", "quantity"])
assert [round(eml.at[(d, "tau1"), "rel_bias"], 3) for d in multi[1:]] == [0.176, 0.189]
assert all(eml.at[(d, "tau1"), "rel_rmse"] > em(d, "latent-class", "tau1", "rel_rmse")
           for d in multi[1:])
kappa_med = em_lc[em_lc.quantity == "tau1"].note.str.extract(
    r"kappa median ([0-9.]+)")[0].astype(float).groupby(em_lc.design).median()
assert all(kappa_med[d] > 30 for d in multi[1:])

# %% [markdown]
# The same file stratified by region with unequal weights (`--kind stratified` in both
# commands; stored as `closed_form_100_stratified_eusilc_multi.csv.gz` and
# `latent_class_50_stratified_eusilc_multi.csv.gz`, 6 min): the same picture, tau1 +7.8%
# and +15.3% at 5% and 10% (coverage 0.64, 0.06); at 10% the Poisson-gamma plug-in
# (+14.6%) comes as close.

# %%
_, ems_tau, ems_goal = held_out_run("closed_form_100_stratified_eusilc_multi.csv.gz",
                                    "latent_class_50_stratified_eusilc_multi.csv.gz")
smulti = [f"eusilc-multi/stratified/{f}" for f in ("1%", "5%", "10%")]
assert [round(ems_goal.at[d, "tau1_bias"], 3) for d in smulti] == [-0.013, 0.078, 0.153]
assert [cov_pair(ems_goal, d) for d in smulti] == [(0.96, 0.82), (0.64, 0.74), (0.06, 0.54)]
assert not ems_goal.met.any() and ems_goal.tau1_rmse_ok.all()
emsi = ems_tau.set_index(["design", "method", "quantity"])
assert round(emsi.at[(smulti[2], "poisson-gamma", "tau1"), "rel_bias"], 3) == 0.146
# with today's default (the learnt profile mass: `--kind stratified --populations
# eusilc-multi --replicates 50 --baselines ""`, stored as
# `latent_class_50_stratified_learnt_mass_eusilc_multi.csv.gz`, 3 min) worse still
ems_learnt = pd.read_csv(RESULTS / "latent_class_50_stratified_learnt_mass_eusilc_multi.csv.gz")
_pair = ems_learnt.merge(pd.read_csv(RESULTS / "latent_class_50_stratified_eusilc_multi.csv.gz")
                         .query("method == 'latent-class'"), on=["design", "replicate", "quantity"])
assert len(_pair) == len(ems_learnt) and np.allclose(_pair.truth_x, _pair.truth_y, equal_nan=True)
emsl = goal_table(summarise(ems_learnt), "latent-class").set_index("design")
assert [round(emsl.at[d, "tau1_bias"], 3) for d in smulti] == [-0.119, 0.206, 0.213]
assert [cov_pair(emsl, d)[0] for d in smulti[1:]] == [0.12, 0.0]
# the held-out EU-SILC (persons of multi-person households, each composition once) drawn
# the same way (`--populations eusilc-multi --kind household`, stored as
# `closed_form_100_household_eusilc_multi.csv.gz`, `latent_class_50_household_eusilc_multi.csv.gz`,
# 3 min): tau1 -39%/+3%/+11%, the lowest RMSE at 5% and 10% (Poisson-gamma plug-in +16%, +17%)
_, emh_tau, emh_goal = held_out_run("closed_form_100_household_eusilc_multi.csv.gz",
                                    "latent_class_50_household_eusilc_multi.csv.gz")
EMH = [f"eusilc-multi/household/{f}" for f in ("1%", "5%", "10%")]
assert [round(emh_goal.at[d, "tau1_bias"], 3) for d in EMH] == [-0.389, 0.03, 0.111]
assert list(emh_goal.tau1_rmse_ok) == [False, True, True] and not emh_goal.met.any()

# %% [markdown]
# ### Household samples: removing the mates' share of a unique's rate (an option)
#
# `cluster_correction="cv"` (`sdcbayes assess --cluster-correction cv`,
# `cluster_rate_correction`) multiplies each sample unique's rate by the median ratio, for
# its household's size, of the mixture's prediction fitted without its household to the one
# fitted without the record alone. The same 50 household samples of each population as
# the default's above:
#
# ```
# python benchmarks/latent_class_accuracy.py --populations synthetic --replicates 50 --kind household --cluster-correction cv --baselines "" --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations eusilc-multi --replicates 50 --kind household --cluster-correction cv --baselines "" --csv b.csv
# ```
#
# (about 17 min on both cores) stored as
# `latent_class_50_household_cluster_correction_{synthetic,eusilc_multi}.csv.gz`.

# %%
def corrected_run(stem):
    """The correction's run beside the default's on the same samples (same truth), and
    its goal table against the closed-form baselines' first 50 replicates."""
    base = pd.read_csv(RESULTS / f"latent_class_50_household_{stem}.csv.gz")
    cc = pd.read_csv(RESULTS / f"latent_class_50_household_cluster_correction_{stem}.csv.gz")
    pair = base[base.method == "latent-class"].merge(cc, on=["design", "replicate", "quantity"])
    assert len(pair) == len(cc) and np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
    closed = pd.read_csv(RESULTS / f"closed_form_100_household_{stem}.csv.gz").query(
        "replicate < 50")
    goal = goal_table(summarise(pd.concat([cc, closed], ignore_index=True)),
                      "latent-class").set_index("design")
    tau1 = cc[cc.quantity == "tau1"]
    factors = (tau1.note.str.extract(r"cluster factors ([^;]+)")[0].str.split("/", expand=True)
               .astype(float).set_axis(["2", "3", "4+"], axis=1).assign(design=tau1.design.values)
               .groupby("design").median())
    print(goal.round(3).to_string())
    print(factors.round(2).to_string())
    return goal, factors


cc_syn, cc_syn_f = corrected_run("synthetic")
cc_eu, cc_eu_f = corrected_run("eusilc_multi")
# what the README states. The synthetic census (households drawn independently of each
# other): tau1 -41/-14/-8.4% becomes -37/-7.4/-1.0% (tau2 -21.6/-2.2/+1.0%), the lowest
# RMSE at 5% and 10% (the default had it at 10% only), coverage still short
assert [round(cc_syn.at[d, "tau1_bias"], 3) for d in HH] == [-0.371, -0.074, -0.01]
assert [round(cc_syn.at[d, "tau2_bias"], 3) for d in HH] == [-0.216, -0.022, 0.01]
assert list(cc_syn.tau1_rmse_ok) == [False, True, True] and not cc_syn.met.any()
assert [cov_pair(cc_syn, d) for d in HH[1:]] == [(0.52, 0.78), (0.84, 0.7)]
# the held-out EU-SILC: -39/+3/+11% becomes -7.4/+25.8/+25.9%, worse at 5% and 10%
assert [round(cc_eu.at[d, "tau1_bias"], 3) for d in EMH] == [-0.074, 0.258, 0.259]
assert list(cc_eu.tau1_rmse_ok) == [False, False, False]
# the factors: about 0.8 on the synthetic census at 5% and 10%, 0.93/0.84/0.67 on EU-SILC
# at 5% (sizes 2, 3, 4 and more)
assert cc_syn_f.loc[HH[1:]].stack().between(0.75, 0.85).all()
assert list(cc_eu_f.loc["eusilc-multi/household/5%"].round(2)) == [0.93, 0.84, 0.67]

# %% [markdown]
# ## Adult 9 keys at 1%: not a mixing problem
#
# On Adult 9 keys at 1% the replicates whose two chains disagree (r-hat of tau1 above
# 1.1, a fifth of them) are the ones off the most. Four times as many sweeps (`python
# benchmarks/latent_class_accuracy.py --populations adult9 --fractions 0.01
# --replicates 50 --baselines "" --draws 600 --tune 400`) or six chains (`--chains 6`),
# on the default's 50 samples, stored as `latent_class_50_adult9_1pct_long_chains.csv.gz`
# and `latent_class_50_adult9_1pct_six_chains.csv.gz`, give the same estimates: the
# bias and the narrow intervals are the model's, not the sampler's.

# %%
a91 = latent[(latent.design == "adult9/srs/1%") & (latent.method == "latent-class")]
mix = {"default": a91}
for label, f in (("long", "latent_class_50_adult9_1pct_long_chains.csv.gz"),
                 ("six", "latent_class_50_adult9_1pct_six_chains.csv.gz")):
    mix[label] = pd.read_csv(RESULTS / f)
mix_tab = summarise(pd.concat([d.assign(method=k) for k, d in mix.items()],
                              ignore_index=True))
mix_tab = mix_tab[mix_tab.quantity.isin(["tau1", "tau2"])].set_index(["method", "quantity"])
print(mix_tab[["rel_bias", "coverage", "width"]].round(3).to_string())
for label in ("long", "six"):
    m = a91.merge(mix[label], on=["replicate", "quantity"])
    m = m[m.quantity.isin(["tau1", "tau2"])]
    assert len(m) == 100 and np.array_equal(m.truth_x, m.truth_y)
    for q, g in m.groupby("quantity"):
        assert np.corrcoef(g.estimate_x, g.estimate_y)[0, 1] > 0.98, (label, q)
# the same bias (+5.2% to +6.0%) and coverage (0.74-0.80) whatever the sampler's length
assert all(0.05 < mix_tab.at[(label, "tau1"), "rel_bias"] < 0.065 for label in mix)
assert all(0.7 <= mix_tab.at[(label, "tau1"), "coverage"] <= 0.8 for label in mix)

# %% [markdown]
# ### Combining the cross-validation's partitions and ratios otherwise: measured, not the default
#
# The default kappa posterior mixes two posteriors: one random partition into quarters and
# one into eighths. Two other combinations, on the default's 50 samples of design seed 0:
# (i) four partitions per ratio whose log-likelihoods are averaged (repeated
# cross-validation, `overdispersion_cv(n_splits=4, partitions="average")`), on Adult 9 keys
# at 1% where the intervals are too narrow; (ii) the quarters' and eighths' log-likelihoods
# averaged instead of their posteriors mixed (`combine_ratios="average"`, a composite
# likelihood that counts the sample once), on the two key sets where kappa matters:
#
# ```
# python benchmarks/latent_class_accuracy.py --populations adult9 --fractions 0.01 --replicates 50 --baselines "" --overdispersion-splits 4 --cv-partitions average --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations adult9,scotland13 --replicates 50 --baselines "" --cv-combine-ratios average --csv b.csv
# ```
#
# and both with `--kind stratified` (about 100 min on both cores in all), stored as
# `latent_class_50_adult9_1pct_cv_partitions_average.csv.gz` and
# `latent_class_50_cv_composite.csv.gz`.

# %%
def against_default(stem):
    """A variant's stored run beside the default's seed-0 run on the same samples: bias,
    coverage and z sd (interval_errors) of tau1 and tau2 per design and kind."""
    var = pd.read_csv(RESULTS / f"{stem}.csv.gz")
    out = []
    for kind in ("srs", "stratified"):
        base = d_runs[kind][0]
        v = var[var.kind == kind]
        base = base[(base.method == "latent-class") & base.design.isin(v.design.unique())]
        pair = base.merge(v, on=["design", "replicate", "quantity"])
        assert len(pair) == len(v) and np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
        both = pd.concat([base.assign(method="default"), v.assign(method="variant")],
                         ignore_index=True)
        both = both[both.quantity.isin(["tau1", "tau2"])]
        s = summarise(both).set_index(["design", "method", "quantity"])
        z = interval_errors(both).set_index(["design", "method", "quantity"])
        out.append(s[["rel_bias", "coverage", "width"]].join(z[["z_sd"]]))
    table = pd.concat(out).unstack("quantity")
    print(table.round(3).to_string())
    return table


def vs(table, design, q, col):
    """(default, variant) of a column."""
    return tuple(round(table.at[(design, m), (col, q)], 3) for m in ("default", "variant"))


avg_tab = against_default("latent_class_50_adult9_1pct_cv_partitions_average")
# what the README states: averaging four partitions changes nothing that matters on Adult 9
# keys at 1% (tau1 +5.4% -> +5.7% SRS, +6.5% -> +6.8% stratified; coverage 0.80 -> 0.78,
# 0.78 -> 0.70; z sd 1.37 -> 1.39 and 1.42 -> 1.52): the partition is not the noise
assert vs(avg_tab, "adult9/srs/1%", "tau1", "rel_bias") == (0.054, 0.057)
assert vs(avg_tab, "adult9/stratified/1%", "tau1", "rel_bias") == (0.065, 0.068)
assert vs(avg_tab, "adult9/srs/1%", "tau1", "coverage") == (0.8, 0.78)
assert vs(avg_tab, "adult9/stratified/1%", "tau1", "coverage") == (0.78, 0.7)
assert [round(x, 2) for x in vs(avg_tab, "adult9/srs/1%", "tau1", "z_sd")] == [1.37, 1.39]
assert [round(x, 2) for x in vs(avg_tab, "adult9/stratified/1%", "tau1", "z_sd")] == [1.42, 1.52]

comp_tab = against_default("latent_class_50_cv_composite")
# what the README states: the composite puts Adult 9 keys at 5% right (coverage 0.98 / 0.98
# -> 0.88 / 0.82 SRS, 1.00 / 1.00 -> 0.88 / 0.84 stratified; z sd 0.6-0.65 -> 0.97-1.06)
assert [(vs(comp_tab, d, "tau1", "coverage"), vs(comp_tab, d, "tau2", "coverage"))
        for d in ("adult9/srs/5%", "adult9/stratified/5%")] == [((0.98, 0.88), (0.98, 0.82)),
                                                               ((1.0, 0.88), (1.0, 0.84))]
for kind in ("srs", "stratified"):
    z5 = [comp_tab.at[(f"adult9/{kind}/5%", m), ("z_sd", q)]
          for m in ("default", "variant") for q in ("tau1", "tau2")]
    assert all(0.6 < z < 0.66 for z in z5[:2]) and all(0.97 < z < 1.07 for z in z5[2:])
# ... and narrows every other design: Adult 9 keys at 1% tau1 coverage 0.80 -> 0.64 (0.78 ->
# 0.62), Scotland 13 keys at 1% 0.94 -> 0.70 with tau1 +5.5% -> +7.5%; tau2 at 10% 0.92 ->
# 0.84 on Adult 9 keys and 0.86 -> 0.80 on Scotland 13 keys (SRS)
assert vs(comp_tab, "adult9/srs/1%", "tau1", "coverage") == (0.8, 0.64)
assert vs(comp_tab, "adult9/stratified/1%", "tau1", "coverage") == (0.78, 0.62)
assert vs(comp_tab, "scotland13/srs/1%", "tau1", "coverage") == (0.94, 0.7)
assert vs(comp_tab, "scotland13/srs/1%", "tau1", "rel_bias") == (0.055, 0.075)
assert vs(comp_tab, "adult9/srs/10%", "tau2", "coverage") == (0.92, 0.84)
assert vs(comp_tab, "scotland13/srs/10%", "tau2", "coverage") == (0.86, 0.8)
# width falls on all 12 (tau1), the mean z sd of tau1 rises from 0.97 to 1.19
w = comp_tab["width"]["tau1"].unstack("method")
assert (w.variant < w.default).all()
zs = comp_tab["z_sd"]["tau1"].unstack("method").mean()
assert (round(zs.default, 2), round(zs.variant, 2)) == (0.97, 1.19), zs

# %% [markdown]
# ## Does the per-sample kappa read the sample?
#
# `python benchmarks/overdispersion_oracle.py --populations adult9,adult6 --replicates 20
# --kappa-prior half-cauchy:1 --cv-dispersion parts --profile-prior learn --ratios 4,8,4+8
# --csv a.csv` and the same with `--populations scotland13,scotland7` (today's default
# model: learnt profile mass, half-Cauchy prior on kappa^-1/2, the parts' dispersion,
# quarters and eighths mixed; about 15 min each, on both cores), stored together as
# `overdispersion_oracle_20.csv.gz`: per sample the cross-validated kappa posterior (median,
# 5% and 95%), the oracle kappa (the one whose Poisson-cell-mixture tau1 equals the truth)
# and tau1's relative error at every kappa of the grid. Recomputed here from the rows, not
# with the benchmark's functions.

# %%
orc = pd.read_csv(RESULTS / "overdispersion_oracle_20.csv.gz")
from sdcbayes.models.latent_class import KAPPA_GRID  # noqa: E402

cap = KAPPA_GRID[np.isfinite(KAPPA_GRID)].max()


def kappa_reading(g):
    lo = np.log(np.minimum(g.oracle_kappa, cap))
    lc = np.log(np.minimum(g["cv_4+8"], cap))
    curve = np.stack([np.array(c.split(), dtype=float) for c in g.error_curve])
    fixed = int(np.argmin(np.abs(curve.mean(axis=0))))  # one kappa for the design, in hindsight
    post_sd = (np.log(np.minimum(g["cv_95%"], cap)) - np.log(np.minimum(g["cv_5%"], cap))) / 3.29
    return pd.Series({
        "corr": np.corrcoef(lo, lc)[0, 1], "cv_log_sd": lc.std(ddof=1),
        "oracle_log_sd": lo.std(ddof=1), "cv_err_sd": g.error_cv.std(ddof=1),
        "fixed_err_sd": curve[:, fixed].std(ddof=1), "oracle_in_90": g.oracle_in_cv_90.mean(),
        "post_log_sd": post_sd.median(), "log_rmse": np.sqrt(((lc - lo) ** 2).mean()),
        "fixed_kappa": KAPPA_GRID[fixed]})


kr = orc.groupby("design").apply(kappa_reading, include_groups=False)
print(kr.round(3).to_string())
# %%
sparse = [f"{p}/srs/{f}%" for p in ("adult9", "scotland13") for f in (1, 5, 10)]


def near(col, expected, tol=0.006, scale=1.0):
    """The column on the sparse designs within tol of the README's (rounded) numbers."""
    return np.allclose(scale * kr.loc[sparse, col].to_numpy(), expected, atol=tol, rtol=0)


# what the README states: on the sparse key sets, where the oracle is finite, the per-sample
# kappa does not follow the sample's oracle (correlations -0.18 to +0.30 over 20 samples,
# standard error about 0.22) and moves more from sample to sample than the oracle does
assert near("corr", [-0.03, 0.30, 0.08, -0.18, 0.25, -0.10])
assert near("cv_log_sd", [0.67, 0.24, 0.30, 0.67, 0.21, 0.12])
assert near("oracle_log_sd", [0.35, 0.24, 0.16, 0.19, 0.14, 0.07])
# one kappa per design (chosen knowing the truth) against the per-sample kappa: tau1's error
# sd over the samples, in %
assert near("cv_err_sd", [8.0, 1.6, 1.3, 8.4, 2.9, 1.5], tol=0.06, scale=100)
assert near("fixed_err_sd", [4.1, 1.3, 0.7, 2.8, 1.7, 0.7], tol=0.06, scale=100)
# the kappa posterior holds the oracle in 0.85-0.95 of the samples at 1%, in all at Adult 9
# keys' 5%, in too few at 10%; at 1% its log-scale sd exceeds the distance to the oracle
assert near("oracle_in_90", [0.85, 1.0, 0.55, 0.95, 0.85, 0.65], tol=1e-9)
assert near("post_log_sd", [1.26, 0.56, 0.28, 1.92, 0.21, 0.10])
assert near("log_rmse", [0.82, 0.29, 0.46, 0.87, 0.24, 0.14])

# %% [markdown]
# Given the design's kappa: the default model with kappa fixed at the grid value whose mean
# tau1 error over the first 20 samples is nearest zero (`fixed_kappa` of the oracle run above:
# 0.501 for Adult 9 keys at 1%, 0.2 for Scotland 13 keys) on all 50 samples of design seed 0
# (`python benchmarks/latent_class_accuracy.py --populations adult9 --fractions 0.01
# --replicates 50 --baselines "" --overdispersion 0.501`, and `scotland13` with
# `--overdispersion 0.2`; stored as `latent_class_50_1pct_design_kappa.csv.gz`), against the
# default's cross-validated kappa on the same samples.

# %%
def design_kappa_table(stem):
    """A stored design-kappa run, summarised by design and quantity."""
    return summarise(pd.read_csv(RESULTS / f"{stem}.csv.gz")).set_index(["design", "quantity"])


def default_table(kind=""):
    """Today's default on the same samples (``kind`` "" or "_stratified"): Adult with the
    learnt mass; Scotland's runs are the default's bit for bit (no key of 20 levels)."""
    scot = pd.read_csv(RESULTS / f"latent_class_50{kind}.csv.gz")
    return summarise(pd.concat([
        pd.read_csv(RESULTS / f"latent_class_50{kind}_learnt_mass_adult.csv.gz"),
        scot[scot.population.str.startswith("scotland")]])
    ).set_index(["design", "method", "quantity"])


def fixed_vs_default(fixed, default, design, col):
    """(fixed kappa, default) of a column, tau1 then tau2."""
    return [(round(fixed.at[(design, q), col], 3),
             round(default.at[(design, "latent-class", q), col], 3)) for q in ("tau1", "tau2")]


srs_default = default_table()
srs_1pct = partial(fixed_vs_default, design_kappa_table("latent_class_50_1pct_design_kappa"),
                   srs_default)
# the fixed values are the oracle run's hindsight kappas
assert np.allclose(kr.loc[["adult9/srs/1%", "scotland13/srs/1%"], "fixed_kappa"], [0.501, 0.2],
                   atol=0.001)
# what the README states (tau1, tau2; fixed kappa against the default)
assert srs_1pct("adult9/srs/1%", "rel_bias") == [(0.002, 0.054), (-0.011, 0.03)]
assert srs_1pct("adult9/srs/1%", "rel_rmse") == [(0.032, 0.089), (0.025, 0.063)]
assert srs_1pct("adult9/srs/1%", "coverage") == [(0.96, 0.8), (0.74, 0.82)]
assert srs_1pct("scotland13/srs/1%", "rel_bias") == [(0.005, 0.055), (-0.01, 0.021)]
assert srs_1pct("scotland13/srs/1%", "rel_rmse") == [(0.035, 0.118), (0.024, 0.079)]
assert srs_1pct("scotland13/srs/1%", "coverage") == [(0.82, 0.94), (0.8, 0.94)]

# at 5% and 10% (the oracle run's hindsight kappas; stored as
# `latent_class_50_{5,10}pct_design_kappa.csv.gz`) the RMSE falls by a third to a half.
# Per fraction: the kappas (Adult 9 keys, Scotland 13 keys), then per design (tau1, tau2)
# pairs (fixed, default) of relative RMSE and of coverage, as the README states them.
DESIGN_KAPPA = {
    5: ((1.259, 0.316), {"adult9": ([(0.014, 0.021), (0.01, 0.015)], [(0.9, 0.98), (0.72, 0.98)]),
                         "scotland13": ([(0.015, 0.028), (0.013, 0.019)],
                                        [(0.88, 0.94), (0.66, 0.9)])}),
    10: ((1.585, 0.398), {"adult9": ([(0.008, 0.016), (0.006, 0.009)],
                                     [(0.98, 0.86), (0.84, 0.92)]),
                          "scotland13": ([(0.011, 0.017), (0.005, 0.012)],
                                         [(0.78, 0.9), (0.88, 0.86)])}),
}
for pct, (kappas, expected) in DESIGN_KAPPA.items():
    fixed = design_kappa_table(f"latent_class_50_{pct}pct_design_kappa")
    assert np.allclose(kr.loc[[f"{p}/srs/{pct}%" for p in expected], "fixed_kappa"], kappas,
                       atol=0.001)
    for p, (rmse, cover) in expected.items():
        assert fixed_vs_default(fixed, srs_default, f"{p}/srs/{pct}%", "rel_rmse") == rmse
        assert fixed_vs_default(fixed, srs_default, f"{p}/srs/{pct}%", "coverage") == cover

# the same kappas on the stratified 1% designs (samples they were not chosen on; stored as
# `latent_class_50_stratified_1pct_design_kappa.csv.gz`), against the stratified default
strat_1pct = partial(fixed_vs_default,
                     design_kappa_table("latent_class_50_stratified_1pct_design_kappa"),
                     default_table("_stratified"))
assert strat_1pct("adult9/stratified/1%", "rel_bias") == [(0.002, 0.065), (-0.01, 0.039)]
assert strat_1pct("adult9/stratified/1%", "rel_rmse") == [(0.046, 0.104), (0.031, 0.073)]
assert strat_1pct("adult9/stratified/1%", "coverage") == [(0.8, 0.78), (0.78, 0.78)]
assert strat_1pct("scotland13/stratified/1%", "rel_bias") == [(0.002, -0.039), (-0.012, -0.049)]
assert strat_1pct("scotland13/stratified/1%", "rel_rmse") == [(0.03, 0.106), (0.022, 0.087)]
assert strat_1pct("scotland13/stratified/1%", "coverage") == [(0.9, 0.94), (0.8, 0.9)]

# %% [markdown]
# ## A kappa learnt across designs?
#
# The oracle run (`python benchmarks/overdispersion_oracle.py --populations <list>
# --replicates 15 --ratios "" --profile-prior learn --csv t.csv`, no cross-validation) on 27
# key sets that are not among the 12 designs of the goal -- other key sets of Adult
# (`adult6+workclass`, `adult9~native-country`, ...) and of Scotland (`scotland7+Economic_Activity`,
# `scotland13~industry`, ...), EU-SILC and the synthetic census, each at 1%, 5% and 10% --
# stored as `kappa_transfer_train_15.csv.gz` (three runs side by side, about 35 min on both
# cores; `+` adds a key, `~` drops one):
#
# ```
# --populations adult6~native-country,adult6+workclass,adult6+occupation,adult6+relationship,adult6+workclass+occupation,adult6+relationship+occupation,adult9~native-country,adult9+hours-per-week,adult6~education+occupation+workclass,adult9~race~native-country,eusilc,eusilc~pb220a
# --populations scotland7~religion,scotland7+Economic_Activity,scotland7+Family_Composition+Economic_Activity,scotland7+Economic_Activity+Occupation+industry,scotland13~Hours_Worked_Per_Week~Approximate_Social_Grade,scotland13~industry,scotland13~religion~health,scotland7+student+RESIDENCE_TYPE,synthetic,synthetic+occupation
# --populations scotland13+student,adult6+hours-per-week,adult9~native-country+hours-per-week,eusilc-distinct,scotland7+Occupation+Approximate_Social_Grade
# ```
#
# `python benchmarks/kappa_transfer.py --train kappa_transfer_train_15.csv.gz
# --evaluate overdispersion_oracle_20.csv.gz [--within-file] --csv e.csv` fits a censored
# normal regression of each design's oracle log kappa on log(n/N) and the share of sample
# uniques, and evaluates the prior it gives on the 12 designs of the goal; both evaluation
# tables are stored together as `kappa_transfer_eval.csv.gz` (`fit`: all files, or the
# evaluated design's file only). Recomputed here: the design kappas from the curves, and
# the regression with another optimiser.

# %%
import re  # noqa: E402

from scipy import optimize, stats  # noqa: E402

ktr = pd.read_csv(RESULTS / "kappa_transfer_train_15.csv.gz")
ktr = ktr[ktr.truth > 0]
log_grid = np.log(KAPPA_GRID[:-1])
kcap = np.log(100.0)


def oracle_log_kappa(g):
    """A design's oracle log kappa, where the summed tau1 curve meets the summed truth
    (censored at kappa = 100), and whether it is censored."""
    err = np.stack([np.array(c.split(), dtype=float) for c in g.error_curve])[:, :-1]
    curve = ((1 + err) * g.truth.to_numpy()[:, None]).sum(axis=0)
    keep = log_grid <= kcap + 1e-9
    y, t = curve[keep], g.truth.sum()
    censored = bool(t >= y[-1])
    return (kcap if censored else float(np.interp(t, y, log_grid[keep]))), censored


def design_row(g):
    """A training design: its file, mean truth and features, oracle log kappa."""
    lk, censored = oracle_log_kappa(g)
    return pd.Series({"file": re.sub(r"\d+$", "", re.split(r"[+~/]", g.name)[0]),
                      "truth": g.truth.mean(), "log_fraction": np.log(g.n / g.N).mean(),
                      "unique_share": (g.f1 / g.n).mean(), "log_kappa": lk,
                      "censored": censored})


kdes = ktr.groupby("design").apply(design_row, include_groups=False)
kdes = kdes[kdes.truth >= 10]


def tobit(d):
    """(intercept, log-fraction, unique-share coefficients, residual sd) by Nelder-Mead."""
    X = np.column_stack([np.ones(len(d)), d.log_fraction, d.unique_share])
    y, c = d.log_kappa.to_numpy(), d.censored.to_numpy(bool)

    def nll(th):
        z = (y - X @ th[:3]) / np.exp(th[3])
        return -(stats.norm.logpdf(z[~c]).sum() - (~c).sum() * th[3]
                 + stats.norm.logsf(z[c]).sum())

    start = np.append(np.linalg.lstsq(X, y, rcond=None)[0], 0.0)
    th = optimize.minimize(nll, start, method="Nelder-Mead",
                           options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 20000}).x
    return np.append(th[:3], np.exp(th[3]))


pooled = tobit(kdes)
per_file = {f: tobit(kdes[kdes.file == f]) for f in ("adult", "scotland")}
print(len(kdes), int(kdes.censored.sum()), pooled.round(3),
      {f: v.round(3) for f, v in per_file.items()})
# what the README states: 80 designs (11 censored at kappa 100); across files log kappa =
# 4.29 - 0.05 log(n/N) - 5.34 (unique share), residual sd 1.70; within Adult's key sets
# 7.23 - 0.05 log(n/N) - 8.22 u, sd 0.80; within Scotland's 3.99 - 0.03 log(n/N) - 6.68 u, sd 1.30
assert (len(kdes), int(kdes.censored.sum())) == (80, 11)
assert np.allclose(pooled, [4.286, -0.051, -5.339, 1.701], atol=0.01)
assert np.allclose(per_file["adult"], [7.229, -0.047, -8.217, 0.803], atol=0.01)
assert np.allclose(per_file["scotland"], [3.992, -0.027, -6.678, 1.303], atol=0.01)

# %%
kev = pd.read_csv(RESULTS / "kappa_transfer_eval.csv.gz").set_index(["fit", "design"])
for fit_name, coef in (("all files", {"adult": pooled, "scotland": pooled}),
                       ("same file", per_file)):
    e = kev.loc[fit_name]
    mean = [coef[f][0] + coef[f][1] * lf + coef[f][2] * u
            for f, lf, u in zip(e.file, e.log_fraction, e.unique_share, strict=True)]
    # the stored priors are this regression's (their sd adds the coefficients' doubt)
    assert np.allclose(e.prior_mean, mean, atol=0.02)
    assert np.all(e.prior_sd >= [coef[f][3] - 0.01 for f in e.file])
    # the evaluation designs' oracle log kappa, from the oracle run's rows above
    lk = [oracle_log_kappa(orc[orc.design == d])[0] for d in e.index]
    assert np.allclose(e.log_kappa, lk, atol=1e-3)

# tau1 under the prior alone (the Poisson-cell posterior of the oracle run averaged over it)
# against the per-sample cross-validation, relative RMSE over the 20 samples: learnt across
# files the prior loses on 9 of the 12 designs (a factor of 3-5 at 5% and 10% on the sparse
# key sets); learnt on the same file's other key sets it halves the 1% RMSE of the sparse
# key sets and is within 0.6 points of the cross-validation elsewhere
rm = kev[["rmse_transfer", "rmse_cv"]].round(3)
across, within = rm.loc["all files"], rm.loc["same file"]
assert (across.rmse_transfer > across.rmse_cv).sum() == 9
assert across.loc["adult9/srs/5%"].tolist() == [0.079, 0.017]
assert across.loc["scotland13/srs/1%"].tolist() == [0.145, 0.102]
assert within.loc["adult9/srs/1%"].tolist() == [0.046, 0.086]
assert within.loc["scotland13/srs/1%"].tolist() == [0.037, 0.102]
assert ((within.rmse_transfer - within.rmse_cv) <= 0.006).all()

# %% [markdown]
# The same-file prior in the whole model, 50 samples of design seed 0: reweighting the
# cross-validated kappa posterior (`--kappa-prior log-normal:<prior_mean>:<prior_sd>` of the
# evaluation table above; stored as `latent_class_50_kappa_prior_same_file.csv.gz`), alone
# (`--overdispersion log-normal:...` at 1%; `latent_class_50_1pct_kappa_prior_alone_same_file`),
# and the prior learnt across files with the cross-validation (at 1%;
# `latent_class_50_1pct_kappa_prior_across_files`), against the default on the same samples.

# %%
same = kev.loc["same file"]
across_prior = kev.loc["all files"]
# the priors the runs were given are the evaluation table's (rounded to 3 decimals; as
# floats: the row of a mixed table is object-typed, which pandas 2.2's round leaves alone)
def _prior(table, design):
    return table.loc[design, ["prior_mean", "prior_sd"]].astype(float).round(3).tolist()


assert _prior(same, "adult9/srs/1%") == [-0.444, 0.837]
assert _prior(same, "scotland13/srs/1%") == [-1.513, 1.384]
assert _prior(across_prior, "adult9/srs/1%") == [-0.605, 1.737]
with_cv = partial(fixed_vs_default, design_kappa_table("latent_class_50_kappa_prior_same_file"),
                  srs_default)
# what the README states (tau1, tau2; with the prior against the default)
assert with_cv("adult9/srs/1%", "rel_bias") == [(0.032, 0.054), (0.012, 0.03)]
assert with_cv("adult9/srs/1%", "rel_rmse") == [(0.066, 0.089), (0.046, 0.063)]
assert with_cv("adult9/srs/1%", "coverage") == [(0.88, 0.8), (0.88, 0.82)]
assert with_cv("scotland13/srs/1%", "rel_bias") == [(0.018, 0.055), (-0.004, 0.021)]
assert with_cv("scotland13/srs/1%", "rel_rmse") == [(0.096, 0.118), (0.069, 0.079)]
assert with_cv("scotland13/srs/1%", "coverage") == [(0.94, 0.94), (0.96, 0.94)]
# at 5% and 10% the cross-validation outweighs the prior: bias and RMSE within 0.3 points
for design in [f"{p}/srs/{f}%" for p in ("adult9", "scotland13") for f in (5, 10)]:
    for col in ("rel_bias", "rel_rmse"):
        assert all(abs(a - b) <= 0.0031 for a, b in with_cv(design, col)), (design, col)
assert with_cv("adult9/srs/5%", "coverage") == [(0.98, 0.98), (0.98, 0.98)]
alone = partial(fixed_vs_default,
                design_kappa_table("latent_class_50_1pct_kappa_prior_alone_same_file"),
                srs_default)
assert alone("adult9/srs/1%", "rel_rmse") == [(0.035, 0.089), (0.024, 0.063)]
assert alone("scotland13/srs/1%", "rel_rmse") == [(0.037, 0.118), (0.034, 0.079)]
for design in ("adult9/srs/1%", "scotland13/srs/1%"):
    assert all(abs(a) <= 0.026 for a, _ in alone(design, "rel_bias"))
    assert alone(design, "coverage") == [(1.0, 0.8 if "adult" in design else 0.94),
                                         (1.0, 0.82 if "adult" in design else 0.94)]
    # a third to a half wider than the default's intervals
    assert all(1.3 < a / b < 1.5 for a, b in alone(design, "width"))
xfile = partial(fixed_vs_default,
                design_kappa_table("latent_class_50_1pct_kappa_prior_across_files"), srs_default)
assert xfile("adult9/srs/1%", "rel_bias") == [(0.043, 0.054), (0.022, 0.03)]
assert xfile("adult9/srs/1%", "rel_rmse") == [(0.081, 0.089), (0.057, 0.063)]
assert xfile("adult9/srs/1%", "coverage") == [(0.84, 0.8), (0.82, 0.82)]
assert xfile("scotland13/srs/1%", "rel_bias") == [(0.061, 0.055), (0.027, 0.021)]
assert xfile("scotland13/srs/1%", "rel_rmse") == [(0.115, 0.118), (0.076, 0.079)]
assert xfile("scotland13/srs/1%", "coverage") == [(0.94, 0.94), (0.94, 0.94)]
# the same priors on the stratified 1% designs, against the stratified default
strat_prior = partial(fixed_vs_default, design_kappa_table(
    "latent_class_50_stratified_1pct_kappa_prior_same_file"), default_table("_stratified"))
assert strat_prior("adult9/stratified/1%", "rel_bias") == [(0.042, 0.065), (0.021, 0.039)]
assert strat_prior("adult9/stratified/1%", "rel_rmse") == [(0.081, 0.104), (0.054, 0.073)]
assert strat_prior("adult9/stratified/1%", "coverage") == [(0.8, 0.78), (0.86, 0.78)]
assert strat_prior("scotland13/stratified/1%", "rel_bias") == [(-0.057, -0.039), (-0.061, -0.049)]
assert strat_prior("scotland13/stratified/1%", "rel_rmse") == [(0.102, 0.106), (0.086, 0.087)]
assert strat_prior("scotland13/stratified/1%", "coverage") == [(0.9, 0.94), (0.88, 0.9)]

# %% [markdown]
# ## How the cross-validated kappa posterior is formed: rules scored offline
#
# The model is cut (kappa does not feed back into the classes), so one Gibbs run and one
# cross-validation per sample serve every way of turning the held-out counts into a kappa
# posterior. `benchmarks/kappa_rules.py` runs them exactly as the default of
# `latent_class_accuracy.py` (same seeds, same samples) and stores each partition's
# log-likelihood of kappa and, per kappa of the grid, tau's conditional means and draws;
# a rule (prior, power on the likelihood, mixture or average of the scale ratios) is then
# scored in seconds. Commands (50 samples of design seed 0; about 50 min per pair of
# populations on one core, the records 12 MB each and not stored):
#
# ```
# python benchmarks/kappa_rules.py --populations adult6,adult9 --replicates 50 --out a.npz
# python benchmarks/kappa_rules.py --populations scotland7,scotland13 --replicates 50 --out s.npz
# (the same with --kind stratified: as.npz, ss.npz)
# python benchmarks/kappa_rules.py --evaluate a.npz s.npz as.npz ss.npz --rules RULES \
#     --per-sample kappa_rules_50.csv
# ```
#
# with RULES the rules of the stored table below; `python benchmarks/kappa_rules.py --evaluate
# kappa_rules_50.csv.gz` re-scores the stored table. Each row is one sample under one rule:
# truth, estimate and 90% interval of tau1 and tau2; the rule `model` is the sampler's own
# output (the default rule as the model ran it).

# %%
RULES50 = pd.read_csv(RESULTS / "kappa_rules_50.csv.gz")


def rules_tidy(per):
    """The per-sample rule table in the tidy form of the benchmark runs (method = rule)."""
    parts = [pd.DataFrame({"design": per.design, "method": per.rule, "quantity": q,
                           "replicate": per.replicate, "truth": per["truth" + t],
                           "estimate": per["est" + t], "lo": per["lo" + t],
                           "hi": per["hi" + t], "time_s": np.nan})
             for t, q in (("1", "tau1"), ("2", "tau2"))]
    return pd.concat(parts, ignore_index=True)


rules_tidy50 = rules_tidy(RULES50)
rules_summ = summarise(rules_tidy50).set_index(["design", "method", "quantity"])


def rule_vs(rule, design, col, base="default", table=None):
    """(rule, base) of a column, tau1 then tau2, rounded as the README states them, from
    ``table`` (default: the 12 designs' ``rules_summ``)."""
    t = rules_summ if table is None else table
    return [(round(t.at[(design, rule, q), col], 3), round(t.at[(design, base, q), col], 3))
            for q in ("tau1", "tau2")]


# %% [markdown]
# First, that the offline scoring is the model's. (1) The rule `model` is the sampler's
# output on the same samples as the stored default runs: the estimates agree sample by
# sample to the 6 digits stored, but for 9 of the 1200 samples, all at 1%, within 2% (EM's
# restarts land differently in floating point). (2) The default rule rebuilt offline (tau's
# draws per kappa, mixed by the rule's weights) gives the model's bias to 0.002, its
# coverage to three samples in 50 and its width to 3.5% (the Monte Carlo error of 300
# draws' 5% and 95% points). (3) Two rules that were also run through the whole model
# agree with those runs, bias to 0.15 point and coverage to four samples: the ratios'
# averaged log-likelihoods (`default/average`, stored as `latent_class_50_cv_composite`)
# and the same-file log-normal priors at 1% (`latent_class_50{,_stratified_1pct}_kappa_
# prior_same_file`).

# %%
def stored_default_estimates(kind=""):
    """The stored default runs' per-sample tau estimates (Adult learnt mass; Scotland)."""
    scot = pd.read_csv(RESULTS / f"latent_class_50{kind}.csv.gz")
    d = pd.concat([pd.read_csv(RESULTS / f"latent_class_50{kind}_learnt_mass_adult.csv.gz"),
                   scot[scot.population.str.startswith("scotland")]])
    return d[d.method == "latent-class"]


stored = pd.concat([stored_default_estimates(), stored_default_estimates("_stratified")])
own = rules_tidy50[rules_tidy50.method == "model"].merge(
    stored, on=["design", "replicate", "quantity"], suffixes=("", "_stored"))
assert len(own) == len(rules_tidy50[rules_tidy50.method == "model"])  # every sample found
np.testing.assert_allclose(own.truth, own.truth_stored, rtol=1e-5)  # 6 digits stored
rel = (own.estimate / own.estimate_stored - 1).abs()
off = own[rel > 1e-5].drop_duplicates(["design", "replicate"])
# 9 of the 1200 samples, all at 1% (8 of Scotland 13 keys, 1 of Adult 9 keys), within 2%
assert len(off) == 9 and off.design.str.endswith("/1%").all() and rel.max() < 0.02, off
for design in pd.unique(RULES50.design):
    for q in ("tau1", "tau2"):
        m, d = rules_summ.loc[(design, "model", q)], rules_summ.loc[(design, "default", q)]
        assert abs(m.rel_bias - d.rel_bias) <= 0.002, (design, q)
        assert abs(m.covered - d.covered) <= 3, (design, q)
        assert abs(m.width / d.width - 1) <= 0.035, (design, q)


def whole_model_check(stem, rule, designs, bias_tol=0.0015, cover_tol=4):
    """A rule scored offline against the same rule run through the whole model."""
    run = summarise(pd.read_csv(RESULTS / f"{stem}.csv.gz")).set_index(
        ["design", "method", "quantity"])
    for design in designs:
        for q in ("tau1", "tau2"):
            a, b = rules_summ.loc[(design, rule, q)], run.loc[(design, "latent-class", q)]
            assert abs(a.rel_bias - b.rel_bias) <= bias_tol, (stem, design, q)
            assert abs(a.covered - b.covered) <= cover_tol, (stem, design, q)


whole_model_check("latent_class_50_cv_composite", "default/average",
                  [f"{p}/{k}/{f}%" for p in ("adult9", "scotland13") for k in ("srs", "stratified")
                   for f in (1, 5, 10)])
for k in ("", "_stratified"):
    kind = "stratified" if k else "srs"
    whole_model_check(f"latent_class_50{k}{'_1pct' if k else ''}_kappa_prior_same_file",
                      "log-normal:-0.444:0.837", [f"adult9/{kind}/1%"])
    whole_model_check(f"latent_class_50{k}{'_1pct' if k else ''}_kappa_prior_same_file",
                      "log-normal:-1.513:1.384", [f"scotland13/{kind}/1%"])

# %% [markdown]
# What the rules do (README, "How the kappa posterior is formed"), tau1 then tau2, each pair
# (rule, default rule) on the same samples. The half-Cauchy scale A on kappa^-1/2 (the
# default's is 1): a larger A puts more mass on small kappa (more overdispersion), which
# lowers tau1 on the sparse 1% designs -- right where the default overstates it, wrong where
# it understates it.

# %%
hc4 = partial(rule_vs, "half-cauchy:4")
assert hc4("adult9/srs/1%", "rel_bias") == [(0.039, 0.054), (0.018, 0.03)]
assert hc4("adult9/srs/1%", "rel_rmse") == [(0.082, 0.09), (0.059, 0.063)]
assert hc4("adult9/srs/1%", "coverage") == [(0.86, 0.8), (0.86, 0.8)]
assert hc4("scotland13/srs/1%", "rel_bias") == [(0.016, 0.055), (-0.007, 0.022)]
assert hc4("scotland13/srs/1%", "rel_rmse") == [(0.11, 0.12), (0.08, 0.08)]
assert hc4("scotland13/srs/1%", "coverage") == [(0.94, 0.94), (0.94, 0.94)]
assert hc4("adult9/stratified/1%", "rel_bias") == [(0.051, 0.064), (0.028, 0.039)]
assert hc4("adult9/stratified/1%", "rel_rmse") == [(0.097, 0.104), (0.068, 0.073)]
assert hc4("adult9/stratified/1%", "coverage") == [(0.8, 0.76), (0.8, 0.78)]
assert hc4("scotland13/stratified/1%", "rel_bias") == [(-0.069, -0.037), (-0.071, -0.048)]
assert hc4("scotland13/stratified/1%", "rel_rmse") == [(0.117, 0.104), (0.099, 0.086)]
assert hc4("scotland13/stratified/1%", "coverage") == [(0.9, 0.92), (0.9, 0.9)]
SPARSE_1PCT = {f"{p}/{k}/1%" for p in ("adult9", "scotland13", "scotland7")
               for k in ("srs", "stratified")}
# elsewhere A = 4 changes the bias by at most half a point and the coverage by at most two
# samples in 50
for design in set(RULES50.design) - SPARSE_1PCT:
    for q in ("tau1", "tau2"):
        a, d = rules_summ.loc[(design, "half-cauchy:4", q)], rules_summ.loc[(design, "default", q)]
        assert abs(a.rel_bias - d.rel_bias) <= 0.005 and abs(a.covered - d.covered) <= 2, design
# A = 16 is A = 4 on simple random samples (the prior tends to flat on kappa^-1/2) and pushes
# Scotland 13 keys' stratified 1% further down; A = 0.5 moves the other way
assert rule_vs("half-cauchy:16", "adult9/srs/1%", "rel_bias")[0] == (0.037, 0.054)
assert rule_vs("half-cauchy:16", "scotland13/stratified/1%", "rel_bias")[0] == (-0.085, -0.037)
assert rule_vs("half-cauchy:0.5", "adult9/srs/1%", "rel_bias")[0] == (0.067, 0.054)
assert rule_vs("half-cauchy:0.5", "adult9/srs/1%", "coverage") == [(0.72, 0.8), (0.74, 0.8)]
assert rule_vs("half-cauchy:0.5", "scotland13/stratified/1%", "rel_bias")[0] == (-0.022, -0.037)

# a power t < 1 on the log-likelihood widens every interval: Adult 9 keys at 1% covers, its
# bias grows, and intervals already too wide get wider
t05 = partial(rule_vs, "default/t=0.5")
assert t05("adult9/srs/1%", "coverage") == [(0.86, 0.8), (0.92, 0.8)]
assert t05("adult9/srs/1%", "rel_bias") == [(0.069, 0.054), (0.042, 0.03)]
assert t05("scotland13/srs/5%", "coverage") == [(0.98, 0.94), (0.98, 0.94)]
assert t05("adult9/srs/5%", "coverage") == [(1.0, 1.0), (1.0, 0.98)]
# t > 1 narrows: Adult 9 keys at 5% stays too wide, 1% and 10% lose
t15 = partial(rule_vs, "default/t=1.5")
assert t15("adult9/srs/5%", "coverage") == [(0.98, 1.0), (0.96, 0.98)]
assert t15("adult9/stratified/5%", "coverage") == [(0.98, 1.0), (1.0, 1.0)]
assert t15("adult9/srs/1%", "coverage") == [(0.78, 0.8), (0.76, 0.8)]
assert t15("scotland13/stratified/10%", "coverage") == [(0.88, 0.94), (0.82, 0.86)]
# both: a wide prior and a flat likelihood covers Adult 9 keys at 1% and costs elsewhere
hc8t = partial(rule_vs, "half-cauchy:8/t=0.5")
assert hc8t("adult9/srs/1%", "coverage") == [(0.9, 0.8), (0.94, 0.8)]
assert hc8t("adult9/stratified/1%", "coverage") == [(0.9, 0.76), (0.88, 0.78)]
assert hc8t("scotland13/stratified/1%", "rel_bias") == [(-0.083, -0.037), (-0.083, -0.048)]
assert hc8t("scotland13/stratified/1%", "rel_rmse")[0] == (0.124, 0.104)
assert hc8t("scotland13/srs/5%", "coverage") == [(1.0, 0.94), (1.0, 0.94)]
assert hc8t("scotland7/srs/5%", "rel_bias")[0] == (-0.055, -0.038)
# averaging the ratios is the one rule that brings Adult 9 keys at 5% in, and the 1% out
avg = partial(rule_vs, "default/average")
assert avg("adult9/srs/5%", "coverage") == [(0.88, 1.0), (0.82, 0.98)]
assert avg("adult9/stratified/5%", "coverage") == [(0.9, 1.0), (0.86, 1.0)]
assert avg("adult9/srs/1%", "coverage") == [(0.68, 0.8), (0.76, 0.8)]
assert avg("adult9/stratified/1%", "coverage") == [(0.62, 0.76), (0.7, 0.78)]
assert avg("scotland13/srs/1%", "coverage") == [(0.72, 0.94), (0.8, 0.94)]
assert avg("scotland13/stratified/1%", "coverage") == [(0.84, 0.92), (0.8, 0.9)]
# no rule moves tau2 on Adult 6 keys at 10% into the band: its miss is the mixture's centre
for kind in ("srs", "stratified"):
    cov = rules_summ.xs((f"adult6/{kind}/10%", "tau2"), level=("design", "quantity")).coverage
    assert cov.max() <= 0.76, cov
# designs whose two coverages are both in 85-95%, of 24: no rule has more than the default
# rule's 13 (the model's own 12: the Monte Carlo error of the interval ends); A = 0.5 ties,
# A = 4 has 10
calibrated = rules_summ.coverage.between(*COVERAGE_BAND).groupby(
    level=["design", "method"]).all().groupby(level="method").sum()
assert (calibrated["default"], calibrated["model"]) == (13, 12), calibrated
assert calibrated.drop(["default", "model"]).max() == 13, calibrated
assert calibrated["half-cauchy:0.5"] == 13 and calibrated["half-cauchy:4"] == 10, calibrated

# %% [markdown]
# Where the kappa that the cross-validation reads sits against the kappa the truth needs,
# per sample (`--kappa-csv`, the default rule; stored as `kappa_rules_50_kappa.csv.gz`):
# `cv_median` is the posterior median of log kappa, `oracle` the log kappa at which the
# sample's posterior mean of tau1 meets its true tau1. On Scotland 13 keys at 1% the oracle
# is the same for simple random and stratified samples, while the cross-validation reads
# kappa lower by 0.7 on the log scale in the stratified ones: the sign of the 1% error
# comes from the cross-validation's reading of the design, not from the population.

# %%
kreads = pd.read_csv(RESULTS / "kappa_rules_50_kappa.csv.gz")
# the file's samples are the per-sample table's, and the gap between the two kappas orders
# the default rule's tau1 errors (an independent check of the two stored files: rank
# correlation above 0.84 on every 1% design)
gap = kreads.merge(RULES50[RULES50.rule == "default"], on=["design", "replicate"])
assert len(gap) == len(kreads) == 1200
gap = gap[np.isfinite(gap.cv_median) & gap.design.str.endswith("/1%")]
for design, g in gap.groupby("design"):
    rho = (g.cv_median - g.oracle).corr(g.est1 / g.truth1 - 1, method="spearman")
    assert rho > 0.84, (design, rho)
kmeans = kreads.groupby("design").agg(cv=("cv_median", "mean"), cv_sd=("cv_median", "std"),
                                      oracle=("oracle", "mean"), n=("oracle", "size"))
assert not kreads[kreads.design.str.contains("adult9|scotland13")].censored.any()
k13 = kmeans.loc[["scotland13/srs/1%", "scotland13/stratified/1%"]]
assert k13.oracle.round(2).tolist() == [-1.63, -1.62]
assert k13.cv.round(2).tolist() == [-1.08, -1.81]
# the shift is 4.5 standard errors; the oracle's, 0.01 log units
shift_se = np.sqrt((k13.cv_sd**2 / k13.n).sum())
assert 4.4 < (k13.cv.iloc[0] - k13.cv.iloc[1]) / shift_se < 4.7
k9 = kmeans.loc[["adult9/srs/1%", "adult9/stratified/1%"]]
assert k9.oracle.round(2).tolist() == [-0.68, -0.67] and k9.cv.round(2).tolist() == [0.03, 0.16]

# %% [markdown]
# The hypothesis those readings led to: the cross-validation cuts the sample at random and
# predicts each part's uniques in the rest at one rate for every record, while the
# population is extrapolated weight class by weight class, so on a stratified sample it
# may read the classes' mixture as overdispersion. Tested with parts whose rest
# extrapolates each weight class at a rate proportional to the population's, predicted
# class by class (`overdispersion_cv(parts="weights")`; `python benchmarks/kappa_rules.py
# --populations adult9 --kind stratified --replicates 50 --cv-parts weights --out w.npz`, and
# `scotland13`; about 20 min each on one core; `--evaluate w9.npz w13.npz --per-sample t.csv
# --kappa-csv k.csv`, stored as `kappa_rules_50_stratified_weighted_parts{,_kappa}.csv.gz`).
# Same samples, same seeds (the Gibbs chains differ only because kappa is drawn from their
# random stream). Rejected: on Scotland 13 keys at 1% the reading does not move (log kappa
# -1.82 against -1.81; simple random samples -1.08), and on Adult 9 keys it rises further
# from the oracle (1% 0.69 against 0.16, oracle -0.67), with tau1 +9.7% against +6.4% and
# coverage 0.48 against 0.78; the relative RMSE of tau1 is higher on all six designs.

# %%
WPARTS = pd.read_csv(RESULTS / "kappa_rules_50_stratified_weighted_parts.csv.gz")
wsumm = summarise(rules_tidy(WPARTS)).set_index(["design", "method", "quantity"])
wdesigns = sorted(WPARTS.design.unique())
assert len(wdesigns) == 6 and all(d.split("/")[1] == "stratified" for d in wdesigns)
# the same samples as the random-parts table: truths identical sample by sample
wm = WPARTS[WPARTS.rule == "model"].merge(
    RULES50[RULES50.rule == "model"], on=["design", "replicate"], suffixes=("_w", "_r"))
assert len(wm) == 300 and (wm.truth1_w == wm.truth1_r).all() and (
    np.abs(wm.truth2_w - wm.truth2_r) < 1e-3).all()


def parts_vs(design, col, q="tau1"):
    """(weighted parts, random parts) of the sampler's own estimates."""
    return (round(wsumm.at[(design, "model", q), col], 3),
            round(rules_summ.at[(design, "model", q), col], 3))


assert parts_vs("adult9/stratified/1%", "rel_bias") == (0.097, 0.064)
assert parts_vs("adult9/stratified/1%", "coverage") == (0.48, 0.78)
assert parts_vs("adult9/stratified/10%", "coverage") == (0.62, 0.86)
assert parts_vs("scotland13/stratified/1%", "rel_bias") == (-0.021, -0.039)
for d in wdesigns:
    w, r = parts_vs(d, "rel_rmse")
    assert w >= r, (d, w, r)
wreads = pd.read_csv(RESULTS / "kappa_rules_50_stratified_weighted_parts_kappa.csv.gz")
wk = wreads.groupby("design").cv_median.mean()
assert round(wk["scotland13/stratified/1%"], 2) == -1.82
assert round(wk["adult9/stratified/1%"], 2) == 0.69
# the oracle is the population's: unmoved by the parts (within the chains' Monte Carlo)
wo = wreads.groupby("design").oracle.mean()
assert abs(wo["scotland13/stratified/1%"] - kmeans.at["scotland13/stratified/1%", "oracle"]) < 0.01

# %% [markdown]
# Where the stratified samples' lower reading does come from: the held-out count split by
# stratum (`python benchmarks/cv_by_stratum.py --population scotland13 --fraction 0.01
# --replicates 90 --kinds srs,stratified --csv a.csv`, and `--kinds stratified-households,
# srs-sub-households,stratified-noweights --csv b.csv`; about 5 and 8 min on one core;
# stored, summed over each partition's parts, as `cv_by_stratum_scotland13_1pct_90.csv.gz`).
# Per sample, each ratio's part-uniques with their stratum (residence type: communal
# establishments, 2% of the file, over-sampled about sixfold by the sqrt(N_h) allocation;
# households), whether they are sample uniques (T) and their predicted count over the kappa
# grid; the reading is the log kappa where the prediction meets T (no prior, no dispersion:
# the cross-validation's point estimate, rank correlation 0.83-0.91 with the stored
# posterior medians of the same samples). The readings are recomputed here by a route of
# their own (first grid crossing of the running maximum, then linear interpolation).
# Over 90 samples the stratified samples read 0.49 lower (SE 0.12); on the same samples,
# removing the communal records raises the reading by 0.26 (paired SE 0.05), of which
# 0.16 is the households' own part-uniques (the communal records in the part fits), the
# rest the communal part-uniques, which read strong clumping; leaving the weight class out
# of the fits moves it 0.03. The households-only stratified samples against simple random
# samples of households of the same size (the same design) differ by 0.17 (SE 0.14):
# noise. The first 50 simple random samples, those of the stored runs, read 0.2 higher than
# the next 40.

# %%
BYSTRAT = pd.read_csv(RESULTS / "cv_by_stratum_scotland13_1pct_90.csv.gz")
assert BYSTRAT.replicate.nunique() == 90 and BYSTRAT.kind.nunique() == 5
_grid = np.exp(np.linspace(np.log(1e-2), np.log(1e4), 61))  # KAPPA_GRID's finite points


def crossing(g):
    """log kappa where the summed prediction (running maximum) first reaches the summed T."""
    pred = np.maximum.accumulate(g[[f"P{i}" for i in range(_grid.size)]].sum().to_numpy())
    t = g["T"].sum()
    i = int(np.argmax(pred >= t)) if (pred >= t).any() else _grid.size
    if i == 0 or i == _grid.size:
        return float(np.log(_grid[min(i, _grid.size - 1)]))
    frac = (t - pred[i - 1]) / (pred[i] - pred[i - 1])
    return float(np.log(_grid[i - 1]) + frac * (np.log(_grid[i]) - np.log(_grid[i - 1])))


reading = BYSTRAT.groupby(["kind", "replicate"]).apply(crossing, include_groups=False).unstack(0)
house = BYSTRAT[BYSTRAT.stratum == 1].groupby(["kind", "replicate"]).apply(
    crossing, include_groups=False).unstack(0)


def paired(a, b, table=reading):
    d = table[a] - table[b]
    return round(d.mean(), 2), round(d.std() / np.sqrt(d.size), 2)


assert reading.srs.mean().round(2) == -1.76 and reading.stratified.mean().round(2) == -2.25
assert paired("stratified", "srs") == (-0.49, 0.12)
assert paired("stratified", "stratified-households") == (-0.26, 0.05)
assert paired("stratified", "stratified-households", house) == (-0.16, 0.04)
assert paired("stratified", "stratified-noweights") == (-0.03, 0.01)
same_design = paired("stratified-households", "srs-sub-households")
assert same_design == (-0.17, 0.14) and abs(same_design[0]) < 1.5 * same_design[1]
assert round(reading.srs.loc[:49].mean() - reading.srs.loc[50:].mean(), 1) == 0.2
for kind, lo in (("srs", 0.9), ("stratified", 0.82)):
    med = kreads[kreads.design == f"scotland13/{kind}/1%"].set_index("replicate").cv_median
    assert reading[kind].loc[med.index].corr(med, method="spearman") > lo, kind

# %% [markdown]
# And what the population needs, stratum by stratum (`python benchmarks/cv_by_stratum.py
# --population scotland13 --fraction 0.01 --replicates 50 --kinds srs --population-scale
# --csv a.csv`, and `--kinds stratified`; the default model run as `kappa_rules.py` runs it,
# about 5 min each on one core; stored as
# `cv_by_stratum_scotland13_1pct_population_50.csv.gz`): per sample and stratum the sample
# uniques, how many are population-unique and their posterior mean count of population
# uniques at each kappa; read by the same crossing, this is each stratum's oracle. Summed
# over the strata it is the oracle stored above (to 0.01, sample by sample). In the
# stratified samples the communal sample uniques, extrapolated by their weight of about 15,
# need almost no clumping (pooled log kappa +0.27), the households, extrapolated about
# 110-fold, -1.80: one kappa cannot serve both, and their mixture gives -1.63, the simple
# random samples' -1.64, where the communal records are 2% and extrapolated like the rest.
# The cross-validation reads the opposite order (communal -2.82, households -2.21): it
# cannot see what a class's own extrapolation factor needs.

# %%
POPSTRAT = pd.read_csv(RESULTS / "cv_by_stratum_scotland13_1pct_population_50.csv.gz")
assert POPSTRAT.replicate.nunique() == 50 and set(POPSTRAT.kind) == {"srs", "stratified"}
need = {(k, s): round(crossing(g), 2) for (k, s), g in POPSTRAT.groupby(["kind", "stratum"])}
need_all = {k: round(crossing(g), 2) for k, g in POPSTRAT.groupby("kind")}
assert need[("stratified", 0)] == 0.27 and need[("stratified", 1)] == -1.80, need
assert need_all == {"srs": -1.64, "stratified": -1.63}, need_all
read = {(k, s): round(crossing(g), 2) for (k, s), g in BYSTRAT.groupby(["kind", "stratum"])}
assert read[("stratified", 0)] == -2.82 and read[("stratified", 1)] == -2.21, read
# per sample, the strata's sum is kappa_rules' oracle of the same samples
per_need = POPSTRAT.groupby(["kind", "replicate"]).apply(crossing, include_groups=False)
for kind in ("srs", "stratified"):
    ko = kreads[kreads.design == f"scotland13/{kind}/1%"].set_index("replicate").oracle
    assert np.abs(per_need.loc[kind].loc[ko.index] - ko).max() < 0.01, kind

# %% [markdown]
# Not the extrapolation factor alone: on Adult 9 keys at 1% (`--population adult9 --kinds
# stratified --population-scale`, stored as `cv_by_stratum_adult9_1pct_population_50.csv.gz`)
# the two income strata, extrapolated about 118-fold (<=50K) and 66-fold (>50K), need the same
# kappa (pooled log kappa -0.72 and -0.68), so Scotland's communal establishments are a
# population of their own rather than an instance of a rule in the factor.

# %%
POPA9 = pd.read_csv(RESULTS / "cv_by_stratum_adult9_1pct_population_50.csv.gz")
assert POPA9.replicate.nunique() == 50
need9 = {s: round(crossing(g), 2) for s, g in POPA9.groupby("stratum")}
assert need9 == {0: -0.72, 1: -0.68}, need9
ko9 = kreads[kreads.design == "adult9/stratified/1%"].set_index("replicate").oracle
per9 = POPA9.groupby("replicate").apply(crossing, include_groups=False)
assert np.abs(per9.loc[ko9.index] - ko9).max() < 0.01

# %% [markdown]
# ### A profile mass chosen by the cross-validation: measured, not the default
#
# On the dense designs the cross-validation sees the learnt profile mass leave the
# mixture too smooth (its part-uniques stay unique more often than even Poisson cells
# predict). `profile_mass="cv"` (`profile_mass_cv`; `sdcbayes assess --profile-prior cv`)
# then raises the mass of the keys of >= 20 levels to where the parts' Poisson prediction
# crosses the held-out count, interpolated in log mass. Adult 6 keys, design seeds 0-3,
# both kinds (about 12 min per seed and kind on one core):
#
# ```
# python benchmarks/latent_class_accuracy.py --populations adult6 --replicates 50 --seed S --baselines "" --profile-mass cv --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations adult6 --replicates 50 --seed S --baselines "" --profile-mass cv --kind stratified --csv b.csv
# ```
#
# stored as `latent_class_50{,_stratified}_cv_mass_adult6{,_seed1,_seed2,_seed3}.csv.gz`,
# the default's samples (where the learnt mass is kept the fit is the default's: the same
# draws). Over 200 samples per design it is worse than the default wherever it acts: on
# the 5% and 10% designs the mass is raised on two thirds to all of the samples (median
# 60-165 against a learnt 20-45), tau1 moves from about -1.3% to +1.2-1.9% at 10%, the
# intervals stay as wide, and the coverage falls (SRS 10% tau1 0.865 -> 0.74; stratified
# 10% 0.915 -> 0.75; SRS 5% 0.93 -> 0.83) with a higher RMSE on all eight. Why: sample by
# sample, the mass the rule reads is uncorrelated with the default's own error there
# (|r| < 0.2), while it sets how far the estimate moves (r 0.8-0.9). The cross-validation
# tells, on average, that the mixture is too smooth at this density; it does not tell
# which sample's fit is, so a per-sample mass adds noise around an overshooting mean.

# %%
def cv_mass_runs(kind):
    """The cv-mass runs of Adult 6 keys (seeds 0-3) beside the default's rows of the same
    samples, one frame with method "default" or "cv mass" and the design seed."""
    pre = "latent_class_50" + ("_stratified" if kind == "stratified" else "")
    out = []
    for s, sfx in enumerate(("", "_seed1", "_seed2", "_seed3")):
        v = pd.read_csv(RESULTS / f"{pre}_cv_mass_adult6{sfx}.csv.gz")
        base = d_runs[kind][s]
        base = base[(base.method == "latent-class") & (base.population == "adult6")]
        pair = base.merge(v, on=["design", "replicate", "quantity"])
        assert len(pair) == len(v) == len(base)
        assert np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
        # the learnt mass kept: the default's fit (the same draws; sums to 1e-13)
        kept = pair.note_y.str.contains("profile mass learn;")
        assert np.allclose(pair.estimate_x[kept], pair.estimate_y[kept], rtol=1e-12, atol=0,
                           equal_nan=True)
        assert np.allclose(pair.lo_x[kept], pair.lo_y[kept], rtol=1e-12, atol=0,
                           equal_nan=True)
        out += [base.assign(method="default", seed=s), v.assign(method="cv mass", seed=s)]
    return pd.concat(out, ignore_index=True)


cvm = {k: cv_mass_runs(k) for k in ("srs", "stratified")}
cvm_tab = {}
for kind, runs in cvm.items():
    both = runs[runs.quantity.isin(["tau1", "tau2"])]
    s = summarise(both).set_index(["design", "method", "quantity"])
    z = interval_errors(both).set_index(["design", "method", "quantity"])
    assert (s.replicates == 200).all()
    cvm_tab[kind] = s[["rel_bias", "rel_rmse", "coverage", "width"]].join(
        z[["z_mean", "z_sd"]]).unstack("quantity")
    print(cvm_tab[kind].round(3).to_string())


def cvm_pair(kind, design, q, col):
    t = cvm_tab[kind]
    return tuple(round(t.at[(design, m), (col, q)], 3) for m in ("default", "cv mass"))


# the mass chosen, and why it does not help: per sample the change in the estimate follows
# log M (correlation near 1) while log M tells nothing of the default's own error there
def mass_reading(kind, design):
    r = cvm[kind]
    r = r[(r.design == design) & (r.quantity == "tau1")].pivot_table(
        index=["seed", "replicate"], columns="method", values=["estimate", "truth", "note"],
        aggfunc="first")
    mass = pd.to_numeric(r[("note", "cv mass")].str.extract(r"profile mass ([^;]+);")[0],
                         errors="coerce")
    err_d = r[("estimate", "default")] / r[("truth", "default")] - 1
    change = r[("estimate", "cv mass")] / r[("truth", "default")] - 1 - err_d
    ch = mass.notna()
    lm = np.log(mass[ch])
    return {"changed": round(float(ch.mean()), 2),
            "median_mass": float(np.round(mass[ch].median())) if ch.any() else None,
            "corr_error": round(float(np.corrcoef(lm, err_d[ch])[0, 1]), 2) if ch.sum() > 2
            else None,
            "corr_change": round(float(np.corrcoef(lm, change[ch])[0, 1]), 2) if ch.sum() > 2
            else None}


readings = {(k, f): mass_reading(k, f"adult6/{k}/{f}") for k in cvm for f in ("1%", "5%", "10%")}
print(pd.DataFrame(readings).T.to_string())
# what the README states. Dense designs: the centre moves up past the truth and the
# intervals get no wider, so coverage falls and the RMSE rises on every 5% and 10% design
assert cvm_pair("srs", "adult6/srs/10%", "tau1", "rel_bias") == (-0.013, 0.019)
assert cvm_pair("srs", "adult6/srs/10%", "tau2", "rel_bias") == (-0.009, 0.007)
assert cvm_pair("stratified", "adult6/stratified/10%", "tau1", "rel_bias") == (-0.012, 0.012)
assert cvm_pair("srs", "adult6/srs/10%", "tau1", "coverage") == (0.865, 0.74)
assert cvm_pair("srs", "adult6/srs/10%", "tau2", "coverage") == (0.74, 0.775)
assert cvm_pair("srs", "adult6/srs/5%", "tau1", "coverage") == (0.93, 0.83)
assert cvm_pair("srs", "adult6/srs/5%", "tau2", "coverage") == (0.865, 0.8)
assert cvm_pair("stratified", "adult6/stratified/10%", "tau1", "coverage") == (0.915, 0.75)
assert cvm_pair("stratified", "adult6/stratified/10%", "tau2", "coverage") == (0.835, 0.77)
for kind in cvm:
    for frac in ("5%", "10%"):
        for q in ("tau1", "tau2"):
            d, c = (cvm_tab[kind].at[(f"adult6/{kind}/{frac}", m), ("rel_rmse", q)]
                    for m in ("default", "cv mass"))
            assert c > d, (kind, frac, q)
            d, c = (cvm_tab[kind].at[(f"adult6/{kind}/{frac}", m), ("width", q)]
                    for m in ("default", "cv mass"))
            assert abs(c / d - 1) < 0.05, (kind, frac, q)  # the intervals stay as wide
        r = readings[(kind, frac)]
        # the mass is raised on most samples, by an amount that tells nothing of the
        # default's error there but sets the change of the estimate
        assert r["changed"] >= 0.65 and abs(r["corr_error"]) < 0.2 and r["corr_change"] > 0.8
    # at 1% the learnt mass is kept on all but a few samples: the default's numbers
    assert readings[(kind, "1%")]["changed"] <= 0.03
    for q in ("tau1", "tau2"):
        d, c = cvm_pair(kind, f"adult6/{kind}/1%", q, "rel_bias")
        assert abs(c - d) <= 0.002

# %% [markdown]
# On Adult 9 keys (design seed 0 only, 50 samples per design and kind, the same commands
# with `--populations adult9 --seed 0`, about 35 min per kind on one core; stored as
# `latent_class_50{,_stratified}_cv_mass_adult9.csv.gz`) the rule acts on 2-4% of the 1%
# samples and on none at 5% and 10%: the default's numbers, to 0.1%.

# %%
def cv_mass_adult9(kind):
    pre = "latent_class_50" + ("_stratified" if kind == "stratified" else "")
    v = pd.read_csv(RESULTS / f"{pre}_cv_mass_adult9.csv.gz")
    base = d_runs[kind][0]
    base = base[(base.method == "latent-class") & (base.population == "adult9")]
    pair = base.merge(v, on=["design", "replicate", "quantity"])
    assert len(pair) == len(v) == len(base)
    assert np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
    kept = pair.note_y.str.contains("profile mass learn;")
    # the learnt mass kept: the default's fit, the same draws -- but for one stratified
    # sample (1%, replicate 42), whose tau1 interval matches the stored run's and whose
    # other numbers differ by up to 2%: not traced; the kept path runs the default's own
    # code, so most likely floating-point drift between the two runs' environments
    same = np.isclose(pair.estimate_x, pair.estimate_y, rtol=1e-12, atol=0, equal_nan=True)
    drifted = pair[kept & ~same].replicate.nunique()
    assert drifted <= 1, drifted
    both = pd.concat([base.assign(method="default"), v.assign(method="cv mass")],
                     ignore_index=True)
    both = both[both.quantity.isin(["tau1", "tau2"])]
    s = summarise(both).set_index(["design", "method", "quantity"])
    tab = s[["rel_bias", "rel_rmse", "coverage"]].unstack("quantity")
    changed = (pair[pair.quantity == "tau1"].assign(ch=~kept[pair.quantity == "tau1"])
               .groupby("design").ch.mean())
    print(tab.round(3).to_string())
    print(changed.round(2).to_string())
    return tab, changed


a9 = {k: cv_mass_adult9(k) for k in ("srs", "stratified")}
# what the README states: it acts on 2-4% of the 1% samples and on none at 5% and 10%, so
# Adult 9 keys keep the default's numbers (to 0.1%): their misses are not the mass's
for kind, (tab, changed) in a9.items():
    assert changed[f"adult9/{kind}/1%"] <= 0.04 and changed[f"adult9/{kind}/1%"] > 0
    assert changed[f"adult9/{kind}/5%"] == 0 and changed[f"adult9/{kind}/10%"] == 0
    for frac in ("1%", "5%", "10%"):
        for q in ("tau1", "tau2"):
            d, c = (tab.at[(f"adult9/{kind}/{frac}", m), ("rel_bias", q)]
                    for m in ("default", "cv mass"))
            assert abs(c - d) <= 0.0015, (kind, frac, q)

# %% [markdown]
# ### EM's profile mass: learnt always instead of once converged (measured, not the default)
#
# `LatentClassModel.fit_em` learns a key's profile mass only after its classes have
# converged at the starting mass (16), within one budget of 200 sweeps for both phases
# (`EM_LEARN_MASS = "converged"`). On Adult at 5% and 10% (2,400-4,900 records) the
# classes take 300-400 sweeps, so there the whole-sample EM fit -- the chains' start, and
# the masses the overdispersion's cross-validation smooths its parts with -- kept 16,
# while the type-II estimate is 64 and 181 (age, native country; Adult 6 keys at 5%,
# sample 0) and the Gibbs chains learn 40-170. Every result above was measured so.
# `learn_mass="always"` gives the learning phase a budget of its own (the type-II masses
# the cross-validation was meant to use); on the default's 50 samples of design seed 0:
#
# ```
# python benchmarks/latent_class_accuracy.py --populations adult6,adult9 --replicates 50 --seed 0 --baselines "" --em-learn-mass always --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations adult6,adult9 --replicates 50 --seed 0 --baselines "" --em-learn-mass always --kind stratified --csv b.csv
# ```
#
# (about 40 min per kind on one core) stored as
# `latent_class_50{,_stratified}_em_always_adult.csv.gz`. The parts, smoothed with the
# larger masses, predict more held-out uniques, so the cross-validation reads more
# clumping (median kappa on Adult 6 keys at 5% 31.6 -> 12.6, Adult 9 keys at 10%
# 2.0 -> 1.26) and the 5% and 10% estimates fall by 0.7-1.9 points: worse on most designs
# (below), so the default stays as measured.

# %%
def em_always(kind):
    pre = "latent_class_50" + ("_stratified" if kind == "stratified" else "")
    v = pd.read_csv(RESULTS / f"{pre}_em_always_adult.csv.gz")
    base = d_runs[kind][0]
    base = base[(base.method == "latent-class") & base.population.isin(["adult6", "adult9"])]
    pair = base.merge(v, on=["design", "replicate", "quantity"])
    assert len(pair) == len(v) == len(base)
    assert np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
    both = pd.concat([base.assign(method="default"), v.assign(method="em always")],
                     ignore_index=True)
    both = both[both.quantity.isin(["tau1", "tau2"])]
    s = summarise(both).set_index(["design", "method", "quantity"])
    tab = s[["rel_bias", "rel_rmse", "coverage"]].unstack("quantity")
    print(tab.round(3).to_string())
    return tab


emt = {k: em_always(k) for k in ("srs", "stratified")}


def em_pair(kind, design, q, col):
    return tuple(round(emt[kind].at[(design, m), (col, q)], 3)
                 for m in ("default", "em always"))


# what the README states
worse = [(k, d, q) for k, t in emt.items() for d in t.index.levels[0]
         for q in ("tau1", "tau2")
         if t.at[(d, "em always"), ("rel_rmse", q)] > t.at[(d, "default"), ("rel_rmse", q)]]
print(len(worse), "of 24 with a higher RMSE")
assert len(worse) == 18
assert em_pair("srs", "adult9/srs/5%", "tau1", "rel_bias") == (-0.001, -0.019)
assert em_pair("srs", "adult9/srs/5%", "tau1", "rel_rmse") == (0.021, 0.029)
assert em_pair("srs", "adult9/srs/5%", "tau1", "coverage") == (0.98, 0.9)
assert em_pair("srs", "adult9/srs/5%", "tau2", "coverage") == (0.98, 0.84)
assert em_pair("srs", "adult9/srs/10%", "tau2", "coverage") == (0.92, 0.72)
assert em_pair("srs", "adult9/srs/10%", "tau2", "rel_rmse") == (0.009, 0.013)
assert em_pair("srs", "adult6/srs/5%", "tau1", "rel_bias") == (-0.002, -0.009)
assert em_pair("srs", "adult6/srs/10%", "tau2", "coverage") == (0.64, 0.64)
assert em_pair("stratified", "adult9/stratified/5%", "tau2", "coverage") == (1.0, 0.92)
assert em_pair("stratified", "adult9/stratified/10%", "tau2", "coverage") == (0.86, 0.76)
# at 1% EM converges within its sweeps on most samples: within 0.25 points of the default
for kind in emt:
    for pop in ("adult6", "adult9"):
        for q in ("tau1", "tau2"):
            d, a = em_pair(kind, f"{pop}/{kind}/1%", q, "rel_bias")
            assert abs(a - d) <= 0.0025, (kind, pop, q)

# %% [markdown]
# ### The profile mass spread between the learnt one and the cross-validation's (an option)
#
# The learnt mass and the cross-validation's crossing are two readings of the profile mass
# the sample cannot tell apart. `profile_mass="span"` (`profile_mass_span`; `sdcbayes
# assess --profile-prior span`) spreads the mass over the range between them, uniform in
# log mass (each Gibbs sweep moves the learnt draw of M a uniform share u of the way to the
# crossing; kappa comes from the crossing's cross-validation with probability u). Adult 6
# keys, design seeds 0-3, both kinds (about 12 min per seed and kind on one core):
#
# ```
# python benchmarks/latent_class_accuracy.py --populations adult6 --replicates 50 --seed S --baselines "" --profile-mass span --profile-mass-unreached largest --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations adult6 --replicates 50 --seed S --baselines "" --profile-mass span --profile-mass-unreached largest --kind stratified --csv b.csv
# ```
#
# stored as `latent_class_50{,_stratified}_span_mass_adult6{,_seed1,_seed2,_seed3}.csv.gz`, the
# default's samples; and on the two held-out files with a many-level key (the synthetic
# census's country of birth, EU-SILC's age), simple random samples of design seed 0
# (`--populations synthetic,eusilc-multi --seed 0 --profile-mass span
# --profile-mass-unreached largest`, about 30 min;
# stored as `latent_class_50_span_mass_heldout.csv.gz`).

# %%
SPAN_SEEDS = ("", "_seed1", "_seed2", "_seed3")


def span_runs(kind):
    """Default, cv-mass and span runs of Adult 6 keys on the same samples."""
    pre = "latent_class_50" + ("_stratified" if kind == "stratified" else "")
    out = []
    for s, sfx in enumerate(SPAN_SEEDS):
        v = pd.read_csv(RESULTS / f"{pre}_span_mass_adult6{sfx}.csv.gz")
        base = d_runs[kind][s]
        base = base[(base.method == "latent-class") & (base.population == "adult6")]
        cv = pd.read_csv(RESULTS / f"{pre}_cv_mass_adult6{sfx}.csv.gz")
        pair = base.merge(v, on=["design", "replicate", "quantity"])
        assert len(pair) == len(v) == len(base)
        assert np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
        out += [base.assign(method="default", seed=s), cv.assign(method="cv mass", seed=s),
                v.assign(method="span", seed=s)]
    return pd.concat(out, ignore_index=True)


def tau_table(runs, cols=("rel_bias", "rel_rmse", "coverage"), replicates=None):
    """tau1 and tau2 of stored runs summarised per (design, method), columns (metric,
    quantity), printed; ``replicates``: the number every row must have."""
    s = summarise(runs[runs.quantity.isin(["tau1", "tau2"])]).set_index(
        ["design", "method", "quantity"])
    assert replicates is None or (s.replicates == replicates).all()
    tab = s[list(cols)].unstack("quantity")
    print(tab.round(3).to_string())
    return tab


def table_val(tab, design, method, q, col):
    """One number of a :func:`tau_table`, rounded as the README states it."""
    return round(float(tab.at[(design, method), (col, q)]), 3)


spr = {k: span_runs(k) for k in ("srs", "stratified")}
span_tab = {kind: tau_table(runs, cols=("rel_bias", "rel_rmse", "coverage", "width"),
                            replicates=50 * len(SPAN_SEEDS)) for kind, runs in spr.items()}


def span_val(kind, design, method, q, col):
    return table_val(span_tab[kind], design, method, q, col)


# the held-out files: the span against the stored default runs of the same samples
ho = pd.read_csv(RESULTS / "latent_class_50_span_mass_heldout.csv.gz")
ho_base = pd.concat([pd.read_csv(RESULTS / "latent_class_50_synthetic.csv.gz"),
                     pd.read_csv(RESULTS / "latent_class_50_learnt_mass_eusilc_multi.csv.gz")],
                    ignore_index=True)
ho_base = ho_base[(ho_base.method == "latent-class") & ho_base.design.isin(ho.design)]
pair = ho_base.merge(ho, on=["design", "replicate", "quantity"])
assert len(pair) == len(ho) and np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
ho_tab = tau_table(pd.concat([ho_base.assign(method="default"), ho.assign(method="span")],
                             ignore_index=True))
ho_val = partial(table_val, ho_tab)


# what the README states. Adult 6 keys, 200 samples per design: both 10% designs come into
# the goal (centred, the RMSE no higher), the 5% ones stay in it, 1% is the default's
assert span_val("srs", "adult6/srs/10%", "span", "tau1", "rel_bias") == 0.005
assert span_val("srs", "adult6/srs/10%", "span", "tau2", "rel_bias") == 0.001
assert span_val("srs", "adult6/srs/10%", "span", "tau1", "coverage") == 0.885
assert span_val("srs", "adult6/srs/10%", "span", "tau2", "coverage") == 0.895
assert span_val("stratified", "adult6/stratified/10%", "span", "tau1", "coverage") == 0.89
assert span_val("stratified", "adult6/stratified/10%", "span", "tau2", "coverage") == 0.89
assert span_val("srs", "adult6/srs/5%", "span", "tau1", "coverage") == 0.885
assert span_val("srs", "adult6/srs/5%", "span", "tau2", "coverage") == 0.86
for kind in spr:
    for frac in ("1%", "5%", "10%"):
        d = f"adult6/{kind}/{frac}"
        for q in ("tau1", "tau2"):
            assert 0.85 <= span_val(kind, d, "span", q, "coverage") <= 0.95, (kind, frac, q)
            assert abs(span_val(kind, d, "span", q, "rel_bias")) <= 0.015
    d = f"adult6/{kind}/10%"
    assert span_val(kind, d, "span", "tau2", "rel_rmse") < span_val(kind, d, "default", "tau2",
                                                                     "rel_rmse")
    assert span_val(kind, d, "span", "tau1", "rel_rmse") <= span_val(kind, d, "default", "tau1",
                                                                      "rel_rmse")
    d = f"adult6/{kind}/5%"
    for q in ("tau1", "tau2"):  # at 5% the RMSE rises a little
        assert span_val(kind, d, "span", q, "rel_rmse") >= span_val(kind, d, "default", q,
                                                                     "rel_rmse")
# but on the held-out synthetic census it moves the wrong way (EU-SILC: the default's)
assert ho_val("synthetic/srs/10%", "default", "tau1", "rel_bias") == -0.007
assert ho_val("synthetic/srs/10%", "span", "tau1", "rel_bias") == -0.027
assert ho_val("synthetic/srs/10%", "span", "tau2", "coverage") == 0.6
assert ho_val("synthetic/srs/10%", "default", "tau2", "coverage") == 0.88
assert ho_val("synthetic/srs/5%", "span", "tau1", "rel_bias") == -0.058
assert ho_val("synthetic/srs/5%", "default", "tau1", "rel_bias") == -0.04
for frac in ("1%", "5%", "10%"):
    for q in ("tau1", "tau2"):
        d = f"eusilc-multi/srs/{frac}"
        assert abs(ho_val(d, "span", q, "rel_bias") - ho_val(d, "default", q, "rel_bias")) \
            <= 0.005

# %% [markdown]
# ## The span keeps the learnt mass where no candidate reaches the count
#
# Where did the first version go wrong on the held-out files? There it took the largest
# candidate (1024: no candidate's Poisson prediction reached the held-out count T) on most
# samples at 5% and 10%, on Adult 6 keys almost never. The parts' prediction rises with the
# mass, but by a few per cent of the gap per doubling, so the rule's premise -- a larger mass
# closes the gap -- fails there, and the largest mass with its more overdispersed kappa
# moved tau1 down. `profile_mass_span(unreached="learnt")`, the span's rule now, keeps the
# learnt mass there, which gives the default's fit, draw for draw. So on every sample its run is
# either the first version's (where a mass reached T) or the default's: the 200 samples per
# Adult 6 keys design are composed from the stored runs, and the composition is checked,
# exactly, against runs of the new rule on design seed 0 (simple random samples of Adult 6
# keys, and the held-out files), about 12 and 30 min on one core:
#
# ```
# python benchmarks/latent_class_accuracy.py --populations adult6 --replicates 50 --seed 0 --baselines "" --profile-mass span --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations synthetic,eusilc-multi --replicates 50 --seed 0 --baselines "" --profile-mass span --csv b.csv
# python benchmarks/latent_class_accuracy.py --populations adult9 --replicates 50 --seed 0 --baselines "" --profile-mass span [--kind stratified] --csv c.csv
# python benchmarks/latent_class_accuracy.py --populations adult9 --fractions 0.01 --replicates 50 --seed S --baselines "" --profile-mass span [--kind stratified] --csv d.csv
# python benchmarks/latent_class_accuracy.py --populations adult9 --fractions 0.05,0.1 --replicates 50 --seed S --baselines "" --profile-mass span [--kind stratified] --csv e.csv
# ```
#
# stored as `latent_class_50_span_keep_adult6.csv.gz`, `latent_class_50_span_keep_heldout.csv.gz`
# and `latent_class_50{,_stratified}_span_keep_adult9.csv.gz` (about 15 min per kind), and for
# S = 1, 2, 3 `latent_class_50{,_stratified}_span_keep_adult9_1pct_seed{S}.csv.gz` and
# `..._5_10pct_seed{S}.csv.gz`.

# %%
TOOK_LARGEST = "profile mass 1.02e+03"  # the note of a run that took the largest candidate


def keep_learnt(span, base):
    """The first version's runs with each sample where it took the largest candidate
    replaced by the default's run of that sample (what unreached='learnt' gives)."""
    base = base[(base.method == "latent-class") & base.design.isin(span.design)]
    took = span.loc[span.note.str.contains(TOOK_LARGEST, regex=False), ["design", "replicate"]]
    took = took.drop_duplicates().assign(took=True)
    flag = span.merge(took, on=["design", "replicate"], how="left").took.eq(True).to_numpy()
    out = pd.concat([span[~flag], base.merge(took.drop(columns="took"),
                                             on=["design", "replicate"])], ignore_index=True)
    assert len(out) == len(span)
    return out, len(took)


def same_runs(a, b):
    pair = a.merge(b, on=["design", "replicate", "quantity"])
    assert len(pair) == len(a) == len(b)
    for col in ("estimate", "lo", "hi"):
        assert np.allclose(pair[f"{col}_x"], pair[f"{col}_y"], rtol=1e-12, atol=0,
                           equal_nan=True), col


# the first version's Adult 6 keys runs (read above, spr) composed with the default's
keep_runs, keep_took = {}, {}
for kind, runs in spr.items():
    parts = []
    for s in range(len(SPAN_SEEDS)):
        c, n = keep_learnt(runs.query("method == 'span' and seed == @s"), d_runs[kind][s])
        parts.append(c.assign(method="span, learnt kept", seed=s))
        keep_took[(kind, s)] = n
    keep_runs[kind] = pd.concat(parts, ignore_index=True)
print("Adult 6 samples (of 150 per seed and kind) where the largest mass was taken:", keep_took)
assert all(n <= 5 for n in keep_took.values())

# the composition is the new rule's run: Adult 6 keys seed 0 and the held-out files
keep_a6 = pd.read_csv(RESULTS / "latent_class_50_span_keep_adult6.csv.gz")
same_runs(keep_a6, keep_runs["srs"].query("seed == 0"))
keep_ho = pd.read_csv(RESULTS / "latent_class_50_span_keep_heldout.csv.gz")
composed_ho, n_took_ho = keep_learnt(ho, ho_base)
same_runs(keep_ho, composed_ho)
print("samples where the first version took the largest mass: held-out", n_took_ho, "of 300")
assert keep_took[("srs", 0)] == 1 and n_took_ho == 158
keep_tab = {kind: tau_table(pd.concat([spr[kind], keep_runs[kind]], ignore_index=True))
            for kind in spr}


def keep_val(kind, design, method, q, col):
    return table_val(keep_tab[kind], design, method, q, col)


hk_val = partial(table_val, tau_table(pd.concat(
    [ho_base.assign(method="default"), ho.assign(method="span"),
     keep_ho.assign(method="span, learnt kept")], ignore_index=True)))


# Adult 9 keys: seed 0 at every fraction, seeds 1-3 at 1% and at 5% and 10%
KEEP_A9 = {0: ("",), **{s: (f"_1pct_seed{s}", f"_5_10pct_seed{s}") for s in (1, 2, 3)}}
keep_a9, keep_a9_runs = {}, {}
for kind in ("srs", "stratified"):
    pre = "latent_class_50" + ("_stratified" if kind == "stratified" else "")
    for s, sfxs in KEEP_A9.items():
        v = pd.concat([pd.read_csv(RESULTS / f"{pre}_span_keep_adult9{sfx}.csv.gz")
                       for sfx in sfxs], ignore_index=True)
        keep_a9_runs[(kind, s)] = v
        base = d_runs[kind][s]
        base = base[(base.method == "latent-class") & base.design.isin(v.design)]
        pair = v.merge(base, on=["design", "replicate", "quantity"])
        assert len(pair) == len(v) == len(base)
        acted = pair[~pair.note_x.str.contains("profile mass learn", regex=False)]
        keep_a9[(kind, s)] = acted.groupby("design").replicate.nunique().to_dict()
        # elsewhere the default's run (up to one sample per kind whose chains drift apart
        # in floating point, as noted with the cv mass)
        same = pair[~(pair.replicate.isin(acted.replicate) & pair.design.isin(acted.design))]
        close = np.isclose(same.estimate_x, same.estimate_y, rtol=1e-12, atol=0)
        drifted = same.loc[~close, ["design", "replicate"]].drop_duplicates()
        assert len(drifted) <= 1, (kind, s, drifted)
print("Adult 9 keys samples where the span acts:", keep_a9)
for kind in ("srs", "stratified"):  # never at 5% or 10%
    for s in KEEP_A9:
        assert set(keep_a9[(kind, s)]) <= {f"adult9/{kind}/1%"}
a9_acted = {kind: sum(sum(keep_a9[(kind, s)].values()) for s in KEEP_A9)
            for kind in ("srs", "stratified")}
print("Adult 9 keys at 1%: samples of 200 where the span acts", a9_acted)

# the goal with this rule in place of the default: Adult 6 keys composed over 200 samples,
# Adult 9 keys as run, Scotland the default's (no key of 20 levels or more: it never acts)
keep_goal = {}
for kind in ("srs", "stratified"):
    pre = "latent_class_50" + ("_stratified" if kind == "stratified" else "")
    runs = []
    for s, run in enumerate(d_runs[kind]):
        new = keep_runs[kind].query("seed == @s").drop(columns="seed").assign(
            method="latent-class")
        new = pd.concat([new, keep_a9_runs[(kind, s)]], ignore_index=True)
        swap = (run.method == "latent-class") & run.design.isin(new.design)
        runs.append(pd.concat([run[~swap], new], ignore_index=True))
    keep_goal[kind] = pooled_goal(runs, f"{kind}, span with the learnt mass kept")
    print(kind, "goal met on", keep_goal[kind][2][0], "against the default's", d_pooled[kind][2][0])

# what the README states
K = "span, learnt kept"
assert keep_val("srs", "adult6/srs/10%", K, "tau1", "rel_bias") == 0.005
assert keep_val("srs", "adult6/srs/10%", K, "tau2", "rel_bias") == 0.001
assert keep_val("srs", "adult6/srs/10%", K, "tau1", "rel_rmse") == 0.021
assert keep_val("srs", "adult6/srs/10%", K, "tau1", "coverage") == 0.895
assert keep_val("srs", "adult6/srs/10%", K, "tau2", "coverage") == 0.9
assert keep_val("stratified", "adult6/stratified/10%", K, "tau1", "coverage") == 0.895
assert keep_val("stratified", "adult6/stratified/10%", K, "tau2", "coverage") == 0.895
assert keep_val("srs", "adult6/srs/5%", K, "tau1", "coverage") == 0.885
assert keep_val("srs", "adult6/srs/5%", K, "tau2", "coverage") == 0.86
for kind in ("srs", "stratified"):
    for frac in ("1%", "5%", "10%"):
        d = f"adult6/{kind}/{frac}"
        for q in ("tau1", "tau2"):
            assert 0.85 <= keep_val(kind, d, K, q, "coverage") <= 0.95, (kind, frac, q)
            assert abs(keep_val(kind, d, K, q, "rel_bias")) <= 0.015
            # at 10% no worse than the first version; at 1% within 0.01 of the default
            if frac == "10%":
                assert keep_val(kind, d, K, q, "rel_rmse") <= keep_val(kind, d, "span", q,
                                                                        "rel_rmse")
            if frac == "1%":
                assert abs(keep_val(kind, d, K, q, "coverage")
                           - span_val(kind, d, "default", q, "coverage")) <= 0.01 + 1e-9
    d = f"adult6/{kind}/10%"
    for q in ("tau1", "tau2"):
        assert keep_val(kind, d, K, q, "rel_rmse") < span_val(kind, d, "default", q, "rel_rmse")
# the held-out files: the synthetic census at 10% and EU-SILC are the default's; at 5%
# the synthetic census is half a point further off (the first version: two points)
for q in ("tau1", "tau2"):
    for col in ("rel_bias", "rel_rmse", "coverage"):
        assert hk_val("synthetic/srs/10%", K, q, col) == hk_val("synthetic/srs/10%", "default",
                                                                 q, col)
    for frac in ("1%", "5%", "10%"):
        d = f"eusilc-multi/srs/{frac}"
        assert abs(hk_val(d, K, q, "rel_bias") - hk_val(d, "default", q, "rel_bias")) <= 0.0015
assert hk_val("synthetic/srs/5%", K, "tau1", "rel_bias") == -0.045
assert hk_val("synthetic/srs/5%", K, "tau2", "rel_bias") == -0.026
assert hk_val("synthetic/srs/5%", K, "tau1", "coverage") == 0.8
assert hk_val("synthetic/srs/5%", K, "tau2", "coverage") == 0.7
# the goal: 9 of 12 of each kind against the default's 8; the misses that remain
assert a9_acted == {"srs": 2, "stratified": 6}
for kind in ("srs", "stratified"):
    assert keep_goal[kind][2][0] == 9 and d_pooled[kind][2][0] == 8
    missed = set(keep_goal[kind][1].query("not met").design)
    assert missed == {f"adult9/{kind}/1%", f"adult9/{kind}/5%", f"scotland13/{kind}/10%"}, missed

# %% [markdown]
# ## A fresh held-out key set: Adult's work keys
#
# The span's rule was mended after the held-out files showed the first version's fault, so
# they no longer test it. A key set no choice was made on: sex, race, education, workclass,
# occupation and hours per week (the spec `WORK6` below: Adult 6 keys without age, marital
# status and native country, with workclass, occupation and hours per week). Hours per week,
# 96 levels, is its only key of 20 levels or more, where the span acts; it was used before
# only beside age (`benchmarks/kappa_transfer.py`), never as the one such key. 14.3% of
# the 48,842 records are population-unique, against Adult 6 keys' 15%; Adult's two
# confirmed structural zeros on workclass and occupation apply. Simple random and
# stratified samples at 1/5/10%, design seeds 0 and 1, the default and the span, about 7
# and 11 min per seed and kind on one core:
#
# ```
# python benchmarks/latent_class_accuracy.py --populations 'adult6~age~marital-status~native-country+workclass+occupation+hours-per-week' --replicates 50 --seed S --baselines "" [--kind stratified] [--profile-mass span] --csv a.csv
# ```
#
# (seed 1's default runs with `--baselines benedetti-franconi,poisson-gamma,loglinear-main,dis`),
# stored as `latent_class_50{,_stratified}_work6{,_seed1}.csv.gz` and
# `latent_class_50{,_stratified}_span_keep_work6{,_seed1}.csv.gz`.
#
# The default meets the goal on all six designs (100 samples each; the baselines scored on
# seed 1's 50), every coverage consistent with 90%. The span does not confirm: where it acts
# (most samples at 10%, a fifth to a third at 5%) it raises the relative RMSE on every such
# design; at 10% it moves tau1 up by a few tenths of a point from a centred default, and
# on the simple random samples there brings coverage down to 0.86 with errors of more than
# one posterior sd. On Adult 6 keys the same push helped because the default sits low
# there (-1.3% at 10%); the cross-validation does not tell the two apart. Many of its
# masses lie below 64: EM has not converged in 200 sweeps on most samples at 5% and 10%, so
# the cross-validation's learnt mass is EM's starting 16, and the crossing interpolated up
# from it can fall below the mass the chains learn (README, "A fresh held-out key set").

# %%
WORK6 = "adult6~age~marital-status~native-country+workclass+occupation+hours-per-week"


def fresh_runs(stem, spec, label, seeds=(0, 1)):
    """A stored run of a fresh key set (``spec``), both kinds and the given design seeds
    pooled (column ``seed``), designs named <label>/<kind>/<fraction>."""
    runs = []
    for kind in ("", "_stratified"):
        for seed in seeds:
            sfx = f"_seed{seed}" if seed else ""
            r = pd.read_csv(RESULTS / f"latent_class_50{kind}_{stem}{sfx}.csv.gz")
            runs.append(r.assign(seed=seed))
    run = pd.concat(runs, ignore_index=True)
    assert set(run.population) == {spec}
    run["design"] = run.design.str.replace(spec, label, regex=False)
    return run


w6_default = fresh_runs("work6", WORK6, "work6")
w6_span = fresh_runs("span_keep_work6", WORK6, "work6")
w6 = pd.concat([w6_default[w6_default.method == "latent-class"].assign(method="default"),
                w6_span.assign(method="span")], ignore_index=True)
w6 = w6[w6.quantity.isin(["tau1", "tau2"])]
w6_reps = w6.groupby(["design", "method"]).apply(
    lambda g: len(g.drop_duplicates(["seed", "replicate"])), include_groups=False)
assert (w6_reps == 100).all() and len(w6_reps) == 12, w6_reps
# the same samples: the truths agree pair by pair
w6_pair = w6.query("method == 'default'").merge(w6.query("method == 'span'"),
                                             on=["design", "seed", "replicate", "quantity"])
assert len(w6_pair) == 1200 and np.allclose(w6_pair.truth_x, w6_pair.truth_y)
w6_tab = tau_table(w6, cols=("rel_bias", "rel_rmse", "coverage", "width"))
w6_z = interval_errors(w6).set_index(["design", "method", "quantity"]).z_sd.unstack("quantity")
print(w6_z.round(2).to_string())
w6_acted = w6_pair.loc[(w6_pair.quantity == "tau1")
                      & ~w6_pair.note_y.str.contains("profile mass learn", regex=False)]
w6_mass = pd.to_numeric(w6_acted.note_y.str.extract(r"profile mass ([0-9.e+]+);")[0])
w6_acts = w6_acted.design.value_counts().to_dict()
# below 64: interpolated up from EM's starting mass 16 (EM not converged in 200 sweeps)
w6_low = (w6_mass < 64).groupby(w6_acted.design).sum().to_dict()
print("samples of 100 where the span acts:", w6_acts, "| of them with a mass below 64:", w6_low)


w6_val = partial(table_val, w6_tab)


# the goal for the default on the fresh key set, with the baselines of seed 1's samples
w6_goal_tab = summarise(pd.concat([w6_default.query("seed == 1"),
                                   w6_default.query("seed == 0 and method == 'latent-class'")],
                                  ignore_index=True))
w6_goal = goal_table(w6_goal_tab, "latent-class")
print(w6_goal.round(3).to_string(index=False))
w6_owned = {d for d, r in w6_goal.set_index("design").iterrows()
            if min(r.tau1_cover_p, r.tau2_cover_p) < 0.05}
print("the default on the work keys: goal met on", int(w6_goal.met.sum()), "of 6")

# what the README states: the default meets the goal on all six designs, its coverage
# consistent with 90% on each (p >= 0.05), its bias within 2.5%
assert w6_goal.met.all() and len(w6_goal) == 6 and not w6_owned
assert w6_goal[["tau1_bias", "tau2_bias"]].abs().max().max() < 0.025
w6_base = w6_goal_tab[(w6_goal_tab.method != "latent-class")
                      & w6_goal_tab.quantity.isin(["tau1", "tau2"])]
assert set(w6_base.method) == {"benedetti-franconi", "poisson-gamma", "loglinear-main"}
assert 0.205 <= w6_base.rel_bias.abs().min() and w6_base.rel_bias.abs().max() < 0.955
# the record level, seed 1's samples: the lowest Brier score and highest AUC of P(F=1|f=1)
w6_rec = summarise(w6_default.query("seed == 1")).query("quantity == 'tau1'")
for design, g in w6_rec.groupby("design"):
    lc, others = g[g.method == "latent-class"].iloc[0], g[g.method != "latent-class"]
    assert lc.brier < others.brier.min() and lc.auc > others.auc.max(), design
    assert 0.09 < lc.brier < 0.135 and lc.auc > 0.885 and others.auc.max() < 0.875, design
assert w6_val("work6/srs/10%", "default", "tau1", "coverage") == 0.9
assert w6_val("work6/srs/10%", "default", "tau2", "coverage") == 0.93
# the span: the default's run at 1% (it never w6_acted); where it w6_acted it moves tau1 up by
# 0.1-0.4 points, from a centred default, and raises the RMSE on every such design
assert w6_acts == {"work6/srs/10%": 94, "work6/stratified/10%": 79, "work6/srs/5%": 32,
                   "work6/stratified/5%": 18}
for kind in ("srs", "stratified"):
    for q in ("tau1", "tau2"):
        for col in ("rel_bias", "rel_rmse", "coverage"):
            d = f"work6/{kind}/1%"
            assert w6_val(d, "span", q, col) == w6_val(d, "default", q, col)
        for frac in ("5%", "10%"):
            d = f"work6/{kind}/{frac}"
            assert w6_val(d, "span", q, "rel_rmse") > w6_val(d, "default", q, "rel_rmse")
    assert 0.001 <= (w6_val(f"work6/{kind}/10%", "span", "tau1", "rel_bias")
                     - w6_val(f"work6/{kind}/10%", "default", "tau1", "rel_bias")) <= 0.004
# the README's table: tau1 / tau2 relative bias, relative RMSE and coverage
W6_TABLE = """
design method b1 b2 r1 r2 c1 c2
work6/srs/1% default 0.023 0.018 0.103 0.055 0.87 0.91
work6/srs/5% default -0.006 -0.005 0.035 0.018 0.89 0.89
work6/srs/5% span -0.009 -0.007 0.037 0.020 0.89 0.86
work6/srs/10% default 0.001 -0.001 0.021 0.010 0.90 0.93
work6/srs/10% span 0.005 0.001 0.025 0.013 0.86 0.86
work6/stratified/1% default 0.023 0.015 0.097 0.059 0.93 0.91
work6/stratified/5% default -0.008 -0.008 0.034 0.019 0.92 0.90
work6/stratified/5% span -0.009 -0.008 0.035 0.020 0.93 0.90
work6/stratified/10% default 0.005 0.001 0.022 0.010 0.94 0.95
work6/stratified/10% span 0.006 0.001 0.024 0.011 0.90 0.89
"""
for row in pd.read_csv(io.StringIO(W6_TABLE), sep=" ").itertuples(index=False):
    for i, q in enumerate(("tau1", "tau2")):
        for col, x in zip(("rel_bias", "rel_rmse", "coverage"), row[2 + i::2], strict=True):
            assert w6_val(row.design, row.method, q, col) == x, (row.design, row.method, q, col)
# the spread of the errors in posterior sd: the default's 0.87-0.90 at 10%, the span's
# above 1 (its intervals narrower than the error it adds) on the simple random samples
assert all(0.85 <= w6_z.at[(f"work6/{k}/10%", "default"), q] <= 0.91
           for k in ("srs", "stratified") for q in ("tau1", "tau2"))
assert min(w6_z.at[("work6/srs/10%", "span"), q] for q in ("tau1", "tau2")) > 1.05
# the spans whose high end is below 64, interpolated up from EM's starting mass 16
assert w6_low == {"work6/srs/10%": 28, "work6/srs/5%": 22, "work6/stratified/10%": 41,
                  "work6/stratified/5%": 13}

# %% [markdown]
# ## The default on two fresh key sets, 200 samples per design
#
# The default alone over design seeds 0-3 on the work keys and on a fresh key set of
# Scotland: age, sex, health, family composition, economic activity and occupation
# (`ACTIVITY6` below: Scotland 7 keys without marital status, country of birth, ethnic
# group and religion, with the three; no key of 20 levels or more; 5.2% of the 63,388
# records population-unique; Scotland's confirmed structural zeros among these keys
# apply), about 7 min per seed and kind on one core:
#
# ```
# python benchmarks/latent_class_accuracy.py --populations 'scotland7~Marital_Status~Country_Of_Birth~Ethnic_Group~religion+Family_Composition+Economic_Activity+Occupation' --replicates 50 --seed S --baselines "" [--kind stratified] --csv a.csv
# ```
#
# (seed 0 with `--baselines benedetti-franconi,poisson-gamma,loglinear-main,dis`), stored
# as `latent_class_50{,_stratified}_activity6{,_seed1,_seed2,_seed3}.csv.gz`, and the work
# keys' seeds 2 and 3 as `latent_class_50{,_stratified}_work6_seed{2,3}.csv.gz`.

# %%
ACTIVITY6 = ("scotland7~Marital_Status~Country_Of_Birth~Ethnic_Group~religion"
             "+Family_Composition+Economic_Activity+Occupation")
fresh = {"work6": (fresh_runs("work6", WORK6, "work6", range(4)), 1),
         "activity6": (fresh_runs("activity6", ACTIVITY6, "activity6", range(4)), 0)}


def fresh_summary(run, base_seed, samples):
    """A fresh key set's table, goal (by design) and interval errors (by design and
    quantity): the model's ``samples`` per design beside the baselines of the one seed
    that scored them."""
    lc = run[run.method == "latent-class"]
    assert (lc.groupby("design").apply(lambda g: len(g.drop_duplicates(["seed", "replicate"])),
                                       include_groups=False) == samples).all()
    tab = summarise(pd.concat([lc, run[(run.method != "latent-class")
                                       & (run.seed == base_seed)]], ignore_index=True))
    goal = goal_table(tab, "latent-class").set_index("design")
    z = interval_errors(lc[lc.quantity.isin(["tau1", "tau2"])]).set_index(["design", "quantity"])
    print(goal.round(3).to_string())
    print(z[["z_mean", "z_sd"]].unstack("quantity").round(2).to_string())
    return tab, goal, z


fresh_goal, fresh_tab, fresh_z = {}, {}, {}
for name, (run, base_seed) in fresh.items():
    fresh_tab[name], fresh_goal[name], fresh_z[name] = fresh_summary(run, base_seed, 200)


def fresh_val(name, design, q, col):
    g = fresh_goal[name]
    return round(float(g.at[design, f"{q}_{col}"]), 3)


for name in fresh:
    met = fresh_goal[name].met
    print(name, "goal met on", int(met.sum()), "of", len(met), ":", list(met[met].index))

# what the README states. Scotland's activity keys: the goal met on 4 of 6; at 1% the
# centre sits low (tau1 -6.5% and -6.3%, half a posterior sd and more) with errors of the
# right spread, so coverage falls short there, on both kinds
a6 = fresh_goal["activity6"]
assert set(a6.index[a6.met]) == {f"activity6/{k}/{f}" for k in ("srs", "stratified")
                                  for f in ("5%", "10%")}
assert a6[["tau1_rmse_ok", "tau2_rmse_ok"]].all().all()
for kind in ("srs", "stratified"):
    d = f"activity6/{kind}/1%"
    assert -0.07 < fresh_val("activity6", d, "tau1", "bias") < -0.06
    assert -0.05 < fresh_val("activity6", d, "tau2", "bias") < -0.035
    assert min(fresh_val("activity6", d, q, "cover_p") for q in ("tau1", "tau2")) < 0.01
    for q in ("tau1", "tau2"):
        assert fresh_z["activity6"].at[(d, q), "z_mean"] < -0.4
        assert 0.95 < fresh_z["activity6"].at[(d, q), "z_sd"] < 1.15
    for f in ("5%", "10%"):  # within 2.5% elsewhere
        for q in ("tau1", "tau2"):
            assert abs(fresh_val("activity6", f"activity6/{kind}/{f}", q, "bias")) < 0.025
assert fresh_val("activity6", "activity6/srs/1%", "tau2", "coverage") == 0.81
assert fresh_val("activity6", "activity6/stratified/1%", "tau1", "coverage") == 0.84
assert fresh_val("activity6", "activity6/stratified/1%", "tau2", "coverage") == 0.825
assert fresh_val("activity6", "activity6/srs/1%", "tau1", "bias") == -0.065
assert fresh_val("activity6", "activity6/stratified/1%", "tau1", "bias") == -0.063
# the work keys over 200 samples: the goal met on all six, each coverage consistent with
# 90% (p >= 0.05), |bias| within 2.5%, the errors' spread 0.90-1.01 posterior sd
w6g = fresh_goal["work6"]
assert w6g.met.all() and len(w6g) == 6
assert (w6g[["tau1_cover_p", "tau2_cover_p"]] >= 0.05).all().all()
assert w6g[["tau1_bias", "tau2_bias"]].abs().max().max() < 0.025
assert fresh_z["work6"].z_sd.between(0.895, 1.01).all()
assert fresh_val("work6", "work6/stratified/5%", "tau2", "coverage") == 0.86
assert fresh_val("work6", "work6/stratified/1%", "tau1", "coverage") == 0.94

# %% [markdown]
# ## The small keys' smoothing: a marginal centre of fixed mass (measured, not adopted)
#
# The activity keys' 1% miss sits low with errors of the right spread; the scratch probes
# above pointed at the profile prior of the keys of fewer than 20 levels, which keep
# 1/L_j. `small_mass=M` (`--phi-a marginal:learn:20:M`) centres those keys on their sample
# marginal with the fixed mass M instead (the keys of 20 levels or more are as in the
# default), on the default's samples of design seed 0, the six key sets:
#
# ```
# python benchmarks/latent_class_accuracy.py --populations adult6,adult9,scotland7,scotland13,<WORK6>,<ACTIVITY6> --replicates 50 --baselines "" --phi-a marginal:learn:20:4 --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations <the same> --fractions 0.01 --replicates 50 --baselines "" --phi-a marginal:learn:20:1 --csv b.csv
# python benchmarks/latent_class_accuracy.py --populations scotland7,<ACTIVITY6> --fractions 0.01 --kind stratified --replicates 50 --baselines "" --phi-a marginal:learn:20:4 --csv c.csv
# ```
#
# (about 45 min on both cores for the first), stored as `latent_class_50_small_mass4.csv.gz`,
# `latent_class_50_1pct_small_mass1.csv.gz` and
# `latent_class_50_stratified_1pct_small_mass4.csv.gz`.

# %%
FRESH_LABELS = {WORK6: "work6", ACTIVITY6: "activity6"}


def relabel(run):
    """The fresh key sets' designs named work6/... and activity6/..."""
    run = run.copy()
    for spec, label in FRESH_LABELS.items():
        run["design"] = run.design.str.replace(spec, label, regex=False)
    return run


def small_runs(kind):
    """The default's design-seed-0 runs of the six key sets and the small-mass runs."""
    pre = "latent_class_50" + ("_stratified" if kind == "stratified" else "")
    base = pd.concat([d_runs[kind][0]] + [pd.read_csv(RESULTS / f"{pre}_{s}.csv.gz")
                                          for s in ("work6", "activity6")], ignore_index=True)
    base = relabel(base[base.method == "latent-class"])
    other = ({"small mass 4": "small_mass4", "small mass 1": "1pct_small_mass1"}
             if kind == "srs" else {"small mass 4": "1pct_small_mass4"})
    runs = [base.assign(method="default")]
    for label, stem in other.items():
        r = relabel(pd.read_csv(RESULTS / f"{pre}_{stem}.csv.gz")).assign(method=label)
        # the same samples: the truths agree pair by pair
        pair = base.merge(r, on=["design", "replicate", "quantity"])
        assert len(pair) == len(r) and np.allclose(pair.truth_x, pair.truth_y, equal_nan=True)
        runs.append(r)
    return pd.concat(runs, ignore_index=True)


small_tab = {kind: tau_table(small_runs(kind), replicates=50) for kind in ("srs", "stratified")}


# what the README states: a mass of 4 mends the activity keys at 1% on simple random
# samples (tau1 -9.2% -> +2.9%, tau2 coverage 0.74 -> 0.86) but overshoots Scotland 7 keys
# (+7.1% and +5.1% at 5% and 10%, tau2 coverage 0.96 -> 0.78 and 1.00 -> 0.82) and takes
# Scotland 13 keys at 10% down (tau2 coverage 0.86 -> 0.64); on the stratified samples the
# activity keys barely move (-6.8% -> -6.5%) and Scotland 7 keys go to +22%
def sv(design, method, q, col, kind="srs"):
    return table_val(small_tab[kind], design, method, q, col)


assert sv("activity6/srs/1%", "default", "tau1", "rel_bias") == -0.092
assert sv("activity6/srs/1%", "small mass 4", "tau1", "rel_bias") == 0.029
assert sv("activity6/srs/1%", "default", "tau2", "coverage") == 0.74
assert sv("activity6/srs/1%", "small mass 4", "tau2", "coverage") == 0.86
for frac, b, c0, c4 in (("5%", 0.071, 0.96, 0.78), ("10%", 0.051, 1.0, 0.82)):
    d = f"scotland7/srs/{frac}"
    assert sv(d, "small mass 4", "tau1", "rel_bias") == b
    assert sv(d, "default", "tau1", "rel_bias") < 0  # the default sits below, a little
    assert sv(d, "default", "tau2", "coverage") == c0
    assert sv(d, "small mass 4", "tau2", "coverage") == c4
assert sv("scotland13/srs/10%", "default", "tau2", "coverage") == 0.86
assert sv("scotland13/srs/10%", "small mass 4", "tau2", "coverage") == 0.64
assert sv("activity6/stratified/1%", "default", "tau1", "rel_bias", "stratified") == -0.068
assert sv("activity6/stratified/1%", "small mass 4", "tau1", "rel_bias", "stratified") == -0.065
assert sv("scotland7/stratified/1%", "small mass 4", "tau1", "rel_bias", "stratified") == 0.221
# the mass of 1 (the inverse prior's total, centred on the marginal) at 1%: the Adult key
# sets fall (Adult 6 keys -0.3% -> -7.1%, work keys +2.1% -> -6.7%), the activity keys stay
# low (-8.4%): the marginal's shape, not only the amount, moves the estimate
assert sv("adult6/srs/1%", "default", "tau1", "rel_bias") == -0.003
assert sv("adult6/srs/1%", "small mass 1", "tau1", "rel_bias") == -0.071
assert sv("work6/srs/1%", "default", "tau1", "rel_bias") == 0.021
assert sv("work6/srs/1%", "small mass 1", "tau1", "rel_bias") == -0.067
assert sv("activity6/srs/1%", "small mass 1", "tau1", "rel_bias") == -0.084
# where the small keys' mass sets the 1% estimate the two Scotland key sets pull apart:
# no one mass serves both (Scotland 7 keys at 1%: -1.6%, +1.5%, +17.5% for the default,
# M = 1 and M = 4)
assert [sv("scotland7/srs/1%", m, "tau1", "rel_bias")
        for m in ("default", "small mass 1", "small mass 4")] == [-0.016, 0.015, 0.175]
# the README's table and sentences, the rest of their numbers
assert [sv(f"scotland7/srs/{f}", "default", "tau1", "rel_bias") for f in ("5%", "10%")] \
    == [-0.038, -0.01]
assert sv("adult6/srs/1%", "small mass 4", "tau1", "rel_bias") == -0.026
assert sv("work6/srs/1%", "small mass 4", "tau1", "rel_bias") == -0.021
assert sv("scotland7/stratified/1%", "default", "tau1", "rel_bias", "stratified") == 0.073
assert [sv("activity6/stratified/1%", m, q, "coverage", "stratified")
        for m in ("default", "small mass 4") for q in ("tau1", "tau2")] == [0.82, 0.78, 0.88, 0.9]

# %% [markdown]
# ## Two more fresh key sets, 200 samples per design: the default does not generalise to them
#
# Adult's relationship keys (age, sex, education, relationship, hours per week: two keys of
# 20 levels or more, both with a learnt mass) and Scotland's labour keys (age, sex, economic
# activity, industry, hours worked, social grade, student), held out of every choice like
# the two above, design seeds 0-3, both kinds (baselines on seed 0; about 5 min per seed
# and kind on one core for the first, 8 for the second):
#
# ```
# python benchmarks/latent_class_accuracy.py --populations 'adult6~race~marital-status~native-country+relationship+hours-per-week' --replicates 50 --seed S [--kind stratified] [--baselines ""] --csv a.csv
# python benchmarks/latent_class_accuracy.py --populations 'scotland13~Marital_Status~Country_Of_Birth~Ethnic_Group~religion~health~Family_Composition~Occupation+student' --replicates 50 --seed S [--kind stratified] [--baselines ""] --csv b.csv
# ```
#
# stored as `latent_class_50{,_stratified}_rel5{,_seed1,_seed2,_seed3}.csv.gz` and
# `latent_class_50{,_stratified}_swork7{,_seed1,_seed2,_seed3}.csv.gz`.

# %%
REL5 = "adult6~race~marital-status~native-country+relationship+hours-per-week"
SWORK7 = ("scotland13~Marital_Status~Country_Of_Birth~Ethnic_Group~religion~health"
          "~Family_Composition~Occupation+student")
# the same reading as the two fresh key sets above (fresh, fresh_val)
for name, spec in (("rel5", REL5), ("swork7", SWORK7)):
    fresh[name] = (fresh_runs(name, spec, name, range(4)), 0)
    fresh_tab[name], fresh_goal[name], fresh_z[name] = fresh_summary(*fresh[name], 200)
MORE = ("rel5", "swork7")

# what the README states. The RMSE is below every baseline's on all twelve designs, but
# the goal is met on 4 of 6 relationship-keys designs (missed at 1%: the centre high, tau2
# coverage 0.625 and 0.725) and on 2 of 6 of the labour keys' (tau1 high by 3-13% at every
# fraction, the errors of the right spread around a centre 0.4-1.2 posterior sd high; the
# simple random 1% design misses on the absolute bias, the true tau1 being about 20)
for name in MORE:
    assert fresh_goal[name][["tau1_rmse_ok", "tau2_rmse_ok"]].all().all()
r5 = fresh_goal["rel5"]
assert set(r5.index[r5.met]) == {f"rel5/{k}/{f}" for k in ("srs", "stratified")
                                 for f in ("5%", "10%")}
for kind in ("srs", "stratified"):
    d = f"rel5/{kind}/1%"
    assert 0.05 < fresh_val("rel5", d, "tau1", "bias") < 0.065
    assert 0.045 < fresh_val("rel5", d, "tau2", "bias") < 0.06
    assert fresh_z["rel5"].at[(d, "tau2"), "z_mean"] > 1.0
assert fresh_val("rel5", "rel5/srs/1%", "tau2", "coverage") == 0.625
assert fresh_val("rel5", "rel5/stratified/1%", "tau2", "coverage") == 0.725
sw = fresh_goal["swork7"]
assert set(sw.index[sw.met]) == {"swork7/stratified/1%", "swork7/stratified/10%"}
assert fresh_val("swork7", "swork7/srs/1%", "tau1", "bias") == 0.126
assert [fresh_val("swork7", f"swork7/srs/{f}", "tau1", "coverage") for f in ("5%", "10%")] \
    == [0.73, 0.655]
assert sw.tau1_bias.between(0.025, 0.135).all() and (sw.tau2_bias > 0).all()
assert fresh_z["swork7"].xs("tau1", level="quantity").z_mean.between(0.4, 1.25).all()
assert fresh_z["swork7"].z_sd.between(0.85, 1.2).all()
# the baselines (seed 0's samples) beside the default's 200: how far off, and the RMSE ratio
more_base, more_ratio = [], []
for name in MORE:
    t = fresh_tab[name].query("quantity in ['tau1', 'tau2']")
    b = t[t.method != "latent-class"]
    more_base.append(b.rel_bias.abs())
    lc = t[t.method == "latent-class"].set_index(["design", "quantity"]).rel_rmse
    more_ratio.append(b.groupby(["design", "quantity"]).rel_rmse.min() / lc)
more_base, more_ratio = pd.concat(more_base), pd.concat(more_ratio)
print("baselines |bias|", more_base.min().round(3), more_base.max().round(3),
      "| best baseline RMSE / the default's", more_ratio.min().round(1), more_ratio.max().round(1))
assert 0.15 < more_base.min() < 0.16 and 3.79 < more_base.max() < 3.81
assert 2.95 < more_ratio.min() < 3.5 and 17 < more_ratio.max() < 19
# the labour keys' cross-validated kappa at simple random 5% and 10%: median 40-57, and the
# errors barely follow it (|r| of z with log kappa below 0.15)
sw_lc = fresh["swork7"][0].query("method == 'latent-class' and quantity == 'tau1' and "
                                 "kind == 'srs'")
sw_lc = sw_lc.assign(kappa=pd.to_numeric(sw_lc.note.str.extract(r"kappa median ([0-9.e+]+)")[0]),
                     z=(sw_lc.estimate - sw_lc.truth) / ((sw_lc.hi - sw_lc.lo) / 3.29))
for frac, (lo, hi) in ((0.05, (39, 41)), (0.1, (56, 57))):
    g = sw_lc[sw_lc.fraction == frac]
    assert lo <= g.kappa.median() <= hi and abs(np.corrcoef(g.z, np.log(g.kappa))[0, 1]) < 0.15
# where the held-out designs miss, the errors' spread: 0.89-1.30 posterior sd
assert 1.25 < fresh_z["rel5"].z_sd.max() < 1.35 and 0.88 < fresh_z["swork7"].z_sd.min() < 0.9

# %% [markdown]
# ## The kappa rules on the four held-out key sets
#
# The twelve rules of "How the cross-validated kappa posterior is formed" were scored on the
# 12 designs that chose the default. Here the same rules on the four key sets held out of
# every choice (Adult's work and relationship keys, Scotland's activity and labour keys):
# the default recorded on design seed 0's 50 samples per design, both kinds (about 15-25
# min per key set and kind on one core; the records, 12 MB each, are not stored), then
# scored offline; and, on the simple random samples, kappa read again with parts fitted by
# the Gibbs sampler (`--reread`: the cross-validation alone, about 5-8 min per key set):
#
# ```
# python benchmarks/kappa_rules.py --populations WORK6 --replicates 50 [--kind K] --out w.npz
# (with --kind stratified: ws.npz; the activity, relationship and labour keys: a, r, l, as, rs, ls)
# python benchmarks/kappa_rules.py --evaluate w.npz a.npz r.npz l.npz ws.npz as.npz rs.npz ls.npz \
#     --rules RULES --per-sample t.csv --kappa-csv k.csv
# python benchmarks/kappa_rules.py --populations 'WORK6' --replicates 50 --reread w.npz \
#     --per-sample g.csv   (and the other three key sets; WORK6 etc. quoted)
# ```
#
# with WORK6 etc. the key-set specifications above and RULES the twelve rules; the rows of
# t.csv and the four g.csv are stored as `kappa_rules_50_heldout.csv.gz`, k.csv as
# `kappa_rules_50_heldout_kappa.csv.gz`.

# %%
HELDOUT_NAMES = {WORK6: "work6", ACTIVITY6: "activity6", REL5: "rel5", SWORK7: "swork7"}


def heldout_design(design):
    """<spec>/<kind>/<fraction> as <key set>/<kind>/<fraction>."""
    spec, kind, frac = design.rsplit("/", 2)
    return f"{HELDOUT_NAMES[spec]}/{kind}/{frac}"


HELD = pd.read_csv(RESULTS / "kappa_rules_50_heldout.csv.gz")
HELD["design"] = HELD.design.map(heldout_design)
held_tidy = rules_tidy(HELD)
held_summ = summarise(held_tidy).set_index(["design", "method", "quantity"])
assert held_tidy.groupby(["method"]).design.nunique().drop("default/gibbs-parts").eq(24).all()

# the records are the stored default runs' samples (each key set's seed 0): the sampler's
# own estimates agree sample by sample, but for a few 1% samples within 2% (EM's restarts)
for name in HELDOUT_NAMES.values():
    run = fresh[name][0]
    st = run[(run.seed == 0) & (run.method == "latent-class")]
    own = held_tidy[held_tidy.method == "model"].merge(
        st, on=["design", "replicate", "quantity"], suffixes=("", "_stored"))
    assert len(own) == 600, (name, len(own))  # 6 designs x 50 samples x tau1, tau2
    np.testing.assert_allclose(own.truth, own.truth_stored, rtol=1e-5)
    rel = (own.estimate / own.estimate_stored - 1).abs()
    assert rel.max() < 0.02 and (rel < 1e-5).mean() > 0.9, (name, rel.describe())
# the default rule rebuilt offline is the model's: bias to 0.001, coverage to three samples
for design in pd.unique(HELD.design):
    for q in ("tau1", "tau2"):
        m, d = held_summ.loc[(design, "model", q)], held_summ.loc[(design, "default", q)]
        assert abs(m.rel_bias - d.rel_bias) <= 0.001 and abs(m.covered - d.covered) <= 3, design

# %% [markdown]
# What the rules do there. Over the ten rules without a log-normal prior, tau1's bias moves
# by at most 0.7 point on the 5% and 10% designs and 2.2 points at 1%; no rule has more
# than one design more with both coverages in 85-95% than the default rule (9 of 24), and
# the held-out misses stay under every one: the labour keys high at 5% and 10%, the
# activity keys low at 1%, the relationship keys high at 1%. The log-normal priors learnt
# on other key sets of the same files (an office with a census) bring the relationship
# keys' 1% in and take their 5% and 10% out.

# %%
RULES12 = [r for r in pd.unique(HELD.rule) if r not in ("model", "default/gibbs-parts")]
assert len(RULES12) == 12
plain = [r for r in RULES12 if not r.startswith("log-normal")]
bias1 = held_summ.xs("tau1", level="quantity").rel_bias.unstack("method")[plain]
spread = bias1.max(axis=1) - bias1.min(axis=1)
at1 = spread.index.str.endswith("/1%")
assert spread[~at1].max() <= 0.007 and 0.02 < spread[at1].max() <= 0.022, spread
held_cal = held_summ.coverage.between(*COVERAGE_BAND).groupby(
    level=["design", "method"]).all().groupby(level="method").sum()
assert held_cal["default"] == 9 and held_cal[RULES12].max() <= 10, held_cal
for r in plain:
    b = bias1[r]
    assert min(b["swork7/srs/5%"], b["swork7/srs/10%"]) > 0.06, r
    assert b["activity6/srs/1%"] < -0.085 and b["activity6/stratified/1%"] < -0.06, r
    assert min(b["rel5/srs/1%"], b["rel5/stratified/1%"]) > 0.04, r
ln = partial(rule_vs, "log-normal:-0.444:0.837", table=held_summ)
assert ln("rel5/srs/1%", "coverage") == [(0.92, 0.8), (0.92, 0.68)]
assert ln("rel5/srs/10%", "coverage") == [(0.52, 0.82), (0.68, 0.86)]
assert ln("rel5/srs/5%", "rel_bias")[0] == (-0.034, -0.016)

# %% [markdown]
# Where kappa sits (the default rule's posterior median of log kappa against the log kappa
# at which the sample's posterior mean of tau1 meets its truth). On the labour keys the
# cross-validation reads almost no clumping at 5% and 10% (median log kappa 3.45-3.9, kappa
# 30-50) where the truth needs kappa about 1 (median oracle -0.4 to 0.04); on the activity
# keys the truth lies above tau1's mean at every finite kappa in half to three quarters of
# the samples: even Poisson cells put too few of those sample uniques alone, a miss of the
# mixture's centre that no kappa can mend (as tau2 on Adult 6 keys at 10%).

# %%
hk = pd.read_csv(RESULTS / "kappa_rules_50_heldout_kappa.csv.gz")
hk["design"] = hk.design.map(heldout_design)
assert len(hk) == 1200 and np.isfinite(hk.cv_median).all()
hkm = hk.groupby("design").agg(cv=("cv_median", "median"), oracle=("oracle", "median"),
                               above=("censored", lambda c: (c == 1).mean()))
for kind in ("srs", "stratified"):
    for f in ("5%", "10%"):
        row = hkm.loc[f"swork7/{kind}/{f}"]
        assert 3.4 < row.cv < 4.0 and -0.45 < row.oracle < 0.05, (kind, f, row)
assert hkm.filter(like="activity6", axis=0).above.between(0.5, 0.75).all()

# %% [markdown]
# Why the labour keys' cross-validation reads Poisson: each part is fitted by one EM point
# and the held-out uniques are predicted from it, while the risk averages over the Gibbs
# posterior of the whole sample. Two regimes (`python benchmarks/em_vs_gibbs.py
# --populations <key sets> --replicates 8`:
# tau1 with Poisson cells from the whole sample's EM point and from the Gibbs average, 8
# simple random samples per design of seed 0, the goal's four key sets and the four held
# out; stored as `em_vs_gibbs_8.csv.gz`). Where the EM point puts tau1 above the truth, the
# held-out uniques show clumping and kappa is read from them; where it puts tau1 below, the
# held-out count is at or above every kappa's prediction, kappa goes to Poisson, and the
# answer is the Gibbs average's with Poisson cells -- within 4% on the 5% and 10% designs
# of five key sets, but high on the labour keys and low on the activity keys at 1%.

# %%
EG = pd.read_csv(RESULTS / "em_vs_gibbs_8.csv.gz")
EG["design"] = [heldout_design(d) if d.rsplit("/", 2)[0] in HELDOUT_NAMES else d
                for d in EG.design]
eg = EG.groupby("design")[["truth1", "em_tau1", "gibbs_tau1"]].mean()
assert len(eg) == 24 and (EG.groupby("design").size() == 8).all()
eg_em, eg_gibbs = eg.em_tau1 / eg.truth1 - 1, eg.gibbs_tau1 / eg.truth1 - 1
above = {f"{p}/srs/{f}" for p in ("adult9", "scotland13") for f in ("1%", "5%", "10%")} | {
    "work6/srs/1%", "rel5/srs/1%"}
assert (eg_em[list(above)] > 0.02).all() and (eg_em.drop(list(above)) < -0.04).all(), eg_em
assert eg_em[[d for d in above if d.startswith(("adult9", "scotland13"))]].between(
    0.02, 0.24).all()
assert eg_em.drop(list(above)).min() > -0.48
fine = [f"{p}/srs/{f}" for p in ("adult6", "scotland7", "work6", "activity6", "rel5")
        for f in ("5%", "10%")]
assert eg_gibbs[fine].abs().max() < 0.04, eg_gibbs[fine]
assert eg_gibbs.filter(like="swork7").between(0.08, 0.15).all()
assert -0.12 < eg_gibbs["activity6/srs/1%"] < -0.10

# %% [markdown]
# Parts fitted by the Gibbs sampler, so that the held-out prediction averages over the
# part's posterior as the risk does (`overdispersion_cv(predictive="gibbs")`, re-read on the
# same samples), read more clumping on the labour keys and take a fifth off their bias, not
# all of it; on the other key sets they move the wrong way or little. The same setting
# through the whole model (`python
# benchmarks/latent_class_accuracy.py --populations SWORK7 --fractions 0.05 --replicates 50
# --baselines "" --cv-predictive gibbs`, and `--populations adult9 --fractions 0.01`; stored
# as `latent_class_50_cv_gibbs_parts.csv.gz`) scores as the re-read does and leaves Adult
# 9 keys at 1% where the default has it.

# %%
gp = partial(rule_vs, "default/gibbs-parts", table=held_summ)
GP_NUMBERS = {d: gp(d, "rel_bias") + gp(d, "coverage") for d in
              sorted(set(HELD.design[HELD.rule == "default/gibbs-parts"]))}
for d, v in GP_NUMBERS.items():
    print(d, "Gibbs parts vs EM parts: tau1 bias, tau2 bias, tau1 coverage, tau2 coverage",
          [tuple(float(x) for x in pair) for pair in v])
assert len(GP_NUMBERS) == 12  # the simple random designs of the four key sets
# the labour keys: a fifth of the bias off at 5% and 10%, coverage up, not in the band
assert gp("swork7/srs/1%", "rel_bias")[0] == (0.094, 0.111)
assert gp("swork7/srs/5%", "rel_bias")[0] == (0.073, 0.095)
assert gp("swork7/srs/10%", "rel_bias")[0] == (0.052, 0.063)
assert gp("swork7/srs/5%", "coverage") == [(0.82, 0.66), (0.86, 0.74)]
# elsewhere it moves the wrong way: the relationship keys at 1% higher still, the work
# keys at 5% low
assert gp("rel5/srs/1%", "rel_bias")[0] == (0.084, 0.055)
assert gp("rel5/srs/1%", "coverage") == [(0.56, 0.8), (0.3, 0.68)]
assert gp("work6/srs/5%", "rel_bias")[0] == (-0.032, -0.01)
assert gp("work6/srs/5%", "coverage")[1] == (0.74, 0.86)
srs_cal = held_summ.coverage.between(*COVERAGE_BAND).groupby(
    level=["design", "method"]).all().unstack("method")
srs_cal = srs_cal[srs_cal.index.str.contains("/srs/")].sum()
assert (srs_cal["default/gibbs-parts"], srs_cal["default"]) == (3, 5), srs_cal
# the whole model with Gibbs-fitted parts scores as the re-read (labour keys at 5%), and
# leaves Adult 9 keys at 1% where the default rule has it (tau1 +5.4%)
gibbs_run = summarise(pd.read_csv(RESULTS / "latent_class_50_cv_gibbs_parts.csv.gz"))
gibbs_run["design"] = gibbs_run.design.str.replace(SWORK7, "swork7", regex=False)
gibbs_run = gibbs_run.set_index(["design", "method", "quantity"])
for q in ("tau1", "tau2"):
    a = gibbs_run.loc[("swork7/srs/5%", "latent-class", q)]
    b = held_summ.loc[("swork7/srs/5%", "default/gibbs-parts", q)]
    assert abs(a.rel_bias - b.rel_bias) <= 0.002 and abs(a.covered - b.covered) <= 2, q
    a9 = gibbs_run.loc[("adult9/srs/1%", "latent-class", q)]
    d9 = rules_summ.loc[("adult9/srs/1%", "model", q)]
    assert abs(a9.rel_bias - d9.rel_bias) <= 0.002 and abs(a9.covered - d9.covered) <= 2, q

# %% [markdown]
# ## Which population frequencies the default gives the sample uniques
#
# tau1 counts the sample uniques with F = 1, tau2 also those of small populated cells (1/F).
# `python benchmarks/excess_shape.py --populations <key set> --fractions <f> --replicates 50
# [--kind stratified] --csv x.csv` (design seed 0's samples, the default as the harness runs
# it) sets per band of F the expected count of sample uniques and their expected sum of 1/F
# against the truth, and per sample the oracle log kappa of tau1 and of tau2 and whether the
# tau1 oracle lies in the default's 90% range of kappa; 11 designs, stored as
# `excess_shape_50.csv.gz`. The gamma's shape is not what tau2 misses (its oracle sits
# 0.04-0.14 above tau1's); it does miss at F = 2 (4-6% more sample uniques in population
# pairs); at 10% Scotland 13 keys' kappa range holds few samples' oracles (but see the next
# section: against the design's kappa it is too sharp only on stratified samples) and Adult 6
# keys' truth lies beyond every kappa.

# %%
import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "excess_shape", RESULTS.parent / "excess_shape.py")
excess_shape = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(excess_shape)
ES = pd.read_csv(RESULTS / "excess_shape_50.csv.gz")
assert (ES.groupby("design").replicate.nunique() == 50).all() and ES.design.nunique() == 11
es_bands = excess_shape.summarise(ES).set_index(["design", "band"])
es_orc = excess_shape.summarise_oracles(ES).set_index("design")
print(es_bands.count_ratio.unstack("band")[excess_shape.band_labels()].round(3))
print(es_orc.round(2))
one = ES.drop_duplicates(["design", "replicate"]).set_index("design")
gap21 = (one.oracle2 - one.oracle1).groupby(level=0)
read = ["adult9/srs/1%", "adult9/srs/5%", "adult9/srs/10%", "adult9/stratified/1%",
        "adult9/stratified/5%", "scotland13/srs/10%", "scotland13/stratified/10%"]
# (1) one kappa serves tau1 and tau2 where kappa is read: tau2's oracle a little above
assert gap21.median()[read].between(0.04, 0.14).all(), gap21.median()
assert gap21.std()[read].max() < 0.13
# the shape misses at F = 2 (more population pairs than predicted) and in larger cells
pairs = ["adult6/srs/5%", "adult9/srs/5%", "adult9/srs/10%", "adult9/stratified/5%",
         "scotland13/srs/10%", "scotland13/stratified/10%"]
ratio = es_bands.count_ratio.unstack("band")
assert ratio.loc[pairs, "2"].between(1.04, 1.06).all(), ratio["2"]
assert ratio.filter(like="adult6", axis=0)["4-5"].between(0.92, 0.93).all()
s13 = ratio.filter(like="scotland13", axis=0)
assert s13["6-10"].between(0.91, 0.94).all() and s13["11+"].between(0.79, 0.80).all()
# (2) tau2 at 10%: Scotland 13 keys short at F = 1 and F = 2 alike; kappa centred, too sharp
short = (es_bands.obs_inv - es_bands.pred_inv).unstack("band")
assert short.loc["scotland13/srs/10%", ["1", "2"]].round(1).tolist() == [15.3, 15.7]
assert short.loc["scotland13/stratified/10%", ["1", "2"]].round(1).tolist() == [19.0, 12.5]
assert es_orc.loc["scotland13/srs/10%", "cv_median"].round(2) == -1.15
assert es_orc.loc[["scotland13/srs/10%", "scotland13/stratified/10%"],
                  "oracle1"].round(2).tolist() == [-0.98, -1.12]
assert es_orc.loc[["scotland13/srs/10%", "scotland13/stratified/10%"],
                  "oracle_in_90"].tolist() == [0.78, 0.52]
half = ((one.cv_hi - one.cv_lo) / 2).groupby(level=0).median()
err_sd = (one.cv_median - one.oracle1).groupby(level=0).std()
assert half[["scotland13/srs/10%", "scotland13/stratified/10%"]].round(2).tolist() == [0.23, 0.12]
assert err_sd[["scotland13/srs/10%", "scotland13/stratified/10%"]].round(2).tolist() == [0.15, 0.16]
# Adult 6 keys at 10%: the truth above tau1's mean at every finite kappa on most samples
beyond = (one.censored1 == 1).groupby(level=0).mean()
assert beyond[["adult6/srs/10%", "adult6/stratified/10%"]].tolist() == [0.76, 0.70]
assert short.loc[["adult6/srs/10%", "adult6/stratified/10%"], "1"].round(1).tolist() == [
    12.6, 9.5]
# (3) the kappa range against the oracle where tau1 depends on kappa
assert es_orc.loc[read[:5], "oracle_in_90"].tolist() == [0.66, 0.98, 0.6, 0.68, 0.96]
below = (one.oracle1 < one.cv_lo).groupby(level=0).mean()
assert below[["adult9/srs/1%", "adult9/stratified/1%"]].tolist() == [0.3, 0.32]
assert es_orc.filter(regex="adult6|scotland7", axis=0).oracle_in_90.between(0.2, 0.32).all()

# %% [markdown]
# ## What the cross-validation's kappa reads, and what its range should hold
#
# `python benchmarks/kappa_scale.py --populations adult9 --replicates 30 --csv a.csv` (and
# `scotland13`; stored as `kappa_scale_30.csv.gz`) reads kappa per scale ratio r (parts of n/r
# records) and extrapolation e (nested subsets of the rest holding e times the part), beside
# the whole sample's EM-plug-in oracle and the stored Gibbs oracle. The read follows the part
# size more than the extrapolation; the EM plug-in needs a larger kappa than the Gibbs average
# (Jensen), a gap the parts' extra smoothing offsets at 5% but not at 1%. `kappa_rules.py
# --kappa-csv` gives each oracle's predictive noise (`kappa_rules_50_kappa_noise.csv.gz`): the
# oracle's scatter over samples is the truth's own randomness, so kappa's range should hold the
# design's kappa (the mean oracle), which it does on simple random Scotland 13 keys at 10%.

# %%
_spec = importlib.util.spec_from_file_location("kappa_scale", RESULTS.parent / "kappa_scale.py")
kappa_scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kappa_scale)
KS = pd.read_csv(RESULTS / "kappa_scale_30.csv.gz")
assert (KS.groupby("design").replicate.nunique() == 30).all() and KS.design.nunique() == 6
ks = kappa_scale.summarise(KS, pd.read_csv(RESULTS / "kappa_rules_50_kappa.csv.gz"))
ks = ks.set_index("design").round(2)
print(ks)
a5, a10, a1 = ks.loc["adult9/srs/5%"], ks.loc["adult9/srs/10%"], ks.loc["adult9/srs/1%"]
s1, s5 = ks.loc["scotland13/srs/1%"], ks.loc["scotland13/srs/5%"]
# the part size moves the read more than the extrapolation
assert [a5.r2e1, a5.r4e1, a5.r8e1] == [1.35, 1.05, 0.07]
assert round(a5.r8e1 - a5.r8e7, 2) == 0.28 and round(a10.r8e1 - a10.r8e7, 2) == 0.30
assert round(s1.r8e1 - s1.r8e7, 2) == 0.12 and round(s5.r8e1 - s5.r8e7, 2) == 0.48
# the EM plug-in needs a larger kappa than the Gibbs average
jensen = (ks.em_oracle - ks.gibbs_oracle).round(2)
assert jensen[["adult9/srs/1%", "adult9/srs/5%", "adult9/srs/10%"]].tolist() == [0.92, 0.83, 0.69]
assert jensen[["scotland13/srs/1%", "scotland13/srs/5%",
               "scotland13/srs/10%"]].tolist() == [0.30, 0.13, 0.06]
# the halves read the EM plug-in's kappa on Adult 9 keys at 5% and 10%
assert [a5.r2e1, a10.r2e1, a5.em_oracle, a10.em_oracle] == [1.35, 1.27, 1.12, 1.18]
# the default's two ratios average to the Gibbs oracle at 5%, not at 1%
assert round((a5.r4e3 + a5.r8e7) / 2, 2) == 0.31 and a5.gibbs_oracle == 0.29
assert (a1.r8e7, a1.gibbs_oracle) == (0.43, -0.68)
assert (s1.r8e7, s1.em_oracle, s1.gibbs_oracle) == (-2.26, -1.31, -1.61)
assert (a1.censored_reads, s1.censored_reads) == (0.13, 0.08)

# %%
KN = pd.read_csv(RESULTS / "kappa_rules_50_kappa_noise.csv.gz")
stored = pd.read_csv(RESULTS / "kappa_rules_50_kappa.csv.gz")
both = KN.merge(stored, on=["design", "replicate", "rule"], suffixes=("", "_stored"))
assert len(both) == len(KN) == 300
assert (both.cv_median == both.cv_median_stored).all() and (both.oracle == both.oracle_stored).all()
kn = KN[KN.censored == 0].groupby("design")
scatter = pd.DataFrame({"oracle_sd": kn.oracle.std(), "noise": kn.noise.median(),
                        "corr": kn.apply(lambda g: np.corrcoef(g.cv_median, g.oracle)[0, 1])})
print(scatter.round(3))
assert scatter.oracle_sd.round(3).between(0.085, 0.263).all()
assert scatter.noise.round(3).between(0.084, 0.268).all()
assert ((scatter.oracle_sd - scatter.noise).abs() < 0.04).all()
assert (scatter["corr"].abs() <= 0.14).all()
# against the design's kappa (the mean oracle) the default's 90% range of kappa holds
unc = one[one.censored1 == 0]
design_k = unc.oracle1.groupby(level=0).transform("mean")
holds = ((unc.cv_lo <= design_k) & (design_k <= unc.cv_hi)).groupby(level=0).mean().round(2)
assert holds[["scotland13/srs/10%", "scotland13/stratified/10%"]].tolist() == [0.90, 0.52]
assert holds[["adult9/srs/5%", "adult9/stratified/5%"]].tolist() == [0.98, 0.96]
assert holds[["adult9/srs/1%", "adult9/stratified/1%", "adult9/srs/10%"]].tolist() == [
    0.80, 0.70, 0.84]
off = (unc.cv_median - design_k).groupby(level=0).mean().round(2)
rd_sd = unc.cv_median.groupby(level=0).std().round(2)
assert (off["scotland13/srs/10%"], rd_sd["scotland13/srs/10%"]) == (-0.07, 0.12)
assert (off["scotland13/stratified/10%"], rd_sd["scotland13/stratified/10%"]) == (-0.05, 0.10)
assert off[["adult9/srs/1%", "adult9/stratified/1%"]].tolist() == [0.71, 0.83]

# %% [markdown]
# The ceiling of any kappa rule: `kappa_rules.py --evaluate a.npz s.npz --rules
# default,design-oracle1,design-oracle2 --per-sample t.csv` (stored as
# `kappa_rules_50_design_oracle.csv.gz`) puts kappa at the design's mean oracle, with no width.

# %%
_spec = importlib.util.spec_from_file_location("kappa_rules", RESULTS.parent / "kappa_rules.py")
kappa_rules = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kappa_rules)
DO = pd.read_csv(RESULTS / "kappa_rules_50_design_oracle.csv.gz")
assert DO.groupby("rule").size().to_dict() == {
    "model": 300, "default": 300, "design-oracle1": 300, "design-oracle2": 300}
do = kappa_rules.evaluate(None, None, DO).set_index(["rule", "design"]).round(3)
print(do[["bias1", "rmse1", "cover1", "bias2", "rmse2", "cover2"]])
order = ["adult9/srs/1%", "adult9/srs/5%", "adult9/srs/10%",
         "scotland13/srs/1%", "scotland13/srs/5%", "scotland13/srs/10%"]
assert do.loc["default"].rmse1[order].round(3).tolist() == [0.09, 0.021, 0.017, 0.12, 0.028, 0.017]
assert do.loc["design-oracle1"].rmse1[order].tolist() == [0.032, 0.014, 0.008, 0.035, 0.015, 0.009]
assert round(do.loc["default"].rmse1.mean(), 3) == 0.049
assert round(do.loc["design-oracle1"].rmse1.mean(), 3) == 0.019
assert do.loc["design-oracle1"].cover1[order].tolist() == [0.94, 0.94, 1.0, 0.86, 0.96, 0.98]
assert do.loc["design-oracle1"].cover2[order].tolist() == [0.76, 0.94, 1.0, 0.8, 0.96, 0.96]
assert do.loc["design-oracle2"].cover2[["adult9/srs/1%", "scotland13/srs/1%"]].tolist() == [
    0.88, 0.92]

# %% [markdown]
# Where the 1% read's scatter and offset come from. The read on eight partitions per ratio of
# each sample (`kappa_rules.py --reread a.npz --cv-predictive em --cv-splits 8 --split-csv s.csv`,
# stored as `kappa_rules_1pct_splits8.csv.gz` and `kappa_rules_1pct_splits8_samples.csv.gz`); the
# side of kappa's 90% range the design's kappa falls on (`cv_q05`, `cv_q95` of
# `kappa_rules_50_kappa_noise.csv.gz`); and the default run in the model's own world
# (`kappa_model_world.py`: on samples of a population drawn from each sample's EM fit,
# `kappa_model_world_population.csv.gz`, and on samples drawn at the sample's size,
# `kappa_model_world_50.csv.gz`).

# %%
SP = pd.read_csv(RESULTS / "kappa_rules_1pct_splits8.csv.gz")
assert (SP.groupby("design").replicate.nunique() == 50).all() and SP.split.nunique() == 8
sp = kappa_rules.split_spread(SP).set_index("design").round(2)
print(sp)
# a partition moves the read a third as much as the sample does; eight partitions keep the scatter
assert sp.within_sd.tolist() == [0.35, 0.29] and sp.between_sd.tolist() == [0.98, 0.94]
assert sp.mean_read_sd.tolist() == [0.92, 0.90]
SR = pd.read_csv(RESULTS / "kappa_rules_1pct_splits8_samples.csv.gz")
e8 = kappa_rules.evaluate(None, None, pd.concat(
    [SR, DO[(DO.rule == "default") & DO.design.str.endswith("/1%")]])).set_index(
    ["rule", "design"]).round(3)
print(e8[["bias1", "rmse1", "cover1", "cover2", "z1_sd"]])
assert e8.loc["default"].rmse1.tolist() == [0.09, 0.12]
assert e8.loc["default/em-parts/splits=8"].rmse1.tolist() == [0.09, 0.11]
assert e8.loc["default"].cover1.tolist() == [0.80, 0.94]
assert e8.loc["default/em-parts/splits=8"].cover1.tolist() == [0.84, 0.96]

# %%
TOP = float(np.log(KAPPA_GRID[np.isfinite(KAPPA_GRID)][-1]))
kq = KN[KN.censored == 0].copy()
kq["design_k"] = kq.groupby("design").oracle.transform("mean")
sides = kq.assign(below=kq.design_k < kq.cv_q05, above=kq.design_k > kq.cv_q95,
                  lower=kq.cv_median - kq.cv_q05,
                  upper=np.minimum(kq.cv_q95, TOP) - kq.cv_median).groupby("design").agg(
    below=("below", "mean"), above=("above", "mean"), lower=("lower", "median"),
    upper=("upper", "median"), read_sd=("cv_median", "std")).round(2)
print(sides)
# Adult 9 keys at 1%: the design's kappa falls below the range three times as often as the
# 5% a 90% range allows; the lower side is narrow for the read's scatter, the upper side long
assert sides.loc["adult9/srs/1%"].tolist() == [0.16, 0.04, 0.92, 3.45, 0.99]
assert sides.loc["scotland13/srs/1%"].tolist() == [0.08, 0.0, 1.61, 4.61, 0.95]
# so the default's misses there are intervals above the truth
d1 = DO[(DO.rule == "default") & (DO.design == "adult9/srs/1%")]
assert ((d1.lo1 > d1.truth1).sum(), (d1.hi1 < d1.truth1).sum()) == (9, 1)

# %%
_spec = importlib.util.spec_from_file_location("kappa_model_world",
                                               RESULTS.parent / "kappa_model_world.py")
kappa_model_world = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kappa_model_world)
MW = pd.read_csv(RESULTS / "kappa_model_world_50.csv.gz")
assert MW.groupby("design").replicate.nunique().tolist() == [50, 50]
mw = kappa_model_world.summarise(MW).set_index(["design", "kappa0"]).round(2)
print(mw)
# the real samples' reads are those of the stored records
real = MW[MW.kappa0.isna()].merge(KN, on=["design", "replicate"])
assert len(real) == 100 and np.allclose(real.read, real.cv_median, atol=1e-4)
# in the model's world the read lies below kappa0 (the EM plug-in's kappa there); the real read
# lies above the design's kappa (the posterior mean's)
assert mw.loc[("adult9/srs/1%", "0.5"), "offset"] == -0.36
assert mw.loc[("scotland13/srs/1%", "0.2"), "offset"] == -0.67
assert off[["adult9/srs/1%"]].tolist() == [0.71]
design_k1 = KN[(KN.censored == 0)].groupby("design").oracle.mean()
assert round(KN[KN.design == "scotland13/srs/1%"].cv_median.mean()
             - design_k1["scotland13/srs/1%"], 2) == 0.56
# drawn at the sample's size, the sample sizes vary with the clumping
assert mw.loc[("adult9/srs/1%", "0.5"), "read_sd"] == 0.66
assert mw.loc[("scotland13/srs/1%", "0.2"), "read_sd"] == 0.95
sim_n = MW[MW.kappa0.notna()].groupby("design").n.std().round(0)
assert sim_n.tolist() == [24.0, 50.0]
assert mw.loc[("adult9/srs/1%", "real"), "read_sd"] == 0.99
assert mw.loc[("scotland13/srs/1%", "real"), "read_sd"] == 0.95
# with a population drawn from the model, the posterior needs kappa0 and the read lies below
# it, while on the real populations it lies above the design's kappa
PW = pd.read_csv(RESULTS / "kappa_model_world_population.csv.gz")
assert PW.groupby("design").replicate.nunique().to_dict() == {
    "adult9/srs/1%": 25, "scotland13/srs/1%": 25, "adult9/srs/5%": 10, "scotland13/srs/5%": 10,
    "adult9/srs/10%": 8, "scotland13/srs/10%": 8}
pw = kappa_model_world.summarise_population(PW).set_index("design").round(2)
print(pw)
p1 = pw.loc[["adult9/srs/1%", "scotland13/srs/1%"]]
assert p1.oracle_mean.tolist() == [-0.74, -1.52] and p1.log_kappa0.tolist() == [-0.69, -1.61]
assert p1.offset.tolist() == [-0.12, -1.0] and p1.read_sd.tolist() == [0.66, 0.65]
assert pw.censored.eq(0).all()
# a calibration check of the whole procedure in its own world: the read is low everywhere
p5 = pw.loc[["adult9/srs/5%", "scotland13/srs/5%"]]
assert p5.offset.tolist() == [-0.54, -0.37]
assert p1.bias1.tolist() == [-0.02, -0.15] and p5.bias1.tolist() == [-0.04, -0.04]
assert p1.cover1.tolist() == [0.80, 0.88] and p5.cover1.tolist() == [0.85, 0.60]
p10 = pw.loc[["adult9/srs/10%", "scotland13/srs/10%"]]
assert p10.offset.tolist() == [-0.24, -0.17] and p10.bias1.tolist() == [-0.01, -0.02]
assert p10.cover1.tolist() == [0.69, 0.75]
# against the default's coverage on the real samples (the same designs, design seed 0)
assert do.loc["default"].cover1[order].tolist() == [0.80, 1.0, 0.86, 0.94, 0.94, 0.88]
# on the real samples at 5% the read sits at the oracle
assert round(KN[KN.design == "adult9/srs/5%"].cv_median.mean()
             - design_k1["adult9/srs/5%"], 2) == -0.04
assert round(KN[KN.design == "scotland13/srs/5%"].cv_median.mean()
             - design_k1["scotland13/srs/5%"], 2) == 0.06

# %%
# the same on stratified samples (new records; `kappa_rules_50_stratified_kappa_noise.csv.gz`)
KS_ = pd.read_csv(RESULTS / "kappa_rules_50_stratified_kappa_noise.csv.gz")
assert (KS_.groupby("design").replicate.nunique() == 50).all() and KS_.design.nunique() == 6
ku = KS_[KS_.censored == 0].copy()
ku["design_k"] = ku.groupby("design").oracle.transform("mean")
gs = ku.groupby("design")
strat = pd.DataFrame({
    "oracle_sd": gs.oracle.std(), "noise": gs.noise.median(),
    "offset": gs.cv_median.mean() - gs.design_k.mean(),
    "holds": gs.apply(lambda g: ((g.cv_q05 <= g.design_k) & (g.design_k <= g.cv_q95)).mean()),
    "above": gs.apply(lambda g: (g.design_k > g.cv_q95).mean()),
    "corr": gs.apply(lambda g: np.corrcoef(g.cv_median, g.oracle)[0, 1])})
gap = (strat.oracle_sd - strat.noise).abs()
strat = strat.round(2)
print(strat)
assert (gap.drop("adult9/stratified/1%") < 0.05).all()
assert round(gs.oracle.std()["adult9/stratified/1%"], 3) == 0.415
assert round(gs.noise.median()["adult9/stratified/1%"], 3) == 0.284
assert (strat["corr"].abs() <= 0.19).all()
assert strat.holds[["adult9/stratified/1%", "adult9/stratified/5%",
                    "adult9/stratified/10%"]].tolist() == [0.70, 0.96, 0.60]
assert strat.holds[["scotland13/stratified/1%", "scotland13/stratified/5%",
                    "scotland13/stratified/10%"]].tolist() == [0.94, 0.80, 0.52]
assert strat.offset[["adult9/stratified/1%", "adult9/stratified/10%"]].tolist() == [0.83, 0.28]
assert strat.loc["scotland13/stratified/10%", "above"] == 0.48

# %% [markdown]
# The default in its own world with kappa known: the same run with the Gibbs sampler's kappa
# fixed at the process's own, kappa0 (`kappa_model_world.py --population --at-kappa0`, with
# `--bootstrap 20` at 1%; stored as `kappa_model_world_k0.csv.gz`, and at 5% with the split on
# 20 further draws as `kappa_model_world_k0_5pct_split.csv.gz`), and the recorded default's
# intervals widened by the bootstrap scatter of the mixture's EM plug-in
# (`mixture_bootstrap.py`, stored as `mixture_bootstrap_50.csv.gz`; the records of Adult 6
# and Scotland 7 keys new: `kappa_rules.py --populations adult6,scotland7 --replicates 50
# --out`).

# %%
K0 = pd.read_csv(RESULTS / "kappa_model_world_k0.csv.gz")
assert K0.groupby("design", sort=False).size().to_dict() == {
    "adult9/srs/1%": 50, "scotland13/srs/1%": 50, "adult9/srs/5%": 40, "scotland13/srs/5%": 40,
    "adult9/srs/10%": 32, "scotland13/srs/10%": 32}
# the same samples and default runs as the last check, bit for bit where they overlap
_both = PW.merge(K0, on=["design", "replicate", "draw"])
assert len(_both) == 172 and (_both.est1_x == _both.est1_y).all()
assert (_both.hi2_x == _both.hi2_y).all() and (_both.read_x == _both.read_y).all()
k0 = kappa_model_world.summarise_population(K0).set_index("design").round(2)
print(k0.T)
k0_order = ["adult9/srs/1%", "adult9/srs/5%", "adult9/srs/10%",
            "scotland13/srs/1%", "scotland13/srs/5%", "scotland13/srs/10%"]
k0 = k0.loc[k0_order]
# the default in its own world: the read low, kappa0 above its 90% range far too often
assert k0.cover1.tolist() == [0.80, 0.78, 0.75, 0.88, 0.62, 0.78]
assert k0.kappa_above.tolist() == [0.12, 0.45, 0.38, 0.18, 0.65, 0.28]
assert k0.kappa_below.tolist() == [0.04, 0.0, 0.0, 0.0, 0.0, 0.06]
# with kappa0 itself the posterior is calibrated on two designs, too sharp on Adult 9 keys at
# 1% and 5% and off on Scotland 13 keys at 1% and 10%
assert k0.k0_cover1.tolist() == [0.84, 0.75, 0.94, 0.78, 0.92, 0.78]
assert k0.k0_cover2.tolist() == [0.80, 0.72, 0.91, 0.76, 0.90, 0.78]
assert k0.k0_z_sd1.tolist() == [1.34, 1.35, 0.75, 1.10, 1.05, 1.14]
assert k0.k0_z_mean1.tolist() == [0.31, 0.27, 0.16, -0.54, 0.00, 0.29]
assert k0.k0_bias1.abs().max() <= 0.01
# at 1% the split: the mixture's error of tau1's expectation is twice its posterior sd, F's
# noise is what the posterior says
k1 = k0.loc[["adult9/srs/1%", "scotland13/srs/1%"]]
assert k1.k0_param_err_sd1.tolist() == [6.26, 5.16] and k1.k0_post_sd1.tolist() == [2.82, 2.72]
assert k1.noise_z_sd1.tolist() == [1.10, 0.93]
# the uniques' pi share an error (mean over the uniques of log posterior / true pi), which
# moves with tau1's error
assert k1.k0_log_pi_err.tolist() == [0.19, 0.48] and k1.k0_log_pi_err_sd.tolist() == [0.12, 0.06]
_r = {d: np.corrcoef(g.k0_log_pi_err, g.k0_est1 - g.tau1_star)[0, 1].round(2)
      for d, g in K0[K0.design.str.endswith("/1%")].groupby("design")}
assert _r == {"adult9/srs/1%": -0.90, "scotland13/srs/1%": -0.66}
# the bootstrap of the EM plug-in sees most of that error's scatter
assert k1.em_err_sd.tolist() == [7.93, 6.42] and k1.boot_sd.tolist() == [5.85, 5.15]
assert k1.em_err_mean.tolist() == [-16.77, -28.82] and k1.boot_shift.tolist() == [16.54, 16.07]
# and it is the width the posterior lacks: the kappa0 run with the bootstrap's variance added
assert k1.k0_boot_z_sd1.tolist() == [1.02, 0.94] and k1.k0_boot_cover1.tolist() == [0.88, 0.82]
assert k1.k0_boot_z_mean1.tolist() == [0.20, -0.45]
K5 = pd.read_csv(RESULTS / "kappa_model_world_k0_5pct_split.csv.gz")
assert K5.groupby("design").size().tolist() == [20, 20]
k5 = kappa_model_world.summarise_population(K5).set_index("design").round(2).loc[
    ["adult9/srs/5%", "scotland13/srs/5%"]]
print(k5.T)
assert k5.k0_param_err_sd1.tolist() == [6.89, 12.68] and k5.k0_post_sd1.tolist() == [5.87, 8.81]
assert k5.em_err_sd.tolist() == [11.48, 17.53] and k5.boot_sd.tolist() == [9.88, 10.84]
assert k5.k0_cover1.tolist() == [0.85, 1.0]
assert k5.k0_z_sd1.tolist() == [1.18, 0.92] and k5.k0_boot_z_sd1.tolist() == [1.01, 0.81]
assert k5.k0_boot_cover1.tolist() == [0.95, 1.0]

# %%
MB = pd.read_csv(RESULTS / "mixture_bootstrap_50.csv.gz")
assert (MB.groupby("rule").size() == 600).all() and MB.rule.nunique() == 6
assert (MB.groupby("design").replicate.nunique() == 50).all() and MB.design.nunique() == 12
# its default rows are the stored default's (the same records)
_d = DO[DO.rule == "default"].merge(MB[MB.rule == "default"], on=["design", "replicate"])
assert len(_d) == 300 and (_d.lo1_x == _d.lo1_y).all() and (_d.hi2_x == _d.hi2_y).all()
mb = kappa_rules.evaluate(None, None, MB).set_index(["rule", "design"]).round(3)
print(mb[["bias1", "cover1", "cover2", "width1", "z1_sd", "z2_sd"]])


def _covers(rule, designs=order):
    c = mb.loc[rule].loc[designs]
    return list(zip(c.cover1.round(2).tolist(), c.cover2.round(2).tolist(), strict=True))


order6 = ["adult6/srs/1%", "adult6/srs/5%", "adult6/srs/10%",
          "scotland7/srs/1%", "scotland7/srs/5%", "scotland7/srs/10%"]
# tau1 . tau2 coverage per design; on Adult 6 and Scotland 7 keys (new records of the default,
# design seed 0) the bootstrap mends Adult 6 keys at 10% and over-covers where the default covers
expected_covers = {
    ("default", 9): [(0.8, 0.8), (1.0, 0.98), (0.86, 0.9), (0.94, 0.94), (0.94, 0.94), (0.88, 0.9)],
    ("default+boot1", 9): [(0.84, 0.86), (1.0, 1.0), (0.86, 0.94), (0.94, 0.94), (0.98, 0.98),
                           (0.94, 0.92)],
    ("default+boot0.5", 9): [(0.82, 0.84), (1.0, 1.0), (0.86, 0.92), (0.94, 0.94), (0.94, 0.96),
                             (0.92, 0.9)],
    ("default/average+boot1", 9): [(0.78, 0.78), (0.92, 0.84), (0.84, 0.92), (0.74, 0.8),
                                   (0.92, 0.92), (0.9, 0.88)],
    ("default", 6): [(0.92, 0.94), (0.92, 0.9), (0.8, 0.7), (0.88, 0.88), (1.0, 0.96), (0.96, 1.0)],
    ("default+boot1", 6): [(0.94, 0.94), (0.94, 1.0), (0.9, 0.86), (0.96, 0.98), (1.0, 1.0),
                           (1.0, 1.0)],
    ("default+boot0.5", 6): [(0.94, 0.94), (0.92, 0.92), (0.88, 0.8), (0.96, 0.94), (1.0, 0.98),
                             (0.98, 1.0)]}
for (rule, keys), want in expected_covers.items():
    assert _covers(rule, order if keys == 9 else order6) == want, rule
assert mb.loc[("default", "adult9/srs/1%"), ["z1_sd", "z2_sd"]].tolist() == [1.311, 1.51]
assert mb.loc[("default+boot1", "adult9/srs/1%"), ["z1_sd", "z2_sd"]].tolist() == [1.089, 1.209]
# the estimate is never moved
assert (mb.loc["default+boot1"].bias1 == mb.loc["default"].bias1).all()
# consistent with 90% (binomial test) on 7, 8 and 8 of the 12 designs
assert [int(mb.loc[r].consistent.sum()) for r in
        ("default", "default+boot0.5", "default+boot1")] == [7, 8, 8]
assert mb.loc[("default", "scotland7/srs/1%"), "width1"] == 0.892
assert mb.loc[("default+boot1", "scotland7/srs/1%"), "width1"] == 1.366

# %% [markdown]
# Where the chains start: the Gibbs sampler at kappa0 in the model's world from the sample's
# best EM fit and from EM fits of bootstrap resamples of the records (`chain_starts.py`,
# stored as `chain_starts_k0.csv.gz`), and the default with bootstrap starts on the real
# samples of design seed 0 (`latent_class_accuracy.py --init bootstrap --chains 4 --draws
# 75`, stored as `latent_class_50_bootstrap_starts_{adult,scotland}.csv.gz`).

# %%
_spec = importlib.util.spec_from_file_location("chain_starts", RESULTS.parent / "chain_starts.py")
chain_starts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chain_starts)
CS = pd.read_csv(RESULTS / "chain_starts_k0.csv.gz")
assert CS.groupby("design", sort=False).size().to_dict() == {
    "adult9/srs/1%": 50, "scotland13/srs/1%": 50, "adult9/srs/5%": 20, "scotland13/srs/5%": 20}
# the EM start with two chains is the run at kappa0 of kappa_model_world, bit for bit
_b = K0.merge(CS, on=["design", "replicate", "draw"])
assert len(_b) == 140 and np.allclose(_b.k0_est1, _b.em2_est1, rtol=1e-5, atol=0)
assert np.allclose(_b.k0_hi2, _b.em2_hi2, rtol=1e-5, atol=0)
cs = chain_starts.summarise(CS).set_index(["design", "start"]).round(2)
print(cs)
_rows = {("adult9/srs/1%", "em2"): (6.26, 2.82, 1.28, 0.84, 0.80, 1.34, 1.49),
         ("adult9/srs/1%", "bootstrap2"): (6.22, 3.71, 2.54, 0.86, 0.80, 1.30, 1.44),
         ("adult9/srs/1%", "bootstrap4"): (5.20, 4.94, 4.26, 0.86, 0.80, 1.11, 1.10),
         ("adult9/srs/1%", "bootstrap8"): (4.56, 5.15, 4.66, 0.90, 0.84, 1.04, 1.01),
         ("adult9/srs/5%", "em2"): (6.89, 5.87, 3.23, 0.85, 0.85, 1.18, 1.19),
         ("adult9/srs/5%", "bootstrap4"): (6.34, 7.38, 5.65, 0.90, 0.90, 1.03, 0.97),
         ("adult9/srs/5%", "bootstrap8"): (5.68, 8.26, 7.07, 0.90, 0.95, 1.00, 0.91),
         ("scotland13/srs/1%", "em2"): (5.16, 2.72, 0.82, 0.78, 0.76, 1.10, 1.23),
         ("scotland13/srs/1%", "bootstrap4"): (5.44, 3.71, 2.61, 0.80, 0.76, 1.11, 1.22),
         ("scotland13/srs/1%", "bootstrap8"): (5.04, 3.91, 3.06, 0.80, 0.78, 1.04, 1.12),
         ("scotland13/srs/5%", "em2"): (12.68, 8.81, 7.08, 1.00, 0.85, 0.92, 0.99),
         ("scotland13/srs/5%", "bootstrap4"): (9.81, 7.25, 5.52, 0.95, 0.85, 1.02, 1.04)}
_cols = ["ex_err_sd", "ex_post_sd", "between_sd", "cover1", "cover2", "z_sd1", "z_sd2"]
for _k, _want in _rows.items():
    assert tuple(cs.loc[_k, _cols].tolist()) == _want, (_k, cs.loc[_k, _cols].tolist())
# Scotland 13 keys at 1% keeps the mixture's offset at kappa0 whatever the start
assert cs.loc[("scotland13/srs/1%", "em2"), ["ex_err_mean", "z_mean1"]].tolist() == [-13.62, -0.54]

# %%
BS = pd.concat([pd.read_csv(RESULTS / f"latent_class_50_bootstrap_starts_{f}.csv.gz")
                for f in ("adult", "scotland")], ignore_index=True)
assert (BS.groupby("design").replicate.nunique() == 50).all() and BS.design.nunique() == 12
_def = pd.concat([pd.read_csv(RESULTS / "latent_class_50_learnt_mass_adult.csv.gz"),
                  latent[latent.population.str.startswith("scotland")]], ignore_index=True)
_def = _def[_def.method == "latent-class"]
# the same samples: the truth of every replicate agrees
_m = _def.merge(BS, on=["design", "replicate", "quantity"])
_m = _m[_m.quantity.isin(["tau1", "tau2"])]
assert len(_m) == 12 * 50 * 2 and np.allclose(_m.truth_x, _m.truth_y)
bs_cmp = pd.concat([summarise(_def).assign(start="em"), summarise(BS).assign(start="bootstrap")])
bs_cmp = bs_cmp[bs_cmp.quantity.isin(["tau1", "tau2"])].set_index(["start", "design", "quantity"])
bs_z = pd.concat([interval_errors(_def).assign(start="em"),
                  interval_errors(BS).assign(start="bootstrap")]).set_index(
    ["start", "design", "quantity"])
print(bs_cmp[["rel_bias", "coverage", "width"]].unstack("start").round(3))


def _cov(start, design):
    return tuple(bs_cmp.loc[(start, design, q), "coverage"].round(2) for q in ("tau1", "tau2"))


assert _cov("em", "adult9/srs/1%") == (0.80, 0.82) and _cov("bootstrap", "adult9/srs/1%") == (
    0.76, 0.80)
assert _cov("em", "adult6/srs/10%") == (0.80, 0.64)
assert _cov("bootstrap", "adult6/srs/10%") == (0.78, 0.72)
assert _cov("bootstrap", "scotland13/srs/5%") == (0.92, 0.96)
assert bs_z.loc[("em", "adult9/srs/1%", "tau1"), "z_sd"].round(2) == 1.37
assert bs_z.loc[("bootstrap", "adult9/srs/1%", "tau1"), "z_sd"].round(2) == 1.26
_w = bs_cmp.xs("tau1", level="quantity").width.unstack("start")
assert _w.loc["adult9/srs/1%"].round(1).tolist() == [57.5, 54.9]  # bootstrap, em
# widths within 5% of the default's everywhere: kappa's range carries the width
assert ((_w.bootstrap / _w.em - 1).abs() <= 0.05).all()
_b = (bs_cmp.xs("tau1", level="quantity").rel_bias.unstack("start") * 100).round(1)
assert _b.loc["adult9/srs/1%"].tolist() == [6.5, 5.4]
assert _b.loc["scotland7/srs/1%"].tolist() == [-3.9, -1.6]
assert ((_b.bootstrap - _b.em).abs().drop("scotland7/srs/1%") <= 1.1).all()
# coverage consistent with 90% (binomial test, tau1 and tau2): 9 of 12 with EM starts, 8 with
# bootstrap starts, on these 50 samples per design
_g = {s: band_goal(summarise(d)) for s, d in (("em", _def), ("bootstrap", BS))}
assert {s: int(((g.tau1_cover_p >= 0.05) & (g.tau2_cover_p >= 0.05)).sum())
        for s, g in _g.items()} == {"em": 9, "bootstrap": 8}

# %% [markdown]
# Can one sample see its kappa read's scatter? The default's cross-validation on half-samples
# (`kappa_halves.py`, stored as `kappa_halves.csv.gz`), and the recorded default's kappa
# posterior widened by the half reads' scatter, scored per sample (`--evaluate ...
# --per-sample`, stored as `kappa_halves_scored.csv.gz`).

# %%
_spec = importlib.util.spec_from_file_location("kappa_halves", RESULTS.parent / "kappa_halves.py")
kappa_halves = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kappa_halves)
KH = pd.read_csv(RESULTS / "kappa_halves.csv.gz")
kh = kappa_halves.summarise(KH).set_index("design").round(2)
print(kh)
assert kh.samples.to_dict() == {d: (50 if d in ("adult9/srs/1%", "scotland13/srs/1%") else 25)
                                for d in kh.index}
_sd = {d: (kh.loc[d, "between_sd_mean"], kh.loc[d, "within_sd_mean"]) for d in kh.index}
assert _sd["adult9/srs/1%"] == (1.11, 0.95) and _sd["scotland13/srs/1%"] == (1.14, 1.06)
assert _sd["scotland13/srs/5%"] == (0.19, 0.41) and _sd["scotland13/srs/10%"] == (0.10, 0.20)
_ratio = {d: b / a for d, (a, b) in _sd.items()}
assert all(1 / 1.5 <= r <= 1.5 for d, r in _ratio.items() if not d.startswith("scotland13/srs/"
                                                                          ) or d.endswith("/1%"))
KS = pd.read_csv(RESULTS / "kappa_halves_scored.csv.gz")
# its default rows are the recorded default's (mixture_bootstrap_50's, the same records)
_d = MB[MB.rule == "default"].merge(KS[KS.rule == "default"], on=["design", "replicate"])
assert len(_d) == 350 and np.allclose(_d.lo1_x, _d.lo1_y) and np.allclose(_d.hi2_x, _d.hi2_y)
ks = kappa_rules.evaluate(None, None, KS).set_index(["rule", "design"])


def _kh(rule, design):
    r = ks.loc[(rule, design)]
    return (round(r.cover1, 2), round(r.cover2, 2), round(r.z1_sd, 2))


expected_kh = {
    "adult9/srs/1%": [(0.80, 0.80, 1.31), (0.94, 0.96, 0.92), (0.94, 0.94, 1.06)],
    "adult9/srs/5%": [(1.00, 0.96, 0.70), (1.00, 1.00, 0.44), (1.00, 1.00, 0.52)],
    "adult9/srs/10%": [(0.84, 0.92, 0.92), (1.00, 1.00, 0.67), (0.96, 1.00, 0.76)],
    "scotland13/srs/1%": [(0.94, 0.94, 1.14), (0.98, 0.98, 0.76), (0.96, 0.96, 0.91)],
    "scotland13/srs/5%": [(0.96, 0.96, 0.87), (1.00, 1.00, 0.48), (1.00, 1.00, 0.58)],
    "scotland13/srs/10%": [(0.92, 0.88, 0.92), (1.00, 0.96, 0.57), (0.96, 0.92, 0.67)]}
for _design, _want in expected_kh.items():
    assert [_kh(r, _design) for r in ("default", "halves-design1", "halves-design0.5")] == _want, (
        _design)
# on Adult 6 and Scotland 7 keys the coverage does not move, widths grow by at most 13%
for _design in [d for d in ks.loc["default"].index if d.startswith(("adult6", "scotland7"))]:
    for _rule in ("halves-design1", "halves-design0.5"):
        assert _kh(_rule, _design)[:2] == _kh("default", _design)[:2]
        assert ks.loc[(_rule, _design), "width1"] <= 1.13 * ks.loc[("default", _design), "width1"]
# Adult 9 keys at 1%: bias and RMSE fall as well
_k3 = ks.round(3)
assert _k3.loc[("default", "adult9/srs/1%"), ["bias1", "rmse1"]].tolist() == [0.054, 0.09]
assert _k3.loc[("halves-design1", "adult9/srs/1%"), ["bias1", "rmse1"]].tolist() == [0.039, 0.082]
assert _k3.loc[("halves-design1", "scotland13/srs/1%"), "rmse1"] == 0.109

# %% [markdown]
# ### Why the kappa likelihood is too sharp: the held-out failures come in pairs
#
# `cv_pairs.py --index` (failures per partition and their clumping index rho on the
# harness's samples, no fitting; stored as `cv_pairs_index.csv.gz`) and `--model-world`
# (the likelihood's standardised discrepancy z at kappa0 on samples drawn from each real
# sample's EM fit; stored as `cv_pairs_model_world.csv.gz`).

# %%
_spec = importlib.util.spec_from_file_location("cv_pairs", RESULTS.parent / "cv_pairs.py")
cv_pairs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cv_pairs)
CPI = cv_pairs.summarise_index(pd.read_csv(RESULTS / "cv_pairs_index.csv.gz")).set_index(
    "design")
print(CPI.round(2).to_string())
assert len(CPI) == 24
# what the README states: rho 2.00-2.10 for quarters and 2.00-2.95 for eighths on all 24
# designs; Adult 9 keys at 1%: 12.12 and 15.25 failures per partition
assert round(CPI.rho4.min(), 2) == 2.0 and round(CPI.rho4.max(), 2) == 2.1
assert round(CPI.rho8.min(), 2) == 2.0 and round(CPI.rho8.max(), 2) == 2.95
assert tuple(CPI.loc["adult9/srs/1%", ["failures4", "failures8"]].round(2)) == (12.12, 15.25)
CPZ = cv_pairs.summarise_z(pd.read_csv(RESULTS / "cv_pairs_model_world.csv.gz"))
CPZ = CPZ.set_index(["design", "ratio"]).round(2)
print(CPZ.to_string())
expected_cpz = {  # design: (z mean, z sd, z sd within a sample) for quarters, eighths
    "adult9/srs/1%": [(-2.08, 1.68, 1.65), (-0.99, 1.52, 1.32)],
    "scotland13/srs/1%": [(-0.99, 1.49, 1.4), (-2.79, 1.7, 1.63)],
    "adult9/srs/5%": [(-0.15, 0.87, 1.01), (-4.47, 1.71, 1.83)],
    "scotland13/srs/5%": [(-1.55, 1.89, 1.74), (-3.97, 2.94, 2.98)],
    "adult9/srs/10%": [(-0.89, 1.34, 1.44), (-3.0, 1.68, 1.72)],
    "scotland13/srs/10%": [(-2.1, 1.46, 1.18), (-3.15, 1.83, 1.28)]}
for _design, _want in expected_cpz.items():
    assert [tuple(CPZ.loc[(_design, r), ["z_mean", "z_sd", "z_sd_within"]])
            for r in (4, 8)] == _want, _design
# too sharp (within-sample sd above 1.25) on 10 of the 12; at 1% within 0.25 of sqrt(rho)
assert (CPZ.z_sd_within > 1.25).sum() == 10
for _design in ("adult9/srs/1%", "scotland13/srs/1%"):
    for r in (4, 8):
        assert abs(CPZ.loc[(_design, r), "z_sd_within"]
                   - np.sqrt(CPI.loc[_design, f"rho{r}"])) < 0.25, (_design, r)

# %% [markdown]
# ### The held-out count's variance at every kappa (options, measured)
#
# `--cv-dispersion parts-kappa-quasi` (the Bernoulli variance at every kappa),
# `parts-kappa` (with the normal's normalising term) and `parts-kappa-quasi` with
# `--cv-combine-ratios average`, on design seed 0's simple random samples of Adult 9 and
# Scotland 13 keys at 1% and 5%, against the default on the same samples; stored together
# as `latent_class_50_cv_dispersion_kappa.csv.gz` (column `variant`).

# %%
CVK = pd.read_csv(RESULTS / "latent_class_50_cv_dispersion_kappa.csv.gz")
# the default's runs: Adult's learnt-mass file, Scotland's (no key of 20 levels) the first
_cvk_default = pd.concat([pd.read_csv(RESULTS / "latent_class_50_learnt_mass_adult.csv.gz"),
                          latent.query("population in ['scotland7', 'scotland13']")],
                         ignore_index=True).query("method == 'latent-class'")
_runs = {"default": _cvk_default, **{v: g.drop(columns="variant")
                                     for v, g in CVK.groupby("variant")}}
for _v, _g in _runs.items():  # the same samples as the default's
    _pair = _g.merge(_cvk_default, on=["design", "replicate", "quantity"])
    assert len(_pair) == len(_g) and np.allclose(_pair.truth_x, _pair.truth_y,
                                                 equal_nan=True), _v
assert _runs["parts-kappa-quasi"].design.nunique() == 12 == _cvk_default.design.nunique()
_cvk_designs = ["adult9/srs/1%", "adult9/srs/5%", "scotland13/srs/1%", "scotland13/srs/5%"]
cvk = {v: band_goal(summarise(g)).set_index("design") for v, g in _runs.items()}


def _cvk_cell(v, design):
    g = cvk[v].loc[design]
    return (round(g.tau1_bias, 3), round(g.tau2_bias, 3), g.tau1_coverage, g.tau2_coverage)


for _v in cvk:
    print(_v, {d: _cvk_cell(_v, d) for d in _cvk_designs})
# what the README states (benchmarks/README.md, "The held-out count's variance at every kappa")
expected_cvk = {
    "default": [(0.054, 0.03, 0.8, 0.82), (-0.001, -0.006, 0.98, 0.98),
                (0.055, 0.021, 0.94, 0.94), (0.008, -0.0, 0.94, 0.9)],
    "parts-kappa-quasi": [(0.046, 0.024, 0.88, 0.9), (-0.002, -0.007, 1.0, 0.98),
                          (0.048, 0.016, 0.94, 0.96), (0.008, -0.001, 0.98, 1.0)],
    "parts-kappa": [(0.056, 0.031, 0.88, 0.9), (-0.002, -0.006, 1.0, 0.98),
                    (0.059, 0.025, 0.96, 0.96), (0.011, 0.001, 1.0, 1.0)],
    "parts-kappa-quasi/average": [(0.05, 0.027, 0.82, 0.82), (-0.006, -0.01, 0.9, 0.84),
                                  (0.049, 0.018, 0.9, 0.92), (0.006, -0.002, 0.96, 0.96)]}
for _v, _want in expected_cvk.items():
    assert [_cvk_cell(_v, d) for d in _cvk_designs] == _want, _v
# over all 12 simple random designs of the seed: the goal met on 7 by default and on 5 with
# the quasi-likelihood, coverage consistent with 90% on 9 for both; it brings in Adult 9 keys
# at 1% and takes out Scotland 13 keys at 1% (tau2 0.96) and 5% and Adult 9 keys at 10%
# (0.84); Scotland 13 keys at 10% goes from 0.90 . 0.86 to 0.94 . 0.94
_met = {v: (int(cvk[v].met.sum()), int(((cvk[v].tau1_cover_p >= 0.05)
                                        & (cvk[v].tau2_cover_p >= 0.05)).sum()))
        for v in ("default", "parts-kappa-quasi")}
assert _met == {"default": (7, 9), "parts-kappa-quasi": (5, 9)}
_in = {v: set(cvk[v].index[cvk[v].met]) for v in _met}
assert _in["parts-kappa-quasi"] - _in["default"] == {"adult9/srs/1%"}
assert _in["default"] - _in["parts-kappa-quasi"] == {
    "scotland13/srs/1%", "scotland13/srs/5%", "adult9/srs/10%"}
assert cvk["parts-kappa-quasi"].loc["scotland13/srs/10%", ["tau1_coverage",
                                                           "tau2_coverage"]].tolist() == [
    0.94, 0.94]
_dense = [d for d in cvk["default"].index if d.startswith(("adult6", "scotland7"))]
_moves = (cvk["parts-kappa-quasi"].loc[_dense, ["tau1_coverage", "tau2_coverage"]]
          - cvk["default"].loc[_dense, ["tau1_coverage", "tau2_coverage"]]).abs()
assert len(_dense) == 6 and round(float(_moves.max().max()), 2) == 0.06
_zk = {v: interval_errors(g).set_index(["design", "quantity"]).z_sd.round(2)
       for v, g in _runs.items()}
assert (_zk["default"][("adult9/srs/1%", "tau1")], _zk["parts-kappa-quasi"][
    ("adult9/srs/1%", "tau1")]) == (1.37, 1.06)
assert [_zk["parts-kappa-quasi/average"][("adult9/srs/5%", q)] for q in ("tau1", "tau2")] == [
    0.99, 0.98]
# %% [markdown]
# ### How long the Gibbs chains take to settle: design seed 0 at 2,000 tuning sweeps
#
# The default's 50 simple random samples per design of design seed 0 refitted with the
# 2,000 tuning sweeps `sdcbayes assess` now runs (`--tune 2000`; stored as
# `latent_class_50_tune2000_{adult,scotland}.csv.gz`), against the same samples at the
# harness's 100 (`_cvk_default` above): per design, bias and coverage at each, the paired
# shift of the estimates (2,000 minus 100, over the mean truth) with its standard error.

# %%
T2000 = pd.concat([pd.read_csv(RESULTS / f"latent_class_50_tune2000_{f}.csv.gz")
                   for f in ("adult", "scotland")], ignore_index=True)
T2000 = T2000[T2000.method == "latent-class"]
_tp = T2000.merge(_cvk_default, on=["design", "replicate", "quantity"],
                  suffixes=("_2000", "_100"))
assert T2000.design.nunique() == 12 and len(_tp) == len(T2000)
assert np.allclose(_tp.truth_2000, _tp.truth_100, equal_nan=True)  # the same samples


def tune_shift(pairs):
    """Per design and quantity: bias and coverage at 100 and 2,000 sweeps, the paired
    shift of the estimates over the mean truth and its standard error, and the ratio
    of mean interval widths."""
    rows = []
    for (d, q), g in pairs[pairs.quantity.isin(["tau1", "tau2"])].groupby(
            ["design", "quantity"], sort=False):
        t = g.truth_2000.mean()
        shift = (g.estimate_2000 - g.estimate_100) / t
        row = {"design": d, "quantity": q, "shift": shift.mean(),
               "shift_se": shift.std(ddof=1) / np.sqrt(len(g)),
               "width_ratio": (g.hi_2000 - g.lo_2000).mean() / (g.hi_100 - g.lo_100).mean(),
               "seconds_100": g.time_s_100.mean(), "seconds_2000": g.time_s_2000.mean()}
        for s in ("100", "2000"):
            row[f"bias_{s}"] = (g[f"estimate_{s}"] - g[f"truth_{s}"]).mean() / t
            row[f"coverage_{s}"] = ((g[f"lo_{s}"] <= g[f"truth_{s}"])
                                    & (g[f"truth_{s}"] <= g[f"hi_{s}"])).mean()
        rows.append(row)
    return pd.DataFrame(rows)


tshift = tune_shift(_tp)
print(tshift.round(3).to_string(index=False))
t2000_goal = band_goal(summarise(T2000)).set_index("design")
print("goal (bias and coverage) met at 2,000:", int(t2000_goal.met.sum()), "of 12; at 100:",
      int(cvk["default"].met.sum()))
_t1 = tshift[tshift.quantity == "tau1"].set_index("design")
_t2 = tshift[tshift.quantity == "tau2"].set_index("design")
# what benchmarks/README.md states ("How long the Gibbs chains take to settle")
assert _t1["shift"].round(3).to_dict() == {
    "adult9/srs/1%": -0.005, "adult9/srs/5%": -0.008, "adult9/srs/10%": -0.005,
    "adult6/srs/1%": -0.013, "adult6/srs/5%": -0.013, "adult6/srs/10%": 0.003,
    "scotland13/srs/1%": -0.013, "scotland13/srs/5%": -0.007, "scotland13/srs/10%": -0.005,
    "scotland7/srs/1%": 0.012, "scotland7/srs/5%": 0.006, "scotland7/srs/10%": 0.002}
# down on 8 of 12 designs, by more than two paired standard errors on 7 of them
_down = _t1[_t1["shift"] < 0]
assert len(_down) == 8 and int((_down["shift"] < -2 * _down.shift_se).sum()) == 7
assert float(_t2["shift"].abs().max().round(3)) == 0.009
assert {d: (_t1.loc[d, "coverage_2000"], _t2.loc[d, "coverage_2000"]) for d in (
    "adult9/srs/1%", "adult9/srs/5%", "adult6/srs/10%", "scotland13/srs/10%")} == {
    "adult9/srs/1%": (0.82, 0.86), "adult9/srs/5%": (0.96, 0.96),
    "adult6/srs/10%": (0.8, 0.72), "scotland13/srs/10%": (0.84, 0.84)}
assert float((tshift.coverage_2000 - tshift.coverage_100).abs().max().round(2)) == 0.08
_cons = {s: int(sum((_t1[f"coverage_{s}"].apply(lambda c: coverage_p_value(round(c * 50), 50))
                     >= 0.05) & (_t2[f"coverage_{s}"].apply(
                         lambda c: coverage_p_value(round(c * 50), 50)) >= 0.05)))
         for s in ("100", "2000")}
print("coverage consistent with 90% (both quantities, p >= 0.05):", _cons)
assert _cons == {"100": 9, "2000": 10}
# the 85-95% band (bias and coverage parts of the goal, no baselines in these runs): 3 of
# 12 at 2,000 against 7 at 100 -- coverage moving by one to four samples of 50 across the
# band's edges (Adult 6 keys at 5%, Scotland 13 keys at 5% and 10%, Scotland 7 keys at 1%)
assert int(t2000_goal.met.sum()) == 3 and int(cvk["default"].met.sum()) == 7
assert set(t2000_goal.index[t2000_goal.met]) == {"adult9/srs/10%", "adult6/srs/1%",
                                                  "scotland13/srs/1%"}

# %% [markdown]
# The same Gibbs sampler with log(1 - V) drawn in logs where alpha + the later classes'
# records fall below 0.2 (`_stick_fractions`; `latent_class_20_tune2000_alpha_exact_1pct`,
# the first 20 samples of Adult 6, Adult 9 and Scotland 7 keys at 1%, where such sweeps
# occur), and with the learnt mass's grid ended at 2^17 (`--phi-mass-top 17`;
# `latent_class_15_tune2000_mass_top17_adult{9,6}`), against the runs above.

# %%
_alpha = pd.read_csv(RESULTS / "latent_class_20_tune2000_alpha_exact_1pct.csv.gz")
_top = pd.concat([pd.read_csv(RESULTS / f"latent_class_15_tune2000_mass_top17_{p}.csv.gz")
                  for p in ("adult9", "adult6")], ignore_index=True)


def _paired(run):
    # tune_shift's "_2000" is the run given, its "_100" the 2,000-sweep runs above
    pairs = run[run.method == "latent-class"].merge(T2000, on=["design", "replicate",
                                                               "quantity"],
                                                    suffixes=("_2000", "_100"))
    assert np.allclose(pairs.truth_2000, pairs.truth_100, equal_nan=True)
    return tune_shift(pairs).set_index(["design", "quantity"])


_pa, _pt = _paired(_alpha), _paired(_top)
print(_pa[["shift", "shift_se"]].round(4), _pt[["shift", "shift_se"]].round(4), sep="\n")
# the exact alpha: no design moves by more than two standard errors, nor by half a point
assert (_pa["shift"].abs() < 2 * _pa.shift_se).all() and (_pa["shift"].abs() < 0.005).all()
# the grid's end: Adult 9 keys at 10% and Adult 6 keys at 10% bit for bit the same draws,
# at 1% and 5% within half a point
assert (_pt.loc[["adult9/srs/10%", "adult6/srs/10%"], "shift"] == 0).all()
assert (_pt["shift"].abs() < 0.005).all()

# %% [markdown]
# The grid's end at 2^20, weighed as a default: the first 15 samples of Adult 6 and Adult 9
# keys at 1% and 5% (`--phi-mass-top 20`; `latent_class_15_tune2000_mass_top20_adult`)
# against the stored runs (at 1% the exact-alpha ones), and 10 household samples of the
# synthetic census at 5% and 10% with the grid ending at 2^13 and at 2^20
# (`latent_class_10_tune2000_household{,_mass_top20}`).

# %%
_top20 = pd.read_csv(RESULTS / "latent_class_15_tune2000_mass_top20_adult.csv.gz")
_ref = pd.concat([_alpha, T2000]).query("method == 'latent-class'").drop_duplicates(
    ["design", "replicate", "quantity"], keep="first")  # the exact-alpha runs first, at 1%
_p20 = _top20[_top20.method == "latent-class"].merge(
    _ref, on=["design", "replicate", "quantity"], suffixes=("_2000", "_100"))
assert len(_p20) == len(_top20) and _p20.design.nunique() == 4
assert np.allclose(_p20.truth_2000, _p20.truth_100, equal_nan=True)
_t20 = tune_shift(_p20).set_index(["design", "quantity"])
print(_t20[["shift", "shift_se", "bias_100", "bias_2000"]].round(4))
# Adult: no design moves by more than two standard errors or half a point
assert (_t20["shift"].abs() < 2 * _t20.shift_se).all() and (_t20["shift"].abs() < 0.005).all()
_same = (_p20.estimate_2000 == _p20.estimate_100).groupby(_p20.design).mean().round(2)
assert _same.to_dict() == {"adult6/srs/1%": 0.0, "adult6/srs/5%": 0.8, "adult9/srs/1%": 0.0,
                           "adult9/srs/5%": 0.4}
_hh = {t: pd.read_csv(RESULTS / f"latent_class_10_tune2000_household{sfx}.csv.gz")
       for t, sfx in (("13", ""), ("20", "_mass_top20"))}
_ph = _hh["20"].merge(_hh["13"], on=["design", "replicate", "quantity"],
                      suffixes=("_2000", "_100"))  # tune_shift's "_100": the grid to 2^13
assert len(_ph) == len(_hh["20"]) == 120
assert np.allclose(_ph.truth_2000, _ph.truth_100, equal_nan=True)
_th = tune_shift(_ph).set_index(["design", "quantity"])
print(_th[["shift", "shift_se", "bias_100", "bias_2000", "coverage_100", "coverage_2000",
           "width_ratio"]].round(4))
# households: tau1 up by 1.1 and 0.5 points (towards the truth), more than two standard errors
_h1 = _th.xs("tau1", level="quantity")
assert _h1["shift"].round(3).to_dict() == {"synthetic/household/10%": 0.005,
                                           "synthetic/household/5%": 0.011}
assert (_h1["shift"] > 2 * _h1.shift_se).all()
assert _h1.bias_100.round(3).to_dict() == {"synthetic/household/10%": -0.053,
                                           "synthetic/household/5%": -0.091}
assert _h1.bias_2000.round(3).to_dict() == {"synthetic/household/10%": -0.048,
                                            "synthetic/household/5%": -0.081}

# %% [markdown]
# And on two held-out key sets with hours per week (96 levels): Adult's work keys and
# relationship keys, 10 samples per fraction, both grids
# (`latent_class_10_tune2000_heldout_adult{,_mass_top20}`).

# %%
_ho = {t: pd.read_csv(RESULTS / f"latent_class_10_tune2000_heldout_adult{sfx}.csv.gz")
       for t, sfx in (("13", ""), ("20", "_mass_top20"))}
for _t, _r in _ho.items():
    _r["design"] = _r.design.str.replace(WORK6, "work6", regex=False).str.replace(
        REL5, "rel5", regex=False)
_pho = _ho["20"].merge(_ho["13"], on=["design", "replicate", "quantity"],
                       suffixes=("_2000", "_100"))  # tune_shift's "_100": the grid to 2^13
assert len(_pho) == len(_ho["20"]) == 360 and _pho.design.nunique() == 6
assert np.allclose(_pho.truth_2000, _pho.truth_100, equal_nan=True)
_tho = tune_shift(_pho).set_index(["design", "quantity"])
print(_tho[["shift", "shift_se", "bias_100", "bias_2000"]].round(4))
# at 5% and 10% the same draws bit for bit; at 1% tau1 -0.8 (0.8) and +1.4 (0.5) points
_same_ho = (_pho.estimate_2000 == _pho.estimate_100).groupby(_pho.design).mean()
assert (_same_ho[~_same_ho.index.str.endswith("/1%")] == 1).all()
assert (_same_ho[_same_ho.index.str.endswith("/1%")] == 0).all()
assert {d: round(100 * _tho.loc[(d, "tau1"), "shift"], 1) for d in ("work6/srs/1%",
                                                                    "rel5/srs/1%")} == {
    "work6/srs/1%": -0.8, "rel5/srs/1%": 1.4}

# %% [markdown]
# And on household samples of the held-out synthetic EU-SILC (age in 99 values), with and
# without the one-person households, 30 samples per design, both grids
# (`latent_class_30_tune2000_household_eusilc{,_mass_top20}`). The grid to 2^20 is not
# adopted: it moves tau1 by less than 1.8 points either way there.

# %%
_eu = {t: pd.read_csv(RESULTS / f"latent_class_30_tune2000_household_eusilc{sfx}.csv.gz")
       for t, sfx in (("13", ""), ("20", "_mass_top20"))}
_peu = _eu["20"].merge(_eu["13"], on=["design", "replicate", "quantity"],
                       suffixes=("_2000", "_100"))  # tune_shift's "_100": the grid to 2^13
assert len(_peu) == len(_eu["20"]) == len(_eu["13"]) and _peu.design.nunique() == 6
assert (_peu.groupby("design").replicate.nunique() == 30).all()
assert np.allclose(_peu.truth_2000, _peu.truth_100, equal_nan=True)  # the same samples
_teu = tune_shift(_peu).set_index(["design", "quantity"])
print(_teu[["shift", "shift_se", "bias_100", "bias_2000", "coverage_100", "coverage_2000",
            "width_ratio"]].round(4))
_e1 = _teu.xs("tau1", level="quantity")
# what benchmarks/README.md states: tau1's shift (standard error) in points, and the biases
assert {d: (round(100 * _e1.at[d, "shift"], 2), round(100 * _e1.at[d, "shift_se"], 2))
        for d in _e1.index} == {
    "eusilc/household/1%": (-1.75, 0.58), "eusilc/household/5%": (0.08, 0.28),
    "eusilc/household/10%": (-0.02, 0.02), "eusilc-multi/household/1%": (-1.40, 1.03),
    "eusilc-multi/household/5%": (0.21, 0.16), "eusilc-multi/household/10%": (0.69, 0.22)}
assert (_teu["shift"].abs() < 0.018).all()  # under 1.8 points, on either quantity
assert {d: (round(100 * _e1.at[d, "bias_100"], 1), round(100 * _e1.at[d, "bias_2000"], 1))
        for d in _e1.index} == {
    "eusilc/household/1%": (5.1, 3.4), "eusilc/household/5%": (51.6, 51.7),
    "eusilc/household/10%": (42.2, 42.2), "eusilc-multi/household/1%": (-45.5, -46.9),
    "eusilc-multi/household/5%": (3.5, 3.7), "eusilc-multi/household/10%": (11.5, 12.2)}
_t1eu = _peu[_peu.quantity == "tau1"]
_same_eu = (_t1eu.estimate_2000 == _t1eu.estimate_100).groupby(_t1eu.design).sum()
assert _same_eu.to_dict() == {"eusilc-multi/household/1%": 0, "eusilc-multi/household/10%": 1,
                              "eusilc-multi/household/5%": 0, "eusilc/household/1%": 0,
                              "eusilc/household/10%": 28, "eusilc/household/5%": 0}
# towards the truth on 1 of the 6 designs by more than two standard errors, away on 1
_toward = (_e1.bias_2000.abs() < _e1.bias_100.abs()) & (_e1["shift"].abs() > 2 * _e1.shift_se)
_away = (_e1.bias_2000.abs() > _e1.bias_100.abs()) & (_e1["shift"].abs() > 2 * _e1.shift_se)
assert sorted(_e1.index[_toward]) == ["eusilc/household/1%"]
assert sorted(_e1.index[_away]) == ["eusilc-multi/household/10%"]

# %% [markdown]
# ### How long the Gibbs chains take to settle: stratified samples at 2,000 tuning sweeps
#
# The default's 50 stratified samples per design of design seed 0 refitted with `--tune
# 2000` (`python benchmarks/latent_class_accuracy.py --kind stratified --populations
# adult9,adult6 --replicates 50 --seed 0 --baselines "" --tune 2000`, and `scotland13,scotland7`,
# one process each; stored as `latent_class_50_stratified_tune2000_{adult,scotland}.csv.gz`),
# against the same samples at the harness's 100 (the stratified runs of "The default over 200
# replicates per design", design seed 0).

# %%
S2000 = pd.concat([pd.read_csv(RESULTS / f"latent_class_50_stratified_tune2000_{f}.csv.gz")
                   for f in ("adult", "scotland")], ignore_index=True)
S2000 = S2000[S2000.method == "latent-class"]
_s100 = d_runs["stratified"][0].query("method == 'latent-class'")
_sp = S2000.merge(_s100, on=["design", "replicate", "quantity"], suffixes=("_2000", "_100"))
assert S2000.design.nunique() == 12 and len(_sp) == len(S2000)
assert (S2000.groupby("design").replicate.nunique() == 50).all()
assert np.allclose(_sp.truth_2000, _sp.truth_100, equal_nan=True)  # the same samples
sshift = tune_shift(_sp)
print(sshift.round(3).to_string(index=False))
s2000_goal = band_goal(summarise(S2000)).set_index("design")
_s1 = sshift[sshift.quantity == "tau1"].set_index("design")
_s2 = sshift[sshift.quantity == "tau2"].set_index("design")
_scons = {s: sorted(d for d in _s1.index
                    if coverage_p_value(round(_s1.at[d, f"coverage_{s}"] * 50), 50) >= 0.05
                    and coverage_p_value(round(_s2.at[d, f"coverage_{s}"] * 50), 50) >= 0.05)
          for s in ("100", "2000")}
s100_goal = band_goal(summarise(_s100)).set_index("design")
_sband = {"100": sorted(s100_goal.index[s100_goal.met]),
          "2000": sorted(s2000_goal.index[s2000_goal.met])}
print("coverage consistent with 90% (both quantities, p >= 0.05):",
      {s: len(v) for s, v in _scons.items()}, _scons["2000"])
print("85-95% band and |bias| <= 10%:", {s: len(v) for s, v in _sband.items()}, _sband["2000"])
print("mean seconds per fit at 2,000:", _s1.seconds_2000.round(1).to_dict())


def _pct1(x):
    return f"{100 * x:+.1f}".replace("-", "−")


def tune_row(pop, frac, kind="stratified"):
    """A row of benchmarks/README.md's table: bias tau1 . tau2 and coverage at 100 -> 2,000
    sweeps, and tau1's paired shift (standard error)."""
    d = f"{pop}/{kind}/{frac}"
    t1, t2 = _s1.loc[d], _s2.loc[d]
    bias = " → ".join(f"{_pct1(t1[f'bias_{s}'])} · {_pct1(t2[f'bias_{s}'])}%"
                      for s in ("100", "2000"))
    cover = " → ".join(f"{t1[f'coverage_{s}']:.2f} · {t2[f'coverage_{s}']:.2f}"
                       for s in ("100", "2000"))
    return (f"| {LABELS[pop]} {frac} | {bias} | {cover} | "
            f"{_pct1(t1['shift'])}% ({100 * t1.shift_se:.2f}) |")


s_rows = [tune_row(p, f) for p in LABELS for f in ("1%", "5%", "10%")]
print("\n".join(s_rows))
for line in s_rows:
    assert line in readme, f"benchmarks/README.md's stratified table at 2,000 differs:\n{line}"
# what benchmarks/README.md states: tau1 lower on 11 of 12 designs (by more than two paired
# standard errors on 9); coverage consistent with 90% on 9 designs against 8, the goal's
# band (bias and coverage parts) on 7 against 5; the misses as at 100 sweeps, with tau2 on
# Scotland 13 keys at 10% lower still
_sdown = _s1[_s1["shift"] < 0]
print("down:", len(_sdown), "beyond two se:", int((_sdown["shift"] < -2 * _sdown.shift_se).sum()))
assert len(_sdown) == 11 and int((_sdown["shift"] < -2 * _sdown.shift_se).sum()) == 9
assert {s: len(v) for s, v in _scons.items()} == {"100": 8, "2000": 9}
assert {s: len(v) for s, v in _sband.items()} == {"100": 5, "2000": 7}
assert set(_s1.index) - set(_scons["2000"]) == {"adult9/stratified/1%", "adult9/stratified/5%",
                                                "scotland13/stratified/10%"}
assert float(_s2["shift"].abs().max().round(3)) == 0.014
assert float((sshift.width_ratio - 1).abs().max().round(2)) == 0.04

# %% [markdown]
# ### Twice the classes on Scotland 13 keys at 10%
#
# The first 10 samples of design seed 0 refitted at 2,000 sweeps with 30 classes (the
# default; the stored run's numbers again, bit for bit) and with 60
# (`latent_class_10_tune2000_scotland13_10pct_H{30,60}`): the fits' notes carry the classes
# occupied.

# %%
_hcl = {H: pd.read_csv(RESULTS / f"latent_class_10_tune2000_scotland13_10pct_H{H}.csv.gz")
        for H in (30, 60)}
for _H, _r in _hcl.items():
    assert (_r.design == "scotland13/srs/10%").all() and _r.replicate.nunique() == 10
# the 30-class rerun draws the stored run's numbers exactly
_st = T2000[(T2000.design == "scotland13/srs/10%") & (T2000.replicate < 10)]
_re = _hcl[30][_hcl[30].method == "latent-class"].merge(_st, on=["replicate", "quantity"])
assert len(_re) == len(_st) == 60
assert (_re.estimate_x.fillna(-1) == _re.estimate_y.fillna(-1)).all()
_ph2 = _hcl[60].merge(_hcl[30], on=["design", "replicate", "quantity"],
                      suffixes=("_2000", "_100"))  # tune_shift's "_100": 30 classes
_tcl = tune_shift(_ph2).set_index("quantity")
print(_tcl[["shift", "shift_se", "bias_100", "bias_2000", "coverage_100", "coverage_2000",
            "width_ratio", "seconds_100", "seconds_2000"]].round(4))


def _note_num(r, pattern):
    r = r[(r.method == "latent-class") & (r.quantity == "tau1")]
    return r.note.str.extract(pattern)[0].astype(float)


_occ = {H: _note_num(r, rf"classes occupied ([0-9.]+) of {H} ") for H, r in _hcl.items()}
_all = {H: _note_num(r, r"\(all in (\d+)%\)") for H, r in _hcl.items()}
_kap = {H: _note_num(r, r"kappa median ([0-9.e+]+)") for H, r in _hcl.items()}
print({H: (round(_occ[H].mean(), 1), round(_all[H].mean()), int((_all[H] >= 50).sum()),
           _kap[H].median()) for H in _hcl})
# what benchmarks/README.md states: 30 classes bind (29.2 occupied on average, all 30 in 65%
# of the draws, in at least half on 7 of the 10 samples: the TruncationWarning's case); with
# 60, 45.0 occupied and never all; tau1 and tau2 do not move; the intervals narrow by 10%
# as the cross-validation reads less overdispersion; coverage falls
assert round(_occ[30].mean(), 1) == 29.2 and round(_all[30].mean()) == 65
assert int((_all[30] >= 50).sum()) == 7
assert round(_occ[60].mean(), 1) == 45.0 and (_all[60] == 0).all()
assert {q: (round(100 * _tcl.at[q, "shift"], 2), round(100 * _tcl.at[q, "shift_se"], 2))
        for q in ("tau1", "tau2")} == {"tau1": (-0.01, 0.36), "tau2": (-0.04, 0.25)}
assert {q: (round(100 * _tcl.at[q, "bias_100"], 1), round(100 * _tcl.at[q, "bias_2000"], 1))
        for q in ("tau1", "tau2")} == {"tau1": (-1.2, -1.2), "tau2": (-1.1, -1.2)}
assert _tcl.width_ratio.round(1).tolist() == [0.9, 0.9]  # 0.905 and 0.903
assert {q: (_tcl.at[q, "coverage_100"], _tcl.at[q, "coverage_2000"])
        for q in ("tau1", "tau2")} == {"tau1": (0.9, 0.7), "tau2": (0.8, 0.7)}
assert (round(_kap[30].median(), 2), round(_kap[60].median(), 2)) == (0.36, 0.5)
assert (_kap[60] >= _kap[30].to_numpy()).mean() == 1.0  # the kappa read rises on every sample
# and over the 50 samples of the stored run: tau2's error sd 1.05%, its 90% half-width 1.9%
_s13 = T2000[(T2000.design == "scotland13/srs/10%") & (T2000.quantity == "tau2")]
assert round(100 * (_s13.estimate / _s13.truth - 1).std(), 2) == 1.05
assert round(100 * ((_s13.hi - _s13.lo) / 2 / _s13.truth).mean(), 1) == 1.9

# %% [markdown]
# ### The shipped setting on a second design seed
#
# 50 more simple random samples per design, design seed 1, fitted as `sdcbayes assess` fits
# them (2,000 tuning sweeps: `python benchmarks/latent_class_accuracy.py --populations
# adult9,adult6 --replicates 50 --seed 1 --baselines "" --tune 2000`, and
# `scotland13,scotland7`; `latent_class_50_tune2000_seed1_{adult,scotland}`), pooled with
# design seed 0's (`T2000`): 100 samples per design at the shipped setting, against the same
# 100 samples at the harness's 100 sweeps (design seeds 0 and 1 of "The default over 200
# replicates per design").

# %%
T2000_1 = pd.concat([pd.read_csv(RESULTS / f"latent_class_50_tune2000_seed1_{f}.csv.gz")
                     for f in ("adult", "scotland")], ignore_index=True)
T2000_1 = T2000_1[T2000_1.method == "latent-class"]
assert T2000_1.design.nunique() == 12
assert (T2000_1.groupby("design").replicate.nunique() == 50).all()


def second_seed(kind, runs2000):
    """Design seeds 0 and 1 at 2,000 sweeps (``runs2000``) against the same samples at
    the harness's 100 (``d_runs[kind]``): the paired rows, the goal tables, the designs
    whose coverage of both quantities is consistent with 90%, and the paired shifts."""
    pairs = []
    for s, r2000 in enumerate(runs2000):
        r100 = d_runs[kind][s].query("method == 'latent-class'")
        m = r2000.merge(r100, on=["design", "replicate", "quantity"], suffixes=("_2000", "_100"))
        assert len(m) == len(r2000)
        assert np.allclose(m.truth_2000, m.truth_100, equal_nan=True)  # the same samples
        pairs.append(m.assign(seed=s))
    pairs = pd.concat(pairs, ignore_index=True)
    # seed 1's samples are not seed 0's
    tt = pairs[pairs.quantity == "tau1"].pivot_table(index=["design", "replicate"],
                                                     columns="seed", values="truth_2000")
    assert (tt[0] != tt[1]).mean() > 0.9
    lc = {"100": [r.query("method == 'latent-class'") for r in d_runs[kind][:2]],
          "2000": list(runs2000)}
    g = {sw: band_goal(summarise(pd.concat(r, ignore_index=True)))
         for sw, r in lc.items()}
    cons = {sw: sorted(consistent_designs(x)) for sw, x in g.items()}
    g = {sw: x.set_index("design") for sw, x in g.items()}
    return pairs, g, cons, tune_shift(pairs).set_index(["design", "quantity"])


def seed_row(pop, frac, kind="srs"):
    """A row of benchmarks/README.md's table: over the 100 samples of design seeds 0 and 1,
    bias tau1 . tau2 and coverage at 100 -> 2,000 sweeps, and whether the coverage of both
    is consistent with 90% (exact binomial test, p >= 0.05)."""
    d = f"{pop}/{kind}/{frac}"
    _, g, cons, shift = SECOND_SEED[kind]
    a, b = g["100"].loc[d], g["2000"].loc[d]
    bias = " → ".join(f"{_pct1(x.tau1_bias)} · {_pct1(x.tau2_bias)}%" for x in (a, b))
    cover = " → ".join(f"{x.tau1_coverage:.2f} · {x.tau2_coverage:.2f}" for x in (a, b))
    ok = " → ".join("yes" if d in cons[sw] else "no" for sw in ("100", "2000"))
    return (f"| {LABELS[pop]} {frac} | {bias} | {cover} | {ok} | "
            f"{_pct1(shift.at[(d, 'tau1'), 'shift'])}% "
            f"({100 * shift.at[(d, 'tau1'), 'shift_se']:.2f}) |")


SECOND_SEED = {"srs": second_seed("srs", (T2000, T2000_1))}
_pairs01, _g01, _cons01, _shift01 = SECOND_SEED["srs"]


seed_rows = [seed_row(p, f) for p in LABELS for f in ("1%", "5%", "10%")]
print("\n".join(seed_rows))
_met01 = {sw: int(g.met.sum()) for sw, g in _g01.items()}
print("consistent with 90%:", {sw: len(v) for sw, v in _cons01.items()}, _cons01["2000"])
print("band and bias:", _met01, "max |bias| at 2,000:",
      _g01["2000"][["tau1_bias", "tau2_bias"]].abs().max().round(4).to_dict())
print(_g01["2000"][["tau1_cover_p", "tau2_cover_p"]].round(3))
_sh1 = _shift01.xs("tau1", level="quantity")
print("tau1 lower:", int((_sh1["shift"] < 0).sum()), "by > 2 se:",
      int((_sh1["shift"] < -2 * _sh1.shift_se).sum()),
      _sh1["shift"][_sh1["shift"] < -2 * _sh1.shift_se].round(4).to_dict())
for line in seed_rows:
    assert line in readme, f"benchmarks/README.md's second-seed table differs:\n{line}"
# what benchmarks/README.md states: tau1 lower on 9 designs, on 8 by more than two standard
# errors, by 0.5-1.5 points; every bias within 5% (tau1 +4.5% at most, tau2 2.5%);
# coverage consistent with 90% on 5 against 7 at 100 sweeps, the goal's band and bias parts
# on 5 against 6; the seeds' coverages differ by at most 0.14
_down01 = _sh1["shift"] < -2 * _sh1.shift_se
assert int((_sh1["shift"] < 0).sum()) == 9 and int(_down01.sum()) == 8
assert (_sh1["shift"][_down01].round(3).between(-0.015, -0.005)).all()
assert _g01["2000"][["tau1_bias", "tau2_bias"]].abs().max().round(3).tolist() == [0.045, 0.025]
assert {sw: len(v) for sw, v in _cons01.items()} == {"100": 7, "2000": 5}
assert _met01 == {"100": 6, "2000": 5}
assert sorted(set(_cons01["100"]) - set(_cons01["2000"])) == [
    "adult6/srs/5%", "scotland13/srs/10%", "scotland7/srs/5%"]
assert sorted(set(_cons01["2000"]) - set(_cons01["100"])) == ["scotland7/srs/10%"]
_cov_seed = (_pairs01.assign(c=(_pairs01.lo_2000 <= _pairs01.truth_2000)
                             & (_pairs01.truth_2000 <= _pairs01.hi_2000))
             .query("quantity in ['tau1', 'tau2']")
             .groupby(["design", "quantity", "seed"]).c.mean().unstack("seed"))
assert round(float((_cov_seed[0] - _cov_seed[1]).abs().max()), 2) == 0.14
_hw01 = (_pairs01.assign(hw=(_pairs01.hi_2000 - _pairs01.lo_2000) / 2 / _pairs01.truth_2000)
         .query("quantity == 'tau2'").groupby("design").hw.mean())
print("tau2 half-widths:", _hw01.round(4).to_dict())
assert [round(100 * _hw01[d], 1) for d in ("scotland13/srs/10%", "adult6/srs/5%")] == [1.8, 2.5]
# the main README's "In brief" quotes them
_brief = " ".join(readme.split())
assert "coverage is consistent with 90% on 5 of 12 against 7 on the same samples" in _brief
assert "τ2 on Adult 6 keys at 5% (0.76)" in _brief and "falls to 0.77" in _brief


# %% [markdown]
# ### Stratified samples at the shipped setting on a second design seed
#
# 50 more stratified samples per design, design seed 1, fitted at 2,000 tuning sweeps
# (`python benchmarks/latent_class_accuracy.py --kind stratified --populations adult9,adult6
# --replicates 50 --seed 1 --baselines "" --tune 2000`, and `scotland13,scotland7`;
# `latent_class_50_stratified_tune2000_seed1_{adult,scotland}`), pooled with design seed 0's
# (`S2000`), against the same 100 samples at the harness's 100 sweeps (the stratified runs of
# design seeds 0 and 1 of "The default over 200 replicates per design").

# %%
S2000_1 = pd.concat([pd.read_csv(RESULTS / f"latent_class_50_stratified_tune2000_seed1_{f}.csv.gz")
                     for f in ("adult", "scotland")], ignore_index=True)
S2000_1 = S2000_1[S2000_1.method == "latent-class"]
assert S2000_1.design.nunique() == 12
assert (S2000_1.groupby("design").replicate.nunique() == 50).all()
SECOND_SEED["stratified"] = second_seed("stratified", (S2000, S2000_1))
_sp01, _sg01, _scons01, _sshift01 = SECOND_SEED["stratified"]
s_seed_rows = [seed_row(p, f, "stratified") for p in LABELS for f in ("1%", "5%", "10%")]
print("\n".join(s_seed_rows))
_smet01 = {sw: int(g.met.sum()) for sw, g in _sg01.items()}
print("consistent with 90%:", {sw: len(v) for sw, v in _scons01.items()}, _scons01["2000"])
print("band and bias:", _smet01, "max |bias| at 2,000:",
      _sg01["2000"][["tau1_bias", "tau2_bias"]].abs().max().round(4).to_dict())
print(_sg01["2000"][["tau1_coverage", "tau1_cover_p", "tau2_coverage", "tau2_cover_p",
                     "tau1_bias", "tau2_bias"]].round(3))
_ssh1 = _sshift01.xs("tau1", level="quantity")
print("tau1 lower:", int((_ssh1["shift"] < 0).sum()), "by > 2 se:",
      int((_ssh1["shift"] < -2 * _ssh1.shift_se).sum()),
      _ssh1["shift"][_ssh1["shift"] < -2 * _ssh1.shift_se].round(4).to_dict())
_scov_seed = (_sp01.assign(c=(_sp01.lo_2000 <= _sp01.truth_2000)
                           & (_sp01.truth_2000 <= _sp01.hi_2000))
              .query("quantity in ['tau1', 'tau2']")
              .groupby(["design", "quantity", "seed"]).c.mean().unstack("seed"))
print("largest difference of the seeds' coverages:",
      round(float((_scov_seed[0] - _scov_seed[1]).abs().max()), 2),
      (_scov_seed[0] - _scov_seed[1]).abs().idxmax())
for line in s_seed_rows:
    assert line in readme, f"benchmarks/README.md's stratified second-seed table differs:\n{line}"
# what benchmarks/README.md states: every bias within about 5% (tau1 +5.0% and -4.3%, tau2
# -5.1% at most); tau1 lower on 11 designs, all by more than two standard errors, by
# 0.4-2.4 points, tau2 by at most 1.3, widths within 3%; coverage consistent with 90% on 9
# designs at both settings, the goal's band and bias parts on the same 9 against 8; gained
# Adult 9 keys at 10%, lost Scotland 13 keys at 10% (tau2 1.0% low, error sd 0.96%,
# half-width 1.6%); the seeds' coverages differ by up to 0.16
_sb = _sg01["2000"][["tau1_bias", "tau2_bias"]]
assert [round(float(x), 3) for x in (_sb.tau1_bias.max(), _sb.tau1_bias.min())] == [0.050, -0.043]
assert round(float(_sb.tau2_bias.abs().max()), 3) == 0.051
_sdown01 = _ssh1["shift"] < -2 * _ssh1.shift_se
assert int((_ssh1["shift"] < 0).sum()) == 11 and int(_sdown01.sum()) == 11
assert (_ssh1["shift"][_sdown01].round(3).between(-0.024, -0.004)).all()
assert float(_sshift01.xs("tau2", level="quantity")["shift"].abs().max().round(3)) == 0.013
assert float((_sshift01.width_ratio - 1).abs().max()) < 0.03
assert {sw: len(v) for sw, v in _scons01.items()} == {"100": 9, "2000": 9}
assert _smet01 == {"100": 8, "2000": 9}
assert sorted(_sg01["2000"].index[_sg01["2000"].met]) == _scons01["2000"]
assert sorted(set(_scons01["2000"]) - set(_scons01["100"])) == ["adult9/stratified/10%"]
assert sorted(set(_scons01["100"]) - set(_scons01["2000"])) == ["scotland13/stratified/10%"]
_s13 = (_sp01.assign(hw=(_sp01.hi_2000 - _sp01.lo_2000) / 2 / _sp01.truth_2000,
                     err=(_sp01.estimate_2000 - _sp01.truth_2000) / _sp01.truth_2000)
        .query("quantity == 'tau2' and design == 'scotland13/stratified/10%'"))
assert [round(100 * x, 2) for x in (_s13.err.mean(), _s13.err.std(), _s13.hw.mean())] == [
    -0.99, 0.96, 1.64]
assert round(float((_scov_seed[0] - _scov_seed[1]).abs().max()), 2) == 0.16
# the main README's "In brief" and model catalogue quote them
assert "coverage consistent with 90% on 9 of 12 as at 100 sweeps, the band held on the same 9 " \
    "against 8" in _brief and "τ2 on Scotland 13 keys at 10% (0.73)" in _brief
assert "on 9 of 12 over 100 stratified ones" in readme

# %% [markdown]
# ### A split-merge move for the classes
#
# The demo's chains are printed, not stored. On the one real key set without structural
# zeros, Adult 6 keys, the first 20 simple random samples of design seed 0 at 5% and 10%
# refitted at 2,000 sweeps with 5 split-merge proposals per sweep (`python
# benchmarks/latent_class_accuracy.py --populations adult6 --fractions 0.05 --replicates 20
# --seed 0 --baselines "" --tune 2000 --split-merge 5`, and `--fractions 0.1`; stored as
# `latent_class_20_tune2000_split_merge_adult6.csv.gz`) against the same samples without
# them (`T2000`).

# %%
SM = pd.read_csv(RESULTS / "latent_class_20_tune2000_split_merge_adult6.csv.gz")
_smp = SM.merge(T2000, on=["design", "replicate", "quantity"], suffixes=("_2000", "_100"))
assert len(_smp) == len(SM) and SM.replicate.nunique() == 20
assert np.allclose(_smp.truth_2000, _smp.truth_100, equal_nan=True)  # the same samples
# tune_shift's columns: "_2000" with the moves, "_100" without (both at 2,000 sweeps)
smshift = tune_shift(_smp).set_index(["design", "quantity"])
print(smshift[["shift", "shift_se", "bias_100", "bias_2000", "coverage_100", "coverage_2000",
               "width_ratio", "seconds_100", "seconds_2000"]].round(4))
_acc = SM[SM.quantity == "tau1"].note.str.extract(r"split-merge accepted ([0-9.e-]+) per sweep")[0]
print("accepted per sweep:", _acc.astype(float).describe().round(3).to_dict())
# what benchmarks/README.md states: tau1 and tau2 move by less than two standard errors
# (-0.14 and +0.17 points for tau1), the fits take 1.7-2.0 times as long; 0.11-0.27 moves
# accepted per sweep
assert [round(100 * smshift.at[(d, "tau1"), "shift"], 2)
        for d in ("adult6/srs/5%", "adult6/srs/10%")] == [-0.14, 0.17]
assert (smshift["shift"].abs() < 2 * smshift.shift_se).all()
_ratio = (smshift.seconds_2000 / smshift.seconds_100).round(1)
assert _ratio.min() == 1.7 and _ratio.max() == 2.0
assert [round(float(x), 2) for x in (_acc.astype(float).min(), _acc.astype(float).max())] == [
    0.11, 0.27]

# %% [markdown]
# ### A posterior predictive check of the sample's counts of counts
#
# The first 25 simple random samples of design seed 0 of every real design at 2,000 sweeps
# with `--ppc 50` (stored as `latent_class_25_tune2000_ppc.csv.gz`); the notes carry, for the
# cells seen 1-5 and 6+ times, the observed number, the replicates' mean and p.

# %%
_spec = importlib.util.spec_from_file_location("latent_class_accuracy",
                                               RESULTS.parent / "latent_class_accuracy.py")
lc_accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lc_accuracy)
PPC = pd.read_csv(RESULTS / "latent_class_25_tune2000_ppc.csv.gz")
PPC = PPC[PPC.method == "latent-class"]
assert PPC.design.nunique() == 12 and (PPC.groupby("design").replicate.nunique() == 25).all()
# the same samples as T2000 (design seed 0)
_pm = PPC.merge(T2000, on=["design", "replicate", "quantity"], suffixes=("", "_t"))
assert np.allclose(_pm.truth, _pm.truth_t, equal_nan=True)
ppc = lc_accuracy.ppc_summary(PPC)
print(ppc.round(3).to_string())
_m1 = ppc.xs("m1", level="m")
assert [round(float(x), 1) for x in (_m1["diff %"].min(), _m1["diff %"].max())] == [-3.4, 2.2]
assert (_m1[["p < 0.05", "p > 0.95"]] == 0).all().all()
# the misfits past Meng's bound (6 or more of 25 samples in one tail)
from scipy import stats as _st  # noqa: E402

assert round(float(_st.binom.sf(5, 25, 0.10)), 3) == 0.033
assert round(float(_st.binom.sf(4, 25, 0.10)), 3) == 0.098
_tails = ppc[["p < 0.05", "p > 0.95"]].stack()
_past = sorted((d, m, t) for (d, m, t), v in _tails.items() if v >= 0.24)
assert _past == [("adult6/srs/5%", "m6+", "p < 0.05"), ("adult9/srs/10%", "m6+", "p > 0.95"),
                 ("scotland13/srs/10%", "m2", "p < 0.05"),
                 ("scotland13/srs/5%", "m6+", "p < 0.05")], _past


def _ppc_row(design, m):
    r = ppc.loc[(design, m)]
    return [round(float(r.observed), 1), round(float(r.predicted), 1),
            round(float(r["diff %"]), 1), round(float(r["p < 0.05"]), 2),
            round(float(r["p > 0.95"]), 2)]


assert _ppc_row("scotland13/srs/10%", "m1") == [4583.6, 4524.1, 1.3, 0, 0]
assert _ppc_row("scotland13/srs/10%", "m2") == [259.9, 240.5, 8.1, 0.32, 0]
assert _ppc_row("scotland13/srs/5%", "m6+") == [19.5, 15.2, 28.5, 0.28, 0]
assert _ppc_row("adult6/srs/5%", "m2") == [172.0, 181.7, -5.4, 0, 0.20]
assert _ppc_row("adult6/srs/5%", "m6+") == [67.3, 59.5, 13.1, 0.24, 0]
assert _ppc_row("adult6/srs/10%", "m2") == [301.8, 307.1, -1.7, 0, 0.04]
assert _ppc_row("adult9/srs/10%", "m6+") == [9.4, 14.9, -36.6, 0, 0.28]
assert _ppc_row("adult9/srs/1%", "m1") == [469.7, 466.4, 0.7, 0, 0]
assert _ppc_row("adult9/srs/1%", "m2") == [8.4, 8.6, -2.0, 0, 0]
# Adult 6 keys at 10%: at most 2 of 25 samples in any tail
assert float(ppc.loc["adult6/srs/10%", ["p < 0.05", "p > 0.95"]].max().max()) == 0.08
assert "shows inside the sample as 8% more doubles" in _brief
assert "only Scotland 13 keys at 10% shows in the sample (8% more doubles than predicted)" \
    in _brief

# %% [markdown]
# The in-sample read of kappa from the sample's uniques (`--uniques-kappa`, stored as
# `latent_class_25_uniques_kappa.csv.gz`), and the within-design correlation of the uniques'
# misfit with the errors (from `latent_class_25_tune2000_ppc.csv.gz`).

# %%
_pn = lc_accuracy.ppc_notes(PPC)
_rel = _pn[_pn.m == "m1"].set_index(["design", "replicate"])
_rel = (_rel.observed / _rel.predicted - 1).rename("rel")
_err = PPC[PPC.quantity.isin(["tau1", "tau2"])].pivot_table(
    index=["design", "replicate"], columns="quantity", values=["estimate", "truth"])
_err = ((_err["estimate"] - _err["truth"]) / _err["truth"]).join(_rel)
_corr = _err.groupby(level=0).apply(lambda g: pd.Series(
    {"tau1": g.tau1.corr(g.rel), "tau2": g.tau2.corr(g.rel)}))
print(_corr.round(2))
_sparse = _corr[_corr.index.str.startswith(("adult9", "scotland13"))]
assert [round(float(x), 2) for x in (_sparse.min().min(), _sparse.max().max())] == [-0.80, -0.46]
UK = pd.read_csv(RESULTS / "latent_class_25_uniques_kappa.csv.gz")
UK = UK[UK.method == "latent-class"]
_u = UK[UK.quantity == "tau1"].set_index(["design", "replicate"])
_ux = _u.note.str.extract(r"uniques kappa ([0-9.e+inf]+) tau1 ([0-9.]+) tau2 ([0-9.]+)")
_ux = _ux.astype(float).set_axis(["k_u", "tau1_u", "tau2_u"], axis=1)
_ux["k_cv"] = _u.note.str.extract(r"kappa median ([0-9.e+inf]+)")[0].astype(float)
_ux["tau1"], _ux["truth1"] = _u.estimate, _u.truth
_u2 = UK[UK.quantity == "tau2"].set_index(["design", "replicate"])
_ux["tau2"], _ux["truth2"] = _u2.estimate, _u2.truth


def _uk_row(g):
    e1, u1 = (g.tau1 - g.truth1) / g.truth1, (g.tau1_u - g.truth1) / g.truth1
    e2, u2 = (g.tau2 - g.truth2) / g.truth2, (g.tau2_u - g.truth2) / g.truth2
    return pd.Series({
        "dlogk": np.median(np.log(g.k_u)) - np.median(np.log(g.k_cv)),
        "dbias1": 100 * (u1.mean() - e1.mean()),
        "rmse1_cv": 100 * np.sqrt((e1 ** 2).mean()), "rmse1_u": 100 * np.sqrt((u1 ** 2).mean()),
        "rmse2_cv": 100 * np.sqrt((e2 ** 2).mean()), "rmse2_u": 100 * np.sqrt((u2 ** 2).mean())})


uk = _ux.groupby(level=0).apply(_uk_row)
print(uk.round(2))
assert len(uk) == 6 and (UK.groupby("design").replicate.nunique() == 25).all()
assert [round(float(x), 2) for x in (uk.dlogk.min(), uk.dlogk.max())] == [0.31, 1.40]
assert [round(float(x), 1) for x in (uk.dbias1.min(), uk.dbias1.max())] == [0.9, 13.6]
assert (uk.rmse1_u > uk.rmse1_cv).all()
assert [round(float(uk.at[d, c]), 1) for d in ("adult9/srs/1%", "scotland13/srs/1%",
                                               "scotland13/srs/10%")
        for c in ("rmse1_cv", "rmse1_u")] == [8.7, 11.2, 10.7, 21.7, 1.7, 2.7]

# %% [markdown]
# The stratified samples' check (stored as `latent_class_25_stratified_tune2000_ppc.csv.gz`).

# %%
SPPC = pd.read_csv(RESULTS / "latent_class_25_stratified_tune2000_ppc.csv.gz")
SPPC = SPPC[SPPC.method == "latent-class"]
assert SPPC.design.nunique() == 12 and (SPPC.groupby("design").replicate.nunique() == 25).all()
_spm = SPPC.merge(S2000, on=["design", "replicate", "quantity"], suffixes=("", "_t"))
assert np.allclose(_spm.truth, _spm.truth_t, equal_nan=True)  # the same samples
sppc = lc_accuracy.ppc_summary(SPPC)
_sm1 = sppc.xs("m1", level="m")
assert [round(float(x), 1) for x in (_sm1["diff %"].min(), _sm1["diff %"].max())] == [-3.0, 5.2]
assert (_sm1[["p < 0.05", "p > 0.95"]] == 0).all().all()
_sm2 = sppc.xs("m2", level="m")
assert [round(float(_sm2.at[d, "diff %"]), 1) for d in (
    "scotland13/stratified/5%", "scotland13/stratified/10%", "adult9/stratified/5%",
    "adult9/stratified/10%")] == [11.8, 8.6, 9.4, 8.8]
_stails = sppc[["p < 0.05", "p > 0.95"]].stack()
_spast = sorted((d, m, t, round(float(v), 2)) for (d, m, t), v in _stails.items() if v >= 0.24)
assert _spast == [("adult6/stratified/10%", "m4", "p > 0.95", 0.24),
                  ("adult6/stratified/5%", "m6+", "p < 0.05", 0.32),
                  ("adult9/stratified/10%", "m2", "p < 0.05", 0.32),
                  ("adult9/stratified/10%", "m6+", "p > 0.95", 0.44),
                  ("scotland13/stratified/5%", "m2", "p < 0.05", 0.24)], _spast
assert round(float(_sm2.at["scotland13/stratified/10%", "p < 0.05"]), 2) == 0.16
_sparse2 = _sm2.loc[["scotland13/stratified/5%", "scotland13/stratified/10%",
                     "adult9/stratified/5%", "adult9/stratified/10%"], "diff %"]
assert round(float(_sparse2.min())) == 9 and round(float(_sparse2.max())) == 12
assert "the sparse key sets at 5% and 10% all have 9–12% more doubles than" in readme

# %% [markdown]
# The check in the model's own world (`kappa_model_world.py --population --tune 2000 --ppc
# 50`, and at `--tune 100` on the same drawn samples; stored as
# `kappa_model_world_25_tune{2000,100}_ppc.csv.gz`), set against the real samples' check.

# %%
MWP = pd.read_csv(RESULTS / "kappa_model_world_25_tune2000_ppc.csv.gz")
MWP100 = pd.read_csv(RESULTS / "kappa_model_world_25_tune100_ppc.csv.gz")
_sparse4 = ["adult9/srs/5%", "adult9/srs/10%", "scotland13/srs/5%", "scotland13/srs/10%"]
assert sorted(MWP.design.unique()) == sorted(_sparse4)
assert (MWP.groupby("design").replicate.nunique() == 25).all()
# the same drawn samples at both burn-ins: same truths and the same kappa reads
_mwm = MWP.merge(MWP100, on=["design", "replicate", "draw"], suffixes=("", "_100"))
assert len(_mwm) == 100 and (_mwm.tau1 == _mwm.tau1_100).all()
assert np.allclose(_mwm.read, _mwm.read_100)
mwppc = kappa_model_world.summarise_ppc(MWP).set_index(["design", "m"])
print(mwppc.round(3).to_string())


def _tail_row(table, design, m):
    r = table.loc[(design, m)]
    return [round(float(r["diff %"]), 1), round(float(r["p < 0.05"]), 2),
            round(float(r["p > 0.95"]), 2)]


# the table's rows: real sample (the last study's) against the model's world
for _d, _m, _real, _world in [
    ("scotland13/srs/10%", "m2", [8.1, 0.32, 0], [-3.9, 0, 0.04]),
    ("scotland13/srs/10%", "m4", [-3.2, 0.04, 0.08], [-13.9, 0, 0.24]),
    ("scotland13/srs/5%", "m2", [1.8, 0, 0], [-9.8, 0, 0.04]),
    ("scotland13/srs/5%", "m6+", [28.5, 0.28, 0], [10.6, 0.04, 0]),
    ("adult9/srs/10%", "m2", [5.1, 0.04, 0], [0.6, 0, 0]),
    ("adult9/srs/10%", "m3", [9.5, 0.16, 0], [-1.3, 0.04, 0]),
    ("adult9/srs/10%", "m6+", [-36.6, 0, 0.28], [-22.7, 0, 0.32]),
    ("adult9/srs/5%", "m2", [4.5, 0.04, 0], [-2.7, 0, 0]),
    ("adult9/srs/5%", "m4", [-19.4, 0.04, 0.08], [-28.4, 0, 0.28]),
]:
    assert _tail_row(ppc, _d, _m) == _real and _tail_row(mwppc, _d, _m) == _world, (_d, _m)
    # and the README's table quotes them
    _k, _f = _d.split("/srs/")
    _name = {"scotland13": "Scotland 13 keys", "adult9": "Adult 9 keys"}[_k] + " " + _f
    _seen = {"m2": "twice", "m3": "three times", "m4": "four times", "m6+": "6 or more times"}[_m]

    def _cell(v):
        pct = f"{v[0]:+.1f}%".replace("-", "−")
        return f"{pct} ({v[1]:g} / {v[2]:g})"

    assert f"| {_name} | {_seen} | {_cell(_real)} | {_cell(_world)} |" in readme, (_d, _m)
# uniques and doubles keep Meng's bound in the model's world: at most 2 of 25 in a tail
_ud = mwppc[mwppc.index.get_level_values("m").isin(["m1", "m2"])]
assert float(_ud[["p < 0.05", "p > 0.95"]].max().max()) == 0.08
_m1w = mwppc.xs("m1", level="m")["diff %"]
assert [round(float(_m1w.min()), 1), round(float(_m1w.max()), 1)] == [1.1, 2.7]
_m1r = ppc.xs("m1", level="m").loc[_sparse4, "diff %"]
assert [round(float(_m1r.min()), 1), round(float(_m1r.max()), 1)] == [-0.1, 1.3]
# the doubles: the model's world predicts -9.8% to +0.6%, the real samples have +1.8% to
# +8.1%, i.e. 4.5 to 12.0 points more than the procedure makes on its own
_m2w = mwppc.xs("m2", level="m")["diff %"]
_m2r = ppc.xs("m2", level="m").loc[_sparse4, "diff %"]
assert [round(float(_m2w.min()), 1), round(float(_m2w.max()), 1)] == [-9.8, 0.6]
assert [round(float(_m2r.min()), 1), round(float(_m2r.max()), 1)] == [1.8, 8.1]
_gap = (_m2r - _m2w.reindex(_m2r.index))
assert [round(float(_gap.min()), 1), round(float(_gap.max()), 1)] == [4.5, 12.0], _gap
# past the bound in the model's world: only shortfalls of cells seen 3+ times
_wtails = mwppc[["p < 0.05", "p > 0.95"]].stack()
_wpast = sorted((d, m, t, round(float(v), 2)) for (d, m, t), v in _wtails.items() if v >= 0.24)
assert _wpast == [("adult9/srs/10%", "m6+", "p > 0.95", 0.32),
                  ("adult9/srs/5%", "m4", "p > 0.95", 0.28),
                  ("adult9/srs/5%", "m6+", "p > 0.95", 0.28),
                  ("scotland13/srs/10%", "m4", "p > 0.95", 0.24)], _wpast
# the procedure in its own world: kappa read low, tau low, at either burn-in
_mws = kappa_model_world.summarise_population(MWP).set_index("design")
_mws100 = kappa_model_world.summarise_population(MWP100).set_index("design")
assert [round(float(_mws.loc[d, "read_mean"] - _mws.loc[d, "log_kappa0"]), 2)
        for d in _sparse4] == [-0.66, -0.35, -0.33, -0.33]
assert [round(100 * float(_mws.loc[d, "bias1"]), 1) for d in _sparse4] == \
    [-4.9, -1.5, -3.6, -2.5]
assert [round(float(_mws.loc[d, "cover1"]), 2) for d in _sparse4] == [0.64, 0.68, 0.60, 0.48]
assert [round(float(_mws100.loc[d, "cover1"]), 2) for d in _sparse4] == \
    [0.64, 0.76, 0.68, 0.60]
assert [round(float(_mws.loc[d, "kappa_above"]), 2) for d in _sparse4] == [0.44, 0.56, 0.60, 0.68]
# settling moves the model's world's tau1 by a fifth of a point at most (same samples)
_shift = 100 * ((_mwm.est1 - _mwm.est1_100) / _mwm.tau1).groupby(_mwm.design).mean()
assert [round(float(_shift[d]), 2) for d in _sparse4] == [-0.02, -0.18, -0.06, -0.14], _shift
assert round(float(_gap["scotland13/srs/5%"]), 1) == 11.5
assert "a shortfall of large cells (p > 0.95 there)\nis the procedure's own" in readme
assert "real sparse samples have 4.5–12 points more doubles" in _brief
assert "4.5 to 12.0 points more than the procedure makes of itself" in _brief
assert "the gap is 11.5 points" in _brief
assert "τ1 within −0.02% to −0.18% of each other" in _brief
assert "the read lies 0.33–0.66 below log κ0 (κ0 above its 90% range in 44–68% of the samples)" \
    in _brief
assert "is 1.5–4.9% low, and its coverage 0.48–0.68 at 2,000 sweeps (0.60–0.76 at 100)" in _brief


# the doubles' misfit against the tau2 errors, per design (the last study's stored runs)
def _misfit_corr(runs, m):
    notes = lc_accuracy.ppc_notes(runs)
    r = notes[notes.m == m].set_index(["design", "replicate"])
    e = runs[runs.quantity == "tau2"].set_index(["design", "replicate"])
    e = ((e.estimate - e.truth) / e.truth).rename("err").to_frame()
    e["rel"] = r.observed / r.predicted - 1
    return e.groupby(level=0).apply(lambda g: g.err.corr(g.rel))


_c2, _sc2 = _misfit_corr(PPC, "m2"), _misfit_corr(SPPC, "m2")
_c1, _sc1 = _misfit_corr(PPC, "m1"), _misfit_corr(SPPC, "m1")
assert [round(float(x), 2) for x in (_c2["scotland13/srs/10%"], _sc2["scotland13/stratified/10%"],
                                      _c1["scotland13/srs/10%"], _sc1["scotland13/stratified/10%"])
        ] == [0.15, 0.06, -0.80, -0.84]
assert [round(float(x), 2) for x in (_c2["adult9/srs/5%"], _c2["adult9/srs/10%"],
                                      _sc2["adult9/stratified/5%"], _sc2["adult9/stratified/10%"])
        ] == [-0.33, -0.42, -0.36, -0.36]
assert "correlates +0.15 with its τ2 error (+0.06 on the stratified" in _brief

# Adult 6 keys in the model's world with Poisson cells, and at kappa fixed at inf
MW6 = pd.read_csv(RESULTS / "kappa_model_world_25_tune2000_adult6_k0.csv.gz")
assert (MW6.groupby("design").replicate.nunique() == 25).all() and np.isinf(MW6.kappa0).all()
_w6 = kappa_model_world.summarise_population(MW6).set_index("design")
_d6 = ["adult6/srs/5%", "adult6/srs/10%"]


def _r6(col, scale=1.0, nd=2):
    return [round(scale * float(_w6.loc[d, col]), nd) for d in _d6]


assert _r6("bias2", 100, 1) == [-2.1, -1.7] and _r6("cover2") == [0.56, 0.44]
assert _r6("k0_bias2", 100, 1) == [-1.4, -1.4] and _r6("k0_cover2") == [0.72, 0.44]
assert _r6("k0_bias1", 100, 1) == [-2.3, -2.3]
assert _r6("k0_param_z_mean1", 1, 1) == [-1.7, -2.3]
assert _r6("k0_log_pi_err") == [0.24, 0.28] and _r6("k0_log_pi_err_sd") == [0.05, 0.02]
_w6ppc = kappa_model_world.summarise_ppc(MW6)
assert round(float(_w6ppc[["p < 0.05", "p > 0.95"]].max().max()), 2) == 0.20
assert _tail_row(ppc, "adult6/srs/5%", "m6+")[1] == 0.24
# the real samples' kappa reads there (medians over design seed 0's 25 samples)
_k6 = PPC[(PPC.quantity == "tau1") & PPC.design.isin(_d6)]
_k6 = _k6.assign(k=_k6.note.str.extract(r"kappa median ([0-9.e+inf]+)")[0].astype(float))
assert [round(float(_k6[_k6.design == d].k.median())) for d in _d6] == [36, 63]
assert "their mean error of\nlog π is +0.24 and +0.28" in readme
assert "1.4% low: the dense designs' τ2 miss is there the posterior's own" in _brief
assert "(−1.4% against −1.2% and −0.8%)" in _brief
assert "| Adult 6 keys 5% | −0.4 · −0.6% → −1.6 · −1.2% |" in readme
assert "| Adult 6 keys 10% | −1.5 · −0.9% → −1.2 · −0.8% |" in readme

# the mixture's centre in its own world under five priors (kappa known)
_spec = importlib.util.spec_from_file_location("mixture_lift", RESULTS.parent / "mixture_lift.py")
mixture_lift = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mixture_lift)
LIFT = pd.read_csv(RESULTS / "mixture_lift.csv.gz")
_lift_designs = ["adult6/srs/5%", "adult6/srs/10%", "adult9/srs/10%", "scotland13/srs/10%"]
_lift_1pct = ["adult9/srs/1%", "scotland13/srs/1%"]
assert LIFT.groupby(["design", "variant"]).replicate.nunique().to_dict() == {
    (d, v): (12 if d.startswith("adult6") else 25 if d.endswith("/1%") else 10)
    for d in _lift_designs + _lift_1pct for v in mixture_lift.VARIANTS.split(",")}
_ls = mixture_lift.summarise(LIFT).set_index(["variant", "design"])
_labels = {"default": "default", "classes=15": "15 classes", "alpha=0.1": "α held at 0.1",
           "small-mass=30": "small keys' mass 30", "learn-all": "learnt mass on every key"}


def _pct(x):
    return f"{100 * x:+.1f}".replace("-", "−")


for _v, _lab in _labels.items():
    for _ds in (_lift_designs, _lift_1pct):  # the two tables
        _cells = [f"{_pct(_ls.loc[(_v, d), 'bias1'])} · {_pct(_ls.loc[(_v, d), 'bias2'])}% "
                  f"({_ls.loc[(_v, d), 'classes']:.1f})" for d in _ds]
        _row = f"| {_lab} | " + " | ".join(_cells) + " |"
        assert _row in readme, _row
_ld = _ls.loc["default"].loc[_lift_designs]
assert [round(float(x), 3) for x in _ld.log_pi_err] == [0.035, 0.067, -0.019, -0.087]
assert (round(float(_ld.log_pi_cover.min()), 2), round(float(_ld.log_pi_cover.max()), 2)) == \
    (0.79, 0.86)
assert (round(float(_ld.log_pi_sd.min()), 2), round(float(_ld.log_pi_sd.max()), 2)) == (0.53, 0.72)
assert (round(float(_ld.log_pi_rmse.min()), 2), round(float(_ld.log_pi_rmse.max()), 2)) == \
    (0.67, 0.77)
# paired shifts of tau1 against the default (same samples, same chains' seed)
_lr = LIFT.assign(rel1=LIFT.est1 / LIFT.tau1_star - 1.0, psd1=LIFT.sd1 / LIFT.tau1_star)
_base = _lr[_lr.variant == "default"].set_index(["design", "replicate"])


def _shift(v):
    g = _lr[_lr.variant == v].set_index(["design", "replicate"])
    d = 100 * (g.rel1 - _base.rel1.loc[g.index])
    return d.groupby(level=0).mean().loc[_lift_designs], \
        (d.groupby(level=0).std() / np.sqrt(d.groupby(level=0).size())).loc[_lift_designs]


_s15, _se15 = _shift("classes=15")
assert [round(float(x), 1) for x in _s15] == [0.3, 1.7, 1.4, 3.4]
assert (round(float(_se15.min()), 2), round(float(_se15.max()), 2)) == (0.15, 0.23)
_sm, _ = _shift("small-mass=30")
assert (round(float(_sm.min()), 1), round(float(_sm.max()), 1)) == (3.3, 5.8)
_sa, _ = _shift("alpha=0.1")
_sl, _ = _shift("learn-all")
assert round(float(max(_sa.max(), _sl.max())), 1) == 0.6
assert round(float(_sa.max()), 1) == 0.3
# every change moves tau1 up, or by less than a paired standard error down
for _v in ("classes=15", "alpha=0.1", "small-mass=30", "learn-all"):
    _m, _se = _shift(_v)
    assert (_m > -_se).all(), (_v, _m, _se)
_emptied = (_ls.loc["default"].classes - _ls.loc["alpha=0.1"].classes).loc[_lift_designs]
assert (round(float(_emptied.min())), round(float(_emptied.max()))) == (5, 7)
# the simulation's cost: a refit's scatter against the posterior's own sd, (sd / 0.3)^2
_esd = 100 * _lr[_lr.variant == "default"].groupby("design").rel1.std().loc[_lift_designs]
_psd = 100 * _lr[_lr.variant == "default"].groupby("design").psd1.mean().loc[_lift_designs]
assert [round(float(x), 1) for x in _esd] == [1.4, 0.8, 0.4, 1.9]
assert [round(float(x), 1) for x in _psd] == [1.4, 1.0, 0.4, 0.5], _psd
assert [round(float((x / 0.3) ** 2)) for x in _esd] == [22, 8, 2, 39]
# set against the real samples at the shipped setting and the model's world with kappa read
assert round(100 * float(_mws.loc["scotland13/srs/10%", "bias1"]), 1) == -2.5
assert "| Scotland 13 keys 10% | −0.5 · −0.7% → −1.1 · −1.1% |" in readme
assert "(s ≈\n0.7 gives s²/2 ≈ 0.25)" in readme
assert "0.035 and 0.067 high (the posterior mean of π is 27–32% high" in _brief
assert "take 2–39 refits per sample (8 and 22 on Adult 6 keys)" in _brief
assert "on the real samples a small keys' mass of 4 took Scotland 13 keys at 10% down" in _brief
# at 1%: centred at the right kappa, every change moves tau1 up, the errors wider than the sd
_l1 = _ls.loc["default"].loc[_lift_1pct]
assert [round(float(x), 3) for x in _l1.log_pi_err] == [-0.021, -0.007]
_up1 = []
for _v in ("classes=15", "alpha=0.1", "small-mass=30", "learn-all"):
    _g = _lr[_lr.variant == _v].set_index(["design", "replicate"])
    _d = 100 * (_g.rel1 - _base.rel1.loc[_g.index])
    _up1 += [float(_d.loc[d].mean()) for d in _lift_1pct]
assert (round(min(_up1), 1), round(max(_up1), 1)) == (0.1, 17.2)
_e1 = 100 * _lr[_lr.variant == "default"].groupby("design").rel1.std().loc[_lift_1pct]
_p1 = 100 * _lr[_lr.variant == "default"].groupby("design").psd1.mean().loc[_lift_1pct]
assert [round(float(x), 1) for x in _e1] == [1.5, 3.7]
assert [round(float(x), 1) for x in _p1] == [1.2, 1.0]
assert "every change moves τ1 up once more, by +0.1 to +17.2 points" in _brief
assert "on Adult 6 keys the mixture's own offset, which it shows in its own world" in _brief
