"""Common machinery of the superpopulation models: priors as configuration.

Priors are data a methodologist compares, so they are plain dictionaries of
``{"dist": <PyMC distribution name>, **parameters}`` that can be printed,
serialised to JSON and stamped on results. A model class declares
``default_priors``; user overrides are merged key by key (user wins), and unknown
keys are rejected in one error that lists them all. A prior that PyMC builds
is checked when it is merged: its ``dist`` must be a PyMC distribution, its
parameters that distribution's and their values numbers, so that a typo fails
here, naming the fix, and not at build time inside PyMC.
"""

from __future__ import annotations

import copy
import difflib
import inspect
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from sdcbayes.exceptions import InputError

PriorSpec = dict[str, Any]


#: Arguments of a PyMC distribution that are not its parameters: the model sets them
#: (``dims``, ``shape``, the variable's name) or they belong to PyMC (``rng``, ``dtype``,
#: transforms), so a prior must not give them.
NOT_PARAMETERS = frozenset({
    "name", "size", "shape", "dims", "rng", "dtype", "observed", "initval", "transform",
    "default_transform", "total_size", "model", "class_name", "signature",
})


def merge_priors(
    defaults: Mapping[str, PriorSpec],
    overrides: Mapping[str, PriorSpec] | None,
    model_name: str,
    *,
    check_pymc: bool = True,
    supports: Mapping[str, str] | None = None,
    sizes: Mapping[str, int | None] | None = None,
) -> dict[str, PriorSpec]:
    """Merge user prior overrides into the model's defaults.

    Precedence: a user entry replaces the default entry for that parameter
    *whole* when it names a ``dist``; otherwise its fields update the default's
    (so ``{"alpha": {"sigma": 2}}`` widens the default distribution).

    Every merged entry whose default is a prior PyMC builds as it stands is then
    checked (:func:`prior_problems`): its ``dist`` must be a PyMC distribution, its
    parameters that distribution's and their values finite numbers. Defaults that
    are a model's own configuration (the latent-class profile prior,
    ``{"a": "marginal", "mass": "learn"}``) and name-only defaults (``{}``, as
    :func:`sdcbayes.risk.compare.parse_model_specs` checks names before a model
    exists) are left to the model's own checks. :func:`prior_to_rv` checks again
    when the model is built.

    Parameters
    ----------
    defaults : mapping
        The model's default priors, ``{name: {"dist": ..., **parameters}}``.
    overrides : mapping or None
        The user's entries, e.g. ``{"alpha": {"sigma": 2}}``.
    model_name : str
        Named in the error messages.
    check_pymc : bool
        Check the merged entries against PyMC (imports it). False for a model that
        checks its priors itself and has a route without PyMC (the latent-class Gibbs
        sampler), which must not pay for importing it.
    supports : mapping, optional
        The range of each parameter, ``"positive"`` or ``"unit"`` (the open interval
        (0, 1)), by prior name: an overriding distribution with mass outside it (a
        ``Normal`` on a positive ``alpha``) is refused, since PyMC would cut it off
        silently (a truncated prior) or diverge at the boundary. Names not listed
        are unrestricted.
    sizes : mapping, optional
        How many values each listed prior's parameters may hold: ``None`` one number
        (a scalar parameter), an int d one number or a vector of length d (a parameter
        with one value per domain or covariate). An overriding vector of another length
        fails PyMC's shape check only when the model is compiled. Names not listed
        are unrestricted (a Dirichlet's weights).

    Returns
    -------
    dict
        A new dictionary; ``defaults`` is not modified.

    Raises
    ------
    InputError
        When ``overrides`` is not a mapping; listing every unknown prior name at
        once, with the valid ones; or listing, for the merged priors, every unknown
        distribution, unknown parameter (with the distribution's parameters and a
        close match), non-numeric value, value of the wrong length (``sizes``) and
        distribution outside the parameter's range (``supports``) at once.
    """
    # Checked before the emptiness test: an empty list is as wrong as a full one.
    if overrides is not None and not isinstance(overrides, Mapping):
        raise InputError(
            f"priors for model {model_name!r} must be a mapping of prior name to settings, "
            f"such as {{'alpha': {{'sigma': 2}}}}; got a {type(overrides).__name__}: "
            f"{overrides!r}"
        )
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
    problems = []
    for name in overrides if check_pymc else ():
        default = defaults[name]
        # PyMC is imported only when a default names a distribution to check against.
        if not (isinstance(default, Mapping) and "dist" in default):
            continue
        import pymc

        if prior_problems(pymc, name, default):
            continue  # the model's own configuration: the model checks it
        found = prior_problems(pymc, name, merged[name], model_name)
        if not found and sizes is not None and name in sizes:
            found = _size_problems(name, merged[name], sizes[name], model_name)
        if not found and supports is not None and name in supports:
            found = _support_problems(pymc, name, merged[name], supports[name], model_name)
        problems += found
    if problems:
        raise InputError("; ".join(problems))
    return merged


