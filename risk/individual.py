"""Benedetti-Franconi individual risk and the negative-binomial inverse moment.

Imports NumPy and SciPy only (never PyMC or ArviZ). Every function works on plain
arrays and broadcasts, so the same call serves point values and ``(chain, draw,
cell)`` arrays.

The central quantity is the inverse moment E(1/F) of F = f + X, X ~ NegBin(r, rho)
counting failures before the r-th success (success probability rho):

.. math::

    E(1/F) = \\frac{\\rho^r}{f}\\,{}_2F_1(r, f; f+1; 1-\\rho)
           = \\rho \\int_0^1 y^{f-1} (\\rho + (1-\\rho) y)^{r-f-1}\\,dy .

With r = f it is the Benedetti-Franconi risk (seed ``004_…`` eq. 1, 3, 5, 6); with
r = alpha + f it is the Poisson-gamma E(1/F_k | f_k) (Bethlehem, Keller & Pannekoek
1990; ARCHITECTURE.md "Poisson-gamma cell frequencies"; seed ``000_…`` section 2.3
uses the model but does not print this conditional). ``scipy.special.hyp2f1`` returns
inf/NaN for r = f >= 100 and rho <= 0.05, so it is not used here; see
:func:`negbin_inverse_moment` for the stable evaluation.
"""

from __future__ import annotations

import sys
from typing import Literal

import numpy as np

from sdcbayes.exceptions import InputError

__all__ = [
    "RISK_METHODS",
    "benedetti_franconi_risk",
    "negbin_inverse_moment",
    "plugin_inclusion_probability",
    "polettini_closed_form",
]

#: Methods accepted by :func:`benedetti_franconi_risk`.
RISK_METHODS = ("exact", "approx", "measure_risk", "polettini9", "polettini10")

# Cells with f above this use Gauss-Laguerre; below it the forward recurrence
# (rho < 1/2) is cheap (one vector operation per unit of f) and exact to rounding.
_F_RECURRENCE_MAX = 40
_N_LAGUERRE = 32
# numpy's Gauss-Laguerre rule: importing scipy.special costs ~0.5 s per CLI run
_LAG_X, _LAG_W = np.polynomial.laguerre.laggauss(_N_LAGUERRE)
_SERIES_MAX_TERMS = 200
_N_PANELS = 80
_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)


def _as_float_array(x, name: str) -> np.ndarray:
    if x is None:
        raise InputError(f"{name} is None; pass a number or an array of numbers.")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric; convert it to numbers first.") from exc
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} contains NaN or infinite values; drop or impute them first.")
    return arr


def _check_f(f: np.ndarray, name: str = "f", *, whole: bool = True) -> None:
    # Fractional f >= 1 are the wildcard-weighted counts of Microdata(missing="wildcard",
    # 0 < alpha < 1); the negative-binomial moments are defined for them (real size f).
    if np.any(f < 1):
        raise InputError(
            f"{name} must hold sample frequencies >= 1 (got {f[f < 1].ravel()[0]:g}); "
            "pass only observed cells."
        )
    if whole and np.any(f != np.round(f)):
        bad = f[f != np.round(f)].ravel()[0]
        raise InputError(
            f"{name} must hold whole sample frequencies (got {bad:g}); fractional counts "
            "(missing='wildcard' with 0 < alpha < 1) need benedetti_franconi_risk(method='exact')."
        )


def _check_rho(rho: np.ndarray, name: str) -> None:
    if np.any(rho <= 0) or np.any(rho > 1):
        bad = rho[(rho <= 0) | (rho > 1)].ravel()[0]
        hint = (
            " (p > 1 means the weight sum Fk_hat is below the sample count f_k: check the weights)"
            if bad > 1
            else ""
        )
        raise InputError(f"{name} must lie in (0, 1], got {bad:g}{hint}.")


def _scalar_or_array(x: np.ndarray):
    return x[()] if x.ndim == 0 else x


