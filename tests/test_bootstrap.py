"""Paired bootstrap engine (calipers._bootstrap.paired): counts, designs, intervals, backends."""

from __future__ import annotations

import functools
import math
import warnings
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import calipers
from calipers._core import xp as B
from calipers._bootstrap import paired as BS
from calipers._bootstrap import resample as RS
from calipers import paired_bootstrap, paired_bootstrap_replicates
from conftest import to_np

UMW = calipers.UndefinedMetricWarning


def _data(seed=0, n=40, ties=True, pos=None):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n) if pos is None else (np.arange(n) < pos).astype(np.int64)
    y[:2] = [0, 1] if pos is None else y[:2]
    a = rng.normal(y * 1.0)
    b = 0.6 * a + rng.normal(size=n)
    if ties:
        a, b = np.round(a, 1), np.round(b, 1)
    return y, a, b


def _sig(x):
    return 1 / (1 + np.exp(-x))


# --------------------------------------------------------------------------
# the counts behind each replicate, read from the engine's own draws
# --------------------------------------------------------------------------

def _row_counts(metric, y, a, b, *, backend_name, n_resamples, seed, sample_weight=None,
                resample_by="auto", stratify=False, groups=None, block_length=None,
                resampling="multinomial"):
    """Counts per original row of every replicate, as the engine draws them."""
    m, kind, name = BS._resolve_metric(metric, resample_by)
    xp, y_, a_, b_, sw, g = BS._prepare_arrays(y, a, b, sample_weight, groups, kind)
    s = BS._setup(m, kind, name, xp, y_, a_, b_, sw, stratify=stratify, groups=g,
                  num_groups=None, block_length=block_length,
                  poisson=resampling == "poisson", traced=False)
    n = s.n
    out = np.empty((n_resamples, n), dtype=np.int64)
    arrays, layout = s.design_data
    lay = np.arange(n) if layout is None else np.asarray(B.to_numpy(layout))
    if backend_name.startswith("jax"):
        import jax.numpy as jnp

        idt = B.acc_int(xp)
        draw = BS._compiled_draw(s.design, jnp.dtype(idt).name)
        words = jnp.asarray(BS.seed_words(seed))
        draws = [np.asarray(draw(jnp.asarray(i, dtype=jnp.uint32), words, s.design_data))
                 for i in range(n_resamples)]
    else:
        words = BS.seed_words(seed)     # replicate r: a function of (seed, r, row) only
        draws = [BS.draw_counts(s.design, s.design_data, words, r, np, np.int64)
                 for r in range(n_resamples)]
    for r, c in enumerate(draws):
        out[r, lay] = c
    return out


@pytest.mark.parametrize("small_max", [255, 1])
def test_multinomial_small_counts_equal_wide_counts(monkeypatch, small_max):
    """The NumPy multinomial drawer's uint8 counts (all counts below 256) are the
    caller's int64 counts gathered into the layout; a replicate with a larger count
    comes back as int64 (forced here by lowering the uint8 limit to 1)."""
    monkeypatch.setattr(RS, "_SMALL_MAX", small_max)
    y, a, b = _data(4, n=3000)
    xp, y_, a_, b_, sw, g = BS._prepare_arrays(y, a, b, None, None)
    m, kind, name = BS._resolve_metric("roc_auc", "auto")
    s = BS._setup(m, kind, name, xp, y_, a_, b_, sw, stratify=False, groups=None,
                  num_groups=None, block_length=None, poisson=False, traced=False)
    arrays, layout = s.design_data
    lay = np.asarray(layout)
    words = BS.seed_words(5)
    d8 = BS.numpy_drawer(s.design, s.design_data, words, True)
    for r in range(10):
        ref = BS.row_counts(s.design, arrays, words, r, np, np.int64)[lay]
        c = d8(r)
        assert c.dtype == (np.uint8 if ref.max() <= small_max else np.int64)
        np.testing.assert_array_equal(c, ref)
        va, vb, vd = BS.evaluate_pair(s.kernel_a, s.state_a, s.kernel_b, s.state_b, c, np)
        wa, wb, wd = BS.evaluate_pair(s.kernel_a, s.state_a, s.kernel_b, s.state_b, ref, np)
        assert (va, vb, vd) == (wa, wb, wd)


def test_poisson_counts_in_layout_order_equal_caller_counts_gathered():
    """Plain Poisson counts hashed at layout positions (no gather) are the caller's
    counts gathered into the layout, on the NumPy in-place drawer (int64 and uint8)
    and on JAX, for every replicate."""
    y, a, b = _data(9, n=2000)
    xp, y_, a_, b_, sw, g = BS._prepare_arrays(y, a, b, None, None)
    m, kind, name = BS._resolve_metric("roc_auc", "auto")
    s = BS._setup(m, kind, name, xp, y_, a_, b_, sw, stratify=False, groups=None,
                  num_groups=None, block_length=None, poisson=True, traced=False)
    arrays, layout = s.design_data
    assert layout is not None
    lay = np.asarray(layout)
    words = BS.seed_words(17)
    d64 = BS.numpy_drawer(s.design, s.design_data, words)
    d8 = BS.numpy_drawer(s.design, s.design_data, words, True)
    for r in range(25):
        ref = BS.row_counts(s.design, arrays, words, r, np, np.int64)[lay]
        assert ref.max() >= 4     # the tail past the four comparisons is exercised
        np.testing.assert_array_equal(d64(r), ref)
        c8 = d8(r)
        assert c8.dtype == np.uint8
        np.testing.assert_array_equal(c8, ref)
        np.testing.assert_array_equal(BS.draw_counts(s.design, s.design_data, words, r, np,
                                                     np.int64), ref)
    jnp = pytest.importorskip("jax.numpy")
    dd = (arrays, jnp.asarray(lay))
    for r in range(5):
        ref = BS.row_counts(s.design, arrays, words, r, np, np.int64)[lay]
        got = BS.draw_counts(s.design, dd, jnp.asarray(words), jnp.asarray(r, dtype=jnp.uint32),
                             jnp, jnp.int32)
        np.testing.assert_array_equal(np.asarray(got), ref)


def _index_reference(metric, y, a, b, counts, sample_weight=None):
    """metric(A) and metric(B) on explicitly resampled rows (NumPy, float64)."""
    ra, rb = [], []
    for c in counts:
        idx = np.repeat(np.arange(c.shape[0]), c)
        kw = {} if sample_weight is None else {"sample_weight": sample_weight[idx]}
        ra.append(float(metric(y[idx], a[idx], **kw)))
        rb.append(float(metric(y[idx], b[idx], **kw)))
    return np.array(ra), np.array(rb)


@pytest.mark.parametrize("design", [dict(), dict(stratify=True)])
def test_auc_replicates_equal_index_resampling_exactly_numpy(design):
    y, a, b = _data(1, n=30)
    R = 40
    da, db = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=R, seed=3, **design)
    counts = _row_counts("roc_auc", y, a, b, backend_name="numpy", n_resamples=R, seed=3,
                         **design)
    assert np.all(counts.sum(axis=1) == 30)
    ra, rb = _index_reference(calipers.roc_auc_score, y, a, b, counts)
    # exactly: integer counts, the same Mann-Whitney numerator
    np.testing.assert_array_equal(da, ra)
    np.testing.assert_array_equal(db, rb)


