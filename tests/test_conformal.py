"""Split conformal prediction: exact rank, intervals, LAC/APS sets, coverage (handed H27, H28)."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import calipers
from calipers import CalibrationSizeWarning
from conftest import close, load_case, to_np


def perm_residuals(n):
    """H27's residuals: r_i = (5 i mod n) + 1, a permutation of 1..n, so the k-th smallest is k."""
    return (5 * np.arange(1, n + 1) % n + 1).astype(np.float64)


def brute_rank(n, alpha: Fraction) -> int:
    """ceil((n + 1)(1 - alpha)) by counting: the smallest integer k with k >= (n + 1)(1 - alpha)."""
    target = (n + 1) * (1 - alpha)
    k = 0
    while k < target:
        k += 1
    return k


# --------------------------------------------------------------------------
# H27: the rank in exact arithmetic
# --------------------------------------------------------------------------

H27 = [  # (n, confidence, k) from handed case H27; q_hat == k for these residuals
    (19, "0.9", 18), (19, "0.8", 16), (99, "0.9", 90),
    (99, "0.55", 55), (49, "0.3", 15), (9, "0.3", 3),
]


@pytest.mark.parametrize("n,conf,k", H27)
def test_h27_rank_exact(n, conf, k):
    # the level as a user writes it: alpha = 1 - 0.9 is 0.09999999999999998 in floating point
    alpha_float = 1 - float(conf)
    for alpha in (alpha_float, 1 - Fraction(conf), str(1 - Fraction(conf))):
        assert calipers.conformal_rank(n, alpha) == k
    assert brute_rank(n, 1 - Fraction(conf)) == k
    # the traps the case records: int() truncation and a float ceil are each off somewhere
    assert calipers.conformal_quantile(perm_residuals(n), alpha=alpha_float) == k


@pytest.mark.parametrize("n,conf,k", H27)
def test_h27_interval_every_backend(backend, n, conf, k):
    r = perm_residuals(n)
    res = backend.call(lambda y, p, t: calipers.split_conformal_regression(
        y, p, t, alpha=1 - float(conf)), r, np.zeros(n), np.zeros(2))
    assert res.k == k
    close(res.q_hat, k, backend)
    close(res.upper, [k, k], backend)
    close(res.lower, [-k, -k], backend)


def test_rank_matches_brute_force_on_a_grid():
    for n in range(1, 60):
        for num in range(1, 100):
            a = Fraction(num, 100)
            assert calipers.conformal_rank(n, num / 100) == brute_rank(n, a), (n, num)
    assert calipers.conformal_rank(2, 1 / 3) == 2  # read as exactly 1/3
    assert calipers.conformal_rank(2, Fraction(1, 3)) == 2
    assert calipers.conformal_rank(2, "1/3") == 2


@pytest.mark.parametrize("bad", [0, 1, 0.0, 1.0, -0.1, 1.5, float("nan"), True, "x", None])
def test_bad_alpha(bad):
    with pytest.raises(ValueError, match="alpha"):
        calipers.conformal_rank(5, bad)


def test_bad_n():
    with pytest.raises(ValueError, match="n must be"):
        calipers.conformal_rank(0, 0.1)


# --------------------------------------------------------------------------
# H28: k > n gives an infinite interval with a warning; k == n the largest score
# --------------------------------------------------------------------------

H28_Y_TEST = [9.0, -9.0, 9.5, 3.0]


def test_h28_n9_largest_residual(backend):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationSizeWarning)  # k == n: no warning
        res = backend.call(lambda y, p, t: calipers.split_conformal_regression(
            y, p, t, alpha=0.1), perm_residuals(9), np.zeros(9), np.zeros(4))
    assert res.k == 9
    close(res.q_hat, 9.0, backend)
    close(backend.call(calipers.mean_interval_width, res.lower, res.upper), 18.0, backend)
    cov = backend.call(calipers.interval_coverage, np.asarray(H28_Y_TEST), res.lower, res.upper)
    close(cov, 0.75, backend)  # closed interval: 9.0 and -9.0 are covered, 9.5 is not


