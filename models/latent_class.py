r"""Bayesian latent-class superpopulation model for population uniqueness.

A mixture of products of multinomials (the latent-class model) for the J key
variables, with a truncated stick-breaking (Dirichlet-process) prior on the class
weights, in the spirit of Dunson & Xing (2009, JASA 104, 1042-1051) and
Manrique-Vallier & Reiter (2014, JCGS 23, 1061-1079), "Bayesian estimation of
discrete multivariate latent structure models with structural zeros":

.. math::

    \pi_k = \sum_{h=1}^{H} w_h \prod_{j=1}^{J} \phi_{h j x_{kj}},\qquad
    w_h = V_h \prod_{l<h} (1 - V_l),\ V_h \sim \mathrm{Beta}(1, \alpha),\ V_H = 1,

    \phi_{h j} \sim \mathrm{Dirichlet}(a, \dots, a),\qquad
    \alpha \sim \mathrm{Gamma}(a_\alpha, b_\alpha),

over the full cross-classification of the keys (cell k has levels
:math:`x_{k1}, \dots, x_{kJ}`). By default :math:`a = 1/L_j` per level of key j,
except on keys of at least 20 levels, whose profiles are centred on the key's sample
marginal with a learnt mass (:data:`PHI_PRIOR_DEFAULT`,
:meth:`LatentClassModel.phi_concentration`). Sample counts :math:`f_k \sim \mathrm{Po}(n\pi_k)`
(equivalently multinomial given n), so the likelihood needs the *observed* cells
only: :math:`\log L = \sum_{k: f_k > 0} f_k \log \pi_k`, evaluated once per
distinct cell and weighted by :math:`f_k`, never per record.

Structural zeros (impossible combinations, e.g. a child with an occupation) are a
set S of cells with :math:`\pi_k = 0`; the truncated latent-class model of
Manrique-Vallier & Reiter (2014, eq. 2) is

.. math::

    \pi_k = \frac{\pi^*_k}{1 - \pi^*(S)}\ (k \notin S),\qquad \pi_k = 0\ (k \in S),

with :math:`\pi^*` the untruncated mixture. Its Gibbs sampler (their section 3)
augments the data with the records the untruncated process would have put in S:
under the prior :math:`p(N^*) \propto 1/N^*` on the untruncated total,
:math:`n_0 \mid \cdot \sim \mathrm{NegBin}(n, 1 - \pi^*(S))` (failures before the
n-th success), their cells drawn from :math:`\pi^*` restricted to S; the
augmented data then follow the ordinary latent-class model. Conditioning after
the fact (fitting the untruncated model and renormalising :math:`\pi` over the
allowed cells) is *not* the same posterior: the untruncated fit explains data
that contain no record in S with classes that waste mass there; the augmentation
makes the classes fit the allowed cells. S is given as a union of "rectangles"
(a set of levels per key; keys not named are unrestricted), made disjoint here so
that :math:`\pi^*(S)` is a sum of products.

Population risk (Poisson thinning, as for the log-linear model of Skinner &
Holmes 1998 that the IHSN guide, seed ``001_…`` section 3.4, cites for the global
risk): under simple random sampling with fraction n/N,
:math:`F_k - f_k \mid \pi \sim \mathrm{Po}(\lambda_k)`, :math:`\lambda_k = (N-n)\pi_k`
(the Poisson approximation to the hypergeometric), so for a sample unique

.. math::

    P(F_k = 1 \mid f_k = 1, \pi) = e^{-\lambda_k},\qquad
    E(1/F_k \mid f_k = 1, \pi) = (1 - e^{-\lambda_k})/\lambda_k,

and :math:`\tau_1 = \sum_{k \in SU} I(F_k = 1)`, :math:`\tau_2 = \sum_{k \in SU} 1/F_k`
(ARCHITECTURE.md, Notation). The sampler returns per-draw :math:`\pi_k` of the sample
uniques and the posterior predictive of :math:`\tau_1, \tau_2` (parameter
uncertainty *and* the randomness of F given :math:`\pi`).

Unequal weights (an informative design: strata sampled at different rates whose
members differ in their keys). The mixture describes the *sample*, which
over-represents the over-sampled strata; extrapolating every cell by the one
factor N/n then misplaces the population. With ``weights`` the records are put in
weight classes g (:func:`weight_classes`: the distinct weights, i.e. the strata of
a stratified design, or quantile bins of continuous weights) with mean weight
:math:`\bar w_g = \hat N_g / n_g`, and the class is modelled as one more variable
of the mixture (the design variable in the model, Gelman 2007, "Struggles with
survey weighting", section 1; Little 2004). A population cell of key cell k in
class g has Poisson mean :math:`n\pi_{kg}\bar w_g`, of which
:math:`n\pi_{kg}` is sampled, so

.. math::

    F_k - f_k \mid \pi \sim \mathrm{Po}(\lambda_k),\qquad
    \lambda_k = n \sum_g \pi_{kg}(\bar w_g - 1),

which is :math:`(N - n)\pi_k` when every weight is N/n (simple random sampling,
where no design variable is added and the results are those of the model without
weights). The weights are scaled to sum to N.

Overdispersion (:func:`overdispersion_cv`, ``sample(overdispersion="cv")``): a
mixture of a few classes smooths, and on sparse keys it gives the observed sample
uniques too small a :math:`\pi_k` (the truth clumps more than the classes say),
so it overstates tau1. The cells' rates may be made gamma-overdispersed around the
mixture, :math:`F_k \sim \mathrm{Po}(N\pi_k u_k)`,
:math:`u_k \sim \mathrm{Gamma}(\kappa, \kappa)`; given :math:`f_k = 1`,
:math:`u_k \sim \mathrm{Gamma}(\kappa + 1, \kappa + n\pi_k)` and

.. math::

    P(F_k = 1 \mid f_k = 1, \pi, \kappa) = \left(\frac{\kappa + n\pi_k}
    {\kappa + N\pi_k}\right)^{\kappa + 1},

the negative-binomial counterpart of :math:`e^{-\lambda_k}` (the Rinott & Shlomo
2006 negative-binomial smoothing idea on top of the mixture). :math:`\kappa` is
learnt by cross-validation of exactly this prediction inside the sample: a mixture
fitted to a quarter, or an eighth, of the records predicts which of its uniques the
rest of the sample leaves unique, an extrapolation by 4 or 8 that comes closer to the
population's N/n than halves do (by default each part fitted by penalised EM, a prior
uniform in :math:`\log\kappa`; halves, Gibbs-fitted parts and a half-Cauchy prior on
:math:`\kappa^{-1/2}` are options, measured in benchmarks/README.md).

Two routes to the same posterior: :meth:`LatentClassModel.sample` (blocked Gibbs
sampler with data augmentation, vectorised over distinct cells, chains started
from penalised EM fits, :meth:`LatentClassModel.fit_em`; the recommended route)
and :meth:`LatentClassModel.build` (a PyMC model marginalised over class labels,
``pm.Potential`` of the log-likelihood, for NUTS or nutpie through
``sdcbayes.inference.fit``; its log-likelihood equals :meth:`LatentClassModel.loglik`).
``fit(method="advi")`` and ``"map"`` are refused (``supported_fit_methods``). A ``fit()``
posterior holds the class weights ``w`` and profiles ``phi_<key>``, not the cells'
:math:`\pi_k`: the risk routes (:func:`sdcbayes.risk.posterior_assess.assess_posterior`,
``assess_from_posterior``) read the Gibbs sampler's ``pi`` and refuse it.

Chain starts (``sample(init=...)``). The mixture's posterior has modes the Gibbs
sampler seldom leaves: classes split and merge over hundreds of sweeps. Chains started
at the sample's best EM fit (``init="em"``) stay near one mode, and their draws lack the
spread between modes. Measured in the model's own world with :math:`\kappa` known
(``benchmarks/chain_starts.py``, benchmarks/README.md, "Where the chains start"), the
posterior sd of tau1's conditional expectation on Adult 9 keys at 1% is 2.8 against an error of sd
6.3 from sample to sample. ``init="bootstrap"`` starts each chain at the EM fit of a
bootstrap resample of the records, i.e. at the points the estimate would reach from
other samples of the same population (overdispersed starts, Gelman et al. 2013, BDA3,
section 11.4). The chains then run on the sample itself, so the target is the same
posterior; where they do not mix between modes, their pooled draws keep the spread
between the modes they started in. Two chains sample that spread at two points only and
gain little; with 4 or more the errors' spread comes in line with the intervals (there, the
sd of tau1's errors over the sd its interval implies: 1.34 with EM starts, 1.30 / 1.11 /
1.04 with 2 / 4 / 8 bootstrap-started chains). On the real designs, where the
cross-validated kappa's range carries most of an interval's width, the change is small
and the default keeps EM starts (benchmarks/README.md, "Where the chains start").

May import NumPy, SciPy, pandas, xarray, ArviZ, PyMC/PyTensor (inside
:meth:`build` only) and the ``sdcbayes`` data layer; not ``sdcbayes.inference`` or
``sdcbayes.risk``.
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import gammaln

from sdcbayes import _compat
from sdcbayes.exceptions import InputError
from sdcbayes.microdata import MISSING_LEVEL, require_one_cell_per_record
from sdcbayes.models.base import (
    PriorSpec,
    SuperpopulationModel,
    check_cell_table,
    check_whole,
    frame_keys,
    prior_to_rv,
    whole_number,
)
from sdcbayes.provenance import seed_or_drawn
from sdcbayes.provenance import stamp as provenance_stamp

__all__ = [
    "LatentClassModel",
    "MAX_CLASSES",
    "PatternSums",
    "StructuralZeros",
    "cluster_rate_correction",
    "detect_structural_zeros",
    "excess_means",
    "expected_inverse_frequency",
    "expected_inverse_frequency_f",
    "kappa_prior",
    "parse_kappa_prior",
    "latent_class_loglik",
    "overdispersion_cv",
    "pattern_sums",
    "pattern_top_cells",
    "prob_population_unique",
    "profile_mass_loglik",
    "replicate_counts_of_counts",
    "simulate_cells",
    "simulate_excess",
    "simulate_tau",
    "stick_breaking_weights",
    "weight_classes",
]

#: Dim of the mixture components (added to the ARCHITECTURE vocabulary).
CLASS_DIM = "latent_class"

#: Largest truncation level H (``n_classes``) the model accepts, refused above by
#: :class:`LatentClassModel`, ``sdcbayes assess --classes`` and ``compare``'s ``classes=``.
#: The stick-breaking prior truncated at H approximates the full Dirichlet process to
#: within about :math:`4 n e^{-(H-1)/\alpha}` in L1 distance of the marginal density of n
#: records (Ishwaran & James 2001, JASA 96, 161-173, Theorem 2): at H = 1000 below
#: 1e-12 for a billion records and alpha up to 20, an alpha the Gamma(0.25, 0.25) prior
#: puts below 0.05% probability on and that only some 400 occupied classes of a million
#: records would call for. More classes cannot change the posterior; they only cost, as
#: every Gibbs sweep and EM iteration holds (cells x H) arrays (8 bytes x cells x H each:
#: 20,000 classes on 47 cells took 2 minutes for 60 sweeps, 1e8 classes ran out of
#: memory). The default is 30; the benchmarks use at most 60 (benchmarks/README.md). Not
#: tied to the data: the default 30 must fit small samples too, and classes beyond the
#: records are merely unoccupied (they keep their prior share of the unseen cells).
MAX_CLASSES = 1000

#: Name of the design variable (the records' weight class) appended to the keys of a
#: model fitted with unequal ``weights`` (module docstring, "Unequal weights").
WEIGHT_CLASS_KEY = "__weight_class__"

#: Up to this many distinct weights, each is a weight class of its own (the strata of a
#: stratified design); beyond, :data:`WEIGHT_BINS` quantile bins of log w are used.
MAX_WEIGHT_CLASSES = 16

#: Quantile bins of log w for weights with more than :data:`MAX_WEIGHT_CLASSES`
#: distinct values (calibrated or non-response-adjusted weights).
WEIGHT_BINS = 5

_DEFAULT_MAX_RECTANGLES = 20_000

#: The posterior predictive check's counts of counts (:func:`replicate_counts_of_counts`):
#: m_1 .. m_5 and the pooled m_{>=6}.
PPC_MAX_COUNT = 6


# --------------------------------------------------------------------------------------
# closed forms (plain arrays, broadcasting)
# --------------------------------------------------------------------------------------


def weight_classes(weights) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    r"""Weight classes of the records for a design-weighted latent-class model.

    The distinct weights, when there are at most :data:`MAX_WEIGHT_CLASSES` (a
    stratified design with :math:`w = N_h/n_h` per stratum: the classes are the
    strata, merged where their rates agree, which changes nothing); otherwise
    :data:`WEIGHT_BINS` bins at the quantiles of :math:`\log w`. Each class carries
    its mean weight :math:`\bar w_g = \hat N_g / n_g` (Horvitz-Thompson), the
    population-to-sample ratio of the class (module docstring, "Unequal weights").

    Parameters
    ----------
    weights : array_like, shape (n,)
        Positive finite sampling weights of the records.

    Returns
    -------
    (index, class_weights, labels) or None
        ``index`` (n,) the class of each record (0 .. G-1, classes ordered by weight),
        ``class_weights`` (G,) their mean weights, ``labels`` their names; None when
        all weights are equal (relative spread below 1e-9): simple random sampling,
        no design variable.
    """
    w = np.asarray(weights, dtype=float).reshape(-1)
    if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise InputError("weights must be positive and finite, one per record; fix or drop "
                         "the records with missing, zero or negative weights")
    if w.max() - w.min() <= 1e-9 * w.max():
        return None
    # distinct values up to a relative 1e-9 (weights read back from text files)
    order = np.sort(np.unique(w))
    distinct = order[np.concatenate([[True], np.diff(order) > 1e-9 * order[1:]])]
    if distinct.size <= MAX_WEIGHT_CLASSES:
        index = np.searchsorted(distinct, w * (1 + 1e-9), side="right") - 1
        index = np.clip(index, 0, distinct.size - 1)
    else:
        edges = np.unique(np.quantile(np.log(w), np.linspace(0, 1, WEIGHT_BINS + 1)[1:-1]))
        index = np.searchsorted(edges, np.log(w), side="right")
        index = np.unique(index, return_inverse=True)[1]  # renumber: no empty bin
    G = int(index.max()) + 1
    class_weights = np.bincount(index, weights=w, minlength=G) / np.bincount(index, minlength=G)
    labels = [f"w{g + 1}={cw:.6g}" for g, cw in enumerate(class_weights)]
    return index.astype(np.int64), class_weights, labels


def _stick_fractions(rng, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Draw :math:`V_h \sim \mathrm{Beta}(a_h, b_h)`; return V and :math:`\log(1 - V)`.

    Where :math:`b_h < 0.2` (a concentration alpha near 0 and no records in the later
    classes) :math:`1 - V_h` can be far below the spacing of doubles near 1
    (:math:`P(1 - V < \epsilon) \approx \epsilon^b`: below :math:`10^{-12}` in 0.4% of
    draws at :math:`b = 0.2`, 6% at 0.1, nearly all at 0.01): there
    :math:`\log(1 - V_h)` is drawn in logs, as :math:`\log X - \log(X + Y)` with
    :math:`X \sim \mathrm{Gamma}(b)`, :math:`\log X = \log G + \log(U) / b`,
    :math:`G \sim \mathrm{Gamma}(b + 1)` (Marsaglia & Tsang 2000, section 4), and
    :math:`Y \sim \mathrm{Gamma}(a)`, so that alpha's conditional, which needs
    :math:`\sum_h \log(1 - V_h)`, is exact. Clipping V below 1 instead keeps alpha
    away from 0 and the sampler from the posterior's single-class states
    (tests/test_model_latent_class.py). Elsewhere ``rng.beta``, as before, clipped to
    :math:`1 - 10^{-12}`: at :math:`b \ge 0.2` that moves :math:`\log(1 - V)` by about
    :math:`1/b` nats in at most 0.4% of draws, nothing alpha's conditional can see, and
    the demo's chains (alpha at least 0.34 over 10,000 sweeps) draw the same numbers as
    before.
    """
    V = np.clip(rng.beta(a, b), 1e-300, 1.0 - 1e-12)
    log1mV = np.log1p(-V)
    small = b < 0.2
    if small.any():
        a_s, b_s = a[small], b[small]
        lx = np.log(rng.gamma(b_s + 1.0)) + np.log(rng.random(b_s.size)) / b_s
        ly = np.log(rng.gamma(a_s))
        top = np.logaddexp(lx, ly)
        log1mV[small] = lx - top
        V[small] = np.maximum(np.exp(ly - top), 1e-300)
    return V, log1mV


def _label_swaps(m_h: np.ndarray, V: np.ndarray, rng, n_moves: int | None = None,
                 log1mV: np.ndarray | None = None):
    r"""Label-switching Metropolis moves of the truncated stick-breaking mixture.

    Papaspiliopoulos & Roberts (2008) and Hastie, Liverani & Richardson (2015,
    section 3): given the class sizes :math:`m_h` and fractions :math:`V_h`, the joint
    posterior of (allocations, profiles, V) is :math:`\propto \prod_h w_h^{m_h}` times
    terms that a relabelling of the classes (allocations and profiles together) leaves
    unchanged, the profiles' prior being the same for every class. Two moves:

    1. swap two occupied classes :math:`j, k`, V fixed: accepted with probability
       :math:`\min\{1, (w_j / w_k)^{m_k - m_j}\}`;
    2. swap neighbours :math:`k, k + 1` and their fractions :math:`V_k, V_{k+1}`
       (their Beta(1, alpha) prior is symmetric): accepted with probability
       :math:`\min\{1, (1 - V_{k+1})^{m_k} / (1 - V_k)^{m_{k+1}}\}`
       (the last class, whose fraction is 1 under truncation, is not moved).

    ``log1mV``: :math:`\log(1 - V)`, exact where V rounds to 1 (:func:`_stick_fractions`).

    Returns ``(perm, V_new, log1mV_new)``: class ``h`` after the moves is class
    ``perm[h]`` before.
    """
    H = m_h.size
    n_moves = H if n_moves is None else int(n_moves)
    perm = np.arange(H)
    m = np.asarray(m_h, dtype=float).copy()
    V = np.asarray(V, dtype=float).copy()
    log1m = np.log1p(-V) if log1mV is None else np.asarray(log1mV, dtype=float).copy()
    # log w_h = log V_h + sum_{l<h} log(1 - V_l), the last class's V being 1
    lw = np.log(np.append(V, 1.0)) + np.concatenate([[0.0], np.cumsum(log1m)])
    alive = np.flatnonzero(m > 0)
    if alive.size >= 2:
        # uniform over ordered pairs of distinct occupied classes (the set is unchanged by
        # the swaps): the first, then one of the others
        first = rng.integers(alive.size, size=n_moves)
        second = (first + 1 + rng.integers(alive.size - 1, size=n_moves)) % alive.size
        log_u = np.log(rng.random(n_moves))
        for j, k, lu in zip(alive[first], alive[second], log_u, strict=True):
            if lu < (m[k] - m[j]) * (lw[j] - lw[k]):
                m[[j, k]], perm[[j, k]] = m[[k, j]], perm[[k, j]]  # positions keep their w
    if H >= 3:
        ks = rng.integers(0, H - 2, size=n_moves)
        log_u = np.log(rng.random(n_moves))
        for k, lu in zip(ks, log_u, strict=True):
            if lu < m[k] * log1m[k + 1] - m[k + 1] * log1m[k]:
                m[[k, k + 1]], perm[[k, k + 1]] = m[[k + 1, k]], perm[[k + 1, k]]
                V[[k, k + 1]], log1m[[k, k + 1]] = V[[k + 1, k]], log1m[[k + 1, k]]
    return perm, V, log1m


def _stick_log_prior(m: np.ndarray, alpha: float) -> float:
    r"""Log prior of class sizes under truncated stick-breaking with V integrated out.

    :math:`\sum_{h<H}[\log B(1 + m_h, \alpha + \sum_{l>h} m_l) - \log B(1, \alpha)]`
    (Ishwaran & James 2001), the labelled records' probability of those sizes.
    """
    tail = np.cumsum(m[::-1])[::-1]
    a, b = 1.0 + m[:-1], alpha + tail[1:]
    return float((gammaln(a) + gammaln(b) - gammaln(a + b)).sum()
                 - (m.size - 1) * (gammaln(alpha) - gammaln(1.0 + alpha)))


def _augmented_cells(chr_: np.ndarray, phi: Sequence[np.ndarray], sz, rng):
    r"""The structural zeros' augmented records, cell by cell, for the split-merge moves.

    ``chr_`` (H, R): how many augmented records class h puts in rectangle r. Each record
    draws its level of key j from :math:`\phi_{hj}` restricted to the rectangle's levels
    (the untruncated model given class and rectangle, as the sampler's per-key counts
    do), by inverse CDF. Returns ``(codes, alloc)``: the distinct cells (K0, J) and
    their records per class (K0, H).
    """
    H, R = chr_.shape
    which = np.repeat(np.arange(H * R), chr_.ravel())
    h_i, r_i = which // R, which % R
    cols = []
    for j, pj in enumerate(phi):
        p = pj[h_i]
        if sz.restricted[j]:
            p = p * sz.masks[j][r_i]
            tot = p.sum(axis=1, keepdims=True)
            # an underflowed (h, r) has mass 0 and no records: any level of the rectangle
            p = np.where(tot > 0, p / np.where(tot > 0, tot, 1.0),
                         sz.masks[j][r_i] / sz.masks[j][r_i].sum(axis=1, keepdims=True))
        cum = np.cumsum(p, axis=1)
        u = rng.random(h_i.size) * cum[:, -1]
        cols.append(np.minimum((cum <= u[:, None]).sum(axis=1), pj.shape[1] - 1))
    cells, inv = np.unique(np.column_stack(cols), axis=0, return_inverse=True)
    alloc = np.zeros((cells.shape[0], H))
    np.add.at(alloc, (inv.ravel(), h_i), 1.0)
    return cells, alloc


#: Tests only: when True, :meth:`LatentClassModel._gibbs_chain` checks after every
#: sweep's moves (with ``split_merge``, where every record's label is kept) that the
#: class sizes and level counts it carries are those of the records' and augmented
#: records' labels (:func:`_check_class_counts`). Off in use: it costs a recount per sweep.
_CHECK_COUNTS = False


def _check_class_counts(m_h, c, ref_m, ref_c) -> None:
    """Raise RuntimeError where the sampler's counts differ from the labels' recount.

    ``m_h`` (class sizes) and ``c`` (every key's (L_j, H) level counts) against
    ``ref_m``, ``ref_c`` recounted from the labels (see :data:`_CHECK_COUNTS`). The
    counts are whole numbers held in floats, so they must be equal exactly.
    """
    if not np.array_equal(m_h, ref_m):
        raise RuntimeError(f"class sizes {np.asarray(m_h).tolist()} differ from the labels' "
                           f"{np.asarray(ref_m).tolist()}")
    for j, (x, y) in enumerate(zip(c, ref_c, strict=True)):
        if not np.array_equal(x, y):
            raise RuntimeError(f"key {j}'s level counts by class differ from the labels' "
                               f"(largest difference {float(np.abs(x - y).max()):g})")


def _split_merge(alloc: np.ndarray, codes: np.ndarray, conc: Sequence[np.ndarray],
                 alpha: float, rng, n_moves: int = 1,
                 learnt: Mapping[int, np.ndarray] | None = None,
                 counts: Sequence[np.ndarray] | None = None) -> int:
    r"""Split-merge Metropolis-Hastings moves of the classes, profiles and V integrated out.

    The blocked Gibbs sampler changes the allocations only record by record given the
    profiles, and where two classes hold the same records' combinations with slightly
    different profiles (the demo: a key of 150 levels whose learnt profile mass rises
    only once the classes merge) it takes thousands of sweeps to empty one of them. A
    merge proposes to move every record of class b into class a; a split proposes to
    divide the records of class a between a and an empty class b by sequential
    allocation (Dahl 2003; Jain & Neal 2004): the cells of a in random order, the
    records of cell k sent to a with probability :math:`p_k` from the two halves'
    collapsed predictive of one record given the cells already placed (times
    :math:`m + 1`), binomially, so that every split has positive probability and its
    proposal probability is exact. Both target the allocations' posterior given alpha,

    .. math:: p(A \mid \alpha) \propto \prod_k \frac{f_k!}{\prod_h A_{kh}!}\,
              \prod_{h<H} \frac{B(1 + m_h, \alpha + \sum_{l>h} m_l)}{B(1, \alpha)}
              \prod_j \int \prod_h \frac{\Gamma(B_j)}{\Gamma(B_j + m_h)}
              \prod_l \frac{\Gamma(\beta_{jl} + c_{hjl})}{\Gamma(\beta_{jl})}\,
              dP(M_j),

    (:func:`_stick_log_prior`, :func:`profile_mass_loglik`), with A the cells' counts per
    class and :math:`\beta_j = M_j\eta_j`: for a key of fixed concentration ``conc[j]``
    the integral is that one term (M_j its total, :math:`\eta_j` its shares); for a key
    whose mass is learnt (``learnt``: key index to its base :math:`\eta_j`) it is the sum
    over :data:`PHI_MASS_GRID` under its uniform prior, so that a merge may carry the mass
    up with it (measured on the demo, this changes almost no decision: the mass given the
    classes is sharp; benchmarks/README.md, "A split-merge move for the classes"). The
    sequential allocation then uses the mass of largest posterior given the
    merged classes (the same in a split and in the merge that undoes it). Given the
    allocations the sampler draws V, alpha, the masses and the profiles from their full
    conditionals, so the composition keeps the joint posterior (a partially collapsed
    Gibbs step: what is integrated out here is drawn before anything conditions on it).
    A move picks split or merge with probability 1/2; a split picks an occupied class a
    and an empty b uniformly, a merge an ordered pair of occupied classes (a keeps the
    records); splits that leave a half empty are rejected.

    ``alloc`` (K, H) is changed in place; returns the number of accepted moves.
    ``counts``: every key's (L_j, H) level counts of ``alloc``, where the caller has them.
    """
    import math

    K, H = alloc.shape
    J = codes.shape[1]
    learnt = dict(learnt or {})
    sizes = np.array([len(b) for b in conc])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    # every key as a base and a grid of masses: a fixed concentration is a one-point grid
    bases, grids = [], []
    for j in range(J):
        b = np.asarray(conc[j], dtype=float)
        bases.append(learnt[j] if j in learnt else b / b.sum())
        grids.append(PHI_MASS_GRID if j in learnt else np.array([b.sum()]))
    if counts is None:
        counts = []
        for j in range(J):
            cj = np.zeros((sizes[j], H))
            np.add.at(cj, codes[:, j], alloc)
            counts.append(cj)
    # every key's log p(c_j | M) on its grid, summed over the classes
    ll_all = [profile_mass_loglik(counts[j], bases[j], grids[j]) for j in range(J)]
    log = math.log
    accepted = 0
    for _ in range(int(n_moves)):
        m = alloc.sum(axis=0)
        occ = np.flatnonzero(m > 0)
        n_occ = occ.size
        split = rng.random() < 0.5
        if split:
            if n_occ == H:
                continue
            a = int(rng.choice(occ))
            b = int(rng.choice(np.flatnonzero(m == 0)))
        else:
            if n_occ < 2:
                continue
            a, b = (int(x) for x in rng.choice(occ, size=2, replace=False))
        cells = np.flatnonzero(alloc[:, a] + alloc[:, b] > 0)
        cells = cells[rng.permutation(cells.size)]
        n_k = alloc[cells, a] + alloc[cells, b]
        log_u = np.log(rng.random())
        lev = [codes[cells, j] for j in range(J)]
        old = np.column_stack([alloc[cells, a], alloc[cells, b]])

        def two(cols, j, lev=lev):
            # key j's level counts of the two classes' columns cols
            return np.stack([np.bincount(lev[j], weights=cols[:, t], minlength=sizes[j])
                             for t in range(2)], axis=1)

        ll_rest = [ll_all[j] - profile_mass_loglik(two(old, j), bases[j], grids[j])
                   for j in range(J)]

        def target(cols, m=m, a=a, b=b, ll_rest=ll_rest):
            # the log posterior's terms that depend on classes a and b (two columns), and
            # every key's log p(c_j | M) on its grid
            m_ab = m.copy()
            m_ab[a], m_ab[b] = cols[:, 0].sum(), cols[:, 1].sum()
            ll = [ll_rest[j] + profile_mass_loglik(two(cols, j), bases[j], grids[j])
                  for j in range(J)]
            lp = (-gammaln(cols + 1.0).sum() + _stick_log_prior(m_ab, alpha)
                  + sum(float(logsumexp(x)) for x in ll))
            return lp, ll

        merged = np.column_stack([n_k, np.zeros(cells.size)])
        t_merged, ll_merged = target(merged)
        if split:
            t_old = t_merged
        else:
            t_old, _ = target(old)
            # the merge's reverse split from occ - 1 occupied classes; log q <= 0, so a
            # merge whose target ratio alone falls short is rejected before computing it
            log_r = t_merged - t_old + np.log(n_occ) - np.log(H - n_occ + 1)
            if log_u >= log_r:
                continue
            x_given = alloc[cells, a].tolist()
        # the proposal's concentrations: the learnt keys at the merged classes' mass
        prop = [grids[j][int(np.argmax(ll_merged[j]))] * bases[j] for j in range(J)]
        tot = [float(x.sum()) for x in prop]
        flat_conc = np.concatenate(prop).tolist()
        # sequential allocation (in plain floats: this loop is the move's cost)
        flat = (codes[cells] + offsets).tolist()
        nks = n_k.tolist()
        u = rng.random(cells.size).tolist() if split else None
        ca = [0.0] * len(flat_conc)
        cb = [0.0] * len(flat_conc)
        ma = mb = 0.0
        log_q = 0.0
        x_new = [0.0] * cells.size
        for i in range(cells.size):
            idx = flat[i]
            d = log(ma + 1.0) - log(mb + 1.0)
            for t in idx:
                d += log(flat_conc[t] + ca[t]) - log(flat_conc[t] + cb[t])
            for t in tot:
                d += log(t + mb) - log(t + ma)
            d = min(max(d, -30.0), 30.0)
            log_p, log_1mp = -math.log1p(math.exp(-d)), -math.log1p(math.exp(d))
            nk = nks[i]
            if split:
                if nk == 1.0:
                    x = 1.0 if u[i] < math.exp(log_p) else 0.0
                else:
                    x = float(rng.binomial(int(nk), math.exp(log_p)))
            else:
                x = x_given[i]
            x_new[i] = x
            log_q += x * log_p + (nk - x) * log_1mp
            if nk > 1.0:
                log_q += math.lgamma(nk + 1.0) - math.lgamma(x + 1.0) - math.lgamma(nk - x + 1.0)
            for t in idx:
                ca[t] += x
                cb[t] += nk - x
            ma += x
            mb += nk - x
        if split:
            if ma == 0 or mb == 0:  # a half left empty: not a split
                continue
            x_arr = np.array(x_new)
            new = np.column_stack([x_arr, n_k - x_arr])
            t_new, ll_new = target(new)
            # pick (a, b) as a split 1/(occ (H - occ)), its merge 1/((occ + 1) occ)
            log_r = t_new - t_old + np.log(H - n_occ) - np.log(n_occ + 1) - log_q
        else:
            new, ll_new = merged, ll_merged
            log_r = log_r + log_q
        if log_u < log_r:
            alloc[cells, a], alloc[cells, b] = new[:, 0], new[:, 1]
            ll_all = ll_new
            accepted += 1
    return accepted


def stick_breaking_weights(V) -> np.ndarray:
    r"""Class weights :math:`w_h = V_h \prod_{l<h}(1 - V_l)` from stick-breaking fractions.

    Truncated stick-breaking (Ishwaran & James 2001; Dunson & Xing 2009, eq. 2.3):
    ``V`` has H - 1 entries on the last axis and :math:`V_H = 1` is appended so the
    H weights sum to one.
    """
    V = np.asarray(V, dtype=float)
    one = np.ones(V.shape[:-1] + (1,))
    Vfull = np.concatenate([V, one], axis=-1)
    rest = np.concatenate([one, np.cumprod(1.0 - V, axis=-1)], axis=-1)
    return Vfull * rest


