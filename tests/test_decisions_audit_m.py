"""Audit M fixes in :mod:`sdcbayes.risk.decisions` (findings F1, F3, F6-F10).

References: seed 003 (``/work/shared/seeds/003_*.txt``; Zaslavsky & Horton 1998,
JOS 14(4)), Section 2 (the display defining :math:`R_{di} = E[L_d(y_i, Y_i) \\mid
\\text{data}]`, averaged over the hyperparameter posterior) and Section 3 (the
microdata reading ``y = f_k``, ``Y = F_k``); the cell-level predictive
:math:`F_k - f_k \\mid f_k \\sim \\mathrm{NegBin}(r, \\rho)` of seed 000 eq. 10-17
(Poisson-gamma, ``r = alpha + f_k``) and seed 004 eq. 1 (``r = f_k``, ``rho = p_k``).

Every risk is checked against a direct summation of the NegBin pmf with
``scipy.stats.nbinom`` written here (never the package's enumeration); seeds are fixed;
nothing is timed (the speed of F1 is shown by counting the enumerated entries).
"""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pandas as pd
import pytest
from clitools import run_in_process
from scipy import stats

from sdcbayes.exceptions import InputError
from sdcbayes.risk import compare
from sdcbayes.risk import decisions as dec
from sdcbayes.risk.decisions import (
    decide,
    decide_cells,
    decide_from_risks,
    negbin_expected_loss,
)
from sdcbayes.risk.losses import parse_loss, user_loss


def brute_negbin(loss, f, n, N, r, rho, xmax: int = 4000) -> float:
    r""":math:`\sum_{x=0}^{x_{max}} L(f, f + x, n, N)\,P(X = x)`, ``X ~ NegBin(r, rho)`` (scipy).

    Seed 003, Section 2 (:math:`R_{di}`) with the cell predictive of seed 000 eq. 10;
    ``xmax`` is far beyond the support used here (rho >= 0.05, r <= 10: the mass left
    out is below 1e-40).
    """
    x = np.arange(xmax + 1, dtype=float)
    return float(np.sum(loss(f, f + x, n, N) * stats.nbinom.pmf(x, r, rho)))


def poisson_gamma_cells(seed: int = 3, draws: int = 3):
    """Cells with repeated f_k and Poisson-gamma draws as the docstring writes them.

    ``size = alpha[:, None] + fk``, ``prob = rho[:, None]`` (seed 000 eq. 10-17): equal
    f_k give equal size/prob columns, so 4 distinct cells among 9.
    """
    rng = np.random.default_rng(seed)
    fk = np.array([1, 1, 2, 3, 1, 7, 2, 2, 3], dtype=float)
    alpha = rng.gamma(50, 0.02, size=draws)
    rho = rng.uniform(0.05, 0.3, size=draws)
    size = alpha[:, None] + fk
    prob = np.broadcast_to(rho[:, None], size.shape)
    return fk, size, prob


# --- F1: one enumeration per distinct cell; negbin_expected_loss is compare's --------


def test_decide_cells_enumerates_distinct_cells_only_and_matches_brute_force(monkeypatch):
    """F1: R1 per cell = mean over draws of the NegBin sum, computed per distinct f_k.

    Seed 003, Section 2 (draw-wise risks averaged); brute force per (draw, cell).
    """
    fk, size, prob = poisson_gamma_cells()
    n, N = 40.0, 900.0
    entries = []
    real = dec.negbin_expected_loss

    def counting(loss, f, nn, NN, s, p, tail=1e-12):
        entries.append(np.broadcast(f, s, p).size)  # (draw, cell) entries enumerated
        return real(loss, f, nn, NN, s, p, tail)

    monkeypatch.setattr(dec, "negbin_expected_loss", counting)
    specs = ("uniques-equal:S=10", "uniques-gamma:S=5,a=2")
    res = decide_cells(fk, size=size, prob=prob, n=n, N=N, disclosure_loss=specs[0],
                       alternatives=[f"{specs[1]}/y"])
    # why: the old code enumerated every (draw, cell) pair, 3 x 9 = 27 entries per loss
    n_distinct = np.unique(fk).size
    assert sum(entries) == 2 * size.shape[0] * n_distinct
    assert res.provenance["data"]["n_distinct_cells"] == n_distinct
    loss = parse_loss(specs[0])
    ref = np.array([
        np.mean([brute_negbin(loss, f, n, N, size[d, k], prob[d, k])
                 for d in range(size.shape[0])])
        for k, f in enumerate(fk)
    ])
    np.testing.assert_allclose(res.table["R1"], ref, rtol=1e-10, atol=0)
    np.testing.assert_array_equal(res.table["R0"], fk)  # L0 = y: no enumeration


