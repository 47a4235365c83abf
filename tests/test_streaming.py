"""Streaming ROC AUC / AP histogram states and per-query ranking means.

References: calipers.roc_auc_score / average_precision_score (themselves tested
against scikit-learn) on the very same scores, exact fractions for the handed
cases, calipers.retrieval on the unpadded lists for the ranking batches.
"""

import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers import QueryMeanState, ROCHistogramState, ranking_batch_metrics
from calipers import retrieval as R
from calipers._streaming.histogram import _bin_index, _bin_lower_edges, _key_bits_arith
from conftest import to_np

RNG = np.random.default_rng(12)


def _exact(y, s, w=None):
    s = np.asarray(s, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (calipers.roc_auc_score(y, s, sample_weight=w),
                calipers.average_precision_score(y, s, sample_weight=w))


def _summary(state):
    return np.array([float(v) for v in state.compute()])


# --------------------------------------------------------------------------
# the key
# --------------------------------------------------------------------------

SPECIAL32 = np.array([0.0, -0.0, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38, -1.1754944e-38,
                      3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.25, 2.0, np.nextafter(1, 2),
                      np.nextafter(np.float32(1), np.float32(0))], dtype=np.float32)


def test_key_is_order_preserving_and_arithmetic_key_matches_bit_cast():
    x = np.concatenate([RNG.standard_normal(3000).astype(np.float32) * 10.0 ** RNG.integers(
        -40, 38, 3000), SPECIAL32]).astype(np.float32)
    x = x[np.isfinite(x)]
    o = np.argsort(x, kind="stable")
    for bits in (16, 19, 24):
        k = _bin_index(x, "float32", bits, np)
        assert np.all(np.diff(k[o]) >= 0)
        np.testing.assert_array_equal(k, _key_bits_arith(x, "float32", np) >> (32 - bits))
        if bits == 24:
            continue              # 2**24 edges: slow, and 16/19 bits exercise the same code
        # the lower edge of each score's bin is <= the score, the next bin's edge above it
        edges = _bin_lower_edges("float32", bits, np)
        assert np.all(edges[k] <= x)
        assert np.all(edges[np.minimum(k + 1, 2 ** bits - 1)][k + 1 < 2 ** bits] >
                      x[k + 1 < 2 ** bits])
    k24 = _bin_index(x, "float32", 24, np)
    assert k24[x == 0.0].min() == k24[x == 0.0].max()        # -0.0 and +0.0 share a bin
    h = np.concatenate([RNG.standard_normal(2000), [0.0, -0.0, 6e-8, -6e-8, 65504, -65504]]
                       ).astype(np.float16)
    kh = _bin_index(h, "float16", 16, np)
    np.testing.assert_array_equal(kh, _key_bits_arith(h, "float16", np))
    oh = np.argsort(h, kind="stable")
    assert np.all(np.diff(kh[oh]) >= 0)
    # distinct float16 values never share a bin of the float16 key
    assert len(np.unique(kh)) == len(np.unique(h.astype(np.float64)))


def test_float16_needs_19_bits_of_the_float32_key_bfloat16_needs_16():
    one, next16 = np.float16(1.0), np.nextafter(np.float16(1.0), np.float16(2.0))
    x = np.array([one, next16], dtype=np.float32)
    assert _bin_index(x, "float32", 16, np)[0] == _bin_index(x, "float32", 16, np)[1]
    assert _bin_index(x, "float32", 18, np)[0] == _bin_index(x, "float32", 18, np)[1]
    assert _bin_index(x, "float32", 19, np)[0] != _bin_index(x, "float32", 19, np)[1]
    # every bfloat16 value (all 2**16 bit patterns, finite ones) has a 16-bit bin of its own
    allb = np.arange(2 ** 16, dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    allb = np.unique(allb[np.isfinite(allb)])
    assert len(np.unique(_bin_index(allb, "float32", 16, np))) == len(allb)
    allh = np.arange(2 ** 16, dtype=np.uint16).view(np.float16)
    allh = np.unique(allh[np.isfinite(allh)])
    assert len(np.unique(_bin_index(allh, "float16", 16, np))) == len(allh)


# --------------------------------------------------------------------------
# handed cases
# --------------------------------------------------------------------------

# H32 (nci/scores#857, scikit-learn#9790): scores of exactly 1.0 and exactly on an
# interior grid point (0.25); a >=-rule peer drops the (0, 0) point (0.5667), a
# >-rule peer moves 0.25 to the bin below (0.6).
H32_Y = [1, 1, 0, 1, 0, 1, 1, 0]
H32_S = [1.0, 1.0, 1.0, 0.75, 0.5, 0.5, 0.25, 0.0]


def test_h32_top_and_interior_edge_scores(backend):
    def run(y, s):
        st_ = ROCHistogramState.init(16, xp=backend.xp).update(y, s)
        return st_.compute(), st_

    summary, state = backend.call(run, H32_Y, H32_S)
    tol = 1e-12 if backend.x64 else 1e-6
    assert abs(float(summary.roc_auc) - 0.6333333333333333) < tol
    assert abs(float(summary.average_precision) - 0.6928571428571428) < tol
    bins = _bin_index(np.asarray(H32_S, np.float32), "float32", 16, np)
    edges = _bin_lower_edges("float32", 16, np)
    # 1.0 and 0.25 sit on their own bins' lower edges, not in the bin below
    np.testing.assert_array_equal(edges[bins], H32_S)
    pos, neg = to_np(state.pos), to_np(state.neg)
    assert pos[bins[0]] == 2 and neg[bins[0]] == 1 and pos[bins[6]] == 1
    if backend.name == "numpy":
        fpr, tpr, thr = state.roc_curve()
        assert fpr[0] == 0 and tpr[0] == 0 and thr[0] == np.inf   # the (0, 0) point
        assert fpr[-1] == 1 and tpr[-1] == 1
        assert np.trapezoid(tpr, fpr) == pytest.approx(0.6333333333333333, abs=1e-12)


# H33 (torchmetrics#2873, #1989): two batches merged equal one pass; no per-batch
# transform of the scores.
H33_BATCHES = [([1, 0, 0, 1, 0], [0.8125, 0.5, 0.0625, 0.5, 0.375]),
               ([1, 1, 0, 0, 1, 0], [0.9375, 0.25, 0.25, 0.5625, 0.625, 0.0625])]
H33_LOGITS = [([0, 1], [0.9, 0.2]), ([1, 0], [1.5, 3.0])]


def test_h33_merge_of_two_batches_equals_one_pass(backend):
    (y1, s1), (y2, s2) = H33_BATCHES
    y, s = y1 + y2, s1 + s2

    def run(y1, s1, y2, s2, y, s):
        a = ROCHistogramState.init(16, xp=backend.xp).update(y1, s1)
        b = ROCHistogramState.init(16, xp=backend.xp).update(y2, s2)
        one = ROCHistogramState.init(16, xp=backend.xp).update(y, s)
        return a.merge(b), b.merge(a), one

    ab, ba, one = backend.call(run, y1, s1, y2, s2, y, s)
    for x, z in ((ab, one), (ba, one)):
        for fx, fz in zip(x, z):
            np.testing.assert_array_equal(to_np(fx), to_np(fz))
    got = _summary(ab)
    tol = 1e-12 if backend.x64 else 1e-6
    assert abs(got[0] - 0.8333333333333334) < tol
    assert abs(got[2] - 0.8444444444444444) < tol
    # raw logits, one batch or two: the same 0.25 (nothing is squashed per batch)
    (ly1, ls1), (ly2, ls2) = H33_LOGITS
    two = ROCHistogramState.init(16).update(ly1, ls1).merge(
        ROCHistogramState.init(16).update(ly2, ls2))
    whole = ROCHistogramState.init(16).update(ly1 + ly2, ls1 + ls2)
    assert float(two.compute().roc_auc) == float(whole.compute().roc_auc) == 0.25


# --------------------------------------------------------------------------
# exact on 16-bit scores
# --------------------------------------------------------------------------

def _bf16_scores(n, rng):
    # few distinct values: many ties; both signs and a wide range
    base = rng.standard_normal(n // 4 + 1) * 10.0 ** rng.integers(-3, 3, n // 4 + 1)
    return rng.choice(base, n).astype(ml_dtypes.bfloat16).astype(np.float32)


@pytest.mark.parametrize("bits", [16, 20])
def test_exact_on_bfloat16_scores(backend, bits):
    rng = np.random.default_rng(bits)
    s = _bf16_scores(400, rng)
    y = rng.integers(0, 2, 400)
    want = _exact(y, s)
    got = backend.call(lambda y, s: ROCHistogramState.init(bits, xp=backend.xp)
                       .update(y, s).compute(), y, s)
    if backend.x64:
        assert float(got.roc_auc) == want[0]
        assert float(got.average_precision) == pytest.approx(want[1], rel=1e-14, abs=0)
    else:
        np.testing.assert_allclose([float(got.roc_auc), float(got.average_precision)], want,
                                   rtol=2e-6)


def test_numpy_bfloat16_array_is_exact():
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 300)
    sb = _bf16_scores(300, rng).astype(ml_dtypes.bfloat16)
    got = ROCHistogramState.init(16).update(y, sb).compute()
    assert got.roc_auc == _exact(y, sb.astype(np.float64))[0]


def test_exact_on_jax_bfloat16_and_float16_arrays():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 500)
    sb = _bf16_scores(500, rng)
    sh = rng.choice(rng.standard_normal(100) * 30, 500).astype(np.float16)
    for dtype, vals, kw in ((jnp.bfloat16, sb, {}), (jnp.float16, sh, {"score_dtype": "float16"})):
        want = _exact(y, vals.astype(np.float64))
        arr = jnp.asarray(vals, dtype=dtype)

        def run(y, s, kw=kw):
            return ROCHistogramState.init(16, xp=jnp, **kw).update(y, s).compute()

        for got in (run(jnp.asarray(y), arr), jax.jit(run)(jnp.asarray(y), arr)):
            assert float(got.roc_auc) == want[0]
            assert float(got.average_precision) == pytest.approx(want[1], rel=1e-14)


def test_exact_on_float16_numpy_and_19_bit_float32_key():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 600)
    sh = rng.choice(rng.standard_normal(150), 600).astype(np.float16)
    want = _exact(y, sh)
    got16 = ROCHistogramState.init(16, score_dtype="float16").update(y, sh).compute()
    got19 = ROCHistogramState.init(19).update(y, sh).compute()
    for got in (got16, got19):
        assert got.roc_auc == want[0]
        assert got.average_precision == pytest.approx(want[1], rel=1e-14)
    # float32 key at 16 bits: float16 scores may share bins; the bound then covers it
    got = ROCHistogramState.init(16).update(y, sh).compute()
    assert abs(got.roc_auc - want[0]) <= got.roc_auc_bound + 1e-15


