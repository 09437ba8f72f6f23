"""Python-API input checks and result display of the risk layer.

A frame passed where a Microdata belongs, probability thresholds outside (0, 1), loss
specifications that cannot be meant (shares not summing to 1, a bare number, a loss of
the model comparison), the domains behind a count error, the input frame's index on
``records`` and short reprs of the result objects. Every refusal is an
:class:`~sdcbayes.exceptions.InputError` raised before any work starts.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from clitools import assert_one_line_error, run_in_process

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.risk import decisions, posterior_assess
from sdcbayes.risk.assess import Assessment, assess_closed_form
from sdcbayes.risk.compare import REIDENTIFICATION_LOSS, parse_comparison_loss
from sdcbayes.risk.decisions import decide, decide_cells
from sdcbayes.risk.losses import LOSS_NAMES, parse_loss, uniques_proportions_loss
from sdcbayes.risk.posterior_assess import (
    PosteriorAssessment,
    assess_from_posterior,
    assess_posterior,
    evaluate_poisson_cells,
)

# record ids of the user's own, deliberately not 0..n-1
FRAME = pd.DataFrame(
    {
        "a": [1, 1, 2, 3, 3, 3, 2, 1],
        "b": [1, 2, 1, 1, 1, 2, 1, 1],
        "w": [10.0, 10.0, 20.0, 5.0, 5.0, 5.0, 7.0, 12.0],
    },
    index=pd.Index([101, 205, 307, 402, 518, 611, 733, 840], name="person_id"),
)


@pytest.fixture(scope="module")
def md():
    return Microdata(FRAME, keys=["a", "b"], weight="w")


def spread_posterior(chains=2, draws=40, seed=0):
    """A Poisson-gamma posterior group with some spread (intervals of non-zero width)."""
    rng = np.random.default_rng(seed)
    shape = (chains, draws)
    return xr.Dataset(
        {"alpha": (("chain", "draw"), rng.uniform(0.5, 2.0, shape)),
         "beta": (("chain", "draw"), rng.uniform(0.005, 0.05, shape))},
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
    )


@pytest.fixture
def no_work(monkeypatch):
    """Make the first step of assess_posterior's work fail loudly: checks must come first."""

    def started(*args, **kwargs):
        raise AssertionError("assess_posterior started working before refusing its input")

    monkeypatch.setattr(posterior_assess, "seed_or_drawn", started)


# --------------------------------------------------------------------------- 1. Microdata


@pytest.mark.parametrize(
    "call",
    [
        lambda x: assess_closed_form(x),
        lambda x: assess_posterior(x, model="poisson-gamma", draws=10, chains=1, tune=10),
        lambda x: assess_from_posterior(x, spread_posterior(), "poisson-gamma", N=100.0),
    ],
    ids=["assess_closed_form", "assess_posterior", "assess_from_posterior"],
)
def test_a_frame_instead_of_microdata_is_refused_with_the_constructor(call, no_work):
    with pytest.raises(InputError) as err:
        call(FRAME)
    msg = str(err.value)
    assert "needs a sdcbayes.Microdata" in msg and "a pandas DataFrame" in msg
    assert "sdcbayes.Microdata(frame, keys=[...], weight=...)" in msg
    assert "\n" not in msg


def test_other_non_microdata_is_refused_too():
    with pytest.raises(InputError, match="got ndarray"):
        assess_closed_form(np.zeros((3, 2)))


# --------------------------------------------------------------------------- 2. threshold


BAD_THRESHOLDS = [-1, 0, 1, 1.5, 5, math.nan, math.inf, "0.1", True]
BAD_IDS = ["negative", "zero", "one", "above-one", "percent", "nan", "inf", "text", "bool"]


@pytest.mark.parametrize("threshold", BAD_THRESHOLDS, ids=BAD_IDS)
def test_closed_form_refuses_thresholds_that_are_no_probability(md, threshold):
    with pytest.raises(InputError, match="threshold must") as err:
        assess_closed_form(md, threshold=threshold)
    assert "between 0 and 1" in str(err.value)


@pytest.mark.parametrize("threshold", [-1, 1.5, math.nan, "0.1"], ids=BAD_IDS[:1] + BAD_IDS[3:4]
                         + BAD_IDS[5:6] + BAD_IDS[7:8])
def test_assess_posterior_refuses_bad_thresholds_before_fitting(md, threshold, no_work):
    with pytest.raises(InputError, match="threshold must"):
        assess_posterior(md, model="poisson-gamma", threshold=threshold)


def test_assess_posterior_refuses_bad_quantiles_before_fitting(md, no_work):
    with pytest.raises(InputError, match="quantiles must"):
        assess_posterior(md, model="poisson-gamma", quantiles=(0.05, 1.5))


