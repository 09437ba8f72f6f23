"""Benchmark: posterior risk of a locally suppressed demo file against its true risk.

The latent-class model is fitted once on the ORIGINAL demo sample
(:func:`sdcbayes.risk.posterior_assess.assess_posterior` with ``store_profiles=True``;
by default the package's own fit: 4 chains x 500 draws after 2000 sweeps, the
cross-validated overdispersion). The sample is then suppressed to k-anonymity
(:func:`sdcbayes.protection.local_suppression`, greedy and sequential, k = 2 and 3), and
each released file is scored from the same draws by
:func:`sdcbayes.risk.released.assess_released`. The truth: each released record's F
counts the demo population's units that match its non-blank keys, and ER = sum 1/F. The
closed form (what ``protect`` prints) is :func:`sdcbayes.risk.assess.assess_closed_form`
on the released file (sdcMicro's wildcard matching).

Printed: per file, the blanks and records with a blank, patterns, the true ER, the
released-file ER with its 90% interval over the parameters' posterior and its 90%
posterior predictive interval (``random_seed`` = ``--seed``; ``!`` after an interval that
misses the truth), the closed form, the same three for the blanked records only, the
correlation of each record's risk with its true 1/F, and the seconds of the released-file
assessment.
The ``*-recoded*`` cases recode a key first (``recode_maps``: age groups in pairs, foreign
countries of birth into one) and pass the map as ``recodes=``; their truth recodes the
population alike, and their "blanked" columns count records with a suppressed value only.

With ``--reference`` each file is scored a second time with the per-pattern evaluation of
the blanked patterns that the batched one replaced (``score_blanked_loop`` of
tests/released_reference.py, the tests' reference; not for the recoded cases, which it
refuses), and the seconds of the blanked part by both, and the largest relative difference of
the records' risks, are printed after the table.

With ``--household``: the household risk after protection (:func:`households`), from a
fit that keeps households whole (``assess --household``'s): per file the true realised
household ER, the model's with its 90% intervals, and the closed form's.

With ``--scale`` (instead of the demo): the speed of the blanked part on a census-sized
file. 10^5 records (``--scale-records``) drawn without replacement from 10^6 persons of
:func:`sdcbayes.datasets.simulate_population` (weight N/n), 8 keys (relationship, region,
age band, sex, marital status, occupation, education, household size; 2 to 18 levels),
greedy local suppression to 3-anonymity (about 18,000 blanked patterns), a short fit (1
chain x 100 draws after 100 sweeps unless ``--draws``/``--chains``/``--tune`` say
otherwise). Printed: records, blanks, patterns with a blank, the fit's seconds, then for
the batched blanked part and (unless ``--no-reference``) the per-pattern reference: its
seconds, ms per blanked pattern and the peak memory of the blanked part (tracemalloc, a
separate run), and the largest relative difference of the risks between the two.

Usage: python benchmarks/released_risk.py [--draws 500 --chains 4 --tune 2000]
       [--seed 1] [--top-cells 16] [--cases none,greedy3,greedy2,sequential3,sequential2,
       age-recoded,age-recoded-greedy3,country-recoded-greedy3]
       [--reference]
       python benchmarks/released_risk.py --household [--cases ...]
       python benchmarks/released_risk.py --scale [--scale-records 100000]
       [--no-reference]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

import sdcbayes
from sdcbayes.datasets import demo_keys, load_demo
from sdcbayes.datasets.demo import _demo_population
from sdcbayes.protection import local_suppression
from sdcbayes.risk import released as released_module
from sdcbayes.risk.assess import assess_closed_form
from sdcbayes.risk.posterior_assess import assess_posterior
from sdcbayes.risk.released import assess_released

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from released_reference import score_blanked_loop  # noqa: E402

CASES = ("none", "greedy3", "greedy2", "sequential3", "sequential2",
         # recoded keys (recodes= of assess_released), alone and before greedy 3-anonymity
         "age-recoded", "age-recoded-greedy3", "country-recoded-greedy3")

#: The recoded cases' maps (DESIGN RD1): the demo's age groups merged in pairs (60+ of
#: three), every foreign country of birth into "foreign". The population is recoded the
#: same way for the truth (a released record's F: the units whose recoded values match).
AGE_GROUPS = {"0-9": "0-19", "10-19": "0-19", "20-29": "20-39", "30-39": "20-39",
              "40-49": "40-59", "50-59": "40-59", "60-69": "60+", "70-79": "60+", "80+": "60+"}


def recode_maps(case: str, population: pd.DataFrame) -> dict[str, dict]:
    """The complete maps (every declared level) of a ``<key>-recoded[-<suppression>]`` case."""
    if not case.startswith(("age-recoded", "country-recoded")):
        return {}
    if case.startswith("age"):
        return {"age_group": dict(AGE_GROUPS)}
    cats = population["country_of_birth"].cat.categories
    return {"country_of_birth": {c: ("native" if c == "native" else "foreign") for c in cats}}


def case_files(case: str, sample: pd.DataFrame, keys: list[str], population: pd.DataFrame):
    """(released file, population recoded alike, recodes or None) of a case name."""
    from sdcbayes.protection import merge_levels

    maps = recode_maps(case, population)
    released, pop = sample, population
    for col, m in maps.items():
        for name in ("released", "pop"):
            frame = released if name == "released" else pop
            present = set(frame[col].cat.categories)
            step = {a: b for a, b in m.items() if a in present and a != b}
            out = merge_levels(frame, col, step).frame
            released, pop = (out, pop) if name == "released" else (released, out)
    supp = case.split("-recoded")[-1].lstrip("-") if maps else case
    if supp and supp != "none":
        released = local_suppression(released, keys, k=int(supp[-1]), method=supp[:-1]).frame
    else:
        released = released.copy()
    return released, pop, (maps or None)
SCALE_KEYS = ["relationship", "region", "age_band", "sex", "marital_status", "occupation",
              "education", "household_size"]


@contextlib.contextmanager
def blanked_part(reference: bool = False, memory: bool = False):
    """Time (and optionally trace the peak memory of) the blanked patterns' scoring.

    Yields a dict that gets ``seconds`` and ``peak_mb`` (NaN unless ``memory``); with
    ``reference`` the per-pattern evaluation scores them instead of the batches.
    """
    inner = score_blanked_loop if reference else released_module._score_blanked
    saved = released_module._score_blanked
    out = {"seconds": 0.0, "peak_mb": float("nan")}

    def timed(*args, **kwargs):
        if memory:
            tracemalloc.start()
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            out["seconds"] += time.perf_counter() - t0
            if memory:
                out["peak_mb"] = tracemalloc.get_traced_memory()[1] / 2 ** 20
                tracemalloc.stop()

    released_module._score_blanked = timed
    try:
        yield out
    finally:
        released_module._score_blanked = saved


def max_rel_diff(a, b) -> float:
    """Largest relative difference of the records' risks (and their quantiles)."""
    cols = [c for c in a.records.columns if c.startswith("risk")]
    x, y = a.records[cols].to_numpy(float), b.records[cols].to_numpy(float)
    return float(np.max(np.abs(x - y) / np.abs(y))) if x.size else 0.0


