"""Household (hierarchical) risk of a released file: ``assess_released`` with households.

``Microdata(..., household=...)`` gives :func:`~sdcbayes.risk.released.assess_released`
the household risk of the released file as ``assess_from_posterior`` gives the original's:
per draw θ_s, household h has 1 - Π_{i∈h}(1 - E(1/F_{p(i)} | θ_s)) over its kept members,
the household ER per draw sums it over the records, its mean is the summary's and its
quantiles (over the parameters only) the ``_hyper_interval`` (file_draws'
``_conditional_mean``, as the ER's); the ``_interval`` is predictive
(tests/test_household_predictive.py). Oracles:

* per draw, brute force from a records x draws array of E(1/F_p | θ_s), each column the
  records' risks of a ONE-draw posterior (``posterior_from_draws`` of that draw): blanks,
  a recode, ``missing="drop"``, weight classes, structural zeros, Poisson (κ = ∞) draws;
* a file without blanks: ``assess_from_posterior``'s household numbers;
* a census (N = n): 1/f_p counted by brute force over the original records in each
  released rectangle, every draw alike (the interval a point), a sample unique's
  household at risk 1;
* households of one record: the household ER is the ER, draw by draw;
* ``draw_chunk`` changes nothing; a file without households is the same to the bit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from released_reference import posterior_from_draws

from sdcbayes import Microdata
from sdcbayes.models.latent_class import LatentClassModel
from sdcbayes.protection import local_suppression
from sdcbayes.risk.measures import household_expected_reidentifications
from sdcbayes.risk.posterior_assess import assess_from_posterior
from sdcbayes.risk.released import HYPER_INTERVAL_KIND, INTERVAL_KIND, assess_released

pytestmark = pytest.mark.filterwarnings(
    "ignore::sdcbayes.inference.diagnostics.ConvergenceWarning",
    "ignore::RuntimeWarning")

KEYS = ["a", "b", "c"]
HH = "household_expected_reidentifications"
#: a structural zero no record has (removed from the frame below)
RULES = [{"a": ["p"], "b": ["y"], "c": ["c0"]}]


def _frame(n: int = 80, seed: int = 7, weight: float | None = None, missing: bool = False,
           zeros: bool = False) -> pd.DataFrame:
    """Three keys, households of 1-4 records (not adjacent), weights."""
    rng = np.random.default_rng(seed)
    hid = np.repeat(np.arange(n), rng.integers(1, 5, n))[:n]
    df = pd.DataFrame({"a": rng.choice(list("pqr"), n), "b": rng.choice(list("xy"), n),
                       "c": rng.choice([f"c{i}" for i in range(5)], n),
                       "hid": rng.permutation(hid),
                       "w": rng.uniform(5, 20, n) if weight is None else weight})
    if missing:
        df.loc[rng.choice(n, 8, replace=False), "a"] = np.nan
    if zeros:
        df = df[~((df["a"] == "p") & (df["b"] == "y") & (df["c"] == "c0"))]
    return df.reset_index(drop=True)


def _theta(spec, S: int, H: int = 3, seed: int = 3):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(H), S)
    phi = [rng.dirichlet(np.ones(L), (S, H)) for L in spec.n_levels]
    return w, phi


def _brute_force(R: np.ndarray, hh: np.ndarray) -> np.ndarray:
    """Per-draw household ER from records x draws risks (NaN: dropped, left out)."""
    out = np.zeros(R.shape[1])
    kept = ~np.isnan(R[:, 0])
    for h in np.unique(hh[kept]):
        mem = (hh == h) & kept
        out += mem.sum() * (1.0 - np.prod(1.0 - R[mem], axis=0))
    return out


def _per_draw(md, rel, spec, w, phi, kappa, **kw) -> np.ndarray:
    """Records x draws E(1/F_p | θ_s): the risks of each draw's one-draw posterior."""
    design = kw.pop("design", False)
    cols = []
    for s in range(w.shape[0]):
        one = posterior_from_draws(md, spec, w[[s]], [p[[s]] for p in phi],
                                   np.asarray(kappa)[[s]], chains=1, design=design)
        cols.append(assess_released(md, rel, one, random_seed=1, **kw)
                    .records["risk"].to_numpy())
    return np.column_stack(cols)


def _recoded(df):
    merge = {"c0": "c01", "c1": "c01", "c2": "c2", "c3": "c34", "c4": "c34"}
    rel = df.copy()
    rel["c"] = rel["c"].map(merge)
    return local_suppression(rel, KEYS, 3).frame, {"c": merge}


CASES = {
    "suppression": {},
    "recode": {"recode": True},
    "drop": {"missing": True},
    "weight-classes": {"design": True},
    "structural-zeros": {"zeros": True},
}