def _nb_base(lam, sample_mean, kappa):
    """log(b/(b + lam)) pieces of the gamma-mixed forms; kappa may hold inf (Poisson)."""
    lam = np.asarray(lam, dtype=float)
    kappa = np.asarray(kappa, dtype=float)
    finite = np.isfinite(kappa)
    k = np.where(finite, kappa, 1.0)
    b = k + np.asarray(sample_mean, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = -np.log1p(lam / b)  # log(b / (b + lam)) <= 0
    return lam, finite, k, b, log_ratio


def prob_population_unique(lam, kappa=None, sample_mean=None) -> np.ndarray:
    r""":math:`P(F_k = 1 \mid f_k = 1)` given the cell parameters.

    Poisson (``kappa=None`` or inf): :math:`e^{-\lambda_k}`, :math:`\lambda_k = (N - n)\pi_k`,
    by Poisson thinning (Skinner & Holmes 1998, the log-linear global risk of seed
    ``001_…`` section 3.4): :math:`F_k - f_k \mid \pi \sim \mathrm{Po}(\lambda_k)`.

    Gamma-overdispersed cells (module docstring, "Overdispersion"): the cell's
    population rate is :math:`N\pi_k u_k`, :math:`u_k \sim \mathrm{Gamma}(\kappa, \kappa)`,
    so given :math:`f_k = 1`, :math:`u_k \sim \mathrm{Gamma}(\kappa + 1, \kappa + n\pi_k)`
    and

    .. math:: P(F_k = 1 \mid f_k = 1) = \left(\frac{b}{b + \lambda_k}\right)^{\kappa + 1},
              \qquad b = \kappa + n\pi_k,

    the negative-binomial zero probability; :math:`\kappa \to \infty` gives
    :math:`e^{-\lambda_k}`. ``sample_mean`` is :math:`n\pi_k`; ``kappa``
    broadcasts (e.g. one value per draw, shape (draws, 1)) and may hold inf.
    """
    if kappa is None:
        return np.exp(-np.asarray(lam, dtype=float))
    lam, finite, k, _, log_ratio = _nb_base(lam, sample_mean, kappa)
    return np.where(finite, np.exp((k + 1.0) * log_ratio), np.exp(-lam))


def expected_inverse_frequency(lam, kappa=None, sample_mean=None) -> np.ndarray:
    r""":math:`E(1/F_k \mid f_k = 1)` given the cell parameters (1 at :math:`\lambda = 0`).

    Poisson: :math:`(1 - e^{-\lambda_k})/\lambda_k`, from :math:`1/F = \int_0^1 t^{F-1}dt`
    and :math:`E t^X = e^{-\lambda(1-t)}` (Skinner & Shlomo 2008, section 2, the
    summand of their tau2 estimator). Gamma-overdispersed cells (see
    :func:`prob_population_unique`): :math:`E t^X = (b/(b + \lambda(1-t)))^{\kappa+1}`,
    whose integral over t is

    .. math:: \frac{b}{\kappa\lambda}\left(1 - \left(\frac{b}{b + \lambda}\right)^{\kappa}\right).
    """
    lam_a = np.asarray(lam, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        pois = np.where(lam_a > 1e-12, -np.expm1(-lam_a) / lam_a, 1.0 - lam_a / 2.0)
    if kappa is None:
        return pois
    lam_a, finite, k, b, log_ratio = _nb_base(lam_a, sample_mean, kappa)
    y = lam_a / b
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        nb = b / (k * lam_a) * -np.expm1(k * log_ratio)
        # k lam / b small: the closed form's k lam can reach 0 (0/0); the same value as
        # log1p(y)/y * expm1(x)/x, x = k log(b/(b + lam)), each factor in [0, 1] and
        # exact for any small y or x (and 1 at 0), so also where kappa is tiny but
        # lam/b is not (the series below would leave [0, 1] there: -49 at kappa 1e-10)
        x = k * log_ratio
        small = np.where(y > 0, -log_ratio / y, 1.0) * np.where(x < 0, np.expm1(x) / x, 1.0)
    # lam/b and k lam/b both small: the series 1 - lam (k + 1) / (2 b), whose neglected
    # terms are O((1 + k)^2 (lam/b)^2) < 1e-15 there
    small = np.where(y <= 1e-8, 1.0 - lam_a * (k + 1.0) / (2.0 * b), small)
    nb = np.where(k * y > 1e-8, nb, small)
    return np.where(finite, nb, pois)


def expected_inverse_frequency_f(f, lam, kappa=None, sample_mean=None) -> np.ndarray:
    r""":math:`E(1/F_k \mid f_k)` for any :math:`f_k \ge 1` given the cell parameters.

    Poisson (``kappa`` None or inf): :math:`F = f + X`, :math:`X \sim \mathrm{Po}(\lambda)`,
    :math:`E(1/F) = {}_1F_1(1; f + 1; -\lambda)/f` (Skinner & Shlomo 2008, section 2).
    Gamma overdispersion (:func:`prob_population_unique`): given :math:`f_k`,
    :math:`u_k \sim \mathrm{Gamma}(\kappa + f, \kappa + n\pi_k)`, so the excess is
    :math:`\mathrm{NegBin}(\kappa + f, \rho)` with :math:`\rho = b/(b + \lambda)`,
    :math:`b = \kappa + n\pi_k`, and :math:`E(1/F)` is the negative-binomial inverse
    moment of seed ``004_…`` eq. (1)/(6) with size :math:`\kappa + f`, evaluated
    by :func:`sdcbayes.risk.individual.negbin_inverse_moment` (relative error about
    1e-14). f = 1 uses the closed forms of :func:`expected_inverse_frequency`.
    """
    from scipy.special import hyp1f1

    # the exact negative-binomial inverse moment lives with the closed forms in risk/
    from sdcbayes.risk.individual import negbin_inverse_moment

    f = np.asarray(f, dtype=float)
    lam = np.asarray(lam, dtype=float)
    if kappa is None:
        kappa = np.inf
    f, lam, kap, sm = np.broadcast_arrays(
        f, lam, np.asarray(kappa, dtype=float),
        np.asarray(0.0 if sample_mean is None else sample_mean, dtype=float))
    out = np.array(expected_inverse_frequency(lam, kap, sm), dtype=float, copy=True)
    many = f > 1
    if not many.any():
        return out
    fm, lm, km, smm = f[many], lam[many], kap[many], sm[many]
    finite = np.isfinite(km)
    res = np.empty(fm.shape)
    if (~finite).any():
        res[~finite] = hyp1f1(1.0, fm[~finite] + 1.0, -lm[~finite]) / fm[~finite]
    if finite.any():
        b = km[finite] + smm[finite]
        rho = np.clip(b / (b + lm[finite]), np.finfo(float).tiny, 1.0)
        res[finite] = negbin_inverse_moment(fm[finite], km[finite] + fm[finite], rho)
    out[many] = res
    return out


def simulate_excess(lam, rng, kappa=None, sample_mean=None, f=1) -> np.ndarray:
    r"""Draw :math:`F_k - f_k \mid f_k` given the cell parameters.

    Poisson: :math:`\mathrm{Po}(\lambda_k)`. Gamma-overdispersed cells: the
    gamma-Poisson mixture :math:`\mathrm{NegBin}(\kappa + f_k, b/(b + \lambda_k))`
    (failures), :math:`b = \kappa + n\pi_k` (see :func:`prob_population_unique`).
    """
    lam = np.asarray(lam, dtype=float)
    if kappa is None:
        return rng.poisson(lam)
    lam, finite, k, b, _ = _nb_base(lam, sample_mean, kappa)
    k, b, finite = np.broadcast_to(k, lam.shape), np.broadcast_to(b, lam.shape), \
        np.broadcast_to(finite, lam.shape)
    p = np.where(finite, b / (b + lam), 0.5)
    nb = rng.negative_binomial(k + np.asarray(f, dtype=float), p)
    return np.where(finite, nb, rng.poisson(lam))


def simulate_tau(lam, rng, kappa=None, sample_mean=None) -> tuple[np.ndarray, np.ndarray]:
    r"""One posterior-predictive draw of :math:`(\tau_1, \tau_2)` per row of ``lam``.

    Given the parameters, the :math:`F_k - 1` of the sample uniques are independent
    (:func:`simulate_excess`), so :math:`\tau_1 = \sum_k I(F_k = 1)` is a sum of
    Bernoulli(:func:`prob_population_unique`) and :math:`\tau_2 = \sum_k 1/F_k`.

    Parameters
    ----------
    lam : array_like, shape (..., n_uniques)
        :math:`\lambda_k = (N - n)\pi_k` of the sample uniques, per draw.
    rng : numpy.random.Generator
    kappa, sample_mean : optional
        Gamma overdispersion (see :func:`prob_population_unique`).
    """
    extra = simulate_excess(lam, rng, kappa, sample_mean)
    return (extra == 0).sum(axis=-1).astype(float), (1.0 / (1.0 + extra)).sum(axis=-1)


def simulate_cells(w, phi, n: float, rng, *, kappa=None, structural_zeros=None,
                   design: bool = False) -> tuple[np.ndarray, np.ndarray]:
    r"""Draw a sample's occupied key cells and their counts from a mixture.

    Every allowed cell k gets :math:`f_k \sim \mathrm{Po}(\mu_k)`, or with gamma-
    overdispersed cells (``kappa``, module docstring "Overdispersion")
    :math:`f_k \sim \mathrm{NegBin}(\kappa, \text{mean } \mu_k)`, independently,
    :math:`\mu_k = n\pi^*_k` with :math:`\pi^*` the mixture truncated to the allowed
    cells. The cell space is too large to visit cell by cell, so the draw is exact by
    thinning, at O(n J) whatever the number of cells: a Poisson number of records with
    mean :math:`n/(1 - \pi(S))` drawn from the untruncated mixture (a class, then a
    level per key) and those in S dropped form a Poisson process of intensity
    :math:`\mu_k` over the cells; keeping each with probability
    :math:`\kappa\log(1 + \mu_k/\kappa)/\mu_k \le 1` leaves one of intensity
    :math:`\kappa\log(1 + \mu_k/\kappa)`, which occupies cell k with probability
    :math:`1 - (1 + \mu_k/\kappa)^{-\kappa} = P(f_k \ge 1)` (Poisson cells: every
    drawn cell, :math:`1 - e^{-\mu_k}`); an occupied cell's count is drawn from the
    zero-truncated distribution by inversion. :math:`\mu_k` is evaluated once per
    distinct cell, not per record, and the cells are told apart by one integer each
    where the cell space's size fits in 64 bits.

    Parameters
    ----------
    w : array (H,)
        Class weights (normalised here).
    phi : sequence of arrays (H, L_j)
        Class profiles of every column of the model's codes.
    n : float
        The sample's expected size.
    rng : numpy.random.Generator
    kappa : float, optional
        ``None`` or ``inf``: Poisson cells.
    structural_zeros : StructuralZeros, optional
    design : bool
        The last column is a design variable (weight class), not a key: the cells drawn
        (and overdispersed) are the key cells, the other columns.

    Returns
    -------
    cells : int array (occupied cells, J or J - 1)
    counts : int array (occupied cells,), each >= 1
    """
    from scipy import stats

    w = np.asarray(w, dtype=float)
    w = w / w.sum()
    phi = [np.asarray(p, dtype=float) for p in phi]
    mass_s = 0.0
    if structural_zeros is not None:
        mass_s = float(min(w @ structural_zeros.class_mass(phi), 1.0 - 1e-12))
    m = rng.poisson(n / (1.0 - mass_s))
    cls = rng.choice(w.size, size=m, p=w)
    # records grouped by class, so that each class's levels take one searchsorted
    order = np.argsort(cls, kind="stable")
    bounds = np.searchsorted(cls[order], np.arange(w.size + 1))
    codes = np.empty((m, len(phi)), dtype=np.int64)
    for j, p in enumerate(phi):
        cum = np.cumsum(p, axis=1)
        cum /= cum[:, -1:]
        u = rng.random(m)
        for h in np.flatnonzero(np.diff(bounds)):
            idx = order[bounds[h]:bounds[h + 1]]
            codes[idx, j] = np.searchsorted(cum[h], u[idx], side="left")
        codes[:, j] = np.minimum(codes[:, j], p.shape[1] - 1)
    if structural_zeros is not None:
        codes = codes[~structural_zeros.contains(codes)]
    keys = codes[:, :-1] if design else codes
    radix = [p.shape[1] for p in (phi[:-1] if design else phi)]
    if float(np.prod(radix, dtype=float)) < 2.0 ** 62:  # one int64 per cell: a 1-d sort
        flat, cell_of = np.unique(np.ravel_multi_index(keys.T, radix), return_inverse=True)
        cells = np.column_stack(np.unravel_index(flat, radix)) if flat.size \
            else np.empty((0, len(radix)), dtype=np.int64)
    else:
        cells, cell_of = np.unique(keys, axis=0, return_inverse=True)
    cell_of = cell_of.ravel()
    with np.errstate(divide="ignore"):  # a class may have a level of mass 0
        lp = _log_cell_terms(cells, [np.log(p) for p in (phi[:-1] if design else phi)])
        mu = n * np.exp(logsumexp(lp + np.log(w), axis=1)) / (1.0 - mass_s)
    finite = kappa is not None and np.isfinite(kappa)
    if finite:
        keep = rng.random(cell_of.size) < (kappa * np.log1p(mu / kappa) / mu)[cell_of]
        occupied = np.bincount(cell_of[keep], minlength=cells.shape[0]) > 0
        cells, mu = cells[occupied], mu[occupied]
    dist = stats.nbinom(kappa, kappa / (kappa + mu)) if finite else stats.poisson(mu)
    p0 = dist.cdf(0)
    # below 1, so that a cell whose P(f >= 1) is lost to rounding gets a finite count
    q = np.minimum(p0 + rng.random(cells.shape[0]) * (1.0 - p0), 1.0 - 1e-16)
    return cells, np.maximum(dist.ppf(q), 1).astype(np.int64)


def replicate_counts_of_counts(w, phi, n: float, rng, *, kappa=None, structural_zeros=None,
                               design: bool = False, max_count: int = PPC_MAX_COUNT) -> np.ndarray:
    r"""One replicate sample's counts of counts under the mixture: :math:`m_1, \dots, m_{\ge J}`.

    The posterior predictive check of :meth:`LatentClassModel.sample` (``ppc=``) asks
    whether the fitted model reproduces the sample's numbers of sample uniques, doubles,
    triples, ... (the counts of counts, the check of the other models in
    :mod:`sdcbayes.models.ppc`; Gelman, Meng & Stern 1996). The replicate sample is
    drawn by :func:`simulate_cells` (exact, at O(n J) whatever the number of cells);
    its size is n in expectation.

    Parameters
    ----------
    w, phi, n, rng, kappa, structural_zeros, design
        See :func:`simulate_cells`.
    max_count : int
        Counts of ``max_count`` or more are pooled in the last entry.

    Returns
    -------
    numpy.ndarray of int64, shape (max_count,)
        :math:`m_1, \dots, m_{\text{max\_count} - 1}, m_{\ge \text{max\_count}}`.
    """
    _, f = simulate_cells(w, phi, n, rng, kappa=kappa, structural_zeros=structural_zeros,
                          design=design)
    return np.bincount(np.minimum(f, max_count), minlength=max_count + 1)[1:].astype(np.int64)


# --------------------------------------------------------------------------------------
# sums over rectangles of key cells (the patterns of a released file)
# --------------------------------------------------------------------------------------

#: Largest Gram array (draws x H x H elements) :class:`PatternSums` keeps for all draws at
#: once; above, it is computed again for each chunk of draws asked for (200 MB).
GRAM_CACHE_ELEMENTS = 25_000_000


class PatternSums:
    r"""Per-draw sums over the key cells of a rectangle, without listing its cells.

    A rectangle (a released record's pattern) is a set of levels :math:`A_j` per key:
    one level (the released value), a subset (a recoded value) or every level (a
    suppressed value). Its key cells are :math:`p = \prod_j A_j`. With the mixture's
    class weights :math:`w_h`, profiles :math:`\phi_{hj}` and each class's excess rate
    :math:`E_h = \sum_g \phi_{hG}(g)\,e_g` (:meth:`LatentClassModel.excess_rates`
    :math:`e_g` over the weight classes; :math:`N/n - 1` without them), a cell c has
    :math:`\pi_c = \sum_h w_h\prod_j\phi_{hj}(c_j)`, :math:`y_c = n\pi_c` and excess mean
    :math:`\lambda_c = n\sum_h w_h E_h\prod_j\phi_{hj}(c_j)` (what :meth:`LatentClassModel.
    sample` stores as ``pi`` and ``lam``). With :math:`a_h = w_h\prod_{j\ \mathrm{fixed}}
    \phi_{hj}(x_j)` (the keys with one level), :math:`c_h = \prod_{j\ \mathrm{free}}
    \phi_{hj}(A_j)` and the Gram matrix of the free keys
    :math:`G_{hh'} = \prod_{j\ \mathrm{free}}\sum_{l\in A_j}\phi_{hjl}\phi_{h'jl}`
    (the package's derivation, :mod:`sdcbayes.risk.released`; the mixture's conditional
    independence makes every sum over the product set a product of sums):

    .. math::

        \pi_p = \sum_h a_h c_h,\quad \lambda_p = n\sum_h a_h c_h E_h,\quad
        \sum_{c\in p}\lambda_c y_c = n^2\sum_{hh'} a_h E_h G_{hh'} a_{h'},\quad
        \sum_{c\in p}\lambda_c^2 = n^2\sum_{hh'} a_h E_h G_{hh'} a_{h'} E_{h'},

    all exact. G depends on the free keys' level sets only, not on the fixed values,
    so it is computed once per set (cost draws x H^2 x the free keys' levels) and kept
    while rectangles with the same free keys follow one another. :meth:`sums_many`,
    :meth:`cells_many` and :meth:`top_cells_many` take many such rectangles at once (one
    free-key specification, the fixed keys' levels per rectangle), as arrays over
    rectangles x draws, equal to the one-rectangle methods to rounding.

    Parameters
    ----------
    w : array_like, shape (S, H)
        Class weights per draw.
    phi : sequence of array_like, shape (S, H, L_j)
        The profiles of the keys (not of a weight-class design variable, which enters
        through ``E``).
    E : array_like, shape (S, H) or (S, 1)
        The excess rate of each class per draw.
    n : float
        Sample size.
    structural_zeros : StructuralZeros, optional
        The set S of impossible cells the posterior was fitted with, on the keys' levels
        (its keys the profiles' ``phi``, in that order; a weight-class design variable,
        which no rule may name, left out or unrestricted). Without it (or with no
        rectangle) the mixture is taken untruncated, and every result is the untruncated
        one to the bit.
    key_rate : tuple (int, array_like), optional
        ``(s, e)``: key s's levels scale each cell's excess, :math:`\lambda_c = n\sum_h
        w_h E_h\prod_j\phi_{hj}(c_j)\, e_{c_s}`, with ``e`` of shape (L_s,) or (S, L_s),
        finite and >= 0: the stratum path of a fit whose stratum is key s,
        :math:`e_l = \max(\bar w_l, 1) - 1` the stratum's mean weight less one and
        ``E`` ones (:func:`sdcbayes.risk.posterior_assess._stratum_key_rates`). Without it
        every result is the one without, to the bit.

    Notes
    -----
    With structural zeros the mixture is truncated to the cells outside S
    (Manrique-Vallier & Reiter 2014, eq. 2): per draw, with
    :math:`m = \sum_h w_h\sum_r\prod_j\phi_{hj}(R_{rj})` the untruncated mass of S
    (:meth:`StructuralZeros.class_mass`; ``mass``, clipped below 1 as the sampler clips
    it), a cell c outside S has :math:`\pi_c = u_c/(1-m)` and :math:`\lambda_c =
    n\sum_h w_h E_h\prod_j\phi_{hj}(c_j)/(1-m)` (:math:`u_c` the untruncated
    :math:`\pi_c`), a cell in S has :math:`\pi_c = \lambda_c = 0`: what
    :meth:`LatentClassModel.sample` stores. S is a union of disjoint rectangles
    :math:`R_r`; the cells of p in :math:`R_r` are, where p's fixed levels lie in
    :math:`R_r`, those levels times :math:`A_j\cap R_{rj}` on the free keys. For the
    rectangles whose fixed levels lie in the same :math:`R_r` (one signature), the free
    keys' product less those :math:`R_r`'s free parts is split into disjoint rectangles
    (rectangle differences, as :class:`StructuralZeros` splits its rules), each summed by
    the formulas above with a Gram matrix of its own (kept beside the main one while the
    free keys stay the same). Every term is non-negative, so the sums are exact to
    rounding, relative, and never negative (subtracting the sums over :math:`p\cap R_r`
    from those over p instead kept 9 digits on the tests' pattern lying mostly in S); a
    rectangle whose fixed levels lie in no :math:`R_r` meeting its free sets keeps its
    untruncated sums. The linear sums then scale by :math:`1/(1-m)`, the quadratic ones
    (:math:`\sum\lambda_c y_c`, :math:`\sum\lambda_c^2`) by :math:`1/(1-m)^2`.
    :meth:`cells` and :meth:`cells_many` give 0 for cells in S; :meth:`top_cells` leaves
    them out (they would take a top slot for nothing: :math:`\pi = \lambda = 0`; no
    other cell takes their place), and :meth:`top_cells_many`, whose rectangles share one
    number of cells, lists them for the caller to leave out by :meth:`in_zeros` (as it
    leaves out the observed cells).

    With ``key_rate=(s, e)`` each sum over the product set still factorises key by key,
    key s's factor carrying :math:`e_l^k` with k the number of :math:`\lambda` factors
    in the summand (0 for :math:`\pi_p`, 1 for :math:`\lambda_p` and
    :math:`\sum\lambda_c y_c`, 2 for :math:`\sum\lambda_c^2`; the package's
    derivation). Key s fixed at level l: the rectangle's class rates :math:`E_h` times the
    scalar :math:`e_l` (so that :math:`\lambda` scales by :math:`e_l`, the quadratic
    :math:`\sum\lambda_c^2` by :math:`e_l^2`). Key s free (blank or recoded, level set
    :math:`A_s`): with c and G over the free keys other than s,
    :math:`\lambda_p = n\sum_h a_h E_h c_h\sum_{l\in A_s}e_l\phi_{hsl}`,
    :math:`\sum\lambda_c y_c = n^2\sum_{hh'} a_hE_h G^{(1)}_{hh'} a_{h'}` and
    :math:`\sum\lambda_c^2 = n^2\sum_{hh'} a_hE_h G^{(2)}_{hh'} a_{h'}E_{h'}`, the
    tilted Gram matrices :math:`G^{(k)}_{hh'} = G_{hh'}\sum_{l\in A_s}e_l^k
    \phi_{hsl}\phi_{h'sl}` (two, kept together as G is). With structural zeros each
    disjoint piece of :math:`p\setminus S` is such a product set, summed alike (its own
    :math:`G^{(1)}, G^{(2)}` where s is free in it). :meth:`cells` and :meth:`cells_many`
    multiply :math:`\lambda_c` by :math:`e_{c_s}`; :meth:`top_cells` and
    :meth:`top_cells_many` rank key s's levels by :math:`e_l` times the conditional
    marginal where s is free (the cells with no excess, of a stratum taken in full, would
    take the top slots for nothing), every other key as without.
    """

    def __init__(self, w, phi, E, n: float, structural_zeros=None, key_rate=None):
        self.w = np.asarray(w, dtype=float)
        self.phi = [np.asarray(p, dtype=float) for p in phi]
        S, H = self.w.shape
        if any(p.ndim != 3 or p.shape[:2] != (S, H) for p in self.phi):
            raise InputError(f"phi must hold one (draws, classes, levels) array per key, "
                             f"with draws and classes {(S, H)} as w")
        self.E = np.broadcast_to(np.asarray(E, dtype=float), (S, H))
        self.n = float(n)
        self.n_levels = [p.shape[2] for p in self.phi]
        self._gram: dict[tuple, Any] = {}
        self._set_zeros(structural_zeros)
        self._set_key_rate(key_rate)

    @property
    def n_draws(self) -> int:
        """Number of draws S."""
        return self.w.shape[0]

    def _set_key_rate(self, key_rate) -> None:
        """Keep key s and its per-level excess factor e, (draws, L_s), or None for each."""
        self._ks: int | None = None
        self._ke: np.ndarray | None = None
        if key_rate is None:
            return
        S, J = self.w.shape[0], len(self.phi)
        try:
            s, e = key_rate
            s_ok = not isinstance(s, bool) and int(s) == s and 0 <= int(s) < J
        except (TypeError, ValueError):
            s_ok = False
        if not s_ok:
            raise InputError(f"key_rate must be (key index in 0 .. {J - 1}, per-level "
                             f"factors); got {key_rate!r}")
        s = int(s)
        L = self.n_levels[s]
        e = np.asarray(e, dtype=float)
        if e.shape not in ((L,), (S, L)) or not np.all(np.isfinite(e)) or np.any(e < 0):
            raise InputError(f"key_rate's factors must be finite, >= 0 and of shape ({L},) "
                             f"or ({S}, {L}) (key {s}'s levels, per draw or for all); got "
                             f"shape {e.shape}")
        self._ks = s
        self._ke = np.array(np.broadcast_to(e, (S, L)))

    def _set_zeros(self, sz) -> None:
        """Keep S's rectangles on the keys and the untruncated mass m of S per draw."""
        S, H = self.w.shape
        J = len(self.phi)
        self.structural_zeros = None
        self._zmasks: list[np.ndarray] = []  # per key (R, L_j) bool: level in rectangle r
        self._zparts: dict[str, Any] = {}  # one free-key spec's pieces of p less S
        self.mass = np.zeros(S)
        if sz is None:
            return
        if not isinstance(sz, StructuralZeros):
            raise InputError(f"structural_zeros must be a StructuralZeros on the keys' "
                             f"levels; got {type(sz).__name__}")
        nl = [int(x) for x in sz.n_levels]
        if (len(nl) < J or nl[:J] != [int(x) for x in self.n_levels]
                or any(sz.restricted[J:])):
            raise InputError(
                f"structural_zeros must be on the keys of phi ({J}, with {self.n_levels} "
                f"levels), a weight-class design variable unrestricted; got keys "
                f"{list(sz.keys)} with {nl} levels")
        if not sz.n_rectangles:
            return  # no rectangle: the untruncated mixture, to the bit
        self.structural_zeros = sz
        self._zmasks = [np.asarray(m, dtype=bool) for m in sz.masks[:J]]
        # m per draw as the sampler computes it: w_h times each rectangle's class mass
        # (restricted keys only: an unrestricted key's profile sums to 1), clipped below 1
        rm = np.ones((S, H, sz.n_rectangles))
        for j in range(J):
            if sz.restricted[j]:
                rm *= self.phi[j] @ self._zmasks[j].T.astype(float)
        self.mass = np.minimum((self.w[:, :, None] * rm).sum(axis=(1, 2)), 1.0 - 1e-12)

    def in_zeros(self, codes) -> np.ndarray:
        """Whether each full cell (``codes`` (..., J)) lies in S; all False without S."""
        codes = np.asarray(codes, dtype=np.int64)
        shape = codes.shape[:-1]
        if self.structural_zeros is None:
            return np.zeros(shape, bool)
        rows = codes.reshape(-1, len(self.phi))
        hit = np.ones((rows.shape[0], self._zmasks[0].shape[0]), bool)
        for j, m in enumerate(self._zmasks):
            if not m.all():
                hit &= m.T[rows[:, j]]
        return hit.any(axis=1).reshape(shape)

    def _truncate_cells(self, pi, lam, inside, sl):
        """pi, lam (..., draws, K) of cells: 0 in S (``inside`` (..., K)), else / (1 - m)."""
        keep = 1.0 - self.mass[sl]
        out = (pi / keep[:, None], lam / keep[:, None])
        return tuple(np.where(inside[..., None, :], 0.0, x) for x in out)

    def _zero_signatures(self, rect, fixed) -> tuple[list[int], np.ndarray]:
        r"""The rectangles of S a batch's rectangles may meet, and which each meets.

        Returns ``(met, hit)``: ``met`` the rectangles :math:`R_r` whose free-key level
        sets meet ``rect``'s (:math:`A_j\cap R_{rj}` not empty on every free key), ``hit``
        (P, len(met)) whether rectangle p's fixed levels ``fixed`` lie in each.
        """
        free = self._free(rect)
        met = [r for r in range(self._zmasks[0].shape[0])
               if all((self._zmasks[j][r] if rect[j] is None
                       else self._zmasks[j][r, rect[j]]).any() for j in free)]
        hit = np.ones((fixed.shape[0], len(met)), bool)
        for i, r in enumerate(met):
            for j, lv in enumerate(rect):
                if lv is not None and lv.size == 1 and not self._zmasks[j][r].all():
                    hit[:, i] &= self._zmasks[j][r][fixed[:, j]]
        return met, hit

    def _pieces(self, rect, sig: tuple[int, ...], sl) -> list[tuple[np.ndarray, np.ndarray]]:
        r"""The free part of :math:`p\setminus S` as disjoint rectangles, with their sums.

        For rectangles whose fixed levels lie in the rectangles :math:`R_r`, r in ``sig``
        (and in no other that meets the free sets), the cells outside S are the free
        keys' product :math:`\prod_j A_j` less each :math:`\prod_j (A_j\cap R_{rj})`:
        split into disjoint rectangles by rectangle differences (as
        :class:`StructuralZeros` splits its rules). Per piece ``(c, G)``: :math:`c_h =
        \prod_j\phi_{hj}(B_j)` (draws, H) and the Gram matrix of its level sets
        (draws, H, H); with ``key_rate``'s key free in it, ``(c0, c1, G1, G2)``
        (:meth:`_rate_parts`). Kept for all draws while rectangles with the same free keys
        follow one another (within :data:`GRAM_CACHE_ELEMENTS` in all, as the main
        Gram matrix), else computed for ``sl``.
        """
        free = self._free(rect)
        spec = tuple((j, None if rect[j] is None else tuple(rect[j].tolist())) for j in free)
        if self._zparts.get("spec") != spec:
            # one set at a time, as the Gram matrix: callers group rectangles by it
            self._zparts = {"spec": spec, "pieces": {}, "kept": 0}
        cache = self._zparts["pieces"]
        if sig not in cache:
            whole = []
            for j in free:
                m = np.zeros(self.n_levels[j], bool)
                m[slice(None) if rect[j] is None else rect[j]] = True
                whole.append(m)
            pieces = [whole]
            for r in sig:
                pieces = [q for p in pieces
                          for q in _rect_difference(p, [self._zmasks[j][r] for j in free])]
                if len(pieces) > _DEFAULT_MAX_RECTANGLES:
                    raise InputError(
                        f"a pattern less the structural zeros splits into more than "
                        f"{_DEFAULT_MAX_RECTANGLES} rectangles; give fewer, broader rules")
            sets = [[np.flatnonzero(m) for m in q] for q in pieces]
            S, H = self.w.shape
            size = S * H * H * len(sets) * (2 if self._ks in free else 1)  # G1, G2
            full = None
            if self._zparts["kept"] + size <= GRAM_CACHE_ELEMENTS:
                full = [self._zero_part(free, b, slice(None)) for b in sets]
                self._zparts["kept"] += size
            cache[sig] = (sets, full)
        sets, full = cache[sig]
        if full is not None:
            return [tuple(x[sl] for x in part) for part in full]
        return [self._zero_part(free, b, sl) for b in sets]

    def _zero_part(self, free, sets, sl) -> tuple[np.ndarray, ...]:
        if self._ks in free:  # key_rate, its key free: (c0, c1, G1, G2), as _rate_parts
            return self._rate_parts(free, sets, sl)
        w = self.w[sl]
        c = np.ones_like(w)
        G = np.ones(w.shape + (w.shape[1],))
        for j, b in zip(free, sets, strict=True):
            p = self.phi[j][sl][:, :, b]
            c *= p.sum(axis=2)
            G *= np.einsum("shl,skl->shk", p, p, optimize=True)
        return c, G

    # ---- key_rate's key s free in a rectangle (class Notes): its levels tilt c and G

    def _tilted(self, lv, sl) -> tuple[np.ndarray, np.ndarray]:
        """Key s's profile on the levels lv (draws, H, |lv|), and it times e_l."""
        p = self.phi[self._ks][sl][:, :, lv]
        return p, p * self._ke[sl][:, lv][:, None, :]

    def _rate_parts(self, free, sets, sl) -> tuple[np.ndarray, ...]:
        r"""A piece's (c0, c1, G1, G2): level sets ``sets`` on ``free``, key s among them.

        c0 and c1 sum :math:`\phi_{hsl}` and :math:`e_l\phi_{hsl}` over key s's set, G1
        and G2 tilt the Gram matrix of the other keys by :math:`e_l` and :math:`e_l^2`.
        """
        w = self.w[sl]
        c = np.ones_like(w)
        G = np.ones(w.shape + (w.shape[1],))
        lv = None
        for j, b in zip(free, sets, strict=True):
            if j == self._ks:
                lv = b
                continue
            p = self.phi[j][sl][:, :, b]
            c *= p.sum(axis=2)
            G *= np.einsum("shl,skl->shk", p, p, optimize=True)
        p, pe = self._tilted(lv, sl)
        return (c * p.sum(axis=2), c * pe.sum(axis=2),
                G * np.einsum("shl,skl->shk", pe, p, optimize=True),
                G * np.einsum("shl,skl->shk", pe, pe, optimize=True))

    def _rate_c(self, rect, sl) -> np.ndarray:
        r"""c1 (draws, H): the other free keys' c times :math:`\sum_{l\in A_s}e_l\phi_{hsl}`."""
        s = self._ks
        c = np.ones_like(self.w[sl])
        for j in self._free(rect):
            if j != s and rect[j] is not None:  # a blank key's profile sums to 1 (_weights)
                c *= self.phi[j][sl][:, :, rect[j]].sum(axis=2)
        lv = np.arange(self.n_levels[s]) if rect[s] is None else rect[s]
        return c * self._tilted(lv, sl)[1].sum(axis=2)

    def _rate_grams(self, rect, sl) -> tuple[np.ndarray, ...]:
        """G1, G2 (draws, H, H) of the rectangle, key s free in it; kept as :meth:`gram`."""
        free = self._free(rect)
        spec = ("key_rate",) + tuple((j, None if rect[j] is None else tuple(rect[j].tolist()))
                                     for j in free)
        S, H = self.w.shape
        if 2 * S * H * H <= GRAM_CACHE_ELEMENTS:  # the pair
            if spec not in self._gram:
                self._gram.clear()  # one set at a time: callers group rectangles by it
                self._gram[spec] = self._rate_grams_of(free, rect, slice(None))
            return tuple(G[sl] for G in self._gram[spec])
        return self._rate_grams_of(free, rect, sl)

    def _rate_grams_of(self, free, rect, sl) -> tuple[np.ndarray, np.ndarray]:
        s = self._ks
        G = self._gram_of([j for j in free if j != s], rect, sl)
        p, pe = self._tilted(np.arange(self.n_levels[s]) if rect[s] is None else rect[s], sl)
        return (G * np.einsum("shl,skl->shk", pe, p, optimize=True),
                G * np.einsum("shl,skl->shk", pe, pe, optimize=True))

    def rectangle(self, rect) -> list[np.ndarray | None]:
        """Normalise a rectangle: per key an array of levels, or None for every level.

        ``rect`` has one entry per key: a level (int >= 0), -1 or None (every level),
        or a sequence of levels.
        """
        if len(rect) != len(self.phi):
            raise InputError(f"a rectangle needs one entry per key ({len(self.phi)}); got "
                             f"{len(rect)}")
        out: list[np.ndarray | None] = []
        for j, a in enumerate(rect):
            if a is None or (np.ndim(a) == 0 and int(a) < 0):
                out.append(None)
                continue
            lv = np.unique(np.asarray(a, dtype=np.int64).reshape(-1))
            if lv.size == 0 or lv[0] < 0 or lv[-1] >= self.n_levels[j]:
                raise InputError(f"levels of key {j} must lie in 0 .. {self.n_levels[j] - 1}; "
                                 f"got {np.asarray(a).tolist()}")
            out.append(None if lv.size == self.n_levels[j] else lv)
        return out

    @staticmethod
    def _free(rect) -> list[int]:
        return [j for j, a in enumerate(rect) if a is None or a.size > 1]

    def _weights(self, rect, sl) -> tuple[np.ndarray, np.ndarray]:
        """(a, c): a_h = w_h prod over fixed keys, c_h = prod over free keys of phi(A_j)."""
        a = self.w[sl].copy()
        c = np.ones_like(a)
        for j, lv in enumerate(rect):
            if lv is None:
                continue
            if lv.size == 1:
                a *= self.phi[j][sl, :, lv[0]]
            else:
                c *= self.phi[j][sl][:, :, lv].sum(axis=2)
        return a, c

    def gram(self, rect, sl=slice(None)) -> np.ndarray:
        """G (draws, H, H) of the rectangle's free keys (ones when none is free).

        The plain profiles' Gram matrix also with ``key_rate``: where its key is free the
        sums take the tilted pair instead (class Notes).
        """
        free = self._free(rect)
        spec = tuple((j, None if rect[j] is None else tuple(rect[j].tolist())) for j in free)
        S, H = self.w.shape
        if S * H * H <= GRAM_CACHE_ELEMENTS:
            if spec not in self._gram:
                self._gram.clear()  # one set at a time: callers group rectangles by it
                self._gram[spec] = self._gram_of(free, rect, slice(None))
            return self._gram[spec][sl]
        return self._gram_of(free, rect, sl)

    def _gram_of(self, free, rect, sl) -> np.ndarray:
        S, H = self.w[sl].shape
        G = np.ones((S, H, H))
        for j in free:
            p = self.phi[j][sl] if rect[j] is None else self.phi[j][sl][:, :, rect[j]]
            G *= np.einsum("shl,skl->shk", p, p, optimize=True)
        return G

    def sums(self, rect, sl=slice(None)) -> dict[str, np.ndarray]:
        r"""Per-draw sums over the rectangle's cells (class docstring).

        Returns ``pi`` :math:`\pi_p`, ``lam`` :math:`\lambda_p`, ``lam_y``
        :math:`\sum_c\lambda_c y_c` and ``lam2`` :math:`\sum_c\lambda_c^2`, each of
        shape (draws,); ``rect`` normalised (:meth:`rectangle`), ``sl`` a slice (or index
        array) of the draws. With structural zeros: over the cells outside S, truncated
        (class Notes), as :meth:`sums_many` of the one rectangle; so too with
        ``key_rate``.
        """
        if self.structural_zeros is not None or self._ks is not None:
            fixed = np.array([[0 if lv is None or lv.size > 1 else int(lv[0])
                               for lv in rect]], dtype=np.int64)
            return {k: v[0] for k, v in self.sums_many(rect, fixed, sl).items()}
        a, c = self._weights(rect, sl)
        aE = a * self.E[sl]
        n = self.n
        out = {"pi": (a * c).sum(axis=1), "lam": n * (aE * c).sum(axis=1)}
        if self._free(rect):
            G = self.gram(rect, sl)
            Ga = np.einsum("shk,sk->sh", G, a)
            out["lam_y"] = n * n * np.einsum("sh,sh->s", aE, Ga)
            out["lam2"] = n * n * np.einsum("sh,sh->s", aE, np.einsum("shk,sk->sh", G, aE))
        else:  # one cell
            out["lam_y"] = out["lam"] * n * out["pi"]
            out["lam2"] = out["lam"] ** 2
        return out

    def cells(self, rect, codes, sl=slice(None)) -> tuple[np.ndarray, np.ndarray]:
        r""":math:`\pi_c` and :math:`\lambda_c` (draws, K) of full cells in the rectangle.

        ``codes`` (K, J) must agree with the rectangle on its fixed keys. With structural
        zeros: 0 for a cell in S, the others truncated (class Notes). With ``key_rate``
        each cell's :math:`\lambda_c` carries the factor of its level of key s.
        """
        codes = np.asarray(codes, dtype=np.int64).reshape(-1, len(self.phi))
        a, _ = self._weights(rect, sl)
        prod = np.ones(a.shape + (codes.shape[0],))
        for j in self._free(rect):
            prod *= self.phi[j][sl][:, :, codes[:, j]]
        pi = np.einsum("sh,shk->sk", a, prod)
        lam = self.n * np.einsum("sh,shk->sk", a * self.E[sl], prod)
        if self._ks is not None:
            lam = lam * self._ke[sl][:, codes[:, self._ks]]
        if self.structural_zeros is not None:
            pi, lam = self._truncate_cells(pi, lam, self.in_zeros(codes), sl)
        return pi, lam

    def top_cells(self, rect, T: int, sl=slice(None)) -> np.ndarray:
        r"""About the T most probable cells of the rectangle, as codes (K <= T, J).

        Each free key's levels are ranked by the rectangle's conditional mixture,
        :math:`\sum_h q_h\phi_{hjl}` with :math:`q_h \propto a_h c_h`, averaged over the
        draws ``sl``; the cells are the product of each free key's top
        :math:`\lfloor T^{1/|\mathrm{free}|}\rfloor` levels (at least one). A rectangle
        without free keys is its one cell. With structural zeros the cells of the product
        in S are left out (fewer than the product, in its order; no other takes their
        place), also a rectangle's one cell. With ``key_rate`` and its key s free, key
        s's levels are ranked by :math:`e_l` times that marginal (class Notes).
        """
        free = self._free(rect)
        base = np.array([0 if lv is None else int(lv[0]) for lv in rect], dtype=np.int64)
        if not free or T < 1:
            out = base[None, :] if not free else np.empty((0, len(rect)), np.int64)
            return out[~self.in_zeros(out)]
        a, c = self._weights(rect, sl)
        q = a * c
        q /= np.maximum(q.sum(axis=1, keepdims=True), np.finfo(float).tiny)
        m = max(1, int(np.floor(T ** (1.0 / len(free)) + 1e-9)))
        tops = []
        for j in free:
            lv = np.arange(self.n_levels[j]) if rect[j] is None else rect[j]
            if j == self._ks:  # by the excess: e_l times the marginal, per draw
                marg = np.einsum("sh,shl,sl->l", q, self.phi[j][sl][:, :, lv],
                                 self._ke[sl][:, lv])
            else:
                marg = np.einsum("sh,shl->l", q, self.phi[j][sl][:, :, lv])
            # stable: ties keep the level order, so the choice does not depend on chunks
            tops.append(lv[np.argsort(-marg, kind="stable")[:m]])
        grid = np.array(list(itertools.product(*tops)), dtype=np.int64)
        out = np.tile(base, (grid.shape[0], 1))
        out[:, free] = grid
        return out if self.structural_zeros is None else out[~self.in_zeros(out)]

    # ---- many rectangles with the same free keys at once (one Gram matrix)
    #
    # ``rect`` gives the free keys' level sets (normalised, :meth:`rectangle`); its keys
    # with one level are the fixed keys, whose levels ``fixed`` (P, J) gives per rectangle
    # (its entries on the free keys are ignored). Row p is then the rectangle ``rect`` with
    # ``fixed[p]`` on the fixed keys, and each method equals its one-rectangle sibling on
    # it to rounding (same products in the same order; tests/test_released_batch.py).

    def _fixed_levels(self, rect, fixed) -> np.ndarray:
        fixed = np.asarray(fixed, dtype=np.int64)
        if fixed.ndim != 2 or fixed.shape[1] != len(self.phi):
            raise InputError(f"fixed must be a (rectangles, keys) array with {len(self.phi)} "
                             f"keys; got shape {fixed.shape}")
        for j, lv in enumerate(rect):
            if lv is not None and lv.size == 1 and fixed.shape[0] and (
                    fixed[:, j].min() < 0 or fixed[:, j].max() >= self.n_levels[j]):
                raise InputError(f"fixed levels of key {j} must lie in 0 .. "
                                 f"{self.n_levels[j] - 1}")
        return fixed

    def weights_many(self, rect, fixed, sl=slice(None)) -> tuple[np.ndarray, np.ndarray]:
        """``(a, c)`` of P rectangles (:meth:`sums_many`'s arguments), to share.

        a (P, draws, H) per rectangle, c (draws, H) shared by all of them: what
        :meth:`sums_many` (``weights=(a, c)``) and :meth:`cells_many` (``weights=a``, its
        cells on the same fixed levels) would each compute, computed once by a caller that
        needs both on the same draws.
        """
        return self._weights_many(rect, self._fixed_levels(rect, fixed), sl)

    def _weights_many(self, rect, fixed, sl) -> tuple[np.ndarray, np.ndarray]:
        """(a, c): a (P, draws, H) per rectangle, c (draws, H) shared by all of them."""
        w = self.w[sl]
        a = np.repeat(w[None], fixed.shape[0], axis=0)
        c = np.ones_like(w)
        for j, lv in enumerate(rect):
            if lv is None:
                continue
            if lv.size == 1:
                a *= np.moveaxis(self.phi[j][sl][:, :, fixed[:, j]], 2, 0)
            else:
                c *= self.phi[j][sl][:, :, lv].sum(axis=2)
        return a, c

    def sums_many(self, rect, fixed, sl=slice(None), weights=None) -> dict[str, np.ndarray]:
        r""":meth:`sums` of P rectangles with the same free keys: arrays (P, draws).

        ``rect`` (normalised, :meth:`rectangle`) gives the free keys' level sets; its keys
        with one level are fixed, at the levels ``fixed`` (P, J) gives per rectangle (the
        entries on free keys are ignored). The Gram matrix is the rectangles' common one.
        With structural zeros: over the cells outside S, truncated (class Notes; per
        rectangle of S that meets the free keys' sets, its own Gram matrix and the
        rectangles whose fixed levels lie in it). With ``key_rate``: key s fixed, each
        rectangle's class rates times its level's factor; key s free, the tilted c and
        Gram matrices (class Notes), in every piece of :math:`p\setminus S` too.
        ``weights``: :meth:`weights_many` of the same rectangles and draws, ``(a, c)``,
        where the caller has them (and gives ``a`` to :meth:`cells_many` too); else
        computed here. Memory: P x draws x H (the caller chunks P).
        """
        fixed = self._fixed_levels(rect, fixed)
        a, c = self._weights_many(rect, fixed, sl) if weights is None else weights
        aE = a * self.E[sl]
        n = self.n
        free = self._free(rect)
        tilted = self._ks in free  # key_rate's key free: c1, G1, G2 carry its factors
        c1 = self._rate_c(rect, sl) if tilted else c
        if self._ks is not None and not tilted:  # key s fixed: its factor, per rectangle
            aE = aE * self._ke[sl][:, fixed[:, self._ks]].T[:, :, None]
        out = {"pi": (a * c).sum(axis=2), "lam": n * (aE * c1).sum(axis=2)}
        if free:
            # lam_y's and lam2's Gram matrices (G1, G2: weighted by e_l, e_l^2), else G
            G1, G2 = self._rate_grams(rect, sl) if tilted else (self.gram(rect, sl),) * 2
            Ga = np.einsum("shk,psk->psh", G1, a)
            out["lam_y"] = n * n * np.einsum("psh,psh->ps", aE, Ga)
            out["lam2"] = n * n * np.einsum("psh,psh->ps", aE,
                                            np.einsum("shk,psk->psh", G2, aE))
        elif self.structural_zeros is None:  # one cell each
            out["lam_y"] = out["lam"] * n * out["pi"]
            out["lam2"] = out["lam"] ** 2
        if self.structural_zeros is None:
            return out
        keep = 1.0 - self.mass[sl]
        if not free:  # one cell each: in S or not
            inside = self.in_zeros(fixed)[:, None]
            pi = np.where(inside, 0.0, out["pi"] / keep)
            lam = np.where(inside, 0.0, out["lam"] / keep)
            return {"pi": pi, "lam": lam, "lam_y": lam * n * pi, "lam2": lam ** 2}
        met, hit = self._zero_signatures(rect, fixed)
        sigs, inv = (np.unique(hit, axis=0, return_inverse=True) if met
                     else (np.zeros((0, 0), bool), np.zeros(0, np.int64)))
        inv = inv.reshape(-1)
        for u, row in enumerate(sigs):
            if not row.any():
                continue  # meets no rectangle of S: its untruncated sums
            idx = np.flatnonzero(inv == u)
            ai, aEi = a[idx], aE[idx]
            acc = {k: np.zeros((idx.size, ai.shape[1])) for k in out}
            # the cells outside S as disjoint rectangles: sums of non-negative terms, so
            # no cancellation where p lies mostly in S
            sig = tuple(r for r, h in zip(met, row, strict=True) if h)
            for part in self._pieces(rect, sig, sl):
                # (c, G), or (c0, c1, G1, G2) where key_rate's key is free (_rate_parts)
                c_q, c1_q, G_q, G2_q = (part if len(part) == 4
                                        else (part[0], part[0], part[1], part[1]))
                acc["pi"] += (ai * c_q).sum(axis=2)
                acc["lam"] += n * (aEi * c1_q).sum(axis=2)
                acc["lam_y"] += n * n * np.einsum(
                    "psh,psh->ps", aEi, np.einsum("shk,psk->psh", G_q, ai))
                acc["lam2"] += n * n * np.einsum(
                    "psh,psh->ps", aEi, np.einsum("shk,psk->psh", G2_q, aEi))
            for k in out:
                out[k][idx] = acc[k]
        for k in out:  # the truncated mixture's scale
            out[k] = out[k] / (keep if k in ("pi", "lam") else keep * keep)
        return out

    #: :meth:`cells_many` sums over the classes once per distinct cell of the call (on the
    #: free keys) where they number at most this many times the cells per rectangle
    _TABLE_RATIO = 3

    def cells_many(self, rect, codes, sl=slice(None), weights=None
                   ) -> tuple[np.ndarray, np.ndarray]:
        r""":meth:`cells` of P rectangles with the same free keys: (P, draws, K) each.

        ``codes`` (P, K, J): rectangle p's K full cells, which give its fixed levels too
        (``codes[p, 0]`` on the fixed keys; every cell must agree with it there). With
        structural zeros: 0 for a cell in S, the others truncated; with ``key_rate``
        each cell's lam times its level's factor. ``weights``: the rectangles' ``a``
        (P, draws, H), :meth:`weights_many` on the same draws, where the caller has it
        (for :meth:`sums_many` too); else computed here.

        Memory: P x draws x H x K (the caller chunks P), the listing of every
        rectangle's cells; or, where the call's rectangles list at most
        :attr:`_TABLE_RATIO` times K distinct cells U on the free keys (a batch of
        patterns with one free key has them among its levels), P x draws x U and draws x
        H x U: :math:`\sum_h a_h\prod_j\phi_{hj}(c_j)` is then summed once per distinct
        cell and picked out per rectangle (:meth:`_cells_by_table`), the same products
        and sums over the classes in the same order as the listing, to the bit
        (tests/test_released_speed.py), at a fraction of the cost.
        """
        codes = np.asarray(codes, dtype=np.int64)
        if codes.ndim != 3 or codes.shape[2] != len(self.phi):
            raise InputError(f"codes must be a (rectangles, cells, keys) array with "
                             f"{len(self.phi)} keys; got shape {codes.shape}")
        P, K, _ = codes.shape
        if K == 0:
            D = self.w[sl].shape[0]
            return np.zeros((P, D, 0)), np.zeros((P, D, 0))
        if weights is None:
            a = self._weights_many(rect, self._fixed_levels(rect, codes[:, 0]), sl)[0]
        else:  # contiguous, as computed here: the einsums' order over H depends on it
            a = np.ascontiguousarray(weights)
        free = self._free(rect)
        distinct = self._distinct_cells(codes, free) if K > 1 else None
        if distinct is not None:
            # few distinct cells on the free keys: each one's profile product (draws, H, U),
            # its sums over H for every rectangle, then each rectangle's cells picked out
            pi, lam = self._cells_by_table(a, free, *distinct, sl)
        else:
            # (P, draws, H, K) contiguous: einsum then sums over H as cells() does, to the bit
            prod = None
            for j in free:
                # the cells' profile values of key j, (draws, H, P, K) moved to (P, draws, H, K)
                x = np.moveaxis(self.phi[j][sl][:, :, codes[:, :, j]], 2, 0)
                if prod is None:  # the first key's values: 1 x them, without a pass of ones
                    prod = np.ascontiguousarray(x)
                else:
                    np.multiply(prod, x, out=prod)
            if prod is None:
                prod = np.ones(a.shape + (K,))
            pi = np.einsum("psh,pshk->psk", a, prod)
            lam = self.n * np.einsum("psh,pshk->psk", a * self.E[sl], prod)
        if self._ks is not None:  # (draws, P, K) of each cell's level, moved to (P, draws, K)
            lam = lam * np.moveaxis(self._ke[sl][:, codes[:, :, self._ks]], 1, 0)
        if self.structural_zeros is not None:
            pi, lam = self._truncate_cells(pi, lam, self.in_zeros(codes), sl)
        return pi, lam

    def _distinct_cells(self, codes, free):
        """The distinct cells of ``codes`` (P, K, J) on the keys ``free``, or None.

        ``(uniq (U, free), inv (P, K))`` where U is at least 2 and at most
        :attr:`_TABLE_RATIO` times K (else None: the listing is as cheap).
        """
        P, K, _ = codes.shape
        if not free or P * K < 2:
            return None
        radix = [self.n_levels[j] for j in free]
        if math.prod(radix) >= 2 ** 62:  # no one int64 code per cell
            return None
        code = np.zeros((P, K), np.int64)
        for j, L in zip(free, radix, strict=True):
            code = code * L + codes[:, :, j]
        ucode, inv = np.unique(code, return_inverse=True)
        if not 2 <= ucode.size <= self._TABLE_RATIO * K:
            return None
        uniq = np.empty((ucode.size, len(free)), np.int64)
        for i in range(len(free) - 1, -1, -1):  # the mixed-radix digits, last key first
            ucode, uniq[:, i] = np.divmod(ucode, radix[i])
        return uniq, inv.reshape(P, K)

    def _cells_by_table(self, a, free, uniq, inv, sl) -> tuple[np.ndarray, np.ndarray]:
        r"""The pi and lam (P, draws, K) of :meth:`cells_many` from its distinct cells.

        ``uniq`` (U, free): the distinct cells on the free keys ``free``, ``inv`` (P, K)
        each listed cell's row of it. The profile product of each distinct cell is the
        listing's (first key's values times the next key's, ...), and the einsum over the
        classes of (P, draws, H) by (draws, H, U) sums it in the listing's order (its
        classes in turn for each cell; checked to the bit against the listing by
        tests/test_released_speed.py).
        """
        table = None
        for i, j in enumerate(free):
            x = self.phi[j][sl][:, :, uniq[:, i]]  # (draws, H, U)
            if table is None:  # contiguous: the einsum's order over H depends on it
                table = np.ascontiguousarray(x)
            else:
                np.multiply(table, x, out=table)
        D = a.shape[1]
        pick = np.broadcast_to(inv[:, None, :], (inv.shape[0], D, inv.shape[1]))
        pi = np.take_along_axis(np.einsum("psh,shu->psu", a, table), pick, axis=2)
        lam = np.take_along_axis(np.einsum("psh,shu->psu", a * self.E[sl], table), pick,
                                 axis=2)
        return pi, self.n * lam

    def top_cells_many(self, rect, fixed, T: int, sl=slice(None)) -> np.ndarray:
        r""":meth:`top_cells` of P rectangles with the same free keys: codes (P, K, J).

        K is the same for every rectangle (the free keys' level sets are common); the
        ranking is each rectangle's own (its conditional mixture, :meth:`top_cells`).
        With structural zeros the cells in S are listed all the same (one K for all);
        leave them out by :meth:`in_zeros`, which gives :meth:`top_cells`' cells.
        Memory: P x draws x H plus P x the free keys' levels.
        """
        fixed = self._fixed_levels(rect, fixed)
        P, J = fixed.shape
        free = self._free(rect)
        base = fixed.copy()
        for j in free:
            base[:, j] = 0
        if not free:
            return base[:, None, :]
        if T < 1:
            return np.empty((P, 0, J), np.int64)
        a, c = self._weights_many(rect, fixed, sl)
        q = a * c[None]
        q /= np.maximum(q.sum(axis=2, keepdims=True), np.finfo(float).tiny)
        m = max(1, int(np.floor(T ** (1.0 / len(free)) + 1e-9)))
        tops = []
        for j in free:
            lv = np.arange(self.n_levels[j]) if rect[j] is None else rect[j]
            if j == self._ks:  # by the excess, as top_cells
                marg = np.einsum("psh,shl,sl->pl", q, self.phi[j][sl][:, :, lv],
                                 self._ke[sl][:, lv])
            else:
                marg = np.einsum("psh,shl->pl", q, self.phi[j][sl][:, :, lv])
            # stable: ties keep the level order, as in top_cells
            tops.append(lv[np.argsort(-marg, axis=1, kind="stable")[:, :m]])
        pos = np.array(list(itertools.product(*[range(t.shape[1]) for t in tops])),
                       dtype=np.int64)  # (K, free): itertools.product's order, as top_cells
        out = np.repeat(base[:, None, :], pos.shape[0], axis=1)
        for i, j in enumerate(free):
            out[:, :, j] = tops[i][:, pos[:, i]]
        return out


def pattern_sums(w, phi, E, n: float, rectangles, *,
                 structural_zeros=None, key_rate=None) -> dict[str, np.ndarray]:
    r""":meth:`PatternSums.sums` of several rectangles: arrays (P, draws).

    Parameters
    ----------
    w, phi, E, n, structural_zeros, key_rate
        As :class:`PatternSums`.
    rectangles : sequence
        Rectangles (one entry per key: a level, -1/None for every level, or a sequence of
        levels); rectangles with the same free keys should follow one another (the Gram
        matrix is kept for one set at a time).

    Returns
    -------
    dict
        ``pi``, ``lam``, ``lam_y``, ``lam2``, each (P, draws).
    """
    ps = PatternSums(w, phi, E, n, structural_zeros=structural_zeros, key_rate=key_rate)
    rows = [ps.sums(ps.rectangle(r)) for r in rectangles]
    return {k: np.array([r[k] for r in rows]) for k in ("pi", "lam", "lam_y", "lam2")}


def pattern_top_cells(w, phi, rectangle, T: int, *, structural_zeros=None,
                      key_rate=None) -> np.ndarray:
    """:meth:`PatternSums.top_cells` of one rectangle (codes, shape (K <= T, J)).

    ``structural_zeros`` as :class:`PatternSums` (its cells in S left out); ``key_rate``
    too (key s's levels ranked by their factor times the marginal).
    """
    w = np.asarray(w, dtype=float)
    ps = PatternSums(w, phi, np.zeros(w.shape), 1.0, structural_zeros=structural_zeros,
                     key_rate=key_rate)
    return ps.top_cells(ps.rectangle(rectangle), T)


def logsumexp(x, axis=-1, keepdims=False):
    """log(sum(exp(x))) along ``axis``, stable (max shift); -inf rows stay -inf.

    Plain NumPy: ``scipy.special.logsumexp`` carries array-API overhead that
    dominates a Gibbs iteration on small tables.
    """
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _log_cell_terms(codes: np.ndarray, log_phi: Sequence[np.ndarray]) -> np.ndarray:
    """:math:`\\sum_j \\log\\phi_{h j x_{kj}}`, shape (n_cells, H); one gather per key.

    Each key's (L_j, H) table is made contiguous before the gather (rows of a
    transposed view are strided, which made this the sweep's costliest step); the
    sum starts from the first key's terms and adds the others in key order, so the
    result is the same, bit for bit, as adding them to zeros.
    """
    out = np.ascontiguousarray(log_phi[0].T)[codes[:, 0]]
    for j in range(1, len(log_phi)):
        out += np.ascontiguousarray(log_phi[j].T)[codes[:, j]]
    return out


def _normalise_rows(lp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`logsumexp` of each row of ``lp`` and the row's probabilities ``exp(lp - lse)``.

    One exponential per entry instead of two (the probabilities are the shifted
    exponentials over their sum); ``lp`` is overwritten.
    """
    m = lp.max(axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    lp -= m
    np.exp(lp, out=lp)
    s = np.sum(lp, axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        lse = (np.log(s) + m)[:, 0]
    lp /= s
    return lse, lp


def latent_class_loglik(codes, counts, w, phi, structural_zeros=None) -> float:
    r"""Log-likelihood :math:`\sum_k f_k \log\pi_k` of the (truncated) latent-class model.

    Manrique-Vallier & Reiter (2014), eq. 2 (eq. 1 without structural zeros):
    :math:`\pi_k = \sum_h w_h \prod_j \phi_{hjx_{kj}} / (1 - \pi^*(S))`. Evaluated on
    distinct observed cells weighted by their counts (the multinomial kernel;
    the Poisson likelihood differs by a term free of the parameters).

    Parameters
    ----------
    codes : int array (n_cells, J)
    counts : array (n_cells,)
    w : array (H,)
    phi : sequence of J arrays (H, L_j), rows on the simplex
    structural_zeros : StructuralZeros, optional
    """
    codes = np.asarray(codes)
    counts = np.asarray(counts, dtype=float)
    with np.errstate(divide="ignore"):
        log_phi = [np.log(np.asarray(p, dtype=float)) for p in phi]
        lw = np.log(np.asarray(w, dtype=float))
    ll = float(counts @ logsumexp(lw + _log_cell_terms(codes, log_phi), axis=1))
    if structural_zeros is not None and structural_zeros.n_rectangles:
        mass = float(np.asarray(w) @ structural_zeros.class_mass(phi))
        ll -= counts.sum() * np.log1p(-mass)
    return ll


# --------------------------------------------------------------------------------------
# structural zeros
# --------------------------------------------------------------------------------------


def _rect_difference(a: list[np.ndarray], b: list[np.ndarray]) -> list[list[np.ndarray]]:
    """Disjoint rectangles whose union is a \\ b (each rectangle: one mask per key)."""
    inter = [x & y for x, y in zip(a, b, strict=True)]
    if not all(m.any() for m in inter):
        return [a]
    out = []
    cur = list(a)
    for j in range(len(a)):
        rest = a[j] & ~b[j]
        if rest.any():
            piece = list(cur)
            piece[j] = rest
            out.append(piece)
            cur = list(cur)
            cur[j] = inter[j]
    return out


class StructuralZeros:
    r"""A set S of impossible key combinations, as disjoint rectangles.

    Each rule is a mapping ``{key: levels}``: the rule forbids every cell whose
    level on each named key is among the given levels (keys not named are
    unrestricted). ``levels`` may also be ``{"not": [...]}`` for "any level but
    these". Example (Scotland census teaching file, age band 1 = under 16, ``X`` =
    not applicable)::

        [{"age": ["1"], "Occupation": {"not": ["X"]}},
         {"age": ["1"], "Marital_Status": {"not": ["1"]}}]

    The union of the rules is split into disjoint rectangles (rectangle
    differences, in order), so that the untruncated mass of S under class h is
    :math:`\sum_r \prod_j \phi_{hj}(A_{rj})` (Manrique-Vallier & Reiter 2014,
    section 2.2, who write S as disjoint margin conditions).

    Parameters
    ----------
    rules : iterable of mappings
    keys : sequence of str
        Key names, in the model's order.
    levels : sequence of sequences
        The levels of each key, in code order (code = position).
    max_rectangles : int
        Guard against an exponential split; raise rather than slow every iteration.
    """

    def __init__(self, rules, keys: Sequence[str], levels: Sequence[Sequence[Any]],
                 max_rectangles: int = _DEFAULT_MAX_RECTANGLES):
        self.keys = list(keys)
        self.levels = [list(lv) for lv in levels]
        self.n_levels = np.array([len(lv) for lv in self.levels])
        self.rules = [dict(r) for r in (rules or [])]
        rects: list[list[np.ndarray]] = []
        for rule in self.rules:
            pieces = [self._rule_masks(rule)]
            if not all(m.any() for m in pieces[0]):
                continue
            for d in rects:
                pieces = [q for p in pieces for q in _rect_difference(p, d)]
                if not pieces:
                    break
            rects.extend(pieces)
            if len(rects) > max_rectangles:
                raise InputError(
                    f"the structural zeros split into more than {max_rectangles} disjoint "
                    "rectangles; give fewer, broader rules (e.g. one rule per 'not applicable' "
                    "key with all its levels) or raise max_rectangles"
                )
        self.rectangles = rects
        # masks[j]: (R, L_j) bool; restricted[j]: whether any rectangle restricts key j
        R = len(rects)
        self.masks = [
            np.array([r[j] for r in rects], dtype=bool).reshape(R, self.n_levels[j])
            for j in range(len(self.keys))
        ]
        self.restricted = [bool(R) and not m.all() for m in self.masks]

    @property
    def n_rectangles(self) -> int:
        """Number of disjoint rectangles S is split into."""
        return len(self.rectangles)

    def _rule_masks(self, rule: Mapping[str, Any]) -> list[np.ndarray]:
        unknown = sorted(set(rule) - set(self.keys))
        if unknown:
            raise InputError(
                f"structural-zero rule {rule!r} names unknown key(s) {unknown}; "
                f"the keys are {self.keys}"
            )
        masks = []
        for j, key in enumerate(self.keys):
            m = np.ones(self.n_levels[j], dtype=bool)
            if key in rule:
                spec = rule[key]
                negate = isinstance(spec, Mapping)
                if negate:
                    if set(spec) != {"not"}:
                        raise InputError(
                            f"structural-zero rule for key {key!r}: use a list of levels or "
                            f"{{'not': [levels]}}; got {spec!r}"
                        )
                    spec = spec["not"]
                if isinstance(spec, str) or not isinstance(spec, Iterable):
                    spec = [spec]
                lookup = {str(v): i for i, v in enumerate(self.levels[j])}
                bad = [v for v in spec if str(v) not in lookup]
                if bad:
                    raise InputError(
                        f"structural-zero rule for key {key!r} names level(s) {bad} that the "
                        f"key does not have; its levels are {self.levels[j][:30]}"
                    )
                sel = np.zeros(self.n_levels[j], dtype=bool)
                sel[[lookup[str(v)] for v in spec]] = True
                m = ~sel if negate else sel
            masks.append(m)
        return masks

    def contains(self, codes) -> np.ndarray:
        """Whether each cell (rows of integer ``codes``, shape (n, J)) lies in S."""
        codes = np.asarray(codes)
        inside = np.zeros(codes.shape[0], dtype=bool)
        if not self.n_rectangles:
            return inside
        hit = np.ones((codes.shape[0], self.n_rectangles), dtype=bool)
        for j in range(len(self.keys)):
            if self.restricted[j]:
                hit &= self.masks[j].T[codes[:, j]]
        return hit.any(axis=1)

    def rectangle_mass(self, phi) -> np.ndarray:
        r""":math:`\prod_j \phi_{hj}(A_{rj})`, shape (H, R): class-h mass of rectangle r."""
        H = np.asarray(phi[0]).shape[0]
        out = np.ones((H, self.n_rectangles))
        for j in range(len(self.keys)):
            if self.restricted[j]:
                out *= np.asarray(phi[j]) @ self.masks[j].T
        return out

    def class_mass(self, phi) -> np.ndarray:
        r""":math:`\pi^*_h(S) = \sum_r \prod_j \phi_{hj}(A_{rj})`, shape (H,)."""
        if not self.n_rectangles:
            return np.zeros(np.asarray(phi[0]).shape[0])
        return self.rectangle_mass(phi).sum(axis=1)

    def to_list(self) -> list[dict[str, Any]]:
        """The rules as given (JSON-friendly, for provenance)."""
        return [{k: (dict(v) if isinstance(v, Mapping) else list(v) if not isinstance(v, str)
                     else [v]) for k, v in r.items()} for r in self.rules]


def detect_structural_zeros(
    frame: pd.DataFrame,
    keys: Sequence[str],
    *,
    min_expected: float = 10.0,
    min_support: int = 20,
    na_levels: Sequence[Any] | None = None,
) -> pd.DataFrame:
    r"""Candidate structural zeros from a sample, for the user to confirm.

    Three kinds of evidence, all pairwise (key a, key b):

    * ``"implication"``: every one of the :math:`n_u \ge` ``min_support`` records
      with level u of key a has the same level v of key b, although independence
      would put :math:`n_u (n - n_v)/n \ge` ``min_expected`` of them elsewhere; the
      typical "not applicable" pattern (Scotland: age under 16 implies occupation
      ``X``). Rule: ``{a: [u], b: {"not": [v]}}``.
    * ``"subset"``: level u of key a never meets a set Z of two or more levels of
      key b (while meeting at least two others) although independence expects
      :math:`\sum_{v \in Z} n_u n_v / n \ge` ``min_expected`` records in Z (the
      Poisson probability of that many chance zeros is
      :math:`e^{-\mathrm{expected}}`); e.g. Adult's never-married are never
      husband or wife. Rule ``{a: [u], b: [Z]}``, ``other_level`` is the list Z.
    * ``"pair"``: levels u and v never co-occur although independence expects
      :math:`n_u n_v / n \ge` ``min_expected`` records (Poisson probability of a
      chance zero at most :math:`e^{-10}` by default); pairs covered by an
      implication or a subset are not repeated. Rule ``{a: [u], b: [v]}``.

    ``na_levels`` (e.g. ``["X"]``) restricts the implications to those whose v is a
    "not applicable" code. A zero can still be a sampling zero of a strongly
    dependent pair: confirm each rule before passing it to the model, e.g.
    ``rules = list(cands.loc[cands.kind == "implication", "rule"])``.

    Returns
    -------
    pandas.DataFrame
        Columns ``kind, key, level, other_key, other_level, observed, expected,
        rule``, sorted by decreasing ``expected``.
    """
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise InputError(f"key(s) {missing} are not columns of the data; columns are "
                         f"{list(frame.columns)[:30]}")
    n = len(frame)
    rows = []
    na = None if na_levels is None else {str(v) for v in na_levels}
    # each key's sorted levels and codes once, and each ordered pair's table once, by one
    # bincount: pd.crosstab's table (levels as sorted strings), without its cost per pair
    coded = {k: np.unique(frame[k].astype(str).to_numpy(dtype=object), return_inverse=True)
             for k in keys}
    tables = {}
    for a, b in itertools.combinations(keys, 2):
        (la, ca), (lb, cb) = coded[a], coded[b]
        obs = np.bincount(ca.ravel() * len(lb) + cb.ravel(),
                          minlength=len(la) * len(lb)).reshape(len(la), len(lb))
        tables[a, b] = pd.DataFrame(obs, index=pd.Index(la, name=a), columns=pd.Index(lb, name=b))
        tables[b, a] = tables[a, b].T

    for a, b in itertools.permutations(keys, 2):
        tab = tables[a, b]
        nu = tab.sum(axis=1).to_numpy(float)
        nv = tab.sum(axis=0).to_numpy(float)
        obs = tab.to_numpy()
        # implication a=u => b=v
        nz = (obs > 0).sum(axis=1)
        for iu in np.flatnonzero((nz == 1) & (nu >= min_support)):
            iv = int(np.argmax(obs[iu]))
            v = tab.columns[iv]
            e = nu[iu] * (n - nv[iv]) / n
            if e >= min_expected and (na is None or v in na):
                rows.append(("implication", a, tab.index[iu], b, v, 0, e,
                             {a: [tab.index[iu]], b: {"not": [v]}}))
    implied = {(r[1], r[2], r[3]) for r in rows}
    # subset: level u of a never meets a set Z of >= 2 levels of b (not all but one:
    # that is an implication) although independence expects sum_Z n_u n_v / n of them
    for a, b in itertools.permutations(keys, 2):
        tab = tables[a, b]
        obs = tab.to_numpy()
        zero = obs == 0
        exp_z = (np.outer(obs.sum(axis=1), obs.sum(axis=0)) / n * zero).sum(axis=1)
        keep = ((zero.sum(axis=1) >= 2) & ((~zero).sum(axis=1) >= 2)
                & (obs.sum(axis=1) >= min_support) & (exp_z >= min_expected))
        for iu in np.flatnonzero(keep):
            u = tab.index[iu]
            if (a, u, b) in implied:
                continue
            zs = [str(v) for v in tab.columns[zero[iu]]]
            rows.append(("subset", a, u, b, zs, 0, float(exp_z[iu]), {a: [u], b: zs}))
            implied.add((a, u, b))
    for a, b in itertools.combinations(keys, 2):
        tab = tables[a, b]
        exp = np.outer(tab.sum(axis=1), tab.sum(axis=0)) / n
        for iu, iv in zip(*np.nonzero((tab.to_numpy() == 0) & (exp >= min_expected)),
                          strict=True):
            u, v = tab.index[iu], tab.columns[iv]
            if (a, u, b) in implied or (b, v, a) in implied:
                continue
            rows.append(("pair", a, u, b, v, 0, float(exp[iu, iv]), {a: [u], b: [v]}))
    out = pd.DataFrame(rows, columns=["kind", "key", "level", "other_key", "other_level",
                                      "observed", "expected", "rule"])
    return out.sort_values("expected", ascending=False, ignore_index=True)


# --------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------


def _log_dirichlet(rng, conc: np.ndarray) -> np.ndarray:
    """Log of Dirichlet draws along axis 0 of ``conc``, safe for small concentrations.

    Gamma(a) = Gamma(a + 1) U^{1/a} (Marsaglia & Tsang 2000) in log space, so a
    component with a tiny shape gives a very negative log rather than log 0.
    """
    lg = np.log(rng.standard_gamma(conc + 1.0)) + np.log(rng.random(conc.shape)) / conc
    return lg - logsumexp(lg, axis=0, keepdims=True)


#: Default prior of the class profiles (:meth:`LatentClassModel.phi_concentration`): keys of
#: at least 20 levels (age in years, country of birth) centred on their sample marginal with
#: a learnt mass M_j, the others 1/L_j per level. ``{"a": "inverse"}`` gives 1/L_j on every
#: key, the default before (benchmarks/README.md: the prior of the class profiles).
PHI_PRIOR_DEFAULT = {"dist": "Dirichlet", "a": "marginal", "mass": "learn", "min_levels": 20}

#: Values of the profile prior's mass M_j weighed when it is learnt
#: (``priors={"phi": {"a": "marginal", "mass": "learn"}}``): powers of sqrt(2) from 1/4 to
#: 8192, with equal prior mass (uniform in log M over the grid). A grid to 2^20 was
#: weighed and not adopted: it moves tau1 by less than 1.8 points on every file measured,
#: either way (benchmarks/README.md, "What moves slowly in the chains").
PHI_MASS_GRID = 2.0 ** np.arange(-2.0, 13.25, 0.5)

#: Mass at which a learnt M_j starts: EM forms its classes at it before learning M
#: (:meth:`LatentClassModel.fit_em`); ``init="margins"`` starts the Gibbs chains there.
PHI_MASS_START = 16.0

#: When :meth:`LatentClassModel.fit_em` learns a profile mass (``learn_mass``):
#: ``"converged"``, only once the classes have converged at :data:`PHI_MASS_START`
#: within ``max_iter`` sweeps (one budget for both phases), or ``"always"``, in a
#: phase of its own after at most ``max_iter`` sweeps. With ``"converged"`` a sample of
#: more than about 2,000 records (Adult at 5% and 10%: 300-400 sweeps to converge)
#: keeps the starting mass -- in the chains' start (which then learn M themselves) and
#: in the parts of the overdispersion's cross-validation, which take the whole sample's
#: EM masses (``part_mass="whole"``). Every result in benchmarks/README.md was measured so;
#: ``"always"``, the type-II estimate the cross-validation was meant to use, was measured
#: worse (benchmarks/README.md), so it is an option.
EM_LEARN_MASS = "converged"


def profile_mass_loglik(counts, base, grid=PHI_MASS_GRID) -> np.ndarray:
    r"""Log marginal likelihood of class-by-level counts under Dirichlet(M base) profiles.

    For the counts :math:`c_{lh}` of the levels l of one key among the records of
    each class h, with the profiles :math:`\phi_h \sim \mathrm{Dirichlet}(M\eta)`
    integrated out (the Dirichlet-multinomial or Polya distribution, Minka 2000,
    "Estimating a Dirichlet distribution", without the multinomial coefficient, which
    does not depend on M):

    .. math:: \log p(c \mid M) = \sum_h \Big[\log\Gamma(M) - \log\Gamma(M + c_{\cdot h})
              + \sum_l \big(\log\Gamma(M\eta_l + c_{lh}) - \log\Gamma(M\eta_l)\big)\Big].

    Empty classes contribute 0, so the sum may run over all H. Counts may be
    fractional (EM's expected counts).

    Parameters
    ----------
    counts : array (L, H)
    base : array (L,)
        The base measure :math:`\eta` (sums to 1).
    grid : array (G,)
        Values of M.

    Returns
    -------
    array (G,)
    """
    c = np.asarray(counts, dtype=float)
    g = np.asarray(grid, dtype=float)[:, None]
    tot = c.sum(axis=0)
    tot = tot[tot > 0]
    out = (gammaln(g) - gammaln(g + tot[None, :])).sum(axis=1)
    li, hi = np.nonzero(c)
    a = g * np.asarray(base, dtype=float)[li][None, :]
    return out + (gammaln(a + c[li, hi][None, :]) - gammaln(a)).sum(axis=1)


def _seed_to_stamp(random_seed) -> int:
    """The integer seed a run uses and stamps.

    ``random_seed`` itself, one drawn when None, one drawn from it when a Generator
    (the stamp then repeats the run without the Generator).

    Raises
    ------
    InputError
        When it is no seed NumPy takes (a bool, a negative or non-integer number).
    """
    if isinstance(random_seed, np.random.Generator):
        random_seed = int(random_seed.integers(2**63 - 1))
    random_seed = seed_or_drawn(random_seed)
    try:
        if isinstance(random_seed, bool | np.bool_):
            raise TypeError("a bool is not a seed")
        np.random.SeedSequence(random_seed)
    except (TypeError, ValueError) as exc:
        raise InputError(f"random_seed must be None, an integer >= 0 or a numpy Generator; "
                         f"got {random_seed!r} ({exc})") from None
    return random_seed


def _safe_names(keys) -> list[str]:
    """PyMC variable-name parts for the keys: word characters, distinct.

    Leading and trailing underscores go: PyMC takes a name ending in ``__`` for an
    internal transformed variable and leaves it out of the posterior (the weight
    class ``__weight_class__`` gave ``phi___weight_class__``, which broke
    ``fit(..., method="nuts")`` after sampling).
    """
    names: list[str] = []
    for j, k in enumerate(keys):
        name = re.sub(r"[^0-9A-Za-z_]", "_", str(k)).strip("_") or f"key{j}"
        names.append(name if name not in names else f"{name}_{j}")
    return names


class LatentClassModel(SuperpopulationModel):
    r"""Latent-class (Dirichlet-process mixture of products of multinomials) model.

    See the module docstring for the model, the structural-zero truncation and
    the risk formulas. Data are the distinct observed cells: integer codes
    ``(n_cells, J)`` and counts ``f_k``; :meth:`from_frame` builds them from records.

    Priors (configuration; override by name, unknown names are rejected):

    * ``alpha``: ``Gamma(alpha=0.25, beta=0.25)`` (Dunson & Xing 2009; Si & Reiter
      2013): a vague prior on the DP concentration, mean 1, that lets the data
      choose how many of the H classes are used.
    * ``phi``: ``Dirichlet`` profiles, by default (:data:`PHI_PRIOR_DEFAULT`) centred
      on the key's sample marginal with a learnt mass on keys of at least 20 levels
      and with concentration ``1/L_j`` per level on the others. ``a="inverse"``:
      ``1/L_j`` per level on every key (total mass 1 per key and class), the default
      until the synthetic census showed what it costs on a key with a long tail of
      rare levels (benchmarks/README.md); a number sets the same concentration on
      every level. A uniform ``a = 1`` adds L_j pseudo
      records per class and key, which for keys with many levels (age in single
      years) pulls a class's distribution towards uniform and inflates the
      probability of rare combinations. ``a="marginal"`` with ``mass=M`` centres
      the profiles on the sample's marginal distribution of each key instead:
      :math:`a_{jl} = M\,\eta_{jl}`, :math:`\eta_{jl} = (m_{jl} + 1/L_j)/(n + 1)`
      with :math:`m_{jl}` the sample count of level l (an empirical-Bayes base
      measure, :meth:`phi_concentration`); ``mass`` may also be one number per key,
      or ``"learn"``: each key's :math:`M_j` gets a prior uniform in
      :math:`\log M` over :data:`PHI_MASS_GRID` and is learnt with the classes (the
      Gibbs sampler draws it from the Dirichlet-multinomial of the class counts,
      :func:`profile_mass_loglik`; EM takes its mode once the classes have formed).
      A key whose levels do not depend on the class gets a large mass (its profiles
      are the marginal), one that tells the classes apart a small one.
      ``min_levels=L`` centres and learns only keys of at least L levels; the
      others keep ``1/L_j``, or with ``small_mass=M`` are centred on their marginal
      with that fixed mass (:meth:`phi_concentration`).
      Passing ``{"a": ...}`` without ``dist`` replaces the whole profile prior.

    Parameters
    ----------
    codes : int array (n_cells, J)
        Level codes of the distinct observed cells (0 .. L_j - 1).
    counts : array (n_cells,)
        Sample counts f_k >= 1.
    n_levels : sequence of int
        Number of levels L_j of each key (the cell space is their product).
    keys : sequence of str, optional
    levels : sequence of sequences, optional
        Labels of the levels of each key (for rules and output).
    n_classes : int
        Truncation level H of the stick-breaking prior, 2 to :data:`MAX_CLASSES`.
    structural_zeros : list of rules or StructuralZeros, optional
    priors : dict, optional
    class_weights : array_like, optional
        Mean sampling weight of each level of the last column of ``codes``, which is
        then a design variable (the records' weight class, :func:`weight_classes`),
        not a key: the risk refers to the key cells (the other columns), whose
        population counts are extrapolated class by class (module docstring,
        "Unequal weights"). :meth:`from_frame` and :meth:`from_microdata` build it
        from ``weights``.
    key_index : array_like of int, optional
        With ``class_weights``: the key cell (0 .. C-1) of each row; default the
        sorted distinct key rows.
    """

    name: ClassVar[str] = "latent-class"
    #: What :func:`sdcbayes.inference.fit` may use: "map" and "advi" compile the symbolic
    #: Hessian of a graph of every class x cell x key (19 s at 6 cells, 2 classes, 2 keys;
    #: unfinished after 5 minutes on the demo); :meth:`sample` is the supported route.
    supported_fit_methods: ClassVar[tuple[str, ...]] = ("nuts", "nutpie")
    default_priors: ClassVar[dict[str, PriorSpec]] = {
        "alpha": {"dist": "Gamma", "alpha": 0.25, "beta": 0.25},
        "phi": dict(PHI_PRIOR_DEFAULT),
    }

    def __init__(self, codes, counts, n_levels, *, keys=None, levels=None, n_classes: int = 30,
                 structural_zeros=None, priors: Mapping[str, PriorSpec] | None = None,
                 class_weights=None, key_index=None):
        # not a mapping: left to the base class, whose error names the fix
        phi = priors.get("phi") if isinstance(priors, Mapping) else None
        if isinstance(phi, Mapping) and "a" in phi and "dist" not in phi:
            # a new concentration replaces the profile prior whole: {"a": "inverse"} must not
            # inherit the default's learnt mass and level threshold
            priors = {**priors, "phi": {"dist": "Dirichlet", **phi}}
        super().__init__(priors)
        # n_classes first: a bad value is refused before the table is checked and coded
        if whole_number(n_classes) is None or n_classes < 2:
            raise InputError(
                f"n_classes (the truncation level H) must be a whole number >= 2; got "
                f"{n_classes!r}. One class is the independence model of the keys: fit it with "
                "sdcbayes.risk.loglinear.fit_loglinear(interactions='main')")
        if n_classes > MAX_CLASSES:
            # before any (cells x H) array is allocated (MAX_CLASSES: why this bound)
            raise InputError(
                f"n_classes (the truncation level H) must be at most {MAX_CLASSES}; got "
                f"{n_classes!r}. The Dirichlet process decides how many classes are used, "
                f"and {MAX_CLASSES} already matches the untruncated process for any plausible "
                "concentration, while each class costs memory and time on every cell: use the "
                "default 30, or twice it where the output warns that all classes are occupied")
        # the shared check of the cell table (distinct rows, whole finite counts >= 1,
        # one key name and one label list per column): a wrong table makes the fit
        # wrong, not fail (record-level rows would make every record a sample unique)
        codes, counts, n_levels, keys, levels = check_cell_table(
            codes, counts, n_levels, keys, levels, model="latent-class")
        self.n_levels = n_levels
        self.codes = codes
        self.counts = counts
        self.H = int(n_classes)
        self.keys = keys
        self.levels = levels
        self._check_priors()
        self._phi_conc: dict[int, np.ndarray] = {}  # phi_concentration, per key
        if structural_zeros is None or isinstance(structural_zeros, StructuralZeros):
            self.structural_zeros = structural_zeros
        else:
            self.structural_zeros = StructuralZeros(structural_zeros, self.keys, self.levels)
        if self.structural_zeros is not None:
            inside = self.structural_zeros.contains(self.codes)
            if inside.any():
                bad = self.codes[np.flatnonzero(inside)[:3]]
                raise InputError(
                    f"{int(inside.sum())} observed cells lie in the structural-zero set "
                    "(e.g. codes "
                    f"{bad.tolist()}); the rules must not forbid combinations the data contain"
                )
            if self.structural_zeros.n_rectangles == 0:
                self.structural_zeros = None
        self._set_key_cells(class_weights, key_index)
        self.record_clusters: tuple[np.ndarray, np.ndarray] | None = None

    def set_record_clusters(self, rows, clusters) -> None:
        """Declare the records' clusters (households of a household sample).

        :func:`overdispersion_cv` then cuts the sample into parts of whole clusters, as
        the sample itself was drawn: a sample unique's household mates are all in the
        sample, so they can never be its population twins, and parts that split
        households would read the twins among mates as clumping.

        Parameters
        ----------
        rows : array_like of int, shape (n,)
            The model row (cell, or (cell, weight class) pair) of each record; row k
            must occur ``counts[k]`` times.
        clusters : array_like, shape (n,)
            Cluster id of each record (any hashable values).
        """
        rows = np.asarray(rows).reshape(-1)
        clusters = np.asarray(clusters).reshape(-1)
        K = self.counts.size
        if (rows.shape != clusters.shape or not np.issubdtype(rows.dtype, np.integer)
                or rows.size == 0 or rows.min() < 0 or rows.max() >= K
                or not np.array_equal(np.bincount(rows, minlength=K), self.counts)):
            raise InputError(
                f"rows must give the model row (0 .. {K - 1}) of each of the {int(self.n)} "
                "records, each row as often as its count, and clusters one id per record")
        self.record_clusters = (rows.astype(np.intp),
                                pd.factorize(clusters)[0].astype(np.intp))

    def _set_key_cells(self, class_weights, key_index) -> None:
        """Set the key cells the risk refers to.

        They are the rows, or with a design variable (the last column,
        ``class_weights`` per level) the distinct rows of the other columns.
        """
        K, J = self.codes.shape
        if class_weights is None:
            if key_index is not None:
                raise InputError("key_index needs class_weights (a design variable)")
            self.class_weights = None
            self.n_keys = J
            self.key_index = np.arange(K)
            self.key_codes, self.key_counts = self.codes, self.counts
            return
        cw = np.asarray(class_weights, dtype=float).reshape(-1)
        if J < 2 or cw.shape != (self.n_levels[-1],) or not np.all(np.isfinite(cw)) \
                or np.any(cw <= 0):
            raise InputError(
                f"class_weights must hold one positive mean weight per level of the last "
                f"column (the design variable, {self.n_levels[-1]} levels); got {cw.shape}")
        if self.structural_zeros is not None and self.structural_zeros.restricted[-1]:
            raise InputError("structural-zero rules may not name the design variable "
                             f"{self.keys[-1]!r}")
        self.class_weights = cw
        self.n_keys = J - 1
        kc = self.codes[:, :-1]
        if key_index is None:
            _, key_index = np.unique(kc, axis=0, return_inverse=True)
        key_index = np.asarray(key_index).reshape(-1)
        if key_index.shape != (K,) or not np.issubdtype(key_index.dtype, np.integer) \
                or key_index.min() < 0:
            raise InputError(f"key_index must give a key cell >= 0 for each of the {K} rows")
        C = int(key_index.max()) + 1
        first = np.full(C, -1)
        first[key_index[::-1]] = np.arange(K)[::-1]
        if np.any(first < 0) or not np.array_equal(kc[first][key_index], kc):
            raise InputError("key_index must number the key cells 0 .. C-1, with rows of "
                             "one key cell agreeing on every key")
        self.key_index = key_index.astype(np.intp)
        self.key_codes = kc[first]
        self.key_counts = np.bincount(self.key_index, weights=self.counts, minlength=C)
        # sample count of each class: the weights' total is sum_g n_g w_g
        self._class_n = np.bincount(self.codes[:, -1], weights=self.counts,
                                    minlength=cw.size)

    def excess_rates(self, N: float) -> np.ndarray:
        r"""Unsampled-to-sampled ratio :math:`\bar w_g - 1` of each weight class.

        The weights are scaled to sum to N; one value, N/n - 1, without a design
        variable.
        """
        if self.class_weights is None:
            return np.array([float(N) / self.n - 1.0])
        scale = float(N) / float(self._class_n @ self.class_weights)
        # weights below 1 (accepted by Microdata on request) cannot shrink F below f
        return np.maximum(self.class_weights * scale - 1.0, 0.0)

    def key_cell_probabilities(self, w, phi, key_codes=None, *, by_class: bool = False):
        r""":math:`\pi_k = \sum_g \pi_{kg}` of key cells (default: the observed ones).

        Without a design variable the key cells are the cells and this is
        :meth:`cell_probabilities`. ``key_codes`` (T, n_keys); ``by_class=True``
        returns the (T, G) array of :math:`\pi_{kg}` instead.
        """
        kc = self.key_codes if key_codes is None else np.asarray(key_codes)
        if self.class_weights is None:
            pi = self.cell_probabilities(w, phi, kc)
            return pi[:, None] if by_class else pi
        G = self.n_levels[-1]
        rows = np.column_stack([np.repeat(kc, G, axis=0), np.tile(np.arange(G), kc.shape[0])])
        pi = self.cell_probabilities(w, phi, rows.astype(np.intp)).reshape(-1, G)
        return pi if by_class else pi.sum(axis=1)

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_frame(cls, frame: pd.DataFrame, keys: Sequence[str], *, levels=None, weights=None,
                   clusters=None, **kwargs):
        """Build the model from records: code the keys and count distinct cells.

        ``keys`` is a list of distinct column names; a single string is refused (write
        ``["age"]``), not split into its characters.

        ``levels`` (optional, a mapping key -> all levels of the key, e.g. from the
        codebook) makes the cell space include levels absent from the sample;
        by default the observed levels, sorted, are used. ``weights`` (a column
        name or one value per record): unequal sampling weights add the records'
        weight class as a design variable (:func:`weight_classes`; module
        docstring, "Unequal weights"); equal weights change nothing. ``clusters`` (a
        column name or one id per record): the records' households in a household
        sample, for the cross-validation (:meth:`set_record_clusters`).
        """
        keys = frame_keys(frame, keys)  # a list of distinct columns, none missing
        cols, lvls = [], []
        for k in keys:
            col = frame[k].astype(str)
            lv = sorted(col.unique()) if levels is None or k not in levels else \
                [str(v) for v in levels[k]]
            cat = pd.Categorical(col, categories=lv)
            if (cat.codes < 0).any():
                raise InputError(f"key {k!r} has values outside the given levels, e.g. "
                                 f"{col[cat.codes < 0].iloc[0]!r}; add them to levels[{k!r}]")
            cols.append(cat.codes.astype(np.int64))
            lvls.append(lv)
        classes = None
        if weights is not None:
            if isinstance(weights, str):
                if weights not in frame.columns:
                    raise InputError(f"weight column {weights!r} is not a column of the data")
                weights = frame[weights]
            w = np.asarray(weights, dtype=float).reshape(-1)
            if w.size != len(frame):
                raise InputError(f"weights must hold one value per record ({len(frame)}); "
                                 f"got {w.size}")
            classes = weight_classes(w)
        if classes is not None:
            index, cw, labels = classes
            cols.append(index)
            lvls.append(labels)
            keys = list(keys) + [WEIGHT_CLASS_KEY]
            kwargs["class_weights"] = cw
        rec = np.column_stack(cols)
        cells, rows, counts = np.unique(rec, axis=0, return_inverse=True, return_counts=True)
        model = cls(cells, counts, [len(v) for v in lvls], keys=list(keys), levels=lvls,
                    **kwargs)
        if clusters is not None:
            if isinstance(clusters, str):
                if clusters not in frame.columns:
                    raise InputError(f"cluster column {clusters!r} is not a column of the data")
                clusters = frame[clusters]
            model.set_record_clusters(rows.reshape(-1), np.asarray(clusters).reshape(-1))
        return model

    @classmethod
    def from_microdata(cls, md, *, structural_zeros=None, weights: bool = True,
                       **kwargs) -> LatentClassModel:
        """Build the model on the cell table of a :class:`sdcbayes.Microdata`.

        Row k of the model's cell table is cell k of ``md.cells`` (so a posterior
        of ``pi`` with ``store="all"`` maps to ``md.record_cell`` directly); the
        levels are ``md.levels`` (all declared levels of categorical keys), and the
        counts the exact record counts ``md.cells.f_exact``. Under
        ``missing="category"`` a missing key value is a level
        :data:`~sdcbayes.microdata.MISSING_LEVEL` (``"<missing>"``) of its own, last;
        wildcard cells (``missing="wildcard"``) are not points of the cell space and
        are rejected.

        Parameters
        ----------
        md : sdcbayes.Microdata
        structural_zeros : None, "auto" or list of rules
            ``"auto"``: the ``"implication"`` candidates of
            :func:`detect_structural_zeros` on the sample (unconfirmed; confirm
            them and pass the list for a real release).
        weights : bool, default True
            Use ``md``'s sampling weights, when it has unequal ones, as a design
            variable (:func:`weight_classes`; module docstring, "Unequal weights"):
            the model's rows are then (cell, weight class) pairs, and its key cells
            are still ``md``'s cells in order. False: one extrapolation N/n for all.
        **kwargs
            ``n_classes``, ``priors`` (see the class).
        """
        require_one_cell_per_record(
            md, "latent-class",
            instead="the closed form (sdcbayes.risk.assess.assess_closed_form) for sdcMicro's "
                    "wildcard matching")
        cells = md.cells
        table = cells.table
        cols, lvls = [], []
        for k in md.keys:
            lv = list(md.levels[k])
            codes = pd.Categorical(table[k], categories=md.levels[k]).codes.astype(np.int64)
            if (codes < 0).any():  # missing="category": missing is a level of its own
                codes = np.where(codes < 0, len(lv), codes)
                lv = lv + [MISSING_LEVEL]
            cols.append(codes)
            lvls.append(lv)
        sz = structural_zeros
        if isinstance(sz, str):
            if sz != "auto":
                raise InputError(
                    f"structural_zeros must be None, 'auto' or a list of rules; got {sz!r}")
            kept = ~np.asarray(md.dropped)
            frame = md.frame.loc[kept, list(md.keys)]
            # the level names the rules use: MISSING_LEVEL as above, str as StructuralZeros
            frame = frame.astype(object).where(frame.notna(), MISSING_LEVEL).astype(str)
            cands = detect_structural_zeros(frame, md.keys)
            sz = list(cands.loc[cands.kind == "implication", "rule"]) or None
        codes, counts = np.column_stack(cols), cells.f_exact
        classes = None
        if weights and getattr(md, "weights", None) is not None:
            classes = weight_classes(
                np.asarray(md.weights, dtype=float)[np.asarray(md.record_cell) >= 0])
        hh = getattr(md, "household_index", None)
        kept = np.asarray(md.record_cell) >= 0
        rc = np.asarray(md.record_cell)[kept]
        if classes is None:
            model = cls(codes, counts, [len(v) for v in lvls], keys=list(md.keys),
                        levels=lvls, structural_zeros=sz, **kwargs)
            rows = rc
        else:
            index, cw, labels = classes
            G = cw.size
            pair, rows, n_pair = np.unique(rc * G + index, return_inverse=True,
                                           return_counts=True)
            cell, g = pair // G, pair % G
            model = cls(np.column_stack([codes[cell], g]), n_pair,
                        [len(v) for v in lvls] + [G], keys=list(md.keys) + [WEIGHT_CLASS_KEY],
                        levels=lvls + [labels], structural_zeros=sz, class_weights=cw,
                        key_index=cell, **kwargs)
        if hh is not None:
            # a household sample: the cross-validation's parts keep households whole
            model.set_record_clusters(np.asarray(rows).reshape(-1), np.asarray(hh)[kept])
        return model

    def with_priors(self, priors: Mapping[str, PriorSpec]) -> LatentClassModel:
        """The same data, cells, structural zeros and clusters under other priors.

        ``priors`` replaces the named priors whole (e.g. ``{"phi": {...}}``); the
        others are kept. A shallow copy: the arrays are shared, not copied.
        """
        import copy

        other = copy.copy(self)
        other.priors = {**self.priors, **dict(priors)}
        other._check_priors()
        other._phi_conc = {}  # phi_concentration's cache depends on the prior
        return other

    def with_mass_span(self, high: float, kappa_high=None) -> LatentClassModel:
        r"""The same model with the learnt keys' profile mass spread towards ``high``.

        A cut: on every key whose mass the prior learns (:meth:`learns_mass`), each
        sweep of the Gibbs sampler draws :math:`M_j` from its conditional as usual and
        then moves it towards ``high`` by a :math:`u \sim U(0, 1)` of its own (one for
        all such keys), :math:`\log M_j \leftarrow (1 - u)\log M_j + u\log M`: the
        mass is spread uniformly in :math:`\log M` between the learnt one and
        ``high``, whatever the data say about the range (they cannot tell,
        :func:`profile_mass_span`). With ``kappa_high`` (``(grid, weights)``, the
        overdispersion's posterior at mass ``high``), each kept draw's kappa comes from
        it with probability u, else from the overdispersion passed to :meth:`sample`
        (the learnt prior's): the cross-validated kappa moves with the mass.

        Parameters
        ----------
        high : float
        kappa_high : tuple of arrays, optional
        """
        import copy

        keys = np.array([self.learns_mass(j) for j in range(len(self.keys))])
        if not float(high) > 0:
            raise InputError(f"a mass span needs a positive high mass; got {high!r}")
        if not keys.any():
            raise InputError("a mass span needs a key whose profile mass the prior learns")
        other = copy.copy(self)
        other._mass_span = {"keys": keys, "log_high": float(np.log(high)),
                            "kappa_high": (None if kappa_high is None
                                           else (np.asarray(kappa_high[0], dtype=float),
                                                 np.asarray(kappa_high[1], dtype=float)))}
        return other

    def _check_priors(self):
        a = self.priors["alpha"]
        if a.get("dist") != "Gamma" or set(a) - {"dist", "alpha", "beta"}:
            raise InputError("the latent-class Gibbs sampler needs alpha ~ "
                             f"Gamma(alpha=.., beta=..); got {a!r}")

        def positive(x):
            # finite too: an infinite concentration or mass makes the Dirichlet draws NaN
            return (isinstance(x, (int, float, np.integer, np.floating))
                    and not isinstance(x, bool | np.bool_) and bool(np.isfinite(x)) and x > 0)

        # both parameters, finite and positive, checked here and not by the sampler: a
        # missing beta failed only after the cross-validation had run, and alpha <= 0 made
        # the concentration's draws exactly 0 (Gamma(a + H - 1) with a + H - 1 <= 0)
        bad = [k for k in ("alpha", "beta") if not positive(a.get(k))]
        if bad:
            raise InputError(
                f"prior 'alpha' (the DP concentration) needs Gamma parameters alpha and beta, "
                f"both finite and > 0; {', '.join(bad)} is missing or not: got {a!r}. E.g. "
                "{'dist': 'Gamma', 'alpha': 0.25, 'beta': 0.25} (the default)")
        p = self.priors["phi"]
        a = p.get("a")
        # a number: int or float only, as phi_concentration reads it
        scalar = (isinstance(a, str) and a == "inverse") or (
            isinstance(a, (int, float)) and positive(a))
        mass = p.get("mass")

        # a mass per key (e.g. the whole sample's learnt masses, given to the parts of
        # overdispersion_cv) is a sequence of one positive number per key
        per_key = (isinstance(mass, (list, tuple, np.ndarray)) and len(mass) == len(self.keys)
                   and all(positive(x) for x in mass))
        marginal = a == "marginal" and (
            (isinstance(mass, str) and mass == "learn") or positive(mass) or per_key)
        min_levels = p.get("min_levels", 0)
        marginal = marginal and isinstance(min_levels, (int, np.integer)) and not isinstance(
            min_levels, bool) and min_levels >= 0
        marginal = marginal and ("small_mass" not in p or positive(p["small_mass"]))
        if p.get("dist") != "Dirichlet" or not (
                (scalar and set(p) == {"dist", "a"})
                or (marginal
                    and set(p) - {"min_levels", "small_mass"} == {"dist", "a", "mass"})):
            raise InputError("prior 'phi' must be {'dist': 'Dirichlet', 'a': <positive finite "
                             "number or 'inverse'>} or {'dist': 'Dirichlet', 'a': 'marginal', "
                             "'mass': <positive finite number, one per key, or 'learn'>[, "
                             "'min_levels': <int>][, 'small_mass': <positive finite number>]}}; "
                             f"got {p!r}")

    def phi_concentration(self, j: int) -> np.ndarray:
        r"""Dirichlet concentration of each level of key j (array of length L_j).

        ``a="inverse"``: :math:`1/L_j` on every level (total mass 1); a number: that
        value on every level; ``a="marginal"``: :math:`M\eta_{jl}` with
        :math:`\eta_{jl} = (m_{jl} + 1/L_j)/(n + 1)`, the sample's marginal share of
        level l with the inverse prior's pseudo-count spread over the levels (so a
        level of the codebook that the sample lacks keeps some mass), and M the
        ``mass``. The marginal centre shrinks a class with few records towards the
        key's overall distribution rather than towards uniform: under the inverse
        prior a class of a handful of records reproduces their exact combinations and
        gives the sample uniques it holds a large :math:`\pi_k`, while classes of
        hundreds of records barely move. It is an empirical-Bayes plug-in for a
        shared Dirichlet base measure (the posterior of a hyperprior on
        :math:`\eta_j` concentrates at the marginal for samples of hundreds of
        records); each model, e.g. each part of :func:`overdispersion_cv`, takes the
        marginal of its own records.

        Measured on the real designs and not the default (benchmarks/README.md, 10
        replicates per design): a mass of 30 removes the bias of Adult 6 keys at 10%
        (tau1 -3.7% -> +0.5%) and Adult 9 keys at 10% (+2.2% -> -0.4%), but breaks
        the small samples (Scotland 7 keys at 1%: +11% -> +70%); a mass of 10 moves
        Adult 6 keys at 1% to -10%; a mass proportional to the records (0.5% of n,
        so that the cross-validation's parts of n/4 and n/8 records are smoothed
        alike) does worse still (Adult 6 keys at 1%: -28%; Scotland 7 keys: +11% to
        +22%). Where the prior puts the rare cells' mass moves tau1 more than the
        cross-validated kappa absorbs.

        A learnt mass (``mass="learn"``, 10 replicates per design): on every key it
        removes the 10% shifts (Adult 6 keys -3.7% -> -1.1%, Adult 9 keys +2.2% ->
        -1.1%) but the Scotland designs, whose keys have at most 14 levels, lose
        (Scotland 7 keys at 1%: +15% -> +37%; Scotland 13 keys at 5%: +1.4% -> -8.0%,
        coverage 0.3), with parts learning their own masses or taking the whole
        sample's alike. With ``min_levels=20`` (only Adult's age and native country
        learn) the Scotland results are the default's bit for bit and the Adult
        designs were measured over 150 replicates (benchmarks/README.md). That is the
        default since the synthetic census (country of birth: 150 levels with a Zipf
        tail) showed the inverse prior understating tau1 by 18% and 12% at 5% and 10%
        (4% and 1% with it); on the held-out EU-SILC it raises an overstatement.

        ``small_mass=M`` centres the keys below ``min_levels`` on their marginal too,
        with the fixed mass M (benchmarks/README.md, "The small keys' smoothing"; design seed 0, 50
        samples per design): M = 4 mends Scotland's activity keys at 1% (tau1 -9.2% ->
        +2.9%) but overshoots Scotland 7 keys at every fraction (+17.5/+7.1/+5.1%,
        tau2 coverage at 5% 0.96 -> 0.78), and M = 1 lowers Adult's key sets at 1% by
        7-9 points; not the default.
        """
        if j not in self._phi_conc:
            p = self.priors["phi"]
            L = int(self.n_levels[j])
            if self._marginal_key(j) or "small_mass" in p:
                m = np.bincount(self.codes[:, j], weights=self.counts, minlength=L)
                mass = p["mass"] if self._marginal_key(j) else p["small_mass"]
                mass = (PHI_MASS_START if isinstance(mass, str)
                        else float(mass[j]) if np.ndim(mass) else float(mass))
                conc = mass * (m + 1.0 / L) / (m.sum() + 1.0)
            else:
                conc = np.full(L, float(p["a"]) if isinstance(p["a"], (int, float)) else 1.0 / L)
            conc.flags.writeable = False  # shared by every fit of this model
            self._phi_conc[j] = conc
        return self._phi_conc[j]

    def _marginal_key(self, j: int) -> bool:
        """Whether key j's profiles are centred on its marginal.

        With ``a="marginal"``, the keys of at least ``min_levels`` levels (default
        every key), whose mass is ``mass``; the other keys keep the inverse prior, or
        with ``small_mass`` are centred on their marginal too, with that fixed mass.
        """
        p = self.priors["phi"]
        return p["a"] == "marginal" and int(self.n_levels[j]) >= p.get("min_levels", 0)

    def learns_mass(self, j: int) -> bool:
        """Whether key j's profile mass M_j is learnt (``mass="learn"``)."""
        return self._marginal_key(j) and isinstance(self.priors["phi"].get("mass"), str)

    @property
    def learns_phi_mass(self) -> bool:
        """Whether any key's profile mass M_j is learnt (``mass="learn"``)."""
        return any(self.learns_mass(j) for j in range(len(self.keys)))

    def _phi_mass_start(self) -> np.ndarray:
        """Masses at the start: PHI_MASS_START where learnt, the fixed total elsewhere."""
        return np.array([PHI_MASS_START if self.learns_mass(j)
                         else float(self.phi_concentration(j).sum())
                         for j in range(len(self.keys))])

    def phi_base(self, j: int) -> np.ndarray:
        r"""The marginal base measure :math:`\eta_j` of key j (``a="marginal"``), sums to 1."""
        conc = self.phi_concentration(j)
        return conc / conc.sum()

    def _learn_mass(self, counts, j: int, rng=None) -> float:
        """M_j given class-by-level counts: the posterior mode (EM) or a draw (Gibbs)."""
        lp = profile_mass_loglik(counts, self.phi_base(j))  # + log prior: uniform on the grid
        if rng is None:
            return float(PHI_MASS_GRID[int(np.argmax(lp))])
        p = np.exp(lp - lp.max())
        return float(rng.choice(PHI_MASS_GRID, p=p / p.sum()))

    @property
    def n(self) -> float:
        """Sample size."""
        return float(self.counts.sum())

    def data_summary(self) -> dict[str, Any]:
        """JSON-serialisable summary of the data the model is built on."""
        return {
            "n_records": int(self.n),
            "n_cells": int(self.codes.shape[0]),
            "n_key_cells": int(self.key_codes.shape[0]),
            "n_sample_uniques": int((self.key_counts == 1).sum()),
            "keys": self.keys[:self.n_keys],
            "n_levels": self.n_levels[:self.n_keys].tolist(),
            "weight_classes": (None if self.class_weights is None
                               else self.class_weights.tolist()),
            "n_classes": self.H,
            "structural_zeros": (self.structural_zeros.to_list()
                                 if self.structural_zeros is not None else []),
        }

    # ---------------------------------------------------------------- likelihood
    def loglik(self, w, phi) -> float:
        """Log-likelihood at class weights ``w`` (H,) and ``phi`` (J arrays (H, L_j))."""
        return latent_class_loglik(self.codes, self.counts, w, phi, self.structural_zeros)

    def cell_probabilities(self, w, phi, codes=None) -> np.ndarray:
        r""":math:`\pi_k` of the given cells (default: the observed ones), truncated if S is set."""
        codes = self.codes if codes is None else np.asarray(codes)
        with np.errstate(divide="ignore"):
            lw = np.log(np.asarray(w, float))
            lp = [np.log(np.asarray(p, float)) for p in phi]
        pi = np.exp(logsumexp(lw + _log_cell_terms(codes, lp), axis=1))
        if self.structural_zeros is not None:
            pi = np.where(self.structural_zeros.contains(codes), 0.0,
                          pi / (1.0 - float(np.asarray(w) @ self.structural_zeros.class_mass(phi))))
        return pi

    def build(self):
        """The PyMC model, marginalised over class labels (for NUTS or nutpie).

        :func:`sdcbayes.inference.fit` refuses ``method="advi"`` and ``"map"`` for this
        model (``supported_fit_methods``). The model holds no ``pi`` of the cells (a
        Deterministic of cells x draws): its posterior is not one the risk routes read;
        :meth:`sample` (``store="all"``) with
        :func:`sdcbayes.risk.posterior_assess.assess_posterior` is the route to the risks.

        ``V`` (dim ``stick``, H - 1) ~ Beta(1, alpha); ``w`` = stick-breaking
        (Deterministic, dim ``latent_class``); ``phi_<key>`` ~ Dirichlet, dims
        (``latent_class``, ``level_<key>``), with a learnt mass
        (``mass="learn"``) of concentration :math:`M_j\\eta_j`,
        ``log_phi_mass_<key>`` ~ Uniform over the log of :data:`PHI_MASS_GRID`'s range
        (the continuous counterpart of the Gibbs sampler's grid); ``pm.Potential("loglik")`` =
        :func:`latent_class_loglik` (Manrique-Vallier & Reiter 2014, eq. 2).
        Label switching makes NUTS mix poorly across modes; the functionals the
        risk needs (:math:`\\pi_k`) are invariant to it.
        """
        import pymc as pm
        import pytensor.tensor as pt

        H, J = self.H, len(self.keys)
        names = _safe_names(self.keys)
        coords = {CLASS_DIM: np.arange(H), "stick": np.arange(H - 1),
                  "cell": np.arange(self.codes.shape[0])}
        for j in range(J):
            coords[f"level_{names[j]}"] = [str(v) for v in self.levels[j]]
        a_spec = self.priors["alpha"]
        with pm.Model(coords=coords) as model:
            # through prior_to_rv: its float64 cast keeps the Gamma's normalising constant
            # in double precision (Python floats such as 0.25 would be float32 constants)
            alpha = prior_to_rv(pm, "alpha", a_spec)
            V = pm.Beta("V", 1.0, alpha, dims="stick")
            rest = pt.concatenate([pt.ones((1,)), pt.cumprod(1.0 - V)])
            w = pm.Deterministic("w", pt.concatenate([V, pt.ones((1,))]) * rest, dims=CLASS_DIM)
            phis = []
            for j in range(J):
                conc = np.tile(self.phi_concentration(j), (H, 1))
                if self.learns_mass(j):  # M_j uniform in log M over the grid's range
                    log_m = pm.Uniform(f"log_phi_mass_{names[j]}",
                                       np.log(PHI_MASS_GRID[0]), np.log(PHI_MASS_GRID[-1]))
                    conc = pt.exp(log_m) * np.tile(self.phi_base(j), (H, 1))
                phis.append(pm.Dirichlet(f"phi_{names[j]}", a=conc,
                                         dims=(CLASS_DIM, f"level_{names[j]}")))
            fk = pm.Data("fk", self.counts, dims="cell")
            lp = pt.log(w)[None, :]
            for j in range(J):
                lp = lp + pt.log(phis[j]).T[self.codes[:, j]]
            ll = pt.sum(fk * pt.logsumexp(lp, axis=1))
            sz = self.structural_zeros
            if sz is not None:
                rect = pt.ones((H, sz.n_rectangles))
                for j in range(J):
                    if sz.restricted[j]:
                        rect = rect * pt.dot(phis[j], sz.masks[j].T.astype(float))
                ll = ll - pt.sum(fk) * pt.log1p(-pt.dot(w, rect.sum(axis=1)))
            pm.Potential("loglik", ll)
        return model

    # ---------------------------------------------------------------- EM start
    def _onehots(self):
        """One-hot (L_j, n_cells) matrix of each key's levels, for per-class level counts."""
        f = self.counts
        return [sparse.csr_matrix((np.ones(len(f)), (self.codes[:, j], np.arange(len(f)))),
                                  shape=(self.n_levels[j], len(f))) for j in range(len(self.keys))]

    def _level_counter(self):
        """A function of (n_cells, H) counts giving every key's (L_j, H) level counts.

        The keys' one-hot matrices stacked into one, so that a sweep makes one sparse
        product instead of J (each row sums the same entries in the same order, so the
        counts are those of :meth:`_onehots`, bit for bit).
        """
        stacked = sparse.vstack(self._onehots(), format="csr")
        ends = np.cumsum(self.n_levels[:len(self.keys)])
        starts = ends - self.n_levels[:len(self.keys)]

        def counts(x):
            c = stacked @ x
            return [c[a:b] for a, b in zip(starts, ends, strict=True)]
        return counts

    def fit_em(self, n_restarts: int = 4, max_iter: int = 200, tol: float = 1e-5,
               random_seed=None, n_classes: int | None = None,
               prune: bool = True, learn_mass: str | None = None) -> dict[str, Any]:
        r"""Penalised maximum likelihood by EM, best of ``n_restarts`` random starts.

        The E-step is the expectation of the Gibbs allocation step (records of each
        distinct cell shared among classes in proportion to
        :math:`w_h\prod_j\phi_{hjx_{kj}}`); with structural zeros it adds the
        expected augmented records, :math:`E(n_0) = n\,\pi^*(S)/(1 - \pi^*(S))`
        (the mean of the negative binomial of Manrique-Vallier & Reiter 2014,
        section 3), spread over classes and levels like the Gibbs step. The M-step
        is :math:`w_h \propto m_h`, :math:`\phi_{hj} \propto c_{hj} + a` (the
        Dirichlet prior as pseudo-counts, which keeps every level possible). Used
        to start the Gibbs chains in a good region: started from the margins, the
        classes take hundreds of sweeps to differentiate and chains disagree.

        With ``prune`` the number of classes is chosen as it goes by the
        minimum-message-length rule of Figueiredo & Jain (2002, IEEE TPAMI 24,
        381-396, section 4: weights :math:`\propto \max(0, m_h - d/2)`): a class is
        worth keeping only if it explains more than
        :math:`d/2` records, :math:`d = \sum_j (L_j - 1)` its free parameters; the
        smallest class below that is removed (weight 0), one per iteration. Without
        it, H classes fitted to a small sample overfit (each sample unique gets a
        class of its own, so the risk is understated) and the Gibbs chains started
        there stay in that region for hundreds of sweeps.

        Parameters
        ----------
        n_restarts : int
            Random starts (each: random soft allocation of the cells to classes).
        max_iter : int
            EM iterations per start (with ``learn_mass="always"`` and a learnt mass,
            twice as many: see ``learn_mass``).
        tol : float
            Stop when the log-likelihood gains less than ``tol * n`` per iteration.
        random_seed : int or numpy.random.Generator, optional
        n_classes : int, optional
            Number of classes fitted (default: the truncation level H).
        prune : bool
            Remove classes by the Figueiredo-Jain rule (removed classes keep weight
            0 and their last profiles).
        learn_mass : {"converged", "always"}, optional
            With a learnt profile mass: the classes are first fitted at
            :data:`PHI_MASS_START` (from a random start every class looks like the
            marginal and M would run to the top), then M is learnt with them (type-II
            EM) -- ``"converged"``: once that first phase converges within
            ``max_iter`` sweeps, else M stays at the start; ``"always"``: after at most
            ``max_iter`` sweeps, for the rest of a budget of ``2 max_iter`` (at least
            ``max_iter``). Default
            :data:`EM_LEARN_MASS` (``"converged"``, what every measured result used).

        Returns
        -------
        dict
            ``w`` (H,), sorted by decreasing weight, ``phi`` (list of (H, L_j)),
            ``n_classes`` (classes left after pruning),
            ``loglik`` (truncated log-likelihood, Manrique-Vallier & Reiter 2014,
            eq. 2), ``criterion`` (the message-length score restarts are compared
            by, Figueiredo & Jain 2002), ``n_iter`` of the best start, ``logliks``
            of all starts, ``provenance`` (model, priors, data summary and these
            settings with the seed used -- drawn when None, ``"generator"`` when a
            Generator was passed -- as :func:`sdcbayes.provenance.stamp` gives it).
        """
        # checked before any work: 0 restarts or sweeps left nothing to return (a raw
        # TypeError / UnboundLocalError), and more classes than H are not this model's
        n_restarts = check_whole("n_restarts", n_restarts, 1)
        max_iter = check_whole("max_iter", max_iter, 1)
        H = self.H if n_classes is None else check_whole(
            "n_classes", n_classes, 1, self.H, " (at most the model's truncation level H)")
        learn_mass = EM_LEARN_MASS if learn_mass is None else learn_mass
        if learn_mass not in ("converged", "always"):
            raise InputError(f"learn_mass must be 'converged' or 'always'; got {learn_mass!r}")
        # a Generator is used as it is (the chains' starts continue its stream); otherwise
        # the seed, drawn when None, is stamped so that the fit can be repeated
        if isinstance(random_seed, np.random.Generator):
            rng, seed = random_seed, "generator"
        else:
            seed = _seed_to_stamp(random_seed)
            rng = np.random.default_rng(seed)
        settings = {"method": "em", "n_restarts": n_restarts, "max_iter": max_iter,
                    "tol": float(tol), "random_seed": seed, "n_classes": H,
                    "prune": bool(prune), "learn_mass": learn_mass}
        always = learn_mass == "always"
        J, n = len(self.keys), self.n
        codes, f = self.codes, self.counts
        level_counts = self._level_counter()
        conc0 = [self.phi_concentration(j)[:, None] for j in range(J)]
        learn = self.learns_phi_mass
        base = [self.phi_base(j)[:, None] for j in range(J)] if learn else None
        sz = self.structural_zeros
        half_d = 0.5 * float(np.sum(self.n_levels - 1))
        best, lls = None, []
        for _ in range(int(n_restarts)):
            resp = rng.dirichlet(np.ones(H), size=len(f)) * f[:, None]
            alive = np.ones(H, dtype=bool)
            conc = conc0
            phi_mass = list(self._phi_mass_start()) if learn else None
            # M is learnt once the classes have formed at the starting mass: from the
            # random start every class looks like the marginal and M would run to the top
            learning = False
            prev = -np.inf
            # set at the end of each sweep; the augmentation step reads last sweep's
            mass, wS, phi = 0.0, None, None
            # "always": a learnt M gets a phase of its own, up to max_iter sweeps at the
            # starting mass (until converged), then the rest of 2 max_iter learning it; with one
            # budget for both ("converged"), a fit still converging at the starting mass
            # keeps it (EM_LEARN_MASS)
            for it in range(int(max_iter) * (2 if learn and always else 1)):
                m_h = resp.sum(axis=0)
                pruned = False
                if prune and alive.sum() > 1:
                    small = alive & (m_h < half_d)
                    if small.any():
                        # remove only the smallest: the others gain its records
                        alive[np.flatnonzero(small)[np.argmin(m_h[small])]] = False
                        pruned = True
                    m_h = np.where(alive, m_h, 0.0)
                    resp = resp * alive
                c = level_counts(resp)                                   # (L_j, H)
                if it and sz is not None:
                    n0 = n * mass / (1.0 - mass)
                    if n0 > 0:
                        chr_ = n0 * wS / wS.sum()                        # (H, R)
                        m_h = m_h + chr_.sum(axis=1)
                        for j in range(J):
                            if sz.restricted[j]:
                                pm_ = phi[j][:, None, :] * sz.masks[j][None]
                                tot = pm_.sum(axis=2, keepdims=True)
                                share = pm_ / np.where(tot > 0, tot, 1.0)
                                c[j] = c[j] + np.einsum("hr,hrl->lh", chr_, share)
                            else:
                                c[j] = c[j] + (chr_.sum(axis=1)[:, None] * phi[j]).T
                w = np.where(alive, m_h + 1e-10, 0.0)
                w = w / w.sum()
                if learning:  # type-II step: M_j maximising the expected counts' marginal
                    phi_mass = [self._learn_mass(c[j], j) if self.learns_mass(j) else phi_mass[j]
                                for j in range(J)]
                    conc = [phi_mass[j] * base[j] for j in range(J)]
                phi = [((c[j] + conc[j]) / (c[j] + conc[j]).sum(axis=0)).T for j in range(J)]
                log_phi = [np.log(p) for p in phi]
                lp = _log_cell_terms(codes, log_phi)
                with np.errstate(divide="ignore"):
                    lp += np.log(w)
                lpi, resp = _normalise_rows(lp)  # resp overwrites lp
                resp *= f[:, None]
                ll = float(f @ lpi)
                if sz is not None:
                    wS = w[:, None] * sz.rectangle_mass(phi)
                    mass = float(min(wS.sum(), 1.0 - 1e-12))
                    ll -= n * np.log1p(-mass)
                converged = not pruned and ll - prev < tol * n
                if learn and not learning and (converged
                                               or (always and it + 1 >= int(max_iter))):
                    learning, prev = True, -np.inf
                    continue
                if converged:
                    break
                prev = ll
            lls.append(ll)
            # restarts compared by minus the message length of Figueiredo & Jain (2002)
            k = int(alive.sum())
            crit = ll - half_d * np.log(n * w[alive] / 12.0).sum() \
                - 0.5 * k * np.log(n / 12.0) - 0.5 * k * (2 * half_d + 1)
            if best is None or crit > best["criterion"]:
                order = np.argsort(-w)
                best = {"w": w[order], "phi": [p[order] for p in phi], "loglik": ll,
                        "n_iter": it + 1, "n_classes": k, "criterion": crit,
                        "phi_mass": None if phi_mass is None else np.array(phi_mass)}
        best["logliks"] = lls
        best["provenance"] = provenance_stamp(
            self.name, priors=self.priors, data_summary=self.data_summary(), settings=settings)
        return best

    # ---------------------------------------------------------------- Gibbs sampler
    def resample(self, rng, size: int | None = None, replace: bool = True) -> LatentClassModel:
        """The same model on a resample of the records.

        ``size`` records (default n) drawn from the sample's, with replacement (a
        bootstrap resample) or without (a subsample); cells with none left out (keys,
        levels, classes, structural zeros, priors, weight classes and a mass span
        (:meth:`with_mass_span`) kept; record clusters dropped: a record's cluster
        would have to follow it into the resample).

        Parameters
        ----------
        rng : numpy.random.Generator
        size : int, optional
            Records drawn (default: the sample's n).
        replace : bool
            Draw with replacement (default) or without.

        Returns
        -------
        LatentClassModel
        """
        f = np.rint(self.counts).astype(np.int64)
        size = int(f.sum()) if size is None else int(size)
        counts = np.bincount(rng.choice(np.repeat(np.arange(f.size), f), size=size,
                                        replace=replace), minlength=f.size)
        kept = counts > 0
        other = LatentClassModel(self.codes[kept], counts[kept], self.n_levels, keys=self.keys,
                                 levels=self.levels, n_classes=self.H,
                                 structural_zeros=self.structural_zeros, priors=self.priors,
                                 class_weights=self.class_weights)
        if getattr(self, "_mass_span", None) is not None:
            # the same keys learn their mass (same priors and levels): the span applies as is
            other._mass_span = self._mass_span
        return other

    def _init_state(self, rng, init: str = "em", em_restarts: int = 3,
                    start_classes: int | None = None):
        H = self.H
        if init in ("em", "bootstrap"):
            # "bootstrap": the EM fit of a resample of the records, so that the chains
            # start in the modes the sample's own variation leads to (module docstring,
            # "Chain starts")
            src = self.resample(rng) if init == "bootstrap" else self
            if start_classes is None:
                fit = src.fit_em(n_restarts=em_restarts, random_seed=rng)
            else:
                fit = src._fit_em_padded(int(start_classes), em_restarts, rng)
            w = np.clip(fit["w"], 1e-12, None)
            w = w / w.sum()
            # stick-breaking fractions reproducing the EM weights (classes sorted by weight)
            rest = 1.0 - np.concatenate([[0.0], np.cumsum(w)[:-2]])
            V = np.clip(w[:-1] / np.maximum(rest, 1e-300), 1e-12, 1.0 - 1e-12)
            return {"V": V, "alpha": 1.0, "log_phi": [np.log(p) for p in fit["phi"]],
                    "phi_mass": fit["phi_mass"]}
        phi_log = []
        for j in range(len(self.keys)):
            # start every class near the marginal, perturbed so the classes differ
            conc = self._pooled_counts(j)[:, None] * np.ones((1, H))
            phi_log.append(_log_dirichlet(rng, conc).T)
        V = rng.beta(1.0, 1.0, size=H - 1)
        return {"V": V, "alpha": 1.0, "log_phi": phi_log,
                "phi_mass": self._phi_mass_start() if self.learns_phi_mass else None}

    def _fit_em_padded(self, K: int, em_restarts: int, rng) -> dict[str, Any]:
        """EM with K classes, padded to H (the Gibbs chains' start with ``start_classes``).

        The other classes get weight 0 and the sample's marginal profiles.
        """
        fit = self.fit_em(n_restarts=em_restarts, random_seed=rng, n_classes=K)
        pad = self.H - K
        if pad:
            fit["w"] = np.concatenate([fit["w"], np.zeros(pad)])
            phi = []
            for j, p in enumerate(fit["phi"]):
                pooled = self._pooled_counts(j)
                phi.append(np.vstack([p, np.tile(pooled / pooled.sum(), (pad, 1))]))
            fit["phi"] = phi
        return fit

    def _pooled_counts(self, j: int) -> np.ndarray:
        """Key j's sample level counts plus its profile prior's pseudo-counts.

        The Dirichlet parameters of the profile's posterior with every record in one class.
        """
        return (np.bincount(self.codes[:, j], weights=self.counts, minlength=self.n_levels[j])
                + self.phi_concentration(j))

    def _gibbs_chain(self, rng, n_iter: int, keep_from: int, thin: int, N: float | None,
                     target: np.ndarray, init: str = "em", em_restarts: int = 3,
                     kappa_grid: tuple[np.ndarray, np.ndarray] | None = None,
                     progress=None, rate_factor: np.ndarray | None = None,
                     label_moves: bool = False, start_classes: int | None = None,
                     split_merge: int = 0, ppc_keep: np.ndarray | None = None,
                     store_profiles: bool = False):
        """One chain; returns dict of stored draws.

        ``progress``: called with the number of sweeps done, now and then.

        ``kappa_grid``: (grid, weights) of the overdispersion, drawn afresh for every
        kept draw (a cut posterior: kappa does not feed back into the classes).

        ``rate_factor``: per key cell, multiplies the stored pi_k (and so lambda_k) of
        the targets (:func:`cluster_rate_correction`).

        ``ppc_keep``: increasing indices of kept draws whose class weights, profiles and
        kappa are stored (``ppc_w``, ``ppc_phi``, ``ppc_kappa``) for the predictive
        check; storing them draws no random numbers, so the chain is unchanged.

        ``store_profiles``: keep every kept draw's class profiles (``phi``, one (n_keep, H,
        L_j) array per column), which draws no random numbers either.
        """
        H, J = self.H, len(self.keys)
        codes, f = self.codes, self.counts
        K = codes.shape[0]
        f_int = f.astype(np.int64)
        n = self.n
        sz = self.structural_zeros
        a_alpha, b_alpha = self.priors["alpha"]["alpha"], self.priors["alpha"]["beta"]
        conc = [self.phi_concentration(j)[:, None] for j in range(J)]
        level_counts = self._level_counter()
        st = self._init_state(rng, init, em_restarts, start_classes)
        V, alpha, log_phi = st["V"], st["alpha"], st["log_phi"]
        log1mV = np.log1p(-V)
        learn = self.learns_phi_mass
        if learn:
            base = [self.phi_base(j)[:, None] for j in range(J)]
            phi_mass = np.array(st["phi_mass"], dtype=float)
            conc = [phi_mass[j] * base[j] for j in range(J)]
        span = getattr(self, "_mass_span", None) if learn else None
        # the split-merge moves integrate the learnt masses over their grid
        sm_learnt = ({j: self.phi_base(j) for j in range(J) if self.learns_mass(j)}
                     if split_merge and learn else None)
        aug = None

        def aug_counts(a_alloc):
            # every key's (L_j, H) level counts of the augmented cells' records
            return [np.stack([np.bincount(aug[0][:, j], weights=a_alloc[:, h],
                                          minlength=self.n_levels[j]) for h in range(H)],
                             axis=1) for j in range(J)]
        u_span = 0.0
        n_keep = len(range(keep_from, n_iter, thin))
        out = {
            "w": np.empty((n_keep, H)), "alpha": np.empty(n_keep), "loglik": np.empty(n_keep),
            "pi": np.empty((n_keep, target.size)), "n_classes_used": np.empty(n_keep),
            "mass_structural_zero": np.empty(n_keep), "n_augmented": np.empty(n_keep),
        }
        # target: key cells (the cells, without a design variable)
        su_t = self.key_counts[target] == 1  # the sample uniques among the stored cells
        factor_t = None if rate_factor is None else np.asarray(rate_factor, dtype=float)[target]
        design = self.class_weights is not None
        if design:
            t_keys = self.key_codes[target]
        excess = None if N is None else self.excess_rates(N)
        # lam only where it is not (N - n) pi (weight classes): without, it would double
        # the largest stored array (draws x cells) for nothing
        if N is not None and design:
            out["lam"] = np.empty((n_keep, target.size))
        if kappa_grid is not None:
            out["kappa"] = np.empty(n_keep)
        if learn:
            out["phi_mass"] = np.empty((n_keep, J))
        if split_merge:
            out["split_merge_accepted"] = np.empty(n_keep)
        n_ppc, ppc_next = (0, 0) if ppc_keep is None else (len(ppc_keep), 0)
        if store_profiles:
            out["phi"] = [np.empty((n_keep, H, int(L))) for L in self.n_levels]
        if n_ppc:
            out["ppc_w"] = np.empty((n_ppc, H))
            out["ppc_kappa"] = np.full(n_ppc, np.inf)
            out["ppc_phi"] = [np.empty((n_ppc, H, int(L))) for L in self.n_levels]
        if N is not None:
            out["tau1"] = np.empty(n_keep)
            out["tau2"] = np.empty(n_keep)
            out["tau1_expected"] = np.empty(n_keep)
            out["tau2_expected"] = np.empty(n_keep)
        keep = 0
        every = max(1, n_iter // 50)
        for it in range(n_iter):
            if progress is not None and it % every == 0:
                progress(it)
            with np.errstate(divide="ignore"):
                lw = np.log(stick_breaking_weights(V))
            lp = _log_cell_terms(codes, log_phi)  # (K, H)
            lp += lw
            lpi, q = _normalise_rows(lp)  # q overwrites lp
            if sz is not None:
                phi = [np.exp(x) for x in log_phi]
                rect = sz.rectangle_mass(phi)                  # (H, R)
                wS = np.exp(lw)[:, None] * rect
                mass = float(min(wS.sum(), 1.0 - 1e-12))
            else:
                mass = 0.0
            if it >= keep_from and (it - keep_from) % thin == 0:
                log_norm = np.log1p(-mass)
                out["w"][keep] = np.exp(lw)
                out["alpha"][keep] = alpha
                out["loglik"][keep] = f @ lpi - n * log_norm
                if design:  # pi_kg of every (key cell, class): the excess is class by class
                    # sum_h w_h prod_{j<J} phi_hj(x_kj) phi_hJ(g): the keys' terms once, then
                    # one (T, H) x (H, G) product, not T * G rows of J gathers
                    a = lw + _log_cell_terms(t_keys, log_phi[:-1])
                    top = a.max(axis=1, keepdims=True)
                    pi_kg = (np.exp(a - top) @ np.exp(log_phi[-1])) * np.exp(top - log_norm)
                    if factor_t is not None:
                        pi_kg = pi_kg * factor_t[:, None]
                    pi_t = pi_kg.sum(axis=1)
                else:
                    pi_t = np.exp(lpi[target] - log_norm)
                    if factor_t is not None:
                        pi_t = pi_t * factor_t
                out["pi"][keep] = pi_t
                out["mass_structural_zero"][keep] = mass
                kappa = None
                if kappa_grid is not None:
                    kg = kappa_grid
                    if span is not None and span["kappa_high"] is not None \
                            and rng.random() < u_span:  # the kappa of the sweep's mass
                        kg = span["kappa_high"]
                    kappa = float(rng.choice(kg[0], p=kg[1]))
                    out["kappa"][keep] = kappa
                if store_profiles:
                    for j in range(J):
                        out["phi"][j][keep] = np.exp(log_phi[j])
                if ppc_next < n_ppc and keep == ppc_keep[ppc_next]:
                    out["ppc_w"][ppc_next] = np.exp(lw)
                    if kappa is not None:
                        out["ppc_kappa"][ppc_next] = kappa
                    for j in range(J):
                        out["ppc_phi"][j][ppc_next] = np.exp(log_phi[j])
                    ppc_next += 1
                if N is not None:
                    if design:
                        lam_t = n * (pi_kg @ excess)
                        out["lam"][keep] = lam_t
                    else:
                        lam_t = (N - n) * pi_t
                    lam, smean = lam_t[su_t], n * pi_t[su_t]
                    t1, t2 = simulate_tau(lam, rng, kappa, smean)
                    out["tau1"][keep], out["tau2"][keep] = t1, t2
                    out["tau1_expected"][keep] = prob_population_unique(lam, kappa, smean).sum()
                    out["tau2_expected"][keep] = expected_inverse_frequency(
                        lam, kappa, smean).sum()
            # 1. allocate the f_k records of each cell to classes (one multinomial per cell)
            alloc = rng.multinomial(f_int, q).astype(float)   # (K, H); q's rows sum to 1
            m_h = alloc.sum(axis=0)
            c = level_counts(alloc)                          # (L_j, H)
            # 2. structural zeros: augment with the records the untruncated process puts in S
            n0 = 0
            aug = None
            if sz is not None:
                n0 = int(rng.negative_binomial(int(n), 1.0 - mass)) if mass > 0 else 0
                if n0:
                    chr_ = rng.multinomial(n0, (wS / wS.sum()).ravel()).reshape(wS.shape)
                    m_h = m_h + chr_.sum(axis=1)
                if n0 and split_merge:
                    # the split-merge moves need every augmented record's cell, not only
                    # its keys' counts: draw them record by record
                    aug = _augmented_cells(chr_, phi, sz, rng)
                    c = [cj + x for cj, x in zip(c, aug_counts(aug[1]), strict=True)]
                elif n0:
                    for j in range(J):
                        if sz.restricted[j]:
                            p = phi[j][:, None, :] * sz.masks[j][None, :, :]   # (H, R, L)
                            tot = p.sum(axis=2, keepdims=True)
                            # an underflowed (h, r) has mass 0 and count 0: any valid pvals do
                            p = np.where(tot > 0, p / np.where(tot > 0, tot, 1.0),
                                         sz.masks[j][None] / sz.masks[j].sum(1)[None, :, None])
                            c[j] = c[j] + rng.multinomial(chr_, p).sum(axis=1).T
                        else:
                            c[j] = c[j] + rng.multinomial(chr_.sum(axis=1), phi[j]).T
            if label_moves:
                # relabel the classes (their counts, the records' levels, V) by Metropolis
                # swaps that leave the posterior unchanged: the stick-breaking order mixes
                perm, V, log1mV = _label_swaps(m_h, V, rng, log1mV=log1mV)
                m_h = m_h[perm]
                c = [cj[:, perm] for cj in c]
                if split_merge:
                    # every record the split-merge moves see takes the new labels, the
                    # augmented ones too: m_h and c already count them in the new labels
                    alloc = alloc[:, perm]
                    if aug is not None:
                        aug = (aug[0], aug[1][:, perm])
            n_sm = 0
            if split_merge:
                # merge and split classes with V and the profiles integrated out; V, alpha
                # and the profiles are drawn below from the new allocation (the augmented
                # records, given their cells, are records like the others)
                conc_now = [x.ravel() for x in conc]
                if aug is None:
                    n_sm = _split_merge(alloc, codes, conc_now, alpha, rng, split_merge,
                                        sm_learnt, c)
                    if n_sm:
                        m_h = alloc.sum(axis=0)
                        c = level_counts(alloc)
                else:
                    both = np.vstack([alloc, aug[1]])
                    n_sm = _split_merge(both, np.vstack([codes, aug[0]]), conc_now, alpha,
                                        rng, split_merge, sm_learnt, c)
                    if n_sm:
                        alloc, aug = both[:K], (aug[0], both[K:])
                        m_h = both.sum(axis=0)
                        c = [cj + x for cj, x in zip(level_counts(alloc),
                                                     aug_counts(aug[1]), strict=True)]
                if _CHECK_COUNTS:  # tests: the counts are those of every record's label
                    ref_m, ref_c = alloc.sum(axis=0), level_counts(alloc)
                    if aug is not None:
                        ref_m = ref_m + aug[1].sum(axis=0)
                        ref_c = [x + y for x, y in zip(ref_c, aug_counts(aug[1]), strict=True)]
                    _check_class_counts(m_h, c, ref_m, ref_c)
            # 3. stick-breaking fractions and DP concentration (Ishwaran & James 2001)
            tail = np.cumsum(m_h[::-1])[::-1]
            V, log1mV = _stick_fractions(rng, 1.0 + m_h[:-1], alpha + tail[1:])
            alpha = rng.gamma(a_alpha + H - 1, 1.0 / (b_alpha - log1mV.sum()))
            # 4. the profile prior's masses, then the class profiles: (M, phi) | z as one
            # block, M_j from the Dirichlet-multinomial of the class counts (phi integrated
            # out, profile_mass_loglik), so empty classes do not hold M where it was
            if learn:
                phi_mass = np.array([self._learn_mass(c[j], j, rng) if self.learns_mass(j)
                                     else phi_mass[j] for j in range(J)])
                if span is not None:  # moved towards the high end by a u of its own (cut)
                    u_span = rng.random()
                    phi_mass = np.where(span["keys"], np.exp(
                        (1 - u_span) * np.log(phi_mass) + u_span * span["log_high"]), phi_mass)
                conc = [phi_mass[j] * base[j] for j in range(J)]
            log_phi = [_log_dirichlet(rng, c[j] + conc[j]).T for j in range(J)]
            if it >= keep_from and (it - keep_from) % thin == 0:
                out["n_classes_used"][keep] = int((m_h > 0).sum())
                if learn:
                    out["phi_mass"][keep] = phi_mass
                out["n_augmented"][keep] = n0
                if split_merge:
                    out["split_merge_accepted"][keep] = n_sm
                keep += 1
        return out

    def _check_cluster_correction(self, cluster_correction) -> None:
        """The checks of :meth:`sample`'s ``cluster_correction``, before any work."""
        if cluster_correction is None:
            return
        if isinstance(cluster_correction, str):
            if cluster_correction != "cv":
                raise InputError(f"cluster_correction must be None, 'cv' or a mapping with "
                                 f"'factor'; got {cluster_correction!r}")
            if self.record_clusters is None:
                raise InputError(
                    "cluster_correction='cv' needs the records' clusters (households): "
                    "build the model with from_microdata and a household column, or "
                    "from_frame(clusters=...); or pass cluster_correction=None")
        elif isinstance(cluster_correction, Mapping) and "factor" in cluster_correction:
            factor = np.asarray(cluster_correction["factor"], dtype=float)
            if factor.shape != (self.key_codes.shape[0],) or np.any(~(factor > 0)):
                raise InputError(f"cluster_correction factor must be positive, one per key cell "
                                 f"({self.key_codes.shape[0]}); got shape {factor.shape}")
        else:
            raise InputError(f"cluster_correction must be None, 'cv' or a mapping with "
                             f"'factor'; got {cluster_correction!r}")

    @staticmethod
    def _sample_settings(*, draws, tune, chains, thin, N, random_seed, store, init, em_restarts,
                         overdispersion, kappa_prior, cluster_correction, profile_mass,
                         label_moves, start_classes, split_merge, ppc,
                         store_profiles=False) -> dict[str, Any]:
        """The settings :meth:`sample` stamps: with the model, they repeat the run.

        ``cores`` is left out: the draws do not depend on it. A cluster correction's
        factors (one per key cell) are stamped as ``"given"``, not listed.
        """
        if isinstance(cluster_correction, Mapping):
            cluster_correction = "given"
        if isinstance(kappa_prior, tuple):
            kappa_prior = list(kappa_prior)
        return {
            "method": "gibbs", "draws": int(draws), "chains": int(chains), "tune": int(tune),
            "thin": int(thin), "N": None if N is None else float(N),
            "random_seed": random_seed, "store": store, "init": init,
            "em_restarts": int(em_restarts),
            "overdispersion": (dict(overdispersion) if isinstance(overdispersion, Mapping)
                               else overdispersion),
            "kappa_prior": kappa_prior, "cluster_correction": cluster_correction,
            "profile_mass": profile_mass, "label_moves": bool(label_moves),
            "start_classes": None if start_classes is None else int(start_classes),
            "split_merge": int(split_merge), "ppc": int(ppc),
            "store_profiles": bool(store_profiles),
        }

    def sample(self, draws: int = 500, tune: int = 500, chains: int = 2, *, thin: int = 1,
               N: float | None = None, random_seed=None, store: str = "uniques",
               init: str = "em", em_restarts: int = 3, overdispersion=None,
               kappa_prior=None, cluster_correction=None, progressbar: bool = False,
               cores: int | None = None, profile_mass: str | None = None,
               label_moves: bool = False, start_classes: int | None = None,
               split_merge: int = 0, ppc: int = 0, store_profiles: bool = False):
        r"""Blocked Gibbs sampler; returns an ``arviz.InferenceData`` (a DataTree under ArviZ 1).

        Steps per iteration (Ishwaran & James 2001; Dunson & Xing 2009, section
        3; Manrique-Vallier & Reiter 2014, section 3): (1) allocate the f_k
        records of each distinct cell to classes, one multinomial draw per cell
        with probabilities :math:`\propto w_h\prod_j\phi_{hjx_{kj}}`; (2) with
        structural zeros, draw :math:`n_0 \sim \mathrm{NegBin}(n, 1 - \pi^*(S))`
        augmented records and their classes and levels from the untruncated model
        restricted to S; (3) :math:`V_h \sim \mathrm{Beta}(1 + m_h, \alpha +
        \sum_{l>h} m_l)`, :math:`\alpha \sim \mathrm{Gamma}(a_\alpha + H - 1,
        b_\alpha - \sum_{h<H}\log(1 - V_h))`, with :math:`\log(1 - V_h)` drawn in logs
        where it underflows (:func:`_stick_fractions`); (4) :math:`\phi_{hj} \sim
        \mathrm{Dirichlet}(a + \text{counts})`.

        Parameters
        ----------
        draws, tune : int
            Kept iterations per chain (after thinning) and burn-in iterations.
        chains : int
            Independent chains, seeded from one ``SeedSequence`` (its first ``chains``
            children). The cross-validations (``overdispersion="cv"``, ``profile_mass``,
            ``cluster_correction="cv"``) and the predictive check (``ppc``) draw from
            children at fixed spawn keys (:data:`CV_SPAWN_KEY`, :data:`PPC_SPAWN_KEY`):
            with one ``random_seed`` the kappa posterior does not depend on ``chains``.
        thin : int
        N : float, optional
            Population size; when given, ``tau1``/``tau2`` (posterior predictive,
            including F | pi) and ``tau1_expected``/``tau2_expected`` (their
            conditional means given pi) are stored.
        random_seed : int or numpy.random.Generator, optional
            Seed of the run. Without one (None) a seed is drawn from the operating system;
            a Generator gives one integer seed drawn from it. Either way the seed used is
            stamped (``settings["random_seed"]``), so passing it back repeats the draws.
        store : {"uniques", "all"}
            Store :math:`\pi_k` for the sample uniques (default) or all observed cells.
            Memory: every per-cell array stored takes 8 bytes x chains x draws x stored
            cells -- ``pi`` always, ``lam`` too with weight classes (and N); the peak is
            about twice that (the chains' arrays and their stack; measured with
            ``assess_posterior`` on 95,698 cells: 1.5 MB of peak per kept draw, twice pi's
            0.77 MB).
            ``store="uniques"`` keeps the sample uniques' cells only (on sparse keys most
            of the cells, less on dense ones); fewer ``draws`` (or a larger ``thin`` at
            the same sweeps) and fewer ``chains`` reduce it in proportion. E.g. 4 chains
            x 1,000 draws x 10^5 cells: 3.2 GB per array.
        init : {"em", "bootstrap", "margins"}
            Start of each chain: the best of ``em_restarts`` EM fits (:meth:`fit_em`,
            a different random set per chain, so the chains start apart but in good
            regions); the best of ``em_restarts`` EM fits to a bootstrap resample of the
            records (:meth:`resample`, one per chain: starts spread as the estimate
            varies from sample to sample, module docstring "Chain starts"); or every
            class near the sample margins (slow to differentiate: hundreds of sweeps
            before the chains agree).
        em_restarts : int
        overdispersion : None, "cv", float or mapping
            ``None``: Poisson cells (:math:`\kappa = \infty`). ``"cv"``: gamma
            overdispersion of the cells around the mixture, with :math:`\kappa`
            drawn per kept draw from its cross-validated posterior
            (:func:`overdispersion_cv`, module docstring "Overdispersion"). A number:
            that :math:`\kappa`. A mapping with ``grid`` and ``weights`` (e.g. the
            output of :func:`overdispersion_cv` with ``n_splits > 1``): that posterior.
            A census (``N`` equal to the sample size and no weight class above 1, so
            every :math:`F_k = f_k` and :math:`\kappa` does not enter the risk) is not
            cross-validated with ``"cv"`` (which needs :data:`CV_MIN_RECORDS` records):
            ``kappa`` is stored as inf (Poisson, also for ``ppc``'s replicates) and
            ``attrs["overdispersion"]`` has ``method`` ``"census"``.
        kappa_prior : tuple or str, optional
            With ``overdispersion="cv"``: the prior of :math:`\kappa` the
            cross-validation's likelihood reweights (:func:`kappa_prior`; a tuple such as
            ``("log-normal", (m, s))`` or its text, :func:`parse_kappa_prior`); default
            :data:`KAPPA_PRIOR`.
        cluster_correction : None, "cv" or mapping
            ``None``: none. ``"cv"`` (needs the records' clusters,
            :meth:`set_record_clusters`): the sample uniques' :math:`\pi_k` (and
            :math:`\lambda_k`) in multi-person clusters are multiplied by the factor
            of :func:`cluster_rate_correction`, which removes their household mates'
            influence on the mixture (household samples). A mapping with ``factor``
            (one per key cell, e.g. that function's output): those factors. Stored
            ``pi`` and ``lam`` are the corrected ones; ``attrs["cluster_correction"]``
            holds the factors by cluster size (JSON).
        progressbar : bool
            Write a one-line progress report (chain, sweeps, elapsed seconds) to
            standard error, rewritten in place. Changes the risk of each cell given :math:`\pi`,
            not the classes.
        cores : int, optional
            Chains run at once, each on a thread of its own; default all the CPUs this
            process may use, at most ``chains``. The sampler's work is NumPy array
            operations and multinomial draws, which release the GIL, so threads scale:
            two cores halve a fit of 10^5 records (``benchmarks/latent_class_scaling.py``).
            The draws do not depend on it (each chain has its own seeded stream).
        profile_mass : None, "cv" or "span"
            ``None``: the profile prior as given. ``"cv"`` (with ``overdispersion="cv"``
            and the learnt profile prior, the default): where the cross-validation finds
            the learnt mass of the keys of >= 20 levels too smooth, a larger fixed mass
            chosen by it (:func:`profile_mass_cv`); where it does not, the draws are the
            default's. ``attrs["priors"]`` is the prior used, ``attrs["profile_mass"]``
            the choice (JSON). Measured worse than the default on the dense designs
            (benchmarks/README.md): an option for comparison. ``"span"``: the mass spread
            between the learnt one and that choice (:func:`profile_mass_span`; the
            learnt mass where no candidate reaches the held-out count); the prior stays
            the learnt one.
        start_classes : int, optional
            With ``init`` ``"em"`` or ``"bootstrap"``: the EM start fits this many classes
            (:meth:`fit_em` with ``n_classes``; pruning may leave fewer) and the chains
            start with the other classes empty. EM's own start keeps every class its
            pruning rule allows, and where a key of many levels learns its profile mass
            those classes split by that key; on the demo the posterior wants about half
            as many and a larger mass, and the chains take thousands of sweeps to merge
            them. Starting with 10 instead of EM's 21 brings more chains there sooner
            (8 of 12 by 3,000 sweeps, against 5 of 12), not all (benchmarks/README.md,
            "What moves slowly in the chains"): an option, not measured on the real
            designs. Default: EM's.
        label_moves : bool
            After each allocation, :math:`H` Metropolis swaps of two occupied classes and
            :math:`H` swaps of neighbouring classes with their stick-breaking fractions
            (:func:`_label_swaps`; Papaspiliopoulos & Roberts 2008, Hastie, Liverani &
            Richardson 2015), which leave the posterior unchanged and let the classes'
            order -- and so ``w`` and ``alpha`` -- mix from an EM start, whose classes
            come sorted by weight. Label-free quantities (pi, tau1, tau2, the risks) do
            not depend on the order, and on the demo their chains mix no faster with the
            moves (benchmarks/README.md, "What moves slowly in the chains"):
            off by default; the draws differ from those without.
        split_merge : int
            Split-merge Metropolis-Hastings proposals per sweep, after the allocation
            (:func:`_split_merge`: merge two classes, or split one into an empty class by
            sequential allocation, with V and the profiles integrated out). They let a
            chain change its number of classes in one step, which the blocked sampler
            does record by record. On the demo they are accepted (about 1.3% of the
            proposals) and the classes fall sooner, but the learnt mass of its 150-level
            key follows no faster and tau1 mixes no better (R-hat 1.16-1.32 against
            1.18-1.29 over three seeds; benchmarks/README.md, "A split-merge move for the
            classes"). Default 0 (none); the draws differ from those without.
            ``sample_stats["split_merge_accepted"]`` counts the accepted moves per kept
            sweep. With structural zeros the augmented records are drawn cell by cell
            (:func:`_augmented_cells`) and moved with the others; a learnt profile mass
            is summed over its grid in the moves' target.
        ppc : int
            Posterior predictive check of the sample's counts of counts: at this many
            kept draws per chain, spread evenly, one replicate sample is drawn from the
            draw's mixture (and its kappa, with ``overdispersion``) and its numbers of
            cells seen once, twice, ..., five times and six times or more are stored as
            ``posterior_predictive["m"]`` (chain, ppc_draw, count;
            :func:`replicate_counts_of_counts`), to compare with :meth:`observed` through
            :func:`sdcbayes.inference.predictive_check`. The replicates draw from a
            random stream of their own: the chains' draws do not change. Default 0
            (none); a replicate costs about as much as a sweep.
        store_profiles : bool
            Also store every kept draw's class profiles as ``phi_<key>`` (chain, draw,
            latent_class, ``level_<key>``; ``<key>`` as :meth:`build` names it, the
            weight-class design variable too), which the risk of a released file with
            suppressed values needs (:func:`sdcbayes.risk.released.assess_released`:
            the probabilities of key combinations the sample never had). Storing them
            draws no random numbers, so the chains are unchanged; they cost 8 bytes x
            chains x draws x H x (sum of the levels, the weight-class design variable's
            included): on the demo (H = 30, 190 levels), 45.6 kB per draw, 91 MB for the
            2000 draws (4 chains x 500) of ``assess_posterior``'s default fit, which
            ``sdcbayes protect --model latent-class`` runs.
            Default False (``posterior.nc`` keeps its size); stamped as
            ``settings["store_profiles"]``.

        Returns
        -------
        arviz.InferenceData or xarray.DataTree
            ``posterior``: ``w`` (chain, draw, latent_class), ``alpha``, ``pi``
            (chain, draw, cell) with coordinate ``cell`` = key cell (row of
            ``key_codes``: the model's cell table, or with a design variable its
            distinct key rows), ``lam`` = the mean of :math:`F_k - f_k`, with weight
            classes and N given (class by class; without weight classes it is not stored:
            it is (N - n) pi, computed from ``pi`` and ``constant_data`` ``n``, ``N``),
            ``mass_structural_zero``, with ``store_profiles`` the profiles ``phi_<key>``,
            ``tau1_expected``, ``tau2_expected``; ``posterior_predictive``: ``tau1``,
            ``tau2``; ``sample_stats``: ``loglik``, ``n_classes_used``, ``n_augmented``;
            ``observed_data``: ``fk`` (of the key cells); ``constant_data``: ``n``,
            ``N``. With
            ``overdispersion``, ``posterior`` also holds ``kappa`` (chain, draw; inf =
            Poisson) and ``attrs["overdispersion"]`` the cross-validation summary (JSON).
            Provenance as :func:`sdcbayes.inference.fit` stamps it, on ``attrs`` and the
            posterior group's attrs (:func:`sdcbayes.inference.posterior.provenance`):
            ``sdcbayes_version``, ``model``, ``model_options``, ``priors``,
            ``data_summary`` (:meth:`data_summary`), ``settings`` (the arguments, with
            the seed used) and ``provenance`` (versions of the numerical stack, command,
            time).
        """
        for name, v, lo in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1),
                            ("thin", thin, 1)):
            if int(v) != v or v < lo:
                raise InputError(f"{name} must be an integer >= {lo}; got {v!r}")
        threads = _chain_threads(cores, int(chains))
        if init not in ("em", "bootstrap", "margins"):
            raise InputError(f"init must be 'em', 'bootstrap' or 'margins'; got {init!r}")
        if store not in ("uniques", "all"):
            raise InputError(f"store must be 'uniques' or 'all'; got {store!r}")
        if not isinstance(label_moves, bool | np.bool_):
            raise InputError(f"label_moves must be True or False; got {label_moves!r}")
        if isinstance(split_merge, bool) or not isinstance(split_merge, int | np.integer) \
                or split_merge < 0:
            raise InputError(f"split_merge must be an integer >= 0 (proposals per sweep); "
                             f"got {split_merge!r}")
        if isinstance(ppc, bool) or not isinstance(ppc, int | np.integer) or ppc < 0:
            raise InputError(f"ppc must be an integer >= 0 (predictive replicates per chain); "
                             f"got {ppc!r}")
        if not isinstance(store_profiles, bool | np.bool_):
            raise InputError(f"store_profiles must be True or False; got {store_profiles!r}")
        if start_classes is not None:
            if isinstance(start_classes, bool) or not isinstance(start_classes, int | np.integer) \
                    or not 1 <= start_classes <= self.H:
                raise InputError(f"start_classes must be an integer from 1 to the number of "
                                 f"classes ({self.H}); got {start_classes!r}")
            if init == "margins":
                raise InputError("start_classes sets the classes of the EM start: it needs "
                                 "init='em' or 'bootstrap'")
        em_restarts = check_whole("em_restarts", em_restarts, 1)
        # a number, finite (inf failed in NumPy's Poisson after the EM starts) and >= n
        if N is not None and (isinstance(N, bool | np.bool_) or not isinstance(
                N, int | float | np.integer | np.floating) or not np.isfinite(N)
                or not N >= self.n):
            raise InputError(f"N (population size) must be a finite number at least the sample "
                             f"size {self.n:g}; got {N!r}")
        target = (np.flatnonzero(self.key_counts == 1) if store == "uniques"
                  else np.arange(self.key_codes.shape[0]))
        # One seed for the cross-validations and the chains, stamped, so that the run can
        # be repeated
        random_seed = _seed_to_stamp(random_seed)
        settings = self._sample_settings(
            draws=draws, tune=tune, chains=chains, thin=thin, N=N, random_seed=random_seed,
            store=store, init=init, em_restarts=em_restarts, overdispersion=overdispersion,
            kappa_prior=kappa_prior, cluster_correction=cluster_correction,
            profile_mass=profile_mass, label_moves=label_moves, start_classes=start_classes,
            split_merge=split_merge, ppc=ppc, store_profiles=store_profiles)
        # the chains' seeds are the root's first children, as always; the cross-validations
        # (overdispersion, profile mass, cluster correction) and the predictive check draw
        # from children whose spawn keys do not depend on `chains`, so that one seed gives
        # one kappa posterior (and one set of replicates per draw) whatever the number of
        # chains, and the chains' draws are those of a run without them
        seeds, cv_seed, ppc_seed = _sample_seeds(random_seed, int(chains))
        kappa_grid, od_summary = None, None
        if kappa_prior is not None:
            if not (isinstance(overdispersion, str) and overdispersion == "cv"):
                raise InputError("kappa_prior is the prior of the cross-validated kappa: it "
                                 "needs overdispersion='cv'")
            if isinstance(kappa_prior, str):
                kappa_prior = parse_kappa_prior(kappa_prior)
            _prior_mass(KAPPA_GRID, kappa_prior)  # a bad prior fails before any work
        self._check_cluster_correction(cluster_correction)  # before the cross-validations
        if profile_mass is not None:
            if profile_mass not in ("cv", "span") or not (isinstance(overdispersion, str)
                                                          and overdispersion == "cv"):
                raise InputError("profile_mass must be None, 'cv' or 'span', which the "
                                 "overdispersion's cross-validation chooses and which need "
                                 f"overdispersion='cv'; got {profile_mass!r} with "
                                 f"overdispersion={overdispersion!r}")
            # the same cross-validation as overdispersion="cv" below, per candidate mass
            choice = (profile_mass_cv if profile_mass == "cv" else profile_mass_span)(
                self, random_seed=cv_seed, em_restarts=max(1, int(em_restarts) - 1),
                n_splits=CV_SPLITS, ratios=CV_RATIOS,
                max_ratio=None if N is None else float(N) / self.n,
                dispersion=CV_DISPERSION,
                prior=KAPPA_PRIOR if kappa_prior is None else kappa_prior)
            idata = choice["model"].sample(
                draws=draws, tune=tune, chains=chains, thin=thin, N=N,
                random_seed=random_seed, store=store, init=init, em_restarts=em_restarts,
                overdispersion=choice["overdispersion"], cluster_correction=cluster_correction,
                progressbar=progressbar, cores=cores, label_moves=label_moves,
                start_classes=start_classes, split_merge=split_merge, ppc=ppc,
                store_profiles=store_profiles)
            import json

            from sdcbayes.inference.posterior import stamp
            from sdcbayes.provenance import json_safe

            idata.attrs["profile_mass"] = json.dumps(json_safe(choice["summary"]))
            # the chosen model stamped its own run (its prior, the prior used); the settings
            # that repeat this run are this call's (profile_mass, overdispersion="cv")
            stamp(idata, settings=settings)
            return idata
        if overdispersion is not None:
            if isinstance(overdispersion, Mapping):
                if not {"grid", "weights"} <= set(overdispersion):
                    raise InputError("an overdispersion mapping needs 'grid' and 'weights' "
                                     "(the output of overdispersion_cv)")
                g = np.asarray(overdispersion["grid"], dtype=float)
                wts = np.asarray(overdispersion["weights"], dtype=float)
                if g.shape != wts.shape or np.any(~(g > 0)) or np.any(wts < 0) \
                        or not np.isclose(wts.sum(), 1.0):
                    raise InputError("overdispersion grid must be positive (inf allowed) and "
                                     "its weights non-negative, summing to 1, same length")
                kappa_grid = (g, wts / wts.sum())
                od_summary = {k: v for k, v in overdispersion.items()
                              if k not in ("grid", "weights")}
            elif isinstance(overdispersion, str) and overdispersion != "cv":
                raise InputError(f"overdispersion must be None, 'cv' or a positive number; "
                                 f"got {overdispersion!r}")
            elif isinstance(overdispersion, str) and N is not None \
                    and np.all(self.excess_rates(float(N)) <= 0.0):
                # a census (every lambda_k = 0, so F_k = f_k): kappa does not enter the
                # risk, and files too small to cut into parts need no refusal
                kappa_grid = (np.array([np.inf]), np.array([1.0]))
                od_summary = {"method": "census", "kappa": None,
                              "note": "N equals the sample size (every F_k = f_k): kappa "
                                      "does not enter the risk; not cross-validated"}
            elif isinstance(overdispersion, str):
                od = overdispersion_cv(self, random_seed=np.random.default_rng(cv_seed),
                                       em_restarts=max(1, int(em_restarts) - 1),
                                       n_splits=CV_SPLITS, ratios=CV_RATIOS,
                                       max_ratio=None if N is None else float(N) / self.n,
                                       dispersion=CV_DISPERSION,
                                       prior=KAPPA_PRIOR if kappa_prior is None else kappa_prior)
                kappa_grid = (od["grid"], od["weights"])
                od_summary = {k: v for k, v in od.items() if k not in ("grid", "weights")}
            else:
                k = float(overdispersion)
                if not k > 0:
                    raise InputError(f"overdispersion (kappa) must be positive; got {k!r}")
                kappa_grid = (np.array([k]), np.array([1.0]))
                od_summary = {"method": "fixed", "kappa": k}
        rate_factor, cc_summary = None, None
        if cluster_correction is not None:  # checked by _check_cluster_correction
            if isinstance(cluster_correction, str):  # "cv"
                # seeded from the overdispersion's stream: the chains' seeds are unchanged
                cc = cluster_rate_correction(
                    self, random_seed=np.random.default_rng(cv_seed.spawn(1)[0]),
                    em_restarts=max(1, int(em_restarts) - 2))
            else:
                cc = dict(cluster_correction)
            rate_factor = np.asarray(cc["factor"], dtype=float)
            cc_summary = {k: v for k, v in cc.items() if k != "factor"}
        # the predictive check's replicates draw from a stream of their own (ppc_seed, a
        # child of the same root), so the chains' draws are those of a run without the check
        ppc_keep = None
        if ppc:
            ppc_keep = np.unique(np.linspace(0, draws - 1, min(int(ppc), draws))
                                 .round().astype(np.int64))
        t0 = time.perf_counter()
        n_iter = tune + draws * thin
        args = (n_iter, tune, thin, None if N is None else float(N), target, init,
                int(em_restarts), kappa_grid)
        store_profiles = bool(store_profiles)
        if threads == 1:
            res = []
            for c, s in enumerate(seeds):
                rng = np.random.default_rng(s)
                report = None
                if progressbar:
                    def report(it, c=c):
                        _progress_line(c, chains, it, n_iter, time.perf_counter() - t0)
                res.append(self._gibbs_chain(rng, *args, report, rate_factor, label_moves,
                                             start_classes, split_merge, ppc_keep,
                                             store_profiles))
            label = f"chain {chains}/{chains}"
        else:
            res = self._chains_in_threads(seeds, args, rate_factor, threads, progressbar, t0,
                                          label_moves, start_classes, split_merge, ppc_keep,
                                          store_profiles)
            label = f"{chains} chains on {threads} threads"
        elapsed = time.perf_counter() - t0
        if progressbar:
            total = n_iter * (1 if threads == 1 else chains)
            _progress_line(chains - 1, chains, total, total, elapsed, done=True, label=label)
        # key by key, each chain's array freed once stacked: at 10^6 records pi and lam
        # are about 0.5 GB each, which a stack of all keys at once would hold twice
        ppc_states = [(r.pop("ppc_w"), r.pop("ppc_phi"), r.pop("ppc_kappa"))
                      for r in res] if ppc_keep is not None else None
        # the profiles: one array per column, stacked column by column
        profiles = ([np.stack([r["phi"][j] for r in res]) for j in range(len(self.keys))]
                    if store_profiles else None)
        for r in res:
            r.pop("phi", None)
        stack = {k: np.stack([r.pop(k) for r in res]) for k in list(res[0])}
        del res
        coords = {CLASS_DIM: np.arange(self.H), "cell": target}
        post = {"w": stack["w"], "alpha": stack["alpha"], "pi": stack["pi"],
                "mass_structural_zero": stack["mass_structural_zero"]}
        if kappa_grid is not None:
            post["kappa"] = stack["kappa"]
        if "phi_mass" in stack:
            post["phi_mass"] = stack["phi_mass"]
            coords["key"] = list(self.keys)
        dims = {"w": [CLASS_DIM], "pi": ["cell"], "lam": ["cell"], "fk": ["cell_all"],
                "phi_mass": ["key"]}
        if profiles is not None:
            # named as build() names them, so that both routes' posteriors read alike
            for name, levels, arr in zip(_safe_names(self.keys), self.levels, profiles,
                                         strict=True):
                post[f"phi_{name}"] = arr
                dims[f"phi_{name}"] = [CLASS_DIM, f"level_{name}"]
                coords[f"level_{name}"] = [str(v) for v in levels]
            del profiles
        groups = {}
        if N is not None:
            if "lam" in stack:  # weight classes only (_gibbs_chain)
                post["lam"] = stack["lam"]
            post["tau1_expected"] = stack["tau1_expected"]
            post["tau2_expected"] = stack["tau2_expected"]
            groups["posterior_predictive"] = {"tau1": stack["tau1"], "tau2": stack["tau2"]}
        stats = {"loglik": stack["loglik"], "n_classes_used": stack["n_classes_used"],
                 "n_augmented": stack["n_augmented"]}
        if split_merge:
            stats["split_merge_accepted"] = stack["split_merge_accepted"]
        idata = _compat.from_dict(
            posterior=post,
            sample_stats=stats,
            observed_data={"fk": self.key_counts},
            constant_data={"n": np.array(self.n), "N": np.array(np.nan if N is None else N)},
            coords={**coords, "cell_all": np.arange(self.key_codes.shape[0])},
            dims=dims,
            **groups,
        )
        if ppc_states is not None:
            self._attach_predictive(idata, ppc_states, ppc_keep, ppc_seed)
        idata.attrs.update({
            "inference": "gibbs", "n_classes": self.H, "sampling_time_s": elapsed,
            "thin": thin, "tune": tune,
        })
        # provenance as sdcbayes.inference.fit stamps it (version, model, priors, the data
        # summary, the settings with the seed): a posterior saved from here can be traced
        # and its run repeated; assess_posterior stamps its own settings over these
        from sdcbayes._version import __version__
        from sdcbayes.inference.posterior import stamp
        record = provenance_stamp(self.name)
        stamp(idata, sdcbayes_version=__version__, model=self.name,
              model_options={"n_classes": self.H}, priors=self.priors,
              data_summary=self.data_summary(), settings=settings,
              provenance={k: record[k] for k in ("versions", "command", "created")})
        if label_moves:
            idata.attrs["label_moves"] = 1
        if start_classes is not None:
            idata.attrs["start_classes"] = int(start_classes)
        if split_merge:
            idata.attrs["split_merge"] = int(split_merge)
        import json

        if self.class_weights is not None:
            # the design variable's classes: lam is extrapolated class by class. Stamped on
            # the posterior group too (with the N lam was computed for, which is otherwise
            # in constant_data only): a posterior passed on its own, as an xarray.Dataset,
            # must still be read with its own lam, not (N - n) pi (risk.posterior_assess)
            stamp = json.dumps(self.class_weights.tolist())
            idata.attrs["weight_classes"] = stamp
            idata.posterior.attrs["weight_classes"] = stamp
            if N is not None:
                idata.posterior.attrs["weight_classes_N"] = float(N)
        if od_summary is not None:
            from sdcbayes.provenance import json_safe

            idata.attrs["overdispersion"] = json.dumps(json_safe(od_summary))
        if cc_summary is not None:
            from sdcbayes.provenance import json_safe

            idata.attrs["cluster_correction"] = json.dumps(json_safe(cc_summary))
        return idata

    def observed(self):
        """The sample's counts of counts ``m`` of its key cells (dim ``count``, 1 upwards).

        What :meth:`sample` with ``ppc`` replicates, for
        :func:`sdcbayes.inference.predictive_check`.
        """
        import xarray as xr

        f = np.rint(self.key_counts).astype(np.int64)
        m = np.bincount(f)
        j = np.flatnonzero(m)
        j = j[j > 0]
        return xr.Dataset({"m": xr.DataArray(m[j], coords={"count": j}, dims="count")})

    def _attach_predictive(self, idata, ppc_states, ppc_keep, ppc_seed) -> None:
        """Replicate the counts of counts at the stored states; add them as ``m``."""
        import xarray as xr

        rng = np.random.default_rng(ppc_seed)
        design = self.class_weights is not None
        m_rep = np.stack([np.stack([replicate_counts_of_counts(
            w_c[i], [p[i] for p in phi_c], self.n, rng, kappa=k_c[i],
            structural_zeros=self.structural_zeros, design=design)
            for i in range(ppc_keep.size)]) for w_c, phi_c, k_c in ppc_states])
        da = xr.DataArray(m_rep, dims=("chain", "ppc_draw", "count"), coords={
            "chain": np.arange(m_rep.shape[0]), "ppc_draw": ppc_keep,
            "count": np.arange(1, PPC_MAX_COUNT + 1)})
        da.attrs["tail_from"] = PPC_MAX_COUNT
        _compat.set_variable(idata, "posterior_predictive", "m", da)

    def _chains_in_threads(self, seeds, args, rate_factor, threads: int, progressbar: bool,
                           t0: float, label_moves: bool = False,
                           start_classes: int | None = None,
                           split_merge: int = 0,
                           ppc_keep: np.ndarray | None = None,
                           store_profiles: bool = False) -> list[dict[str, np.ndarray]]:
        """Run :meth:`_gibbs_chain` once per seed on ``threads`` threads, in seed order.

        Each chain reports its sweep to a slot of its own (the progress line adds them up)
        and stops at its next report once the caller is interrupted, so Ctrl-C does not
        wait for every chain to finish.
        """
        from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

        for j in range(len(self.keys)):  # fill the lazy caches before threads share them
            self.phi_concentration(j)
        n_iter, chains = args[0], len(seeds)
        done = [0] * chains
        stop = []

        def run(c, seed):
            def report(it):
                if stop:
                    raise _ChainStopped
                done[c] = it

            out = self._gibbs_chain(np.random.default_rng(seed), *args, report, rate_factor,
                                    label_moves, start_classes, split_merge, ppc_keep,
                                    store_profiles)
            done[c] = n_iter
            return out

        label = f"{chains} chains on {threads} threads"
        if progressbar:
            _progress_line(0, chains, 0, n_iter * chains, 0.0, label=label)
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="gibbs") as pool:
            futures = [pool.submit(run, c, s) for c, s in enumerate(seeds)]
            try:
                pending = set(futures)
                while pending:
                    finished, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
                    if any(f.exception() is not None for f in finished):
                        break
                    if progressbar and pending and sum(done):  # 0: its line is written
                        _progress_line(0, chains, sum(done), n_iter * chains,
                                       time.perf_counter() - t0, label=label)
            except BaseException:  # Ctrl-C: the chains stop at their next report
                stop.append(True)
                raise
            if any(f.done() and f.exception() is not None for f in futures):
                stop.append(True)
                wait(futures)
                errors = [f.exception() for f in futures if f.exception() is not None]
                raise next((e for e in errors if not isinstance(e, _ChainStopped)), errors[0])
            return [f.result() for f in futures]


