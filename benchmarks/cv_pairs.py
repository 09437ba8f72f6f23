"""Benchmark: why the cross-validation's kappa likelihood is too sharp (issue 7).

:func:`sdcbayes.models.latent_class.overdispersion_cv` compares the sample's count of
uniques T with its parts' prediction :math:`\\sum_k P_k(\\kappa)` (every part-unique k:
the probability that the rest of the sample holds none of its cell), under a normal
likelihood of variance :math:`\\hat\\phi V`, :math:`V = \\sum_k P_k(1 - P_k)`: independent
Bernoulli events, widened by the parts' dispersion :math:`\\hat\\phi`. The events that
carry the information about kappa are the *failures*, part-uniques whose cell has
records elsewhere in the sample, and they come in clumps: a sample cell of two records
split between two parts makes two failures at once, a cell of three in three parts
three. With :math:`e_c` the failures of sample cell c, the failures' count is compound
Poisson, its variance about :math:`\\sum_c e_c^2` against the Bernoulli variance's
:math:`\\sum_c e_c`, larger by the clumping index

.. math:: \\rho = \\sum_c e_c^2 \\Big/ \\sum_c e_c

(2 where every failure is half of a split pair). :math:`\\hat\\phi` cannot see it: a
part's failures come from distinct cells (a part-unique is alone in its part), and the
clumps straddle the parts, which :math:`\\hat\\phi` compares with each other.

Two measurements:

- ``--index`` (no fitting; seconds per key set): per sample of every design (the
  harness's samples of ``latent_class_accuracy.py``, design seed ``--seed``), for
  ``--partitions`` random partitions at each of the default's ratios: the failures per
  partition and :math:`\\rho`.
- ``--model-world``: is the likelihood's spread right where the model holds? Per real
  sample (the samples and models of ``kappa_rules.py``), ``--draws`` samples drawn from
  its EM fit with Gamma(kappa0) cells (``kappa_model_world.simulate_sample``), the
  default's cross-validation on each and, per partition, the standardised discrepancy
  at the grid point nearest kappa0,
  :math:`z = (T - \\sum_k P_k(\\kappa_0)) / \\sqrt{\\hat\\phi V}` (its square from the
  partition's log-likelihood, its sign from the likelihood's slope there): mean 0 and
  sd 1 if the likelihood is right.

Usage::

    python benchmarks/cv_pairs.py --index --populations adult6,adult9,scotland7,scotland13
        [--kinds srs,stratified] [--replicates 50] [--partitions 4] [--csv index.csv]
    python benchmarks/cv_pairs.py --model-world --populations adult9 --fractions 0.01
        --kappa0 0.5 [--replicates 25] [--draws 4] [--csv z.csv]
    python benchmarks/cv_pairs.py --summarise index.csv z.csv
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import CV_RATIOS, KAPPA_GRID

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_model_world import _model_like, simulate_sample  # noqa: E402
from kappa_rules import EM_RESTARTS, default_cv, samples  # noqa: E402
from kappa_scale import part_priors  # noqa: E402


def random_parts(n: int, ratio: int, rng) -> np.ndarray:
    """Part labels 0..ratio-1 of ``n`` records cut at random into ``ratio`` parts of
    sizes as :func:`overdispersion_cv` cuts them (record order permuted, part i taking
    positions ``i n // ratio`` to ``(i + 1) n // ratio``)."""
    perm = rng.permutation(n)
    part = np.empty(n, dtype=np.int64)
    for i in range(ratio):
        part[perm[i * n // ratio:(i + 1) * n // ratio]] = i
    return part


def failures(cell: np.ndarray, part: np.ndarray) -> np.ndarray:
    """Failures per sample cell: records alone in their part whose cell has more
    records in the sample (``cell``: each record's sample cell; ``part``: its part)."""
    cell = np.asarray(cell, dtype=np.int64)
    part = np.asarray(part, dtype=np.int64)
    n_cells, n_parts = int(cell.max()) + 1, int(part.max()) + 1
    f = np.bincount(cell, minlength=n_cells)
    in_part = np.bincount(cell * n_parts + part, minlength=n_cells * n_parts)
    alone = (in_part.reshape(n_cells, n_parts) == 1).sum(axis=1)
    return np.where(f >= 2, alone, 0)


def clumping(e: np.ndarray) -> tuple[float, float]:
    """``(sum e, sum e^2 / sum e)``: the failures and their clumping index rho (nan
    without failures)."""
    e = np.asarray(e, dtype=float)
    total = float(e.sum())
    return total, (float((e**2).sum()) / total if total > 0 else float("nan"))


def index_rows(populations: str, kinds, fractions, replicates: int, seed: int = 0,
               partitions: int = 4, ratios=CV_RATIOS) -> pd.DataFrame:
    """Per sample of every design (:func:`kappa_rules.samples`, the harness's samples):
    n, sample uniques, and per ratio the failures per partition and rho over
    ``partitions`` random partitions (pooled sums)."""
    rows = []
    for kind in kinds:
        for label, r, model, _, _ in samples(populations, fractions, kind, replicates, seed):
            # each record's key cell (a model row is a cell, or a (cell, weight class) pair)
            cell = np.repeat(model.key_index, np.rint(model.counts).astype(np.int64))
            row = {"design": label, "replicate": r, "n": cell.size,
                   "uniques": int((np.rint(model.key_counts) == 1).sum())}
            prng = np.random.default_rng([seed, r, 77])
            for ratio in ratios:
                es = np.concatenate([failures(cell, random_parts(cell.size, ratio, prng))
                                     for _ in range(partitions)])
                total, rho = clumping(es)
                row[f"failures{ratio}"] = total / partitions
                row[f"rho{ratio}"] = rho
            rows.append(row)
    return pd.DataFrame(rows)


def signed_z(loglik: np.ndarray, index: int) -> np.ndarray:
    """Each partition's standardised discrepancy at grid point ``index`` from its
    log-likelihood :math:`-z^2/2` over the kappa grid (rows: partitions). The prediction
    rises with kappa, so where the likelihood is higher at the grid point below, the
    count lies below the prediction (z < 0)."""
    loglik = np.atleast_2d(np.asarray(loglik, dtype=float))
    below = loglik[:, max(index - 1, 0)]
    sign = np.where(below > loglik[:, index], -1.0, 1.0)
    return sign * np.sqrt(np.maximum(-2.0 * loglik[:, index], 0.0))


def grid_index(kappa0: float) -> int:
    """The grid point of :data:`KAPPA_GRID` nearest ``kappa0`` in log kappa (inf: the
    Poisson point)."""
    if not np.isfinite(kappa0):
        return KAPPA_GRID.size - 1
    finite = np.isfinite(KAPPA_GRID)
    return int(np.argmin(np.where(finite, np.abs(np.log(KAPPA_GRID) - np.log(kappa0)),
                                  np.inf)))


def model_world_rows(label: str, replicate: int, model, N: float, kappa0: float,
                     draws: int, seed: int = 0) -> list[dict]:
    """Per sample drawn from ``model``'s EM fit with Gamma(``kappa0``) cells (``draws``
    of them, seeded by ``(seed, replicate)``): every partition's z at kappa0, its ratio,
    the dispersion and the sample's count of uniques."""
    rng = np.random.default_rng([seed, replicate, 98])
    _, fit = part_priors(model, rng, EM_RESTARTS - 1)
    gi = grid_index(kappa0)
    rows = []
    for b in range(draws):
        codes, counts = simulate_sample(model, fit, kappa0, rng)
        sim = _model_like(model, codes, counts)
        od = default_cv(sim, N, [seed, replicate, b])
        z = signed_z(od["partition_loglik"], gi)
        for zj, ratio in zip(z, od["partition_ratios"], strict=True):
            rows.append({"design": label, "replicate": replicate, "draw": b,
                         "kappa0": float(kappa0), "ratio": int(ratio), "z": float(zj),
                         "phi": float(od["dispersion"]), "uniques": float(od["observed"]),
                         "n": float(sim.n)})
    return rows


def summarise_index(d: pd.DataFrame) -> pd.DataFrame:
    """Per design: median n, sample uniques, and per ratio the median failures per
    partition and rho."""
    cols = ["n", "uniques"] + [c for c in d.columns if c.startswith(("failures", "rho"))]
    return d.groupby("design", sort=False)[cols].median().reset_index()


def summarise_z(d: pd.DataFrame) -> pd.DataFrame:
    """Per design, kappa0 and ratio: z's mean and sd (0 and 1 if the likelihood is
    right), the sd of the draws' z about their own sample's mean (the spread without
    the sample-to-sample offset), the median dispersion and the count."""
    out = []
    for (design, k0, ratio), g in d.groupby(["design", "kappa0", "ratio"], sort=False):
        within = g.z - g.groupby("replicate").z.transform("mean")
        dof = len(g) - g.replicate.nunique()
        out.append({"design": design, "kappa0": k0, "ratio": ratio, "partitions": len(g),
                    "z_mean": g.z.mean(), "z_sd": g.z.std(ddof=1),
                    "z_sd_within": float(np.sqrt((within**2).sum() / dof)) if dof > 0
                    else float("nan"),
                    "phi": g.phi.median()})
    return pd.DataFrame(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--index", action="store_true", help="failures and rho per sample")
    mode.add_argument("--model-world", action="store_true",
                      help="z of the kappa likelihood at kappa0 in the model's world")
    mode.add_argument("--summarise", nargs="+", metavar="CSV", help="print stored tables")
    p.add_argument("--populations", default="adult6,adult9,scotland7,scotland13")
    p.add_argument("--kinds", default="srs,stratified")
    p.add_argument("--fractions", default="0.01,0.05,0.1")
    p.add_argument("--replicates", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--kappa0", type=float, default=0.5)
    p.add_argument("--draws", type=int, default=4)
    p.add_argument("--csv")
    args = p.parse_args(argv)
    if args.summarise:
        for path in args.summarise:
            d = pd.read_csv(path)
            table = summarise_z(d) if "z" in d.columns else summarise_index(d)
            print(table.round(2).to_string(index=False))
        return 0
    fractions = [float(x) for x in args.fractions.split(",")]
    if args.index:
        d = index_rows(args.populations, args.kinds.split(","), fractions, args.replicates,
                       args.seed, args.partitions)
    else:
        rows = []
        for label, r, model, N, _ in samples(args.populations, fractions, "srs",
                                             args.replicates, args.seed):
            rows += model_world_rows(label, r, model, N, args.kappa0, args.draws, args.seed)
            print(label, r, flush=True)
        d = pd.DataFrame(rows)
    if d.empty:  # no population's data could be loaded (each skip printed above)
        print("no design could run", file=sys.stderr)
        return 1
    table = summarise_index(d) if args.index else summarise_z(d)
    if args.csv:
        d.to_csv(args.csv, index=False)
    print(table.round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
