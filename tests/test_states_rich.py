"""Richer streaming states: ConfusionState summaries and the regression, mean, top-k and
multiclass AUC states.

Each state is fed a random split of the rows into batches, each padded with masked garbage
rows, merged in a random order, and compared with the one-shot calipers function and with
scikit-learn (an independent reference) on the unmasked rows. Modes: NumPy, JAX eager,
``update`` under ``jax.jit`` (x64 on and off).
"""

import contextlib
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sklearn.metrics as skm

import calipers
from calipers import ConfusionState, UndefinedMetricWarning
from conftest import STATE_MODES, mode_array, mode_context, mode_xp

MODES = STATE_MODES
PAD = 16


_ctx = mode_context
_xp = mode_xp
_arr = mode_array


def _rtol(mode):
    return 2e-5 if mode == "jax_jit_x32" else 1e-10


def stream(mode, init, update, columns, garbage, seed):
    """``init`` fed a random split of ``columns`` into padded, masked batches (one of them
    all padding), the states merged in a random order."""
    rng = np.random.default_rng(seed)
    n = len(columns[0])
    order = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(3, n - 1), replace=False))
    parts = np.split(order, cuts) + [np.arange(0)]
    parts = [p[i:i + PAD - 2] for p in parts for i in range(0, max(len(p), 1), PAD - 2)]
    up = jax.jit(update) if mode.startswith("jax_jit") else update
    states = []
    for idx in parts:
        pad = PAD - len(idx)
        cols = []
        for c, g in zip(columns, garbage):
            c = np.asarray(c)
            fill = np.broadcast_to(np.asarray(g, dtype=np.result_type(c.dtype, np.asarray(g))),
                                   (pad,) + c.shape[1:])
            cols.append(np.concatenate([c[idx].astype(fill.dtype), fill]))
        mask = np.arange(PAD) < len(idx)
        if rng.random() < 0.5:
            mask = mask.astype(np.int64)
        states.append(up(init(), *[_arr(mode, c) for c in cols], _arr(mode, mask)))
    while len(states) > 1:
        i, j = sorted(rng.choice(len(states), size=2, replace=False))
        merged = states[i].merge(states[j])
        states = [s for t, s in enumerate(states) if t not in (i, j)] + [merged]
    return states[0]


def _close(got, want, mode):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=_rtol(mode), atol=_rtol(mode) * 1e-2)


# --------------------------------------------------------------------------
# ConfusionState.summary
# --------------------------------------------------------------------------

def _classes(seed, n=60, K=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, n)
    p = np.where(rng.random(n) < 0.5, y, rng.integers(0, K, n))
    return y, p


def _conf_stream(mode, y, p, K, w=None, seed=0):
    xp = _xp(mode)
    if w is None:
        return stream(mode, lambda: ConfusionState.init(K, xp=xp),
                      lambda s, a, b, m: s.update(a, b, mask=m), [y, p], [K + 4, -1], seed)
    return stream(mode, lambda: ConfusionState.init(K, xp=xp, weighted=True),
                  lambda s, a, b, c, m: s.update(a, b, sample_weight=c, mask=m),
                  [y, p, w], [K + 4, -1, -2.0], seed)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("average", [None, "micro", "macro", "weighted"])
