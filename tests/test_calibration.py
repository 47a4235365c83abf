"""Calibration and probability-quality metrics: ECE, reliability diagrams, Brier (and its
Murphy decomposition), multiclass log loss, temperature scaling."""

import math
from fractions import Fraction

import numpy as np
import pytest
import sklearn.calibration as skc
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from conftest import HANDED_CASES, to_np

CASES = HANDED_CASES

RNG = np.random.default_rng(7)
N, K = 30, 3
P3 = RNG.dirichlet([1.0, 1.0, 1.0], size=N)
P3 = np.round(P3, 1)
P3[:, 2] = 1 - P3[:, 0] - P3[:, 1]               # rows sum to 1, many ties
P3 = np.clip(P3, 0, 1)
P3 /= P3.sum(axis=1, keepdims=True)
Y3 = RNG.integers(0, K, N)
PB = np.round(RNG.random(N), 1)                   # binary, tied forecasts, includes 0.0 and 1.0
PB[:2] = [0.0, 1.0]
YB = (RNG.random(N) < PB).astype(int)
W = RNG.integers(0, 4, N).astype(float)
W[0] = 1.0


# --------------------------------------------------------------------------
# a brute-force ECE reference in exact fractions
# --------------------------------------------------------------------------

def ref_channels(y, p, mode):
    p = np.asarray(p, float)
    y = np.asarray(y)
    if p.ndim == 1:
        if mode in (None, "positive"):
            return [(list(p), list((y == 1).astype(int)))]
        p = np.stack([1 - p, p], axis=1)
        mode = mode
    mode = mode or "top_label"
    if mode == "top_label":
        pred = [int(np.flatnonzero(row == row.max())[0]) for row in p]
        return [([row.max() for row in p], [int(a == b) for a, b in zip(pred, y)])]
    return [(list(p[:, k]), list((y == k).astype(int))) for k in range(p.shape[1])]


def ref_bins(conf, w, n_bins, strategy):
    if strategy == "uniform":
        return [min(n_bins - 1, math.floor(c * n_bins)) for c in conf]
    W_ = sum(Fraction(x) for x in w)
    out = []
    for c in conf:
        below = sum(Fraction(wj) for cj, wj in zip(conf, w) if cj < c)
        out.append(min(n_bins - 1, math.floor(n_bins * below / W_)))
    return out


def ref_ece(y, p, n_bins, strategy="uniform", mode=None, norm="l1", w=None):
    w = [1.0] * len(y) if w is None else list(w)
    vals = []
    for conf, out in ref_channels(y, p, mode):
        bins = ref_bins(conf, w, n_bins, strategy)
        W_ = sum(Fraction(x) for x in w)
        gaps, weights = [], []
        for b in range(n_bins):
            rows = [i for i, bb in enumerate(bins) if bb == b]
            wb = sum(Fraction(w[i]) for i in rows)
            if wb == 0:
                continue
            cb = sum(Fraction(w[i]) * Fraction(conf[i]) for i in rows) / wb
            ab = sum(Fraction(w[i]) * out[i] for i in rows) / wb
            gaps.append(abs(ab - cb))
            weights.append(wb / W_)
        if norm == "l1":
            vals.append(float(sum(g * q for g, q in zip(gaps, weights))))
        elif norm == "l2":
            vals.append(math.sqrt(float(sum(g * g * q for g, q in zip(gaps, weights)))))
        else:
            vals.append(float(max(gaps)))
    return float(np.mean(vals))


# --------------------------------------------------------------------------
# ECE
# --------------------------------------------------------------------------

def test_ece_spec_worked_value(backend):
    conf = [0.95, 0.95, 0.95, 0.95, 0.55, 0.55]
    correct = [1, 1, 1, 0, 1, 0]
    got = backend.call(calipers.expected_calibration_error, correct, conf, n_bins=10)
    np.testing.assert_allclose(to_np(got), 4 / 6 * 0.20 + 2 / 6 * 0.05, rtol=backend.rtol() * 10)