def _series_index(**inputs):
    """The index shared by the pandas Series among ``inputs`` (None if there are none).

    NumPy pairs arrays by position; two Series with different indexes would be
    paired silently by position, not by label, so that is refused rather than
    aligned (aligning could drop or NaN-fill cells without the caller noticing).
    """
    pd = sys.modules.get("pandas")  # a Series exists only once pandas is imported
    if pd is None:
        return None
    series = [(name, x) for name, x in inputs.items() if isinstance(x, pd.Series)]
    for name, x in series[1:]:
        if not x.index.equals(series[0][1].index):
            raise InputError(
                f"{series[0][0]} and {name} are pandas Series with different indexes, so "
                "pairing them by position would mismatch their entries (cells, domains or "
                "records); align them first "
                f"({series[0][0]}, {name} = {series[0][0]}.align({name}, join='inner')) or "
                "pass .to_numpy() of both if the positions already match."
            )
    return series[0][1].index if series else None


def _broadcast(**arrays: np.ndarray) -> list[np.ndarray]:
    try:
        return np.broadcast_arrays(*arrays.values())
    except ValueError:
        shapes = ", ".join(f"{name} {a.shape}" for name, a in arrays.items())
        raise InputError(
            f"input shapes do not match ({shapes}); pass arrays that broadcast together: "
            "of equal length (e.g. one entry per cell) or scalars."
        ) from None


def _result(x: np.ndarray, index):
    # A Series input keeps its labels when the result is one value per label.
    if index is not None and x.ndim == 1 and x.size == len(index):
        return sys.modules["pandas"].Series(x, index=index)
    return _scalar_or_array(x)


# --------------------------------------------------------------------------- #
# Evaluation routes for I = int_0^1 y^(f-1) (rho + q y)^(s-1) dy, s = r - f.
# E(1/F) = rho * I. Each takes 1-d arrays of distinct (f, s, rho) triples.
# --------------------------------------------------------------------------- #


def _route_f1(s: np.ndarray, rho: np.ndarray) -> np.ndarray:
    # f = 1: rho * (1 - rho^s) / (q s); expm1 keeps it exact for rho -> 1 and s -> 0.
    q = 1.0 - rho
    x = s * np.log(rho)
    ratio = np.where(x == 0.0, 1.0, np.expm1(x) / np.where(x == 0.0, 1.0, x))
    return rho * (-np.log(rho)) * ratio / q


def _route_series(f: np.ndarray, s: np.ndarray, rho: np.ndarray) -> np.ndarray:
    # rho >= 1/2: E = rho/f * 2F1(1, 1 - s; f + 1; q) (Euler transformation,
    # Abramowitz & Stegun 15.3.3, of seed 004 eq. 6 with real r);
    # |term ratio| <= q <= 1/2 when |1 - s| <= f + 1.
    q = 1.0 - rho
    b = 1.0 - s
    c = f + 1.0
    term = np.ones_like(rho)
    total = np.ones_like(rho)
    for n in range(_SERIES_MAX_TERMS):
        term = term * (b + n) / (c + n) * q
        total = total + term
        if np.all(np.abs(term) <= 1e-17 * np.abs(total)):
            break
    return rho / f * total


def _route_recurrence(f: np.ndarray, s: np.ndarray, rho: np.ndarray) -> np.ndarray:
    # q I_{k+1} = J_k - rho I_k with J_k = int_0^1 y^(k-1) (rho + q y)^s dy (write
    # q y = (rho + q y) - rho), and by parts J_k = (1 - s q I_{k+1}) / k; so
    # I_{k+1} = (1 - k rho I_k) / (q (k + s)) (s = 0 included), started from f = 1.
    # An error in I_k is multiplied by rho k / (q (k + s)) < 1 for rho < 1/2 and
    # s >= 0, so the recursion is stable.
    q = 1.0 - rho
    e1 = _route_f1(s, rho)
    out = e1.copy()
    i_k = e1 / rho
    kmax = int(f.max())
    for k in range(1, kmax):
        i_k = (1.0 - k * rho * i_k) / (q * (k + s))
        hit = f == k + 1
        out[hit] = rho[hit] * i_k[hit]
    return out


