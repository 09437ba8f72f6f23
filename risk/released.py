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

The patterns with blanks are scored in batches: those with the same free keys (one Gram
matrix of :class:`~sdcbayes.models.latent_class.PatternSums`) and the same number of
explicit cells together, as patterns x draws arrays, with the same sums in the same order as
one pattern at a time, so that the remainder's cancellation rounds alike (``_score_blanked``;
tests/test_released_batch.py checks it against the per-pattern ``_score_blanked_loop`` to
1e-12). Most of the time is then the quadrature, about draws x explicit cells x 226 nodes
x 3.5 ns per pattern (``python benchmarks/released_risk.py --scale``).

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
from dataclasses import dataclass
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
    inverse_moment_sum_rows,
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

#: Draws evaluated at once (a batch of patterns holds about CHUNK_ELEMENTS / (draw_chunk x
#: explicit cells) patterns; the quadrature works in blocks of 256 rows whatever it is).
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
    Evaluated per pattern, never per record: the patterns with blanks in batches of one
    free-key specification (``_score_blanked``: patterns x draws arrays, each within
    about :data:`~sdcbayes.risk.posterior.CHUNK_ELEMENTS` elements), the full patterns
    in chunks; memory is draws x cells plus the batches', never draws x records. The
    no-blank file gives exactly
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

    # ---- patterns with blanks: batches of patterns with the same free keys
    blanked = np.flatnonzero(~is_full)
    ctx = _Scoring(spec=spec, ps=ps, pi=pi, lam_stored=lam_stored, N=N, n=n, kap=kap, qs=qs,
                   threshold=threshold, top_cells=int(top_cells), draw_chunk=int(draw_chunk),
                   fk_cells=fk_cells, m_p_f=m_p_f)
    out = {"risk": risk, "risk_q": risk_q, "F_mean": F_mean, "f_p": f_p, "er": er,
           "er_blank": er_blank, "above": above}
    _score_blanked(ctx, pats, blanked, out)

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


@dataclass(frozen=True)
class _Scoring:
    """What scoring the blanked patterns needs from :func:`assess_released` (one fit)."""

    spec: Any  # LatentClassModel of md_original (cells, levels, counts)
    ps: Any  # PatternSums of the draws
    pi: np.ndarray  # (S, cells) stored pi
    lam_stored: np.ndarray | None  # (S, cells) stored lam, or None: (N - n) pi
    N: float
    n: float
    kap: np.ndarray  # (S,) kappa per draw, inf for Poisson draws
    qs: tuple
    threshold: float | None
    top_cells: int
    draw_chunk: int
    fk_cells: np.ndarray  # (cells,) sample counts
    m_p_f: np.ndarray  # (patterns,) records per pattern

    def lam_of(self, sl, cols) -> np.ndarray:
        """The observed cells' excess means, (draws, *cols.shape)."""
        if self.lam_stored is not None:
            return self.lam_stored[sl][:, cols]
        return (self.N - self.n) * self.pi[sl][:, cols]

    @property
    def rank_draws(self) -> np.ndarray:
        """The draws that rank a pattern's top cells (at most 64, evenly spaced)."""
        S = self.kap.size
        return np.unique(np.linspace(0, S - 1, min(S, 64)).round().astype(np.int64))


def _joint_codes(a: np.ndarray, b: np.ndarray, radices) -> tuple[np.ndarray, np.ndarray]:
    """One int64 code per row of ``a`` (m, k) and of ``b`` (p, k), equal iff the rows are.

    Mixed radix over the columns (``radices``: each column's number of levels), compacted
    through :func:`numpy.unique` whenever the next column could overflow int64.
    """
    ca = np.zeros(a.shape[0], np.int64)
    cb = np.zeros(b.shape[0], np.int64)
    bound = 1
    for j, L in enumerate(radices):
        L = max(int(L), 1)
        if bound * L >= 2 ** 62:
            u, inv = np.unique(np.concatenate([ca, cb]), return_inverse=True)
            ca, cb, bound = inv[:ca.size].astype(np.int64), inv[ca.size:].astype(np.int64), u.size
        ca = ca * L + a[:, j]
        cb = cb * L + b[:, j]
        bound *= L
    return ca, cb


