"""Benchmark: accuracy of the disclosure-risk estimators on known populations (issue 7).

For every design (population x key set x sampling fraction x design kind) draws
seeded samples, runs each method and prints, per design and method, the relative
bias and relative RMSE of tau1, tau2 and the expected re-identifications (ratios of
means over replicates, see ``sdcbayes.validation.summarise``), the DIS theta where
estimated, 90% interval coverage and width (posterior methods), the Brier score and
AUC of P(F_k = 1 | f_k = 1) over sample uniques, and the mean run time per sample.

Populations: adult6, adult9, scotland7, scotland13 (the 12 designs of the goal), and
the held-out eusilc, eusilc-distinct and eusilc-multi
(``sdcbayes.validation.load_population``) -- all from the shared data folder,
``--data-dir``, ``$SDCBAYES_SHARED_DATA`` or ``../shared/data``, skipped with a message
when absent -- and synthetic (the census simulator). ``--kind household`` needs a
population with households: synthetic or the eusilc files.

Usage:
    python benchmarks/accuracy.py [--populations adult6,adult9,scotland7,scotland13]
        [--fractions 0.01,0.05,0.1] [--methods benedetti-franconi,poisson-gamma,...]
        [--replicates 100] [--kind srs|stratified|household] [--seed 0]
        [--data-dir DIR] [--csv results.csv] [--calibration] [--calibration-html cal.html]

The stored ``benchmarks/results/closed_form_100.csv.gz`` (gzipped) came from
    python benchmarks/accuracy.py --replicates 100
        --methods benedetti-franconi,poisson-gamma,loglinear-main,dis --csv closed_form_100.csv
(the default ``--methods`` is every baseline, the two-way log-linear fit included).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

from sdcbayes.validation import (
    BASELINES,
    Design,
    SkipDesign,
    calibration_table,
    run_design,
    summarise,
)

REAL = ("adult6", "adult9", "scotland7", "scotland13")


def _pct(x: float) -> str:
    return "" if not np.isfinite(x) else f"{100 * x:+.0f}%"


def _num(x: float, fmt: str = ".3f") -> str:
    return "" if not np.isfinite(x) else format(x, fmt)


def format_table(summary: pd.DataFrame) -> str:
    """Markdown table: one row per (design, method)."""
    lines = [
        "| design | method | tau1 bias | tau1 rRMSE | tau2 bias | tau2 rRMSE | ER bias | "
        "ER rRMSE | theta bias | cover90 tau1/tau2 | Brier | AUC | s/sample | reps |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (design, method), g in summary.groupby(["design", "method"], sort=False):
        q = g.set_index("quantity")

        def get(quantity, col):
            return q.at[quantity, col] if quantity in q.index else np.nan

        cover = "/".join(_num(get(x, "coverage"), ".2f") for x in ("tau1", "tau2"))
        lines.append(
            f"| {design} | {method} | {_pct(get('tau1', 'rel_bias'))} | "
            f"{_pct(get('tau1', 'rel_rmse'))} | {_pct(get('tau2', 'rel_bias'))} | "
            f"{_pct(get('tau2', 'rel_rmse'))} | "
            f"{_pct(get('expected_reidentifications', 'rel_bias'))} | "
            f"{_pct(get('expected_reidentifications', 'rel_rmse'))} | "
            f"{_pct(get('theta', 'rel_bias'))} | {cover if cover != '/' else ''} | "
            f"{_num(g['brier'].iloc[0])} | {_num(g['auc'].iloc[0])} | "
            f"{_num(g['time_s'].iloc[0], '.3f')} | {int(g['replicates'].max())} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--populations", default=",".join(REAL))
    parser.add_argument("--fractions", default="0.01,0.05,0.1")
    parser.add_argument("--methods", default=",".join(BASELINES))
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--kind", default="srs", choices=["srs", "stratified", "household"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--csv", default=None, help="write the per-replicate results here")
    parser.add_argument("--calibration", action="store_true", help="print calibration bins")
    parser.add_argument("--calibration-html", default=None,
                        help="write calibration plots (one per design) and the expected "
                             "calibration error to this HTML page")
    args = parser.parse_args(argv)

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    fractions = [float(x) for x in args.fractions.split(",")]
    results = []
    calib = []
    for pop in [p.strip() for p in args.populations.split(",") if p.strip()]:
        for fraction in fractions:
            design = Design(pop, fraction, kind=args.kind, replicates=args.replicates,
                            seed=args.seed)
            t0 = time.perf_counter()
            try:
                res = run_design(design, methods, data_dir=args.data_dir)
            except SkipDesign as exc:
                print(f"SKIP {design.label}: {exc}", file=sys.stderr)
                continue
            print(f"# {design.label}: {args.replicates} replicates in "
                  f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            notes = res.loc[res["note"] != "", ["method", "note"]].drop_duplicates("method")
            for _, row in notes.iterrows():
                print(f"#   {row['method']}: {row['note']}", file=sys.stderr)
            results.append(res)
            calib.append(calibration_table(res))
    if not results:
        print("no design could run", file=sys.stderr)
        return 1
    all_results = pd.concat(results, ignore_index=True)
    if args.csv:
        all_results.to_csv(args.csv, index=False)
    print(format_table(summarise(all_results)))
    cal = pd.concat(calib, ignore_index=True)
    if args.calibration:
        print()
        print(cal.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.calibration_html:
        from pathlib import Path

        from sdcbayes.report import calibration_report

        Path(args.calibration_html).write_text(calibration_report(cal), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