def test_assess_from_posterior_and_poisson_cells_refuse_bad_thresholds(md):
    with pytest.raises(InputError, match="threshold must"):
        assess_from_posterior(md, spread_posterior(), "poisson-gamma", N=100.0, threshold=-1)
    with pytest.raises(InputError, match="threshold must"):
        evaluate_poisson_cells([1, 2], np.full((4, 2), 0.01), 3, 100, threshold=2.0)


def test_a_valid_threshold_still_counts(md):
    res = assess_closed_form(md, threshold=0.1)
    r = res.records["risk"].to_numpy()
    assert res.summary["risk_threshold"] == 0.1
    assert res.summary["n_above_threshold"] == int(np.count_nonzero(r > 0.1))


# --------------------------------------------------------------------------- 3. proportions


def test_proportions_not_summing_to_one_are_refused_with_their_sum():
    with pytest.raises(InputError, match="sum to 1") as err:
        parse_loss("uniques-proportions:pi=0.5/0.3/0.3")
    assert "sums to 1.1" in str(err.value)
    with pytest.raises(InputError, match="sums to 0.8"):
        uniques_proportions_loss([0.5, 0.3])


def test_rounded_proportions_are_accepted_and_negative_ones_refused():
    # thirds typed to three decimals: 0.999, inside the documented tolerance
    loss = parse_loss("uniques-proportions:pi=0.333/0.333/0.333")
    assert loss.params["pi"] == (0.333, 0.333, 0.333)
    assert parse_loss("uniques-proportions:pi=0.5/0.3/0.2").params["pi"] == (0.5, 0.3, 0.2)
    with pytest.raises(InputError, match="positive fractions"):
        parse_loss("uniques-proportions:pi=1.2/-0.2")


# --------------------------------------------------------------------------- 4. loss names


def test_a_bare_number_is_not_a_loss_name():
    with pytest.raises(InputError) as err:
        parse_loss("1")
    msg = str(err.value)
    assert "'1' is a number, not a loss name" in msg
    assert "uniques-equal:S=1" in msg  # the likely meaning, spelled out
    assert all(name in msg for name in LOSS_NAMES)


def test_a_model_comparison_loss_is_named_as_such():
    with pytest.raises(InputError) as err:
        parse_loss(REIDENTIFICATION_LOSS.name)
    msg = str(err.value)
    assert "model-comparison loss" in msg and "compare_models" in msg
    assert "unknown loss" not in msg
    assert all(name in msg for name in LOSS_NAMES)  # the decision losses, listed
    # the comparison itself still reads it
    assert parse_comparison_loss("reidentifications") is REIDENTIFICATION_LOSS


def test_empty_and_unknown_names_keep_clear_messages():
    with pytest.raises(InputError, match="no loss name"):
        parse_loss("")
    with pytest.raises(InputError, match="unknown loss 'uniques'"):
        parse_loss("uniques")
    with pytest.raises(InputError, match="write e.g. uniques-equal:S=10"):
        parse_loss("uniques-equal:S=ten")


# --------------------------------------------------------------------------- 5. decide


def test_population_below_sample_names_the_domains_and_values():
    with pytest.raises(InputError, match="below n") as err:
        decide([1, 2, 0, 3], [5, 10, 4, 6], [100, 8, 9, 5], alpha=1.0, beta=10.0,
               domain_names=["north", "east", "south", "west"])
    msg = str(err.value)
    assert "'east' (N=8, n=10)" in msg and "'west' (N=5, n=6)" in msg
    assert "north" not in msg and "south" not in msg


def test_count_errors_without_names_give_positions():
    with pytest.raises(InputError, match="below n") as err:
        decide([1, 2], [5, 10], [100, 8], alpha=1.0, beta=10.0)
    assert "position 1 (N=8, n=10)" in str(err.value)
    with pytest.raises(InputError, match="exceeds n") as err:
        decide([1, 7], [5, 6], [100, 80], alpha=1.0, beta=10.0, domain_names=["x", "y"])
    assert "'y' (y=7, n=6)" in str(err.value)
    with pytest.raises(InputError, match="whole numbers") as err:
        decide([1, 2.5], [5, 6], [100, 80], alpha=1.0, beta=10.0, domain_names=["x", "y"])
    assert "'y' (y=2.5)" in str(err.value)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"c": -1.0}, "trade-off"),
        ({"c": math.nan}, "trade-off"),
        ({"c": "1"}, "trade-off"),
        ({"target_risk": "0.2"}, "target_risk"),
        ({"target_risk": math.nan}, "target_risk"),
        ({"weights": [1.0]}, "weights"),
    ],
    ids=["c-negative", "c-nan", "c-text", "target-text", "target-nan", "weights-length"],
)
def test_decide_refuses_bad_numbers_before_computing_risks(monkeypatch, kwargs, match):
    def started(*args, **kw):
        raise AssertionError("risks were computed before the input was checked")

    monkeypatch.setattr(decisions, "_posterior_average", started)
    monkeypatch.setattr(decisions, "negbin_expected_loss", started)
    with pytest.raises(InputError, match=match):
        decide([1, 2], [5, 10], [100, 80], alpha=1.0, beta=10.0, **kwargs)
    with pytest.raises(InputError, match=match):
        decide_cells([1, 2], size=[1.0, 2.0], prob=[0.5, 0.5], **kwargs)


