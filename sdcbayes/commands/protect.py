"""``sdcbayes protect``: apply protection methods and show risk before and after.

Seed ``001_…`` (Templ, Meindl, Kowarik & Chen 2014, IHSN *Introduction to SDC*),
section 4 (methods) and section 5 (information loss); seed ``002_…``
(Nayak & Zhang) for the PRAM of the cross-classified key. The methods
themselves live in :mod:`sdcbayes.protection`; this module

1. reads the file and the steps (command-line options or a recipe) and checks
   all of them before any work: step names, parameters, columns, numbers, and
   the chain: each step against the columns as the steps before it leave them
   (:func:`_check_step_chain`: a column banded into categories is not
   micro-aggregated, a key a suppression may blank is no stratum, ...);
2. measures risk on the original file with the closed-form assessment
   (:func:`sdcbayes.risk.assess.assess_closed_form`, Benedetti-Franconi
   individual risk, seed 004 eq. 1-3, exactly or, with ``--method approx``, as
   sdcMicro's measure_risk and localSupp approximate it, which also sets the risk a
   ``suppress_risk`` step reads; ``risk.estimator`` in summary.json, and
   with ``--weight`` a note that on a sample it understates the risk, before and
   after); with ``--model latent-class`` also fits the latent-class model once on
   the input (:func:`sdcbayes.cli._fit_posterior`, as ``assess``, with the class
   profiles kept), whose assessment is the "before";
3. applies the steps in order, each on the output of the previous one;
4. measures risk again on the protected file (with ``--household``, the file as an
   intruder holding the released household ids reads it: the blanks a household mate
   shows read as shown, a key equal to the household's record count read as the exact
   count, :func:`sdcbayes.protection.suppression.household_completion`, while the file
   written keeps them as released; the risk before reads the input so too; with
   ``--model latent-class`` also scored from the same draws,
   :func:`sdcbayes.risk.released.assess_released`: a blank matches every level, a key
   value recoded by recode, band, top or bottom coding every input level it stands for,
   :func:`_key_level_maps`; the closed form kept beside it as ``risk.closed_form``;
   after PRAM or Nayak-Zhang PRAM of a key the closed form's risk of each record times
   the probability PRAM kept its key values, Shlomo & Skinner 2010,
   :func:`_misclassification`, the unadjusted numbers in
   ``risk.after.misclassification``) and the information loss
   (:mod:`sdcbayes.protection.infoloss`: changed and suppressed
   shares per variable, IL1 and sdcMicro's difference of eigenvalues for numeric
   variables, seed 001 section 5.1); for the numeric variables a numeric step changed,
   their disclosure risk as sdcMicro reports it after such a step (the interval risk,
   ``dRisk``) and distance-based record linkage to the input (seed 001, 3.6), before
   (the input against itself) and after (:func:`_numeric_risk`, ``risk.numeric``);
5. writes the protected file in the input's format, ``log.csv`` (the change
   logs of all steps, one after the other), ``summary.json``, ``report.html``
   and, with a PRAM step, ``pram_matrices.csv`` (its transition matrices, in
   long form: :func:`_pram_matrices`) atomically.

Order of the steps given as options (the usual workflow of seed 001, Figure 2):
recode -> targeted record swapping -> local suppression (k-anonymity) ->
risk-threshold suppression -> invariant PRAM -> Nayak-Zhang PRAM ->
micro-aggregation -> rank swapping -> shuffling -> noise. Swapping comes before the
suppression, as in
census practice: the swap perturbs the geography, then suppression makes the released
file k-anonymous (a suppression before it could blank a swapped column, which a
swap refuses). Rank swapping sits with the other perturbative methods for numeric
variables, after the suppression (a value it blanked stays blank: rank swapping leaves
missing values missing) and before noise, so that a variable given to both is ranked on
its own values, not noisy ones (Moore's rank range from ``r0`` or ``k0`` is computed from
the values' variance, mean and range). Shuffling, which also reassigns a column's own
values between records, follows rank swapping, before noise for the same reason. A recipe
runs its steps in the order listed.

Variable names: wherever a command-line option or a recipe names a variable
(``--keys``, ``--weight``, ``--strata``, ``--recode COL:...``, ``--importance
KEY=RANK``, ``--pram``, ``--microaggregate``, ``--rank-swap``, ``--noise``; a recipe's
``column``, ``columns``, ``keys``, ``strata`` and the keys of an
``importance`` mapping) a column name or, for SPSS, Stata and SAS files, a
variable label may be given (:func:`sdcbayes.microdata.resolve_columns`). All
of them are resolved before any work; outputs use the column names.

Randomness: one NumPy Generator, ``numpy.random.default_rng(seed)``, is handed
to the random steps (record swapping, PRAM, Nayak-Zhang PRAM, rank swapping, shuffling,
noise) in
the order they run, so a run is reproduced by the same steps and seed; without ``--seed`` (or a
recipe's seed) one is drawn and stamped in ``summary.json``.

Recipe (``--recipe RECIPE.json``; YAML when PyYAML is installed)::

    {"seed": 1,
     "steps": [
       {"step": "recode", "column": "age", "mapping": {"20s": "20-39", "30s": "20-39"}},
       {"step": "band", "column": "income", "breaks": [0, 1000, 5000, 1e9]},
       {"step": "top_code", "column": "income", "threshold": 10000},
       {"step": "swap", "hierarchy": ["region", "district"], "similar": "household_size",
        "swap_rate": 0.05, "k": 3},
       {"step": "suppress", "k": 3, "importance": {"age": 2, "sex": 1},
        "linked": {"region": ["district"]}},
       {"step": "suppress_risk", "threshold": 0.1, "key": "age"},
       {"step": "pram", "columns": ["region"], "pd": 0.8},
       {"step": "pram", "columns": ["hours"], "matrices": "pram_matrices.csv"},
       {"step": "nayak_zhang", "xi": 0.5},
       {"step": "microaggregate", "columns": ["income", "expenses"], "k": 3},
       {"step": "rank_swap", "columns": ["expenses"], "p": 5, "top_percent": 0},
       {"step": "shuffle", "columns": ["income", "savings"], "predictors": ["age", "sex"],
        "method": "ds", "covmethod": "spearman"},
       {"step": "noise", "columns": ["income"], "level": 0.1}
     ]}

Each step's parameters are those of its method in :mod:`sdcbayes.protection`
(``STEPS`` lists them). A ``pram`` step refuses a column of more than
``max_levels`` levels (default 1000: PRAM builds dense L x L matrices); raise it
in the step for, e.g., a municipality code of 2,000 levels. Its ``matrices`` (a
user transition matrix per column: a CSV in the long form of ``pram_matrices.csv``,
read from the recipe's folder, or an inline mapping ``{from: {to: p}}``) are checked
before any work (rows of probabilities summing to 1, levels of the column) and
``result.user_matrices`` says whether each keeps the expected counts (invariant).
A ``suppress_risk`` step (sdcMicro's ``localSupp``) blanks its ``key`` (default: the
key with the most levels) where the closed-form risk on ``--keys`` and ``--weight``,
measured on the step's input, exceeds ``threshold``; ``linked`` (also of
``suppress``) names columns that follow a key's blanks (sdcMicro's ``ghostVars``).
``household_keys`` (of ``suppress`` and ``suppress_risk``, with ``--household``; the
option ``--household-keys``): ``"auto"`` or a list of the step's keys, each blanked in
every member of a household where the step blanked it in one, so that no household mate
shows the blanked value once the household id is released
(:func:`sdcbayes.protection.suppression.local_suppression`); a blank a mate shows is
read as shown by the risk after.
A ``swap`` step (sdcMicro's ``recordSwap``,
:func:`sdcbayes.protection.swapping.record_swap`; options ``--swap``, ``--swap-similar``,
``--swap-rate``, ``--swap-k``, ``--swap-risk-variables``, ``--swap-carry-along``) needs
``--household``: households at risk within their geographic unit (a member shares its
``risk_variables`` with fewer than ``k`` records of the unit; default ``--keys`` less the
swapped columns), and more drawn by risk up to ``swap_rate`` of the households, exchange
their ``hierarchy`` (and ``carry_along``) columns with a household of the same
``similar`` profile in another unit. ``similar`` is required: one list of columns, or a
list of such lists tried in turn. ``log.csv`` gets one row per changed value; the step's
result is the method's summary (households swapped, the rate achieved, high-risk
households, those left without a donor, selections no household could fill) and
``pairs``, the swapped pairs as [household, partner, level] (the first
:data:`SWAP_PAIRS_LISTED`). A warning says when the rate achieved is far above the rate
asked (:func:`_swap_rate_warnings`): with many fine risk variables most households are at
risk. With a hierarchy or carry-along column among the keys, the risk after counts a
record whose key values the swap changed as non-matching (risk 0: it shows another
household's values; Shlomo, Tudor & Groom 2010), the others' closed-form risks counted on
their pre-swap cells (:func:`_pre_swap_counts`), times PRAM's keep probability where both
ran (:func:`_misclassification`, summary.json ``risk.after.misclassification``); cells,
sample uniques and k-anonymity read the released values. Under ``--model latent-class`` a
swap of a key is refused, as PRAM of a key is (the
released value is no function of the record's own).
A ``rank_swap`` step (Moore's rank swapping, sdcMicro's ``rankSwap``,
:func:`sdcbayes.protection.rank_swap`; options ``--rank-swap``, ``--rank-swap-p``,
``--rank-swap-r0``, ``--rank-swap-k0``, ``--rank-swap-top``, ``--rank-swap-bottom``)
exchanges each numeric column's values between records at most a rank range apart
(``p`` percent of the values swapped, or Moore's range from ``r0``, default 0.95, or
``k0``: at most one of them), the ``top_percent`` and ``bottom_percent`` (default 5)
largest and smallest replaced by their group means. Missing values stay missing, so
unlike noise and micro-aggregation it takes a column an earlier suppression may blank;
infinite values are refused. ``log.csv`` gets the method's row per variable; the step's
result is its summary (criterion, ``rank_range`` and ``rank_range_percent`` per column,
``columns_not_swapped``) without ``source_of_record``, a row number per record. It is a
numeric step: IL1, the difference of eigenvalues and ``risk.numeric``. Rank swapping of
a key is warned about (the combinations change, and the risk after reads the swapped
values as true: unlike a record swap's, a moved numeric value is not counted as
non-matching, since an intruder can look near it) and refused under ``--model latent-class``.
A ``shuffle`` step (Muralidhar & Sarathy's data shuffling, sdcMicro's ``shuffle``,
:func:`sdcbayes.protection.shuffle`; options ``--shuffle``, ``--shuffle-by``,
``--shuffle-method``, ``--shuffle-cov``) perturbs two or more complete numeric
``columns`` by a normal-copula model given the complete ``predictors`` (numeric, or
categorical as indicators of their levels but the first) and releases in each column its
own original values, reassigned in the order of the perturbed ones (``method`` "ds", the
default, or sdcMicro's "mvn"; ``covmethod`` "spearman", the default, "pearson" or, with
"ds" only, this package's "normal-scores"). With numeric predictors "ds" keeps the rank
correlations between the columns and with the predictors to sampling error; with a
categorical one (indicators) "spearman" and "pearson", as sdcMicro, keep neither (0.633 ->
0.476 between two columns tied to a 5-level predictor; income-hours on the demo 0.549 ->
-0.008 given the 18-level age band): :func:`_shuffle_warnings` warns, advising
"normal-scores" (0.632; 0.549), an ordered categorical given as a number (0.606), or
leaving it out. Exactly collinear predictors (nested categorical ones) are refused.
``log.csv`` gets the method's row per variable. It is a numeric step (IL1, eigenvalues,
``risk.numeric``); shuffling a key is warned about as rank swapping is and refused under
``--model latent-class``.
A ``noise`` step (sdcMicro's ``addNoise``, :func:`sdcbayes.protection.add_noise`; options
``--noise``, ``--noise-level``, ``--noise-method``, ``--noise-delta``, ``--noise-p``)
perturbs complete numeric ``columns`` by ``method`` (:data:`NOISE_METHODS`):
"additive" (the default; ``level`` 0.1 the noise sd per variable's sd), "correlated"
(noise covariance ``level`` times the covariance), "correlated2" (``delta``, default
0.1), "restr" (a deterministic shrink toward the means set by ``level``, as sdcMicro's)
or "ROMM" (random orthogonal matrix masking, ``p``, default 0.001; at most 5000
records). ``delta`` belongs to correlated2 only, ``p`` to ROMM only, and ``level`` is
refused with either of them (sdcMicro ignores it there); sdcMicro's "outdect" is
refused (its robust MCD outlier rule cannot be reproduced).

Heavy libraries are imported inside the command so ``sdcbayes --help`` stays fast.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import click

from sdcbayes._cliutils import (
    CLOSED_FORM_METHOD_HELP,
    ENCODING_HELP,
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
from sdcbayes.exceptions import InputError
from sdcbayes.microdata import MISSING_LEVEL  # the fit's missing level (sdcbayes imports it)
from sdcbayes.provenance import seed_or_drawn

#: step name -> (required parameters, optional parameters). "keys" defaults to --keys.
STEPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "recode": (("column", "mapping"), ()),
    "band": (("column", "breaks"), ("labels", "right")),
    "top_code": (("column", "threshold"), ("replacement",)),
    "bottom_code": (("column", "threshold"), ("replacement",)),
    "swap": (("hierarchy", "similar"), ("risk_variables", "swap_rate", "k", "carry_along")),
    "suppress": (("k",), ("keys", "importance", "strata", "combs", "method", "linked",
                          "household_keys")),
    "suppress_risk": (("threshold",), ("key", "linked", "household_keys")),
    "pram": (("columns",), ("pd", "alpha", "strata", "max_levels", "matrices")),
    "nayak_zhang": ((), ("xi", "keys", "theta", "group_size")),
    "microaggregate": (("columns",), ("k", "standardize", "aggregate", "method", "varsort",
                                      "trim")),
    "rank_swap": (("columns",), ("p", "r0", "k0", "top_percent", "bottom_percent")),
    "shuffle": (("columns", "predictors"), ("method", "covmethod")),
    "noise": (("columns",), ("level", "method", "delta", "p")),
}
#: Keys a step may carry that are not parameters: set by the option parser, never by a recipe.
#: ``_olds``: a --recode's OLD text, split on "+" once the column's levels are known.
#: ``_measure``: what a suppress_risk step measures the risk with (--keys, --weight, ...).
#: ``_matrices``: a pram step's ``matrices``, read and checked (column -> {from: {to: p}}).
#: ``_household``: the ``--household`` column a step's ``household_keys`` are kept within,
#: whose record counts a suppress step's count keys are read as (``_count_strata``), or
#: whose households a swap step exchanges the geography of.
#: ``_default_key``: a suppress_risk step's ``key`` is the default, not given.
#: ``_count_strata``: a suppress step's keys that count the household's records, run
#: within the exact counts instead (``--household``: :func:`_count_keys_as_strata`).
_INTERNAL = ("_from_text", "_option", "_olds", "_measure", "_matrices", "_household",
             "_default_key", "_count_strata")
#: The estimator of the risk before and after (summary.json's ``risk.estimator``), by
#: ``--method``: the exact E(1/F | f) (the default) keeps its name of old.
RISK_ESTIMATOR = "closed form (Benedetti-Franconi)"
RISK_ESTIMATORS = {
    "exact": RISK_ESTIMATOR,
    "approx": "closed form (Benedetti-Franconi, sdcMicro's approximation)",
}
#: The file of the PRAM steps' transition matrices (summary.json keeps a digest of them).
PRAM_MATRICES = "pram_matrices.csv"
#: A swap step's result lists its first so many pairs (summary.json's ``pairs``);
#: :func:`sdcbayes.protection.record_swap`'s log has them all.
SWAP_PAIRS_LISTED = 10_000
#: A swap whose achieved rate exceeds both SWAP_RATE_WARN_FACTOR x the rate asked and the
#: rate asked + SWAP_RATE_WARN_MARGIN is warned about (:func:`_swap_rate_warnings`): the
#: high-risk households, all swapped whatever the rate, are then most of the swaps.
SWAP_RATE_WARN_FACTOR = 2.0
SWAP_RATE_WARN_MARGIN = 0.05
# Steps that change numeric values (IL1 applies); the others change categories.
_NUMERIC_STEPS = ("top_code", "bottom_code", "microaggregate", "rank_swap", "shuffle",
                  "noise")
#: A rank_swap step's default top_percent and bottom_percent (and --rank-swap-top's and
#: --rank-swap-bottom's): :func:`sdcbayes.protection.rank_swap`'s, sdcMicro's 5.
RANK_SWAP_GROUP_PERCENT = 5.0
#: A noise step's methods (--noise-method's choices): sdcbayes.protection.noise's
#: NOISE_METHODS, restated so that the CLI starts without importing NumPy.
NOISE_METHODS = ("additive", "correlated", "correlated2", "restr", "ROMM")
#: --interval-k's default: sdcMicro's dRisk default k (R/dRisk.R).
DEFAULT_INTERVAL_K = 0.05
#: Default k for counting k-anonymity violations when no suppression step sets one.
DEFAULT_RISK_K = 3


@click.command("protect", cls=SingleValueCommand)
@click.argument("data", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--keys",
    required=True,
    help="Key variables the intruder knows, comma-separated (e.g. age,sex,region). Risk "
    "before and after is measured on them; local suppression and Nayak-Zhang PRAM act on "
    "them.",
)
@click.option(
    "--recipe",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A file listing the steps in order (RECIPE.json; RECIPE.yaml needs PyYAML): "
    "steps recode, band, top_code, bottom_code, swap, suppress, suppress_risk, pram, "
    "nayak_zhang, microaggregate, rank_swap, shuffle and noise; see the README section "
    "'Protection "
    "recipes' "
    "for the format. Use either a recipe or the step options below.",
)
@click.option(
    "--recode",
    "recodes",
    multiple=True,
    metavar="COL:OLD1+OLD2=NEW",
    help="Global recoding (repeatable): merge categories OLD1, OLD2, ... of column COL "
    "into one category NEW, e.g. --recode age:20s+30s=20-39. A level may hold '+' "
    "(--recode age:70-79+80+=70+): OLD is split where its pieces are levels of COL.",
)
@click.option(
    "--swap",
    "swap",
    default=None,
    metavar="GEO1,GEO2",
    help="Targeted record swapping (sdcMicro's recordSwap): households at risk within their "
    "geographic unit exchange their geography, these household-level columns from coarse "
    "to fine (e.g. region,district), with a similar household (--swap-similar) in another "
    "unit; about --swap-rate of the households are swapped. At risk: a member shares its "
    "values of --swap-risk-variables (default --keys less the swapped columns) with fewer "
    "than --swap-k records of its unit. Needs --household; runs after --recode and before "
    "the suppression.",
)
@click.option(
    "--swap-similar",
    "swap_similar",
    multiple=True,
    metavar="COL1,COL2",
    help="With --swap (required): household-level columns a donor household must share, "
    "e.g. household_size, so that every unit keeps its numbers of households of each "
    "profile. Repeatable: a later profile is tried when no donor matches the ones before "
    "(--swap-similar household_size,tenure --swap-similar household_size).",
)
@click.option(
    "--swap-rate",
    type=float,
    default=0.05,
    show_default=True,
    metavar="R",
    help="With --swap: share of households to swap, between 0 and 1; the households at "
    "risk are swapped even beyond it.",
)
@click.option(
    "--swap-k",
    type=int,
    default=3,
    show_default=True,
    help="With --swap: a household is at risk where a member shares its values of "
    "--swap-risk-variables with fewer than K records of its geographic unit; 1 marks none "
    "(only --swap-rate selects).",
)
@click.option(
    "--swap-risk-variables",
    "swap_risk_variables",
    default=None,
    metavar="COL1,COL2",
    help="With --swap: the person-level columns counted within each geographic unit for "
    "--swap-k (default --keys less the swapped columns). Many fine ones put most "
    "households at risk, and all of those are swapped, whatever --swap-rate: name the few "
    "an intruder would know, e.g. age_group,sex.",
)
@click.option(
    "--swap-carry-along",
    "swap_carry_along",
    default=None,
    metavar="COL1,COL2",
    help="With --swap: further household-level columns swapped with the geography (e.g. a "
    "finer geography not used for the risk), so that the released geography stays "
    "coherent.",
)
@click.option(
    "--suppress-k",
    type=int,
    default=None,
    help="Local suppression: blank out as few key values as possible until every "
    "combination of keys is shared by at least K records (k-anonymity; a blank matches "
    "any value). K is at most the number of records. The output's row 'as the suppression "
    "judges it' counts the records below K as this step does: each blank matching any "
    "value, within --strata.",
)
@click.option(
    "--importance",
    default=None,
    help="With --suppress-k: rank of each key, 1 = most important (suppressed last), as "
    "KEY=RANK pairs (age=3,sex=1,region=2) or ranks in the order of --keys (3,1,2). "
    "Default: keys with more categories are suppressed first.",
)
@click.option(
    "--suppress-method",
    type=click.Choice(["greedy", "sequential"]),
    default=None,
    help="With --suppress-k: greedy (the default) blanks, pass by pass, a key in every cell "
    "that breaks k-anonymity at once (fast on large files); sequential is sdcMicro's "
    "localSuppression, one record at a time in decreasing order of risk, each blank "
    "matching the records after it (its counts on sdcMicro's test files; often fewer "
    "values blanked, slower where many records break k-anonymity).",
)
@click.option(
    "--suppress-risk",
    type=float,
    default=None,
    metavar="R",
    help="Risk-threshold local suppression (sdcMicro's localSupp, mu-Argus's individual-risk "
    "route): blank one key (--suppress-risk-key) in every record whose individual risk is "
    "above R (0 <= R < 1, e.g. 0.15). The risk is the closed form (Benedetti-Franconi) on "
    "--keys and --weight, measured on the file as the steps before leave it, by --method "
    "(approx: localSupp's risk). Runs after "
    "--suppress-k; a record still above R afterwards needs another key (a recipe with a "
    "second suppress_risk step).",
)
@click.option(
    "--suppress-risk-key",
    default=None,
    metavar="KEY",
    help="With --suppress-risk: the key to blank, one of --keys. Default: the key with the "
    "most categories (the one local suppression blanks first by default).",
)
@click.option(
    "--linked",
    "linked",
    multiple=True,
    metavar="KEY=COL1,COL2",
    help="With --suppress-k or --suppress-risk (repeatable): columns that depend on a key, "
    "e.g. --linked region=district: every value of the key the suppression blanks is "
    "blanked in them too, so that a district does not reveal its region (sdcMicro's "
    "ghostVars). A linked column may not be a key, a stratum or the weight.",
)
@click.option(
    "--pram",
    "pram_cols",
    default=None,
    help="Invariant PRAM: comma-separated categorical variables whose values are changed at "
    "random, keeping their expected frequencies (Templ et al. 2014, 4.1.3). After PRAM of a "
    "key the closed-form risk after is misclassification-adjusted (Shlomo & Skinner 2010): "
    "each record's risk times the probability PRAM kept its key values; summary.json keeps "
    "the unadjusted numbers beside it (risk.after.misclassification).",
)
@click.option(
    "--pram-pd",
    type=float,
    default=0.8,
    show_default=True,
    help="With --pram: lower bound of the diagonal of the first-stage matrix P (its "
    "entries are drawn in [pd, 1], as in sdcMicro's pram); lower means more change. Values "
    "are released through the invariant matrix 0.5*R + 0.5*I built from P, so pd does not "
    "bound the probability that a value is kept: it can be lower than pd (never below 0.5).",
)
@click.option(
    "--nayak-zhang-xi",
    type=float,
    default=None,
    help="Nayak-Zhang PRAM of the key combination (Nayak & Zhang 2015): randomise sample "
    "uniques and pairs so that the probability of a correct match is at most XI (at least 1/3 and "
    "below 1, e.g. 0.5). The risk after is misclassification-adjusted, as after --pram of a "
    "key.",
)
@click.option(
    "--microaggregate",
    "mdav_cols",
    default=None,
    help="Micro-aggregation (MDAV): comma-separated numeric variables replaced by the mean "
    "of groups of at least --mdav-k similar records (Templ et al. 2014, 4.2.1). MDAV's time "
    "grows with the square of the records (O(n^2/k)): about 1 min for 10^5 records and "
    "over an hour for 10^6 at k=3 (one core), with a warning above 50,000 records; "
    "--microaggregate-method sorted takes n log n (about 1 s for 10^5). IL1 in the output: "
    "see --noise.",
)
@click.option(
    "--mdav-k",
    type=int,
    default=3,
    show_default=True,
    help="With --microaggregate: minimum group size.",
)
@click.option(
    "--microaggregate-method",
    type=click.Choice(["mdav", "sorted", "pca", "single", "simple"]),
    default=None,
    help="With --microaggregate: mdav (the default) groups the records on all the columns "
    "jointly, in time quadratic in the records; sorted aggregates each column on its own, "
    "sorted and cut into blocks of --mdav-k (sdcMicro's mafast, what its microaggregation "
    "does for one variable), in time n log n. pca, single and simple (sdcMicro's methods) "
    "order the records by the first principal component of the columns' z-scores, by one "
    "column (--microaggregate-varsort) or as in the file, and cut them into blocks of "
    "--mdav-k, all columns with the same groups (two or more columns; n log n).",
)
@click.option(
    "--microaggregate-varsort",
    default=None,
    help="With --microaggregate-method single: the column the records are sorted on (one of "
    "--microaggregate's; default its first, as sdcMicro's varsort = 1).",
)
@click.option(
    "--microaggregate-measure",
    type=click.Choice(["mean", "median", "trim", "onestep"]),
    default=None,
    help="With --microaggregate: the value that replaces a group's values (sdcMicro's "
    "measure): mean (the default; keeps the means), median, trim (the trimmed mean, "
    "--microaggregate-trim) or onestep (the mean after clipping to median +- 3/1.486 MAD).",
)
@click.option(
    "--microaggregate-trim",
    type=float,
    default=None,
    help="With --microaggregate-measure trim: the fraction cut from each end of a group, "
    "0 to 0.5 (R's mean(x, trim); 0.5 is the median).",
)
@click.option(
    "--noise",
    "noise_cols",
    default=None,
    help="Noise addition: comma-separated numeric variables to which random normal noise "
    "is added (Templ et al. 2014, 4.2.2). The output's IL1, here and after "
    "--microaggregate or --rank-swap, is the information loss of a numeric variable: the "
    "mean absolute change of its values over √2 times its standard deviation (0: "
    "unchanged).",
)
@click.option(
    "--noise-level",
    type=float,
    default=0.1,
    show_default=True,
    help="With --noise: noise standard deviation as a fraction of each variable's standard "
    "deviation (sdcMicro's noise / 100; correlated: noise covariance level × Σ; restr: "
    "sets the shrinking factor; unused by correlated2 and ROMM).",
)
@click.option(
    "--noise-method",
    type=click.Choice(list(NOISE_METHODS)),
    default=None,
    help="With --noise: sdcMicro's addNoise method. additive (the default, Brand 2002): "
    "independent noise per variable; correlated: noise with the variables' covariance "
    "(correlations kept in expectation); correlated2 (sdcMicro's formula after Kim 1986): "
    "√(1-δ²) x + (1-√(1-δ²)) mean + δ sd noise per variable (means and variances kept in "
    "expectation; see --noise-delta); restr: each value shrunk toward its variable's mean "
    "by Kim's factor, no random part, as in sdcMicro (means and correlations kept "
    "exactly); ROMM (Ting, Fienberg & Trottini 2008): the records multiplied by a random "
    "orthogonal matrix near the identity (x'x kept exactly; see --noise-p; at most 5000 "
    "records). sdcMicro's outdect is not offered (its robust MCD cannot be reproduced).",
)
@click.option(
    "--noise-delta", "noise_delta", type=float, default=None, metavar="DELTA",
    help="With --noise-method correlated2: the noise share δ in (0, 1]. [default: 0.1, "
    "sdcMicro's]",
)
@click.option(
    "--noise-p", "noise_p", type=float, default=None, metavar="P",
    help="With --noise-method ROMM: the weight p > 0 of the random matrix M in I + p M, "
    "whose Gram-Schmidt orthonormalisation masks the records; at most 2**53 (beyond it T no "
    "longer depends on p). [default: 0.001, sdcMicro's]",
)
@click.option(
    "--rank-swap",
    "rank_swap",
    default=None,
    metavar="VARS",
    help="Rank swapping (Moore 1996, sdcMicro's rankSwap): comma-separated numeric variables, "
    "each on its own: its values are ranked, the --rank-swap-top and --rank-swap-bottom "
    "percent largest and smallest replaced by their group means, and each other value "
    "exchanged with one at most a rank range away (--rank-swap-p, or derived from "
    "--rank-swap-r0, default 0.95, or --rank-swap-k0). The values are only moved between "
    "records; missing values stay missing. Runs after --microaggregate and before --noise.",
)
@click.option(
    "--rank-swap-p", "rank_swap_p", type=float, default=None, metavar="P",
    help="With --rank-swap: the rank range as a percentage of the values swapped, above 0 "
    "and at most 100 (two swapped values differ in rank by at most P%; sdcMicro's P = 0.05 "
    "is 5 here). At most one of --rank-swap-p, --rank-swap-r0 and --rank-swap-k0.",
)
@click.option(
    "--rank-swap-r0", "rank_swap_r0", type=float, default=None, metavar="R",
    help="With --rank-swap: the share of a correlation between two swapped variables to "
    "keep, above 0 and below 1; sets each variable's rank range by Moore's formula. "
    "[default: 0.95 when none of --rank-swap-p, --rank-swap-r0, --rank-swap-k0 is given, as "
    "sdcMicro]",
)
@click.option(
    "--rank-swap-k0", "rank_swap_k0", type=float, default=None, metavar="K",
    help="With --rank-swap: Moore's subset-mean preservation factor, positive; sets each "
    "variable's rank range by Moore's formula.",
)
@click.option(
    "--rank-swap-top", "rank_swap_top", type=float, default=RANK_SWAP_GROUP_PERCENT,
    show_default=True,
    metavar="T",
    help="With --rank-swap: percentage of the largest values replaced by their mean and not "
    "swapped (sdcMicro's TopPercent); 0 groups none.",
)
@click.option(
    "--rank-swap-bottom", "rank_swap_bottom", type=float, default=RANK_SWAP_GROUP_PERCENT,
    show_default=True,
    metavar="B",
    help="With --rank-swap: percentage of the smallest values replaced by their mean and not "
    "swapped (sdcMicro's BottomPercent); 0 groups none.",
)
@click.option(
    "--shuffle",
    "shuffle",
    default=None,
    metavar="VARS",
    help="Data shuffling (Muralidhar & Sarathy 2006, sdcMicro's shuffle): two or more "
    "comma-separated numeric variables without missing values, perturbed by a normal-copula "
    "model given --shuffle-by; then each variable's original values are reassigned to the "
    "records in the order of the perturbed ones, so every value released is an original one "
    "(each margin kept exactly; with numeric --shuffle-by, the rank correlations between the "
    "variables and with the predictors approximately). Runs after --rank-swap and before "
    "--noise.",
)
@click.option(
    "--shuffle-by", "shuffle_by", default=None, metavar="VARS",
    help="With --shuffle (required): comma-separated predictors the shuffle conditions on, "
    "without missing values; numeric ones enter as numbers, others as indicators of their "
    "levels but the first (R's treatment contrasts). With indicators, --shuffle-cov spearman "
    "or pearson (sdcMicro's model) keeps neither the rank correlations with them nor those "
    "between the shuffled variables (0.549 -> -0.008 on the demo given an 18-level age band; "
    "warned): use --shuffle-cov normal-scores, or give an ordered categorical as a number, "
    "or leave it out. Nested categorical predictors (exactly collinear) are refused.",
)
@click.option(
    "--shuffle-method", "shuffle_method", type=click.Choice(["ds", "mvn"]), default="ds",
    show_default=True,
    help="With --shuffle: 'ds' is Muralidhar & Sarathy's data shuffling; 'mvn' sdcMicro's "
    "simplification from a freshly drawn normal sample, for parity with sdcMicro only: it "
    "keeps neither the records' relation to the predictors nor the variables' mutual rank "
    "correlations.",
)
@click.option(
    "--shuffle-cov", "shuffle_cov",
    type=click.Choice(["spearman", "pearson", "normal-scores"]),
    default="spearman", show_default=True,
    help="With --shuffle: the correlations of the model, rank (spearman) or Pearson "
    "(sdcMicro's covmethod), or (ds only, not in sdcMicro) the covariance of the normal "
    "scores themselves, which keeps the rank correlations with categorical --shuffle-by "
    "too.",
)
@click.option(
    "--interval-k", "interval_k", type=float, default=DEFAULT_INTERVAL_K, show_default=True,
    metavar="K",
    help="Half-width, as a fraction of the protected variable's standard deviation, of the "
    "interval put around each protected value by the numeric variables' interval risk "
    "(sdcMicro's dRisk: a record is at risk when its original values all lie inside; "
    "summary.json's risk.numeric, reported when --noise, --microaggregate, --rank-swap or a "
    "recipe's top_code/bottom_code changes numeric variables). Positive. The record "
    "linkage reported beside it links each protected record to the nearest original one: "
    "'nearest' is the share linked to their own original (ties counted as correct), "
    "'tie-fair' the expected share when an intruder picks at random among equally near "
    "originals.",
)
@click.option(
    "--strata",
    default=None,
    help="With --suppress-k and --pram: comma-separated stratum variables; k-anonymity is "
    "reached and PRAM applied within each stratum (records of different strata never match; "
    "in a stratum of fewer than K records k is lowered to its size, with a warning). "
    "A stratum variable may not be a key of the suppression or a PRAM'd column (the step "
    "would change it). In a recipe, give strata inside the steps instead.",
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=None,
    help="Random seed (reproducible swapping, PRAM, rank swapping and noise, and the --model "
    "latent-class "
    "fit); "
    "without it one is drawn and stamped in summary.json.",
)
@click.option(
    "--weight",
    help="Sampling-weight column, used to measure risk before and after (population "
    "frequencies estimated by summed weights). Without it every record counts as its own "
    "population, which overstates risk for a sample.",
)
@click.option(
    "--household",
    help="Household id column (a name or variable label, like --weight): adds household "
    "(hierarchical) risk before and after, as `sdcbayes assess --household` reports it "
    "(sdcMicro's hhId and hier_risk). The column is released unchanged and no step may "
    "change it; it may not be a key or the weight, and every record needs an id (--na-values "
    "codes in it count as missing). The risk before and after reads what the released "
    "ids give away: a blanked household-level key a household mate shows, and a key equal "
    "to the household's number of records as that exact count (blanked, recoded, PRAMmed "
    "or missing alike); the file written keeps them as released. With --model "
    "latent-class the fit's cross-validation keeps households whole, as assess "
    "--household's does (with --cluster-correction none), so the model's numbers before "
    "and after change with it, not only its rows.",
)
@click.option(
    "--household-keys",
    metavar="auto|KEY1,KEY2",
    default=None,
    help="With --household and --suppress-k or --suppress-risk: keys kept consistent within "
    "households. Where the suppression blanks one of them in a member of a household it is "
    "blanked in every member, so that no mate shows the value once the household id is "
    "released (the risk after reads such a blank as shown). auto: the keys with one value in "
    "every household of the input (e.g. household size). Only adds blanks: k-anonymity still "
    "holds. In a recipe, give \"household_keys\" inside the suppress and suppress_risk "
    "steps.",
)
@click.option(
    "--sensitive", metavar="VARS", default=None,
    help="Sensitive variables, comma-separated (a name, or a variable label as for --keys): "
    "adds their l-diversity within each key combination before and after (sdcMicro's "
    "ldiversity, as `sdcbayes assess --sensitive` computes it): summary.json's "
    "risk.before.l_diversity and risk.after.l_diversity, the records in cells whose records "
    "all share one value (attribute disclosure) before -> after on the terminal. The cells "
    "are the exact key patterns, a missing key value (a blank after suppression) a value of "
    "its own, as sdcMicro's ldiversity groups the protected object; after: the protected "
    "file's keys (with --household as the risk after reads them, the blanks the released ids "
    "give away filled) and its released sensitive values. Not a key, --weight or --household; "
    "no step may change it except PRAM (--pram, a recipe's pram step: the after counts the "
    "released values).",
)
@click.option(
    "--l-diversity-c", "l_diversity_c", type=float, default=None, metavar="C",
    help=L_DIVERSITY_C_HELP,
)
@click.option(
    "--allow-weights-below-one",
    is_flag=True,
    help="Accept weights below 1 when measuring risk (as in `sdcbayes assess`).",
)
@click.option(
    "--max-levels",
    type=int,
    default=None,
    help="Largest number of levels accepted for one key when measuring risk (as in "
    "`sdcbayes assess`; guards against a continuous variable passed as a key). "
    "[default: 1000]",
)
@click.option(
    "--na-values", metavar="CODES", default=None,
    help=NA_VALUES_HELP + " The protected file keeps these codes where no step changed the "
    "cell (a -9 stays -9).",
)
@click.option("--encoding", metavar="ENC", default=None, help=ENCODING_HELP)
@click.option(
    "--out",
    type=click.Path(path_type=Path),  # a file: refused by check_out_dir, fix named
    default=Path("sdcbayes-protect"),
    show_default=True,
    help="Output folder: the protected file, log.csv, summary.json, report.html, and "
    "with PRAM pram_matrices.csv (its transition matrices).",
)
@click.option(
    "--model",
    type=click.Choice(["closed-form", "latent-class"]),
    default="closed-form",
    show_default=True,
    help="Risk model of the before and after numbers. closed-form: Benedetti-Franconi's "
    "plug-in, as sdcMicro and mu-Argus report it (it understates a sample's risk). "
    "latent-class: the model `sdcbayes assess` fits by default, fitted once on the input "
    "(needs --weight; missing key values need --missing); the protected file is scored from "
    "the same draws, a blanked value matching every level and a recoded one every input "
    "level it merges, and the closed form is reported beside it. It takes steps that blank "
    "key values (suppress, suppress_risk), that recode them level by level (recode, band, "
    "top_code, bottom_code) and steps on other columns; PRAM, Nayak-Zhang PRAM, "
    "micro-aggregation, noise, swapping (--swap) or rank swapping (--rank-swap) of a key, and "
    "a step that changes the weights, are refused.",
)
@closed_form_method_option(
    "The closed-form risk's formula: " + CLOSED_FORM_METHOD_HELP + " It sets the risk before "
    "and after and the risk --suppress-risk (a recipe's suppress_risk steps) reads: approx "
    "blanks the records sdcMicro's localSupp blanks. With --model latent-class it sets only "
    "the closed form kept beside the model's risk (summary.json's risk.closed_form) and "
    "the suppress_risk steps' risk.",
    name="risk_method",
)
@click.option(
    "--missing",
    type=click.Choice(["category", "drop"]),
    default=None,
    help="With --model latent-class: how its fit reads the input's missing key values. "
    "category: 'missing' is a level of its own (a value the steps blank still matches "
    "every level); drop: those records are left out of the fit and of its risk (the kept "
    "records' weights stand for them). Without it, missing key values are refused under "
    "--model latent-class. The closed-form numbers, also those beside the model, keep "
    "sdcMicro's reading: a missing value matches every value.",
)
@click.option(
    "--draws", type=int, default=None,
    help="With --model latent-class: draws kept per chain [default: 500, as assess].",
)
@click.option(
    "--chains", type=int, default=None,
    help="With --model latent-class: independent chains [default: 4, as assess].",
)
@click.option(
    "--tune", type=int, default=None,
    help="With --model latent-class: burn-in sweeps per chain, discarded [default: 2000, "
    "as assess].",
)
@click.option(
    "--cores", type=int, default=None,
    help="With --model latent-class: chains run at once (threads), default all CPUs up to "
    "--chains; the draws do not depend on it.",
)
@click.option(
    "--structural-zeros", metavar="none|RULES.json", default=None,
    help="With --model latent-class: key combinations that cannot occur in the population, "
    "as `sdcbayes assess --structural-zeros` takes them: RULES.json, a file holding a list "
    "of confirmed rules, each forbidding the cells whose level on every key it names is "
    "among the levels given, or, with {\"not\": [...]}, any level but those, e.g. "
    "[{\"age\": [\"1\"], \"occupation\": {\"not\": [\"X\"]}}] (levels as the data write "
    "them); the fit and the risk after count no population in them (summary.json: "
    "risk.fit.structural_zero_rules). [default: none] 'auto' (assess's rules read off the "
    "sample, unconfirmed) is refused: give the rules you have confirmed.",
)
@click.option("--quiet", "-q", is_flag=True, help=QUIET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
def command(
    data: Path,
    keys: str,
    recipe: Path | None,
    recodes: tuple[str, ...],
    suppress_k: int | None,
    importance: str | None,
    suppress_method: str | None,
    suppress_risk: float | None,
    suppress_risk_key: str | None,
    linked: tuple[str, ...],
    pram_cols: str | None,
    pram_pd: float,
    nayak_zhang_xi: float | None,
    mdav_cols: str | None,
    mdav_k: int,
    noise_cols: str | None,
    noise_level: float,
    seed: int | None,
    weight: str | None,
    out: Path,
    quiet: bool,
    as_json: bool,
    strata: str | None = None,
    allow_weights_below_one: bool = False,
    max_levels: int | None = None,
    na_values: str | None = None,
    microaggregate_method: str | None = None,
    microaggregate_varsort: str | None = None,
    microaggregate_measure: str | None = None,
    microaggregate_trim: float | None = None,
    model: str = "closed-form",
    draws: int | None = None,
    chains: int | None = None,
    tune: int | None = None,
    cores: int | None = None,
    missing: str | None = None,
    structural_zeros: str | None = None,
    household: str | None = None,
    household_keys: str | None = None,
    swap: str | None = None,
    swap_similar: tuple[str, ...] = (),
    swap_rate: float = 0.05,
    swap_k: int = 3,
    swap_carry_along: str | None = None,
    swap_risk_variables: str | None = None,
    sensitive: str | None = None,
    l_diversity_c: float | None = None,
    interval_k: float = DEFAULT_INTERVAL_K,
    rank_swap: str | None = None,
    rank_swap_p: float | None = None,
    rank_swap_r0: float | None = None,
    rank_swap_k0: float | None = None,
    rank_swap_top: float = RANK_SWAP_GROUP_PERCENT,
    rank_swap_bottom: float = RANK_SWAP_GROUP_PERCENT,
    noise_method: str | None = None,
    noise_delta: float | None = None,
    noise_p: float | None = None,
    shuffle: str | None = None,
    shuffle_by: str | None = None,
    shuffle_method: str = "ds",
    shuffle_cov: str = "spearman",
    encoding: str | None = None,
    risk_method: str = "exact",
) -> None:
    """Protect a microdata file and compare disclosure risk before and after.

    DATA is a CSV (.csv, .csv.gz, .tsv), Parquet (.parquet, .pq), SPSS (.sav, .zsav,
    .por), Stata (.dta) or SAS (.sas7bdat, .xpt) file. The protected file is written in
    the same format (SAS .sas7bdat input is written as Parquet, since SAS files cannot
    be written). Steps given as options run in
    the order recode, record swapping, suppression, risk-threshold suppression, PRAM,
    Nayak-Zhang PRAM, micro-aggregation, rank swapping, noise; a recipe runs its steps in its
    own order.
    """
    from sdcbayes.microdata import _extension

    # ---- every check before any work ----------------------------------------------
    key_list = split_names(keys)
    if not key_list:
        raise InputError("--keys is empty: name the key variables, e.g. --keys age,sex,region")
    # --sensitive's names and --l-diversity-c (assess's checks), before the file is read
    from sdcbayes.cli import check_sensitive_options

    sensitive_names, ldiv_c = check_sensitive_options(sensitive, l_diversity_c)
    _check_interval_k(interval_k)
    # the model's options (cheap) before the file is read
    sampler = _sampler_options(model, weight, draws=draws, chains=chains, tune=tune,
                               cores=cores, missing=missing, structural_zeros=structural_zeros)
    from sdcbayes.cli import structural_zeros_file

    rules_file = None if structural_zeros is None else structural_zeros_file(structural_zeros)
    out_files = ["summary.json", _output_name(_extension(data))[0], "log.csv", "report.html"]
    out_inputs = {"DATA": data, "--recipe": recipe, "--structural-zeros": rules_file}
    check_out_dir(out, writes=out_files, inputs=out_inputs, command="protect")
    codec = parse_encoding(encoding, data)
    zero_rules = None
    if rules_file is not None:  # the rules' form now; their keys and levels once read
        from sdcbayes.cli import read_structural_zero_rules

        zero_rules = read_structural_zero_rules(rules_file, "--structural-zeros",
                                                none="--structural-zeros none")
    if recipe is not None and household_keys is not None:  # said before the option's needs
        raise InputError(
            "--household-keys applies to the step options; in a recipe give "
            "\"household_keys\" inside the suppress and suppress_risk steps")
    flag_steps = _steps_from_options(
        recodes, suppress_k, importance, pram_cols, pram_pd, nayak_zhang_xi,
        mdav_cols, mdav_k, noise_cols, noise_level, strata, suppress_method=suppress_method,
        microaggregate_method=microaggregate_method, suppress_risk=suppress_risk,
        microaggregate_varsort=microaggregate_varsort,
        microaggregate_measure=microaggregate_measure,
        microaggregate_trim=microaggregate_trim,
        suppress_risk_key=suppress_risk_key, linked=linked, household_keys=household_keys,
        household=household, swap=swap, swap_similar=swap_similar, swap_rate=swap_rate,
        swap_k=swap_k, swap_carry_along=swap_carry_along,
        swap_risk_variables=swap_risk_variables, rank_swap=rank_swap,
        rank_swap_p=rank_swap_p, rank_swap_r0=rank_swap_r0, rank_swap_k0=rank_swap_k0,
        rank_swap_top=rank_swap_top, rank_swap_bottom=rank_swap_bottom,
        noise_method=noise_method, noise_delta=noise_delta, noise_p=noise_p,
        shuffle=shuffle, shuffle_by=shuffle_by, shuffle_method=shuffle_method,
        shuffle_cov=shuffle_cov,
    )
    if recipe is not None:
        if flag_steps:
            raise InputError(
                "give the steps either in --recipe or as options (--recode, --suppress-k, ...), "
                "not both"
            )
        if strata is not None:
            raise InputError(
                "--strata applies to the step options; in a recipe give \"strata\" inside the "
                "suppress and pram steps"
            )
        steps, recipe_seed = _read_recipe(recipe)
        if seed is None:
            seed = recipe_seed
    else:
        steps = flag_steps
    if not steps:
        raise InputError(
            "no protection step given: use --recode, --swap, --suppress-k, --suppress-risk, "
            "--pram, --nayak-zhang-xi, --microaggregate, --rank-swap, --shuffle, --noise or "
            "--recipe"
        )
    # a new value the protected CSV cannot hold in the input's encoding (AU3 B1)
    _check_new_values_encodable(steps, codec, _extension(data))
    from sdcbayes.cli import given

    if given("interval_k") and not any(s.get("step") in _NUMERIC_STEPS for s in steps):
        # as --noise-level without --noise: a setting that would be ignored is refused
        raise InputError(
            "--interval-k sets the interval risk of numeric variables that --noise, "
            "--microaggregate, --rank-swap, --shuffle or a recipe's top_code or bottom_code "
            "step changes, "
            "and no such step is given; add one or leave out --interval-k"
        )
    if any(s.get("step") == "pram" for s in steps):
        out_files.append(PRAM_MATRICES)  # known once the recipe is read: checked again
        check_out_dir(out, writes=out_files, inputs=out_inputs, command="protect")
    ext = _extension(data)
    na_codes = parse_na_values(na_values)
    from sdcbayes.cli import read_data, resolve_variables

    frame = read_data(data, quiet=quiet or as_json, na_values=na_codes, encoding=codec)
    # --keys, --weight and --household: column names or variable labels (SPSS/Stata/SAS)
    key_list, roles = resolve_variables(frame, data.name, key_list, weight=weight,
                                        household=household)
    weight, household = roles["weight"], roles["household"]
    _check_household_role(household, key_list, weight)
    sensitive_cols = None
    if sensitive_names is not None:  # resolved and checked as assess does (no records.csv)
        from sdcbayes.cli import check_sensitive_roles
        from sdcbayes.microdata import resolve_columns

        sensitive_cols = resolve_columns(frame, sensitive_names, option="--sensitive",
                                         source=data.name)
        check_sensitive_roles(sensitive_cols, key_list, roles, records_csv=False)
    # every variable named in a step, also resolved now: a typo in step 5 costs no work
    steps = [_validate_step(i, s, frame, key_list, source=data.name, weight=weight,
                            household=household)
             for i, s in enumerate(steps, start=1)]
    _check_recode_levels(steps, frame)  # a recode's unknown level costs no work either
    # --household: a key the released ids count is never blanked (before the chain check,
    # which then knows what the suppression steps blank)
    count_notes = _count_keys_as_strata(steps, frame, key_list, household)
    # --household: the input as the released ids complete it (a count key's values missing
    # in the input are the household's record count), read by the risk before and the fit
    read_in, count_keys = frame, []
    if household is not None:
        from sdcbayes.protection.suppression import household_completion, household_count_keys

        read_in = household_completion(frame, frame, key_list, household)[0]
        count_keys = household_count_keys(frame, key_list, household)
        count_notes = count_notes + _count_key_step_warnings(steps, count_keys, household)
    # each step against what the steps before it leave: a conflict costs no work either
    try:
        _check_step_chain(steps, frame)
    except InputError as e:
        # options run in a fixed order, so "put this step before that one" needs a recipe
        if "before that one" in str(e) and any(st.get("_option") for st in steps):
            raise type(e)(f"{e} (the step options run in a fixed order: to reorder the "
                          "steps, give them in a --recipe)") from e
        raise
    _check_household(steps, household)  # its ids group the records before and after
    _check_sensitive(steps, sensitive_cols)  # released as read, or PRAMmed
    ldiv = None if sensitive_cols is None else {"sensitive": sensitive_cols, "c": ldiv_c}
    risk_k = next((_risk_k_of(s) for s in reversed(steps) if s["step"] == "suppress"),
                  DEFAULT_RISK_K)
    # k-anonymity also counted as the (last) suppression step judges it: its keys and strata
    supp_i, supp = next(((i, s) for i, s in reversed(list(enumerate(steps, start=1)))
                         if s["step"] == "suppress"), (None, None))
    md_options: dict[str, Any] = {"allow_weights_below_one": allow_weights_below_one}
    if max_levels is not None:
        md_options["max_levels"] = max_levels
    # a suppress_risk step measures the risk as "before" and "after" do, on its own input
    for s in steps:
        if s["step"] == "suppress_risk":
            s["_measure"] = {"keys": key_list, "weight": weight, "options": md_options,
                             "method": risk_method}
    # records above the risk threshold are counted before and after (the last such step's)
    threshold = next((s["threshold"] for s in reversed(steps) if s["step"] == "suppress_risk"),
                     None)
    md_fit = None
    level_maps: dict[str, dict[Any, Any]] = {}
    if sampler is not None:
        # what the released-file risk refuses, before any work (not after a long fit)
        _check_released_route(steps, read_in, key_list, weight, missing=missing,
                              counted=count_keys)
        # the fit alone reads missing key values as --missing says (the closed form: wildcard)
        md_fit = _latent_class_input(
            read_in, key_list, weight, md_options | ({"missing": missing} if missing else {}),
            household=household)
        if zero_rules is not None:  # against the fit's keys and levels, before any work
            from sdcbayes.cli import check_structural_zero_rules

            zero_rules = check_structural_zero_rules(
                zero_rules, md_fit, f"--structural-zeros {rules_file}",
                named=dict(zip(split_names(keys), key_list, strict=False)))
        # each recoded key's fit level -> released value, from the levels (milliseconds);
        # a count key is scored at its exact count (the fit's levels), whatever its recode
        level_maps = _key_level_maps(steps, read_in, md_fit,
                                     [k for k in key_list if k not in count_keys])
    # The "before" assessment doubles as validation of keys and weights.
    before, input_notes = _risk(read_in, key_list, weight, risk_k, suppression=supp,
                                threshold=threshold, household=household,
                                l_diversity=ldiv, method=risk_method, **md_options)
    ldiv_before = before.pop("l_diversity", None)  # summary.json's risk.before, both models
    # a step that will run for long says so before it starts (the input is valid by now);
    # so do the input's own caveats (Microdata's: a key writing one number two ways, ...)
    early = (input_notes + count_notes + _mdav_cost_warnings(steps, len(frame))
             + _weight_warnings(steps, weight) + _constant_column_warnings(steps, frame))
    for msg in early:  # on stderr also under --quiet and --json, as the others
        click.echo(f"sdcbayes: warning: {msg}", err=True)

    # ---- work ------------------------------------------------------------------------
    import numpy as np

    seed = seed_or_drawn(seed)  # stamped in summary.json: --seed with it repeats the run
    rng = np.random.default_rng(seed)
    current = frame
    logs, step_summaries, touched, numeric = [], [], [], []
    pram_tables = []  # each PRAM step's matrices, long form, for pram_matrices.csv
    # per PRAM step of a key: its keep probabilities (risk after, Shlomo-Skinner); per swap
    # step of a key: the records whose key values it changed (non-matching after)
    key_keeps = []
    for i, step in enumerate(steps, start=1):
        try:
            res = _run_step(step, current, rng)
        except InputError as e:  # what slipped through the checks: name the step, not the file
            raise type(e)(f"step {i} ({step['step']}): {e}") from e
        if step["step"] in ("pram", "nayak_zhang", "swap"):
            key_keeps += _key_keep_probabilities(i, step, current, res, key_list)
        logs.append(_tag_log(res.log, i, step["step"]))
        # the steps draw from the run's one stream (its seed is the summary's): a step's
        # own "seed" (None for a Generator) would read as an unseeded step
        result = {k: v for k, v in res.summary.items() if k != "seed"}
        if step["step"] == "pram":  # strata x L x L numbers: a file of their own
            result, table = _pram_matrices(i, step, current, result)
            pram_tables.append(table)
        current = res.frame
        step_summaries.append({"step": i, "name": step["step"], "parameters": _params(step),
                               "result": _jsonable(result)})
        touched += [c for c in _columns_of(step) if c not in touched]
        if step["step"] in _NUMERIC_STEPS:
            numeric += [c for c in _columns_of(step) if c not in numeric]
    # with the household ids released, the blanks a mate shows or the household's record
    # count gives hide nothing: the risk after scores the file as an intruder completes it
    # (the file written, log.csv and the information loss keep `current`)
    scored, filled = current, None
    if household is not None:
        from sdcbayes.protection.suppression import household_completion

        scored, filled = household_completion(frame, current, key_list, household)
    # PRAM or a swap of a key: the risk after is misclassification-adjusted (None without);
    # a swapped key's blanks are read on the frame the risk after scores (a mate may show it)
    keep, misclassification = _misclassification(steps, key_keeps, current, exact=count_keys,
                                                 shown=scored)
    # a swap of a key: the records' risks are counted on their pre-swap cells (None without)
    pre_swap = _pre_swap_counts(key_keeps, scored, misclassification, exact=count_keys)
    try:
        # l-diversity on the frame the risk after reads (with --household the completed
        # one): the cells an intruder groups the released records into. The input's
        # caveat of a key writing one number two ways was said about the input: not again
        # with the protected file's counts (_without_split_numbers)
        after, after_notes = _risk(_without_split_numbers(scored), key_list, weight, risk_k,
                                   suppression=supp,
                                   threshold=threshold, household=household,
                                   l_diversity=ldiv, keep=keep, method=risk_method,
                                   frequencies=None if pre_swap is None
                                   else _without_split_numbers(pre_swap), **md_options)
    except InputError as e:  # the input passed "before": the steps made these values
        raise type(e)(f"after the steps, the protected file: {e}"
                      + _weight_blame(steps, weight)) from e
    ldiv_after = after.pop("l_diversity", None)
    if misclassification is not None:
        after["misclassification"] = misclassification | after.pop("misclassification", {})
    # the protected file's caveats the input did not already have (said once)
    warned = early + [n for n in after_notes if n not in input_notes] + \
        _continuous_key_warnings(steps, key_list) + _restr_warnings(steps) \
        + _suppression_warnings(steps, step_summaries) \
        + _swap_rate_warnings(steps, step_summaries) \
        + _rank_swap_warnings(steps, step_summaries) \
        + _shuffle_warnings(steps, step_summaries) \
        + _household_mates_warnings(frame, current, key_list, household, filled) \
        + _household_count_warnings(frame, current, key_list, household)
    fit = released = None
    if md_fit is not None:
        # fitted once, on the input (the original): "before" is its assessment, "after"
        # scores the protected file from the same draws. Fitted only now, after the steps
        # and their checks, so a refusal there costs no fit; the numbers are those of a fit
        # before the steps, since the fit (its own seed) and the steps (rng) share no stream.
        fit = _fit_latent_class(md_fit, sampler, seed, quiet=quiet or as_json,
                                structural_zeros=zero_rules)
        released = _score_released(md_fit, scored, fit, recodes=level_maps,
                                   quiet=quiet or as_json, seed=seed)
    completion = None if filled is None else _completion_summary(filled)
    risk_notes = _k_anonymity_notes(steps, supp_i, after, risk_k,
                                    completed=0 if completion is None else completion["total"]) + \
        _swap_unseen_notes(steps, key_list) + (
        _estimator_notes(weight, risk_method) if fit is None
        else _latent_class_notes(recoded=bool(level_maps), missing=missing,
                                 household=household))
    loss = _information_loss(frame, current, touched, numeric)
    numeric_risk = None
    if loss.get("il1_columns"):  # the numeric variables a numeric step changed
        numeric_risk, numeric_notes = _numeric_risk(frame, current, loss["il1_columns"],
                                                    interval_k)
        risk_notes = risk_notes + numeric_notes

    from sdcbayes._version import __version__
    from sdcbayes.provenance import stamp

    out_name, out_note = _output_name(ext)
    summary: dict[str, Any] = {
        "command": "protect",
        "sdcbayes_version": __version__,
        "data": str(data),
        "protected_file": out_name,
        "output_files": out_files,  # previous_outputs reads it
        "keys": key_list,
        "weight": weight,
        "household": household,
        "seed": seed,
        "steps": step_summaries,
        "risk": ({"estimator": RISK_ESTIMATORS[risk_method], "k": risk_k, "before": before,
                  "after": after}
                 if fit is None else _latent_class_risk(
                     fit, released, before, after, risk_k, sampler, seed, recodes=level_maps,
                     missing=missing, closed_form_method=risk_method,
                     structural_zeros=None if zero_rules is None else (rules_file, zero_rules)))
        | ({"threshold": threshold} if threshold is not None else {})
        | ({"household_completion": completion} if completion is not None else {})
        | ({"suppression_keys": supp["keys"], "suppression_strata": supp.get("strata")}
           if supp is not None else {})
        | ({"numeric": numeric_risk} if numeric_risk is not None else {})
        | ({"notes": risk_notes} if supp is not None or risk_notes else {}),
        "warnings": warned,
        "information_loss": loss,
    }
    if ldiv is not None:
        # assess --sensitive's block, of the input and of the protected file (either model)
        summary["risk"]["before"]["l_diversity"] = ldiv_before
        summary["risk"]["after"]["l_diversity"] = ldiv_after
    if out_note:
        summary["note"] = out_note
    if fit is not None:
        # the fit's problems and caveats were printed by the fit (as `assess` prints them);
        # summary.json keeps the caveats here, its convergence problems under diagnostics
        summary["warnings"] = [*warned, *fit.summary.get("warnings", [])]
    step_settings = {"steps": [_params(s) | {"step": s["step"]} for s in steps], "seed": seed}
    # --method, as assess stamps it (settings.method); under latent-class "method" is the
    # fit's sampler, so the closed form's is closed_form_method there
    step_settings["method" if fit is None else "closed_form_method"] = risk_method
    summary["provenance"] = stamp(
        "closed-form" if fit is None else "latent-class",
        # the fit's own stamp (as `assess` stamps it) beside the steps
        priors=None if fit is None else fit.provenance.get("priors"),
        settings=step_settings if fit is None else {
            **(fit.provenance.get("settings") or {}), **step_settings,
            "top_cells": released.summary["top_cells"]}
        | ({"recoded_keys": _recode_counts(level_maps)} if level_maps else {}),
        data_summary={
            "n_records": int(len(frame)), "keys": key_list,
            "key_levels": {str(k): int(frame[k].nunique(dropna=True)) for k in key_list},
            "weight": weight,
            "sum_weights": None if weight is None else float(frame[weight].sum()),
            "missing": "wildcard (a missing key value matches every value)"
            + (f"; the latent-class fit: {missing} ({MISSING_READING[missing]})"
               if fit is not None and missing else ""),
            # the input's (the protected file's are in risk.after)
            "n_cells": before["n_cells"],
            "n_missing_key_records": before["n_missing_key_records"],
        } | ({"household": household, "n_households": before["n_households"]}
             if household is not None else {}),
        input_file=data,
    )
    if na_codes is not None:
        summary["provenance"]["input"]["na_values"] = na_codes
    if codec is not None:  # the protected CSV is written back in it too
        summary["provenance"]["input"]["encoding"] = codec
    if ldiv is not None:  # as assess stamps them: beside the keys, beside the settings
        prov = summary["provenance"]
        prov["data"] = {**(prov.get("data") or {}), "sensitive": list(sensitive_cols)}
        prov["settings"] = {**(prov.get("settings") or {}), "l_diversity_c": ldiv_c}
    if fit is not None:
        from sdcbayes.cli import cli_worded_summary

        cli_worded_summary(summary)  # problems and warnings as the terminal printed them
    log = _log_integers(_concat_logs(logs), _integer_columns(frame, data, ext, codec))

    from sdcbayes.report import protection_report

    html = protection_report(summary)
    write_output_folder(
        out,
        {
            "summary.json": lambda p: write_json(p, summary),
            out_name: lambda p: _write_protected(p, current, data, ext, original=frame,
                                                 na_values=na_codes, encoding=codec),
            "log.csv": lambda p: log.to_csv(p, index=False),  # codes as the input has them
            "report.html": lambda p: p.write_text(html, encoding="utf-8"),
        }
        | ({PRAM_MATRICES: lambda p: write_csv(p, _concat_pram_tables(pram_tables))}
           if pram_tables else {}),
    )
    for msg in warned[len(early):]:  # on stderr also under --quiet and --json, as `assess`
        click.echo(f"sdcbayes: warning: {msg}", err=True)  # does (the early ones are out)
    if as_json:
        click.echo(json.dumps(nan_to_none(summary), indent=2, default=json_default))
    elif not quiet:
        _print_summary(summary, out)


# --------------------------------------------------------------------------- steps
def _steps_from_options(recodes, suppress_k, importance, pram_cols, pram_pd, xi, mdav_cols,
                        mdav_k, noise_cols, noise_level, strata=None,
                        suppress_method=None,
                        microaggregate_method=None, suppress_risk=None,
                        microaggregate_varsort=None, microaggregate_measure=None,
                        microaggregate_trim=None, suppress_risk_key=None, linked=(),
                        household_keys=None,
                        household=None, swap=None, swap_similar=(), swap_rate=0.05,
                        swap_k=3, swap_carry_along=None,
                        swap_risk_variables=None, rank_swap=None, rank_swap_p=None,
                        rank_swap_r0=None, rank_swap_k0=None,
                        rank_swap_top=RANK_SWAP_GROUP_PERCENT,
                        rank_swap_bottom=RANK_SWAP_GROUP_PERCENT, shuffle=None,
                        shuffle_by=None, shuffle_method="ds",
                        shuffle_cov="spearman", noise_method=None, noise_delta=None,
                        noise_p=None) -> list[dict[str, Any]]:
    """The option steps in the fixed workflow order (module docstring).

    Each step records in ``_option`` the option that named its variables, so that
    an unknown name is reported as ``--pram 'x' ...``, not as a recipe's step.
    """
    steps: list[dict[str, Any]] = []
    strata_list = split_names(strata)
    if strata is not None and not strata_list:
        raise InputError("--strata is empty: name the stratum variables, e.g. --strata region")
    if strata_list and suppress_k is None and pram_cols is None:
        raise InputError("--strata applies to local suppression and PRAM; add --suppress-k K "
                         "or --pram COLUMNS")
    for spec in recodes:
        col, sep, rest = spec.partition(":")
        olds, eq, new = rest.rpartition("=")
        old_list = [o for o in olds.split("+") if o != ""]
        if not sep or not col or not eq or not old_list or new == "":
            raise InputError(
                f"--recode {spec!r} must read COL:OLD1+OLD2=NEW, e.g. --recode age:20s+30s=20-39"
            )
        # the mapping splits OLD at every "+" for now; once the column's levels are known
        # (_settle_recode) the split that names levels is taken, as a level may hold "+"
        steps.append({"step": "recode", "column": col, "mapping": {o: new for o in old_list},
                      "_from_text": True, "_option": "--recode", "_olds": olds})
    if importance is not None and suppress_k is None:
        raise InputError("--importance ranks keys for local suppression; add --suppress-k K")
    if microaggregate_method is not None and mdav_cols is None:
        raise InputError("--microaggregate-method chooses how --microaggregate groups; add "
                         "--microaggregate COLUMNS")
    if suppress_method is not None and suppress_k is None:
        raise InputError("--suppress-method chooses the local suppression algorithm; add "
                         "--suppress-k K")
    if suppress_risk_key is not None and suppress_risk is None:
        raise InputError("--suppress-risk-key chooses the key --suppress-risk blanks; add "
                         "--suppress-risk R")
    links = _parse_linked(linked)
    if links and suppress_k is None and suppress_risk is None:
        raise InputError("--linked follows the blanks of a local suppression; add "
                         "--suppress-k K or --suppress-risk R")
    hh_keys = _parse_household_keys(household_keys, household, suppress_k is not None
                                    or suppress_risk is not None)
    # a setting given without its step would be ignored, yet stamped in the provenance's
    # command line as if it had taken effect (defaults are fine: only explicit values)
    from sdcbayes.cli import given

    for param, option, step_cols, step_option, recipe_param in (
        ("swap_rate", "--swap-rate", swap, "--swap GEO1,GEO2", "swap_rate"),
        ("swap_k", "--swap-k", swap, "--swap GEO1,GEO2", "k"),
        ("pram_pd", "--pram-pd", pram_cols, "--pram COLUMNS", "pd"),
        ("mdav_k", "--mdav-k", mdav_cols, "--microaggregate COLUMNS", "k"),
        ("microaggregate_varsort", "--microaggregate-varsort", mdav_cols,
         "--microaggregate COLUMNS", "varsort"),
        ("microaggregate_measure", "--microaggregate-measure", mdav_cols,
         "--microaggregate COLUMNS", "aggregate"),
        ("microaggregate_trim", "--microaggregate-trim", mdav_cols,
         "--microaggregate COLUMNS", "trim"),
        ("noise_level", "--noise-level", noise_cols, "--noise COLUMNS", "level"),
        ("noise_method", "--noise-method", noise_cols, "--noise COLUMNS", "method"),
        ("noise_delta", "--noise-delta", noise_cols, "--noise COLUMNS", "delta"),
        ("noise_p", "--noise-p", noise_cols, "--noise COLUMNS", "p"),
        ("rank_swap_p", "--rank-swap-p", rank_swap, "--rank-swap COLUMNS", "p"),
        ("rank_swap_r0", "--rank-swap-r0", rank_swap, "--rank-swap COLUMNS", "r0"),
        ("rank_swap_k0", "--rank-swap-k0", rank_swap, "--rank-swap COLUMNS", "k0"),
        ("rank_swap_top", "--rank-swap-top", rank_swap, "--rank-swap COLUMNS", "top_percent"),
        ("rank_swap_bottom", "--rank-swap-bottom", rank_swap, "--rank-swap COLUMNS",
         "bottom_percent"),
        ("shuffle_by", "--shuffle-by", shuffle, "--shuffle COLUMNS", "predictors"),
        ("shuffle_method", "--shuffle-method", shuffle, "--shuffle COLUMNS", "method"),
        ("shuffle_cov", "--shuffle-cov", shuffle, "--shuffle COLUMNS", "covmethod"),
    ):
        if step_cols is None and given(param):
            raise InputError(
                f"{option} is a setting of {step_option.split()[0]}, which is not given; add "
                f"{step_option} or leave out {option} (in a recipe, give \"{recipe_param}\" "
                "inside the step)"
            )
    swap_step = _swap_step_from_options(swap, swap_similar, swap_rate, swap_k,
                                        swap_carry_along, household,
                                        risk_variables=swap_risk_variables)
    if swap_step is not None:  # the census order: swap (perturb), then suppress (k-anonymity)
        steps.append(swap_step)
    if suppress_k is not None:
        step: dict[str, Any] = {"step": "suppress", "k": suppress_k, "_option": "--suppress-k"}
        if importance is not None:
            step["importance"] = _parse_importance(importance)
        if suppress_method is not None:
            step["method"] = suppress_method
        if strata_list:
            step["strata"] = strata_list
        if links:
            step["linked"] = links
        if hh_keys is not None:
            step["household_keys"] = hh_keys
        steps.append(step)
    if suppress_risk is not None:
        step = {"step": "suppress_risk", "threshold": suppress_risk,
                "_option": "--suppress-risk"}
        if suppress_risk_key is not None:
            step["key"] = suppress_risk_key
        if links:
            step["linked"] = links
        if hh_keys is not None:
            step["household_keys"] = hh_keys
        steps.append(step)
    if pram_cols is not None:
        step = {"step": "pram", "columns": split_names(pram_cols) or [], "pd": pram_pd,
                "_option": "--pram"}
        if strata_list:
            step["strata"] = strata_list
        steps.append(step)
    if xi is not None:
        steps.append({"step": "nayak_zhang", "xi": xi, "_option": "--nayak-zhang-xi"})
    if mdav_cols is not None:
        step = {"step": "microaggregate", "columns": split_names(mdav_cols) or [],
                "k": mdav_k, "_option": "--microaggregate"}
        if microaggregate_method is not None:
            step["method"] = microaggregate_method
        step |= {param: v for param, v in (("varsort", microaggregate_varsort),
                                           ("aggregate", microaggregate_measure),
                                           ("trim", microaggregate_trim)) if v is not None}
        steps.append(step)
    if rank_swap is not None:
        # after micro-aggregation, before noise (module docstring)
        ranges = [(o, v) for o, v in (("--rank-swap-p", rank_swap_p),
                                      ("--rank-swap-r0", rank_swap_r0),
                                      ("--rank-swap-k0", rank_swap_k0)) if v is not None]
        if len(ranges) > 1:
            raise InputError(
                f"{' and '.join(o for o, _ in ranges)} are "
                f"{'both' if len(ranges) == 2 else 'all'} given; give one of "
                "--rank-swap-p, --rank-swap-r0 and --rank-swap-k0 (three ways of setting the "
                "same rank range, as in sdcMicro's rankSwap; none: r0 0.95)")
        step = {"step": "rank_swap", "columns": split_names(rank_swap) or [],
                "top_percent": rank_swap_top, "bottom_percent": rank_swap_bottom,
                "_option": "--rank-swap"}
        step |= {param: v for param, v in (("p", rank_swap_p), ("r0", rank_swap_r0),
                                           ("k0", rank_swap_k0)) if v is not None}
        steps.append(step)
    if shuffle is not None:
        # with rank swapping (values reassigned between records), before noise
        if shuffle_by is None:
            raise InputError(
                "--shuffle needs --shuffle-by: the predictors the shuffle conditions on, "
                "e.g. --shuffle income,expenses --shuffle-by age,sex")
        steps.append({"step": "shuffle", "columns": split_names(shuffle) or [],
                      "predictors": split_names(shuffle_by) or [], "method": shuffle_method,
                      "covmethod": shuffle_cov, "_option": "--shuffle"})
    if noise_cols is not None:
        if noise_method in ("correlated2", "ROMM") and given("noise_level"):
            raise InputError(
                f"--noise-level is not used by --noise-method {noise_method} (sdcMicro's "
                f"{noise_method} ignores its noise); leave it out"
                + (" (--noise-delta sets correlated2's noise)" if noise_method == "correlated2"
                   else " (--noise-p sets ROMM's perturbation)"))
        step = {"step": "noise", "columns": split_names(noise_cols) or [],
                "level": noise_level, "_option": "--noise"}
        # only what was given: the step's validation refuses a delta or p the method
        # would ignore, and reports them under their options' names
        step |= {param: v for param, v in (("method", noise_method), ("delta", noise_delta),
                                           ("p", noise_p)) if v is not None}
        steps.append(step)
    return steps


def _swap_step_from_options(swap, similar, rate, k, carry_along, household,
                            risk_variables=None) -> dict[str, Any] | None:
    """``--swap`` and its settings as a ``swap`` step; None without ``--swap``.

    ``--swap-similar`` is required (a donor of any household size would change every
    unit's numbers of persons); each ``--swap-similar`` is one similarity profile, tried
    in the order given. Settings without ``--swap``, and ``--swap`` without
    ``--household``, are refused (one line, before the file is read).
    """
    if swap is None:
        for option, value in (("--swap-similar", similar), ("--swap-carry-along", carry_along),
                              ("--swap-risk-variables", risk_variables)):
            if value:
                raise InputError(f"{option} is a setting of --swap, which is not given; add "
                                 f"--swap GEO1,GEO2 or leave out {option}")
        return None
    hierarchy = split_names(swap)
    if not hierarchy:
        raise InputError("--swap is empty: name the geographic columns, coarse to fine, e.g. "
                         "--swap region,district")
    if household is None:
        raise InputError("--swap exchanges the geography of whole households; add --household "
                         "COL (the household id column)")
    profiles = [split_names(p) for p in similar]
    if not profiles or not all(profiles):
        raise InputError(
            "--swap needs --swap-similar COLS: the household-level columns a donor household "
            "must share, e.g. --swap-similar household_size")
    step: dict[str, Any] = {"step": "swap", "hierarchy": hierarchy,
                            "similar": profiles[0] if len(profiles) == 1 else profiles,
                            "swap_rate": rate, "k": k, "_option": "--swap"}
    if carry_along is not None:
        cols = split_names(carry_along)
        if not cols:
            raise InputError("--swap-carry-along is empty: name the columns, e.g. "
                             "--swap-carry-along district_code")
        step["carry_along"] = cols
    if risk_variables is not None:
        cols = split_names(risk_variables)
        if not cols:
            raise InputError("--swap-risk-variables is empty: name the person-level columns "
                             "counted within a unit, e.g. --swap-risk-variables age_group,sex")
        step["risk_variables"] = cols
    return step


def _parse_linked(specs) -> dict[str, list[str]]:
    """``("region=district,subdistrict", ...)`` -> ``{"region": ["district", "subdistrict"]}``."""
    out: dict[str, list[str]] = {}
    for spec in specs or ():
        key, eq, cols = spec.partition("=")
        names = split_names(cols) or []
        if not eq or not key.strip() or not names:
            raise InputError(
                f"--linked {spec!r} must read KEY=COL1,COL2 (the columns that depend on the "
                "key), e.g. --linked region=district"
            )
        out.setdefault(key.strip(), [])
        out[key.strip()] += [c for c in names if c not in out[key.strip()]]
    return out


def _parse_household_keys(text: str | None, household: str | None, suppression: bool):
    """``--household-keys``: ``"auto"`` or a list of names; refused without its companions.

    It needs ``--household`` (the ids the keys are kept consistent within) and a
    suppression step (whose blanks it spreads); the names are resolved with the step.
    """
    if text is None:
        return None
    if household is None:
        raise InputError("--household-keys keeps keys consistent within the households of "
                         "--household; add --household COL (the household id column)")
    if not suppression:
        raise InputError("--household-keys spreads the blanks of a local suppression to "
                         "household mates; add --suppress-k K or --suppress-risk R")
    if text.strip() == "auto":
        return "auto"
    names = split_names(text)
    if not names:
        raise InputError("--household-keys is empty: give auto or the keys, e.g. "
                         "--household-keys household_size")
    return names


def _parse_importance(text: str):
    """``"age=3,sex=1"`` -> ``{"age": 3.0, "sex": 1.0}``; ``"3,1"`` -> ``[3.0, 1.0]``."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        if all("=" in p for p in parts):
            return {k.strip(): float(v) for k, v in (p.split("=", 1) for p in parts)}
        if not any("=" in p for p in parts):
            return [float(p) for p in parts]
    except ValueError:
        pass
    raise InputError(
        f"--importance {text!r} must be KEY=RANK pairs (age=3,sex=1) or ranks in the order of "
        "--keys (3,1); 1 = most important"
    )


def _read_recipe(path: Path) -> tuple[list[dict[str, Any]], int | None]:
    """Steps (and seed) of a JSON or YAML recipe."""
    if not path.exists():
        raise InputError(f"recipe file not found: '{path}'; check the path")
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise InputError(
                f"reading the YAML recipe {path.name} needs the PyYAML package "
                "(pip install 'sdcbayes[yaml]'); or write the recipe as JSON (RECIPE.json)"
            ) from None
        try:
            content = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise InputError(
                f"recipe {path.name} is not valid YAML: {' '.join(str(e).split())}"
            ) from None
    elif suffix == ".json":
        try:
            content = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(
                f"recipe {path.name} is not valid JSON: {e.msg} at line {e.lineno}, "
                f"column {e.colno}"
            ) from None
    else:
        raise InputError(
            f"recipe {path.name}: unknown file type {suffix or '(none)'}; use .json (or .yaml "
            "with PyYAML installed)"
        )
    seed = None
    if isinstance(content, dict):
        unknown = sorted(set(content) - {"steps", "seed"})
        if unknown:
            raise InputError(
                f"recipe {path.name}: unknown entries {unknown}; a recipe has 'steps' (a list) "
                "and optionally 'seed'"
            )
        seed = content.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)
                                 or seed < 0):
            # NumPy's generators take no negative seed (as --seed, which is >= 0)
            raise InputError(f"recipe {path.name}: seed must be a whole number >= 0; "
                             f"got {seed!r}")
        content = content.get("steps")
    if not isinstance(content, list) or not content:
        raise InputError(
            f"recipe {path.name} must hold a non-empty list of steps, e.g. "
            '{"steps": [{"step": "suppress", "k": 3}]}'
        )
    steps = []
    for i, s in enumerate(content, start=1):
        if not isinstance(s, dict) or "step" not in s:
            raise InputError(
                f"recipe {path.name}: step {i} must be a mapping with a 'step' name, e.g. "
                '{"step": "suppress", "k": 3}'
            )
        internal = [k for k in s if k in _INTERNAL]
        if internal:  # reserved for steps built from options
            raise InputError(f"recipe {path.name}: step {i}: unknown parameter(s) {internal}")
        s = dict(s)
        if s.get("step") == "pram" and isinstance(s.get("matrices"), str):
            # a matrices file beside the recipe: read from the recipe's folder
            s["matrices"] = str(path.parent / s["matrices"])
        steps.append(s)
    return steps, seed


