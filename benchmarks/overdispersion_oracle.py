"""Benchmark: which overdispersion kappa would the latent-class model need? (issue 7)

For each replicate SRS of a real design: fit the latent-class mixture with Poisson
cells (the Gibbs sampler of :class:`sdcbayes.models.latent_class.LatentClassModel`,
settings of ``benchmarks/latent_class_accuracy.py``), compute the posterior mean of
tau1 as a function of kappa over :data:`KAPPA_GRID` (:func:`prob_population_unique`
averaged over the draws), and find the "oracle" kappa: the one whose tau1 equals the
true tau1 of the sample (log-linear interpolation; inf when even Poisson cells fall
short, the grid's smallest value when even it overshoots). Beside it, the
cross-validated kappa posterior (:func:`overdispersion_cv`) with the chosen settings,
as median and 5-95% range, and tau1's bias at kappa = 1, 10 and inf.

The oracle is the kappa the population scale needs (an extrapolation by N/n); a
cross-validation at scale ratio r (parts of 1/r of the sample predicting the rest)
sees an extrapolation by r. The table shows, design by design, the median kappa at
each ratio of ``--ratios`` beside the oracle: the gap the cross-validation must
bridge (benchmarks/README.md).

How much of a replicate's error is the cross-validation's own noise: for the last
cross-validation of ``--ratios`` the table also gives the mean and the standard
deviation over the replicates of tau1's relative error under its kappa posterior
(``cv_error_mean``, ``cv_error_sd``; the Poisson-cell posterior of the mixture
averaged over that posterior, without the Gibbs run's own draws of kappa), beside
the spread the same replicates would have with one kappa for all of them
(``fixed_kappa``: the grid point whose mean error over the replicates is closest to
zero, chosen knowing the truth, so an oracle; ``fixed_error_sd``) and with Poisson
cells (``poisson_error_sd``). Where ``cv_error_sd`` is well above
``fixed_error_sd`` the per-sample kappa adds more error than it removes.

``--lattice`` separates the two scales the cross-validation moves together (a part
of n/r records, extrapolated by r): :func:`lattice_kappa` matches kappa at fit sizes
n/s and extrapolations s/t < s, and a second table gives their medians beside the
population's oracle (fit size n, extrapolation N/n).

Usage::

    python benchmarks/overdispersion_oracle.py [--populations adult9,scotland13]
        [--fractions 0.01,0.05,0.1] [--replicates 20] [--cv-predictive em|gibbs]
        [--kappa-prior log-uniform|half-cauchy[:1]] [--cv-dispersion binomial|parts]
        [--splits 1] [--ratios 2,4,8,4+8] [--profile-prior inverse|learn] [--lattice]
        [--csv out.csv]

Every row also carries the sample's features (:func:`sample_features`: n, N, keys, key
cells, f1, f2, log size of the key table), the inputs of a kappa learnt across designs
(``benchmarks/kappa_transfer.py``); ``--ratios ""`` skips the cross-validation (training
designs need only the oracle). A population may be another key set of a known file
(``adult6+workclass``, ``scotland13~industry``: ``latent_class_accuracy.parse_key_set``).

Whether the per-sample kappa reads the sample: ``kappa_corr`` (:func:`kappa_agreement`)
correlates, over a design's replicates, the last cross-validation's median kappa with
the oracle (log scale), beside the two spreads ``cv_log_sd`` and ``oracle_log_sd``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import (
    CV_MIN_PART,
    CV_SPLITS,
    KAPPA_GRID,
    PHI_PRIOR_DEFAULT,
    LatentClassModel,
    overdispersion_cv,
    prob_population_unique,
)
from sdcbayes.validation import (
    Design,
    _draw,
    _population_cells,
    truth_of_sample,
)

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from latent_class_accuracy import (  # noqa: E402
    _kappa_prior,
    confirmed_rules,
    populations_with_codebook,
)

#: Numbers of parts s of :func:`lattice_kappa` (fits to n/s records).
LATTICE_SIZES = (2, 4, 8, 16)


def oracle_kappa(tau1_of_kappa: np.ndarray, truth: float, grid=KAPPA_GRID) -> float:
    """The kappa at which the (increasing) tau1(kappa) curve meets the truth."""
    finite = np.isfinite(grid)
    y, lg = tau1_of_kappa[finite], np.log(grid[finite])
    if truth <= y[0]:
        return float(grid[finite][0])
    if truth >= y[-1]:
        return float("inf")
    return float(np.exp(np.interp(truth, y, lg)))


def error_spread(errors: np.ndarray, cv_errors: np.ndarray, grid=KAPPA_GRID) -> dict:
    """Mean and sd over replicates of tau1's relative error: cross-validated and fixed kappa.

    ``errors`` (replicates x grid): each replicate's relative error of tau1 at every
    kappa of ``grid`` (the last point inf, Poisson cells); ``cv_errors``: its error
    under the cross-validated kappa posterior. ``fixed_kappa`` is the grid point
    whose mean error is closest to zero (an oracle: it uses the truth).
    """
    errors = np.asarray(errors, dtype=float)
    j = int(np.argmin(np.abs(errors.mean(axis=0))))
    ddof = 1 if errors.shape[0] > 1 else 0
    return {"cv_error_mean": float(np.mean(cv_errors)),
            "cv_error_sd": float(np.std(cv_errors, ddof=ddof)),
            "fixed_kappa": float(grid[j]),
            "fixed_error_sd": float(errors[:, j].std(ddof=ddof)),
            "poisson_error_sd": float(errors[:, -1].std(ddof=ddof))}


def kappa_agreement(oracle: np.ndarray, cv: np.ndarray, grid=KAPPA_GRID) -> dict:
    """How far a design's per-sample cross-validated kappa follows its per-sample oracle.

    On the log scale, with both capped at the largest finite value of ``grid`` (an
    oracle of inf -- even Poisson cells fall short -- and a cross-validation that
    prefers Poisson cells both sit at the cap): the Pearson correlation over the
    replicates (``kappa_corr``; NaN when either does not vary), and each one's
    standard deviation (``cv_log_sd``, ``oracle_log_sd``). A correlation near zero
    with ``cv_log_sd`` well above ``oracle_log_sd`` says the sample-to-sample movement
    of the cross-validated kappa is noise about the design's kappa, not a reading of
    the sample's own.
    """
    cap = float(np.max(np.asarray(grid, dtype=float)[np.isfinite(grid)]))
    lo = np.log(np.minimum(np.asarray(oracle, dtype=float), cap))
    lc = np.log(np.minimum(np.asarray(cv, dtype=float), cap))
    ddof = 1 if lo.size > 1 else 0
    corr = (float(np.corrcoef(lo, lc)[0, 1]) if lo.size > 1 and lo.std() > 0 and lc.std() > 0
            else float("nan"))
    return {"kappa_corr": corr, "cv_log_sd": float(lc.std(ddof=ddof)),
            "oracle_log_sd": float(lo.std(ddof=ddof))}


def lattice_kappa(model: LatentClassModel, rng, sizes=LATTICE_SIZES,
                  em_restarts: int = 2) -> dict[tuple[int, int], float]:
    r"""Matched kappa of held-out predictions on a lattice of fit sizes and extrapolations.

    The cross-validation of :func:`overdispersion_cv` fits a mixture to a part of n/r
    records and predicts uniqueness in the whole sample: fit size and extrapolation
    factor r move together. Here they are separated: for each s of ``sizes`` the
    records are cut at random into s parts of n/s; the mixture fitted to a part
    (penalised EM, as the cross-validation's default) predicts which of its uniques
    stay unique in a target of n/t records that contains it (t < s, the parts of the
    same cut grouped s/t at a time), an extrapolation by s/t. For each (s, t) the
    count T of part-uniques that stay unique, summed over the parts, is matched to the
    prediction :math:`\sum_k P_k(\kappa)` over :data:`KAPPA_GRID` (the grid point
    whose prediction is nearest to T; inf when Poisson cells come nearest). A size is
    used when its parts hold :data:`CV_MIN_PART` records.

    Returns ``{(s, t): kappa}``.
    """
    rows_f = np.rint(model.counts).astype(np.int64)
    K, C = rows_f.size, model.key_codes.shape[0]
    cell_of_record = np.repeat(np.arange(K), rows_f)
    n = cell_of_record.size
    out = {}
    for s in sizes:
        if n // s < CV_MIN_PART:
            continue
        perm = rng.permutation(n)
        bounds = [i * n // s for i in range(s + 1)]
        targets = [t for t in (1, 2, 4, 8, 16) if t < s and s % t == 0]
        observed = dict.fromkeys(targets, 0)
        predicted = {t: np.zeros(KAPPA_GRID.size) for t in targets}
        for i in range(s):
            part = perm[bounds[i]:bounds[i + 1]]
            counts = np.bincount(cell_of_record[part], minlength=K)
            keep = counts > 0
            part_model = LatentClassModel(
                model.codes[keep], counts[keep], model.n_levels, keys=model.keys,
                levels=model.levels, n_classes=model.H,
                structural_zeros=model.structural_zeros, priors=model.priors)
            uniques = np.flatnonzero(
                np.bincount(model.key_index, weights=counts, minlength=C) == 1)
            em = part_model.fit_em(n_restarts=em_restarts, random_seed=rng)
            pi = part_model.key_cell_probabilities(em["w"], em["phi"], model.key_codes[uniques])
            for t in targets:
                group = s // t  # the target: the t-th of the groups of s/t parts holding part i
                first = (i // group) * group
                target = perm[bounds[first]:bounds[first + group]]
                in_target = np.bincount(model.key_index, minlength=C,
                                        weights=np.bincount(cell_of_record[target], minlength=K))
                observed[t] += int(np.count_nonzero(in_target[uniques] == 1))
                lam, smean = (target.size - part.size) * pi, part.size * pi
                predicted[t] += [prob_population_unique(lam, k, smean).sum() for k in KAPPA_GRID]
        for t in targets:
            out[(s, t)] = float(KAPPA_GRID[int(np.argmin(np.abs(predicted[t] - observed[t])))])
    return out


def sample_features(model: LatentClassModel, N: int) -> dict:
    """What a sample says about its design, for a kappa learnt across designs.

    ``n``, ``N``, ``keys`` (J), ``cells`` (occupied key cells), ``f1`` / ``f2`` (key
    cells seen once / twice), ``log_space`` (sum of the log numbers of codebook levels
    of the keys: the log size of the key table); per-cell work only.
    """
    key_counts = np.bincount(model.key_index, weights=model.counts,
                             minlength=model.key_codes.shape[0])
    f = np.rint(key_counts[key_counts > 0]).astype(np.int64)
    n_levels = np.asarray(model.n_levels, dtype=float)[:model.n_keys]
    return {"n": int(f.sum()), "N": int(N), "keys": int(model.n_keys), "cells": int(f.size),
            "f1": int(np.count_nonzero(f == 1)), "f2": int(np.count_nonzero(f == 2)),
            "log_space": float(np.log(n_levels).sum())}


def _quantile(grid, weights, p):
    return float(grid[np.searchsorted(np.cumsum(weights), p)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--populations", default="adult9,scotland13")
    ap.add_argument("--fractions", default="0.01,0.05,0.1")
    ap.add_argument("--replicates", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cv-predictive", default="em", choices=["em", "gibbs"])
    ap.add_argument("--kappa-prior", default="log-uniform")
    ap.add_argument("--cv-dispersion", default="binomial", choices=["binomial", "parts"],
                    help="variance of the held-out count (binomial: the setting of the "
                         "README's table; parts: the model's default CV_DISPERSION)")
    ap.add_argument("--splits", type=int, default=CV_SPLITS,
                    help="random partitions per scale ratio (default CV_SPLITS)")
    ap.add_argument("--ratios", default="2,4,8,4+8",
                    help="cross-validations to compare, comma-separated; each a scale ratio "
                         "or ratios joined by + (mixed); the last is the one whose 90%% "
                         "interval is checked against the oracle; empty: no cross-validation "
                         "(the oracle and the sample's features only)")
    ap.add_argument("--profile-prior", default="inverse", choices=["inverse", "learn"],
                    help="the mixture's profile prior: 1/L_j per level (inverse, as the "
                         "numbers quoted in README were measured) or the model's default "
                         "PHI_PRIOR_DEFAULT (learn: learnt mass on keys of >= 20 levels)")
    ap.add_argument("--csv", default=None,
                    help="write the per-replicate results here (the tau1 errors over "
                         "KAPPA_GRID as one space-separated column, error_curve)")
    ap.add_argument("--lattice", action="store_true",
                    help="also the matched kappa at fit sizes n/s and extrapolations s/t "
                         "(lattice_kappa), a second table of medians")
    args = ap.parse_args(argv)
    settings = [[int(x) for x in item.split("+")] for item in args.ratios.split(",") if item]
    prior = _kappa_prior(args.kappa_prior)
    at = {k: int(np.argmin(np.abs(np.log(KAPPA_GRID[:-1]) - np.log(k)))) for k in (1.0, 10.0)}
    rows = []
    for pop_name, pop, levels in populations_with_codebook(args.populations):
        keys, frame = list(pop.keys), pop.frame
        N = len(frame)
        pop_cell, pop_counts = _population_cells(frame, keys)
        for frac in (float(x) for x in args.fractions.split(",")):
            design = Design(pop, frac, "srs", replicates=args.replicates, seed=args.seed)
            t0 = time.perf_counter()
            for r in range(args.replicates):
                rng = np.random.default_rng([args.seed, r])  # the samples of run_design
                index, _ = _draw(rng, None, frac, N)
                n = index.size
                truth = truth_of_sample(pop_cell, pop_counts, index)
                sample = frame.iloc[index][keys].reset_index(drop=True).astype(str)
                model = LatentClassModel.from_frame(
                    sample, keys, levels=levels, n_classes=30,
                    structural_zeros=confirmed_rules(pop_name, keys),
                    priors={"phi": ({"a": "inverse"} if args.profile_prior == "inverse"
                                    else dict(PHI_PRIOR_DEFAULT))})
                idata = model.sample(draws=150, tune=100, chains=2, N=float(N), random_seed=r)
                pi = idata.posterior["pi"].values.reshape(-1, idata.posterior["pi"].shape[-1])
                lam, smean = (N - n) * pi, n * pi
                curve = np.array([prob_population_unique(lam, k, smean).sum(axis=1).mean()
                                  for k in KAPPA_GRID])
                row = {"design": design.label, "replicate": r, "truth": truth.tau1,
                       "oracle_kappa": oracle_kappa(curve, truth.tau1),
                       **sample_features(model, N)}
                for ratios in settings:
                    od = overdispersion_cv(model, random_seed=r, n_splits=args.splits,
                                           prior=prior, predictive=args.cv_predictive,
                                           ratios=ratios, max_ratio=N / n,
                                           dispersion=args.cv_dispersion)
                    g, w = od["grid"], od["weights"]
                    row["cv_" + "+".join(map(str, ratios))] = _quantile(g, w, 0.5)
                if args.lattice:
                    lat = lattice_kappa(model, np.random.default_rng([args.seed, r, 1]))
                    row.update({f"fit n/{s_}, ratio {s_ // t_}": k for (s_, t_), k in lat.items()})
                if settings:
                    row.update({"cv_5%": _quantile(g, w, 0.05), "cv_95%": _quantile(g, w, 0.95),
                                "error_cv": float(w @ curve) / truth.tau1 - 1})
                rows.append({
                    **row,
                    "error_curve": curve / truth.tau1 - 1,
                    "bias_at_1": curve[at[1.0]] / truth.tau1 - 1,
                    "bias_at_10": curve[at[10.0]] / truth.tau1 - 1,
                    "bias_poisson": curve[-1] / truth.tau1 - 1,
                })
            print(f"{design.label}: {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    if not rows:
        return 1
    res = pd.DataFrame(rows)
    if not settings:  # no cross-validation: the oracle's error curves only
        res["error_cv"] = np.nan
    res["oracle_in_cv_90"] = (res.oracle_kappa.between(res["cv_5%"], res["cv_95%"])
                              if settings else np.nan)
    spread = pd.DataFrame([error_spread(np.stack(g.error_curve.to_numpy()), g.error_cv.to_numpy())
                           for _, g in res.groupby("design")],
                          index=pd.Index([d for d, _ in res.groupby("design")], name="design"))
    if settings:
        last = "cv_" + "+".join(map(str, settings[-1]))
        agree = pd.DataFrame([kappa_agreement(g.oracle_kappa.to_numpy(), g[last].to_numpy())
                              for _, g in res.groupby("design")], index=spread.index)
        spread = spread.join(agree)
    if args.csv:
        res.assign(error_curve=[" ".join(f"{e:.6g}" for e in c) for c in res.error_curve]
                   ).to_csv(args.csv, index=False)
    res = res.drop(columns="error_curve")
    summ = res.groupby("design").agg(
        replicates=("replicate", "size"),
        oracle_q10=("oracle_kappa", lambda x: np.quantile(x, 0.1, method="lower")),
        oracle_median=("oracle_kappa", lambda x: np.quantile(x, 0.5, method="lower")),
        oracle_q90=("oracle_kappa", lambda x: np.quantile(x, 0.9, method="higher")),
        **{c: (c, "median") for c in res.columns if c.startswith("cv_") and "%" not in c},
        oracle_in_cv_90=("oracle_in_cv_90", "mean"),
        bias_at_1=("bias_at_1", "mean"), bias_at_10=("bias_at_10", "mean"),
        bias_poisson=("bias_poisson", "mean"),
    ).join(spread)
    print(f"cross-validation: {args.cv_predictive} fits of the parts, prior {args.kappa_prior}, "
          f"{args.splits} partition(s) per ratio; cv_R = median kappa at scale ratios R, "
          f"oracle_in_cv_90 for {args.ratios.split(',')[-1]}")
    with pd.option_context("display.width", 200):
        print(summ.round(3).to_string())
        lattice = [c for c in res.columns if c.startswith("fit n/")]
        if lattice:
            print("\nmatched kappa (median over the replicates) by fit size n/s and "
                  "extrapolation s/t (lattice_kappa); the population: fit n, ratio N/n")
            lat = res.groupby("design")[lattice].median().T
            lat.loc["population (oracle)"] = summ.oracle_median
            print(lat.round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