@pytest.mark.parametrize("metric, design, weighted", [
    ("average_precision", dict(), False),
    ("average_precision", dict(groups=np.arange(30) // 3), True),
    ("log_loss", dict(block_length=4), False),
    ("brier", dict(resampling="poisson"), True),
    ("roc_auc", dict(groups=np.arange(30) % 7, resampling="poisson"), True),
    ("roc_auc", dict(resampling="poisson"), False),
    ("roc_auc", dict(resampling="poisson"), True),
])
def test_kernels_equal_index_resampling_numpy(metric, design, weighted):
    y, a, b = _data(2, n=30)
    if metric in ("log_loss", "brier"):
        a, b = _sig(a), _sig(b)
    w = np.random.default_rng(0).integers(1, 4, 30).astype(float) if weighted else None
    R = 30
    da, db = paired_bootstrap_replicates(metric, y, a, b, n_resamples=R, seed=5,
                                         sample_weight=w, **design)
    counts = _row_counts(metric, y, a, b, backend_name="numpy", n_resamples=R, seed=5,
                         sample_weight=w, **design)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UMW)
        ra, rb = _index_reference(BS._NAMES[metric], y, a, b, counts, w)
    np.testing.assert_allclose(da, ra, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(db, rb, rtol=1e-12, equal_nan=True)


def test_replicates_all_backends_equal_index_resampling(backend):
    """Each backend's replicates equal index resampling with that backend's own counts."""
    y, a, b = _data(4, n=24)
    R = 16
    got = backend.call(lambda yy, aa, bb: paired_bootstrap_replicates(
        "roc_auc", yy, aa, bb, n_resamples=R, seed=11, stratify=True, batch=8), y, a, b)
    da, db = to_np(got)
    yb, ab, bb = (backend.asarray(v) for v in (y, a, b))
    counts = _row_counts("roc_auc", yb, ab, bb, backend_name=backend.name,
                         n_resamples=R, seed=11, stratify=True)
    # stratified: every replicate keeps the class sizes (so never lacks a class)
    assert np.all(counts[:, y == 1].sum(axis=1) == np.sum(y == 1))
    assert np.all(counts[:, y == 0].sum(axis=1) == np.sum(y == 0))
    ra, rb = _index_reference(calipers.roc_auc_score, y, np.asarray(to_np(ab)),
                              np.asarray(to_np(bb)), counts)
    np.testing.assert_allclose(da, ra, rtol=backend.rtol())
    np.testing.assert_allclose(db, rb, rtol=backend.rtol())


def test_jax_jit_equals_eager_and_batch_does_not_matter():
    import jax
    import jax.numpy as jnp

    y, a, b = (jnp.asarray(v) for v in _data(5, n=32))
    ref = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=20, seed=2, batch=20)
    other = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=20, seed=2, batch=3)
    np.testing.assert_array_equal(np.asarray(ref[0]), np.asarray(other[0]))
    jitted = jax.jit(lambda yy, aa, bb: paired_bootstrap_replicates(
        "roc_auc", yy, aa, bb, n_resamples=20, seed=2, batch=6))(y, a, b)
    np.testing.assert_allclose(np.asarray(jitted[0]), np.asarray(ref[0]), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(jitted[1]), np.asarray(ref[1]), rtol=1e-13)


def test_invalid_input_under_jit_gives_nan():
    import jax
    import jax.numpy as jnp

    y, a, b = _data(5, n=32)
    y = y.copy()
    y[3] = 2                                     # label outside {0, 1}
    f = jax.jit(lambda yy, aa, bb: paired_bootstrap_replicates(
        "roc_auc", yy, aa, bb, n_resamples=20, seed=2, batch=6))
    ra, rb = f(jnp.asarray(y), jnp.asarray(a), jnp.asarray(b))
    assert np.all(np.isnan(np.asarray(ra))) and np.all(np.isnan(np.asarray(rb)))
    with pytest.raises(ValueError, match="y_true must contain only 0 and 1"):
        paired_bootstrap_replicates("roc_auc", jnp.asarray(y), jnp.asarray(a), jnp.asarray(b),
                                    n_resamples=5)


def test_jax_user_traceable_weighted_metric_and_python_fallback():
    import jax.numpy as jnp

    y, a, b = _data(6, n=20)

    def wmean(y_true, s, sample_weight):
        w = sample_weight.astype(s.dtype)
        return jnp.sum(w * s * y_true) / jnp.sum(w)

    R = 12
    yj, aj, bj = (jnp.asarray(v) for v in (y, a, b))
    da, db = paired_bootstrap_replicates(wmean, yj, aj, bj, n_resamples=R, seed=1)
    counts = _row_counts(wmean, yj, aj, bj, backend_name="jax", n_resamples=R, seed=1)
    ra, rb = _index_reference(lambda yy, s: float(np.mean(s * yy)), y, a, b, counts)
    np.testing.assert_allclose(np.asarray(da), ra, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(db), rb, rtol=1e-12)

    # a Python-only metric (float() of its input) falls back to eager evaluation
    def py_metric(y_true, s, sample_weight):
        return float(np.average(np.asarray(s), weights=np.asarray(sample_weight)))

    pa, _ = paired_bootstrap_replicates(py_metric, yj, aj, bj, n_resamples=R, seed=1)
    ra2, _ = _index_reference(lambda yy, s: float(np.mean(s)), y, a, b, counts)
    np.testing.assert_allclose(np.asarray(pa), ra2, rtol=1e-12)


def test_numpy_workers_and_seed_streams_do_not_change_replicates():
    y, a, b = _data(16, n=50)
    one = paired_bootstrap("roc_auc", y, a, b, n_resamples=150, seed=9)   # default workers
    for w in (1, 2, 3):
        other_w = paired_bootstrap("roc_auc", y, a, b, n_resamples=150, seed=9, workers=w)
        np.testing.assert_array_equal(one.bootstrap_distribution, other_w.bootstrap_distribution)
    # replicate r depends only on (seed, r): the first 100 of 150 are the 100 of a shorter run
    short = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=100, seed=9)
    np.testing.assert_array_equal(short[0], one.distribution_a[:100])
    other = paired_bootstrap("roc_auc", y, a, b, n_resamples=150, seed=10)
    assert not np.array_equal(other.bootstrap_distribution, one.bootstrap_distribution)
    ss = paired_bootstrap("roc_auc", y, a, b, n_resamples=20,
                          seed=np.random.SeedSequence(9))
    np.testing.assert_array_equal(ss.bootstrap_distribution, one.bootstrap_distribution[:20])


def test_arbitrary_python_metric_uses_index_resampling():
    from sklearn.metrics import roc_auc_score as sk_auc

    y, a, b = _data(7, n=30)

    def metric(y_true, s):        # no sample_weight: rows are resampled
        return sk_auc(y_true, s)

    R = 10
    da, db = paired_bootstrap_replicates(metric, y, a, b, n_resamples=R, seed=4, stratify=True)
    counts = _row_counts(metric, y, a, b, backend_name="numpy", n_resamples=R, seed=4,
                         stratify=True)
    ra, rb = _index_reference(sk_auc, y, a, b, counts)
    np.testing.assert_allclose(da, ra, rtol=1e-12)
    np.testing.assert_allclose(db, rb, rtol=1e-12)


# --------------------------------------------------------------------------
# designs
# --------------------------------------------------------------------------

def test_stratified_replicates_never_lack_a_class():
    y, a, b = _data(8, n=40, pos=2)         # 2 positives out of 40
    r = paired_bootstrap("roc_auc", y, a, b, n_resamples=300, seed=0, stratify=True)
    assert r.n_undefined == 0 and np.all(np.isfinite(r.bootstrap_distribution))
    counts = _row_counts("roc_auc", y, a, b, backend_name="numpy", n_resamples=300, seed=0,
                         stratify=True)
    assert np.all(counts[:, y == 1].sum(axis=1) == 2)
    assert np.all(counts[:, y == 0].sum(axis=1) == 38)
    # plain resampling of the same data loses the positives in some replicates
    with pytest.warns(UMW, match="replicates are undefined"):
        p = paired_bootstrap("roc_auc", y, a, b, n_resamples=300, seed=0)
    assert 0 < p.n_undefined < 300
    assert np.isnan(p.bootstrap_distribution).sum() == p.n_undefined
    ok = np.isfinite(p.bootstrap_distribution)
    assert p.confidence_interval.low == pytest.approx(
        np.quantile(p.bootstrap_distribution[ok], 0.025))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 1000), st.integers(1, 9), st.integers(8, 40))
