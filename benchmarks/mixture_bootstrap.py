"""Benchmark: the mixture's own error, measured by the bootstrap (issue 7).

Run in its own world (``kappa_model_world.py --population --at-kappa0``), the default's
posterior with kappa fixed at the process's own is too sharp on Adult 9 keys: the
posterior sd of tau1's conditional expectation (the sum of :math:`P(F_k = 1 \\mid f_k = 1)`
over the sample uniques) is a fraction of that expectation's error from sample to
sample. The errors of the uniques' :math:`\\pi_k` share a component the posterior treats as
independent cell by cell. The bootstrap sees it: the EM plug-in's expectation scatters
over resamples of the records about as much as its error scatters over samples.

Per sample (the samples and models of ``kappa_rules.py``, i.e. of
``latent_class_accuracy.py``'s default), the whole sample's EM plug-in of tau1's and
tau2's conditional expectations over the sample uniques at every kappa of the grid
(:func:`plug_in_sums`), and the same for ``--boot`` resamples of the records
(:func:`bootstrap_sums`): the mixture is refitted to each resample and evaluated on the
original sample's uniques, with their f = 1. ``--evaluate`` then widens the recorded
default's posterior draws (``kappa_rules.py --out`` records of the same samples) by the
bootstrap's sd at each kappa, a normal shift per draw (:func:`widened_row`; BayesBag in
spirit, Huggins & Miller 2019: the posterior's own spread plus the estimate's sampling
spread), and scores both.

Usage::

    python benchmarks/mixture_bootstrap.py --populations adult9 [--fractions 0.01]
        [--replicates 50] [--boot 20] --out boot.npz
    python benchmarks/mixture_bootstrap.py --evaluate records.npz --boot-npz boot.npz
        [--rules default] [--per-sample rows.csv]
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import (
    KAPPA_GRID,
    LatentClassModel,
    expected_inverse_frequency,
    prob_population_unique,
)

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_rules import (  # noqa: E402
    EM_RESTARTS,
    args_samples,
    evaluate,
    load,
    rule_weights,
    sample_parser,
    sample_row,
    weighted_interval,
)

#: How much of the bootstrap's variance :func:`widened_row` adds (the scores print both).
SCALES = (0.5, 1.0)


def fit_probabilities(model: LatentClassModel, fit: dict, codes) -> np.ndarray:
    r""":math:`\pi_k` of the cells ``codes`` at a fitted mixture (``w``, renormalised, and
    ``phi``; :meth:`LatentClassModel.cell_probabilities`)."""
    w = np.asarray(fit["w"], dtype=float)
    return model.cell_probabilities(w / w.sum(), [np.asarray(p, dtype=float) for p in fit["phi"]],
                                    codes=np.asarray(codes))


def plug_in_sums(model: LatentClassModel, fit: dict, codes, N: float, n: float,
                 grid=KAPPA_GRID) -> tuple[np.ndarray, np.ndarray]:
    r"""tau1's and tau2's conditional expectations over the cells ``codes`` (sample
    uniques, f = 1) at a fitted mixture, at every kappa of ``grid`` (inf: Poisson).

    :math:`\sum_k P(F_k = 1 \mid f_k = 1)` and :math:`\sum_k E(1/F_k \mid f_k = 1)` with
    :math:`\pi_k` the fit's (``w``, ``phi``; :meth:`LatentClassModel.cell_probabilities`),
    :math:`\lambda_k = (N - n)\pi_k` and sample mean :math:`n\pi_k`
    (:func:`prob_population_unique`, :func:`expected_inverse_frequency`): the equal-weight
    (simple random sample) case.
    """
    pi = fit_probabilities(model, fit, codes)
    lam, smean = (float(N) - float(n)) * pi, float(n) * pi
    s1 = np.array([prob_population_unique(lam, None if np.isinf(k) else k, smean).sum()
                   for k in grid])
    s2 = np.array([expected_inverse_frequency(lam, None if np.isinf(k) else k, smean).sum()
                   for k in grid])
    return s1, s2


def bootstrap_sums(model: LatentClassModel, N: float, boot: int, rng,
                   grid=KAPPA_GRID) -> dict:
    """The whole sample's EM plug-in sums (:func:`plug_in_sums`) over its uniques and
    those of ``boot`` refits to resamples of its records (drawn with replacement, n of
    them), evaluated on the same uniques. Needs equal weights (a simple random sample).

    Returns ``em1``, ``em2`` (grid) and ``b1``, ``b2`` (boot x grid).
    """
    if model.class_weights is not None:
        raise ValueError("bootstrap_sums evaluates the simple random sample's plug-in: the "
                         "model must have equal weights")
    n = float(model.n)
    codes = model.key_codes[model.key_counts == 1]
    em1, em2 = plug_in_sums(model, model.fit_em(n_restarts=EM_RESTARTS - 1, random_seed=rng),
                            codes, N, n, grid)
    b1, b2 = np.empty((boot, grid.size)), np.empty((boot, grid.size))
    for b in range(boot):
        resample = model.resample(rng)
        fit = resample.fit_em(n_restarts=EM_RESTARTS - 1, random_seed=rng)
        b1[b], b2[b] = plug_in_sums(resample, fit, codes, N, n, grid)
    return {"em1": em1, "em2": em2, "b1": b1, "b2": b2}


def collect(args) -> dict:
    """:func:`bootstrap_sums` on every sample of the arguments' designs, seeded by
    ``(seed, replicate, 31)``; arrays by key, with ``design`` and ``replicate``."""
    out: dict[str, list] = {}
    for label, r, model, N, _ in args_samples(args):
        rec = bootstrap_sums(model, N, args.boot, np.random.default_rng([args.seed, r, 31]))
        rec.update(design=label, replicate=r)
        for k, v in rec.items():
            out.setdefault(k, []).append(v)
    return {k: np.asarray(v) for k, v in out.items()}


def widened_row(data: dict, i: int, rule: str, w, sd1, sd2, rng, scale: float = 1.0) -> dict:
    """Sample ``i``'s row of ``kappa_rules.score_samples`` under grid weights ``w``, its
    posterior draws of tau1 and tau2 at every kappa shifted by independent normal draws of
    sd ``sqrt(scale) * sd1`` and ``sd2`` (per grid point): the interval widened by that
    share of the bootstrap's variance, the estimate unchanged. Rule label
    ``<rule>+boot<scale>``."""
    row = sample_row(data, i, rule, w)
    row["rule"] = f"{rule}+boot{scale:g}"
    for t, sd in (("1", sd1), ("2", sd2)):
        draws = np.asarray(data["d" + t][i], dtype=float)
        draws = draws + rng.standard_normal(draws.shape) * (np.sqrt(scale)
                                                            * np.asarray(sd))[:, None]
        row[f"lo{t}"], row[f"hi{t}"] = weighted_interval(draws, w)
    return row


def boot_sds(paths) -> dict:
    """The bootstrap's sd per sample and kappa (``sd1``, ``sd2``: samples x grid) of
    stored :func:`collect` runs, which may differ in their number of resamples."""
    parts = [dict(np.load(p, allow_pickle=False)) for p in paths]
    return {"design": np.concatenate([p["design"] for p in parts]),
            "replicate": np.concatenate([p["replicate"] for p in parts]),
            **{f"sd{t}": np.concatenate([p["b" + t].std(axis=1, ddof=1) for p in parts])
               for t in ("1", "2")}}


def score(data: dict, boot: dict, rules=("default",), scales=SCALES, seed: int = 11):
    """Per sample of ``boot`` (:func:`boot_sds`) found in the records ``data``: each
    rule's row and its widened rows (:func:`widened_row`, one per scale)."""
    at = {(str(d), int(r)): i for i, (d, r) in enumerate(
        zip(data["design"], data["replicate"], strict=True))}
    rng = np.random.default_rng(seed)
    rows = []
    for j, (d, r) in enumerate(zip(boot["design"], boot["replicate"], strict=True)):
        i = at.get((str(d), int(r)))
        if i is None:
            raise ValueError(f"sample {d} #{r} of the bootstrap is not in the records")
        sd1, sd2 = boot["sd1"][j], boot["sd2"][j]
        for rule in rules:
            w = rule_weights(data["loglik"][i], data["ratios"][i], rule)
            rows.append(sample_row(data, i, rule, w))
            rows += [widened_row(data, i, rule, w, sd1, sd2, rng, s) for s in scales]
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = sample_parser(__doc__.splitlines()[0], populations="adult9", fractions="0.01",
                       replicates=50)
    ap.add_argument("--boot", type=int, default=20, help="resamples per sample")
    ap.add_argument("--out", default=None, help="store the bootstrap sums here (.npz)")
    ap.add_argument("--evaluate", nargs="*", default=None,
                    help="kappa_rules.py --out records to widen and score, with --boot-npz")
    ap.add_argument("--boot-npz", nargs="*", default=None,
                    help="stored bootstrap sums (--out) of the same samples")
    ap.add_argument("--rules", default="default", help="comma-separated kappa rules")
    ap.add_argument("--per-sample", default=None, help="write the scored rows here")
    args = ap.parse_args(argv)
    if args.evaluate is not None:
        if not args.evaluate or not args.boot_npz:
            ap.error("--evaluate needs the records and --boot-npz the bootstrap sums")
        per = score(load(args.evaluate), boot_sds(args.boot_npz), args.rules.split(","))
        if args.per_sample:
            per.to_csv(args.per_sample, index=False, float_format="%.6g")
        table = evaluate(None, None, per)
        with pd.option_context("display.width", 200):
            print(table[["rule", "design", "bias1", "cover1", "cover2", "width1", "width2",
                         "z1_sd", "z2_sd", "consistent"]].round(3).to_string(index=False))
        return 0
    if args.boot < 2:
        ap.error(f"--boot must be at least 2 (an sd needs two resamples); got {args.boot}")
    if not args.out:
        ap.error("give --out for the bootstrap sums (or --evaluate stored ones)")
    rec = collect(args)
    if not rec:
        return 1
    np.savez(args.out, **rec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