# --------------------------------------------------------------------------
# the bound holds on float32/float64 scores, random and adversarial
# --------------------------------------------------------------------------

def _check_bound(y, s, bits=16, w=None):
    y = np.asarray(y)
    if y.min() == y.max():
        return
    weighted = w is not None and np.asarray(w).dtype.kind == "f"
    state = ROCHistogramState.init(bits, weighted=weighted).update(y, s, sample_weight=w)
    e_auc, e_ap = _exact(y, s, w)
    if np.isnan(e_auc):           # a class with zero weight
        return
    auc, auc_b, ap, ap_b = state.compute()
    assert abs(auc - e_auc) <= auc_b + 1e-12, (auc, e_auc, auc_b)
    assert abs(ap - e_ap) <= ap_b + 1e-12, (ap, e_ap, ap_b)
    assert 0 <= auc_b <= 0.5 and 0 <= ap_b <= 1


def _adversarial(draw_kind, n, rng):
    if draw_kind == 0:   # many scores inside one bin (distinct float32 values)
        return (np.float32(0.3) + rng.integers(0, 200, n) * np.float32(2 ** -25)).astype(
            np.float64)
    if draw_kind == 1:   # scores exactly on 16-bit bin edges (bfloat16 values) and next to them
        e = rng.standard_normal(n).astype(ml_dtypes.bfloat16).astype(np.float32)
        nudge = rng.integers(-1, 2, n)
        return np.where(nudge == 0, e, np.nextafter(e, np.where(nudge > 0, np.inf, -np.inf)))
    if draw_kind == 2:   # everything in one bin
        return 0.5 + rng.random(n) * 2 ** -12
    if draw_kind == 3:   # float64 values that collapse in float32
        return 1.0 + rng.integers(0, 50, n) * 2.0 ** -40
    return rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 4), st.integers(2, 120), st.integers(0, 2 ** 32 - 1),
       st.sampled_from([16, 18, 20]), st.sampled_from([None, "int", "float"]))