def scale(args) -> None:
    """The census-sized case (module docstring, ``--scale``)."""
    from sdcbayes.datasets import simulate_population

    t0 = time.perf_counter()
    pop = simulate_population(437_000, seed=args.seed)
    rng = np.random.default_rng(args.seed)
    n = min(args.scale_records, len(pop))
    sample = pop.iloc[np.sort(rng.choice(len(pop), n, replace=False))].reset_index(drop=True)
    sample = sample[SCALE_KEYS].copy()
    sample["weight"] = len(pop) / n
    released = local_suppression(sample, SCALE_KEYS, k=3).frame
    blank = released[SCALE_KEYS].isna()
    md = sdcbayes.Microdata(sample, SCALE_KEYS, weight="weight")
    t1 = time.perf_counter()
    fit = assess_posterior(md, draws=args.draws or 100, chains=args.chains or 1,
                           tune=args.tune or 100, random_seed=args.seed, store_profiles=True,
                           ppc=0, cores=1)
    st = fit.provenance["settings"]
    print(f"{n} records of a simulated census of {len(pop)} persons, {len(SCALE_KEYS)} keys, "
          f"greedy 3-anonymity: {int(blank.to_numpy().sum())} blanks in "
          f"{int(blank.any(axis=1).sum())} records ({t1 - t0:.0f} s); fit {st['chains']} "
          f"chain(s) x {st['draws']} draws after {st['tune']} sweeps, "
          f"{time.perf_counter() - t1:.0f} s; top cells {args.top_cells}")
    runs = [("batched", False)] + ([] if args.no_reference else [("per pattern", True)])
    res = {}
    for name, ref in runs:
        with blanked_part(reference=ref) as timing:
            res[name] = assess_released(md, released, fit.idata, top_cells=args.top_cells)
        with blanked_part(reference=ref, memory=True) as mem:
            assess_released(md, released, fit.idata, top_cells=args.top_cells)
        nbp = res[name].summary["n_blanked_patterns"]
        print(f"{name:<12} {nbp} blanked patterns: {timing['seconds']:7.1f} s, "
              f"{1e3 * timing['seconds'] / max(nbp, 1):6.2f} ms per pattern, peak memory "
              f"{mem['peak_mb']:.0f} MB", flush=True)
    if len(res) == 2:
        print(f"largest relative difference of the records' risks: "
              f"{max_rel_diff(res['batched'], res['per pattern']):.1e}")


