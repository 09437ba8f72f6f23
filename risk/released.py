r"""Posterior disclosure risk of a released file whose key values were suppressed.

The agency fits the latent-class model once, on the ORIGINAL sample (complete keys,
:func:`sdcbayes.risk.posterior_assess.assess_posterior` with ``store_profiles=True``),
and scores the released file from the same draws. A released record with blanks on the
keys B and the (true) values :math:`x_O` on the others matches the pattern, or rectangle,
:math:`p = \{x_O\} \times \prod_{j \in B}(\text{every level of } j)`, so its population
count is

.. math::

    F_p = f_p + X_p,\qquad X_p = \sum_{c \in p} X_c,

with :math:`f_p = \sum_{c\in p} f_c` the number of ORIGINAL sample records whose keys
agree with :math:`x_O` (at least one: the record itself) and :math:`X_c` the non-sample
count of the full key cell c. Given a posterior draw the cells are independent (the
mixture's conditional independence), with the package's own laws
(:mod:`sdcbayes.models.latent_class`, "Overdispersion"; ``simulate_excess``):

* an observed cell (:math:`f_c > 0`): :math:`X_c \mid f_c \sim \mathrm{NegBin}(\kappa + f_c,
  \rho_c)`, :math:`\rho_c = b_c/(b_c + \lambda_c)`, :math:`b_c = \kappa + n\pi_c`;
* an unobserved cell: :math:`X_c \sim \mathrm{NegBin}(\kappa, \rho_c)` (the sample's
  zero is information too);
* :math:`\kappa = \infty`: :math:`X_c \sim \mathrm{Po}(\lambda_c)`, so
  :math:`X_p \sim \mathrm{Po}(\lambda_p)` and :math:`E(1/F_p) = {}_1F_1(1; f_p+1;
  -\lambda_p)/f_p` exactly (Skinner & Shlomo 2008, section 2).

and :math:`E(1/F_p \mid \theta) = \int_0^1 t^{f_p-1}\prod_{c\in p}\mathrm{PGF}_c(t)\,dt`
(:func:`sdcbayes.risk.posterior.inverse_moment_sum`; the step behind seed ``004_…``
eq. 6 for one negative binomial). The pattern's cells split three ways (the package's
derivation):

* explicit cells, exact in the product: the pattern's observed cells (the fit's stored
  ``pi`` and ``lam``) and its ``top_cells`` most probable unobserved cells
  (:meth:`~sdcbayes.models.latent_class.PatternSums.top_cells`);
* the remainder R, every other cell: its linear sums :math:`\Lambda_R = \sum\lambda_c`,
  :math:`\sum\lambda_c y_c` and :math:`Q_R = \sum\lambda_c^2` are exact (the pattern's
  sums from :class:`~sdcbayes.models.latent_class.PatternSums`, without listing the
  blank keys' levels, less the explicit cells'), and the factor
  :math:`\kappa/(\kappa + y_c)` is taken at the :math:`\lambda`-weighted mean
  :math:`\bar y`: mean :math:`M_R = \Lambda_R\kappa/(\kappa + \bar y)`, variance
  :math:`V_R = M_R + \kappa Q_R/(\kappa + \bar y)^2`;
* R as one negative binomial matched on :math:`M_R, V_R` (Poisson where
  :math:`V_R \approx M_R`), one more factor of the product.

On the demo after greedy 3-anonymity, scored from the package's default fit (4 chains x
500 draws): the records' ER 29.24 against a true 29.19, where the closed form gives 14.88
(``python benchmarks/released_risk.py``, which prints the other suppressions too; README,
"Risk after local suppression"). Matching the whole unobserved part to one negative
binomial, without the top cells, is more than 10% off on a pattern where one unobserved
cell is large, and 4 top cells bring it within 1% of the exact listing
(``tests/test_released.py``, ``test_top_cells_rescue_a_pattern_with_one_large_unobserved_cell``);
where the top cells cover the pattern the value is the exact listing's.

A record's risk is the posterior mean of :math:`E(1/F_p \mid \theta)` (Rao-Blackwellised),
the file's ER their sum; intervals are over the parameters' posterior (the summary's
``*_hyper_interval``), not predictive: the randomness of the F given the parameters is
not drawn (``interval_kind``).

Imports NumPy, SciPy, pandas, xarray and the ``risk`` modules at import time;
:mod:`sdcbayes.models` and ArviZ inside :func:`assess_released`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from sdcbayes.exceptions import InputError
from sdcbayes.provenance import stamp
from sdcbayes.risk.assess import check_microdata, check_threshold
from sdcbayes.risk.measures import benchmark_rule
from sdcbayes.risk.posterior import (
    CHUNK_ELEMENTS,
    DEFAULT_QUANTILES,
    _check_quantiles,
    inverse_moment_sum,
    mean_over_draws,
)
from sdcbayes.risk.posterior_assess import (
    EXACT_NOTE,
    PosteriorAssessment,
    _flat_draws,
    _functional_diagnostics,
    _interval,
    _latent_class_excess,
    _latent_class_inverse,
    _posterior_dataset,
    _stamps,
    _stratum_key_rates,
    check_posterior_fits,
    latent_class_pi,
    population_is_sample,
)

__all__ = ["DEFAULT_TOP_CELLS", "INTERVAL_KIND", "assess_released"]

#: Unobserved cells of each pattern evaluated exactly (the others as one matched negative
#: binomial): 4 already rescue the tests' adversarial pattern (module docstring); the
#: cost grows with them and with the draws (benchmarks/released_risk.py prints the seconds).
DEFAULT_TOP_CELLS = 16

#: Draws evaluated at once per pattern (memory: draws x cells x 226 nodes x 8 bytes).
DEFAULT_DRAW_CHUNK = 64

#: The summary's ``interval_kind``: what the intervals are over.
INTERVAL_KIND = ("hyper: over the posterior of the parameters (the conditional mean given "
                 "them), not the posterior predictive")

#: The functional whose R-hat and ESS diagnose the released file's draws (its ER).
_DIAGNOSED = {"expected_reidentifications": "expected_reidentifications_conditional_mean"}

# remainder below this share of the pattern's excess: rounding, taken as zero
_REMAINDER_EPS = 1e-12


def _released_frame(released) -> pd.DataFrame:
    frame = released if isinstance(released, pd.DataFrame) else getattr(released, "frame", None)
    if not isinstance(frame, pd.DataFrame):
        raise InputError(
            f"released must be the released file as a pandas DataFrame (or an object with "
            f"a .frame, such as a protection result); got {type(released).__name__}")
    return frame


def _check_released(md, frame: pd.DataFrame) -> np.ndarray:
    """The released file against the original; returns the blank mask (records, keys)."""
    keys = list(md.keys)
    orig = md.frame
    if len(frame) != len(orig) or not frame.index.equals(orig.index):
        raise InputError(
            f"the released file must hold the original's records in the original's order, "
            f"with its index ({len(orig)} records); got {len(frame)} records"
            + ("" if len(frame) != len(orig) else " with another index or order")
            + ": keep the index of md.frame (e.g. frame = md.frame.copy() before "
            "suppressing, or released.set_index(md.frame.index) if only the labels were lost)")
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise InputError(f"the released file lacks the key column(s) {missing}")
    blank = frame[keys].isna().to_numpy()
    for j, k in enumerate(keys):
        shown = ~blank[:, j]
        a = orig[k].to_numpy()[shown]
        b = frame[k].to_numpy()[shown]
        same = _same_values(a, b)
        if not same.all():
            i = np.flatnonzero(shown)[np.flatnonzero(~same)[0]]
            raise InputError(
                f"{int((~same).sum())} released value(s) of key {k!r} differ from the "
                f"original (e.g. record {frame.index[i]!r}: {orig[k].iloc[i]!r} -> "
                f"{frame[k].iloc[i]!r}). The released-file risk assumes that values were only "
                "suppressed (blank); PRAM, noise or recoding of key values is not supported "
                "yet: assess such a file with the closed form (assess_closed_form)")
    return blank


def _same_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: the same value, also when read back as text or as another number type.

    Values are compared as they are first (one vectorised comparison); only the
    mismatches are turned into text ("1" and 1 agree) and then into numbers (1 and 1.0
    agree), so a file whose values are unchanged costs no conversion.
    """
    try:
        same = np.asarray(a == b, dtype=bool)
        if same.shape != a.shape:  # NumPy's scalar answer for types it cannot compare
            raise TypeError
    except (TypeError, ValueError):
        same = np.asarray(a.astype(object) == b.astype(object), dtype=bool)
    bad = np.flatnonzero(~same)
    if bad.size:
        same[bad] = pd.Series(a[bad], dtype=object).astype(str).to_numpy() == \
            pd.Series(b[bad], dtype=object).astype(str).to_numpy()
        bad = np.flatnonzero(~same)
    if bad.size:
        # numbers read back as other types (1 vs 1.0) are the same value
        an = pd.to_numeric(pd.Series(a[bad]), errors="coerce").to_numpy(dtype=float)
        bn = pd.to_numeric(pd.Series(b[bad]), errors="coerce").to_numpy(dtype=float)
        same[bad[np.isfinite(an) & (an == bn)]] = True
    return same