@pytest.mark.parametrize("mode", ["positive", "top_label", "classwise"])
def test_H12_ece_edges_zero_and_one(backend, mode):
    case = CASES["H12"]
    for inputs, expected in zip(case["inputs"], case["expected"]):
        got = backend.call(calipers.expected_calibration_error, inputs["y_true"],
                           np.asarray(inputs["y_prob"]), mode=mode, **case["kwargs"])
        np.testing.assert_allclose(to_np(got), expected, atol=case["tolerance"])


def test_H12_one_is_in_the_last_bin_zero_in_the_first(backend):
    d = backend.call(calipers.reliability_diagram, [1, 0], np.array([0.0, 1.0]), n_bins=10)
    count = to_np(d.count)
    assert count[0] == 1 and count[9] == 1 and count.sum() == 2


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("mode", [None, "top_label", "classwise"])
@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_ece_matches_exact_reference_numpy(strategy, mode, norm):
    for y, p in ((YB, PB), (Y3, P3)):
        for w in (None, W):
            got = calipers.expected_calibration_error(y, p, n_bins=7, strategy=strategy,
                                                      mode=mode, norm=norm, sample_weight=w)
            want = ref_ece(y, p, 7, strategy, mode, norm, w)
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("strategy, mode", [("uniform", "classwise")])
def test_ece_backends_match_reference(backend, strategy, mode):
    # the quantile path runs on every backend in test_reliability_diagram_quantile_and_classwise
    got = backend.call(calipers.expected_calibration_error, Y3, P3, n_bins=7, strategy=strategy,
                       mode=mode, sample_weight=W)
    want = ref_ece(Y3, P3, 7, strategy, mode, "l1", W)   # 7 bins: no value near an edge
    np.testing.assert_allclose(to_np(got), want, rtol=backend.rtol() * 10, atol=1e-6 * (not backend.x64))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 1)), min_size=1, max_size=20),
       st.randoms(use_true_random=False))
def test_ece_is_row_order_independent_with_ties(rows, rnd):
    p = np.array([r[0] / 8 for r in rows])
    y = np.array([r[1] for r in rows])
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    for strategy in ("uniform", "quantile"):
        a = calipers.expected_calibration_error(y, p, n_bins=4, strategy=strategy)
        b = calipers.expected_calibration_error(y[perm], p[perm], n_bins=4, strategy=strategy)
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15)
        assert a == pytest.approx(ref_ece(y, p, 4, strategy), rel=1e-12, abs=1e-15)


def test_reliability_diagram_matches_sklearn_calibration_curve():
    p = RNG.random(200) * 0.999 + 0.0005          # no value on a bin edge
    y = (RNG.random(200) < p ** 2).astype(int)
    d = calipers.reliability_diagram(y, p, n_bins=8)
    prob_true, prob_pred = skc.calibration_curve(y, p, n_bins=8)
    keep = d.count > 0
    np.testing.assert_allclose(d.accuracy[keep], prob_true, rtol=1e-12)
    np.testing.assert_allclose(d.confidence[keep], prob_pred, rtol=1e-12)
    assert np.isnan(d.confidence[~keep]).all()
    np.testing.assert_allclose(d.lower, np.arange(8) / 8)
    # the L1 ECE is the count-weighted gap of the diagram
    ece = np.nansum(d.count * np.abs(d.accuracy - d.confidence)) / d.count.sum()
    assert calipers.expected_calibration_error(y, p, n_bins=8) == pytest.approx(ece, rel=1e-12)


def test_reliability_diagram_quantile_and_classwise(backend):
    d = backend.call(calipers.reliability_diagram, [1, 1, 1, 0, 1, 0],
                     np.array([0.95, 0.95, 0.95, 0.95, 0.55, 0.55]), n_bins=3, strategy="quantile")
    np.testing.assert_allclose(to_np(d.count), [2, 4, 0])
    np.testing.assert_allclose(to_np(d.confidence)[:2], [0.55, 0.95], rtol=backend.rtol() * 10)
    np.testing.assert_allclose(to_np(d.accuracy)[:2], [0.5, 0.75], rtol=backend.rtol() * 10)
    np.testing.assert_allclose(to_np(d.lower)[:2], [0.55, 0.95], rtol=backend.rtol() * 10)
    assert np.isnan(to_np(d.confidence)[2]) and np.isnan(to_np(d.upper)[2])
    d = backend.call(calipers.reliability_diagram, Y3, P3, n_bins=4, mode="classwise")
    assert to_np(d.count).shape == (K, 4)
    np.testing.assert_allclose(to_np(d.count).sum(axis=1), [N] * K)


