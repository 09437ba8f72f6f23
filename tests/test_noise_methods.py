"""sdcMicro's addNoise methods in :func:`sdcbayes.protection.add_noise`.

Part 1 rebuilds sdcMicro 5.8.0's actual output from the normal numbers R drew: the
outputs and draws in ``tests/data/sdcmicro_r/noise/`` were written by
``tests/data/sdcmicro_r/noise.R`` (stamp, regeneration command and file list in that
folder's README.md), which also checks in R that its step-by-step rebuild from the
draws equals addNoise's output. Given R's draws, sdcbayes's ``_noise_from_draws``
(which ``add_noise`` runs on its own draws, part 2) must give R's output. R is not
needed here.

Tolerance: the outputs carry 17 significant digits; the formulas differ from R's only
in the rounding of means and standard deviations (long-double sums in R) and, for
ROMM, Householder QR for classical Gram-Schmidt. Where a variable's value plus its
noise nearly cancels (savings near 0), the elementwise relative error is amplified,
so each column's largest difference is compared with the column's largest value:
1e-12 (observed <= 2.3e-15, ROMM with p = 0.1; the others <= 1.3e-15).

Part 2 checks the properties the docstrings claim on sdcbayes's own runs; part 3 the
refusals; part 4 the ``protect`` command's options and recipe step.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes.exceptions import InputError
from sdcbayes.protection import noise as noise_module
from sdcbayes.protection.noise import (
    NOISE_METHODS,
    ROMM_MAX_P,
    _noise_from_draws,
    _romm_matrix,
    add_noise,
)

R_OUT = Path(__file__).parent / "data" / "sdcmicro_r" / "noise"
NUM = ["expend", "income", "savings"]
TOL = 1e-12


def r_table(name: str) -> pd.DataFrame:
    return pd.read_csv(R_OUT / name)


def cols(table: pd.DataFrame, run: str) -> np.ndarray:
    return table[[f"{run}_{v}" for v in NUM]].to_numpy(dtype=float)


def assert_columns_close(actual: np.ndarray, expected: np.ndarray, tol: float = TOL) -> None:
    """Each column's largest difference within tol times its largest |value| (docstring)."""
    diff = np.abs(actual - expected).max(axis=0)
    scale = np.abs(expected).max(axis=0)
    assert (diff <= tol * scale).all(), diff / scale


@pytest.fixture(scope="module")
def testdata(sdcmicro_csv):
    return sdcmicro_csv("testdata.csv")


@pytest.fixture(scope="module")
def x1000(testdata):
    return testdata[NUM].to_numpy(dtype=float)[:1000]


@pytest.fixture(scope="module")
def r_out():
    return r_table("noise_testdata1000.csv.gz")


@pytest.fixture(scope="module")
def r_draws():
    return r_table("draws_testdata1000.csv.gz")


# ------------------------------------------------------------------ 1. R's output from R's draws


@pytest.mark.parametrize("run, method, kwargs", [
    # set.seed(31); addNoise(x, noise = 150, method = "additive"): x + rnorm(n, 0, 1.5 sd)
    ("additive150", "additive", {"level": 1.5}),
    # set.seed(33/34); addNoise(x, method = "correlated2", delta): default delta 0.1, and 0.5
    ("correlated2_d0.1", "correlated2", {"delta": 0.1}),
    ("correlated2_d0.5", "correlated2", {"delta": 0.5}),
])
def test_rebuilt_from_r_draws(x1000, r_out, r_draws, run, method, kwargs):
    ours = _noise_from_draws(x1000, cols(r_draws, run), method, **kwargs)
    assert_columns_close(ours, cols(r_out, run))


