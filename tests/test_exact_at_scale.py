"""Exact counts at scale: integer pair counts past int64, checked limits, 64-bit bootstrap rows.

References are independent: the weighted Mann-Whitney count, average precision and Harrell's
concordance computed in Python integers (``fractions.Fraction``) by sorting or by enumerating
pairs; integer weights stand for repeated rows, so a uniform weight leaves every ratio as it is.
"""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import array_api_strict

import calipers
from calipers._bootstrap import resample as RS
from conftest import load_case

INT64_LIMIT = "2**63 - 1 = 9223372036854775807"
INT32_LIMIT = "2**31 - 1 = 2147483647"


# --------------------------------------------------------------------------
# references in Python integers
# --------------------------------------------------------------------------

def mw_fraction(y, s, w):
    """Weighted Mann-Whitney AUC (ties 1/2) as a Fraction: sort, then tie groups."""
    order = sorted(range(len(s)), key=lambda i: float(s[i]))
    neg_below, u2, P, N = 0, 0, 0, 0
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and s[order[j]] == s[order[i]]:
            j += 1
        gp = sum(int(w[k]) for k in order[i:j] if y[k] == 1)
        gn = sum(int(w[k]) for k in order[i:j] if y[k] == 0)
        u2 += gp * (2 * neg_below + gn)
        neg_below += gn
        P, N = P + gp, N + gn
        i = j
    return Fraction(u2, 2 * P * N)


def ap_fraction(y, s, w):
    """Average precision (step sum, tied scores together) as a Fraction."""
    total_p = sum(int(w[k]) for k in range(len(s)) if y[k] == 1)
    tp = fp = 0
    ap = Fraction(0)
    for v in sorted(set(float(x) for x in s), reverse=True):
        grp = [k for k in range(len(s)) if float(s[k]) == v]
        gp = sum(int(w[k]) for k in grp if y[k] == 1)
        tp += gp
        fp += sum(int(w[k]) for k in grp if y[k] == 0)
        if gp:
            ap += Fraction(gp, total_p) * Fraction(tp, tp + fp)
    return ap


def harrell_fraction(e, t, r, w):
    """Harrell's C with pair weights w_i w_j, by enumerating the comparable pairs."""
    conc = tied = comp = 0
    for i in range(len(t)):
        if e[i] != 1:
            continue
        ok = (t > t[i]) | ((t == t[i]) & (e == 0))
        wi = int(w[i])
        comp += wi * int(w[ok].astype(object).sum())
        conc += wi * int(w[ok & (r < r[i])].astype(object).sum())
        tied += wi * int(w[ok & (r == r[i])].astype(object).sum())
    return Fraction(2 * conc + tied, 2 * comp), conc, tied


def h40_inputs():
    # the generator of the handed case, as its data file states it
    assert "n=1000" in load_case("H40")["inputs"]["generator"]
    rng = np.random.default_rng(0)
    n = 1000
    y = (rng.random(n) < 0.5).astype(int)
    s = rng.normal(size=n) + y
    w = np.full(n, 10**7, dtype=np.int64)
    return y, s, w