def test_h28_n8_infinite_with_warning(backend):
    with pytest.warns(CalibrationSizeWarning, match="too small"):
        res = backend.call(lambda y, p, t: calipers.split_conformal_regression(
            y, p, t, alpha=0.1), perm_residuals(8), np.zeros(8), np.zeros(4))
    assert res.k == 9
    assert math.isinf(float(to_np(res.q_hat)))  # not max(residuals) = 8, which under-covers
    assert np.all(to_np(res.upper) == np.inf) and np.all(to_np(res.lower) == -np.inf)
    width = backend.call(calipers.mean_interval_width, res.lower, res.upper)
    assert float(to_np(width)) == np.inf
    cov = backend.call(calipers.interval_coverage, np.asarray(H28_Y_TEST), res.lower, res.upper)
    close(cov, 1.0, backend)


def test_warning_exactly_when_n_below_one_over_alpha_minus_one():
    for n in range(1, 30):
        for alpha in (0.05, 0.1, 0.2, 0.25, 0.5):
            expect = n < Fraction(str(alpha)) ** -1 - 1
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                q = calipers.conformal_quantile(np.arange(n, dtype=float), alpha=alpha)
            warned = any(issubclass(w.category, CalibrationSizeWarning) for w in rec)
            assert warned == expect == math.isinf(q), (n, alpha)


# --------------------------------------------------------------------------
# regression intervals on random data with ties, every backend
# --------------------------------------------------------------------------

def test_regression_random_with_ties(backend):
    rng = np.random.default_rng(3)
    n, m = 57, 40
    y = rng.integers(0, 6, n).astype(float)
    p = rng.integers(0, 6, n).astype(float)  # many tied residuals
    t = rng.normal(size=m)
    alpha = 0.15
    res = backend.call(lambda a, b, c: calipers.split_conformal_regression(a, b, c, alpha=alpha),
                       y, p, t)
    k = brute_rank(n, Fraction(15, 100))
    q = sorted(abs(y - p))[k - 1]
    assert res.k == k and res.n_calibration == n
    close(res.q_hat, q, backend)
    close(res.lower, t - q, backend)
    close(res.upper, t + q, backend)


def test_regression_bad_input():
    with pytest.raises(ValueError, match="y_pred_calib has 2 elements"):
        calipers.split_conformal_regression([1.0, 2.0, 3.0], [1.0, 2.0], [0.0], alpha=0.5)
    with pytest.raises(ValueError, match="finite"):
        calipers.split_conformal_regression([1.0, np.nan], [1.0, 2.0], [0.0], alpha=0.5)
    with pytest.raises(ValueError, match="empty"):
        calipers.split_conformal_regression([], [], [0.0], alpha=0.5)
    with pytest.raises(ValueError, match="1-D"):
        calipers.conformal_quantile(np.ones((2, 2)), alpha=0.5)


def test_jit_invalid_gives_nan():
    import jax
    import jax.numpy as jnp
    f = jax.jit(lambda s: calipers.conformal_quantile(s, alpha=0.5))
    assert math.isnan(float(f(jnp.asarray([1.0, jnp.nan, 2.0]))))


# --------------------------------------------------------------------------
# classification sets: LAC and APS against a brute force in exact arithmetic
# --------------------------------------------------------------------------

def dyadic_proba(rng, n, K, denom=16):
    """Probabilities in multiples of 1/denom (exact in binary: sums are exact, ties common)."""
    cuts = np.sort(rng.integers(0, denom + 1, size=(n, K - 1)), axis=1)
    edges = np.concatenate([np.zeros((n, 1), int), cuts, np.full((n, 1), denom)], axis=1)
    return np.diff(edges, axis=1) / denom


