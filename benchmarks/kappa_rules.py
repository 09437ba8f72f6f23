"""Benchmark: how the cross-validated kappa posterior should be formed (issue 7).

The default model's tau intervals miss 90% on a few designs (benchmarks/README.md):
too narrow on Adult 9 keys at 1%, too wide at 5%. Both depend on how
:func:`sdcbayes.models.latent_class.overdispersion_cv` turns the held-out count into
a posterior for kappa: its prior, how sharp its likelihood is, how the scale ratios
are combined. Re-running the whole model for each candidate rule costs an hour per
rule; but the model is "cut" (kappa does not feed back into the classes), so one
Gibbs run per sample serves every rule. This script runs, per sample of a design,
the default model's Gibbs sampler and cross-validation once, exactly as
``benchmarks/latent_class_accuracy.py`` does (same seeds, same samples), and stores

- each partition's log-likelihood of kappa over :data:`KAPPA_GRID` (prior not
  included) and its scale ratio;
- for every kappa of the grid, the posterior mean of tau1 and tau2 given kappa (the
  conditional expectations averaged over the draws of the mixture) and one
  posterior-predictive draw of (tau1, tau2) per draw of the mixture
  (:func:`simulate_tau`);
- the truth and the model's own estimate and interval (the default rule, to check
  the reconstruction).

``--evaluate`` then scores kappa rules offline: a rule maps the partitions'
log-likelihoods to grid weights w (prior, power t on the log-likelihood, mixture or
average of the ratios); tau's posterior is the w-mixture of the per-kappa draws (the
model draws kappa per kept draw from w: the same distribution), its mean is
sum_k w_k E[tau | kappa_k]. Per design and rule: relative bias, relative RMSE, 90%
coverage and mean width of tau1 and tau2 (bias, RMSE and width over the mean truth, as
:func:`sdcbayes.validation.summarise`), the sd of the errors over the sd each
interval implies (width / 3.29; 1 when calibrated), whether both coverages are in
85-95% (``calibrated``) and whether both are consistent with 90% by the exact binomial
test (p >= 0.05, ``consistent``).

Usage::

    python benchmarks/kappa_rules.py --populations adult6,adult9 [--fractions 0.01,0.05,0.1]
        [--kind srs|stratified] [--replicates 50] [--seed 0] --out adult.npz
    python benchmarks/kappa_rules.py --evaluate adult.npz scotland.npz
        [--rules default,half-cauchy:2,...] [--csv rules.csv] [--per-sample samples.csv]
        [--kappa-csv kappa.csv]
    python benchmarks/kappa_rules.py --evaluate samples.csv.gz   # re-score a stored table
    python benchmarks/kappa_rules.py --evaluate kappa_rules_50.csv.gz   # a bare name not in
        # the working directory is read from benchmarks/results/ (:func:`stored`)
    python benchmarks/kappa_rules.py --populations adult9 --reread adult.npz
        [--cv-predictive gibbs] --per-sample gibbs.csv   # kappa read by other parts
    python benchmarks/kappa_rules.py --populations adult9 --fractions 0.01 --reread adult.npz
        --cv-predictive em --cv-splits 4 --per-sample s.csv --split-csv splits.csv

``--reread`` runs the cross-validation again on the recorded samples with the parts fitted
by the Gibbs sampler (``--cv-predictive gibbs``, :func:`overdispersion_cv`'s ``predictive``:
the held-out prediction averaged over the part's posterior, as the risk averages over the
whole sample's) instead of one EM point, and scores the default rule on its
log-likelihoods with the recorded per-kappa draws; the rows (rule
``default/gibbs-parts``) join a per-sample table (``--evaluate a.csv b.csv``).
``--cv-splits K`` draws K random partitions per ratio (rule ``.../splits=K``, all mixed),
and ``--split-csv`` writes each split's own read of every sample and prints how much a
sample's read moves from partition to partition against how much it moves from sample to
sample (:func:`split_spread`): what averaging partitions could remove.

A rule is ``prior[/t=T][/average]``: ``prior`` a :func:`parse_kappa_prior` text
(``half-cauchy:2``, ``log-uniform``, ``log-normal:0:1``) or ``default``; ``t=T``
multiplies the log-likelihood by T (T < 1 flattens it); ``average`` averages the
ratios' log-likelihoods instead of mixing their posteriors (``combine_ratios``).
Two benchmark-only rules give the ceiling of any rule: ``design-oracle1`` and
``design-oracle2`` put kappa, for every sample of a design, at the design's kappa, the
mean over its samples of the oracle of tau1 (of tau2) (:func:`kappa_reads`; linear in
log kappa between the two grid points around it), with no width: what the model would
score were the design's kappa known.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from sdcbayes.models.latent_class import (
    KAPPA_GRID,
    KAPPA_PRIOR,
    PHI_PRIOR_DEFAULT,
    LatentClassModel,
    excess_means,
    expected_inverse_frequency,
    kappa_prior,
    overdispersion_cv,
    parse_kappa_prior,
    posterior_tau_summary,
    prob_population_unique,
    simulate_tau,
)
from sdcbayes.validation import Design, _draw, _population_cells, truth_of_sample

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from latent_class_accuracy import confirmed_rules, populations_with_codebook  # noqa: E402

#: The stored results of benchmarks/README.md (``--evaluate kappa_rules_50.csv.gz``).
RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: Sampler settings of ``benchmarks/latent_class_accuracy.py`` (its defaults).
DRAWS, TUNE, CHAINS, EM_RESTARTS = 150, 100, 2, 3


def default_cv(model: LatentClassModel, N: float, seed: int, **options) -> dict:
    """The default's cross-validation of kappa as ``latent_class_accuracy.py`` runs it
    (seeded by ``seed``, ratios capped at N/n); ``options`` go to
    :func:`overdispersion_cv` (``parts``, ``predictive``)."""
    return overdispersion_cv(model, random_seed=seed, em_restarts=max(1, EM_RESTARTS - 1),
                             max_ratio=float(N) / model.n, **options)


def run_default(model: LatentClassModel, N: float, seed: int, cv_parts: str = "random",
                tune: int = TUNE, ppc: int = 0):
    r"""The default model on one sample, as ``latent_class_accuracy.py`` runs it.

    The cross-validation (``cv_parts`` is :func:`overdispersion_cv`'s ``parts``) and the
    Gibbs run, both seeded by ``seed``, with ``tune`` sweeps of burn-in (the harness's
    ``--tune``) and ``ppc`` predictive replicates per chain
    (:meth:`LatentClassModel.sample`; the chains' draws do not depend on it). Returns
    ``(od, idata, lam, smean)``: the
    cross-validation's result, the posterior, and per draw the excess rate and the sample
    mean :math:`n\pi_k` of the sample-unique key cells (in the order of the key cells).
    """
    od = default_cv(model, N, seed, parts=cv_parts)
    idata = model.sample(draws=DRAWS, tune=tune, chains=CHAINS, N=float(N), random_seed=seed,
                         store="all", em_restarts=EM_RESTARTS, overdispersion=od,
                         **({"ppc": ppc} if ppc else {}))
    C = model.key_codes.shape[0]
    su = model.key_counts == 1
    lam = excess_means(idata).reshape(-1, C)[:, su]
    smean = model.n * idata.posterior["pi"].values.reshape(-1, C)[:, su]
    return od, idata, lam, smean


def log_kappa_crossing(curve, target: float, log_kappa) -> float:
    """Log kappa at which a prediction curve over the kappa grid meets ``target``.

    The curve's running maximum is read (it rises with kappa but for small dips), linear
    in log kappa between grid points, the grid's ends where ``target`` lies outside.
    """
    curve = np.maximum.accumulate(np.asarray(curve, dtype=float))
    # np.interp needs increasing abscissae: break ties of a flat stretch by index
    return float(np.interp(target, curve + 1e-9 * np.arange(curve.size), log_kappa))


def kappa_crossing(curve, target: float, log_kappa) -> tuple[float, int]:
    """:func:`log_kappa_crossing` and whether it is censored: -1 where ``target`` lies at or
    below the curve's first value, +1 at or above its running maximum's last, else 0."""
    run = np.maximum.accumulate(np.asarray(curve, dtype=float))
    cens = -1 if target <= run[0] else (1 if target >= run[-1] else 0)
    return log_kappa_crossing(curve, target, log_kappa), cens


def kappa_quantiles(grid, weights, probs=(0.05, 0.5, 0.95)) -> tuple[float, ...]:
    """Quantiles of log kappa under grid weights (the lowest grid point whose cumulative
    weight reaches the level; inf where the Poisson point holds the rest)."""
    grid = np.asarray(grid, dtype=float)
    cum = np.cumsum(weights)
    return tuple(float(np.log(grid[min(np.searchsorted(cum, q * cum[-1]), grid.size - 1)]))
                 for q in probs)


def record_sample(model: LatentClassModel, N: float, seed: int, sim_seed,
                  cv_parts: str = "random") -> dict:
    """One sample's cross-validation and per-kappa tau draws (module docstring);
    ``cv_parts`` is :func:`overdispersion_cv`'s ``parts``."""
    od, idata, lam, smean = run_default(model, N, seed, cv_parts)
    summ = posterior_tau_summary(idata)
    rng = np.random.default_rng(sim_seed)
    g = KAPPA_GRID.size
    m1, m2 = np.empty(g), np.empty(g)
    d1 = np.empty((g, lam.shape[0]), dtype=np.float32)
    d2 = np.empty_like(d1)
    for i, k in enumerate(KAPPA_GRID):
        kap = None if np.isinf(k) else k
        m1[i] = prob_population_unique(lam, kap, smean).sum(axis=1).mean()
        m2[i] = expected_inverse_frequency(lam, kap, smean).sum(axis=1).mean()
        d1[i], d2[i] = simulate_tau(lam, rng, kap, smean)
    return {"loglik": np.asarray(od["partition_loglik"]),
            "ratios": np.asarray(od["partition_ratios"]),
            "weights": np.asarray(od["weights"]), "m1": m1, "m2": m2, "d1": d1, "d2": d2,
            "model": np.array([summ["tau1"], *summ["tau1_interval"],
                               summ["tau2"], *summ["tau2_interval"]])}


def samples(populations: str, fractions, kind: str, replicates: int, seed: int):
    """Yield ``(design label, replicate, model, N, truth)`` for every sample of every
    design: the samples, seeds and models of ``latent_class_accuracy.py``'s default."""
    for pop_name, pop, levels in populations_with_codebook(populations):
        keys, frame = list(pop.keys), pop.frame
        N = len(frame)
        pop_cell, pop_counts = _population_cells(frame, keys)
        stratum = None
        if kind == "stratified":
            stratum = pd.factorize(frame[pop.strata], sort=True)[0].astype(np.int64)
        for frac in fractions:
            design = Design(pop, frac, kind, replicates=replicates, seed=seed)
            t0 = time.perf_counter()
            for r in range(replicates):
                rng = np.random.default_rng([seed, r])  # the samples of run_design
                index, w = _draw(rng, stratum, frac, N)
                truth = truth_of_sample(pop_cell, pop_counts, index)
                sample = frame.iloc[index][keys].reset_index(drop=True).astype(str)
                model = LatentClassModel.from_frame(
                    sample, keys, levels=levels, n_classes=30,
                    structural_zeros=confirmed_rules(pop_name, keys),
                    priors={"phi": dict(PHI_PRIOR_DEFAULT)},
                    weights=pd.Series(w))  # as latent_class_method: equal weights = none
                yield design.label, r, model, N, truth
            print(f"{design.label}: {time.perf_counter() - t0:.0f}s", file=sys.stderr,
                  flush=True)


def sample_parser(description: str, *, populations: str, fractions: str = "0.01,0.05,0.1",
                  replicates: int) -> argparse.ArgumentParser:
    """The arguments that pick :func:`samples` (``--populations``, ``--fractions``,
    ``--kind``, ``--replicates``, ``--seed``) with this script's defaults."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--populations", default=populations)
    ap.add_argument("--fractions", default=fractions)
    ap.add_argument("--kind", default="srs", choices=["srs", "stratified"])
    ap.add_argument("--replicates", type=int, default=replicates)
    ap.add_argument("--seed", type=int, default=0)
    return ap


def args_samples(args):
    """:func:`samples` for the arguments of :func:`sample_parser`."""
    return samples(args.populations, [float(x) for x in args.fractions.split(",")],
                   args.kind, args.replicates, args.seed)


def per_sample_table(args, rows_of) -> pd.DataFrame | None:
    """Run ``rows_of(label, replicate, model, N, truth, seed)`` (a list of row dicts) on
    every sample of :func:`args_samples`; the rows as a table, written to ``args.csv``
    when given; None when no sample was drawn."""
    rows = []
    for label, r, model, N, truth in args_samples(args):
        rows += rows_of(label, r, model, N, truth, args.seed)
    if not rows:
        return None
    per = pd.DataFrame(rows)
    if getattr(args, "csv", None):
        per.to_csv(args.csv, index=False, float_format="%.6g")
    return per


def collect(populations: str, fractions, kind: str, replicates: int, seed: int,
            cv_parts: str = "random") -> dict:
    """Run :func:`record_sample` on every replicate of every design; arrays by key."""
    out: dict[str, list] = {}
    for label, r, model, N, truth in samples(populations, fractions, kind, replicates, seed):
        rec = record_sample(model, N, seed, [seed, r, 7], cv_parts)
        rec.update(design=label, replicate=r, truth1=truth.tau1, truth2=truth.tau2)
        for k, v in rec.items():
            out.setdefault(k, []).append(v)
    return out


def reread_sample(model: LatentClassModel, N: float, seed: int, data: dict, i: int,
                  predictive: str, rule: str = "default", n_splits: int = 1,
                  split_reads: list | None = None) -> dict:
    """Sample ``i`` of the records ``data`` with kappa read again by a cross-validation
    whose parts are fitted by ``predictive`` (:func:`overdispersion_cv`'s; the partitions
    and seeds of :func:`run_default`), the rule's weights applied to the recorded
    per-kappa means and draws (the model is cut: the Gibbs run on the whole sample does
    not change). One per-sample row of :func:`score_samples`'s table.

    With ``n_splits`` > 1 the cross-validation draws that many random partitions per ratio
    and the rule mixes all of them (rule label ``.../splits=K``); ``split_reads``, if
    given, receives one dict per split: the posterior median log kappa of that split's
    partitions alone (one per ratio), so that the read's scatter between the partitions
    of one sample can be set against its scatter between samples (:func:`split_spread`).
    """
    od = default_cv(model, N, seed, predictive=predictive, n_splits=n_splits)
    loglik = np.asarray(od["partition_loglik"])
    ratios = np.asarray(od["partition_ratios"])
    w = rule_weights(loglik, ratios, rule)
    label = f"{rule}/{predictive}-parts" + (f"/splits={n_splits}" if n_splits > 1 else "")
    if split_reads is not None:
        for s in range(n_splits):
            # the s-th partition of every ratio (overdispersion_cv keeps each ratio's
            # partitions together, in the order drawn)
            take = np.concatenate([np.flatnonzero(ratios == r)[s:s + 1]
                                   for r in dict.fromkeys(ratios.tolist())])
            (med,) = kappa_quantiles(KAPPA_GRID, rule_weights(loglik[take], ratios[take], rule),
                                     (0.5,))
            split_reads.append({"design": str(data["design"][i]),
                                "replicate": int(data["replicate"][i]), "split": s,
                                "cv_median": med})
    return sample_row(data, i, label, w)


def split_spread(reads: pd.DataFrame) -> pd.DataFrame:
    """Per design, from :func:`reread_sample`'s ``split_reads`` (finite medians): the
    scatter of one split's read between the partitions of a sample (root mean of the
    within-sample variances) and between samples (sd over the samples of one split's
    read, averaged over the splits; and the sd of the samples' mean read over their
    splits, what any number of partitions would leave)."""
    rows = []
    for design, d in reads.groupby("design", sort=False):
        wide = d.pivot(index="replicate", columns="split", values="cv_median")
        wide = wide[np.isfinite(wide).all(axis=1)]
        rows.append({"design": design, "samples": len(wide), "splits": wide.shape[1],
                     "read_mean": float(wide.to_numpy().mean()),
                     "within_sd": float(np.sqrt(wide.var(axis=1).mean())),
                     "between_sd": float(wide.std(axis=0).mean()),
                     "mean_read_sd": float(wide.mean(axis=1).std())})
    return pd.DataFrame(rows)


def reread(data: dict, populations: str, fractions, kind: str, replicates: int, seed: int,
           predictive: str, n_splits: int = 1,
           split_reads: list | None = None) -> pd.DataFrame:
    """:func:`reread_sample` on every sample of the records ``data``, which must hold the
    samples these arguments draw (each sample's truth is checked before its
    cross-validation; nothing is written until all are done)."""
    where = {(str(d), int(r)): i for i, (d, r) in
             enumerate(zip(data["design"], data["replicate"], strict=True))}
    rows = []
    for label, r, model, N, truth in samples(populations, fractions, kind, replicates, seed):
        i = where.get((label, r))
        if i is None or not np.isclose(float(data["truth1"][i]), truth.tau1):
            raise ValueError(f"the records hold no sample {label} #{r} with this truth: "
                             "give --reread the records these --populations, --fractions, "
                             "--kind, --replicates and --seed made")
        rows.append(reread_sample(model, N, seed, data, i, predictive,
                                  n_splits=n_splits, split_reads=split_reads))
    return pd.DataFrame(rows)


def save(out: dict, path: str) -> None:
    """Stack the per-sample records (partition counts are equal within a run)."""
    np.savez_compressed(path, **{k: np.asarray(v) for k, v in out.items()})


def rule_weights(loglik: np.ndarray, ratios: np.ndarray, rule: str,
                 grid=KAPPA_GRID) -> np.ndarray:
    """Grid weights of kappa under a rule (module docstring) from one sample's
    partition log-likelihoods, shape (partitions, grid)."""
    prior_text, *mods = rule.split("/")
    prior = KAPPA_PRIOR if prior_text == "default" else parse_kappa_prior(prior_text)
    power, average = 1.0, False
    for m in mods:
        if m.startswith("t="):
            power = float(m[2:])
        elif m == "average":
            average = True
        else:
            raise ValueError(f"unknown rule modifier {m!r} in {rule!r}")
    mass = kappa_prior(grid, prior)
    lls = power * np.asarray(loglik, dtype=float)
    if average:
        lls = [np.mean([lls[i] for i in np.flatnonzero(ratios == r)], axis=0)
               for r in dict.fromkeys(ratios.tolist())]
        # the ratios' composite: one posterior from their mean log-likelihood
        lls = [np.mean(lls, axis=0)]
    w = np.zeros(grid.size)
    for ll in lls:
        p = np.exp(ll - ll.max()) * mass
        w += p / p.sum() / len(lls)
    return w


def kappa_reads(data: dict, rule: str = "default", grid=KAPPA_GRID) -> pd.DataFrame:
    """Per sample: where the rule's kappa posterior sits and where the truth needs it.

    ``cv_median`` is the posterior median of log kappa (inf where the Poisson point
    holds half the mass), ``cv_q05`` and ``cv_q95`` its 5% and 95% quantiles (the 90%
    range the oracle should fall in); ``oracle`` the log kappa at which the per-kappa posterior mean
    of tau1 meets the sample's true tau1 (linear in log kappa between grid points;
    tau1's conditional mean rises with kappa), ``censored`` -1 or +1 where the truth
    lies below or above every finite kappa's mean (oracle then the grid's end); with the
    per-kappa draws (``d1``), ``noise``: the sd of tau1's posterior-predictive draws at
    the oracle over the slope of its conditional mean in log kappa there, i.e. how far
    the oracle itself scatters from sample to sample when the model is right, since the
    truth scatters around its conditional mean by about that sd (nan where censored).
    """
    finite = np.isfinite(grid)
    logk = np.log(grid[finite])
    rows = []
    for i in range(len(data["design"])):
        w = rule_weights(data["loglik"][i], data["ratios"][i], rule, grid)
        q05, med, q95 = kappa_quantiles(grid, w)
        m1 = np.asarray(data["m1"][i], dtype=float)[finite]
        oracle, cens = kappa_crossing(m1, float(data["truth1"][i]), logk)
        row = {"design": str(data["design"][i]), "replicate": int(data["replicate"][i]),
               "rule": rule, "cv_median": med, "cv_q05": q05, "cv_q95": q95,
               "oracle": oracle, "censored": cens}
        if "d1" in data:
            row["noise"] = oracle_noise(m1, np.asarray(data["d1"][i])[finite], oracle, logk,
                                        cens)
        rows.append(row)
    return pd.DataFrame(rows)


def oracle_noise(m1, d1, oracle: float, log_kappa, censored: int = 0) -> float:
    """The sd of the draws ``d1`` (finite kappa x draws) at the grid interval holding
    ``oracle`` (its upper point) over the slope of ``m1`` across that interval; nan where
    the oracle is censored or the slope is not positive."""
    if censored:
        return float("nan")
    j = int(np.clip(np.searchsorted(log_kappa, oracle), 1, len(log_kappa) - 1))
    slope = (m1[j] - m1[j - 1]) / (log_kappa[j] - log_kappa[j - 1])
    return float(np.std(d1[j]) / slope) if slope > 0 else float("nan")


def weighted_interval(draws: np.ndarray, w: np.ndarray, prob: float = 0.9):
    """Central interval of the w-mixture of the rows of ``draws`` (kappa x draws)."""
    x = draws.ravel()
    ww = np.repeat(w / draws.shape[1], draws.shape[1])
    order = np.argsort(x, kind="stable")
    cdf = np.cumsum(ww[order])
    lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
    return (float(x[order][np.searchsorted(cdf, lo * cdf[-1])]),
            float(x[order][min(np.searchsorted(cdf, hi * cdf[-1]), x.size - 1)]))


def sample_row(data: dict, i: int, rule: str, w=None) -> dict:
    """Sample ``i``'s row of :func:`score_samples`'s table: truth, estimate and 90%
    interval of tau1 and tau2 under grid weights ``w`` of kappa (the w-mixture of the
    recorded per-kappa means and draws), or the sampler's own (``w=None``)."""
    row = {"rule": rule, "design": str(data["design"][i]), "replicate": int(data["replicate"][i])}
    m = data["model"][i] if w is None else None
    for t in ("1", "2"):
        if w is None:
            est, lo, hi = m[:3] if t == "1" else m[3:]
        else:
            est, (lo, hi) = w @ data["m" + t][i], weighted_interval(data["d" + t][i], w)
        row.update({f"truth{t}": float(data["truth" + t][i]), f"est{t}": float(est),
                    f"lo{t}": float(lo), f"hi{t}": float(hi)})
    return row


