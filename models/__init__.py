"""PyMC superpopulation models (``sdcbayes.models``).

May import: NumPy, SciPy, pandas, xarray, PyMC, PyTensor and ``sdcbayes`` (data
layer). Must not import ``sdcbayes.inference`` or ``sdcbayes.risk``. Every model
is built on sufficient statistics (counts of counts, per-cell or per-domain
tables), never one node per record.
"""

import importlib
import importlib.util


def __getattr__(name: str):
    # submodules on first use (``sdcbayes.models.latent_class`` after ``import sdcbayes``);
    # importing the package imports none of them (PyMC loads only with a PyMC model)
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
