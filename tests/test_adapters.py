"""calipers states as Flax NNX metrics and CLU metrics, inside ``jit``.

References: scikit-learn on the unmasked rows (confusion matrix, ROC AUC, log loss) and
calipers' per-query functions; NNX's own ``Average`` beside the calipers metric in one
``MultiMetric``, CLU's ``Average`` beside it in one ``Collection``.
"""

# no ``from __future__ import annotations``: clu.metrics.Collection reads its fields' classes
# from ``__annotations__``, which that import would turn into strings
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

pytest.importorskip("flax")
pytest.importorskip("clu")

import clu.metrics as clum  # noqa: E402
import flax.struct  # noqa: E402
from flax import nnx  # noqa: E402

from calipers import (ConfusionState, ProbabilityLossState, QueryMeanState,  # noqa: E402
                      ROCHistogramState, StateCollection, UndefinedMetricWarning, retrieval)
from calipers.adapters import clu_metric, nnx_metric  # noqa: E402


def batches(seed, n=160, size=40):
    """Padded batches of labels, bfloat16-valued float32 logits, masks and a per-row loss;
    garbage in padding."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    z = np.asarray(jnp.asarray(rng.standard_normal(n) + y, jnp.bfloat16), np.float32)
    m = rng.random(n) < 0.75
    z = np.where(m, z, np.nan).astype(np.float32)
    loss = rng.random(n).astype(np.float32)      # a per-row loss, masked by NNX / CLU Average
    out = [tuple(jnp.asarray(a[i:i + size]) for a in (y, z, m, loss)) for i in range(0, n, size)]
    return out, y[m], z[m], loss[m]


def collection():
    return StateCollection.init({"cm": ConfusionState.init(2, xp=jnp),
                                 "roc": ROCHistogramState.init(16, xp=jnp),
                                 "loss": ProbabilityLossState.init(xp=jnp)})


def check(out, y, z):
    p = 1.0 / (1.0 + np.exp(-z.astype(np.float64)))
    np.testing.assert_array_equal(np.asarray(out["cm"].confusion_matrix),
                                  skm.confusion_matrix(y, (z >= 0).astype(int)))
    assert float(out["roc"].roc_auc) == pytest.approx(skm.roc_auc_score(y, z), rel=1e-6)
    assert float(out["loss"].log_loss) == pytest.approx(skm.log_loss(y, p), rel=1e-5)


def test_nnx_metric_in_a_multimetric_under_nnx_jit():
    data, y, z, loss = batches(0)
    metrics = nnx.MultiMetric(loss=nnx.metrics.Average("loss"),
                              calipers=nnx_metric(collection()),
                              auc=nnx_metric(ROCHistogramState.init(16)))   # a NumPy state

    traces = []

    @nnx.jit
    def eval_step(metrics, labels, logits, mask, loss):
        traces.append(1)
        metrics.update(labels=labels, logits=logits, mask=mask, loss=loss)

    for yb, zb, mb, lb in data:
        eval_step(metrics, yb, zb, mb, lb)
    assert len(traces) == 1
    out = metrics.compute()
    check(out["calipers"], y, z)
    assert float(out["auc"].roc_auc) == pytest.approx(skm.roc_auc_score(y, z), rel=1e-6)
    assert float(out["loss"]) == pytest.approx(loss.mean(), rel=1e-6)
    # the integer fields are those of the collection fed eagerly, bit for bit
    eager = collection()
    for yb, zb, mb, _ in data:
        eager = eager.update(labels=yb, logits=zb, mask=mb)
    got = metrics.calipers.state.get_value()
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(eager)):
        if np.asarray(b).dtype.kind in "iu":
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # reset empties it; merge adds another metric's state
    other = nnx_metric(collection())
    for yb, zb, mb, _ in data[:2]:
        other.update(labels=yb, logits=zb, mask=mb)
    metrics.reset()
    with pytest.warns(UndefinedMetricWarning) as rec:     # one warning per empty state
        emptied = metrics.calipers.compute()
    msgs = sorted(str(w.message) for w in rec)
    assert len(msgs) == 3, msgs
    assert any("ConfusionState holds no rows" in m for m in msgs)
    assert any("ROCHistogramState" in m and "holds no rows" in m for m in msgs)
    assert any("ProbabilityLossState holds no rows" in m for m in msgs)
    assert int(np.asarray(emptied["cm"].confusion_matrix).sum()) == 0
    metrics.calipers.merge(other)
    keep = np.concatenate([np.asarray(mb) for _, _, mb, _ in data[:2]])
    n2 = len(keep)
    yy = np.concatenate([np.asarray(yb) for yb, _, _, _ in data[:2]])[keep]
    zz = np.concatenate([np.asarray(zb) for _, zb, _, _ in data[:2]])[keep]
    assert n2 == 80
    check(metrics.calipers.compute(), yy, zz)


def test_nnx_metric_with_static_options_under_jit():
    rng = np.random.default_rng(1)
    Q, L = 10, 8
    rel = rng.integers(0, 3, (Q, L)) * (rng.random((Q, L)) < 0.5)
    rel[:, 0] = 1                                   # every query has a relevant item
    score = rng.standard_normal((Q, L)).astype(np.float32)
    mask = rng.random((Q, L)) < 0.8
    mask[:, 0] = True
    metric = nnx_metric(QueryMeanState.init(3, xp=jnp), k=3)

    @nnx.jit
    def step(metric, rel, score, mask):
        metric.update(labels=rel, scores=score, mask=mask, unrelated=jnp.zeros(3))

    step(metric, jnp.asarray(rel[:5]), jnp.asarray(score[:5]), jnp.asarray(mask[:5]))
    step(metric, jnp.asarray(rel[5:]), jnp.asarray(score[5:]), jnp.asarray(mask[5:]))
    got = metric.compute()
    qid = np.broadcast_to(np.arange(Q)[:, None], (Q, L))[mask]
    want = retrieval.ndcg(rel[mask], score[mask], qid, k=3)
    assert float(np.asarray(got.mean)[0]) == pytest.approx(float(want.mean), rel=1e-6)


def test_clu_metric_in_a_collection_under_jit_merge_reduce_and_compute():
    data, y, z, loss = batches(2)
    CM = clu_metric(collection())

    @flax.struct.dataclass
    class Metrics(clum.Collection):
        calipers: CM
        loss: clum.Average.from_output("loss")

    traces = []

    @jax.jit
    def eval_step(metrics, labels, logits, mask, loss):
        traces.append(1)
        update = Metrics.single_from_model_output(labels=labels, logits=logits, mask=mask,
                                                  loss=loss)
        return metrics.merge(update)

    metrics = Metrics.empty()
    seen = []
    for yb, zb, mb, lb in data:
        metrics = eval_step(metrics, yb, zb, mb, lb)
        seen.append(len(traces))
    # CLU's own Average counts in int32 when empty and in int64 after a masked batch under
    # x64, which retraces the second step; the calipers field keeps its types from empty()
    assert seen[-1] == seen[1] <= 2
    avals = lambda t: [jax.typeof(jnp.asarray(a)) for a in jax.tree.leaves(t)]  # noqa: E731
    assert avals(metrics.calipers) == avals(Metrics.empty().calipers)
    out = jax.jit(lambda m: m.compute())(metrics)
    check(out["calipers"], y, z)
    assert float(out["loss"]) == pytest.approx(loss.mean(), rel=1e-6)

    # reduce: CLU's merge along a leading (device) axis, here two stacked per-device metrics
    parts = [CM.from_model_output(labels=yb, logits=zb, mask=mb) for yb, zb, mb, _ in data[:2]]
    stacked = jax.tree.map(lambda a, b: jnp.stack([a, b]), *parts)
    reduced = jax.jit(lambda m: m.reduce())(stacked)
    merged = parts[0].merge(parts[1])
    for a, b in zip(jax.tree.leaves(reduced), jax.tree.leaves(merged)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # the empty metric is the identity of merge
    e = CM.empty().merge(parts[0])
    for a, b in zip(jax.tree.leaves(e), jax.tree.leaves(parts[0])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_clu_metric_of_a_single_state_with_probs():
    data, y, z, _ = batches(3)
    CM = clu_metric(ProbabilityLossState.init(xp=jnp))
    m = CM.empty()
    step = jax.jit(lambda m, yb, zb, mb: m.merge(CM.from_model_output(
        labels=yb, probs=jax.nn.sigmoid(zb), mask=mb, loss=1.0)))
    for yb, zb, mb, _ in data:
        m = step(m, yb, zb, mb)
    p = 1.0 / (1.0 + np.exp(-z.astype(np.float64)))
    got = m.compute()
    assert float(got.log_loss) == pytest.approx(skm.log_loss(y, p), rel=1e-5)
    assert float(got.brier) == pytest.approx(skm.brier_score_loss(y, p), rel=1e-5)


def test_adapters_refuse_what_is_not_a_state_and_options_beside_a_collection():
    with pytest.raises(ValueError, match="nnx_metric wraps a calipers state"):
        nnx_metric(np.zeros(3))
    with pytest.raises(ValueError, match="clu_metric wraps a calipers state"):
        clu_metric({"a": 1})
    with pytest.raises(ValueError, match="holds its own static options"):
        nnx_metric(collection(), k=5)
    with pytest.raises(ValueError, match="holds its own static options"):
        clu_metric(collection(), k=5)
