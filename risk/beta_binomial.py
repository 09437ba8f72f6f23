r"""Zaslavsky-Horton beta-binomial domain model: closed forms for given (alpha, beta).

Seed ``003_…`` (Zaslavsky & Horton 1998), Section 2; ARCHITECTURE.md "Beta-binomial
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
    # (each regroups C(m, k) B(k+a, m-k+b) / B(a, b) = m! Γ(k+a) Γ(m-k+b) Γ(a+b) /
    # (k! (m-k)! Γ(a) Γ(b) Γ(a+b+m)) into ratios Γ(x + j)/Γ(x); B uses
    # m!/(m-k)! = Γ(m-k+1+k)/Γ(m-k+1) and Γ(a+b)/Γ(b), Γ(b+m-k)/Γ(b+m-k+a+k))
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
    r"""Posterior risk :math:`R = E[L(y, Y, n, N) \mid y]`, summed over the predictive.

    Seed 003, Section 2, the risk of decision ``d``:
    :math:`R_{di} = \sum_{Y=y_i}^{y_i + N_i - n_i} L_d(y_i, Y, n_i, N_i)\, P(Y \mid y_i)`,
    with :math:`Y - y \mid y \sim \mathrm{BetaBin}(N - n, \alpha + y, \beta + n - y)`
    (the density displayed in Section 2). Computed by :func:`_expected_loss_flat`
    (the one implementation; :func:`sdcbayes.risk.decisions.decide` uses it too):
    each batch element is summed over its own window of the support, the part that
    carries all but a relative :data:`_REL_TOL` of the sum, and one large domain never
    lengthens the others. For the built-in losses the cost is bounded whatever
    ``N - n`` (a domain of 10^9 takes milliseconds): a closed form for ``Y``, the sum
    term by term over a window of up to :data:`_LONG_WINDOW` values, and past that
    (``uniques-gamma``, ``uniques-equal`` with a large ``S``, ``uniques-proportions``
    with a tiny share, ``threshold`` with a large ``Ymin``, on a large domain) the
    window's ends summed exactly and its middle by quadrature
    (:func:`_long_window_sum`, relative error about 1e-10). A user loss is summed term
    by term, at a cost growing with ``N - n``. Memory stays bounded (blocks of
    :data:`_BLOCK_ELEMENTS` values).

    Parameters
    ----------
    loss : Loss or str
        A :class:`~sdcbayes.risk.losses.Loss` or a :func:`~sdcbayes.risk.losses.parse_loss` spec.
        Its ``__call__`` must broadcast. A user loss is summed over the window holding
        all but :data:`_USER_TAIL` of the predictive mass (see :func:`_expected_loss_flat`
        for what that assumes of the loss).
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
    out = _expected_loss_flat(loss, *(x.ravel() for x in (y, n, N, alpha, beta)),
                              budget=_BLOCK_ELEMENTS)
    return out.reshape(y.shape)


# --- the expectation over the predictive: windows of the support --------------------

#: Relative error allowed in the expectation of a built-in loss that decreases in Y
#: (the ``uniques-*`` losses and ``threshold``): each end of the window may leave out at
#: most this fraction of a lower bound of the sum (so at most 2e-13 relative in all).
_REL_TOL = 1e-13
#: Predictive mass left outside the window for a loss without a known shape (user
#: losses): P(T < lo) and P(T > hi) are each at most this.
_USER_TAIL = 1e-20
#: Smallest tail probability asked of the window (a lower bound of the sum far below
#: the smallest double would ask for less); it bounds the absolute error by
#: ``L(y, y) * 1e-300``.
_MIN_TAIL = 1e-300
#: Support values per segment: the log pmf is evaluated exactly at a segment's first
#: value and carried through the segment by the ratio recurrence.
_SEGMENT = 256
#: Built-in losses that are non-negative and non-increasing in Y (for y >= 0).
_DECREASING = frozenset({"uniques-equal", "uniques-gamma", "uniques-proportions", "threshold"})


