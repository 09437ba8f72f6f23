"""The risk after PRAM of a key: misclassification-adjusted (Shlomo & Skinner 2010).

Shlomo & Skinner (2010), Ann. Appl. Stat. 4(3):1291-1310, doi:10.1214/09-AOAS317: a
released record in key combination j is correctly matched by an intruder who knows the
target's true combination j with probability about M_jj / Σ_k M_jk F_k, M_jk = P(released
j | true k). ``protect`` takes the released file's closed-form risk for 1 / Σ_k M_jk F_k
and multiplies it by M_jj (:func:`sdcbayes.protection.pram.keep_probability`).
"""

from __future__ import annotations

import html
import json

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.protection.pram import (
    MISCLASSIFICATION_METHOD,
    keep_probability,
    nayak_zhang_keep_probability,
    nayak_zhang_pram,
)
from tests.clitools import run_in_process

# --------------------------------------------------------------------------- by hand


def _two_key_frame():
    # released values; s is the stratum PRAM ran within, c a key that was not PRAMmed
    return pd.DataFrame({
        "a": ["x", "y", "x", None, "y"],
        "b": [1, 2, 2, 1, 1],
        "c": ["u", "u", "v", "v", "u"],
        "s": ["S1", "S1", "S2", "S2", "S2"],
    })


def _summary():
    # levels a: x, y; b: 1, 2; one matrix per stratum, rows = from, columns = to
    return {
        "strata": ["s"],
        "levels": {"a": ["x", "y"], "b": [1, 2]},
        "matrices": {
            "a": {"S1": np.array([[0.9, 0.1], [0.3, 0.7]]),
                  "S2": np.array([[0.6, 0.4], [0.2, 0.8]])},
            "b": {"S1": np.array([[0.5, 0.5], [0.25, 0.75]]),
                  "S2": np.array([[1.0, 0.0], [0.4, 0.6]])},
        },
    }


def test_keep_probability_by_hand_two_keys_and_strata():
    got = keep_probability(_two_key_frame(), _summary())
    expected = [
        0.9 * 0.5,   # S1, a = x, b = 1
        0.7 * 0.75,  # S1, a = y, b = 2
        0.6 * 0.6,   # S2, a = x, b = 2
        1.0 * 1.0,   # S2, a missing (a wildcard: factor 1), b = 1
        0.8 * 1.0,   # S2, a = y, b = 1
    ]
    assert np.allclose(got, expected)


def test_keep_probability_reads_protects_long_table():
    # the same matrices as pram_matrices.csv writes them (non-zero entries, text levels)
    rows = []
    for var, by in _summary()["matrices"].items():
        levels = _summary()["levels"][var]
        for s_name, m in by.items():
            for i, frm in enumerate(levels):
                for j, to in enumerate(levels):
                    if m[i, j] > 0:
                        rows.append({"step": 1, "variable": var, "stratum": s_name,
                                     "from": str(frm), "to": str(to), "probability": m[i, j]})
    table = pd.DataFrame(rows)
    frame = _two_key_frame()
    assert np.allclose(keep_probability(frame, table, strata="s"),
                       keep_probability(frame, _summary()))
    # without its strata the table's stratum labels match none of the file's
    with pytest.raises(InputError, match="strata="):
        keep_probability(frame, table)
    # two steps PRAMming one column compose: refused, not multiplied
    twice = pd.concat([table, table.assign(step=2)], ignore_index=True)
    with pytest.raises(InputError, match="more than one step"):
        keep_probability(frame, twice, strata="s")


def test_nayak_zhang_keep_probability_is_one_minus_theta_over_count():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 6, 60), "b": rng.integers(0, 5, 60)})
    res = nayak_zhang_pram(frame, ["a", "b"], xi=0.5, seed=1)
    keep = nayak_zhang_keep_probability(frame, res.frame, ["a", "b"], res.summary)
    theta = res.summary["theta"]
    t = frame.groupby(["a", "b"]).size()  # the input's cell counts T_j
    t_rel = t.reindex(pd.MultiIndex.from_frame(res.frame[["a", "b"]])).to_numpy()
    assert np.isin(t_rel, [1, 2]).any() and (t_rel >= 3).any()
    assert np.allclose(keep, np.where(t_rel <= 2, 1 - theta / t_rel, 1.0))


# --------------------------------------------------------------------------- brute force


def _population(rng):
    """4 x 30 cells, skewed counts (half of them 1-3 units); key a is PRAMmed."""
    la, lb = 4, 30
    f = rng.negative_binomial(0.6, 0.6 / 6.6, size=(la, lb))
    f[f == 0] = 1
    p = np.array([[0.8, 0.1, 0.05, 0.05], [0.1, 0.7, 0.1, 0.1],
                  [0.05, 0.05, 0.85, 0.05], [0.1, 0.1, 0.1, 0.7]])
    a = np.repeat(np.repeat(np.arange(la)[:, None], lb, 1).ravel(), f.ravel())
    b = np.repeat(np.repeat(np.arange(lb)[None, :], la, 0).ravel(), f.ravel())
    return f, p, a, b


