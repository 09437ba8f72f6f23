"""Shared plumbing of the CLI commands: atomic output folders, JSON/CSV writers.

Every command validates all of its input before doing any work and writes its
output folder atomically (:func:`write_output_folder`), so a failed run never
leaves a half-written folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from sdcbayes.exceptions import InputError

EXIT_INPUT = 2
MARKER_FILE = "summary.json"  # an output folder of ours always has one


# --------------------------------------------------------------------------- helpers
def split_names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    return names or None


def check_out_dir(out: Path) -> None:
    """Refuse to overwrite a folder that is not a previous sdcbayes output.

    Also refuses a path under an existing file (``--out afile/sub``), which the
    folder could never be made in, before any work starts.
    """
    for parent in Path(os.path.abspath(out)).parents:
        if parent.exists():
            if not parent.is_dir():
                raise InputError(f"--out {out} lies under {parent}, which is a file, not a "
                                 "folder; give a folder path")
            break
    if out.exists():
        if not out.is_dir():
            raise InputError(f"--out {out} exists and is a file; give a folder name")
        contents = list(out.iterdir())
        if contents and not (out / MARKER_FILE).exists():
            raise InputError(
                f"--out {out} exists and holds files that sdcbayes did not write; "
                "choose a new folder or empty it"
            )


def write_output_folder(out: Path, writers: dict[str, Callable[[Path], None]]) -> None:
    """Write every file into a temporary sibling folder, then move it into place.

    A previous sdcbayes output in ``out`` is replaced only once the new one is
    complete, so an interrupted run leaves the old results intact.
    """
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        for name, write in writers.items():
            write(tmp / name)
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def json_default(o: Any):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    return str(o)


def write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON (NumPy scalars converted; NaN -> null)."""
    text = json.dumps(nan_to_none(obj), indent=2, default=json_default)
    path.write_text(text + "\n", encoding="utf-8")


def nan_to_none(obj: Any) -> Any:
    """JSON-safe copy of ``obj`` (NaN -> null); see :func:`sdcbayes.provenance.json_safe`."""
    from sdcbayes.provenance import json_safe

    return json_safe(obj)


def write_csv(path: Path, frame) -> None:
    """Fast CSV writer (pyarrow; pandas' writer costs seconds at 10^6 rows).

    The header is written with the csv module so that names are quoted only
    when needed (pyarrow always quotes header names).
    """
    import csv
    import io

    import pyarrow as pa
    import pyarrow.csv as pacsv

    head = io.StringIO()
    csv.writer(head, lineterminator="\n").writerow([str(c) for c in frame.columns])
    options = pacsv.WriteOptions(include_header=False, quoting_style="needed")
    with open(path, "wb") as fh:
        fh.write(head.getvalue().encode("utf-8"))
        pacsv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), fh, options)


def echo_table(rows: list[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        click.echo(f"  {k:<{width}}  {v}")
