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
# # Polettini: the individual risk as a Gauss hypergeometric function
#
# Seed `004`: S. Polettini, *A note on the individual risk of disclosure*
# (ISTAT, CASC project, 2003).
#
# Under the superpopulation model of eq. (2) -- `pi_k ∝ 1/pi_k`,
# `F_k | pi_k ~ Poisson(N pi_k)`, `f_k | F_k ~ Bin(F_k, p_k)` -- the population
# frequency given the sample frequency is negative binomial and the
# Benedetti-Franconi risk is
#
# `r_k = E(1/F_k | f_k) = sum_{h >= f} (1/h) C(h-1, f-1) p^f q^(h-f)` (eq. 1)
# `= p^f/f 2F1(f, f; f+1; q)` (eq. 6), `q = 1 - p`.
#
# The seed prints closed forms for `f = 1, 2, 3`, large-`f` approximations
# (eq. 9, 10), and notes that closed forms are numerically unstable. This
# notebook checks, with `sdcbayes.risk.individual`:
#
# 1. the closed forms against brute-force summation of eq. (1) and quadrature of
#    eq. (5), and against `benedetti_franconi_risk` (exact);
# 2. the typo in the seed's last simplification for `f = 3`;
# 3. `p = 1` gives `1/f`;
# 4. the approximations (9), (10) ("always underestimating") and sdcMicro /
#    mu-Argus' `p/(f - 1 + p)` for `f > 2` (overestimating), as a table of
#    relative errors over `p` and `f`;
# 5. stability: the printed closed forms lose digits as `p -> 1` (sdcbayes'
#    evaluation of them does not), and
#    `scipy.special.hyp2f1` returns `inf`/`nan` for `f >= 100` with small `p`,
#    where sdcbayes still agrees with the Gauss series to 1e-12.
#
# The seed has no numerical tables; what it prints are formulas, so the
# notebook asserts the formulas (written out here from the seed) agree with
# independent references.

# %%
import warnings

import numpy as np
import pandas as pd
from scipy import integrate, special, stats

from sdcbayes.risk.individual import benedetti_franconi_risk, polettini_closed_form


def brute_force_risk(f: int, p: float, tail: float = 1e-17) -> float:
    """Eq. (1) summed term by term: F - f ~ NegBin(f, p), truncated where the tail < 1e-17."""
    x = np.arange(int(stats.nbinom.isf(tail, f, p)) + 2)
    return float(np.sum(stats.nbinom.pmf(x, f, p) / (f + x)))


def gauss_series_risk(f: int, p: float, n_terms: int = 200_000) -> float:
    """Eq. (8): r = p/f * sum_n n!/(f+1)_n q^n, the series of 2F1(1, 1; f+1; q)."""
    n = np.arange(n_terms - 1)
    terms = np.concatenate([[1.0], np.cumprod((n + 1.0) / (f + 1.0 + n) * (1.0 - p))])
    assert terms[-1] < 1e-20 * terms.sum()  # truncation negligible
    return p / f * float(np.sum(terms))


def quad_risk(f: int, p: float) -> float:
    """Eq. (5): r = p^f int_0^1 t^(f-1) (1 - t q)^(-f) dt, by adaptive quadrature."""
    val, _ = integrate.quad(lambda t: t ** (f - 1) * (1 - t * (1 - p)) ** (-f), 0, 1,
                            epsabs=0, epsrel=1e-13, limit=200)
    return p**f * val


# %% [markdown]
# ## 1. Closed forms for f = 1, 2, 3
#
# As printed in Section 2 of the seed:
#
# * `f = 1`: `r = p/(1-p) log(1/p)`;
# * `f = 2`: `r = p^2 [(q-1) log p - q] / (q^2 (q-1)) = p/(1-p)^2 [p log p + 1 - p]`;
# * `f = 3`: `r = p^3/3 * [3q(3q-2) - 6(q-1)^2 log(1-q)] / (2 (q-1)^2 q^3)`
#   `= p/(2 q^2) [q(3q-2) - 2 p^2 log p]` (the last step is the typo, below).

# %%
def seed_f1(p):
    return p / (1 - p) * np.log(1 / p)


def seed_f2_first(p):
    q = 1 - p
    return p**2 * ((q - 1) * np.log(p) - q) / (q**2 * (q - 1))


def seed_f2_second(p):
    return p / (1 - p) ** 2 * (p * np.log(p) + 1 - p)


def seed_f3_middle(p):
    q = 1 - p
    return p**3 / 3 * (3 * q * (3 * q - 2) - 6 * (q - 1) ** 2 * np.log(1 - q)) / (
        2 * (q - 1) ** 2 * q**3
    )


def seed_f3_printed(p):
    q = 1 - p
    return p / (2 * q**2) * (q * (3 * q - 2) - 2 * p**2 * np.log(p))


