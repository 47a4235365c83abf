"""MulticlassROCHistogramState: one-vs-rest AUC streamed, against scikit-learn.

Scores are bfloat16 values (any logits cast to bfloat16), on which the 16-bit key
is exact, so the streamed AUC equals the one-shot value; elsewhere it stays within
the reported bound.
"""

import warnings

import ml_dtypes
import numpy as np
import pytest
import sklearn.metrics as skm

import calipers
from calipers import MulticlassROCHistogramState


def _data(n=900, C=5, seed=0, bf16=True):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, n)
    z = rng.normal(size=(n, C)) + 1.2 * np.eye(C)[y]
    if bf16:
        z = z.astype(ml_dtypes.bfloat16).astype(np.float32)
    return y, z


def _sk(y, z, average, C):
    per = np.array([skm.roc_auc_score(y == c, z[:, c]) for c in range(C)])
    if average is None:
        return per
    if average == "macro":
        return per.mean()
    return np.average(per, weights=np.bincount(y, minlength=C))


@pytest.mark.parametrize("average", ["macro", "weighted", None])
def test_streamed_equals_one_vs_rest_sklearn(average):
    y, z = _data()
    st = MulticlassROCHistogramState.init(5)
    for a in range(0, len(y), 128):                    # ragged last batch
        st = st.update(y[a:a + 128], z[a:a + 128])
    out = st.compute(average)
    np.testing.assert_allclose(np.asarray(out.roc_auc), _sk(y, z, average, 5), rtol=0,
                               atol=1e-12)
    np.testing.assert_array_equal(np.asarray(out.support), np.bincount(y, minlength=5))


def _softmax_in_64ths(z):
    """Softmax probabilities rounded to multiples of 1/64 whose rows sum to exactly 1
    (largest remainder): bfloat16 values, and valid ``multi_class="ovr"`` input."""
    p = np.exp(z - z.max(1, keepdims=True))
    p = 64 * p / p.sum(1, keepdims=True)
    k = np.floor(p).astype(int)
    short = 64 - k.sum(1)
    order = np.argsort(-(p - k), axis=1, kind="stable")
    for i in range(len(k)):
        k[i, order[i, :short[i]]] += 1
    assert (k.sum(1) == 64).all()
    return k / 64.0


def test_probabilities_of_a_softmax_model_match_sklearn_ovr():
    # sklearn's multi_class="ovr" on probabilities: the same per-column OvR definition.
    # k/64 values are bfloat16 numbers, one bin each at 16 bits, and the rows already sum
    # to 1, so sklearn sees the very scores the state does: the streamed AUC is the exact
    # value (the docs' rule), and only float64 rounding of the two sums separates them.
    y, z = _data(bf16=False)
    p = _softmax_in_64ths(z)
    out = MulticlassROCHistogramState.init(5).update(y, p.astype(np.float32)).compute(
        "weighted")
    want = skm.roc_auc_score(y, p, multi_class="ovr", average="weighted")
    assert float(out.roc_auc) == pytest.approx(want, rel=0, abs=1e-12)
    assert float(out.roc_auc_bound) > 0        # real ties share bins: a worst case, not 0


def test_float_scores_within_the_bound_and_coarser_is_looser():
    y, z = _data(bf16=False, seed=4)
    exact = _sk(y, z, "macro", 5)
    b = []
    for bits in (10, 16, 20):
        out = MulticlassROCHistogramState.init(5, bits).update(y, z).compute()
        assert abs(float(out.roc_auc) - exact) <= float(out.roc_auc_bound) + 1e-12
        b.append(float(out.roc_auc_bound))
    assert b[0] >= b[1] >= b[2]


def test_mask_and_split_merge_bit_for_bit():
    y, z = _data(seed=2)
    mask = np.ones(len(y), bool)
    mask[-77:] = False
    y_pad = y.copy()
    y_pad[-77:] = 99                                 # padding: never checked
    z_pad = z.copy()
    z_pad[-77:] = np.nan
    full = MulticlassROCHistogramState.init(5).update(y_pad, z_pad, mask=mask)
    ref = MulticlassROCHistogramState.init(5).update(y[mask], z[mask])
    parts = [MulticlassROCHistogramState.init(5).update(y_pad[a:b], z_pad[a:b], mask=mask[a:b])
             for a, b in ((0, 300), (300, 301), (301, len(y)))]
    merged = parts[2].merge(parts[0]).merge(parts[1])
    for st in (full, merged):
        np.testing.assert_array_equal(st.neg, ref.neg)
        np.testing.assert_array_equal(st.pos, ref.pos)
    # an all-padding batch adds nothing
    empty = MulticlassROCHistogramState.init(5).update(y_pad[-5:], z_pad[-5:], mask=mask[-5:])
    assert int(np.sum(empty.neg)) == 0 and int(empty.invalid) == 0


def test_jit_and_psum_equal_eager():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    y, z = _data(seed=3)
    mask = np.arange(len(y)) < 850
    eager = MulticlassROCHistogramState.init(5).update(y, z, mask=mask)
    f = jax.jit(lambda s, a, b, m: s.update(a, b, mask=m))
    st = f(MulticlassROCHistogramState.init(5, xp=jnp), jnp.asarray(y), jnp.asarray(z),
           jnp.asarray(mask))
    np.testing.assert_array_equal(np.asarray(st.neg), eager.neg)
    np.testing.assert_array_equal(np.asarray(st.pos), eager.pos)
    a = float(eager.compute().roc_auc)
    assert float(jax.jit(lambda s: s.compute().roc_auc)(st)) == pytest.approx(a, rel=1e-6)
    # a bad label under jit: NaN, never a wrong number
    yb = jnp.asarray(y).at[0].set(7)
    bad = f(MulticlassROCHistogramState.init(5, xp=jnp), yb, jnp.asarray(z), jnp.asarray(mask))
    assert np.isnan(float(bad.compute().roc_auc))


