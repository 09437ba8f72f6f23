"""protect writes a CSV back with the input's conventions (audit AU3 N3).

The protected file should differ from the input only in the values the steps changed:
Excel's ``sep=;`` first line and CRLF line endings are kept, as are the encoding and the
decimal commas. Small files, in-process runs (tests/clitools.py), each in ``tmp_path`` as
its cwd.
"""

from __future__ import annotations

import gzip

import pytest
from clitools import run_in_process

#: Regions with letters outside ASCII; two of them are merged by the recode below.
REGIONS = ["Évry", "Orléans", "Nîmes", "Besançon"]
MERGED = {"Évry": "Centre", "Orléans": "Centre"}


def _rows(n: int = 48) -> list[list[str]]:
    """Records as the fields of a semicolon file: region, age group, income, weight.

    The income and the weight carry decimal commas (``1234,75``) and one income is
    blank; no field needs quoting, so the expected file is built by plain joining.
    """
    rows = []
    for i in range(n):
        income = "" if i == 5 else f"{1000 + 37 * i},{(13 * i) % 100:02d}"
        rows.append([REGIONS[i % 4], ["0-29", "30-59", "60+"][i % 3], income,
                     f"{20 + i % 7},5"])
    return rows


def _text(rows, head: list[str], eol: str, sep_line: str | None = None) -> str:
    lines = ([sep_line] if sep_line is not None else []) + [";".join(head)]
    lines += [";".join(r) for r in rows]
    return eol.join(lines) + eol


HEAD = ["region", "age", "income", "w"]


def _recoded(rows: list[list[str]]) -> list[list[str]]:
    """The rows as protect's recode of the first column (MERGED) writes them."""
    return [[MERGED.get(r[0], r[0]), *r[1:]] for r in rows]


def _protect(capsys, data: str, *extra: str):
    return run_in_process(capsys, "protect", data, "--keys", "region,age", "--weight", "w",
                          "--recode", "region:Évry+Orléans=Centre", "--out", "out", "-q",
                          *extra)


def test_excel_sep_line_crlf_and_latin1_round_trip_byte_for_byte(tmp_path, monkeypatch,
                                                                 capsys):
    monkeypatch.chdir(tmp_path)
    rows = _rows()
    data = _text(rows, HEAD, "\r\n", "sep=;").encode("latin-1")
    (tmp_path / "excel.csv").write_bytes(data)
    proc = _protect(capsys, "excel.csv", "--encoding", "latin-1")
    assert proc.returncode == 0, proc.stderr
    # the input's text with the recoded regions replaced, and nothing else
    recoded = _recoded(rows)
    expected = _text(recoded, HEAD, "\r\n", "sep=;").encode("latin-1")
    assert expected != data  # the recode changed something
    written = (tmp_path / "out" / "protected.csv").read_bytes()
    assert written == expected


def test_plain_utf8_lf_file_stays_lf_without_a_sep_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rows = _rows()
    (tmp_path / "plain.csv").write_bytes(_text(rows, HEAD, "\n").encode("utf-8"))
    proc = _protect(capsys, "plain.csv")
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / "out" / "protected.csv").read_bytes()
    recoded = _recoded(rows)
    assert written == _text(recoded, HEAD, "\n").encode("utf-8")
    assert b"\r" not in written and not written.startswith(b"sep=")


@pytest.mark.parametrize("lead", ["SEP=;\r\n", "\r\nsep=;\r\n"])
def test_sep_line_kept_as_written_in_a_gz_file_read_after_blank_lines(tmp_path, monkeypatch,
                                                                       capsys, lead):
    """The sep line comes back as the input wrote it (its case), also from a .csv.gz.

    A blank line before it is skipped by the reader and not written back; the line
    ending is the input's first one.
    """
    monkeypatch.chdir(tmp_path)
    rows = _rows()
    body = _text(rows, HEAD, "\r\n")
    with gzip.open(tmp_path / "excel.csv.gz", "wb") as fh:
        fh.write((lead + body).encode("utf-8"))
    proc = _protect(capsys, "excel.csv.gz")
    assert proc.returncode == 0, proc.stderr
    with gzip.open(tmp_path / "out" / "protected.csv.gz", "rb") as fh:
        written = fh.read()
    recoded = _recoded(rows)
    sep_line = lead.strip()
    assert written == _text(recoded, HEAD, "\r\n", sep_line).encode("utf-8")


def test_quoted_na_text_path_keeps_sep_line_and_crlf(tmp_path, monkeypatch, capsys):
    """The writer that quotes an observed ``NA`` text keeps the conventions too."""
    monkeypatch.chdir(tmp_path)
    rows = _rows()
    # a country code column holding Namibia's "NA" (quoted: a text, not a missing value)
    head = [*HEAD, "country"]
    rows = [[*r, '"NA"' if i % 2 else "FR"] for i, r in enumerate(rows)]
    (tmp_path / "na.csv").write_bytes(_text(rows, head, "\r\n", "sep=;").encode("utf-8"))
    proc = _protect(capsys, "na.csv")
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / "out" / "protected.csv").read_bytes()
    recoded = _recoded(rows)
    assert written == _text(recoded, head, "\r\n", "sep=;").encode("utf-8")


def test_tsv_with_an_excel_sep_line_is_written_with_that_separator(tmp_path, monkeypatch,
                                                                   capsys):
    """A .tsv whose ``sep=;`` line makes the reader split on ';' is written with ';'.

    Before, protect wrote any .tsv with tabs; with the sep line kept that file would
    read back as one column.
    """
    monkeypatch.chdir(tmp_path)
    rows = _rows()
    (tmp_path / "d.tsv").write_bytes(_text(rows, HEAD, "\n", "sep=;").encode("utf-8"))
    proc = _protect(capsys, "d.tsv")
    assert proc.returncode == 0, proc.stderr
    written = (tmp_path / "out" / "protected.tsv").read_bytes()
    recoded = _recoded(rows)
    assert written == _text(recoded, HEAD, "\n", "sep=;").encode("utf-8")
