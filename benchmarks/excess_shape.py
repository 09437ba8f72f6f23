"""Benchmark: which population frequencies the default model gives the sample uniques,
against the truth (issue 7).

tau1 counts the sample uniques with :math:`F_k = 1`; tau2 sums :math:`1/F_k` over them, so
it also weighs the uniques of small populated cells (:math:`F_k = 2, 3, \\dots`). Where tau1
is right and tau2 is not, the model's predictive of :math:`F_k` given :math:`f_k = 1` has
the wrong shape beyond 1. Per sample this script runs the default model as
``benchmarks/latent_class_accuracy.py`` does (``kappa_rules.run_default``: the same
samples, seeds, cross-validation and Gibbs run) and, per band of :math:`F_k` (1, 2, 3, 4-5,
6-10, 11 and more), sets the expected number of sample uniques in the band and their
expected :math:`\\sum 1/F_k` against the sample's truth. Given :math:`\\pi_k` and
:math:`\\kappa`, :math:`F_k - 1 \\sim \\mathrm{NB}(\\kappa + 1, b/(b + \\lambda_k))`,
:math:`b = \\kappa + n\\pi_k` (:func:`sdcbayes.models.latent_class.prob_population_unique`),
Poisson where :math:`\\kappa` is infinite; averaged over the posterior draws.

Beside the bands, per sample, the "oracle" kappas (:func:`oracle_kappas`): the log kappa
at which the posterior mean of tau1 meets the true tau1, and the one at which tau2's
meets the true tau2 (one kappa for all draws, as ``overdispersion_oracle.py`` does for
tau1). Where they differ, no value of the gamma overdispersion gets both right: the
miss is the shape of the predictive of :math:`F_k`, not the value of kappa.

Usage::

    python benchmarks/excess_shape.py --populations adult6,scotland13 [--fractions 0.1]
        [--kind srs|stratified] [--replicates 20] [--seed 0] [--csv a.csv]

prints per design and band the mean truth and prediction of the count and of the
:math:`1/F` sum, and their ratio (observed / predicted); then per design the median
oracle log kappa of tau1 and of tau2, the default's median log kappa, the share of
samples whose tau2 oracle lies below their tau1 oracle, and the share whose tau1 oracle
lies inside the default's 90% range of kappa (calibrated: about 0.9).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
from scipy.special import gammaln

from sdcbayes.models.latent_class import (
    KAPPA_GRID,
    expected_inverse_frequency,
    prob_population_unique,
)

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from kappa_rules import (  # noqa: E402
    kappa_crossing,
    kappa_quantiles,
    per_sample_table,
    run_default,
    sample_parser,
)

#: Bands of F: [lower, upper] inclusive; the last is open.
BANDS = ((1, 1), (2, 2), (3, 3), (4, 5), (6, 10), (11, None))
X_MAX = 10  # the pmf is summed up to F = X_MAX; the last band is the remainder


def band_labels() -> list[str]:
    return [f"{lo}" if lo == hi else (f"{lo}+" if hi is None else f"{lo}-{hi}")
            for lo, hi in BANDS]


def excess_pmf(lam, smean, kappa, x_max: int = X_MAX) -> np.ndarray:
    r"""P(F - 1 = x | f = 1), x = 0..x_max - 1, per draw and cell, shape (x_max, draws, cells).

    ``lam`` and ``smean`` are (draws, cells), ``kappa`` (draws, 1) and may hold inf
    (Poisson).
    """
    lam = np.asarray(lam, dtype=float)
    kappa = np.broadcast_to(np.asarray(kappa, dtype=float), lam.shape)
    finite = np.isfinite(kappa)
    k = np.where(finite, kappa, 1.0)
    b = k + np.asarray(smean, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = -np.log1p(lam / b)  # log(b / (b + lam))
        log_q = np.log(lam) - np.log(b + lam)  # log(lam / (b + lam))
        log_lam = np.log(lam)
    r = k + 1.0
    out = np.empty((x_max,) + lam.shape)
    for x in range(x_max):
        nb = gammaln(r + x) - gammaln(r) - gammaln(x + 1.0) + r * log_p + x * log_q
        po = -lam + x * log_lam - gammaln(x + 1.0)
        if x == 0:
            nb, po = r * log_p, -lam
        out[x] = np.exp(np.where(finite, nb, po))
    return out


def predicted_bands(lam, smean, kappa, inverse) -> tuple[np.ndarray, np.ndarray]:
    """Expected count and expected sum of 1/F of the sample uniques per band of F.

    ``inverse`` is E(1/F | f = 1) per draw and cell (the model's own closed form), so that
    the open band's 1/F sum is exact: the total minus the bands below it.
    """
    pmf = excess_pmf(lam, smean, kappa)  # (x, draws, cells)
    F = np.arange(1, X_MAX + 1, dtype=float)
    cnt_x = pmf.sum(axis=2).mean(axis=1)  # expected count with F = x + 1
    inv_x = (pmf / F[:, None, None]).sum(axis=2).mean(axis=1)
    n_cells = lam.shape[1]
    total_inv = float(np.asarray(inverse).sum(axis=1).mean())
    counts, invs = [], []
    for lo, hi in BANDS:
        if hi is None:
            counts.append(n_cells - cnt_x[: lo - 1].sum())
            invs.append(total_inv - inv_x[: lo - 1].sum())
        else:
            counts.append(cnt_x[lo - 1: hi].sum())
            invs.append(inv_x[lo - 1: hi].sum())
    return np.array(counts), np.array(invs)


def observed_bands(Fk_of_uniques) -> tuple[np.ndarray, np.ndarray]:
    """Count and sum of 1/F of the sample uniques per band of their true F."""
    F = np.asarray(Fk_of_uniques, dtype=float)
    counts, invs = [], []
    for lo, hi in BANDS:
        m = (F >= lo) & (F <= (np.inf if hi is None else hi))
        counts.append(float(m.sum()))
        invs.append(float((1.0 / F[m]).sum()))
    return np.array(counts), np.array(invs)


def oracle_kappas(lam, smean, truth1: float, truth2: float, grid=KAPPA_GRID) -> dict:
    """Log kappa at which the posterior mean of tau1, and of tau2, meets the truth.

    One kappa for every draw (the Gibbs run's pi draws, not its kappa draws), over the
    finite grid (the grid's end where the truth lies outside; ``censored1``/``censored2``
    -1 below the smallest kappa's mean, +1 above the largest's): if the two differ, no
    gamma overdispersion gets tau1 and tau2 right together.
    """
    finite = np.isfinite(grid)
    logk = np.log(grid[finite])
    m1 = np.array([prob_population_unique(lam, k, smean).sum(axis=1).mean()
                   for k in grid[finite]])
    m2 = np.array([expected_inverse_frequency(lam, k, smean).sum(axis=1).mean()
                   for k in grid[finite]])
    out = {}
    for j, (m, t) in enumerate(((m1, truth1), (m2, truth2)), start=1):
        out[f"oracle{j}"], out[f"censored{j}"] = kappa_crossing(m, t, logk)
    return out


def sample_rows(label: str, r: int, model, N: float, truth, seed: int) -> list[dict]:
    """The band rows of one sample (the default model run as ``kappa_rules`` runs it),
    each carrying the sample's oracle kappas (:func:`oracle_kappas`) and the default's
    posterior median and 5% and 95% quantiles of log kappa (``cv_median``, ``cv_lo``,
    ``cv_hi``; inf where the Poisson point holds the mass beyond)."""
    od, idata, lam, smean = run_default(model, N, seed)
    post = idata.posterior
    kappa = (post["kappa"].values.reshape(-1, 1) if "kappa" in post
             else np.full((lam.shape[0], 1), np.inf))
    inv = expected_inverse_frequency(lam, kappa, smean)  # inf kappa: Poisson
    pc, pi = predicted_bands(lam, smean, kappa, inv)
    su = truth.record_fk == 1
    oc, oi = observed_bands(truth.record_Fk[su])
    lo, med, hi = kappa_quantiles(od["grid"], od["weights"])
    extra = {"cv_median": med, "cv_lo": lo, "cv_hi": hi,
             **oracle_kappas(lam, smean, float(oc[0]), float(oi.sum()))}
    return [{"design": label, "replicate": r, "band": b, "obs_count": oc[j],
             "pred_count": pc[j], "obs_inv": oi[j], "pred_inv": pi[j], **extra}
            for j, b in enumerate(band_labels())]


def summarise_oracles(per: pd.DataFrame) -> pd.DataFrame:
    """Per design: median oracle log kappa for tau1 and tau2, the default's median log
    kappa, the share of samples whose tau2 oracle lies below their tau1 oracle, and the
    share whose tau1 oracle lies in the default's 90% range of kappa (``oracle_in_90``)."""
    one = per.drop_duplicates(["design", "replicate"]).copy()
    # the oracle inside the kappa posterior's 90% range (a censored oracle: the truth
    # beyond every finite kappa's mean, inside when the range reaches that end)
    top = np.where(one.censored1 == 1, np.inf, one.oracle1)
    bottom = np.where(one.censored1 == -1, -np.inf, one.oracle1)
    one["inside"] = (one.cv_lo <= bottom) & (top <= one.cv_hi)
    g = one.groupby("design", sort=False)
    return pd.DataFrame({
        "oracle1": g.oracle1.median(), "oracle2": g.oracle2.median(),
        "cv_median": g.cv_median.median(),
        "tau2_below": g.apply(lambda d: float(np.mean(d.oracle2 < d.oracle1)),
                              include_groups=False),
        "oracle_in_90": g.inside.mean(),
    }).reset_index()


def summarise(per: pd.DataFrame) -> pd.DataFrame:
    """Per design and band: mean observed and predicted count and 1/F sum, and ratios."""
    g = per.groupby(["design", "band"], sort=False)[
        ["obs_count", "pred_count", "obs_inv", "pred_inv"]].mean()
    g["count_ratio"] = g.obs_count / g.pred_count
    g["inv_ratio"] = g.obs_inv / g.pred_inv
    return g.reset_index()


def main(argv=None) -> int:
    ap = sample_parser(__doc__.splitlines()[0], populations="adult6,scotland13",
                       fractions="0.1", replicates=20)
    ap.add_argument("--csv", default=None, help="write the per-sample rows here")
    per = per_sample_table(ap.parse_args(argv), sample_rows)
    if per is None:
        return 1
    with pd.option_context("display.width", 200):
        print(summarise(per).round(3).to_string(index=False))
        print(summarise_oracles(per).round(2).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
