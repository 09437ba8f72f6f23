"""The released file's posterior predictive ER: sdcbayes.risk.released.assess_released.

Per parameter draw one population: the observed cells' X (as assess_from_posterior draws
them), the patterns' top cells' X once and shared, each pattern's remainder from its
matched negative binomial; the ER draw sums m_p / F_p. Checked against an oracle that
draws EVERY cell of a small key space once per replicate from the same parameters and
sums 1/F over the records' rectangles exactly: at fixed parameters (the top cells cover
the patterns: the same law; a remainder: its documented approximation; Poisson draws),
the interval's coverage of truths drawn from the model's own parameters, the no-blank
file against assess_from_posterior seed for seed, and the seed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from released_reference import posterior_from_draws
from scipy import stats

import sdcbayes
from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import LatentClassModel
from sdcbayes.risk.posterior_assess import assess_from_posterior
from sdcbayes.risk.released import HYPER_INTERVAL_KIND, INTERVAL_KIND, assess_released

# hand-built posteriors (identical draws in places): their convergence is not the point
pytestmark = pytest.mark.filterwarnings(
    "ignore::sdcbayes.inference.diagnostics.ConvergenceWarning",
    "ignore::RuntimeWarning")

LEVELS = (3, 4, 5)  # 60 cells: the oracle lists every one
KEYS = ["k0", "k1", "k2"]


def _frame(n, seed, weight=8.0, levels=LEVELS):
    rng = np.random.default_rng(seed)
    # uneven key values: some cells large, some empty
    p = [rng.dirichlet(np.full(L, 1.5)) for L in levels]
    df = pd.DataFrame({f"k{j}": pd.Categorical(rng.choice(L, n, p=p[j]), categories=range(L))
                       for j, L in enumerate(levels)})
    df["w"] = weight
    return df


def _released(df):
    """Mixed blank sets: nested (k2; k1 and k2) and crossing (k0; k2) rectangles."""
    rel = df.copy()
    for cols, rows in ((["k2"], slice(0, 25)), (["k1", "k2"], slice(25, 40)),
                       (["k0"], slice(40, 60)), (["k0", "k1"], slice(60, 70))):
        for c in cols:
            rel[c] = rel[c].astype(object)
            rel.iloc[rows, rel.columns.get_loc(c)] = np.nan
    return rel


def _posterior(md, w, phi, kappa, *, chains=2):
    """A latent-class posterior with the draws w (S, H), phi (per key (S, H, L)), kappa."""
    spec = LatentClassModel.from_microdata(md, n_classes=w.shape[1])
    return posterior_from_draws(md, spec, w, phi, kappa, chains=chains)


def _theta(S, seed, H=3, same=False, levels=LEVELS):
    rng = np.random.default_rng(seed)
    w0 = rng.dirichlet(np.ones(H))
    phi0 = [rng.dirichlet(np.full(L, 0.8), H) for L in levels]
    if same:  # S identical draws: the parameters known
        return np.tile(w0, (S, 1)), [np.tile(p, (S, 1, 1)) for p in phi0]
    # draws around them (a posterior's spread)
    w = np.array([rng.dirichlet(60 * w0 + 0.5) for _ in range(S)])
    phi = [np.stack([np.stack([rng.dirichlet(60 * p[h] + 0.5) for h in range(H)])
                     for _ in range(S)]) for p in phi0]
    return w, phi


class _Oracle:
    """Every cell of the key space, drawn once per replicate: exact 1/F over rectangles."""

    def __init__(self, md, rel):
        self.spec = LatentClassModel.from_microdata(md, n_classes=2)
        self.cells = np.array(list(itertools.product(*[range(L) for L in LEVELS])), np.int64)
        look = {tuple(c): f for c, f in zip(self.spec.key_codes.tolist(),
                                            self.spec.key_counts, strict=True)}
        self.f = np.array([look.get(tuple(c), 0.0) for c in self.cells.tolist()])
        self.member, self.m = self._rectangles(md, rel)
        self.n, self.N = self.spec.n, float(md.weights.sum())

    def _rectangles(self, md, rel):
        """(patterns, cells) membership of each released pattern's rectangle, its records."""
        codes = np.column_stack([rel[k].map(lambda v: -1 if pd.isna(v) else int(v)).to_numpy()
                                 for k in KEYS]).astype(np.int64)
        pats, m = np.unique(codes, axis=0, return_counts=True)
        member = np.all([(pats[:, None, j] < 0) | (pats[:, None, j] == self.cells[None, :, j])
                         for j in range(len(KEYS))], axis=0).astype(float)
        return member, m

    def er(self, w, phi, kappa, R, rng):
        """R draws of the true ER given one parameter draw (w (H,), phi per key (H, L))."""
        pi = self.spec.key_cell_probabilities(w, phi, key_codes=self.cells)
        lam = (self.N - self.n) * pi
        if np.isinf(kappa):
            X = rng.poisson(lam, (R, lam.size))
        else:  # X_c | f_c ~ NegBin(kappa + f_c, b/(b + lam)), b = kappa + n pi
            b = kappa + self.n * pi
            X = rng.negative_binomial(kappa + self.f, b / (b + lam), (R, lam.size))
        F = (self.f + X) @ self.member.T  # (R, patterns)
        return (1.0 / F) @ self.m


