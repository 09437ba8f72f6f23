"""Benchmark: SUDA / DIS-SUDA scores (issue 6), ``sdcbayes.risk.suda.suda``.

Files of 10^4, 10^5, 10^6 records with 5 keys of cardinalities 10, 2, 5, 20, 8:
- ``uniform``: independent uniform integer keys (``numpy.random.default_rng(2024)``);
- ``zipf``: the project's benchmark file (``sdcbayes.datasets.make_benchmark_file``,
  seed 1; Zipf-like marginals, Categorical keys), as in ``benchmarks/closed_form.py``;
- ``--stress`` adds ``highcard``: cardinalities 100, 2, 50, 200, 80 at 10^6 records,
  where nearly every record is unique and every attribute subset must be searched.

Prints the median and the smallest wall time of ``--repeats`` runs of the whole call (key coding,
MSU search, scores, DIS-SUDA, contributions, the result DataFrames), with the
number of distinct key combinations, full-key uniques, records with an MSU and
attribute subsets actually grouped (of 31).

Peer: sdcMicro 5.8.0's ``suda2`` takes 2.8 s on the ``zipf`` file of 10^6 records
(``benchmarks/vs_sdcmicro.py``; the issue quoted 4.8 s).

Usage: python benchmarks/suda.py [--sizes 1e4,1e5,1e6] [--repeats 3] [--stress]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from sdcbayes.datasets import make_benchmark_file
from sdcbayes.risk.suda import _code_input, find_msus, suda

CARDS = (10, 2, 5, 20, 8)
KEYS = ["key1", "key2", "key3", "key4", "key5"]


def uniform_file(n: int, cards=CARDS, seed: int = 2024) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({k: rng.integers(0, c, n) for k, c in zip(KEYS, cards, strict=True)})


def run(name: str, frame: pd.DataFrame, repeats: int) -> None:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = suda(frame, KEYS)
        times.append(time.perf_counter() - t0)
    codes, _ = _code_input(frame, KEYS, None)
    grouped = find_msus(codes).n_subsets_grouped
    print(
        f"{name:9s} {len(frame):>9,d} {statistics.median(times):9.3f} {min(times):7.3f} "
        f"{res.n_distinct:>9,d} "
        f"{res.n_uniques:>9,d} {int((res.scores > 0).sum()):>9,d} {grouped:>8d}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e4,1e5,1e6")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stress", action="store_true")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    print(f"{'file':9s} {'records':>9s} {'median_s':>9s} {'min_s':>7s} {'distinct':>9s} "
          f"{'uniques':>9s} "
          f"{'with_msu':>9s} {'grouped':>8s}")
    for n in sizes:
        run("uniform", uniform_file(n), args.repeats)
    for n in sizes:
        run("zipf", make_benchmark_file(n, seed=1), args.repeats)
    if args.stress:
        run("highcard", uniform_file(10**6, cards=(100, 2, 50, 200, 80)), args.repeats)


if __name__ == "__main__":
    main()
