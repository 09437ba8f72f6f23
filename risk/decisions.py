r"""Publish/suppress decisions under posterior expected losses (Zaslavsky & Horton 1998).

Seed ``003_…`` (Zaslavsky & Horton, *Balancing disclosure risk against the loss
of nonpublication*, JOS 14(4), 1998), Sections 2-4; ARCHITECTURE.md "Decisions".
For cell (or domain) ``i`` the risks of publishing and of suppressing are

.. math::

    R_{1i} = E[L_1(y_i, Y_i, n_i, N_i) \mid \text{data}],\qquad
    R_{0i} = E[L_0(y_i, Y_i, n_i, N_i) \mid \text{data}],

the expectation running over the posterior predictive of ``Y_i`` *and* over the
posterior of the hyperparameters (seed 003, Section 2, the display defining
:math:`R_{di}`; with draws of the hyperparameters the draw-wise risks are
averaged). Everything after the two risk vectors is shared by the domain model
(:func:`decide`) and the cell-level model for microdata (:func:`decide_cells`)
through :func:`decide_from_risks`:

*Rule at a trade-off factor c* (seed 003, Section 2, "publish if
:math:`R_{1i}/R_{0i} < c`"): ``publish_i = R1_i < c R0_i``, and cells with
``R1_i = 0`` are always published (nothing to lose). This minimises
:math:`\sum_i w_i [R_{1i} d_i + c R_{0i} (1 - d_i)]` over all decisions ``d``.

*Publication order* (seed 003, Section 4, Table 2): cells sorted by ascending
``R1/R0``; cells with ``R1 = R0 = 0`` first, cells with ``R0 = 0 < R1`` last
(as :func:`sdcbayes.risk.beta_binomial.publication_order`). Ratios equal to a
relative ``1e-12`` are ties and keep input order, so floating-point noise never
decides an order.

*Frontier* (seed 003, Section 4, Figure 1, "next to last column ... against
the last column, both normalized to run from 0 to 1"). Row ``j = 0..m`` is the
state after publishing the first ``j`` cells of the order:

- ``disclosure_share`` :math:`D_j = \sum_{\text{published}} w R_1 / \sum_{\text{all}} w R_1`
  rises from 0 (row 0, nothing published) to 1 (row m, everything published);
- ``nonpublication_share`` :math:`S_j = \sum_{\text{suppressed}} w R_0 / \sum_{\text{all}} w R_0`
  falls from 1 to 0.

Between rows the frontier is the straight segment obtained by publishing the
next cell with probability ``u`` (a randomised rule), so the piecewise-linear
curve is attainable in expectation. Because the order is the greedy order of
the fractional knapsack "minimise suppressed ``wR0`` subject to published
``wR1 <= D``" (equivalently, maximise published ``wR0``: values ``wR0``, weights
``wR1``, taken in descending ``R0/R1``, a greedy order optimal for the fractional
problem; Dantzig 1957, "Discrete-variable extremum problems", *Operations
Research* 5, 266-288), this curve is the lowest attainable by any rule (seed 003,
Section 4: "the lowest that can be attained with any nondisclosure rule").

*Suppression at a target* :math:`D^*`: the nonpublication share at the point
of the frontier where the disclosure share equals :math:`D^*`, by linear
interpolation on the segment that crosses :math:`D^*` (the last such point if
``D`` is flat there, so cells without disclosure risk are published); 0 when
:math:`D^* \ge 1`. Seed 003, Section 4: "cut disclosure risk to 20% of its value
under full publication, while suppressing ... 38% of the data".

*Random suppression* (seed 003, Figure 1, the dotted line): publishing cells in
a uniformly random order, after ``j`` of ``m`` cells the expected shares are
exactly ``(j/m, 1 - j/m)`` whatever the risks and weights, i.e. the straight line
``D = 1 - S``; its suppression at a target is ``1 - D*``.

*Sensitivity* (seed 003, Section 4, the dashed curves): an alternative loss
pair produces its own order; that order is evaluated with the *reference*
risks (frontier and suppression at the target). Where the alternative ranks
cells equal (e.g. ``known-respondents``, whose ``R1/R0`` depends on ``y``
only) the result depends on how ties are broken: the default keeps input order,
and the range over all tie-breaks (ties ordered by reference ratio ascending =
best, descending = worst) is reported too.

*Jensen check* (seed 003, Section 3: "plugging in the posterior expectation of
``Y_i`` underestimates loss"): :math:`L_1(y, E[Y \mid y])` next to
:math:`R_1 = E[L_1(y, Y)]`; for loss functions convex in ``Y`` (all the
``uniques-*`` losses) the plug-in is never larger.

Imports NumPy, SciPy and pandas only -- never PyMC. Posterior draws of the
hyperparameters come in as plain arrays.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.provenance import json_safe, stamp
from sdcbayes.risk.assess import SummaryRepr
from sdcbayes.risk.beta_binomial import (
    _expected_loss_flat,
    fit_beta_binomial,
    posterior_mean_Y,
)
from sdcbayes.risk.individual import _series_index, _unique_rows
from sdcbayes.risk.losses import Loss, parse_loss

__all__ = [
    "DecisionResult",
    "decide",
    "decide_cells",
    "decide_from_risks",
    "frontier",
    "negbin_expected_loss",
    "optimal_decisions",
    "parse_alternative",
    "publication_ranking",
    "random_suppression_frontier",
    "suppression_at_target",
    "threshold_for_target",
]

# Batch elements (draws x distinct cells) per chunk when averaging over draws, and
# elements (draws x cells x support values) per block of the support enumeration:
# temporaries stay at ~8 MiB each (peak ~40 MiB) whatever the number of draws and cells.
_DRAW_CHUNK_ELEMENTS = 1 << 16
_SUPPORT_BLOCK_ELEMENTS = 1 << 20
# Relative tolerance under which two ratios R1/R0 count as tied.
_TIE_RTOL = 1e-12
# Names a suppression loss may have in a "DISCLOSURE/SUPPRESSION" alternative.
_SUPPRESSION_NAMES = ("constant", "y", "Y", "n", "N")
# Largest ``tail`` (probability of F - f left out of a NegBin enumeration) accepted: the
# truncation error of a loss bounded by B is at most B * tail, so a larger tail is a
# visible bias in the risks (tail=0.5 moved R by 24% in audit M), not a speed knob.
_MAX_TAIL = 1e-3
# Model names in the provenance stamps (the CLI's summary.json keeps decide()'s).
_MODEL_DOMAIN = "beta-binomial decisions (Zaslavsky-Horton)"
_MODEL_CELL = "cell-level decisions (Zaslavsky-Horton)"
_MODEL_RISKS = "decisions from given risks (Zaslavsky-Horton)"


# --- ordering, rule, frontier (shared by every model) ------------------------------


def _as_risks(R1, R0, weights=None):
    R1 = np.atleast_1d(np.asarray(R1, dtype=float))
    R0 = np.atleast_1d(np.asarray(R0, dtype=float))
    if R1.ndim != 1 or R1.shape != R0.shape:
        raise InputError(
            f"R1 and R0 must be 1-D arrays of one length (one value per cell); "
            f"got shapes {R1.shape} and {R0.shape}"
        )
    w = np.ones_like(R1) if weights is None else np.asarray(weights, dtype=float)
    if w.ndim == 0:
        w = np.full_like(R1, float(w))
    if w.shape != R1.shape:
        raise InputError(f"weights must have one value per cell ({R1.size}); got shape {w.shape}")
    for name, a in (("R1", R1), ("R0", R0), ("weights", w)):
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise InputError(f"{name} must be finite and non-negative; fix the input or the loss")
    return R1, R0, w


def _ratio_key(R1, R0):
    """Sort key: R1/R0, with nothing-at-stake cells first and R0 = 0 < R1 last."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = R1 / R0
    nothing = (R1 == 0) & (R0 == 0)
    return ratio, np.where(nothing, -np.inf, np.where(R0 == 0, np.inf, ratio))


def _tie_groups(key):
    """Group id per cell: equal (to a relative 1e-12) keys share a group; ids ascend with key."""
    if key.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(key, kind="stable")
    k = key[order]
    # isclose treats inf == inf as close, which is what we want for the end groups.
    new = ~np.isclose(k[1:], k[:-1], rtol=_TIE_RTOL, atol=0.0)
    gid_sorted = np.concatenate([[0], np.cumsum(new)])
    gid = np.empty_like(gid_sorted)
    gid[order] = gid_sorted
    return gid


def publication_ranking(R1, R0, tie_break=None):
    r"""Publication order: cell indices by ascending :math:`R_1/R_0` (seed 003, Sec. 4).

    Cells with ``R1 = R0 = 0`` come first, cells with ``R0 = 0 < R1`` last;
    ratios equal to a relative ``1e-12`` are tied and ordered by ``tie_break``
    (ascending), or by input position when ``tie_break`` is None.

    Returns
    -------
    order : ndarray of int, shape ``(cell,)``
        ``order[j]`` is the cell published ``j``-th.
    """
    R1 = np.atleast_1d(np.asarray(R1, dtype=float))
    R0 = np.atleast_1d(np.asarray(R0, dtype=float))
    _, key = _ratio_key(R1, R0)
    gid = _tie_groups(key)
    pos = np.arange(key.size)
    if tie_break is None:
        return np.lexsort((pos, gid))
    return np.lexsort((pos, np.asarray(tie_break, dtype=float), gid))


def optimal_decisions(R1, R0, c):
    r"""Bayes rule at trade-off factor ``c``: publish iff :math:`R_{1i} < c R_{0i}`.

    Seed 003, Section 2 ("publish if :math:`R_{1i}/R_{0i} < c`"). Cells with
    ``R1 = 0`` are published (publishing costs nothing). ``c = inf`` publishes
    everything. The rule minimises :math:`\sum_i w_i[R_{1i} d_i + c R_{0i}(1 - d_i)]`
    for any non-negative weights ``w`` (each term is minimised separately;
    at ``R1 = c R0`` both choices are optimal and the cell is suppressed).

    Returns
    -------
    ndarray of bool, shape ``(cell,)``
    """
    R1 = np.asarray(R1, dtype=float)
    R0 = np.asarray(R0, dtype=float)
    c = float(c)
    if not (c >= 0):
        raise InputError(f"c (the trade-off factor) must be >= 0; got {c!r}")
    if math.isinf(c):
        return np.ones(R1.shape, dtype=bool)
    # Compare the same ratios the publication order sorts on, so that a c taken
    # from the order (threshold_for_target) reproduces its prefix exactly.
    _, key = _ratio_key(R1, R0)
    return (R1 == 0) | (key < c)