def _validate_step(i: int, step: dict[str, Any], frame, keys: list[str],
                   source: str | None = None, weight: str | None = None,
                   household: str | None = None) -> dict[str, Any]:
    """Check one step's name, parameters, columns and numbers; fill defaults.

    Every variable the step names (``column``, ``columns``, ``keys``, ``strata``,
    the keys of an ``importance`` mapping) may be a column name or a variable
    label; the returned step holds column names
    (:func:`sdcbayes.microdata.resolve_columns`, whose one-line error names the
    unknown name, close matches and the option or recipe entry it came from).
    ``keys`` (the resolved ``--keys``) is the default of ``keys``, and the keys a
    ``suppress_risk`` step measures the risk on; ``weight`` (the resolved
    ``--weight``) may not be a ``linked`` column; ``household`` (the resolved
    ``--household``) is what a ``household_keys`` parameter needs.
    """
    from sdcbayes.microdata import resolve_columns

    name = step.get("step")
    where = f"step {i} ({name})"
    if name not in STEPS:
        raise InputError(
            f"step {i}: unknown step {name!r}; valid steps are {', '.join(STEPS)}"
        )
    required, optional = STEPS[name]
    from_option = step.get("_option")

    def resolve(param: str, names: list[str]) -> list[str]:
        # How the user wrote the name: the option (--pram, --strata, ...) or the recipe entry.
        if from_option is None:
            how = f"{where} {param}"
        else:
            how = {"strata": "--strata", "importance": "--importance", "linked": "--linked",
                   "key": "--suppress-risk-key", "household_keys": "--household-keys",
                   "similar": "--swap-similar",
                   "carry_along": "--swap-carry-along",
                   "risk_variables": "--swap-risk-variables",
                   "predictors": "--shuffle-by"}.get(param, from_option)
        return resolve_columns(frame, names, option=how, source=source)

    given = {k for k in step if k != "step" and k not in _INTERNAL}
    unknown = sorted(given - set(required) - set(optional))
    missing = [p for p in required if p not in step]
    if unknown or missing:
        raise InputError(
            f"{where}: "
            + (f"unknown parameter(s) {unknown}" if unknown else "")
            + ("; " if unknown and missing else "")
            + (f"missing parameter(s) {missing}" if missing else "")
            + f"; it takes {list(required)} and optionally {list(optional)}"
        )
    s = dict(step)
    if "column" in s:
        if not isinstance(s["column"], str):
            raise InputError(f"{where}: column must be one column name; got {s['column']!r}")
        s["column"] = resolve("column", [s["column"]])[0]
    if "columns" in s:
        v = s["columns"]
        v = split_names(v) if isinstance(v, str) else v
        if not isinstance(v, list) or not v or not all(isinstance(c, str) for c in v):
            raise InputError(f"{where}: columns must be a non-empty list of column names")
        s["columns"] = resolve("columns", v)
    for opt in ("keys", "strata", "predictors"):
        if opt in s:
            v = split_names(s[opt]) if isinstance(s[opt], str) else s[opt]
            if not isinstance(v, list) or not v or not all(isinstance(c, str) for c in v):
                raise InputError(f"{where}: {opt} must be a non-empty list of column names")
            s[opt] = resolve(opt, v)
    if name in ("suppress", "nayak_zhang"):
        s.setdefault("keys", list(keys))
    if name == "suppress_risk":
        if "key" in s:
            if not isinstance(s["key"], str):
                raise InputError(f"{where}: key must be one column name; got {_shown(s['key'])}")
            s["key"] = resolve("key", [s["key"]])[0]
            if s["key"] not in keys:
                what = "--suppress-risk-key" if from_option else f"{where}: key"
                raise InputError(
                    f"{what} {s['key']!r} is not among --keys ({', '.join(keys)}), on which the "
                    "risk is measured; choose one of them or add it to --keys")
        else:  # stamped: the run's choice is visible, and the chain check knows the column
            from sdcbayes.protection.suppression import default_risk_key

            s["key"] = default_risk_key(frame, keys)  # the library's own default
            s["_default_key"] = True  # _count_keys_as_strata may take another one
    if "linked" in s:
        s["linked"] = _validated_linked(where, s, frame, keys if name == "suppress_risk"
                                        else s["keys"], weight, resolve, from_option)
    if "household_keys" in s:
        s["household_keys"] = _validated_household_keys(
            where, s["household_keys"], keys if name == "suppress_risk" else s["keys"],
            household, resolve, from_option)
        s["_household"] = household
    # a stratum that the step itself changes (checked here, before any step runs; the
    # library refuses the same)
    both_role = "keys" if name == "suppress" else "columns" if name == "pram" else None
    both = sorted(set(s.get("strata") or ()) & set(s.get(both_role) or ())) if both_role else []
    if both:
        label = "--strata" if from_option is not None else f"{where}: strata"
        why = ("suppression could blank a key value that is also its record's stratum, and "
               "records that differ on a key never match anyway" if name == "suppress" else
               "within one of its strata a column has a single level, so PRAM could not "
               "change it")
        what = "keys" if name == "suppress" else "PRAM'd columns"
        fix = ("leave it out of the strata (or stratify by a copy of the column under "
               "another name)" if name == "suppress" else
               "leave it out of the strata or out of the PRAM'd columns")
        raise InputError(
            f"{label} {', '.join(map(repr, both))}: also among the step's {what}: {why}; {fix}")
    if isinstance(s.get("importance"), dict):
        # KEY=RANK pairs: the keys name variables (ranks in --keys order need nothing)
        imp = s["importance"]
        s["importance"] = dict(zip(resolve("importance", [str(k) for k in imp]), imp.values(),
                                   strict=True))

    def number(param, lo=None, hi=None, integer=False, lo_open=False, default=None,
               hi_open=False, lo_text=None):
        if param not in s and default is None:
            return  # optional, left to the method's default
        v = s.get(param, default)
        ok = _real(v)
        ok = ok and (not integer or float(v).is_integer())
        ok = ok and (lo is None or (v > lo if lo_open else v >= lo)) and (
            hi is None or (v < hi if hi_open else v <= hi))
        if not ok:
            rng = ("an integer" if integer else "a number") + (
                f" {'>' if lo_open else '>='} {lo_text or lo}" if lo is not None else ""
            ) + (f" and {'<' if hi_open else '<='} {hi}" if hi is not None else "")
            opt = {("suppress", "k"): "--suppress-k", ("pram", "pd"): "--pram-pd",
                   ("swap", "swap_rate"): "--swap-rate", ("swap", "k"): "--swap-k",
                   ("suppress_risk", "threshold"): "--suppress-risk",
                   ("nayak_zhang", "xi"): "--nayak-zhang-xi", ("microaggregate", "k"): "--mdav-k",
                   ("microaggregate", "trim"): "--microaggregate-trim",
                   ("noise", "level"): "--noise-level", ("noise", "delta"): "--noise-delta",
                   ("noise", "p"): "--noise-p", ("rank_swap", "p"): "--rank-swap-p",
                   ("rank_swap", "r0"): "--rank-swap-r0", ("rank_swap", "k0"): "--rank-swap-k0",
                   ("rank_swap", "top_percent"): "--rank-swap-top",
                   ("rank_swap", "bottom_percent"): "--rank-swap-bottom"}.get((name, param))
            # an option's step names its option; a recipe's names its own field
            what = f"{param} ({opt})" if opt and from_option else param
            # null is no value: an optional parameter is left out to get its default
            fix = "; leave it out to use the default" if v is None and param in optional else ""
            raise InputError(f"{where}: {what} must be {rng}; got {_shown(v)}{fix}")
        s[param] = int(v) if integer else float(v)

    def flag(param):
        # bool("false") is True: only real booleans, never strings, numbers or null
        if param in s and not isinstance(s[param], bool):
            raise InputError(
                f"{where}: {param} must be true or false (a JSON boolean, without quotes); "
                f"got {_shown(s[param])}"
            )

    def choice(param, allowed):
        if param in s and s[param] not in allowed:
            raise InputError(
                f"{where}: {param} must be one of {', '.join(map(repr, allowed))}; "
                f"got {_shown(s[param])}"
            )

    if name == "recode":
        m = s["mapping"]
        if not isinstance(m, dict) or not m:
            raise InputError(f"{where}: mapping must be a non-empty mapping old level -> new level")
        bad = [(old, new) for old, new in m.items() if not _label(new)]
        if bad:
            old, new = bad[0]
            raise InputError(
                f"{where}: mapping must map each old level to one new level (a string or a "
                f"number); got {_shown(old)}: {_shown(new)}"
            )
    elif name == "band":
        b = s["breaks"]
        if (not isinstance(b, list) or len(b) < 2
                or not all(_real(x, infinite=True) for x in b)
                or not all(x < y for x, y in zip(b[:-1], b[1:], strict=True))):
            raise InputError(
                f"{where}: breaks must be a list of at least two strictly increasing numbers, "
                f"e.g. [0, 18, 65, 120]; got {_shown(b)}"
            )
        if "labels" in s:
            lab, n_bands = s["labels"], len(b) - 1
            if (not isinstance(lab, list) or len(lab) != n_bands
                    or not all(_label(x) for x in lab) or len(set(lab)) != n_bands):
                raise InputError(
                    f"{where}: labels must be a list of {n_bands} distinct "
                    f"label{'s' if n_bands != 1 else ''} (strings or numbers), one per band; "
                    f"got {_shown(lab)}"
                )
        flag("right")
    elif name in ("top_code", "bottom_code"):
        number("threshold")
        number("replacement")
    elif name == "suppress":
        if "combs" in s:  # before k: a list of k is checked against the subset sizes
            c = s["combs"]
            sizes = c if isinstance(c, list) else [c]
            n_keys = len(s["keys"])
            if not sizes or not all(_real(x) and isinstance(x, int) and 1 <= x <= n_keys
                                    for x in sizes):
                raise InputError(
                    f"{where}: combs must be a whole number or a list of them between 1 and "
                    f"{n_keys} (the number of the step's keys; sizes of key subsets), e.g. "
                    f"[3, 2]; got {_shown(c)}"
                )
        if isinstance(s["k"], list) and not from_option:
            _check_k_list(s, where)
        else:
            number("k", lo=1, integer=True)
        n_records = len(frame)
        ks = s["k"] if isinstance(s["k"], list) else [s["k"]]
        if max(ks) > n_records:
            # no record could ever share its keys with k - 1 others: every key value would
            # be blanked (the step lowers k only per stratum, for strata below k)
            what = "--suppress-k" if from_option else f"{where}: k"
            raise InputError(
                f"{what} {max(ks)} exceeds the "
                + ("file's only record" if n_records == 1 else f"{n_records} records")
                + f"; choose k <= {n_records}"
            )
        if "importance" in s:
            imp = s["importance"]
            ranks = list(imp.values()) if isinstance(imp, dict) else imp
            if not isinstance(ranks, list) or not ranks or not all(_real(r) for r in ranks):
                raise InputError(
                    f"{where}: importance must give each key a rank (1 = most important), as "
                    f'{{"age": 2, "sex": 1}} or as a list in the order of the keys; got '
                    f"{_shown(imp)}"
                )
            n_given, n_keys = len(ranks), len(s["keys"])
            if isinstance(imp, list) and n_given != n_keys:
                raise InputError(
                    f"{where}: importance lists {n_given} ranks for {n_keys} keys "
                    f"{s['keys']}; give one rank per key"
                )
            if isinstance(imp, dict) and set(imp) != set(s["keys"]):
                raise InputError(
                    f"{where}: importance must rank exactly the keys {s['keys']}; it ranks "
                    f"{list(imp)}"
                )
        if "method" in s and s["method"] not in ("greedy", "sequential"):
            raise InputError(
                f"{where}: method must be \"greedy\" (the default) or \"sequential\" "
                f"(sdcMicro's localSuppression); got {_shown(s['method'])}"
            )
    elif name == "suppress_risk":
        # a risk is at most 1: a threshold of 1 or more would blank nothing
        number("threshold", lo=0, hi=1, hi_open=True)
    elif name == "pram":
        number("pd", lo=0, hi=1, lo_open=True, default=0.8)
        number("alpha", lo=0, hi=1)
        number("max_levels", lo=1, integer=True)
        if "matrices" in s:  # the parsed rows kept aside: the summary stamps what was given
            s["_matrices"] = _pram_matrices_given(where, s["matrices"], s["columns"])
    elif name == "nayak_zhang":
        # xi = 1 bounds nothing: no theta solves phi(theta) < 1 (pram.nayak_zhang_theta
        # refuses it); with theta given, the group size alone is checked against xi
        number("xi", lo=1 / 3, hi=1, default=1 / 3, hi_open="theta" not in s, lo_text="1/3")
        number("theta", lo=0, hi=1)
        number("group_size", lo=2, integer=True)
    elif name == "microaggregate":
        number("k", lo=1, integer=True, default=3)
        flag("standardize")
        choice("aggregate", ("mean", "median", "trim", "onestep"))
        choice("method", ("mdav", "sorted", "pca", "single", "simple"))
        _validated_microaggregate(where, s, number, from_option)
    elif name == "noise":
        _validated_noise(where, s, number, choice, from_option)
    elif name == "rank_swap":
        _validated_rank_swap(where, s, number, from_option)
    elif name == "shuffle":
        _validated_shuffle(where, s, from_option)
    elif name == "swap":
        number("swap_rate", lo=0, hi=1, default=0.05)
        number("k", lo=1, integer=True, default=3)
        _validated_swap(where, s, frame, keys, household, resolve, from_option)
    return s


