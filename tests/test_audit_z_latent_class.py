"""Audit Z1, models/latent_class.py: four fixes, each checked by an independent route.

1. With structural zeros, ``split_merge`` and ``label_moves``, the label swaps relabelled
   the records and the class counts but not the augmented records, so the split-merge
   moves saw counts of one labelling and allocations of another. Checked by recounting
   every sweep's counts from the labels, and against an importance-sampling reference.
2. ``expected_inverse_frequency`` used its small-lambda series whenever
   kappa lambda / b <= 1e-8, also where kappa is tiny and lambda / b is not (-49 at
   kappa 1e-10). Checked against the negative-binomial expectation it cites, summed
   term by term: E(1/(f + X)), X ~ NegBin(kappa + f, b/(b + lambda)), b = kappa + n pi.
3. ``uniques_kappa`` assumed the expected sample uniques rise with kappa; on dense
   cells they peak inside the grid, and it returned inf where the equation has two
   finite roots. Checked with the audit's example, whose roots the grid shows.
4. ``overdispersion="cv"`` refused files of fewer than 4 records even for a census
   (N = n), where kappa does not enter; the refusal did not name the way out.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.special import gammaln

from sdcbayes.exceptions import InputError
from sdcbayes.models import latent_class as lc
from sdcbayes.models.latent_class import LatentClassModel


# --------------------------------------------------------------------------- 1. labels
def tiny2(n_classes=3):
    """3 x 3 keys with 3 forbidden cells (a large augmented mass), n = 34 (audit's tiny2)."""
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [1, 2], [2, 2]])
    counts = np.array([10, 6, 5, 1, 4, 8])
    rules = [{"k1": ["0"], "k2": ["2"]}, {"k1": ["2"], "k2": ["0", "1"]}]
    return LatentClassModel(codes, counts, [3, 3], keys=["k1", "k2"],
                            levels=[["0", "1", "2"]] * 2, n_classes=n_classes,
                            structural_zeros=rules)


@pytest.mark.parametrize("split_merge", [1, 3])
def test_counts_match_every_label_after_every_sweep(monkeypatch, split_merge):
    # the chain recounts the class sizes and level counts from the records' and the
    # augmented records' labels after every sweep's moves and raises where they differ
    monkeypatch.setattr(lc, "_CHECK_COUNTS", True)
    idata = tiny2().sample(draws=300, tune=0, chains=1, random_seed=3,
                           split_merge=split_merge, label_moves=True)
    # the case was exercised: augmented records in most sweeps, moves accepted
    assert (idata.sample_stats["n_augmented"].values > 0).mean() > 0.5
    assert idata.sample_stats["split_merge_accepted"].values.sum() > 0


def test_check_counts_catches_a_mismatch():
    m = np.array([3.0, 2.0])
    c = [np.array([[2.0, 1.0], [1.0, 1.0]])]
    lc._check_class_counts(m, c, m.copy(), [x.copy() for x in c])
    with pytest.raises(RuntimeError, match="class sizes"):
        lc._check_class_counts(m, c, m[::-1], c)
    with pytest.raises(RuntimeError, match="level counts"):
        lc._check_class_counts(m, c, m, [c[0][:, ::-1]])


def test_split_merge_gets_counts_of_its_allocations(monkeypatch):
    # the audit's reproducer: the counts handed to _split_merge are the level counts of
    # the allocations handed with it (55 of 300 calls differed before the fix)
    orig = lc._split_merge
    calls = {"n": 0, "bad": 0}

    def wrapped(alloc, codes, conc, alpha, rng, n_moves=1, learnt=None, counts=None):
        calls["n"] += 1
        for j in range(codes.shape[1]):
            cj = np.zeros((len(conc[j]), alloc.shape[1]))
            np.add.at(cj, codes[:, j], alloc)
            if not np.array_equal(cj, counts[j]):
                calls["bad"] += 1
                break
        return orig(alloc, codes, conc, alpha, rng, n_moves, learnt, counts)

    monkeypatch.setattr(lc, "_split_merge", wrapped)
    codes = np.array([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1]])
    model = LatentClassModel(codes, np.array([12, 7, 1, 9, 1]), [2, 3], keys=["k1", "k2"],
                             levels=[["0", "1"], ["0", "1", "2"]], n_classes=3,
                             structural_zeros=[{"k1": ["1"], "k2": ["2"]}])
    model.sample(draws=300, tune=0, chains=1, random_seed=3, split_merge=1, label_moves=True)
    assert calls["n"] == 300
    assert calls["bad"] == 0