def test_error_never_exceeds_the_bound(kind, n, seed, bits, weights):
    rng = np.random.default_rng(seed)
    s = _adversarial(kind, n, rng)
    p = rng.random()
    y = (rng.random(n) < p).astype(int)
    w = None
    if weights == "int":
        w = rng.integers(0, 4, n)
    elif weights == "float":
        w = rng.random(n) * 3
    _check_bound(y, s, bits, w)
    _check_bound(y, s.astype(np.float32), bits, w)


def test_bounds_are_reached_by_extreme_orders_inside_one_bin():
    # One 16-bit bin holding distinct float64 scores: the order inside it is free.
    def in_one_bin(n):
        return 1.0 + np.arange(n) * 2.0 ** -30

    # 3 negatives, 4 positives: the AUC bound is reached at both ends
    up = in_one_bin(7)
    y_best = np.array([0, 0, 0, 1, 1, 1, 1])
    auc, auc_b, ap, ap_b = ROCHistogramState.init(16).update(y_best, up).compute()
    assert auc == 0.5 and auc_b == 0.5
    assert calipers.roc_auc_score(y_best, up) == auc + auc_b
    assert calipers.roc_auc_score(y_best[::-1], up) == auc - auc_b
    # AP's upper end (every positive tied above every negative) is reached exactly
    top = calipers.average_precision_score(y_best, np.where(y_best == 1, 2.0, 1.0))
    assert top == pytest.approx(ap + ap_b, abs=1e-15)
    assert calipers.average_precision_score(y_best[::-1], up) >= ap - ap_b
    # 20 positives under 1 negative: the lower end dominates and is reached up to
    # the midpoint-rule slack of the harmonic sum
    y = np.array([0] + [1] * 20)
    ap, ap_b = ROCHistogramState.init(16).update(y, in_one_bin(21)).compute()[2:]
    worst = calipers.average_precision_score(y, -in_one_bin(21))   # the negative on top
    assert ap - worst <= ap_b and ap - worst >= ap_b - 1e-3
    assert np.mean([j / (j + 1) for j in range(1, 21)]) == pytest.approx(worst, abs=1e-14)