def frontier(R1, R0, weights=None, order=None, eval_R1=None, eval_R0=None, names=None):
    r"""Cumulative disclosure loss against nonpublication loss along an order.

    Seed 003, Section 4 (Table 2's last two columns; Figure 1, both normalised).
    The order is :func:`publication_ranking` of ``(R1, R0)`` unless given; the
    shares are computed with ``(eval_R1, eval_R0)`` when given (an alternative
    order evaluated under the reference losses), else with ``(R1, R0)``.

    Returns
    -------
    pandas.DataFrame, ``m + 1`` rows
        Row ``j`` is the state after publishing the first ``j`` cells (row 0:
        nothing published). Columns: ``step`` (= j), ``cell`` (position of the
        cell published at this step; -1 on row 0), ``name`` (its name, when
        ``names`` is given), ``ratio`` (its ``R1/R0`` under the ordering losses),
        ``disclosure`` (sum of ``w*R1`` published), ``nonpublication`` (sum of
        ``w*R0`` still suppressed), ``disclosure_share`` (0 -> 1) and
        ``nonpublication_share`` (1 -> 0). A share whose total is 0 is 0 throughout.
    """
    R1, R0, w = _as_risks(R1, R0, weights)
    if (eval_R1 is None) != (eval_R0 is None):
        raise InputError("give both eval_R1 and eval_R0 (the reference risks), or neither")
    E1, E0 = (R1, R0) if eval_R1 is None else _as_risks(eval_R1, eval_R0)[:2]
    if E1.shape != R1.shape:
        raise InputError("eval_R1, eval_R0 must have one value per cell, like R1 and R0")
    if order is None:
        order = publication_ranking(R1, R0)
    order = np.asarray(order, dtype=np.int64)
    ratio, _ = _ratio_key(R1, R0)
    pub = np.concatenate([[0.0], np.cumsum((w * E1)[order])])
    pub0 = np.concatenate([[0.0], np.cumsum((w * E0)[order])])
    tot1, tot0 = float(np.sum(w * E1)), float(np.sum(w * E0))
    supp = tot0 - pub0
    # Cancellation in total - cumsum leaves ~1e-17 instead of 0 at the end.
    supp[-1] = 0.0
    supp = np.maximum(supp, 0.0)
    d_share = pub / tot1 if tot1 > 0 else np.zeros_like(pub)
    s_share = supp / tot0 if tot0 > 0 else np.zeros_like(supp)
    if tot1 > 0:
        d_share[-1] = 1.0
    out = {
        "step": np.arange(order.size + 1),
        "cell": np.concatenate([[-1], order]),
    }
    if names is not None:
        names = np.asarray(names, dtype=object)
        out["name"] = np.concatenate([[None], names[order]])
    out |= {
        "ratio": np.concatenate([[np.nan], ratio[order]]),
        "disclosure": pub,
        "nonpublication": supp,
        "disclosure_share": np.minimum(d_share, 1.0),
        "nonpublication_share": np.minimum(s_share, 1.0),
    }
    return pd.DataFrame(out)


def suppression_at_target(disclosure_share, nonpublication_share, target):
    r"""Nonpublication share needed to bring the disclosure share down to ``target``.

    Seed 003, Section 4 ("cut disclosure risk to 20% of its value under full
    publication, while suppressing ... 38% of the data"). Along a frontier
    (``disclosure_share`` non-decreasing, ``nonpublication_share``
    non-increasing; :func:`frontier` columns), the answer is
    :math:`S(t^*)` with :math:`t^* = \sup\{t : D(t) \le D^*\}` on the
    piecewise-linear curve through the rows, i.e. linear interpolation on the
    segment that crosses the target (publishing the marginal cell with the
    matching probability). Returns 0 when the whole file meets the target.
    """
    D = np.asarray(disclosure_share, dtype=float)
    S = np.asarray(nonpublication_share, dtype=float)
    target = _check_target(target)
    j = int(np.searchsorted(D, target, side="right")) - 1  # last row with D <= target
    if j >= D.size - 1:
        return float(S[-1])
    if j < 0:  # cannot happen for a frontier (D[0] = 0); kept for arbitrary input
        return float(S[0])
    u = (target - D[j]) / (D[j + 1] - D[j])
    return float(S[j] + u * (S[j + 1] - S[j]))


def threshold_for_target(R1, R0, weights=None, target=0.2, order=None):
    r"""Largest deterministic prefix of the order meeting the target, and its ``c``.

    The rule "publish iff :math:`R_1/R_0 < c`" publishes a prefix of the
    publication order. Returns ``(c, n_publish)``: ``n_publish`` is the longest
    prefix whose disclosure share is ``<= target``, shortened to the start of a
    tie group when it would split one (a ``c`` rule cannot separate ties);
    ``c`` is the smallest ratio in the tie group of the first cell left
    unpublished (``inf`` when every cell is published; the largest float when
    the first unpublished cells have ``R0 = 0 < R1``), so that
    :func:`optimal_decisions` at ``c`` publishes exactly that prefix.
    """
    R1, R0, w = _as_risks(R1, R0, weights)
    target = _check_target(target)
    if order is None:
        order = publication_ranking(R1, R0)
    fr = frontier(R1, R0, w, order)
    D = fr["disclosure_share"].to_numpy()
    j = int(np.searchsorted(D, target, side="right")) - 1
    m = R1.size
    if j >= m:
        return math.inf, m
    _, key = _ratio_key(R1, R0)
    gid = _tie_groups(key)[order]
    # Back off to the start of the tie group of the first unpublished cell: a c
    # rule publishes all of a tie group or none of it.
    j = int(np.searchsorted(gid, gid[j], side="left"))
    group_keys = key[order][gid == gid[j]]
    c = float(group_keys.min())
    if math.isinf(c):
        # First unpublished cells have R0 = 0 < R1: any finite c publishes every
        # cell with R0 > 0 and none of these (c = inf would publish them too).
        c = float(np.finfo(float).max)
    return c, j


def random_suppression_frontier(m: int) -> pd.DataFrame:
    r"""Return the expected frontier when ``m`` cells are published in a random order.

    Seed 003, Section 4 / Figure 1 (the dotted line). After ``j`` cells of a
    random permutation each cell has been published with probability ``j/m``,
    so :math:`E[D_j] = j/m` and :math:`E[S_j] = 1 - j/m` exactly, whatever the
    risks and weights: the line ``D = 1 - S``.
    """
    j = np.arange(m + 1)
    share = j / m if m else np.zeros(1)
    return pd.DataFrame({"step": j, "disclosure_share": share, "nonpublication_share": 1.0 - share})


def _is_number(x) -> bool:
    # bools are ints to Python but never a meant risk or factor; strings are typos here
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def _check_target(target):
    if not _is_number(target):
        raise InputError(
            f"target_risk must be a number in [0, 1] (a fraction of the full-publication "
            f"risk); got {target!r} ({type(target).__name__}): pass e.g. target_risk=0.2"
        )
    target = float(target)
    if not (0.0 <= target <= 1.0):
        raise InputError(
            f"target_risk must be a fraction of the full-publication risk in [0, 1]; got {target!r}"
        )
    return target


def _check_c(c):
    """The trade-off factor as a float >= 0 (inf allowed), or None; InputError otherwise."""
    if c is None:
        return None
    if not _is_number(c) or not (float(c) >= 0):  # NaN fails the comparison too
        raise InputError(
            f"c (the trade-off factor) must be a number >= 0; got {c!r}: pass e.g. c=1, or "
            "c=None for the c that meets target_risk"
        )
    return float(c)


# Wording of the count checks per unit: (sample count, sample size, population size).
_COUNT_WORDS = {
    "domain": ("y", "y (sample count in the class)", "n (domain sample size)",
               "N (domain population size)"),
    "cell": ("fk", "fk (sample count of the cell)", "n (sample size)", "N (population size)"),
}


def _check_domain_counts(y, n, N, names, unit: str = "domain", *, scalar=(),
                         whole_N: bool = True) -> None:
    """Refuse counts breaking ``0 <= y <= n <= N``, naming the domains and their values.

    Runs before any risk is computed; ``names`` are the domain labels (None: the
    0-based positions, which are then the default names of the result). ``unit``
    ``"cell"`` words the same checks for :func:`decide_cells` (``fk`` for ``y``).
    ``scalar``: the labels (``"n"``, ``"N"``) given as one value for every unit, which
    a message states once instead of once per unit. ``whole_N`` False accepts an ``N``
    that is not whole (any finite ``N >= n``): :func:`decide_cells` uses ``N`` only as
    a loss argument, while :func:`decide`'s ``N - n`` is the number of beta-binomial
    trials and must be whole.
    """
    ylab, ydesc, ndesc, Ndesc = _COUNT_WORDS[unit]
    fixes = {
        ylab: "fix those counts",
        "n": ("pass the sample size, a whole number >= 0 (e.g. round(n) of an estimate), "
              f"or leave n out (default: sum({ylab}))" if unit == "cell" else "fix those counts"),
        "N": "fix those counts (N - n is the number of beta-binomial trials: round an "
             "estimated population size, e.g. np.round(N))",
    }
    for label, a in ((ylab, y), ("n", n), ("N", N)):
        whole = whole_N or label != "N"
        bad = ~np.isfinite(a) | (a < 0)
        if whole:
            bad |= a != np.round(a)
        if not bad.any():
            continue
        if whole:
            what = f"{label} must hold non-negative whole numbers (counts)"
            fix = fixes[label]
        else:
            what = f"{label} (the population size) must be a non-negative finite number"
            fix = ("give the population size (an estimate such as the sum of the survey "
                   "weights is fine), or leave N out when no loss uses it")
        if label in scalar:  # one value for every unit: say it once, not once per unit
            raise InputError(f"{what}; got {label}={a[0]:g}, one value for every {unit}: {fix}")
        where = _domains(bad, names, lambda i, label=label, a=a: f"{label}={a[i]:g}", unit)
        raise InputError(f"{what}; {where}: {fix}")
    bad = y > n
    if bad.any():
        raise InputError(
            f"{ydesc} exceeds {ndesc} in "
            f"{_domains(bad, names, lambda i: f'{ylab}={y[i]:g}, n={n[i]:g}', unit)}; counts "
            f"must satisfy 0 <= {ylab} <= n <= N: fix {ylab} or n there"
        )
    bad = N < n
    if bad.any():
        if {"n", "N"} <= set(scalar):
            where = f"every {unit} (N={N[0]:g}, n={n[0]:g}, one value each for every {unit})"
        else:
            where = _domains(bad, names, lambda i: f"N={N[i]:g}, n={n[i]:g}", unit)
        raise InputError(
            f"{Ndesc} is below {ndesc} in {where}; counts must "
            f"satisfy 0 <= {ylab} <= n <= N: fix N or n there"
        )


