"""StateCollection: several states fed from one model output, merged and psum-med as one pytree.

References: scikit-learn on the unmasked rows (confusion matrix, ROC AUC, AP, log loss, Brier),
calipers' one-shot functions (ECE, perplexity, per-query NDCG / MRR / recall), and a
one-device collection for the 4-device ``shard_map`` run (integer fields bit for bit).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

import calipers
from calipers import (CalibrationState, ConfusionState, NLLState, ProbabilityLossState,
                      QueryMeanState, ROCHistogramState, StateCollection)
from calipers import retrieval

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"


def binary_batch(n, seed):
    """Labels, bfloat16-valued logits (exact at 16 histogram bits) and a padding mask whose
    padded rows hold garbage (NaN logits, labels out of range)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    z = np.asarray(jnp.asarray(rng.standard_normal(n) + y, jnp.bfloat16), np.float32)
    mask = rng.random(n) < 0.8
    z = np.where(mask, z, np.nan).astype(np.float32)
    y = np.where(mask, y, 7)
    return y, z, mask


def make_binary(xp=None):
    return StateCollection.init({
        "cm": ConfusionState.init(2, xp=xp),
        "roc": ROCHistogramState.init(16, xp=xp),
        "loss": ProbabilityLossState.init(xp=xp),
        "ece": CalibrationState.init(10, xp=xp),
    })


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z.astype(np.float64)))


def check_binary(out, y, z, exact_roc=True):
    """``out`` (a computed binary collection) against scikit-learn on the rows ``y``, ``z``.

    The collection's sigmoid runs in the logits' float32, so the probability metrics agree
    with the float64 reference to float32 rounding; counts, AUC and AP are exact."""
    p = sigmoid(z)
    np.testing.assert_array_equal(np.asarray(out["cm"].confusion_matrix),
                                  skm.confusion_matrix(y, (z >= 0).astype(int), labels=[0, 1]))
    assert float(out["cm"].accuracy) == pytest.approx(skm.accuracy_score(y, z >= 0), rel=1e-12)
    roc = out["roc"]
    if exact_roc:       # bfloat16-valued scores: exact at 16 bits
        assert float(roc.roc_auc) == pytest.approx(skm.roc_auc_score(y, z), rel=1e-12)
        assert float(roc.average_precision) == pytest.approx(
            skm.average_precision_score(y, z), rel=1e-12)
    else:               # probabilities: within the histogram's stated bound
        assert abs(float(roc.roc_auc) - skm.roc_auc_score(y, p)) <= float(roc.roc_auc_bound)
        assert abs(float(roc.average_precision) - skm.average_precision_score(y, p)) <= \
            float(roc.average_precision_bound) + 1e-12
    assert float(out["loss"].log_loss) == pytest.approx(skm.log_loss(y, p), rel=1e-6)
    assert float(out["loss"].brier) == pytest.approx(skm.brier_score_loss(y, p), rel=1e-6)
    assert float(out["ece"]) == pytest.approx(
        calipers.expected_calibration_error(y, p, n_bins=10), rel=1e-6)


def test_one_call_routes_outputs_to_every_state_and_equals_the_one_shot_functions():
    y, z, mask = binary_batch(300, 0)
    c = make_binary()
    for lo, hi in ((0, 37), (37, 38), (38, 200), (200, 300)):        # ragged batches
        c = c.update(labels=y[lo:hi], logits=z[lo:hi], mask=mask[lo:hi])
    out = c.compute()
    assert list(out) == ["cm", "roc", "loss", "ece"]
    check_binary(out, y[mask], z[mask])


def test_probs_and_scores_route_to_the_states_that_declare_them():
    y, z, mask = binary_batch(120, 1)
    y, z = y[mask], z[mask]
    p = sigmoid(z)
    # probs: thresholded at 1/2 for the confusion counts, as given for the losses
    out = make_binary().update(labels=y, probs=p).compute()
    check_binary(out, y, z, exact_roc=False)
    # scores feed the histogram; a state that takes probabilities names what it lacks
    roc = StateCollection.init({"roc": ROCHistogramState.init(16)}).update(labels=y, scores=z)
    assert float(roc.compute()["roc"].roc_auc) == pytest.approx(skm.roc_auc_score(y, z))
    with pytest.raises(ValueError, match=r"ProbabilityLossState takes probs= or logits="):
        make_binary().update(labels=y, scores=z)
    with pytest.raises(ValueError, match="unknown model outputs"):
        make_binary().update(labels=y, logit=z)