def _nested(df):
    """Half the records blank on k2, 30% on k1 and k2: heavily shared (nested) cells."""
    rel = df.copy()
    for c in KEYS:
        rel[c] = rel[c].astype(object)
    a, b = len(df) // 2, len(df) * 8 // 10
    rel.iloc[:a, rel.columns.get_loc("k2")] = np.nan
    rel.iloc[a:b, [rel.columns.get_loc("k1"), rel.columns.get_loc("k2")]] = np.nan
    return rel


def _one(oracle, p):
    """The oracle of pattern p alone."""
    one = _Oracle.__new__(_Oracle)
    one.__dict__.update(oracle.__dict__, member=oracle.member[p:p + 1], m=oracle.m[p:p + 1])
    return one


@pytest.fixture(scope="module")
def case():
    df = _frame(150, 1)
    md = sdcbayes.Microdata(df, KEYS, weight="w")
    rel = _released(df)
    return df, md, rel, _Oracle(md, rel)


def _against_oracle(out, oracle, w, phi, kappa, sd_rtol, seed):
    pred = out.file_draws["expected_reidentifications"].values.ravel()
    true = oracle.er(w[0], [p[0] for p in phi], kappa, 20_000, np.random.default_rng(seed))
    se = np.sqrt(pred.var() / pred.size + true.var() / true.size)
    assert abs(pred.mean() - true.mean()) < 4 * se, (pred.mean(), true.mean(), se)
    assert pred.std() == pytest.approx(true.std(), rel=sd_rtol), (pred.std(), true.std())
    # the conditional mean (given theta: one value) is the predictive mean
    cm = out.file_draws["expected_reidentifications_conditional_mean"].values.ravel()
    assert np.ptp(cm) < 1e-9 * cm[0]
    assert abs(cm[0] - true.mean()) < 4 * true.std() / np.sqrt(true.size)
    # over the parameters only: no width at known parameters; the predictive has it
    lo, hi = out.summary["expected_reidentifications_hyper_interval"]
    plo, phi_ = out.summary["expected_reidentifications_interval"]
    assert hi - lo < 1e-9 * hi and phi_ - plo > 2 * true.std()
    return pred, true