#: Scale ratios of the cross-validation behind ``overdispersion="cv"``
#: (:func:`overdispersion_cv`, ``ratios``): the sample is cut at random into r parts, a
#: mixture fitted to each part predicts which of its uniques the rest of the sample
#: leaves unique, an extrapolation by the factor r. The kappa a fit needs falls as the
#: factor grows (Adult 9 keys at 5%: kappa 10 from halves, 2.3 from quarters, 0.8 from
#: eighths; the population, a factor 20 away, needs 1.2), so halves, a factor 2, see too
#: little of the clumping that matters at the population's factor N/n (10 to 100 on the
#: real designs). Quarters and eighths, mixed, come closer and carry the doubt about
#: which scale transfers: on the real designs (50 replicates, benchmarks/README.md) the bias
#: of tau1 on Scotland 13 keys at 1% fell from +20% (halves) to +3.5%, its 90% coverage
#: from 0.50 to 0.90, and the mean |bias| over the 12 designs from 4.5% to 1.6%.
CV_RATIOS = (4, 8)

#: Random partitions per ratio (:func:`overdispersion_cv`, ``n_splits``); the kappa
#: posteriors of all partitions and ratios are mixed with equal weight.
CV_SPLITS = 1

#: How :func:`overdispersion_cv` combines the ``n_splits`` partitions of one ratio
#: (``partitions``): ``"mixture"`` (default) mixes their kappa posteriors; ``"average"``
#: averages their log-likelihoods (repeated cross-validation), measured in benchmarks/README.md.
CV_PARTITIONS = "mixture"

