"""Targeted record swapping (sdcbayes.protection.swapping.record_swap, sdcMicro's recordSwap).

Every check recounts from the frames (pandas groupby), never copies numbers from
the implementation: invariants of a swap, the high-risk selection by brute force,
the swap-rate rounding rule, donors in another unit, seeds, and the input errors.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.protection import record_swap

HIER = ["region", "district"]
RISK_VARS = ["age_group", "sex"]


def households(n_hh: int = 240, seed: int = 0) -> pd.DataFrame:
    """Persons in households: region (3) > district (2 per region), household-level
    size and tenure, person-level age group and sex; ids are not contiguous numbers."""
    rng = np.random.default_rng(seed)
    size = rng.choice([1, 2, 3, 4], n_hh, p=[0.3, 0.3, 0.25, 0.15])
    region = rng.choice(["north", "south", "west"], n_hh, p=[0.5, 0.3, 0.2])
    district = np.array([f"{r}-{d}" for r, d in zip(region, rng.integers(0, 2, n_hh), strict=True)])
    tenure = rng.choice(["own", "rent"], n_hh)
    hh = np.repeat(np.arange(n_hh), size)
    n = hh.size
    return pd.DataFrame({
        "hid": 1000 + 7 * hh,
        "region": region[hh],
        "district": district[hh],
        "hsize": size[hh],
        "tenure": tenure[hh],
        "age_group": rng.choice(["0-17", "18-39", "40-64", "65+", "85+"], n,
                                p=[0.25, 0.3, 0.3, 0.13, 0.02]),
        "sex": rng.choice(["f", "m"], n),
        "income": rng.gamma(2.0, 1000.0, n),
    })


def hh_table(frame: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """One row per household: its id and the (household-level) columns."""
    return frame.groupby("hid", sort=True)[cols].first()


def brute_high_risk(frame: pd.DataFrame, k: int) -> dict[int, int]:
    """Household id -> coarsest level index at which a member is seen < k times in its unit."""
    out: dict[int, int] = {}
    for lv in range(len(HIER)):
        cnt = frame.groupby(HIER[: lv + 1] + RISK_VARS)["hid"].transform("size")
        for hid in frame.loc[cnt < k, "hid"].unique():
            out.setdefault(int(hid), lv)
    return out


def run(frame: pd.DataFrame, **kw):
    args = dict(household="hid", hierarchy=HIER, similar="hsize", risk_variables=RISK_VARS,
                swap_rate=0.1, k_anonymity=3, seed=7)
    args.update(kw)
    return record_swap(frame, **args)


def test_invariants_of_a_swap():
    frame = households()
    before = frame.copy(deep=True)
    res = run(frame)
    out = res.frame
    pd.testing.assert_frame_equal(frame, before)  # input untouched
    # every non-geographic column is unchanged, value by value
    other = [c for c in frame.columns if c not in HIER]
    pd.testing.assert_frame_equal(out[other], frame[other])
    # members of a household still share one geography
    assert (out.groupby("hid")[HIER].nunique() == 1).all().all()
    # households per (unit, similar value) unchanged: swaps exchange equal profiles
    t0 = hh_table(frame, HIER + ["hsize"]).value_counts().sort_index()
    t1 = hh_table(out, HIER + ["hsize"]).value_counts().sort_index()
    pd.testing.assert_series_equal(t0, t1)
    # and persons per unit too
    pd.testing.assert_series_equal(frame[HIER].value_counts().sort_index(),
                                   out[HIER].value_counts().sort_index())
    # the swapped households are exactly those whose geography changed
    g0, g1 = hh_table(frame, HIER), hh_table(out, HIER)
    changed = set(g0.index[(g0 != g1).any(axis=1)])
    assert changed == set(res.log["household"])
    assert res.summary["swapped_households"] == len(changed) == 2 * res.summary["swapped_pairs"]
    assert res.summary["swapped_records"] == int(frame["hid"].isin(changed).sum())
    assert res.summary["households"] == frame["hid"].nunique()


def test_log_pairs_donors_in_another_unit():
    frame = households()
    res = run(frame)
    log = res.log.set_index("household")
    g0, g1 = hh_table(frame, HIER + ["hsize"]), hh_table(res.frame, HIER)
    assert res.summary["swapped_pairs"] > 0
    for hid, row in log.iterrows():
        partner = row["partner"]
        assert log.loc[partner, "partner"] == hid  # symmetric
        assert {row["role"], log.loc[partner, "role"]} == {"selected", "donor"}
        # new geography = partner's old one, logged as such
        assert tuple(g1.loc[hid]) == tuple(g0.loc[partner, HIER])
        assert [row[f"{c}_original"] for c in HIER] == list(g0.loc[hid, HIER])
        assert [row[f"{c}_released"] for c in HIER] == list(g1.loc[hid])
        # different unit at the level of the swap, same similarity value
        lv = HIER.index(row["level"])
        assert tuple(g0.loc[hid, HIER[: lv + 1]]) != tuple(g0.loc[partner, HIER[: lv + 1]])
        assert g0.loc[hid, "hsize"] == g0.loc[partner, "hsize"]
    # pairs adjacent, selected first
    roles = res.log["role"].tolist()
    assert roles[0::2] == ["selected"] * (len(roles) // 2)


def test_high_risk_selection_brute_force():
    frame = households(n_hh=150, seed=3)
    truth = brute_high_risk(frame, k=3)
    assert truth and set(truth.values()) == {0, 1}  # both levels occur in this frame
    res = run(frame, swap_rate=0.0)
    s = res.summary
    assert s["high_risk_households"] == len(truth)
    assert s["high_risk_by_level"] == {
        c: sum(v == i for v in truth.values()) for i, c in enumerate(HIER)}
    log = res.log.set_index("household")
    # the log's flag is the brute-force membership
    assert {h: h in truth for h in log.index} == log["high_risk"].to_dict()
    # with swap_rate 0 only high-risk households are selected ...
    assert set(log.index[log["role"] == "selected"]) <= set(truth)
    # ... and every high-risk household is swapped across its level, or reported
    g0, g1 = hh_table(frame, HIER), hh_table(res.frame, HIER)
    lost = set(s["no_donor_households"])
    for hid, lv in truth.items():
        if hid in lost:
            assert tuple(g0.loc[hid]) == tuple(g1.loc[hid])
            continue
        assert hid in log.index
        assert tuple(g0.loc[hid, HIER[: lv + 1]]) != tuple(g1.loc[hid, HIER[: lv + 1]])
    assert s["n_no_donor"] == len(lost)


@pytest.mark.parametrize("rate", [0.05, 0.1, 0.25])
def test_swap_rate_rounding_rule(rate):
    # k = 1: no high-risk household; ceil(H * rate / 2) selections, each with a donor,
    # so the households swapped are 2 * ceil(H * rate / 2), in [H * rate, H * rate + 2)
    frame = households(n_hh=400, seed=1)
    res = run(frame, k_anonymity=1, swap_rate=rate)
    n_hh = frame["hid"].nunique()
    g0, g1 = hh_table(frame, HIER), hh_table(res.frame, HIER)
    swapped = int((g0 != g1).any(axis=1).sum())
    assert res.summary["n_no_donor"] == 0
    assert swapped == 2 * math.ceil(n_hh * rate / 2)
    assert n_hh * rate <= swapped < n_hh * rate + 2
    assert res.summary["high_risk_households"] == 0
    assert res.summary["swap_rate_achieved"] == pytest.approx(swapped / n_hh)


def test_rate_reached_past_a_drawn_household_without_donor():
    # household 5 (size 9, none elsewhere) carries nearly all the risk weight, so the
    # rate draws it first; it finds no donor, and the next drawn household takes its place
    frame = households(n_hh=200, seed=9)
    big = pd.DataFrame({"hid": 5, "region": "north", "district": "north-0", "hsize": 9,
                        "tenure": "own", "age_group": "85+", "sex": "f", "income": 1.0},
                       index=range(9))
    frame = pd.concat([frame, big], ignore_index=True)
    risk = np.where(frame["hid"] == 5, 0.5, 1e-9)
    res = record_swap(frame, household="hid", hierarchy=HIER, similar="hsize", risk=risk,
                      risk_threshold=0.9, swap_rate=0.1, seed=2)
    n_hh = frame["hid"].nunique()
    assert res.summary["no_donor_households"] == [5]
    assert res.summary["n_no_donor_high_risk"] == 0
    g0, g1 = hh_table(frame, HIER), hh_table(res.frame, HIER)
    assert int((g0 != g1).any(axis=1).sum()) == 2 * math.ceil(n_hh * 0.1 / 2)


def test_high_risk_swapped_beyond_the_rate():
    frame = households(n_hh=200, seed=2)
    truth = brute_high_risk(frame, k=3)
    res = run(frame, swap_rate=0.02)
    swapped_or_lost = set(res.log["household"]) | set(res.summary["no_donor_households"])
    assert set(truth) <= swapped_or_lost
    assert res.summary["swapped_households"] > 0.02 * frame["hid"].nunique()


def test_nothing_to_do():
    frame = households(n_hh=60)
    res = run(frame, k_anonymity=1, swap_rate=0.0)
    pd.testing.assert_frame_equal(res.frame, frame)
    assert res.log.empty and res.summary["swapped_households"] == 0


def test_seeds():
    frame = households()
    a, b, c = run(frame, seed=11), run(frame, seed=11), run(frame, seed=12)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    pd.testing.assert_frame_equal(a.log, b.log)
    assert not a.log.equals(c.log)
    # an unseeded run records the seed it drew; passing it back repeats the run
    d = run(frame, seed=None)
    e = run(frame, seed=d.summary["seed"])
    pd.testing.assert_frame_equal(d.frame, e.frame)


def test_sampling_follows_the_risk():
    # user risk 0 for half the households: the rate never selects them while
    # households of positive risk remain in the unit (keys w/E with w = 0 come last)
    frame = households(n_hh=300, seed=4)
    hh_risk = (frame["hid"] // 7) % 2 * 0.5  # 0 or 0.5 per household
    res = record_swap(frame, household="hid", hierarchy=HIER, similar="hsize",
                      risk=hh_risk.to_numpy(), risk_threshold=0.9, swap_rate=0.1, seed=3)
    selected = res.log.loc[res.log["role"] == "selected", "household"]
    assert len(selected) > 0
    assert ((selected // 7) % 2 == 1).all()
    assert res.summary["high_risk_households"] == 0


def test_user_risk_threshold_swaps_across_the_coarsest_level():
    frame = households(n_hh=200, seed=5)
    risky_ids = frame["hid"].drop_duplicates().iloc[::20]
    risk = np.where(frame["hid"].isin(risky_ids), 0.8, 0.01)
    res = record_swap(frame, household="hid", hierarchy=HIER, similar="hsize", risk=risk,
                      risk_threshold=0.5, swap_rate=0.0, seed=1)
    assert res.summary["high_risk_households"] == len(risky_ids)
    g0, g1 = hh_table(frame, HIER), hh_table(res.frame, HIER)
    for hid in risky_ids:
        assert g0.loc[hid, "region"] != g1.loc[hid, "region"]
    # donors are drawn in proportion to risk too, so a risky household is often the
    # donor of another: only risky households are selected, all across regions
    sel = res.log[res.log["role"] == "selected"]
    assert set(sel["household"]) <= set(risky_ids) <= set(res.log["household"])
    assert (res.log["level"] == "region").all()


def test_similarity_profiles_and_no_donor():
    frame = households(n_hh=200, seed=6)
    # one household of size 9 in north: no household of that size elsewhere; a member of
    # an age group of its own makes it high-risk, so it is selected whatever the draw
    big = pd.DataFrame({"hid": 5, "region": "north", "district": "north-0", "hsize": 9,
                        "tenure": "own", "age_group": ["100+"] + ["85+"] * 8, "sex": "f",
                        "income": 1.0}, index=range(9))
    frame = pd.concat([frame, big], ignore_index=True)
    res = run(frame, similar=[["hsize", "tenure"]], swap_rate=0.3)
    assert 5 in res.summary["no_donor_households"]
    assert res.summary["n_no_donor"] == len(res.summary["no_donor_households"])
    assert 5 not in set(res.log["household"])
    assert (res.frame.loc[frame["hid"] == 5, HIER] == frame.loc[frame["hid"] == 5, HIER]).all(
        axis=None)
    # both profile columns shared by every pair under the first profile
    h0 = hh_table(frame, ["hsize", "tenure"])
    pairs = res.log[res.log["role"] == "selected"]
    assert (pairs["profile"] == 0).all()
    for hid, partner in zip(pairs["household"], pairs["partner"], strict=True):
        assert tuple(h0.loc[hid]) == tuple(h0.loc[partner])
    # a fall-back profile: (hsize, tenure), then hsize, then tenure (size 9 finds a donor)
    res2 = run(frame, similar=[["hsize", "tenure"], ["hsize"], ["tenure"]], swap_rate=0.3)
    log2 = res2.log.set_index("household")
    assert 5 in log2.index and log2.loc[5, "profile"] == 2
    assert h0.loc[log2.loc[5, "partner"], "tenure"] == "own"


def test_carry_along_moves_with_the_geography():
    frame = households(n_hh=200, seed=8)
    frame["cell"] = frame["district"] + "/" + (frame["hid"] % 3).astype(str)
    res = run(frame, carry_along=["cell"])
    cols = HIER + ["cell"]
    t0 = hh_table(frame, cols).value_counts().sort_index()
    t1 = hh_table(res.frame, cols).value_counts().sort_index()
    pd.testing.assert_series_equal(t0, t1)  # coherent combinations, permuted
    # without carry_along the cell stays and no longer matches the district
    res2 = run(frame)
    assert (res2.frame["cell"] == frame["cell"]).all()


@pytest.mark.parametrize("change, match", [
    (dict(hierarchy=["region", "county"]), r"hierarchy \['county'\] not found"),
    (dict(household="hh"), r"household 'hh' not found"),
    (dict(risk_variables=["age"]), r"risk_variables \['age'\] not found"),
    (dict(swap_rate=1.5), r"swap_rate=1.5 must be a number in \[0, 1\]"),
    (dict(swap_rate=-0.1), r"swap_rate=-0.1 must be a number in \[0, 1\]"),
    (dict(k_anonymity=0), r"k_anonymity=0 must be an integer >= 1"),
    (dict(hierarchy=[]), r"hierarchy is empty"),
    (dict(similar=["hsize", "region"]), r"\['region'\] is in both hierarchy and similar"),
    (dict(risk=np.zeros(5), risk_variables=None), r"risk has shape \(5,\).*one risk per record"),
    (dict(risk_variables=None), r"needs risk_variables .* or a per-record risk"),
])
def test_errors(change, match):
    with pytest.raises(InputError, match=match):
        run(households(n_hh=30), **change)


def test_error_missing_household_ids():
    frame = households(n_hh=30).astype({"hid": "float"})
    frame.loc[[0, 3], "hid"] = np.nan
    with pytest.raises(InputError, match=r"'hid' has 2 missing id\(s\)"):
        run(frame)


def test_error_not_household_level():
    frame = households(n_hh=30)
    multi = frame.groupby("hid")["hid"].transform("size") > 1
    first_rows = frame.index[multi & ~frame.duplicated("hid")][:2]
    frame.loc[first_rows, "district"] = "elsewhere"
    with pytest.raises(InputError, match=r"hierarchy column 'district' differs between "
                                         r"members of 2 household\(s\)"):
        run(frame)
    frame = households(n_hh=30)
    frame.loc[first_rows[:1], "hsize"] = 99
    with pytest.raises(InputError, match=r"similar column 'hsize' differs between members "
                                         r"of 1 household\(s\)"):
        run(frame)


def test_errors_before_any_work(monkeypatch):
    # a bad argument is refused before the seed is drawn or a count is made
    import sdcbayes.protection.swapping as mod

    def boom(*args, **kwargs):
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(mod, "seeded_rng", boom)
    with pytest.raises(InputError):
        run(households(n_hh=30), swap_rate=2.0)


# --------------------------------------------------------------------------- audit AU F3, F4, F8


class _CountingQueue:
    """A donor queue that counts the entries read (the work of the donor searches)."""

    def __init__(self, arr: np.ndarray, counter: list[int]) -> None:
        self.arr, self.counter = arr, counter

    def __getitem__(self, i):
        self.counter[0] += 1
        return self.arr[i]


def dominant_unit(n_hh: int = 1200, seed: int = 0) -> pd.DataFrame:
    """Single-level geography: 95% of the households in region A, the rest in B."""
    rng = np.random.default_rng(seed)
    size = rng.choice([1, 2, 3, 4], n_hh)
    region = np.where(rng.random(n_hh) < 0.95, "A", "B")
    hh = np.repeat(np.arange(n_hh), size)
    return pd.DataFrame({"hid": hh, "region": region[hh], "hsize": size[hh],
                         "age_group": rng.choice(["0-17", "18-64", "65+"], hh.size),
                         "sex": rng.choice(["f", "m"], hh.size)})


def test_dominant_unit_searches_each_key_once_and_reports_selected_only(monkeypatch):
    # A's quota (about 285 selections) far exceeds B's households (about 60), so A runs
    # out of donors: every later draw of A would fail. Each (size, unit) search must scan
    # its queue once, not once per household (the audit's 45 s on 40k households), and
    # the draws passed over are not reported as selected households without a donor.
    import sdcbayes.protection.swapping as mod

    frame = dominant_unit()
    reads = [0]
    original = mod._Swaps.start_level

    def counting_start(self, lv, unit, weight):
        original(self, lv, unit, weight)
        self.queues = [(_CountingQueue(q[0], reads), *q[1:]) for q in self.queues]

    monkeypatch.setattr(mod._Swaps, "start_level", counting_start)
    res = record_swap(frame, household="hid", hierarchy="region", similar="hsize",
                      risk_variables=RISK_VARS, swap_rate=0.5, k_anonymity=1, seed=4)
    s = res.summary
    hh = frame.drop_duplicates("hid").set_index("hid")
    n_hh, n_b = len(hh), int((hh["region"] == "B").sum())
    # linear work: each (size, unit) queue scanned once (2 units), plus the heads and one
    # re-read per search; quadratic work (every failing draw rescanning) is ~50x this
    assert reads[0] <= 6 * n_hh
    # two regions: every pair has one household in B, and A's draws use up all of B
    assert s["swapped_pairs"] == n_b
    # selections: ceil(H rate / 2); those neither made nor failed are the unfilled ones
    total = math.ceil(n_hh * 0.5 / 2)
    assert s["target_households"] == 2 * total
    assert s["unfilled_selections"] == total - n_b
    # at most the first failure per (size, unit) is reported: here only A's, four sizes
    lost = hh.loc[s["no_donor_households"]]
    assert 0 < s["n_no_donor"] <= hh["hsize"].nunique()
    assert (lost["region"] == "A").all() and lost["hsize"].is_unique
    assert s["n_no_donor"] <= total  # selected households, not the whole unit


def test_the_rate_never_draws_a_household_of_risk_zero():
    # 200 persons living alone in 4 units; 4 households of risk > 0, all in unit a. The
    # quota (50 selections) exceeds them: the rest stay unmade, not filled with risk 0
    n = 200
    frame = pd.DataFrame({"hid": np.arange(n), "geo": np.repeat(["a", "b", "c", "d"], n // 4),
                          "size": 1})
    risk = np.zeros(n)
    risk[:4] = 0.5
    res = record_swap(frame, household="hid", hierarchy="geo", similar="size", risk=risk,
                      risk_threshold=0.9, swap_rate=0.5, seed=0)
    selected = res.log.loc[res.log["role"] == "selected", "household"].astype(int)
    assert set(selected) == {0, 1, 2, 3}  # each finds a donor of size 1 in another unit
    assert res.summary["n_no_donor"] == 0
    assert res.summary["unfilled_selections"] == math.ceil(n * 0.5 / 2) - 4
    # risk 0 may still be a donor: the partners have risk 0
    donors = res.log.loc[res.log["role"] == "donor", "household"].astype(int)
    assert (risk[donors] == 0).all()


def test_an_empty_frame_is_refused():
    with pytest.raises(InputError, match=r"the frame has no records"):
        run(households(n_hh=30).iloc[:0])


def test_target_households_at_most_the_households():
    # swap_rate 1 with 5 households: 3 selections would be 6 households; 5 exist
    frame = pd.DataFrame({"hid": np.arange(5), "geo": ["a", "b", "a", "b", "a"], "size": 1,
                          "x": np.arange(5)})
    res = record_swap(frame, household="hid", hierarchy="geo", similar="size",
                      risk_variables="x", swap_rate=1.0, k_anonymity=1, seed=0)
    assert res.summary["target_households"] == 5
    assert res.summary["swapped_households"] <= 5


def test_result_does_not_depend_on_row_order():
    # households are coded in sorted id order: shuffled rows, same seed, same swaps
    frame = households(n_hh=300, seed=12)
    shuffled = frame.sample(frac=1.0, random_state=3)
    a, b = run(frame, seed=5), run(shuffled, seed=5)
    pd.testing.assert_frame_equal(b.frame.loc[frame.index], a.frame)
    pd.testing.assert_frame_equal(a.log, b.log)
    assert a.summary["no_donor_households"] == b.summary["no_donor_households"]