def test_confusion_summary_equals_one_shot_and_sklearn(mode, average):
    with _ctx(mode):
        for seed in range(1):
            y, p = _classes(seed)
            p[p == 2] = 1                  # class 2 never predicted: precision undefined
            st = _conf_stream(mode, y, p, 3, seed=seed)
            for zd in ("nan", 0.0, 1.0):
                s = st.summary(average=average, beta=2.0, zero_division=zd)
                pr, rc, fb, sup = calipers.precision_recall_fscore_support(
                    y, p, beta=2.0, average=average, zero_division=zd, labels=[0, 1, 2])
                skz = np.nan if zd == "nan" else zd
                spr, src, sfb, ssup = skm.precision_recall_fscore_support(
                    y, p, beta=2.0, average=average, zero_division=skz, labels=[0, 1, 2])
                _close(s.precision, pr, mode)
                _close(s.recall, rc, mode)
                _close(s.fbeta, fb, mode)
                _close(s.precision, spr, mode)
                _close(s.recall, src, mode)
                if zd != "nan" or average is None:
                    # calipers' F from counts differs from scikit-learn < 1.4 only when
                    # precision is undefined and NaN is asked for
                    _close(s.fbeta, sfb, mode)
                _close(s.specificity, calipers.specificity_score(
                    y, p, average=average, zero_division=zd, labels=[0, 1, 2]), mode)
                if average is None:
                    np.testing.assert_array_equal(np.asarray(s.support), ssup)
                else:
                    assert s.support is None
            _close(s.accuracy, skm.accuracy_score(y, p), mode)
            _close(s.balanced_accuracy, skm.balanced_accuracy_score(y, p), mode)
            _close(st.summary(adjusted=True).balanced_accuracy,
                   skm.balanced_accuracy_score(y, p, adjusted=True), mode)
            _close(s.matthews_corrcoef, skm.matthews_corrcoef(y, p), mode)
            for kw in (None, "linear", "quadratic"):
                _close(st.summary(kappa_weights=kw).cohen_kappa,
                       skm.cohen_kappa_score(y, p, weights=kw), mode)


@pytest.mark.parametrize("mode", MODES)
def test_confusion_summary_binary_weighted_and_labels(mode):
    with _ctx(mode):
        rng = np.random.default_rng(5)
        y, p = _classes(5, n=50, K=2)
        w = rng.integers(0, 4, 50) / 4.0           # dyadic weights: exact float sums
        st = _conf_stream(mode, y, p, 2, w=w, seed=3)
        for pos in (0, 1):
            s = st.summary(average="binary", pos_label=pos, beta=0.5)
            _close(s.precision, skm.precision_score(y, p, pos_label=pos, sample_weight=w), mode)
            _close(s.recall, skm.recall_score(y, p, pos_label=pos, sample_weight=w), mode)
            _close(s.fbeta, skm.fbeta_score(y, p, beta=0.5, pos_label=pos, sample_weight=w),
                   mode)
        _close(s.matthews_corrcoef, skm.matthews_corrcoef(y, p, sample_weight=w), mode)
        _close(s.cohen_kappa, skm.cohen_kappa_score(y, p, sample_weight=w), mode)
        _close(s.balanced_accuracy, skm.balanced_accuracy_score(y, p, sample_weight=w), mode)
        # a subset of the classes, as the one-shot labels= (other classes still count)
        y3, p3 = _classes(7, K=4)
        st3 = _conf_stream(mode, y3, p3, 4, seed=1)
        for avg in (None, "micro", "macro"):
            _close(st3.summary(average=avg, labels=[3, 1]).recall,
                   skm.recall_score(y3, p3, average=avg, labels=[3, 1], zero_division=0), mode)


def test_confusion_summary_worked_values():
    # SPEC's three-class matrix, rows true: [4,1,1], [1,2,0], [0,1,2]
    cm = np.array([[4, 1, 1], [1, 2, 0], [0, 1, 2]])
    y = np.repeat(np.repeat(np.arange(3), 3), cm.reshape(-1))
    p = np.repeat(np.tile(np.arange(3), 3), cm.reshape(-1))
    s = ConfusionState.init(3).update(y, p).summary()
    np.testing.assert_allclose(s.precision, [0.8, 0.5, 2 / 3])
    assert abs(ConfusionState.init(3).update(y, p).summary(average="macro").precision
               - (0.8 + 0.5 + 2 / 3) / 3) < 1e-15
    m = ConfusionState.init(3).update(y, p).summary(average="micro")
    assert m.precision == m.recall == m.accuracy == pytest.approx(8 / 12, abs=1e-15)
    # SPEC's binary case: TP 80, FN 20, FP 90, TN 810
    y = np.array([1] * 100 + [0] * 900)
    p = np.array([1] * 80 + [0] * 20 + [1] * 90 + [0] * 810)
    b = ConfusionState.init(2).update(y, p).summary(average="binary")
    assert (float(b.precision), float(b.recall), float(b.specificity)) == \
        pytest.approx((80 / 170, 0.8, 0.9), abs=1e-15)
    assert float(b.fbeta) == pytest.approx(160 / 270, abs=1e-15)
    assert float(b.balanced_accuracy) == pytest.approx(0.85, abs=1e-15)