def test_cluster_and_block_counts_property(seed, L, n):
    y, a, b = _data(seed, n=n)
    groups = np.random.default_rng(seed).integers(0, 5, n)
    c = _row_counts("roc_auc", y, a, b, backend_name="numpy", n_resamples=5, seed=seed,
                    groups=groups)
    for g in np.unique(groups):            # whole clusters: one count per cluster
        assert np.all(c[:, groups == g] == c[:, groups == g][:, :1])
    n_g = np.array([np.sum(groups == g) for g in np.unique(groups)])
    per_cluster = np.stack([c[:, groups == g][:, 0] for g in np.unique(groups)], axis=1)
    assert np.all(per_cluster.sum(axis=1) == len(n_g))   # G clusters drawn
    L = min(L, n)
    cb = _row_counts("log_loss", y, _sig(a), _sig(b), backend_name="numpy", n_resamples=5,
                     seed=seed, block_length=L)
    assert np.all(cb.sum(axis=1) == n)
    # a moving block covers consecutive rows: counts change by at most the
    # number of block edges, and the first row is only covered by blocks starting at 0
    assert np.all(np.abs(np.diff(cb, axis=1)) <= -(-n // L))


def test_poisson_counts_mean_and_variance_one():
    # 5 replicates x 4000 rows: sd of the mean 0.007, of the variance 0.012
    y, a, b = _data(9, n=4000)
    c = _row_counts("roc_auc", y, a, b, backend_name="numpy", n_resamples=5, seed=0,
                    resampling="poisson")
    assert abs(c.mean() - 1) < 0.03 and abs(c.var() - 1) < 0.05
    import jax.numpy as jnp
    cj = _row_counts("roc_auc", jnp.asarray(y), jnp.asarray(a), jnp.asarray(b),
                     backend_name="jax", n_resamples=5, seed=0, resampling="poisson")
    assert abs(cj.mean() - 1) < 0.03 and abs(cj.var() - 1) < 0.05
    assert abs(np.mean(cj == 0) - math.exp(-1)) < 0.015
    assert abs(np.mean(cj == 2) - math.exp(-1) / 2) < 0.015
    assert not np.array_equal(cj[0], cj[1])


# --------------------------------------------------------------------------
# intervals against scipy.stats.bootstrap on the same replicates
# --------------------------------------------------------------------------

def _scipy_ci(stat, data, dist, method, level=0.95, alternative="two-sided"):
    res = stats.bootstrap(data, stat, paired=True, vectorized=False, n_resamples=0,
                          bootstrap_result=SimpleNamespace(bootstrap_distribution=dist),
                          method=method, confidence_level=level, alternative=alternative)
    return res.confidence_interval


def _exact_auc_fraction(y, s):
    from fractions import Fraction

    y, s = np.asarray(y), np.asarray(s)
    pos, neg = s[y == 1], s[y == 0]
    num = int(np.sum(pos[:, None] > neg[None, :])) * 2 + int(np.sum(pos[:, None] == neg[None, :]))
    return Fraction(num, 2 * pos.size * neg.size)


@pytest.mark.parametrize("metric, method, alternative", [
    ("roc_auc", "percentile", "two-sided"),
    ("roc_auc", "basic", "less"),
    ("roc_auc", "BCa", "two-sided"),
    ("average_precision", "BCa", "greater"),
    ("log_loss", "BCa", "two-sided"),
    ("brier", "BCa", "two-sided"),
])
def test_intervals_agree_with_scipy_on_same_replicates(metric, method, alternative):
    y, a, b = _data(10, n=50)
    if metric in ("log_loss", "brier"):
        a, b = _sig(a), _sig(b)
    f = BS._NAMES[metric]
    r = paired_bootstrap(metric, y, a, b, n_resamples=400, seed=1, method=method,
                         stratify=True, confidence_level=0.9, alternative=alternative)
    assert r.n_undefined == 0

    def diff(yy, aa, bb):
        if metric == "roc_auc":   # the AUC difference is one division of exact integers
            return float(_exact_auc_fraction(yy, aa) - _exact_auc_fraction(yy, bb))
        return float(f(yy, aa)) - float(f(yy, bb))

    ci = _scipy_ci(diff, (y, a, b), r.bootstrap_distribution, method, 0.9, alternative)
    np.testing.assert_allclose([r.confidence_interval.low, r.confidence_interval.high],
                               [ci.low, ci.high], rtol=1e-10)
    ci_a = _scipy_ci(lambda yy, aa: float(f(yy, aa)), (y, a), r.distribution_a, method, 0.9,
                     alternative)
    np.testing.assert_allclose([r.interval_a.low, r.interval_a.high], [ci_a.low, ci_a.high],
                               rtol=1e-10)


def test_bca_weighted_user_metric_grouped_jackknife_is_loo_when_small():
    # n <= jackknife_groups: the grouped jackknife is the leave-one-out one scipy uses
    y, a, b = _data(11, n=30)
    metric = functools.partial(calipers.roc_auc_score)     # not a fast kernel: weight path
    r = paired_bootstrap(metric, y, a, b, n_resamples=300, seed=2, method="bca",
                         stratify=True)

    def diff(yy, aa, bb):
        return float(calipers.roc_auc_score(yy, aa)) - float(calipers.roc_auc_score(yy, bb))

    ci = _scipy_ci(diff, (y, a, b), r.bootstrap_distribution, "BCa")
    np.testing.assert_allclose([r.confidence_interval.low, r.confidence_interval.high],
                               [ci.low, ci.high], rtol=1e-10)


def test_auc_and_ap_leave_one_out_values_exact():
    y, a, b = _data(12, n=25)
    for name, f in (("roc_auc", calipers.roc_auc_score),
                    ("average_precision", calipers.average_precision_score)):
        xp, y_, a_, b_, sw, g = BS._prepare_arrays(y, a, b, None, None)
        m, kind, nm = BS._resolve_metric(name, "auto")
        s = BS._setup(m, kind, nm, np, y_, a_, b_, None, stratify=False, groups=None,
                      num_groups=None, block_length=None, poisson=False, traced=False)
        la, lb = BS._jackknife(s, 100)
        layout = np.arange(25) if s.layout is None else np.asarray(s.layout)
        keep = np.ones(25, bool)
        for j in range(25):
            row = layout[j]
            keep[:] = True
            keep[row] = False
            assert la[j] == pytest.approx(float(f(y[keep], a[keep])), rel=1e-12)
            assert lb[j] == pytest.approx(float(f(y[keep], b[keep])), rel=1e-12)


def test_result_fields_pvalue_share_and_progress():
    y, a, b = _data(13, n=60)
    seen = []
    r = paired_bootstrap(calipers.roc_auc_score, y, a, b, n_resamples=130, seed=0,
                         stratify=True, progress=seen.append)
    assert sum(seen) == 130
    d = r.bootstrap_distribution
    assert r.prob_a_greater == pytest.approx(np.mean(r.distribution_a > r.distribution_b))
    assert r.pvalue == pytest.approx(min(1, 2 * min(np.mean(d <= 0), np.mean(d >= 0))))
    assert r.standard_error == pytest.approx(np.std(d, ddof=1))
    assert r.difference == pytest.approx(
        calipers.roc_auc_score(y, a) - calipers.roc_auc_score(y, b))
    assert r.design == "stratified rows" and r.resampling == "multinomial"
    g = paired_bootstrap("roc_auc", y, a, b, n_resamples=130, seed=0, stratify=True,
                         alternative="greater")
    assert g.confidence_interval.high == math.inf
    assert g.pvalue == pytest.approx(np.mean(d <= 0))


def test_all_replicates_undefined_gives_nan():
    y = np.array([1, 0, 0, 0, 0, 0])
    a = np.arange(6.0)
    with pytest.warns(UMW):
        r = paired_bootstrap("average_precision", y, a, a[::-1], n_resamples=20, seed=0,
                             groups=np.array([0, 1, 1, 1, 1, 1]))
    assert r.n_undefined > 0
    with pytest.warns(UMW):
        z = paired_bootstrap("roc_auc", np.zeros(5, int), a[:5], a[:5], n_resamples=5, seed=0)
    assert z.n_undefined == 5 and math.isnan(z.confidence_interval.low)


# --------------------------------------------------------------------------
# coverage of a known difference (small simulation)
# --------------------------------------------------------------------------

def test_coverage_of_known_auc_difference_near_nominal():
    """100 data sets, n = 200, B = 300, percentile 95%: the true difference of
    binormal AUCs Phi(1.2/sqrt 2) - Phi(0.6/sqrt 2) is covered in 88% .. 99%
    of trials (nominal 95%, sd of the share about 2.2%)."""
    true = stats.norm.cdf(1.2 / math.sqrt(2)) - stats.norm.cdf(0.6 / math.sqrt(2))
    rng = np.random.default_rng(123)
    hits, trials = 0, 100
    for t in range(trials):
        y = (np.arange(200) < 100).astype(int)
        z = rng.normal(size=200)
        a = 1.2 * y + 0.6 * z + 0.8 * rng.normal(size=200)
        b = 0.6 * y + 0.6 * z + 0.8 * rng.normal(size=200)
        r = paired_bootstrap("roc_auc", y, a, b, n_resamples=300, seed=t, stratify=True)
        hits += r.confidence_interval.low <= true <= r.confidence_interval.high
    assert 0.88 <= hits / trials <= 0.99


# --------------------------------------------------------------------------
# sharding across devices (subprocess: the device count is fixed at jax import)
# --------------------------------------------------------------------------

def test_sharded_replicates_identical_to_one_device():
    code = textwrap.dedent("""
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
        os.environ["JAX_PLATFORMS"] = "cpu"
        import jax, numpy as np
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        import calipers
        assert len(jax.devices()) == 4
        rng = np.random.default_rng(0)
        y = rng.integers(0, 2, 64); a = rng.normal(y * 1.0); b = rng.normal(size=64)
        y, a, b = jnp.asarray(y), jnp.asarray(a), jnp.asarray(b)
        one = calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=50, seed=7, batch=10)
        four = calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=50, seed=7, batch=10,
                                         devices="all")
        assert np.array_equal(one.distribution_a, four.distribution_a)
        assert np.array_equal(one.distribution_b, four.distribution_b)
        print("OK", one.confidence_interval)
    """)
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "OK" in out.stdout


# --------------------------------------------------------------------------
# errors: one message per bad argument
# --------------------------------------------------------------------------

Y, A, Bs = [0, 1, 0, 1, 1], [0.1, 0.4, 0.35, 0.8, 0.2], [0.2, 0.3, 0.5, 0.6, 0.1]


@pytest.mark.parametrize("kwargs, msg", [
    (dict(n_resamples=0), "n_resamples must be an integer >= 1"),
    (dict(n_resamples=2.5), "n_resamples must be an integer >= 1"),
    (dict(batch=0), "batch must be a positive integer"),
    (dict(confidence_level=1.0), "confidence_level must be a real number in"),
    (dict(method="studentized"), "method must be"),
    (dict(alternative="bigger"), "alternative must be"),
    (dict(resampling="bayesian"), "resampling must be"),
    (dict(stratify=True, groups=[0, 0, 1, 1, 2]), "choose one resampling design"),
    (dict(block_length=0), "block_length must be a positive integer"),
    (dict(block_length=9), "block_length=9 is larger"),
    (dict(stratify=True, resampling="poisson"), "resampling='poisson'"),
    (dict(groups=[0, 1]), "groups has 2 elements"),
    (dict(jackknife_groups=1), "jackknife_groups"),
    (dict(resample_by="rows"), "resample_by must be"),
    (dict(devices=2), "devices applies to JAX arrays only"),
    (dict(workers=0), "workers must be None or a positive integer"),
    (dict(seed=-3), "seed must be None, a non-negative int"),
    (dict(seed="abc"), "seed must be None, a non-negative int"),
])
def test_paired_bootstrap_option_errors(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        paired_bootstrap("roc_auc", Y, A, Bs, **kwargs)


def test_paired_bootstrap_input_errors():
    with pytest.raises(ValueError, match="metric must be a callable or one of"):
        paired_bootstrap("auc", Y, A, Bs)
    with pytest.raises(ValueError, match="y_score_b has 4 elements"):
        paired_bootstrap("roc_auc", Y, A, Bs[:4])
    with pytest.raises(ValueError, match=r"^y_true must contain only 0 and 1 \(or -1 and 1, or "
                                         r"booleans\); it has 3 classes \[0, 1, 2\]"):
        paired_bootstrap("roc_auc", [0, 2, 1, 1, 0], A, Bs)     # (no pos_label to offer)
    with pytest.raises(ValueError, match="it mixes -1 and 0"):
        paired_bootstrap("roc_auc", [0, -1, -1, 0, 0], A, Bs)
    with pytest.raises(ValueError, match="sample_weight needs a metric that accepts"):
        paired_bootstrap(lambda y, s: 0.0, Y, A, Bs, sample_weight=[1.0] * 5)
    with pytest.raises(ValueError, match=r"^y_true must be finite \(no NaN or inf\); element 1 is "
                                         r"nan"):
        paired_bootstrap("roc_auc", [0.0, np.nan, 1.0, 1.0, 0.0], A, Bs)


@pytest.mark.parametrize("fn", [paired_bootstrap, paired_bootstrap_replicates])
@pytest.mark.parametrize("metric, bad, rule", [
    ("roc_auc", [0.1, np.nan, 0.3, 0.4, 0.5], "must be finite"),
    ("average_precision", [0.1, 0.2, np.inf, 0.4, 0.5], "must be finite"),
    ("log_loss", [0.1, 1.4, 0.3, 0.4, 0.5], "must be probabilities in \\[0, 1\\]"),
    ("brier", [0.1, 0.2, 0.3, -0.4, 0.5], "must be probabilities in \\[0, 1\\]"),
])
def test_bad_scores_name_the_model(fn, metric, bad, rule):
    """The error names which model's scores broke the rule (y_score_a or y_score_b), not
    the metric's own argument name."""
    good = [0.2, 0.3, 0.6, 0.7, 0.1]
    with pytest.raises(ValueError, match="^y_score_a " + rule):
        fn(metric, Y, bad, good, n_resamples=20)
    with pytest.raises(ValueError, match="^y_score_b " + rule):
        fn(metric, Y, good, bad, n_resamples=20)


def test_workers_rejected_on_jax_with_devices():
    import jax.numpy as jnp

    with pytest.raises(ValueError, match="workers above 1 cannot be combined with devices"):
        paired_bootstrap("roc_auc", jnp.asarray(Y), jnp.asarray(A), jnp.asarray(Bs), workers=2,
                         devices=1)


@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "log_loss"])
def test_jax_cpu_chunks_on_threads_do_not_change_replicates(metric):
    """On one CPU device JAX runs compiled chunks from several threads (timed by default):
    with 30 chunks of 2 the probe runs, and every worker count gives NumPy's replicates;
    progress counts each replicate once."""
    import jax.numpy as jnp

    y, a, b = _data(21, n=60)
    if metric == "log_loss":
        a, b = 1 / (1 + np.exp(-a)), 1 / (1 + np.exp(-b))
    want = paired_bootstrap(metric, y, a, b, n_resamples=60, seed=5)
    runs = {}
    for w in (1, None, 2, 3):
        seen = []
        runs[w] = paired_bootstrap(metric, jnp.asarray(y), jnp.asarray(a), jnp.asarray(b),
                                   n_resamples=60, seed=5, batch=2, workers=w,
                                   progress=seen.append).bootstrap_distribution
        assert sum(seen) == 60
        np.testing.assert_array_equal(runs[w], runs[1])        # threads change nothing
    # NumPy's replicates (AP's float sums may round differently on XLA)
    np.testing.assert_allclose(runs[1], want.bootstrap_distribution, rtol=1e-12, atol=1e-15)


def test_paired_bootstrap_under_jit_points_to_replicates():
    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda y, a, b: paired_bootstrap("roc_auc", y, a, b).difference)
    with pytest.raises(ValueError, match="use paired_bootstrap_replicates"):
        f(jnp.asarray(Y), jnp.asarray(A), jnp.asarray(Bs))


