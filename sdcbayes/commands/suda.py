"""``sdcbayes suda``: SUDA and DIS-SUDA scores of every record (seed 001, section 3.5).

Special uniques detection (Elliot et al.): a record scores for every *minimal
sample unique* (MSU) it has, a smallest set of key variables on which no other
record shares its values; small MSUs score most. With the default ``elliot``
scores an MSU of size ``k`` among ``ATT`` keys scores ``(ATT - k)!`` when MSUs of
every size are searched, and ``(ATT - k)(ATT - k - 1)...(ATT - M)`` =
``(ATT - k)!/(ATT - M - 1)!`` with ``--max-size M`` below ``ATT`` (seed 001 section
3.5; :func:`sdcbayes.risk.suda.msu_size_weights`). DIS-SUDA
spreads the data intrusion simulation estimate of the probability that a
unique match is correct over the records, in proportion to their scores.
The computation is :func:`sdcbayes.risk.suda.suda`; this module reads the
file, checks the options, and writes ``records.csv``, ``summary.json`` and
``report.html`` atomically.

Heavy libraries are imported inside the command so ``sdcbayes --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from sdcbayes._cliutils import (
    ENCODING_HELP,
    NA_VALUES_HELP,
    QUIET_HELP,
    SingleValueCommand,
    check_out_dir,
    echo_table,
    json_default,
    nan_to_none,
    parse_encoding,
    parse_na_values,
    split_names,
    write_csv,
    write_json,
    write_output_folder,
)
from sdcbayes.exceptions import InputError

#: How to read the per-key contributions (console and summary.json): each MSU counts
#: toward every key in it (Elliot et al.; sdcMicro's definition), so they overlap.
CONTRIBUTIONS_NOTE = (
    "a key's contribution is the percent of the total SUDA score from the minimal "
    "sample uniques containing it; an MSU of several keys counts in full toward each of "
    "them, so the contributions can add up to more than 100%: they are not shares of a whole"
)


@click.command("suda", cls=SingleValueCommand)
@click.argument("data", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--keys",
    required=True,
    help="Key variables the intruder may know, comma-separated column names "
    "(e.g. age,sex,region,occupation); for SPSS, Stata and SAS files a variable label "
    "may stand for its column. SUDA looks for the smallest combinations of them that "
    "single a record out.",
)
@click.option(
    "--max-size",
    type=int,
    default=None,
    help="Largest combination of keys searched for special uniques (1..number of keys). "
    "Default: all keys. Smaller values are faster and assume the intruder combines at "
    "most this many variables.",
)
@click.option(
    "--dis-fraction",
    type=float,
    default=0.01,
    show_default=True,
    help="Sampling fraction of the file (sample size / population size) used by the data "
    "intrusion simulation (DIS) that calibrates the DIS-SUDA scores to a probability of "
    "correct re-identification.",
)
@click.option(
    "--missing",
    "missing_codes",
    default=None,
    help="Comma-separated codes that mean 'missing' in the key columns besides empty cells "
    "(e.g. -999,99), applied by SUDA to the keys after reading (a number matches a number or "
    "its text); a code that matches no key value is warned about. Not a rule as in assess, "
    "compare and protect: wildcard, category and drop are refused, since suda has one rule: "
    "a missing value is never part of a special unique and matches no value "
    "(sdcMicro's SUDA2 behaviour). --na-values, the spelling assess, compare and protect "
    "share, declares codes missing in every column as the file is read; for codes written "
    "in the keys as listed the two give the same scores.",
)
@click.option("--na-values", metavar="CODES", default=None, help=NA_VALUES_HELP)
@click.option("--encoding", metavar="ENC", default=None, help=ENCODING_HELP)
@click.option(
    "--score-method",
    type=click.Choice(["elliot", "ihsn"]),
    default="elliot",
    show_default=True,
    # the seed's product over i = k..M of (ATT - i), as risk/suda.py's msu_size_weights:
    # "(M - k)!" with M the --max-size is wrong once M < ATT (7 keys, M = 3: 120, 20, 4)
    help="Weight of an MSU of size k, with ATT the number of keys and M the --max-size: "
    "elliot (Templ et al. 2014, section 3.5; sdcMicro's original_scores = TRUE) gives (ATT - k)! "
    "when all sizes are searched (the default) and, with M below ATT, the product "
    "(ATT - k)(ATT - k - 1)...(ATT - M) = (ATT - k)!/(ATT - M - 1)! (e.g. 7 keys and "
    "--max-size 3 score sizes 1, 2, 3 as 120, 20, 4); ihsn is the older IHSN/OECD "
    "weighting, (2^(ATT - k) - 1) k! (ATT - k)!/ATT!, whatever M.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),  # a file: refused by check_out_dir, fix named
    default=Path("sdcbayes-suda"),
    show_default=True,
    help="Output folder: records.csv, summary.json, report.html.",
)
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
def command(
    data: Path,
    keys: str,
    max_size: int | None,
    dis_fraction: float,
    missing_codes: str | None,
    score_method: str,
    out: Path,
    quiet: bool,
    as_json: bool,
    na_values: str | None = None,
    encoding: str | None = None,
) -> None:
    """Score every record by its special uniques (SUDA) and estimate DIS-SUDA risk.

    DATA is a CSV (.csv, .csv.gz, .tsv), Parquet (.parquet, .pq), SPSS (.sav, .zsav,
    .por), Stata (.dta) or SAS (.sas7bdat, .xpt) file.
    records.csv holds, in input order, each record's SUDA score, its DIS-SUDA
    score (an estimate of the probability that a unique match on the keys is
    a correct re-identification) and the share of its score due to each key.
    """
    import math

    key_list = split_names(keys)
    if not key_list:
        raise InputError("--keys is empty: name the key variables, e.g. --keys age,sex,region")
    dup = sorted({k for k in key_list if key_list.count(k) > 1})
    if dup:
        raise InputError(f"--keys repeats {dup}; name each key once")
    out_files = ["summary.json", "records.csv", "report.html"]
    check_out_dir(out, writes=out_files, inputs={"DATA": data}, command="suda")
    if max_size is not None and not 1 <= max_size <= len(key_list):
        raise InputError(
            f"--max-size must be between 1 and the number of keys ({len(key_list)}); got {max_size}"
        )
    if not (math.isfinite(dis_fraction) and 0.0 < dis_fraction <= 1.0):
        raise InputError(
            f"--dis-fraction must lie in (0, 1] (sample size / population size; 1: the file "
            f"is the population); got {dis_fraction}"
        )
    missing = _parse_missing(missing_codes)  # refuses assess's rule words (audit UX F4)
    na_codes = parse_na_values(na_values)
    codec = parse_encoding(encoding, data)
    from sdcbayes.cli import cli_wording, read_variables

    # the keys' columns only (names or variable labels), checked against the header first
    frame, key_list, _ = read_variables(data, key_list, quiet=quiet or as_json,
                                        na_values=na_codes, encoding=codec)
    dup = sorted({k for k in key_list if key_list.count(k) > 1})
    if dup:  # a label and its column name, or two labels of one column
        raise InputError(f"--keys names the column(s) {dup} twice (by name and by label); "
                         "name each key once")
    if len(frame) == 0:
        raise InputError(f"{data.name} has no records")
    # a code that matches nothing is most likely misspelt (or meant for another option):
    # said before the work, and kept in summary.json's warnings
    from sdcbayes.microdata import _extension

    code_notes = _unmatched_code_warnings(frame, key_list, missing_codes, na_codes,
                                          csv=_extension(data) in (".csv", ".csv.gz", ".tsv"))
    for note in code_notes:
        click.echo(f"sdcbayes: warning: {note}", err=True)

    import warnings

    from sdcbayes.inference.diagnostics import SdcbayesWarning
    from sdcbayes.provenance import stamp
    from sdcbayes.risk.suda import suda

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = suda(
            frame,
            key_list,
            max_size=max_size,
            dis_fraction=dis_fraction,
            missing=missing,
            score_method=score_method,
        )
    from sdcbayes.microdata import _numbers_written_two_ways, _quoted_missing_texts

    # a key writing one number two ways (3 / 3.0) splits its level, as in assess; a quoted
    # "NA" among numbers is a level, not missing
    notes = [cli_wording(" ".join(n.split())) for n in
             _numbers_written_two_ways(frame, key_list) + _quoted_missing_texts(frame, key_list)]
    for note in notes:
        click.echo(f"sdcbayes: warning: {note}", err=True)
    notes = code_notes + notes
    for w in caught:  # the library's caveats as one line each, and in summary.json
        if issubclass(w.category, SdcbayesWarning):
            notes.append(" ".join(str(w.message).split()))
            click.echo(f"sdcbayes: warning: {notes[-1]}", err=True)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    records = result.records_frame()
    summary: dict[str, Any] = {"command": "suda", "data": str(data),
                               "output_files": out_files,  # previous_outputs reads it
                               **result.summary(), **({"warnings": notes} if notes else {})}
    summary["missing_codes"] = missing
    # the rule its counts follow: U and P differ from assess's default (wildcard) on a file
    # with missing key values, so say which rule these are
    import numpy as np

    from sdcbayes.report import SUDA_MISSING_RULE
    from sdcbayes.risk.suda import _code_input

    codes, _ = _code_input(frame, key_list, missing)
    n_missing = int((codes < 0).any(axis=1).sum())
    summary["n_missing_key_records"] = n_missing
    summary["missing_rule"] = SUDA_MISSING_RULE
    summary["attribute_contributions_note"] = CONTRIBUTIONS_NOTE
    summary["provenance"] = stamp(
        "suda",
        data_summary={"n_records": int(len(frame)), "keys": key_list,
                      "key_levels": {str(k): int(np.unique(codes[:, j][codes[:, j] >= 0]).size)
                                     for j, k in enumerate(key_list)},
                      "n_missing_key_records": n_missing,
                      "missing": "suda2 (missing matches no value; a level of its own in U "
                                 "and P)"},
        settings={
            "max_size": result.max_size,
            "dis_fraction": dis_fraction,
            "score_method": score_method,
            "missing": missing,
        },
        input_file=data,
    )
    if na_codes is not None:
        summary["provenance"]["input"]["na_values"] = na_codes
    if codec is not None:
        summary["provenance"]["input"]["encoding"] = codec

    from sdcbayes.report import suda_report

    html = suda_report(result, summary)
    write_output_folder(
        out,
        {
            "summary.json": lambda p: write_json(p, summary),
            "records.csv": lambda p: write_csv(p, records),
            "report.html": lambda p: p.write_text(html, encoding="utf-8"),
        },
    )
    if as_json:
        click.echo(json.dumps(nan_to_none(summary), indent=2, default=json_default))
    elif not quiet:
        _print_summary(summary, out)


#: ``--missing``'s values in assess, compare and protect: a rule, not a code. Taken by
#: suda as codes they would match nothing and change nothing, silently (audit UX F4).
MISSING_RULE_WORDS = ("wildcard", "category", "drop")


def _parse_missing(text: str | None) -> list[Any] | None:
    """``"-999,99,NA"`` -> ``[-999, 99, 'NA']``: numbers as numbers, the rest as text.

    Each number is given both as int/float and as its text, so that a code
    matches whether the column was read as numbers or as strings. The rule words of
    the other commands' ``--missing`` (:data:`MISSING_RULE_WORDS`) are refused: suda
    has one rule for missing key values, sdcMicro's ``suda2`` (a missing value matches
    no value and is never part of a minimal sample unique; :mod:`sdcbayes.risk.suda`).
    """
    if text is None:
        return None
    out: list[Any] = []
    for raw in (t.strip() for t in text.split(",")):
        if not raw:
            continue
        if raw.lower() in MISSING_RULE_WORDS:
            raise InputError(
                f"--missing {raw!r} is a rule of assess, compare and protect, but suda's "
                "--missing lists missing-value codes (e.g. --missing -999,99); suda has one "
                "rule, sdcMicro's suda2: a missing key value matches no value and is never "
                "part of a special unique (in the sample uniques U and P it is a level of "
                "its own, as under assess --missing category); leave out --missing, or list "
                "the codes that mean missing with --missing CODES or --na-values CODES")
        out.append(raw)
        try:
            v = float(raw)
        except ValueError:
            continue
        out.append(int(v) if v.is_integer() else v)
        if v.is_integer():
            out.append(float(v))
    if not out:
        raise InputError("--missing is empty; give codes such as --missing -999,99")
    return list(dict.fromkeys(out))


def _unmatched_code_warnings(frame, keys: list[str], text: str | None,
                             na_codes: list[str] | None, csv: bool = False) -> list[str]:
    """One warning naming the ``--missing`` codes that match no value of any key.

    Such a code changes nothing (a misspelling, or a code of another column), and
    nothing else would say so. Left out: the codes the reader has made missing
    already, which the file does hold (audit AU3 G6): one listed in ``--na-values``,
    as text or as the same number (``-9.0`` with ``--na-values -9``, which
    :func:`~sdcbayes.microdata.read_microdata` matches in a numeric column), and in a
    CSV/TSV file (``csv``) the reader's own missing texts
    (:data:`~sdcbayes.microdata.CSV_NA_VALUES`: ``NA``, ``NaN``, ...) and a lone
    ``"."`` (SAS's and Stata's missing number).
    """
    from sdcbayes.microdata import CSV_NA_VALUES

    if text is None:
        return []
    declared = set(na_codes or [])
    if csv:
        declared |= set(CSV_NA_VALUES) | {"."}

    def number(code: str) -> float | None:
        try:
            value = float(code)
        except ValueError:
            return None
        return value if value == value else None  # "nan" is a text code, not a number

    numbers = {v for v in map(number, na_codes or []) if v is not None}
    unmatched = []
    for raw in dict.fromkeys(t.strip() for t in text.split(",") if t.strip()):
        if raw in declared or number(raw) in numbers:
            continue
        variants = _parse_missing(raw) or []
        if not any(frame[k].isin(variants).any() for k in keys):
            unmatched.append(raw)
    if not unmatched:
        return []
    codes = ", ".join(map(repr, unmatched))
    which = (f"code {codes} matches" if len(unmatched) == 1 else f"codes {codes} match")
    it = "it changes" if len(unmatched) == 1 else "they change"
    return [f"--missing {which} no value of the keys ({', '.join(map(str, keys))}), so {it} "
            "nothing; check the codes against the file (suda's --missing lists the "
            "codes that mean missing in the keys)"]


def _print_summary(s: dict[str, Any], out: Path) -> None:
    from sdcbayes.report import percent

    click.echo(
        f"sdcbayes {s['sdcbayes_version']} — SUDA on {s['n_keys']} keys "
        f"(MSUs up to size {s['max_size']}, {s['score_method']} scores)"
    )
    click.echo(f"data: {s['data']}")
    rows = [
        ("records", f"{s['n_records']:,}"),
        ("records with a special unique", f"{s['n_records_with_msu']:,}"),
        ("minimal sample uniques", f"{s['n_msus']:,}"),
        ("sample uniques on all keys", f"{s['n_sample_uniques']:,}"
         + (" (missing as a level of its own)" if s.get("n_missing_key_records") else "")),
        ("DIS estimate (P correct match | unique)", f"{s['dis']:.4g}"),
        ("largest SUDA score", f"{s['suda_score_max']:.4g}"),
        ("largest DIS-SUDA score", f"{s['dis_suda_score_max']:.4g}"),
    ]
    contrib = s.get("attribute_contributions") or {}
    for k, v in sorted(contrib.items(), key=lambda kv: -kv[1])[:5]:
        rows.append((f"  contribution of {k}", percent(v / 100)))
    echo_table(rows)
    if contrib:
        # 53.8% + 53.8% + 23.1% is no error: say so where the numbers are read
        click.echo(f"  note: {CONTRIBUTIONS_NOTE}")
    click.echo(f"written: {out}/records.csv, summary.json, report.html")