def test_collection_routes_logits():
    y, z = _data(seed=5)
    col = calipers.StateCollection.init({"auc": MulticlassROCHistogramState.init(5),
                                         "top": calipers.TopKAccuracyState.init(5)})
    col = col.update(labels=y, logits=z)
    out = col.compute()
    assert float(out["auc"].roc_auc) == pytest.approx(_sk(y, z, "macro", 5), abs=1e-12)


def test_errors_and_undefined():
    st = MulticlassROCHistogramState.init(3)
    with pytest.raises(ValueError, match=r"y_true must hold class indices 0 \.\. 2"):
        st.update([0, 1, 3], np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"y_score must have shape \(n, 3\)"):
        st.update([0, 1, 2], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="num_classes"):
        MulticlassROCHistogramState.init(1)
    with pytest.raises(ValueError, match="average"):
        st.compute("micro")
    with pytest.raises(ValueError, match="bits"):
        MulticlassROCHistogramState.init(3, bits=30)
    s = st.update([0, 1, 0, 1], np.random.default_rng(0).random((4, 3)))   # class 2 absent
    with pytest.warns(calipers.UndefinedMetricWarning, match="one-vs-rest"):
        out = s.compute()
    assert np.isnan(float(out.roc_auc)) and np.isnan(np.asarray(out.per_class)[2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not np.isnan(np.asarray(s.compute(None).per_class)[0])


def _per_class(y, z, C, mask=None, sample_weight=None, **init):
    """The reference: C binary ROCHistogramState updates, class c against column c."""
    negs, poss = [], []
    for c in range(C):
        st = calipers.ROCHistogramState.init(16, **init).update(
            (y == c).astype(int), z[:, c], mask=mask, sample_weight=sample_weight)
        negs.append(np.asarray(st.neg))
        poss.append(np.asarray(st.pos))
    return np.stack(negs), np.stack(poss)


@pytest.mark.parametrize("mode", ["numpy", "jax_eager", "jax_jit"])
@pytest.mark.parametrize("weights", [None, "int", "float"])
def test_one_segment_count_equals_per_class_binary_states_bit_for_bit(mode, weights):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    C = 4
    rng = np.random.default_rng(8)
    y, z = _data(n=300, C=C, seed=8)
    z[::7, 1] = z[::7, 2]                                  # ties across rows
    mask = rng.random(len(y)) < 0.85
    yp = np.where(mask, y, 42)                             # padding garbage
    zp = np.where(mask[:, None], z, np.nan).astype(np.float32)
    w = {None: None, "int": rng.integers(0, 5, len(y)),
         "float": rng.integers(0, 9, len(y)) / 8.0}[weights]
    init = {"weighted": weights == "float"}
    want_neg, want_pos = _per_class(y[mask], z[mask], C, None,
                                    None if w is None else w[mask], **init)
    xp = jnp if mode != "numpy" else None
    conv = (lambda a: a) if xp is None else (lambda a: None if a is None else jnp.asarray(a))
    upd = lambda s, a, b, m, sw: s.update(a, b, mask=m, sample_weight=sw)
    if mode == "jax_jit":
        upd = jax.jit(upd)
    st = upd(MulticlassROCHistogramState.init(C, xp=xp, **init), conv(yp), conv(zp),
             conv(mask), conv(w))
    assert int(st.invalid) == 0
    np.testing.assert_array_equal(np.asarray(st.neg), want_neg)
    np.testing.assert_array_equal(np.asarray(st.pos), want_pos)


def test_one_segment_count_float16_keys_and_bad_rows_under_jit():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    C = 3
    y, z = _data(n=200, C=C, seed=9)
    z16 = z.astype(np.float16)
    st = MulticlassROCHistogramState.init(C, score_dtype="float16").update(y, z16)
    negs, poss = [], []
    for c in range(C):
        b = calipers.ROCHistogramState.init(16, score_dtype="float16").update(
            (y == c).astype(int), z16[:, c])
        negs.append(b.neg)
        poss.append(b.pos)
    np.testing.assert_array_equal(st.neg, np.stack(negs))
    np.testing.assert_array_equal(st.pos, np.stack(poss))
    # under jit a row with a bad label is counted for no class and the batch is invalid;
    # a non-finite score is not counted and the batch is invalid
    f = jax.jit(lambda s, a, b: s.update(a, b))
    yb = y.copy()
    yb[5] = 9
    bad = f(MulticlassROCHistogramState.init(C, xp=jnp), jnp.asarray(yb), jnp.asarray(z))
    keep = np.arange(len(y)) != 5
    want_neg, want_pos = _per_class(y[keep], z[keep], C)
    assert int(bad.invalid) == 1
    np.testing.assert_array_equal(np.asarray(bad.neg), want_neg)
    np.testing.assert_array_equal(np.asarray(bad.pos), want_pos)
    zb = z.copy()
    zb[3, 0] = np.inf
    inf = f(MulticlassROCHistogramState.init(C, xp=jnp), jnp.asarray(y), jnp.asarray(zb))
    assert int(inf.invalid) == 1
    assert int(np.asarray(inf.neg[0]).sum() + np.asarray(inf.pos[0]).sum()) == len(y) - 1
    assert int(np.asarray(inf.neg[1]).sum() + np.asarray(inf.pos[1]).sum()) == len(y)