def _check_posterior(md, posterior, post: xr.Dataset) -> dict[str, Any]:
    """Refusals that concern the posterior (before any work); returns its stamps."""
    st = _stamps(posterior)
    settings = st.get("settings") if isinstance(st.get("settings"), dict) else {}
    summary = st.get("data_summary") if isinstance(st.get("data_summary"), dict) else {}
    attrs = dict(getattr(posterior, "attrs", None) or {})
    if settings.get("cluster_correction") is not None or "cluster_correction" in attrs:
        raise InputError(
            "the posterior was fitted with a cluster correction of the sample uniques' rates, "
            "which the released-file risk does not support yet (the correction applies to "
            "observed full cells, not to patterns): fit without cluster_correction")
    sz = summary.get("structural_zeros")
    msz = post.get("mass_structural_zero")
    if sz or (msz is not None and float(np.max(msz.values)) > 0):
        raise InputError(
            "the posterior has structural zeros, which the released-file risk does not "
            "support yet (the pattern sums would have to leave out the forbidden "
            "rectangles): fit without structural_zeros")
    return settings


def _profiles(post: xr.Dataset, spec) -> list[np.ndarray]:
    from sdcbayes.models.latent_class import _safe_names

    names = _safe_names(spec.keys)
    absent = [f"phi_{nm}" for nm in names if f"phi_{nm}" not in post]
    if absent or "w" not in post:
        raise InputError(
            "the posterior holds no class profiles (" + ", ".join(absent or ["w"]) + "), "
            "which the risk of key combinations the sample never had needs: fit with "
            "assess_posterior(md, store_profiles=True) (or LatentClassModel.sample("
            "store='all', store_profiles=True)), on the original file")
    phi = [_flat_draws(post[f"phi_{nm}"]).astype(float) for nm in names]
    H = post["w"].sizes.get("latent_class")
    for nm, p, L in zip(names, phi, spec.n_levels, strict=True):
        if p.shape[1:] != (H, int(L)):
            raise InputError(f"profile phi_{nm} has shape {p.shape[1:]} per draw, the model "
                             f"{(H, int(L))}: the posterior was not fitted to this file")
    return phi