def _setup_for(metric, y, a, b, **design):
    xp, y_, a_, b_, sw, g = BS._prepare_arrays(y, a, b, None, design.pop("groups", None))
    m, kind, name = BS._resolve_metric(metric, "auto")
    return BS._setup(m, kind, name, xp, y_, a_, b_, sw, stratify=False, groups=g,
                     num_groups=None, block_length=design.pop("block_length", None),
                     poisson=False, traced=False)


def test_grouped_jackknife_singleton_clusters_equals_leave_one_out():
    y, a, b = _data(14, n=30)
    s_rows = _setup_for("roc_auc", y, a, b)
    s_clu = _setup_for("roc_auc", y, a, b, groups=np.arange(30)[::-1])
    la, lb = BS._jackknife(s_rows, 100)           # exact LOO from the sorted order
    ga, gb = BS._jackknife(s_clu, 100)            # delete-one-cluster, evaluated
    np.testing.assert_allclose(np.sort(ga), np.sort(la), rtol=1e-12)
    np.testing.assert_allclose(np.sort(gb), np.sort(lb), rtol=1e-12)
    # with fewer groups than clusters: each group deletes clusters g, g+G, ...
    s3 = _setup_for("roc_auc", y, a, b, groups=np.arange(30) // 2)
    ja, _ = BS._jackknife(s3, 5)
    codes = np.arange(30) // 2
    for g in range(5):
        keep = (codes % 5) != g
        assert ja[g] == pytest.approx(float(calipers.roc_auc_score(y[keep], a[keep])), rel=1e-12)


def test_grouped_jackknife_jax_equals_numpy():
    import jax.numpy as jnp

    y, a, b = _data(15, n=30)
    groups = np.arange(30) % 6
    s_np = _setup_for("average_precision", y, a, b, groups=groups)
    s_jx = _setup_for("average_precision", jnp.asarray(y), jnp.asarray(a), jnp.asarray(b),
                      groups=jnp.asarray(groups))
    np.testing.assert_allclose(BS._jackknife(s_jx, 100), BS._jackknife(s_np, 100), rtol=1e-12)


def test_replicates_option_errors():
    with pytest.raises(ValueError, match="metric must be callable or a metric name"):
        paired_bootstrap_replicates(42, Y, A, Bs)
    with pytest.raises(ValueError, match="groups must be 1-D"):
        paired_bootstrap_replicates("roc_auc", Y, A, Bs, groups=np.zeros((5, 2)))
    with pytest.raises(ValueError, match=r"groups must be integer codes in \[0, num_groups=2\)"):
        paired_bootstrap_replicates("roc_auc", Y, A, Bs, groups=[0, 1, 2, 0, 1], num_groups=2)
    # integer codes with num_groups work eagerly too
    da, _ = paired_bootstrap_replicates("roc_auc", Y, A, Bs, groups=[0, 1, 2, 0, 1],
                                        num_groups=3, n_resamples=4, seed=0)
    assert da.shape == (4,)


def test_replicates_jit_rules():
    import jax
    import jax.numpy as jnp

    y, a, b = (jnp.asarray(v) for v in (Y, A, Bs))
    with pytest.raises(ValueError, match="index resampling of an arbitrary Python metric"):
        jax.jit(lambda yy, aa, bb: paired_bootstrap_replicates(
            lambda t, s: 0.0, yy, aa, bb, n_resamples=4))(y, a, b)
    with pytest.raises(ValueError, match="static num_groups"):
        jax.jit(lambda yy, aa, bb, g: paired_bootstrap_replicates(
            "roc_auc", yy, aa, bb, groups=g, n_resamples=4))(y, a, b, jnp.asarray([0, 1, 0, 1, 0]))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 40), st.integers(1, 6),
       st.sampled_from(["plain", "stratify", "poisson", "block"]))
