"""The one place that knows which ArviZ (0.x / 1.x) and PyMC (5 / 6) are installed.

ArviZ 0.x keeps a posterior in :class:`arviz.InferenceData`; ArviZ 1 (arviz-base,
arviz-stats, arviz-plots) and PyMC 6 use :class:`xarray.DataTree`, whose groups are child
nodes. The functions below take and give either container, so that the rest of sdcbayes
builds, reads and changes posteriors through them only, with no version checks of its own:

* :func:`from_dict` -- ``az.from_dict(posterior=..., coords=..., dims=...)`` (0.x) or
  ``az.from_dict({"posterior": ...}, coords=..., dims=...)`` (1.x);
* :func:`make_container` -- a container from Datasets (``az.InferenceData(**groups)`` or
  ``xr.DataTree.from_dict``);
* :func:`group_names`, :func:`set_group`, :func:`del_group`, :func:`set_variable` --
  ``idata.groups()``, ``idata.add_groups`` and ``del idata.<group>`` (0.x) or the tree's
  children (1.x);
* :func:`open_netcdf` -- ``az.from_netcdf`` loaded eagerly (0.x) or ``xr.open_datatree``
  then loaded (1.x; ``az.from_netcdf`` is ``xr.open_datatree`` there, lazy);
* :func:`loo_pointwise` -- ``az.loo(pointwise=True)``: the pointwise elpd is ``loo_i``
  (0.x) or ``elpd_i`` (1.x); ArviZ 1's refusal of fewer than 25 draws as an InputError;
* :func:`group_as_dataset` -- ``idata.posterior`` is a Dataset (0.x) or a tree node (1.x);
* :data:`PYMC_6` -- PyMC 6 wants :func:`pymc.compute_log_likelihood` rather than
  ``idata_kwargs={"log_likelihood": True}``;
* :class:`ElpdFields`, :func:`compare_table` -- ArviZ's own LOO and compare results under
  0.x's names and conventions, for the tests that check sdcbayes against them.

Numbers: on ArviZ 0.x every function calls what sdcbayes called before, so they are the
same bit for bit.
"""

from __future__ import annotations

import importlib
import math
from importlib.metadata import PackageNotFoundError, version

import xarray as xr

__all__ = [
    "ARVIZ_1",
    "PYMC_6",
    "ElpdFields",
    "compare_table",
    "group_as_dataset",
    "set_variable",
    "del_group",
    "from_dict",
    "group_names",
    "is_container",
    "loo_pointwise",
    "make_container",
    "numba_flag",
    "open_netcdf",
    "set_group",
]


def _arviz_major() -> int:
    try:
        return int(version("arviz").split(".")[0])
    except (PackageNotFoundError, ValueError):  # not installed as a distribution
        return int(importlib.import_module("arviz").__version__.split(".")[0])


#: ArviZ 1.x (DataTree containers, arviz-stats) rather than 0.x (InferenceData). Read from
#: the package metadata: ArviZ itself (0.3 s to import) is imported on first use only, as
#: the models import this module at load time
ARVIZ_1: bool = _arviz_major() >= 1


def _major(dist: str) -> int:
    try:
        return int(version(dist).split(".")[0])
    except (PackageNotFoundError, ValueError):
        return 0


#: PyMC 6 (PyTensor 3): DataTree results; ``idata_kwargs={"log_likelihood": True}``
#: deprecated in favour of :func:`pymc.compute_log_likelihood`
PYMC_6: bool = _major("pymc") >= 6

_DataTree = getattr(xr, "DataTree", None)  # xarray >= 2024.10


class _Lazy:
    """``arviz`` imported on first attribute access."""

    def __getattr__(self, name):
        return getattr(importlib.import_module("arviz"), name)


az = _Lazy()


def _inference_data_type():
    """``arviz.InferenceData`` on ArviZ 0.x; None on ArviZ 1.

    There the name is a deprecated alias of DataTree that warns (MigrationWarning).
    """
    return None if ARVIZ_1 else az.InferenceData


def _container_types() -> tuple[type, ...]:
    return tuple(t for t in (_inference_data_type(), _DataTree) if t is not None)


def is_tree(obj) -> bool:
    """Whether ``obj`` is an :class:`xarray.DataTree`."""
    return _DataTree is not None and isinstance(obj, _DataTree)


def _is_idata(obj) -> bool:
    idata_type = _inference_data_type()
    return idata_type is not None and isinstance(obj, idata_type)


def is_container(obj) -> bool:
    """Whether ``obj`` is a posterior container (InferenceData or DataTree)."""
    return isinstance(obj, _container_types())


def group_names(idata) -> list[str]:
    """Names of the groups of a container (``[]`` when it has none)."""
    if _is_idata(idata):
        return list(idata.groups())
    return [str(k) for k in idata.children]


def _as_dataset(value) -> xr.Dataset:
    if isinstance(value, xr.Dataset):
        return value
    if is_tree(value):
        return value.to_dataset()
    if _is_idata(value):
        raise TypeError("a group must be a Dataset, not a whole InferenceData")
    return xr.Dataset(value)


def make_container(**groups):
    """A posterior container holding the given groups (Datasets, or mappings of DataArrays)."""
    if not ARVIZ_1:
        return az.InferenceData(**groups)
    return _DataTree.from_dict({name: _as_dataset(ds) for name, ds in groups.items()})


