"""Benchmark: rank swapping (:func:`sdcbayes.protection.rank_swap`), speed and correlations.

Three variables drawn from a Gaussian copula with pairwise correlation 0.6 and
different margins (``normal``: N(0, 1); ``lognormal``: exp of N(10, 1), an
income-like skewed variable; ``uniform``: U(0, 1)), for 10^4, 10^5 and 10^6
records, rank-swapped at p = 1, 5 and 15 (percent of the records swapped; top and
bottom grouping as given, default 5 % each as sdcMicro). Prints per (records, p):

- seconds for the call (all three variables);
- the correlation of each variable's original and swapped values (over all
  records, so the top/bottom grouping counts too);
- the correlation between two variables before and after swapping
  (normal-lognormal and normal-uniform), and after / before, the R1 / R2 that
  Moore's R0 targets.

Usage: python benchmarks/rankswap.py [--sizes 10000 100000 1000000] [--seed 1]
       [--top 5] [--bottom 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from sdcbayes.protection import rank_swap

COLUMNS = ["normal", "lognormal", "uniform"]
PERCENTS = (1, 5, 15)
RHO = 0.6


def data(n: int, seed: int) -> pd.DataFrame:
    from scipy import stats

    rng = np.random.default_rng(seed)
    cov = np.full((3, 3), RHO) + (1 - RHO) * np.eye(3)
    z = rng.standard_normal((n, 3)) @ np.linalg.cholesky(cov).T
    return pd.DataFrame({"normal": z[:, 0], "lognormal": np.exp(10 + z[:, 1]),
                         "uniform": stats.norm.cdf(z[:, 2])})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--top", type=float, default=5)
    ap.add_argument("--bottom", type=float, default=5)
    args = ap.parse_args()
    print(f"rank_swap of {COLUMNS} (Gaussian copula, correlation {RHO}), top {args.top} %, "
          f"bottom {args.bottom} %, seed {args.seed}")
    head = (f"{'records':>9} {'p':>3} {'seconds':>8} {'r(x,x) norm':>11} {'lognorm':>8} "
            f"{'unif':>7} {'r(n,l) bef':>10} {'after':>7} {'ratio':>6} {'r(n,u) bef':>10} "
            f"{'after':>7} {'ratio':>6}")
    print(head)
    print("-" * len(head))
    for n in args.sizes:
        df = data(n, args.seed)
        before = df.corr().to_numpy()
        for p in PERCENTS:
            t0 = time.perf_counter()
            res = rank_swap(df, COLUMNS, p=p, top_percent=args.top,
                            bottom_percent=args.bottom, seed=args.seed)
            sec = time.perf_counter() - t0
            own = res.log.set_index("variable")["correlation"]
            after = res.frame[COLUMNS].corr().to_numpy()
            print(f"{n:>9} {p:>3} {sec:>8.2f} {own['normal']:>11.4f} {own['lognormal']:>8.4f} "
                  f"{own['uniform']:>7.4f} {before[0, 1]:>10.4f} {after[0, 1]:>7.4f} "
                  f"{after[0, 1] / before[0, 1]:>6.3f} {before[0, 2]:>10.4f} "
                  f"{after[0, 2]:>7.4f} {after[0, 2] / before[0, 2]:>6.3f}")


if __name__ == "__main__":
    main()