#: How :func:`overdispersion_cv` combines its scale ratios (``combine_ratios``):
#: ``"mixture"`` (default) mixes their kappa posteriors; ``"average"`` averages their
#: log-likelihoods (a composite likelihood that counts the sample once), measured in
#: benchmarks/README.md.
CV_COMBINE_RATIOS = "mixture"

#: Variance of the held-out count in :func:`overdispersion_cv` (``dispersion``):
#: ``"parts"`` (default), the Bernoulli variance of the predicted part-uniques times a
#: quasi-likelihood dispersion estimated from how much the parts of a partition disagree
#: (the part fits' own noise), or ``"binomial"``, the Bernoulli variance alone (the
#: default before); why and what it changed: :func:`overdispersion_cv`, "Why the
#: dispersion".
CV_DISPERSION = "parts"

#: The variances :func:`overdispersion_cv` knows (``dispersion``).
CV_DISPERSIONS = ("binomial", "parts", "parts-kappa", "parts-kappa-quasi")

#: With a learnt profile mass (``priors={"phi": {"a": "marginal", "mass": "learn"}}``),
#: how the parts of :func:`overdispersion_cv` are smoothed (``part_mass``): ``"whole"``,
#: with the whole sample's masses (:meth:`LatentClassModel.fit_em`'s: type-II estimates
#: where its classes converge within its sweeps, else the starting mass 16,
#: :data:`EM_LEARN_MASS`), or ``"learn"``, each part learning its own.
CV_PART_MASS = "whole"