def _domains(bad, names, values, unit: str = "domain", shown: int = 5) -> str:
    """'domain 'b' (N=8, n=10), ...' for the first ``shown`` flagged domains (or cells)."""
    idx = np.flatnonzero(bad)
    if names is None:
        head = (f"{unit} at 0-based position" if idx.size == 1
                else f"{unit}s at 0-based positions")
        parts = [f"{i} ({values(i)})" for i in idx[:shown]]
    else:
        head = unit if idx.size == 1 else f"{unit}s"
        parts = [f"'{names[i]}' ({values(i)})" for i in idx[:shown]]
    more = f" and {idx.size - shown} more" if idx.size > shown else ""
    return f"{head} {', '.join(parts)}{more}"


def _check_tail(tail) -> float:
    """``tail`` as a float in ``(0, _MAX_TAIL]``; InputError otherwise (before any work)."""
    what = ("tail is the probability of F - f left out of the negative-binomial "
            "enumeration (a loss bounded by B is off by at most B * tail)")
    if not _is_number(tail) or not math.isfinite(float(tail)):
        raise InputError(f"{what}; it must be a small positive number such as 1e-12; "
                         f"got {tail!r}")
    tail = float(tail)
    if not (0.0 < tail < 1.0):
        raise InputError(f"{what}; it must lie strictly between 0 and 1, e.g. 1e-12; got {tail!r}")
    if tail > _MAX_TAIL:
        raise InputError(f"{what}; {tail!r} would bias the risks visibly: give at most "
                         f"{_MAX_TAIL:g} (the default 1e-12 is exact to print precision)")
    return tail


def _per_cell(value, m: int, name: str) -> np.ndarray:
    """A scalar or one value per cell as a float array of shape ``(m,)``; InputError otherwise."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must hold numbers (counts); got {value!r}") from None
    if a.ndim == 0 or a.size == 1:
        return np.full(m, float(a.reshape(-1)[0]))
    if a.shape != (m,):
        raise InputError(
            f"{name} must be a scalar or one value per cell ({m}); got shape {a.shape}"
        )
    return a


# 1-element placeholders (y, Y, n, N) on which every loss is probed before any work, and
# a second N: a loss whose value moves with N needs the population size.
_PROBE = (np.ones(1), np.full(1, 3.0), np.full(1, 10.0), np.full(1, 1e6))
_PROBE_N2 = np.full(1, 2e6)


def _probe_loss(loss: Loss) -> bool:
    """Call ``loss`` once on 1-element placeholders; return whether its value depends on N.

    A user loss with the wrong signature (``func(y, Y)``) or output that does not broadcast
    fails here, as an InputError naming the loss and the expected signature, instead of as
    a bare TypeError at the first enumeration (audit M, F8).
    """
    y, Y, n, N = _PROBE
    with np.errstate(all="ignore"):
        try:
            v1 = np.asarray(loss(y, Y, n, N), dtype=float)
        except (TypeError, ValueError) as e:
            raise InputError(
                f"loss {loss.name!r} must accept four arrays (y, Y, n, N) and return values "
                f"that broadcast with them (a user loss is func(y, Y, n, N)); on 1-element "
                f"placeholders it raised {type(e).__name__}: {e}"
            ) from None
        try:
            v2 = np.asarray(loss(y, Y, n, _PROBE_N2), dtype=float)
            vinf = np.asarray(loss(y, Y, n, np.full(1, np.inf)), dtype=float)
        except (TypeError, ValueError, ArithmeticError):
            return True  # works at one finite N only, or not at N = inf: it needs N
    moves = not np.array_equal(v1, v2, equal_nan=True)
    return moves or (np.all(np.isfinite(v1)) and not np.all(np.isfinite(vinf)))


def _parse_losses(disclosure_loss, suppression_loss, alternatives, disclosure_parser=parse_loss):
    """Parse and probe the reference pair and the alternatives, before any work.

    ``disclosure_parser`` reads the disclosure sides (:func:`_parse_cell_loss` for the
    cells, which adds ``reidentifications``). Returns ``(l1, l0, alts, uses_N)``:
    ``alts`` a list of Loss pairs (a lone string is one alternative, not a sequence of
    characters), ``uses_N`` the specs of the losses whose value depends on N.
    """
    if isinstance(alternatives, str):  # "uniques-equal:S=1/y" is one pair (audit M, F7)
        alternatives = [alternatives]
    l1, l0 = disclosure_parser(disclosure_loss), parse_loss(suppression_loss)
    alts = [parse_alternative(a, disclosure_parser) for a in alternatives]
    uses_N = []
    for loss in (l1, l0, *(x for pair in alts for x in pair)):
        if _probe_loss(loss) and loss.spec not in uses_N:
            uses_N.append(loss.spec)
    return l1, l0, alts, uses_N


def _parse_cell_loss(spec) -> Loss:
    r""":func:`parse_loss` plus the cell-level ``reidentifications`` (``f/F``).

    The disclosure loss :func:`sdcbayes.risk.compare.compare_models` uses by default
    (:data:`sdcbayes.risk.compare.REIDENTIFICATION_LOSS`, the same object, so that its
    closed form :math:`f\,E(1/F \mid f)` is used and the stamps read alike). It is a
    loss of the cells only: :func:`decide`'s domains keep :func:`parse_loss`.
    """
    # imported here: compare imports this module at import time
    from sdcbayes.risk.compare import parse_comparison_loss

    return parse_comparison_loss(spec)


def _is_reidentifications(loss: Loss) -> bool:
    """Whether ``loss`` is compare's ``f/F`` (by its function: a user loss may share the name)."""
    if not isinstance(loss, Loss) or loss.name != "reidentifications":
        return False  # decide()'s losses never import compare
    from sdcbayes.risk.compare import REIDENTIFICATION_LOSS

    return loss.func is REIDENTIFICATION_LOSS.func


def _series_names(index, m: int):
    """Default unit names from a pandas index: its labels unless it is ``0..m-1``."""
    if index is None or index.equals(pd.RangeIndex(m)):
        return None
    return index.to_numpy(dtype=object)


# --- alternatives --------------------------------------------------------------


def parse_alternative(spec, disclosure_parser=parse_loss) -> tuple[Loss, Loss]:
    """Turn ``"DISCLOSURE/SUPPRESSION"`` (CLI form) or a pair of specs into two Losses.

    The split is at the last ``/`` (suppression names contain none), so
    ``"uniques-proportions:pi=0.5/0.5/constant"`` works. ``disclosure_parser``
    reads the disclosure side (the comparison layer adds its own loss names).
    """
    if isinstance(spec, str):
        left, sep, right = spec.rpartition("/")
        if not sep or right.strip() not in _SUPPRESSION_NAMES:
            raise InputError(
                f"alternative {spec!r} must be DISCLOSURE/SUPPRESSION with SUPPRESSION one of "
                f"{', '.join(_SUPPRESSION_NAMES)}, e.g. uniques-equal:S=1/y"
            )
        return disclosure_parser(left), parse_loss(right.strip())
    try:
        d, s = spec
    except (TypeError, ValueError):
        raise InputError(
            f"alternative {spec!r} must be a 'DISCLOSURE/SUPPRESSION' string or a "
            "(disclosure_loss, suppression_loss) pair"
        ) from None
    return disclosure_parser(d), parse_loss(s)


def _pair_label(l1: Loss, l0: Loss) -> str:
    return f"{l1.spec}/{l0.spec}"


# --- results ---------------------------------------------------------------------