def _route_laguerre(f: np.ndarray, s: np.ndarray, rho: np.ndarray) -> np.ndarray:
    # Substitute y = exp(-u/lam) in rho * int y^(f-1) (rho + q y)^(s-1) dy:
    #   E = rho/lam * int_0^inf exp(-f u/lam) (rho + q exp(-u/lam))^(s-1) du,
    # lam = f rho + (r - 1) q is minus the log-slope of the integrand at u = 0, so
    # the integrand is exp(-u) times a slowly varying factor and Gauss-Laguerre
    # converges fast (s > -0.9 keeps lam > 0). log(rho + q e^-u) is formed as
    # log1p(q expm1(-u)): its absolute error is multiplied by s - 1, up to ~f.
    q = 1.0 - rho
    r = f + s
    lam = f * rho + (r - 1.0) * q
    u = _LAG_X[None, :] / lam[:, None]
    log_g = (
        _LAG_X[None, :]
        - f[:, None] * u
        + (s[:, None] - 1.0) * np.log1p(q[:, None] * np.expm1(-u))
    )
    return rho / lam * np.sum(_LAG_W[None, :] * np.exp(log_g), axis=1)


def _route_composite(f: np.ndarray, s: np.ndarray, rho: np.ndarray) -> np.ndarray:
    # Remaining corner (r well below f, or r < 1): not used by the
    # Benedetti-Franconi (r = f) or Poisson-gamma (r = f + alpha) risks. With
    # t = exp(-v) in E = int_0^1 t^(f-1) (rho / (1 - q t))^r dt (seed 004 eq. 5 with
    # real r; the same substitution links eq. 5 and eq. 3):
    #   E = int_0^inf exp(-f v) (rho / (1 - q exp(-v)))^r dv,
    # a decreasing integrand <= exp(-f v) with a power-law knee at v ~ rho and an
    # exponential scale 1/f; geometrically graded Gauss-Legendre panels resolve both.
    q = 1.0 - rho
    r = f + s
    # E >= 1/E(F) = 1/(f + r q / rho); the tail beyond v_end is <= exp(-f v_end)/f.
    v_end = (40.0 + np.log1p(r * q / (rho * f))) / f
    # First panel well inside both the initial decay 1/(f + r q/rho) and the knee rho.
    v0 = 1e-3 * np.minimum(rho, 1.0 / (f + r * q / rho))
    k = np.arange(_N_PANELS + 1) / _N_PANELS
    edges = v0[:, None] * (v_end / v0)[:, None] ** k[None, :]
    edges = np.concatenate([np.zeros((f.size, 1)), edges], axis=1)
    a, b = edges[:, :-1], edges[:, 1:]
    half = 0.5 * (b - a)
    v = (a + half)[:, :, None] + half[:, :, None] * _GL_X[None, None, :]
    # rho / (1 - q exp(-v)) = 1 / (1 - q expm1(-v) / rho): log1p keeps full
    # relative accuracy for tiny v and tiny rho alike (r multiplies any error).
    x = -(q / rho)[:, None, None] * np.expm1(-v)
    log_h = -f[:, None, None] * v - r[:, None, None] * np.log1p(x)
    return np.sum(half[:, :, None] * _GL_W[None, None, :] * np.exp(log_h), axis=(1, 2))


def _inverse_moment_distinct(f: np.ndarray, s: np.ndarray, rho: np.ndarray) -> np.ndarray:
    out = np.full(f.shape, np.nan)
    todo = np.ones(f.shape, dtype=bool)

    def take(mask, route, *args):
        nonlocal todo
        mask = mask & todo
        if mask.any():
            out[mask] = route(*(a[mask] for a in args))
        todo &= ~mask

    whole = f == np.round(f)
    take(rho == 1.0, lambda f_: 1.0 / f_, f)
    take(f == 1.0, _route_f1, s, rho)
    take((rho >= 0.5) & (np.abs(1.0 - s) <= f + 1.0), _route_series, f, s, rho)
    small = (rho < 0.5) & (f <= _F_RECURRENCE_MAX) & (s > -0.9)
    take(small & whole, _route_recurrence, f, s, rho)
    # a fractional small f has no recurrence, and Gauss-Laguerre loses digits near f = 1
    # (1e-5 at f = 1.5, rho = 1e-3); the panels keep ~1e-15
    take(small, _route_composite, f, s, rho)
    take(s > -0.9, _route_laguerre, f, s, rho)
    take(todo, _route_composite, f, s, rho)
    return out