@pytest.mark.parametrize("call, match", [
    (lambda: calipers.expected_calibration_error([1, 0], [0.5, 1.5]), "probabilities in"),
    (lambda: calipers.expected_calibration_error([1, 0], [0.5, np.nan]), "probabilities in"),
    (lambda: calipers.expected_calibration_error([1, 2], [0.5, 0.5]), "only 0 and 1"),
    (lambda: calipers.expected_calibration_error([0, 3], P3[:2]), r"class indices 0 \.\. 2"),
    (lambda: calipers.expected_calibration_error([1], [0.5, 0.5]), "y_prob has 2 elements"),
    (lambda: calipers.expected_calibration_error([], []), "empty"),
    (lambda: calipers.expected_calibration_error([1], [0.5], n_bins=0), "n_bins"),
    (lambda: calipers.expected_calibration_error([1], [0.5], strategy="kmeans"), "strategy"),
    (lambda: calipers.expected_calibration_error([1], [0.5], norm="l3"), "norm"),
    (lambda: calipers.expected_calibration_error([1], [0.5], mode="best"), "mode must be"),
    (lambda: calipers.expected_calibration_error(Y3, P3, mode="positive"), "needs 1-D"),
    (lambda: calipers.expected_calibration_error([1], [0.5], sample_weight=[-1.0]), "non-negative"),
    (lambda: calipers.expected_calibration_error([1], [0.5], sample_weight=[0.0]), "positive sum"),
    (lambda: calipers.expected_calibration_error([1], np.ones((1, 1))), "at least 2 columns"),
])
def test_calibration_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_calibration_invalid_is_nan_under_jit(backend):
    if backend.eager_checks:
        pytest.skip("eager backends raise; see test_calibration_errors")
    got = backend.call(calipers.expected_calibration_error, np.array([1, 0]), np.array([0.5, 1.5]))
    assert np.isnan(to_np(got))
    got = backend.call(calipers.log_loss, np.array([0, 5]), P3[:2])
    assert np.isnan(to_np(got))


# --------------------------------------------------------------------------
# log loss and Brier, binary and multiclass
# --------------------------------------------------------------------------

def test_H10_log_loss_single_class_with_labels(backend):
    case = CASES["H10"]
    got = backend.call(calipers.log_loss, case["inputs"]["y_true"],
                       np.asarray(case["inputs"]["y_proba"]), **case["kwargs"])
    np.testing.assert_allclose(to_np(got), case["expected"], atol=case["tolerance"])


def test_log_loss_spec_confident_wrong():
    # SPEC: p = 0.001 when y = 1 -> about 6.9
    assert calipers.log_loss([1], [0.001]) == pytest.approx(-math.log(0.001), rel=1e-12)
    assert round(float(calipers.log_loss([1], [0.001])), 1) == 6.9


def test_multiclass_log_loss_and_brier_match_sklearn(backend):
    p = (P3 + 0.01) / 1.03     # no exact 0: clipping is at the dtype's eps (float32 differs)
    got = backend.call(calipers.log_loss, Y3, p, sample_weight=W)
    np.testing.assert_allclose(to_np(got), skm.log_loss(Y3, p, sample_weight=W),
                               rtol=backend.rtol() * 10)
    got = backend.call(calipers.brier_score_loss, Y3, P3, sample_weight=W)
    np.testing.assert_allclose(to_np(got), skm.brier_score_loss(Y3, P3, sample_weight=W),
                               rtol=backend.rtol() * 10)


def test_multiclass_labels_give_sorted_column_order():
    y = np.array([30, 10, 20, 10])
    p = RNG.dirichlet([1, 1, 1], size=4)
    for labels in ([10, 20, 30], [30, 10, 20]):
        assert calipers.log_loss(y, p, labels=labels) == pytest.approx(
            skm.log_loss(y, p, labels=[10, 20, 30]), rel=1e-12)
        assert calipers.brier_score_loss(y, p, labels=labels) == pytest.approx(
            skm.brier_score_loss(y, p, labels=[10, 20, 30]), rel=1e-12)


