"""Benchmark: where the Gibbs chains start, in the default's own world (issue 7).

Run in its own world with kappa known (``kappa_model_world.py --population
--at-kappa0``), the default's posterior is too sharp on Adult 9 keys: the posterior sd of
tau1's conditional expectation (the sum of :math:`P(F_k = 1 \\mid f_k = 1)` over the sample
uniques) is about half that expectation's error from sample to sample, while the EM
plug-in refitted to bootstrap resamples of the records scatters about as much as its error
(``mixture_bootstrap.py``). The mixture's posterior has modes the Gibbs sampler seldom
leaves (classes split and merge over hundreds of sweeps); chains started at the sample's
best EM fit stay near one, and their draws lack the spread between them.

Per sample (the samples of ``kappa_rules.py``): the population and sample of
``kappa_model_world.py --population`` (the same seeds, so the same draws), and on it the
Gibbs sampler with kappa fixed at kappa0 for every start of ``--starts``, ``init:chains``
(:meth:`sdcbayes.models.latent_class.LatentClassModel.sample`'s ``init``: ``em``, the best
EM fit of the sample; ``bootstrap``, the EM fit of a resample of its records, one per
chain), with ``--total`` kept draws split among the chains after ``--tune`` sweeps each.
Per start: the posterior mean of tau1's expectation against the truth's expectation at the
process's own pi and kappa0 (``tau1_star``), its posterior sd and the sd between the
chains' means, and the 90% intervals of tau1 and tau2 against the sample's truth.
``em:2`` is the run of ``kappa_model_world.py --at-kappa0`` (its ``k0_`` columns).

Usage::

    python benchmarks/chain_starts.py --populations adult9 [--fractions 0.01]
        [--kappas 0.5] [--replicates 25] [--draws 2] [--starts em:2,bootstrap:4,bootstrap:8]
        [--csv rows.csv]
    python benchmarks/chain_starts.py --summarise rows.csv
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import prob_population_unique

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_model_world import (  # noqa: E402
    _tau_columns,
    interval_scores,
    population_sample,
)
from kappa_rules import EM_RESTARTS, TUNE, per_sample_table, sample_parser  # noqa: E402
from kappa_scale import part_priors  # noqa: E402
from mixture_bootstrap import fit_probabilities  # noqa: E402

#: Kept draws of every start, split evenly among its chains (the default's 2 x 150).
TOTAL_DRAWS = 300


def parse_starts(text: str) -> list[tuple[str, int]]:
    """``"em:2,bootstrap:4"`` -> ``[("em", 2), ("bootstrap", 4)]``; errors name the fix."""
    out = []
    for part in text.split(","):
        init, _, chains = part.strip().partition(":")
        if init not in ("em", "bootstrap", "margins") or not chains.isdigit() \
                or int(chains) < 1:
            raise ValueError(f"a start is init:chains with init em, bootstrap or margins and "
                             f"at least 1 chain (e.g. bootstrap:4); got {part!r}")
        out.append((init, int(chains)))
    return out


def start_rows(label, replicate, model, N, truth, seed, kappas=(0.5,), draws: int = 2,
               starts=(("em", 2), ("bootstrap", 4)), total: int = TOTAL_DRAWS,
               tune: int = TUNE) -> list[dict]:
    """Per kappa0 and draw, the sample of ``kappa_model_world.population_rows`` (the same
    seeds) and on it the Gibbs sampler at kappa0 from every start of ``starts``, with
    ``total`` kept draws split among its chains; columns prefixed ``<init><chains>_``:
    ``est1, lo1, hi1, est2, lo2, hi2`` (posterior means and 90% intervals), ``ex`` and
    ``ex_sd`` (posterior mean and sd of tau1's expectation), ``between`` (sd of the
    chains' means of it); and ``tau1_star``, the truth's expectation at the process's own
    pi and kappa0."""
    rng = np.random.default_rng([seed, replicate, 97])
    _, fit = part_priors(model, rng, EM_RESTARTS - 1)
    rows = []
    for k0 in kappas:
        for b in range(draws):
            sample, t, N_pop = population_sample(model, fit, k0, N, rng)
            run_seed = int(np.random.SeedSequence([seed, replicate, b]).generate_state(1)[0])
            pi = fit_probabilities(model, fit, sample.key_codes[sample.key_counts == 1])
            p = prob_population_unique((N_pop - sample.n) * pi, float(k0), sample.n * pi)
            row = {"design": label, "replicate": replicate, "kappa0": float(k0), "draw": b,
                   "tau1": t.tau1, "tau2": t.tau2, "tau1_star": float(p.sum())}
            for init, chains in starts:
                idata = sample.sample(draws=max(1, total // chains), tune=tune, chains=chains,
                                      N=N_pop, random_seed=run_seed, em_restarts=EM_RESTARTS,
                                      overdispersion=float(k0), init=init, cores=1)
                ex = idata.posterior["tau1_expected"].values
                pre = f"{init}{chains}_"
                row.update(_tau_columns(idata, pre))
                row.update({pre + "ex": float(ex.mean()), pre + "ex_sd": float(ex.std()),
                            pre + "between": float(ex.mean(axis=1).std())})
            rows.append(row)
    return rows


def summarise(per: pd.DataFrame) -> pd.DataFrame:
    """Per design, kappa0 and start of :func:`start_rows`' table: the error of the
    posterior mean of tau1's expectation from ``tau1_star`` (mean, sd) against its
    posterior sd and the sd between chains (means over samples); the 90% coverage of tau1
    and tau2 and the mean and sd of their errors over the posterior sd the interval
    implies (width / 3.29; 0 and 1 when calibrated). Starts a design was not run with
    (stored tables of several runs) are left out of its rows."""
    starts = [c[:-len("_ex")] for c in per.columns if c.endswith("_ex")]
    rows = []
    for (design, k0), d in per.groupby(["design", "kappa0"], sort=False):
        for s in starts:
            if d[f"{s}_ex"].isna().all():  # a start not run on this design
                continue
            err = d[f"{s}_ex"] - d.tau1_star
            row = {"design": design, "kappa0": k0, "start": s, "samples": len(d),
                   "ex_err_mean": err.mean(), "ex_err_sd": err.std(),
                   "ex_post_sd": d[f"{s}_ex_sd"].mean(), "between_sd": d[f"{s}_between"].mean()}
            scores = interval_scores(d, f"{s}_")
            row.update({k: v for k, v in scores.items() if not k.startswith("bias")})
            rows.append(row)
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = sample_parser(__doc__.splitlines()[0], populations="adult9", fractions="0.01",
                       replicates=25)
    ap.add_argument("--draws", type=int, default=2, help="populations drawn per sample")
    ap.add_argument("--kappas", default="0.5", help="comma-separated kappa0 of the populations")
    ap.add_argument("--starts", default="em:2,bootstrap:4,bootstrap:8",
                    help="comma-separated init:chains")
    ap.add_argument("--total", type=int, default=TOTAL_DRAWS,
                    help="kept draws per start, split among its chains")
    ap.add_argument("--csv", default=None, help="write every sample's row here")
    ap.add_argument("--summarise", nargs="*", default=None,
                    help="summarise stored row tables instead of running")
    args = ap.parse_args(argv)
    if args.summarise is not None:
        per = pd.concat([pd.read_csv(p) for p in args.summarise], ignore_index=True)
    else:
        try:
            starts = parse_starts(args.starts)
            kappas = [float(x) for x in args.kappas.split(",")]
        except ValueError as e:
            ap.error(str(e))
        if args.draws < 1 or args.total < 1 or not all(0 < k < np.inf for k in kappas):
            ap.error("--draws and --total must be at least 1 and every kappa0 positive, finite")

        def rows_of(label, replicate, model, N, truth, seed):
            return start_rows(label, replicate, model, N, truth, seed, kappas, args.draws,
                              starts, args.total)

        per = per_sample_table(args, rows_of)
        if per is None:
            return 1
    with pd.option_context("display.width", 200):
        print(summarise(per).round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
