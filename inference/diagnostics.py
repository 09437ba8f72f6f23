"""Convergence diagnostics checked after every fit.

Split-R-hat and bulk/tail effective sample sizes (Vehtari, Gelman, Simpson,
Carpenter and Bürkner 2021, through ArviZ) and the number of divergent
transitions. Each problem raises a :class:`ConvergenceWarning` that names the
parameter and suggests a fix; ``strict=True`` raises
:class:`sdcbayes.exceptions.ConvergenceError` instead.

For the latent-class model, :func:`check_truncation` also reports how many of the
truncated Dirichlet process's classes the draws occupy, and warns
(:class:`TruncationWarning`) where all of them are occupied in most draws.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import arviz as az
import numpy as np
import xarray as xr

from sdcbayes.exceptions import ConvergenceError, warn_at_caller
from sdcbayes.inference.posterior import get_group, has_group

__all__ = [
    "ConvergenceWarning",
    "PredictiveCheckWarning",
    "SdcbayesWarning",
    "TruncationWarning",
    "check_diagnostics",
    "check_predictive_uniques",
    "check_truncation",
    "compute_diagnostics",
]

#: R-hat above this flags non-convergence (Vehtari et al. 2021 recommend 1.01).
RHAT_THRESHOLD = 1.01
#: Minimum bulk/tail ESS per chain (Vehtari et al. 2021: 100 per chain).
ESS_PER_CHAIN = 100
#: Share of draws with every class occupied from which the truncation is said to bind.
TRUNCATION_SHARE = 0.5


class SdcbayesWarning(UserWarning):
    """Base class of the warnings sdcbayes issues on purpose."""


class ConvergenceWarning(SdcbayesWarning):
    """The sampler's diagnostics flag a problem (R-hat, ESS, divergences)."""


class TruncationWarning(SdcbayesWarning):
    """The latent-class model occupies every class of its truncation in most draws."""


class PredictiveCheckWarning(SdcbayesWarning):
    """The fitted model's replicate samples do not reproduce the sample uniques."""


#: Two-sided tail of the predictive check's p-value for the sample uniques beyond which
#: :func:`check_predictive_uniques` warns. Over the 600 fits of the predictive-check
#: studies (benchmarks/README.md, "A posterior predictive check of the sample's counts of
#: counts": 12 real designs x 25 samples, simple random and stratified) the uniques' p
#: lay in 0.07-0.90, so 0.01 raises no false alarm there.
PPC_UNIQUES_TAIL = 0.01


def _worst(ds: xr.Dataset, largest: bool) -> tuple[float, str]:
    """Worst value over all variables and elements, with its ``name[dim=label]``.

    ``(nan, "")`` when no element has a finite value (e.g. constant draws, whose R-hat is
    undefined): a sentinel such as -inf would read as a value, and as a good one.
    """
    best_val, best_name = math.nan, ""
    for name, da in ds.data_vars.items():
        values = np.asarray(da.values, dtype=float)
        finite = np.isfinite(values)
        if not finite.any():
            continue  # constants (e.g. data copied into the posterior)
        masked = np.where(finite, values, -np.inf if largest else np.inf)
        flat = int(np.argmax(masked) if largest else np.argmin(masked))
        v = float(values.reshape(-1)[flat])
        if best_val != best_val or ((v > best_val) if largest else (v < best_val)):
            idx = np.unravel_index(flat, values.shape) if values.ndim else ()
            where = ",".join(
                f"{d}={da.coords[d].values[i] if d in da.coords else i}"
                for d, i in zip(da.dims, idx, strict=True)
            )
            best_val, best_name = v, f"{name}[{where}]" if where else str(name)
    return best_val, best_name


