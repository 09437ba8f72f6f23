"""Beta-binomial model of domain counts (Zaslavsky & Horton 1998, seed 003).

May import: NumPy, SciPy, pandas, xarray, PyMC, PyTensor, ``sdcbayes`` (data layer,
exceptions) and ``sdcbayes.models.base``. Must not import ``sdcbayes.inference`` or
``sdcbayes.risk``.

A population is partitioned into domains ``i`` (small areas) with known population
size ``N_i`` and sample size ``n_i``; a class (for example one occupation) cuts across
the domains. ``y_i`` records of the sample and ``Y_i`` units of the population of
domain ``i`` belong to the class. The model is built on the per-domain table
``(y_i, n_i, N_i)``, never on records; without covariates its likelihood is evaluated
once per distinct ``(y_i, n_i)`` pair, weighted by the pair's number of domains (rows
with a multiplicity, ``weights``, count that many times;
:meth:`BetaBinomialDomainModel.build`).

Also defines :class:`PredictiveCheck`, the summary of a prior or posterior predictive
check that every model of this package returns.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import xarray as xr

from sdcbayes import _compat
from sdcbayes.exceptions import DataError, InputError
from sdcbayes.models.base import (
    PriorSpec,
    SuperpopulationModel,
    check_posterior_of,
    check_whole,
    checked_seed,
    merge_priors,
    predictive_stamps,
    prior_to_rv,
    quiet_logs,
)

__all__ = ["BetaBinomialDomainModel", "PredictiveCheck"]

PARAMETERISATIONS = ("mean-concentration", "alpha-beta")


# --------------------------------------------------------------------------------------
# Predictive checks (shared by the models of this package)
# --------------------------------------------------------------------------------------


def _group(idata, name: str) -> xr.Dataset:
    """Return group ``name`` of an InferenceData or an ``xarray.DataTree`` as a Dataset.

    One small accessor so that the switch to ArviZ >= 1 (DataTree) is a one-line change.
    """
    try:
        group = idata[name]
    except KeyError:
        raise InputError(
            f"the inference result has no {name!r} group; pass the object returned by "
            "sdcbayes.inference.fit (or pm.sample) for this model"
        ) from None
    if isinstance(group, xr.Dataset):
        return group
    return group.to_dataset()


@dataclasses.dataclass
class PredictiveCheck:
    """A prior or posterior predictive check, reduced to the statistics a methodologist reads.

    Attributes
    ----------
    kind : str
        ``"prior"`` or ``"posterior"``.
    statistics : xarray.Dataset
        One variable per test statistic ``T``, dims ``("chain", "draw")``: ``T`` of each
        replicated data set.
    observed : dict of str to float
        ``T`` of the observed data (NaN where the statistic has no observed counterpart,
        e.g. a population quantity).
    idata : arviz.InferenceData or xarray.DataTree
        The raw predictive draws as PyMC returned them, their predictive group stamped
        (:func:`sdcbayes.models.base.predictive_stamps`).
    random_seed : int or None
        The seed that repeats the check (drawn and recorded when none was given).
    """

    kind: str
    statistics: xr.Dataset
    observed: dict[str, float]
    idata: Any
    random_seed: int | None = None

    def summary(self, interval: float = 0.9) -> pd.DataFrame:
        """One row per statistic: observed value, predictive mean, quantiles and p-value.

        ``ppp`` is the predictive p-value P(T_rep >= T_obs) (Gelman et al., BDA ch. 6):
        values near 0 or 1 flag a statistic the model does not reproduce.
        """
        lo, hi = (1.0 - interval) / 2.0, (1.0 + interval) / 2.0
        rows = {}
        for name, da in self.statistics.data_vars.items():
            values = np.asarray(da.values, dtype=float).ravel()
            obs = float(self.observed.get(name, np.nan))
            rows[name] = {
                "observed": obs,
                "mean": values.mean(),
                f"q{lo:.3g}": np.quantile(values, lo),
                "median": np.median(values),
                f"q{hi:.3g}": np.quantile(values, hi),
                "ppp": float(np.mean(values >= obs)) if np.isfinite(obs) else np.nan,
            }
        frame = pd.DataFrame.from_dict(rows, orient="index")
        frame.index.name = "statistic"
        return frame


def _stamp_group(idata, group: str, stamps: dict[str, Any]) -> None:
    """Write ``stamps`` on group ``group`` of ``idata`` (InferenceData), when present."""
    if idata is not None and group in _compat.group_names(idata):
        idata[group].attrs.update(stamps)


def data_fingerprint(*arrays) -> str:
    """Short SHA-256 of data vectors (dtype, shape and values), for the data stamps.

    Totals cannot tell two tables apart that differ only in how the counts are spread
    (:func:`sdcbayes.models.base.check_posterior_of` compares the stamps).
    """
    digest = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        digest.update(f"{a.dtype.str}{a.shape}".encode())
        digest.update(a.tobytes())
    return digest.hexdigest()[:16]


# --------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------


def _as_count_vector(values, name: str) -> np.ndarray:
    """Validate a 1-D vector of non-negative integer counts and return it as int64."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(
            f"{name} must be a 1-D vector of counts, got shape {arr.shape}; "
            "pass one value per domain"
        )
    if arr.size == 0:
        raise InputError(f"{name} is empty; pass at least one domain")
    try:
        as_float = arr.astype(float)
    except (TypeError, ValueError):
        raise InputError(
            f"{name} must hold numbers; convert the column to integers first"
        ) from None
    if not np.all(np.isfinite(as_float)):
        raise InputError(f"{name} has missing or infinite values; drop or fill those domains first")
    if np.any(as_float < 0) or np.any(as_float != np.round(as_float)):
        bad = arr[(as_float < 0) | (as_float != np.round(as_float))][:5]
        raise InputError(f"{name} must hold non-negative whole numbers; found {bad.tolist()}")
    return as_float.astype(np.int64)


