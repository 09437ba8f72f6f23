"""Fixes of audit L in the inference layer: posterior I/O, stamps, diagnostics, checks.

Each test pins one finding: F1/F2 (a posterior saved back to the file it was read
from, and a failed save, keep the data), F5/F6 (wrong objects and paths give an
InputError that names the fix), F10 (stamps on an xarray.DataTree), F7
(diagnostics of chains that never moved or ran off to infinity), F11 (small
errors and messages), F12 (the variables a NUTS fit diagnoses).
"""

import logging
import math
import os
import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr
from scipy.special import expit

from sdcbayes import _compat
from sdcbayes.exceptions import InputError
from sdcbayes.inference import (
    ConvergenceWarning,
    check_diagnostics,
    compute_diagnostics,
    fit,
    fitting,
    load_posterior,
    posterior_predictive,
    predictive_check,
    prior_predictive,
    provenance,
    save_posterior,
)
from sdcbayes.inference.diagnostics import PredictiveCheckWarning, check_predictive_uniques
from sdcbayes.inference.posterior import group_names, stamp
from sdcbayes.models.poisson_gamma import PoissonGammaModel
from sdcbayes.models.ppc import predictive_table


def _coc(K, n_mean, alpha, seed):
    rng = np.random.default_rng(seed)
    f = rng.negative_binomial(alpha, 1.0 / (1.0 + n_mean / (K * alpha)), size=K)
    j, m = np.unique(f[f > 0], return_counts=True)
    return dict(zip(j.tolist(), m.tolist(), strict=True))


COC = _coc(300, 900, 0.5, seed=8)


def small_model():
    return PoissonGammaModel(COC, K=300, N=10_000)


@pytest.fixture(scope="module")
def idata():
    """A tiny MAP fit (Laplace draws), stamped as fit stamps every posterior."""
    return fit(small_model(), method="map", draws=50, chains=2, random_seed=2)


@pytest.fixture(scope="module")
def saved(idata, tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "posterior.nc"
    save_posterior(idata, path)
    return path


def _leftovers(folder):
    return [p for p in os.listdir(folder) if p.endswith(".partial")]


# ----------------------------------------------------------------- F1, F2: safe saves
def test_a_loaded_posterior_saves_back_to_its_own_file(idata, tmp_path):
    # F1: a lazily read posterior kept the file open; saving to it truncated the data
    path = tmp_path / "posterior.nc"
    save_posterior(idata, path)
    back = load_posterior(path)
    posterior_predictive(small_model(), back, random_seed=1)
    save_posterior(back, path)
    again = load_posterior(path)
    assert "posterior_predictive" in group_names(again)
    np.testing.assert_array_equal(again.posterior["alpha"].values,
                                  idata.posterior["alpha"].values)
    assert provenance(again) == provenance(idata)
    assert _leftovers(tmp_path) == []


def test_a_failed_save_leaves_the_existing_file_intact(idata, tmp_path):
    # F2: ArviZ writes group by group; a failure part-way left a truncated file
    path = tmp_path / "posterior.nc"
    save_posterior(idata, path)
    before = path.read_bytes()
    bad = idata.copy()
    bad.constant_data.attrs["note"] = {"by": "me"}  # netCDF cannot store a dict attribute
    with pytest.raises(TypeError):
        save_posterior(bad, path)
    assert path.read_bytes() == before
    assert _leftovers(tmp_path) == []
    assert "constant_data" in group_names(load_posterior(path))


def test_stamp_encodes_values_netcdf_cannot_store(idata, tmp_path):
    # F2: a bool is an int and was stored raw, failing only at save time
    copy = idata.copy()
    stamp(copy, reviewed=True, flag=np.bool_(False), count=np.int64(3), share=np.float32(0.5),
          huge=2**70, note=None)
    attrs = copy.posterior.attrs
    assert attrs["reviewed"] == "true" and attrs["flag"] == "false" and attrs["note"] == "null"
    assert attrs["count"] == 3 and type(attrs["count"]) is int
    assert attrs["huge"] == str(2**70)
    assert copy.attrs["reviewed"] == "true"
    back = load_posterior(save_posterior(copy, tmp_path / "p.nc"))
    assert back.posterior.attrs["reviewed"] == "true" and back.posterior.attrs["count"] == 3
    # provenance() gives them back as given, not as JSON text (a plain "true" string stays one)
    stamp(copy, text="true")
    for read in (provenance(copy), provenance(back)):
        assert read["reviewed"] is True and read["flag"] is False and read["note"] is None
        assert read["huge"] == 2**70 and read["count"] == 3
    assert provenance(copy)["text"] == "true"
    stamp(copy, reviewed="no")  # re-stamped as a string: no longer decoded
    assert provenance(copy)["reviewed"] == "no"


# ------------------------------------------------------- F5: objects that are no posterior
class PosteriorAssessment:  # stands in for risk's result object: it carries .idata
    idata = None


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        (PosteriorAssessment(), r"got PosteriorAssessment.*\.idata"),
        (xr.Dataset({"a": ("x", [1.0])}), r"got Dataset.*InferenceData\(posterior=ds\)"),
        (None, r"got NoneType.*sdcbayes.inference.fit"),
        ("posterior.nc", r"got str.*load_posterior\(path\)"),
    ],
)
def test_objects_that_are_no_posterior_are_refused_with_the_fix(obj, match, tmp_path):
    with pytest.raises(InputError, match=match):
        group_names(obj)
    with pytest.raises(InputError, match=match):
        provenance(obj)
    with pytest.raises(InputError, match=match):
        save_posterior(obj, tmp_path / "p.nc")


