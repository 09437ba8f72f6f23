"""Benchmark: the mixture posterior's lift of the sample uniques' pi in its own world (issue 7).

On the dense designs (Adult 6 keys at 5% and 10%) tau2 sits about 1% low with too-narrow
intervals, and in the model's own world with the cells' kappa known the Gibbs posterior
does the same: it gives the sample uniques' cells too much probability (benchmarks/
README.md, "The predictive check in the model's own world"). Is that a setting of the
prior -- the truncation at 30 classes, the stick-breaking concentration alpha, the profile
prior's masses -- that could be changed, or the mixture posterior's own?

Per sample (the samples and models of ``kappa_rules.py``, i.e. of
``latent_class_accuracy.py``'s default): the whole sample's EM fit is the process
(:func:`kappa_scale.part_priors`); a population of N records is drawn from it with
Gamma(``--kappa``) cells and a simple random sample of the real one's size from that
(:func:`kappa_model_world.population_sample`); the truth's expectations
:math:`\\tau_1^* = \\sum_k P(F_k = 1 \\mid f_k = 1)` and :math:`\\tau_2^* = \\sum_k
E(1/F_k \\mid f_k = 1)` over the drawn sample's uniques at the process's own pi and kappa
(:func:`mixture_bootstrap.plug_in_sums`); then the Gibbs sampler with kappa fixed at the
process's own, once per prior variant of ``--variants`` (:func:`variant_model`), every
variant with the same chains' seed. Recorded per variant: the posterior means and sds of
tau1's and tau2's expectations, the classes occupied, and the uniques' log pi against the
process's: the mean error of the posterior mean of log pi (the centre the uniques share),
the root mean square of the posterior sds and of the errors, and the share of uniques
whose 90% interval of log pi holds the process's.

Variants (``--variants``, comma-separated): ``default``; ``classes=H`` (truncation at H
classes instead of 30); ``alpha=a`` (the stick-breaking concentration held at a, a
Gamma(10^4 a, 10^4) prior); ``small-mass=M`` (the keys of fewer than 20 levels centred
on their marginal with mass M, ``PHI_PRIOR_DEFAULT``'s ``small_mass``); ``learn-all``
(a learnt mass on every key, ``min_levels`` 2).

Usage::

    python benchmarks/mixture_lift.py --populations adult6 --fractions 0.05,0.1
        [--replicates 10] [--kappa inf] [--variants default,classes=15,alpha=0.1]
        [--tune 500] [--csv lift.csv]
    python benchmarks/mixture_lift.py --summarise lift.csv [...]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import LatentClassModel

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_model_world import population_sample  # noqa: E402
from kappa_rules import (  # noqa: E402
    CHAINS,
    DRAWS,
    EM_RESTARTS,
    per_sample_table,
    sample_parser,
)
from kappa_scale import part_priors  # noqa: E402
from mixture_bootstrap import fit_probabilities, plug_in_sums  # noqa: E402

#: The variants run by default: the shipped prior and one change each of the truncation,
#: the concentration alpha and the small keys' profile mass.
VARIANTS = "default,classes=15,alpha=0.1,small-mass=30,learn-all"

#: Burn-in sweeps: in the model's world the chains settle at once (tau1 at 100 and at
#: 2,000 sweeps within 0.2%: benchmarks/README.md, "The predictive check in the model's
#: own world").
TUNE_LIFT = 500


def variant_model(model: LatentClassModel, spec: str) -> LatentClassModel:
    """``model`` with the prior variant ``spec`` (module docstring); ``default`` is
    ``model`` itself."""
    name, _, value = spec.partition("=")
    try:
        if name == "default" and not value:
            return model
        if name == "classes":
            return LatentClassModel(model.codes, model.counts, model.n_levels, keys=model.keys,
                                    levels=model.levels, n_classes=int(value),
                                    structural_zeros=model.structural_zeros,
                                    priors=model.priors)
        if name == "alpha":
            a = float(value)
            if a > 0:
                return model.with_priors({"alpha": {"dist": "Gamma", "alpha": 1e4 * a,
                                                    "beta": 1e4}})
        if name == "small-mass":
            return model.with_priors({"phi": {**model.priors["phi"],
                                              "small_mass": float(value)}})
        if name == "learn-all" and not value:
            return model.with_priors({"phi": {**model.priors["phi"], "min_levels": 2}})
    except ValueError:
        pass
    raise InputError(f"unknown prior variant {spec!r}: use default, classes=H, alpha=a, "
                     "small-mass=M or learn-all")


def lift_rows(label, replicate, model, N, seed, kappa0: float, variants, tune: int = TUNE_LIFT,
              ) -> list[dict]:
    """One row per variant of ``variants`` on a sample drawn in ``model``'s world
    (module docstring); seeded by ``(seed, replicate)``."""
    rng = np.random.default_rng([seed, replicate, 96])
    _, fit = part_priors(model, rng, EM_RESTARTS - 1)
    sample, t, N_pop = population_sample(model, fit, kappa0, N, rng)
    su = sample.key_counts == 1
    codes = sample.key_codes[su]
    log_pi = np.log(fit_probabilities(model, fit, codes))
    n = float(sample.counts.sum())
    s1, s2 = plug_in_sums(model, fit, codes, N_pop, n, grid=np.array([kappa0]))
    run_seed = int(np.random.SeedSequence([seed, replicate, 95]).generate_state(1)[0])
    rows = []
    for spec in variants:
        m = variant_model(sample, spec)
        t0 = time.perf_counter()
        idata = m.sample(draws=DRAWS, tune=tune, chains=CHAINS, N=N_pop, random_seed=run_seed,
                         em_restarts=EM_RESTARTS,
                         overdispersion=None if np.isinf(kappa0) else float(kappa0))
        post = idata.posterior
        lp = np.log(post["pi"].values.reshape(-1, log_pi.size))
        lo, hi = np.quantile(lp, [0.05, 0.95], axis=0)
        e1, e2 = (post[f"tau{i}_expected"].values.ravel() for i in (1, 2))
        rows.append({"design": label, "replicate": replicate, "kappa0": float(kappa0),
                     "variant": spec, "n": n, "N": N_pop, "uniques": int(su.sum()),
                     "tau1_star": float(s1[0]), "tau2_star": float(s2[0]),
                     "tau1": t.tau1, "tau2": t.tau2,
                     "est1": float(e1.mean()), "sd1": float(e1.std()),
                     "est2": float(e2.mean()), "sd2": float(e2.std()),
                     "classes": float(idata.sample_stats["n_classes_used"].values.mean()),
                     "log_pi_err": float(np.mean(lp.mean(axis=0) - log_pi)),
                     "log_pi_sd": float(np.sqrt(np.mean(lp.var(axis=0)))),
                     "log_pi_rmse": float(np.sqrt(np.mean((lp.mean(axis=0) - log_pi) ** 2))),
                     "log_pi_cover": float(np.mean((lo <= log_pi) & (log_pi <= hi))),
                     "seconds": time.perf_counter() - t0})
    return rows


def summarise(per: pd.DataFrame) -> pd.DataFrame:
    """Per design and variant: the samples, classes occupied, relative bias of tau1's and
    tau2's posterior means against the truth's expectations (``bias1``, ``bias2``), tau1's
    mean error over its posterior sd (``z1``, 0 when centred) and the sd of its relative
    error over samples (``err_sd1``), and the uniques' log pi columns averaged.

    Relative bias is the harness's (:func:`sdcbayes.validation.summarise`): the mean error
    over the mean truth, sum(est - t) / sum(t), not the mean of per-sample ratios, so the
    numbers sit beside the accuracy tables'."""
    d = per.assign(rel1=per.est1 / per.tau1_star - 1.0,
                   z1=(per.est1 - per.tau1_star) / per.sd1)
    g = d.groupby(["design", "variant"], sort=False)
    out = g.agg(samples=("replicate", "size"), classes=("classes", "mean"),
                est1=("est1", "sum"), t1=("tau1_star", "sum"), est2=("est2", "sum"),
                t2=("tau2_star", "sum"), z1=("z1", "mean"),
                err_sd1=("rel1", "std"), log_pi_err=("log_pi_err", "mean"),
                log_pi_sd=("log_pi_sd", "mean"), log_pi_rmse=("log_pi_rmse", "mean"),
                log_pi_cover=("log_pi_cover", "mean"), seconds=("seconds", "mean"))
    out.insert(2, "bias1", out.pop("est1") / out.pop("t1") - 1.0)
    out.insert(3, "bias2", out.pop("est2") / out.pop("t2") - 1.0)
    return out.reset_index()