def test_distinct_cells_groups_equal_columns_exactly():
    """F1: the grouping of ``_distinct_cells`` equals exact grouping on full columns.

    Small draw chunks (``budget``) exercise the chunked fingerprint and check.
    """
    rng = np.random.default_rng(5)
    base = rng.gamma(2.0, 1.0, size=(7, 4))  # 4 distinct columns over 7 draws
    pick = np.array([0, 1, 1, 2, 3, 0, 2, 2, 1, 3])
    S = base[:, pick]
    S[3, 9] = np.nextafter(S[3, 9], np.inf)  # differs in one draw by one ulp: its own cell
    P = np.full_like(S, 0.2)
    f = np.ones(pick.size)
    rep, inverse = dec._distinct_cells((f, f, f), (S, P), budget=20)
    np.testing.assert_array_equal(S[:, rep][:, inverse], S)  # every cell is its group's
    _, ref_inv = np.unique(S.T, axis=0, return_inverse=True)
    # same partition as the exact np.unique on whole columns
    assert rep.size == np.unique(ref_inv).size == 5
    pairs = {(a, b) for a, b in zip(inverse.tolist(), np.ravel(ref_inv).tolist(), strict=True)}
    assert len(pairs) == rep.size


def test_negbin_expected_loss_is_compare_enumeration_and_matches_brute_force(monkeypatch):
    """F1: one enumeration in the package; values equal a direct scipy summation.

    Built-in (uniques-gamma, threshold) and user (f/F, seed 004 eq. 6's summand) losses.
    """
    calls = []
    real = compare.expected_loss_enumerated

    def spy(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(compare, "expected_loss_enumerated", spy)
    rng = np.random.default_rng(4)
    f = rng.integers(1, 8, 6).astype(float)
    r = f + rng.gamma(0.5, 1.0, 6)
    rho = rng.uniform(0.05, 1.0, 6)
    rho[0] = 1.0  # F = f exactly
    losses = [parse_loss("uniques-gamma:S=5,a=2"), parse_loss("threshold:Ymin=4"),
              user_loss(lambda y, Y, n, N: y / Y, name="reid")]
    for loss in losses:
        got = negbin_expected_loss(loss, f, 30.0, 500.0, r, rho)
        ref = [brute_negbin(loss, f[i], 30.0, 500.0, r[i], rho[i]) for i in range(6)]
        np.testing.assert_allclose(got, ref, rtol=1e-10, err_msg=loss.name)
    assert len(calls) == len(losses)  # why: the old code summed nbinom.pmf itself


# --- F3: tail ------------------------------------------------------------------------


@pytest.mark.parametrize("tail", [0.0, -1.0, math.nan, math.inf, 1.0, 0.5, 2e-3, True, "1e-12"])
def test_tail_is_checked_before_any_work(monkeypatch, tail):
    """F3: tail=1 used to publish everything silently; 0, <0, NaN raised raw errors."""
    def started(*args, **kw):
        raise AssertionError("risks were computed before tail was checked")

    monkeypatch.setattr(dec, "_posterior_average", started)
    monkeypatch.setattr(compare, "expected_loss_enumerated", started)
    fk = np.array([1.0, 1.0, 2.0, 3.0])
    with pytest.raises(InputError, match="tail"):
        decide_cells(fk, size=fk, prob=0.1, tail=tail)
    with pytest.raises(InputError, match="tail"):
        negbin_expected_loss("uniques-equal:S=10", 1, 100, 1e4, 1, 0.1, tail=tail)


def test_small_tail_is_accepted_and_exact():
    """F3: tail=1e-3 (the largest accepted) is within B * tail of brute force (B = f = 1)."""
    loss = parse_loss("uniques-equal:S=10")
    got = float(negbin_expected_loss(loss, 1, 100, 1e4, 1, 0.1, tail=1e-3))
    assert abs(got - brute_negbin(loss, 1.0, 100, 1e4, 1.0, 0.1)) <= 1e-3


# --- F6: counts n, N ----------------------------------------------------------------


def _no_enumeration(monkeypatch):
    def started(*args, **kw):
        raise AssertionError("the enumeration started before the counts were checked")

    monkeypatch.setattr(dec, "negbin_expected_loss", started)
    monkeypatch.setattr(dec, "_posterior_average", started)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n": 100, "N": 2}, r"N \(population size\) is below n"),
        ({"n": 1, "N": 100}, r"fk \(sample count of the cell\) exceeds n"),
        ({"n": -3}, "n must hold non-negative whole numbers"),
        ({"n": [1, 2]}, r"n must be a scalar or one value per cell \(4\)"),
        ({"n": 10, "N": [100, 200, 300]}, r"N must be a scalar or one value per cell"),
        ({"suppression_loss": "N"}, r"give N=<population size>"),
        ({"disclosure_loss": user_loss(lambda y, Y, n, N: y * n / N, name="share")},
         r"'share' depends on N.*give N="),
        ({"alternatives": ["uniques-equal:S=1/N"]}, r"give N=<population size>"),
    ],
    ids=["N<n", "fk>n", "n-negative", "n-length", "N-length", "N-loss", "N-user-loss",
         "N-alternative"],
)
def test_decide_cells_checks_counts_before_enumerating(monkeypatch, kwargs, match):
    """F6: 0 <= f_k <= n <= N by cell, as decide() does; an N loss needs N."""
    _no_enumeration(monkeypatch)
    fk = np.array([1.0, 1.0, 2.0, 3.0])
    with pytest.raises(InputError, match=match):
        decide_cells(fk, size=fk, prob=0.1, **kwargs)