def _validated_microaggregate(where: str, s: dict[str, Any], number, from_option) -> None:
    """A ``microaggregate`` step's settings beyond k, aggregate and method.

    ``standardize`` belongs to "mdav" (distances between records); ``varsort`` to
    "single" and must be one of the step's columns; ``trim`` (0 to 0.5) to aggregate
    "trim"; methods "pca", "single" and "simple" order the records on two or more
    columns (sdcMicro's microaggregation calls mafast for one variable whatever the
    method: that is method "sorted").
    """
    method = s.get("method", "mdav")
    opt = (lambda o, p: o) if from_option else (lambda o, p: p)
    if method != "mdav" and "standardize" in s:
        raise InputError(f"{where}: standardize applies to method \"mdav\" (distances "
                         f"between records); method \"{method}\" does not measure distances")
    if "varsort" in s:
        if method != "single":
            raise InputError(f"{where}: {opt('--microaggregate-varsort', 'varsort')} applies "
                             f"to method \"single\"; got method \"{method}\"")
        if s["varsort"] not in s["columns"]:
            raise InputError(f"{where}: {opt('--microaggregate-varsort', 'varsort')} "
                             f"{_shown(s['varsort'])} must be one of the columns "
                             f"{s['columns']}")
    if "trim" in s:
        number("trim", lo=0, hi=0.5)
        if s.get("aggregate") != "trim":
            raise InputError(f"{where}: {opt('--microaggregate-trim', 'trim')} applies to the "
                             f"{opt('--microaggregate-measure', 'aggregate')} trim")
    if method in ("pca", "single", "simple") and len(s["columns"]) < 2:
        raise InputError(f"{where}: {opt('--microaggregate-method ', 'method ')}{method} "
                         f"orders the records on two or more columns; got {s['columns']} (for "
                         "one column use the method sorted, what sdcMicro does for one "
                         "variable)")


def _validated_shuffle(where: str, s: dict[str, Any], from_option) -> None:
    """A ``shuffle`` step's settings, as :func:`sdcbayes.protection.shuffle` takes them.

    ``method`` "ds" (default) or "mvn", ``covmethod`` "spearman" (default), "pearson" or,
    with "ds" only, "normal-scores" (sdcMicro's "mlm", "mcd" and robust regression are not
    offered: the library's message names why); at least two columns, none of them also a
    predictor.
    """
    from sdcbayes.protection.shuffling import _check_choices

    s.setdefault("method", "ds")
    s.setdefault("covmethod", "spearman")
    try:  # the library's own check and wording ("mlm" fails in sdcMicro, ...)
        _check_choices(s["method"], s["covmethod"])
    except InputError as e:
        raise InputError(f"{where}: {e}") from None
    cols = "--shuffle" if from_option else "columns"
    if len(s["columns"]) < 2:
        raise InputError(
            f"{where}: {cols} names {len(s['columns'])} variable; shuffling needs at least 2 "
            "numeric variables (sdcMicro's shuffle too): add another, or use rank swapping "
            "or noise for one")
    both = [c for c in s["columns"] if c in s["predictors"]]
    if both:
        preds = "--shuffle-by" if from_option else "predictors"
        raise InputError(
            f"{where}: {', '.join(map(repr, both))} in both {cols} and {preds}; a variable is "
            "shuffled or conditioned on, not both")


def _validated_noise(where: str, s: dict[str, Any], number, choice, from_option) -> None:
    """A ``noise`` step's settings, as :func:`sdcbayes.protection.add_noise` takes them.

    ``method`` one of NOISE_METHODS (default additive); ``level`` >= 0 (default 0.1),
    which correlated2 and ROMM do not use; ``delta`` in (0, 1] for correlated2 only and
    ``p`` > 0 for ROMM only (their defaults sdcMicro's 0.1 and 0.001). A setting the
    method would ignore is refused, worded as the options or the recipe's fields.
    """
    if s.get("method") == "outdect":
        raise InputError(f"{where}: method \"outdect\" (sdcMicro's) is not available: its "
                         "outliers come from robustbase's covMcd, which sdcbayes cannot "
                         "reproduce; choose one of " + ", ".join(map(repr, NOISE_METHODS)))
    choice("method", NOISE_METHODS)
    method = s.get("method", "additive")
    if method in ("correlated2", "ROMM") and "level" in s and not from_option:
        # an option step always carries --noise-level (its default): checked by the options
        raise InputError(f"{where}: level is not used by method {method!r} (sdcMicro's "
                         f"{method} ignores its noise); leave out level"
                         + (" and give delta" if method == "correlated2" else " and give p"))
    number("level", lo=0, default=0.1)
    number("delta", lo=0, hi=1, lo_open=True)
    number("p", lo=0, hi=2**53, lo_open=True)  # noise.ROMM_MAX_P: refused before the run
    for param, owner in (("delta", "correlated2"), ("p", "ROMM")):
        if param in s and method != owner:
            what = (f"--noise-{param} applies to --noise-method {owner}" if from_option
                    else f"{where}: {param} applies to method {owner!r}")
            fix = (f"add --noise-method {owner} or leave out --noise-{param}" if from_option
                   else f'give "method": "{owner}" or leave out {param}')
            raise InputError(f"{what}, not {method!r}; {fix}")


def _validated_rank_swap(where: str, s: dict[str, Any], number, from_option) -> None:
    """A ``rank_swap`` step's numbers, as :func:`sdcbayes.protection.rank_swap` takes them.

    Its rules (``rankswap._check_parameters``), worded as the options or the recipe's
    fields: ``p`` in (0, 100], ``r0`` in (0, 1), ``k0`` > 0, at most one of the three
    (none: the library's r0 = 0.95, sdcMicro's default); ``top_percent`` and
    ``bottom_percent`` in [0, 100) (default 5, sdcMicro's), their sum below 100.
    """
    number("p", lo=0, hi=100, lo_open=True)
    number("r0", lo=0, hi=1, lo_open=True, hi_open=True)
    number("k0", lo=0, lo_open=True)
    number("top_percent", lo=0, hi=100, hi_open=True, default=RANK_SWAP_GROUP_PERCENT)
    number("bottom_percent", lo=0, hi=100, hi_open=True, default=RANK_SWAP_GROUP_PERCENT)
    given = [p for p in ("p", "r0", "k0") if p in s]
    if len(given) > 1:  # the options' own check said it before the file was read
        raise InputError(
            f"{where}: {' and '.join(given)} are {'both' if len(given) == 2 else 'all'} "
            "given; give one of p, r0 and k0 (three "
            "ways of setting the same rank range, as in sdcMicro's rankSwap; none: r0 0.95)")
    total = s["top_percent"] + s["bottom_percent"]
    if total >= 100:
        what = ("--rank-swap-top and --rank-swap-bottom" if from_option
                else "top_percent and bottom_percent")
        raise InputError(
            f"{where}: {what} add up to {total:g}% of the values, which leaves nothing to "
            "swap; keep their sum below 100")


def _validated_swap(where: str, s: dict[str, Any], frame, keys: list[str],
                    household: str | None, resolve, from_option) -> None:
    """A ``swap`` step's columns, names resolved, defaults filled, checked on the input.

    ``hierarchy``, ``risk_variables`` and ``carry_along``: a name or a list of names;
    ``similar``: one profile (a name or a list of names) or several (a list of lists),
    kept as one flat list for one profile. ``risk_variables`` defaults to ``--keys``
    less the hierarchy and carry-along columns (the swapped columns cannot also be what
    is counted within a unit). Needs ``--household`` (``_household``). Then every check
    of :func:`sdcbayes.protection.swapping.record_swap` runs on the input
    (:func:`~sdcbayes.protection.swapping.check_record_swap_input`: hierarchy, similar
    and carry-along columns one value per household, no missing hierarchy value, no
    column in two roles): the steps before may only recode those columns level by
    level, which keeps them so (:func:`_check_step_chain` refuses the others).
    """
    from sdcbayes.protection.swapping import check_record_swap_input

    if household is None:
        what = "--swap" if from_option else where
        raise InputError(f"{what} exchanges the geography of whole households; add "
                         "--household COL (the household id column)")

    def names(param: str, value) -> list[str]:
        v = split_names(value) if isinstance(value, str) else value
        if not isinstance(v, list) or not v or not all(isinstance(c, str) for c in v):
            raise InputError(f"{where}: {param} must be a column name or a non-empty list of "
                             f"them; got {_shown(value)}")
        return resolve(param, v)

    s["hierarchy"] = names("hierarchy", s["hierarchy"])
    sim = s["similar"]
    if isinstance(sim, list) and sim and all(isinstance(p, list) for p in sim):
        profiles = [names("similar", p) for p in sim]
    elif isinstance(sim, list) and any(isinstance(p, list) for p in sim):
        raise InputError(
            f"{where}: similar mixes column names and lists of names; give one profile (a "
            "list of names) or several (a list of such lists, tried in turn); got "
            f"{_shown(sim)}")
    else:
        profiles = [names("similar", sim)]
    s["similar"] = profiles[0] if len(profiles) == 1 else profiles
    s["carry_along"] = names("carry_along", s["carry_along"]) if s.get("carry_along") else []
    swapped = s["hierarchy"] + s["carry_along"]
    if "risk_variables" in s:
        s["risk_variables"] = names("risk_variables", s["risk_variables"])
    else:
        s["risk_variables"] = [k for k in keys if k not in swapped]
        if not s["risk_variables"]:
            raise InputError(
                f"{where}: every key ({', '.join(keys)}) is swapped, so nothing is left to "
                "count within a geographic unit; add keys that are not swapped to --keys"
                + ("" if from_option else " or give the step's \"risk_variables\""))
    try:  # the library's own checks (and words), on the input, before any work
        check_record_swap_input(
            frame, household=household, hierarchy=s["hierarchy"], similar=profiles,
            risk_variables=s["risk_variables"], swap_rate=s["swap_rate"],
            k_anonymity=s["k"], carry_along=s["carry_along"])
    except InputError as e:
        raise InputError(f"{where}: {e}") from None
    s["_household"] = household


def _validated_linked(where: str, s: dict[str, Any], frame, step_keys: list[str],
                      weight: str | None, resolve, from_option) -> dict[str, list[str]]:
    """A step's ``linked`` (key -> columns that depend on it), names resolved and checked.

    sdcMicro's ghostVars: a linked column is none of the keys, strata or weight (it
    only follows its key's blanks; blanking the weight would change the risk itself).
    The keys and strata rules are the library's
    (:func:`sdcbayes.protection.suppression._check_linked`, its message named as the
    option or recipe field); only the weight, which the library does not know, and the
    recipe's JSON shape are checked here.
    """
    from sdcbayes.protection.suppression import _check_linked

    label = "--linked" if from_option else f"{where}: linked"
    v = s["linked"]
    # the recipe's JSON shape (names as text); the rules themselves are the library's
    ok = isinstance(v, dict) and v and all(
        isinstance(k, str) and (isinstance(c, str) or (
            isinstance(c, list) and c and all(isinstance(x, str) for x in c)))
        for k, c in v.items())
    if not ok:
        raise InputError(
            f"{label} must map each key to the columns that depend on it, e.g. "
            f'{{"region": ["district"]}}; got {_shown(v)}')
    out: dict[str, list[str]] = {}
    for key, cols in v.items():
        key_c = resolve("linked", [key])[0]
        cols_c = resolve("linked", split_names(cols) if isinstance(cols, str) else cols)
        out.setdefault(key_c, [])
        out[key_c] += [c for c in cols_c if c not in out[key_c]]
    try:  # keys and strata as suppression.local_suppression/risk_suppression check them
        out = _check_linked(frame, step_keys, s.get("strata"), out)
    except InputError as e:  # worded for a "linked" argument: named as given here
        msg = str(e)
        if from_option:
            msg = msg.replace("out of linked", "out of --linked")
        raise InputError(label + msg[len("linked"):] if msg.startswith("linked:")
                         else f"{label}: {msg}") from None
    # the weight, which the library does not know: blanking it would change the risk
    for key_c, cols_c in out.items():
        if weight in cols_c:
            raise InputError(
                f"{label}: {weight!r} (linked to {key_c!r}) is the weight of the step; a "
                "linked column only follows its key's blanks: leave it out of --linked")
    return out


def _validated_household_keys(where: str, v, step_keys: list[str], household: str | None,
                              resolve, from_option):
    """A step's ``household_keys``: ``"auto"`` or keys of the step, names resolved.

    The library checks the same (:func:`sdcbayes.protection.suppression.local_suppression`);
    here before any work, worded as the option or the recipe field.
    """
    label = "--household-keys" if from_option else f"{where}: household_keys"
    if household is None:
        raise InputError(f"{label} keeps keys consistent within households; add --household "
                         "COL (the household id column)")
    if v == "auto":
        return v
    names = split_names(v) if isinstance(v, str) else v
    if not isinstance(names, list) or not names or not all(isinstance(c, str) for c in names):
        raise InputError(f'{label} must be "auto" or a list of the step\'s keys; got '
                         f"{_shown(v)}")
    names = resolve("household_keys", names)
    stray = [c for c in names if c not in step_keys]
    if stray:
        raise InputError(
            f"{label} {', '.join(map(repr, stray))}: not among the step's keys "
            f"({', '.join(step_keys)}), whose blanks it spreads; name keys of the step, or "
            "auto")
    return list(dict.fromkeys(names))


def _pram_matrices_given(where: str, given, columns: list[str]) -> dict[str, Any]:
    """A pram step's ``matrices``: column -> {from level: {to level: probability}}.

    ``given`` is that mapping (levels as text or numbers) or the path of a CSV in the
    long form ``protect`` writes as ``pram_matrices.csv`` (columns ``variable``,
    ``from``, ``to``, ``probability``; ``step`` and ``stratum`` optional, each holding
    one value per variable: one matrix per variable, used in every stratum). Checked
    here, before any work: every variable is among the step's ``columns``, every
    probability in [0, 1], every row sums to 1. The levels are checked against the
    column as the steps before leave it (:func:`_check_step_chain`; at run time
    otherwise). Entries not given are 0.
    """
    from sdcbayes.protection.pram import check_matrix_rows

    if isinstance(given, str):
        table = _read_matrix_file(where, Path(given))
    elif isinstance(given, dict) and given:
        table = given
    else:
        raise InputError(
            f"{where}: matrices must be the path of a CSV in the long form of "
            f"{PRAM_MATRICES} (variable, from, to, probability) or a mapping column -> "
            '{from level: {to level: probability}}, e.g. {"region": {"north": {"north": 0.9, '
            f'"south": 0.1}}, "south": {{"south": 1}}}}}}; got {_shown(given)}')
    out: dict[str, Any] = {}
    for col, rows in table.items():
        if col not in columns:
            raise InputError(
                f"{where}: matrices gives a matrix for {col!r}, which is not among the step's "
                f"columns ({', '.join(columns)}); add it to columns or drop its matrix")
        if not isinstance(rows, dict) or not rows or not all(
                isinstance(r, dict) and r for r in rows.values()):
            raise InputError(
                f"{where}: the matrix of {col!r} must map each level to its row, "
                f'{{to level: probability}}, e.g. {{"north": {{"north": 0.9, "south": 0.1}}}}')
        # the rows as PRAM checks them (the levels are checked at the step)
        check_matrix_rows(rows, f"{where}: the matrix of {col!r}")
        out[col] = rows
    return out


def _read_matrix_file(where: str, path: Path) -> dict[str, Any]:
    """``pram_matrices.csv``'s long form as column -> {from: {to: probability}} (text levels)."""
    import pandas as pd

    if not path.is_file():
        raise InputError(f"{where}: matrices file not found: '{path}'; check the path "
                         "(a relative path is read from the recipe's folder)")
    try:  # levels as text, as protect writes them; "NA" is a level, not a missing value
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except Exception as e:  # noqa: BLE001 - any reading problem is the user's file
        raise InputError(f"{where}: matrices file {path.name} is not a readable CSV "
                         f"({' '.join(str(e).split())})") from None
    need = ["variable", "from", "to", "probability"]
    missing = [c for c in need if c not in table.columns]
    if missing:
        raise InputError(
            f"{where}: matrices file {path.name} lacks the column(s) {missing}; it needs "
            f"{need} (the long form of {PRAM_MATRICES}), optionally step and stratum")
    for extra in ("step", "stratum"):
        if extra in table.columns:
            many = table.groupby("variable")[extra].nunique()
            many = many[many > 1]
            if len(many):
                fix = ("keep the rows of one step" if extra == "step" else
                       "keep one stratum's rows: one matrix per variable is used in every "
                       "stratum")
                what = "steps" if extra == "step" else "strata"
                raise InputError(
                    f"{where}: matrices file {path.name} holds several {what} for "
                    f"{many.index[0]!r}; {fix}")
    try:
        prob = pd.to_numeric(table["probability"], errors="raise")
    except (TypeError, ValueError):
        raise InputError(f"{where}: matrices file {path.name}: column probability must hold "
                         "numbers") from None
    out: dict[str, Any] = {}
    for var, frm, to, p in zip(table["variable"], table["from"], table["to"], prob,
                               strict=True):
        row = out.setdefault(var, {}).setdefault(frm, {})
        if to in row:
            raise InputError(f"{where}: matrices file {path.name} gives {var!r} from {frm!r} "
                             f"to {to!r} twice; keep one row")
        row[to] = float(p)
    if not out:
        raise InputError(f"{where}: matrices file {path.name} has no rows")
    return out


def _check_k_list(s: dict[str, Any], where: str) -> None:
    """A recipe suppress step's list of k: one k per entry of ``combs`` (or one k).

    As :func:`sdcbayes.protection.local_suppression` and sdcMicro's
    ``localSuppression`` take it: with ``combs = [7, 3]`` and ``k = [5, 3]`` every
    subset of 7 keys is made 5-anonymous, then every subset of 3 keys 3-anonymous.
    """
    ks = s["k"]
    if not ks or not all(_real(x) and float(x).is_integer() and x >= 1 for x in ks):
        raise InputError(
            f"{where}: k must be a whole number >= 1 or, with combs, a list of them, one per "
            f"entry of combs (e.g. \"k\": [5, 3], \"combs\": [4, 2]); got {_shown(ks)}"
        )
    combs = s.get("combs")
    sizes = None if combs is None else combs if isinstance(combs, list) else [combs]
    if len(ks) > 1 and (sizes is None or len(ks) != len(sizes)):
        have = ("the step has no combs" if sizes is None
                else f"combs {_shown(combs)} lists {len(sizes)} subset size(s)")
        raise InputError(
            f"{where}: k lists {len(ks)} values but {have}; give one k, or one k per entry "
            "of combs"
        )
    s["k"] = [int(x) for x in ks] if sizes is not None else int(ks[0])


