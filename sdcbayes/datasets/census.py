"""A seeded generator of a census-like population of persons in households.

The population is the "truth" against which disclosure-risk estimators are
checked: every population frequency F_k is known exactly, so the targets of
``ARCHITECTURE.md`` (tau1, tau2, the expected re-identifications sum 1/F_k) can be
computed for any sample drawn from it (:mod:`sdcbayes.datasets.sampling`).

Only NumPy and pandas are imported here. Every random quantity is drawn from
one :class:`numpy.random.Generator`, mostly as uniforms turned into categories
by inverse-CDF look-up, so that the output is a deterministic function of the
seed and of the (small) probability tables below.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from sdcbayes.exceptions import InputError

__all__ = [
    "AGE_BANDS",
    "AGE_GROUPS",
    "COUNTRIES",
    "EDUCATION_LEVELS",
    "MARITAL_STATUSES",
    "OCCUPATIONS",
    "REGIONS",
    "RELATIONSHIPS",
    "SEXES",
    "simulate_population",
]

# ---------------------------------------------------------------------------
# Level labels (the categories of the output columns, in their natural order)
# ---------------------------------------------------------------------------

AGE_BANDS: tuple[str, ...] = tuple(f"{a}-{a + 4}" for a in range(0, 85, 5)) + ("85+",)
"""Five-year age bands ``"0-4"`` ... ``"80-84"``, ``"85+"`` (18 levels)."""

AGE_GROUPS: tuple[str, ...] = tuple(f"{a}-{a + 9}" for a in range(0, 80, 10)) + ("80+",)
"""Ten-year age groups ``"0-9"`` ... ``"70-79"``, ``"80+"`` (9 levels): a coarser age key."""

SEXES: tuple[str, ...] = ("male", "female")

REGIONS: tuple[str, ...] = tuple(f"R{r:02d}" for r in range(1, 13))
"""Twelve regions; ``R01`` is the large, urban capital region."""

MARITAL_STATUSES: tuple[str, ...] = ("never married", "married", "divorced", "widowed")

OCCUPATIONS: tuple[str, ...] = (
    "none",  # children under 15: structural zero for every other level
    "student",
    "not working",
    "retired",
    "managers",
    "professionals",
    "technicians",
    "clerical",
    "service and sales",
    "agriculture",
    "craft",
    "operators",
    "elementary",
)
"""Activity status, with the nine ISCO major groups for the employed."""

EDUCATION_LEVELS: tuple[str, ...] = (
    "primary or less",
    "lower secondary",
    "upper secondary",
    "tertiary",
)

RELATIONSHIPS: tuple[str, ...] = ("head", "partner", "child", "other")

N_FOREIGN_COUNTRIES = 150
COUNTRIES: tuple[str, ...] = ("native",) + tuple(
    f"F{j:03d}" for j in range(1, N_FOREIGN_COUNTRIES + 1)
)
"""Country of birth: ``"native"`` then ``F001`` ... ``F150`` by decreasing frequency."""

MAX_AGE = 99

# ---------------------------------------------------------------------------
# Probability tables of the generative model (see simulate_population)
# ---------------------------------------------------------------------------

# Region shares of households and two region traits: rurality (drives the share
# of agricultural workers) and the share of foreign-born heads (highest in the
# capital). Unequal region sizes make stratified designs with unequal sampling
# fractions meaningful.
_REGION_SHARE = np.array([0.22, 0.13, 0.11, 0.09, 0.08, 0.08, 0.07, 0.06, 0.05, 0.05, 0.04, 0.02])
_REGION_RURAL = np.array([0.02, 0.10, 0.15, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.70])
_REGION_FOREIGN = np.array(
    [0.22, 0.12, 0.10, 0.08, 0.07, 0.06, 0.06, 0.05, 0.05, 0.04, 0.04, 0.03]
)

# Age of the household head by five-year band from 15-19 (only 18-19 used) to 85+.
_HEAD_AGE_BAND_P = np.array(
    [0.01, 0.05, 0.08, 0.09, 0.095, 0.095, 0.095, 0.09, 0.085, 0.08, 0.075, 0.06, 0.045, 0.03,
     0.02]
)  # fmt: skip

# Head age groups used to condition household type, marital status and activity.
_AGE_GROUP_EDGES = np.array([18, 30, 45, 60, 75])  # groups: <18, 18-29, 30-44, 45-59, 60-74, 75+

# Household type given head age group (rows: 18-29, 30-44, 45-59, 60-74, 75+).
# Columns: single person, couple, couple with children, single parent, other adults.
_HH_TYPE_P = np.array(
    [
        [0.40, 0.22, 0.15, 0.05, 0.18],
        [0.22, 0.13, 0.50, 0.10, 0.05],
        [0.25, 0.25, 0.35, 0.08, 0.07],
        [0.35, 0.50, 0.06, 0.03, 0.06],
        [0.55, 0.37, 0.02, 0.01, 0.05],
    ]
)
_N_CHILDREN_P = np.array([0.42, 0.38, 0.13, 0.05, 0.015, 0.005])  # 1..6 children
_N_OTHER_P = np.array([0.65, 0.25, 0.07, 0.03])  # 1..4 further adults

# Probability that a couple is married (rest: cohabiting), by head age group.
_COUPLE_MARRIED_P = np.array([0.45, 0.80, 0.88, 0.92, 0.95])

# Marital status of adults not living with a partner, by own age group
# (rows: <18, 18-29, 30-44, 45-59, 60-74, 75+). Married here means separated
# or spouse living elsewhere.
_MARITAL_ALONE_P = np.array(
    [
        [1.00, 0.00, 0.00, 0.00],  # under 18: never married (structural)
        [0.93, 0.03, 0.04, 0.00],
        [0.55, 0.08, 0.35, 0.02],
        [0.35, 0.08, 0.47, 0.10],
        [0.20, 0.05, 0.35, 0.40],
        [0.10, 0.03, 0.17, 0.70],
    ]
)
# Partners not married to each other (cohabiting): never married or divorced.
_MARITAL_COHABIT_P = np.array([0.75, 0.0, 0.25, 0.0])

# Activity status by own age group and sex: student, not working, retired, employed.
# Rows: 15-17, 18-24, 25-54, 55-64, 65-74, 75+; axis 1: male, female.
_ACTIVITY_AGE_EDGES = np.array([18, 25, 55, 65, 75])
_ACTIVITY_P = np.array(
    [
        [[0.92, 0.03, 0.00, 0.05], [0.94, 0.03, 0.00, 0.03]],
        [[0.42, 0.10, 0.00, 0.48], [0.48, 0.10, 0.00, 0.42]],
        [[0.02, 0.12, 0.00, 0.86], [0.03, 0.24, 0.00, 0.73]],
        [[0.00, 0.12, 0.25, 0.63], [0.00, 0.20, 0.32, 0.48]],
        [[0.00, 0.04, 0.84, 0.12], [0.00, 0.06, 0.87, 0.07]],
        [[0.00, 0.02, 0.97, 0.01], [0.00, 0.03, 0.96, 0.01]],
    ]
)
# ISCO major groups of the employed, by sex (rows male, female); columns follow
# OCCUPATIONS[4:]. Agriculture is rescaled per region by rurality.
_ISCO_P = np.array(
    [
        [0.07, 0.16, 0.13, 0.06, 0.13, 0.04, 0.19, 0.14, 0.08],
        [0.04, 0.22, 0.15, 0.16, 0.24, 0.03, 0.03, 0.04, 0.09],
    ]
)
_ISCO_AGRI = 4  # column of agriculture in _ISCO_P

# Highest education by activity (rows follow OCCUPATIONS).
_EDUCATION_P = np.array(
    [
        [1.00, 0.00, 0.00, 0.00],  # none (children): primary or less
        [0.05, 0.35, 0.35, 0.25],  # student
        [0.30, 0.35, 0.28, 0.07],  # not working
        [0.35, 0.30, 0.25, 0.10],  # retired
        [0.01, 0.05, 0.30, 0.64],  # managers
        [0.00, 0.01, 0.07, 0.92],  # professionals
        [0.01, 0.06, 0.55, 0.38],  # technicians
        [0.02, 0.15, 0.63, 0.20],  # clerical
        [0.08, 0.35, 0.50, 0.07],  # service and sales
        [0.40, 0.38, 0.20, 0.02],  # agriculture
        [0.10, 0.40, 0.47, 0.03],  # craft
        [0.12, 0.45, 0.40, 0.03],  # operators
        [0.35, 0.42, 0.21, 0.02],  # elementary
    ]
)

# Zipf exponent of the foreign countries of birth: a few large communities and
# a long tail of countries with a handful of persons (the population uniques).
_ZIPF_EXPONENT = 1.2


def _draw_categorical(probabilities: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw of one category per uniform variate.

    Parameters
    ----------
    probabilities : ndarray, shape (n_categories,)
        Probabilities (need not be normalised).
    u : ndarray, shape (n,)
        Uniform(0, 1) variates.

    Returns
    -------
    ndarray of int64, shape (n,)
        The category index of each draw.
    """
    cdf = np.cumsum(probabilities, dtype=float)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.size - 1)


