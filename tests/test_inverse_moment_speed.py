"""inverse_moment_sum_rows (the released-file quadrature) against a frozen copy of itself.

:func:`sdcbayes.risk.posterior.inverse_moment_sum_rows` was made faster in two ways, each
changing the result by at most ``_ROWS_TOL`` (1e-17) relative: the tail nodes of the
tanh-sinh rule whose weights sum below that bound (after Jensen's f/(f + EX)) are
skipped, and the near-Poisson cells (odds (1 - rho)/rho at most ``_SERIES_ODDS``) are
summed as one alternating power series of log1p (the rows sorted by f share the powers
of the nodes), cut after the fewest terms whose error bound (the next term) is below it;
the other cells keep one ``log1p`` per node. A row whose cells have odds at most
``_LEVEL_ODDS`` and whose step-4h and step-2h sums agree to ``_LEVEL_TOL`` keeps the
step-2h sum (every other node; tests/test_released_speed.py checks it on random rows
within that bound). The frozen copy below is the implementation
before that change (226 nodes, one ``log1p`` per cell and node); the new one must agree
with it to 1e-13 relative over adversarial rows, and both with the closed forms for one
negative binomial (:func:`sdcbayes.risk.individual.negbin_inverse_moment`) and for a Poisson
(:func:`sdcbayes.models.latent_class.expected_inverse_frequency_f`).
"""

from __future__ import annotations

import numpy as np
import pytest

import sdcbayes
from sdcbayes.models.latent_class import expected_inverse_frequency_f
from sdcbayes.risk.individual import negbin_inverse_moment
from sdcbayes.risk.posterior import (
    _ROWS_BLOCK,
    _TS_LOG_S,
    _TS_W,
    inverse_moment_sum,
    inverse_moment_sum_rows,
)


def _frozen_rows(f, r, rho, lam_poisson=None):
    """inverse_moment_sum_rows as it was before the speed-up (checks dropped)."""
    r = np.asarray(r, dtype=float)
    rho = np.asarray(rho, dtype=float)
    S, C = r.shape
    f = np.broadcast_to(np.asarray(f, dtype=float), (S,))
    lam = None
    if lam_poisson is not None:
        lam = np.asarray(lam_poisson, dtype=float)
        lam = lam.sum(axis=-1) if lam.ndim == 2 else np.broadcast_to(lam, (S,))
    odds = (1.0 - rho) / rho
    live = (r > 0) & (odds > 0)
    out = np.empty(S)
    for s0 in range(0, S, 256):
        b = slice(s0, min(s0 + 256, S))
        one_m_t = -np.expm1(_TS_LOG_S[None, :] / f[b, None])
        log_g = np.zeros_like(one_m_t)
        if lam is not None:
            log_g -= lam[b, None] * one_m_t
        buf = np.empty_like(one_m_t)
        for c in np.flatnonzero(live[b].any(axis=0)):
            np.multiply(odds[b, c, None], one_m_t, out=buf)
            np.log1p(buf, out=buf)
            buf *= r[b, c, None]
            log_g -= buf
        out[b] = (np.exp(log_g) @ _TS_W) / f[b]
    return out


def _adversarial_rows(seed, n_rows, K):
    """Rows like a released file's (kappa + counts, a large remainder) and worse."""
    rng = np.random.default_rng(seed)
    f = rng.choice([1.0, 1.0, 2.0, 7.0, 40.0, 3000.0], n_rows)
    kappa = rng.choice([1e-3, 0.5, 100.0, 1e4], n_rows) * rng.uniform(0.5, 2.0, n_rows)
    counts = rng.choice([0.0, 0.0, 0.0, 1.0, 2.0, 5.0], (n_rows, K))
    r = kappa[:, None] + counts
    free = rng.random(n_rows) < 0.3  # sizes unrelated to each other
    r[free] = 10 ** rng.uniform(-3, 4, (free.sum(), K))
    # odds from 1e-12 (near-Poisson) to 1e300 (rho near the smallest float)
    log_odds = rng.choice([rng.uniform(-12, -1), rng.uniform(-3, 1), rng.uniform(0, 300)],
                          (n_rows, K))
    rho = 1.0 / (1.0 + 10 ** log_odds)
    rho[rng.random((n_rows, K)) < 0.1] = 1.0  # zero cells
    r[rng.random((n_rows, K)) < 0.1] = 0.0  # padding
    # the remainder: E X up to about 1e7
    r_rem = 10 ** rng.uniform(-3, 7, n_rows)
    rho_rem = 1.0 / (1.0 + 10 ** rng.uniform(-7, 0.5, n_rows))
    r = np.c_[r, r_rem]
    rho = np.c_[rho, rho_rem]
    lam = rng.choice([0.0, 0.0, 1e-3, 50.0, 1e7], n_rows)
    return f, r, rho, lam


