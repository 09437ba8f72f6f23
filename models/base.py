"""Common machinery of the superpopulation models: priors as configuration.

Priors are data a methodologist compares, so they are plain dictionaries of
``{"dist": <PyMC distribution name>, **parameters}`` that can be printed,
serialised to JSON and stamped on results. A model class declares
``default_priors``; user overrides are merged key by key (user wins), and unknown
keys are rejected in one error that lists them all.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from sdcbayes.exceptions import InputError

PriorSpec = dict[str, Any]


def merge_priors(
    defaults: Mapping[str, PriorSpec],
    overrides: Mapping[str, PriorSpec] | None,
    model_name: str,
) -> dict[str, PriorSpec]:
    """Merge user prior overrides into the model's defaults.

    Precedence: a user entry replaces the default entry for that parameter
    *whole* when it names a ``dist``; otherwise its fields update the default's
    (so ``{"alpha": {"sigma": 2}}`` widens the default distribution).

    Raises
    ------
    InputError
        Listing every unknown parameter name at once, with the valid ones.
    """
    merged = copy.deepcopy(dict(defaults))
    if not overrides:
        return merged
    unknown = sorted(set(overrides) - set(defaults))
    if unknown:
        raise InputError(
            f"unknown prior(s) {unknown} for model {model_name!r}; "
            f"valid names are {sorted(defaults)}"
        )
    for name, spec in overrides.items():
        if not isinstance(spec, Mapping):
            raise InputError(
                f"prior {name!r} for model {model_name!r} must be a mapping such as "
                f"{{'dist': 'HalfNormal', 'sigma': 1.0}}; got {spec!r}"
            )
        if "dist" in spec:
            merged[name] = dict(spec)
        else:
            merged[name].update(spec)
    return merged


def prior_to_rv(pm_module, name: str, spec: PriorSpec, **kwargs):
    """Create the PyMC random variable described by ``spec`` inside the current model."""
    spec = dict(spec)
    dist_name = spec.pop("dist")
    try:
        dist = getattr(pm_module, dist_name)
    except AttributeError:
        raise InputError(
            f"prior {name!r}: PyMC has no distribution {dist_name!r}; use a name such as "
            "'HalfNormal', 'Gamma', 'LogNormal' or 'Exponential'"
        ) from None
    # Python floats such as 2.5 become float32 PyTensor constants (autocasting keeps
    # the smallest exact dtype), which puts prior normalising constants in single
    # precision; NumPy float64 scalars keep the log-density exact.
    params = {
        k: np.float64(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        for k, v in spec.items()
    }
    return dist(name, **params, **kwargs)


class SuperpopulationModel:
    """Base class: a model over sufficient statistics with prior configuration.

    Subclasses set ``name`` and ``default_priors`` and implement :meth:`build`
    (returning a ``pm.Model`` with coords and ``dims=`` on every variable) and
    :meth:`data_summary`.
    """

    name: ClassVar[str] = "superpopulation"
    default_priors: ClassVar[dict[str, PriorSpec]] = {}

    def __init__(self, priors: Mapping[str, PriorSpec] | None = None):
        self.priors = merge_priors(self.default_priors, priors, self.name)

    def build(self):  # pragma: no cover - abstract
        """Return the PyMC model."""
        raise NotImplementedError

    def data_summary(self) -> dict[str, Any]:  # pragma: no cover - abstract
        """Return a JSON-serialisable summary of the data the model is built on."""
        raise NotImplementedError

    def priors_json(self) -> str:
        """The merged priors as a JSON string (stamped on posteriors)."""
        return json.dumps(self.priors, sort_keys=True, default=float)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(priors={self.priors})"