def test_fixed_theta_covering_top_cells_is_the_oracle_law():
    """Top cells cover every pattern: the shared draw is the whole key space's law.

    Nested rectangles, strong overdispersion (kappa = 0.3): the cells the patterns share
    matter, drawing each pattern's population apart gives an SD about 12% low (asserted
    below). 4,000 predictive draws against 20,000 oracle populations: means within 4
    s.e., SDs within 6% (the SD's own s.e. about 1.5%), a two-sample KS test at 1e-3."""
    df = _frame(150, 1, weight=3.0)
    md = sdcbayes.Microdata(df, KEYS, weight="w")
    rel = _nested(df)
    oracle = _Oracle(md, rel)
    w, phi = _theta(4000, 2, same=True)
    idata = _posterior(md, w, phi, 0.3)
    out = assess_released(md, rel, idata, top_cells=64, random_seed=3)
    pred, true = _against_oracle(out, oracle, w, phi, 0.3, 0.06, 4)
    assert stats.ks_2samp(pred, true).pvalue > 1e-3
    # the tolerance tells sharing from not: each pattern drawn on its own population
    rng = np.random.default_rng(5)
    apart = sum(_Oracle.er(_one(oracle, p), w[0], [q[0] for q in phi], 0.3, 20_000, rng)
                for p in range(oracle.m.size))
    assert apart.std() < 0.92 * true.std()
    assert out.summary["interval_kind"] == INTERVAL_KIND
    assert out.summary["hyper_interval_kind"] == HYPER_INTERVAL_KIND


def test_fixed_theta_with_remainders_is_within_its_approximation(case):
    """Two top cells: nested rectangles' remainders are drawn independently (module
    docstring: SD(ER | theta) about 4% low at kappa = 1). SD within 10%, mean 4 s.e."""
    df, md, rel, oracle = case
    w, phi = _theta(4000, 2, same=True)
    idata = _posterior(md, w, phi, 1.0)
    out = assess_released(md, rel, idata, top_cells=2, random_seed=5)
    _against_oracle(out, oracle, w, phi, 1.0, 0.10, 6)


def test_fixed_theta_poisson_draws(case):
    """kappa = inf (no kappa in the posterior): each pattern's X is Po(lam_p) exactly;
    the oracle's law, but for nested remainders drawn apart (SD within 10%)."""
    df, md, rel, oracle = case
    w, phi = _theta(4000, 7, same=True)
    idata = _posterior(md, w, phi, None)
    out = assess_released(md, rel, idata, random_seed=8)
    _against_oracle(out, oracle, w, phi, np.inf, 0.10, 9)


def test_interval_covers_truths_drawn_from_the_models_own_parameters(case):
    """Calibration: truth = the ER of a population drawn from a posterior draw of the
    parameters (a draw of the posterior predictive). 400 truths; the 90% predictive
    interval must hold them at a rate a binomial test does not reject at 1% (here
    two-sided); the interval over the parameters only holds far fewer."""
    df, md, rel, oracle = case
    S = 2000
    w, phi = _theta(S, 11)
    kappa = np.exp(np.random.default_rng(12).normal(np.log(2.0), 0.4, S))
    idata = _posterior(md, w, phi, kappa)
    out = assess_released(md, rel, idata, random_seed=13)
    lo, hi = out.summary["expected_reidentifications_interval"]
    hlo, hhi = out.summary["expected_reidentifications_hyper_interval"]
    rng = np.random.default_rng(14)
    truths = np.array([oracle.er(w[s], [p[s] for p in phi], kappa[s], 1, rng)[0]
                       for s in rng.integers(0, S, 400)])
    inside = int(((truths >= lo) & (truths <= hi)).sum())
    assert stats.binomtest(inside, truths.size, 0.9).pvalue >= 0.01, inside
    inside_hyper = int(((truths >= hlo) & (truths <= hhi)).sum())
    assert stats.binomtest(inside_hyper, truths.size, 0.9, alternative="less").pvalue < 0.01


@pytest.mark.parametrize("kappa", [None, 0.7], ids=["poisson", "kappa"])
def test_no_blank_file_reproduces_assess_from_posterior_seed_for_seed(kappa):
    """The same population draws (the observed cells drawn as evaluate_poisson_cells draws
    them); the per-draw sums agree to rounding (about 1e-15: the cells are summed in the
    patterns' order and chunks, not necessarily the cell table's)."""
    df = _frame(200, 21)
    md = sdcbayes.Microdata(df, KEYS, weight="w")
    w, phi = _theta(60, 22)
    idata = _posterior(md, w, phi, kappa)
    rel = assess_released(md, df, idata, random_seed=23)
    ref = assess_from_posterior(md, idata, "latent-class", random_seed=23)
    a = rel.file_draws["expected_reidentifications"].values
    b = ref.file_draws["expected_reidentifications"].values
    np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    np.testing.assert_allclose(rel.summary["expected_reidentifications_interval"],
                               ref.summary["expected_reidentifications_interval"], rtol=1e-13)
    assert rel.summary["expected_reidentifications_blanked_records_interval"] == [0.0, 0.0]


