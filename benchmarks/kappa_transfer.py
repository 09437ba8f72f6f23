"""Benchmark: a kappa learnt across designs instead of read from each sample (issue 7).

The per-sample cross-validated overdispersion kappa of the latent-class model is noise
about a design's own value (``benchmarks/overdispersion_oracle.py``, ``kappa_corr``),
and the design's value, were it known, would take two thirds of the 1% RMSE
(benchmarks/README.md, "Does the per-sample kappa read the sample?"). This script learns that value
from other designs: a censored (Tobit) regression of the design's oracle log kappa on
features every sample has (:func:`design_features`), fitted on training designs --
other key sets of the same files, EU-SILC, the synthetic census -- and checked on
designs it never saw.

Input: per-replicate CSVs of ``benchmarks/overdispersion_oracle.py --csv`` (run with
``--ratios ""`` for training designs: no cross-validation needed). Per design the
oracle kappa is where the replicates' summed posterior tau1 meets their summed true
tau1 on :data:`KAPPA_GRID` (log-linear interpolation; :func:`design_kappa`), censored
above at ``--cap`` (kappa beyond it changes tau1 by well under 1%: "Poisson enough").

Output: the training table, the fitted coefficients with their residual sd, leave-one-
file-out predictions (each file's designs predicted from the others' only) and, for
the evaluation designs (``--evaluate``, the stored 20-replicate oracle table of the
12 designs of the goal), tau1's error per replicate under the transferred kappa prior
(:func:`transfer_weights`: log kappa normal about the prediction with the predictive
sd, on the grid) beside the per-sample cross-validated kappa stored with it.

Usage::

    python benchmarks/kappa_transfer.py --train a.csv b.csv
        [--evaluate benchmarks/results/overdispersion_oracle_20.csv.gz]
        [--features log_fraction,unique_share] [--cap 100] [--min-truth 10] [--within-file]
        [--csv evaluation.csv]

A bare file name (``--train kappa_transfer_train_15.csv.gz``) that is not in the working
directory is read from ``benchmarks/results/``, where the stored results are.

``--within-file`` fits each evaluation design's prior on the training designs of its own
file only: a kappa calibrated on other key sets of the same population (what an office
with a census at hand could do), rather than learnt across populations.
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np
import pandas as pd
from scipy import optimize, stats

from sdcbayes.models.latent_class import KAPPA_GRID, kappa_prior
from sdcbayes.validation import _draw, _population_cells

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_rules import stored  # noqa: E402
from latent_class_accuracy import populations_with_codebook  # noqa: E402

#: Features of a design that a sample carries (:func:`design_features`).
FEATURES = ("log_fraction", "unique_share", "log_sparsity", "keys", "pair_share")


def file_of(design: str) -> str:
    """The data file behind a design label (``adult6+workclass/srs/1%`` -> ``adult``)."""
    base = re.split(r"[+~/]", design)[0]
    return re.sub(r"\d+$", "", base).replace("-distinct", "").replace("-multi", "")


def design_features(rows: pd.DataFrame) -> pd.Series:
    """Mean over a design's replicates of the features a sample has.

    ``log_fraction`` log(n/N); ``unique_share`` f1/n (records unique in the sample);
    ``log_sparsity`` log(size of the key table) - log n; ``keys`` J; ``pair_share``
    2 f2 / n.
    """
    return pd.Series({
        "log_fraction": np.log(rows.n / rows.N).mean(),
        "unique_share": (rows.f1 / rows.n).mean(),
        "log_sparsity": (rows.log_space - np.log(rows.n)).mean(),
        "keys": rows["keys"].mean(),
        "pair_share": (2 * rows.f2 / rows.n).mean(),
    })


def design_kappa(curves: np.ndarray, truths: np.ndarray, grid=KAPPA_GRID,
                 cap: float = 100.0) -> tuple[float, bool]:
    """A design's oracle kappa and whether it is censored (>= ``cap``).

    ``curves`` (replicates x grid): each replicate's posterior tau1 at every kappa;
    ``truths``: the true tau1. The kappa at which the summed curve meets the summed
    truth (log-linear interpolation on the increasing curve), ``(cap, True)`` when even
    ``cap`` falls short, the grid's first point when it overshoots.
    """
    total, truth = np.asarray(curves, float).sum(axis=0), float(np.sum(truths))
    finite = np.isfinite(grid) & (grid <= cap)
    y, lg = total[finite], np.log(grid[finite])
    if truth >= y[-1]:
        return float(cap), True
    if truth <= y[0]:
        return float(grid[0]), False
    return float(np.exp(np.interp(truth, y, lg))), False


def sample_features_of(rows: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The columns of ``overdispersion_oracle.sample_features`` for rows written before
    it recorded them: each SRS replicate redrawn (``default_rng([seed, r])``, as the
    benchmark draws it) and its key cells counted."""
    out = []
    cache = {}
    for _, r in rows.iterrows():
        name, kind, pct = r.design.split("/")
        if kind != "srs":
            raise SystemExit(f"{r.design}: features can be redrawn for SRS designs only")
        if name not in cache:
            found = list(populations_with_codebook(name))
            if not found:  # populations_with_codebook printed why (the data are absent)
                raise SystemExit(f"{r.design}: this file has no sample features and they "
                                 "cannot be redrawn without the population")
            (_, pop, levels), = found
            cache[name] = (pop.N, _population_cells(pop.frame, list(pop.keys))[0],
                           float(sum(np.log(len(v)) for v in levels.values())), len(pop.keys))
        N, cell, log_space, J = cache[name]
        index, _ = _draw(np.random.default_rng([seed, int(r.replicate)]), None,
                         float(pct.rstrip("%")) / 100, N)
        f = np.bincount(cell[index])
        f = f[f > 0]
        out.append({"n": int(f.sum()), "N": N, "keys": J, "cells": f.size,
                    "f1": int(np.count_nonzero(f == 1)), "f2": int(np.count_nonzero(f == 2)),
                    "log_space": log_space})
    return pd.DataFrame(out, index=rows.index)


