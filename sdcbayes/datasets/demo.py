"""The embedded demo sample: what ``sdcbayes assess`` runs on without a data file.

The demo is regenerated on the fly (about 0.1 s) from fixed seeds by
:func:`simulate_population` and :func:`draw_sample`, so no data file is
shipped and the demo, its truth and the generator can never disagree.

Only NumPy and pandas are imported here.
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from sdcbayes.datasets.census import simulate_population
from sdcbayes.datasets.sampling import SampleWithTruth, draw_sample

__all__ = [
    "DEMO_DESIGN",
    "DEMO_FRACTION",
    "DEMO_HOUSEHOLD",
    "DEMO_KEYS",
    "DEMO_N_HOUSEHOLDS",
    "DEMO_POPULATION_SEED",
    "DEMO_SAMPLE_SEED",
    "DEMO_STRATA",
    "DEMO_WEIGHT",
    "demo_keys",
    "load_demo",
]

DEMO_KEYS: tuple[str, ...] = (
    "age_group",
    "sex",
    "marital_status",
    "education",
    "country_of_birth",
    "household_size",
)
"""Recommended key variables of the demo (10-year age group, sex, marital
status, education, country of birth, household size)."""
DEMO_WEIGHT = "weight"
DEMO_HOUSEHOLD = "household_id"
DEMO_STRATA = "region"
DEMO_DESIGN = "household"
DEMO_N_HOUSEHOLDS = 42_000  # about 96,000 persons
DEMO_FRACTION = 0.04  # of households, allocated to regions by sqrt(H_h)
DEMO_POPULATION_SEED = 20140801  # IHSN guide's date: any fixed number would do
DEMO_SAMPLE_SEED = 1998


def demo_keys() -> list[str]:
    """Return the recommended key variables of the demo sample.

    Returns
    -------
    list of str
        A new list (safe to modify) holding :data:`DEMO_KEYS`, the key columns of
        :func:`load_demo`'s sample that ``sdcbayes assess`` uses by default.
    """
    return list(DEMO_KEYS)


@lru_cache(maxsize=1)
def _demo_population() -> pd.DataFrame:
    # Cached: the frame never leaves this module (draw_sample copies the rows
    # it takes), so repeated load_demo() calls cost only the sampling.
    return simulate_population(DEMO_N_HOUSEHOLDS, seed=DEMO_POPULATION_SEED)


def load_demo() -> SampleWithTruth:
    """The demo sample with its truth: a 4% household sample of a synthetic census.

    Population: :func:`simulate_population` with ``n_households=42_000``
    (about 96,000 persons) and seed ``DEMO_POPULATION_SEED``. Sample:
    :func:`draw_sample` with ``design="household"`` (whole households),
    stratified by ``region`` with 4% of the households allocated to regions
    in proportion to the square root of their number of households, so the
    weights differ by region; seed ``DEMO_SAMPLE_SEED``. About 3,800 records
    of 1,600 households; with :data:`DEMO_KEYS` a few hundred sample uniques
    of which over a hundred are population uniques.

    The first call takes about 0.15 s, later ones about 0.05 s (the
    population is cached); every call returns a new frame, so callers may
    modify it freely.

    Returns
    -------
    SampleWithTruth
        ``.sample`` (with columns ``weight``, ``household_id``, ``region``),
        ``.keys`` = :data:`DEMO_KEYS`, ``.weight``, ``.household``,
        ``.strata``, ``.truth`` (F_k, 1/F_k, tau1, tau2, expected
        re-identifications, household risk).
    """
    return draw_sample(
        _demo_population(),
        keys=DEMO_KEYS,
        fraction=DEMO_FRACTION,
        design=DEMO_DESIGN,
        strata=DEMO_STRATA,
        seed=DEMO_SAMPLE_SEED,
        household=DEMO_HOUSEHOLD,
        weight=DEMO_WEIGHT,
    )
