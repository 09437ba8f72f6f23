"""The project's own exceptions.

Every error raised on bad user input is an :class:`InputError` (or a subclass)
whose message names the offending column or value *and* the fix. The CLI prints
``str(exc)`` as one line on stderr and exits with status 2.
"""

from __future__ import annotations


class SdcbayesError(Exception):
    """Base class of every error sdcbayes raises on purpose."""


class InputError(SdcbayesError, ValueError):
    """Bad input from the user: a column, a value, an option.

    The message must name the problem and the fix, on one line.
    """


class DataError(InputError):
    """The microdata themselves are unusable (missing columns, bad weights, ...)."""


class ModelError(SdcbayesError):
    """A model cannot be built or fitted (bad priors, sampling failure, ...)."""


class MissingDependencyError(SdcbayesError, ImportError):
    """An optional backend is not installed; the message names the package."""


class ConvergenceError(ModelError):
    """Sampling diagnostics failed in strict mode."""
