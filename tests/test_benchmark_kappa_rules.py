"""benchmarks/kappa_rules.py: kappa rules scored offline from one Gibbs run per sample.

The offline rules are checked against the model's own route (overdispersion_cv's
weights for the rules it implements, the sampler's estimate for the default rule), the
weighted interval against plain quantiles, and the scoring against data built to have
a known bias and coverage.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark

from sdcbayes.models.latent_class import (
    KAPPA_GRID,
    KAPPA_PRIOR_LOG_UNIFORM,
    LatentClassModel,
    overdispersion_cv,
)


@pytest.fixture(scope="module")
def rules():
    return load_benchmark("kappa_rules.py")


def _sample(seed=0, J=4, L=6, H=3, n=600):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(H, 2.0))
    phi = [rng.dirichlet(np.full(L, 0.4), size=H) for _ in range(J)]
    cells = np.indices([L] * J).reshape(J, -1).T
    pi = sum(w[h] * np.prod([phi[j][h, cells[:, j]] for j in range(J)], axis=0)
             for h in range(H))
    pi = pi * rng.gamma(0.5, 2.0, size=pi.size)
    f = rng.multinomial(n, pi / pi.sum())
    keep = f > 0
    return LatentClassModel(cells[keep], f[keep], [L] * J, n_classes=8)


@pytest.fixture(scope="module")
def cv_model():
    return _sample()


def test_rules_reproduce_the_cross_validation(rules, cv_model):
    kw = {"random_seed": 3, "ratios": (4, 8), "em_restarts": 1}
    od = overdispersion_cv(cv_model, **kw)
    ll, ratios = np.asarray(od["partition_loglik"]), np.asarray(od["partition_ratios"])
    np.testing.assert_allclose(rules.rule_weights(ll, ratios, "default"), od["weights"])
    np.testing.assert_allclose(rules.rule_weights(ll, ratios, "default/t=1"), od["weights"])
    avg = overdispersion_cv(cv_model, combine_ratios="average", **kw)
    np.testing.assert_allclose(rules.rule_weights(ll, ratios, "default/average"),
                               avg["weights"])
    lu = overdispersion_cv(cv_model, prior=KAPPA_PRIOR_LOG_UNIFORM, **kw)
    np.testing.assert_allclose(rules.rule_weights(ll, ratios, "log-uniform"), lu["weights"])
    # a power below 1 flattens the likelihood: the posterior of log kappa widens
    # (the Poisson point excluded from the spread)

    def log_sd(w):
        g, p = np.log(KAPPA_GRID[:-1]), w[:-1] / w[:-1].sum()
        return float(np.sqrt(p @ (g - p @ g) ** 2))

    # a likelihood made sharp enough to be flattened visibly
    sharp = -0.5 * ((np.log(KAPPA_GRID) - 0.0) / 0.3) ** 2
    sharp = np.where(np.isinf(KAPPA_GRID), -50.0, sharp)
    ll2, r2 = np.stack([sharp, sharp]), np.array([4, 8])
    assert log_sd(rules.rule_weights(ll2, r2, "log-uniform/t=0.25")) == pytest.approx(
        2 * log_sd(rules.rule_weights(ll2, r2, "log-uniform")), rel=0.05)
    with pytest.raises(ValueError, match="modifier"):
        rules.rule_weights(ll, ratios, "default/sharpen")


def test_weighted_interval(rules):
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(3, 4000))
    draws[1] += 10.0
    # all weight on one row: that row's quantiles (to one order statistic)
    lo, hi = rules.weighted_interval(draws, np.array([0.0, 1.0, 0.0]))
    q = np.quantile(draws[1], [0.05, 0.95])
    step = np.diff(np.sort(draws[1])).max()
    assert abs(lo - q[0]) <= step and abs(hi - q[1]) <= step
    # equal weights: the quantiles of the pooled draws
    lo, hi = rules.weighted_interval(draws, np.full(3, 1 / 3))
    q = np.quantile(draws.ravel(), [0.05, 0.95])
    assert lo == pytest.approx(q[0], abs=0.05) and hi == pytest.approx(q[1], abs=0.05)


def test_evaluate_scores_bias_and_coverage(rules):
    # two designs of 40 samples, every kappa alike: the estimate is 1.1 x the truth
    # (bias +10%); the draws span truth x [0.9, 1.3] on the first design (always covered)
    # and truth x [1.2, 1.4] on the second (never)
    g, d = KAPPA_GRID.size, 400
    data = {k: [] for k in ("design", "replicate", "truth1", "truth2", "m1", "m2", "d1",
                            "d2", "loglik", "ratios")}
    for design, (a, b) in (("x", (0.9, 1.3)), ("y", (1.2, 1.4))):
        for r in range(40):
            truth = 100.0 + r
            data["design"].append(design)
            data["replicate"].append(r)
            data["truth1"].append(truth)
            data["truth2"].append(truth)
            for t in ("1", "2"):
                data["m" + t].append(np.full(g, 1.1 * truth))
                data["d" + t].append(np.tile(np.linspace(a, b, d) * truth, (g, 1)))
            data["loglik"].append(np.zeros((2, g)))
            data["ratios"].append(np.array([4, 8]))
    data = {k: np.asarray(v) for k, v in data.items()}
    summ = rules.evaluate(data, ["default"]).set_index("design")
    np.testing.assert_allclose(summ.bias1, 0.1)
    # RMSE over the mean truth: 0.1 x the root mean square truth over the mean truth
    t = np.arange(100.0, 140.0)
    np.testing.assert_allclose(summ.rmse2, 0.1 * np.sqrt(np.mean(t**2)) / t.mean())
    assert summ.at["x", "cover1"] == 1.0 and summ.at["y", "cover2"] == 0.0
    assert summ.at["x", "width1"] == pytest.approx(0.36, abs=0.005)  # 0.9 x 0.4
    assert not summ.calibrated.any()
    # 40/40 covered is not consistent with 90% (p = 0.9^40 x 2 sides < 0.05), nor 0/40
    assert summ.at["x", "cover1_p"] < 0.05 and not summ.consistent.any()
    # every error is the same multiple of its interval's implied sd: no spread
    assert summ.at["x", "z1_sd"] == pytest.approx(0.0, abs=1e-9)
    assert (summ.replicates == 40).all()


def test_record_sample_matches_the_sampler(rules, cv_model):
    N = 20 * cv_model.n
    rec = rules.record_sample(cv_model, N, seed=1, sim_seed=2)
    g = KAPPA_GRID.size
    assert rec["loglik"].shape == (2, g) and list(rec["ratios"]) == [4, 8]
    assert rec["d1"].shape == (g, rules.DRAWS * rules.CHAINS)
    w = rules.rule_weights(rec["loglik"], rec["ratios"], "default")
    np.testing.assert_allclose(w, rec["weights"])
    # the sampler draws kappa per kept draw from the same weights: its posterior mean
    # of tau1 is the w-average of the per-kappa means up to that draw's Monte Carlo
    # error (the sd of tau1_expected over the grid's spread, small here)
    est1, est2 = w @ rec["m1"], w @ rec["m2"]
    assert est1 == pytest.approx(rec["model"][0], rel=0.03)
    assert est2 == pytest.approx(rec["model"][3], rel=0.03)
    # per-kappa means: tau1 rises with kappa (clumped cells are less often unique), and
    # the simulated draws average to them
    assert np.all(np.diff(rec["m1"]) >= -1e-9)
    assert rec["d1"].mean(axis=1) == pytest.approx(rec["m1"], rel=0.05, abs=1.0)
    # Poisson end: at most every sample unique is population-unique
    su = int((cv_model.key_counts == 1).sum())
    assert 0 < rec["m1"][-1] <= su


def test_reread_applies_the_new_kappa_to_the_recorded_draws(rules, cv_model):
    N = 20 * cv_model.n
    rec = rules.record_sample(cv_model, N, seed=1, sim_seed=2)
    data = {"design": np.array(["x"]), "replicate": np.array([0]),
            "truth1": np.array([40.0]), "truth2": np.array([60.0]),
            **{k: rec[k][None] for k in ("m1", "m2", "d1", "d2")}}
    # EM parts again: the recorded cross-validation, so the default rule's row
    em = rules.reread_sample(cv_model, N, 1, data, 0, "em")
    w = rules.rule_weights(rec["loglik"], rec["ratios"], "default")
    assert em["rule"] == "default/em-parts" and em["truth2"] == 60.0
    assert em["est1"] == pytest.approx(float(w @ rec["m1"]))
    assert (em["lo2"], em["hi2"]) == rules.weighted_interval(rec["d2"], w)
    # Gibbs parts: the weights of overdispersion_cv(predictive="gibbs") with the same
    # partitions, applied to the same per-kappa means
    gib = rules.reread_sample(cv_model, N, 1, data, 0, "gibbs")
    od = overdispersion_cv(cv_model, random_seed=1, em_restarts=max(1, rules.EM_RESTARTS - 1),
                           max_ratio=20.0, predictive="gibbs")
    assert gib["rule"] == "default/gibbs-parts"
    assert gib["est1"] == pytest.approx(float(np.asarray(od["weights"]) @ rec["m1"]))
    assert not np.allclose(od["partition_loglik"], rec["loglik"])
    # the command refuses to run without the file its rows go to, before reading anything
    with pytest.raises(SystemExit):
        rules.main(["--reread", "absent.npz"])
    # two partitions per ratio: the rule mixes all four (the weights of overdispersion_cv
    # with n_splits=2), and each split's read is that of its own quarters and eighths
    reads = []
    two = rules.reread_sample(cv_model, N, 1, data, 0, "em", n_splits=2, split_reads=reads)
    od2 = overdispersion_cv(cv_model, random_seed=1, em_restarts=max(1, rules.EM_RESTARTS - 1),
                            max_ratio=20.0, n_splits=2)
    assert two["rule"] == "default/em-parts/splits=2"
    assert two["est1"] == pytest.approx(float(np.asarray(od2["weights"]) @ rec["m1"]))
    ll2, r2 = np.asarray(od2["partition_loglik"]), np.asarray(od2["partition_ratios"])
    assert list(r2) == [4, 4, 8, 8]
    assert [(r["split"], r["replicate"]) for r in reads] == [(0, 0), (1, 0)]
    for s, take in enumerate(([0, 2], [1, 3])):
        w = rules.rule_weights(ll2[take], r2[take], "default")
        assert reads[s]["cv_median"] == rules.kappa_quantiles(KAPPA_GRID, w, (0.5,))[0]
    with pytest.raises(SystemExit):
        rules.main(["--reread", "absent.npz", "--per-sample", "x.csv", "--cv-splits", "0"])


def test_split_spread_separates_partition_and_sample_scatter(rules):
    # three samples, two splits: each sample's reads differ by 1 (within-sample variance
    # 0.5), each split's reads over the samples are 0, 2, 4 (sd 2); a sample whose read is
    # the Poisson point (inf) is left out
    reads = pd.DataFrame({"design": "x", "replicate": [0, 0, 1, 1, 2, 2, 3, 3],
                          "split": [0, 1] * 4,
                          "cv_median": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 1.0, np.inf]})
    out = rules.split_spread(reads).iloc[0]
    assert (out.samples, out.splits) == (3, 2)
    assert out.within_sd == pytest.approx(np.sqrt(0.5))
    assert out.between_sd == pytest.approx(2.0)
    assert out.mean_read_sd == pytest.approx(2.0)
    assert out.read_mean == pytest.approx(2.5)


def test_record_sample_passes_the_cv_parts(rules):
    # a sample with two weight classes: the record's log-likelihoods are those of the
    # cross-validation with weighted parts, which differ from random parts'
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({k: rng.choice(list("abcdefgh"[:L]), 500) for k, L in
                          (("x", 8), ("y", 5), ("z", 3))})
    w = np.where(frame.x.isin(["a", "b"]), 5.0, 40.0)
    model = LatentClassModel.from_frame(frame, ["x", "y", "z"], n_classes=4, weights=w)
    N = float(w.sum())
    rec = rules.record_sample(model, N, seed=1, sim_seed=2, cv_parts="weights")
    kw = {"random_seed": 1, "em_restarts": max(1, rules.EM_RESTARTS - 1),
          "max_ratio": N / model.n}
    weighted = overdispersion_cv(model, parts="weights", **kw)
    assert weighted["parts"] == "weights"
    np.testing.assert_allclose(rec["loglik"], weighted["partition_loglik"])
    assert not np.allclose(rec["loglik"], overdispersion_cv(model, **kw)["partition_loglik"])


def test_per_sample_table_round_trips(rules, tmp_path):
    # records of two samples with a known answer: the default rule's estimate is the
    # constant per-kappa mean; the stored model estimate comes back as the rule "model"
    g, d = KAPPA_GRID.size, 200
    data = {"design": np.array(["x", "x"]), "replicate": np.array([0, 1]),
            "truth1": np.array([50.0, 60.0]), "truth2": np.array([70.0, 80.0]),
            "m1": np.full((2, g), 55.0), "m2": np.full((2, g), 75.0),
            "d1": np.tile(np.linspace(40, 70, d), (2, g, 1)),
            "d2": np.tile(np.linspace(60, 90, d), (2, g, 1)),
            "loglik": np.zeros((2, 2, g)), "ratios": np.tile([4, 8], (2, 1)),
            "model": np.array([[54.0, 41.0, 69.0, 74.0, 61.0, 89.0]] * 2)}
    per = rules.score_samples(data, ["default"], model=True)
    assert list(per.rule) == ["model", "model", "default", "default"]
    np.testing.assert_allclose(per.iloc[:2][["est1", "lo1", "hi1", "est2", "lo2", "hi2"]],
                               data["model"])
    np.testing.assert_allclose(per.iloc[2:].est1, 55.0)
    np.testing.assert_allclose(per.iloc[2:].truth2, [70.0, 80.0])
    npz, table = tmp_path / "r.npz", tmp_path / "per.csv"
    s1, s2 = tmp_path / "s1.csv", tmp_path / "s2.csv"
    np.savez(npz, **data)
    assert rules.main(["--evaluate", str(npz), "--rules", "default", "--per-sample",
                       str(table), "--csv", str(s1)]) == 0
    # the stored table re-scores to the same summary, without the records
    assert rules.main(["--evaluate", str(table), "--csv", str(s2)]) == 0
    a, b = pd.read_csv(s1), pd.read_csv(s2)
    assert list(a.rule) == ["model", "default"]
    pd.testing.assert_frame_equal(a, b, rtol=1e-5)
    # ratios of means: the mean error over the mean truth
    np.testing.assert_allclose(a.bias1, [(54 - 55) / 55, 0.0], atol=1e-12)
    np.testing.assert_allclose(a.rmse2, [np.sqrt((4**2 + 6**2) / 2) / 75,
                                         np.sqrt((5**2 + 5**2) / 2) / 75])
    # a rule filter on a stored table keeps only that rule
    assert rules.main(["--evaluate", str(table), "--rules", "model", "--csv", str(s2)]) == 0
    assert list(pd.read_csv(s2).rule) == ["model"]
    # the kappa reads need the records: refused on a stored table, before writing anything
    with pytest.raises(SystemExit):
        rules.main(["--evaluate", str(table), "--kappa-csv", str(tmp_path / "k.csv")])
    assert not (tmp_path / "k.csv").exists()


def linear_means():
    """The finite grid points, their log kappa, and a conditional mean of tau1 linear in
    log kappa over them (100 + 10 log kappa; 1 above the largest at the Poisson point)."""
    finite = np.isfinite(KAPPA_GRID)
    logk = np.log(KAPPA_GRID[finite])
    m1 = np.full(KAPPA_GRID.size, np.nan)
    m1[finite] = 100.0 + 10.0 * logk
    m1[~finite] = m1[finite].max() + 1.0
    return finite, logk, m1


def test_kappa_reads_finds_the_oracle_and_the_median(rules):
    # tau1's conditional mean linear in log kappa over the finite grid; the truth placed at
    # log kappa = 0.3 (between grid points) is read back by interpolation; a likelihood
    # peaked at one grid point puts the posterior median there
    finite, logk, m1 = linear_means()
    peak = np.full(KAPPA_GRID.size, -50.0)
    j = int(np.argmin(np.abs(KAPPA_GRID - 2.0)))
    peak[j] = 0.0
    data = {"design": np.array(["x", "x", "x"]), "replicate": np.array([0, 1, 2]),
            "truth1": np.array([103.0, 50.0, 1e6]), "m1": np.tile(m1, (3, 1)),
            "loglik": np.tile(peak, (3, 2, 1)), "ratios": np.tile([4, 8], (3, 1))}
    reads = rules.kappa_reads(data, "log-uniform")
    assert reads.oracle[0] == pytest.approx(0.3, abs=1e-6)
    assert list(reads.censored) == [0, -1, 1]
    assert reads.oracle[1] == pytest.approx(logk[0]) and reads.oracle[2] == pytest.approx(logk[-1])
    np.testing.assert_allclose(reads.cv_median, np.log(KAPPA_GRID[j]))
    np.testing.assert_allclose(reads.cv_q05, reads.cv_median)
    np.testing.assert_allclose(reads.cv_q95, reads.cv_median)
    assert "noise" not in reads
    # a likelihood flat over two grid points (the prior flat in log kappa): the 90% range
    # runs from the lower point to the upper, the median is the lower
    two = np.full(KAPPA_GRID.size, -50.0)
    two[[j, j + 3]] = 0.0
    spread = rules.kappa_reads({**data, "loglik": np.tile(two, (3, 2, 1))}, "log-uniform")
    np.testing.assert_allclose(spread.cv_q05, np.log(KAPPA_GRID[j]))
    np.testing.assert_allclose(spread.cv_median, np.log(KAPPA_GRID[j]))
    np.testing.assert_allclose(spread.cv_q95, np.log(KAPPA_GRID[j + 3]))
    # with the per-kappa draws: their sd (2.5) over the slope (10 per unit of log kappa)
    d1 = m1[:, None] + np.tile([-2.5, 2.5], (KAPPA_GRID.size, 20))
    reads = rules.kappa_reads({**data, "d1": np.tile(d1, (3, 1, 1))}, "log-uniform")
    assert reads.noise[0] == pytest.approx(0.25)
    assert np.isnan(reads.noise[1]) and np.isnan(reads.noise[2])  # censored oracles


def test_per_sample_table_runs_every_sample_the_arguments_pick(rules, monkeypatch, tmp_path):
    seen = []

    def fake_samples(populations, fractions, kind, replicates, seed):
        seen.append((populations, fractions, kind, replicates, seed))
        for r in range(replicates):
            yield "toy/srs/1%", r, None, 100.0, None

    monkeypatch.setattr(rules, "samples", fake_samples)
    ap = rules.sample_parser("d", populations="a,b", replicates=3)
    args = ap.parse_args(["--fractions", "0.05,0.1", "--kind", "stratified", "--seed", "4"])
    args.csv = str(tmp_path / "t.csv")
    per = rules.per_sample_table(
        args, lambda label, r, model, N, truth, seed: [{"design": label, "r": r, "s": seed}] * 2)
    assert seen == [("a,b", [0.05, 0.1], "stratified", 3, 4)]
    assert len(per) == 6 and list(per.r) == [0, 0, 1, 1, 2, 2] and (per.s == 4).all()
    pd.testing.assert_frame_equal(pd.read_csv(args.csv), per)
    args.replicates = 0  # no sample drawn: no table
    assert rules.per_sample_table(args, lambda *a: [{}]) is None


def test_design_oracle_rules_put_kappa_at_the_designs_mean_oracle(rules):
    # conditional means linear in log kappa: 100 + 10 log kappa (tau1), 200 + 20 log kappa
    # (tau2); design x's uncensored oracles 0.3 and 0.5 (mean 0.4), a third censored sample
    # is left out; design y's one oracle -1.0
    finite, logk, m1 = linear_means()
    m2 = 2.0 * m1
    draws = np.tile(np.linspace(-1.0, 1.0, 8), (KAPPA_GRID.size, 1))
    data = {"design": np.array(["x", "x", "x", "y"]), "replicate": np.arange(4),
            "truth1": np.array([103.0, 105.0, 1e6, 90.0]),
            "truth2": np.array([206.0, 210.0, 1e6, 180.0]),
            "m1": np.tile(m1, (4, 1)), "m2": np.tile(m2, (4, 1)),
            "d1": m1[None, :, None] + draws[None], "d2": m2[None, :, None] + draws[None],
            "loglik": np.zeros((4, 2, KAPPA_GRID.size)), "ratios": np.tile([4, 8], (4, 1))}
    data["d1"] = np.repeat(data["d1"], 4, axis=0)
    data["d2"] = np.repeat(data["d2"], 4, axis=0)
    w = rules.design_oracle_weights(data, "1")
    for i, x in enumerate([0.4, 0.4, 0.4, -1.0]):
        assert w[i].sum() == pytest.approx(1.0) and np.count_nonzero(w[i]) <= 2
        assert w[i][finite] @ logk == pytest.approx(x)  # linear between the grid points
    per = rules.score_samples(data, ["design-oracle1", "design-oracle2"])
    one = per[per.rule == "design-oracle1"]
    np.testing.assert_allclose(one.est1, [104.0, 104.0, 104.0, 90.0])
    np.testing.assert_allclose(per[per.rule == "design-oracle2"].est2, [208.0] * 3 + [180.0])
    bad = {**data, "truth1": np.array([103.0, 105.0, 1e6, 1e6])}
    with pytest.raises(ValueError, match="censored"):
        rules.design_oracle_weights(bad, "1")
