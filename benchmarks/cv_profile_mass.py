"""Benchmark: a profile mass chosen by the cross-validation, against the learnt one (issue 7).

On the dense designs (Adult 6 keys at 5% and 10%) the default mixture is too smooth for the
population: its sample uniques are unique more often than predicted, and the
cross-validation sees it at the parts' scale -- the part-uniques left unique in the rest
of the sample outnumber even the Poisson prediction (``overdispersion_cv``'s
``observed`` above its ``predicted_poisson``), which no overdispersion can reach. A
larger profile mass M_j on the keys of 20 levels or more smooths the classes' profiles of
those keys towards their marginal and raises that prediction.

The rule measured here, per sample: keep the default (the learnt mass) if the parts'
Poisson prediction reaches the held-out count, else take the first of ``--masses`` that
does (fixed on the keys of >= 20 levels; the others as in the default); then fit the
default model (``latent_class_method``: Gibbs sampler, 2 chains x 150 after 100, H = 30,
confirmed structural zeros, cross-validated overdispersion) with that prior. Printed per
sample: the mass chosen, tau1 and tau2 with their 90% intervals and the truth; then bias,
relative RMSE and coverage over the samples. The default's own numbers on the same
samples are in ``benchmarks/results/latent_class_50_learnt_mass_adult.csv.gz``.

Usage::

    python benchmarks/cv_profile_mass.py --population adult6 --fraction 0.1 [--replicates 20]
        [--masses 64,128,256,512,1024] [--seed 0]

Measured (benchmarks/README.md, "Three scratch checks" and after): on Adult 6 keys at 10%
the rule picks 64-1024 and moves tau1 / tau2 from -2.0% / -1.2% to +1.7% / +0.7% over 20 samples; at
5% from -0.7% / -0.8% to +0.6% / -0.1%; it keeps the learnt mass on the Adult 9 keys and 1%
samples checked. ``--rule interpolate`` (the crossing in log mass, measured with this
script's own first version of the rule, commit a274b24): +1.3% / +0.5% at 10%, -0.1% / -0.4%
at 5%, relative RMSE below the default's on all four. That rule is now the model's
(:func:`sdcbayes.models.latent_class.profile_mass_cv`, ``profile_mass="cv"``; it tries only
masses above the learnt one), which ``--rule interpolate`` calls; its 200-replicate runs
(``benchmarks/latent_class_accuracy.py --profile-mass cv``, benchmarks/README.md) found it worse
than the learnt mass on Adult 6 keys at 5% and 10% (on the 20 samples here the default was
further off than over 200, tau1 -2.0% against -1.3% at 10%, which flattered the rule).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from sdcbayes.models.latent_class import (
    PHI_PRIOR_DEFAULT,
    LatentClassModel,
    overdispersion_cv,
    profile_mass_cv,
)
from sdcbayes.validation import _draw, _population_cells, latent_class_method, truth_of_sample

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from latent_class_accuracy import (  # noqa: E402
    CONFIRMED_RULES,
    confirmed_rules,
    populations_with_codebook,
)


def candidates(masses) -> list[dict]:
    """The default profile prior, then a fixed mass on the keys of >= 20 levels per mass."""
    return [dict(PHI_PRIOR_DEFAULT)] + [
        {"dist": "Dirichlet", "a": "marginal", "mass": float(m), "min_levels": 20}
        for m in masses]


def choose_prior(frame, keys, levels, rules, N, masses, seed=0,
                 rule: str = "first") -> tuple[dict, list]:
    """The profile prior whose parts' Poisson prediction reaches the held-out count.

    ``rule="first"``: the first candidate (:func:`candidates`) that reaches it, the last
    when none does. ``"interpolate"``: the model's rule, :func:`profile_mass_cv` (between
    that candidate and the one before, the mass at which the prediction crosses the
    count, linear in log mass; candidates above the learnt mass only). Returns the prior
    and, per candidate tried, ``(observed, predicted_poisson)``.
    """
    def model_with(phi):
        return LatentClassModel.from_frame(frame, keys, levels=levels, n_classes=30,
                                           structural_zeros=rules, priors={"phi": phi})

    cands = candidates(masses)
    if rule == "interpolate":
        model = model_with(cands[0])
        out = profile_mass_cv(model, masses=masses, random_seed=seed, em_restarts=2,
                              max_ratio=N / model.n)
        return (dict(out["model"].priors["phi"]),
                [(t["observed"], t["predicted_poisson"]) for t in out["summary"]["tried"]])
    tried = []
    for phi in cands:
        model = model_with(phi)
        od = overdispersion_cv(model, random_seed=seed, em_restarts=2, max_ratio=N / model.n)
        tried.append((od["observed"], od["predicted_poisson"]))
        if od["predicted_poisson"] >= od["observed"]:
            return phi, tried
    return cands[-1], tried


def default_method(name: str, keys, levels, phi: dict, seed: int):
    """The harness's default latent-class method (cross-validated overdispersion) with
    profile prior ``phi``."""
    return latent_class_method(structural_zeros=confirmed_rules(name, keys), levels=levels,
                               priors={"phi": phi}, overdispersion="cv", seed=seed)


def summary(rows: list[dict]) -> str:
    """Bias, relative RMSE and 90% coverage of tau1 and tau2 over the rows."""
    parts = []
    for q in ("tau1", "tau2"):
        rel = np.array([r[q] / r[f"{q}_true"] - 1 for r in rows])
        cover = np.mean([r[f"{q}_lo"] <= r[f"{q}_true"] <= r[f"{q}_hi"] for r in rows])
        parts.append(f"{q} bias {100 * rel.mean():+.2f}%, rmse "
                     f"{100 * np.sqrt(np.mean(rel**2)):.2f}%, coverage {cover:.2f}")
    return f"{len(rows)} samples: " + "; ".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--population", default="adult6")
    ap.add_argument("--fraction", type=float, default=0.1)
    ap.add_argument("--replicates", type=int, default=20)
    ap.add_argument("--masses", default="64,128,256,512,1024")
    ap.add_argument("--seed", type=int, default=0, help="design seed (as the accuracy harness)")
    ap.add_argument("--rule", default="first", choices=["first", "interpolate"],
                    help="the first mass that reaches the held-out count, or the crossing "
                         "interpolated in log mass between it and the one before")
    args = ap.parse_args(argv)
    masses = [float(m) for m in args.masses.split(",")]
    if "," in args.population:
        ap.error(f"--population takes one population; got {args.population!r}")
    found = list(populations_with_codebook(args.population))
    if not found:  # its data are absent: populations_with_codebook printed why
        return 1
    (name, pop, levels), = found
    frame, keys, N = pop.frame, list(pop.keys), len(pop.frame)
    pop_cell, pop_counts = _population_cells(frame, keys)
    rows = []
    for r in range(args.replicates):
        index, w = _draw(np.random.default_rng([args.seed, r]), None, args.fraction, N)
        sample = frame.iloc[index][keys].reset_index(drop=True)
        sample["__weight__"] = w
        phi, tried = choose_prior(sample[keys].astype(str), keys, levels,
                                  CONFIRMED_RULES.get(name), N, masses, rule=args.rule)
        lc = default_method(name, pop.keys, levels, phi, args.seed)
        est = lc(sample, keys, "__weight__", N)
        truth = truth_of_sample(pop_cell, pop_counts, index)
        row = {"tau1": est.tau1, "tau1_true": truth.value("tau1"), "tau2": est.tau2,
               "tau2_true": truth.value("tau2")}
        for q in ("tau1", "tau2"):
            row[f"{q}_lo"], row[f"{q}_hi"] = est.intervals[q]
        rows.append(row)
        m = phi["mass"]
        print(f"{r:>3} mass {m if isinstance(m, str) else f'{m:.0f}':>6} (observed / Poisson "
              f"{', '.join(f'{o}/{p:.0f}' for o, p in tried)}): tau1 {est.tau1:.1f} "
              f"[{row['tau1_lo']:.0f}, {row['tau1_hi']:.0f}] ({row['tau1_true']:.0f}), tau2 "
              f"{est.tau2:.1f} [{row['tau2_lo']:.0f}, {row['tau2_hi']:.0f}] "
              f"({row['tau2_true']:.1f})", flush=True)
    print(f"{args.population} at {args.fraction:.0%}, rule {args.rule}, {summary(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
