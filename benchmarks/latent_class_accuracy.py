"""Benchmark: accuracy of the Bayesian latent-class model on the real designs (issue 7).

Runs :func:`sdcbayes.validation.latent_class_method` (blocked Gibbs
sampler, truncated stick-breaking prior, H = 30, chains started from penalised EM
fits, structural zeros) beside the closed-form baselines of
:mod:`sdcbayes.validation` on the 12 SRS designs (Adult 6/9 keys, Scotland 7/13
keys at 1%, 5%, 10%): population = the whole file, seeded SRS samples, truth tau1,
tau2 from the population counts. Prints, per design and method, relative bias and
relative RMSE of tau1, tau2 and the expected re-identifications, 90%
posterior-predictive interval coverage and width, the time per fit, whether the
issue-7 goal is met per design, and the median r_hat of tau1/tau2 across chains.

Designs (``--kind``): simple random samples (the 12 designs of the goal), or
stratified ones with n_h proportional to sqrt(N_h) and unequal weights N_h/n_h
(strata: income for Adult, residence type for Scotland), where the model takes the
weights as a design variable (``--weights classes``) or ignores them (``ignore``).

Structural zeros (``--rules``): ``confirmed`` (default) uses :data:`CONFIRMED_RULES`
with the codebook levels (every level of the key in the whole file), what a
methodologist passes after confirming the detector's candidates; ``auto`` uses the
sample's detected implications unconfirmed; ``none`` fits the untruncated model.

Goal (issue 7): |relative bias| <= 10% for tau1 and tau2 (or |absolute bias| <= 2
where the true tau1 < 20), 90% coverage in [85%, 95%] (needs >= 50 replicates to
mean anything), relative RMSE below every baseline.

Usage (the two machines' cores are shared: split the work by population or by
``--seed`` and combine the CSVs)::

    python benchmarks/latent_class_accuracy.py [--populations adult6,adult9,scotland7,scotland13]
        [--fractions 0.01,0.05,0.1] [--kind srs|stratified] [--weights classes|ignore]
        [--replicates 10] [--seed 0] [--classes 30]
        [--draws 150] [--tune 100] [--chains 2] [--thin 1] [--em-restarts 3]
        [--init em|margins] [--rules confirmed|auto|none]
        [--phi-a default|inverse|<a>|marginal:<M>|marginal:learn[:<min levels>[:<small mass>]]]
        [--cv-part-mass whole|learn] [--cv-focus all|population] [--cv-partitions mixture|average]
        [--cv-combine-ratios mixture|average] [--cv-dispersion binomial|parts|parts-kappa[-quasi]]
        [--overdispersion cv|none|<kappa>|log-normal:<m>:<s>] [--overdispersion-splits 4]
        [--kappa-prior log-uniform|half-cauchy[:1]|log-normal:<m>:<s>] [--cv-predictive em|gibbs]
        [--cluster-correction none|cv] [--profile-mass prior|cv|span]
        [--profile-mass-unreached learnt|largest]
        [--em-learn-mass converged|always] [--phi-mass-top 13]
        [--calibration-csv cal.csv] [--calibration-html cal.html]
        [--baselines benedetti-franconi,poisson-gamma,loglinear-main] [--csv out.csv]
    python benchmarks/latent_class_accuracy.py --summarise a.csv b.csv
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import time

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import (
    KAPPA_GRID,
    PHI_PRIOR_DEFAULT,
    kappa_prior,
    parse_kappa_prior,
)
from sdcbayes.validation import (
    BASELINES,
    POPULATIONS,
    Design,
    SkipDesign,
    calibration_table,
    goal_table,
    latent_class_method,
    load_population,
    run_design,
    summarise,
)

#: User-confirmed structural zeros per population: what a methodologist writes after
#: reading the codebook and the candidates of ``detect_structural_zeros`` (issue 7,
#: "detect, then confirm"). Each rule follows from the variables' definitions
#: ('X' / '?' = not applicable / not recorded) and was checked to hold in the whole
#: file (no population record lies in S); rules that are merely rare combinations
#: (e.g. religion x health) are deliberately left out.
_UNDER_16 = [str(a) for a in range(-1, 16)]  # EU-SILC ages run from -1 (sic) to 97
_NOT_MARRIED = ["Divorced", "Married-spouse-absent", "Never-married", "Separated", "Widowed"]
CONFIRMED_RULES = {
    "adult6": None,
    "adult9": [
        # workclass and occupation are both '?' (not recorded) together, except that
        # 'Never-worked' has no occupation either
        {"workclass": ["?"], "occupation": {"not": ["?"]}},
        {"workclass": {"not": ["?", "Never-worked"]}, "occupation": ["?"]},
        # a husband or wife is married; a married person is not 'Unmarried'
        {"marital-status": _NOT_MARRIED, "relationship": ["Husband", "Wife"]},
        {"marital-status": ["Married-civ-spouse", "Married-AF-spouse"],
         "relationship": ["Unmarried"]},
        # the armed forces are federal employment; private household service is private
        {"workclass": {"not": ["Federal-gov"]}, "occupation": ["Armed-Forces"]},
        {"workclass": {"not": ["Private"]}, "occupation": ["Priv-house-serv"]},
    ],
    "scotland7": [
        # age band 1 is 0-15: never married (Marital_Status 1 = single)
        {"age": ["1"], "Marital_Status": {"not": ["1"]}},
    ],
    "scotland13": [
        {"age": ["1"], "Marital_Status": {"not": ["1"]}},
        # economic activity is 'X' (not applicable) exactly for the under-16s
        {"age": ["1"], "Economic_Activity": {"not": ["X"]}},
        {"age": {"not": ["1"]}, "Economic_Activity": ["X"]},
        # no economic activity: no occupation, industry, hours or social grade of one's own
        {"Economic_Activity": ["X"], "Occupation": {"not": ["X"]}},
        {"Economic_Activity": ["X"], "Approximate_Social_Grade": {"not": ["X"]}},
        # occupation and industry are 'X' (never worked) together
        {"Occupation": ["X"], "industry": {"not": ["X"]}},
        {"Occupation": {"not": ["X"]}, "industry": ["X"]},
        # hours are recorded for those in work only (1 employee, 2 self-employed,
        # 4 working full-time students), who have an occupation
        {"Economic_Activity": {"not": ["1", "2", "4"]}, "Hours_Worked_Per_Week": {"not": ["X"]}},
        {"Occupation": ["X"], "Hours_Worked_Per_Week": {"not": ["X"]}},
        {"Economic_Activity": ["1", "2"], "Hours_Worked_Per_Week": ["X"]},
        {"Economic_Activity": ["1", "2"], "Occupation": ["X"]},
        # people outside families (communal establishments) have no social grade
        {"Family_Composition": ["X"], "Approximate_Social_Grade": {"not": ["X"]}},
    ],
    # EU-SILC: citizenship is recorded exactly for persons aged 16 and over ('NA' below)
    "eusilc": [
        {"pb220a": ["NA"], "age": {"not": _UNDER_16}},
        {"pb220a": {"not": ["NA"]}, "age": _UNDER_16},
    ],
}
CONFIRMED_RULES["eusilc-distinct"] = CONFIRMED_RULES["eusilc"]
CONFIRMED_RULES["eusilc-multi"] = CONFIRMED_RULES["eusilc"]


def _report(allres: pd.DataFrame) -> None:
    summ = summarise(allres)
    summ = summ[summ.quantity.isin(["tau1", "tau2", "expected_reidentifications"])]
    cols = ["design", "method", "quantity", "replicates", "truth", "estimate", "rel_bias",
            "rel_rmse", "coverage", "width", "time_s"]
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(summ[cols].round(3).to_string(index=False))
        print()
        goal = goal_table(summ, "latent-class")
        print(goal.round(3).to_string(index=False))
        if goal.filter(like="_rmse_ok").isna().all().all():
            # --baselines "": nothing to beat, so goal_table leaves the RMSE part unjudged
            print("(no baseline ran: rmse_ok is NaN and met False; the bias and coverage "
                  "parts are the _bias_ok and _cover_ok columns)")
    lc = allres[(allres.method == "latent-class") & (allres.quantity == "tau1")]
    rhat = lc["note"].str.extract(r"rhat tau1 ([0-9.]+) tau2 ([0-9.]+)").astype(float)
    if len(rhat):
        per = rhat.groupby(lc["design"].to_numpy()).median()
        print("\nmedian r_hat of tau1_expected / tau2_expected per design:")
        print(per.rename(columns={0: "tau1", 1: "tau2"}).round(3).to_string())
    per = classes_occupied(allres)
    if len(per):  # runs stored before the note carried it have none
        print("\nclasses occupied per design (mean over samples), of H, and % of draws all:")
        print(per.round(1).to_string())
    per = ppc_summary(allres)
    if len(per):  # fits run with --ppc
        print("\nposterior predictive check of the sample's cells seen j times, per design: "
              "mean observed, mean predicted, their difference in %, and the share of "
              "samples with p < 0.05 (more than predicted) and p > 0.95 (fewer), where at "
              "least 5 are predicted:")
        print(per.round(3).to_string())


def ppc_notes(allres: pd.DataFrame) -> pd.DataFrame:
    """One row per latent-class fit run with ``--ppc``: design, replicate and, for m1..m5
    and m6+, the observed number, the replicates' mean and the p-value P(m_rep >= m_obs)
    (read from the notes, ``latent_class_method(ppc=...)``)."""
    lc = allres[(allres.method == "latent-class") & (allres.quantity == "tau1")]
    rows = []
    for design, rep, note in zip(lc["design"], lc["replicate"], lc["note"], strict=True):
        for j, o, mean, p in re.findall(r"m(\d\+?) (\d+)/([0-9.]+)/([0-9.]+)", str(note)):
            rows.append({"design": design, "replicate": rep, "m": "m" + j,
                         "observed": int(o), "predicted": float(mean), "p": float(p)})
    return pd.DataFrame(rows, columns=["design", "replicate", "m", "observed", "predicted",
                                       "p"])


def ppc_summary(allres: pd.DataFrame, min_predicted: float = 5.0) -> pd.DataFrame:
    """Per design and j (:func:`ppc_notes`): the means over samples of the observed and
    predicted numbers of cells seen j times, the difference in % of the predicted, and the
    share of samples whose p-value is below 0.05 or above 0.95.

    The shares are left out (NaN) where fewer than ``min_predicted`` cells are predicted
    on average: there the count is small and discrete, and P(m_rep >= m_obs) is 1 whenever
    none is observed. A posterior predictive p-value is conservative in the model's own
    world (Meng 1994: P(p <= a) <= 2a), so a share above 0.10 in one tail is misfit."""
    return summarise_checks(ppc_notes(allres), ["design"], min_predicted)


def summarise_checks(d: pd.DataFrame, by: list[str], min_predicted: float = 5.0) -> pd.DataFrame:
    """:func:`ppc_summary` of a table of checks (columns ``by``, ``m``, ``observed``,
    ``predicted``, ``p``; one row per sample and ``m``), grouped by ``by`` and ``m``."""
    if not len(d):
        return d
    g = d.groupby([*by, "m"], sort=False)
    out = g[["observed", "predicted"]].mean()
    out["diff %"] = 100 * (out.observed / out.predicted - 1)
    out["p < 0.05"] = g.p.apply(lambda x: float((x < 0.05).mean()))
    out["p > 0.95"] = g.p.apply(lambda x: float((x > 0.95).mean()))
    out.loc[out.predicted < min_predicted, ["p < 0.05", "p > 0.95"]] = np.nan
    out["samples"] = g.size()
    return out


def classes_occupied(allres: pd.DataFrame) -> pd.DataFrame:
    """Per design, the means over samples of the latent-class fits' occupied classes, of
    their truncation H, and of the % of draws with all H occupied (read from the notes;
    designs whose notes do not carry them are left out)."""
    lc = allres[(allres.method == "latent-class") & (allres.quantity == "tau1")]
    used = lc["note"].str.extract(r"classes occupied ([0-9.]+) of (\d+) \(all in (\d+)%\)")
    used.columns = ["occupied", "H", "all %"]
    return used.astype(float).groupby(lc["design"].to_numpy()).mean().dropna()


def _kappa_prior(text: str):
    """``--kappa-prior``: :func:`sdcbayes.models.latent_class.parse_kappa_prior`."""
    try:
        return parse_kappa_prior(text)
    except InputError as exc:
        raise SystemExit(f"--kappa-prior: {exc}") from None


def _overdispersion(text: str):
    """``--overdispersion``: "cv", "none" (Poisson cells: None), a kappa > 0, or
    ``log-normal:<mean>:<sd>`` (log kappa normal, no cross-validation: a kappa known
    from elsewhere, as grid weights)."""
    if text in ("cv", "none"):
        return None if text == "none" else text
    if text.startswith("log-normal"):
        try:
            prior = _kappa_prior(text)
        except SystemExit as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return {"grid": KAPPA_GRID, "weights": kappa_prior(KAPPA_GRID, prior),
                "method": "log-normal", "prior": list(prior[1])}
    try:
        kappa = float(text)
    except ValueError:
        kappa = float("nan")
    if not kappa > 0:
        raise argparse.ArgumentTypeError(
            f"expected cv, none, a kappa > 0 or log-normal:<mean>:<sd>; got {text!r}")
    return kappa


def parse_key_set(spec: str) -> tuple[str, list[str], list[str]]:
    """Split a population spec ``base[+key ...][~key ...]`` into (base, added, removed).

    ``adult6+workclass`` is Adult with the 6 keys and workclass; ``scotland13~industry``
    Scotland's 13 keys without industry (``~``, not ``-``: Adult's keys hold hyphens).
    Other key sets of the same files train choices meant for the 12 designs of the goal
    (``benchmarks/kappa_transfer.py``) without touching them.
    """
    parts = re.split(r"([+~])", spec)
    base, added, removed = parts[0], [], []
    for op, key in zip(parts[1::2], parts[2::2], strict=True):
        (added if op == "+" else removed).append(key)
    return base, added, removed


def confirmed_rules(name: str, keys) -> list | None:
    """The :data:`CONFIRMED_RULES` of a population spec (:func:`parse_key_set`).

    A known population's own rules; for another key set of the same file, every rule
    confirmed for that file whose variables are all among ``keys`` (a rule on a key
    that is absent says nothing about the table of the others).
    """
    if name in CONFIRMED_RULES:
        return CONFIRMED_RULES[name]
    base = parse_key_set(name)[0]
    if base not in POPULATIONS:
        return None
    source, keys = POPULATIONS[base][0], set(keys)
    pooled = []
    for other, rules in CONFIRMED_RULES.items():
        if POPULATIONS.get(other, ("",))[0] != source:
            continue
        pooled += [r for r in rules or () if set(r) <= keys and r not in pooled]
    return pooled or None


def populations_with_codebook(names: str):
    """Yield ``(name, population, levels)`` for each comma-separated population that
    loads, ``levels`` the codebook (every level of each key: a user knows them from the
    documentation); a population whose data are absent is skipped with the reason.
    A name may change the key set (:func:`parse_key_set`)."""
    for name in names.split(","):
        base, added, removed = parse_key_set(name)
        try:
            pop = load_population(base)
        except SkipDesign as exc:
            print(f"skip {name}: {exc}", file=sys.stderr)
            continue
        if added or removed:
            unknown = [k for k in added + removed if k not in pop.frame.columns
                       or (k in removed and k not in pop.keys)]
            if unknown:
                raise SystemExit(f"{name}: {unknown} not among the columns / keys of {base}")
            keys = tuple(k for k in pop.keys if k not in removed) + tuple(
                k for k in added if k not in pop.keys)
            pop = dataclasses.replace(pop, name=name, keys=keys)
        yield name, pop, {k: sorted(pop.frame[k].astype(str).unique()) for k in pop.keys}


def phi_prior_spec(text: str) -> dict:
    """The profile prior of ``--phi-a`` (see its help) as the model's ``priors["phi"]``."""
    if text == "default":
        return dict(PHI_PRIOR_DEFAULT)
    if text == "inverse":
        return {"a": "inverse"}
    if text.startswith("marginal:"):
        m, *rest = text.split(":")[1:]
        return {"a": "marginal", "mass": m if m == "learn" else float(m),
                **({"min_levels": int(rest[0])} if rest else {}),
                **({"small_mass": float(rest[1])} if len(rest) > 1 else {})}
    return {"a": float(text)}


