"""Audit DD5, F5: the decision API next to compare_models (risk/decisions.py, risk/losses.py).

* ``N`` of :func:`decide_cells` is only a loss argument: an estimated population size
  (a weight sum, not whole) is accepted; counts refused for a value given once for every
  cell are reported once, with the fix.
* ``disclosure_loss="reidentifications"`` (compare_models' default, ``f/F``) is accepted by
  :func:`decide_cells`: brute-force summation over the NegBin predictive, and
  compare_models' own decisions on the demo, reproduce it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

import sdcbayes
from sdcbayes.datasets import demo_keys, load_demo
from sdcbayes.exceptions import InputError
from sdcbayes.risk.compare import REIDENTIFICATION_LOSS, compare_models
from sdcbayes.risk.decisions import decide, decide_cells, negbin_expected_loss
from sdcbayes.risk.losses import parse_loss

# the demo's weight sum, 97176.19706575875: what N=md.weights.sum() passes
N_WEIGHTS = 97176.19706575875


def _cells(m=1004, seed=5):
    rng = np.random.default_rng(seed)
    fk = rng.integers(1, 6, size=m).astype(float)
    prob = rng.uniform(0.02, 0.9, size=m)
    return fk, prob


def brute_reidentifications(f, r, rho):
    """sum_x f/(f + x) P(X = x), X ~ NegBin(r, rho), to a tail below 1e-17."""
    x_max = int(stats.nbinom.isf(1e-17, r, rho)) + 10
    x = np.arange(x_max + 1, dtype=float)
    return float(np.sum(f / (f + x) * stats.nbinom.pmf(x, r, rho)))


@pytest.fixture(scope="module")
def demo_md():
    demo = load_demo()
    return sdcbayes.Microdata(demo.sample, list(demo_keys()), weight="weight",
                              missing="category")


# --- N from survey weights ------------------------------------------------------------


def test_a_weight_sum_N_is_accepted_and_changes_nothing_it_does_not_enter():
    """N is a loss argument only: a fractional N gives the decisions of round(N)."""
    fk, prob = _cells()
    got = decide_cells(fk, size=fk, prob=prob, N=N_WEIGHTS)  # refused before the fix
    ref = decide_cells(fk, size=fk, prob=prob, N=round(N_WEIGHTS))
    np.testing.assert_array_equal(got.table["publish"], ref.table["publish"])
    np.testing.assert_array_equal(got.table["R1"], ref.table["R1"])
    assert got.c == ref.c
    assert got.summary()["provenance"]["data"]["N"] == pytest.approx(N_WEIGHTS)


def test_a_weight_sum_N_is_the_N_loss_itself():
    """Seed 003, Section 3: L0 = N, the population size as given (not rounded)."""
    fk, prob = _cells(m=6)
    res = decide_cells(fk, size=fk, prob=prob, N=N_WEIGHTS, suppression_loss="N")
    np.testing.assert_array_equal(res.table["R0"], np.full(6, N_WEIGHTS))
    per_cell = decide_cells(fk, size=fk, prob=prob, N=N_WEIGHTS + np.arange(6) / 3,
                            suppression_loss="N")
    np.testing.assert_allclose(per_cell.table["R0"], N_WEIGHTS + np.arange(6) / 3)


@pytest.mark.parametrize(
    "kwargs, value, fix",
    [
        ({"n": 12.5}, "n=12.5", "round(n)"),
        ({"n": -3}, "n=-3", "leave n out"),
        ({"N": -5.5}, "N=-5.5", "give the population size"),
        ({"N": np.nan}, "N=nan", "give the population size"),
    ],
    ids=["n-fractional", "n-negative", "N-negative", "N-nan"],
)
def test_a_scalar_count_is_reported_once_with_the_fix(kwargs, value, fix):
    """1004 cells, one bad scalar: the message states it once (not 1004 times) and the fix."""
    fk, prob = _cells()
    with pytest.raises(InputError) as err:
        decide_cells(fk, size=fk, prob=prob, **kwargs)
    msg = str(err.value)
    assert msg.count(value) == 1, msg
    assert "one value for every cell" in msg and fix in msg
    assert "more" not in msg and "positions" not in msg


def test_N_below_n_given_once_is_reported_once():
    fk, prob = _cells()
    with pytest.raises(InputError, match=r"N \(population size\) is below n") as err:
        decide_cells(fk, size=fk, prob=prob, n=5000, N=4000.5)
    msg = str(err.value)
    assert msg.count("N=4000.5") == 1 and "every cell" in msg and "more" not in msg


def test_per_cell_counts_are_still_named_by_cell():
    fk, prob = _cells(m=4)
    with pytest.raises(InputError, match=r"cell at 0-based position 2 \(N=-1\)"):
        decide_cells(fk, size=fk, prob=prob, N=[100.5, 200, -1, 300])


def test_decide_domains_still_need_a_whole_N():
    """decide()'s N - n is a number of beta-binomial trials: whole, and the fix says round."""
    with pytest.raises(InputError, match="whole numbers") as err:
        decide([1, 2], [5, 5], [10.5, 20], alpha=1.0, beta=5.0)
    assert "np.round(N)" in str(err.value)


# --- the reidentifications loss -------------------------------------------------------


@pytest.mark.parametrize("f", [1.0, 2.0, 5.0, 30.0])
@pytest.mark.parametrize("r_extra, rho", [(0.0, 0.05), (0.0, 0.5), (0.7, 0.2), (3.0, 0.9)])
def test_reidentifications_risk_is_the_brute_force_sum(f, r_extra, rho):
    """E[f/F | f] with F - f ~ NegBin(r, rho) (r = f: plug-in; f + alpha: Poisson-gamma)."""
    r = f + r_extra
    got = negbin_expected_loss("reidentifications", f, 100.0, np.inf, r, rho)
    assert float(got) == pytest.approx(brute_reidentifications(f, r, rho), rel=1e-11)


