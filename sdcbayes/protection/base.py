"""Shared pieces of the protection methods: the result container and input checks.

Every protection function of :mod:`sdcbayes.protection` takes a pandas
DataFrame, the names of the columns it acts on and (where it is random) a seed,
and returns a :class:`ProtectionResult` holding a *new* frame, a log of what
changed, a summary and a provenance stamp. The input frame is never modified.

This module may import NumPy and pandas only (and :mod:`sdcbayes.provenance`,
itself standard library and NumPy).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError
from sdcbayes.provenance import json_safe, seed_or_drawn, stamp

__all__ = ["ProtectionResult"]

_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class ProtectionResult:
    """A protected copy of the data and the record of what was done to it.

    Attributes
    ----------
    frame : pandas.DataFrame
        The protected data: a new frame, same rows and columns as the input, in
        input order. The input frame is left untouched. Under pandas'
        copy-on-write (always on from pandas 3) the columns the method did not
        change are shared with the input rather than copied; editing either
        frame in place copies the column first (:func:`output_frame`).
    log : pandas.DataFrame
        What changed. Methods that change single values (suppression, PRAM,
        recoding of categories) log one row per changed value or per mapped
        level; methods that change whole numeric columns (micro-aggregation,
        noise) log one row per variable or group. Each function documents its
        columns.
    summary : dict
        Parameters used and totals (for example suppressions per variable),
        JSON-serialisable where possible. Random methods add ``seed``: the
        integer seed used (drawn from the operating system when ``seed=None``
        was passed), so that passing it back repeats the run exactly; None when
        a NumPy Generator was passed (its state is the caller's to keep).
    provenance : dict
        :func:`sdcbayes.provenance.stamp` of the call, as the risk results carry:
        ``sdcbayes_version``, ``model`` (the function's name), ``settings`` (every
        argument but the frame, defaults included, with the seed used), ``data``
        (``n_records``, ``n_columns`` and the ``variables`` acted on), library
        versions and the command. Empty for a result built by hand.
    """

    frame: pd.DataFrame
    log: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict, repr=False)

    def __iter__(self):
        # Lets callers write ``frame, log = result`` as well.
        yield self.frame
        yield self.log


def _copy_on_write() -> bool:
    """Whether pandas' copy-on-write is on (always from pandas 3; an option in 2.x)."""
    if int(pd.__version__.split(".", 1)[0]) >= 3:
        return True
    return pd.options.mode.copy_on_write is True


def output_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A new frame for a method's result, on which it then sets the columns it changes.

    Under pandas' copy-on-write (always on from pandas 3) the columns are shared
    with ``frame`` (a shallow copy): setting a column replaces it in the new frame
    only, and any later in-place write to a shared column, by the method or by the
    caller, copies it first, so ``frame`` is never modified. Without copy-on-write
    (pandas 2.x default) a shared column could be written through by a caller who
    edits the result in place, so every column is copied, as before. Sharing keeps
    a chain of steps (``protect``) from holding one whole copy of the data per step:
    only the changed columns are new.
    """
    return frame.copy(deep=not _copy_on_write())


def check_frame(frame: Any, what: str = "frame") -> pd.DataFrame:
    """Raise :class:`InputError` unless ``frame`` is a pandas DataFrame."""
    if not isinstance(frame, pd.DataFrame):
        # the result is a pandas copy of the input: a polars/pyarrow table is converted by
        # the caller, who then knows the protected frame is pandas
        how = (
            f"convert it first with {what}.to_pandas()"
            if callable(getattr(frame, "to_pandas", None))
            else "pass the microdata as a DataFrame (pandas.read_csv, sdcbayes.read_microdata)"
        )
        raise InputError(f"{what} must be a pandas DataFrame, got {type(frame).__name__}; {how}")
    return frame


def check_columns(frame: pd.DataFrame, columns: Any, what: str = "columns") -> list[str]:
    """Normalise ``columns`` (one name or an iterable of names) and check they exist.

    Raises
    ------
    InputError
        Naming every missing column and the available ones, or when the list is
        empty or repeats a name.
    """
    if isinstance(columns, str):
        names = [columns]
    elif isinstance(columns, Iterable):
        names = list(columns)
    else:
        names = [columns]
    if not names:
        raise InputError(f"{what} is empty; name at least one column of the frame")
    missing = [c for c in names if c not in frame.columns]
    if missing:
        available = ", ".join(map(str, frame.columns[:20]))
        raise InputError(
            f"{what} {missing} not found in the frame; choose among the columns: {available}"
        )
    dup = sorted({str(c) for c in names if names.count(c) > 1})
    if dup:
        raise InputError(f"{what} repeats {dup}; name each column once")
    return names


def check_numeric_columns(frame: pd.DataFrame, columns: list[str], method: str) -> None:
    """Refuse boolean, non-numeric and complex ``columns`` of a numeric method.

    ``method`` names the step in the messages (micro-aggregation, noise addition,
    rank swapping).

    Raises
    ------
    InputError
        Naming the columns and how such a variable is protected instead.
    """
    flags = [c for c in columns if pd.api.types.is_bool_dtype(frame[c].dtype)]
    if flags:
        # bool counts as numeric to pandas, but averaging, jittering or ranking a yes/no
        # variable gives values like 0.33 or reorders ties that mean nothing
        raise InputError(
            f"columns {flags} are boolean (True/False); {method} needs numeric "
            "measurements: protect a yes/no variable with PRAM or recoding"
        )
    bad = [c for c in columns if not pd.api.types.is_numeric_dtype(frame[c].dtype)]
    if bad:
        raise InputError(
            f"columns {bad} are not numeric; {method} needs numeric variables (a categorical "
            f"variable is protected by recoding or PRAM, not by {method}; an ordinal one "
            "may be given as its codes)"
        )
    # a float conversion would drop the imaginary parts with only a warning
    cplx = [c for c in columns if pd.api.types.is_complex_dtype(frame[c].dtype)]
    if cplx:
        raise InputError(
            f"columns {cplx} are complex; {method} needs real values (pass the real part or "
            "the modulus)"
        )


def check_row_order(original: Any, protected: Any) -> None:
    """Refuse two frames whose rows carry the same index labels in a different order.

    Original and protected records are paired by position. That is right for
    identical indexes and the only option when the indexes differ as sets (e.g.
    one was reset), but the same unique labels in another order (after
    ``sort_values``, say) mean that position i holds different records in the
    two frames. Anything but two DataFrames (arrays) is paired by position as given.
    """
    if not (isinstance(original, pd.DataFrame) and isinstance(protected, pd.DataFrame)):
        return
    a, b = original.index, protected.index
    if a.equals(b) or not (a.is_unique and b.is_unique):
        return
    if len(a) == len(b) and a.get_indexer(b).min(initial=0) >= 0:
        raise InputError(
            "the protected frame's rows are in a different order from the original's (same "
            "index labels, other order), and records are paired by position; pass "
            "protected.loc[original.index]"
        )


def rng_from(seed: Any) -> np.random.Generator:
    """A NumPy Generator from an int, None, a SeedSequence or a Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"seed={seed!r} is not usable ({exc}); pass an integer, None or a numpy Generator"
        ) from None


