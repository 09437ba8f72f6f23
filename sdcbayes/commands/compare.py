"""``sdcbayes compare``: fit several models/priors to one file and compare them (issue 4).

Runs :func:`sdcbayes.risk.compare.compare_models` and writes, atomically,

* ``comparison.csv``: one row per model specification (LOO within a likelihood
  family, tau1, tau2, expected re-identifications with 90% intervals, with
  ``--household`` the household expected re-identifications with theirs as ``assess
  --household`` reports them, truth for the demo, diagnostics, fit time, decisions at
  the target);
* ``decisions.csv``: one row per cell of the key, the publish flag under every
  model and a ``changed`` marker;
* ``frontiers.csv``: every model's risk-loss frontier under every loss pair;
* with a stratum column (``--strata``; the demo's ``region``), ``by_stratum.csv``:
  per model and stratum the records, sample uniques and expected
  re-identifications, as ``sdcbayes assess`` reports them (:func:`_by_stratum`);
* ``summary.json`` and ``report.html`` (tables and one frontier plot per loss pair).

Every check (model specification syntax, prior names against each model's
defaults, losses, numbers, data columns and each model's data needs) runs before
PyMC is imported or anything is fitted, so a typo costs seconds, not a fit.
Heavy libraries are imported inside the command.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from sdcbayes._cliutils import (
    CORES_HELP,
    ENCODING_HELP,
    NA_VALUES_HELP,
    QUIET_HELP,
    SingleValueCommand,
    check_out_dir,
    echo_table,
    json_default,
    nan_to_none,
    parse_encoding,
    parse_na_values,
    split_names,
    write_csv,
    write_json,
    write_output_folder,
)
from sdcbayes.exceptions import InputError

#: The comparison without --models: the recommended model (the default of `sdcbayes
#: assess`) beside the Poisson-gamma model under two priors, the negative binomial and
#: the closed-form reference.
DEFAULT_MODELS = (
    "latent-class=latent-class,pg-default=poisson-gamma,pg-wide=poisson-gamma:alpha.sigma=5,"
    "negbin=negbin,closed=closed-form"
)


@click.command("compare", cls=SingleValueCommand)
@click.argument("data", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--keys", help="Key variables, comma-separated (required with DATA); for SPSS, "
              "Stata and SAS files a variable label may stand for its column (also in "
              "--weight and --household).")
@click.option("--weight", help="Sampling-weight column (needed by latent-class, poisson-gamma "
              "and negbin; --sampling-fraction will do for latent-class and poisson-gamma).")
@click.option("--household", help="Household id column (the demo's own, household_id, "
              "without DATA, its true household risk shown): each model's household "
              "(hierarchical) expected re-identifications with their 90% interval and its "
              "kind, as `sdcbayes assess --household` reports them for that model and seed "
              "(comparison.csv's household_er, household_er_lo, household_er_hi, "
              "household_interval_kind; summary.json's comparison rows under assess's "
              "names; report.html; none per stratum), and the closed form's expected "
              "re-identified households; recorded in the data summary (household, "
              "n_households). The latent-class cross-validation then keeps "
              "households whole, as in assess, and a latent-class model may take "
              "cluster-correction=cv (assess's --cluster-correction cv; see --models).")
@click.option("--strata", help="Stratum column, as in `sdcbayes assess` (the demo's own, "
              "region, without DATA). It may be one of --keys: the latent-class models then "
              "extrapolate each key combination at its own stratum's rate, as assess does "
              "(summary.json's notes say so); the other models pool the strata. Under "
              "--missing drop the kept weights stand for the dropped records stratum by "
              "stratum. Recorded in the data summary and settings; each model's records, "
              "sample uniques and expected re-identifications per stratum, as assess's "
              "by_stratum, go to by_stratum.csv, summary.json and report.html.")
@click.option("--sampling-fraction", type=float, help="Sampling fraction n/N when no --weight.")
@click.option(
    "--missing",
    type=click.Choice(["wildcard", "category", "drop"]),
    default="wildcard",
    show_default=True,
    help="Missing key values (as in `sdcbayes assess`). Every model of a comparison, the "
    "closed form included, needs each record in one cell: a file with missing key values "
    "needs category (missing is a level of its own) or drop; wildcard is refused there.",
)
@click.option(
    "--allow-weights-below-one",
    is_flag=True,
    help="Accept weights below 1 (as in `sdcbayes assess`).",
)
@click.option(
    "--max-levels",
    type=int,
    default=None,
    help="Largest number of levels accepted for one key (as in `sdcbayes assess`). "
    "[default: 1000]",
)
@click.option("--na-values", metavar="CODES", default=None, help=NA_VALUES_HELP)
@click.option("--encoding", metavar="ENC", default=None, help=ENCODING_HELP)
@click.option(
    "--models",
    default=DEFAULT_MODELS,
    show_default=True,
    help="Comma-separated NAME=MODEL[:PRIOR.FIELD=VALUE] items; MODEL is latent-class "
    "(the default model of `sdcbayes assess`, fitted by the same Gibbs sampler; its chains, "
    "draws and burn-in are compare's --chains, --draws and --tune, and compare's default "
    "--chains is 2 where assess runs 4), poisson-gamma, negbin (same samplers as assess, "
    "with compare's cheaper defaults: 2 chains x 500 draws after 500 tuning steps, assess "
    "4 x 1000 after 1000) or closed-form (the plug-in reference, nothing fitted; assess's "
    "--method exact, not approx). Give --chains, --draws and --tune to match an assess run: "
    "with equal settings and seed the numbers are identical. "
    "Further PRIOR.FIELD=VALUE items belong to the model before them, e.g. "
    "pg-wide=poisson-gamma:alpha.sigma=5,omega.sigma=2. Prior names: latent-class "
    "alpha, phi; poisson-gamma alpha, omega; negbin sigma. latent-class also takes "
    "OPTION=VALUE items classes=H (2 to 1000, default 30), overdispersion=cv|none|KAPPA (default "
    "cv; a fixed KAPPA has no assess option), structural-zeros=none|auto|RULES.json "
    "(default none; a rules file as for assess's --structural-zeros), "
    "profile-mass=none|cv|span (default none; assess's --profile-prior cv or span; "
    "assess's --profile-prior inverse is the prior override phi.a=inverse), "
    "chain-start=em|bootstrap (default em; assess's --chain-start), "
    "kappa-prior=half-cauchy[:A]|log-uniform|log-normal:M:S (default half-cauchy:1; "
    "assess's --kappa-prior, needs overdispersion=cv), cluster-correction=none|cv (default "
    "none; assess's --cluster-correction, needs --household), e.g. "
    "lc-poisson=latent-class:overdispersion=none,classes=10. Without --models, a default "
    "model the file cannot support (negbin without unequal weights; latent-class and "
    "poisson-gamma without --weight or --sampling-fraction) is left out with a note; a named "
    "one is refused. Missing key values under --missing wildcard are refused for every model "
    "(see --missing).",
)
@click.option(
    "--priors-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help='JSON {"MODEL NAME": {"PRIOR": {"FIELD": VALUE}}}: prior overrides per named '
    "model (inline --models overrides win).",
)
@click.option("--draws", type=click.IntRange(min=1), default=500, show_default=True,
              help="Posterior draws per chain, the same for every model (assess's default is "
              "1000 for poisson-gamma and negbin, 500 for latent-class).")
@click.option("--chains", type=click.IntRange(min=1), default=2, show_default=True,
              help="Chains of every model (R-hat needs at least 2). Fewer than assess's "
              "default 4, to keep a comparison of several models cheap; the cross-validated "
              "kappa of latent-class depends on them: give --chains 4 to match assess.")
@click.option("--tune", type=click.IntRange(min=0), default=None,
              help="Tuning (warm-up, burn-in) steps per chain, discarded, the same for every "
              "model [default: 500 for NUTS (assess: 1000), 2000 for latent-class (as "
              "assess), whose chains start at EM fits and drift for a thousand sweeps or "
              "more]. MAP and ADVI tune nothing (their rows record none).")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Random seed (the same for every model).")
@click.option(
    "--fit-method",
    type=click.Choice(["nuts", "nutpie", "advi", "map"]),
    default="nuts",
    show_default=True,
    help="NUTS, nutpie, ADVI, or MAP with a Laplace approximation (fast, approximate), "
    "for poisson-gamma and negbin; latent-class is always fitted by its Gibbs sampler.",
)
@click.option(
    "--target-accept",
    type=click.FloatRange(0.5, 1.0, min_open=True, max_open=True),
    default=0.9,
    show_default=True,
    help="Posterior models (NUTS): target acceptance rate of the sampler; raise it towards "
    "0.99 when divergent transitions are reported (smaller, slower steps).",
)
@click.option("--cores", type=click.IntRange(min=1), default=None, help=CORES_HELP)
@click.option(
    "--disclosure-loss",
    default="reidentifications",
    show_default=True,
    help="Loss of publishing a cell: reidentifications (f/F: the cell's expected "
    "re-identified records), or a loss of Zaslavsky & Horton (1998) such as "
    "uniques-equal:S=10, threshold:Ymin=3 (as `sdcbayes decide --disclosure-loss`).",
)
@click.option(
    "--suppression-loss",
    default="y",
    show_default=True,
    help="Loss of suppressing a cell: y (its records), constant, Y, n or N.",
)
@click.option(
    "--alternative",
    "alternatives",
    multiple=True,
    metavar="DISCLOSURE/SUPPRESSION",
    help="Another loss pair (repeatable), e.g. uniques-equal:S=10/y: frontier and "
    "suppression at the target per model.",
)
@click.option(
    "--target-risk",
    type=float,
    default=0.2,
    show_default=True,
    help="Target disclosure share (0-1): publish cells until the disclosure loss is this "
    "fraction of its full-publication value.",
)
@click.option("--threshold", type=float, default=None,
              help="Also count records whose risk exceeds this value (0-1).")
@click.option(
    "--max-draws",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Posterior draws used to average losses that need the predictive of F.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),  # a file: refused by check_out_dir, fix named
    default=Path("sdcbayes-compare"),
    show_default=True,
    help="Output folder: comparison.csv, decisions.csv, frontiers.csv, summary.json, "
    "report.html, and by_stratum.csv with a stratum column (--strata; the demo's region).",
)
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
def command(
    data: Path | None,
    keys: str | None,
    weight: str | None,
    household: str | None,
    sampling_fraction: float | None,
    missing: str,
    models: str,
    priors_file: Path | None,
    draws: int,
    chains: int,
    tune: int | None,
    seed: int | None,
    fit_method: str,
    disclosure_loss: str,
    suppression_loss: str,
    alternatives: tuple[str, ...],
    target_risk: float,
    threshold: float | None,
    max_draws: int,
    out: Path,
    quiet: bool,
    as_json: bool,
    allow_weights_below_one: bool = False,
    max_levels: int | None = None,
    target_accept: float = 0.9,
    na_values: str | None = None,
    cores: int | None = None,
    strata: str | None = None,
    encoding: str | None = None,
) -> None:
    """Fit several models or priors to one file and compare risk, fit and decisions.

    DATA is a CSV (.csv, .csv.gz, .tsv), Parquet (.parquet, .pq), SPSS (.sav, .zsav,
    .por), Stata (.dta) or SAS (.sas7bdat, .xpt) file; with no DATA the embedded
    demo sample is used and the true tau1, tau2 and expected re-identifications
    are shown next to every model's estimate. LOO is compared only between models
    with the same likelihood (the Poisson-gamma fits share the counts of counts;
    negbin's likelihood is the spread of the weights; the closed form has none, and
    the latent-class Gibbs fit stores no pointwise log-likelihood).
    """
    import math

    from sdcbayes.risk.compare import (
        parse_comparison_loss,
        parse_loss_pair,
        parse_model_specs,
        validate_specs,
    )
    from sdcbayes.risk.losses import parse_loss

    # ---- every check before any work ----------------------------------------------
    out_files = ["summary.json", "comparison.csv", "decisions.csv", "frontiers.csv",
                 "report.html"]
    models, rule_files = _rules_files(models)
    # by_stratum.csv: only with a stratum column (--strata, or the demo's own region)
    check_out_dir(out, writes=[*out_files, *(["by_stratum.csv"] if strata is not None
                                             or data is None else [])], inputs={
        "DATA": data, "--priors-file": priors_file,
        **{"--models' structural-zeros file" + (f" {k}" if k else ""): path
           for k, path in enumerate(rule_files.values())}}, command="compare")
    na_codes = parse_na_values(na_values)
    codec = parse_encoding(encoding, data)
    if na_codes is not None and data is None:
        raise InputError("--na-values declares missing-value codes of a data file; give the "
                         "file (DATA), or leave out --na-values for the demo")
    specs = parse_model_specs(models)
    from sdcbayes.cli import check_structural_zero_rules, read_structural_zero_rules

    rules_of = {}  # spec name -> the rules of its structural-zeros=RULES.json, form checked
    for index, path in rule_files.items():
        spec = specs[index]
        rules_of[spec.name] = (path, read_structural_zero_rules(
            path, f"--models {spec.name} structural-zeros=",
            none=f"structural-zeros=none in {spec.name}'s --models item"))
    rule_files = {specs[i].name: p for i, p in rule_files.items()}
    if priors_file is not None:
        specs = _merge_priors_file(specs, priors_file)
    specs = validate_specs([
        s.to_dict() | ({"options": {**s.options, "structural_zeros": rules_of[s.name][1]}}
                       if s.name in rules_of else {})
        for s in specs])
    if not (math.isfinite(target_risk) and 0.0 < target_risk < 1.0):
        raise InputError(f"--target-risk must lie strictly between 0 and 1; got {target_risk}")
    if threshold is not None and not 0.0 < threshold < 1.0:
        raise InputError(f"--threshold must lie strictly between 0 and 1; got {threshold}")
    l1 = parse_comparison_loss(disclosure_loss)
    l0 = parse_loss(suppression_loss)
    if l0.name not in ("constant", "y", "Y", "n", "N"):
        raise InputError(
            f"--suppression-loss {suppression_loss!r} is a disclosure loss; use one of "
            "constant, y, Y, n, N"
        )
    if l1.name in ("constant", "y", "Y", "n", "N"):
        raise InputError(
            f"--disclosure-loss {disclosure_loss!r} is a nonpublication loss; use "
            "reidentifications, uniques-equal:S=10 or threshold:Ymin=3"
        )
    for a in alternatives:
        parse_loss_pair(a)

    from sdcbayes.cli import load_input, microdata_with_notes

    frame, key_list, roles, truth, source = load_input(
        data, keys, weight=weight, household=household, strata=strata,
        quiet=quiet or as_json,
        household_truth=True,  # the demo's own households: their true household ER
        sampling_fraction=sampling_fraction,  # the demo's weights give way to it
        na_values=na_codes, encoding=codec,
    )
    # the demo's own stratum (region) without DATA, as `assess` takes it
    weight, household, strata = roles["weight"], roles["household"], roles["strata"]
    md_options: dict[str, Any] = {"allow_weights_below_one": allow_weights_below_one}
    if max_levels is not None:
        md_options["max_levels"] = max_levels
    md, data_notes = microdata_with_notes(
        frame, keys=key_list, weight=weight, household=household, strata=strata,
        sampling_fraction=sampling_fraction, missing=missing, **md_options)
    _refuse_wildcard_cells(md)  # before anything is printed or fitted
    if rules_of:
        from sdcbayes.risk.compare import ModelSpec

        # keys and levels against the data, before anything is fitted; keys as columns
        named = dict(zip(split_names(keys) or [], key_list, strict=False))
        checked = {}
        for name, (path, rules) in rules_of.items():
            checked[name] = check_structural_zero_rules(
                rules, md, f"--models {name} structural-zeros={path}", named=named)
        specs = [s if s.name not in checked else ModelSpec(
            s.name, s.model, s.priors, {**s.options, "structural_zeros": checked[s.name]})
            for s in specs]

    # ---- work ------------------------------------------------------------------------
    from sdcbayes.risk.compare import check_model_data, compare_models, tune_for

    left_out: list[dict[str, str]] = []
    if click.get_current_context().get_parameter_source("models") == ParameterSource.DEFAULT:
        from sdcbayes.cli import cli_wording

        # the default comparison: a model whose data needs this file does not meet (negbin
        # without unequal weights, latent-class and poisson-gamma with wildcard-missing
        # keys) is left out with a note; a model the user names is still refused in one line
        kept = []
        for s in specs:
            try:
                check_model_data(md, [s])
                _require_population(md, s)
            except InputError as err:
                reason = cli_wording(str(err).removeprefix("cannot fit: "), "compare")
                left_out.append({"name": s.name, "model": s.model, "reason": reason})
            else:
                kept.append(s)
        specs = kept
        if not kept:  # not reached while the closed form has no data needs of its own
            raise InputError("every model of the default comparison was left out: "
                             + "; ".join(d["reason"] for d in left_out))
        if left_out and not (quiet or as_json):
            click.echo("sdcbayes: note: left out of the default comparison: "
                       + "; ".join(d["reason"] for d in left_out), err=True)
    else:
        check_model_data(md, specs)  # each model's data needs, still before PyMC
        for s in specs:
            _require_population(md, s)
    input_warnings: list[str] = list(data_notes)
    if md.weights is None:
        from sdcbayes.cli import CLOSED_FORM_NO_WEIGHTS_NOTE

        # the caveat `assess --model closed-form` prints on such a file (the posterior
        # models were refused or left out above), named by its model as the fits' warnings
        input_warnings += [f"{s.name}: {CLOSED_FORM_NO_WEIGHTS_NOTE}"
                           for s in specs if s.model == "closed-form"]
    # said once for all the models it concerns ("a, b: ...")
    input_warnings = merge_model_warnings(input_warnings, [s.name for s in specs])
    for msg in input_warnings:  # on stderr also under --quiet and --json, as `assess` does
        click.echo("sdcbayes: warning: " + msg, err=True)
    quiet_fit = quiet or as_json
    if quiet_fit:
        for name in ("pymc", "arviz", "pytensor"):
            logging.getLogger(name).setLevel(logging.ERROR)
    else:
        n_fit = sum(s.model not in ("closed-form", "latent-class") for s in specs)
        n_lc = sum(s.model == "latent-class" for s in specs)
        parts = []
        if n_fit:
            parts.append(
                f"{n_fit} model(s) ({fit_method}: {chains} chains x {draws} draws"
                + (f" after {tune_for('nuts', tune)} tuning steps"
                   if fit_method in ("nuts", "nutpie") else "")
                + ")")
        if n_lc:
            parts.append(f"{n_lc} latent-class model(s) (gibbs: {chains} chains x {draws} "
                         f"draws after {tune_for('latent-class', tune)} tuning steps)")
        if parts:  # the closed form alone fits nothing
            click.echo(f"fitting {' and '.join(parts)} ...", err=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = compare_models(
            md, specs, draws=draws, chains=chains, tune=tune, random_seed=seed,
            method=fit_method, target_accept=target_accept, disclosure_loss=l1,
            suppression_loss=l0, alternatives=list(alternatives), target_risk=target_risk,
            threshold=threshold, max_draws=max_draws, truth=truth, progressbar=not quiet_fit,
            cores=cores,
        )
    from sdcbayes.cli import cli_wording
    from sdcbayes.inference.diagnostics import SdcbayesWarning

    fit_warnings: list[str] = []
    for w in caught:
        if issubclass(w.category, SdcbayesWarning):
            # the fix as an option (--draws, --tune, --target-accept), as `assess` words
            # it; compare_models has put the model's name first
            fit_warnings.append(cli_wording(" ".join(str(w.message).split()), "compare"))
    # a warning several models give (lc and lc-poisson's truncation, ~700 characters)
    # said once, naming them; summary.json and report.html keep what was printed
    fit_warnings = merge_model_warnings(fit_warnings, [s.name for s in specs])
    for msg in fit_warnings:  # on stderr also under --quiet and --json, as `assess` does
        click.echo("sdcbayes: warning: " + msg, err=True)

    from sdcbayes._version import __version__

    strata_rows = _by_stratum(md, result)
    if strata_rows is not None:
        out_files = [*out_files, "by_stratum.csv"]
    summary: dict[str, Any] = {
        "command": "compare",
        "sdcbayes_version": __version__,
        "data": source,
        "output_files": out_files,  # previous_outputs reads it
        **_typed_summary(result.summary()),
    }
    if strata_rows is not None:
        # per model, the list `assess --strata` writes (by_stratum.csv: the same, long)
        summary["by_stratum"] = strata_rows
    if input_warnings or fit_warnings:  # also in report.html's warning box
        summary["warnings"] = list(dict.fromkeys([*input_warnings, *fit_warnings]))
    if left_out:
        summary["models_left_out"] = left_out
    if truth is not None:
        summary["truth"] = truth
    from sdcbayes.provenance import file_fingerprint

    summary["provenance"] = {**result.provenance, "input": file_fingerprint(data)}
    if isinstance(summary["provenance"].get("settings"), dict):
        summary["provenance"]["settings"] = _method_settings(
            summary["provenance"]["settings"])
    data_stamp = summary["provenance"].get("data")
    if missing != "wildcard" and isinstance(data_stamp, dict) and "alpha" in data_stamp:
        # alpha weighs wildcard matches: under category or drop there are none, so it is
        # not stamped as if it had been used (as `assess` stamps it)
        summary["provenance"]["data"] = {**data_stamp, "alpha": None}
    if na_codes is not None and summary["provenance"]["input"] is not None:
        summary["provenance"]["input"]["na_values"] = na_codes
    if codec is not None and summary["provenance"]["input"] is not None:
        summary["provenance"]["input"]["encoding"] = codec
    if rule_files:
        # the rules themselves are in "models" (each specification's options)
        summary["structural_zeros_files"] = {n: str(p) for n, p in rule_files.items()}

    from sdcbayes.report import comparison_report

    html = comparison_report(result, summary)
    decisions = result.decisions.reset_index(drop=True)
    # `cell`: the row number, = summary.json's changed_cells, = assess's records.csv `cell`
    decisions.insert(0, "cell", range(len(decisions)))
    for col in decisions.columns:
        if str(decisions[col].dtype) == "category":  # pyarrow writes labels, not codes
            decisions[col] = decisions[col].astype(str)
    writers = {
        "summary.json": lambda p: write_json(p, summary),
        "comparison.csv": lambda p: write_csv(p, result.table),
        "decisions.csv": lambda p: write_csv(p, decisions),
        "frontiers.csv": lambda p: write_csv(p, result.frontiers),
        "report.html": lambda p: p.write_text(html, encoding="utf-8"),
    }
    if strata_rows is not None:
        writers["by_stratum.csv"] = lambda p: write_csv(p, by_stratum_frame(strata_rows))
    write_output_folder(out, writers)
    if as_json:
        click.echo(json.dumps(nan_to_none(summary), indent=2, default=json_default))
    elif not quiet:
        _print_summary(result, summary, out)


#: A number standing alone in a warning (30, 1.019, 100%, -0.5, 1e-05), not the digit of a
#: name (tau1): its sign is part of it unless the "-" joins two words or numbers (R-hat,
#: 3-5), and so is an exponent, so that merging never drops a sign nor splits 1e-05
#: (audit AU3 N1)
_NUMBER = (r"((?:(?<![\w.-])-?|(?<=[\w.]-))"  # a sign, or a hyphen of a compound before it
           r"\d+(?:[.,]\d+)*(?:[eE][+-]?\d+)?%?)")


def merge_model_warnings(messages: list[str], names: list[str]) -> list[str]:
    """Warnings that several models give said once, naming the models (audit UX F7).

    ``compare_models`` puts the model's name first (``"lc: all 30 latent classes ..."``).
    Messages whose texts after the name are equal become one, ``"lc, lc-poisson: all
    30 latent classes ..."``; where they differ in one number only (the share of draws,
    an R-hat) that number is listed per model, ``"... in 100% (lc), 97% (lc-poisson) of
    the draws ..."``. Other messages, and those without a model's name first, are kept
    as they are, in their order (a merged one where its first message was). Exact
    repeats are dropped.

    Parameters
    ----------
    messages : list of str
        The warnings, each ``"<name>: <text>"`` or a text of the whole run.
    names : list of str
        The models' names (``--models``), so that a name holding ``": "`` is read whole.

    Returns
    -------
    list of str
        The warnings to print and to keep in summary.json.
    """
    import re

    by_length = sorted(set(names), key=len, reverse=True)  # "lc-poisson" before "lc"
    groups: dict[Any, list[tuple[str, list[str]]]] = {}
    for msg in dict.fromkeys(messages):
        name = next((n for n in by_length if msg.startswith(f"{n}: ")), None)
        if name is None:  # a warning of the whole run: kept as it is (None: no skeleton)
            groups[(None, msg)] = [("", [msg])]
            continue
        parts = re.split(_NUMBER, msg[len(name) + 2:])  # text, number, text, ...
        groups.setdefault(tuple(parts[0::2]), []).append((name, parts))
    out = []
    for key, entries in groups.items():
        if key[0] is None:
            out.append(key[1])
            continue
        models = [n for n, _ in entries]
        numbers = [parts[1::2] for _, parts in entries]
        differ = [j for j in range(len(numbers[0])) if len({t[j] for t in numbers}) > 1]
        if len(entries) == 1 or len(set(models)) < len(models) or len(differ) > 1:
            out += [f"{n}: {''.join(parts)}" for n, parts in entries]
            continue
        parts = list(entries[0][1])
        if differ:  # the one number they differ in, per model
            j = differ[0]
            parts[2 * j + 1] = ", ".join(f"{t[j]} ({n})" for n, t in zip(models, numbers,
                                                                          strict=True))
        out.append(f"{', '.join(models)}: {''.join(parts)}")
    return out


#: Columns of by_stratum.csv: the model specification's name, then assess's by_stratum fields.
BY_STRATUM_COLUMNS = ("name", "stratum", "n_records", "n_sample_uniques",
                      "expected_reidentifications")


def _by_stratum(md, result) -> dict[str, list[dict[str, Any]]] | None:
    """Each model's per-stratum table, as ``sdcbayes assess --strata`` writes it.

    :func:`sdcbayes.cli.by_stratum` of each specification's assessment cells
    (``result.assessments[name].cells``, whose ``risk`` is the cell's posterior mean,
    or plug-in, E(1/F_k | f_k)), so a stratum's expected re-identifications are the
    sum of its records' risks and the strata of one model add up to its ``er``.

    Returns
    -------
    dict of str to list of dict, or None
        By specification name, in the order of the comparison; None without a
        stratum column.
    """
    if md.strata is None:
        return None
    from sdcbayes.cli import by_stratum

    return {s.name: by_stratum(md, result.assessments[s.name].cells) for s in result.specs}


def by_stratum_frame(rows: dict[str, list[dict[str, Any]]]):
    """``by_stratum.csv``: :func:`_by_stratum`'s lists in long form.

    One row per (model, stratum): columns :data:`BY_STRATUM_COLUMNS`, models in the
    comparison's order and strata in their own.
    """
    import pandas as pd

    return pd.DataFrame([{"name": name, **r} for name, rs in rows.items() for r in rs],
                        columns=list(BY_STRATUM_COLUMNS))


#: Fields of comparison rows that count things: ints in summary.json (the DataFrame made
#: them floats where another row has none); None (NaN in the table) stays null.
_INT_FIELDS = ("tune", "loo_rank", "divergences", "n_published", "n_suppressed")


def _typed_summary(s: dict[str, Any]) -> dict[str, Any]:
    """``result.summary()`` with each field's own type.

    In ``comparison``: counts as ints (``tune`` 50, not 50.0; the closed form's
    ``n_above_threshold``, a count; a posterior model's is the posterior mean of the
    count, a float), and "" (no priors, no likelihood, no note) as null. In
    ``settings``: :func:`_method_settings`.
    """
    rows = []
    for row in s.get("comparison") or []:
        r = dict(row)
        for k, v in r.items():
            if v == "":
                r[k] = None
            elif (k in _INT_FIELDS or (k == "n_above_threshold"
                                       and r.get("model") == "closed-form")) \
                    and isinstance(v, float) and v.is_integer():
                r[k] = int(v)
        rows.append(r)
    out = dict(s)
    if "comparison" in s:
        out["comparison"] = rows
    if isinstance(s.get("settings"), dict):
        out["settings"] = _method_settings(s["settings"])
    return out


def _method_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` with ``tune`` as an int where the table made it a float."""
    out = dict(settings)
    if isinstance(out.get("tune"), float) and out["tune"].is_integer():
        out["tune"] = int(out["tune"])
    return out