@pytest.mark.parametrize("case", list(CASES))
def test_household_er_is_the_per_draw_brute_force(case):
    opt = CASES[case]
    df = _frame(missing=opt.get("missing", False), zeros=opt.get("zeros", False))
    md = Microdata(df, KEYS, weight="w", household="hid",
                   **({"missing": "drop"} if opt.get("missing") else {}))
    design = opt.get("design", False)
    spec = LatentClassModel.from_microdata(
        md, n_classes=3, weights=design, **({"structural_zeros": RULES} if opt.get("zeros")
                                            else {}))
    w, phi = _theta(spec, S=6)  # with weight classes: their profiles too (spec.n_levels)
    assert len(phi) == len(KEYS) + design
    kappa = np.array([0.7, np.inf, 3.0, 1.5, np.inf, 6.0])  # Poisson draws among them
    kw = {}
    if opt.get("recode"):
        rel, kw["recodes"] = _recoded(df)
    else:
        rel = local_suppression(df, KEYS, 3).frame
    full = assess_released(md, rel, posterior_from_draws(md, spec, w, phi, kappa,
                                                         design=design),
                           random_seed=1, **kw)
    R = _per_draw(md, rel, spec, w, phi, kappa, design=design, **kw)
    # the oracle's loop reproduces the per-draw ER (validates the one-draw posteriors)
    np.testing.assert_allclose(
        np.nansum(R, axis=0),
        full.file_draws["expected_reidentifications_conditional_mean"].values.ravel(),
        rtol=1e-12)
    oracle = _brute_force(R, md.household_index)
    # the per-draw formula given θ: the ER's names, its _conditional_mean and _hyper_interval
    # (the _interval is predictive: tests/test_household_predictive.py)
    got = full.file_draws[HH + "_conditional_mean"].values.ravel()
    np.testing.assert_allclose(got, oracle, rtol=1e-12)
    s = full.summary
    assert s[HH] == pytest.approx(oracle.mean(), rel=1e-12)
    assert s[HH + "_hyper_interval"] == pytest.approx(
        list(np.quantile(oracle, [0.05, 0.95])), rel=1e-12)
    assert s["household_interval_kind"] == INTERVAL_KIND
    assert s["hyper_interval_kind"] == HYPER_INTERVAL_KIND
    kept = ~np.isnan(R[:, 0])
    # not the household risk of the mean risks: the order matters (mean of the per-draw)
    assert abs(s[HH] - household_expected_reidentifications(np.nanmean(R, axis=1),
                                                            md.household_index)) > 1e-9
    assert s["n_households"] == np.unique(md.household_index[kept]).size
    # each record: its household's mean over the draws of 1 - Π(1 - r); NaN where dropped
    hr = full.records["household_risk"].to_numpy()
    for h in np.unique(md.household_index[kept]):
        mem = (md.household_index == h) & kept
        want = np.mean(1.0 - np.prod(1.0 - R[mem], axis=0))
        np.testing.assert_allclose(hr[mem], want, rtol=1e-12)
    assert np.array_equal(np.isnan(hr), ~kept)
    if opt.get("missing"):
        assert (~kept).sum() == 8
    if opt.get("recode"):
        assert full.summary["n_recoded_patterns"] > 0
    assert full.summary["n_blanked_records"] > 0


def test_a_file_without_blanks_is_assess_from_posteriors():
    df = _frame(n=120, seed=11)
    md = Microdata(df, KEYS, weight="w", household="hid")
    spec = LatentClassModel.from_microdata(md, n_classes=3)
    w, phi = _theta(spec, S=8)
    kappa = np.array([0.5, 1.0, np.inf, 2.0, 4.0, np.inf, 0.8, 9.0])
    idata = posterior_from_draws(md, spec, w, phi, kappa)
    got = assess_released(md, df, idata, random_seed=1)
    ref = assess_from_posterior(md, idata, "latent-class", random_seed=1)
    assert got.summary[HH] == pytest.approx(ref.summary[HH], rel=1e-12)
    assert got.summary[HH + "_interval"] == pytest.approx(ref.summary[HH + "_interval"],
                                                          rel=1e-12)
    assert got.summary[HH + "_hyper_interval"] == pytest.approx(
        ref.summary[HH + "_hyper_interval"], rel=1e-12)
    assert got.summary["n_households"] == ref.summary["n_households"]
    for name in (HH, HH + "_conditional_mean"):  # predictive (seed for seed) and given θ
        np.testing.assert_allclose(got.file_draws[name].values, ref.file_draws[name].values,
                                   rtol=1e-12)
    np.testing.assert_allclose(got.records["household_risk"].to_numpy(),
                               ref.records["household_risk"].to_numpy(), rtol=1e-12)