def brute_sets(y_cal, p_cal, p_test, alpha, method):
    """Python-level reference: scores, the k-th smallest, then per-class membership."""
    P = [[Fraction(float(v)) for v in row] for row in p_cal]
    T = [[Fraction(float(v)) for v in row] for row in p_test]
    if method == "lac":
        scores = [1 - row[y] for row, y in zip(P, y_cal)]
    else:  # mass of every class at least as probable as the true one
        scores = [sum(v for v in row if v >= row[y]) for row, y in zip(P, y_cal)]
    n = len(scores)
    k = brute_rank(n, Fraction(str(alpha)))
    q = sorted(scores)[k - 1] if k <= n else math.inf
    out = []
    for row in T:
        if method == "lac":
            out.append([1 - v <= q for v in row])
        else:
            # the mass of the strictly more probable classes is below q_hat (nothing is
            # added once the mass has reached it: no zero-probability class, H36)
            before = [sum(u for u in row if u > v) for v in row]
            out.append([b < q for b in before])
    return q, np.asarray(out, dtype=bool)


@pytest.mark.parametrize("method", ["lac", "aps"])
@pytest.mark.parametrize("alpha", [0.1, 0.3])
def test_sets_match_brute_force(backend, method, alpha):
    rng = np.random.default_rng(7)
    n, m, K = 60, 25, 5
    pc, pt = dyadic_proba(rng, n, K), dyadic_proba(rng, m, K)
    y = rng.integers(0, K, n)
    q, want = brute_sets(y, pc, pt, alpha, method)
    res = backend.call(lambda a, b, c: calipers.split_conformal_classification(
        a, b, c, alpha=alpha, method=method), y, pc, pt)
    close(res.q_hat, float(q), backend)
    np.testing.assert_array_equal(np.asarray(res.sets), want)
    yt = rng.integers(0, K, m)
    close(backend.call(calipers.set_coverage, yt, res.sets), want[np.arange(m), yt].mean(),
          backend)
    close(backend.call(calipers.mean_set_size, res.sets), want.sum(1).mean(), backend)


def test_aps_tie_order_does_not_matter():
    rng = np.random.default_rng(1)
    pc, pt = dyadic_proba(rng, 40, 4, 8), dyadic_proba(rng, 30, 4, 8)
    y = rng.integers(0, 4, 40)
    perm = np.array([2, 0, 3, 1])
    a = calipers.split_conformal_classification(y, pc, pt, alpha=0.2, method="aps")
    inv = np.argsort(perm)
    b = calipers.split_conformal_classification(inv[y], pc[:, perm], pt[:, perm], alpha=0.2,
                                                method="aps")
    assert a.q_hat == b.q_hat
    np.testing.assert_array_equal(a.sets[:, perm], b.sets)


def test_full_sets_when_k_exceeds_n(backend):
    pc = np.array([[0.7, 0.3], [0.2, 0.8]])
    with pytest.warns(CalibrationSizeWarning):
        res = backend.call(lambda a, b, c: calipers.split_conformal_classification(
            a, b, c, alpha=0.2, method="aps"), np.array([0, 1]), pc, pc)
    assert np.asarray(res.sets).all()


def test_classification_bad_input():
    p = np.array([[0.5, 0.5], [0.9, 0.1]])
    with pytest.raises(ValueError, match="class indices in 0 .. 1"):
        calipers.split_conformal_classification([0, 2], p, p, alpha=0.5)
    with pytest.raises(ValueError, match="probabilities in"):
        calipers.split_conformal_classification([0, 1], p * 2, p, alpha=0.5)
    with pytest.raises(ValueError, match="method"):
        calipers.split_conformal_classification([0, 1], p, p, alpha=0.5, method="raps")
    with pytest.raises(ValueError, match="classes"):
        calipers.split_conformal_classification([0, 1], p, p[:, :1], alpha=0.5)
    with pytest.raises(ValueError, match="integer class"):
        calipers.split_conformal_classification([0.0, 1.0], p, p, alpha=0.5)


# --------------------------------------------------------------------------
# coverage: marginal, weighted, and per slice through by_group
# --------------------------------------------------------------------------

def test_coverage_per_slice_by_group():
    rng = np.random.default_rng(5)
    m = 200
    y = rng.normal(size=m)
    lo, hi = -np.ones(m), np.ones(m)
    g = rng.integers(0, 3, m)
    rep = calipers.by_group(calipers.interval_coverage, y, lo, hi, group_id=g)
    for gid, v in zip(rep.group, rep.value):
        sel = g == gid
        assert v == pytest.approx(np.mean(np.abs(y[sel]) <= 1), abs=1e-15)
    assert rep.overall == pytest.approx(np.mean(np.abs(y) <= 1), abs=1e-15)