def _unknown_distribution(pm_module, name, dist_name, model_name=None) -> str | None:
    """The message for a ``dist`` that names no PyMC distribution, else None.

    The one wording of this refusal, for merging (:func:`merge_priors`) and building
    (:func:`prior_to_rv`) alike.
    """
    dist = getattr(pm_module, dist_name, None) if isinstance(dist_name, str) else None
    base = getattr(pm_module, "Distribution", None)
    if isinstance(dist, type) and (base is None or issubclass(dist, base)):
        return None
    where = f"prior {name!r}" + (f" of model {model_name!r}" if model_name else "")
    names = [n for n in dir(pm_module) if isinstance(getattr(pm_module, n, None), type)
             and (base is None or issubclass(getattr(pm_module, n), base))]
    close = (difflib.get_close_matches(dist_name, names, n=1, cutoff=0.75)
             if isinstance(dist_name, str) else [])
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"{where}: PyMC has no distribution {dist_name!r}{hint}; use a name such as "
            "'HalfNormal', 'Gamma', 'LogNormal' or 'Exponential'")


def distribution_parameters(dist) -> list[str]:
    """Names of the parameters of a PyMC distribution class (from ``dist.dist``).

    ``*args``/``**kwargs`` and the arguments that are not parameters
    (:data:`NOT_PARAMETERS`) are left out.
    """
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in inspect.signature(dist.dist).parameters.values()
            if p.kind in kinds and p.name not in NOT_PARAMETERS]