def seeded_rng(seed: Any) -> tuple[np.random.Generator, Any]:
    """A NumPy Generator for ``seed`` and the seed to record in a result's summary.

    ``seed=None`` draws an integer seed from the operating system
    (:func:`sdcbayes.provenance.seed_or_drawn`, as ``fit`` does) and uses it, so an
    unseeded run can be repeated by passing the recorded seed back:
    ``numpy.random.default_rng(s)`` gives the same stream for the same ``s``. A
    given integer (or sequence of integers) is recorded as it is, a SeedSequence
    by its entropy when that alone rebuilds it; a Generator records None (its
    state is the caller's to keep).
    """
    if seed is None:
        seed = seed_or_drawn(None)
    rng = rng_from(seed)  # refuses an unusable seed before anything is recorded
    if isinstance(seed, np.random.Generator):
        return rng, None
    if isinstance(seed, np.random.SeedSequence):
        # default_rng(entropy) builds SeedSequence(entropy): the same stream only for a
        # root sequence with the default pool
        plain = seed.spawn_key == () and seed.pool_size == 4
        return rng, json_safe(seed.entropy) if plain else None
    return rng, json_safe(seed)


def stamped(
    function: Callable[..., ProtectionResult] | None = None,
    *,
    summarise: Mapping[str, Callable[[Any], Any]] | None = None,
) -> Any:
    """Decorate a protection function: its result gets a provenance stamp.

    The stamp (:func:`sdcbayes.provenance.stamp`) holds the function's name as
    ``model``; as ``settings`` every argument but the frame, defaults included,
    with ``seed`` replaced by the seed the function recorded in its summary
    (``summary["seed"]``, drawn when None was passed); as ``data`` the frame's
    numbers of records and columns and the variables acted on (the ``columns``,
    ``keys`` or ``column`` argument). One wrapper for every method, so the stamps
    cannot drift apart; the signature and docstring are the function's own.

    Used bare (``@stamped``) or with ``summarise`` (``@stamped(summarise={"risk":
    digest})``): a mapping of argument name to a function of its value whose result
    is stamped in place of the value, for per-record arguments (n numbers have no
    place in a provenance record). It runs after the function, so on arguments the
    function has accepted.
    """
    if function is None:
        return functools.partial(stamped, summarise=summarise)
    signature = inspect.signature(function)
    digests = dict(summarise or {})
    unknown = set(digests) - set(signature.parameters)
    if unknown:  # a typo would silently stamp the full value
        raise TypeError(f"stamped(summarise=...) names no argument of "
                        f"{function.__name__}: {sorted(unknown)}")

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> ProtectionResult:
        result = function(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        frame = arguments.pop("frame")
        if "seed" in arguments:
            arguments["seed"] = result.summary.get("seed")
        for name, digest in digests.items():
            arguments[name] = digest(arguments[name])
        acted = next(
            (arguments[a] for a in ("columns", "keys", "column") if a in arguments), None
        )
        data = {
            "n_records": len(frame),
            "n_columns": frame.shape[1],
            "variables": [acted] if isinstance(acted, str) else acted,
        }
        provenance = stamp(function.__name__, data_summary=data, settings=arguments)
        return dataclasses.replace(result, provenance=provenance)

    return wrapper


def codes_of(series: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes of a column (-1 for missing) and the levels they index.

    Categorical columns keep their category order (unused categories included);
    other columns are factorised in sorted order.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.cat.codes.to_numpy(dtype=np.int64), pd.Index(series.cat.categories)
    codes, uniques = pd.factorize(series, sort=True, use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64), pd.Index(uniques)


def pack_rows(columns: list[np.ndarray], radices: list[int]) -> np.ndarray:
    """Mixed-radix packing of non-negative code columns into one int64 per row.

    Equal tuples give equal packed values; when the product of the radices
    would overflow int64 the partial code is renumbered densely first.
    """
    if not columns:
        return np.zeros(0, dtype=np.int64)
    packed = np.asarray(columns[0], dtype=np.int64).copy()
    total = int(radices[0])
    for codes, radix in zip(columns[1:], radices[1:], strict=True):
        if total * int(radix) > _INT64_MAX:
            uniq, packed = np.unique(packed, return_inverse=True)
            packed = packed.reshape(-1).astype(np.int64)
            total = int(uniq.size)
        packed = packed * int(radix) + codes
        total *= int(radix)
    return packed


def same_cells(before: pd.Series, after: pd.Series) -> np.ndarray:
    """Boolean mask: cells whose value is the same in both columns (both missing: same).

    Values are compared only where both are observed, so nullable columns (``pd.NA``,
    which has no truth value in a comparison) work as well as NumPy ones.
    """
    na_b, na_a = pd.isna(before).to_numpy(), pd.isna(after).to_numpy()
    both = ~na_b & ~na_a
    same = na_b & na_a
    vb = before.to_numpy(dtype=object)[both]
    va = after.to_numpy(dtype=object)[both]
    same[both] = np.asarray(vb == va, dtype=bool)
    return same


def with_missing(frame: pd.DataFrame, column: str, mask: np.ndarray) -> pd.Series:
    """Column ``column`` of ``frame`` with the positions in ``mask`` set to missing.

    Integer columns become pandas' nullable ``Int64`` so that the other values
    stay integers; categorical columns keep their categories.
    """
    s = frame[column]
    if pd.api.types.is_integer_dtype(s.dtype) and not isinstance(s.dtype, pd.CategoricalDtype):
        s = s.astype("Int64")
    elif pd.api.types.is_bool_dtype(s.dtype):
        s = s.astype("boolean")
    return s.mask(pd.Series(mask, index=s.index))


def code_strata(frame: pd.DataFrame, strata: list[str] | None) -> tuple[np.ndarray, list[str]]:
    """Stratum number of each record (0-based, in sorted order) and the stratum labels.

    A single stratum column labels each stratum by its value as text. Several
    columns join their values with "-" after escaping, in each value, "\\" as
    "\\\\" and "-" as "\\-", so distinct strata never share a label:
    ("a-b", "c") is ``a\\-b-c`` and ("a", "b-c") is ``a-b\\-c``. Values
    without "-" or "\\" read as before (``1-2``). Only the distinct strata are
    formatted (no per-record string work).

    Raises
    ------
    InputError
        When a stratum column has missing values.
    """
    if not strata:
        return np.zeros(len(frame), dtype=np.int64), ["all"]
    parts = []
    for s in strata:
        c, _ = codes_of(frame[s])
        if (c < 0).any():
            raise InputError(
                f"stratum column {s!r} has missing values; fill them (e.g. with a level "
                "'unknown') before working within strata"
            )
        parts.append(c)
    packed = pack_rows(parts, [int(p.max()) + 1 if p.size else 1 for p in parts])
    _, first, inv = np.unique(packed, return_index=True, return_inverse=True)
    if len(strata) == 1:
        names = [str(frame[strata[0]].iloc[i]) for i in first]  # one string per stratum
    else:
        names = [
            "-".join(_escaped(str(frame[s].iloc[i])) for s in strata) for i in first
        ]
    return inv.reshape(-1).astype(np.int64), names


def _escaped(text: str) -> str:
    # "-" separates the values of a label: one inside a value is escaped (and so is
    # the escape character), else ("a-b", "c") and ("a", "b-c") would both read a-b-c.
    return text.replace("\\", "\\\\").replace("-", "\\-")