def test_correlated_is_r_with_draws_paired_to_other_eigenvectors(x1000, r_out, r_draws):
    # set.seed(32); addNoise(x, noise = 50, method = "correlated"): MASS::mvrnorm pairs draw
    # column k with eigenvector k of eigen(0.5 cov(x)) in decreasing order (LAPACK dsyevr's
    # signs); sdcbayes pairs it with numpy.linalg.eigh's k-th in increasing order. Same
    # distribution, another realisation for the same draws: R's output is sdcbayes's
    # formula with the draw columns reversed and signed as the eigenvectors differ.
    eig = r_table("correlated50_eigen.csv")
    sigma = 0.5 * np.cov(x1000, rowvar=False)
    vals, vecs = np.linalg.eigh(sigma)
    np.testing.assert_allclose(vals[::-1], eig["value"], rtol=1e-12)
    r_vecs = eig[NUM].to_numpy().T  # column k: R's eigenvector k
    signs = np.sign((r_vecs * vecs[:, ::-1]).sum(axis=0))
    assert np.allclose(np.abs((r_vecs * vecs[:, ::-1]).sum(axis=0)), 1.0, atol=1e-9)
    z = cols(r_draws, "correlated50")
    r = cols(r_out, "correlated50")
    assert_columns_close(_noise_from_draws(x1000, (z * signs)[:, ::-1], "correlated",
                                           level=0.5), r)
    # with R's draws as they are, the realisation differs (not a tolerance matter)
    assert np.abs(_noise_from_draws(x1000, z, "correlated", level=0.5) - r).max() > 1e3


def r_restr(x: np.ndarray, level: float) -> np.ndarray:
    """sdcMicro's addNoise_restr as it computes: ``cc * x + d`` on a data frame recycles
    the length-m shift d = (1 - cc) colMeans(x) down the columns (R's column-major order)."""
    n, m = x.shape
    cc = (np.sqrt((n - 1 - level) / ((n + 1) * (1 + level))) if n < 500
          else np.sqrt((n - 1) / (n + n * level - 1)))
    d = (1 - cc) * x.mean(axis=0)
    return cc * x + np.resize(d, n * m).reshape(m, n).T, cc, d


@pytest.mark.parametrize("name, rows, level, run", [
    ("restr_testdata.csv.gz", None, 1.5, "restr150"),     # 4580 records: c = √((n-1)/(n+nα-1))
    ("restr_testdata100.csv", 100, 0.5, "restr50"),       # 100: the small-sample factor
])
def test_restr_equals_r_but_for_r_recycled_means(testdata, name, rows, level, run):
    # addNoise(x, noise = 100 level, method = "restr"): no draws. R's output is sdcMicro's
    # formula with its shift recycled down the rows (r_restr); sdcbayes adds each
    # variable's own (1 - c) mean, so the two agree exactly where the recycled shift is
    # the variable's own and differ by (1 - c)(mean_j - mean_k) elsewhere.
    x = testdata[NUM].to_numpy(dtype=float)[:rows]
    r = cols(r_table(name), run)
    rebuilt, cc, d = r_restr(x, level)
    assert_columns_close(rebuilt, r)
    res = add_noise(testdata.iloc[:rows], NUM, level, method="restr", seed=1)
    assert res.summary["restr_factor"] == pytest.approx(cc, rel=1e-15)
    ours = res.frame[NUM].to_numpy()
    n, m = x.shape
    own = (np.arange(n)[:, None] + n * np.arange(m)[None, :]) % m == np.arange(m)
    assert own.any() and (~own).any()
    assert_columns_close(np.where(own, ours, 0.0), np.where(own, r, 0.0))
    shift = np.resize(d, n * m).reshape(m, n).T
    assert_columns_close(ours - r, d - shift)


@pytest.mark.parametrize("run, p", [("ROMM_p0.001", 0.001), ("ROMM_p0.1", 0.1)])
def test_romm_rebuilt_from_r_draws(testdata, run, p):
    # set.seed(35/36); addNoise(testdata[1:80, num], method = "ROMM", p): M =
    # matrix(rnorm(80 * 80), 80), T = Gram-Schmidt of I + p M, output T %*% x
    x = testdata[NUM].to_numpy(dtype=float)[:80]
    m = r_table("romm_draws.csv.gz")[run].to_numpy().reshape(80, 80, order="F")
    assert_columns_close(_noise_from_draws(x, m, "ROMM", p=p),
                         cols(r_table("romm_testdata80.csv"), run))