def test_multiclass_logits_feed_confusion_losses_and_token_nll():
    """(n, K) logits: argmax for the counts, softmax for the losses, the log-softmax at the
    label for NLLState, whose perplexity is exp(log loss) of the same rows."""
    rng = np.random.default_rng(2)
    n, K = 90, 4
    y = rng.integers(0, K, n)
    z = rng.standard_normal((n, K)) + 2 * np.eye(K)[y]
    mask = rng.random(n) < 0.7
    c = StateCollection.init({"cm": ConfusionState.init(K), "loss": ProbabilityLossState.init(),
                              "nll": NLLState.init()})
    c = c.update(labels=y[:50], logits=z[:50], mask=mask[:50])
    c = c.update(labels=y[50:], logits=z[50:], mask=mask[50:])
    out = c.compute()
    yk, zk = y[mask], z[mask]
    pk = np.exp(zk - zk.max(1, keepdims=True))
    pk /= pk.sum(1, keepdims=True)
    np.testing.assert_array_equal(out["cm"].confusion_matrix,
                                  skm.confusion_matrix(yk, zk.argmax(1), labels=range(K)))
    ll = skm.log_loss(yk, pk, labels=range(K))
    assert float(out["loss"].log_loss) == pytest.approx(ll, rel=1e-9)
    assert float(out["nll"].nll_per_token) == pytest.approx(ll, rel=1e-9)
    assert float(out["nll"].perplexity) == pytest.approx(np.exp(ll), rel=1e-9)


@pytest.mark.filterwarnings("ignore::calipers.UndefinedMetricWarning")
def test_padded_query_lists_with_static_options_equal_the_per_query_functions():
    """A (Q, L) batch to QueryMeanState with k=5 from the collection's options, against
    calipers.retrieval on the flat real items keyed by query_id."""
    rng = np.random.default_rng(3)
    Q, L = 12, 9
    rel = rng.integers(0, 3, (Q, L)) * (rng.random((Q, L)) < 0.4)
    score = rng.integers(0, 6, (Q, L)).astype(np.float64)       # ties
    mask = rng.random((Q, L)) < 0.8
    mask[0] = False                                             # a padded query
    c = StateCollection.init({"rank": QueryMeanState.init(3)}, options={"rank": {"k": 5}})
    c = c.update(labels=rel[:7], scores=score[:7], mask=mask[:7])
    c = c.update(labels=rel[7:], scores=score[7:], mask=mask[7:])
    got = c.compute()["rank"]
    qid = np.broadcast_to(np.arange(Q)[:, None], (Q, L))[mask]
    flat = dict(y_true=rel[mask], y_score=score[mask], query_id=qid)
    want = [retrieval.ndcg(**flat, k=5), retrieval.reciprocal_rank(**flat),
            retrieval.recall_at_k(**flat, k=5)]
    for g, w in zip(np.asarray(got.mean), want):
        assert g == pytest.approx(float(w.mean), rel=1e-12)
    real = np.unique(qid)
    no_rel = sum(1 for q in real if rel[mask][qid == q].max() <= 0)
    np.testing.assert_array_equal(np.asarray(got.n_undefined)[0], no_rel)


def test_merge_of_two_collections_equals_one_over_all_rows_and_refuses_other_collections():
    y, z, mask = binary_batch(200, 4)
    a = make_binary().update(labels=y[:80], logits=z[:80], mask=mask[:80])
    b = make_binary().update(labels=y[80:], logits=z[80:], mask=mask[80:])
    whole = make_binary().update(labels=y, logits=z, mask=mask)
    for m in (a.merge(b), b.merge(a)):
        for g, w in zip(jax.tree.leaves(m), jax.tree.leaves(whole)):
            if np.asarray(w).dtype.kind in "iu":
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, rtol=1e-12)
    check_binary(a.merge(b).compute(), y[mask], z[mask])
    assert not any(np.any(np.asarray(v)) for v in jax.tree.leaves(whole.empty()))
    other = StateCollection.init({"cm": ConfusionState.init(2)})
    with pytest.raises(ValueError, match="different states"):
        a.merge(other)
    k5 = StateCollection.init({"r": QueryMeanState.init(3)}, options={"r": {"k": 5}})
    k3 = StateCollection.init({"r": QueryMeanState.init(3)}, options={"r": {"k": 3}})
    with pytest.raises(ValueError, match="different static options"):
        k5.merge(k3)


