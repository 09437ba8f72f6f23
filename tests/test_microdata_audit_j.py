"""Fixes of audit J (microdata layer): wildcard search, readers, weights, keys, datasets,
provenance. Reference numbers come from brute force or pandas, never from the code tested."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import DataError, InputError
from sdcbayes.microdata import Microdata, read_microdata

pyreadstat = pytest.importorskip("pyreadstat")


# --------------------------------------------------------------------------- F1 wildcard


def brute_wildcard(df, keys, w, alpha):
    """O(n^2) per-record (fk, Fk_hat) from the documented wildcard rules of Microdata."""
    x = df[keys].to_numpy(dtype=object)
    miss = df[keys].isna().to_numpy()
    n, nk = len(df), len(keys)
    f, F = np.zeros(n), np.zeros(n)
    for i in range(n):
        for j in range(n):
            both = ~miss[i] & ~miss[j]
            if not all(x[i, both] == x[j, both]):
                continue
            if miss[i].all():  # empty record: everything
                wt = 1.0
            elif not miss[i].any():  # complete record
                if not miss[j].any():
                    wt = 1.0
                elif miss[j].all():
                    wt = alpha if nk == 1 else 0.0
                else:
                    wt = alpha
            elif (miss[i] == miss[j]).all() or not miss[j].any():  # itself, or complete
                wt = 1.0
            else:
                wt = alpha
            f[i] += wt
            F[i] += wt * w[j]
    return f, F


def random_frame(rng, n, nk, p_max=0.5):
    df = pd.DataFrame(
        {f"k{j}": rng.integers(0, int(rng.integers(1, 5)), n).astype(float) for j in range(nk)}
    )
    df = df.mask(rng.random(df.shape) < rng.uniform(0, p_max))
    df["w"] = rng.uniform(1, 5, n)
    df["s"] = rng.integers(0, 3, n)
    return df


@pytest.mark.parametrize("seed", range(4))
def test_wildcard_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    for trial in range(40):
        nk, n = int(rng.integers(1, 6)), int(rng.integers(1, 45))
        df = random_frame(rng, n, nk)
        keys = [f"k{j}" for j in range(nk)]
        alpha = float(rng.choice([0.0, 0.3, 1.0]))
        weighted = trial % 2 == 0
        md = Microdata(df, keys, weight="w" if weighted else None, alpha=alpha,
                       strata="s" if trial % 3 == 0 else None)
        rt = md.record_table()
        w = df["w"].to_numpy() if weighted else np.ones(n)
        f, F = brute_wildcard(df, keys, w, alpha)
        np.testing.assert_allclose(rt["fk"], f, rtol=1e-12, atol=0)
        np.testing.assert_allclose(rt["Fk_hat"], F, rtol=1e-12, atol=0)
        if alpha in (0.0, 1.0):
            assert rt["fk"].dtype == np.int64


def test_wildcard_many_patterns_equals_brute_force():
    # 12 keys with scattered item non-response: ~300 missingness patterns, where the old
    # pairwise loop took O(patterns^2) NumPy steps (its time is measured by
    # benchmarks/wildcard_cells.py). Checked against brute force on sampled records.
    rng = np.random.default_rng(5)
    n, nk = 3000, 12
    df = pd.DataFrame({f"k{j}": rng.integers(0, 4, n).astype(float) for j in range(nk)})
    df = df.mask(rng.random(df.shape) < 0.08)
    keys = list(df.columns)
    rt = Microdata(df, keys, alpha=0.3).record_table()
    patterns = df.isna().to_numpy() @ (1 << np.arange(nk))
    assert len(np.unique(patterns)) > 150
    # brute force for 60 records against all, vectorised per record
    x = df.to_numpy()
    miss = np.isnan(x)
    for i in rng.choice(n, 60, replace=False):
        agree = ((x == x[i]) | miss | miss[i]).all(axis=1)
        wt = np.where(~miss.any(axis=1), 1.0, 0.3)
        if not miss[i].any():
            wt = np.where(miss.all(axis=1), 0.0, wt)
        else:
            wt = np.where((miss == miss[i]).all(axis=1), 1.0, wt)
        assert rt["fk"][i] == pytest.approx(float(np.sum(wt[agree])), rel=1e-12)


def test_suppression_shares_the_microdata_matcher():
    from sdcbayes import microdata
    from sdcbayes.protection import suppression

    assert not hasattr(suppression, "_refine")  # one matcher, in the lower layer
    rng = np.random.default_rng(2)
    df = random_frame(rng, 60, 4)
    keys = [f"k{j}" for j in range(4)]
    # suppression's f_i: every record that agrees where both are observed (no exception
    # for empty records, unlike Microdata)
    x = df[keys].to_numpy()
    miss = np.isnan(x)
    ref = [((x == x[i]) | miss | miss[i]).all(axis=1).sum() for i in range(len(df))]
    np.testing.assert_array_equal(suppression.wildcard_frequencies(df, keys), ref)
    # the same search answers Microdata's questions: 2-column weights, one sum each
    codes = np.where(miss, -1, x).astype(np.int64)
    both = microdata._wildcard_counts(codes, np.ones((60, 2)), codes, [4] * 4)
    np.testing.assert_array_equal(both, np.column_stack([ref, ref]))


# --------------------------------------------------------------------------- F2 .por


def labelled_por(path):
    """An SPSS portable file with value labels 1 = male, 2 = female on SEX.

    pyreadstat writes no value labels to .por, so a value-label record ('D') is put
    into the file's character stream (80-character lines) before the data.
    """
    plain = path.with_name("plain.por")
    pyreadstat.write_por(pd.DataFrame({"SEX": [1.0, 2.0, 1.0], "W": [1.0, 1.0, 1.0]}),
                         str(plain))
    stream = "".join(plain.read_bytes().decode("ascii").split("\r\n"))
    i = stream.index("/F1/1/2/1/1/1/") + 1
    stream = stream[:i] + "D1/3/SEX2/1/4/male2/6/female" + stream[i:]
    lines = [stream[j:j + 80] for j in range(0, len(stream), 80)]
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("ascii"))
    return path


def test_labelled_por_is_read(tmp_path):
    p = labelled_por(tmp_path / "labelled.por")
    assert pyreadstat.read_por(str(p))[1].variable_value_labels  # the labels are in the file
    frame = read_microdata(p)
    assert frame["SEX"].tolist() == ["male", "female", "male"]
    assert list(frame["SEX"].cat.categories) == ["male", "female"]


# --------------------------------------------------------------------------- F3 labels


def test_unlabelled_code_equal_to_a_label_stays_its_own_level(tmp_path):
    p = tmp_path / "hsize.sav"
    df = pd.DataFrame({"hsize": [1.0, 2.0, 3.0, 4.0, 9.0, 9.0]})
    pyreadstat.write_sav(df, str(p), variable_value_labels={"hsize": {9: "4"}})
    frame = read_microdata(p)
    # two codes, two levels: as many as the raw codes have (pandas)
    assert frame["hsize"].nunique() == df["hsize"].nunique()
    assert frame["hsize"].tolist() == ["1", "2", "3", "4 [4]", "4 [9]", "4 [9]"]
    assert frame.attrs["value_codes"]["hsize"] == {"4 [9]": 9.0, "4 [4]": 4.0}
    fk = Microdata(frame, ["hsize"]).record_table()["fk"].tolist()
    assert fk == df.groupby("hsize")["hsize"].transform("size").tolist()


# --------------------------------------------------------------------------- F4 na_values


def test_na_values_apply_to_every_format(tmp_path):
    df = pd.DataFrame({"occ": [1.0, 2.0, -9.0, -9.0], "txt": ["a", "-9 ", "b", "c"],
                       "lab": [1.0, -9.0, 2.0, 1.0]})
    expected_occ = [1.0, 2.0, np.nan, np.nan]
    pyreadstat.write_dta(df, str(tmp_path / "x.dta"))
    df.to_parquet(tmp_path / "x.parquet")
    for name in ("x.dta", "x.parquet"):
        f = read_microdata(tmp_path / name, na_values=["-9"])
        np.testing.assert_array_equal(f["occ"].to_numpy(dtype=float), expected_occ)
        assert f["txt"].isna().tolist() == [False, True, False, False]
    # a labelled code listed in na_values: missing, and no category of the cell space
    pyreadstat.write_sav(df, str(tmp_path / "x.sav"),
                         variable_value_labels={"lab": {-9: "refused", 1: "yes"}})
    f = read_microdata(tmp_path / "x.sav", na_values="-9")
    assert f["lab"].isna().tolist() == [False, True, False, False]
    assert list(f["lab"].cat.categories) == ["yes", "2"]
    assert "refused" not in f.attrs["value_codes"]["lab"]


# --------------------------------------------------------------------------- F5 weights


def test_object_weights_of_numbers_are_accepted():
    w = [120.5, 80.25, 100]
    df = pd.DataFrame({"sex": [1, 2, 1], "w": pd.Series(w, dtype=object)})
    cells = Microdata(df, ["sex"], weight="w").cells
    ref = pd.DataFrame({"sex": [1, 2, 1], "w": w}).groupby("sex")["w"].sum()
    np.testing.assert_allclose(cells.Fk_hat, ref.to_numpy())


def test_labelled_spss_weight_is_accepted_once_labelled_rows_are_dropped(tmp_path):
    p = tmp_path / "w.sav"
    pyreadstat.write_sav(pd.DataFrame({"sex": [1.0, 2.0, 1.0], "w": [120.5, 80.25, 999.0]}),
                         str(p), variable_value_labels={"w": {999: "weight not computed"}})
    frame = read_microdata(p)
    with pytest.raises(DataError, match="'weight not computed'"):
        Microdata(frame, ["sex"], weight="w")
    kept = frame[frame["w"] != "weight not computed"]
    cells = Microdata(kept, ["sex"], weight="w").cells
    assert cells.Fk_hat.tolist() == [120.5, 80.25]


def test_weights_that_are_no_numbers_are_all_named():
    df = pd.DataFrame({"sex": [1, 2, 1, 2], "w": pd.Series([1.5, "x", 2, "y"], dtype=object)})
    with pytest.raises(DataError,
                       match=r"not numeric.*first at record 2, counting from 1: 'x'.*'x', 'y'"):
        Microdata(df, ["sex"], weight="w")


# --------------------------------------------------------------------------- F8, F9 keys


def test_keys_as_a_set_are_refused():
    df = pd.DataFrame({"sex": ["m", "f"], "age": [1, 2]})
    with pytest.raises(InputError, match="ordered sequence.*set"):
        Microdata(df, {"sex", "age"})


def test_uint64_keys_beyond_int64():
    ids = np.array([2**63 + 5, 2**63 + 6, 2**63 + 5], dtype=np.uint64)
    cells = Microdata(pd.DataFrame({"id": ids}), ["id"]).cells
    ref = pd.Series(ids).value_counts().sort_index()
    assert cells.table["id"].tolist() == ref.index.tolist()
    assert cells.fk.tolist() == ref.tolist()


# --------------------------------------------------------------------------- F6 datasets


def test_datasets_input_errors():
    from sdcbayes.datasets import cell_frequencies, draw_sample, joint_codes

    pop = pd.DataFrame({"hh": [1, 1, 2, 2, np.nan, np.nan, 3, 3],
                        "sex": list("mfmfmfmf"), "region": list("AAAABBBB")})
    with pytest.raises(InputError, match="household column 'hh' has 2 missing ids"):
        draw_sample(pop, ["sex"], fraction=0.5, design="household", household="hh")
    ref = pop.groupby("sex")["sex"].transform("size").to_numpy()
    np.testing.assert_array_equal(cell_frequencies(pop, "sex"), ref)
    with pytest.raises(InputError, match="'zz'"):
        joint_codes(pop, ["zz"])
    with pytest.raises(InputError, match="keys is empty"):
        joint_codes(pop, [])
    with pytest.raises(InputError, match="no rows"):
        draw_sample(pop.iloc[:0], ["sex"])


# --------------------------------------------------------------------------- F7 provenance


def test_stamp_and_json_safe_give_plain_json():
    from sdcbayes.provenance import json_safe, stamp

    s = stamp("closed-form", settings={"random_seed": np.int64(3), "keys": ("a", "b")},
              data_summary={"n": np.int32(5), "x": np.float32(np.nan)})
    back = json.loads(json.dumps(s))
    assert back["settings"] == {"random_seed": 3, "keys": ["a", "b"]}
    assert back["data"] == {"n": 5, "x": None}
    assert json_safe(pd.NA) is None and json_safe(pd.NaT) is None
    assert json_safe(np.datetime64("NaT")) is None
    assert json_safe({2, 1}) == [1, 2]
    assert json_safe(frozenset({"b", "a"})) == ["a", "b"]
    assert json_safe(pd.Series([1, 2])) == [1, 2]
    assert json_safe(pd.Index(["a", "b"])) == ["a", "b"]
    assert json_safe(pd.array([1, None], dtype="Int64")) == [1, None]
    json.dumps(json_safe({"s": {1, "a"}}))  # mixed set: sorted by type, still JSON