@pytest.mark.parametrize("K", [0, 1, 4, 16, 17])
def test_rows_agree_with_the_frozen_copy_on_adversarial_rows(K):
    f, r, rho, lam = _adversarial_rows(K, 3 * _ROWS_BLOCK + 41, K)
    for args in ((f, r, rho, lam), (f, r, rho), (f[7], r, rho, lam)):
        old = _frozen_rows(*args)
        new = inverse_moment_sum_rows(*args)
        assert np.all((old > 0) == (new > 0))
        np.testing.assert_allclose(new, old, rtol=1e-13, atol=0)


def test_rows_agree_with_the_frozen_copy_at_the_edges():
    # f = 1 and E X about 1e7; tiny and huge r; odds at the series threshold and just
    # above; rows whose series would need too many terms; r * odds overflowing; K = 0
    edge = [
        (1.0, [[1e3, 1e4]], [[1e-4, 1.0 / 1.2]], 0.0),
        (1.0, [[1e-3, 1e-3]], [[1e-12, 1e-300]], 0.0),
        (1.0, [[1e4] * 17], [[1.0 / 1.2] * 17], 1e7),
        (2.0, [[1e40, 1.0]], [[1.0 / 1.2, 0.5]], 0.0),  # m_1 = 2e39: too many terms
        (3.0, [[1e10, 5.0]], [[1e-300, 0.9]], 0.0),  # r * odds = inf: no tail cut
        (1.0, [[0.0, 0.0]], [[0.3, 1.0]], 0.0),  # every cell zero: 1/f
        (5.0, [[]], [[]], 0.0),
        (5.0, [[]], [[]], 1e7),
        (1.0, [[2.5, 2.5, 2.5, 1e6]], [[0.999, 0.99, 0.9, 1.0 - 1e-6]], 3.0),
    ]
    for f, r, rho, lam in edge:
        r, rho = np.array(r, dtype=float), np.array(rho, dtype=float)
        args = (f, np.repeat(r, 3, axis=0), np.repeat(rho, 3, axis=0), [lam] * 3)
        np.testing.assert_allclose(inverse_moment_sum_rows(*args), _frozen_rows(*args),
                                   rtol=1e-13, atol=0)
    assert inverse_moment_sum_rows(1.0, [[0.0, 0.0]], [[0.3, 1.0]])[0] == pytest.approx(1.0)


def test_rows_in_any_order_give_the_same_values():
    f, r, rho, lam = _adversarial_rows(3, 700, 5)
    perm = np.random.default_rng(4).permutation(f.size)
    a = inverse_moment_sum_rows(f, r, rho, lam)
    b = inverse_moment_sum_rows(f[perm], r[perm], rho[perm], lam[perm])
    np.testing.assert_allclose(b, a[perm], rtol=1e-15, atol=0)