def main(argv=None) -> int:
    ap = sample_parser(__doc__.splitlines()[0], populations="adult6", fractions="0.1",
                       replicates=10)
    ap.add_argument("--kappa", type=float, default=float("inf"),
                    help="the process's kappa (inf: Poisson cells), at which the Gibbs "
                         "sampler is also held")
    ap.add_argument("--variants", default=VARIANTS,
                    help="comma-separated prior variants (module docstring)")
    ap.add_argument("--tune", type=int, default=TUNE_LIFT)
    ap.add_argument("--csv", default=None, help="write the per-sample rows here")
    ap.add_argument("--summarise", nargs="*", default=None,
                    help="summarise stored tables instead of running")
    args = ap.parse_args(argv)
    if args.summarise is not None:
        per = pd.concat([pd.read_csv(p) for p in args.summarise], ignore_index=True)
    else:
        variants = [v.strip() for v in args.variants.split(",") if v.strip()]
        if not variants or not args.kappa > 0 or args.tune < 1:
            ap.error("--variants must name at least one variant, --kappa be positive and "
                     "--tune at least 1")
        try:
            probe = LatentClassModel(np.array([[0, 0], [1, 1]]), [1, 1], [2, 2],
                                     n_classes=2)
            for v in variants:  # bad names fail here, before any fit
                variant_model(probe, v)
        except InputError as e:
            ap.error(str(e))
        per = per_sample_table(args, lambda label, r, model, N, truth, seed: lift_rows(
            label, r, model, N, seed, args.kappa, variants, args.tune))
        if per is None:
            return 1
    with pd.option_context("display.width", 200):
        print(summarise(per).round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