def read_oracle(paths) -> pd.DataFrame:
    """Per-replicate rows of ``overdispersion_oracle.py --csv`` files, with ``curve``
    (posterior tau1 over the grid, rebuilt from the stored relative errors) and the
    sample's features (redrawn where the file lacks them)."""
    parts = [pd.read_csv(p) for p in stored(paths)]
    parts = [p if "f1" in p else p.join(sample_features_of(p)) for p in parts]
    rows = pd.concat(parts, ignore_index=True)
    rows = rows[rows.truth > 0].copy()  # a zero truth carries no relative error curve
    err = np.stack([np.array(s.split(), dtype=float) for s in rows.error_curve])
    rows["curve"] = list((1 + err) * rows.truth.to_numpy()[:, None])
    return rows


def design_table(rows: pd.DataFrame, cap: float = 100.0, min_truth: float = 10.0) -> pd.DataFrame:
    """Per design: file, features, mean true tau1, oracle log kappa and censoring."""
    out = []
    for design, g in rows.groupby("design", sort=False):
        if g.truth.mean() < min_truth:
            continue
        kappa, censored = design_kappa(np.stack(g.curve.to_numpy()), g.truth.to_numpy(), cap=cap)
        out.append({"design": design, "file": file_of(design), "replicates": len(g),
                    "truth": g.truth.mean(), **design_features(g),
                    "log_kappa": np.log(kappa), "censored": censored})
    return pd.DataFrame(out).set_index("design")