P_GRID = np.array([0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 0.95])
forms = {1: [seed_f1], 2: [seed_f2_first, seed_f2_second], 3: [seed_f3_middle]}
rows = []
for f, fns in forms.items():
    for p in P_GRID:
        brute = brute_force_risk(f, p)
        quad = quad_risk(f, p)
        exact = benedetti_franconi_risk(f, p)
        closed = [fn(p) for fn in fns]
        rows.append({"f": f, "p": p, "brute force (1)": brute, "quadrature (5)": quad,
                     "sdcbayes exact": exact, "seed closed form": closed[0],
                     "polettini_closed_form": polettini_closed_form(f, p)})
        for value in [*closed, exact, polettini_closed_form(f, p), quad]:
            assert abs(value / brute - 1) < 1e-10, (f, p)
closed_table = pd.DataFrame(rows)
with pd.option_context("display.width", 200, "display.float_format", "{:.10f}".format):
    print(closed_table.to_string(index=False))

# %% [markdown]
# ## 2. The f = 3 typo
#
# The seed's middle expression for `f = 3` has `2 (q-1)^2 q^3` in the
# denominator; simplifying it gives `p/(2 q^3) [...]`, but the seed prints
# `p/(2 q^2) [...]`, which is the risk times `q` (printed / truth = `q` in the
# last column). Brute force decides: `q^3` is right (and is what mu-Argus and
# `polettini_closed_form` use).

# %%
typo = pd.DataFrame(
    {
        "p": P_GRID,
        "brute force": [brute_force_risk(3, p) for p in P_GRID],
        "seed, middle expression": seed_f3_middle(P_GRID),
        "seed, printed final (2 q^2)": seed_f3_printed(P_GRID),
        "printed / truth": seed_f3_printed(P_GRID) / [brute_force_risk(3, p) for p in P_GRID],
    }
)
print(typo.round(6).to_string(index=False))
truth3 = typo["brute force"].to_numpy()
np.testing.assert_allclose(seed_f3_middle(P_GRID), truth3, rtol=1e-10)
# the printed final form is off by exactly the factor q (q^2 where q^3 belongs)
np.testing.assert_allclose(seed_f3_printed(P_GRID), truth3 * (1 - P_GRID), rtol=1e-10)
assert abs(seed_f3_printed(0.1) - brute_force_risk(3, 0.1)) > 1e-3

# %% [markdown]
# ## 3. p = 1
#
# "When `p_k = 1` we have `2F1(f, f, f+1, 0) = 1`, so that the individual risk
# equals `1/f_k`."

# %%
f_any = np.array([1, 2, 3, 7, 50, 10**6])
print("r(f, p=1):", benedetti_franconi_risk(f_any, 1.0))
np.testing.assert_array_equal(benedetti_franconi_risk(f_any, 1.0), 1.0 / f_any)
np.testing.assert_array_equal(polettini_closed_form([1, 2, 3], 1.0), [1.0, 0.5, 1 / 3])

# %% [markdown]
# ## 4. Approximations: relative errors over p and f
#
# Eq. (9): `r ≈ p/f (1 + q/(f+1) + 2 q^2/((f+1)(f+2)))`; eq. (10):
# `r ≈ p/f (1 + q/(f+1))`. "The approximation always leads to underestimating
# the risk." sdcMicro's `indivRisk` and mu-Argus use the exact closed forms for
# `f = 1, 2` and `p/(f - 1 + p)` for `f > 2` (`method="approx"`), which
# overstates the risk at small `f > 2`. Relative error = approximation / exact - 1.

# %%
F_GRID = np.array([1, 2, 3, 5, 10, 20, 50, 100])
P_TAB = np.array([0.001, 0.01, 0.1, 0.3, 0.5, 0.9])
ff, pp = np.meshgrid(F_GRID, P_TAB, indexing="ij")
exact = benedetti_franconi_risk(ff, pp)
approx = {m: benedetti_franconi_risk(ff, pp, method=m)
          for m in ("polettini9", "polettini10", "approx")}

# spot-check the exact grid against the Gauss series of eq. (8)
for f, p in [(5, 0.01), (20, 0.3), (100, 0.001), (50, 0.9)]:
    assert abs(benedetti_franconi_risk(f, p) / gauss_series_risk(f, p) - 1) < 1e-12

for name, values in approx.items():
    rel = pd.DataFrame(values / exact - 1, index=pd.Index(F_GRID, name="f"),
                       columns=pd.Index(P_TAB, name="p"))
    print(f"relative error of {name}:")
    print(rel.map(lambda v: f"{v:+.2e}").to_string())