def _risk_k_of(step: dict[str, Any]) -> int:
    """The k with which the risk counts k-anonymity violations after a suppress step.

    The counts are over the step's whole key set, so with ``combs`` and one k per
    subset size the k of the largest subsets is taken (the largest k among them).
    """
    k = step["k"]
    if not isinstance(k, list):
        return int(k)
    combs = step.get("combs")
    sizes = combs if isinstance(combs, list) else [combs] * len(k)
    if len(k) == 1:
        return int(k[0])
    top = max(sizes)
    return max(int(kk) for kk, size in zip(k, sizes, strict=True) if size == top)


# --------------------------------------------------------------------------- chain check
class _ColumnState:
    """What the steps so far leave in one column, as far as known before any work.

    ``values``: the column's distinct values (one missing value among them if it has
    any), in its dtype, while only deterministic value steps (recode, band,
    top_code, bottom_code) have run on it; None once a step whose output depends on
    counts or chance (suppress, PRAM, micro-aggregation, noise) has. The other
    fields follow from ``values`` when it is known; otherwise they are carried
    through the steps, None standing for "cannot tell before the run".
    """

    __slots__ = ("values", "kind", "fraction", "missing", "kind_by", "missing_by", "changed")

    def __init__(self, values=None, kind=None, fraction=None, missing=None, kind_by=None,
                 missing_by=None, changed=()):
        self.values = values
        #: "numeric", "categorical", "boolean", "text" or None (unknown)
        self.kind = kind
        #: a fractional value (float), True (surely fractional values), False or None
        self.fraction = fraction
        #: whether the column may hold missing (or infinite) values; None: unknown
        self.missing = missing
        #: the step (text "step j (name)") that made kind/fraction what it is; None: input
        self.kind_by = kind_by
        #: why the column may hold missing values (text); None: the input has them
        self.missing_by = missing_by
        #: the earlier steps that changed the column ("step j (name)")
        self.changed = list(changed)


def _distinct_values(series):
    """A column's distinct values (one missing value among them if any), in its dtype."""
    import pandas as pd

    if isinstance(series.dtype, pd.CategoricalDtype):
        n = len(series.cat.categories)
        codes = list(range(n)) + ([-1] if series.isna().any() else [])
        return pd.Series(pd.Categorical.from_codes(codes, dtype=series.dtype))
    return series.drop_duplicates().reset_index(drop=True)


def _state_from_values(values, kind_by=None, missing_by=None, changed=()) -> _ColumnState:
    """The state of a column whose (distinct) values are known."""
    import numpy as np
    import pandas as pd

    dtype = values.dtype
    is_cat = isinstance(dtype, pd.CategoricalDtype)
    is_bool = not is_cat and pd.api.types.is_bool_dtype(dtype)
    numeric = not is_cat and not is_bool and pd.api.types.is_numeric_dtype(dtype)
    kind = ("categorical" if is_cat else "boolean" if is_bool else "numeric" if numeric
            else "text")
    missing = bool(values.isna().any())
    fraction: float | bool = False
    if numeric:
        v = values.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = missing or bool(np.isinf(v).any())
        if pd.api.types.is_float_dtype(dtype):  # as invariant_pram judges "continuous"
            v = v[np.isfinite(v)]
            frac = v[v != np.round(v)]
            fraction = float(frac[0]) if frac.size else False
    return _ColumnState(values, kind, fraction, missing, kind_by,
                        missing_by if missing else None, changed)


def _check_new_values_encodable(steps: list[dict[str, Any]], codec: str | None,
                                ext: str) -> None:
    """Refuse a recode's new value or a band label the protected CSV cannot be written in.

    A CSV/TSV input is written back in its own encoding (``--encoding``; UTF-8 by
    default, :func:`_write_protected`), so a new value with a character that encoding
    lacks (``'Nord–Ost'``'s en dash in Latin-1) would fail only when the file is
    written, after all the work (audit AU3 B1). Checked before the file is read.
    Other formats are written in UTF-8 or Parquet, which hold any text.
    """
    if ext not in (".csv", ".csv.gz", ".tsv"):
        return
    enc = codec or "utf-8"
    for i, step in enumerate(steps, start=1):
        name = step.get("step")
        if name == "recode" and isinstance(step.get("mapping"), dict):
            values, what = list(step["mapping"].values()), "new value"
        elif name == "band" and isinstance(step.get("labels"), list):
            values, what = step["labels"], "label"
        else:
            continue
        for value in values:
            if not isinstance(value, str):
                continue
            try:
                value.encode(enc)
            except UnicodeEncodeError as e:
                where = ("--recode" if step.get("_option") == "--recode"
                         else f"step {i} ({name})")
                raise InputError(
                    f"{where}: {what} {value!r} cannot be written in the input's encoding "
                    f"{enc}, in which the protected file is written: "
                    f"{_unencodable(e)}; choose a {what} without it, or convert the data "
                    f"file to UTF-8 (e.g. iconv -f {enc.upper()} -t UTF-8) and run on that "
                    "copy without --encoding") from None


def _unencodable(e: UnicodeEncodeError) -> str:
    """``"'–' (U+2013) is not in it"``: the first character an encoding has no code for."""
    char = e.object[e.start:e.start + 1]
    return f"{char!r} (U+{ord(char):04X}) is not in it" if char else "a character is not in it"


def _check_step_chain(steps: list[dict[str, Any]], frame) -> None:
    """Refuse, before any work, a step that would fail on what the steps before it leave.

    :func:`_validate_step` checks each step against the input file; this follows
    every column the steps name through the steps in the order they run
    (:class:`_ColumnState`) and refuses, with a one-line error naming the step, the
    column, the earlier step responsible and the fix:

    - ``microaggregate``/``noise`` of a column that is not numeric by then (a
      ``band``, a ``recode`` to text), or that may hold missing values (in the
      input; blanked by a ``suppress`` of which it is a key; a ``recode`` to a
      missing level): MDAV and noise need complete numeric columns;
    - ``band``, ``top_code``, ``bottom_code`` of a column that is not numeric by then;
    - ``pram`` of a column that is continuous by then (fractional values in the
      input or left by ``top_code`` with a fractional replacement; group means of a
      ``microaggregate``; ``noise``), or that has more levels than its
      ``max_levels``: PRAM changes categories;
    - ``strata`` (of ``suppress`` or ``pram``) that may hold missing values, e.g. a
      key of an earlier ``suppress``: a record with a missing stratum is in none;
    - ``swap`` of a column (hierarchy, similar, carry-along) that an earlier step
      changes record by record (``suppress`` blanks, ``pram``, ``nayak_zhang``,
      ``microaggregate``, ``noise``), so that it may no longer hold one value per
      household (or, blanked, hold missing values), or a hierarchy column that may hold
      missing values (a ``band`` leaving values outside its breaks): swapping moves
      whole households. Level steps (recode, band, top and bottom coding) keep a
      household-level column so; the input itself was checked by :func:`_validated_swap`.

    While only deterministic value steps (recode, band, top_code, bottom_code) have
    changed a column, its distinct values are run through them (the code of the run
    itself, :func:`_run_step`), so what is refused would fail at run time. After a
    ``suppress`` its keys *may* hold missing values: whether a given key is blanked
    depends on the counts, so such a recipe could pass on one file and fail on the
    next; it is refused whatever this file gives (k = 1 blanks nothing and is let
    through). Cost: one pass over each named column (its distinct values).

    Raises
    ------
    InputError
        ``"step i (name): ..."`` for the first step that would fail.
    """
    import pandas as pd

    states: dict[str, _ColumnState] = {}

    def state(col: str) -> _ColumnState:
        if col not in states:
            states[col] = _state_from_values(_distinct_values(frame[col]))
        return states[col]

    def first_bad_record(col: str) -> str:
        """The first record of the input whose ``col`` is missing or infinite, named."""
        import numpy as np

        from sdcbayes.microdata import _row_ref

        s = frame[col]
        bad = s.isna().to_numpy()
        if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
            bad = bad | np.isinf(s.to_numpy(dtype=np.float64, na_value=np.nan))
        return _row_ref(frame, int(np.flatnonzero(bad)[0]))

    options = any(s.get("_option") for s in steps)
    # column -> how an earlier step changed it record by record (no longer one value per
    # household, for all that is known before the run): what a swap cannot move
    per_record: dict[str, str] = {}
    for i, step in enumerate(steps, start=1):
        name = step["step"]
        where = f"step {i} ({name})"
        if name == "swap":
            _check_swap_input(where, step, state, per_record)
        if name in ("microaggregate", "noise"):
            method = "micro-aggregation" if name == "microaggregate" else "noise addition"
            for c in step["columns"]:
                _check_numeric_complete(where, c, state(c), method, first_bad_record, options,
                                        name)
        if name == "microaggregate" and len(frame) < step.get("k", 3):
            # before any work and before the warnings (a one-record file's columns are all
            # constant): the run's own check would come after them
            n = len(frame)
            raise InputError(
                f"{where}: only {n} record{'s' if n != 1 else ''} for groups of at least "
                f"{step.get('k', 3)} records; lower --mdav-k (or the \"k\" of a "
                "\"microaggregate\" step of a --recipe) or add records")
        if name == "rank_swap":  # numeric, finite; missing values stay missing
            for c in step["columns"]:
                _check_numeric_kind(where, c, state(c), "rank swapping")
                _check_finite(where, c, state(c), frame)
        if name == "shuffle":  # complete numeric columns, complete predictors of any kind
            for c in step["columns"]:
                _check_numeric_complete(where, c, state(c), "shuffling", first_bad_record,
                                        options, name)
            for c in step["predictors"]:
                _check_shuffle_predictor(where, c, state(c), first_bad_record)
            for c in step["columns"] + step["predictors"]:
                st = state(c)
                if st.values is not None and st.values.nunique(dropna=True) < 2:
                    # the library's refusal, said before any work
                    raise InputError(
                        f"{where}: column {c!r} holds one value"
                        + (f" after {st.changed[-1]}" if st.changed else "")
                        + "; its correlations are undefined, so shuffling cannot use it: "
                        "leave it out of the step")
        if name == "pram":
            for c in step["columns"]:
                _check_pram_input(where, c, state(c), step.get("max_levels", 1000))
                if c in step.get("_matrices", {}) and state(c).values is not None:
                    _check_pram_matrix_levels(where, c, state(c), step["_matrices"][c])
        for c in step.get("strata") or ():
            st = state(c)
            if st.missing:
                if st.missing_by is None:
                    raise InputError(
                        f"{where}: stratum column {c!r} has missing values; fill them (e.g. "
                        "with a level 'unknown') before working within strata"
                    )
                raise InputError(
                    f"{where}: stratum column {c!r} may have missing values after "
                    f"{st.missing_by}, and a record with a missing stratum is in no stratum; "
                    f"stratify before that step (put this step first) or leave {c!r} out of "
                    "its keys"
                )
        # ---- what the step leaves
        if name in ("recode", "band", "top_code", "bottom_code"):
            c = step["column"]
            st = state(c)
            out = None
            if st.values is not None:
                try:  # a copy: a --recode's "+" split is settled on the run's own levels
                    out = _run_step(dict(step), pd.DataFrame({c: st.values}), None).frame[c]
                except InputError as e:  # the run would say the same, after the work before
                    raise InputError(f"{where}: {e}{_as_left(c, st.changed)}") from None
                except Exception:  # anything else the run itself reports, with the data
                    st.values = None
            if out is not None:
                new = _state_from_values(
                    out.drop_duplicates().reset_index(drop=True), changed=st.changed + [where])
                same = (new.kind, bool(new.fraction)) == (st.kind, bool(st.fraction))
                new.kind_by = st.kind_by if same else where
                new.missing_by = (st.missing_by if st.missing else
                                  f"{where} maps levels to missing" if new.missing else None)
                states[c] = new
                continue
            if name != "recode" and st.kind not in (None, "numeric"):
                raise InputError(
                    f"{where}: column {c!r} is {st.kind}"
                    + (f" after {st.kind_by}" if st.kind_by else "")
                    + f"; {name.replace('_', ' ')} numeric variables only: put this step "
                    "before that one, or leave the column out of one of them"
                )
            if name == "band":
                states[c] = _ColumnState(None, "categorical", False, st.missing, where,
                                         st.missing_by, st.changed + [where])
            elif name == "recode":  # levels unknown: what the mapping makes of them too
                states[c] = _ColumnState(None, None, None, st.missing or None, where,
                                         st.missing_by, st.changed + [where])
            else:
                rep = step.get("replacement")
                fractional = rep is not None and not float(rep).is_integer()
                states[c] = _ColumnState(
                    None, st.kind, st.fraction or (None if fractional else st.fraction),
                    st.missing, where if fractional else st.kind_by, st.missing_by,
                    st.changed + [where])
        elif name in ("suppress", "suppress_risk"):
            if name == "suppress":
                ks = step["k"] if isinstance(step["k"], list) else [step["k"]]
                blanks = max(ks) > 1  # k = 1: every record is 1-anonymous, nothing blanked
                # a key the household ids count is a stratum of the run, never blanked
                blanked = [c for c in step["keys"] if c not in step.get("_count_strata", ())]
            else:  # which records are above the threshold depends on the run
                blanks, blanked = True, [step["key"]]
            # linked columns follow their keys' blanks
            blanked += [c for key, cols in (step.get("linked") or {}).items()
                        if key not in step.get("_count_strata", ()) for c in cols
                        if c not in blanked]
            for c in blanked:
                st = state(c)
                states[c] = _ColumnState(
                    None, st.kind, st.fraction, True if blanks else st.missing, st.kind_by,
                    f"{where} blanks key cells" if blanks and not st.missing else st.missing_by,
                    st.changed + [where])
                if blanks:
                    per_record.setdefault(c, f"{where} blanks values of it")
        elif name in ("pram", "nayak_zhang", "swap"):
            # values drawn among the column's own levels, dtype kept, missing kept (a swap
            # exchanges whole households' values: still one per household)
            cols = (step["columns"] if name == "pram" else step["keys"] if name == "nayak_zhang"
                    else step["hierarchy"] + step["carry_along"])
            for c in cols:
                st = state(c)
                states[c] = _ColumnState(None, st.kind, st.fraction, st.missing, st.kind_by,
                                         st.missing_by, st.changed + [where])
                if name != "swap":
                    per_record.setdefault(c, f"{where} changes it record by record")
        elif name == "shuffle":
            # original values reassigned between records: dtype, fraction kept; complete
            for c in step["columns"]:
                st = state(c)
                states[c] = _ColumnState(None, "numeric", st.fraction, False, st.kind_by, None,
                                         st.changed + [where])
                per_record.setdefault(c, f"{where} changes it record by record")
        elif name == "rank_swap":
            # values exchanged between records (dtype, missing values and fraction kept);
            # with top/bottom grouping the extremes become group means (float64)
            grouped = step["top_percent"] > 0 or step["bottom_percent"] > 0
            how = f"{where} replaces its extremes by group means"
            for c in step["columns"]:
                st = state(c)
                states[c] = _ColumnState(
                    None, "numeric", True if grouped else st.fraction, st.missing,
                    how if grouped else st.kind_by, st.missing_by, st.changed + [where])
                per_record.setdefault(c, f"{where} changes it record by record")
        elif name in ("microaggregate", "noise"):
            if name == "microaggregate":
                # group means of whole numbers are fractional but for equal groups; group
                # medians may stay whole (left to the run)
                fraction = True if step.get("aggregate", "mean") == "mean" else None
                how = f"{where} replaces it by group means"
            else:
                fraction = True if step["level"] > 0 else None
                how = f"{where} adds noise to it"
            for c in step["columns"]:
                st = state(c)
                states[c] = _ColumnState(None, "numeric", fraction, False,
                                         how if fraction else where, None, st.changed + [where])
                per_record.setdefault(c, f"{where} changes it record by record")


def _check_swap_input(where: str, step: dict[str, Any], state, per_record: dict[str, str]
                      ) -> None:
    """A swap step's columns as the steps before leave them (:func:`_check_step_chain`).

    Refused: a hierarchy, similar or carry-along column an earlier step changed record by
    record (``per_record``: blanked, PRAM'd, micro-aggregated, noised), which may then
    differ between household members or hold blanks; a hierarchy column that may hold
    missing values (e.g. after a ``band`` whose breaks leave values out).
    """
    sim = step["similar"]
    similar = list(dict.fromkeys(c for p in (sim if isinstance(sim[0], list) else [sim])
                                 for c in p))
    for role, cols in (("hierarchy", step["hierarchy"]), ("similar", similar),
                       ("carry-along", step["carry_along"])):
        for c in cols:
            if c in per_record:
                raise InputError(
                    f"{where}: {role} column {c!r} may no longer hold one value per household "
                    f"(or may hold blanks) after {per_record[c]}; swapping moves whole "
                    "households: put the swap step before that one, or leave "
                    f"{c!r} out of one of them")
            st = state(c)
            if role == "hierarchy" and st.missing:
                raise InputError(
                    f"{where}: hierarchy column {c!r} may have missing values"
                    + (f" after {st.missing_by}" if st.missing_by else "")
                    + "; every household needs a geography to swap: map those values to a "
                    "level (e.g. 'unknown') or leave the column out of the hierarchy")


def _as_left(col: str, changed: list[str]) -> str:
    """`` ('x' as step 1 (band) leaves it)``: the earlier steps behind a column's values."""
    if not changed:
        return ""
    return (f" ({col!r} as {changed[0]} leaves it)" if len(changed) == 1
            else f" ({col!r} as {', '.join(changed)} leave it)")


def _check_numeric_kind(where: str, c: str, st: _ColumnState, method: str) -> None:
    """A numeric method's column is numeric (not boolean), in the input and by its step."""
    if st.kind not in (None, "numeric"):
        if st.kind_by is None:
            what = ("boolean (True/False); {m} needs numeric measurements: protect a yes/no "
                    "variable with PRAM or recoding" if st.kind == "boolean" else
                    "not numeric; {m} needs numeric variables (a categorical variable is "
                    "protected by recoding or PRAM, not by {m})")
            raise InputError(f"{where}: column {c!r} is {what.format(m=method)}")
        raise InputError(
            f"{where}: column {c!r} is {st.kind} after {st.kind_by}; {method} needs numeric "
            f"variables: put this step before that one, or leave {c!r} out of one of them"
        )


def _check_finite(where: str, c: str, st: _ColumnState, frame) -> None:
    """Rank swapping takes missing values (they stay missing) but no infinite one.

    While only level steps changed the column its values at the step are known
    (``st.values``); otherwise the input's are checked: of the steps that may run before,
    only a top or bottom coding removes an infinite value, and after a random step its
    values are no longer followed, so such a chain is refused (the run would pass).
    """
    import numpy as np
    import pandas as pd

    from sdcbayes.microdata import _row_ref

    values = frame[c] if st.values is None else st.values
    if not pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(
            values.dtype):  # a kind not known before the run: the run's own check
        return
    x = values.to_numpy(dtype=np.float64, na_value=np.nan)
    if not np.isinf(x).any():
        return
    if st.values is not None and st.changed:
        raise InputError(
            f"{where}: column {c!r} has infinite values{_as_left(c, st.changed)}; replace "
            "them by missing or by a finite top code before rank swapping")
    raise InputError(
        f"{where}: column {c!r} has infinite values (first at "
        # named as every record in an error is (microdata._row_ref)
        f"{_row_ref(frame, int(np.flatnonzero(np.isinf(x))[0]))}"
        + (", in the input" if st.changed else "")
        + "); replace them by missing or by a finite top code (a top_code step before "
        "this one) before rank swapping")


def _check_numeric_complete(where: str, c: str, st: _ColumnState, method: str,
                            first_bad_record, options: bool, name: str) -> None:
    """Micro-aggregation and noise need a complete numeric column (``_numeric_matrix``)."""
    _check_numeric_kind(where, c, st, method)
    if not st.missing:
        return
    if st.missing_by is None:
        raise InputError(
            f"{where}: column {c!r} has missing or infinite values (first at "
            f"{first_bad_record(c)}); impute or drop them before {method}"
        )
    if "suppress" in st.missing_by:
        fix = (f"leave {c!r} out of --keys, or give the steps in a --recipe that runs "
               f"{name} before suppress" if options else
               f"put this step before that one, or leave {c!r} out of its keys")
        raise InputError(
            f"{where}: column {c!r} may have missing values after {st.missing_by}, and "
            f"{method} needs complete columns; {fix}"
        )
    raise InputError(
        f"{where}: column {c!r} has missing values after {st.missing_by}; {method} needs "
        f"complete columns: map those levels to values instead, or leave {c!r} out of one "
        "of the two steps"
    )


def _check_shuffle_predictor(where: str, c: str, st: _ColumnState, first_bad_record) -> None:
    """A shuffle's predictor may be of any kind but has no missing value (the model's)."""
    if not st.missing:
        return
    if st.missing_by is None:
        raise InputError(
            f"{where}: predictor {c!r} has missing or infinite values (first at "
            f"{first_bad_record(c)}); impute or drop them, or leave {c!r} out of the "
            "predictors")
    raise InputError(
        f"{where}: predictor {c!r} may have missing values after {st.missing_by}, and "
        "shuffling needs complete predictors; put this step before that one, or leave "
        f"{c!r} out of the predictors")


def _check_pram_input(where: str, c: str, st: _ColumnState, max_levels: int) -> None:
    """PRAM changes categories: no continuous column, no more than ``max_levels`` levels."""
    if st.values is not None:
        from sdcbayes.protection.base import codes_of
        from sdcbayes.protection.pram import _check_pram_column

        try:  # the method's own check (and words), on the distinct values
            _check_pram_column(st.values, c, len(codes_of(st.values)[1]), int(max_levels))
        except InputError as e:
            raise InputError(f"{where}: {e}{_as_left(c, st.changed)}") from None
        return
    if st.fraction is True or isinstance(st.fraction, float):
        raise InputError(
            f"{where}: column {c!r} is continuous after {st.kind_by}; PRAM changes "
            "categories: PRAM the column before that step, or leave it out of one of them"
        )


def _check_pram_matrix_levels(where: str, c: str, st: _ColumnState, rows) -> None:
    """A user PRAM matrix against the levels the column has at its step (before any work).

    The method's own conversion (:func:`sdcbayes.protection.pram._matrix_from_rows`)
    on the column's distinct values: a level the matrix names that the column lacks,
    or a level of the column without a row, is refused as the run would refuse it.
    """
    from sdcbayes.protection.base import codes_of
    from sdcbayes.protection.pram import _matrix_from_rows

    codes, levels = codes_of(st.values)
    try:
        _matrix_from_rows(rows, codes, levels, c)
    except InputError as e:
        raise InputError(f"{where}: {e}{_as_left(c, st.changed)}") from None