def test_brier_scale_by_half_as_sklearn():
    for half in ("auto", True, False):
        assert calipers.brier_score_loss(YB, PB, scale_by_half=half) == pytest.approx(
            skm.brier_score_loss(YB, PB, scale_by_half=half), rel=1e-12)
        p2 = np.stack([1 - PB, PB], axis=1)
        assert calipers.brier_score_loss(YB, p2, scale_by_half=half) == pytest.approx(
            skm.brier_score_loss(YB, p2, scale_by_half=half), rel=1e-12)
        assert calipers.brier_score_loss(Y3, P3, scale_by_half=half) == pytest.approx(
            skm.brier_score_loss(Y3, P3, scale_by_half=half), rel=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: calipers.log_loss([0, 1], [[0.5, 0.6], [0.5, 0.5]]), "must sum to 1.*row 0"),
    (lambda: calipers.log_loss([0, 2], [[0.5, 0.5], [0.5, 0.5]]), r"class indices 0 \.\. 1"),
    (lambda: calipers.log_loss([0, 1], P3[:2], labels=[0, 1]), "3 distinct classes"),
    (lambda: calipers.log_loss([0, 7], P3[:2], labels=[0, 1, 2]), "not in labels"),
    (lambda: calipers.log_loss([0], [[1.2, -0.2]]), "probabilities in"),
    (lambda: calipers.brier_score_loss([0, 1], P3[:2, :2] * 0 + 0.5, pos_label=1), "pos_label"),
    (lambda: calipers.brier_score_loss([0], [0.5], scale_by_half="yes"), "scale_by_half"),
])
def test_probability_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------
# Murphy decomposition
# --------------------------------------------------------------------------

def ref_murphy(f, o, w):
    f = [Fraction(x) for x in f]
    w = [Fraction(x) for x in w]
    W_ = sum(w)
    obar = sum(wi * oi for wi, oi in zip(w, o)) / W_
    rel = res = Fraction(0)
    for v in set(f):
        rows = [i for i, fi in enumerate(f) if fi == v]
        wg = sum(w[i] for i in rows)
        if wg == 0:
            continue
        og = sum(w[i] * o[i] for i in rows) / wg
        rel += wg * (v - og) ** 2 / W_
        res += wg * (og - obar) ** 2 / W_
    return rel, res, obar * (1 - obar)


def test_brier_decomposition_exact_for_discrete_forecasts(backend):
    got = to_np(backend.call(calipers.brier_decomposition, YB, PB, sample_weight=W))
    rel, res, unc = ref_murphy(PB, YB, W)
    np.testing.assert_allclose(got[1:], [float(rel), float(res), float(unc)],
                               rtol=backend.rtol() * 10, atol=1e-7 * (not backend.x64))
    np.testing.assert_allclose(got[0], skm.brier_score_loss(YB, PB, sample_weight=W),
                               rtol=backend.rtol() * 10)
    # adds up to the Brier score (exact in fractions: rel - res + unc == brier)
    brier = sum(Fraction(w) * (Fraction(p) - y) ** 2 for p, y, w in zip(PB, YB, W)) / sum(
        Fraction(w) for w in W)
    assert rel - res + unc == brier
    np.testing.assert_allclose(got[1] - got[2] + got[3], got[0], rtol=backend.rtol() * 100)


def test_brier_decomposition_multiclass_adds_up():
    d = calipers.brier_decomposition(Y3, P3)
    assert d.brier == pytest.approx(skm.brier_score_loss(Y3, P3), rel=1e-12)
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(d.brier, rel=1e-12)
    parts = [ref_murphy(P3[:, k], (Y3 == k).astype(int), np.ones(N)) for k in range(K)]
    assert d.reliability == pytest.approx(float(sum(p[0] for p in parts)), rel=1e-12)
    assert d.resolution == pytest.approx(float(sum(p[1] for p in parts)), rel=1e-12)
    assert d.uncertainty == pytest.approx(float(sum(p[2] for p in parts)), rel=1e-12)


