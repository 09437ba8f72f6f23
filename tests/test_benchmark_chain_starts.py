"""benchmarks/chain_starts.py: the Gibbs sampler at kappa0 from different chain starts.

The rows are checked against ``kappa_model_world.population_rows`` (the same seeds give the
same population, sample and, for the EM start, the same chains), the summary against sums
worked by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchtools import load_benchmark, toy_latent_class
from scipy import stats


@pytest.fixture(scope="module")
def cs():
    return load_benchmark("chain_starts.py")


def test_parse_starts(cs):
    assert cs.parse_starts("em:2, bootstrap:8") == [("em", 2), ("bootstrap", 8)]
    for bad in ("em", "boot:4", "bootstrap:0", "em:two"):
        with pytest.raises(ValueError, match="init:chains"):
            cs.parse_starts(bad)


def test_rows_match_the_model_world_run_at_kappa0(cs):
    mw = load_benchmark("kappa_model_world.py")
    toy = toy_latent_class()
    N = 20 * toy.n
    rows = cs.start_rows("toy/5%", 0, toy, N, None, 0, kappas=(0.5,), draws=1,
                         starts=(("em", 2), ("bootstrap", 3)), total=300)
    ref = mw.population_rows("toy/5%", 0, toy, N, None, 0, kappas=(0.5,), draws=1,
                             at_kappa0=True)[0]
    (row,) = rows
    # the same population and sample; the EM start is kappa_model_world's run at kappa0
    assert row["tau1"] == ref["tau1"] and row["tau2"] == ref["tau2"]
    assert row["tau1_star"] == pytest.approx(ref["tau1_star"], rel=1e-12)
    for k in ("est1", "lo1", "hi1", "est2", "lo2", "hi2"):
        assert row[f"em2_{k}"] == pytest.approx(ref[f"k0_{k}"], rel=1e-12)
    assert row["em2_ex_sd"] == pytest.approx(ref["k0_post_sd1"], rel=1e-12)
    # the bootstrap start: its own chains, a posterior mean of the expectation within
    # its draws' range, a spread between chains no larger than the whole posterior's
    assert row["bootstrap3_lo1"] <= row["bootstrap3_est1"] <= row["bootstrap3_hi1"]
    assert row["bootstrap3_est1"] != row["em2_est1"]
    assert 0 <= row["bootstrap3_between"] <= row["bootstrap3_ex_sd"] + 1e-12
    assert row["bootstrap3_ex"] == pytest.approx(row["bootstrap3_est1"], rel=1e-12)


def test_summary_by_hand(cs):
    per = pd.DataFrame({"design": "d", "kappa0": 0.5, "tau1": [10.0, 20.0],
                        "tau2": [12.0, 24.0], "tau1_star": [11.0, 19.0],
                        "em2_ex": [12.0, 21.0], "em2_ex_sd": [1.0, 3.0],
                        "em2_between": [0.5, 0.5],
                        "em2_est1": [12.0, 22.0], "em2_lo1": [8.71, 20.5],
                        "em2_hi1": [15.29, 24.0],
                        "em2_est2": [12.0, 24.0], "em2_lo2": [10.0, 20.0],
                        "em2_hi2": [14.0, 28.0]})
    # a start another design was run with: no row here
    per = per.assign(**{f"bootstrap4_{c}": np.nan for c in ("ex", "ex_sd", "between")})
    (row,) = cs.summarise(per).to_dict("records")
    assert row["start"] == "em2" and row["samples"] == 2
    assert row["ex_err_mean"] == pytest.approx(1.5)          # errors 1 and 2
    assert row["ex_err_sd"] == pytest.approx(np.std([1, 2], ddof=1))
    assert row["ex_post_sd"] == pytest.approx(2.0) and row["between_sd"] == 0.5
    assert row["cover1"] == 0.5 and row["cover2"] == 1.0      # 20 lies below 20.5
    # z of tau1: error over width / (2 z_0.95), the sd a normal 90% interval implies
    z90 = 2 * stats.norm.ppf(0.95)
    z = np.array([2.0 / (6.58 / z90), 2.0 / (3.5 / z90)])
    assert row["z_mean1"] == pytest.approx(z.mean())
    assert row["z_sd1"] == pytest.approx(z.std(ddof=1))