def _distinct_pairs(y: np.ndarray, n: np.ndarray, weights: np.ndarray | None = None):
    """Distinct ``(y_i, n_i)`` pairs, in order of first occurrence, with their multiplicities.

    Returns
    -------
    pair_y, pair_n : numpy.ndarray of int64, shape (n_pairs,)
        The distinct pairs.
    pair_count : numpy.ndarray of int64, shape (n_pairs,)
        ``m_u``: how many domains hold pair ``u``; with ``weights`` (the multiplicity
        of each row) the sum of the weights of the rows holding it.
    pair_of_domain : numpy.ndarray of int64, shape (n_domains,)
        The pair of each domain: ``y == pair_y[pair_of_domain]``. First-occurrence
        order makes this the identity when no pair repeats.
    """
    # y_i <= n_i < 2**31 (checked by the constructor): the key n (max y + 1) + y fits in
    # int64 and decodes back exactly
    base = int(y.max()) + 1
    codes, keys = pd.factorize(n * base + y, sort=False)
    keys = np.asarray(keys, dtype=np.int64)
    counts = np.bincount(codes, weights=weights, minlength=keys.size).astype(np.int64)
    return keys % base, keys // base, counts, codes.astype(np.int64)


def _weighted_betabinomial_logp(value, n, alpha, beta, weight):
    """``m_u log BetaBin(y_u; n_u, alpha, beta)``: pair ``u`` stands for ``m_u`` domains.

    PyMC's own BetaBinomial log-density, so each term is the per-domain graph's term.
    """
    import pymc as pm

    return weight * pm.logp(pm.BetaBinomial.dist(n=n, alpha=alpha, beta=beta), value)


def _domain_frequencies(values: np.ndarray) -> dict[str, int]:
    """Return the counts of counts {j: #domains with y = j} for j = 0, 1, 2."""
    return {f"n_domains_y{j}": int(np.sum(values == j)) for j in (0, 1, 2)}


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