def test_rows_match_the_closed_forms():
    rng = np.random.default_rng(0)
    n = 300
    for f in (1.0, 2.0, 5.0, 30.0, 300.0, 3000.0):
        fs = np.full(n, f)
        # one negative binomial: the 2F1 closed form of seed 004 eq. 6
        r = 10 ** rng.uniform(-2, 3, n)
        rho = 1.0 / (1.0 + 10 ** rng.uniform(-6, 1, n))
        np.testing.assert_allclose(inverse_moment_sum_rows(fs, r[:, None], rho[:, None]),
                                   negbin_inverse_moment(fs, r, rho), rtol=1e-11, atol=0)
        # a Poisson: 1F1(1; f + 1; -lambda)/f
        lam = 10 ** rng.uniform(-3, 3, n)
        np.testing.assert_allclose(
            inverse_moment_sum_rows(fs, np.zeros((n, 0)), np.ones((n, 0)), lam),
            expected_inverse_frequency_f(fs, lam), rtol=1e-11, atol=0)


def test_rows_equal_inverse_moment_sum_on_released_like_rows():
    f, r, rho, lam = _adversarial_rows(9, 400, 16)
    np.testing.assert_allclose(inverse_moment_sum_rows(f, r, rho, lam),
                               inverse_moment_sum(f, r, rho, lam), rtol=1e-13, atol=0)


def test_rows_refuse_bad_input():
    with pytest.raises(sdcbayes.InputError, match="f >= 1"):
        inverse_moment_sum_rows([0.5], [[1.0]], [[0.5]])
    with pytest.raises(sdcbayes.InputError, match="Poisson"):
        inverse_moment_sum_rows([1.0], [[1.0]], [[0.5]], [-1.0])
    with pytest.raises(sdcbayes.InputError, match="one shape"):
        inverse_moment_sum_rows([1.0], [[1.0]], [[0.5, 0.5]])


def test_series_takes_the_fewest_terms_its_error_bound_allows():
    from sdcbayes.risk.posterior import _series_coefficients

    # one cell, r = 1, odds 0.1: m_k = 0.1^k, and 0.1^(D+1)/(D+1) <= 1e-17 first at D = 15
    coef, small = _series_coefficients(np.array([[0.1]]), np.array([[1.0]]),
                                       np.array([[True]]))
    assert coef.shape == (1, 15) and small.all()
    k = np.arange(1, 16)
    np.testing.assert_allclose(coef[0], (-1.0) ** (k + 1) * 0.1 ** k / k, rtol=1e-14)
    # a row that would need more than _SERIES_TERMS terms leaves the series
    coef, small = _series_coefficients(np.array([[0.2], [0.1]]), np.array([[1e40], [1.0]]),
                                       np.ones((2, 1), bool))
    assert small.tolist() == [[False], [True]] and np.all(coef[0] == 0)


# ------------------------------------------------ the packed log1p loop and the series runs
#
# _minus_log_g adds each row's log1p cells over dense leading blocks of rows sorted by their
# number of such cells, and _series_coefficients computes its power sums a run of terms at a
# time. Both restructure the arithmetic without changing it: the copies below are the
# one-term-at-a-time series and the row-gathering loop they replaced, and the results must
# be those to the bit (the same products, log1p and sums in the same order).


def _plain_series(a, r, small):
    """_series_coefficients one term at a time (the implementation it replaced)."""
    from sdcbayes.risk.posterior import _ROWS_TOL, _SERIES_TERMS

    a_s = np.where(small, a, 0.0).T.copy()
    pw = np.where(small, r, 0.0).T * a_s
    m = [pw.sum(axis=0)]
    while True:
        pw *= a_s
        nxt = pw.sum(axis=0)
        fail = nxt / (len(m) + 1) > _ROWS_TOL
        if not fail.any():
            break
        if len(m) == _SERIES_TERMS:
            small = small & ~fail[:, None]
            for mk in m:
                mk[fail] = 0.0
            break
        m.append(nxt)
    k = np.arange(1, len(m) + 1)
    return np.stack(m, axis=1) * (np.where(k % 2 == 1, 1.0, -1.0) / k), small