#: Fewest records a part may hold (:func:`overdispersion_cv`): a ratio whose parts
#: would be smaller is not used (halves are the fallback).
CV_MIN_PART = 25

#: Fewest records :func:`overdispersion_cv` splits (the CLI checks it before fitting).
CV_MIN_RECORDS = 4

#: Burn-in and kept sweeps of the one Gibbs chain fitted to each half in
#: :func:`overdispersion_cv` (``predictive="gibbs"``); chains start from EM fits.
CV_TUNE = 100
CV_DRAWS = 50

#: Values of the overdispersion kappa weighed by :func:`overdispersion_cv`:
#: log-spaced from 0.01 (strong clumping) to 10^4, and inf (Poisson cells).
KAPPA_GRID = np.concatenate([np.exp(np.linspace(np.log(1e-2), np.log(1e4), 61)), [np.inf]])


#: Half-Cauchy(0, 1) on the coefficient of variation :math:`\sigma_u = \kappa^{-1/2}`
#: of the cell effects (Gelman 2006).
KAPPA_PRIOR_HALF_CAUCHY = ("half-cauchy", 1.0)

#: Uniform in log kappa over the grid, plus the Poisson point: the default before the
#: held-out count's dispersion (:data:`CV_DISPERSION`) was estimated.
KAPPA_PRIOR_LOG_UNIFORM = ("log-uniform", None)

