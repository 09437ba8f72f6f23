r"""Accuracy harness: known populations, repeated samples, every estimator scored.

A population is a file whose every record is known, so for each sample drawn from it
the disclosure-risk targets of ``ARCHITECTURE.md`` (Notation) are known exactly:

- :math:`\tau_1 = \sum_k I(f_k = 1, F_k = 1)` (sample uniques that are population uniques),
- :math:`\tau_2 = \sum_k I(f_k = 1)/F_k`,
- the expected re-identifications :math:`\sum_i 1/F_{k(i)}` (IHSN guide, seed ``001_``,
  section 3.4),
- Skinner & Elliot's (2002) :math:`\theta = \sum_k I(f_k=1) / \sum_k F_k I(f_k=1)`
  (:mod:`sdcbayes.risk.dis`),

and, per sample-unique record, whether it is a population unique. :func:`run_design`
draws seeded samples (simple random, stratified with unequal weights, or whole
households), runs every method on each and records estimate, truth, interval and time
in a tidy table; :func:`summarise` reduces it to relative bias, relative RMSE, 90% interval coverage
and width, Brier score and AUC (record-level calibration and ranking of
P(F_k = 1 | f_k = 1) among sample uniques) and run time.

Methods share one interface (:class:`Method`): a callable
``method(sample, keys, weight, N) -> Estimate``. The closed-form baselines are in
:data:`BASELINES`; posterior models plug in the same way (return intervals in
:attr:`Estimate.intervals`): :func:`latent_class_method`, :func:`loglinear_bayes_method`.

Populations (:func:`load_population`): the synthetic census of
:mod:`sdcbayes.datasets` and the real files of the shared data folder (UCI Adult,
48,842 records, 6 and 9 keys; Scotland's 2011 census teaching file, 63,388 records,
7 and 13 keys). The folder is ``../shared/data`` beside the project root, or
``$SDCBAYES_SHARED_DATA``, or ``data_dir=``; when it is absent the real designs raise
:class:`SkipDesign` with a message that says how to point to it.

Imports NumPy, SciPy, pandas and the closed-form risk modules only (no PyMC); the
posterior-model methods import :mod:`sdcbayes.models` (and what a fit needs) when called.
"""

from __future__ import annotations

import math
import numbers
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd
from scipy import stats

from sdcbayes.datasets import DEMO_KEYS, joint_codes, simulate_population
from sdcbayes.datasets.sampling import complete_codes, sqrt_allocation
from sdcbayes.exceptions import InputError, ModelError

if TYPE_CHECKING:  # pragma: no cover
    from sdcbayes.models.latent_class import LatentClassModel

__all__ = [
    "BASELINES",
    "COVERAGE_BAND",
    "COVERAGE_LEVEL",
    "DATA_ENV",
    "DESIGN_KINDS",
    "HOUSEHOLDS",
    "HOUSEHOLD_COLUMN",
    "POPULATIONS",
    "QUANTITIES",
    "Design",
    "Estimate",
    "Method",
    "Population",
    "SkipDesign",
    "auc",
    "benedetti_franconi_method",
    "brier_score",
    "calibration_error",
    "calibration_table",
    "coverage_band_probability",
    "coverage_p_value",
    "dis_method",
    "latent_class_method",
    "load_population",
    "loglinear_bayes_method",
    "loglinear_method",
    "poisson_gamma_method",
    "run_design",
    "shared_data_dir",
    "goal_table",
    "interval_errors",
    "summarise",
    "truth_of_sample",
]

#: Environment variable naming the shared data folder.
DATA_ENV = "SDCBAYES_SHARED_DATA"

#: Sampling designs of :class:`Design`.
DESIGN_KINDS = ("srs", "stratified", "household")

#: Column of a household design's samples holding each record's household code.
HOUSEHOLD_COLUMN = "__household__"

#: File-level targets, in table order.
QUANTITIES = ("tau1", "tau2", "expected_reidentifications", "theta")

_ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)  # fmt: skip
_ADULT6 = ("age", "sex", "race", "marital-status", "education", "native-country")
_SCOT7 = ("age", "sex", "Marital_Status", "Country_Of_Birth", "Ethnic_Group", "religion", "health")
_SCOT13 = _SCOT7 + (
    "Family_Composition", "Economic_Activity", "Occupation", "industry",
    "Hours_Worked_Per_Week", "Approximate_Social_Grade",
)  # fmt: skip
# EU-SILC (synthetic, R package laeken): region, household size, sex, age, citizenship
_EUSILC5 = ("db040", "hsize", "rb090", "age", "pb220a")

#: Known populations: name -> (source, key variables, default strata column).
POPULATIONS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "adult6": ("adult", _ADULT6, "income"),
    "adult9": ("adult", _ADULT6 + ("workclass", "relationship", "occupation"), "income"),
    "scotland7": ("scotland", _SCOT7, "RESIDENCE_TYPE"),
    "scotland13": ("scotland", _SCOT13, "RESIDENCE_TYPE"),
    "eusilc": ("eusilc", _EUSILC5, "db040"),
    "eusilc-distinct": ("eusilc-distinct", _EUSILC5, "db040"),
    "eusilc-multi": ("eusilc-multi", _EUSILC5, "db040"),
    "synthetic": ("synthetic", tuple(DEMO_KEYS), "region"),
}

#: Household id column of the populations that have households (household designs).
HOUSEHOLDS = {"synthetic": "household_id", "eusilc": "db030", "eusilc-distinct": "db030",
              "eusilc-multi": "db030"}

SYNTHETIC_HOUSEHOLDS = 40_000
SYNTHETIC_SEED = 20140801


class SkipDesign(InputError):
    """A design cannot run here (its data folder is absent); the message says why and how."""


# --------------------------------------------------------------------------------------
# populations
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Population:
    """A fully known population and the key variables the risk refers to.

    Attributes
    ----------
    name : str
    frame : pandas.DataFrame
        One row per population unit (treat as read-only: it may be cached).
    keys : tuple of str
    strata : str or None
        Column used by stratified designs.
    household : str or None
        Household id column, used by household (cluster) designs.
    """

    name: str
    frame: pd.DataFrame
    keys: tuple[str, ...]
    strata: str | None = None
    household: str | None = None

    @property
    def N(self) -> int:
        """Population size."""
        return len(self.frame)


def shared_data_dir(data_dir=None) -> Path:
    """The shared data folder: ``data_dir``, ``$SDCBAYES_SHARED_DATA``, or ``../shared/data``.

    The default is the sibling ``shared/data`` of the project root (the folder that
    holds ``sdcbayes/``); it exists in the development checkout only.
    """
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    # The project root is the working directory when tests and benchmarks run (an
    # installed, non-editable package lives in site-packages, far from the checkout);
    # the package's own location serves an editable install run from elsewhere.
    candidates = [
        Path.cwd().resolve().parent / "shared" / "data",
        Path(__file__).resolve().parents[1].parent / "shared" / "data",
    ]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0]


def _require(path: Path, what: str) -> None:
    if not path.is_file():
        raise SkipDesign(
            f"{what} not found at {path}: real-data designs are skipped; set "
            f"{DATA_ENV}=/path/to/shared/data, or pass data_dir= (Python) or --data-dir "
            "(the benchmark scripts), to run them."
        )


@lru_cache(maxsize=4)
def _read_adult(folder: str) -> pd.DataFrame:
    parts = []
    for name in ("adult.data", "adult.test"):
        path = Path(folder) / "adult" / name
        _require(path, f"Adult file {name}")
        # UCI's adult.test starts with a '|1x3 Cross validator' line; comment='|' skips it.
        part = pd.read_csv(path, header=None, names=list(_ADULT_COLUMNS), dtype=str,
                           skipinitialspace=True, comment="|")
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True).dropna(how="all")
    for col in frame.columns:
        frame[col] = frame[col].str.strip()
    # adult.test labels income '<=50K.'; the trailing dot is not a different level.
    frame["income"] = frame["income"].str.rstrip(".")
    # '?' (not recorded) stays a level of its own: it is what a released file shows
    # and what an intruder would match on, in population and sample alike.
    return frame.reset_index(drop=True)


@lru_cache(maxsize=2)
def _read_scotland(folder: str) -> pd.DataFrame:
    path = Path(folder) / "scotland" / "Scotland_teaching_file_1PCT.csv"
    _require(path, "Scotland census teaching file")
    # Read as text: 'X' (not applicable) is a regular level of its key.
    return pd.read_csv(path, dtype=str)


@lru_cache(maxsize=2)
def _read_eusilc(folder: str) -> pd.DataFrame:
    path = Path(folder) / "sdcmicro" / "eusilc.csv"
    _require(path, "EU-SILC file sdcmicro/eusilc.csv")
    frame = pd.read_csv(path, dtype=str)
    # citizenship is not recorded for children under 16: a level of its own ('NA'), as
    # 'X' in the Scotland file, and a structural zero with age >= 16
    frame["pb220a"] = frame["pb220a"].fillna("NA")
    return frame


@lru_cache(maxsize=2)
def _read_eusilc_distinct(folder: str) -> pd.DataFrame:
    frame = _read_eusilc(folder)
    # laeken's synthetic households are copies of templates: a household's region,
    # size and members (sex, age, citizenship) recur up to 12 times, so 53% of the
    # persons have an exact key twin by construction. Keep each composition once
    # (its first household) for a population without that artifact.
    def composition(g: pd.DataFrame) -> str:
        people = (g["age"] + "," + g["rb090"] + "," + g["pb220a"]).tolist()
        return "|".join([g["db040"].iloc[0], g["hsize"].iloc[0], *people])

    members = frame.sort_values(["db030", "age", "rb090", "pb220a"]).groupby("db030", sort=True)
    signature = members.apply(composition, include_groups=False)
    first = signature.index[~signature.duplicated()]
    return frame[frame["db030"].isin(first)].reset_index(drop=True)


