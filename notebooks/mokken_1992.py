# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Mokken, Kooiman, Pannekoek & Willenborg (1992): Table 1 and Figure 1
#
# Seed `000`: R.J. Mokken, P. Kooiman, J. Pannekoek, L.C.R.J. Willenborg,
# *Disclosure risks for microdata*, Statistica Neerlandica 46(1), 49-67 (1992).
#
# The paper measures the risk that an investigator who knows the key values of
# `a` people (his *acquaintances*) finds at least one of them, unique in the
# population, in a released sample: `R = 1 - (1 - f_a f_u)^n` (eq. 5), with
# `f_u` the fraction of population uniques. Under the Poisson-gamma model (eq.
# 10-12) `f_u = (1 + N beta)^-(1 + alpha)` with `alpha = 1/(k beta)`.
#
# This notebook reproduces, with `sdcbayes.risk.mokken`:
#
# * **Table 1** (Section 3.2): the maximal risk (eq. 14) x 1000 for three
#   subpopulation sizes, two sample fractions and three numbers of
#   acquaintances, for Keller & Bethlehem's key (k = 1108 values);
# * **Figure 1** (Section 4): the multiple-investigator risk `R'_m` (eq. 19
#   with eq. 21) as a function of the number of investigators `m`, and the two
#   values the text quotes with it (0.061672 and 0.061143).
#
# Every reproduced number is asserted equal to the printed one at the printed
# precision, so this notebook fails if the library stops reproducing the paper.

# %%
import numpy as np
from scipy import optimize

from sdcbayes.report import svg_lines
from sdcbayes.risk import mokken as mk


def show_svg(svg: str) -> None:
    """Display an SVG inline under Jupyter; as a script, say what would be shown."""
    try:
        from IPython.display import SVG, display
    except ImportError:  # plain `python notebooks/mokken_1992.py`
        print(f"[inline SVG figure, {len(svg)} characters; open as a notebook to see it]")
    else:
        display(SVG(svg))


# %% [markdown]
# ## Recovering beta
#
# The paper does not print the Poisson-gamma scale `beta`. It does say that
# Keller and Bethlehem's criterion `f_u <= 0.001` gives a minimal
# subpopulation size of 63 624, i.e. `f_u(63 624) = 0.001` under model (12) with
# `k = 1108`. That equation has two roots in `beta` (f_u first rises, then falls
# in beta): `beta ~ 0.0025` and `beta ~ 0.0074`. Only the second reproduces the
# `f_u` the paper prints for the half and double subpopulations, so we bracket
# it and then *check* it against the printed `f_u` row.

# %%
K_CELLS = 1108  # key values of Keller & Bethlehem's key (Section 3.2)
N_KB = 63_624  # their minimal subpopulation size for f_u <= 0.001


def log_fu_gap(beta: float) -> float:
    alpha = mk.poisson_gamma_alpha(beta, K_CELLS)
    return float(np.log(mk.uniques_fraction(N_KB, alpha, beta)) - np.log(1e-3))


beta = optimize.brentq(log_fu_gap, 4e-3, 1.0, xtol=1e-16, rtol=1e-14)
alpha = float(mk.poisson_gamma_alpha(beta, K_CELLS))
beta_other = optimize.brentq(log_fu_gap, 1e-3, 4e-3)
alpha_other = float(mk.poisson_gamma_alpha(beta_other, K_CELLS))
print(f"root used:      beta = {beta:.6f}, alpha = {alpha:.4f}")
print(f"root rejected:  beta = {beta_other:.6f}, alpha = {alpha_other:.4f}")

