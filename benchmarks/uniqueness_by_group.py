"""Benchmark: where does the latent-class model's tau1 go wrong? (issue 7)

A file-level tau1 can be right on average while the per-record probabilities are
wrong in opposite directions for different kinds of records. For seeded simple random
samples of a real population, fit the latent-class model with the defaults of
``benchmarks/latent_class_accuracy.py`` (Gibbs sampler, 2 chains x 150 draws after
100, H = 30, confirmed structural zeros, cross-validated overdispersion) and compare,
summed over the replicates and grouped by a record attribute, the model's expected
number of population uniques among the sample uniques (the sum of
P(F_k = 1 | f_k = 1), :func:`prob_population_unique`) and its expected sum of 1/F_k
(:func:`expected_inverse_frequency`) with the truth. ``--by`` names key variables
(their levels are the groups; a numeric key can be cut into bands with
``age:15,25,40``) or ``lambda`` (bands of the posterior mean excess rate
:math:`\\lambda_k = (N - n)\\pi_k`: where a too sharp or too flat mixture shows).

Usage::

    python benchmarks/uniqueness_by_group.py --population eusilc-distinct --fraction 0.05
        [--replicates 10] [--seed 0] [--by "lambda;hsize;age:15,25,40,55,65"]

What it showed (benchmarks/README.md, "A held-out file"): on ``eusilc-distinct`` the file-level
tau1 is right at 5% because two errors cancel -- every one-person household is
population-unique there by construction (a one-person composition is its member's
key) and the model gives them about half that, while it overstates the uniques of
larger households.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import (
    LatentClassModel,
    excess_means,
    expected_inverse_frequency,
    overdispersion_cv,
    prob_population_unique,
)
from sdcbayes.validation import _draw, _draw_households, _population_cells, truth_of_sample

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from latent_class_accuracy import CONFIRMED_RULES, populations_with_codebook  # noqa: E402

LAMBDA_BANDS = [0, 0.3, 1, 2, 4, 8, 16, np.inf]


def sample_unique_table(pop_name, pop, levels, fraction, replicates, seed=0, kind="srs"):
    """One row per sample unique of each replicate: predicted and true uniqueness.

    ``kind="household"``: whole households (the harness's household design, the samples
    of ``run_design``), the cross-validation's parts keeping households whole.
    """
    frame = pop.frame
    keys = list(pop.keys)
    N = len(frame)
    pop_cell, pop_counts = _population_cells(frame, keys)
    household = None
    if kind == "household":
        if pop.household is None:
            raise SystemExit(f"population {pop_name} has no households")
        household = pd.factorize(frame[pop.household], sort=True)[0].astype(np.int64)
    rows = []
    for r in range(replicates):
        rng = np.random.default_rng([seed, r])
        index = (_draw(rng, None, fraction, N) if household is None
                 else _draw_households(rng, household, fraction))[0]
        sample = frame.iloc[index][keys].astype(str).reset_index(drop=True)
        model = LatentClassModel.from_frame(
            sample, keys, levels=levels, n_classes=30,
            structural_zeros=CONFIRMED_RULES.get(pop_name),
            clusters=None if household is None else household[index])
        od = overdispersion_cv(model, random_seed=seed, em_restarts=2, max_ratio=N / model.n)
        idata = model.sample(draws=150, tune=100, chains=2, N=float(N), random_seed=seed,
                             store="all", em_restarts=3, overdispersion=od)
        C = model.key_codes.shape[0]
        lam = excess_means(idata).reshape(-1, C)
        kappa = idata.posterior["kappa"].values.reshape(-1, 1)
        smean = model.n * idata.posterior["pi"].values.reshape(-1, C)
        su = model.key_counts == 1
        p1 = prob_population_unique(lam[:, su], kappa, smean[:, su]).mean(axis=0)
        inv = expected_inverse_frequency(lam[:, su], kappa, smean[:, su]).mean(axis=0)
        # the model's cells are the sorted unique rows of the coded keys: map them to
        # the sample's records to read each sample unique's population count
        rec = np.column_stack([pd.Categorical(sample[k], categories=levels[k]).codes
                               for k in keys])
        cells, first = np.unique(rec, axis=0, return_index=True)
        assert np.array_equal(cells, model.key_codes)
        truth = truth_of_sample(pop_cell, pop_counts, index)
        F = truth.record_Fk[first[su]]
        part = sample.iloc[first[su]].reset_index(drop=True)
        part["replicate"] = r
        part["lambda"] = lam[:, su].mean(axis=0)
        part["pred_unique"], part["true_unique"] = p1, (F == 1).astype(float)
        part["pred_inverse"], part["true_inverse"] = inv, 1.0 / F
        rows.append(part)
        print(f"replicate {r}: tau1 {p1.sum():.1f} (true {int((F == 1).sum())}), tau2 "
              f"{inv.sum():.1f} (true {np.sum(1.0 / F):.1f})", file=sys.stderr, flush=True)
    return pd.concat(rows, ignore_index=True)


def by_group(table: pd.DataFrame, by: str) -> pd.DataFrame:
    """Predicted against true tau1 and tau2 summed within the groups of ``by``."""
    name, _, cuts = by.partition(":")
    if name == "lambda":
        group = pd.cut(table["lambda"], LAMBDA_BANDS)
    elif cuts:
        edges = [-np.inf, *(float(x) for x in cuts.split(",")), np.inf]
        group = pd.cut(table[name].astype(float), edges)
    else:
        group = table[name]
    cols = ["pred_unique", "true_unique", "pred_inverse", "true_inverse"]
    out = table.groupby(group, observed=True)[cols].sum()
    out.insert(0, "sample_uniques", table.groupby(group, observed=True).size())
    out["tau1_error"] = out.pred_unique / out.true_unique - 1
    out["tau2_error"] = out.pred_inverse / out.true_inverse - 1
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--population", default="eusilc-distinct")
    ap.add_argument("--fraction", type=float, default=0.05)
    ap.add_argument("--replicates", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--by", default="lambda",
                    help="groupings separated by ';': 'lambda', a key name, or 'key:c1,c2' "
                         "to cut a numeric key at c1, c2, ...")
    ap.add_argument("--kind", default="srs", choices=["srs", "household"],
                    help="simple random samples of persons, or of whole households")
    ap.add_argument("--csv", default=None, help="write the per-sample-unique table here")
    args = ap.parse_args(argv)
    found = list(populations_with_codebook(args.population))
    if not found:
        return 1
    name, pop, levels = found[0]
    table = sample_unique_table(name, pop, levels, args.fraction, args.replicates, args.seed,
                                args.kind)
    if args.csv:
        table.to_csv(args.csv, index=False)
    what = "persons" if args.kind == "srs" else "households"
    print(f"{name}, simple random samples of {100 * args.fraction:g}% of the {what}, "
          f"{args.replicates} "
          f"replicates (seed {args.seed}); sums over the sample uniques of all replicates")
    with pd.option_context("display.width", 200):
        for by in args.by.split(";"):
            print()
            print(by_group(table, by).round(3).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
