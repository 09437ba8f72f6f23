"""Benchmark: the default model, ``sdcbayes assess`` (latent class), on large files (issue 7).

How long the recommended model takes, and how much memory and disk it uses, as the
file grows: simple random samples of 10% of the persons of synthetic censuses
(:func:`sdcbayes.datasets.census.simulate_population`, the demo's generator) of 10^5,
10^6 and 10^7 persons, i.e. samples of 10^4 to 10^6 records, with the demo's six keys
(:data:`sdcbayes.datasets.demo.DEMO_KEYS`; about 350,000 possible combinations) and a
weight N/n. Each run is the whole command, in a process of its own

    sdcbayes assess SAMPLE.parquet --keys ... --weight weight --seed 1 --cores C --out DIR

(reading Parquet, the cross-validated overdispersion, 4 Gibbs chains x 500 draws after
2000, per-record risk with intervals, writing ``summary.json``, ``records.csv``,
``report.html`` and ``posterior.nc``), once with ``--cores 1`` (chains one after another)
and once with every CPU (chains on threads). Printed per run: distinct cells, sample
uniques, wall time, of it the Gibbs chains, peak resident memory of the process, the size
of the output folder, and the estimates of tau1 and tau2 with their 90% intervals beside
the truth (the population is known). The estimates of the two runs of a size are the
same draws (each chain has its own seeded stream): the table checks that.

With ``--replicates R`` each size is run on R samples (census and sample seeds 1..R) and
the intervals' coverage per size is printed: whether they stay honest as n grows.
``--classes 30,100`` runs each sample at each truncation level H (``--classes``) and
prints the classes the draws occupy on average (all H occupied: the truncation binds).

``--kappa-oracle`` asks where a large file's error comes from instead (no command run):
per sample, the default's cross-validation and Gibbs run as ``kappa_rules.py`` runs them
(2 chains x 150 draws), tau1 with Poisson cells, the kappa the cross-validation reads
(median and 5% point), the oracle kappa at which the posterior mean of tau1 meets the
truth, and the sample uniques whose population twins are only their own unsampled
household mates (:func:`household_twins`: with those not counted, how many would be
population-unique).

Usage::

    python benchmarks/latent_class_scaling.py [--sizes 1e4,1e5,1e6] [--cores 1,all]
        [--replicates R] [--no-posterior] [--classes 30[,60,...]]
    python benchmarks/latent_class_scaling.py --kappa-oracle [--sizes ...] [--replicates R]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from sdcbayes.datasets.census import simulate_population
from sdcbayes.datasets.demo import DEMO_KEYS
from sdcbayes.models.latent_class import available_cpus
from sdcbayes.validation import _population_cells, truth_of_sample

FRACTION = 0.1
PERSONS_PER_HOUSEHOLD = 2.28  # simulate_population's mean household size (measured)


def make_sample(n: int, seed: int = 1, population: bool = False):
    """A simple random sample of ``n`` persons, 10% of a synthetic census, and its truth.

    Returns the sample (keys and ``weight`` = N/n) and ``(tau1, tau2)`` of the sample;
    with ``population=True`` also the census and the sample's row positions in it.
    """
    pop = simulate_population(int(round(n / FRACTION / PERSONS_PER_HOUSEHOLD)), seed=seed)
    keys = list(DEMO_KEYS)
    rng = np.random.default_rng([seed, n])
    n = min(n, len(pop))
    index = np.sort(rng.choice(len(pop), size=n, replace=False))
    sample = pop.iloc[index][keys].reset_index(drop=True)
    sample["weight"] = len(pop) / n
    pop_cell, pop_counts = _population_cells(pop, keys)
    truth = truth_of_sample(pop_cell, pop_counts, index)
    if population:
        return sample, (truth.value("tau1"), truth.value("tau2")), pop, index
    return sample, (truth.value("tau1"), truth.value("tau2"))


def household_twins(pop, keys, index, household: str = "household_id") -> dict:
    """The sample uniques whose population twins live in their own household.

    A person sampled alone from a household of several may share its key combination
    with an unsampled mate (siblings of one sex in one age group); that twin makes the
    sample unique not population-unique, and the sample sees such pairs only where both
    mates were drawn. Returns ``uniques`` (sample uniques), ``tau1`` (the truth),
    ``tau1_without_own_household`` (population-unique once each unique's own household's
    other members are not counted) and ``with_own_household_twin`` (uniques that have one).
    """
    cell = pop.groupby(list(keys), sort=False, observed=True).ngroup().to_numpy()
    hh = pd.factorize(pop[household])[0]
    F = np.bincount(cell)
    # members of each record's own household in its own key cell, itself included
    pair = cell.astype(np.int64) * (hh.max() + 1) + hh
    _, inverse, pair_counts = np.unique(pair, return_inverse=True, return_counts=True)
    own = pair_counts[inverse]
    f = np.bincount(cell[index], minlength=F.size)
    su = np.asarray(index)[f[cell[index]] == 1]
    Fu, own_u = F[cell[su]], own[su] - 1
    return {"uniques": int(su.size), "tau1": int((Fu == 1).sum()),
            "tau1_without_own_household": int((Fu - 1 - own_u == 0).sum()),
            "with_own_household_twin": int((own_u > 0).sum())}


def kappa_oracle_row(size: int, seed: int) -> dict:
    """One sample's row of ``--kappa-oracle`` (module docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from kappa_rules import kappa_quantiles, run_default
    from overdispersion_oracle import oracle_kappa

    from sdcbayes.models.latent_class import (
        KAPPA_GRID,
        PHI_PRIOR_DEFAULT,
        LatentClassModel,
        prob_population_unique,
    )

    sample, (t1, _), pop, index = make_sample(size, seed=seed, population=True)
    keys = list(DEMO_KEYS)
    model = LatentClassModel.from_frame(sample[keys].astype(str), keys, n_classes=30,
                                        priors={"phi": dict(PHI_PRIOR_DEFAULT)})
    od, _, lam, smean = run_default(model, float(len(pop)), seed)
    tau1_of_kappa = np.array([prob_population_unique(
        lam, None if np.isinf(k) else k, smean).sum(axis=1).mean() for k in KAPPA_GRID])
    q05, q50, _ = kappa_quantiles(KAPPA_GRID, np.asarray(od["weights"]))
    row = {"size": size, "seed": seed, "tau1_true": t1,
           "tau1_poisson": float(tau1_of_kappa[-1]),
           "kappa_read_median": float(np.exp(q50)), "kappa_read_5pct": float(np.exp(q05)),
           "kappa_oracle": oracle_kappa(tau1_of_kappa, t1, KAPPA_GRID)}
    return row | household_twins(pop, keys, index)