def test_cli_count_error_names_the_domain(tmp_path, capsys):
    path = tmp_path / "dom.csv"
    pd.DataFrame({"area": ["A", "B", "C"], "cnt": [1, 2, 0], "ss": [5, 10, 4],
                  "pop": [100, 8, 9]}).to_csv(path, index=False)
    out = tmp_path / "out"
    proc = run_in_process(capsys, "decide", str(path), "--y", "cnt", "--n", "ss", "--N", "pop",
                          "--domain", "area", "--hyperparameters", "ml", "--out", str(out))
    assert_one_line_error(proc, "n (ss) > N (pop)",
                          "record 2 (line 3 of the file): domain 'B', n=10, N=8")
    assert not out.exists()


# --------------------------------------------------------------------------- 6. index


def test_closed_form_records_carry_the_frame_index(md):
    res = assess_closed_form(md)
    assert res.records.index.equals(FRAME.index)
    assert res.records.index.name == "person_id"
    assert res.records["record"].tolist() == list(range(len(FRAME)))  # still 0-based rows
    joined = FRAME.join(res.records[["fk", "risk"]])
    np.testing.assert_array_equal(joined["risk"].to_numpy(), res.records["risk"].to_numpy())
    assert res.records.loc[733, "fk"] == 2  # (a=2, b=1) is seen at 307 and 733
    ds = res.to_xarray()  # the labelled view keeps its 0-based record coordinate
    assert ds["record"].values.tolist() == list(range(len(FRAME)))


def test_records_index_survives_dropped_records_and_posteriors():
    frame = FRAME.astype({"a": "float"})
    frame.loc[402, "a"] = np.nan
    md = Microdata(frame, keys=["a", "b"], weight="w", missing="drop")
    closed = assess_closed_form(md)
    assert closed.records.index.equals(frame.index)
    assert np.isnan(closed.records.loc[402, "risk"])
    post = assess_from_posterior(md, spread_posterior(), "poisson-gamma", N=500.0,
                                 random_seed=1)
    assert post.records.index.equals(frame.index)
    assert np.isnan(post.records.loc[402, "risk"])
    assert post.records.loc[101, "fk"] == closed.records.loc[101, "fk"]


# --------------------------------------------------------------------------- 7. reprs


def test_assessment_repr_is_short_and_holds_the_headline_numbers():
    rng = np.random.default_rng(3)
    big = pd.DataFrame({"a": rng.integers(0, 20, 3000), "b": rng.integers(0, 10, 3000)})
    res = assess_closed_form(Microdata(big, keys=["a", "b"], sampling_fraction=0.1),
                             threshold=0.2)
    text = repr(res)
    s = res.summary
    assert len(text) < 1000
    assert text.startswith("Assessment(model='closed-form'")
    for key in ("expected_reidentifications", "tau1", "tau2", "max_risk"):
        assert f"{s[key]:.4g}" in text, key
    assert "3,000" in text and f"{s['n_cells']:,}" in text
    assert f"{s['n_above_threshold']:,}" in text
    page = res._repr_html_()
    assert page.startswith("<table") and len(page) < 3000
    assert f"{s['expected_reidentifications']:.4g}" in page


def test_posterior_assessment_repr_shows_intervals(md):
    res = assess_from_posterior(md, spread_posterior(), "poisson-gamma", N=500.0,
                                random_seed=1)
    assert isinstance(res, PosteriorAssessment) and isinstance(res, Assessment)
    text = repr(res)
    s = res.summary
    assert len(text) < 1000
    assert text.startswith("PosteriorAssessment(model='poisson-gamma'")
    lo, hi = s["expected_reidentifications_interval"]
    assert f"{s['expected_reidentifications']:.4g}" in text
    assert f"90% interval {lo:.4g} to {hi:.4g}" in text
    assert f"{s['n_draws']:,}" in text
    assert "<" not in text  # no frames or datasets dumped
    assert "Dataset" not in res._repr_html_()


def test_decision_result_repr_is_short():
    res = decide(np.arange(40) % 5, np.full(40, 8), np.full(40, 60), alpha=1.0, beta=10.0,
                 domain_names=[f"area{i}" for i in range(40)],
                 alternatives=["uniques-equal:S=1/y"])
    text = repr(res)
    s = res.summary()
    assert len(text) < 1000
    assert text.startswith("DecisionResult(unit='domain', disclosure_loss='uniques-equal:S=10'")
    assert f"{s['n_published']:,} / {s['n_suppressed']:,}" in text
    assert f"{100 * s['suppression_at_target']['reference']:.1f}%" in text
    assert "uniques-equal:S=1/y" in text
    assert "area17" not in text  # no table rows
    page = res._repr_html_()
    assert page.startswith("<table") and len(page) < 3000
