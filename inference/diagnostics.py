"""Convergence diagnostics checked after every fit.

Split-R-hat and bulk/tail effective sample sizes (Vehtari, Gelman, Simpson,
Carpenter and Bürkner 2021, as ArviZ 0.23 computes them, vectorised over the
elements of each variable) and the number of divergent
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

import numpy as np
import xarray as xr
from scipy import fft as sp_fft
from scipy import special

from sdcbayes import _compat
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
    undefined): a sentinel such as -inf would read as a value, and as a good one. With
    ``largest``, +inf counts as a value, the worst (:func:`_stuck_rhat` sets it where
    chains sit at different constants).
    """
    best_val, best_name = math.nan, ""
    for name, da in ds.data_vars.items():
        values = np.asarray(da.values, dtype=float)
        finite = np.isfinite(values) | (largest & (values == np.inf))
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


def _stuck_rhat(rhat: xr.Dataset, post: xr.Dataset) -> tuple[xr.Dataset, int]:
    """R-hat with inf where the chains sit at different constants, and how many such.

    Each chain constant but not all at the same value: the within-chain variance is 0 in
    exact arithmetic, so R-hat is undefined, and what the floating-point arithmetic gives
    depends on how the variance is summed: nan or inf with Numba's one-pass formula, a
    huge but finite number (5.6e15 for chains at 3, 3, 3, 4) with ``np.var``, ArviZ's
    route without Numba (audit DD1 F4). :func:`_worst` would pass over a nan to another
    parameter's 1.00, and a finite 5.6e15 loses the specific advice. The chains disagree
    as much as they can, so "stuck" is decided from the draws, whatever R-hat came out:
    every draw finite, each chain constant (its maximum equals its minimum), and the
    chains not all at one value. Those elements get R-hat inf and are counted.

    Of the other elements, those whose R-hat is not finite keep the old rule: inf (and
    counted) when their draws are finite and vary, nan otherwise, so that elements with
    a non-finite draw are left to ``non_finite_draws``. Elements constant across every
    chain (data copied into the posterior) get nan whatever the arithmetic gave, and stay
    silent. Any other finite R-hat is kept as computed.
    """
    out, n_stuck = {}, 0
    for name, da in rhat.data_vars.items():
        r = np.array(da.values, dtype=float).reshape(-1)
        draws = post[name].transpose("chain", "draw", ...).values
        if np.issubdtype(draws.dtype, np.number) or draws.dtype == bool:
            draws = draws.reshape(draws.shape[0], draws.shape[1], -1)
            # per-chain extremes (chains x elements): no copy of the draws is made, and a
            # nan or inf draw shows in them (np.max/np.min propagate nan)
            hi = np.max(draws, axis=1).astype(float)
            lo = np.min(draws, axis=1).astype(float)
            finite = (np.isfinite(hi) & np.isfinite(lo)).all(axis=0)
            varies = finite & (hi.max(axis=0) > lo.min(axis=0))
            stuck = varies & (hi == lo).all(axis=0)
            undefined = ~np.isfinite(r) & ~stuck
            r[stuck] = np.inf
            r[undefined] = np.where(varies[undefined], np.inf, np.nan)
            r[finite & ~varies] = np.nan  # one value in every draw: R-hat undefined, silent
            n_stuck += int(stuck.sum() + varies[undefined].sum())
        out[name] = da.copy(data=r.reshape(da.shape))
    return xr.Dataset(out), n_stuck


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


# ---------------------------------------------------------------------------------------
# Rank-normalised R-hat and bulk/tail ESS, vectorised over elements
#
# ArviZ 0.23 computes these with a Python loop over every element of every variable:
# 18.8 s for the three statistics of 5,000 elements of 4 x 500 draws (about 1.3 ms per
# element and statistic), against 1.8 s vectorised (README, "Convergence diagnostics":
# OMP_NUM_THREADS=1 python benchmarks/diagnostics.py), so minutes for 10^5 per-cell
# parameters (the negative-binomial model's, before it sampled sigma alone). The functions below
# compute the same numbers for a block of elements at once, following ArviZ's
# conventions step by step (see _rank_diagnostics); tests/test_diagnostics_vectorised.py
# checks them element by element against az.rhat / az.ess.
# ---------------------------------------------------------------------------------------