def fit_tobit(X: np.ndarray, y: np.ndarray, censored: np.ndarray) -> dict:
    r"""Normal linear regression of ``y`` on ``X`` (intercept added) with right-censoring.

    Uncensored rows contribute :math:`\log\phi((y - x\beta)/\sigma) - \log\sigma`,
    censored ones :math:`\log(1 - \Phi((y - x\beta)/\sigma))` (y is then the lower
    bound). Returns ``beta``, ``sigma`` and ``cov`` (the inverse observed information
    of beta, numerical), for :func:`predict`.
    """
    X = np.column_stack([np.ones(len(y)), np.asarray(X, float)])
    y, c = np.asarray(y, float), np.asarray(censored, bool)

    def nll(theta):
        beta, log_s = theta[:-1], theta[-1]
        z = (y - X @ beta) / np.exp(log_s)
        return -(np.sum(stats.norm.logpdf(z[~c]) - log_s) + np.sum(stats.norm.logsf(z[c])))

    start = np.append(np.linalg.lstsq(X, y, rcond=None)[0], np.log(np.std(y) + 1e-3))
    res = optimize.minimize(nll, start, method="BFGS")
    hess = _hessian(nll, res.x)
    try:
        cov = np.linalg.inv(hess)[:-1, :-1]
    except np.linalg.LinAlgError:
        cov = np.full((X.shape[1], X.shape[1]), np.nan)
    return {"beta": res.x[:-1], "sigma": float(np.exp(res.x[-1])), "cov": cov}


def _hessian(f, x, h=1e-4):
    n = x.size
    H = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            H[i, j] = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j)
                       + f(x - e_i - e_j)) / (4 * h * h)
    return H


