"""Benchmark: memory and time of the posterior risk assessment (issue 4).

Per-record posterior risk (mean and 90% interval), file-level posterior predictive
of ER, tau1, tau2, the benchmark rule per draw and household risk, for a file of
10^6 records (``make_benchmark_file``: 5 keys, 16,000-cell space, households of
about 3) from 4000 posterior draws. The posterior is built by hand (no PyMC fit),
so only the risk layer is measured:

* Poisson-gamma: draws of (alpha, beta) around the closed-form scale; conditionals
  are evaluated per distinct f_k (draws x distinct-f arrays).
* negbin: draws of p_k per cell (draws x cells, as the fitted posterior stores it).

A draws x records array would take 4000 x 10^6 x 8 B = 32 GB; the target is a
peak below 1 GB (tracemalloc, which counts NumPy allocations). The cell table is
built before measuring.

Usage: python benchmarks/posterior_memory.py [--records 1e6] [--draws 4000] [--model both]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import xarray as xr

from sdcbayes import Microdata
from sdcbayes.datasets import make_benchmark_file
from sdcbayes.risk.posterior_assess import assess_from_posterior

KEYS = ["key1", "key2", "key3", "key4", "key5"]


def posterior(model: str, md, draws: int, rng) -> xr.Dataset:
    coords = {"chain": [0], "draw": np.arange(draws)}
    if model == "poisson-gamma":
        K = md.cells.K
        alpha = rng.lognormal(np.log(0.8), 0.05, (1, draws))
        beta = 1.0 / (K * alpha) * rng.lognormal(0.0, 0.02, (1, draws))
        return xr.Dataset(
            {"alpha": (("chain", "draw"), alpha), "beta": (("chain", "draw"), beta)},
            coords=coords,
        )
    fk = md.cells.fk
    p_hat = np.minimum(fk / md.cells.Fk_hat, 1 - 1e-9)
    logit = np.log(p_hat) - np.log1p(-p_hat)
    z = rng.standard_normal((1, draws, fk.size)) * 0.3 / np.sqrt(fk)
    p = 1.0 / (1.0 + np.exp(-(logit + z)))
    return xr.Dataset({"p": (("chain", "draw", "cell"), p)}, coords=coords)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=float, default=1e6)
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--model", choices=["poisson-gamma", "negbin", "both"], default="both")
    args = ap.parse_args()
    n = int(args.records)
    frame = make_benchmark_file(n, seed=0)
    md = Microdata(frame, keys=KEYS, weight="weight", household="household_id")
    _ = md.cells  # build the cell table outside the measurement
    print(f"{n:,} records, {md.cells.n_cells:,} cells, {md.cells.n_sample_uniques:,} uniques, "
          f"{args.draws} draws")
    models = ["poisson-gamma", "negbin"] if args.model == "both" else [args.model]
    rng = np.random.default_rng(1)
    print(f"{'model':<15}{'time s':>9}{'peak MB':>10}{'predictive':>12}  ER [90% interval]")
    for model in models:
        post = posterior(model, md, args.draws, rng)
        N = float(md.cells.Fk_hat.sum())
        tracemalloc.start()
        t0 = time.perf_counter()
        res = assess_from_posterior(md, post, model, N=N, random_seed=2)
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        s = res.summary
        lo, hi = s["expected_reidentifications_interval"]
        print(
            f"{model:<15}{elapsed:>9.2f}{peak / 1e6:>10.0f}{s['predictive']:>12}  "
            f"{s['expected_reidentifications']:.1f} [{lo:.1f}, {hi:.1f}]"
            + ("" if peak < 1e9 else "   ** above 1 GB **")
        )


if __name__ == "__main__":
    main()
