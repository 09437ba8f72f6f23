"""Decisions for domains with large populations (audit R, finding 1).

Seed 003 (Zaslavsky & Horton 1998), Section 2: the risk
:math:`R_{di} = \\sum_t L_d(y_i, y_i + t)\\, P(t)` over the predictive
:math:`t = Y_i - y_i \\sim \\mathrm{BetaBin}(N_i - n_i, \\alpha + y_i, \\beta + n_i - y_i)`.
Each domain is now summed over its own window of the support (the part carrying all
but a relative 1e-13 of the sum), not over ``0..max(N - n)`` for every domain, so one
domain of 10^9 people no longer stops ``decide``. Checked here:

(a) the windowed sums equal full enumeration of the support (the package's exact log
    pmf, every value of ``0..N - n``) for every built-in loss and user losses, at
    ``N - n`` up to 1e5, including ``y = 0``, ``y = n``, tiny and huge ``alpha, beta``;
(b) a domain with ``N = 1e9`` next to small ones leaves their risks and decisions as
    they are without it (fixed hyperparameters and posterior draws);
(c) the audit's command, ``sdcbayes decide ... --hyperparameters ml`` on 30 domains one
    of which has ``N = 1e9``, completes and writes ``decisions.csv``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from clitools import run_in_process

from sdcbayes.risk import decisions as dec
from sdcbayes.risk.beta_binomial import beta_binomial_logpmf, expected_loss
from sdcbayes.risk.decisions import decide
from sdcbayes.risk.losses import parse_loss, user_loss

# (y, n, N, alpha, beta): y = 0, y = n, tiny and huge hyperparameters, N = n (no
# unsampled units), and supports up to 1e5 values.
CASES = [
    (0, 10, 100_010, 0.5, 1.5),  # y = 0: the uniques losses are 0
    (10, 10, 50_010, 0.01, 0.02),  # y = n with a tiny beta: b* = 0.02, U-shaped Beta
    (3, 50, 100_050, 1e-3, 1e3),  # tiny share: mass near t = 0
    (18, 84, 100_084, 2.1242484969939914e7, 7.875751503006026e7),  # the binomial limit
    (40, 40, 2_040, 500.0, 0.05),  # share near 1
    (5, 5, 5, 1.0, 1.0),  # N = n: a point mass at t = 0
    (1, 20, 30_020, 1e6, 1e-2),  # share ~1 with y = 1
    (7, 30, 60_030, 0.2, 40.0),  # overdispersed, the posterior route's typical draw
]

LOSSES = [
    "uniques-equal:S=10",
    "uniques-equal:S=5000",
    "uniques-gamma:S=10,a=2",
    "uniques-gamma:S=4,a=0.5",
    "uniques-proportions:pi=0.5/0.3/0.2",
    "threshold:Ymin=5",
    "threshold:Ymin=3000",
    "Y",
    "user-bounded",
    "user-quadratic",
]


def _loss(spec):
    if spec == "user-bounded":  # a user loss is never built in: the mass-window route
        return user_loss(lambda y, Y, n, N: 1.0 / (1.0 + np.sqrt(Y)), name="inv-sqrt")
    if spec == "user-quadratic":  # grows polynomially in Y
        return user_loss(lambda y, Y, n, N: (Y / N) ** 2 + y, name="share-squared")
    return parse_loss(spec)


def _full_enumeration(loss, y, n, N, alpha, beta):
    """Every value of the support 0..N - n with the exact log pmf (the reference).

    Normalised by its sum (1 exactly over the whole support): at alpha + beta = 1e8
    and m = 1e5 the log pmf's common rounding (about 1e-16 m log(alpha + beta)) moves
    every term by the same 2.6e-10, which the division removes.
    """
    m = int(N - n)
    t = np.arange(m + 1, dtype=float)
    p = np.exp(beta_binomial_logpmf(t, m, alpha + y, beta + n - y))
    p = p / p.sum()
    L = np.asarray(loss(float(y), y + t, float(n), float(N)), dtype=float)
    return float(np.sum(L * np.broadcast_to(p, L.shape)))


@pytest.mark.parametrize("spec", LOSSES)
def test_window_sums_equal_full_enumeration(spec):
    loss = _loss(spec)
    y, n, N, a, b = (np.array(c, dtype=float) for c in zip(*CASES, strict=True))
    ref = np.array([_full_enumeration(loss, *c) for c in CASES])
    # the one-cell API
    got = np.array([expected_loss(loss, *c) for c in CASES])
    # 1e-10 relative; 2e-9 at alpha + beta = 1e8 (CASES[3]), where the exact log pmf
    # itself rounds to about 1e-16 m log(alpha + beta) = 2e-10 absolute per anchor
    # (the normalised reference there agrees with 50-digit decimals to 1e-12; the draw
    # enumeration before this fix was 2e-7 off)
    rtol = np.where(np.arange(len(CASES)) == 3, 2e-9, 1e-10)
    for name, values in (("expected_loss", got), ("decide's draws", None)):
        if values is None:  # decide's route: per-domain (draw, domain) hyperparameters
            values = dec._betabin_loss_over_draws(loss, y, n, N, a[None, :], b[None, :])[0]
        err = np.abs(values - ref) / np.maximum(np.abs(ref), 1e-300)
        assert np.all(err <= rtol), (name, err, values, ref)


def test_windowed_sums_against_high_precision():
    # Independent of float64 log-gamma: the pmf recurrence in 50-digit decimals, over the
    # whole support, for the domain where the old draw enumeration lost 2e-7.
    from decimal import Decimal, getcontext

    getcontext().prec = 50
    y, n, N = 18, 84, 1683
    alpha, beta = 2.1242484969939914e7, 7.875751503006026e7
    m, a, b = N - n, Decimal(alpha) + y, Decimal(beta) + n - y
    p = Decimal(1)
    for j in range(m):  # P(0) = (b)_m / (a + b)_m
        p *= (b + j) / (a + b + j)
    ref = Decimal(0)
    for t in range(m + 1):
        ref += p * y * (-(Decimal(y + t) / 10)).exp()
        if t < m:
            p *= Decimal(m - t) * (t + a) / (Decimal(t + 1) * (m - t - 1 + b))
    got = dec._betabin_loss_over_draws(parse_loss("uniques-equal:S=10"), np.array([18.0]),
                                       np.array([84.0]), np.array([1683.0]), alpha, beta)
    assert abs(float(got[0, 0]) / float(ref) - 1.0) < 1e-10


# The audit's 30 domains (auditR in/dom.csv): y, n, N.
DOMAINS = np.array([
    [18, 84, 1683], [10, 28, 560], [3, 13, 263], [5, 31, 632], [6, 42, 856],
    [15, 81, 1637], [9, 46, 929], [4, 11, 229], [9, 35, 703], [11, 61, 1220],
    [21, 81, 1635], [14, 73, 1470], [22, 99, 1986], [2, 20, 416], [13, 88, 1766],
    [0, 7, 157], [15, 56, 1138], [7, 29, 586], [6, 22, 442], [14, 66, 1331],
    [6, 32, 646], [11, 57, 1146], [6, 27, 557], [5, 17, 342], [14, 75, 1510],
    [12, 44, 893], [14, 68, 1373], [17, 67, 1355], [19, 94, 1893], [10, 43, 874],
], dtype=np.int64)


@pytest.mark.parametrize("route", ["fixed", "draws"])
def test_huge_domain_leaves_the_small_ones_alone(route):
    y, n, N = DOMAINS.T
    big = N.copy()
    big[0] = 1_000_000_000
    if route == "fixed":
        alpha, beta = 0.8, 3.0
    else:  # posterior draws, fixed seed
        rng = np.random.default_rng(2024)
        alpha, beta = rng.gamma(20.0, 0.04, size=200), rng.gamma(20.0, 0.15, size=200)
    kw = dict(alpha=alpha, beta=beta, alternatives=["threshold:Ymin=5/Y"])
    small = decide(y[1:], n[1:], N[1:], **kw)
    both = decide(y, n, big, **kw)
    t_small, t_both = small.table, both.table.iloc[1:]
    for col in ("R1", "R0"):
        np.testing.assert_allclose(t_both[col].to_numpy(), t_small[col].to_numpy(),
                                   rtol=1e-12)
    # the big domain's own risks: finite, and its expected Y is the closed form
    assert np.isfinite(both.table["R1"].iloc[0]) and both.table["R1"].iloc[0] >= 0
    # the rule at c is per domain: the small domains decide as without the big one
    c_small = decide(y[1:], n[1:], N[1:], c=0.01, **kw).table["publish"].to_numpy()
    c_both = decide(y, n, big, c=0.01, **kw).table["publish"].to_numpy()[1:]
    np.testing.assert_array_equal(c_both, c_small)


def test_cli_decide_with_a_domain_of_a_billion(tmp_path, monkeypatch, capsys):
    # The audit's command (finding 1): it used to run for minutes (hours) here.
    y, n, N = DOMAINS.T
    N = N.copy()
    N[0] = 1_000_000_000
    frame = pd.DataFrame({"area": [f"a{i:02d}" for i in range(len(y))], "y": y, "n": n, "N": N})
    frame.to_csv(tmp_path / "dom_oneN1e9.csv", index=False)
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "decide", "dom_oneN1e9.csv", "--y", "y", "--n", "n",
                          "--N", "N", "--hyperparameters", "ml", "--out", "OUT")
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "OUT" / "decisions.csv")
    assert len(out) == 30
    assert np.all(np.isfinite(out["R1"])) and np.all(out["R1"] >= 0)