def _is_number(value) -> bool:
    """A finite real number, or an array-like of them (a vector of Dirichlet weights)."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        return False
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):  # ragged nesting
        return False
    return arr.dtype.kind in "iuf" and arr.size > 0 and bool(np.all(np.isfinite(arr)))


def prior_problems(pm_module, name: str, spec: Mapping, model_name: str | None = None
                   ) -> list[str]:
    """What is wrong with one prior specification, as PyMC would build it.

    An unknown ``dist``; parameters its distribution does not take (listed with the
    ones it does, and the closest match); values that are not finite numbers.
    Empty when PyMC can build ``spec`` with :func:`prior_to_rv`.
    """
    where = f"prior {name!r}" + (f" of model {model_name!r}" if model_name else "")
    if "dist" not in spec:
        return [f"{where} names no 'dist'; give one, e.g. {{'dist': 'HalfNormal', 'sigma': 1}}"]
    dist_name = spec["dist"]
    problem = _unknown_distribution(pm_module, name, dist_name, model_name)
    if problem:
        return [problem]
    valid = distribution_parameters(getattr(pm_module, dist_name))
    given = [k for k in spec if k != "dist"]
    problems = []
    unknown = [k for k in given if k not in valid]
    if unknown:
        hints = []
        for k in unknown:
            close = difflib.get_close_matches(str(k), valid, n=1)
            if close:
                hints.append(f"{k!r}: did you mean {close[0]!r}?")
        hint = f" ({'; '.join(hints)})" if hints else ""
        set_by_model = sorted(k for k in unknown if k in NOT_PARAMETERS)
        note = f"; {set_by_model} are set by the model, not by a prior" if set_by_model else ""
        problems.append(f"{where}: {dist_name} has no parameter(s) {unknown}{hint}; its "
                        f"parameters are {valid}{note}")
    bad = [f"{k}={spec[k]!r}" for k in given if k in valid and not _is_number(spec[k])]
    if bad:
        problems.append(f"{where}: {dist_name} parameters must be finite numbers (or arrays of "
                        f"them); got {', '.join(bad)}")
    if not problems:
        domain = _outside_domain(pm_module, dist_name, {k: spec[k] for k in given})
        if domain:
            shown = ", ".join(f"{k}={spec[k]!r}" for k in given)
            problems.append(f"{where}: {dist_name}({shown}) is not a proper distribution "
                            f"({domain}); give parameters in its domain, e.g. a positive scale")
    return problems


def _size_problems(name: str, spec: Mapping, size: int | None, model_name: str) -> list[str]:
    """A parameter of ``spec`` holding more values than the prior's variable has."""
    bad = []
    for k, v in spec.items():
        if k == "dist":
            continue
        shape = np.shape(v)
        if shape == () or (size is not None and shape == (size,)):
            continue
        bad.append(f"{k}={v!r}")
    if not bad:
        return []
    allowed = ("one number" if size is None
               else f"one number or a vector of {size} (one per domain or covariate)")
    return [f"prior {name!r} of model {model_name!r}: {', '.join(bad)} has the wrong size; "
            f"each parameter of the prior of {name!r} must be {allowed}"]


#: Points outside each parameter range where a prior that fits it has no density.
_OUTSIDE = {"positive": (-1e-3, -1.0), "unit": (-1e-3, 1.001)}
_RANGE_TEXT = {
    "positive": ("positive", "(0, inf), e.g. LogNormal, HalfNormal, Gamma or Exponential"),
    "unit": ("a probability in (0, 1)", "(0, 1), e.g. Beta"),
}


def _support_problems(pm_module, name: str, spec: Mapping, support: str,
                      model_name: str) -> list[str]:
    """A prior with density outside its parameter's range (``"positive"``, ``"unit"``)."""
    import warnings

    params = {k: np.asarray(v, dtype=np.float64) for k, v in spec.items() if k != "dist"}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            dist = getattr(pm_module, spec["dist"]).dist(**params)
            outside = any(
                np.any(np.isfinite(np.asarray(
                    pm_module.logp(dist, np.float64(x)).eval(mode="FAST_COMPILE"))))
                for x in _OUTSIDE[support])
    except Exception:  # noqa: BLE001 - a distribution that cannot score a scalar: not ours
        return []
    if not outside:
        return []
    what, fix = _RANGE_TEXT[support]
    return [f"prior {name!r} of model {model_name!r}: {spec['dist']} puts mass outside the "
            f"range of {name!r}, which is {what}; PyMC would cut the prior off there "
            f"silently (or diverge at the edge): use a distribution on {fix}"]


def _outside_domain(pm_module, dist_name: str, params: Mapping) -> str | None:
    key = (dist_name, repr(sorted((k, np.asarray(v).tolist()) for k, v in params.items())))
    if key not in _DOMAIN_CHECKED:  # prior_to_rv checks again at every build: once is enough
        _DOMAIN_CHECKED[key] = _domain_problem(pm_module, dist_name, params)
    return _DOMAIN_CHECKED[key]


_DOMAIN_CHECKED: dict[tuple[str, str], str | None] = {}