def test_census_household_risk_is_exact_and_a_unique_makes_its_household_certain():
    # N = n (unit weights): every draw gives 1/f_p, f_p over the ORIGINAL records whose keys
    # lie in the released rectangle (a blank matches every level)
    df = _frame(n=90, seed=5, weight=1.0)
    md = Microdata(df, KEYS, weight="w", household="hid")
    spec = LatentClassModel.from_microdata(md, n_classes=2)
    w, phi = _theta(spec, S=4, H=2)
    idata = posterior_from_draws(md, spec, w, phi, np.array([1.0, np.inf, 2.0, 0.5]))
    orig = df[KEYS].to_numpy(dtype=object)
    for rel in (local_suppression(df, KEYS, 3).frame, df):
        out = assess_released(md, rel, idata, random_seed=1)
        vals = rel[KEYS].to_numpy(dtype=object)
        shown = rel[KEYS].notna().to_numpy()
        f = np.array([np.sum(np.all((orig == vals[i]) | ~shown[i], axis=1))
                      for i in range(len(df))])
        r = 1.0 / f
        oracle = _brute_force(np.column_stack([r]), md.household_index)[0]
        # F = f_p in every drawn population too: the predictive draws are the formula's
        for name in (HH, HH + "_conditional_mean"):
            draws = out.file_draws[name].values.ravel()
            np.testing.assert_allclose(draws, oracle, rtol=1e-12)
        for name in (HH + "_interval", HH + "_hyper_interval"):
            lo, hi = out.summary[name]
            assert lo == pytest.approx(oracle, rel=1e-12)
            assert hi == pytest.approx(oracle, rel=1e-12)
    # the unprotected file: a sample unique's household is re-identified for certain
    hr = out.records["household_risk"].to_numpy()
    uniq_hh = np.unique(md.household_index[f == 1])
    assert uniq_hh.size > 0
    assert np.all(hr[np.isin(md.household_index, uniq_hh)] == 1.0)


def test_one_record_households_give_the_er():
    df = _frame(n=70, seed=2)
    df["hid"] = np.arange(len(df))
    md = Microdata(df, KEYS, weight="w", household="hid")
    spec = LatentClassModel.from_microdata(md, n_classes=3)
    w, phi = _theta(spec, S=6)
    idata = posterior_from_draws(md, spec, w, phi, np.array([1.0, 2.0, np.inf, 0.5, 3.0, 4.0]))
    out = assess_released(md, local_suppression(df, KEYS, 3).frame, idata, random_seed=1)
    # given θ the ER's conditional mean; per drawn population the ER's predictive draw
    np.testing.assert_allclose(
        out.file_draws[HH + "_conditional_mean"].values,
        out.file_draws["expected_reidentifications_conditional_mean"].values, rtol=1e-12)
    np.testing.assert_allclose(
        out.file_draws[HH].values,
        out.file_draws["expected_reidentifications"].values, rtol=1e-12)
    np.testing.assert_array_equal(out.records["household_risk"].to_numpy(),
                                  out.records["risk"].to_numpy())
    assert out.summary["n_households"] == len(df)


def test_draw_chunks_change_nothing():
    df = _frame(n=100, seed=8)
    md = Microdata(df, KEYS, weight="w", household="hid")
    spec = LatentClassModel.from_microdata(md, n_classes=3)
    w, phi = _theta(spec, S=6)
    idata = posterior_from_draws(md, spec, w, phi, np.array([1.0, 2.0, np.inf, 0.5, 3.0, 7.0]))
    rel, recodes = _recoded(df)
    base = assess_released(md, rel, idata, random_seed=1, recodes=recodes)
    chunked = assess_released(md, rel, idata, random_seed=1, recodes=recodes, draw_chunk=1)
    for name in (HH, HH + "_conditional_mean"):
        np.testing.assert_allclose(chunked.file_draws[name].values,
                                   base.file_draws[name].values, rtol=1e-12)
    np.testing.assert_allclose(chunked.records["household_risk"].to_numpy(),
                               base.records["household_risk"].to_numpy(), rtol=1e-12)


def test_a_file_without_households_is_unchanged_to_the_bit():
    df = _frame(n=100, seed=9)
    md_h = Microdata(df, KEYS, weight="w", household="hid")
    md = Microdata(df, KEYS, weight="w")
    spec = LatentClassModel.from_microdata(md, n_classes=3)
    w, phi = _theta(spec, S=4)
    kappa = np.array([1.0, np.inf, 2.0, 0.5])
    rel = local_suppression(df, KEYS, 3).frame
    plain = assess_released(md, rel, posterior_from_draws(md, spec, w, phi, kappa),
                            random_seed=1)
    with_h = assess_released(md_h, rel, posterior_from_draws(md_h, spec, w, phi, kappa),
                             random_seed=1)
    assert not any("household" in k for k in plain.summary)
    assert "household_risk" not in plain.records and HH not in plain.file_draws
    for name in plain.file_draws.data_vars:
        np.testing.assert_array_equal(plain.file_draws[name].values,
                                      with_h.file_draws[name].values)
    pd.testing.assert_frame_equal(plain.records,
                                  with_h.records.drop(columns="household_risk"))
