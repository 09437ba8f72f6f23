"""Benchmark: time and memory of the convergence diagnostics, ArviZ against vectorised.

``compute_diagnostics`` needs, for every element of every posterior variable, the
rank-normalised split R-hat and the bulk and tail effective sample sizes (Vehtari,
Gelman, Simpson, Carpenter and Bürkner 2021). ArviZ 0.23 (``az.rhat``,
``az.ess(method="bulk")``, ``az.ess(method="tail")``) loops over the elements in Python;
``sdcbayes.inference.diagnostics._rank_diagnostics_dataset`` computes the same numbers
for blocks of elements at once. This script measures, on 4 chains x 500 draws of
random-walk-plus-noise draws per element (as a per-cell parameter, such as the
negative-binomial model's per-cell offsets were before it sampled sigma alone):

* wall time of each ArviZ statistic and of the vectorised route (all three together),
  at 1,000 and 5,000 elements for ArviZ (nothing is extrapolated to larger sizes), and
  at 1,000, 5,000, 20,000 and 87,000 elements for the vectorised route;
* peak memory of the vectorised route (tracemalloc, which counts NumPy's allocations;
  measured in a second, untimed run, above the draws themselves, whose size is shown);
* the largest absolute and relative difference from ArviZ of each statistic, and
  whether the nan/inf positions agree, at the sizes where both ran.

Usage
-----
OMP_NUM_THREADS=1 python benchmarks/diagnostics.py [--sizes 1e3 5e3 2e4 8.7e4]
[--arviz-max 5000] [--chains 4] [--draws 500] [--seed 0]

Takes about two minutes at the defaults on one core (most of it ArviZ's 5,000).
"""

from __future__ import annotations

import argparse
import logging
import time
import tracemalloc
import warnings

import arviz as az
import numpy as np
import xarray as xr

from sdcbayes import _compat
from sdcbayes.inference.diagnostics import _rank_diagnostics_dataset

STATS = ("rhat", "ess_bulk", "ess_tail")


def draws(chains: int, n_draws: int, elements: int, seed: int) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(chains, n_draws, elements)).cumsum(axis=1) * 0.05
    x += rng.normal(size=(chains, n_draws, elements))
    return xr.Dataset({"p": (("chain", "draw", "cell"), x)})


def run_arviz(ds: xr.Dataset) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    calls = {
        "rhat": lambda: az.rhat(ds),
        "ess_bulk": lambda: az.ess(ds, method="bulk"),
        # 5% and 95% quantiles named: ArviZ 1's default is its ci_prob (0.89)
        "ess_tail": lambda: az.ess(ds, method="tail", prob=(0.05, 0.95)),
    }
    times, values = {}, {}
    for name, call in calls.items():
        t = time.perf_counter()
        values[name] = np.asarray(call()["p"].values, dtype=float)
        times[name] = time.perf_counter() - t
    return times, values


def run_vectorised(ds: xr.Dataset) -> tuple[float, dict[str, np.ndarray]]:
    t = time.perf_counter()
    out = _rank_diagnostics_dataset(ds, with_rhat=True)
    elapsed = time.perf_counter() - t
    return elapsed, {n: np.asarray(o["p"].values) for n, o in zip(STATS, out, strict=True)}


def peak_memory_mb(ds: xr.Dataset) -> float:
    tracemalloc.start()
    tracemalloc.reset_peak()
    _rank_diagnostics_dataset(ds, with_rhat=True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def differences(ours: np.ndarray, ref: np.ndarray) -> tuple[float, float, bool]:
    same_nonfinite = bool(
        np.array_equal(np.isnan(ours), np.isnan(ref))
        and np.array_equal(np.isinf(ours), np.isinf(ref))
    )
    fin = np.isfinite(ref) & np.isfinite(ours)
    if not fin.any():
        return 0.0, 0.0, same_nonfinite
    diff = np.abs(ours[fin] - ref[fin])
    return float(diff.max()), float((diff / np.abs(ref[fin])).max()), same_nonfinite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1e3, 5e3, 2e4, 8.7e4])
    ap.add_argument("--arviz-max", type=float, default=5e3,
                    help="run ArviZ up to this many elements (default 5000)")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    logging.getLogger("arviz").setLevel(logging.ERROR)
    warnings.simplefilter("ignore", RuntimeWarning)

    print(f"{args.chains} chains x {args.draws} draws per element; "
          f"ArviZ {az.__version__}, NumPy {np.__version__}, Numba variance route: "
          f"{_compat.numba_flag()}")
    header = (f"{'elements':>9} {'route':<10} {'rhat s':>8} {'bulk s':>8} {'tail s':>8} "
              f"{'total s':>8} {'draws MB':>9} {'peak MB':>8}")
    print(header)
    print("-" * len(header))
    diff_rows = []
    for size in args.sizes:
        k = int(size)
        ds = draws(args.chains, args.draws, k, args.seed)
        input_mb = ds["p"].nbytes / 2**20
        ref = None
        if k <= args.arviz_max:
            times, ref = run_arviz(ds)
            print(f"{k:>9,} {'ArviZ':<10} {times['rhat']:>8.2f} {times['ess_bulk']:>8.2f} "
                  f"{times['ess_tail']:>8.2f} {sum(times.values()):>8.2f} {input_mb:>9.0f} "
                  f"{'':>8}")
        elapsed, ours = run_vectorised(ds)
        peak = peak_memory_mb(ds)
        print(f"{k:>9,} {'vectorised':<10} {'':>8} {'':>8} {'':>8} {elapsed:>8.2f} "
              f"{input_mb:>9.0f} {peak:>8.0f}")
        if ref is not None:
            for name in STATS:
                diff_rows.append((k, name, *differences(ours[name], ref[name])))
        del ds, ours, ref
    if diff_rows:
        print()
        print(f"{'elements':>9} {'statistic':<9} {'max |diff|':>11} {'max rel diff':>13} "
              f"{'same nan/inf':>13}")
        for k, name, abs_d, rel_d, same in diff_rows:
            print(f"{k:>9,} {name:<9} {abs_d:>11.2e} {rel_d:>13.2e} {str(same):>13}")


if __name__ == "__main__":
    main()