def _real(v, infinite: bool = False) -> bool:
    """A JSON number: int or float, not a boolean, finite unless ``infinite``."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    return not math.isnan(v) and (infinite or math.isfinite(v))


def _label(v) -> bool:
    """A category label a recipe may write: a string or a finite number."""
    return isinstance(v, str) or _real(v)


def _shown(v) -> str:
    """A recipe value as the recipe wrote it (JSON: ``null``, ``"no"``, ``[2]``)."""
    try:
        return json.dumps(v, allow_nan=True)
    except (TypeError, ValueError):
        return repr(v)


def _columns_of(step: dict[str, Any]) -> list[str]:
    out = []
    if "column" in step:
        out.append(step["column"])
    out += step.get("columns", [])
    if step["step"] in ("suppress", "nayak_zhang"):
        out += step["keys"]
    if step["step"] == "suppress_risk":
        out.append(step["key"])
    if step["step"] == "swap":  # the columns exchanged between households
        out += step["hierarchy"] + [c for c in step["carry_along"] if c not in out]
    for cols in (step.get("linked") or {}).values():  # the columns that follow a key's blanks
        out += [c for c in cols if c not in out]
    return out


def _check_household_role(household: str | None, keys: list[str], weight: str | None) -> None:
    """``--household`` is neither a key nor the weight (before any work)."""
    if household is None:
        return
    if household in keys:  # Microdata's refusal, said before the steps are checked
        raise InputError(f"column {household!r} is both a key and the household column; "
                         "remove it from --keys or from --household")
    if household == weight:
        raise InputError(f"--household and --weight name the same column {household!r}: the "
                         "household column holds ids, the weight column sampling weights; "
                         "name the household id column in --household")


def _check_household(steps: list[dict[str, Any]], household: str | None) -> None:
    """Refuse a step that changes the ``--household`` column (before any work).

    Its ids group the records for the household risk before and after, and it is
    released unchanged: a recode would merge households, PRAM, noise or micro-aggregation
    move records between them, a suppression (its keys, its ``linked`` columns) leave
    records without one. A step's stratum it may be (never changed).
    """
    if household is None:
        return
    for i, step in enumerate(steps, start=1):
        if household in _columns_of(step):
            raise InputError(
                f"step {i} ({step['step']}) changes the household column {household!r}, whose "
                "ids group the records for the household risk before and after (and are "
                "released unchanged): leave it out of the step, or leave out --household")


def _check_sensitive(steps: list[dict[str, Any]], sensitive: list[str] | None) -> None:
    """Refuse a step that changes a ``--sensitive`` column other than PRAM (before any work).

    The l-diversity before and after counts one variable's values in the key cells of
    the input and of the protected file: a recode, band or top code merges its values
    (fewer distinct values by construction, not by the key cells), noise and
    micro-aggregation make a continuous one distinct in nearly every record (an intruder
    still learns it up to the noise), a suppression's linked column or a swap's carried
    column blanks or moves it. PRAM is allowed, as sdcMicro practice applies it to
    sensitive variables: it keeps the levels, and the after counts the released values
    (what an intruder finding the cell reads). Nayak-Zhang PRAM perturbs keys: a sensitive
    column is none.
    """
    if not sensitive:
        return
    for i, step in enumerate(steps, start=1):
        if step["step"] == "pram":
            continue
        hit = [c for c in _columns_of(step) if c in sensitive]
        if hit:
            raise InputError(
                f"step {i} ({step['step']}) changes the --sensitive column(s) "
                f"{', '.join(repr(c) for c in hit)}, whose l-diversity before and after "
                "counts the values released unchanged (or PRAMmed): leave it out of the step, "
                "or out of --sensitive")


def _swap_unseen_notes(steps: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """A note per swap step that exchanged no key: its risk after is the risk before.

    Every risk measure reads the keys only, and a swap changes only its hierarchy and
    carry-along columns; with none of them a key, every record keeps its key values.
    """
    notes = []
    for i, step in enumerate(steps, start=1):
        if step["step"] != "swap":
            continue
        swapped = step["hierarchy"] + [c for c in step["carry_along"]
                                       if c not in step["hierarchy"]]
        if any(c in keys for c in swapped):
            continue
        one = len(swapped) == 1
        geo = ", ".join(step["hierarchy"])
        notes.append(
            f"step {i} (swap): {', '.join(swapped)} {'is not a key' if one else 'are not keys'}"
            ", so the risk after does not see the swap (the risk reads --keys only); add "
            f"{geo} to --keys to measure the risk with geography")
    return notes


def _count_keys_as_strata(steps: list[dict[str, Any]], frame, keys: list[str],
                          household: str | None) -> list[str]:
    """Keep the suppression steps from blanking a key that counts the household's records.

    With the household ids released (``--household``), a key equal in every household of
    the input to its number of records (:func:`~sdcbayes.protection.suppression.
    household_count_keys`: household size in a sample of whole households) is counted off
    the file exactly, whatever a step made of it (a blank, a band, a PRAMmed value, a value
    missing in the input): :func:`~sdcbayes.protection.suppression.household_completion`
    writes the exact count back, and the risk and k-anonymity after are counted so. Judged
    on the input only.

    - ``suppress``: the count keys among its keys are taken out of them
      (``_count_strata``), and :func:`_run_step` runs the step within the exact record
      count of each household (a temporary stratum column, counted on the step's input,
      never written): k-anonymity over the other keys within each count is k-anonymity
      over all keys with the count key read exactly (a record matches another only on an
      equal count, seed 001 section 3.2's frequencies with the blanks as wildcards), also
      where the key was recoded or is missing in the input. ``combs`` m becomes min(m,
      keys left) within those strata, which covers every subset of m keys with or without
      the count key (each lies in some m other keys plus the count) at the cost of more
      blanks; ``importance``, ``linked`` and an explicit ``household_keys`` list lose the
      count keys (a list left empty: the step runs without household keys, as none of its
      keys is then to be kept consistent). A step left without keys is refused.
    - ``suppress_risk``: a count key given as ``key`` is refused; the default key (the
      most levels, :func:`~sdcbayes.protection.suppression.default_risk_key`) is taken
      among the other keys instead (``_default_key``).

    Before any work; ``steps`` are changed in place (internal entries, ``_household`` the
    ids the counts are counted with, and the default key). Returns one note per step
    changed (warned, and kept in summary.json).

    Raises
    ------
    InputError
        A suppress step whose keys all count the household's records, or a
        suppress_risk step told to blank such a key.
    """
    if household is None:
        return []
    from sdcbayes.protection.suppression import default_risk_key, household_count_keys

    counting = household_count_keys(frame, keys, household) if any(
        s["step"] in ("suppress", "suppress_risk") for s in steps) else []
    notes = []
    released = f"counted off the file once the household id ({household}) is released"
    for i, step in enumerate(steps, start=1):
        name = step["step"]
        where = f"step {i} ({name})"
        if name == "suppress":
            moved = [c for c in step["keys"] if c in counting]
            if not moved:
                continue
            if len(moved) == len(step["keys"]):
                raise InputError(
                    f"{where}: its only key{'s' if len(moved) > 1 else ''} "
                    f"{', '.join(moved)} {'are' if len(moved) > 1 else 'is'} each household's "
                    f"number of records, {released}, so blanking it protects nothing: add "
                    + ("other keys to --keys" if step.get("_option") else
                       "other keys to the step's \"keys\"")
                    + " or leave out --household")
            step["_count_strata"] = moved
            step["_household"] = household
            hk = step.get("household_keys")
            dropped = [c for c in hk if c in moved] if isinstance(hk, list) else []
            notes.append(
                f"{where}: {', '.join(moved)} {'are' if len(moved) > 1 else 'is'} each "
                f"household's number of records, {released}: suppressed within each "
                "household's exact number of records instead of blanked"
                + (" (dropped from household_keys"
                   + (", which names no other key: run without household keys"
                      if len(dropped) == len(hk) else "") + ")" if dropped else ""))
        elif name == "suppress_risk" and step["key"] in counting:
            if not step.get("_default_key"):
                what = "--suppress-risk-key" if step.get("_option") else f"{where}: key"
                raise InputError(
                    f"{what} {step['key']!r} is each household's number of records, "
                    f"{released}, so its blanks would protect nothing; name another key")
            others = [c for c in keys if c not in counting]
            if not others:
                raise InputError(
                    f"{where}: every key ({', '.join(keys)}) is each household's number "
                    f"of records, {released}, so blanking one protects nothing; leave "
                    "out --household or the step")
            old, step["key"] = step["key"], default_risk_key(frame, others)
            notes.append(
                f"{where}: {old} is each household's number of records, {released}: "
                f"{step['key']} blanked instead (the default key among the others)")
    return notes


#: Name of the temporary stratum column holding each household's record count
#: (:func:`_run_step`); a suffix is added while the frame has a column of that name.
_COUNT_STRATUM = "_household_records"


def _with_count_stratum(frame, household: str):
    """``frame`` with a temporary column of each record's household's number of records.

    Returns the frame and the column's name (one the frame does not have). Counted on the
    frame given (a suppress step's input: its ids are the input's, no step changes them).
    """
    import numpy as np
    import pandas as pd

    name, n = _COUNT_STRATUM, 0
    while name in frame.columns:
        n += 1
        name = f"{_COUNT_STRATUM}_{n}"
    hh = np.asarray(pd.factorize(frame[household])[0], dtype=np.int64)  # ids: none missing
    return frame.assign(**{name: np.bincount(hh)[hh] if hh.size else hh}), name


def _suppress_args(step: dict[str, Any]) -> dict[str, Any]:
    """A suppress step's keyword arguments of ``local_suppression``, count keys left out.

    Without ``_count_strata`` (:func:`_count_keys_as_strata`) the step as given; with it,
    the count keys are no keys, no ``importance``, ``linked`` or ``household_keys`` entry,
    and ``combs`` is capped at the keys left; :func:`_run_step` adds their stratum.
    """
    moved = step.get("_count_strata") or []
    keys = [c for c in step["keys"] if c not in moved]
    imp = step.get("importance")
    if isinstance(imp, dict):
        imp = {k: v for k, v in imp.items() if k not in moved}
    elif isinstance(imp, list) and moved:  # ranks in the order of the step's keys
        imp = [r for k, r in zip(step["keys"], imp, strict=True) if k not in moved]
    combs = step.get("combs")
    if combs is not None and moved:
        combs = ([min(m, len(keys)) for m in combs] if isinstance(combs, list)
                 else min(combs, len(keys)))
    linked = step.get("linked")
    if linked and moved:
        linked = {k: v for k, v in linked.items() if k not in moved} or None
    household = _household_args(step)
    if household and isinstance(household["household_keys"], list) and moved:
        hk = [c for c in household["household_keys"] if c not in moved]
        household = {"household": household["household"], "household_keys": hk} if hk else {}
    return {"keys": keys, "importance": imp, "strata": list(step.get("strata") or []) or None,
            "combs": combs, "linked": linked, **household}


def _params(step: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in step.items() if k != "step" and k not in _INTERNAL}


def _level_lookup(series, tokens, where: str) -> dict:
    """Map text tokens (from the command line or JSON keys) to the column's own levels."""
    import pandas as pd

    from sdcbayes.protection.pram import level_text

    if isinstance(series.dtype, pd.CategoricalDtype):
        levels = list(series.cat.categories)
    else:
        levels = list(pd.unique(series.dropna()))
    by_text: dict[str, Any] = {}
    for lev in levels:
        by_text.setdefault(level_text(lev), lev)
    out = {}
    for t in tokens:
        if t in levels and not isinstance(t, str):
            out[t] = t
        elif level_text(t) in by_text:
            out[t] = by_text[level_text(t)]
        else:
            shown = ", ".join(level_text(v) for v in levels[:20])
            raise InputError(
                f"{where}: level {t!r} does not occur in the column; its levels are {shown}"
            )
    return out


#: Steps whose output levels follow from the input levels alone (no counts, no chance).
_LEVEL_STEPS = ("recode", "band", "top_code", "bottom_code")


def _check_recode_levels(steps: list[dict[str, Any]], frame) -> None:
    """Refuse, before any work, a recode naming a level its column will not have.

    The distinct values of each recoded column are followed through the steps in
    order: a recode, band, top- or bottom-coding is run on them (the code of the
    run itself, so the same levels come out), so a recipe that recodes levels an
    earlier recode created is checked too. After a step that may drop levels of a
    column (suppression, PRAM, micro-aggregation, noise) that column is left to the
    check at run time (:func:`_level_lookup`). A --recode's OLD text is split on "+"
    here, against the levels its column has at that step (:func:`_settle_recode`).
    """
    import pandas as pd

    recoded = {s["column"] for s in steps if s["step"] == "recode"}
    distinct: dict[str, Any] = {}
    changed: dict[str, list[int]] = {}  # column -> the earlier steps that changed it
    left: set[str] = set()  # columns whose levels depend on counts or chance
    for i, step in enumerate(steps, start=1):
        cols = [c for c in _columns_of(step) if c in recoded]
        if step["step"] not in _LEVEL_STEPS:
            left.update(cols)
            continue
        col = step["column"]
        if col not in recoded or col in left:
            continue
        if col not in distinct:
            s = frame[col]
            distinct[col] = (pd.Series(s.cat.categories, dtype=s.dtype)
                             if isinstance(s.dtype, pd.CategoricalDtype)
                             else s.dropna().drop_duplicates().reset_index(drop=True))
        values = distinct[col]
        if step["step"] == "recode":
            where = (f"--recode of {col!r}" if step.get("_option")
                     else f"step {i} (recode) of {col!r}")
            if changed.get(col):
                where += (" (after the earlier --recode)" if step.get("_option")
                          else f" (as step(s) {', '.join(map(str, changed[col]))} leave it)")
            _settle_recode(step, values, where)
            _level_lookup(values, list(step["mapping"]), where)  # one line, no work done
        try:
            out = _run_step(step, pd.DataFrame({col: values}), None).frame[col]
        except Exception:  # whatever the step says, it says at run time, with the data
            left.add(col)
            continue
        distinct[col] = (out if isinstance(out.dtype, pd.CategoricalDtype)
                         else out.dropna().drop_duplicates().reset_index(drop=True))
        changed.setdefault(col, []).append(i)


def _settle_recode(step: dict[str, Any], values, where: str) -> None:
    """Split a --recode's OLD text on "+" where the pieces are levels of the column.

    ``--recode age_group:70-79+80+=70+`` names the levels ``70-79`` and ``80+``: the
    "+" is a separator only where the text on both sides of it are levels (as text, as
    :func:`_level_lookup` matches them). The one split whose pieces are all levels is
    taken and the step's ``mapping`` set to it (so the summary shows it). No such split:
    the split at every "+" (empty pieces left out, as before) is kept when none of its
    pieces is part of a level holding "+" except as that level itself
    (:func:`_level_lookup` then names an unknown level, ``90s``); otherwise
    (``70-79+80`` beside the level ``80+``) refused, as are several splits (levels
    ``a``, ``b`` and ``a+b``), with the recipe's mapping form, which names each level
    on its own. A recipe's steps carry no ``_olds`` and are left as they are.

    Parameters
    ----------
    step : dict
        A validated ``recode`` step; its ``_olds`` (the OLD text) is removed.
    values : pandas.Series
        The column's values (or distinct values) as the step will see them.
    where : str
        How the step is named in an error (``--recode of 'age_group'``).

    Raises
    ------
    InputError
        When OLD splits into levels in more than one way, or, for a column with a level
        holding "+", in none.
    """
    import pandas as pd

    from sdcbayes.protection.pram import level_text

    olds = step.pop("_olds", None)
    if olds is None:
        return
    levels = (list(values.cat.categories) if isinstance(values.dtype, pd.CategoricalDtype)
              else list(pd.unique(values.dropna())))
    texts = {level_text(v) for v in levels}
    pieces = olds.split("+")
    # splits[k]: the ways to read pieces[:k] as levels (at most two are kept: enough to
    # tell one from several), each a list of levels; "+"-joined runs of pieces are tried
    splits: list[list[list[str]]] = [[[]]] + [[] for _ in pieces]
    for end in range(1, len(pieces) + 1):
        for start in range(end):
            token = "+".join(pieces[start:end])
            if token in texts:
                splits[end] += [ways + [token] for ways in splits[start]][:2 - len(splits[end])]
    found = splits[-1]
    new = next(iter(step["mapping"].values()))
    if len(found) == 1:
        step["mapping"] = dict.fromkeys(found[0], new)
        return
    naive = list(step["mapping"])  # split at every "+", empty pieces left out
    # pieces of the levels holding "+": an unknown piece that is none of them ("90s")
    # is a plain unknown level, which _level_lookup names (as before)
    plus_pieces = {p for t in texts if "+" in t for p in t.split("+")}
    if not found and all(t in texts or t not in plus_pieces for t in naive):
        return  # as before: "a++b" reads a, b
    shown = ", ".join(level_text(v) for v in levels[:20]) + (", ..." if len(levels) > 20 else "")
    example = json.dumps({"step": "recode", "column": step["column"],
                          "mapping": dict.fromkeys(found[0] if found else naive, new)})
    what = (f"{olds!r} splits on '+' into levels in more than one way "
            f"({' or '.join(json.dumps(f) for f in found)})" if found
            else f"{olds!r} does not split on '+' into levels of the column")
    raise InputError(
        f"{where}: {what}; its levels are {shown}; name the levels one by one in a --recipe "
        f"step, e.g. {example}"
    )


def _new_value(series, new):
    """NEW from the command line: a number when the column is numeric and NEW reads as one."""
    import pandas as pd

    if isinstance(new, str) and pd.api.types.is_numeric_dtype(series.dtype) and not isinstance(
        series.dtype, pd.CategoricalDtype
    ):
        try:
            v = float(new)
        except ValueError:
            return new
        return int(v) if v.is_integer() else v
    return new


def _run_step(step: dict[str, Any], frame, rng):
    """Apply one validated step with :mod:`sdcbayes.protection`."""
    from sdcbayes import protection as P

    name = step["step"]
    where = f"recode of {step.get('column')!r}"
    if name == "recode":
        col = step["column"]
        _settle_recode(step, frame[col], where)  # left to run time by _check_recode_levels
        lookup = _level_lookup(frame[col], list(step["mapping"]), where)
        mapping = {lookup[old]: _new_value(frame[col], new) if step.get("_from_text") else new
                   for old, new in step["mapping"].items()}
        return P.merge_levels(frame, col, mapping)
    if name == "band":
        return P.band(frame, step["column"], step["breaks"], labels=step.get("labels"),
                      right=step.get("right", False))
    if name in ("top_code", "bottom_code"):
        fn = P.top_code if name == "top_code" else P.bottom_code
        return fn(frame, step["column"], step["threshold"], replacement=step.get("replacement"))
    if name == "suppress":
        kw = _suppress_args(step)
        moved = step.get("_count_strata")
        if not moved:
            return P.local_suppression(frame, kw.pop("keys"), step["k"],
                                       method=step.get("method", "greedy"), **kw)
        # --household: a count key is read exactly off the released ids, never blanked;
        # the step runs within the exact counts, a stratum column dropped from its output
        import dataclasses

        data, tmp = _with_count_stratum(frame, step["_household"])
        kw["strata"] = (kw["strata"] or []) + [tmp]
        res = P.local_suppression(data, kw.pop("keys"), step["k"],
                                  method=step.get("method", "greedy"), **kw)
        # the summary names the count keys in its strata: their exact values
        summary = {**res.summary, "strata": list(step.get("strata") or []) + list(moved),
                   "count_keys_as_strata": list(moved)}
        return dataclasses.replace(res, frame=res.frame.drop(columns=tmp), summary=summary)
    if name == "suppress_risk":
        # the closed form on the file as the steps before leave it (the "before" risk for
        # the first step), as sdcMicro's localSupp reads the risk of its current object
        from sdcbayes.cli import microdata_with_notes

        m = step["_measure"]
        md, _ = microdata_with_notes(frame, keys=m["keys"], weight=m["weight"], **m["options"])
        risk = _closed_form(md, method=m.get("method", "exact")).records["risk"].to_numpy()
        del md
        return P.risk_suppression(frame, m["keys"], risk, step["threshold"], key=step["key"],
                                  linked=step.get("linked"), **_household_args(step))
    if name == "pram":
        kw = {k: step[k] for k in ("alpha", "max_levels") if k in step}
        if "_matrices" in step:
            kw["matrices"] = step["_matrices"]
        return P.invariant_pram(frame, step["columns"], pd_min=step["pd"],
                                strata=step.get("strata"), seed=rng, **kw)
    if name == "swap":
        res = P.record_swap(frame, household=step["_household"], hierarchy=step["hierarchy"],
                            similar=step["similar"], risk_variables=step["risk_variables"],
                            swap_rate=step["swap_rate"], k_anonymity=step["k"],
                            carry_along=step["carry_along"], seed=rng)
        return _swap_value_log(res, frame, step["hierarchy"] + step["carry_along"])
    if name == "nayak_zhang":
        return P.nayak_zhang_pram(frame, step["keys"], xi=step["xi"], theta=step.get("theta"),
                                  group_size=step.get("group_size"), seed=rng)
    if name == "microaggregate":
        kw = {k: step[k] for k in ("aggregate", "trim") if k in step}
        if step.get("method") == "sorted":  # sdcMicro's mafast: each column on its own
            return P.sorted_microaggregation(frame, step["columns"], step["k"], **kw)
        if step.get("method") in ("pca", "single", "simple"):  # sdcMicro's ordered methods
            return P.ordered_microaggregation(frame, step["columns"], step["k"],
                                              method=step["method"],
                                              varsort=step.get("varsort"), **kw)
        kw |= {k: step[k] for k in ("standardize",) if k in step}
        return P.mdav(frame, step["columns"], step["k"], **kw)
    if name == "noise":
        kw = {k: step[k] for k in ("delta", "p") if k in step}  # else sdcMicro's defaults
        return P.add_noise(frame, step["columns"], step["level"],
                           method=step.get("method", "additive"), seed=rng, **kw)
    if name == "rank_swap":
        return _rank_swap(step, frame, rng)
    if name == "shuffle":
        import warnings

        with warnings.catch_warnings():  # said by _shuffle_warnings, in the options' words
            warnings.filterwarnings("ignore", r"shuffle: predictor\(s\) .* enter as indicators")
            return P.shuffle(frame, step["columns"], step["predictors"],
                             method=step["method"], covmethod=step["covmethod"], seed=rng)
    raise AssertionError(name)  # pragma: no cover - _validate_step rejects unknown steps


def _rank_swap(step: dict[str, Any], frame, rng):
    """A ``rank_swap`` step: :func:`sdcbayes.protection.rank_swap`, its summary trimmed.

    The log is the method's, one row per variable (``rank_range``, ``n_swapped``,
    ``correlation``, ...). The summary loses ``source_of_record`` (one row number per
    record and variable: a file's worth, not a summary's) and gains
    ``columns_not_swapped``: the variables whose rank range came out below one record
    although their swapped values differ, so that nothing was swapped (the method's
    warning; :func:`_rank_swap_warnings` words it for the command line).
    """
    import dataclasses
    import warnings

    import numpy as np

    from sdcbayes import protection as P

    ranges = {k: step[k] for k in ("p", "r0", "k0") if k in step}
    with warnings.catch_warnings():  # said by _rank_swap_warnings, in the options' words
        warnings.filterwarnings("ignore", r"rank swapping of .* nothing is swapped")
        res = P.rank_swap(frame, step["columns"], top_percent=step["top_percent"],
                          bottom_percent=step["bottom_percent"], seed=rng, **ranges)
    unswapped = []
    for row in res.log.itertuples(index=False):
        if row.rank_range >= 1 or row.n_ranked < 2:
            continue
        x = frame[row.variable].to_numpy(dtype=np.float64, na_value=np.nan)
        x = np.sort(x[~np.isnan(x)])[::-1]  # the method's order: largest first
        mid = x[row.n_top:row.n_observed - row.n_bottom]  # the values it swaps
        if mid.min() < mid.max():
            unswapped.append(row.variable)
    summary = {k: v for k, v in res.summary.items() if k != "source_of_record"}
    return dataclasses.replace(res, summary=summary | {"columns_not_swapped": unswapped})


def _swap_value_log(res, frame, columns: list[str]):
    """A swap's result with its log as one row per changed value, as PRAM's log.

    :func:`~sdcbayes.protection.swapping.record_swap` logs one row per swapped household
    (its partner, the level, the hierarchy before and after); ``log.csv`` holds one row
    per changed value, ``record`` (0-based row), ``variable``, ``original`` and
    ``released``, as the other value-changing steps write it. The household pairs are
    counted in the step's result (``swapped_pairs``, ``swapped_households``) and listed
    there as ``pairs``: [selected household, its donor, the hierarchy column across which
    they swapped], in the order formed, the first :data:`SWAP_PAIRS_LISTED` of them.
    """
    import dataclasses

    import numpy as np
    import pandas as pd

    from sdcbayes.protection.base import same_cells
    from sdcbayes.provenance import json_safe

    parts = []
    for c in columns:
        idx = np.flatnonzero(~same_cells(frame[c], res.frame[c]))
        parts.append(pd.DataFrame({
            "record": idx.astype(np.int64),
            "variable": c,
            "original": frame[c].to_numpy(dtype=object)[idx],
            "released": res.frame[c].to_numpy(dtype=object)[idx],
        }))
    sel = res.log[res.log["role"] == "selected"].head(SWAP_PAIRS_LISTED)
    pairs = [[json_safe(h), json_safe(d), str(lv)] for h, d, lv in
             zip(sel["household"], sel["partner"], sel["level"], strict=True)]
    return dataclasses.replace(res, log=pd.concat(parts, ignore_index=True),
                               summary={**res.summary, "pairs": pairs})


def _household_args(step: dict[str, Any]) -> dict[str, Any]:
    """A suppression step's ``household``/``household_keys`` arguments (none without)."""
    if "household_keys" not in step:
        return {}
    return {"household": step["_household"], "household_keys": step["household_keys"]}


# --------------------------------------------------------------------------- measures
def _without_split_numbers(frame):
    """``frame`` without the CSV reader's ``attrs["split_numbers"]`` mark.

    The mark (:func:`sdcbayes.microdata._numbers_written_two_ways`: a key writing one
    number as two texts, ``'0'`` and ``'0.0'``) is the input file's; the steps' frames
    inherit it, so the "after" :class:`~sdcbayes.Microdata` repeated the input's
    warning with other counts (a blank takes a text out), and summary.json held it
    twice (audit UX F6). A shallow copy: the values are not copied.
    """
    if "split_numbers" not in frame.attrs:
        return frame
    out = frame.copy(deep=False)
    out.attrs = {k: v for k, v in frame.attrs.items() if k != "split_numbers"}
    return out


def _risk(frame, keys: list[str], weight: str | None, k: int,
          suppression: dict[str, Any] | None = None, threshold: float | None = None,
          household: str | None = None, l_diversity: dict[str, Any] | None = None,
          keep=None, method: str = "exact", frequencies=None,
          **md_options) -> tuple[dict[str, Any], list[str]]:
    """Closed-form risk of a file (seed 004 eq. 1-3) and its k-anonymity violations.

    ``method`` (``--method``): the closed form's formula, ``"exact"`` E(1/F | f) (seed 004
    eq. 3) or ``"approx"``, the approximation sdcMicro's measure_risk and localSupp read
    (:func:`sdcbayes.risk.assess.assess_closed_form`'s ``method``); every number below,
    the misclassification-adjusted ones after PRAM of a key included, is of its risks.

    Returns the counts and the file's :class:`sdcbayes.microdata.MicrodataWarning`
    caveats as one-line notes (:func:`sdcbayes.cli.microdata_with_notes`), which
    ``protect`` prints as ``assess`` does, not as raw Python warnings.

    ``k_anonymity_violations`` counts f_i < k over the whole file on ``keys``, f_i as
    ``assess`` counts it under ``--missing wildcard``: sdcMicro's ``freqCalc`` rule (a
    missing value matches any value; with two or more keys a complete record does not
    count the records whose keys are all missing, while a record whose keys are all
    missing counts every record of the file; README, "Missing key values"), as
    sdcMicro's own tests expect. With ``suppression`` (a validated suppress step) also
    ``k_anonymity_violations_suppression``: f_i < k as that step judges it
    (:func:`sdcbayes.protection.wildcard_frequencies` on its keys, within its
    strata; every wildcard matches), which is 0 right after the step unless a
    stratum is smaller than k. With ``threshold`` (a suppress_risk step's) also
    ``n_above_threshold``: records whose risk exceeds it. With ``household`` (the
    ``--household`` column, its ids unchanged by the steps) also assess's household keys
    ``n_households``, ``household_expected_reidentifications`` and
    ``household_expected_reidentified_households`` (:func:`assess_closed_form`'s: 1 - Π(1 -
    r_j) over a record's household, sdcMicro's hier_risk); the risk after is then measured
    on the completed file the caller passes
    (:func:`~sdcbayes.protection.suppression.household_completion`: the blanks the
    released ids give away read as shown). ``md_options``
    (``allow_weights_below_one``, ``max_levels``) go to :class:`Microdata`.

    ``keep`` (after PRAM of a key: per record the probability M_jj that PRAM kept its
    released key combination; after a swap of a key: 0 for a record whose key values the
    swap changed, else 1; their product after both: :func:`_misclassification`) makes the
    risk of each record M_jj r_i (Shlomo & Skinner 2010,
    :func:`sdcbayes.protection.pram.keep_probability`; a swapped record is matched
    correctly with probability 0, Shlomo, Tudor & Groom 2010): the expected
    re-identifications, their rate, the largest risk, the benchmark and threshold counts
    and the household risk (1 - Π(1 - M_jj r_j)) are then the adjusted ones, and
    ``misclassification["unadjusted"]`` keeps those of the risks read as true.

    ``frequencies`` (with ``keep``, after a swap of a key: :func:`_pre_swap_counts`, the
    same records with each swapped value still shown put back to its pre-swap one) is the
    frame whose cells count the r_i of the adjusted numbers: r_i then estimates
    1 / F_{x_i} from the records' true cell memberships, as the truth Σ_i 1[x̃_i = x_i] /
    F_{x̃_i} needs (Shlomo, Tudor & Groom 2010), rather than from the released cells,
    which the swap thinned. Its closed form is computed only then; the cells, sample
    uniques, k-anonymity, l-diversity and ``misclassification["unadjusted"]`` stay those
    of ``frame`` (the released file), and ``misclassification`` adds
    ``adjusted_on_released_counts``, the adjusted expected re-identifications with the
    released file's r_i (the difference the counts make).

    ``l_diversity`` (``--sensitive``: ``{"sensitive": columns, "c": c}``) adds
    ``l_diversity``, assess's block (:func:`sdcbayes.cli.l_diversity_outputs`; seed 001,
    Section 3.2) over the cells of the same :class:`Microdata`: its ``record_cell`` are
    the exact key patterns, a missing key value (a blank a step made, too) a level of its
    own per key, equal only to a missing one, as sdcMicro's ``ldiversity`` groups records
    (not the wildcard matching of the frequencies above); no record is dropped.
    """
    import numpy as np

    from sdcbayes.cli import microdata_with_notes
    from sdcbayes.protection import wildcard_frequencies

    md, notes = microdata_with_notes(frame, keys=keys, weight=weight,
                                     **({"household": household} if household else {}),
                                     **md_options)
    res = _closed_form(md, threshold, method=method)
    s = res.summary
    fk = res.records["fk"].to_numpy(dtype=float)
    out = {
        "n_records": s["n_records"],
        "n_cells": s["n_cells"],
        "n_sample_uniques": s["n_sample_uniques"],
        "expected_reidentifications": s["expected_reidentifications"],
        "expected_reidentification_rate": s["expected_reidentification_rate"],
        "max_risk": s["max_risk"],
        "n_above_benchmark": s["n_above_benchmark"],
        # fk with missing values as wildcards (sdcMicro's freqCalc: README "Missing key
        # values"), seed 001 sec. 3.2
        "k_anonymity_violations": int(np.count_nonzero(fk < k)),
        "n_missing_key_records": int(md.n_missing_key_records),
    }
    if threshold is not None:
        out["n_above_threshold"] = s["n_above_threshold"]
    out |= {key: s[key] for key in _HOUSEHOLD_CLOSED_FORM if key in s}
    if keep is not None:
        released_risk = res.records["risk"].to_numpy(dtype=float)
        risk = released_risk if frequencies is None else _pre_swap_risk(
            frequencies, keys, weight, household, threshold, method, md_options)
        _adjust_for_misclassification(out, risk, md, keep, threshold,
                                      released_risk=None if frequencies is None
                                      else released_risk)
    if l_diversity is not None:  # the block only: protect writes no records.csv
        from sdcbayes.cli import l_diversity_outputs

        out["l_diversity"] = l_diversity_outputs(md, frame, l_diversity["sensitive"],
                                                 l_diversity["c"])[1]
    # the per-record tables (codes, cells, risks: ~140 B/record) are let go before the
    # suppression's own counting, which would otherwise peak on top of them
    del md, res, fk
    if suppression is not None:
        out["k_anonymity_violations_suppression"] = int(np.count_nonzero(
            wildcard_frequencies(frame, suppression["keys"], suppression.get("strata")) < k))
    return out, notes


def _pre_swap_risk(frame, keys: list[str], weight: str | None, household: str | None,
                   threshold: float | None, method: str, md_options) -> Any:
    """Per record, the closed-form risk r_i of ``frame`` (:func:`_pre_swap_counts`'s).

    Seed 004 eq. 3 on the pre-swap cells; the frame's caveats are not said (it is not
    released, and its values are the input's and the released file's).
    """
    from sdcbayes.cli import microdata_with_notes

    md, _ = microdata_with_notes(frame, keys=keys, weight=weight,
                                 **({"household": household} if household else {}),
                                 **md_options)
    return _closed_form(md, threshold, method=method).records["risk"].to_numpy(dtype=float)


def _adjust_for_misclassification(out: dict[str, Any], risk, md, keep,
                                  threshold: float | None, released_risk=None) -> None:
    """``_risk``'s numbers from the risks M_jj r_i; the unadjusted ones kept beside them.

    Shlomo & Skinner (2010), Ann. Appl. Stat. 4(3):1291-1310: a released record in key
    combination j is the target an intruder knows to be in j with probability about
    M_jj / Σ_k M_jk F_k, and r_i, the closed form on the released file, estimates
    1 / Σ_k M_jk F_k (the released sample is one of the misclassified population);
    :func:`sdcbayes.protection.pram.keep_probability` says when the approximation is
    poor. After a swap of a key ``keep`` holds 0 for the records whose key values it
    changed (their correct-match probability 1[x̃_i = x_i] / F_{x̃_i} is 0; Shlomo, Tudor
    & Groom 2010), times M_jj where PRAM ran too, and ``risk`` is then r_i counted on
    the pre-swap cells (:func:`_pre_swap_counts`), which estimates 1 / F_{x_i} from the
    true cell memberships: ``released_risk``, the released file's r_i, gives
    ``misclassification["adjusted_on_released_counts"]`` (its adjusted expected
    re-identifications, which overstate the truth where the swap thinned rare cells). The
    household risk is 1 - Π(1 - M_jj r_j) over the household, as elsewhere.
    """
    import numpy as np

    from sdcbayes.risk.measures import benchmark_rule, household_risk

    names = ["expected_reidentifications", "expected_reidentification_rate", "max_risk",
             "n_above_benchmark", *(["n_above_threshold"] if threshold is not None else []),
             *(k for k in _HOUSEHOLD_CLOSED_FORM[1:] if k in out)]
    unadjusted = {k: out[k] for k in names}
    r_all = risk * np.asarray(keep, dtype=float)
    ok = ~np.isnan(r_all)
    r = r_all[ok]
    out["expected_reidentifications"] = float(r.sum())
    out["expected_reidentification_rate"] = float(r.sum() / max(r.size, 1))
    out["max_risk"] = float(r.max()) if r.size else float("nan")
    out["n_above_benchmark"] = int(np.count_nonzero(benchmark_rule(r)))
    if threshold is not None:
        out["n_above_threshold"] = int(np.count_nonzero(r > threshold))
    hh = getattr(md, "household_index", None)
    if hh is not None and "household_expected_reidentifications" in out:
        hh = np.asarray(hh)
        hrisk = household_risk(r_all, hh)
        _, first = np.unique(hh[ok], return_index=True)
        out["household_expected_reidentifications"] = float(hrisk[ok].sum())
        out["household_expected_reidentified_households"] = float(hrisk[ok][first].sum())
    out["misclassification"] = {"unadjusted": unadjusted}
    if released_risk is not None:  # the same factors on the released counts: the difference
        r_rel = (released_risk * np.asarray(keep, dtype=float))[ok]
        out["misclassification"]["adjusted_on_released_counts"] = {
            "expected_reidentifications": float(r_rel.sum())}


def _key_keep_probabilities(i: int, step: dict[str, Any], frame, res,
                            keys: list[str]) -> list[dict[str, Any]]:
    """A PRAM step's keep probabilities of the keys it changed ([] when it changed none).

    ``pram``: per PRAMmed key, the diagonal R_jj of the record's stratum's matrix at the
    value the step released (:func:`sdcbayes.protection.pram.keep_probability`).
    ``nayak_zhang``: 1 − θ/T_j of the released cell
    (:func:`sdcbayes.protection.pram.nayak_zhang_keep_probability`), one vector for the
    combination of its keys. ``swap``: no probabilities but ``changed``, per record and
    swapped key (hierarchy or carry-along column among ``keys``) whether the step changed
    its value (:func:`sdcbayes.protection.swapping.swapped_values`), which
    :func:`_misclassification` turns into a factor 0 or 1 once the later blanks are known,
    and ``before``, those keys' values in ``frame`` (the file the step read) for the
    records it changed, indexed by row position: :func:`_pre_swap_counts` puts them back
    to count the risks after on the pre-swap cells.
    """
    import numpy as np

    from sdcbayes.protection.pram import keep_probability, nayak_zhang_keep_probability

    if step["step"] == "swap":
        from sdcbayes.protection.swapping import swapped_values

        moved = step["hierarchy"] + [c for c in step["carry_along"]
                                     if c not in step["hierarchy"]]
        cols = [c for c in moved if c in keys]
        if not cols:  # no key exchanged: the risk after reads the keys it sees (a note says)
            return []
        changed = swapped_values(frame, res.frame, cols)
        # only the changed records' values (a small share of the file): what the counts of
        # the risk after put back (_pre_swap_counts)
        rows = np.flatnonzero(changed.any(axis=1))
        before = frame[cols].iloc[rows].set_axis(rows)
        return [{"step": i, "name": "swap", "columns": cols, "keep": {},
                 "changed": changed, "before": before}]
    if step["step"] == "nayak_zhang":
        cols = list(step["keys"])
        if not any(c in keys for c in cols):  # no key changed: the risk after reads them
            return []
        # its 1 - θ/T_j is the whole combination's keep probability: where the combination
        # holds a column that is no key, the keys' part is kept more often than that
        # (_misclassification then reads the keys as true)
        return [{"step": i, "name": "nayak_zhang", "columns": cols,
                 "non_keys": [c for c in cols if c not in keys],
                 "keep": {"+".join(cols): nayak_zhang_keep_probability(
                     frame, res.frame, cols, res.summary)}}]
    cols = [c for c in step["columns"] if c in keys and c in (res.summary.get("matrices") or {})]
    if not cols:
        return []
    keep = {c: keep_probability(
        res.frame, {"matrices": {c: res.summary["matrices"][c]},
                    "levels": {c: res.summary["levels"][c]}}, step.get("strata"))
        for c in cols}
    return [{"step": i, "name": "pram", "columns": cols, "keep": keep}]


def _misclassification(steps: list[dict[str, Any]], key_keeps: list[dict[str, Any]],
                       released, exact=(), shown=None):
    """The per-record factor of the risk after PRAM or a swap of keys, and its summary block.

    (None, None) when no step PRAMmed or swapped a key. The factor is the product of the
    steps' factors:

    - PRAM, Nayak-Zhang: M_jj (Shlomo & Skinner 2010;
      :func:`sdcbayes.protection.pram.keep_probability`); a key a later step blanks
      contributes 1 (a wildcard, which the closed form already reads as any value).
    - swap (targeted record swapping of the hierarchy and carry-along columns): 0 for a
      record whose key values the swap changed, else 1
      (:func:`sdcbayes.protection.swapping.swapped_match_factor`). Given the released file
      a record is correctly matched with probability 1[x̃_i = x_i] / F_{x̃_i}: one showing
      another household's geography is not found by an intruder who knows its true keys,
      and one who matches it on its released keys links it to someone else, so the risk
      after counts the records the swap left unperturbed (Shlomo, Tudor & Groom 2010). A
      record whose changed keys a later suppression all blanked gets 1 (the wildcards
      match its true values: findable through its other keys; conservative). The r_i it
      multiplies, an estimate of 1 / F_{x_i} with F the population's count of the TRUE
      values, is then counted on the pre-swap cells (:func:`_pre_swap_counts`), not on
      the released ones, which a targeted swap thins where the records were rare. The
      block adds ``swap`` (its method, rule, ``frequencies``, reference and one entry per
      swap step: ``changed_records``, ``blanked_records``, ``non_matching_records``) and
      ``swapped_records``, the records a swap left non-matching (factor 0).

    Not adjusted (None, with the reason in the block) when a key is PRAMmed by two steps
    (the keep probability of successive PRAMs is the diagonal of their product) or a later
    step other than suppression changes a PRAMmed key (the value released is then not the
    one PRAM drew), or a later step other than suppression changes a swapped key (whether
    the value released is the record's own is then not known here): the risk after then
    reads the keys as true.
    ``exact``: count keys the released household ids give exactly (``--household``), which
    the risk after reads as the exact count whatever PRAM drew or a swap carried: they
    count as neither PRAMmed nor swapped.
    A Nayak-Zhang step randomises its keys' combination as a whole: not adjusted when that
    combination holds a column the risk after does not read as PRAMmed (a non-key, or
    such a count key), whose keep probability would understate the keys'. A record with a
    key blanked after its PRAM or Nayak-Zhang step gets 1 from that step.
    ``shown``: the frame the risk after scores (default ``released``; with
    ``--household`` the completed one, where a mate may show a blanked swapped key), on
    which a swapped key's blanks are read.

    Rank swapping, noise and micro-aggregation of a key are not adjusted (read as true, a
    warning says so): an intruder can look near a perturbed numeric value, which an
    exact-match count does not describe.
    """
    import numpy as np

    from sdcbayes.protection.pram import MISCLASSIFICATION_METHOD
    from sdcbayes.protection.swapping import (
        SWAP_RISK_FREQUENCIES,
        SWAP_RISK_METHOD,
        SWAP_RISK_REFERENCE,
        swapped_match_factor,
    )

    def without_exact(k):
        if k["name"] == "pram":
            return k | {"columns": [c for c in k["columns"] if c not in exact],
                        "keep": {n: v for n, v in k["keep"].items() if n not in exact}}
        if k["name"] == "swap":
            return _swap_without(k, exact)
        return k

    key_keeps = [k for k in map(without_exact, key_keeps) if k["columns"]]
    if not key_keeps:
        return None, None
    swaps = [k for k in key_keeps if k["name"] == "swap"]
    prams = [k for k in key_keeps if k["name"] != "swap"]
    pram_ref = ("Shlomo & Skinner (2010), Annals of Applied Statistics 4(3):1291-1310, "
                "doi:10.1214/09-AOAS317")
    block: dict[str, Any] = {
        "method": "; ".join([MISCLASSIFICATION_METHOD] * bool(prams)
                            + [SWAP_RISK_METHOD] * bool(swaps)),
        "reference": "; ".join([pram_ref] * bool(prams) + [SWAP_RISK_REFERENCE] * bool(swaps)),
        "steps": [k["step"] for k in key_keeps],
        "keys": sorted({c for k in key_keeps for c in k["columns"]}),
    }
    reason = None
    seen: dict[str, int] = {}
    for k in prams:
        if k["name"] == "nayak_zhang" and reason is None:
            beyond = k.get("non_keys", []) + [c for c in k["columns"] if c in exact]
            if beyond:
                reason = (f"Nayak-Zhang step {k['step']} randomises {beyond[0]!r} with the keys, "
                          "which the risk after does not read as PRAMmed (a non-key, or a "
                          "count the household ids give exactly): the keep probability of its "
                          "whole combination would understate how often the keys are kept")
        for c in k["columns"]:
            if c in seen and reason is None:
                reason = (f"key {c!r} is PRAMmed by steps {seen[c]} and {k['step']}: the keep "
                          "probability of successive PRAMs is the diagonal of their product")
            seen.setdefault(c, k["step"])
        for j, later in enumerate(steps[k["step"]:], start=k["step"] + 1):
            hit = [c for c in _columns_of(later) if c in k["columns"]]
            if (hit and later["step"] not in ("suppress", "suppress_risk", "pram",
                                              "nayak_zhang") and reason is None):
                reason = (f"step {j} ({later['step']}) changes {hit[0]!r} after PRAM step "
                          f"{k['step']}: the value released is not the one PRAM drew")
    for k in swaps:  # only a blank may follow: it hides the swapped value, changes none
        for j, later in enumerate(steps[k["step"]:], start=k["step"] + 1):
            hit = [c for c in _columns_of(later) if c in k["columns"]]
            if hit and later["step"] not in ("suppress", "suppress_risk") and reason is None:
                reason = (f"step {j} ({later['step']}) changes {hit[0]!r} after swap step "
                          f"{k['step']}: whether the value released is the record's own is "
                          "not known from the swap alone")
    if reason is not None:
        what = " and ".join(["PRAMmed"] * bool(prams) + ["swapped"] * bool(swaps))
        block["method"] = f"none: the risk after reads the {what} keys as true"
        block["not_adjusted_because"] = reason
        return None, block
    keep = np.ones(len(released))
    for k in prams:
        for name, vec in k["keep"].items():
            # blanked later: a wildcard, no released value to trust; for Nayak-Zhang any of
            # its keys blanked (its shown part is kept at least as often: 1, conservative)
            cols = k["columns"] if k["name"] == "nayak_zhang" else [name]
            vec = np.where(released[cols].isna().any(axis=1).to_numpy(), 1.0, vec)
            keep = keep * vec
    if swaps:
        shown = released if shown is None else shown
        matchable = np.ones(len(released))
        entries = []
        for k in swaps:
            factor = swapped_match_factor(k["changed"], shown, k["columns"])
            changed = k["changed"].any(axis=1)
            entries.append({"step": k["step"], "keys": k["columns"],
                            "changed_records": int(changed.sum()),
                            "blanked_records": int(np.count_nonzero(changed & (factor == 1))),
                            "non_matching_records": int(np.count_nonzero(factor == 0))})
            matchable = matchable * factor
        keep = keep * matchable
        block["swap"] = {
            "method": SWAP_RISK_METHOD,
            "rule": "a record whose key values a swap changed counts 0 (it shows another "
                    "household's values: not found on its true keys, and a match on its "
                    "released keys is someone else), unless a later suppression blanked "
                    "every changed key (a wildcard: 1); the others count their closed-form "
                    "risk, with the frequencies of their true cells: every swapped value "
                    "still shown put back to its pre-swap one (the released counts "
                    "understate them where the swap moved the rare records out). Cells, "
                    "sample uniques and k-anonymity read the released values",
            "frequencies": SWAP_RISK_FREQUENCIES,
            "reference": SWAP_RISK_REFERENCE,
            "steps": entries,
        }
        block["swapped_records"] = int(np.count_nonzero(matchable == 0))
    block["mean_keep_probability"] = float(keep.mean()) if keep.size else float("nan")
    block["min_keep_probability"] = float(keep.min()) if keep.size else float("nan")
    return keep, block


def _swap_without(k: dict[str, Any], exact) -> dict[str, Any]:
    """A swap step's ``key_keeps`` entry without the count keys in ``exact``."""
    j = [n for n, c in enumerate(k["columns"]) if c not in exact]
    cols = [k["columns"][n] for n in j]
    return k | {"columns": cols, "changed": k["changed"][:, j], "before": k["before"][cols]}


def _pre_swap_counts(key_keeps: list[dict[str, Any]], shown, misclassification,
                     exact=()):
    """The frame whose cells count the adjusted risks after a swap of a key (else None).

    None unless :func:`_misclassification`'s block holds an adjusted ``swap``. Else
    ``shown`` (the frame the risk after scores: with ``--household`` the completed one)
    with every value a swap step changed, and that is still shown, put back to the value
    it had before that step (a later blank stays blank; values no swap changed, PRAMmed
    ones included, stay as released): :func:`sdcbayes.protection.swapping.pre_swap_frame`
    per swap step. The truth the risk after estimates is Σ_i 1[x̃_i = x_i] / F_{x̃_i}, F
    the population's count of the true values (Shlomo, Tudor & Groom 2010): the records
    the swap left in place have the same key values in both frames, and only their cell
    counts (f_k, F̂_k) change; the swapped ones get factor 0 anyway. The data holder has
    the pre-swap values: the risk is its measure, not what an intruder computes.
    """
    from sdcbayes.protection.swapping import pre_swap_frame

    if not misclassification or "not_adjusted_because" in misclassification \
            or "swap" not in misclassification:
        return None
    out = shown
    for k in key_keeps:
        if k["name"] != "swap":
            continue
        k = _swap_without(k, exact)
        if k["columns"]:  # no step changes its keys later (else not adjusted): any order
            out = pre_swap_frame(out, k["changed"], k["before"], k["columns"])
    return out


#: assess_closed_form's household keys, which ``_risk`` keeps (with ``--household``).
_HOUSEHOLD_CLOSED_FORM = ("n_households", "household_expected_reidentifications",
                          "household_expected_reidentified_households")


def _closed_form(md, threshold: float | None = None, method: str = "exact"):
    """:func:`sdcbayes.risk.assess.assess_closed_form` without its Python warnings.

    ``method``: ``"exact"`` or ``"approx"`` (``--method``; Benedetti-Franconi, seed 004
    eq. 3, or sdcMicro's approximation of it).

    The file's caveats come from :func:`sdcbayes.cli.microdata_with_notes` (printed
    once, as ``sdcbayes: warning:`` lines) and ``--weight``'s help says what a file
    without weights means; the assessment's own warning of that case would reach the
    terminal as a raw Python warning, once per measurement.
    """
    import warnings

    from sdcbayes.microdata import MicrodataWarning
    from sdcbayes.risk.assess import assess_closed_form

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MicrodataWarning)
        return assess_closed_form(md, method=method, threshold=threshold)


