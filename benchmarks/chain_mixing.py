"""Benchmark: how the latent-class Gibbs chains mix on the demo, with and without label moves.

The chains of the default model start at EM fits and drift for a thousand sweeps or more
(benchmarks/README.md, "How long the Gibbs chains take to settle"). This script follows
them sweep by sweep on the demo sample (``sdcbayes.datasets.load_demo``, Poisson cells,
H = 30 classes, no tuning: every sweep is kept) and prints, per block of sweeps and per
chain, the means of

- tau1's conditional expectation given the mixture (``tau1_expected``: the sum of
  :math:`P(F_k = 1 \\mid f_k = 1, \\pi)` over the sample uniques);
- the number of occupied classes and the DP concentration alpha;
- :math:`\\log_2` of the learnt profile mass :math:`M_j` of each key that learns one, and the
  centre and spread (sd) of its conditional given the allocations, the distribution the
  sampler draws it from (``profile_mass_loglik`` on ``PHI_MASS_GRID``, uniform prior),

then R-hat and bulk ESS of ``tau1_expected`` over the second half of the sweeps. With
``--label-moves off,on`` the same seeds run without and with the label-switching moves of
:meth:`sdcbayes.models.latent_class.LatentClassModel.sample` (``label_moves``).

Usage::

    python benchmarks/chain_mixing.py [--sweeps 3000] [--chains 4] [--seed 1]
        [--label-moves off,on] [--blocks 5] [--start-mass M] [--split-merge P]

``--start-mass M`` starts every chain from the EM fit with the learnt keys' class profiles
smoothed towards their base as a profile mass M would smooth them (``--start-how smooth``),
or from the EM fit with the mass fixed at M (``--start-how em``: classes formed under it), to
see whether chains started at a large mass come down to where the EM starts go.
``--split-merge P`` makes P split-merge proposals per sweep (the sampler's ``split_merge``),
and the block table counts the accepted ones.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import PHI_MASS_GRID, LatentClassModel, profile_mass_loglik


class _MassWatch(LatentClassModel):
    """The model, recording the conditional of log2 M_j at every learnt draw of it.

    ``mass_log[chain]`` holds one ``(key index, mean, sd)`` row per draw: the mean and sd
    of log2 M_j under the grid posterior the sweep draws M_j from. Chains run one after
    another (``cores=1``), so ``current_chain`` tells them apart.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mass_log: dict[int, list[tuple[int, float, float]]] = {}
        self.current_chain = 0
        self.start_mass: float | None = None
        self.start_how = "smooth"
        self.hold: tuple[float, int] | None = None  # (M, sweeps): M held for the first sweeps

    def _init_state(self, rng, init="em", em_restarts=3, start_classes=None):
        """The chain's start; with ``start_mass`` M, ``start_how`` ``"smooth"``: the EM
        start with the learnt keys' class profiles smoothed towards their base as M would,
        (n w_h phi_h + M eta) / (n w_h + M); ``"em"``: the EM fit with M fixed (its classes
        formed under that mass)."""
        if self.start_mass is not None and self.learns_phi_mass and self.start_how == "em":
            phi = {k: v for k, v in self.priors["phi"].items() if k != "mass"}
            fixed = LatentClassModel.with_priors(self, {"phi": {**phi,
                                                                "mass": self.start_mass}})
            st = LatentClassModel._init_state(fixed, rng, init, em_restarts, start_classes)
            # the learnt model's masses (redrawn in the first sweep): M where learnt
            st["phi_mass"] = np.where([self.learns_mass(j) for j in range(len(self.keys))],
                                      self.start_mass, self._phi_mass_start())
            return st
        st = super()._init_state(rng, init, em_restarts, start_classes)
        if self.start_mass is not None and self.learns_phi_mass:
            from sdcbayes.models.latent_class import stick_breaking_weights

            n_h = self.n * stick_breaking_weights(st["V"])[:, None]
            for j in range(len(self.keys)):
                if self.learns_mass(j):
                    phi = np.exp(st["log_phi"][j])                       # (H, L)
                    base = self.phi_base(j)[None, :]
                    st["log_phi"][j] = np.log((n_h * phi + self.start_mass * base)
                                              / (n_h + self.start_mass))
        return st

    def _learn_mass(self, counts, j, rng=None):
        held = None
        if rng is not None and self.hold is not None:
            # this chain's draws of M_j so far: one per sweep, logged below
            if len(self.mass_log.get(self.current_chain, ())) < self.hold[1] * self._n_learnt():
                held = float(self.hold[0])
        if rng is not None:
            lp = profile_mass_loglik(counts, self.phi_base(j))
            p = np.exp(lp - lp.max())
            p /= p.sum()
            x = np.log2(PHI_MASS_GRID)
            mean = float(p @ x)
            self.mass_log.setdefault(self.current_chain, []).append(
                (j, mean, float(np.sqrt(p @ (x - mean) ** 2))))
        draw = super()._learn_mass(counts, j, rng)
        return draw if held is None else held

    def _n_learnt(self) -> int:
        return sum(self.learns_mass(j) for j in range(len(self.keys)))

    def _gibbs_chain(self, rng, *args, **kwargs):
        out = super()._gibbs_chain(rng, *args, **kwargs)
        self.current_chain += 1
        return out


