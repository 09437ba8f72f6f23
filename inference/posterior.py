"""Posterior container access, provenance stamps and posterior I/O.

The posterior container is :class:`arviz.InferenceData` today. Everything in
sdcbayes reads groups through :func:`get_group`, so the move to
``xarray.DataTree`` (ArviZ >= 1) changes this module only.

Provenance lives in the attributes of the ``posterior`` group (they survive
``to_netcdf``) and is mirrored on ``idata.attrs``: ``sdcbayes_version``,
``model``, ``model_options``, ``priors``, ``data_summary``, ``settings``,
``diagnostics`` (JSON strings where structured) and ``loglik_weight_var``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import arviz as az
import xarray as xr

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


def group_names(idata) -> list[str]:
    """Names of the groups of a posterior container (InferenceData or DataTree)."""
    if isinstance(idata, az.InferenceData):
        return list(idata.groups())
    return [str(k) for k in idata.children]  # xarray.DataTree


def has_group(idata, name: str) -> bool:
    """Whether the container has group ``name``."""
    return name in group_names(idata)


def get_group(idata, name: str) -> xr.Dataset:
    """Return group ``name`` (``"posterior"``, ``"log_likelihood"``, …) as an xarray Dataset.

    The one place that knows the container type: ``InferenceData`` today,
    ``xarray.DataTree`` from ArviZ >= 1 (``idata[name].to_dataset()``).

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
    if isinstance(idata, az.InferenceData):
        return idata[name]
    return idata[name].to_dataset()


def _dumps(obj) -> str:
    return json.dumps(json_safe(obj), sort_keys=True)


def stamp(idata, **fields: Any) -> None:
    """Write provenance ``fields`` on the posterior group attrs and ``idata.attrs``.

    Structured values (dicts, lists) are stored as JSON strings, so the stamps
    survive netCDF; :func:`provenance` decodes them.
    """
    encoded = {k: (v if isinstance(v, str | int | float) else _dumps(v)) for k, v in fields.items()}
    get_group(idata, "posterior").attrs.update(encoded)
    if isinstance(idata, az.InferenceData):
        idata.attrs.update(encoded)


def provenance(idata) -> dict[str, Any]:
    """The provenance stamps of a posterior, JSON fields decoded."""
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
    out = {}
    for key, value in dict(attrs).items():
        if key in _JSON_KEYS and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        out[key] = value
    return out


def _posterior_path(path) -> Path:
    path = Path(path)
    if path.suffix == ".nc":
        return path
    return path / "posterior.nc"


def save_posterior(idata, path) -> Path:
    """Write the posterior with its provenance to netCDF.

    Parameters
    ----------
    idata : arviz.InferenceData
        A posterior from :func:`sdcbayes.inference.fit`.
    path : str or pathlib.Path
        A ``.nc`` file, or a folder (created if needed) that receives ``posterior.nc``.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    target = _posterior_path(path)
    missing = [k for k in ("sdcbayes_version", "model") if k not in provenance(idata)]
    if missing:
        raise InputError(
            f"the posterior lacks the provenance stamps {missing}; fit it with "
            "sdcbayes.inference.fit, or stamp it with sdcbayes.inference.posterior.stamp"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    idata.to_netcdf(str(target))
    return target


def load_posterior(path):
    """Read a posterior written by :func:`save_posterior` (provenance restored on ``attrs``).

    Parameters
    ----------
    path : str or pathlib.Path
        The ``.nc`` file or the folder holding ``posterior.nc``.
    """
    target = _posterior_path(path)
    if not target.is_file():
        raise InputError(
            f"no posterior file at {str(target)!r}; pass the posterior.nc written by "
            "save_posterior (or the output folder that holds it)"
        )
    idata = az.from_netcdf(str(target))
    if "model" not in get_group(idata, "posterior").attrs:
        raise InputError(
            f"{str(target)!r} is not an sdcbayes posterior (no provenance stamps); "
            "load it with arviz.from_netcdf instead"
        )
    idata.attrs.update(dict(get_group(idata, "posterior").attrs))
    return idata


def fit_diagnostics(idata) -> dict[str, Any]:
    """The diagnostics dict stamped by ``fit``.

    Keys ``max_r_hat``, ``min_ess_bulk``, ``min_ess_tail``, ``divergences`` (NaN
    for MAP/Laplace/ADVI, where they do not apply), where each is worst, and
    ``problems`` (the warnings issued).
    """
    diag = provenance(idata).get("diagnostics")
    if not isinstance(diag, dict):
        raise InputError(
            "the posterior carries no diagnostics stamp; fit it with sdcbayes.inference.fit"
        )
    return {k: (math.nan if v is None and k.startswith(("max_", "min_")) else v)
            for k, v in diag.items()}
