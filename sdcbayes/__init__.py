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
import os
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


def _checkout_layers(package_dir: str) -> list[str]:
    """The checkout root when ``package_dir`` is the source folder of a checkout.

    The layers (``models/``, ``inference/``, ``risk/``) sit beside ``sdcbayes/`` in a
    checkout (the design card's layout; ``pyproject.toml`` maps them into the namespace)
    and inside it once installed. Python started in the checkout root after a
    non-editable install (README command 1) imports this source folder, not the
    installed package, and would not find ``sdcbayes.risk``: the root is then added to
    the package's search path. Empty for an installed package.
    """
    root = os.path.dirname(package_dir)
    layers = ("models", "inference", "risk")
    if os.path.isdir(os.path.join(package_dir, "risk")):
        return []
    if all(os.path.isfile(os.path.join(root, layer, "__init__.py")) for layer in layers):
        return [root]
    return []


__path__ += [p for p in _checkout_layers(os.path.dirname(os.path.abspath(__file__)))
             if p not in __path__]

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
