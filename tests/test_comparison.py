"""McNemar, DeLong, proportion intervals and the SPRT (calipers._compare)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import calipers
from calipers import (
    delong_roc_variance,
    delong_test,
    mcnemar,
    mcnemar_table,
    proportion_confint,
    roc_auc_confint,
    sprt,
)
from conftest import load_case, to_np

def _h14():
    return load_case("H14")


# --------------------------------------------------------------------------
# McNemar
# --------------------------------------------------------------------------

def test_H14_mcnemar_handed_case():
    case = _h14()
    for inp, exp in zip(case["inputs"], case["expected"]):
        for method, want in exp.items():
            r = mcnemar(inp["table"], method=method)
            if isinstance(want, dict):
                assert r.pvalue == pytest.approx(want["pvalue"], abs=1e-6)
                if "statistic" in want:
                    assert r.statistic == pytest.approx(want["statistic"], abs=1e-6)
            else:
                assert r.pvalue == pytest.approx(want, abs=1e-6)


def test_H14_no_discordant_pairs_every_method_p_one():
    for method in ("exact", "midp", "chi2", "chi2_cc"):
        r = mcnemar([[7, 0], [0, 5]], method=method)
        assert (r.statistic, r.pvalue, r.b, r.c) == (0.0, 1.0, 0, 0)


def test_spec_worked_value_exact_b10_c0():
    r = mcnemar(np.array([[3, 10], [0, 4]]), method="exact")
    assert r.pvalue == pytest.approx(2 * 0.5**10, rel=1e-12)


def _exact_two_sided(b, c):
    n, k = b + c, min(b, c)
    tail = sum(Fraction(math.comb(n, i), 2**n) for i in range(k + 1))
    return min(Fraction(1), 2 * tail), Fraction(math.comb(n, k), 2**n)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 60), st.integers(0, 60))
def test_mcnemar_exact_and_midp_equal_exact_binomial_sums(b, c):
    p, pmf = _exact_two_sided(b, c)
    r = mcnemar([[1, b], [c, 2]], method="exact")
    assert r.pvalue == pytest.approx(float(p), rel=1e-12, abs=1e-300)
    assert r.statistic == min(b, c)
    mid = mcnemar([[1, b], [c, 2]], method="midp").pvalue
    want_mid = 1.0 if b == c else float(p - pmf)
    assert mid == pytest.approx(want_mid, rel=1e-10, abs=1e-300)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 200), st.integers(0, 200))
def test_mcnemar_chi2_formulas(b, c):
    r = mcnemar([[0, b], [c, 0]], method="chi2")
    rc = mcnemar([[0, b], [c, 0]], method="chi2_cc")
    if b + c == 0:
        assert r.pvalue == rc.pvalue == 1.0
        return
    assert r.statistic == pytest.approx((b - c) ** 2 / (b + c), rel=1e-12)
    assert rc.statistic == pytest.approx(max(abs(b - c) - 1, 0) ** 2 / (b + c), rel=1e-12)
    assert r.pvalue == pytest.approx(stats.chi2.sf(r.statistic, 1), rel=1e-12)
    assert rc.pvalue >= r.pvalue - 1e-15  # the correction is conservative


def _jit_mcnemar(method):
    jax = pytest.importorskip("jax")
    return jax.jit(lambda t: mcnemar(t, method=method))


MCNEMAR_GRID = ([(b, c) for b in range(0, 41) for c in (0, 1, 2, 5, 10, 17, 40)]
                + [(500, 440), (1000, 1000), (2500, 2610), (4800, 5200), (30, 3000)])


@pytest.mark.parametrize("method", ["exact", "midp", "chi2", "chi2_cc"])
def test_mcnemar_under_jit_matches_eager_float32(method):
    jnp = pytest.importorskip("jax.numpy")
    f = _jit_mcnemar(method)
    worst = 0.0
    for b, c in MCNEMAR_GRID:
        t = np.array([[3, b], [c, 4]])
        want = mcnemar(t, method=method)
        got = f(jnp.asarray(t))
        assert got.method == method and int(got.b) == b and int(got.c) == c
        assert float(got.statistic) == pytest.approx(want.statistic, rel=1e-6, abs=1e-6)
        worst = max(worst, abs(float(got.pvalue) - want.pvalue))
    assert worst < 1e-6


@pytest.mark.parametrize("method", ["exact", "midp", "chi2", "chi2_cc"])
def test_mcnemar_under_jit_matches_eager_x64(method):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    with jax.enable_x64(True):
        f = jax.jit(lambda t: mcnemar(t, method=method))
        for b, c in MCNEMAR_GRID[::3]:
            t = np.array([[3, b], [c, 4]])
            want = mcnemar(t, method=method).pvalue
            got = float(f(jnp.asarray(t)).pvalue)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-300), (b, c)


def test_mcnemar_under_jit_worked_values_and_nan():
    jnp = pytest.importorskip("jax.numpy")
    # the spec's worked value: exact, b = 10, c = 0: p = 2 * 0.5**10; b + c = 0: p = 1
    r = _jit_mcnemar("exact")(jnp.asarray([[3, 10], [0, 4]]))
    assert float(r.pvalue) == pytest.approx(2 * 0.5**10, rel=1e-6)
    for method in ("exact", "midp", "chi2", "chi2_cc"):
        z = _jit_mcnemar(method)(jnp.asarray([[7, 0], [0, 5]]))
        assert (float(z.statistic), float(z.pvalue)) == (0.0, 1.0)
        # under jit a bad table cannot raise: NaN
        bad = _jit_mcnemar(method)(jnp.asarray([[7.0, -1.0], [2.0, 5.0]]))
        assert math.isnan(float(bad.pvalue)) and math.isnan(float(bad.statistic))
        frac = _jit_mcnemar(method)(jnp.asarray([[7.0, 2.5], [2.0, 5.0]]))
        assert math.isnan(float(frac.pvalue))


def test_mcnemar_under_jit_exact_tail_against_fractions():
    jnp = pytest.importorskip("jax.numpy")
    f, fm = _jit_mcnemar("exact"), _jit_mcnemar("midp")
    for b, c in [(3, 25), (14, 30), (33, 39), (60, 45)]:
        p, pmf = _exact_two_sided(b, c)
        t = jnp.asarray([[0, b], [c, 0]])
        assert float(f(t).pvalue) == pytest.approx(float(p), abs=1e-6)
        assert float(fm(t).pvalue) == pytest.approx(float(p - pmf), abs=1e-6)


def test_mcnemar_table_from_predictions():
    y = [1, 1, 0, 0, 1, 0, 1]
    a = [1, 0, 0, 1, 1, 0, 0]   # correct: T F T F T T F
    b = [1, 1, 1, 1, 0, 0, 0]   # correct: T T F F F T F
    t = mcnemar_table(y, a, b)
    np.testing.assert_array_equal(t, [[2, 2], [1, 2]])
    assert mcnemar(t).b == 2 and mcnemar(t).c == 1


@pytest.mark.parametrize("table, method, msg", [
    ([[1, 2], [3, 4]], "wald", "method must be"),
    ([[1, 2, 3], [3, 4, 5]], "exact", "must be 2 x 2"),
    ([[1, -2], [3, 4]], "exact", "non-negative integer"),
    ([[1, 2.5], [3, 4]], "exact", "non-negative integer"),
])
def test_mcnemar_errors(table, method, msg):
    with pytest.raises(ValueError, match=msg):
        mcnemar(table, method=method)


def test_mcnemar_table_errors():
    with pytest.raises(ValueError, match="y_pred_b has 2 elements"):
        mcnemar_table([1, 0, 1], [1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="empty"):
        mcnemar_table([], [], [])


# --------------------------------------------------------------------------
# DeLong
# --------------------------------------------------------------------------

def _delong_direct(y, scores):
    """O(P * N) reference: placement values from all pairs, then the covariance."""
    y = np.asarray(y)
    pos, neg = [], []
    for s in scores:
        s = np.asarray(s, dtype=np.float64)
        psi = (s[y == 1][:, None] > s[y == 0][None, :]) + 0.5 * (
            s[y == 1][:, None] == s[y == 0][None, :])
        pos.append(psi.mean(axis=1))
        neg.append(psi.mean(axis=0))
    aucs = np.array([p.mean() for p in pos])
    S10 = np.cov(np.vstack(pos))
    S01 = np.cov(np.vstack(neg))
    S = S10 / len(pos[0]) + S01 / len(neg[0])
    return aucs, np.atleast_2d(S)


def _data(seed, n=40, ties=True):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    y[2:4] = [0, 1]
    a = rng.normal(y * 1.0)
    b = a * 0.5 + rng.normal(size=n)
    if ties:
        a, b = np.round(a, 0), np.round(b, 0)
    return y, a, b


def test_delong_matches_direct_pairs_all_backends(backend):
    y, a, b = _data(0)
    aucs, S = _delong_direct(y, [a, b])
    got = backend.call(lambda yy, aa, bb: tuple(delong_test(yy, aa, bb))[:6], y, a, b)
    z, p, auc_a, auc_b, diff, se = to_np(got)
    var = S[0, 0] + S[1, 1] - 2 * S[0, 1]
    rt = max(backend.rtol(), 1e-10)
    np.testing.assert_allclose([auc_a, auc_b], aucs, rtol=rt)
    np.testing.assert_allclose(se, math.sqrt(var), rtol=rt)
    np.testing.assert_allclose(z, (aucs[0] - aucs[1]) / math.sqrt(var), rtol=max(rt, 1e-9))
    np.testing.assert_allclose(p, 2 * stats.norm.sf(abs(z)), rtol=max(rt, 1e-9))
    np.testing.assert_allclose(auc_a, calipers.roc_auc_score(y, a), rtol=rt)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(6, 60), st.booleans())
def test_delong_variance_property_random(seed, n, ties):
    y, a, b = _data(seed, n, ties)
    aucs, S = _delong_direct(y, [a, b])
    auc, var = delong_roc_variance(y, a)
    assert auc == pytest.approx(aucs[0], rel=1e-12)
    assert var == pytest.approx(S[0, 0], rel=1e-9, abs=1e-15)
    r = delong_test(y, a, b, alternative="greater")
    v = S[0, 0] + S[1, 1] - 2 * S[0, 1]
    if v > 1e-14:
        assert float(r.statistic) == pytest.approx((aucs[0] - aucs[1]) / math.sqrt(v), rel=1e-7)
        assert float(r.pvalue) == pytest.approx(stats.norm.sf(float(r.statistic)), rel=1e-7,
                                                abs=1e-14)


def test_delong_identical_scores_no_evidence():
    y, a, _ = _data(3)
    r = delong_test(y, a, a)
    assert (float(r.statistic), float(r.pvalue), float(r.standard_error)) == (0.0, 1.0, 0.0)


def test_delong_one_sided_and_interval():
    y, a, b = _data(5, n=80)
    two = delong_test(y, a, b)
    g = delong_test(y, a, b, alternative="greater")
    l_ = delong_test(y, a, b, alternative="less")
    assert float(g.pvalue) + float(l_.pvalue) == pytest.approx(1.0, rel=1e-12)
    assert float(two.pvalue) == pytest.approx(2 * min(float(g.pvalue), float(l_.pvalue)))
    ci = two.confidence_interval
    q = stats.norm.ppf(0.975)
    assert float(ci.low) == pytest.approx(float(two.difference) - q * float(two.standard_error))
    c1 = roc_auc_confint(y, a, confidence_level=0.9)
    auc, var = delong_roc_variance(y, a)
    assert float(c1.high) == pytest.approx(float(auc) + stats.norm.ppf(0.95) * math.sqrt(var))


def test_delong_undefined_with_one_positive_warns():
    y = [1, 0, 0, 0]
    with pytest.warns(calipers.UndefinedMetricWarning, match="2 positives"):
        r = delong_test(y, [0.9, 0.1, 0.2, 0.3], [0.5, 0.4, 0.3, 0.2])
    assert math.isnan(float(r.pvalue)) and math.isnan(float(r.auc_a))
    with pytest.warns(calipers.UndefinedMetricWarning):
        auc, var = delong_roc_variance(y, [0.9, 0.1, 0.2, 0.3])
    assert math.isnan(float(var))


def test_delong_invalid_under_jit_is_nan(backend):
    if backend.eager_checks:
        with pytest.raises(ValueError, match="y_true must contain only 0 and 1"):
            backend.call(lambda y, a, b: tuple(delong_test(y, a, b))[:6],
                         [0, 1, 2, 1, 0], [1., 2., 3., 4., 5.], [1., 2., 3., 4., 5.])
        return
    got = backend.call(lambda y, a, b: tuple(delong_test(y, a, b))[:6],
                       [0, 1, 2, 1, 0], [1., 2., 3., 4., 5.], [5., 2., 3., 4., 1.])
    assert np.all(np.isnan(to_np(got)))


@pytest.mark.parametrize("kwargs, msg", [
    (dict(y_score_b=[0.1, np.nan, 0.3, 0.4]), "y_score_b must be finite"),
    (dict(y_score_b=[0.1, 0.3, 0.4]), "y_score_b has 3 elements"),
    (dict(confidence_level=1.5), "confidence_level"),
    (dict(alternative="bigger"), "alternative must be"),
])
def test_delong_errors(kwargs, msg):
    args = dict(y_true=[0, 1, 0, 1], y_score_a=[0.1, 0.2, 0.3, 0.4], y_score_b=[0.4, 0.3, 0.2, 0.1])
    args.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        delong_test(args.pop("y_true"), args.pop("y_score_a"), args.pop("y_score_b"), **args)


# --------------------------------------------------------------------------
# proportion intervals
# --------------------------------------------------------------------------

@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (81, 250), (1, 1)])
def test_wilson_matches_scipy(k, n):
    ci = proportion_confint(k, n, confidence_level=0.9)
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="wilson")
    assert float(ci.low) == pytest.approx(ref.low, rel=1e-10, abs=1e-14)
    assert float(ci.high) == pytest.approx(ref.high, rel=1e-10, abs=1e-14)


def test_proportion_intervals_all_backends(backend):
    k = np.array([0, 3, 50, 99])
    n = np.array([10, 10, 100, 100])
    lo, hi = to_np(backend.call(
        lambda kk, nn: tuple(vars(proportion_confint(kk, nn)).values()), k, n))
    for i in range(4):
        ref = stats.binomtest(int(k[i]), int(n[i])).proportion_ci(method="wilson")
        np.testing.assert_allclose([lo[i], hi[i]], [ref.low, ref.high],
                                   rtol=max(backend.rtol(), 1e-10), atol=1e-14)
    nlo, nhi = to_np(backend.call(
        lambda kk, nn: tuple(vars(proportion_confint(kk, nn, method="normal")).values()), k, n))
    p = k / n
    h = stats.norm.ppf(0.975) * np.sqrt(p * (1 - p) / n)
    np.testing.assert_allclose(nlo, p - h, rtol=max(backend.rtol(), 1e-10), atol=1e-7)
    np.testing.assert_allclose(nhi, p + h, rtol=max(backend.rtol(), 1e-10), atol=1e-7)
    assert nhi[3] > 1.0  # Wald is not clipped (documented)


@pytest.mark.parametrize("k, n, kw, msg", [
    (3, 0, {}, "nobs must be a positive integer"),
    (11, 10, {}, "count must be between 0 and nobs"),
    (-1, 10, {}, "count must be between 0 and nobs"),
    (2.5, 10, {}, "count must be an integer"),
    (2, 10, {"method": "exact"}, "method must be"),
    (2, 10, {"confidence_level": 0}, "confidence_level"),
])
def test_proportion_confint_errors(k, n, kw, msg):
    with pytest.raises(ValueError, match=msg):
        proportion_confint(k, n, **kw)


# --------------------------------------------------------------------------
# SPRT
# --------------------------------------------------------------------------

def test_sprt_hand_computed():
    # p0 = 0.5, p1 = 0.8: each 1 adds ln 1.6, each 0 adds ln 0.4.
    r = sprt([1, 1, 1, 1, 1, 1, 1, 0, 1], p0=0.5, p1=0.8, alpha=0.05, beta=0.2)
    up = math.log(0.8 / 0.05)
    assert r.upper == pytest.approx(up) and r.lower == pytest.approx(math.log(0.2 / 0.95))
    # 6 ones: 6 ln 1.6 = 2.820 > ln 16 = 2.773 -> stop at observation 6
    assert (r.decision, r.n_used) == ("accept_h1", 6)
    assert r.llr[5] == pytest.approx(6 * math.log(1.6))
    r0 = sprt([0, 0, 1], p0=0.5, p1=0.8)
    assert (r0.decision, r0.n_used) == ("accept_h0", 2)  # 2 ln 0.4 = -1.83 < ln(0.2/0.95)
    rc = sprt([1, 0, 1, 0], p0=0.5, p1=0.8)
    assert (rc.decision, rc.n_used) == ("continue", 4)


def test_sprt_error_rates_simulation():
    # 600 sequences under H0 and under H1: Wald's bounds keep the error rates
    # below alpha / (1 - beta) and beta / (1 - alpha) (plus sampling noise).
    rng = np.random.default_rng(7)
    alpha, beta = 0.05, 0.1
    false_h1 = false_h0 = 0
    trials = 600
    for _ in range(trials):
        r = sprt(rng.random(400) < 0.5, p0=0.5, p1=0.65, alpha=alpha, beta=beta)
        false_h1 += r.decision == "accept_h1"
        r = sprt(rng.random(400) < 0.65, p0=0.5, p1=0.65, alpha=alpha, beta=beta)
        false_h0 += r.decision == "accept_h0"
    assert false_h1 / trials < alpha / (1 - beta) + 0.03
    assert false_h0 / trials < beta / (1 - alpha) + 0.04
    assert false_h1 > 0 or false_h0 > 0  # the test does make errors at these rates


@pytest.mark.parametrize("kw, msg", [
    (dict(outcomes=[0, 2, 1], p1=0.7), "outcomes must be 0/1"),
    (dict(outcomes=[], p1=0.7), "empty"),
    (dict(outcomes=[0, 1], p1=0.5), "p1 must differ from p0"),
    (dict(outcomes=[0, 1], p1=1.2), "p1 must be in"),
    (dict(outcomes=[0, 1], p1=0.7, alpha=0.6, beta=0.5), "alpha \\+ beta"),
])
def test_sprt_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        sprt(kw.pop("outcomes"), **kw)
