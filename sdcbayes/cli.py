"""The ``sdcbayes`` command line (click).

Every command validates all of its input before doing any work and writes its
output folder atomically (into a temporary sibling folder, renamed at the end),
so a failed run never leaves a half-written folder. Bad input is reported as one
line on stderr with exit status 2, no traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from sdcbayes._cliutils import (
    CLOSED_FORM_METHOD_HELP,
    CORES_HELP,
    ENCODING_HELP,
    EXIT_INPUT,
    L_DIVERSITY_C_HELP,
    NA_VALUES_HELP,
    QUIET_HELP,
    SingleValueCommand,
    check_out_dir,
    closed_form_method_option,
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
from sdcbayes._version import __version__
from sdcbayes.exceptions import InputError, SdcbayesError
from sdcbayes.risk.assess import CLOSED_FORM_NO_WEIGHTS_NOTE as CLOSED_FORM_NO_WEIGHTS_NOTE_PY

#: Files with more rows than this get a short status on stderr while they are read
#: and turned into a cell table (unless --quiet or --json).
LARGE_FILE_ROWS = 1_000_000
#: Files larger than this (bytes) announce themselves before reading; ~10^6 CSV rows.
LARGE_FILE_BYTES = 50 * 2**20


def read_data(path: Path, *, quiet: bool, na_values: list[str] | None = None,
              columns: list[str] | None = None, encoding: str | None = None):
    """Read a data file, with a status line on stderr for large files.

    ``read_microdata`` reads the file (``na_values``: the codes of ``--na-values``,
    missing in every column; ``columns``: only these, in this order, all by default;
    ``encoding``: the codec of ``--encoding``, :func:`parse_encoding`);
    the status costs one ``stat`` and ``len(frame)``, nothing per record.
    """
    from sdcbayes.microdata import read_microdata

    size = path.stat().st_size if path.is_file() else 0
    if not quiet and size > LARGE_FILE_BYTES:
        click.echo(f"reading {path} ({size / 2**20:,.0f} MB) ...", err=True)
    frame = read_microdata(path, na_values=na_values, columns=columns, encoding=encoding)
    if not quiet and len(frame) > LARGE_FILE_ROWS:
        click.echo(f"read {path} ({len(frame):,} rows); building the cell table ...", err=True)
    return frame


def read_variables(path: Path, keys: list[str], *, quiet: bool,
                   na_values: list[str] | None = None, sensitive: list[str] | None = None,
                   encoding: str | None = None, **single: str | None):
    """Read only the columns that ``--keys`` and the single-column options name.

    The names (column names or variable labels, :func:`resolve_variables`) are
    resolved against the file's header first (``sdcbayes.microdata._read_header``:
    the CSV header line, the Parquet schema, pyreadstat's metadata), so a misspelt
    name is reported, with the file's columns, before any record is read; then only
    the named columns are read. A survey file of hundreds of columns otherwise costs
    memory and time for every one of them (10^6 records, 38 columns of which 6
    named: a peak of 1,320 MB reading the CSV whole, 692 MB reading the 6; Parquet
    876 MB and 319 MB; audit U, F3). Each column is read as the whole file's read
    gives it (value labels, missing values, ``--na-values``: all per column).

    ``sensitive`` (``assess --sensitive``): more columns to read, resolved as the keys
    and checked by :func:`check_sensitive_roles` before any record is read.

    Returns
    -------
    (frame, keys, single)
        The frame of the named columns (in the file's order), and the names resolved
        to column names, as :func:`resolve_variables` returns them; with ``sensitive``,
        ``single["sensitive"]`` is the list of its columns.
    """
    from sdcbayes.microdata import _read_header, resolve_columns

    header = _read_header(path, encoding=encoding)
    key_list, resolved = resolve_variables(header, path.name, keys, **single)
    sensitive_cols: list[str] = []
    if sensitive is not None:
        sensitive_cols = resolve_columns(header, sensitive, option="--sensitive",
                                         source=path.name)
        check_sensitive_roles(sensitive_cols, key_list, resolved)
    wanted = {*key_list, *(c for c in resolved.values() if c is not None), *sensitive_cols}
    needed = [c for c in header.columns if c in wanted]
    frame = read_data(path, quiet=quiet, na_values=na_values, columns=needed,
                      encoding=encoding)
    if sensitive is not None:
        resolved["sensitive"] = sensitive_cols  # type: ignore[assignment]
    return frame, key_list, resolved


def resolve_variables(
    frame, source: str | None, keys: list[str], **single: str | None
) -> tuple[list[str], dict[str, str | None]]:
    """Column names for ``--keys`` and single-column options, labels accepted.

    Each name is a column name or, for SPSS/Stata/SAS files, a variable label
    (:func:`sdcbayes.microdata.resolve_columns`). ``single`` maps an option's
    Python name (``weight``) to its value; ``None`` stays ``None``.
    """
    from sdcbayes.microdata import resolve_columns

    resolved_keys = resolve_columns(frame, keys, option="--keys", source=source)
    out: dict[str, str | None] = {}
    for name, value in single.items():
        option = "--" + name.replace("_", "-")
        out[name] = (
            None if value is None
            else resolve_columns(frame, [value], option=option, source=source)[0]
        )
    return resolved_keys, out


# --------------------------------------------------------------------------- CLI
@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="sdcbayes")
def cli() -> None:
    """sdcbayes: Bayesian disclosure-risk assessment of survey microdata.

    Estimate, per record and for the whole file, the risk that an intruder who
    knows some key variables (age, sex, region, ...) re-identifies a person in
    a released sample. Run `sdcbayes assess` with no arguments for a demo.
    """


@cli.command(cls=SingleValueCommand)
@click.argument("data", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--keys",
    help="Key variables the intruder knows, comma-separated column names "
    "(e.g. age,sex,region); for SPSS, Stata and SAS files a variable label "
    "(\"Age in years\", any case) may stand for its column. Required with DATA. In "
    "SPSS and Stata files every declared value label of a key, and in Parquet files every "
    "category of a categorical (dictionary) column, is a level of the cell space (K) even "
    "where no record has it, so the posterior models' numbers can differ from those of a "
    "CSV export of the same records (the closed form's do not).",
)
@click.option(
    "--weight",
    help="Sampling-weight column (inverse inclusion probability). Without it, "
    "--sampling-fraction is used; without either, --model closed-form counts every record "
    "as its own population (p = 1), and the posterior models (latent-class, poisson-gamma, "
    "negbin) refuse to run, as they need the population size. "
    "Like --household and --strata, a name or a variable label. Unequal weights enter the "
    "latent-class model as weight classes (the strata of a stratified design), extrapolated "
    "to the population class by class.",
)
@click.option("--household", help="Household id column: adds household (hierarchical) risk; "
              "the latent-class model's cross-validation then keeps households whole (the "
              "sample is taken to be a household sample).")
@click.option("--strata", help="Stratum column: summary.json's by_stratum gives each "
              "stratum's records, sample uniques and expected re-identifications. It may be "
              "one of --keys (region, say: each key combination then lies in one stratum). "
              "The models "
              "pool the strata; the latent-class model takes a stratified design in through "
              "unequal --weight (weight classes). Under --missing drop each stratum's kept "
              "weights stand for its dropped records; a stratum with no record kept gives "
              "its weight to all kept records, with a warning.")
@click.option(
    "--sensitive", metavar="VARS", default=None,
    help="Sensitive variables, comma-separated (a name, or a variable label as for --keys): "
    "adds their l-diversity within each key combination (sdcMicro's ldiversity): the "
    "distinct, entropy and recursive (c, l) l-diversity of the record's cell in records.csv "
    "(<var>_distinct_l, <var>_entropy_l, <var>_recursive_l; multi_entropy_l and "
    "multi_recursive_l for two or more), the cells whose records all share one value "
    "(attribute disclosure) in summary.json's l_diversity. Not a key, --weight or "
    "--household (it may be --strata). The cells are the exact key patterns, a missing key "
    "value equal only to a missing one, as sdcMicro's ldiversity groups them (also under "
    "--missing wildcard); --missing drop leaves the dropped records out. The same for "
    "every --model.",
)
@click.option(
    "--l-diversity-c", "l_diversity_c", type=float, default=None, metavar="C",
    help=L_DIVERSITY_C_HELP,
)
@click.option(
    "--model",
    type=click.Choice(["closed-form", "poisson-gamma", "negbin", "latent-class"]),
    default="latent-class",
    show_default=True,
    help="Risk model. latent-class (the default, recommended): a mixture of products of "
    "multinomials that borrows strength across the keys, fitted by Gibbs sampling; by far "
    "the least biased on real files (README, Accuracy), though its intervals are not yet "
    "calibrated on every design. closed-form: Benedetti-Franconi individual risk with "
    "p = f/F̂ (sdcMicro's measure_risk and mu-Argus report its approximation, --method "
    "approx; the default --method exact evaluates it exactly; its 90% intervals are "
    "predictive given the plug-in p, without parameter uncertainty, as compare's "
    "closed-form row; understates tau1 by 55-98% on real files). "
    "poisson-gamma: Bethlehem-Keller-Pannekoek superpopulation model fitted with full "
    "posterior on the counts of counts. negbin: Benedetti-Franconi with uncertain "
    "inclusion probabilities learnt from the spread of the weights. Posterior models "
    "report 90% intervals and sampling diagnostics.",
)
@click.option(
    "--classes", type=int, default=30, show_default=True,
    help="latent-class: largest number of latent classes, 2 to 1000 (a truncated Dirichlet "
    "process decides how many are used; the output says how many the draws occupy, and warns "
    "where all are, i.e. the truncation binds: then compare a run with twice as many).",
)
@click.option(
    "--structural-zeros",
    metavar="none|auto|RULES.json",
    default="none",
    show_default=True,
    help="latent-class: key combinations that cannot occur in the population. 'auto' "
    "forbids those the data show to be impossible (a level of one key that only ever "
    "occurs with one level of another, e.g. children with occupation 'not applicable'; "
    "unconfirmed). RULES.json: a file holding a list of confirmed rules, each forbidding "
    "the cells whose level on every key it names is among the levels given, or, with "
    "{\"not\": [...]}, any level but those, e.g. [{\"age\": [\"1\"], \"occupation\": "
    "{\"not\": [\"X\"]}}] (levels as the data write them). The rules used are listed in "
    "summary.json.",
)
@click.option(
    "--overdispersion",
    type=click.Choice(["cv", "none"]),
    default="cv",
    show_default=True,
    help="latent-class: cv lets the cells clump around the mixture (gamma overdispersion), "
    "by an amount learnt by predicting, from a quarter or an eighth of the sample (halves "
    "when it is over a quarter of the population or under 100 records), which of "
    "its uniques the rest of the sample lacks; on sparse keys this removes most of the "
    "mixture's overstatement of the risk (README, Accuracy). none: Poisson cells.",
)
@click.option(
    "--kappa-prior",
    default="half-cauchy:1",
    show_default=True,
    help="latent-class with --overdispersion cv: prior of the overdispersion kappa that the "
    "cross-validation reweights. half-cauchy[:A] on kappa^-1/2; log-uniform; or "
    "log-normal:M:S (log kappa ~ Normal(M, S)), e.g. a kappa calibrated on a census of the "
    "same population (benchmarks/README.md, 'A kappa learnt across designs?').",
)
@click.option(
    "--profile-prior",
    type=click.Choice(["learn", "cv", "span", "inverse"]),
    default="learn",
    show_default=True,
    help="latent-class: prior of the classes' distributions over each key's levels. learn: "
    "keys of 20 levels or more (age in years, country of birth) are centred on their sample "
    "distribution with a strength learnt from the data, so that a small class does not "
    "claim its members' rare levels; cv (needs --overdispersion cv): as learn, but where "
    "the cross-validation finds the mixture too smooth that strength is raised until its "
    "held-out uniques are predicted (measured worse than learn on dense samples: "
    "benchmarks/README.md; for comparison); span (needs --overdispersion cv): the strength spread "
    "between the learnt one and cv's, which the sample cannot tell apart, and the learnt "
    "one where no larger strength reaches the held-out uniques (better on Adult 6 keys "
    "at 10%, worse on a fresh key set: benchmarks/README.md; an option); inverse: 1/L per "
    "level on every key (the default before; it understates the risk on keys with many "
    "rare levels).",
)
@click.option(
    "--chain-start",
    type=click.Choice(["em", "bootstrap"]),
    default="em",
    show_default=True,
    help="latent-class: where each Gibbs chain starts. em: the sample's best EM fit; "
    "bootstrap: the EM fit of a bootstrap resample of the records, one per chain, so that "
    "chains that do not mix between the mixture's modes still carry the spread between "
    "them: with 4 chains or more the mixture's share of the intervals matches its errors "
    "in the model's own world; with the cross-validated kappa, whose range carries most of "
    "the width, the intervals change little (benchmarks/README.md, 'Where the chains "
    "start').",
)
@click.option(
    "--cluster-correction",
    type=click.Choice(["none", "cv"]),
    default="none",
    show_default=True,
    help="latent-class, household samples (needs --household): cv removes the household "
    "mates' share of each sample unique's rate, measured by fitting the mixture without the "
    "unique's household and without the unique alone. It fits populations whose households "
    "are independent of each other and overstates the risk where similar households cluster "
    "(benchmarks/README.md, 'Household samples'); none: the members count as independent "
    "records.",
)
@click.option(
    "--ppc", type=int, default=None,
    help="latent-class: posterior predictive check of the sample's counts of counts. At this "
    "many draws per chain a replicate sample is drawn from the fitted model, and the cells "
    "seen once, twice, ... five times are compared with the sample's (summary.json's "
    "predictive_check; 'p' is the share of replicates with at least as many; p near 1 for "
    "cells seen 3+ times comes even where the model holds). 0: no check. "
    "[default: 50, fewer on large files: at most 2 x 10^7 replicated records in all, a "
    "tenth of the fit's time at 10^6 records]",
)
@click.option(
    "--draws", type=int, default=None,
    help="Posterior models: draws kept per chain [default: 500 for latent-class, 1000 "
    "for the NUTS models].",
)
@click.option(
    "--chains", type=int, default=None,
    help="Posterior models: independent chains, needed for the r_hat check [default: 4].",
)
@click.option(
    "--tune", type=int, default=None,
    help="Posterior models: tuning (warm-up, burn-in) steps per chain, discarded "
    "[default: 2000 for latent-class, whose chains start at EM fits and drift for a "
    "thousand sweeps or more; 1000 for NUTS].",
)
@click.option(
    "--cores", type=int, default=None,
    help=CORES_HELP,
)
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Random seed (posterior models, and the closed form's predictive "
              "intervals), a whole number >= 0; without it one is drawn and stamped in "
              "summary.json's settings.")
@click.option(
    "--fit-method",
    type=click.Choice(["nuts", "nutpie", "advi", "map", "gibbs"]),
    default=None,
    help="Posterior models: NUTS (PyMC; the default for poisson-gamma and negbin), nutpie "
    "(optional extra), ADVI, or MAP with a Laplace approximation (fast, approximate). "
    "latent-class uses its own Gibbs sampler (gibbs).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Posterior models: fail (exit 2) instead of warning when r_hat, ESS or "
    "divergences show the sampler did not converge.",
)
@closed_form_method_option("closed-form only: " + CLOSED_FORM_METHOD_HELP)
@click.option(
    "--missing",
    type=click.Choice(["wildcard", "category", "drop"]),
    default="wildcard",
    show_default=True,
    help="Missing key values: wildcard matches every level (sdcMicro), category makes "
    "'missing' a level of its own, drop leaves those records out (reported; with weights "
    "the kept records stand for them, within each --strata stratum).",
)
@click.option(
    "--alpha",
    type=float,
    default=1.0,
    show_default=True,
    help="With --missing wildcard: how much a match through a missing value counts (0-1).",
)
@click.option("--sampling-fraction", type=float, help="Sampling fraction n/N when no --weight.")
@click.option(
    "--allow-weights-below-one",
    is_flag=True,
    help="Accept weights below 1 (otherwise an error: a cell cannot be smaller in the "
    "population than in the sample).",
)
@click.option(
    "--max-levels",
    type=int,
    default=None,
    help="Largest number of levels accepted for one key (guards against a continuous "
    "variable passed as a key). [default: 1000]",
)
@click.option("--na-values", metavar="CODES", default=None, help=NA_VALUES_HELP)
@click.option("--encoding", metavar="ENC", default=None, help=ENCODING_HELP)
@click.option(
    "--threshold",
    type=float,
    default=None,
    help="Also count records whose risk exceeds this value (e.g. 0.1).",
)
@click.option(
    "--max-global-risk",
    type=float,
    default=None,
    metavar="RATE",
    help="A target re-identification rate, 0 < RATE < 1 (e.g. 0.01): also give sdcMicro's "
    "global threshold for it (measure_risk's global_threshold, mu-Argus's individual-risk "
    "route), the record risk above which records are to be protected (e.g. with sdcbayes "
    "protect --suppress-risk) so that the rate falls below RATE when each keeps a risk of "
    "the threshold. On the closed form's individual risk, or the posterior models' "
    "posterior mean record risk (summary.json's global_threshold_risk).",
)
@click.option(
    "--target-accept",
    type=click.FloatRange(0.5, 1.0, min_open=True, max_open=True),
    default=0.9,
    show_default=True,
    help="Posterior models (NUTS): target acceptance rate of the sampler; raise it towards "
    "0.99 when divergent transitions are reported (smaller, slower steps).",
)
@click.option(
    "--out",
    # A file here is refused by check_out_dir, with the fix in the message.
    type=click.Path(path_type=Path),
    default=Path("sdcbayes-output"),
    show_default=True,
    help="Output folder: summary.json, records.csv, report.html, and posterior.nc for the "
    "posterior models. An earlier assess output there is replaced (files of your own in "
    "it are kept); a folder holding another command's output or other files is refused.",
)
@click.option(
    "--posterior/--no-posterior", "write_posterior", default=True, show_default=True,
    help="Posterior models: also write posterior.nc, the draws of every cell (2 x chains "
    "x draws x cells x 8 bytes for latent-class: 1 GB for 10^6 records in 30,000 cells).",
)
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
def assess(
    data: Path | None,
    keys: str | None,
    weight: str | None,
    household: str | None,
    strata: str | None,
    model: str,
    method: str,
    missing: str,
    alpha: float,
    sampling_fraction: float | None,
    allow_weights_below_one: bool,
    max_levels: int | None,
    threshold: float | None,
    out: Path,
    quiet: bool,
    as_json: bool,
    write_posterior: bool = True,
    max_global_risk: float | None = None,
    draws: int | None = None,
    chains: int | None = None,
    tune: int | None = None,
    seed: int | None = None,
    cores: int | None = None,
    fit_method: str | None = None,
    classes: int = 30,
    structural_zeros: str = "none",
    overdispersion: str = "cv",
    kappa_prior: str = "half-cauchy:1",
    profile_prior: str = "learn",
    chain_start: str = "em",
    cluster_correction: str = "none",
    ppc: int | None = None,
    strict: bool = False,
    target_accept: float = 0.9,
    na_values: str | None = None,
    sensitive: str | None = None,
    l_diversity_c: float | None = None,
    encoding: str | None = None,
) -> None:
    """Assess disclosure risk per record and for the whole file.

    DATA is a CSV (.csv, .csv.gz, .tsv), Parquet (.parquet, .pq), SPSS (.sav, .zsav,
    .por), Stata (.dta) or SAS (.sas7bdat, .xpt) file.
    With no DATA, the embedded demo sample is used (its true population
    frequencies are known, so the true tau1 and tau2 are printed beside the
    estimates).

    On screen, "records above benchmark" counts sdcMicro's benchmark rule: records
    whose risk is above 0.1 and above the median risk plus twice the median absolute
    deviation (MAD). Posterior models print [90% intervals]: "predictive" ones take in
    both the model's parameter uncertainty and the randomness of the unknown population
    counts; those marked "parameter uncertainty only" leave the latter out (they are
    computed from each record's risk given the parameters), so they are narrower and a
    posterior mean can lie just outside them. The closed form's [90% intervals] are
    predictive given the plug-in p: the unknown population counts drawn given p = f/F̂,
    with no parameter uncertainty (compare's closed-form row, the same numbers for the
    same --seed).
    """
    from sdcbayes.microdata import (
        require_one_cell_per_record,
        require_population_beyond_sample,
    )

    # Options first (cheap), then the file.
    out_files = ["summary.json", "records.csv", "report.html"]  # and posterior.nc, below
    may_write = ["posterior.nc"] if model != "closed-form" and write_posterior else []
    rules_file = structural_zeros_file(structural_zeros)
    check_out_dir(out, writes=[*out_files, *may_write],
                  inputs={"DATA": data, "--structural-zeros": rules_file}, command="assess")
    na_codes = parse_na_values(na_values)
    codec = parse_encoding(encoding, data)
    if na_codes is not None and data is None:
        raise InputError("--na-values declares missing-value codes of a data file; give the "
                         "file (DATA), or leave out --na-values for the demo")
    if not 0.0 <= alpha <= 1.0:
        raise InputError(f"--alpha must lie in [0, 1]; got {alpha}")
    if threshold is not None and not 0.0 < threshold < 1.0:
        raise InputError(f"--threshold must lie strictly between 0 and 1; got {threshold}")
    # the bounds of risk.measures.check_max_global_risk, worded for the option
    if max_global_risk is not None and not 0.0 < max_global_risk < 1.0:
        raise InputError(f"--max-global-risk must lie strictly between 0 and 1 (a rate: 0.01 "
                         f"for 1%); got {max_global_risk}")
    sensitive_names, ldiv_c = check_sensitive_options(sensitive, l_diversity_c)
    if model != "closed-form":
        # per-model defaults, the Python API's (Gibbs sweeps are cheap and start at EM
        # fits; NUTS needs warm-up)
        from sdcbayes.risk.posterior_assess import sampler_settings

        used = sampler_settings(model, draws, chains, tune)
        draws, chains, tune = used["draws"], used["chains"], used["tune"]
        checks = (("--draws", draws, 1), ("--chains", chains, 1), ("--tune", tune, 0),
                  ("--cores", 1 if cores is None else cores, 1))
        for name, value, low in checks:
            if value < low:
                raise InputError(f"{name} must be at least {low}; got {value}")
        if fit_method is None:
            fit_method = "gibbs" if model == "latent-class" else "nuts"
        if (model == "latent-class") != (fit_method == "gibbs"):
            raise InputError(
                f"--fit-method {fit_method} does not apply to --model {model}: latent-class is "
                "fitted with its Gibbs sampler (gibbs), the other models with nuts, nutpie, "
                "advi or map; leave --fit-method out to get each model's own sampler"
            )
        if model == "latent-class" and classes < 2:
            raise InputError(
                f"--classes must be at least 2 (the largest number of latent classes; one "
                f"class is the independence model of the keys); got {classes}: leave it out "
                "for the default 30")
        if model == "latent-class":
            from sdcbayes.models.latent_class import MAX_CLASSES

            if classes > MAX_CLASSES:
                # before any (cells x classes) array: 1e8 classes ran out of memory
                raise InputError(
                    f"--classes must be at most {MAX_CLASSES} (the truncated Dirichlet process "
                    f"decides how many classes are used, and {MAX_CLASSES} already matches the "
                    f"untruncated one; each class costs memory and time on every cell); got "
                    f"{classes}: leave it out for the default 30, or double it where the "
                    "output warns that all classes are occupied")
        if ppc is not None and ppc < 0:
            raise InputError(f"--ppc must be at least 0 (0: no predictive check); got {ppc}")
    kappa_prior_spec = None
    if kappa_prior != "half-cauchy:1":
        if model != "latent-class" or overdispersion != "cv":
            raise InputError("--kappa-prior is the prior of the cross-validated overdispersion: "
                             "it needs --model latent-class and --overdispersion cv")
        from sdcbayes.models.latent_class import parse_kappa_prior

        kappa_prior_spec = parse_kappa_prior(kappa_prior)

    if chain_start != "em" and model != "latent-class":
        raise InputError(f"--chain-start {chain_start} sets where the latent-class model's "
                         "Gibbs chains start: it needs --model latent-class")
    if profile_prior in ("cv", "span") and (model != "latent-class"
                                             or overdispersion != "cv"):
        raise InputError(f"--profile-prior {profile_prior} is chosen by the overdispersion's "
                         "cross-validation: it needs --model latent-class and "
                         "--overdispersion cv")

    ignored = check_applicable(
        model=model, fit_method=fit_method, method=method, missing=missing,
        profile_prior=profile_prior,
    )
    # the rules' form now (a typo costs no reading), their keys and levels once read
    rules = (None if rules_file is None else read_structural_zero_rules(
        rules_file, "--structural-zeros", none="--structural-zeros none"))
    frame, key_list, roles, truth, source = load_input(
        data, keys, weight=weight, household=household, strata=strata, quiet=quiet or as_json,
        sampling_fraction=sampling_fraction, na_values=na_codes, household_truth=True,
        sensitive=sensitive_names, encoding=codec,
    )
    weight, household, strata = roles["weight"], roles["household"], roles["strata"]
    sensitive_cols = roles.get("sensitive")
    if cluster_correction != "none" and (model != "latent-class" or household is None):
        raise InputError(
            "--cluster-correction cv corrects the latent-class model for household mates: it "
            "needs --model latent-class and --household (the household id column)")

    md_kwargs: dict[str, Any] = dict(
        keys=key_list,
        weight=weight,
        household=household,
        strata=strata,
        missing=missing,
        alpha=alpha,
        sampling_fraction=sampling_fraction,
        allow_weights_below_one=allow_weights_below_one,
    )
    if max_levels is not None:
        md_kwargs["max_levels"] = max_levels
    md, data_notes = microdata_with_notes(frame, **md_kwargs)
    _ = md.cells  # built here, so that a large file's status line above is followed by the work
    if rules is not None:
        rules = check_structural_zero_rules(
            rules, md, f"--structural-zeros {rules_file}",
            named=dict(zip(split_names(keys) or [], key_list, strict=False)))
    if model != "closed-form" and data is not None and weight is None and sampling_fraction is None:
        # the demo knows its population; a file needs weights or n/N (checked before any fitting)
        raise InputError(
            f"--model {model} estimates population frequencies, so it needs the population "
            "size: give --weight (sampling weights) or --sampling-fraction n/N; or use "
            "--model closed-form, which without them treats the file as the whole population"
        )
    if model in ("latent-class", "poisson-gamma", "negbin"):
        # checked before "fitting ..." is printed: one line, nothing started
        require_one_cell_per_record(
            md, model, instead="--model closed-form for sdcMicro's wildcard matching")
    # weights summing to n or less (--allow-weights-below-one): no population to extrapolate
    require_population_beyond_sample(
        md, model, instead="give --sampling-fraction instead of --weight, or use --model "
        "closed-form")
    if model == "negbin" and md.weights is not None:
        # negbin learns sigma from the weights' spread within cells: checked before "fitting
        # ...", with the fix as an option of this command (a fixed sigma is none)
        from sdcbayes.models.negbin import sigma_unlearnable, within_cell_spread

        problem = sigma_unlearnable(*within_cell_spread(md.weights, md.record_cell))
        if problem:
            raise InputError(
                f"--model negbin learns the spread of the weights within cells, but {problem}: "
                "use --model closed-form (Benedetti-Franconi's plug-in, which negbin reduces "
                "to without that spread)"
            )
    if model == "latent-class" and overdispersion == "cv":
        from sdcbayes.models.latent_class import CV_MIN_RECORDS
        from sdcbayes.risk.posterior_assess import population_is_sample

        # the cross-validation splits the sample into parts (checked before "fitting ..."),
        # except in a census, where kappa does not enter the risk and is not cross-validated
        if md.n_records < CV_MIN_RECORDS and not population_is_sample(md, model):
            raise InputError(
                f"--overdispersion cv needs at least {CV_MIN_RECORDS} records to split the "
                f"sample into parts; got {md.n_records}: use --overdispersion none (Poisson "
                "cells) or a larger sample"
            )

    # once per cell, from the records' key cells: no model enters it, no draw repeats it
    ldiv = (None if sensitive_cols is None
            else l_diversity_outputs(md, frame, sensitive_cols, ldiv_c))
    notes: list[str] = [*ignored, *data_notes]
    if missing == "wildcard":
        # a key no record has: under the wildcard it matches every level, so the cells are
        # those of the other keys (legitimate, but likely a wrong column or --na-values)
        for k in key_list:
            if bool(frame[k].isna().all()):
                notes.append(f"key {k!r} is missing in every record; it matches everything "
                              "and adds nothing to the key")
    for note in notes:  # on stderr, like the fits' warnings, also under --quiet and --json
        click.echo(f"sdcbayes: warning: {note}", err=True)
    if model == "latent-class" and ppc is None:
        from sdcbayes.risk.posterior_assess import default_ppc

        ppc = default_ppc(md.n_records, chains)
    if model == "closed-form":
        import re
        import warnings

        from sdcbayes.risk.assess import assess_closed_form

        with warnings.catch_warnings():
            # its caveat of a file without weights (a MicrodataWarning) is also in
            # result.summary["warnings"], printed just below: not a raw Python warning too
            warnings.filterwarnings("ignore", re.escape(CLOSED_FORM_NO_WEIGHTS_NOTE_PY))
            # its predictive intervals given the plug-in (compare's closed-form row's,
            # the same numbers for the same --seed); a seed is drawn and stamped without one
            result = assess_closed_form(md, method=method, threshold=threshold,
                                        max_global_risk=max_global_risk, interval=True,
                                        random_seed=seed)
        for note in result.summary.get("warnings", []):  # as the fits' warnings
            click.echo(f"sdcbayes: warning: {cli_wording(note)}", err=True)
    else:
        result = _fit_posterior(
            md, model, draws=draws, chains=chains, tune=tune, seed=seed,
            fit_method=fit_method, threshold=threshold, strict=strict, quiet=quiet or as_json,
            model_options=(
                {"n_classes": classes,
                 "structural_zeros": rules if rules is not None else _zeros(structural_zeros),
                 "overdispersion": None if overdispersion == "none" else overdispersion,
                 **({"kappa_prior": kappa_prior_spec} if kappa_prior_spec is not None else {}),
                 **({"priors": {"phi": {"a": "inverse"}}} if profile_prior == "inverse"
                    else {}),
                 **({"profile_mass": profile_prior} if profile_prior in ("cv", "span")
                    else {}),
                 **({"cluster_correction": cluster_correction}
                    if cluster_correction != "none" else {}),
                 **({"init": chain_start} if chain_start != "em" else {}),
                 **({"ppc": min(ppc, draws)} if ppc else {})}
                if model == "latent-class" else {}
            ) | ({"max_global_risk": max_global_risk} if max_global_risk is not None else {}),
            target_accept=target_accept, cores=cores,
        )
    # --max-global-risk: the library's entries, every model; `command` first, as every
    # other command's summary.json has it (audit UX F10)
    summary = {"command": "assess", **result.summary}
    summary["data"] = source
    if md.strata is not None:
        summary["by_stratum"] = by_stratum(md, result.cells)
    if notes:
        summary["warnings"] = [*summary.get("warnings", []), *notes]
    from sdcbayes.report import benchmark_caveat

    # the caveat the terminal and report.html print, for readers of summary.json too
    # (null when the benchmark count can be read as it stands)
    summary["benchmark_caveat"] = benchmark_caveat(summary, command_line=True)
    if truth is not None:
        summary["truth"] = truth
    # the file's fingerprint (and --na-values) beside the result's own stamp (a copy: the
    # result keeps its own)
    summary["provenance"] = {**result.provenance,
                             "input": input_record(data, na_codes, codec)}
    if rules_file is not None:
        # the rules themselves are stamped by the fit (settings' structural_zero_rules)
        summary["provenance"]["settings"] = {**summary["provenance"].get("settings", {}),
                                             "structural_zeros_file": str(rules_file)}
    if missing != "wildcard" and "alpha" in (result.provenance.get("data") or {}):
        # alpha weighs wildcard matches: under category or drop there are none, so it is
        # not stamped as if it had been used
        summary["provenance"]["data"] = {**result.provenance["data"], "alpha": None}
    records = result.records
    if ldiv is not None:
        ldiv_records, summary["l_diversity"] = ldiv
        records = records.assign(**ldiv_records)  # a copy: result.records stays the model's
        # the sensitive variables beside the keys, the constant beside the other settings
        prov = summary["provenance"]
        prov["data"] = {**(prov.get("data") or {}), "sensitive": list(sensitive_cols)}
        prov["settings"] = {**(prov.get("settings") or {}), "l_diversity_c": ldiv_c}
    wrote_posterior = write_posterior and getattr(result, "idata", None) is not None
    summary["output_files"] = [*out_files, *(["posterior.nc"] if wrote_posterior else [])]
    cli_worded_summary(summary)

    from sdcbayes.report import assessment_report

    html = assessment_report(result, md, summary, command_line=True)
    writers = {
        "summary.json": lambda p: write_json(p, summary),
        "records.csv": lambda p: write_csv(p, records),
        "report.html": lambda p: p.write_text(html, encoding="utf-8"),
    }
    idata = getattr(result, "idata", None) if write_posterior else None
    if idata is not None:
        from sdcbayes.inference.posterior import save_posterior

        writers["posterior.nc"] = lambda p: save_posterior(idata, p)
    write_output_folder(out, writers)
    if as_json:
        click.echo(json.dumps(nan_to_none(summary), indent=2, default=json_default))
    elif not quiet:
        _print_summary(summary, out, posterior=idata is not None)


def microdata_with_notes(frame, **kwargs):
    """``Microdata(frame, **kwargs)`` and its warnings as one-line command notes.

    A :class:`sdcbayes.microdata.MicrodataWarning` (e.g. a stratum whose records
    ``--missing drop`` all left out, its weight spread over the kept records) is caught
    here, so that the command prints it as one ``sdcbayes: warning:`` line in its own
    words and keeps it in ``summary.json``'s ``warnings``; other warnings pass on.
    """
    import warnings

    from sdcbayes.microdata import Microdata, MicrodataWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MicrodataWarning)
        md = Microdata(frame, **kwargs)
    notes = []
    for w in caught:
        if issubclass(w.category, MicrodataWarning):
            notes.append(cli_wording(" ".join(str(w.message).split())))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return md, notes


def by_stratum(md, cells: Any) -> list[dict[str, Any]]:
    """Records, sample uniques and expected re-identifications per stratum.

    Per (cell, stratum) pair of the cell table (``md.cells.by_stratum``), not per
    record: a stratum's expected re-identifications are the sum over its pairs of
    the pair's records times the cell's risk (``cells["risk"]``; posterior means
    for the posterior models, and a sum of means is the mean of the sum). The key
    cells span the strata, so a record's risk is its cell's, whatever its stratum;
    dropped records count nowhere.
    """
    bs = md.cells.by_stratum
    cell = bs["cell"].to_numpy()
    f = bs["fk"].to_numpy()
    risk = cells["risk"].to_numpy(dtype=float)[cell]
    unique = md.cells.fk[cell] == 1
    sums = (bs.assign(er=f * risk, uniques=f * unique)
            .groupby("stratum", sort=False, observed=False)[["fk", "uniques", "er"]].sum()
            .reindex(md.strata_levels, fill_value=0))
    return [{"stratum": label.item() if hasattr(label, "item") else label,
             "n_records": int(row.fk), "n_sample_uniques": int(row.uniques),
             "expected_reidentifications": float(row.er)}
            for label, row in zip(sums.index, sums.itertuples(index=False), strict=True)]


def given(name: str) -> bool:
    """Whether the option with Python name ``name`` was given on the command line.

    False outside a click command (the callback called directly) and for defaults.
    """
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


#: assess options that only the latent-class model reads (each changes what is fitted).
LATENT_CLASS_OPTIONS = {"classes": "--classes", "structural_zeros": "--structural-zeros",
                        "overdispersion": "--overdispersion", "profile_prior": "--profile-prior",
                        "ppc": "--ppc"}
#: assess options of the posterior samplers: the closed form has nothing to sample, and
#: scripts pass them routinely, so a closed-form run warns rather than refuses (all but
#: --seed, which also drives the closed form's predictive intervals:
#: CLOSED_FORM_USES).
SAMPLER_OPTIONS = {"draws": "--draws", "chains": "--chains", "tune": "--tune",
                   "seed": "--seed", "cores": "--cores", "strict": "--strict",
                   "target_accept": "--target-accept",
                   "write_posterior": "--posterior/--no-posterior"}
#: Of SAMPLER_OPTIONS, those the closed form uses: --seed draws its predictive intervals.
CLOSED_FORM_USES = frozenset({"seed"})


def check_applicable(*, model: str, fit_method: str | None, method: str, missing: str,
                     profile_prior: str) -> list[str]:
    """Refuse options that would change the meaning of a run the model does not do.

    Such an option given with a model that ignores it would be stamped in the
    provenance's command line as if it had taken effect. Options that change what
    is computed are refused (:class:`InputError`); harmless sampler settings given to
    the closed form, or NUTS' ``--target-accept`` given to another sampler, are
    returned as warnings (stderr and summary.json's warnings).
    """
    if given("alpha") and missing != "wildcard":
        raise InputError(f"--alpha weighs wildcard matches, but --missing {missing} makes "
                         "none: leave out --alpha or use --missing wildcard")
    if model != "latent-class":
        for name, option in LATENT_CLASS_OPTIONS.items():
            if given(name) and not (name == "profile_prior" and profile_prior in ("cv", "span")):
                raise InputError(f"{option} is an option of the latent-class model: leave it "
                                 f"out with --model {model}, or use --model latent-class")
    warnings: list[str] = []
    if model != "closed-form" and given("method"):
        if method != "exact":
            raise InputError(f"--method {method} is the closed form's approximation: use "
                             f"--model closed-form, or leave out --method with --model {model}")
        warnings.append(f"--method chooses the closed form's formula; --model {model} "
                        "ignores it")
    if model == "closed-form":
        if given("fit_method"):
            raise InputError(f"--fit-method {fit_method} chooses a posterior model's sampler, "
                             "but --model closed-form fits nothing: leave out --fit-method or "
                             "choose a posterior --model")
        unused = [option for name, option in SAMPLER_OPTIONS.items()
                  if given(name) and name not in CLOSED_FORM_USES]
        if unused:
            warnings.append(f"{', '.join(unused)} set the posterior models' sampler; --model "
                            "closed-form samples nothing and ignores them")
    elif given("target_accept") and fit_method not in ("nuts", "nutpie"):
        warnings.append(f"--target-accept is NUTS' setting; --fit-method {fit_method} ignores it")
    if model != "closed-form" and fit_method in ("map", "advi") and given("tune"):
        warnings.append(f"--tune sets NUTS' warm-up; --fit-method {fit_method} has none and "
                        "ignores it")
    return warnings


def load_input(data: Path | None, keys: str | None, *, quiet: bool,
               sampling_fraction: float | None = None, na_values: list[str] | None = None,
               household_truth: bool = False, sensitive: list[str] | None = None,
               encoding: str | None = None, **roles: str | None):
    """The frame a command works on: DATA read and its variables resolved, or the demo.

    Of DATA only the columns of ``keys`` and ``roles`` are read (:func:`read_variables`).
    Returns ``(frame, keys, roles, truth, source)``: ``roles`` maps each of the given
    role options (weight, household, strata) to a column; ``truth`` holds the demo's
    true tau1, tau2 and expected re-identifications (None for a user's file, and for
    the demo on other keys than its own: the truth is that of the demo's keys). The
    demo's weight stands in for ``--weight`` unless ``sampling_fraction`` is given.
    ``na_values``: the codes of ``--na-values`` (:func:`read_data`); ``encoding``: the
    codec of ``--encoding`` (:func:`parse_encoding`).
    ``household_truth``: also the demo's true household expected re-identifications
    (``assess`` and ``compare``, which report them), when its household column is the
    one used.
    ``sensitive`` (``assess --sensitive``): columns also read, resolved and checked
    (:func:`check_sensitive_roles`) before any record is; then ``roles["sensitive"]``
    is the list of their column names.
    """
    key_list = split_names(keys)
    if data is None:
        from sdcbayes.datasets import load_demo

        demo = load_demo()
        demo_roles = {"weight": None if sampling_fraction is not None else demo.weight,
                      "household": demo.household, "strata": demo.strata}
        resolved = {role: value or demo_roles[role] for role, value in roles.items()}
        truth = {
            "tau1": demo.truth.tau1,
            "tau2": demo.truth.tau2,
            "expected_reidentifications": demo.truth.expected_reidentifications,
        } if key_list is None or set(key_list) == set(demo.keys) else None
        her = demo.truth.household_expected_reidentifications
        if (truth is not None and household_truth and her is not None
                and resolved.get("household") == demo.household):
            # the truth of the demo's own households (another column has none)
            truth["household_expected_reidentifications"] = her
            hh_once = demo.truth.household_expected_reidentified_households
            if hh_once is not None:
                truth["household_expected_reidentified_households"] = hh_once
        source = "embedded demo sample (sdcbayes.datasets.load_demo)"
        if sensitive is not None:
            from sdcbayes.microdata import resolve_columns

            cols = resolve_columns(demo.sample, sensitive, option="--sensitive")
            check_sensitive_roles(cols, key_list or list(demo.keys), resolved)
            resolved["sensitive"] = cols  # type: ignore[assignment]
        return demo.sample, key_list or list(demo.keys), resolved, truth, source
    if not key_list:
        raise InputError(
            "--keys is required with a data file: name the key variables, e.g. "
            "--keys age,sex,region"
        )
    # only the columns the options name (a wide file costs memory for each one read)
    frame, key_list, resolved = read_variables(data, key_list, quiet=quiet,
                                               na_values=na_values, sensitive=sensitive,
                                               encoding=encoding, **roles)
    return frame, key_list, resolved, None, str(data)


#: The l-diversity measures of ``assess --sensitive``: records.csv's column suffix and
#: :func:`sdcbayes.risk.measures.l_diversity`'s column of each.
L_DIVERSITY_MEASURES = {"distinct": "Distinct_Ldiversity", "entropy": "Entropy_Ldiversity",
                        "recursive": "Recursive_Ldiversity"}
#: The two measures over several sensitive variables (records.csv's columns).
L_DIVERSITY_MULTI = {"multi_entropy_l": "MultiEntropy_Ldiversity",
                     "multi_recursive_l": "MultiRecursive_Ldiversity"}


def check_sensitive_options(sensitive: str | None,
                            c: float | None) -> tuple[list[str] | None, float]:
    """``--sensitive``'s names and ``--l-diversity-c``'s constant, checked before any work.

    Returns ``(names, c)``: the names as written (None without ``--sensitive``) and c
    (2, sdcMicro's default ``l_recurs_c``, when not given). Refuses an empty
    ``--sensitive``, a name given twice, ``--l-diversity-c`` without ``--sensitive``
    (stamped, it would read as if it had taken effect) and a c that is not a finite
    number > 0 (the recursive measure compares the largest count with c times the
    smaller ones: seed 001, Section 3.2, after Machanavajjhala et al. 2007).
    """
    import math

    names = split_names(sensitive)
    if sensitive is not None and names is None:
        raise InputError("--sensitive names no column: give the sensitive variables, "
                         "comma-separated, e.g. --sensitive income,illness")
    if c is not None and names is None:
        raise InputError("--l-diversity-c is the constant of the recursive l-diversity of "
                         "--sensitive: give --sensitive VARS, or leave out --l-diversity-c")
    if names is not None:
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"--sensitive names {', '.join(repr(n) for n in twice)} more "
                             "than once: name each sensitive variable once")
    value = 2.0 if c is None else float(c)
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"--l-diversity-c must be a finite number > 0 (sdcMicro's "
                         f"l_recurs_c); got {c}: leave it out for the default 2")
    return names, value


def check_sensitive_roles(sensitive: list[str], keys: list[str],
                          roles: dict[str, str | None], *, records_csv: bool = True) -> None:
    """Refuse a ``--sensitive`` column that is a key, the weight or the household id.

    ``sensitive`` and ``keys`` are resolved column names, ``roles`` the resolved role
    options. A key is constant within its own cell (its l-diversity is 1 by
    construction; sdcMicro's ldiversity refuses it too); the weight and the household
    id are design variables, not attributes an intruder learns. The stratum is allowed:
    unless it is also a key, a cell can span several strata, and how many is a fact
    about the cell like any other attribute's. A column named twice (by its name and
    its label) is refused as in :func:`check_sensitive_options`. ``records_csv``
    (``assess``; ``protect`` writes no records.csv): also refuse a column named ``multi``
    among two or more, whose records.csv columns would clash with those over all of them.
    """
    twice = sorted({c for c in sensitive if sensitive.count(c) > 1})
    if twice:
        raise InputError(f"--sensitive names column {', '.join(repr(c) for c in twice)} more "
                         "than once (by its name and its label?): name each variable once")
    as_key = [c for c in sensitive if c in keys]
    if as_key:
        raise InputError(
            f"--sensitive {', '.join(repr(c) for c in as_key)} "
            f"{'is one of' if len(as_key) == 1 else 'are among'} --keys: l-diversity "
            "counts a sensitive variable's values within the key combinations, where a key "
            "has one value; leave it out of --sensitive or of --keys")
    for role in ("weight", "household"):
        col = roles.get(role)
        if col is not None and col in sensitive:
            raise InputError(
                f"--sensitive {col!r} is the --{role} column, a design variable, not an "
                f"attribute of the person: leave it out of --sensitive")
    multi = [f"{c}_{m}_l" for c in sensitive for m in L_DIVERSITY_MEASURES]
    if records_csv and len(sensitive) > 1:
        clash = sorted(set(multi) & set(L_DIVERSITY_MULTI))
        if clash:
            raise InputError(
                f"--sensitive column(s) named 'multi' would give records.csv two columns "
                f"{clash[0]!r} (its own and the one over all sensitive variables): rename "
                "the column in the file")


def _stats(x) -> dict[str, float]:
    """Minimum, quartiles, mean and maximum (R's summary(), quantile type 7 = NumPy's)."""
    import numpy as np

    if x.size == 0:
        return {k: None for k in ("min", "q25", "median", "mean", "q75", "max")}
    q = np.quantile(x, [0, 0.25, 0.5, 0.75, 1])
    return {"min": float(q[0]), "q25": float(q[1]), "median": float(q[2]),
            "mean": float(np.mean(x)), "q75": float(q[3]), "max": float(q[4])}


def l_diversity_outputs(md, frame, sensitive: list[str], c: float):
    """records.csv's l-diversity columns and summary.json's ``l_diversity``.

    :func:`sdcbayes.risk.measures.l_diversity` once per cell of ``md.record_cell`` (the
    exact key patterns: a missing key value equals only a missing one, as sdcMicro's
    ``ldiversity`` groups records, ``src/Measure_Risk.h``; dropped records, -1, have
    no cell and get NA), mapped to the records. The summary counts, per sensitive
    variable, the cells (and their records) whose records all share one value (distinct
    l = 1: attribute disclosure to whoever finds the cell; seed 001, Section 3.2, after
    Machanavajjhala et al. 2007) and those with distinct l < 2 (also the cells
    where the variable is missing in every record, distinct l = 0), with the
    distribution of each measure over the records (sdcMicro prints ``summary()`` of the
    distinct l over records).

    Returns
    -------
    (dict of column -> array, dict)
        The records' columns (``<var>_distinct_l``, ``<var>_entropy_l``,
        ``<var>_recursive_l``; ``multi_entropy_l`` and ``multi_recursive_l`` with two
        variables or more) and summary.json's ``l_diversity``.
    """
    import numpy as np

    from sdcbayes.risk.assess import _counts_to_records, cells_to_records
    from sdcbayes.risk.measures import l_diversity

    rc = md.record_cell
    n_cells = len(md.cells)
    ld = l_diversity(rc, frame[sensitive], c=c, n_cells=n_cells)
    kept = rc[rc >= 0]
    size = np.bincount(kept, minlength=n_cells)  # records per exact key pattern
    columns: dict[str, Any] = {}
    variables: dict[str, Any] = {}
    for var in sensitive:
        per_cell = {m: ld[f"{var}_{col}"].to_numpy() for m, col in L_DIVERSITY_MEASURES.items()}
        for m, v in per_cell.items():
            columns[f"{var}_{m}_l"] = (cells_to_records(v, rc) if m == "entropy"
                                       else _counts_to_records(v, rc))
        d = per_cell["distinct"]
        variables[var] = {
            "n_cells_distinct_1": int((d == 1).sum()),
            "n_records_distinct_1": int(size[d == 1].sum()),
            "n_cells_distinct_below_2": int((d < 2).sum()),
            "n_records_distinct_below_2": int(size[d < 2].sum()),
            **{m: _stats(v[kept]) for m, v in per_cell.items()},
        }
    out: dict[str, Any] = {
        "sensitive": list(sensitive),
        "c": c,
        "cells": ("the records' exact key patterns, a missing key value a level of its own "
                  "as sdcMicro's ldiversity groups records"
                  + ("; dropped records are in none" if md.n_dropped else "")),
        "n_records": int(kept.size),
        "n_cells": n_cells,
        "variables": variables,
    }
    if len(sensitive) > 1:
        multi = {}
        for col, name in L_DIVERSITY_MULTI.items():
            v = ld[name].to_numpy()
            columns[col] = (cells_to_records(v, rc) if "entropy" in col
                            else _counts_to_records(v, rc))
            multi[col.removeprefix("multi_").removesuffix("_l")] = _stats(v[kept])
        out["multi"] = multi
    return columns, out


def _l_diversity_rows(s: dict[str, Any],
                      after: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """The terminal's lines of ``summary["l_diversity"]``, one per sensitive variable.

    With ``after`` (``protect --sensitive``: the protected file's ``l_diversity`` block,
    ``s["l_diversity"]`` the input's) each line reads before -> after, in records.
    """
    rows = []
    later = (after or {}).get("variables") or {}
    for var, v in ((s.get("l_diversity") or {}).get("variables") or {}).items():
        none = v["n_records_distinct_below_2"] - v["n_records_distinct_1"]
        if after is None:
            text = (f"{v['n_records_distinct_1']:,} records in {v['n_cells_distinct_1']:,} "
                    "cells share one value (distinct l = 1)")
            if none:
                text += f"; {none:,} more in cells where it is missing throughout"
        else:
            a = later[var]
            none_a = a["n_records_distinct_below_2"] - a["n_records_distinct_1"]
            text = (f"{v['n_records_distinct_1']:,} -> {a['n_records_distinct_1']:,} records "
                    "in cells sharing one value (distinct l = 1)")
            if none or none_a:
                text += (f"; {none:,} -> {none_a:,} more in cells where it is missing "
                         "throughout")
        rows.append((f"l-diversity of {var}", text))
    return rows


def _print_summary(s: dict[str, Any], out: Path, posterior: bool = True) -> None:
    from sdcbayes.report import (
        APPROXIMATIONS,
        NOT_APPLICABLE_APPROXIMATION,
        global_threshold_row,
        percent,
    )

    truth = s.get("truth")

    def with_truth(name: str, interval_of: str = "") -> str:
        v = f"{s[name]:.2f}"
        interval = s.get(f"{name}_interval")
        if interval is not None:
            v += f"  [{interval[0]:.2f}, {interval[1]:.2f}]{interval_of}"
        if truth is not None and name in truth:
            v += f"   (true {truth[name]:.2f})"
        return v

    def count(name: str) -> str:
        # posterior models give a posterior mean (not a whole number) and an interval
        x = s[name]
        v = f"{int(x):,}" if float(x).is_integer() else f"{x:,.1f}"
        interval = s.get(f"{name}_interval")
        if interval is not None:
            # a count of records over their r_i(θ) per draw: over the parameters only,
            # not predictive (README, "*_interval")
            v += f"  [{interval[0]:,.0f}, {interval[1]:,.0f}] parameter uncertainty only"
        return v

    click.echo(f"sdcbayes {s['sdcbayes_version']} — model: {s['model']} [{s.get('method', '')}]")
    if any(f"{k}_interval" in s for k in ("tau1", "tau2")):
        if s["model"] == "closed-form":
            # the plug-in's: F_k drawn given p = f/F_hat (compare's closed-form row's)
            level = s.get("interval_level")
            pct = f"{100 * level:.0f}%" if isinstance(level, (int, float)) else "90%"
            click.echo(f"estimates are the closed form's with [{pct} intervals, "
                       f"{s.get('interval_kind', 'predictive given the plug-in p')}]")
        else:
            click.echo("estimates are posterior means with [90% intervals]")
    elif s.get("interval_note"):
        # a file taken as its own population: F_k = f_k, no interval to give
        click.echo(s["interval_note"])
    click.echo(f"data: {s['data']}")
    rows = [
        ("records", f"{s['n_records']:,}"),
        ("key combinations (cells)", f"{s['n_cells']:,}"),
        ("sample uniques", f"{s['n_sample_uniques']:,}"),
        ("expected re-identifications", with_truth("expected_reidentifications")),
        # report.html's format: 3 significant digits, never "0.00%" for a small rate
        ("  rate", percent(s["expected_reidentification_rate"])),
        ("tau1 (sample uniques unique in population)", with_truth("tau1")),
        ("tau2 (expected correct matches of uniques)", with_truth("tau2")),
        ("records above benchmark (r>0.1, >median+2MAD)", count("n_above_benchmark")),
    ]
    # most records are risky: median + 2 MAD sits above them, so the rule flags only
    # outliers, and a small count would read as a safe file (report.html says the same)
    caveat = s.get("benchmark_caveat")
    if caveat is not None:
        rows.append(("  note", caveat))
    if "n_above_threshold" in s:
        rows.append((f"records with risk > {s['risk_threshold']}", count("n_above_threshold")))
    if "global_threshold" in s:
        rows.append(global_threshold_row(s))
    if "household_expected_reidentifications" in s:
        # its interval is predictive as the ER's above where household_interval_kind says
        # so (per drawn population the realised household ER); a summary without the kind
        # (an earlier version's) or Poisson-gamma's normal route: over θ only, the
        # household risk given θ per draw; report.html says the same
        pred = str(s.get("household_interval_kind") or "").startswith("predictive")
        rows.append(("household expected re-identifications",
                     with_truth("household_expected_reidentifications",
                                " predictive" if pred else " parameter uncertainty only")))
        if "household_expected_reidentified_households_interval" in s:
            # a posterior model's: the same risks once per household, same interval kind
            rows.append(("  expected re-identified households",
                         with_truth("household_expected_reidentified_households",
                                    " predictive" if pred
                                    else " parameter uncertainty only")))
    od = s.get("overdispersion")
    if od:
        def k(x):
            return "inf" if x is None else f"{x:.3g}"

        lo, hi = od["kappa_interval"]
        rows.append(("cell overdispersion kappa (inf: none)",
                     f"{k(od['kappa_median'])}  [{k(lo)}, {k(hi)}]"))
    pm = s.get("profile_mass")
    if pm:
        # the mass of the many-level keys' profiles, learnt or chosen by the cross-validation
        rows.append(("profile mass, keys of >= 20 levels",
                     ("learnt; no larger mass reaches the held-out count"
                      if pm.get("reached") is False else "learnt") if pm["mass"] == "learn"
                     else f"learnt, spread up to {pm['mass']:.3g} (cross-validated)"
                     if pm.get("rule") == "cv-span"
                     else f"{pm['mass']:.3g} (cross-validated; learnt "
                          f"{pm['learnt_mass']:.3g})" if pm.get("learnt_mass") is not None
                     else f"{pm['mass']:.3g} (cross-validated)"))
    sz = ((s.get("provenance") or {}).get("settings") or {})
    if sz.get("structural_zeros"):
        # --structural-zeros auto: rules read off the sample, which the user has not confirmed
        rules = sz.get("structural_zero_rules") or []
        how = ("found in the sample, unconfirmed" if sz["structural_zeros"] == "auto"
               else "given")
        rows.append(("structural-zero rules", f"{len(rules)} ({how}; listed in summary.json)"))
    cc = s.get("cluster_correction")
    if cc:
        sizes = list(cc["factor_by_size"])
        rows.append((f"household mates' rate factor (sizes {'/'.join(sizes)}+)",
                     " / ".join(f"{v:.3g}" for v in cc["factor_by_size"].values())))
    for row in (s.get("predictive_check") or [])[:3]:
        # the fitted model's replicates of the sample's cells seen once, twice, 3 times
        lo, hi = row["interval"]
        times = {1: "once", 2: "twice"}.get(row["count"], f"{row['count']} times")
        rows.append((f"predictive check: cells seen {times}",
                     f"{row['observed']:,} observed, predicted {row['mean']:,.0f} "
                     f"[{lo:,.0f}, {hi:,.0f}], p = {row['p_value']:.2f}"))
    diag = s.get("diagnostics")
    if diag:
        def num(key, fmt, missing):
            # None where a diagnostic cannot be computed or does not apply
            v = diag.get(key)
            return missing if v is None else format(v, fmt)

        # why r_hat is missing: exact results (constant draws; diagnostics.note) or one
        # chain; a count of chains the summary does not give is not guessed
        why_no_r_hat = ("n/a (exact results)" if diag.get("note")
                        else "n/a (one chain)" if diag.get("chains") == 1 else "n/a")

        fit = ((s.get("provenance") or {}).get("settings") or {}).get("method")
        if fit in APPROXIMATIONS:
            # an approximation draws independently: no chains to compare, no sampler steps
            rows.append(("diagnostics", NOT_APPLICABLE_APPROXIMATION))
        else:
            rows.append(
                (
                    "diagnostics",
                    f"max r_hat {num('max_r_hat', '.3f', why_no_r_hat)}, "
                    f"min ESS {num('min_ess_bulk', '.0f', 'n/a')} bulk, "
                    f"{num('min_ess_tail', '.0f', 'n/a')} tail, "
                    f"divergences {num('divergences', '', 'n/a (Gibbs)')}",
                )
            )
        if diag.get("classes_used_mean") is not None:
            # the truncated Dirichlet process: all H classes occupied = the truncation binds
            rows.append(("latent classes occupied",
                         f"{diag['classes_used_mean']:.1f} of {diag['classes_truncation']} on "
                         f"average (all in {percent(diag['share_draws_all_classes_used'])} "
                         "of draws)"))
    rows.extend(_l_diversity_rows(s))
    echo_table(rows)
    extra = ", posterior.nc" if posterior and "diagnostics" in s else ""
    click.echo(f"written: {out}/summary.json, records.csv, report.html{extra}")


def _zeros(option: str):
    return None if option == "none" else option


def input_record(data: Path | None, na_values: list[str] | None,
                 encoding: str | None = None) -> dict[str, Any] | None:
    """summary.json's ``provenance.input``: the fingerprint, ``--na-values``, ``--encoding``.

    The file's fingerprint, and each option when given (``--encoding`` as its codec's
    canonical name, :func:`parse_encoding`).
    """
    from sdcbayes.provenance import file_fingerprint

    record = file_fingerprint(data)
    if record is not None and na_values is not None:
        record["na_values"] = list(na_values)
    if record is not None and encoding is not None:
        record["encoding"] = encoding
    return record


def structural_zeros_file(value: str) -> Path | None:
    """The rules file of ``--structural-zeros`` (None for ``none`` and ``auto``)."""
    return None if value in ("none", "auto") else Path(value)


def read_structural_zero_rules(path: Path, option: str, none: str) -> list[dict[str, Any]]:
    """The rules of a structural-zeros file, their form checked (before any work).

    The file holds a JSON list of rules in the form of
    :class:`sdcbayes.models.latent_class.StructuralZeros`: each rule a mapping
    ``{key: [levels]}`` or ``{key: {"not": [levels]}}``, levels as text or numbers.
    Keys and levels are checked against the data by :func:`check_structural_zero_rules`.
    ``option`` names where the path was given (``--structural-zeros``); ``none`` is
    how to ask for no rules there (``--structural-zeros none``).

    Raises
    ------
    InputError
        One line naming the file, the rule and the fix.
    """
    shape = 'a JSON list of rules such as [{"age": ["1"], "occupation": {"not": ["X"]}}]'
    where = f"{option} {path}"
    if not path.exists():
        raise InputError(f"{where}: no such file; give none, auto or the path of {shape}")
    if path.is_dir():
        raise InputError(f"{where} is a folder; give the path of {shape}")
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"{where} is not UTF-8 text; it must hold {shape}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{where} is not valid JSON ({e.msg} at line {e.lineno}, column "
                         f"{e.colno}); it must hold {shape}") from None
    if not isinstance(content, list):
        kind = {dict: "object", str: "string", int: "number", float: "number",
                bool: "boolean"}.get(type(content), "null")
        raise InputError(f"{where} holds a JSON {kind}, not a list; it must hold {shape}")
    if not content:
        raise InputError(f"{where} holds no rule; give at least one, or use {none}")

    def level_ok(v) -> bool:
        return isinstance(v, str | int | float) and not isinstance(v, bool)

    for i, rule in enumerate(content, start=1):
        if not isinstance(rule, dict) or not rule:
            raise InputError(f'{where}: rule {i} must be a non-empty mapping from keys to '
                             f'levels, e.g. {{"age": ["1"]}}; got {json.dumps(rule)}')
        for key, spec in rule.items():
            if isinstance(spec, dict) and set(spec) != {"not"}:
                raise InputError(
                    f'{where}: rule {i}, key {key!r}: give a list of levels or '
                    f'{{"not": [levels]}}; got {json.dumps(spec)}')
            levels = spec["not"] if isinstance(spec, dict) else spec
            levels = [levels] if level_ok(levels) else levels
            if not isinstance(levels, list) or not levels or not all(map(level_ok, levels)):
                raise InputError(
                    f'{where}: rule {i}, key {key!r}: levels must be a non-empty list of '
                    f'texts or numbers, e.g. ["1", "2"]; got {json.dumps(spec)}')
    return content


def check_structural_zero_rules(rules: list[dict[str, Any]], md, where: str,
                                named: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The rules with their keys as column names, checked against ``md`` (before any fit).

    Every key a rule names must be one of ``md.keys`` (or a name ``--keys`` gave for
    one, ``named``: a variable label), and every level one of the key's levels as the
    latent-class model sees them (their text; ``<missing>`` under ``--missing
    category``). Unknown keys and levels are listed with close matches.

    Raises
    ------
    InputError
        One line naming the rule, the unknown names, close matches and the fix.
    """
    import difflib

    from sdcbayes.microdata import MISSING_LEVEL
    from sdcbayes.models.latent_class import StructuralZeros

    keys = list(md.keys)
    alias = {k: k for k in keys} | {n: c for n, c in (named or {}).items() if c in keys}
    table = md.cells.table
    levels: dict[str, list[str]] = {}
    for k in keys:
        lv = [str(v) for v in md.levels[k]]
        if table[k].isna().any():  # missing="category": missing is a level of its own
            lv.append(MISSING_LEVEL)
        levels[k] = lv

    def close(name: str, pool: list[str]) -> str:
        hits = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
        return f" (did you mean {', '.join(map(repr, hits))}?)" if hits else ""

    for i, rule in enumerate(rules, start=1):  # every key first, then the levels
        for key in rule:
            if key not in alias:
                raise InputError(
                    f"{where}: rule {i} names {key!r}, which is not one of the keys "
                    f"{keys}{close(str(key), keys)}; name the keys as --keys does")
    out = []
    for i, rule in enumerate(rules, start=1):
        converted: dict[str, Any] = {}
        for key, spec in rule.items():
            column = alias[key]
            negate = isinstance(spec, dict)
            listed = spec["not"] if negate else spec
            listed = listed if isinstance(listed, list) else [listed]
            unknown = [str(v) for v in listed if str(v) not in levels[column]]
            if unknown:
                hints = "; ".join(f"{u!r}{close(u, levels[column])}" for u in unknown[:5])
                shown = levels[column][:20]
                more = f", ... ({len(levels[column])} in all)" if len(levels[column]) > 20 else ""
                raise InputError(
                    f"{where}: rule {i} names level(s) of {column!r} that the data do not have: "
                    f"{hints}; its levels are {', '.join(shown)}{more}")
            texts = [str(v) for v in listed]
            converted[column] = {"not": texts} if negate else texts
        out.append(converted)
    # a rule must not forbid what the sample holds (the model refuses it at its build)
    import numpy as np

    text = {k: table[k].astype(object).where(table[k].notna(), MISSING_LEVEL).astype(str)
            .to_numpy() for k in keys}
    fk = np.asarray(md.cells.fk)
    for i, rule in enumerate(out, start=1):
        inside = np.ones(len(table), dtype=bool)
        for k, spec in rule.items():
            listed = spec["not"] if isinstance(spec, dict) else spec
            hit = np.isin(text[k], listed)
            inside &= ~hit if isinstance(spec, dict) else hit
        if inside.any():
            j = int(np.flatnonzero(inside)[0])
            example = ", ".join(f"{k}={text[k][j]}" for k in rule)
            raise InputError(
                f"{where}: rule {i} forbids combinations the data contain ({int(fk[inside].sum())}"
                f" record(s), e.g. {example}): a structural zero cannot occur at all; correct "
                "the rule or the records")
    # the model's own check (e.g. too many disjoint rectangles), still before any fit
    StructuralZeros(out, keys, [levels[k] for k in keys])
    return out


def _fit_posterior(md, model, *, draws, chains, tune, seed, fit_method, threshold, strict, quiet,
                   target_accept=0.9, model_options=None, cores=None):
    """Fit a posterior model; convergence warnings become one-line messages on stderr.

    Progress bars (PyMC's, on stderr) unless ``quiet``. Where the sample is the
    population, :func:`~sdcbayes.risk.posterior_assess.assess_posterior` leaves the
    convergence checks out (no warnings, no ``--strict`` failure) and sets
    ``diagnostics.note``, which is echoed here.
    """
    import logging
    import warnings

    from sdcbayes.risk.posterior_assess import assess_posterior

    if quiet:
        # older PyTensor (2.26) warns on import when it finds no BLAS library: a child
        # logger's own level holds whatever the package sets on its root logger
        logging.getLogger("pytensor.tensor.blas").setLevel(logging.ERROR)
        if model != "latent-class":  # the latent-class Gibbs sampler never imports PyMC
            import pymc  # noqa: F401  (imported first: it sets its logger's level on import)

        # PyMC and ArviZ log progress and advice on stderr; --quiet means silence
        # (our own diagnostics still reach the user as warnings or, with --strict, errors)
        for name in ("pymc", "arviz", "pytensor"):
            logging.getLogger(name).setLevel(logging.ERROR)

    if not quiet:
        # MAP and ADVI approximate the posterior: no warm-up
        steps = "" if fit_method in ("map", "advi") else f" after {tune} tuning steps"
        click.echo(f"fitting {model} ({fit_method}: {chains} chains x {draws} draws{steps}) ...",
                   err=True)
    extra = {"target_accept": target_accept} if fit_method in ("nuts", "nutpie") else {}
    if cores is not None:
        extra["cores"] = cores
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = assess_posterior(
            md, model=model, draws=draws, chains=chains, tune=tune, random_seed=seed,
            method=fit_method, threshold=threshold, strict=strict,
            progressbar=not quiet, **extra, **(model_options or {}),
        )
    from sdcbayes.inference.diagnostics import SdcbayesWarning

    for w in caught:
        if issubclass(w.category, SdcbayesWarning):
            click.echo("sdcbayes: warning: " + cli_wording(" ".join(str(w.message).split())),
                       err=True)
    note = (result.summary.get("diagnostics") or {}).get("note")
    if note and not quiet:  # the sample is the population: results exact, checks left out
        click.echo(f"sdcbayes: note: {cli_wording(note)}", err=True)
    return result


# --------------------------------------------------------------------------- more commands
# Each command lives in its own module under sdcbayes/commands/ (cheap to import:
# heavy libraries are imported inside the command function).
def _register_commands() -> None:
    import importlib

    for name in _COMMAND_MODULES:
        module = importlib.import_module(f"sdcbayes.commands.{name}")
        cli.add_command(module.command)


_COMMAND_MODULES: list[str] = ["decide", "suda", "protect", "compare"]
_register_commands()


# --------------------------------------------------------------------------- entry point
#: The library's messages name the fix in Python spelling (``allow_weights_below_one=True``);
#: on the command line the same fix is an option. (pattern, replacement) pairs, applied in
#: order. Every entry is proven live by tests/test_cli_wording.py, which triggers the library
#: message that each pattern rewrites through the CLI and fails when a pattern matches
#: nothing (a library message was reworded) or a table entry has no such test.
_CLI_WORDING: list[tuple[str, str]] = [
    # sdcbayes.risk.assess.CLOSED_FORM_NO_WEIGHTS_NOTE: a closed form without weights
    (r"\bno weight= or sampling_fraction= in the Microdata:",
     "no --weight or --sampling-fraction:"),
    (r"\bsampling_fraction=1 says so\b", "--sampling-fraction 1 says so"),
    # sdcbayes.microdata.Microdata: weights, key levels, missing keys, household/strata ids
    (r"\bpass allow_weights_below_one=True\b", "pass --allow-weights-below-one"),
    (r"\bmax_levels=(-?\d+)", r"--max-levels \1"),
    (r"\braise max_levels\b", "raise --max-levels"),
    (r"\(e\.g\. pandas\.cut\)", '(e.g. a "band" step of sdcbayes protect --recipe)'),
    (r"\bleave (household|strata)=None\b", r"leave out --\1"),
    (r"\buse missing='wildcard' or 'category'", "use --missing wildcard or --missing category"),
    (r"\bgive either weight= or sampling_fraction=, not both \(sampling_fraction\b",
     "give either --weight or --sampling-fraction, not both (--sampling-fraction"),
    (r"\bsampling_fraction=(\S+) must be\b", r"--sampling-fraction \1 must be"),
    (r" \(in Python, e\.g\. pandas\.to_numeric\)", " in the file"),
    # models.latent_class: complete keys needed
    (r"\bmissing='(\w+)'", r"--missing \1"),
    # sdcbayes.inference.diagnostics.check_diagnostics: R-hat, ESS, divergences
    (r"\btune=(\d+)", r"--tune \1"),
    (r"\bincrease draws \(and tune\)", "increase --draws (and --tune)"),
    (r"\braise target_accept\b", "raise --target-accept"),
    # sdcbayes.inference.diagnostics.check_truncation: all latent classes occupied
    (r"\bn_classes=(\d+)", r"--classes \1"),
    (r" \(structure='hierarchical' is already non-centred\)", ""),
    # sdcbayes.microdata.Microdata: a column that is both a key and the weight/household/strata
    (r"\bremove it from keys or from (\w+)=", r"remove it from --keys or from --\1"),
    # sdcbayes.microdata.read_microdata: unknown file type
    (r" \(or read it with pandas and pass the DataFrame to Microdata\)", ""),
    # models.negbin and risk.compare: the population size
    (r"\bpass weight=<column> to Microdata\b", "pass --weight COLUMN"),
    (r"\bgive the microdata a weight column or a sampling_fraction\b",
     "give --weight COLUMN or --sampling-fraction"),
]


def _suda_max_size(match) -> str:
    """risk.suda's refusal of too many subsets, with the largest --max-size that fits."""
    import math

    n_keys, m, subsets, limit = (int(match.group(i)) for i in range(1, 5))
    fits = max((size for size in range(1, m) if sum(math.comb(n_keys, k)
                                                   for k in range(1, size + 1)) <= limit),
               default=0)
    how = (f"with --max-size {m}" if m < n_keys else
           "combined up to all of them (--max-size, by default the number of keys)")
    fix = f"give --max-size {fits} or less, or fewer keys" if fits else "give fewer keys"
    return (f"{n_keys} keys {how} give {subsets} attribute subsets, too many (limit "
            f"{limit}); {fix}")


#: Rules of one command that come before the table: `compare` sets a latent-class model's
#: classes inside its --models item, not with an option of its own.
_CLI_WORDING_BY_COMMAND: dict[str, list[tuple[str, Any]]] = {
    "compare": [
        (r"\bn_classes=(\d+)", r"classes=\1 in the model's --models item"),
        # the predictive check's advice, inside the comparison it points to (audit UX F7)
        (r" \(recode them\), check structural zeros, and compare models \(sdcbayes compare\)",
         " (recode them) and check structural zeros"),
    ],
    # risk.suda: the number of attribute subsets (max_size defaults to all the keys)
    "suda": [
        (r"(\d+) keys with max_size=(\d+) give (\d+) attribute subsets, too many "
         r"\(limit (\d+)\); pass a smaller max_size or fewer keys\.", _suda_max_size),
    ],
    # sdcbayes.protection.invariant_pram: its levels cap and the methods for a continuous
    # column, named by the functions that protect's options and recipe steps run
    "protect": [
        (r"more than max_levels \((\d+)\) for PRAM, (.*)\(merge_levels, or band for a "
         r"numeric variable\), or pass a larger max_levels",
         r'more than the \1 PRAM accepts, \2(--recode, or a "band" step of a --recipe), or '
         r'raise "max_levels" in a "pram" step of a --recipe'),
        (r"micro-aggregation \(mdav\) or noise \(add_noise\), or band it into categories",
         'micro-aggregation (--microaggregate) or noise (--noise), or band it into '
         'categories (a "band" step of a --recipe)'),
        # sdcbayes.protection.mdav: fewer records than the group size
        (r"for groups of k=(\d+); lower k or add records",
         r'for groups of at least \1 records; lower --mdav-k (or the "k" of a '
         r'"microaggregate" step of a --recipe) or add records'),
        # sdcbayes.protection.nayak_zhang_pram: group_size is a recipe parameter only
        (r"the minimum group size for xi=(\S+) is (\d+); raise xi, pass a smaller "
         r"group_size, or recode keys first",
         r'the minimum group size for --nayak-zhang-xi \1 is \2; raise --nayak-zhang-xi, '
         r'recode keys first (--recode), or lower "group_size" in a "nayak_zhang" step of '
         r'a --recipe'),
    ],
}


def cli_wording(message: str, command: str | None = None) -> str:
    """A library message with its Python-spelled fixes turned into command-line options.

    ``command`` names the command printing it, for the few fixes it spells its own way.
    """
    import re

    for pattern, replacement in _CLI_WORDING_BY_COMMAND.get(command, []) + _CLI_WORDING:
        message = re.sub(pattern, replacement, message)
    return message


#: The warning of a closed-form run on a file without --weight or --sampling-fraction
#: (assess, and compare's closed-form rows): risk/assess.py's sentence, in CLI spelling.
CLOSED_FORM_NO_WEIGHTS_NOTE = cli_wording(CLOSED_FORM_NO_WEIGHTS_NOTE_PY)


def cli_worded_summary(summary: dict, command: str | None = None) -> dict:
    """``summary`` with the warnings and problems it holds in command-line spelling.

    The lists under ``warnings`` and ``problems`` (at any depth, the provenance left as
    recorded) go to summary.json and report.html as the console printed them, so a
    report never tells a command-line user to pass ``tune=5000``. Changed in place.
    """
    def walk(node):
        for k, v in node.items():
            if k == "provenance":
                continue
            if k in ("warnings", "problems") and isinstance(v, list):
                node[k] = [cli_wording(" ".join(x.split()), command) if isinstance(x, str)
                           else x for x in v]
            elif isinstance(v, dict):
                walk(v)

    walk(summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point: one-line errors, exit status 2 on bad input."""
    try:
        cli.main(args=argv, prog_name="sdcbayes", standalone_mode=False)
    except click.exceptions.Exit as e:  # --help / --version
        return e.exit_code
    except click.exceptions.Abort:
        click.echo("sdcbayes: aborted", err=True)
        return 1
    except click.UsageError as e:
        hint = f" (see 'sdcbayes {e.ctx.info_name} --help')" if e.ctx and e.ctx.parent else ""
        click.echo(f"sdcbayes: error: {e.format_message()}{hint}".replace("\n", " "), err=True)
        return EXIT_INPUT
    except click.ClickException as e:
        click.echo(f"sdcbayes: error: {e.format_message()}".replace("\n", " "), err=True)
        return EXIT_INPUT
    except SdcbayesError as e:
        # the command's own rules first (the first word naming a command: its name)
        words = sys.argv[1:] if argv is None else list(argv)
        command = next((w for w in words if w in cli.commands), None)
        msg = cli_wording(" ".join(str(e).split()), command)
        click.echo(f"sdcbayes: error: {msg}", err=True)
        return EXIT_INPUT
    except FileNotFoundError as e:
        click.echo(f"sdcbayes: error: file not found: {e.filename}; check the path", err=True)
        return EXIT_INPUT
    except OSError as e:
        # last resort (check_out_dir probes --out before any work): one line, no traceback
        where = f" ({e.filename})" if e.filename else ""
        click.echo(f"sdcbayes: error: {e.strerror or e}{where}; check that the path exists "
                   "and can be written", err=True)
        return EXIT_INPUT
    except KeyboardInterrupt:
        click.echo("sdcbayes: interrupted", err=True)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