def _require_population(md, spec) -> None:
    """A model of one population total needs weights summing to more than n (before PyMC)."""
    from sdcbayes.microdata import require_population_beyond_sample

    try:
        require_population_beyond_sample(
            md, spec.model, instead="give --sampling-fraction instead of --weight, or leave "
            "the poisson-gamma and latent-class models out of --models")
    except InputError as err:
        raise InputError(f"cannot fit: {spec.name!r} ({spec.model}): {err}") from None


def _refuse_wildcard_cells(md) -> None:
    """Refuse, in one line, missing key values matched as wildcards (before any work).

    Every model of a comparison, the closed form's row included, takes each record in
    one cell (:func:`sdcbayes.risk.compare.check_model_data`); under ``--missing
    wildcard`` a record with a missing key value is in none, so every model would be
    refused or left out.
    """
    import numpy as np

    if md.missing != "wildcard":
        return
    cell = np.asarray(md.record_cell)
    n = int(np.asarray(md.cells.has_missing)[cell[cell >= 0]].sum())
    if n:
        raise InputError(
            (f"{n:,} records have missing key values" if n != 1
             else "1 record has a missing key value") + ", which "
            "--missing wildcard (the default) matches to every level; compare's models need "
            "each record in one cell: use --missing category (missing is a level of its own) "
            "or --missing drop"
        )