class _CellSet:
    """Membership of full key cells (rows of codes) among the sample's observed cells."""

    def __init__(self, key_codes: np.ndarray, n_levels) -> None:
        self.key_codes = np.asarray(key_codes, np.int64)
        self.n_levels = [int(x) for x in n_levels]
        self.linear = math.prod(max(L, 1) for L in self.n_levels) < 2 ** 62
        if self.linear:
            self.sorted = np.sort(self._encode(self.key_codes))

    def _encode(self, rows: np.ndarray) -> np.ndarray:
        code = np.zeros(rows.shape[0], np.int64)
        for j, L in enumerate(self.n_levels):
            code = code * max(L, 1) + rows[:, j]
        return code

    def contains(self, rows: np.ndarray) -> np.ndarray:
        """Bool per row of ``rows`` (m, J): is it one of the observed cells."""
        rows = np.asarray(rows, np.int64)
        if not self.linear:  # too many cells for one code: a joint code per call
            ca, cb = _joint_codes(self.key_codes, rows, self.n_levels)
            return np.isin(cb, ca)
        code = self._encode(rows)
        pos = np.minimum(np.searchsorted(self.sorted, code), max(self.sorted.size - 1, 0))
        return (self.sorted[pos] == code) if self.sorted.size else np.zeros(code.size, bool)


