"""Samples drawn from a known population, with the disclosure-risk truth.

Because the sample is a subset of a fully known population, the quantities
the risk models estimate are known exactly: the population frequency F_k of
every sample cell, the number tau1 of sample uniques that are population
uniques, tau2 = sum of 1/F_k over sample uniques, and the expected number of
re-identifications sum over records of 1/F_k (``ARCHITECTURE.md``, Notation; IHSN
guide, seed 001, sections 3.1 and 3.4).

Only NumPy and pandas are imported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError

__all__ = [
    "SampleWithTruth",
    "Truth",
    "cell_frequencies",
    "draw_sample",
    "joint_codes",
]

DESIGNS = ("srs", "stratified", "household")


@dataclass(frozen=True)
class Truth:
    r"""The true disclosure-risk quantities of a sample drawn from a known population.

    Attributes
    ----------
    N : int
        Population size.
    n : int
        Sample size.
    record_cell : ndarray of int64, shape (n,)
        Row of ``cells`` holding each sample record (cells are the observed
        key combinations of the sample, sorted by key codes).
    record_fk : ndarray of int64, shape (n,)
        Sample frequency f_k of each record's cell.
    record_Fk : ndarray of int64, shape (n,)
        Population frequency F_k of each record's cell (always >= f_k).
    record_risk : ndarray of float, shape (n,)
        The true per-record risk 1/F_k: the probability that an intruder who
        knows a population member with this key picks the right record
        (seed 001, section 3.1). ``E(1/F_k | f_k)`` estimates this.
    record_household_risk : ndarray of float, shape (n,) or None
        ``1 - prod_{i in household} (1 - 1/F_{k(i)})`` over the sampled members
        of the record's household (seed 001, section 3.3), for household designs.
    cells : pandas.DataFrame
        One row per sample cell: the key columns, ``fk`` (sample frequency),
        ``Fk`` (population frequency), ``Fk_hat`` (sum of sampling weights).
    tau1 : int
        :math:`\tau_1 = \sum_k I(f_k = 1, F_k = 1)`, sample uniques that are
        population uniques (ARCHITECTURE.md, Notation; seed 000, section 2).
    tau2 : float
        :math:`\tau_2 = \sum_k I(f_k = 1) / F_k`, expected correct matches
        among sample uniques.
    expected_reidentifications : float
        :math:`\sum_{i=1}^n 1/F_{k(i)}`, the expected number of correct matches
        over all records (sdcMicro's global risk ER; seed 001, section 3.4).
    household_expected_reidentifications : float or None
        Sum over records of ``record_household_risk`` (household designs).
    n_sample_uniques : int
        Number of cells with f_k = 1.
    n_population_cells : int
        Number of key combinations observed in the population.
    n_population_uniques : int
        Number of population cells with F_k = 1 (sampled or not).
    household_expected_reidentified_households : float or None
        The household risk ``1 - prod_{i in household} (1 - 1/F_{k(i)})`` summed once
        per sampled household (household designs; seed 001, section 3.3): the truth of
        ``household_expected_reidentified_households``.
    """

    N: int
    n: int
    record_cell: np.ndarray
    record_fk: np.ndarray
    record_Fk: np.ndarray
    record_risk: np.ndarray
    record_household_risk: np.ndarray | None
    cells: pd.DataFrame
    tau1: int
    tau2: float
    expected_reidentifications: float
    household_expected_reidentifications: float | None
    n_sample_uniques: int
    n_population_cells: int
    n_population_uniques: int
    household_expected_reidentified_households: float | None = None

    def summary(self) -> dict:
        """Scalar truth as a JSON-ready dict (the names of ``summary.json``)."""
        out = {
            "N": self.N,
            "n_records": self.n,
            "n_cells": int(len(self.cells)),
            "n_sample_uniques": self.n_sample_uniques,
            "tau1": self.tau1,
            "tau2": self.tau2,
            "expected_reidentifications": self.expected_reidentifications,
            "n_population_cells": self.n_population_cells,
            "n_population_uniques": self.n_population_uniques,
        }
        if self.household_expected_reidentifications is not None:
            out["household_expected_reidentifications"] = self.household_expected_reidentifications
        if self.household_expected_reidentified_households is not None:
            out["household_expected_reidentified_households"] = (
                self.household_expected_reidentified_households)
        return out


@dataclass(frozen=True)
class SampleWithTruth:
    """A sample file, the names of its design columns, and the truth about it.

    Attributes
    ----------
    sample : pandas.DataFrame
        The sampled persons (all population columns plus ``weight``), in
        population order, index ``0..n-1``. ``person_id`` links back to the
        population.
    keys : tuple of str
        Key variables the truth refers to.
    weight : str
        Name of the weight column (inverse inclusion probability).
    household : str or None
        Household id column for designs that sample whole households (so that
        household risk is meaningful), else None.
    strata : str or None
        Stratum column of stratified designs, else None.
    design : str
        ``"srs"``, ``"stratified"`` or ``"household"``.
    truth : Truth
        The true F_k, 1/F_k, tau1, tau2 and expected re-identifications.
    """

    sample: pd.DataFrame
    keys: tuple[str, ...]
    weight: str
    household: str | None
    strata: str | None
    design: str
    truth: Truth

    @property
    def sampling_fraction(self) -> float:
        """Overall sampling fraction n / N."""
        return self.truth.n / self.truth.N


def _column_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes 0..m-1 of one column (missing values get a code of their own)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        # Categorical codes are free; -1 (missing) is shifted to a level of its own.
        codes = column.cat.codes.to_numpy().astype(np.int64) + 1
        return codes, len(column.cat.categories) + 1
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    return codes.astype(np.int64), max(len(uniques), 1)


def joint_codes(frame: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """One int64 code per row identifying its combination of ``keys``.

    Equal codes mean equal key combinations (missing values count as a value
    of their own). The codes are mixed-radix numbers of the per-key codes,
    re-compressed to dense codes whenever the radix product would overflow,
    so any number of keys works.

    Parameters
    ----------
    frame : pandas.DataFrame
        The records.
    keys : str or sequence of str
        Key columns (at least one).

    Returns
    -------
    ndarray of int64, shape (len(frame),)
        Non-negative codes; their order is lexicographic in the key codes.

    Raises
    ------
    InputError
        ``keys`` is empty or names columns ``frame`` lacks.
    """
    keys = _key_list(frame, keys)
    combined = np.zeros(len(frame), dtype=np.int64)
    radix = 1
    for key in keys:
        codes, size = _column_codes(frame[key])
        if radix * size >= 2**62:
            _, combined = np.unique(combined, return_inverse=True)
            radix = int(combined.max(initial=-1)) + 1
        combined = combined * size + codes
        radix *= size
    return combined


def cell_frequencies(frame: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Frequency of each row's key combination within ``frame``.

    Applied to the population this is F_k of every person; applied to a
    sample, f_k of every record.

    Parameters
    ----------
    frame : pandas.DataFrame
        The records.
    keys : str or sequence of str
        Key columns (at least one).

    Returns
    -------
    ndarray of int64, shape (len(frame),)
        ``out[i]`` = number of rows of ``frame`` with row i's key combination.

    Raises
    ------
    InputError
        ``keys`` is empty or names columns ``frame`` lacks.
    """
    keys = _key_list(frame, keys)
    _, inverse, counts = np.unique(
        joint_codes(frame, keys), return_inverse=True, return_counts=True
    )
    return counts[inverse].astype(np.int64)


def _key_list(frame: pd.DataFrame, keys) -> list[str]:
    """``keys`` as a checked list: one name alone is one key, not its characters."""
    if isinstance(keys, str):
        keys = [keys]
    try:
        keys = list(keys)
    except TypeError:
        raise InputError(
            f"keys must be a list of column names, got {type(keys).__name__}; "
            "e.g. keys=['region', 'sex']."
        ) from None
    if not keys:  # no key would put every record in one cell
        raise InputError("keys is empty; pass at least one key column, e.g. keys=['region'].")
    _check_columns(frame, keys, "keys")
    return keys


def _check_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            f"{what} {missing} are not columns of the population; "
            f"choose from {list(frame.columns)}."
        )


