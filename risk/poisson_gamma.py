"""Bethlehem-Keller-Pannekoek Poisson-gamma model: estimates and conditionals.

Imports NumPy and SciPy only (never PyMC or ArviZ). The functions broadcast, so the
same call serves point estimates and ``(chain, draw)`` arrays of (alpha, beta).

Model (Bethlehem, Keller & Pannekoek 1990; seed ``000_…`` section 2.3, whose eq. 10
is μ; ARCHITECTURE.md "Poisson-gamma cell frequencies"): cell probabilities
π_k ~ Gamma(shape α, scale β), F_k | π_k ~ Poisson(N π_k) and, under Bernoulli
sampling at rate n/N, f_k | π_k ~ Poisson(n π_k). Marginally f_k ~ NegBin(α, 1/(1 + nβ)):

.. math::

    P(f = j) = \\frac{\\Gamma(\\alpha + j)}{\\Gamma(\\alpha)\\, j!}
               \\Big(\\frac{1}{1 + n\\beta}\\Big)^{\\alpha}
               \\Big(\\frac{n\\beta}{1 + n\\beta}\\Big)^{j},

so the likelihood depends on the sample only through the counts of counts m_j.
Given (α, β): π_k | f_k ~ Gamma(α + f_k, rate 1/β + n) (gamma-Poisson conjugacy) and
F_k - f_k | f_k ~ NegBin(α + f_k, ρ), ρ = (1 + nβ)/(1 + Nβ), since F_k - f_k | π_k ~
Poisson((N - n) π_k) (Bethlehem, Keller & Pannekoek 1990; seed ``000_…`` does not print
these conditionals).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import optimize, special

from sdcbayes.exceptions import InputError, ModelError
from sdcbayes.risk.individual import negbin_inverse_moment

__all__ = [
    "PoissonGammaFit",
    "expected_inverse_frequency",
    "expected_population_uniques",
    "fit_poisson_gamma",
    "fraction_population_uniques",
    "negbin_counts_of_counts_loglik",
    "population_given_sample_pmf",
    "prob_population_unique",
    "sampling_rho",
    "tau_estimates",
]

_CONSTRAINTS = (None, "alpha_beta_1_over_K")
_METHODS = ("ml", "moments")
# χ²₁(0.95) / 2: a profile log-likelihood drop below this keeps α in the 95%
# likelihood-ratio interval.
_LR_HALF_CHI2_95 = 1.920729410347062


# --------------------------------------------------------------------------- #
# validation helpers
# --------------------------------------------------------------------------- #


def _positive(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise InputError(f"{name} must be finite and > 0; check the value passed.")
    return arr


def _sizes(n, N=None) -> tuple[np.ndarray, np.ndarray | None]:
    n = _positive(n, "n (sample size)")
    if N is None:
        return n, None
    N = _positive(N, "N (population size)")
    if np.any(n > N):
        raise InputError("n (sample size) exceeds N (population size); swap or fix them.")
    return n, N


def _out(x: np.ndarray):
    x = np.asarray(x, dtype=float)
    return x[()] if x.ndim == 0 else x


def _counts_arrays(m, m0) -> tuple[np.ndarray, np.ndarray]:
    """Return (j, m_j) with j = 0..J; m is a mapping j -> m_j (j >= 1) or an array m[j-1]."""
    pd = sys.modules.get("pandas")  # a Series exists only once pandas is imported
    # a Series is labelled by j like a mapping; lists and tuples (which also have an
    # .index method) are arrays m[j-1] like an ndarray
    if isinstance(m, Mapping) or (pd is not None and isinstance(m, pd.Series)):
        j = np.asarray(list(m.keys()), dtype=float)
        mj = np.asarray(list(m.values()) if isinstance(m, Mapping) else m.to_numpy(), dtype=float)
    else:
        try:
            mj = np.asarray(m, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InputError(
                "counts of counts must be a mapping/Series j -> m_j or a 1-d array of "
                "numbers with m[j-1] = m_j."
            ) from exc
        if mj.ndim > 1:
            raise InputError(
                f"counts of counts as an array must be 1-d (m[j-1] = m_j), got shape "
                f"{mj.shape}; pass (j, m_j) pairs as a dict, e.g. dict(pairs)."
            )
        mj = mj.ravel()
        j = np.arange(1, mj.size + 1, dtype=float)
    if j.size and (np.any(j < 1) or np.any(j != np.round(j))):
        raise InputError(
            "counts of counts must be indexed by whole j >= 1; pass m_0 (empty cells) as m0."
        )
    if np.any(~np.isfinite(mj)) or np.any(mj < 0):
        raise InputError("counts of counts m_j must be finite and >= 0.")
    m0 = 0.0 if m0 is None else float(m0)
    if not np.isfinite(m0) or m0 < 0:
        raise InputError(
            "m0 (number of empty cells, K - observed cells) must be >= 0; K is too small."
        )
    return np.concatenate([[0.0], j]), np.concatenate([[m0], mj])


# --------------------------------------------------------------------------- #
# likelihood (seed 000 section 2.3 (model); eq. 10 is μ; Bethlehem, Keller,
# Pannekoek 1990)
# --------------------------------------------------------------------------- #

# Stirling series of log Γ(x) (Abramowitz & Stegun 6.1.40): B_2k / (2k (2k-1)),
# k = 1..7; at x >= 10 the next term is below 3e-17.
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


def _stirling_tail(x):
    # ω(x) = log Γ(x) - (x - 1/2) log x + x - log(2π)/2, for x >= 10; the terms
    # kept are those above 1e-17 at the smallest x (two suffice from x = 1000)
    x_min = float(x.min()) if x.size else 10.0
    n_terms = next(
        (i for i in range(1, len(_STIRLING)) if abs(_STIRLING[i]) * x_min ** -(2 * i + 1) < 1e-17),
        len(_STIRLING),
    )
    z = 1.0 / (x * x)
    acc = np.full_like(z, _STIRLING[n_terms - 1])
    for c in reversed(_STIRLING[: n_terms - 1]):
        acc *= z
        acc += c
    return acc / x


def _log_rising_stirling(x, j):
    xj = x + j
    tails = _stirling_tail(xj) - _stirling_tail(x)
    return (x - 0.5) * np.log1p(j / x) + special.xlogy(j, xj) - j + tails


def _by_size(x, j, series, exact):
    # ``series`` where x >= 10 (Stirling's expansions are exact to ~1e-17 there),
    # ``exact`` (SciPy's special functions) below
    x, j = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(j, dtype=float))
    big = x >= 10.0
    if big.all():
        return series(x, j)
    if not big.any():
        return exact(x, j)
    out = np.empty(x.shape)
    out[big] = series(x[big], j[big])
    small = ~big
    out[small] = exact(x[small], j[small])
    return out


def _log_rising(x, j):
    """Return log Γ(x + j) - log Γ(x), the log rising factorial (x)_j; x > 0, j >= 0.

    ``gammaln(x + j) - gammaln(x)`` subtracts two numbers of size x log x: the
    absolute error is about 1e-16 x log x, 1.4 at x = 1e12 with j = 1. With
    Stirling's series (Abramowitz & Stegun 6.1.40)
    log Γ(x) = (x - 1/2) log x - x + log(2π)/2 + ω(x),

        log Γ(x + j) - log Γ(x) = (x - 1/2) log1p(j/x) + j log(x + j) - j
                                  + ω(x + j) - ω(x),

    every term is at most of the size of the result, so the error stays about
    1e-16 j log(x + j) (checked against mpmath for x up to 1e20). Below x = 10
    ``gammaln`` is exact enough and the series is not yet accurate.
    """
    return _by_size(x, j, _log_rising_stirling,
                    lambda x, j: special.gammaln(x + j) - special.gammaln(x))


def _omega_derivative_diff(x, j, order):
    # ω^(order)(x + j) - ω^(order)(x) for ω(x) = Σ c_k x^-(2k-1) (order 1 or 2), each
    # power difference as x^-p expm1(-p log1p(j/x)): no cancellation between the two
    l1p = np.log1p(j / x)
    out = np.zeros_like(x)
    for k, c in enumerate(_STIRLING, start=1):
        p = 2 * k - 1 + order
        # d/dx x^-(2k-1) = -(2k-1) x^-2k;  d2/dx2 = (2k-1)(2k) x^-(2k+1)
        coef = -(2 * k - 1) * c if order == 1 else (2 * k - 1) * (2 * k) * c
        out += coef * x ** -float(p) * np.expm1(-p * l1p)
    return out


def _digamma_diff(x, j):
    """Return ψ(x + j) - ψ(x); x > 0, j >= 0 (the derivative of :func:`_log_rising`).

    ``digamma(x + j) - digamma(x)`` subtracts two numbers of size log x from a
    result of about j/x: relative error 4e-7 at x = 1e8, 1e-3 at x = 1e12. The
    derivative of :func:`_log_rising`'s Stirling form,

        ψ(x + j) - ψ(x) = log1p(j/x) + j / (2 x (x + j)) + ω'(x + j) - ω'(x),

    has no such cancellation (checked against Σ_{i<j} 1/(x + i) for x up to 1e14).
    """
    return _by_size(
        x, j,
        lambda x, j: np.log1p(j / x) + j / (2.0 * x * (x + j)) + _omega_derivative_diff(x, j, 1),
        lambda x, j: special.digamma(x + j) - special.digamma(x))


def _trigamma_diff(x, j):
    """Return ψ'(x + j) - ψ'(x); x > 0, j >= 0 (as :func:`_digamma_diff`, one order up).

    ψ'(x + j) - ψ'(x) = -j / (x (x + j)) - j (2x + j) / (2 x² (x + j)²)
    + ω''(x + j) - ω''(x); checked against -Σ_{i<j} 1/(x + i)².
    """
    return _by_size(
        x, j,
        lambda x, j: (-j / (x * (x + j)) - j * (2.0 * x + j) / (2.0 * x**2 * (x + j) ** 2)
                      + _omega_derivative_diff(x, j, 2)),
        lambda x, j: special.polygamma(1, x + j) - special.polygamma(1, x))


def _negbin_logpmf(j, alpha, nbeta):
    # log P(f = j) with P(f = j) = Γ(α+j)/(Γ(α) j!) (1+nβ)^-α (nβ/(1+nβ))^j;
    # Γ(α+j)/Γ(α) via _log_rising, which stays exact for the large α of
    # nearly-Poisson counts (the ML profile search reaches α ~ 1e12).
    return (
        _log_rising(alpha, j)
        - special.gammaln(j + 1.0)
        - alpha * np.log1p(nbeta)
        + special.xlogy(j, nbeta)
        - j * np.log1p(nbeta)
    )


def negbin_counts_of_counts_loglik(m, alpha, beta, n, m0=0):
    """Log-likelihood Σ_j m_j log P(f = j) of counts of counts under Poisson-gamma.

    f_k ~ NegBin(α, 1/(1 + nβ)) independently over the K cells (seed ``000_…``
    section 2.3; ARCHITECTURE.md), so with m_j = #{k : f_k = j}

    .. math::

        \\ell(\\alpha, \\beta) = \\sum_{j \\ge 0} m_j \\Big[\\log\\Gamma(\\alpha + j)
            - \\log\\Gamma(\\alpha) - \\log j! - \\alpha \\log(1 + n\\beta)
            + j \\log\\frac{n\\beta}{1 + n\\beta}\\Big] .

    This is the exact reference for the PyMC Poisson-gamma model's logp (the
    multinomial coefficient K!/Π m_j! is not included). log Γ(α + j) - log Γ(α) is
    evaluated without cancellation (Stirling's series for α >= 10), so ℓ keeps
    about 1e-16 × Σ_j j m_j log(α + j) absolute accuracy up to α = 1e14 and beyond,
    where the plain ``gammaln`` difference is off by ~1 at α = 1e12.

    Parameters
    ----------
    m : mapping or pandas.Series or array_like
        Counts of counts: a mapping/Series j -> m_j for j >= 1 (e.g.
        ``CellTable.counts_of_counts``), or an array with ``m[j-1] = m_j``.
    alpha, beta : array_like
        Gamma shape and scale, > 0; broadcast against each other.
    n : float
        Sample size (the Poisson rate of cell k is n π_k).
    m0 : float, default 0
        m_0 = K - (number of observed cells), the empty cells of a cell space of
        known size K.

    Returns
    -------
    numpy.ndarray or float
        ℓ with the broadcast shape of (alpha, beta).
    """
    j, mj = _counts_arrays(m, m0)
    alpha = _positive(alpha, "alpha")
    beta = _positive(beta, "beta")
    n, _ = _sizes(n)
    alpha, beta = np.broadcast_arrays(alpha, beta)
    nbeta = (n * beta)[..., None]
    keep = mj > 0  # zero counts contribute nothing; skip their gammaln calls
    terms = _negbin_logpmf(j[keep], alpha[..., None], nbeta)
    return _out(terms @ mj[keep])


def _score(alpha, beta, n, j, mj):
    """Gradient of :func:`negbin_counts_of_counts_loglik` in (α, β).

    With K = Σ_j m_j (m_0 included) and S = Σ_j j m_j, differentiating ℓ term by
    term gives ∂ℓ/∂α = Σ_j m_j [ψ(α + j) - ψ(α)] - K log(1 + nβ) and
    ∂ℓ/∂β = S/β - (αK + S) n / (1 + nβ).
    """
    K, S = mj.sum(), (j * mj).sum()
    d_alpha = np.sum(mj * _digamma_diff(alpha, j)) - K * np.log1p(
        n * beta
    )
    d_beta = S / beta - (alpha * K + S) * n / (1.0 + n * beta)
    return d_alpha, d_beta


def _hessian(alpha, beta, n, j, mj):
    """Hessian of :func:`negbin_counts_of_counts_loglik` in (α, β) (:func:`_score`'s derivative).

    ∂²ℓ/∂α² = Σ_j m_j [ψ'(α + j) - ψ'(α)], ∂²ℓ/∂α∂β = -K n / (1 + nβ) and
    ∂²ℓ/∂β² = -S/β² + (αK + S) n² / (1 + nβ)², with K and S as in :func:`_score`.
    """
    K, S = mj.sum(), (j * mj).sum()
    h_aa = np.sum(mj * _trigamma_diff(alpha, j))
    h_ab = -K * n / (1.0 + n * beta)
    h_bb = -S / beta**2 + (alpha * K + S) * n**2 / (1.0 + n * beta) ** 2
    return np.array([[h_aa, h_ab], [h_ab, h_bb]])


# --------------------------------------------------------------------------- #
# fitting
# --------------------------------------------------------------------------- #


@dataclass(frozen=True)
class PoissonGammaFit:
    """Estimated Poisson-gamma hyperparameters (seed ``000_…`` section 2.3).

    Attributes
    ----------
    alpha, beta : float
        Gamma shape and scale of the cell probabilities π_k.
    n, N, K : float
        Sample size, population size and size of the cell space.
    method : {"ml", "moments"}
        How (α, β) were estimated.
    constraint : {None, "alpha_beta_1_over_K"}
        Whether αβ = 1/K was imposed.
    loglik : float
        :func:`negbin_counts_of_counts_loglik` at (α, β), with m_0 = K - cells.
    converged : bool
        Whether the optimiser reported success with an interior optimum (always
        True for moments).
    cov : numpy.ndarray or None
        Asymptotic covariance of (α, β) from the observed information (ML only).
    n_cells_observed : int
        Number of cells with f_k >= 1.
    message : str
        Optimiser message or a note. For ML it says when the profile
        log-likelihood at the search's upper end (α̂_mom e^15) is less than
        χ²₁(0.95)/2 below the maximum: the counts are then consistent with the
        Poisson limit α -> ∞, and α (and its SE) only locate a flat maximum.
    """

    alpha: float
    beta: float
    n: float
    N: float
    K: float
    method: str
    constraint: str | None
    loglik: float
    converged: bool
    cov: np.ndarray | None = field(default=None, compare=False, repr=False)
    n_cells_observed: int = 0
    message: str = ""

    @property
    def se(self) -> tuple[float, float]:
        """Standard errors of (α, β) (NaN when no covariance is available)."""
        if self.cov is None:
            return (float("nan"), float("nan"))
        return (float(np.sqrt(self.cov[0, 0])), float(np.sqrt(self.cov[1, 1])))

    @property
    def rho(self) -> float:
        """ρ = (1 + nβ)/(1 + Nβ), success probability of F - f | f."""
        return float(sampling_rho(self.beta, self.n, self.N))

    @property
    def expected_population_uniques(self) -> float:
        """μ = K α Nβ (1 + Nβ)^-(1+α) (seed ``000_…`` eq. 10, general form)."""
        return float(expected_population_uniques(self.alpha, self.beta, self.N, K=self.K))

    @property
    def fraction_population_uniques(self) -> float:
        """f_u = μ / N (seed ``000_…`` eq. 10)."""
        return self.expected_population_uniques / self.N

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python summary (JSON-serialisable)."""
        se_a, se_b = self.se
        return {
            "alpha": float(self.alpha),
            "beta": float(self.beta),
            "se_alpha": se_a,
            "se_beta": se_b,
            "n": float(self.n),
            "N": float(self.N),
            "K": float(self.K),
            "method": self.method,
            "constraint": self.constraint,
            "loglik": float(self.loglik),
            "converged": bool(self.converged),
            "n_cells_observed": int(self.n_cells_observed),
            "expected_population_uniques": self.expected_population_uniques,
            "fraction_population_uniques": self.fraction_population_uniques,
        }


def fit_poisson_gamma(
    counts_of_counts,
    n,
    N,
    K,
    method: Literal["ml", "moments"] = "ml",
    constraint: Literal["alpha_beta_1_over_K"] | None = None,
) -> PoissonGammaFit:
    """Estimate (α, β) of the Poisson-gamma model from counts of counts.

    Moments (Bethlehem, Keller, Pannekoek 1990; seed ``000_…`` section 2.3): with
    f̄ and s² the mean and variance of f_k over all K cells (empty ones included),
    E f = αnβ and Var f = αnβ(1 + nβ) give nβ̂ = s²/f̄ - 1 and α̂ = f̄/(nβ̂).

    Maximum likelihood: the β-score vanishes at nβ = f̄/α for every α (setting
    ∂ℓ/∂β of :func:`_score` to 0 gives S(1 + nβ) = (αK + S)nβ, S = K f̄), so ℓ is
    maximised over log α alone on the profile β = f̄/(nα). With
    ``constraint="alpha_beta_1_over_K"`` (seed ``000_…``: α = 1/(Kβ), so that the
    cell probabilities average 1/K) the curve is β = 1/(Kα) instead; the two
    coincide when n = Σ j m_j. The covariance comes from the observed information.

    Parameters
    ----------
    counts_of_counts : mapping or pandas.Series or array_like
        The counts of counts j -> m_j for j >= 1 (e.g. ``CellTable.counts_of_counts``), or a 1-d
        array/list/tuple with ``m[j-1] = m_j``.
    n, N : float
        Sample and population sizes (n <= N).
    K : float
        Size of the cell space; m_0 = K - Σ_j m_j.
    method : {"ml", "moments"}
    constraint : {None, "alpha_beta_1_over_K"}

    Returns
    -------
    PoissonGammaFit
        Its ``message`` notes when the ML profile is flat toward the Poisson limit
        (α not identified from above).

    Raises
    ------
    InputError
        On bad sizes, K below the number of observed cells, or unknown options.
    ModelError
        If the counts show no over-dispersion (s² <= f̄): the ML estimate is then the
        Poisson limit (β -> 0, α -> ∞). Since s² - f̄ = Σ_j j(j-1) m_j / K - f̄², a
        sample without repeated cells (every cell unique) never shows it, whatever K;
        the message names the routes that work there (the posterior, the log-linear
        Poisson plug-in, chosen α, β).
    """
    if method not in _METHODS:
        raise InputError(f"unknown method {method!r}; use one of {_METHODS}.")
    if constraint not in _CONSTRAINTS:
        raise InputError(f"unknown constraint {constraint!r}; use one of {_CONSTRAINTS}.")
    n_arr, N_arr = _sizes(n, N)
    n, N = float(n_arr), float(N_arr)
    K = float(_positive(K, "K (size of the cell space)"))
    j_obs, m_obs = _counts_arrays(counts_of_counts, 0)
    cells = float(m_obs.sum())
    if cells > K:
        raise InputError(
            f"K = {K:g} is smaller than the {cells:g} observed cells; pass the size of "
            "the full cell space (product of the key variables' numbers of levels)."
        )
    j, mj = _counts_arrays(counts_of_counts, K - cells)
    S = float((j * mj).sum())
    mean = S / K
    var = float((mj * (j - mean) ** 2).sum()) / K
    if var <= mean:
        # var - mean = (sum_j j(j-1) m_j)/K - (S/K)^2: with no repeated cell it is below 0
        # for every K (audit CC2, finding 4), else it turns positive beyond S^2/pairs
        pairs = float((mj * j * (j - 1.0)).sum())
        if pairs == 0:
            why = "every sample cell is unique, and then no K gives over-dispersion"
        else:
            why = (
                f"it would need K > S^2 / sum_j j(j-1) m_j = {S * S / pairs:.6g}, but K is the "
                "size of the cell space (the product of the keys' numbers of levels), not a "
                "setting: pass a larger one only if K understated it"
            )
        raise ModelError(
            f"the sample counts show no over-dispersion over the K = {K:.6g} cells (variance "
            f"{var:.4g} <= mean {mean:.4g}): the ML estimate is the Poisson limit (alpha -> "
            f"inf, beta -> 0), which this fit cannot return; {why}. Use the posterior, whose "
            "prior keeps alpha finite: sdcbayes.risk.posterior_assess.assess_posterior(md, "
            "model='poisson-gamma') or `sdcbayes assess --model poisson-gamma`; or the "
            "Poisson log-linear plug-in sdcbayes.risk.loglinear.fit_loglinear(md, "
            "interactions='main'); or pass chosen alpha, beta to prob_population_unique, "
            "expected_inverse_frequency and tau_estimates."
        )
    slope = mean / n if constraint is None else 1.0 / K  # alpha * beta on the profile

    if method == "moments":
        nbeta = var / mean - 1.0
        beta = nbeta / n
        alpha = slope / beta
        return PoissonGammaFit(
            alpha=alpha,
            beta=beta,
            n=n,
            N=N,
            K=K,
            method="moments",
            constraint=constraint,
            loglik=float(negbin_counts_of_counts_loglik(mj[1:], alpha, beta, n, m0=mj[0]))
            if np.array_equal(j[1:], np.arange(1, j.size))
            else float(np.dot(mj, _negbin_logpmf(j, alpha, n * beta))),
            converged=True,
            n_cells_observed=int(cells),
            message="moment estimates",
        )

    keep = mj > 0
    jk, mk = j[keep], mj[keep]

    def negprof(log_alpha: float) -> float:
        a = np.exp(log_alpha)
        return -float(np.dot(mk, _negbin_logpmf(jk, a, n * slope / a)))

    # Start from the moment estimate (when sensible) and bracket generously.
    a_mom = slope * n / (var / mean - 1.0)
    lo, hi = np.log(a_mom) - 15.0, np.log(a_mom) + 15.0
    # A grid of log alpha first (61 cheap evaluations, step 0.5), then Brent within the
    # best point's neighbours: on nearly-Poisson counts the profile is flat to ~5e-9
    # beyond its maximum, and Brent over the whole bracket lands wherever its first
    # golden-section points fall in that plateau (scipy 1.17 lands at 9e9 for a maximum
    # at 2.4e5), so the bracket must already hold the maximum.
    grid = np.linspace(lo, hi, 61)
    best = int(np.argmin([negprof(x) for x in grid]))
    res = optimize.minimize_scalar(
        negprof, bounds=(grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]),
        method="bounded", options={"xatol": 1e-10, "maxiter": 500}
    )
    log_a = float(res.x)
    alpha = float(np.exp(log_a))
    beta = slope / alpha
    interior = (log_a - lo > 1e-3) and (hi - log_a > 1e-3)
    converged = bool(res.success) and interior
    message = str(getattr(res, "message", ""))
    # Nearly-Poisson counts: the profile rises to a maximum and then stays flat as
    # α -> ∞ (β -> 0), so α is not identified from above even where the maximum is
    # interior. Within half the χ²₁ 95% point the likelihood interval is unbounded.
    flat = negprof(hi) - float(res.fun)
    if flat < _LR_HALF_CHI2_95:
        message += (
            f"; profile log-likelihood flat toward the Poisson limit (alpha = {np.exp(hi):.3g} "
            f"is only {flat:.2g} below the maximum): alpha is not identified from above "
            "(95% likelihood interval unbounded) and its SE is not meaningful"
        )

    H = _hessian(alpha, beta, n, j, mj)
    cov: np.ndarray | None
    if constraint is None:
        info = -H
        cov = np.linalg.inv(info) if np.all(np.linalg.eigvalsh(info) > 0) else None
    else:
        # Along β = 1/(Kα): d²ℓ/dα² = H_aa + 2 H_ab β' + H_bb β'² + ℓ_β β'' (chain
        # rule, β' = -β/α, β'' = 2β/α²); cov of (α, β) by the delta method.
        db = -beta / alpha
        d2b = 2.0 * beta / alpha**2
        _, l_b = _score(alpha, beta, n, j, mj)
        curv = H[0, 0] + 2 * H[0, 1] * db + H[1, 1] * db**2 + l_b * d2b
        if curv < 0:
            var_a = -1.0 / curv
            cov = var_a * np.array([[1.0, db], [db, db**2]])
        else:
            cov = None
    return PoissonGammaFit(
        alpha=alpha,
        beta=beta,
        n=n,
        N=N,
        K=K,
        method="ml",
        constraint=constraint,
        loglik=-float(res.fun),
        converged=converged,
        cov=cov,
        n_cells_observed=int(cells),
        message=message,
    )


# --------------------------------------------------------------------------- #
# conditionals given (alpha, beta) (Bethlehem, Keller & Pannekoek 1990;
# ARCHITECTURE.md; the model of seed 000 section 2.3, which does not print them)
# --------------------------------------------------------------------------- #


def sampling_rho(beta, n, N):
    """ρ = (1 + nβ)/(1 + Nβ): F_k - f_k | f_k ~ NegBin(α + f_k, ρ).

    Bethlehem, Keller & Pannekoek (1990); ARCHITECTURE.md "Poisson-gamma cell
    frequencies" (derivation in the module docstring).
    """
    beta = _positive(beta, "beta")
    n, N = _sizes(n, N)
    # exp(log1p - log1p) keeps ρ accurate when nβ and Nβ are tiny.
    return _out(np.exp(np.log1p(n * beta) - np.log1p(N * beta)))


def prob_population_unique(alpha, beta, n, N):
    """P(F_k = 1 | f_k = 1) = ρ^(α+1), ρ = (1 + nβ)/(1 + Nβ) (ARCHITECTURE.md).

    The NegBin(α + 1, ρ) probability of no further population units in a sample
    unique's cell (the conditional of Bethlehem, Keller & Pannekoek 1990, at 0).

    Parameters
    ----------
    alpha, beta : array_like
        Hyperparameters (> 0) of the Gamma(shape α, scale β) prior of the cell
        probabilities; broadcast together (e.g. posterior draws of shape
        ``(chain, draw)``).
    n, N : float or array_like
        Sample and population sizes, ``0 < n <= N``.

    Returns
    -------
    numpy.ndarray or float
        P(F_k = 1 | f_k = 1), broadcast over the inputs.
    """
    alpha = _positive(alpha, "alpha")
    beta = _positive(beta, "beta")
    n, N = _sizes(n, N)
    return _out(np.exp((alpha + 1.0) * (np.log1p(n * beta) - np.log1p(N * beta))))


def expected_inverse_frequency(f, alpha, beta, n, N):
    """E(1/F_k | f_k) = ρ^r/f · ₂F₁(r, f; f + 1; 1 - ρ), r = α + f (ARCHITECTURE.md).

    The inverse moment of the Bethlehem, Keller & Pannekoek (1990) conditional
    F_k - f_k | f_k ~ NegBin(r, ρ). Evaluated by
    :func:`sdcbayes.risk.individual.negbin_inverse_moment` (seed ``004_…`` eqs. (1)
    and (6), there with r = f; here the Poisson-gamma size r = α + f and
    ρ = (1 + nβ)/(1 + Nβ)).

    Parameters
    ----------
    f : array_like of int
        Sample frequencies (>= 1).
    alpha, beta : array_like
        Hyperparameters, broadcast against ``f`` (e.g. ``(chain, draw, 1)``).
    n, N : float
        Sample and population sizes.

    Returns
    -------
    numpy.ndarray or float
        E(1/F_k | f_k), the expected inverse population frequency of a cell with
        sample frequency ``f``, broadcast over the inputs (a float for scalar inputs).
    """
    alpha = _positive(alpha, "alpha")
    rho = np.asarray(sampling_rho(beta, n, N))
    f = np.asarray(f, dtype=float)
    return negbin_inverse_moment(f, alpha + f, rho)


def expected_population_uniques(alpha, beta, N, K=None):
    r"""Expected number of population uniques μ = K P(F = 1) (seed ``000_…`` eq. 10).

    .. math::

        \mu = K \alpha N\beta (1 + N\beta)^{-(1+\alpha)}
             = N (1 + N\beta)^{-(1+\alpha)} \quad (\alpha\beta = 1/K).

    Parameters
    ----------
    alpha, beta : array_like
        Hyperparameters.
    N : float
        Population size.
    K : float, optional
        Size of the cell space. Without it the seed's form N (1 + Nβ)^-(1+α) is
        used, which assumes αβ = 1/K; with it the general K α Nβ (1 + Nβ)^-(1+α).

    Returns
    -------
    numpy.ndarray or float
        μ, the expected number of population uniques, broadcast over the inputs
        (a float for scalar inputs).
    """
    _, N = _sizes(1.0, N)
    return _out(N * _uniques_fraction(alpha, beta, N, K))


def fraction_population_uniques(alpha, beta, N, K=None):
    r"""Fraction of population uniques f_u = μ/N (seed ``000_…`` eq. 10 divided by N).

    .. math::

        f_u = K \alpha\beta (1 + N\beta)^{-(1+\alpha)}
            = (1 + N\beta)^{-(1+\alpha)} \quad (\alpha\beta = 1/K).

    Parameters
    ----------
    alpha, beta : array_like
        Hyperparameters.
    N : float
        Population size.
    K : float, optional
        Size of the cell space. Without it the seed's form
        :math:`(1 + N\beta)^{-(1+\alpha)}` is used, which holds only under the seed's
        tie :math:`\alpha\beta = 1/K` (a fit with ``constraint="alpha_beta_1_over_K"``);
        for (α, β) estimated freely, such as posterior draws of the untied model, give
        K (α = 0.7, β = 2e-4, N = 60 000, K = 5 000: 0.008941 with K, 0.012773 without),
        as :attr:`PoissonGammaFit.fraction_population_uniques` does.

    Returns
    -------
    numpy.ndarray or float
        f_u, broadcast over the inputs (a float for scalar inputs).
    """
    _, N = _sizes(1.0, N)
    return _out(_uniques_fraction(alpha, beta, N, K))


def _uniques_fraction(alpha, beta, N: np.ndarray, K) -> np.ndarray:
    """μ/N of seed ``000_…`` eq. 10: K αβ (1 + Nβ)^-(1+α), or its tied form without K."""
    alpha = _positive(alpha, "alpha")
    beta = _positive(beta, "beta")
    scale = 1.0 if K is None else _positive(K, "K") * alpha * beta
    return scale * np.exp(-(1.0 + alpha) * np.log1p(N * beta))


def tau_estimates(m1, alpha, beta, n, N):
    """Plug-in τ1 and τ2 from the number of sample uniques m_1 (ARCHITECTURE.md, Notation).

    τ1 = Σ_k I(f_k = 1, F_k = 1) is estimated by m_1 · P(F = 1 | f = 1) = m_1 ρ^(α+1),
    τ2 = Σ_k I(f_k = 1)/F_k by m_1 · E(1/F | f = 1).

    Parameters
    ----------
    m1 : array_like
        Number of sample uniques (a finite count >= 0).
    alpha, beta : array_like
        Hyperparameters (> 0) of the Gamma(shape α, scale β) prior of the cell
        probabilities, e.g. point estimates or posterior draws.
    n, N : float or array_like
        Sample and population sizes, ``0 < n <= N``.

    Returns
    -------
    tuple of (numpy.ndarray or float)
        (τ1, τ2), broadcast over the inputs.
    """
    m1 = np.asarray(m1, dtype=float)
    if np.any(m1 < 0) or not np.all(np.isfinite(m1)):
        raise InputError("m1 (number of sample uniques) must be a finite count >= 0.")
    p1 = np.asarray(prob_population_unique(alpha, beta, n, N))
    e1 = np.asarray(expected_inverse_frequency(1.0, alpha, beta, n, N))
    return _out(m1 * p1), _out(m1 * e1)


def population_given_sample_pmf(f, alpha, beta, n, N, max_F):
    """P(F_k = h | f_k), h = 0..max_F; F_k - f_k | f_k ~ NegBin(α + f_k, ρ) (ARCHITECTURE.md).

    The conditional of Bethlehem, Keller & Pannekoek (1990), tabulated.

    Parameters
    ----------
    f : array_like
        Sample frequencies (>= 0).
    alpha, beta : array_like
        Hyperparameters, broadcast against ``f``.
    n, N : float
        Sample and population sizes.
    max_F : int
        Largest population frequency tabulated.

    Returns
    -------
    numpy.ndarray
        Shape ``broadcast(f, alpha, beta) + (max_F + 1,)``; entry h is P(F = h | f)
        (zero for h < f). Mass beyond max_F is not included.
    """
    f = np.asarray(f, dtype=float)
    if np.any(f < 0) or np.any(f != np.round(f)):
        raise InputError("f must hold whole sample frequencies >= 0.")
    if int(max_F) != max_F or max_F < 0:
        raise InputError("max_F must be a whole number >= 0.")
    alpha = _positive(alpha, "alpha")
    beta = _positive(beta, "beta")
    n, N = _sizes(n, N)
    # log ρ and log(1 - ρ) = log((N - n)β) - log1p(Nβ) from their own pieces: 1 - ρ
    # formed from a rounded ρ keeps only 1e-16/(1 - ρ) relative accuracy (tiny β)
    log1p_Nb = np.log1p(N * beta)
    log_rho = np.log1p(n * beta) - log1p_Nb
    q_num = (N - n) * beta  # 1 - ρ = q_num / (1 + Nβ); 0 when n = N
    f, alpha, log_rho, q_num, log1p_Nb = np.broadcast_arrays(f, alpha, log_rho, q_num, log1p_Nb)
    h = np.arange(int(max_F) + 1, dtype=float)
    x = h - f[..., None]
    r = (alpha + f)[..., None]
    xs = np.maximum(x, 0.0)
    logp = (
        _log_rising(r, xs)
        - special.gammaln(xs + 1.0)
        + r * log_rho[..., None]
        + special.xlogy(xs, q_num[..., None])
        - xs * log1p_Nb[..., None]
    )
    return np.where(x >= 0, np.exp(logp), 0.0)