def score_samples(data: dict, rules, model: bool = False) -> pd.DataFrame:
    """Per rule and sample: truth, estimate and 90% interval of tau1 and tau2.

    With ``model=True`` the sampler's own estimates (the default rule as the model ran
    it, stored by :func:`record_sample`) come first as the rule ``"model"``.
    """
    rows = [sample_row(data, i, "model") for i in range(len(data["design"]))] if model else []
    for rule in rules:
        if rule in ("design-oracle1", "design-oracle2"):
            weights = design_oracle_weights(data, rule[-1])
        else:
            weights = [rule_weights(data["loglik"][i], data["ratios"][i], rule)
                       for i in range(len(data["design"]))]
        rows += [sample_row(data, i, rule, weights[i]) for i in range(len(data["design"]))]
    return pd.DataFrame(rows)


def design_oracle_weights(data: dict, tau: str = "1", grid=KAPPA_GRID) -> list[np.ndarray]:
    """Per sample, grid weights holding kappa at its design's kappa: the mean of the
    design's uncensored oracles of tau1 (``tau="1"``, the conditional means ``m1``) or
    tau2 (``"2"``), split linearly in log kappa between the finite grid points around it
    (the ``design-oracle`` rules of the module docstring)."""
    finite = np.flatnonzero(np.isfinite(grid))
    logk = np.log(grid[finite])
    designs = np.array([str(d) for d in data["design"]])
    oracle, cens = np.empty(designs.size), np.empty(designs.size, dtype=int)
    for i in range(designs.size):
        curve = np.asarray(data["m" + tau][i], dtype=float)[finite]
        oracle[i], cens[i] = kappa_crossing(curve, float(data["truth" + tau][i]), logk)
    weights = []
    for design in designs:
        use = (designs == design) & (cens == 0)
        if not use.any():
            raise ValueError(f"every oracle of {design} is censored: no design kappa")
        x = float(oracle[use].mean())
        j = int(np.clip(np.searchsorted(logk, x), 1, logk.size - 1))
        frac = (x - logk[j - 1]) / (logk[j] - logk[j - 1])
        w = np.zeros(grid.size)
        w[finite[j - 1]], w[finite[j]] = 1.0 - frac, frac
        weights.append(w)
    return weights