def test_merge_of_many_batches_equals_one_pass():
    rng = np.random.default_rng(9)
    n = 5000
    y = rng.integers(0, 2, n)
    s = rng.standard_normal(n)
    cuts = np.sort(rng.integers(0, n, 30))
    parts = np.split(np.arange(n), cuts)
    merged = ROCHistogramState.init(20)
    for idx in parts[::-1]:                          # any order
        merged = merged.merge(ROCHistogramState.init(20).update(y[idx], s[idx]))
    one = ROCHistogramState.init(20).update(y, s)
    for a, b in zip(merged, one):
        np.testing.assert_array_equal(a, b)
    assert merged.compute() == one.compute()
    # weighted: float counts of dyadic weights add exactly too
    w = rng.integers(0, 8, n) / 4
    mw = ROCHistogramState.init(16, weighted=True)
    for idx in parts:
        mw = mw.merge(ROCHistogramState.init(16, weighted=True).update(y[idx], s[idx],
                                                                      sample_weight=w[idx]))
    ow = ROCHistogramState.init(16, weighted=True).update(y, s, sample_weight=w)
    for a, b in zip(mw, ow):
        np.testing.assert_array_equal(a, b)


def test_jit_equals_eager_state_is_a_pytree_and_no_recompile():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(2)
    y, s = jnp.asarray(rng.integers(0, 2, 300)), jnp.asarray(rng.standard_normal(300))
    traces = []

    def step(state, y, s):
        traces.append(1)
        return state.update(y, s)

    jstep = jax.jit(step)
    st0 = ROCHistogramState.init(18, xp=jnp)
    a = jstep(jstep(st0, y, s), y, s)
    b = st0.update(y, s).update(y, s)
    assert len(traces) == 1                          # second call: same shapes, no retrace
    for x, z in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(z))
    assert tuple(jax.jit(lambda t: t.compute())(a)) == tuple(b.compute())
    leaves, tree = jax.tree_util.tree_flatten(a)
    assert len(leaves) == 3
    rebuilt = jax.tree_util.tree_unflatten(tree, leaves)
    assert type(rebuilt) is ROCHistogramState and rebuilt.bits == 18
    f16 = ROCHistogramState.init(16, score_dtype="float16", xp=jnp)
    assert type(jax.tree_util.tree_map(lambda x: x, f16)) is type(f16)
    assert f16.score_dtype == "float16"


def test_invalid_batch_under_jit_gives_nan_and_eager_raises():
    import jax
    import jax.numpy as jnp

    bad = jnp.asarray([0.1, jnp.nan, 0.3])
    y = jnp.asarray([0, 1, 1])
    st_ = jax.jit(lambda y, s: ROCHistogramState.init(16, xp=jnp).update(y, s))(y, bad)
    assert int(st_.invalid) == 1 and int(st_.pos.sum() + st_.neg.sum()) == 2
    assert all(np.isnan(float(v)) for v in st_.compute())
    with pytest.raises(ValueError, match="y_score must be finite"):
        ROCHistogramState.init(16, xp=jnp).update(y, bad)
    with pytest.raises(ValueError, match="y_true must contain only 0 and 1"):
        ROCHistogramState.init(16, xp=jnp).update(jnp.asarray([0, 2, 1]),
                                                  jnp.asarray([0.1, 0.2, 0.3]))
    # under jit a bad label marks the batch invalid as well
    st2 = jax.jit(lambda y, s: ROCHistogramState.init(16, xp=jnp).update(y, s))(
        jnp.asarray([0, 2, 1]), jnp.asarray([0.1, 0.2, 0.3]))
    assert int(st2.invalid) == 1