# %%
# Table 1 as printed (seed 000, Section 3.2): columns N, f_u x 1000, rows (f, a).
TABLE1_N = np.array([31_812, 63_624, 127_248])
PRINTED_FU_X1000 = np.array([2.17, 1.00, 0.46])
TABLE1_F = np.array([0.001, 0.001, 0.001, 0.01, 0.01, 0.01])
TABLE1_A = np.array([30, 300, 1000, 30, 300, 1000])
PRINTED_R_X1000 = np.array(
    [
        [0.07, 0.03, 0.01],
        [0.65, 0.30, 0.14],
        [2.17, 1.00, 0.46],
        [0.65, 0.30, 0.14],
        [6.49, 3.00, 1.38],
        [21.48, 9.95, 4.59],
    ]
)

f_u = mk.uniques_fraction(TABLE1_N, alpha, beta)
f_u_other = mk.uniques_fraction(TABLE1_N, alpha_other, beta_other)
print("f_u x 1000     N =", "  ".join(f"{n:>8d}" for n in TABLE1_N))
print("  printed          ", "  ".join(f"{v:8.2f}" for v in PRINTED_FU_X1000))
print("  reproduced       ", "  ".join(f"{v:8.2f}" for v in f_u * 1e3))
print("  other root       ", "  ".join(f"{v:8.2f}" for v in f_u_other * 1e3))
# printed to 2 decimals: reproduced within half a unit in the last digit
assert np.all(np.abs(f_u * 1e3 - PRINTED_FU_X1000) <= 0.005)
# ... and the other root visibly does not reproduce the table
assert abs(f_u_other[0] * 1e3 - PRINTED_FU_X1000[0]) > 0.3

# %% [markdown]
# ## Table 1: maximal risk x 1000
#
# One column puts all `a` acquaintances in one subpopulation of size `N`; the
# maximal risk is `ln(1 - R) = -a f f_u(N)` (eq. 14). The paper's numbers agree
# with both the Poisson form (eq. 6) and the binomial form (eq. 5) at the
# printed precision; both are checked.

# %%
tables = {}
for method in ("poisson", "binomial"):
    tables[method] = mk.maximal_subpopulation_risk(
        TABLE1_A[:, None],  # one row per (f, a)
        TABLE1_F[:, None, None],
        f_u[:, None],  # one column per subpopulation size
        TABLE1_N[:, None],
        axis=-1,
        method=method,
    )

header = "  f      a  | " + " | ".join(f"N={n:>6d} printed / eq.6 / eq.5" for n in TABLE1_N)
print(header)
print("-" * len(header))
for i, (f, a) in enumerate(zip(TABLE1_F, TABLE1_A, strict=True)):
    cells = " | ".join(
        f"{PRINTED_R_X1000[i, j]:>14.2f} / {tables['poisson'][i, j] * 1e3:5.2f}"
        f" / {tables['binomial'][i, j] * 1e3:5.2f}"
        for j in range(3)
    )
    print(f"{f:5.3f} {a:6d}  | {cells}")

for method, risk in tables.items():
    assert risk.shape == (6, 3)
    # all 18 entries to the printed 2 decimals (x 1000)
    assert np.all(np.abs(risk * 1e3 - PRINTED_R_X1000) <= 0.005 + 1e-12), method

# %% [markdown]
# The paper reads Table 1 against the threshold `gamma = 0.001`: an entry above
# 1.00 means the subpopulation is smaller than the minimal size `N_min` of eq.
# (17). The borderline cell (`a = 1000`, `f = 0.001`, `N = 63 624`) prints as
# exactly 1.00; its unrounded value is just below the threshold.

# %%
n_min = mk.minimal_subpopulation_size(1e-3, TABLE1_A[:, None], TABLE1_F[:, None], alpha, beta)
print("N_min (eq. 17) per row:", np.round(n_min[:, 0]).astype(int))
decided = PRINTED_R_X1000 != 1.00
assert np.array_equal(
    (PRINTED_R_X1000 > 1.00)[decided], (TABLE1_N[None, :] < n_min)[decided]
)
print(f"borderline cell: R x 1000 = {tables['poisson'][2, 1] * 1e3:.4f}")
assert tables["poisson"][2, 1] < 1e-3 and n_min[2, 0] < N_KB

