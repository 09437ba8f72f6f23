"""Benchmark: data shuffling (:func:`sdcbayes.protection.shuffle`), time and rank correlations.

Three confidential variables (lognormal, income-like) and three predictors (two
numeric, one categorical of 5 levels) from a Gaussian copula; for 10^5 and 10^6
records (``--sizes``) and each method/covmethod, prints the seconds of one
``shuffle`` call (one core: run with ``OMP_NUM_THREADS=1``) and the largest
change of a Spearman correlation between a shuffled variable and a numeric predictor
or another shuffled variable (``ds`` + ``spearman`` keeps them to sampling error).

With ``--r`` also times sdcMicro's ``shuffle`` on the same file (10^5 records only,
written to a temporary CSV; needs ``Rscript`` with sdcMicro on ``R_LIBS``), the time
of the call alone (``system.time``), R's own reading of the CSV excluded.

Usage: OMP_NUM_THREADS=1 python benchmarks/shuffle.py [--sizes 100000 1000000] [--seed 1]
       [--r]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from sdcbayes.protection import shuffle

Y = ["y1", "y2", "y3"]
X = ["x1", "x2", "g"]
SETTINGS = [("ds", "spearman"), ("ds", "pearson"), ("ds", "normal-scores"), ("mvn", "spearman"),
            ("mvn", "pearson")]


def data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cov = np.full((6, 6), 0.3) + 0.7 * np.eye(6)
    z = rng.standard_normal((n, 6)) @ np.linalg.cholesky(cov).T
    frame = pd.DataFrame({f"y{j + 1}": np.exp(10 + z[:, j]).round(0) for j in range(3)})
    frame["x1"], frame["x2"] = z[:, 3], z[:, 4]
    frame["g"] = np.digitize(z[:, 5], [-1.0, -0.3, 0.3, 1.0]).astype(str)  # 5 levels
    return frame


def max_rank_change(frame: pd.DataFrame, out: pd.DataFrame) -> float:
    worst = 0.0
    for i, a in enumerate(Y):
        for b in ["x1", "x2"] + Y[i + 1:]:
            before = stats.spearmanr(frame[a], frame[b])[0]
            after = stats.spearmanr(out[a], out[b])[0]
            worst = max(worst, abs(after - before))
    return worst


R_SCRIPT = """
suppressPackageStartupMessages(library(sdcMicro))
d <- read.csv("{csv}"); d$g <- factor(d$g)
for (s in c("ds_spearman", "ds_pearson", "mvn_spearman", "mvn_pearson")) {{
  p <- strsplit(s, "_")[[1]]
  set.seed(1)
  t <- system.time(shuffle(d, form = y1 + y2 + y3 ~ x1 + x2 + g, method = p[1],
                           covmethod = p[2]))[["elapsed"]]
  cat(s, t, "\\n")
}}
"""


def r_times(frame: pd.DataFrame) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "d.csv"
        frame.to_csv(csv, index=False)
        script = Path(tmp) / "s.R"
        script.write_text(R_SCRIPT.format(csv=csv))
        out = subprocess.run(["Rscript", str(script)], capture_output=True, text=True,
                             check=True).stdout
    return {line.split()[0]: float(line.split()[1]) for line in out.splitlines() if line}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--r", action="store_true", help="also time sdcMicro at 10^5 records")
    args = ap.parse_args()
    print("(g, a 5-level predictor, enters as indicators: with spearman and pearson, as in "
          "sdcMicro, the correlations are not kept; normal-scores keeps them)")
    print(f"{'records':>9} {'method':>6} {'cov':>13} {'seconds':>8} "
          f"{'max |d rho|':>11} {'sdcMicro s':>10}")
    for n in args.sizes:
        frame = data(n, args.seed)
        r = r_times(frame) if args.r and n == 100_000 else {}
        for method, cov in SETTINGS:
            t0 = time.perf_counter()
            with warnings.catch_warnings():  # the 5-level predictor's caveat, said once above
                warnings.simplefilter("ignore", UserWarning)
                res = shuffle(frame, Y, X, method=method, covmethod=cov, seed=args.seed)
            sec = time.perf_counter() - t0
            rt = r.get(f"{method}_{cov}")
            print(f"{n:>9,} {method:>6} {cov:>13} {sec:>8.2f} "
                  f"{max_rank_change(frame, res.frame):>11.3f} "
                  f"{'' if rt is None else f'{rt:.2f}':>10}")


if __name__ == "__main__":
    main()