def demo_model(n_classes: int = 30) -> tuple[_MassWatch, float, float]:
    """The demo sample's model (as ``sdcbayes assess`` builds it), N and the true tau1."""
    from sdcbayes import Microdata
    from sdcbayes.datasets import load_demo

    d = load_demo()
    md = Microdata(d.sample, keys=d.keys, weight=d.weight)
    base = LatentClassModel.from_microdata(md, n_classes=n_classes)
    model = _MassWatch(base.codes, base.counts, base.n_levels, keys=base.keys,
                       levels=base.levels, n_classes=base.H, priors=base.priors,
                       class_weights=base.class_weights)
    return model, float(d.sample[d.weight].sum()), float(d.truth.tau1)


def trajectory(model: _MassWatch, N: float, sweeps: int, chains: int, seed: int,
               label_moves: bool, start_mass: float | None = None,
               start_how: str = "smooth",
               hold: tuple[float, int] | None = None,
               start_classes: int | None = None,
               split_merge: int = 0) -> dict[str, np.ndarray]:
    """Every sweep of ``chains`` chains: arrays (chain, sweep), masses (chain, sweep, key).

    ``start_mass``, ``start_how``: start from the EM fit with the learnt keys' profiles
    smoothed towards their base with that mass, or from the EM fit at that fixed mass
    (``_MassWatch._init_state``; None: the default's EM start). ``hold``: (M, T), the
    learnt masses held at M for each chain's first T sweeps (a burn-in scheme; the
    conditionals are still recorded). ``start_classes``: the sampler's option, the EM
    start fitted with that many classes (the rest empty). ``split_merge``: the sampler's
    split-merge proposals per sweep."""
    model.mass_log, model.current_chain = {}, 0
    model.start_mass, model.start_how, model.hold = start_mass, start_how, hold
    t0 = time.perf_counter()
    idata = model.sample(draws=sweeps, tune=0, chains=chains, N=N, random_seed=seed, cores=1,
                         label_moves=label_moves, start_classes=start_classes,
                         split_merge=split_merge)
    out = {
        "tau1_expected": idata.posterior["tau1_expected"].values,
        "classes": idata.sample_stats["n_classes_used"].values,
        "alpha": idata.posterior["alpha"].values,
        "seconds": np.array(time.perf_counter() - t0),
    }
    if split_merge:
        out["split_merge_accepted"] = idata.sample_stats["split_merge_accepted"].values
    learnt = [j for j in range(len(model.keys)) if model.learns_phi_mass
              and model.learns_mass(j)]
    out["learnt_keys"] = np.array([model.keys[j] for j in learnt], dtype=object)
    if learnt:
        out["log2_mass"] = np.log2(idata.posterior["phi_mass"].values[..., learnt])
        cond = np.full((chains, sweeps, len(learnt), 2), np.nan)
        for c, rows in model.mass_log.items():
            rows = np.array(rows)
            for i, j in enumerate(learnt):
                r = rows[rows[:, 0] == j, 1:]
                cond[c, : len(r), i] = r[:sweeps]
        out["mass_conditional"] = cond
    return out