def _mass_window(m, a, b, tail):
    r"""Window ``[lo, hi]`` with :math:`P(T < lo) \le` ``tail`` and :math:`P(T > hi) \le` ``tail``.

    :math:`T \sim \mathrm{BetaBin}(m, a, b)` is a Beta mixture of binomials (seed 003,
    Section 2: :math:`T \mid \theta \sim \mathrm{Bin}(m, \theta)`,
    :math:`\theta \sim \mathrm{Beta}(a, b)`), and :math:`P(\mathrm{Bin}(m, \theta) > h)`
    increases with :math:`\theta`, so for any :math:`\theta_1`

    .. math::

        P(T > h) \le P(\theta > \theta_1) + P(\mathrm{Bin}(m, \theta_1) > h).

    :math:`\theta_1` is the Beta upper ``tail/4`` quantile (``betainccinv``; ``/4``
    leaves room for its rounding) and ``h`` the Bernstein bound
    :math:`P(X - m\theta_1 \ge s) \le \exp(-s^2 / (2(v + s/3)))`, :math:`v =
    m\theta_1(1 - \theta_1)` (Bernstein's inequality for a sum of independent
    terms at most 1 above their mean; Boucheron, Lugosi & Massart 2013,
    *Concentration Inequalities*, Theorem 2.10 and Corollary 2.11), solved for
    ``tail/2``:
    :math:`s = \Lambda/3 + \sqrt{\Lambda^2/9 + 2 v \Lambda}`, :math:`\Lambda =
    \log(2/\mathrm{tail})`. The lower end mirrors it. Rigorous, and the width is
    about :math:`m` times the spread of the Beta plus the binomial's, so a domain
    whose class share is well determined (the binomial limit) gets a window of
    :math:`O(\sqrt{m \log(1/\mathrm{tail})})` values whatever its ``m``. A quantile
    SciPy cannot return (NaN) falls back to the end of the support.
    """
    tail = np.broadcast_to(np.asarray(tail, dtype=float), np.shape(m))
    with np.errstate(all="ignore"):
        th_lo = special.betaincinv(a, b, tail / 4.0)
        th_hi = special.betainccinv(a, b, tail / 4.0)
    th_lo = np.where(np.isfinite(th_lo), np.clip(th_lo, 0.0, 1.0), 0.0)
    th_hi = np.where(np.isfinite(th_hi), np.clip(th_hi, 0.0, 1.0), 1.0)
    lam = np.log(2.0 / tail)

    def dev(p):
        v = m * p * (1.0 - p)
        return lam / 3.0 + np.sqrt(lam * lam / 9.0 + 2.0 * v * lam)

    # +-1: slack for the rounding of m * theta (m up to ~1e15 is exact to < 1 unit)
    lo = np.clip(np.floor(m * th_lo - dev(th_lo)) - 1.0, 0.0, m)
    hi = np.clip(np.ceil(m * th_hi + dev(th_hi)) + 1.0, 0.0, m)
    return lo, hi


