"""Shared plumbing of the CLI commands: atomic output folders, JSON/CSV writers.

Every command validates all of its input before doing any work and writes its
output folder atomically (:func:`write_output_folder`), so a failed run never
leaves a half-written folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import click

from sdcbayes.exceptions import InputError

EXIT_INPUT = 2
#: The files the commands write (besides ``protect``'s protected file, whose name its
#: summary.json records as ``protected_file``). A run lists the files it wrote in its
#: summary.json (``output_files``); in a folder of ours written by a version that kept no
#: such list, these names are taken for the old run's outputs (:func:`previous_outputs`).
OUTPUT_FILES = frozenset({
    "summary.json", "records.csv", "report.html", "posterior.nc", "decisions.csv",
    "frontier.csv", "frontiers.csv", "comparison.csv", "log.csv",
})


# --------------------------------------------------------------------------- helpers
#: ``--na-values``, the same option in assess, compare, protect and suda.
#: ``--l-diversity-c``'s help (``assess`` and ``protect``).
L_DIVERSITY_C_HELP = (
    "With --sensitive: the constant c of the recursive (c, l)-diversity (sdcMicro's "
    "l_recurs_c), a finite number > 0. [default: 2]"
)

NA_VALUES_HELP = (
    "Comma-separated codes that mean 'missing' in every column of the file, e.g. "
    "--na-values -9,99,. (sdcbayes.microdata.read_microdata's na_values): a CSV field "
    "whose text is one of them (in a numeric CSV column also a number equal to one: -9 "
    "matches -9.0); in SPSS, Stata, SAS and Parquet files a number equal to one (-9 matches -9.0), "
    "a text, or a value label or labelled code listed. Without it only empty fields, an "
    "unquoted NA, #N/A, NaN or nan, a lone '.' in a numeric CSV column and SPSS/Stata "
    "declared missing values are missing."
)

#: ``--encoding``, the same option in every command that reads a data file.
ENCODING_HELP = (
    "Text encoding of the data file, e.g. --encoding latin-1 or cp1252 (a Python codec "
    "name; sdcbayes.microdata.read_microdata's encoding): CSV/TSV files are read as UTF-8 "
    "without it (a byte-order mark is fine; UTF-16 without one: utf-16-le or utf-16-be); "
    "for SPSS, Stata and SAS files it overrides the encoding the file declares (utf-8 "
    "too); refused for Parquet (UTF-8 by definition) and .por. protect writes its CSV "
    "back in it, so a recode's new values must be written in it. [default: utf-8 for "
    "CSV/TSV, the declared one for SPSS, Stata and SAS]"
)

#: ``--quiet`` of every command (warnings go to stderr whatever it says).
QUIET_HELP = "Print nothing on success but warnings (on stderr)."

#: ``--method`` of assess and protect: the closed form's formula, two of
#: :data:`sdcbayes.risk.individual.RISK_METHODS` (not imported: ``--help`` stays fast).
CLOSED_FORM_METHODS = ("exact", "approx")
#: What ``--method``'s words mean (each command's help says where it applies).
CLOSED_FORM_METHOD_HELP = (
    "exact E(1/F | f), or the approximation sdcMicro/mu-Argus use (sdcMicro's "
    "measure_risk default)."
)


def closed_form_method_option(help_text: str, name: str = "method"):
    """``--method exact|approx`` (default exact): the same choices and default everywhere.

    ``help_text`` is the command's help (it ends with :data:`CLOSED_FORM_METHOD_HELP`);
    ``name`` the parameter the command receives. A value outside
    :data:`CLOSED_FORM_METHODS` is refused by click before the command runs (one line,
    exit 2, as every other choice).
    """
    return click.option(
        "--method", name, type=click.Choice(list(CLOSED_FORM_METHODS)), default="exact",
        show_default=True, help=help_text,
    )

#: --cores of assess and compare.
CORES_HELP = (
    "Posterior models: chains run at once. latent-class: threads, default all CPUs up to "
    "--chains (the draws do not depend on it); NUTS: worker processes, default 1 (each "
    "compiles the model again). NUTS draws depend on it: with more than 1 core PyMC's own "
    "sampler runs the chains, so --seed repeats a run only with the same --cores (stamped "
    "in summary.json's settings)."
)


def parse_na_values(text: str | None, option: str = "--na-values") -> list[str] | None:
    """``"-9,99,."`` -> ``["-9", "99", "."]`` (as texts: read_microdata matches numbers too).

    None when the option is not given; an option given with no code is refused.
    """
    if text is None:
        return None
    codes = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not codes:
        raise InputError(f"{option} is empty; give the codes that mean missing, e.g. "
                         f"{option} -9,99,.")
    return codes


def parse_encoding(text: str | None, data: Path | None,
                   option: str = "--encoding") -> str | None:
    """``--encoding``'s codec under its canonical name (``latin-1`` -> ``iso8859-1``).

    Checked before any work: an unknown codec name (:func:`codecs.lookup`), a data
    file whose encoding cannot be given (Parquet, SPSS portable), or the option
    without a data file (the demo) is refused in one line. None when not given. The
    name returned is what provenance records and what the readers are given
    (:func:`sdcbayes.microdata._check_encoding`).
    """
    if text is None:
        return None
    if data is None:
        raise InputError(f"{option} gives a data file's text encoding; give the file (DATA), "
                         f"or leave out {option} for the demo")
    from sdcbayes.microdata import _codec_name, _extension

    return _codec_name(text, _extension(Path(data)), Path(data), what=option)


def split_names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    return names or None


def previous_outputs(out: Path) -> frozenset[str] | None:
    """Names of the files a previous sdcbayes run wrote into ``out``, or None if not ours.

    A folder is ours when its ``summary.json`` is JSON that carries
    ``sdcbayes_version`` (at the top, as every command writes it, or in its
    provenance): a file merely named summary.json (a user's project may hold one)
    does not make a folder ours. Ownership is read from that content rather than from
    a marker file of its own, so an output folder holds exactly the files its command
    documents, and folders written by earlier versions are recognised too.

    The files are those the run listed in its summary.json as ``output_files`` (plus
    summary.json itself), so that a file of the user's named like another command's
    output (``log.csv`` beside an assessment) is not taken for one. A folder written
    by a version that kept no such list falls back to the names: every name in
    :data:`OUTPUT_FILES` and the ``protected_file`` its summary.json names.

    Parameters
    ----------
    out : Path
        An existing folder.

    Returns
    -------
    frozenset of str or None
        The names (not paths) of the old run's files, present or not; None when the
        folder is not an sdcbayes output.
    """
    try:
        info = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent, unreadable or not JSON: not provably ours
        return None
    if not isinstance(info, dict):
        return None
    prov = info.get("provenance")
    if "sdcbayes_version" not in info and not (
        isinstance(prov, dict) and "sdcbayes_version" in prov
    ):
        return None
    listed = info.get("output_files")
    if isinstance(listed, list) and all(isinstance(n, str) for n in listed):
        return frozenset(listed) | {"summary.json"}
    protected = info.get("protected_file")
    return OUTPUT_FILES | ({protected} if isinstance(protected, str) else set())


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return 255


def _unwritable(out: Path, reason: str) -> InputError:
    return InputError(f"--out {out} cannot be written ({reason}); choose another folder")


def check_out_dir(
    out: Path,
    writes: Iterable[str] = (),
    inputs: Mapping[str, Path | None] | None = None,
    command: str | None = None,
) -> None:
    """Refuse, before any work, an ``--out`` the output could not be written to.

    Refused: a folder that is not a previous sdcbayes output (:func:`previous_outputs`)
    and is not empty; a file; a path under an existing file (``--out afile/sub``); a
    location that cannot be written (read-only, no permission, a name too long), found
    by creating and removing a probe folder where the output's temporary folder will go;
    an existing folder that is read-only (no write permission bit: the user protected
    it; refused even for root, who could write it), or that this user cannot write, or
    that holds a file of the user's this user cannot move into the new folder
    (:func:`write_output_folder` moves those across).

    In a previous sdcbayes output, also refused: an input file of this run that lies in
    the folder and that the run would remove (an old output) or replace (a name it
    writes), e.g. ``suda Z/protected.csv --out Z`` after ``protect ... --out Z``; and a
    file of the user's there (not an old output) named like a file this run writes.
    Any other file of the user's, an input among them, is carried over.

    With ``command``, an earlier output of another command (:func:`previous_command`)
    is refused too, naming its files: replacing it as a whole silently removed, e.g.,
    a ``protect`` output's protected file under ``assess --out`` (audit UX F3). The
    same command's earlier output is replaced, as documented.

    Parameters
    ----------
    out : Path
        The ``--out`` folder, existing or not.
    writes : iterable of str
        The names of the files this run may write into ``out``.
    inputs : mapping of str to Path or None, optional
        The run's input files by the name the user knows them by (``"DATA"``,
        ``"--recipe"``); None for an input not given.
    command : str, optional
        This run's command (``"assess"``, ``"protect"``, ...).

    Raises
    ------
    InputError
        With the folder, the file and the fix in its message.
    """
    try:
        _check_out_dir(out)
        if out.is_dir():
            # an input in the folder first: its message names that file
            _check_out_files(out, frozenset(writes), inputs or {})
            if command is not None:
                _check_same_command(out, command)
    except OSError as e:  # e.g. out.exists() on a name longer than the file system allows
        raise _unwritable(out, e.strerror or str(e)) from None


#: The commands, as summary.json and the command line name them.
COMMANDS = ("assess", "compare", "decide", "suda", "protect")


def previous_command(out: Path) -> str | None:
    """The command whose earlier output ``out`` holds, or None when it cannot be told.

    From its summary.json (an sdcbayes output, :func:`previous_outputs`): the top-level
    ``command`` (compare, decide, protect, suda); else the first command word in
    ``provenance.command``, the command line stamped (assess); else the files listed
    only one command writes (a protected file or log.csv: protect; comparison.csv:
    compare; frontier.csv: decide; records.csv without a top-level ``command``:
    assess, as suda names itself).
    """
    if previous_outputs(out) is None:
        return None
    try:
        info = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if info.get("command") in COMMANDS:
        return info["command"]
    prov = info.get("provenance")
    line = prov.get("command") if isinstance(prov, dict) else None
    if isinstance(line, str):
        words = line.split()
        if words and words[0].endswith("sdcbayes"):  # as typed, not a test runner's argv
            named = next((w for w in words[1:] if w in COMMANDS), None)
            if named is not None:
                return named
    listed = set(info.get("output_files") or ()) if isinstance(
        info.get("output_files"), list) else set()
    if info.get("protected_file") or "log.csv" in listed:
        return "protect"
    if "comparison.csv" in listed:
        return "compare"
    if "frontier.csv" in listed:
        return "decide"
    if "records.csv" in listed and "command" not in info:  # suda names itself at the top
        return "assess"
    return None


def _check_same_command(out: Path, command: str) -> None:
    """Refuse to replace another command's earlier output in ``out`` (audit UX F3)."""
    other = previous_command(out)
    if other is None or other == command:
        return
    names = previous_outputs(out) or frozenset()
    present = sorted(n for n in names if os.path.lexists(out / n))
    raise InputError(
        f"--out {out} holds the output of an earlier 'sdcbayes {other}' run "
        f"({', '.join(present)}), which this {command} run would remove; choose another "
        f"--out, or delete the folder (or move those files) first")


