"""``calipers.bootstrap_interval``: intervals from replicates already drawn.

Reference: ``scipy.stats.bootstrap`` on the same replicates (its ``bootstrap_distribution``),
for percentile, basic and BCa and the three alternatives; and ``paired_bootstrap``'s own
interval from its own replicates.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import calipers
from conftest import load_case


def _scipy(x, method, alternative, level, seed):
    return stats.bootstrap((x,), np.mean, method=method, alternative=alternative,
                           confidence_level=level, n_resamples=999, rng=seed)


@pytest.mark.parametrize("method", ["percentile", "basic", "BCa"])
@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
@pytest.mark.parametrize("seed", [0, 1])
def test_equals_scipy_on_scipys_replicates(method, alternative, seed):
    x = np.random.default_rng(seed + 10).exponential(size=40)
    level = 0.9
    ref = _scipy(x, method, alternative, level, seed)
    n = x.size
    jack = (x.sum() - x) / (n - 1)      # leave-one-out means
    ci = calipers.bootstrap_interval(ref.bootstrap_distribution, float(x.mean()),
                                     method=method.lower(), confidence_level=level,
                                     alternative=alternative, jackknife=jack)
    np.testing.assert_allclose([ci.low, ci.high], [ref.confidence_interval.low,
                                                   ref.confidence_interval.high], rtol=1e-12)


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_equals_paired_bootstrap_on_its_own_replicates(method):
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    a, b = rng.normal(size=200) + y, rng.normal(size=200) + 0.5 * y
    res = calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=300, seed=1, method=method)
    if method == "bca":
        # BCa needs the jackknife values: here the leave-one-out AUC differences
        jack = np.array([calipers.roc_auc_score(np.delete(y, i), np.delete(a, i))
                         - calipers.roc_auc_score(np.delete(y, i), np.delete(b, i))
                         for i in range(200)])
        ci = calipers.bootstrap_interval(res.bootstrap_distribution, float(res.difference),
                                         method="bca", jackknife=jack)
    else:
        ci = calipers.bootstrap_interval(res.bootstrap_distribution, float(res.difference),
                                         method=method)
    np.testing.assert_allclose([ci.low, ci.high], [res.confidence_interval.low,
                                                   res.confidence_interval.high], rtol=1e-12)


def test_nan_replicates_are_left_out_and_other_backends_are_accepted():
    d = np.random.default_rng(0).normal(size=500)
    with_nan = np.concatenate([d[:250], [np.nan] * 7, d[250:]])
    ref = calipers.bootstrap_interval(d, 0.0)
    assert calipers.bootstrap_interval(with_nan, 0.0) == ref
    assert calipers.bootstrap_interval(list(with_nan), 0.0) == ref
    jnp = pytest.importorskip("jax.numpy")
    got = calipers.bootstrap_interval(jnp.asarray(d), jnp.asarray(0.0))
    np.testing.assert_allclose([got.low, got.high], [ref.low, ref.high], rtol=1e-6)


def test_one_sided_ends_and_undefined_cases():
    d = np.arange(100.0)
    lo = calipers.bootstrap_interval(d, 50.0, alternative="less")
    assert lo.low == -math.inf and lo.high == pytest.approx(np.quantile(d, 0.95))
    hi = calipers.bootstrap_interval(d, 50.0, alternative="greater")
    assert hi.high == math.inf and hi.low == pytest.approx(np.quantile(d, 0.05))
    nan = calipers.bootstrap_interval(np.full(5, np.nan), 0.0)
    assert math.isnan(nan.low) and math.isnan(nan.high)
    with pytest.warns(calipers.UndefinedMetricWarning, match="BCa"):
        ci = calipers.bootstrap_interval(np.zeros(50), 0.0, method="bca",
                                         jackknife=np.zeros(10))
    assert math.isnan(ci.low) and math.isnan(ci.high)


@pytest.mark.parametrize("kwargs, match", [
    (dict(replicates=np.ones((3, 2))), "replicates must be a 1-D array of real numbers"),
    (dict(replicates=np.array(["a", "b"])), "replicates must be a 1-D array of real numbers"),
    (dict(replicates=np.array([1.0, np.inf])), "replicates must not hold an infinite value"),
    (dict(estimate="x"), "estimate must be a real number"),
    (dict(estimate=True), "estimate must be a real number"),
    (dict(estimate=math.inf), "estimate must be finite or NaN"),
    (dict(method="bca"), "jackknife must be given with method='bca'"),
    (dict(method="BCa"), "jackknife must be given with method='bca'"),   # case-insensitive
    (dict(method="bcaa"), "method must be one of"),
    (dict(alternative="both"), "alternative must be one of"),
    (dict(confidence_level=95), "confidence_level must be a real number in"),
    (dict(method="bca", jackknife=np.ones((2, 2))), "jackknife must be a 1-D array"),
])
def test_invalid_input_raises_naming_the_argument(kwargs, match):
    args = dict(replicates=np.arange(10.0), estimate=1.0)
    args.update(kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=match):
            calipers.bootstrap_interval(args.pop("replicates"), args.pop("estimate"), **args)


def test_H38_constant_jackknife_is_nan_with_a_warning_as_scipy():
    # the median of data with a repeated middle value: every deletion leaves the median at 2,
    # so BCa's acceleration is 0/0; scipy gives NaN and a DegenerateDataWarning
    case = load_case("H38")
    x = np.asarray(case["inputs"]["data"])
    jack = np.array([np.median(np.delete(x, i)) for i in range(x.size)])
    assert jack.tolist() == case["inputs"]["jackknife"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ref = stats.bootstrap((x,), np.median, method="BCa", n_resamples=999, rng=0)
    assert any("BCa" in str(w.message) for w in caught)
    assert np.isnan(ref.confidence_interval.low) and np.isnan(ref.confidence_interval.high)
    assert case["expected"]["scipy_bca"] == [None, None]
    with pytest.warns(calipers.UndefinedMetricWarning, match="acceleration is 0/0"):
        ci = calipers.bootstrap_interval(ref.bootstrap_distribution, float(np.median(x)),
                                         method="bca", jackknife=jack)
    assert math.isnan(ci.low) and math.isnan(ci.high)
    # the percentile interval of the same replicates stays defined, equal to scipy's
    pct = calipers.bootstrap_interval(ref.bootstrap_distribution, float(np.median(x)))
    want = stats.bootstrap((x,), np.median, method="percentile", n_resamples=999, rng=0)
    assert [pct.low, pct.high] == [want.confidence_interval.low, want.confidence_interval.high]


def test_H39_bfloat16_replicates_are_read_exactly():
    import ml_dtypes
    d = np.random.default_rng(2).normal(size=200).astype(ml_dtypes.bfloat16)
    want = calipers.bootstrap_interval(d.astype(np.float64), 0.0, method="basic")
    assert calipers.bootstrap_interval(d, 0.0, method="basic") == want
