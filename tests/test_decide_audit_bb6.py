"""Audit BB6 (decision theory) and BB1 finding 3: `decide`'s weights, memory, outputs.

- F1: ``--weight`` is a multiplicity, so a collapsed table with weights gives the fit,
  risks and decisions of the expanded table on the routes that estimate (alpha, beta)
  (ml: compared outright; posterior: the model's log density compared, not MCMC output).
- F2: ``uniques-proportions`` memory does not grow with the number of shares.
- F3: a ``--domain`` column named like an output column is refused up front.
- F4: ``threshold:Ymin<=0`` and alternatives with a nonpublication loss on the disclosure
  side are refused; a disclosure loss that is 0 everywhere is warned about.
- F5: summary.json ``hyperparameters`` has one shape on every route.
- BB1 F3: the posterior route stamps the priors it used.
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes.exceptions import InputError
from sdcbayes.models.beta_binomial import BetaBinomialDomainModel, data_fingerprint
from sdcbayes.risk.beta_binomial import fit_beta_binomial
from sdcbayes.risk.decisions import decide
from sdcbayes.risk.losses import parse_loss, threshold_loss, uniques_proportions_loss

# The audit's table: 7 distinct domains standing for 77 (multiplicities w).
COLLAPSED = pd.DataFrame({
    "area": [f"A{i}" for i in range(7)],
    "y": [0, 1, 2, 5, 1, 0, 3],
    "n": [10, 10, 10, 12, 20, 20, 15],
    "N": [200, 200, 200, 240, 400, 400, 300],
    "w": [30, 12, 4, 1, 8, 20, 2],
})
EXPANDED = COLLAPSED.loc[COLLAPSED.index.repeat(COLLAPSED["w"])].drop(columns="w")
EXPANDED = EXPANDED.assign(area=[f"E{i}" for i in range(len(EXPANDED))]).reset_index(drop=True)
ROW = np.repeat(np.arange(len(COLLAPSED)), COLLAPSED["w"])  # expanded row -> collapsed row
HYPER_KEYS = {"source", "alpha", "beta", "mean", "concentration", "n_draws", "n_draws_used",
              "at_bound"}


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    d = tmp_path_factory.mktemp("bb6")
    COLLAPSED.to_csv(d / "collapsed.csv", index=False)
    EXPANDED.to_csv(d / "expanded.csv", index=False)
    return d


def _decide_cli(capsys, tmp_path, csv, out, *extra):
    proc = run_in_process(capsys, "decide", str(csv), "--y", "y", "--n", "n", "--N", "N",
                          "--out", str(tmp_path / out), "-q", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads((tmp_path / out / "summary.json").read_text()), proc


# --- F1: weights are multiplicities when (alpha, beta) are estimated -------------------


@pytest.mark.parametrize("method", ["ml", "moments"])
def test_fit_with_multiplicities_equals_fit_of_expanded_table(method):
    c = fit_beta_binomial(COLLAPSED["y"], COLLAPSED["n"], method, weights=COLLAPSED["w"])
    e = fit_beta_binomial(EXPANDED["y"], EXPANDED["n"], method)
    for k in ("alpha", "beta", "mean", "concentration", "loglik"):
        assert getattr(c, k) == pytest.approx(getattr(e, k), rel=1e-9), k
    assert c.n_domains == e.n_domains == 77
    if method == "ml":  # before the fix the weights were ignored: alpha 1.122, beta 7.303
        assert e.alpha == pytest.approx(0.7045, abs=1e-4)
        assert e.beta == pytest.approx(17.22, abs=1e-2)


def test_unit_weights_change_nothing():
    rng = np.random.default_rng(3)
    n = rng.integers(5, 30, 40)
    y = rng.binomial(n, rng.beta(2, 9, 40))
    for method in ("ml", "moments"):
        assert fit_beta_binomial(y, n, method, weights=np.ones(40)) == fit_beta_binomial(
            y, n, method)


def test_python_decide_collapsed_equals_expanded():
    c = decide(COLLAPSED["y"], COLLAPSED["n"], COLLAPSED["N"], weights=COLLAPSED["w"],
               alternatives=["uniques-equal:S=1/y"])
    e = decide(EXPANDED["y"], EXPANDED["n"], EXPANDED["N"], alternatives=["uniques-equal:S=1/y"])
    for k in ("R1", "R0"):
        np.testing.assert_allclose(c.table[k].to_numpy()[ROW], e.table[k], rtol=1e-9)
    np.testing.assert_array_equal(c.table["publish"].to_numpy()[ROW], e.table["publish"])
    assert c.c == pytest.approx(e.c, rel=1e-9)
    sc, se = c.summary(), e.summary()
    for k, v in se["totals"].items():
        assert sc["totals"][k] == pytest.approx(v, rel=1e-9, abs=1e-12), k
    for k in ("reference", "random_suppression"):
        assert sc["suppression_at_target"][k] == pytest.approx(
            se["suppression_at_target"][k], rel=1e-9)
    for k in ("alpha", "beta", "mean", "concentration"):
        assert c.hyperparameters[k]["mean"] == pytest.approx(
            e.hyperparameters[k]["mean"], rel=1e-9)


def test_cli_ml_collapsed_with_weight_equals_expanded(capsys, tmp_path, tables):
    sc, _ = _decide_cli(capsys, tmp_path, tables / "collapsed.csv", "c", "--weight", "w",
                        "--domain", "area", "--hyperparameters", "ml")
    se, _ = _decide_cli(capsys, tmp_path, tables / "expanded.csv", "e", "--domain", "area",
                        "--hyperparameters", "ml")
    # audit table, expanded: alpha 0.7045, beta 17.22, c 0.2054, 56.3% (collapsed gave
    # 1.122, 7.303, 0.1522, 51.0% before the fix)
    for k in ("alpha", "beta", "mean", "concentration"):
        assert sc["hyperparameters"][k]["mean"] == pytest.approx(
            se["hyperparameters"][k]["mean"], rel=1e-9), k
    assert sc["c"] == pytest.approx(se["c"], rel=1e-9) and se["c"] == pytest.approx(0.2054,
                                                                                      abs=1e-4)
    assert sc["suppression_at_target"]["reference"] == pytest.approx(
        se["suppression_at_target"]["reference"], rel=1e-9)
    for k, v in se["totals"].items():
        assert sc["totals"][k] == pytest.approx(v, rel=1e-9, abs=1e-12), k
    dc = pd.read_csv(tmp_path / "c" / "decisions.csv")
    de = pd.read_csv(tmp_path / "e" / "decisions.csv")
    np.testing.assert_allclose(dc["R1"].to_numpy()[ROW], de["R1"], rtol=1e-9)
    np.testing.assert_array_equal(dc["publish"].to_numpy()[ROW], de["publish"])
    # the domain (y=5, n=12, N=240): R1 0.1178 expanded, 0.0253 with the weights ignored
    assert dc.loc[dc["area"] == "A3", "R1"].item() == pytest.approx(0.1178, abs=1e-4)


def test_ml_check_counts_multiplicities(capsys, tmp_path):
    # one sampled row of weight 5 is 5 domains (as its expansion): the ML fit runs
    path = tmp_path / "one.csv"
    pd.DataFrame({"y": [2, 3, 0], "n": [10, 10, 0], "N": [50, 60, 10],
                  "w": [5, 0, 1]}).to_csv(path, index=False)
    s, _ = _decide_cli(capsys, tmp_path, path, "o", "--weight", "w", "--hyperparameters", "ml")
    assert s["hyperparameters"]["at_bound"] is True  # 5 identical domains: no spread


@pytest.mark.parametrize("parameterisation, points", [
    ("mean-concentration", [{"mean_logodds__": -2.0, "concentration_log__": 1.0},
                            {"mean_logodds__": -3.2, "concentration_log__": 3.5},
                            {"mean_logodds__": 0.4, "concentration_log__": -1.0}]),
    ("alpha-beta", [{"alpha_log__": -0.3, "beta_log__": 2.8},
                    {"alpha_log__": 1.2, "beta_log__": 0.1}]),
])
def test_weighted_model_logp_equals_expanded_model(parameterisation, points):
    weighted = BetaBinomialDomainModel(COLLAPSED["y"], COLLAPSED["n"], COLLAPSED["N"],
                                       weights=COLLAPSED["w"], parameterisation=parameterisation)
    expanded = BetaBinomialDomainModel(EXPANDED["y"], EXPANDED["n"], EXPANDED["N"],
                                       parameterisation=parameterisation)
    unweighted = BetaBinomialDomainModel(COLLAPSED["y"], COLLAPSED["n"], COLLAPSED["N"],
                                         parameterisation=parameterisation)
    np.testing.assert_array_equal(weighted.pair_count, expanded.pair_count)
    np.testing.assert_array_equal(weighted.pair_count, COLLAPSED["w"])
    lw, le, lu = (m.build().compile_logp() for m in (weighted, expanded, unweighted))
    for point in points:
        assert float(lw(point)) == pytest.approx(float(le(point)), rel=1e-12, abs=1e-9)
        assert abs(float(lw(point)) - float(lu(point))) > 1.0  # the weights matter
    # LOO's unit: one domain of each multiplicity (pair_count is the LOO weight)
    assert weighted.loglik_weight_var == "pair_count"
    assert weighted.pair_count.sum() == len(EXPANDED)


def test_weighted_model_stamps_and_checks():
    plain = BetaBinomialDomainModel(COLLAPSED["y"], COLLAPSED["n"], COLLAPSED["N"])
    # unweighted input: the data stamp is as before
    assert "total_weight" not in plain.data_summary()
    assert plain.data_summary()["data_fingerprint"] == data_fingerprint(
        plain.y, plain.n, plain.N, np.zeros((0, 0)))
    w = BetaBinomialDomainModel(COLLAPSED["y"], COLLAPSED["n"], COLLAPSED["N"],
                                weights=COLLAPSED["w"])
    assert w.data_summary()["total_weight"] == 77
    assert w.data_summary()["data_fingerprint"] != plain.data_summary()["data_fingerprint"]
    # a zero-weight row stays a domain (one entry per row) and adds nothing to its pair
    z = BetaBinomialDomainModel([1, 1, 2], [5, 5, 5], [9, 9, 9], weights=[0, 3, 1])
    np.testing.assert_array_equal(z.pair_count, [3, 1])
    with pytest.raises(InputError, match="whole numbers"):
        BetaBinomialDomainModel([1, 2], [5, 5], [9, 9], weights=[0.5, 1])
    with pytest.raises(InputError, match="one value per domain"):
        BetaBinomialDomainModel([1, 2], [5, 5], [9, 9], weights=[1, 1, 1])
    with pytest.raises(InputError, match="weight 0"):
        BetaBinomialDomainModel([1, 0], [5, 0], [9, 9], weights=[0, 4])
    with pytest.raises(InputError, match="covariates"):
        BetaBinomialDomainModel([1, 2], [5, 5], [9, 9], weights=[1, 2], covariates=[0.1, 0.2])


def test_fractional_weights_refused_when_estimating(capsys, tmp_path, tables):
    path = tmp_path / "frac.csv"
    COLLAPSED.assign(w=COLLAPSED["w"] / 77).to_csv(path, index=False)
    for route in (["--hyperparameters", "ml"], []):
        proc = run_in_process(capsys, "decide", str(path), "--y", "y", "--n", "n", "--N", "N",
                              "--weight", "w", *route, "--out", str(tmp_path / "x"))
        assert_one_line_error(proc, "--weight column 'w'", "whole number", "--alpha")
        assert not (tmp_path / "x").exists()
    # configuration probabilities with fixed (alpha, beta): seed 003's Table 2, accepted
    _decide_cli(capsys, tmp_path, path, "fixed", "--weight", "w", "--alpha", "1",
                "--beta", "10")
    with pytest.raises(InputError, match="multiplicity"):
        decide(COLLAPSED["y"], COLLAPSED["n"], COLLAPSED["N"], weights=COLLAPSED["w"] / 77)


# --- F2: uniques-proportions memory is bounded ------------------------------------------


def test_uniques_proportions_values_unchanged():
    rng = np.random.default_rng(1)
    Y = rng.integers(0, 500, (300, 40)).astype(float)
    y = rng.integers(0, 5, (300, 1)).astype(float)
    for S in (3, 40, 150, 5000):  # 5000 shares: several chunks of shares
        p = rng.random(S)
        p /= p.sum()
        loss = uniques_proportions_loss(p)
        pp = np.asarray(loss.params["pi"])
        got = loss(y, Y, 10.0, 100.0)
        ref = y * np.sum(pp * np.exp(-Y[..., None] * pp), axis=-1)
        if Y.size * S <= 1 << 20:  # one chunk: the trailing-axis sum itself, bit for bit
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=0)


def test_uniques_proportions_memory_does_not_grow_with_shares():
    Y = np.arange(1 << 18, dtype=float).reshape(512, 512) % 700
    p = np.full(200, 1 / 200)
    loss = uniques_proportions_loss(p)
    tracemalloc.start()
    try:
        loss(np.ones((512, 1)), Y, 10.0, 100.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # (512 x 512 x 200) float64 would be 400 MiB; chunks of 2^20 elements are 8 MiB each
    assert peak < 48 * 2**20, peak / 2**20
    # equal shares are uniques-equal:S (seed 003, eq. 1 -> eq. 2)
    eq = parse_loss("uniques-equal:S=200")(np.ones((512, 1)), Y, 10.0, 100.0)
    np.testing.assert_allclose(loss(np.ones((512, 1)), Y, 10.0, 100.0), eq, rtol=1e-12)


def test_decide_uniques_proportions_equal_shares_match_uniques_equal():
    rng = np.random.default_rng(0)
    n = rng.integers(5, 40, 40)
    N, y = n * 200, rng.binomial(n, 0.1)
    S = 150
    pi = "/".join(["%.17g" % (1.0 / S)] * S)
    r = decide(y, n, N, alpha=1.0, beta=10.0, disclosure_loss=f"uniques-proportions:pi={pi}")
    r2 = decide(y, n, N, alpha=1.0, beta=10.0, disclosure_loss=f"uniques-equal:S={S}")
    np.testing.assert_allclose(r.table["R1"], r2.table["R1"], rtol=1e-10)


# --- F3: --domain named like an output column ------------------------------------------


@pytest.mark.parametrize(("name", "where"), [
    ("order", "decisions.csv"), ("ratio", "decisions.csv"), ("R1", "decisions.csv"),
    ("step", "frontier.csv"), ("position", "frontier.csv"), ("disclosure", "frontier.csv"),
])
def test_domain_column_named_like_an_output_column_is_refused(capsys, tmp_path, name, where):
    path = tmp_path / "d.csv"
    COLLAPSED.rename(columns={"area": name}).to_csv(path, index=False)
    proc = run_in_process(capsys, "decide", str(path), "--y", "y", "--n", "n", "--N", "N",
                          "--domain", name, "--alpha", "1", "--beta", "10",
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, f"--domain column {name!r}", where, f"'{name}_label'",
                          "leave out --domain")
    assert not (tmp_path / "o").exists()


def test_domain_column_named_domain_is_kept(capsys, tmp_path):
    path = tmp_path / "d.csv"
    COLLAPSED.rename(columns={"area": "domain"}).to_csv(path, index=False)
    _decide_cli(capsys, tmp_path, path, "o", "--domain", "domain", "--alpha", "1",
                "--beta", "10")
    dec = pd.read_csv(tmp_path / "o" / "decisions.csv")
    assert dec["domain"].tolist() == COLLAPSED["area"].tolist()


# --- F4: degenerate losses --------------------------------------------------------------


@pytest.mark.parametrize("ymin", [0, -5, -0.5])
def test_threshold_at_or_below_zero_is_refused(ymin):
    with pytest.raises(InputError, match="Ymin must be positive"):
        threshold_loss(ymin)
    with pytest.raises(InputError, match="threshold:Ymin=5"):
        parse_loss(f"threshold:Ymin={ymin}")
    assert threshold_loss(0.5)(0, 0, 5, 9) == 1.0  # a positive Ymin below 1: Y = 0 only


@pytest.mark.parametrize(("spec", "bad"), [("y/y", "'y'"), ("Y/constant", "'Y'"),
                                           ("constant/y", "'constant'"), ("N/n", "'N'")])
def test_alternative_with_nonpublication_disclosure_side_is_refused(capsys, tmp_path,
                                                                    tables, spec, bad):
    proc = run_in_process(capsys, "decide", str(tables / "collapsed.csv"), "--y", "y",
                          "--n", "n", "--N", "N", "--alternative", spec, "--alpha", "1",
                          "--beta", "10", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, f"--alternative {spec!r}", bad, "nonpublication loss",
                          "uniques-equal:S=1/y")
    assert not (tmp_path / "o").exists()


def test_cli_threshold_zero_refused_and_zero_disclosure_warned(capsys, tmp_path, tables):
    proc = run_in_process(capsys, "decide", str(tables / "collapsed.csv"), "--y", "y",
                          "--n", "n", "--N", "N", "--disclosure-loss", "threshold:Ymin=0",
                          "--alpha", "1", "--beta", "10", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "Ymin must be positive")
    # every domain has y >= 1, so Y >= 1 and I(Y < 1) = 0 everywhere: all published
    path = tmp_path / "pos.csv"
    COLLAPSED.assign(y=COLLAPSED["y"] + 1).to_csv(path, index=False)
    s, proc = _decide_cli(capsys, tmp_path, path, "z", "--disclosure-loss", "threshold:Ymin=1",
                          "--alpha", "1", "--beta", "10")
    assert s["totals"]["disclosure_if_all_published"] == 0.0
    assert s["n_published"] == len(COLLAPSED)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "is 0 for every domain" in lines[0], proc.stderr
    assert s["warnings"] == [lines[0].removeprefix("sdcbayes: warning: ")]


# --- F5 and BB1 F3: one hyperparameters shape; priors stamped ---------------------------


def _check_shape(h, source, interval: bool, n_draws):
    assert set(h) == HYPER_KEYS, set(h) ^ HYPER_KEYS
    assert h["source"] == source
    for k in ("alpha", "beta", "mean", "concentration"):
        assert set(h[k]) == {"mean", "interval_90"}, h[k]
        assert isinstance(h[k]["mean"], float)
        if interval:
            lo, hi = h[k]["interval_90"]
            assert lo <= h[k]["mean"] <= hi
        else:
            assert h[k]["interval_90"] is None
    assert h["n_draws"] == n_draws and h["n_draws_used"] == (n_draws and min(n_draws, 8))


def test_hyperparameters_shape_fixed_and_ml(capsys, tmp_path, tables):
    s, _ = _decide_cli(capsys, tmp_path, tables / "collapsed.csv", "f", "--alpha", "1",
                       "--beta", "10")
    _check_shape(s["hyperparameters"], "fixed", False, None)
    assert s["hyperparameters"]["alpha"]["mean"] == 1.0
    assert s["hyperparameters"]["at_bound"] is None
    assert s["provenance"]["priors"] is None  # nothing was given a prior
    s, _ = _decide_cli(capsys, tmp_path, tables / "collapsed.csv", "m", "--weight", "w",
                       "--hyperparameters", "ml")
    _check_shape(s["hyperparameters"], "ml", False, None)
    assert s["hyperparameters"]["at_bound"] is False
    assert "interval_90" not in s["hyperparameters"]  # no longer a top-level key on ml
    assert s["provenance"]["priors"] is None


def test_python_draws_hyperparameters_shape():
    rng = np.random.default_rng(2)
    a, b = rng.gamma(5, 0.2, 30), rng.gamma(5, 2.0, 30)
    r = decide(COLLAPSED["y"], COLLAPSED["n"], COLLAPSED["N"], alpha=a, beta=b, max_draws=8)
    _check_shape(r.hyperparameters, "posterior draws", True, 30)
    assert r.hyperparameters["alpha"]["mean"] == pytest.approx(a.mean())


def test_posterior_route_shape_priors_and_weights(capsys, tmp_path, tables, monkeypatch):
    import sdcbayes.models.beta_binomial as bbm

    seen = {}

    class Spy(bbm.BetaBinomialDomainModel):
        def __init__(self, *args, **kwargs):
            seen["weights"] = kwargs.get("weights")
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(bbm, "BetaBinomialDomainModel", Spy)
    s, _ = _decide_cli(capsys, tmp_path, tables / "collapsed.csv", "p", "--weight", "w",
                       "--draws", "30", "--tune", "30", "--chains", "1", "--max-draws", "8",
                       "--seed", "3")
    # the multiplicities reach the likelihood of the posterior route
    np.testing.assert_array_equal(seen["weights"], COLLAPSED["w"])
    _check_shape(s["hyperparameters"], "posterior draws", True, 30)
    assert s["hyperparameters"]["at_bound"] is None
    # BB1 F3: the hyperpriors of the model that was fitted (BetaBinomialDomainModel defaults)
    assert s["provenance"]["priors"] == {
        "mean": {"dist": "Beta", "alpha": 1.0, "beta": 1.0},
        "concentration": {"dist": "LogNormal", "mu": 2.0, "sigma": 2.0},
    }
    html = (tmp_path / "p" / "report.html").read_text()
    assert "LogNormal" in html