def set_phi_mass_top(top: float) -> np.ndarray:
    """End the learnt profile mass's grid at 2^top (same spacing, from 2^-2): patches
    ``PHI_MASS_GRID`` and ``profile_mass_loglik``'s default grid for this process; returns
    the grid."""
    import sdcbayes.models.latent_class as lcm

    if not top > -2.0:
        raise SystemExit(f"--phi-mass-top must exceed -2 (the grid starts at 2^-2); got {top}")
    grid = 2.0 ** np.arange(-2.0, float(top) + 0.25, 0.5)
    lcm.PHI_MASS_GRID = grid
    lcm.profile_mass_loglik.__defaults__ = (grid,)
    return grid


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--populations", default="adult6,adult9,scotland7,scotland13",
                    help="comma-separated names of sdcbayes.validation.POPULATIONS (eusilc, "
                         "eusilc-distinct, eusilc-multi: the held-out third file, not among "
                         "the 12 designs of the goal)")
    ap.add_argument("--fractions", default="0.01,0.05,0.1")
    ap.add_argument("--kind", default="srs", choices=["srs", "stratified", "household"],
                    help="simple random samples, or stratified ones with n_h proportional to "
                         "sqrt(N_h) (unequal weights; strata of sdcbayes.validation.POPULATIONS), "
                         "or whole households (populations with households: synthetic, eusilc*; "
                         "the cross-validation then keeps households whole)")
    ap.add_argument("--weights", default="classes", choices=["classes", "ignore"],
                    help="unequal weights (stratified designs) as a weight-class design "
                         "variable of the mixture (default), or ignored (one rate N/n)")
    ap.add_argument("--replicates", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0,
                    help="design seed (replicate r draws with [seed, r]); run processes with "
                         "different seeds to split the replicates, then --summarise their CSVs")
    ap.add_argument("--classes", type=int, default=30)
    ap.add_argument("--draws", type=int, default=150)
    ap.add_argument("--tune", type=int, default=100)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--thin", type=int, default=1)
    ap.add_argument("--em-restarts", type=int, default=3)
    ap.add_argument("--init", default="em", choices=["em", "bootstrap", "margins"])
    ap.add_argument("--phi-a", default="default",
                    help="profile prior: 'default' (the model's PHI_PRIOR_DEFAULT, the same as "
                         "'marginal:learn:20'), a number per level, 'inverse' (1/L_j: the "
                         "default of the stored runs without 'learnt_mass' in their name), or "
                         "'marginal:M' (M times the sample's marginal share of the level); "
                         "'marginal:learn' (M per key learnt, PHI_MASS_GRID); "
                         "':<L>' after either: only keys of at least L levels, and "
                         "':<L>:<m>' the others centred on their marginal with mass m "
                         "(small_mass; without it they keep 1/L_j)")
    ap.add_argument("--rules", default="confirmed", choices=["confirmed", "auto", "none"],
                    help="structural zeros: CONFIRMED_RULES (with the codebook levels), "
                         "the sample's detected implications, or none")
    ap.add_argument("--overdispersion", default="cv", type=_overdispersion,
                    help="gamma overdispersion of the cells: cv (cross-validated), none "
                         "(Poisson cells), a number (that kappa for every sample, e.g. a "
                         "design's oracle: what a perfectly transferred kappa would give) or "
                         "log-normal:<mean>:<sd> (log kappa normal: a kappa known from "
                         "elsewhere with its doubt, no cross-validation)")
    ap.add_argument("--overdispersion-splits", type=int, default=None,
                    help="random partitions per scale ratio whose kappa posteriors are "
                         "mixed (cv only; default CV_SPLITS of sdcbayes.models.latent_class)")
    ap.add_argument("--cv-ratios", default=None,
                    help="scale ratios of the cross-validation, comma-separated (cv only; "
                         "default CV_RATIOS = 4,8; 2 = the halves of earlier runs)")
    ap.add_argument("--kappa-prior", default=None,
                    help="prior of kappa (cv only): log-uniform (the default before), "
                         "half-cauchy[:scale] (on kappa^-1/2, scale 1; the default KAPPA_PRIOR) "
                         "or log-normal:<mean>:<sd> (of log kappa)")
    ap.add_argument("--cv-predictive", default=None, choices=["em", "gibbs"],
                    help="fit of each half in the cross-validation: one EM point (the "
                         "default CV_PREDICTIVE) or Gibbs draws")
    ap.add_argument("--cv-dispersion", default=None,
                    choices=["binomial", "parts", "parts-kappa", "parts-kappa-quasi"],
                    help="variance of the held-out count in the cross-validation: Bernoulli "
                         "(the default before) or times a dispersion estimated from the parts' "
                         "disagreement (the default CV_DISPERSION); parts-kappa: the same "
                         "with the Bernoulli variance at every kappa, not at the Poisson limit "
                         "(and the normal's normalising term; without it: parts-kappa-quasi)")
    ap.add_argument("--cv-part-mass", default=None, choices=["whole", "learn"],
                    help="with --phi-a marginal:learn, the parts' profile masses in the "
                         "cross-validation: the whole sample's (default CV_PART_MASS) or "
                         "learnt by each part")
    ap.add_argument("--cv-focus", default=None, choices=["all", "population"],
                    help="part-uniques of the cross-validation: all alike (the default "
                         "CV_FOCUS) or each weighted by its population uniqueness under the "
                         "whole sample's fit")
    ap.add_argument("--cv-partitions", default=None, choices=["mixture", "average"],
                    help="with --overdispersion-splits > 1: mix the partitions' kappa "
                         "posteriors (the default CV_PARTITIONS) or average their "
                         "log-likelihoods per ratio (repeated cross-validation)")
    ap.add_argument("--cv-combine-ratios", default=None, choices=["mixture", "average"],
                    help="combine the scale ratios' kappa posteriors as a mixture (the default "
                         "CV_COMBINE_RATIOS) or average their log-likelihoods (composite)")
    ap.add_argument("--cv-parts", default=None, choices=["random", "weights"],
                    help="stratified designs: cut the sample at random (the default "
                         "CV_PARTS) or draw parts whose rest extrapolates each weight class "
                         "at a rate proportional to the population's")
    ap.add_argument("--em-learn-mass", default="converged", choices=["converged", "always"],
                    help="when EM learns a profile mass (the chains' start and the "
                         "cross-validation's parts): once converged at the starting mass "
                         "within its sweeps (EM_LEARN_MASS, the default) or always, in a "
                         "phase of its own")
    ap.add_argument("--phi-mass-top", type=float, default=None,
                    help="log2 of the largest learnt profile mass (PHI_MASS_GRID ends at "
                         "2^13 = 8192): the grid extended or cut to end there, same spacing "
                         "(benchmarks/README.md, 'What moves slowly in the chains')")
    ap.add_argument("--profile-mass", default="prior", choices=["prior", "cv", "span"],
                    help="the profile mass of the keys of >= 20 levels: the prior's (learnt by "
                         "default) or, with the learnt prior and --overdispersion cv, chosen "
                         "by the cross-validation where the learnt one leaves the mixture too "
                         "smooth (profile_mass_cv)")
    ap.add_argument("--profile-mass-unreached", default=None, choices=["learnt", "largest"],
                    help="with --profile-mass: the mass where no candidate reaches the "
                         "held-out count (profile_mass_cv's unreached; default: the rule's "
                         "own, 'largest' for cv, 'learnt' for span; the span_mass results "
                         "stored before it existed are 'largest')")
    ap.add_argument("--cluster-correction", default="none", choices=["cv", "none"],
                    help="household designs: multiply the sample uniques' rates by "
                         "cluster_rate_correction's factors (mates' influence removed), or not")
    ap.add_argument("--split-merge", type=int, default=0, metavar="P",
                    help="the sampler's split-merge proposals per sweep (0: none, the default)")
    ap.add_argument("--uniques-kappa", action="store_true",
                    help="the notes also give the kappa at which the mixture's expected sample "
                         "uniques meet the sample's, and tau1 and tau2 at it (an in-sample "
                         "read of kappa beside the cross-validation's)")
    ap.add_argument("--ppc", type=int, default=0, metavar="R",
                    help="posterior predictive replicates of the sample's counts of counts per "
                         "chain; the notes give observed, predicted mean and p-value of "
                         "m1..m5 and m6+ (0: none, the default)")
    ap.add_argument("--baselines", default="benedetti-franconi,poisson-gamma,loglinear-main")
    ap.add_argument("--csv", default=None, help="write all tidy results to this file")
    ap.add_argument("--calibration-csv", default=None,
                    help="write the binned calibration of P(F=1|f=1) of every design and method "
                         "(sdcbayes.validation.calibration_table) to this file")
    ap.add_argument("--calibration-html", default=None,
                    help="write calibration plots (one per design) and the expected "
                         "calibration error to this HTML page")
    ap.add_argument("--summarise", nargs="*", default=None,
                    help="only print the tables of these result CSVs (from --csv)")
    args = ap.parse_args(argv)

    if args.summarise is not None:
        _report(pd.concat([pd.read_csv(f) for f in args.summarise], ignore_index=True))
        return 0
    phi_prior = phi_prior_spec(args.phi_a)
    import sdcbayes.models.latent_class as lcm

    lcm.EM_LEARN_MASS = args.em_learn_mass  # read by fit_em at each call
    if args.split_merge < 0:
        ap.error(f"--split-merge must be >= 0; got {args.split_merge}")
    if args.ppc < 0:
        ap.error(f"--ppc must be >= 0; got {args.ppc}")
    if args.phi_mass_top is not None:
        set_phi_mass_top(args.phi_mass_top)
    results, calib = [], []
    for pop_name, pop, levels in populations_with_codebook(args.populations):
        sz = {"confirmed": confirmed_rules(pop_name, pop.keys), "auto": "auto",
              "none": None}[args.rules]
        lc = latent_class_method(
            n_classes=args.classes, draws=args.draws, tune=args.tune, chains=args.chains,
            thin=args.thin, structural_zeros=sz, priors={"phi": phi_prior}, seed=args.seed,
            levels=levels if args.rules == "confirmed" else None, init=args.init,
            em_restarts=args.em_restarts, weights=args.weights == "classes",
            overdispersion=args.overdispersion,
            overdispersion_splits=args.overdispersion_splits,
            overdispersion_prior=(None if args.kappa_prior is None
                                  else _kappa_prior(args.kappa_prior)),
            overdispersion_predictive=args.cv_predictive,
            overdispersion_dispersion=args.cv_dispersion,
            overdispersion_part_mass=args.cv_part_mass,
            overdispersion_focus=args.cv_focus,
            overdispersion_partitions=args.cv_partitions,
            overdispersion_combine_ratios=args.cv_combine_ratios,
            overdispersion_parts=args.cv_parts,
            cluster_correction=None if args.cluster_correction == "none" else "cv",
            profile_mass=None if args.profile_mass == "prior" else args.profile_mass,
            profile_mass_unreached=args.profile_mass_unreached,
            overdispersion_ratios=(None if args.cv_ratios is None
                                   else [int(x) for x in args.cv_ratios.split(",")]),
            split_merge=args.split_merge, ppc=args.ppc, uniques_kappa_note=args.uniques_kappa,
        )
        methods = {"latent-class": lc}
        for b in filter(None, args.baselines.split(",")):
            methods[b] = BASELINES[b]
        for frac in (float(x) for x in args.fractions.split(",")):
            design = Design(pop, frac, args.kind, replicates=args.replicates, seed=args.seed)
            t0 = time.perf_counter()
            res = run_design(design, methods)
            results.append(res)
            calib.append(calibration_table(res))
            s = summarise(res)
            lcrow = s[(s.method == "latent-class")].set_index("quantity")
            parts = []
            for t in ("tau1", "tau2"):
                parts.append(
                    f"{t} truth {lcrow.at[t, 'truth']:.1f} est {lcrow.at[t, 'estimate']:.1f} "
                    f"(bias {100 * lcrow.at[t, 'rel_bias']:+.1f}%, "
                    f"cover {lcrow.at[t, 'coverage']:.2f})"
                )
            print(f"{design.label}: {time.perf_counter() - t0:.0f}s; latent-class "
                  + "; ".join(parts) + f"; {lcrow.at['tau1', 'time_s']:.1f} s/fit", flush=True)
            if args.csv:
                pd.concat(results, ignore_index=True).to_csv(args.csv, index=False)
            if args.calibration_csv:
                pd.concat(calib, ignore_index=True).to_csv(args.calibration_csv, index=False)
    if not results:
        return 1
    _report(pd.concat(results, ignore_index=True))
    if args.calibration_html:
        from pathlib import Path

        from sdcbayes.report import calibration_report

        Path(args.calibration_html).write_text(
            calibration_report(pd.concat(calib, ignore_index=True)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