def _entries_in(folder: Path, path: Path) -> list[str]:
    """The names of the entries of ``folder`` that ``path`` is, or leads to (a symlink)."""
    names = []
    for candidate in (Path(os.path.abspath(path)), Path(os.path.realpath(path))):
        try:
            if os.path.lexists(candidate) and os.path.samefile(candidate.parent, folder):
                names.append(candidate.name)
        except OSError:  # a parent that does not exist: not in the folder
            pass
    return list(dict.fromkeys(names))


def _check_out_files(out: Path, writes: frozenset[str], inputs: Mapping[str, Path | None]
                     ) -> None:
    previous = previous_outputs(out)
    if previous is None:  # an empty folder (any other was refused): nothing to lose there
        return
    for label, path in inputs.items():
        if path is None:
            continue
        for name in _entries_in(out, path):
            shown = str(path) if Path(path).name == name else f"{path} ({out / name})"
            if name in previous:
                raise InputError(
                    f"{label} {shown} lies in --out {out}, whose earlier outputs this run "
                    "replaces; choose another --out or move the file out first")
            if name in writes:
                raise InputError(
                    f"{label} {shown} lies in --out {out}, where this run writes its own "
                    f"{name}; choose another --out or move the file out first")
    for name in sorted(writes - previous):
        if os.path.lexists(out / name):
            raise InputError(
                f"--out {out} holds {name}, which is not an earlier sdcbayes output there and "
                "which this run would replace; move or rename it, or choose another --out")
    for entry in sorted(out.iterdir()):
        if entry.name not in previous and entry.name not in writes:
            _check_movable(out, entry)