def _log_loss(loss, y, t, n, N):
    """``log L(y, y + t, n, N)`` (``-inf`` where the loss is 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.log(np.asarray(loss(y, y + t, n, N), dtype=float))


def _decreasing_window(loss, y, n, N, m, a, b):
    r"""Window and zero flags for a non-negative loss non-increasing in ``t = Y - y``.

    With :math:`\ell(t) = L(y, y + t)` non-increasing and :math:`p` the predictive
    pmf, every term of :math:`E = \sum_t \ell(t) p(t)` is non-negative, so any term
    :math:`B = \ell(t_0) p(t_0)` is a lower bound of ``E``. Then, with
    :math:`\varepsilon = ` :data:`_REL_TOL` :math:`\cdot B`:

    * above: :math:`\sum_{t \ge h} \ell(t) p(t) \le \ell(h) P(T \ge h)`, which is at
      most :math:`\varepsilon` once :math:`\ell(h) \le \varepsilon` (``h`` found by
      bisection on the loss itself: the loss's decay, e.g. ``exp(-t/S)``, sets the
      window, however long the support) or once
      :math:`P(T \ge h) \le \varepsilon / \ell(0)` (:func:`_mass_window`), whichever
      comes first;
    * below: :math:`\sum_{t < lo} \ell(t) p(t) \le \ell(0) P(T < lo) \le \varepsilon`.

    So the relative error is at most ``2 * _REL_TOL`` (an absolute ``L(y, y) *
    _MIN_TAIL`` where ``B`` is below the smallest double). ``t0`` maximises
    :math:`\log \ell + \log p` by integer ternary search on ``[0, ceil(E T)]`` (a
    better ``B`` only narrows the window; any ``t0`` keeps the bound). Returns
    ``lo, hi`` and a mask of entries whose loss is 0 throughout (``y = 0`` for the
    ``uniques-*`` losses, ``Y >= Ymin`` already for ``threshold``).
    """
    log_l0 = _log_loss(loss, y, 0.0, n, N)
    zero = ~(log_l0 > -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(a + b > 0, m * (a / (a + b)), 0.0)

    def f(t):
        return _log_loss(loss, y, t, n, N) + _betabin_logpmf_core(t, m, a, b)

    lo_s, hi_s = np.zeros_like(m), np.minimum(m, np.ceil(mean))
    for _ in range(64):  # (3/2)^64 > 1e11: ends by size, without a data-dependent loop
        span = hi_s - lo_s
        if not np.any(span > 2):
            break
        m1, m2 = lo_s + np.floor(span / 3.0), hi_s - np.floor(span / 3.0)
        up = f(m1) < f(m2)  # both -inf (past a threshold): shrink from the right
        lo_s, hi_s = np.where(up, m1 + 1.0, lo_s), np.where(up, hi_s, m2 - 1.0)
        hi_s = np.maximum(hi_s, lo_s)
    cands = [f(np.zeros_like(m))] + [f(np.minimum(lo_s + k, m)) for k in range(3)]
    log_lb = np.max(np.stack(cands), axis=0)
    log_eps = np.log(_REL_TOL) + log_lb
    with np.errstate(invalid="ignore"):  # -inf - -inf where the loss is 0 (masked)
        tail = np.exp(np.clip(np.nan_to_num(log_eps - log_l0, nan=0.0), np.log(_MIN_TAIL), 0.0))
    lo, hi_mass = _mass_window(m, a, b, np.where(zero, 1.0, tail))
    # smallest h in [0, m + 1] with log l(h) <= log eps (l(m + 1) counts as 0)
    b_lo, b_hi = np.zeros_like(m), m + 1.0
    for _ in range(64):
        if not np.any(b_hi - b_lo > 1):
            break
        mid = np.floor((b_lo + b_hi) / 2.0)
        ok = _log_loss(loss, y, mid, n, N) <= log_eps
        b_lo, b_hi = np.where(ok, b_lo, mid), np.where(ok, mid, b_hi)
    hi = np.minimum(hi_mass, b_hi - 1.0)
    return lo, np.maximum(hi, lo), zero


def _window_sum(loss, y, n, N, m, a, b, lo, hi, budget):
    r""":math:`\sum_{t=lo}^{hi} L(y, y + t, n, N)\, P(t)` per entry, P the BetaBin(m, a, b) pmf.

    The log pmf is exact (:func:`_betabin_logpmf_core`) at the first value of each
    segment of :data:`_SEGMENT` values and carried through the segment by the ratio
    of consecutive terms (seed 003, Section 2's density),

    .. math::

        \frac{P(t)}{P(t-1)} = \frac{(m - t + 1)(t - 1 + a)}{t\,(m - t + b)},

    one logarithm per value instead of five log-gamma functions; re-anchoring keeps
    the rounding of the running sum to ~1e-14 however long the window. Entries are
    sorted by window length and taken in blocks, and each block's windows in
    chunks, so a block holds at most ``budget`` values (or one segment per entry),
    whatever the lengths.
    """
    out = np.zeros(y.size)
    width = (hi - lo + 1.0).astype(np.int64)
    order = np.argsort(width, kind="stable")
    ws = width[order]
    start = 0
    while start < order.size:
        k = np.arange(1, order.size - start + 1)
        # whole windows per block while they fit (an entry with a long window alone,
        # walked in chunks): short windows never pad out to a long one's length
        fits = k * ws[start:] <= budget
        end = start + max(1, int(np.searchsorted(~fits, True)))
        idx = order[start:end]
        yy, nn, NN, mm, aa, bb, ll, hh = (v[idx, None] for v in (y, n, N, m, a, b, lo, hi))
        span = int(ws[end - 1])
        chunk = span if span <= _SEGMENT else max(
            _SEGMENT, budget // idx.size // _SEGMENT * _SEGMENT)
        for j0 in range(0, span, chunk):
            w = min(chunk, -(-(span - j0) // _SEGMENT) * _SEGMENT) if span > _SEGMENT else span
            seg = min(w, _SEGMENT)
            t = ll + (j0 + np.arange(w, dtype=float))  # (block, w)
            inside = t <= hh
            t = np.minimum(t, hh)  # past the window: repeat its end (masked below)
            t3 = t.reshape(idx.size, w // seg, seg)
            m3, a3, b3 = mm[:, :, None], aa[:, :, None], bb[:, :, None]
            logp = np.empty(t3.shape)
            logp[:, :, 0] = _betabin_logpmf_core(t3[:, :, 0], *np.broadcast_arrays(
                mm, aa, bb, t3[:, :, 0])[:3])
            tt = t3[:, :, 1:]
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.log((m3 - tt + 1.0) * (tt - 1.0 + a3) / (tt * (m3 - tt + b3)))
            # repeated end values (t did not move) carry no step
            r = np.where(tt > t3[:, :, :-1], r, 0.0)
            np.cumsum(r, axis=2, out=logp[:, :, 1:])
            logp[:, :, 1:] += logp[:, :, :1]
            p = np.where(inside, np.exp(logp.reshape(idx.size, w)), 0.0)
            with np.errstate(all="ignore"):
                L = np.asarray(loss(yy, yy + t, nn, NN), dtype=float)
            out[idx] += np.sum(np.where(inside, L * p, 0.0), axis=1)
        start = end
    return out


def _expected_loss_flat(loss, y, n, N, alpha, beta, *, budget):
    r""":math:`E[L(y, y + T, n, N)]` for :math:`T \sim \mathrm{BetaBin}(N - n, a, b)`.

    Here :math:`a = \alpha + y` and :math:`b = \beta + n - y`.

    Seed 003, Section 2 (the risk :math:`R_{di}` and the predictive density). 1-D
    arrays of one length (validated by the caller); the one implementation behind
    :func:`expected_loss` and :func:`sdcbayes.risk.decisions.decide`. Routes:

    * ``Y`` (built in): the closed form :math:`y + m\,a/(a + b)` (:func:`posterior_mean_Y`);
    * the built-in losses non-negative and non-increasing in ``Y`` (``uniques-equal``,
      ``uniques-gamma``, ``uniques-proportions``, ``threshold``): summed over the
      window of :func:`_decreasing_window`, relative error at most ``2 * _REL_TOL``.
      The loss's own decay bounds the window: ``uniques-equal:S`` needs about
      ``S (a log(m/S) + 30)`` values (a few thousand for ``S = 10``) and ``threshold:Ymin``
      at most ``Ymin``, for any ``m``; ``uniques-gamma`` decays only polynomially and
      may need the whole mass window (:func:`_mass_window`, about ``m`` times the
      spread of the class share). A window past :data:`_LONG_WINDOW` values is summed
      by :func:`_long_window_sum` at a fixed cost (its relative error is about 1e-10,
      the rounding of the log pmf, instead of ``2 * _REL_TOL``);
    * any other loss (user losses): the mass window with :data:`_USER_TAIL` left out
      at each end. The truncation error is at most ``2 * _USER_TAIL * B`` for a loss
      bounded by ``B`` on the support, and (Cauchy-Schwarz) at most
      :math:`\sqrt{2\cdot 10^{-20} E[L^2]}` (about ``1.4e-10 E|L|`` for a loss whose
      spread is of the order of its mean) for one growing polynomially in ``Y``; a
      loss far larger in the extreme tail than in the bulk is not covered. The cost
      is the window length, about ``m`` times the spread of the class share.
    """
    m = N - n
    a, b = alpha + y, beta + n - y
    if loss.builtin and loss.name == "Y":
        return y + m * (a / (a + b))
    if loss.builtin and loss.name in _DECREASING:
        lo, hi, zero = _decreasing_window(loss, y, n, N, m, a, b)
    else:
        lo, hi = _mass_window(m, a, b, _USER_TAIL)
        zero = np.zeros(y.shape, dtype=bool)
    out = np.zeros(y.shape)
    # a window past _LONG_WINDOW values (a slowly decaying built-in loss on a large
    # domain) is summed exactly at its ends and by quadrature in between: fixed cost
    long = np.zeros(y.shape, dtype=bool)
    if loss.builtin and loss.name in _DECREASING:
        long = ~zero & (hi - lo + 1.0 > _LONG_WINDOW)
    for sel, fn in ((~zero & ~long, _window_sum), (long, _long_window_sum)):
        live = np.flatnonzero(sel)
        if live.size:
            out[live] = fn(loss, *(v[live] for v in (y, n, N, m, a, b, lo, hi)), budget=budget)
    return out


#: Windows longer than this many values are summed by :func:`_long_window_sum` (fixed
#: cost) instead of term by term (cost proportional to the length); shorter windows keep
#: the exact sum, so the usual domains' risks do not change by a bit.
_LONG_WINDOW = 100_000
#: Values summed exactly at each end of a long window (8 segments).
_LONG_ENDS = 2048
#: Gauss-Legendre nodes per panel of the quadrature in :func:`_long_window_sum`.
_GL_NODES = 20
#: Panels of that quadrature are at most this fraction of the middle of the window wide.
_MAX_PANEL_SHARE = 1.0 / 64.0


def _long_window_sum(loss, y, n, N, m, a, b, lo, hi, budget):
    r"""The sum of :func:`_window_sum` for a window longer than :data:`_LONG_WINDOW`, at fixed cost.

    With :math:`f(t) = L(y, y + t, n, N) P(t)`, :math:`P` the BetaBin(m, a, b) pmf
    continued to real ``t`` through its log-gamma form (:func:`_betabin_logpmf_core`),
    and :math:`K` = :data:`_LONG_ENDS`, :math:`\ell = lo + K - 1/2`,
    :math:`u = hi - K + 1/2`:

    .. math::

        \sum_{t=lo}^{hi} f(t) = \sum_{t=lo}^{lo+K-1} f(t) + \sum_{t=hi-K+1}^{hi} f(t)
        + \int_{\ell}^{u} f(t)\,dt - \tfrac{1}{24}\,[f'(u) - f'(\ell)] + E,

    the Euler-Maclaurin formula for the midpoint rule (Abramowitz & Stegun 1964,
    23.1.32, step 1), :math:`f'` at the ends by central differences. The ends are
    summed exactly (:func:`_window_sum`): there the pmf and the loss may change on a
    scale of one value (the pmf's :math:`t^{a-1}` near 0 and :math:`(m-t)^{b-1}` near
    ``m``, a threshold's step). In between, ``f`` is analytic and changes on a scale
    of at least about :math:`\sqrt{K}` values, so the remainder
    :math:`E \approx \tfrac{7}{5760}[f'''(u) - f'''(\ell)]` is negligible. The integral
    is composite Gauss-Legendre (:data:`_GL_NODES` nodes per panel) on panels that
    double in width away from each end of the middle (a polynomially decaying loss, the
    pmf's power-law ends), none wider than :data:`_MAX_PANEL_SHARE` of the middle (an
    interior peak). Cost: about 4,100 exact terms and 3,000 quadrature nodes per entry,
    whatever ``m``. Against the exact sum at the crossover (windows of 1e5 to 1e6
    values) the relative difference is below 1e-11 (``tests/test_audit_z5_decisions.py``).
    """
    K = float(_LONG_ENDS)
    ends = (_window_sum(loss, y, n, N, m, a, b, lo, lo + (K - 1.0), budget)
            + _window_sum(loss, y, n, N, m, a, b, hi - (K - 1.0), hi, budget))
    left, right = lo + K - 0.5, hi - K + 0.5
    half = (right - left) / 2.0  # > _LONG_WINDOW / 2 - K: the middle is never empty

    def f(idx, t):  # f at points t (entries idx x points)
        mm, aa, bb, yy, nn, NN = (v[idx, None] for v in (m, a, b, y, n, N))
        mm, aa, bb, t = np.broadcast_arrays(mm, aa, bb, t)
        logp = _betabin_logpmf_core(t, mm, aa, bb)
        with np.errstate(all="ignore"):
            L = np.asarray(loss(yy, yy + t, nn, NN), dtype=float)
        return L * np.exp(logp)

    allidx = np.arange(y.size)
    fe = f(allidx, np.column_stack([left - 0.5, left + 0.5, right - 0.5, right + 0.5]))
    correction = ((fe[:, 3] - fe[:, 2]) - (fe[:, 1] - fe[:, 0])) / 24.0
    # panel edges as distances from an end of the middle in units of ``half``: doubling
    # from about K/4 (the scale next to the exact ends) up to 1, refined to the cap
    n_geo = max(1, int(np.ceil(np.log2(float(np.max(half)) / (K / 4.0)))))
    edges = np.unique(np.concatenate([[0.0], 2.0 ** np.arange(-n_geo, 1.0),
                                      np.linspace(0.0, 1.0, int(0.5 / _MAX_PANEL_SHARE) + 1)]))
    x, w = np.polynomial.legendre.leggauss(_GL_NODES)
    e0, e1 = edges[:-1, None], edges[1:, None]
    nodes = ((e0 + e1) / 2.0 + (e1 - e0) / 2.0 * x).ravel()
    weights = ((e1 - e0) / 2.0 * w).ravel()
    weights = np.concatenate([weights, weights])
    total = np.zeros(y.size)
    rows = max(1, budget // (2 * nodes.size))  # bounded memory, as in _window_sum
    for s in range(0, y.size, rows):
        idx = allidx[s:s + rows]
        h = half[idx, None]
        t = np.concatenate([left[idx, None] + h * nodes, right[idx, None] - h * nodes], axis=1)
        total[idx] = half[idx] * (f(idx, t) @ weights)
    return ends + total - correction


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


def _moments(y, n, w):
    """Method-of-moments (mean, rho) for unequal domain sizes; see fit_beta_binomial.

    ``w``: multiplicities; every sum over domains is a ``w``-weighted sum over rows,
    i.e. the sum over the expanded table.
    """
    T = np.sum(w * n)
    p = np.sum(w * y) / T
    q = 1.0 - p
    S = np.sum(w * (y - n * p) ** 2)
    s2 = np.sum(w * n**2)
    A = T - s2 / T
    B = (np.sum(w * n * (n - 1.0) * (1.0 - 2.0 * n / T))
         + s2 / T**2 * np.sum(w * n * (n - 1.0)))
    rho = (S / (p * q) - A) / B if (p * q > 0 and B > 0) else 0.0
    return p, rho


def _multiplicities(weights, size: int) -> np.ndarray:
    """``weights`` as whole numbers >= 0, one per domain (all 1 when None); InputError else."""
    if weights is None:
        return np.ones(size)
    try:
        w = np.asarray(weights, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError("weights must hold numbers (multiplicities of the domains)") from None
    if w.size != size:
        raise InputError(f"weights must have one value per domain ({size}); got {w.size}")
    bad = ~np.isfinite(w) | (w < 0) | (w != np.round(w))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"weights must be whole numbers >= 0 when (alpha, beta) are estimated: a weight "
            f"is a multiplicity, the number of domains a row stands for; got {w[i]!r} at "
            f"0-based position {i}. Give counts of domains, or fix alpha and beta for "
            "configuration probabilities (seed 003, Table 2)"
        )
    return w


def fit_beta_binomial(y, n, method: str = "ml", weights=None) -> BetaBinomialFit:
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
    (reduces to the textbook :math:`n(D-1)(1 + (n-1)\rho)` for equal sizes). The
    variance is the beta-binomial one (Skellam 1948, *J. R. Stat. Soc. B* 10,
    257-261); the expectation follows from
    :math:`E(y_i - n_i\hat p)^2 = (1 - 2n_i/T)\,\mathrm{Var}\,y_i
    + (n_i/T)^2 \sum_j \mathrm{Var}\,y_j` (domains independent).

    ``method="ml"``: maximises the exact marginal log-likelihood over
    ``(logit mean, log concentration)`` with the analytic (digamma) gradient
    :math:`\partial\ell/\partial\alpha = \sum_i [\psi(\alpha + y_i) - \psi(\alpha)
    - \psi(\alpha + \beta + n_i) + \psi(\alpha + \beta)]` (likewise in
    :math:`\beta` with :math:`n_i - y_i`; the log-pmf differentiated term by term),
    starting from the moment estimate.

    Parameters
    ----------
    y : array_like of int
        Sample count of the class in each domain, ``0 <= y_i <= n_i``.
    n : array_like of int
        Sample size of each domain; domains with ``n_i = 0`` carry no information
        and are left out.
    method : {"ml", "moments"}, default "ml"
        Maximum likelihood or the method of moments (above).
    weights : array_like of int, optional
        Multiplicity :math:`w_i` of each row: the number of domains with these counts
        (a collapsed table). Whole numbers >= 0; row ``i`` counts :math:`w_i` times in
        every sum above (the log-likelihood :math:`\sum_i w_i \log
        \mathrm{BetaBin}(y_i; n_i, \alpha, \beta)`, its digamma gradient and the
        moment sums), so the fit equals the fit of the expanded table (to the
        optimiser's rounding). Rows of weight 0 are left out. Default: 1 each.

    Returns
    -------
    BetaBinomialFit
        ``alpha``, ``beta``, ``mean``, ``concentration``, ``method``,
        ``loglik``, ``n_domains`` (the sum of the multiplicities of the domains
        used), ``converged``, ``at_bound``.

    Raises
    ------
    InputError
        Bad counts, an unknown method, weights that are not whole numbers >= 0 (one
        per domain), fewer than 2 domains with ``n > 0``, or all ``y = 0`` / all
        ``y = n`` (the mean is then on the boundary).
    """
    if method not in ("ml", "moments"):
        raise InputError(f"method must be 'ml' or 'moments'; got {method!r}")
    y, n = _counts(y, n)
    y, n = y.ravel(), n.ravel()
    w = _multiplicities(weights, y.size)
    keep = (n > 0) & (w > 0)  # a domain with no sample carries no information
    y, n, w = y[keep], n[keep], w[keep]
    if w.sum() < 2:
        raise InputError("fit_beta_binomial needs at least 2 domains with a sample (n > 0)")
    if y.sum() == 0 or np.all(y == n):
        raise InputError(
            "fit_beta_binomial: every y is 0 (or every y equals n), so the class proportion "
            "is on the boundary; fix the class definition or fix (alpha, beta) by hand"
        )
    n_domains = int(w.sum())
    p, rho = _moments(y, n, w)
    rho_min = 1.0 / (1.0 + _MAX_CONCENTRATION)
    rho_c = float(np.clip(rho, rho_min, 1.0 / (1.0 + _MIN_CONCENTRATION)))
    kappa0 = 1.0 / rho_c - 1.0
    if method == "moments":
        at_bound = rho <= rho_min
        a, b = p * kappa0, (1.0 - p) * kappa0
        ll = float(np.sum(w * beta_binomial_logpmf(y, n, a, b)))
        return BetaBinomialFit(a, b, p, kappa0, "moments", ll, n_domains, not at_bound, at_bound)

    lk_lo, lk_hi = np.log(_MIN_CONCENTRATION), np.log(_MAX_CONCENTRATION)

    def negll(x):
        mu = special.expit(x[0])
        kappa = np.exp(x[1])
        a, b = mu * kappa, (1.0 - mu) * kappa
        ll = np.sum(w * beta_binomial_logpmf(y, n, a, b))
        # d ll / d a and d ll / d b (digamma), chained to (logit mu, log kappa); the
        # differences psi(x + j) - psi(x) without cancellation at large kappa
        common = _digamma_diff(a + b, n)
        ga = np.sum(w * (_digamma_diff(a, y) - common))
        gb = np.sum(w * (_digamma_diff(b, n - y) - common))
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
    binomial = float(np.sum(w * (special.gammaln(n + 1) - special.gammaln(y + 1)
                                 - special.gammaln(n - y + 1) + special.xlogy(y, p)
                                 + special.xlog1py(n - y, -p))))
    at_bound = bool(res.x[1] >= lk_hi - 1e-6 or -res.fun - binomial < FLAT_LOGLIK)
    return BetaBinomialFit(
        mu * kappa,
        (1.0 - mu) * kappa,
        mu,
        kappa,
        "ml",
        float(-res.fun),
        n_domains,
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

    Raises
    ------
    InputError
        If any ``R1``, ``R0`` or ``weight`` is NaN, infinite or negative.
    """
    R1 = np.asarray(R1, dtype=float).ravel()
    R0 = np.asarray(R0, dtype=float).ravel()
    w = np.ones_like(R1) if weight is None else np.asarray(weight, dtype=float).ravel()
    R1, R0, w = np.broadcast_arrays(R1, R0, w)
    # NaN passed the sign test and, sorted last, turned every risk_share or
    # loss_share into 0 without an error; inf gave NaN shares.
    for name, arr in (("R1", R1), ("R0", R0), ("weight", w)):
        bad = ~np.isfinite(arr)
        if np.any(bad):
            raise InputError(
                f"{name} must be finite; cell {int(np.flatnonzero(bad)[0])} has "
                f"{float(arr[bad][0])!r} ({int(bad.sum())} non-finite in all). Check the loss "
                "functions or weights that produced it (a custom Loss returning NaN?)."
            )
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