@pytest.mark.parametrize("bad", [-1.0, np.inf, np.nan])
def test_bad_weight_under_jit_marks_the_batch_invalid(bad):
    # the same weight rule as every metric: negative or non-finite weights are invalid
    import jax
    import jax.numpy as jnp

    w = jnp.asarray([1.0, bad, 1.0])
    st_ = jax.jit(lambda y, s, w: ROCHistogramState.init(16, weighted=True, xp=jnp).update(
        y, s, sample_weight=w))(jnp.asarray([0, 1, 1]), jnp.asarray([0.1, 0.2, 0.3]), w)
    assert int(st_.invalid) == 1
    assert all(np.isnan(float(v)) for v in st_.compute())


def test_one_class_is_undefined_with_a_warning():
    with pytest.warns(calipers.UndefinedMetricWarning, match="AUC and AP are undefined"):
        out = ROCHistogramState.init(16).update([0, 0], [0.1, 0.2]).compute()
    assert all(np.isnan(v) for v in out)
    with pytest.warns(calipers.UndefinedMetricWarning, match="AUC is undefined"):
        out = ROCHistogramState.init(16).update([1, 1], [0.1, 0.2]).compute()
    assert np.isnan(out.roc_auc) and out.average_precision == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda: ROCHistogramState.init(7), r"bits must be in 8 \.\. 24"),
    (lambda: ROCHistogramState.init(25), r"bits must be in 8 \.\. 24"),
    (lambda: ROCHistogramState.init(20, score_dtype="float16"),
     r"bits must be in 8 \.\. 16 with score_dtype"),
    (lambda: ROCHistogramState.init(16, score_dtype="int8"), "score_dtype"),
    (lambda: ROCHistogramState.init(16, score_dtype="float16").update([0, 1], [0.1, 0.2]),
     "keys float16 scores"),
    (lambda: ROCHistogramState.init(16).update([0, 1], [0.1, 0.2], sample_weight=[0.5, 1.0]),
     "weighted=True"),
    (lambda: ROCHistogramState.init(16, weighted=True).update([0, 1], [0.1, 0.2],
                                                              sample_weight=[-1.0, 1.0]),
     "non-negative"),
    (lambda: ROCHistogramState.init(16).update([0, 1], [True, False]), "not booleans"),
    (lambda: ROCHistogramState.init(16).update([0, 1], [0.1]), "y_score has 1 elements"),
    (lambda: ROCHistogramState.init(16).merge(ROCHistogramState.init(17)), "shapes differ"),
    (lambda: ROCHistogramState.init(16).merge(
        ROCHistogramState.init(16, score_dtype="float16")), "cannot merge"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_integer_weights_are_repetitions():
    rng = np.random.default_rng(5)
    y, s = rng.integers(0, 2, 50), rng.integers(0, 8, 50) / 8
    w = rng.integers(0, 4, 50)
    a = ROCHistogramState.init(16).update(y, s, sample_weight=w)
    b = ROCHistogramState.init(16).update(np.repeat(y, w), np.repeat(s, w))
    for x, z in zip(a, b):
        np.testing.assert_array_equal(x, z)
    assert a.neg.dtype == np.int64
    assert a.compute().roc_auc == calipers.roc_auc_score(y, s, sample_weight=w)


# --------------------------------------------------------------------------
# per-query ranking batches
# --------------------------------------------------------------------------

def _ranking_data(rng, Q=12, L=9):
    y = rng.integers(0, 4, (Q, L)) * (rng.random((Q, L)) < 0.4)
    s = rng.integers(0, 5, (Q, L)).astype(float)          # many ties
    mask = rng.random((Q, L)) < 0.75
    mask[0] = False                                       # a query with no item
    y[1] = 0                                              # a query with no relevant item
    s[~mask] = np.nan                                     # padding may hold garbage
    return y, s, mask


def _reference(y, s, mask, k):
    Q, L = y.shape
    qid = np.broadcast_to(np.arange(Q)[:, None], (Q, L))[mask]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = dict(num_segments=Q)
        nd = R.ndcg(y[mask], s[mask], qid, k=k, **kw).values
        rr = R.reciprocal_rank(y[mask], s[mask], qid, **kw).values
        rc = R.recall_at_k(y[mask], s[mask], qid, k=k, **kw).values
    return np.stack([nd, rr, rc])


def test_ranking_batch_equals_retrieval_on_unpadded_lists(backend):
    rng = np.random.default_rng(21)
    y, s, mask = _ranking_data(rng)
    want = _reference(y, s, mask, 3)

    def run(y, s, m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = ranking_batch_metrics(y, s, m, k=3)
        return b, QueryMeanState.init(xp=backend.xp).update(b).compute()

    b, summary = backend.call(run, y, s, mask)
    got = np.stack([to_np(b.ndcg), to_np(b.reciprocal_rank), to_np(b.recall)])
    rtol = 1e-12 if backend.x64 else 2e-6
    np.testing.assert_allclose(got, want, rtol=rtol, equal_nan=True)
    assert not bool(b.invalid)
    np.testing.assert_allclose(to_np(summary.mean), np.nanmean(want, axis=1), rtol=rtol)
    # H42: query 0 has no real item: padding, neither counted nor undefined
    real = mask.any(axis=1)
    np.testing.assert_array_equal(to_np(b.query_mask), real)
    np.testing.assert_array_equal(to_np(summary.n_undefined),
                                  (np.isnan(want) & real).sum(axis=1))
    np.testing.assert_array_equal(to_np(summary.count), (~np.isnan(want)).sum(axis=1))


def test_ranking_batch_ties_are_averaged():
    # one query: relevant item tied with two non-relevant ones at the top
    y = np.array([[0, 1, 0, 0]])
    s = np.array([[0.5, 0.5, 0.5, 0.1]])
    b = ranking_batch_metrics(y, s, k=1)
    assert b.reciprocal_rank[0] == pytest.approx((1 + 1 / 2 + 1 / 3) / 3)
    assert b.recall[0] == pytest.approx(1 / 3)
    assert b.ndcg[0] == pytest.approx(1 / 3)
    # row order inside the tie does not matter
    b2 = ranking_batch_metrics(y[:, [1, 0, 2, 3]], s, k=1)
    assert [float(v[0]) for v in b2[:3]] == [float(v[0]) for v in b[:3]]


def test_query_mean_state_merge_and_jit():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(22)
    y, s, mask = _ranking_data(rng, Q=16)

    @jax.jit
    def step(state, y, s, m):
        return state.update(ranking_batch_metrics(y, s, m, k=5))

    st0 = QueryMeanState.init(xp=jnp)
    halves = [step(st0, jnp.asarray(y[i:i + 8]), jnp.asarray(s[i:i + 8]),
                   jnp.asarray(mask[i:i + 8])) for i in (0, 8)]
    merged = halves[0].merge(halves[1]).compute()
    want = _reference(y, s, mask, 5)
    np.testing.assert_allclose(np.asarray(merged.mean), np.nanmean(want, axis=1), rtol=1e-12)
    # H42: query 0 (no real item) is padding, not an undefined query
    np.testing.assert_array_equal(np.asarray(merged.n_undefined),
                                  (np.isnan(want) & mask.any(axis=1)).sum(axis=1))
    # NaN in a real item: invalid under jit, the mean NaN
    s_bad = s.copy()
    s_bad[2, np.argmax(mask[2])] = np.nan
    bad = step(st0, jnp.asarray(y), jnp.asarray(s_bad), jnp.asarray(mask))
    assert int(bad.invalid) == 1 and np.all(np.isnan(np.asarray(bad.compute().mean)))
    with pytest.raises(ValueError, match="finite"):
        ranking_batch_metrics(y, s_bad, mask)


def test_ranking_batch_errors_and_warning():
    y = np.zeros((2, 3))
    with pytest.raises(ValueError, match="2-D"):
        ranking_batch_metrics(y[0], y[0])
    with pytest.raises(ValueError, match="mask must be boolean or 0/1"):
        ranking_batch_metrics(y, y, np.full((2, 3), 0.5))
    with pytest.raises(ValueError, match="k must be a positive integer"):
        ranking_batch_metrics(y, y, k=0)
    with pytest.raises(ValueError, match="holds 3 metric"):
        QueryMeanState.init().update(np.zeros((2, 4)))
    with pytest.warns(calipers.UndefinedMetricWarning, match="2 of 2 queries"):
        ranking_batch_metrics(y, y)


# --------------------------------------------------------------------------
# shard_map + psum on 4 forced CPU devices
# --------------------------------------------------------------------------

SHARDED = textwrap.dedent(r"""
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import sys
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import PartitionSpec as P
    x64 = sys.argv[1] == "x64"
    jax.config.update("jax_enable_x64", x64)
    import calipers
    from calipers import QueryMeanState, ROCHistogramState, ranking_batch_metrics

    assert jax.device_count() == 4, jax.devices()
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from jax.experimental.shard_map import shard_map
    mesh = jax.make_mesh((4,), ("d",))
    rng = np.random.default_rng(6)
    n = 4096
    y = rng.integers(0, 2, n)
    s = rng.standard_normal(n).astype(np.float32)
    Q, L = 32, 10
    yq = rng.integers(0, 3, (Q, L)) * (rng.random((Q, L)) < 0.3)
    sq = rng.integers(0, 6, (Q, L)).astype(np.float32)
    mq = rng.random((Q, L)) < 0.8

    def local(y, s, yq, sq, mq):
        roc = ROCHistogramState.init(20, xp=jnp).update(y, s)
        qm = QueryMeanState.init(xp=jnp).update(ranking_batch_metrics(yq, sq, mq, k=5))
        return jax.lax.psum((roc, qm), "d")

    f = jax.jit(shard_map(local, mesh=mesh, in_specs=(P("d"),) * 5, out_specs=P()))
    sh = jax.sharding.NamedSharding(mesh, P("d"))
    args = [jax.device_put(jnp.asarray(a), sh) for a in (y, s, yq, sq, mq)]
    assert len(args[0].addressable_shards) == 4
    roc, qm = f(*args)
    one = ROCHistogramState.init(20, xp=jnp).update(jnp.asarray(y), jnp.asarray(s))
    for a, b in zip(roc, one):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    assert tuple(map(float, roc.compute())) == tuple(map(float, one.compute()))
    qone = QueryMeanState.init(xp=jnp).update(ranking_batch_metrics(
        jnp.asarray(yq), jnp.asarray(sq), jnp.asarray(mq), k=5))
    np.testing.assert_array_equal(np.asarray(qm.count), np.asarray(qone.count))
    np.testing.assert_array_equal(np.asarray(qm.n_undefined), np.asarray(qone.n_undefined))
    np.testing.assert_allclose(np.asarray(qm.compute().mean), np.asarray(qone.compute().mean),
                               rtol=1e-12 if x64 else 1e-6)
    print("SHARDED-OK", roc.neg.dtype)
""")


@pytest.mark.parametrize("mode", ["x64", "x32"])
def test_states_under_shard_map_psum_on_4_cpu_devices(tmp_path, mode):
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parents[1] / "src") + os.pathsep + \
        env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "SHARDED-OK" in res.stdout
    assert ("int64" if mode == "x64" else "int32") in res.stdout


def test_docs_training_loop_example_runs(tmp_path):
    """The example of docs/streaming.md, as written, on 4 forced CPU devices."""
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    text = (root / "docs" / "streaming.md").read_text()
    # the worked example is the page's one block with shard_map; the others are
    # fragments about single states (the self-contained ones run below)
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "shard_map" in b]
    assert len(blocks) == 1
    script = tmp_path / "example.py"
    script.write_text(blocks[0])
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_ENABLE_X64")}
    env["PYTHONPATH"] = str(root / "src") + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "AUC" in res.stdout and "NDCG@5" in res.stdout