def test_auc_replicates_equal_index_resampling_property(seed, n, levels, design):
    """Random sizes, heavy ties (few score levels), every design: AUC replicates are
    exactly the AUC of the explicitly resampled rows, NaN exactly when undefined."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    a = rng.integers(0, levels, n).astype(float)
    b = rng.integers(0, levels, n).astype(float)
    kw = {"plain": {}, "stratify": {"stratify": True}, "poisson": {"resampling": "poisson"},
          "block": {"block_length": min(3, n)}}[design]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UMW)
        da, db = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=6, seed=seed, **kw)
        counts = _row_counts("roc_auc", y, a, b, backend_name="numpy", n_resamples=6,
                             seed=seed, **kw)
        ra, rb = [], []
        for c in counts:
            idx = np.repeat(np.arange(n), c)
            ok = idx.size and 0 < y[idx].sum() < idx.size
            ra.append(float(calipers.roc_auc_score(y[idx], a[idx])) if ok else np.nan)
            rb.append(float(calipers.roc_auc_score(y[idx], b[idx])) if ok else np.nan)
    np.testing.assert_array_equal(da, ra)
    np.testing.assert_array_equal(db, rb)


def test_stratified_multiclass_user_metric_keeps_class_sizes():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 45)
    pa, pb = rng.integers(0, 3, 45), rng.integers(0, 3, 45)

    def accuracy(y_true, y_pred, sample_weight):
        w = np.asarray(sample_weight, dtype=float)
        return float(np.sum(w * (np.asarray(y_true) == np.asarray(y_pred))) / np.sum(w))

    r = paired_bootstrap(accuracy, y, pa, pb, n_resamples=50, seed=1, stratify=True)
    assert r.difference == pytest.approx(np.mean(y == pa) - np.mean(y == pb))
    counts = _row_counts(accuracy, y, pa, pb, backend_name="numpy", n_resamples=50, seed=1,
                         stratify=True)
    for k in range(3):
        assert np.all(counts[:, y == k].sum(axis=1) == np.sum(y == k))
    ra, rb = _index_reference(lambda t, p: np.mean(t == p), y, pa, pb, counts)
    np.testing.assert_allclose(r.distribution_a, ra, rtol=1e-12)
    np.testing.assert_allclose(r.distribution_b, rb, rtol=1e-12)


@pytest.mark.parametrize("x64", [True, False])
@pytest.mark.parametrize("resampling", ["multinomial", "poisson"])
def test_jax_auc_replicates_equal_numpy_exactly_at_blocked_sizes(x64, resampling):
    """At n in the thousands the JAX AUC kernel takes its prefix sums of counts in blocks of
    ranks (int32 inside): the replicates must still be the NumPy engine's exact integer
    ones, bit for bit (x64; float32 results without)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    rng = np.random.default_rng(21)
    n = 3000
    y = (rng.random(n) < 0.4).astype(np.int64)
    a = np.round(rng.normal(size=n) + y, 1)        # ties inside and across classes
    # scores exact in float32 (JAX without x64 holds float32), so both see one order
    a = a.astype(np.float32).astype(np.float64)
    b = (rng.normal(size=n) + 0.5 * y).astype(np.float32).astype(np.float64)
    ref = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=24, seed=8,
                                      resampling=resampling)
    with jax.enable_x64(x64):
        got = paired_bootstrap_replicates("roc_auc", jnp.asarray(y), jnp.asarray(a),
                                          jnp.asarray(b), n_resamples=24, seed=8,
                                          resampling=resampling)
        got = [np.asarray(g, dtype=np.float64) for g in got]
    tol = 0 if x64 else 1e-7       # float32 results without x64; the counts are the same
    np.testing.assert_allclose(got[0], ref[0], rtol=tol, atol=0)
    np.testing.assert_allclose(got[1], ref[1], rtol=tol, atol=0)


def _assert_jax_auc_replicates_are_numpys(y, a, b, *, n_resamples, seed):
    """JAX (x64) AUC replicates equal NumPy's bit for bit, multinomial and Poisson."""
    import jax
    import jax.numpy as jnp

    for res in ("multinomial", "poisson"):
        ref = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=n_resamples,
                                          seed=seed, resampling=res)
        with jax.enable_x64(True):
            got = paired_bootstrap_replicates("roc_auc", jnp.asarray(y), jnp.asarray(a),
                                              jnp.asarray(b), n_resamples=n_resamples,
                                              seed=seed, resampling=res)
            got = [np.asarray(g) for g in got]
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])


def _class_edge_data(rng, n_neg, tied, n_pos=23):
    """Labels with ``n_neg`` negatives and 23 positives, shuffled, and two models' scores:
    distinct, or a few tied values per class."""
    y = rng.permutation(np.r_[np.zeros(n_neg, np.int64), np.ones(n_pos, np.int64)])
    n = y.size
    if tied:
        return y, rng.integers(0, 6, n) + y * 0.5, rng.integers(0, 3, n) - y * 0.5
    return y, rng.permutation(n) + 0.5 * y, rng.permutation(n) - 0.25 * y


@pytest.mark.parametrize("n_neg", [1, 7, 8, 9, 95, 120, 128, 2048])
@pytest.mark.parametrize("tied", [True, False])
def test_jax_auc_blocked_prefix_sums_at_block_edges(n_neg, tied):
    """The JAX kernel lays negatives' ranks out in blocks of 8 (rank q at (q % 8, q // 8)),
    takes the block totals' prefix sums in windows of 16 (recursively: 120, 128 and 2048
    negatives put 16, 17 and 257 blocks there) and reads the prefix sums at k_lo, k_hi:
    class sizes around those edges, with and without ties, give the NumPy engine's
    replicates bit for bit (x64)."""
    pytest.importorskip("jax")
    from calipers._bootstrap import kernels as BK

    assert (BK._IBLOCK, BK._exclusive_prefix_jax.__defaults__) == (8, (16,))
    rng = np.random.default_rng(n_neg)
    y, a, b = _class_edge_data(rng, n_neg, tied)
    _assert_jax_auc_replicates_are_numpys(y, a, b, n_resamples=30, seed=4)


@pytest.mark.parametrize("dtype, acc, top", [(np.uint8, np.int32, 256), (np.int64, np.int32, 300),
                                             (np.int64, np.int64, 10**6)])