#: Values (elements x chains x draws) handled per block: bounds the peak memory (a few
#: hundred MB) whatever the number of elements.
_BLOCK_VALUES = 1_000_000
#: Blom's (1958) offset in the rank normalisation, (r - 3/8) / (S - 3/4 + 1).
_BLOM = 3 / 8
#: Quantiles whose indicators give the tail ESS (ArviZ's default ``prob``).
_TAIL_PROBS = (0.05, 0.95)


def _var_last(x: np.ndarray, ddof: int) -> np.ndarray:
    """Variance along the last axis, computed as ArviZ computes it.

    With Numba installed, ArviZ uses a one-pass formula, ``sum(x^2)/n - (sum(x)/n)^2``
    summed left to right, scaled by ``n/(n - ddof)``; without it, ``np.var``. The two
    differ in the last bits, which decides whether chains stuck at constants give an
    R-hat of inf or nan (a variance of exactly zero, or of -1e-17), so follow ArviZ.
    """
    # (az.Numba: ArviZ 0.x; ArviZ 1 has no such switch: NumPy's variance)
    if not _compat.numba_flag():
        return np.var(x, axis=-1, ddof=ddof)
    n = x.shape[-1]
    # cumsum adds left to right, as the Numba loop does (np.sum would add pairwise)
    s1 = np.cumsum(x, axis=-1)[..., -1]
    s2 = np.cumsum(x * x, axis=-1)[..., -1]
    var = s2 / n - (s1 / n) ** 2
    return var * (n / (n - ddof))


def _split(x: np.ndarray) -> np.ndarray:
    """Split each chain in two: (B, C, D) -> (B, 2C, D // 2).

    First halves, then second halves; an odd draw count drops the middle draw.
    """
    half = x.shape[-1] // 2
    return np.concatenate([x[..., :half], x[..., x.shape[-1] - half :]], axis=-2)