def test_weighted_coverage_is_repetition():
    y = np.array([0.0, 2.0, 0.5])
    lo, hi = np.full(3, -1.0), np.ones(3)
    w = np.array([2, 1, 3])
    got = calipers.interval_coverage(y, lo, hi, sample_weight=w)
    rep = np.repeat(np.arange(3), w)
    assert got == calipers.interval_coverage(y[rep], lo[rep], hi[rep]) == 5 / 6


def test_marginal_coverage_guarantee_holds_on_average():
    """Over many exchangeable draws mean coverage is >= 1 - alpha (and < 1 - alpha + 1/(n+1))."""
    rng = np.random.default_rng(11)
    n, m, alpha, reps = 19, 50, 0.1, 400
    cov = []
    for _ in range(reps):
        r = np.abs(rng.normal(size=n + m))
        res = calipers.split_conformal_regression(r[:n], np.zeros(n), np.zeros(m), alpha=alpha)
        cov.append(calipers.interval_coverage(r[n:], res.lower, res.upper))
    # exact expectation k / (n + 1) = 18/20 = 0.9; 400*50 draws: se about 0.005
    assert abs(np.mean(cov) - 0.9) < 0.02


def test_interval_helpers_bad_input():
    with pytest.raises(ValueError, match="upper >= lower"):
        calipers.mean_interval_width([1.0], [0.0])
    with pytest.raises(ValueError, match="NaN"):
        calipers.interval_coverage([1.0], [np.nan], [2.0])
    with pytest.raises(ValueError, match="boolean"):
        calipers.mean_set_size(np.ones((2, 2)))
    with pytest.raises(ValueError, match="class indices"):
        calipers.set_coverage([3], np.ones((1, 2), dtype=bool))


def test_result_is_pytree():
    import jax
    res = calipers.split_conformal_regression([1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [0.0],
                                              alpha=0.5)
    leaves, tree = jax.tree_util.tree_flatten(res)
    assert len(leaves) == 3
    back = jax.tree_util.tree_unflatten(tree, leaves)
    assert back.k == res.k == 2


def test_half_precision_gives_float32():
    r = perm_residuals(19).astype(np.float16)
    q = calipers.conformal_quantile(r, alpha=0.1)
    assert q.dtype == np.float32 and q == 18
    res = calipers.split_conformal_regression(r, np.zeros(19, np.float16),
                                              np.full(2, 1000.5, np.float16), alpha=0.1)
    assert res.upper.dtype == np.float32
    np.testing.assert_array_equal(res.upper, [1018.5, 1018.5])  # not rounded to float16


# --------------------------------------------------------------------------
# properties (hypothesis)
# --------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=40), st.integers(1, 99))
def test_quantile_is_the_kth_order_statistic(scores, pct):
    """q_hat = sorted(scores)[k-1] with k by counting, +inf beyond n; ties change nothing."""
    s = np.asarray(scores, dtype=float)
    k = brute_rank(len(s), Fraction(pct, 100))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationSizeWarning)
        q = calipers.conformal_quantile(s, alpha=pct / 100)
        q_rev = calipers.conformal_quantile(s[::-1].copy(), alpha=pct / 100)
    want = sorted(s)[k - 1] if k <= len(s) else math.inf
    assert q == want == q_rev


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(5, 40), st.integers(2, 5),
       st.sampled_from(["lac", "aps"]), st.integers(5, 50))
def test_sets_cover_at_least_k_calibration_points(seed, n, K, method, pct):
    """Every calibration point with score <= q_hat is covered, and at least k scores are."""
    rng = np.random.default_rng(seed)
    p = dyadic_proba(rng, n, K, 8)
    y = rng.integers(0, K, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationSizeWarning)
        res = calipers.split_conformal_classification(y, p, p, alpha=pct / 100, method=method)
    cov = calipers.set_coverage(y, res.sets)
    if method == "lac":
        assert cov >= min(res.k, n) / n
    else:
        # every point with score <= q_hat is covered, save a true class of probability 0
        # (not added once the mass has reached q_hat, H36)
        p_true = p[np.arange(n), y]
        score = np.array([row[row >= v].sum() for row, v in zip(p, p_true)])
        assert res.sets[np.arange(n), y][(score <= res.q_hat) & (p_true > 0)].all()
        # never empty when q_hat > 0 (the crossing class is included)
        assert res.sets.any(axis=1).all() or res.q_hat <= 0