r9, r10, ra = approx["polettini9"], approx["polettini10"], approx["approx"]
# (9) and (10) underestimate, (10) more than (9)
assert np.all(r10 <= r9) and np.all(r9 < exact)
# their errors shrink as f grows (rows are f), at every p
assert np.all(np.diff(np.abs(r9 / exact - 1), axis=0) < 0)
assert np.all(np.diff(np.abs(r10 / exact - 1), axis=0) < 0)
# the seed's remainder term bounds the error of (9): next term 6 q^3/((f+1)(f+2)(f+3)),
# summed geometrically (the series' term ratio is below q)
qq = 1 - pp
assert np.all(exact - r9 <= pp / ff * 6 * qq**3 / ((ff + 1) * (ff + 2) * (ff + 3)) / pp * 1.01)
# sdcMicro "approx": exact for f <= 2, above exact for f > 2, p/(f - 1 + p) there
small = ff <= 2
np.testing.assert_allclose(ra[small], exact[small], rtol=1e-12)
assert np.all(ra[~small] > exact[~small])
np.testing.assert_allclose(ra[~small], (pp / (ff - 1 + pp))[~small], rtol=1e-15)
# the overstatement is largest at f = 3 (a few percent) and fades as f grows
over = ra / exact - 1
print(f"largest overstatement of 'approx': {over.max():+.3f} at f = {ff.flat[over.argmax()]}, "
      f"p = {pp.flat[over.argmax()]}")
assert ff.flat[over.argmax()] == 3 and over.max() > 0.02
assert np.all(np.diff(over[2:], axis=0) < 0)

# %% [markdown]
# ## 5. Numerical stability
#
# **Closed forms as p -> 1.** The printed closed forms subtract nearly equal
# terms and divide by powers of `q`; as `p -> 1` they lose digits (the seed's
# reason for preferring eq. 6). sdcbayes evaluates the same functions without the
# cancellation: `polettini_closed_form` sums them as their Taylor series about
# `p = 1` (the Gauss series, eq. 8) where `p >= 1/2`, and `benedetti_franconi_risk`
# evaluates eq. (6) through its own routes.

# %%
p_near_one = np.array([0.9, 0.99, 1 - 1e-4, 1 - 1e-6, 1 - 1e-7])
rows = []
for f in (1, 2, 3):
    for p in p_near_one:
        ref = gauss_series_risk(f, p)
        rows.append({"f": f, "1 - p": 1 - p,
                     "printed form rel. error": forms[f][0](p) / ref - 1,
                     "polettini_closed_form": polettini_closed_form(f, p) / ref - 1,
                     "benedetti_franconi_risk": benedetti_franconi_risk(f, p) / ref - 1})
near_one = pd.DataFrame(rows)
print(near_one.to_string(index=False, float_format="{:.2e}".format))
assert np.all(np.abs(near_one["benedetti_franconi_risk"]) < 1e-13)
assert np.all(np.abs(near_one["polettini_closed_form"]) < 1e-13)
worst = near_one[(near_one["f"] == 3) & (near_one["1 - p"] < 2e-6)]["printed form rel. error"]
assert np.all(np.abs(worst) > 1e-5)  # the cancellation the seed warns of

# %% [markdown]
# **Large f, small p.** `scipy.special.hyp2f1(f, f; f+1; q)` (eq. 6) and even the
# contiguous form `2F1(1, 1; f+1; q)` return `inf` or `nan` for `f >= 100` with
# `p <= 0.05` -- cells that do occur in large files with small sampling
# fractions. sdcbayes stays finite and agrees with the Gauss series (8).

# %%
rows = []
for f in (50, 100, 300, 1000):
    for p in (0.001, 0.01, 0.05, 0.2):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            via_scipy = p**f / f * special.hyp2f1(f, f, f + 1, 1 - p)
            via_scipy_contig = p / f * special.hyp2f1(1, 1, f + 1, 1 - p)
        ours = benedetti_franconi_risk(f, p)
        series = gauss_series_risk(f, p)
        rows.append({"f": f, "p": p, "scipy eq. (6)": via_scipy,
                     "scipy 2F1(1,1;f+1;q)": via_scipy_contig, "sdcbayes": ours,
                     "Gauss series": series})
        assert np.isfinite(ours) and abs(ours / series - 1) < 1e-12, (f, p)
stab = pd.DataFrame(rows)
with pd.option_context("display.width", 200):
    print(stab.to_string(index=False, float_format="{:.6e}".format))
failed = ~np.isfinite(stab["scipy eq. (6)"])
print(f"scipy fails on {failed.sum()} of {len(stab)} (f, p) pairs; sdcbayes on none")
# scipy's failures (scipy 1.17 here) lie in the region documented in ARCHITECTURE.md,
# f >~ 100 with p <~ 0.05 (or f ~ 1000); a scipy that fixes hyp2f1 only empties the set
assert not failed[stab["f"] < 100].any()