def from_dict(*, coords=None, dims=None, **groups):
    """``az.from_dict`` with the groups as keywords, on either ArviZ.

    ``groups`` maps a group name (``posterior``, ``sample_stats``, ``observed_data``, ...)
    to a dict of arrays; ``None`` groups are left out, as ArviZ 0.x does.
    """
    groups = {k: v for k, v in groups.items() if v is not None}
    if not ARVIZ_1:
        return az.from_dict(coords=coords, dims=dims, **groups)
    # ArviZ 1 has no container without a posterior: a tree of data groups only is built
    # group by group, with the same conventions (data groups have no chain/draw)
    return az.from_dict(groups, coords=coords, dims=dims)


def set_group(idata, name: str, ds) -> None:
    """Add group ``name`` to the container, or replace it (in place)."""
    ds = _as_dataset(ds)
    if _is_idata(idata):
        if name in idata.groups():
            delattr(idata, name)
        idata.add_groups({name: ds})
        return
    idata[name] = _DataTree(ds)


def del_group(idata, name: str) -> None:
    """Remove group ``name`` from the container (in place); absent: nothing happens."""
    if name not in group_names(idata):
        return
    if _is_idata(idata):
        delattr(idata, name)
    else:
        del idata[name]


def open_netcdf(path: str, engine: str = "h5netcdf"):
    """A posterior container read from a netCDF file, loaded into memory and the file closed."""
    if not ARVIZ_1:
        with az.rc_context({"data.load": "eager"}):
            return az.from_netcdf(path)  # h5netcdf, ArviZ 0.x's default
    with xr.open_datatree(path, engine=engine) as tree:
        return tree.load().copy()


def to_netcdf(idata, path: str, engine: str = "h5netcdf") -> None:
    """Write a container to netCDF (groups as netCDF groups; same call on both)."""
    idata.to_netcdf(path, engine=engine)


def loo_pointwise(idata, var_name: str):
    """``az.loo(idata, pointwise=True)``: (pointwise elpd, Pareto k, good_k or None)."""
    try:
        res = az.loo(idata, pointwise=True, var_name=var_name)
    except ValueError as err:
        if "n_draws_tail" not in str(err):
            raise
        # ArviZ 1's PSIS smooths a tail of at least 5 draws, min(S / 5, 3 sqrt(S / r_eff))
        # of them: fewer than 25 draws are refused (ArviZ 0.x smoothed them)
        from sdcbayes.exceptions import InputError

        raise InputError(
            "LOO needs at least 25 posterior draws with ArviZ 1 (its Pareto smoothing "
            "takes a tail of at least 5 draws): refit with more draws"
        ) from err
    elpd_i = res.loo_i if hasattr(res, "loo_i") else res.elpd_i
    return elpd_i, res.pareto_k, getattr(res, "good_k", None)


def numba_flag() -> bool:
    """Whether ArviZ 0.x computes its variances with Numba (ArviZ 1: no such switch)."""
    return bool(getattr(getattr(az, "Numba", None), "numba_flag", False))


def set_variable(idata, group: str, name: str, da) -> None:
    """Set variable ``name`` of group ``group`` (created when absent) to ``da``, in place."""
    if group in group_names(idata):
        idata[group][name] = da
    else:
        set_group(idata, group, xr.Dataset({name: da}))


class ElpdFields:
    """An ArviZ LOO result under ArviZ 0.x's names, whichever ArviZ made it.

    ``elpd_loo``, ``se``, ``p_loo``, ``loo_i``, ``pareto_k``, ``n_data_points``,
    ``good_k`` (ArviZ 1: ``elpd``, ``se``, ``p``, ``elpd_i``, ...). ArviZ 1's ``se`` is
    ``sqrt(n Var(elpd_i))`` with ``ddof=1``; ArviZ 0.x's with ``ddof=0``.
    """

    def __init__(self, res):
        self.elpd_loo = float(res.elpd_loo if hasattr(res, "elpd_loo") else res.elpd)
        n = int(res.n_data_points)
        # ArviZ 1: sqrt(n Var(elpd_i)) with ddof=1, brought back to ArviZ 0.x's ddof=0
        self.se = float(res.se) * (math.sqrt((n - 1) / n) if ARVIZ_1 and n > 1 else 1.0)
        self.p_loo = float(res.p_loo if hasattr(res, "p_loo") else res.p)
        self.loo_i = res.loo_i if hasattr(res, "loo_i") else getattr(res, "elpd_i", None)
        self.pareto_k = getattr(res, "pareto_k", None)
        self.n_data_points = int(res.n_data_points)
        self.good_k = getattr(res, "good_k", None)


def compare_table(fits: dict, n_data_points: int):
    """``az.compare(fits)`` under ArviZ 0.x's names and conventions, on either ArviZ.

    ArviZ 1 names the columns ``elpd`` and ``p``, rounds them unless told not to, gives
    ``elpd_diff`` as the model's minus the best's (ArviZ 0.x: the best's minus the
    model's) and computes ``se`` with ``ddof=1`` (``dse`` as 0.x); brought back to 0.x's here.
    """
    if not ARVIZ_1:
        return az.compare(fits)
    df = az.compare(fits, round_to="none").rename(columns={"elpd": "elpd_loo", "p": "p_loo"})
    df["elpd_diff"] = -df["elpd_diff"]  # ArviZ 1: this model's minus the best's (<= 0)
    n = int(n_data_points)
    if n > 1:
        df["se"] = df["se"] * math.sqrt((n - 1) / n)
    return df


def group_as_dataset(obj):
    """A group of a DataTree (``idata.posterior`` on ArviZ 1) as the Dataset it holds.

    On ArviZ 0.x ``idata.posterior`` is an :class:`xarray.Dataset`; on ArviZ 1 it is a
    child node of the tree. Functions that take "a posterior or its posterior group"
    call this first, so that both read the same. Anything else is returned as is.
    """
    if is_tree(obj) and not obj.children and len(obj.data_vars) > 0:
        return obj.to_dataset()
    return obj
