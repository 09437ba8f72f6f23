"""Loss functions for publish/suppress decisions (Zaslavsky & Horton 1998).

Seed ``003_…`` (Zaslavsky & Horton, *Balancing disclosure risk against the loss
of nonpublication*, JOS 14(4), 1998), Sections 2-3. For domain ``i`` with sample
size ``n``, population size ``N``, sample count ``y`` in the class and unknown
population count ``Y``, a decision ``d`` (1 = publish, 0 = suppress) carries a
loss ``L_d(y, Y, n, N)``. The risk ``R_d = E[L_d | y]`` is computed in
:mod:`sdcbayes.risk.beta_binomial`.

Every loss is a :class:`Loss`: a ``name``, a ``params`` mapping and a vectorised
``__call__(y, Y, n, N)`` that broadcasts its four arguments (NumPy rules) and
returns a float array. ``depends_on_Y`` tells the expectation code whether it
must enumerate the posterior predictive of ``Y`` at all.

Disclosure losses ``L_1``:

- ``uniques-equal:S=...``       ``y exp(-Y/S)``                 -- seed 003 eq. (2)
- ``uniques-gamma:S=...,a=...`` ``y / (1 + Y/(a S))^(a+1)``     -- seed 003 Sec. 3, after eq. (2)
- ``uniques-proportions:pi=p1/p2/...``  ``y sum_s pi_s exp(-Y pi_s)`` -- seed 003 eq. (1)
- ``threshold:Ymin=...``        ``I(Y < Ymin)``        -- Pannekoek-de Waal rule (Sec. 3)
- ``known-respondents:S=...``   ``y exp(-y/S)``        -- respondents known (Sec. 3)

Nonpublication losses ``L_0`` (Sec. 3): ``constant`` (1), ``y``, ``Y``, ``n``, ``N``.

Any other loss: :func:`user_loss` wraps a callable with a name.

The cell-level disclosure loss ``reidentifications`` (``f/F``) is defined with the model
comparison (:data:`sdcbayes.risk.compare.REIDENTIFICATION_LOSS`) and read by
:func:`sdcbayes.risk.compare.compare_models` and :func:`sdcbayes.risk.decisions.decide_cells`,
not by :func:`parse_loss`, which the domain decisions (:func:`sdcbayes.risk.decisions.decide`)
use too: it counts the re-identifications in a key cell.

Imports NumPy only (plus the project's exceptions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from sdcbayes.exceptions import InputError

__all__ = [
    "LOSS_NAMES",
    "Loss",
    "constant_loss",
    "domain_population_loss",
    "domain_sample_loss",
    "known_respondents_loss",
    "parse_loss",
    "population_count_loss",
    "sample_count_loss",
    "threshold_loss",
    "uniques_equal_loss",
    "uniques_gamma_loss",
    "uniques_proportions_loss",
    "user_loss",
]

LossFunction = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Loss:
    """A named, parameterised loss ``L(y, Y, n, N)``.

    Parameters
    ----------
    name : str
        Short name (the :func:`parse_loss` spelling for the built-in losses).
    params : Mapping[str, float]
        Parameters, for printing, stamping and re-parsing.
    func : callable
        ``func(y, Y, n, N) -> array``; must broadcast its arguments.
    depends_on_Y : bool
        False when the loss is a function of ``(y, n, N)`` only, so that its
        expectation needs no enumeration of ``Y``.
    builtin : bool
        True only for the losses this module's factories build (and so
        :func:`parse_loss`): ``name`` and ``params`` then say exactly what ``func``
        computes, and the expectation code may use that family's closed form
        (:func:`sdcbayes.risk.compare.expected_loss_enumerated`). A
        :func:`user_loss` is never built in, whatever its name.
    """

    name: str
    params: Mapping[str, float] = field(default_factory=dict)
    func: LossFunction | None = field(default=None, repr=False, compare=False)
    depends_on_Y: bool = True
    builtin: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self):
        # Read-only view so a Loss cannot be mutated after it was stamped on results.
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def __call__(self, y, Y, n, N) -> np.ndarray:
        """Evaluate the loss; arguments broadcast together (NumPy rules)."""
        y, Y, n, N = (np.asarray(a, dtype=float) for a in (y, Y, n, N))
        out = np.asarray(self.func(y, Y, n, N), dtype=float)
        # A loss that ignores some arguments still returns the broadcast shape.
        shape = np.broadcast_shapes(y.shape, Y.shape, n.shape, N.shape, out.shape)
        return np.broadcast_to(out, shape)

    @property
    def spec(self) -> str:
        """The string :func:`parse_loss` turns back into this loss."""
        if not self.params:
            return self.name
        return self.name + ":" + ",".join(f"{k}={_fmt(v)}" for k, v in self.params.items())


def _fmt(v) -> str:
    if isinstance(v, tuple):
        return "/".join(_fmt(x) for x in v)
    return repr(v) if isinstance(v, float) and not float(v).is_integer() else str(int(v))


def _positive(name: str, loss: str, value) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise InputError(
            f"loss {loss!r}: parameter {name} must be a positive number; got {value!r}"
        )
    return value


# --- disclosure losses L1 ---------------------------------------------------

#: How far the ``uniques-proportions`` shares may sum from 1. Shares are typed as rounded
#: decimals (thirds as 0.333/0.333/0.333 sum to 0.999), so 1e-6 would refuse honest input;
#: 1e-3 still refuses every real slip (0.5/0.3/0.3 = 1.1, a share left out) and moves the
#: loss by at most about 0.1% (it scales with the shares), far inside the posterior's spread.
PROPORTIONS_SUM_TOL = 1e-3 + 1e-12  # + 1e-12: 0.999 in binary sits a hair beyond 1e-3
#: Elements of the ``(size(Y), shares)`` temporary of ``uniques-proportions`` (8 MiB of
#: float64): the risk code blocks ``Y`` by its own budget without knowing the number of
#: shares, so the loss chunks the shares itself and its memory does not grow with them.
_PROPORTIONS_BLOCK = 1 << 20


def uniques_equal_loss(S: float) -> Loss:
    """Count expected disclosed sample uniques, ``S`` equal subclasses: ``y exp(-Y/S)``.

    Seed 003, eq. (2): each subclass holds a fraction ``1/S`` of the class, so a
    sample person is alone in her subclass with probability ``exp(-Y/S)``
    (Poisson approximation).
    """
    S = _positive("S", "uniques-equal", S)
    return Loss("uniques-equal", {"S": S}, lambda y, Y, n, N: y * np.exp(-Y / S), builtin=True)


def uniques_gamma_loss(S: float, a: float) -> Loss:
    """Count expected disclosed uniques with Gamma-distributed subclass sizes.

    Seed 003, Section 3 (after eq. 2): with subclass fractions
    ``pi_s ~ Gamma(a, rate a S)`` (so ``S E pi_s = 1``), eq. (1) integrates to
    ``y / (1 + Y/(a S))^(a+1)``; ``a -> inf`` recovers eq. (2).
    """
    S = _positive("S", "uniques-gamma", S)
    a = _positive("a", "uniques-gamma", a)
    return Loss(
        "uniques-gamma",
        {"S": S, "a": a},
        lambda y, Y, n, N: y * np.power(1.0 + Y / (a * S), -(a + 1.0)),
        builtin=True,
    )


def uniques_proportions_loss(pi) -> Loss:
    """Count expected disclosed uniques given subclass shares: ``y sum_s pi_s exp(-Y pi_s)``.

    Seed 003, eq. (1). ``pi`` are the subclass fractions of the class: positive and
    summing to 1 (within :data:`PROPORTIONS_SUM_TOL`); they are used as given.
    """
    p = np.asarray(pi, dtype=float).ravel()
    if p.size == 0 or not np.all(np.isfinite(p)) or np.any(p <= 0):
        raise InputError(
            "loss 'uniques-proportions': pi must be a non-empty list of positive fractions, "
            "e.g. uniques-proportions:pi=0.5/0.3/0.2"
        )
    total = float(p.sum())
    if abs(total - 1.0) > PROPORTIONS_SUM_TOL:
        raise InputError(
            f"loss 'uniques-proportions': the subclass shares pi must sum to 1 (they split "
            f"the class); {'/'.join(_fmt(x) for x in p.tolist())} sums to {total:.6g}: "
            "adjust them, e.g. uniques-proportions:pi=0.5/0.3/0.2"
        )

    def f(y, Y, n, N):
        # Sum over subclasses on a trailing axis, in chunks of shares so that the
        # (size(Y), chunk) temporary stays near _PROPORTIONS_BLOCK elements whatever
        # the number of shares (one trailing-axis sum, bit for bit the unchunked
        # one, while all the shares fit in one chunk).
        Y = np.asarray(Y, dtype=float)
        chunk = max(1, _PROPORTIONS_BLOCK // max(1, Y.size))
        total = np.sum(p[:chunk] * np.exp(-Y[..., None] * p[:chunk]), axis=-1)
        for start in range(chunk, p.size, chunk):
            q = p[start:start + chunk]
            total = total + np.sum(q * np.exp(-Y[..., None] * q), axis=-1)
        return y * total

    return Loss("uniques-proportions", {"pi": tuple(p.tolist())}, f, builtin=True)


def threshold_loss(Ymin: float) -> Loss:
    """Threshold loss ``I(Y < Ymin)`` (Pannekoek-de Waal rule; seed 003, Section 3).

    Notes
    -----
    The seed states the rule as "publish if Y_i > Y_min" but the loss as
    "L1 = 1 if Y_i < Y_min"; the two disagree at ``Y = Ymin``. This follows the
    loss statement: ``Y = Ymin`` carries no loss (for integer counts,
    ``threshold:Ymin=k`` here is the rule's ``Y_min = k - 1``).

    ``Ymin`` must be positive and finite: at ``Ymin <= 0`` the loss is 0 for every
    count, a typo that would mean "no disclosure risk anywhere" (audit BB6, F4).
    """
    Ymin = float(Ymin)
    if not math.isfinite(Ymin):
        raise InputError(f"loss 'threshold': Ymin must be a finite number; got {Ymin!r}")
    if Ymin <= 0:
        # counts are >= 0, so I(Y < Ymin) would be 0 for every domain: "no disclosure
        # risk anywhere", all published, every total 0 -- a typo, never a rule
        raise InputError(
            f"loss 'threshold': Ymin must be positive (I(Y < Ymin) is 0 for every count "
            f"Y >= 0 when Ymin <= 0, so no domain would be at risk); got {_fmt(Ymin)}: give "
            "the population count below which a domain is at risk, e.g. threshold:Ymin=5"
        )
    return Loss("threshold", {"Ymin": Ymin}, lambda y, Y, n, N: (Y < Ymin).astype(float),
                builtin=True)


def known_respondents_loss(S: float) -> Loss:
    """Disclosure loss when respondents' identities are known, ``y exp(-y/S)``.

    Seed 003, Section 3 ("if the identities of the sampled respondents are
    known ... the risk depends on y"); eq. (2) with ``Y`` replaced by ``y``.

    Notes
    -----
    The seed's formula is garbled in the available text (OCR: "L1 = -exp(y/10)").
    ``y exp(-y/S)`` is this package's reading: eq. (2) for known respondents. It
    reproduces the seed's Figure 1 sensitivity: with it the seed's 71% suppression
    at 20% risk lies within the tie-break range [69.2%, 72.3%] the package reports
    (69.2% with the default, input-order tie-break).
    """
    S = _positive("S", "known-respondents", S)
    return Loss(
        "known-respondents", {"S": S}, lambda y, Y, n, N: y * np.exp(-y / S), depends_on_Y=False,
        builtin=True,
    )


# --- nonpublication losses L0 (seed 003, Section 3) ------------------------


def constant_loss() -> Loss:
    """Equal nonpublication loss for every suppressed cell, ``L0 = 1``."""
    return Loss("constant", {}, lambda y, Y, n, N: np.ones_like(y), depends_on_Y=False,
                builtin=True)


def sample_count_loss() -> Loss:
    """Count the sample records concealed, ``L0 = y``."""
    return Loss("y", {}, lambda y, Y, n, N: y, depends_on_Y=False, builtin=True)


def population_count_loss() -> Loss:
    """Count the population units the suppressed cell represents, ``L0 = Y``."""
    return Loss("Y", {}, lambda y, Y, n, N: Y, builtin=True)


def domain_sample_loss() -> Loss:
    """Use the sample size of the domain, ``L0 = n``."""
    return Loss("n", {}, lambda y, Y, n, N: n, depends_on_Y=False, builtin=True)


def domain_population_loss() -> Loss:
    """Use the population size of the domain, ``L0 = N``."""
    return Loss("N", {}, lambda y, Y, n, N: N, depends_on_Y=False, builtin=True)


def user_loss(func: LossFunction, name: str, *, depends_on_Y: bool = True, **params) -> Loss:
    """Wrap a user callable ``func(y, Y, n, N)`` (broadcasting) as a named :class:`Loss`."""
    if not callable(func):
        raise InputError(f"user loss {name!r}: func must be callable as func(y, Y, n, N)")
    if not isinstance(name, str) or not name:
        raise InputError("user loss: give a non-empty name, e.g. user_loss(f, name='my-loss')")
    return Loss(name, params, func, depends_on_Y=depends_on_Y)


# --- parsing ----------------------------------------------------------------

# name -> (factory, required parameter names)
_REGISTRY: dict[str, tuple[Callable[..., Loss], tuple[str, ...]]] = {
    "uniques-equal": (uniques_equal_loss, ("S",)),
    "uniques-gamma": (uniques_gamma_loss, ("S", "a")),
    "uniques-proportions": (uniques_proportions_loss, ("pi",)),
    "threshold": (threshold_loss, ("Ymin",)),
    "known-respondents": (known_respondents_loss, ("S",)),
    "constant": (constant_loss, ()),
    "y": (sample_count_loss, ()),
    "Y": (population_count_loss, ()),
    "n": (domain_sample_loss, ()),
    "N": (domain_population_loss, ()),
}

#: Valid loss names for :func:`parse_loss`, with their parameters.
LOSS_NAMES: tuple[str, ...] = tuple(
    name + (":" + ",".join(f"{p}=..." for p in req) if req else "")
    for name, (_, req) in _REGISTRY.items()
)


def _comparison_loss_names() -> tuple[str, ...]:
    """Loss names only the model comparison knows (:mod:`sdcbayes.risk.compare`)."""
    # imported here: compare imports this module, and this runs on an error path only
    from sdcbayes.risk.compare import REIDENTIFICATION_LOSS

    return (REIDENTIFICATION_LOSS.name,)


def _unknown_loss_message(name: str, spec: str) -> str:
    """The InputError text for a name :func:`parse_loss` does not know, with the fix."""
    valid = ", ".join(LOSS_NAMES)
    if not name:
        return (f"no loss name in {spec!r}; a loss is NAME or NAME:KEY=VALUE, e.g. "
                f"uniques-equal:S=10; valid losses are {valid}")
    try:
        float(name)
    except ValueError:
        pass
    else:  # a bare number: a parameter value without its loss (uniques-equal:S=1?)
        return (f"loss {name!r} is a number, not a loss name; a loss is NAME or "
                f"NAME:KEY=VALUE, e.g. uniques-equal:S={name} or threshold:Ymin={name}; "
                f"valid losses are {valid}")
    if name in _comparison_loss_names():
        # f/F counts re-identifications in a key cell: the cell-level functions read it
        # (audit DD5, F5), the domain decisions keep seed 003's losses
        return (f"loss {name!r} (f/F, expected re-identifications) is a model-comparison "
                "loss for the cells of a key, written without parameters: "
                "sdcbayes.risk.compare.compare_models (sdcbayes compare, its default) and "
                "sdcbayes.risk.decisions.decide_cells (e.g. decide_cells(fk, size=fk, "
                "prob=fk/Fk_hat, disclosure_loss='reidentifications')) take it; the domain "
                "decisions (decide, sdcbayes decide) do not; the losses all of them take "
                f"are {valid}")
    return f"unknown loss {name!r}; valid losses are {valid}"


def parse_loss(spec: str | Loss) -> Loss:
    """Turn a loss specification string into a :class:`Loss`.

    Grammar: ``name`` or ``name:key=value,key=value``; names are case-sensitive
    (``y`` and ``Y`` differ). Examples: ``"uniques-equal:S=10"``,
    ``"uniques-gamma:S=10,a=2"``, ``"threshold:Ymin=5"``,
    ``"known-respondents:S=10"``, ``"uniques-proportions:pi=0.5/0.3/0.2"``,
    ``"y"``, ``"constant"``, ``"Y"``, ``"n"``, ``"N"``.
    A :class:`Loss` is returned unchanged.

    Parameters
    ----------
    spec : str or Loss
        The loss as text (the names listed in the module docstring, with their
        parameters), or a :class:`Loss`.

    Returns
    -------
    Loss

    Raises
    ------
    InputError
        On an unknown name (the message lists the valid ones and says when the name
        is a model-comparison loss such as ``reidentifications``, which
        :func:`sdcbayes.risk.compare.parse_comparison_loss` and
        :func:`sdcbayes.risk.decisions.decide_cells` read), a number in place
        of a name, an unknown, missing, repeated or non-numeric parameter.
    """
    if isinstance(spec, Loss):
        return spec
    if not isinstance(spec, str):
        raise InputError(f"loss must be a string such as 'uniques-equal:S=10'; got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    if name not in _REGISTRY:
        raise InputError(_unknown_loss_message(name, spec))
    factory, required = _REGISTRY[name]
    params: dict[str, object] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if eq and key in params:  # the last value would win without a word
            raise InputError(
                f"loss {name!r}: parameter {key} is given twice in {spec!r}; give each "
                f"parameter once, e.g. {name}:{','.join(p + '=10' for p in required)}"
            )
        if not eq or key not in required:
            raise InputError(
                f"loss {name!r}: bad parameter {item!r}; "
                f"valid parameters are {list(required) or 'none'} (e.g. {spec.split(':')[0]}"
                f"{':' + ','.join(p + '=10' for p in required) if required else ''})"
            )
        try:
            params[key] = tuple(float(v) for v in value.split("/")) if key == "pi" else float(value)
        except ValueError:
            raise InputError(
                f"loss {name!r}: parameter {key}={value!r} is not a number; write e.g. "
                f"{name}:{','.join(p + ('=0.5/0.5' if p == 'pi' else '=10') for p in required)}"
            ) from None
    missing = [p for p in required if p not in params]
    if missing:
        raise InputError(
            f"loss {name!r}: missing parameter(s) {missing}; write e.g. "
            f"{name}:{','.join(p + '=10' for p in required)}"
        )
    return factory(**params)