@lru_cache(maxsize=2)
def _read_eusilc_multi(folder: str) -> pd.DataFrame:
    frame = _read_eusilc_distinct(folder)
    # A one-person household's composition is its member's key, so keeping each
    # composition once makes every one-person household population-unique (in
    # eusilc-distinct all 670 are), an artifact as strong as the copies; a composition of
    # two or more people is specific enough that a repeat is a copy. Persons of
    # multi-person households, each composition once.
    return frame[frame["hsize"] != "1"].reset_index(drop=True)


@lru_cache(maxsize=2)
def _synthetic(n_households: int, seed: int) -> pd.DataFrame:
    return simulate_population(n_households=n_households, seed=seed)


def load_population(
    name: str,
    data_dir=None,
    n_households: int = SYNTHETIC_HOUSEHOLDS,
    seed: int = SYNTHETIC_SEED,
) -> Population:
    """Load a known population by name.

    Parameters
    ----------
    name : str
        One of :data:`POPULATIONS`. Adult (adult.data + adult.test, 48,842 records;
        '?' kept as a level, trailing '.' of the test file's income removed) with the
        6 or 9 key set; the Scotland
        2011 teaching file (63,388 records; 'X' = not applicable kept as a level) with
        the 7 or 13 key set; laeken's synthetic EU-SILC (``sdcmicro/eusilc.csv``,
        14,827 persons in 6,000 households; keys region, household size, sex, age
        (99 values) and citizenship, 'NA' under 16; strata: region), a held-out file
        for choices made on the other four, whose households are copies of templates
        (53% of persons have an exact key twin by construction); ``eusilc-distinct``,
        the same with every household composition once (3,627 households, 10,039
        persons; every one-person household is then population-unique by
        construction); ``eusilc-multi``, its persons of multi-person households
        (2,957 households, 9,369 persons); or the synthetic census
        (:func:`simulate_population`, keys :data:`sdcbayes.datasets.DEMO_KEYS`).
    data_dir : path, optional
        Shared data folder (see :func:`shared_data_dir`).
    n_households, seed : int
        Size and seed of the synthetic census.

    Returns
    -------
    Population

    Raises
    ------
    SkipDesign
        The real data files are absent.
    InputError
        Unknown name.
    """
    if name not in POPULATIONS:
        raise InputError(f"unknown population {name!r}; choose from {list(POPULATIONS)}.")
    source, keys, strata = POPULATIONS[name]
    if source == "synthetic":
        frame = _synthetic(int(n_households), int(seed))
    else:
        folder = shared_data_dir(data_dir)
        if not folder.is_dir():
            raise SkipDesign(
                f"shared data folder {folder} is absent: real-data designs are skipped; set "
                f"{DATA_ENV}=/path/to/shared/data, or pass data_dir= (Python) or "
                "--data-dir (the benchmark scripts), to run them."
            )
        reader = {"adult": _read_adult, "scotland": _read_scotland,
                  "eusilc": _read_eusilc, "eusilc-distinct": _read_eusilc_distinct,
                  "eusilc-multi": _read_eusilc_multi}[source]
        frame = reader(str(folder.resolve()))
    hh = HOUSEHOLDS.get(name)
    return Population(name=name, frame=frame, keys=tuple(keys), strata=strata,
                      household=hh if hh in frame.columns else None)


# --------------------------------------------------------------------------------------
# designs, estimates, methods
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Design:
    """One sampling design on one population, replicated with seeded samples.

    Attributes
    ----------
    population : str or Population
        A name for :func:`load_population`, or a loaded population.
    fraction : float
        Overall sampling fraction n / N in (0, 1): n = round(fraction * N) for simple
        random samples; for stratified ones up to the per-stratum rounding below.
    kind : {"srs", "stratified", "household"}
        Simple random sampling without replacement (weights N/n), or stratified
        SRS with n_h proportional to sqrt(N_h) (small strata over-sampled, unequal
        weights N_h/n_h, which sum to N), each stratum's share of round(fraction *
        N) rounded on its own and clipped to [1, N_h]
        (:func:`sdcbayes.datasets.sampling.sqrt_allocation` with ``exact=False``,
        kept for the stored results): n is round(fraction * N) on Adult and Scotland
        at 1-10% (two strata), a unit or two off on the synthetic census and EU-SILC
        (920 for 919 at 1%), and short where a stratum is taken whole (Scotland at 20%:
        12,310 for 12,678), whereas :func:`sdcbayes.datasets.draw_sample` hits
        round(fraction * N) exactly; or a household (cluster) sample: ``fraction``
        of the households by simple random sampling, every member taken, weights H/m
        (populations with a household column, :data:`HOUSEHOLDS`).
    replicates : int
        Number of samples.
    seed : int
        Replicate r uses ``numpy.random.default_rng([seed, r])``: the same samples
        for every method, independent across replicates. Stratified samples of the
        same (seed, r) are nested across fractions (the draw ranks one uniform key
        per unit, so the 1% sample lies inside the 5% one: common random numbers
        across fractions), simple random and household ones are not.
    keys : str or sequence of str, optional
        Override the population's key set (one name alone is one key); stored as a
        tuple.
    strata : str, optional
        Override the population's strata column (stratified designs).

    Raises
    ------
    InputError
        An argument of the wrong type or range (checked here, before any work):
        ``population`` neither a name nor a :class:`Population`, ``fraction`` not a
        number in (0, 1), ``replicates`` not a positive integer, ``seed`` not a
        non-negative integer, ``keys`` empty or not column names, ``strata`` not a
        column name; with a loaded population, ``keys`` or ``strata`` naming
        columns it lacks.
    """

    population: str | Population
    fraction: float
    kind: str = "srs"
    replicates: int = 100
    seed: int = 0
    keys: tuple[str, ...] | None = None
    strata: str | None = None

    def __post_init__(self):
        if not isinstance(self.population, (str, Population)):
            raise InputError(
                f"population must be a name of {list(POPULATIONS)} or a Population, got "
                f"{type(self.population).__name__}; wrap a data frame as "
                "Population(name, frame, keys)."
            )
        if not isinstance(self.kind, str) or self.kind not in DESIGN_KINDS:
            raise InputError(
                f"kind={self.kind!r} is not a design; use one of {list(DESIGN_KINDS)}."
            )
        if isinstance(self.fraction, bool) or not isinstance(self.fraction, numbers.Real):
            raise InputError(f"fraction must be a number in (0, 1), got {self.fraction!r}; "
                             "pass e.g. 0.05.")
        if not 0 < float(self.fraction) < 1:
            raise InputError(f"fraction must be in (0, 1), got {self.fraction}; pass e.g. 0.05.")
        # int() would truncate 2.7 replicates or seed 1.5 silently: integers only
        replicates = _count(self.replicates, "replicates", "e.g. replicates=100")
        if replicates < 1:
            raise InputError(f"replicates must be >= 1, got {self.replicates}.")
        seed = _count(self.seed, "seed", "e.g. seed=0")
        if seed < 0:
            raise InputError(f"seed must be a non-negative integer, got {self.seed}; "
                             "pass e.g. seed=0.")
        if self.keys is not None:
            # a bare name is one key, not its characters (as sdcbayes.datasets.draw_sample)
            keys = (self.keys,) if isinstance(self.keys, str) else self.keys
            try:
                keys = tuple(keys)
            except TypeError:
                raise InputError(f"keys must be a list of column names, got "
                                 f"{type(self.keys).__name__}; e.g. keys=('age', 'sex')."
                                 ) from None
            if not keys:  # () would fall back to the population's keys unnoticed
                raise InputError("keys is empty; pass at least one key column, or leave keys "
                                 "unset (None) for the population's own key set.")
            if not all(isinstance(k, str) for k in keys):
                raise InputError(f"keys must be column names (str), got {list(keys)!r}.")
            object.__setattr__(self, "keys", keys)
        if self.strata is not None and not isinstance(self.strata, str):
            raise InputError(f"strata must be a column name (str), got {self.strata!r}.")
        if isinstance(self.population, Population):
            columns = self.population.frame.columns
            missing = [k for k in (self.keys or ()) if k not in columns]
            if self.strata is not None and self.strata not in columns:
                missing.append(self.strata)
            if missing:
                raise InputError(f"keys/strata {missing} are not columns of population "
                                 f"{self.population.name!r}; choose from {list(columns)}.")

    @property
    def label(self) -> str:
        """Short name of the design, e.g. ``adult6/srs/1%``: the ``design`` column of results.

        Overrides of the population's keys and (stratified designs) strata column are
        part of the name, so that :func:`summarise` keeps such designs apart:
        ``adult6[age+sex]/srs/1%``, ``adult6/stratified[sex]/1%``. A key set or
        strata column equal to the population's own leaves the name as it is. The
        ``seed`` is not part of it: replicates of the same design under several
        seeds are independent samples of one design, and pooling them (as
        ``benchmarks/README.md`` pools design seeds 0-3) is intended.
        """
        pop = self.population
        if isinstance(pop, str):
            name = pop
            own_keys, own_strata = POPULATIONS[pop][1:] if pop in POPULATIONS else ((), None)
        else:
            name, own_keys, own_strata = pop.name, pop.keys, pop.strata
        if self.keys is not None and set(self.keys) != set(own_keys):
            name += f"[{'+'.join(self.keys)}]"
        kind = self.kind
        if kind == "stratified" and self.strata is not None and self.strata != own_strata:
            kind += f"[{self.strata}]"
        return f"{name}/{kind}/{100 * self.fraction:g}%"