def _non_finite(ds: xr.Dataset) -> tuple[int, str]:
    """Number of non-finite (nan, inf) draws over the variables, and the first variable."""
    total, first = 0, ""
    for name, da in ds.data_vars.items():
        values = np.asarray(da.values)
        if not np.issubdtype(values.dtype, np.number) or np.issubdtype(values.dtype, np.integer):
            continue
        n = int(values.size - np.count_nonzero(np.isfinite(values)))
        if n and not first:
            first = str(name)
        total += n
    return total, first


def compute_diagnostics(idata, var_names: list[str] | None = None) -> dict[str, Any]:
    """Return ``max_r_hat``, ``min_ess_bulk``, ``min_ess_tail``, ``divergences`` and where.

    Computed over the posterior variables (``var_names`` to restrict). For a
    posterior that is not a Markov chain (MAP, Laplace, ADVI) only the method
    stamp matters: callers skip this function (values are ``nan``). A statistic
    that no element has (R-hat of one chain, of constant or non-finite draws, or of
    fewer than 4 draws) is ``nan``; ``divergences`` is counted whatever the number
    of draws; ``non_finite_draws`` (and ``non_finite_draws_at``, the first variable)
    appear where draws are nan or infinite.
    """
    post = get_group(idata, "posterior")
    if var_names is not None:
        post = post[var_names]
    n_chains, n_draws = post.sizes["chain"], post.sizes["draw"]
    out: dict[str, Any] = {"chains": int(n_chains), "draws": int(n_draws)}
    # counted whatever the number of draws: a short run's divergences are still a problem
    divergences = 0
    if has_group(idata, "sample_stats"):
        stats = get_group(idata, "sample_stats")
        if "diverging" in stats:
            divergences = int(stats["diverging"].values.sum())
    # a sampler that ran off to inf (or nan) gives no R-hat/ESS to flag it: say so (the
    # keys only when there are any, so that a healthy fit's stamp is as before)
    n_bad, bad_at = _non_finite(post)
    if n_bad:
        out["non_finite_draws"], out["non_finite_draws_at"] = n_bad, bad_at
    if n_draws < 4:
        return out | {
            "max_r_hat": math.nan,
            "min_ess_bulk": math.nan,
            "min_ess_tail": math.nan,
            "divergences": divergences,
        }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant variables give nan
        # one chain has no between-chain variance: r_hat is undefined (nan), and ArviZ
        # would log a shape warning on a logger that --quiet cannot reach
        rhat = az.rhat(post) if n_chains >= 2 else None
        ess_bulk = az.ess(post, method="bulk")
        ess_tail = az.ess(post, method="tail")
    if rhat is None:
        out["max_r_hat"] = math.nan
    else:
        out["max_r_hat"], out["max_r_hat_at"] = _worst(rhat, largest=True)
    out["min_ess_bulk"], out["min_ess_bulk_at"] = _worst(ess_bulk, largest=False)
    out["min_ess_tail"], out["min_ess_tail_at"] = _worst(ess_tail, largest=False)
    out["divergences"] = divergences
    return out


