"""Fixes from audit Y of the public Python API (FINDINGS.md, findings 3, 4, 6, 7 and 9).

3. A frame whose index repeats a label was accepted by ``Microdata``; ``records`` (indexed
   like the frame) then joined to 3910 rows for 3908 records and changed the summed risk.
   It is refused now, naming the labels and the fix. The protection methods and ``suda``
   pair records by position (their ``record`` numbers), so they stay right on such a frame.
4. ``seed=``/``rng=`` given to ``fit``/``assess_posterior`` were pointed to 'shared' (or
   crashed inside NUTS); random protection methods called with ``seed=None`` neither
   recorded the seed they drew nor could be repeated.
6. ``ProtectionResult`` and ``SudaResult`` carried no provenance stamp.
7. ``suda`` and ``linkage_risk`` treated a pyarrow Table (or polars frame) as a bare array.
9. "first at record 3" gave a row position that ``.loc`` reads as another record when the
   index is not ``0..n-1``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sdcbayes import Microdata
from sdcbayes import protection as P
from sdcbayes._version import __version__
from sdcbayes.exceptions import DataError, InputError
from sdcbayes.protection.base import ProtectionResult, seeded_rng
from sdcbayes.risk.linkage import linkage_risk
from sdcbayes.risk.suda import SudaResult, suda


def _frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.choice(["0-19", "20-39", "40-59", "60+"], n),
        "sex": rng.choice(["f", "m"], n),
        "region": rng.choice([f"R{i}" for i in range(6)], n),
        "marital": rng.choice(["single", "married", "widowed"], n),
        "income": rng.gamma(2.0, 1000.0, n),
        "height": rng.normal(170.0, 10.0, n),
        "w": rng.uniform(5.0, 50.0, n),
    })


KEYS = ["age", "sex", "region"]


# ---------------------------------------------------------------- finding 3: duplicate index


def test_duplicated_index_label_is_refused_with_the_labels_and_the_fix():
    frame = _frame()
    frame.index = np.r_[np.arange(len(frame) - 2), 0, 5]  # as after pd.concat
    with pytest.raises(DataError) as err:
        Microdata(frame, keys=KEYS, weight="w")
    msg = str(err.value)
    assert "repeats 2 label(s) (0, 5)" in msg, msg
    assert "frame.reset_index(drop=True)" in msg and "set_index" in msg, msg


def test_duplicated_multiindex_label_is_refused_and_a_unique_one_joins_exactly():
    from sdcbayes.risk import assess_closed_form

    frame = _frame(n=60)
    frame.index = pd.MultiIndex.from_arrays([np.repeat(["a", "b"], 30), np.tile(range(30), 2)])
    md = Microdata(frame, keys=KEYS, weight="w")  # unique: accepted
    closed = assess_closed_form(md)
    joined = frame.join(closed.records[["risk"]])
    assert len(joined) == len(frame)
    assert joined["risk"].sum() == pytest.approx(closed.summary["expected_reidentifications"])
    dup = frame.copy()
    dup.index = pd.MultiIndex.from_arrays([["a"] * 60, [0] * 2 + list(range(58))])
    with pytest.raises(DataError, match=r"repeats 1 label\(s\) \(\('a', 0\)\)"):
        Microdata(dup, keys=KEYS, weight="w")


def test_duplicated_index_refused_before_any_work(monkeypatch):
    import sdcbayes.microdata as m

    def boom(*a, **k):  # coding a key is work: the check must come first
        raise AssertionError("keys coded before the index was checked")

    monkeypatch.setattr(m, "_code_column", boom)
    frame = _frame(n=20)
    frame.index = [0] * 20
    with pytest.raises(DataError, match="repeats 1 label"):
        Microdata(frame, keys=KEYS)


@pytest.mark.parametrize("name, call", [
    ("local_suppression", lambda f: P.local_suppression(f, KEYS, k=3)),
    ("invariant_pram", lambda f: P.invariant_pram(f, ["sex", "marital"], strata="age", seed=7)),
    ("nayak_zhang_pram", lambda f: P.nayak_zhang_pram(f, KEYS + ["marital"], seed=7)),
    ("mdav", lambda f: P.mdav(f, ["income", "height"], k=3)),
    ("add_noise", lambda f: P.add_noise(f, ["income"], seed=7)),
    ("top_code", lambda f: P.top_code(f, "income", 3000.0)),
    ("merge_levels", lambda f: P.merge_levels(f, "marital", {"widowed": "single"})),
])
def test_protection_pairs_records_by_position_on_a_duplicated_index(name, call):
    # Protection keeps the input's index and logs row positions: a repeated label changes
    # nothing (so it needs no refusal), the frame is returned with the labels as given.
    frame = _frame()
    dup = frame.copy()
    dup.index = np.r_[[9, 9], np.arange(len(frame) - 2)[::-1]]
    plain, odd = call(frame), call(dup)
    assert odd.frame.index.equals(dup.index), name
    assert odd.frame.reset_index(drop=True).equals(plain.frame.reset_index(drop=True)), name
    assert odd.log.equals(plain.log), name


def test_suda_pairs_records_by_position_on_a_duplicated_index():
    frame = _frame()
    dup = frame.copy()
    dup.index = [1] * len(frame)
    a, b = suda(frame, keys=KEYS), suda(dup, keys=KEYS)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert b.contributions.index.equals(pd.RangeIndex(len(frame), name="record"))


# ---------------------------------------------------------------- finding 9: row vs label


def test_weight_message_gives_row_and_index_label_when_labels_are_not_positions():
    frame = _frame(n=30)
    frame.index = frame.index + 1000
    frame.loc[1003, "w"] = -1.0
    with pytest.raises(DataError, match=r"at record 4, counting from 1 \(index label 1003\): -1\)"):
        Microdata(frame, keys=KEYS, weight="w")
    frame.index = [f"id{i}" for i in range(30)]
    with pytest.raises(DataError,
                       match=r"at record 4, counting from 1 \(index label 'id3'\): -1\)"):
        Microdata(frame, keys=KEYS, weight="w")


def test_every_positional_message_names_the_label():
    base = _frame(n=30)
    base.index = np.arange(30, dtype=np.int64) * 10  # an Index of int64, not a RangeIndex
    cases = []
    f = base.copy()
    f.loc[50, "w"] = np.nan
    cases.append((f, {"weight": "w"}, "missing or non-finite value (at record 6, "
                                     "counting from 1 (index label 50))"))
    f = base.copy()
    f["w"] = f["w"].astype(object)
    f.loc[70, "w"] = "n/a"
    cases.append((f, {"weight": "w"}, "at record 8, counting from 1 (index label 70): 'n/a'"))
    f = base.copy()
    f.loc[20, "w"] = 0.5
    cases.append((f, {"weight": "w"},
                  "smallest 0.5 at record 3, counting from 1 (index label 20))"))
    f = base.copy()
    f["hid"] = np.arange(30.0)
    f.loc[40, "hid"] = np.nan
    cases.append((f, {"household": "hid"},
                  "missing id (at record 5, counting from 1 (index label 40))"))
    for frame, kw, text in cases:
        with pytest.raises(DataError) as err:
            Microdata(frame, keys=KEYS, **kw)
        assert text in str(err.value), str(err.value)
        assert "np.int64" not in str(err.value)


def test_default_index_keeps_the_record_wording():
    frame = _frame(n=30)
    frame.loc[3, "w"] = -1.0
    with pytest.raises(DataError, match=r"at record 4, counting from 1: -1\)"):
        Microdata(frame, keys=KEYS, weight="w")


# ---------------------------------------------------------------- finding 4: seeds


@pytest.mark.parametrize("spelling", ["seed", "rng"])
def test_fit_and_assess_posterior_point_seed_spellings_to_random_seed(spelling):
    from sdcbayes.inference import fit
    from sdcbayes.models.poisson_gamma import PoissonGammaModel
    from sdcbayes.risk.posterior_assess import assess_posterior

    md = Microdata(_frame(), keys=KEYS, weight="w")
    hint = f"unknown option(s) '{spelling}' (did you mean 'random_seed'?)"
    with pytest.raises(InputError) as err:
        fit(PoissonGammaModel.from_microdata(md), **{spelling: 1})
    assert hint in str(err.value) and "shared" not in str(err.value), str(err.value)
    with pytest.raises(InputError) as err:
        assess_posterior(md, model="poisson-gamma", **{spelling: 1})
    assert hint in str(err.value), str(err.value)
    # the default model's Gibbs sampler takes the same hint (not its option list)
    md_lc = Microdata(_frame(), keys=KEYS, weight="w", missing="category")
    with pytest.raises(InputError) as err:
        assess_posterior(md_lc, **{spelling: 1})
    assert hint in str(err.value), str(err.value)


RANDOM_METHODS = [
    ("add_noise", lambda f, s: P.add_noise(f, ["income", "height"], seed=s)),
    ("add_noise correlated",
     lambda f, s: P.add_noise(f, ["income", "height"], method="correlated", seed=s)),
    ("invariant_pram", lambda f, s: P.invariant_pram(f, ["sex", "marital"], seed=s)),
    ("invariant_pram strata",
     lambda f, s: P.invariant_pram(f, ["marital"], strata="region", seed=s)),
    ("nayak_zhang_pram", lambda f, s: P.nayak_zhang_pram(f, KEYS + ["marital"], seed=s)),
]


@pytest.mark.parametrize("name, call", RANDOM_METHODS)
def test_unseeded_protection_records_its_seed_and_the_seed_repeats_the_run(name, call):
    frame = _frame()
    first = call(frame, None)
    seed = first.summary["seed"]
    assert isinstance(seed, int) and seed >= 0, (name, seed)
    assert first.provenance["settings"]["seed"] == seed
    again = call(frame, seed)
    assert again.summary["seed"] == seed
    pd.testing.assert_frame_equal(again.frame, first.frame, check_exact=True)
    pd.testing.assert_frame_equal(again.log, first.log, check_exact=True)
    # the run is random at all: two unseeded calls draw different seeds and frames
    other = call(frame, None)
    assert other.summary["seed"] != seed
    assert not other.frame.equals(first.frame), name


@pytest.mark.parametrize("name, call", RANDOM_METHODS)
def test_given_seed_is_recorded_and_a_generator_records_none(name, call):
    frame = _frame()
    assert call(frame, 11).summary["seed"] == 11
    assert call(frame, np.int64(11)).summary["seed"] == 11
    assert type(call(frame, np.int64(11)).summary["seed"]) is int  # JSON-ready
    res = call(frame, np.random.default_rng(11))
    assert res.summary["seed"] is None and res.provenance["settings"]["seed"] is None


def test_seeded_rng_seed_sequence_and_bad_seed():
    rng, seed = seeded_rng(np.random.SeedSequence(123))
    assert seed == 123
    assert rng.random() == np.random.default_rng(123).random()
    child = np.random.SeedSequence(123).spawn(1)[0]
    assert seeded_rng(child)[1] is None  # its entropy alone would not rebuild it
    with pytest.raises(InputError, match="seed=-1 is not usable"):
        P.add_noise(_frame(), ["income"], seed=-1)


# ---------------------------------------------------------------- finding 6: provenance


DETERMINISTIC = [
    ("local_suppression", lambda f: P.local_suppression(f, KEYS, k=2), KEYS),
    ("mdav", lambda f: P.mdav(f, ["income", "height"], k=3), ["income", "height"]),
    ("sorted_microaggregation", lambda f: P.sorted_microaggregation(f, ["income"], k=3),
     ["income"]),
    ("merge_levels", lambda f: P.merge_levels(f, "marital", {"widowed": "single"}),
     ["marital"]),
    ("band", lambda f: P.band(f, "income", [0, 1000, 5000, 1e9]), ["income"]),
    ("top_code", lambda f: P.top_code(f, "income", 3000.0), ["income"]),
    ("bottom_code", lambda f: P.bottom_code(f, "income", 100.0), ["income"]),
]


@pytest.mark.parametrize("name, call, variables", DETERMINISTIC)
def test_every_protection_result_carries_a_provenance_stamp(name, call, variables):
    frame = _frame()
    res = call(frame)
    prov = res.provenance
    assert prov["sdcbayes_version"] == __version__
    assert prov["model"] == name
    assert prov["data"] == {"n_records": len(frame), "n_columns": frame.shape[1],
                            "variables": variables}
    assert "frame" not in prov["settings"]
    assert "seed" not in prov["settings"]  # deterministic: no seed to record
    assert set(prov["versions"]) >= {"python", "numpy", "pandas"}
    json.dumps(prov)  # serialisable as promised


def test_provenance_settings_are_the_arguments_with_defaults_and_the_seed_used():
    frame = _frame()
    res = P.invariant_pram(frame, "sex", alpha=0.3)
    settings = res.provenance["settings"]
    assert settings == {"columns": "sex", "pd_min": 0.8, "alpha": 0.3, "strata": None,
                        "matrices": None, "seed": res.summary["seed"], "max_levels": 1000}
    assert res.provenance["data"]["variables"] == ["sex"]
    noise = P.add_noise(frame, ["income"], 0.2, seed=5)
    assert noise.provenance["model"] == "add_noise"
    assert noise.provenance["settings"] == {"columns": ["income"], "level": 0.2,
                                            "method": "additive", "delta": 0.1, "p": 0.001,
                                            "seed": 5}


def test_protection_result_keeps_its_old_constructor_and_unpacking():
    res = ProtectionResult(pd.DataFrame({"a": [1]}), pd.DataFrame(), {"x": 1})
    assert res.provenance == {}
    frame, log = res
    assert frame.equals(pd.DataFrame({"a": [1]}))
    stamped = P.top_code(_frame(), "income", 3000.0)
    frame, log = stamped  # still two items: frame and log
    assert "provenance" not in repr(stamped)


def test_suda_result_carries_a_provenance_stamp():
    frame = _frame()
    res = suda(frame, keys=KEYS, max_size=2, dis_fraction=0.05, missing=-999)
    prov = res.provenance
    assert prov["sdcbayes_version"] == __version__ and prov["model"] == "suda"
    assert prov["data"] == {"n_records": len(frame), "keys": KEYS, "input_type": "DataFrame"}
    assert prov["settings"] == {"max_size": 2, "max_size_used": 2, "dis_fraction": 0.05,
                                "missing": [-999], "score_method": "elliot"}
    json.dumps(prov)
    assert "provenance" not in res.summary()  # summary.json's layout is unchanged
    # built by hand (older code): the new field has a default
    kw = {f: getattr(res, f) for f in SudaResult.__dataclass_fields__ if f != "provenance"}
    assert SudaResult(**kw).provenance == {}


# ---------------------------------------------------------------- finding 7: pyarrow tables


def test_suda_on_a_pyarrow_table_equals_the_pandas_result():
    import pyarrow as pa
    frame = _frame()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    want, got = suda(frame, keys=KEYS), suda(table, keys=KEYS)
    np.testing.assert_array_equal(got.scores, want.scores)
    np.testing.assert_array_equal(got.dis_scores, want.dis_scores)
    assert got.keys == KEYS and got.summary()["dis"] == want.summary()["dis"]
    assert got.provenance["data"]["input_type"] == "Table"


def test_linkage_risk_on_pyarrow_tables_equals_the_pandas_result():
    import pyarrow as pa
    frame = _frame()
    noisy = P.add_noise(frame, ["income", "height"], 0.5, seed=2).frame
    want = linkage_risk(frame, noisy, variables=["income", "height"], workers=1)
    got = linkage_risk(pa.Table.from_pandas(frame, preserve_index=False),
                       pa.Table.from_pandas(noisy, preserve_index=False),
                       variables=["income", "height"], workers=1)
    assert got.variables == ["income", "height"]  # the names were not ignored
    np.testing.assert_array_equal(got.rank, want.rank)
    np.testing.assert_array_equal(got.distance, want.distance)
    assert got.share_nearest == want.share_nearest
    # one string column named: the clear message, not a raw float conversion error
    with pytest.raises(InputError, match="'age' of the original file are not numeric"):
        linkage_risk(pa.Table.from_pandas(frame), pa.Table.from_pandas(frame), "age")


def test_protection_names_to_pandas_for_a_table():
    import pyarrow as pa
    with pytest.raises(InputError, match=r"convert it first with frame\.to_pandas\(\)"):
        P.local_suppression(pa.Table.from_pandas(_frame()), KEYS)