def _domain_problem(pm_module, dist_name: str, params: Mapping) -> str | None:
    """Why PyMC cannot draw from or score ``dist_name(**params)``, else None.

    A negative scale or an empty interval (``sigma=-1``, ``lower > upper``) passes
    the number check but fails inside the sampler, after compilation, as a
    traceback. One draw and its log-density, evaluated without compiling C
    (FAST_COMPILE; a few milliseconds), find it up front. Not every PyMC
    distribution checks every parameter (the draw may then fail instead); what
    neither finds stays for the sampler.
    """
    import warnings

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            dist = getattr(pm_module, dist_name).dist(
                **{k: np.asarray(v, dtype=np.float64) for k, v in params.items()})
            value = pm_module.draw(dist, random_seed=0, mode="FAST_COMPILE")
            logp = np.asarray(pm_module.logp(dist, value).eval(mode="FAST_COMPILE"))
    except Exception as exc:  # noqa: BLE001 - PyMC's error, reworded by the caller
        lines = str(exc).strip().splitlines()  # PyTensor appends the graph's dump
        return lines[0].split(". ")[0][:120] if lines else type(exc).__name__
    # NaN only: a legitimate prior can put a draw where its density is infinite
    # (Gamma(0.001, 0.001) underflows to 0)
    if np.any(np.isnan(np.asarray(value, dtype=float))) or np.any(np.isnan(logp)):
        return "its draws or log-density are not numbers"
    return None