def _check_writable_folder(out: Path) -> None:
    """Refuse an existing ``out`` that is read-only, or that this user cannot write.

    A rerun replaces the folder (:func:`write_output_folder`): it renames the user's
    files out of it and removes the old outputs, which needs write permission on the
    folder itself, not only on its parent. Without this check a read-only folder was
    refused only after the fit, by the first rename, and the results were lost; and
    root, whom permissions do not stop, silently replaced a folder the user had made
    read-only. A folder without any write permission bit is taken as protected by
    its owner whoever runs; otherwise ``os.access`` says whether this user may write.
    """
    mode = stat.S_IMODE(out.stat().st_mode)
    if not mode & 0o222:
        raise InputError(
            f"--out {out} is read-only (mode {mode:04o}), so its results are not replaced; "
            f"make it writable (chmod u+w {out}) or choose another folder")
    if not os.access(out, os.W_OK | os.X_OK):
        raise InputError(
            f"--out {out} cannot be written (Permission denied): a rerun replaces its files; "
            "give yourself write permission on it or choose another folder")


def _check_movable(out: Path, entry: Path) -> None:
    """Refuse a file of the user's in ``out`` that this user could not move across.

    A folder moved to another parent needs write permission on itself (its ``..``
    entry changes, rename(2)); in a sticky folder only the owner of an entry (or of the
    folder) may move it. Either would stop the run after the fit.
    """
    st = entry.lstat()
    out_st = out.stat()
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    sticky = bool(out_st.st_mode & stat.S_ISVTX)
    if (sticky and euid not in (None, 0) and st.st_uid != euid and out_st.st_uid != euid) \
            or (stat.S_ISDIR(st.st_mode) and not os.access(entry, os.W_OK)):
        raise InputError(
            f"--out {out} holds {entry.name}, which a rerun moves into the new folder but "
            "which cannot be moved (Permission denied); move it out of the folder, or "
            "choose another --out")