def test_decide_cells_N_loss_with_N_given():
    """F6: with N given the N loss is its value (seed 003, Section 3: L0 = N)."""
    fk = np.array([1.0, 2.0])
    res = decide_cells(fk, size=fk, prob=0.1, n=10, N=[500, 700], suppression_loss="N")
    np.testing.assert_array_equal(res.table["R0"], [500.0, 700.0])


# --- F7: a lone string is one alternative ----------------------------------------------


def test_lone_alternative_string_is_one_pair():
    """F7: 'uniques-equal:S=1/y' used to be read character by character ('u')."""
    spec = "uniques-equal:S=1/y"
    a = decide([0, 1, 2], [5, 5, 5], [20, 20, 20], alpha=1.0, beta=3.0, alternatives=spec)
    b = decide([0, 1, 2], [5, 5, 5], [20, 20, 20], alpha=1.0, beta=3.0, alternatives=[spec])
    pd.testing.assert_frame_equal(a.sensitivity, b.sensitivity)
    assert a.sensitivity["pair"].tolist()[1] == spec
    fk = np.array([1.0, 2.0])
    c1 = decide_cells(fk, size=fk, prob=0.2, alternatives=spec)
    c2 = decide_cells(fk, size=fk, prob=0.2, alternatives=[spec])
    pd.testing.assert_frame_equal(c1.sensitivity, c2.sensitivity)


# --- F8: InputErrors naming the argument ---------------------------------------------


def test_no_draws_is_an_input_error():
    """F8: alpha/beta with no draws raised IndexError from the quantile summary."""
    with pytest.raises(InputError, match="alpha and beta hold no draws"):
        decide([0, 1, 2], [5, 5, 5], [20, 20, 20], alpha=np.array([]), beta=np.array([]))
    with pytest.raises(InputError, match="size/prob hold no draws"):
        decide_cells([1, 2], size=np.zeros((0, 2)) + 1, prob=0.2)


