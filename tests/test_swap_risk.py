"""The risk after a targeted record swap of a key: swapped records count as non-matching.

Given the released file, record i is correctly matched by an intruder who knows the
target's true keys x_i with probability 1[x̃_i = x_i] / F_{x̃_i} (F counted on the
population's true values): a record showing another household's geography is not found
on its true keys, and a match on its released keys links it to someone else. So the risk
after a swap is counted on the records the swap left unperturbed (Shlomo, Tudor & Groom
2010, "Data swapping for protecting census tables", PSD 2010, LNCS 6344, pp. 41-51):
``protect`` multiplies each record's closed-form risk by 0 where a swap changed one of its
key values (and a later suppression did not blank them all), else by 1, times PRAM's keep
probability M_jj where PRAM ran too (tests/test_pram_risk.py). The closed-form risk r_i,
an estimate of 1 / F_{x_i}, is counted on the pre-swap cells: the frame the risk after
scores with every swapped value still shown put back to its pre-swap one (a later blank
stays blank; PRAMmed values stay as released). Counted on the released cells it overstates
the truth: a targeted swap moves records out of rare cells, so the records left in place
look rarer there than they are (the brute force below measures both).
"""

from __future__ import annotations

import html
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from sdcbayes.commands.protect import (
    _key_keep_probabilities,
    _misclassification,
    _pre_swap_counts,
    _risk,
)
from sdcbayes.protection.pram import MISCLASSIFICATION_METHOD, keep_probability
from sdcbayes.protection.swapping import (
    SWAP_RISK_FREQUENCIES,
    SWAP_RISK_METHOD,
    record_swap,
)
from tests.clitools import run_in_process

KEYS = "age,sex,region"

# --------------------------------------------------------------------------- by hand


def _hand_frame() -> pd.DataFrame:
    """24 households (sizes 1, 2, 3) in 4 regions of 2 districts each; 48 records."""
    rows = []
    for h in range(24):
        size = (1, 2, 3)[h % 3]
        region = f"R{h % 4 + 1}"
        for m in range(size):
            rows.append({"hid": h, "hsize": size, "region": region,
                         "district": f"{region}{'ab'[(h // 4) % 2]}",
                         "age": f"a{(h * 7 + m * 3) % 5}", "sex": "fm"[(h + m) % 2],
                         "w": 20.0 + h % 5})
    return pd.DataFrame(rows)


@pytest.fixture
def hand_csv(tmp_path):
    path = tmp_path / "hand.csv"
    _hand_frame().to_csv(path, index=False)
    return path


