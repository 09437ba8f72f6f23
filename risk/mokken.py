"""Mokken, Kooiman, Pannekoek & Willenborg (1992): closed-form disclosure risk.

Seed ``000_…``: R.J. Mokken, P. Kooiman, J. Pannekoek, L.C.R.J. Willenborg,
*Disclosure risks for microdata*, Statistica Neerlandica 46(1), 49-67 (1992).
Equation numbers below are the paper's.

Notation (the paper's, Section 2.1): population of ``N`` elements, sample (the
released data set) of ``n``, sample fraction ``f = n/N``; an investigator knows
the key values of ``a`` population elements (his circle of acquaintances),
fraction ``f_a = a/N``; ``u`` population elements are unique on the key,
fraction ``f_u = u/N``; the key has ``k`` possible values. The disclosure risk
``R`` is the probability that the investigator finds at least one of his unique
acquaintances in the sample -- an upper bound for the actual risk, eq. (3).

What is here, by section of the paper:

- Section 2.2: :func:`expected_disclosures` (eq. 4), :func:`disclosure_risk`
  (eq. 5, 6, and eq. 18 with ``f_a = a_m/N``),
  :func:`disclosure_risk_hypergeometric` (the without-replacement distribution
  stated before eq. 5), :func:`maximal_sample_fraction` (eq. 7-9).
- Section 2.3: the Poisson-gamma model, :func:`poisson_gamma_alpha`
  (``alpha = 1/(k beta)``) and :func:`uniques_fraction` (eq. 10; per
  subpopulation, eq. 11 and 12); mu itself is
  :func:`sdcbayes.risk.poisson_gamma.expected_population_uniques`. The paper
  ties ``k alpha beta = 1``; :func:`uniques_fraction` and
  :func:`minimal_subpopulation_size` take ``omega = k alpha beta`` for the
  untied model (default 1, the tie).
- Section 3: :func:`subpopulation_risk` (eq. 13),
  :func:`maximal_subpopulation_risk` (eq. 13-15),
  :func:`minimal_subpopulation_size` (eq. 16-17).
- Section 4: :func:`expected_union_size` (eq. 21),
  :func:`expected_union_size_unequal` (its generalisation to unequal circles),
  :func:`union_size_pmf` (eq. 20), :func:`multiple_investigator_risk` (eq. 19).
- Section 5: :func:`key_disclosure_probabilities` (eq. 25),
  :func:`total_risk` (eq. 22-23, 26, 27).

Every function broadcasts its array arguments (NumPy rules), so posterior draws
of ``f_u`` (or of ``alpha``, ``beta`` and, untied, ``omega``) of any shape, e.g.
``(chain, draw)``, give draws of the risk. Arguments must be finite, and
population sizes at most 2**53 (:data:`MAX_POPULATION`). The element-wise functions also accept
:class:`xarray.DataArray` arguments and then return a DataArray aligned and
broadcast by dimension name. Functions that reduce over subpopulations or keys
take an ``axis`` (plain arrays only).

The printed equations (7)-(9), (14)-(17), (20), (25) and (27) are missing or
illegible in the seed's text; the forms used here are reconstructed from the
surrounding text (see each function): ``f_max = ln(1-gamma)/(N ln(1 - f_a f_u))``
and its approximations ``-ln(1-gamma)/(N f_a f_u)`` and ``gamma/(N f_a f_u)``
(7-9); ``ln(1-R) = -a f f_u,max`` (14); ``N_min = (C^(-1/(1+alpha)) - 1)/beta``,
``C = -ln(1-gamma)/(a f)`` (16-17); ``p_i = f_ai (f_ui - f_u,i-1)`` (25); ``TR ~ 1 - exp(-n sum p_i)`` (27).
They are checked against the paper's Table 1 and the values quoted with Figure 1
in ``tests/test_risk_mokken.py``.

Arguments whose shapes do not broadcast raise :class:`InputError` naming them
and their shapes (the check of :mod:`sdcbayes.risk.individual`), as do
non-numeric values.

Imports NumPy, SciPy and xarray only (plus the project's exceptions and that
NumPy-only check) -- never PyMC.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import xarray as xr
from scipy import optimize, special, stats

from sdcbayes.exceptions import InputError
from sdcbayes.risk.individual import _broadcast

__all__ = [
    "disclosure_risk",
    "disclosure_risk_hypergeometric",
    "expected_disclosures",
    "expected_union_size",
    "expected_union_size_unequal",
    "key_disclosure_probabilities",
    "maximal_sample_fraction",
    "maximal_subpopulation_risk",
    "minimal_subpopulation_size",
    "multiple_investigator_risk",
    "poisson_gamma_alpha",
    "subpopulation_risk",
    "total_risk",
    "union_size_pmf",
    "uniques_fraction",
]

F = TypeVar("F", bound=Callable[..., Any])

_RISK_METHODS = ("binomial", "poisson")
_TOTAL_RISK_METHODS = ("product", "poisson", "joint")


# --------------------------------------------------------------------------- helpers


def _labelled(func: F) -> F:
    """Let an element-wise array function take :class:`xarray.DataArray` arguments.

    Positional array arguments that are DataArrays are aligned and broadcast by
    dimension name with :func:`xarray.apply_ufunc`; keyword arguments are passed
    through unchanged. Plain arrays take the direct path.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        labelled = [isinstance(x, xr.DataArray) for x in (*args, *kwargs.values())]
        if not any(labelled):
            return func(*args, **kwargs)
        # Array-valued keywords are moved to positions so that apply_ufunc
        # broadcasts them too; strings (method names) stay keywords.
        names = list(kwargs)
        arrays = [k for k in names if not isinstance(kwargs[k], str)]
        options = {k: kwargs[k] for k in names if isinstance(kwargs[k], str)}
        n_pos = len(args)

        def call(*values: Any) -> Any:
            named = dict(zip(arrays, values[n_pos:], strict=True))
            return func(*values[:n_pos], **named, **options)

        return xr.apply_ufunc(call, *args, *(kwargs[k] for k in arrays), keep_attrs="drop")

    return wrapper  # type: ignore[return-value]