def sqrt_allocation(sizes, total: int, exact: bool = True) -> np.ndarray:
    r"""Square-root allocation of ``total`` units to strata, summing to ``total`` exactly.

    :math:`n_h = \operatorname{clip}(\lambda \sqrt{N_h}, 1, N_h)` with :math:`\lambda`
    chosen so that the :math:`n_h` sum to ``total`` (a stratum held at one unit or at
    all of its units hands its shortfall or surplus to the others), then rounded to
    integers by the largest-remainder (Hamilton) method: each stratum gets the integer
    part of its quota and the units left go to the largest fractional parts, ties to the
    earlier stratum. Rounding each quota on its own, and clipping without handing the
    surplus on, would miss ``total`` (strata of 10, 40 and 250 units at 10% gave 31, not
    30; strata of 5 and 995 at 50% gave 472, not 500). The square-root rule is the power
    allocation :math:`n_h \propto N_h^{q}` with q = 1/2 of Bankier (1988), "Power
    allocations: determining sample sizes for subnational areas", *The American
    Statistician* 42(3), 174-177, a compromise between proportional and equal allocation.

    Parameters
    ----------
    sizes : array of int
        Units N_h of each stratum (an empty stratum gets none).
    total : int
        Units to draw; held to [number of strata, sum of sizes], since every stratum
        gives at least one unit and at most all of its units.
    exact : bool, default True
        False: each quota :math:`\text{total} \sqrt{N_h} / \sum_g \sqrt{N_g}` rounded
        half to even on its own and clipped to [1, N_h], nothing handed on, so the
        :math:`n_h` can miss ``total``: by a unit or two at 1-10% on the synthetic
        census's 12 regions and EU-SILC's 9 (920 for 919 at 1%), by far more where a
        stratum is clipped (Scotland's 1,149 communal residents at 20%: 12,310 for
        12,678). It is the allocation of :func:`sdcbayes.validation.run_design`, kept so
        that the stored results of ``benchmarks/`` stay reproducible bit for bit.

    Returns
    -------
    numpy.ndarray of int64
        n_h, with ``1 <= n_h <= N_h``; with ``exact`` they sum to ``total`` (after the
        hold above).
    """
    if not exact:
        sizes = np.asarray(sizes)
        quota = total * np.sqrt(sizes) / np.sqrt(sizes).sum()
        return np.clip(np.rint(quota), 1, sizes).astype(np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if np.any(sizes <= 0):  # an empty stratum has nothing to give
        take = np.zeros(sizes.size, dtype=np.int64)
        if np.any(sizes > 0):
            take[sizes > 0] = sqrt_allocation(sizes[sizes > 0], total)
        return take
    root = np.sqrt(sizes)
    total = int(min(max(int(total), sizes.size), int(sizes.sum())))
    # sum_h clip(lam * sqrt(N_h), 1, N_h) is piecewise linear and increasing in lam, with
    # kinks at lam = 1/sqrt(N_h) and sqrt(N_h): find the segment where it reaches total;
    # inside it the held strata are fixed, so the others' quotas follow in closed form.
    kinks = np.unique(np.concatenate([1.0 / root, sizes / root]))
    reached = np.clip(np.outer(kinks, root), 1, sizes).sum(axis=1)
    k = int(np.searchsorted(reached, total))
    lam = 0.5 * ((kinks[k - 1] if k > 0 else 0.0) + kinks[min(k, kinks.size - 1)])
    low, high = lam * root < 1, lam * root > sizes
    free = ~(low | high)
    quota = np.where(low, 1.0, sizes.astype(float))
    if free.any():
        rest = total - int(low.sum()) - int(sizes[high].sum())
        # the unheld case is total * sqrt(N_h) / sum sqrt(N_h), as the harness always had
        quota[free] = rest * root[free] / root[free].sum()
    # a free quota sits in [1, N_h]; the clip only removes rounding noise at the bounds
    quota = np.clip(quota, 1, sizes)
    take = np.floor(quota).astype(np.int64)
    left = total - int(take.sum())
    if left > 0:
        order = np.argsort(-(quota - take), kind="stable")
        take[order[:left]] += 1
    return take


def _allocate(
    stratum_sizes: np.ndarray,
    stratum_labels: Sequence,
    fraction: float | Mapping,
    design: str,
) -> np.ndarray:
    """Number of units to draw in each stratum.

    With several strata a scalar ``fraction`` is allocated proportionally to
    the square root of the stratum sizes (:func:`sqrt_allocation`: total
    ``round(fraction * N)`` exactly, at least one unit per stratum), which
    over-samples small strata as regional surveys do and gives weights that
    differ by stratum; with one stratum (srs, unstratified household design) it
    is ``round(fraction * N)``. A mapping gives each stratum its own fraction.
    """
    sizes = stratum_sizes.astype(float)
    if isinstance(fraction, Mapping):
        unknown = [k for k in fraction if k not in set(stratum_labels)]
        absent = [s for s in stratum_labels if s not in fraction]
        if unknown or absent:
            raise InputError(
                f"fraction mapping does not match the strata (missing {absent}, unknown "
                f"{unknown}); give one fraction per stratum in {list(stratum_labels)}."
            )
        f = np.array([fraction[s] for s in stratum_labels], dtype=float)
        if not np.all((f > 0) & (f <= 1)):
            raise InputError(
                f"every stratum fraction must be in (0, 1], got {dict(fraction)}; "
                "pass fractions such as 0.05."
            )
        take = np.rint(f * sizes)
    else:
        if sizes.size > 1:
            # sums to round(fraction * N) exactly (largest remainders, held strata's
            # surplus handed on): see sqrt_allocation
            return sqrt_allocation(stratum_sizes, round(float(fraction) * sizes.sum()))
        else:
            take = np.rint(float(fraction) * sizes)
    # Each stratum contributes at least one unit and at most all of its units.
    return np.clip(take, 1, sizes).astype(np.int64)


def _stratified_srs(
    rng: np.random.Generator, stratum: np.ndarray, take: np.ndarray
) -> np.ndarray:
    """Boolean mask selecting ``take[h]`` units at random in each stratum ``h``.

    Vectorised: each unit gets a uniform key, units are ranked by (stratum,
    key) and the ``take[h]`` smallest keys of stratum ``h`` are selected --
    simple random sampling without replacement within every stratum.
    """
    order = np.lexsort((rng.random(stratum.size), stratum))
    sizes = np.bincount(stratum, minlength=take.size)
    start = np.cumsum(sizes) - sizes
    rank = np.empty(stratum.size, dtype=np.int64)
    rank[order] = np.arange(stratum.size) - np.repeat(start, sizes)
    return rank < take[stratum]


def _household_risk(household_codes: np.ndarray, risk: np.ndarray) -> np.ndarray:
    """Per-record ``1 - prod(1 - r_i)`` over the record's household (seed 001, 3.3)."""
    # Sum logs for the product; a member with r_i = 1 makes the household certain.
    certain = np.bincount(household_codes, weights=(risk >= 1.0).astype(float))
    log_safe = np.bincount(household_codes, weights=np.log1p(-np.where(risk < 1.0, risk, 0.0)))
    per_household = np.where(certain > 0, 1.0, -np.expm1(log_safe))
    return per_household[household_codes]


def complete_codes(frame: pd.DataFrame, column: str, role: str,
                   sort: bool = True) -> tuple[np.ndarray, pd.Index]:
    """Integer codes and labels of a household or strata column that has no missing values.

    ``pd.factorize`` codes a missing value -1: as a household it would index the last
    household (a person glued onto another household), as a stratum it breaks
    ``np.bincount``; so missing values are refused, naming the column and the fix.
    ``role`` is ``"household"`` or ``"strata"``. Shared by :func:`draw_sample` and
    :func:`sdcbayes.validation.run_design`.
    """
    codes, labels = pd.factorize(frame[column], sort=sort)
    n_missing = int((codes < 0).sum())
    if n_missing:
        if role == "household":
            fix = (f"{n_missing} missing ids; give every person a household id or drop "
                   "those rows")
        else:
            fix = f"{n_missing} missing values; fill them or choose another strata column"
        raise InputError(f"{role} column {column!r} has {fix}.")
    return codes.astype(np.int64), labels


def draw_sample(
    population: pd.DataFrame,
    keys: Sequence[str],
    fraction: float | Mapping = 0.05,
    design: str = "srs",
    strata: str | None = None,
    seed: int | np.random.Generator = 0,
    household: str = "household_id",
    weight: str = "weight",
) -> SampleWithTruth:
    r"""Draw a sample from a known population and compute its true risk.

    Designs (all without replacement; the weight is the inverse inclusion
    probability):

    ``"srs"``
        Simple random sample of ``n = round(fraction * N)`` persons; every
        weight is ``N / n`` and the weights sum to N.
    ``"stratified"``
        Stratified simple random sampling of persons within ``strata``
        (default ``"region"``). A scalar ``fraction`` is allocated with
        :math:`n_h \propto \sqrt{N_h}` (small strata over-sampled), a mapping
        gives one fraction per stratum; weight ``N_h / n_h``, so the weights
        of stratum h sum to N_h.
    ``"household"``
        Cluster sample of whole households: ``round(fraction * H)``
        households drawn at random, every member taken; with ``strata`` the
        households are allocated to strata as above (:math:`m_h \propto
        \sqrt{H_h}`); weight ``H_h / m_h``. Household risk is then part of
        the truth.

    Truth: F_k of each sample record is the population count of its key
    combination, obtained by a vectorised join of joint key codes onto the
    population counts (no loop over records or cells).

    Parameters
    ----------
    population : pandas.DataFrame
        The population, e.g. from :func:`simulate_population`.
    keys : sequence of str
        Key variables the truth refers to.
    fraction : float or mapping, default 0.05
        Sampling fraction in (0, 1], or ``{stratum: fraction}``.
    design : {"srs", "stratified", "household"}, default "srs"
        Sampling design.
    strata : str, optional
        Stratum column; default ``"region"`` for ``design="stratified"``.
        Optional for ``"household"`` (households must not span strata);
        not allowed for ``"srs"``.
    seed : int or numpy.random.Generator, default 0
        Seed of the selection.
    household : str, default "household_id"
        Household id column of the population (used by the household design).
    weight : str, default "weight"
        Name of the weight column added to the sample.

    Returns
    -------
    SampleWithTruth
        The sample and its truth.

    Raises
    ------
    InputError
        Unknown design or columns, a fraction outside (0, 1], a stratum
        mapping that does not match the strata, households spanning strata,
        missing household ids, an empty population.
    """
    if design not in DESIGNS:
        raise InputError(f"design must be one of {list(DESIGNS)}, got {design!r}.")
    if isinstance(keys, str):
        keys = [keys]
    keys = tuple(keys)
    if not keys:
        raise InputError("keys is empty; pass at least one key column, e.g. keys=['region'].")
    _check_columns(population, keys, "keys")
    if weight in population.columns:
        raise InputError(
            f"the population already has a column {weight!r}; pass weight='another_name'."
        )
    if not isinstance(fraction, Mapping):
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.number)):
            raise InputError(f"fraction must be a number in (0, 1], got {fraction!r}.")
        if not 0 < float(fraction) <= 1:
            raise InputError(f"fraction must be in (0, 1], got {fraction}; pass e.g. 0.05.")
    if design == "srs" and strata is not None:
        raise InputError("design='srs' takes no strata; use design='stratified' for strata.")
    if design == "stratified" and strata is None:
        strata = "region"
    if strata is not None:
        _check_columns(population, [strata], "strata")
    if design == "household":
        _check_columns(population, [household], "household")
    if isinstance(fraction, Mapping) and strata is None:
        raise InputError(
            "a fraction per stratum needs a strata column; pass strata='region' or a scalar."
        )

    N = len(population)
    if N == 0:
        raise InputError("the population has no rows; pass a population with at least one row.")
    if design == "household":
        # unsorted codes: the order households are drawn in (the sample stream) is kept
        hh_codes, _ = complete_codes(population, household, "household", sort=False)
    rng = np.random.default_rng(seed)
    if strata is None:
        stratum_codes = np.zeros(N, dtype=np.int64)
        stratum_labels: list = [None]
    else:
        stratum_codes, labels = complete_codes(population, strata, "strata")
        stratum_labels = list(labels)

    if design == "household":
        n_hh = int(hh_codes.max()) + 1
        hh_stratum = np.zeros(n_hh, dtype=np.int64)
        hh_stratum[hh_codes] = stratum_codes
        if strata is not None and np.any(hh_stratum[hh_codes] != stratum_codes):
            raise InputError(
                f"households span several strata of {strata!r}; "
                "stratify by a household-level variable such as region."
            )
        units = np.bincount(hh_stratum, minlength=len(stratum_labels))
        take = _allocate(units, stratum_labels, fraction, design)
        chosen_hh = _stratified_srs(rng, hh_stratum, take)
        selected = chosen_hh[hh_codes]
        unit_weight = (units / take)[stratum_codes]
    else:
        units = np.bincount(stratum_codes, minlength=len(stratum_labels))
        take = _allocate(units, stratum_labels, fraction, design)
        selected = _stratified_srs(rng, stratum_codes, take)
        unit_weight = (units / take)[stratum_codes]

    index = np.flatnonzero(selected)
    sample = population.iloc[index].reset_index(drop=True)
    sample[weight] = unit_weight[index].astype(float)

    truth = _truth(population, sample, index, keys, weight, design, household)
    return SampleWithTruth(
        sample=sample,
        keys=keys,
        weight=weight,
        household=household if design == "household" else None,
        strata=strata,
        design=design,
        truth=truth,
    )