def test_numpy_blocked_prefix_sums_equal_cumsum(dtype, acc, top):
    """The NumPy engine's prefix sums of a replicate's counts (blocks of 8, rank q at
    (q % 8, q // 8)) equal ``np.cumsum`` read at every q in [0, n], for n around the block
    edges, counts up to the dtype's range, and buffers reused across replicates."""
    from calipers._bootstrap import kernels as BK

    rng = np.random.default_rng(0)
    for n in [1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4099]:
        scratch = {}
        for _ in range(3):                      # the same thread's buffers, reused
            c = rng.integers(0, top, n).astype(dtype)
            want = np.concatenate([[0], np.cumsum(c, dtype=np.int64)])
            C = BK._layout_prefix_numpy(c, acc, scratch)
            assert C.dtype == acc
            q = np.arange(n + 1)
            np.testing.assert_array_equal(C[BK._blocked_at(q, n, np)], want)
            assert all(C[BK._blocked_at(int(i), n, np)] == want[i] for i in (0, n // 2, n))


@pytest.mark.parametrize("sequential", [True, False], ids=["sequential", "vmapped"])
def test_jax_auc_without_x64_past_int32_pair_counts(monkeypatch, sequential):
    """Without x64 (int32 counts, float32 sums) and classes of 40,000 rows, 2 P* N* is
    past int32: the side that sums the positives subtracts from it in float32, never in
    int32 (which would wrap). Replicates equal NumPy's to float32 rounding, with ties."""
    pytest.importorskip("jax")
    rng = np.random.default_rng(8)
    n = 80_000
    y = rng.permutation(np.r_[np.zeros(40_000, np.int64), np.ones(40_000, np.int64)])
    a = np.round(rng.normal(size=n) + y, 2)
    b = np.round(rng.normal(size=n) + 0.5 * y, 2)
    ref = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=3, seed=2)
    got = _jax_replicates(monkeypatch, y, a, b, False, sequential, n_resamples=3, seed=2)
    np.testing.assert_allclose(got[0], ref[0], rtol=2e-6, atol=0)
    np.testing.assert_allclose(got[1], ref[1], rtol=2e-6, atol=0)


@pytest.mark.parametrize("side", [0, 1])
def test_jax_split_kernel_general_path_sorts_on_the_host(side):
    """A JAX CPU state whose summed class is not in the layout's order (``identity``
    False) sorts it on the host and takes the general path: (U2, P*, N*) equal the pair
    count, on JAX arrays."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from calipers._bootstrap.kernels import _AUCSplitKernel

    rng = np.random.default_rng(side)
    y, a, _ = _class_edge_data(rng, 30, True)
    order = np.argsort(y, kind="stable")         # [negatives | positives], scores unsorted
    y, a = y[order], a[order]
    k = _AUCSplitKernel(30, 23, True, total_bound=53, side=side)
    c = rng.poisson(1.0, 53)
    with jax.enable_x64(True):
        st = k.prepare(jnp.asarray(y), jnp.asarray(a), None, jnp, False)
        assert st.integer is None and st.perm is not None
        got = tuple(int(v) for v in k.parts(st, jnp.asarray(c), jnp))
    assert got == _u2_from_pairs(y, a, c)


def test_jax_auc_replicates_one_class_only_are_nan_like_numpy():
    """All positives (no negatives to sum over) or all negatives: every replicate is NaN on
    JAX as on NumPy (the blocked prefix sums are skipped when there are no negatives)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    a = np.random.default_rng(0).normal(size=40)
    b = a[::-1].copy()
    for y in (np.ones(40, np.int64), np.zeros(40, np.int64)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=4, seed=0)
            with jax.enable_x64(True):
                got = paired_bootstrap_replicates("roc_auc", jnp.asarray(y), jnp.asarray(a),
                                                  jnp.asarray(b), n_resamples=4, seed=0)
        assert np.all(np.isnan(ref[0])) and np.all(np.isnan(np.asarray(got[0])))
        assert np.all(np.isnan(np.asarray(got[1])))


def _fallback_data():
    rng = np.random.default_rng(5)
    n = 700
    y = (rng.random(n) < 0.3).astype(np.int64)
    a = np.round(rng.normal(size=n) + y, 1).astype(np.float32).astype(np.float64)
    b = (a + rng.normal(size=n)).astype(np.float32).astype(np.float64)
    return y, a, b


def _jax_replicates(monkeypatch, y, a, b, x64, sequential, **kw):
    """JAX replicates on the sequential (CPU) or the vmapped (accelerator) program.

    (XLA's program, not the NumPy loop that concrete CPU arrays take for ROC AUC.)"""
    import jax
    import jax.numpy as jnp
    from calipers._core import compile as _compile

    monkeypatch.setattr(BS, "_host_split", lambda s: False)
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu" if sequential else "gpu")
    _compile.clear_cache()
    try:
        with jax.enable_x64(x64):
            got = paired_bootstrap_replicates("roc_auc", jnp.asarray(y), jnp.asarray(a),
                                              jnp.asarray(b), **kw)
            return [np.asarray(g, dtype=np.float64) for g in got]
    finally:
        _compile.clear_cache()


@pytest.mark.parametrize("sequential", [True, False], ids=["sequential", "vmapped"])
@pytest.mark.parametrize("x64", [True, False])
def test_jax_small_counts_that_wrap_are_redrawn_wide(monkeypatch, x64, sequential):
    """On CPU the JAX AUC engine moves plain multinomial counts as uint8 (modulo 256) and
    draws a replicate again in int32 when its wrapped counts do not sum to n. With that
    check forced to fail (and the small counts reversed, so only the redraw can be
    right), the replicates are still NumPy's. (The vmapped program moves int32 only.)"""
    pytest.importorskip("jax")
    import jax.numpy as jnp
    from calipers._bootstrap import engine as BE, resample as _resample

    y, a, b = _fallback_data()
    ref = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=20, seed=3)
    calls = []
    real = _resample.draw_checked

    def reversed_small(design, data, words, r, xp, idtype, small=False):
        c, ok = real(design, data, words, r, xp, idtype, small)
        return (c[::-1], ok) if c.dtype == jnp.uint8 else (c, ok)

    def never_ok(design, counts, xp):
        calls.append(counts.dtype)
        return xp.sum(counts, dtype=xp.int32) < 0

    monkeypatch.setattr(BE, "draw_checked", reversed_small)
    monkeypatch.setattr(_resample, "small_counts_ok", never_ok)
    got = _jax_replicates(monkeypatch, y, a, b, x64, sequential, n_resamples=20, seed=3)
    assert (calls and all(d == jnp.uint8 for d in calls)) if sequential else not calls
    tol = 0 if x64 else 1e-7
    np.testing.assert_allclose(got[0], ref[0], rtol=tol, atol=0)
    np.testing.assert_allclose(got[1], ref[1], rtol=tol, atol=0)


@pytest.mark.parametrize("plan", [(0.0, 10.0), (5.0, 5.0)], ids=["total-above-n",
                                                                  "too-many-missing"])
def test_topup_fallback_is_the_same_direct_draw_on_every_engine(monkeypatch, plan):
    """A replicate whose Poisson total passes n (lam = 1 here), or whose missing draws
    pass the bound M (M = 5 sqrt(n) here, the mean), is drawn directly from its third
    stream: about half of them here. The NumPy in-place drawer, the generic draw and
    JAX (sequential and vmapped, x64 on and off) give the same counts, each summing to n,
    and both kinds of replicate occur."""
    monkeypatch.setattr(RS, "_TOPUP_SIGMAS", plan[0])
    monkeypatch.setattr(RS, "_TOPUP_BOUND", plan[1])
    RS.topup_plan.cache_clear()
    try:
        y, a, b = _fallback_data()
        n = y.shape[0]
        s = _setup_for("roc_auc", y, a, b)
        words = BS.seed_words(3)
        numpy_fast = RS.numpy_drawer(s.design, s.design_data, words, True)
        arrays, layout = s.design_data
        kinds = set()
        for r in range(40):
            want = BS.draw_counts(s.design, s.design_data, words, r, np, np.int64)
            assert want.sum() == n and want.min() >= 0
            np.testing.assert_array_equal(numpy_fast(r), want)
            keys = RS._keys(words, r, np)
            c, ok = RS._design_multinomial(s.design, arrays, layout, keys, np, np.int64)
            kinds.add(bool(ok))
            if not ok:
                direct = RS._design_multinomial(s.design, arrays, layout, keys, np, np.int64,
                                                 direct=True)
                np.testing.assert_array_equal(want, direct)
        assert kinds == {True, False}
        ref = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=40, seed=3)
        if importlib.util.find_spec("jax") is None:
            return
        for x64 in (True, False):
            for sequential in (True, False):
                got = _jax_replicates(monkeypatch, y, a, b, x64, sequential, n_resamples=40,
                                      seed=3)
                tol = 0 if x64 else 1e-7
                np.testing.assert_allclose(got[0], ref[0], rtol=tol, atol=0)
                np.testing.assert_allclose(got[1], ref[1], rtol=tol, atol=0)
    finally:
        RS.topup_plan.cache_clear()