def check_diagnostics(
    diagnostics: dict[str, Any],
    *,
    strict: bool = False,
    rhat_threshold: float = RHAT_THRESHOLD,
    ess_threshold: float | None = None,
    sampler: str = "nuts",
) -> list[str]:
    """Turn diagnostics into warnings (or one error in strict mode).

    Parameters
    ----------
    diagnostics : dict
        From :func:`compute_diagnostics`.
    strict : bool
        Raise :class:`~sdcbayes.exceptions.ConvergenceError` listing every problem.
    rhat_threshold : float
        Default 1.01.
    ess_threshold : float, optional
        Minimum bulk and tail ESS; default 100 per chain.
    sampler : {"nuts", "gibbs"}
        Whose advice the R-hat message gives: NUTS (tuning, priors) or the
        latent-class Gibbs sampler, whose chains drift for thousands of sweeps as
        the number of occupied classes and a learnt profile mass settle, and then
        may still disagree, each in its own mode (benchmarks/README.md, "How long
        the Gibbs chains take to settle").

    Returns
    -------
    list of str
        The problems found (empty when none).
    """
    if ess_threshold is None:
        ess_threshold = ESS_PER_CHAIN * diagnostics.get("chains", 1)
    problems = []
    rhat = diagnostics.get("max_r_hat", math.nan)
    rhat = math.nan if rhat is None else float(rhat)
    if sampler == "gibbs":
        fix = ("the chains disagree or drift: the number of occupied latent classes and a "
               "learnt profile mass move slowly under the Gibbs sampler; run longer "
               "(tune=5000) and more chains, and compare their estimates (the "
               "spread between chains is part of the uncertainty)")
    else:
        fix = ("the chains disagree; run more tuning steps (tune=2000) and draws, or "
               "tighten its prior")
    if rhat == rhat and rhat > rhat_threshold:
        problems.append(
            f"parameter {diagnostics.get('max_r_hat_at') or '(unnamed)'} has R-hat "
            f"{rhat:.3f} > {rhat_threshold}: " + fix
        )
    elif rhat != rhat and diagnostics.get("chains", 1) >= 2 and diagnostics.get("draws", 0) >= 4:
        # R-hat is defined for >= 2 chains of >= 4 draws: nan there means that no
        # parameter's chains varied (a sampler that never moved) or that all are non-finite
        problems.append(
            "R-hat could not be computed for any parameter (constant or non-finite draws): "
            "the sampler did not move, or ran off to infinity; check the model's priors and "
            "starting point, and rerun with more tuning steps (tune=2000)"
        )
    n_bad = diagnostics.get("non_finite_draws", 0) or 0
    if n_bad > 0:
        problems.append(
            f"{n_bad} non-finite draws (nan or inf), first in parameter "
            f"{diagnostics.get('non_finite_draws_at') or '(unnamed)'}: the sampler ran off "
            "to infinity or produced nan; check its prior and the data, or tighten the prior"
        )
    for kind in ("bulk", "tail"):
        ess = diagnostics.get(f"min_ess_{kind}", math.nan)
        ess = math.nan if ess is None else float(ess)
        if ess == ess and ess < ess_threshold:
            problems.append(
                f"parameter {diagnostics.get(f'min_ess_{kind}_at') or '(unnamed)'} has "
                f"{kind} ESS {ess:.0f} < "
                f"{ess_threshold:.0f}: increase draws (and tune), or reparameterise it"
                + (" (tail quantiles and intervals are unreliable)" if kind == "tail" else "")
            )
    div = diagnostics.get("divergences", 0) or 0
    if div > 0:
        problems.append(
            f"{div} divergent transitions: raise target_accept (e.g. 0.95), use a "
            "non-centred parameterisation (structure='hierarchical' is already non-centred) "
            "or tighter priors"
        )
    if problems and strict:
        raise ConvergenceError("sampling diagnostics failed: " + "; ".join(problems))
    for p in problems:
        warn_at_caller(p, ConvergenceWarning)
    return problems


