"""Benchmark: closed-form assessment end to end (issue 2).

DataFrame -> cell table -> per-record Benedetti-Franconi risk, household risk and
file summary, on synthetic files of 10^4 ... 10^7 records with 5 keys
(cardinalities 10, 2, 5, 20, 8) and households of about 3 persons.
Prints median time (of ``--repeats`` runs) and the peak memory allocated during
the assessment (tracemalloc, measured in a separate run so it does not slow the
timed ones). Then times the whole command
``sdcbayes assess FILE.parquet --keys ... --weight ... --household ... --model closed-form``
on the 10^6 file, reading and writing included.

Peer, as the issue quoted it (sdcMicro 5.8.1 ``measure_risk`` on this machine): 0.19 s
at 10^5, 2.75 s at 10^6 (428 MB peak), 18.9 s at 10^6 with a household id. Measured here
since with sdcMicro 5.8.0 on the file in memory (``benchmarks/vs_sdcmicro.py``): 0.079 s
at 10^5, 1.08 s at 10^6, 7.8 s with a household id.
Targets: at 10^6 <= 0.5 s without and <= 1 s with households, <= 500 MB peak;
10^7 in <= 10 s; the whole command at 10^6 faster than 2.75 s.

Usage: python benchmarks/closed_form.py [--sizes 1e4,1e5,1e6,1e7] [--repeats 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from sdcbayes import Microdata
from sdcbayes.datasets import make_benchmark_file
from sdcbayes.risk.assess import assess_closed_form

KEYS = ["key1", "key2", "key3", "key4", "key5"]


def run_once(frame, household: bool):
    md = Microdata(frame, keys=KEYS, weight="weight", household="household_id" if household else None)
    return assess_closed_form(md)


def timed(frame, household: bool, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        run_once(frame, household)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def peak_mb(frame, household: bool) -> float:
    gc.collect()
    tracemalloc.start()
    run_once(frame, household)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e4,1e5,1e6,1e7")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-cli", action="store_true")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]

    print(f"closed-form assessment, 5 keys (10,2,5,20,8), cpus={os.cpu_count()}")
    print(f"{'records':>10} {'cells':>7} {'no hh (s)':>10} {'with hh (s)':>12} "
          f"{'peak no hh (MB)':>16} {'peak hh (MB)':>13}")
    frames = {}
    for n in sizes:
        frame = make_benchmark_file(n, seed=1)
        frames[n] = frame
        reps = args.repeats if n <= 10**6 else max(1, min(args.repeats, 3))
        t_no = timed(frame, False, reps)
        t_hh = timed(frame, True, reps)
        m_no = peak_mb(frame, False)
        m_hh = peak_mb(frame, True)
        n_cells = run_once(frame, False).summary["n_cells"]
        print(f"{n:>10,} {n_cells:>7,} {t_no:>10.3f} {t_hh:>12.3f} {m_no:>16.0f} {m_hh:>13.0f}",
              flush=True)
        if n != 10**6:
            del frames[n]

    if args.skip_cli or 10**6 not in frames:
        return
    exe = shutil.which("sdcbayes") or str(Path(sys.executable).with_name("sdcbayes"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_1e6.parquet"
        frames[10**6].to_parquet(path)
        cmd = [exe, "assess", str(path), "--keys", ",".join(KEYS), "--weight", "weight",
               "--household", "household_id", "--model", "closed-form",
               "--out", str(Path(tmp) / "out"), "--quiet"]
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True)
            times.append(time.perf_counter() - t0)
        print()
        print("whole command at 10^6 records, households included, reading parquet and "
              "writing summary.json, records.csv, report.html:")
        print(f"  median {statistics.median(times):.2f} s over {len(times)} runs "
              f"(min {min(times):.2f} s); sdcMicro 5.8.0 measure_risk alone, file in memory: "
              "1.08 s (benchmarks/vs_sdcmicro.py)")


if __name__ == "__main__":
    main()