def child(path: str, cores: int, out: str, posterior: bool = True, classes: int = 30) -> None:
    """Run the command in this process; print its timings and peak memory as JSON."""
    from sdcbayes.cli import main

    t0 = time.perf_counter()
    try:
        main(["assess", path, "--keys", ",".join(DEMO_KEYS), "--weight", "weight",
              "--seed", "1", "--cores", str(cores), "--out", out, "--quiet",
              "--classes", str(classes), *([] if posterior else ["--no-posterior"])])
    except SystemExit as exc:
        if exc.code:
            raise
    wall = time.perf_counter() - t0
    summary = json.loads((Path(out) / "summary.json").read_text())
    print(json.dumps({"wall": wall, "peak_mib": peak_mib(), "summary": summary}))


def peak_mib() -> float:
    """Peak resident memory of this process in MiB.

    Linux: ``VmHWM`` of ``/proc/self/status``, the high-water mark of this program's
    own address space (``ru_maxrss`` would also count the parent's, inherited across
    the fork before ``exec``). Elsewhere ``ru_maxrss``.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    scale = 1024 if sys.platform != "darwin" else 1024 * 1024  # kB on Linux, bytes on macOS
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def _find(summary: dict, key: str):
    """``key`` anywhere in the nested summary (the first found)."""
    if key in summary:
        return summary[key]
    for v in summary.values():
        if isinstance(v, dict):
            found = _find(v, key)
            if found is not None:
                return found
    return None


def interval_summary(rows: list[dict]) -> list[str]:
    """Per size: replicates, mean relative error, 90% coverage, mean and sd of z of tau1, tau2.

    ``z`` is the error over the posterior sd read from the 90% interval (its width over
    2 x 1.645): about 0 on average with sd 1 where the intervals are honest.
    """
    lines = []
    for size, classes in dict.fromkeys((r["size"], r.get("classes")) for r in rows):
        rs = [r for r in rows if r["size"] == size and r.get("classes") == classes]
        parts = []
        for q in ("tau1", "tau2"):
            est = np.array([r[q] for r in rs])
            true = np.array([r[f"{q}_true"] for r in rs])
            lo = np.array([r[f"{q}_lo"] for r in rs])
            hi = np.array([r[f"{q}_hi"] for r in rs])
            z = (est - true) / ((hi - lo) / (2 * 1.645))
            parts.append(f"{q} error {100 * np.mean(est / true - 1):+.1f}%, cover "
                         f"{np.mean((lo <= true) & (true <= hi)):.2f}, mean z {z.mean():+.1f}, "
                         f"z sd {z.std(ddof=1) if z.size > 1 else float('nan'):.1f}")
        at = "" if classes is None else f" at H = {classes}"
        lines.append(f"{size:>9,} records{at}, {len(rs)} samples: " + "; ".join(parts))
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e4,1e5,1e6", help="sample sizes (records)")
    ap.add_argument("--cores", default="1,all",
                    help="comma-separated --cores of the runs ('all': every CPU)")
    ap.add_argument("--replicates", type=int, default=1,
                    help="samples per size, replicate r from census and sample seed 1 + r "
                         "(then the intervals' coverage per size is printed)")
    ap.add_argument("--no-posterior", action="store_true",
                    help="pass --no-posterior (no posterior.nc: less disk, less time)")
    ap.add_argument("--classes", default="30",
                    help="comma-separated truncation levels H (--classes of the command)")
    ap.add_argument("--kappa-oracle", action="store_true",
                    help="per sample: the cross-validation's kappa against the oracle's, "
                         "tau1 with Poisson cells, and the own-household twins (no command)")
    ap.add_argument("--child", nargs=5, metavar=("PATH", "CORES", "OUT", "POST", "H"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2], args.child[3] == "1",
              int(args.child[4]))
        return 0
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    if args.kappa_oracle:
        print("the default's cross-validation (2 chains x 150 draws) on 10% samples of "
              "synthetic censuses; kappa read (median, 5% point) against the oracle kappa")
        print(f"{'records':>9} {'seed':>4} {'tau1 true':>9} {'Poisson':>8} {'read':>8} "
              f"{'read 5%':>8} {'oracle':>7} {'uniques':>7} {'with own-hh twin':>16} "
              f"{'tau1 without them':>17}")
        for size in sizes:
            for rep in range(args.replicates):
                r = kappa_oracle_row(size, 1 + rep)
                print(f"{size:>9,} {r['seed']:>4} {r['tau1_true']:>9.0f} "
                      f"{r['tau1_poisson']:>8.1f} {r['kappa_read_median']:>8.3g} "
                      f"{r['kappa_read_5pct']:>8.3g} {r['kappa_oracle']:>7.3g} "
                      f"{r['uniques']:>7} {r['with_own_household_twin']:>16} "
                      f"{r['tau1_without_own_household']:>17}", flush=True)
        return 0
    classes = [int(h) for h in args.classes.split(",")]
    cpus = available_cpus()
    cores = [cpus if c == "all" else int(c) for c in args.cores.split(",")]
    print(f"sdcbayes assess (latent class, 4 chains x 500 after 2000), demo keys, "
          f"10% samples of synthetic censuses; {cpus} CPUs")
    print(f"{'records':>9} {'seed':>4} {'cells':>7} {'uniques':>7} {'H':>4} {'occupied':>8} "
          f"{'cores':>5} {'wall s':>7} {'gibbs s':>7} {'peak MiB':>8} {'out MB':>7}  "
          f"{'tau1 [90%] (true)':>30}  {'tau2 [90%] (true)':>30}")
    tmp = Path(tempfile.mkdtemp(prefix="sdcbayes-scaling-"))
    rows = []
    try:
        for size in sizes:
            for rep in range(args.replicates):
                seed = 1 + rep
                sample, (t1, t2) = make_sample(size, seed=seed)
                path = tmp / f"s{size}.parquet"
                sample.to_parquet(path)
                del sample
                for H in classes:
                    for c in cores:
                        out = tmp / f"out{size}_{H}_{c}"
                        proc = subprocess.run(
                            [sys.executable, __file__, "--child", str(path), str(c), str(out),
                             "0" if args.no_posterior else "1", str(H)],
                            capture_output=True, text=True, check=True)
                        res = json.loads(proc.stdout.strip().splitlines()[-1])
                        s = res["summary"]
                        mb = sum(f.stat().st_size for f in out.iterdir()) / 1e6
                        gibbs = _find(s, "sampling_time_s")
                        used = _find(s, "classes_used_mean")
                        iv1, iv2 = s["tau1_interval"], s["tau2_interval"]
                        print(f"{size:>9,} {seed:>4} {_find(s, 'n_cells') or 0:>7,} "
                              f"{_find(s, 'n_sample_uniques') or 0:>7,} {H:>4} "
                              f"{float('nan') if used is None else used:>8.1f} "
                              f"{c:>5} {res['wall']:>7.1f} {gibbs:>7.1f} "
                              f"{res['peak_mib']:>8.0f} {mb:>7.0f}  "
                              f"{s['tau1']:>8.1f} [{iv1[0]:.0f}, {iv1[1]:.0f}] ({t1:.0f})  "
                              f"{s['tau2']:>8.1f} [{iv2[0]:.0f}, {iv2[1]:.0f}] ({t2:.1f})",
                              flush=True)
                        shutil.rmtree(out)
                    rows.append({"size": size, "classes": H if len(classes) > 1 else None,
                                 "tau1": s["tau1"], "tau1_true": t1, "tau1_lo": iv1[0],
                                 "tau1_hi": iv1[1], "tau2": s["tau2"], "tau2_true": t2,
                                 "tau2_lo": iv2[0], "tau2_hi": iv2[1]})
                path.unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.replicates > 1 or len(classes) > 1:
        print("\n".join(interval_summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
