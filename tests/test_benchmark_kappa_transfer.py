"""benchmarks/kappa_transfer.py and the key-set specs of benchmarks/latent_class_accuracy.py."""

import re

import numpy as np
import pytest
from benchtools import load_benchmark
from scipy import stats


@pytest.fixture(scope="module")
def transfer():
    return load_benchmark("kappa_transfer.py")


@pytest.fixture(scope="module")
def accuracy():
    return load_benchmark("latent_class_accuracy.py")


GRID = np.array([0.5, 1.0, 2.0, 4.0, np.inf])


def test_key_set_specs(accuracy):
    assert accuracy.parse_key_set("adult6") == ("adult6", [], [])
    # '~' removes (Adult's keys hold hyphens), '+' adds, in any order
    assert accuracy.parse_key_set("adult6~native-country+hours-per-week+workclass") == (
        "adult6", ["hours-per-week", "workclass"], ["native-country"])


def test_confirmed_rules_of_other_key_sets(accuracy):
    rules = accuracy.CONFIRMED_RULES
    # a known population keeps its own rules
    assert accuracy.confirmed_rules("adult9", ()) is rules["adult9"]
    # Adult 6 keys + workclass + occupation: the two workclass/occupation rules of adult9
    keys = ("age", "sex", "race", "marital-status", "education", "native-country",
            "workclass", "occupation")
    got = accuracy.confirmed_rules("adult6+workclass+occupation", keys)
    assert got == [r for r in rules["adult9"] if set(r) <= set(keys)]
    assert len(got) == 4  # 2 on '?', armed forces, private household service
    # Scotland without Economic_Activity: no rule naming it survives, the age rule stays
    keys13 = ("age", "sex", "Marital_Status", "Country_Of_Birth", "Ethnic_Group", "religion",
              "health", "Family_Composition", "Occupation", "industry",
              "Hours_Worked_Per_Week", "Approximate_Social_Grade")
    got = accuracy.confirmed_rules("scotland13~Economic_Activity", keys13)
    assert all("Economic_Activity" not in r for r in got)
    assert {"age": ["1"], "Marital_Status": {"not": ["1"]}} in got
    assert got.count({"age": ["1"], "Marital_Status": {"not": ["1"]}}) == 1  # pooled once
    # no rule's variables all present: None, like a population without rules
    assert accuracy.confirmed_rules("adult6~race", ("age", "sex")) is None


def test_file_of_design_labels(transfer):
    assert transfer.file_of("adult6+workclass/srs/1%") == "adult"
    assert transfer.file_of("scotland13~industry/srs/10%") == "scotland"
    assert transfer.file_of("eusilc~pb220a/srs/5%") == "eusilc"
    assert transfer.file_of("synthetic/srs/1%") == "synthetic"


def test_design_kappa_sums_replicates_and_censors(transfer):
    # two replicates' tau1 over the grid (rising with kappa)
    curves = np.array([[4.0, 6.0, 8.0, 9.0, 10.0], [6.0, 8.0, 10.0, 11.0, 12.0]])
    # summed curve 10, 14, 18, 20, 22: the summed truth 16 lies half-way from 1 to 2 on log
    kappa, cens = transfer.design_kappa(curves, np.array([7.0, 9.0]), GRID, cap=10.0)
    assert kappa == pytest.approx(np.sqrt(2.0)) and not cens
    # even kappa = 4 (the cap's side of the grid) falls short: censored at the cap
    assert transfer.design_kappa(curves, np.array([11.0, 10.0]), GRID, cap=4.0) == (4.0, True)
    # even the most clumping point overshoots
    assert transfer.design_kappa(curves, np.array([4.0, 5.0]), GRID, cap=4.0) == (0.5, False)


def test_tobit_recovers_a_censored_line(transfer):
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, 400)
    y = 0.5 + 2.0 * x + rng.normal(0, 0.3, x.size)
    cens = y > 1.2
    fit = transfer.fit_tobit(x[:, None], np.where(cens, 1.2, y), cens)
    # 400 points, 30% censored: standard errors ~0.03; 4 se
    assert fit["beta"] == pytest.approx([0.5, 2.0], abs=0.12)
    assert fit["sigma"] == pytest.approx(0.3, abs=0.05)
    se = np.sqrt(np.diag(fit["cov"]))
    assert np.all((se > 0.005) & (se < 0.1))
    # least squares on the censored values is pulled down: the censoring is what helps
    ols = np.polyfit(x, np.where(cens, 1.2, y), 1)
    assert ols[0] < 1.8
    mean, sd = transfer.predict(fit, np.array([[0.0], [1.0]]))
    assert mean == pytest.approx(fit["beta"][0] + fit["beta"][1] * np.array([0.0, 1.0]))
    assert np.all(sd > fit["sigma"])  # coefficient doubt adds to the residual sd