def _assessed_risk(capsys, released: pd.DataFrame, tmp_path, keys=KEYS) -> np.ndarray:
    """The unadjusted per-record closed-form risk of a file, as ``assess`` writes it."""
    path, out = tmp_path / "released.csv", tmp_path / "assessed"
    released.to_csv(path, index=False)
    proc = run_in_process(capsys, "assess", str(path), "--keys", keys, "--weight", "w",
                          "--model", "closed-form", "--out", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    return pd.read_csv(out / "records.csv")["risk"].to_numpy()


def _benchmark(r: np.ndarray) -> int:
    # seed 001 sec. 3.4 as sdcMicro prints it: r > 0.1 and r > median + 2 MAD (scaled 1.4826)
    med = np.median(r)
    return int(np.count_nonzero((r > 0.1) & (r > med + 2 * 1.4826 * np.median(abs(r - med)))))


def _household_risk(r: np.ndarray, hid: pd.Series) -> np.ndarray:
    return 1 - np.exp(pd.Series(np.log1p(-r)).groupby(hid.to_numpy()).transform("sum")
                      .to_numpy())


def _changed_by_pairs(frame: pd.DataFrame, pairs: list) -> np.ndarray:
    """Records whose region the logged pairs changed: the partner's region is another."""
    region = frame.groupby("hid")["region"].first()
    partner = {}
    for h, d, _level in pairs:
        partner[h], partner[d] = d, h
    return np.array([h in partner and region[partner[h]] != region[h] for h in frame["hid"]])


def test_swap_sets_exactly_the_records_whose_keys_changed_to_zero(capsys, tmp_path, hand_csv,
                                                                   monkeypatch):
    """Hand-built file, seed 1: the swapped pairs are read off the step's result.

    region is a key, district is not: a pair swapped across districts of one region keeps
    its region (no key changed: factor 1); one across regions shows another household's
    region (factor 0). Every number after follows from r_i × 1[region kept], and the
    terminal line and the report say how many records the swap made non-matching. r_i is
    counted on the pre-swap cells: region is the only swapped key and nothing is blanked,
    so they are the input's own (``assess`` of the input); the adjusted ER on the released
    cells is kept beside it, and the unadjusted numbers are the released file's.
    """
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(hand_csv), "--keys", KEYS, "--weight", "w",
                          "--household", "hid", "--swap", "region,district", "--swap-similar",
                          "hsize", "--swap-rate", "0.5", "--swap-k", "1", "--seed", "1",
                          "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    s = json.loads((out / "summary.json").read_text())
    frame, released = _hand_frame(), pd.read_csv(out / "protected.csv")
    pairs = s["steps"][0]["result"]["pairs"]
    changed = _changed_by_pairs(frame, pairs)
    # the file is what the pairs say, and both kinds of pair occur at this seed
    assert np.array_equal(changed, (released["region"] != frame["region"]).to_numpy())
    swapped_hh = {h for p in pairs for h in p[:2]}
    kept_region = frame["hid"].isin(swapped_hh).to_numpy() & ~changed
    assert changed.sum() > 0 and kept_region.sum() > 0
    assert (released["district"] != frame["district"]).to_numpy()[kept_region].all()

    risk = _assessed_risk(capsys, released, tmp_path)
    pre_swap = _assessed_risk(capsys, frame, tmp_path)  # the true cells' counts
    r = pre_swap * ~changed
    assert r.max() > 0 and risk[changed].max() > 0  # records that had risk were zeroed
    # the counts matter here: some record left in place has another risk on its true cell
    assert not np.allclose(r, risk * ~changed)
    after = s["risk"]["after"]
    assert after["expected_reidentifications"] == pytest.approx(r.sum(), rel=1e-9)
    assert after["expected_reidentification_rate"] == pytest.approx(r.sum() / len(r), rel=1e-9)
    assert after["max_risk"] == pytest.approx(r.max(), rel=1e-9)
    assert after["n_above_benchmark"] == _benchmark(r)
    hh = _household_risk(r, released["hid"])
    assert after["household_expected_reidentifications"] == pytest.approx(hh.sum(), rel=1e-9)
    first = ~released["hid"].duplicated().to_numpy()
    assert after["household_expected_reidentified_households"] == pytest.approx(
        hh[first].sum(), rel=1e-9)
    mis = after["misclassification"]
    un = mis["unadjusted"]
    assert un["expected_reidentifications"] == pytest.approx(risk.sum(), rel=1e-9)
    assert un["max_risk"] == pytest.approx(risk.max(), rel=1e-9)
    assert un["n_above_benchmark"] == _benchmark(risk)
    assert un["household_expected_reidentifications"] == pytest.approx(
        _household_risk(risk, released["hid"]).sum(), rel=1e-9)
    assert mis["adjusted_on_released_counts"]["expected_reidentifications"] == pytest.approx(
        (risk * ~changed).sum(), rel=1e-9)
    assert mis["swap"]["frequencies"] == SWAP_RISK_FREQUENCIES
    assert mis["method"] == SWAP_RISK_METHOD and "LNCS 6344" in mis["reference"]
    assert mis["swapped_records"] == int(changed.sum())
    assert mis["swap"]["steps"] == [{"step": 1, "keys": ["region"],
                                     "changed_records": int(changed.sum()),
                                     "blanked_records": 0,
                                     "non_matching_records": int(changed.sum())}]
    # the terminal: one line with the count and the unadjusted number
    lines = [ln for ln in proc.stdout.splitlines() if SWAP_RISK_METHOD in ln]
    assert len(lines) == 1
    assert f"{int(changed.sum()):,} records made non-matching by swap step 1 count 0" \
        in lines[0]
    assert f"read as true: {risk.sum():.2f} expected re-identifications" in lines[0]
    assert ("the others' risks counted on their pre-swap cells (on the released cells: "
            f"{(risk * ~changed).sum():.2f})") in lines[0]
    assert "read as true: cells, sample uniques, k-anonymity" in proc.stdout
    report = html.unescape((out / "report.html").read_text())
    assert f"{int(changed.sum())} records a swap made non-matching count 0" in report
    assert "the others' risks are counted on their pre-swap cells" in report
    assert "The same holds for swapped values" not in report  # no longer read as true


# --------------------------------------------------------------------------- the rules


def _swap_entry(before: pd.DataFrame, after: pd.DataFrame, keys: list[str], i: int = 1,
                hierarchy=("region", "district")):
    step = {"step": "swap", "hierarchy": list(hierarchy), "carry_along": []}
    return step, _key_keep_probabilities(i, step, before, SimpleNamespace(frame=after), keys)


def _before_after():
    before = pd.DataFrame({"region": ["A", "A", "B", "B", "C", "C"],
                           "district": ["a1", "a2", "b1", "b1", "c1", "c2"],
                           "age": [1, 2, 3, 4, 5, 6]})
    after = before.assign(region=["B", "B", "B", "B", "A", "C"],  # 0, 1, 4 moved region
                          district=["b1", "b1", "b2", "b1", "a1", "c2"])  # 2: district only
    return before, after


def test_a_swapped_key_blanked_later_counts_one():
    """Blanks of every changed key give 1 (a wildcard matches the true value), not fewer."""
    before, after = _before_after()
    keys = ["region", "district", "age"]
    step, entries = _swap_entry(before, after, keys)
    released = after.copy()
    released.loc[0, ["region", "district"]] = None  # both changed keys blanked: 1
    released.loc[1, "district"] = None                # region still shown swapped: 0
    released.loc[2, "district"] = None                # its one changed key blanked: 1
    released.loc[3, "region"] = None                  # unchanged anyway: 1
    suppress = {"step": "suppress", "keys": keys, "k": 2}
    keep, block = _misclassification([step, suppress], entries, released)
    np.testing.assert_array_equal(keep, [1, 0, 1, 1, 0, 1])
    assert block["swap"]["steps"] == [{"step": 1, "keys": ["region", "district"],
                                       "changed_records": 4, "blanked_records": 2,
                                       "non_matching_records": 2}]
    assert block["swapped_records"] == 2 and "not_adjusted_because" not in block
    # what the risk after reads (with --household, a mate may show the blank again): 0
    shown = released.copy()
    shown.loc[0, "region"] = "B"
    keep, _ = _misclassification([step, suppress], entries, released, shown=shown)
    np.testing.assert_array_equal(keep, [0, 0, 1, 1, 0, 1])


def test_equal_values_and_swaps_of_no_key_leave_records_matching():
    before, after = _before_after()
    # district no key: record 2 (district only) keeps its keys
    step, entries = _swap_entry(before, after, ["region", "age"])
    keep, block = _misclassification([step], entries, after)
    np.testing.assert_array_equal(keep, [0, 0, 1, 1, 0, 1])
    assert block["keys"] == ["region"]
    # no hierarchy column is a key: no entry, no block (the risk after is the released one)
    step, entries = _swap_entry(before, after, ["age"])
    assert entries == [] and _misclassification([step], entries, after) == (None, None)
    # a count key the household ids give exactly is read as that count: not swapped
    step, entries = _swap_entry(before, after, ["region", "age"])
    assert _misclassification([step], entries, after, exact=("region",)) == (None, None)


def test_pram_and_swap_give_the_product():
    before, after = _before_after()
    keys = ["region", "age"]
    step, entries = _swap_entry(before, after, keys)
    pram_keep = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    entries += [{"step": 2, "name": "pram", "columns": ["age"], "keep": {"age": pram_keep}}]
    pram = {"step": "pram", "columns": ["age"]}
    keep, block = _misclassification([step, pram], entries, after)
    np.testing.assert_allclose(keep, pram_keep * np.array([0, 0, 1, 1, 0, 1]))
    assert MISCLASSIFICATION_METHOD in block["method"] and SWAP_RISK_METHOD in block["method"]
    assert "Skinner" in block["reference"] and "Tudor" in block["reference"]
    assert block["steps"] == [1, 2] and block["keys"] == ["age", "region"]
    assert block["mean_keep_probability"] == pytest.approx(keep.mean())


# --------------------------------------------------------------------------- the counts


def _thinned():
    """Record 1 (A, 1) swaps its region with record 2 (B, 2): weights 1, so r = 1 / f.

    Released, records 0 (A, 1) and 3 (B, 2) each lost the mate of their cell (f = 1);
    their true cells hold two records (f = 2). Records 4-6 are unique either way.
    """
    before = pd.DataFrame({"region": list("AABBCCC"), "age": list("1122312"), "w": 1.0})
    after = before.assign(region=list("ABABCCC"))
    step = {"step": "swap", "hierarchy": ["region"], "carry_along": []}
    entries = _key_keep_probabilities(1, step, before, SimpleNamespace(frame=after),
                                      ["region", "age"])
    return before, after, step, entries


def test_a_record_left_in_place_keeps_the_risk_of_its_pre_swap_cell():
    """Record 0's mate was swapped out: its risk after is 1/2 (its true cell), not 1/1."""
    before, after, step, entries = _thinned()
    keep, block = _misclassification([step], entries, after)
    np.testing.assert_array_equal(keep, [1, 0, 0, 1, 1, 1, 1])
    counts = _pre_swap_counts(entries, after, block)
    pd.testing.assert_frame_equal(counts, before)  # every swapped value put back
    out, _ = _risk(after, ["region", "age"], "w", 3, keep=keep, frequencies=counts)
    truth = [1 / 2, 0, 0, 1 / 2, 1, 1, 1]  # 1[x̃ = x] / f of the true cell, by hand
    assert out["expected_reidentifications"] == pytest.approx(sum(truth), rel=1e-12)
    assert out["expected_reidentification_rate"] == pytest.approx(sum(truth) / 7, rel=1e-12)
    mis = out["misclassification"]
    # on the released cells every record is unique: 1 + 1 + 1 + 1 + 1 kept, 7 read as true
    assert mis["adjusted_on_released_counts"]["expected_reidentifications"] == pytest.approx(5)
    assert mis["unadjusted"]["expected_reidentifications"] == pytest.approx(7)
    assert block["swap"]["frequencies"] == SWAP_RISK_FREQUENCIES
    # the cells, sample uniques and k-anonymity stay the released file's: 7 uniques
    assert out["n_sample_uniques"] == 7 and out["k_anonymity_violations"] == 7
    # without a swap adjustment nothing is put back (nor counted twice)
    assert _pre_swap_counts(entries, after, None) is None
    _, not_adjusted = _misclassification(
        [step, {"step": "recode", "column": "region", "mapping": {"A": "AB", "B": "AB"}}],
        entries, after)
    assert _pre_swap_counts(entries, after, not_adjusted) is None


def test_a_value_blanked_after_the_swap_stays_blank_in_the_counts():
    """Record 2's swapped region blanked later: a wildcard in the counts too, not its B.

    Counted with the blank, (·, 2) matches records 2, 3 and 6: 1/3 for record 2 (factor 1,
    every changed key blanked), 1/2 for 3 and 6; put back to B it would be 1/2, 1/2, 1.
    """
    before, after, step, entries = _thinned()
    released = after.copy()
    released.loc[2, "region"] = None
    suppress = {"step": "suppress", "keys": ["region", "age"], "k": 2}
    keep, block = _misclassification([step, suppress], entries, released)
    np.testing.assert_array_equal(keep, [1, 0, 1, 1, 1, 1, 1])
    counts = _pre_swap_counts(entries, released, block)
    pd.testing.assert_frame_equal(counts, before.assign(region=["A", "A", None, "B", "C", "C",
                                                                "C"]))
    out, _ = _risk(released, ["region", "age"], "w", 3, keep=keep, frequencies=counts)
    truth = [1 / 2, 0, 1 / 3, 1 / 2, 1, 1, 1 / 2]
    assert out["expected_reidentifications"] == pytest.approx(sum(truth), rel=1e-12)
    # the frame passed stays as it was (the counts are a copy)
    assert released["region"].isna().tolist() == [False, False, True, False, False, False,
                                                  False]
    assert released.loc[1, "region"] == "B"


def test_pram_and_swap_counts_put_back_the_swapped_values_only():
    """PRAM of age after the swap: its M_jj multiplies, its values are counted as released."""
    before, after, step, entries = _thinned()
    released = after.assign(age=list("1122322"))  # PRAM moved record 5's age 1 -> 2
    pram_keep = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3])
    entries = entries + [{"step": 2, "name": "pram", "columns": ["age"],
                          "keep": {"age": pram_keep}}]
    keep, block = _misclassification([step, {"step": "pram", "columns": ["age"]}], entries,
                                     released)
    np.testing.assert_allclose(keep, pram_keep * [1, 0, 0, 1, 1, 1, 1])
    counts = _pre_swap_counts(entries, released, block)
    pd.testing.assert_frame_equal(counts, before.assign(age=released["age"]))
    out, _ = _risk(released, ["region", "age"], "w", 3, keep=keep, frequencies=counts)
    # counted: (A,1) f=2, (B,2) f=2, (C,3) 1, (C,2) f=2 (records 5 and 6)
    r = np.array([1 / 2, 1 / 2, 1 / 2, 1 / 2, 1, 1 / 2, 1 / 2])
    assert out["expected_reidentifications"] == pytest.approx(float((keep * r).sum()),
                                                              rel=1e-12)


