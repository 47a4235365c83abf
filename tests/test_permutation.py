"""Paired tests on per-unit values (calipers._compare.units): sign-flip test and unit bootstrap."""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from calipers._bootstrap.ratio import replicate_counts
import calipers
from calipers import UndefinedMetricWarning
from conftest import to_np


def _brute(d, alternative):
    """Exact p by enumerating every sign pattern with exact fractions (ties counted exactly)."""
    d = [Fraction(x).limit_denominator(10**6) for x in d]
    obs = sum(d)
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(d)):
        t = sum(s * x for s, x in zip(signs, d))
        hits += {"two-sided": abs(t) >= abs(obs), "greater": t >= obs,
                 "less": t <= obs}[alternative]
    return hits / 2 ** len(d)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("seed", range(4))
def test_exact_against_enumeration_and_scipy(alternative, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 11))
    # quarter steps: many exact ties between sign patterns
    a = rng.integers(0, 5, n) / 4
    b = rng.integers(0, 5, n) / 4
    r = calipers.paired_permutation_test(a, b, alternative=alternative)
    assert r.exact and r.n_resamples == 2 ** n and r.n_units == n
    assert r.statistic == pytest.approx(np.mean(a - b), abs=1e-15)
    assert r.pvalue == pytest.approx(_brute(a - b, alternative), abs=1e-12)
    ref = scipy.stats.permutation_test((a, b), lambda x, y: np.mean(x - y),
                                       permutation_type="samples", alternative=alternative,
                                       n_resamples=np.inf, vectorized=False)
    assert r.pvalue == pytest.approx(ref.pvalue, abs=1e-12)


def test_known_value_and_backends(backend):
    # 6 of the 16 sign patterns reach |mean| of (0.4, 0.1, -0.2, 0.25): exact p = 0.375
    d = np.array([0.4, 0.1, -0.2, 0.25])
    r = backend.call(lambda x, y: calipers.paired_permutation_test(x, y), d, np.zeros(4))
    assert float(to_np(r.pvalue)) == pytest.approx(0.375, abs=1e-6)
    assert float(to_np(r.statistic)) == pytest.approx(0.1375, abs=1e-6)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_monte_carlo_plus_one_and_agreement_with_exact(alternative):
    rng = np.random.default_rng(7)
    a = rng.normal(0.1, 1, 14)
    b = rng.normal(0, 1, 14)
    exact = calipers.paired_permutation_test(a, b, alternative=alternative)
    mc = calipers.paired_permutation_test(a, b, alternative=alternative, exact_max=0,
                                          n_resamples=20000, seed=3)
    assert not mc.exact and mc.n_resamples == 20000
    # Monte Carlo error of a share from 20000 draws: sd <= 0.0036
    assert abs(mc.pvalue - exact.pvalue) < 0.02
    # p * (B + 1) - 1 is the count of extreme draws: an integer (the +1 correction)
    k = mc.pvalue * 20001 - 1
    assert abs(k - round(k)) < 1e-6
    again = calipers.paired_permutation_test(a, b, alternative=alternative, exact_max=0,
                                             n_resamples=20000, seed=3)
    assert again == mc


def test_monte_carlo_never_zero():
    d = np.linspace(1, 2, 40)
    r = calipers.paired_permutation_test(d, np.zeros(40), n_resamples=999)
    assert not r.exact and r.pvalue == 1 / 1000


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=8))
def test_exact_property(vals):
    d = np.array(vals, dtype=float) / 2
    for alt in ("two-sided", "greater", "less"):
        r = calipers.paired_permutation_test(d, np.zeros_like(d), alternative=alt)
        assert r.pvalue == pytest.approx(_brute(d, alt), abs=1e-12)
        assert 0 < r.pvalue <= 1