def test_seed_repeats_the_draws_and_is_stamped(case):
    df, md, rel, _ = case
    w, phi = _theta(40, 31)
    idata = _posterior(md, w, phi, np.linspace(0.5, 20, 40))
    name = "expected_reidentifications"
    a = assess_released(md, rel, idata, random_seed=1)
    b = assess_released(md, rel, idata, random_seed=1)
    np.testing.assert_array_equal(a.file_draws[name].values, b.file_draws[name].values)
    assert a.provenance["settings"]["predictive_seed"] == 1
    # the draws do not depend on the batches or the draw chunks
    c = assess_released(md, rel, idata, random_seed=1, draw_chunk=3)
    for v in (name, f"{name}_blanked"):
        np.testing.assert_allclose(a.file_draws[v].values, c.file_draws[v].values, rtol=1e-12)
    # without a seed: another draw, and the stamped seed repeats it
    d = assess_released(md, rel, idata)
    e = assess_released(md, rel, idata)
    assert not np.array_equal(d.file_draws[name].values, e.file_draws[name].values)
    seed = d.provenance["settings"]["predictive_seed"]
    again = assess_released(md, rel, idata, random_seed=seed)
    np.testing.assert_array_equal(d.file_draws[name].values, again.file_draws[name].values)
    # the conditional means do not depend on the seed
    np.testing.assert_array_equal(a.file_draws[f"{name}_conditional_mean"].values,
                                  d.file_draws[f"{name}_conditional_mean"].values)
    # the blanked records' part is in the file's, below it
    assert np.all(a.file_draws[f"{name}_blanked"].values < a.file_draws[name].values)
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(InputError, match="random_seed"):
            assess_released(md, rel, idata, random_seed=bad)


WIDE = (9, 9, 9, 9, 9)  # 59,049 cells: far more distinct top cells than a batch holds


def _wide_case(n, seed=41, S=60, kappa=1.0):
    """n records, each with one or two random keys blanked: nearly one pattern each."""
    keys = [f"k{j}" for j in range(len(WIDE))]
    df = _frame(n, seed, levels=WIDE)
    md = sdcbayes.Microdata(df, keys, weight="w")
    w, phi = _theta(S, seed + 1, levels=WIDE)
    idata = _posterior(md, w, phi, kappa)
    rel = df.copy()
    rng = np.random.default_rng(seed + 2)
    for c in keys:
        rel[c] = rel[c].astype(object)
    for i in range(n):
        for j in rng.choice(len(keys), rng.integers(1, 3), replace=False):
            rel.iat[i, j] = np.nan
    return md, rel, idata, w, phi


def test_top_cells_drawn_from_their_keyed_streams(monkeypatch):
    """Each listed top cell's X is its own keyed stream's draw, whichever pattern, batch or
    draw chunk lists it: re-drawn here cell by cell (SeedSequence(seed, spawn_key=(1,
    *cell)), gamma then Poisson over all draws, the cell's pi and lambda from the
    parameters directly) and summed per pattern, against what the batches used."""
    from sdcbayes.risk import released

    md, rel, idata, w, phi = _wide_case(300, S=40, kappa=np.linspace(0.4, 5.0, 40))
    seen = []
    orig = released._Predictive.top_sum

    def spy(self, rect, tops, valid, params=None):
        xt = orig(self, rect, tops, valid, params)
        seen.append((tops.copy(), valid.copy(), xt.copy()))
        return xt

    monkeypatch.setattr(released._Predictive, "top_sum", spy)
    seed = 17
    assess_released(md, rel, idata, random_seed=seed, draw_chunk=7)
    kap = np.linspace(0.4, 5.0, 40)
    n, N = float(len(rel)), float(md.weights.sum())
    listed = {}
    n_listings = 0
    for tops, valid, xt in seen:
        for i in range(valid.shape[0]):
            ref = np.zeros(kap.size)
            for c in tops[i][valid[i]].tolist():
                prod = w.copy()  # (draws, classes)
                for j, p in enumerate(phi):
                    prod = prod * p[:, :, c[j]]
                pi_c = prod.sum(axis=1)
                lam_c = (N - n) * pi_c
                g = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1, *c)))
                x = g.poisson(g.standard_gamma(kap) * lam_c / (kap + n * pi_c))
                ref += x
                listed[tuple(c)] = listed.get(tuple(c), 0) + 1
                n_listings += 1
            np.testing.assert_array_equal(xt[i], ref)
    # the check saw shared cells (listed by several patterns) and many cells in all
    assert len(listed) > 500 and n_listings > len(listed)


