"""PyMC superpopulation models (``sdcbayes.models``).

May import: NumPy, SciPy, pandas, xarray, PyMC, PyTensor and ``sdcbayes`` (data
layer). Must not import ``sdcbayes.inference`` or ``sdcbayes.risk``. Every model
is built on sufficient statistics (counts of counts, per-cell or per-domain
tables), never one node per record.
"""

import importlib
import importlib.util

# The public surface is the model submodules (the model ones define their own ``__all__``; the
# classes are ``poisson_gamma.PoissonGammaModel``, ``negbin.NegativeBinomialModel``,
# ``beta_binomial.BetaBinomialDomainModel``, ``latent_class.LatentClassModel`` and
# ``loglinear.LoglinearModel``, on ``base.SuperpopulationModel``). The package imports
# none of them itself, so ``from sdcbayes.models import *`` imports all of them (PyMC).
__all__ = [
    "base",
    "beta_binomial",
    "latent_class",
    "loglinear",
    "negbin",
    "poisson_gamma",
    "ppc",
]


def __getattr__(name: str):
    # submodules on first use (``sdcbayes.models.latent_class`` after ``import sdcbayes``);
    # importing the package imports none of them (PyMC loads only with a PyMC model)
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