#: Default prior of the overdispersion (:func:`kappa_prior`): the half-Cauchy on the
#: coefficient of variation, adopted with :data:`CV_DISPERSION` (the flatter likelihood
#: lets the prior matter; :func:`overdispersion_cv`, "Why the dispersion").
KAPPA_PRIOR = KAPPA_PRIOR_HALF_CAUCHY

#: Default weighting of the held-out count in :func:`overdispersion_cv`: every
#: part-unique alike (``"all"``); ``"population"`` weighs each by its population
#: uniqueness under the whole sample's fit (measured as an option, benchmarks/README.md).
CV_FOCUS = "all"

#: Default fit of each half in :func:`overdispersion_cv`: ``"em"`` (one penalised-EM
#: point, as validated); ``"gibbs"`` (posterior draws) is the alternative measured in
#: benchmarks/README.md.
CV_PREDICTIVE = "em"

#: How :func:`overdispersion_cv` draws its parts (``parts``): ``"random"`` (default),
#: simple random subsets of the sample whatever its design; ``"weights"``, on a sample
#: with weight classes, subsets whose within-class fractions make the rest of the sample
#: extrapolate each class at a rate proportional to the population's, measured as an
#: option (benchmarks/README.md).
CV_PARTS = "random"


def kappa_prior(grid, prior=KAPPA_PRIOR) -> np.ndarray:
    r"""Prior mass of each point of a kappa grid (inf = Poisson cells).

    The cell effects :math:`u_k \sim \mathrm{Gamma}(\kappa, \kappa)` have
    coefficient of variation :math:`\sigma_u = \kappa^{-1/2}`, a scale parameter of
    a hierarchical model. ``("half-cauchy", A)``: :math:`\sigma_u \sim
    \mathrm{Cauchy}^+(0, A)` (Gelman 2006, "Prior distributions for variance
    parameters in hierarchical models", section 5, recommends it with a modest
    scale); each grid point gets the mass of :math:`\sigma_u` between the
    geometric midpoints to its neighbours, inf the mass below the smallest finite
    point's cell. ``("log-uniform", None)``: equal mass per point, i.e. uniform in
    :math:`\log\kappa` over the grid's range, plus the Poisson point. Gelman (2006,
    section 4) warns against it: where the data cannot rule out :math:`\sigma_u
    \to 0` (the held-out prediction is flat in kappa above a few, the sparse
    designs at 1%, benchmarks/README.md), the posterior follows the arbitrary
    upper end of the grid, here half of the mass on :math:`\kappa > 10`.
    ``("log-normal", (m, s))``: :math:`\log\kappa \sim N(m, s^2)`, each finite point
    taking the mass between the midpoints (log scale) to its neighbours, inf the mass
    above the largest point's upper midpoint: what a methodologist knows of kappa from
    elsewhere, e.g. the design's kappa on a previous census (``benchmarks/kappa_transfer.py``
    measures how far such knowledge carries).
    """
    g = np.asarray(grid, dtype=float)
    kind, scale = prior
    if kind == "log-uniform":
        return np.full(g.size, 1.0 / g.size)
    if kind == "log-normal":
        if np.ndim(scale) != 1 or len(scale) != 2:
            raise InputError(f"a log-normal kappa prior is ('log-normal', (mean, sd)); "
                             f"got {prior!r}")
        return _log_normal_mass(g, float(scale[0]), float(scale[1]))
    if kind != "half-cauchy" or not (scale is not None and float(scale) > 0):
        raise InputError(f"kappa prior must be ('half-cauchy', scale > 0), ('log-uniform', "
                         f"None) or ('log-normal', (mean, sd > 0)); got {prior!r}")
    fin = np.isfinite(g)
    sig = np.where(fin, 1.0 / np.sqrt(np.where(fin, g, 1.0)), 0.0)
    order = np.argsort(sig)
    s = sig[order]
    pos = s[s > 0]
    if pos.size == 0:
        raise InputError("the kappa grid needs at least one finite value")
    mids = np.sqrt(pos[:-1] * pos[1:])
    ratio = pos[1] / pos[0] if pos.size > 1 else 2.0
    lower_first = pos[0] / np.sqrt(ratio)
    edges = np.concatenate([[lower_first], mids, [np.inf]])
    cdf = 2.0 / np.pi * np.arctan(edges / float(scale))
    mass_pos = np.diff(cdf)
    mass = np.empty(g.size)
    n_zero = s.size - pos.size  # the inf point(s)
    sorted_mass = np.concatenate([np.full(n_zero, cdf[0] / max(n_zero, 1)), mass_pos])
    if n_zero == 0:
        sorted_mass[0] += cdf[0]  # no Poisson point: its mass goes to the largest kappa
    mass[order] = sorted_mass
    return mass / mass.sum()


