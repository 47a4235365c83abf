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


def test_probabilities_of_a_softmax_model_match_sklearn_ovr():
    # sklearn's multi_class="ovr" on probabilities: the same per-column OvR definition
    y, z = _data(bf16=False)
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    p = p.astype(ml_dtypes.bfloat16).astype(np.float64)
    p = p / p.sum(1, keepdims=True)
    pb = p.astype(ml_dtypes.bfloat16).astype(np.float32)
    out = MulticlassROCHistogramState.init(5).update(y, pb).compute("weighted")
    want = skm.roc_auc_score(y, pb.astype(np.float64) / pb.sum(1, keepdims=True),
                             multi_class="ovr", average="weighted")
    assert abs(float(out.roc_auc) - want) <= float(out.roc_auc_bound) + 1e-3


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