def _doubled_ranks(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Twice the average ranks (1..N) along the last axis of (B, N), and the sorted rows.

    Ranks as ``scipy.stats.rankdata(method="average")``, which ArviZ calls, ties given
    their average rank; doubled so that they are integers (a tie's average is a half
    integer) and index a lookup table. Faster than scipy's: an unstable SIMD argsort
    instead of a stable sort (the order within a tie does not change its average), and
    only the tied places fixed up afterwards.
    """
    n = flat.shape[1]
    order = np.argsort(flat, axis=-1)
    # inverse permutation: each value's place in the sorted row
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(n)[None, :], axis=1)
    twice = 2 * position + 2
    ordered = np.sort(flat, axis=-1)
    ties = np.zeros(flat.shape, dtype=bool)  # ties[:, p]: sorted place p equals p - 1
    np.equal(ordered[:, 1:], ordered[:, :-1], out=ties[:, 1:])
    if ties.any():
        # Fix up only the tied places (few, except for discrete draws). In row-major
        # order of (row, place), a tie run starts where a place does not equal the one
        # before; flat indices grow along the list, so running max / min give each
        # place its run's first and last place, and first + last + 2 its doubled rank.
        in_run = ties.copy()
        in_run[:, :-1] |= ties[:, 1:]
        row, place = np.nonzero(in_run)
        flat_idx = row * n + place
        is_first = ~ties[row, place]
        first = np.maximum.accumulate(np.where(is_first, flat_idx, 0))
        is_last = np.ones(row.size, dtype=bool)
        is_last[:-1] = is_first[1:]
        last = np.minimum.accumulate(np.where(is_last, flat_idx, flat.size)[::-1])[::-1]
        twice[row, order[row, place]] = first + last - 2 * row * n + 2
    return twice, ordered


def _z_scale(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalise each element's draws (all chains together): (B, M, N) -> same.

    Average ranks of ties, Blom's offset, then the normal quantile function
    (Vehtari et al. 2021, eq. 14). An element with a nan gives nan throughout
    (scipy's ``nan_policy="propagate"``). Also returns each element's sorted draws,
    shape (B, M * N), which the caller reuses for the median and the quantiles.
    """
    flat = x.reshape(x.shape[0], -1)
    size = flat.shape[1]
    # A rank takes one of 2 * size + 1 half-integer values: evaluate the normal quantile
    # once per value and look it up (the same arithmetic on the same rank, so the same
    # z as evaluating it per draw). special.ndtri is what stats.norm.ppf evaluates.
    rank = np.arange(2 * size + 1) / 2
    table = special.ndtri((rank - _BLOM) / (size - 2 * _BLOM + 1))
    twice, ordered = _doubled_ranks(flat)
    z = table[twice]
    z[np.isnan(ordered[:, -1])] = np.nan  # np.sort puts nan last
    return z.reshape(x.shape), ordered


def _split_rhat(z: np.ndarray) -> np.ndarray:
    """Potential scale reduction of split chains (B, M, N) (Gelman et al. 2013, BDA3)."""
    n = z.shape[-1]
    chain_mean = np.mean(z, axis=-1)
    within = np.mean(_var_last(z, ddof=1), axis=-1)
    between = n * _var_last(chain_mean, ddof=1)
    return np.sqrt((between / within + n - 1) / n)


def _mean_autocov(y: np.ndarray) -> np.ndarray:
    """Autocovariance at every lag, averaged over chains: (B, M, N) -> (B, N).

    Per chain by FFT, biased (divided by N), as ArviZ's ``autocov``; the average over
    chains is taken of the power spectra, before the inverse FFT (the same sum, in
    another order: one inverse FFT per element instead of one per chain).
    """
    n = y.shape[-1]
    # the real-input fast length is what scipy.fftpack.next_fast_len (ArviZ's) returns
    m = sp_fft.next_fast_len(2 * n, real=True)
    centred = y - y.mean(axis=-1, keepdims=True)
    spec = np.fft.rfft(centred, n=m, axis=-1)
    power = np.mean(spec.real**2 + spec.imag**2, axis=1)
    cov = np.fft.irfft(power, n=m, axis=-1)[:, :n]
    cov /= n
    return cov


def _ess_split(y: np.ndarray) -> np.ndarray:
    """Effective sample size of split chains (B, M, N), M >= 2, N >= 2.

    Multi-chain autocorrelations (Vehtari et al. 2021, eq. 10) summed with Geyer's
    (1992) initial monotone sequence, with ArviZ 0.23's truncation and last-term rules;
    ``M * N`` where an element's values are constant (spread below 1e-15).
    """
    n_elem, n_chain, n_draw = y.shape
    size = n_chain * n_draw
    flat = y.reshape(n_elem, -1)
    constant = (flat.max(axis=1) - flat.min(axis=1)) < np.finfo(float).resolution

    mean_acov = _mean_autocov(y)
    chain_mean = y.mean(axis=-1)
    mean_var = mean_acov[:, 0] * n_draw / (n_draw - 1.0)
    var_plus = mean_var * (n_draw - 1.0) / n_draw
    var_plus += _var_last(chain_mean, ddof=1)  # M >= 2 always after splitting

    # Geyer's loop looks at lags 0 .. 2 * n_pairs + 1 at most: pair j is (rho_2j,
    # rho_2j+1), and ArviZ's loop runs while t = 2j - 1 < N - 3.
    n_pairs = max(0, (n_draw - 3) // 2)
    lags = 2 * n_pairs + 2
    rho = 1.0 - (mean_var[:, None] - mean_acov[:, :lags]) / var_plus[:, None]
    rho[:, 0] = 1.0  # ArviZ takes rho_0 = 1 exactly
    pair = rho[:, 0::2] + rho[:, 1::2]  # (B, n_pairs + 1)

    # The loop computes pairs 1, 2, ... while the previous pair sum is > 0 (a nan stops
    # it too) and t < N - 3: it stops after pair J, the first non-positive pair in
    # 0 .. n_pairs - 1, or after pair n_pairs.
    # (a trailing True column makes argmax give n_pairs where no pair stops the loop)
    stop = np.ones((n_elem, n_pairs + 1), dtype=bool)
    stop[:, :n_pairs] = ~(pair[:, :n_pairs] > 0)
    last = np.argmax(stop, axis=1)
    rows = np.arange(n_elem)
    even = rho[rows, 2 * last]  # the last even lag computed (rho_0 = 1 when J = 0)
    # lag 2J is kept where pair J was stored (J >= 1 and its sum >= 0) or, by ArviZ's
    # "improve estimation" step, where rho_2J > 0; lag 2J + 1 is never summed
    keep_even = ((last >= 1) & (pair[rows, last] >= 0)) | (even > 0)
    tail_term = np.where(keep_even, even, 0.0)
    # pairs 0 .. J-1 made monotone: each pair sum capped by the one before (running min)
    capped = np.minimum.accumulate(pair, axis=1)
    in_seq = np.arange(n_pairs + 1)[None, :] < last[:, None]
    tau = -1.0 + 2.0 * np.sum(np.where(in_seq, capped, 0.0), axis=1) + tail_term
    floor = 1 / np.log10(size)
    tau = np.where(floor > tau, floor, tau)  # Python's max(tau, floor): nan stays nan
    ess = size / tau
    ess = np.where(np.isnan(rho[:, 1]), np.nan, ess)
    return np.where(constant, float(size), ess)


def _type7_quantile(part: np.ndarray, prob: float) -> np.ndarray:
    """R's type-7 quantile of each row, as ``scipy.stats.mstats.mquantiles(alphap=1, betap=1)``.

    ``part`` holds each row's order statistics at the positions ``_type7_index`` names.
    """
    k, gamma = _type7_index(part.shape[1], prob)
    return (1.0 - gamma) * part[:, k - 1] + gamma * part[:, k]


def _type7_index(n: int, prob: float) -> tuple[int, float]:
    """Order-statistic index k (1-based lower) and weight of mquantiles' type-7 rule."""
    p = np.float64(prob)
    aleph = n * p + (1 + p * (1.0 - 1 - 1))  # n p + m, m = alphap + p (1 - alphap - betap)
    k = int(np.floor(np.clip(aleph, 1, n - 1)))
    return k, float(np.clip(aleph - k, 0, 1))


def _rank_diagnostics(
    values: np.ndarray, *, with_rhat: bool = True, block_values: int = _BLOCK_VALUES
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Rank-normalised split R-hat, bulk ESS and tail ESS of every element at once.

    Reproduces, element by element, ``az.rhat(method="rank")``, ``az.ess(method="bulk")``
    and ``az.ess(method="tail")`` of ArviZ 0.23 (``relative=False``), which follow
    Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021), "Rank-normalization, folding,
    and localization: an improved :math:`\widehat{R}` for assessing convergence of
    MCMC", *Bayesian Analysis* 16(2), 667-718:

    * chains are split in two (an odd draw count drops the middle draw);
    * R-hat is the larger of the split R-hat of the rank-normalised draws (bulk) and of
      the rank-normalised draws folded about their median (tail); where the bulk value
      is nan the result is nan, where only the tail one is, the bulk one (Python's
      ``max`` as ArviZ calls it);
    * bulk ESS is the ESS of the rank-normalised split chains; tail ESS the smaller of
      the ESS of the indicators ``draw <= q`` for the type-7 5% and 95% quantiles
      ``q`` of all draws;
    * the ESS sums FFT autocorrelations with Geyer's initial monotone sequence,
      truncated and completed as ArviZ does, with :math:`\hat\tau \ge 1/\log_{10}(MN)`;
      constant values give ESS ``M N`` (the split draws' number), not nan;
    * an element with a nan draw, fewer than 4 draws, or (R-hat) one chain gives nan.

    Computed in float64, except the fold, which is done in the draws' own floating
    dtype as ArviZ does (float32 rounding can create ties).

    Parameters
    ----------
    values : numpy.ndarray
        Draws, shape ``(chain, draw, *element_shape)``; any real or boolean dtype.
    with_rhat : bool
        Compute R-hat (all nan when False).
    block_values : int
        Elements are processed in blocks of about this many values, which bounds the
        memory used whatever the number of elements.

    Returns
    -------
    rhat, ess_bulk, ess_tail : numpy.ndarray
        float64 arrays of shape ``element_shape``.
    """
    values = np.asarray(values)
    n_chain, n_draw = values.shape[:2]
    shape = values.shape[2:]
    flat = values.reshape(n_chain, n_draw, -1)
    n_elem = flat.shape[2]
    rhat = np.full(n_elem, np.nan)
    ess_bulk = np.full(n_elem, np.nan)
    ess_tail = np.full(n_elem, np.nan)
    if n_draw < 4 or n_chain < 1 or n_elem == 0:
        return rhat.reshape(shape), ess_bulk.reshape(shape), ess_tail.reshape(shape)
    with_rhat = with_rhat and n_chain >= 2
    # the fold |x - median| is computed in the draws' floating dtype, as ArviZ does
    fold_dtype = values.dtype if np.issubdtype(values.dtype, np.floating) else np.float64
    n_all = n_chain * n_draw
    tail_index = [_type7_index(n_all, p)[0] for p in _TAIL_PROBS]
    kth = sorted({k + d for k in tail_index for d in (-1, 0)})
    step = max(1, block_values // n_all)
    for lo in range(0, n_elem, step):
        hi = min(n_elem, lo + step)
        # constant or stuck draws divide 0 by 0 (nan, as ArviZ): no RuntimeWarning
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            _rank_diagnostics_block(
                flat[:, :, lo:hi], fold_dtype, kth, with_rhat,
                rhat[lo:hi], ess_bulk[lo:hi], ess_tail[lo:hi],
            )
    return rhat.reshape(shape), ess_bulk.reshape(shape), ess_tail.reshape(shape)


def _rank_diagnostics_block(
    block: np.ndarray,
    fold_dtype: np.dtype,
    kth: list[int],
    with_rhat: bool,
    rhat: np.ndarray,
    ess_bulk: np.ndarray,
    ess_tail: np.ndarray,
) -> None:
    """One block of :func:`_rank_diagnostics`: draws (C, D, B) into the (B,) outputs."""
    raw = np.ascontiguousarray(np.moveaxis(block, 2, 0))  # (B, C, D)
    n_elem = raw.shape[0]
    x = raw.astype(np.float64, copy=False)
    split = _split(x)
    z, ordered = _z_scale(split)  # z shared by R-hat (bulk part) and bulk ESS
    ess_bulk[:] = _ess_split(z)
    if with_rhat:
        if fold_dtype == np.float64:
            # np.median of an even count: the mean (a + b) / 2 of the middle two sorted
            mid = ordered.shape[1] // 2
            median = np.mean(ordered[:, mid - 1 : mid + 1], axis=1)[:, None, None]
            folded = np.abs(split - median)
        else:
            split_raw = _split(raw.astype(fold_dtype, copy=False))
            median = np.median(split_raw.reshape(n_elem, -1), axis=1)[:, None, None]
            folded = np.abs(split_raw - median).astype(np.float64)
        rhat_bulk = _split_rhat(z)
        rhat_tail = _split_rhat(_z_scale(folded)[0])  # nan where the fold is (inf draws)
        # Python's max(bulk, tail) as ArviZ calls it: bulk unless tail is larger
        rhat[:] = np.where(rhat_tail > rhat_bulk, rhat_tail, rhat_bulk)
    # tail ESS: quantiles of all draws (an odd count's middle draws included), then
    # split; with an even count the split draws are all the draws, already sorted
    if split.size == x.size:
        part = ordered
    else:
        part = np.partition(x.reshape(n_elem, -1), kth, axis=1)
    tail = []
    for prob in _TAIL_PROBS:
        q = _type7_quantile(part, prob)
        tail.append(_ess_split(_split((x <= q[:, None, None]).astype(np.float64))))
    # Python's min(low, high) as ArviZ calls it: low unless high is smaller
    ess_tail[:] = np.where(tail[1] < tail[0], tail[1], tail[0])
    # ArviZ returns nan for an element with any nan draw
    invalid = np.isnan(x).any(axis=(1, 2))
    for out in (rhat, ess_bulk, ess_tail):
        out[invalid] = np.nan


def _rank_diagnostics_dataset(
    post: xr.Dataset, *, with_rhat: bool
) -> tuple[xr.Dataset | None, xr.Dataset, xr.Dataset]:
    """:func:`_rank_diagnostics` of every variable, as Datasets shaped like ArviZ's.

    Each variable keeps its dimensions other than ``chain`` and ``draw`` (in their
    order) and their coordinates. R-hat is None where ``with_rhat`` is False.
    """
    rhat, bulk, tail = {}, {}, {}
    for name, da in post.data_vars.items():
        da = da.transpose("chain", "draw", ...)
        r, b, t = _rank_diagnostics(da.values, with_rhat=with_rhat)
        template = da.isel(chain=0, draw=0, drop=True)
        rhat[name] = template.copy(data=r)
        bulk[name] = template.copy(data=b)
        tail[name] = template.copy(data=t)
    return (xr.Dataset(rhat) if with_rhat else None), xr.Dataset(bulk), xr.Dataset(tail)


def compute_diagnostics(idata, var_names: list[str] | None = None) -> dict[str, Any]:
    """Return ``max_r_hat``, ``min_ess_bulk``, ``min_ess_tail``, ``divergences`` and where.

    Computed over the posterior variables (``var_names`` to restrict). For a
    posterior that is not a Markov chain (MAP, Laplace, ADVI) only the method
    stamp matters: callers skip this function (values are ``nan``). A statistic
    that no element has (R-hat of one chain, of constant or non-finite draws, or of
    fewer than 4 draws) is ``nan``; ``divergences`` is counted whatever the number
    of draws, and is None where ``sample_stats`` has no ``diverging`` (no
    Hamiltonian sampler ran: it does not apply); ``non_finite_draws`` (and
    ``non_finite_draws_at``, the first variable) appear where draws are nan or
    infinite. An element whose chains each sit at a
    constant, not all the same one, has R-hat inf (undefined: zero within-chain
    variance; decided from the draws, so with or without Numba) and is counted in
    ``stuck_chains``; an element constant in every chain
    keeps nan and is left out.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        A sampled posterior (e.g. from :func:`sdcbayes.inference.fit` with NUTS):
        its ``posterior`` group (dims ``chain``, ``draw``, ...) and, when present,
        ``sample_stats`` (``diverging`` is counted).
    var_names : list of str, optional
        Posterior variables to diagnose (default: all of them). :func:`fit` passes the
        free variables and the small deterministics, leaving per-cell ones out.

    Returns
    -------
    dict
        ``chains``, ``draws``, ``max_r_hat``, ``min_ess_bulk``, ``min_ess_tail``
        (rank-normalised split R-hat and bulk/tail ESS of Vehtari et al. 2021, worst
        element over the variables), their ``*_at`` (the element, e.g. ``"alpha"`` or
        ``"mu[domain=a]"``) where defined, ``divergences`` (None without a ``diverging``
        statistic), ``non_finite_draws(_at)`` when
        any draw is nan or infinite, and ``stuck_chains`` (the number of elements whose
        chains sit at different constants; ``max_r_hat`` is then inf) when any.
    """
    post = get_group(idata, "posterior")
    if var_names is not None:
        post = post[var_names]
    n_chains, n_draws = post.sizes["chain"], post.sizes["draw"]
    out: dict[str, Any] = {"chains": int(n_chains), "draws": int(n_draws)}
    # counted whatever the number of draws: a short run's divergences are still a problem.
    # None without a sampler's `diverging` statistic (an approximation's independent
    # draws, a Gibbs sampler): 0 would read as "NUTS ran and found no problem"
    divergences = None
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
        # one chain has no between-chain variance: r_hat is undefined (nan). The
        # vectorised route gives what az.rhat and az.ess(method="bulk" / "tail") give,
        # element by element, without ArviZ's Python loop over elements (minutes on the
        # 10^5 per-cell parameters of the negative-binomial model)
        rhat, ess_bulk, ess_tail = _rank_diagnostics_dataset(post, with_rhat=n_chains >= 2)
    if rhat is None:
        out["max_r_hat"] = math.nan
    else:
        rhat, n_stuck = _stuck_rhat(rhat, post)
        out["max_r_hat"], out["max_r_hat_at"] = _worst(rhat, largest=True)
        if n_stuck:  # the key only when there are any: a healthy fit's stamp is as before
            out["stuck_chains"] = n_stuck
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
        the Gibbs chains take to settle"), and whose default draws a run of fewer
        than 4 draws per chain is pointed to (500 for the Gibbs sampler, 1000 for NUTS).

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
    n_stuck = diagnostics.get("stuck_chains", 0) or 0
    draws = diagnostics.get("draws")
    if draws is not None and draws < 4:
        # compute_diagnostics gives nan for every statistic then: without this line a
        # 3-draw fit would pass silently. The default named is the sampler's own (the
        # latent-class Gibbs sampler's 500, fit's 1000), worded so that the CLI's
        # "increase --draws (and --tune)" reads as its option (sdcbayes.cli.cli_wording)
        default = ("the latent-class default of 500" if sampler == "gibbs"
                   else "the default of 1000")
        problems.append(
            f"only {draws} draws per chain: R-hat and ESS need at least 4 draws per chain, "
            "so convergence was not diagnosed; increase draws (and tune), e.g. to "
            f"{default} draws per chain"
        )
    if n_stuck or rhat == math.inf:
        # stamped JSON turns inf into None, so the count is what survives a reload
        problems.append(
            f"parameter {diagnostics.get('max_r_hat_at') or '(unnamed)'} has its chains "
            "stuck, each at its own constant value (R-hat undefined, taken as inf"
            + (f"; {n_stuck} elements so" if n_stuck > 1 else "") + "): the sampler did not "
            "move within a chain; check the model's priors and starting point, and rerun "
            "with more tuning steps (tune=2000)"
        )
    elif rhat == rhat and rhat > rhat_threshold:
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
        (lower, upper), ``p_value`` (share of replicates with at least as many) and
        ``p_lower`` (share with at most as many; read as ``1 - p_value`` where absent,
        e.g. in an older summary).
    tail : float
        Warn where ``p_value`` < tail (more uniques than the replicates) or ``p_lower``
        < tail (fewer). Both tails count the ties, so a sample with no uniques where the
        replicates hold 0 or 1 is not flagged.

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
    p_lower = float(row.get("p_lower", 1.0 - p))
    if p >= tail and p_lower >= tail:
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