def negbin_inverse_moment(f, r, rho):
    """E(1/F) for F = f + X, X ~ NegBin(r, rho) (failures before the r-th success).

    .. math::

        E(1/F) = \\sum_{x \\ge 0} \\frac{1}{f + x}
                 \\binom{x + r - 1}{x} \\rho^r (1-\\rho)^x
               = \\frac{\\rho^r}{f}\\,{}_2F_1(r, f; f+1; 1-\\rho)
               = \\rho \\int_0^1 y^{f-1} (\\rho + (1-\\rho) y)^{r-f-1}\\,dy .

    The first form is seed ``004_…`` eq. (1); the hypergeometric form is eq. (6)
    (there with r = f). The integral follows from E(1/F) = ∫_0^1 t^{F-1} dt and the
    negative-binomial probability generating function,
    E(1/F) = ∫_0^1 t^{f-1} (ρ / (1 - (1-ρ) t))^r dt (seed eq. 5 with real r), then
    t = y / (ρ + (1-ρ) y); equivalently Pfaff's transformation (Abramowitz & Stegun
    15.3.4) of the ₂F₁ form and Euler's integral (15.3.1). For r = f, y = 1 - t gives
    ARCHITECTURE.md's p ∫ (1-t)^{f-1}/(1-(1-p)t) dt.

    Evaluation (relative error about 1e-14, checked against mpmath): rho = 1 gives
    1/f; f = 1 the closed form rho (1 - rho^(r-1)) / ((1-rho)(r-1)) (the integral
    done); rho >= 1/2 the Gauss series of 2F1(1, f+1-r; f+1; 1-rho) (Euler's
    transformation, Abramowitz & Stegun 15.3.3), which converges at least like 2^-n;
    rho < 1/2 and f <= 40 a forward recurrence in f obtained by integrating by
    parts; larger f a 32-node Gauss-Laguerre rule after the substitution
    y = exp(-u / lambda) that turns the integrand into exp(-u) times a slowly varying
    factor. Each distinct (f, r, rho) triple is evaluated once.

    Parameters
    ----------
    f : array_like of float
        Sample frequencies, >= 1; whole numbers, or the fractional counts of
        ``Microdata(missing="wildcard", alpha=...)`` with 0 < alpha < 1.
    r : array_like of float
        Negative-binomial size, > 0 (r = f for Benedetti-Franconi, alpha + f for
        the Poisson-gamma model).
    rho : array_like of float
        Success probability in (0, 1].

    Returns
    -------
    numpy.ndarray or float or pandas.Series
        E(1/F), broadcast over the inputs (a Series with the input's index when an
        input is a Series; Series inputs must share one index).

    Raises
    ------
    InputError
        If f < 1, r <= 0, rho outside (0, 1], the shapes do not broadcast, or two
        Series inputs have different indexes.
    """
    index = _series_index(f=f, r=r, rho=rho)
    f = _as_float_array(f, "f")
    r = _as_float_array(r, "r")
    rho = _as_float_array(rho, "rho")
    _check_f(f, whole=False)
    if np.any(r <= 0):
        raise InputError("r (negative-binomial size) must be > 0; check alpha and f.")
    _check_rho(rho, "rho")
    f, r, rho = _broadcast(f=f, r=r, rho=rho)
    if f.size == 0:
        return _result(np.zeros(f.shape), index)
    s = r - f
    (uf, us, urho), inverse = _unique_rows(f.ravel(), s.ravel(), rho.ravel())
    vals = _inverse_moment_distinct(uf, us, urho)
    return _result(vals[inverse].reshape(f.shape), index)


