"""Closed-form disclosure-risk assessment of a microdata file.

``assess_closed_form(md)`` turns a :class:`sdcbayes.Microdata` into per-record
risk and a file summary with the Benedetti-Franconi individual risk (seed
``004_…`` eq. 1-3, ARCHITECTURE.md "Negative-binomial F | f"), the plug-in
p̂_k = f_k / F̂_k that sdcMicro and mu-Argus use, household risk and the
benchmark rule (seed ``001_…``).

Risk is evaluated once per cell (per distinct (f_k, p̂_k) pair inside the
array function) and then mapped to records by the record → cell index, so the
cost is dominated by counting, not by the number of records.

Imports NumPy, pandas and the closed-form modules only (no PyMC).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError, warn_at_caller
from sdcbayes.microdata import Microdata, MicrodataWarning
from sdcbayes.provenance import seed_or_drawn, stamp
from sdcbayes.risk.individual import (
    RISK_METHODS,
    benedetti_franconi_risk,
    plugin_inclusion_probability,
)
from sdcbayes.risk.measures import (
    benchmark_rule,
    check_max_global_risk,
    global_risk_threshold,
    household_risk,
)

# the declared public surface (the posterior route, decisions and the CLI import these;
# the CLI also imports the constant CLOSED_FORM_NO_WEIGHTS_NOTE, compare and the tests the
# PLUG_IN_* constants)
__all__ = [
    "Assessment",
    "SummaryRepr",
    "assess_closed_form",
    "cells_to_records",
    "check_microdata",
    "check_threshold",
    "global_threshold_summary",
    "plug_in_p",
    "plug_in_predictive",
    "record_index",
]


#: The caveat of a closed-form assessment of a file without weights or a sampling
#: fraction (:func:`assess_closed_form` warns with it and puts it in the summary's
#: ``warnings``). Spelled for Python; the CLI turns ``weight=`` and ``sampling_fraction=``
#: into its options (``sdcbayes.cli.cli_wording``).
CLOSED_FORM_NO_WEIGHTS_NOTE = (
    "no weight= or sampling_fraction= in the Microdata: the closed form takes the file as "
    "the whole population (each key combination's population count is its sample count), "
    "so every sample unique has risk 1; for a sample, give its weights or n/N (for a "
    "census, sampling_fraction=1 says so)"
)


#: What the closed form's intervals are over (its ``interval_kind``, in ``assess`` and in
#: ``compare``'s closed-form row): the unknown F_k given the plug-in p̂_k alone.
PLUG_IN_INTERVAL_KIND = "predictive given the plug-in p (no parameter uncertainty)"

#: Replicates of the plug-in predictive (:func:`plug_in_predictive`) by default:
#: ``compare_models``' ``plug_in_draws`` and ``assess_closed_form``'s ``n_draws``.
PLUG_IN_DRAWS = 400

#: Why a closed form of a file that is its own population has no interval.
PLUG_IN_DEGENERATE_NOTE = (
    "no interval: every key combination's plug-in p = f/F_hat is 1 (the file is taken as "
    "its own population, F_k = f_k), so the closed form's expected re-identifications, "
    "tau1 and tau2 are known counts with no spread"
)


def check_microdata(md, caller: str) -> None:
    """Raise :class:`InputError` unless ``md`` is a :class:`sdcbayes.Microdata` or quacks like one.

    A plain frame is the usual slip: without this check it fails deep inside with an
    AttributeError on ``.cells``. Duck types (anything with ``cells`` and ``record_cell``)
    pass, so tests and callers may hand over light stand-ins; the attributes are looked
    up on the type or the instance dict so that the lazy cell table is not built here.

    Parameters
    ----------
    md : object
        What the caller was given in place of a :class:`sdcbayes.Microdata`.
    caller : str
        Name of the calling function, quoted in the error message.

    Returns
    -------
    None
        Returns only when ``md`` is acceptable.

    Raises
    ------
    InputError
        For a data frame (pandas, or anything with ``to_pandas``) or an object
        without ``cells`` and ``record_cell``.
    """
    if isinstance(md, Microdata):
        return

    def has(name: str) -> bool:
        return hasattr(type(md), name) or name in getattr(md, "__dict__", {})

    if (isinstance(md, pd.DataFrame) or callable(getattr(md, "to_pandas", None))
            or not (has("cells") and has("record_cell"))):
        what = "a pandas DataFrame" if isinstance(md, pd.DataFrame) else type(md).__name__
        raise InputError(
            f"{caller} needs a sdcbayes.Microdata, got {what}; build one with "
            "sdcbayes.Microdata(frame, keys=[...], weight=...) and pass that"
        )


def check_threshold(threshold) -> float | None:
    """Check a risk threshold: a float strictly between 0 and 1, or None.

    A per-record risk is a probability, so only (0, 1) makes a useful cut: 0 flags every
    record, and at 1 or above none is ever flagged (the count is 0 whatever the data), which
    is how a percentage typed as a number (threshold=5 for 5%) would go unnoticed. The
    bounds and wording are those of ``sdcbayes assess --threshold`` and
    :func:`sdcbayes.risk.compare.compare_models`.

    Parameters
    ----------
    threshold : float or None
        The cut as given by the user.

    Returns
    -------
    float or None
        ``threshold`` as a float, or None when none was given.

    Raises
    ------
    InputError
        For a non-number (a bool or text included) or a value outside (0, 1).
    """
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer,
                                                                 np.floating)):
        raise InputError(
            f"threshold must be a number strictly between 0 and 1 (a per-record risk); got "
            f"{threshold!r} ({type(threshold).__name__}): pass e.g. threshold=0.1, or None"
        )
    value = float(threshold)
    if not (math.isfinite(value) and 0.0 < value < 1.0):
        raise InputError(
            f"threshold must lie strictly between 0 and 1 (a per-record risk is a "
            f"probability: 0.1 flags risks above 10%); got {threshold!r}"
        )
    return value


def record_index(md, n: int) -> pd.Index:
    """Return the index of ``md``'s input frame, so ``frame.join(result.records)`` lines up.

    Falls back to 0..n-1 when ``md`` keeps no frame of ``n`` rows (duck-typed stand-ins).

    Parameters
    ----------
    md : sdcbayes.Microdata
        The microdata (or a stand-in with a ``frame`` attribute).
    n : int
        Number of records the index must have.

    Returns
    -------
    pandas.Index
        A copy of ``md.frame.index``, or ``RangeIndex(n)``.
    """
    index = getattr(getattr(md, "frame", None), "index", None)
    if isinstance(index, pd.Index) and len(index) == n:
        return index.copy()
    return pd.RangeIndex(n)


def cells_to_records(cell_values: np.ndarray, record_cell: np.ndarray) -> np.ndarray:
    """Map a per-cell array to records; records outside every cell (-1) get NaN.

    Parameters
    ----------
    cell_values : array_like, shape ``(cell,)``
        One value per cell.
    record_cell : ndarray of int, shape ``(record,)``
        Each record's cell (``Microdata.record_cell``); -1 for dropped records.

    Returns
    -------
    ndarray of float, shape ``(record,)``
        The value of each record's cell, NaN for dropped records.
    """
    padded = np.append(np.asarray(cell_values, dtype=float), np.nan)
    # index -1 picks the NaN pad: dropped records have record_cell == -1
    return padded[record_cell]


def _counts_to_records(cell_counts, record_cell: np.ndarray):
    """Like :func:`cells_to_records` but keeps integer counts integer (shorter CSV)."""
    counts = np.asarray(cell_counts)
    if np.issubdtype(counts.dtype, np.integer):
        if record_cell.size == 0 or record_cell.min() >= 0:
            return counts[record_cell]
        out = pd.array(counts[record_cell], dtype="Int64")
        out[record_cell < 0] = pd.NA
        return out
    return cells_to_records(counts, record_cell)


class SummaryRepr:
    """Short ``repr`` and notebook table of a result: ``_title()`` and ``_summary_rows()``.

    The generated dataclass repr would print whole frames and posteriors; these print
    the headline numbers, and the frames stay one attribute away.
    """

    def _title(self) -> str:  # pragma: no cover - every result class defines it
        raise NotImplementedError

    def _summary_rows(self) -> list[tuple[str, str]]:  # pragma: no cover - likewise
        raise NotImplementedError

    def __repr__(self) -> str:
        rows = self._summary_rows()
        width = max((len(k) for k, _ in rows), default=0)
        return "\n".join([self._title(), *(f"  {k:<{width}}  {v}" for k, v in rows)])

    def _repr_html_(self) -> str:
        """A short summary table for notebooks."""
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                       f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                       for k, v in self._summary_rows())
        return (f"<table><caption style='text-align:left'><code>{html.escape(self._title())}"
                f"</code></caption>{body}</table>")


@dataclass(repr=False)  # SummaryRepr's short repr, not the generated one
class Assessment(SummaryRepr):
    """Per-record and per-cell risk with a file summary and provenance.

    Attributes
    ----------
    records : pandas.DataFrame
        One row per input record, in input order and indexed like the input frame
        (``md.frame.index``), so ``frame.join(result.records)`` and ``.loc[my_id]``
        work: ``record`` (the 0-based row number), ``cell``, ``fk``,
        ``Fk_hat``, ``risk`` (and ``risk_lo``, ``risk_hi`` for posterior models,
        ``household_risk`` when a household id is given).
    cells : pandas.DataFrame
        One row per cell: key values, ``fk``, ``Fk_hat``, ``risk`` (...).
    summary : dict
        File-level results (the keys of ``summary.json``: README.md, "Output files").
    provenance : dict
        :func:`sdcbayes.provenance.stamp` of the run.
    """

    records: pd.DataFrame
    cells: pd.DataFrame
    summary: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)

    def _summary_rows(self) -> list[tuple[str, str]]:
        """(label, value) pairs of the headline numbers, for :meth:`__repr__` and HTML."""
        s = self.summary
        level = s.get("interval_level")
        rows: list[tuple[str, str]] = []

        def num(key: str) -> str | None:
            v = s.get(key)
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                return None
            text = f"{v:,}" if isinstance(v, int) else f"{v:.4g}"
            iv = s.get(f"{key}_interval")
            if iv and len(iv) == 2:
                pct = f"{100 * level:.0f}% " if isinstance(level, (int, float)) else ""
                text += f" ({pct}interval {iv[0]:.4g} to {iv[1]:.4g})"
            return text

        n, n_in = s.get("n_records"), s.get("n_records_input")
        if isinstance(n, int):
            rows.append(("records", f"{n:,}" + (f" (of {n_in:,} input)"
                                                 if isinstance(n_in, int) and n_in != n else "")))
        for key, label in (
            ("n_cells", "cells"),
            ("n_sample_uniques", "sample uniques"),
            ("expected_reidentifications", "expected re-identifications"),
            ("tau1", "tau1"),
            ("tau2", "tau2"),
            ("max_risk", "max risk"),
            ("n_above_benchmark", "above benchmark"),
            ("n_above_threshold", f"risk > {s.get('risk_threshold')}"),
            ("household_expected_reidentifications", "household re-identifications"),
            ("n_draws", "posterior draws"),
        ):
            text = num(key)
            if text is not None:
                rows.append((label, text))
        if "global_threshold" in s:
            t = s["global_threshold"]
            rows.append((f"global threshold (rate < {s.get('max_global_risk')})",
                         "none needed (rate below the target)"
                         if not isinstance(t, (int, float)) or math.isnan(t)
                         else f"{t:.4g} ({s.get('n_above_global_threshold'):,} records above)"))
        rhat = (s.get("diagnostics") or {}).get("max_r_hat")
        if isinstance(rhat, (int, float)):
            rows.append(("max r_hat", f"{rhat:.3f}"))
        return rows

    def _title(self) -> str:
        s = self.summary
        method = f", method={s['method']!r}" if s.get("method") else ""
        return f"{type(self).__name__}(model={s.get('model', '')!r}{method})"

    def to_xarray(self):
        """Labelled view: a Dataset with dims ``record`` and ``cell`` and provenance attrs."""
        import xarray as xr

        # the record's cell index is a variable named record_cell ("cell" is a dim)
        rec = self.records.set_index("record").rename(columns={"cell": "record_cell"})
        ds = xr.Dataset(
            {f"{c}": ("record", rec[c].to_numpy()) for c in rec.columns}
            | {
                f"cell_{c}": ("cell", self.cells[c].to_numpy())
                for c in self.cells.columns
                if c in ("fk", "Fk_hat", "risk", "risk_lo", "risk_hi")
            },
            coords={"record": rec.index.to_numpy(), "cell": np.arange(len(self.cells))},
        )
        ds.attrs["model"] = self.summary.get("model", "")
        ds.attrs["sdcbayes_version"] = self.summary.get("sdcbayes_version", "")
        return ds


#: What :func:`global_threshold_summary` is computed on, by route (its ``risk`` argument).
GLOBAL_THRESHOLD_RISK = {
    "closed-form": "closed-form individual risk",
    "posterior": "posterior mean record risk",
}


def global_threshold_summary(record_risk, max_global_risk: float, risk: str) -> dict[str, Any]:
    """The summary entries of sdcMicro's global threshold for a target rate.

    :func:`sdcbayes.risk.measures.global_risk_threshold` on the records' risk, with
    the records above the threshold and the rate the file would have if each of them
    kept a risk of the threshold (mu-Argus's assumption behind the rule: a protected
    record's risk is not measured again here).

    Parameters
    ----------
    record_risk : array_like, shape ``(record,)``
        Each record's risk (NaN for records without one, left out).
    max_global_risk : float
        The target rate, strictly between 0 and 1 (sdcMicro's ``max_global_risk``).
    risk : str
        Which risk ``record_risk`` is, in words (a value of
        :data:`GLOBAL_THRESHOLD_RISK`), stored as ``global_threshold_risk``.

    Returns
    -------
    dict
        ``max_global_risk``; ``global_threshold`` (NaN when the rate is below the
        target already, 0.0 when no risk value of the file is below it, as sdcMicro's);
        ``n_above_global_threshold`` (records with risk strictly above the threshold,
        the ones to protect; 0 when none is needed); ``rate_at_global_threshold`` (the
        rate with each of them at the threshold: below the target); and
        ``global_threshold_risk`` (``risk``).
    """
    rate = check_max_global_risk(max_global_risk)
    t = global_risk_threshold(record_risk, rate)
    r = np.asarray(record_risk, dtype=float).reshape(-1)
    r = r[~np.isnan(r)]
    if math.isnan(t):
        n_above, capped = 0, r
    else:
        n_above, capped = int(np.count_nonzero(r > t)), np.minimum(r, t)
    return {
        "max_global_risk": rate,
        "global_threshold": t,
        "n_above_global_threshold": n_above,
        "rate_at_global_threshold": float(capped.mean()) if r.size else float("nan"),
        "global_threshold_risk": risk,
    }


def _weights_below_count_warning(n_below: int, model: str) -> str:
    """The caveat for key combinations whose weights sum below their sample count.

    ``model`` ("the closed form", "the negative-binomial model") takes such a cell as
    fully sampled (p = 1): the shared wording of :func:`assess_closed_form`, of the
    negbin assessment and of ``compare``.
    """
    return (f"{n_below} key combination(s) have weights summing below their sample count "
            f"(weights below 1 were allowed); {model} takes them as fully sampled (p = 1), "
            "which gives them the largest risk their count allows, 1/f_k")

def plug_in_p(md) -> np.ndarray:
    """The plug-in inclusion probability p̂_k = min(f_k / F̂_k, 1) of every cell of ``md``.

    Seed ``004_…`` eq. 4; a cell whose weights sum below its count (weights below 1)
    is taken as fully sampled, p̂_k = 1, as :func:`assess_closed_form` takes it.
    """
    fk = np.asarray(md.cells.fk, dtype=float)
    return np.minimum(fk / np.asarray(md.cells.Fk_hat, dtype=float), 1.0)


def _check_draws_and_seed(n_draws, random_seed, caller: str) -> None:
    """Refuse a ``n_draws`` below 2 or a ``random_seed`` that is no integer >= 0 (or None)."""
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer) or n_draws < 2:
        raise InputError(f"{caller}: n_draws must be an integer >= 2 (replicates of the "
                         f"plug-in predictive, {PLUG_IN_DRAWS} by default); got {n_draws!r}")
    if random_seed is not None and (isinstance(random_seed, bool) or not isinstance(
            random_seed, int | np.integer) or random_seed < 0):
        raise InputError(f"{caller}: random_seed must be None (a seed is drawn and stamped) "
                         f"or an integer >= 0; got {random_seed!r}")


class _RecordSum:
    """Per draw Σ_k m_k / F_k from the chunks of 1/F_k that the simulation hands over."""

    def __init__(self, m: np.ndarray, S: int) -> None:
        self.m = m
        self.total = np.zeros(S)

    def add(self, inv: np.ndarray, units) -> None:
        self.total += inv @ self.m[units]


class _Sinks:
    """Hands each chunk of realised 1/F_k to several collectors (they draw nothing)."""

    def __init__(self, sinks) -> None:
        self.sinks = sinks

    def add(self, inv: np.ndarray, units) -> None:
        for sink in self.sinks:
            sink.add(inv, units)


def plug_in_predictive(md, *, n_draws: int = PLUG_IN_DRAWS, random_seed: int,
                       quantiles=(0.05, 0.95)) -> dict[str, Any]:
    r"""The closed form's predictive intervals: the unknown F_k drawn given the plug-in p̂_k.

    Under the Benedetti-Franconi model (seed ``004_…`` eq. 1-2) the unknown population
    count of cell k is :math:`F_k = f_k + X_k`, :math:`X_k \sim \mathrm{NegBin}(f_k,
    \hat p_k)` independently over cells, with :math:`\hat p_k = f_k/\hat F_k`
    (:func:`plug_in_p`). Each of the ``n_draws`` replicates draws one F_k per cell and
    evaluates the file's realised quantities

    * :math:`\mathrm{ER} = \sum_i 1 / F_{k(i)}` over the records (re-identifications;
      :math:`\sum_k f_k / F_k` for complete keys),
    * :math:`\tau_1 = \#\{k : f_k = 1, F_k = 1\}`, :math:`\tau_2 = \sum_{f_k = 1} 1/F_k`,
    * with households, sdcMicro's hierarchical risk of the drawn population
      :math:`\sum_h |h|(1 - \prod_{i \in h}(1 - 1/F_{k(i)}))` and the same once per
      household (seed ``001_…`` Section 3.3),

    whose means are the closed form's estimates (:math:`E(1/F_k \mid f_k)`, :math:`P(F_k
    = 1 \mid f_k = 1) = \hat p_k`) and whose quantiles are the intervals. They carry the
    randomness of F_k given :math:`\hat p_k` only, no uncertainty about p
    (:data:`PLUG_IN_INTERVAL_KIND`). This one function gives both
    :func:`assess_closed_form`'s intervals and the closed-form row of
    :func:`sdcbayes.risk.compare.compare_models`, so that equal seeds and replicates give
    equal numbers. The draws are those of the posterior engine's exact simulation
    (:func:`sdcbayes.risk.posterior.evaluate_groups` on the plug-in as ``n_draws``
    identical draws of p, one group per cell): the same random stream, without the
    per-draw risks that identical draws would repeat.

    Cost: ``n_draws`` x cells negative-binomial draws, in chunks of cells; never draws x
    records (the households' sums go over (household, cell) pairs).

    Parameters
    ----------
    md : sdcbayes.Microdata
        The microdata (its cell table, and ``household_index`` when it has households).
    n_draws : int, default :data:`PLUG_IN_DRAWS`
        Replicates of the predictive, at least 2.
    random_seed : int
        Seed of the draws (an integer >= 0; the callers draw one when none is given).
    quantiles : sequence of float, default (0.05, 0.95)
        The lowest and highest bound the intervals (the 90% interval by default).

    Returns
    -------
    dict
        ``quantiles`` (sorted), ``interval_level``, ``interval_kind``, ``n_draws``,
        ``random_seed``; ``expected_reidentifications_interval``, ``tau1_interval``,
        ``tau2_interval`` (``[lo, hi]``) and, with households,
        ``household_expected_reidentifications_interval`` and
        ``household_expected_reidentified_households_interval``; ``draws``: the
        per-replicate values (keys ``er``, ``tau1``, ``tau2`` and ``household_er``,
        ``household_er_households``).
    """
    from sdcbayes.risk.posterior import (
        ConditionalGroups,
        _check_quantiles,
        _RealisedHouseholds,
        _simulate_exact,
    )

    qs = _check_quantiles(quantiles)
    _check_draws_and_seed(n_draws, random_seed, "plug_in_predictive")
    S = int(n_draws)
    fk = np.asarray(md.cells.fk, dtype=float)
    C = fk.size
    # the plug-in as S identical draws: broadcast views, no S x cells copy of p
    r = np.broadcast_to(fk, (S, C))
    rho = np.broadcast_to(plug_in_p(md), (S, C))
    # per_cell=False: no per-cell quantiles of F (the stream does not depend on it)
    groups = ConditionalGroups(f=fk, r=r, rho=rho, cell_group=np.arange(C, dtype=np.int64))
    record_cell = np.asarray(md.record_cell)
    kept = record_cell >= 0
    # ER is summed over records, each with its cell's 1/F_k: m_k records per cell, which is
    # f_k for complete keys and fewer under wildcard matching (a record with a missing key
    # counts in the f_k of every cell it matches, but is one record of its own cell)
    records = _RecordSum(np.bincount(record_cell[kept], minlength=C).astype(float), S)
    sinks: list[Any] = [records]
    realised = None
    hh = getattr(md, "household_index", None)
    if hh is not None:
        # records per (household, cell) pair: the household sums never need the records
        hh = np.asarray(hh)
        pair, counts = np.unique(hh[kept] * C + record_cell[kept], return_counts=True)
        realised = _RealisedHouseholds((pair // C, pair % C, counts.astype(float)), C, S)
        sinks.append(realised)
    draws: dict[str, np.ndarray] = {}
    # the generator as evaluate_groups seeds it, which draws nothing before these F_k
    _simulate_exact(groups, r, rho, np.random.default_rng(random_seed), draws, qs,
                    _Sinks(sinks))
    draws["er"] = records.total
    if realised is not None:
        draws["household_er"], draws["household_er_households"] = realised.finish()

    def interval(x) -> list[float]:
        # as risk/posterior_assess.py's intervals: NumPy's default (linear) quantiles
        return [float(np.quantile(x, qs[0])), float(np.quantile(x, qs[-1]))]

    out: dict[str, Any] = {
        "quantiles": list(qs),
        "interval_level": round(qs[-1] - qs[0], 10),
        "interval_kind": PLUG_IN_INTERVAL_KIND,
        "n_draws": S,
        "random_seed": random_seed,
        "expected_reidentifications_interval": interval(draws["er"]),
        "tau1_interval": interval(draws["tau1"]),
        "tau2_interval": interval(draws["tau2"]),
    }
    if realised is not None:
        out["household_expected_reidentifications_interval"] = interval(draws["household_er"])
        out["household_expected_reidentified_households_interval"] = interval(
            draws["household_er_households"])
    out["draws"] = draws
    return out


def assess_closed_form(md, method: str = "exact", threshold: float | None = None, *,
                       max_global_risk: float | None = None, interval: bool = False,
                       n_draws: int = PLUG_IN_DRAWS, random_seed: int | None = None,
                       quantiles=(0.05, 0.95)) -> Assessment:
    """Assess ``md`` with the closed-form (Benedetti-Franconi) individual risk.

    Parameters
    ----------
    md : sdcbayes.Microdata
        Validated microdata with keys (and optionally weights and households).
    method : {"exact", "approx", ...}, default "exact"
        One of :data:`sdcbayes.risk.individual.RISK_METHODS`, passed to
        :func:`sdcbayes.risk.individual.benedetti_franconi_risk` (checked first,
        before the cell table is built). ``"exact"`` (default) evaluates
        E(1/F_k | f_k) exactly (seed ``004_…`` eq. 3); ``"approx"`` reproduces
        sdcMicro / mu-Argus.
    threshold : float, optional
        Also count records whose risk exceeds this value.
    max_global_risk : float, optional
        A target re-identification rate strictly between 0 and 1 (e.g. 0.01, sdcMicro's
        default): the summary then gives sdcMicro's global threshold for it, the
        individual risk above which records are to be protected
        (:func:`sdcbayes.risk.measures.global_risk_threshold`; the entries of
        :func:`global_threshold_summary`). Default: none computed.
    interval : bool, default False
        Also give predictive intervals given the plug-in (:func:`plug_in_predictive`):
        ``summary["expected_reidentifications_interval"]``, ``"tau1_interval"``,
        ``"tau2_interval"`` (and with households
        ``"household_expected_reidentifications_interval"``,
        ``"household_expected_reidentified_households_interval"``), with
        ``interval_kind`` (and ``household_interval_kind``)
        :data:`PLUG_IN_INTERVAL_KIND`, ``quantiles``, ``interval_level`` and
        ``plug_in_draws``: the unknown F_k drawn given p̂_k, no parameter uncertainty.
        They are the numbers of ``compare_models``' closed-form row for the same
        ``random_seed`` and ``n_draws`` (its ``plug_in_draws``). The estimates are
        unchanged by it (bit for bit): they stay the closed-form formulas. With
        ``method="approx"`` the intervals are the same draws' (the realised
        re-identifications Σ f_k/F_k of each drawn population, and τ1, τ2 alike, need
        no formula for E(1/F_k | f_k)); only the estimate is sdcMicro's approximation,
        which can sit off the centre of the interval. Where every p̂_k is 1 (no weight
        and no sampling fraction, or a census) F_k = f_k is known: no interval is given,
        and ``summary["interval_note"]`` says why (:data:`PLUG_IN_DEGENERATE_NOTE`).
    n_draws : int, default :data:`PLUG_IN_DRAWS` (400)
        Replicates of the predictive (``interval=True`` only), at least 2.
    random_seed : int, optional
        Seed of the replicates (``interval=True`` only), an integer >= 0; without one a
        seed is drawn. Stamped as the provenance's ``settings["random_seed"]``: passing
        it back repeats the intervals.
    quantiles : sequence of float, default (0.05, 0.95)
        Lowest and highest bound of the intervals (``interval=True`` only): the 90%
        interval by default.

    Returns
    -------
    Assessment
        Per-record risk r_i = E(1/F_k | f_k) for the cell k of record i (``records``,
        indexed like ``md.frame``), and the
        file summary: expected re-identifications Σ r_i (sdcMicro's global risk
        ER), the plug-in estimates τ1 = Σ_{f_k=1} p̂_k (P(F_k = 1 | f_k = 1) = p_k
        under the negative binomial) and τ2 = Σ_{f_k=1} r_k, the benchmark rule
        and household risk 1 − Π(1 − r_i). ``summary["warnings"]`` (absent when
        there are none) lists the caveats: a file without weights read as the
        whole population, cells whose weights sum below their sample count.

    Raises
    ------
    InputError
        Before any work: ``md`` is no :class:`sdcbayes.Microdata`, an unknown
        ``method``, a ``threshold`` or ``max_global_risk`` outside (0, 1), or (with
        ``interval=True``) ``n_draws`` below 2, a negative ``random_seed`` or
        ``quantiles`` that are not two different probabilities.

    Warns
    -----
    sdcbayes.microdata.MicrodataWarning
        When ``md`` has neither weights nor a sampling fraction: every cell's
        population count is then its sample count (F̂_k = f_k), i.e. the file is
        read as the whole population and every sample unique has risk 1. The
        sentence, :data:`CLOSED_FORM_NO_WEIGHTS_NOTE`, is also in
        ``summary["warnings"]``. For a census, ``Microdata(...,
        sampling_fraction=1)`` gives the same numbers without the warning.

    Notes
    -----
    Records dropped for a missing key (``Microdata(missing="drop")``) have no risk
    (NaN) and are left out everywhere: ``n_records`` counts the kept records (and
    ``n_records_input`` all of them), the rate is ER / ``n_records``, and a
    household's risk is the product over its kept members (NaN for a dropped
    record, and for a household with no kept member). This is the convention of
    :func:`sdcbayes.risk.measures.household_risk` and
    :func:`sdcbayes.risk.measures.file_summary` too, so both routes agree on the
    same per-record risks. It differs from sdcMicro (which divides by all records
    and makes a household with an NA member NA) only where sdcMicro would have NA
    risks, and it has none of its own: it drops no record but lets a missing key
    match anything, as the default ``missing="wildcard"`` does.
    """
    check_microdata(md, "assess_closed_form")
    # a typo in method is reported now, not after the (expensive) cell table
    if not isinstance(method, str) or method not in RISK_METHODS:
        raise InputError(
            f"assess_closed_form: unknown method {method!r}; use one of "
            f"{', '.join(repr(m) for m in RISK_METHODS)} (\"exact\" is the default, "
            "\"approx\" reproduces sdcMicro / mu-Argus)"
        )
    threshold = check_threshold(threshold)
    if max_global_risk is not None:
        max_global_risk = check_max_global_risk(max_global_risk)
    if not isinstance(interval, bool | np.bool_):
        raise InputError(f"assess_closed_form: interval is True or False (whether to give "
                         f"the plug-in's predictive intervals); got {interval!r}")
    if interval:
        from sdcbayes.risk.posterior import _check_quantiles

        quantiles = _check_quantiles(quantiles)
        _check_draws_and_seed(n_draws, random_seed, "assess_closed_form")
    cells = md.cells
    fk = np.asarray(cells.fk, dtype=float)
    Fk_hat = np.asarray(cells.Fk_hat, dtype=float)
    # weights below 1 (accepted only with allow_weights_below_one) can sum below f_k:
    # such a cell is taken as fully observed (p = 1, risk 1/f_k), and the summary says so
    below = Fk_hat < fk
    pk = plugin_inclusion_probability(fk, Fk_hat,
                                      clip=bool(getattr(md, "allow_weights_below_one", False)))
    risk_cell = benedetti_franconi_risk(fk, pk, method=method)

    record_cell = np.asarray(md.record_cell)
    rec_risk = cells_to_records(risk_cell, record_cell)
    kept = record_cell >= 0
    records = pd.DataFrame(
        {
            "record": np.arange(record_cell.size),
            "cell": record_cell,
            "fk": _counts_to_records(cells.fk, record_cell),
            "Fk_hat": cells_to_records(Fk_hat, record_cell),
            "risk": rec_risk,
        },
        # the caller's own row labels: frame.join(records) and records.loc[my_id] work
        index=record_index(md, record_cell.size),
    )

    r = rec_risk[kept]
    above = benchmark_rule(r)
    unique = fk == 1
    summary: dict[str, Any] = {
        "model": "closed-form",
        "method": f"benedetti-franconi ({method})",
        "n_records": int(kept.sum()),
        "n_records_input": int(record_cell.size),
        "n_cells": int(fk.size),
        "n_sample_uniques": int(unique.sum()),
        "expected_reidentifications": float(r.sum()),
        "expected_reidentification_rate": float(r.sum() / max(r.size, 1)),
        "tau1": float(pk[unique].sum()),
        "tau2": float(risk_cell[unique].sum()),
        "n_above_benchmark": int(np.count_nonzero(above)),
        "max_risk": float(r.max()) if r.size else float("nan"),
        # the benchmark rule's centre: above 0.1, most records are risky and the rule
        # flags only the outliers among them
        "median_risk": float(np.median(r)) if r.size else float("nan"),
    }
    if threshold is not None:
        summary["risk_threshold"] = float(threshold)
        summary["n_above_threshold"] = int(np.count_nonzero(r > threshold))
    if max_global_risk is not None:
        summary |= global_threshold_summary(r, max_global_risk,
                                            GLOBAL_THRESHOLD_RISK["closed-form"])
    notes: list[str] = []
    if hasattr(md, "weights") and md.weights is None:
        # F_k = f_k: legitimate for a census or a register, but a sample read so is all risk
        # (tenfold on the demo: ER 1004 against 98.68 with its weights); sampling_fraction
        # sets weights, so a census declared with sampling_fraction=1 is not warned about
        notes.append(CLOSED_FORM_NO_WEIGHTS_NOTE)
        warn_at_caller(CLOSED_FORM_NO_WEIGHTS_NOTE, MicrodataWarning)
    if below.any():
        summary["n_cells_weights_below_count"] = int(below.sum())
        notes.append(_weights_below_count_warning(int(below.sum()), "the closed form"))
    if notes:
        summary["warnings"] = notes
    hh = getattr(md, "household_index", None)
    if hh is not None:
        hh = np.asarray(hh)
        # the shared convention: dropped records (NaN risk) are left out of their
        # household's product and get NaN themselves
        hrisk = household_risk(rec_risk, hh)
        records["household_risk"] = hrisk
        # sdcMicro's hierarchical risk: a record is re-identified when any member of
        # its household is, so the expected number of re-identified records is the
        # sum over records of their household's risk (seed 001_, household risk).
        _, first = np.unique(hh[kept], return_index=True)
        summary["n_households"] = int(first.size)
        summary["household_expected_reidentifications"] = float(hrisk[kept].sum())
        summary["household_expected_reidentified_households"] = float(hrisk[kept][first].sum())
    interval_settings: dict[str, Any] = {}
    if interval:
        # the seed is drawn here when none is given, and stamped: passing it back repeats
        random_seed = seed_or_drawn(random_seed)
        interval_settings = {"random_seed": random_seed, "plug_in_draws": int(n_draws),
                             "quantiles": list(quantiles)}
        if np.all(pk >= 1.0):
            # F_k = f_k in every cell: an interval of width 0 would read as certainty
            # measured, not as a file taken as its own population; said instead
            summary["interval_note"] = PLUG_IN_DEGENERATE_NOTE
        else:
            pred = plug_in_predictive(md, n_draws=int(n_draws), random_seed=random_seed,
                                      quantiles=quantiles)
            summary |= {"quantiles": pred["quantiles"], "interval_level": pred["interval_level"]}
            summary |= {k: pred[k] for k in (
                "expected_reidentifications_interval", "tau1_interval", "tau2_interval",
                "household_expected_reidentifications_interval",
                "household_expected_reidentified_households_interval") if k in pred}
            summary["interval_kind"] = PLUG_IN_INTERVAL_KIND
            if hh is not None:
                summary["household_interval_kind"] = PLUG_IN_INTERVAL_KIND
            summary["plug_in_draws"] = int(n_draws)

    cell_frame = cells.table.copy()
    cell_frame["risk"] = risk_cell
    prov = stamp(
        "closed-form",
        data_summary=md.summary(),
        # max_global_risk only when given: the stamp of a run without it is unchanged
        settings={"method": method, "threshold": threshold}
        | ({"max_global_risk": max_global_risk} if max_global_risk is not None else {})
        # likewise the intervals' seed and replicates, only with interval=True
        | interval_settings,
    )
    summary = {"sdcbayes_version": prov["sdcbayes_version"]} | summary
    return Assessment(records=records, cells=cell_frame, summary=summary, provenance=prov)