def test_past_the_topup_plan_every_replicate_is_the_direct_draw(monkeypatch):
    """Where :func:`topup_plan` gives no plan (past 2**31 rows; forced here), rows,
    clusters and integer-weight units are n uniform draws from counter 0 on every
    engine: NumPy's counts sum to n and equal the bincount of those draws, and JAX's
    replicates equal NumPy's."""
    monkeypatch.setattr(RS, "topup_plan", lambda n: None)
    y, a, b = _fallback_data()
    n = y.shape[0]
    words = BS.seed_words(7)
    s = _setup_for("roc_auc", y, a, b)
    lay = np.asarray(s.design_data[1])
    for r in range(5):
        keys = RS._keys(words, r, np)
        want = np.bincount(RS._mulhi(RS._draws(0, n, keys, np), RS._U(n), np, True),
                           minlength=n)
        got = RS.numpy_drawer(s.design, s.design_data, words, True)(r)
        np.testing.assert_array_equal(got, want[lay])
    groups = np.arange(n) % 37          # cluster codes 0..36
    sc = _setup_for("roc_auc", y, a, b, groups=groups)
    lay_c = np.asarray(sc.design_data[1])
    for r in range(5):
        keys = RS._keys(words, r, np)
        per_cluster = np.bincount(RS._mulhi(RS._draws(0, 37, keys, np), RS._U(37), np, True),
                                  minlength=37)
        c = RS.draw_counts(sc.design, sc.design_data, words, r, np, np.int64)
        np.testing.assert_array_equal(c, per_cluster[groups[lay_c]])
    ref = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=6, seed=7)
    w = np.random.default_rng(1).integers(0, 3, n)
    refw = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=6, seed=7,
                                       sample_weight=w)
    if importlib.util.find_spec("jax") is None:
        return
    import jax.numpy as jnp

    for x64 in (True, False):
        got = _jax_replicates(monkeypatch, y, a, b, x64, True, n_resamples=6, seed=7)
        np.testing.assert_allclose(got[0], ref[0], rtol=0 if x64 else 1e-7, atol=0)
    with __import__("jax").enable_x64(True):
        gw = paired_bootstrap_replicates("roc_auc", jnp.asarray(y), jnp.asarray(a),
                                         jnp.asarray(b), n_resamples=6, seed=7,
                                         sample_weight=jnp.asarray(w))
    np.testing.assert_array_equal(np.asarray(gw[0]), refw[0])


def _empty_rows_pmf(n):
    """Exact distribution of the number of rows never drawn in n uniform draws of n rows:
    ``P(E = e) = C(n, e) S(n, n - e) (n - e)! / n**n`` (Stirling numbers of the second
    kind), in fractions."""
    from fractions import Fraction

    S = [[0] * (n + 1) for _ in range(n + 1)]
    S[0][0] = 1
    for i in range(1, n + 1):
        for k in range(1, i + 1):
            S[i][k] = k * S[i - 1][k] + S[i - 1][k - 1]
    return [Fraction(math.comb(n, e) * S[n][n - e] * math.factorial(n - e), n**n)
            for e in range(n + 1)]


def _layout_drawer(n, seed, **kw):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    s = _setup_for("roc_auc", y, rng.normal(size=n) + y, rng.normal(size=n), **kw)
    return s, BS.numpy_drawer(s.design, s.design_data, BS.seed_words(seed), True)


@pytest.mark.parametrize("poisson", [False, True], ids=["multinomial", "poisson-control"])
def test_topup_draw_is_multinomial_by_the_exact_empty_row_distribution(poisson):
    """Poisson counts topped up to n draws are Multinomial(n, uniform): over 20,000
    replicates of n = 100 rows (lam = 0.5: half the draws come from each part), the number
    of rows never drawn follows its exact distribution (chi-square), and each row's count
    is Binomial(n, 1/n). Control: independent Poisson(1) counts (resampling="poisson",
    the same mean per row) fail the same test."""
    n, R = 100, 20000
    s, draw = _layout_drawer(n, 11)
    if poisson:
        draw = BS.numpy_drawer(BS._Design("plain", True, n), s.design_data, BS.seed_words(11),
                               True)
    counts = np.stack([draw(r).astype(np.int64) for r in range(R)])
    if not poisson:
        assert np.all(counts.sum(axis=1) == n)
    pmf = np.array([float(p) for p in _empty_rows_pmf(n)])
    empty = np.bincount((counts == 0).sum(axis=1), minlength=n + 1)
    # bins with an expected count of at least 5, the tails pooled
    keep = pmf * R >= 5
    lo, hi = np.flatnonzero(keep)[[0, -1]]
    obs = np.r_[empty[:lo].sum(), empty[lo:hi + 1], empty[hi + 1:].sum()]
    exp = np.r_[pmf[:lo].sum(), pmf[lo:hi + 1], pmf[hi + 1:].sum()] * R
    p_empty = stats.chisquare(obs, exp).pvalue
    binom = stats.binom(n, 1 / n).pmf(np.arange(5))
    obs_c = np.r_[[np.sum(counts == k) for k in range(4)], np.sum(counts >= 4)]
    p_count = stats.chisquare(obs_c, np.r_[binom[:4], 1 - binom[:4].sum()] * R * n).pvalue
    if poisson:
        assert p_empty < 1e-12
    else:
        assert p_empty > 1e-3 and p_count > 1e-3


def test_topup_draw_empty_rows_mean_and_variance_at_larger_n():
    """n = 2,000 rows (lam = 0.89, top-up about 224 draws, bound 448), 4,000 replicates,
    clusters too (700 clusters): the mean and variance of the number of units never drawn
    match the exact moments of Multinomial(n, uniform) (z below 4)."""
    def check(counts_per_unit, U):
        E = (counts_per_unit == 0).sum(axis=1).astype(float)
        q1, q2 = (1 - 1 / U) ** U, (1 - 2 / U) ** U
        mean = U * q1
        var = U * (U - 1) * q2 + U * q1 - (U * q1) ** 2
        R = E.shape[0]
        assert abs(E.mean() - mean) / math.sqrt(var / R) < 4
        # the sample variance's standard error from the normal approximation
        assert abs(E.var(ddof=1) - var) / (var * math.sqrt(2 / (R - 1))) < 4

    n, R = 2000, 4000
    s, draw = _layout_drawer(n, 12)
    check(np.stack([draw(r).astype(np.int64) for r in range(R)]), n)
    G = 700
    groups = np.arange(n) % G
    s, draw = _layout_drawer(n, 13, groups=groups)
    lay = np.asarray(s.design_data[1])
    first = np.array([np.flatnonzero(groups[lay] == g)[0] for g in range(G)])
    check(np.stack([draw(r)[first] for r in range(R)]), G)


def test_small_counts_check_detects_a_count_of_256():
    """uint8 counts wrap at 256; their sum equals n only when no row reached 256."""
    jnp = pytest.importorskip("jax.numpy")
    from calipers._bootstrap import resample as _resample

    design = _resample._Design("plain", False, 600)
    for top, ok in ((255, True), (256, False), (511, False), (512, False)):
        c = np.zeros(600, np.int64)
        c[-1] = top
        c[: 600 - top] = 1
        assert c.sum() == 600
        assert bool(_resample.small_counts_ok(design, jnp.asarray(c.astype(np.uint8)), jnp)) == ok
    assert not _resample.small_counts(_resample._Design("plain", True, 600))
    assert not _resample.small_counts(_resample._Design("stratified", False, 600))


@pytest.mark.parametrize("host", [True, False])
def test_jax_auc_setup_sorts_on_host_or_device_give_numpy_replicates(monkeypatch, host):
    """On the CPU the JAX AUC set-up sorts and searches in NumPy (XLA's CPU sort is several
    times slower); elsewhere in JAX. Both give NumPy's replicates bit for bit, with ties
    inside and across classes (tied rows may be laid out in another order)."""
    pytest.importorskip("jax")
    from calipers._bootstrap import kernels as BK

    if not host:
        monkeypatch.setattr(BK, "host_cpu", lambda x, xp: False)
        monkeypatch.setattr(BS, "host_cpu", lambda x, xp: False)
    rng = np.random.default_rng(17)
    n = 500
    y = (rng.random(n) < 0.35).astype(np.int64)
    a = rng.integers(0, 9, n) + 0.5 * y
    b = rng.integers(0, 4, n) - 0.5 * y
    _assert_jax_auc_replicates_are_numpys(y, a, b, n_resamples=16, seed=2)


# --------------------------------------------------------------------------
# the NumPy AUC kernel's blocked prefix sums and the drawer's arithmetic
# --------------------------------------------------------------------------

def _u2_from_pairs(y, s, c):
    """``(U2, P*, N*)`` from the definition: every (positive, negative) pair of rows
    weighted by their counts, 2 when the positive scores higher, 1 when tied."""
    pos, neg = y == 1, y == 0
    sp, sn = s[pos][:, None], s[neg][None, :]
    w = c[pos].astype(np.int64)[:, None] * c[neg].astype(np.int64)[None, :]
    return int((w * (2 * (sp > sn) + (sp == sn))).sum()), int(c[pos].sum()), int(c[neg].sum())


