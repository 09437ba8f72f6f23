"""Posterior container access, provenance stamps and posterior I/O.

The posterior container is :class:`arviz.InferenceData` with ArviZ 0.x (PyMC 5) and
:class:`xarray.DataTree` with ArviZ 1 (PyMC 6). Everything in sdcbayes reads groups
through :func:`get_group`; what differs between the two (building, adding and removing
groups, reading netCDF, LOO) is in :mod:`sdcbayes._compat`.

Provenance lives in the attributes of the ``posterior`` group (they survive
``to_netcdf``) and is mirrored on ``idata.attrs``: ``sdcbayes_version``,
``model``, ``model_options``, ``priors``, ``data_summary``, ``settings``,
``diagnostics`` (JSON strings where structured) and ``loglik_weight_var``.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from sdcbayes import _compat
from sdcbayes.exceptions import InputError
from sdcbayes.provenance import json_safe

__all__ = [
    "PROVENANCE_KEYS",
    "decode_stamps",
    "fit_diagnostics",
    "get_group",
    "group_names",
    "has_group",
    "load_posterior",
    "posterior_stamps",
    "provenance",
    "save_posterior",
    "stamp",
]

#: attrs every sdcbayes posterior carries
PROVENANCE_KEYS = (
    "sdcbayes_version",
    "model",
    "model_options",
    "priors",
    "data_summary",
    "settings",
    "diagnostics",
)
_JSON_KEYS = ("model_options", "priors", "data_summary", "settings", "diagnostics", "provenance")
#: attr listing the other stamps :func:`stamp` stored as JSON (booleans, None, lists, ...),
#: so that :func:`decode_stamps` gives them back as they were given, not as JSON text
_JSON_FIELDS_ATTR = "sdcbayes_json_fields"


def _is_tree(idata) -> bool:
    return _compat.is_tree(idata)


def _not_a_container(idata) -> InputError:
    """The error for an object that is no posterior container, with the likely fix."""
    kind = type(idata).__name__
    if hasattr(idata, "idata"):
        hint = f"pass its posterior, {kind}.idata (e.g. result.idata of assess_posterior)"
    elif isinstance(idata, str | os.PathLike):
        hint = "read the file first: sdcbayes.inference.load_posterior(path)"
    elif isinstance(idata, xr.Dataset):
        hint = ("a Dataset is one group of a posterior; pass the whole posterior, or wrap "
                "it: arviz.InferenceData(posterior=ds)")
    else:
        hint = "fit one with sdcbayes.inference.fit or read one with load_posterior(path)"
    return InputError(
        f"expected a posterior (arviz.InferenceData or xarray.DataTree); got {kind}: {hint}"
    )


def group_names(idata) -> list[str]:
    """Names of the groups of a posterior container (InferenceData or DataTree).

    Raises
    ------
    InputError
        When ``idata`` is no posterior container (a result object, a Dataset, a path).
    """
    if _compat.is_container(idata):
        return _compat.group_names(idata)
    raise _not_a_container(idata)


def has_group(idata, name: str) -> bool:
    """Whether the posterior container has group ``name``.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        A posterior container (e.g. from :func:`sdcbayes.inference.fit`).
    name : str
        The group, e.g. ``"posterior"``, ``"log_likelihood"``, ``"posterior_predictive"``.

    Returns
    -------
    bool
        True when the group is present.

    Raises
    ------
    InputError
        When ``idata`` is no posterior container (a result object, a Dataset, a path).
    """
    return name in group_names(idata)


def get_group(idata, name: str) -> xr.Dataset:
    """Return group ``name`` (``"posterior"``, ``"log_likelihood"``, …) as an xarray Dataset.

    The one place that knows the container type: ``InferenceData`` today,
    ``xarray.DataTree`` from ArviZ >= 1 (``idata[name].to_dataset()``).

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        A posterior container (e.g. from :func:`sdcbayes.inference.fit`).
    name : str
        The group, e.g. ``"posterior"``, ``"log_likelihood"``, ``"constant_data"``.

    Returns
    -------
    xarray.Dataset
        The group's variables with their ``(chain, draw, ...)`` dims and attributes.

    Raises
    ------
    InputError
        When the group is absent, listing the groups present.
    """
    names = group_names(idata)
    if name not in names:
        raise InputError(
            f"the posterior has no group {name!r}; available groups: {names}. "
            "Fit with sdcbayes.inference.fit (it adds log_likelihood) or load a complete file"
        )
    if not _is_tree(idata):
        return idata[name]
    return idata[name].to_dataset()


def _dumps(obj) -> str:
    return json.dumps(json_safe(obj), sort_keys=True)


def _encode_stamp(value):
    """A stamp value netCDF can store: str, int64 or float as is, anything else as JSON.

    Encoded here, not at save time: a value netCDF refuses (a bool, an int beyond 64 bits)
    would otherwise fail :func:`save_posterior` long after the stamp was written.
    """
    if isinstance(value, np.generic):
        value = value.item()  # NumPy scalars as Python values
    if isinstance(value, bool):  # an int subclass, but netCDF has no boolean attributes
        return _dumps(value)
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else _dumps(value)
    if isinstance(value, str | float):
        return value
    return _dumps(value)


def stamp(idata, **fields: Any) -> None:
    """Write provenance ``fields`` on the posterior group attrs and ``idata.attrs``.

    Strings, integers and floats are stored as they are; anything else (dicts, lists,
    None, booleans) as a JSON string, so that every stamp survives netCDF.
    :func:`provenance` decodes them again (the structured fields ``settings``,
    ``priors``, ... and any other stamp given as something other than a string).
    """
    encoded = {k: _encode_stamp(v) for k, v in fields.items()}
    json_fields = {
        k for k, v in fields.items()
        if k not in _JSON_KEYS and not isinstance(v, str) and isinstance(encoded[k], str)
    }
    previous = dict(getattr(idata, "attrs", {}) or {}).get(_JSON_FIELDS_ATTR)
    if json_fields or previous:
        try:
            known = set(json.loads(previous)) if previous else set()
        except (TypeError, json.JSONDecodeError):
            known = set()
        # a key re-stamped with a plain str/int/float is no longer JSON
        known = (known - set(fields)) | json_fields
        encoded[_JSON_FIELDS_ATTR] = _dumps(sorted(known))
    if _is_tree(idata):
        get_group(idata, "posterior")  # the usual error when the group is absent
        # the node itself: get_group returns a Dataset copy whose attrs are not the tree's
        idata["posterior"].attrs.update(encoded)
    else:
        get_group(idata, "posterior").attrs.update(encoded)
    idata.attrs.update(encoded)


def provenance(idata) -> dict[str, Any]:
    """Return the provenance stamps of a posterior, JSON fields decoded.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        A posterior container stamped by :func:`sdcbayes.inference.fit` (or
        :func:`load_posterior`).

    Returns
    -------
    dict
        The attrs of the ``posterior`` group (``sdcbayes_version``, ``model``,
        ``model_options``, ``priors``, ``data_summary``, ``settings``,
        ``diagnostics``, ...), structured fields decoded from JSON. Empty stamps give
        the plain attrs of a posterior built by hand.

    Raises
    ------
    InputError
        When ``idata`` is no posterior container or has no ``posterior`` group.
    """
    return decode_stamps(get_group(idata, "posterior").attrs)


def posterior_stamps(posterior) -> dict[str, Any]:
    """The stamps of a posterior (a container, or its posterior group), JSON fields decoded.

    The container's own attrs win over its posterior group's. Empty for a posterior
    without stamps (built by hand): nothing can be checked then.
    """
    attrs = dict(getattr(posterior, "attrs", None) or {})
    if not isinstance(posterior, xr.Dataset) and has_group(posterior, "posterior"):
        attrs = dict(get_group(posterior, "posterior").attrs) | attrs
    return decode_stamps(attrs)


def decode_stamps(attrs) -> dict[str, Any]:
    """Stamps as written by :func:`stamp` (attrs of a posterior), their JSON fields decoded."""
    attrs = dict(attrs)
    try:
        json_fields = set(json.loads(attrs.pop(_JSON_FIELDS_ATTR, "[]")))
    except (TypeError, json.JSONDecodeError):
        json_fields = set()
    out = {}
    for key, value in attrs.items():
        if (key in _JSON_KEYS or key in json_fields) and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        out[key] = value
    return out


#: Suffixes of a posterior file (compared case-insensitively); any other path is a folder
#: that holds ``posterior.nc``.
_NETCDF_SUFFIXES = (".nc", ".nc4", ".netcdf", ".cdf", ".h5", ".hdf5")
#: Suffixes of other formats, refused rather than made into a folder of that name.
_OTHER_FORMATS = (".zarr", ".zip", ".json", ".csv", ".pkl", ".pickle", ".npz", ".npy",
                  ".parquet", ".txt", ".gz")


def _posterior_path(path) -> Path:
    if not isinstance(path, str | os.PathLike):
        raise InputError(
            f"path must be a file or folder name (str or pathlib.Path); got {type(path).__name__}"
        )
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in _NETCDF_SUFFIXES:
        return path
    if suffix in _OTHER_FORMATS:
        raise InputError(
            f"unsupported format {path.suffix!r} ({str(path)!r}): posteriors are read and "
            "written as netCDF only; name a .nc file, or a folder that holds posterior.nc"
        )
    return path / "posterior.nc"


def _unstorable(values: np.ndarray) -> str:
    """Why netCDF cannot store an object array as it is ("" when it can).

    Mirrors xarray's inference of the netCDF type (``backends.common._infer_dtype``):
    the elements other than missing values (None, nan) must be of one Python type (str
    and bytes together pass), and that type must be text or a NumPy scalar kind.
    """
    import pandas as pd

    flat = values.ravel()
    present = flat[~pd.isnull(flat)]
    types = {type(v) for v in present}
    if not types or types <= {str, bytes}:
        return ""
    names = ", ".join(sorted(t.__name__ for t in types))
    if len(types) > 1:
        return f"values of mixed types ({names})"
    if np.asarray(present[0]).dtype == object:
        return f"Python objects ({names})"
    return ""


def _check_storable(idata) -> None:
    """Refuse, before anything is written, what netCDF cannot store as it is.

    An object-dtype coordinate or variable (e.g. domain labels from a column of mixed
    types) must hold one kind of value: xarray infers its netCDF type from the elements
    and fails on ``[1, "b"]`` with a bare ValueError. Converting the labels to text here
    would hand ``"1"`` back for ``1`` on :func:`load_posterior`, so the user chooses.
    """
    for group in group_names(idata):
        ds = get_group(idata, group)
        for name, var in ds.variables.items():
            if var.dtype != object or var.size == 0:
                continue
            why = _unstorable(np.asarray(var.values))
            if why:
                if name in ds.coords:
                    fix = ("give its labels one type, e.g. text (refit with labels such as "
                           f"[str(d) for d in labels], or assign_coords({name}=...astype(str)) "
                           "in every group that has it)")
                else:
                    fix = "give it values of one type, e.g. text or numbers"
                raise InputError(
                    f"cannot save the posterior: "
                    f"{'coordinate' if name in ds.coords else 'variable'} {str(name)!r} "
                    f"(group {group!r}) holds {why}, which netCDF cannot store; {fix}, "
                    "then save again"
                )


def save_posterior(idata, path) -> Path:
    """Write the posterior with its provenance to netCDF.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        A posterior from :func:`sdcbayes.inference.fit`.
    path : str or pathlib.Path
        A netCDF file (suffix ``.nc``, ``.nc4``, ``.netcdf``, ``.cdf``, ``.h5`` or ``.hdf5``,
        any case), or a folder (created if needed) that receives ``posterior.nc``. An
        existing file is replaced, only once the new one is completely written (a
        failed save leaves it as it was), so a posterior may be saved back to the file
        it was loaded from.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InputError
        ``idata`` is no posterior or lacks the provenance stamps; a coordinate or
        variable holds labels of mixed types (e.g. ``[1, "b"]``) or Python objects,
        which netCDF cannot store; ``path`` names another format (``.zarr``, ``.json``,
        ...), an existing folder with a netCDF suffix, or lies under a file.
    """
    missing = [k for k in ("sdcbayes_version", "model") if k not in provenance(idata)]
    if missing:
        raise InputError(
            f"the posterior lacks the provenance stamps {missing}; fit it with "
            "sdcbayes.inference.fit, or stamp it with sdcbayes.inference.posterior.stamp"
        )
    _check_storable(idata)
    target = _posterior_path(path)
    if target.is_dir():
        raise InputError(
            f"{str(target)!r} is a folder; name a file (e.g. {str(target / 'posterior.nc')!r}) "
            "or pass a folder without a netCDF suffix"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as err:
        raise InputError(
            f"cannot create the folder {str(target.parent)!r}: a file of that name (or of a "
            "folder above it) exists; choose another path"
        ) from err
    # Written beside the target and moved onto it only once complete: ArviZ writes group by
    # group, so a write that fails part-way would otherwise leave a truncated file in place
    # of a good one; and the target may be the very file the posterior was read from.
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
    try:
        # h5netcdf named, not left to the library: ArviZ's InferenceData defaults to it,
        # but xarray's DataTree (2024.10) falls back to the scipy engine when netCDF4 is
        # absent, which cannot write groups (audit DD1 F5). ArviZ 0.x requires h5netcdf;
        # ArviZ 1 does not, so sdcbayes requires it itself (pyproject.toml).
        idata.to_netcdf(str(partial), engine="h5netcdf")
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target


def load_posterior(path):
    """Read a posterior written by :func:`save_posterior` (provenance restored on ``attrs``).

    Parameters
    ----------
    path : str or pathlib.Path
        The ``.nc`` file or the folder holding ``posterior.nc``.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        Read into memory, the file closed: saving it back to ``path`` is safe.

    Raises
    ------
    InputError
        No such file, a folder, a file that is not netCDF, a netCDF file that is no
        ArviZ posterior (no groups, no ``posterior`` group) or has no sdcbayes stamps.
    """
    target = _posterior_path(path)
    if Path(path).is_file():
        target = Path(path)  # an existing file is read whatever its suffix (posterior.bak)
    if target.is_dir():
        raise InputError(
            f"{str(target)!r} is a folder, not a posterior file; pass the posterior.nc "
            "written by save_posterior (or the output folder that holds it)"
        )
    if not target.is_file():
        raise InputError(
            f"no posterior file at {str(target)!r}; pass the posterior.nc written by "
            "save_posterior (or the output folder that holds it)"
        )
    try:
        # eagerly, and the file closed: a lazily read posterior keeps it open, and saving
        # it back to the same path would truncate the data it has yet to read
        idata = _compat.open_netcdf(str(target))
    except (OSError, ValueError) as err:
        raise InputError(
            f"{str(target)!r} is not a netCDF file ({err}); pass the posterior.nc written "
            "by save_posterior"
        ) from err
    if not _compat.group_names(idata):
        raise InputError(
            f"{str(target)!r} is a netCDF file but has no groups: not an ArviZ posterior; "
            "pass the posterior.nc written by save_posterior"
        )
    if "posterior" not in _compat.group_names(idata):
        raise InputError(
            f"{str(target)!r} has no 'posterior' group (groups: {_compat.group_names(idata)}): "
            "not a posterior; pass the posterior.nc written by save_posterior"
        )
    if "model" not in get_group(idata, "posterior").attrs:
        raise InputError(
            f"{str(target)!r} is not an sdcbayes posterior (no provenance stamps); "
            "load it with arviz.from_netcdf instead"
        )
    idata.attrs.update(dict(get_group(idata, "posterior").attrs))
    return idata


def fit_diagnostics(idata) -> dict[str, Any]:
    """Return the diagnostics dict stamped by ``fit``.

    Parameters
    ----------
    idata : arviz.InferenceData or xarray.DataTree
        A posterior fitted by :func:`sdcbayes.inference.fit` (or loaded with
        :func:`load_posterior`).

    Returns
    -------
    dict
        Keys ``max_r_hat``, ``min_ess_bulk``, ``min_ess_tail``, ``divergences`` (NaN
        for MAP/Laplace/ADVI, where they do not apply), where each is worst, and
        ``problems`` (the warnings issued).

    Raises
    ------
    InputError
        When the posterior carries no ``diagnostics`` stamp (not fitted by ``fit``).
    """
    diag = provenance(idata).get("diagnostics")
    if not isinstance(diag, dict):
        raise InputError(
            "the posterior carries no diagnostics stamp; fit it with sdcbayes.inference.fit"
        )
    return {k: (math.nan if v is None and (k.startswith(("max_", "min_"))
                                         or k == "divergences") else v)
            for k, v in diag.items()}