def _count(value, what: str, hint: str) -> int:
    """``value`` as an int if it is a whole number (not a bool or text), else InputError."""
    from sdcbayes.models.base import whole_number

    v = whole_number(value)
    if v is None:
        raise InputError(f"{what} must be an integer, got {value!r}; pass {hint}.")
    return v


@dataclass
class Estimate:
    """What a method returns for one sample.

    Attributes
    ----------
    tau1, tau2, expected_reidentifications, theta : float
        Point estimates (NaN: the method does not estimate it).
    intervals : dict of str to (float, float)
        Optional 90% intervals, keyed by the quantity names above.
    record_prob_unique : ndarray, shape (n_records,), optional
        P(F_k = 1 | f_k) of each sample record, sample order; the harness scores it
        on the sample uniques (Brier score, AUC).
    note : str
        Anything worth reporting (e.g. why a quantity is missing).
    """

    tau1: float = math.nan
    tau2: float = math.nan
    expected_reidentifications: float = math.nan
    theta: float = math.nan
    intervals: dict = field(default_factory=dict)
    record_prob_unique: np.ndarray | None = None
    note: str = ""


class Method(Protocol):
    """An estimator the harness can score."""

    def __call__(self, sample: pd.DataFrame, keys: Sequence[str], weight: str, N: int) -> Estimate:
        """Estimate the risk targets from one sample with weight column ``weight``."""
        ...