class BetaBinomialDomainModel(SuperpopulationModel):
    r"""Beta-binomial superpopulation model of a class's counts across domains.

    Zaslavsky & Horton (1998, seed 003, section 2):

    .. math::

        \theta_i \sim \mathrm{Beta}(\alpha, \beta), \qquad
        y_i \mid \theta_i \sim \mathrm{Bin}(n_i, \theta_i), \qquad
        Y_i - y_i \mid \theta_i \sim \mathrm{Bin}(N_i - n_i, \theta_i),

    so that the likelihood of the hyperparameters is the marginal
    :math:`\prod_i \mathrm{BetaBin}(y_i; n_i, \alpha, \beta)` (``y`` is the observed
    variable of the PyMC graph, on the distinct ``(y_i, n_i)`` pairs with their
    multiplicities when there are no covariates, see :meth:`build`; :math:`\theta_i`
    is integrated out), and the population
    count follows the seed's posterior predictive (the Polya type I density of section 2)

    .. math::

        Y_i - y_i \mid y_i, \alpha, \beta \sim
        \mathrm{BetaBin}(N_i - n_i,\ \alpha + y_i,\ \beta + n_i - y_i).

    The seed treats :math:`(\alpha, \beta)` as known and notes that, with many domains,
    their estimation error is of lower order; here they get a full posterior.

    Parameterisations
    -----------------
    ``"mean-concentration"`` (default): :math:`\mu = \alpha / (\alpha + \beta)` and
    :math:`\kappa = \alpha + \beta`, which are nearly independent a posteriori and easy to
    give priors; ``alpha`` and ``beta`` are recorded as deterministics.
    ``"alpha-beta"``: priors directly on :math:`\alpha, \beta`; ``mean`` and
    ``concentration`` are recorded as deterministics.

    Domain covariates (seed 003, section 2: "the modification for covariates is not
    difficult"): :math:`\operatorname{logit} \mu_i = b_0 + x_i^\top b`, one concentration
    :math:`\kappa`, :math:`\alpha_i = \mu_i \kappa`, :math:`\beta_i = (1 - \mu_i)\kappa`.
    Only with the mean-concentration parameterisation. The covariates are used as given
    (centre them for easier sampling; the intercept is then the logit mean at the centre).

    Parameters
    ----------
    y, n, N : array-like of int, shape (n_domains,)
        Sample count of the class, sample size and population size of each domain;
        ``0 <= y_i <= n_i <= N_i``.
    domain_names : sequence, optional
        Labels of the domains (coordinate ``domain``); default ``0 .. n_domains - 1``.
    covariates : pandas.DataFrame or array-like, shape (n_domains, n_covariates), optional
        Domain-level covariates (coordinate ``covariate``). A DataFrame's column names
        label the coefficients.
    priors : dict, optional
        Overrides of :attr:`priors`, merged key by key (see
        :func:`sdcbayes.models.base.merge_priors`). Valid names depend on the
        parameterisation: ``mean, concentration`` / ``alpha, beta`` /
        ``intercept, coefficients, concentration`` (with covariates).
    parameterisation : {"mean-concentration", "alpha-beta"}
    weights : array-like of int, shape (n_domains,), optional
        Multiplicity of each row: the number of identical domains it stands for (a
        collapsed table). Whole numbers >= 0; not with covariates. A row of weight
        ``w`` counts ``w`` times in the likelihood: it adds ``w`` to its pair's
        ``pair_count`` (see :meth:`build`), so the posterior is exactly that of the
        table with each row repeated ``w`` times, and PSIS-LOO
        (:func:`sdcbayes.inference.loo`) leaves out one of those ``w`` domains at a
        time (``n_data_points`` is the sum of the weights; a pair whose rows all
        have weight 0 has ``pair_count`` 0 and no LOO entry). Everything per domain
        (``domain`` coordinate, predictive checks, :meth:`predict_population`) keeps
        one entry per row. Default: 1 each.

    Notes
    -----
    Default priors: ``mean ~ Beta(1, 1)`` (uniform class share);
    ``concentration ~ LogNormal(2, 2)`` (median 7.4, 95% range 0.15--370, so both very
    overdispersed and nearly binomial domains are plausible); ``alpha, beta ~
    LogNormal(0, 2)``; with covariates ``intercept ~ Normal(0, 2.5)`` and
    ``coefficients ~ Normal(0, 1)`` (per unit of the covariate: standardise them).
    """

    name: ClassVar[str] = "beta-binomial"
    default_priors: ClassVar[dict[str, PriorSpec]] = {
        "mean": {"dist": "Beta", "alpha": 1.0, "beta": 1.0},
        "concentration": {"dist": "LogNormal", "mu": 2.0, "sigma": 2.0},
        "alpha": {"dist": "LogNormal", "mu": 0.0, "sigma": 2.0},
        "beta": {"dist": "LogNormal", "mu": 0.0, "sigma": 2.0},
        "intercept": {"dist": "Normal", "mu": 0.0, "sigma": 2.5},
        "coefficients": {"dist": "Normal", "mu": 0.0, "sigma": 1.0},
    }
    prior_supports: ClassVar[dict[str, str]] = {
        "mean": "unit", "concentration": "positive", "alpha": "positive", "beta": "positive"}

    #: Which prior names each configuration uses.
    _PRIOR_NAMES: ClassVar[dict[tuple[str, bool], tuple[str, ...]]] = {
        ("mean-concentration", False): ("mean", "concentration"),
        ("alpha-beta", False): ("alpha", "beta"),
        ("mean-concentration", True): ("intercept", "coefficients", "concentration"),
    }

    def __init__(
        self,
        y,
        n,
        N,
        domain_names: Sequence | None = None,
        covariates=None,
        priors: Mapping[str, PriorSpec] | None = None,
        parameterisation: str = "mean-concentration",
        weights=None,
    ):
        if parameterisation not in PARAMETERISATIONS:
            raise InputError(
                f"unknown parameterisation {parameterisation!r}; "
                f"use one of {list(PARAMETERISATIONS)}"
            )
        self.y = _as_count_vector(y, "y")
        self.n = _as_count_vector(n, "n")
        self.N = _as_count_vector(N, "N")
        if not (self.y.size == self.n.size == self.N.size):
            raise InputError(
                f"y, n and N must have one value per domain; got lengths "
                f"{self.y.size}, {self.n.size}, {self.N.size}"
            )
        for bad, message in (
            (self.y > self.n, "y_i > n_i (more class records than records)"),
            (self.n > self.N, "n_i > N_i (larger sample than population)"),
        ):
            if np.any(bad):
                idx = np.flatnonzero(bad)[:5].tolist()
                raise InputError(f"{message} in domain position(s) {idx}; check the counts")
        if np.any(self.n >= 2**31):
            # PyMC stores integer data as int32 (pm.Data), and BetaBinomial's n must be an
            # integer: a larger n_i would wrap around to a negative sample size
            raise InputError(
                f"sample sizes n_i >= 2**31 (largest {int(self.n.max())}) cannot be held by "
                "the model's integer data; check the table (n is the number of sampled records)"
            )
        self.weights = None if weights is None else _as_count_vector(weights, "weights")
        if self.weights is not None and self.weights.size != self.y.size:
            raise InputError(
                f"weights must have one value per domain ({self.y.size}); got "
                f"{self.weights.size}"
            )
        if self.n.sum() == 0:
            raise InputError(
                "every domain has n_i = 0, so there is nothing to fit; pass sampled domains"
            )
        if self.weights is not None and np.sum(self.weights * (self.n > 0)) == 0:
            raise InputError(
                "every domain with n_i > 0 has weight 0, so there is nothing to fit; give "
                "sampled domains a positive weight (their multiplicity)"
            )
        n_domains = self.y.size
        if domain_names is None:
            domain_names = np.arange(n_domains)
        domain_names = list(domain_names)
        if len(domain_names) != n_domains:
            raise InputError(
                f"domain_names has {len(domain_names)} labels for {n_domains} domains; "
                "pass one label per domain"
            )
        if len(set(domain_names)) != n_domains:
            raise InputError("domain_names has duplicate labels; domains must be labelled uniquely")
        self.domain_names = domain_names

        self.covariates, self.covariate_names = self._validate_covariates(covariates, n_domains)
        has_cov = self.covariates is not None
        if has_cov and self.weights is not None:
            raise InputError(
                "weights (multiplicities) are not supported with covariates, where every "
                "domain keeps its own likelihood term; repeat each row weight times instead"
            )
        if has_cov and parameterisation != "mean-concentration":
            raise InputError(
                "covariates act on the logit of the domain mean, so they need "
                "parameterisation='mean-concentration'"
            )
        self.parameterisation = parameterisation
        names = self._PRIOR_NAMES[(parameterisation, has_cov)]
        defaults = {k: self.default_priors[k] for k in names}
        label = f"{self.name} ({parameterisation}{', covariates' if has_cov else ''})"
        sizes: dict[str, int | None] = dict.fromkeys(defaults)
        if has_cov:  # one coefficient per covariate: its prior may give one value each
            sizes["coefficients"] = len(self.covariate_names)
        self.priors = merge_priors(defaults, priors, label, supports=self.prior_supports,
                                   sizes=sizes)
        # Without covariates the likelihood depends on the data only through the distinct
        # (y_i, n_i) pairs and their multiplicities (see build); with covariates every
        # domain has its own alpha_i, beta_i and keeps its own term.
        if has_cov:
            self.pair_y = self.pair_n = self.pair_count = self.pair_of_domain = None
            self.loglik_weight_var = ""
        else:
            self.pair_y, self.pair_n, self.pair_count, self.pair_of_domain = _distinct_pairs(
                self.y, self.n, self.weights)
            # fit() stamps this name; LOO divides each stored m_u log p(y_u | n_u) by m_u
            # (sdcbayes.inference.compare), as for the Poisson-gamma counts of counts
            self.loglik_weight_var = "pair_count"
        self._model = None

    # ---------------------------------------------------------------- constructors
    @staticmethod
    def _validate_covariates(covariates, n_domains):
        if covariates is None:
            return None, None
        if isinstance(covariates, pd.Series):
            covariates = covariates.to_frame()
        if isinstance(covariates, pd.DataFrame):
            names = [str(c) for c in covariates.columns]
            values = covariates.to_numpy()
        else:
            values = np.asarray(covariates)
            if values.ndim == 1:
                values = values[:, None]
            names = [f"x{j}" for j in range(values.shape[1])] if values.ndim == 2 else []
        try:
            values = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise InputError(
                "covariates must be numeric; encode categorical covariates as indicators"
            ) from None
        if values.ndim != 2 or values.shape[0] != n_domains:
            raise InputError(
                f"covariates must have one row per domain ({n_domains}); got shape {values.shape}"
            )
        if not np.all(np.isfinite(values)):
            raise InputError("covariates have missing or infinite values; fill or drop them first")
        return values, names

    @classmethod
    def from_table(
        cls,
        df: pd.DataFrame,
        y: str = "y",
        n: str = "n",
        N: str = "N",
        domain: str | None = None,
        covariates: Sequence[str] | None = None,
        **kwargs,
    ) -> BetaBinomialDomainModel:
        """Build the model from a per-domain table.

        Parameters
        ----------
        df : pandas.DataFrame
            One row per domain.
        y, n, N : str
            Columns holding the class's sample count, the sample size and the population
            size of each domain.
        domain : str, optional
            Column of domain labels (default: the frame's index).
        covariates : list of str, optional
            Columns used as domain covariates.
        **kwargs
            Passed on (``priors``, ``parameterisation``).
        """
        columns = [y, n, N] + ([domain] if domain is not None else []) + list(covariates or [])
        missing = [c for c in columns if c not in df.columns]
        if missing:
            raise InputError(
                f"column(s) {missing} not in the table; available columns are {list(df.columns)}"
            )
        names = df[domain].tolist() if domain is not None else df.index.tolist()
        cov = df[list(covariates)] if covariates else None
        return cls(
            df[y].to_numpy(),
            df[n].to_numpy(),
            df[N].to_numpy(),
            domain_names=names,
            covariates=cov,
            **kwargs,
        )

    @classmethod
    def from_microdata(
        cls,
        frame: pd.DataFrame,
        domain: str,
        class_column: str,
        class_value,
        N,
        covariates: pd.DataFrame | None = None,
        **kwargs,
    ) -> BetaBinomialDomainModel:
        """Build the domain table from microdata (``y_i`` class records, ``n_i`` records).

        Parameters
        ----------
        frame : pandas.DataFrame
            One row per sampled record.
        domain : str
            Column with each record's domain.
        class_column : str
            Column defining the class.
        class_value : scalar or list
            Value(s) of ``class_column`` that make up the class.
        N : str or mapping or pandas.Series
            Population size of each domain: a column of ``frame`` (constant within each
            domain) or a mapping / Series from domain label to ``N_i``. Domains that appear
            only in the mapping enter with ``n_i = y_i = 0`` (they do not inform the
            hyperparameters, but get a population prediction).
        covariates : pandas.DataFrame, optional
            Domain covariates indexed by domain label.
        **kwargs
            Passed on (``priors``, ``parameterisation``).
        """
        needed = [domain, class_column] + ([N] if isinstance(N, str) else [])
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            raise DataError(
                f"column(s) {missing} not in the microdata; "
                f"available columns are {list(frame.columns)}"
            )
        if frame[domain].isna().any():
            raise DataError(
                f"domain column {domain!r} has {int(frame[domain].isna().sum())} missing values; "
                "drop those records or give them a domain"
            )
        if frame[class_column].isna().any():
            raise DataError(
                f"class column {class_column!r} has "
                f"{int(frame[class_column].isna().sum())} missing values, so y_i is unknown; "
                "drop or impute those records first"
            )
        values = (
            list(class_value)
            if isinstance(class_value, (list, tuple, set, frozenset))
            else [class_value]
        )
        in_class = frame[class_column].isin(values)
        if not in_class.any():
            present = pd.unique(frame[class_column])[:10].tolist()
            raise InputError(
                f"class_value {class_value!r} matches no record of column {class_column!r} "
                f"(dtype {frame[class_column].dtype}; values present include {present}): "
                "give a value of the column's own type, e.g. 1 rather than '1'"
            )
        grouped = pd.DataFrame({"d": frame[domain], "c": in_class.astype(np.int64)}).groupby(
            "d", sort=True
        )["c"]
        table = pd.DataFrame({"y": grouped.sum(), "n": grouped.size()})

        if isinstance(N, str):
            n_per_domain = frame.groupby(domain, sort=True)[N]
            if (n_per_domain.nunique(dropna=False) > 1).any():
                raise DataError(
                    f"column {N!r} must hold one population size per domain; "
                    "it varies within a domain"
                )
            pop = n_per_domain.first()
        else:
            pop = pd.Series(dict(N) if isinstance(N, Mapping) else N)
            extra = pop.index.difference(table.index)
            if len(extra):
                table = pd.concat([table, pd.DataFrame({"y": 0, "n": 0}, index=extra)])
            absent = table.index.difference(pop.index)
            if len(absent):
                raise DataError(
                    f"no population size N for domain(s) {list(absent[:5])}; add them to N"
                )
        table["N"] = pop.reindex(table.index).to_numpy()
        try:
            table = table.sort_index()
        except TypeError:  # mixed label types: keep first-seen order
            pass
        cov = None
        if covariates is not None:
            absent = table.index.difference(covariates.index)
            if len(absent):
                raise DataError(
                    f"no covariates for domain(s) {list(absent[:5])}; "
                    "index the covariates by domain"
                )
            cov = covariates.reindex(table.index)
        return cls(
            table["y"],
            table["n"],
            table["N"],
            domain_names=table.index.tolist(),
            covariates=cov,
            **kwargs,
        )

    # ---------------------------------------------------------------- the graph
    def build(self):
        r"""Return the PyMC model (built once, then cached).

        Graph: hyperparameters -> ``alpha``, ``beta`` (scalars, or dims ``("domain",)``
        with covariates) -> the observed ``y`` (seed 003, section 2). ``n`` and ``N``
        (dims ``("domain",)``) are stored as data so that the posterior carries
        everything a population prediction needs.

        Without covariates ``y`` holds the distinct pairs :math:`(y_u, n_u)` (dims
        ``("pair",)``, in order of first occurrence) with the number of domains
        :math:`m_u` that hold each (data ``pair_count``; with ``weights``, the sum of
        the multiplicities of the rows that hold it), and its log-density is
        :math:`m_u \log \mathrm{BetaBin}(y_u; n_u, \alpha, \beta)`. Since
        :math:`\prod_i \mathrm{BetaBin}(y_i; n_i, \alpha, \beta) = \prod_u
        \mathrm{BetaBin}(y_u; n_u, \alpha, \beta)^{m_u}`, the posterior is exactly the
        per-domain model's, at a cost that grows with the distinct pairs (at most
        about :math:`n_{max}^2/2`), not with the domains: e.g. 1,681 pairs for 10^5
        domains with :math:`n_i \le 99`, and one chain of 400 NUTS steps in 7 s of CPU
        against 126 s per domain. ``pair_of_domain`` (dims ``("domain",)``) maps each domain
        to its pair, so the per-domain values are ``y[pair_of_domain]`` and, for the
        pointwise log-likelihood (stored as the pair's total :math:`m_u \log p`),
        ``log_likelihood.y[pair_of_domain] / pair_count[pair_of_domain]``. The fit
        stamps ``loglik_weight_var = "pair_count"``, so that
        :func:`sdcbayes.inference.loo` and :func:`sdcbayes.inference.compare` give each
        domain its own entry: the same PSIS-LOO as on the per-domain log-likelihood
        (domains with the same pair have identical importance ratios). Not
        :func:`arviz.loo` directly, which would count each pair once.

        With covariates each domain has its own ``alpha_i``, ``beta_i``: ``y`` is
        observed per domain, ``y_i ~ BetaBinomial(n_i, alpha_i, beta_i)``, dims
        ``("domain",)``, and log-likelihood entries are unweighted.
        """
        if self._model is not None:
            return self._model
        import pymc as pm

        coords = {"domain": self.domain_names}
        if self.covariates is not None:
            coords["covariate"] = self.covariate_names
        else:
            coords["pair"] = np.arange(self.pair_y.size)
        with pm.Model(coords=coords) as model:
            n = pm.Data("n", self.n, dims="domain")
            # float64: pm.Data would store integers as int32, wrapping N_i >= 2**31
            pm.Data("N", self.N.astype(np.float64), dims="domain")
            if self.parameterisation == "alpha-beta":
                alpha = prior_to_rv(pm, "alpha", self.priors["alpha"])
                beta = prior_to_rv(pm, "beta", self.priors["beta"])
                pm.Deterministic("mean", alpha / (alpha + beta))
                pm.Deterministic("concentration", alpha + beta)
            elif self.covariates is None:
                mean = prior_to_rv(pm, "mean", self.priors["mean"])
                kappa = prior_to_rv(pm, "concentration", self.priors["concentration"])
                alpha = pm.Deterministic("alpha", mean * kappa)
                beta = pm.Deterministic("beta", (1.0 - mean) * kappa)
            else:
                X = pm.Data("X", self.covariates, dims=("domain", "covariate"))
                b0 = prior_to_rv(pm, "intercept", self.priors["intercept"])
                b = prior_to_rv(pm, "coefficients", self.priors["coefficients"], dims="covariate")
                kappa = prior_to_rv(pm, "concentration", self.priors["concentration"])
                mean = pm.Deterministic(
                    "mean", pm.math.invlogit(b0 + pm.math.dot(X, b)), dims="domain"
                )
                alpha = pm.Deterministic("alpha", mean * kappa, dims="domain")
                beta = pm.Deterministic("beta", (1.0 - mean) * kappa, dims="domain")
            if self.covariates is None:
                # sufficient statistics: one weighted term per distinct (y, n) pair
                pair_n = pm.Data("pair_n", self.pair_n, dims="pair")
                # float64, as the Poisson-gamma weights m_j: pm.Data makes integers int32
                count = pm.Data("pair_count", self.pair_count.astype(np.float64), dims="pair")
                pm.Data("pair_of_domain", self.pair_of_domain, dims="domain")
                # int64 as BetaBinomial's own draws: the observed counts stay integers
                pm.CustomDist("y", pair_n, alpha, beta, count,
                              logp=_weighted_betabinomial_logp, observed=self.pair_y,
                              dims="pair", dtype="int64")
            else:
                pm.BetaBinomial("y", n=n, alpha=alpha, beta=beta, observed=self.y,
                                dims="domain")
        self._model = model
        return model

    def data_summary(self) -> dict[str, Any]:
        """JSON-serialisable summary of the domain table.

        Totals, the numbers of domains with ``y_i = 0, 1, 2`` and ``data_fingerprint``, a
        hash of ``y``, ``n``, ``N`` and the covariates (:func:`data_fingerprint`). With
        ``weights`` also ``total_weight``, and the weights enter the hash (a posterior of
        the weighted table is not taken for the unweighted one's); the counts are the
        rows' own, unweighted.
        """
        summary = {
            "model": self.name,
            "parameterisation": self.parameterisation,
            "n_domains": int(self.y.size),
            "total_y": int(self.y.sum()),
            "total_n": int(self.n.sum()),
            "total_N": int(self.N.sum()),
            "covariates": list(self.covariate_names) if self.covariate_names else [],
            **_domain_frequencies(self.y),
            # the table itself, not only its totals (posteriors stamped without it are
            # checked on the totals)
            "data_fingerprint": data_fingerprint(
                self.y, self.n, self.N,
                np.zeros((0, 0)) if self.covariates is None else self.covariates,
                *(() if self.weights is None else (self.weights,))),
        }
        if self.weights is not None:
            summary["total_weight"] = int(self.weights.sum())
        return summary

    # ---------------------------------------------------------------- checks
    def _check_statistics(self, y_rep: xr.DataArray) -> xr.Dataset:
        """Test statistics of replicated domain counts ``y_rep`` (dims chain, draw, domain)."""
        stats = {"total_y": y_rep.sum("domain")}
        for j in (0, 1, 2):
            stats[f"n_domains_y{j}"] = (y_rep == j).sum("domain")
        return xr.Dataset(stats)

    def _observed_statistics(self) -> dict[str, float]:
        return {
            "total_y": float(self.y.sum()),
            **{k: float(v) for k, v in _domain_frequencies(self.y).items()},
        }

    def _per_domain(self, da: xr.DataArray) -> np.ndarray:
        """``alpha`` or ``beta`` draws as an array (chain, draw, domain)."""
        if "domain" not in da.dims:
            da = da.expand_dims(domain=self.domain_names, axis=-1)
        return np.asarray(da.transpose("chain", "draw", "domain").values, dtype=float)

    def _replicate(self, params: xr.Dataset, rng: np.random.Generator, kind: str):
        """Replicated domain counts for every draw of ``params``, as an InferenceData.

        ``y_i^rep ~ BetaBin(n_i, alpha, beta)`` drawn as ``theta_i ~ Beta(alpha, beta)``
        then ``Bin(n_i, theta_i)`` (seed 003, section 2; what PyMC's BetaBinomial draws).
        Drawn here rather than by PyMC: the graph's ``y`` holds the distinct (y, n)
        pairs (see :meth:`build`), the check needs every domain. The group
        ``{kind}_predictive`` holds ``y`` (chain, draw, domain) and ``observed_data``
        the observed per-domain ``y``, so ArviZ's plots pair them.
        """
        theta = rng.beta(self._per_domain(params["alpha"]), self._per_domain(params["beta"]))
        y_rep = rng.binomial(np.broadcast_to(self.n, theta.shape), theta)
        coords = {"chain": params["chain"].values, "draw": params["draw"].values,
                  "domain": self.domain_names}
        rep = xr.Dataset({"y": (("chain", "draw", "domain"), y_rep)}, coords=coords)
        observed = xr.Dataset({"y": ("domain", self.y)}, coords={"domain": self.domain_names})
        return _compat.make_container(**{f"{kind}_predictive": rep, "observed_data": observed})

    def prior_predictive(self, samples: int = 500, random_seed=None) -> PredictiveCheck:
        """Simulate domain counts ``y_i`` given ``n_i`` from the prior.

        Parameters
        ----------
        samples : int
            Prior draws, a whole number >= 1.
        random_seed : int, optional
            Seed (>= 0); without one a seed is drawn, and either way it is recorded in
            the result's ``random_seed`` and the draws' stamps.

        Returns
        -------
        PredictiveCheck
            On the total class count and the numbers of domains with ``y_i = 0, 1, 2``,
            next to the observed values. Its ``idata`` holds the groups ``prior``
            (parameters), ``prior_predictive`` (``y``, dims chain, draw, domain) and
            ``observed_data``.
        """
        import pymc as pm

        samples = check_whole("samples", samples, 1)
        seed = checked_seed(random_seed)
        rng = np.random.default_rng(seed)
        model = self.build()
        names = [v.name for v in model.free_RVs + model.deterministics]
        with quiet_logs():
            prior = pm.sample_prior_predictive(draws=samples, model=model, var_names=names,
                                               random_seed=int(rng.integers(2**31)))
        idata = self._replicate(_group(prior, "prior"), rng, "prior")
        _compat.set_group(idata, "prior", _group(prior, "prior"))
        stamps = predictive_stamps(self, seed, "prior")
        for group in ("prior", "prior_predictive"):
            _stamp_group(idata, group, stamps)
        y_rep = _group(idata, "prior_predictive")["y"]
        return PredictiveCheck(
            "prior", self._check_statistics(y_rep), self._observed_statistics(), idata, seed
        )

    def posterior_predictive(self, idata, random_seed=None) -> PredictiveCheck:
        """Replicate domain counts ``y_i`` from the posterior in ``idata``.

        Parameters
        ----------
        idata : arviz.InferenceData or xarray.DataTree
            A posterior of this model (:func:`sdcbayes.inference.fit`), or any with
            ``alpha`` and ``beta`` draws (dims chain, draw[, domain]).
        random_seed : int, optional
            As for :meth:`prior_predictive`.

        Returns
        -------
        PredictiveCheck
            Same statistics as :meth:`prior_predictive`; its ``idata`` holds
            ``posterior_predictive`` (``y``, dims chain, draw, domain) and
            ``observed_data``.

        Raises
        ------
        InputError
            The posterior's stamps name another model or another domain table: its
            parameters would replicate data they were not fitted to.
        """
        check_posterior_of(self, idata, "posterior_predictive")
        seed = checked_seed(random_seed)
        post = _group(idata, "posterior")
        missing = [v for v in ("alpha", "beta") if v not in post]
        if missing:
            raise InputError(
                f"the posterior has no {missing} draws; pass the object returned by "
                "sdcbayes.inference.fit for this model"
            )
        pp = self._replicate(post, np.random.default_rng(seed), "posterior")
        _stamp_group(pp, "posterior_predictive", predictive_stamps(self, seed, "posterior"))
        y_rep = _group(pp, "posterior_predictive")["y"]
        return PredictiveCheck(
            "posterior", self._check_statistics(y_rep), self._observed_statistics(), pp, seed
        )

    def predict_population(self, idata, random_seed=None) -> xr.DataArray:
        """Draw the population count ``Y_i`` of the class once per posterior draw.

        Uses the seed's posterior predictive (seed 003, section 2)
        ``Y_i - y_i | y_i, alpha, beta ~ BetaBin(N_i - n_i, alpha + y_i, beta + n_i - y_i)``,
        drawn as ``theta_i ~ Beta(alpha + y_i, beta + n_i - y_i)`` then a binomial.

        Returns
        -------
        xarray.DataArray
            ``Y``, dims ``("chain", "draw", "domain")``.

        Raises
        ------
        InputError
            The posterior's stamps (:func:`sdcbayes.inference.fit`) name another model
            or another domain table than this one's.
        """
        check_posterior_of(self, idata, "predict_population")
        post = _group(idata, "posterior")
        rng = np.random.default_rng(random_seed)
        a = self._per_domain(post["alpha"]) + self.y
        b = self._per_domain(post["beta"]) + (self.n - self.y)
        theta = rng.beta(a, b)
        extra = rng.binomial(np.broadcast_to(self.N - self.n, theta.shape), theta)
        return xr.DataArray(
            self.y + extra,
            dims=("chain", "draw", "domain"),
            coords={
                "chain": post["chain"].values,
                "draw": post["draw"].values,
                "domain": self.domain_names,
            },
            name="Y",
        )
