"""read_microdata: one small file per format, written here, read back.

SPSS/Stata files are written with pyreadstat (value labels included) and must come
back with labelled columns as categoricals of the label names. SAS ``.sas7bdat``
cannot be written by pyreadstat, so its dispatch is checked with a stand-in reader
and a corrupt file.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from sdcbayes.exceptions import DataError, InputError
from sdcbayes.microdata import READABLE_EXTENSIONS, Microdata, read_microdata


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "age": [25.0, 35.0, 45.0, 25.0, 35.0],
            "sex": [1.0, 2.0, 1.0, 1.0, 7.0],  # 7 has no value label
            "region": [1.0, 1.0, 2.0, np.nan, 1.0],
            "w": [10.0, 20.0, 30.0, 40.0, 50.0],
        }
    )


LABELS = {
    "sex": {1: "male", 2: "female", 9: "other"},  # 9 is declared but never observed
    "region": {1: "north", 2: "south"},
}


def _check_labelled(df: pd.DataFrame) -> None:
    assert isinstance(df["sex"].dtype, pd.CategoricalDtype)
    # label names in code order, declared-but-unobserved labels kept, unlabelled 7 last
    assert list(df["sex"].cat.categories) == ["male", "female", "other", "7"]
    assert df["sex"].astype(str).tolist() == ["male", "female", "male", "male", "7"]
    assert list(df["region"].cat.categories) == ["north", "south"]
    assert df["region"].isna().tolist() == [False, False, False, True, False]
    assert df["age"].tolist() == [25, 35, 45, 25, 35]


def test_csv_roundtrip(tmp_path, frame):
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    got = read_microdata(path)
    pd.testing.assert_frame_equal(got, frame)
    assert list(read_microdata(str(path), columns=["sex", "w"]).columns) == ["sex", "w"]


@pytest.mark.parametrize("sep", [";", "\t", "|"])
@pytest.mark.parametrize("name", ["s.csv", "s.csv.gz"])
def test_csv_with_another_separator_is_read_by_its_header(tmp_path, frame, sep, name):
    # a spreadsheet's "CSV" in many locales: semicolons; read with commas it is one column
    frame.to_csv(tmp_path / name, sep=sep, index=False)
    pd.testing.assert_frame_equal(read_microdata(tmp_path / name), frame)
    assert list(read_microdata(tmp_path / name, columns=["w"]).columns) == ["w"]


def test_a_comma_in_the_header_keeps_commas(tmp_path):
    # semicolons inside a comma-separated file's values do not switch the separator
    path = tmp_path / "s.csv"
    path.write_text('age,note\n1,"a;b"\n2,"c;d"\n')
    got = read_microdata(path)
    assert list(got.columns) == ["age", "note"] and got["note"].tolist() == ["a;b", "c;d"]


def test_tsv_and_gzip_csv(tmp_path, frame):
    frame.to_csv(tmp_path / "s.tsv", sep="\t", index=False)
    pd.testing.assert_frame_equal(read_microdata(tmp_path / "s.tsv"), frame)
    frame.to_csv(tmp_path / "s.csv.gz", index=False)
    pd.testing.assert_frame_equal(read_microdata(tmp_path / "s.csv.gz"), frame)


def test_parquet_keeps_categoricals(tmp_path, frame):
    f = frame.assign(sex=pd.Categorical(["m", "f", "m", "m", "x"], categories=["f", "m", "x", "y"]))
    path = tmp_path / "s.parquet"
    f.to_parquet(path, engine="pyarrow")
    got = read_microdata(path)
    pd.testing.assert_frame_equal(got, f)
    assert list(got["sex"].cat.categories) == ["f", "m", "x", "y"]
    got = read_microdata(path, columns=["w", "age"])
    assert list(got.columns) == ["w", "age"]


@pytest.mark.parametrize("ext", [".sav", ".zsav"])
def test_spss_value_labels_become_categories(tmp_path, frame, ext):
    path = tmp_path / f"s{ext}"
    pyreadstat.write_sav(frame, str(path), variable_value_labels=LABELS, compress=ext == ".zsav")
    got = read_microdata(path)
    _check_labelled(got)
    np.testing.assert_array_equal(got["w"], frame["w"])


def test_spss_user_missing_values_are_nan(tmp_path, frame):
    path = tmp_path / "m.sav"
    f = frame.assign(age=[25.0, 99.0, 45.0, 25.0, 99.0])  # 99 = "refused"
    pyreadstat.write_sav(f, str(path), missing_ranges={"age": [99]})
    got = read_microdata(path)
    assert got["age"].isna().tolist() == [False, True, False, False, True]


def test_stata_value_labels_become_categories(tmp_path, frame):
    path = tmp_path / "s.dta"
    pyreadstat.write_dta(frame, str(path), variable_value_labels=LABELS)
    got = read_microdata(path)
    _check_labelled(got)


def test_por_and_xport(tmp_path, frame):
    por = tmp_path / "s.por"
    pyreadstat.write_por(frame, str(por))
    got = read_microdata(por)
    # SPSS portable files upper-case the variable names
    np.testing.assert_allclose(got.iloc[:, 3], frame["w"])
    xpt = tmp_path / "s.xpt"
    pyreadstat.write_xport(frame, str(xpt))
    got = read_microdata(xpt)
    np.testing.assert_allclose(got["w"], frame["w"])


def test_sas7bdat_goes_through_pyreadstat(tmp_path, frame, monkeypatch):
    path = tmp_path / "s.sas7bdat"
    path.write_bytes(b"stand-in")
    calls = []

    class Meta:
        variable_value_labels: dict = {}
        column_names = list(frame.columns)

    def fake_read(p, **kwargs):
        calls.append((p, kwargs))
        return frame.copy(), Meta()

    monkeypatch.setattr(pyreadstat, "read_sas7bdat", fake_read)
    got = read_microdata(path)
    pd.testing.assert_frame_equal(got, frame)
    assert calls and calls[0][0] == str(path)


def test_corrupt_sas7bdat_is_a_one_line_data_error(tmp_path):
    path = tmp_path / "bad.sas7bdat"
    path.write_bytes(b"this is not a SAS file")
    with pytest.raises(DataError) as info:
        read_microdata(path)
    msg = str(info.value)
    assert "bad.sas7bdat" in msg and "as a SAS file" in msg and "\n" not in msg
    assert "check that the file is complete" in msg


def test_missing_file(tmp_path):
    with pytest.raises(InputError) as info:
        read_microdata(tmp_path / "nope.csv")
    assert "file not found" in str(info.value) and "nope.csv" in str(info.value)
    assert "check the path" in str(info.value)


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(InputError, match="is a folder, not a file"):
        read_microdata(tmp_path)


def test_unknown_extension_lists_the_supported_ones(tmp_path):
    path = tmp_path / "s.xlsx"
    path.write_bytes(b"x")
    with pytest.raises(InputError) as info:
        read_microdata(path)
    msg = str(info.value)
    assert "'.xlsx'" in msg and "s.xlsx" in msg and "\n" not in msg
    for ext in (".csv", ".parquet", ".sav", ".dta", ".sas7bdat", ".xpt"):
        assert ext in msg and ext in READABLE_EXTENSIONS


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".sav"])
def test_missing_columns_are_named(tmp_path, frame, ext):
    path = tmp_path / f"s{ext}"
    if ext == ".csv":
        frame.to_csv(path, index=False)
    elif ext == ".parquet":
        frame.to_parquet(path)
    else:
        pyreadstat.write_sav(frame, str(path))
    with pytest.raises(DataError) as info:
        read_microdata(path, columns=["age", "income"])
    msg = str(info.value)
    assert "'income'" in msg and f"s{ext}" in msg and "available" in msg


def test_read_then_cell_table(tmp_path, frame):
    path = tmp_path / "s.sav"
    pyreadstat.write_sav(frame, str(path), variable_value_labels=LABELS)
    md = Microdata(read_microdata(path), keys=["sex", "region"], weight="w")
    # declared categories count in K: sex has 4 (3 labels + unlabelled 7), region 2
    assert md.n_levels == {"sex": 4, "region": 2} and md.K == 8
    rt = md.record_table()
    # recs: 0 (male, north), 1 (female, north), 2 (male, south), 3 (male, *), 4 (7, north);
    # rec 3 matches recs 0 and 2 (wildcard), and each of them counts rec 3
    np.testing.assert_array_equal(rt["fk"], [2, 1, 2, 3, 1])


@pytest.mark.parametrize("ext", [".sav", ".dta"])
def test_variable_labels_kept_in_attrs_and_resolved(tmp_path, frame, ext):
    from sdcbayes.microdata import resolve_columns

    path = tmp_path / f"s{ext}"
    writer = pyreadstat.write_sav if ext == ".sav" else pyreadstat.write_dta
    # 'w' has no label: it is left out of the dict
    writer(frame, str(path), column_labels=["Age in years", "Sex", "Region of residence", ""],
           variable_value_labels=LABELS)
    got = read_microdata(path)
    assert got.attrs["column_labels"] == {
        "age": "Age in years", "sex": "Sex", "region": "Region of residence"
    }
    # only the columns read are described
    assert read_microdata(path, columns=["sex", "w"]).attrs["column_labels"] == {"sex": "Sex"}
    # exact names first, then labels whatever their case and blanks
    assert resolve_columns(got, ["w", " age IN years ", "region of residence"]) == [
        "w", "age", "region"
    ]
    with pytest.raises(DataError) as info:
        resolve_columns(got, ["Age in yaers", "zzz"], option="--keys", source=path.name)
    msg = str(info.value)
    assert "\n" not in msg and path.name in msg and "--keys" in msg
    assert "'Age in yaers' (did you mean 'Age in years' (label of 'age')?)" in msg
    assert "'zzz'," not in msg and "'zzz' are neither" in msg  # no suggestion for zzz
    # Microdata never needs the labels: same cells with and without them
    bare = got.copy()
    bare.attrs = {}
    a = Microdata(got, keys=["sex", "region"], weight="w").record_table()
    b = Microdata(bare, keys=["sex", "region"], weight="w").record_table()
    pd.testing.assert_frame_equal(a, b)


def test_label_shared_by_two_columns_is_ambiguous(frame):
    from sdcbayes.microdata import resolve_columns

    f = frame.copy()
    f.attrs["column_labels"] = {"age": "Age", "sex": "age"}
    assert resolve_columns(f, ["sex"]) == ["sex"]  # a column name wins over labels
    with pytest.raises(DataError, match=r"'AGE' is the variable label of several columns.*"
                                        r"'age', 'sex'.*give the column name"):
        resolve_columns(f, ["AGE"], option="--keys")


def test_csv_and_parquet_have_no_labels(tmp_path, frame):
    frame.to_csv(tmp_path / "s.csv", index=False)
    assert "column_labels" not in read_microdata(tmp_path / "s.csv").attrs
