"""Benchmark: the negative-binomial model's fit on Adult, 6 keys (audit P5).

The model (:class:`sdcbayes.models.negbin.NegativeBinomialModel`, seed ``004_…``)
samples ``sigma`` alone: the per-cell offsets ``z_k`` of
``logit p_k = m_k + sigma z_k / sqrt(f_k)`` are absent from the likelihood, so their
posterior is exactly iid Normal(0, 1), and ``fit`` draws them afterwards by Monte Carlo
(``complete_posterior``). Before, NUTS ran in ``n_cells + 1`` dimensions (mean tree
depth 6.0, 63 leapfrog steps per iteration, 14.8 s for this table at 2 x (200 + 200))
and the posterior stored ``p_offset``, ``logit_p`` and ``p`` (82 MB).

File: UCI Adult ``adult.data`` (32,561 records), keys age, sex, race, marital-status,
education, native-country (``missing="category"``), weights ``fnlwgt`` rescaled to a
mean of 20 (as the audit's reproducer ``r08_negbin_perf.py``). Printed per setting:
cells, draws (chains x draws), fit seconds (wall, compilation included; shared cores
make it noisy), mean tree depth and leapfrog steps, posterior MB, and the posterior of
sigma against 1-D quadrature (HalfNormal(1) prior x the scaled chi-square likelihood
of the within-cell sum of squares).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/negbin_fit.py [--draws 200 1000] [--tune 200]
        [--chains 2] [--data-dir /path/to/shared/data]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from sdcbayes.inference import fit
from sdcbayes.microdata import Microdata
from sdcbayes.models.negbin import NegativeBinomialModel
from sdcbayes.validation import DATA_ENV, SkipDesign, shared_data_dir

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
           "hours-per-week", "native-country", "income"]
KEYS = ["age", "sex", "race", "marital-status", "education", "native-country"]


def adult_model(data_dir=None) -> NegativeBinomialModel:
    """The audit's model: Adult, 6 keys, weights fnlwgt rescaled to a mean of 20.

    Raises
    ------
    SkipDesign
        ``adult/adult.data`` is not in the shared data folder (a fresh clone has none).
    """
    folder = shared_data_dir(data_dir)
    path = folder / "adult" / "adult.data"
    if not path.is_file():
        # the harness's wording (sdcbayes.validation.load_population), so that every
        # benchmark says the same thing when the data are absent
        what = (f"shared data folder {folder} is absent" if not folder.is_dir()
                else f"Adult file adult.data not found at {path}")
        raise SkipDesign(f"{what}: this benchmark is skipped; set {DATA_ENV}=/path/to/shared/"
                         "data or pass --data-dir to run it.")
    frame = pd.read_csv(path, header=None, names=COLUMNS, skipinitialspace=True)
    frame["w"] = frame["fnlwgt"] / frame["fnlwgt"].mean() * 20
    md = Microdata(frame, KEYS, weight="w", missing="category")
    return NegativeBinomialModel.from_microdata(md)


def sigma_by_quadrature(model: NegativeBinomialModel) -> tuple[float, float]:
    """Posterior mean and sd of sigma on a fine grid (the default HalfNormal(1) prior)."""
    s = np.linspace(1e-4, 3.0, 200_001)
    lp = (stats.halfnorm.logpdf(s)
          + stats.gamma.logpdf(model.within_ss, model.within_df / 2, scale=2 * s**2))
    w = np.exp(lp - lp.max())
    w /= w.sum()
    mean = float(np.sum(w * s))
    return mean, float(np.sqrt(np.sum(w * s * s) - mean**2))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--tune", type=int, default=200)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    try:
        model = adult_model(args.data_dir)
    except SkipDesign as exc:
        # as the other population benchmarks: the reason on stderr, exit status 1
        print(f"skip adult6: {exc}", file=sys.stderr)
        return 1
    exact = sigma_by_quadrature(model)
    print(f"Adult, 6 keys: {model.fk.size} cells, within_df {model.within_df}; "
          f"sigma by quadrature: mean {exact[0]:.6f} sd {exact[1]:.6f}")
    print(f"{'cells':>6} {'draws':>9} {'seconds':>8} {'depth':>6} {'steps':>6} "
          f"{'post MB':>8} {'sigma mean':>11} {'sigma sd':>9}")
    for draws in args.draws:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # short chains: ESS warnings are expected
            start = time.perf_counter()
            idata = fit(model, draws=draws, tune=args.tune, chains=args.chains,
                        random_seed=args.seed)
            seconds = time.perf_counter() - start
        post, ss = idata.posterior, idata.sample_stats
        print(f"{model.fk.size:>6} {f'{args.chains}x{draws}':>9} {seconds:>8.1f} "
              f"{float(ss['tree_depth'].mean()):>6.2f} {float(ss['n_steps'].mean()):>6.1f} "
              f"{post.nbytes / 1e6:>8.1f} {float(post['sigma'].mean()):>11.6f} "
              f"{float(post['sigma'].std()):>9.6f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
