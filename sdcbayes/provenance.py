"""Provenance stamps: what produced a result, so that results can be reproduced.

Every result (summary.json, a posterior, a report) carries the package version,
the model and its priors, a summary of the data and the versions of the
numerical stack. Only the standard library and already-imported modules are
consulted, so stamping never imports PyMC.
"""

from __future__ import annotations

import datetime as _dt
import functools
import platform
import sys
from importlib import metadata
from typing import Any

import numpy as np

from sdcbayes._version import __version__

_STACK = ("numpy", "scipy", "pandas", "xarray", "pymc", "pytensor", "arviz")


def json_safe(obj: Any) -> Any:
    """Plain-JSON copy of ``obj``: NumPy and pandas values to Python, NaN/inf to None.

    JSON has no NaN, so non-finite numbers and missing values (``pd.NA``,
    ``pd.NaT``) become ``null`` and every file sdcbayes writes is valid JSON for
    any reader. Dict keys become strings; sets become sorted lists; pandas
    Series, Index and arrays become lists; paths and other objects their ``str``.
    """
    import math
    from pathlib import PurePath

    import numpy as np

    # pandas only when already loaded: a pandas object cannot exist otherwise
    pd = sys.modules.get("pandas")
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        items = [json_safe(v) for v in obj]
        try:  # a set has no order of its own: sorted, so that a stamp is reproducible
            return sorted(items)
        except TypeError:  # mixed types
            return sorted(items, key=lambda v: (type(v).__name__, str(v)))
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if pd is not None and isinstance(obj, (pd.Series, pd.Index, pd.api.extensions.ExtensionArray)):
        return json_safe(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, PurePath):
        return str(obj)
    if pd is not None and pd.api.types.is_scalar(obj) and pd.isna(obj):
        return None  # pd.NA, pd.NaT, numpy's NaT
    return str(obj)


def package_versions(names: tuple[str, ...] = _STACK) -> dict[str, str]:
    """Installed versions of the numerical stack (``"not installed"`` when absent)."""
    return dict(_package_versions(tuple(names)))


@functools.lru_cache(maxsize=8)
def _package_versions(names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    # read once per process: each metadata lookup scans the installed distributions
    # (about 4 ms a stamp), and every protection step and result is stamped
    out = {"python": platform.python_version(), "sdcbayes": __version__}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return tuple(out.items())


def seed_or_drawn(random_seed):
    """``random_seed``, or without one (None) a seed drawn from the operating system.

    Unseeded runs stamp the drawn seed in their settings, so that passing it back
    (``random_seed=`` / ``--seed``) repeats the run.
    """
    if random_seed is not None:
        return random_seed
    return int(np.random.SeedSequence().generate_state(1)[0])


#: Spellings of the seed (protection and datasets take ``seed=``, array helpers ``rng=``)
#: that mean ``random_seed`` in fit, assess_posterior and compare_models.
SEED_SPELLINGS = frozenset({"seed", "rng", "random_state", "seeds"})


def check_seed_spelling(options) -> None:
    """Raise :class:`InputError` naming ``random_seed`` for a seed passed as ``seed=``, ...

    The options a fitting function passes on (``**kwargs``) are checked against
    :data:`SEED_SPELLINGS` before its own unknown-option message, which would suggest
    the nearest option name ('seed' reads like 'shared').
    """
    from sdcbayes.exceptions import InputError

    seedlike = [k for k in options if k in SEED_SPELLINGS]
    if seedlike:
        hints = ", ".join(f"{k!r} (did you mean 'random_seed'?)" for k in seedlike)
        raise InputError(
            f"unknown option(s) {hints}: the seed of fit, assess_posterior and compare_models "
            "is random_seed=, e.g. random_seed=1 (None draws one and stamps it)"
        )


def command_line() -> str:
    """The command that is running, as typed (best effort)."""
    import shlex

    argv = list(sys.argv)
    if argv and argv[0].endswith(("sdcbayes", "sdcbayes.exe", "__main__.py")):
        argv[0] = "sdcbayes"
    return " ".join(shlex.quote(a) for a in argv)


def file_fingerprint(path) -> dict[str, Any] | None:
    """Path, size and SHA-256 of an input file, so that a result names the very bytes read.

    The digest is what ``sha256sum FILE`` prints: anyone holding a file can check that
    a summary was computed from it. Read in 1 MiB blocks (about 1 s per GB), so memory
    stays flat whatever the file's size. ``None`` for ``None`` (the embedded demo).
    """
    import hashlib
    from pathlib import Path

    if path is None:
        return None
    path = Path(path)
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(2**20), b""):
            digest.update(block)
    return {"path": str(path), "bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def stamp(
    model: str,
    *,
    priors: dict[str, Any] | None = None,
    data_summary: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    input_file=None,
) -> dict[str, Any]:
    """Return a JSON-serialisable provenance record.

    Parameters
    ----------
    model : str
        Model or method name (``"closed-form"``, ``"poisson-gamma"``, ...).
    priors : dict, optional
        The merged prior configuration (posterior models).
    data_summary : dict, optional
        :meth:`sdcbayes.Microdata.summary` or a model's data summary.
    settings : dict, optional
        Fitting settings (draws, chains, seed, method, ...).
    input_file : path, optional
        The data file read: stamped as ``input`` (:func:`file_fingerprint`: path, bytes,
        SHA-256); left out when not given.
    """
    # json_safe: priors, data summary and settings come as given (NumPy seeds, pandas
    # values), and the record is promised to serialise
    record = {
        "sdcbayes_version": __version__,
        "model": model,
        "priors": priors,
        "data": data_summary,
        "settings": settings or {},
        "versions": package_versions(),
        "command": command_line(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    if input_file is not None:
        record["input"] = file_fingerprint(input_file)
    return json_safe(record)
