"""Benchmark: rows per second of ``inverse_moment_sum_rows`` against its pre-speed-up copy.

The rows mimic the released-file batches of :func:`sdcbayes.risk.released.assess_released`
(patterns x draws, pattern-major, 100 draws per pattern): K explicit cells (the first
one to three observed, r = kappa + count; the rest top cells, r = kappa) and a remainder
cell of large size, kappa about 100 varying by draw, odds (1 - rho)/rho from 1e-6 to 3
(log-uniform), a Poisson part on a tenth of the rows. The reference is the frozen copy in
tests/test_inverse_moment_speed.py (226 nodes, one log1p per cell and node).

Printed: per K and number of rows, the rows per second of the reference and of the
current implementation, the speed-up, and the largest relative difference of the results.

Usage: python benchmarks/inverse_moment.py [--rows 256,4096,100000] [--K 4,16,17]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from sdcbayes.risk.posterior import inverse_moment_sum_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_inverse_moment_speed import _frozen_rows  # noqa: E402


def released_like_rows(n_rows: int, K: int, seed: int = 0):
    """(f, r, rho, lam) of n_rows rows of K explicit cells and a remainder."""
    rng = np.random.default_rng(seed)
    draws = 100
    n_pat = -(-n_rows // draws)
    kappa = np.tile(10 ** rng.normal(2.0, 0.5, draws), n_pat)[:n_rows]
    n_obs = np.repeat(rng.integers(1, 4, n_pat), draws)[:n_rows]
    counts = np.repeat(rng.integers(1, 6, (n_pat, K)), draws, axis=0)[:n_rows]
    fcx = np.where(np.arange(K)[None, :] < n_obs[:, None], counts, 0)
    r = np.c_[kappa[:, None] + fcx, 10 ** rng.uniform(3, 6.5, n_rows)]
    odds = 10 ** rng.uniform(-6, 0.5, (n_rows, K + 1))
    f = np.repeat(rng.integers(1, 10, n_pat), draws)[:n_rows].astype(float)
    lam = np.where(rng.random(n_rows) < 0.1, 10 ** rng.uniform(-1, 4, n_rows), 0.0)
    return f, r, 1.0 / (1.0 + odds), lam


def rows_per_second(fn, args, min_seconds: float = 0.5) -> float:
    n, t0 = 0, time.perf_counter()
    while True:
        fn(*args)
        n += 1
        dt = time.perf_counter() - t0
        if dt >= min_seconds:
            return n * args[0].size / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="256,4096,100000")
    ap.add_argument("--K", default="4,16,17")
    args = ap.parse_args()
    print(f"{'K':>3} {'rows':>7} {'before rows/s':>14} {'after rows/s':>13} "
          f"{'speed-up':>8} {'max rel diff':>12}")
    for K in (int(k) for k in args.K.split(",")):
        for n in (int(s) for s in args.rows.split(",")):
            rows = released_like_rows(n, K)
            old = _frozen_rows(*rows)
            new = inverse_moment_sum_rows(*rows)
            diff = float(np.max(np.abs(new / old - 1)))
            before = rows_per_second(_frozen_rows, rows)
            after = rows_per_second(inverse_moment_sum_rows, rows)
            print(f"{K:>3} {n:>7} {before:>14,.0f} {after:>13,.0f} {after / before:>8.2f} "
                  f"{diff:>12.1e}")


if __name__ == "__main__":
    main()