def test_split_merge_label_moves_structural_zeros_posterior():
    # Reference: the audit's self-normalised importance sampling from the prior (4e6
    # draws, ESS 15k; /tmp/auditZ1/is_ref.py), posterior means of the observed cells'
    # pi with their standard errors (about 4e-4). One chain of 2,000 draws has a
    # Monte Carlo error of about 0.0025, so 0.01 is four of them. (The bug's effect on
    # pi was within such errors: this guards the combined kernel's target, the
    # recount above the fix.)
    ref = np.array([0.30066, 0.16318, 0.13492, 0.05157, 0.11745, 0.23222])
    idata = tiny2().sample(draws=2000, tune=200, chains=1, random_seed=11, split_merge=3,
                           label_moves=True, store="all")
    got = idata.posterior["pi"].values.mean(axis=(0, 1))
    np.testing.assert_allclose(got, ref, atol=0.01)
    # the forbidden cells hold a real share of the untruncated mass
    assert idata.posterior["mass_structural_zero"].values.mean() > 0.05


# --------------------------------------------------------- 2. expected_inverse_frequency
def nb_inverse_sum(f, kappa, lam, sample_mean, max_terms=2_000_000):
    """E(1/(f + X)), X ~ NegBin(kappa + f, p = b/(b + lam)), b = kappa + n pi: summed.

    The terms w(x) by the ratio w(x + 1)/w(x) = (x + s)(1 - p)/(x + 1), normalised by
    their sum over 0..hi, where hi leaves out less than e^-40 of the mass (mean + 40 sd
    + 40/p). None where that takes more than ``max_terms`` terms.
    """
    s, b = kappa + f, kappa + sample_mean
    if lam == 0:
        return 1.0 / f
    p = b / (b + lam)
    log_q = np.log(lam) - np.log(b + lam)  # log(1 - p), exact for p near 1
    mean, sd = s * lam / b, np.sqrt(s * lam * (b + lam)) / b
    hi = int(mean + 40.0 * sd + 40.0 / p + 50.0)
    if hi > max_terms:
        return None
    x = np.arange(hi + 1, dtype=float)
    logw = np.concatenate([[0.0], np.cumsum(np.log(x[:-1] + s) - np.log(x[:-1] + 1.0)
                                            + log_q)])
    w = np.exp(logw - logw.max())
    return float(np.sum(w / (f + x)) / np.sum(w))


def gamma_mixture_inverse(kappa, lam, sample_mean):
    """E(1/F | f = 1) by quadrature over the cell effect: u ~ Gamma(kappa + 1, kappa + n pi),
    E(1/F | u) = (1 - exp(-lam u))/(lam u) (Poisson), on the log scale of u. For the heavy
    negative binomials (kappa small, lam/b large) whose sum is too long."""
    s, b = kappa + 1.0, kappa + sample_mean

    def g(t):
        u = np.exp(t)
        z = lam * u
        return np.exp(s * np.log(b) + s * t - b * u - gammaln(s)) * (-np.expm1(-z) / z)

    lo, hi = np.log(s / b) - 60.0, np.log((s + 60.0 * np.sqrt(s) + 60.0) / b)
    pts = [x for x in (np.log(s / b), -np.log(lam)) if lo < x < hi]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        return integrate.quad(g, lo, hi, points=pts, limit=500, epsabs=0, epsrel=1e-12)[0]


KAPPAS = (1e-12, 1e-10, 1e-8, 1e-6, 1e-3, 1.0, 1e3, 1e6)
LAMS = (0.0, 1e-12, 1e-6, 1e-2, 1.0, 1e2, 1e4, 1e6)