def test_init_refuses_what_is_not_a_state_and_options_for_unknown_names():
    with pytest.raises(ValueError, match=r"states\['x'\] must be a calipers state"):
        StateCollection.init({"x": (1, 2)})
    with pytest.raises(ValueError, match="state names must be strings"):
        StateCollection.init({1: ConfusionState.init(2)})
    with pytest.raises(ValueError, match="not states of this collection"):
        StateCollection.init({"cm": ConfusionState.init(2)}, options={"roc": {"k": 1}})
    with pytest.raises(ValueError, match="names model outputs"):
        StateCollection.init({"r": QueryMeanState.init(3)}, options={"r": {"mask": 1}})


def test_under_jit_equals_eager_compiles_once_per_shape_and_is_one_pytree():
    traces = []

    @jax.jit
    def step(c, y, z, m):
        traces.append(y.shape)              # runs only while tracing
        return c.update(labels=y, logits=z, mask=m)

    y, z, mask = binary_batch(256, 5)
    c = make_binary(jnp)
    eager = make_binary()
    for lo in range(0, 256, 64):
        sl = slice(lo, lo + 64)
        c = step(c, jnp.asarray(y[sl]), jnp.asarray(z[sl]), jnp.asarray(mask[sl]))
        eager = eager.update(labels=y[sl], logits=z[sl], mask=mask[sl])
    assert traces == [(64,)]                # one compile for four batches of one shape
    assert isinstance(c, StateCollection) and list(c) == ["cm", "roc", "loss", "ece"]
    for g, w in zip(jax.tree.leaves(c), jax.tree.leaves(eager)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype.kind == w.dtype.kind
        if w.dtype.kind in "iu":
            np.testing.assert_array_equal(g, w)          # counts bit for bit
        else:       # float sums of float32 sigmoids: XLA's exp against NumPy's
            np.testing.assert_allclose(g, w, rtol=1e-6)
    assert list(c.compute()) == ["cm", "roc", "loss", "ece"]   # init's order survives jit
    out = jax.jit(lambda c: c.compute())(c)     # (a dict returned by jit has sorted keys)
    check_binary(out, y[mask], z[mask])
    # psum over a one-device axis is the identity on the collection's leaves
    summed = jax.vmap(lambda c: jax.lax.psum(c, "i"), axis_name="i")(
        jax.tree.map(lambda a: a[None], c))
    for g, w in zip(jax.tree.leaves(summed), jax.tree.leaves(c)):
        np.testing.assert_array_equal(np.asarray(g)[0], np.asarray(w))


SHARDED = textwrap.dedent("""
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    jax.config.update("jax_enable_x64", X64)
    import jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from calipers import (CalibrationState, ConfusionState, ProbabilityLossState,
                          ROCHistogramState, StateCollection)

    assert jax.device_count() == 4
    def make():
        return StateCollection.init({"cm": ConfusionState.init(2, xp=jnp),
                                     "roc": ROCHistogramState.init(16, xp=jnp),
                                     "loss": ProbabilityLossState.init(xp=jnp),
                                     "ece": CalibrationState.init(10, xp=jnp)})

    rng = np.random.default_rng(0)
    n = 4 * 48
    y = rng.integers(0, 2, n)
    z = np.asarray(jnp.asarray(rng.standard_normal(n) + y, jnp.bfloat16), np.float32)
    mask = rng.random(n) < 0.8
    mask[3 * 48:] = False                 # the last device's shard is all padding
    z = np.where(mask, z, np.nan).astype(np.float32)

    mesh = jax.make_mesh((4,), ("data",))
    def local(y, z, m):
        return jax.lax.psum(make().update(labels=y, logits=z, mask=m), "data")

    @jax.jit
    def step(c, y, z, m):
        new = jax.shard_map(local, mesh=mesh, in_specs=(P("data"),) * 3, out_specs=P())(y, z, m)
        return c.merge(new)

    sh = NamedSharding(mesh, P("data"))
    got = make()
    for half in (slice(0, n // 2), slice(n // 2, n)):
        # each device sees a quarter of each half
        args = [jax.device_put(jnp.asarray(a[half]), sh) for a in (y, z, mask)]
        got = step(got, *args)
    one = make()
    for half in (slice(0, n // 2), slice(n // 2, n)):
        one = jax.jit(lambda c, y, z, m: c.update(labels=y, logits=z, mask=m))(
            one, jnp.asarray(y[half]), jnp.asarray(z[half]), jnp.asarray(mask[half]))
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(one)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        if a.dtype.kind in "iub":
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5 if not X64 else 1e-12)
    g, o = got.compute(), one.compute()
    np.testing.assert_array_equal(np.asarray(g["cm"].confusion_matrix),
                                  np.asarray(o["cm"].confusion_matrix))
    assert float(g["roc"].roc_auc) == float(o["roc"].roc_auc)
    print("SHARDED-OK", int(np.asarray(g["cm"].confusion_matrix).sum()), int(mask.sum()))
""")


@pytest.mark.parametrize("x64", [True, False])
def test_shard_map_over_four_devices_equals_one_device(tmp_path, x64):
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED.replace("X64", str(x64)))
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = str(SRC)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("SHARDED-OK")]
    assert line, res.stdout[-2000:]
    _, counted, real = line[0].split()
    assert counted == real                 # every real row counted once, padding never