# ------------------------------------------------------------------ 2. sdcbayes's own runs


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(7)
    a = rng.normal(50, 10, 300)
    b = 0.6 * a + rng.normal(0, 5, 300)
    c = rng.gamma(2.0, 3.0, 300)
    return pd.DataFrame({"a": a, "b": b, "c": c, "k": np.arange(300) % 4})


@pytest.mark.parametrize("method, kwargs, shape", [
    ("additive", {"level": 0.3}, "nm"), ("correlated", {"level": 0.3}, "nm"),
    ("correlated2", {"delta": 0.4}, "nm"), ("ROMM", {"p": 0.05}, "nn"),
])
def test_add_noise_runs_noise_from_draws_on_its_draws(frame, method, kwargs, shape):
    # the seeded run is the rebuilt formula applied to default_rng(seed)'s normals, so
    # part 1's parity with R carries over to add_noise
    x = frame[["a", "b", "c"]].to_numpy()
    res = add_noise(frame, ["a", "b", "c"], method=method, seed=11, **kwargs)
    size = x.shape if shape == "nm" else (len(x), len(x))
    draws = np.random.default_rng(11).standard_normal(size)
    np.testing.assert_array_equal(res.frame[["a", "b", "c"]].to_numpy(),
                                  _noise_from_draws(x, draws, method, **kwargs))
    pd.testing.assert_series_equal(res.frame["k"], frame["k"])
    assert res.summary["method"] == f"noise_{method}" and res.summary["seed"] == 11


def test_correlated2_preserves_means_and_variances_given_neutral_draws(frame):
    # E[z] = x̄ and E[var z] = var x (docstring): exactly so when the draws have mean 0,
    # variance 1 and no correlation with x or each other; covariances shrink by 1 - δ²
    x = frame[["a", "b", "c"]].to_numpy()
    n = len(x)
    basis = np.column_stack([np.ones(n), x])
    raw = np.random.default_rng(3).standard_normal((n, 3))
    raw -= basis @ np.linalg.lstsq(basis, raw, rcond=None)[0]
    draws = np.linalg.qr(raw)[0] * np.sqrt(n - 1)
    delta = 0.4
    z = _noise_from_draws(x, draws, "correlated2", delta=delta)
    np.testing.assert_allclose(z.mean(axis=0), x.mean(axis=0), rtol=1e-12)
    cov_x, cov_z = np.cov(x, rowvar=False), np.cov(z, rowvar=False)
    np.testing.assert_allclose(np.diag(cov_z), np.diag(cov_x), rtol=1e-10)
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose(cov_z[off], (1 - delta**2) * cov_x[off], rtol=1e-10)


def test_correlated2_summary_and_log(frame):
    res = add_noise(frame, ["a", "b"], 5.0, method="correlated2", delta=0.2, seed=2)
    sd = frame[["a", "b"]].std(ddof=1).to_numpy()
    np.testing.assert_allclose(res.log["noise_sd"], 0.2 * sd, rtol=1e-12)
    assert res.summary["delta"] == 0.2 and res.summary["level"] is None  # level unused