@dataclass(repr=False)  # SummaryRepr's short repr, not the generated one
class DecisionResult(SummaryRepr):
    """Decisions, frontier, baseline, sensitivity and Jensen check for one set of cells.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per cell, input order: the unit column (``domain`` or ``cell``),
        the counts when known (``y, n, N``), ``weight``, ``R1``, ``R0``,
        ``ratio`` (``R1/R0``; NaN when both are 0, inf when only ``R0`` is),
        ``publish`` (the rule at :attr:`c`) and ``order`` (0-based rank in the
        publication order).
    frontier : pandas.DataFrame
        :func:`frontier` of the reference pair (``m + 1`` rows, starting at
        ``(0, 1)``); ``name`` holds the unit names.
    random_baseline : pandas.DataFrame
        :func:`random_suppression_frontier` for the same number of cells.
    sensitivity : pandas.DataFrame
        One row per loss pair (the reference first): ``pair`` (label
        ``DISCLOSURE/SUPPRESSION``), ``role``, ``suppression_at_target``
        (order from the pair, shares under the reference pair; ties in input
        order) and ``suppression_at_target_min`` / ``_max`` over tie-breaks.
    alternative_frontiers : dict[str, pandas.DataFrame]
        For each alternative pair label, its order evaluated under the reference risks.
    jensen : pandas.DataFrame or None
        Per cell: ``E_Y`` (posterior mean of ``Y``), ``plug_in_R1`` (``L1`` at
        ``E_Y``), ``R1`` and ``bias`` (``R1 - plug_in_R1``); None when the risks
        were given directly.
    c : float
        Trade-off factor of :attr:`table`'s ``publish`` column.
    c_source : str
        ``"given"``, or ``"target"`` when ``c`` was chosen to meet ``target_risk``
        (see :func:`threshold_for_target`).
    target_risk : float
        Target disclosure share.
    disclosure_loss, suppression_loss : Loss or None
        The reference pair (None when the risks were given directly).
    hyperparameters : dict
        What the risks were computed from (empty when given directly).
    unit : str
        ``"domain"`` or ``"cell"``.
    provenance : dict
        :func:`sdcbayes.provenance.stamp` record (package version, ``data``: number of
        units and count totals, ``settings``: losses, alternatives, ``c``, target and
        the hyperparameter route, package versions, command, time), plus ``posterior``
        (the attrs of xarray ``alpha``/``beta`` draws) when there were any. JSON-ready;
        also in :meth:`summary`.
    """

    table: pd.DataFrame
    frontier: pd.DataFrame
    random_baseline: pd.DataFrame
    sensitivity: pd.DataFrame
    alternative_frontiers: dict[str, pd.DataFrame]
    jensen: pd.DataFrame | None
    c: float
    c_source: str
    target_risk: float
    disclosure_loss: Loss | None = None
    suppression_loss: Loss | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    unit: str = "cell"
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def suppression_at_target(self) -> float:
        """Nonpublication share needed for the target under the reference pair."""
        return float(self.sensitivity["suppression_at_target"].iloc[0])

    def _title(self) -> str:
        l1 = self.disclosure_loss.spec if self.disclosure_loss is not None else None
        l0 = self.suppression_loss.spec if self.suppression_loss is not None else None
        return (f"{type(self).__name__}(unit={self.unit!r}, disclosure_loss={l1!r}, "
                f"suppression_loss={l0!r})")

    def _summary_rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs of the headline numbers, for :meth:`__repr__` and HTML."""
        pub = self.table["publish"].to_numpy(dtype=bool)
        rows = [
            (f"{self.unit}s", f"{pub.size:,}"),
            ("risks from", str(self.hyperparameters.get("source", "given"))),
            ("trade-off c", f"{self.c:.4g} ({self.c_source})"),
            ("published / suppressed", f"{int(pub.sum()):,} / {int((~pub).sum()):,}"),
            (f"suppression for {100 * self.target_risk:g}% risk",
             f"{100 * self.suppression_at_target:.1f}% (random suppression "
             f"{100 * (1.0 - self.target_risk):.1f}%)"),
        ]
        for r in self.sensitivity.iloc[1:].itertuples():
            rows.append((f"  ranking by {r.pair}", f"{100 * r.suppression_at_target:.1f}%"))
        return rows

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (non-finite numbers become None)."""
        t = self.table
        w, R1, R0, pub = (t[k].to_numpy() for k in ("weight", "R1", "R0", "publish"))
        tot1, tot0 = float(np.sum(w * R1)), float(np.sum(w * R0))
        pub1, sup0 = float(np.sum((w * R1)[pub])), float(np.sum((w * R0)[~pub]))
        sens = self.sensitivity
        out: dict[str, Any] = {
            "unit": self.unit,
            f"n_{self.unit}s": int(len(t)),
            "disclosure_loss": _loss_dict(self.disclosure_loss),
            "suppression_loss": _loss_dict(self.suppression_loss),
            "hyperparameters": self.hyperparameters,
            "target_risk": self.target_risk,
            "c": self.c,
            "c_source": self.c_source,
            "n_published": int(pub.sum()),
            "n_suppressed": int((~pub).sum()),
            "totals": {
                "disclosure_if_all_published": tot1,
                "nonpublication_if_all_suppressed": tot0,
                "disclosure_published": pub1,
                "nonpublication_suppressed": sup0,
                "disclosure_share": pub1 / tot1 if tot1 > 0 else 0.0,
                "nonpublication_share": sup0 / tot0 if tot0 > 0 else 0.0,
            },
            "suppression_at_target": {
                "reference": float(sens["suppression_at_target"].iloc[0]),
                "random_suppression": 1.0 - self.target_risk,
                "alternatives": {
                    r.pair: float(r.suppression_at_target) for r in sens.iloc[1:].itertuples()
                },
            },
            "sensitivity": sens.to_dict(orient="records"),
            "provenance": self.provenance,
        }
        if self.jensen is not None:
            j = self.jensen
            plug = float(np.sum(w * j["plug_in_R1"].to_numpy()))
            out["jensen"] = {
                "plug_in_total": plug,
                "expected_total": tot1,
                "relative_bias": (plug - tot1) / tot1 if tot1 > 0 else 0.0,
            }
        return json_safe(out)


def _loss_dict(loss):
    if loss is None:
        return None
    return {"name": loss.name, "params": dict(loss.params), "spec": loss.spec}


# --- the shared core ---------------------------------------------------------------


def decide_from_risks(
    R1,
    R0,
    *,
    alternatives: Mapping[str, tuple] | None = None,
    target_risk: float = 0.2,
    c: float | None = None,
    names=None,
    weights=None,
    unit: str = "cell",
    counts: Mapping[str, np.ndarray] | None = None,
    jensen: pd.DataFrame | None = None,
    disclosure_loss: Loss | None = None,
    suppression_loss: Loss | None = None,
    hyperparameters: dict | None = None,
    provenance: dict | None = None,
) -> DecisionResult:
    r"""Decisions, frontier, baseline and sensitivity from per-cell risks.

    The model-free part of seed 003, Sections 2 and 4 (see the module
    docstring): used by :func:`decide` and :func:`decide_cells`, and directly by
    any model that computes :math:`R_1, R_0` elsewhere.

    Parameters
    ----------
    R1, R0 : array_like, shape ``(cell,)``
        Posterior expected disclosure and nonpublication losses (non-negative).
    alternatives : mapping, optional
        ``label -> (R1_alt, R0_alt)``: risks under alternative loss pairs. Their
        order is evaluated under ``(R1, R0)``.
    target_risk : float
        Target disclosure share :math:`D^*` in [0, 1].
    c : float, optional
        Trade-off factor of the rule. None: the ``c`` of
        :func:`threshold_for_target` (the most publication that keeps the
        disclosure share at or below ``target_risk`` with a deterministic rule).
    names : array_like, optional
        Unit names (default ``0..m-1``).
    weights : array_like, optional
        Multiplicity or probability of each row (seed 003 Table 2's
        :math:`P(n, N) P(y \mid n, N)`); scales its contribution to every total.
    unit : str
        Name of the unit column (``"domain"`` or ``"cell"``).
    counts, jensen, disclosure_loss, suppression_loss, hyperparameters
        Carried into the result (used by :func:`decide`, :func:`decide_cells`).
    provenance : dict, optional
        The result's provenance stamp (:func:`decide` and :func:`decide_cells` pass
        theirs). None: stamped here with the number of units, the totals of
        ``counts``, and the settings (losses, alternatives, ``c``, target, weights).
    """
    R1, R0, w = _as_risks(R1, R0, weights)
    target_risk = _check_target(target_risk)
    c = _check_c(c)
    m = R1.size
    if provenance is None:
        data = {f"n_{unit}s": m}
        data |= {f"total_{k}": float(np.sum(np.asarray(v, dtype=float)))
                 for k, v in (counts or {}).items()}
        provenance = stamp(_MODEL_RISKS, data_summary=data, settings={
            **_loss_settings(disclosure_loss, suppression_loss, list(alternatives or {})),
            "target_risk": target_risk, "c": c, "weights": weights is not None,
        })
    names = np.arange(m) if names is None else np.asarray(names, dtype=object)
    if names.shape != (m,):
        raise InputError(f"{unit}_names must have one name per {unit} ({m}); got {names.size}")

    order = publication_ranking(R1, R0)
    if c is None:
        c_val, _ = threshold_for_target(R1, R0, w, target_risk, order)
        c_source = "target"
    else:
        c_val, c_source = float(c), "given"
    publish = optimal_decisions(R1, R0, c_val)
    ratio, _ = _ratio_key(R1, R0)
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m)

    table = pd.DataFrame({unit: names})
    for k, v in (counts or {}).items():
        table[k] = np.asarray(v)
    table["weight"] = w
    table["R1"] = R1
    table["R0"] = R0
    table["ratio"] = ratio
    table["publish"] = publish
    table["order"] = rank

    ref_frontier = frontier(R1, R0, w, order, names=names)
    pairs = [("reference", "reference", disclosure_loss, suppression_loss, R1, R0)]
    for label, (a1, a0) in (alternatives or {}).items():
        a1, a0, _ = _as_risks(a1, a0, w)
        if a1.shape != R1.shape:
            raise InputError(f"alternative {label!r}: risks must have one value per {unit} ({m})")
        pairs.append((label, "alternative", None, None, a1, a0))

    _, ref_key = _ratio_key(R1, R0)
    rows, alt_frontiers = [], {}
    for label, role, l1, l0, a1, a0 in pairs:
        values = []
        for tie in (None, ref_key, -ref_key):
            o = publication_ranking(a1, a0, tie_break=tie)
            fr = frontier(a1, a0, w, o, eval_R1=R1, eval_R0=R0, names=names)
            values.append(
                suppression_at_target(
                    fr["disclosure_share"], fr["nonpublication_share"], target_risk
                )
            )
            if tie is None and role == "alternative":
                alt_frontiers[label] = fr
        if role == "reference":
            pair = _pair_label(l1, l0) if l1 is not None else "reference"
        else:
            pair = label
        rows.append(
            {
                "pair": pair,
                "role": role,
                "suppression_at_target": values[0],
                "suppression_at_target_min": min(values),
                "suppression_at_target_max": max(values),
            }
        )
    return DecisionResult(
        table=table,
        frontier=ref_frontier,
        random_baseline=random_suppression_frontier(m),
        sensitivity=pd.DataFrame(rows),
        alternative_frontiers=alt_frontiers,
        jensen=jensen,
        c=c_val,
        c_source=c_source,
        target_risk=target_risk,
        disclosure_loss=disclosure_loss,
        suppression_loss=suppression_loss,
        hyperparameters=dict(hyperparameters or {}),
        unit=unit,
        provenance=dict(provenance),
    )


def _loss_settings(l1, l0, alternatives) -> dict[str, Any]:
    """The loss part of a provenance stamp's settings (specs; labels for given risks)."""
    def spec(loss):
        return loss.spec if isinstance(loss, Loss) else loss

    alts = [a if isinstance(a, str) else _pair_label(*a) for a in alternatives]
    return {"disclosure_loss": spec(l1), "suppression_loss": spec(l0), "alternatives": alts}


# --- averaging over posterior draws of the hyperparameters ---------------------------


