"""Benchmark: the EM point and the Gibbs average, both with Poisson cells, against the truth
(issue 7).

The cross-validation that reads the overdispersion kappa
(:func:`sdcbayes.models.latent_class.overdispersion_cv`) predicts each part's uniques from
one EM point of the mixture (``predictive="em"``), while the risk averages over the whole
sample's Gibbs posterior. Where the EM point gives the sample uniques too large a
:math:`\\pi_k` (its tau1 with Poisson cells below the truth), the held-out count is at or
above every kappa's prediction, the kappa posterior piles up at Poisson, and the answer is
the Gibbs average's with Poisson cells -- right or wrong as that happens to be. Per sample
this script reports both, with Poisson cells
(:math:`\\tau_1 = \\sum_{f_k = 1} e^{-(N - n)\\pi_k}`, Skinner & Holmes 1998, section 3.4):
the EM fit of :meth:`LatentClassModel.fit_em` (the whole sample, ``EM_RESTARTS`` starts,
as the sampler starts from; seeded by ``--seed``) and the posterior mean over the default
Gibbs run without overdispersion, on the samples and models of
``benchmarks/latent_class_accuracy.py`` (same seeds, via ``kappa_rules.samples``).

Usage::

    python benchmarks/em_vs_gibbs.py --populations adult6,adult9 [--fractions 0.01,0.05,0.1]
        [--kind srs|stratified] [--replicates 8] [--seed 0] [--csv a.csv]

prints per design the mean truth, EM point and Gibbs average of tau1 and their relative
errors (ratios of means).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from sdcbayes.models.latent_class import (
    LatentClassModel,
    excess_means,
    prob_population_unique,
)

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_rules import (  # noqa: E402
    CHAINS,
    DRAWS,
    EM_RESTARTS,
    TUNE,
    per_sample_table,
    sample_parser,
)


def em_and_gibbs_tau1(model: LatentClassModel, N: float, seed: int) -> tuple[float, float]:
    """tau1 with Poisson cells from the EM point and from the Gibbs posterior mean.

    The EM fit has ``EM_RESTARTS`` starts seeded by ``seed``; the Gibbs run is the default's
    settings (``kappa_rules``' DRAWS, TUNE, CHAINS) with ``overdispersion=None``.
    """
    su = model.key_counts == 1
    em = model.fit_em(n_restarts=EM_RESTARTS, random_seed=seed)
    pi = model.key_cell_probabilities(em["w"], em["phi"])[su]
    tau_em = float(np.exp(-(float(N) - model.n) * pi).sum())
    idata = model.sample(draws=DRAWS, tune=TUNE, chains=CHAINS, N=float(N), random_seed=seed,
                         store="all", em_restarts=EM_RESTARTS, overdispersion=None)
    lam = excess_means(idata).reshape(-1, model.key_codes.shape[0])[:, su]
    return tau_em, float(prob_population_unique(lam).sum(axis=1).mean())


def summarise_gap(per: pd.DataFrame) -> pd.DataFrame:
    """Per design: mean truth, EM point and Gibbs average, and their relative errors."""
    g = per.groupby("design", sort=False)[["truth1", "em_tau1", "gibbs_tau1"]].mean()
    g["em_rel"] = g.em_tau1 / g.truth1 - 1
    g["gibbs_rel"] = g.gibbs_tau1 / g.truth1 - 1
    return g.reset_index()


def sample_rows(label: str, r: int, model, N: float, truth, seed: int) -> list[dict]:
    """The one row of a sample: its truth, EM point and Gibbs average."""
    em, gibbs = em_and_gibbs_tau1(model, N, seed)
    return [{"design": label, "replicate": r, "truth1": truth.tau1, "em_tau1": em,
             "gibbs_tau1": gibbs}]


def main(argv=None) -> int:
    ap = sample_parser(__doc__.splitlines()[0],
                       populations="adult6,adult9,scotland7,scotland13", replicates=8)
    ap.add_argument("--csv", default=None, help="write the per-sample rows here")
    per = per_sample_table(ap.parse_args(argv), sample_rows)
    if per is None:
        return 1
    with pd.option_context("display.width", 200):
        print(summarise_gap(per).round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