def _pattern_groups(ps, pats: np.ndarray, blanked: np.ndarray):
    """The blanked patterns grouped by their free-key specification (one Gram matrix each).

    The encoding stage: the only place that reads a pattern's codes, -1 where the value
    was suppressed (every level of the key). Yields ``(rect, members, fixed)``: the
    normalised rectangle (:meth:`PatternSums.rectangle`; its keys with one level are the
    fixed keys, their level a placeholder), the patterns' indices into ``pats`` and their
    fixed levels (members, keys), 0 on the free keys. A key of one level is free either
    way (the rectangle's normalisation), so such patterns share a group.
    """
    codes = pats[blanked]
    mask = codes < 0
    umask, inv = np.unique(mask, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    groups: dict[tuple, tuple[list, list]] = {}
    for u, m in enumerate(umask):
        rect = ps.rectangle([None if b else 0 for b in m])
        key = tuple((j, None if lv is None else tuple(lv.tolist()))
                    for j, lv in enumerate(rect) if lv is None or lv.size > 1)
        groups.setdefault(key, (rect, []))[1].append(u)
    for key in sorted(groups, key=repr):
        rect, us = groups[key]
        members = np.flatnonzero(np.isin(inv, us))
        fixed = codes[members].copy()
        for j, lv in enumerate(rect):
            if lv is None or lv.size > 1:
                fixed[:, j] = 0
        yield rect, blanked[members], fixed


def _observed_cells(key_codes: np.ndarray, n_levels, rect, fixed: np.ndarray):
    """Each pattern's observed cells, as slices of one ordering of the sample's cells.

    Returns ``(order, start, count)``: pattern p's observed cells are
    ``order[start[p]:start[p] + count[p]]``, in increasing cell index (the order of the
    per-pattern lookup). A cell lies in a pattern when it has the pattern's levels on the
    fixed keys and a level of the free key's set on each free key (every level for a
    suppressed value).
    """
    cand = np.arange(key_codes.shape[0])
    fixed_keys = []
    for j, lv in enumerate(rect):
        if lv is not None and lv.size == 1:
            fixed_keys.append(j)
        elif lv is not None:  # a free key with a subset of its levels
            cand = cand[np.isin(key_codes[cand, j], lv)]
    cc, pc = _joint_codes(key_codes[cand][:, fixed_keys], fixed[:, fixed_keys],
                          [n_levels[j] for j in fixed_keys])
    o = np.argsort(cc, kind="stable")  # stable: increasing cell index within a pattern
    sc = cc[o]
    start = np.searchsorted(sc, pc, side="left")
    count = np.searchsorted(sc, pc, side="right") - start
    return cand[o], start, count


def _score_blanked(ctx: _Scoring, pats: np.ndarray, blanked: np.ndarray, out: dict) -> None:
    r"""Score the patterns with blanks (module docstring), many patterns at a time.

    Per group of patterns with the same free keys (one Gram matrix,
    :func:`_pattern_groups`): the observed cells of every pattern from one sort of the
    sample's cells (:func:`_observed_cells`), the top unobserved cells in chunks of
    patterns (:meth:`~sdcbayes.models.latent_class.PatternSums.top_cells_many`, less the
    observed ones); then the patterns are sorted by their number of explicit cells K and
    taken in batches of one K. Per batch and chunk of ``draw_chunk`` draws the pattern
    sums (:meth:`~sdcbayes.models.latent_class.PatternSums.sums_many`), the explicit cells
    (observed, then the top unobserved, each pattern's in the per-pattern order), the
    remainder and the quadrature (:func:`~sdcbayes.risk.posterior.inverse_moment_sum_rows`
    over patterns x draws rows) are array operations.

    One K per batch, not a padded width: the remainder is a difference of sums
    (:math:`\Lambda_p - \sum\lambda_c`, and the same for the squares), whose cancellation
    turns the last bit of a sum into about 1e-11 of a draw's risk where the explicit cells
    take nearly all of a pattern; sums of the same length in the same order are the
    per-pattern evaluation's to the bit, so only the quadrature's rounding (about 1e-15)
    separates the two (tests/test_released_batch.py, against :func:`_score_blanked_loop`).

    Memory: a batch's patterns x draws x cells arrays hold about
    :data:`~sdcbayes.risk.posterior.CHUNK_ELEMENTS` elements, and its patterns x draws
    at most that too; it does not grow with the patterns or records. Writes into ``out``
    (the arrays of :func:`assess_released`).
    """
    from sdcbayes.models.latent_class import expected_inverse_frequency_f

    spec, ps, kap = ctx.spec, ctx.ps, ctx.kap
    S, H = ps.w.shape
    J = spec.n_keys
    key_codes = np.asarray(spec.key_codes, np.int64)
    n_levels = [int(x) for x in spec.n_levels[:J]]
    use_top = bool(ctx.top_cells) and bool(np.isfinite(kap).any())
    rank_draws = ctx.rank_draws
    cellset = _CellSet(key_codes, n_levels) if use_top else None
    fk = ctx.fk_cells
    dS = min(ctx.draw_chunk, S)
    for rect, members, fixed in _pattern_groups(ps, pats, blanked):
        order, start, count = _observed_cells(key_codes, n_levels, rect, fixed)
        csum = np.concatenate([[0.0], np.cumsum(fk[order])])  # integer counts: exact
        Pg = members.size
        n_top = np.zeros(Pg, np.int64)
        M = 0
        if use_top:  # each pattern's top cells that are not observed
            free_lv = max([n_levels[j] if lv is None else lv.size
                           for j, lv in enumerate(rect) if lv is None or lv.size > 1] or [1])
            step = max(1, CHUNK_ELEMENTS // max(rank_draws.size * max(H, free_lv),
                                                ctx.top_cells * J))
            for c0 in range(0, Pg, step):
                tops = ps.top_cells_many(rect, fixed[c0:c0 + step], ctx.top_cells, rank_draws)
                M = tops.shape[1]
                n_top[c0:c0 + step] = (~cellset.contains(tops.reshape(-1, J))).reshape(
                    -1, M).sum(axis=1)
        K = count + n_top
        srt = np.argsort(K, kind="stable")
        Ks = K[srt]
        i = 0
        while i < Pg:
            # patterns of one K, as many as keep patterns x draws x cells within budget
            j = int(np.searchsorted(Ks, Ks[i], side="right"))
            width = dS * max(int(Ks[i]) + M + 1, H * max(M, 1))
            nb = max(1, min(j - i, CHUNK_ELEMENTS // width, CHUNK_ELEMENTS // max(S, 1)))
            sel = srt[i:i + nb]
            i += nb
            _score_batch(ctx, rect, members[sel], fixed[sel], order, start[sel], count[sel],
                         csum, int(Ks[i - 1]), use_top, cellset, rank_draws,
                         expected_inverse_frequency_f, out)


def _score_batch(ctx, rect, pb, fb, order, st, ct, csum, K, use_top, cellset, rank_draws,
                 eif, out) -> None:
    """One batch of :func:`_score_blanked`: patterns ``pb`` with ``K`` explicit cells each."""
    ps, pi, kap, n, qs = ctx.ps, ctx.pi, ctx.kap, ctx.n, ctx.qs
    S = kap.size
    J = ctx.spec.n_keys
    nb = pb.size
    f = csum[st + ct] - csum[st]  # >= 1: the record's own cell is among them
    Omax = int(ct.max())
    ar = np.arange(Omax)
    ovalid = ar[None, :] < ct[:, None]
    obs = order[np.where(ovalid, st[:, None] + ar[None, :], 0)]
    if use_top:
        tops = ps.top_cells_many(rect, fb, ctx.top_cells, rank_draws)
        tvalid = ~cellset.contains(tops.reshape(-1, J)).reshape(nb, -1)
    else:
        tops = np.empty((nb, 0, J), np.int64)
        tvalid = np.empty((nb, 0), bool)
    # each pattern's K explicit cells, in the per-pattern order: observed, then top
    valid = np.concatenate([ovalid, tvalid], axis=1)
    take = np.nonzero(valid)[1].reshape(nb, K)[:, None, :]
    fcx = np.take_along_axis(
        np.concatenate([np.where(ovalid, ctx.fk_cells[obs], 0.0),
                        np.zeros(tvalid.shape)], axis=1), take[:, 0], axis=1)
    e = np.empty((nb, S))
    xm = np.empty((nb, S))
    tiny_f = np.finfo(float).tiny
    for s0 in range(0, S, ctx.draw_chunk):
        sl = slice(s0, min(s0 + ctx.draw_chunk, S))
        k = kap[sl]
        fin = np.isfinite(k)
        sm = ps.sums_many(rect, fb, sl)
        es = np.empty((nb, k.size))
        xs = np.empty((nb, k.size))
        if (~fin).any():  # Poisson draws: X_p ~ Po(lam_p) exactly
            es[:, ~fin] = eif(f[:, None], sm["lam"][:, ~fin], np.inf)
            xs[:, ~fin] = sm["lam"][:, ~fin]
        if fin.any():
            pix, lamx = ps.cells_many(rect, tops, sl)
            pic = np.take_along_axis(np.concatenate(
                [np.moveaxis(pi[sl][:, obs], 0, 1), pix], axis=2), take, axis=2)[:, fin]
            lamc = np.take_along_axis(np.concatenate(
                [np.moveaxis(ctx.lam_of(sl, obs), 0, 1), lamx], axis=2), take, axis=2)[:, fin]
            kk = k[fin][None, :]  # (1, finite draws)
            kf = kk[:, :, None]
            lam_p = sm["lam"][:, fin]
            y = n * pic
            # the remainder: exact linear sums less the explicit cells'
            Lam_R = np.maximum(lam_p - lamc.sum(axis=2), 0.0)
            LY_R = np.maximum(sm["lam_y"][:, fin] - (lamc * y).sum(axis=2), 0.0)
            Q_R = np.maximum(sm["lam2"][:, fin] - (lamc ** 2).sum(axis=2), 0.0)
            tiny = Lam_R <= _REMAINDER_EPS * lam_p
            Lam_R = np.where(tiny, 0.0, Lam_R)
            ybar = np.where(Lam_R > 0, LY_R / np.where(Lam_R > 0, Lam_R, 1.0), 0.0)
            Mr = Lam_R * kk / (kk + ybar)
            V = Mr + kk * np.where(tiny, 0.0, Q_R) / (kk + ybar) ** 2
            nbin = (V > Mr * (1.0 + 1e-10)) & (Mr > 0)
            r_R = np.where(nbin, Mr ** 2 / np.where(nbin, V - Mr, 1.0), 0.0)
            rho_R = np.where(nbin, Mr / np.where(nbin, V, 1.0), 1.0)
            b = kf + y
            rho = np.clip(b / (b + lamc), tiny_f, 1.0)
            r = kf + fcx[:, None, :]
            es[:, fin] = inverse_moment_sum_rows(
                np.repeat(f, kk.size),
                np.concatenate([r, r_R[:, :, None]], axis=2).reshape(-1, K + 1),
                np.concatenate([rho, np.clip(rho_R, tiny_f, 1.0)[:, :, None]],
                               axis=2).reshape(-1, K + 1),
                np.where(nbin, 0.0, Mr).reshape(-1)).reshape(nb, kk.size)
            xs[:, fin] = (r * lamc / b).sum(axis=2) + Mr
        e[:, sl] = es
        xm[:, sl] = xs
    out["f_p"][pb] = f
    out["risk"][pb] = mean_over_draws(e.T)
    out["risk_q"][:, pb] = np.quantile(e, qs, axis=1)
    out["F_mean"][pb] = f + xm.mean(axis=1)
    m = ctx.m_p_f[pb]
    out["er"] += e.T @ m
    out["er_blank"] += e.T @ m
    if ctx.threshold is not None:
        out["above"] += (e > ctx.threshold).T.astype(float) @ m


def _score_blanked_loop(ctx: _Scoring, pats: np.ndarray, blanked: np.ndarray,
                        out: dict) -> None:
    """The per-pattern evaluation of the blanked patterns: the reference of the tests.

    What :func:`assess_released` did before :func:`_score_blanked` (one pattern at a
    time, grouped by its blank keys); kept, unchanged, so that
    tests/test_released_batch.py can check the batches against an independent
    evaluation. Not used by the package.
    """
    from sdcbayes.models.latent_class import expected_inverse_frequency_f

    spec, ps, pi, kap, n, qs = ctx.spec, ctx.ps, ctx.pi, ctx.kap, ctx.n, ctx.qs
    S = kap.size
    top_cells, draw_chunk, threshold = ctx.top_cells, ctx.draw_chunk, ctx.threshold
    fk_cells, m_p_f, lam_of = ctx.fk_cells, ctx.m_p_f, ctx.lam_of
    risk, risk_q, F_mean, f_p = out["risk"], out["risk_q"], out["F_mean"], out["f_p"]
    er, er_blank, above = out["er"], out["er_blank"], out["above"]
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
