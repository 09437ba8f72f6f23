"""The per-pattern reference of the released-file risk's blanked patterns (a test helper).

:func:`score_blanked_loop` scores the patterns with blanks one at a time, as
:func:`sdcbayes.risk.released.assess_released` did before its batched
``_score_blanked``: tests/test_released_batch.py swaps it in (``monkeypatch``) and
checks every output of the batches against it, and ``benchmarks/released_risk.py
--reference`` times it. Not part of the package. On ``sys.path`` through pytest's
``pythonpath = ["tests"]`` (as tests/clitools.py); the benchmark adds the folder itself.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from sdcbayes import _compat
from sdcbayes.models.latent_class import _safe_names, expected_inverse_frequency_f
from sdcbayes.risk.posterior import inverse_moment_sum, mean_over_draws
from sdcbayes.risk.released import _REMAINDER_EPS, _Scoring

__all__ = ["score_blanked_loop"]


def _refuse_recoded(ctx: _Scoring, pats: np.ndarray, blanked: np.ndarray) -> None:
    """Refuse a file whose pattern codes are not levels (a recoded key).

    The loop reads a shown code as the level itself (its rectangle, its observed-cell
    lookup); a recoded value of several levels, or a relabelled one, would be read as
    another level and scored wrong (or crash in the quadrature on f = 0).
    """
    for j, pre in enumerate(ctx.preimages or []):
        if any(a.size != 1 or int(a[0]) != g for g, a in enumerate(pre)):
            name = ctx.spec.keys[j] if getattr(ctx.spec, "keys", None) else j
            raise ValueError(
                f"score_blanked_loop scores suppression-only files, but key {name!r} is "
                "recoded (its released values are not its levels, recodes=): compare such "
                "a file with a brute-force or exact-listing check instead")


def score_blanked_loop(ctx: _Scoring, pats: np.ndarray, blanked: np.ndarray,
                       out: dict) -> None:
    """Score the blanked patterns one at a time: ``_score_blanked``'s reference.

    The signature and outputs of :func:`sdcbayes.risk.released._score_blanked` (it
    writes ``f_p``, ``risk``, ``risk_q``, ``F_mean`` and adds to ``er``, ``er_blank``,
    ``above`` and, with the predictive draw, ``er_pred`` and ``er_blank_pred`` of
    ``out``), evaluated per pattern: the observed cells by a lookup on the shown keys,
    the top cells by :meth:`~sdcbayes.models.latent_class.PatternSums.top_cells` and the
    sums by :meth:`~sdcbayes.models.latent_class.PatternSums.sums` of the pattern's own
    rectangle, the remainder's moment match and :func:`~sdcbayes.risk.posterior.
    inverse_moment_sum` on one pattern's draws. The predictive draw is the package's
    ``_Predictive`` (its top-cell and remainder streams), so that part checks the
    batches' assembly of the explicit cells' X, not the draws themselves.

    Suppression-only files: a pattern's shown code must be the level itself, so a
    file with a recoded key (``recodes=``; an identity recode is fine) is refused
    (:class:`ValueError`).
    """
    _refuse_recoded(ctx, pats, blanked)
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
        pred = out.get("pred")
        if pred is not None:  # the predictive draw, as _score_batch makes it
            xe, p_mean = np.zeros(S), np.zeros(S)
            p_nb, p_r, p_rho = np.zeros(S, bool), np.zeros(S), np.ones(S)
            # the top cells' X over every draw, from the package's keyed streams
            x_top = pred.top_sum(rect, top[None], np.ones((1, top.shape[0]), bool))[0]
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
            if pred is not None:
                xe[sl] = pred.X_obs[sl][:, obs].sum(axis=1) + x_top[sl]
                if (~fin).any():
                    lx = lam_of(sl, obs).sum(axis=1) + ps.cells(rect, top, sl)[1].sum(axis=1)
                    lp = sm["lam"][~fin]
                    rest = np.maximum(lp - lx[~fin], 0.0)
                    p_mean[sl][~fin] = np.where(rest <= _REMAINDER_EPS * lp, 0.0, rest)
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
                if pred is not None:
                    p_nb[sl][fin], p_r[sl][fin], p_mean[sl][fin] = nb, r_R, M
                    p_rho[sl][fin] = np.clip(rho_R, np.finfo(float).tiny, 1.0)
            e[sl] = es
            xm[sl] = xs
        if pred is not None:
            pred.add(out, np.array([p]), m_p_f[[p]], np.array([f]), xe[None], p_nb[None],
                     p_r[None], p_rho[None], p_mean[None])
        risk[p] = mean_over_draws(e[:, None])[0]
        risk_q[:, p] = np.quantile(e, qs)
        F_mean[p] = f + xm.mean()
        er += m_p_f[p] * e
        er_blank += m_p_f[p] * e
        if threshold is not None:
            above += m_p_f[p] * (e > threshold)




def posterior_from_draws(md, spec, w: np.ndarray, phi: list[np.ndarray], kappa=None, *,
                         chains: int = 2, design: bool = False, N: float | None = None):
    """A latent-class posterior (InferenceData) on md's cells from the draws w, phi, kappa.

    ``spec`` is ``LatentClassModel.from_microdata(md, weights=design, n_classes=H)``; ``w``
    is (S, H), ``phi`` one (S, H, L) array per key, ``kappa`` a scalar or (S,) (None: no
    kappa, Poisson cells); ``pi`` is the profiles' own, so the posterior is consistent.
    With ``design`` the class-by-class excess ``lam`` and the weight classes are stored as
    the fit stores them; ``N`` defaults to the weights' sum. A ``spec`` with structural
    zeros (``from_microdata(..., structural_zeros=rules)``) gives the truncated ``pi`` (and
    ``lam``), each draw's ``mass_structural_zero`` as the sampler stores it and the rules
    stamped as the fit stamps them (``data_summary["structural_zeros"]``). The tests'
    hand-built posteriors (tests/test_released*.py).
    """
    S, H = w.shape
    n = spec.n
    N = float(md.weights.sum()) if N is None else float(N)
    pi = np.array([spec.key_cell_probabilities(w[s], [p[s] for p in phi]) for s in range(S)])
    d = S // chains
    sz = spec.structural_zeros
    mass = (np.zeros(S) if sz is None else np.array(
        [min(float((w[s][:, None] * sz.rectangle_mass([p[s] for p in phi])).sum()), 1 - 1e-12)
         for s in range(S)]))
    post = {"w": w.reshape(chains, d, H), "pi": pi.reshape(chains, d, -1),
            "mass_structural_zero": mass.reshape(chains, d)}
    dims = {"w": ["latent_class"], "pi": ["cell"]}
    coords = {}
    for nm, lv, p in zip(_safe_names(spec.keys), spec.levels, phi, strict=True):
        post[f"phi_{nm}"] = p.reshape(chains, d, H, -1)
        dims[f"phi_{nm}"] = ["latent_class", f"level_{nm}"]
        coords[f"level_{nm}"] = [str(v) for v in lv]
    if kappa is not None:
        post["kappa"] = np.broadcast_to(np.asarray(kappa, float), (S,)).reshape(chains, d)
    if design:
        pkg = np.array([spec.key_cell_probabilities(w[s], [p[s] for p in phi], by_class=True)
                        for s in range(S)])
        post["lam"] = (n * pkg @ spec.excess_rates(N)).reshape(chains, d, -1)
        dims["lam"] = ["cell"]
    idata = _compat.from_dict(posterior=post, dims=dims, coords=coords,
                         observed_data={"fk": spec.key_counts},
                         constant_data={"n": np.array(n), "N": np.array(N)})
    if design:
        idata.attrs["weight_classes"] = json.dumps(spec.class_weights.tolist())
        idata.posterior.attrs["weight_classes"] = idata.attrs["weight_classes"]
        idata.posterior.attrs["weight_classes_N"] = N
    if sz is not None:  # the model's stamp of its rules (LatentClassModel.data_summary)
        idata.attrs["data_summary"] = json.dumps({"structural_zeros": sz.to_list()})
    return idata
