"""Regression tests for audit O of the accuracy harness (sdcbayes.validation).

One test per finding: missing household ids / strata values (1), design labels that
ignore key and strata overrides (2), coverage helpers that return impossible
"probabilities" (3), design arguments checked late or coerced silently (4), the
Nayak-Zhang notebook's bound sentence (5), replicates with an undefined truth scored
as misses (6). Populations are small and synthetic; every test runs in well under a
second.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.validation import (
    HOUSEHOLD_COLUMN,
    Design,
    Estimate,
    Population,
    _draw,
    _population_cells,
    auc,
    brier_score,
    coverage_band_probability,
    coverage_p_value,
    goal_table,
    run_design,
    summarise,
    truth_of_sample,
)


def _toy(name: str = "toy", size: int = 3000, seed: int = 0) -> Population:
    """Four random keys a-d of 6 levels; the population's own keys are a and b."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({k: rng.integers(0, 6, size).astype(str) for k in "abcd"})
    frame["s"] = np.where(np.arange(size) % 3 == 0, "u", "v")
    return Population(name, frame, ("a", "b"), strata="s")


def _households(missing_id: bool, missing_stratum: bool = False) -> Population:
    """Four households of two persons, plus two persons without an id if asked."""
    hh = [0, 0, 1, 1, 2, 2, 3, 3] + ([np.nan, np.nan] if missing_id else [])
    n = len(hh)
    strata = ["u", "v"] * (n // 2)
    if missing_stratum:
        strata[4] = None
    frame = pd.DataFrame({"a": list("xyzxyzxyzw")[:n], "b": list("1122334455")[:n],
                          "hh": hh, "s": strata})
    return Population("hh-toy", frame, ("a", "b"), strata="s", household="hh")


def test_missing_household_ids_and_strata_are_refused():
    """Finding 1: a missing id was coded -1 and glued onto the last household."""
    with pytest.raises(InputError, match="household column 'hh' has 2 missing ids"):
        run_design(Design(_households(missing_id=True), 0.5, kind="household",
                          replicates=3), methods=["dis"])
    # a missing stratum used to reach np.bincount as code -1 (raw ValueError)
    with pytest.raises(InputError, match="strata column 's' has 1 missing values"):
        run_design(Design(_households(False, missing_stratum=True), 0.5, kind="stratified",
                          replicates=1), methods=["dis"])
    # complete ids: 2 of 4 households, 2 persons each, every replicate
    res = run_design(Design(_households(missing_id=False), 0.5, kind="household",
                            replicates=5, seed=0), methods=["dis"])
    assert (res.groupby("replicate")["n"].first() == 4).all()


def test_label_names_key_and_strata_overrides_and_summarise_keeps_them_apart():
    """Finding 2: overridden keys shared the label, so summarise pooled two designs."""
    pop = _toy()
    plain = Design(pop, 0.05, replicates=3, seed=0)
    wide = Design(pop, 0.05, replicates=3, seed=1, keys=("a", "b", "c", "d"))
    assert plain.label == "toy/srs/5%"
    assert wide.label == "toy[a+b+c+d]/srs/5%"
    # unchanged: the population's own keys, another seed (seeds pool as replicates),
    # the population's own strata column, and the names the stored results carry
    assert Design(pop, 0.05, keys=("b", "a")).label == "toy/srs/5%"
    assert Design(pop, 0.05, seed=3).label == "toy/srs/5%"
    assert Design(pop, 0.05, "stratified", strata="s").label == "toy/stratified/5%"
    assert Design(pop, 0.05, "stratified", strata="a").label == "toy/stratified[a]/5%"
    assert Design("adult6", 0.01, seed=1).label == "adult6/srs/1%"
    assert Design("scotland13", 0.1, "stratified", seed=2).label == "scotland13/stratified/10%"

    r1 = run_design(plain, ["benedetti-franconi"])
    r2 = run_design(wide, ["benedetti-franconi"])
    both = summarise(pd.concat([r1, r2], ignore_index=True))
    tau1 = both[both["quantity"] == "tau1"].set_index("design")
    assert list(tau1.index) == ["toy/srs/5%", "toy[a+b+c+d]/srs/5%"]
    assert (tau1["replicates"] == 3).all()
    # each row is its own design's, not the mean of the two
    for label, r in ((plain.label, r1), (wide.label, r2)):
        alone = summarise(r).query("quantity == 'tau1'")["truth"].item()
        assert tau1.loc[label, "truth"] == pytest.approx(alone)
    assert tau1.loc[wide.label, "truth"] > tau1.loc[plain.label, "truth"]

    # two different populations under one name: the sample sizes give it away
    other = run_design(Design(_toy(size=2000, seed=1), 0.05, replicates=2),
                       ["benedetti-franconi"])
    with pytest.raises(InputError, match="sizes"):
        summarise(pd.concat([r1, other], ignore_index=True))
    renamed = r1.assign(population="toy2")
    with pytest.raises(InputError, match="several populations"):
        summarise(pd.concat([r1, renamed], ignore_index=True))


def test_coverage_helpers_refuse_impossible_arguments():
    """Finding 3: a reversed band gave -0.766, level 1.5 and 10.5 replicates NaN."""
    with pytest.raises(InputError, match="band"):
        coverage_band_probability(50, band=(0.95, 0.85))
    with pytest.raises(InputError, match="band"):
        coverage_band_probability(50, band=(-0.1, 0.95))
    with pytest.raises(InputError, match="level"):
        coverage_band_probability(50, level=1.5)
    with pytest.raises(InputError, match="replicates"):
        coverage_band_probability(10.5)
    with pytest.raises(InputError, match="covered"):
        coverage_p_value(5, 3)  # SciPy's raw ValueError before
    with pytest.raises(InputError, match="level"):
        coverage_p_value(3, 5, level=2)
    # valid calls keep their values: 0.766 at 50 (docstring), whole-number floats
    assert coverage_band_probability(50) == pytest.approx(0.766, abs=5e-4)
    assert coverage_band_probability(50.0) == coverage_band_probability(50)
    assert coverage_band_probability(7, band=(0.0, 1.0)) == pytest.approx(1.0)
    assert 0.0 < coverage_p_value(45, 50) <= 1.0
    assert math.isnan(coverage_p_value(float("nan"), 0))


@pytest.mark.parametrize("make", [
    lambda p: Design(p, 0.1, seed=-1),
    lambda p: Design(p, 0.1, seed=1.5),  # was silently seed 1
    lambda p: Design(p, 0.1, replicates=2.7),  # was silently 2 replicates
    lambda p: Design(p, "x"),
    lambda p: Design(p, None),
    lambda p: Design(p, 0.1, keys=()),  # was silently the population's keys
    lambda p: Design(p, 0.1, keys=("a", "zz")),
    lambda p: Design(p.frame, 0.1),  # a DataFrame, not a Population
    lambda p: Design("adult6", 0.1, seed=-1),  # refused before loading anything
    lambda p: run_design(Design(p, 0.1, replicates=1), ["dis"], calibration_bins=0),
    lambda p: summarise(pd.DataFrame({"design": ["d"], "quantity": ["tau1"]})),
    lambda p: goal_table(pd.DataFrame(), "latent-class"),
    lambda p: auc([0.1, 0.2, 0.3], [True, False]),
    lambda p: brier_score([0.1, 0.2, 0.3], [1, 0]),
], ids=["seed-neg", "seed-float", "replicates-float", "fraction-str", "fraction-none",
        "keys-empty", "keys-missing", "dataframe", "name-seed-neg", "bins-0",
        "summarise-columns", "goal-columns", "auc-lengths", "brier-lengths"])
def test_design_and_metric_arguments_raise_input_error(make):
    """Finding 4: raw tracebacks (or silent coercions) became InputErrors."""
    with pytest.raises(InputError):
        make(_toy(size=300))


def test_bare_key_and_method_names_are_one_name():
    """Finding 4: keys='ab' and methods='dis' were iterated character by character."""
    frame = _toy(size=300).frame.rename(columns={"a": "ab"})
    pop = Population("toy", frame, ("ab", "b"))
    design = Design(pop, 0.1, replicates=2, keys="ab")
    assert design.keys == ("ab",)
    res = run_design(design, methods="dis")
    assert set(res["method"]) == {"dis"}
    # one key of 6 levels in a sample of 30: the truth is that of key 'ab' alone
    theta = res[res["quantity"] == "theta"]
    cell, counts = _population_cells(frame, ["ab"])
    index, _ = _draw(np.random.default_rng([0, 0]), None, 0.1, len(frame))
    assert theta["truth"].iloc[0] == pytest.approx(truth_of_sample(cell, counts, index).theta,
                                                   nan_ok=True)


def test_nayak_zhang_notebook_states_the_simulated_xi():
    """Finding 5: the simulation runs at XI = 0.5 but the text said 'below xi = 1/3'."""
    path = Path(__file__).resolve().parents[1] / "notebooks" / "nayak_zhang_2015.py"
    text = path.read_text()  # the notebooks ship in the repository: no skip
    claim = re.search(r"stays below `xi = (\d+)/(\d+)`", text)
    xi = re.search(r"^XI = ([0-9.]+)$", text, flags=re.M)
    assert claim and xi
    assert Fraction(int(claim[1]), int(claim[2])) == Fraction(xi[1])


def test_summarise_skips_replicates_with_undefined_truth():
    """Finding 6: a NaN truth (theta without sample uniques) was scored as a miss."""
    rows = [dict(design="d", method="m", quantity="theta",
                 truth=math.nan if r == 0 else 0.05, estimate=0.05, lo=0.04, hi=0.06,
                 time_s=0.0) for r in range(4)]
    row = summarise(pd.DataFrame(rows)).iloc[0]
    assert row["replicates"] == 3
    assert row["intervals"] == 3 and row["covered"] == 3
    assert row["coverage"] == 1.0
    assert row["truth"] == pytest.approx(0.05) and row["rel_bias"] == pytest.approx(0.0)


def test_household_samples_carry_non_negative_household_codes():
    """Finding 1, the complement: with complete ids every sampled code is a real household.

    The id-less persons used to enter samples with household code -1 and weights that
    summed past N; here each sample is 2 whole households and its weights sum to N.
    """
    pop = _households(missing_id=False)
    frame = pop.frame.assign(hh=pop.frame["hh"].astype(int))
    seen = []

    def record(sample, keys, weight, N):
        seen.append((sample[HOUSEHOLD_COLUMN].to_numpy(), sample[weight].sum()))
        return Estimate()

    run_design(Design(Population("hh", frame, ("a", "b"), household="hh"), 0.5,
                      kind="household", replicates=4), methods={"rec": record})
    for codes, weight_sum in seen:
        assert codes.min() >= 0 and len(np.unique(codes)) == 2
        assert weight_sum == pytest.approx(len(frame))  # H/m = 2 per person, 4 persons
