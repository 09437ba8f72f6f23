"""Benchmark: accuracy of the Bayesian log-linear model with shrinkage priors (issue 7).

Runs :func:`sdcbayes.validation.loglinear_bayes_method` (all two-way
interactions, one HalfNormal(1) scale per block fitted by type-II MAP, Laplace
posterior, Poisson or negbin counts) beside the closed-form baselines of
:mod:`sdcbayes.validation` (by default the frequentist log-linear plug-ins it
generalises, main effects and two-way IPF, and the Poisson-gamma model) on SRS
designs of the real populations: population = the whole file, seeded samples,
truth tau1, tau2 and re-identifications from the population counts. Prints, per
design and method, relative bias and RMSE, 90% interval coverage and width, and the
time per fit.

The zero-cell sum is exact on Adult 6 keys (3.5e6 cells) and Scotland 7 keys
(4.3e4); on Adult 9 and Scotland 13 keys (2.8e9 and 1.1e10 cells) it is the
importance-sampled estimate (``--importance`` cells).

Usage (the machine's cores are shared: ``nice``, one BLAS thread)::

    OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/loglinear_accuracy.py \\
        [--populations scotland7,adult6] [--fractions 0.01,0.05,0.1] [--replicates 10]
        [--seed 0] [--family poisson|negbin] [--draws 400] [--importance 200000]
        [--baselines loglinear-main,loglinear-2way,poisson-gamma] [--csv out.csv]
    python benchmarks/loglinear_accuracy.py --summarise a.csv b.csv
"""

from __future__ import annotations

import argparse
import sys
import time

import pandas as pd

from sdcbayes.validation import (
    BASELINES,
    Design,
    SkipDesign,
    load_population,
    loglinear_bayes_method,
    run_design,
    summarise,
)

METHOD = "loglinear-bayes"


def _report(allres: pd.DataFrame) -> None:
    summ = summarise(allres)
    summ = summ[summ.quantity.isin(["tau1", "tau2", "expected_reidentifications"])]
    cols = ["design", "method", "quantity", "replicates", "truth", "estimate", "rel_bias",
            "rel_rmse", "coverage", "width", "time_s"]
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(summ[cols].round(3).to_string(index=False))
    notes = allres[(allres.method.str.startswith(METHOD)) & (allres.quantity == "tau1")]
    if len(notes):
        print("\nfit notes (first replicate per design):")
        for design, g in notes.groupby("design", sort=False):
            print(f"  {design}: {g['note'].iloc[0]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--populations", default="scotland7,adult6")
    ap.add_argument("--fractions", default="0.01,0.05,0.1")
    ap.add_argument("--replicates", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--family", default="poisson", choices=["poisson", "negbin"])
    ap.add_argument("--draws", type=int, default=400)
    ap.add_argument("--importance", type=int, default=200_000)
    ap.add_argument("--baselines", default="loglinear-main,loglinear-2way,poisson-gamma")
    ap.add_argument("--csv", default=None, help="write all tidy results to this file")
    ap.add_argument("--summarise", nargs="*", default=None,
                    help="only print the tables of these result CSVs (from --csv)")
    args = ap.parse_args(argv)

    if args.summarise is not None:
        _report(pd.concat([pd.read_csv(f) for f in args.summarise], ignore_index=True))
        return 0
    name = f"{METHOD}-{args.family}"
    results = []
    for pop_name in args.populations.split(","):
        try:
            pop = load_population(pop_name)
        except SkipDesign as exc:
            print(f"skip {pop_name}: {exc}", file=sys.stderr)
            continue
        methods = {name: loglinear_bayes_method(family=args.family, draws=args.draws,
                                                seed=args.seed, n_importance=args.importance)}
        for b in filter(None, args.baselines.split(",")):
            methods[b] = BASELINES[b]
        for frac in (float(x) for x in args.fractions.split(",")):
            design = Design(pop, frac, "srs", replicates=args.replicates, seed=args.seed)
            t0 = time.perf_counter()
            res = run_design(design, methods)
            results.append(res)
            s = summarise(res)
            row = s[s.method == name].set_index("quantity")
            parts = [
                f"{t} truth {row.at[t, 'truth']:.1f} est {row.at[t, 'estimate']:.1f} "
                f"(bias {100 * row.at[t, 'rel_bias']:+.1f}%, cover {row.at[t, 'coverage']:.2f})"
                for t in ("tau1", "tau2") if t in row.index
            ]
            t_fit = row["time_s"].iloc[0] if len(row) else float("nan")
            print(f"{design.label}: {time.perf_counter() - t0:.0f}s; {name} " + "; ".join(parts)
                  + f"; {t_fit:.1f} s/fit", flush=True)
            if args.csv:
                pd.concat(results, ignore_index=True).to_csv(args.csv, index=False)
    if not results:
        return 1
    _report(pd.concat(results, ignore_index=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