def test_docs_streaming_self_contained_blocks_run():
    """The page's blocks that import what they use (the multiclass AUC example) run as
    written and give the one-shot one-vs-rest value."""
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    text = (root / "docs" / "streaming.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S)
              if b.startswith("import numpy") and "shard_map" not in b]
    multiclass = [b for b in blocks if "MulticlassROCHistogramState" in b]
    assert len(multiclass) == 1
    for b in blocks:
        ns: dict = {}
        exec(compile(b, "docs/streaming.md", "exec"), ns)
        if b is multiclass[0]:
            y, z = ns["y"], ns["logits"]
            want = np.mean([calipers.roc_auc_score(y == c, z[:, c]) for c in range(3)])
            assert float(ns["out"].roc_auc) == pytest.approx(want, abs=1e-12)


def test_device_benchmark_smoke_runs_on_cpu(tmp_path):
    """benchmarks/device.py --smoke: every measurement runs (no timing is asserted)."""
    root = pathlib.Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = str(root / "src") + os.pathsep + env.get("PYTHONPATH", "")
    out = tmp_path / "device.json"
    res = subprocess.run([sys.executable, str(root / "benchmarks" / "device.py"), "--smoke",
                          "--repeat", "1", "--compare-cpu", "--json", str(out)], capture_output=True, text=True,
                         env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    import json

    got = json.loads(out.read_text())["device_results"]
    for key in ("sort", "auc", "ap", "ndcg@10", "ranking_batch", "roc_state_update bits=16",
                "roc_state_compute bits=16"):
        assert key in got and got[key][2] > 0, key
    assert any(k.startswith("bootstrap") for k in got)
    cpu = json.loads(out.read_text())["cpu_results"]
    assert set(cpu) == set(got)
    assert "CPU/dev" in res.stdout


def test_roc_curve_from_the_state_integrates_to_its_auc(backend):
    rng = np.random.default_rng(31)
    y, s = rng.integers(0, 2, 400), rng.standard_normal(400) * 3

    def run(y, s):
        st_ = ROCHistogramState.init(16, xp=backend.xp).update(y, s)
        return st_.roc_curve(), st_.compute().roc_auc

    (fpr, tpr, thr), auc = backend.call(run, y, s)
    fpr, tpr, thr = to_np(fpr), to_np(tpr), to_np(thr)
    assert len(fpr) == 2 ** 16 + 1 and fpr[0] == 0 and tpr[0] == 0 and thr[0] == np.inf
    assert np.all(thr[1:] <= thr[:-1]) and np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    tol = 1e-12 if backend.x64 else 1e-5
    assert abs(np.trapezoid(tpr, fpr) - float(auc)) < tol
    # a row is positive iff its score is >= the threshold of its bin's point
    bins = _bin_index(s.astype(np.float32), "float32", 16, np)
    edges = _bin_lower_edges("float32", 16, np)
    assert np.all(edges[bins] <= s.astype(np.float32))


# --------------------------------------------------------------------------
# resolutions below 16 bits: coarser bins, the bound still holds and is looser
# --------------------------------------------------------------------------

def _pairs_auc(y, s):
    pos, neg = s[y == 1], s[y == 0]
    d = pos[:, None] - neg[None, :]
    return ((d > 0).sum() + 0.5 * (d == 0).sum()) / (pos.size * neg.size)


@pytest.mark.parametrize("score_dtype", ["float32", "float16"])
def test_low_resolutions_keep_the_bound_and_merge_exactly(score_dtype):
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 3000)
    s = (rng.normal(size=3000) + y).astype(np.float16 if score_dtype == "float16" else np.float32)
    exact = _pairs_auc(y, s.astype(np.float64))
    top = 16 if score_dtype == "float16" else 24
    bounds = []
    for bits in (8, 10, 12, 14, top):
        st_ = ROCHistogramState.init(bits, score_dtype=score_dtype).update(y, s)
        out = st_.compute()
        assert abs(float(out.roc_auc) - exact) <= float(out.roc_auc_bound) + 1e-12
        bounds.append(float(out.roc_auc_bound))
        # any split of the rows: the same integer counts
        parts = [ROCHistogramState.init(bits, score_dtype=score_dtype).update(y[a:b], s[a:b])
                 for a, b in ((0, 700), (700, 701), (701, 3000))]
        merged = parts[0].merge(parts[1]).merge(parts[2])
        for f, g in zip(merged, st_):
            np.testing.assert_array_equal(np.asarray(f), np.asarray(g))
        assert np.asarray(st_[0]).shape[-1] == 2 ** bits
    # a coarser histogram's bins are unions of finer ones: its bound is never smaller
    assert all(a >= b for a, b in zip(bounds, bounds[1:]))
    assert bounds[0] > bounds[-1]
    with pytest.raises(ValueError):
        ROCHistogramState.init(8, score_dtype=score_dtype).merge(
            ROCHistogramState.init(10, score_dtype=score_dtype))


