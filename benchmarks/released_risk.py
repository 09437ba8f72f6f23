"""Benchmark: posterior risk of a locally suppressed demo file against its true risk.

The latent-class model is fitted once on the ORIGINAL demo sample
(:func:`sdcbayes.risk.posterior_assess.assess_posterior` with ``store_profiles=True``;
by default the package's own fit: 4 chains x 500 draws after 2000 sweeps, the
cross-validated overdispersion). The sample is then suppressed to k-anonymity
(:func:`sdcbayes.protection.local_suppression`, greedy and sequential, k = 2 and 3), and
each released file is scored from the same draws by
:func:`sdcbayes.risk.released.assess_released`. The truth: each released record's F
counts the demo population's units that match its non-blank keys, and ER = sum 1/F. The
closed form (what ``protect`` prints) is :func:`sdcbayes.risk.assess.assess_closed_form`
on the released file (sdcMicro's wildcard matching).

Printed: per file, the blanks and records with a blank, patterns, the true ER, the
released-file ER with its 90% interval over the parameters' posterior (not predictive),
the closed form, the same three for the blanked records only, the correlation of each
record's risk with its true 1/F, and the seconds of the released-file assessment.

Usage: python benchmarks/released_risk.py [--draws 500 --chains 4 --tune 2000]
       [--seed 1] [--top-cells 16] [--cases none,greedy3,greedy2,sequential3,sequential2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

import sdcbayes
from sdcbayes.datasets import demo_keys, load_demo
from sdcbayes.datasets.demo import _demo_population
from sdcbayes.protection import local_suppression
from sdcbayes.risk.assess import assess_closed_form
from sdcbayes.risk.posterior_assess import assess_posterior
from sdcbayes.risk.released import assess_released

CASES = ("none", "greedy3", "greedy2", "sequential3", "sequential2")


def true_F(released: pd.DataFrame, keys: list[str], population: pd.DataFrame) -> np.ndarray:
    """Population units matching each released record's non-blank keys."""
    blank = released[keys].isna()
    pattern = blank.apply(tuple, axis=1)
    F = np.zeros(len(released))
    for pat, idx in pattern.groupby(pattern).groups.items():
        shown = [k for k, b in zip(keys, pat, strict=True) if not b]
        pos = released.index.get_indexer(idx)
        if not shown:
            F[pos] = len(population)
            continue
        cnt = population.groupby(shown, observed=True).size().rename("F").reset_index()
        sub = released.loc[idx, shown].astype(object).merge(
            cnt.astype({k: object for k in shown}), on=shown, how="left")
        F[pos] = sub["F"].to_numpy()
    if not np.all(F >= 1):
        raise RuntimeError("a released record matches no population unit")
    return F


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=None, help="default: the package's (500)")
    ap.add_argument("--chains", type=int, default=None, help="default: the package's (4)")
    ap.add_argument("--tune", type=int, default=None, help="default: the package's (2000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--top-cells", type=int, default=16)
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    demo = load_demo()
    sample, keys = demo.sample, list(demo_keys())
    md = sdcbayes.Microdata(sample, keys, weight="weight")
    population = _demo_population()
    t0 = time.perf_counter()
    fit = assess_posterior(md, draws=args.draws, chains=args.chains, tune=args.tune,
                           random_seed=args.seed, store_profiles=True, ppc=0)
    st = fit.provenance["settings"]
    diag = fit.summary["diagnostics"]
    print(f"fit on the original demo sample: {st['chains']} chains x {st['draws']} draws after "
          f"{st['tune']} sweeps, seed {args.seed}, {time.perf_counter() - t0:.0f} s; "
          f"max R-hat {diag.get('max_r_hat') or float('nan'):.3f}, "
          f"min bulk ESS {diag.get('min_ess_bulk') or float('nan'):.0f}")
    print(f"top cells {args.top_cells}; intervals: 90% over the parameters' posterior\n")
    head = (f"{'file':<13}{'blanks (rec.)':>15}{'patterns (bl.)':>16}{'truth':>8}"
            f"{'released-file ER [90%]':>26}{'closed':>8}{'| blanked: truth':>17}"
            f"{'released':>10}{'closed':>8}{'| corr. 1/F':>13}{'s':>6}")
    print(head)
    print("-" * len(head))
    for case in args.cases.split(","):
        if case == "none":
            released = sample.copy()
        else:
            released = local_suppression(sample, keys, k=int(case[-1]),
                                         method=case[:-1]).frame
        F = true_F(released, keys, population)
        cf = assess_closed_form(sdcbayes.Microdata(released, keys, weight="weight"))
        t1 = time.perf_counter()
        res = assess_released(md, released, fit.idata, top_cells=args.top_cells)
        secs = time.perf_counter() - t1
        s = res.summary
        risk = res.records["risk"].to_numpy()
        cf_risk = cf.records["risk"].to_numpy(float)
        bl = released[keys].isna().any(axis=1).to_numpy()
        lo, hi = s["expected_reidentifications_hyper_interval"]
        corr = np.corrcoef(risk, 1 / F)[0, 1]
        corr_cf = np.corrcoef(cf_risk, 1 / F)[0, 1]
        print(f"{case:<13}{s['n_blanks']:>8} ({s['n_blanked_records']:>4})"
              f"{s['n_patterns']:>9} ({s['n_blanked_patterns']:>4})"
              f"{(1 / F).sum():>8.2f}{s['expected_reidentifications']:>10.2f} "
              f"[{lo:6.2f}, {hi:6.2f}]{cf.summary['expected_reidentifications']:>8.2f}"
              f"{(1 / F)[bl].sum():>17.2f}{s['expected_reidentifications_blanked_records']:>10.2f}"
              f"{cf_risk[bl].sum():>8.2f}   {corr:.3f}/{corr_cf:.3f}{secs:>6.1f}", flush=True)


if __name__ == "__main__":
    main()
