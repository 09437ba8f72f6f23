"""Benchmark: the cross-validation's kappa reading, stratum by stratum (issue 7).

On Scotland 13 keys at 1% the cross-validated kappa of stratified samples sits about
0.5 lower (log scale) than that of simple random samples of the same file, while the
kappa the population needs is the same for both (benchmarks/README.md). This script
splits the cross-validation's held-out count by the records' stratum to say where the
difference comes from. Per sample of a design and per scale ratio r of
:data:`CV_RATIOS`: cut the sample at random into r parts, fit the mixture to each part
by penalised EM (the model's default cross-validation fit: H = 30, the confirmed
structural zeros, the default profile prior, with the whole sample's masses where it
learns them), and for every part-unique record keep its stratum, whether it is a
sample unique (T) and its predicted probability of being so over the kappa grid
(:func:`prob_population_unique` with the part as sample and the whole sample as
population). The rows are the sums per (sample, ratio, stratum); :func:`point_kappa`
reads, for any set of rows, the kappa at which the predicted count meets T (the
cross-validation's point estimate without prior or dispersion; log scale, the grid's
end where T lies outside the predictions).

Kinds of sample (``--kinds``): ``srs`` and ``stratified`` are the harness's
(:func:`sdcbayes.validation._draw`, the same samples as ``latent_class_accuracy.py``
for a replicate); ``stratified-noweights`` fits the stratified samples without the
weight class as a design variable; ``stratified-households`` keeps only the largest
stratum's records of each stratified sample; ``srs-sub-households`` the largest
stratum's records of each simple random sample, subsampled to the stratified design's
take of that stratum -- the same design as ``stratified-households``, so their
difference measures the noise.

``--population-scale`` answers the other side: what kappa the population needs,
stratum by stratum. Per sample it runs the default model exactly as
``benchmarks/kappa_rules.py`` does (cross-validated kappa, Gibbs sampler, same seeds)
and keeps, for the sample uniques of each stratum, how many are population-unique (T)
and their posterior mean count of population uniques at each kappa of the grid
(:func:`population_by_stratum`); :func:`point_kappa` on these rows is the stratum's
"oracle" kappa (``kappa_rules.kappa_reads`` gives it for all strata together). Only
``srs`` and ``stratified`` samples.

Usage::

    python benchmarks/cv_by_stratum.py --population scotland13 --fraction 0.01
        --replicates 90 [--start 0] [--kinds srs,stratified] --csv rows.csv
    python benchmarks/cv_by_stratum.py ... --population-scale --kinds srs,stratified
        --replicates 50 --csv oracle.csv
    python benchmarks/cv_by_stratum.py --summarise rows.csv [more.csv ...]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import (
    CV_RATIOS,
    KAPPA_GRID,
    PHI_PRIOR_DEFAULT,
    LatentClassModel,
    prob_population_unique,
)
from sdcbayes.validation import _draw

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_rules import log_kappa_crossing, run_default  # noqa: E402
from latent_class_accuracy import confirmed_rules, populations_with_codebook  # noqa: E402

#: Finite kappas of the grid (the Poisson point is the reading's upper censoring).
GRID = KAPPA_GRID[np.isfinite(KAPPA_GRID)]

KINDS = ("srs", "stratified", "stratified-noweights", "stratified-households",
         "srs-sub-households")


def held_out_by_stratum(sample: pd.DataFrame, keys, stratum, *, weights=None, levels=None,
                        structural_zeros=None, ratios=CV_RATIOS, seed=0,
                        n_classes: int = 30) -> list[dict]:
    """One sample's held-out count per (ratio, stratum) (module docstring).

    ``stratum`` (one code per record) only labels the part-uniques; ``weights`` (one per
    record, or None) enters every fit as the weight class, as the model does. Returns
    rows with ``ratio``, ``stratum``, ``m`` (part-uniques), ``T`` (of them sample
    uniques) and ``P0`` .. ``P{len(GRID)-1}`` (their predicted count at each kappa).
    """
    sample = sample[list(keys)].astype(str).reset_index(drop=True)
    stratum = np.asarray(stratum)
    n = len(sample)
    levels = levels or {k: sorted(sample[k].unique()) for k in keys}
    kw = {"levels": levels, "n_classes": n_classes, "structural_zeros": structural_zeros}
    w = None if weights is None else np.asarray(weights, dtype=float)
    whole = LatentClassModel.from_frame(sample, keys, priors={"phi": dict(PHI_PRIOR_DEFAULT)},
                                        weights=None if w is None else pd.Series(w), **kw)
    priors = whole.priors
    if whole.learns_phi_mass:  # the parts use the whole sample's masses, as the model does
        fit = whole.fit_em(n_restarts=2, random_seed=seed)
        priors = {**priors, "phi": {**priors["phi"],
                                    "mass": [float(x) for x in fit["phi_mass"]]}}
    cell = sample.agg("|".join, axis=1)
    unique_in_sample = cell.map(cell.value_counts()).to_numpy() == 1
    rng = np.random.default_rng([seed, 5])
    rows = []
    for ratio in ratios:
        perm = rng.permutation(n)
        for j in range(ratio):
            part = np.sort(perm[j::ratio])
            pm = LatentClassModel.from_frame(
                sample.iloc[part], keys, priors=priors,
                weights=None if w is None else pd.Series(w[part]), **kw)
            em = pm.fit_em(n_restarts=1, random_seed=rng)
            in_part = cell.iloc[part]
            recs = part[in_part.map(in_part.value_counts()).to_numpy() == 1]
            codes = np.column_stack([pd.Categorical(sample[k].iloc[recs],
                                                    categories=levels[k]).codes for k in keys])
            pi = pm.key_cell_probabilities(em["w"], em["phi"], codes)
            lam, sm = (n - part.size) * pi, part.size * pi
            prob = np.array([prob_population_unique(lam, k, sm) for k in GRID])
            for s in np.unique(stratum[recs]):
                sel = stratum[recs] == s
                rows.append({"ratio": int(ratio), "stratum": int(s), "m": int(sel.sum()),
                             "T": int(unique_in_sample[recs][sel].sum()),
                             **{f"P{i}": float(v) for i, v in enumerate(prob[:, sel].sum(1))}})
    return rows


def population_by_stratum(sample: pd.DataFrame, keys, stratum, population_unique, N: float,
                          *, weights=None, levels=None, structural_zeros=None,
                          seed: int = 0) -> list[dict]:
    """Per stratum: the sample uniques' true and predicted population uniques over kappa.

    The default model as ``benchmarks/kappa_rules.py`` runs it (``record_sample``: its
    sampler settings, cross-validated kappa, ``seed`` for both); ``population_unique``
    (one bool per record: F = 1) is the truth. Returns rows with ``stratum``, ``m``
    (sample uniques), ``T`` (of them population-unique) and ``P0`` .. (the posterior
    mean of their count of population uniques at each kappa of :data:`GRID`);
    summed over the strata, the P columns are ``record_sample``'s ``m1``.
    """
    sample = sample[list(keys)].astype(str).reset_index(drop=True)
    stratum = np.asarray(stratum)
    population_unique = np.asarray(population_unique, dtype=bool)
    model = LatentClassModel.from_frame(
        sample, keys, levels=levels, n_classes=30, structural_zeros=structural_zeros,
        priors={"phi": dict(PHI_PRIOR_DEFAULT)},
        weights=None if weights is None else pd.Series(np.asarray(weights, dtype=float)))
    _, _, lam, smean = run_default(model, N, seed)
    C = model.key_codes.shape[0]
    su = np.flatnonzero(model.key_counts == 1)  # lam's columns, in this order
    # each record's key cell (the model's key_codes, coded on the same levels)
    lv = model.levels
    codes = np.column_stack([pd.Categorical(sample[k], categories=lv[j]).codes
                             for j, k in enumerate(keys)])
    index_of = {c: i for i, c in enumerate(map(tuple, model.key_codes.tolist()))}
    cell_of = np.array([index_of[c] for c in map(tuple, codes.tolist())])
    position = np.full(C, -1)
    position[su] = np.arange(su.size)
    rec = np.flatnonzero(position[cell_of] >= 0)  # the sample-unique records
    order = np.empty(su.size, dtype=np.int64)
    order[position[cell_of[rec]]] = rec  # record of each sample-unique cell
    st, truth = stratum[order], population_unique[order]
    pred = np.array([prob_population_unique(lam, k, smean).mean(axis=0) for k in GRID])
    return [{"stratum": int(s), "m": int((st == s).sum()), "T": int(truth[st == s].sum()),
             **{f"P{i}": float(v) for i, v in enumerate(pred[:, st == s].sum(axis=1))}}
            for s in np.unique(st)]


def point_kappa(rows: pd.DataFrame) -> float:
    """Log kappa at which the rows' summed prediction meets their summed T.

    The prediction mostly rises with kappa (clumped cells are less often unique; a
    cell whose part mean exceeds 1 can fall slightly), so its running maximum is read;
    linear interpolation in log kappa, the grid's ends where T lies outside.
    """
    pred = rows[[f"P{i}" for i in range(GRID.size)]].sum().to_numpy()
    return log_kappa_crossing(pred, rows["T"].sum(), np.log(GRID))


def summarise(rows: pd.DataFrame) -> pd.DataFrame:
    """Per kind and stratum (and all strata): (part-)uniques per sample, the pooled reading
    (one kappa for all samples' rows), the mean of the per-sample readings and its
    standard error."""
    out = []
    for kind, g in rows.groupby("kind", sort=False):
        for s, h in [*g.groupby("stratum"), ("all", g)]:
            per = h.groupby("replicate").apply(point_kappa, include_groups=False)
            out.append({"kind": kind, "stratum": s,
                        # per sample (and per ratio for the cross-validation's rows)
                        "uniques": h.m.sum() / h.replicate.nunique() / (
                            h.ratio.nunique() if "ratio" in h else 1),
                        "share_T": h["T"].sum() / h.m.sum(), "log_kappa_pooled": point_kappa(h),
                        "log_kappa_mean": per.mean(), "se": per.std() / np.sqrt(per.size),
                        "samples": per.size})
    return pd.DataFrame(out)


def collect(population: str, fraction: float, replicates: int, start: int, kinds,
            population_scale: bool = False) -> pd.DataFrame:
    found = list(populations_with_codebook(population))
    if not found:  # its data are absent: populations_with_codebook printed why
        return pd.DataFrame()
    (name, pop, levels), = found
    keys, frame = list(pop.keys), pop.frame
    N = len(frame)
    strata = pd.factorize(frame[pop.strata], sort=True)[0].astype(np.int64)
    sizes = np.bincount(strata)
    big = int(np.argmax(sizes))
    # the stratified design's take of the largest stratum (as _draw allocates)
    take = int(np.clip(np.rint(round(fraction * N) * np.sqrt(sizes[big])
                               / np.sqrt(sizes).sum()), 1, sizes[big]))
    if population_scale:  # each record's population count of its key cell
        cell_all = frame[keys].astype(str).agg("|".join, axis=1).to_numpy()
        cell_counts = pd.Series(cell_all).value_counts()
    rows = []
    for kind in kinds:
        for r in range(start, replicates):
            rng = np.random.default_rng([0, r])  # the samples of run_design, design seed 0
            index, w = _draw(rng, strata if kind.startswith("stratified") else None,
                             fraction, N)
            if kind.endswith("households"):
                keep = strata[index] == big
                index, w = index[keep], w[keep]
                if kind == "srs-sub-households":
                    sub = np.random.default_rng([0, r, 9]).choice(index.size, take,
                                                                  replace=False)
                    index, w = index[np.sort(sub)], w[np.sort(sub)]
            design_weights = w if kind == "stratified" else None
            if population_scale:
                F = pd.Series(cell_all).map(cell_counts).to_numpy()
                for row in population_by_stratum(
                        frame.iloc[index], keys, strata[index], F[index] == 1, N,
                        weights=w, levels=levels,
                        structural_zeros=confirmed_rules(name, keys), seed=0):
                    rows.append({"kind": kind, "replicate": r, **row})
                print(kind, r, file=sys.stderr, flush=True)
                continue
            for row in held_out_by_stratum(
                    frame.iloc[index], keys, strata[index], weights=design_weights,
                    levels=levels, structural_zeros=confirmed_rules(name, keys), seed=r):
                rows.append({"kind": kind, "replicate": r, **row})
            print(kind, r, file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--population", default="scotland13")
    ap.add_argument("--fraction", type=float, default=0.01)
    ap.add_argument("--replicates", type=int, default=90, help="samples 0 .. R-1")
    ap.add_argument("--start", type=int, default=0, help="first sample (to split a run)")
    ap.add_argument("--kinds", default="srs,stratified")
    ap.add_argument("--population-scale", action="store_true",
                    help="the population's need per stratum (the default model's Gibbs run) "
                         "instead of the cross-validation's reading; kinds srs, stratified")
    ap.add_argument("--csv", default=None, help="write the per-sample rows here")
    ap.add_argument("--summarise", nargs="*", default=None,
                    help="only summarise stored rows (from --csv)")
    args = ap.parse_args(argv)
    if args.summarise is not None:
        rows = pd.concat([pd.read_csv(p) for p in args.summarise], ignore_index=True)
    else:
        kinds = args.kinds.split(",")
        bad = [k for k in kinds if k not in KINDS]
        if bad:
            ap.error(f"unknown kind(s) {bad}; choose from {list(KINDS)}")
        if "," in args.population:
            ap.error(f"--population takes one population; got {args.population!r}")
        if args.population_scale and set(kinds) - {"srs", "stratified"}:
            ap.error("--population-scale runs the harness's own samples: kinds srs, stratified")
        rows = collect(args.population, args.fraction, args.replicates, args.start, kinds,
                       args.population_scale)
        if rows.empty:
            print("no sample could run", file=sys.stderr)
            return 1
        if args.csv:
            rows.to_csv(args.csv, index=False, float_format="%.6g")
    with pd.option_context("display.width", 200):
        print(summarise(rows).round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