def test_gamma_mixture_reference_agrees_with_the_sum():
    # the quadrature stands in for the sum only where the sum is too long: where both
    # run, they agree
    for kappa in (1e-9, 1e-3, 1.0):
        for lam in (1.0, 1e2, 1e4):
            assert gamma_mixture_inverse(kappa, lam, 3.0) == pytest.approx(
                nb_inverse_sum(1, kappa, lam, 3.0), rel=1e-10)


@pytest.mark.parametrize("sample_mean", [0.01, 3.0])
def test_expected_inverse_frequency_matches_the_negative_binomial_sum(sample_mean):
    bad = []
    for kappa in KAPPAS:
        for lam in LAMS:
            ref = nb_inverse_sum(1, kappa, lam, sample_mean)
            if ref is None:
                ref = gamma_mixture_inverse(kappa, lam, sample_mean)
            got = float(lc.expected_inverse_frequency(lam, kappa, sample_mean))
            if not abs(got - ref) <= 1e-9 * ref:
                bad.append((kappa, lam, got, ref))
    # before the fix: e.g. kappa 1e-10, lam 1 gave -49 (truth 0.046 at n pi = 0.01)
    assert not bad, bad


def test_expected_inverse_frequency_vectorised_and_tiny_kappa():
    lam = np.array(LAMS)
    kappa = np.array([1e-12, 1e-10, 1e-300])[:, None]
    got = lc.expected_inverse_frequency(lam, kappa, 0.01)
    assert got.shape == (3, lam.size)
    assert np.all(np.isfinite(got)) and np.all((got > 0) & (got <= 1.0))
    assert float(lc.expected_inverse_frequency(1.0, 1e-10, 0.01)) == pytest.approx(
        0.046151, abs=1e-6)
    # kappa -> 0 (u ~ Exp(b)): (b / lam) log(1 + lam / b)
    assert float(lc.expected_inverse_frequency(1.0, 1e-300, 0.01)) == pytest.approx(
        0.01 * np.log1p(100.0), rel=1e-12)


@pytest.mark.parametrize("f", [2, 5])
def test_expected_inverse_frequency_f_at_tiny_kappa(f):
    for kappa in (1e-12, 1e-8, 1e-3, 1.0):
        for lam in (1e-6, 1.0, 1e2, 1e4):
            ref = nb_inverse_sum(f, kappa, lam, 1.0)
            got = float(lc.expected_inverse_frequency_f(f, lam, kappa, 1.0))
            assert got == pytest.approx(ref, rel=1e-9), (kappa, lam)


def test_sample_with_tiny_kappa_gives_tau2_expected_in_range():
    # the audit's reproducer: one sample unique, so tau2_expected lies in (0, 1]
    # (-47.5 before the fix)
    m = LatentClassModel(np.array([[0, 0], [1, 1], [0, 1]]), [30, 1, 20], [2, 2], n_classes=3)
    idata = m.sample(draws=20, tune=5, chains=1, random_seed=1, N=5000.0, overdispersion=1e-12)
    t2 = idata.posterior["tau2_expected"].values
    assert np.all((t2 > 0) & (t2 <= 1.0))


# --------------------------------------------------------------------- 3. uniques_kappa
def dense_cells(m1):
    """100 cells with n pi = 3 (n = 300), m1 of them seen once (the audit's example)."""
    n = 300.0
    pi = np.full((1, 100), 0.01)
    f = np.r_[np.full(m1, 1.0), np.full(100 - m1, (n - m1) / (100 - m1))]
    return pi, f, n


def test_expected_sample_uniques_is_not_monotone_on_dense_cells():
    pi, f, n = dense_cells(16)
    e = np.array([lc.expected_sample_uniques(pi, f, n, k) for k in lc.KAPPA_GRID])
    top = int(np.argmax(e))
    assert 0 < top < e.size - 1  # the peak is inside the grid
    assert e[top] > 16 > e[-1] and e[0] < 16  # 16 is met on both sides of the peak