def test_transfer_weights_discretise_the_normal(transfer):
    grid = np.concatenate([np.exp(np.linspace(-3, 3, 13)), [np.inf]])
    w = transfer.transfer_weights(0.2, 0.8, grid)
    assert w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    lg = np.log(grid[:-1])
    # the mass at inf is the normal's tail above the last upper midpoint
    assert w[-1] == pytest.approx(stats.norm.sf(3.25, 0.2, 0.8))
    assert w[:-1] @ lg == pytest.approx(0.2, abs=0.05)  # its mean, nearly all inside
    # a prediction far above the grid puts everything on Poisson cells
    assert transfer.transfer_weights(20.0, 0.5, grid)[-1] == pytest.approx(1.0)


def _oracle_csv(path, designs, rng):
    """Rows in the format of overdispersion_oracle.py --csv: tau1 linear in log kappa,
    meeting the truth at each design's kappa."""
    import pandas as pd

    from sdcbayes.models.latent_class import KAPPA_GRID

    lg = np.log(KAPPA_GRID[:-1])
    rows = []
    for label, log_kappa, unique_share, frac in designs:
        for r in range(3):
            truth = 100.0 + 10 * r
            curve = truth * (1 + 0.05 * (lg - log_kappa))
            err = np.append(curve, curve[-1]) / truth - 1
            n = 500
            rows.append({"design": label, "replicate": r, "truth": truth,
                         "n": n, "N": int(n / frac), "keys": 6, "cells": 450,
                         "f1": int(unique_share * n), "f2": 20, "log_space": 12.0,
                         "error_curve": " ".join(f"{e:.9g}" for e in err),
                         "error_cv": rng.normal(0, 0.05)})
    pd.DataFrame(rows).to_csv(path, index=False)


def test_main_learns_a_line_and_reports_held_out_designs(transfer, tmp_path, capsys):
    rng = np.random.default_rng(0)
    # two files whose log kappa falls with the unique share along one line: 2 - 4 u
    train = [(f"{base}{i}/srs/1%", 2 - 4 * u + rng.normal(0, 0.05), u, 0.01)
             for base, shares in (("adult", (0.3, 0.5, 0.7, 0.9)), ("scotland", (0.4, 0.6, 0.8)))
             for i, u in enumerate(shares)]
    _oracle_csv(tmp_path / "train.csv", train, rng)
    _oracle_csv(tmp_path / "eval.csv", [("adult9/srs/1%", 2 - 4 * 0.65, 0.65, 0.01)], rng)
    rows = transfer.read_oracle([tmp_path / "train.csv"])
    table = transfer.design_table(rows, cap=100.0, min_truth=10.0)
    # the design kappa is recovered from the curves (exactly: the curve is linear in log kappa)
    assert table.log_kappa.to_numpy() == pytest.approx([lk for _, lk, *_ in train])
    assert transfer.main(["--train", str(tmp_path / "train.csv"), "--features", "unique_share",
                          "--evaluate", str(tmp_path / "eval.csv"), "--within-file"]) == 0
    out = capsys.readouterr().out
    coef = re.search(r"log kappa = (\S+) (\S+) unique_share; residual sd (\S+)", out)
    # 7 designs, residual sd 0.05 over a unique-share range of 0.6: slope se ~0.1
    assert float(coef[1]) == pytest.approx(2.0, abs=0.3)
    assert float(coef[2]) == pytest.approx(-4.0, abs=0.4)
    assert float(coef[3]) < 0.1
    # the held-out design's prior: the line's value, from adult's designs only (within file)
    ev, err = transfer._evaluation(table, transfer.read_oracle([tmp_path / "eval.csv"]),
                                   ["unique_share"], 100.0, True)
    assert ev.prior_mean.iloc[0] == pytest.approx(2 - 4 * 0.65, abs=0.15)
    assert len(err) == 3 and np.all(np.abs(err.error_transfer) < 0.05)
    with pytest.raises(SystemExit, match="no training design"):
        transfer._evaluation(table[table.file == "scotland"],
                             transfer.read_oracle([tmp_path / "eval.csv"]), ["unique_share"],
                             100.0, True)
    with pytest.raises(SystemExit, match="unknown"):
        transfer.main(["--train", str(tmp_path / "train.csv"), "--features", "age"])