@pytest.mark.parametrize("rows, level", [(300, 0.5), (60, 2.0)])
def test_restr_shrinks_to_the_means_without_randomness(frame, rows, level):
    part = frame.iloc[:rows]
    x = part[["a", "b", "c"]].to_numpy()
    res = add_noise(part, ["a", "b", "c"], level, method="restr", seed=1)
    z = res.frame[["a", "b", "c"]].to_numpy()
    n = rows
    c = np.sqrt((n - 1 - level) / ((n + 1) * (1 + level)))  # below 500 records
    assert res.summary["restr_factor"] == pytest.approx(c, rel=1e-15)
    np.testing.assert_allclose(z.mean(axis=0), x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(np.cov(z, rowvar=False), c**2 * np.cov(x, rowvar=False),
                               rtol=1e-10)
    np.testing.assert_allclose(np.corrcoef(z, rowvar=False), np.corrcoef(x, rowvar=False),
                               rtol=1e-10)
    other = add_noise(part, ["a", "b", "c"], level, method="restr", seed=2)
    np.testing.assert_array_equal(other.frame[["a", "b", "c"]].to_numpy(), z)  # no draws
    assert (res.log["noise_sd"] == 0).all()


def classical_gram_schmidt(u: np.ndarray) -> np.ndarray:
    """sdcMicro's orthonormalization (R/addNoise.r), restated: v_i = u_i minus its
    projections on v_1..v_{i-1}, then each column scaled to norm 1."""
    v = u.copy()
    for i in range(1, u.shape[1]):
        coef = (u[:, i] @ v[:, :i]) / (v[:, :i] ** 2).sum(axis=0)
        v[:, i] = u[:, i] - v[:, :i] @ coef
    return v / np.sqrt((v**2).sum(axis=0))


@pytest.mark.parametrize("p", [0.001, 0.3])
def test_romm_matrix_is_sdcmicro_gram_schmidt_and_orthogonal(p):
    m = np.random.default_rng(5).standard_normal((40, 40))
    t = _romm_matrix(m, p)
    np.testing.assert_allclose(t, classical_gram_schmidt(np.eye(40) + p * m), atol=1e-12)
    np.testing.assert_allclose(t.T @ t, np.eye(40), atol=1e-13)


def test_romm_preserves_cross_products(frame):
    x = frame[["a", "b", "c"]].to_numpy()
    res = add_noise(frame, ["a", "b", "c"], method="ROMM", p=0.2, seed=9)
    z = res.frame[["a", "b", "c"]].to_numpy()
    np.testing.assert_allclose(z.T @ z, x.T @ x, rtol=1e-11)
    assert np.abs(z - x).max() > 1.0  # masked, not returned as given
    assert res.summary["p"] == 0.2 and res.summary["noise_covariance"] is None
    assert res.log["noise_sd"].isna().all()


# ------------------------------------------------------------------ 3. refusals


@pytest.mark.parametrize("kwargs, fragment", [
    ({"method": "outdect"}, "robustbase's covMcd"),
    ({"method": "romm"}, "must be one of 'additive'"),
    ({"method": "correlated2", "delta": 0.0}, "delta=0.0 must be a number in (0, 1]"),
    ({"method": "correlated2", "delta": 1.5}, "delta=1.5 must be a number in (0, 1]"),
    ({"method": "correlated2", "delta": True}, "delta=True must be"),
    ({"method": "ROMM", "p": 0.0}, "p=0.0 must be a positive number"),
    ({"method": "ROMM", "p": float("nan")}, "p=nan must be a positive number"),
    # audit AU4 B3: 1e308 overflowed I + p M and blanked every value without an error
    ({"method": "ROMM", "p": 1e308}, "above ROMM's largest p, 2**53"),
    ({"method": "ROMM", "p": 2.0**53 * (1 + 2**-52)}, "above ROMM's largest p, 2**53"),
    ({"method": "restr", "level": 59.0}, "needs level < n - 1 = 59"),
    ({"level": -0.1}, "level=-0.1 must be a non-negative number"),
])
def test_bad_input_refused_before_drawing(frame, kwargs, fragment):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(InputError) as err:
        add_noise(frame.iloc[:60], ["a", "b"], seed=rng, **kwargs)
    assert fragment in str(err.value)
    assert rng.bit_generator.state == state  # nothing drawn


def test_romm_refuses_more_records_than_its_limit(frame, monkeypatch):
    monkeypatch.setattr(noise_module, "ROMM_MAX_RECORDS", 100)
    with pytest.raises(InputError, match="300 records exceed its limit of 100") as err:
        add_noise(frame, ["a"], method="ROMM", seed=1)
    # noise has no strata to protect by (audit AU4 N5): the fix it names is one it has
    assert "stratum" not in str(err.value)
    assert "parts of at most 100 records" in str(err.value)


def test_romm_largest_p_gives_the_orthonormalised_m(frame):
    # ROMM_MAX_P's rationale: at p = 2^53 the identity in I + p M is below float64's
    # rounding, so T is the Q of M itself (positive diagonal of R), computed in finite
    # numbers; a larger p could only overflow
    assert ROMM_MAX_P == 2.0**53
    m = np.random.default_rng(4).standard_normal((60, 60))
    q, r = np.linalg.qr(m)
    np.testing.assert_allclose(_romm_matrix(m, ROMM_MAX_P), q * np.sign(np.diag(r)),
                               atol=1e-12)
    x = frame[["a", "b"]].to_numpy()[:60]
    res = add_noise(frame.iloc[:60], ["a", "b"], method="ROMM", p=ROMM_MAX_P, seed=3)
    z = res.frame[["a", "b"]].to_numpy()
    assert np.isfinite(z).all()
    np.testing.assert_allclose(z.T @ z, x.T @ x, rtol=1e-11)


@pytest.mark.parametrize("p, fragment", [(1e308, r"I \+ p M overflows float64"),
                                         (float("inf"), "must be finite numbers")])
def test_romm_matrix_refuses_non_finite_input(p, fragment):
    # called directly (add_noise refuses such a p first): an InputError, not a NaN T
    # with NumPy's overflow warning
    m = np.random.default_rng(5).standard_normal((30, 30))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match=fragment):
            _romm_matrix(m, p)
    m[3, 4] = np.nan
    with pytest.raises(InputError, match="must be finite numbers"):
        _romm_matrix(m, 0.1)