def _sample_cells(sample: pd.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Cell of each record (dense codes) and f_k of each cell."""
    _, record_cell = np.unique(joint_codes(sample, keys), return_inverse=True)
    record_cell = record_cell.reshape(-1)
    return record_cell, np.bincount(record_cell)


def benedetti_franconi_method(sample, keys, weight, N) -> Estimate:
    r"""Benedetti-Franconi plug-in: p̂_k = f_k / F̂_k, what sdcMicro and mu-Argus report.

    F_k - f_k | f_k ~ NegBin(f_k, p_k) (seed ``004_``, eq. 2-6), so
    P(F_k = 1 | f_k = 1) = p_k, E(1/F_k | f_k) = r_k
    (:func:`sdcbayes.risk.individual.benedetti_franconi_risk`, exact), and
    tau1 = Σ_SU p̂_k, tau2 = Σ_SU r_k, re-identifications Σ_i r_{k(i)}.
    """
    from sdcbayes.risk.individual import benedetti_franconi_risk

    record_cell, fk = _sample_cells(sample, keys)
    Fhat = np.bincount(record_cell, weights=sample[weight].to_numpy(dtype=float))
    pk = np.minimum(fk / Fhat, 1.0)
    r = np.asarray(benedetti_franconi_risk(fk, pk, method="exact"), dtype=float)
    su = fk == 1
    return Estimate(
        tau1=float(pk[su].sum()),
        tau2=float(r[su].sum()),
        expected_reidentifications=float(np.dot(fk, r)),
        record_prob_unique=np.where(su, pk, 0.0)[record_cell],
    )


def poisson_gamma_method(sample, keys, weight, N) -> Estimate:
    r"""Poisson-gamma (Bethlehem-Keller-Pannekoek) plug-in, ML (α, β) from counts of counts.

    Seed ``000_``, eq. 10-12, and ``ARCHITECTURE.md``: F_k - f_k | f_k ~ NegBin(α + f_k, ρ),
    P(F_k = 1 | f_k = 1) = ρ^{α+1}. K is the product of the numbers of levels seen in
    the sample (what the data holder knows from the file itself).
    """
    from sdcbayes.risk import poisson_gamma as pg

    record_cell, fk = _sample_cells(sample, keys)
    n = int(fk.sum())
    K = math.prod(int(sample[k].nunique(dropna=False)) for k in keys)
    m = np.bincount(fk)
    j = np.flatnonzero(m[1:]) + 1
    fit = pg.fit_poisson_gamma(pd.Series(m[j], index=j), n, N, K, method="ml")
    p1 = float(pg.prob_population_unique(fit.alpha, fit.beta, n, N))
    r_j = np.asarray(pg.expected_inverse_frequency(j.astype(float), fit.alpha, fit.beta, n, N))
    r = np.zeros(m.size)
    r[j] = r_j
    tau1, tau2 = pg.tau_estimates(m[1] if m.size > 1 else 0, fit.alpha, fit.beta, n, N)
    su = fk == 1
    return Estimate(
        tau1=float(tau1),
        tau2=float(tau2),
        expected_reidentifications=float(np.dot(m, r * np.arange(m.size))),
        record_prob_unique=np.where(su, p1, 0.0)[record_cell],
        note="" if fit.converged else f"ML not converged: {fit.message}",
    )


def loglinear_method(
    interactions: str = "main", max_iter: int = 200, tol: float = 1e-5, max_cells: int = 2_000_000
) -> Callable:
    """Poisson log-linear plug-in (Skinner-Holmes 1998, Skinner-Shlomo 2008).

    Returns a :class:`Method` fitting :func:`sdcbayes.risk.loglinear.fit_loglinear` with
    pi = n / N; it also estimates Skinner-Elliot's theta as
    n_1 / Σ_SU E(F_k | f_k = 1) = n_1 / Σ_SU (1 + λ_k(1 - π)).
    """
    from sdcbayes.risk.loglinear import fit_loglinear

    def method(sample, keys, weight, N) -> Estimate:
        pi = len(sample) / N
        fit = fit_loglinear(sample, list(keys), interactions=interactions, sampling_fraction=pi,
                            max_cells=max_cells, tol=tol, max_iter=max_iter)
        su = fit.fk == 1
        excess = fit.lam[su] * (1.0 - pi)
        note = ""
        if interactions == "two-way" and fit.max_margin_error > tol * len(sample):
            note = (
                f"IPF stopped after {fit.n_iter} sweeps "
                f"(margin error {fit.max_margin_error:.2g})"
            )
        return Estimate(
            tau1=fit.tau1,
            tau2=fit.tau2,
            expected_reidentifications=fit.expected_reidentifications,
            theta=float(su.sum() / (su.sum() + excess.sum())) if su.any() else math.nan,
            record_prob_unique=fit.prob_population_unique()[fit.record_cell],
            note=note,
        )

    method.__name__ = f"loglinear_{interactions.replace('-', '_')}"
    return method


def dis_method(sample, keys, weight, N) -> Estimate:
    """Skinner-Elliot (2002) DIS estimate of theta = P(correct match | unique match)."""
    from sdcbayes.risk.dis import dis_from_frequencies

    _, fk = _sample_cells(sample, keys)
    return Estimate(theta=dis_from_frequencies(fk, len(sample) / N))


#: The closed-form baselines, by name.
BASELINES: dict[str, Callable] = {
    "benedetti-franconi": benedetti_franconi_method,
    "poisson-gamma": poisson_gamma_method,
    "loglinear-main": loglinear_method("main"),
    "loglinear-2way": loglinear_method("two-way"),
    "dis": dis_method,
}


# posterior models: the models layer (and PyMC where a fit needs it) is imported on
# the first call, so that importing the harness stays cheap


def _factors(idata) -> str:
    import json

    by_size = json.loads(idata.attrs["cluster_correction"])["by_size"]
    return "/".join(f"{float(v):.3g}" for v in by_size.values())


def _mass_label(mass) -> str:
    return mass if isinstance(mass, str) else f"{mass:.3g}"


def latent_class_method(n_classes: int = 30, draws: int = 150, tune: int = 100, chains: int = 2,
                        thin: int = 1, structural_zeros="auto", priors=None, levels=None,
                        seed: int = 0, prob: float = 0.9, init: str = "em",
                        em_restarts: int = 3, overdispersion=None,
                        overdispersion_splits: int | None = None,
                        overdispersion_prior=None, overdispersion_predictive=None,
                        overdispersion_ratios=None, overdispersion_dispersion=None,
                        overdispersion_part_mass=None, overdispersion_focus=None,
                        overdispersion_partitions=None, overdispersion_combine_ratios=None,
                        overdispersion_parts=None,
                        weights: bool = True, cluster_correction=None, cores: int = 1,
                        profile_mass=None, profile_mass_unreached=None, split_merge: int = 0,
                        ppc: int = 0, uniques_kappa_note: bool = False):
    """A :class:`sdcbayes.validation.Method` fitting :class:`LatentClassModel` by Gibbs sampling.

    ``overdispersion`` is passed to :meth:`LatentClassModel.sample` (``"cv"``: the
    cross-validated gamma overdispersion of :func:`overdispersion_cv` at the scale
    ratios ``overdispersion_ratios`` (default :data:`CV_RATIOS`), over
    ``overdispersion_splits`` random partitions per ratio, default :data:`CV_SPLITS`;
    prior, fit of the parts and variance of the held-out count
    ``overdispersion_prior``, ``overdispersion_predictive``,
    ``overdispersion_dispersion``, defaults :data:`KAPPA_PRIOR`, :data:`CV_PREDICTIVE`,
    :data:`CV_DISPERSION`; with a learnt profile mass, the parts' masses
    ``overdispersion_part_mass``, default :data:`CV_PART_MASS`; the weighting of the
    held-out count ``overdispersion_focus``, default :data:`CV_FOCUS`; the combination of
    the partitions of a ratio ``overdispersion_partitions``, default :data:`CV_PARTITIONS`;
    of the ratios ``overdispersion_combine_ratios``, default :data:`CV_COMBINE_RATIOS`;
    how the parts are drawn ``overdispersion_parts``, default :data:`CV_PARTS`).

    ``weights=True`` (default): unequal sampling weights (stratified designs) enter
    the model as the records' weight class (:func:`weight_classes`, module
    docstring "Unequal weights"); with equal weights (simple random sampling) the
    model is the same either way. ``False`` extrapolates every cell by N/n.

    ``cluster_correction`` (household designs only, ignored otherwise): passed to
    :meth:`LatentClassModel.sample` (``"cv"``: :func:`cluster_rate_correction`).

    ``profile_mass="cv"`` (with ``overdispersion="cv"`` and the learnt profile prior):
    the mass of the keys of >= 20 levels chosen by the cross-validation,
    :func:`profile_mass_cv` (the learnt mass kept where it suffices); ``"span"``: spread
    between the learnt mass and that choice, :func:`profile_mass_span`; ``None``: the
    prior's. ``profile_mass_unreached`` (``"learnt"`` or ``"largest"``; ``None``: the
    rule's own default) is their ``unreached``.

    ``split_merge``: the sampler's split-merge proposals per sweep
    (:meth:`LatentClassModel.sample`); the note then gives the accepted ones per sweep.

    ``uniques_kappa_note``: the note also gives the kappa at which the mixture's
    expected sample uniques meet the sample's (:func:`uniques_kappa`) and tau1 and tau2
    (posterior means of their expectations) at that kappa: an in-sample read of kappa
    to set against the cross-validation's.

    ``ppc``: predictive replicates per chain (:meth:`LatentClassModel.sample`); the note
    then gives, for the sample's cells seen 1 to 5 times and 6 or more, the observed
    number, the replicates' mean and the predictive p-value P(m_rep >= m_obs), as
    ``ppc m1 obs/mean/p ...``.

    ``cores``: chains run at once (:meth:`LatentClassModel.sample`); 1 by default, so
    that the run times the harness records are one core's, as its benchmarks run one
    process per core.

    Point estimates of tau1, tau2 and the expected re-identifications are
    posterior means of their conditional expectations given pi; ``intervals`` are
    the central ``prob`` posterior-predictive intervals (F | pi included).
    ``structural_zeros="auto"`` uses the ``"implication"`` candidates of
    :func:`detect_structural_zeros` on the sample (a stand-in for the user's
    confirmation in an automated study); ``None`` fits the untruncated model; a
    list of rules is used as given (name every level in ``levels``). ``levels``:
    mapping key -> all levels (codebook). Chains start from EM fits
    (``init="em"``, :meth:`LatentClassModel.fit_em`, ``em_restarts`` random starts
    per chain, classes pruned by the Figueiredo-Jain rule); the note reports the
    r_hat of tau1/tau2 across chains, which stays above 1.05 on the real designs
    (the number of occupied classes mixes slowly, see ``benchmarks/latent_class_accuracy.py``),
    and the classes occupied (:func:`~sdcbayes.inference.diagnostics.check_truncation`).
    """
    if profile_mass is not None and (profile_mass not in ("cv", "span")
                                     or overdispersion != "cv"):
        raise InputError("profile_mass must be None, 'cv' or 'span' (which need "
                         f"overdispersion='cv'); got {profile_mass!r}")
    if profile_mass_unreached not in (None, "learnt", "largest") or (
            profile_mass_unreached is not None and profile_mass is None):
        raise InputError("profile_mass_unreached must be None, 'learnt' or 'largest', with a "
                         f"profile_mass; got {profile_mass_unreached!r}")

    def method(sample, keys, weight, N):
        import warnings

        from sdcbayes.inference.diagnostics import TruncationWarning, check_truncation
        from sdcbayes.models.latent_class import (
            CV_COMBINE_RATIOS,
            CV_DISPERSION,
            CV_FOCUS,
            CV_PART_MASS,
            CV_PARTITIONS,
            CV_PARTS,
            CV_PREDICTIVE,
            CV_RATIOS,
            CV_SPLITS,
            KAPPA_PRIOR,
            LatentClassModel,
            _expected_inverse_frequency_f,
            detect_structural_zeros,
            excess_means,
            expected_inverse_frequency_f,
            overdispersion_cv,
            posterior_tau_summary,
            prob_population_unique,
            profile_mass_cv,
            profile_mass_span,
            simulate_excess,
        )

        sz = structural_zeros
        if isinstance(sz, str) and sz == "auto":
            cands = detect_structural_zeros(sample, keys)
            sz = list(cands.loc[cands.kind == "implication", "rule"]) or None

        frame = sample[list(keys)].astype(str)
        # unequal weights (a stratified design) enter as the records' weight class; a
        # household design's households keep the cross-validation's parts whole
        model = LatentClassModel.from_frame(
            frame, keys, levels=levels, n_classes=n_classes, structural_zeros=sz,
            priors=priors, weights=sample[weight] if weights else None,
            clusters=sample[HOUSEHOLD_COLUMN] if HOUSEHOLD_COLUMN in sample.columns else None)
        clustered = model.record_clusters is not None
        od = overdispersion
        splits = CV_SPLITS if overdispersion_splits is None else int(overdispersion_splits)
        if od == "cv":  # seeded here, as the stored results were
            cv_options = dict(
                n_splits=splits, em_restarts=max(1, em_restarts - 1),
                ratios=CV_RATIOS if overdispersion_ratios is None else overdispersion_ratios,
                max_ratio=float(N) / model.n,
                prior=KAPPA_PRIOR if overdispersion_prior is None else overdispersion_prior,
                predictive=(CV_PREDICTIVE if overdispersion_predictive is None
                            else overdispersion_predictive),
                dispersion=(CV_DISPERSION if overdispersion_dispersion is None
                            else overdispersion_dispersion),
                part_mass=(CV_PART_MASS if overdispersion_part_mass is None
                           else overdispersion_part_mass),
                focus=CV_FOCUS if overdispersion_focus is None else overdispersion_focus,
                partitions=(CV_PARTITIONS if overdispersion_partitions is None
                            else overdispersion_partitions),
                combine_ratios=(CV_COMBINE_RATIOS if overdispersion_combine_ratios is None
                                else overdispersion_combine_ratios),
                parts=CV_PARTS if overdispersion_parts is None else overdispersion_parts)
            if profile_mass is not None:
                rule = profile_mass_cv if profile_mass == "cv" else profile_mass_span
                choice = rule(model, random_seed=seed, **cv_options, **(
                    {} if profile_mass_unreached is None
                    else {"unreached": profile_mass_unreached}))
                model, od = choice["model"], choice["overdispersion"]
                od = {**od, "profile_mass": choice["summary"]["mass"]}
            else:
                od = overdispersion_cv(model, random_seed=seed, **cv_options)
        idata = model.sample(draws=draws, tune=tune, chains=chains, thin=thin, N=float(N),
                             random_seed=seed, store="all", init=init,
                             em_restarts=em_restarts, overdispersion=od,
                             cluster_correction=cluster_correction if clustered else None,
                             cores=cores, split_merge=split_merge, ppc=ppc)
        n = model.n
        C = model.key_codes.shape[0]
        # lam: stored with weight classes only, else (N - n) pi (excess_means)
        lam = excess_means(idata).reshape(-1, C)
        kappa = (idata.posterior["kappa"].values.reshape(-1, 1)
                 if "kappa" in idata.posterior else None)
        smean = n * idata.posterior["pi"].values.reshape(-1, C)  # n pi_k
        f = model.key_counts
        su = f == 1
        rng = np.random.default_rng(seed + 1)
        if kappa is None:
            er_draws = (f * _expected_inverse_frequency_f(f, lam)).sum(axis=1)
        else:
            er_draws = (f * expected_inverse_frequency_f(f[None, :], lam, kappa, smean)).sum(axis=1)
        er_pred = (f / (f + simulate_excess(lam, rng, kappa, smean, f=f[None, :]))).sum(axis=1)
        summ = posterior_tau_summary(idata, prob)
        with warnings.catch_warnings():  # the note reports it: a warning per fit is noise
            warnings.simplefilter("ignore", TruncationWarning)
            used, _ = check_truncation(idata.sample_stats["n_classes_used"].values, model.H)
        lo, hi = (1 - prob) / 2, 1 - (1 - prob) / 2
        # record -> cell (cells are the sorted unique rows of the coded keys)
        rec = np.column_stack([pd.Categorical(frame[k], categories=model.levels[j]).codes
                               for j, k in enumerate(keys)])
        _, cell_of = np.unique(rec, axis=0, return_inverse=True)
        cell_of = cell_of.reshape(-1)
        p_unique = np.where(su, prob_population_unique(lam, kappa, smean).mean(axis=0), 0.0)
        excess = lam[:, su].mean(axis=0)
        return Estimate(
            tau1=summ["tau1"], tau2=summ["tau2"],
            expected_reidentifications=float(er_draws.mean()),
            theta=float(su.sum() / (su.sum() + excess.sum())) if su.any() else float("nan"),
            intervals={"tau1": tuple(summ["tau1_interval"]), "tau2": tuple(summ["tau2_interval"]),
                       "expected_reidentifications": (float(np.quantile(er_pred, lo)),
                                                      float(np.quantile(er_pred, hi)))},
            record_prob_unique=p_unique[cell_of],
            note=(f"rhat tau1 {summ['tau1_rhat']:.3f} tau2 {summ['tau2_rhat']:.3f}; "
                  + (f"kappa median {np.median(kappa):.3g}; " if kappa is not None else "")
                  + (f"cv dispersion {od['dispersion']:.3g}; "
                     if isinstance(od, dict) and od.get("dispersion", 1.0) != 1.0 else "")
                  + (f"profile mass {_mass_label(od['profile_mass'])}; "
                     if isinstance(od, dict) and "profile_mass" in od else "")
                  + ("cv by household; " if clustered and isinstance(od, dict) else "")
                  + (f"cluster factors {_factors(idata)}; "
                     if "cluster_correction" in idata.attrs else "")
                  + (f"split-merge accepted "
                     f"{float(idata.sample_stats['split_merge_accepted'].mean()):.3g} per sweep; "
                     if split_merge else "")
                  + (_ppc_note(model, idata) if ppc else "")
                  + (_uniques_kappa_note(lam, smean, f, n) if uniques_kappa_note else "")
                  + f"classes occupied {used['classes_used_mean']:.1f} of {model.H} "
                  f"(all in {used['share_draws_all_classes_used']:.0%}); "
                  + f"{0 if sz is None else len(sz)} structural-zero rules; n={n:g}"),
        )

    method.__name__ = f"latent_class_H{n_classes}"
    return method


def _uniques_kappa_note(lam, smean, f, n) -> str:
    """``uniques kappa K tau1 T1 tau2 T2; `` for a harness note (draws x cells inputs)."""
    from sdcbayes.models.latent_class import (
        expected_inverse_frequency,
        prob_population_unique,
        uniques_kappa,
    )

    k = uniques_kappa(smean / n, f, n)
    su = f == 1
    kk = None if not np.isfinite(k) else k
    t1 = prob_population_unique(lam[:, su], kk, smean[:, su]).sum(axis=1).mean()
    t2 = expected_inverse_frequency(lam[:, su], kk, smean[:, su]).sum(axis=1).mean()
    return f"uniques kappa {k:.4g} tau1 {t1:.3f} tau2 {t2:.3f}; "


def _ppc_note(model: LatentClassModel, idata) -> str:
    """``ppc m1 obs/mean/p m2 ... m6+ ...; `` for a harness note (``latent_class_method``)."""
    from sdcbayes.models.latent_class import predictive_counts

    return "ppc " + " ".join(f"{label} {o}/{mean:.1f}/{p:.3f}"
                             for label, o, mean, p in predictive_counts(model, idata)) + "; "


def loglinear_bayes_method(family: str = "poisson", interactions="all", draws: int = 400,
                           priors=None, seed: int = 0, prob: float = 0.9,
                           max_exact_cells: int | None = None,
                           n_importance: int | None = None,
                           max_iter: int = 60, scale_tol: float = 1e-2):
    """A :class:`sdcbayes.validation.Method` fitting :class:`LoglinearModel` by Laplace.

    Point estimates of tau1, tau2 and the expected re-identifications are posterior
    means of their conditional expectations (:func:`posterior_risk`); ``intervals``
    the central ``prob`` posterior-predictive intervals (parameter uncertainty from
    the Laplace approximation given the type-II MAP scales, and F | parameters).
    pi = n / N.
    """
    def method(sample, keys, weight, N):
        from sdcbayes.models.loglinear import (
            DEFAULT_IMPORTANCE_CELLS,
            DEFAULT_MAX_EXACT_CELLS,
            LoglinearModel,
            posterior_risk,
        )

        # None: the model's defaults (module constants of sdcbayes.models.loglinear, which
        # the signature cannot name without importing the models layer at import time)
        model = LoglinearModel.from_frame(
            sample, list(keys), family=family, interactions=interactions, priors=priors,
            max_exact_cells=(DEFAULT_MAX_EXACT_CELLS if max_exact_cells is None
                             else max_exact_cells),
            n_importance=DEFAULT_IMPORTANCE_CELLS if n_importance is None else n_importance,
            importance_seed=seed)
        fit = model.fit_laplace(max_iter=max_iter, scale_tol=scale_tol)
        rng = np.random.default_rng(seed)
        th = fit.draws(draws, rng)
        log_mu = fit.observed_log_mu(th)
        kappa = np.exp(th[:, -1]) if family == "negbin" else None
        res = posterior_risk(model, log_mu, len(sample) / N, kappa, rng, prob)
        su = model.counts == 1
        p_cell = np.zeros(model.counts.size)
        p_cell[su] = res["p_unique_su"]
        s_min = min(fit.scales.values()) if fit.scales else math.nan
        return Estimate(
            tau1=res["tau1"], tau2=res["tau2"],
            expected_reidentifications=res["expected_reidentifications"], theta=res["theta"],
            intervals=res["intervals"], record_prob_unique=p_cell[model.record_cell],
            note=(f"{'exact' if model.exact else 'IS'} zero-cell sum; {model.n_par} params; "
                  f"{fit.n_iter} iters{'' if fit.converged else ' (not converged)'}; "
                  f"block scales min {s_min:.2g}, median "
                  f"{np.median(list(fit.scales.values())) if fit.scales else math.nan:.2g}"
                  + (f"; kappa {fit.kappa:.3g}" if family == "negbin" else "")),
        )

    method.__name__ = f"loglinear_bayes_{family}"
    return method


# --------------------------------------------------------------------------------------
# truth, sampling, metrics
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleTruth:
    """True targets of one sample (see the module docstring).

    Attributes
    ----------
    tau1, tau2, expected_reidentifications, theta : float
    record_fk, record_Fk : ndarray of int64, shape (n,)
        f_k and F_k of each sample record, sample order.
    """

    tau1: float
    tau2: float
    expected_reidentifications: float
    theta: float
    record_fk: np.ndarray
    record_Fk: np.ndarray

    def value(self, quantity: str) -> float:
        """The true value of one of :data:`QUANTITIES`."""
        return float(getattr(self, quantity))


def _population_cells(frame: pd.DataFrame, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Population cell of every unit (dense codes) and F_k of every population cell."""
    _, cell = np.unique(joint_codes(frame, keys), return_inverse=True)
    cell = cell.reshape(-1)
    return cell, np.bincount(cell)