def _levels_check(spec, ps, pi) -> None:
    """The profiles reproduce the stored pi on a few draws and cells (same fit).

    Through :meth:`PatternSums.cells` on the rectangle of every cell, which the patterns'
    explicit cells use: the check covers that product too.
    """
    S, C = pi.shape
    ds = np.unique(np.linspace(0, S - 1, min(S, 4)).round().astype(int))
    cs = np.unique(np.linspace(0, C - 1, min(C, 50)).round().astype(int))
    got = ps.cells(ps.rectangle([None] * spec.n_keys), spec.key_codes[cs], ds)[0]
    if not np.allclose(got, pi[ds][:, cs], rtol=1e-6, atol=1e-300):
        raise InputError(
            "the posterior's class profiles do not reproduce its cell probabilities pi "
            "(were they stored by another fit, or pi corrected afterwards?): fit again "
            "with store_profiles=True")


def assess_released(
    md_original,
    released,
    posterior,
    *,
    N: float | None = None,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    threshold: float | None = None,
    top_cells: int = DEFAULT_TOP_CELLS,
    draw_chunk: int = DEFAULT_DRAW_CHUNK,
) -> PosteriorAssessment:
    r"""Posterior risk of a released file with suppressed key values (module docstring).

    Parameters
    ----------
    md_original : sdcbayes.Microdata
        The ORIGINAL file (complete keys) the latent-class model was fitted to.
    released : pandas.DataFrame or object with ``.frame``
        The released file: the original's records in the original's order and index,
        key values either as in the original or missing (suppressed).
    posterior : arviz.InferenceData or xarray.Dataset
        The latent-class fit on ``md_original`` with its class profiles:
        ``assess_posterior(md_original, store_profiles=True).idata``, or
        ``LatentClassModel.from_microdata(md_original).sample(store="all", N=...,
        store_profiles=True)``.
    N : float, optional
        Population size (default as :func:`~sdcbayes.risk.posterior_assess.latent_class_pi`).
    quantiles : sequence of float
        Quantiles of the intervals (over the parameters' posterior), default the 90%.
    threshold : float, optional
        Also count records above this risk (posterior mean, and per draw).
    top_cells : int, default :data:`DEFAULT_TOP_CELLS`
        Unobserved cells per pattern evaluated exactly (0: the whole unobserved part as
        one matched negative binomial).
    draw_chunk : int, default :data:`DEFAULT_DRAW_CHUNK`
        Draws evaluated at once (bounds memory; the result does not depend on it).

    Returns
    -------
    PosteriorAssessment
        ``records`` indexed like the released file: ``record``, ``pattern``, ``blanks``
        (suppressed keys), ``f_p`` (original sample records matching the visible keys),
        ``risk`` (posterior mean of :math:`E(1/F_p\mid\theta)`), ``risk_lo``, ``risk_hi``
        (quantiles over the parameters), ``F_mean``. ``cells`` is one row per pattern
        (key values, blank where suppressed; ``records``, ``f_p``, risks). ``summary``:
        ``expected_reidentifications`` with ``_hyper_interval`` (over the parameters;
        ``interval_kind``), ``expected_reidentifications_blanked_records`` (its part over
        records with a blank), ``n_patterns``, ``n_blanked_patterns``,
        ``n_blanked_records``, ``n_blanks``, ``top_cells``, ``n_above_threshold`` (and
        ``_interval``, over the parameters as in :func:`assess_from_posterior`),
        ``n_above_benchmark_at_mean_risk``, ``diagnostics`` (R-hat, ESS of ER given the
        parameters, and ``problems``: what :func:`~sdcbayes.inference.diagnostics.
        check_diagnostics` finds in them, as for the fit itself; where the sample is the
        population, none and a ``note``). ``file_draws``: the per-draw ER given the parameters
        (``expected_reidentifications_conditional_mean``, and its blanked part).

    Raises
    ------
    InputError
        Before any work: the released file's records differ in number, order or index
        from the original's; a shown key value differs from the original (PRAM, noise,
        recoding: not supported yet); the original has missing key values; the posterior
        lacks the class profiles, is another model's or another file's, has structural
        zeros or a cluster correction (not supported yet), or extrapolates stratum by
        stratum (a stratum that is a key; not supported yet).

    Warns
    -----
    sdcbayes.inference.diagnostics.ConvergenceWarning
        Each problem of ``diagnostics["problems"]`` (R-hat or ESS of the ER given the
        parameters), as :func:`~sdcbayes.risk.posterior_assess.assess_posterior` warns of
        its fit's; not where the sample is the population (exact results).

    Notes
    -----
    Evaluated per pattern, never per record: memory is draws x (cells + patterns'
    explicit cells), never draws x records. The no-blank file gives exactly
    :func:`~sdcbayes.risk.posterior_assess.assess_from_posterior`'s ER and risks.
    """
    from sdcbayes.models.latent_class import LatentClassModel, PatternSums

    # ---- every check before any work
    check_microdata(md_original, "assess_released")
    threshold = check_threshold(threshold)
    qs = _check_quantiles(quantiles)
    for name, v, lo in (("top_cells", top_cells, 0), ("draw_chunk", draw_chunk, 1)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lo:
            raise InputError(f"{name} must be an integer >= {lo}; got {v!r}")
    md = md_original
    keys = list(md.keys)
    record_cell = np.asarray(md.record_cell)
    if np.any(record_cell < 0) or md.frame[keys].isna().to_numpy().any():
        raise InputError(
            "the original file has missing key values, which the released-file risk does not "
            "support yet (a record blank before suppression is not a pattern of its true "
            "values): assess a file with complete keys, or the released file with the closed "
            "form")
    frame = _released_frame(released)
    blank = _check_released(md, frame)
    check_posterior_fits(md, posterior, "latent-class")
    post = _posterior_dataset(posterior)
    settings = _check_posterior(md, posterior, post)
    pi, n, N = latent_class_pi(md, posterior, N=N)
    if not 0 < n <= N:
        raise InputError(f"need 0 < n <= N; got n={n:g}, N={N:g}: pass N=..., the population size")
    lam_stored = _latent_class_excess(posterior, post, N)
    if lam_stored is not None and _stratum_key_rates(md, N) is not None:
        raise InputError(
            f"the stratum {md.strata!r} is one of the keys, and the fit's population is "
            "extrapolated stratum by stratum, which the released-file risk does not support "
            "yet: leave the stratum out of the keys, or assess with the closed form")
    stamped = {**dict(post.attrs), **dict(getattr(posterior, "attrs", None) or {})}
    design = bool(stamped.get("weight_classes"))
    spec = LatentClassModel.from_microdata(md, weights=design, n_classes=2)
    if design and (spec.class_weights is None or not np.allclose(
            spec.class_weights, json.loads(stamped["weight_classes"]), rtol=1e-9)):
        raise InputError("the posterior's weight classes are not those of md_original's "
                         "weights: assess the file the model was fitted to")
    phi_all = _profiles(post, spec)
    w = _flat_draws(post["w"]).astype(float)
    S, H = w.shape
    if design:
        # E_h = sum_g phi_hG(g) e_g: each class's excess rate over the weight classes
        E = phi_all[-1] @ spec.excess_rates(N)
    else:
        E = np.full((S, 1), N / n - 1.0)
    phi = phi_all[:spec.n_keys]
    ps = PatternSums(w, phi, E, n)
    _levels_check(spec, ps, pi)
    kap = (_flat_draws(post["kappa"]).astype(float).reshape(-1) if "kappa" in post
           else np.full(S, np.inf))
    if kap.shape != (S,) or np.any(~(kap > 0)):
        raise InputError(f"kappa must hold one positive value (or inf) per draw ({S})")

    # ---- patterns: distinct rows of the records' codes, -1 where suppressed
    codes = spec.key_codes[record_cell].astype(np.int64)
    codes[blank] = -1
    pats, rec_pat, m_p = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    rec_pat = rec_pat.reshape(-1)
    del codes
    P = pats.shape[0]
    is_full = (pats >= 0).all(axis=1)
    first = np.full(P, -1, dtype=np.int64)
    first[rec_pat[::-1]] = np.arange(rec_pat.size)[::-1]
    fk_cells = np.asarray(spec.key_counts, dtype=float)
    m_p_f = m_p.astype(float)

    risk = np.empty(P)
    risk_q = np.empty((len(qs), P))
    F_mean = np.empty(P)
    f_p = np.empty(P)
    er = np.zeros(S)
    er_blank = np.zeros(S)
    above = np.zeros(S)

    def lam_of(sl, cols):
        if lam_stored is not None:
            return lam_stored[sl][:, cols]
        return (N - n) * pi[sl][:, cols]

    from sdcbayes.models.latent_class import expected_inverse_frequency_f

    # ---- full patterns: the observed cell alone, by assess_from_posterior's own formulas
    full = np.flatnonzero(is_full)
    cell_of = record_cell[first[full]]
    f_p[full] = fk_cells[cell_of]
    step = max(1, CHUNK_ELEMENTS // max(S, 1) // 8)
    for c0 in range(0, full.size, step):
        idx, cells = full[c0:c0 + step], cell_of[c0:c0 + step]
        fs = fk_cells[cells]
        inv, F_mean[idx] = _latent_class_inverse(fs, lam_of(slice(None), cells), kap[:, None],
                                                 n * pi[:, cells])
        risk[idx] = mean_over_draws(inv)
        risk_q[:, idx] = np.quantile(inv, qs, axis=0)
        er += inv @ m_p_f[idx]
        if threshold is not None:
            above += (inv > threshold) @ m_p_f[idx]

    # ---- patterns with blanks, grouped by their blank keys (one Gram matrix per group)
    blanked = np.flatnonzero(~is_full)
    bsets = [tuple(np.flatnonzero(pats[p] < 0)) for p in blanked]
    order = sorted(range(blanked.size), key=lambda i: bsets[i])
    rank_draws = np.unique(np.linspace(0, S - 1, min(S, 64)).round().astype(np.int64))
    fin_all = np.isfinite(kap)
    lookup: dict[tuple, dict] = {}
    for i in order:
        p, B = blanked[i], bsets[i]
        shown = [j for j in range(spec.n_keys) if j not in B]
        if B not in lookup:
            lookup.clear()  # one blank set at a time, as the patterns come sorted by it
            table = pd.DataFrame(spec.key_codes[:, shown]) if shown else pd.DataFrame(index=range(
                spec.key_codes.shape[0]))
            lookup[B] = ({(): np.arange(spec.key_codes.shape[0])} if not shown else
                         {(k if isinstance(k, tuple) else (k,)): v for k, v in
                          table.groupby(list(range(len(shown)))).indices.items()})
        obs = lookup[B].get(tuple(int(x) for x in pats[p, shown]), np.empty(0, np.int64))
        obs = np.asarray(obs, dtype=np.int64)
        fc = fk_cells[obs]
        f = float(fc.sum())  # >= 1: the record's own cell is among them
        f_p[p] = f
        rect = ps.rectangle(pats[p])
        top = np.empty((0, spec.n_keys), np.int64)
        if top_cells and fin_all.any():
            top = ps.top_cells(rect, top_cells, rank_draws)
            seen = {tuple(c) for c in spec.key_codes[obs].tolist()}
            top = top[[tuple(c) not in seen for c in top.tolist()]] if top.size else top
        e = np.empty(S)
        xm = np.empty(S)
        for s0 in range(0, S, draw_chunk):
            sl = slice(s0, min(s0 + draw_chunk, S))
            k = kap[sl]
            fin = np.isfinite(k)
            sm = ps.sums(rect, sl)
            es = np.empty(k.shape)
            xs = np.empty(k.shape)
            if (~fin).any():  # Poisson draws: X_p ~ Po(lam_p) exactly
                es[~fin] = expected_inverse_frequency_f(f, sm["lam"][~fin], np.inf)
                xs[~fin] = sm["lam"][~fin]
            if fin.any():
                pi_x, lam_x = ps.cells(rect, top, sl)
                pic = np.concatenate([pi[sl][:, obs], pi_x], axis=1)
                lamc = np.concatenate([lam_of(sl, obs), lam_x], axis=1)
                fcx = np.concatenate([fc, np.zeros(top.shape[0])])
                pic, lamc, kf = pic[fin], lamc[fin], k[fin][:, None]
                lam_p = sm["lam"][fin]
                y = n * pic
                # the remainder: exact linear sums less the explicit cells'
                Lam_R = np.maximum(lam_p - lamc.sum(axis=1), 0.0)
                LY_R = np.maximum(sm["lam_y"][fin] - (lamc * y).sum(axis=1), 0.0)
                Q_R = np.maximum(sm["lam2"][fin] - (lamc ** 2).sum(axis=1), 0.0)
                tiny = Lam_R <= _REMAINDER_EPS * lam_p
                Lam_R = np.where(tiny, 0.0, Lam_R)
                ybar = np.where(Lam_R > 0, LY_R / np.where(Lam_R > 0, Lam_R, 1.0), 0.0)
                kk = kf[:, 0]
                M = Lam_R * kk / (kk + ybar)
                V = M + kk * np.where(tiny, 0.0, Q_R) / (kk + ybar) ** 2
                nb = (V > M * (1.0 + 1e-10)) & (M > 0)
                r_R = np.where(nb, M ** 2 / np.where(nb, V - M, 1.0), 0.0)
                rho_R = np.where(nb, M / np.where(nb, V, 1.0), 1.0)
                b = kf + y
                rho = np.clip(b / (b + lamc), np.finfo(float).tiny, 1.0)
                r = kf + fcx[None, :]
                es[fin] = inverse_moment_sum(
                    f, np.concatenate([r, r_R[:, None]], axis=1),
                    np.concatenate([rho, np.clip(rho_R, np.finfo(float).tiny, 1.0)[:, None]],
                                   axis=1),
                    np.where(nb, 0.0, M))
                xs[fin] = (r * lamc / b).sum(axis=1) + M
            e[sl] = es
            xm[sl] = xs
        risk[p] = mean_over_draws(e[:, None])[0]
        risk_q[:, p] = np.quantile(e, qs)
        F_mean[p] = f + xm.mean()
        er += m_p_f[p] * e
        er_blank += m_p_f[p] * e
        if threshold is not None:
            above += m_p_f[p] * (e > threshold)

    # ---- records (indexed like the released file) and the pattern table
    n_blank = blank.sum(axis=1)
    records = pd.DataFrame({
        "record": np.arange(rec_pat.size),
        "pattern": rec_pat,
        "blanks": n_blank,
        "f_p": f_p[rec_pat],
        "risk": risk[rec_pat],
        "risk_lo": risk_q[0][rec_pat],
        "risk_hi": risk_q[-1][rec_pat],
        "F_mean": F_mean[rec_pat],
    }, index=frame.index.copy())
    for i, q in enumerate(qs[1:-1], start=1):
        records[f"risk_q{q:g}"] = risk_q[i][rec_pat]
    cells = pd.DataFrame({
        k: pd.Series([spec.levels[j][c] if c >= 0 else None for c in pats[:, j]],
                     dtype=object)
        for j, k in enumerate(keys)})
    cells["records"] = m_p
    cells["blanks"] = (pats < 0).sum(axis=1)
    cells["f_p"] = f_p
    cells["risk"] = risk
    cells["risk_lo"] = risk_q[0]
    cells["risk_hi"] = risk_q[-1]
    cells["F_mean"] = F_mean

    # ---- labelled per-draw results
    chain, draw = post.sizes["chain"], post.sizes["draw"]
    fd = {"expected_reidentifications_conditional_mean": (("chain", "draw"),
                                                          er.reshape(chain, draw)),
          "expected_reidentifications_blanked_conditional_mean": (
              ("chain", "draw"), er_blank.reshape(chain, draw))}
    if threshold is not None:
        fd["n_above_threshold"] = (("chain", "draw"), above.reshape(chain, draw))
    file_draws = xr.Dataset(fd, coords={"chain": post["chain"].values,
                                        "draw": post["draw"].values})

    # the fit's own settings, less what this function did not compute
    settings = {k: v for k, v in settings.items() if k != "max_global_risk"}
    prov = stamp("latent-class", data_summary=md.summary(), settings={
        **settings, "quantiles": qs, "threshold": threshold, "top_cells": int(top_cells),
        "route": "released", "N": float(N)})
    file_draws.attrs.update(model="latent-class", sdcbayes_version=prov["sdcbayes_version"],
                            quantiles=qs, interval_kind=INTERVAL_KIND)
    r_all = records["risk"].to_numpy()
    is_blank_rec = n_blank > 0
    summary: dict[str, Any] = {
        "sdcbayes_version": prov["sdcbayes_version"],
        "model": "latent-class",
        "method": "latent-class pattern (fitted on original)",
        "quantiles": qs,
        "interval_level": round(qs[-1] - qs[0], 10),
        "interval_kind": INTERVAL_KIND,
        "n_records": int(rec_pat.size),
        "n_draws": int(S),
        "population_size": float(N),
        "top_cells": int(top_cells),
        "n_patterns": int(P),
        "n_blanked_patterns": int(blanked.size),
        "n_blanked_records": int(is_blank_rec.sum()),
        "n_blanks": int(blank.sum()),
        "blanks_by_key": {k: int(blank[:, j].sum()) for j, k in enumerate(keys)},
        "expected_reidentifications": float(er.mean()),
        "expected_reidentifications_hyper_interval": _interval(er, qs),
        "expected_reidentification_rate": float(er.mean() / max(rec_pat.size, 1)),
        "expected_reidentifications_blanked_records": float(er_blank.mean()),
        "expected_reidentifications_blanked_records_hyper_interval": _interval(er_blank, qs),
        "n_above_benchmark_at_mean_risk": int(np.count_nonzero(benchmark_rule(r_all))),
        "max_risk": float(r_all.max()) if r_all.size else float("nan"),
        "median_risk": float(np.median(r_all)) if r_all.size else float("nan"),
    }
    if threshold is not None:
        summary["risk_threshold"] = float(threshold)
        summary["n_above_threshold"] = float(above.mean())
        summary["n_above_threshold_interval"] = _interval(above, qs)  # over the parameters
        summary["n_above_threshold_at_mean_risk"] = int(np.count_nonzero(r_all > threshold))
    summary["diagnostics"] = _released_diagnostics(md, N, file_draws)
    return PosteriorAssessment(
        records=records, cells=cells, summary=summary, provenance=prov,
        idata=None if isinstance(posterior, xr.Dataset) else posterior,
        cell_posterior=None, file_draws=file_draws)


def _released_diagnostics(md, N: float, file_draws: xr.Dataset) -> dict[str, Any]:
    """R-hat and ESS of the ER given the parameters, checked as the fit's own are.

    As :func:`sdcbayes.risk.posterior_assess.assess_posterior` checks a latent-class fit
    (:func:`~sdcbayes.inference.diagnostics.check_diagnostics`, Gibbs advice): the problems
    are issued as :class:`~sdcbayes.inference.diagnostics.ConvergenceWarning` and kept
    under ``problems``; where the sample is the population
    (:func:`~sdcbayes.risk.posterior_assess.population_is_sample`) the results are exact,
    nothing is checked and ``note`` is :data:`~sdcbayes.risk.posterior_assess.EXACT_NOTE`.
    """
    from sdcbayes.inference.diagnostics import check_diagnostics

    diag = _functional_diagnostics(file_draws, _DIAGNOSED)
    if population_is_sample(md, "latent-class", N):
        diag["problems"] = []
        diag["note"] = EXACT_NOTE
        return diag
    checkable = {k: (math.nan if v is None else v) for k, v in diag.items()}
    diag["problems"] = check_diagnostics(checkable | {"divergences": 0}, sampler="gibbs")
    return diag
