"""Protection methods: recoding, local suppression, PRAM, micro-aggregation, noise.

Every method takes a pandas DataFrame, the names of the columns it acts on and,
where it is random, a ``seed``, and returns a :class:`ProtectionResult`
``(frame, log, summary)`` with a *new* frame; the input is never modified.
Information-loss measures (:mod:`sdcbayes.protection.infoloss`) compare the
original and the protected frame.

Modules (NumPy, SciPy and pandas only; never PyMC):

- :mod:`~sdcbayes.protection.recode`: global recoding (merge levels, bands,
  top/bottom coding), seed 001 section 4.1.1;
- :mod:`~sdcbayes.protection.suppression`: local suppression to k-anonymity
  with wildcard semantics, seed 001 sections 3.2 and 4.1.2, and above a risk
  threshold (sdcMicro's ``localSupp``), with linked ("ghost") columns;
- :mod:`~sdcbayes.protection.pram`: invariant PRAM (seed 001, 4.1.3) and
  Nayak-Zhang PRAM (seed 002);
- :mod:`~sdcbayes.protection.microaggregation`: MDAV, seed 001 section 4.2.1,
  sdcMicro's univariate sort-and-block (``mafast``) and its methods that order the
  records by a principal component or a column (``pca``, ``single``, ``simple``);
- :mod:`~sdcbayes.protection.noise`: additive and correlated noise, seed 001
  section 4.2.2;
- :mod:`~sdcbayes.protection.rankswap`: rank swapping of numeric variables
  (Moore 1996, sdcMicro's ``rankSwap``);
- :mod:`~sdcbayes.protection.shuffling`: data shuffling of numeric variables given
  predictors (Muralidhar & Sarathy 2006, sdcMicro's ``shuffle``);
- :mod:`~sdcbayes.protection.infoloss`: IL1, the eigenvalue difference, changed/suppressed shares,
  benchmarking indicators with CI overlap, seed 001 section 5.
"""

from sdcbayes.protection.base import ProtectionResult
from sdcbayes.protection.infoloss import (
    benchmark,
    categorical_loss,
    ci_overlap,
    eigen_difference,
    il1,
    mean_ci,
    ols_ci,
    proportion_ci,
)
from sdcbayes.protection.microaggregation import (
    mdav,
    mdav_groups,
    ordered_microaggregation,
    sorted_groups,
    sorted_microaggregation,
)
from sdcbayes.protection.noise import add_noise
from sdcbayes.protection.pram import (
    apply_transition,
    correct_match_probability,
    invariant_pram,
    invariant_transition_matrix,
    keep_probability,
    nayak_zhang_cm_probability,
    nayak_zhang_matrix,
    nayak_zhang_min_group_size,
    nayak_zhang_phi,
    nayak_zhang_pram,
    nayak_zhang_theta,
)
from sdcbayes.protection.rankswap import rank_swap
from sdcbayes.protection.recode import band, bottom_code, merge_levels, top_code
from sdcbayes.protection.shuffling import shuffle
from sdcbayes.protection.suppression import (
    default_importance,
    household_completion,
    household_count_keys,
    household_level_keys,
    local_suppression,
    risk_suppression,
    wildcard_frequencies,
)
from sdcbayes.protection.swapping import check_record_swap_input, record_swap

__all__ = [
    "ProtectionResult",
    "add_noise",
    "apply_transition",
    "band",
    "benchmark",
    "bottom_code",
    "categorical_loss",
    "check_record_swap_input",
    "ci_overlap",
    "correct_match_probability",
    "default_importance",
    "eigen_difference",
    "household_completion",
    "household_count_keys",
    "household_level_keys",
    "il1",
    "invariant_pram",
    "invariant_transition_matrix",
    "keep_probability",
    "local_suppression",
    "mdav",
    "mdav_groups",
    "ordered_microaggregation",
    "sorted_groups",
    "sorted_microaggregation",
    "mean_ci",
    "merge_levels",
    "nayak_zhang_cm_probability",
    "nayak_zhang_matrix",
    "nayak_zhang_min_group_size",
    "nayak_zhang_phi",
    "nayak_zhang_pram",
    "nayak_zhang_theta",
    "ols_ci",
    "proportion_ci",
    "rank_swap",
    "record_swap",
    "risk_suppression",
    "shuffle",
    "top_code",
    "wildcard_frequencies",
]
