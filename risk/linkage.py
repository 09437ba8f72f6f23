"""Distance-based record linkage risk of a protected (perturbed) file.

Seed ``001_…`` (Templ, Meindl, Kowarik & Chen 2014, IHSN *Introduction to SDC*),
section 3.6, after Pagliuca & Seri (1999): a protected file ``A'`` is made from
the original ``A`` record by record. For each record ``r`` of ``A'`` compute its
distance to every record of ``A`` and find the nearest (``r1``) and second
nearest (``r2``). If ``r1`` is the original record ``r`` was made from, ``r`` is
linked; the seed also counts the case where the original is ``r2``. The share of
protected records linked to their own original is the file's linkage risk.

Here: Euclidean distance on the chosen numeric variables, each divided by its
standard deviation in the original file (so that noise and scale are comparable
across variables; ``standardize=False`` keeps the raw units). For record ``i``
of the protected file the *rank* of its original is ``1 +`` the number of
original records strictly closer than it (competition ranking): ties count in
the intruder's favour, which makes the shares upper bounds. ``rank = 1`` is
"nearest", ``2`` "second nearest", and ``3`` stands for "third or further". The
tie-fair version, an intruder picking at random among the records at the
smallest distance, is ``expected_correct``: ``1/t_i`` when the original is
among the ``t_i`` nearest at equal distance, else 0. Distances equal to within
a relative ``1e-9`` are ties.

Cost: one k-d tree on the original file (``scipy.spatial.cKDTree``) and a
2-nearest-neighbour query per protected record; no ``n x n`` distance matrix.

Imports NumPy, SciPy and pandas only (plus the project's exceptions) -- never
PyMC.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from sdcbayes.exceptions import InputError
from sdcbayes.protection.base import check_row_order

__all__ = ["LinkageResult", "linkage_risk"]

#: Distances equal to within this relative tolerance are ties.
_TIE_RTOL = 1e-9


@dataclass(frozen=True)
class LinkageResult:
    """Per-record linkage outcome and file-level shares.

    Attributes
    ----------
    variables : list of str
        Variables the distance uses.
    rank : numpy.ndarray
        int64 per protected record: 1 (own original nearest), 2 (second
        nearest), 3 (third or further).
    n_tied : numpy.ndarray
        int64: original records at the smallest distance, the own one included,
        when ``rank == 1`` (1 = no tie); 0 otherwise.
    distance : numpy.ndarray
        Distance from each protected record to its own original.
    scale : numpy.ndarray
        Divisor of each variable (its standard deviation in the original, or 1).
    """

    variables: list[str]
    rank: np.ndarray
    n_tied: np.ndarray
    distance: np.ndarray
    scale: np.ndarray

    @property
    def n_records(self) -> int:
        """Number of protected records."""
        return int(self.rank.size)

    @property
    def share_nearest(self) -> float:
        """Share of protected records whose nearest original is their own (seed 001, 3.6)."""
        return float(np.mean(self.rank == 1))

    @property
    def share_second(self) -> float:
        """Share whose own original is the second nearest."""
        return float(np.mean(self.rank == 2))

    @property
    def share_linked(self) -> float:
        """Share linked to the nearest or the second nearest original."""
        return float(np.mean(self.rank <= 2))

    @property
    def expected_correct(self) -> np.ndarray:
        """Per record: probability of a correct link, picking at random among tied nearest."""
        out = np.zeros(self.n_records)
        hit = self.rank == 1
        out[hit] = 1.0 / self.n_tied[hit]
        return out

    def records_frame(self) -> pd.DataFrame:
        """One row per protected record, in input order.

        Columns ``record``, ``rank``, ``n_tied``, ``distance``, ``linked_nearest``,
        ``linked_second``, ``expected_correct``.
        """
        return pd.DataFrame(
            {
                "record": np.arange(self.n_records, dtype=np.int64),
                "rank": self.rank,
                "n_tied": self.n_tied,
                "distance": self.distance,
                "linked_nearest": self.rank == 1,
                "linked_second": self.rank == 2,
                "expected_correct": self.expected_correct,
            }
        )

    def summary(self) -> dict[str, Any]:
        """File-level shares (plain Python types)."""
        return {
            "method": "distance-based record linkage",
            "variables": list(self.variables),
            "n_records": self.n_records,
            "share_nearest": self.share_nearest,
            "share_second": self.share_second,
            "share_linked": self.share_linked,
            "expected_correct_share": float(self.expected_correct.mean()),
            "n_ties_at_nearest": int(np.count_nonzero(self.n_tied > 1)),
        }


def _as_matrix(
    data: Any, variables: Sequence[str] | None, role: str
) -> tuple[np.ndarray, list[str]]:
    if isinstance(data, pd.DataFrame):
        names = list(data.columns) if variables is None else list(variables)
        absent = [v for v in names if v not in data.columns]
        if absent:
            raise InputError(
                f"variable(s) {', '.join(map(repr, absent))} not in the {role} file; "
                f"available columns: {', '.join(map(str, data.columns))}."
            )
        bad = [v for v in names if not pd.api.types.is_numeric_dtype(data[v])]
        if bad:
            raise InputError(
                f"variable(s) {', '.join(map(repr, bad))} of the {role} file are not numeric; "
                "distance-based linkage needs numeric variables (code categories first)."
            )
        x = data[names].to_numpy(dtype=float)
    else:
        x = np.asarray(data, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2:
            raise InputError(
                f"the {role} file must be a DataFrame or a 2-D array, got {x.ndim} dimensions; "
                "pass records x variables."
            )
        names = (
            [f"var{j + 1}" for j in range(x.shape[1])] if variables is None else list(variables)
        )
        if len(names) != x.shape[1]:
            raise InputError(
                f"{len(names)} variable name(s) for {x.shape[1]} column(s) of the {role} file; "
                "pass one name per column."
            )
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise InputError(f"the {role} file has shape {x.shape}; it needs records and variables.")
    if not np.isfinite(x).all():
        raise InputError(
            f"the {role} file has missing or infinite values in the linkage variables; "
            "impute or drop them before measuring linkage risk."
        )
    return x, [str(v) for v in names]


def linkage_risk(
    original: Any,
    protected: Any,
    variables: Sequence[str] | None = None,
    standardize: bool = True,
) -> LinkageResult:
    """Distance-based record linkage risk (seed 001, section 3.6).

    Parameters
    ----------
    original, protected : pandas.DataFrame or array_like
        The original file and the protected file made from it, record ``i`` of
        ``protected`` from record ``i`` of ``original`` (same number of rows):
        records are paired by position. Two frames with identical indexes, or
        with indexes that differ as sets, are paired as they are; the same
        unique index labels in a different order raise :class:`InputError`
        (pass ``protected.loc[original.index]``).
    variables : list of str, optional
        Numeric variables to compare; default all columns (of ``original``).
    standardize : bool, default True
        Divide each variable by its standard deviation in the original file
        (variables constant there keep their units).

    Returns
    -------
    LinkageResult
        ``.share_nearest`` is the seed's linkage risk; ``.share_second`` and
        ``.share_linked`` the second-nearest share and the total.

    Raises
    ------
    InputError
        Different numbers of records, rows in a different order (see above),
        unknown or non-numeric variables, missing values.
    """
    if variables is None and isinstance(original, pd.DataFrame):
        variables = list(original.columns)
    x_orig, names = _as_matrix(original, variables, "original")
    x_prot, _ = _as_matrix(
        protected, names if isinstance(protected, pd.DataFrame) else variables, "protected"
    )
    if x_orig.shape != x_prot.shape:
        raise InputError(
            f"original has {x_orig.shape[0]} records x {x_orig.shape[1]} variables, protected "
            f"{x_prot.shape[0]} x {x_prot.shape[1]}; record linkage needs the protected file "
            "made record by record from the original, in the same order."
        )
    check_row_order(original, protected)
    n = x_orig.shape[0]
    scale = np.ones(x_orig.shape[1])
    if standardize and n > 1:
        sd = x_orig.std(axis=0, ddof=1)
        scale = np.where(sd > 0, sd, 1.0)  # a constant variable keeps its units
    a = x_orig / scale
    b = x_prot / scale

    own = np.sqrt(np.sum((b - a) ** 2, axis=1))
    tree = cKDTree(a)
    k = min(2, n)
    dist, _ = tree.query(b, k=k)
    dist = dist.reshape(n, k)
    # strictly closer than the own original, with a relative tolerance for ties
    closer = np.sum(dist < own[:, None] * (1.0 - _TIE_RTOL), axis=1)
    rank = 1 + closer  # closer == k = 2 means third or further: rank 3

    n_tied = np.zeros(n, dtype=np.int64)
    hit = np.flatnonzero(rank == 1)
    if hit.size:
        # original records within the own distance (ties): a small ball around each hit
        radius = own[hit] * (1.0 + _TIE_RTOL) + np.finfo(float).tiny
        n_tied[hit] = tree.query_ball_point(b[hit], r=radius, return_length=True)
        n_tied[hit] = np.maximum(n_tied[hit], 1)
    return LinkageResult(
        variables=names,
        rank=rank.astype(np.int64),
        n_tied=n_tied,
        distance=own,
        scale=scale,
    )
