"""Risk measures, closed forms and decisions (``sdcbayes.risk``).

The closed-form modules import NumPy, SciPy, pandas and xarray only -- never
PyMC or ArviZ -- so a closed-form assessment starts in well under a second.
Array functions work on point values and on ``(chain, draw, cell)`` arrays alike;
labelled wrappers add dims and provenance. The posterior part of the layer
(issue 4) consumes fitted posteriors through ``sdcbayes.inference``.
"""
