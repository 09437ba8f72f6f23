"""Audit BB3 (the latent-class model, its risk path and CLI options): findings 1, 2 and 4.

1. The number of latent classes had no upper bound: ``--classes 100000000`` ended in a
   NumPy out-of-memory traceback and 20,000 classes on 400 records ran for minutes. It
   is now capped at ``MAX_CLASSES`` (1000) by the model, ``sdcbayes assess`` and
   ``compare``'s ``classes=``, each with a one-line error before any work.
2. ``assess_posterior`` replaced the Gibbs sampler's settings stamp with a partial one:
   ``summary.json`` and ``posterior.nc`` lost ``init``, ``em_restarts``, ``thin``, ``N``,
   ``kappa_prior``, ... They are now merged.
4. A typo in a latent-class option of ``compare --models`` (``clases=5``) was reported
   as a bad prior override; it now names the unknown option and lists the valid ones.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from clitools import assert_one_line_error, run_in_process

from sdcbayes import Microdata
from sdcbayes.exceptions import InputError
from sdcbayes.models.latent_class import MAX_CLASSES, LatentClassModel
from sdcbayes.risk.compare import parse_model_specs

KEYS = ["k0", "k1", "k2", "k3"]

#: The settings LatentClassModel.sample stamps that the assessment used to drop.
SAMPLER_KEYS = ("init", "em_restarts", "thin", "N", "kappa_prior", "label_moves",
                "split_merge", "start_classes", "profile_mass", "cluster_correction")


def _frame(n=400, seed=0):
    """Records of a 2-class mixture on 4 keys x 3 levels (the audit's tiny data)."""
    rng = np.random.default_rng(seed)
    profiles = np.random.default_rng(123).dirichlet(np.ones(3), size=(2, 4))
    z = rng.integers(0, 2, n)
    cols = {f"k{j}": [f"v{rng.choice(3, p=profiles[h, j])}" for h in z] for j in range(4)}
    return pd.DataFrame(cols)


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("bb3") / "tiny.csv"
    _frame().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def cells():
    model = LatentClassModel.from_frame(_frame(), KEYS, n_classes=2)
    return model.codes, model.counts, model.n_levels


# ------------------------------------------------------------ 1. the cap on the classes


def test_max_classes_is_an_absolute_cap_above_every_documented_use():
    # the default 30 and the benchmarks' 60 lie well inside; the bound is not the data's
    assert MAX_CLASSES == 1000


def test_model_refuses_more_classes_than_the_cap(cells):
    codes, counts, n_levels = cells
    model = LatentClassModel(codes, counts, n_levels, n_classes=MAX_CLASSES)
    assert model.H == MAX_CLASSES  # the cap itself is accepted
    for h in (MAX_CLASSES + 1, 100_000_000):
        with pytest.raises(InputError, match=r"at most 1000.*got " + str(h)):
            LatentClassModel(codes, counts, n_levels, n_classes=h)
    # the lower bound is unchanged
    with pytest.raises(InputError, match=">= 2"):
        LatentClassModel(codes, counts, n_levels, n_classes=1)


def test_model_refuses_before_any_allocation(cells, monkeypatch):
    """1e8 classes used to reach fit_em's (cells x H) Dirichlet draw; now nothing runs."""
    codes, counts, n_levels = cells

    def fail(*args, **kwargs):
        raise AssertionError("the cell table was checked: the refusal came too late")

    monkeypatch.setattr("sdcbayes.models.latent_class.check_cell_table", fail)
    with pytest.raises(InputError, match="at most 1000"):
        LatentClassModel(codes, counts, n_levels, n_classes=100_000_000)


def test_assess_posterior_refuses_more_classes_than_the_cap():
    from sdcbayes.risk.posterior_assess import assess_posterior

    md = Microdata(_frame(), keys=KEYS, sampling_fraction=0.1)
    with pytest.raises(InputError, match="at most 1000"):
        assess_posterior(md, model="latent-class", draws=5, tune=0, chains=1,
                         random_seed=1, n_classes=20_000)


@pytest.mark.parametrize("h", ["1001", "20000", "100000000"])
def test_cli_assess_refuses_more_classes_than_the_cap(capsys, csv_file, tmp_path, h):
    proc = run_in_process(capsys, "assess", str(csv_file), "--keys", ",".join(KEYS),
                          "--sampling-fraction", "0.1", "--classes", h, "--draws", "5",
                          "--tune", "0", "--chains", "1", "--seed", "1",
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "--classes must be at most 1000", f"got {h}",
                          "default 30")
    assert not (tmp_path / "o").exists()


def test_compare_spec_refuses_more_classes_than_the_cap():
    assert parse_model_specs("lc=latent-class:classes=1000")[0].options == {"n_classes": 1000}
    with pytest.raises(InputError, match=r"classes=\) must be at most 1000.*got 100000000"):
        parse_model_specs("lc=latent-class:classes=100000000")
    from sdcbayes.risk.compare import validate_specs

    with pytest.raises(InputError, match="at most 1000"):
        validate_specs([{"name": "lc", "model": "latent-class",
                         "options": {"n_classes": 1001}}])


def test_cli_compare_refuses_more_classes_than_the_cap(capsys, csv_file, tmp_path):
    proc = run_in_process(capsys, "compare", str(csv_file), "--keys", ",".join(KEYS),
                          "--sampling-fraction", "0.1", "--models",
                          "lc=latent-class:classes=100000000", "--draws", "5", "--tune", "0",
                          "--chains", "1", "--seed", "1", "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "at most 1000", "got 100000000")
    assert not (tmp_path / "o").exists()


def test_out_of_memory_in_the_sampler_is_a_one_line_input_error(monkeypatch):
    """Within the cap a huge table may still not fit: InputError naming the fix."""
    from sdcbayes.risk.posterior_assess import assess_posterior

    def no_memory(self, *args, **kwargs):
        raise MemoryError("Unable to allocate 25.3 GiB")

    monkeypatch.setattr(LatentClassModel, "sample", no_memory)
    md = Microdata(_frame(), keys=KEYS, sampling_fraction=0.1)
    with pytest.raises(InputError, match=r"not enough memory.*x 7 classes.*--classes"):
        assess_posterior(md, model="latent-class", draws=5, tune=0, chains=1,
                         random_seed=1, n_classes=7, overdispersion=None)


# ------------------------------------------------------ 2. the sampler's settings kept


@pytest.mark.filterwarnings("ignore")  # short runs: ESS and truncation warn
def test_assess_posterior_keeps_the_sampler_settings():
    from sdcbayes.inference.posterior import provenance
    from sdcbayes.risk.posterior_assess import assess_posterior

    md = Microdata(_frame(n=200), keys=KEYS, sampling_fraction=0.1)
    r = assess_posterior(md, model="latent-class", draws=10, tune=4, chains=1,
                         random_seed=1, n_classes=5, overdispersion=None, thin=2,
                         init="margins", em_restarts=2)
    for settings in (r.provenance["settings"], provenance(r.idata)["settings"]):
        assert set(SAMPLER_KEYS) <= set(settings), sorted(set(SAMPLER_KEYS) - set(settings))
        # the values used: the call's, and the sampler's own defaults
        assert settings["thin"] == 2
        assert settings["init"] == "margins"
        assert settings["em_restarts"] == 2
        assert settings["N"] == pytest.approx(2000.0)
        assert settings["label_moves"] is False
        assert settings["split_merge"] == 0
        assert settings["start_classes"] is None
        assert settings["profile_mass"] is None
        assert settings["cluster_correction"] is None
        assert settings["kappa_prior"] is None  # Poisson cells: no kappa, no prior
        # the assessment's own entries are still there
        assert settings["n_classes"] == 5
        assert settings["draws"] == 10 and settings["random_seed"] == 1
        assert "cores" not in settings


def test_summary_json_and_posterior_nc_keep_the_sampler_settings(capsys, csv_file, tmp_path):
    from sdcbayes.inference.posterior import load_posterior, provenance

    out = tmp_path / "o"
    proc = run_in_process(capsys, "assess", str(csv_file), "--keys", ",".join(KEYS),
                          "--sampling-fraction", "0.1", "--classes", "5",
                          "--overdispersion", "none", "--chain-start", "bootstrap",
                          "--draws", "10", "--tune", "5", "--chains", "2", "--cores", "1",
                          "--seed", "3", "--quiet", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    stored = provenance(load_posterior(out / "posterior.nc"))["settings"]
    for settings in (summary["provenance"]["settings"], stored):
        assert set(SAMPLER_KEYS) <= set(settings), sorted(set(SAMPLER_KEYS) - set(settings))
        assert settings["init"] == "bootstrap"
        assert settings["em_restarts"] == 3  # the sampler's default, as the CLI runs it
        assert settings["thin"] == 1
        assert settings["N"] == pytest.approx(4000.0)
        assert settings["n_classes"] == 5 and settings["chains"] == 2


@pytest.mark.filterwarnings("ignore")  # short runs: ESS and truncation warn
def test_default_kappa_prior_is_recorded_by_name(monkeypatch):
    """overdispersion="cv" without kappa_prior: the default prior used is stamped."""
    from sdcbayes.models import latent_class as lcm
    from sdcbayes.risk.posterior_assess import assess_posterior

    md = Microdata(_frame(n=300), keys=KEYS, sampling_fraction=0.1)
    r = assess_posterior(md, model="latent-class", draws=10, tune=4, chains=1,
                         random_seed=2, n_classes=4)
    assert r.provenance["settings"]["overdispersion"] == "cv"
    assert r.provenance["settings"]["kappa_prior"] == list(lcm.KAPPA_PRIOR)
    assert r.summary["overdispersion"]["kappa_prior"].startswith(lcm.KAPPA_PRIOR[0])


# ------------------------------------------------ 4. a typo in a latent-class option


@pytest.mark.parametrize("spec", ["lc=latent-class:clases=5",
                                  "lc=latent-class:overdispersion=none,clases=5",
                                  "lc=latent-class,clases=5"])
def test_option_typo_names_the_option_and_lists_the_valid_ones(spec):
    with pytest.raises(InputError) as err:
        parse_model_specs(spec)
    msg = str(err.value)
    assert "bad prior override" not in msg
    assert "unknown latent-class option 'clases='" in msg
    assert "did you mean classes=?" in msg
    for option in ("classes=", "overdispersion=", "structural-zeros=", "profile-mass=",
                   "chain-start=", "kappa-prior=", "cluster-correction="):
        assert option in msg


def test_prior_name_without_field_on_latent_class_points_to_both_forms():
    with pytest.raises(InputError, match=r"unknown latent-class option 'alpha='.*"
                                         r"PRIOR\.FIELD=VALUE"):
        parse_model_specs("lc=latent-class:alpha=5")


def test_other_models_keep_the_prior_override_message():
    with pytest.raises(InputError, match="bad prior override 'clases=5'"):
        parse_model_specs("pg=poisson-gamma:clases=5")
    # a valid spec list still parses, and a model typo after a latent-class spec names
    # the models too
    specs = parse_model_specs("lc=latent-class:classes=5,alpha.beta=1,pg=poisson-gamma")
    assert [s.model for s in specs] == ["latent-class", "poisson-gamma"]
    with pytest.raises(InputError, match=r"'poisson-gama' is not one of \['latent-class'"):
        parse_model_specs("lc=latent-class,pg=poisson-gama")


def test_cli_compare_option_typo_is_one_line(capsys, csv_file, tmp_path):
    proc = run_in_process(capsys, "compare", str(csv_file), "--keys", ",".join(KEYS),
                          "--sampling-fraction", "0.1", "--models", "lc=latent-class:clases=5",
                          "--out", str(tmp_path / "o"))
    assert_one_line_error(proc, "unknown latent-class option 'clases='", "classes=",
                          "overdispersion=")
    assert not (tmp_path / "o").exists()