def _check_out_dir(out: Path) -> None:
    absolute = Path(os.path.abspath(out))
    parent = next(p for p in absolute.parents if p.exists())
    if not parent.is_dir():
        raise InputError(f"--out {out} lies under {parent}, which is a file, not a "
                         "folder; give a folder path")
    if out.exists():
        if not out.is_dir():
            raise InputError(f"--out {out} exists and is a file; give a folder name")
        contents = sorted(p.name for p in out.iterdir())
        if contents and previous_outputs(out) is None:
            shown = ", ".join(contents[:3]) + (", ..." if len(contents) > 3 else "")
            raise InputError(
                f"--out {out} exists and holds files that sdcbayes did not write ({shown}); "
                "choose a new folder or empty it"
            )
        _check_writable_folder(out)
    # the components still to be made, checked against the file system's name limit
    # (the temporary folder's name is shortened, see write_output_folder)
    limit = _name_max(parent)
    for part in absolute.relative_to(parent).parts:
        if len(part.encode("utf-8", "surrogateescape")) > limit:
            raise _unwritable(out, f"the name {part[:20]}... is longer than {limit} bytes")
    # the output is written into a temporary folder beside it (in `parent` when it
    # exists) and renamed: a probe folder there finds a read-only or forbidden place now
    # rather than after the fit
    try:
        probe = tempfile.mkdtemp(prefix=".sdcbayes-probe-", dir=parent)
        os.rmdir(probe)
    except OSError as e:
        raise _unwritable(out, e.strerror or str(e)) from None


def _tmp_prefix(name: str, what: str) -> str:
    # shortened: a name near the file system's limit plus ".partial-XXXXXXXX" would not fit
    return f".{name[:100]}.{what}-"


def _output_mode() -> int:
    # mkdtemp makes the folder 0700; an output folder gets the mode a plain mkdir gives
    # it (the umask), so that colleagues can open a report written on a shared server
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