def prior_to_rv(pm_module, name: str, spec: PriorSpec, **kwargs):
    """Create the PyMC random variable described by ``spec`` inside the current model.

    Raises
    ------
    InputError
        What :func:`prior_problems` finds, e.g. for a model whose priors were merged
        without the PyMC check (``check_pymc=False``): an InputError, not PyMC's
        TypeError.
    """
    problems = prior_problems(pm_module, name, spec)
    if problems:
        raise InputError("; ".join(problems))
    spec = dict(spec)
    dist = getattr(pm_module, spec.pop("dist"))  # a distribution: checked above
    # Python floats such as 2.5 become float32 PyTensor constants (autocasting keeps
    # the smallest exact dtype), which puts prior normalising constants in single
    # precision; NumPy float64 scalars keep the log-density exact.
    params = {
        k: np.float64(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        for k, v in spec.items()
    }
    return dist(name, **params, **kwargs)


def whole_number(value) -> int | None:
    """``value`` as an int when it is a whole number (not a bool, not a string), else None."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating) and np.isfinite(value) and value == round(value):
        return int(value)
    return None


def check_whole(name: str, value, lo: int, hi: int | None = None, what: str = "") -> int:
    """``value`` as an int, or an InputError naming ``name`` and the range lo .. hi.

    For the models' counts of iterations, restarts, classes and draws: 2.5 or True
    would otherwise be truncated or read as 1 without a word.
    """
    v = whole_number(value)
    if v is None or v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"from {lo} to {hi}"
        raise InputError(f"{name} must be a whole number {rng}{what}; got {value!r}")
    return v


def checked_seed(random_seed, what: str = "random_seed") -> int:
    """``random_seed`` checked (None or a whole number >= 0), or without one a drawn seed.

    The predictive checks take the same seeds as :func:`sdcbayes.inference.fit`, and
    stamp the one used, drawn from the operating system when none is given, so that
    any replicate can be repeated.

    Raises
    ------
    InputError
        Anything else (a negative number, 2.5, text, True), before any work.
    """
    from sdcbayes.provenance import seed_or_drawn

    if random_seed is not None and (
            isinstance(random_seed, bool | np.bool_)
            or not isinstance(random_seed, int | np.integer) or random_seed < 0):
        raise InputError(f"{what} must be None (a seed is drawn and stamped) or an integer "
                         f">= 0; got {random_seed!r}")
    return int(seed_or_drawn(None if random_seed is None else int(random_seed)))


def predictive_stamps(model, random_seed: int, kind: str) -> dict[str, Any]:
    """Provenance of prior or posterior predictive draws, as netCDF-safe attrs.

    ``random_seed`` (the seed that repeats the draws), ``predictive`` (``kind``),
    ``model``, ``priors`` and ``data_summary`` (JSON text, decoded by
    :func:`sdcbayes.inference.posterior.decode_stamps`) and ``sdcbayes_version``.
    """
    from sdcbayes._version import __version__
    from sdcbayes.provenance import json_safe

    out: dict[str, Any] = {"random_seed": int(random_seed), "predictive": kind,
                           "model": str(getattr(model, "name", type(model).__name__)),
                           "sdcbayes_version": __version__}
    if getattr(model, "priors", None) is not None:
        out["priors"] = json.dumps(json_safe(model.priors), sort_keys=True)
    if callable(getattr(model, "data_summary", None)):
        out["data_summary"] = json.dumps(json_safe(model.data_summary()), sort_keys=True)
    return out


def key_names(keys, n_columns: int | None = None) -> list:
    """``keys`` as a list of distinct names, one per column when ``n_columns`` is given.

    Shared by the models' constructors and ``from_frame``: a bare string would be split
    into its characters, a set has no order to match columns by, and the same key
    twice would be fitted as two conditionally independent keys.

    Raises
    ------
    InputError
        A string, set, mapping or non-iterable; no names; a repeated name; a number of
        names other than ``n_columns``.
    """
    if isinstance(keys, (str, bytes, set, frozenset, Mapping)) or not isinstance(keys, Iterable):
        what = ("column names" if n_columns is None
                else f"{n_columns} key names (one per column of codes)")
        one = (f" (for one key write [{keys!r}])"
               if isinstance(keys, str) and n_columns in (None, 1) else "")
        raise InputError(f"keys must be a list of {what}; got {keys!r}{one}")
    keys = list(keys)
    if not keys:
        raise InputError("keys is empty: name at least one key column")
    if n_columns is not None and len(keys) != n_columns:
        raise InputError(f"keys gives {len(keys)} names but codes has {n_columns} columns: give "
                         "one name per column")
    repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
    if repeated:
        raise InputError(f"keys {repeated} are given more than once: name each key once")
    return keys


def frame_keys(frame, keys) -> list:
    """:func:`key_names` of a record-level ``frame``: present as columns, never missing.

    A missing value would become the level 'nan' when the keys are coded as text.
    """
    keys = key_names(keys)
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise InputError(f"key(s) {missing} are not columns of the data; columns are "
                         f"{list(frame.columns)[:30]}")
    if frame[keys].isna().any().any():
        raise InputError("the keys have missing values; recode them as a level "
                         "(e.g. 'missing') or drop those records before fitting")
    return keys


def check_cell_table(codes, counts, n_levels, keys=None, levels=None, *, model: str):
    """Check and normalise the cell table a model of the key cells is built on.

    The latent-class and log-linear models take the distinct observed cells (rows of
    ``codes``, one column per key) and their sample frequencies. A wrong table does
    not make their fits fail, it makes them wrong: record-level rows with counts of 1
    turn every record into a sample unique (the likelihood of the Poisson family does
    not change), and fewer key names than columns made the fits use the first columns
    only. Everything is checked here, before any work.

    Parameters
    ----------
    codes : array_like, shape (n_cells, J)
        Level codes 0 .. n_levels[j] - 1, whole numbers, one distinct row per cell.
    counts : array_like, shape (n_cells,)
        Sample frequency of each cell: whole numbers >= 1, finite.
    n_levels : array_like, shape (J,)
        Number of levels of each key: whole numbers >= 1.
    keys, levels : sequence, optional
        Key names (J distinct names; a single string is refused, not split into
        characters) and each key's level labels (n_levels[j] of them).
    model : str
        The model's name, as the messages call it.

    Returns
    -------
    codes : numpy.ndarray of intp, shape (n_cells, J)
    counts : numpy.ndarray of float, shape (n_cells,)
    n_levels : numpy.ndarray of int, shape (J,)
    keys : list of str
        ``key0 .. key{J-1}`` when not given.
    levels : list of list
        ``range(n_levels[j])`` when not given.

    Raises
    ------
    InputError
        Any of the above violated, naming the problem and the fix.
    """
    codes = np.asarray(codes)
    counts = np.asarray(counts)
    if codes.ndim != 2 or counts.ndim != 1 or codes.shape[0] != counts.shape[0] \
            or codes.shape[0] == 0 or codes.shape[1] == 0:
        raise InputError(
            f"the {model} model needs codes as an (n_cells, n_keys) array and counts as "
            f"(n_cells,), one count per row, non-empty; got shapes {codes.shape} and "
            f"{counts.shape}")
    if codes.dtype == bool or not (np.issubdtype(codes.dtype, np.integer) or (
            np.issubdtype(codes.dtype, np.floating) and np.all(np.isfinite(codes))
            and np.all(codes == np.round(codes)))):
        raise InputError(
            f"the {model} model needs codes that are whole numbers (level codes 0, 1, ...); "
            f"got dtype {codes.dtype}: code the keys first, e.g. with from_frame")
    if not np.issubdtype(counts.dtype, np.number) or counts.dtype == bool \
            or not np.all(np.isfinite(counts)) or np.any(counts < 1) \
            or np.any(counts != np.round(counts)):
        raise InputError(
            f"the {model} model needs counts that are finite whole numbers >= 1 (the sample "
            "frequencies of the observed cells)")
    J = codes.shape[1]
    nl = np.asarray(n_levels)
    if nl.shape != (J,) or nl.dtype == bool or not np.issubdtype(nl.dtype, np.number) \
            or not np.all(np.isfinite(nl)) or np.any(nl != np.round(nl)) or np.any(nl < 1):
        raise InputError(
            f"n_levels must give one whole number >= 1 per key ({J} columns of codes); got "
            f"{nl.tolist()}")
    nl = nl.astype(int)
    if codes.min() < 0 or np.any(codes.max(axis=0) >= nl):
        raise InputError(
            f"codes must lie in 0 .. n_levels - 1 for each key; got n_levels {nl.tolist()} "
            f"and codes from {codes.min(axis=0).tolist()} to {codes.max(axis=0).tolist()}")
    codes = codes.astype(np.intp)
    n_distinct = np.unique(codes, axis=0).shape[0]
    if n_distinct != codes.shape[0]:
        raise InputError(
            f"codes has {codes.shape[0] - n_distinct} repeated rows: the {model} model takes "
            "each observed cell once with its frequency (repeated rows, e.g. one per record, "
            "would count every record as a sample unique); aggregate them with "
            "np.unique(codes, axis=0, return_counts=True), or build the model with from_frame")
    keys = [f"key{j}" for j in range(J)] if keys is None else key_names(keys, J)
    if levels is None:
        levels = [list(range(int(L))) for L in nl]
    else:
        if isinstance(levels, (str, bytes)) or len(levels) != J:
            raise InputError(
                f"levels must give the level labels of each of the {J} keys (a list of {J} "
                "lists)")
        levels = [list(lv) for lv in levels]
        wrong = [f"{keys[j]!r}: {len(lv)} labels for {nl[j]} levels"
                 for j, lv in enumerate(levels) if len(lv) != nl[j]]
        if wrong:
            raise InputError(f"levels must give one label per level; {'; '.join(wrong)}")
    return codes, counts.astype(float), nl, keys, levels


def check_posterior_of(model, idata, use: str) -> None:
    """Refuse a posterior whose stamps say it was fitted to another model or data.

    :func:`sdcbayes.inference.fit` stamps ``model`` and ``data_summary`` on the
    posterior; they must equal ``model.name`` and ``model.data_summary()``, else the
    posterior's parameters would be combined with data they were not fitted to. A
    posterior without stamps (built by hand) is taken as it is.

    Parameters
    ----------
    model : SuperpopulationModel
    idata : arviz.InferenceData or xarray.DataTree
    use : str
        What is being done, for the message ("predict_population").

    Raises
    ------
    InputError
        Naming the stamped model or the data summary entries that differ.
    """
    from sdcbayes.inference.posterior import posterior_stamps  # ArviZ: loaded with idata
    from sdcbayes.provenance import json_safe

    attrs = posterior_stamps(idata)
    fitted = attrs.get("model")
    if isinstance(fitted, str) and fitted != model.name:
        raise InputError(
            f"{use}: the posterior was fitted with the {fitted!r} model, not {model.name!r}; "
            "pass the posterior of this model"
        )
    stamped = attrs.get("data_summary")
    if not isinstance(stamped, dict):  # absent, or a stamp that is not JSON
        return
    # the stamp went through JSON (NaN -> null, tuples -> lists): compare like with like
    own = json_safe(model.data_summary())

    def same(a, b) -> bool:
        if isinstance(a, int | float) and isinstance(b, int | float):
            return bool(np.isclose(float(a), float(b), rtol=1e-9, atol=0.0))
        return a == b

    differ = [f"{k} {stamped[k]!r} (fit) vs {v!r} (this model)" for k, v in own.items()
              if k in stamped and not same(stamped[k], v)]
    if differ:
        raise InputError(
            f"{use}: the posterior was fitted to other data than this model's "
            f"({'; '.join(differ[:5])}): pass the posterior fitted to this model, or fit it"
        )


class SuperpopulationModel:
    """Base class: a model over sufficient statistics with prior configuration.

    Subclasses set ``name`` and ``default_priors`` and implement :meth:`build`
    (returning a ``pm.Model`` with coords and ``dims=`` on every variable) and
    :meth:`data_summary`.
    """

    name: ClassVar[str] = "superpopulation"
    default_priors: ClassVar[dict[str, PriorSpec]] = {}
    #: Range of each prior's parameter ("positive", "unit"), see :func:`merge_priors`.
    prior_supports: ClassVar[dict[str, str]] = {}

    def __init__(self, priors: Mapping[str, PriorSpec] | None = None):
        # A model that checks its priors itself (``_check_priors``: the latent-class and
        # log-linear models, which have routes without PyMC) is not checked against PyMC
        # here, so building it never imports PyMC; prior_to_rv checks at build time.
        own = callable(getattr(self, "_check_priors", None))
        self.priors = merge_priors(self.default_priors, priors, self.name, check_pymc=not own,
                                   supports=self.prior_supports, sizes=self.prior_sizes())

    def prior_sizes(self) -> dict[str, int | None] | None:
        """How many values each prior's parameters may hold (:func:`merge_priors`'s ``sizes``).

        None (the default): unchecked.
        """
        return None

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


@contextmanager
def quiet_logs(names: Iterable[str] = ("pymc",), level: int = logging.WARNING) -> Iterator[None]:
    """Raise the ``names`` loggers (and their children with a level of their own) to ``level``.

    ``pymc.sample`` and the predictive samplers log "Initializing NUTS using
    jitter+adapt_diag...", "Sampling: [y]" and the like at INFO whatever their caller
    wants shown. A level is only ever raised (a user's higher level stays), and every
    level is restored on exit. The one home of this for the fits
    (:func:`sdcbayes.inference.fitting.fit`), the models' predictive checks and the
    ``decide`` command.
    """
    names = tuple(names)
    loggers = [logging.getLogger(name) for name in names] + [
        lg for name, lg in list(logging.root.manager.loggerDict.items())
        if name.startswith(tuple(f"{n}." for n in names)) and isinstance(lg, logging.Logger)
        and lg.level
    ]
    saved = [(lg, lg.level) for lg in loggers]
    try:
        for lg in loggers:
            if lg.getEffectiveLevel() < level:  # never lower a user's level
                lg.setLevel(level)
        yield
    finally:
        for lg, old in saved:
            lg.setLevel(old)