@pytest.mark.parametrize("later, fragment", [
    ({"step": "recode", "column": "region", "mapping": {"A": "AB", "B": "AB"}},
     "step 2 (recode) changes 'region' after swap step 1"),
    ({"step": "pram", "columns": ["region"]}, "step 2 (pram) changes 'region' after swap step 1"),
    ({"step": "swap", "hierarchy": ["region"], "carry_along": []},
     "step 2 (swap) changes 'region' after swap step 1"),
])
def test_a_later_step_changing_a_swapped_key_is_not_adjusted(later, fragment):
    before, after = _before_after()
    step, entries = _swap_entry(before, after, ["region", "age"])
    keep, block = _misclassification([step, later], entries, after)
    assert keep is None and fragment in block["not_adjusted_because"]
    assert block["method"] == "none: the risk after reads the swapped keys as true"


# --------------------------------------------------------------------------- brute force


def _population(rng, n_pop=10_000):
    """6 regions x 6 ages x 2 sexes x 3 jobs, cell sizes very skewed (Dirichlet 0.05)."""
    shape = (6, 6, 2, 3)
    p = rng.dirichlet(np.full(int(np.prod(shape)), 0.05))
    r, a, s, j = np.unravel_index(rng.choice(p.size, n_pop, p=p), shape)
    return pd.DataFrame({"region": [f"R{x}" for x in r], "age": a.astype(str),
                         "sex": s.astype(str), "job": j.astype(str)})