def test_predictive_memory_does_not_grow_with_the_top_cells(monkeypatch):
    """The blanked part's traced peak on 4x the blanked patterns (243 and 915 patterns,
    about 4x the distinct top cells of a 59,049-cell key space), 200 draws, the batch
    budget held small (2^13 elements) so that both runs fill their batches. A store of
    draws x distinct top cells grows with them: 5.4 MB to 20.0 MB (3.7x) before it was
    dropped. What grows now is the per-pattern index arrays (codes, fixed levels, K,
    about 0.7 kB a pattern): 1.8 MB to 2.2 MB (1.26x). Bound 1.5x: above that, the
    draws of the top cells outlive their batch again."""
    import tracemalloc

    from sdcbayes.risk import released

    monkeypatch.setattr(released, "CHUNK_ELEMENTS", 1 << 13)
    orig = released._score_blanked
    peaks = []

    def traced(*args, **kwargs):
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            orig(*args, **kwargs)
            peaks.append(tracemalloc.get_traced_memory()[1] - base)
        finally:
            tracemalloc.stop()

    monkeypatch.setattr(released, "_score_blanked", traced)
    patterns = []
    for n in (250, 1000):
        md, rel, idata, _, _ = _wide_case(n, S=200)
        out = assess_released(md, rel, idata, random_seed=3)
        patterns.append(out.summary["n_blanked_patterns"])
    assert patterns[1] > 3.5 * patterns[0]
    assert peaks[1] < 1.5 * peaks[0], (peaks, patterns)


def test_spawn_states_are_the_seed_sequences():
    """The batched seeds of the keyed streams equal numpy's SeedSequence word for word
    (seeds of one to three 32-bit words, keys of several lengths, 0 and 2^32 - 1), and the
    streams built from them draw what default_rng(SeedSequence(...)) draws; a key word
    outside 32 bits falls back to SeedSequence itself."""
    from sdcbayes.risk.released import _Predictive, _spawn_states

    rng = np.random.default_rng(0)
    for seed in (0, 1, 2 ** 32 - 1, 2 ** 40 + 7, 12345678901234567890):
        for k in (2, 4, 9):
            keys = rng.integers(0, 40, (50, k))
            keys[0] = 2 ** 32 - 1
            keys[1] = 0
            ref = np.stack([np.random.SeedSequence(seed, spawn_key=tuple(r)).generate_state(
                4, np.uint64) for r in keys.tolist()])
            np.testing.assert_array_equal(_spawn_states(seed, keys), ref)
    pred = _Predictive(99, np.zeros((1, 1), np.int32), None, np.ones(3), 1.0)
    for key in ((1, 3, 0, 7), (2, 2 ** 33)):
        g = pred._streams([key])[0]
        r = np.random.default_rng(np.random.SeedSequence(99, spawn_key=key))
        np.testing.assert_array_equal(g.standard_gamma(np.full(20, 0.7)),
                                      r.standard_gamma(np.full(20, 0.7)))
        np.testing.assert_array_equal(g.poisson(np.full(20, 30.0)), r.poisson(np.full(20, 30.0)))