def test_jit_second_call_does_not_recompile():
    import jax
    import jax.numpy as jnp
    f = jax.jit(lambda y, p, t: calipers.split_conformal_regression(y, p, t, alpha=0.2))
    g = jax.jit(lambda y, p, t: calipers.split_conformal_classification(y, p, t, alpha=0.2,
                                                                        method="aps"))
    rng = np.random.default_rng(0)
    for _ in range(2):
        f(jnp.asarray(rng.normal(size=20)), jnp.asarray(rng.normal(size=20)),
          jnp.asarray(rng.normal(size=3)))
        pr = dyadic_proba(rng, 20, 3)
        g(jnp.asarray(rng.integers(0, 3, 20)), jnp.asarray(pr), jnp.asarray(pr[:4]))
    assert f._cache_size() == 1 and g._cache_size() == 1


# --------------------------------------------------------------------------
# H36: APS sets of one-hot rows at q_hat = 1 hold the argmax alone (MAPIE 1.6)
# --------------------------------------------------------------------------

def test_H36_aps_one_hot_rows_give_the_argmax(backend):
    case = load_case("H36")
    inp, want = case["inputs"], case["expected"]
    res = backend.call(lambda a, b, c: calipers.split_conformal_classification(
        a, b, c, alpha=inp["alpha"], method="aps"), np.asarray(inp["y_calib"]),
        np.asarray(inp["proba_calib"], dtype=float), np.asarray(inp["proba_test"], dtype=float))
    assert float(res.q_hat) == want["q_hat"] and res.k == want["k"]
    got = [np.flatnonzero(row).tolist() for row in np.asarray(res.sets)]
    assert got == want["sets"]
    # the brute-force rule of this file agrees
    q, sets = brute_sets(inp["y_calib"], inp["proba_calib"], inp["proba_test"], inp["alpha"],
                         "aps")
    assert [np.flatnonzero(row).tolist() for row in sets] == want["sets"]


# --------------------------------------------------------------------------
# H37: paired bounds are checked alike by every function that takes them
# --------------------------------------------------------------------------

BOUND_FUNCTIONS = {
    "interval_coverage": lambda lo, hi: calipers.interval_coverage(
        np.zeros(len(lo)), lo, hi),
    "mean_interval_width": lambda lo, hi: calipers.mean_interval_width(lo, hi),
}


@pytest.mark.parametrize("name", sorted(BOUND_FUNCTIONS))
def test_H37_swapped_bounds_raise_in_every_function(name):
    case = load_case("H37")["inputs"]
    with pytest.raises(ValueError, match=r"upper must be >= lower.*element 0 of upper is 2\.0"):
        if name == "interval_coverage":
            calipers.interval_coverage(case["y_true"], case["lower"], case["upper"])
        else:
            calipers.mean_interval_width(case["lower"], case["upper"])
    call = BOUND_FUNCTIONS[name]
    for lo, hi, arg in (([0.0, np.nan], [1.0, 1.0], "lower"), ([0.0, 0.0], [1.0, np.nan], "upper")):
        with pytest.raises(ValueError, match=f"{arg} must not contain NaN; element 1"):
            call(np.array(lo), np.array(hi))
    # equal bounds are a (degenerate) interval; infinite bounds are allowed
    call(np.array([1.0, -np.inf]), np.array([1.0, np.inf]))


@pytest.mark.parametrize("name", sorted(BOUND_FUNCTIONS))
def test_H37_swapped_bounds_give_nan_under_jit(name):
    import jax
    import jax.numpy as jnp
    call = BOUND_FUNCTIONS[name]
    got = jax.jit(call)(jnp.asarray([3.0, 3.0]), jnp.asarray([2.0, 1.0]))
    assert math.isnan(float(got))