def parse_kappa_prior(text: str) -> tuple[str, Any]:
    r"""The prior tuple of :func:`kappa_prior` from its text (command lines).

    ``half-cauchy`` or ``half-cauchy:A`` (scale A > 0 of the half-Cauchy on
    :math:`\kappa^{-1/2}`, default 1), ``log-uniform``, or ``log-normal:M:S`` (log kappa
    normal with mean M and sd S > 0; e.g. a kappa calibrated on a census of the same
    population, ``benchmarks/kappa_transfer.py --within-file``).
    """
    kind, _, rest = str(text).strip().partition(":")
    try:
        if kind == "log-uniform" and not rest:
            return KAPPA_PRIOR_LOG_UNIFORM
        if kind == "half-cauchy":
            scale = float(rest) if rest else 1.0
            if scale > 0 and np.isfinite(scale):
                return ("half-cauchy", scale)
        if kind == "log-normal":
            mean, sd = (float(x) for x in rest.split(":"))
            if np.isfinite(mean) and np.isfinite(sd) and sd > 0:
                return ("log-normal", (mean, sd))
    except ValueError:
        pass
    raise InputError(f"kappa prior {text!r} is not one of half-cauchy[:<scale > 0>], log-uniform, "
                     f"log-normal:<mean of log kappa>:<sd > 0> (e.g. log-normal:-0.4:0.8)")


def _prior_label(prior) -> str:
    """``half-cauchy(1)``, ``log-uniform``, ``log-normal(-0.4, 0.9)``."""
    kind, scale = prior
    if scale is None:
        return f"{kind}"
    if np.ndim(scale):
        return f"{kind}(" + ", ".join(f"{v:g}" for v in scale) + ")"
    return f"{kind}({scale:g})"


# the module's kappa_prior under another name, for methods whose keyword shadows it
_prior_mass = kappa_prior


def _log_normal_mass(grid: np.ndarray, mean: float, sd: float) -> np.ndarray:
    """Mass of N(mean, sd^2) on log kappa at each point of ``grid`` (inf allowed)."""
    from scipy import stats

    if not (np.isfinite(mean) and np.isfinite(sd) and sd > 0):
        raise InputError(f"a log-normal kappa prior needs a finite mean and sd > 0; "
                         f"got {(mean, sd)!r}")
    fin = np.isfinite(grid)
    lg = np.log(grid[fin])
    order = np.argsort(lg)
    ls = lg[order]
    if ls.size == 0:
        raise InputError("the kappa grid needs at least one finite value")
    step = ls[-1] - ls[-2] if ls.size > 1 else 1.0
    inner = np.concatenate([[-np.inf], (ls[1:] + ls[:-1]) / 2, [ls[-1] + step / 2]])
    cdf = stats.norm.cdf(inner, loc=mean, scale=sd)
    mass = np.zeros(grid.size)
    fin_mass = np.diff(cdf)
    if np.any(~fin):
        mass[np.flatnonzero(~fin)] = (1.0 - cdf[-1]) / np.count_nonzero(~fin)
    else:
        fin_mass[-1] += 1.0 - cdf[-1]  # no Poisson point: the tail goes to the largest kappa
    mass[np.flatnonzero(fin)[order]] = fin_mass
    return mass / mass.sum()


def _part_model(model: LatentClassModel, row_counts, priors) -> LatentClassModel:
    """The model on a subset of the records: ``row_counts`` per model row (0 = absent)."""
    keep = row_counts > 0
    return LatentClassModel(
        model.codes[keep], row_counts[keep], model.n_levels, keys=model.keys,
        levels=model.levels, n_classes=model.H, structural_zeros=model.structural_zeros,
        priors=priors, class_weights=model.class_weights,
        key_index=(None if model.class_weights is None
                   else np.unique(model.key_index[keep], return_inverse=True)[1]))


def _weighted_part_sizes(n_g: np.ndarray, excess: np.ndarray, target: float) -> np.ndarray:
    r"""Records per weight class of a part mirroring the population's extrapolation.

    The within-class fraction :math:`s_g = 1/(1 + c\,e_g)` (``excess`` :math:`e_g =
    \bar w_g - 1`) leaves :math:`(1 - s_g)/s_g = c\,e_g` rest records per part record
    in class g: proportional to the population's rate. c (bisection on log c) makes the
    part hold ``target`` records; where the classes of rate 0 alone hold more, c is as
    large as the bisection goes. Each class keeps at least one record when it has
    one, and at most all of them.
    """
    n_g = np.asarray(n_g, dtype=float)
    excess = np.asarray(excess, dtype=float)

    def size(log_c):
        return float((n_g / (1.0 + np.exp(log_c) * excess)).sum())

    lo, hi = -30.0, 30.0
    for _ in range(200):  # size() falls as c grows
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if size(mid) > target else (lo, mid)
    s = 1.0 / (1.0 + np.exp(0.5 * (lo + hi)) * excess)
    return np.clip(np.rint(n_g * s), np.minimum(n_g, 1), n_g).astype(np.int64)


def _mixed_grid_posterior(logliks, prior_mass: np.ndarray) -> np.ndarray:
    """Equal mixture over ``logliks`` of the grid posteriors exp(loglik) x prior."""
    weights = np.zeros(prior_mass.size)
    for loglik in logliks:
        w = np.exp(loglik - loglik.max()) * prior_mass
        weights += w / w.sum() / len(logliks)
    return weights


#: Spawn keys of the auxiliary random streams of :meth:`LatentClassModel.sample`, children
#: of the root ``SeedSequence(random_seed)`` next to the chains' (spawn keys 0 to chains - 1):
#: the cross-validations (overdispersion, profile mass, cluster correction) and the posterior
#: predictive check. Fixed, so that they do not depend on the number of chains.
CV_SPAWN_KEY = 2**32 - 1
PPC_SPAWN_KEY = 2**32 - 2


def _sample_seeds(random_seed, chains: int):
    """The chains' seeds and the cross-validation's and predictive check's SeedSequences.

    The chains' are ``SeedSequence(random_seed).spawn(chains)`` (their draws are those of
    every earlier version); the other two are children of the same root at the fixed spawn
    keys :data:`CV_SPAWN_KEY` and :data:`PPC_SPAWN_KEY`, the same whatever ``chains``.
    """
    root = np.random.SeedSequence(random_seed)
    chain_seeds = root.spawn(chains)

    def child(key):
        return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, key),
                                      pool_size=root.pool_size)

    return chain_seeds, child(CV_SPAWN_KEY), child(PPC_SPAWN_KEY)


