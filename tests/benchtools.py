"""Helpers for the tests of the benchmark scripts."""

from __future__ import annotations


def load_benchmark(script: str):
    """Import ``benchmarks/<script>`` as a module (the scripts import each other by name)."""
    import importlib.util
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location(f"_bench_{Path(script).stem}",
                                                      bench / script)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(bench))
    return mod


def made_up_records(samples: int = 3, draws: int = 400, slope: float = 0.0):
    """Made-up ``kappa_rules.py --out`` records of design ``toy/1%``: kappa's weight on
    one grid point (index 10; the Poisson end, where every rule's prior is tiny, is
    avoided by a log-likelihood spike), per-kappa draws of tau1 of sd 5 about
    100 + ``slope`` x grid index (tau2 = tau1 + 20), truths 103 and 123."""
    import numpy as np

    from sdcbayes.models.latent_class import KAPPA_GRID

    g = KAPPA_GRID.size
    rng = np.random.default_rng(7)
    loglik = np.full((samples, 2, g), -50.0)
    loglik[:, :, 10] = 0.0
    m1 = np.tile(100.0 + slope * np.arange(g), (samples, 1))
    d1 = (m1[:, :, None] + 5 * rng.standard_normal((samples, g, draws))).astype(np.float32)
    return {"design": np.array(["toy/1%"] * samples), "replicate": np.arange(samples),
            "loglik": loglik, "ratios": np.tile([4, 8], (samples, 1)),
            "m1": m1, "m2": m1 + 20.0,
            "d1": d1, "d2": d1 + 20, "truth1": np.full(samples, 103.0),
            "truth2": np.full(samples, 123.0), "model": np.zeros((samples, 6))}


def toy_latent_class(n: int = 250, seed: int = 4, levels: int = 6,
                     keys=("x", "y", "z", "u"), n_classes: int = 4):
    """A latent-class model of ``n`` records with uniform random levels on ``keys``
    (the toy sample of the model's-world benchmark tests)."""
    import numpy as np
    import pandas as pd

    from sdcbayes.models.latent_class import LatentClassModel

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({k: rng.choice([f"v{i}" for i in range(levels)], n) for k in keys})
    return LatentClassModel.from_frame(frame, list(keys), n_classes=n_classes)