def _unique_rows(*cols: np.ndarray) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    # Distinct rows of stacked columns and the inverse index; lexsort is ~50x faster
    # than np.unique(axis=0) on a million rows.
    order = np.lexsort(cols[::-1])
    sorted_cols = [c[order] for c in cols]
    new = np.ones(order.size, dtype=bool)
    new[1:] = np.logical_or.reduce([c[1:] != c[:-1] for c in sorted_cols])
    group = np.cumsum(new) - 1
    inverse = np.empty(order.size, dtype=np.intp)
    inverse[order] = group
    return tuple(c[new] for c in sorted_cols), inverse


# --------------------------------------------------------------------------- #
# Benedetti-Franconi individual risk (seed 004)
# --------------------------------------------------------------------------- #


def plugin_inclusion_probability(fk, Fk_hat, *, clip: bool = False):
    """Plug-in cell inclusion probability p̂_k = f_k / F̂_k (seed ``004_…`` eq. 4).

    F̂_k = Σ_{i in k} w_i is the design-weighted estimate of the population cell
    size; this is what sdcMicro and mu-Argus use.

    Parameters
    ----------
    fk : array_like
        Sample frequencies (>= 1).
    Fk_hat : array_like
        Weight sums of the same cells (> 0).
    clip : bool, default False
        F̂_k < f_k (weights below one) gives p̂_k > 1, which is not a probability.
        By default that raises; with ``clip=True`` such cells get p̂_k = 1 (the cell
        is taken as fully observed, risk 1/f_k).

    Returns
    -------
    numpy.ndarray or float or pandas.Series
        p̂_k, broadcast over the inputs (a Series with the input's index when an
        input is a Series; two Series must share one index).

    Raises
    ------
    InputError
        If F̂_k <= 0, F̂_k < f_k and ``clip`` is False, the shapes do not
        broadcast, or two Series inputs have different indexes.
    """
    index = _series_index(fk=fk, Fk_hat=Fk_hat)
    fk = _as_float_array(fk, "fk")
    Fk_hat = _as_float_array(Fk_hat, "Fk_hat")
    _check_f(fk, "fk", whole=False)
    if np.any(Fk_hat <= 0):
        raise InputError("Fk_hat (weight sum per cell) must be > 0; check the weight column.")
    fk, Fk_hat = _broadcast(fk=fk, Fk_hat=Fk_hat)
    p = fk / Fk_hat
    if np.any(p > 1):
        if not clip:
            raise InputError(
                "Fk_hat < fk in some cells (weights below 1), so p = fk/Fk_hat > 1; "
                "fix the weights or pass clip=True to treat those cells as fully sampled."
            )
        p = np.minimum(p, 1.0)
    return _result(p, index)


def _closed_forms(f: np.ndarray, p: np.ndarray) -> np.ndarray:
    # Seed 004 section 2 closed forms for f = 1, 2, 3 where p < 1/2. For p >= 1/2
    # they subtract nearly equal terms and divide by q^f, an absolute error of about
    # 1e-16 / q^f (f = 2, q = 1e-10 gives 1.5 instead of 0.5), so there the same
    # function is summed as its Taylor series about p = 1, the Gauss series
    # r = p/f * sum_n n! q^n / (f+1)_n (eq. 8), whose terms fall at least like 2^-n.
    near = p >= 0.5
    ps = np.where(near, 0.25, p)  # placeholder: near-one cells are filled below
    qs = 1.0 - ps
    lp = np.log(ps)
    r1 = ps / qs * (-lp)
    r2 = ps / qs**2 * (ps * lp + qs)
    r3 = ps / (2.0 * qs**3) * (qs * (3.0 * qs - 2.0) - 2.0 * ps**2 * lp)
    out = np.select([f == 1, f == 2], [r1, r2], r3)
    if np.any(near):
        out[near] = _route_series(f[near], np.zeros(int(near.sum())), p[near])
    return out