@pytest.fixture(scope="module")
def frame600():
    # from 500 records restr uses the large-sample factor c = √((n - 1) / (n + n α - 1))
    rng = np.random.default_rng(12)
    return pd.DataFrame({"a": rng.normal(1e9, 1.0, 600), "b": rng.normal(0.0, 1.0, 600)})


def test_restr_any_finite_level_from_500_records(frame600):
    # the large-sample factor has no pole: a large level shrinks hard, c > 0, and the
    # result is still sdcMicro's formula
    x = frame600[["a", "b"]].to_numpy()
    res = add_noise(frame600, ["a", "b"], 1e4, method="restr", seed=1)
    c = np.sqrt(599 / (600 + 600 * 1e4 - 1))
    assert res.summary["restr_factor"] == pytest.approx(c, rel=1e-14)
    # a's shrunk spread (0.01) beside its mean 1e9 keeps about 5 digits in float64
    np.testing.assert_allclose(res.frame[["a", "b"]].std(ddof=1), c * x.std(axis=0, ddof=1),
                               rtol=1e-4)


@pytest.mark.parametrize("level, fragment", [
    # n α overflows: c = 0 in float64 (audit AU4 N12: every value became the mean)
    (1e308, "which is 0 in float64"),
    # c = 1e-8 > 0, but c (x - x̄) ~ 1e-8 rounds away against a's mean 1e9 (half its
    # spacing 1.2e-7), not against b's, near 0: a would be replaced by its mean
    (1e16, "every value of 'a' rounds to its mean"),
])
def test_restr_refuses_a_level_that_replaces_values_by_the_mean(frame600, level, fragment):
    with pytest.raises(InputError, match=fragment) as err:
        add_noise(frame600, ["a", "b"], level, method="restr", seed=1)
    assert "choose a smaller level" in str(err.value)


