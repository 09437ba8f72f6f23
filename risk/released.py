r"""Posterior disclosure risk of a released file whose key values were suppressed or recoded.

The agency fits the latent-class model once, on the ORIGINAL sample (complete keys, or
missing key values read as a level, ``missing="category"``, or dropped, ``"drop"``;
:func:`sdcbayes.risk.posterior_assess.assess_posterior` with ``store_profiles=True``),
and scores the released file from the same draws. A released record with blanks on the
keys B and the (true) values :math:`x_O` on the others matches the pattern, or rectangle,
:math:`p = \{x_O\} \times \prod_{j \in B}(\text{every level of } j)`, so its population
count is

.. math::

    F_p = f_p + X_p,\qquad X_p = \sum_{c \in p} X_c,

with :math:`f_p = \sum_{c\in p} f_c` the number of ORIGINAL sample records whose keys
agree with :math:`x_O` (at least one: the record itself) and :math:`X_c` the non-sample
count of the full key cell c. Given a posterior draw the cells are independent (the
mixture's conditional independence), with the package's own laws
(:mod:`sdcbayes.models.latent_class`, "Overdispersion"; ``simulate_excess``):

* an observed cell (:math:`f_c > 0`): :math:`X_c \mid f_c \sim \mathrm{NegBin}(\kappa + f_c,
  \rho_c)`, :math:`\rho_c = b_c/(b_c + \lambda_c)`, :math:`b_c = \kappa + n\pi_c`;
* an unobserved cell: :math:`X_c \sim \mathrm{NegBin}(\kappa, \rho_c)` (the sample's
  zero is information too);
* :math:`\kappa = \infty`: :math:`X_c \sim \mathrm{Po}(\lambda_c)`, so
  :math:`X_p \sim \mathrm{Po}(\lambda_p)` and :math:`E(1/F_p) = {}_1F_1(1; f_p+1;
  -\lambda_p)/f_p` exactly (Skinner & Shlomo 2008, section 2).

and :math:`E(1/F_p \mid \theta) = \int_0^1 t^{f_p-1}\prod_{c\in p}\mathrm{PGF}_c(t)\,dt`
(:func:`sdcbayes.risk.posterior.inverse_moment_sum`; the step behind seed ``004_…``
eq. 6 for one negative binomial). The pattern's cells split three ways (the package's
derivation):

* explicit cells, exact in the product: the pattern's observed cells (the fit's stored
  ``pi`` and ``lam``) and its ``top_cells`` most probable unobserved cells
  (:meth:`~sdcbayes.models.latent_class.PatternSums.top_cells`);
* the remainder R, every other cell: its linear sums :math:`\Lambda_R = \sum\lambda_c`,
  :math:`\sum\lambda_c y_c` and :math:`Q_R = \sum\lambda_c^2` are exact (the pattern's
  sums from :class:`~sdcbayes.models.latent_class.PatternSums`, without listing the
  blank keys' levels, less the explicit cells'), and the factor
  :math:`\kappa/(\kappa + y_c)` is taken at the :math:`\lambda`-weighted mean
  :math:`\bar y`: mean :math:`M_R = \Lambda_R\kappa/(\kappa + \bar y)`, variance
  :math:`V_R = M_R + \kappa Q_R/(\kappa + \bar y)^2`;
* R as one negative binomial matched on :math:`M_R, V_R` (Poisson where
  :math:`V_R \approx M_R`), one more factor of the product.

On the demo after greedy 3-anonymity, scored from the package's default fit (4 chains x
500 draws): the records' ER 29.24 against a true 29.19, where the closed form gives 14.88
(``python benchmarks/released_risk.py``, which prints the other suppressions too; README,
"Risk after local suppression"). Matching the whole unobserved part to one negative
binomial, without the top cells, is more than 10% off on a pattern where one unobserved
cell is large, and 4 top cells bring it within 1% of the exact listing
(``tests/test_released.py``, ``test_top_cells_rescue_a_pattern_with_one_large_unobserved_cell``);
where the top cells cover the pattern the value is the exact listing's.

A key value recoded by a map of the record's own level (recode, band, top or bottom
coding; ``recodes=``) is a set of levels: on that key the rectangle is every level with
the record's released value, so :math:`A_j = \{l : g_j(l) = g_j(x_j)\}` takes the place
of :math:`\{x_j\}` (every level where blank), :math:`f_p` counts the original sample
records whose levels lie in the rectangle (those who match on the recoded, unsuppressed
values: a record blanked on a key still counts in its true level) and :math:`X_p` sums
over its cells, by the same three-way split. On the demo with age recoded to four groups
and greedy 3-anonymity the records' ER is about 17.9 against a true 18.33 (closed form
11.53; ``python benchmarks/released_risk.py --cases age-recoded-greedy3``).
A recode may send levels to missing (NaN; Python API only): an intruder who knows the
published map knows that such a NaN stands for one of the levels the map sends to NaN, so
where the key has no other hidden value the released NaN is that set of levels, a recoded
value like any other; where the key is also suppressed somewhere, a NaN may be either and
is read as a blank (every level).
Under ``missing="category"`` a value missing in the original (and so in the released
file) is the fit's level ``"<missing>"``, a value the release hides every level; under
``missing="drop"`` the records the fit left out have no risk.

A fit with structural zeros S (impossible key combinations, ``structural_zeros=``) is the
truncated mixture (Manrique-Vallier & Reiter 2014, eq. 2): per draw, with m the
untruncated mass of S (the fit's ``mass_structural_zero``), a cell outside S has
:math:`\pi_c = u_c/(1-m)` and :math:`\lambda_c` scaled alike, a cell in S has
:math:`\pi_c = \lambda_c = 0` and no population (X = 0). S is the fit's disjoint
rectangles :math:`R_r` (its stamped rules, read on the original's levels, their mass checked
against the stored one), so a pattern's sums over :math:`p \setminus S` are those over p
less, per r, those over the rectangle :math:`p \cap R_r`; evaluated as sums over the
disjoint rectangles :math:`p \setminus S` splits into, so that a pattern lying mostly in S
loses no digits to the subtraction (:class:`~sdcbayes.models.latent_class.PatternSums`,
Notes; exact, never negative), and its top cells leave out the cells in S (no other takes
their slot; the remainder holds the rest, its sums clipped at 0 as always). Every record's
own cell lies outside S (the fit refuses rules that forbid a cell of the sample). Checked
against the listing of every cell, a census's exact 1/F and the predictive oracle
(tests/test_released_structural_zeros.py).

A stratum that is a key (``Microdata(..., strata=s)`` with s among the keys, unequal
weights): each key cell's population lies in its own stratum, so, as
:func:`~sdcbayes.risk.posterior_assess.assess_from_posterior` extrapolates it
(``_stratum_key_rates``), cell c has excess :math:`\lambda_c = n\pi_c e_{c_s}`,
:math:`e_l = \max(\bar w_l, 1) - 1` with :math:`\bar w_l` the mean weight of stratum l
(scaled to sum to N), in place of the class-by-class excess over the weight classes. The
observed cells' :math:`\lambda_c` are that function's, so a file without blanks gives its
risks and predictive draws seed for seed; the pattern sums carry :math:`e_l` as a factor
of the stratum key's levels (:class:`~sdcbayes.models.latent_class.PatternSums`,
``key_rate``, Notes). A pattern that shows the stratum has its stratum's rate; one whose
stratum is blanked or recoded counts the population of every stratum it may lie in
(blanking the stratum mixes strata); a stratum taken in full (weights 1, :math:`e_l = 0`)
keeps risk exactly :math:`1/f_p` and :math:`F_p = f_p` in every predictive draw, also
recoded with other such strata. A level of the stratum key that no kept record has (a
declared category, or under ``missing="drop"`` a stratum whose records were all dropped)
has :math:`e_l = 0`: the weights put the whole population in the strata the sample has.
The weights' spread within a stratum is averaged, as in ``assess_from_posterior``
(``summary["notes"]`` says so). Checked against the listing of every cell, with and
without structural zeros (tests/test_released_stratum.py).

The patterns with blanks are scored in batches: those with the same free keys (one Gram
matrix of :class:`~sdcbayes.models.latent_class.PatternSums`) and the same number of
explicit cells together, as patterns x draws arrays, with the same sums in the same order as
one pattern at a time, so that the remainder's cancellation rounds alike (``_score_blanked``;
tests/test_released_batch.py checks it against the per-pattern reference of
tests/released_reference.py to 1e-12). Each pattern's top cells are ranked once, and a
batch's top cells' pi and lam serve both the quadrature and the predictive draw. The time
is then mostly the quadrature (about 113 of its 226 nodes per row where the coarser rule
is exact enough, :func:`~sdcbayes.risk.posterior.inverse_moment_sum_rows`) and the
predictive draw's keyed streams (``python benchmarks/released_risk.py --scale``).

A record's risk is the posterior mean of :math:`E(1/F_p \mid \theta)` (Rao-Blackwellised),
the file's ER their sum. The ER's interval is posterior predictive (``interval_kind``), as
:func:`~sdcbayes.risk.posterior_assess.assess_from_posterior`'s: per parameter draw one
population (``_Predictive``), the observed cells' X drawn as that function draws them (a
file without blanks gives its predictive ER draws, seed for seed) and each pattern's top
cells' X once, shared by every pattern that lists the cell; per pattern one draw of its
remainder's matched negative binomial; :math:`F_p = f_p + \sum` of its explicit cells'
X + the remainder, and the ER draw :math:`\sum_p m_p/F_p`. Exact given the parameters
where the top cells cover the patterns, or where :math:`\kappa = \infty`, but for the
remainders being independent across patterns: nested or crossing rectangles share
unobserved cells outside the explicit ones, and ignoring that understates SD(ER | θ) by
about 4% at :math:`\kappa = 1` on the demo (the predictive width by 1-3%; no bias of
the mean). The ``*_hyper_interval`` are over the parameters only (the conditional means);
on the demo after sequential 2-anonymity the true ER (44.90) lies above that interval
and inside the predictive one (README, "Risk after local suppression"). With households
the same populations give the household ER's predictive draws, per draw
:math:`\sum_h |h|(1 - \prod_{i \in h}(1 - 1/F_{p(i)}))` with each record's pattern's
drawn :math:`F_p` (``_Households``), the estimate staying the mean of sdcMicro's formula
on the records' risks given the parameters.

Imports NumPy, SciPy, pandas, xarray and the ``risk`` modules at import time;
:mod:`sdcbayes.models` and ArviZ inside :func:`assess_released`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from sdcbayes.exceptions import InputError
from sdcbayes.microdata import MISSING_LEVEL
from sdcbayes.provenance import seed_or_drawn, stamp
from sdcbayes.risk.assess import check_microdata, check_threshold
from sdcbayes.risk.measures import benchmark_rule
from sdcbayes.risk.posterior import (
    CHUNK_ELEMENTS,
    DEFAULT_QUANTILES,
    _check_quantiles,
    _RealisedHouseholds,
    inverse_moment_sum_rows,
    mean_over_draws,
)
from sdcbayes.risk.posterior_assess import (
    EXACT_NOTE,
    HYPER_INTERVAL_KIND,
    INTERVAL_KIND,
    PosteriorAssessment,
    _check_seed,
    _flat_draws,
    _functional_diagnostics,
    _interval,
    _latent_class_excess,
    _latent_class_inverse,
    _posterior_dataset,
    _stamps,
    _stratum_key_rates,
    _stratum_rates_note,
    check_posterior_fits,
    latent_class_pi,
    population_is_sample,
)

__all__ = ["DEFAULT_TOP_CELLS", "HYPER_INTERVAL_KIND", "INTERVAL_KIND", "assess_released"]

#: Unobserved cells of each pattern evaluated exactly (the others as one matched negative
#: binomial): 4 already rescue the tests' adversarial pattern (module docstring); the
#: cost grows with them and with the draws (benchmarks/released_risk.py prints the seconds).
DEFAULT_TOP_CELLS = 16

#: Draws evaluated at once (a batch of patterns holds about CHUNK_ELEMENTS / (draw_chunk x
#: explicit cells) patterns; the quadrature works in blocks of 256 rows whatever it is).
DEFAULT_DRAW_CHUNK = 64

# The summary's ``interval_kind`` (what the ER and household ER intervals are over: the
# words of ``protect``'s ``PREDICTIVE_KIND`` for the fit's own) and ``hyper_interval_kind``
# (what the ``*_hyper_interval`` are over) are INTERVAL_KIND and HYPER_INTERVAL_KIND,
# assess_from_posterior's ``household_interval_kind`` words, imported above.

#: The functional whose R-hat and ESS diagnose the released file's draws (its ER).
_DIAGNOSED = {"expected_reidentifications": "expected_reidentifications_conditional_mean"}

# remainder below this share of the pattern's excess: rounding, taken as zero
_REMAINDER_EPS = 1e-12


def _released_frame(released) -> pd.DataFrame:
    frame = released if isinstance(released, pd.DataFrame) else getattr(released, "frame", None)
    if not isinstance(frame, pd.DataFrame):
        raise InputError(
            f"released must be the released file as a pandas DataFrame (or an object with "
            f"a .frame, such as a protection result); got {type(released).__name__}")
    return frame


def _same_values(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: the same value, also when read back as text or as another number type.

    Values are compared as they are first (one vectorised comparison); only the
    mismatches are turned into text ("1" and 1 agree) and then into numbers (1 and 1.0
    agree), so a file whose values are unchanged costs no conversion.
    """
    try:
        same = np.asarray(a == b, dtype=bool)
        if same.shape != a.shape:  # NumPy's scalar answer for types it cannot compare
            raise TypeError
    except (TypeError, ValueError):
        same = np.asarray(a.astype(object) == b.astype(object), dtype=bool)
    bad = np.flatnonzero(~same)
    if bad.size:
        same[bad] = pd.Series(a[bad], dtype=object).astype(str).to_numpy() == \
            pd.Series(b[bad], dtype=object).astype(str).to_numpy()
        bad = np.flatnonzero(~same)
    if bad.size:
        # numbers read back as other types (1 vs 1.0) are the same value
        an = pd.to_numeric(pd.Series(a[bad]), errors="coerce").to_numpy(dtype=float)
        bn = pd.to_numeric(pd.Series(b[bad]), errors="coerce").to_numpy(dtype=float)
        same[bad[np.isfinite(an) & (an == bn)]] = True
    return same