def _brute_force(reps, seed=20100922, fraction=0.02):
    """Per draw of an SRS and of a swap of its region: the truth and the closed forms.

    truth: Σ_i 1[x̃_i = x_i] / F_{x̃_i}, F the population's true counts (one-person
    households, so a swapped record's region is another's). adjusted / unadjusted: the
    released file's closed-form ER with / without protect's swap factor. own: the closed
    form on the sample's true values times the same factor (the rule with the closed
    form's own estimate of 1/F); released: the adjusted ER with r_i counted on the
    released cells (summary.json's ``adjusted_on_released_counts``); cf0, truth0: the
    unswapped sample's closed form and truth.
    """
    rng = np.random.default_rng(seed)
    pop = _population(rng)
    keys = ["region", "age", "sex", "job"]
    counts = pop.groupby(keys).size()
    n = int(fraction * len(pop))
    step = {"step": "swap", "hierarchy": ["region"], "carry_along": []}
    rows = []
    for _ in range(reps):
        smp = pop.iloc[rng.choice(len(pop), n, replace=False)].reset_index(drop=True)
        smp = smp.assign(hid=np.arange(n), hs=1, w=len(pop) / n)
        res = record_swap(smp, household="hid", hierarchy=["region"], similar="hs",
                          risk_variables=["age", "sex", "job"], swap_rate=0.2, k_anonymity=1,
                          seed=rng)
        entries = _key_keep_probabilities(1, step, smp, res, keys)
        keep, block = _misclassification([step], entries, res.frame)
        after, _ = _risk(res.frame, keys, "w", 3, keep=keep,
                         frequencies=_pre_swap_counts(entries, res.frame, block))
        own, _ = _risk(smp, keys, "w", 3, keep=keep)
        kept = (res.frame["region"] == smp["region"]).to_numpy()
        f_rel = counts.reindex(pd.MultiIndex.from_frame(res.frame[keys])).fillna(np.inf)
        f_true = counts.reindex(pd.MultiIndex.from_frame(smp[keys]))
        rows.append((np.sum(kept / f_rel.to_numpy()), after["expected_reidentifications"],
                     after["misclassification"]["unadjusted"]["expected_reidentifications"],
                     own["expected_reidentifications"],
                     own["misclassification"]["unadjusted"]["expected_reidentifications"],
                     np.sum(1 / f_true.to_numpy()),
                     after["misclassification"]["adjusted_on_released_counts"][
                         "expected_reidentifications"]))
    return pd.DataFrame(rows, columns=["truth", "adjusted", "unadjusted", "own", "cf0",
                                       "truth0", "released"])


