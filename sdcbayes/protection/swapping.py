"""Targeted record swapping of households across geographic units (sdcMicro's ``recordSwap``).

Targeted record swapping (TRS) is the method the EU recommended for the 2021
population censuses and that ONS and Destatis use for census tables: the
geography of risky households is exchanged with that of similar households
elsewhere, so a rare combination of characteristics can no longer be located,
while every non-geographic value and every household stays intact. The
algorithm follows sdcMicro's C++ ``recordSwap`` (Gussenbauer, vignette
"Targeted Record Swapping", sdcMicro 5.7; Templ, *Statistical Disclosure
Control for Microdata*, 2017, on swapping):

1. **Risk.** For each level l of the hierarchy (coarse to fine, e.g. region >
   district) the unit of a record is its combination of the hierarchy columns
   up to l. Record i's risk at level l is r_il = 1/c_il, c_il the number of
   records of its unit with its combination of the ``risk_variables``
   (vignette, "Sampling probability"). A household's risk is the largest of its
   members' (p_yl = max_i r_il); its sampling weight at level l is that risk.
2. **High-risk households** need c_il < k (``k_anonymity``) for some member, or,
   with a user ``risk``, a member's risk above ``risk_threshold``. Each is
   assigned the *coarsest* level at which it is at risk (sdcMicro's
   ``setLevels``) and must be swapped with a household outside its unit at
   that level; counts only shrink from coarse to fine, so it is at risk at
   every finer level too.
3. **Levels, coarsest first** (as sdcMicro). At each level but the finest,
   the high-risk households of that level that are not yet swapped get a
   donor. At the finest level each unit u has a quota
   d_u of households to select (below); its own high-risk households are
   selected first, then households of risk > 0 are drawn without
   replacement with probability proportional to their risk
   (Efraimidis-Spirakis keys w/E, E ~ Exp(1), as sdcMicro's ``randSample``)
   until ``max(0, d_u - already - high)`` of them have been swapped, where
   ``already`` counts the households of u selected at coarser levels.
   (sdcMicro draws that many at once, so a drawn household left without a
   donor leaves the unit short; here the next household in the draw order is
   tried.) A drawn household whose profile values already found no donor
   outside u at this level cannot find one either: it is passed over, neither
   selected nor reported, and stays free to serve as a donor. Selections a unit
   cannot make, having run out of households of risk > 0 with a donor, are
   counted in ``summary["unfilled_selections"]``.
4. **Quotas.** A swap moves two households (the selected one and its donor),
   so ``ceil(H * swap_rate / 2)`` selections are shared among the finest units
   in proportion to their numbers of households: each unit gets the floor of
   its share and the remaining selections go, one each, to units drawn without
   replacement with probability proportional to the fractional parts of their
   shares. (sdcMicro rounds the total up or down at random and gives the extras
   to units drawn uniformly; rounding up here guarantees that at least
   ``swap_rate * H`` households are swapped unless a high-risk household finds
   no donor or a unit runs out of households that can be swapped.)
5. **Donors.** At level l the candidates are ordered once, by keys w_l/E with
   fresh E ~ Exp(1) (risky households first, as sdcMicro's donor pool). A
   selected household takes the first candidate that is not yet swapped, lies
   in a *different* unit at level l and has the same values of the first
   similarity profile (e.g. household size); failing that, of the second
   profile, and so on. Both households exchange all hierarchy columns and the
   ``carry_along`` columns, for every member. A selected household without a
   donor is not swapped, is reported (``summary["no_donor_households"]``) and
   takes no further part: it is neither selected nor a donor later. (sdcMicro
   lets such a household serve as a donor later, where it could be swapped
   within its own unit at its risky level; here it is left alone and
   reported.) Within a level donors are only taken, never given back, so the
   search of each (profile, value, unit) resumes where its last one stopped
   and one that found no donor is not repeated: a level costs one pass over
   each queue per unit searching it, not one per household.

Within a level the selected households are served in a random order (sdcMicro:
the order of a hash set), so no unit gets the first pick of donors. Households
are coded in sorted order of their ids, so for a given seed the result does not
depend on the order of the rows (ids that cannot be sorted are coded in order of
first appearance, and then it does).

This module may import NumPy and pandas only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.protection.base import (
    ProtectionResult,
    check_columns,
    check_frame,
    codes_of,
    output_frame,
    pack_rows,
    seeded_rng,
    stamped,
)
from sdcbayes.provenance import json_safe

__all__ = ["SWAP_RISK_FREQUENCIES", "SWAP_RISK_METHOD", "SWAP_RISK_REFERENCE",
           "check_record_swap_input", "pre_swap_frame", "record_swap", "swapped_match_factor",
           "swapped_values"]

#: How ``protect`` names the risk after a swap of a key (summary.json ``risk.after``).
SWAP_RISK_METHOD = "swapped records non-matching, Shlomo, Tudor & Groom 2010"
#: The paper counting the risk after swapping on the records the swap left unperturbed.
SWAP_RISK_REFERENCE = ("Shlomo, Tudor & Groom (2010), Data swapping for protecting census "
                       "tables, Privacy in Statistical Databases, LNCS 6344, pp. 41-51")
#: What the records' closed-form risks after a swap of a key are counted on
#: (summary.json ``risk.after.misclassification.swap.frequencies``, :func:`pre_swap_frame`).
SWAP_RISK_FREQUENCIES = "pre-swap values of the swapped keys"


# --------------------------------------------------------------------------- input checks


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _profiles(frame: pd.DataFrame, similar: Any) -> list[list[str]]:
    """``similar`` as a list of similarity profiles (each a list of column names).

    A column name or a flat list of names is one profile; a list whose entries are
    lists or tuples is several profiles, tried in turn (sdcMicro's ``similar`` list).
    """
    if isinstance(similar, str):
        raw = [[similar]]
    elif isinstance(similar, Iterable):
        items = list(similar)
        if items and all(isinstance(p, (list, tuple)) for p in items):
            raw = [list(p) for p in items]
        elif any(isinstance(p, (list, tuple)) for p in items):
            raise InputError(
                "similar mixes column names and lists of names; pass one profile (a list of "
                "column names) or several (a list of such lists, tried in turn)"
            )
        else:
            raw = [items]
    else:
        raw = [[similar]]
    if not raw or not raw[0]:
        raise InputError(
            "similar is empty; name the household-level columns a donor must share, e.g. "
            "similar=['household_size']"
        )
    return [
        check_columns(frame, p, "similar" if len(raw) == 1 else f"similar profile {i + 1}")
        for i, p in enumerate(raw)
    ]


def _risk_matrix(frame: pd.DataFrame, risk: Any, n_levels: int) -> np.ndarray:
    """User risks as an (n_records, n_levels) float array: one column or one per level."""
    if isinstance(risk, pd.Series) and not risk.index.equals(frame.index):
        if (
            not (risk.index.is_unique and frame.index.is_unique)
            or len(risk) != len(frame)
            or risk.index.get_indexer(frame.index).min(initial=0) < 0
        ):
            raise InputError(
                "risk is a Series whose index is not the frame's; pass one value per record, "
                "indexed like the frame or as an array in the frame's row order"
            )
        risk = risk.reindex(frame.index)
    try:
        arr = np.asarray(risk, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("risk must be numbers, one per record (or one row per record and "
                         "one column per hierarchy level)") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != len(frame) or arr.shape[1] not in (1, n_levels):
        raise InputError(
            f"risk has shape {np.shape(risk)} but the frame has {len(frame)} records and the "
            f"hierarchy {n_levels} level(s); pass one risk per record (shape ({len(frame)},)) "
            f"or one per record and level (shape ({len(frame)}, {n_levels})), in row order"
        )
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise InputError(
            "risk has missing, infinite or negative values; give every record a risk >= 0 "
            "(0 for records that must not be selected)"
        )
    return np.repeat(arr, n_levels, axis=1) if arr.shape[1] == 1 else arr


def _household_level(frame: pd.DataFrame, hh: np.ndarray, columns: list[str],
                     what: str) -> None:
    """Refuse a column that takes more than one value within some household."""
    for col in columns:
        codes, _ = codes_of(frame[col])  # missing is a value of its own (-1)
        per = pd.Series(codes).groupby(hh).nunique()
        bad = int((per > 1).sum())
        if bad:
            example = int(np.flatnonzero(per.to_numpy() > 1)[0])
            raise InputError(
                f"{what} column {col!r} differs between members of {bad} household(s) (the "
                f"first at row {int(np.flatnonzero(hh == example)[0])}); swapping moves whole "
                "households, so it must hold one value per household: fix the data or use a "
                "household-level column"
            )


def _risk_digest(risk: Any) -> Any:
    """The per-record risks as the stamp holds them: their number and largest value."""
    if risk is None:
        return None
    r = np.asarray(risk, dtype=np.float64).reshape(-1)
    return {"n": int(r.size), "max": float(r.max()) if r.size else None}


def _ranked(w: np.ndarray, pool: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``pool`` ordered by keys w/E, E ~ Exp(1), largest first (ties at random).

    Taking the first m is weighted sampling without replacement with
    probabilities proportional to w (Efraimidis and Spirakis 2006, "Weighted
    random sampling with a reservoir"), as in sdcMicro's ``randSample``; a
    weight of 0 comes last.
    """
    keys = w[pool] / rng.exponential(1.0, pool.size)
    tie = rng.random(pool.size)
    return pool[np.lexsort((tie, -keys))]


class _Swaps:
    """The pairs formed so far and the donor queues of the current level."""

    def __init__(self, n_hh: int, n_units: int, finest: np.ndarray,
                 profile_codes: list[np.ndarray], rng: np.random.Generator) -> None:
        self.used = np.zeros(n_hh, dtype=bool)
        self.no_donor = np.zeros(n_hh, dtype=bool)
        self.partner = np.full(n_hh, -1, dtype=np.int64)
        self.level = np.full(n_hh, -1, dtype=np.int64)
        self.profile = np.full(n_hh, -1, dtype=np.int64)
        self.selected = np.zeros(n_hh, dtype=bool)
        self.selected_in_unit = np.zeros(n_units, dtype=np.int64)
        self.pairs: list[tuple[int, int]] = []
        self.finest, self.codes, self.rng = finest, profile_codes, rng

    def free(self) -> np.ndarray:
        """Households that may still be selected or serve as donors."""
        return ~self.used & ~self.no_donor

    def start_level(self, lv: int, unit: np.ndarray, weight: np.ndarray) -> None:
        """Donor queues of level ``lv``: per profile and value, in key order w/E."""
        self.lv, self.unit = lv, unit
        order = _ranked(weight, np.arange(unit.size, dtype=np.int64), self.rng)
        self.queues = []
        for codes in self.codes:
            by_value = order[np.argsort(codes[order], kind="stable")]
            starts = np.searchsorted(codes[by_value], np.arange(int(codes.max()) + 2))
            self.queues.append((by_value, starts, starts[:-1].copy()))
        # (profile, value, unit) -> queue position where its last search stopped, and the
        # keys whose search found no donor. Within a level donors are only ever taken
        # (used, no_donor never revert) and units are fixed, so every candidate before that
        # position is still taken or in that unit, and a key that found none finds none
        # later: each key scans its queue once per level, not once per household
        self.resume: dict[tuple[int, int, int], int] = {}
        self.failed: set[tuple[int, int, int]] = set()

    def donor_for(self, h: int) -> tuple[int, int, bool]:
        """The first free candidate outside h's unit, profile by profile.

        Returns (donor, profile index, False), or (-1, -1, known) without one; known:
        every profile's search had already failed earlier at this level.
        """
        used, no_donor, unit = self.used, self.no_donor, self.unit
        u = int(unit[h])
        known = True
        for p, (by_value, starts, head) in enumerate(self.queues):
            v = int(self.codes[p][h])
            key = (p, v, u)
            if key in self.failed:
                continue
            known = False
            i, end = head[v], starts[v + 1]
            # taken and reported households at the head are gone for good: skip them once
            while i < end and (used[by_value[i]] or no_donor[by_value[i]]):
                i += 1
            head[v] = i
            for j in range(max(i, self.resume.get(key, i)), end):
                d = by_value[j]
                if not used[d] and not no_donor[d] and unit[d] != u:
                    self.resume[key] = j  # d is taken now: the next search starts past it
                    return int(d), p, False
            self.failed.add(key)
        return -1, -1, known

    def swap_all(self, swappers: Iterable[int], limit: int | None = None,
                 pass_known: bool = False) -> int:
        """Find a donor for each household in turn; record the pair or the failure.

        With ``limit``, stop after that many pairs (the households after are not tried).
        With ``pass_known`` (the rate's draw), a household whose search already failed
        for its profile values and unit at this level is passed over: not selected,
        not reported, still free to serve as a donor. Returns the pairs formed.
        """
        formed = 0
        for h in swappers:
            if limit is not None and formed >= limit:
                break
            if self.used[h] or self.no_donor[h]:  # taken as a donor meanwhile
                continue
            d, p, known = self.donor_for(int(h))
            if d < 0:
                if not (pass_known and known):
                    self.no_donor[h] = True
                continue
            self.used[h] = self.used[d] = True
            self.partner[h], self.partner[d] = d, h
            self.level[h] = self.level[d] = self.lv
            self.profile[h] = self.profile[d] = p
            self.selected[h] = True
            self.selected_in_unit[self.finest[h]] += 1
            self.pairs.append((int(h), d))
            formed += 1
        return formed


def _checked_input(frame: Any, household: Any, hierarchy: Any, similar: Any,
                   risk_variables: Any, swap_rate: Any, k_anonymity: Any, risk: Any,
                   risk_threshold: Any, carry_along: Any) -> tuple:
    """Every check of :func:`record_swap` (its Raises), before any work.

    Returns the frame, the hierarchy, the similarity profiles, the carry-along and
    risk-variable columns, the user risks (or None), the household code of each record
    and the household ids.
    """
    frame = check_frame(frame)
    if not isinstance(household, str) or household not in frame.columns:
        available = ", ".join(map(str, frame.columns[:20]))
        raise InputError(
            f"household {household!r} not found in the frame; name the household id "
            f"column, one of: {available}"
        )
    hier = check_columns(frame, hierarchy, "hierarchy")
    profiles = _profiles(frame, similar)
    sim_cols = list(dict.fromkeys(c for p in profiles for c in p))
    carry = [] if carry_along is None or (
        not isinstance(carry_along, str) and len(list(carry_along)) == 0
    ) else check_columns(frame, carry_along, "carry_along")
    if risk is None and risk_variables is None:
        raise InputError(
            "record_swap needs risk_variables (the person-level keys counted within each "
            "geographic unit) or a per-record risk; pass one of them"
        )
    risk_vars = [] if risk_variables is None else check_columns(
        frame, risk_variables, "risk_variables")
    for name, cols in (("similar", sim_cols), ("risk_variables", risk_vars),
                       ("carry_along", carry)):
        both = [c for c in hier if c in cols]
        if both:
            raise InputError(
                f"{both} is in both hierarchy and {name}; a donor must lie in another unit, "
                f"so the geography cannot also be {'matched' if name == 'similar' else 'used'}"
                f" there: remove it from {name}"
            )
        if household in cols or household in hier:
            raise InputError(
                f"the household column {household!r} is also in "
                f"{'hierarchy' if household in hier else name}; remove it from there"
            )
    if not _is_number(swap_rate) or not 0.0 <= float(swap_rate) <= 1.0:
        raise InputError(
            f"swap_rate={swap_rate!r} must be a number in [0, 1] (the share of households "
            "to swap), e.g. 0.05"
        )
    if (
        isinstance(k_anonymity, (bool, np.bool_))
        or not isinstance(k_anonymity, (int, np.integer))
        or k_anonymity < 1
    ):
        raise InputError(
            f"k_anonymity={k_anonymity!r} must be an integer >= 1 (e.g. 3); 1 marks no "
            "household as high-risk"
        )
    if not _is_number(risk_threshold) or not math.isfinite(float(risk_threshold)):
        raise InputError(f"risk_threshold={risk_threshold!r} must be a finite number")
    n_levels = len(hier)
    user_risk = None if risk is None else _risk_matrix(frame, risk, n_levels)
    ids = frame[household]
    if ids.isna().any():
        raise InputError(
            f"household column {household!r} has {int(ids.isna().sum())} missing id(s); give "
            "every person a household id (a person living alone gets an id of their own)"
        )
    for col in hier:
        n_missing = int(frame[col].isna().sum())
        if n_missing:
            raise InputError(
                f"hierarchy column {col!r} has {n_missing} missing value(s); fill them (e.g. "
                "with a level 'unknown') before swapping"
            )
    if len(frame) == 0:
        raise InputError(
            "the frame has no records, so there is no household to swap; pass the microdata "
            "with at least two households")
    try:  # households coded in sorted id order: the result does not depend on row order
        hh, hh_ids = pd.factorize(ids, sort=True)
    except TypeError:  # ids that do not sort (mixed types): order of first appearance
        hh, hh_ids = pd.factorize(ids, sort=False)
    hh = np.asarray(hh, dtype=np.int64)
    _household_level(frame, hh, hier, "hierarchy")
    _household_level(frame, hh, sim_cols, "similar")
    _household_level(frame, hh, carry, "carry_along")
    return frame, hier, profiles, carry, risk_vars, user_risk, hh, hh_ids


def check_record_swap_input(
    frame: pd.DataFrame,
    *,
    household: str,
    hierarchy: Sequence[str] | str,
    similar: Sequence[str] | Sequence[Sequence[str]] | str,
    risk_variables: Sequence[str] | str | None = None,
    swap_rate: float = 0.05,
    k_anonymity: int = 3,
    risk: Any = None,
    risk_threshold: float = 0.0,
    carry_along: Sequence[str] | str = (),
) -> dict[str, Any]:
    """Run every input check of :func:`record_swap` without swapping (no seed drawn).

    For callers that must refuse a bad swap before other work (``sdcbayes protect``
    checks its ``swap`` step before any step runs). Cost: one factorisation of the
    household ids and one group count per household-level column.

    Parameters
    ----------
    frame : pandas.DataFrame
        The file to be swapped.
    household, hierarchy, similar, risk_variables : as in :func:`record_swap`
        The columns, as :func:`record_swap` takes them.
    swap_rate, k_anonymity, risk, risk_threshold, carry_along : as in :func:`record_swap`
        The settings, checked as :func:`record_swap` checks them.

    Returns
    -------
    dict
        The columns as :func:`record_swap` reads them: ``hierarchy``, ``similar`` (the
        list of profiles), ``risk_variables`` and ``carry_along`` (lists of names).

    Raises
    ------
    InputError
        As :func:`record_swap` (its Raises), with the same messages.
    """
    _, hier, profiles, carry, risk_vars, _, _, _ = _checked_input(
        frame, household, hierarchy, similar, risk_variables, swap_rate, k_anonymity, risk,
        risk_threshold, carry_along)
    return {"hierarchy": hier, "similar": profiles, "risk_variables": risk_vars,
            "carry_along": carry}


# --------------------------------------------------------------------------- the method


@stamped(summarise={"risk": _risk_digest})
def record_swap(
    frame: pd.DataFrame,
    *,
    household: str,
    hierarchy: Sequence[str] | str,
    similar: Sequence[str] | Sequence[Sequence[str]] | str,
    risk_variables: Sequence[str] | str | None = None,
    swap_rate: float = 0.05,
    k_anonymity: int = 3,
    risk: Any = None,
    risk_threshold: float = 0.0,
    carry_along: Sequence[str] | str = (),
    seed: Any = None,
) -> ProtectionResult:
    """Targeted record swapping of whole households (sdcMicro's ``recordSwap``).

    See the module docstring for the algorithm: households that are rare on the
    ``risk_variables`` within their geographic unit (fewer than ``k_anonymity``
    records) are swapped across the coarsest level at which they are rare, and
    more households are selected at the finest level, with probability
    proportional to their risk, until about ``swap_rate`` of all households
    are swapped. Each selected household exchanges its geography with a donor
    household of the same ``similar`` profile in another unit.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per person. Not modified.
    household : str
        Column of household ids (no missing ids). Rows of a household need not
        be contiguous.
    hierarchy : str or sequence of str
        Geographic columns, coarse to fine (e.g. ``["region", "district"]``); a
        unit at level l is a combination of the first l + 1 columns. They must
        hold one value per household and no missing values.
    similar : str, sequence of str, or sequence of sequences of str
        Similarity profile(s): a donor must have the same values of these
        household-level columns (e.g. ``"household_size"``). A list of lists
        gives fall-back profiles, tried in turn when no donor matches the
        previous one. No hierarchy column may appear here.
    risk_variables : str or sequence of str, optional
        Person-level columns whose combination, counted within each unit, gives
        the risk (required unless ``risk`` is given). Missing values are a level
        of their own.
    swap_rate : float, default 0.05
        Share of households to swap, in [0, 1]; high-risk households count
        towards it and are swapped even beyond it.
    k_anonymity : int, default 3
        A record is at risk in a unit where fewer than ``k_anonymity`` records
        share its ``risk_variables``; 1 disables the rule (then only
        ``swap_rate`` selects households). Ignored when ``risk`` is given.
    risk : array_like, optional
        User risks instead of the counts: one per record (shape ``(n,)``, the
        same at every level, so a risky household is swapped across the
        coarsest level) or one per record and level (shape ``(n, L)``). A
        household's risk is its members' largest; it is high-risk where that
        exceeds ``risk_threshold`` and is selected at the finest level with
        probability proportional to it (0: never selected by the rate, though
        it may serve as a donor).
    risk_threshold : float, default 0.0
        With ``risk``: households whose risk exceeds it must be swapped.
    carry_along : str or sequence of str, default ()
        Further household-level columns swapped with the geography (finer
        geography not used for the risk, e.g. a grid cell), so that the
        released geography stays coherent.
    seed : int, Generator or None
        None draws a seed from the operating system; the seed used is recorded
        as ``summary["seed"]`` (passing it back repeats the run exactly).

    Returns
    -------
    ProtectionResult
        ``frame``: the hierarchy and ``carry_along`` columns of swapped
        households replaced by their partner's, for every member; all other
        columns unchanged. ``log``: one row per swapped household: ``household``
        (its id), ``partner`` (the id of the household it swapped with),
        ``role`` (``"selected"``, or ``"donor"`` for the partner found for a
        selected household), ``level`` (the hierarchy column across which the
        pair swapped: the two lie in different units at that level),
        ``high_risk``, ``profile`` (0-based index of the similarity profile
        matched) and ``<column>_original`` / ``<column>_released`` for each
        hierarchy column; the two rows of a pair are adjacent, the selected
        household first. ``summary``: ``households``, ``records``,
        ``high_risk_households`` (and ``high_risk_by_level``: level column ->
        households at risk first at that level), ``target_households``
        (2 x the selections of the quotas, at most ``households``),
        ``swapped_households``,
        ``swapped_pairs`` (and ``swapped_pairs_by_level``),
        ``swapped_records``, ``swap_rate_achieved`` (swapped / households),
        ``n_no_donor`` and ``no_donor_households`` (ids of selected households
        left unswapped for want of a donor: high-risk ones, and drawn ones whose
        search failed, each the first of its unit to fail on some profile value),
        ``n_no_donor_high_risk``, ``unfilled_selections`` (selections of the
        quotas no household could fill: its unit ran out of households of risk
        > 0 with a donor; each would have swapped two households), the
        parameters and ``seed``.

    Raises
    ------
    InputError
        Before any work: a frame without records; missing columns; missing
        household ids; an empty ``hierarchy`` or ``similar``; a hierarchy column in ``similar``,
        ``risk_variables`` or ``carry_along``, or the household column in any of
        them; hierarchy, similar or carry-along columns that differ within a
        household (naming the column and how many households) or hierarchy
        columns with missing values; ``swap_rate`` outside [0, 1];
        ``k_anonymity`` < 1; neither ``risk_variables`` nor ``risk``; a ``risk``
        whose length is not the number of records; an unusable seed.

    Notes
    -----
    Invariants: each swap exchanges the geography of two households of the same
    similarity profile, so the number of households (and of persons) per unit
    and per value of the matched profile, and every non-geographic value, are
    unchanged; the household-level table of geographies is permuted. For a given
    seed the result does not depend on the order of the rows: households are
    coded in sorted order of their ids (ids that do not sort: order of first
    appearance).
    """
    frame, hier, profiles, carry, risk_vars, user_risk, hh, hh_ids = _checked_input(
        frame, household, hierarchy, similar, risk_variables, swap_rate, k_anonymity, risk,
        risk_threshold, carry_along)
    n_levels = len(hier)
    rng, seed_used = seeded_rng(seed)

    n, n_hh = len(frame), len(hh_ids)
    # first row of each household: household-level values are read there
    rep = np.full(n_hh, n, dtype=np.int64)
    np.minimum.at(rep, hh, np.arange(n, dtype=np.int64))
    hh_size = np.bincount(hh, minlength=n_hh)

    # unit of each record at each level: the packed codes of hierarchy[:l + 1]
    geo_codes, geo_rad = [], []
    for col in hier:
        c, lev = codes_of(frame[col])
        geo_codes.append(c)
        geo_rad.append(max(len(lev), 1))
    unit_rec = []
    for lv in range(n_levels):
        packed = pack_rows(geo_codes[: lv + 1], geo_rad[: lv + 1])
        unit_rec.append(np.unique(packed, return_inverse=True)[1].reshape(-1))
    unit_hh = [u[rep] for u in unit_rec]

    # household risk per level (largest of the members') and the high-risk flags
    weight = np.zeros((n_hh, n_levels))
    high = np.zeros((n_hh, n_levels), dtype=bool)
    if user_risk is None:
        rv_codes, rv_rad = [], []
        for col in risk_vars:
            c, lev = codes_of(frame[col])
            rv_codes.append(c + 1)  # missing is a level of its own
            rv_rad.append(len(lev) + 1)
        for lv in range(n_levels):
            key = pack_rows(rv_codes + [unit_rec[lv]], rv_rad + [int(unit_rec[lv].max()) + 1])
            _, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
            count = cnt[inv.reshape(-1)]
            smallest = np.full(n_hh, np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(smallest, hh, count)
            weight[:, lv] = 1.0 / smallest
            high[:, lv] = smallest < k_anonymity
    else:
        for lv in range(n_levels):
            largest = np.zeros(n_hh)
            np.maximum.at(largest, hh, user_risk[:, lv])
            weight[:, lv] = largest
            high[:, lv] = largest > float(risk_threshold)
    # coarsest level at which the household is at risk; n_levels: not at risk
    level = np.where(high.any(axis=1), high.argmax(axis=1), n_levels)

    # selections per finest unit: ceil(H s / 2) shared by numbers of households
    finest = unit_hh[-1]
    n_units = int(finest.max()) + 1 if n_hh else 0
    unit_size = np.bincount(finest, minlength=n_units)
    # rounding guard: 100 * 0.1 / 2 must give 5 selections, not 6
    total = math.ceil(round(n_hh * float(swap_rate) / 2.0, 9))
    # integer arithmetic: the floors and the remainders are exact
    scaled = total * unit_size.astype(np.int64)
    quota = scaled // max(n_hh, 1)
    extra = total - int(quota.sum())
    if extra > 0:
        # each remainder is below n_hh and they sum to extra * n_hh: enough units
        remainder = (scaled % n_hh).astype(np.float64)
        quota[rng.choice(n_units, size=extra, replace=False,
                         p=remainder / remainder.sum())] += 1

    profile_codes = []
    for prof in profiles:
        cols, rad = [], []
        for col in prof:
            c, lev = codes_of(frame[col])
            cols.append(c[rep] + 1)
            rad.append(len(lev) + 1)
        profile_codes.append(np.unique(pack_rows(cols, rad), return_inverse=True)[1].reshape(-1))

    state = _Swaps(n_hh, n_units, finest, profile_codes, rng)
    unfilled = 0  # selections of the quotas left unmade: the unit ran out of candidates
    for lv in range(n_levels):
        last = lv == n_levels - 1
        if not last and not (level == lv).any():
            continue
        state.start_level(lv, unit_hh[lv], weight[:, lv])
        if not last:
            must = np.flatnonzero((level == lv) & state.free())
            state.swap_all(must[rng.permutation(must.size)])
            continue
        members = np.argsort(finest, kind="stable")
        bounds = np.searchsorted(finest[members], np.arange(n_units + 1))
        for u in rng.permutation(n_units):
            in_unit = members[bounds[u]:bounds[u + 1]]
            free = in_unit[~state.used[in_unit] & ~state.no_donor[in_unit]]
            must = free[level[free] == lv]
            must = must[rng.permutation(must.size)]
            rest = max(0, int(quota[u]) - int(state.selected_in_unit[u]) - must.size)
            state.swap_all(must)
            if rest:
                # drawn lazily: after a drawn household without a donor the next one is
                # tried, so the unit still reaches its quota while free households remain;
                # only households of risk > 0 are drawn (risk 0: never selected by the
                # rate; the counts' weights 1/c are all > 0), and one whose profile values
                # already found no donor outside the unit is passed over, not reported
                pool = free[(level[free] == n_levels) & (weight[free, lv] > 0)]
                formed = state.swap_all(_ranked(weight[:, lv], pool, rng), limit=rest,
                                        pass_known=True)
                unfilled += rest - formed
    partner, swap_level, profile_used = state.partner, state.level, state.profile
    selected, no_donor, pairs = state.selected, state.no_donor, state.pairs

    # ------------------------------------------------------------------ output
    moved = partner >= 0
    out = output_frame(frame)
    if moved.any():
        source_hh = np.where(moved, partner, np.arange(n_hh))
        src = rep[source_hh[hh]]
        for col in hier + carry:
            vals = frame[col].iloc[src]
            vals.index = frame.index
            out[col] = vals

    order_rows = [x for pair in pairs for x in pair]
    rows = np.asarray(order_rows, dtype=np.int64)
    id_values = np.asarray(hh_ids, dtype=object)
    log = pd.DataFrame({
        "household": id_values[rows] if rows.size else np.array([], dtype=object),
        "partner": id_values[partner[rows]] if rows.size else np.array([], dtype=object),
        "role": np.where(selected[rows], "selected", "donor").astype(object),
        "level": np.asarray(hier, dtype=object)[swap_level[rows]] if rows.size
        else np.array([], dtype=object),
        "high_risk": level[rows] < n_levels,
        "profile": profile_used[rows],
    })
    for col in hier:
        values = frame[col].to_numpy(dtype=object)
        log[f"{col}_original"] = values[rep[rows]]
        log[f"{col}_released"] = values[rep[partner[rows]]] if rows.size else values[:0]

    n_pairs = len(pairs)
    lost = np.flatnonzero(no_donor & ~moved)
    summary = {
        "method": "record_swap",
        "household": household,
        "hierarchy": hier,
        "similar": profiles,
        "risk_variables": risk_vars if user_risk is None else None,
        "carry_along": carry,
        "swap_rate": float(swap_rate),
        "k_anonymity": int(k_anonymity),
        "risk_threshold": float(risk_threshold),
        "user_risk": user_risk is not None,
        "households": int(n_hh),
        "records": int(n),
        "high_risk_households": int((level < n_levels).sum()),
        "high_risk_by_level": {c: int((level == i).sum()) for i, c in enumerate(hier)},
        # 2 per selection, at most every household (swap_rate 1 with H odd)
        "target_households": int(min(2 * total, n_hh)),
        "swapped_households": int(2 * n_pairs),
        "swapped_pairs": int(n_pairs),
        "swapped_pairs_by_level": {
            c: int(sum(1 for h, _ in pairs if swap_level[h] == i)) for i, c in enumerate(hier)
        },
        "swapped_records": int(hh_size[moved].sum()),
        "swap_rate_achieved": float(2 * n_pairs / n_hh) if n_hh else 0.0,
        "n_no_donor": int(lost.size),
        "n_no_donor_high_risk": int((level[lost] < n_levels).sum()),
        "unfilled_selections": int(unfilled),
        "no_donor_households": [json_safe(x) for x in id_values[lost]],
        "seed": seed_used,
    }
    return ProtectionResult(out, log, summary)


# --------------------------------------------------------------------------- risk after


def swapped_values(before: pd.DataFrame, after: pd.DataFrame,
                   columns: Sequence[str]) -> np.ndarray:
    """Where a swap changed each of ``columns``: boolean, one row per record.

    ``before`` and ``after`` are the file the swap step read and the one it returned
    (same rows, same order). A value swapped to an equal one (the partner household
    shows the same region, say) is unchanged; two missing values are equal.
    """
    from sdcbayes.protection.base import same_cells

    out = np.zeros((len(after), len(columns)), dtype=bool)
    for j, c in enumerate(columns):
        out[:, j] = ~same_cells(before[c], after[c])
    return out


def swapped_match_factor(changed: np.ndarray, shown: pd.DataFrame,
                         columns: Sequence[str]) -> np.ndarray:
    """Per record, 1 where the swap left it matchable on its true key values, else 0.

    Given the released file, record i is correctly matched by an intruder who knows the
    target's true keys x_i with probability 1[x̃_i = x_i] / F_{x̃_i} (F counted on the
    population's true values): a record showing another household's geography is not
    found by the one who knows its true keys, and one who matches it on its released keys
    links it to someone else. So the risk after a swap is counted on the records the swap
    left unperturbed (Shlomo, Tudor & Groom 2010, :data:`SWAP_RISK_REFERENCE`), and the
    closed-form risk r_i, which estimates 1 / F_{x̃_i}, is multiplied by this factor.
    ``protect`` counts that r_i on the pre-swap cells (:func:`pre_swap_frame`): F is the
    population's count of the true values, which the released counts misstate after a
    targeted swap (it moves records out of the rare cells, so the records left in place
    look rarer there than they are).

    Parameters
    ----------
    changed : numpy.ndarray
        :func:`swapped_values` of the swap step, one column per entry of ``columns``.
    shown : pandas.DataFrame
        The file the risk after reads: a value missing there is a wildcard (a later
        suppression's blank), which matches the true value, so a record whose changed
        values are all blanked counts 1 (findable through its true other keys;
        conservative, as it may still be matched to another record).
    columns : sequence of str
        The swapped columns that are keys (hierarchy and carry-along columns).

    Returns
    -------
    numpy.ndarray
        0.0 where a changed value is still shown, else 1.0.
    """
    visible = np.column_stack([~pd.isna(shown[c]).to_numpy() for c in columns]) \
        if len(columns) else np.zeros((len(shown), 0), dtype=bool)
    return np.where((np.asarray(changed, dtype=bool) & visible).any(axis=1), 0.0, 1.0)


def pre_swap_frame(shown: pd.DataFrame, changed: np.ndarray, before: pd.DataFrame,
                   columns: Sequence[str]) -> pd.DataFrame:
    """``shown`` with each value a swap changed, and still shown, put back to its own.

    The risk after a swap of a key is Σ_i 1[x̃_i = x_i] / F_{x̃_i}, F the population's
    count of the true values (:func:`swapped_match_factor`). For a record the swap left in
    place x̃_i = x_i, but its released cell count is not an estimate of F_{x_i}: its cell
    loses the swapped-out mates and gains records that are not its own, so the released
    count errs either way (a targeted swap mostly moves records out of rare cells, which
    makes those left look rarer than they are). The closed form on this frame, the one the data
    holder had before the swap, estimates 1 / F_{x_i} from the true cell memberships, as
    the correct-match probability (Shlomo, Tudor & Groom 2010, :data:`SWAP_RISK_REFERENCE`)
    needs. The swapped records still get factor 0.

    Parameters
    ----------
    shown : pandas.DataFrame
        The file the risk after reads (with ``--household`` the completed one).
    changed : numpy.ndarray
        :func:`swapped_values` of the swap step, one column per entry of ``columns``.
    before : pandas.DataFrame
        The values of ``columns`` the swap step read, for the records it changed: its
        index the records' row positions (0-based) in ``shown``.
    columns : sequence of str
        The swapped columns that are keys.

    Returns
    -------
    pandas.DataFrame
        A shallow copy of ``shown`` whose ``columns`` hold the pre-swap value wherever the
        swap changed it and ``shown`` does not show a blank (a later suppression's blank
        stays a blank); every other value as shown.
    """
    out = shown.copy(deep=False)
    rows = before.index.to_numpy()
    for j, c in enumerate(columns):
        col = shown[c]
        put = np.asarray(changed, dtype=bool)[rows, j] & ~pd.isna(col.iloc[rows]).to_numpy()
        if not put.any():
            continue
        col = col.copy()
        col.iloc[rows[put]] = before[c].to_numpy()[put]
        out[c] = col
    return out