def polettini_closed_form(f, p):
    """Closed forms of the Benedetti-Franconi risk for f = 1, 2, 3 (seed ``004_…`` §2).

    .. math::

        r(1) &= \\frac{p}{1-p}\\log\\frac{1}{p}, \\qquad
        r(2) = \\frac{p}{(1-p)^2}\\,[p \\log p + 1 - p], \\\\
        r(3) &= \\frac{p}{2 q^3}\\,[q(3q - 2) - 2 p^2 \\log p], \\quad q = 1 - p .

    The seed's last simplification for f = 3 prints ``2 q_k^2`` in the denominator;
    its own preceding expression p³/3 · ₂F₁(3, 3; 4; q) reduces to ``2 q^3`` (as in
    mu-Argus), and only that agrees with the series, so ``2 q^3`` is used here.

    As printed, these forms cancel catastrophically as p -> 1 (seed ``004_…`` §2):
    their absolute error is about 1e-16 / q^f, so f = 3 at q = 1e-8 would give
    1.65. They are therefore evaluated as printed only for p < 1/2; for p >= 1/2
    the same function is summed as its Taylor series about p = 1, the Gauss
    series r = p/f Σ_n n! q^n / (f+1)_n (seed ``004_…`` eq. 8). The result agrees
    with :func:`benedetti_franconi_risk` to about 1e-15 relative for every p and
    always lies in (0, 1/f]; p = 1 returns 1/f.

    Parameters
    ----------
    f : array_like of int
        Sample frequencies, each 1, 2 or 3.
    p : array_like of float
        Inclusion probabilities in (0, 1].

    Returns
    -------
    numpy.ndarray or float or pandas.Series
        The risk r = E(1/F | f), broadcast over the inputs (a Series, with its
        index, when an input is a Series).

    Raises
    ------
    InputError
        If f is not 1, 2 or 3, p is outside (0, 1], the shapes do not broadcast, or
        two Series inputs have different indexes.
    """
    index = _series_index(f=f, p=p)
    f = _as_float_array(f, "f")
    p = _as_float_array(p, "p")
    _check_f(f)
    if np.any(f > 3):
        raise InputError("polettini_closed_form covers f = 1, 2, 3 only; use benedetti_franconi_risk.")
    _check_rho(p, "p")
    f, p = _broadcast(f=f, p=p)
    out = _closed_forms(f.ravel(), p.ravel()).reshape(f.shape)
    return _result(out, index)


def _sdcmicro_formula(f: np.ndarray, p: np.ndarray) -> np.ndarray:
    # sdcMicro indivRisk(method="approx") / measure_risk: the closed forms for f = 1, 2
    # (exact values of E(1/F); evaluated stably near p = 1, where sdcMicro's own
    # expressions cancel), p / (f - 1 + p) for f > 2 (mu-Argus).
    shape = f.shape
    f, p = f.ravel(), p.ravel()
    out = p / (f - 1.0 + p)
    low = f <= 2
    if np.any(low):
        out[low] = _closed_forms(f[low], p[low])
    return out.reshape(shape)