def test_zero_cells_give_an_empty_result_like_decide():
    """F8: decide_cells on zero cells raised a reshape error; decide() returns empty."""
    dom = decide([], [], [], alpha=1.0, beta=3.0)
    cel = decide_cells(np.array([]), size=np.array([]), prob=np.array([]))
    assert len(cel.table) == len(dom.table) == 0
    assert cel.c == dom.c == math.inf
    assert len(cel.frontier) == 1 and cel.summary()["n_cells"] == 0


def test_wrong_signature_user_loss_is_named(monkeypatch):
    """F8: a user loss f(y, Y) failed with a bare TypeError at the first enumeration."""
    _no_enumeration(monkeypatch)
    bad = user_loss(lambda y, Y: y / Y, name="ratio")
    with pytest.raises(InputError, match=r"'ratio' must accept four arrays \(y, Y, n, N\)"):
        decide([0, 1], [5, 5], [20, 20], alpha=1.0, beta=3.0, disclosure_loss=bad)
    with pytest.raises(InputError, match=r"'ratio' must accept"):
        decide_cells(np.array([1.0, 2.0]), size=[1.0, 2.0], prob=0.2, disclosure_loss=bad)
    with pytest.raises(InputError, match=r"'ratio' must accept"):
        negbin_expected_loss(bad, 1, 10, 100, 1, 0.2)


def test_negbin_expected_loss_mismatched_lengths():
    """F8: f of 3 values against size of 2 raised a raw broadcast ValueError."""
    with pytest.raises(InputError, match=r"broadcast together.*f \(3,\).*size \(2,\)"):
        negbin_expected_loss("uniques-equal:S=10", [1, 2, 3], 10, 100, [1, 2], 0.1)


# --- F9: provenance --------------------------------------------------------------------


def _check_stamp(prov, model_word):
    json.dumps(prov)  # JSON-serialisable as promised
    assert prov["sdcbayes_version"] and model_word in prov["model"]
    assert {"versions", "command", "created", "settings", "data"} <= set(prov)


def test_decide_result_is_stamped_with_data_and_settings():
    """F9: DecisionResult had no provenance; Assessment and ComparisonResult do.

    Seed 003 Table 1 input (n = 3, N = 8, alpha = 1, beta = 10).
    """
    res = decide(np.arange(4), np.full(4, 3), np.full(4, 8), alpha=1.0, beta=10.0,
                 alternatives=["uniques-equal:S=1/y"], c=0.5, max_draws=10)
    p = res.provenance
    _check_stamp(p, "beta-binomial")
    assert p["data"] == {"n_domains": 4, "total_y": 6, "total_n": 12, "total_N": 32}
    s = p["settings"]
    assert s["disclosure_loss"] == "uniques-equal:S=10" and s["suppression_loss"] == "y"
    assert s["alternatives"] == ["uniques-equal:S=1/y"]
    assert (s["c"], s["target_risk"], s["max_draws"], s["hyperparameters"]) == (
        0.5, 0.2, 10, "fixed")
    assert res.summary()["provenance"] == p


def test_xarray_draws_keep_their_stamp():
    """F9: attrs of xarray alpha/beta draws (seed, priors) are kept under 'posterior'."""
    xr = pytest.importorskip("xarray")
    rng = np.random.default_rng(9)
    a = xr.DataArray(rng.gamma(10, 0.1, 20), dims=("draw",), attrs={"random_seed": 7})
    b = xr.DataArray(rng.gamma(10, 1.0, 20), dims=("draw",), attrs={"random_seed": 7})
    res = decide([0, 1, 2], [5, 5, 5], [20, 20, 20], alpha=a, beta=b)
    assert res.provenance["posterior"] == {"alpha": {"random_seed": 7},
                                           "beta": {"random_seed": 7}}
    assert res.provenance["settings"]["n_draws"] == 20
    json.dumps(res.summary())