def test_low_resolution_exact_on_its_own_grid():
    # scores that are bin lower edges at 10 bits (sign, exponent, 1 mantissa bit) are exact
    edges = np.asarray(_bin_lower_edges("float32", 10, np), dtype=np.float64)
    grid = edges[np.isfinite(edges) & (np.abs(edges) > 1e-3) & (np.abs(edges) < 1e3)]
    rng = np.random.default_rng(3)
    s = rng.choice(grid, 2000)
    y = (rng.random(2000) < 0.5 + 0.5 * np.tanh(s / 2)).astype(np.int64)
    out = ROCHistogramState.init(10).update(y, s).compute()
    assert float(out.roc_auc) == pytest.approx(_pairs_auc(y, s), abs=1e-12)


def test_docs_streaming_mesh_block_runs_on_four_devices(tmp_path):
    """The page's Explicit / Auto mesh block, as written, on 4 forced CPU devices (rows
    sharded over 4 devices on a default jax.make_mesh mesh: the reshard is exercised)."""
    import re

    root = pathlib.Path(__file__).resolve().parents[1]
    text = (root / "docs" / "streaming.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "AxisType" in b]
    assert len(blocks) == 1
    script = tmp_path / "mesh.py"
    script.write_text('import os\nos.environ["XLA_FLAGS"] = '
                      '"--xla_force_host_platform_device_count=4"\n'
                      'os.environ["JAX_PLATFORMS"] = "cpu"\n' + blocks[0]
                      + '\nassert jax.device_count() == 4\nprint("MESH-DOC-OK")\n')
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_ENABLE_X64")}
    env["PYTHONPATH"] = str(root / "src") + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "MESH-DOC-OK" in res.stdout