def test_adjusted_risk_matches_brute_force_correct_matches():
    """Monte Carlo over SRS draws and PRAM draws against Shlomo & Skinner's approximation.

    Intruder: a target unit whose true combination j has exactly one released record in
    j, chosen at random among the F_j units of j, is matched to that record; it is
    correct when the record is the target's, so a released unique in j counts
    1[its true combination is j] / F_j (the per-attempt probability whose unperturbed
    version is 1/F_j, the closed form's target). The approximation, at a 2% SRS (where
    it holds; keep_probability's docstring says how it degrades with the fraction):
    Σ M_jj / Σ_k M_jk F_k with the true F. Naive (what the risk after read before, the
    quantity the released file's closed form estimates): Σ 1 / Σ_k M_jk F_k.
    """
    fraction = 0.02
    rng = np.random.default_rng(20100901)
    f, p, a_pop, b_pop = _population(rng)
    la, lb = f.shape
    n_pop = f.sum()
    f_flat = f.ravel()
    inflow = (p.T @ f).ravel()  # Σ_k M_jk F_k of each released combination j
    n = max(2, int(round(fraction * n_pop)))
    reps = 2000
    cum = p.cumsum(1)
    mc, approx, naive = np.zeros(reps), np.zeros(reps), np.zeros(reps)
    for r in range(reps):
        s = rng.choice(n_pop, n, replace=False)
        a, b = a_pop[s], b_pop[s]
        a_rel = (rng.random(n)[:, None] > cum[a]).sum(1)  # invariant PRAM draw of a
        cell, true = a_rel * lb + b, a * lb + b
        uq = np.bincount(cell, minlength=la * lb)[cell] == 1
        mc[r] = np.sum((true[uq] == cell[uq]) / f_flat[cell[uq]])
        m_jj = np.diag(p)[a_rel[uq]]
        approx[r] = np.sum(m_jj / inflow[cell[uq]])
        naive[r] = np.sum(1.0 / inflow[cell[uq]])
    # Monte Carlo error of the paired difference: 4 standard errors (a two-sided 6e-5
    # chance under normality; the seed is fixed, so the test is deterministic) plus 1% for
    # the approximation itself, which the docstring of keep_probability puts at about 0.1%
    # at a 2% sample (it grows with the sampling fraction)
    diff = mc - approx
    se = diff.std(ddof=1) / np.sqrt(reps)
    assert abs(diff.mean()) <= 4 * se + 0.01 * mc.mean()
    # the naive reading overstates by far more than that (about 30% here)
    over = naive - mc
    assert over.mean() > 20 * over.std(ddof=1) / np.sqrt(reps)
    assert naive.mean() > 1.2 * mc.mean()


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def small_csv(tmp_path):
    rng = np.random.default_rng(7)
    n = 400
    frame = pd.DataFrame({
        "age": rng.choice(["a1", "a2", "a3", "a4", "a5"], n),
        "sex": rng.choice(["f", "m"], n),
        "region": rng.choice([f"R{i}" for i in range(8)], n),
        "job": rng.choice(["j1", "j2", "j3"], n),
        "w": rng.uniform(5, 40, n).round(2),
        "hid": np.repeat(np.arange(n // 2), 2),
    })
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    return path


def _assessed_risk(capsys, tmp_path, protected, out, keys="age,sex,region,job"):
    # the unadjusted per-record risk of the released file, as `assess` writes it
    proc = run_in_process(capsys, "assess", str(protected), "--keys", keys,
                          "--weight", "w", "--model", "closed-form", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    return pd.read_csv(out / "records.csv")["risk"].to_numpy()


def _protect(capsys, tmp_path, data, *args):
    """``protect DATA --keys age,sex,region,job --weight w ARGS --out tmp_path/o``."""
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(data), "--keys", "age,sex,region,job",
                          "--weight", "w", *args, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return proc, out


def test_protect_pram_of_a_key_adjusts_the_risk_after(capsys, tmp_path, small_csv,
                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc, out = _protect(capsys, tmp_path, small_csv, "--pram", "region,job", "--strata",
                         "sex", "--seed", "4")
    s = json.loads((out / "summary.json").read_text())
    after = s["risk"]["after"]
    mis = after["misclassification"]
    assert mis["method"] == MISCLASSIFICATION_METHOD
    released = pd.read_csv(out / "protected.csv")
    table = pd.read_csv(out / "pram_matrices.csv")
    keep = keep_probability(released, table, strata="sex")
    assert keep.min() < 1
    risk = _assessed_risk(capsys, tmp_path, out / "protected.csv", tmp_path / "a")
    assert after["expected_reidentifications"] == pytest.approx(float(keep @ risk), rel=1e-9)
    assert mis["unadjusted"]["expected_reidentifications"] == pytest.approx(
        float(risk.sum()), rel=1e-9)
    assert after["max_risk"] == pytest.approx(float((keep * risk).max()), rel=1e-9)
    assert mis["mean_keep_probability"] == pytest.approx(float(keep.mean()), rel=1e-9)
    # one terminal line says it
    lines = [ln for ln in proc.stdout.splitlines() if MISCLASSIFICATION_METHOD in ln]
    assert len(lines) == 1 and f"{risk.sum():.2f}" in lines[0]
    assert MISCLASSIFICATION_METHOD in html.unescape((out / "report.html").read_text())


def test_protect_household_risk_after_uses_the_adjusted_risks(capsys, tmp_path, small_csv,
                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, out = _protect(capsys, tmp_path, small_csv, "--pram", "region", "--household", "hid",
                      "--seed", "5", "-q")
    after = json.loads((out / "summary.json").read_text())["risk"]["after"]
    released = pd.read_csv(out / "protected.csv")
    keep = keep_probability(released, pd.read_csv(out / "pram_matrices.csv"))
    risk = _assessed_risk(capsys, tmp_path, out / "protected.csv", tmp_path / "a")
    r = keep * risk
    hh = 1 - pd.Series(np.log1p(-r)).groupby(released["hid"]).transform("sum").pipe(np.exp)
    assert after["household_expected_reidentifications"] == pytest.approx(hh.sum(), rel=1e-9)
    assert (after["misclassification"]["unadjusted"]["household_expected_reidentifications"]
            > after["household_expected_reidentifications"])


def test_protect_without_pram_of_a_key_is_unadjusted(capsys, tmp_path, small_csv,
                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "o"
    # job PRAMmed, but not a key here: the risk after is the released file's closed form
    proc = run_in_process(capsys, "protect", str(small_csv), "--keys", "age,sex,region",
                          "--weight", "w", "--pram", "job", "--seed", "4", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    after = json.loads((out / "summary.json").read_text())["risk"]["after"]
    assert "misclassification" not in after
    assert MISCLASSIFICATION_METHOD not in proc.stdout
    risk = _assessed_risk(capsys, tmp_path, out / "protected.csv", tmp_path / "a",
                          keys="age,sex,region")
    assert after["expected_reidentifications"] == pytest.approx(float(risk.sum()), rel=1e-9)


def _nayak_zhang_recipe(tmp_path, keys):
    path = tmp_path / "nz.json"
    path.write_text(json.dumps({"steps": [{"step": "nayak_zhang", "keys": keys, "xi": 0.5}]}))
    return path


@pytest.mark.parametrize("nz_keys, adjusted_block", [
    (["note"], False),            # no key randomised: nothing to adjust
    (["region", "note"], True),   # a key with a non-key: read as true, the reason said
])
def test_nayak_zhang_beyond_the_keys_is_read_as_true(capsys, tmp_path, small_csv, monkeypatch,
                                                     nz_keys, adjusted_block):
    # audit: the whole combination's keep probability 1 - θ/T_j understates how often the
    # keys' part of it is kept, and scaled the risk down after a step that changed no key
    monkeypatch.chdir(tmp_path)
    frame = pd.read_csv(small_csv)
    # a non-key of many levels: its combinations hold the uniques Nayak-Zhang randomises
    frame["note"] = np.random.default_rng(9).integers(0, 150, len(frame)).astype(str)
    data = tmp_path / "n.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(data), "--keys", "age,sex,region",
                          "--weight", "w", "--recipe", str(_nayak_zhang_recipe(tmp_path, nz_keys)),
                          "--seed", "3", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["steps"][0]["result"]["n_moved"] > 0
    after = s["risk"]["after"]
    if adjusted_block:
        reason = after["misclassification"]["not_adjusted_because"]
        assert "'note'" in reason and "Nayak-Zhang" in reason
    else:
        assert "misclassification" not in after
    risk = _assessed_risk(capsys, tmp_path, out / "protected.csv", tmp_path / "a",
                          keys="age,sex,region")
    assert after["expected_reidentifications"] == pytest.approx(float(risk.sum()), rel=1e-9)


def test_a_key_blanked_after_its_randomisation_counts_one():
    # audit: a suppression after Nayak-Zhang blanks a key of its combination; the shown
    # part is kept at least as often as the whole, so the record's factor is 1, as after PRAM
    from sdcbayes.commands.protect import _misclassification

    released = pd.DataFrame({"a": ["x", "y", "x", "y"], "b": [1.0, np.nan, 2.0, 1.0],
                             "c": ["u", "v", None, "u"]})
    steps = [{"step": "nayak_zhang", "keys": ["a", "b"]}, {"step": "pram", "columns": ["c"]},
             {"step": "suppress", "keys": ["a", "b", "c"]}]
    key_keeps = [
        {"step": 1, "name": "nayak_zhang", "columns": ["a", "b"], "non_keys": [],
         "keep": {"a+b": np.array([0.5, 0.5, 0.75, 1.0])}},
        {"step": 2, "name": "pram", "columns": ["c"], "keep": {"c": np.full(4, 0.8)}},
    ]
    keep, block = _misclassification(steps, key_keeps, released)
    np.testing.assert_allclose(keep, [0.5 * 0.8, 1.0 * 0.8, 0.75 * 1.0, 1.0 * 0.8])
    assert block["keys"] == ["a", "b", "c"] and "not_adjusted_because" not in block