def test_confusion_summary_undefined_and_errors():
    empty = ConfusionState.init(3)
    with pytest.warns(UndefinedMetricWarning):
        s = empty.summary(average="macro")
    assert all(math.isnan(float(v)) for v in (s.precision, s.accuracy, s.matthews_corrcoef,
                                               s.cohen_kappa, s.balanced_accuracy))
    # both sides constant: MCC undefined (NaN), as matthews_corrcoef
    const = ConfusionState.init(2).update([1, 1, 1], [1, 1, 1])
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(float(const.summary().matthews_corrcoef))
    with pytest.raises(ValueError, match="average='binary' needs two classes"):
        ConfusionState.init(3).summary(average="binary")
    with pytest.raises(ValueError, match="average must be"):
        ConfusionState.init(3).summary(average="samples")
    with pytest.raises(ValueError, match="beta"):
        ConfusionState.init(3).summary(beta=-1)
    with pytest.raises(ValueError, match="labels must be distinct class indices"):
        ConfusionState.init(3).summary(labels=[0, 3])
    with pytest.raises(ValueError, match="kappa_weights"):
        ConfusionState.init(3).summary(kappa_weights="cubic")


def test_confusion_summary_jit_equals_eager_and_invalid_is_nan():
    y, p = _classes(2)
    st = ConfusionState.init(3, xp=jnp).update(jnp.asarray(y), jnp.asarray(p))
    eager = st.summary(average="weighted", zero_division=0)
    jitted = jax.jit(lambda s: s.summary(average="weighted", zero_division=0))(st)
    for a, b in zip(eager, jitted):
        if a is not None:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)
    bad = jax.jit(lambda s, a, b: s.update(a, b))(ConfusionState.init(3, xp=jnp),
                                                 jnp.asarray([0, 5]), jnp.asarray([0, 1]))
    s = bad.summary(average="macro")
    assert all(math.isnan(float(v)) for v in s if v is not None)


# --------------------------------------------------------------------------
# RegressionState, MeanState, TopKAccuracyState
# --------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_regression_state_equals_sklearn_weighted(mode):
    from calipers import RegressionState
    with _ctx(mode):
        rng = np.random.default_rng(4)
        y = rng.normal(2.0, 3.0, 50)
        p = y + rng.normal(0, 1.0, 50)
        w = rng.random(50)
        st = stream(mode, lambda: RegressionState.init(xp=_xp(mode), weighted=True),
                    lambda s, a, b, c, m: s.update(a, b, sample_weight=c, mask=m),
                    [y, p, w], [np.nan, np.inf, -1.0], 2)
        out = st.compute()
        tol = 2e-5 if mode == "jax_jit_x32" else 1e-9
        for got, want in ((out.mean_squared_error, skm.mean_squared_error(y, p, sample_weight=w)),
                          (out.root_mean_squared_error,
                           skm.root_mean_squared_error(y, p, sample_weight=w)),
                          (out.mean_absolute_error,
                           skm.mean_absolute_error(y, p, sample_weight=w)),
                          (out.r2, skm.r2_score(y, p, sample_weight=w))):
            np.testing.assert_allclose(float(got), want, rtol=tol)


def test_regression_state_constant_and_errors():
    from calipers import RegressionState
    const = RegressionState.init().update([1.5, 1.5, 1.5], [1.0, 2.0, 1.5])
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(float(const.compute().r2))
    assert float(const.compute(force_finite=True).r2) == \
        skm.r2_score([1.5, 1.5, 1.5], [1.0, 2.0, 1.5], force_finite=True)
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(float(RegressionState.init().compute().mean_squared_error))
    with pytest.raises(ValueError, match="y_pred must be finite"):
        RegressionState.init().update([1.0], [np.nan])
    with pytest.raises(ValueError, match="weighted=True"):
        RegressionState.init().update([1.0], [1.0], sample_weight=[1.0])
    big = RegressionState(*[np.asarray(v) for v in (np.iinfo(np.int64).max, 0.0, 0.0, 0.0,
                                                       0.0, 0)])
    with pytest.raises(ValueError, match="limit"):
        big.update([1.0], [1.0])