def block_table(traj: dict[str, np.ndarray], blocks: int) -> pd.DataFrame:
    """Per block of sweeps and chain: the means of the trajectory's series."""
    chains, sweeps = traj["tau1_expected"].shape
    edges = np.linspace(0, sweeps, blocks + 1).round().astype(int)
    rows = []
    for b in range(blocks):
        sl = slice(edges[b], edges[b + 1])
        for c in range(chains):
            row = {"sweeps": f"{edges[b]}-{edges[b + 1]}", "chain": c,
                   "tau1_expected": traj["tau1_expected"][c, sl].mean(),
                   "classes": traj["classes"][c, sl].mean(),
                   "alpha": traj["alpha"][c, sl].mean()}
            if "split_merge_accepted" in traj:
                row["split_merge_accepted"] = traj["split_merge_accepted"][c, sl].sum()
            for i, key in enumerate(traj["learnt_keys"]):
                row[f"log2_M[{key}]"] = traj["log2_mass"][c, sl, i].mean()
                row[f"cond_mean[{key}]"] = np.nanmean(traj["mass_conditional"][c, sl, i, 0])
                row[f"cond_sd[{key}]"] = np.nanmean(traj["mass_conditional"][c, sl, i, 1])
            rows.append(row)
    return pd.DataFrame(rows)


def second_half_diagnostics(x: np.ndarray) -> tuple[float, float]:
    """R-hat (rank-normalised split) and bulk ESS of (chain, sweep) draws' second half."""
    import arviz as az

    half = x[:, x.shape[1] // 2:]
    return float(az.rhat(half)), float(az.ess(half))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sweeps", type=int, default=3000)
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--classes", type=int, default=30)
    p.add_argument("--blocks", type=int, default=5)
    p.add_argument("--label-moves", default="off,on",
                   help="comma-separated: off (the default sampler), on (label_moves=True)")
    p.add_argument("--start-mass", type=float, default=None,
                   help="start every chain from the EM fit with the learnt keys' class "
                   "profiles smoothed towards their base with this mass (e.g. 4096)")
    p.add_argument("--start-how", choices=["smooth", "em"], default="smooth",
                   help="with --start-mass: smooth the EM start's profiles (smooth), or "
                   "start from the EM fit with the mass fixed there (em)")
    p.add_argument("--start-classes", type=int, default=None,
                   help="start from the EM fit with this many classes, the rest empty")
    p.add_argument("--split-merge", type=int, default=0, metavar="P",
                   help="split-merge proposals per sweep (the sampler's split_merge; 0: none)")
    p.add_argument("--hold-mass", default=None, metavar="M:T",
                   help="hold the learnt masses at M for each chain's first T sweeps, then "
                   "draw them as usual (e.g. 4096:500)")
    args = p.parse_args(argv)
    if args.split_merge < 0:
        p.error(f"--split-merge must be >= 0; got {args.split_merge}")
    if args.start_mass is not None and not args.start_mass > 0:
        p.error(f"--start-mass must be positive; got {args.start_mass}")
    if args.start_classes is not None and not 1 <= args.start_classes <= args.classes:
        p.error(f"--start-classes must lie in 1..--classes ({args.classes}); "
                f"got {args.start_classes}")
    hold = None
    if args.hold_mass is not None:
        try:
            m_, t_ = args.hold_mass.split(":")
            hold = (float(m_), int(t_))
        except ValueError:
            hold = None
        if hold is None or not hold[0] > 0 or hold[1] < 0:
            p.error(f"--hold-mass takes M:T, a positive mass and a number of sweeps "
                    f"(e.g. 4096:500); got {args.hold_mass!r}")
    variants = [v.strip() for v in args.label_moves.split(",")]
    if not variants or any(v not in ("off", "on") for v in variants):
        p.error(f"--label-moves takes off and/or on, comma-separated; got {args.label_moves!r}")
    model, N, tau1_true = demo_model(args.classes)
    pd.set_option("display.width", 200)
    for v in variants:
        traj = trajectory(model, N, args.sweeps, args.chains, args.seed, v == "on",
                          args.start_mass, args.start_how, hold, args.start_classes,
                          args.split_merge)
        rhat, ess = second_half_diagnostics(traj["tau1_expected"])
        start = "" if args.start_mass is None else (
            f", start {'smoothed with' if args.start_how == 'smooth' else 'EM at'} "
            f"M {args.start_mass:g}")
        if hold is not None:
            start += f", M held at {hold[0]:g} for {hold[1]} sweeps"
        if args.start_classes is not None:
            start += f", EM start with {args.start_classes} classes"
        if args.split_merge:
            start += f", {args.split_merge} split-merge proposals per sweep"
        print(f"\nlabel moves {v}{start}: {args.chains} chains x {args.sweeps} sweeps, seed "
              f"{args.seed}, {float(traj['seconds']):.0f} s; true tau1 {tau1_true:.0f}; "
              f"tau1_expected over the second half: R-hat {rhat:.3f}, bulk ESS {ess:.0f}")
        print(block_table(traj, args.blocks).round(2).to_string(index=False))


if __name__ == "__main__":
    main()