def benedetti_franconi_risk(
    fk,
    pk,
    method: Literal["exact", "approx", "measure_risk", "polettini9", "polettini10"] = "exact",
):
    """Benedetti-Franconi individual risk r_k = E(1/F_k | f_k) (seed ``004_…`` eq. 1-6).

    Under π_k ∝ 1/π_k, F_k | π_k ~ Poisson(N π_k), f_k | F_k ~ Bin(F_k, p_k) (seed
    ``004_…`` eq. 2), F_k - f_k | f_k ~ NegBin(f_k, p_k) (the display after eq. 2) and

    .. math::

        r_k = \\frac{p_k^{f_k}}{f_k}\\,{}_2F_1(f_k, f_k; f_k+1; 1-p_k)
            = \\frac{p_k}{f_k}\\,{}_2F_1(1, 1; f_k+1; 1-p_k)   \\quad \\text{(eq. 6, 8)} .

    Parameters
    ----------
    fk : array_like of int
        Sample frequencies of the record's (or cell's) key combination, >= 1;
        ``"exact"`` also takes the fractional counts of ``missing="wildcard"`` with
        0 < alpha < 1 (the negative binomial with real size f_k).
    pk : array_like of float
        Cell inclusion probabilities in (0, 1], usually
        :func:`plugin_inclusion_probability` (f_k / F̂_k).
    method : {"exact", "approx", "measure_risk", "polettini9", "polettini10"}
        ``"exact"`` (default): :func:`negbin_inverse_moment` with r = f, relative
        error ~1e-15 for every f and p. ``"approx"``: sdcMicro's ``indivRisk``
        default (and mu-Argus): the closed forms for f = 1, 2 (which are exact
        values of E(1/F), equal to ``"exact"`` to about 1e-15 relative; evaluated
        as in :func:`polettini_closed_form`, since the printed forms cancel
        catastrophically as p -> 1) and p / (f - 1 + p) for f > 2, which
        overstates the risk at small f > 2; p = 1 gives 1/f. This is also what
        sdcMicro's ``measure_risk()`` reports
        (``R/measure_risk.R`` calls ``indivRisk``). ``"measure_risk"``: sdcMicro's
        C++ helper ``compute_risk`` (``src/Measure_Risk.h``, used today only by
        ``ldiversity()``, despite the name): the same formulas evaluated at
        p - 0.0001 (also at p = 1); where p <= 0.0001 sdcMicro returns NaN, here
        the limit 0. Kept for comparison with that legacy code.
        ``"polettini9"``, ``"polettini10"``: the seed's second- and first-order
        large-f approximations (eq. 9, 10), which always understate the risk.

    Returns
    -------
    numpy.ndarray or float or pandas.Series
        r_k, broadcast over ``fk`` and ``pk``; p = 1 gives 1/f, p -> 0 gives 0.
        When ``fk`` or ``pk`` is a pandas Series the result is a Series with its
        index (the inputs are paired by position, so two Series must share one
        index).

    Raises
    ------
    InputError
        On an unknown method, f < 1 (or fractional, except with ``"exact"``), p
        outside (0, 1] (p > 1 arises when the weight sum F̂_k is below f_k),
        shapes that do not broadcast, or two Series with different indexes.

    Notes
    -----
    IHSN guide Table 1 (seed ``001_…``, sdcMicro's ``francdat``) is reproduced by
    ``"exact"`` and ``"approx"`` only: all its cells have f <= 2, where the two
    coincide. ``"measure_risk"`` (p - 0.0001) is off in the third decimal (0.0111
    against 0.0117 for one record). ``"polettini9"`` and ``"polettini10"`` are large-f
    approximations and understate these small cells: 0.104 and 0.087 against 0.177
    for f = 1, F̂ = 17, and column sums 0.704 and 0.604 against 0.966.
    """
    if method not in RISK_METHODS:
        raise InputError(
            f"unknown method {method!r} for benedetti_franconi_risk; use one of {RISK_METHODS}."
        )
    index = _series_index(fk=fk, pk=pk)
    f = _as_float_array(fk, "fk")
    p = _as_float_array(pk, "pk")
    _check_f(f, "fk", whole=method != "exact")
    _check_rho(p, "pk")
    f, p = _broadcast(fk=f, pk=p)
    if method == "exact":
        return _result(np.asarray(negbin_inverse_moment(f, f, p), dtype=float), index)
    if method == "approx":
        out = _sdcmicro_formula(f, p)
    elif method == "measure_risk":
        shifted = p - 1e-4
        tiny = shifted <= 0.0
        out = np.where(tiny, 0.0, _sdcmicro_formula(f, np.where(tiny, 0.5, shifted)))
    else:
        q = 1.0 - p
        bracket = 1.0 + q / (f + 1.0)
        if method == "polettini9":
            bracket = bracket + 2.0 * q**2 / ((f + 1.0) * (f + 2.0))
        out = p / f * bracket
    return _result(np.asarray(out, dtype=float), index)