def test_methods_listed():
    assert NOISE_METHODS == ("additive", "correlated", "correlated2", "restr", "ROMM")


# ------------------------------------------------------------------ 4. protect's options


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    rng = np.random.default_rng(8)
    n = 120
    frame = pd.DataFrame({"age": rng.choice(["20s", "30s", "40s"], n),
                          "sex": rng.choice(["m", "f"], n),
                          "income": rng.lognormal(8, 1, n),
                          "exp": rng.lognormal(7, 1, n)})
    path = tmp_path_factory.mktemp("noise_cli") / "p.csv"
    frame.to_csv(path, index=False)
    return path, pd.read_csv(path)


@pytest.mark.parametrize("how", ["options", "recipe"])
@pytest.mark.parametrize("method, params", [("correlated2", {"delta": 0.3}),
                                            ("ROMM", {"p": 0.05}),
                                            ("restr", {"level": 0.5})])
def test_protect_noise_method_equals_add_noise(capsys, monkeypatch, tmp_path, csv_file, how,
                                               method, params):
    monkeypatch.chdir(tmp_path)
    path, frame = csv_file
    option = {"delta": "--noise-delta", "p": "--noise-p", "level": "--noise-level"}
    if how == "options":
        args = ["--noise", "income,exp", "--noise-method", method, "--seed", "5"]
        for k, v in params.items():
            args += [option[k], str(v)]
    else:
        recipe = {"seed": 5, "steps": [{"step": "noise", "columns": ["income", "exp"],
                                        "method": method, **params}]}
        Path("recipe.json").write_text(json.dumps(recipe))
        args = ["--recipe", "recipe.json"]
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", *args,
                          "--out", "out", "-q")
    assert proc.returncode == 0, proc.stderr
    got = pd.read_csv(tmp_path / "out" / "protected.csv")
    expected = add_noise(frame, ["income", "exp"], method=method,
                         seed=np.random.default_rng(5), **params).frame
    np.testing.assert_allclose(got[["income", "exp"]], expected[["income", "exp"]],
                               rtol=1e-15)
    assert not np.allclose(got["income"], frame["income"])
    pd.testing.assert_frame_equal(got[["age", "sex"]], frame[["age", "sex"]])


@pytest.mark.parametrize("args, fragments", [
    (["--noise-method", "ROMM"], ["--noise-method is a setting of --noise", "add --noise"]),
    (["--noise-delta", "0.2"], ["--noise-delta is a setting of --noise"]),
    (["--noise", "income", "--noise-delta", "0.2"],
     ["--noise-delta applies to --noise-method correlated2", "not 'additive'"]),
    (["--noise", "income", "--noise-method", "correlated2", "--noise-p", "0.1"],
     ["--noise-p applies to --noise-method ROMM", "not 'correlated2'"]),
    (["--noise", "income", "--noise-method", "correlated2", "--noise-delta", "1.5"],
     ["delta (--noise-delta) must be a number > 0 and <= 1", "1.5"]),
    (["--noise", "income", "--noise-method", "ROMM", "--noise-p", "0"],
     ["p (--noise-p) must be a number > 0"]),
    (["--noise", "income", "--noise-method", "ROMM", "--noise-level", "0.5"],
     ["--noise-level is not used by --noise-method ROMM", "--noise-p"]),
    # audit AU4 B3: exit 0 with every value blanked and NumPy's overflow warning
    (["--noise", "income,exp", "--noise-method", "ROMM", "--noise-p", "1e308"],
     ["step 1 (noise): p (--noise-p) must be a number > 0 and <= 9007199254740992",
      "got 1e+308"]),
])
def test_protect_noise_options_refused(capsys, monkeypatch, tmp_path, csv_file, args,
                                       fragments):
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv_file[0]), "--keys", "age,sex", *args,
                          "--seed", "1", "--out", "out")
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("step, fragments", [
    ({"method": "outdect"}, ["method \"outdect\" (sdcMicro's) is not available", "covMcd"]),
    ({"method": "romm"}, ["method must be one of 'additive'", "'ROMM'; got \"romm\""]),
    ({"method": "additive", "p": 0.1}, ["p applies to method 'ROMM'", "\"method\": \"ROMM\""]),
    ({"method": "correlated2", "level": 0.2}, ["level is not used by method 'correlated2'",
                                               "give delta"]),
    ({"method": "ROMM", "p": -1}, ["p must be a number > 0", "-1"]),
])
def test_protect_noise_recipe_refused(capsys, monkeypatch, tmp_path, csv_file, step, fragments):
    monkeypatch.chdir(tmp_path)
    recipe = {"seed": 1, "steps": [{"step": "noise", "columns": ["income"], **step}]}
    Path("recipe.json").write_text(json.dumps(recipe))
    proc = run_in_process(capsys, "protect", str(csv_file[0]), "--keys", "age,sex",
                          "--recipe", "recipe.json", "--out", "out")
    assert_one_line_error(proc, *fragments)
    assert not (tmp_path / "out").exists()


