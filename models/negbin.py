r"""Negative-binomial model of F | f with an uncertain cell sampling fraction (seed 004).

May import: NumPy, SciPy, pandas, xarray, PyMC, PyTensor, ``sdcbayes`` (data layer,
exceptions) and ``sdcbayes.models``. Must not import ``sdcbayes.inference`` or
``sdcbayes.risk``.

Benedetti & Franconi (1998), as written by Polettini (seed 004): with an improper
:math:`1/\pi_k` prior and cell inclusion probability :math:`p_k` (the superpopulation
model, eq. 2), :math:`F_k - f_k \mid f_k \sim \mathrm{NegBin}(f_k, p_k)` (failures
before the :math:`f_k`-th success; the unnumbered statement and display after eq. 2),
and the individual risk is
:math:`r_k = E(1/F_k \mid f_k) = p_k^{f_k}/f_k \, {}_2F_1(f_k, f_k; f_k + 1; 1 - p_k)`
(seed 004, eq. 6). The usual plug-in is :math:`\hat p_k = f_k / \hat F_k`,
:math:`\hat F_k = \sum_{i \in k} w_i` (seed 004, eq. 4). This module makes :math:`p_k`
uncertain; the risk itself is computed downstream (``sdcbayes.risk``) per draw of
:math:`p_k`.

What it adds, and what it does not (audit AA10; the class docstring has the details).
The model keeps the closed form's centre: every draw of :math:`p_k` is centred on the
plug-in :math:`\hat p_k`, so it inherits the plug-in's bias; nothing propagates the
uncertainty of :math:`\hat F_k` itself. A spread :math:`\sigma > 0` widens the
intervals and also raises the mean risk, through the risk's curvature in
:math:`\operatorname{logit} p_k`. It needs weights that vary within cells, and weights
near 1 distort the learnt :math:`\sigma` (:func:`near_one_spread` detects them, and the
assessment warns).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import xarray as xr
from scipy.special import expit

from sdcbayes import _compat
from sdcbayes.exceptions import DataError, InputError
from sdcbayes.microdata import require_one_cell_per_record
from sdcbayes.models.base import (
    PriorSpec,
    SuperpopulationModel,
    check_posterior_of,
    check_whole,
    checked_seed,
    merge_priors,
    predictive_stamps,
    prior_to_rv,
    quiet_logs,
)
from sdcbayes.models.beta_binomial import (
    PredictiveCheck,
    _group,
    _stamp_group,
    data_fingerprint,
)

__all__ = ["NEAR_ONE_P", "NEAR_ONE_SIGMA_FACTOR", "NegativeBinomialModel",
           "near_one_spread", "near_one_warning", "offset_generator", "sigma_unlearnable",
           "within_cell_spread"]

#: Inclusion probabilities are kept inside (EPS, 1 - EPS) before taking logits: a cell
#: whose weights sum to f_k or less (weights <= 1) has p_hat = 1 and the risk 1/f_k
#: (seed 004, section 2); logit(1 - 1e-9) reproduces that to about 1e-8.
EPS = 1e-9


#: Cells x draws simulated at once by the predictive checks (8 MB of int64 per array).
_CHUNK_ELEMENTS = 1_000_000


#: Entropy word that keeps the cell offsets' generator apart from the sampler's, which
#: is seeded by the same stamped seed (``[word, seed]`` is another seed sequence).
_OFFSET_STREAM = 0x4E42


#: ``w - 1`` at ``1/w = 1 - EPS``: below it ``logit(1/w)`` is held at ``logit(1 - EPS)``
#: (weights of 1 or below, p = 1).
_W_MINUS_ONE_FLOOR = EPS / (1.0 - EPS)


def _logit_inverse(w):
    r"""``logit(1/w) = -log(w - 1)`` for weights (inverse inclusion probabilities) ``w``.

    :math:`\operatorname{logit}(1/w) = \log\frac{1/w}{1 - 1/w} = -\log(w - 1)`, exact
    for every ``w > 1``: ``w - 1`` is exact near 1 (Sterbenz's lemma) and rounds by a
    relative 1e-16 beyond. ``1/w`` is not clipped at ``EPS`` first, which read weights
    above 1e9 that vary within a cell as constant (audit Z3 finding 5); only as
    ``w -> 1`` is the value held at ``logit(1 - EPS)``.
    """
    w = np.asarray(w, dtype=float)
    return -np.log(np.maximum(w - 1.0, _W_MINUS_ONE_FLOOR))


def offset_generator(seed: int) -> np.random.Generator:
    """The generator of the cell offsets of a fit stamped with ``seed``.

    Deterministic in ``seed`` (the same stamped seed gives the same ``p``) and
    independent of the sampler's streams, which use ``seed`` itself.

    Parameters
    ----------
    seed : int
        The fit's stamped ``random_seed`` (>= 0).
    """
    return np.random.default_rng([_OFFSET_STREAM, int(seed)])


def sigma_unlearnable(within_ss, within_df) -> str | None:
    """Why the weights' within-cell spread cannot teach sigma, or None where it can.

    No cell of two or more records, or weights constant within every cell (sigma = 0: the
    model is the plug-in closed form). The reason names no fix, so that each caller names
    its own: the model a fixed ``sigma``, ``sdcbayes assess`` ``--model closed-form``,
    ``sdcbayes compare`` the closed-form model.

    Parameters
    ----------
    within_ss, within_df : float or array-like
        :func:`within_cell_spread`'s sum of squares and degrees of freedom (summed).
    """
    ss, df = float(np.sum(within_ss)), int(np.sum(within_df))
    if df < 1:
        return ("no cell has two or more weighted records, so the within-cell spread sigma "
                "cannot be learnt")
    if ss <= 1e-12 * df:
        return ("weights are constant within every cell, so sigma = 0 and the model is the "
                "plug-in closed form")
    return None


def within_cell_spread(weights, record_cell) -> tuple[float, int]:
    r"""Pooled within-cell sum of squares of the logit inverse weights, and its degrees of freedom.

    With :math:`x_i = \operatorname{logit}(1 / w_i)` and records grouped by cell,
    returns :math:`S = \sum_k \sum_{i \in k} (x_i - \bar x_k)^2` and
    :math:`\nu = \sum_k (f_k - 1)` (cells with one record contribute nothing).
    Vectorised with :func:`numpy.bincount`.

    Parameters
    ----------
    weights : array-like of float, shape (n_records,)
    record_cell : array-like of int, shape (n_records,)
        Cell of each record; negative entries (records excluded from the cell table)
        are ignored.
    """
    w = np.asarray(weights, dtype=float)
    cell = np.asarray(record_cell, dtype=np.int64)
    if w.shape != cell.shape:
        raise InputError(
            f"weights and record_cell must have one entry per record; "
            f"got {w.shape} and {cell.shape}"
        )
    keep = cell >= 0
    w, cell = w[keep], cell[keep]
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise DataError(
            "sampling weights must be positive and finite; fix or drop the offending records"
        )
    x = _logit_inverse(w)
    count = np.bincount(cell)
    total = np.bincount(cell, weights=x, minlength=count.size)
    mean = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    ss = float(np.sum((x - mean[cell]) ** 2))  # two-pass: no cancellation
    df = int(np.sum(np.maximum(count - 1, 0)))
    return ss, df


#: Inclusion probability ``1/w`` from which a weight counts as "near 1" (``w <= 1/0.95``,
#: about 1.053, weights below 1 included) in :func:`near_one_spread`. There
#: ``logit(1/w) = -log(w - 1)`` runs off to infinity (20.7 at the ``EPS`` cap, against
#: about -4 for a weight of 50), so one such record among larger weights sets the pooled
#: spread: on 2000 eusilc records one weight of 1.0 moves sigma-hat from 0.089 to 0.737,
#: 1.01 to 0.31 (audit AA10, finding 1). A weight of 2 (p = 0.5, logit 0) is not near 1.
NEAR_ONE_P = 0.95

#: Factor by which leaving the near-1 records out may change sigma-hat before
#: :func:`near_one_warning` warns. 1.5 in sigma is 2.25 in the pooled variance: the few
#: records would carry over half the file's within-cell sum of squares. That is far
#: beyond sigma-hat's own sampling error (relative standard error about
#: ``1/sqrt(2 nu)``, 0.16 at nu = 20) and changes the risk visibly (sigma 0.09 -> 0.74
#: raised ER by 18% in the audit's file), while a spread the other records share moves
#: far less than 1.5-fold when a handful of records is left out.
NEAR_ONE_SIGMA_FACTOR = 1.5


def near_one_spread(weights, record_cell) -> dict[str, Any] | None:
    r"""Sigma-hat with and without the records whose weight is near 1 (diagnostic).

    Records with :math:`1/w_i \ge` :data:`NEAR_ONE_P` in cells of two or more records
    (the cells that enter :func:`within_cell_spread`) are the ones whose
    :math:`x_i = \operatorname{logit}(1/w_i) = -\log(w_i - 1)` is unbounded or capped.
    The point estimate of the spread is the pooled within-cell standard deviation
    :math:`\hat\sigma = \sqrt{S / \nu}` (one-way analysis of variance; the chi-square
    model of the class docstring has :math:`E(S) = \sigma^2 \nu`); it is computed on
    all records and again with those records left out of their cells (closed form:
    the same sums of squares on fewer records). Nothing of the model changes: this only
    tells the assessment whether to warn (:func:`near_one_warning`) and what to stamp.

    Parameters
    ----------
    weights : array-like of float, shape (n_records,)
    record_cell : array-like of int, shape (n_records,)
        As for :func:`within_cell_spread` (negative entries ignored).

    Returns
    -------
    dict or None
        None when no such record is in a cell of two or more records. Else
        ``n_records`` (the near-1 records), ``p_min`` (:data:`NEAR_ONE_P`),
        ``sigma_hat`` and ``sigma_hat_without`` (None where no degree of freedom is
        left), ``within_ss_without``, ``within_df_without`` and ``changed`` (True when
        leaving them out changes sigma-hat by more than
        :data:`NEAR_ONE_SIGMA_FACTOR`, or leaves no spread to learn).
    """
    w = np.asarray(weights, dtype=float)
    cell = np.asarray(record_cell, dtype=np.int64)
    ss, df = within_cell_spread(w, cell)  # also checks the shapes and the weights
    kept = cell >= 0
    count = np.bincount(cell[kept])
    size = np.zeros(cell.size, dtype=np.int64)
    size[kept] = count[cell[kept]]
    # 1/w >= NEAR_ONE_P written as w <= 1/NEAR_ONE_P (no division of every weight)
    near = kept & (size >= 2) & (w <= 1.0 / NEAR_ONE_P)
    n_near = int(np.count_nonzero(near))
    if n_near == 0:
        return None
    ss_wo, df_wo = within_cell_spread(w, np.where(near, -1, cell))

    def sd(s, d):
        return math.sqrt(s / d) if d >= 1 else None

    sigma_all, sigma_wo = sd(ss, df), sd(ss_wo, df_wo)
    if sigma_unlearnable(ss, df) is not None:
        changed = False  # the model refuses to learn sigma anyway, with its own reason
    elif sigma_unlearnable(ss_wo, df_wo) is not None:
        changed = True  # all the spread there is comes from these records
    else:
        ratio = sigma_all / sigma_wo
        changed = bool(max(ratio, 1.0 / ratio) > NEAR_ONE_SIGMA_FACTOR)
    return {"n_records": n_near, "p_min": NEAR_ONE_P, "sigma_hat": sigma_all,
            "sigma_hat_without": sigma_wo, "within_ss_without": float(ss_wo),
            "within_df_without": int(df_wo), "changed": changed}


def near_one_warning(info: Mapping[str, Any] | None) -> str | None:
    """The warning for :func:`near_one_spread`'s result, or None when there is none to give.

    Names the number of records, both sigma-hat values and the fixes. Worded for Python
    and the command line alike (``sdcbayes assess`` has no ``--sigma``).

    Parameters
    ----------
    info : mapping or None
        :func:`near_one_spread`'s dict, as stamped in the fit's ``data_summary``
        (``near_one_weights``).
    """
    if not isinstance(info, Mapping) or not info.get("changed"):
        return None
    n = int(info["n_records"])
    p_min = float(info.get("p_min", NEAR_ONE_P))
    with_them, without = info.get("sigma_hat"), info.get("sigma_hat_without")
    if without is None or without <= 0:
        wo_text, example = "no spread is left to learn without them", ""
    else:
        wo_text, example = f"{without:.3g} without them", f" (e.g. sigma={without:.2g})"
    return (
        f"{n} record(s) in key combinations of two or more records have weights near 1 "
        f"(inclusion probability 1/w >= {p_min:g}, w <= {1 / p_min:.4g}), where the "
        f"negative-binomial model's logit(1/w) = -log(w - 1) grows without bound (capped "
        f"at 20.7): they set its spread sigma, whose estimate (the pooled within-cell SD "
        f"of logit(1/w)) is {with_them:.3g} with them and {wo_text}, and the learnt sigma "
        f"raises every cell's risk. Check those weights (a certainty unit has p = 1); in "
        f"Python, pass sigma=<value>{example} to fix the spread; or use the closed form or "
        f"the latent-class model (--model closed-form or --model latent-class)"
    )


def _add_draws(idata, group: str, p: xr.DataArray) -> None:
    """Store the cells' ``p`` in ``group`` of ``idata``, creating the group if absent."""
    # a fixed sigma: nothing was sampled, so there is no group yet and it is created
    _compat.set_variable(idata, group, "p", p)


class NegativeBinomialModel(SuperpopulationModel):
    r"""Benedetti-Franconi F | f model with a design-informed, uncertain :math:`p_k`.

    Model (per cell :math:`k`, with :math:`m_k = \operatorname{logit} \hat p_k`,
    :math:`\hat p_k = f_k / \hat F_k` of seed 004, eq. 4):

    .. math::

        \operatorname{logit} p_k \mid \sigma, \text{data} \sim
            \mathrm{Normal}\!\left(m_k,\ \sigma / \sqrt{f_k}\right),
        \qquad
        F_k - f_k \mid f_k, p_k \sim \mathrm{NegBin}(f_k, p_k) \ \text{(seed 004, after eq. 2)},

    and, when :math:`\sigma` is learnt, the pooled within-cell sum of squares of
    :math:`x_i = \operatorname{logit}(1/w_i)` is the observed variable,

    .. math::

        S = \sum_k \sum_{i \in k} (x_i - \bar x_k)^2 \mid \sigma
            \sim \sigma^2 \chi^2_{\nu}
            = \mathrm{Gamma}\!\left(\tfrac{\nu}{2},\ \text{rate } \tfrac{1}{2\sigma^2}\right),
        \qquad \nu = \sum_k (f_k - 1).

    Why this model. :math:`p_k` never enters the likelihood of :math:`f_k` (the
    :math:`1/\pi_k` prior makes :math:`f_k` uninformative about it), so without another
    likelihood its "posterior" is whatever prior one writes down. The honest extra data
    are the weights: the inverse weights :math:`1/w_i` of the :math:`f_k` sampled records
    of cell :math:`k` are noisy measurements of the inclusion probabilities of the cell's
    population, measured on the logit scale as
    :math:`x_i = \operatorname{logit} p_k + \varepsilon_i`,
    :math:`\varepsilon_i \sim \mathrm{Normal}(0, \sigma)`. With a flat prior on
    :math:`\operatorname{logit} p_k` this gives the normal posterior above, centred on the
    design estimate (we centre on :math:`\operatorname{logit}\hat p_k`, the plug-in the
    closed form uses, rather than on :math:`\bar x_k`, so that the model contains the
    closed form exactly) with the standard error of a mean of :math:`f_k` measurements;
    and the within-cell scatter (sufficient statistic :math:`S`, exact chi-square
    likelihood: the pooled within-group sum of squares of one-way analysis of variance,
    by Cochran's theorem) makes :math:`\sigma` learnable. Sample uniques, the records
    that matter most, get the full spread :math:`\sigma` learnt from the larger cells. Where weights
    are constant within cells (e.g. stratified simple random sampling with cells inside
    strata) :math:`p_k` is known and :math:`\sigma = 0`; the model then *is* the closed
    form, and learning :math:`\sigma` is refused with that explanation.

    Reduction to the closed form. As :math:`\sigma \to 0`, :math:`p_k \to \hat p_k` in
    every draw, so the posterior mean of :math:`E(1/F_k \mid f_k, p_k)` tends to the
    plug-in Benedetti-Franconi risk (seed 004, eq. 6 at :math:`\hat p_k`); the error is
    :math:`O(\sigma^2 / f_k)` (second-order delta method).

    What the model adds, and what it does not (audit AA10, findings 2 to 4; measured
    there, indicative only).

    - It keeps the closed form's centre. At :math:`\sigma = 0`, ER, :math:`\tau_1` and
      :math:`\tau_2` equal the closed form's to rounding. At the learnt
      :math:`\sigma \approx 0.089` on 2000 eusilc records they are 0.3 to 0.4% higher
      (:math:`\tau_2` 6.858 against 6.840). The closed form's bias on real files is
      therefore inherited, not corrected. The only uncertainty added is the within-cell
      heterogeneity of the weights, as independent logit noise per cell. Nothing
      propagates the uncertainty of :math:`\hat F_k` itself.
    - :math:`\sigma > 0` raises the mean risk as well as widening the intervals. The
      risk is convex in :math:`\operatorname{logit} p_k` for small :math:`p_k`, so
      symmetric logit noise raises :math:`E(r_k)` (Jensen). The flat prior on
      :math:`\operatorname{logit} p_k` shrinks nothing, so the noise already in
      :math:`m_k` is counted again. On the same file, with :math:`\sigma` fixed,
      :math:`\tau_2` is 6.84 at :math:`\sigma = 0`, 9.49 at 1 and 20.7 at 2.
    - Calibration. In a small simulation (12 replicates, a stylised population),
      the 90% intervals of :math:`\tau_2` covered the truth 10/12 times at
      :math:`\sigma = 0`. Under an unequal-probability (Poisson) design with true
      :math:`\sigma` 0.5 or 1 they covered it 0/12 times: the estimate was 14% and 36%
      too high, because a sample unique's :math:`1/w` overstates its cell's mean
      inclusion probability under size-biased selection. Under the measurement story
      above, coverage was 7/12 at :math:`\sigma = 0.5` and 0/12 at :math:`\sigma = 1`.
      The model is not calibrated for unequal-probability designs.
    - The joint is not the posterior of the measurement model as stated. The
      :math:`\sigma` part is exact (the REML marginal of that model). The :math:`p_k`
      part uses the plug-in centre :math:`m_k` with that model's spread, where the
      measurement model's own centre is :math:`\bar x_k` (on the audit's file
      :math:`|\bar x_k - m_k| \le 0.02`).
    - Weights near 1. :math:`x_i = -\log(w_i - 1)` is unbounded as :math:`w_i \to 1`
      (held at :math:`\operatorname{logit}(1 - \mathrm{EPS}) = 20.7`), so one
      certainty unit among larger weights sets :math:`\sigma`. One weight of 1.0
      among the 2000 records moves :math:`\hat\sigma` from 0.089 to 0.737 and ER up
      by 18%. :meth:`from_microdata` runs :func:`near_one_spread`, the fit stamps its
      result (``data_summary["near_one_weights"]``), and the assessment warns when
      leaving those records out changes :math:`\hat\sigma` by more than
      :data:`NEAR_ONE_SIGMA_FACTOR`. The model itself is unchanged: fix ``sigma``, or
      use the closed form or the latent-class model.

    Graph and draws. The PyMC graph holds only what the data inform: ``sigma`` (a prior
    from :attr:`priors`, or a constant when fixed) and the observed ``within_ss``; the
    cell table enters as data (``fk``, ``Fk_hat``, ``logit_p_hat``). The offsets
    :math:`z_k = \sqrt{f_k}\,(\operatorname{logit} p_k - m_k)/\sigma` never enter
    the likelihood, so their posterior is exactly iid :math:`\mathrm{Normal}(0, 1)`,
    independent of :math:`\sigma`: a sampler would spend ``n_cells`` dimensions
    (and most of its leapfrog steps) rediscovering it. :func:`sdcbayes.inference.fit`
    therefore samples ``sigma`` alone and then calls :meth:`complete_posterior`, which
    draws the offsets by exact Monte Carlo from a generator seeded by the fit's stamped
    seed and stores ``p`` (dims ``chain, draw, cell``, float64), one draw of
    :math:`p_k` per draw of :math:`\sigma`. Only ``p`` is stored (neither the offsets
    nor ``logit p``): it is all the risk needs, and a draws x cells array per stored
    quantity is the posterior's whole size. A fixed ``sigma`` leaves nothing to sample:
    the posterior is then this Monte Carlo step alone.

    Parameters
    ----------
    fk : array-like of int, shape (n_cells,)
        Sample frequencies, ``f_k >= 1``.
    Fk_hat : array-like of float, shape (n_cells,)
        Weight sums :math:`\hat F_k`, positive.
    sigma : float, optional
        Fix the logit-scale spread (``0`` gives the closed form). ``None`` (default)
        learns it from ``within_ss`` / ``within_df``.
    within_ss, within_df : float, int, optional
        Pooled within-cell sum of squares of ``logit(1/w)`` and its degrees of freedom
        (see :func:`within_cell_spread`); needed when ``sigma`` is learnt.
    cell_names : sequence, optional
        Labels of the cells (coordinate ``cell``); default ``0 .. n_cells - 1``.
    priors : dict, optional
        Overrides of the ``sigma`` prior (default ``HalfNormal(sigma=1)``: a spread of
        logit inclusion probabilities of 1 means weights varying about 2.7-fold within a
        cell, which is already large).
    """

    name: ClassVar[str] = "negbin"
    default_priors: ClassVar[dict[str, PriorSpec]] = {
        "sigma": {"dist": "HalfNormal", "sigma": 1.0},
    }
    prior_supports: ClassVar[dict[str, str]] = {"sigma": "positive"}

    def __init__(
        self,
        fk,
        Fk_hat,
        sigma: float | None = None,
        within_ss: float | None = None,
        within_df: int | None = None,
        cell_names: Sequence | None = None,
        priors: Mapping[str, PriorSpec] | None = None,
    ):
        fk_arr = np.asarray(fk)
        Fk_arr = np.asarray(Fk_hat, dtype=float)
        if fk_arr.ndim != 1 or fk_arr.size == 0:
            raise InputError(
                f"fk must be a non-empty 1-D vector (one count per cell); got shape {fk_arr.shape}"
            )
        fk_float = fk_arr.astype(float)
        if (
            np.any(~np.isfinite(fk_float))
            or np.any(fk_float < 1)
            or np.any(fk_float != np.round(fk_float))
        ):
            raise InputError(
                "fk must hold whole numbers >= 1 (observed cells only); drop empty cells first"
            )
        if Fk_arr.shape != fk_arr.shape:
            raise InputError(
                f"Fk_hat must have one value per cell ({fk_arr.size}); got shape {Fk_arr.shape}"
            )
        if np.any(~np.isfinite(Fk_arr)) or np.any(Fk_arr <= 0):
            raise InputError(
                "Fk_hat (weight sums) must be positive and finite; check the sampling weights"
            )
        self.fk = fk_float.astype(np.int64)
        self.Fk_hat = Fk_arr
        n_cells = self.fk.size
        if cell_names is None:
            cell_names = np.arange(n_cells)
        cell_names = list(cell_names)
        if len(cell_names) != n_cells:
            raise InputError(
                f"cell_names has {len(cell_names)} labels for {n_cells} cells; pass one per cell"
            )
        # the cell coordinate labels draws: two cells under one label could not be told apart
        if len(set(cell_names)) != n_cells:
            raise InputError("cell_names has duplicate labels; cells must be labelled uniquely")
        self.cell_names = cell_names
        # Plug-in of seed 004 eq. 4, capped at 1 (weights below one would give p_hat > 1).
        self.p_hat = np.minimum(self.fk / self.Fk_hat, 1.0)
        # its logit m_k = logit(f_k / Fhat_k) = -log(Fhat_k / f_k - 1), exact however
        # small p_hat is (a clip at EPS made every cell of mean weight above 1e9 alike)
        self.logit_p_hat = _logit_inverse(self.Fk_hat / self.fk)

        if sigma is not None:
            # sigma=True would read as 1.0: a switch is no spread
            if isinstance(sigma, bool | np.bool_) or not isinstance(
                    sigma, int | float | np.integer | np.floating):
                raise InputError(
                    f"sigma must be a number >= 0 (the logit-scale spread; 0 gives the closed "
                    f"form) or None to learn it; got {sigma!r}"
                )
            sigma = float(sigma)
            if not (np.isfinite(sigma) and sigma >= 0):
                raise InputError(f"sigma must be a finite number >= 0; got {sigma}")
            if isinstance(priors, Mapping) and "sigma" in priors:
                raise InputError(
                    "sigma is fixed, so a 'sigma' prior has no effect; "
                    "drop the prior or pass sigma=None"
                )
            # every other entry (a typo, a list) is refused as when sigma is learnt
            merge_priors(self.default_priors, priors, self.name,
                         supports=self.prior_supports)
            self.priors = {"sigma": {"dist": "Fixed", "value": sigma}}
        else:
            if within_ss is None or within_df is None:
                raise InputError(
                    "learning sigma needs within_ss and within_df (see within_cell_spread); "
                    "pass them, build with NegativeBinomialModel.from_microdata, or fix sigma"
                )
            within_ss = float(np.sum(within_ss))
            # int() would truncate 3.7 to 3 degrees of freedom without a word
            within_df = check_whole("within_df", np.sum(within_df), 0,
                                    what=" (the sum of f_k - 1 over the cells)")
            if within_df >= 1 and (not np.isfinite(within_ss) or within_ss < 0):
                raise InputError(f"within_ss must be a finite sum of squares >= 0; got {within_ss}")
            problem = sigma_unlearnable(within_ss, within_df)
            if problem:
                raise InputError(f"{problem}; use the closed form or pass sigma=<value>")
            self.priors = merge_priors(self.default_priors, priors, self.name,
                                       supports=self.prior_supports, sizes={"sigma": None})
        self.sigma = sigma
        self.within_ss = within_ss
        self.within_df = within_df
        # near_one_spread's diagnostic, set by from_microdata (the cell table alone has
        # no weights); stamped in data_summary when there is one
        self.near_one = None
        self._model = None

    @classmethod
    def from_microdata(cls, md, sigma: float | None = None, priors=None) -> NegativeBinomialModel:
        """Build the model from a :class:`sdcbayes.Microdata`.

        Uses ``md.cells.fk``, ``md.cells.Fk_hat``, ``md.weights`` and ``md.record_cell``
        (ARCHITECTURE.md, data-layer contract). When sigma is learnt, also runs
        :func:`near_one_spread` on the weights and keeps its result in
        :attr:`near_one` (stamped by :meth:`data_summary`; the assessment warns from it,
        :func:`near_one_warning`).

        Raises
        ------
        InputError
            Cells matched as wildcards (``missing="wildcard"`` with missing key values):
            use ``missing="category"`` or ``"drop"``.
        """
        if getattr(md, "weights", None) is None:
            raise DataError(
                "the negative-binomial model needs sampling weights; "
                "pass weight=<column> to Microdata"
            )
        # a wildcard cell's f_k and weight sum count the records it matches again, and
        # the file-level sums (ER, records above the benchmark) would count them as records
        require_one_cell_per_record(
            md, "negative-binomial",
            instead="the closed form (sdcbayes.risk.assess.assess_closed_form) for sdcMicro's "
                    "wildcard matching")
        cells = md.cells
        fk = np.asarray(cells.fk)
        Fk_hat = np.asarray(cells.Fk_hat, dtype=float)
        ss, df = (
            (None, None) if sigma is not None else within_cell_spread(md.weights, md.record_cell)
        )
        model = cls(fk, Fk_hat, sigma=sigma, within_ss=ss, within_df=df, priors=priors)
        if sigma is None:
            # weights near 1 can set the learnt spread alone (near_one_spread); the
            # assessment warns from the stamp (risk.posterior_assess.assess_from_posterior)
            model.near_one = near_one_spread(md.weights, md.record_cell)
        return model

    # ---------------------------------------------------------------- the graph
    def build(self):
        """Return the PyMC model (built once, then cached): ``sigma`` and ``within_ss``.

        The cells' ``p`` are not in the graph; see :meth:`complete_posterior`.
        """
        if self._model is not None:
            return self._model
        import pymc as pm

        with pm.Model(coords={"cell": self.cell_names}) as model:
            # The cell table as constant data (what complete_posterior uses); float64:
            # pm.Data would store integers as int32.
            pm.Data("fk", self.fk.astype(np.float64), dims="cell")
            pm.Data("Fk_hat", self.Fk_hat, dims="cell")
            pm.Data("logit_p_hat", self.logit_p_hat, dims="cell")
            # No per-cell node: given sigma, p_k is drawn exactly after sampling.
            if self.sigma is None:
                sigma = prior_to_rv(pm, "sigma", self.priors["sigma"])
            else:
                pm.Data("sigma", self.sigma)
            if self.sigma is None:
                # S ~ sigma^2 chi^2_nu == Gamma(nu/2, rate 1/(2 sigma^2)). NumPy float64
                # constants: PyTensor would store a whole Python float such as 7.0 as
                # float32 and evaluate gammaln(nu/2) in single precision.
                pm.Gamma(
                    "within_ss",
                    alpha=np.float64(self.within_df / 2.0),
                    beta=np.float64(0.5) / sigma**2,
                    observed=np.float64(self.within_ss),
                )
        self._model = model
        return model

    # ---------------------------------------------------------------- cell draws
    def cell_p(self, sigma, rng, *, mode: bool = False) -> np.ndarray:
        r"""Draws of :math:`p_k` given draws of :math:`\sigma`, exactly.

        .. math::

            p_k = \operatorname{expit}\!\left(m_k + \sigma\, z_k / \sqrt{f_k}\right),
            \qquad z_k \sim \mathrm{Normal}(0, 1) \ \text{iid},

        with :math:`m_k = \operatorname{logit}\hat p_k` (seed 004, eq. 4): the model's
        conditional posterior of :math:`p_k` (class docstring), one independent
        :math:`z` per draw and cell.

        Parameters
        ----------
        sigma : array-like of float, shape (...)
            Draws of sigma (e.g. ``(chain, draw)``).
        rng : numpy.random.Generator
            Source of the offsets (:func:`offset_generator` in a fit); filled in C
            order, draw after draw.
        mode : bool
            ``z = 0`` (the offsets' posterior mode) instead of random offsets: the
            point estimate of ``fit(method="map", laplace=False)``.

        Returns
        -------
        numpy.ndarray of float64, shape ``sigma.shape + (n_cells,)``
        """
        sigma = np.asarray(sigma, dtype=float)
        m = self.logit_p_hat
        scale = 1.0 / np.sqrt(self.fk.astype(float))
        flat = sigma.reshape(-1)
        p = np.empty((flat.size, self.fk.size))
        # A few draws at a time: the offsets and logits of all draws would be two more
        # draws x cells arrays next to p (the generator fills in C order, so the chunks
        # draw what one call would).
        step = max(1, _CHUNK_ELEMENTS // max(1, self.fk.size))
        for start in range(0, flat.size, step):  # loop over chunks of draws
            s = flat[start:start + step, None]
            z = 0.0 if mode else rng.standard_normal((s.shape[0], self.fk.size))
            p[start:start + step] = expit(m + s * z * scale)
        return p.reshape(sigma.shape + (self.fk.size,))

    def complete_posterior(self, idata, settings: Mapping[str, Any]) -> None:
        """Add the cells' ``p`` to a posterior of ``sigma`` (in place); fit's post-step.

        :func:`sdcbayes.inference.fit` samples ``sigma`` alone (the cells' offsets are
        exactly iid Normal(0, 1) a posteriori, independent of ``sigma``; class docstring)
        and then calls this: one draw of ``p`` per draw of ``sigma`` (:meth:`cell_p`),
        offsets from :func:`offset_generator` of ``settings["random_seed"]``, so the
        same seed gives the same ``p``. With a fixed ``sigma`` there is no posterior
        group yet (nothing was sampled); it is created with ``settings``' chains x draws
        (1 x 1 for ``method="map"`` with ``laplace=False``).

        Parameters
        ----------
        idata : arviz.InferenceData or xarray.DataTree
            From the sampler, with ``sigma`` in its posterior when sigma is learnt.
        settings : mapping
            ``random_seed``, ``method``, ``chains``, ``draws`` (and ``laplace`` for
            "map"), as :func:`sdcbayes.inference.fit` stamps them.
        """
        mode = settings.get("method") == "map" and not settings.get("laplace", True)
        coords = {"cell": self.cell_names}
        if self.sigma is None:
            sigma = _group(idata, "posterior")["sigma"]
            coords |= {"chain": sigma["chain"].values, "draw": sigma["draw"].values}
            sigma = sigma.transpose("chain", "draw").values
        else:
            chains, draws = (1, 1) if mode else (settings["chains"], settings["draws"])
            coords |= {"chain": np.arange(chains), "draw": np.arange(draws)}
            sigma = np.full((chains, draws), self.sigma)
        p = xr.DataArray(self.cell_p(sigma, offset_generator(settings["random_seed"]), mode=mode),
                         dims=("chain", "draw", "cell"), coords=coords)
        _add_draws(idata, "posterior", p)

    def data_summary(self) -> dict[str, Any]:
        """JSON-serialisable summary of the cell table and the weights' spread.

        Totals and ``data_fingerprint``, a hash of ``fk`` and ``Fk_hat``
        (:func:`sdcbayes.models.beta_binomial.data_fingerprint`). A model from
        :meth:`from_microdata` that learns sigma on a file with weights near 1 in cells
        of two or more records adds ``near_one_weights`` (:func:`near_one_spread`: their
        number, sigma-hat with and without them); other files' summaries are unchanged.
        """
        return {
            "model": self.name,
            "n_cells": int(self.fk.size),
            "n_records": int(self.fk.sum()),
            "n_sample_uniques": int(np.sum(self.fk == 1)),
            "sum_weights": float(self.Fk_hat.sum()),
            "sigma_fixed": self.sigma,
            "within_ss": self.within_ss,
            "within_df": self.within_df,
            "pooled_within_sd": (
                math.sqrt(self.within_ss / self.within_df) if self.within_df else None
            ),
            # the cell table itself: totals cannot tell two tables apart
            "data_fingerprint": data_fingerprint(self.fk, self.Fk_hat),
        } | ({"near_one_weights": dict(self.near_one)} if self.near_one else {})

    # ---------------------------------------------------------------- checks
    def _population_statistics(self, p: xr.DataArray, rng, max_draws: int) -> xr.Dataset:
        """Simulate F_k = f_k + NegBin(f_k, p_k) per draw and reduce to file-level statistics.

        Statistics: total population of the observed cells (observed counterpart:
        the Horvitz-Thompson total sum_k Fhat_k), tau1 = #{f_k = 1, F_k = 1} and
        tau2 = sum_{f_k = 1} 1/F_k (ARCHITECTURE.md, notation; no observed counterpart).
        """
        p = p.transpose("chain", "draw", "cell")
        n_draws = p.sizes["draw"]
        if n_draws > max_draws:
            p = p.isel(draw=np.linspace(0, n_draws - 1, max_draws).round().astype(int))
        shape = (p.sizes["chain"], p.sizes["draw"])
        flat = p.values.reshape(-1, self.fk.size)
        unique = self.fk == 1
        total, tau1, tau2 = (np.empty(flat.shape[0]) for _ in range(3))
        # A few draws at a time: a draws x cells array of F next to the posterior's p
        # doubled the memory (1e5 cells x 4000 draws: 3.2 GB). The generator fills
        # element by element in C order, so the chunks draw what one call would.
        step = max(1, _CHUNK_ELEMENTS // max(1, self.fk.size))
        for start in range(0, flat.shape[0], step):  # loop over chunks of draws
            pv = np.clip(flat[start:start + step], EPS, 1.0)
            F = self.fk + rng.negative_binomial(np.broadcast_to(self.fk, pv.shape), pv)
            total[start:start + step] = F.sum(axis=-1)
            tau1[start:start + step] = np.sum(unique & (F == 1), axis=-1)
            tau2[start:start + step] = np.sum(np.where(unique, 1.0 / F, 0.0), axis=-1)
        dims = ("chain", "draw")
        coords = {"chain": p["chain"].values, "draw": p["draw"].values}
        return xr.Dataset(
            {
                "population_total": (dims, total.reshape(shape)),
                "tau1": (dims, tau1.reshape(shape)),
                "tau2": (dims, tau2.reshape(shape)),
            },
            coords=coords,
        )

    def _observed(self) -> dict[str, float]:
        obs = {"population_total": float(self.Fk_hat.sum()), "tau1": np.nan, "tau2": np.nan}
        if self.sigma is None:
            obs["within_ss"] = float(self.within_ss)
        return obs

    def prior_predictive(self, samples: int = 500, random_seed=None) -> PredictiveCheck:
        """Draw sigma, p, ``within_ss`` and population counts from the design-informed prior.

        Here "prior" means before the within-cell scatter of the weights is used: p_k is
        centred on the plug-in with a spread drawn from the ``sigma`` prior.

        Parameters
        ----------
        samples : int
            Prior draws, a whole number >= 1.
        random_seed : int, optional
            Seed (>= 0); without one a seed is drawn, and either way it is recorded in
            the result's ``random_seed`` and the draws' stamps.
        """
        import pymc as pm

        samples = check_whole("samples", samples, 1)
        seed = checked_seed(random_seed)
        rng = np.random.default_rng(seed)
        with quiet_logs():
            idata = pm.sample_prior_predictive(draws=samples, model=self.build(),
                                               random_seed=rng)
        # the graph holds sigma only: p given sigma is drawn as in a fit (cell_p)
        if self.sigma is None:
            sigma = _group(idata, "prior")["sigma"].transpose("chain", "draw")
            coords = {"chain": sigma["chain"].values, "draw": sigma["draw"].values}
            sigma = sigma.values
        else:
            coords = {"chain": [0], "draw": np.arange(samples)}
            sigma = np.full((1, samples), self.sigma)
        _add_draws(idata, "prior", xr.DataArray(
            self.cell_p(sigma, rng), dims=("chain", "draw", "cell"),
            coords=coords | {"cell": self.cell_names}))
        stamps = predictive_stamps(self, seed, "prior")
        for group in ("prior", "prior_predictive"):
            _stamp_group(idata, group, stamps)
        stats = self._population_statistics(_group(idata, "prior")["p"], rng, samples)
        if self.sigma is None:
            stats["within_ss"] = _group(idata, "prior_predictive")["within_ss"]
        return PredictiveCheck("prior", stats, self._observed(), idata, seed)

    def posterior_predictive(
        self, idata, random_seed=None, max_draws: int = 1000
    ) -> PredictiveCheck:
        """Replicated ``within_ss`` and population counts from the posterior in ``idata``.

        At most ``max_draws`` draws per chain are used to simulate population counts
        (keeps the draws x cells array small).

        Parameters
        ----------
        idata : arviz.InferenceData or xarray.DataTree
            A posterior of this model (:func:`sdcbayes.inference.fit`).
        random_seed : int, optional
            As for :meth:`prior_predictive`.
        max_draws : int
            Draws per chain used, a whole number >= 1.

        Raises
        ------
        InputError
            The posterior's stamps name another model or another cell table: its
            ``p_k`` would be combined with this table's ``f_k``.
        """
        import pymc as pm

        check_posterior_of(self, idata, "posterior_predictive")
        max_draws = check_whole("max_draws", max_draws, 1)
        seed = checked_seed(random_seed)
        rng = np.random.default_rng(seed)
        stats = self._population_statistics(_group(idata, "posterior")["p"], rng, max_draws)
        pp = None
        if self.sigma is None:
            with quiet_logs():
                pp = pm.sample_posterior_predictive(
                    idata,
                    model=self.build(),
                    var_names=["within_ss"],
                    random_seed=rng,
                    progressbar=False,
                )
            _stamp_group(pp, "posterior_predictive", predictive_stamps(self, seed, "posterior"))
            ss = _group(pp, "posterior_predictive")["within_ss"]
            stats["within_ss"] = ss.sel(draw=stats["draw"].values)
        return PredictiveCheck("posterior", stats, self._observed(), pp, seed)
