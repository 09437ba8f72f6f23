"""Audit CC1 fixes in risk/measures.py and ``sdcbayes suda`` (findings 3, 4 and 5).

Each test fails on the code before the fix. The data are small and synthetic with
fixed seeds; the reference numbers are products, loops and group-bys written out
here, never the package's own formulas.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sdcbayes.exceptions import InputError
from sdcbayes.risk.measures import (
    file_summary,
    k_anonymity_violations,
    l_diversity,
    n_k_anonymity_violations,
    n_sample_uniques,
    weighted_k_anonymity_violations,
)


def _flat(text: str) -> str:
    return " ".join(text.split())


# --- finding 3: the --score-method help states the weights the code uses ----------


def _score_method_help() -> str:
    from sdcbayes.commands.suda import command

    (opt,) = [p for p in command.params if p.name == "score_method"]
    return _flat(opt.help)


def test_score_method_help_gives_the_seed_formula_for_max_size_below_the_keys():
    from sdcbayes.risk.suda import msu_size_weights

    text = _score_method_help()
    assert "(M - k)!" not in text  # with M the --max-size this is wrong once M < ATT
    assert "(ATT - k)!" in text
    assert "(ATT - k)(ATT - k - 1)...(ATT - M) = (ATT - k)!/(ATT - M - 1)!" in text
    # the help's example, 7 keys and --max-size 3, is what the code scores
    example = re.search(r"7 keys and --max-size 3 score sizes 1, 2, 3 as (\d+), (\d+), (\d+)",
                        text)
    assert example is not None
    shown = [float(v) for v in example.groups()]
    assert msu_size_weights(7, 3).tolist() == shown
    # ... and the product written out by hand, prod_{i=k}^{M} (ATT - i)
    assert shown == [float(math.prod(7 - i for i in range(k, 4))) for k in (1, 2, 3)]
    # the closed form the help gives, for every M below ATT (and (ATT - k)! at M = ATT)
    for att in range(1, 8):
        for m in range(1, att + 1):
            if m < att:
                want = [math.factorial(att - k) / math.factorial(att - m - 1)
                        for k in range(1, m + 1)]
            else:
                want = [math.factorial(att - k) for k in range(1, m + 1)]
            assert msu_size_weights(att, m).tolist() == want


def test_suda_help_and_module_docstring_no_longer_say_M_minus_k_factorial():
    import sdcbayes.commands.suda as mod
    from sdcbayes.cli import cli

    result = CliRunner().invoke(cli, ["suda", "--help"])
    assert result.exit_code == 0, result.output
    shown = _flat(result.output)
    assert "(M - k)!" not in shown
    assert "(ATT - k)!/(ATT - M - 1)!" in shown
    doc = _flat(mod.__doc__)
    assert "scores ``(M - k)!``" not in doc
    assert "``(ATT - k)!/(ATT - M - 1)!``" in doc


# --- finding 4: the l_diversity docstring no longer claims the Multi* columns match ---


def test_l_diversity_docstring_says_multi_columns_are_sdcbayes_own():
    doc = _flat(l_diversity.__doc__)
    assert "Definitions match sdcMicro's ``ldiversity``" not in doc
    assert "The three per-variable measures match sdcMicro's ``ldiversity``" in doc
    assert "need not agree with it" in doc
    assert "undefined behaviour" in doc


def test_multi_columns_are_the_documented_definition_by_brute_force():
    # what the docstring now says sdcbayes computes: per variable, the entropy /
    # recursive l within each sub-group fixed by the other sensitive variables,
    # minimised over sub-groups and variables (no missing values here)
    rng = np.random.default_rng(20240611)
    n, c = 120, 1.5
    cell = rng.integers(0, 6, n)
    sens = {"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n), "d": rng.integers(0, 4, n)}
    got = l_diversity(cell, sens, c=c)

    def entropy(vals):
        _, cnt = np.unique(vals, return_counts=True)
        p = cnt / cnt.sum()
        return math.exp(-float(np.sum(p * np.log(p))))

    def recursive(vals):
        cnt = sorted(np.unique(vals, return_counts=True)[1], reverse=True)
        ls = [j for j in range(2, len(cnt) + 1) if cnt[0] < c * sum(cnt[j - 1:])]
        return max(ls) if ls else 1

    frame = pd.DataFrame({"cell": cell, **sens})
    for g, block in frame.groupby("cell"):
        ents, recs = [], []
        for name in sens:
            others = [o for o in sens if o != name]
            for _, sub in block.groupby(others):
                ents.append(entropy(sub[name].to_numpy()))
                recs.append(recursive(sub[name].to_numpy()))
        assert got.loc[g, "MultiEntropy_Ldiversity"] == pytest.approx(min(ents), rel=1e-12)
        assert got.loc[g, "MultiRecursive_Ldiversity"] == min(recs)


# --- finding 5: bad counts, list values and text c are refused ---------------------


@pytest.mark.parametrize("bad", [[-1, 2], [2.0, -0.5], [1.0, np.inf], [1.0, -np.inf]])
def test_negative_or_infinite_fk_refused(bad):
    for call in (lambda: k_anonymity_violations(bad, 2),
                 lambda: n_k_anonymity_violations(bad, 2),
                 lambda: n_sample_uniques(bad),
                 lambda: file_summary([0.1, 0.2], bad)):
        with pytest.raises(InputError, match=r"fk must hold sample frequencies, finite "
                                             r"numbers >= 0, but entry \d is"):
            call()


@pytest.mark.parametrize("bad", [[-5.0, 10.0], [3.0, np.inf]])
def test_negative_or_infinite_weight_sum_refused(bad):
    with pytest.raises(InputError, match=r"Fk_hat must hold weight sums .* finite numbers "
                                         r">= 0, but entry \d is"):
        weighted_k_anonymity_violations(bad, 2)


def test_bad_count_refused_before_k_is_used_and_names_the_entry():
    with pytest.raises(InputError, match=r"entry 2 is -3; fix the column"):
        k_anonymity_violations(np.array([1, 4, -3, 2]), 3)
    with pytest.raises(InputError, match=r"entry 0 is -5\.0"):
        weighted_k_anonymity_violations(pd.Series([-5.0, 1.0]), 2)


def test_valid_counts_give_the_plain_comparison():
    rng = np.random.default_rng(3)
    fk = rng.integers(0, 7, 500).astype(float)
    fk[rng.random(500) < 0.1] = np.nan  # no count: never a violation
    fk[::7] += 0.25  # fractional wildcard counts (0 < alpha < 1) stay allowed
    Fk = rng.gamma(2.0, 3.0, 500)
    Fk[::11] = 0.0
    for k in (1, 2, 3, 5):
        np.testing.assert_array_equal(k_anonymity_violations(fk, k), fk < k)
        assert n_k_anonymity_violations(fk, k) == int(np.sum(fk < k))
        np.testing.assert_array_equal(weighted_k_anonymity_violations(Fk, k), Fk < k)
    ints = rng.integers(0, 5, 300)
    assert n_sample_uniques(ints) == int(np.sum(ints == 1))
    np.testing.assert_array_equal(k_anonymity_violations(ints, 2), ints < 2)
    np.testing.assert_array_equal(k_anonymity_violations([True, False], 1), [False, True])


@pytest.mark.parametrize("values", [
    [[1], [2], [3]],  # a table to np.asarray: the old message spoke of shape (3, 1)
    [[1], [2, 3], [4]],  # ragged: np.asarray raised a bare ValueError
    [(1, 2), (3, 4), (5, 6)],
    pd.Series([[1], [2], [3]]),  # object Series of lists: factorize's TypeError
    [{1}, {2}, {3}],
    np.array([{"a": 1}, {"a": 2}, {"b": 3}], dtype=object),
])
def test_list_valued_sensitive_values_named(values):
    with pytest.raises(InputError, match=r"sensitive variable 's' holds lists \(or other "
                                         r"containers\) as values; give each record one value"):
        l_diversity(np.array([0, 0, 1]), {"s": values})


def test_two_d_array_still_gets_the_shape_message():
    with pytest.raises(InputError, match=r"has shape \(3, 2\)"):
        l_diversity(np.array([0, 0, 1]), {"s": np.ones((3, 2))})


@pytest.mark.parametrize("c", ["2", b"2", np.str_("2"), "inf"])
def test_text_c_refused(c):
    with pytest.raises(InputError, match=r"finite number > 0 \(sdcMicro's l_recurs_c\), "
                                         r"not text; got .*: pass e\.g\. c=2"):
        l_diversity(np.array([0, 0, 1]), {"s": [1, 2, 3]}, c=c)


def test_valid_l_diversity_input_unchanged_across_forms():
    rng = np.random.default_rng(11)
    n = 200
    cell = rng.integers(-1, 8, n)  # -1: excluded records
    a = rng.choice(["x", "y", "z"], n).astype(object)
    a[rng.random(n) < 0.1] = None
    b = rng.integers(0, 4, n)
    ref = l_diversity(cell, {"a": a, "b": b}, c=2.0)
    for c in (2, 2.0, np.float32(2.0), np.int64(2)):
        for sa, sb in ((list(a), list(b)), (pd.Series(a), pd.Series(b)), (tuple(a), b)):
            got = l_diversity(cell, {"a": sa, "b": sb}, c=c)
            pd.testing.assert_frame_equal(got, ref, check_exact=True)
    # distinct counts by hand (missing counts as one more value next to real ones)
    for g in range(8):
        sel = cell == g
        if not sel.any():
            continue
        vals = a[sel]
        real = {v for v in vals if v is not None}
        want = len(real) + (1 if real and any(v is None for v in vals) else 0)
        assert ref.loc[g, "a_Distinct_Ldiversity"] == want
        assert ref.loc[g, "b_Distinct_Ldiversity"] == len(set(b[sel]))
    assert list(itertools.islice(ref.columns, 2)) == ["a_Distinct_Ldiversity",
                                                      "a_Entropy_Ldiversity"]