def test_reidentifications_is_zero_for_a_cell_without_sample_records():
    """f = 0: nothing to re-identify (0, also at F = 0, where f/F reads 0/0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0/0 RuntimeWarning
        got = negbin_expected_loss("reidentifications", [0.0, 0.0, 2.0], 10.0, np.inf,
                                   [0.5, 1.0, 2.0], [0.3, 1.0, 0.3])
        res = decide_cells([0.0, 0.0, 2.0], size=[0.5, 1.0, 2.0], prob=[0.3, 1.0, 0.3],
                           disclosure_loss="reidentifications")
    np.testing.assert_allclose(got, [0.0, 0.0, brute_reidentifications(2.0, 2.0, 0.3)],
                               rtol=1e-11)
    np.testing.assert_allclose(res.table["R1"], got, rtol=1e-15)
    assert np.all(np.isfinite(res.jensen["plug_in_R1"]))
    assert res.jensen["plug_in_R1"].iloc[1] == 0.0


def test_reidentifications_over_posterior_draws():
    """Per-cell draws (Poisson-gamma: size = alpha + f, prob = rho) are averaged."""
    fk = np.array([1.0, 1.0, 2.0, 4.0])
    alpha = np.array([0.3, 0.8, 1.5])
    rho = np.array([0.05, 0.1, 0.4])
    res = decide_cells(fk, size=alpha[:, None] + fk, prob=rho[:, None],
                       disclosure_loss="reidentifications")
    want = [np.mean([brute_reidentifications(f, a + f, p) for a, p in zip(alpha, rho,
                                                                        strict=True)])
            for f in fk]
    np.testing.assert_allclose(res.table["R1"], want, rtol=1e-11)
    # R1/R0 with R0 = f is the individual risk E(1/F | f)
    np.testing.assert_allclose(res.table["ratio"], np.asarray(want) / fk, rtol=1e-11)
    s = res.summary()
    assert s["disclosure_loss"]["spec"] == "reidentifications"
    assert s["provenance"]["settings"]["disclosure_loss"] == "reidentifications"


def test_reidentifications_as_an_alternative_and_as_a_label():
    fk, prob = _cells(m=50)
    res = decide_cells(fk, size=fk, prob=prob, alternatives="reidentifications/y")
    assert list(res.sensitivity["pair"]) == ["uniques-equal:S=10/y", "reidentifications/y"]
    ref = decide_cells(fk, size=fk, prob=prob, disclosure_loss="reidentifications")
    given = decide_cells(fk, R1=ref.table["R1"], R0=ref.table["R0"],
                         disclosure_loss="reidentifications")
    assert given.disclosure_loss is REIDENTIFICATION_LOSS
    np.testing.assert_array_equal(given.table["publish"], ref.table["publish"])


def test_decide_cells_reproduces_compare_models_decisions_on_the_demo(demo_md):
    """The call the docstrings give reproduces compare_models' closed-form row, and back."""
    md = demo_md
    fk, Fk_hat = md.cells.fk, md.cells.Fk_hat
    mine = decide_cells(fk, size=fk, prob=np.minimum(fk / Fk_hat, 1.0),
                        disclosure_loss="reidentifications")
    cmp = compare_models(md, [{"name": "closed", "model": "closed-form"}], random_seed=1,
                         plug_in_draws=2)
    theirs = cmp.decision_results["closed"]
    assert int(cmp.table["n_published"].iloc[0]) == 382 == mine.summary()["n_published"]
    np.testing.assert_array_equal(mine.table["publish"], theirs.table["publish"])
    np.testing.assert_allclose(mine.table["R1"], theirs.table["R1"], rtol=1e-13)
    assert mine.c == pytest.approx(theirs.c, rel=1e-13)
    assert mine.suppression_at_target == pytest.approx(theirs.suppression_at_target,
                                                       rel=1e-13)
    # decide_cells' own default (uniques-equal:S=10) is compare_models with that loss,
    # with N from the weights as it is (a weight sum, not whole)
    default = decide_cells(fk, size=fk, prob=np.minimum(fk / Fk_hat, 1.0),
                           N=float(md.weights.sum()))
    other = compare_models(md, [{"name": "closed", "model": "closed-form"}], random_seed=1,
                           plug_in_draws=2, disclosure_loss="uniques-equal:S=10")
    assert default.summary()["n_published"] == 463 == int(other.table["n_published"].iloc[0])
    np.testing.assert_array_equal(default.table["publish"],
                                  other.decision_results["closed"].table["publish"])


def test_the_domain_decisions_refuse_reidentifications_and_name_decide_cells():
    with pytest.raises(InputError, match="model-comparison loss") as err:
        decide([1, 2], [5, 5], [10, 20], alpha=1.0, beta=5.0,
               disclosure_loss="reidentifications")
    msg = str(err.value)
    assert "decide_cells" in msg and "compare_models" in msg
    with pytest.raises(InputError, match="decide_cells"):
        parse_loss("reidentifications")


def test_a_user_loss_named_reidentifications_is_not_taken_for_it():
    """By function, not name: a user's own f/F-like loss keeps its own values."""
    from sdcbayes.risk.losses import user_loss

    mine = user_loss(lambda y, Y, n, N: 2.0 * y / np.maximum(Y, 1.0), name="reidentifications")
    got = negbin_expected_loss(mine, 2.0, 10.0, np.inf, 2.0, 0.5)
    assert float(got) == pytest.approx(2 * brute_reidentifications(2.0, 2.0, 0.5), rel=1e-9)
