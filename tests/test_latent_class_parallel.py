"""Gibbs chains on threads (``LatentClassModel.sample(cores=...)``): same draws, errors out."""

from __future__ import annotations

import numpy as np
import pytest

from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import LatentClassModel, _chain_threads, available_cpus


def _model(seed=0, n=1500, J=4, L=6):
    # two classes with different profiles: a fit with something to find
    rng = np.random.default_rng(seed)
    z = rng.random(n) < 0.4
    codes = np.where(z[:, None], rng.integers(0, L // 2, (n, J)), rng.integers(L // 2, L, (n, J)))
    cells, f = np.unique(codes, axis=0, return_counts=True)
    return LatentClassModel(cells, f, [L] * J, n_classes=8)


def test_threads_give_the_draws_of_sequential_chains():
    model = _model()
    kw = dict(draws=20, tune=10, chains=3, N=30_000.0, random_seed=7, store="all",
              overdispersion=5.0)
    seq = model.sample(cores=1, **kw)
    par = model.sample(cores=2, **kw)
    for name in ("pi", "w", "alpha", "tau1_expected"):
        np.testing.assert_array_equal(seq.posterior[name].values, par.posterior[name].values)
    np.testing.assert_array_equal(seq.posterior_predictive["tau1"].values,
                                  par.posterior_predictive["tau1"].values)
    # the chains differ from one another (each has its own stream), in the same order
    assert not np.array_equal(par.posterior["pi"].values[0], par.posterior["pi"].values[1])


def test_cores_default_and_bounds():
    assert _chain_threads(None, 64) == min(64, available_cpus())
    assert _chain_threads(8, 3) == 3 and _chain_threads(1, 4) == 1
    model = _model()
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(InputError, match="cores"):
            model.sample(draws=5, tune=0, chains=2, cores=bad)


def test_progress_of_threaded_chains_is_one_line(capsys):
    model = _model()
    model.sample(draws=10, tune=5, chains=2, N=30_000.0, random_seed=3, cores=2,
                 progressbar=True)
    lines = capsys.readouterr().err.splitlines()  # not a terminal: the start and the end
    assert len(lines) == 2
    assert lines[0].startswith(f"gibbs: 2 chains on 2 threads [{'.' * 30}] 0/30 sweeps, ")
    assert lines[1].startswith(f"gibbs: 2 chains on 2 threads [{'#' * 30}] 30/30 sweeps, ")


def test_a_failing_chain_raises_its_own_error(monkeypatch):
    model = _model()
    real = LatentClassModel._gibbs_chain
    calls = []

    def chain(self, rng, *args):
        calls.append(1)
        if len(calls) == 2:  # the second chain to start fails at once
            raise ValueError("chain failed")
        return real(self, rng, *args)

    monkeypatch.setattr(LatentClassModel, "_gibbs_chain", chain)
    with pytest.raises(ValueError, match="chain failed"):
        model.sample(draws=200, tune=10, chains=2, cores=2, random_seed=1)
