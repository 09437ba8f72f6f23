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


def warn_at_caller(message, category: type[Warning] = UserWarning) -> None:
    """:func:`warnings.warn`, pointing at the first frame outside sdcbayes.

    A fixed ``stacklevel`` points into the package whenever the warning is raised a
    few calls deep (a ConvergenceWarning from ``assess_posterior`` showed
    ``risk/posterior_assess.py`` as its source); the user's own line, the call they
    made, is the useful one, in a notebook especially. The package's folders are
    those of its four import packages (the layer folders sit apart in a source
    checkout).
    """
    import contextlib
    import sys
    import warnings

    # contextlib too: a warning re-issued on leaving a @contextmanager block runs in
    # contextlib's __exit__, between two of the package's frames
    dirs = (*_package_dirs(), contextlib.__file__)
    level, frame = 2, sys._getframe(1)  # 2: warn_at_caller's caller
    while frame is not None and frame.f_code.co_filename.startswith(dirs):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


_PACKAGE_DIRS: tuple[str, ...] | None = None


def _package_dirs() -> tuple[str, ...]:
    global _PACKAGE_DIRS
    if _PACKAGE_DIRS is None:
        import importlib
        import os

        # the folder of each layer's own __init__, not the packages' __path__: run from a
        # checkout, sdcbayes.__path__ also holds the checkout root (sdcbayes._checkout_layers),
        # which would take the tests and the user's scripts there for the package's frames
        dirs = []
        for name in ("sdcbayes", "sdcbayes.models", "sdcbayes.inference", "sdcbayes.risk"):
            init = importlib.import_module(name).__file__
            dirs.append(os.path.join(os.path.dirname(os.path.abspath(init)), ""))
        _PACKAGE_DIRS = tuple(dirs)
    return _PACKAGE_DIRS