def _draws(*arrays):
    """Broadcast hyperparameter arrays and flatten them to ``(draw,)`` (a scalar is 1 draw)."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in arrays))
    return [a.reshape(-1) for a in arrays]


def _domain_draws(alpha, beta, m: int, per_domain: bool | None = None):
    r"""Posterior draws of ``(alpha, beta)`` as ``(draw,)`` (shared) or ``(draw, m)`` arrays.

    Each array on its own: an ``xarray.DataArray`` with a ``domain`` dim is read
    per domain (that dim moved last, the others flattened to draws), one without
    it as shared draws, whatever ``per_domain`` says. A NumPy array (``per_domain``
    None): 3 or more dims with ``m`` values on the last axis is per domain,
    ``(..., domain)``, as the covariate beta-binomial model gives (seed 003,
    Section 2: :math:`\alpha_d, \beta_d`); a scalar, a 1-D array of any length or
    a 2-D array whose last axis does not have ``m`` values is shared draws. A 2-D
    array with ``m > 1`` values on its last axis is ambiguous, ``(chain, draw)`` or
    ``(draw, domain)``, and refused unless ``per_domain`` says which: True reads
    every NumPy array with ``m`` values last as ``(..., domain)`` (a 1-D array of
    another length stays shared; other shapes are refused), False every one as
    shared draws.

    Returns
    -------
    a, b : numpy.ndarray
        Both ``(draw, m)`` when either is per domain (a shared one repeated across
        the domains), else both ``(draw,)``; a single (fixed) draw is repeated to
        the other's count.
    per_domain : bool

    Raises
    ------
    InputError
        Draw counts that differ (other than a single, fixed value), a DataArray
        whose domain dim does not have ``m`` values, the ambiguous 2-D array above,
        or (``per_domain=True``) an array whose last axis does not have ``m`` values.
    """
    if per_domain not in (None, True, False):
        raise InputError(f"per_domain must be None, True or False; got {per_domain!r}")

    def one(x, name):
        if hasattr(x, "dims") and hasattr(x, "transpose"):  # xarray: dims say it
            if "domain" in x.dims:
                if x.sizes["domain"] != m:
                    raise InputError(f"{name} has {x.sizes['domain']} domains, the counts "
                                     f"{m}: pass the posterior of this model's fit")
                v = np.asarray(x.transpose(..., "domain").values, dtype=float)
                return v.reshape(-1, m), True
            return np.asarray(x.values, dtype=float), False
        v = np.asarray(x, dtype=float)
        if per_domain is False or v.ndim == 0:
            return v, False
        if per_domain:
            if v.shape[-1] == m:
                return v.reshape(-1, m), True
            if v.ndim >= 2:
                raise InputError(
                    f"per_domain=True needs the domain axis last, shape (..., {m}); {name} "
                    f"has shape {v.shape}. Pass per_domain=False for draws shared by every "
                    "domain")
            return v, False  # a 1-D array of shared draws next to per-domain ones
        if v.ndim == 2 and v.shape[-1] == m and m > 1:
            # (chain, draw) with m draws per chain and (draw, domain) look alike: guessing
            # would average each domain over the wrong draws without a word (audit Z5, F2)
            raise InputError(
                f"{name} has shape {v.shape} and there are {m} domains: is it (chain, draw), "
                "draws shared by every domain, or (draw, domain), each domain's own draws? "
                "Say which: per_domain=False (or pass the draws flat, e.g. "
                f"{name}.ravel()) for shared draws; per_domain=True (or a (chain, draw, "
                "domain) array, or an xarray.DataArray with a 'domain' dim) for per-domain "
                "draws")
        if v.ndim >= 3 and v.shape[-1] == m:
            return v.reshape(-1, m), True
        return v, False

    (a, pa), (b, pb) = one(alpha, "alpha"), one(beta, "beta")
    if not (pa or pb):  # shared draws: broadcast as before, e.g. (chain, draw) with a scalar
        try:
            a, b = _draws(a, b)
        except ValueError:
            raise InputError(f"alpha and beta draws must have equal (or broadcastable) "
                             f"shapes; got {a.shape} and {b.shape}") from None
        return a, b, False
    a, b = a.reshape(-1, m) if pa else a.reshape(-1), b.reshape(-1, m) if pb else b.reshape(-1)
    Sa, Sb = a.shape[0], b.shape[0]
    if Sa != Sb and 1 not in (Sa, Sb):
        how = {True: "per domain (draw, domain) ", False: "shared "}
        raise InputError(
            f"alpha and beta must hold the same number of draws; got {Sa} {how[pa]}"
            f"and {Sb} {how[pb]}draws for {m} domains. Per-domain draws need the "
            f"domain axis last, shape (..., {m}); shared draws any other shape (a 1-D "
            "array is always shared)")
    S = max(Sa, Sb)
    shape = (S, m) if pa or pb else (S,)
    # a shared array next to a per-domain one: the same draw for every domain
    a = np.broadcast_to(a if a.ndim == 2 or len(shape) == 1 else a[:, None], shape)
    b = np.broadcast_to(b if b.ndim == 2 or len(shape) == 1 else b[:, None], shape)
    return a, b, pa or pb


def _posterior_average(func, cells, draws, budget=None):
    r"""Average ``func(*cells_unique, *draws_chunk)`` over draws, once per distinct cell.

    ``cells``: tuple of 1-D arrays (one value per cell); ``draws``: tuple of
    arrays of shape ``(draw,)`` or ``(draw, cell)``. ``func`` gets cell arrays
    of shape ``(u,)`` and draw arrays of shape ``(chunk, 1)`` or ``(chunk, u)``
    and returns ``(chunk, u)``. Memory is bounded by chunking the draws.
    With draws shared by all cells, cells with equal rows of ``cells`` are
    evaluated once (``u`` distinct rows); per-cell draws disable that.
    """
    budget = _DRAW_CHUNK_ELEMENTS if budget is None else budget
    per_cell = any(d.ndim == 2 for d in draws)
    if per_cell:
        # Per-cell parameters: no de-duplication across cells.
        cols = cells
        inverse = np.arange(cells[0].size)
    else:
        stacked = np.column_stack(cells)
        uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        cols = tuple(uniq[:, i] for i in range(uniq.shape[1]))
    u = cols[0].size
    n_draws = draws[0].shape[0]
    chunk = max(1, budget // max(1, u))
    total = np.zeros(u)
    for start in range(0, n_draws, chunk):
        sl = slice(start, start + chunk)
        dd = tuple(d[sl] if d.ndim == 2 else d[sl, None] for d in draws)
        total += np.sum(func(*cols, *dd), axis=0)
    return (total / n_draws)[inverse]


def _hyper_summary(values):
    """``{"mean", "interval_90"}`` of one hyperparameter's values.

    The mean and 5%/95% quantiles of its draws, or the value itself with
    ``interval_90`` None when there is one value.
    """
    values = np.asarray(values, dtype=float).reshape(-1)
    if values.size == 1:
        return {"mean": float(values[0]), "interval_90": None}
    lo, hi = np.quantile(values, [0.05, 0.95])
    return {"mean": float(values.mean()), "interval_90": [float(lo), float(hi)]}


def _hyperparameters(source: str, alpha, beta, *, n_draws=None, n_draws_used=None,
                     at_bound=None, per_domain: bool = False) -> dict[str, Any]:
    """The one shape of :attr:`DecisionResult.hyperparameters` on every route (audit BB6, F5).

    ``source`` (``"fixed"``, ``"posterior draws"``, ``"ml"``, ``"moments"``);
    ``alpha``, ``beta``, ``mean`` (``alpha/(alpha+beta)``) and ``concentration``
    (``alpha+beta``), each ``{"mean", "interval_90"}`` (:func:`_hyper_summary`: the
    posterior mean and 90% interval over the draws, or the point value with
    ``interval_90`` None); ``n_draws`` and ``n_draws_used`` (None on the point routes);
    ``at_bound`` (the ML/moments fit's flag, None elsewhere); and ``per_domain: True``
    only for per-domain draws (the summaries then pool every domain's values).
    """
    a = np.asarray(alpha, dtype=float)
    b = np.asarray(beta, dtype=float)
    hyper = {
        "source": source,
        "alpha": _hyper_summary(a),
        "beta": _hyper_summary(b),
        "mean": _hyper_summary(a / (a + b)),
        "concentration": _hyper_summary(a + b),
        "n_draws": n_draws,
        "n_draws_used": n_draws_used,
        "at_bound": at_bound,
    }
    if per_domain:
        hyper["per_domain"] = True
    return hyper


# --- the beta-binomial domain model ----------------------------------------------------


def _betabin_loss_over_draws(loss, y, n, N, alpha, beta):
    r"""Draw-wise :math:`E[L \mid y, \alpha_d, \beta_d]` for cells ``(u,)`` and draws ``(d, 1)``.

    Seed 003, Section 2, the display defining :math:`R_{di}`, for every (draw, cell)
    pair: :func:`sdcbayes.risk.beta_binomial._expected_loss_flat`, the one
    implementation (also behind :func:`sdcbayes.risk.beta_binomial.expected_loss`).
    Each pair is summed over its own window of the support of
    :math:`Y - y \sim \mathrm{BetaBin}(N - n, \alpha + y, \beta + n - y)`, so a cell
    with a large population never lengthens the others' sums, and the built-in losses
    cost a bounded amount whatever ``N`` (a window past 1e5 values is summed at its ends
    and by quadrature between them); a user loss costs about ``N`` times the spread of
    the class share. ``alpha, beta`` are ``(d, 1)``
    (shared draws) or ``(d, u)`` (decide's per-domain draws); memory is bounded by
    :data:`_SUPPORT_BLOCK_ELEMENTS`. Returns shape ``(d, u)``.
    """
    alpha = np.asarray(alpha, dtype=float)
    beta = np.asarray(beta, dtype=float)
    alpha = alpha if alpha.ndim == 2 else alpha.reshape(-1, 1)
    beta = beta if beta.ndim == 2 else beta.reshape(-1, 1)
    y, n, N, alpha, beta = np.broadcast_arrays(y, n, N, alpha, beta)
    out = _expected_loss_flat(loss, *(np.ravel(v) for v in (y, n, N, alpha, beta)),
                              budget=_SUPPORT_BLOCK_ELEMENTS)
    return out.reshape(y.shape)


def _thin(draws, max_draws):
    """Evenly spaced subset of at most ``max_draws`` draws (all when None)."""
    # draws are the first axis: (draw,) shared or (draw, domain) per-domain arrays
    if max_draws is None or draws[0].shape[0] <= max_draws:
        return draws
    if int(max_draws) < 1:
        raise InputError(f"max_draws must be a positive whole number; got {max_draws!r}")
    idx = np.linspace(0, draws[0].shape[0] - 1, int(max_draws)).round().astype(np.int64)
    return [d[idx] for d in draws]


def decide(
    y,
    n,
    N,
    *,
    alpha=None,
    beta=None,
    disclosure_loss="uniques-equal:S=10",
    suppression_loss="y",
    alternatives: Sequence = (),
    target_risk: float = 0.2,
    c: float | None = None,
    domain_names=None,
    weights=None,
    fit_method: str = "ml",
    max_draws: int | None = None,
    per_domain: bool | None = None,
) -> DecisionResult:
    r"""Publish/suppress decisions for the domains of a beta-binomial model.

    Seed 003, Sections 2-4. Risks :math:`R_{1i}, R_{0i}` are sums (to a relative
    2e-13 for the built-in losses; about 1e-10 where a window passes 1e5 values, see
    Notes) over
    :math:`Y_i - y_i \mid y_i \sim \mathrm{BetaBin}(N_i - n_i, \alpha + y_i,
    \beta + n_i - y_i)` (:func:`sdcbayes.risk.beta_binomial.expected_loss`),
    averaged over draws of :math:`(\alpha, \beta)` when arrays are given; then
    :func:`decide_from_risks`.

    Parameters
    ----------
    y, n, N : array_like, shape ``(domain,)``
        Sample count in the class, domain sample size, domain population size.
    alpha, beta : float or array_like, optional
        Fixed hyperparameters, or posterior draws of any (equal, or
        broadcastable) leading shape, e.g. ``(chain, draw)``; every draw is
        weighted equally. Per-domain draws (the covariate beta-binomial model's
        :math:`\alpha_d, \beta_d`): the domain axis last, ``(..., domain)`` (2 or
        more dims), or an ``xarray.DataArray`` with a ``domain`` dim; each domain
        is then averaged over its own draws. A 1-D array is always shared draws,
        even with one value per domain. A 2-D NumPy array whose last axis has one
        value per domain (``(draw, domain)``, or ``(chain, draw)`` with as many
        draws as domains) is refused unless ``per_domain`` says which it is.
        Draw counts that disagree are refused (a scalar is one draw,
        repeated). Both None: the maximum-likelihood estimate of
        :func:`sdcbayes.risk.beta_binomial.fit_beta_binomial` from ``(y, n)``
        (``fit_method``).
    disclosure_loss, suppression_loss : str or Loss
        The reference pair (:func:`sdcbayes.risk.losses.parse_loss` specs); default
        ``"uniques-equal:S=10"`` and ``"y"``.
    alternatives : sequence or str, default ()
        Alternative pairs, each ``"DISCLOSURE/SUPPRESSION"`` or a
        ``(disclosure, suppression)`` tuple (:func:`parse_alternative`); a lone
        string is one pair.
    target_risk : float, default 0.2
        Target disclosure share :math:`D^*` in [0, 1] (:func:`decide_from_risks`).
    c : float, optional
        Trade-off factor of the rule. None: the ``c`` that meets ``target_risk``
        (:func:`threshold_for_target`, via :func:`decide_from_risks`).
    domain_names : array_like, optional
        Domain labels. Default: the index of pandas Series ``y``, ``n``, ``N``
        (which must then share one index: Series are paired by position, so
        unequal indexes are refused) unless it is ``0..m-1``; else ``0..m-1``.
    weights : array_like, optional
        Multiplicity or probability of each domain, shape ``(domain,)``; scales its
        contribution to every total (:func:`decide_from_risks`). When ``alpha`` and
        ``beta`` are estimated (both None) a weight is a multiplicity, the number of
        identical domains the row stands for: whole numbers >= 0, and the row counts
        that many times in the likelihood too (:func:`fit_beta_binomial`'s
        ``weights``), so a collapsed table gives the fit, risks and decisions of the
        expanded one. Probabilities (seed 003, Table 2's :math:`P(n, N) P(y \mid n, N)`)
        go with fixed ``alpha`` and ``beta`` (or draws fitted with the same weights).
    fit_method : {"ml", "moments"}, default "ml"
        How ``alpha`` and ``beta`` are estimated when they are not given.
    max_draws : int, optional
        Use at most this many draws (evenly spaced) for the risks; the
        hyperparameter summary still uses all of them.
    per_domain : bool, optional
        How NumPy arrays of draws are read: True, the domain axis last,
        ``(..., domain)`` (a 1-D array of another length, shared draws beside them);
        False, draws shared by every domain, any shape. None (the
        default) reads 3 or more dims with ``m`` values last as per domain, any
        other shape as shared, and refuses the ambiguous 2-D ``(S, m)`` (``m > 1``).
        A DataArray is read by its dims either way.

    Returns
    -------
    DecisionResult
        With ``unit="domain"``, the counts in the table, the Jensen check, the
        ``hyperparameters`` summary (one shape on every route: ``source``; ``alpha``,
        ``beta``, ``mean``, ``concentration`` each ``{"mean", "interval_90"}``: the
        posterior mean and 90% interval of draws, or a point value and None; ``n_draws``,
        ``n_draws_used`` (None unless draws were given); ``at_bound`` (None unless
        estimated); ``per_domain: True`` for per-domain draws only) and a
        provenance stamp (domains and count totals; losses, ``c``, target,
        hyperparameter route, ``max_draws``; the attrs of xarray draws).

    Notes
    -----
    Each (draw, distinct ``(y, n, N)``) is summed over its own window of the support
    (:func:`sdcbayes.risk.beta_binomial._expected_loss_flat`). The built-in losses
    cost a bounded amount whatever ``N`` is: a closed form for ``Y``; ``uniques-equal``
    with a small ``S`` (a few thousand pmf terms for ``S = 10``) and ``threshold`` with
    a small ``Ymin`` are summed term by term; a window longer than 1e5 values (the
    polynomially decaying ``uniques-gamma``, ``uniques-equal`` with a large ``S``,
    ``uniques-proportions`` with a tiny share, ``threshold`` with a large ``Ymin``,
    on a large domain) is summed exactly at its ends and by quadrature in between
    (:func:`sdcbayes.risk.beta_binomial._long_window_sum`, about 8,000 terms). So a
    domain of 10^9 costs about what one of 10^5 does (30 domains, 1000 draws: about
    1.5 s on a shared 2-core machine, ``benchmarks/decide_large_domains.py``). A user
    loss is summed term by term over the window holding all but 1e-20 of the
    predictive mass (about ``N - n`` times the spread of the class share): its cost
    grows with ``N``. Memory is bounded by
    chunking the draws and blocking the windows. For big files pass ``max_draws``:
    the Monte Carlo error of a posterior-mean risk falls as ``1/sqrt(max_draws)``.
    """
    # Series are paired by position below: unequal indexes would mismatch domains (F10)
    index = _series_index(y=y, n=n, N=N, weights=weights)
    y = np.atleast_1d(np.asarray(y))
    n = np.atleast_1d(np.asarray(n))
    N = np.atleast_1d(np.asarray(N))
    if not (y.ndim == n.ndim == N.ndim == 1 and y.shape == n.shape == N.shape):
        raise InputError(
            f"y, n and N must be 1-D with one value per domain; got shapes "
            f"{y.shape}, {n.shape}, {N.shape}"
        )
    m = y.size
    # every check before the enumeration starts: a typo must not cost the risks
    target_risk = _check_target(target_risk)
    c = _check_c(c)
    if domain_names is None:
        domain_names = _series_names(index, m)
    if domain_names is not None:
        domain_names = np.asarray(domain_names, dtype=object)
        if domain_names.shape != (m,):
            raise InputError(
                f"domain_names must have one name per domain ({m}); got {domain_names.size}"
            )
    _as_risks(np.zeros(m), np.zeros(m), weights)  # the weights' checks, on placeholders
    try:
        y, n, N = (a.astype(float) for a in (y, n, N))
    except (TypeError, ValueError):
        raise InputError("y, n and N must hold numbers (counts); fix the input") from None
    # negative, fractional, y > n, N < n: named by domain, with the values
    _check_domain_counts(y, n, N, domain_names)
    l1, l0, alts, _ = _parse_losses(disclosure_loss, suppression_loss, alternatives)
    posterior = {}

    if alpha is None and beta is None:
        # a weight is a multiplicity: the row counts w times in the likelihood, as it
        # does in every total (audit BB6, F1)
        fit = fit_beta_binomial(y, n, method=fit_method, weights=weights)
        a_d, b_d = _draws(fit.alpha, fit.beta)
        n_draws_all = 1
        hyper = _hyperparameters(fit_method, fit.alpha, fit.beta, at_bound=fit.at_bound)
        # mean and concentration as the fit has them (not recomputed from alpha, beta)
        hyper["mean"]["mean"] = fit.mean
        hyper["concentration"]["mean"] = fit.concentration
    elif alpha is None or beta is None:
        raise InputError("give both alpha and beta (or neither, to estimate them from the domains)")
    else:
        try:
            a_all, b_all, by_domain = _domain_draws(alpha, beta, m, per_domain)
        except InputError:  # a ValueError too: its own message names the shapes
            raise
        except (TypeError, ValueError):
            raise InputError("alpha and beta must hold numbers (draws of the Beta prior "
                             "parameters)") from None
        if a_all.shape[0] == 0 or b_all.shape[0] == 0:
            raise InputError(
                f"alpha and beta hold no draws (sizes {np.size(alpha)} and {np.size(beta)}); "
                "pass at least one draw of each (a float is one fixed value), or neither "
                "to estimate them from the domains"
            )
        if not (np.all(a_all > 0) and np.all(b_all > 0) and np.all(np.isfinite(a_all))
                and np.all(np.isfinite(b_all))):
            raise InputError(
                "alpha and beta must be positive finite numbers (Beta prior parameters)"
            )
        a_d, b_d = _thin([a_all, b_all], max_draws)
        # draws along the first axis: per-domain draws are (draw, domain), and each
        # domain is averaged over its own draws (not over every domain's)
        n_draws_all = int(a_all.shape[0])
        sampled = n_draws_all > 1  # one value (a float) is fixed, not a posterior
        # per_domain: the summaries pool every domain's values
        hyper = _hyperparameters(
            "posterior draws" if sampled else "fixed", a_all, b_all,
            n_draws=n_draws_all if sampled else None,
            n_draws_used=int(a_d.shape[0]) if sampled else None, per_domain=by_domain)
        # xarray draws carry their fit's stamp (seed, priors): kept, not dropped (F9)
        posterior = {name: dict(x.attrs) for name, x in (("alpha", alpha), ("beta", beta))
                     if getattr(x, "attrs", None)}

    def risk(loss):
        if not loss.depends_on_Y:
            return np.asarray(loss(y, y, n, N), dtype=float)
        return _posterior_average(
            lambda yy, nn, NN, aa, bb: _betabin_loss_over_draws(loss, yy, nn, NN, aa, bb),
            (y, n, N),
            (a_d, b_d),
        )

    R1, R0 = risk(l1), risk(l0)
    alt_risks = {_pair_label(a1, a0): (risk(a1), risk(a0)) for a1, a0 in alts}
    EY = _posterior_average(
        lambda yy, nn, NN, aa, bb: np.broadcast_to(
            posterior_mean_Y(yy, nn, NN, aa, bb), np.broadcast_shapes(aa.shape, yy.shape)
        ),
        (y, n, N),
        (a_d, b_d),
    )
    jensen = _jensen_table(l1, y, EY, n, N, R1)
    counts = {"y": y.astype(np.int64), "n": n.astype(np.int64), "N": N.astype(np.int64)}
    provenance = _stamp(
        _MODEL_DOMAIN,
        data={"n_domains": m, "total_y": int(y.sum()), "total_n": int(n.sum()),
              "total_N": int(N.sum())},
        settings={
            **_loss_settings(l1, l0, alts), "target_risk": target_risk, "c": c,
            "weights": weights is not None, "hyperparameters": hyper["source"],
            "fit_method": fit_method if alpha is None else None,
            "n_draws": n_draws_all, "max_draws": max_draws,
        },
        posterior=posterior,
    )
    return decide_from_risks(
        R1,
        R0,
        alternatives=alt_risks,
        target_risk=target_risk,
        c=c,
        names=domain_names,
        weights=weights,
        unit="domain",
        counts=counts,
        jensen=jensen,
        disclosure_loss=l1,
        suppression_loss=l0,
        hyperparameters=hyper,
        provenance=provenance,
    )


def _stamp(model: str, *, data: dict, settings: dict, posterior: dict | None = None) -> dict:
    """:func:`sdcbayes.provenance.stamp` plus ``posterior`` (the draws' own stamps) if any."""
    record = stamp(model, data_summary=data, settings=settings)
    if posterior:
        record["posterior"] = json_safe(posterior)
    return record


def _jensen_table(loss, y, EY, n, N, R1):
    """Plug-in ``L1(y, E[Y])`` next to ``R1 = E[L1(y, Y)]`` (seed 003, Section 3)."""
    if not _is_reidentifications(loss):
        plug = np.asarray(loss(y, EY, n, N), dtype=float)
    else:  # f/F at f = 0 is 0 (no sample records), as in R1, also where E[F] = 0
        with np.errstate(divide="ignore", invalid="ignore"):
            plug = np.array(loss(y, EY, n, N), dtype=float)
        plug[np.broadcast_to(y, plug.shape) == 0] = 0.0
    return pd.DataFrame({"E_Y": EY, "plug_in_R1": plug, "R1": R1, "bias": R1 - plug})


# --- the cell-level model for microdata ---------------------------------------------------


def _check_negbin(size, prob):
    size = np.asarray(size, dtype=float)
    prob = np.asarray(prob, dtype=float)
    if not (np.all(np.isfinite(size)) and np.all(size > 0)):
        raise InputError("size (NegBin number of successes) must be positive and finite")
    if not (np.all(prob > 0) and np.all(prob <= 1)):
        raise InputError("prob (NegBin success probability) must lie in (0, 1]")
    return size, prob


def negbin_expected_loss(loss, f, n, N, size, prob, tail: float = 1e-12):
    r"""Posterior risk :math:`E[L(f, F, n, N) \mid f]` under a negative-binomial predictive.

    :math:`F - f \mid f \sim \mathrm{NegBin}(r, \rho)`.

    The cell-level predictive of ARCHITECTURE.md: Poisson-gamma (the conditional of
    Bethlehem, Keller & Pannekoek 1990, ARCHITECTURE.md "Poisson-gamma cell
    frequencies", for the model of seed 000 section 2.3, eq. 10-12;
    ``r = alpha + f``, ``rho = (1 + n beta)/(1 + N beta)``) or Benedetti-Franconi
    (seed 004, the negative-binomial display after eq. 2; ``r = f``, ``rho = p_k``).
    ``X = F - f`` counts failures
    before the ``r``-th success, :math:`P(X = x) = \binom{x + r - 1}{x}\rho^r(1-\rho)^x`
    (``scipy.stats.nbinom``); seed 003, Section 2, the display defining
    :math:`R_{di}`, with this predictive.

    The sum is :func:`sdcbayes.risk.compare.expected_loss_enumerated`, the one
    enumeration of the package (same quantity, same ``tail``: for a loss bounded by
    ``B`` the truncation error is at most ``B * tail``).
    This function adds the checks: ``tail`` in ``(0, 1e-3]``, ``size > 0``,
    ``0 < prob <= 1``, arguments that broadcast, and a loss callable as ``(y, Y, n, N)``.
    ``loss`` may also be ``"reidentifications"`` (:math:`f/F`, compare_models' default
    disclosure loss): :math:`f\,E(1/F \mid f)` in closed form, and 0 where ``f = 0``
    (no sample records to re-identify; :math:`f/F` alone would read 0/0 at ``F = 0``).

    Arguments broadcast (NumPy rules); returns the broadcast shape.
    """
    # imported here: compare imports this module at import time
    from sdcbayes.risk.compare import expected_loss_enumerated

    tail = _check_tail(tail)
    loss = _parse_cell_loss(loss)
    _probe_loss(loss)  # a wrong signature: InputError now, not TypeError mid-sum
    try:
        f, n, N = (np.asarray(a, dtype=float) for a in (f, n, N))
    except (TypeError, ValueError):
        raise InputError("f, n and N must hold numbers (counts)") from None
    size, prob = _check_negbin(size, prob)
    try:
        shape = np.broadcast_shapes(f.shape, n.shape, N.shape, size.shape, prob.shape)
    except ValueError:
        raise InputError(
            f"f, n, N, size and prob must broadcast together (one value per cell, or "
            f"scalars); got shapes f {f.shape}, n {n.shape}, N {N.shape}, size {size.shape}, "
            f"prob {prob.shape}"
        ) from None
    if _is_reidentifications(loss):
        # f/F is 0 in a cell without sample records (nothing to re-identify), also at
        # F = 0, where f/F reads 0/0; f > 0: f E(1/F | f) in closed form (seed 004, eq. 6)
        f, n, N, size, prob = (np.broadcast_to(a, shape) for a in (f, n, N, size, prob))
        out = np.zeros(shape)
        some = f > 0
        if some.any():
            out[some] = expected_loss_enumerated(loss, f[some], n[some], N[some], size[some],
                                                 prob[some], tail=tail)
        return out
    return np.asarray(expected_loss_enumerated(loss, f, n, N, size, prob, tail=tail),
                      dtype=float).reshape(shape)


def _distinct_cells(cells, mats, budget=None):
    r"""Cells equal in every column of ``cells`` and of the ``(draw, cell)`` arrays ``mats``.

    A posterior passed as ``size = alpha[:, None] + fk`` varies per cell only through
    ``fk``: its columns are equal for equal ``fk``, and the risk is a function of the
    column (seed 003, Section 2: :math:`R_{di}` depends on the cell only through its
    counts and its predictive). Each column is fingerprinted by a fixed random
    projection over the draws (the same operations for every column, so equal columns
    get equal fingerprints), cells are grouped on ``(cells, fingerprints)``, and the
    grouping is then verified exactly, column against its group's first column, so a
    collision can never merge two different cells. Memory: draw chunks of ``budget``
    elements.

    Returns
    -------
    rep : ndarray of int, shape ``(u,)``
        One member (the first) of each distinct cell.
    inverse : ndarray of int, shape ``(cell,)``
        Distinct cell of each cell: ``x[rep][inverse]`` is ``x`` for any column.
    """
    budget = _DRAW_CHUNK_ELEMENTS if budget is None else budget
    m = cells[0].size
    D = mats[0].shape[0]
    chunk = max(1, budget // max(1, m))
    g = np.random.default_rng(20260403).standard_normal(D)  # a hash: fixed, never a result
    fps = [np.zeros(m) for _ in mats]
    for start in range(0, D, chunk):
        sl = slice(start, start + chunk)
        for fp, M in zip(fps, mats, strict=True):
            fp += np.sum(M[sl] * g[sl, None], axis=0)
    _, inverse = _unique_rows(*cells, *fps)
    u = int(inverse.max()) + 1 if m else 0
    rep = np.full(u, m, dtype=np.intp)
    np.minimum.at(rep, inverse, np.arange(m))
    # exact check: every cell's columns equal its representative's
    mine = rep[inverse]  # each cell's representative
    differ = np.zeros(m, dtype=bool)
    for start in range(0, D, chunk):
        sl = slice(start, start + chunk)
        for M in mats:
            block = M[sl]
            differ |= np.any(block != block[:, mine], axis=0)
    for cells_col in cells:
        differ |= cells_col != cells_col[mine]
    bad = np.flatnonzero(differ)
    if bad.size:  # a collision (never seen): those cells are evaluated on their own
        inverse = inverse.copy()
        inverse[bad] = u + np.arange(bad.size)
        rep = np.concatenate([rep, bad])
    return rep, inverse


def decide_cells(
    fk,
    *,
    size=None,
    prob=None,
    R1=None,
    R0=None,
    n=None,
    N=None,
    disclosure_loss="uniques-equal:S=10",
    suppression_loss="y",
    alternatives: Sequence = (),
    target_risk: float = 0.2,
    c: float | None = None,
    cell_names=None,
    weights=None,
    tail: float = 1e-12,
) -> DecisionResult:
    r"""Publish/suppress decisions for the cells of a key cross-classification (microdata).

    Cell ``k`` plays the role of a domain with ``y = f_k`` and ``Y = F_k``
    (seed 003, Section 3, the microdata reading of the losses); ``n`` and
    ``N`` are the file's sample and population sizes (scalars or one value per
    cell; ``0 <= f_k <= n <= N`` is checked). ``n`` defaults to ``sum(fk)``;
    ``N`` to unknown (infinite), which a loss whose value depends on ``N``
    (``N``, or such a user loss) refuses up front: give ``N`` for those.
    ``N`` enters only as an argument of the losses (the predictive of ``F_k``
    is ``size, prob``, which carry the population already), so it need not be
    whole: an estimated population size such as the sum of the survey weights
    (``N=md.weights.sum()``) is taken as it is. ``fk`` and ``n`` are counts of
    records and must be whole.

    Losses: every :func:`sdcbayes.risk.losses.parse_loss` spec, plus the disclosure
    loss ``"reidentifications"``, :math:`L_1 = f_k/F_k` (0 when ``f_k = 0``), whose
    risk :math:`f_k E(1/F_k \mid f_k)` is the cell's share of the expected
    re-identifications ER, in closed form (seed 004, eq. 6;
    :func:`sdcbayes.risk.individual.negbin_inverse_moment`).

    The default disclosure loss differs from
    :func:`sdcbayes.risk.compare.compare_models`'. Here it is ``"uniques-equal:S=10"``
    (seed 003, eq. 2: the expected sample uniques disclosed), as in :func:`decide` and
    ``sdcbayes decide``, and the documented decisions rest on it; compare_models
    defaults to ``"reidentifications"``, so that its ranking is the individual risk
    :math:`E(1/F_k \mid f_k)` (its ``R1/R0`` with ``suppression_loss="y"``) and its
    target cuts ER. The two give different decisions on one file (the demo with the
    closed form: 463 cells published here, 382 there). compare_models' closed-form row
    is reproduced by (``fk, Fk_hat = md.cells.fk, md.cells.Fk_hat``)::

        decide_cells(fk, size=fk, prob=np.minimum(fk / Fk_hat, 1.0),
                     disclosure_loss="reidentifications")

    and this function's default by ``compare_models(md, specs,
    disclosure_loss="uniques-equal:S=10")``.

    Two routes:

    - ``size, prob``: :math:`F_k - f_k \mid f_k \sim \mathrm{NegBin}(size, prob)`
      (:func:`negbin_expected_loss`). The last axis is the cell axis (length 1
      or the number of cells); leading axes are posterior draws, averaged over
      (e.g. Poisson-gamma draws: ``size = alpha[:, None] + fk``,
      ``prob = rho[:, None]``). Risks are computed once per *distinct* cell:
      cells with equal ``(f_k, n, N)`` and equal size/prob over every draw (as
      the Poisson-gamma form gives for equal ``f_k``) share one enumeration per
      draw, so the cost follows the number of distinct ``f_k``, not of cells.
    - ``R1, R0``: per-cell risks computed elsewhere (any model); the losses are
      then only labels and ``alternatives`` must be a mapping
      ``label -> (R1_alt, R0_alt)``.

    Pandas Series inputs (``fk``, per-cell ``n``, ``N``, ``size``, ``prob``,
    ``R1``, ``R0``, ``weights``) must share one index (they are paired by
    position); ``cell_names`` defaults to it unless it is ``0..m-1``. A lone
    string for ``alternatives`` is one pair. ``tail`` (the NegBin probability
    left out of each enumeration) must lie in ``(0, 1e-3]``. Zero cells give an
    empty result, as :func:`decide` does.

    Everything else is :func:`decide_from_risks` (unit ``"cell"``); the result's
    provenance stamps the number of cells, distinct cells and draws, the count
    totals and the settings.
    """
    index = _series_index(fk=fk, n=n, N=N, size=size, prob=prob, R1=R1, R0=R0, weights=weights)
    try:
        fk = np.atleast_1d(np.asarray(fk, dtype=float))
    except (TypeError, ValueError):
        raise InputError("fk must hold numbers (cell sample counts)") from None
    if fk.ndim != 1 or not np.all(np.isfinite(fk)) or np.any(fk < 0) or np.any(fk != np.round(fk)):
        raise InputError(
            "fk must be a 1-D array of non-negative whole numbers (cell sample counts)"
        )
    m = fk.size
    # every check before the enumeration, which is the costly part
    target_risk = _check_target(target_risk)
    c = _check_c(c)
    tail = _check_tail(tail)
    _as_risks(np.zeros(m), np.zeros(m), weights)  # the weights' checks, on placeholders
    if cell_names is None:
        cell_names = _series_names(index, m)
    if cell_names is not None and np.asarray(cell_names, dtype=object).shape != (m,):
        raise InputError(
            f"cell_names must have one name per cell ({m}); got "
            f"{np.asarray(cell_names, dtype=object).size}"
        )
    names = None if cell_names is None else np.asarray(cell_names, dtype=object)
    n_arr = _per_cell(fk.sum() if n is None else n, m, "n")
    N_arr = _per_cell(np.inf if N is None else N, m, "N")
    # a value given once for every cell is reported once (audit DD5, F5)
    scalar = {lab for lab, v in (("n", n), ("N", N)) if v is not None and np.size(v) == 1}
    # 0 <= fk <= n <= N by cell, as decide() checks its domains (N only when given). N
    # need not be whole here: it enters only as a loss argument (the NegBin predictive
    # carries the population), so an estimate such as a weight sum is fine (audit DD5, F5)
    _check_domain_counts(fk, n_arr, n_arr if N is None else N_arr, names, unit="cell",
                         scalar=scalar, whole_N=False)
    counts = {"fk": fk.astype(np.int64)}
    data = {"n_cells": m, "total_fk": int(fk.sum()), "n": _count_summary(n_arr),
            "N": None if N is None else _count_summary(N_arr)}
    settings = {"target_risk": target_risk, "c": c, "weights": weights is not None}
    if isinstance(alternatives, str):  # one pair, not its characters (F7)
        alternatives = [alternatives]
    if R1 is not None or R0 is not None:
        if R1 is None or R0 is None or size is not None or prob is not None:
            raise InputError("give either (R1, R0) or (size, prob) to decide_cells, not a mix")
        l1 = _parse_cell_loss(disclosure_loss) if isinstance(disclosure_loss, str | Loss) else None
        l0 = parse_loss(suppression_loss) if isinstance(suppression_loss, str | Loss) else None
        if alternatives and not isinstance(alternatives, Mapping):
            raise InputError(
                "with precomputed R1, R0 give alternatives as {label: (R1_alt, R0_alt)}"
            )
        alternatives = dict(alternatives or {})
        return decide_from_risks(
            R1,
            R0,
            alternatives=alternatives,
            target_risk=target_risk,
            c=c,
            names=names,
            weights=weights,
            unit="cell",
            counts=counts,
            disclosure_loss=l1,
            suppression_loss=l0,
            hyperparameters={"source": "precomputed risks"},
            provenance=_stamp(_MODEL_CELL, data=data, settings={
                **_loss_settings(l1, l0, list(alternatives)), **settings,
                "risks": "precomputed"}),
        )
    if size is None or prob is None:
        raise InputError("decide_cells needs the NegBin predictive (size, prob) or risks (R1, R0)")
    l1, l0, alts, uses_N = _parse_losses(disclosure_loss, suppression_loss, alternatives,
                                         disclosure_parser=_parse_cell_loss)
    if N is None and uses_N:
        raise InputError(
            f"loss {', '.join(map(repr, uses_N))} depends on N, the population size, and N "
            "was not given: give N=<population size> (a scalar, or one value per cell)"
        )
    size, prob = _check_negbin(size, prob)
    try:
        size, prob = np.broadcast_arrays(size, prob)
    except ValueError:
        raise InputError(
            f"size and prob must broadcast together; got shapes {size.shape} and {prob.shape}"
        ) from None
    if size.ndim == 0:
        size, prob = size[None], prob[None]
    if size.shape[-1] not in (1, m):
        raise InputError(
            f"size/prob: the last axis must be the cell axis (1 or {m} values); got {size.shape}"
        )
    # (draw, cell or 1): a 1-D array is one draw
    n_draws = math.prod(size.shape[:-1])
    if n_draws == 0:
        raise InputError(f"size/prob hold no draws (shape {size.shape}); pass at least one")
    S = size.reshape(n_draws, size.shape[-1])
    P = prob.reshape(n_draws, prob.shape[-1])
    cells, inverse = (fk, n_arr, N_arr), None
    if m == 0:  # an empty result, as decide() gives for zero domains
        draws, u = None, 0
    elif S.shape[1] == 1:
        # draws shared by all cells: _posterior_average groups equal (fk, n, N) itself
        draws = (S[:, 0], P[:, 0])
        u = _unique_rows(*cells)[0][0].size
    else:
        # per-cell draws: one enumeration per distinct cell, not per (draw, cell) (F1)
        rep, inverse = _distinct_cells((fk, n_arr, N_arr), (S, P))
        cells, draws = (fk[rep], n_arr[rep], N_arr[rep]), (S[:, rep], P[:, rep])
        u = rep.size

    def risk(loss):
        if not loss.depends_on_Y:
            return np.asarray(loss(fk, fk, n_arr, N_arr), dtype=float)
        if m == 0:
            return np.zeros(0)
        # the module-level name, so a check that patches it sees every enumeration
        out = _posterior_average(
            lambda ff, nn, NN, ss, pp: negbin_expected_loss(loss, ff, nn, NN, ss, pp, tail),
            cells,
            draws,
        )
        return out if inverse is None else out[inverse]

    R1v, R0v = risk(l1), risk(l0)
    alt_risks = {_pair_label(a1, a0): (risk(a1), risk(a0)) for a1, a0 in alts}
    # E[F | f] = f + r (1 - rho) / rho, averaged over draws (per distinct cell)
    excess = np.mean(draws[0] * (1.0 - draws[1]) / draws[1], axis=0) if m else np.zeros(0)
    EF = fk + (excess if inverse is None else excess[inverse])
    jensen = _jensen_table(l1, fk, EF, n_arr, N_arr, R1v)
    hyper = {"source": "negative binomial predictive", "n_draws": int(n_draws)}
    provenance = _stamp(_MODEL_CELL, data=data | {"n_distinct_cells": u}, settings={
        **_loss_settings(l1, l0, alts), **settings, "tail": tail,
        "risks": "negative binomial predictive", "n_draws": int(n_draws)})
    return decide_from_risks(
        R1v,
        R0v,
        alternatives=alt_risks,
        target_risk=target_risk,
        c=c,
        names=names,
        weights=weights,
        unit="cell",
        counts=counts,
        jensen=jensen,
        disclosure_loss=l1,
        suppression_loss=l0,
        hyperparameters=hyper,
        provenance=provenance,
    )


def _count_summary(a: np.ndarray):
    """One number when every cell has it (a file's n or N), else its range over the cells."""
    if a.size == 0:
        return None
    lo, hi = float(a.min()), float(a.max())
    return lo if lo == hi else {"min": lo, "max": hi}