def truth_of_sample(pop_cell: np.ndarray, pop_counts: np.ndarray, index: np.ndarray) -> SampleTruth:
    r"""True tau1, tau2, re-identifications and theta of the sample ``index``.

    Parameters
    ----------
    pop_cell : ndarray of int, shape (N,)
        Population cell of every unit.
    pop_counts : ndarray of int, shape (n_population_cells,)
        F_k of every population cell.
    index : ndarray of int, shape (n,)
        Population rows in the sample.

    Returns
    -------
    SampleTruth
    """
    cell = pop_cell[index]
    f_of_cell = np.bincount(cell, minlength=pop_counts.size)
    fk = f_of_cell[cell].astype(np.int64)
    Fk = pop_counts[cell].astype(np.int64)
    su = fk == 1  # a sample-unique record is its cell
    return SampleTruth(
        tau1=float(np.count_nonzero(su & (Fk == 1))),
        tau2=float(np.sum(1.0 / Fk[su])),
        expected_reidentifications=float(np.sum(1.0 / Fk)),
        theta=float(su.sum() / Fk[su].sum()) if su.any() else math.nan,
        record_fk=fk,
        record_Fk=Fk,
    )


def _draw_households(rng: np.random.Generator, household: np.ndarray, fraction: float):
    """Rows (sorted) and weights of a simple random sample of whole households."""
    H = int(household.max()) + 1
    m = max(1, round(fraction * H))
    chosen = np.zeros(H, dtype=bool)
    chosen[rng.choice(H, size=m, replace=False)] = True
    index = np.flatnonzero(chosen[household])
    return index, np.full(index.size, H / m)


def _draw(rng: np.random.Generator, stratum: np.ndarray | None, fraction: float, N: int):
    """Sample rows (sorted) and their weights: SRS, or stratified with n_h ∝ sqrt(N_h).

    Stratified: each stratum's quota rounded on its own and clipped to [1, N_h]
    (``sqrt_allocation(..., exact=False)``), so n can miss round(fraction * N) (see
    :class:`Design`); the exact allocation of :func:`sdcbayes.datasets.draw_sample`
    would change the samples behind the stored synthetic-census and EU-SILC results.
    """
    if stratum is None:
        n = max(1, round(fraction * N))
        index = np.sort(rng.choice(N, size=n, replace=False))
        return index, np.full(n, N / n)
    sizes = np.bincount(stratum)
    take = sqrt_allocation(sizes, round(fraction * N), exact=False)
    # Random key per unit, ranked within its stratum: the take[h] smallest are drawn.
    order = np.lexsort((rng.random(N), stratum))
    start = np.cumsum(sizes) - sizes
    rank = np.empty(N, dtype=np.int64)
    rank[order] = np.arange(N) - np.repeat(start, sizes)
    index = np.flatnonzero(rank < take[stratum])
    return index, (sizes / take)[stratum[index]]


def _same_length(values: np.ndarray, outcome: np.ndarray, what: str) -> None:
    if values.shape != outcome.shape or values.ndim != 1:
        raise InputError(f"{what} and outcome must be 1-d arrays of one value per record, got "
                         f"shapes {values.shape} and {outcome.shape}; pass them aligned.")