def _keep_access(old: Path, new: Path, names: Iterable[str]) -> None:
    """Give ``new`` (the replacement of the folder ``old``) ``old``'s access.

    A rerun replaces the folder itself, so without this a folder the user had closed
    to others (``chmod 2770``, group ``users``: report.html lists the riskiest key
    combinations) came back as a umask folder readable by everyone, of the user's own
    group. Copied: the permission bits with setgid and sticky, the group (also of the
    files written, ``names``, as a setgid folder would have given them), and a POSIX ACL
    where the file system keeps one. The group only where this user may set it, the ACL
    only where the platform can: best effort, the mode always. The owner is this
    user's: only root could give the folder back to another owner.
    """
    st = old.stat()
    with contextlib.suppress(OSError, AttributeError):  # not a member of that group
        os.chown(new, -1, st.st_gid)  # before the chmod: a chown may clear setgid
        for name in names:
            if (new / name).exists() and (new / name).stat().st_gid != st.st_gid:
                os.chown(new / name, -1, st.st_gid)
    os.chmod(new, stat.S_IMODE(st.st_mode))
    for attr in ("system.posix_acl_access", "system.posix_acl_default"):
        with contextlib.suppress(OSError, AttributeError):  # no ACL, or none supported
            os.setxattr(new, attr, os.getxattr(old, attr))


#: The signals that end a run from outside without a Python exception: a batch
#: scheduler's SIGTERM, a closed terminal's SIGHUP (SIGINT raises KeyboardInterrupt).
_TERMINATING = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))
_DEFERRED = (*_TERMINATING, signal.SIGINT)


class _Terminated(SystemExit):
    """Raised by the temporary handler of :func:`_terminate_as_exception`."""