#: The demo's closed-form expected re-identifications before and after k = 3 local
#: suppression (greedy), by ``--method``: the numbers :func:`_estimator_notes` quotes
#: (recomputed by tests/test_protect_audit_dd5.py and tests/test_protect_method.py).
_DEMO_CLOSED_FORM = {"exact": ("98.68", "14.88"), "approx": ("98.78", "14.92")}


def _estimator_notes(weight: str | None, method: str = "exact") -> list[str]:
    """What the risk before and after is, and how far to trust it for a sample file.

    The closed form reads a file with blanks (wildcards) on its own; the latent-class
    model does from a fit of the original (``--model latent-class``). On a sample
    (``--weight``) the closed form understates the risk: on the demo (population
    known, audit DD5) 98.68 expected
    re-identifications against a true 245.31 before protection, and after k = 3
    local suppression 14.88 against a true 29.19. Without a weight the file is taken
    as the whole population, where the closed form is exact (risk 1/f). ``method``
    (``--method``) names the formula (:data:`RISK_ESTIMATORS`) and picks the demo's numbers
    of that formula (:data:`_DEMO_CLOSED_FORM`).
    """
    if weight is None:
        return []
    before, after = _DEMO_CLOSED_FORM[method]
    return [
        f"Risk before and after: the {RISK_ESTIMATORS[method]}, the plug-in sdcMicro and "
        "mu-Argus report. It understates the risk of a sample file, also after protection: "
        f"on the demo sample, whose population is known, {before} expected "
        f"re-identifications against a true 245.31 before, and {after} against a true "
        "29.19 after local suppression to k = 3. The posterior models (sdcbayes assess) "
        "cannot yet measure a file with suppressed values on their own; protect --model "
        "latent-class measures the risk before and after from one fit of the input (about "
        "29 after k = 3 on the demo)."
    ]


# --------------------------------------------------------------------------- latent-class
#: Steps whose new value of a record is no function of its own value: the released-file
#: risk (:func:`sdcbayes.risk.released.assess_released`) cannot score a key they touch.
#: Step -> how it sets the values (the refusal's words). The level steps
#: (:data:`_LEVEL_STEPS`: a value's new value follows from the value alone, with settings
#: that do not depend on the data) are scored through :func:`_key_level_maps`.
_RANDOM_KEY_STEPS = {
    "pram": "at random",
    "nayak_zhang": "at random",
    "swap": "by exchanging them between households",
    "microaggregate": "to a value per group of records (its mean, median, ...)",
    "noise": "at random",
    "rank_swap": "by exchanging them between records",
    "shuffle": "by reassigning them between records",
}
#: How the latent-class fit reads a missing key value under ``--missing``.
MISSING_READING = {
    "category": "a missing key value of the input is a level of its own; a value the steps "
                "blank matches every level",
    "drop": "records with a missing key value are left out of the fit and of its risk; the "
            "kept records' weights stand for them",
}


def _sampler_options(model: str, weight: str | None, *, draws: int | None,
                     chains: int | None, tune: int | None,
                     cores: int | None, missing: str | None = None,
                     structural_zeros: str | None = None) -> dict[str, Any] | None:
    """The latent-class fit's settings (``assess``'s defaults), or None for the closed form.

    Checked before the file is read: sampler options, ``--missing`` and
    ``--structural-zeros`` without ``--model latent-class`` (they would be stamped as if
    used; the closed form always reads a missing key value as matching every value), the
    model without ``--weight`` (it needs the population size), values below 1 (0 for
    ``--tune``), and ``--structural-zeros auto``: ``assess`` reads such rules off the
    sample, unconfirmed, which may forbid combinations the population has and so leave
    their people out of a released record's count; a release decision takes the rules
    its maker has confirmed (a file), or none.
    """
    given = [o for o, v in (("--draws", draws), ("--chains", chains), ("--tune", tune),
                            ("--cores", cores), ("--missing", missing),
                            ("--structural-zeros", structural_zeros)) if v is not None]
    if model == "closed-form":
        if given:
            raise InputError(
                f"{', '.join(given)} set{'s' if len(given) == 1 else ''} the latent-class fit, "
                "but --model closed-form fits nothing"
                + ("; its missing key values always match every value (sdcMicro)"
                   if missing is not None else "")
                + ": add --model latent-class, or leave "
                f"{'it' if len(given) == 1 else 'them'} out")
        return None
    if structural_zeros == "auto":
        raise InputError(
            "--structural-zeros auto reads rules off the sample, unconfirmed (as sdcbayes "
            "assess does), and an unconfirmed rule may forbid key combinations the population "
            "has, leaving their people out of the protected records' counts: give the rules "
            "you have confirmed, --structural-zeros RULES.json, or leave the option out")
    if weight is None:
        raise InputError(
            "--model latent-class estimates the population counts, so it needs the sampling "
            "weights: give --weight, or use --model closed-form (without weights every record "
            "counts as its own population)")
    from sdcbayes.risk.posterior_assess import sampler_settings

    used = sampler_settings("latent-class", draws, chains, tune)  # assess's defaults
    for name, value, low in (("--draws", used["draws"], 1), ("--chains", used["chains"], 1),
                             ("--tune", used["tune"], 0),
                             ("--cores", 1 if cores is None else cores, 1)):
        if value < low:
            raise InputError(f"{name} must be at least {low}; got {value}")
    return {**used, "cores": cores}


def _check_released_route(steps: list[dict[str, Any]], frame, keys: list[str],
                          weight: str | None, missing: str | None = None,
                          counted: list[str] | tuple[str, ...] = ()) -> None:
    """Refuse, before any work, what ``--model latent-class`` cannot score after the steps.

    The protected file is scored from the fit of the input
    (:func:`sdcbayes.risk.released.assess_released`): each released key value must be
    blank or a function of the record's own input value, the same for every record (a
    recode, band, top or bottom coding: :func:`_key_level_maps`). Refused: PRAM,
    Nayak-Zhang PRAM, micro-aggregation or noise of a key (the new value is drawn at
    random or is a mean over other records), a step that changes the weight column (the
    fit's population), and, without ``missing`` (``--missing category`` or ``drop``), an
    input with missing key values (a value blank before the steps is no key combination
    the fit has). ``counted``: the keys the released household ids count
    (``--household``, :func:`~sdcbayes.protection.suppression.household_count_keys`),
    scored at their exact counts whatever a step made of them, so no step of theirs is
    refused; ``frame`` is then the input as the ids complete it (their missing values
    filled with the counts).
    """
    for i, s in enumerate(steps, start=1):
        cols = _columns_of(s)
        how = _RANDOM_KEY_STEPS.get(s["step"])
        hit = [c for c in cols if c in keys and c not in counted] if how else []
        if hit:
            raise InputError(
                f"step {i} ({s['step']}) changes the values of key(s) {', '.join(hit)} {how}, "
                "so a released value is no function of the record's own: --model latent-class "
                "scores key values kept, blanked (suppress, suppress_risk) or recoded level by "
                "level (recode, band, top_code, bottom_code); use --model closed-form, or "
                f"leave the key{'s' if len(hit) > 1 else ''} out of the step")
        if weight is not None and weight in cols:
            raise InputError(
                f"step {i} ({s['step']}) changes the weight column {weight!r}, whose input "
                "values the --model latent-class fit extrapolates with: use --model "
                "closed-form, or leave the weight column out of the step")
    holes = [k for k in keys if bool(frame[k].isna().any())]
    if holes and missing is None:
        n = int(frame[holes].isna().any(axis=1).sum())
        raise InputError(
            f"{n:,} record(s) of the input have a missing value of key(s) "
            f"{', '.join(holes)}, which --model latent-class cannot fit as they are: add "
            "--missing category (a missing value is a level of its own) or --missing drop "
            "(those records left out of the fit and its risk), or use --model closed-form, "
            "where a missing value matches every value")


def _key_level_maps(steps: list[dict[str, Any]], frame, md, keys: list[str]
                    ) -> dict[str, dict[Any, Any]]:
    """Each recoded key's complete map: level of the fit -> its value in the protected file.

    The level steps (:data:`_LEVEL_STEPS`: recode, band, top and bottom coding) set a
    value from the value alone, with settings that do not depend on the data, so
    running them on the fit's levels themselves (a one-column frame of ``md.levels[k]``,
    in the column's dtype; a categorical keeps its declared categories, unobserved ones
    included) gives the value every record of a level is released with, unless blanked:
    the same code (:func:`_run_step`) as the run, in recipe order, each step on the
    output of the previous one. Suppression (``suppress``, ``suppress_risk``) only
    blanks and is skipped, so a recode after it is fine (a blank stays blank, a shown
    value is the recode's). PRAM, noise and micro-aggregation of a key were refused
    before (:func:`_check_released_route`). A level mapped to missing would be blank in
    every record of that level and maps to NaN (``protect``'s recode refuses a missing
    new level, so only the Python API can ask for it).

    Parameters
    ----------
    steps : list of dict
        The validated steps, after :func:`_check_recode_levels` (a --recode's OLD text
        is settled there; the steps are copied here, never changed).
    frame : pandas.DataFrame
        The input (its dtypes, for the one-column frames).
    md : sdcbayes.Microdata
        The fit's input (``md.levels``; under ``missing="category"`` the fit's extra
        level :data:`MISSING_LEVEL` maps to itself: a missing value stays missing through
        every level step).
    keys : list of str
        The key variables.

    Returns
    -------
    dict
        Key -> {level: released value} for each key whose values a step changes
        (``recodes=`` of :func:`sdcbayes.risk.released.assess_released`); the keys no step
        changes are left out, so a run without level steps on keys gives ``{}``.

    Raises
    ------
    InputError
        A step the levels refuse (as the run would refuse it on the data), named by its
        number.
    """
    import pandas as pd

    maps: dict[str, dict[Any, Any]] = {}
    for k in keys:
        mine = [(i, s) for i, s in enumerate(steps, start=1)
                if s["step"] in _LEVEL_STEPS and s["column"] == k]
        if not mine:
            continue
        levels = list(md.levels[k])
        s = frame[k]
        if isinstance(s.dtype, pd.CategoricalDtype):
            values = pd.Series(pd.Categorical(levels, categories=s.cat.categories,
                                              ordered=s.cat.ordered))
        else:
            try:
                values = pd.Series(levels, dtype=s.dtype)
            except (TypeError, ValueError):  # pragma: no cover - levels keep the dtype
                values = pd.Series(levels)
        current = pd.DataFrame({k: values})
        for i, step in mine:
            try:
                # a copy: _run_step settles a --recode's OLD text in the step it is given
                current = _run_step(dict(step), current, None).frame
            except InputError as e:
                raise type(e)(f"step {i} ({step['step']}): {e}") from e
        out = current[k].astype(object).tolist()  # rows stay aligned with the levels
        image = {lev: (math.nan if pd.isna(v) else v) for lev, v in zip(levels, out,
                                                                          strict=True)}
        if md.missing == "category" and md.n_levels[k] > len(levels):
            image[MISSING_LEVEL] = MISSING_LEVEL  # missing stays missing through each step
        if any(not (isinstance(v, str) == isinstance(lev, str) and v == lev)
               for lev, v in image.items()):
            maps[k] = image
    return maps


def _recode_counts(maps: dict[str, dict[Any, Any]]) -> dict[str, dict[str, int]]:
    """Per recoded key: its levels in the fit, its released values, levels blanked."""
    import pandas as pd

    out = {}
    for k, image in maps.items():
        shown = [v for v in image.values() if not pd.isna(v)]
        out[k] = {"levels": len(image), "released_values": len(set(shown))}
        if len(shown) < len(image):
            out[k]["levels_blanked"] = len(image) - len(shown)
    return out


def _latent_class_input(frame, keys: list[str], weight: str | None,
                        md_options: dict[str, Any], household: str | None = None):
    """The input as the latent-class fit reads it, with ``assess``'s checks, before any work.

    Returns the :class:`~sdcbayes.Microdata` of the input (its caveats are printed by the
    closed-form "before", which validates the same file). With ``household`` (``--household``)
    it holds the households, as ``assess --household``'s does: the fit's cross-validation
    keeps them whole (``LatentClassModel.from_microdata``) and the released file's household
    risk reads them (:func:`~sdcbayes.risk.released.assess_released`).
    """
    from sdcbayes.cli import microdata_with_notes
    from sdcbayes.microdata import require_population_beyond_sample
    from sdcbayes.models.latent_class import CV_MIN_RECORDS
    from sdcbayes.risk.posterior_assess import population_is_sample

    md, _ = microdata_with_notes(frame, keys=keys, weight=weight,
                                 **({"household": household} if household else {}),
                                 **md_options)
    require_population_beyond_sample(md, "latent-class", instead="or use --model closed-form")
    if md.n_records < CV_MIN_RECORDS and not population_is_sample(md, "latent-class"):
        raise InputError(
            f"--model latent-class cross-validates its overdispersion on parts of the sample, "
            f"which needs at least {CV_MIN_RECORDS} records; got {md.n_records}: use --model "
            "closed-form")
    return md


def _fit_latent_class(md, sampler: dict[str, Any], seed: int, *, quiet: bool,
                      structural_zeros: list[dict[str, Any]] | None = None):
    """``sdcbayes assess``'s latent-class fit of the input, keeping the class profiles.

    :func:`sdcbayes.cli._fit_posterior` (its progress line and bars, its warnings as
    one-line messages on stderr) with ``store_profiles=True``, which
    :func:`sdcbayes.risk.released.assess_released` needs for key combinations the sample
    never had; no predictive check (``assess``'s ``--ppc``: not a number ``protect``
    reports). ``structural_zeros``: the checked rules of ``--structural-zeros RULES.json``
    (:func:`sdcbayes.cli.check_structural_zero_rules`), fitted as ``assess`` fits them and
    stamped by the fit, whose stamp :func:`assess_released` reads back.
    """
    from sdcbayes.cli import _fit_posterior

    return _fit_posterior(
        md, "latent-class", draws=sampler["draws"], chains=sampler["chains"],
        tune=sampler["tune"], seed=seed, fit_method="gibbs", threshold=None, strict=False,
        quiet=quiet, model_options={"store_profiles": True} | (
            {"structural_zeros": structural_zeros} if structural_zeros else {}),
        cores=sampler["cores"])


def _score_released(md, frame, fit, *, quiet: bool,
                    recodes: dict[str, dict[Any, Any]] | None = None,
                    seed: int | None = None):
    """The protected ``frame`` scored from the input's fit (:func:`assess_released`).

    With ``--household`` ``frame`` is the completed file (the blanks a household mate
    shows read as shown, a count key read as the exact count), as the closed form's.

    ``seed``: protect's ``--seed``, passed as ``random_seed`` (the predictive draw of the
    expected re-identifications after, so that ``--seed`` repeats its interval too);
    None lets :func:`assess_released` draw one and stamp it.

    ``recodes``: each recoded key's map level -> released value (:func:`_key_level_maps`),
    passed as ``assess_released(..., recodes=recodes)`` only when a step recoded a key,
    so a run that only blanks makes the call it always made.
    :func:`assess_released` checks its own diagnostics (R-hat, ESS of the ER given the
    parameters; nothing where the sample is the population); their problems are printed
    here as ``sdcbayes: warning: risk after protection: ...``, in the command line's
    words, and kept so under ``diagnostics.problems``. Its :class:`InputError` (what
    protect's checks before the work should have refused) is re-raised as protect's bug,
    with the command line's advice (``--model closed-form``); its own words, written for
    Python callers, follow only "for the report".
    """
    import warnings

    from sdcbayes.cli import cli_wording
    from sdcbayes.inference.diagnostics import ConvergenceWarning
    from sdcbayes.risk.released import assess_released

    if not quiet:
        click.echo("scoring the protected file from the same draws ...", err=True)
    try:
        with warnings.catch_warnings():
            # its convergence warnings are diagnostics.problems: printed below, once
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = assess_released(md, frame, fit.idata,
                                  **({"recodes": recodes} if recodes else {}),
                                  **({"random_seed": seed} if seed is not None else {}))
    except InputError as e:
        # protect's checks before the work (_check_released_route, _key_level_maps) refuse
        # what assess_released cannot score, so this is their bug; its message speaks to
        # Python callers (recodes=, Microdata(...)), so it is kept for the report only
        raise type(e)(
            "after the steps, the protected file could not be scored from the fit, which "
            "protect's own checks should have refused before any work: a bug in protect, "
            "please report it with the recipe; meanwhile use --model closed-form (for the "
            f"report: {' '.join(str(e).split())})") from e
    diag = dict(res.summary["diagnostics"])
    # named as the "after" ones: report.html's warning box lists the fit's beside them
    diag["problems"] = [f"risk after protection: {cli_wording(' '.join(p.split()))}"
                        for p in diag.get("problems", [])]
    res.summary["diagnostics"] = diag
    for p in diag["problems"]:
        click.echo(f"sdcbayes: warning: {p}", err=True)
    return res


#: The estimator of ``--model latent-class`` (summary.json's ``risk.estimator``).
LATENT_CLASS_ESTIMATOR = ("latent-class model, fitted once on the input; after: the protected "
                          "file scored from the same draws")
#: What the "before" interval is over (as ``sdcbayes assess`` reports it).
PREDICTIVE_KIND = ("predictive: over the posterior predictive (the parameters and the unknown "
                   "population counts together)")


def _latent_class_risk(fit, released, before_cf: dict[str, Any], after_cf: dict[str, Any],
                       k: int, sampler: dict[str, Any], seed: int,
                       recodes: dict[str, dict[Any, Any]] | None = None,
                       missing: str | None = None,
                       structural_zeros: tuple[Path, list] | None = None,
                       closed_form_method: str = "exact") -> dict[str, Any]:
    """summary.json's ``risk`` under ``--model latent-class``.

    ``closed_form_method`` (``--method``) names the closed form's formula in
    ``closed_form.estimator`` (:data:`RISK_ESTIMATORS`).

    ``fit`` also names, when given, ``--missing`` (``missing``), the recoded keys
    (``recoded_keys``: per key the fit's levels and the released values they map to,
    :func:`_recode_counts` of :func:`_key_level_maps`) and ``--structural-zeros``
    (``structural_zeros``: the file and its checked rules; ``structural_zeros_file`` and
    ``structural_zero_rules``, the rules as the scoring of the protected file read them
    back from the fit).

    ``before`` and ``after`` hold the model-free counts of ``_risk`` (sample uniques,
    k-anonymity, ...) and the model's numbers: before, the fit's assessment of the input
    (posterior predictive intervals); after, :func:`assess_released` on the protected
    file (posterior predictive intervals too, its ``interval_kind``; ``_hyper_interval``
    over the parameters only, as before's). ``closed_form`` holds
    the closed form's ``before`` and ``after`` as ``--model closed-form`` writes them
    (sdcMicro parity), ``fit`` the fit's settings and the cross-validated overdispersion.
    """
    from sdcbayes.report import PROTECT_MODEL_FREE  # the rows its report shows

    s, r = fit.summary, released.summary
    before = {key: before_cf[key] for key in PROTECT_MODEL_FREE if key in before_cf} | {
        "expected_reidentifications": s["expected_reidentifications"],
        "expected_reidentifications_interval": s["expected_reidentifications_interval"],
        "interval_kind": PREDICTIVE_KIND,
        "expected_reidentifications_hyper_interval":
            s["expected_reidentifications_hyper_interval"],
        "expected_reidentification_rate": s["expected_reidentification_rate"],
        "tau1": s["tau1"], "tau1_interval": s["tau1_interval"],
        "tau2": s["tau2"], "tau2_interval": s["tau2_interval"],
        "max_risk": s["max_risk"], "median_risk": s["median_risk"],
        "n_above_benchmark_at_mean_risk": s["n_above_benchmark_at_mean_risk"],
        "diagnostics": s["diagnostics"],
    } | _household_posterior(s)
    after = {key: after_cf[key] for key in PROTECT_MODEL_FREE if key in after_cf} | {
        key: r[key] for key in (
            "expected_reidentifications", "expected_reidentifications_interval",
            "interval_kind", "expected_reidentifications_hyper_interval",
            "expected_reidentification_rate",
            "expected_reidentifications_blanked_records",
            "expected_reidentifications_blanked_records_interval",
            "expected_reidentifications_blanked_records_hyper_interval",
            "n_blanked_records", "n_blanks", "n_patterns", "n_blanked_patterns", "max_risk",
            "median_risk", "n_above_benchmark_at_mean_risk", "diagnostics")} | {
        # a recoded key's rectangles without a blank; --missing drop's records left out
        key: r[key] for key in ("n_recoded_patterns", "n_recoded_records",
                                "n_dropped_records") if key in r} | _household_posterior(r)
    settings = fit.provenance.get("settings") or {}
    return {
        "estimator": LATENT_CLASS_ESTIMATOR,
        "model": "latent-class",
        "k": k,
        "before": before,
        "after": after,
        "closed_form": {"estimator": RISK_ESTIMATORS[closed_form_method], "before": before_cf,
                        "after": after_cf},
        "fit": {
            "fitted_on": "the input, before the steps",
            "method": settings.get("method", "gibbs"),
            "chains": sampler["chains"], "draws": sampler["draws"], "tune": sampler["tune"],
            "seed": seed,
            "n_draws": s["n_draws"],
            "interval_level": s["interval_level"],
            "population_size": s["population_size"],
            "top_cells": r["top_cells"],
            **({"missing": missing} if missing else {}),
            **({"structural_zeros_file": str(structural_zeros[0]),
                "structural_zero_rules": r.get("structural_zero_rules", structural_zeros[1])}
               if structural_zeros is not None else {}),
            **({"recoded_keys": _recode_counts(recodes)} if recodes else {}),
            **({"overdispersion": s["overdispersion"]} if s.get("overdispersion") else {}),
        },
    }


def _household_posterior(s: dict[str, Any]) -> dict[str, Any]:
    """A posterior summary's household keys (``assess --household``'s names), if any.

    The ``_interval`` is posterior predictive as the ER's beside it (per predictive draw the
    drawn population's realised household ER), the ``_hyper_interval`` over the parameters
    only (per draw the household risk given θ); ``household_interval_kind`` says which the
    ``_interval`` is (the summary's own; a summary without one had it over the parameters).
    ``household_expected_reidentified_households`` (``_interval``, ``_hyper_interval``):
    the same risks once per household, of the same kind (where the summary has them).
    """
    from sdcbayes.risk.posterior_assess import HYPER_INTERVAL_KIND

    if "household_expected_reidentifications" not in s:
        return {}
    return {key: s[key] for key in ("n_households", "household_expected_reidentifications",
                                    "household_expected_reidentifications_interval",
                                    "household_expected_reidentifications_hyper_interval",
                                    "household_expected_reidentified_households",
                                    "household_expected_reidentified_households_interval",
                                    "household_expected_reidentified_households_hyper_interval")
            if key in s} | {
        "household_interval_kind": s.get("household_interval_kind", HYPER_INTERVAL_KIND)}


def _latent_class_notes(recoded: bool = False, missing: str | None = None,
                        household: str | None = None) -> list[str]:
    """What the risk before and after is under ``--model latent-class`` (``risk.notes``).

    With a recoded key (``recoded``), with ``--missing`` (``missing``) and with
    ``--household`` (``household``) a sentence more each says how the fit reads them.
    """
    extra = []
    if recoded:
        extra.append(
            "A recoded key value (recode, band, top or bottom coding) matches every level of "
            "the input it stands for: the record's population count sums those levels' "
            "(risk.fit.recoded_keys: levels -> released values).")
    if missing:
        extra.append(
            f"Missing key values of the input (--missing {missing}): {MISSING_READING[missing]}; "
            "the closed form reads them as matching every value.")
    if household:
        extra.append(
            f"Household risk (--household {household}): per posterior draw 1 - Π(1 - r_i(θ)) "
            "over a household's members (independent given the parameters), summed over "
            "records and averaged over the draws, as sdcbayes assess --household reports it; "
            "its interval is posterior predictive as the expected re-identifications' "
            "(household_interval_kind: per drawn population the realised sum of 1 - Π(1 - "
            "1/F_i), each record with its drawn F), the _hyper_interval over the parameters "
            "only. The fit's cross-validation keeps households whole, as assess "
            "--household's does, so its numbers are assess --household's.")
    return [
        "Risk before and after: the latent-class model (what sdcbayes assess fits), fitted "
        "once on the input. Before: its assessment of the input, posterior means with "
        "posterior predictive intervals. After: the protected file scored from the same "
        "draws, each record's population count summing every key combination its shown "
        "values fit (a blank matches every level), with posterior predictive intervals "
        "too (the parameters and the unknown population counts). risk.closed_form holds "
        "the closed form "
        "(Benedetti-Franconi) that sdcMicro and mu-Argus report; it understates a sample's "
        "risk: on the demo sample, whose population is known, 14.88 expected "
        "re-identifications after local suppression to k = 3 against a true 29.19, where "
        "this route gives about 29 (245.31 before: the closed form 98.68, this model about "
        "235).",
        *extra,
    ]


def _weight_warnings(steps: list[dict[str, Any]], weight: str | None) -> list[str]:
    """A warning when a step changes the ``--weight`` column.

    The "after" risk uses the changed weights, so part of its change is the weights',
    not the protection's.
    """
    if weight is None:
        return []
    hit = [f"{i} ({s['step']})" for i, s in enumerate(steps, start=1)
           if weight in _columns_of(s)]
    if not hit:
        return []
    noisy = [f"{i}" for i, s in enumerate(steps, start=1)
             if s["step"] == "noise" and weight in s["columns"]]
    # normal noise has no bound: a weight can come out zero or negative (or below 1),
    # which the "after" assessment refuses only once every step has run
    risk = (f"; noise (step(s) {', '.join(noisy)}) can make weights zero, negative or "
            "below 1, which the risk after protection refuses once all steps have run: "
            "leave the weight column out of the noise step or lower its level"
            if noisy else "")
    return [f"step(s) {', '.join(hit)} change the weight column {weight!r}: the risk after "
            "protection is computed with the changed weights, so part of its change from "
            "before comes from the weights, not from the protection of the keys" + risk]


def _weight_blame(steps: list[dict[str, Any]], weight: str | None) -> str:
    """The steps that changed the weight column, for an error of the "after" assessment."""
    hit = [f"{i} ({s['step']})" for i, s in enumerate(steps, start=1)
           if weight is not None and weight in _columns_of(s)]
    if not hit:
        return ""
    return (f" (the weight column {weight!r} holds what step(s) {', '.join(hit)} made of it, "
            "not the input's values: leave it out of those steps)")


def _integer_columns(frame, source: Path, ext: str, encoding: str | None = None) -> set:
    """Columns of the input whose values are whole numbers written as integers.

    ``encoding``: the input's text encoding (``--encoding``; None: UTF-8).

    A CSV column counts when pandas read it as integers or its text has only integer
    literals (:func:`_integers_kept`: blanks make pandas read 3 as 3.0); in the
    other formats (SPSS stores every number as a double) a numeric column whose
    values are all whole numbers.
    """
    import numpy as np
    import pandas as pd

    out = {c for c in frame.columns if pd.api.types.is_integer_dtype(frame[c].dtype)
           and not pd.api.types.is_bool_dtype(frame[c].dtype)}
    if ext in (".csv", ".csv.gz", ".tsv"):
        sep = _input_separator(source, "\t" if ext == ".tsv" else ",", encoding)
        kept = _integers_kept(frame, source, sep, frame, encoding)
        out |= {c for c in kept.columns if pd.api.types.is_integer_dtype(kept[c].dtype)}
        return out
    for c in frame.columns:
        if pd.api.types.is_float_dtype(frame[c].dtype):
            x = frame[c].to_numpy(dtype=float, na_value=np.nan)
            x = x[~np.isnan(x)]
            if x.size and np.all(x == np.round(x)) and np.all(np.abs(x) < 2**53):
                out.add(c)
    return out


def _log_integers(log, integer: set):
    """log.csv's values of integer-coded columns as integers (3, not 3.0).

    ``original``/``recoded``/``released`` of a row whose ``variable`` is such a
    column, and ``<key>_original``/``<key>_released`` of such a key: whole floats
    become ints, so that the log joins to the input and to the protected file.
    """
    import numpy as np
    import pandas as pd

    if not integer or not len(log):
        return log

    def as_int(v):
        if isinstance(v, (float, np.floating)) and np.isfinite(v) and float(v).is_integer() \
                and abs(float(v)) < 2**53:
            return int(v)
        return v

    out = log.copy()
    rows = (out["variable"].isin(list(integer)).to_numpy() if "variable" in out.columns
            else np.zeros(len(out), dtype=bool))
    for c in ("original", "recoded", "released"):
        if c in out.columns and rows.any():
            values = out[c].to_numpy(dtype=object, copy=True)
            values[rows] = [as_int(v) for v in values[rows]]
            out[c] = pd.Series(values, index=out.index, dtype=object)
    for key in integer:
        for c in (f"{key}_original", f"{key}_released"):
            if c in out.columns:
                out[c] = pd.Series([as_int(v) for v in out[c].to_numpy(dtype=object)],
                                   index=out.index, dtype=object)
    return out