def brier_score(prob, outcome) -> float:
    """Mean squared difference between predicted probabilities and 0/1 outcomes."""
    prob = np.asarray(prob, dtype=float)
    outcome = np.asarray(outcome, dtype=float)
    _same_length(prob, outcome, "prob")
    return float(np.mean((prob - outcome) ** 2)) if prob.size else math.nan


def auc(score, outcome) -> float:
    """Area under the ROC curve: P(score of a positive > score of a negative), ties 1/2.

    Mann-Whitney form with mid-ranks; NaN when only one class is present.
    """
    score = np.asarray(score, dtype=float)
    outcome = np.asarray(outcome, dtype=bool)
    _same_length(score, outcome, "score")
    n_pos = int(outcome.sum())
    n_neg = outcome.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = stats.rankdata(score)
    return float((ranks[outcome].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _resolve_methods(methods) -> dict[str, Callable]:
    if methods is None:
        return dict(BASELINES)
    if isinstance(methods, Mapping):
        return dict(methods)
    if isinstance(methods, str) or callable(methods):
        methods = [methods]  # one method alone, not the characters of its name
    out = {}
    for m in methods:
        if isinstance(m, str):
            if m not in BASELINES:
                raise InputError(f"unknown method {m!r}; choose from {list(BASELINES)}.")
            out[m] = BASELINES[m]
        else:
            out[getattr(m, "__name__", repr(m))] = m
    return out


def run_design(
    design: Design,
    methods=None,
    data_dir=None,
    calibration_bins: int = 10,
) -> pd.DataFrame:
    """Run every method on every replicate of a design.

    A method that raises :class:`~sdcbayes.exceptions.InputError` (e.g. a two-way
    log-linear table too large) is recorded with NaN estimates and the message in
    ``note``, and not tried again on the later replicates of the design; one that
    raises :class:`~sdcbayes.exceptions.ModelError` (a fit this sample does not
    allow, e.g. Poisson-gamma counts without over-dispersion) gets NaN on that
    replicate only, and :func:`summarise` counts the replicates that have estimates.

    Parameters
    ----------
    design : Design
    methods : mapping of name to Method, or sequence of names / callables, optional
        Default: all of :data:`BASELINES`.
    data_dir : path, optional
        Shared data folder (:func:`shared_data_dir`).
    calibration_bins : int, default 10
        Equal-width bins of P(F=1|f=1) for :func:`calibration_table`.

    Returns
    -------
    pandas.DataFrame
        Tidy: one row per (replicate, method, quantity) with columns ``design``,
        ``population``, ``kind``, ``fraction``, ``replicate``, ``method``,
        ``quantity`` (:data:`QUANTITIES`, then ``brier`` and ``auc`` whose
        ``estimate`` is the score and ``truth`` NaN), ``truth``, ``estimate``,
        ``lo``, ``hi``, ``time_s`` (the method's run time on that sample),
        ``n``, ``n_sample_uniques``, ``note``. ``attrs["calibration"]`` holds the
        binned calibration counts (read them with :func:`calibration_table`).

    Raises
    ------
    SkipDesign
        The population's data are absent.
    InputError
        ``design`` is not a :class:`Design`, an unknown method name,
        ``calibration_bins`` not a positive integer, key, strata or household columns
        the population lacks, or missing values in the strata column (stratified
        designs) or household ids (household designs), checked before any sample is
        drawn.
    """
    if not isinstance(design, Design):
        raise InputError(f"design must be a Design, got {type(design).__name__}; "
                         "e.g. run_design(Design('adult6', 0.01, replicates=10)).")
    methods = _resolve_methods(methods)
    calibration_bins = _count(calibration_bins, "calibration_bins", "e.g. calibration_bins=10")
    if calibration_bins < 1:
        raise InputError(f"calibration_bins must be >= 1, got {calibration_bins}; "
                         "pass e.g. calibration_bins=10.")
    pop = (
        design.population
        if isinstance(design.population, Population)
        else load_population(design.population, data_dir=data_dir)
    )
    keys = list(pop.keys if design.keys is None else design.keys)
    frame = pop.frame
    N = len(frame)
    strata = design.strata or pop.strata
    stratum = None
    if design.kind == "stratified":
        if strata not in frame.columns:
            raise InputError(f"strata column {strata!r} is not in population {pop.name!r}; "
                             f"pass Design(strata=...) naming one of {list(frame.columns)}.")
        stratum = complete_codes(frame, strata, "strata")[0]
    household = None
    if design.kind == "household":
        if pop.household is None:
            raise InputError(f"population {pop.name!r} has no household column, so it has no "
                             f"household design; use kind='srs' or 'stratified', or one of "
                             f"{sorted(HOUSEHOLDS)}.")
        if pop.household not in frame.columns:
            raise InputError(f"household column {pop.household!r} is not in population "
                             f"{pop.name!r}; choose from {list(frame.columns)}.")
        household = complete_codes(frame, pop.household, "household")[0]
    pop_cell, pop_counts = _population_cells(frame, keys)
    columns = list(dict.fromkeys(keys + ([strata] if stratum is not None else [])))
    weight = "__weight__"
    edges = np.linspace(0.0, 1.0, calibration_bins + 1)
    calib = {name: np.zeros((3, calibration_bins)) for name in methods}  # count, sum p, sum y
    failed: dict[str, str] = {}
    rows = []
    for r in range(int(design.replicates)):
        rng = np.random.default_rng([int(design.seed), r])
        if household is None:
            index, w = _draw(rng, stratum, float(design.fraction), N)
        else:
            index, w = _draw_households(rng, household, float(design.fraction))
        sample = frame.iloc[index][columns].reset_index(drop=True)
        sample[weight] = w
        if household is not None:  # methods that model clusters read it (HOUSEHOLD_COLUMN)
            sample[HOUSEHOLD_COLUMN] = household[index]
        truth = truth_of_sample(pop_cell, pop_counts, index)
        su = truth.record_fk == 1
        is_pu = truth.record_Fk[su] == 1
        base = {
            "design": design.label,
            "population": pop.name,
            "kind": design.kind,
            "fraction": float(design.fraction),
            "replicate": r,
            "n": int(index.size),
            "n_sample_uniques": int(su.sum()),
        }
        for name, method in methods.items():
            if name in failed:
                est, elapsed = Estimate(note=failed[name]), math.nan
            else:
                t0 = time.perf_counter()
                try:
                    est = method(sample, keys, weight, N)
                except InputError as exc:
                    failed[name] = str(exc)
                    est = Estimate(note=str(exc))
                except ModelError as exc:
                    # this sample only (e.g. counts without over-dispersion for the
                    # Poisson-gamma fit): NaN here, tried again on the next replicate
                    est = Estimate(note=str(exc))
                elapsed = time.perf_counter() - t0
            for q in QUANTITIES:
                lo, hi = est.intervals.get(q, (math.nan, math.nan))
                rows.append({**base, "method": name, "quantity": q, "truth": truth.value(q),
                             "estimate": float(getattr(est, q)), "lo": lo, "hi": hi,
                             "time_s": elapsed, "note": est.note})
            if est.record_prob_unique is not None:
                p = np.asarray(est.record_prob_unique, dtype=float)[su]
                scores = {"brier": brier_score(p, is_pu), "auc": auc(p, is_pu)}
                b = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, calibration_bins - 1)
                calib[name] += np.stack([
                    np.bincount(b, minlength=calibration_bins),
                    np.bincount(b, weights=p, minlength=calibration_bins),
                    np.bincount(b, weights=is_pu.astype(float), minlength=calibration_bins),
                ])
            else:
                scores = {"brier": math.nan, "auc": math.nan}
            for q, v in scores.items():
                rows.append({**base, "method": name, "quantity": q, "truth": math.nan,
                             "estimate": v, "lo": math.nan, "hi": math.nan,
                             "time_s": elapsed, "note": est.note})
    out = pd.DataFrame(rows)
    # Stored as plain lists: pandas compares attrs when concatenating results.
    out.attrs["calibration"] = _calibration_frame(design.label, calib, edges).to_dict("list")
    return out


def _calibration_frame(label: str, calib: dict, edges: np.ndarray) -> pd.DataFrame:
    parts = []
    for name, (count, sum_p, sum_y) in calib.items():
        with np.errstate(invalid="ignore", divide="ignore"):
            parts.append(pd.DataFrame({
                "design": label, "method": name, "bin_lo": edges[:-1], "bin_hi": edges[1:],
                "n": count.astype(int), "mean_predicted": sum_p / count,
                "observed": sum_y / count,
            }))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def calibration_table(results: pd.DataFrame) -> pd.DataFrame:
    """Binned calibration of P(F=1|f=1) over sample uniques (data of a calibration plot).

    One row per (design, method, bin) with the number of sample-unique records whose
    predicted probability fell in the bin, their mean prediction, and the observed
    share of population uniques, pooled over replicates. Empty bins have NaN means.
    Works on the output of :func:`run_design` (concatenating results of several
    designs drops pandas ``attrs``: concatenate their calibration tables instead).
    """
    return pd.DataFrame(results.attrs.get("calibration", {}))


def calibration_error(calibration: pd.DataFrame) -> pd.DataFrame:
    r"""Expected calibration error of P(F=1|f=1) per design and method.

    From the binned counts of :func:`calibration_table` (bins b with :math:`n_b`
    sample-unique records, mean prediction :math:`\bar p_b` and observed share of
    population uniques :math:`\bar y_b`):
    :math:`\mathrm{ECE} = \sum_b n_b |\bar p_b - \bar y_b| / \sum_b n_b`, the mean
    distance of a record's bin from the diagonal of the calibration plot (Naeini,
    Cooper & Hauskrecht 2015, "Obtaining well calibrated probabilities using Bayesian
    binning", AAAI, section 3). Beside it the records, their mean prediction and the
    observed share over all bins (calibration in the large) and the largest gap of a
    bin holding at least 1% of the records.

    Returns
    -------
    pandas.DataFrame
        One row per (design, method): ``records``, ``mean_predicted``, ``observed``,
        ``ece``, ``max_gap``.
    """
    need = {"design", "method", "n", "mean_predicted", "observed"}
    if not need <= set(calibration.columns):
        raise InputError(f"a calibration table needs the columns {sorted(need)} "
                         f"(calibration_table of run_design's result); got "
                         f"{sorted(calibration.columns)}")
    rows = []
    for (design, method), g in calibration.groupby(["design", "method"], sort=False):
        g = g[g["n"] > 0]
        n = g["n"].to_numpy(dtype=float)
        if n.sum() == 0:
            continue
        p, y = g["mean_predicted"].to_numpy(float), g["observed"].to_numpy(float)
        gap = np.abs(p - y)
        rows.append({"design": design, "method": method, "records": int(n.sum()),
                     "mean_predicted": float(n @ p / n.sum()),
                     "observed": float(n @ y / n.sum()),
                     "ece": float(n @ gap / n.sum()),
                     "max_gap": float(gap[n >= 0.01 * n.sum()].max())})
    return pd.DataFrame(rows)


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    r"""The method x design x metric table.

    For each (design, method, quantity) over replicates r with estimate
    :math:`\hat t_r` and truth :math:`t_r`:

    - ``rel_bias`` = :math:`\overline{\hat t - t} / \bar t` and
      ``rel_rmse`` = :math:`\sqrt{\overline{(\hat t - t)^2}} / \bar t` (ratios of
      means, so that replicates with t_r = 0 -- e.g. tau1 at 1% -- are usable);
    - ``coverage``: share of replicates with lo <= t <= hi, ``width``: mean hi - lo
      (NaN for methods without intervals); ``intervals`` and ``covered``: the counts
      behind ``coverage`` (for its Monte Carlo error, :func:`goal_table`);
    - ``brier``, ``auc``: means over replicates of the record-level scores;
    - ``time_s``: mean run time of the method per sample.

    A replicate counts (in ``replicates`` and every metric) where both its estimate
    and its truth are finite: a method that returned NaN has nothing to score, and a
    truth that is undefined for the sample (theta of a sample without sample
    uniques, :func:`truth_of_sample`) has nothing to score against -- counting its
    interval as a miss would bias ``coverage`` down.

    Results of several designs may be concatenated: rows are grouped by the
    ``design`` label (:attr:`Design.label`), which names the population, kind,
    fraction and any key or strata override, but not the seed, so that runs of one
    design under several seeds pool as more replicates. A label that does not pin
    one design (hand-built tables, two different populations of the same name) is
    refused where the columns show it: one label with several ``population`` values,
    or, for simple random and stratified designs (whose sample size is fixed), with
    several sample sizes ``n``.

    Parameters
    ----------
    results : pandas.DataFrame
        The output of :func:`run_design` (or several, concatenated): at least the
        columns ``design``, ``method``, ``quantity``, ``truth``, ``estimate``, ``lo``,
        ``hi``, ``time_s``.

    Returns
    -------
    pandas.DataFrame
        One row per (design, method, quantity) for the quantities of
        :data:`QUANTITIES`, with columns ``replicates``, ``truth`` (mean),
        ``estimate`` (mean), ``rel_bias``, ``rel_rmse``, ``coverage``, ``width``,
        ``intervals``, ``covered``, ``brier``, ``auc``, ``time_s``; quantities a method
        does not estimate are left out.

    Raises
    ------
    InputError
        Missing columns, or one ``design`` label over several populations or sample
        sizes (see above).
    """
    need = {"design", "method", "quantity", "truth", "estimate", "lo", "hi", "time_s"}
    missing = sorted(need - set(results.columns))
    if missing:
        raise InputError(f"results lack the columns {missing}; pass the output of run_design")
    _check_one_design_per_label(results)
    keys = ["design", "method"]
    file_level = results[results["quantity"].isin(QUANTITIES)].copy()
    # unscoreable replicates: no estimate, or a truth undefined for the sample
    file_level = file_level[np.isfinite(file_level["estimate"])
                            & np.isfinite(file_level["truth"])]
    err = file_level["estimate"] - file_level["truth"]
    file_level["err"] = err
    file_level["sq"] = err**2
    has_int = np.isfinite(file_level["lo"]) & np.isfinite(file_level["hi"])
    inside = (file_level["lo"] <= file_level["truth"]) & (file_level["truth"] <= file_level["hi"])
    file_level["covered"] = np.where(has_int, inside, np.nan)
    file_level["width"] = np.where(has_int, file_level["hi"] - file_level["lo"], np.nan)
    g = file_level.groupby(keys + ["quantity"], sort=False)
    table = g.agg(
        replicates=("estimate", "size"),
        truth=("truth", "mean"),
        estimate=("estimate", "mean"),
        mean_err=("err", "mean"),
        mse=("sq", "mean"),
        coverage=("covered", "mean"),
        intervals=("covered", "count"),
        covered=("covered", "sum"),
        width=("width", "mean"),
        time_s=("time_s", "mean"),
    ).reset_index()
    table["rel_bias"] = table["mean_err"] / table["truth"]
    table["rel_rmse"] = np.sqrt(table["mse"]) / table["truth"]
    table.loc[table["intervals"] == 0, "covered"] = np.nan
    record = results[results["quantity"].isin(["brier", "auc"])]
    scores = record.pivot_table(index=keys, columns="quantity", values="estimate",
                                aggfunc="mean", dropna=False)
    scores = scores.reindex(columns=["brier", "auc"]).reset_index()
    table = table.merge(scores, on=keys, how="left")
    # Keep designs and methods in the order they were run; quantities in QUANTITIES order.
    table["_d"] = table["design"].map({d: i for i, d in enumerate(pd.unique(results["design"]))})
    table["_m"] = table["method"].map({m: i for i, m in enumerate(pd.unique(results["method"]))})
    table["_q"] = table["quantity"].map({q: i for i, q in enumerate(QUANTITIES)})
    table = table.sort_values(["_d", "_m", "_q"], kind="stable")
    cols = keys + ["quantity", "replicates", "truth", "estimate", "rel_bias", "rel_rmse",
                   "coverage", "width", "intervals", "covered", "brier", "auc", "time_s"]
    return table[cols].reset_index(drop=True)


def _check_one_design_per_label(results: pd.DataFrame) -> None:
    """InputError where one ``design`` label covers rows of visibly different designs."""
    by = results.groupby("design", sort=False)
    if "population" in results.columns:
        pops = by["population"].nunique()
        if (pops > 1).any():
            d = pops.index[pops > 1][0]
            raise InputError(
                f"design label {d!r} covers several populations "
                f"{sorted(results.loc[results['design'] == d, 'population'].unique())}; "
                "give the populations distinct names (Population.name) before pooling.")
    if {"kind", "n"} <= set(results.columns):
        # srs and stratified samples have a fixed size: two sizes are two designs
        fixed = results[results["kind"] != "household"]
        sizes = fixed.groupby("design", sort=False)["n"].nunique()
        if (sizes > 1).any():
            d = sizes.index[sizes > 1][0]
            raise InputError(
                f"design label {d!r} covers samples of sizes "
                f"{sorted(fixed.loc[fixed['design'] == d, 'n'].unique().tolist())}, so "
                "different designs or populations share it; give the populations "
                "distinct names (Population.name) before pooling.")


#: Nominal level of the intervals the issue 7 goal scores.
COVERAGE_LEVEL = 0.90

#: Coverage the goal accepts for intervals of :data:`COVERAGE_LEVEL`.
COVERAGE_BAND = (0.85, 0.95)


def _check_level(level) -> None:
    if (isinstance(level, bool) or not isinstance(level, numbers.Real)
            or not 0.0 < float(level) < 1.0):
        raise InputError(f"level must lie strictly between 0 and 1; got {level!r}; "
                         f"e.g. level={COVERAGE_LEVEL}")


def coverage_band_probability(replicates: int, level: float = COVERAGE_LEVEL,
                              band: tuple[float, float] = COVERAGE_BAND) -> float:
    r"""Chance that exactly calibrated intervals show a coverage inside ``band``.

    With ``replicates`` independent samples and intervals whose true coverage is
    ``level``, the number covering is Binomial(replicates, level); this is
    :math:`P(\text{band}_0 \le X / R \le \text{band}_1)`. It is the Monte Carlo
    limit of the issue 7 coverage goal: at 50 replicates a perfectly calibrated
    method lands in 85-95% with probability 0.77 per quantity, so passing all 12
    designs (tau1 and tau2) is a matter of luck below a few hundred replicates.

    Raises
    ------
    InputError
        ``replicates`` not a positive whole number, ``level`` outside (0, 1), or
        ``band`` not a pair ``0 <= band[0] <= band[1] <= 1``.
    """
    if (isinstance(replicates, bool) or not isinstance(replicates, numbers.Real)
            or not float(replicates).is_integer() or replicates < 1):
        raise InputError(f"replicates must be a positive count, got {replicates!r}; "
                         "pass the number of replicates the coverage was measured on")
    replicates = int(replicates)
    _check_level(level)
    try:
        b0, b1 = (float(b) for b in band)
    except (TypeError, ValueError):
        raise InputError(f"band must be a pair (low, high) of coverages, got {band!r}; "
                         f"e.g. band={COVERAGE_BAND}") from None
    if not 0.0 <= b0 <= b1 <= 1.0:
        raise InputError(f"band must satisfy 0 <= low <= high <= 1, got {band!r}; "
                         f"e.g. band={COVERAGE_BAND}")
    band = (b0, b1)
    lo = math.ceil(band[0] * replicates - 1e-9)
    hi = math.floor(band[1] * replicates + 1e-9)
    dist = stats.binom(replicates, level)
    return float(dist.cdf(hi) - dist.cdf(lo - 1))


def coverage_p_value(covered: float, intervals: float, level: float = COVERAGE_LEVEL) -> float:
    """Exact two-sided binomial p-value of ``covered`` of ``intervals`` against ``level``.

    NaN where there are no intervals. A small value says the miss is the method's,
    not the Monte Carlo error of a finite number of replicates.

    Raises
    ------
    InputError
        ``level`` outside (0, 1), or ``covered`` outside 0..``intervals`` (a count
        table not made by :func:`summarise`).
    """
    _check_level(level)
    if not (np.isfinite(covered) and np.isfinite(intervals)) or intervals < 1:
        return float("nan")
    if not 0 <= covered <= intervals:
        raise InputError(f"covered must lie between 0 and intervals, got {covered} of "
                         f"{intervals}; pass the counts of summarise (columns covered, "
                         "intervals)")
    return float(stats.binomtest(int(round(covered)), int(intervals), level).pvalue)


def interval_errors(results: pd.DataFrame, quantities: Sequence[str] = ("tau1", "tau2"),
                    level: float = COVERAGE_LEVEL) -> pd.DataFrame:
    r"""Why an interval misses: its centre or its width, replicate by replicate.

    Coverage alone does not say whether intervals miss because they are off
    centre or because they are too narrow (or, above the band, too wide). For
    each replicate of ``results`` (the tidy output of :func:`run_design`) with a
    finite interval, the standardised error

    .. math:: z_r = \frac{\hat t_r - t_r}{(hi_r - lo_r) / (2\, z_{(1+\gamma)/2})}

    divides the error by the standard deviation a normal posterior with that
    central :math:`\gamma` interval would have (``level`` = :math:`\gamma`). For
    calibrated, roughly normal intervals the :math:`z_r` have mean 0 and standard
    deviation 1 over the replicates: ``z_mean`` far from 0 is a bias the
    intervals do not carry (a shift of that many posterior standard deviations),
    ``z_sd`` below 1 intervals wider than the replicates' spread, above 1
    narrower. ``z_mean_se`` = ``z_sd`` / sqrt(replicates) is the Monte Carlo
    error of ``z_mean``.

    Parameters
    ----------
    results : pandas.DataFrame
        Columns ``design``, ``method``, ``quantity``, ``estimate``, ``truth``,
        ``lo``, ``hi``.
    quantities : sequence of str
        Quantities to score (default tau1 and tau2).
    level : float
        Nominal level of the intervals (default :data:`COVERAGE_LEVEL`).

    Returns
    -------
    pandas.DataFrame
        One row per (design, method, quantity) with intervals: ``replicates``,
        ``z_mean``, ``z_sd``, ``z_mean_se``; designs and methods in the order of
        ``results``.
    """
    if not 0.0 < float(level) < 1.0:
        raise InputError(f"level must lie strictly between 0 and 1; got {level!r}")
    need = {"design", "method", "quantity", "estimate", "truth", "lo", "hi"}
    missing = sorted(need - set(results.columns))
    if missing:
        raise InputError(f"results lack the columns {missing}; pass the output of run_design")
    if isinstance(quantities, str):
        quantities = [quantities]  # one quantity, not its characters
    r = results[results["quantity"].isin(list(quantities))]
    width = r["hi"] - r["lo"]
    ok = np.isfinite(r["estimate"]) & np.isfinite(r["truth"]) & np.isfinite(width) & (width > 0)
    r = r[ok]
    sd = (r["hi"] - r["lo"]) / (2.0 * stats.norm.ppf(0.5 + float(level) / 2.0))
    r = r.assign(z=(r["estimate"] - r["truth"]) / sd)
    out = (r.groupby(["design", "method", "quantity"], sort=False)["z"]
           .agg(replicates="size", z_mean="mean", z_sd="std").reset_index())
    out["z_mean_se"] = out["z_sd"] / np.sqrt(out["replicates"])
    return out


def goal_table(summary: pd.DataFrame, method: str) -> pd.DataFrame:
    r"""The accuracy goal of issue 7, design by design, for one method.

    Per design of ``summary`` (the output of :func:`summarise`) where ``method``
    estimates tau1: for tau1 and tau2, ``{q}_bias`` (relative bias),
    ``{q}_bias_ok`` (:math:`|\text{bias}| \le 10\%`, or an absolute bias
    :math:`\le 2` where the mean true tau1 is below 20), ``{q}_coverage`` and
    ``{q}_cover_ok`` (90% intervals cover in 85-95% of replicates),
    ``{q}_cover_p`` (exact binomial p-value of the coverage count against 90%,
    :func:`coverage_p_value`; NaN where ``summary`` has no ``covered`` counts),
    ``{q}_cover_p_holm`` (the same p-values adjusted by Holm's step-down method over
    every design and both quantities of the table: with 12 designs, 24 tests, a
    calibrated method would show some p < 0.05 by chance on about 1 design in 12, so
    a miss should be called the method's only where the adjusted p is small; Holm
    1979, Scand. J. Statist. 6, 65-70) and
    ``{q}_rmse_ok`` (relative RMSE below that of every other method of the design
    with a finite one; NaN where no other method has one, e.g. a summary of the
    method's rows alone, as ``benchmarks/latent_class_accuracy.py --baselines ""``
    writes: there is nothing to beat, so the part is not judged); ``met`` when every
    ``_ok`` is True: a NaN ``rmse_ok`` leaves ``met`` False, the goal not shown met.

    Raises
    ------
    InputError
        ``summary`` lacks the columns of :func:`summarise`, or holds a (design,
        method, quantity) twice (summaries of different designs under one label,
        concatenated: :func:`summarise` their results together instead).
    """
    need = {"design", "method", "quantity", "truth", "rel_bias", "rel_rmse", "coverage"}
    missing = sorted(need - set(summary.columns))
    if missing:
        raise InputError(f"summary lacks the columns {missing}; pass the output of summarise")
    twice = (summary["quantity"].isin(["tau1", "tau2"])
             & summary.duplicated(["design", "method", "quantity"]))
    if twice.any():
        d, m, q = summary.loc[twice, ["design", "method", "quantity"]].iloc[0]
        raise InputError(f"summary has several rows for design {d!r}, method {m!r}, {q}; "
                         "summarise the concatenated results of run_design instead of "
                         "concatenating summaries.")
    rows = []
    for design, g in summary.groupby("design", sort=False):
        q = g.set_index(["method", "quantity"])
        if (method, "tau1") not in q.index or (method, "tau2") not in q.index:
            continue
        small = q.loc[(method, "tau1"), "truth"] < 20
        row: dict = {"design": design}
        for t in ("tau1", "tau2"):
            r = q.loc[(method, t)]
            row[f"{t}_bias"] = float(r["rel_bias"])
            row[f"{t}_bias_ok"] = bool(abs(r["rel_bias"] * r["truth"]) <= 2 if small
                                       else abs(r["rel_bias"]) <= 0.10)
            row[f"{t}_coverage"] = float(r["coverage"])
            row[f"{t}_cover_ok"] = bool(COVERAGE_BAND[0] <= r["coverage"] <= COVERAGE_BAND[1])
            row[f"{t}_cover_p"] = (coverage_p_value(r["covered"], r["intervals"])
                                   if "covered" in r.index else float("nan"))
            others = [o for o in (q.loc[(m, t), "rel_rmse"] for m in g["method"].unique()
                                  if m != method and (m, t) in q.index) if np.isfinite(o)]
            # all() of nothing is True: with no other method's RMSE the part is unjudged
            row[f"{t}_rmse_ok"] = (bool(all(r["rel_rmse"] < o for o in others)) if others
                                   else math.nan)
        # NaN is truthy: only a True part (every _ok is a bool or NaN) counts as held
        row["met"] = all(v is True for k, v in row.items() if k.endswith("_ok"))
        rows.append(row)
    out = pd.DataFrame(rows)
    if len(out):
        cols = ["tau1_cover_p", "tau2_cover_p"]
        adjusted = _holm(out[cols].to_numpy().ravel())
        for i, c in enumerate(cols):
            out.insert(out.columns.get_loc(c) + 1, f"{c}_holm", adjusted.reshape(-1, 2)[:, i])
    return out


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values; NaN entries stay NaN and are not counted.

    The k-th smallest of m p-values becomes max over j <= k of min(1, (m - j + 1) p_(j)),
    so rejecting where the adjusted value is below alpha holds the family-wise error at
    alpha.
    """
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m:
        order = ok[np.argsort(p[ok], kind="stable")]
        scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
        out[order] = np.maximum.accumulate(scaled)
    return out