def check_truncation(
    n_classes_used, n_classes: int, *, share_threshold: float = TRUNCATION_SHARE
) -> tuple[dict[str, Any], str | None]:
    r"""How many of the truncation's classes the latent-class draws occupy.

    The latent-class model's stick-breaking prior is a Dirichlet process truncated at H
    classes (Ishwaran & James 2001; Si & Reiter 2013 and Manrique-Vallier & Reiter 2014
    choose H so that some classes stay empty). Where every class is occupied in most
    draws the truncation binds: the fit is a mixture of H classes, not the process's, and
    a larger H may move the estimates. This reports that and warns; it is a caveat of the
    model, not a failure of the sampler, so ``strict`` fits do not raise on it.

    Parameters
    ----------
    n_classes_used : array_like
        Occupied classes per draw (the sampler's ``sample_stats.n_classes_used``).
    n_classes : int
        The truncation level H.
    share_threshold : float
        Warn where the share of draws with all H classes occupied reaches this.

    Returns
    -------
    (dict, str or None)
        ``classes_used_mean``, ``classes_used_max``, ``classes_truncation`` (H) and
        ``share_draws_all_classes_used``; and the warning's text where it binds (also
        issued as a :class:`TruncationWarning`), else None.
    """
    used = np.asarray(n_classes_used, dtype=float).ravel()
    if used.size == 0:
        raise ValueError("no draws of n_classes_used")
    H = int(n_classes)
    share = float(np.mean(used >= H))
    out = {"classes_used_mean": float(used.mean()), "classes_used_max": int(used.max()),
           "classes_truncation": H, "share_draws_all_classes_used": share}
    if share < share_threshold:
        return out, None
    msg = (f"all {H} latent classes are occupied in {share:.0%} of the draws: the truncation "
           f"binds, so the fit is a mixture of {H} classes rather than the Dirichlet process's; "
           f"refit with more classes (n_classes={2 * H}) and compare the estimates: the "
           "difference is part of the model's uncertainty that the interval leaves "
           "out (on samples of 10^5 and 10^6 records of synthetic censuses, 100 classes "
           "instead of 30 lowered tau1 by 0.7-2.1%, not consistently towards the truth; "
           "on Scotland 13 keys at 10%, 60 left tau1 and tau2 where they were and narrowed "
           "the intervals by 10%: benchmarks/README.md, \"The default on a million records: "
           "classes and overdispersion\", \"Twice the classes on Scotland 13 keys at 10%\")")
    warn_at_caller(msg, TruncationWarning)
    return out, msg


def check_predictive_uniques(row, *, tail: float = PPC_UNIQUES_TAIL) -> str | None:
    r"""Warn where the model's replicate samples do not reproduce the sample uniques.

    The latent-class fit's posterior predictive check (Gelman, Meng & Stern 1996)
    draws replicate samples from the fitted mixture and counts their cells seen once;
    τ1, τ2 and the records' risks are sums over the sample uniques, so a model whose
    replicates hold far more or far fewer uniques than the sample (a key of very many
    levels, a population the mixture cannot describe) gives them no footing. The
    doubles and larger cells are left out: the real designs' samples show surpluses of
    doubles where τ1 and τ2 are still calibrated (benchmarks/README.md, "A posterior
    predictive check of the sample's counts of counts").

    Parameters
    ----------
    row : mapping
        The check's row for cells seen once: ``observed``, ``mean``, ``interval``
        (lower, upper) and ``p_value`` (share of replicates with at least as many).
    tail : float
        Warn where ``p_value`` < tail or > 1 - tail.

    Returns
    -------
    str or None
        The warning's text (also issued as a :class:`PredictiveCheckWarning`), or None.
    """
    p = float(row["p_value"])
    if not math.isfinite(p):
        # no replicates to compare with: "more/fewer than the replicates" would be untrue
        msg = ("predictive check: the p-value of the sample uniques could not be computed "
               f"(p = {p}): the check has no replicate samples to compare with; rerun it "
               "with predictive draws")
        warn_at_caller(msg, PredictiveCheckWarning)
        return msg
    if tail <= p <= 1.0 - tail:
        return None
    lo, hi = row["interval"]
    more = "more" if p < tail else "fewer"
    msg = (f"predictive check: the sample has {int(row['observed']):,} cells seen once, "
           f"{more} than the fitted model's replicate samples hold ({float(row['mean']):,.0f} "
           f"[{float(lo):,.0f}, {float(hi):,.0f}], p = {p:.3f}): the model does not reproduce "
           "the sample uniques, so tau1, tau2 and the records' risks rest on a misfit; look "
           "for keys of very many levels (recode them), check structural zeros, and compare "
           "models (sdcbayes compare)")
    warn_at_caller(msg, PredictiveCheckWarning)
    return msg