# ------------------------------------------------------------------ F6: wrong paths
def test_wrong_files_and_folders_give_input_errors(idata, saved, tmp_path):
    text = tmp_path / "notnc.nc"
    text.write_text("record,cell\n0,1\n")
    with pytest.raises(InputError, match="is not a netCDF file"):
        load_posterior(text)
    plain = tmp_path / "plain.nc"
    xr.Dataset({"x": ("i", np.arange(3))}).to_netcdf(plain, engine="h5netcdf")
    with pytest.raises(InputError, match="netCDF file but has no groups: not an ArviZ"):
        load_posterior(plain)
    folder = tmp_path / "isdir.nc"
    folder.mkdir()
    with pytest.raises(InputError, match="is a folder"):
        save_posterior(idata, folder)
    with pytest.raises(InputError, match="is a folder"):
        load_posterior(folder)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError, match="a file of that name"):
        save_posterior(idata, tmp_path / "afile" / "posterior.nc")
    for name in ("run.zarr", "run.ZARR", "p.json"):
        with pytest.raises(InputError, match="netCDF only"):
            save_posterior(idata, tmp_path / name)
        with pytest.raises(InputError, match="netCDF only"):
            load_posterior(tmp_path / name)
    with pytest.raises(InputError, match="path must be a file or folder name"):
        load_posterior(3)


def test_netcdf_suffixes_are_files_whatever_their_case(idata, tmp_path):
    for name in ("posterior.NC", "out.netcdf", "out.Nc4"):
        written = save_posterior(idata, tmp_path / name)
        assert written == tmp_path / name and written.is_file()
        assert provenance(load_posterior(written)) == provenance(idata)
    # a name without a netCDF suffix (dots included) is still a folder
    assert save_posterior(idata, tmp_path / "run.v2") == tmp_path / "run.v2" / "posterior.nc"


# ------------------------------------------------------------------- F10: DataTree
@pytest.mark.skipif(not hasattr(xr, "DataTree"), reason="xarray without DataTree")
def test_stamp_writes_into_a_datatree(tmp_path):
    post = xr.Dataset({"alpha": (("chain", "draw"), np.ones((1, 5)))})
    tree = xr.DataTree.from_dict({"posterior": post})
    stamp(tree, sdcbayes_version="0.1.0", model="poisson-gamma", settings={"random_seed": 1})
    expected = {"sdcbayes_version": "0.1.0", "model": "poisson-gamma",
                "settings": {"random_seed": 1}}
    assert provenance(tree) == expected
    assert tree["posterior"].attrs["model"] == "poisson-gamma"
    assert tree.attrs["model"] == "poisson-gamma"
    back = load_posterior(save_posterior(tree, tmp_path / "tree.nc"))
    assert provenance(back) == expected
    np.testing.assert_array_equal(back.posterior["alpha"].values, np.ones((1, 5)))