def _as_float(name: str, value: Any) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(
            f"{name} must be a number or an array of numbers; got {value!r}. Pass numeric values."
        ) from None


def _check_range(
    name: str,
    value: Any,
    low: float,
    high: float = np.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> np.ndarray:
    """Convert to float and check ``low <= value <= high`` and finiteness (NaN fails).

    Infinite values are refused even where ``high`` is ``inf``: no argument of
    the paper's formulas is meaningfully infinite, and ``inf`` turned into
    plausible-looking wrong numbers (e.g. a hypergeometric risk of 1 at
    ``N = inf``, where the binomial limit is ``n f_a f_u``).
    """
    x = _as_float(name, value)
    infinite = np.isinf(x)  # NaN is reported by the range check below
    if np.any(infinite):
        raise InputError(
            f"{name} must be finite; got {float(x[infinite].flat[0])!r}. Pass a finite {name}."
        )
    ok_low = x > low if low_open else x >= low
    ok_high = x < high if high_open else x <= high
    bad = ~(ok_low & ok_high)
    if np.any(bad):
        lb = "(" if low_open else "["
        hb = ")" if high_open else "]"
        first = float(x[bad].flat[0])
        raise InputError(
            f"{name} must lie in {lb}{low:g}, {high:g}{hb}; got {first!r}"
            f"{f' (and {int(bad.sum()) - 1} more)' if bad.sum() > 1 else ''}. "
            f"Pass {name} inside that range."
        )
    return x


#: Largest population size accepted, 2**53 (about 9.0e15): above it float64 no longer
#: holds every whole number, so ``N - u - n + 1`` and the without-replacement forms lose
#: their meaning (and from about 1.3e154 the product ``y1 * (y2 + u)`` of
#: :func:`_log_hypergeometric_zero` overflowed, dropping a term and doubling the
#: hypergeometric risk). Real populations are many orders of magnitude below it.
MAX_POPULATION = 2.0**53


def _check_population(name: str, value: Any, *, low_open: bool = True) -> np.ndarray:
    """A population size: finite, > 0 (>= 0 with ``low_open=False``), <= :data:`MAX_POPULATION`."""
    x = _check_range(name, value, 0.0, low_open=low_open)
    if np.any(x > MAX_POPULATION):
        raise InputError(
            f"{name} is a population size and must be at most 2**53 (about 9.0e15), beyond "
            f"which floating point no longer holds whole counts; got "
            f"{float(x[x > MAX_POPULATION].flat[0]):g}. Pass the real population size."
        )
    return x


def _check_method(method: str, allowed: tuple[str, ...]) -> None:
    if method not in allowed:
        raise InputError(
            f"method must be one of {', '.join(repr(m) for m in allowed)}; got {method!r}. "
            "Pick one of those."
        )


def _scalar(x: np.ndarray) -> Any:
    """0-d arrays become NumPy scalars (point values in, point values out)."""
    return x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x


def _risk_from_log_survival(log_survival: np.ndarray) -> np.ndarray:
    """``1 - exp(log P(no disclosure))`` without cancellation for tiny risks."""
    return -np.expm1(log_survival)


# ----------------------------------------------------------------- Section 2: one key


@_labelled
def expected_disclosures(f_a: Any, f_u: Any, n: Any) -> Any:
    r"""Expected number of unique acquaintances in the sample, seed 000 eq. (4).

    .. math:: \mu_{as} = N f f_a f_u = n f_a f_u

    Under assumption A1 (membership of the sample, of the circle of
    acquaintances and of the population uniques are independent), this is the
    expected number of disclosures.

    Parameters
    ----------
    f_a : array_like
        Fraction of the population known to the investigator, ``a/N``, in [0, 1].
    f_u : array_like
        Fraction of population uniques on the key, ``u/N``, in [0, 1]
        (point value or posterior draws).
    n : array_like
        Sample size (``f N``), >= 0; need not be an integer.

    Returns
    -------
    numpy.ndarray or float
        ``n * f_a * f_u``, broadcast.
    """
    f_a = _check_range("f_a", f_a, 0.0, 1.0)
    f_u = _check_range("f_u", f_u, 0.0, 1.0)
    n = _check_range("n", n, 0.0)
    f_a, f_u, n = _broadcast(f_a=f_a, f_u=f_u, n=n)
    return _scalar(n * f_a * f_u)


@_labelled
def disclosure_risk(f_a: Any, f_u: Any, n: Any, *, method: str = "binomial") -> Any:
    r"""Disclosure risk ``R`` for one investigator and one key, seed 000 eq. (5)-(6).

    ``R`` is the probability that at least one sample element is a unique
    acquaintance of the investigator (eq. 2). With the binomial approximation to
    the hypergeometric number of unique acquaintances in the sample, eq. (5):

    .. math:: R = 1 - (1 - f_a f_u)^n ,

    and for large ``n`` and small ``f_a f_u``, eq. (6):

    .. math:: R \approx 1 - \exp(-n f_a f_u) = 1 - \exp(-N f f_a f_u) .

    With ``f_a = E a_m / N`` (or ``a_m/N``) this is also the multiple-investigator
    risk of eq. (18)-(19); see :func:`multiple_investigator_risk`.

    Parameters
    ----------
    f_a : array_like
        Fraction of the population known to the investigator, ``a/N``, in [0, 1].
    f_u : array_like
        Fraction of population uniques, in [0, 1]; posterior draws give draws of ``R``.
    n : array_like
        Sample size, >= 0 (``f N``; a non-integer value is allowed, as in the
        paper's Figure 1 where ``n = 0.001 x 63 624``).
    method : {"binomial", "poisson"}
        ``"binomial"``: eq. (5) (default); ``"poisson"``: eq. (6).

    Returns
    -------
    numpy.ndarray or float
        The risk, in [0, 1], broadcast over the arguments.

    See Also
    --------
    disclosure_risk_hypergeometric : the without-replacement form behind eq. (5).
    """
    _check_method(method, _RISK_METHODS)
    f_a = _check_range("f_a", f_a, 0.0, 1.0)
    f_u = _check_range("f_u", f_u, 0.0, 1.0)
    n = _check_range("n", n, 0.0)
    f_a, f_u, n = _broadcast(f_a=f_a, f_u=f_u, n=n)
    x = f_a * f_u
    if method == "poisson":
        return _scalar(_risk_from_log_survival(-n * x))
    with np.errstate(divide="ignore", invalid="ignore"):
        # log1p keeps (1 - x)^n accurate for the tiny x of practice; x = 1 gives
        # log 0 = -inf and hence R = 1 unless n = 0 (0 * -inf is patched below).
        log_survival = np.where(n == 0, 0.0, n * np.log1p(-x))
    return _scalar(_risk_from_log_survival(log_survival))


@_labelled
def disclosure_risk_hypergeometric(f_a: Any, f_u: Any, n: Any, N: Any) -> Any:
    r"""Disclosure risk under sampling without replacement, seed 000 Section 2.2.

    The number of unique acquaintances in a simple random sample of ``n`` out
    of ``N`` is hypergeometric with ``u_a = N f_a f_u`` "successes" (the text
    before eq. 5), so

    .. math:: R = 1 - \binom{N - u_a}{n} \Big/ \binom{N}{n}
                = 1 - \frac{\Gamma(N - u_a + 1)\,\Gamma(N - n + 1)}
                           {\Gamma(N - u_a - n + 1)\,\Gamma(N + 1)} ,

    evaluated with log-gamma functions (so a non-integer ``u_a``, as produced
    by an estimated ``f_u``, interpolates smoothly). ``R = 1`` when
    ``n + u_a > N``. Eq. (5) is the binomial approximation to this.

    Parameters
    ----------
    f_a, f_u : array_like
        Fractions of acquaintances and of population uniques, in [0, 1].
    n : array_like
        Sample size, in [0, N].
    N : array_like
        Population size, > 0.

    Returns
    -------
    numpy.ndarray or float
        The risk, broadcast.
    """
    f_a = _check_range("f_a", f_a, 0.0, 1.0)
    f_u = _check_range("f_u", f_u, 0.0, 1.0)
    N = _check_population("N", N)
    n = _check_range("n", n, 0.0)
    f_a, f_u, n, N = _broadcast(f_a=f_a, f_u=f_u, n=n, N=N)
    if np.any(n > N):
        raise InputError("n must not exceed N (a sample is part of its population); fix n or N.")
    u_a = N * f_a * f_u
    rest = N - u_a - n + 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        log_survival = _log_hypergeometric_zero(N, u_a, n, np.where(rest > 0, rest, 1.0))
    risk = np.where(rest > 0, _risk_from_log_survival(log_survival), 1.0)
    return _scalar(np.clip(risk, 0.0, 1.0))


def _stirling_tail(x: np.ndarray) -> np.ndarray:
    """``lgamma(x) - [(x - 1/2) ln x - x + ln(2 pi)/2]`` for ``x >= 10`` (error < 1e-13).

    The first five terms of Stirling's series (Abramowitz & Stegun 6.1.40).
    """
    z = 1.0 / (x * x)
    return (1 / 12 - z * (1 / 360 - z * (1 / 1260 - z * (1 / 1680 - z / 1188)))) / x


def _log_hypergeometric_zero(
    N: np.ndarray, u: np.ndarray, n: np.ndarray, x1: np.ndarray
) -> np.ndarray:
    """``ln[C(N - u, n) / C(N, n)]`` with ``x1 = N - u - n + 1 > 0``.

    The four log-gamma terms are each ~ N ln N while their sum is ~ -u n / N,
    so the plain ``gammaln`` sum loses up to ~10 digits for tiny risks. For
    ``x1 >= 10`` the Stirling forms of ``lgamma(x1 + u) - lgamma(x1)`` and
    ``lgamma(x2 + u) - lgamma(x2)`` (``x2 = x1 + n``) are subtracted
    analytically, leaving only ``log1p`` of small quantities: with
    lgamma(x) = (x - 1/2) ln x - x + ln(2 pi)/2 + tail(x) (:func:`_stirling_tail`)
    for the four terms, the x ln x parts regroup exactly into the three ``log1p``.
    """
    plain = (
        special.gammaln(N - u + 1.0)
        + special.gammaln(N - n + 1.0)
        - special.gammaln(x1)
        - special.gammaln(N + 1.0)
    )
    big = x1 >= 10.0
    y1 = np.where(big, x1, 10.0)  # keep the unused branch finite
    y2 = y1 + n
    stirling = (
        (y1 - 0.5) * np.log1p(u * n / (y1 * (y2 + u)))
        - n * np.log1p(u / y2)
        - u * np.log1p(n / (y1 + u))
        + _stirling_tail(y1 + u)
        - _stirling_tail(y1)
        - _stirling_tail(y2 + u)
        + _stirling_tail(y2)
    )
    return np.where(big, stirling, plain)


@_labelled
def maximal_sample_fraction(
    gamma: Any, f_a: Any, f_u: Any, N: Any, *, method: str = "binomial"
) -> Any:
    r"""Maximal sample fraction ``f_max`` at which the risk equals ``gamma``, seed 000 eq. (7)-(9).

    Solving ``R = gamma`` for ``f = n/N``: from eq. (5), eq. (7),

    .. math:: f_{max} = \frac{\ln(1 - \gamma)}{N \ln(1 - f_a f_u)} ;

    from eq. (6), eq. (8),

    .. math:: f_{max} = \frac{-\ln(1 - \gamma)}{N f_a f_u} ;

    and for small ``gamma``, eq. (9),

    .. math:: f_{max} \approx \frac{\gamma}{N f_a f_u} .

    Since ``R`` increases with ``f``, any sample fraction ``<= f_max`` is "safe"
    (``R <= gamma``). A value ``>= 1`` means even a full census is safe;
    ``f_a f_u = 0`` gives ``inf``, ``f_a f_u = 1`` gives 0.

    Parameters
    ----------
    gamma : array_like
        Acceptable risk, in (0, 1).
    f_a, f_u : array_like
        Fractions of acquaintances and of population uniques, in [0, 1].
    N : array_like
        Population size, > 0.
    method : {"binomial", "poisson", "linear"}
        Eq. (7) (default, inverts eq. 5 exactly), eq. (8) (inverts eq. 6) or
        eq. (9) (small-``gamma`` approximation of eq. 8).

    Returns
    -------
    numpy.ndarray or float
        ``f_max``, broadcast.
    """
    _check_method(method, (*_RISK_METHODS, "linear"))
    gamma = _check_range("gamma", gamma, 0.0, 1.0, low_open=True, high_open=True)
    f_a = _check_range("f_a", f_a, 0.0, 1.0)
    f_u = _check_range("f_u", f_u, 0.0, 1.0)
    N = _check_population("N", N)
    gamma, f_a, f_u, N = _broadcast(gamma=gamma, f_a=f_a, f_u=f_u, N=N)
    x = f_a * f_u
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "binomial":
            f_max = np.log1p(-gamma) / (N * np.log1p(-x))
            f_max = np.where(x >= 1.0, 0.0, f_max)
        elif method == "poisson":
            f_max = -np.log1p(-gamma) / (N * x)
        else:
            f_max = gamma / (N * x)
        f_max = np.where(x == 0.0, np.inf, f_max)
    return _scalar(f_max)


# --------------------------------------------------- Section 2.3: Poisson-gamma model


@_labelled
def poisson_gamma_alpha(beta: Any, k: Any) -> Any:
    r"""Shape ``alpha`` implied by the scale ``beta``, seed 000 eq. (10)-(12).

    The cell frequencies have mean ``N/k`` and the negative binomial with
    parameters ``(N beta, alpha)`` has mean ``N beta alpha``, so

    .. math:: \alpha = 1/(k \beta) .

    Parameters
    ----------
    beta : array_like
        Scale parameter, > 0.
    k : array_like
        Number of key values (excluding the subpopulation indicator in
        eq. 11-12), > 0.

    Returns
    -------
    numpy.ndarray or float
    """
    beta = _check_range("beta", beta, 0.0, low_open=True)
    k = _check_range("k", k, 0.0, low_open=True)
    beta, k = _broadcast(beta=beta, k=k)
    return _scalar(1.0 / (k * beta))


def _uniques_fraction(
    N: np.ndarray, alpha: np.ndarray, beta: np.ndarray, omega: Any = 1.0
) -> np.ndarray:
    # exp/log1p form: (1 + N beta)^-(1 + alpha) underflows gracefully for big N.
    # (Kept local rather than calling sdcbayes.risk.poisson_gamma, which requires
    # N >= n >= 1; Mokken's subpopulation search evaluates N in [0, inf).)
    # omega = K alpha beta multiplies; omega = 1 (the tie) leaves the value unchanged.
    return omega * np.exp(-(1.0 + alpha) * np.log1p(N * beta))


@_labelled
def uniques_fraction(N: Any, alpha: Any, beta: Any, *, omega: Any = 1.0) -> Any:
    r"""Expected fraction of population uniques, ``f_u = mu/N``, seed 000 eq. (10).

    Under the Poisson-gamma model the cell frequencies ``Y_i`` are negative
    binomial with parameters ``(N beta, alpha)``, and

    .. math:: \mu = k \Pr(Y = 1) = k \alpha N \beta (1 + N\beta)^{-(1+\alpha)}
                  = N (1 + N\beta)^{-(1+\alpha)}  \quad (\alpha = 1/(k\beta)),

    so ``f_u = (1 + N beta)^-(1 + alpha)`` under the paper's tie
    ``k alpha beta = 1``. Without the tie (the default of
    :class:`sdcbayes.models.PoissonGammaModel`, whose free parameter is
    ``omega = k alpha beta``) the first form gives

    .. math:: f_u = \omega (1 + N\beta)^{-(1+\alpha)} ,

    which is what ``omega`` selects; ``omega = 1`` (default) is eq. (10) exactly.
    Per subpopulation ``j`` pass
    ``N_j, alpha_j, beta_j`` (model 11, eq. 11) or ``N_j, 1/(k beta), beta``
    (common ``beta``, model 12, eq. 12); under model (12) ``f_u`` decreases in
    ``N_j`` (Section 3.1), which is why the smallest subpopulation carries the
    maximal risk.

    Parameters
    ----------
    N : array_like
        (Sub)population size, >= 0.
    alpha : array_like
        Shape, > 0 (``1/(k beta)`` in the paper).
    beta : array_like
        Scale, > 0. Posterior draws of ``(alpha, beta)`` give draws of ``f_u``
        under the tie only; for an untied posterior pass its ``omega`` draws too.
    omega : array_like, optional
        ``k alpha beta`` (the mean cell probability times k), > 0; default 1, the
        paper's tie ``alpha = 1/(k beta)``. Pass the posterior's ``omega`` (or
        ``k * alpha * beta``) when ``alpha`` and ``beta`` were not tied.

    Returns
    -------
    numpy.ndarray or float
        ``f_u``, broadcast; in (0, 1] when ``omega <= 1``. With ``omega > 1`` it
        exceeds 1 for small ``N beta``: the untied model's expected population
        total is ``omega N``, not ``N``.
    """
    N = _check_population("N", N, low_open=False)
    alpha = _check_range("alpha", alpha, 0.0, low_open=True)
    beta = _check_range("beta", beta, 0.0, low_open=True)
    omega = _check_range("omega", omega, 0.0, low_open=True)
    N, alpha, beta, omega = _broadcast(N=N, alpha=alpha, beta=beta, omega=omega)
    return _scalar(_uniques_fraction(N, alpha, beta, omega))


# -------------------------------------------------------------- Section 3: subpopulations


def subpopulation_risk(
    f_a: Any, f_u: Any, n: Any, *, axis: int = -1, method: str = "poisson"
) -> Any:
    r"""Disclosure risk over subpopulations, seed 000 eq. (13).

    Under assumption A2 (independence within each subpopulation ``j``) the
    probability of no disclosure is ``prod_j (1 - f_aj f_uj)^{n_j}``; its
    logarithm gives eq. (13),

    .. math:: \ln(1 - R) \approx -\sum_j N_j f_j f_{aj} f_{uj}
                         = -\sum_j n_j f_{aj} f_{uj} .

    Parameters
    ----------
    f_a : array_like
        Fraction of subpopulation ``j`` known to the investigator, ``a_j/N_j``.
    f_u : array_like
        Fraction of uniques in subpopulation ``j``.
    n : array_like
        Sample size in subpopulation ``j``, ``f_j N_j``.
    axis : int
        The subpopulation axis of the broadcast arguments (default last).
    method : {"poisson", "binomial"}
        ``"poisson"``: eq. (13) (default); ``"binomial"``: the product
        ``1 - prod_j (1 - f_aj f_uj)^{n_j}`` it approximates (eq. 5 per
        subpopulation).

    Returns
    -------
    numpy.ndarray or float
        The risk, with ``axis`` reduced.
    """
    _check_method(method, _RISK_METHODS)
    f_a = _check_range("f_a", f_a, 0.0, 1.0)
    f_u = _check_range("f_u", f_u, 0.0, 1.0)
    n = _check_range("n", n, 0.0)
    f_a, f_u, n = _broadcast(f_a=f_a, f_u=f_u, n=n)
    x = f_a * f_u
    if method == "poisson":
        log_survival = -np.sum(n * x, axis=axis)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(n == 0, 0.0, n * np.log1p(-x))
        log_survival = np.sum(terms, axis=axis)
    return _scalar(_risk_from_log_survival(log_survival))


def maximal_subpopulation_risk(
    a: Any,
    f: Any,
    f_u: Any,
    N: Any = None,
    *,
    axis: int = -1,
    method: str = "poisson",
) -> Any:
    r"""Maximal risk over allocations of ``a`` acquaintances, seed 000 eq. (13)-(15).

    Eq. (13) is linear in the allocation ``a_j = N_j f_aj`` (``sum_j a_j = a``),
    so the risk is maximal when all acquaintances belong to the subpopulation
    with the largest ``f_j f_uj``:

    .. math:: \ln(1 - R_{max}) = -a \max_j (f_j f_{uj}) ,

    which is eq. (14), ``ln(1 - R) = -a f f_{u,max}``, when every subpopulation
    has the same sample fraction ``f``. Under model (12) ``f_uj`` decreases in
    ``N_j``, so ``f_{u,max}`` is ``f_u`` of the smallest subpopulation (eq. 15;
    the printed equation is illegible in the seed, this is its text).

    With ``method="binomial"`` (needs ``N``) the per-subpopulation form
    ``1 - prod_j (1 - a_j f_uj / N_j)^{f_j N_j}`` is used; ``ln(1 - R) =
    sum_j f_j N_j ln(1 - a_j f_uj / N_j)`` is concave in the allocation, so its
    minimum (the risk's maximum) over the simplex ``sum_j a_j = a`` sits at a
    vertex and
    ``R_max = max_j [1 - (1 - a f_uj/N_j)^{f_j N_j}]``.

    Parameters
    ----------
    a : array_like
        Number of acquaintances of the investigator, >= 0 (broadcast against
        the reduced shape).
    f : array_like
        Sample fraction per subpopulation (or one common value), in [0, 1].
    f_u : array_like
        Fraction of uniques per subpopulation, in [0, 1].
    N : array_like, optional
        Subpopulation sizes, required for ``method="binomial"``; each must be
        at least ``a``.
    axis : int
        The subpopulation axis (default last).
    method : {"poisson", "binomial"}

    Returns
    -------
    numpy.ndarray or float
        The maximal risk, with ``axis`` reduced.
    """
    _check_method(method, _RISK_METHODS)
    a = _check_range("a", a, 0.0)
    f = _check_range("f", f, 0.0, 1.0)
    f_u = _check_range("f_u", f_u, 0.0, 1.0)
    if method == "poisson":
        f, f_u = _broadcast(f=f, f_u=f_u)
        worst = np.max(f * f_u, axis=axis)
        # a is one value per result: it broadcasts against the reduced shape
        a, worst = _broadcast(a=a, **{"f, f_u without the subpopulation axis": worst})
        return _scalar(_risk_from_log_survival(-a * worst))
    if N is None:
        raise InputError(
            "method='binomial' needs the subpopulation sizes N; pass N or use method='poisson'."
        )
    N = _check_population("N", N)
    f, f_u, N = _broadcast(f=f, f_u=f_u, N=N)
    _broadcast(a=a, **{"f, f_u, N without the subpopulation axis": np.min(N, axis=axis)})
    a_b = np.expand_dims(a, axis=axis) if a.ndim else a
    if np.any(a_b > N):
        raise InputError(
            "a exceeds a subpopulation size N_j, so the acquaintances cannot all sit there; "
            "pass a <= min(N) or use method='poisson'."
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(f == 0, 0.0, f * N * np.log1p(-a_b * f_u / N))
    return _scalar(_risk_from_log_survival(np.min(terms, axis=axis)))


def _max_risk_log_gap(
    N: float, gamma: float, a: float, f: float, alpha: float, beta: float, omega: float = 1.0
) -> float:
    """``log P(no disclosure) - log(1 - gamma)`` for all ``a`` in a subpopulation of size ``N``."""
    # f_a f_u = a f_u / N <= 1 under the tie; an untied omega > 1 can push it above 1
    # for N near a, where the risk is 1 (log1p(-1) = -inf, which brentq handles).
    x = min(a * _uniques_fraction(np.float64(N), alpha, beta, omega) / N, 1.0)
    with np.errstate(divide="ignore"):
        return float(f * N * np.log1p(-x) - np.log1p(-gamma))


def _minimal_size_binomial(
    gamma: float, a: float, f: float, alpha: float, beta: float, omega: float = 1.0
) -> float:
    if a == 0.0 or f == 0.0:
        return 0.0
    # The risk falls with N (Section 3.1), so the root is unique; below N = a
    # the acquaintances do not fit in the subpopulation.
    low = max(a, 1e-12)
    if _max_risk_log_gap(low, gamma, a, f, alpha, beta, omega) >= 0.0:
        return 0.0  # every admissible size is safe (the paper's "N_min <= 0")
    high = 2.0 * low
    for _ in range(2000):  # risk ~ a f N^-(1+alpha) -> 0, so doubling terminates
        if _max_risk_log_gap(high, gamma, a, f, alpha, beta, omega) >= 0.0:
            break
        low, high = high, 2.0 * high
    else:  # pragma: no cover - only for pathological inputs (alpha ~ -1)
        raise InputError(
            f"no subpopulation size brings the risk down to gamma={gamma!r} "
            f"(a={a!r}, f={f!r}, alpha={alpha!r}, beta={beta!r}, omega={omega!r}); "
            "check the parameters."
        )
    return float(
        optimize.brentq(
            _max_risk_log_gap, low, high, args=(gamma, a, f, alpha, beta, omega), rtol=1e-13
        )
    )


@_labelled
def minimal_subpopulation_size(
    gamma: Any,
    a: Any,
    f: Any,
    alpha: Any,
    beta: Any,
    *,
    omega: Any = 1.0,
    method: str = "poisson",
) -> Any:
    r"""Minimal subpopulation size ``N_min`` for a maximal risk ``gamma``, seed 000 eq. (16)-(17).

    ``N_min`` is the subpopulation size at which the estimated maximal risk
    (eq. 14, all ``a`` acquaintances in the smallest subpopulation) equals
    ``gamma``; eq. (16): ``-ln(1 - gamma) = a f f_u(N_min)``. With ``f_u`` of
    eq. (10) this gives eq. (17),

    .. math:: N_{min} = \frac{C^{-1/(1+\alpha)} - 1}{\beta} ,
              \qquad C = \frac{-\ln(1 - \gamma)}{a f} .

    ``N_min`` increases with ``a f`` (the expected number of acquaintances in
    the sample). A value ``<= 0`` means every subpopulation size is large
    enough (``C >= 1``).

    Eq. (10) and hence eq. (17) assume the tie ``k alpha beta = 1``. Without it
    (``omega = k alpha beta`` free, the default of
    :class:`sdcbayes.models.PoissonGammaModel`), ``f_u(N) = omega (1 + N
    beta)^{-(1+alpha)}`` (:func:`uniques_fraction`), and solving eq. (16) the
    same way gives eq. (17) with

    .. math:: C = \frac{-\ln(1 - \gamma)}{a f \omega} .

    Ignoring ``omega`` moves ``N_min`` by about a factor
    ``omega^{1/(1+alpha)}`` (e.g. 8 % too small, i.e. unsafe, at ``omega = 1.1``).

    ``method="binomial"`` solves the same condition with the risk of eq. (5)
    instead of eq. (6), ``1 - (1 - a f_u(N)/N)^{f N} = gamma``, which has no
    closed form: :func:`scipy.optimize.brentq` per element, bracketed from
    ``N = a`` (the smallest subpopulation that can hold the acquaintances) by
    doubling. It returns 0 when every ``N >= a`` is safe.

    Parameters
    ----------
    gamma : array_like
        Acceptable risk, in (0, 1).
    a : array_like
        Number of acquaintances, >= 0.
    f : array_like
        Sample fraction, in [0, 1].
    alpha, beta : array_like
        Poisson-gamma parameters (model 12: ``alpha = 1/(k beta)``), > 0;
        posterior draws give draws of ``N_min``.
    omega : array_like, optional
        ``k alpha beta``, > 0; default 1 (the paper's tie). Pass the posterior's
        ``omega`` draws when ``alpha`` and ``beta`` were not tied, so that
        ``N_min`` and the posterior's ``f_u`` describe the same model.
    method : {"poisson", "binomial"}

    Returns
    -------
    numpy.ndarray or float
        ``N_min``, broadcast.
    """
    _check_method(method, _RISK_METHODS)
    gamma = _check_range("gamma", gamma, 0.0, 1.0, low_open=True, high_open=True)
    a = _check_range("a", a, 0.0)
    f = _check_range("f", f, 0.0, 1.0)
    alpha = _check_range("alpha", alpha, 0.0, low_open=True)
    beta = _check_range("beta", beta, 0.0, low_open=True)
    omega = _check_range("omega", omega, 0.0, low_open=True)
    gamma, a, f, alpha, beta, omega = _broadcast(
        gamma=gamma, a=a, f=f, alpha=alpha, beta=beta, omega=omega
    )
    if method == "poisson":
        with np.errstate(divide="ignore"):
            # log(omega) = 0 exactly for the default omega = 1: the tied result is unchanged
            log_c = np.log(-np.log1p(-gamma)) - np.log(a * f) - np.log(omega)
        # expm1 keeps N_min accurate when C is close to 1 (N_min near 0).
        return _scalar(np.expm1(-log_c / (1.0 + alpha)) / beta)
    args = (gamma, a, f, alpha, beta, omega)
    # brentq is scalar; the loop runs over parameter draws (thousands at most),
    # never over records or cells.
    flat = zip(*(x.ravel() for x in args), strict=True)
    out = np.array([_minimal_size_binomial(*map(float, v)) for v in flat])
    return _scalar(out.reshape(args[0].shape))


# ----------------------------------------------------- Section 4: multiple investigators


@_labelled
def expected_union_size(N: Any, a: Any, m: Any) -> Any:
    r"""Expected number of people known to at least one of ``m`` investigators, seed 000 eq. (21).

    With ``m`` circles of acquaintances of size ``a`` drawn independently at
    random from the population (the "committee problem"),

    .. math:: E a_m = N - N (1 - a/N)^m .

    ``E a_1 = a``; ``E a_m -> N`` as ``m`` grows; ``E a_m ~ m a`` for small ``a/N``.

    Parameters
    ----------
    N : array_like
        Population size, > 0.
    a : array_like
        Size of each circle of acquaintances, in [0, N].
    m : array_like
        Number of investigators, >= 0.

    Returns
    -------
    numpy.ndarray or float
        ``E a_m``, broadcast.
    """
    N = _check_population("N", N)
    a = _check_range("a", a, 0.0)
    m = _check_range("m", m, 0.0)
    N, a, m = _broadcast(N=N, a=a, m=m)
    if np.any(a > N):
        raise InputError(
            "a must not exceed N (a circle of acquaintances is part of the population); fix a or N."
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        log_missed = np.where(m == 0, 0.0, m * np.log1p(-a / N))
    return _scalar(-N * np.expm1(log_missed))


def expected_union_size_unequal(N: Any, a: Any, *, axis: int = -1) -> Any:
    r"""Expected union size for circles of unequal sizes ``a_l`` (generalises seed 000 eq. 21).

    Each circle is an independent simple random sample of size ``a_l``, so an
    element is missed by all with probability ``prod_l (1 - a_l/N)``:

    .. math:: E a_m = N - N \prod_{l=1}^m (1 - a_l/N) .

    The paper cites Johnson & Kotz (1977) for the unequal case without printing
    it; this is the expectation that follows from its assumptions (linearity of
    expectation over the N elements, each covered with probability
    ``1 - prod_l (1 - a_l/N)``), and equals eq. (21) when all ``a_l = a``.

    Parameters
    ----------
    N : array_like
        Population size, > 0 (broadcast against the reduced shape).
    a : array_like
        Circle sizes, investigators along ``axis``.
    axis : int
        The investigator axis (default last).

    Returns
    -------
    numpy.ndarray or float
    """
    N = _check_population("N", N)
    a = _check_range("a", a, 0.0)
    if N.ndim:  # N is one value per result: it broadcasts against a without its axis
        _broadcast(N=N, **{"a without the investigator axis": np.sum(a, axis=axis)})
    N_b = np.expand_dims(N, axis=axis) if N.ndim else N
    if np.any(a > N_b):
        raise InputError("every a_l must be at most N; fix the circle sizes.")
    with np.errstate(divide="ignore"):
        log_missed = np.sum(np.log1p(-a / N_b), axis=axis)
    return _scalar(-N * np.expm1(log_missed))


def union_size_pmf(N: int, a: int, m: int) -> np.ndarray:
    r"""Distribution of the union size ``a_m`` of ``m`` random circles, seed 000 eq. (20).

    The committee problem (Mantel & Pasternack 1968; Gittelsohn 1969; Johnson &
    Kotz 1977), whose inclusion-exclusion form is

    .. math:: \Pr(a_m = x) = \binom{N}{x} \sum_{j=0}^{x} (-1)^{x-j} \binom{x}{j}
              \left[\binom{j}{a} \Big/ \binom{N}{a}\right]^m .

    (the printed eq. 20 is illegible in the seed; this is the standard form.)
    The alternating sum cancels catastrophically in floating point, so it is
    evaluated here by the equivalent forward recursion: given a union of size
    ``x``, the next circle adds ``d`` new elements with hypergeometric
    probability ``C(N-x, d) C(x, a-d) / C(N, a)``. Cost ``O(m N a)``: meant for
    populations up to some tens of thousands with moderate ``m a``.

    Parameters
    ----------
    N, a, m : int
        Population size (> 0), circle size (in [0, N]) and number of
        investigators (>= 0). Scalars only: the support depends on ``N``.

    Returns
    -------
    numpy.ndarray
        ``p[x] = Pr(a_m = x)`` for ``x = 0, ..., N``; sums to 1, mean eq. (21).
    """
    values = {"N": N, "a": a, "m": m}
    for name, v in values.items():
        if np.ndim(v) != 0 or not float(v).is_integer():
            raise InputError(f"{name} must be a scalar integer for union_size_pmf; got {v!r}.")
    N, a, m = int(N), int(a), int(m)
    if N <= 0 or not 0 <= a <= N or m < 0:
        raise InputError(
            f"union_size_pmf needs N > 0, 0 <= a <= N and m >= 0; got N={N}, a={a}, m={m}."
        )
    p = np.zeros(N + 1)
    if m == 0:
        p[0] = 1.0
        return p
    p[a] = 1.0
    x = np.arange(N + 1)
    d = np.arange(a + 1)
    # step[x, d] = P(d new | union x); target index x + d never exceeds N
    # because the pmf of d vanishes for d > N - x.
    step = stats.hypergeom.pmf(d[None, :], N, N - x[:, None], a)
    target = np.minimum(x[:, None] + d[None, :], N).ravel()
    for _ in range(m - 1):  # loop over investigators, not over records or cells
        p = np.bincount(target, weights=(p[:, None] * step).ravel(), minlength=N + 1)
    return p


@_labelled
def multiple_investigator_risk(
    f_u: Any, n: Any, N: Any, a: Any, m: Any, *, method: str = "binomial"
) -> Any:
    r"""Risk that at least one of ``m`` investigators discloses, ``R'_m``, seed 000 eq. (19).

    With ``a_m`` the size of the union of the ``m`` circles of acquaintances,
    eq. (18) is ``R_m ~ 1 - (1 - f_{a_m} f_u)^n``; replacing ``a_m`` by its
    expectation (eq. 21) gives eq. (19):

    .. math:: R'_m = 1 - (1 - f_{Ea_m} f_u)^n , \qquad f_{Ea_m} = E a_m / N .

    As ``m`` grows, ``R'_m`` rises to ``1 - (1 - f_u)^n`` (everyone known).
    Since the risk is concave in ``a_m``, ``R'_m >= E R_m`` (Jensen).

    Parameters
    ----------
    f_u : array_like
        Fraction of population uniques, in [0, 1].
    n : array_like
        Sample size, >= 0.
    N : array_like
        Population size, > 0.
    a : array_like
        Acquaintances per investigator, in [0, N].
    m : array_like
        Number of investigators, >= 0.
    method : {"binomial", "poisson"}
        Eq. (5)-type power (default, as eq. 19) or eq. (6)-type exponential.

    Returns
    -------
    numpy.ndarray or float
        ``R'_m``, broadcast.
    """
    # shapes are checked here, so that a mismatch names these arguments (not f_a)
    _broadcast(
        f_u=_as_float("f_u", f_u), n=_as_float("n", n), N=_as_float("N", N),
        a=_as_float("a", a), m=_as_float("m", m),
    )
    f_ea = expected_union_size(N, a, m) / _as_float("N", N)
    return disclosure_risk(f_ea, f_u, n, method=method)


# ---------------------------------------------------------------- Section 5: multiple keys


def _ordered_keys(f_a: Any, f_u: Any, axis: int) -> tuple[np.ndarray, np.ndarray]:
    f_a = _check_range("f_a", f_a, 0.0, 1.0)
    f_u = _check_range("f_u", f_u, 0.0, 1.0)
    f_a, f_u = _broadcast(f_a=f_a, f_u=f_u)
    if f_a.ndim == 0:
        raise InputError("total risk needs the keys along an axis; pass arrays of f_a and f_u.")
    if np.any(np.diff(f_a, axis=axis) > 0) or np.any(np.diff(f_u, axis=axis) < 0):
        raise InputError(
            "keys must be ordered from least to most detailed, with f_a non-increasing and "
            "f_u non-decreasing along the key axis (Mokken et al. 1992, assumption 24); "
            "reorder the keys."
        )
    return f_a, f_u


def key_disclosure_probabilities(f_a: Any, f_u: Any, *, axis: int = -1) -> np.ndarray:
    r"""Per-key disclosure probabilities ``p_i`` of hierarchical keys, seed 000 eq. (25).

    For keys ``K_1, ..., K_m`` ordered from least to most detailed, with nested
    circles of acquaintances ``A_i ⊂ A_{i-1}`` and nested uniques
    ``U_i ⊃ U_{i-1}`` (assumption 24), an element is disclosed on ``K_i`` but
    on no lower key iff it lies in ``A_i ∩ U_i \ U_{i-1}``; under independence

    .. math:: p_i = f_{ai} (f_{ui} - f_{u,i-1}), \qquad f_{u,0} = 0 ,

    so ``p_1 = f_{a1} f_{u1}``. (These are the probabilities of disjoint events;
    the paper uses them as the conditional ``p_i`` of eq. 23.)

    Parameters
    ----------
    f_a : array_like
        Fraction of acquaintances per key, non-increasing along ``axis``.
    f_u : array_like
        Fraction of uniques per key, non-decreasing along ``axis``.
    axis : int
        The key axis (default last).

    Returns
    -------
    numpy.ndarray
        ``p_i``, same shape as the broadcast arguments.
    """
    f_a, f_u = _ordered_keys(f_a, f_u, axis)
    return f_a * np.diff(f_u, axis=axis, prepend=0.0)


def total_risk(
    f_a: Any, f_u: Any, n: Any, *, axis: int = -1, method: str = "product"
) -> Any:
    r"""Total disclosure risk ``TR`` over hierarchical keys, seed 000 eq. (22)-(27).

    ``TR = 1 - P^n`` (eq. 22) with ``P`` the probability that one element is
    disclosed on none of the keys, ``P = prod_i (1 - p_i)`` (eq. 23), and
    ``p_i`` from eq. (25) (:func:`key_disclosure_probabilities`). Methods:

    - ``"product"`` -- eq. (26), as printed:
      ``TR = 1 - (1 - f_{a1} f_{u1})^n prod_{i>=2} [1 - f_{ai}(f_{ui} - f_{u,i-1})]^n``.
    - ``"poisson"`` -- eq. (27): ``TR ~ 1 - exp(-n sum_i f_{ai}(f_{ui} - f_{u,i-1}))``.
    - ``"joint"`` -- ``TR = 1 - (1 - sum_i p_i)^n``: the events of eq. (25)
      are disjoint, so ``1 - sum_i p_i`` is the exact non-disclosure
      probability under the paper's assumptions (A1, eq. 24, sampling with
      replacement as in eq. 5). Eq. (26) treats the unconditional ``p_i`` as the
      conditional ones of eq. (23); the two differ at second order in ``p_i``,
      negligible at practical risk levels (checked by simulation in the tests).

    When ``f_a`` is constant over the keys the sum telescopes to
    ``f_a f_{um}``, and ``"poisson"`` and ``"joint"`` equal the single-key risk
    of eq. (6) and eq. (5) for the most detailed key (Section 5.1).

    Parameters
    ----------
    f_a : array_like
        Fraction of acquaintances per key, non-increasing along ``axis``.
    f_u : array_like
        Fraction of uniques per key, non-decreasing along ``axis``; posterior
        draws in leading axes give draws of ``TR``.
    n : array_like
        Sample size, >= 0 (broadcast against the reduced shape).
    axis : int
        The key axis (default last), keys ordered from least to most detailed.
    method : {"product", "poisson", "joint"}

    Returns
    -------
    numpy.ndarray or float
        ``TR``, with ``axis`` reduced.
    """
    _check_method(method, _TOTAL_RISK_METHODS)
    p = key_disclosure_probabilities(f_a, f_u, axis=axis)
    n = _check_range("n", n, 0.0)
    # n is one value per result: it broadcasts against f_a, f_u without the key axis
    _broadcast(n=n, **{"f_a, f_u without the key axis": np.sum(p, axis=axis)})
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "poisson":
            log_p = -np.sum(p, axis=axis)
        elif method == "product":
            log_p = np.sum(np.log1p(-p), axis=axis)
        else:
            log_p = np.log1p(-np.sum(p, axis=axis))
        log_survival = np.where(n == 0, 0.0, n * log_p)
    return _scalar(_risk_from_log_survival(log_survival))
