r"""Zaslavsky-Horton beta-binomial domain model: closed forms for given (alpha, beta).

Seed ``003_…`` (Zaslavsky & Horton 1998), Section 2; DESIGN.md "Beta-binomial
domain counts" and "Decisions". Domain ``i`` has known population size ``N_i``
and sample size ``n_i``; a class cuts across the domains, with sample count
``y_i`` (observed) and population count ``Y_i`` (unknown) in domain ``i``:

.. math::

    \theta_i \sim \mathrm{Beta}(\alpha, \beta),\quad
    y_i \mid \theta_i \sim \mathrm{Bin}(n_i, \theta_i),\quad
    Y_i - y_i \mid \theta_i \sim \mathrm{Bin}(N_i - n_i, \theta_i),

so that, given :math:`(\alpha, \beta)`,
:math:`Y_i - y_i \mid y_i \sim \mathrm{BetaBin}(N_i - n_i, \alpha + y_i, \beta + n_i - y_i)`
(seed 003, the unnumbered beta-binomial density of Section 2) and, marginally,
:math:`y_i \sim \mathrm{BetaBin}(n_i, \alpha, \beta)`.

Shape rules (all functions): the per-domain arrays ``y, n, N`` and the
hyperparameters ``alpha, beta`` broadcast together by NumPy rules to a *batch
shape*. Domains conventionally sit on the last axis; to evaluate for posterior
draws pass ``alpha[..., None]`` and ``beta[..., None]`` (e.g. shape
``(chain, draw, 1)``) against domain arrays of shape ``(domain,)``; the result
then has shape ``(chain, draw, domain)``. :func:`beta_binomial_loglik` sums
over the last (domain) axis instead.

Imports NumPy, SciPy and pandas only -- never PyMC.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special

from sdcbayes.exceptions import InputError
from sdcbayes.risk.losses import parse_loss
from sdcbayes.risk.poisson_gamma import _digamma_diff, _log_rising

__all__ = [
    "BetaBinomialFit",
    "beta_binomial_loglik",
    "beta_binomial_logpmf",
    "configuration_table",
    "decision_table",
    "expected_loss",
    "fit_beta_binomial",
    "posterior_mean_Y",
    "posterior_predictive_pmf",
    "publication_order",
]

# Elements per block when enumerating the support: bounds memory at ~32 MiB per
# float64 temporary whatever the batch size.
_BLOCK_ELEMENTS = 1 << 22


# --- validation -------------------------------------------------------------


def _counts(y, n, N=None):
    """Validate and broadcast the count arrays; returns float arrays."""
    y = np.asarray(y, dtype=float)
    n = np.asarray(n, dtype=float)
    arrays = [y, n] if N is None else [y, n, np.asarray(N, dtype=float)]
    for name, a in zip(("y", "n", "N"), arrays, strict=False):
        if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a != np.round(a)):
            raise InputError(f"{name} must hold non-negative whole numbers (counts); fix the input")
    if np.any(y > n):
        raise InputError("y (sample count in the class) exceeds n (domain sample size) somewhere")
    if N is not None and np.any(arrays[2] < n):
        raise InputError("N (domain population size) is below n (domain sample size) somewhere")
    return np.broadcast_arrays(*arrays)


def _hyper(alpha, beta):
    alpha = np.asarray(alpha, dtype=float)
    beta = np.asarray(beta, dtype=float)
    if not (np.all(alpha > 0) and np.all(beta > 0)) or not (
        np.all(np.isfinite(alpha)) and np.all(np.isfinite(beta))
    ):
        raise InputError("alpha and beta must be positive finite numbers (Beta prior parameters)")
    return alpha, beta


# --- the beta-binomial distribution ----------------------------------------


def beta_binomial_logpmf(k, m, a, b):
    r"""Log pmf of :math:`\mathrm{BetaBin}(m, a, b)` at ``k``.

    Seed 003, Section 2:
    :math:`P(k) = \binom{m}{k} B(k + a, m - k + b) / B(a, b)`.
    Returns ``-inf`` where ``k < 0`` or ``k > m``. Arguments broadcast.

    The beta-function ratio is evaluated as rising factorials,
    :math:`B(k+a, m-k+b)/B(a, b) = (a)_k (b)_{m-k} / (a+b)_m`, each log taken
    without cancellation (Stirling's series for large arguments). The usual
    ``betaln(k+a, m-k+b) - betaln(a, b)`` subtracts numbers of size
    :math:`(a+b)\log(a+b)`: at a + b = 4e12 it is off by 0.017, at 4e14 by 3.8
    (a pmf off by a factor of 46). Here the error stays about 1e-16 m log(a + b)
    absolute, which keeps the binomial limit (a + b -> ∞) and
    :func:`fit_beta_binomial`'s ``at_bound`` test exact to rounding.
    """
    k, m, a, b = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (k, m, a, b)))
    inside = (k >= 0) & (k <= m)
    kk = np.where(inside, k, 0.0)  # keep gammaln finite off the support
    return np.where(inside, _betabin_logpmf_core(kk, m, a, b), -np.inf)


# Below this m and a + b, betaln/gammaln differences lose at most ~1e-11 (absolute,
# in the log pmf) and are 3-5x faster than the rearrangements.
_PLAIN_MAX = 1e4


def _betabin_logpmf_core(k, m, a, b):
    # log BetaBin(k; m, a, b) for 0 <= k <= m. The textbook
    # log C(m, k) + betaln(k+a, m-k+b) - betaln(a, b) carries an absolute error of
    # ~1e-16 x (the size of its largest term, up to (a+b+m) log(a+b+m)), so beyond
    # _PLAIN_MAX the exact rearrangement with the smallest terms is used
    # (R(x, j) = log Γ(x + j) - log Γ(x), from _log_rising; sizes up to log factors):
    #   A: log C(m, k) + R(a, k) + R(b, m-k) - R(a+b, m)               ~ m
    #   B: R(m-k+1, k) - log k! + R(a, k) + R(b, a) - R(b+m-k, a+k)    ~ k + a
    #   C: B with (k, a) and (m-k, b) swapped                          ~ m - k + b
    # A suits a + b large against m (the binomial limit), B and C a large population m
    # with a (or b) small, where A's log C(m, k) and R(a+b, m) are ~m log m each.
    def plain(k, m, a, b):
        return (special.gammaln(m + 1.0) - special.gammaln(k + 1.0)
                - special.gammaln(m - k + 1.0) + special.betaln(k + a, m - k + b)
                - special.betaln(a, b))

    def form_a(k, m, a, b):
        return (special.gammaln(m + 1.0) - special.gammaln(k + 1.0)
                - special.gammaln(m - k + 1.0) + _log_rising(a, k) + _log_rising(b, m - k)
                - _log_rising(a + b, m))

    def form_b(k, m, a, b):
        return (_log_rising(m - k + 1.0, k) - special.gammaln(k + 1.0) + _log_rising(a, k)
                + _log_rising(b, a) - _log_rising(b + m - k, a + k))

    is_plain = np.maximum(m, a + b) <= _PLAIN_MAX
    if is_plain.all():  # the common case: no selection overhead
        return plain(k, m, a, b)
    shape = k.shape
    k, m, a, b = (np.ravel(x) for x in (k, m, a, b))
    is_plain = is_plain.ravel()
    out = np.empty(k.shape)
    out[is_plain] = plain(k[is_plain], m[is_plain], a[is_plain], b[is_plain])
    rest = np.flatnonzero(~is_plain)
    k, m, a, b = k[rest], m[rest], a[rest], b[rest]
    form = np.argmin(np.stack([m, k + a, m - k + b]), axis=0)
    for code, compute, args in ((0, form_a, (k, m, a, b)), (1, form_b, (k, m, a, b)),
                                (2, form_b, (m - k, m, b, a))):
        sel = form == code
        if sel.any():
            out[rest[sel]] = compute(*(x[sel] for x in args))
    return out.reshape(shape)


def beta_binomial_loglik(y, n, alpha, beta):
    r"""Marginal log-likelihood :math:`\sum_i \log \mathrm{BetaBin}(y_i; n_i, \alpha, \beta)`.

    Seed 003, Section 2 (integrating :math:`\theta_i` out of
    :math:`y_i \sim \mathrm{Bin}(n_i, \theta_i)`). Exact (``gammaln``), including
    the binomial coefficients, so it equals the sum of
    ``scipy.stats.betabinom.logpmf`` -- the reference the PyMC model is checked
    against.

    Parameters
    ----------
    y, n : array_like, shape ``(..., domain)``
        Sample counts in the class and domain sample sizes.
    alpha, beta : array_like
        Any shape ``A`` broadcasting against each other (e.g. ``(chain, draw)``).

    Returns
    -------
    ndarray, shape ``broadcast(A, y.shape[:-1])``
        One log-likelihood per ``(alpha, beta)``, summed over domains.
    """
    y, n = _counts(y, n)
    alpha, beta = _hyper(alpha, beta)
    if y.ndim == 0:
        y, n = y[None], n[None]
    a = np.expand_dims(alpha, -1)
    b = np.expand_dims(beta, -1)
    return np.sum(beta_binomial_logpmf(y, n, a, b), axis=-1)


# --- posterior predictive of Y given y ---------------------------------------


def posterior_predictive_pmf(y, n, N, alpha, beta):
    r"""Posterior predictive pmf of the cell population count ``Y`` given ``y``.

    Seed 003, Section 2: :math:`Y - y \mid y \sim \mathrm{BetaBin}(N - n,\ \alpha + y,\
    \beta + n - y)`, enumerated on a *padded* support: ``t = 0, ..., M`` with
    ``M = max(N - n)`` over the batch; entries with ``t > N_i - n_i`` are 0.

    Parameters
    ----------
    y, n, N : array_like
        Sample count in the class, domain sample size, domain population size.
    alpha, beta : array_like
        Beta prior parameters; broadcast with ``y, n, N`` (module shape rules).

    Returns
    -------
    support : ndarray, shape ``batch + (M + 1,)``
        The values of ``Y`` (``y + t``), padded rows included.
    pmf : ndarray, shape ``batch + (M + 1,)``
        :math:`P(Y \mid y)`; each row sums to 1.
    """
    y, n, N = _counts(y, n, N)
    alpha, beta = _hyper(alpha, beta)
    y, n, N, alpha, beta = np.broadcast_arrays(y, n, N, alpha, beta)
    m = N - n
    M = int(m.max()) if m.size else 0
    t = np.arange(M + 1, dtype=float)
    ex = (..., None)
    logp = beta_binomial_logpmf(t, m[ex], (alpha + y)[ex], (beta + n - y)[ex])
    return y[ex] + t, np.exp(logp)


def posterior_mean_Y(y, n, N, alpha, beta):
    r"""Closed-form :math:`E(Y \mid y) = y + (N - n)(\alpha + y)/(\alpha + \beta + n)`.

    Seed 003, Section 2 (last sentence before the decision rule).
    """
    y, n, N = _counts(y, n, N)
    alpha, beta = _hyper(alpha, beta)
    return y + (N - n) * (alpha + y) / (alpha + beta + n)


def expected_loss(loss, y, n, N, alpha, beta):
    r"""Posterior risk :math:`R = E[L(y, Y, n, N) \mid y]` by exact enumeration.

    Seed 003, Section 2, the risk of decision ``d``:
    :math:`R_{di} = \sum_{Y=y_i}^{y_i + N_i - n_i} L_d(y_i, Y, n_i, N_i)\, P(Y \mid y_i)`.

    The support is walked in blocks (a Python loop over support values, never
    over domains) so memory stays bounded for large batches of
    ``(alpha, beta)`` draws x domains; a loss with ``depends_on_Y=False`` is
    evaluated directly.

    Parameters
    ----------
    loss : Loss or str
        A :class:`~sdcbayes.risk.losses.Loss` or a :func:`~sdcbayes.risk.losses.parse_loss` spec.
        Its ``__call__`` must broadcast.
    y, n, N, alpha, beta : array_like
        Broadcast together (module shape rules).

    Returns
    -------
    ndarray, the broadcast batch shape
        Average over draws yourself (e.g. ``.mean(axis=(0, 1))``) to integrate
        over the posterior of ``(alpha, beta)``.
    """
    loss = parse_loss(loss)
    y, n, N = _counts(y, n, N)
    alpha, beta = _hyper(alpha, beta)
    y, n, N, alpha, beta = np.broadcast_arrays(y, n, N, alpha, beta)
    if not loss.depends_on_Y:
        return np.array(loss(y, y, n, N), dtype=float)
    m = N - n
    M = int(m.max()) if m.size else 0
    a_post = alpha + y
    b_post = beta + n - y
    # Small sizes (the usual case): normalising constant and log m! once per batch
    # element, not per support value; beyond _PLAIN_MAX the betaln difference loses
    # digits and the full rearranged log pmf is evaluated per support value.
    plain = max(M, float(np.max(a_post + b_post, initial=0.0))) <= _PLAIN_MAX
    log_norm = special.gammaln(m + 1.0) - special.betaln(a_post, b_post) if plain else None
    ex = (..., None)
    block = max(1, _BLOCK_ELEMENTS // max(1, y.size))
    total = np.zeros(y.shape, dtype=float)
    for start in range(0, M + 1, block):
        t = np.arange(start, min(M + 1, start + block), dtype=float)
        inside = t <= m[ex]
        tt = np.where(inside, t, 0.0)
        if plain:
            logp = (
                log_norm[ex]
                - special.gammaln(tt + 1.0)
                - special.gammaln(m[ex] - tt + 1.0)
                + special.betaln(tt + a_post[ex], m[ex] - tt + b_post[ex])
            )
        else:
            logp = _betabin_logpmf_core(*np.broadcast_arrays(tt, m[ex], a_post[ex], b_post[ex]))
        p = np.where(inside, np.exp(logp), 0.0)
        L = loss(y[ex], y[ex] + t, n[ex], N[ex])
        # Off-support Y may make a user loss non-finite; it carries no mass.
        total += np.sum(np.where(inside, L * p, 0.0), axis=-1)
    return total


# --- fitting (alpha, beta) from the marginal likelihood -----------------------


@dataclass(frozen=True)
class BetaBinomialFit:
    """Estimates of the Beta prior of the domain class proportions.

    Attributes
    ----------
    alpha, beta : float
        The Beta(alpha, beta) parameters.
    mean : float
        ``alpha / (alpha + beta)``, the mean class proportion.
    concentration : float
        ``alpha + beta``; the intra-domain correlation is ``1 / (1 + concentration)``.
    method : str
        ``"ml"`` or ``"moments"``.
    loglik : float
        Marginal log-likelihood (:func:`beta_binomial_loglik`) at the estimate.
    n_domains : int
        Number of domains used.
    converged : bool
        Optimiser success (ML); False for moments when the data show no
        overdispersion and the concentration was capped.
    at_bound : bool
        True when there is no detectable overdispersion (the binomial limit): the
        concentration hit its cap, or (ML) the fit beats the binomial at the pooled
        proportion by less than :data:`FLAT_LOGLIK`, so that alpha and beta are where
        the search stopped on a flat likelihood (e.g. alpha 6e6), not estimates.
    """

    alpha: float
    beta: float
    mean: float
    concentration: float
    method: str
    loglik: float
    n_domains: int
    converged: bool
    at_bound: bool


# Cap on alpha + beta: beyond it the beta-binomial is numerically the binomial.
_MAX_CONCENTRATION = 1e8
#: An ML fit whose log-likelihood beats the binomial limit by less than this has found
#: no overdispersion (BetaBinomialFit.at_bound).
FLAT_LOGLIK = 1e-3
_MIN_CONCENTRATION = 1e-6


def _moments(y, n):
    """Method-of-moments (mean, rho) for unequal domain sizes; see fit_beta_binomial."""
    T = n.sum()
    p = y.sum() / T
    q = 1.0 - p
    S = np.sum((y - n * p) ** 2)
    s2 = np.sum(n**2)
    A = T - s2 / T
    B = np.sum(n * (n - 1.0) * (1.0 - 2.0 * n / T)) + s2 / T**2 * np.sum(n * (n - 1.0))
    rho = (S / (p * q) - A) / B if (p * q > 0 and B > 0) else 0.0
    return p, rho


def fit_beta_binomial(y, n, method: str = "ml") -> BetaBinomialFit:
    r"""Estimate :math:`(\alpha, \beta)` from the domain counts.

    Uses the marginal model :math:`y_i \sim \mathrm{BetaBin}(n_i, \alpha, \beta)`
    of seed 003, Section 2 ("in practice they are estimated from the data").

    ``method="moments"``: :math:`\hat p = \sum y_i / \sum n_i` and the
    intra-domain correlation :math:`\rho = 1/(\alpha + \beta + 1)` solved from
    :math:`\sum_i (y_i - n_i \hat p)^2 = \hat p \hat q\,(A + B\rho)`, the exact
    expectation of the left side under
    :math:`\mathrm{Var}\,y_i = n_i p q\,(1 + (n_i - 1)\rho)` with
    :math:`T = \sum n_i`, :math:`A = T - \sum n_i^2/T` and
    :math:`B = \sum n_i(n_i-1)(1 - 2n_i/T) + (\sum n_i^2/T^2) \sum n_i(n_i-1)`
    (reduces to the textbook :math:`n(D-1)(1 + (n-1)\rho)` for equal sizes).

    ``method="ml"``: maximises the exact marginal log-likelihood over
    ``(logit mean, log concentration)`` with the analytic (digamma) gradient,
    starting from the moment estimate.

    Raises
    ------
    InputError
        Bad counts, an unknown method, fewer than 2 domains with ``n > 0``, or
        all ``y = 0`` / all ``y = n`` (the mean is then on the boundary).
    """
    if method not in ("ml", "moments"):
        raise InputError(f"method must be 'ml' or 'moments'; got {method!r}")
    y, n = _counts(y, n)
    y, n = y.ravel(), n.ravel()
    keep = n > 0  # a domain with no sample carries no information
    y, n = y[keep], n[keep]
    if y.size < 2:
        raise InputError("fit_beta_binomial needs at least 2 domains with a sample (n > 0)")
    if y.sum() == 0 or y.sum() == n.sum():
        raise InputError(
            "fit_beta_binomial: every y is 0 (or every y equals n), so the class proportion "
            "is on the boundary; fix the class definition or fix (alpha, beta) by hand"
        )
    p, rho = _moments(y, n)
    rho_min = 1.0 / (1.0 + _MAX_CONCENTRATION)
    rho_c = float(np.clip(rho, rho_min, 1.0 / (1.0 + _MIN_CONCENTRATION)))
    kappa0 = 1.0 / rho_c - 1.0
    if method == "moments":
        at_bound = rho <= rho_min
        a, b = p * kappa0, (1.0 - p) * kappa0
        ll = float(beta_binomial_loglik(y, n, a, b))
        return BetaBinomialFit(a, b, p, kappa0, "moments", ll, int(y.size), not at_bound, at_bound)

    lk_lo, lk_hi = np.log(_MIN_CONCENTRATION), np.log(_MAX_CONCENTRATION)

    def negll(x):
        mu = special.expit(x[0])
        kappa = np.exp(x[1])
        a, b = mu * kappa, (1.0 - mu) * kappa
        ll = np.sum(beta_binomial_logpmf(y, n, a, b))
        # d ll / d a and d ll / d b (digamma), chained to (logit mu, log kappa); the
        # differences psi(x + j) - psi(x) without cancellation at large kappa
        common = _digamma_diff(a + b, n)
        ga = np.sum(_digamma_diff(a, y) - common)
        gb = np.sum(_digamma_diff(b, n - y) - common)
        d0 = (ga - gb) * kappa * mu * (1.0 - mu)
        d1 = (ga * mu + gb * (1.0 - mu)) * kappa
        return -ll, -np.array([d0, d1])

    x0 = np.array([special.logit(p), np.clip(np.log(kappa0), lk_lo, lk_hi)])
    res = optimize.minimize(
        negll, x0, jac=True, method="L-BFGS-B", bounds=[(-30.0, 30.0), (lk_lo, lk_hi)]
    )
    mu = float(special.expit(res.x[0]))
    kappa = float(np.exp(res.x[1]))
    # the cap, or a stop short of it on the binomial's flat likelihood
    binomial = float(np.sum(special.gammaln(n + 1) - special.gammaln(y + 1)
                            - special.gammaln(n - y + 1) + special.xlogy(y, p)
                            + special.xlog1py(n - y, -p)))
    at_bound = bool(res.x[1] >= lk_hi - 1e-6 or -res.fun - binomial < FLAT_LOGLIK)
    return BetaBinomialFit(
        mu * kappa,
        (1.0 - mu) * kappa,
        mu,
        kappa,
        "ml",
        float(-res.fun),
        int(y.size),
        bool(res.success),
        at_bound,
    )


# --- decisions for fixed (alpha, beta) -----------------------------------------


def configuration_table(n, N, weight, alpha, beta):
    r"""All observable configurations ``(n, N, y)`` with their probabilities.

    Seed 003, Table 2, columns ``P(n, N)`` and ``P(y | n, N)``: for each domain
    type ``(n_j, N_j)`` occurring with relative frequency ``weight_j``, every
    ``y = 0..n_j`` with :math:`P(y \mid n, N) = \mathrm{BetaBin}(y; n, \alpha, \beta)`.

    Returns
    -------
    pandas.DataFrame
        Columns ``n, N, y, p_type, p_y``, types in input order, ``y`` ascending.
    """
    n = np.atleast_1d(np.asarray(n, dtype=float))
    N = np.atleast_1d(np.asarray(N, dtype=float))
    w = np.atleast_1d(np.asarray(weight, dtype=float))
    n, N, w = np.broadcast_arrays(n, N, w)
    _counts(np.zeros_like(n), n, N)
    alpha, beta = _hyper(alpha, beta)
    if np.ndim(alpha) or np.ndim(beta):
        raise InputError("configuration_table takes scalar alpha and beta")
    sizes = n.astype(np.int64) + 1
    typ = np.repeat(np.arange(n.size), sizes)
    # y = 0..n_j within each type, without a loop over types.
    y = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    p_y = np.exp(beta_binomial_logpmf(y, n[typ], alpha, beta))
    return pd.DataFrame(
        {
            "n": n[typ].astype(np.int64),
            "N": N[typ].astype(np.int64),
            "y": y,
            "p_type": w[typ],
            "p_y": p_y,
        }
    )


def publication_order(R1, R0, weight=None):
    r"""Order cells for publication and accumulate risk and nonpublication loss.

    Seed 003, Sections 2 and 4 (Table 2, Figure 1): publish cells in ascending
    order of :math:`R_1/R_0` ("publish if :math:`R_{1i}/R_{0i} < c`"). Cells
    with :math:`R_0 = R_1 = 0` (nothing at stake) come first (ratio NaN, the
    paper's "--"); cells with :math:`R_0 = 0 < R_1` come last (ratio inf).
    Ties keep input order.

    Parameters
    ----------
    R1, R0 : array_like, shape ``(cell,)``
        Risks of publishing and of suppressing each cell.
    weight : array_like, optional
        Probability (or count) of each cell configuration; default 1.

    Returns
    -------
    pandas.DataFrame
        Rows in publication order, the index being the input position, with
        columns ``R1, R0, ratio, weight, wR1, wR0``, ``cum_risk_published``
        (sum of ``weight*R1`` over this and all earlier rows: the expected
        disclosure risk if publication stops after this row),
        ``loss_suppressed`` (sum of ``weight*R0`` over all later rows: the
        expected nonpublication loss of suppressing them), and both normalised
        to their totals (``risk_share``, ``loss_share``; Figure 1's axes).
    """
    R1 = np.asarray(R1, dtype=float).ravel()
    R0 = np.asarray(R0, dtype=float).ravel()
    w = np.ones_like(R1) if weight is None else np.asarray(weight, dtype=float).ravel()
    R1, R0, w = np.broadcast_arrays(R1, R0, w)
    if np.any(R0 < 0) or np.any(R1 < 0) or np.any(w < 0):
        raise InputError("R1, R0 and weight must be non-negative")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = R1 / R0
    nothing = (R0 == 0) & (R1 == 0)
    key = np.where(nothing, -np.inf, np.where(R0 == 0, np.inf, ratio))
    order = np.argsort(key, kind="stable")
    wR1 = (w * R1)[order]
    wR0 = (w * R0)[order]
    cum_risk = np.cumsum(wR1)
    # Loss of suppressing everything after this row: total minus what is published.
    loss_after = np.sum(wR0) - np.cumsum(wR0)
    loss_after = np.where(np.abs(loss_after) < 1e-15 * max(1.0, np.sum(wR0)), 0.0, loss_after)
    tot_r, tot_l = cum_risk[-1] if cum_risk.size else 0.0, np.sum(wR0)
    with np.errstate(divide="ignore", invalid="ignore"):
        risk_share = cum_risk / tot_r if tot_r > 0 else np.zeros_like(cum_risk)
        loss_share = loss_after / tot_l if tot_l > 0 else np.zeros_like(loss_after)
    return pd.DataFrame(
        {
            "R1": R1[order],
            "R0": R0[order],
            "ratio": ratio[order],
            "weight": w[order],
            "wR1": wR1,
            "wR0": wR0,
            "cum_risk_published": cum_risk,
            "loss_suppressed": loss_after,
            "risk_share": risk_share,
            "loss_share": loss_share,
        },
        index=pd.Index(order, name="cell"),
    )


def decision_table(loss1, loss0, y, n, N, alpha, beta, weight=None):
    r"""Per-cell risks of publishing and suppressing, in publication order.

    Seed 003, Sections 2 and 4: :math:`R_{1i} = E[L_1 \mid y_i]`,
    :math:`R_{0i} = E[L_0 \mid y_i]` by :func:`expected_loss`, then
    :func:`publication_order`. With :func:`configuration_table` as input
    (``weight = p_type * p_y``) this reproduces seed 003, Table 2.

    Parameters
    ----------
    loss1, loss0 : Loss or str
        Disclosure and nonpublication losses.
    y, n, N : array_like, shape ``(cell,)``
        One row per cell (domain x class).
    alpha, beta : float
        Fixed hyperparameters (the posterior decision layer averages over draws).
    weight : array_like, optional
        Probability of each configuration (default 1 per cell).

    Returns
    -------
    pandas.DataFrame
        :func:`publication_order` output with ``y, n, N`` prepended.
    """
    y, n, N = (np.atleast_1d(a).ravel() for a in _counts(y, n, N))
    R1 = expected_loss(loss1, y, n, N, alpha, beta)
    R0 = expected_loss(loss0, y, n, N, alpha, beta)
    table = publication_order(R1, R0, weight)
    idx = table.index.to_numpy()
    table.insert(0, "N", N[idx].astype(np.int64))
    table.insert(0, "n", n[idx].astype(np.int64))
    table.insert(0, "y", y[idx].astype(np.int64))
    return table