def test_cli_method_choices_are_the_library_methods():
    from sdcbayes.commands import protect

    assert protect.NOISE_METHODS == NOISE_METHODS


@pytest.mark.parametrize("how", ["options", "recipe"])
def test_protect_warns_that_restr_is_undone_exactly(capsys, monkeypatch, tmp_path, csv_file,
                                                    how):
    # audit AU4 B2: restr is a deterministic affine map; the risk after it (interval risk,
    # linkage on the original scale) reported protection without a word
    monkeypatch.chdir(tmp_path)
    path, frame = csv_file
    if how == "options":
        args = ["--noise", "income,exp", "--noise-method", "restr", "--noise-level", "0.5"]
        who = "--noise with --noise-method restr"
    else:
        Path("recipe.json").write_text(json.dumps({"steps": [
            {"step": "noise", "columns": ["income", "exp"], "method": "additive"},
            {"step": "noise", "columns": ["income", "exp"], "method": "restr",
             "level": 0.5}]}))
        args = ["--recipe", "recipe.json"]
        who = "step 2 (noise, method restr)"
    proc = run_in_process(capsys, "protect", str(path), "--keys", "age,sex", *args,
                          "--seed", "2", "--out", "out", "-q")
    assert proc.returncode == 0, proc.stderr
    warned = [x for x in proc.stderr.splitlines() if "adds no randomness" in x]
    assert len(warned) == 1  # the additive step gets none
    assert warned[0].startswith(f"sdcbayes: warning: {who} adds no randomness")
    assert "x = (z - mean) / c + mean" in warned[0] and "understates" in warned[0]
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert warned[0].removeprefix("sdcbayes: warning: ") in s["warnings"]
    # what the warning says holds: the released file and summary.json's c give x back
    step = s["steps"][-1]["result"]
    z = pd.read_csv(tmp_path / "out" / "protected.csv")[["income", "exp"]].to_numpy()
    before = frame[["income", "exp"]].to_numpy()
    if how == "recipe":  # the restr step's input: the additive step's output
        before = add_noise(frame, ["income", "exp"], seed=np.random.default_rng(2)).frame[
            ["income", "exp"]].to_numpy()
    back = (z - z.mean(axis=0)) / step["restr_factor"] + z.mean(axis=0)
    np.testing.assert_allclose(back, before, rtol=1e-9)


def test_protect_other_noise_methods_not_warned_as_restr(capsys, monkeypatch, tmp_path,
                                                         csv_file):
    monkeypatch.chdir(tmp_path)
    proc = run_in_process(capsys, "protect", str(csv_file[0]), "--keys", "age,sex",
                          "--noise", "income", "--seed", "2", "--out", "out", "-q")
    assert proc.returncode == 0, proc.stderr
    assert "adds no randomness" not in proc.stderr