def evaluate(data: dict, rules, per: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per design and rule: bias, RMSE, coverage of tau1 and tau2 (module docstring);
    from :func:`score_samples`'s table ``per`` if given."""
    per = score_samples(data, rules) if per is None else per.copy()
    for t in ("1", "2"):
        truth, est = per[f"truth{t}"], per[f"est{t}"]
        lo, hi = per[f"lo{t}"], per[f"hi{t}"]
        per[f"err{t}"] = est - truth
        per[f"sq{t}"] = (est - truth) ** 2
        per[f"cover{t}"] = (lo <= truth) & (truth <= hi)
        per[f"width{t}"] = hi - lo
        # the error over the sd the interval implies (1 if calibrated)
        per[f"z{t}"] = (est - truth) / np.maximum((hi - lo) / 3.29, 1e-9)
    summ = per.groupby(["rule", "design"], sort=False).agg(
        err1=("err1", "mean"), sq1=("sq1", "mean"), t1=("truth1", "mean"),
        cover1=("cover1", "mean"), width1=("width1", "mean"),
        err2=("err2", "mean"), sq2=("sq2", "mean"), t2=("truth2", "mean"),
        cover2=("cover2", "mean"), width2=("width2", "mean"), replicates=("err1", "size"),
        z1_sd=("z1", "std"), z2_sd=("z2", "std"), hits1=("cover1", "sum"),
        hits2=("cover2", "sum"))
    # ratios of means, as sdcbayes.validation.summarise (a truth of 0 or 1 at 1% stays usable)
    for t in ("1", "2"):
        summ[f"bias{t}"] = summ[f"err{t}"] / summ[f"t{t}"]
        summ[f"rmse{t}"] = np.sqrt(summ[f"sq{t}"]) / summ[f"t{t}"]
        summ[f"width{t}"] = summ[f"width{t}"] / summ[f"t{t}"]
    summ["calibrated"] = (summ[["cover1", "cover2"]].ge(0.85).all(axis=1)
                          & summ[["cover1", "cover2"]].le(0.95).all(axis=1))
    # coverage consistent with 90% by the exact binomial test (the README's criterion)
    for t in ("1", "2"):
        summ[f"cover{t}_p"] = [stats.binomtest(int(k), int(m), 0.9).pvalue
                               for k, m in zip(summ[f"hits{t}"], summ.replicates, strict=True)]
    summ["consistent"] = (summ.cover1_p >= 0.05) & (summ.cover2_p >= 0.05)
    summ = summ[["bias1", "rmse1", "cover1", "width1", "bias2", "rmse2", "cover2", "width2",
                 "replicates", "z1_sd", "z2_sd", "calibrated", "cover1_p", "cover2_p",
                 "consistent"]]
    return summ.reset_index()


def stored(paths) -> list[str]:
    """``paths`` with each bare file name that is not in the working directory but is in
    ``benchmarks/results/`` (:data:`RESULTS_DIR`) replaced by the stored file.

    benchmarks/README.md names stored results by file name; this lets those commands run
    from the repository root (or anywhere). A name with a folder, or one that exists
    where it is given, is left alone, so a user's own file always wins.
    """
    out = []
    for p in paths:
        path = Path(p)
        if (not path.exists() and path.name == str(p)
                and (RESULTS_DIR / path.name).is_file()):
            p = str(RESULTS_DIR / path.name)
        out.append(p)
    return out


def load(paths) -> dict:
    """Concatenate stored runs (every sample has one partition per ratio); a bare name
    not found here is looked up in ``benchmarks/results/`` (:func:`stored`)."""
    parts = [dict(np.load(p, allow_pickle=False)) for p in stored(paths)]
    out = {}
    for k in parts[0]:
        out[k] = np.concatenate([p[k] for p in parts])
    return out


def main(argv=None) -> int:
    ap = sample_parser(__doc__.splitlines()[0],
                       populations="adult6,adult9,scotland7,scotland13", replicates=50)
    ap.add_argument("--cv-parts", default="random", choices=["random", "weights"],
                    help="how the cross-validation draws its parts (overdispersion_cv's "
                         "parts; 'weights' matters on stratified samples only)")
    ap.add_argument("--out", default=None, help="store the per-sample records here (.npz)")
    ap.add_argument("--evaluate", nargs="*", default=None,
                    help="score kappa rules on these stored records instead of running")
    ap.add_argument("--rules", default=None,
                    help="comma-separated rules (module docstring); default: 'default' "
                         "on .npz records, every rule of a stored per-sample table")
    ap.add_argument("--csv", default=None, help="write the evaluation table here")
    ap.add_argument("--kappa-csv", default=None,
                    help="write each sample's posterior median and 90%% range of log kappa "
                         "(the first rule's) and the log kappa its true tau1 needs (.npz "
                         "records only)")
    ap.add_argument("--reread", nargs="*", default=None,
                    help="read kappa again on the samples of these records (--populations, "
                         "--fractions, --kind, --replicates, --seed as recorded), the parts "
                         "fitted by --cv-predictive; writes --per-sample")
    ap.add_argument("--cv-predictive", default="gibbs", choices=["em", "gibbs"],
                    help="how --reread's cross-validation fits its parts "
                         "(overdispersion_cv's predictive)")
    ap.add_argument("--cv-splits", type=int, default=1,
                    help="random partitions per ratio in --reread's cross-validation (the "
                         "rule mixes them all)")
    ap.add_argument("--split-csv", default=None,
                    help="with --reread: write each split's own median log kappa here and "
                         "print the read's scatter within and between samples")
    ap.add_argument("--per-sample", default=None,
                    help="write each sample's truth, estimate and interval per rule here, "
                         "the sampler's own as the rule 'model'")
    args = ap.parse_args(argv)
    if args.reread is not None:
        if not args.per_sample:
            ap.error("--reread writes its rows to --per-sample: give the file")
        if args.cv_splits < 1:
            ap.error(f"--cv-splits must be at least 1; got {args.cv_splits}")
        split_reads = [] if args.split_csv else None
        per = reread(load(args.reread), args.populations,
                     [float(x) for x in args.fractions.split(",")], args.kind,
                     args.replicates, args.seed, args.cv_predictive, args.cv_splits,
                     split_reads)
        per.to_csv(args.per_sample, index=False, float_format="%.6g")
        with pd.option_context("display.width", 200):
            print(evaluate(None, None, per).round(3).to_string(index=False))
            if split_reads is not None:
                reads = pd.DataFrame(split_reads)
                reads.to_csv(args.split_csv, index=False, float_format="%.5g")
                print(split_spread(reads).round(3).to_string(index=False))
        return 0
    if args.evaluate is not None:
        rules = args.rules.split(",") if args.rules else None
        stored_table = all(p.endswith((".csv", ".csv.gz")) for p in args.evaluate)
        if args.kappa_csv and stored_table:
            ap.error("--kappa-csv needs the .npz records (the per-sample table has no "
                     "kappa likelihoods)")
        if stored_table:
            # stored per-sample tables (--per-sample): re-score them, no npz needed
            data = {}
            per = pd.concat([pd.read_csv(p) for p in stored(args.evaluate)],
                            ignore_index=True)
            if rules:
                per = per[per.rule.isin(rules)]
        else:
            data = load(args.evaluate)
            per = score_samples(data, rules or ["default"], model=args.per_sample is not None)
        if args.per_sample:
            per.to_csv(args.per_sample, index=False, float_format="%.6g")
        if args.kappa_csv:
            kappa_reads(data, (rules or ["default"])[0]).to_csv(
                args.kappa_csv, index=False, float_format="%.5g")
        summ = evaluate(None, None, per)
        with pd.option_context("display.width", 200, "display.max_rows", 1000):
            print(summ.round(3).to_string(index=False))
            print(summ.groupby("rule", sort=False).agg(
                calibrated=("calibrated", "sum"), consistent=("consistent", "sum"),
                mean_rmse1=("rmse1", "mean"), mean_rmse2=("rmse2", "mean"),
                max_abs_bias1=("bias1", lambda b: float(np.abs(b).max())),
                max_abs_bias2=("bias2", lambda b: float(np.abs(b).max()))).round(3)
                .to_string())
        if args.csv:
            summ.to_csv(args.csv, index=False)
        return 0
    if not args.out:
        ap.error("--out is needed to run (or --evaluate to score stored records)")
    out = collect(args.populations, [float(x) for x in args.fractions.split(",")], args.kind,
                  args.replicates, args.seed, args.cv_parts)
    if not out:
        return 1
    save(out, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