def test_uniques_kappa_returns_the_smallest_root():
    pi, f, n = dense_cells(16)
    k = lc.uniques_kappa(pi, f, n)
    # before the fix: inf, where E(m1) = 14.94, not 16
    assert np.isfinite(k)
    assert lc.expected_sample_uniques(pi, f, n, k) == pytest.approx(16.0, rel=1e-6)
    # the other root lies above the peak: the documented choice is the smaller one
    g = lc.KAPPA_GRID[:-1]
    d = np.array([lc.expected_sample_uniques(pi, f, n, x) for x in g]) - 16.0
    crossings = g[np.flatnonzero(np.sign(d[:-1]) != np.sign(d[1:]))]
    assert crossings.size == 2
    step = lc.KAPPA_GRID[1] / lc.KAPPA_GRID[0]
    assert crossings[0] <= k <= crossings[0] * step and k < crossings[1]


def test_uniques_kappa_without_a_root_gives_the_nearest():
    pi, f, n = dense_cells(22)  # above every expectation (the peak is about 19.3)
    e = np.array([lc.expected_sample_uniques(pi, f, n, k) for k in lc.KAPPA_GRID])
    assert e.max() < 22 and np.isfinite(lc.KAPPA_GRID[int(np.argmax(e))])
    # before the fix: inf (22 >= the Poisson end's 14.9), though kappa 1.6 comes nearer
    assert lc.uniques_kappa(pi, f, n) == lc.KAPPA_GRID[int(np.argmax(e))]


def test_uniques_kappa_single_root_unchanged():
    pi, f, n = dense_cells(6)
    k = lc.uniques_kappa(pi, f, n)
    assert lc.expected_sample_uniques(pi, f, n, k) == pytest.approx(6.0, rel=1e-6)


# -------------------------------------------------------------- 4. census, small files
def three_records():
    # 3 records, 2 cells: cell (0, 0) twice, cell (1, 1) once (a sample unique)
    return LatentClassModel(np.array([[0, 0], [1, 1]]), [2, 1], [2, 2], n_classes=2)


def test_cv_on_a_census_is_skipped_not_refused():
    m = three_records()
    idata = m.sample(draws=20, tune=5, chains=2, random_seed=1, N=3.0, overdispersion="cv")
    od = json.loads(idata.attrs["overdispersion"])
    assert od["method"] == "census"
    assert np.all(np.isinf(idata.posterior["kappa"].values))
    # a census: the one sample unique is a population unique in every draw
    assert np.all(idata.posterior["tau1_expected"].values == 1.0)
    assert np.all(idata.posterior["tau2_expected"].values == 1.0)
    assert np.all(idata.posterior_predictive["tau1"].values == 1.0)


def test_cv_on_a_small_sample_names_the_way_out():
    m = three_records()
    with pytest.raises(InputError, match="needs at least 4 records") as err:
        m.sample(draws=20, tune=5, chains=1, random_seed=1, N=10.0, overdispersion="cv")
    msg = str(err.value)
    assert "overdispersion=None" in msg and "fixed kappa" in msg
    # the ways out it names run
    for od in (None, 2.0):
        idata = m.sample(draws=20, tune=5, chains=1, random_seed=1, N=10.0, overdispersion=od)
        assert np.all(np.isfinite(idata.posterior["tau1_expected"].values))


def test_cv_with_weight_classes_above_one_is_not_a_census():
    # N = n but unequal weights: some classes stand for unsampled records (lambda > 0),
    # so kappa matters and the cross-validation is asked for (and refused at 3 records)
    m = LatentClassModel.from_frame(pd.DataFrame({"a": [0, 0, 1], "b": [0, 0, 1]}),
                                    ["a", "b"], weights=np.array([0.5, 0.5, 2.0]), n_classes=2)
    assert m.class_weights is not None and np.any(m.excess_rates(3.0) > 0)
    with pytest.raises(InputError, match="overdispersion=None"):
        m.sample(draws=5, tune=0, chains=1, random_seed=1, N=3.0, overdispersion="cv")