def true_F(released: pd.DataFrame, keys: list[str], population: pd.DataFrame) -> np.ndarray:
    """Population units matching each released record's non-blank keys."""
    blank = released[keys].isna()
    pattern = blank.apply(tuple, axis=1)
    F = np.zeros(len(released))
    for pat, idx in pattern.groupby(pattern).groups.items():
        shown = [k for k, b in zip(keys, pat, strict=True) if not b]
        pos = released.index.get_indexer(idx)
        if not shown:
            F[pos] = len(population)
            continue
        cnt = population.groupby(shown, observed=True).size().rename("F").reset_index()
        sub = released.loc[idx, shown].astype(object).merge(
            cnt.astype({k: object for k in shown}), on=shown, how="left")
        F[pos] = sub["F"].to_numpy()
    if not np.all(F >= 1):
        raise RuntimeError("a released record matches no population unit")
    return F


def households(args) -> None:
    """The household risk after protection: true, the model's and the closed form's.

    The fit is ``assess --household``'s (its cross-validation keeps households whole), so
    its record ER differs a little from the main table's. The truth per released file is
    the realised household ER, sum over records of 1 - prod(1 - 1/F_i) over the record's
    household with each record's true F (:func:`true_F`), what ``assess`` compares with
    on the demo; the closed form is :func:`assess_closed_form`'s (sdcMicro's hier_risk).
    """
    from sdcbayes.risk.measures import household_expected_reidentifications

    demo = load_demo()
    sample, keys = demo.sample, list(demo_keys())
    hh = "household_id"
    md = sdcbayes.Microdata(sample, keys, weight="weight", household=hh)
    population = _demo_population()
    t0 = time.perf_counter()
    fit = assess_posterior(md, draws=args.draws, chains=args.chains, tune=args.tune,
                           random_seed=args.seed, store_profiles=True, ppc=0)
    st = fit.provenance["settings"]
    print(f"fit with households on the original demo sample: {st['chains']} chains x "
          f"{st['draws']} draws after {st['tune']} sweeps, seed {args.seed}, "
          f"{time.perf_counter() - t0:.0f} s; household ER, 90% intervals: over the "
          "parameters' posterior (θ) and posterior predictive (pred.); ! the truth outside\n")
    cases = args.cases.split(",")
    cw = max(13, max(len(c) for c in cases) + 1)
    head = (f"{'file':<{cw}}{'truth':>8}{'household ER':>14}{'[θ]':>18}{'[pred.]':>18}"
            f"{'closed':>9}")
    print(head)
    print("-" * len(head))
    for case in cases:
        released, pop_case, recodes = case_files(case, sample, keys, population)
        truth = household_expected_reidentifications(1 / true_F(released, keys, pop_case),
                                                     sample[hh].to_numpy())
        res = assess_released(md, released, fit.idata, top_cells=args.top_cells,
                              recodes=recodes, random_seed=args.seed)
        s = res.summary
        cf = assess_closed_form(sdcbayes.Microdata(released, keys, weight="weight",
                                                   household=hh))
        est = s["household_expected_reidentifications"]
        # the interval over the parameters (its own key once the predictive one exists)
        hyper = s.get("household_expected_reidentifications_hyper_interval")
        pred = s["household_expected_reidentifications_interval"] if hyper else None
        hyper = hyper or s["household_expected_reidentifications_interval"]

        def show(iv, truth=truth):
            if iv is None:
                return f"{'-':>18}"
            lo, hi = iv
            return f" [{lo:6.2f}, {hi:6.2f}]{'' if lo <= truth <= hi else '!':<1}"

        print(f"{case:<{cw}}{truth:>8.2f}{est:>14.2f}{show(hyper)}{show(pred)}"
              f"{cf.summary['household_expected_reidentifications']:>9.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=None, help="default: the package's (500)")
    ap.add_argument("--chains", type=int, default=None, help="default: the package's (4)")
    ap.add_argument("--tune", type=int, default=None, help="default: the package's (2000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--top-cells", type=int, default=16)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--reference", action="store_true",
                    help="also time the per-pattern evaluation of the blanked patterns")
    ap.add_argument("--scale", action="store_true",
                    help="a census-sized file instead of the demo (module docstring)")
    ap.add_argument("--household", action="store_true",
                    help="the household risk after protection instead (households())")
    ap.add_argument("--scale-records", type=int, default=100_000)
    ap.add_argument("--no-reference", action="store_true",
                    help="with --scale: skip the per-pattern reference")
    args = ap.parse_args()
    if args.scale:
        scale(args)
        return
    if args.household:
        households(args)
        return
    demo = load_demo()
    sample, keys = demo.sample, list(demo_keys())
    md = sdcbayes.Microdata(sample, keys, weight="weight")
    population = _demo_population()
    t0 = time.perf_counter()
    fit = assess_posterior(md, draws=args.draws, chains=args.chains, tune=args.tune,
                           random_seed=args.seed, store_profiles=True, ppc=0)
    st = fit.provenance["settings"]
    diag = fit.summary["diagnostics"]
    print(f"fit on the original demo sample: {st['chains']} chains x {st['draws']} draws after "
          f"{st['tune']} sweeps, seed {args.seed}, {time.perf_counter() - t0:.0f} s; "
          f"max R-hat {diag.get('max_r_hat') or float('nan'):.3f}, "
          f"min bulk ESS {diag.get('min_ess_bulk') or float('nan'):.0f}")
    print(f"top cells {args.top_cells}; intervals: 90%, over the parameters' posterior "
          "(θ) and posterior predictive (pred.); ! the truth outside\n")
    cases = args.cases.split(",")
    cw = max(13, max(len(c) for c in cases) + 1)  # long case names keep the columns in line
    head = (f"{'file':<{cw}}{'blanks (rec.)':>15}{'patterns (bl.)':>16}{'truth':>8}"
            f"{'released-file ER [θ]':>28}{'[pred.]':>18}{'closed':>8}{'| blanked: truth':>17}"
            f"{'released':>10}{'closed':>8}{'| corr. 1/F':>13}{'s':>6}")
    print(head)
    print("-" * len(head))
    timings = []
    for case in cases:
        released, pop_case, recodes = case_files(case, sample, keys, population)
        F = true_F(released, keys, pop_case)
        cf = assess_closed_form(sdcbayes.Microdata(released, keys, weight="weight"))
        t1 = time.perf_counter()
        with blanked_part() as part:
            res = assess_released(md, released, fit.idata, top_cells=args.top_cells,
                                  recodes=recodes, random_seed=args.seed)
        secs = time.perf_counter() - t1
        if args.reference and recodes is None:  # the reference refuses recoded files
            with blanked_part(reference=True) as ref_part:
                ref = assess_released(md, released, fit.idata, top_cells=args.top_cells,
                                      recodes=recodes)
            timings.append((case, part["seconds"], ref_part["seconds"],
                            res.summary["n_blanked_patterns"], max_rel_diff(res, ref)))
        s = res.summary
        risk = res.records["risk"].to_numpy()
        cf_risk = cf.records["risk"].to_numpy(float)
        bl = released[keys].isna().any(axis=1).to_numpy()
        lo, hi = s["expected_reidentifications_hyper_interval"]
        plo, phi = s["expected_reidentifications_interval"]
        truth = (1 / F).sum()
        miss, pmiss = ("" if lo <= truth <= hi else "!"), ("" if plo <= truth <= phi else "!")
        corr = np.corrcoef(risk, 1 / F)[0, 1]
        corr_cf = np.corrcoef(cf_risk, 1 / F)[0, 1]
        print(f"{case:<{cw}}{s['n_blanks']:>8} ({s['n_blanked_records']:>4})"
              f"{s['n_patterns']:>9} ({s['n_blanked_patterns']:>4})"
              f"{(1 / F).sum():>8.2f}{s['expected_reidentifications']:>10.2f} "
              f"[{lo:6.2f}, {hi:6.2f}]{miss:<1} [{plo:6.2f}, {phi:6.2f}]{pmiss:<1}"
              f"{cf.summary['expected_reidentifications']:>8.2f}"
              f"{(1 / F)[bl].sum():>17.2f}{s['expected_reidentifications_blanked_records']:>10.2f}"
              f"{cf_risk[bl].sum():>8.2f}   {corr:.3f}/{corr_cf:.3f}{secs:>6.1f}", flush=True)
    if timings:
        print("\nblanked patterns: seconds batched / per pattern (ms per pattern), largest "
              "relative difference of the records' risks")
        for case, tb, tr, nbp, d in timings:
            k = max(nbp, 1)
            print(f"{case:<{cw}}{nbp:>6} patterns {tb:7.1f} s ({1e3 * tb / k:5.1f} ms) / "
                  f"{tr:7.1f} s ({1e3 * tr / k:5.1f} ms)   {d:.1e}")


if __name__ == "__main__":
    main()