def test_decide_cells_and_decide_from_risks_are_stamped():
    """F9: both cell routes and the model-free core carry a stamp with counts and settings."""
    fk, size, prob = poisson_gamma_cells()
    res = decide_cells(fk, size=size, prob=prob, n=40, N=900, tail=1e-10)
    p = res.provenance
    _check_stamp(p, "cell-level")
    assert p["data"]["n_cells"] == 9 and p["data"]["total_fk"] == int(fk.sum())
    assert (p["data"]["n"], p["data"]["N"]) == (40.0, 900.0)
    assert p["settings"]["tail"] == 1e-10 and p["settings"]["n_draws"] == 3
    pre = decide_cells(fk, R1=res.table["R1"], R0=res.table["R0"], n=40, N=900)
    _check_stamp(pre.provenance, "cell-level")
    assert pre.provenance["settings"]["risks"] == "precomputed"
    raw = decide_from_risks([0.1, 0.2], [1.0, 1.0], counts={"fk": [1, 3]}, target_risk=0.5)
    _check_stamp(raw.provenance, "given risks")
    assert raw.provenance["data"] == {"n_cells": 2, "total_fk": 4.0}
    assert raw.provenance["settings"]["target_risk"] == 0.5
    assert raw.summary()["provenance"] == raw.provenance


def test_cli_decide_reuses_the_api_stamp(tmp_path, capsys):
    """F9: summary.json's provenance is decide()'s, plus the CLI settings and the input.

    Seed 003 Table 1 counts with the seed's alpha = 1, beta = 10 (no sampling).
    """
    path = tmp_path / "t1.csv"
    pd.DataFrame({"y": [0, 1, 2, 3], "n": [3] * 4, "N": [8] * 4}).to_csv(path, index=False)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "decide", str(path), "--y", "y", "--n", "n", "--N", "N",
                          "--alpha", "1", "--beta", "10", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    prov = json.loads((out / "summary.json").read_text())["provenance"]
    api = decide([0, 1, 2, 3], [3] * 4, [8] * 4, alpha=1.0, beta=10.0).provenance
    assert prov["model"] == api["model"] and prov["data"] == api["data"]
    # API settings (losses, target) merged with the command's route
    assert prov["settings"]["disclosure_loss"] == "uniques-equal:S=10"
    assert prov["settings"]["hyperparameters"] == "fixed"
    assert prov["input"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


# --- F10: pandas Series ---------------------------------------------------------------


def test_series_with_unequal_indexes_are_refused():
    """F10: Series were paired by position (small's y with big's n and N)."""
    y = pd.Series({"small": 1, "big": 2})
    n = pd.Series({"big": 40, "small": 3})
    N = pd.Series({"big": 400, "small": 8})
    with pytest.raises(InputError, match="different indexes"):
        decide(y, n, N, alpha=1.0, beta=3.0)
    fk = pd.Series([1, 2], index=["a", "b"])
    with pytest.raises(InputError, match="different indexes"):
        decide_cells(fk, size=[1.0, 2.0], prob=0.2, weights=pd.Series([1.0, 1.0]))


def test_series_index_names_the_units():
    """F10: a labelled index becomes the domain/cell names; 0..m-1 stays positions."""
    idx = ["small", "big"]
    y, n, N = (pd.Series(v, index=idx) for v in ([1, 2], [3, 40], [8, 400]))
    res = decide(y, n, N, alpha=1.0, beta=3.0)
    assert res.table["domain"].tolist() == idx
    ref = decide([1, 2], [3, 40], [8, 400], alpha=1.0, beta=3.0)
    np.testing.assert_array_equal(res.table["R1"], ref.table["R1"])
    fk = pd.Series([1.0, 2.0], index=["k1", "k2"])
    assert decide_cells(fk, size=fk, prob=0.2).table["cell"].tolist() == ["k1", "k2"]
    plain = decide(pd.Series([1, 2]), pd.Series([3, 40]), pd.Series([8, 400]), alpha=1.0,
                   beta=3.0)
    assert plain.table["domain"].tolist() == [0, 1]
