"""Audit CC1 findings 1 and 2 in risk/suda.py: a repeated key column, unchecked DIS-SUDA input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.risk.suda import dis_estimate, dis_suda_scores, suda


def test_repeated_column_name_refused_naming_it():
    dup = pd.DataFrame([[1, 2, 3], [1, 3, 3], [2, 2, 3]], columns=["a", "a", "b"])
    with pytest.raises(InputError, match=r"key name\(s\) 'a' select more than one column"):
        suda(dup, ["a", "b"])
    # a key that is not repeated still works on the same frame: b alone, 3 equal values
    assert suda(dup, ["b"]).scores.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("args, match", [
    (([1.0, 2.0], 2, 5.0, 3), r"dis must be a probability in \[0, 1\].*got 5"),
    (([1.0, 2.0], 2, -0.1, 3), r"dis must be a probability in \[0, 1\].*got -0.1"),
    (([1.0, 2.0], 2, float("nan"), 3), r"dis must be a probability"),
    (([1.0, 2.0], 2, "0.5", 3), r"dis must be a probability"),
    (([-1.0, 2.0], 1, 0.5, 3), r"scores must be SUDA scores, finite and >= 0; got -1"),
    (([np.nan, 2.0], 2, 0.5, 3), r"scores must be SUDA scores, finite and >= 0; got nan"),
    (([1.0, 2.0], -2, 0.5, 3), r"n_uniques .* must hold whole numbers >= 0 \(got -2\)"),
])
def test_dis_suda_scores_refuses_impossible_input(args, match):
    with pytest.raises(InputError, match=match):
        dis_suda_scores(*args)


@pytest.mark.parametrize("u, p", [(-3, 2), (3, -2), (np.inf, 2), ([1, np.nan], 2)])
def test_dis_estimate_refuses_negative_or_nonfinite_counts(u, p):
    with pytest.raises(InputError, match=r"must hold whole numbers >= 0"):
        dis_estimate(u, p, 0.1)


def test_valid_dis_suda_input_unchanged():
    # formula written out (sdcMicro src/Suda2.h): d_i = 1/(1 + (U/DIS - U)/(s_i^Q sum s_j^-Q))
    s = np.array([0.0, 6.0, 2.0, 8.0, 4.0])
    u, dis, att = 3, 0.25, 4
    q = 1 + (8 - att) / 20
    adj = np.sum(s[s > 0] ** -q)
    want = np.where(s > 0, 1 / (1 + (u / dis - u) / (np.where(s > 0, s, 1) ** q * adj)), 0)
    np.testing.assert_allclose(dis_suda_scores(s, u, dis, att), want, rtol=1e-14)
    assert dis_suda_scores(s, 0, 0.0, att).tolist() == [0.0] * 5  # U = 0 gives DIS 0
    assert dis_estimate(0, 4, 0.1) == 0.0
    assert dis_estimate(3, 4, 0.1) == pytest.approx(0.3 / (0.3 + 4 * 0.9), rel=1e-15)
    # suda() on a file with no sample unique still runs (dis = 0 passes the check)
    flat = pd.DataFrame({"a": [1, 1, 2, 2], "b": [3, 3, 4, 4]})
    res = suda(flat, ["a", "b"])
    assert res.dis == 0.0 and res.dis_scores.tolist() == [0.0] * 4