def repeated(total, n=2000, seed=1):
    """Random integer weights summing to about ``total`` weighted rows, and tied scores."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.round(rng.normal(size=n) + y, 1)          # many ties
    w = rng.integers(1, 2 * total // n, size=n, dtype=np.int64)
    return y, s, w


# --------------------------------------------------------------------------
# the AUC statistic past int64 (NumPy: exact)
# --------------------------------------------------------------------------

def test_h40_uniform_integer_weights_give_the_unweighted_auc_exactly():
    y, s, w = h40_inputs()
    want = mw_fraction(y, s, w)
    assert 2 * int(w[y == 1].sum()) * int(w[y == 0].sum()) > 2**63   # past int64
    got = calipers.roc_auc_score(y, s, sample_weight=w)
    assert got == float(want)                      # one correctly rounded division
    assert got == calipers.roc_auc_score(y, s) == 0.7471506914161695


@pytest.mark.parametrize("total", [5 * 10**9, 10**11])
def test_integer_weight_repetition_at_scale_against_fractions(total):
    y, s, w = repeated(total)
    assert abs(int(w.sum()) - total) < total // 10
    want = mw_fraction(y, s, w)
    assert calipers.roc_auc_score(y, s, sample_weight=w) == float(want)
    # repetition: scaling every weight by the same factor changes nothing
    assert calipers.roc_auc_score(y, s, sample_weight=w * 3) == float(want)
    ap = calipers.average_precision_score(y, s, sample_weight=w)
    assert math.isclose(ap, float(ap_fraction(y, s, w)), rel_tol=1e-12)


def test_grouped_auc_past_int64_against_fractions():
    y, s, w = repeated(10**11, n=900, seed=3)
    g = np.repeat(np.arange(3), 300)
    res = calipers.grouped_roc_auc(y, s, g, sample_weight=w)
    want = [float(mw_fraction(y[g == q], s[g == q], w[g == q])) for q in range(3)]
    np.testing.assert_array_equal(np.asarray(res.values, dtype=float), want)


def test_multiclass_auc_past_int64_is_not_wrapped():
    rng = np.random.default_rng(5)
    n, C = 600, 3
    y = rng.integers(0, C, n)
    p = rng.dirichlet(np.ones(C), n) + 0.3 * np.eye(C)[y]
    p = p / p.sum(axis=1, keepdims=True)
    w = np.full(n, 10**8, dtype=np.int64)           # 2 * (2e10)^2 is far past int64
    for mc in ("ovr", "ovo"):
        want = calipers.roc_auc_score(y, p, multi_class=mc)
        got = calipers.roc_auc_score(y, p, multi_class=mc, sample_weight=w)
        assert math.isclose(got, want, rel_tol=1e-12), mc


def test_unit_weight_sums_switch_to_python_integers_past_int64():
    from calipers._kernels import rankstats as R
    assert R._exact_sum_dtype(2**31 - 1, 2**31) is np.int64      # 2 P N = 2**63 - 2**32
    assert R._exact_sum_dtype(2**31, 2**31) is object             # 2 P N = 2**63


# --------------------------------------------------------------------------
# other backends: the limit checked eagerly, NaN under jit
# --------------------------------------------------------------------------

def test_h40_jax_x64_raises_eagerly_and_is_nan_under_jit():
    y, s, w = h40_inputs()
    yj, sj, wj = jnp.asarray(y), jnp.asarray(s), jnp.asarray(w)
    with pytest.raises(ValueError, match=r"sample_weight.*2\*\*63 - 1 = 9223372036854775807"):
        calipers.roc_auc_score(yj, sj, sample_weight=wj)

    def f(a, b, c):
        return calipers.roc_auc_score(a, b, sample_weight=c)

    assert math.isnan(float(jax.jit(f)(yj, sj, wj)))
    # below the limit: int64 counts, the NumPy value exactly
    small = w // 10**4
    assert float(jax.jit(f)(yj, sj, jnp.asarray(small))) == calipers.roc_auc_score(
        y, s, sample_weight=small)


def test_grouped_auc_jax_flags_only_the_group_past_the_limit():
    y, s, w = repeated(10**9, n=600, seed=4)
    g = np.repeat(np.arange(2), 300)
    w = w.copy()
    w[g == 1] *= 10**5                              # group 1: 2 P N past int64, group 0 not

    def f(a, b, c, d):
        return calipers.grouped_roc_auc(a, b, c, sample_weight=d, num_segments=2).values

    got = np.asarray(jax.jit(f)(*(jnp.asarray(v) for v in (y, s, g, w))))
    # int64 counts, exact; U2 past 2**53 rounds to float64 before the division (1 ulp)
    assert math.isclose(got[0], float(mw_fraction(y[g == 0], s[g == 0], w[g == 0])),
                        rel_tol=4e-16)
    assert math.isnan(got[1])


def test_array_api_strict_past_int64_raises():
    y, s, w = h40_inputs()
    xs = array_api_strict
    with pytest.raises(ValueError, match=r"sample_weight.*" + INT64_LIMIT.replace("*", r"\*")):
        calipers.roc_auc_score(xs.asarray(y), xs.asarray(s), sample_weight=xs.asarray(w))


@pytest.mark.parametrize("w_each, past", [(2_100_000, True), (2_000_000, False)])
def test_int32_limit_raises_eagerly_and_is_nan_under_jit(w_each, past):
    # JAX without x64: the doubled placements 2 N are int32; N = 527 * 2.1e6 is past 2**30
    y, s, _ = h40_inputs()
    assert int((y == 0).sum()) == 527
    w = np.full(y.shape[0], w_each, dtype=np.int32)
    assert int(w.sum()) < 2**31                       # the weights' own total fits int32
    with jax.enable_x64(False):
        yj, sj, wj = jnp.asarray(y, jnp.int32), jnp.asarray(s, jnp.float32), jnp.asarray(w)

        def f(a, b, c):
            return calipers.roc_auc_score(a, b, sample_weight=c)

        jitted = float(jax.jit(f)(yj, sj, wj))
        if past:
            with pytest.raises(ValueError, match=r"sample_weight.*2\*\*31 - 1 = 2147483647"):
                f(yj, sj, wj)
            assert math.isnan(jitted)
        else:
            assert math.isclose(float(f(yj, sj, wj)), 0.7471506914161695, rel_tol=1e-6)
            assert math.isclose(jitted, 0.7471506914161695, rel_tol=1e-6)


def test_limit_messages_state_the_limit():
    from calipers._kernels import rankstats as R
    P = np.asarray(2**31, dtype=np.int64)
    with pytest.raises(ValueError) as info:
        R.pair_limit_flag(jnp.asarray(P), jnp.asarray(P), jnp)
    msg = str(info.value)
    assert INT64_LIMIT in msg and f"2*P*N = {2 * 2**62}" in msg
    # exactly at the limit's edge: P N = 2**62 - 1 passes, P N = 2**62 does not
    assert not bool(R.pair_limit_flag(jnp.asarray(2**31 - 1), jnp.asarray(2**31 + 1), jnp))
    with jax.enable_x64(False):
        with pytest.raises(ValueError, match=r"2\*N = 2147483648.*" + r"2\*\*31 - 1 = 2147483647"):
            R.pair_limit_flag(jnp.asarray(5, jnp.int32), jnp.asarray(2**30, jnp.int32), jnp)
        assert not bool(R.pair_limit_flag(jnp.asarray(5, jnp.int32),
                                          jnp.asarray(2**30 - 1, jnp.int32), jnp))


# --------------------------------------------------------------------------
# survival pair counts
# --------------------------------------------------------------------------

def survival_data(n=300, seed=1):
    rng = np.random.default_rng(seed)
    e = (rng.random(n) < 0.6).astype(int)
    t = rng.integers(0, 50, n).astype(float)        # tied times
    r = np.round(rng.normal(size=n), 1)             # tied risks
    return e, t, r


def test_concordance_past_int64_against_fractions():
    e, t, r = survival_data()
    rng = np.random.default_rng(2)
    w = rng.integers(1, 10**9, size=t.shape[0], dtype=np.int64)
    want, conc, tied = harrell_fraction(e, t, r, w)
    got = calipers.concordance_index_censored(e, t, r, sample_weight=w)
    assert int(got.concordant) == conc and int(got.tied_risk) == tied
    assert conc > 2**63                              # the counts themselves pass int64
    assert float(got.cindex) == float(want)


def test_concordance_jax_past_int64_raises_and_is_nan_under_jit():
    e, t, r = survival_data(n=100)
    w = np.full(t.shape[0], 10**9, dtype=np.int64)
    args = [jnp.asarray(v) for v in (e, t, r)]
    with pytest.raises(ValueError, match=r"sample_weight.*2\*\*63 - 1 = 9223372036854775807"):
        calipers.concordance_index_censored(*args, sample_weight=jnp.asarray(w))

    def f(a, b, c, d):
        return calipers.concordance_index_censored(a, b, c, sample_weight=d).cindex

    assert math.isnan(float(jax.jit(f)(*args, jnp.asarray(w))))
    assert float(jax.jit(f)(*args, jnp.asarray(w // 10**3))) == float(
        harrell_fraction(e, t, r, w // 10**3)[0])


# --------------------------------------------------------------------------
# bootstrap counts keyed by 64-bit row ids
# --------------------------------------------------------------------------

def test_rows_j_and_j_plus_2_32_are_drawn_independently():
    ids = np.arange(200_000, dtype=np.int64)
    same, corr = [], []
    for r in range(3):
        a = RS.poisson_counts(11, r, ids)
        b = RS.poisson_counts(11, r, ids + 2**32)
        same.append(np.mean(a == b))
        corr.append(np.corrcoef(a, b)[0, 1])
        assert abs(b.mean() - 1) < 5 / math.sqrt(ids.shape[0])     # Poisson(1) above 2**32
        assert abs(b.var() - 1) < 10 / math.sqrt(ids.shape[0])
    # P(two independent Poisson(1) counts agree) = exp(-2) I0(2) = 0.3085...
    p_same = math.exp(-2) * sum(1 / math.factorial(k) ** 2 for k in range(30))
    assert all(abs(v - p_same) < 0.01 for v in same), same
    assert all(abs(c) < 0.02 for c in corr), corr


def test_poisson_counts_are_the_bootstraps_counts_on_every_backend():
    n = 5000
    d, dd = RS._build_design(np, n, None, y_codes=None, groups_codes=None, n_groups=None,
                             block_length=None, poisson=True, traced=False)
    words = RS.seed_words(3)
    ids = np.arange(n, dtype=np.int64)
    hi = ids + 7 * 2**32
    for r in (0, 9):
        want = RS.draw_counts(d, dd, words, r, np, np.int64)
        np.testing.assert_array_equal(RS.poisson_counts(3, r, ids), want)
        np.testing.assert_array_equal(RS.numpy_drawer(d, dd, words)(r), want)
        above = RS.poisson_counts(3, r, hi)
        np.testing.assert_array_equal(np.asarray(RS.poisson_counts(3, r, jnp.asarray(hi),
                                                                   xp=jnp)), above)
        lo_w, hi_w = RS._split64(hi, np)
        with jax.enable_x64(False):
            got = RS.poisson_counts(3, r, (jnp.asarray(lo_w), jnp.asarray(hi_w)), xp=jnp)
            np.testing.assert_array_equal(np.asarray(got), above)
            np.testing.assert_array_equal(
                np.asarray(RS.poisson_counts(3, r, jnp.asarray(ids, jnp.int32), xp=jnp)), want)


def test_draw_counters_past_2_32_take_their_own_block_keys():
    keys = RS._keys(RS.seed_words(5), 2, np)
    below = RS._draws(0, 1000, keys, np)
    across = RS._draws(2**32 - 500, 1000, keys, np)    # counters on both sides of 2**32
    np.testing.assert_array_equal(across[:500], RS._draws(2**32 - 500, 500, keys, np))
    assert np.mean(across[500:] == below[:500]) < 0.01


def test_uniform_index_designs_state_their_unit_limit():
    def build(n, **kw):
        opts = dict(y_codes=None, groups_codes=None, n_groups=None, block_length=None,
                    poisson=False, traced=False)
        opts.update(kw)
        return RS._build_design(np, n, None, **opts)

    msg = r"more than 2\*\*32 - 1 = 4294967295"
    with pytest.raises(ValueError, match="y_true: the row count is 4294967296, " + msg):
        build(2**32)
    build(2**32 - 1)
    build(2**32, poisson=True)                           # Poisson rows: 64-bit row ids
    with pytest.raises(ValueError, match="groups: the number of clusters is 4294967296"):
        build(10, groups_codes=np.zeros(10, np.int64), n_groups=2**32)
    with pytest.raises(ValueError, match="y_true: the number of block starts"):
        build(2**32 + 5, block_length=5)
    w = np.array([2**31, 2**31, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="sample_weight: the total integer weight"):
        RS._repeat_design(np, 3, None, y_codes=None, w=w, poisson=False)
    RS._repeat_design(np, 3, None, y_codes=None, w=w, poisson=True)


def test_n_resamples_past_the_replicate_counter_raises():
    y = np.array([0, 1, 0, 1])
    s = np.array([0.1, 0.4, 0.35, 0.8])
    with pytest.raises(ValueError, match=r"n_resamples must be at most 2\*\*32 = 4294967296"):
        calipers.paired_bootstrap("roc_auc", y, s, s[::-1].copy(), n_resamples=2**32 + 1)


def test_repeat_design_int32_unit_counts_are_checked():
    # JAX without x64: cumulative sums of the integer weights and of the units' Poisson counts
    w = np.array([2**28, 2**28], dtype=np.int64)
    with jax.enable_x64(False):
        RS._repeat_design(jnp, 2, None, y_codes=None, w=w, poisson=False)
        with pytest.raises(ValueError, match=r"sample_weight: 12 \(the largest Poisson count\) "
                                             r"times the total integer weight 536870912 is "
                                             r"6442450944, more than 2\*\*31 - 1 = 2147483647"):
            RS._repeat_design(jnp, 2, None, y_codes=None, w=w, poisson=True)
        with pytest.raises(ValueError, match=r"the total integer weight is 4294967296"):
            RS._repeat_design(jnp, 2, None, y_codes=None, w=w * 8, poisson=False)
    RS._repeat_design(jnp, 2, None, y_codes=None, w=w, poisson=True)    # int64 with x64