def overdispersion_cv(model: LatentClassModel, *, random_seed=None, em_restarts: int = 2,
                      grid=None, n_splits: int = 1, prior=KAPPA_PRIOR,
                      predictive: str = CV_PREDICTIVE, ratios=CV_RATIOS,
                      max_ratio: float | None = None,
                      dispersion: str = CV_DISPERSION,
                      part_mass: str = CV_PART_MASS,
                      focus: str = CV_FOCUS, by_cluster: bool = True,
                      partitions: str = CV_PARTITIONS,
                      combine_ratios: str = CV_COMBINE_RATIOS,
                      parts: str = CV_PARTS) -> dict[str, Any]:
    r"""Cross-validated gamma overdispersion of the cells around a latent-class fit.

    The mixture smooths: on sparse keys it spreads probability over combinations
    that do not occur and gives the observed sample uniques too small a
    :math:`\pi_k`, so it calls too many of them population-unique. The
    overdispersed model (module docstring, "Overdispersion") lets each cell's rate
    be :math:`\pi_k u_k`, :math:`u_k \sim \mathrm{Gamma}(\kappa, \kappa)`; the sample
    alone tells how large the departure is, by the prediction the risk itself
    rests on. Cut the records at random into r equal parts (r a scale ratio of
    ``ratios``, default :data:`CV_RATIOS`); fit the mixture to one part A of size
    :math:`n_A \approx n/r` (``predictive="em"``, the default :data:`CV_PREDICTIVE`:
    one penalised-EM fit, :meth:`LatentClassModel.fit_em`; ``"gibbs"``: one chain of
    the Gibbs sampler, :data:`CV_TUNE` + :data:`CV_DRAWS` sweeps from an EM start);
    for every A-unique cell predict the probability that the rest of the sample
    holds none of it, i.e. that the cell is unique in the "population" of size n
    (averaged over A's posterior draws of :math:`\pi_k` with ``"gibbs"``):

    .. math:: P_k(\kappa) = \left(\frac{b_k}{b_k + (n - n_A)\pi_k}\right)^{\kappa + 1},
              \qquad b_k = \kappa + n_A\pi_k,

    (:func:`prob_population_unique` with sample A, population the whole sample);
    the same for every part. The observed count T of part-uniques that are sample
    uniques (summed over the parts) against the prediction
    :math:`\sum_k P_k(\kappa)` gives, with the normal approximation to its
    Poisson-binomial distribution (variance :math:`V = \sum_k P_k(1 - P_k)` at
    the Poisson limit, times the dispersion :math:`\hat\phi \ge 1` of the parts,
    ``dispersion``), a likelihood for :math:`\kappa`, which with the prior
    :func:`kappa_prior` over :data:`KAPPA_GRID` (default half-Cauchy(0, 1) on
    :math:`\kappa^{-1/2}`; or uniform in :math:`\log\kappa` plus the Poisson
    point) gives one grid posterior per partition; the result is their equal
    mixture over the ``n_splits`` partitions of every ratio.

    Why the dispersion. Each part's mixture is fitted to n/r records, and its
    prediction of the part's count is noisier than the Bernoulli variance V says:
    on the sparse real key sets the parts of one partition disagree 1.4-3.7 times
    more (in variance) than V allows (medians per design; Adult 9 keys at 1%: 2.3,
    Scotland 13 keys at 10%: 3.7), and a kappa
    posterior that ignores it is too sharp -- the tau1 errors there are 1.7 times
    the intervals' implied standard deviation. The quasi-likelihood dispersion
    flattens the likelihood by that factor; with a flatter likelihood the prior
    matters, and the half-Cauchy (Gelman 2006, section 4) does not hand the grid's
    arbitrary Poisson end the mass the log-uniform prior does (Adult 9 keys at 1%:
    median kappa 0.9 -> 2.0 and tau1 bias +4.7% -> +7.6% with the log-uniform prior,
    1.0 and +5.5% with the half-Cauchy). Measured at 50 replicates per real design
    (benchmarks/README.md): designs meeting the whole goal 4 -> 6 of 12, mean relative
    RMSE of tau1 7.8% -> 7.5%, mean |bias| 1.6% -> 2.2%.
    When the Poisson prediction is at or below T the data show no clumping and the
    posterior moves to large :math:`\kappa` (towards Poisson). Measured, that happens
    where the EM point puts tau1 with Poisson cells below the truth (Adult 6 and
    Scotland 7 keys, most held-out designs; ``benchmarks/em_vs_gibbs.py``,
    benchmarks/README.md, "The kappa rules on the four held-out key sets"): the risk is then the
    Gibbs average's with Poisson cells, which the EM parts cannot check.

    Why several parts rather than halves. Each part extrapolates by the factor r,
    the population by N/n (10 to 100 on the real designs), and the kappa a fit
    needs falls as the factor grows: on Adult 9 keys at 5% (10 replicates,
    ``benchmarks/overdispersion_oracle.py``) the median kappa is 10 from halves,
    2.3 from quarters, 0.8 from eighths, and the kappa that reproduces the true
    tau1 is 1.2. Halves (``ratios=2``, the setting before) therefore overstate tau1
    where clumping matters most (Scotland 13 keys at 1%: +20%). Quarters and
    eighths mixed (the default) come closer and carry the doubt about which scale
    transfers. A ratio is used only when its parts hold :data:`CV_MIN_PART`
    records and it does not exceed ``max_ratio`` (the population's N/n, when
    known: a sample of half the population is not extrapolated eightfold);
    halves are the fallback. Measured since (``benchmarks/kappa_scale.py``, benchmarks/README.md,
    "What the cross-validation's κ reads"): what lowers a ratio's kappa is mostly its
    smaller part, not its longer extrapolation (Adult 9 keys at 5%: predicting in the
    rest once, halves read log kappa 1.35 and eighths 0.07; eighths predicting 7 times
    rather than once, 0.28 lower), and the EM plug-in of the whole sample needs a kappa
    0.7-0.9 (log) above the Gibbs average's there, which the parts' extra smoothing
    happens to offset.

    The options measured with halves, and why they were not adopted then (the
    half-Cauchy prior is now the default, with the dispersion). ``predictive="gibbs"``: the
    risk of the whole sample averages :math:`P(F_k = 1 \mid \pi, \kappa)` over
    the posterior of :math:`\pi`, which for rare cells is larger than the plug-in
    at a point fit (Jensen), so a kappa tuned on plug-in predictions is too large
    for it. ``prior=KAPPA_PRIOR_HALF_CAUCHY``: where the held-out count cannot tell
    kappa = 3 from Poisson (most sample uniques stay unique in any half: the
    sparse designs at 1%), a prior uniform in :math:`\log\kappa` hands the answer
    to the grid's arbitrary upper end (Gelman 2006, section 4). Together (two
    halvings, 50 replicates per real design, benchmarks/README.md) they lower the
    bias of tau1 on the sparse key sets (Adult 9 keys: +9.5/+5.0/+2.6% at
    1/5/10% become +6.7/+3.1/+1.0%; Scotland 13 keys at 1%: +19.9% becomes +16.9%)
    and raise its coverage there (Adult 9 keys at 5%: 0.32 to 0.56), but move the
    dense ones down (Scotland 7 keys: -1.8/-3.9/-1.4% become -7.4/-7.7/-4.9%;
    Adult 6 keys at 5%: -0.6% becomes -2.7%, coverage 0.92 to 0.84): the mean
    |bias| over the designs does not fall. What fits at the half-sample scale
    does not carry over to the population scale the same way on every key set.
    Gibbs-fitted parts measured again with quarters and eighths, on the four held-out
    key sets (benchmarks/README.md, "The kappa rules on the four held-out key sets"): more clumping
    read on Scotland's labour keys (tau1 +9.5% -> +7.3% at 5%), but Adult's
    relationship keys at 1% go from +5.5% to +8.4% and its work keys at 5% from -1.0%
    to -3.2%; EM parts stay the default.

    This is an empirical-Bayes ("cut") estimate: :math:`\kappa` is learnt from
    held-out predictions and then used with the posterior of the mixture on the
    whole sample, without feeding back into the classes. It assumes the relative
    departure from the mixture is about the same at the scale of the
    cross-validation (extrapolation by the factor r) as at the scale of the
    population (factor N/n). Measured on the real designs (benchmarks/README.md), it
    removes most of the mixture's overstatement of tau1 on the sparsest keys.

    Parameters
    ----------
    model : LatentClassModel
        The model on the whole sample (its cells, levels, structural zeros, H).
    random_seed : int or numpy.random.Generator, optional
        Seeds the partitions and the EM starts.
    em_restarts : int
        EM random starts per part.
    grid : array_like, optional
        Values of kappa (default :data:`KAPPA_GRID`).
    n_splits : int
        Independent random partitions per ratio; the returned posterior is the
        equal mixture of theirs, so that it also carries the split-to-split
        variability of the held-out prediction (fits of a part differ from split
        to split).
    prior : tuple
        ``(kind, scale)`` for :func:`kappa_prior`; default :data:`KAPPA_PRIOR`.
    predictive : {"em", "gibbs"}
        How each part is fitted: one EM point (default :data:`CV_PREDICTIVE`) or
        posterior draws.
    ratios : int or sequence of int
        Scale ratios r >= 2 (parts of 1/r of the sample; 2 = halves); default
        :data:`CV_RATIOS`.
    max_ratio : float, optional
        The population's extrapolation factor N/n: ratios above it are not used.
    dispersion : {"binomial", "parts", "parts-kappa", "parts-kappa-quasi"}
        The variance of the held-out count: the Bernoulli variance
        :math:`V = \sum_k P_k(1 - P_k)` at the Poisson limit, or
        :math:`\phi V` with the quasi-likelihood dispersion
        :math:`\hat\phi = \max(1, \sum_j (d_j - V_j \bar d)^2 / V_j \,/\, \sum (r - 1))`,
        :math:`d_j = T_j - P_j(\hat\kappa)`, :math:`\bar d = \sum d_j / \sum V_j`, over
        the parts j of each partition (McCullagh & Nelder 1989, section 9.2),
        which also counts the noise of each part's own fit. It does not count the
        clumping of the failures (part-uniques with a twin in the rest) across parts: a
        sample cell of two records split between two parts makes two failures at once,
        so the count's variance is about rho = sum e_c^2 / sum e_c (2.0-2.1 for quarters
        on every real design) times the Bernoulli one; measured, and not corrected, in
        ``benchmarks/cv_pairs.py`` (benchmarks/README.md, "Why the kappa likelihood is
        too sharp"). ``"parts-kappa"``: :math:`\hat\phi V(\kappa)`, the Bernoulli
        variance at every kappa of the grid instead of at the Poisson limit, with the
        normal's normalising term :math:`-\frac12 \log \hat\phi V(\kappa)`: the smaller
        kappa, the more part-uniques are predicted to have a twin in the rest and the
        larger the count's variance, which the Poisson-limit V does not follow, so its
        likelihood is too sharp on the clumped side. ``"parts-kappa-quasi"``: the same
        without the normalising term (a quasi-likelihood, whose variance function enters
        only the discrepancy; the term favours the large kappa of small variance).
        Measured as options (benchmarks/README.md). Default :data:`CV_DISPERSION`
        (``"parts"``).
    part_mass : {"whole", "learn"}
        With a learnt profile mass (``priors={"phi": {"a": "marginal", "mass":
        "learn"}}``): the parts are smoothed with the whole sample's EM masses
        (:data:`EM_LEARN_MASS`: on large samples the starting mass; default
        :data:`CV_PART_MASS`; fitted to n/r records a key's mass runs towards the
        grid's top, and the parts' extra smoothing would read as clumping), or each
        part learns its own. Ignored otherwise.

    partitions : {"mixture", "average"}
        How the ``n_splits`` partitions of one ratio are combined (default
        :data:`CV_PARTITIONS`): their posteriors mixed with equal weight, or their
        log-likelihoods averaged into one posterior per ratio. The partition is an
        auxiliary randomisation: averaging the criterion over repeated partitions
        (repeated K-fold cross-validation) removes its noise from the estimate without
        reading the partitions' disagreement as doubt about kappa, which the mixture
        does. Measured with four partitions on Adult 9 keys at 1% (benchmarks/README.md):
        no gain, the partition's noise is not what makes those intervals too narrow;
        with eight (benchmarks/README.md, "Where the 1% read's scatter and offset come from"), one
        partition's median log kappa moves by sd 0.35 between the partitions of a sample
        and by 0.98 between samples.
    combine_ratios : {"mixture", "average"}
        How the ratios are combined (default :data:`CV_COMBINE_RATIOS`): their
        posteriors mixed with equal weight ("which scale transfers to the population
        is unknown"), or their log-likelihoods averaged (with ``partitions="mixture"``
        and several partitions: partition by partition, the results mixed). Every
        ratio's cross-validation uses the whole sample, so the product of their
        likelihoods would count it once per ratio; their mean is the composite
        likelihood that counts it once, centred between the ratios where they
        disagree, without the mixture's width. Measured (benchmarks/README.md): right where
        the mixture is too wide (Adult 9 keys at 5%), too narrow on the other designs.
    by_cluster : bool
        When the model knows its records' clusters (:meth:`LatentClassModel.set_record_clusters`;
        :meth:`LatentClassModel.from_microdata` with a household column), cut the sample
        into parts of whole clusters, in random order, each part ending at the first
        cluster boundary past its share of the records (default True); False cuts records.
        A ratio whose cut at cluster boundaries does not make its r parts of
        :data:`CV_MIN_PART` records each (clusters large against n/r merge parts) is not
        used, with a warning; where none is left, halves of whole clusters, or of records
        where one cluster holds more than half of the sample (warned).
    focus : {"all", "population"}
        Which part-uniques the held-out count weighs: all alike (default
        :data:`CV_FOCUS`), or each by :math:`w_k = e^{-\lambda_k}`, its probability
        of being population-unique under the whole sample's EM fit with Poisson cells
        (:math:`\lambda_k = n\sum_g \pi_{kg}(\bar w_g - 1)`, needs ``max_ratio`` =
        N/n), so that kappa is learnt where tau1 is decided: on the synthetic census
        at 1% the part-uniques of native-born persons (common cells, w near 0) read
        strong clumping that the foreign-born ones, which carry tau1, do not show.
        T, the predictions and V are then the weighted sums (V with :math:`w_k^2`).
        Measured as an option (benchmarks/README.md).
    parts : {"random", "weights"}
        How the parts are drawn (default :data:`CV_PARTS`). ``"random"``: the sample is
        cut at random, so every weight class of the rest of the sample is extrapolated
        by the same factor r - 1, while the population extrapolates class g by
        :math:`\bar w_g - 1` (:meth:`LatentClassModel.excess_rates`). ``"weights"``
        (a sample with weight classes; without one it is ``"random"``): each of the r
        parts of a partition is drawn on its own, class by class, with the
        within-class fraction :math:`s_g = 1 / (1 + c(\bar w_g - 1))`, c set so that
        the part holds about n/r records; the rest of class g then holds
        :math:`\rho_g = (n_g - a_g)/a_g` records per part record, proportional to
        the population's rate, and the held-out prediction is class by class,
        :math:`\lambda_k = n_A \sum_g \pi_{kg}\rho_g`. Needs ``predictive="em"``
        and no record clusters (``by_cluster=False`` or none known).

    Returns
    -------
    dict
        ``grid``, ``weights`` (posterior over the grid), ``kappa_hat`` (posterior
        mode), ``kappa_median``, ``observed`` (T: every sample unique is unique in its
        part, so T is the (weighted) count of sample uniques, the same for every
        partition; with weighted parts, which overlap, the last partition's count),
        ``predicted_poisson`` (the prediction at :math:`\kappa = \infty`, averaged over
        the partitions), ``sd`` (:math:`\sqrt V`), ``method``,
        ``n_splits``, ``ratios`` (those used), ``kappa_median_by_ratio`` (each ratio's
        own posterior median of kappa, its partitions combined as ``partitions`` says;
        inf = Poisson), ``partition_ratios`` and
        ``partition_loglik`` (each partition's ratio and its log-likelihood over the
        grid, prior not included), ``partition_variance`` (the held-out count's variance
        each log-likelihood uses, over the grid: constant but with ``"parts-kappa"``),
        ``partitions``, ``combine_ratios``, ``prior``,
        ``predictive``,
        ``dispersion`` (the :math:`\phi` used; 1 with ``"binomial"``),
        ``partition_parts`` (the parts each partition really has), ``smallest_part``
        (records in the smallest part), ``prior_dominated`` (True where the parts hold
        fewer than :data:`CV_MIN_PART` records: the kappa posterior is then mostly the
        prior; warned), ``caveats`` (where something asked could not be done: the
        warning's text); with record clusters, ``clusters`` and ``cut`` (``"clusters"``
        or ``"records"``); with
        ``part_mass="whole"`` and a learnt mass, ``part_phi_mass`` (the parts' masses);
        with weighted parts, ``parts``.
    """
    rng = np.random.default_rng(random_seed)
    grid = KAPPA_GRID if grid is None else np.asarray(grid, dtype=float)
    if int(n_splits) != n_splits or n_splits < 1:
        raise InputError(f"n_splits must be a whole number >= 1; got {n_splits!r}")
    if predictive not in ("gibbs", "em"):
        raise InputError(f"predictive must be 'gibbs' or 'em'; got {predictive!r}")
    ratios = [ratios] if np.isscalar(ratios) else list(ratios)
    if not ratios or any(int(r) != r or r < 2 for r in ratios):
        raise InputError(f"ratios must be whole numbers >= 2 (parts of 1/r of the sample); "
                         f"got {ratios!r}")
    # records -> model rows (cells, or (cell, weight class) pairs); uniqueness is of key
    # cells. With parts="random" the parts are simple random subsets of the sample whatever
    # its design, so the part-to-sample extrapolation is the same factor for every class.
    rows_f = np.rint(model.counts).astype(np.int64)
    K = rows_f.size
    f = np.rint(model.key_counts).astype(np.int64)
    C = f.size
    clustered = by_cluster and model.record_clusters is not None
    if clustered:
        cell_of_record, cluster_of_record = model.record_clusters
        cluster_size = np.bincount(cluster_of_record)
    else:
        cell_of_record = np.repeat(np.arange(K), rows_f)
    n = cell_of_record.size
    if n < CV_MIN_RECORDS:
        raise InputError(
            f"overdispersion='cv' needs at least {CV_MIN_RECORDS} records to cut the sample "
            f"into parts; got {n}. Use overdispersion=None (Poisson cells) or a fixed kappa "
            f"(overdispersion=<positive number>); for a census, pass N equal to the sample "
            f"size to LatentClassModel.sample, which then needs no cross-validation")
    # a ratio is used when its parts hold CV_MIN_PART records and it does not extrapolate
    # further than the population does (N/n); ratio 2 (halves) is the fallback
    use = [int(r) for r in ratios if n // int(r) >= CV_MIN_PART
           and (max_ratio is None or int(r) <= max(2.0, float(max_ratio)))]
    fell_back = not use  # no ratio's parts hold CV_MIN_PART records: halves (below)
    if dispersion not in CV_DISPERSIONS:
        raise InputError(f"dispersion must be one of {CV_DISPERSIONS}; got {dispersion!r}")
    by_kappa = dispersion.startswith("parts-kappa")
    if part_mass not in ("whole", "learn"):
        raise InputError(f"part_mass must be 'whole' or 'learn'; got {part_mass!r}")
    if focus not in ("all", "population"):
        raise InputError(f"focus must be 'all' or 'population'; got {focus!r}")
    if partitions not in ("mixture", "average"):
        raise InputError(f"partitions must be 'mixture' or 'average'; got {partitions!r}")
    if combine_ratios not in ("mixture", "average"):
        raise InputError(f"combine_ratios must be 'mixture' or 'average'; "
                         f"got {combine_ratios!r}")
    if parts not in ("random", "weights"):
        raise InputError(f"parts must be 'random' or 'weights'; got {parts!r}")
    by_weights = parts == "weights" and model.class_weights is not None
    if by_weights and (clustered or predictive != "em"):
        raise InputError("parts='weights' draws records class by class: it needs "
                         "predictive='em' and no record clusters (by_cluster=False)")
    if by_weights:
        class_of_record = model.codes[cell_of_record, -1]
        n_g = np.bincount(class_of_record, minlength=model.class_weights.size)
        members = [np.flatnonzero(class_of_record == g) for g in range(n_g.size)]
        N_pop = (float(max_ratio) * n if max_ratio is not None
                 else float(n_g @ model.class_weights))
        excess = model.excess_rates(N_pop)
    if focus == "population" and max_ratio is None:
        raise InputError("focus='population' weighs the part-uniques by their population "
                         "uniqueness, which needs the population size: pass max_ratio = N/n")
    part_priors = model.priors
    whole_mass = whole_fit = None
    if model.learns_phi_mass and part_mass == "whole":
        # the parts are smoothed with the whole sample's masses (EM's; EM_LEARN_MASS):
        # learnt on n/r records, a key's mass runs to the grid's top (every small class
        # looks like the marginal), and the parts' extra smoothing would be read as
        # clumping that the whole-sample fit does not have
        whole_fit = model.fit_em(n_restarts=em_restarts, random_seed=rng)
        whole_mass = [float(x) for x in whole_fit["phi_mass"]]
        part_priors = {**model.priors, "phi": {**model.priors["phi"], "mass": whole_mass}}
    cell_w = np.ones(C)
    if focus == "population":
        if whole_fit is None:
            whole_fit = model.fit_em(n_restarts=em_restarts, random_seed=rng)
        pi_g = model.key_cell_probabilities(whole_fit["w"], whole_fit["phi"], by_class=True)
        pi_g = np.asarray(pi_g).reshape(C, -1)
        cell_w = np.exp(-model.n * pi_g @ model.excess_rates(float(max_ratio) * model.n))
    prior_mass = kappa_prior(grid, prior)

    def cut(ratio, clusters):
        """One random partition into ``ratio`` parts: (perm, bounds, rates)."""
        rates = None  # the rest's records per part record, by weight class
        if by_weights:
            a_g = _weighted_part_sizes(n_g, excess, n / ratio)
            rates = np.where(a_g > 0, (n_g - a_g) / np.maximum(a_g, 1), 0.0)
            # r parts drawn on their own (they overlap): unequal fractions cannot
            # partition the sample
            drawn = [np.concatenate([rng.choice(members[g], size=int(a), replace=False)
                                     for g, a in enumerate(a_g) if a > 0])
                     for _ in range(ratio)]
            perm = np.concatenate(drawn)
            bounds = np.concatenate([[0], np.cumsum([d.size for d in drawn])]).tolist()
        elif not clusters:
            perm = rng.permutation(n)
            bounds = [i * n // ratio for i in range(ratio + 1)]  # ratio 2: the halves
        else:
            # whole clusters in random order; part i ends at the first cluster boundary
            # at or past i n / r records
            order = rng.permutation(cluster_size.size)
            rank = np.empty_like(order)
            rank[order] = np.arange(order.size)
            perm = np.argsort(rank[cluster_of_record], kind="stable")
            ends = np.cumsum(cluster_size[order])
            points = [int(ends[min(np.searchsorted(ends, i * n / ratio), ends.size - 1)])
                      for i in range(1, ratio)]
            bounds = sorted(set([0, *points, n]))  # cuts on one boundary merge parts
        return perm, bounds, rates

    def fit_partition(perm, bounds, rates):
        """One partition's parts fitted and read: (T_j, P_j, V_j, V_j(kappa)), P, V, T."""
        observed = 0
        part_t, part_p, part_v, part_pois, part_vk = [], [], [], [], []
        for a, b in itertools.pairwise(bounds):
            part = perm[a:b]
            cA = np.bincount(cell_of_record[part], minlength=K)
            part_model = _part_model(model, cA, part_priors)
            unique_a = np.flatnonzero(
                np.bincount(model.key_index, weights=cA, minlength=C) == 1)
            if predictive == "gibbs":
                # the part's posterior draws of pi for its uniques (its target cells, in
                # the order of unique_a): the same predictive as the whole sample's risk
                idata = part_model.sample(draws=CV_DRAWS, tune=CV_TUNE, chains=1,
                                          random_seed=int(rng.integers(2**63 - 1)),
                                          store="uniques", em_restarts=em_restarts)
                pi = idata.posterior["pi"].values.reshape(-1, unique_a.size)
            else:
                em = part_model.fit_em(n_restarts=em_restarts, random_seed=rng)
                # by class where the rest's rates differ by class
                pi_kg = np.asarray(part_model.key_cell_probabilities(
                    em["w"], em["phi"], model.key_codes[unique_a],
                    by_class=rates is not None))
                pi = (pi_kg if rates is None else pi_kg.sum(axis=1))[None, :]
            if rates is None:
                lam = (n - part.size) * pi
            else:  # class by class: the part's expected count times the rest's rate
                lam = part.size * (pi_kg @ rates)[None, :]
            sm = part.size * pi
            if focus == "all":
                t_a = int(np.count_nonzero(f[unique_a] == 1))  # none in the rest
                # P_k(kappa) averaged over the draws (one draw for EM), summed over
                # the A-uniques; with "parts-kappa" also their Bernoulli variance at
                # every kappa
                sums = []  # one kappa at a time: Gibbs parts hold draws x uniques
                for k in grid:
                    pk = prob_population_unique(lam, k, sm)
                    sums.append((pk.sum(axis=1).mean(),
                                 (pk * (1.0 - pk)).sum(axis=1).mean() if by_kappa else 0.0))
                part_p.append(np.array([a for a, _ in sums]))
                if by_kappa:
                    part_vk.append(np.array([b for _, b in sums]))
                p_pois = prob_population_unique(lam).mean(axis=0)
                part_v.append(float((p_pois * (1.0 - p_pois)).sum()))
                part_pois.append(float(p_pois.sum()))
            else:  # each A-unique weighted by its population uniqueness
                wa = cell_w[unique_a]
                t_a = float(wa @ (f[unique_a] == 1))
                sums = []
                for k in grid:
                    pk = prob_population_unique(lam, k, sm)
                    sums.append(((pk @ wa).mean(),
                                 (pk * (1.0 - pk) @ wa**2).mean() if by_kappa else 0.0))
                part_p.append(np.array([a for a, _ in sums]))
                if by_kappa:
                    part_vk.append(np.array([b for _, b in sums]))
                p_pois = prob_population_unique(lam).mean(axis=0)
                part_v.append(float((wa**2 * p_pois * (1.0 - p_pois)).sum()))
                part_pois.append(float(p_pois @ wa))
            observed += t_a
            part_t.append(t_a)
        return ((np.array(part_t), np.array(part_p), np.array(part_v), np.array(part_vk)),
                sum(part_pois), float(sum(part_v)), observed)

    # per partition: its ratio, its parts' sizes and its fit (T_j, P_j(kappa), V_j, ...);
    # the ratios in order, n_splits partitions each, as drawn before (same random stream)
    done = []
    caveats = []
    largest = int(cluster_size.max()) if clustered else 1
    if not fell_back:
        dropped = []
        for ratio in use:
            got = []
            for _ in range(int(n_splits)):
                perm, bounds, rates = cut(ratio, clustered)
                sizes = (np.full(ratio, n // ratio) if by_weights  # drawn on their own
                         else np.diff(bounds))
                if clustered and (sizes.size < ratio or sizes.min() < CV_MIN_PART):
                    # Parts of whole clusters are unequal: part i ends at the first cluster
                    # boundary at or past i n / r, and where a cluster spans such a point,
                    # or several, parts shrink or merge (with one cluster the only part is
                    # the whole sample: a flat likelihood, the kappa posterior its prior).
                    # The partition then does not read the ratio's scale. As for a sample
                    # too small for a ratio, the ratio is not used (halves are the fallback,
                    # below): cutting records instead would split households, whose mates'
                    # twins would read as clumping (set_record_clusters).
                    got = None
                    break
                got.append((ratio, sizes, fit_partition(perm, bounds, rates)))
            if got is None:
                dropped.append(ratio)
            else:
                done.extend(got)
        if dropped:
            use = [r for r in use if r not in dropped]
            caveats.append(
                f"cutting the {n} records at household (cluster) boundaries (largest "
                f"cluster: {largest} records) does not give ratio(s) {dropped} their parts "
                f"of at least {CV_MIN_PART} records each: "
                + (f"ratio(s) {dropped} not used" if use else "halves used instead"))
    if not done:
        # halves: the fallback where no ratio's parts reach CV_MIN_PART records (a small
        # sample), or where clusters leave no ratio. Of whole clusters, as the sample was
        # drawn, unless one cluster holds more than half of the records: where that one
        # comes last in the random order, the cut at n / 2 makes one part, the whole
        # sample; the records are cut instead (its mates' shared cells may then read as
        # clumping, which the caveat says)
        use = [2]
        by_clusters = clustered and 2 * largest <= n
        if clustered and not by_clusters:
            caveats.append(
                f"one household (cluster) holds {largest} of the {n} records, more than "
                "half: the halves cut records, not households, and household mates' shared "
                "cells may read as clumping")
        for _ in range(int(n_splits)):
            perm, bounds, rates = cut(2, by_clusters)
            sizes = np.full(2, n // 2) if by_weights else np.diff(bounds)
            done.append((2, sizes, fit_partition(perm, bounds, rates)))
        cut_by = "clusters" if by_clusters else "records"
    else:
        cut_by = "clusters" if clustered else "records"
    fits = [fit for _, _, (fit, _, _, _) in done]
    ratio_of = [ratio for ratio, _, _ in done]  # each partition's ratio
    parts_of = [int(sizes.size) for _, sizes, _ in done]
    smallest = min(int(sizes.min()) for _, sizes, _ in done)
    pred_pois = [pois for _, _, (_, pois, _, _) in done]
    var = [v for _, _, (_, _, v, _) in done]
    observed = done[-1][2][3]
    # the parts hold fewer than CV_MIN_PART records (a sample of fewer than 2 CV_MIN_PART
    # records, or clusters too large): each part's fit and its held-out count are mostly
    # noise, and the kappa posterior mostly its prior. Never on a sample whose ratios
    # hold CV_MIN_PART records (their parts have n // r or, of clusters, were checked)
    prior_dominated = smallest < CV_MIN_PART
    if prior_dominated:
        caveats.append(
            f"the cross-validation's smallest part holds {smallest} records, fewer than "
            f"{CV_MIN_PART}: the kappa posterior is mostly its prior (prior-dominated)")
    if caveats:
        from sdcbayes.exceptions import warn_at_caller
        from sdcbayes.inference.diagnostics import SdcbayesWarning

        warn_at_caller("overdispersion cv: " + "; ".join(caveats), SdcbayesWarning)
    phi = 1.0
    if dispersion != "binomial":
        # quasi-likelihood dispersion (McCullagh & Nelder 1989, sec. 9.2): the parts'
        # discrepancies d_j = T_j - P_j at each partition's best kappa, less their common
        # share c V_j of the total (which kappa may not absorb at the grid's Poisson end),
        # against their Bernoulli variances V_j, on (parts - 1) degrees of freedom per
        # partition. The part fits are noisy (a mixture fitted to n/r records), which V_j
        # does not count.
        chi2, df = 0.0, 0
        for t, pj, v, _ in fits:
            i = int(np.argmin(np.abs(t.sum() - pj.sum(axis=0))))
            v = np.maximum(v, 1e-9)
            d = t - pj[:, i]
            resid = d - v * d.sum() / v.sum()
            chi2 += float((resid**2 / v).sum())
            df += t.size - 1
        phi = max(1.0, chi2 / df) if df > 0 else 1.0
    logliks, variances = [], []
    for t, pj, v, vk in fits:
        # summed part by part in Python, as the stored benchmark results were
        # (the floor of 1 on V keeps a near-empty count from sharpening the likelihood; with
        # focus="population" V is a sum of squared weights, on another scale: no floor)
        v_floor = 1.0 if focus == "all" else 1e-9
        if by_kappa:
            # the count's variance at each kappa; "parts-kappa" with the normal's
            # normalising term, which no longer cancels between the grid points
            v_k = phi * np.maximum(vk.sum(axis=0), v_floor)
            loglik = -((t.sum() - sum(pj)) ** 2) / (2.0 * v_k)
            if dispersion == "parts-kappa":
                loglik = loglik - 0.5 * np.log(v_k)
        else:
            loglik = -((t.sum() - sum(pj)) ** 2) / (2.0 * phi * max(sum(v.tolist()), v_floor))
            v_k = np.full(grid.size, phi * max(sum(v.tolist()), v_floor))
        logliks.append(loglik)
        variances.append(v_k)
    by_ratio = [[ll for ll, r in zip(logliks, ratio_of, strict=True) if r == ratio]
                for ratio in use]
    if partitions == "average":
        # one log-likelihood per ratio: the mean over its partitions
        by_ratio = [[np.mean(lls, axis=0)] for lls in by_ratio]
    # each ratio's own posterior median (its partitions as combined above): how far the
    # scales' reads disagree, which the mixture over the ratios turns into width
    ratio_medians = {int(ratio): float(grid[np.searchsorted(
        np.cumsum(_mixed_grid_posterior(lls, prior_mass)), 0.5)])
        for ratio, lls in zip(use, by_ratio, strict=True)}
    if combine_ratios == "average":
        # the ratios' composite: partition by partition, the mean over the ratios
        combined = [np.mean(lls, axis=0) for lls in zip(*by_ratio, strict=True)]
    else:
        combined = [ll for lls in by_ratio for ll in lls]
    weights = _mixed_grid_posterior(combined, prior_mass)
    cdf = np.cumsum(weights)
    return {
        "method": "cv",
        "grid": grid,
        "weights": weights,
        "kappa_hat": float(grid[np.argmax(weights)]),
        "kappa_median": float(grid[np.searchsorted(cdf, 0.5)]),
        "observed": observed,
        "predicted_poisson": float(np.mean(pred_pois)),
        "sd": float(np.sqrt(np.mean(var))),
        "n_splits": int(n_splits),
        "ratios": use,
        "kappa_median_by_ratio": ratio_medians,
        "partition_ratios": ratio_of,
        # the parts each partition really has (clusters may merge parts) and the smallest
        "partition_parts": parts_of,
        "smallest_part": smallest,
        "prior_dominated": bool(prior_dominated),
        **({"caveats": caveats} if caveats else {}),
        "partitions": partitions,
        "combine_ratios": combine_ratios,
        "partition_loglik": np.array(logliks),
        "partition_variance": np.array(variances),
        "prior": _prior_label(prior),
        "predictive": predictive,
        "dispersion": phi,
        **({"parts": "weights"} if by_weights else {}),
        **({} if focus == "all" else {"focus": focus}),
        # with clusters known: how many, and whether the parts are of clusters or records
        **({"clusters": int(cluster_size.size), "cut": cut_by} if clustered else {}),
        **({} if whole_mass is None else {"part_phi_mass": whole_mass}),
    }


#: Fixed profile masses :func:`profile_mass_cv` tries, in order, on the keys whose mass the
#: default prior learns (>= 20 levels), when the learnt mass leaves the mixture too smooth.
PROFILE_MASS_CANDIDATES = (64.0, 128.0, 256.0, 512.0, 1024.0)


def profile_mass_cv(model: LatentClassModel, *, masses=PROFILE_MASS_CANDIDATES,
                    random_seed=None, unreached: str = "largest",
                    **cv_options) -> dict[str, Any]:
    r"""The profile mass of the many-level keys chosen by the overdispersion's cross-validation.

    The learnt profile prior (:data:`PHI_PRIOR_DEFAULT`: on keys of >= 20 levels the
    classes' profiles are centred on the key's sample marginal with a mass
    :math:`M_j` learnt by type-II EM) can leave the mixture too *smooth* on dense
    designs: the mixture spreads the rare levels' records over classes that share
    them, and its sample uniques are unique in the population more often than it
    predicts. No gamma overdispersion can mend that: given :math:`f_k = 1` a
    gamma-mixed cell is *less* likely to be population-unique than a Poisson one
    wherever :math:`n\pi_k < 1` (benchmarks/README.md, "Where the centre errs on Adult 6 keys").
    :func:`overdispersion_cv` sees it at the parts' scale: its observed count T of
    part-uniques left unique in the rest of the sample exceeds even the Poisson
    prediction (``observed > predicted_poisson``), and the kappa posterior runs to
    the Poisson end.

    The rule. Run the cross-validation with the model's own (learnt) prior; if its
    Poisson prediction reaches T, keep it (the result is then the default model's,
    draw for draw). Otherwise try the fixed masses ``masses`` above the learnt one
    (the geometric mean of the whole sample's EM masses on the learnt keys,
    ``part_phi_mass``), in order, on the learnt keys only (the other keys keep their
    prior); a larger mass shrinks each class's profile of those keys towards the
    marginal, which raises the prediction. At the first that reaches T, interpolate
    the crossing of prediction minus T linearly in :math:`\log M` between it and
    the mass before (the learnt one first), and take that mass. If none reaches T,
    ``unreached`` decides: the largest candidate (``"largest"``, the rule as first
    measured) or the learnt mass (``"learnt"``): the rule's premise is that a larger
    mass closes the gap, and where even the largest leaves it open the shortfall is
    not the mass's to mend. Each candidate's cross-validation uses the same
    partitions (``random_seed`` re-used: common random numbers), and the chosen
    model's kappa posterior is its own cross-validation's.

    Measured with ``benchmarks/cv_profile_mass.py --rule interpolate`` (20 samples per
    design): Adult 6 keys at 10% tau1 / tau2 bias -2.0 / -1.2% -> +1.3 / +0.5%, at 5%
    -0.7 / -0.8% -> -0.1 / -0.4%, relative RMSE lower on all four; the learnt mass
    kept on every Adult 9 keys sample and 1% sample checked. Over 200 samples per
    design it is *worse* than the learnt mass (benchmarks/README.md; Adult 6 keys, SRS
    and stratified): at 5% and 10% it raises the mass on 67-97% of the samples, tau1
    moves from about -1.3% to +1.2-1.9% at 10% with intervals as wide as before, and
    coverage falls (SRS 10% tau1 0.865 -> 0.74, stratified 10% 0.915 -> 0.75) with a
    higher RMSE on all eight comparisons. The mass read per sample is uncorrelated
    with that sample's own error (|r| <= 0.15) but sets how far the estimate moves:
    the cross-validation sees the average over-smoothing, not the sample's. Not the
    default; kept as a measured option.

    Parameters
    ----------
    model : LatentClassModel
        With the learnt profile prior (``priors["phi"]["mass"] == "learn"``).
    masses : sequence of float
        Fixed masses tried, increasing (default :data:`PROFILE_MASS_CANDIDATES`).
    random_seed : int, numpy.random.SeedSequence or Generator, optional
        Seeds every cross-validation alike (a Generator gives one integer seed).
    unreached : {"largest", "learnt"}
        The mass taken where no candidate's Poisson prediction reaches T (all
        candidates are tried first either way).
    **cv_options
        Passed to :func:`overdispersion_cv` (its ``part_mass`` must be ``"whole"``,
        the default, for the learnt mass to be known).

    Returns
    -------
    dict
        ``model`` (the input model if the learnt mass is kept, else a copy with the
        chosen fixed mass, :meth:`LatentClassModel.with_priors`), ``overdispersion``
        (the chosen model's :func:`overdispersion_cv` output),
        ``learnt_overdispersion`` (the learnt prior's) and ``summary`` (JSON-safe:
        ``rule``, ``mass`` -- ``"learn"`` or the chosen number --, ``learnt_mass``,
        ``reached`` (whether the learnt mass or a candidate reached T) and ``tried``:
        per cross-validation run its ``mass``, ``observed`` and ``predicted_poisson``).
    """
    phi = model.priors.get("phi", {})
    if not (isinstance(phi, Mapping) and phi.get("a") == "marginal"
            and isinstance(phi.get("mass"), str) and phi.get("mass") == "learn"):
        raise InputError("profile_mass='cv' chooses the mass of the learnt profile prior: it "
                         "needs priors['phi'] = {'a': 'marginal', 'mass': 'learn'} (the "
                         f"default); got {phi!r}")
    masses = [float(m) for m in masses]
    if not masses or any(not m > 0 for m in masses) or np.any(np.diff(masses) <= 0):
        raise InputError(f"masses must be positive and increasing; got {masses!r}")
    if unreached not in ("largest", "learnt"):
        raise InputError(f"unreached must be 'largest' or 'learnt'; got {unreached!r}")
    if isinstance(random_seed, np.random.Generator):
        random_seed = int(random_seed.integers(2**63 - 1))
    if random_seed is None:
        random_seed = np.random.SeedSequence()

    def cv(m):
        # a fresh stream from the same seed: every candidate sees the same partitions
        return overdispersion_cv(m, random_seed=np.random.default_rng(random_seed),
                                 **cv_options)

    od = cv(model)
    learnt_keys = [j for j in range(len(model.keys)) if model.learns_mass(j)]
    part_mass = od.get("part_phi_mass")
    learnt = (float(np.exp(np.mean(np.log([part_mass[j] for j in learnt_keys]))))
              if learnt_keys and part_mass is not None else None)
    tried = [{"mass": "learn", "observed": od["observed"],
              "predicted_poisson": od["predicted_poisson"]}]
    summary = {"rule": "cv-interpolate", "mass": "learn", "learnt_mass": learnt,
               "reached": bool(od["predicted_poisson"] >= od["observed"]), "tried": tried}
    if not learnt_keys or summary["reached"]:
        return {"model": model, "overdispersion": od, "summary": summary,
                "learnt_overdispersion": od}

    def fixed(mass):
        return model.with_priors({"phi": {**phi, "mass": float(mass)}})

    prev = (learnt, od["predicted_poisson"] - od["observed"])
    chosen = chosen_od = None
    # above the learnt mass only (not one equal to it up to rounding)
    for mass in (m for m in masses if learnt is None or m > learnt * (1 + 1e-6)):
        cand = fixed(mass)
        od_m = cv(cand)
        tried.append({"mass": mass, "observed": od_m["observed"],
                      "predicted_poisson": od_m["predicted_poisson"]})
        d = od_m["predicted_poisson"] - od_m["observed"]
        chosen, chosen_od = (mass, cand), od_m
        if d >= 0:
            summary["reached"] = True
            if prev[0] is not None:
                # the crossing, linear in log M between the mass before (d < 0) and this one
                (m0, d0), m1 = prev, mass
                t = -d0 / (d - d0)
                m = float(np.exp(np.log(m0) + t * (np.log(m1) - np.log(m0))))
                if m != m1:
                    cand = fixed(m)
                    chosen, chosen_od = (m, cand), cv(cand)
            break
        prev = (mass, d)
    if chosen is None or (unreached == "learnt" and not summary["reached"]):
        # no candidate above the learnt mass, or none that reaches T: keep the learnt
        return {"model": model, "overdispersion": od, "summary": summary,
                "learnt_overdispersion": od}
    summary["mass"] = chosen[0]
    return {"model": chosen[1], "overdispersion": chosen_od, "summary": summary,
            "learnt_overdispersion": od}


def profile_mass_span(model: LatentClassModel, *, random_seed=None, unreached: str = "learnt",
                      **cv_options) -> dict[str, Any]:
    r"""The learnt profile mass and the cross-validation's, as a range the posterior spans.

    :func:`profile_mass_cv` reads, per sample, a mass above the learnt one wherever the
    parts' Poisson prediction falls short of the held-out count; over 200 samples per
    design that reading is uncorrelated with the sample's own error and overshoots
    (benchmarks/README.md). The two readings -- the mass the classes learn in the sample
    and the smallest one that reaches the held-out count -- are both defensible and
    the sample cannot tell between them, so this spreads the mass over the range
    between them, uniform in :math:`\log M` (:meth:`LatentClassModel.with_mass_span`:
    each learnt key from its own learnt mass, drawn as usual, to the chosen one), with the
    kappa posterior moving from the learnt prior's cross-validation to the chosen
    mass's along it. Where the learnt mass reaches the count the model is the
    default's (the draws too), and so it is where no candidate mass reaches it
    (``unreached="learnt"``, :func:`profile_mass_cv`): there a larger mass is not what
    the parts lack. The first version took the largest candidate there
    (``unreached="largest"``), which is what it did on most samples of the held-out
    files at 5% and 10% (the synthetic census, EU-SILC: the parts' prediction rises
    by a few per cent of the gap per doubling and never reaches the count) and on
    0-1.5% of Adult 6 keys samples, and it moved the synthetic census's tau1 from
    -0.7% to -2.7% at 10% (benchmarks/README.md).

    Not the default. On a key set held out of every choice (Adult's sex, race,
    education, workclass, occupation, hours per week; 100 samples per design) the
    default meets the goal on all six designs and this raises the relative RMSE on
    every design where it acts (simple random 10%: tau1 2.1 -> 2.5%, coverage 0.90 /
    0.93 -> 0.86 / 0.86): it helps where the learnt mass leaves the estimate low, as on
    Adult 6 keys at 10%, and the cross-validation cannot tell those samples from the
    rest. Its high end is also read against EM's mass, which stays at its start (16)
    where EM has not converged (:data:`EM_LEARN_MASS`, most samples of 2,000 records or
    more): the crossing interpolated up from there can fall below the mass the chains
    learn, and the span then moves the mass down.

    Parameters
    ----------
    model : LatentClassModel
        With the learnt profile prior.
    random_seed : int, numpy.random.SeedSequence or Generator, optional
    unreached : {"learnt", "largest"}
        Passed to :func:`profile_mass_cv`.
    **cv_options
        Passed to :func:`profile_mass_cv`.

    Returns
    -------
    dict
        ``model`` (the input model, or its :meth:`~LatentClassModel.with_mass_span`
        copy), ``overdispersion`` (the learnt prior's cross-validation, the range's low
        end) and ``summary`` (:func:`profile_mass_cv`'s, ``rule`` ``"cv-span"``).
    """
    choice = profile_mass_cv(model, random_seed=random_seed, unreached=unreached,
                             **cv_options)
    od = choice["learnt_overdispersion"]
    summary = {**choice["summary"], "rule": "cv-span"}
    if summary["mass"] == "learn":
        return {"model": model, "overdispersion": od, "summary": summary}
    chosen = choice["overdispersion"]
    spanned = model.with_mass_span(float(summary["mass"]),
                                   kappa_high=(chosen["grid"], chosen["weights"]))
    return {"model": spanned, "overdispersion": od, "summary": summary}


__all__ += ["PROFILE_MASS_CANDIDATES", "profile_mass_cv", "profile_mass_span", "EM_LEARN_MASS"]


#: Folds of each cross-fit of :func:`cluster_rate_correction`.
CLUSTER_FOLDS = 5

#: Cluster sizes of :func:`cluster_rate_correction` with a factor of their own; larger
#: clusters share the last one.
CLUSTER_SIZES = (2, 3, 4)


def cluster_rate_correction(model: LatentClassModel, *, folds: int = CLUSTER_FOLDS,
                            em_restarts: int = 1, random_seed=None,
                            sizes=CLUSTER_SIZES) -> dict[str, Any]:
    r"""How much a sample unique's own cluster inflates its rate (household samples).

    In a sample of whole households every sample unique brings its household
    mates, who share some of its keys (household size, country of birth, often
    region or education). The mixture fitted to the whole sample learns the
    association of those values from the mates, so the unique's
    :math:`\pi_k` is larger than the population's share of the combination, and
    it is called population-unique too rarely: on the synthetic census at 5% of
    households, Poisson cells give tau1 -10.6% against -3.3% on samples of persons of
    the same size (benchmarks/README.md, "Household samples"), the deficit growing with the
    household's size. In a simple random sample of persons there are no mates:
    the unique's own record is its only self-influence, which the model's Bayes
    update of the cell's rate is meant to carry.

    The factor compares two cross-fits of the penalised-EM mixture
    (:meth:`LatentClassModel.fit_em`). The records are cut into ``folds`` parts
    twice: once by whole clusters, once record by record; for every sample unique
    the mixture fitted without its part predicts :math:`\pi_k`. Without its cluster
    the prediction lacks the mates' influence and the unique's own; without the
    record only the unique's own. Their ratio :math:`\pi^{(-h)}_k/\pi^{(-r)}_k`
    is the mates' share; its median over the uniques in clusters of size s (a
    factor per size of ``sizes``, the last for that size and above, summarised on
    the log scale) multiplies :math:`\pi_k` of those uniques in the risk
    (:meth:`LatentClassModel.sample` with ``cluster_correction``). Uniques living
    alone keep factor 1: their two cross-fits differ by the partition's noise only.
    The median, not the cell's own ratio, because a part's EM fit is noisy cell by
    cell (single ratios range over orders of magnitude on the synthetic census)
    while the median over a size is stable (0.81-0.92 over eight samples at 5%).

    Parameters
    ----------
    model : LatentClassModel
        With its records' clusters (:meth:`LatentClassModel.set_record_clusters`).
    folds : int
        Parts of each cross-fit (default :data:`CLUSTER_FOLDS`).
    em_restarts : int
        EM random starts per fit.
    random_seed : int or numpy.random.Generator, optional
    sizes : sequence of int
        Cluster sizes >= 2 with a factor each, increasing (default
        :data:`CLUSTER_SIZES`); a size with fewer than 5 uniques takes the factor of
        the size below it (the smallest, 1).

    Returns
    -------
    dict
        ``factor`` (per key cell: 1 except sample uniques in clusters of size >= 2),
        ``by_size`` ({size: factor}), ``uniques_by_size`` ({size: count}), ``folds``.
    """
    if model.record_clusters is None:
        raise InputError("cluster_rate_correction needs the records' clusters: build the model "
                         "with from_microdata (household column) or from_frame(clusters=...)")
    sizes = [int(x) for x in sizes]
    if not sizes or sizes[0] < 2 or any(b <= a for a, b in itertools.pairwise(sizes)):
        raise InputError(f"sizes must be increasing cluster sizes >= 2; got {sizes!r}")
    if int(folds) != folds or folds < 2:
        raise InputError(f"folds must be a whole number >= 2; got {folds!r}")
    rng = np.random.default_rng(random_seed)
    row_of_record, cluster_of_record = model.record_clusters
    K = model.counts.size
    C = model.key_codes.shape[0]
    key_of_record = model.key_index[row_of_record]
    f = np.rint(model.key_counts).astype(np.int64)
    unique_rec = np.flatnonzero(f[key_of_record] == 1)   # one record per sample-unique cell
    cluster_size = np.bincount(cluster_of_record)
    rec_size = cluster_size[cluster_of_record[unique_rec]]
    n = row_of_record.size
    # the uniques of each size group: s up to the next listed size
    upper = [*sizes[1:], np.inf]
    groups = [(s, (rec_size >= s) & (rec_size < u)) for s, u in zip(sizes, upper, strict=True)]
    factor = np.ones(C)
    if not (rec_size >= sizes[0]).any():  # every unique lives alone: nothing to correct
        return {"factor": factor, "by_size": dict.fromkeys(sizes, 1.0),
                "uniques_by_size": dict.fromkeys(sizes, 0), "folds": int(folds)}

    def cross_fit(group_of_record, n_groups):
        fold = (rng.permutation(n_groups) % int(folds))[group_of_record]
        pi = np.empty(unique_rec.size)
        for g in range(int(folds)):
            test = fold[unique_rec] == g
            if not test.any():
                continue
            counts = np.bincount(row_of_record[fold != g], minlength=K)
            part = _part_model(model, counts, model.priors)
            em = part.fit_em(n_restarts=em_restarts, random_seed=rng)
            pi[test] = part.key_cell_probabilities(
                em["w"], em["phi"], model.key_codes[key_of_record[unique_rec[test]]])
        return pi

    pi_cluster = cross_fit(cluster_of_record, cluster_size.size)
    pi_record = cross_fit(np.arange(n), n)
    log_ratio = np.log(pi_cluster) - np.log(pi_record)
    by_size, counts = {}, {}
    factor_of = 1.0
    for s, sel in groups:
        counts[s] = int(sel.sum())
        if sel.sum() >= 5:  # too few uniques: the size below's factor
            factor_of = float(np.exp(np.median(log_ratio[sel])))
        by_size[s] = factor_of
        factor[key_of_record[unique_rec[sel]]] = factor_of
    return {"factor": factor, "by_size": by_size, "uniques_by_size": counts,
            "folds": int(folds)}


def _progress_line(chain: int, chains: int, it: int, n_iter: int, elapsed: float,
                   done: bool = False, label: str | None = None) -> None:
    """``gibbs: chain c/C [#####.....] it/n_iter sweeps, t s`` on stderr, in place.

    On a terminal the line is redrawn (carriage return) about 50 times a chain; on a
    pipe or log file, where every redraw would stay, only each chain's start and the
    end are written, each as a line of its own. ``label`` replaces ``chain c/C`` (chains
    run at once: ``4 chains on 2 threads``, their sweeps added up).
    """
    import sys

    tty = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if not tty and not done and it != 0:
        return
    width = 30
    filled = int(width * it / max(n_iter, 1))
    label = f"chain {chain + 1}/{chains}" if label is None else label
    line = (f"gibbs: {label} [{'#' * filled}{'.' * (width - filled)}] "
            f"{it}/{n_iter} sweeps, {elapsed:.0f} s")
    sys.stderr.write(("\r" + line + ("\n" if done else "")) if tty else line + "\n")
    sys.stderr.flush()


class _ChainStopped(Exception):
    """A chain's thread stops: another chain failed, or the caller was interrupted.

    Raised at the chain's next progress report (:meth:`LatentClassModel._chains_in_threads`).
    """


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def _chain_threads(cores, chains: int) -> int:
    """Threads for ``chains`` Gibbs chains.

    ``cores`` (default :func:`available_cpus`), at most ``chains``; a bad value fails
    before any work.
    """
    if cores is None:
        cores = available_cpus()
    elif isinstance(cores, bool) or not isinstance(cores, (int, np.integer)) or cores < 1:
        raise InputError(f"cores must be an integer >= 1 (chains run at once); got {cores!r}")
    return max(1, min(int(cores), int(chains)))


def excess_means(idata) -> np.ndarray:
    r"""Draws of the excess means :math:`\lambda_k = E(F_k - f_k)` of a latent-class posterior.

    Of a :meth:`LatentClassModel.sample` posterior, (chain, draw, cell): the stored
    ``lam`` of a fit with weight classes, else :math:`(N - n)\pi_k` from ``pi`` and the
    constant data ``n`` and ``N`` -- what ``lam`` held before it was left out of the fits
    without weight classes (equal, bit for bit).

    Raises
    ------
    InputError
        A posterior sampled without N (no excess means).
    """
    post = idata.posterior
    if "lam" in post:
        return post["lam"].values
    const = (idata["constant_data"] if "constant_data" in _compat.group_names(idata)
             else {})

    def value(name):  # ArviZ stores a scalar as shape (1,)
        return float(np.ravel(const[name].values)[0]) if name in const else math.nan

    N = value("N")
    if not math.isfinite(N):
        raise InputError("the posterior was sampled without N, so it has no excess means: "
                         "sample with N=<population size>")
    return (N - value("n")) * post["pi"].values


def posterior_tau_summary(idata, prob: float = 0.9) -> dict[str, Any]:
    """Means, central ``prob`` intervals and r_hat/ESS of tau1, tau2 from :meth:`sample`.

    Point estimates are the posterior means of the conditional expectations
    (``tau*_expected``, Rao-Blackwellised); intervals are quantiles of the
    posterior predictive ``tau*`` (parameter uncertainty and F | pi). Convergence is
    diagnosed on these identifiable functionals (class labels switch).
    """
    import arviz as az

    out: dict[str, Any] = {}
    lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
    for t in ("tau1", "tau2"):
        pp = idata.posterior_predictive[t].values.ravel()
        ex = idata.posterior[f"{t}_expected"]
        out[t] = float(ex.mean())
        out[f"{t}_interval"] = [float(np.quantile(pp, lo)), float(np.quantile(pp, hi))]
        out[f"{t}_rhat"] = float(az.rhat(ex.to_dataset())[f"{t}_expected"])
        out[f"{t}_ess"] = float(az.ess(ex.to_dataset())[f"{t}_expected"])
    return out


__all__ += ["posterior_tau_summary", "available_cpus"]



def _expected_inverse_frequency_f(f, lam) -> np.ndarray:
    r""":math:`E(1/F \mid f, \pi) = {}_1F_1(1; f + 1; -\lambda)/f` for any f >= 1.

    :math:`1/F = \int_0^1 t^{F-1}dt` with :math:`F = f + \mathrm{Po}(\lambda)` gives
    :math:`\int_0^1 t^{f-1}e^{-\lambda(1-t)}dt` (Skinner & Shlomo 2008, section 2);
    f = 1 is :func:`expected_inverse_frequency`.
    """
    from scipy.special import hyp1f1

    f = np.asarray(f, dtype=float)
    lam = np.asarray(lam, dtype=float)
    return np.where(f == 1, expected_inverse_frequency(lam), hyp1f1(1.0, f + 1.0, -lam) / f)


def expected_sample_uniques(pi, f, n: float, kappa) -> float:
    r"""The mixture's expected number of sample uniques, estimated from the observed cells.

    Under :math:`f_k \sim \mathrm{NegBin}(\kappa, \text{mean } n\pi_k)` over the whole
    cell space, :math:`E(m_1) = \sum_k P(f_k = 1) = \sum_k n\pi_k (1 + n\pi_k/\kappa)^
    {-(\kappa + 1)}`, and since :math:`E(f_k) = n\pi_k` the observed cells estimate it
    without a sum over the cell space: :math:`\hat E(m_1) = \sum_k f_k (1 +
    n\pi_k/\kappa)^{-(\kappa + 1)}` (unbiased given :math:`\pi`; Poisson:
    :math:`e^{-n\pi_k}`), averaged over the draws of ``pi`` (draws, cells).
    """
    m = n * np.asarray(pi, dtype=float)
    g = prob_population_unique(m, None if not np.isfinite(kappa) else kappa,
                               np.zeros_like(m))
    return float((g @ np.asarray(f, dtype=float)).mean())


def uniques_kappa(pi, f, n: float, grid=KAPPA_GRID) -> float:
    r"""The kappa at which :func:`expected_sample_uniques` meets the sample's uniques.

    An in-sample read of the cells' overdispersion around the mixture (an experiment of
    the harness, ``sdcbayes.validation.latent_class_method(uniques_kappa_note=True)``).
    The expectation need not be monotone in kappa: a cell of :math:`n\pi_k > 2` is less
    often seen once as it nears the Poisson end, so on dense cells :math:`E(m_1)` can
    peak inside the grid and the equation have two or more roots. The grid (increasing,
    its last point may be inf) is scanned for the first sign change of
    :math:`E(m_1) - m_1`, and the root is bisected on the log scale between those two
    points (towards 1e8 between the largest finite kappa and inf): where there are
    several roots, the one of **smallest kappa** (the most overdispersed reading) that
    the grid brackets is returned (a grid point where the difference is 0 is itself a
    root). Without a sign change, the grid point whose expectation comes nearest the
    sample's (inf where even Poisson cells predict fewer uniques than the sample has,
    the grid's smallest where its smallest kappa predicts more, when the expectation
    rises).
    """
    f = np.asarray(f, dtype=float)
    grid = np.asarray(grid, dtype=float)
    m1 = float((f == 1).sum())
    d = np.array([expected_sample_uniques(pi, f, n, k) for k in grid]) - m1
    for i in range(d.size):
        if d[i] == 0.0:
            return float(grid[i])
        if i + 1 < d.size and np.sign(d[i]) * np.sign(d[i + 1]) < 0:
            break
    else:  # no root on the grid: the nearest expectation
        return float(grid[int(np.argmin(np.abs(d)))])
    lo = np.log(grid[i])
    hi = np.log(grid[i + 1]) if np.isfinite(grid[i + 1]) else np.log(1e8)
    s_lo = np.sign(d[i])
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if np.sign(expected_sample_uniques(pi, f, n, np.exp(mid)) - m1) == s_lo:
            lo = mid
        else:
            hi = mid
    return float(np.exp(0.5 * (lo + hi)))


def predictive_counts(model: LatentClassModel, idata) -> list[tuple[str, int, float, float]]:
    """The predictive check's rows of a fit run with ``ppc``.

    Per number of times seen (``m1`` … ``m5``, ``m6+``): the sample's number of cells,
    the replicates' mean and p = P(m_rep >= m_obs) (:meth:`LatentClassModel.sample`'s
    ``posterior_predictive``).
    """
    import xarray as xr

    from sdcbayes.models.ppc import predictive_table

    # the sample's cells seen PPC_MAX_COUNT times or more pooled, as the replicates' are
    f = np.minimum(np.rint(model.key_counts).astype(np.int64), PPC_MAX_COUNT)
    obs = xr.DataArray(np.bincount(f, minlength=PPC_MAX_COUNT + 1)[1:], dims="count",
                       coords={"count": np.arange(1, PPC_MAX_COUNT + 1)})
    table = predictive_table(obs, idata.posterior_predictive["m"],
                             counts=range(1, PPC_MAX_COUNT + 1),
                             sample_dims=("chain", "ppc_draw"))
    return [(f"m{j}+" if j == PPC_MAX_COUNT else f"m{j}", int(r.observed), float(r["mean"]),
             float(r.p_value)) for j, r in table.iterrows()]


__all__ += ["predictive_counts"]
