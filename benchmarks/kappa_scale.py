"""Benchmark: what the cross-validated kappa reads, by part size and by extrapolation (issue 7).

:func:`sdcbayes.models.latent_class.overdispersion_cv` fits the mixture to a part of
n/r records and predicts which of the part's uniques the rest of the sample (r - 1
times as many records) leaves unique; the population extrapolates the whole sample's
fit by N/n - 1 instead (9 to 99 on the real designs). A ratio's kappa therefore mixes
two things: how a fit to fewer records smooths (part size m = n/r), and how far it is
extrapolated (e = r - 1). This script separates them. Per sample (the samples and
models of ``kappa_rules.py``, i.e. of ``latent_class_accuracy.py``'s default), for
each ratio r of :data:`PLAN` one random partition into r parts, each part fitted by
EM as the default's cross-validation fits it, and its uniques predicted in nested
random subsets of the rest holding e times the part's records (e = 1 .. r - 1):
the point where the predicted count over the kappa grid meets the observed count
(:func:`kappa_rules.kappa_crossing`, summed over the parts) is the read of (r, e).
Beside the reads, the whole sample's own EM plug-in: the kappa at which its tau1,
extrapolated by N/n as the model does, meets the sample's true tau1 (the "EM oracle",
row r = 1, e = N/n - 1), against the stored Gibbs oracle of ``kappa_rules.py
--kappa-csv`` (the kappa the model's posterior mean needs).

Usage::

    python benchmarks/kappa_scale.py --populations adult9 [--fractions 0.01,0.05,0.1]
        [--replicates 30] [--seed 0] [--csv reads.csv]
        [--gibbs-oracle benchmarks/results/kappa_rules_50_kappa.csv.gz]
    python benchmarks/kappa_scale.py --summarise reads.csv [--gibbs-oracle ...]
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import (
    KAPPA_GRID,
    LatentClassModel,
    _part_model,
    prob_population_unique,
)

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_rules import EM_RESTARTS, kappa_crossing, sample_parser  # noqa: E402

#: Ratios r (parts of n/r records) and, per ratio, the extrapolations e (subsets of the
#: rest holding e times the part's records) that are read; e = r - 1 is the whole rest,
#: the default's cross-validation (ratios 4 and 8).
PLAN = {2: (1,), 4: (1, 3), 8: (1, 3, 7)}

_FIN = np.isfinite(KAPPA_GRID)
_LOGK = np.log(KAPPA_GRID[_FIN])


def _curve(lam, smean) -> np.ndarray:
    """Predicted number of uniques at every kappa of the grid (Poisson at inf)."""
    return np.array([prob_population_unique(lam, None if np.isinf(k) else k, smean).sum()
                     for k in KAPPA_GRID])


def part_priors(model: LatentClassModel, rng, em_restarts: int):
    """The parts' priors as the default's cross-validation sets them (a learnt profile
    mass: the whole sample's EM masses, with its EM restarts) and the whole sample's EM
    fit."""
    fit = model.fit_em(n_restarts=em_restarts, random_seed=rng)
    if not model.learns_phi_mass:
        return model.priors, fit
    mass = [float(x) for x in fit["phi_mass"]]
    return {**model.priors, "phi": {**model.priors["phi"], "mass": mass}}, fit


def part_reads(model: LatentClassModel, rng, plan=PLAN, em_restarts: int = EM_RESTARTS - 1,
               priors=None) -> list[dict]:
    """The reads of every (r, e) of ``plan`` on one sample (module docstring).

    Returns one dict per (r, e): ``r``, ``e``, ``read`` (log kappa where the predicted
    count meets the observed, linear between grid points), ``censored`` (-1/+1 below or
    above the grid's finite range), ``observed`` (part-uniques with no record in their
    subsets, summed over the parts) and ``predicted_poisson``.
    """
    priors = model.priors if priors is None else priors
    rows_f = np.rint(model.counts).astype(np.int64)
    K, C = rows_f.size, model.key_counts.size
    cell_of_record = np.repeat(np.arange(K), rows_f)
    n = cell_of_record.size
    out = []
    for r, es in plan.items():
        if any(e > r - 1 for e in es):
            raise ValueError(f"ratio {r} leaves at most {r - 1} part sizes of rest; got {es}")
        perm = rng.permutation(n)
        bounds = [i * n // r for i in range(r + 1)]
        acc = {e: [0, np.zeros(KAPPA_GRID.size)] for e in es}
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            part = perm[a:b]
            rest = np.concatenate([perm[:a], perm[b:]])
            rest = rest[rng.permutation(rest.size)]  # nested subsets: first e * |A| records
            cA = np.bincount(cell_of_record[part], minlength=K)
            pm = _part_model(model, cA, priors)
            unique_a = np.flatnonzero(
                np.bincount(model.key_index, weights=cA, minlength=C) == 1)
            em = pm.fit_em(n_restarts=em_restarts, random_seed=rng)
            pi = np.asarray(pm.key_cell_probabilities(em["w"], em["phi"],
                                                      model.key_codes[unique_a]))[None, :]
            for e in es:
                sub = rest[: e * part.size]
                in_sub = np.bincount(model.key_index,
                                     weights=np.bincount(cell_of_record[sub], minlength=K),
                                     minlength=C)
                acc[e][0] += int(np.count_nonzero(in_sub[unique_a] == 0))
                acc[e][1] += _curve(sub.size * pi, part.size * pi)
        for e, (t, pred) in acc.items():
            read, cens = kappa_crossing(pred[_FIN], t, _LOGK)
            out.append({"r": r, "e": e, "read": read, "censored": cens, "observed": t,
                        "predicted_poisson": float(pred[-1])})
    return out


def em_oracle(model: LatentClassModel, fit: dict, N: float, tau1: float) -> dict:
    """Where the whole sample's EM plug-in tau1 (extrapolated by N/n, equal weights) meets
    ``tau1``: the row r = 1, e = N/n - 1 of :func:`part_reads`' table."""
    su = np.flatnonzero(model.key_counts == 1)
    pi = np.asarray(model.key_cell_probabilities(fit["w"], fit["phi"],
                                                 model.key_codes[su]))[None, :]
    pred = _curve((float(N) - model.n) * pi, model.n * pi)
    read, cens = kappa_crossing(pred[_FIN], float(tau1), _LOGK)
    return {"r": 1, "e": int(round(float(N) / model.n)) - 1, "read": read, "censored": cens,
            "observed": float(tau1), "predicted_poisson": float(pred[-1])}


def sample_rows(label, replicate, model, N, truth, seed) -> list[dict]:
    """Every read of one sample and its EM oracle, seeded by ``(seed, replicate)``."""
    rng = np.random.default_rng([seed, replicate, 99])
    priors, fit = part_priors(model, rng, EM_RESTARTS - 1)
    rows = part_reads(model, rng, priors=priors) + [em_oracle(model, fit, N, truth.tau1)]
    return [{"design": label, "replicate": replicate, **row} for row in rows]


def summarise(per: pd.DataFrame, gibbs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per design: the mean read of every (r, e) (column ``r<r>e<e>``; the EM oracle is
    ``em_oracle``), over the samples whose EM oracle is not censored, the share of
    censored reads, and with ``gibbs`` (a ``kappa_rules.py --kappa-csv`` table) the mean
    Gibbs oracle and the default's median log kappa on the same samples."""
    per = per.copy()
    per["cell"] = np.where(per.r == 1, "em_oracle",
                           "r" + per.r.astype(str) + "e" + per.e.astype(str))
    ok = per[per.r == 1].set_index(["design", "replicate"]).censored.eq(0)
    keep = per.set_index(["design", "replicate"]).index.map(ok).astype(bool)
    use = per[keep]
    table = use.pivot_table(index="design", columns="cell", values="read", aggfunc="mean")
    cols = [c for c in table.columns if c != "em_oracle"]
    table = table[sorted(cols, key=lambda c: (int(c[1:c.index("e")]), int(c[c.index("e") + 1:])))
                  + ["em_oracle"]]
    table["samples"] = use.groupby("design").replicate.nunique()
    table["censored_reads"] = use[use.r > 1].groupby("design").censored.apply(
        lambda c: float((c != 0).mean()))
    if gibbs is not None:
        g = gibbs[gibbs.rule == "default"] if "rule" in gibbs else gibbs
        g = g.merge(use[use.r == 1][["design", "replicate"]], on=["design", "replicate"])
        g = g[g.censored == 0]
        table["gibbs_oracle"] = g.groupby("design").oracle.mean()
        table["default_median"] = g.groupby("design").cv_median.mean()
    return table.reset_index()


def main(argv=None) -> int:
    ap = sample_parser(__doc__.splitlines()[0], populations="adult9", replicates=30)
    ap.add_argument("--csv", default=None, help="write every sample's reads here")
    ap.add_argument("--summarise", nargs="*", default=None,
                    help="summarise stored read tables instead of running")
    ap.add_argument("--gibbs-oracle", default=None,
                    help="a kappa_rules.py --kappa-csv table of the same samples (design "
                         "seed 0: benchmarks/results/kappa_rules_50_kappa.csv.gz)")
    args = ap.parse_args(argv)
    if args.summarise is not None:
        per = pd.concat([pd.read_csv(p) for p in args.summarise], ignore_index=True)
    else:
        from kappa_rules import per_sample_table

        per = per_sample_table(args, sample_rows)
        if per is None:
            return 1
    gibbs = pd.read_csv(args.gibbs_oracle) if args.gibbs_oracle else None
    with pd.option_context("display.width", 200):
        print(summarise(per, gibbs).round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