def test_brier_decomposition_binned_is_approximate():
    p = RNG.random(300)
    y = (RNG.random(300) < p).astype(int)
    d = calipers.brier_decomposition(y, p, n_bins=10)
    bins = np.minimum(9, np.floor(p * 10)).astype(int)
    rel = res = 0.0
    for b in range(10):
        m = bins == b
        if m.any():
            rel += m.sum() * (p[m].mean() - y[m].mean()) ** 2 / 300
            res += m.sum() * (y[m].mean() - y.mean()) ** 2 / 300
    assert d.reliability == pytest.approx(rel, rel=1e-10)
    assert d.resolution == pytest.approx(res, rel=1e-10)
    assert d.brier == pytest.approx(np.mean((p - y) ** 2), rel=1e-12)
    assert abs(d.reliability - d.resolution + d.uncertainty - d.brier) < 0.01


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 1), st.integers(0, 3)),
                min_size=1, max_size=25))
def test_brier_decomposition_identity_property(rows):
    f = np.array([r[0] / 4 for r in rows])
    y = np.array([r[1] for r in rows])
    w = np.array([r[2] for r in rows], float)
    if w.sum() == 0:
        w[0] = 1.0
    d = calipers.brier_decomposition(y, f, sample_weight=w)
    rel, res, unc = ref_murphy(f, y, w)
    assert d.reliability == pytest.approx(float(rel), rel=1e-12, abs=1e-15)
    assert d.resolution == pytest.approx(float(res), rel=1e-12, abs=1e-15)
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(d.brier, abs=1e-12)


# --------------------------------------------------------------------------
# temperature scaling
# --------------------------------------------------------------------------

def _nll(Z, y, T):
    a = Z / T
    a = a - a.max(axis=1, keepdims=True)
    return float(np.mean(np.log(np.exp(a).sum(axis=1)) - a[np.arange(len(y)), y]))


ZL = RNG.normal(size=(N, K)) * 3
YL = np.array([RNG.choice(K, p=np.exp(z) / np.exp(z).sum()) for z in ZL * 0.4])


def test_fit_temperature_matches_scipy(backend):
    from scipy.optimize import minimize_scalar
    want = minimize_scalar(lambda t: _nll(ZL, YL, t), bounds=(0.01, 100), method="bounded",
                           options={"xatol": 1e-12}).x
    got = float(to_np(backend.call(calipers.fit_temperature, ZL, YL)))
    assert got == pytest.approx(want, rel=1e-6 if backend.x64 else 1e-3)
    # it is a minimum of the log loss
    assert _nll(ZL, YL, got) <= _nll(ZL, YL, got * 1.01) and _nll(ZL, YL, got) <= _nll(ZL, YL, got / 1.01)


def test_fit_temperature_binary_logits_and_weights():
    z = ZL[:, 1] - ZL[:, 0]
    y = (YL == 1).astype(int)
    t1 = calipers.fit_temperature(z, y)
    t2 = calipers.fit_temperature(np.stack([np.zeros_like(z), z], axis=1), y)
    assert t1 == pytest.approx(t2, rel=1e-12)
    w = RNG.integers(0, 3, len(y)).astype(float)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    assert calipers.fit_temperature(z, y, sample_weight=w) == pytest.approx(
        calipers.fit_temperature(z[rep], y[rep]), rel=1e-9)


def test_fit_temperature_bound_is_reported():
    z = np.array([[5.0, -5.0], [-5.0, 5.0]])
    with pytest.warns(RuntimeWarning, match="outside bounds"):
        t = calipers.fit_temperature(z, [0, 1], bounds=(0.5, 2.0))   # separable: T -> 0
    assert t == pytest.approx(0.5)


@pytest.mark.parametrize("call, match", [
    (lambda: calipers.fit_temperature(ZL, YL, bounds=(0, 1)), "bounds"),
    (lambda: calipers.fit_temperature(ZL[:, :1], YL), "K >= 2"),
    (lambda: calipers.fit_temperature(ZL, YL[:3]), "y_true has 3 elements"),
    (lambda: calipers.fit_temperature(ZL * np.nan, YL), "finite"),
    (lambda: calipers.fit_temperature(ZL, YL + 4), r"class indices 0 \.\. 2"),
])
def test_fit_temperature_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------
# the JAX eager fast path (one compiled program) keeps the eager contract
# --------------------------------------------------------------------------

