"""Audit Z5 (the decision route, seed 003): fixes F1-F3.

F1: a window of the predictive longer than ``_LONG_WINDOW`` values (``uniques-gamma`` on a
large domain, ``uniques-equal`` with a large S, ...) was summed term by term, at a cost
growing with N (58 s per domain-draw at N = 1e9); it is now summed exactly at its ends and
by quadrature in between. F2: a 2-D NumPy array of draws with one value per domain on its
last axis was silently read as per-domain draws. F3: ``parse_loss`` let a repeated
parameter override the first.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

import sdcbayes.risk.beta_binomial as bb
from sdcbayes.exceptions import InputError
from sdcbayes.risk.decisions import decide
from sdcbayes.risk.losses import parse_loss

# --------------------------------------------------------------- F1: long windows


def _window(loss, y, n, N, alpha, beta):
    y, n, N, alpha, beta = (np.array([float(v)]) for v in (y, n, N, alpha, beta))
    m, a, b = N - n, alpha + y, beta + n - y
    lo, hi, zero = bb._decreasing_window(loss, y, n, N, m, a, b)
    return (y, n, N, m, a, b, lo, hi), zero[0]


# windows of 1e5 to 2e6 values: the crossover between the two routes
CROSSOVER = [
    ("uniques-gamma:S=10,a=2", 71, 284, 2e6, 0.368, 11.5),
    ("uniques-gamma:S=10,a=0.3", 120, 261, 2e6, 0.017, 2.36),
    ("uniques-gamma:S=3,a=0.5", 2, 17, 1e6, 10.8, 3.37),
    ("uniques-gamma:S=1000,a=5", 4, 8, 2e6, 25.1, 11.4),
    ("uniques-gamma:S=10,a=2", 1, 10, 2e5, 0.5, 1.5),
    ("uniques-equal:S=1e5", 72, 227, 2e6, 3.61, 0.0458),
    ("uniques-equal:S=3e4", 157, 289, 1e6, 0.0532, 48.4),
    ("uniques-proportions:pi=0.00001/0.99999", 36, 232, 2e6, 6.43, 1.62),
    ("threshold:Ymin=300000", 30, 241, 5e5, 5.17, 0.0495),
]


@pytest.mark.parametrize("case", CROSSOVER, ids=[c[0] for c in CROSSOVER])
def test_long_window_route_matches_the_exact_sum_at_the_crossover(case):
    spec, *counts = case
    loss = parse_loss(spec)
    args, zero = _window(loss, *counts)
    lo, hi = args[-2:]
    assert not zero and hi[0] - lo[0] + 1 > bb._LONG_WINDOW  # the new route is taken
    exact = bb._window_sum(loss, *args, budget=1 << 22)[0]
    got = float(bb.expected_loss(loss, *counts))
    # measured: at most 6e-10 over 41 random cases; the floor is the rounding of the
    # log pmf at m ~ 1e6 (the exact sum and a per-term sum differ by up to 3e-11)
    assert abs(got - exact) <= 1e-9 * exact, (got, exact)


def test_long_window_route_costs_a_bounded_number_of_terms(monkeypatch):
    # F1: uniques-gamma at N = 1e9 summed ~1e9 terms (58 s); now the exact sums cover
    # 2 * _LONG_ENDS values, whatever N
    summed = []
    real = bb._window_sum

    def counting(loss, y, n, N, m, a, b, lo, hi, budget):
        summed.append(float(np.sum(hi - lo + 1.0)))
        return real(loss, y, n, N, m, a, b, lo, hi, budget)

    monkeypatch.setattr(bb, "_window_sum", counting)
    for spec, N in (("uniques-gamma:S=10,a=2", 1e9), ("uniques-gamma:S=10,a=0.3", 1e9),
                    ("uniques-equal:S=1e7", 1e9),
                    ("uniques-proportions:pi=0.000001/0.999999", 1e8)):
        summed.clear()
        r = float(bb.expected_loss(spec, 1, 10, N, 0.5, 1.5))
        assert np.isfinite(r) and r > 0
        assert 0 < sum(summed) <= 2 * bb._LONG_ENDS, (spec, summed)


def _gamma_loss_by_integral(y, n, N, alpha, beta, S, a):
    """Independent reference (audit Z5, t10): (1 + Y/(aS))^-(a+1) = E_U exp(-U Y/(aS)),
    U ~ Gamma(a + 1, 1), and E[exp(-sT)] = int Beta(th; A, B) (1 - th (1 - e^-s))^m dth."""
    A, B, m = alpha + y, beta + n - y, N - n

    def laplace(s):
        c = -np.expm1(-s)

        def f(u):
            return np.exp(stats.beta.logpdf(np.exp(u), A, B) + u + m * np.log1p(-np.exp(u) * c))

        pts = np.log([1e-300, 1e-3 / m, 1 / m, 10 / m, 1e3 / m, 1e-2, 0.5, 1 - 1e-16])
        return np.exp(-s * y) * sum(
            integrate.quad(f, lo, hi, limit=200, epsrel=1e-11, epsabs=0)[0]
            for lo, hi in zip(pts[:-1], pts[1:], strict=True) if lo < hi)

    def g(v):
        return stats.gamma.pdf(np.exp(v), a + 1) * np.exp(v) * laplace(np.exp(v) / (a * S))

    return y * integrate.quad(g, np.log(1e-12), np.log(200), limit=400, epsrel=1e-10,
                              epsabs=0)[0]


def test_uniques_gamma_at_n_1e9_against_an_independent_integral():
    # the audit's t10 reference: the package agrees to 1.7e-14 (a = 2) at N = 1e9
    got = float(bb.expected_loss("uniques-gamma:S=10,a=2", 1, 10, 10**9, 0.5, 1.5))
    ref = _gamma_loss_by_integral(1, 10, 1e9, 0.5, 1.5, 10.0, 2.0)
    assert got == pytest.approx(4.330502905e-11, rel=1e-9)
    assert abs(got - ref) <= 1e-12 * ref


def test_short_windows_keep_the_exact_sum_bit_for_bit():
    # the usual domains never take the new route: their risks do not change by a bit
    for spec, counts in (("uniques-gamma:S=10,a=2", (1, 10, 5e4, 0.5, 1.5)),
                         ("uniques-equal:S=10", (3, 20, 1e9, 0.5, 1.5)),
                         ("threshold:Ymin=5", (1, 10, 1e9, 0.5, 1.5))):
        loss = parse_loss(spec)
        args, zero = _window(loss, *counts)
        assert not zero and args[-1][0] - args[-2][0] + 1 <= bb._LONG_WINDOW
        exact = bb._window_sum(loss, *args, budget=bb._BLOCK_ELEMENTS)[0]
        assert float(bb.expected_loss(loss, *counts)) == exact


def test_decide_with_uniques_gamma_on_large_domains_matches_the_exact_sums():
    rng = np.random.default_rng(0)
    m = 5
    n = rng.integers(20, 200, m)
    N = rng.integers(5 * 10**5, 2 * 10**6, m)
    y = rng.binomial(n, 0.2)
    a, b = rng.gamma(20, 0.5 / 20, 4), rng.gamma(20, 3 / 20, 4)
    res = decide(y, n, N, alpha=a, beta=b, disclosure_loss="uniques-gamma:S=10,a=2", c=1.0)
    loss = parse_loss("uniques-gamma:S=10,a=2")
    ref = []
    for i in range(m):
        vals = []
        for d in range(a.size):
            args, _ = _window(loss, y[i], n[i], N[i], a[d], b[d])
            vals.append(bb._window_sum(loss, *args, budget=1 << 22)[0])
        ref.append(np.mean(vals))
    np.testing.assert_allclose(res.table["R1"].to_numpy(), ref, rtol=1e-9)


# ----------------------------------------------- F2: (chain, draw) vs (draw, domain)

Y, NS, NN = np.array([1, 2, 3, 1]), np.array([10, 10, 20, 5]), np.array([50, 200, 30, 100])


def _draws24():
    rng = np.random.default_rng(1)
    return rng.gamma(4, 0.15, (2, 4)), rng.gamma(4, 0.7, (2, 4))  # 2 x 4, 4 domains


def test_ambiguous_two_dim_draws_are_refused():
    a, b = _draws24()
    with pytest.raises(InputError, match=r"per_domain=False.*per_domain=True"):
        decide(Y, NS, NN, alpha=a, beta=b, c=1.0)
    with pytest.raises(InputError, match="shape \\(2, 4\\) and there are 4 domains"):
        decide(Y, NS, NN, alpha=a, beta=1.0, c=1.0)


def test_per_domain_false_reads_shared_draws():
    a, b = _draws24()
    flat = decide(Y, NS, NN, alpha=a.ravel(), beta=b.ravel(), c=1.0)
    shared = decide(Y, NS, NN, alpha=a, beta=b, c=1.0, per_domain=False)
    np.testing.assert_allclose(shared.table["R1"], flat.table["R1"], rtol=1e-12)
    np.testing.assert_allclose(flat.table["R1"], [0.5971, 0.1538, 1.9189, 0.2544], atol=1e-4)
    assert "per_domain" not in shared.hyperparameters


def test_per_domain_true_reads_each_domains_own_draws():
    a, b = _draws24()
    per = decide(Y, NS, NN, alpha=a, beta=b, c=1.0, per_domain=True)
    three = decide(Y, NS, NN, alpha=a[None], beta=b[None], c=1.0)  # (chain, draw, domain)
    np.testing.assert_allclose(per.table["R1"], three.table["R1"], rtol=1e-12)
    np.testing.assert_allclose(per.table["R1"], [0.5667, 0.1387, 1.9206, 0.3171], atol=1e-4)
    assert per.hyperparameters["per_domain"] and three.hyperparameters["per_domain"]
    # each domain averaged over its own two draws
    one = decide(Y[:1], NS[:1], NN[:1], alpha=a[:, 0], beta=b[:, 0], c=1.0)
    assert per.table["R1"].iloc[0] == pytest.approx(one.table["R1"].iloc[0], rel=1e-12)
    with pytest.raises(InputError, match="domain axis last"):
        decide(Y, NS, NN, alpha=np.ones((2, 5)), beta=1.0, per_domain=True)
    with pytest.raises(InputError, match="None, True or False"):
        decide(Y, NS, NN, alpha=a, beta=b, per_domain="yes")


def test_unambiguous_shapes_read_as_before():
    rng = np.random.default_rng(2)
    a5, b5 = rng.gamma(4, 0.15, (2, 5)), rng.gamma(4, 0.7, (2, 5))  # 5 draws, 4 domains
    r = decide(Y, NS, NN, alpha=a5, beta=b5, c=1.0)
    flat = decide(Y, NS, NN, alpha=a5.ravel(), beta=b5.ravel(), c=1.0)
    np.testing.assert_allclose(r.table["R1"], flat.table["R1"], rtol=1e-12)
    # one domain: (chain, draw) and (draw, domain) give the same numbers, so no refusal
    one = decide([1], [10], [50], alpha=a5[:, :1], beta=b5[:, :1], c=1.0)
    assert np.isfinite(one.table["R1"]).all()


# ------------------------------------------------------ F3: a repeated parameter


@pytest.mark.parametrize("spec", ["uniques-equal:S=10,S=20", "uniques-gamma:S=10,a=2,a=3",
                                  "threshold: Ymin=5 , Ymin=5"])
def test_parse_loss_refuses_a_repeated_parameter(spec):
    key = spec.split(",")[-1].split("=")[0].strip()
    with pytest.raises(InputError, match=f"parameter {key} is given twice"):
        parse_loss(spec)


def test_parse_loss_still_round_trips():
    for spec in ("uniques-equal:S=10", "uniques-gamma:S=10,a=2", "threshold:Ymin=5.5",
                 "uniques-proportions:pi=0.5/0.3/0.2"):
        loss = parse_loss(spec)
        assert parse_loss(loss.spec) == loss