def _draw_conditional(table: np.ndarray, group: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw from the row ``table[group[i]]`` for each variate ``u[i]``.

    Row ``g``'s CDF is shifted by ``g`` so that all rows form one increasing
    sequence; one binary search of ``group + u`` then replaces an
    ``(n, n_categories)`` comparison (ten times faster for a million persons).

    Parameters
    ----------
    table : ndarray, shape (n_groups, n_categories)
        Conditional probabilities, one row per group (rows need not be normalised).
    group : ndarray of int, shape (n,)
        The row of each draw.
    u : ndarray, shape (n,)
        Uniform(0, 1) variates.

    Returns
    -------
    ndarray of int64, shape (n,)
        The category index of each draw.
    """
    n_groups, k = table.shape
    cdf = np.cumsum(table, axis=1, dtype=float)
    cdf /= cdf[:, -1:]
    flat = (cdf + np.arange(n_groups)[:, None]).ravel()
    hit = np.searchsorted(flat, group + u, side="right") - k * group
    # Rounding of group + u near the row's end can step one past it.
    return np.clip(hit, 0, k - 1)


def _country_of_birth(rng: np.random.Generator, foreign_share: np.ndarray) -> np.ndarray:
    """Native (code 0) with probability ``foreign_share``'s complement, else foreign.

    Foreign countries get codes 1..150 with Zipf-like frequencies
    :math:`p_j \\propto j^{-1.2}`; only the foreign-born draw a country.
    """
    n = foreign_share.size
    foreign = np.flatnonzero(rng.random(n) < foreign_share)
    zipf = np.arange(1, N_FOREIGN_COUNTRIES + 1, dtype=float) ** (-_ZIPF_EXPONENT)
    country = np.zeros(n, dtype=np.int64)
    country[foreign] = 1 + _draw_categorical(zipf, rng.random(foreign.size))
    return country


def _categorical(codes: np.ndarray, levels: tuple, ordered: bool = False) -> pd.Categorical:
    """Wrap integer codes as a pandas Categorical without copying the labels."""
    # int8/int16 codes keep a 1e6-person frame small (a few bytes per cell).
    return pd.Categorical.from_codes(codes, categories=list(levels), ordered=ordered)


def simulate_population(n_households: int = 40_000, seed: int | np.random.Generator = 0):
    r"""Simulate a census-like population of persons living in households.

    The generative model is sequential, household first, then persons:

    1. **Household** ``h``: region ``R_h`` with unequal shares (``R01`` is the
       capital, 22%); head's age from a head-age pyramid (18 to 99); household
       type given the head's age group -- single person, couple, couple with
       children, single parent, other adults -- and from it the size
       (1 to 8: children 1..6, other adults 1..4).
    2. **Persons** inherit household id, region and household size. The head
       is person 0; in couples person 1 is the partner (age = head's age +
       N(-1.5, 4), opposite sex with probability 0.98); the remaining members
       are children (age uniform on ``[0, min(head age - 18, 25)]``) or other
       adults (age = head's age + N(0, 8), at least 18).
    3. **Sex** of heads depends on the household type and age (single parents
       and very old single persons are mostly women).
    4. **Marital status**: everyone under 18 is never married (structural
       zero); a couple is married with a probability that grows with the
       head's age, and then *both* partners are married (married couples share
       household and region); other adults follow an age-specific table
       (widowhood grows with age).
    5. **Occupation** (activity): under 15 ``"none"`` (structural zero for
       every other level); otherwise student / not working / retired /
       employed by age band and sex; the employed get an ISCO major group by
       sex, with agriculture scaled by the region's rurality.
    6. **Education** given occupation (children: primary or less).
    7. **Country of birth**: a head is foreign-born with a region-specific
       probability (3% to 22%), the foreign country drawn from a Zipf law
       :math:`p_j \propto j^{-1.2}`, :math:`j = 1..150`; partners share the
       head's country with probability 0.7, children of foreign-born heads
       with probability 0.5 (else native-born), other adults with 0.5.

    The Zipf tail of country of birth combined with the other keys gives the
    heavy-tailed cell sizes of real census tables: many small cells and
    population uniques for any set of five or six keys.

    Parameters
    ----------
    n_households : int, default 40_000
        Number of households; the number of persons is about ``2.29 *
        n_households``: the expected household size under this module's
        tables (head's age band, household type given the head's age group,
        number of children or further adults) is 2.2866, and 40,000
        households gave 91,425 to 91,678 persons over seeds 0-3 (the demo's
        42,000: 96,518). A million persons take about a second.
    seed : int or numpy.random.Generator, default 0
        Seed of the ``numpy.random.default_rng`` stream; the output is a
        deterministic function of it.

    Returns
    -------
    pandas.DataFrame
        One row per person, ordered by household, with columns
        ``household_id`` (int64), ``person_id`` (int64, equal to the row
        number), ``relationship`` (head/partner/child/other), ``region``,
        ``age`` (int8, years), ``age_band`` (5-year), ``age_group``
        (10-year), ``sex``, ``marital_status``, ``occupation``,
        ``education``, ``country_of_birth``, ``household_size`` (int
        categories 1..8). All but the ids and ``age`` are pandas
        Categoricals; the age bands, ``education`` and ``household_size``
        are ordered.

    Raises
    ------
    InputError
        If ``n_households`` is not a positive integer.
    """
    if isinstance(n_households, bool) or not isinstance(n_households, (int, np.integer)):
        raise InputError(
            f"n_households must be a positive integer, got {n_households!r}; "
            "pass e.g. n_households=40_000."
        )
    if n_households < 1:
        raise InputError(
            f"n_households must be at least 1, got {n_households}; pass e.g. n_households=40_000."
        )
    rng = np.random.default_rng(seed)
    n_hh = int(n_households)

    # -- 1. households ------------------------------------------------------
    region_h = _draw_categorical(_REGION_SHARE, rng.random(n_hh))
    band_h = _draw_categorical(_HEAD_AGE_BAND_P, rng.random(n_hh))
    lower = 15 + 5 * band_h
    lower = np.where(band_h == 0, 18, lower)  # heads are adults
    width = np.where(band_h == 0, 2, np.where(band_h == _HEAD_AGE_BAND_P.size - 1, 15, 5))
    head_age = np.minimum(lower + np.floor(rng.random(n_hh) * width).astype(np.int64), MAX_AGE)
    head_group = np.searchsorted(_AGE_GROUP_EDGES, head_age, side="right") - 1  # 0..4
    hh_type = _draw_conditional(_HH_TYPE_P, head_group, rng.random(n_hh))
    n_children = 1 + _draw_categorical(_N_CHILDREN_P, rng.random(n_hh))
    n_other = 1 + _draw_categorical(_N_OTHER_P, rng.random(n_hh))
    size_by_type = np.stack(
        [np.ones(n_hh, np.int64), np.full(n_hh, 2), 2 + n_children, 1 + n_children, 1 + n_other],
        axis=1,
    )
    size = size_by_type[np.arange(n_hh), hh_type]
    couple = (hh_type == 1) | (hh_type == 2)
    couple_married = rng.random(n_hh) < _COUPLE_MARRIED_P[head_group]
    head_foreign_share = _REGION_FOREIGN[region_h]
    head_country = _country_of_birth(rng, head_foreign_share)

    # Sex of the head: couples' heads are men with prob 0.6; single parents
    # are mostly women; lone elderly people are mostly widows.
    p_head_female = np.select(
        [couple, hh_type == 3, head_age >= 75, head_age >= 60],
        [0.4, 0.82, 0.72, 0.62],
        default=0.45,
    )
    head_female = rng.random(n_hh) < p_head_female

    # -- 2. expand to persons -----------------------------------------------
    hh = np.repeat(np.arange(n_hh, dtype=np.int64), size)
    n = hh.size
    start = np.cumsum(size) - size
    pos = np.arange(n, dtype=np.int64) - start[hh]
    is_couple = couple[hh]
    typ = hh_type[hh]
    role = np.where(
        pos == 0,
        0,
        np.where(is_couple & (pos == 1), 1, np.where((typ == 2) | (typ == 3), 2, 3)),
    )
    h_age = head_age[hh]

    partner_age = h_age + np.rint(rng.normal(-1.5, 4.0, n)).astype(np.int64)
    child_age = np.floor(rng.random(n) * (np.clip(h_age - 18, 0, 25) + 1)).astype(np.int64)
    other_age = h_age + np.rint(rng.normal(0.0, 8.0, n)).astype(np.int64)
    age = np.choose(role, [h_age, partner_age, child_age, other_age])
    age = np.where((role == 1) | (role == 3), np.maximum(age, 18), age)
    age = np.clip(age, 0, MAX_AGE)
    age_band = np.minimum(age // 5, len(AGE_BANDS) - 1)
    age_group = np.minimum(age // 10, len(AGE_GROUPS) - 1)

    # -- 3. sex ---------------------------------------------------------------
    opposite = rng.random(n) < 0.98
    other_female = rng.random(n) < np.where(role == 2, 0.488, 0.5)
    h_female = head_female[hh]
    female = np.choose(role, [h_female, h_female ^ opposite, other_female, other_female])
    sex = female.astype(np.int8)

    # -- 4. marital status ------------------------------------------------------
    own_group = np.searchsorted(_AGE_GROUP_EDGES, age, side="right")  # 0 (<18) .. 5 (75+)
    u_marital = rng.random(n)
    alone = _draw_conditional(_MARITAL_ALONE_P, own_group, u_marital)
    cohabit = _draw_categorical(_MARITAL_COHABIT_P, u_marital)
    in_couple = (role <= 1) & is_couple
    marital = np.where(in_couple, np.where(couple_married[hh], 1, cohabit), alone)
    marital = np.where(age < 18, 0, marital)  # structural: no married minors

    # -- 5. occupation -----------------------------------------------------------
    act_band = np.searchsorted(_ACTIVITY_AGE_EDGES, age, side="right")  # 0 = 15-17
    activity_table = _ACTIVITY_P.reshape(-1, _ACTIVITY_P.shape[-1])  # rows (band, sex)
    activity = _draw_conditional(activity_table, 2 * act_band + sex, rng.random(n))  # 0..3
    region_p = region_h[hh]
    # ISCO table by (region, young, sex): agriculture scales from ~0.3x
    # (capital) to ~4x (most rural region); under 30 few managers and more
    # elementary jobs (career effect).
    isco_table = np.broadcast_to(_ISCO_P, (len(REGIONS), 2, 2, _ISCO_P.shape[1])).copy()
    isco_table[..., _ISCO_AGRI] *= (0.3 + 5.0 * _REGION_RURAL)[:, None, None]
    isco_table[:, 1, :, 0] *= 0.3
    isco_table[:, 1, :, 8] *= 1.6
    young = (age < 30).astype(np.int64)
    isco_group = 4 * region_p + 2 * young + sex
    isco = _draw_conditional(isco_table.reshape(-1, _ISCO_P.shape[1]), isco_group, rng.random(n))
    # activity 0, 1, 2 -> student, not working, retired; 3 -> ISCO group.
    occupation = np.where(activity == 3, 4 + isco, 1 + activity)
    occupation = np.where(age < 15, 0, occupation)

    # -- 6. education --------------------------------------------------------------
    education = _draw_conditional(_EDUCATION_P, occupation, rng.random(n))
    education = np.where(age < 12, 0, np.where(age < 15, np.minimum(education, 1), education))

    # -- 7. country of birth -------------------------------------------------------
    own_country = _country_of_birth(rng, _REGION_FOREIGN[region_p])
    h_country = head_country[hh]
    # Children of native heads are native; of foreign-born heads, born abroad
    # in the head's country with probability 0.5, else born here.
    child_share = np.where(h_country == 0, 1.0, 0.5)
    share_p = np.choose(role, [1.0, 0.7, child_share, 0.5])
    shares = rng.random(n) < share_p
    fallback = np.where(role == 2, 0, own_country)
    country = np.where(shares, h_country, fallback)

    return pd.DataFrame(
        {
            "household_id": hh,
            "person_id": np.arange(n, dtype=np.int64),
            "relationship": _categorical(role.astype(np.int8), RELATIONSHIPS),
            "region": _categorical(region_p.astype(np.int8), REGIONS),
            "age": age.astype(np.int8),
            "age_band": _categorical(age_band.astype(np.int8), AGE_BANDS, ordered=True),
            "age_group": _categorical(age_group.astype(np.int8), AGE_GROUPS, ordered=True),
            "sex": _categorical(sex, SEXES),
            "marital_status": _categorical(marital.astype(np.int8), MARITAL_STATUSES),
            "occupation": _categorical(occupation.astype(np.int8), OCCUPATIONS),
            "education": _categorical(
                education.astype(np.int8), EDUCATION_LEVELS, ordered=True
            ),
            "country_of_birth": _categorical(country.astype(np.int16), COUNTRIES),
            "household_size": pd.Categorical.from_codes(
                (size[hh] - 1).astype(np.int8), categories=list(range(1, 9)), ordered=True
            ),
        }
    )