def _check_brute_force(d: pd.DataFrame) -> dict[str, float]:
    """The brute force's assertions; returns the means and the bound for the record."""
    se = d.std(ddof=1) / np.sqrt(len(d))

    def paired(a, b):  # mean and standard error of a paired difference
        x = d[a] - d[b]
        return x.mean(), x.std(ddof=1) / np.sqrt(len(d))

    # where the closed form itself is good (Monte-Carlo error of its own truth, 4 SE plus
    # 5% for the estimator's bias: a two-sided 6e-5 chance under normality, fixed seed) ...
    m0, e0 = paired("cf0", "truth0")
    assert abs(m0) <= 4 * e0 + 0.05 * d["truth0"].mean()
    # ... the rule, the closed form times 1[x̃_i = x_i], is the truth within that error
    m, e = paired("own", "truth")
    assert abs(m) <= 4 * e + 0.05 * d["truth"].mean()
    # one-person households, nothing blanked: the pre-swap cells protect counts are the
    # sample's true ones, so its adjusted ER is that rule's, draw by draw
    np.testing.assert_allclose(d["adjusted"], d["own"], rtol=1e-9)
    # so it is the truth within Monte-Carlo error (4 SE of the paired difference) plus the
    # closed form's own error on the unswapped file (its measured bias, itself up to 4 SE)
    m, e = paired("adjusted", "truth")
    bound = 4 * e + abs(m0) + 4 * e0
    assert abs(m) <= bound
    # read as true, the swapped records' risks more than double the truth
    assert d["unadjusted"].mean() > 2 * d["truth"].mean() + 4 * se["unadjusted"]
    # counted on the released cells the adjusted ER overstates it (the swap thins the rare
    # cells of the records left in place): beyond the Monte-Carlo error and the bound
    m_rel, e_rel = paired("released", "truth")
    assert m_rel > 4 * e_rel and m_rel > bound
    return d.mean().to_dict() | {"bound": bound, "se_adjusted_minus_truth": e}