@pytest.mark.parametrize("n_neg", [1, 2, 17, 50])
@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("bound", [0, 2**27, 2**31])
def test_numpy_auc_integer_path_equals_the_pair_count(n_neg, tied, bound):
    """NumPy's integer AUC path (the layout: negatives in A's order, positives in B's; one
    prefix sum of its counts, read by A at its positives' bounds among the negatives and by
    B at its negatives' bounds among the positives; integer products summed in int64):
    both models' (U2, P*, N*) equal the pair count from the definition, alone and as a
    pair, with and without ties, for uint8 counts and int64 counts (one of 300), with each
    choice of dtypes (int32 prefix sums and products under the default bound; int64
    products for uint8 counts beyond 2**21, everything int64 from 2**30), and on the
    general path (a model's own sort of the class it sums)."""
    from dataclasses import replace

    rng = np.random.default_rng(n_neg)
    y, a, b = _class_edge_data(rng, n_neg, tied)
    n = y.size
    s = _setup_for("roc_auc", y, a, b)
    lay = np.asarray(s.design_data[1])
    ka, kb = s.kernel_a, s.kernel_b
    assert ka.N == n_neg and np.all(y[lay][:n_neg] == 0) and (ka.side, kb.side) == (0, 1)
    assert np.all(np.diff(a[lay][:n_neg]) >= 0) and np.all(np.diff(b[lay][n_neg:]) >= 0)
    if bound:
        ka, kb = replace(ka, total_bound=bound), replace(kb, total_bound=bound)
    i32, i64 = np.dtype(np.int32), np.dtype(np.int64)
    assert (ka._dtypes(np.dtype(np.uint8)), ka._dtypes(i64)) == {
        0: ((i32, i32), (i32, i32)), 2**27: ((i32, i64), (i32, i64)),
        2**31: ((i64, i64), (i64, i64))}[bound]
    sa = ka.prepare(y[lay], a[lay], None, np, True)
    sb = kb.prepare(y[lay], b[lay], None, np, True)
    assert sa.integer is not None and sb.integer is not None
    # the general path: each model sorts the class it sums itself
    ga = ka.prepare(y[lay], a[lay], None, np, False)
    gb = kb.prepare(y[lay], b[lay], None, np, False)
    assert ga.integer is None and gb.integer is None
    for r in range(12):
        c = rng.poisson(1.0, n).astype(np.int64)
        if r % 3 == 2:
            c[rng.integers(0, n)] = 300        # past the uint8 counts: int64
        counts = [c[lay]] if c.max() > 255 else [c[lay], c[lay].astype(np.uint8)]
        for cl in counts:
            assert ka.parts(sa, cl, np) == _u2_from_pairs(y, a, c)
            assert kb.parts(sb, cl, np) == _u2_from_pairs(y, b, c)
            assert tuple(int(v) for v in ka.parts(ga, cl, np)) == _u2_from_pairs(y, a, c)
            assert tuple(int(v) for v in kb.parts(gb, cl, np)) == _u2_from_pairs(y, b, c)
            # the pair shares one prefix sum: the same values
            va, vb, vd = BS.evaluate_pair(ka, sa, kb, sb, cl, np)
            ua, P, N = _u2_from_pairs(y, a, c)
            ub = _u2_from_pairs(y, b, c)[0]
            if P * N == 0:       # a class drawn no times: undefined
                assert np.isnan([va, vb, vd]).all()
            else:
                den = 2 * P * N
                assert (va, vb, vd) == (ua / den, ub / den, (ua - ub) / den)


def test_replicate_keys_in_python_ints_equal_the_array_keys():
    """The NumPy drawer takes a replicate's two keys in Python ints: the same integers as
    the uint32 array arithmetic every backend uses."""
    rng = np.random.default_rng(1)
    for words in (RS.seed_words(0), RS.seed_words(12345),
                  np.array([0xFFFFFFFF, 0xFFFFFFFF], np.uint32), np.zeros(2, np.uint32)):
        for r in [0, 1, 2**31, 2**32 - 1, *rng.integers(0, 2**32, 20).tolist()]:
            k1, k2 = RS._replicate_keys((words[0:1], words[1:2]),
                                        np.asarray([r], dtype=np.uint32), np)
            assert RS._replicate_keys_int(words, r) == (int(k1[0]), int(k2[0]))


@pytest.mark.parametrize("x64", [True, False])
def test_jax_block_totals_exclusive_prefix_sums_equal_cumsum(x64):
    """The JAX kernel's prefix sums of block totals (windows of 16, recursively) equal
    NumPy's exclusive cumulative sum at lengths around the window edges."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from calipers._bootstrap import kernels as BK

    rng = np.random.default_rng(3)
    with jax.enable_x64(x64):
        for L in (1, 2, 15, 16, 17, 255, 256, 257, 4097):
            t = rng.integers(0, 2000, L).astype(np.int32)
            got = np.asarray(jax.jit(BK._exclusive_prefix_jax)(jnp.asarray(t)))
            np.testing.assert_array_equal(got, np.cumsum(t) - t)
            # leading axes are independent rows (the stacked models)
            t2 = rng.integers(0, 2000, (2, 3, L)).astype(np.int32)
            got = np.asarray(jax.jit(BK._exclusive_prefix_jax)(jnp.asarray(t2)))
            np.testing.assert_array_equal(got, np.cumsum(t2, axis=-1) - t2)


@pytest.mark.parametrize("ratio, threads", [(0.5, 2), (0.79, 2), (0.81, 1), (1.3, 1)])
def test_thread_probe_keeps_threads_only_where_they_pay(ratio, threads):
    """The NumPy loop's default times one span alone and two side by side (twice) and
    keeps both threads only when side by side takes under 0.8 of one thread's time per
    replicate; too few spans run on one thread. The clock is scripted (no timing in
    unit tests): the faster of the two rounds decides. Every replicate runs once, and
    progress counts all of them."""
    import threading

    from calipers._bootstrap.engine import _run_spans

    done, seen, reported = [], set(), []
    lock = threading.Lock()

    def run(lo, hi):
        with lock:
            done.extend(range(lo, hi))
            seen.add(threading.get_ident())
        return hi - lo

    def scripted(per_replicate):
        # side_by_side reads the clock before and after each group; spans hold 16
        # replicates, so a lone span is 16 and a pair 32 replicates.
        ticks = iter(per_replicate)
        now = [0.0]

        def clock():
            step = next(ticks, 0.0)
            now[0] += step
            return now[0]
        return clock

    one, slow = 1e-3, 1.5e-3
    many = ratio * one
    # warm-up pair, then (one, many) twice; the second round is slower and must not decide
    steps = [0, 32 * one, 0, 16 * one, 0, 32 * many, 0, 16 * slow, 0, 32 * slow * ratio * 2]
    spans = [(lo, lo + 16) for lo in range(0, 16 * 30, 16)]
    used = _run_spans(run, spans, 2, True, reported.append, clock=scripted(steps))
    assert used == threads
    assert sorted(done) == list(range(480)) and sum(reported) == 480
    done.clear()
    assert _run_spans(run, spans, 2, False, None) == 2 and sorted(done) == list(range(480))
    done.clear()    # too few spans to time: one thread
    assert _run_spans(run, spans[:10], 2, True, None) == 1 and sorted(done) == list(range(160))


def test_thread_probe_runs_side_by_side_on_two_threads():
    """Without the probe, two workers really run spans on two threads (a barrier that
    only two threads at once can pass)."""
    import threading

    from calipers._bootstrap.engine import _run_spans

    barrier, seen = threading.Barrier(2, timeout=30), set()

    def run(lo, hi):
        barrier.wait()
        seen.add(threading.get_ident())
        return hi - lo

    spans = [(lo, lo + 4) for lo in range(0, 40, 4)]
    assert _run_spans(run, spans, 2, False, None) == 2 and len(seen) == 2


def test_default_workers_follow_the_cores_and_bound_memory():
    from calipers._bootstrap.engine import default_workers
    assert default_workers(10**5, cores=2) == 2
    assert default_workers(10**5, cores=1) == 1
    assert default_workers(10**5, cores=64) == 4
    assert default_workers(10**7, cores=8) == 1        # 32 bytes a row: one thread's buffers
    assert default_workers(2 * 10**6, cores=8) == 4


def test_a_python_metric_runs_in_the_callers_thread_by_default():
    import threading
    seen = set()

    def metric(y, s):
        seen.add(threading.get_ident())
        return float(np.mean(s[y == 1])) - float(np.mean(s[y == 0]))

    y, a, b = _data(3, n=40)
    paired_bootstrap(metric, y, a, b, n_resamples=30, seed=0)
    assert seen == {threading.get_ident()}