def _plain_minus_log_g(fb, ab, rb, big, coef, sel, nodes):
    """_minus_log_g gathering the rows with a j-th log1p cell (the loop it replaced)."""
    fs = fb[sel]
    D = coef.shape[1]
    log_s = _TS_LOG_S[nodes]
    one_m_t = np.empty((sel.size, nodes.size))
    log_g = np.empty_like(one_m_t)
    runs = np.flatnonzero(np.r_[True, fs[1:] != fs[:-1], True])
    for i0, i1 in zip(runs[:-1], runs[1:], strict=True):
        u = -np.expm1(log_s / fs[i0])
        one_m_t[i0:i1] = u
        powers = np.empty((D, u.size))
        powers[0] = u
        for d in range(1, D):
            np.multiply(powers[d - 1], u, out=powers[d])
        log_g[i0:i1] = coef[sel[i0:i1]] @ powers
    bs, ab, rb = big[sel], ab[sel], rb[sel]
    rank = np.cumsum(bs, axis=1) - 1
    for j in range(int(bs.sum(axis=1).max(initial=0))):
        i, c = np.nonzero(bs & (rank == j))
        x = ab[i, c, None] * one_m_t[i]
        np.log1p(x, out=x)
        x *= rb[i, c, None]
        log_g[i] += x
    return log_g


@pytest.mark.parametrize("seed", range(3))
def test_series_runs_are_the_one_term_at_a_time_series_to_the_bit(seed):
    from sdcbayes.risk.posterior import _SERIES_ODDS, _series_coefficients

    rng = np.random.default_rng(seed)
    for _ in range(40):
        n, C = int(rng.integers(1, 300)), int(rng.integers(1, 20))
        # odds up to the series bound, down to 1e-12; sizes up to 1e60 (more than the
        # _SERIES_TERMS terms on some rows), zero cells and rows with no series cell
        a = 10 ** rng.uniform(-12, np.log10(_SERIES_ODDS), (n, C))
        a[rng.random((n, C)) < 0.2] = 0.0
        r = 10 ** rng.uniform(-3, rng.choice([0.0, 3.0, 12.0, 60.0]), (n, C))
        small = (a > 0) & (rng.random((n, C)) < 0.85)
        small[rng.random(n) < 0.1] = False
        got, got_small = _series_coefficients(a, r, small)
        want, want_small = _plain_series(a, r, small)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got_small, want_small)


def test_series_runs_stop_where_one_term_at_a_time_stops():
    from sdcbayes.risk.posterior import _SERIES_RUN, _SERIES_TERMS, _series_coefficients

    # odds chosen so that D falls on either side of each run's end and at the cap
    for odds in (0.1, 0.19, 0.2, 1e-3, 1e-9, 0.15):
        for r in (1e-3, 1.0, 1e3, 1e9, 1e25):
            a, rr = np.array([[odds]]), np.array([[r]])
            got, _ = _series_coefficients(a, rr, np.array([[True]]))
            want, _ = _plain_series(a, rr, np.array([[True]]))
            np.testing.assert_array_equal(got, want)
    assert 1 < _SERIES_RUN < _SERIES_TERMS


@pytest.mark.parametrize("K", [1, 4, 16, 17])
def test_packed_log1p_loop_is_the_row_gathering_loop_to_the_bit(monkeypatch, K):
    import sdcbayes.risk.posterior as posterior

    calls = []
    orig = posterior._minus_log_g

    def both(fb, ab, rb, big, coef, sel, nodes):
        got = orig(fb, ab, rb, big, coef, sel, nodes)
        np.testing.assert_array_equal(got, _plain_minus_log_g(fb, ab, rb, big, coef, sel,
                                                              nodes))
        calls.append(int(big[sel].sum(axis=1).max(initial=0)))
        return got

    monkeypatch.setattr(posterior, "_minus_log_g", both)
    # ragged numbers of log1p cells per row (adversarial rows), rows all alike, and none
    f, r, rho, lam = _adversarial_rows(50 + K, 2 * _ROWS_BLOCK + 9, K)
    inverse_moment_sum_rows(f, r, rho, lam)
    rho_big = np.full_like(rho, 0.4)  # odds 1.5: every cell one log1p per node
    inverse_moment_sum_rows(f, r, rho_big, lam)
    inverse_moment_sum_rows(f, r, np.full_like(rho, 0.99), lam)  # odds 0.01: series only
    assert calls and max(calls) >= K and 0 in calls
