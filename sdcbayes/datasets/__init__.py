"""Synthetic census populations, samples with known truth, and the demo data.

A population generated here is fully known, so every quantity the risk models
estimate (F_k, 1/F_k, tau1, tau2, expected re-identifications, household risk)
has an exact true value for any sample drawn from it: the ground truth of the
tests, the notebooks and the accuracy benchmarks.

This package imports NumPy, pandas and :mod:`sdcbayes.exceptions` only (no
PyMC, no SciPy), so ``sdcbayes.load_demo()`` stays cheap.

Public API
----------
simulate_population(n_households, seed)
    Persons in households with realistic dependence between the keys.
draw_sample(population, keys, fraction, design, strata, seed)
    SRS, stratified or household (cluster) sample plus its :class:`Truth`.
load_demo(), demo_keys()
    The fixed demo sample that ``sdcbayes assess`` runs on by default.
make_benchmark_file(n_records, seed)
    Large memory-lean file for speed benchmarks.
cell_frequencies(frame, keys), joint_codes(frame, keys)
    Frequency of each row's key combination; joint key codes.
"""

from __future__ import annotations

from sdcbayes.datasets.benchmark import (
    BENCHMARK_CARDINALITIES,
    BENCHMARK_KEYS,
    make_benchmark_file,
)
from sdcbayes.datasets.census import (
    AGE_BANDS,
    AGE_GROUPS,
    COUNTRIES,
    EDUCATION_LEVELS,
    MARITAL_STATUSES,
    OCCUPATIONS,
    REGIONS,
    RELATIONSHIPS,
    SEXES,
    simulate_population,
)
from sdcbayes.datasets.demo import (
    DEMO_HOUSEHOLD,
    DEMO_KEYS,
    DEMO_STRATA,
    DEMO_WEIGHT,
    demo_keys,
    load_demo,
)
from sdcbayes.datasets.sampling import (
    SampleWithTruth,
    Truth,
    cell_frequencies,
    draw_sample,
    joint_codes,
)

__all__ = [
    "AGE_BANDS",
    "AGE_GROUPS",
    "BENCHMARK_CARDINALITIES",
    "BENCHMARK_KEYS",
    "COUNTRIES",
    "DEMO_HOUSEHOLD",
    "DEMO_KEYS",
    "DEMO_STRATA",
    "DEMO_WEIGHT",
    "EDUCATION_LEVELS",
    "MARITAL_STATUSES",
    "OCCUPATIONS",
    "REGIONS",
    "RELATIONSHIPS",
    "SEXES",
    "SampleWithTruth",
    "Truth",
    "cell_frequencies",
    "demo_keys",
    "draw_sample",
    "joint_codes",
    "load_demo",
    "make_benchmark_file",
    "simulate_population",
]