def _record_codes(md, spec) -> np.ndarray:
    """(records, keys): each record's level code in the fit ``spec``, -1 where missing.

    The fit's own codes (``spec.key_codes`` of the record's cell, its levels
    ``spec.levels``: under ``missing="category"`` a missing value is the fit's level
    :data:`MISSING_LEVEL`); only the records the fit left out (``missing="drop"``) are
    coded here, by ``md.levels`` (the fit's levels less none: a level seen only in a
    dropped record is one too), for the released file's check.
    """
    rc = np.asarray(md.record_cell)
    J = spec.n_keys
    codes = np.full((rc.size, J), -1, np.int64)
    kept = rc >= 0
    codes[kept] = np.asarray(spec.key_codes, np.int64)[rc[kept], :J]
    out = np.flatnonzero(~kept)
    for j, k in enumerate(md.keys):
        if out.size:
            codes[out, j] = pd.Categorical(md.frame[k].iloc[out],
                                           categories=md.levels[k]).codes.astype(np.int64)
    return codes


def _short(values, n: int = 5) -> str:
    values = list(values)
    return ", ".join(repr(_plain(v)) for v in values[:n]) + (
        f", ... ({len(values)} in all)" if len(values) > n else "")


def _plain(v):
    """A level or released value as plain Python (JSON, messages): NaN -> None."""
    if v is None or (not isinstance(v, str) and np.ndim(v) == 0 and pd.isna(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v


def _recode_images(keys: list[str], levels: list[list], recodes,
                   missing_at: Sequence[int | None] | None = None) -> list[np.ndarray | None]:
    """Each recoded key's released value of every fit level (object array; NaN: missing).

    None for a key that ``recodes`` does not name (its values are released as they are).
    A mapping must give every level of the fit a released value (the fit's levels, not
    the file's: a declared category no record has belongs to its recoded value's
    rectangle too), matched by the level or, failing that, by its text ("1" names 1);
    names that match no level are ignored when every level has a value, and named as
    likely typos when one has none. A function is called on each level.
    ``missing_at[j]``: the position in ``levels[j]`` of the fit's level
    :data:`MISSING_LEVEL` (``missing="category"``, a key with a missing value; None:
    none), which is released as itself (a missing value stays missing through a
    recode), whatever the map says of it; the caller knows it from the fit, so a
    genuine level with that text is a level like any other.
    """
    if recodes is None:
        return [None] * len(keys)
    if not isinstance(recodes, Mapping):
        raise InputError(
            f"recodes must be a mapping key -> (mapping level -> released value, or a function "
            f"of the level); got {type(recodes).__name__}")
    unknown = [k for k in recodes if k not in keys]
    if unknown:
        raise InputError(f"recodes names {_short(unknown)}, which "
                         f"{'is' if len(unknown) == 1 else 'are'} no key; the keys are {keys}")
    out: list[np.ndarray | None] = []
    for j, k in enumerate(keys):
        if k not in recodes:
            out.append(None)
            continue
        how = recodes[k]
        lv = levels[j]
        at = None if missing_at is None else missing_at[j]
        real = lv if at is None else lv[:at] + lv[at + 1:]
        if isinstance(how, Mapping):
            by_text: dict[str, Any] = {}
            for name in how:
                by_text.setdefault(str(name), name)
            img, absent, used = [], [], set()
            for level in real:
                name = level if _has_key(how, level) else by_text.get(str(level), _NO_NAME)
                if name is _NO_NAME:
                    absent.append(level)
                    continue
                used.add(str(name))
                img.append(how[name])
            if absent:
                spare = [nm for nm in how if str(nm) not in used and str(nm) != MISSING_LEVEL]
                raise InputError(
                    f"recodes[{k!r}] gives no released value for {len(absent)} level(s) of the "
                    f"fit: {_short(absent)}; name every level (one kept as it is maps to "
                    "itself; the fit's levels are md.levels[key], declared categories with no "
                    "record included), or pass a function of the level"
                    + (f" (it names {_short(spare)}, which are no level: a typo?)" if spare
                       else ""))
        elif callable(how):
            try:
                img = [how(level) for level in real]
            except Exception as e:  # the user's function: say which key it failed on
                raise InputError(f"recodes[{k!r}] failed on a level of the fit: {e}") from e
        else:
            raise InputError(
                f"recodes[{k!r}] must be a mapping level -> released value or a function of "
                f"the level; got {type(how).__name__}")
        bad = [v for v in img if isinstance(v, list | tuple | set | dict | np.ndarray)
               or (not isinstance(v, str) and np.ndim(v) != 0)]
        if bad:
            raise InputError(f"recodes[{k!r}] must give one value per level (a scalar, or NaN "
                             f"for blank); got {_short(bad, 2)}")
        img = [np.nan if _plain(v) is None else v for v in img]
        if at is not None:
            img.insert(at, MISSING_LEVEL)
        out.append(np.array(img + [None], dtype=object)[:-1])  # no NumPy reshaping of tuples
    return out


_NO_NAME = object()


def _has_key(mapping: Mapping, level) -> bool:
    try:
        return level in mapping
    except TypeError:  # an unhashable level (not one of the fit's): no name
        return False


def _check_released(md, frame: pd.DataFrame, images: list | None = None,
                    codes: np.ndarray | None = None) -> np.ndarray:
    """The released file against the original; returns the hidden mask (records, keys).

    A hidden value is a key value the released file hides that the original has
    (suppressed, or recoded to missing: :func:`assess_released` tells them apart); a
    value missing in the original stays missing and is not hidden (under
    ``missing="category"`` it is the level :data:`MISSING_LEVEL`). A shown value must be
    the original's, or, for a key of ``images`` (:func:`_recode_images`), the released
    value of the original's level (``codes``: each record's level in the fit,
    :func:`_record_codes`; needed where ``images`` has a key); a value missing in the
    original may not be shown.
    """
    keys = list(md.keys)
    orig = md.frame
    if len(frame) != len(orig) or not frame.index.equals(orig.index):
        raise InputError(
            f"the released file must hold the original's records in the original's order, "
            f"with its index ({len(orig)} records); got {len(frame)} records"
            + ("" if len(frame) != len(orig) else " with another index or order")
            + ": keep the index of md.frame (e.g. frame = md.frame.copy() before "
            "suppressing, or released.set_index(md.frame.index) if only the labels were lost)")
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise InputError(f"the released file lacks the key column(s) {missing}")
    images = images or [None] * len(keys)
    rel_na = frame[keys].isna().to_numpy()
    orig_na = orig[keys].isna().to_numpy()
    filled = orig_na & ~rel_na
    if filled.any():
        i, j = np.argwhere(filled)[0]
        raise InputError(
            f"{int(filled.sum())} key value(s) missing in the original are shown in the "
            f"released file (e.g. record {frame.index[i]!r}: key {keys[j]!r} is missing in the "
            f"original but released as {_plain(frame[keys[j]].iloc[i])!r}): a filled-in value "
            "is not a protection the released-file risk scores; keep it missing")
    for j, k in enumerate(keys):
        shown = ~rel_na[:, j]
        b = frame[k].to_numpy()[shown]
        if images[j] is None:
            a = orig[k].to_numpy()[shown]
        else:
            a = images[j][codes[shown, j]]
        same = _same_values(a, b)
        if same.all():
            continue
        i = np.flatnonzero(shown)[np.flatnonzero(~same)[0]]
        nbad = int((~same).sum())
        if images[j] is not None:
            raise InputError(
                f"{nbad} released value(s) of key {k!r} are not the image of the original "
                f"value under recodes[{k!r}] (e.g. record {frame.index[i]!r}: "
                f"{_plain(orig[k].iloc[i])!r} maps to {_plain(a[np.flatnonzero(~same)[0]])!r}, "
                f"released {_plain(frame[k].iloc[i])!r}): the released-file risk takes key values "
                "kept, blanked or recoded by a map of the record's own value (recodes=); "
                "PRAM, noise and micro-aggregation are not supported: assess such a file with "
                "the closed form (assess_closed_form)")
        raise InputError(
            f"{nbad} released value(s) of key {k!r} differ from the original (e.g. record "
            f"{frame.index[i]!r}: {_plain(orig[k].iloc[i])!r} -> "
            f"{_plain(frame[k].iloc[i])!r}). The released-file risk takes key values kept, "
            "blanked (suppressed) or recoded by a map of the record's own value"
            + _recode_hint(k, orig[k].to_numpy()[shown], b,
                           list(getattr(md, "levels", {}).get(k, [])))
            + "; PRAM, noise or recoding that is no such map is not supported: assess such "
            "a file with the closed form (assess_closed_form)")
    return rel_na & ~orig_na


def _recode_hint(k: str, a: np.ndarray, b: np.ndarray, levels: list) -> str:
    """What the (original, released) pairs of a key look like: a recode to pass, or not.

    ``levels``: the key's levels in the original (``md.levels[k]``, without the fit's
    :data:`MISSING_LEVEL`), in the fit's order.
    """
    pairs: dict[str, tuple[Any, dict[str, Any]]] = {}
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        pairs.setdefault(str(x), (x, {}))[1].setdefault(str(y), y)
    split = next(((x, list(ys.values())) for x, ys in pairs.values() if len(ys) > 1), None)
    if split is not None:
        return (f"; level {_plain(split[0])!r} is released as {_short(split[1], 3)}: no "
                "recode (PRAM or noise?)")
    items = [(x, next(iter(ys.values()))) for x, ys in pairs.values()]
    rank = {str(v): i for i, v in enumerate(levels)}
    items.sort(key=lambda xy: rank.get(str(xy[0]), len(rank)))  # the fit's level order
    shown = "{" + ", ".join(f"{_plain(x)!r}: {_plain(y)!r}" for x, y in items[:4]) + (
        ", ...}" if len(items) > 4 else "}")
    unseen = [v for v in levels if str(v) not in pairs]
    return (f"; they look like a recode {shown}: pass recodes={{{k!r}: {{...}}}} (every "
            "level of the fit"
            + (f", also the {len(unseen)} no released record shows: {_short(unseen)}"
               if unseen else "") + ")")


def _check_posterior(md, posterior, post: xr.Dataset) -> tuple[dict[str, Any], list]:
    """Refusals that concern the posterior (before any work).

    Returns its settings stamp and its structural-zero rules (the model's stamp,
    ``data_summary["structural_zeros"]``, else the settings' ``structural_zero_rules``;
    an empty list for a fit without them).
    """
    st = _stamps(posterior)
    settings = st.get("settings") if isinstance(st.get("settings"), dict) else {}
    summary = st.get("data_summary") if isinstance(st.get("data_summary"), dict) else {}
    attrs = dict(getattr(posterior, "attrs", None) or {})
    if settings.get("cluster_correction") is not None or "cluster_correction" in attrs:
        raise InputError(
            "the posterior was fitted with a cluster correction of the sample uniques' rates, "
            "which the released-file risk does not support yet (the correction applies to "
            "observed full cells, not to patterns): fit without cluster_correction")
    rules = summary.get("structural_zeros")
    if rules is None:
        rules = settings.get("structural_zero_rules")
    rules = [] if rules is None else rules
    if not isinstance(rules, list) or not all(isinstance(r, Mapping) for r in rules):
        raise InputError(
            f"the posterior's structural-zero rules (its stamp data_summary['structural_zeros'])"
            f" must be a list of rules {{key: levels}}; got {_short([rules], 1)}: pass the "
            "posterior as the fit stamped it")
    msz = post.get("mass_structural_zero")
    if not rules and msz is not None and float(np.max(msz.values)) > 0:
        raise InputError(
            "the posterior has structural zeros (mass_structural_zero > 0) but no stamped "
            "rules, so the forbidden cells are unknown: pass the posterior as the fit stamped "
            "it (assess_posterior and LatentClassModel.sample stamp the rules in "
            "data_summary['structural_zeros'])")
    return settings, rules


def _structural_zeros(spec, rules: list):
    """The posterior's structural zeros on md_original's fit keys and levels, or None.

    :class:`~sdcbayes.models.latent_class.StructuralZeros` of the stamped ``rules`` on
    the keys (not a weight-class design variable, which no rule may name) and their fit
    levels (``spec``'s, those of :func:`_profiles`). Refused: rules that name another
    file's keys or levels, or that forbid a cell the sample has.
    """
    from sdcbayes.models.latent_class import StructuralZeros

    if not rules:
        return None
    J = spec.n_keys
    try:
        sz = StructuralZeros(rules, spec.keys[:J], spec.levels[:J])
    except InputError as e:
        raise InputError(
            f"the posterior's structural-zero rules do not fit md_original's keys and levels "
            f"({e}): the posterior was not fitted to this file; assess the file the model "
            "was fitted to") from e
    if not sz.n_rectangles:
        return None
    inside = sz.contains(np.asarray(spec.key_codes)[:, :J])
    if inside.any():
        raise InputError(
            f"the posterior's structural-zero rules forbid {int(inside.sum())} cell(s) that "
            "md_original's sample has: the posterior was not fitted to this file; assess "
            "the file the model was fitted to")
    return sz


def _check_zero_mass(ps, post: xr.Dataset) -> None:
    """The rules' mass of S per draw is the fit's stored ``mass_structural_zero``."""
    if ps.structural_zeros is None or "mass_structural_zero" not in post:
        return  # no stored mass to compare (a hand-built posterior): _levels_check decides
    stored = _flat_draws(post["mass_structural_zero"]).astype(float).reshape(-1)
    if stored.shape != ps.mass.shape or not np.allclose(ps.mass, stored, rtol=1e-8,
                                                        atol=1e-12):
        raise InputError(
            "the posterior's stamped structural-zero rules do not reproduce its "
            "mass_structural_zero (the untruncated mass of the forbidden cells, per draw): "
            "the rules or the draws come from another fit; assess with the posterior of the "
            "fit to md_original, as that fit stamped it")


def _profiles(post: xr.Dataset, spec) -> list[np.ndarray]:
    from sdcbayes.models.latent_class import _safe_names

    names = _safe_names(spec.keys)
    absent = [f"phi_{nm}" for nm in names if f"phi_{nm}" not in post]
    if absent or "w" not in post:
        raise InputError(
            "the posterior holds no class profiles (" + ", ".join(absent or ["w"]) + "), "
            "which the risk of key combinations the sample never had needs: fit with "
            "assess_posterior(md, store_profiles=True) (or LatentClassModel.sample("
            "store='all', store_profiles=True)), on the original file")
    phi = [_flat_draws(post[f"phi_{nm}"]).astype(float) for nm in names]
    H = post["w"].sizes.get("latent_class")
    for nm, p, L in zip(names, phi, spec.n_levels, strict=True):
        if p.shape[1:] != (H, int(L)):
            raise InputError(f"profile phi_{nm} has shape {p.shape[1:]} per draw, the model "
                             f"{(H, int(L))}: the posterior was not fitted to this file")
    return phi


def _levels_check(spec, ps, pi) -> None:
    """The profiles reproduce the stored pi on a few draws and cells (same fit).

    Through :meth:`PatternSums.cells` on the rectangle of every cell, which the patterns'
    explicit cells use: the check covers that product too.
    """
    S, C = pi.shape
    ds = np.unique(np.linspace(0, S - 1, min(S, 4)).round().astype(int))
    cs = np.unique(np.linspace(0, C - 1, min(C, 50)).round().astype(int))
    got = ps.cells(ps.rectangle([None] * spec.n_keys), spec.key_codes[cs], ds)[0]
    if not np.allclose(got, pi[ds][:, cs], rtol=1e-6, atol=1e-300):
        raise InputError(
            "the posterior's class profiles do not reproduce its cell probabilities pi "
            "(were they stored by another fit, or pi corrected afterwards?): fit again "
            "with store_profiles=True")


def assess_released(
    md_original,
    released,
    posterior,
    *,
    N: float | None = None,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    threshold: float | None = None,
    top_cells: int = DEFAULT_TOP_CELLS,
    draw_chunk: int = DEFAULT_DRAW_CHUNK,
    recodes: Mapping[str, Mapping | Callable] | None = None,
    random_seed: int | None = None,
) -> PosteriorAssessment:
    r"""Posterior risk of a released file with suppressed or recoded key values.

    Parameters
    ----------
    md_original : sdcbayes.Microdata
        The ORIGINAL file the latent-class model was fitted to. Its missing key values,
        if any, as the fit read them: ``missing="category"`` (a level ``"<missing>"`` of
        its own: a value missing in the original and in the released file is that level,
        a value the release hides matches every level, ``"<missing>"`` too) or
        ``missing="drop"`` (those records have no risk: NaN in ``records``, counted in no
        total, ``summary["n_dropped_records"]``); ``"wildcard"`` has no latent-class fit.
    released : pandas.DataFrame or object with ``.frame``
        The released file: the original's records in the original's order and index,
        each key value as in the original, missing (suppressed), or, for a key of
        ``recodes``, the released value of the original's level. A value missing in the
        original stays missing.
    posterior : arviz.InferenceData, xarray.DataTree or xarray.Dataset
        The latent-class fit on ``md_original`` with its class profiles:
        ``assess_posterior(md_original, store_profiles=True).idata``, or
        ``LatentClassModel.from_microdata(md_original).sample(store="all", N=...,
        store_profiles=True)``. A fit with structural zeros (``structural_zeros=``) is
        read with the rules it stamped (``data_summary["structural_zeros"]``): its
        truncated mixture, the forbidden cells counting nothing (module docstring).
    N : float, optional
        Population size (default as :func:`~sdcbayes.risk.posterior_assess.latent_class_pi`).
    quantiles : sequence of float
        Quantiles of the intervals, default the 90%.
    threshold : float, optional
        Also count records above this risk (posterior mean, and per draw).
    top_cells : int, default :data:`DEFAULT_TOP_CELLS`
        Unobserved cells per pattern evaluated exactly (0: the whole unobserved part as
        one matched negative binomial).
    draw_chunk : int, default :data:`DEFAULT_DRAW_CHUNK`
        Draws evaluated at once (bounds memory; the result does not depend on it).
    recodes : mapping, optional
        Keys whose values were recoded (recode, band, top or bottom coding: a function of
        the record's own value): key -> mapping level -> released value, or a function
        called on each level. The levels are the fit's (``md_original.levels[key]``:
        every declared category, also one no record has; the distinct values of another
        key), and a mapping must name each of them (one kept maps to itself). Keys not
        named are released as they are. A record's rectangle on a recoded key is every
        level with its released value (F counts the population over it); ``"<missing>"``
        stays itself. A released value NaN (a level recoded to missing) is, where the
        key has no other hidden value, the set of levels the map sends to NaN (who knows
        the published map knows that much): a recoded value, not a blank; where some
        record's value of the key is also suppressed, a NaN may be either, so every NaN
        of that key is a blank (every level), which understates the risk of the recoded
        ones. A numeric key's band covers only the input's distinct values (the fit's
        levels): values no record has are outside the fit's cells, though its N still
        extrapolates. ``sdcbayes protect --model latent-class`` passes its recipe's
        level steps' map.
    random_seed : int, optional
        Seed of the predictive draw (``numpy.random.default_rng``; the observed cells'
        draws are :func:`~sdcbayes.risk.posterior_assess.assess_from_posterior`'s with the
        same seed); without one a seed is drawn and stamped as ``predictive_seed`` in the
        provenance's settings, so that passing it back repeats the result.

    Returns
    -------
    PosteriorAssessment
        ``records`` indexed like the released file: ``record``, ``pattern`` (-1 for a
        record the fit dropped), ``blanks`` (key values the release hides that the
        original has, read as every level: suppressed, or recoded to missing on a key
        also suppressed; not a recoded value, also not one recoded to missing that reads
        as its map's levels (see ``recodes``), not a value missing in the original),
        ``f_p`` (original sample records matching the visible keys: their level, or
        any level a recoded value stands for), ``risk`` (posterior mean of
        :math:`E(1/F_p\mid\theta)`), ``risk_lo``, ``risk_hi`` (quantiles over the
        parameters), ``F_mean``. ``cells`` is one row per pattern
        (the released key values: a recoded key's released value, blank where hidden;
        ``records``, ``blanks``, ``recoded``: keys shown with a value of several levels,
        ``f_p``, risks). ``summary``:
        ``expected_reidentifications`` with ``_interval`` (posterior predictive;
        ``interval_kind``) and ``_hyper_interval`` (over the parameters;
        ``hyper_interval_kind``), ``expected_reidentifications_blanked_records`` (its part
        over records with a blank, a hidden value, whether recoded or not; both
        intervals), ``n_patterns``, ``n_blanked_patterns``, ``n_blanked_records``,
        ``n_blanks``, ``blanks_by_key`` (hidden values only), ``n_recoded_patterns`` and
        ``n_recoded_records`` (a recoded value of several levels and no blank: in the ER,
        not in its blanked part), ``recodes`` (per recoded key, level -> released value,
        also stamped in the provenance's settings), ``structural_zero_rules`` (the fit's
        rules, left out of every rectangle; also stamped), ``missing`` and
        ``n_dropped_records``
        (``md_original.missing``), ``extrapolation`` and ``notes`` (a stratum that is a
        key: as :func:`assess_from_posterior`'s), ``top_cells``, ``n_above_threshold`` (and
        ``_interval``, over the parameters as in :func:`assess_from_posterior`),
        ``n_above_benchmark_at_mean_risk``, ``diagnostics`` (R-hat, ESS of ER given the
        parameters, and ``problems``: what :func:`~sdcbayes.inference.diagnostics.
        check_diagnostics` finds in them, as for the fit itself; where the sample is the
        population, none and a ``note``). ``file_draws``: the per-draw ER given the parameters
        (``expected_reidentifications_conditional_mean``, and its blanked part) and its
        predictive draws (``expected_reidentifications``, ``_blanked``). Where
        ``md_original`` has a household column (``Microdata(..., household=...)``), as
        :func:`~sdcbayes.risk.posterior_assess.assess_from_posterior`'s: ``records``
        ``household_risk`` (per draw :math:`1 - \prod(1 - E(1/F_p\mid\theta))` over the
        household's kept members, averaged over the draws; NaN where dropped), ``summary``
        ``n_households``, ``household_expected_reidentifications`` (those summed over the
        records) with ``_interval`` posterior predictive as the ER's (per predictive draw
        the realised :math:`\sum_h |h|(1 - \prod_{i\in h}(1 - 1/F_{p(i)}))`, the records
        of a pattern sharing its drawn :math:`F_p`; ``household_interval_kind``) and
        ``_hyper_interval`` over the parameters only, and its ``file_draws``
        (``household_expected_reidentifications``, the predictive draws, and its
        ``_conditional_mean``, the per-draw formula given the parameters; ``_Households``),
        and alike ``household_expected_reidentified_households`` (the same household risks
        summed once per household). A file without blanks gives
        :func:`~sdcbayes.risk.posterior_assess.assess_from_posterior`'s household draws,
        seed for seed.

    Raises
    ------
    InputError
        Before any work: the released file's records differ in number, order or index
        from the original's; a shown key value is not the original's, or for a key of
        ``recodes`` not its level's released value (PRAM, noise, micro-aggregation: not
        supported; without ``recodes`` the message suggests the map the pairs show); a
        value missing in the original is shown; ``recodes`` names a column that is no
        key, misses a level of the fit or gives a non-scalar value; the original has
        missing key values and ``missing="wildcard"``; the posterior
        lacks the class profiles, is another model's or another file's (also: its stamped
        structural-zero rules name other keys or levels, forbid a cell of the sample, or
        do not reproduce its ``mass_structural_zero``; it has structural zeros but no
        stamped rules) or has a cluster correction (not supported yet); a fit extrapolated
        stratum by stratum (a stratum that is a key) whose N is not above n ("cell
        weights need n < N", as :func:`assess_from_posterior`).

    Warns
    -----
    sdcbayes.inference.diagnostics.ConvergenceWarning
        Each problem of ``diagnostics["problems"]`` (R-hat or ESS of the ER given the
        parameters), as :func:`~sdcbayes.risk.posterior_assess.assess_posterior` warns of
        its fit's; not where the sample is the population (exact results).

    Notes
    -----
    A pattern is per key a released value (a level, or a recoded value: the set of levels
    it stands for) or a blank; one with one level on every key is an observed cell (the
    fit's own formulas), every other a rectangle. Checked exactly: an identity recode
    gives the result without ``recodes``, a recode of every level into one value that of
    the blank, and on a census (N = n) each record's risk is 1/F with F counted by brute
    force over the recoded values (tests/test_released_recode.py).

    Evaluated per pattern, never per record: the patterns with blanks in batches of one
    free-key specification (``_score_blanked``: patterns x draws arrays, each within
    about :data:`~sdcbayes.risk.posterior.CHUNK_ELEMENTS` elements), the full patterns
    in chunks; memory is draws x cells plus the batches', never draws x records (the
    predictive draw: draws x observed cells, int32; the top cells' draws only within
    their batch, ``_Predictive``). The no-blank
    file gives exactly :func:`~sdcbayes.risk.posterior_assess.assess_from_posterior`'s ER
    and risks, and with the same ``random_seed`` its predictive ER draws.
    """
    from sdcbayes import _compat

    posterior = _compat.group_as_dataset(posterior)  # ArviZ 1: idata.posterior is a node
    from sdcbayes.models.latent_class import LatentClassModel, PatternSums

    # ---- every check before any work
    check_microdata(md_original, "assess_released")
    threshold = check_threshold(threshold)
    qs = _check_quantiles(quantiles)
    _check_seed(random_seed)
    for name, v, lo in (("top_cells", top_cells, 0), ("draw_chunk", draw_chunk, 1)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < lo:
            raise InputError(f"{name} must be an integer >= {lo}; got {v!r}")
    md = md_original
    keys = list(md.keys)
    record_cell = np.asarray(md.record_cell)
    policy = getattr(md, "missing", "wildcard")
    if policy not in ("category", "drop") and (
            np.any(record_cell < 0) or md.frame[keys].isna().to_numpy().any()):
        raise InputError(
            f"the original file has missing key values, which missing={policy!r} matches to "
            "every value, so no latent-class fit has them: read the original with "
            "Microdata(..., missing='category') (a missing value is a level of its own) or "
            "missing='drop' (those records left out, with no risk), fit that, and assess the "
            "released file from it")
    frame = _released_frame(released)
    check_posterior_fits(md, posterior, "latent-class")
    post = _posterior_dataset(posterior)
    settings, zero_rules = _check_posterior(md, posterior, post)
    stamped = {**dict(post.attrs), **dict(getattr(posterior, "attrs", None) or {})}
    design = bool(stamped.get("weight_classes"))
    spec = LatentClassModel.from_microdata(md, weights=design, n_classes=2)
    # the fit's own levels and codes (its level MISSING_LEVEL last where it has one)
    J = spec.n_keys
    levels = [list(lv) for lv in spec.levels[:J]]
    missing_at = [len(md.levels[k]) if len(levels[j]) > len(md.levels[k]) else None
                  for j, k in enumerate(keys)]
    images = _recode_images(keys, levels, recodes, missing_at)
    rec_codes = _record_codes(md, spec) if any(im is not None for im in images) else None
    blank = _check_released(md, frame, images, rec_codes)
    pi, n, N = latent_class_pi(md, posterior, N=N)
    if not 0 < n <= N:
        raise InputError(f"need 0 < n <= N; got n={n:g}, N={N:g}: pass N=..., the population size")
    lam_stored = _latent_class_excess(posterior, post, N)
    # a stratum that is a key: each cell's population at its own stratum's rate, as
    # assess_from_posterior extrapolates it (module docstring, "A stratum that is a key")
    rates = None if lam_stored is None else _stratum_key_rates(md, N)
    if rates is not None and n >= N:  # as evaluate_poisson_cells(cell_weight=...) refuses
        raise InputError("cell weights need n < N: the sample is the whole population "
                         f"(n={n:g}, N={N:g}); pass N=..., the population size")
    if design and (spec.class_weights is None or not np.allclose(
            spec.class_weights, json.loads(stamped["weight_classes"]), rtol=1e-9)):
        raise InputError("the posterior's weight classes are not those of md_original's "
                         "weights: assess the file the model was fitted to")
    phi_all = _profiles(post, spec)
    w = _flat_draws(post["w"]).astype(float)
    S, H = w.shape
    key_rate = None
    if rates is not None:
        # lam_c = n pi_c e_{c_s}, e_l = max(wbar_l, 1) - 1 (weights below 1 cannot shrink F
        # below f): the observed cells' lam in latent_class_groups' expression and order, so
        # that the predictive draws are assess_from_posterior's; the pattern sums get e per
        # level of the stratum key (one stratum per cell: one value per level; a level no
        # kept record has, 0: the weights put the whole population in the sampled strata)
        wk = np.maximum(rates.cell_weight, 1.0) - 1.0
        lam_stored = n * pi * wk[None, :]
        s_key = keys.index(md.strata)
        e_lv = np.zeros(len(levels[s_key]))
        e_lv[np.asarray(spec.key_codes)[:, s_key]] = wk
        E, key_rate = np.ones((S, 1)), (s_key, e_lv)
    elif design:
        # E_h = sum_g phi_hG(g) e_g: each class's excess rate over the weight classes
        E = phi_all[-1] @ spec.excess_rates(N)
    else:
        E = np.full((S, 1), N / n - 1.0)
    phi = phi_all[:spec.n_keys]
    sz = _structural_zeros(spec, zero_rules)
    ps = PatternSums(w, phi, E, n, structural_zeros=sz, key_rate=key_rate)
    _check_zero_mass(ps, post)
    _levels_check(spec, ps, pi)  # with S: cells() truncated, as the stored pi
    kap = (_flat_draws(post["kappa"]).astype(float).reshape(-1) if "kappa" in post
           else np.full(S, np.inf))
    if kap.shape != (S,) or np.any(~(kap > 0)):
        raise InputError(f"kappa must hold one positive value (or inf) per draw ({S})")

    # ---- patterns: per key the id of the released value (the level itself where the key
    # is not recoded; the image under recodes= where it is), -1 where hidden (suppressed,
    # or recoded to missing on a key also suppressed); the distinct rows over the records
    # the fit has
    kept = np.flatnonzero(record_cell >= 0)  # missing="drop": the others have no risk
    hidden = blank.copy()  # the values read as every level of their key
    img_ids, preimages, shown_as = [], [], []
    for j in range(J):
        if images[j] is None:  # not recoded: each level is its own released value
            ids = np.arange(len(levels[j]), dtype=np.int64)
            vals = np.array(list(spec.levels[j]) + [None], dtype=object)[:-1]
        else:
            vals = images[j]
            ids = pd.factorize(pd.Series(vals, dtype=object), use_na_sentinel=True)[0]
            ids = np.asarray(ids, dtype=np.int64)  # -1: the level is released missing
            to_nan = np.flatnonzero(ids < 0)
            if to_nan.size and not (blank[:, j] & ~np.isin(rec_codes[:, j], to_nan)).any():
                # every hidden value of the key is the recode's: who knows the published map
                # knows a NaN stands for the levels it sends to NaN, a value of its own
                ids = np.where(ids < 0, ids.max(initial=-1) + 1, ids)
                hidden[:, j] = False
        img_ids.append(ids)
        # each released value's levels, in increasing order: the rectangle on key j
        preimages.append([np.flatnonzero(ids == g) for g in range(int(ids.max(initial=-1)) + 1)])
        shown_as.append(vals)
    codes = np.column_stack([img_ids[j][spec.key_codes[record_cell[kept], j]]
                             for j in range(J)]).astype(np.int64)
    codes[hidden[kept]] = -1
    pats, rec_pat, m_p = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    rec_pat = rec_pat.reshape(-1)
    del codes
    P = pats.shape[0]
    multi = np.zeros(pats.shape, bool)  # a shown value that stands for several levels
    for j in range(J):
        size = np.array([a.size for a in preimages[j]] + [0], np.int64)  # [-1]: hidden
        multi[:, j] = size[pats[:, j]] > 1
    has_blank = (pats < 0).any(axis=1)
    # one cell: every key shown with a one-level value (today's branch, the fit's formulas)
    is_full = ~has_blank & ~multi.any(axis=1)
    first = np.full(P, -1, dtype=np.int64)
    first[rec_pat[::-1]] = kept[::-1]  # each pattern's first record (into record_cell)
    fk_cells = np.asarray(spec.key_counts, dtype=float)
    m_p_f = m_p.astype(float)
    # md_original's households: the released file's household risk (_Households)
    hh_codes = getattr(md, "household_index", None)
    hhs = None if hh_codes is None else _Households(hh_codes, kept, rec_pat, P, S)

    risk = np.empty(P)
    risk_q = np.empty((len(qs), P))
    F_mean = np.empty(P)
    f_p = np.empty(P)
    er = np.zeros(S)
    er_blank = np.zeros(S)
    above = np.zeros(S)

    def lam_of(sl, cols):
        if lam_stored is not None:
            return lam_stored[sl][:, cols]
        return (N - n) * pi[sl][:, cols]

    # ---- the predictive draw: every observed cell's X as assess_from_posterior draws it
    random_seed = seed_or_drawn(random_seed)  # stamped as predictive_seed: repeatable
    pred = _Predictive(random_seed, _draw_observed(
        fk_cells, pi, lam_stored, "kappa" in post, kap, n, N, random_seed), ps, kap, n)
    er_pred = np.zeros(S)
    er_blank_pred = np.zeros(S)

    # ---- full patterns: the observed cell alone, by assess_from_posterior's own formulas
    full = np.flatnonzero(is_full)
    cell_of = record_cell[first[full]]
    f_p[full] = fk_cells[cell_of]
    step = max(1, CHUNK_ELEMENTS // max(S, 1) // 8)
    for c0 in range(0, full.size, step):
        idx, cells = full[c0:c0 + step], cell_of[c0:c0 + step]
        fs = fk_cells[cells]
        inv, F_mean[idx] = _latent_class_inverse(fs, lam_of(slice(None), cells), kap[:, None],
                                                 n * pi[:, cells])
        risk[idx] = mean_over_draws(inv)
        risk_q[:, idx] = np.quantile(inv, qs, axis=0)
        er += inv @ m_p_f[idx]
        if hhs is not None:
            hhs.add(inv, idx)
        # predictive: the cell's drawn F, as evaluate_poisson_cells forms it
        inv_pred = 1.0 / (fs[None, :] + pred.X_obs[:, cells])
        er_pred += inv_pred @ m_p_f[idx]
        if hhs is not None:
            hhs.add_predictive(inv_pred, idx)
        if threshold is not None:
            above += (inv > threshold) @ m_p_f[idx]

    # ---- patterns with blanks, then those recoded only (rectangles without a hidden value):
    # batches of patterns with the same free keys (each key's level set, _pattern_groups)
    blanked = np.flatnonzero(has_blank)
    recoded = np.flatnonzero(~is_full & ~has_blank)
    ctx = _Scoring(spec=spec, ps=ps, pi=pi, lam_stored=lam_stored, N=N, n=n, kap=kap, qs=qs,
                   threshold=threshold, top_cells=int(top_cells), draw_chunk=int(draw_chunk),
                   fk_cells=fk_cells, m_p_f=m_p_f, preimages=preimages)
    out = {"risk": risk, "risk_q": risk_q, "F_mean": F_mean, "f_p": f_p, "er": er,
           "er_blank": er_blank, "above": above, "pred": pred, "er_pred": er_pred,
           "er_blank_pred": er_blank_pred}
    if hhs is not None:  # shared by reference with the recoded patterns' call
        out["households"] = hhs
    _score_blanked(ctx, pats, blanked, out)
    if recoded.size:
        # in the file's ER, not in the part of the records with a blank ("er_blank...")
        _score_blanked(ctx, pats, recoded, {
            k: (np.zeros_like(v) if k.startswith("er_blank") else v) for k, v in out.items()})

    # ---- records (indexed like the released file) and the pattern table
    n_all = len(frame)

    def per_record(a: np.ndarray) -> np.ndarray:  # NaN for the records the fit dropped
        v = np.full(n_all, np.nan)
        v[kept] = a[rec_pat]
        return v

    pattern_of = np.full(n_all, -1, dtype=np.int64)
    pattern_of[kept] = rec_pat
    n_blank = hidden.sum(axis=1)
    records = pd.DataFrame({
        "record": np.arange(n_all),
        "pattern": pattern_of,
        "blanks": n_blank,
        "f_p": per_record(f_p),
        "risk": per_record(risk),
        "risk_lo": per_record(risk_q[0]),
        "risk_hi": per_record(risk_q[-1]),
        "F_mean": per_record(F_mean),
    }, index=frame.index.copy())
    for i, q in enumerate(qs[1:-1], start=1):
        records[f"risk_q{q:g}"] = per_record(risk_q[i])
    if hhs is not None:  # per draw, then the mean: as assess_from_posterior's
        hh_er, hh_hh, hh_risk = hhs.finish(risk)
        hh_er_pred, hh_hh_pred = hhs.finish_predictive()
        hh_all = np.full(n_all, np.nan)  # NaN: the records the fit dropped
        hh_all[kept] = hh_risk
        records["household_risk"] = hh_all
    cells = pd.DataFrame({  # the released values: a recoded key's label, None where hidden
        k: pd.Series([shown_as[j][preimages[j][c][0]] if c >= 0 else None for c in pats[:, j]],
                     dtype=object)
        for j, k in enumerate(keys)})
    cells["records"] = m_p
    cells["blanks"] = (pats < 0).sum(axis=1)
    cells["recoded"] = multi.sum(axis=1)
    cells["f_p"] = f_p
    cells["risk"] = risk
    cells["risk_lo"] = risk_q[0]
    cells["risk_hi"] = risk_q[-1]
    cells["F_mean"] = F_mean

    # ---- labelled per-draw results
    chain, draw = post.sizes["chain"], post.sizes["draw"]
    fd = {"expected_reidentifications_conditional_mean": (("chain", "draw"),
                                                          er.reshape(chain, draw)),
          "expected_reidentifications_blanked_conditional_mean": (
              ("chain", "draw"), er_blank.reshape(chain, draw)),
          "expected_reidentifications": (("chain", "draw"), er_pred.reshape(chain, draw)),
          "expected_reidentifications_blanked": (("chain", "draw"),
                                                 er_blank_pred.reshape(chain, draw))}
    if threshold is not None:
        fd["n_above_threshold"] = (("chain", "draw"), above.reshape(chain, draw))
    if hhs is not None:  # named as the ER's: predictive, and given the parameters
        fd["household_expected_reidentifications"] = (("chain", "draw"),
                                                       hh_er_pred.reshape(chain, draw))
        fd["household_expected_reidentifications_conditional_mean"] = (
            ("chain", "draw"), hh_er.reshape(chain, draw))
        fd["household_expected_reidentified_households"] = (("chain", "draw"),
                                                            hh_hh_pred.reshape(chain, draw))
        fd["household_expected_reidentified_households_conditional_mean"] = (
            ("chain", "draw"), hh_hh.reshape(chain, draw))
    file_draws = xr.Dataset(fd, coords={"chain": post["chain"].values,
                                        "draw": post["draw"].values})

    # each recoded key: level -> released value (None: released missing), as plain JSON
    recode_stamp = {k: {str(_plain(lv)): _plain(v) for lv, v in zip(levels[j], images[j],
                                                                      strict=True)}
                    for j, k in enumerate(keys) if images[j] is not None}
    # the fit's own settings, less what this function did not compute
    settings = {k: v for k, v in settings.items() if k != "max_global_risk"}
    prov = stamp("latent-class", data_summary=md.summary(), settings={
        **settings, "quantiles": qs, "threshold": threshold, "top_cells": int(top_cells),
        "route": "released", "N": float(N), "predictive_seed": random_seed,
        # the rules the pattern sums left out (the fit's stamp, as read here)
        "structural_zero_rules": [] if sz is None else sz.to_list()}
        | ({"recodes": json.dumps(recode_stamp)} if recode_stamp else {}))
    file_draws.attrs.update(model="latent-class", sdcbayes_version=prov["sdcbayes_version"],
                            quantiles=qs, interval_kind=INTERVAL_KIND)
    r_all = risk[rec_pat]  # the records the fit has (missing="drop": not the dropped)
    is_blank_rec = n_blank[kept] > 0
    is_recoded_rec = (multi.any(axis=1) & ~has_blank)[rec_pat]
    summary: dict[str, Any] = {
        "sdcbayes_version": prov["sdcbayes_version"],
        "model": "latent-class",
        "method": "latent-class pattern (fitted on original)",
        "quantiles": qs,
        "interval_level": round(qs[-1] - qs[0], 10),
        "interval_kind": INTERVAL_KIND,
        "hyper_interval_kind": HYPER_INTERVAL_KIND,
        "n_records": int(rec_pat.size),
        "n_draws": int(S),
        "population_size": float(N),
        "top_cells": int(top_cells),
        "n_patterns": int(P),
        "n_blanked_patterns": int(blanked.size),
        "n_blanked_records": int(is_blank_rec.sum()),
        "n_blanks": int(hidden[kept].sum()),
        "blanks_by_key": {k: int(hidden[kept, j].sum()) for j, k in enumerate(keys)},
        "n_recoded_patterns": int(recoded.size),
        "n_recoded_records": int(is_recoded_rec.sum()),
        "recodes": recode_stamp,
        "structural_zero_rules": [] if sz is None else sz.to_list(),
        "missing": policy,
        "n_dropped_records": int(n_all - kept.size),
        "expected_reidentifications": float(er.mean()),
        "expected_reidentifications_interval": _interval(er_pred, qs),
        "expected_reidentifications_hyper_interval": _interval(er, qs),
        "expected_reidentification_rate": float(er.mean() / max(rec_pat.size, 1)),
        "expected_reidentifications_blanked_records": float(er_blank.mean()),
        "expected_reidentifications_blanked_records_interval": _interval(er_blank_pred, qs),
        "expected_reidentifications_blanked_records_hyper_interval": _interval(er_blank, qs),
        "n_above_benchmark_at_mean_risk": int(np.count_nonzero(benchmark_rule(r_all))),
        "max_risk": float(r_all.max()) if r_all.size else float("nan"),
        "median_risk": float(np.median(r_all)) if r_all.size else float("nan"),
    }
    if threshold is not None:
        summary["risk_threshold"] = float(threshold)
        summary["n_above_threshold"] = float(above.mean())
        summary["n_above_threshold_interval"] = _interval(above, qs)  # over the parameters
        summary["n_above_threshold_at_mean_risk"] = int(np.count_nonzero(r_all > threshold))
    if hhs is not None:  # assess_from_posterior's names: predictive, and hyper
        summary["n_households"] = hhs.n_households
        summary["household_expected_reidentifications"] = float(hh_er.mean())
        summary["household_expected_reidentifications_interval"] = _interval(hh_er_pred, qs)
        summary["household_expected_reidentifications_hyper_interval"] = _interval(hh_er, qs)
        summary["household_interval_kind"] = INTERVAL_KIND
        # each household once (assess_closed_form's name), of the same interval kind
        summary["household_expected_reidentified_households"] = float(hh_hh.mean())
        summary["household_expected_reidentified_households_interval"] = _interval(
            hh_hh_pred, qs)
        summary["household_expected_reidentified_households_hyper_interval"] = _interval(
            hh_hh, qs)
    summary["diagnostics"] = _released_diagnostics(md, N, file_draws)
    if rates is not None:  # extrapolated stratum by stratum: as assess_from_posterior says
        summary["extrapolation"] = {"by": "stratum", "strata": md.strata,
                                    "mean_weight_by_stratum": rates.by_stratum}
        summary["notes"] = [*summary.get("notes", []), _stratum_rates_note(md, rates)]
    return PosteriorAssessment(
        records=records, cells=cells, summary=summary, provenance=prov,
        idata=None if isinstance(posterior, xr.Dataset) else posterior,
        cell_posterior=None, file_draws=file_draws)


@dataclass(frozen=True)
class _Scoring:
    """What scoring the blanked patterns needs from :func:`assess_released` (one fit)."""

    spec: Any  # LatentClassModel of md_original (cells, levels, counts)
    ps: Any  # PatternSums of the draws
    pi: np.ndarray  # (S, cells) stored pi
    lam_stored: np.ndarray | None  # (S, cells) stored lam, or None: (N - n) pi
    N: float
    n: float
    kap: np.ndarray  # (S,) kappa per draw, inf for Poisson draws
    qs: tuple
    threshold: float | None
    top_cells: int
    draw_chunk: int
    fk_cells: np.ndarray  # (cells,) sample counts
    m_p_f: np.ndarray  # (patterns,) records per pattern
    # per key, each released value's levels (pattern code g -> preimages[j][g]); None: the
    # codes are the levels themselves (no recode)
    preimages: list | None = None

    def lam_of(self, sl, cols) -> np.ndarray:
        """The observed cells' excess means, (draws, *cols.shape)."""
        if self.lam_stored is not None:
            return self.lam_stored[sl][:, cols]
        return (self.N - self.n) * self.pi[sl][:, cols]

    @property
    def rank_draws(self) -> np.ndarray:
        """The draws that rank a pattern's top cells (at most 64, evenly spaced)."""
        S = self.kap.size
        return np.unique(np.linspace(0, S - 1, min(S, 64)).round().astype(np.int64))


def _joint_codes(a: np.ndarray, b: np.ndarray, radices) -> tuple[np.ndarray, np.ndarray]:
    """One int64 code per row of ``a`` (m, k) and of ``b`` (p, k), equal iff the rows are.

    Mixed radix over the columns (``radices``: each column's number of levels), compacted
    through :func:`numpy.unique` whenever the next column could overflow int64.
    """
    ca = np.zeros(a.shape[0], np.int64)
    cb = np.zeros(b.shape[0], np.int64)
    bound = 1
    for j, L in enumerate(radices):
        L = max(int(L), 1)
        if bound * L >= 2 ** 62:
            u, inv = np.unique(np.concatenate([ca, cb]), return_inverse=True)
            ca, cb, bound = inv[:ca.size].astype(np.int64), inv[ca.size:].astype(np.int64), u.size
        ca = ca * L + a[:, j]
        cb = cb * L + b[:, j]
        bound *= L
    return ca, cb


class _CellSet:
    """Membership of full key cells (rows of codes) among the sample's observed cells."""

    def __init__(self, key_codes: np.ndarray, n_levels) -> None:
        self.key_codes = np.asarray(key_codes, np.int64)
        self.n_levels = [int(x) for x in n_levels]
        self.linear = math.prod(max(L, 1) for L in self.n_levels) < 2 ** 62
        if self.linear:
            self.sorted = np.sort(self._encode(self.key_codes))

    def _encode(self, rows: np.ndarray) -> np.ndarray:
        code = np.zeros(rows.shape[0], np.int64)
        for j, L in enumerate(self.n_levels):
            code = code * max(L, 1) + rows[:, j]
        return code

    def contains(self, rows: np.ndarray) -> np.ndarray:
        """Bool per row of ``rows`` (m, J): is it one of the observed cells."""
        rows = np.asarray(rows, np.int64)
        if not self.linear:  # too many cells for one code: a joint code per call
            ca, cb = _joint_codes(self.key_codes, rows, self.n_levels)
            return np.isin(cb, ca)
        code = self._encode(rows)
        pos = np.minimum(np.searchsorted(self.sorted, code), max(self.sorted.size - 1, 0))
        return (self.sorted[pos] == code) if self.sorted.size else np.zeros(code.size, bool)


def _pattern_groups(ps, pats: np.ndarray, blanked: np.ndarray, preimages=None):
    """The blanked patterns grouped by their free-key specification (one Gram matrix each).

    The encoding stage: the only place that reads a pattern's codes. Per key a code is
    -1 where the value is hidden (every level of the key), else the released value's
    id g, whose levels are ``preimages[j][g]`` (a recoded value stands for the levels
    it merges; ``preimages`` None: g is the level itself, no recode). A key shown with
    a one-level value is fixed; one hidden, or shown with a value of several levels, is
    free with that level set, so the patterns group by (per free key: every level, or
    the recoded value's levels). Yields ``(rect, members, fixed)``: the normalised
    rectangle (:meth:`PatternSums.rectangle`; its keys with one level are the fixed
    keys, their level a placeholder), the patterns' indices into ``pats`` and their
    fixed levels (members, keys), 0 on the free keys. A key of one level is free either
    way (the rectangle's normalisation), and a recoded value of every level of its key
    is the blank's rectangle, so such patterns share a group.
    """
    codes = pats[blanked]
    J = codes.shape[1]
    if preimages is None:
        first = [None] * J  # the code is the level
        size = [np.ones(1, np.int64)] * J
    else:
        first = [np.array([a[0] for a in pre] + [0], np.int64) for pre in preimages]
        size = [np.array([a.size for a in pre] + [0], np.int64) for pre in preimages]
    # -1: hidden; -2: shown with one level (fixed); g >= 0: a value of several levels
    sig = np.where(codes < 0, -1, -2)
    if preimages is not None:
        for j in range(J):
            multi = size[j][codes[:, j]] > 1
            sig[multi, j] = codes[multi, j]
    usig, inv = np.unique(sig, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    groups: dict[tuple, tuple[list, list]] = {}
    for u, row in enumerate(usig.tolist()):
        rect = ps.rectangle([None if g == -1 else 0 if g == -2 else preimages[j][g]
                             for j, g in enumerate(row)])
        key = tuple((j, None if lv is None else tuple(lv.tolist()))
                    for j, lv in enumerate(rect) if lv is None or lv.size > 1)
        groups.setdefault(key, (rect, []))[1].append(u)
    for key in sorted(groups, key=repr):
        rect, us = groups[key]
        members = np.flatnonzero(np.isin(inv, us))
        fixed = np.zeros((members.size, J), np.int64)
        for j, lv in enumerate(rect):
            if lv is not None and lv.size == 1:
                g = codes[members, j]
                fixed[:, j] = g if first[j] is None else first[j][g]
        yield rect, blanked[members], fixed


def _observed_cells(key_codes: np.ndarray, n_levels, rect, fixed: np.ndarray):
    """Each pattern's observed cells, as slices of one ordering of the sample's cells.

    Returns ``(order, start, count)``: pattern p's observed cells are
    ``order[start[p]:start[p] + count[p]]``, in increasing cell index (the order of the
    per-pattern lookup). A cell lies in a pattern when it has the pattern's levels on the
    fixed keys and a level of the free key's set on each free key (every level for a
    suppressed value).
    """
    cand = np.arange(key_codes.shape[0])
    fixed_keys = []
    for j, lv in enumerate(rect):
        if lv is not None and lv.size == 1:
            fixed_keys.append(j)
        elif lv is not None:  # a free key with a subset of its levels
            cand = cand[np.isin(key_codes[cand, j], lv)]
    cc, pc = _joint_codes(key_codes[cand][:, fixed_keys], fixed[:, fixed_keys],
                          [n_levels[j] for j in fixed_keys])
    o = np.argsort(cc, kind="stable")  # stable: increasing cell index within a pattern
    sc = cc[o]
    start = np.searchsorted(sc, pc, side="left")
    count = np.searchsorted(sc, pc, side="right") - start
    return cand[o], start, count


def _score_blanked(ctx: _Scoring, pats: np.ndarray, blanked: np.ndarray, out: dict) -> None:
    r"""Score the patterns with blanks (module docstring), many patterns at a time.

    Per group of patterns with the same free keys (one Gram matrix,
    :func:`_pattern_groups`): the observed cells of every pattern from one sort of the
    sample's cells (:func:`_observed_cells`), the top unobserved cells in chunks of
    patterns (:meth:`~sdcbayes.models.latent_class.PatternSums.top_cells_many`, less the
    observed ones and those in the fit's structural zeros); then the patterns are sorted
    by their number of explicit cells K and taken in batches of one K. Per batch and
    chunk of ``draw_chunk`` draws the pattern sums
    (:meth:`~sdcbayes.models.latent_class.PatternSums.sums_many`), the explicit cells
    (observed, then the top unobserved, each pattern's in the per-pattern order), the
    remainder and the quadrature (:func:`~sdcbayes.risk.posterior.inverse_moment_sum_rows`
    over patterns x draws rows) are array operations.

    One K per batch, not a padded width: the remainder is a difference of sums
    (:math:`\Lambda_p - \sum\lambda_c`, and the same for the squares), whose cancellation
    turns the last bit of a sum into about 1e-11 of a draw's risk where the explicit cells
    take nearly all of a pattern; sums of the same length in the same order are the
    per-pattern evaluation's to the bit, so only the quadrature's rounding (about 1e-15)
    separates the two (tests/test_released_batch.py, against the per-pattern reference in
    tests/released_reference.py).

    Memory: a batch's patterns x draws x cells arrays hold about
    :data:`~sdcbayes.risk.posterior.CHUNK_ELEMENTS` elements, and its patterns x draws
    at most that too (a few: the risks, the predictive draw's explicit X and remainder
    laws), and its patterns x draws x top cells too (their pi and lam, computed once per
    batch for the quadrature and the predictive draw); the predictive draw's top cells
    are drawn per batch (:meth:`_Predictive.top_sum`). Each pattern's top cells are
    ranked once (their levels on the free keys kept, int32, a few hundred bytes a
    pattern). It does not
    grow with the patterns, their top cells or the records. Writes into ``out``
    (the arrays of :func:`assess_released`).
    """
    from sdcbayes.models.latent_class import expected_inverse_frequency_f

    spec, ps, kap = ctx.spec, ctx.ps, ctx.kap
    S, H = ps.w.shape
    J = spec.n_keys
    key_codes = np.asarray(spec.key_codes, np.int64)
    n_levels = [int(x) for x in spec.n_levels[:J]]
    use_top = bool(ctx.top_cells) and bool(np.isfinite(kap).any())
    rank_draws = ctx.rank_draws
    cellset = _CellSet(key_codes, n_levels) if use_top else None
    fk = ctx.fk_cells
    dS = min(ctx.draw_chunk, S)
    for rect, members, fixed in _pattern_groups(ps, pats, blanked, ctx.preimages):
        order, start, count = _observed_cells(key_codes, n_levels, rect, fixed)
        csum = np.concatenate([[0.0], np.cumsum(fk[order])])  # integer counts: exact
        Pg = members.size
        free = [j for j, lv in enumerate(rect) if lv is None or lv.size > 1]
        # each pattern's top cells, once: their levels on the free keys (the fixed ones are
        # the pattern's own) and which are neither observed nor structural zeros (pi = lam
        # = 0: no slot's worth); kept compact for the batches, which rebuild the codes
        M = 0
        top_free = np.zeros((Pg, 0, len(free)), np.int32)
        top_valid = np.zeros((Pg, 0), bool)
        if use_top:
            free_lv = max([n_levels[j] if lv is None else lv.size
                           for j, lv in enumerate(rect) if lv is None or lv.size > 1] or [1])
            step = max(1, CHUNK_ELEMENTS // max(rank_draws.size * max(H, free_lv),
                                                ctx.top_cells * J))
            for c0 in range(0, Pg, step):
                tops = ps.top_cells_many(rect, fixed[c0:c0 + step], ctx.top_cells, rank_draws)
                if c0 == 0:
                    M = tops.shape[1]
                    top_free = np.empty((Pg, M, len(free)), np.int32)
                    top_valid = np.empty((Pg, M), bool)
                top_free[c0:c0 + step] = tops[:, :, free]
                top_valid[c0:c0 + step] = (~cellset.contains(tops.reshape(-1, J))
                                           .reshape(-1, M) & ~ps.in_zeros(tops))
        K = count + top_valid.sum(axis=1)
        srt = np.argsort(K, kind="stable")
        Ks = K[srt]
        i = 0
        while i < Pg:
            # patterns of one K, as many as keep patterns x draws x cells within budget
            j = int(np.searchsorted(Ks, Ks[i], side="right"))
            width = dS * max(int(Ks[i]) + M + 1, H * max(M, 1))
            # (the predictive draw holds the top cells' pi and lam, patterns x draws x M)
            nb = max(1, min(j - i, CHUNK_ELEMENTS // width,
                            CHUNK_ELEMENTS // max(S * max(M, 1), 1)))
            sel = srt[i:i + nb]
            i += nb
            if use_top:  # the codes: the fixed levels, the top levels on the free keys
                tops = np.repeat(fixed[sel][:, None, :], M, axis=1)
                tops[:, :, free] = top_free[sel]
                tops = (tops, top_valid[sel])
            else:
                tops = None
            _score_batch(ctx, rect, members[sel], fixed[sel], order, start[sel], count[sel],
                         csum, int(Ks[i - 1]), tops, expected_inverse_frequency_f, out)


def _score_batch(ctx, rect, pb, fb, order, st, ct, csum, K, top, eif, out) -> None:
    """One batch of :func:`_score_blanked`: patterns ``pb`` with ``K`` explicit cells each.

    ``top``: the patterns' top cells and which of them are explicit, ``(codes (P, M, J),
    valid (P, M))`` from :meth:`~sdcbayes.models.latent_class.PatternSums.top_cells_many`
    (ranked once per pattern by :func:`_score_blanked`), or None without top cells.
    """
    ps, pi, kap, n, qs = ctx.ps, ctx.pi, ctx.kap, ctx.n, ctx.qs
    S = kap.size
    J = ctx.spec.n_keys
    nb = pb.size
    f = csum[st + ct] - csum[st]  # >= 1: the record's own cell is among them
    Omax = int(ct.max())
    ar = np.arange(Omax)
    ovalid = ar[None, :] < ct[:, None]
    obs = order[np.where(ovalid, st[:, None] + ar[None, :], 0)]
    if top is not None:
        tops, tvalid = top
    else:
        tops = np.empty((nb, 0, J), np.int64)
        tvalid = np.empty((nb, 0), bool)
    # each pattern's K explicit cells, in the per-pattern order: observed, then top
    valid = np.concatenate([ovalid, tvalid], axis=1)
    take = np.nonzero(valid)[1].reshape(nb, K)[:, None, :]
    fcx = np.take_along_axis(
        np.concatenate([np.where(ovalid, ctx.fk_cells[obs], 0.0),
                        np.zeros(tvalid.shape)], axis=1), take[:, 0], axis=1)
    e = np.empty((nb, S))
    xm = np.empty((nb, S))
    tiny_f = np.finfo(float).tiny
    pred = out.get("pred")
    if pred is not None:  # the predictive draw's remainder law per pattern and draw
        xe = np.zeros((nb, S))  # the explicit cells' drawn X
        p_nb = np.zeros((nb, S), bool)
        p_r = np.zeros((nb, S))
        p_rho = np.ones((nb, S))
        p_mean = np.zeros((nb, S))
        # the top cells' pi and lam over all draws, gathered from the draw chunks below for
        # the valid top cells' X (drawn after them: a cell's keyed stream runs over all
        # draws in draw order, whatever the chunks)
        top_par = (np.empty((nb, S, tops.shape[1])), np.empty((nb, S, tops.shape[1]))
                   ) if tvalid.any() else None
    for s0 in range(0, S, ctx.draw_chunk):
        sl = slice(s0, min(s0 + ctx.draw_chunk, S))
        k = kap[sl]
        fin = np.isfinite(k)
        # the patterns' class weights once, for their sums and their top cells alike
        wts = ps.weights_many(rect, fb, sl)
        sm = ps.sums_many(rect, fb, sl, weights=wts)
        es = np.empty((nb, k.size))
        xs = np.empty((nb, k.size))
        pix = lamx = None
        if pred is not None and top_par is not None:
            pix, lamx = ps.cells_many(rect, tops, sl, weights=wts[0])
            top_par[0][:, sl], top_par[1][:, sl] = pix, lamx
        if (~fin).any():  # Poisson draws: X_p ~ Po(lam_p) exactly
            es[:, ~fin] = eif(f[:, None], sm["lam"][:, ~fin], np.inf)
            xs[:, ~fin] = sm["lam"][:, ~fin]
        if pred is not None:
            xe[:, sl] += np.where(ovalid[None], pred.X_obs[sl][:, obs], 0).sum(axis=2).T
            if (~fin).any():  # Poisson draws: the remainder is Po(lam_p - explicit lam)
                lx = np.where(ovalid[None], ctx.lam_of(sl, obs), 0.0).sum(axis=2).T
                if tvalid.any():
                    lx += np.where(tvalid[:, None, :], lamx, 0.0).sum(axis=2)
                lp = sm["lam"][:, ~fin]
                rest = np.maximum(lp - lx[:, ~fin], 0.0)
                p_mean[:, sl][:, ~fin] = np.where(rest <= _REMAINDER_EPS * lp, 0.0, rest)
        if fin.any():
            if pix is None:
                pix, lamx = ps.cells_many(rect, tops, sl, weights=wts[0])
            pic = np.take_along_axis(np.concatenate(
                [np.moveaxis(pi[sl][:, obs], 0, 1), pix], axis=2), take, axis=2)[:, fin]
            lamc = np.take_along_axis(np.concatenate(
                [np.moveaxis(ctx.lam_of(sl, obs), 0, 1), lamx], axis=2), take, axis=2)[:, fin]
            kk = k[fin][None, :]  # (1, finite draws)
            kf = kk[:, :, None]
            lam_p = sm["lam"][:, fin]
            y = n * pic
            # the remainder: exact linear sums less the explicit cells'
            Lam_R = np.maximum(lam_p - lamc.sum(axis=2), 0.0)
            LY_R = np.maximum(sm["lam_y"][:, fin] - (lamc * y).sum(axis=2), 0.0)
            Q_R = np.maximum(sm["lam2"][:, fin] - (lamc ** 2).sum(axis=2), 0.0)
            tiny = Lam_R <= _REMAINDER_EPS * lam_p
            Lam_R = np.where(tiny, 0.0, Lam_R)
            ybar = np.where(Lam_R > 0, LY_R / np.where(Lam_R > 0, Lam_R, 1.0), 0.0)
            Mr = Lam_R * kk / (kk + ybar)
            V = Mr + kk * np.where(tiny, 0.0, Q_R) / (kk + ybar) ** 2
            nbin = (V > Mr * (1.0 + 1e-10)) & (Mr > 0)
            r_R = np.where(nbin, Mr ** 2 / np.where(nbin, V - Mr, 1.0), 0.0)
            rho_R = np.where(nbin, Mr / np.where(nbin, V, 1.0), 1.0)
            b = kf + y
            rho = np.clip(b / (b + lamc), tiny_f, 1.0)
            r = kf + fcx[:, None, :]
            es[:, fin] = inverse_moment_sum_rows(
                np.repeat(f, kk.size),
                np.concatenate([r, r_R[:, :, None]], axis=2).reshape(-1, K + 1),
                np.concatenate([rho, np.clip(rho_R, tiny_f, 1.0)[:, :, None]],
                               axis=2).reshape(-1, K + 1),
                np.where(nbin, 0.0, Mr).reshape(-1)).reshape(nb, kk.size)
            xs[:, fin] = (r * lamc / b).sum(axis=2) + Mr
            if pred is not None:
                p_nb[:, sl][:, fin] = nbin
                p_r[:, sl][:, fin] = r_R
                p_rho[:, sl][:, fin] = np.clip(rho_R, tiny_f, 1.0)
                p_mean[:, sl][:, fin] = Mr
        e[:, sl] = es
        xm[:, sl] = xs
    if pred is not None:
        if top_par is not None:
            xe += pred.top_sum(rect, tops, tvalid, params=top_par)  # pi, lam of these tops
        pred.add(out, pb, ctx.m_p_f[pb], f, xe, p_nb, p_r, p_rho, p_mean)
    out["f_p"][pb] = f
    out["risk"][pb] = mean_over_draws(e.T)
    out["risk_q"][:, pb] = np.quantile(e, qs, axis=1)
    out["F_mean"][pb] = f + xm.mean(axis=1)
    m = ctx.m_p_f[pb]
    out["er"] += e.T @ m
    out["er_blank"] += e.T @ m
    if ctx.threshold is not None:
        out["above"] += (e > ctx.threshold).T.astype(float) @ m
    hhs = out.get("households")
    if hhs is not None:
        hhs.add(e.T, pb)


class _Households:
    r"""The released file's household risk, gathered pattern batch by pattern batch.

    Given draw :math:`\theta_s` a record of pattern p has risk :math:`e_{ps} = E(1/F_p
    \mid \theta_s)`; members are independent given the parameters, so household h has
    :math:`1 - \prod_{i\in h}(1 - e_{p(i)s})` (sdcMicro's hierarchical risk, seed
    ``001_…`` Section 3.3, per draw as :func:`~sdcbayes.risk.posterior._household`
    takes it for :func:`~sdcbayes.risk.posterior_assess.assess_from_posterior`), and the
    household ER per draw is :math:`\sum_h |h|(1 - \prod_i(1 - e_{p(i)s}))` over the kept
    members (``missing="drop"``: the dropped are left out of the product). The predictive
    draw's realised :math:`1/F_p` of each pattern (the records of a pattern share its drawn
    :math:`F_p`, as the ER draw's :math:`m_p/F_p` does; :meth:`add_predictive`) give the
    household ER's predictive draws, :math:`\sum_h |h|(1 - \prod_i(1 - 1/F_{p(i)}))`
    (:meth:`finish_predictive`); with weight 1 per household in place of :math:`|h|`, the
    expected re-identified households, given the parameters and predictive, from the same
    pass. Both are the same sums over (household, pattern, count)
    pairs, gathered batch by batch by
    :class:`~sdcbayes.risk.posterior._RealisedHouseholds` (records alone in their household
    added at once, the patterns of the larger households kept as one draws x those
    patterns array and combined by :func:`~sdcbayes.risk.posterior._household` at the
    end). Memory: two such arrays, each at most draws x patterns, never draws x records.
    """

    def __init__(self, hh_codes: np.ndarray, kept: np.ndarray, rec_pat: np.ndarray, P: int,
                 S: int) -> None:
        hk = np.asarray(hh_codes)[kept]
        _, hinv = np.unique(hk, return_inverse=True)
        hinv = hinv.reshape(-1)
        self.n_households = int(hinv.max()) + 1 if hinv.size else 0
        self.multi = np.bincount(hinv)[hinv] >= 2  # kept records in a larger household
        self.rec_pat = rec_pat
        # the larger households, numbered as _RealisedHouseholds numbers them (by code)
        self.h2 = np.unique(hinv[self.multi], return_inverse=True)[1].reshape(-1)
        Pn = max(P, 1)  # every kept record's (household, pattern) pair
        pair, cnt = np.unique(hinv * Pn + rec_pat, return_counts=True)
        pairs = (pair // Pn, pair % Pn, cnt.astype(float))
        self.given = _RealisedHouseholds(pairs, P, S)  # E(1/F_p | theta)
        self.realised = _RealisedHouseholds(pairs, P, S)  # the predictive draw's 1/F_p

    def add(self, e: np.ndarray, pb: np.ndarray) -> None:
        """Patterns ``pb``'s risks ``e`` (draws, patterns) given the parameters."""
        self.given.add(e, pb)

    def add_predictive(self, inv: np.ndarray, pb: np.ndarray) -> None:
        """Patterns ``pb``'s realised 1/F_p ``inv`` (draws, patterns) of the predictive draw."""
        self.realised.add(inv, pb)

    def finish_predictive(self) -> tuple[np.ndarray, np.ndarray]:
        """The predictive draws of the household ER and of the re-identified households.

        Per draw the realised sums, with weight |h| and 1 per household.
        """
        return self.realised.finish()

    def finish(self, risk: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-draw household ER and re-identified households, each record's household risk.

        The re-identified households count each household once; the household risk is
        each kept record's mean over the draws. ``risk``: the patterns' posterior-mean
        risks (a one-record household's risk).
        """
        hrisk = risk[self.rec_pat]
        hh_mean, er, er_h = self.given.finish(risk_mean=risk)
        if self.multi.any():
            hrisk[self.multi] = hh_mean[self.h2]
        return er, er_h, hrisk


def _released_diagnostics(md, N: float, file_draws: xr.Dataset) -> dict[str, Any]:
    """R-hat and ESS of the ER given the parameters, checked as the fit's own are.

    As :func:`sdcbayes.risk.posterior_assess.assess_posterior` checks a latent-class fit
    (:func:`~sdcbayes.inference.diagnostics.check_diagnostics`, Gibbs advice): the problems
    are issued as :class:`~sdcbayes.inference.diagnostics.ConvergenceWarning` and kept
    under ``problems``; where the sample is the population
    (:func:`~sdcbayes.risk.posterior_assess.population_is_sample`) the results are exact,
    nothing is checked and ``note`` is :data:`~sdcbayes.risk.posterior_assess.EXACT_NOTE`.
    """
    from sdcbayes.inference.diagnostics import check_diagnostics

    diag = _functional_diagnostics(file_draws, _DIAGNOSED)
    if population_is_sample(md, "latent-class", N):
        diag["problems"] = []
        diag["note"] = EXACT_NOTE
        return diag
    checkable = {k: (math.nan if v is None else v) for k, v in diag.items()}
    diag["problems"] = check_diagnostics(checkable | {"divergences": 0}, sampler="gibbs")
    return diag


# ----------------------------------------------------------------- the predictive draw

#: Population counts are stored as int32 (draws x cells, as the fit's pi): a count above
#: this, which no real population has, is clipped (its 1/F is below 5e-10 either way).
_COUNT_MAX = np.iinfo(np.int32).max


def _draw_observed(fk: np.ndarray, pi: np.ndarray, lam_stored: np.ndarray | None,
                   kappa_given: bool, kap: np.ndarray, n: float, N: float,
                   random_seed: int) -> np.ndarray:
    r"""One :math:`X_c = F_c - f_c` per draw of every observed cell, (draws, cells), int32.

    Drawn as :func:`sdcbayes.risk.posterior_assess.evaluate_poisson_cells` draws them:
    the same generator (``numpy.random.default_rng(random_seed)``), chunks of cells,
    excess means and calls (:func:`sdcbayes.models.latent_class.simulate_excess`, or
    ``rng.poisson`` where the posterior has no kappa), so that a file without blanks
    reproduces :func:`~sdcbayes.risk.posterior_assess.assess_from_posterior`'s predictive
    ER draw for draw. Memory: draws x cells, the size of the fit's stored ``pi``.
    """
    from sdcbayes.models import latent_class as lc
    from sdcbayes.risk import posterior_assess

    S, C = pi.shape
    X = np.zeros((S, C), np.int32)
    frac = n / N
    if frac >= 1.0:  # the sample is the population: no one else to count
        return X
    rng = np.random.default_rng(random_seed)
    step = max(1, posterior_assess.CHUNK_ELEMENTS // max(S, 1) // (8 if kappa_given else 1))
    for c0 in range(0, C, step):
        sl = slice(c0, c0 + step)
        fs = fk[sl]
        # evaluate_poisson_cells' own arithmetic, so the draws are its to the bit
        lam_pop = N * pi[:, sl] if lam_stored is None else lam_stored[:, sl] / (1.0 - frac)
        m = lam_pop * (1.0 - frac)
        x = (lc.simulate_excess(m, rng, kap[:, None], n * pi[:, sl], f=fs[None, :])
             if kappa_given else rng.poisson(m))
        X[:, sl] = np.minimum(x, _COUNT_MAX)
    return X


_HASH_A, _MULT_A, _HASH_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715


def _spawn_states(seed: int, keys: np.ndarray) -> np.ndarray:
    """``SeedSequence(seed, spawn_key=k).generate_state(4, np.uint64)`` per row of ``keys``.

    ``keys`` (m, k): integers in [0, 2^32), one 32-bit word each. NumPy's
    ``SeedSequence`` (numpy/random/bit_generator.pyx: the entropy words, the seed's
    padded to the pool of 4, then the spawn key; ``mix_entropy``'s hashmix and mix;
    ``generate_state``), after O'Neill's seed_seq_fe (pcg-random.org, 2015), with the
    keys as columns of uint32 arrays, so that many keys cost a few array operations.
    """
    u = np.uint32
    m = keys.shape[0]
    run, x = [], int(seed)
    while True:  # the seed's 32-bit words, least significant first
        run.append(x & 0xFFFFFFFF)
        x >>= 32
        if not x:
            break
    run += [0] * max(0, 4 - len(run))
    ent = np.concatenate([np.tile(np.array(run, u), (m, 1)), keys.astype(u)], axis=1)
    hc = u(_HASH_A)
    with np.errstate(over="ignore"):  # uint32 arithmetic wraps, as in the C code

        def hashmix(v):
            nonlocal hc
            v = v ^ hc
            hc = u(hc * u(_MULT_A))
            v = v * hc
            return v ^ (v >> u(16))

        def mix(a, b):
            r = u(_MIX_L) * a - u(_MIX_R) * b
            return r ^ (r >> u(16))

        pool = [hashmix(ent[:, i]) for i in range(4)]
        for i_src in range(4):
            for i_dst in range(4):
                if i_src != i_dst:
                    pool[i_dst] = mix(pool[i_dst], hashmix(pool[i_src]))
        for i_src in range(4, ent.shape[1]):
            for i_dst in range(4):
                pool[i_dst] = mix(pool[i_dst], hashmix(ent[:, i_src]))
        h = u(_HASH_B)
        state = np.empty((m, 8), u)
        for i in range(8):
            v = pool[i % 4] ^ h
            h = u(h * u(_MULT_B))
            v = v * h
            state[:, i] = v ^ (v >> u(16))
    # as generate_state: little-endian words, pairs as uint64
    return state.astype("<u4").view("<u8").astype(np.uint64)


# PCG64's multiplier (numpy/random/src/pcg64/pcg64.h, PCG_DEFAULT_MULTIPLIER_128)
_PCG64_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_MASK128 = (1 << 128) - 1


def _pcg64_states(words: np.ndarray) -> list[dict]:
    """The state dicts of ``PCG64`` seeded with each row of ``words`` (m, 4) uint64.

    As NumPy's ``PCG64`` seeds itself from a seed sequence's four 64-bit words
    (numpy/random/_pcg64.pyx; pcg64.c ``pcg64_set_seed``, O'Neill's
    ``pcg_setseq_128_srandom_r``): initstate from words 0-1, sequence from words 2-3
    (high word first), inc = 2 seq + 1, then state = ((inc + initstate) a + inc) mod 2^128
    with a the multiplier; no buffered 32-bit value. Setting a generator's
    ``bit_generator.state`` to one of them costs about a fifth of making it anew.
    """
    out = []
    for s0, s1, q0, q1 in words.tolist():
        inc = ((((q0 << 64) | q1) << 1) | 1) & _MASK128
        state = ((inc + ((s0 << 64) | s1)) * _PCG64_MULT + inc) & _MASK128
        out.append({"bit_generator": "PCG64", "state": {"state": state, "inc": inc},
                    "has_uint32": 0, "uinteger": 0})
    return out


class _State(np.random.bit_generator.ISeedSequence):
    """A seed state computed beforehand (:func:`_spawn_states`), for ``PCG64``."""

    __slots__ = ("state",)

    def __init__(self, state: np.ndarray) -> None:
        self.state = state

    def generate_state(self, n_words, dtype=np.uint32) -> np.ndarray:
        return self.state


class _Predictive:
    r"""The posterior predictive draw of the released file's F (module docstring).

    One population per parameter draw, shared by every pattern: the observed cells' X
    (``X_obs``, :func:`_draw_observed`) and every pattern's top unobserved cells' X. A
    top cell's X, for every draw, comes from a generator keyed by the cell
    (``SeedSequence(seed, spawn_key=(1, *levels))``), gamma then Poisson over all draws,
    from its parameters (the same in every rectangle that lists the cell), so every
    pattern that lists the cell sees the same draw and the result depends on neither the
    batches nor ``draw_chunk``. Nothing of it is stored: a batch draws its patterns'
    distinct top cells when it needs them (:meth:`top_sum`), a cell listed in several
    batches is drawn again, to the same values. Each pattern's remainder is one draw of
    its matched negative binomial (Poisson where it is exact) per parameter draw, from a
    generator keyed by the pattern (``spawn_key=(2, p)``), independent across patterns.
    Negative binomials are drawn as gamma-Poisson mixtures,
    :math:`\mathrm{NegBin}(r, \rho) = \mathrm{Po}(G)`, :math:`G \sim
    \mathrm{Gamma}(r, (1-\rho)/\rho)` (Johnson, Kemp and Kotz, *Univariate Discrete
    Distributions*, 3rd ed., 2005, sec. 5.3), so that Poisson and overdispersed draws of
    one cell or pattern come from one stream in draw order.

    Memory: draws x observed cells (``X_obs``, int32, the size of the fit's ``pi``); the
    top cells' draws live only in the batch that draws them, within its patterns x draws
    and :data:`~sdcbayes.risk.posterior.CHUNK_ELEMENTS` (draws x distinct top cells, which
    outnumber the records, is never held).
    """

    def __init__(self, seed: int, X_obs: np.ndarray, ps, kap: np.ndarray, n: float) -> None:
        self.seed = int(seed)
        self.X_obs = X_obs
        self.ps = ps
        self.kap = kap
        self.n = n
        self.fin = np.isfinite(kap)
        self.k1 = np.where(self.fin, kap, 1.0)  # gamma shapes (1: placeholder, Poisson draws)
        self._pool: list | None = None  # _gamma_poisson's generators, made when first needed

    def _streams(self, keys) -> list:
        """One generator per key tuple, ``default_rng(SeedSequence(seed, spawn_key=key))``.

        The seeds of all the keys at once (:func:`_spawn_states`, about 0.3 us a key
        against 11 us for a ``SeedSequence``), each wrapped for ``PCG64``; the streams are
        the ``SeedSequence``'s to the bit (tests/test_released_predictive.py).
        """
        if not len(keys):
            return []
        keys = np.asarray(keys, np.int64).reshape(len(keys), -1)
        if keys.size and (keys.min() < 0 or keys.max() >= 2 ** 32):  # not one word each
            return [np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=k))
                    for k in keys.tolist()]
        return [np.random.Generator(np.random.PCG64(_State(st)))
                for st in _spawn_states(self.seed, keys)]

    def top_sum(self, rect, tops: np.ndarray, valid: np.ndarray,
                params: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        r"""Each pattern's summed X over its top cells ``tops`` (P, T, J) where ``valid``.

        Returns (P, draws), float (sums of integer counts: exact). Each distinct cell of
        the call is drawn once, :math:`X_c \sim \mathrm{NegBin}(\kappa, \rho_c)`
        (:math:`\mathrm{Po}(\lambda_c)` where :math:`\kappa = \infty`), from
        :meth:`~sdcbayes.models.latent_class.PatternSums.cells_many` on the patterns'
        rectangle ``rect`` (products over its free keys only) of the first pattern that
        lists it, in chunks of those patterns that keep patterns x draws x classes x T
        within :data:`~sdcbayes.risk.posterior.CHUNK_ELEMENTS`; or from ``params``, ``(pi,
        lam)`` (P, draws, T) of ``tops``, where the caller computed them for its own use
        (:func:`_score_batch`, by draw chunks: the same values, to the bit).
        """
        P, T = valid.shape
        S = self.kap.size
        xt = np.zeros((P, S))
        if not valid.any():
            return xt
        pos = np.argwhere(valid)  # the listings (pattern, slot), in row-major order
        cells, first, inv = np.unique(tops[valid], axis=0, return_index=True,
                                      return_inverse=True)
        inv = inv.reshape(-1)
        # each cell's parameters from the first pattern listing it; cells renumbered in
        # that pattern's order, so a chunk of patterns owns a run of cells
        own_i, own_t = pos[first, 0], pos[first, 1]
        by_owner = np.argsort(own_i, kind="stable")
        rank = np.empty_like(by_owner)
        rank[by_owner] = np.arange(by_owner.size)
        lrank = rank[inv]  # each listing's cell, renumbered
        by_cell = np.argsort(lrank, kind="stable")
        bounds = np.searchsorted(lrank[by_cell], np.arange(cells.shape[0] + 1))
        owners = np.unique(own_i)
        owned_by = own_i[by_owner]  # sorted
        fin, k1 = self.fin, self.k1
        # cells_many holds patterns x draws x classes x T
        step = max(1, CHUNK_ELEMENTS // max(S * self.ps.w.shape[1] * T, 1))
        r0 = 0
        for c0 in range(0, owners.size, step):
            own = owners[c0:c0 + step]
            r1 = int(np.searchsorted(owned_by, own[-1], side="right"))
            sel = by_owner[r0:r1]  # the cells these patterns own, in renumbered order
            if params is None:
                pic, lamc = self.ps.cells_many(rect, tops[own])  # (patterns, draws, T)
            else:
                pic, lamc = params[0][own], params[1][own]
            a = np.searchsorted(own, own_i[sel])
            pic, lamc = pic[a, :, own_t[sel]], lamc[a, :, own_t[sel]]  # (cells, draws)
            scale = np.where(fin, lamc / (k1 + self.n * pic), 0.0)  # (1 - rho) / rho
            X = self._gamma_poisson([(1, *c) for c in cells[sel].tolist()], scale, lamc)
            # the cells' listings, a bounded number at a time (a cell may be listed often):
            # each pattern's listed X summed in int64 (exact), then added to its row (sums
            # of integer counts, exact in float whatever the order)
            for l0 in range(bounds[r0], bounds[r1], step * T):
                li = by_cell[l0:min(l0 + step * T, bounds[r1])]
                rows = pos[li, 0]
                o = np.argsort(rows, kind="stable")
                rows = rows[o]
                first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
                xt[rows[first]] += np.add.reduceat(X[lrank[li[o]] - r0], first, axis=0)
            r0 = r1
        return xt

    #: Generators whose state :meth:`_gamma_poisson` sets, cell after cell (at most this
    #: many at a time)
    _POOL = 256

    def _gamma_poisson(self, keys: list, scale: np.ndarray, lam: np.ndarray) -> np.ndarray:
        r"""Per key (cell) its X over all draws: gamma then Poisson from the cell's stream.

        ``scale`` and ``lam`` (cells, draws): where the draw has a kappa, :math:`X \sim
        \mathrm{Po}(G\cdot\mathrm{scale})`, :math:`G \sim \mathrm{Gamma}(\kappa)`,
        else :math:`\mathrm{Po}(\lambda)` (the gamma drawn all the same, shape 1, so
        that the stream is one whatever the draw's law). Each cell's stream is
        ``default_rng(SeedSequence(seed, spawn_key=key))``, its S gammas first, then its S
        Poisson draws (:meth:`top_sum`). Rather than a new generator per cell (about 5 us
        each), a pool of :data:`_POOL` generators is given each cell's PCG64 state
        (:func:`_pcg64_states`, the state that ``PCG64(SeedSequence(...))`` starts in), the
        same streams to the bit (tests/test_released_speed.py). Returns (cells, draws)
        int64, clipped at :data:`_COUNT_MAX`.
        """
        n = len(keys)
        S = self.kap.size
        X = np.empty((n, S), np.int64)
        if not n:
            return X
        k = np.asarray(keys, np.int64).reshape(n, -1)
        if k.min() < 0 or k.max() >= 2 ** 32:  # not one word each: SeedSequence itself
            gens = self._streams(keys)
            states = None
        else:
            states = _pcg64_states(_spawn_states(self.seed, k))
            if self._pool is None:
                self._pool = [np.random.Generator(np.random.PCG64(0))
                              for _ in range(self._POOL)]
        for c0 in range(0, n, self._POOL):
            c1 = min(c0 + self._POOL, n)
            if states is not None:
                gens = self._pool[:c1 - c0]
                for g, st in zip(gens, states[c0:c1], strict=True):
                    g.bit_generator.state = st
                sub = gens
            else:
                sub = gens[c0:c1]
            gam = np.stack([g.standard_gamma(self.k1) for g in sub])
            mean = np.where(self.fin, gam * scale[c0:c1], lam[c0:c1])
            X[c0:c1] = np.stack([g.poisson(mu) for g, mu in zip(sub, mean, strict=True)])
        np.minimum(X, _COUNT_MAX, out=X)
        return X

    def add(self, out: dict, pb: np.ndarray, m: np.ndarray, f: np.ndarray, xe: np.ndarray,
            nbin: np.ndarray, r: np.ndarray, rho: np.ndarray, mean: np.ndarray) -> None:
        r"""Draw the patterns ``pb``'s remainders and add :math:`m_p/F_p` per draw.

        ``xe`` (patterns, draws): the explicit cells' drawn X; the remainder is
        :math:`\mathrm{NegBin}(r, \rho)` where ``nbin``, else :math:`\mathrm{Po}`
        (``mean``). Adds to ``out["er_pred"]`` and ``out["er_blank_pred"]``, and gives
        ``out["households"]`` (:class:`_Households`) the patterns' realised 1/F_p.
        """
        gens = self._streams([(2, int(p)) for p in np.asarray(pb).tolist()])
        shape = np.where(nbin, r, 1.0)
        scale = np.where(nbin, (1.0 - rho) / rho, 0.0)
        gam = np.stack([g.standard_gamma(a) for g, a in zip(gens, shape, strict=True)])
        lam = np.where(nbin, gam * scale, mean)
        rest = np.stack([g.poisson(mu) for g, mu in zip(gens, lam, strict=True)])
        inv = 1.0 / (f[:, None] + xe + rest)
        out["er_pred"] += inv.T @ m
        out["er_blank_pred"] += inv.T @ m
        hhs = out.get("households")
        if hhs is not None:  # the same F_p, for the household ER's predictive draw
            hhs.add_predictive(inv.T, pb)
