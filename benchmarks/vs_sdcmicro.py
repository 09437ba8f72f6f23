"""Benchmark: sdcbayes against sdcMicro (R) on the same files, on this machine.

Both sides get the same CSV: the project's benchmark file
(:func:`sdcbayes.datasets.make_benchmark_file`: five keys of 10, 2, 5, 20 and 8 levels
with Zipf-like margins, households of about 3, weights uniform on [50, 150]) with two
numeric variables added (lognormal, correlation about 0.5) and a sensitive variable of 6
levels. Each operation is timed ``--repeats`` times after the file is in memory (R:
``data.table::fread``, then ``system.time``; Python: the frame as built, then
``time.perf_counter``) and the median printed, so reading the file is left out on
both sides:

- individual risk: ``measure_risk(d, keyVars, w)`` against
  ``assess_closed_form(Microdata(...))``; with households, ``hid =`` against ``household=``;
- SUDA: ``suda2(d, variables = keys)`` against ``risk.suda.suda(frame, keys)``;
- l-diversity: ``ldiversity(d, keyVars, ldiv_index = "sens")`` against ``risk.l_diversity``
  on the records' cells;
- local suppression to 3-anonymity: ``localSuppression(d, keyVars, k = 3)`` against
  ``local_suppression(..., method="sequential")`` (sdcMicro's algorithm) and the default
  greedy one;
- MDAV micro-aggregation, k = 3: ``microaggregation(d[, nums], method = "mdav", aggr = 3)``
  against ``protection.mdav(frame, nums, 3)``;
- rank swapping: ``rankSwap(d, nums, P = 5)`` against ``protection.rank_swap(frame, nums,
  5)``.

sdcMicro's side needs ``Rscript`` with sdcMicro installed (``--r-lib`` names a library
folder, else R's own; ``tests/data/sdcmicro_r/README.md`` says how sdcMicro 5.8.0 was
built here); without it the sdcMicro column says so and only sdcbayes is timed. An
operation whose time at a smaller size predicts more than ``--budget`` seconds at the next
is skipped there and at larger sizes (quadratic growth assumed for local suppression,
MDAV and rank swapping, whose sdcMicro times grow so; linear for the rest), for either side.

Usage: python benchmarks/vs_sdcmicro.py [--sizes 1e4,1e5,1e6] [--repeats 3] [--r-lib DIR]
       [--budget 120] [--ops risk,risk_hh,suda,ldiv,lsupp,mdav,rankswap] [--no-r]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from sdcbayes import Microdata
from sdcbayes.datasets import make_benchmark_file
from sdcbayes.protection import local_suppression, mdav, rank_swap
from sdcbayes.risk import l_diversity
from sdcbayes.risk.assess import assess_closed_form
from sdcbayes.risk.suda import suda

KEYS = ["key1", "key2", "key3", "key4", "key5"]
NUMS = ["x1", "x2"]
OPS = ["risk", "risk_hh", "suda", "ldiv", "lsupp", "mdav", "rankswap"]
LABELS = {
    "risk": "individual risk", "risk_hh": " + households", "suda": "SUDA (DIS-SUDA)",
    "ldiv": "l-diversity", "lsupp": "local suppression k=3", "mdav": "MDAV k=3",
    "rankswap": "rank swapping p=5",
}
#: how an operation's time grows with the records (for skipping at the next size)
GROWTH = {"lsupp": 2.0, "mdav": 2.0, "rankswap": 2.0}

R_SCRIPT = r"""
suppressPackageStartupMessages({library(sdcMicro); library(data.table)})
args <- commandArgs(trailingOnly = TRUE)
d <- as.data.frame(fread(args[1]))
reps <- as.integer(args[2])
ops <- strsplit(args[3], ",")[[1]]
keys <- c("key1", "key2", "key3", "key4", "key5")
for (k in c(keys, "sens")) d[[k]] <- factor(d[[k]])
run <- list(
  risk = function() measure_risk(d, keyVars = keys, w = "weight"),
  risk_hh = function() measure_risk(d, keyVars = keys, w = "weight", hid = "household_id"),
  suda = function() suda2(d, variables = keys),
  ldiv = function() ldiversity(d, keyVars = keys, ldiv_index = "sens"),
  lsupp = function() localSuppression(d, keyVars = keys, k = 3),
  mdav = function() microaggregation(d[, c("x1", "x2")], method = "mdav", aggr = 3),
  rankswap = function() rankSwap(d, variables = c("x1", "x2"), P = 5)
)
cat(sprintf("R\t%s\tsdcMicro %s\n", R.version.string, packageVersion("sdcMicro")))
for (op in ops) {
  t <- replicate(reps, {gc(); system.time(invisible(run[[op]]()))[["elapsed"]]})
  cat(sprintf("%s\t%.4f\n", op, median(t)))
}
"""


def make_file(n: int, seed: int = 1):
    """The benchmark file with ``x1``, ``x2`` (numeric) and ``sens`` (6 levels) added."""
    frame = make_benchmark_file(n, seed=seed)
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 2))
    frame["x1"] = np.exp(10 + z[:, 0])
    frame["x2"] = np.exp(8 + 0.5 * z[:, 0] + 0.87 * z[:, 1])
    frame["sens"] = rng.integers(0, 6, n).astype(str)
    return frame


def python_ops(frame) -> dict:
    def risk(household=None):
        return assess_closed_form(Microdata(frame, keys=KEYS, weight="weight",
                                            household=household))

    def ldiv():
        md = Microdata(frame, keys=KEYS, weight="weight")
        return l_diversity(md.record_cell, frame[["sens"]], n_cells=len(md.cells))

    return {
        "risk": risk,
        "risk_hh": lambda: risk("household_id"),
        "suda": lambda: suda(frame, KEYS),
        "ldiv": ldiv,
        "lsupp": lambda: local_suppression(frame, KEYS, 3, method="sequential"),
        "lsupp_greedy": lambda: local_suppression(frame, KEYS, 3),
        "mdav": lambda: mdav(frame, NUMS, 3),
        "rankswap": lambda: rank_swap(frame, NUMS, 5, seed=1),
    }


def time_python(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def time_r(rscript: str, csv: Path, ops: list[str], repeats: int, r_lib: str | None
           ) -> tuple[dict, str]:
    env = dict(os.environ)
    if r_lib:
        env["R_LIBS"] = r_lib
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as fh:
        fh.write(R_SCRIPT)
    try:
        out = subprocess.run([rscript, fh.name, str(csv), str(repeats), ",".join(ops)],
                             capture_output=True, text=True, env=env, check=False)
    finally:
        os.unlink(fh.name)
    if out.returncode != 0:
        raise RuntimeError(f"Rscript failed: {out.stderr.strip()[-500:]}")
    times, version = {}, ""
    for line in out.stdout.splitlines():
        parts = line.split("\t")
        if parts[0] == "R":
            version = f"{parts[1]}, {parts[2]}"
        elif len(parts) == 2:
            times[parts[0]] = float(parts[1])
    return times, version


def predicted(prev: dict, op: str, n_prev: int, n: int) -> float | None:
    t = prev.get(op)
    if t is None:
        return None
    return t * (n / n_prev) ** GROWTH.get(op, 1.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e4,1e5,1e6")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--r-lib", default=os.environ.get("R_LIBS"))
    ap.add_argument("--budget", type=float, default=120.0,
                    help="skip an operation predicted to take longer (seconds)")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--no-r", action="store_true", help="time sdcbayes alone")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    ops = [o for o in args.ops.split(",") if o]
    unknown = sorted(set(ops) - set(OPS))
    if unknown:
        ap.error(f"unknown --ops {unknown}; choose from {OPS}")
    rscript = None if args.no_r else shutil.which("Rscript")
    r_note = "not timed (--no-r, or no Rscript on the PATH)" if rscript is None else ""

    rows = []
    prev_r: dict = {}
    prev_py: dict = {}
    skipped_r: set = set()
    skipped_py: set = set()
    n_prev = None

    def skip(op, prev, skipped, n):
        # skipped once, skipped at every larger size; else predicted from the last size
        guess = predicted(prev, op, n_prev, n) if n_prev else None
        if op in skipped or (guess is not None and guess > args.budget):
            skipped.add(op)
            return True
        return False

    py_ops = ops + (["lsupp_greedy"] if "lsupp" in ops else [])
    for n in sizes:
        frame = make_file(n)
        fns = python_ops(frame)
        py = {op: None if skip(op, prev_py, skipped_py, n)
              else time_python(fns[op], args.repeats) for op in py_ops}
        r = {}
        if rscript is not None:
            r_ops = [op for op in ops if not skip(op, prev_r, skipped_r, n)]
            if r_ops:
                with tempfile.TemporaryDirectory() as tmp:
                    csv = Path(tmp) / "bench.csv"
                    frame.to_csv(csv, index=False)
                    r, r_note = time_r(rscript, csv, r_ops, args.repeats, args.r_lib)
        for op in py_ops:
            rows.append((n, op, r.get(op), py[op]))
        prev_r, prev_py, n_prev = r, {k: v for k, v in py.items() if v is not None}, n
        print(json.dumps({"records": n, "sdcMicro": r, "sdcbayes": py}), flush=True)

    labels = dict(LABELS, lsupp_greedy=" greedy (sdcbayes default)")
    print()
    print(f"sdcMicro: {r_note}; sdcbayes: this checkout; "
          f"median of {args.repeats} runs, file in memory; cpus={os.cpu_count()}")
    print(f"{'operation':<28} {'records':>10} {'sdcMicro (s)':>13} {'sdcbayes (s)':>13} "
          f"{'ratio':>7}")
    for n, op, tr, tp in sorted(rows, key=lambda x: (list(labels).index(x[1]), x[0])):
        fr = "-" if tr is None else f"{tr:.3f}"
        fp = "-" if tp is None else f"{tp:.3f}"
        ratio = "-" if tr is None or tp is None or tp == 0 else \
            f"{tr / tp:.2g}x" if tr / tp < 10 else f"{tr / tp:.0f}x"
        print(f"{labels[op]:<28} {n:>10,} {fr:>13} {fp:>13} {ratio:>7}")
    print(f"-: not timed (predicted above --budget {args.budget:g} s, or no counterpart); "
          "ratio: sdcMicro's time over sdcbayes's")


if __name__ == "__main__":
    main()