@contextlib.contextmanager
def _terminate_as_exception() -> Iterator[None]:
    """While writing, turn SIGTERM and SIGHUP into an exception, so cleanup runs.

    Their default action kills the process at once, which left the hidden
    ``.OUT.partial-XXXX`` folder (a posterior.nc of up to a GB) behind; as a
    :class:`SystemExit` with the shell's status (128 + the signal) they unwind through
    :func:`write_output_folder`'s cleanup. Only a signal at its default action is taken
    over (a program's own handler, and SIG_IGN under nohup, are left alone), only in the
    main thread (the only one Python runs handlers in), and the previous handler is put
    back afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise _Terminated(128 + signum)

    previous = {}
    try:
        for sig in _TERMINATING:
            if signal.getsignal(sig) == signal.SIG_DFL:
                previous[sig] = signal.signal(sig, handler)
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back for the few renames that swap the folders.

    An exception between renaming the old folder away and the new one into place would
    leave no ``out`` at all (the old results under a hidden name); held back, the signal
    is raised again, and handled, once the swap is complete. Held at the Python level (a
    handler that only records the signal, then :func:`signal.raise_signal`), not with
    ``pthread_sigmask``: that blocks the main thread only, and a signal sent to the
    process is then delivered through another thread (NumPy's BLAS threads), whose C
    handler still makes Python run the main thread's handler at once. Ignored signals stay
    ignored; main thread only (the only one Python runs handlers in).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []

    def hold(signum, frame):
        pending.append(signum)

    previous = {}
    try:
        for sig in _DEFERRED:
            if signal.getsignal(sig) not in (signal.SIG_IGN, None):
                previous[sig] = signal.signal(sig, hold)
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        for sig in dict.fromkeys(pending):  # each once, in the order they came
            signal.raise_signal(sig)


def write_output_folder(out: Path, writers: dict[str, Callable[[Path], None]]) -> None:
    """Write every file into a temporary sibling folder, then move it into place.

    A previous sdcbayes output in ``out`` is replaced only once the new one is
    complete, so an interrupted run (Ctrl-C, SIGTERM, SIGHUP: :func:`_terminate_as_exception`)
    leaves the old results intact and no temporary folder behind. Files in the old
    folder that are not sdcbayes outputs (a user's notes) are carried over into the new
    one; the old run's own outputs (:func:`previous_outputs`) are not, so a stale
    ``posterior.nc`` never sits beside results it does not belong to. The new folder
    keeps the old one's permission bits, group and ACL (:func:`_keep_access`). A file of
    the user's that a writer would replace, an input of the run that would go, and a
    folder that cannot be written were refused before any work by :func:`check_out_dir`.

    Parameters
    ----------
    out : Path
        The output folder, existing (a previous sdcbayes output, or empty) or not.
    writers : dict of str to callable
        File name -> function that writes that file at the path it is given.
    """
    out = out.resolve()
    previous: frozenset[str] | None = None
    if out.exists():
        previous = previous_outputs(out)
        if previous is None and any(out.iterdir()):  # check_out_dir refused this already
            raise InputError(f"--out {out} exists and holds files that sdcbayes did not "
                             "write; choose a new folder or empty it")
    out.parent.mkdir(parents=True, exist_ok=True)
    with _terminate_as_exception():
        _write_and_swap(out, previous, writers)


def _write_and_swap(out: Path, previous: frozenset[str] | None,
                    writers: dict[str, Callable[[Path], None]]) -> None:
    """:func:`write_output_folder`'s work, with its cleanup on any exception."""
    tmp = Path(tempfile.mkdtemp(prefix=_tmp_prefix(out.name, "partial"), dir=out.parent))
    carried: list[str] = []
    swapped = False
    try:
        for name, write in writers.items():
            write(tmp / name)
        if out.exists():
            for entry in sorted(out.iterdir()):
                if entry.name not in (previous or ()) and entry.name not in writers:
                    entry.rename(tmp / entry.name)  # same file system: a rename, no copy
                    carried.append(entry.name)
            _keep_access(out, tmp, writers)  # after the moves: the mode may not let us write
            old = out.with_name(_tmp_prefix(out.name, f"old-{os.getpid()}"))
            with _signals_deferred():
                out.rename(old)
                try:
                    tmp.rename(out)
                except BaseException:
                    old.rename(out)  # the old output (user files still in tmp, moved back below)
                    raise
                swapped = True
                shutil.rmtree(old, ignore_errors=True)
        else:
            os.chmod(tmp, _output_mode())
            with _signals_deferred():
                tmp.rename(out)
                swapped = True
    except BaseException:
        if swapped:  # a signal delivered after the swap: the new output is complete
            raise
        with contextlib.suppress(OSError):
            os.chmod(tmp, 0o700)  # _keep_access may have left it unwritable to us
        for name in carried:  # the user's files go back where they were
            try:
                (tmp / name).rename(out / name)
            except OSError:
                pass
        if not carried or all(not (tmp / n).exists() for n in carried):
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


# --------------------------------------------------------------------------- repeated options
def repeated_option_error(command: click.Command, args: list[str]) -> str | None:
    """The message refusing a single-valued option given more than once, or None.

    click keeps the last of ``--keys age --keys sex`` without a word, so ``age`` would
    be dropped silently. Options that take a value and are not ``multiple=True`` (those
    meant to repeat, such as protect's ``--recode``, are left alone) are counted in the
    raw arguments, in both spellings (``--keys age`` and ``--keys=age``); flags are not
    (a flag given twice means the same thing). Arguments after ``--`` are not options.
    """
    takes_value: dict[str, click.Option] = {}
    flags: set[str] = set()
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        names = [*param.opts, *param.secondary_opts]
        if param.is_flag or param.count:
            flags.update(names)
        else:
            takes_value.update(dict.fromkeys(names, param))
    seen: dict[str, list[tuple[str, str]]] = {}
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            break
        if not token.startswith("-") or token == "-" or token in flags:
            continue
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            param = takes_value.get(name)
            if param is None:
                continue
            if not eq:
                value = args[i] if i < len(args) else ""
                i += 1
        else:  # a short option: -kVALUE or -k VALUE
            name = token[:2]
            param = takes_value.get(name)
            if param is None:
                continue
            value = token[2:]
            if not value:
                value = args[i] if i < len(args) else ""
                i += 1
        if not param.multiple:
            seen.setdefault(param.name, []).append((name, value))
    for uses in seen.values():
        if len(uses) < 2:
            continue
        option = uses[0][0]
        times = "twice" if len(uses) == 2 else f"{len(uses)} times"
        values = [v for _, v in uses]
        if option == "--keys":
            joined = ",".join(dict.fromkeys(
                n.strip() for v in values for n in v.split(",") if n.strip()))
            return f"--keys given {times}; list all keys in one --keys {joined}"
        shown = ", ".join(repr(v) for v in values)
        return (f"{option} given {times} ({shown}); it takes one value: give it once "
                "(with the value you mean)")
    return None


class SingleValueCommand(click.Command):
    """A command that refuses a single-valued option given twice (:func:`repeated_option_error`).

    Every sdcbayes command is one (``cls=SingleValueCommand``): click would otherwise keep
    the last value and drop the others silently.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Refuse a repeated single-valued option, then parse as click does."""
        problem = repeated_option_error(self, list(args))
        if problem is not None:
            raise click.UsageError(problem, ctx=ctx)
        return super().parse_args(ctx, args)
