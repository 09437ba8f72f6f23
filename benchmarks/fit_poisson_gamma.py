"""Benchmark: Poisson-gamma fit on counts of counts from large synthetic files.

For each file size (records), in a fresh Python process (so peak memory and the
first fit are measured separately per size):

* generate the file with ``sdcbayes.datasets.make_benchmark_file`` (5 keys of
  10, 2, 5, 20 and 8 levels: K = 16 000 cells; not timed),
* counting step: ``Microdata(...)`` and its counts of counts,
* first fit: ``fit(model)`` with 4 chains x 1000 draws after 1000 tuning steps,
  PyTensor compilation included (the on-disk C cache may be warm from earlier
  runs; ``--cold`` points PyTensor at an empty cache directory),
* warm fit: the same fit again in the same process,
* peak resident memory of the process (and, separately, of its children: the C
  compiler PyTensor runs, and sampler workers when ``--cores`` > 1).

The warm fit reuses the compiled graph (``fit`` compiles a model structure once,
``sdcbayes.inference.fitting.compiled_model``); the first fit pays PyTensor's start-up,
which includes reading the index of its on-disk cache: its size (entries in
``pytensor.config.compiledir``) is printed, since a cache grown by other projects
adds seconds (``--cold`` or ``--compiledir DIR`` isolate it). ``--method nutpie``
times the optional nutpie sampler (numba compilation on the first fit).
Wall times depend on the machine's load (shared cores): the 1-minute load average
is printed before and after, with the CPU seconds of the fitting process.

Targets (issue 3): <= 15 s end-to-end at 1e6 records including compilation,
<= 5 s warm.

Usage::

    python benchmarks/fit_poisson_gamma.py [--sizes 1e5 1e6 1e7] [--cores N] [--cold]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def one(n_records: int, cores: int | None, method: str = "nuts", seed: int = 0) -> dict:
    t0 = time.perf_counter()
    import warnings


    from sdcbayes.datasets import make_benchmark_file
    from sdcbayes.inference import ConvergenceWarning, fit, fit_diagnostics, get_group
    from sdcbayes.microdata import Microdata
    from sdcbayes.models.poisson_gamma import PoissonGammaModel

    t_import = time.perf_counter() - t0
    df = make_benchmark_file(n_records, seed=seed)
    keys = ["key1", "key2", "key3", "key4", "key5"]

    t0 = time.perf_counter()
    md = Microdata(df, keys=keys, weight="weight")
    coc = md.cells.counts_of_counts
    model = PoissonGammaModel.from_microdata(md)
    t_count = time.perf_counter() - t0

    out = {"records": n_records, "import_s": t_import, "count_s": t_count,
           "distinct_counts": int(coc.size), "n_cells": int(md.cells.n_cells)}
    for label in ("first_fit", "warm_fit"):
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            idata = fit(model, method=method, draws=1000, tune=1000, chains=4,
                        random_seed=seed, cores=cores)
        out[f"{label}_s"] = time.perf_counter() - t0
        # CPU seconds of this process: on a shared machine wall time overstates the cost
        out[f"{label}_cpu_s"] = time.process_time() - c0
    diag = fit_diagnostics(idata)
    post = get_group(idata, "posterior")
    out |= {
        "alpha": float(post["alpha"].mean()),
        "alpha_sd": float(post["alpha"].std()),
        "mu": float(post["mu"].mean()),
        "max_r_hat": diag["max_r_hat"],
        "min_ess_bulk": diag["min_ess_bulk"],
        "divergences": diag["divergences"],
        # ru_maxrss is in KiB on Linux
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_rss_children_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e5, 1e6])
    parser.add_argument("--cores", type=int, default=None, help="parallel chains (default: auto)")
    parser.add_argument("--cold", action="store_true", help="empty PyTensor compile cache")
    parser.add_argument("--compiledir", help="PyTensor compile cache directory to use")
    parser.add_argument("--method", default="nuts", help="fit method (nuts, nutpie)")
    parser.add_argument("--one", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(int(args.one), args.cores, args.method)))
        return
    env = dict(os.environ)
    if args.cold:
        env["PYTENSOR_FLAGS"] = f"compiledir={tempfile.mkdtemp(prefix='pytensor-cold-')}"
    elif args.compiledir:
        env["PYTENSOR_FLAGS"] = f"compiledir={args.compiledir}"
    load_before = os.getloadavg()[0]
    cache = subprocess.run(
        [sys.executable, "-c", "import os, pytensor; d = pytensor.config.compiledir; "
         "print(len(os.listdir(d)) if os.path.isdir(d) else 0)"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout.strip().splitlines()[-1]
    rows = []
    for size in args.sizes:
        cmd = [sys.executable, __file__, "--one", str(size), "--method", args.method]
        if args.cores:
            cmd += ["--cores", str(args.cores)]
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    header = (f"{'records':>10} {'count s':>8} {'1st fit s':>9} {'warm s':>7} {'1st total':>9} "
              f"{'1st cpu':>7} {'warm cpu':>8} "
              f"{'peak MiB':>8} {'child MiB':>9} {'#j':>4} {'alpha':>8} {'r_hat':>6} "
              f"{'ess':>6} {'div':>4}")
    load = os.getloadavg()[0]
    print(f"method {args.method}; cpu count: {os.cpu_count()}; load average (1 min) "
          f"{load_before:.1f} before, {load:.1f} after; chain processes: {args.cores or 1}; "
          f"cold cache: {args.cold}; compile cache entries: {cache}; times in seconds (wall, "
          "and CPU of the fitting process), memory in MiB (child: C compiler / workers)")
    print(header)
    for r in rows:
        print(f"{r['records']:>10.0e} {r['count_s']:>8.2f} {r['first_fit_s']:>9.2f} "
              f"{r['warm_fit_s']:>7.2f} {r['count_s'] + r['first_fit_s']:>9.2f} "
              f"{r['first_fit_cpu_s']:>7.2f} {r['warm_fit_cpu_s']:>8.2f} "
              f"{r['peak_rss_mib']:>8.0f} {r['peak_rss_children_mib']:>9.0f} "
              f"{r['distinct_counts']:>4d} {r['alpha']:>8.4f} {r['max_r_hat']:>6.3f} "
              f"{r['min_ess_bulk']:>6.0f} {r['divergences']:>4d}")


if __name__ == "__main__":
    main()