#: An item of --models that sets a latent-class model's structural zeros
#: (``lc=latent-class:structural-zeros=R`` or ``structural-zeros=R`` after it).
_RULES_OPTION = "structural-zeros="


def _rules_files(models: str) -> tuple[str, dict[int, Path]]:
    """``--models`` with each ``structural-zeros=RULES.json`` set aside.

    Returns the text with those items reading ``structural-zeros=auto`` (so that
    :func:`sdcbayes.risk.compare.parse_model_specs` parses the rest as it always did) and
    the files by the position of the specification they belong to. ``none`` and
    ``auto`` are left as they are.
    """
    from sdcbayes.risk.compare import parse_model_specs

    items = models.split(",")
    files: dict[int, Path] = {}
    for i, raw in enumerate(items):
        item = raw.strip()
        if item.startswith(_RULES_OPTION):  # continues the specification before it
            head, value = "", item[len(_RULES_OPTION):]
        else:
            head, colon, tail = item.partition(":")
            if not colon or not tail.strip().startswith(_RULES_OPTION):
                continue
            head, value = head + ":", tail.strip()[len(_RULES_OPTION):]
        if value.strip() in ("none", "auto", ""):
            continue
        items[i] = f"{head}{_RULES_OPTION}auto"
        # the specification it belongs to: the last one parsed up to this item
        files[len(parse_model_specs(",".join(items[: i + 1]))) - 1] = Path(value.strip())
    return ",".join(items), files


