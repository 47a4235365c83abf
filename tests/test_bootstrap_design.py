"""Degenerate bootstrap designs warn instead of printing a confident interval;
BCa with every replicate equal is NaN (as scipy), percentile is a point with a warning."""

import warnings

import numpy as np
import pytest

import calipers


def _warned(fn):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn()
    return out, [w for w in rec if issubclass(w.category, calipers.BootstrapDesignWarning)]


def test_four_rows_warn_about_units():
    y = np.array([0, 1, 0, 1])
    _, w = _warned(lambda: calipers.paired_bootstrap(
        calipers.roc_auc_score, y, [.1, .9, .2, .8], [.3, .7, .4, .6], n_resamples=200, seed=0,
        stratify=True))
    assert w and "4 resampling rows" in str(w[0].message)
    assert "2 rows of the minority class" in str(w[0].message)
    assert w[0].filename == __file__   # points at the caller


def test_three_clusters_warn():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 60)
    y[:2] = [0, 1]
    a, b = rng.random(60), rng.random(60)
    _, w = _warned(lambda: calipers.paired_bootstrap(
        calipers.roc_auc_score, y, a, b, n_resamples=200, seed=0, groups=np.arange(60) % 3))
    assert w and "3 resampling clusters" in str(w[0].message)


@pytest.mark.parametrize("n, L, warned", [(100, 50, 2), (20, 10, 2), (20, 15, 1),
                                           (100, 11, 9), (100, 10, None)])
def test_few_blocks_warn(n, L, warned):
    """Moving blocks: the units are the n // L disjoint blocks a resample is made of (two
    blocks of 50 rows warn, though 51 starts exist)."""
    rng = np.random.default_rng(3)
    y = np.r_[0, 1, rng.integers(0, 2, n - 2)]
    a, b = rng.random(n) + y, rng.random(n)
    _, w = _warned(lambda: calipers.paired_bootstrap(
        calipers.roc_auc_score, y, a, b, n_resamples=200, seed=0, block_length=L))
    msgs = [str(x.message) for x in w]
    if warned is None:
        assert not any("resampling blocks" in m for m in msgs)
    else:
        assert any(f"{warned} resampling blocks" in m for m in msgs)


def test_enough_data_does_not_warn():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 200)
    a, b = rng.random(200) + y, rng.random(200) + 0.5 * y
    _, w = _warned(lambda: calipers.paired_bootstrap(
        calipers.roc_auc_score, y, a, b, n_resamples=300, seed=0))
    assert not w


def test_identical_models_percentile_point_with_warning_bca_nan():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 100)
    a = rng.random(100)
    res, w = _warned(lambda: calipers.paired_bootstrap(
        calipers.roc_auc_score, y, a, a.copy(), n_resamples=200, seed=0))
    assert (res.confidence_interval.low, res.confidence_interval.high) == (0.0, 0.0)
    assert w and "1 distinct replicated differences" in str(w[0].message)
    with pytest.warns(calipers.UndefinedMetricWarning, match="BCa interval is undefined"), \
            pytest.warns(calipers.BootstrapDesignWarning):
        res = calipers.paired_bootstrap(calipers.roc_auc_score, y, a, a.copy(), n_resamples=200,
                                        seed=0, method="bca")
    assert np.isnan(res.confidence_interval.low) and np.isnan(res.confidence_interval.high)