def _flat_queries(seed, nq=10):
    """Ragged queries as flat rows (ties in the scores, some queries without a relevant
    row), with their per-query references from calipers.retrieval."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, nq)
    qid = np.repeat(np.arange(nq), sizes)
    rel = rng.integers(0, 3, qid.size) * (rng.random(qid.size) < 0.5)
    score = rng.integers(0, 4, qid.size) / 4.0                    # ties
    return qid, rel, score


def _reference(qid, rel, score, k):
    flat = dict(y_true=rel, y_score=score, query_id=qid)
    return [retrieval.ndcg(**flat, k=k), retrieval.reciprocal_rank(**flat),
            retrieval.recall_at_k(**flat, k=k)]


def _batches_by_query(qid, rel, score, cut, width, rng, ids=lambda q: q):
    """Two batches, queries < cut and >= cut, rows shuffled, each padded to ``width`` rows
    holding garbage (labels -5, NaN scores, ids that no real row has)."""
    out = []
    for sel in (qid < cut, qid >= cut):
        idx = rng.permutation(np.flatnonzero(sel))
        pad = width - idx.size
        out.append(dict(
            labels=np.concatenate([rel[idx], np.full(pad, -5)]),
            scores=np.concatenate([score[idx], np.full(pad, np.nan)]),
            query_id=np.concatenate([ids(qid[idx]), np.full(pad, ids(7777))]),
            mask=np.arange(width) < idx.size))
    return out


def _check_against_reference(got, ref):
    means = np.asarray(got.mean)
    for i, r in enumerate(ref):
        assert means[i] == pytest.approx(float(r.mean), rel=1e-12), i
        np.testing.assert_array_equal(np.asarray(got.n_undefined)[i], r.n_undefined)
        np.testing.assert_array_equal(np.asarray(got.count)[i],
                                      int(np.sum(~np.isnan(np.asarray(r.values)))))


@pytest.mark.filterwarnings("ignore::calipers.UndefinedMetricWarning")
@pytest.mark.parametrize("mode", ["numpy_any_ids", "numpy_num_queries", "jax_eager", "jax_jit"])
def test_flat_rows_with_query_id_equal_retrieval_and_the_padded_path(mode):
    """QueryMeanState in a collection fed flat rows keyed by query_id (each query inside one
    batch, rows shuffled, padding masked): the means and counts equal calipers.retrieval's
    one-shot per-query functions on the same rows, and the padded (Q, L) path."""
    k = 3
    qid, rel, score = _flat_queries(11)
    ref = _reference(qid, rel, score, k)
    rng = np.random.default_rng(5)
    width = int(qid.size)
    if mode == "numpy_any_ids":            # eager: any ids (unsorted, far apart), no num_queries
        opts = {"k": k}
        batches = _batches_by_query(qid, rel, score, 4, width, rng, ids=lambda q: 1000 - 37 * q)
    else:
        opts = {"k": k, "num_queries": 10}
        batches = _batches_by_query(qid, rel, score, 4, width, rng)
    xp = jnp if mode.startswith("jax") else None
    c = StateCollection.init({"rank": QueryMeanState.init(3, xp=xp),
                              "cm": ConfusionState.init(3, xp=xp)}, options={"rank": opts})
    step = (jax.jit(lambda c, b: c.update(**b)) if mode == "jax_jit"
            else lambda c, b: c.update(**b))
    for b in batches:
        if xp is not None:
            b = {n: jnp.asarray(v) for n, v in b.items()}
        b["preds"] = b["labels"] * 0 + 1
        c = step(c, b)
    _check_against_reference(c.compute()["rank"], ref)
    # the padded (Q, L) path on the same queries gives the same state
    L = int(np.bincount(qid).max())
    pos = np.concatenate([np.arange(n) for n in np.bincount(qid)])
    Yp = np.zeros((10, L), rel.dtype)
    Sp = np.zeros((10, L))
    Mp = np.zeros((10, L), bool)
    Yp[qid, pos], Sp[qid, pos], Mp[qid, pos] = rel, score, True
    padded = QueryMeanState.init(3).update_outputs(labels=Yp, scores=Sp, mask=Mp, k=k)
    np.testing.assert_allclose(np.asarray(c["rank"].total), padded.total, rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(c["rank"].count), padded.count)
    np.testing.assert_array_equal(np.asarray(c["rank"].n_undefined), padded.n_undefined)


@pytest.mark.filterwarnings("ignore::calipers.UndefinedMetricWarning")
def test_flat_ranking_batch_per_query_values_equal_retrieval():
    """ranking_batch_metrics with query_id: per-query values in ascending id order, eagerly
    and under jit with num_queries (queries without a real row padded)."""
    qid, rel, score = _flat_queries(2, nq=8)
    perm = np.random.default_rng(0).permutation(qid.size)
    qid, rel, score = qid[perm], rel[perm], score[perm]
    ref = _reference(qid, rel, score, 2)
    got = calipers.ranking_batch_metrics(rel, score, query_id=qid * 3 + 1, k=2)
    for g, r in zip((got.ndcg, got.reciprocal_rank, got.recall), ref):
        np.testing.assert_allclose(g, np.asarray(r.values), rtol=1e-12)
    assert bool(np.all(got.query_mask))
    f = jax.jit(lambda y, s, q: calipers.ranking_batch_metrics(y, s, query_id=q, k=2,
                                                               num_queries=11))
    j = f(jnp.asarray(rel), jnp.asarray(score), jnp.asarray(qid))
    np.testing.assert_array_equal(np.asarray(j.query_mask), np.arange(11) < 8)
    for g, r in zip((j.ndcg, j.reciprocal_rank, j.recall), ref):
        np.testing.assert_allclose(np.asarray(g)[:8], np.asarray(r.values), rtol=1e-12)
        assert np.isnan(np.asarray(g)[8:]).all()


@pytest.mark.filterwarnings("ignore::calipers.UndefinedMetricWarning")
def test_flat_rows_errors_and_a_query_split_over_batches_counts_per_batch():
    y, s, q = np.array([1, 0, 2, 0]), np.array([0.5, 0.2, 0.9, 0.1]), np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="num_queries .*required under jit"):
        jax.jit(lambda y, s, q: calipers.ranking_batch_metrics(y, s, query_id=q).ndcg)(
            jnp.asarray(y), jnp.asarray(s), jnp.asarray(q))
    with pytest.raises(ValueError, match="query_mask"):
        calipers.ranking_batch_metrics(y, s, query_id=q, query_mask=[True, True])
    with pytest.raises(ValueError, match="needs query_id"):
        calipers.ranking_batch_metrics(y[None], s[None], num_queries=1)
    with pytest.raises(ValueError, match="num_queries"):
        calipers.ranking_batch_metrics(y, s, query_id=q, num_queries=0)
    # query 0 split over two batches: two queries, one on each part (documented)
    st = QueryMeanState.init(3)
    st = st.update_outputs(labels=y[:1], scores=s[:1], query_id=q[:1])
    st = st.update_outputs(labels=y[1:], scores=s[1:], query_id=q[1:])
    np.testing.assert_array_equal(st.count + st.n_undefined, [3, 3, 3])
