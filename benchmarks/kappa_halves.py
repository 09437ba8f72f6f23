"""Benchmark: the cross-validated kappa read on half-samples, and its scatter (issue 7).

On Adult 9 keys at 1% the default's kappa read scatters from sample to sample by about one
unit of log kappa, and that scatter, not the mixture's width, makes the intervals too
narrow there (benchmarks/README.md, "Where the owned misses come from", "Where the chains
start"). Can one sample see its own read's scatter? Per sample (the samples of ``kappa_rules.py``):
the default's cross-validation (:func:`kappa_rules.default_cv`) on the whole sample and on
``--halves`` half-samples (n/2 of its records drawn without replacement,
:func:`half_sample`), each summarised by the posterior mean and median of log kappa with the
Poisson point at log 10^4 (:func:`read_summary`). For an estimator whose variance falls as
1/n, a half-sample's estimate differs from the whole sample's by about the whole sample's
own sampling sd (:math:`\\mathrm{Var}(\\hat\\theta_{n/2} - \\hat\\theta_n) = \\sigma^2 (2/n - 1/n)`
for an efficient estimator: half-sampling, the delete-d jackknife with d = n/2, Shao & Wu
1989, Ann. Statist. 17, 1176-1197), so the half reads' scatter within a sample estimates
the read's scatter between samples (:func:`summarise` sets the two side by side).

``--evaluate`` then widens the recorded default's kappa posterior (``kappa_rules.py --out``
records of the same samples) by a convolution in log kappa with a normal of that sd
(:func:`widen`; the design's pooled sd or the sample's own, its whole variance or half of
it) and scores every rule with ``kappa_rules.evaluate`` on the recorded per-kappa draws:
the read's sampling scatter added to the range its cross-validation gives.

Usage::

    python benchmarks/kappa_halves.py --populations adult9 [--fractions 0.01]
        [--replicates 50] [--halves 8] --csv halves.csv
    python benchmarks/kappa_halves.py --summarise halves.csv
    python benchmarks/kappa_halves.py --evaluate records.npz --halves-csv halves.csv
        [--per-sample rows.csv]

A bare file name (``--halves-csv kappa_halves.csv.gz``) that is not in the working
directory is read from ``benchmarks/results/``, where the stored results are.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import KAPPA_GRID, LatentClassModel

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_rules import (  # noqa: E402
    default_cv,
    evaluate,
    load,
    per_sample_table,
    rule_weights,
    sample_parser,
    sample_row,
    stored,
)

#: log kappa given to the Poisson point (kappa = inf), the grid's top.
LOG_TOP = float(np.log(1e4))
#: Shares of the half reads' variance :func:`score` widens by.
SCALES = (1.0, 0.5)


def _log_grid(grid=KAPPA_GRID) -> np.ndarray:
    return np.minimum(np.log(np.asarray(grid, dtype=float)), LOG_TOP)


def read_summary(weights, grid=KAPPA_GRID) -> tuple[float, float]:
    """The median and the mean of log kappa under grid weights, the Poisson point at
    :data:`LOG_TOP`."""
    lg = _log_grid(grid)
    w = np.asarray(weights, dtype=float)
    w = w / w.sum()
    med = lg[min(int(np.searchsorted(np.cumsum(w), 0.5)), lg.size - 1)]
    return float(med), float(w @ lg)


def half_sample(model: LatentClassModel, rng) -> LatentClassModel:
    """The model on n // 2 of the sample's records drawn without replacement."""
    return model.resample(rng, size=int(round(model.n)) // 2, replace=False)


def half_rows(label, replicate, model, N, truth, seed, halves: int = 8) -> list[dict]:
    """The whole sample's read (``full_med``, ``full_mean``) and, one row each, those of
    ``halves`` half-samples (``med``, ``mean``); the cross-validations seeded by
    ``(seed, replicate, 3)`` (whole) and by a stream ``(seed, replicate, 41)`` (halves)."""
    if model.class_weights is not None:
        raise ValueError("half_rows reads simple random samples: the model must have equal "
                         "weights")
    full = read_summary(default_cv(model, N, int(np.random.SeedSequence(
        [seed, replicate, 3]).generate_state(1)[0]))["weights"])
    rng = np.random.default_rng([seed, replicate, 41])
    rows = []
    for h in range(int(halves)):
        half = half_sample(model, rng)
        med, mean = read_summary(default_cv(half, N, int(rng.integers(2**31)))["weights"])
        rows.append({"design": label, "replicate": replicate, "half": h,
                     "full_med": full[0], "full_mean": full[1], "med": med, "mean": mean})
    return rows


def summarise(per: pd.DataFrame) -> pd.DataFrame:
    """Per design: the whole sample's read scattering between samples (sd of its mean and
    median) against the half reads scattering within a sample (root mean within-sample
    variance), and the half reads' mean offset from the whole sample's read."""
    rows = []
    for design, d in per.groupby("design", sort=False):
        g = d.groupby("replicate")
        full = g[["full_med", "full_mean"]].first()
        rows.append({"design": design, "samples": len(full), "halves": int(g.size().min()),
                     "between_sd_mean": full.full_mean.std(),
                     "within_sd_mean": float(np.sqrt(g["mean"].var().mean())),
                     "between_sd_med": full.full_med.std(),
                     "within_sd_med": float(np.sqrt(g["med"].var().mean())),
                     "half_offset": float((g["mean"].mean() - full.full_mean).mean())})
    return pd.DataFrame(rows)


def widen(weights, sd: float, grid=KAPPA_GRID) -> np.ndarray:
    """Grid weights convolved in log kappa (the Poisson point at :data:`LOG_TOP`) with a
    normal of standard deviation ``sd``: each point's mass spread over the grid in
    proportion to the normal density at the other points (so nothing leaves the grid)."""
    w = np.asarray(weights, dtype=float)
    if not sd > 0:
        return w / w.sum()
    lg = _log_grid(grid)
    K = np.exp(-0.5 * ((lg[:, None] - lg[None, :]) / float(sd)) ** 2)
    v = (K / K.sum(axis=0, keepdims=True)) @ w
    return v / v.sum()


def score(data: dict, per: pd.DataFrame, scales=SCALES) -> pd.DataFrame:
    """Per sample of the half reads ``per`` found in the records ``data``: the default's
    row (``kappa_rules.sample_row``) and, per scale s of ``scales``, its kappa posterior
    widened by :func:`widen` with sd :math:`\\sqrt{s}` times the design's pooled
    within-sample sd of the half reads' means (rule ``halves-design<s>``) or the sample's
    own (``halves-sample<s>``)."""
    at = {(str(d), int(r)): i for i, (d, r) in enumerate(
        zip(data["design"], data["replicate"], strict=True))}
    within = per.groupby(["design", "replicate"])["mean"].std()
    pooled = {d: float(np.sqrt(s.pow(2).mean())) for d, s in within.groupby(level=0)}
    rows = []
    for (d, r), own in within.items():
        i = at.get((str(d), int(r)))
        if i is None:
            raise ValueError(f"sample {d} #{r} of the half reads is not in the records")
        w = rule_weights(data["loglik"][i], data["ratios"][i], "default")
        rows.append(sample_row(data, i, "default", w))
        for s in scales:
            for label, sd in (("design", pooled[d]), ("sample", float(own))):
                rows.append(sample_row(data, i, f"halves-{label}{s:g}",
                                       widen(w, np.sqrt(s) * sd)))
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = sample_parser(__doc__.splitlines()[0], populations="adult9", fractions="0.01",
                       replicates=50)
    ap.add_argument("--halves", type=int, default=8, help="half-samples per sample")
    ap.add_argument("--csv", default=None, help="write every read here")
    ap.add_argument("--summarise", nargs="*", default=None,
                    help="summarise stored read tables instead of running")
    ap.add_argument("--evaluate", nargs="*", default=None,
                    help="kappa_rules.py --out records to widen and score, with --halves-csv")
    ap.add_argument("--halves-csv", nargs="*", default=None,
                    help="stored half reads (--csv) of the same samples")
    ap.add_argument("--per-sample", default=None, help="write the scored rows here")
    args = ap.parse_args(argv)
    if args.evaluate is not None:
        if not args.evaluate or not args.halves_csv:
            ap.error("--evaluate needs the records and --halves-csv the half reads")
        per = pd.concat([pd.read_csv(p) for p in stored(args.halves_csv)], ignore_index=True)
        rows = score(load(args.evaluate), per)
        if args.per_sample:
            rows.to_csv(args.per_sample, index=False, float_format="%.6g")
        table = evaluate(None, None, rows)
        with pd.option_context("display.width", 200):
            print(table[["rule", "design", "bias1", "rmse1", "cover1", "cover2", "width1",
                         "z1_sd", "z2_sd", "consistent"]].round(3).to_string(index=False))
        return 0
    if args.summarise is not None:
        per = pd.concat([pd.read_csv(p) for p in stored(args.summarise)], ignore_index=True)
    else:
        if args.halves < 2:
            ap.error(f"--halves must be at least 2 (an sd needs two); got {args.halves}")
        if args.kind != "srs":
            ap.error("--kind stratified: half-samples of a weighted sample are not drawn here")

        def rows_of(label, replicate, model, N, truth, seed):
            return half_rows(label, replicate, model, N, truth, seed, args.halves)

        per = per_sample_table(args, rows_of)
        if per is None:
            return 1
    with pd.option_context("display.width", 200):
        print(summarise(per).round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