# %% [markdown]
# ## Figure 1: risk against the number of investigators
#
# Section 4 continues the example with `N = 63 624`, `f_u = f = 0.001` (so
# `n = 63.624`: the paper's sample size is not an integer here) and
# `a = 30, 300, 1000` acquaintances per investigator. With `m` investigators the
# union of their circles has expected size `E a_m = N - N (1 - a/N)^m` (eq. 21)
# and the risk is approximated by `R'_m = 1 - (1 - f_{Ea_m} f_u)^n` (eq. 19).
# The figure itself is not legible in the seed's text; the text quotes one
# investigator's risks (0.00003, 0.0003, 0.001) and two values at `m = 1000`.

# %%
N_FIG, FU_FIG, F_FIG = 63_624, 1e-3, 1e-3
n_fig = F_FIG * N_FIG
a_fig = np.array([30, 300, 1000])
m_grid = np.array([1, 2, 5, 10, 20, 50, 100, 200, 300, 500, 700, 1000])
curve = mk.multiple_investigator_risk(FU_FIG, n_fig, N_FIG, a_fig[:, None], m_grid)

print("   m  " + "".join(f"   a = {a:<5d}" for a in a_fig))
for j, m in enumerate(m_grid):
    print(f"{m:5d} " + "".join(f"  {curve[i, j]:.6f} " for i in range(3)))

# %%
# One investigator (Section 4): "0.00003, 0.0003 and 0.001, respectively".
printed_one = np.array([0.00003, 0.0003, 0.001])
half_unit = np.array([0.5e-5, 0.5e-4, 0.5e-3])  # each is printed to one significant digit
assert np.all(np.abs(curve[:, 0] - printed_one) <= half_unit)

# m = 1000: "The value 0.061672 of R'_m for a = 1000 ... and the value 0.061143 of
# R'_m for a = 300" (6 decimals), and 0.061672 is the maximum, reached at E a_m = N.
r_max = mk.disclosure_risk(1.0, FU_FIG, n_fig)
print(f"R'_1000: a=1000 {curve[2, -1]:.6f} (printed 0.061672), "
      f"a=300 {curve[1, -1]:.6f} (printed 0.061143), maximum {r_max:.6f}")
assert abs(curve[2, -1] - 0.061672) <= 0.5e-6
assert abs(curve[1, -1] - 0.061143) <= 0.5e-6
assert abs(r_max - 0.061672) <= 0.5e-6
# the shape the text describes: increasing in m, more sharply for larger a
assert np.all(np.diff(curve, axis=1) >= 0)
assert np.all(np.diff(curve, axis=0) >= 0)

# %% [markdown]
# The printed values come from the binomial form of eq. (19); the Poisson form
# (the analogue of eq. 6) would give 0.061642 and 0.061113 -- different in the
# fifth decimal, so the paper used (19) as printed.

# %%
poisson_1000 = mk.multiple_investigator_risk(
    FU_FIG, n_fig, N_FIG, np.array([1000, 300]), 1000, method="poisson"
)
print("Poisson form at m = 1000:", np.round(poisson_1000, 6))
assert np.all(np.abs(poisson_1000 - np.array([0.061672, 0.061143])) > 2e-5)

# %%
m_fine = np.arange(1, 1001)
fine = mk.multiple_investigator_risk(FU_FIG, n_fig, N_FIG, a_fig[:, None], m_fine)
svg = svg_lines(
    {f"a = {a}": (m_fine, fine[i]) for i, a in enumerate(a_fig)},
    title="Figure 1: R'_m against m (N = 63 624, f_u = f = 0.001)",
    xlabel="number of investigators m",
    ylabel="R'_m",
    ylim=(0.0, 0.07),
)
assert svg.startswith("<svg") and svg.count("<polyline") == 3
show_svg(svg)
