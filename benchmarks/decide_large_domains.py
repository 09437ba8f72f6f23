"""Benchmark: time of ``decide`` for domains with large populations (audit R, finding 1).

Seed 003 (Zaslavsky & Horton 1998), Section 2: each domain's risks sum the loss over
the beta-binomial predictive of ``Y - y``. Before the fix every domain and draw was
enumerated over ``t = 0..max(N - n)``, so one domain of 10^9 people kept
``sdcbayes decide --hyperparameters ml`` running for hours; now each domain is summed
over its own window (``risk/beta_binomial.py``, ``_expected_loss_flat``).

Domains are drawn like the audit's 30 (``dom.csv``: n 7-99, N about 20 n, y about n/5;
fixed seed, all distinct), with the first domain's N set to "max N" (the others keep
theirs), and the
default losses (``uniques-equal:S=10`` / ``y``) plus the alternative
``threshold:Ymin=5/Y``. Two routes of the risk step:

* ``ml``: ``decide(y, n, N)``, one maximum-likelihood (alpha, beta) (for these counts
  on the binomial boundary, alpha + beta = 1e8);
* ``posterior``: ``decide(y, n, N, alpha=draws, beta=draws)`` with overdispersed
  Gamma-distributed draws (fixed seed), the draws a ``--hyperparameters posterior``
  fit hands to the risk step (the PyMC fit itself is not timed).

Usage: python benchmarks/decide_large_domains.py [--draws 200,1000] [--domains 30,300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from sdcbayes.risk.decisions import decide


def domains(count: int, max_n: int, seed: int = 0):
    """``count`` distinct domains like the audit's (n 7-99, N about 20 n, y about n/5),
    drawn with a fixed seed, the first domain's N raised to ``max_n``."""
    rng = np.random.default_rng(seed)
    n = rng.integers(7, 100, count)
    N = n * rng.integers(15, 26, count)
    y = rng.binomial(n, 0.2)
    N[0] = max(max_n, N[0])
    return y, n, N


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domains", default="30,300")
    ap.add_argument("--max-N", default="2e3,1e6,1e9")
    ap.add_argument("--draws", default="200,1000")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    print(f"{'route':10s} {'domains':>8s} {'max N':>8s} {'draws':>6s} {'seconds':>8s}")
    for count in (int(v) for v in args.domains.split(",")):
        for max_n in (int(float(v)) for v in args.max_N.split(",")):
            y, n, N = domains(count, max_n)
            routes = [("ml", 1, {})]
            for d in (int(v) for v in args.draws.split(",")):
                a, b = rng.gamma(20.0, 0.04, size=d), rng.gamma(20.0, 0.15, size=d)
                routes.append(("posterior", d, {"alpha": a, "beta": b}))
            for route, d, kw in routes:
                t0 = time.perf_counter()
                decide(y, n, N, alternatives=["threshold:Ymin=5/Y"], **kw)
                dt = time.perf_counter() - t0
                print(f"{route:10s} {count:8d} {max_n:8.0e} {d:6d} {dt:8.2f}", flush=True)


if __name__ == "__main__":
    main()