def _continuous_key_warnings(steps: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """One warning per noise, micro-aggregation, rank swapping or shuffling step changing a key.

    Legitimate (a continuous variable an intruder knows), but a key so perturbed gets
    values of its own rather than fewer levels: the key cells split, and with noise
    every record becomes unique on the keys. Rank swapping keeps the key's values (but
    the grouped extremes) and moves them between records: the combinations change
    without getting fewer, and the risk after reads the swapped values as true, not the
    protection the exchange gives. Unlike after record swapping, a record whose value moved
    is not counted as non-matching: the values are numeric and an intruder can look near
    a value (a few ranks away), which an exact-match count does not describe.
    """
    out = []
    for i, step in enumerate(steps, start=1):
        if step["step"] not in ("noise", "microaggregate", "rank_swap", "shuffle"):
            continue
        hit = [c for c in step["columns"] if c in keys]
        if not hit:
            continue
        how = step.get("_option") or f"step {i} ({step['step']})"
        names = ", ".join(map(repr, hit))
        if step["step"] == "noise":
            effect = ("becomes continuous: every record gets a value of its own, so every "
                      "record is unique on the keys after protection")
        elif step["step"] == "rank_swap":
            effect = ("keeps its values but moves them between records: the key "
                      "combinations change rather than merge, and the risk after reads the "
                      "swapped values as true (an intruder can look near a value, so "
                      "they are not counted as non-matching, as after record swapping)")
        elif step["step"] == "shuffle":
            effect = ("keeps its values but reassigns them between records: the key "
                      "combinations change rather than merge, and the risk after reads the "
                      "shuffled values as true")
        else:
            effect = (f"gets group means as values (about one level per {step['k']} "
                      "records), which splits the key combinations rather than merging them")
        out.append(f"{how} changes the key {names}, which {effect}; to protect a key, "
                   'recode it into fewer levels (--recode, or a "band" step of a --recipe), '
                   "or leave it out of --keys")
    return out


def _restr_warnings(steps: list[dict[str, Any]]) -> list[str]:
    """One warning per noise step of method ``restr``: it adds no randomness (audit B2).

    sdcMicro's "restricted" noise (:func:`sdcbayes.protection.add_noise`) is the affine
    shrink z = c x + (1 - c) x̄, with no random part: z̄ = x̄, and c (summary.json's
    ``restr_factor``, or sd(z) / sd(x)) is known, so x = (z - z̄) / c + z̄ exactly. The
    numeric risk after it (sdcMicro's interval risk, record linkage on the input's
    scale) measures distances on the original scale and reports protection an intruder
    who knows the method does not face.
    """
    out = []
    for i, step in enumerate(steps, start=1):
        if step["step"] != "noise" or step.get("method") != "restr":
            continue
        how = (f"{step['_option']} with --noise-method restr" if step.get("_option")
               else f"step {i} (noise, method restr)")
        names = ", ".join(map(repr, step["columns"]))
        out.append(f"{how} adds no randomness: z = c x + (1 - c) mean shrinks {names} toward "
                   "their means by a known factor c (summary.json's restr_factor; the mean "
                   "is kept), so it is undone exactly, x = (z - mean) / c + mean, by anyone "
                   "who knows the method; the numeric risk after it (interval risk, record "
                   "linkage on the original scale) understates the risk of these values. "
                   "For protection choose a random method (additive, correlated or "
                   "correlated2)")
    return out


#: What a numeric step does to a column holding one value, for its warning.
_NOTHING_CHANGED = {
    "noise": "noise changes nothing (its standard deviation is a multiple of the column's, 0)",
    "microaggregate": "micro-aggregation changes nothing (every group mean is that value)",
    "rank_swap": "rank swapping changes nothing (it exchanges equal values)",
}


def _constant_column_warnings(steps: list[dict[str, Any]], frame) -> list[str]:
    """One warning per constant column of a noise, micro-aggregation or rank swapping step.

    A column with one value (standard deviation 0) or none comes out of the step as it
    went in: the log says "0% changed" and IL1 and the numeric disclosure risk, which
    divide by the standard deviation, leave it out, so nothing said that the step did
    nothing (audit UX F12). Judged on the input, before the steps run; a column an
    earlier step changed is not judged (what it holds then is known only after the run).
    """
    out = []
    changed: set = set()
    for i, step in enumerate(steps, start=1):
        constant = []  # left constant by this step: still judged by the next ones
        if step["step"] in _NOTHING_CHANGED:
            if step.get("_option"):
                how, fix = step["_option"], f"leave it out of {step['_option']}"
            else:
                how, fix = f"step {i} ({step['step']})", 'leave it out of the step\'s "columns"'
            for c in step["columns"]:
                if c in changed or c not in frame.columns or frame[c].nunique(dropna=True) > 1:
                    continue
                values = frame[c].dropna().unique()
                what = (f"is constant (every value is {_plain(values[0])!r})" if len(values)
                        else "holds no value (every value is missing)")
                out.append(f"{how}: column {c!r} {what}, so {_NOTHING_CHANGED[step['step']]}, "
                           f"and IL1 and the numeric disclosure risk leave it out; {fix}")
                constant.append(c)
        changed.update(c for c in _columns_of(step) if c not in constant)
    return out


#: MDAV's cost per record pair and group size, seconds: it takes ~n/k groups, each
#: measuring its distance to every remaining record, so t ~ MDAV_SECONDS * n^2 / k
#: (microaggregation.py's module docstring). Measured on one core with 2 columns, k = 3:
#: 47.8 s for 10^5 records (audit U, F1; 1.4e-8), mdav_groups 7.8 s for 40,000 (1.5e-8);
#: 5 columns cost ~20% more.
MDAV_SECONDS = 1.5e-8
#: MDAV steps on more records than this warn before the work starts (~12 s at k = 3).
MDAV_WARN_RECORDS = 50_000


def _duration(seconds: float) -> str:
    """A rough duration in words: "40 s", "83 min", "14 h", "6 days"."""
    if seconds < 120:
        return f"{max(seconds, 1.0):.0f} s"
    if seconds < 3 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


def _mdav_cost_warnings(steps: list[dict[str, Any]], n_records: int) -> list[str]:
    """One warning per MDAV micro-aggregation step on more than :data:`MDAV_WARN_RECORDS`.

    MDAV (the default method) is quadratic in the records: O(n^2 p / k) (Domingo-Ferrer
    & Mateo-Sanz 2002; sdcMicro's ``Mdav.cpp`` alike), ~80 min for 10^6 records at
    k = 3, with nothing printed meanwhile. The step runs on the whole file (it has no
    strata), so ``n_records`` is its size. The warning gives a rough time
    (:data:`MDAV_SECONDS`) and the n log n alternative, method "sorted" (sdcMicro's
    mafast).
    """
    out = []
    for i, step in enumerate(steps, start=1):
        if step["step"] != "microaggregate" or step.get("method", "mdav") != "mdav":
            continue
        if n_records <= MDAV_WARN_RECORDS:
            continue
        k = int(step.get("k", 3))
        estimate = _duration(MDAV_SECONDS * float(n_records) ** 2 / k)
        if step.get("_option"):
            how, instead = step["_option"], "--microaggregate-method sorted"
        else:
            how, instead = f"step {i} (microaggregate)", 'give the step "method": "sorted"'
        out.append(
            f"{how} runs MDAV on {n_records:,} records, whose time grows with the square of "
            f"the records (O(n^2/k)): roughly {estimate} at k={k} on "
            f"one core, with no progress shown; for a large file {instead} (sdcMicro's "
            "mafast: each column sorted and cut into groups of k, n log n, about 1 s for "
            "10^5 records), or split the file and micro-aggregate each part")
    return out


def _suppression_warnings(steps: list[dict[str, Any]], summaries: list[dict[str, Any]]
                          ) -> list[str]:
    """One warning per suppression step that lowered k in strata smaller than k.

    The strata include the keys the household ids count (``_count_strata``), as their
    exact counts whatever a step made of them (the intruder counts the records).
    """
    out = []
    for step, st in zip(steps, summaries, strict=True):
        below = (st.get("result") or {}).get("strata_below_k") or 0
        if step["step"] == "suppress" and below:
            # the run's strata: the step's, and the keys the household ids count
            counts = step.get("_count_strata") or []
            strata = ", ".join(list(step.get("strata") or []) + counts)
            which = f"stratum of {strata} holds" if below == 1 else f"strata of {strata} hold"
            out.append(
                f"step {st['step']} (suppress): {below} {which} fewer than k={step['k']} "
                "records; there k was lowered to the stratum size, so "
                "their records stay below k (counted as violating k-anonymity after): merge "
                "small strata, use fewer stratum variables or a smaller k"
            )
    return out


def _completion_summary(filled: dict[str, dict[str, int]]) -> dict[str, Any]:
    """summary.json's ``risk.household_completion`` (``--household``).

    ``filled``: :func:`~sdcbayes.protection.suppression.household_completion`'s counts per
    key. ``keys`` keeps them (only keys with a value filled), ``from_mates`` and ``counted``
    sum them over the keys, ``total`` is their sum: the values the risk after reads as the
    ids give them away (a blank a mate shows; a count key's value that is not the exact
    count: a blank, a band, a PRAMmed value, a value missing in the input).
    """
    mates = sum(v["from_mates"] for v in filled.values())
    counted = sum(v["counted"] for v in filled.values())
    return {"keys": filled, "from_mates": mates, "counted": counted, "total": mates + counted}


def _household_mates_warnings(original, protected, keys: list[str], household: str | None,
                              filled: dict[str, dict[str, int]] | None = None) -> list[str]:
    """One warning when household mates show blanked values of a household-level key.

    A key with one shown value in every household of the input (household size, region;
    an item-missing member is no other value) that is blanked in some members but shown in
    a mate is read off the mate once the household
    id is released; the risk after reads such a blank as shown where the mates agree
    (:func:`~sdcbayes.protection.suppression.household_completion`, whose counts per key
    are ``filled``), so the blank protects nothing. Counted per key (blanked values of the
    input's shown ones, and those a mate shows): a key a step kept consistent within
    households (``household_keys``) shows none, unless a later step blanked it again in
    single members. The advice names ``--household-keys auto``. A key equal to the
    household's number of records is read as its count, not off a mate: it is
    :func:`_household_count_warnings`'.
    """
    import numpy as np
    import pandas as pd

    from sdcbayes.protection.suppression import household_count_keys, household_level_keys

    if household is None:
        return []
    counted = set(household_count_keys(original, keys, household))
    hh = pd.factorize(original[household])[0]  # no missing ids: Microdata refused them
    n_hh = int(hh.max()) + 1 if hh.size else 0
    found, n_mates, read_keys = [], 0, []
    for k in household_level_keys(original, keys, household):  # "auto"'s keys
        if k in counted:
            continue
        shown = protected[k].notna().to_numpy()
        blank = ~shown & original[k].notna().to_numpy()
        mates = int(np.count_nonzero(blank & (np.bincount(hh, shown, n_hh) > 0)[hh]))
        if mates:
            found.append(f"{k!r} {mates} of its {int(blank.sum())}")
            n_mates += mates
            read_keys.append(k)
    if not found:
        return []
    if filled is None:  # the completion's counts, once, when the caller has none
        from sdcbayes.protection.suppression import household_completion

        filled = household_completion(original, protected, keys, household)[1]
    n_read = sum(filled.get(k, {}).get("from_mates", 0) for k in read_keys)
    read = ("the risk after reads them as shown" if n_read == n_mates else
            f"the risk after reads {n_read} of them as shown (the others' mates disagree)")
    return [f"--household {household}: blanked values of a household-level key (one shown "
            "value in every household of the input) are shown by a household mate: "
            f"{', '.join(found)}; "
            f"with the household id released they can be read off the mates, so {read} and "
            "the blanks protect nothing: --household-keys auto blanks such a key in every "
            "member of the household (a recipe's suppress step: \"household_keys\": "
            "\"auto\")"]


def _household_count_warnings(original, protected, keys: list[str], household: str | None
                              ) -> list[str]:
    """One warning when a blanked key is each household's number of records.

    In a sample of whole households, a key such as household size that equals, in every
    household of the input, the number of records with the household's id
    (:func:`~sdcbayes.protection.suppression.household_count_keys`) is counted off the
    released file once the id is released: a blank of it hides nothing, in one member or
    in all (``--household-keys`` does not help), and the risk after reads every one as the
    exact count (:func:`~sdcbayes.protection.suppression.household_completion`). A
    suppression step never blanks such a key as a key (:func:`_count_keys_as_strata`),
    so these blanks come from a column linked to another key; the advice names what can
    be done. A step that changes its values otherwise is :func:`_count_key_step_warnings`'.
    """
    from sdcbayes.protection.suppression import household_count_keys

    if household is None:
        return []
    found = []
    for k in household_count_keys(original, keys, household):
        blank = int((original[k].notna() & protected[k].isna()).sum())
        if blank:
            found.append(f"{k!r} ({blank} blanked)")
    if not found:
        return []
    return [f"--household {household}: {', '.join(found)} equals the number of records with "
            "the household's id in every household of the input, so with the id released its "
            "blanked values are counted off the file, in one member or in all; the risk after "
            "reads them as the exact count, so the blanks protect nothing: a suppression step "
            "blanks such a key only as a linked column (leave it out of --linked); or do not "
            "release the household id"]


#: The steps that change a key's values without blanking them: what each does to it
#: (:func:`_count_key_step_warnings`).
_COUNT_CHANGING_STEPS = {"recode": "recodes", "band": "bands", "top_code": "top-codes",
                         "bottom_code": "bottom-codes", "pram": "PRAMs",
                         "nayak_zhang": "PRAMs", "microaggregate": "micro-aggregates",
                         "noise": "adds noise to", "swap": "swaps",
                         "rank_swap": "rank-swaps", "shuffle": "shuffles"}


def _count_key_step_warnings(steps: list[dict[str, Any]], count_keys: list[str],
                             household: str | None) -> list[str]:
    """One warning when a step recodes, PRAMs, ... a key the released household ids count.

    ``count_keys``: the input's keys equal in every household to its number of records
    (:func:`~sdcbayes.protection.suppression.household_count_keys`). With the ids released
    the intruder counts each household's records, so he holds the exact value whatever the
    file shows: a band, a top code, a PRAMmed or noisy value protect nothing, and the risk
    after reads the exact count (:func:`~sdcbayes.protection.suppression.
    household_completion`). Before any work (the steps alone decide it).
    """
    if household is None or not count_keys:
        return []
    found, names = [], []
    for i, step in enumerate(steps, start=1):
        verb = _COUNT_CHANGING_STEPS.get(step["step"])
        hit = [c for c in _columns_of(step) if c in count_keys] if verb else []
        if hit:
            found.append(f"step {i} ({step['step']}) {verb} {', '.join(hit)}")
            names += [c for c in hit if c not in names]
    if not found:
        return []
    many = len(names) > 1
    return [f"--household {household}: {'; '.join(found)}, but {', '.join(names)} "
            f"{'are' if many else 'is'} each household's number of records in the input, "
            "which is counted off the file exactly once the household id is released: the "
            f"step protects nothing there, and the risk after reads the exact count; leave "
            f"{'them' if many else 'it'} out of the step, or do not release the household id"]


def _k_anonymity_notes(steps: list[dict[str, Any]], supp_i: int | None, after: dict[str, Any],
                       k: int, completed: int = 0) -> list[str]:
    """Why the two k-anonymity counts after the steps differ, or stay above 0.

    ``completed``: the blanks the risk after reads as shown (``--household``:
    ``risk.household_completion``'s total), which can undo the suppression's k-anonymity.
    """
    if supp_i is None:
        return []
    supp = steps[supp_i - 1]
    by_step = after["k_anonymity_violations_suppression"]
    plain = after["k_anonymity_violations"]
    notes = []
    if by_step != plain:
        within = f" within the strata of {', '.join(supp['strata'])}" if supp.get("strata") \
            else ""
        notes.append(
            f"{plain} records violate {k}-anonymity over the whole file as assess counts f "
            "(sdcMicro's freqCalc rule: a missing value matches any value, but with two or "
            "more keys a complete record does not count the records whose keys are all "
            "missing, while a record whose keys are all missing counts every record, see "
            "README's \"Missing key values\""
            + ("; records of different strata match" if within else "") + f"); "
            f"{by_step} as local suppression (step {supp_i}) judges it, on its keys "
            f"{', '.join(supp['keys'])}{within}, every missing value matching any value"
        )
    key_set = set(supp["keys"])
    # a suppress_risk step only blanks, which raises every frequency: not counted
    later = [f"{i} ({s['step']})" for i, s in enumerate(steps, start=1)
             if i > supp_i and s["step"] != "suppress_risk" and key_set & set(_columns_of(s))]
    if by_step and later:
        notes.append(f"step(s) {', '.join(later)} changed keys after the suppression, so "
                     "records can violate k-anonymity again")
    if by_step and supp.get("combs") is not None:
        notes.append(f"step {supp_i} reached k-anonymity on key subsets (combs), not on the "
                     "full set of keys")
    if by_step and completed:
        notes.append(f"the k-anonymity after is counted with the {completed} key values the "
                     "released household ids give away read as given (risk."
                     "household_completion), so records can violate it where the file written "
                     "does not")
    return notes


def _information_loss(original, protected, columns: list[str], numeric_cols: list[str]
                      ) -> dict[str, Any]:
    """Changed/suppressed shares per touched variable (seed 001, 5.1).

    IL1 is added for the variables a numeric method changed (micro-aggregation,
    noise, top/bottom coding) when they are still numeric: on integer codes of a
    categorical variable it would mean nothing. A variable with infinite values in
    the input or the protected file (a top code of ``inf``, say) is left out of IL1,
    hence of ``il1_columns``, the eigenvalue difference and ``risk.numeric``: IL1
    divides by the input's standard deviation and the interval risk's intervals by
    the protected one's, both undefined there. ``il1_skipped`` names such variables
    and why.
    """
    import numpy as np
    import pandas as pd

    from sdcbayes.protection.infoloss import categorical_loss, eigen_difference, il1

    if not columns:
        return {"per_variable": {}}
    cat = categorical_loss(original, protected, columns)
    # to_dict keeps each column's type (iterrows made every row float: 801.0 counts)
    per_var = {c: {k: _count(k, _plain(v)) for k, v in row.items()}
               for c, row in cat.to_dict(orient="index").items()}
    skipped: dict[str, str] = {}
    for c in numeric_cols:
        a, b = original[c], protected[c]
        numeric = all(
            pd.api.types.is_numeric_dtype(x.dtype) and not isinstance(x.dtype, pd.CategoricalDtype)
            and not pd.api.types.is_complex_dtype(x.dtype)
            for x in (a, b)
        )
        if not numeric:
            continue
        infinite = [role for role, x in (("input", a), ("protected file", b))
                    if np.isinf(x.to_numpy(dtype=np.float64, na_value=np.nan)).any()]
        if infinite:
            skipped[c] = (
                f"infinite values in the {' and the '.join(infinite)}: IL1 (scaled by the "
                "input's standard deviation), the eigenvalue difference and the numeric "
                "disclosure risk are undefined on it; replace them by missing values to "
                "measure these")
        elif a.nunique(dropna=True) > 1:
            per_var[c]["il1"] = il1(original, protected, [c])
    out: dict[str, Any] = {"per_variable": per_var}
    if skipped:
        out["il1_skipped"] = skipped
    num = [c for c in numeric_cols if "il1" in per_var[c]]
    if num:
        out["il1_numeric"] = il1(original, protected, num)
        out["il1_columns"] = num
        # sdcMicro's "Difference of Eigenvalues" (dUtility "eigen"); None where undefined
        eig = eigen_difference(original, protected, num)
        out["eigen_difference"] = eig if math.isfinite(eig) else None
    return out


def _check_interval_k(k: float) -> None:
    """--interval-k: a positive finite number (before any work)."""
    if not (math.isfinite(k) and k > 0):
        raise InputError(
            f"--interval-k {k:g} must be a positive number, the interval's half-width as a "
            f"fraction of the protected variable's standard deviation; e.g. --interval-k "
            f"{DEFAULT_INTERVAL_K:g} (sdcMicro's default)"
        )


def _numeric_risk(original, protected, columns: list[str], k: float
                  ) -> tuple[dict[str, Any], list[str]]:
    """``risk.numeric``: disclosure risk of the numeric variables a numeric step changed.

    As sdcMicro reports it after noise, micro-aggregation or top/bottom coding
    (``print(sdc, "numrisk")``): the interval risk, ``dRisk`` (Mateo-Sanz, Sebe &
    Domingo-Ferrer 2004, method SDID; :func:`sdcbayes.risk.linkage.interval_risk`),
    and beside it distance-based record linkage of each protected record to the input
    (seed 001, section 3.6, after Pagliuca & Seri; :func:`sdcbayes.risk.linkage.
    linkage_risk` on the variables divided by their standard deviations in the input):
    the share whose own original is the nearest (ties in the intruder's favour), the
    second nearest, and the tie-fair expected share of correct links (an intruder
    picking at random among the originals at the smallest distance). ``before`` is the
    input against itself: interval risk 1 by construction, nearest share 1, the
    tie-fair share below 1 where records share their values (duplicated rows).

    Missing values: the interval risk reads them as sdcMicro does (a comparison with a
    missing value counts as inside). Record linkage needs complete rows: it is computed
    on the records complete in both files (``linkage_n_records``), the others
    (``linkage_n_left_out``) left out with a note; with fewer than two complete
    records it is skipped with a note.

    Returns
    -------
    dict, list of str
        The block and the notes for ``risk.notes``.
    """
    import numpy as np

    from sdcbayes.risk.linkage import interval_risk, linkage_risk

    x = original[columns].astype("float64")
    z = protected[columns].astype("float64")
    block: dict[str, Any] = {"variables": list(columns), "interval_k": k,
                             "n_records": int(len(x))}
    sides: dict[str, dict[str, Any]] = {}
    for when, other in (("before", x), ("after", z)):
        ir = interval_risk(x, other, columns, k=k)
        sides[when] = {"interval_risk": ir.share, "n_interval_risk": ir.n_at_risk}
    notes = []
    complete = np.isfinite(x.to_numpy()).all(axis=1) & np.isfinite(z.to_numpy()).all(axis=1)
    n_complete = int(complete.sum())
    block["linkage_n_records"] = n_complete
    block["linkage_n_left_out"] = int(len(x)) - n_complete
    names = ", ".join(columns)
    if n_complete < 2:
        notes.append(
            f"record linkage of the numeric variables ({names}) is skipped: "
            f"{n_complete} record(s) have them all observed in the input and the protected "
            "file, and linkage needs two; the interval risk counts a missing value as inside, "
            "as sdcMicro does")
    else:
        if n_complete < len(x):
            notes.append(
                f"record linkage of the numeric variables ({names}) is computed on the "
                f"{n_complete:,} records with them all observed in the input and the "
                f"protected file; {len(x) - n_complete:,} with a missing value are left out "
                "(the interval risk keeps them, a missing value counting as inside, as "
                "sdcMicro does)")
        xc, zc = x[complete], z[complete]
        for when, other in (("before", xc), ("after", zc)):
            link = linkage_risk(xc, other, columns, standardize=True)
            sides[when] |= {
                "linkage_share_nearest": link.share_nearest,
                "linkage_share_second": link.share_second,
                "linkage_expected_correct_share": float(link.expected_correct.mean()),
            }
    block["before"], block["after"] = sides["before"], sides["after"]
    return block, notes


def _count(name: str, v):
    """A count field (``n``, ``n_changed``, ``n_suppressed``) as an int."""
    if name in ("n", "n_changed", "n_suppressed") and isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _plain(v):
    import numpy as np

    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def _jsonable(obj, limit: int = 1000):
    """A step summary made JSON-safe; per-record arrays are left out (they are in the log)."""
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _jsonable(v, limit) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        arr = list(obj)
        if len(arr) > limit:
            return f"<{len(arr)} values omitted>"
        return [_jsonable(v, limit) for v in arr]
    if isinstance(obj, (np.generic,)):
        return obj.item()
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    return str(obj)


def _pram_matrices(i: int, step: dict[str, Any], frame, result: dict[str, Any]):
    """A PRAM step's matrices as a long table, and its summary with a digest in their place.

    ``invariant_pram`` returns one dense L x L matrix per variable and stratum; as JSON
    they made summary.json grow as strata x L² (115 MB for 216 strata of 151 levels).
    The table holds, per variable and stratum, the non-zero entries of the rows of the
    levels that occur in the stratum's input: the rows its records were drawn from (a
    row of an absent level draws nothing; invariant PRAM's columns of absent levels are
    zero off the diagonal, Gouweleeuw et al. 1998, seed 001 section 4.1.3, so these are
    all its non-zero entries among the rows used). The summary keeps per variable the
    keep probabilities R_ii of those levels: smallest (with its stratum and level),
    largest, and their mean over the records, the expected share of values kept.

    Parameters
    ----------
    i : int
        The step's position (1-based), the table's ``step``.
    step : dict
        The validated ``pram`` step.
    frame : pandas.DataFrame
        The step's input (the counts the matrices were built from).
    result : dict
        The step's summary, with ``matrices`` (variable -> stratum -> L x L array) and
        ``levels`` (variable -> labels) as :func:`sdcbayes.protection.invariant_pram`
        gives them.

    Returns
    -------
    (dict, pandas.DataFrame)
        ``result`` without ``matrices``, with ``keep_probability`` and
        ``matrices_file``; the table (``step``, ``variable``, ``stratum``, ``from``,
        ``to``, ``probability``; levels as text, as in ``log.csv``).
    """
    import numpy as np
    import pandas as pd

    from sdcbayes.protection.base import code_strata, codes_of
    from sdcbayes.protection.pram import level_text  # the text PRAM reads back

    matrices = result.pop("matrices") or {}
    stratum, names = code_strata(frame, step.get("strata"))  # as invariant_pram labels them
    where = {name: k for k, name in enumerate(names)}
    parts: dict[str, list] = {c: [] for c in ("variable", "stratum", "from", "to", "probability")}
    keep: dict[str, Any] = {}
    for col, by_stratum in matrices.items():
        codes, levels = codes_of(frame[col])
        n_lev = len(levels)
        ok = codes >= 0
        counts = np.bincount(stratum[ok] * n_lev + codes[ok],
                             minlength=len(names) * n_lev).reshape(len(names), n_lev)
        text = np.asarray([level_text(v) for v in levels], dtype=object)
        worst, best, kept, n_obs = None, None, 0.0, 0
        for s_name, m in by_stratum.items():
            t = counts[where[s_name]]
            occ = np.flatnonzero(t > 0)
            if occ.size == 0:
                continue
            rows = np.asarray(m)[occ]
            r, c = np.nonzero(rows)
            parts["variable"].append(np.full(r.size, col, dtype=object))
            parts["stratum"].append(np.full(r.size, s_name, dtype=object))
            parts["from"].append(text[occ[r]])
            parts["to"].append(text[c])
            parts["probability"].append(rows[r, c])
            d = rows[np.arange(occ.size), occ]
            j = int(np.argmin(d))
            if worst is None or d[j] < worst[0]:
                worst = (float(d[j]), s_name, text[occ[j]])
            best = float(d.max()) if best is None else max(best, float(d.max()))
            kept += float(d @ t[occ])
            n_obs += int(t[occ].sum())
        keep[col] = None if worst is None else {
            "min": worst[0], "min_stratum": worst[1], "min_level": worst[2], "max": best,
            "expected_share_kept": kept / n_obs, "n_strata": len(by_stratum),
        }
    result["keep_probability"] = keep
    result["matrices_file"] = PRAM_MATRICES
    cols = {c: (np.concatenate(v) if v else np.array([], dtype=float if c == "probability"
                                                       else object))
            for c, v in parts.items()}
    return result, pd.DataFrame({"step": np.full(len(cols["to"]), i, dtype=np.int64)} | cols)


def _concat_pram_tables(tables):
    """The PRAM steps' tables as one (``pram_matrices.csv``)."""
    import pandas as pd

    return pd.concat(tables, ignore_index=True)


def _tag_log(log, i: int, name: str):
    out = log.copy()
    out.insert(0, "method", name)
    out.insert(0, "step", i)
    return out


def _concat_logs(logs):
    """One table of all change logs; cells holding lists become JSON text."""
    import numpy as np
    import pandas as pd

    logs = [lg for lg in logs if len(lg)] or logs[:1]
    log = pd.concat(logs, ignore_index=True, sort=False) if logs else pd.DataFrame()
    # A column some step wrote as float stays float; the others are float only
    # because the concatenation left blanks where a step has no such column.
    float_in_step = {c for lg in logs for c in lg.columns
                     if pd.api.types.is_float_dtype(lg[c].dtype)}
    for c in log.columns:
        v = log[c]
        if pd.api.types.is_float_dtype(v.dtype) and c not in float_in_step:
            x = v.to_numpy()
            ok = ~np.isnan(x)
            if ok.any() and np.all(x[ok] == np.round(x[ok])) and np.all(np.abs(x[ok]) < 2**53):
                # Counts and record numbers turned float by the concatenation's blanks.
                log[c] = v.astype("Int64")
        elif v.dtype == object:
            # Series.map would infer a dtype (ints mixed with floats -> 7.0): stay object
            values = v.to_numpy(dtype=object, copy=True)
            nested = np.fromiter(
                (isinstance(x, (list, tuple, np.ndarray, dict)) for x in values), dtype=bool,
                count=values.size,
            )
            for i in np.flatnonzero(nested):
                values[i] = json.dumps(_jsonable(values[i], 10**9))
            log[c] = pd.Series(values, index=log.index, dtype=object)
    return log


# --------------------------------------------------------------------------- output file
def _output_name(ext: str) -> tuple[str, str | None]:
    if ext == ".sas7bdat":
        return "protected.parquet", (
            "SAS .sas7bdat files cannot be written (pyreadstat reads them only); the protected "
            "file is Parquet"
        )
    return f"protected{ext}", None


#: pyreadstat's reader for each format sdcbayes writes back with pyreadstat.
_READERS = {".sav": "read_sav", ".zsav": "read_sav", ".dta": "read_dta", ".por": "read_por",
            ".xpt": "read_xport"}
#: Plain numeric display formats (SPSS ``F8.2``, ``COMMA10.0``; Stata ``%9.2f``,
#: ``%10.0g``). Date and string formats are left to pyreadstat, which derives them
#: from the column's type and width.
_NUMERIC_FORMAT = re.compile(
    r"^(?:(?:F|N|E|COMMA|DOT|DOLLAR|PCT)\d+(?:\.\d+)?|%-?\d+(?:\.\d+)?[gfe]c?)$", re.IGNORECASE
)


def _write_protected(path: Path, frame, source: Path, ext: str, original=None,
                     na_values=None, encoding: str | None = None) -> None:
    """Write ``frame`` in the input's format, keeping all the steps did not change.

    Parameters
    ----------
    path : Path
        The file to write.
    frame : pandas.DataFrame
        The protected data.
    source : Path
        The input file; its metadata (and SPSS user-missing codes) are read again.
    ext : str
        The input's ending (:func:`sdcbayes.microdata._extension`).
    original : pandas.DataFrame, optional
        The data as read, before any step. A cell missing there and still missing
        in ``frame`` was left alone by the steps: for SPSS its user-missing code
        comes back. Without it no user-missing code is restored.
    na_values : list of str, optional
        The ``--na-values`` codes the input was read with. A cell they made missing
        and no step changed gets its code back, in every format (CSV: its text, as
        every unchanged cell; the other formats: its value as read without them,
        :func:`_na_codes_restored`).
    encoding : str, optional
        The input's text encoding (``--encoding``; None: UTF-8). A CSV/TSV is read
        again and written back in it, so the user's file stays in their encoding
        (a Latin-1 file is not turned into UTF-8 beside their other files); the
        SPSS, Stata and SAS metadata are read again with it. pyreadstat writes
        SPSS and Stata files in UTF-8, which those formats declare.

    Notes
    -----
    - CSV/TSV: every cell no step changed is written with its text in the input
      (``001``, ``NA``, ``1.50``, ``1e3`` stay as they were; quoting may differ);
      changed cells are written from ``frame``, suppressed ones as empty fields,
      and columns the input wrote as integers stay integers where the steps left
      whole numbers (a suppression's blanks would otherwise print 34 as 34.0).
      The input's Excel ``sep=X`` line and CRLF line endings are kept
      (:func:`_input_conventions`).
    - SPSS, Stata, SPSS portable, SAS transport: variable labels and the file label
      are written again; SPSS and Stata also the value labels and numeric display
      formats; SPSS the measurement levels, display widths, notes and the
      user-missing declarations (``missing_ranges``) with the user-missing codes of
      the cells no step changed. sdcbayes's own suppressions are system-missing.
    """
    if ext in (".csv", ".csv.gz", ".tsv"):
        # written with the input's separator: a semicolon "CSV" goes back to its spreadsheet
        sep = _input_separator(source, "\t" if ext == ".tsv" else ",", encoding)
        try:
            _write_csv(path, frame, source, sep, original, encoding)
        except UnicodeEncodeError as e:
            # what _check_new_values_encodable did not foresee: one line, not a traceback
            # (write_output_folder removes the partial folder; --out stays as it was)
            enc = encoding or "utf-8"
            raise InputError(
                f"the protected file cannot be written in the input's encoding {enc}: a "
                f"value {_unencodable(e)}; recode it to a value without that character, or "
                f"convert the data file to UTF-8 (e.g. iconv -f {enc.upper()} -t UTF-8) and "
                "run on that copy without --encoding") from None
        return
    if na_values and original is not None:
        frame = _na_codes_restored(frame, original, source, encoding)
    if ext in (".parquet", ".pq", ".sas7bdat"):
        _arrow_safe(frame).to_parquet(path, index=False)
        return
    import inspect

    import pyreadstat

    from sdcbayes.exceptions import DataError

    meta = _source_metadata(source, ext, encoding)
    ranges = _declared_missing(meta) if ext in (".sav", ".zsav") else {}
    df, labels = _labelled(frame, meta, reserved=ranges)
    if ext == ".dta":
        df = _stata_integers(df, meta)
    options = _metadata_options(df, meta, ext)
    if labels and ext in (".sav", ".zsav", ".dta"):
        options["variable_value_labels"] = labels
    if ranges:
        df, kept = _user_missing_restored(df, original, source, ext, ranges, encoding)
        if kept:
            options["missing_ranges"] = kept
    if ext == ".zsav":
        options["compress"] = True
    writer = {".sav": pyreadstat.write_sav, ".zsav": pyreadstat.write_sav,
              ".dta": pyreadstat.write_dta, ".por": pyreadstat.write_por,
              ".xpt": pyreadstat.write_xport}.get(ext)
    if writer is None:  # pragma: no cover - read_microdata accepts only the endings above
        raise InputError(f"cannot write files of type {ext}")
    # An older pyreadstat (>= 1.2.6 is allowed) may lack a metadata option: skip it
    # rather than fail.
    try:
        accepted = inspect.signature(writer).parameters
    except (TypeError, ValueError):  # no signature to read: pass them all
        accepted = options
    options = {k: v for k, v in options.items() if k in accepted}
    try:
        writer(df, str(path), **options)
    except (pyreadstat.ReadstatError, ValueError, TypeError) as e:
        # Format limits (name lengths, string widths, label types) surface here.
        raise DataError(
            f"could not write the protected file as {ext}: {' '.join(str(e).split())}; "
            "convert the input to CSV or Parquet and run again"
        ) from None


def _na_codes_restored(frame, original, source: Path, encoding: str | None = None):
    """``frame`` with the ``--na-values`` codes back in the cells no step changed.

    The input is read again without ``na_values``: a cell missing in ``frame`` and in
    ``original`` (read with them), yet not missing in that reading, held one of the
    codes, and no step changed it (a suppression blanks observed values only). It
    gets the value of that reading back: the number (-9), the text, or the labelled
    category (whose code and value label the writer then restores). Without a
    reading that lines up with ``original`` (columns, rows), ``frame`` is returned
    as it is.
    """
    import pandas as pd

    from sdcbayes.microdata import read_microdata

    try:
        raw = read_microdata(source, encoding=encoding)
    except Exception:  # the codes are a nicety: the protected values are right without them
        return frame
    if list(raw.columns) != list(original.columns) or len(raw) != len(original) \
            or list(frame.columns) != list(original.columns) or len(frame) != len(original):
        return frame
    out = frame.copy()
    out.attrs = dict(frame.attrs)
    for c in out.columns:
        back = (pd.isna(out[c]).to_numpy() & pd.isna(original[c]).to_numpy()
                & pd.notna(raw[c]).to_numpy())
        if not back.any():
            continue
        s, codes = out[c], raw[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            new = [v for v in pd.unique(codes[back].astype(str)) if v not in s.cat.categories]
            values = s.cat.add_categories(new).to_numpy(dtype=object, copy=True) if new \
                else s.to_numpy(dtype=object, copy=True)
            values[back] = codes[back].astype(str).to_numpy(dtype=object)
            cats = list(s.cat.categories) + new
            out[c] = pd.Categorical(values, categories=cats)
        elif pd.api.types.is_numeric_dtype(s.dtype) and pd.api.types.is_numeric_dtype(
                codes.dtype) and not pd.api.types.is_bool_dtype(codes.dtype):
            values = s.to_numpy(dtype=float, na_value=float("nan"), copy=True)
            values[back] = codes.to_numpy(dtype=float, na_value=float("nan"))[back]
            out[c] = values
        else:  # text, or a text code in a column the codes' removal made numeric
            values = s.to_numpy(dtype=object, copy=True)
            values[back] = codes.to_numpy(dtype=object)[back]
            out[c] = values
    return out


def _write_csv(path: Path, frame, source: Path, sep: str, original=None,
               encoding: str | None = None) -> None:
    """Write ``frame`` as CSV, cells no step changed with the input's own text.

    pandas' parsing is lossy (``001`` -> 1, ``NA`` -> missing, ``TRUE`` -> True,
    ``1.50`` -> 1.5), so writing the parsed values back would alter columns no
    step touched. The input is read again as text (no missing-value parsing)
    and a cell keeps that text unless its protected value differs from the
    value as read (both missing counts as unchanged). Rows are in input order:
    no step adds, drops or reorders records. Without ``original``, or when the
    text read does not line up with it (columns, rows), the parsed values are
    written as before. ``encoding``: the input's (None: UTF-8), read and written.
    """
    import io

    import pandas as pd

    from sdcbayes.protection.base import same_cells

    sep_line, eol = _input_conventions(source, sep, encoding)
    text = None
    if (original is not None and len(original) == len(frame)
            and list(original.columns) == list(frame.columns) and frame.columns.is_unique):
        try:
            text = pd.read_csv(source, sep=sep, dtype=str, keep_default_na=False,
                               skiprows=_input_skip(source, encoding),
                               encoding=encoding or "utf-8")
        except Exception:  # the text is a nicety: the parsed values are still right
            text = None
    if text is None or list(text.columns) != list(frame.columns) or len(text) != len(frame):
        _csv_out(path, _integers_kept(frame, source, sep, original, encoding), frame, sep,
                 _decimal_mark(sep, None, original), encoding, sep_line, eol)
        return
    decimal = _decimal_mark(sep, text, original)
    changed = {}
    for c in frame.columns:
        diff = ~same_cells(original[c], frame[c])
        if diff.any():
            changed[c] = diff
    out = pd.DataFrame({c: text[c].to_numpy(dtype=object) for c in text.columns},
                       columns=text.columns)
    if changed:
        cols = list(changed)
        # the changed cells as pandas writes them (34 not 34.0, blanks for suppressions)
        buf = io.StringIO()
        _integers_kept(frame[cols], source, sep, original, encoding).to_csv(
            buf, index=False, sep=sep, decimal=decimal)
        buf.seek(0)
        new = pd.read_csv(buf, sep=sep, dtype=str, keep_default_na=False)
        for j, c in enumerate(cols):
            values = out[c].to_numpy(dtype=object, copy=True)
            mask = changed[c]
            values[mask] = new.iloc[:, j].to_numpy(dtype=object)[mask]
            out[c] = values
    _csv_out(path, out, frame, sep, decimal, encoding, sep_line, eol)


def _input_conventions(source: Path, sep: str, encoding: str | None = None
                       ) -> tuple[str | None, str]:
    """The input's Excel separator line and line ending, which the protected CSV keeps.

    A semicolon file saved for Excel in a comma locale may open with ``sep=;``, which
    read_microdata skips (:func:`sdcbayes.microdata._csv_layout`); written without it,
    the protected file opens in that Excel as one column (audit AU3 N3). A file saved
    on Windows ends its lines in CRLF. Both are the user's conventions, kept as the
    rest of the file's text is.

    Parameters
    ----------
    source : Path
        The input CSV/TSV (``.gz`` read compressed).
    sep : str
        The separator the input was read with (:func:`_input_separator`).
    encoding : str, optional
        The input's text encoding (None: UTF-8, a BOM skipped).

    Returns
    -------
    (sep_line, eol)
        ``sep_line``: the input's ``sep=X`` line as it is written there (its case
        kept, without its line ending) when it opens the file (after blank lines, as
        the reader finds it) and names ``sep``; otherwise None. ``eol``: ``"\r\n"``
        when the input's first line ends in CRLF, otherwise ``"\n"``.
    """
    from sdcbayes.exceptions import DataError
    from sdcbayes.microdata import _csv_head

    ext = ".tsv" if source.name.lower().endswith((".tsv", ".tsv.gz")) else ".csv"
    try:
        _, _, sep_line, eol = _csv_head(source, ext, encoding)
    except (OSError, EOFError, UnicodeError, LookupError, DataError):
        return None, "\n"  # the conventions are a nicety (the file was read already)
    if sep_line is not None and sep_line[-1] != sep:  # a sep= line names its separator last
        sep_line = None
    return sep_line, eol


def _decimal_mark(sep: str, text, original) -> str:
    """The decimal mark the protected file writes its changed numbers with.

    read_microdata reads a comma as the decimal mark in a semicolon-separated file (the
    European spreadsheet convention), so such a file gets its changed numbers back with
    commas too (``369,08``, not ``369.08`` beside untouched ``10,5`` cells), unless its
    numeric columns (``text``: the input as text) were written with points only.
    """
    import pandas as pd

    if sep != ";":
        return "."
    if text is None or original is None:
        return ","
    comma = point = False
    for c in original.columns:
        if c not in text.columns or not pd.api.types.is_float_dtype(original[c].dtype):
            continue
        values = text[c].astype(str).str.strip()
        comma = comma or bool(values.str.fullmatch(r"[+-]?\d*,\d+").any())
        point = point or bool(values.str.fullmatch(r"[+-]?\d*\.\d+([eE][+-]?\d+)?").any())
    return "." if point and not comma else ","


def _csv_out(path: Path, out, frame, sep: str, decimal: str = ".",
             encoding: str | None = None, sep_line: str | None = None,
             eol: str = "\n") -> None:
    """Write ``out`` with pandas, quoting the observed values that read as missing.

    read_microdata takes an unquoted ``NA`` (and ``#N/A``, ``NaN``, ``nan``) for
    a missing value and a quoted ``"NA"`` for the text (Namibia); pandas writes
    both unquoted. Where some observed value of ``frame`` is written as one of
    those texts, the file is written here instead, with exactly those cells
    quoted (and the cells CSV needs quoted), so the level survives the round
    trip; otherwise pandas writes it, as before. ``encoding``: the input's (None:
    UTF-8), which the file is written in (a ``.gz`` name: compressed, as pandas
    would). ``sep_line``: the input's Excel ``sep=X`` line, written first when
    given; ``eol``: the line ending (:func:`_input_conventions`).
    """
    import io

    import numpy as np
    import pandas as pd

    from sdcbayes.microdata import CSV_NA_VALUES

    tokens = [t for t in CSV_NA_VALUES if t]
    if all(pd.api.types.is_string_dtype(out[c]) for c in out.columns):  # the input's text
        cells = out
    else:  # parsed values: their text as pandas writes them
        buf = io.StringIO()
        out.to_csv(buf, index=False, sep=sep, decimal=decimal)
        buf.seek(0)
        cells = pd.read_csv(buf, sep=sep, dtype=str, keep_default_na=False)
    force = {c: cells[c].astype(str).str.strip().isin(tokens).to_numpy()
             & frame[c].notna().to_numpy()
             for c in frame.columns} if frame.columns.is_unique else {}
    if not any(m.any() for m in force.values()):
        with _text_out(path, encoding) as fh:
            if sep_line is not None:
                fh.write(sep_line + eol)
            out.to_csv(fh, index=False, sep=sep, decimal=decimal, lineterminator=eol)
        return

    def quoted(values, must):
        values = pd.Series(values, dtype=object).fillna("").astype(str)
        must = must | values.str.contains(f"[\"\\r\\n{re.escape(sep)}]", regex=True)
        wrapped = '"' + values.str.replace('"', '""', regex=False) + '"'
        return np.where(must, wrapped, values)

    header = quoted(list(cells.columns), np.zeros(len(cells.columns), dtype=bool))
    columns = [quoted(cells[c].to_numpy(dtype=object), force[c]) for c in cells.columns]
    lines = [sep.join(header)] + [sep.join(row) for row in zip(*columns, strict=True)]
    if sep_line is not None:
        lines.insert(0, sep_line)
    with _text_out(path, encoding) as fh:
        fh.write(eol.join(lines) + eol)


def _text_out(path: Path, encoding: str | None = None):
    """``path`` opened for text in ``encoding`` (None: UTF-8), line endings as written.

    A ``.gz`` name is written compressed, as pandas writes a ``.csv.gz``. A BOM
    encoding (``utf-8-sig``, ``utf-16``) writes its mark once, at the start.
    """
    if path.name.lower().endswith(".gz"):
        import gzip

        return gzip.open(path, "wt", encoding=encoding or "utf-8", newline="")
    return open(path, "w", encoding=encoding or "utf-8", newline="")


def _input_separator(source: Path, sep: str, encoding: str | None = None) -> str:
    """The separator the input was read with: a .csv may use semicolons, tabs or bars."""
    from sdcbayes.microdata import _csv_layout

    # read_microdata's own detection, so both read the same columns (a .tsv too: its
    # Excel sep= line, which the protected file keeps, sets the separator there)
    return _csv_layout(source, ".tsv" if sep == "\t" else ".csv", encoding)[0]


def _input_skip(source: Path, encoding: str | None = None) -> int:
    """The lines before the input's header (blank ones, Excel's ``sep=;``).

    As read_microdata skips them (:func:`sdcbayes.microdata._csv_layout`), so that the
    text read again lines up with the parsed records.
    """
    from sdcbayes.microdata import _csv_layout

    return _csv_layout(source, ".tsv" if source.name.lower().endswith(".tsv") else ".csv",
                       encoding)[1]


def _integers_kept(frame, source: Path, sep: str, original=None,
                   encoding: str | None = None):
    """Float columns the input wrote as integers, back to nullable ``Int64``.

    pandas reads an integer column with a blank as float64 and writes it back as
    ``34.0``. A column was integer in the input when pandas read it as integers,
    or, read as float with blanks, every non-blank entry of its text is an integer
    literal (the text is read again for those columns only). A column whose
    protected values are no longer whole numbers (noise, micro-aggregation) was
    changed by its method and stays float.
    """
    import numpy as np
    import pandas as pd

    def whole(c) -> bool:
        x = frame[c].to_numpy(dtype=float, na_value=np.nan)
        x = x[~np.isnan(x)]
        return bool(np.all(x == np.round(x)) and np.all(np.abs(x) < 2**53))

    integer, unsure = [], []
    for c in frame.columns:
        if not pd.api.types.is_float_dtype(frame[c].dtype) or not whole(c):
            continue
        was = original[c].dtype if original is not None and c in original.columns else None
        if was is not None and pd.api.types.is_integer_dtype(was):
            integer.append(c)
        elif was is None or (pd.api.types.is_float_dtype(was) and original[c].isna().any()):
            unsure.append(c)  # a float column without blanks was written as 1.0 or 1e3
    if unsure:
        try:
            text = pd.read_csv(source, sep=sep, usecols=unsure, dtype=str,
                               skiprows=_input_skip(source, encoding),
                               encoding=encoding or "utf-8")
        except Exception:  # the input's text is a nicety here; write those as floats
            text = None
        for c in unsure if text is not None else []:
            entries = text[c].dropna().str.strip()
            if len(entries) and entries.str.fullmatch(r"[+-]?\d+").all():
                integer.append(c)
    if not integer:
        return frame
    out = frame.copy()
    for c in integer:
        out[c] = frame[c].astype("Int64")
    return out


def _source_metadata(source: Path, ext: str, encoding: str | None = None):
    """The input's metadata read by pyreadstat (SPSS: with the user-missing declarations).

    ``None`` when they cannot be read: metadata are a nicety, the data are written anyway.
    ``encoding``: ``--encoding``, as the data were read with it.
    """
    import pyreadstat

    reader = getattr(pyreadstat, _READERS[ext])
    # missing_ranges are filled only when user-missing values are asked for
    extra = {"user_missing": True} if ext in (".sav", ".zsav") else {}
    if encoding is not None:
        extra["encoding"] = encoding
    try:
        _, meta = reader(str(source), metadataonly=True, **extra)
    except Exception:
        return None
    return meta


def _declared_missing(meta) -> dict[str, list[tuple[Any, Any]]]:
    """SPSS user-missing declarations as ``column -> [(lo, hi), ...]`` (lo == hi: a value)."""
    out: dict[str, list[tuple[Any, Any]]] = {}
    for col, entries in (getattr(meta, "missing_ranges", None) or {}).items():
        pairs = [(e["lo"], e["hi"]) if isinstance(e, dict) else (e, e) for e in entries or []]
        if pairs:
            out[str(col)] = pairs
    return out


def _in_ranges(values, pairs) -> Any:
    """Boolean mask: which of ``values`` (no missing among them) fall in a declared range."""
    import numpy as np

    hit = np.zeros(len(values), dtype=bool)
    for lo, hi in pairs:
        # object arrays (text codes) compare to object results: made boolean here
        hit |= np.asarray((values >= lo) & (values <= hi), dtype=bool)
    return hit


def _user_missing_restored(df, original, source: Path, ext: str, ranges,
                           encoding: str | None = None):
    """Put back the SPSS user-missing codes of the cells no step changed.

    A cell gets its code back when it is missing in the protected data, was
    missing as read (the reader turns user-missing codes into NaN, so no step
    produced this missing value; a suppression only blanks observed values) and
    holds a declared user-missing code in the file. Suppressions stay
    system-missing, so a reader can tell "Refused" from "suppressed by sdcbayes".

    Returns
    -------
    (pandas.DataFrame, dict)
        The data and the ``missing_ranges`` to declare. A column's declaration is
        dropped when its type changed (numeric <-> text) or when a value a step
        wrote falls in a declared range (declaring it would hide that value).
    """
    import pandas as pd
    import pyreadstat

    cols = [c for c in ranges if c in df.columns]
    raw = None
    if original is not None and cols:
        try:
            raw, _ = getattr(pyreadstat, _READERS[ext])(
                str(source), user_missing=True, usecols=cols,
                **({} if encoding is None else {"encoding": encoding}))
        except Exception:  # no codes to restore; the declarations still hold
            raw = None
    kept: dict[str, list] = {}
    for c in cols:
        pairs = ranges[c]
        numeric_range = all(isinstance(v, (int, float)) for pair in pairs for v in pair)
        numeric_col = pd.api.types.is_numeric_dtype(df[c].dtype)
        text_col = df[c].dtype == object or pd.api.types.is_string_dtype(df[c].dtype)
        if numeric_range != numeric_col or (not numeric_col and not text_col):
            continue
        values = df[c].to_numpy(dtype=float if numeric_col else object)
        missing = pd.isna(df[c]).to_numpy()
        if _in_ranges(values[~missing], pairs).any():
            continue  # a value sdcbayes wrote would read as missing: keep it visible
        if raw is not None and c in raw.columns and c in original.columns and len(raw) == len(df):
            codes = raw[c].to_numpy(dtype=float if numeric_col else object)
            has_code = pd.notna(raw[c]).to_numpy()
            back = missing & pd.isna(original[c]).to_numpy() & has_code
            back[back] = _in_ranges(codes[back], pairs)
            if back.any():
                values = values.copy()
                values[back] = codes[back]
                df[c] = values
        kept[c] = [lo if lo == hi else {"lo": lo, "hi": hi} for lo, hi in pairs]
    return df, kept


#: Stata's valid range of a ``long``; values above it are Stata's missing codes.
_STATA_LONG = (-2_147_483_647, 2_147_483_620)


def _stata_integers(df, meta):
    """Columns Stata stored as byte, int or long back to integers where the values allow.

    pyreadstat reads them as int64 (float64 with missing values), and its
    writer stores both as double. It writes int8/int16/int32 columns as
    ``long`` and has no way to ask for byte, int or float storage (pyreadstat
    1.3: ``write_dta`` takes no storage types), so integer columns come back
    as ``long`` rather than double; ``float`` columns stay double. Columns whose
    values a step made fractional or too large stay double.
    """
    import numpy as np
    import pandas as pd

    types = getattr(meta, "readstat_variable_types", None) or {}
    lo, hi = _STATA_LONG
    for c, kind in types.items():
        if kind not in ("int8", "int16", "int32") or c not in df.columns:
            continue
        s = df[c]
        if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
            continue
        x = s.to_numpy(dtype=float, na_value=np.nan)
        x = x[~np.isnan(x)]
        if x.size and (np.any(x != np.round(x)) or x.min() < lo or x.max() > hi):
            continue
        df[c] = s.astype("Int32")  # nullable: missing values stay Stata missing
    return df


def _metadata_options(df, meta, ext: str) -> dict[str, Any]:
    """The input's variable metadata as pyreadstat writer options, for the columns of ``df``.

    Formats are kept for numeric columns with a plain numeric format (dates and
    strings get theirs from pyreadstat); an SPSS ``Fw.d`` too narrow for a value a
    step wrote (a new category code, a noisy value) is widened so the value shows.
    """
    import numpy as np
    import pandas as pd

    if meta is None:
        return {}
    cols = [str(c) for c in df.columns]
    present = set(cols)
    opts: dict[str, Any] = {}
    names_to_labels = getattr(meta, "column_names_to_labels", None) or {}
    labels = [names_to_labels.get(c) for c in cols]
    if any(labels):  # a list in column order: accepted by every supported pyreadstat
        opts["column_labels"] = labels
    if getattr(meta, "file_label", None):
        opts["file_label"] = meta.file_label
    if ext in (".sav", ".zsav", ".dta"):
        formats = {}
        for c, fmt in (getattr(meta, "original_variable_types", None) or {}).items():
            if c not in present or not isinstance(fmt, str) or not _NUMERIC_FORMAT.match(fmt):
                continue
            s = df[c]
            if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
                continue
            formats[c] = _wide_enough(fmt, s.to_numpy(dtype=float, na_value=np.nan))
        if formats:
            opts["variable_format"] = formats
    if ext in (".sav", ".zsav"):
        measure = {c: m for c, m in (getattr(meta, "variable_measure", None) or {}).items()
                   if c in present and m in ("nominal", "ordinal", "scale")}
        if measure:
            opts["variable_measure"] = measure
        display = getattr(meta, "variable_display_width", None) or {}
        widths = {c: int(w) for c, w in display.items()
                  if c in present and isinstance(w, (int, np.integer)) and w > 0}
        if widths:
            opts["variable_display_width"] = widths
        notes = getattr(meta, "notes", None)
        if notes:
            opts["note"] = list(notes)
    return opts


def _wide_enough(fmt: str, values) -> str:
    """SPSS ``Fw.d`` widened to hold the largest value; other formats unchanged."""
    import numpy as np

    m = re.fullmatch(r"F(\d+)(?:\.(\d+))?", fmt, re.IGNORECASE)
    finite = values[np.isfinite(values)]
    if m is None or not finite.size:
        return fmt
    w, d = int(m.group(1)), int(m.group(2) or 0)
    need = len(str(int(np.max(np.abs(finite))))) + (d + 1 if d else 0) + int((finite < 0).any())
    # SPSS numeric formats are at most 40 wide; beyond that SPSS shows E notation itself
    return fmt if need <= w or need > 40 else f"F{need}.{d}"


def _arrow_safe(frame):
    """Object columns that mix types (e.g. numbers recoded to text) become text."""
    import pandas as pd

    from sdcbayes.protection.pram import level_text

    # shallow: columns are only replaced below (never written in place), so the
    # unchanged ones need no copy of their own
    out = frame.copy(deep=False)
    for c in out.columns:
        s = out[c]
        if s.dtype == object:
            kinds = {type(v) for v in s.dropna().to_numpy()}
            if len(kinds) > 1:
                out[c] = s.map(lambda v: v if pd.isna(v) else level_text(v))
    return out


def _labelled(frame, meta, reserved=None):
    """Categoricals back to numeric codes with value labels (SPSS, Stata).

    read_microdata turned labelled columns into categoricals of label names; the
    original code of every label is taken from the file's metadata (``meta``, from
    :func:`_source_metadata`; ``None`` gives fresh codes), so untouched columns
    keep their codes. New categories (from recoding) get new codes above the
    largest one; categories that were unlabelled codes (text like ``"7"``) get
    their code back without a label. ``reserved`` (column -> declared user-missing
    ``(lo, hi)`` ranges) are codes no new category may take: its values would
    read as missing.
    """
    import numpy as np
    import pandas as pd

    original = dict(getattr(meta, "variable_value_labels", None) or {})
    # read_microdata's own category -> code map: it strips labels and names codes that
    # share a label "label [code]", so the label texts alone would miss those
    read_codes = frame.attrs.get("value_codes", {})
    reserved = reserved or {}
    out = _arrow_safe(frame)
    labels: dict[str, dict] = {}
    for c in out.columns:
        s = out[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            file_labels = original.get(c, {})
            code_of = {str(lab): code for code, lab in file_labels.items()}
            code_of.update({str(k): v for k, v in read_codes.get(c, {}).items()})
            avoid = [(lo, hi) for lo, hi in reserved.get(c, [])
                     if isinstance(lo, (int, float)) and isinstance(hi, (int, float))]
            cats = [str(x) for x in s.cat.categories]
            codes: dict[str, float] = {}
            used = {float(v) for v in code_of.values() if isinstance(v, (int, float))}
            for cat in cats:
                if cat in code_of:
                    codes[cat] = float(code_of[cat])
                else:
                    try:
                        v = float(cat)
                    except ValueError:
                        continue
                    if v not in used and not _in_ranges(np.array([v]), avoid)[0]:
                        codes[cat] = v
                        used.add(v)
            nxt = (max(used) if used else 0.0) + 1.0
            for cat in cats:
                if cat not in codes:
                    nxt = _free_code(nxt, avoid)
                    codes[cat] = nxt
                    used.add(nxt)
                    nxt += 1.0
            arr = np.array([codes[x] for x in cats] + [np.nan])
            out[c] = arr[s.cat.codes.to_numpy()]
            lab = {}
            for cat, v in codes.items():
                key = int(v) if float(v).is_integer() else v
                if cat in code_of:
                    # a category from the file gets its label back as the file wrote it;
                    # an unlabelled code of the file ("7", or "4 [4]" beside a label "4")
                    # stays unlabelled
                    if code_of[cat] in file_labels:
                        lab[key] = file_labels[code_of[cat]]
                elif not _is_number(cat) or float(cat) != v:
                    # a new category, or a number-like one moved off its own code: its
                    # label shows it
                    lab[key] = cat
            for code, text in file_labels.items():
                # labels of codes declared missing (SPSS user-missing, Stata .a-.z) are
                # no categories, yet belong to the file: kept as they were
                missing = isinstance(code, str) or (
                    isinstance(code, (int, float)) and _in_ranges(np.array([code]), avoid)[0])
                if missing:
                    lab.setdefault(int(code) if isinstance(code, float) and code.is_integer()
                                   else code, text)
            if lab:
                labels[c] = lab
        elif pd.api.types.is_extension_array_dtype(s.dtype) and pd.api.types.is_numeric_dtype(
            s.dtype
        ):
            out[c] = s.astype("float64")  # nullable integers: missing becomes system missing
    return out, labels


def _free_code(v: float, ranges) -> float:
    """``v``, or the first whole number above it outside every ``(lo, hi)`` range."""
    for _ in range(len(ranges) + 1):
        above = [hi for lo, hi in ranges if lo <= v <= hi]
        if not above:
            return v
        nxt = math.floor(max(above)) + 1.0
        if nxt <= v:  # a range open to +infinity: no free code above (the writer checks)
            return v
        v = nxt
    return v


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- printing
def _print_summary(s: dict[str, Any], out: Path) -> None:
    from sdcbayes.report import percent

    b, a = s["risk"]["before"], s["risk"]["after"]
    click.echo(
        f"sdcbayes {s['sdcbayes_version']} — protect: "
        + " -> ".join(st["name"] for st in s["steps"])
    )
    click.echo(f"data: {s['data']}")
    if s.get("note"):
        click.echo(f"note: {s['note']}")
    cf = s["risk"].get("closed_form")
    if cf is None:
        # which estimator, and on a sample that it understates (risk.notes says by how much)
        click.echo(f"risk: {s['risk']['estimator']}"
                   + ("; it understates a sample's risk, also after protection (summary.json "
                      "risk.notes)" if s.get("weight") else ""))
        er_rows = [(
            "expected re-identifications",
            f"{b['expected_reidentifications']:.2f} -> {a['expected_reidentifications']:.2f}",
        )]
        if "household_expected_reidentifications" in b:  # --household
            er_rows.append(("household expected re-identifications",
                            f"{b['household_expected_reidentifications']:.2f} -> "
                            f"{a['household_expected_reidentifications']:.2f}"))
    else:
        er_rows = _latent_class_lines(s)
    rows = [
        ("", "before -> after"),
        ("sample uniques", f"{b['n_sample_uniques']:,} -> {a['n_sample_uniques']:,}"),
        *er_rows,
        (
            f"records violating {s['risk']['k']}-anonymity",
            f"{b['k_anonymity_violations']:,} -> {a['k_anonymity_violations']:,}",
        ),
    ]
    if "k_anonymity_violations_suppression" in a:  # a sub-row of the k-anonymity row
        strata = s["risk"].get("suppression_strata")
        # --household: the after is counted on the file the ids complete, not the one the
        # suppression wrote (where it reached its k); the label says so
        completed = (s["risk"].get("household_completion") or {}).get("total")
        rows.append((
            "  as the suppression judges it" + (f" (within {', '.join(strata)})" if strata else "")
            + (", on the file the ids complete" if completed else ""),
            f"{b['k_anonymity_violations_suppression']:,} -> "
            f"{a['k_anonymity_violations_suppression']:,}",
        ))
    if "n_above_threshold" in (a if cf is None else cf["after"]):
        # the suppress_risk step's own measure: the closed form, also under latent-class
        tb, ta = (b, a) if cf is None else (cf["before"], cf["after"])
        rows.append((f"records with {'' if cf is None else 'closed-form '}risk above "
                     f"{s['risk']['threshold']:g}",
                     f"{tb['n_above_threshold']:,} -> {ta['n_above_threshold']:,}"))
    if s["information_loss"]["per_variable"]:  # a header: the lines below are not the sub-row's
        rows.append(("information loss per variable", "share of its values"))
    for var, v in s["information_loss"]["per_variable"].items():
        text = (
            f"{percent(v['share_changed'])} changed, "
            f"{percent(v['share_suppressed'])} suppressed"
        )
        if "il1" in v:
            text += f", IL1 {v['il1']:.3g}"
        elif var in s["information_loss"].get("il1_skipped", {}):
            text += ", IL1 and numeric risk skipped (infinite values; information_loss.il1_skipped)"
        rows.append((f"  {var}", text))
    loss = s["information_loss"]
    if loss.get("il1_columns") and len(loss["il1_columns"]) > 1:
        # sdcMicro's numrisk lines: IL1 and the difference of eigenvalues over them all
        eig = loss.get("eigen_difference")
        rows.append((f"  {', '.join(loss['il1_columns'])} together",
                     f"IL1 {loss['il1_numeric']:.3g}, difference of eigenvalues "
                     f"{'–' if eig is None else percent(eig)}"))
    if "l_diversity" in b:  # --sensitive: assess's line, before -> after (after the loss's
        from sdcbayes.cli import _l_diversity_rows  # sub-rows, not among them)

        rows += _l_diversity_rows({"l_diversity": b["l_diversity"]}, after=a["l_diversity"])
    echo_table(rows)
    for line in (_misclassification_lines(a) + _numeric_risk_lines(s) + _swap_lines(s["steps"])
                 + _rank_swap_lines(s["steps"])
                 + _household_keys_lines(s["steps"]) + _household_completion_lines(s)):
        click.echo(line)
    extra = "".join(f", {f}" for f in s["output_files"] if f == PRAM_MATRICES)
    click.echo(f"written: {out}/{s['protected_file']}, log.csv, summary.json, report.html{extra}")


def _misclassification_lines(after: dict[str, Any]) -> list[str]:
    """Lines on how the risk after reads PRAMmed and swapped keys ([] when none was).

    After a swap of a key: how many records it made non-matching (risk 0: they show another
    household's key values; Shlomo, Tudor & Groom 2010), that the others' risks are counted
    on their pre-swap cells (with the adjusted number on the released cells beside it) and
    what still reads the released values as true (cells, sample uniques, k-anonymity).
    """
    from sdcbayes.protection.pram import MISCLASSIFICATION_METHOD
    from sdcbayes.protection.swapping import SWAP_RISK_METHOD

    m = after.get("misclassification")
    if not m:
        return []
    if "not_adjusted_because" in m:
        what = m["method"].removeprefix("none: the risk after reads the ").removesuffix(
            " keys as true") if m["method"].startswith("none: ") else "PRAMmed"
        return [f"risk after: reads the {what} keys as true ({m['not_adjusted_because']})"]
    swap = m.get("swap")
    read_true = f"{m['unadjusted']['expected_reidentifications']:.2f} expected re-identifications"
    if swap:
        steps = ", ".join(str(e["step"]) for e in swap["steps"])
        blanked = sum(e["blanked_records"] for e in swap["steps"])
        many = "s" if len(swap["steps"]) > 1 else ""
        on_released = (m.get("adjusted_on_released_counts") or {}).get(
            "expected_reidentifications")
        said = (f"{m['swapped_records']:,} records made non-matching by swap step{many} {steps} "
                "count 0, showing another household's key values"
                + (f"; {blanked:,} swapped but blanked later keep their risk, the blank "
                   "matching the true value" if blanked else "")
                + "; the others' risks counted on their pre-swap cells"
                + (f" (on the released cells: {on_released:.2f})"
                   if on_released is not None else ""))
    lines = []
    pram = MISCLASSIFICATION_METHOD in m["method"]
    if pram:
        lines.append(f"risk after: {MISCLASSIFICATION_METHOD} (each record's risk times the "
                     "probability PRAM kept its key values"
                     + (f"; {said}; mean factor" if swap else ", mean")
                     + f" {m['mean_keep_probability']:.3f}); read as true: {read_true}")
    elif swap:
        lines.append(f"risk after: {SWAP_RISK_METHOD}: {said}; read as true: {read_true}")
    what = " and ".join(["PRAMmed"] * pram + ["swapped"] * bool(swap))
    return lines + [
        "  adjusted: re-identifications, their rate, the largest risk, the benchmark and "
        "threshold counts, household risk; read as true: cells, sample uniques, "
        "k-anonymity" + ("" if what == "PRAMmed" else f" (they read the {what} values)")]


def _numeric_risk_lines(s: dict[str, Any]) -> list[str]:
    """The numeric variables' interval risk and record linkage, before -> after."""
    from sdcbayes.report import percent

    num = s["risk"].get("numeric")
    if not num:
        return []
    b, a = num["before"], num["after"]
    lines = [f"numeric variables {', '.join(num['variables'])}, before -> after:",
             f"  interval risk (sdcMicro's dRisk, k = {num['interval_k']:g}): "
             f"{percent(b['interval_risk'])} -> {percent(a['interval_risk'])}"]
    if "linkage_share_nearest" in a:
        left_out = num.get("linkage_n_left_out")
        lines.append(
            f"  record linkage to own original: nearest {percent(b['linkage_share_nearest'])} "
            f"-> {percent(a['linkage_share_nearest'])}, tie-fair "
            f"{percent(b['linkage_expected_correct_share'])} -> "
            f"{percent(a['linkage_expected_correct_share'])}"
            + (f" ({left_out:,} records with a missing value left out)" if left_out else ""))
    else:
        lines.append("  record linkage: skipped (too few complete records; risk.notes)")
    return lines


def _swap_lines(steps: list[dict[str, Any]]) -> list[str]:
    """One line per swap step: households swapped, the rate reached, those at risk.

    The swapped values are in the information loss above; this says how many households
    moved and how many selected ones found no donor (left unswapped).
    """
    out = []
    for st in steps:
        r = st.get("result") or {}
        if st.get("name") != "swap" or "swapped_households" not in r:
            continue
        out.append(
            f"step {st['step']} (swap): {r['swapped_households']:,} of {r['households']:,} "
            f"households swapped ({100 * r['swap_rate_achieved']:.1f}%, rate asked "
            f"{100 * r['swap_rate']:g}%); {r['high_risk_households']:,} at risk (a member "
            f"shares its values with fewer than {r['k_anonymity']} records of its unit); "
            f"{r['n_no_donor']:,} selected but left unswapped for want of a donor"
            + (f"; {r['unfilled_selections']:,} of the rate's selections unmade (their unit "
               "ran out of households with a donor)" if r.get("unfilled_selections") else ""))
    return out


def _rank_swap_warnings(steps: list[dict[str, Any]],
                        step_summaries: list[dict[str, Any]]) -> list[str]:
    """A warning per rank_swap step that swapped nothing in a variable whose values differ.

    Its rank range, floor(P m) for m values swapped, came out below one record: a small
    ``p`` on few records, or an ``r0`` close to 1 (``result.columns_not_swapped``).
    """
    out = []
    for step, st in zip(steps, step_summaries, strict=True):
        cols = (st.get("result") or {}).get("columns_not_swapped")
        if step["step"] != "rank_swap" or not cols:
            continue
        fix = ("raise --rank-swap-p, or lower --rank-swap-r0, or raise --rank-swap-k0"
               if step.get("_option") else
               'raise the step\'s "p", or lower its "r0", or raise its "k0"')
        pct = st["result"].get("rank_range_percent") or {}
        shown = ", ".join(f"{c!r} ({pct[c]:.3g}% of its values)" if c in pct else repr(c)
                          for c in cols)
        out.append(f"step {st['step']} (rank_swap): the rank range of {shown} is below one "
                   f"record, so nothing of {'them' if len(cols) > 1 else 'it'} is swapped "
                   f"(only the top and bottom groups changed); {fix}")
    return out


def _shuffle_warnings(steps: list[dict[str, Any]],
                      step_summaries: list[dict[str, Any]]) -> list[str]:
    """A warning per shuffle step whose model mis-states a categorical predictor.

    With ``method`` "ds" and ``covmethod`` "spearman" or "pearson" (sdcMicro's model), a
    predictor entered as indicators (``result.indicator_predictors``) has two-valued normal
    scores, for which the model's conversion 2 sin(pi r / 6) does not hold: the rank
    correlations with its levels and those between the shuffled variables are not kept
    (:mod:`sdcbayes.protection.shuffling`'s docstring: 0.633 -> 0.476 with a 5-level
    predictor, 0.549 -> -0.008 on the demo's income and hours given the age band).
    """
    out = []
    for step, st in zip(steps, step_summaries, strict=True):
        preds = (st.get("result") or {}).get("indicator_predictors")
        if (step["step"] != "shuffle" or not preds or step["method"] != "ds"
                or step["covmethod"] == "normal-scores"):
            continue
        names = ", ".join(map(repr, preds))
        if step.get("_option"):
            how, cov = "--shuffle-by", f"--shuffle-cov {step['covmethod']}"
            fix = "use --shuffle-cov normal-scores"
        else:
            how, cov = f"step {st['step']} (shuffle): predictor(s)", \
                f"covmethod {step['covmethod']!r}"
            fix = 'set the step\'s "covmethod" to "normal-scores"'
        out.append(f"{how} {names} enter{'s' if len(preds) == 1 else ''} as indicators of "
                   f"{'its' if len(preds) == 1 else 'their'} levels, for which data "
                   f"shuffling with {cov} (sdcMicro's model, right for continuous "
                   "variables only) keeps neither the rank correlations with them nor those "
                   "between the shuffled variables (e.g. 0.549 -> -0.008 between two "
                   f"variables given an 18-level predictor); {fix}, or give an ordered "
                   "categorical as a number, or leave it out")
    return out


def _rank_swap_lines(steps: list[dict[str, Any]]) -> list[str]:
    """One line per rank_swap step: how its rank range was set and how far it reaches.

    The values changed and IL1 are in the information loss above; this says the range
    each variable got (records, and percent of the values swapped) and the top and bottom
    groups replaced by their means.
    """
    out = []
    for st in steps:
        r = st.get("result") or {}
        if st.get("name") != "rank_swap" or "rank_range" not in r:
            continue
        how = (f"{r['criterion']} = {r['criterion_value']:g}"
               + (", the default" if r["criterion"] == "r0" and r.get("r0") is None else ""))
        ranges = ", ".join(f"{c} {n:,} records ({r['rank_range_percent'][c]:.3g}%)"
                           for c, n in r["rank_range"].items())
        grouped = (f"top {r['top_percent']:g}% and bottom {r['bottom_percent']:g}% "
                   "replaced by their means" if r["top_percent"] or r["bottom_percent"]
                   else "no values grouped")
        out.append(f"step {st['step']} (rank_swap, {how}): rank range {ranges}; {grouped}")
    return out


def _swap_rate_warnings(steps: list[dict[str, Any]],
                        step_summaries: list[dict[str, Any]]) -> list[str]:
    """A warning per swap step whose rate achieved is far above the rate asked.

    Every high-risk household is swapped whatever ``swap_rate`` (sdcMicro's recordSwap),
    so with many fine risk variables, or a large ``k``, nearly every household is at risk
    in its unit and the geography is all but permuted (demo, five keys, k = 3: 97% of the
    households swapped at a rate of 5%). "Far above": more than
    :data:`SWAP_RATE_WARN_FACTOR` times the rate asked and more than
    :data:`SWAP_RATE_WARN_MARGIN` above it (a rate of 0 swaps the high-risk households
    alone: warned once they pass 5%). The warning names the two settings that decide who
    is at risk, as options or as the recipe step's fields.
    """
    out = []
    for step, st in zip(steps, step_summaries, strict=True):
        r = st.get("result") or {}
        if st.get("name") != "swap" or "swap_rate_achieved" not in r:
            continue
        asked, got = float(r["swap_rate"]), float(r["swap_rate_achieved"])
        if got <= SWAP_RATE_WARN_FACTOR * asked or got <= asked + SWAP_RATE_WARN_MARGIN:
            continue
        rv = r.get("risk_variables") or []
        opt = step.get("_option") is not None
        rv_set, k_set = (("--swap-risk-variables COLS", "--swap-k") if opt
                         else ('the step\'s "risk_variables"', 'its "k"'))
        out.append(
            f"step {st['step']} (swap): {r['swapped_households']:,} of {r['households']:,} "
            f"households swapped ({100 * got:.1f}%), far above the rate asked "
            f"({100 * asked:g}%): {r['high_risk_households']:,} households are at risk (a "
            f"member shares its values of the {len(rv)} risk variable(s) "
            f"{', '.join(rv)} with fewer than {r['k_anonymity']} records of its unit), and "
            f"every one at risk is swapped; to swap fewer, name fewer or coarser risk "
            f"variables ({rv_set}) or lower {k_set}")
    return out


def _household_keys_lines(steps: list[dict[str, Any]]) -> list[str]:
    """One line per suppression step with ``household_keys``: the blanks it added in mates.

    Those blanks are in the step's ``suppressions`` (and in the information loss above);
    this says how many of them the household consistency cost.
    """
    out = []
    for st in steps:
        r = st.get("result") or {}
        if "household_suppressions" not in r:
            continue
        added = r["household_suppressions"]
        per_key = ", ".join(f"{k} {n:,}" for k, n in added.items()) or "none"
        out.append(f"step {st['step']} ({st['name']}): {sum(added.values()):,} values blanked "
                   f"in household mates (household_keys: {per_key})")
    return out


def _household_completion_lines(s: dict[str, Any]) -> list[str]:
    """The line saying how many key values the risk after reads as the ids give them away.

    ``--household``: the blanks a household mate shows, and a count key's values that are
    not the exact count (blank, band, PRAMmed, missing in the input). None when no value
    was filled (:func:`_completion_summary`).
    """
    c = s["risk"].get("household_completion") or {}
    if not c.get("total"):
        return []
    per_key = "; ".join(
        f"{k} " + (f"{v['counted']:,} counted (the exact number of records)"
                   if v["counted"] and not v["from_mates"] else
                   f"{v['from_mates']:,} shown by a household mate"
                   + (f", {v['counted']:,} counted" if v["counted"] else ""))
        for k, v in c["keys"].items())
    return [f"risk after reads {c['total']:,} key values as the released household ids give "
            f"them away: {per_key}"]


def _latent_class_lines(s: dict[str, Any]) -> list[tuple[str, str]]:
    """The model's line (echoed) and its rows of the before -> after table.

    The expected re-identifications with each interval labelled by its kind (before
    predictive, as ``assess`` prints it, and after predictive too; a summary.json of
    an earlier version, whose after has only the interval over the parameters, gets
    that one, labelled "over θ only"), the blanked
    records' share, the closed form beside them (sdcMicro parity) and the fit's
    diagnostics before and after.
    """
    risk = s["risk"]
    b, a, cf, fit = risk["before"], risk["after"], risk["closed_form"], risk["fit"]
    level = f"{round(100 * fit['interval_level']):g}%"
    click.echo(f"risk: latent-class model, fitted once on the input ({fit['method']}: "
               f"{fit['chains']} chains x {fit['draws']} draws after {fit['tune']} sweeps, "
               f"seed {fit['seed']}"
               + (f", --missing {fit['missing']}" if fit.get("missing") else "")
               + "); after: the protected file scored from the same draws, a blank matching "
               "every level"
               + "".join(f", {k} recoded ({c['levels']} levels -> {c['released_values']})"
                         for k, c in (fit.get("recoded_keys") or {}).items())
               + f"; posterior means [{level} intervals]")

    def er(d, name, what):
        lo, hi = d[name]
        return f"{d['expected_reidentifications']:.2f} [{lo:.2f}, {hi:.2f}] {what}"

    def diag(d):
        g = d.get("diagnostics") or {}
        if g.get("note"):
            return "n/a (exact results)"
        r, e = g.get("max_r_hat"), g.get("min_ess_bulk")
        return (f"max r_hat {'n/a' if r is None else format(r, '.3f')}, "
                f"min ESS {'n/a' if e is None else format(e, '.0f')}")

    pred = "expected_reidentifications_interval" in a
    after_iv, after_what = (("expected_reidentifications_interval", "predictive") if pred
                            else ("expected_reidentifications_hyper_interval",
                                  "parameter uncertainty only"))
    lo, hi = a["expected_reidentifications_blanked_records_interval" if pred
               else "expected_reidentifications_blanked_records_hyper_interval"]
    return [
        ("expected re-identifications",
         er(b, "expected_reidentifications_interval", "predictive") + " -> "
         + er(a, after_iv, after_what)),
        ("  records with a blank",
         f"{a['n_blanked_records']:,} ({a['n_blanks']:,} values), expected "
         f"re-identifications among them "
         f"{a['expected_reidentifications_blanked_records']:.2f} [{lo:.2f}, {hi:.2f}] "
         f"{after_what}"),
        ("  closed form (sdcMicro)",
         f"{cf['before']['expected_reidentifications']:.2f} -> "
         f"{cf['after']['expected_reidentifications']:.2f}"),
        ("  diagnostics", f"{diag(b)} -> {diag(a)}"),
    ] + _household_lines(b, a, cf)


def _household_lines(b: dict[str, Any], a: dict[str, Any], cf: dict[str, Any]
                     ) -> list[tuple[str, str]]:
    """``--household``'s rows under latent-class: the model's, the closed form's.

    Each side's interval labelled by its ``household_interval_kind`` as the ER row labels
    its own: "predictive", or "over θ only" (a summary.json of an earlier version, whose
    interval was over the parameters only and which has no kind, or one over θ only).
    """
    if "household_expected_reidentifications" not in b:
        return []

    def hh(d, key="household_expected_reidentifications"):
        lo, hi = d[f"{key}_interval"]
        kind = str(d.get("household_interval_kind") or "")
        what = "predictive" if kind.startswith("predictive") else "parameter uncertainty only"
        return f"{d[key]:.2f} [{lo:.2f}, {hi:.2f}] {what}"

    rows = [("household expected re-identifications", f"{hh(b)} -> {hh(a)}")]
    if "household_expected_reidentifications" in cf["before"]:
        rows.append(("  closed form (sdcMicro)",
                     f"{cf['before']['household_expected_reidentifications']:.2f} -> "
                     f"{cf['after']['household_expected_reidentifications']:.2f}"))
    hk = "household_expected_reidentified_households"
    if f"{hk}_interval" in b and f"{hk}_interval" in a:
        # the same risks once per household (an older summary.json has none)
        rows.append(("  expected re-identified households", f"{hh(b, hk)} -> {hh(a, hk)}"))
    return rows