def test_a_datatree_is_saved_with_h5netcdf_and_round_trips(tmp_path, monkeypatch):
    # audit DD1 F5: xarray 2024.10's DataTree.to_netcdf, with no engine named and no
    # netCDF4 installed, chose the scipy engine, which cannot write groups. That default
    # is replayed here, so the save must name h5netcdf itself.
    original = xr.DataTree.to_netcdf

    def old_default(self, filepath, *args, engine=None, **kwargs):
        return original(self, filepath, *args, engine=engine or "scipy", **kwargs)

    monkeypatch.setattr(xr.DataTree, "to_netcdf", old_default)
    rng = np.random.default_rng(8)
    alpha = rng.normal(size=(2, 6))
    counts = np.arange(4)
    tree = xr.DataTree.from_dict({
        "posterior": xr.Dataset({"alpha": (("chain", "draw"), alpha)}),
        "constant_data": xr.Dataset({"counts": (("cell",), counts)},
                                    coords={"cell": ["a", "b", "c", "d"]})})
    stamp(tree, sdcbayes_version="0.1.0", model="poisson-gamma", settings={"random_seed": 8})
    path = save_posterior(tree, tmp_path / "tree.nc")
    assert path == tmp_path / "tree.nc" and path.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree.nc"]  # no partial left
    back = load_posterior(path)
    assert provenance(back)["settings"] == {"random_seed": 8}
    np.testing.assert_array_equal(back.posterior["alpha"].values, alpha)
    np.testing.assert_array_equal(back.constant_data["counts"].values, counts)
    assert list(back.constant_data["cell"].values) == ["a", "b", "c", "d"]


def test_inference_data_is_saved_with_h5netcdf(tmp_path, monkeypatch):
    # the engine ArviZ uses by default for InferenceData, named so that it cannot change
    engines = []
    container = type(_compat.from_dict(posterior={"a": np.ones((1, 4))}))
    original = container.to_netcdf

    def record(self, filename, *args, **kwargs):
        engines.append(kwargs.get("engine"))
        return original(self, filename, *args, **kwargs)

    monkeypatch.setattr(container, "to_netcdf", record)
    idata = _compat.from_dict(posterior={"a": np.ones((1, 4))})
    stamp(idata, sdcbayes_version="0.1.0", model="poisson-gamma")
    back = load_posterior(save_posterior(idata, tmp_path))
    assert engines == ["h5netcdf"]
    np.testing.assert_array_equal(back.posterior["a"].values, np.ones((1, 4)))


# ---------------------------------------------------------------- F7: diagnostics
def _chains(values, diverging=None):
    values = np.asarray(values, dtype=float)
    div = np.zeros(values.shape[:2], bool) if diverging is None else diverging
    return _compat.from_dict(posterior={"a": values}, sample_stats={"diverging": div})


@pytest.mark.filterwarnings("ignore::sdcbayes.inference.diagnostics.ConvergenceWarning")
@pytest.mark.parametrize("numba", [True, False])
def test_chains_that_never_moved_give_nan_r_hat_and_a_problem(monkeypatch, numba):
    # with and without Numba (ArviZ's variance formula), as the diagnosis must not depend
    # on it (audit DD1 F4: without it, stuck chains gave a finite R-hat of about 6e15)
    if not hasattr(az, "Numba") and numba:
        pytest.skip("ArviZ 1 has no Numba switch")
    if hasattr(az, "Numba"):
        monkeypatch.setattr(az.Numba, "numba_flag", numba)
    rng = np.random.default_rng(0)
    # every chain at one and the same constant: R-hat undefined, nan
    d = compute_diagnostics(_chains(np.full((4, 200), 0.3)))
    assert math.isnan(d["max_r_hat"])  # not the -inf sentinel
    with pytest.warns(ConvergenceWarning, match="R-hat could not be computed"):
        problems = check_diagnostics(d)
    assert any("did not move" in p for p in problems)
    # each chain at its own constant: the chains disagree as much as they can, so R-hat is
    # inf, and named (audit AA7 F4: a nan here let another parameter's 1.00 stand as max)
    d = compute_diagnostics(_chains(np.repeat(rng.normal(size=(4, 1)), 200, axis=1)))
    assert d["max_r_hat"] == math.inf and d["max_r_hat_at"] == "a"
    assert d["stuck_chains"] == 1
    with pytest.warns(ConvergenceWarning, match="parameter a has its chains stuck"):
        problems = check_diagnostics(d)
    assert any("did not move" in p for p in problems)
    # one chain: R-hat is undefined by design, not a problem
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = compute_diagnostics(_chains(rng.normal(size=(1, 200))))
        assert math.isnan(one["max_r_hat"]) and check_diagnostics(one, ess_threshold=1) == []


@pytest.mark.filterwarnings("ignore::sdcbayes.inference.diagnostics.ConvergenceWarning")
def test_non_finite_draws_are_a_problem():
    values = np.random.default_rng(1).normal(size=(4, 200))
    values[2, 50:] = np.inf
    d = compute_diagnostics(_chains(values))
    assert d["non_finite_draws"] == 150 and d["non_finite_draws_at"] == "a"
    with pytest.warns(ConvergenceWarning, match="150 non-finite draws"):
        check_diagnostics(d)
    all_inf = compute_diagnostics(_chains(np.full((4, 200), np.inf)))
    assert math.isnan(all_inf["max_r_hat"]) and all_inf["non_finite_draws"] == 800
    with pytest.warns(ConvergenceWarning):
        assert len(check_diagnostics(all_inf)) >= 2
    # a healthy posterior carries no such key (its stamp is as before)
    assert "non_finite_draws" not in compute_diagnostics(_chains(values[:, :50]))