def test_jax_eager_fast_path_keeps_errors_warnings_and_values():
    import jax.numpy as jnp

    from calipers._core import compile as _compile

    y, p = jnp.asarray(YB), jnp.asarray(PB)
    before = _compile.cache_info()
    a = calipers.expected_calibration_error(y, p, n_bins=7)
    first = _compile.cache_info()
    b = calipers.expected_calibration_error(y, p, n_bins=7)
    second = _compile.cache_info()
    assert first["misses"] == before["misses"] + 1  # compiled once
    assert second["misses"] == first["misses"] and second["hits"] == first["hits"] + 1  # reused
    assert float(a) == float(b) == pytest.approx(ref_ece(YB, PB, 7), rel=1e-12)
    # invalid values still raise eagerly (flags recorded in the compiled program; no rerun)
    eager_before = _compile.cache_info()["eager"]
    with pytest.raises(ValueError, match="probabilities in"):
        calipers.expected_calibration_error(y, p * 2, n_bins=7)
    with pytest.raises(ValueError, match="y_true must be non-zero for MAPE"):
        calipers.mean_absolute_percentage_error(jnp.asarray([1.0, 0.0]), jnp.asarray([1.0, 1.0]))
    # undefined values still warn
    with pytest.warns(calipers.UndefinedMetricWarning):
        calipers.r2_score(jnp.asarray([1.0, 1.0]), jnp.asarray([1.0, 2.0]))
    # a diagram with empty bins is a normal result (no eager rerun needed), equal to NumPy's
    d = calipers.reliability_diagram(y, p, n_bins=20)
    ref = calipers.reliability_diagram(YB, PB, n_bins=20)
    np.testing.assert_allclose(np.asarray(d.confidence), ref.confidence, rtol=1e-12)
    # eager-only warnings not tied to NaN survive (temperature at a bound)
    with pytest.warns(RuntimeWarning, match="outside bounds"):
        calipers.fit_temperature(jnp.asarray([[5.0, -5.0], [-5.0, 5.0]]), jnp.asarray([0, 1]),
                                 bounds=(0.5, 2.0))
    assert _compile.cache_info()["eager"] == eager_before  # nothing re-ran eagerly


def test_vmap_over_a_batch_of_evaluations():
    import jax
    import jax.numpy as jnp

    ys = np.stack([YB, 1 - YB])
    ps = np.stack([PB, PB[::-1]])
    ece = jax.vmap(lambda y, p: calipers.expected_calibration_error(y, p, n_bins=7))(
        jnp.asarray(ys), jnp.asarray(ps))
    np.testing.assert_allclose(np.asarray(ece), [ref_ece(y, p, 7) for y, p in zip(ys, ps)],
                               rtol=1e-12)
    T = jax.vmap(calipers.fit_temperature)(jnp.asarray(np.stack([ZL, ZL * 2])),
                                           jnp.asarray(np.stack([YL, YL])))
    np.testing.assert_allclose(np.asarray(T)[1], 2 * np.asarray(T)[0], rtol=1e-9)


def test_fit_temperature_negative_weight_under_jit_is_nan():
    """Eagerly a negative weight raises; under jit nothing can raise, so T is NaN."""
    import jax
    import jax.numpy as jnp

    z = jnp.asarray([[0.0, 2.0], [1.0, -1.0], [0.5, 0.2], [-1.0, 1.5]])
    y = jnp.asarray([1, 0, 0, 1])
    w = jnp.asarray([1.0, -5.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="sample_weight"):
        calipers.fit_temperature(np.asarray(z), np.asarray(y), sample_weight=np.asarray(w))
    t = jax.jit(lambda z, y, w: calipers.fit_temperature(z, y, sample_weight=w))(z, y, w)
    assert np.isnan(float(t))
    t_ok = jax.jit(lambda z, y, w: calipers.fit_temperature(z, y, sample_weight=w))(z, y, jnp.abs(w))
    assert np.isfinite(float(t_ok))