def predict(fit: dict, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Predicted log kappa and its predictive sd (residual and coefficient doubt)."""
    X = np.column_stack([np.ones(len(X)), np.asarray(X, float)])
    mean = X @ fit["beta"]
    var = fit["sigma"] ** 2 + np.einsum("ij,jk,ik->i", X, fit["cov"], X)
    return mean, np.sqrt(np.maximum(var, fit["sigma"] ** 2))  # a numerical cov may dip below


def transfer_weights(mean: float, sd: float, grid=KAPPA_GRID) -> np.ndarray:
    """Normal(mean, sd) of log kappa as weights on ``grid`` (last point inf): the model's
    ``kappa_prior(grid, ("log-normal", (mean, sd)))``, what ``--kappa-prior log-normal:m:s``
    of ``latent_class_accuracy.py`` gives the cross-validation."""
    return kappa_prior(np.asarray(grid, dtype=float), ("log-normal", (float(mean), float(sd))))


def evaluate(rows: pd.DataFrame, fit: dict, features, grid=KAPPA_GRID) -> pd.DataFrame:
    """tau1's relative error per replicate under the transferred kappa prior."""
    out = []
    for _, r in rows.iterrows():
        x = design_features(pd.DataFrame([r]))[list(features)].to_numpy(float)
        mean, sd = predict(fit, x[None, :])
        w = transfer_weights(mean[0], sd[0], grid)
        out.append({"design": r.design, "replicate": r.replicate,
                    "kappa_mean": float(np.exp(mean[0])), "kappa_sd": float(sd[0]),
                    "error_transfer": float(w @ r.curve) / r.truth - 1,
                    "error_cv": r.get("error_cv", np.nan)})
    return pd.DataFrame(out)


def _evaluation(train: pd.DataFrame, ev_rows: pd.DataFrame, features, cap: float,
                within_file: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per evaluation design the prior (log kappa mean and sd at the design's mean
    features) and tau1's errors under it, from one fit on all training designs or,
    ``within_file``, from the training designs of the evaluation design's file."""
    ev = design_table(ev_rows, cap, 0.0)
    fits = {}
    for f in ev.file.unique():
        t = train[train.file == f] if within_file else train
        if t.empty:
            raise SystemExit(f"--within-file: no training design of file {f!r}")
        fits[f] = fit_tobit(t[features].to_numpy(), t.log_kappa.to_numpy(), t.censored.to_numpy())
    ev["prior_mean"], ev["prior_sd"] = np.nan, np.nan
    errors = []
    for f, fit in fits.items():
        held = ev.file == f
        mean, sd = predict(fit, ev.loc[held, features].to_numpy())
        ev.loc[held, "prior_mean"], ev.loc[held, "prior_sd"] = mean, sd
        errors.append(evaluate(ev_rows[ev_rows.design.isin(ev.index[held])], fit, features))
    return ev, pd.concat(errors, ignore_index=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", nargs="+", required=True)
    ap.add_argument("--evaluate", nargs="*", default=[])
    ap.add_argument("--features", default="log_fraction,unique_share")
    ap.add_argument("--cap", type=float, default=100.0)
    ap.add_argument("--min-truth", type=float, default=10.0)
    ap.add_argument("--csv", default=None,
                    help="write the evaluation designs' table (features, oracle log kappa, "
                         "prior mean and sd, tau1 errors under the prior) here")
    ap.add_argument("--within-file", action="store_true",
                    help="evaluate each design with a fit on the training designs of its own "
                         "file only (a kappa calibrated on other key sets of the same population)")
    args = ap.parse_args(argv)
    features = args.features.split(",")
    bad = [f for f in features if f not in FEATURES]
    if bad:
        raise SystemExit(f"--features: unknown {bad}; choose from {list(FEATURES)}")
    train = design_table(read_oracle(args.train), args.cap, args.min_truth)
    fit = fit_tobit(train[features].to_numpy(), train.log_kappa.to_numpy(),
                    train.censored.to_numpy())
    train["fitted"] = predict(fit, train[features].to_numpy())[0]
    # leave one file out: each file's designs predicted from the others' fit only
    for f in train.file.unique():
        held = train.file == f
        other = fit_tobit(train.loc[~held, features].to_numpy(), train.log_kappa[~held].to_numpy(),
                          train.censored[~held].to_numpy())
        train.loc[held, "lofo"] = predict(other, train.loc[held, features].to_numpy())[0]
    unc = ~train.censored
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(train.round(3).to_string())
        print(f"\nlog kappa = {fit['beta'][0]:.3f} "
              + " ".join(f"{b:+.3f} {f}" for b, f in zip(fit["beta"][1:], features, strict=True))
              + f"; residual sd {fit['sigma']:.3f} ({len(train)} designs, "
              f"{int(train.censored.sum())} censored at {args.cap:g})")
        rmse = {c: np.sqrt(np.mean((train[c] - train.log_kappa)[unc] ** 2))
                for c in ("fitted", "lofo")}
        print(f"uncensored designs: rmse fitted {rmse['fitted']:.3f}, "
              f"leave-one-file-out {rmse['lofo']:.3f}")
        if args.evaluate:
            ev, err = _evaluation(train, read_oracle(args.evaluate), features, args.cap,
                                  args.within_file)
            print("\nevaluation designs (never trained on): oracle log kappa and the prior "
                  + ("of a fit on the designs of the same file" if args.within_file
                     else "of the fit above") + " (log-normal:<prior_mean>:<prior_sd>)")
            print(ev[["file", "truth", *features, "log_kappa", "censored", "prior_mean",
                      "prior_sd"]].round(3).to_string())
            summ = err.groupby("design", sort=False).agg(
                bias_transfer=("error_transfer", "mean"), sd_transfer=("error_transfer", "std"),
                rmse_transfer=("error_transfer", lambda e: np.sqrt(np.mean(e ** 2))),
                bias_cv=("error_cv", "mean"), sd_cv=("error_cv", "std"),
                rmse_cv=("error_cv", lambda e: np.sqrt(np.mean(e ** 2))))
            print("\ntau1 relative error (Poisson-cell posterior averaged over the kappa prior): "
                  "transferred vs the per-sample cross-validation")
            print(summ.round(3).to_string())
            if args.csv:
                ev.join(summ).to_csv(args.csv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
