"""Input validation and documentation of the Skinner-Elliot DIS functions (risk/dis.py).

The estimator itself is checked by simulation in test_risk_loglinear.py; here the
references are hand counts.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.risk import dis
from sdcbayes.risk.dis import dis_estimate, dis_from_frequencies, dis_truth


@pytest.mark.parametrize(("n1", "n2"), [(np.nan, 3), (3, np.nan), (np.inf, 3), (-1, 3), (3, -2)])
def test_dis_estimate_refuses_nan_and_negative_counts(n1, n2):
    # NaN slipped through the old `n1 < 0` test and came back as a NaN estimate
    with pytest.raises(InputError, match="finite and >= 0"):
        dis_estimate(n1, n2, 0.1)


def test_dis_estimate_refuses_nan_inside_arrays():
    with pytest.raises(InputError, match="finite"):
        dis_estimate([10, np.nan], [1, 2], 0.1)


@pytest.mark.parametrize("fk", [[0, -1, 1], [1, 2, np.nan], [1, 2.5], [1, 0, 2]])
def test_dis_from_frequencies_refuses_non_counts(fk):
    # [0, -1, 1] returned 1.0 unchecked
    with pytest.raises(InputError, match=r"whole numbers >= 1"):
        dis_from_frequencies(fk, 0.1)


def test_dis_from_frequencies_counts_cells_not_records():
    # cells: two uniques, one pair, one triple; n1 = 2, n2 = 1 (the pair CELL)
    pi = 0.2
    theta = dis_from_frequencies([1, 1, 2, 3], pi)
    assert theta == pytest.approx(pi * 2 / (pi * 2 + 2 * (1 - pi) * 1))
    # suda's dis_estimate takes the records in pairs, 2 per pair cell: same value
    from sdcbayes.risk.suda import dis_estimate as suda_dis_estimate

    assert suda_dis_estimate(2, 2, pi) == pytest.approx(theta)


def test_dis_truth_validates_its_inputs():
    assert dis_truth([1, 1, 2, 0], [1, 3, 5, 4]) == pytest.approx(2 / 4)  # f = 0: unsampled
    with pytest.raises(InputError, match="Fk < fk"):
        dis_truth([1, 1], [0, 0])  # returned NaN
    with pytest.raises(InputError, match="whole numbers >= 0"):
        dis_truth([1, np.nan], [2, 3])
    with pytest.raises(InputError, match="whole numbers >= 0"):
        dis_truth([1, 1], [2, -3])
    with pytest.raises(InputError, match="one entry per cell"):
        dis_truth([1, 1, 2], [2, 3])
    assert np.isnan(dis_truth([2, 3], [2, 3]))  # no sample uniques: theta undefined


def test_docstrings_say_per_cell_and_point_to_suda():
    for fn in (dis_from_frequencies, dis_truth):
        assert "per CELL" in fn.__doc__ or "one entry per CELL" in fn.__doc__
    for fn in (dis.dis_estimate, dis_from_frequencies):
        assert "sdcbayes.risk.suda.dis_estimate" in fn.__doc__
        assert "RECORDS in pairs" in fn.__doc__


@pytest.mark.parametrize(("n1", "n2"), [(2.5, 1), (2, 1.5), ([3, 2.5], 1)])
def test_dis_estimate_refuses_fractional_counts(n1, n2):
    # dis_estimate(2.5, 1.5, 0.1) returned a number, unlike dis_from_frequencies
    with pytest.raises(InputError, match="whole number"):
        dis_estimate(n1, n2, 0.1)
    assert dis_estimate(3.0, 1.0, 0.1) == pytest.approx(0.3 / (0.3 + 1.8))  # whole floats