def _truth(
    population: pd.DataFrame,
    sample: pd.DataFrame,
    index: np.ndarray,
    keys: tuple[str, ...],
    weight: str,
    design: str,
    household: str,
) -> Truth:
    """F_k, 1/F_k, tau1, tau2 of the sample rows ``index`` of ``population``."""
    pop_codes = joint_codes(population, keys)
    pop_cells, pop_inverse, pop_counts = np.unique(
        pop_codes, return_inverse=True, return_counts=True
    )
    record_Fk = pop_counts[pop_inverse[index]].astype(np.int64)
    # Sample cells: the distinct population cells among the sampled rows.
    cell_of_pop, record_cell = np.unique(pop_inverse[index], return_inverse=True)
    record_cell = record_cell.astype(np.int64)
    fk = np.bincount(record_cell, minlength=cell_of_pop.size).astype(np.int64)
    Fk = pop_counts[cell_of_pop].astype(np.int64)
    Fk_hat = np.bincount(record_cell, weights=sample[weight].to_numpy(), minlength=fk.size)
    first = np.zeros(fk.size, dtype=np.int64)
    # Last write wins: reversed order leaves each cell's first record.
    first[record_cell[::-1]] = np.arange(record_cell.size)[::-1]
    cells = sample[list(keys)].iloc[first].reset_index(drop=True)
    cells["fk"] = fk
    cells["Fk"] = Fk
    cells["Fk_hat"] = Fk_hat

    record_risk = 1.0 / record_Fk
    unique = fk == 1
    hh_risk = None
    hh_er = None
    hh_households = None
    if design == "household":
        hh_codes, _ = pd.factorize(sample[household])
        hh_risk = _household_risk(hh_codes.astype(np.int64), record_risk)
        hh_er = float(hh_risk.sum())
        # each household once (its members share the risk): its first record's
        _, first = np.unique(hh_codes, return_index=True)
        hh_households = float(hh_risk[first].sum())
    return Truth(
        N=len(population),
        n=len(sample),
        record_cell=record_cell,
        record_fk=fk[record_cell],
        record_Fk=record_Fk,
        record_risk=record_risk,
        record_household_risk=hh_risk,
        cells=cells,
        tau1=int(np.count_nonzero(unique & (Fk == 1))),
        tau2=float(np.sum(1.0 / Fk[unique])),
        expected_reidentifications=float(record_risk.sum()),
        household_expected_reidentifications=hh_er,
        n_sample_uniques=int(np.count_nonzero(unique)),
        n_population_cells=int(pop_cells.size),
        n_population_uniques=int(np.count_nonzero(pop_counts == 1)),
        household_expected_reidentified_households=hh_households,
    )
