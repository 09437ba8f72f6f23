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
bridge (README, "Accuracy").

Usage::

    python benchmarks/overdispersion_oracle.py [--populations adult9,scotland13]
        [--fractions 0.01,0.05,0.1] [--replicates 20] [--cv-predictive em|gibbs]
        [--kappa-prior log-uniform|half-cauchy[:1]] [--cv-dispersion binomial|parts]
        [--splits 1] [--ratios 2,4,8,4+8]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import (
    CV_SPLITS,
    KAPPA_GRID,
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
    CONFIRMED_RULES,
    _kappa_prior,
    populations_with_codebook,
)


def oracle_kappa(tau1_of_kappa: np.ndarray, truth: float, grid=KAPPA_GRID) -> float:
    """The kappa at which the (increasing) tau1(kappa) curve meets the truth."""
    finite = np.isfinite(grid)
    y, lg = tau1_of_kappa[finite], np.log(grid[finite])
    if truth <= y[0]:
        return float(grid[finite][0])
    if truth >= y[-1]:
        return float("inf")
    return float(np.exp(np.interp(truth, y, lg)))


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
                         "interval is checked against the oracle")
    args = ap.parse_args(argv)
    settings = [[int(x) for x in item.split("+")] for item in args.ratios.split(",")]
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
                    structural_zeros=CONFIRMED_RULES.get(pop_name),
                    priors={"phi": {"a": "inverse"}})
                idata = model.sample(draws=150, tune=100, chains=2, N=float(N), random_seed=r)
                pi = idata.posterior["pi"].values.reshape(-1, idata.posterior["pi"].shape[-1])
                lam, smean = (N - n) * pi, n * pi
                curve = np.array([prob_population_unique(lam, k, smean).sum(axis=1).mean()
                                  for k in KAPPA_GRID])
                row = {"design": design.label, "replicate": r, "truth": truth.tau1,
                       "oracle_kappa": oracle_kappa(curve, truth.tau1)}
                for ratios in settings:
                    od = overdispersion_cv(model, random_seed=r, n_splits=args.splits,
                                           prior=prior, predictive=args.cv_predictive,
                                           ratios=ratios, max_ratio=N / n,
                                           dispersion=args.cv_dispersion)
                    g, w = od["grid"], od["weights"]
                    row["cv_" + "+".join(map(str, ratios))] = _quantile(g, w, 0.5)
                rows.append({
                    **row, "cv_5%": _quantile(g, w, 0.05), "cv_95%": _quantile(g, w, 0.95),
                    "bias_at_1": curve[at[1.0]] / truth.tau1 - 1,
                    "bias_at_10": curve[at[10.0]] / truth.tau1 - 1,
                    "bias_poisson": curve[-1] / truth.tau1 - 1,
                })
            print(f"{design.label}: {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    if not rows:
        return 1
    res = pd.DataFrame(rows)
    res["oracle_in_cv_90"] = res.oracle_kappa.between(res["cv_5%"], res["cv_95%"])
    summ = res.groupby("design").agg(
        replicates=("replicate", "size"),
        oracle_q10=("oracle_kappa", lambda x: np.quantile(x, 0.1, method="lower")),
        oracle_median=("oracle_kappa", lambda x: np.quantile(x, 0.5, method="lower")),
        oracle_q90=("oracle_kappa", lambda x: np.quantile(x, 0.9, method="higher")),
        **{c: (c, "median") for c in res.columns if c.startswith("cv_") and "%" not in c},
        oracle_in_cv_90=("oracle_in_cv_90", "mean"),
        bias_at_1=("bias_at_1", "mean"), bias_at_10=("bias_at_10", "mean"),
        bias_poisson=("bias_poisson", "mean"),
    )
    print(f"cross-validation: {args.cv_predictive} fits of the parts, prior {args.kappa_prior}, "
          f"{args.splits} partition(s) per ratio; cv_R = median kappa at scale ratios R, "
          f"oracle_in_cv_90 for {args.ratios.split(',')[-1]}")
    with pd.option_context("display.width", 200):
        print(summ.round(3).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
