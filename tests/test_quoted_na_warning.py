"""A quoted "NA" among a key's numbers: read as a level, as documented, and warned about.

read_microdata takes a quoted ``"NA"`` as the text NA (Namibia) and an unquoted NA as
missing, as R's ``write.csv`` writes them. A writer that quotes every field writes its
missing values as ``"NA"``: a key of numbers then gets a level that matches only itself
where a missing value matches every level, and the risk comes out far higher, silently
(on sdcMicro's testdata with missing keys 296 sample uniques instead of 94,
tests/test_sdcmicro_r_cli.py). The reader now marks such columns and Microdata (so
assess, compare, protect) and suda warn, naming --na-values.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from clitools import run_in_process

from sdcbayes import Microdata, read_microdata
from sdcbayes.microdata import MicrodataWarning

ROWS = ['"region","age","w"']
ROWS += [f'"{r}","{a}","10"' for r, a in
         [("1", "20"), ("2", "30"), ("NA", "20"), ("1", "NA"), ("2", "20"), ("1", "30")]]


def _write(tmp_path, rows, name="q.csv"):
    path = tmp_path / name
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _notes(frame, keys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Microdata(frame, keys=keys, weight="w")
    return [str(w.message) for w in caught if issubclass(w.category, MicrodataWarning)
            and "quoted text" in str(w.message)]


def test_quoted_na_among_numbers_is_a_level_and_warned(tmp_path):
    frame = read_microdata(_write(tmp_path, ROWS))
    assert (frame["region"] == "NA").sum() == 1 and frame["region"].notna().all()
    notes = _notes(frame, ["region", "age"])
    assert len(notes) == 2
    assert notes[0].startswith("key 'region' holds numbers and the quoted text 'NA' (1 record")
    assert "--na-values NA" in notes[0] and "matches only itself" in notes[0]
    # a key without the text warns of nothing
    assert _notes(frame, ["region"]) == notes[:1]


def test_na_values_reads_them_missing_and_silences_the_warning(tmp_path):
    frame = read_microdata(_write(tmp_path, ROWS), na_values=["NA"])
    assert frame["region"].isna().sum() == 1 and frame["region"].dtype.kind in "if"
    assert _notes(frame, ["region", "age"]) == []


def test_unquoted_na_and_text_keys_warn_of_nothing(tmp_path):
    # unquoted NA is missing (R's write.csv); "NA" among country codes is Namibia
    unquoted = [r.replace('"NA"', "NA") for r in ROWS]
    frame = read_microdata(_write(tmp_path, unquoted, "u.csv"))
    assert frame["region"].isna().sum() == 1
    assert _notes(frame, ["region", "age"]) == []
    countries = ['"country","w"', '"NA","10"', '"ZA","10"', '"BW","10"']
    frame = read_microdata(_write(tmp_path, countries, "c.csv"))
    assert _notes(frame, ["country"]) == []


@pytest.mark.parametrize("command", ["assess", "suda"])
def test_the_commands_say_it_in_one_line(capsys, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, ROWS)
    extra = ["--weight", "w", "--model", "closed-form"] if command == "assess" else []
    proc = run_in_process(capsys, command, "q.csv", "--keys", "region,age", *extra,
                          "--out", "o", "-q")
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "quoted text 'NA'" in ln]
    assert len(lines) == 2 and all(ln.startswith("sdcbayes: warning: key ") for ln in lines)
    assert np.all(["--na-values NA" in ln for ln in lines])