def _merge_priors_file(specs, path: Path):
    """Prior overrides from a JSON file, under the inline ones; unknown model names rejected."""
    from sdcbayes.risk.compare import ModelSpec

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"--priors-file {path}: not readable JSON ({err})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputError(
            f'--priors-file {path} must hold {{"MODEL NAME": {{"PRIOR": {{"FIELD": VALUE}}}}}}'
        )
    names = [s.name for s in specs]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise InputError(
            f"--priors-file {path} names model(s) {unknown} that --models does not define; "
            f"defined: {names}"
        )
    out = []
    for s in specs:
        merged: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v
                                  for k, v in data.get(s.name, {}).items()}
        for prior, fields in s.priors.items():
            if isinstance(merged.get(prior), dict):
                merged[prior] |= fields
            else:
                merged[prior] = dict(fields)
        out.append(ModelSpec(s.name, s.model, merged, dict(s.options)))
    return out


#: Marks the closed form's intervals on the console (footnote below the table).
_PLUG_IN_MARK = "*"


def _print_summary(result, s: dict[str, Any], out: Path) -> None:
    t = result.table
    truth = s.get("truth")
    click.echo(f"sdcbayes {s['sdcbayes_version']} — compare: {len(t)} model(s); "
               f"decisions under the loss pair {result.pairs[0]} (disclosure / suppression) "
               f"at target risk {s['target_risk']}")
    click.echo(f"data: {s['data']}")
    legend = ("  tau1: sample uniques unique in the population; tau2: expected correct matches "
              "of sample uniques; ER: expected re-identifications; elpd: PSIS-LOO fit, "
              "comparable only between fits of one likelihood")
    click.echo(legend)
    # a model's measures, each "name value [lo, hi]", and its tau2's the same way (audit UX
    # F9: comparison.csv and report.html give its interval too)
    models: list[tuple[str, list[str], str]] = []
    plug_in_kind = no_interval_note = None
    # fits with a LOO per likelihood (a model's fits share one): a lone fit has no rank
    n_ranked = t.loc[t["elpd_loo"].notna(), "model"].value_counts()
    for r in t.itertuples(index=False):
        loo = ("–" if r.elpd_loo != r.elpd_loo
               else f"elpd {r.elpd_loo:.1f} (only model of its likelihood)"
               if n_ranked.get(r.model, 0) < 2
               else f"elpd {r.elpd_loo:.1f} (rank {int(r.loo_rank)} of "
               f"{n_ranked[r.model]} {r.model} fits, 0 = best)")
        # The closed form's intervals are the plug-in's predictive spread, not a
        # posterior interval (`assess --model closed-form` shows the same ones for the
        # same --seed, risk.assess.plug_in_predictive): marked, with comparison.csv's
        # interval_kind as the footnote.
        mark = ""
        # the closed form of a file that is its own population (every plug-in p = 1) has
        # no interval, as in `assess`: its estimates alone, its interval_note as footnote
        no_interval = bool(getattr(r, "interval_note", "") or "")
        if r.model == "closed-form":
            mark = _PLUG_IN_MARK
            if no_interval:
                no_interval_note = r.interval_note
            else:
                plug_in_kind = getattr(r, "interval_kind", None) or (
                    "predictive given the plug-in p (no parameter uncertainty)")

        def bounds(lo, hi, digits: int, none: bool = no_interval) -> str:
            return "" if none else f" [{lo:.{digits}f}, {hi:.{digits}f}]"

        parts = [
            f"tau1 {r.tau1:.1f}{bounds(r.tau1_lo, r.tau1_hi, 0)}{mark}",
            f"ER {r.er:.1f}{bounds(r.er_lo, r.er_hi, 1)}{mark}",
            # --household: the household ER beside the ER (its interval of the row's kind)
            *([f"household ER {r.household_er:.1f}"
               f"{bounds(r.household_er_lo, r.household_er_hi, 1)}{mark}"]
              if "household_er" in t.columns else []),
            loo,
            f"suppress {r.n_suppressed:,} cells",
        ]
        models.append((r.name, parts,
                       f"tau2 {r.tau2:.1f}{bounds(r.tau2_lo, r.tau2_hi, 1)}{mark}"))
    keys = [name for name, _, _ in models] + ["cells whose decision changes"] \
        + (["truth"] if truth else [])
    width = max(len(k) for k in keys)
    rows = []
    for name, parts, tau2 in models:
        inline = "  ".join([parts[0], tau2, *parts[1:]])
        # no wider than the legend above (echo_table: "  name  row"); a wider row (a long
        # elpd note, household ER) gets tau2 on a sub-row under tau1 instead
        if 2 + width + 2 + len(inline) <= len(legend):
            rows.append((name, inline))
        else:
            rows += [(name, "  ".join(parts)), ("", tau2)]
    if truth:
        her = truth.get("household_expected_reidentifications")
        rows.append(("truth", f"tau1 {truth['tau1']:.1f}  tau2 {truth['tau2']:.1f}  "
                              f"ER {truth['expected_reidentifications']:.1f}"
                              + (f"  household ER {her:.1f}" if her is not None else "")))
    rows.append(("cells whose decision changes", f"{s['n_changed_cells']:,} of {s['n_cells']:,}"))
    echo_table(rows)
    if plug_in_kind is not None:
        click.echo(f"  {_PLUG_IN_MARK} closed form: 90% interval {plug_in_kind}, not a "
                   "posterior interval")
    elif no_interval_note is not None:
        click.echo(f"  {_PLUG_IN_MARK} closed form: {no_interval_note}")
    click.echo(f"written: {out}/comparison.csv, decisions.csv, frontiers.csv, "
               + ("by_stratum.csv, " if "by_stratum" in s else "")
               + "summary.json, report.html")
