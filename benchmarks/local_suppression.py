"""Benchmark: local suppression to k-anonymity (issue 6), greedy against sequential.

Times :func:`sdcbayes.protection.local_suppression` with both algorithms
(``method="greedy"``, the default, and ``method="sequential"``, sdcMicro's
``localSuppression``), checks every result is k-anonymous under wildcard
semantics and prints the number of suppressions (total and per variable):

- synthetic files with 5 keys (cardinalities 10, 2, 5, 20, 8; independent uniform
  levels, fixed seed), k = 3: plain, with strata, and all key subsets of size 3
  (``combs=[3]``);
- sdcMicro's data (``../shared/data/sdcmicro``, skipped with a note when absent):
  testdata2 and testdata with keys urbrur, roof, walls, water, electcon, relat, sex
  (k = 2, 3, 5; testdata2 also with strata ageG = R's ``cut(age, 5)``, the case of
  sdcMicro's tests), free1 with keys REGION, SEX, AGE (k = 2, 3);
- the demo sample (:func:`sdcbayes.load_demo`, its six recommended keys), k = 3;
- with ``--census``: 1e5 records of :func:`sdcbayes.datasets.simulate_population`
  with 9 keys (2 to 151 levels; about half the records violate 3-anonymity), k = 3.
  Sequential: 7.0 s on 2 shared cores (58 s before its distance-1 tables; same
  suppressions, 56,012); the greedy about 1 s.

sdcMicro's printed counts: testdata2 k = 2: 97, with strata 109
(tests/testthat/test_localSuppression.R). Peer time: sdcMicro 5.8.0's ``localSuppression``
needs 15.3 s for k = 3 on 10^4 records of the closed-form benchmark's file
(``benchmarks/vs_sdcmicro.py``; the issue quoted 27 s).

Usage: python benchmarks/local_suppression.py [--sizes 1e4,1e5] [--repeats 3] [--seed 1]
       [--census]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np
import pandas as pd

from sdcbayes.protection import local_suppression, wildcard_frequencies
from sdcbayes.validation import shared_data_dir

CARDS = (10, 2, 5, 20, 8)
METHODS = ("greedy", "sequential")
SDC_KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
CENSUS_KEYS = ["relationship", "region", "age_band", "sex", "marital_status", "occupation",
               "education", "country_of_birth", "household_size"]


def make_file(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"key{j}": rng.integers(0, c, n) for j, c in enumerate(CARDS)})
    df["stratum"] = rng.integers(0, 4, n)
    return df


def r_cut5(x: pd.Series) -> np.ndarray:
    """R's cut(x, 5): equal widths, range widened by range/1000 at both ends."""
    x = x.astype(float)
    lo, hi = x.min(), x.max()
    breaks = np.linspace(lo, hi, 6)
    breaks[[0, -1]] += np.array([-1.0, 1.0]) * (hi - lo) / 1000
    return pd.cut(x, breaks, labels=False).to_numpy()


def timed(fn, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def run_case(name: str, df: pd.DataFrame, keys: list[str], k: int, repeats: int,
             **kw) -> None:
    # k-anonymity is required for the full key set, or for every subset of size m.
    sizes = kw.get("combs", [len(keys)])
    subsets = [list(c) for m in sizes for c in itertools.combinations(keys, m)]
    strata = kw.get("strata")
    # within a stratum of fewer than k records k is lowered to its size (documented)
    k_rec = (np.minimum(k, df.groupby(strata)[strata].transform("size").to_numpy())
             if strata else k)
    violating = max(int((wildcard_frequencies(df, sub, strata=strata) < k_rec).sum())
                    for sub in subsets)
    for method in METHODS:
        t, res = timed(
            lambda method=method: local_suppression(df, keys, k=k, method=method, **kw),
            repeats)
        for sub in subsets:
            assert (wildcard_frequencies(res.frame, sub, strata=strata) >= k_rec).all()
        per = " ".join(f"{v}" for v in res.summary["suppressions"].values())
        print(f"{name:>26} {len(df):>7} {k:>2} {method:>10} {t:>8.3f} {violating:>9} "
              f"{res.summary['total_suppressions']:>7}  {per}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e4,1e5")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--census", action="store_true",
                    help="also 1e5 simulated census records with 9 keys (about 10 s)")
    args = ap.parse_args()
    print(f"{'case':>26} {'n':>7} {'k':>2} {'method':>10} {'time_s':>8} {'max_viol':>9} "
          f"{'suppr':>7}  per variable")
    keys = [f"key{j}" for j in range(len(CARDS))]
    for n in (int(float(s)) for s in args.sizes.split(",")):
        df = make_file(n, args.seed)
        for name, kw in {"synthetic": {}, "synthetic strata": {"strata": "stratum"},
                         "synthetic combs=3": {"combs": [3]}}.items():
            run_case(name, df, keys, 3, args.repeats, **kw)

    data = shared_data_dir() / "sdcmicro"
    if (data / "testdata2.csv").is_file():
        td2 = pd.read_csv(data / "testdata2.csv")
        td2["ageG"] = r_cut5(td2["age"])
        td = pd.read_csv(data / "testdata.csv")
        free1 = pd.read_csv(data / "free1.csv")
        for k in (2, 3, 5):
            run_case("testdata2", td2, SDC_KEYS, k, args.repeats)
            run_case("testdata2 strata ageG", td2, SDC_KEYS, k, args.repeats, strata="ageG")
        for k in (2, 3, 5):
            run_case("testdata", td, SDC_KEYS, k, args.repeats)
        for k in (2, 3):
            run_case("free1 REGION,SEX,AGE", free1, ["REGION", "SEX", "AGE"], k, args.repeats)
    else:
        print(f"(sdcMicro data not found under {data}: those cases skipped)")

    from sdcbayes import load_demo
    from sdcbayes.datasets import demo_keys

    run_case("demo", load_demo().sample, demo_keys(), 3, args.repeats)

    if args.census:
        from sdcbayes.datasets import simulate_population

        pop = simulate_population(43_700, seed=1).iloc[:100_000].reset_index(drop=True)
        run_case("census 9 keys", pop, CENSUS_KEYS, 3, 1)


if __name__ == "__main__":
    main()
