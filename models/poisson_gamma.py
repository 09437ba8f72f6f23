"""Poisson-gamma model of cell frequencies on counts of counts (PyMC).

Bethlehem, Keller and Pannekoek (1990), as written in Mokken, Kooiman, Pannekoek
and Willenborg (1992), seed ``000_…`` eq. 10–12. The model is built from the sample
counts of counts ``m_j = #{cells k : f_k = j}`` including the empty cells
``m_0 = K − #observed cells``: never one node per record or per cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy.special import gammaln

from sdcbayes.exceptions import InputError
from sdcbayes.microdata import require_one_cell_per_record
from sdcbayes.models.base import PriorSpec, SuperpopulationModel, check_whole, prior_to_rv
from sdcbayes.models.ppc import simulate_counts_of_counts

__all__ = ["PoissonGammaModel", "negbin_count_logpmf"]

STRUCTURES = ("pooled", "separate", "common_beta", "hierarchical")

# Default priors, justified in the class docstring (section "Priors").
_ALPHA: PriorSpec = {"dist": "LogNormal", "mu": 0.0, "sigma": 2.5}
_OMEGA: PriorSpec = {"dist": "LogNormal", "mu": 0.0, "sigma": 1.0}
_ALPHA_SPREAD: PriorSpec = {"dist": "HalfNormal", "sigma": 1.0}
_OMEGA_SPREAD: PriorSpec = {"dist": "HalfNormal", "sigma": 0.5}


def negbin_count_logpmf(value, alpha, nbeta, log_factorial=None):
    """Log NegBin(value; alpha, p = 1/(1 + n beta)) as a PyTensor expression.

    The Poisson-gamma model of seed ``000_…`` section 2.3 (Bethlehem, Keller &
    Pannekoek 1990; the seed prints only the population version, F ~ NegBin, and its
    eq. 10 is μ), for the sample: with ``pi_k ~ Gamma(alpha, scale beta)`` and
    ``f_k | pi_k ~ Poisson(n pi_k)``,

    .. math::

        \\log P(f = j) = \\log\\Gamma(j + \\alpha) - \\log\\Gamma(\\alpha) - \\log j!
            - \\alpha \\log(1 + n\\beta) + j\\,[\\log(n\\beta) - \\log(1 + n\\beta)].

    Written with ``log1p`` so that ``p = 1/(1 + n beta)`` close to 0 or 1 loses no
    precision. ``log_factorial`` (``log j!``, data) may be passed precomputed: it
    does not depend on the parameters, and computing it at every gradient
    evaluation would cost a third of the special-function calls.
    """
    log1p_t = pt.log1p(nbeta)
    if log_factorial is None:
        log_factorial = pt.gammaln(value + 1.0)
    return (
        pt.gammaln(value + alpha)
        - pt.gammaln(alpha)
        - log_factorial
        - alpha * log1p_t
        + value * (pt.log(nbeta) - log1p_t)
    )


def _weighted_logp(value, alpha, nbeta, weight, log_factorial):
    # Value j stands for `weight` = m_j exchangeable cells: its contribution is
    # m_j log P(f = j). The log_likelihood group stores exactly this; LOO divides
    # it by m_j again (sdcbayes.inference.loo).
    return weight * negbin_count_logpmf(value, alpha, nbeta, log_factorial)


def _as_counts(obj: Any, what: str) -> dict[int, int]:
    """Normalise one table of counts of counts to ``{j: m_j}`` with ``j >= 1``, ``m_j > 0``."""
    if isinstance(obj, pd.Series):
        items = list(zip(obj.index.tolist(), obj.to_numpy().tolist(), strict=True))
    elif isinstance(obj, Mapping):
        items = list(obj.items())
    else:
        arr = np.asarray(obj)
        if arr.ndim != 1:
            raise InputError(
                f"{what} must be a mapping j -> m_j, a pandas Series indexed by j, or a 1-D "
                f"array m_1, m_2, …; got an array of shape {arr.shape}"
            )
        items = list(zip(range(1, arr.size + 1), arr.tolist(), strict=True))
    out: dict[int, int] = {}
    bad = []
    for j, m in items:
        # a bool is an int to Python: {1: True} would read as one cell without a word
        if isinstance(j, bool | np.bool_) or isinstance(m, bool | np.bool_):
            bad.append((j, m))
            continue
        try:
            whole = float(j).is_integer() and float(m).is_integer()
        except (TypeError, ValueError):  # "abc", None: NumPy's error would not name the table
            whole = False
        if not whole or float(j) < 1 or float(m) < 0:
            bad.append((j, m))
            continue
        j, m = int(float(j)), int(float(m))
        if m > 0:
            out[j] = out.get(j, 0) + m
    if bad:
        raise InputError(
            f"{what}: entries {bad[:5]} are not (count j >= 1, number of cells m_j >= 0) "
            "integer pairs; give j >= 1 only (m_0 follows from K) and integer m_j"
        )
    if not out:
        raise InputError(f"{what} is empty: the sample has no observed cell; check the data")
    return out


class PoissonGammaModel(SuperpopulationModel):
    """Poisson-gamma superpopulation model fitted to sample counts of counts.

    Model (Bethlehem-Keller-Pannekoek; seed ``000_…`` section 2.3): each of the K cells
    of the key has a probability ``pi_k ~ Gamma(shape alpha, scale beta)``; the
    population frequency is ``F_k | pi_k ~ Poisson(N pi_k)`` and, under Bernoulli
    sampling at rate n/N, the sample frequency is ``f_k | pi_k ~ Poisson(n pi_k)``.
    Marginally

    .. math::

        f_k \\sim \\mathrm{NegBin}\\bigl(\\alpha,\\ p = 1/(1 + n\\beta)\\bigr),\\qquad
        \\log L(\\alpha, \\beta) = \\sum_{j \\ge 0} m_j \\log P(f = j \\mid \\alpha, \\beta),

    so the likelihood depends on the data only through the counts of counts
    ``m_j`` (including ``m_0 = K - \\#\\text{observed cells}``). Parameterisation:
    ``alpha`` and ``omega = K alpha beta`` (the mean cell probability times K), so
    ``beta = omega / (K alpha)``; the sample mean cell count is ``n omega / K``.
    Mean and shape of a negative binomial are orthogonal in Fisher information,
    which gives NUTS a nearly uncorrelated, well-scaled posterior in
    ``(log alpha, log omega)``. The tie ``alpha beta = 1/K`` of eq. 10 is
    ``omega = 1`` (``tie=True``).

    Deterministics: ``beta``; the expected number of population uniques
    ``mu = K P(F = 1) = K alpha N beta (1 + N beta)^{-(1 + alpha)}`` (eq. 10; equal to
    ``N (1 + N beta)^{-(1 + alpha)}`` under the tie) and the fraction of population
    uniques ``f_u = mu / N`` (section 2 of the seed).

    Subpopulations with known sizes ``N_d`` (seed section 3.1), one row of counts of
    counts per subpopulation d, dim ``domain``, K = number of cells of the key
    without the subpopulation indicator:

    * ``structure="separate"`` — eq. 11: ``f ~ NegBin(alpha_d, 1/(1 + n_d beta_d))``
      with independent ``(alpha_d, omega_d)``;
    * ``structure="common_beta"`` — eq. 12: one ``(alpha, beta)`` for all d, the
      subpopulations differing through ``n_d`` and ``N_d`` only;
    * ``structure="hierarchical"`` (default; beyond the seed) — partial pooling:
      ``log alpha_d = log alpha_median + alpha_spread z_d``, ``z_d ~ N(0, 1)``
      (non-centred, so small subpopulations borrow strength without funnels), and
      likewise ``omega_d`` unless tied.

    ``mu``, ``f_u`` are then per subpopulation (dim ``domain``) and ``mu_total =
    sum_d mu_d``.

    Priors (configuration; override by name, unknown names are rejected):

    * ``alpha`` / ``alpha_median``: ``LogNormal(0, 2.5)``. The coefficient of
      variation of the cell probabilities is ``1/sqrt(alpha)``; the prior's 95 %
      range ``alpha in [0.007, 134]`` spans keys from extremely skewed (most
      population in few cells) to nearly uniform, without favouring either.
      Nearly uniform keys (``alpha`` above about 25, where the likelihood is flat
      upwards in ``alpha``) can give NUTS a few divergent transitions: 5 of 98
      fits simulated from this prior at the defaults, all at ``alpha`` 27-62,
      whose intervals still covered the truth (audit DD4); raise
      ``target_accept`` to 0.95 when they are reported.
    * ``omega`` / ``omega_median``: ``LogNormal(0, 1)``, centred on the tie
      ``K alpha beta = 1`` of eq. 10 (cells hold on average 1/K of the
      population), allowing a factor e^2 either way. With ``n = sum_j j m_j``
      taken from the same counts of counts, the data pin ``omega`` near 1
      whatever this prior (the NegBin's mean is then the sample mean at
      ``omega = 1``; over 98 samples simulated with ``omega`` drawn from the prior,
      posterior means 1.00-1.23 with sd about 0.04, audit DD4), so its interval
      says nothing about ``omega`` itself and ``tie=True`` gives the same fit with
      one parameter fewer; it does not move the coverage of tau1 and tau2.
    * ``alpha_spread`` ``HalfNormal(1)``, ``omega_spread`` ``HalfNormal(0.5)``:
      between-subpopulation standard deviations on the log scale; a factor of e
      between subpopulations is plausible, much more is not.

    Parameters
    ----------
    counts_of_counts : mapping, pandas.Series, 1-D array, or pandas.DataFrame
        ``{j: m_j}`` for ``j >= 1`` (a Series indexed by j, e.g.
        ``md.cells.counts_of_counts``, or an array ``m_1, m_2, …``). For
        subpopulations, a DataFrame with one row per subpopulation and one column
        per j, or a mapping ``{label: {j: m_j}}``.
    K : int or array_like
        Size of the cell space (per subpopulation: cells of the key without the
        subpopulation indicator).
    N : float or array_like
        Population size (per subpopulation: the known ``N_d``).
    n : int or array_like, optional
        Sample size; checked against ``sum_j j m_j`` when given.
    structure : {"pooled", "separate", "common_beta", "hierarchical"}, optional
        Default "pooled" for one table, "hierarchical" for two or more
        subpopulations, "separate" for one ("hierarchical" is refused there: one
        subpopulation cannot inform the spread between subpopulations).
    tie : bool
        Impose ``alpha beta = 1/K`` (eq. 10, 11, 12 of the seed) instead of a free
        ``omega``.
    priors : dict, optional
        Overrides of the default priors, e.g. ``{"alpha": {"sigma": 1.0}}``.
    """

    name: ClassVar[str] = "poisson-gamma"
    default_priors: ClassVar[dict[str, PriorSpec]] = {"alpha": _ALPHA, "omega": _OMEGA}
    # every parameter is positive: shapes, scales, medians and spreads
    prior_supports: ClassVar[dict[str, str]] = {
        k: "positive" for k in ("alpha", "omega", "alpha_median", "alpha_spread",
                                "omega_median", "omega_spread")}
    #: The pm.Data holding how many cells each log-likelihood entry stands for.
    loglik_weight_var: ClassVar[str] = "m"
    observed_var: ClassVar[str] = "counts"

    def __init__(
        self,
        counts_of_counts,
        K,
        N,
        *,
        n=None,
        structure: str | None = None,
        tie: bool = False,
        priors: Mapping[str, PriorSpec] | None = None,
    ):
        sub = isinstance(counts_of_counts, pd.DataFrame) or (
            isinstance(counts_of_counts, Mapping)
            and len(counts_of_counts) > 0
            and all(isinstance(v, Mapping | pd.Series) for v in counts_of_counts.values())
        )
        n_sub = len(counts_of_counts) if sub else 0
        if sub and n_sub == 0:
            raise InputError(
                "counts_of_counts has no subpopulation (no rows): pass one row of counts of "
                "counts per subpopulation, or a single table {j: m_j} for the whole file"
            )
        if structure is None:
            # one subpopulation cannot inform a between-subpopulation spread
            structure = ("hierarchical" if n_sub > 1 else "separate") if sub else "pooled"
        if structure not in STRUCTURES:
            raise InputError(
                f"unknown structure {structure!r} for the Poisson-gamma model; "
                f"use one of {list(STRUCTURES)}"
            )
        if sub and structure == "pooled":
            raise InputError(
                "structure='pooled' needs one table of counts of counts; for subpopulations use "
                "'separate', 'common_beta' or 'hierarchical', or sum the tables first"
            )
        if not sub and structure != "pooled":
            raise InputError(
                f"structure={structure!r} needs counts of counts per subpopulation (a DataFrame "
                "with one row per subpopulation, or a mapping label -> {j: m_j})"
            )
        if structure == "hierarchical" and n_sub == 1:
            raise InputError(
                "structure='hierarchical' needs two or more subpopulations: with one, the "
                "spread between subpopulations cannot be learnt (only its prior comes back); "
                "use structure='separate', or pass the single table for structure='pooled'"
            )
        # bool(tie) would read tie="no" as True: the tie changes the model
        if not isinstance(tie, bool | np.bool_):
            raise InputError(f"tie must be True or False; got {tie!r}")
        self.structure = structure
        self.tie = bool(tie)
        self.subpopulations = sub
        self._set_data(counts_of_counts, K, N, n)
        self.default_priors = self._defaults(structure, self.tie)
        super().__init__(priors)

    # ------------------------------------------------------------------ data
    def _set_data(self, counts_of_counts, K, N, n) -> None:
        K_exact = self._exact_integers(K)
        if self.subpopulations:
            if isinstance(counts_of_counts, pd.DataFrame):
                rows = {
                    label: _as_counts(row, f"counts of counts of subpopulation {label!r}")
                    for label, row in counts_of_counts.fillna(0).iterrows()
                }
            else:
                rows = {
                    label: _as_counts(v, f"counts of counts of subpopulation {label!r}")
                    for label, v in counts_of_counts.items()
                }
            self.domains = list(rows)
            D = len(self.domains)
            tables = [rows[d] for d in self.domains]
            K = self._per_domain(K, "K", D)
            N = self._per_domain(N, "N", D)
            n = None if n is None else self._per_domain(n, "n", D)
        else:
            self.domains = None
            tables = [_as_counts(counts_of_counts, "counts_of_counts")]
            for value, what in ((K, "K"), (N, "N")):
                if np.ndim(value) != 0:
                    raise InputError(f"{what} must be a single number for one table; got {value!r}")
            K, N = self._numbers(K, "K"), self._numbers(N, "N")
            n = None if n is None else self._numbers(n, "n")

        # K as float64, whatever its size: it enters the model only through
        # alpha beta = 1/K (seed 000 section 2.3) and m_0 = K - #observed cells, where a
        # relative error of 1e-16 is immaterial, so a cell space beyond 2**53 (or int64:
        # 15 keys of 20 levels give 3.3e19) is no reason to refuse (audit Z3 finding 2)
        n_cells = np.array([sum(t.values()) for t in tables], dtype=np.int64)
        n_obs = np.array([sum(j * m for j, m in t.items()) for t in tables], dtype=np.int64)
        if not np.all(np.isfinite(K)) or np.any(K != np.round(K)) or np.any(K < n_cells):
            raise InputError(
                f"K = {K.tolist()} must be a finite integer at least the number of observed "
                f"cells {n_cells.tolist()}: pass the size of the cell space (product of key "
                "levels)"
            )
        if n is not None and np.any(n != n_obs):
            raise InputError(
                f"n = {n.tolist()} differs from sum_j j*m_j = {n_obs.tolist()}: the counts of "
                "counts must cover every sampled record; drop n or fix the table"
            )
        if not np.all(np.isfinite(N)):
            raise InputError(
                f"population size N = {N.tolist()} must be finite: pass the number of "
                "population units (e.g. the sum of the weights)"
            )
        if np.any(N < n_obs):
            raise InputError(
                f"population size N = {N.tolist()} is below the sample size {n_obs.tolist()}: "
                "pass the population size (e.g. the sum of the weights)"
            )
        # the exact integers where K came as ints (the data summary, m_0); else K's floats
        if K_exact is not None and len(K_exact) == 1 < K.size:  # one K for all
            K_exact = K_exact * K.size
        K_int = (K_exact if K_exact is not None and len(K_exact) == K.size
                 else [int(k) for k in K])
        # m_0 exact in int64 while K fits (the usual case), float64 beyond: it is only a
        # weight of the likelihood (data_values casts m to float64 anyway)
        small = max(K_int) < 2**63
        m0 = (np.array(K_int, dtype=np.int64) - n_cells) if small else (K - n_cells)
        js = sorted(set().union(*[set(t) for t in tables]))
        j_grid = np.array(([0] if np.any(m0 > 0) else []) + js, dtype=np.int64)
        m = np.zeros((len(tables), j_grid.size), dtype=np.int64 if small else np.float64)
        col = {j: i for i, j in enumerate(j_grid)}
        for r, t in enumerate(tables):
            for j, v in t.items():
                m[r, col[j]] = v
            if j_grid[0] == 0:
                m[r, 0] = m0[r]
        self.count_values = j_grid
        self._m = m
        self._K = K.astype(float)  # exact below 2**53, within 1e-16 beyond
        self._K_int = K_int
        self._N = N.astype(float)
        self._n = n_obs
        self._n_cells = n_cells
        if self.structure == "common_beta" and np.unique(self._K).size > 1:
            raise InputError(
                "structure='common_beta' (seed eq. 12) needs one K for all subpopulations; "
                f"got {self._K.tolist()}: use structure='separate' or 'hierarchical'"
            )

    @staticmethod
    def _exact_integers(value) -> list[int] | None:
        """Python ints given as ``value`` (one or a sequence), exact beyond 2**53; else None."""
        raw = value.to_numpy() if isinstance(value, pd.Series) else value
        items = [raw] if np.ndim(raw) == 0 else list(np.asarray(raw, dtype=object).ravel())
        if all(isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)
               for v in items):
            return [int(v) for v in items]
        return None

    @staticmethod
    def _numbers(value, what: str) -> np.ndarray:
        """``value`` as a float array, or an InputError naming ``what`` (not NumPy's ValueError)."""
        if isinstance(value, Mapping):
            raise InputError(f"{what} per subpopulation must be a number or an array in row order")
        raw = value.to_numpy() if isinstance(value, pd.Series) else value
        arr = np.asarray(raw)
        if arr.dtype.kind == "O" and arr.size and all(
                isinstance(v, int) and not isinstance(v, bool) for v in arr.ravel()):
            # Python ints beyond int64 (a cell space of 15 keys of 20 levels is 3.3e19)
            # make an object array; they are numbers, taken as float64
            try:
                arr = arr.astype(float)
            except OverflowError:
                raise InputError(
                    f"{what} = {value!r} is beyond float64 (about 1.8e308); coarsen the keys"
                ) from None
        # bools and text are no sizes: np.asarray(True, float) would read as 1
        if arr.dtype.kind not in "iuf":
            raise InputError(
                f"{what} must be a number (or one number per subpopulation); got {value!r}"
            )
        return np.atleast_1d(arr.astype(float))

    @classmethod
    def _per_domain(cls, value, what: str, D: int) -> np.ndarray:
        arr = cls._numbers(value, what)
        arr = arr[0] if np.ndim(value) == 0 else arr
        arr = np.broadcast_to(arr, (D,)) if arr.ndim == 0 else arr
        if arr.shape != (D,):
            raise InputError(
                f"{what} must be one number or one per subpopulation ({D}); got shape {arr.shape}"
            )
        return arr.astype(float)

    @staticmethod
    def _defaults(structure: str, tie: bool) -> dict[str, PriorSpec]:
        if structure == "hierarchical":
            out = {"alpha_median": dict(_ALPHA), "alpha_spread": dict(_ALPHA_SPREAD)}
            if not tie:
                out |= {"omega_median": dict(_OMEGA), "omega_spread": dict(_OMEGA_SPREAD)}
            return out
        out = {"alpha": dict(_ALPHA)}
        if not tie:
            out["omega"] = dict(_OMEGA)
        return out

    @classmethod
    def from_microdata(
        cls,
        md,
        N: float | None = None,
        *,
        by_stratum: bool = False,
        subpopulation: str | None = None,
        structure: str | None = None,
        tie: bool = False,
        priors: Mapping[str, PriorSpec] | None = None,
    ) -> PoissonGammaModel:
        """Build the model from a :class:`sdcbayes.Microdata` (ARCHITECTURE contract).

        Uses ``md.cells.counts_of_counts`` and ``md.cells.K``; the population size
        is ``N`` when given, else the sum of the weights (``md.cells.Fk_hat``; the
        weights come from a weight column or the sampling fraction).

        Subpopulations with known sizes (seed section 3.1, eq. 11-12), either

        * ``by_stratum=True``: the strata of ``md`` (``md.cells.by_stratum``;
          cells are defined by the keys alone, so ``K_d = K``), or
        * ``subpopulation=<key>``: one of the keys splits the cells; ``K_d = K / L``
          with L the number of levels of that key (k of the seed excludes the
          subpopulation indicator).

        ``N_d`` is the weight sum of subpopulation d (rescaled to total ``N`` when
        ``N`` is given).

        Parameters
        ----------
        md : sdcbayes.Microdata
            The sample, one cell per record (no wildcard matching).
        N : float, optional
            Population size; default the sum of the weights.
        by_stratum : bool
            One subpopulation per stratum of ``md``.
        subpopulation : str, optional
            A key whose levels are the subpopulations.
        structure, tie, priors
            As for the class (default structure: "pooled" for the whole file,
            "hierarchical" for two or more subpopulations, "separate" for one).

        Raises
        ------
        InputError
            No population size (neither ``N`` nor weights); wildcard cells; both
            ``by_stratum`` and ``subpopulation``; an unknown key; no strata.
        """
        cells = md.cells
        if N is None and getattr(md, "weights", None) is None:
            raise InputError(
                "the Poisson-gamma model needs the population size: pass N=..., or give the "
                "microdata a weight column or a sampling_fraction"
            )
        # wildcard cells would exceed K, and their weight sums count records twice
        require_one_cell_per_record(
            md, "Poisson-gamma",
            instead="the closed form (sdcbayes.risk.assess.assess_closed_form) for sdcMicro's "
                    "wildcard matching")
        if by_stratum and subpopulation is not None:
            raise InputError("give either by_stratum=True or subpopulation=<key>, not both")
        if not by_stratum and subpopulation is None:
            N = float(np.sum(cells.Fk_hat)) if N is None else N
            return cls(cells.counts_of_counts, cells.K, N, structure=structure, tie=tie,
                       priors=priors)
        if by_stratum:
            if getattr(cells, "by_stratum", None) is None:
                raise InputError(
                    "by_stratum=True needs microdata with a strata column: "
                    "Microdata(..., strata='region')"
                )
            groups = cells.by_stratum.groupby("stratum", observed=True, sort=True)
            coc = groups["fk"].value_counts().unstack(fill_value=0)
            K_d = cells.K
        else:
            table = cells.table
            if subpopulation not in getattr(cells, "keys", table.columns):
                raise InputError(
                    f"subpopulation {subpopulation!r} is not a key of the microdata; use one "
                    f"of {list(getattr(cells, 'keys', []))} or by_stratum=True for strata"
                )
            exact = getattr(cells, "f_exact", cells.fk)  # integer counts (data-layer contract)
            frame = pd.DataFrame({"d": table[subpopulation].to_numpy(), "fk": exact,
                                  "Fk_hat": cells.Fk_hat})
            groups = frame.groupby("d", observed=True, sort=True)
            coc = groups["fk"].value_counts().unstack(fill_value=0)
            levels = getattr(md, "n_levels", {}).get(subpopulation, coc.shape[0])
            K_d = cells.K // levels
        Nd = groups["Fk_hat"].sum().reindex(coc.index).to_numpy(dtype=float)
        if N is not None:  # known total: split it like the weights
            Nd = Nd / Nd.sum() * float(N)
        coc.index = [str(i) for i in coc.index]
        # structure None: "hierarchical", or "separate" for a single subpopulation
        return cls(coc, K_d, Nd, structure=structure, tie=tie, priors=priors)

    def prior_sizes(self) -> dict[str, int | None]:
        """Scalar priors, except ``alpha``/``omega`` per subpopulation under "separate"."""
        out: dict[str, int | None] = dict.fromkeys(self.default_priors)
        if self.structure == "separate":
            out |= {k: len(self.domains) for k in ("alpha", "omega") if k in out}
        return out

    # ------------------------------------------------------------ summaries
    def options(self) -> dict[str, Any]:
        """Model options stamped on posteriors (structure and tie)."""
        return {"structure": self.structure, "tie": self.tie}

    def data_summary(self) -> dict[str, Any]:
        """JSON-serialisable summary of the counts of counts the model is built on.

        Totals (``n``, ``N``, ``K``, ``n_cells``, sample uniques, largest count) and the
        whole table ``counts_of_counts`` (``{"j": m_j}`` for ``j >= 1``; per
        subpopulation for subpopulations), compared by
        :func:`sdcbayes.models.base.check_posterior_of`. A posterior stamped before the
        table was part of the summary lacks that entry and is checked on the totals.
        """

        def one(r: int) -> dict[str, Any]:
            col = {int(j): i for i, j in enumerate(self.count_values)}
            m1 = int(self._m[r, col[1]]) if 1 in col else 0
            return {
                "n": int(self._n[r]),
                "N": float(self._N[r]),
                "K": self._K_int[r],
                "n_cells": int(self._n_cells[r]),
                "n_sample_uniques": m1,
                "max_count": int(self.count_values[self._m[r] > 0].max()),
            }

        def table(r: int) -> dict[str, int]:
            # the whole table, j >= 1 (m_0 follows from K): two tables with the same
            # totals but other m_j must not pass for one another (check_posterior_of)
            return {str(int(j)): int(v) for j, v in zip(self.count_values, self._m[r],
                                                        strict=True) if j >= 1 and v > 0}

        out: dict[str, Any] = {"structure": self.structure, "tie": self.tie}
        if self.domains is None:
            out |= one(0)
            out["counts_of_counts"] = table(0)
        else:
            out["domains"] = {str(d): one(r) for r, d in enumerate(self.domains)}
            out |= {
                "n": int(self._n.sum()),
                "N": float(self._N.sum()),
                "n_cells": int(self._n_cells.sum()),
                "counts_of_counts": {str(d): table(r) for r, d in enumerate(self.domains)},
            }
        return out

    @property
    def coords(self) -> dict[str, list]:
        """Named coordinates of the model (``count`` and, for subpopulations, ``domain``)."""
        out = {"count": self.count_values.tolist()}
        if self.domains is not None:
            out = {"domain": [str(d) for d in self.domains]} | out
        return out

    # ---------------------------------------------------------------- graph
    def graph_key(self) -> tuple:
        """Hashable key equal for models whose PyMC graphs differ only in their data.

        Two models with the same key build the same graph up to the values of the
        ``pm.Data`` containers (:meth:`data_values`) and the ``count`` coordinate, so
        :func:`sdcbayes.inference.fit` compiles the graph once and reuses it with
        ``pm.set_data``. The number of subpopulations is part of the key: it sets the
        number of parameters.
        """
        n_domains = None if self.domains is None else len(self.domains)
        return (self.name, self.structure, self.tie, n_domains, self.priors_json())

    def data_values(self) -> dict[str, np.ndarray]:
        """Values of the model's ``pm.Data`` containers, by name (used by :meth:`build`).

        ``m`` (cells per count), ``n``, ``N``, ``K``, the observed counts ``j`` and
        ``log j!`` (of the log-pmf in :func:`negbin_count_logpmf`, precomputed: it
        holds no parameter).

        All float64. ``pm.Data`` casts integer arrays to int32 without a word, and
        ``m_0 = K - #observed cells`` exceeds 2**31 for keys of 2**31 cells or more
        (Adult with 9 keys: K = 2.7e9), which wrapped to a negative weight. float64 is
        exact up to 2**53 and within a relative 1e-16 beyond, ample for ``K`` and
        ``m_0``, which enter only as ``alpha beta = 1/K`` and the weight of the empty
        cells.
        """
        sub = self.domains is not None
        if sub:
            value = np.broadcast_to(self.count_values, self._m.shape).astype(float)
            out = {
                "m": self._m.astype(np.float64),
                "n": self._n.astype(float),
                "N": self._N.astype(float),
                "K": self._K.astype(float),
            }
        else:
            value = self.count_values.astype(float)
            out = {
                "m": self._m[0].astype(np.float64),
                "n": np.asarray(float(self._n[0])),
                "N": np.asarray(float(self._N[0])),
                "K": np.asarray(float(self._K[0])),
            }
        return out | {"j": value, "log_j_factorial": gammaln(value + 1.0)}

    def build(self) -> pm.Model:
        """Return the PyMC model (coords ``count`` [, ``domain``]; see the class docstring)."""
        sub = self.domains is not None
        ddims = ("domain",) if sub else None
        obs_dims = ("domain", "count") if sub else ("count",)
        pr = self.priors
        data = self.data_values()
        with pm.Model(coords=self.coords) as model:
            m = pm.Data("m", data["m"], dims=obs_dims)
            n = pm.Data("n", data["n"], dims=ddims)
            N = pm.Data("N", data["N"], dims=ddims)
            K = pm.Data("K", data["K"], dims=ddims)

            if self.structure in ("pooled", "common_beta"):
                alpha = prior_to_rv(pm, "alpha", pr["alpha"])
                omega = 1.0 if self.tie else prior_to_rv(pm, "omega", pr["omega"])
                # eq. 12: one beta; K is common, so K[0] is the paper's k.
                k = K[0] if sub else K
                beta = pm.Deterministic("beta", omega / (k * alpha))
            elif self.structure == "separate":
                alpha = prior_to_rv(pm, "alpha", pr["alpha"], dims=ddims)
                omega = 1.0 if self.tie else prior_to_rv(pm, "omega", pr["omega"], dims=ddims)
                beta = pm.Deterministic("beta", omega / (K * alpha), dims=ddims)
            else:  # hierarchical, non-centred on the log scale
                a_med = prior_to_rv(pm, "alpha_median", pr["alpha_median"])
                a_sd = prior_to_rv(pm, "alpha_spread", pr["alpha_spread"])
                a_z = pm.Normal("alpha_z", 0.0, 1.0, dims=ddims)
                alpha = pm.Deterministic("alpha", pt.exp(pt.log(a_med) + a_sd * a_z), dims=ddims)
                if self.tie:
                    omega = 1.0
                else:
                    o_med = prior_to_rv(pm, "omega_median", pr["omega_median"])
                    o_sd = prior_to_rv(pm, "omega_spread", pr["omega_spread"])
                    o_z = pm.Normal("omega_z", 0.0, 1.0, dims=ddims)
                    omega = pm.Deterministic(
                        "omega", pt.exp(pt.log(o_med) + o_sd * o_z), dims=ddims
                    )
                beta = pm.Deterministic("beta", omega / (K * alpha), dims=ddims)

            # eq. 10: mu = K P(F = 1) = K alpha N beta (1 + N beta)^-(1 + alpha), in logs.
            Nbeta = N * beta
            log_mu = pt.log(K) + pt.log(alpha) + pt.log(Nbeta) - (1.0 + alpha) * pt.log1p(Nbeta)
            mu = pm.Deterministic("mu", pt.exp(log_mu), dims=ddims)
            pm.Deterministic("f_u", mu / N, dims=ddims)
            if sub:
                pm.Deterministic("mu_total", mu.sum())
                alpha_b = alpha[:, None] if alpha.ndim else alpha
                nbeta_b = (n * beta)[:, None]
            else:
                alpha_b, nbeta_b = alpha, n * beta
            # The observed j as pm.Data: the compiled graph is then the same for every
            # data set (graph_key), so fit() reuses it with pm.set_data, and PyTensor's
            # on-disk cache serves other processes.
            j = pm.Data("j", data["j"], dims=obs_dims)
            log_j_factorial = pm.Data("log_j_factorial", data["log_j_factorial"], dims=obs_dims)
            pm.CustomDist(
                self.observed_var,
                alpha_b,
                nbeta_b,
                m,
                log_j_factorial,
                logp=_weighted_logp,
                observed=j,
                dims=obs_dims,
            )
        return model

    # ----------------------------------------------------------- predictive
    def observed(self) -> xr.Dataset:
        """The observed counts of counts ``m`` (dims [``domain``,] ``count``), m_0 included."""
        if self.domains is None:
            da = xr.DataArray(self._m[0], coords={"count": self.count_values}, dims="count")
        else:
            da = xr.DataArray(
                self._m,
                coords={"domain": [str(d) for d in self.domains], "count": self.count_values},
                dims=("domain", "count"),
            )
        return xr.Dataset({"m": da})

    def simulate(
        self, params: xr.Dataset, rng: np.random.Generator, max_count: int | None = None
    ) -> xr.Dataset:
        """Replicate counts of counts for every draw of ``params`` (prior or posterior).

        One multinomial draw over ``0, 1, …, max_count − 1, ≥ max_count`` per draw
        (see :mod:`sdcbayes.models.ppc`); the last ``count`` label is ``max_count``
        and stands for "``max_count`` or more" (``attrs["tail_from"]``).

        Parameters
        ----------
        params : xarray.Dataset
            Must hold ``alpha`` and ``beta`` with dims ``(chain, draw[, domain])``.
        rng : numpy.random.Generator
            Source of the multinomial draws.
        max_count : int, optional
            A whole number >= 1. Default: one more than the largest observed count. A
            smaller one pools the observed counts at and above it in the tail category
            as well, so compare the replicates with the observed ``m_j`` for
            ``j < max_count`` only (:func:`sdcbayes.inference.predictive_check` refuses
            the others).

        Raises
        ------
        InputError
            ``max_count`` is not a whole number >= 1 (2.5 would mix the categories
            ``j = 2`` and ``f >= 2``; 0 leaves only the tail).
        """
        if max(self._K_int) >= 2**63:
            # numpy's multinomial counts its trials in int64
            raise InputError(
                f"replicate counts of counts cannot be drawn for a cell space of K = "
                f"{max(self._K_int):.3g} cells (at most 2**63 - 1, NumPy's multinomial counts "
                "in int64); the fit and the risk do not need them: coarsen the keys or pass "
                "the number of cells that can actually occur to check the model's predictions"
            )
        if max_count is None:
            max_count = int(self.count_values.max()) + 1
        max_count = check_whole("max_count", max_count, 1,
                                what=" (counts from max_count up are pooled)")
        n = xr.DataArray(self._n.astype(float), dims="domain") if self.domains else self._n[0]
        K = xr.DataArray(self._K, dims="domain") if self.domains else self._K[0]
        alpha, nbeta, K = xr.broadcast(params["alpha"], params["beta"] * n, xr.DataArray(K))
        draws = simulate_counts_of_counts(alpha.values, nbeta.values, K.values, max_count, rng)
        coords = {d: alpha.coords[d] for d in alpha.dims if d in alpha.coords}
        if self.domains is not None:
            coords["domain"] = [str(d) for d in self.domains]
        coords["count"] = np.arange(max_count + 1)
        da = xr.DataArray(draws, coords=coords, dims=alpha.dims + ("count",))
        da.attrs["tail_from"] = int(max_count)
        return xr.Dataset({"m": da})
