"""sdcbayes: Bayesian disclosure-risk assessment of survey microdata.

The front door. ``import sdcbayes`` is cheap: it imports NumPy, pandas and the
data layer only. The PyMC layers (:mod:`sdcbayes.models`,
:mod:`sdcbayes.inference`) are imported on first use, so closed-form runs never
pay for PyMC or ArviZ.

Layers (see ``ARCHITECTURE.md``): ``sdcbayes`` (data) -> ``sdcbayes.models`` ->
``sdcbayes.inference`` -> ``sdcbayes.risk``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from sdcbayes._version import __version__
from sdcbayes.exceptions import (
    ConvergenceError,
    DataError,
    InputError,
    MissingDependencyError,
    ModelError,
    SdcbayesError,
)
from sdcbayes.microdata import CellTable, Microdata, read_microdata

if TYPE_CHECKING:  # pragma: no cover
    from sdcbayes import inference, models, risk

__all__ = [
    "__version__",
    "CellTable",
    "ConvergenceError",
    "DataError",
    "InputError",
    "Microdata",
    "MissingDependencyError",
    "ModelError",
    "SdcbayesError",
    "datasets",
    "inference",
    "load_demo",
    "models",
    "read_microdata",
    "risk",
]

_LAZY_SUBMODULES = {"models", "inference", "risk", "datasets"}


def __getattr__(name: str):
    # Lazy import keeps `import sdcbayes` fast: PyMC alone costs seconds.
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"sdcbayes.{name}")
    if name == "load_demo":
        from sdcbayes.datasets import load_demo

        return load_demo
    raise AttributeError(f"module 'sdcbayes' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