@pytest.mark.parametrize("mode", MODES)
def test_mean_state_equals_numpy_average(mode):
    from calipers import MeanState
    with _ctx(mode):
        rng = np.random.default_rng(8)
        v = rng.normal(size=40)
        w = rng.integers(0, 5, 40) / 4.0
        st = stream(mode, lambda: MeanState.init(xp=_xp(mode), weighted=True),
                    lambda s, a, c, m: s.update(a, sample_weight=c, mask=m),
                    [v, w], [np.nan, -3.0], 5)
        out = st.compute()
        _close(out.mean, np.average(v, weights=w), mode)
        _close(out.weight, w.sum(), mode)
        assert int(out.count) == 40
        st = stream(mode, lambda: MeanState.init(xp=_xp(mode)),
                    lambda s, a, m: s.update(a, mask=m), [v], [np.inf], 6)
        _close(st.compute().mean, np.mean(v), mode)
        assert int(st.compute().weight) == int(st.compute().count) == 40


def test_mean_state_undefined_and_jit_invalid():
    from calipers import MeanState
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(float(MeanState.init().compute().mean))
    with pytest.raises(ValueError, match="values must be finite"):
        MeanState.init().update([1.0, np.nan])
    bad = jax.jit(lambda s, v: s.update(v))(MeanState.init(xp=jnp), jnp.asarray([1.0, jnp.nan]))
    assert math.isnan(float(bad.compute().mean))


def _topk_brute(y, s, k):
    """Brute force of scikit-learn's rule: sort columns by (score desc, column desc)."""
    hits = 0
    for yi, row in zip(y, s):
        order = sorted(range(len(row)), key=lambda j: (-row[j], -j))
        hits += yi in order[:k]
    return hits / len(y)


@pytest.mark.parametrize("mode", MODES)
def test_top_k_state_equals_one_shot_and_brute_force(mode):
    from calipers import TopKAccuracyState
    with _ctx(mode):
        rng = np.random.default_rng(9)
        y = rng.integers(0, 5, 60)
        s = rng.integers(0, 3, (60, 5)) / 2.0            # many ties
        st = stream(mode, lambda: TopKAccuracyState.init(5, xp=_xp(mode)),
                    lambda t, a, b, m: t.update(a, b, mask=m), [y, s], [17, np.nan], 7)
        assert int(np.asarray(st.rank_counts).sum()) == 60
        for k in (1, 2, 4, 5):
            _close(st.compute(k), _topk_brute(y, s, k), mode)
            _close(st.compute(k), skm.top_k_accuracy_score(y, s, k=k, labels=range(5)), mode)
        w = rng.random(60)
        st = stream(mode, lambda: TopKAccuracyState.init(5, xp=_xp(mode), weighted=True),
                    lambda t, a, b, c, m: t.update(a, b, sample_weight=c, mask=m),
                    [y, s, w], [17, np.nan, -1.0], 8)
        _close(st.compute(2), skm.top_k_accuracy_score(y, s, k=2, labels=range(5),
                                                       sample_weight=w), mode)


def test_top_k_state_errors():
    from calipers import TopKAccuracyState
    with pytest.raises(ValueError, match="shape"):
        TopKAccuracyState.init(3).update([0], [[0.1, 0.2]])
    with pytest.raises(ValueError, match="y_true"):
        TopKAccuracyState.init(3).update([3], [[0.1, 0.2, 0.3]])
    with pytest.raises(ValueError, match="k must be"):
        TopKAccuracyState.init(3).compute(0)
    with pytest.raises(ValueError, match="num_classes"):
        TopKAccuracyState.init(1)
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(float(TopKAccuracyState.init(3).compute(1)))


@pytest.mark.parametrize("weighted", [False, True])
def test_regression_and_mean_init_field_dtypes(weighted):
    """One helper makes both empty states: float sums, integer counts, and the weight a
    count unless weighted=True."""
    w = np.float64 if weighted else np.int64
    r = calipers.RegressionState.init(weighted=weighted)
    assert [np.asarray(f).dtype for f in r] == [w] + [np.float64] * 4 + [np.int64]
    m = calipers.MeanState.init(weighted=weighted)
    assert [np.asarray(f).dtype for f in m] == [np.float64, w, np.int64, np.int64]
    assert all(np.asarray(f).shape == () and not np.asarray(f) for f in (*r, *m))
    with pytest.raises(ValueError, match="weighted"):
        calipers.MeanState.init(weighted="yes")
