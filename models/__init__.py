"""PyMC superpopulation models (``sdcbayes.models``).

May import: NumPy, SciPy, pandas, xarray, PyMC, PyTensor and ``sdcbayes`` (data
layer). Must not import ``sdcbayes.inference`` or ``sdcbayes.risk``. Every model
is built on sufficient statistics (counts of counts, per-cell or per-domain
tables), never one node per record.
"""