def test_adjusted_risk_against_brute_force_correct_matches():
    print({k: round(float(v), 4) for k, v in
           _check_brute_force(_brute_force(reps=120)).items()})


@pytest.mark.slow
def test_adjusted_risk_against_brute_force_correct_matches_many_draws():
    print({k: round(float(v), 4) for k, v in
           _check_brute_force(_brute_force(reps=1000, seed=7)).items()})


# --------------------------------------------------------------------------- the CLI


def _recipe(tmp_path, *later):
    steps = [{"step": "swap", "hierarchy": ["region", "district"], "similar": "hsize",
              "swap_rate": 0.5, "k": 1}, *later]
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps({"seed": 1, "steps": steps}))
    return path


def _protect_recipe(capsys, tmp_path, data, recipe):
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(data), "--keys", KEYS, "--weight", "w",
                          "--household", "hid", "--recipe", str(recipe), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return proc, out


def test_protect_swap_then_pram_multiplies_the_factors(capsys, tmp_path, hand_csv,
                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc, out = _protect_recipe(capsys, tmp_path, hand_csv, _recipe(
        tmp_path, {"step": "pram", "columns": ["age"], "pd": 0.6}))
    frame, released = _hand_frame(), pd.read_csv(out / "protected.csv")
    swap = (released["region"] == frame["region"]).to_numpy()
    pram = keep_probability(released, pd.read_csv(out / "pram_matrices.csv"))
    assert (~swap).any() and (pram < 1).any()
    risk = _assessed_risk(capsys, released, tmp_path)
    # the counts: the swapped region put back, the PRAMmed age as released
    counted = _assessed_risk(capsys, released.assign(region=frame["region"]), tmp_path)
    after = json.loads((out / "summary.json").read_text())["risk"]["after"]
    assert after["expected_reidentifications"] == pytest.approx(
        float((pram * swap * counted).sum()), rel=1e-9)
    mis = after["misclassification"]
    assert mis["adjusted_on_released_counts"]["expected_reidentifications"] == pytest.approx(
        float((pram * swap * risk).sum()), rel=1e-9)
    assert mis["swapped_records"] == int((~swap).sum())
    assert mis["unadjusted"]["expected_reidentifications"] == pytest.approx(risk.sum(),
                                                                             rel=1e-9)
    line = [ln for ln in proc.stdout.splitlines() if MISCLASSIFICATION_METHOD in ln]
    assert len(line) == 1
    assert f"{int((~swap).sum()):,} records made non-matching by swap step 1" in line[0]
    assert "(they read the PRAMmed and swapped values)" in proc.stdout


def test_protect_recode_after_swap_reads_the_swapped_key_as_true(capsys, tmp_path,
                                                                 hand_csv, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc, out = _protect_recipe(capsys, tmp_path, hand_csv, _recipe(
        tmp_path, {"step": "recode", "column": "region", "mapping": {"R1": "R12",
                                                                     "R2": "R12"}}))
    after = json.loads((out / "summary.json").read_text())["risk"]["after"]
    reason = after["misclassification"]["not_adjusted_because"]
    assert reason.startswith("step 2 (recode) changes 'region' after swap step 1")
    risk = _assessed_risk(capsys, pd.read_csv(out / "protected.csv"), tmp_path)
    assert after["expected_reidentifications"] == pytest.approx(risk.sum(), rel=1e-9)
    assert f"risk after: reads the swapped keys as true ({reason})" in proc.stdout
    assert "not adjusted for the swap" in html.unescape((out / "report.html").read_text())


def test_protect_swap_of_no_key_leaves_the_risk_unadjusted(capsys, tmp_path, hand_csv,
                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "o"
    proc = run_in_process(capsys, "protect", str(hand_csv), "--keys", "age,sex", "--weight",
                          "w", "--household", "hid", "--swap", "region,district",
                          "--swap-similar", "hsize", "--swap-rate", "0.5", "--swap-k", "1",
                          "--seed", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    after = json.loads((out / "summary.json").read_text())["risk"]["after"]
    assert "misclassification" not in after and SWAP_RISK_METHOD not in proc.stdout
    risk = _assessed_risk(capsys, pd.read_csv(out / "protected.csv"), tmp_path, keys="age,sex")
    assert after["expected_reidentifications"] == pytest.approx(risk.sum(), rel=1e-9)