@pytest.mark.filterwarnings("ignore::sdcbayes.inference.diagnostics.ConvergenceWarning")
def test_divergences_are_counted_in_short_runs():
    d = compute_diagnostics(_chains(np.zeros((2, 3)), diverging=np.ones((2, 3), bool)))
    assert d["divergences"] == 6
    with pytest.warns(ConvergenceWarning, match="6 divergent transitions"):
        problems = check_diagnostics(d)
    # and that 3 draws were too few to diagnose anything (audit AA7 F5)
    assert any("at least 4 draws per chain" in p for p in problems)


# --------------------------------------------------------------------- F11: small items
@pytest.mark.filterwarnings("ignore::sdcbayes.inference.diagnostics.ConvergenceWarning")
def test_check_diagnostics_without_the_where_keys():
    # e.g. diagnostics read back from an older summary.json
    with pytest.warns(ConvergenceWarning, match=r"parameter \(unnamed\) has R-hat 1.200"):
        problems = check_diagnostics({"chains": 4, "draws": 100, "max_r_hat": 1.2,
                                      "min_ess_bulk": 10.0, "min_ess_tail": None})
    assert len(problems) == 2


def test_predictive_uniques_check_with_nan_p_says_it_could_not_be_computed():
    row = {"p_value": float("nan"), "observed": 5, "mean": 5.0, "interval": (3, 7)}
    with pytest.warns(PredictiveCheckWarning, match="could not be computed"):
        msg = check_predictive_uniques(row)
    assert "fewer" not in msg and "more than" not in msg


@pytest.fixture(scope="module")
def with_ppc(idata):
    return posterior_predictive(small_model(), idata.copy(), random_seed=1)


def test_predictive_check_validates_var_and_counts(with_ppc):
    m = small_model()
    with pytest.raises(InputError, match=r"no variable 'mm'.*\['m'\]"):
        predictive_check(m, with_ppc, var="mm")
    for counts in ([-3], [1, 2.5], [True], "12"):
        with pytest.raises(InputError, match="counts must be"):
            predictive_check(m, with_ppc, counts=counts)
    assert list(predictive_check(m, with_ppc, counts=range(1, 3)).index) == [1, 2]
    obs = m.observed()["m"]
    sim = with_ppc.posterior_predictive["m"]
    with pytest.raises(InputError, match="counts must be integers >= 0"):
        predictive_table(obs, sim, counts=[-1, 1])


def test_prior_predictive_does_not_log_pymc_sampling(caplog):
    with caplog.at_level(logging.INFO):
        prior_predictive(small_model(), draws=20, random_seed=1)
    assert not [r for r in caplog.records if r.getMessage().startswith("Sampling")]


# --------------------------------------------------------- F12: what a NUTS fit diagnoses
def test_nuts_fit_diagnoses_the_free_variables_not_large_deterministics(monkeypatch):
    # The beta-binomial model with a covariate has per-domain deterministics (mean,
    # alpha, beta); the negbin model, which had per-cell ones, now samples sigma only.
    import pandas as pd

    from sdcbayes.models.beta_binomial import BetaBinomialDomainModel

    rng = np.random.default_rng(3)
    D = 12
    x = rng.normal(size=D)
    n = rng.integers(5, 40, D)
    y = rng.binomial(n, expit(-1.0 + 0.8 * x))
    model = BetaBinomialDomainModel(y, n, n * 10, covariates=pd.DataFrame({"x": x}))
    # per-domain deterministics of 12 elements count as large here (87k cells in practice)
    monkeypatch.setattr(fitting, "_DIAGNOSE_DETERMINISTIC_MAX", 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 30 draws: ESS is low
        post = fit(model, method="nuts", draws=30, tune=30, chains=2, random_seed=1)
    diag = provenance(post)["diagnostics"]
    free = [rv.name for rv in model.build().free_RVs]
    assert sorted(diag["diagnosed_on"]) == sorted(free)
    large = {"mean", "alpha", "beta"}
    assert large <= set(post.posterior.data_vars)
    assert not large & set(diag["diagnosed_on"])
    # the warnings still name the parameter and element
    assert diag["min_ess_bulk_at"].split("[")[0] in free
    assert any(diag["min_ess_bulk_at"] in p for p in diag["problems"])