def test_bootstrap_against_numpy_reference():
    rng = np.random.default_rng(1)
    a, b = rng.random(30), rng.random(30)
    r = calipers.paired_unit_bootstrap(a, b, n_resamples=3000, seed=11, confidence_level=0.9)
    # Reference: the one resampler's unit counts (paired_bootstrap's multinomial rows,
    # the same seed), the units repeated by their counts explicitly, plain NumPy means.
    rep = np.array([(a - b)[np.repeat(np.arange(30), c)].mean()
                    for c in replicate_counts(30, 3000, 11)])
    lo, hi = np.quantile(rep, [0.05, 0.95])
    assert r.difference == pytest.approx(np.mean(a - b), abs=1e-15)
    assert (r.confidence_interval.low, r.confidence_interval.high) == \
        (pytest.approx(lo, abs=1e-14), pytest.approx(hi, abs=1e-14))
    assert r.standard_error == pytest.approx(rep.std(ddof=1), rel=1e-12)
    assert r.prob_a_greater == np.mean(rep > 0)
    assert r.n_units == 30 and r.confidence_level == 0.9


def test_bootstrap_backends(backend):
    # quarter steps: every replicate sum is exact, so the sign of each mean is too
    a = (np.arange(12) % 7) / 4
    b = (np.arange(12) % 5) / 4
    r = backend.call(lambda x, y: calipers.paired_unit_bootstrap(x, y, n_resamples=500, seed=0), a, b)
    ref = calipers.paired_unit_bootstrap(a, b, n_resamples=500, seed=0)
    for got, want in [(r.confidence_interval.low, ref.confidence_interval.low),
                      (r.confidence_interval.high, ref.confidence_interval.high),
                      (r.prob_a_greater, ref.prob_a_greater)]:
        assert float(to_np(got)) == pytest.approx(float(want), abs=1e-5)


def test_too_few_units_warns_and_gives_no_interval():
    with pytest.warns(UndefinedMetricWarning, match="3 units, fewer than 10"):
        r = calipers.paired_unit_bootstrap([0.3, 0.5, 0.2], [0.1, 0.1, 0.1])
    assert math.isnan(r.confidence_interval.low) and math.isnan(r.confidence_interval.high)
    assert math.isnan(r.prob_a_greater) and r.difference == pytest.approx(0.7 / 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        calipers.paired_unit_bootstrap(np.arange(10.0), np.zeros(10), n_resamples=50)


@pytest.mark.parametrize("call,msg", [
    (lambda: calipers.paired_permutation_test([1, 2], [1]), "b has 1 elements but a has 2"),
    (lambda: calipers.paired_permutation_test([1, np.nan], [1, 2]), "finite"),
    (lambda: calipers.paired_permutation_test([1], [1], alternative="both"), "alternative"),
    (lambda: calipers.paired_permutation_test([1], [1], n_resamples=0), "n_resamples"),
    (lambda: calipers.paired_unit_bootstrap([1], [1], confidence_level=1.0), "confidence_level"),
    (lambda: calipers.paired_unit_bootstrap([], []), "empty"),
])
def test_errors(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


def test_jit_nan_for_non_finite():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    f = jax.jit(lambda x, y: calipers.paired_permutation_test(x, y))
    r = f(jnp.asarray([1.0, jnp.nan, 0.5]), jnp.zeros(3))
    assert math.isnan(float(r.pvalue))


@pytest.mark.parametrize("exact_max", [20, 0])
def test_swapping_the_systems_mirrors_everything(exact_max):
    rng = np.random.default_rng(9)
    a, b = rng.random(15), rng.random(15)
    for alt, mirrored in [("two-sided", "two-sided"), ("greater", "less")]:
        ab = calipers.paired_permutation_test(a, b, alternative=alt, exact_max=exact_max,
                                              n_resamples=3000, seed=2)
        ba = calipers.paired_permutation_test(b, a, alternative=mirrored, exact_max=exact_max,
                                              n_resamples=3000, seed=2)
        assert ab.statistic == -ba.statistic and ab.pvalue == ba.pvalue
    x = calipers.paired_unit_bootstrap(a, b, n_resamples=2000, seed=4)
    y = calipers.paired_unit_bootstrap(b, a, n_resamples=2000, seed=4)
    assert x.difference == -y.difference
    assert x.confidence_interval.low == pytest.approx(-y.confidence_interval.high, abs=1e-15)
    assert x.standard_error == pytest.approx(y.standard_error, rel=1e-12)
