"""Per-query ranking metrics and grouped AUC (calipers.retrieval).

References: brute force over every ordering of tied documents (the definition
of ``ties="average"``), Python sorting by (score, doc id) descending for
``ties="trec_eval"``, scikit-learn ``ndcg_score``/``dcg_score``/``roc_auc_score``,
pytrec_eval (trec_eval 9.0.8), and the handed cases H05-H07.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers import UndefinedMetricWarning, retrieval as R
from conftest import load_case, to_np

def _case(cid):
    return load_case(cid)


# --------------------------------------------------------------------------
# brute-force reference
# --------------------------------------------------------------------------

def _metrics_of_order(rels, gains, ideal_gains, n_rel, k):
    """Metrics of one complete ordering (lists of relevance flags / gains)."""
    disc = [1 / math.log2(r + 2) for r in range(len(rels))]
    dcg_k = sum(g * d for r, (g, d) in enumerate(zip(gains, disc)) if k is None or r < k)
    ideal = sorted(ideal_gains, reverse=True)
    idcg_k = sum(g / math.log2(r + 2) for r, g in enumerate(ideal) if k is None or r < k)
    hits = 0
    ap = 0.0
    rr = 0.0
    for r, rel in enumerate(rels):
        if rel:
            hits += 1
            ap += hits / (r + 1)
            if rr == 0.0:
                rr = 1 / (r + 1)
    kk = k if k is not None else len(rels)
    top = sum(rels[:kk])
    topR = sum(rels[:n_rel]) if n_rel else 0
    nan = math.nan
    return {
        "dcg": dcg_k,
        "ndcg": dcg_k / idcg_k if idcg_k > 0 else nan,
        "ap": ap / n_rel if n_rel else nan,
        "rr": rr if n_rel else nan,
        "p": top / kk,
        "recall": top / n_rel if n_rel else nan,
        "rprec": topR / n_rel if n_rel else nan,
    }


def reference(y, s, q, *, k=None, gain="linear", doc=None, retrieved=None, level=None):
    """Per-query metrics: mean over all orderings of ties, or the trec_eval order."""
    y = np.asarray(y, float)
    out = {}
    for qq in sorted(set(np.asarray(q).tolist())):
        idx = [i for i in range(len(y)) if q[i] == qq]
        ret = [i for i in idx if retrieved is None or retrieved[i]]
        rel_of = (lambda i: y[i] > 0) if level is None else (lambda i: y[i] >= level)
        g_of = (lambda i: max(y[i], 0.0)) if gain == "linear" else \
            (lambda i: 2.0 ** max(y[i], 0.0) - 1)
        n_rel = sum(1 for i in idx if rel_of(i))
        ideal = [g_of(i) for i in idx]
        if doc is not None:
            orders = [sorted(ret, key=lambda i: (-s[i], -doc[i]))]
        else:
            groups = {}
            for i in ret:
                groups.setdefault(s[i], []).append(i)
            levels = [groups[v] for v in sorted(groups, reverse=True)]
            orders = [sum(p, []) for p in itertools.product(
                *[[list(x) for x in itertools.permutations(gr)] for gr in levels])]
        acc = None
        for o in orders:
            m = _metrics_of_order([rel_of(i) for i in o], [g_of(i) for i in o], ideal, n_rel, k)
            acc = m if acc is None else {key: acc[key] + m[key] for key in acc}
        out[qq] = {key: v / len(orders) for key, v in acc.items()}
    return out


def _random_problem(seed, n_queries=4, max_docs=6, levels=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_docs + 1, n_queries)
    q = np.repeat(np.arange(n_queries), sizes)
    perm = rng.permutation(q.shape[0])
    q = q[perm]
    y = rng.integers(-1, 4, q.shape[0])
    y[q == 0] = np.minimum(y[q == 0], 0)         # query 0 has no relevant document
    s = rng.integers(0, levels, q.shape[0]).astype(float)
    doc = rng.permutation(q.shape[0])
    return y, s, q, doc


def _fns(k=3):
    return {
        "dcg": lambda *a, **kw: R.dcg(*a, k=k, **kw),
        "ndcg": lambda *a, **kw: R.ndcg(*a, k=k, **kw),
        "ap": R.average_precision,
        "rr": R.reciprocal_rank,
        "p": lambda *a, **kw: R.precision_at_k(*a, k=k, **kw),
        "recall": lambda *a, **kw: R.recall_at_k(*a, k=k, **kw),
        "rprec": R.r_precision,
    }


# --------------------------------------------------------------------------
# handed cases
# --------------------------------------------------------------------------

def test_H05_tied_scores_share_the_average_gain(backend):
    c = _case("H05")
    y = np.asarray(c["inputs"]["y_true"])
    s = np.asarray(c["inputs"]["y_score"], dtype=float)
    p = [4, 3, 2, 1, 0]

    def three(a, b):
        xp = calipers._core.xp.as_arrays(a)[0]
        # as given; columns reversed (no argsort order dependence); a constant model
        return (R.ndcg(a, b), R.ndcg(xp.take(a, xp.asarray(p), axis=1),
                                     xp.take(b, xp.asarray(p), axis=1)),
                R.ndcg(a, b * 0.0))

    res, rev, const = backend.call(three, y, s)
    np.testing.assert_allclose(to_np(res.values), [c["expected"]], atol=c["tolerance"])
    np.testing.assert_allclose(float(to_np(res.mean)), c["expected"], atol=c["tolerance"])
    np.testing.assert_allclose(to_np(rev.values), [c["expected"]], atol=c["tolerance"])
    # A constant model does not get NDCG 1 (ties are not sorted in its favour).
    assert float(to_np(const.mean)) < 0.9


def test_H06_trec_eval_tie_break_by_docno_descending(backend):
    c = _case("H06")
    qrels = c["inputs"]["qrels"]["q1"]
    run = c["inputs"]["run"]["q1"]
    docs = sorted(set(run) | set(qrels))
    doc_id = np.array([docs.index(d) for d in docs])      # string order
    y = np.array([qrels.get(d, 0) for d in docs])
    s = np.array([run[d] for d in docs])
    q = np.zeros(len(docs), dtype=np.int64)
    kw = dict(ties="trec_eval", num_segments=1)
    res_n = backend.call(lambda a, b, qq, dd: R.ndcg(a, b, qq, doc_id=dd, **kw), y, s, q, doc_id)
    res_m = backend.call(lambda a, b, qq, dd: R.average_precision(a, b, qq, doc_id=dd, **kw),
                         y, s, q, doc_id)
    assert abs(float(to_np(res_n.mean)) - c["expected"]["ndcg"]) < c["tolerance"]
    assert abs(float(to_np(res_m.mean)) - c["expected"]["map"]) < c["tolerance"]
    # The default tie rule averages instead (scikit-learn's 0.809953 in the case note).
    avg = R.ndcg(y, s, q)
    assert abs(float(avg.mean) - 0.809953) < 1e-6


def test_H07_linear_and_exponential_gain(backend):
    c = _case("H07")
    y = np.asarray(c["inputs"]["y_true"])
    s = np.asarray(c["inputs"]["y_score"], dtype=float)
    gains = c["kwargs"]["gain"]
    res = backend.call(lambda a, b: tuple(R.ndcg(a, b, gain=g) for g in gains), y, s)
    for r, expected in zip(res, c["expected"]):
        np.testing.assert_allclose(float(to_np(r.mean)), expected, atol=c["tolerance"])


def test_spec_worked_values():
    rel = np.array([3, 2, 3, 0, 1, 2])
    s = -np.arange(6.0)
    q = np.zeros(6, dtype=int)
    assert abs(float(R.dcg(rel, s, q).mean) - 6.8611) < 1e-4
    assert abs(float(R.ndcg(rel, s, q).mean) - 0.9608) < 1e-4
    assert abs(float(R.ndcg(rel, s, q, k=3).mean) - 0.9778) < 1e-4
    assert abs(float(R.ndcg(rel, s, q, gain="exponential").mean) - 0.9488) < 1e-4
    ideal = R.dcg(np.sort(rel)[::-1].copy(), s, q)
    assert abs(float(ideal.mean) - 7.141) < 1e-3


# --------------------------------------------------------------------------
# against brute force
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ties", ["average", "trec_eval"])
def test_numpy_matches_brute_force(seed, ties):
    y, s, q, doc = _random_problem(seed)
    ref = reference(y, s, q, k=3, doc=doc if ties == "trec_eval" else None)
    kw = dict(ties=ties, doc_id=doc if ties == "trec_eval" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for name, fn in _fns(3).items():
            res = fn(y, s, q, **kw)
            expect = [ref[i][name] for i in sorted(ref)]
            np.testing.assert_allclose(res.values, expect, rtol=1e-12, atol=1e-12,
                                       err_msg=name)
            assert res.query_ids.tolist() == sorted(ref)


def test_exponential_gain_and_relevance_level_match_brute_force():
    y, s, q, doc = _random_problem(5)
    ref = reference(y, s, q, k=2, gain="exponential")
    res = R.dcg(y, s, q, k=2, gain="exponential")
    np.testing.assert_allclose(res.values, [ref[i]["dcg"] for i in sorted(ref)], rtol=1e-12)
    ref2 = reference(y, s, q, k=2, level=2)
    with pytest.warns(UndefinedMetricWarning):
        res2 = R.average_precision(y, s, q, relevance_level=2)
    np.testing.assert_allclose(res2.values, [ref2[i]["ap"] for i in sorted(ref2)], rtol=1e-12)


def test_retrieved_mask_matches_brute_force():
    y, s, q, doc = _random_problem(7, max_docs=7)
    retrieved = np.random.default_rng(7).random(y.shape[0]) < 0.7
    ref = reference(y, s, q, k=4, retrieved=retrieved)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for name, fn in _fns(4).items():
            res = fn(y, s, q, retrieved=retrieved)
            np.testing.assert_allclose(res.values, [ref[i][name] for i in sorted(ref)],
                                       rtol=1e-12, atol=1e-12, err_msg=name)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(-1, 3)),
                min_size=1, max_size=10),
       st.integers(1, 4), st.randoms(use_true_random=False))
def test_property_brute_force_and_row_order(rows, k, rnd):
    q = np.array([r[0] for r in rows])
    s = np.array([float(r[1]) for r in rows])
    y = np.array([r[2] for r in rows])
    ref = reference(y, s, q, k=k)
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for name, fn in _fns(k).items():
            a = fn(y, s, q).values
            b = fn(y[perm], s[perm], q[perm]).values
            np.testing.assert_allclose(a, [ref[i][name] for i in sorted(ref)], rtol=1e-9,
                                       atol=1e-12, err_msg=name)
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


# --------------------------------------------------------------------------
# every backend, jit with num_segments
# --------------------------------------------------------------------------

def _all_metrics(y, s, q, doc, ret, *, ties, num_segments):
    # Every metric runs on every backend; each tie rule on about half of them (both rules
    # are checked for every metric against brute force on NumPy above).
    kw = dict(ties=ties, num_segments=num_segments, doc_id=doc if ties == "trec_eval" else None)
    if ties == "average":
        return (R.ndcg(y, s, q, k=[2, 5], **kw), R.average_precision(y, s, q, **kw),
                R.reciprocal_rank(y, s, q, **kw), R.precision_at_k(y, s, q, k=[1, 3], **kw))
    return (R.dcg(y, s, q, k=3, **kw), R.average_precision(y, s, q, retrieved=ret, **kw),
            R.recall_at_k(y, s, q, k=3, **kw), R.r_precision(y, s, q, retrieved=ret, **kw))


@pytest.mark.parametrize("ties", ["average", "trec_eval"])
def test_all_backends_agree_with_numpy(backend, ties):
    y, s, q, doc = _random_problem(11, n_queries=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        ret = np.arange(y.shape[0]) % 4 != 0
        expect = _all_metrics(y, s, q, doc, ret, ties=ties, num_segments=None)
        got = backend.call(lambda a, b, c, d, e: _all_metrics(a, b, c, d, e, ties=ties,
                                                               num_segments=5),
                           y, s, q, doc, ret)
    for e, g in zip(expect, got):
        assert isinstance(g, R.QueryResult) and g.metric == e.metric and g.k == e.k
        np.testing.assert_allclose(to_np(g.values), e.values, rtol=backend.rtol(),
                                   atol=backend.rtol(), err_msg=e.metric)
        np.testing.assert_allclose(float(np.sum(to_np(g.mean))), float(np.sum(e.mean)),
                                   rtol=backend.rtol(), err_msg=e.metric)
        assert int(to_np(g.n_undefined)) == e.n_undefined
        np.testing.assert_array_equal(to_np(g.query_ids), np.arange(5))


def test_k_sequence_equals_single_calls():
    y, s, q, _ = _random_problem(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        multi = R.ndcg(y, s, q, k=[1, 2, 50])
        assert multi.values.shape == (3, 4) and multi.k == (1, 2, 50)
        for i, k in enumerate([1, 2, 50]):
            one = R.ndcg(y, s, q, k=k)
            np.testing.assert_allclose(multi.values[i], one.values, rtol=1e-15)
            np.testing.assert_allclose(multi.mean[i], one.mean, rtol=1e-15)
        # k beyond every list length: the whole list
        np.testing.assert_allclose(multi.values[2], R.ndcg(y, s, q).values, rtol=1e-15)


# --------------------------------------------------------------------------
# against scikit-learn and pytrec_eval
# --------------------------------------------------------------------------

@pytest.mark.parametrize("k", [None, 1, 3])
def test_dense_input_matches_sklearn_ndcg_and_dcg(k):
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(4)
    y = rng.integers(0, 4, (7, 9))
    y[2] = 0                                           # no relevant item
    s = rng.integers(0, 3, (7, 9)).astype(float)       # many ties
    with pytest.warns(UndefinedMetricWarning, match="1 of 7"):
        skip = R.ndcg(y, s, k=k)
    zero = R.ndcg(y, s, k=k, undefined="zero")
    assert abs(float(zero.mean) - sk.ndcg_score(y, s, k=k)) < 1e-12
    assert np.isnan(skip.values[2]) and skip.n_undefined == 1 and zero.n_undefined == 1
    assert abs(float(skip.mean) - np.mean(np.delete(zero.values, 2))) < 1e-12
    per_row = [sk.ndcg_score(y[i:i + 1], s[i:i + 1], k=k) for i in range(7) if i != 2]
    np.testing.assert_allclose(np.delete(skip.values, 2), per_row, rtol=1e-12)
    assert abs(float(R.dcg(y, s, k=k).mean) - sk.dcg_score(y, s, k=k)) < 1e-12


def test_random_runs_with_ties_match_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from calipers.retrieval import Qrels, Run, trec_arrays
    rng = np.random.default_rng(9)
    qrels, run = {}, {}
    for qi in range(6):
        qid = f"q{qi}"
        docs = [f"d{j:03d}" for j in rng.choice(60, 25, replace=False)]
        judged = docs[:15]
        qrels[qid] = {d: int(rng.integers(-1, 4)) for d in judged}
        if qi == 5:
            qrels[qid] = {d: 0 for d in judged}          # no relevant document
        ret = docs[5:] if qi != 4 else docs[5:8]         # q4: short list
        run[qid] = {d: float(rng.integers(0, 4)) / 4 for d in ret}
    measures = {"map", "ndcg", "ndcg_cut.3,10", "recip_rank", "P.5,30", "recall.5,30",
                "Rprec"}
    ev = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    Q = Qrels(*[np.array(v) for v in zip(*[(q, d, r) for q, j in qrels.items()
                                           for d, r in j.items()])])
    Q = Qrels(Q.qid, Q.docno, Q.rel.astype(np.int64))
    Rn = Run(*[np.array(v) for v in zip(*[(q, d, s) for q, j in run.items()
                                          for d, s in j.items()])])
    Rn = Run(Rn.qid, Rn.docno, Rn.score.astype(np.float64))
    ta = trec_arrays(Q, Rn)
    kw = dict(ties="trec_eval", doc_id=ta.doc_id, retrieved=ta.retrieved, undefined="zero")
    args = (ta.y_true, ta.y_score, ta.query_id)
    ours = {
        "map": R.average_precision(*args, **kw),
        "ndcg": R.ndcg(*args, **kw),
        "recip_rank": R.reciprocal_rank(*args, **kw),
        "Rprec": R.r_precision(*args, **kw),
    }
    ndcg_cut = R.ndcg(*args, k=[3, 10], **kw)
    p = R.precision_at_k(*args, k=[5, 30], ties="trec_eval", doc_id=ta.doc_id,
                         retrieved=ta.retrieved)
    rec = R.recall_at_k(*args, k=[5, 30], **kw)
    for i, qid in enumerate(ta.queries):
        e = ev[str(qid)]
        for name, res in ours.items():
            assert abs(res.values[i] - e[name]) < 1e-9, (qid, name)
        for j, k in enumerate([3, 10]):
            assert abs(ndcg_cut.values[j, i] - e[f"ndcg_cut_{k}"]) < 1e-9
        for j, k in enumerate([5, 30]):
            assert abs(p.values[j, i] - e[f"P_{k}"]) < 1e-9
            assert abs(rec.values[j, i] - e[f"recall_{k}"]) < 1e-9


# --------------------------------------------------------------------------
# grouped AUC
# --------------------------------------------------------------------------

def _gauc_data(seed, n=80, groups=6):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, n)
    y = rng.integers(0, 2, n)
    y[g == 1] = 1                                     # one class only: undefined
    s = rng.integers(0, 5, n).astype(float)
    w = rng.integers(0, 4, n).astype(float)
    return y, s, g, w


@pytest.mark.parametrize("weighted", [False, True])
def test_grouped_auc_equals_per_group_auc(weighted):
    skm = pytest.importorskip("sklearn.metrics")
    y, s, g, w = _gauc_data(1)
    sw = w if weighted else None
    with pytest.warns(UndefinedMetricWarning, match="1 of 6 groups"):
        res = R.grouped_roc_auc(y, s, g, sample_weight=sw)
    expect, sizes, pos = [], [], []
    for i in range(6):
        m = g == i
        wi = None if sw is None else sw[m]
        if len(set(y[m].tolist())) < 2:
            expect.append(np.nan)
        else:
            a = float(calipers.roc_auc_score(y[m], s[m], sample_weight=wi))
            assert abs(a - skm.roc_auc_score(y[m], s[m], sample_weight=wi)) < 1e-12
            expect.append(a)
        sizes.append(m.sum() if sw is None else sw[m].sum())
        pos.append(y[m].sum() if sw is None else (sw[m] * y[m]).sum())
    np.testing.assert_allclose(res.values, expect, rtol=1e-12)
    assert res.n_undefined == 1
    ok = ~np.isnan(expect)
    e = np.asarray(expect)[ok]
    assert abs(float(res.mean) - e.mean()) < 1e-12
    with pytest.warns(UndefinedMetricWarning):
        by_size = R.grouped_roc_auc(y, s, g, sample_weight=sw, weighting="size")
        by_pos = R.grouped_roc_auc(y, s, g, sample_weight=sw, weighting="positives")
    assert abs(float(by_size.mean) - np.average(e, weights=np.asarray(sizes)[ok])) < 1e-12
    assert abs(float(by_pos.mean) - np.average(e, weights=np.asarray(pos)[ok])) < 1e-12


def test_grouped_auc_all_backends(backend):
    y, s, g, w = _gauc_data(2)
    with pytest.warns(UndefinedMetricWarning):
        expect = R.grouped_roc_auc(y, s, g, sample_weight=w, weighting="size")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = backend.call(lambda a, b, c, d: R.grouped_roc_auc(
            a, b, c, sample_weight=d, weighting="size", num_segments=6), y, s, g, w)
    np.testing.assert_allclose(to_np(got.values), expect.values, rtol=backend.rtol())
    np.testing.assert_allclose(float(to_np(got.mean)), float(expect.mean), rtol=backend.rtol())
    assert int(to_np(got.n_undefined)) == 1


def test_grouped_auc_arbitrary_ids_and_2d():
    y, s, g, _ = _gauc_data(3, n=40, groups=3)
    g2 = np.array(["u" + str(v) for v in g])
    with pytest.warns(UndefinedMetricWarning):
        a = R.grouped_roc_auc(y, s, g)
        b = R.grouped_roc_auc(y, s, g2)
    assert b.query_ids.tolist() == ["u0", "u1", "u2"]
    np.testing.assert_allclose(a.values, b.values)
    yy = np.array([[1, 0, 1, 0], [0, 1, 1, 0]])
    ss = np.array([[0.5, 0.5, 0.9, 0.1], [0.1, 0.2, 0.3, 0.4]])
    r = R.grouped_roc_auc(yy, ss)
    np.testing.assert_allclose(r.values, [0.875, 0.5])


# --------------------------------------------------------------------------
# undefined queries, invalid input, result type
# --------------------------------------------------------------------------

def test_undefined_queries_nan_skip_and_zero():
    y = np.array([0, 0, 1, 0])
    s = np.array([0.9, 0.1, 0.5, 0.4])
    q = np.array([7, 7, 8, 8])
    with pytest.warns(UndefinedMetricWarning, match="ndcg is undefined for 1 of 2"):
        r = R.ndcg(y, s, q)
    assert np.isnan(r.values[0]) and r.values[1] == 1.0 and r.mean == 1.0
    assert r.n_undefined == 1 and r.query_ids.tolist() == [7, 8]
    z = R.ndcg(y, s, q, undefined="zero")
    assert z.values.tolist() == [0.0, 1.0] and z.mean == 0.5 and z.n_undefined == 1
    for fn in (R.average_precision, R.reciprocal_rank, R.r_precision,
               lambda *a: R.recall_at_k(*a, k=1)):
        with pytest.warns(UndefinedMetricWarning):
            assert np.isnan(fn(y, s, q).values[0])
    # dcg and precision@k are defined without relevant items
    assert R.dcg(y, s, q).values[0] == 0.0 and R.dcg(y, s, q).n_undefined == 0
    assert R.precision_at_k(y, s, q, k=3).values.tolist() == [0.0, 1 / 3]
    y0 = np.zeros(4, dtype=int)
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(R.ndcg(y0, s, q).mean)


def test_invalid_values_under_jit_give_nan():
    import jax
    import jax.numpy as jnp
    y = jnp.asarray([1, 0, 1])
    s = jnp.asarray([0.1, jnp.nan, 0.3])
    q = jnp.asarray([0, 0, 1])
    r = jax.jit(lambda a, b, c: R.ndcg(a, b, c, num_segments=2))(y, s, q)
    assert np.all(np.isnan(np.asarray(r.values))) and np.isnan(float(r.mean))
    r2 = jax.jit(lambda a, b, c: R.ndcg(a, b, c, num_segments=2))(
        y, jnp.asarray([0.1, 0.2, 0.3]), jnp.asarray([0, 0, 9]))
    assert np.all(np.isnan(np.asarray(r2.values)))
    r3 = jax.jit(lambda a, b, c: R.grouped_roc_auc(a, b, c, num_segments=2))(
        jnp.asarray([2, 0, 1]), jnp.asarray([0.1, 0.2, 0.3]), q)
    assert np.isnan(float(r3.mean))


def test_errors():
    y, s, q = np.array([1, 0]), np.array([0.5, 0.2]), np.array([0, 0])
    with pytest.raises(ValueError, match="k must be a positive integer, got 0"):
        R.ndcg(y, s, q, k=0)
    with pytest.raises(ValueError, match="k must be a positive integer or a sequence"):
        R.ndcg(y, s, q, k=1.5)
    with pytest.raises(ValueError, match="non-empty sequence"):
        R.ndcg(y, s, q, k=[])
    with pytest.raises(ValueError, match="k is required"):
        R.precision_at_k(y, s, q, k=None)
    with pytest.raises(ValueError, match="ties must be one of \\('average', 'trec_eval'\\)"):
        R.ndcg(y, s, q, ties="first")
    with pytest.raises(ValueError, match="gain must be one of \\('linear', 'exponential'\\)"):
        R.ndcg(y, s, q, gain="log")
    with pytest.raises(ValueError, match="doc_id is required"):
        R.ndcg(y, s, q, ties="trec_eval")
    with pytest.raises(ValueError, match="undefined must be one of \\('skip', 'zero'\\)"):
        R.ndcg(y, s, q, undefined="ignore")
    with pytest.raises(ValueError, match="relevance_level must be a number"):
        R.average_precision(y, s, q, relevance_level="2")
    with pytest.raises(ValueError, match="retrieved must be a boolean mask"):
        R.ndcg(y, s, q, retrieved=np.array([1, 0]))
    with pytest.raises(ValueError, match="y_score has 3 elements but y_true has 2"):
        R.ndcg(y, np.array([0.1, 0.2, 0.3]), q)
    with pytest.raises(ValueError, match="y_true is empty"):
        R.ndcg(np.array([]), np.array([]), np.array([]))
    with pytest.raises(ValueError, match="y_score must be finite"):
        R.ndcg(y, np.array([np.nan, 1.0]), q)
    with pytest.raises(ValueError, match="y_true must be finite"):
        R.ndcg(np.array([np.inf, 1.0]), s, q)
    with pytest.raises(ValueError, match="y_score must be numeric scores, not booleans"):
        R.ndcg(y, np.array([True, False]), q)
    with pytest.raises(ValueError, match="query_id must be 1-D"):
        R.ndcg(y, s, np.zeros((2, 1)))
    with pytest.raises(ValueError, match="without query_id, y_true and y_score must be 2-D"):
        R.ndcg(y, s)
    with pytest.raises(ValueError, match=r"y_true has shape \(1, 2\) but y_score has"):
        R.ndcg(np.ones((1, 2)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="at least one query and one document"):
        R.ndcg(np.ones((0, 2)), np.ones((0, 2)))
    with pytest.raises(ValueError, match=r"doc_id has shape \(3,\) but y_true has \(1, 2\)"):
        R.ndcg(np.ones((1, 2)), np.ones((1, 2)), ties="trec_eval", doc_id=np.arange(3))
    with pytest.raises(ValueError, match=r"query_id must be in 0..num_segments-1 = 0..0"):
        R.ndcg(y, s, np.array([0, 1]), num_segments=1)
    with pytest.raises(ValueError, match="weighting must be one of \\('uniform', 'size', 'positives'\\)"):
        R.grouped_roc_auc(y, s, q, weighting="impressions")
    with pytest.raises(ValueError, match="y_true must contain only 0 and 1"):
        R.grouped_roc_auc(np.array([2, 0]), s, q)
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        R.grouped_roc_auc(y, s, q, sample_weight=np.array([1.0, -1.0]))
    import jax
    import jax.numpy as jnp
    with pytest.raises(ValueError, match="num_segments is required under jit"):
        jax.jit(lambda a, b, c: R.ndcg(a, b, c).mean)(jnp.asarray(y), jnp.asarray(s),
                                                      jnp.asarray(q))


def test_public_surface():
    for name in R.__all__:
        assert hasattr(R, name)
    for name in ("dcg", "ndcg", "reciprocal_rank", "r_precision", "grouped_roc_auc",
                 "QueryResult"):
        assert name in calipers.__all__ and getattr(calipers, name) is getattr(R, name)
    # The top-level precision_at_k / recall_at_k stay the binary ones.
    assert calipers.precision_at_k is not R.precision_at_k
    assert calipers.recall_at_k is not R.recall_at_k
    r = R.ndcg([[1, 0]], [[0.2, 0.1]])
    with pytest.raises(AttributeError):
        r.mean = 0.0


@pytest.mark.parametrize("layout", ["2d", "grouped", "ragged", "shuffled", "string_ids",
                                    "float_y", "no_gain"])
def test_numpy_fast_path_equals_segment_sort(layout):
    # integer gains take the ideal DCG from per-level counts, float gains a sort
    from calipers.retrieval._measures import _Dense, _Ranking
    rng = np.random.default_rng(21)
    sizes = np.full(6, 9) if layout in ("2d", "grouped", "no_gain") else \
        rng.integers(1, 12, 6)
    q = np.repeat(np.arange(6) * 10, sizes)
    y = rng.integers(-1, 4, q.shape[0])
    y[q == 10] = np.minimum(y[q == 10], 0)        # a query without a relevant document
    if layout == "float_y":
        y = y / 2
    if layout == "no_gain":
        y = np.minimum(y, 0)
    s = rng.integers(0, 4, q.shape[0]).astype(float)
    if layout in ("shuffled", "string_ids"):
        p = rng.permutation(q.shape[0])
        q, y, s = q[p], y[p], s[p]
    if layout == "string_ids":
        q = np.array([f"q{v:03d}" for v in q])
    args = (y.reshape(6, 9), s.reshape(6, 9), None) if layout == "2d" else (y, s, q)
    dense = _Dense.build(*args, ties="average", doc_id=None, retrieved=None)
    assert (dense is None) == (layout == "string_ids")
    general = _Ranking(*args)
    if dense is None:
        return
    for k in (1, 3, 9, 20, None):
        np.testing.assert_allclose(dense.dcg(k), general.dcg(k), rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(dense.idcg(k), general.idcg(k), rtol=1e-13, atol=1e-13)
        if k is not None:
            np.testing.assert_allclose(dense.hits(k), general.hits(k), rtol=1e-13,
                                       atol=1e-13)
    np.testing.assert_array_equal(dense.ss.query_ids, general.ss.query_ids)
    np.testing.assert_array_equal(dense.no_gain(), general.no_gain())


def test_eager_jax_checks_eagerly_warns_and_reuses_the_compiled_kernel():
    import jax.numpy as jnp
    from calipers._core import compile as _compile
    y = jnp.asarray([0, 0, 1, 2])
    s = jnp.asarray([0.3, 0.1, 0.5, 0.5])
    q = jnp.asarray([5, 5, 9, 9])
    with pytest.raises(ValueError, match="y_score must be finite"):
        R.ndcg(y, jnp.asarray([0.3, jnp.nan, 0.5, 0.5]), q)
    with pytest.raises(ValueError, match="y_true must contain only 0 and 1"):
        R.grouped_roc_auc(y, s, q)
    with pytest.warns(UndefinedMetricWarning, match="ndcg is undefined for 1 of 2"):
        r = R.ndcg(y, s, q, k=2)
    assert r.n_undefined == 1 and np.asarray(r.query_ids).tolist() == [5, 9]
    before = _compile.cache_info()
    with pytest.warns(UndefinedMetricWarning):
        r2 = R.ndcg(y, s + 1.0, q, k=2)
    after = _compile.cache_info()   # the one compile policy's cache: a hit, no new program
    assert after["hits"] == before["hits"] + 1 and after["misses"] == before["misses"]
    np.testing.assert_allclose(np.asarray(r2.values), np.asarray(r.values))


def test_vmap_over_score_batches_under_jit():
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(8)
    q = np.sort(rng.integers(0, 5, 40))
    y = rng.integers(0, 3, 40)
    S = rng.integers(0, 4, (3, 40)).astype(float)

    def both(s):
        return (R.ndcg(jnp.asarray(y), s, jnp.asarray(q), k=3, num_segments=5).values,
                R.grouped_roc_auc(jnp.asarray(y > 0), s, jnp.asarray(q), num_segments=5).mean)

    nd, ga = jax.jit(jax.vmap(both))(jnp.asarray(S))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for i in range(3):
            np.testing.assert_allclose(np.asarray(nd[i]), R.ndcg(y, S[i], q, k=3).values,
                                       rtol=1e-12)
            np.testing.assert_allclose(float(ga[i]), float(R.grouped_roc_auc(
                (y > 0).astype(int), S[i], q).mean), rtol=1e-12)


@pytest.mark.parametrize("name", ["numpy", "jax"])
def test_grouped_auc_group_id_keyword(name):
    """``group_id=`` by keyword (the documented name) equals the positional call."""
    import jax.numpy as jnp
    conv = np.asarray if name == "numpy" else jnp.asarray
    g, y, s = (conv(v) for v in ([0, 0, 0, 1, 1, 1], [1, 0, 1, 0, 1, 0], [.9, .2, .4, .3, .8, .1]))
    a = calipers.grouped_roc_auc(y, s, group_id=g)
    b = calipers.grouped_roc_auc(y, s, g)
    np.testing.assert_allclose(np.asarray(a.values), np.asarray(b.values))
    with pytest.raises(TypeError, match="multiple values"):
        calipers.grouped_roc_auc(y, s, g, group_id=g)


def test_query_result_is_a_result_type_pytree():
    jax = pytest.importorskip("jax")
    r = R.ndcg([[1, 0, 2]], [[0.2, 0.1, 0.3]], k=2)
    leaves, tree = jax.tree_util.tree_flatten(r)
    assert len(leaves) == 4                       # values, query_ids, mean, n_undefined
    back = jax.tree_util.tree_unflatten(tree, leaves)
    assert back.k == 2 and back.metric == "ndcg"  # static (meta) fields survive
    import dataclasses
    assert dataclasses.is_dataclass(r)


@pytest.mark.parametrize("k", [1, 3, 10, 37, 100, None])
def test_numpy_fast_path_top_k_with_ties_above_the_kth_score(k):
    """The dense path orders the entries above the k-th largest score by (row, rank among
    the row's top values); with many ties above and at the k-th score it must equal the
    segment sort's expectation over tie orderings."""
    rng = np.random.default_rng(5)
    Q, L = 200, 100
    y = rng.integers(0, 4, (Q, L))
    s = np.round(rng.normal(size=(Q, L)), 1)          # about 60 distinct values per row
    s[:20] = rng.integers(0, 3, (20, L))                  # rows of very heavy ties
    # up to 100 terms summed in another order: the suite's float64 agreement, 1e-12
    _dense_equals_general((y, s, None), [k])


def _dense_equals_general(args, ks, **kw):
    """Every piece the dense path serves equals the segment sort's (float64 agreement 1e-12)."""
    from calipers.retrieval._measures import _Dense, _Ranking
    dense = _Dense.build(*args, ties="average", doc_id=None, retrieved=None, **kw)
    assert dense is not None
    general = _Ranking(*args, **kw)
    for k in ks:
        np.testing.assert_allclose(dense.dcg(k), general.dcg(k), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(dense.idcg(k), general.idcg(k), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(dense.hits(k), general.hits(k), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(dense.n_rel(), general.n_rel())
    np.testing.assert_array_equal(dense.no_gain(), general.no_gain())
    np.testing.assert_array_equal(dense.ss.query_ids, general.ss.query_ids)
    return dense


@pytest.mark.parametrize("score_kind", ["float", "int", "float32"])
@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_numpy_fast_path_flat_equal_runs_with_ties_straddling_k(score_kind, gain):
    """Flat ids in equal runs (the reshape route): tie groups straddling position k (rows
    padded to the longest candidate list), rows of one score, k beyond the list length,
    negative grades, a query without relevant documents; against the segment sort."""
    rng = np.random.default_rng(31)
    Q, L = 40, 12
    q = np.repeat(np.arange(Q) * 3 + 7, L)
    y = rng.integers(-1, 4, Q * L)
    y[q == 10] = np.minimum(y[q == 10], 0)
    s = rng.integers(0, 4, Q * L).astype(float)
    s[(q >= 20) & (q < 30)] = 1.5                         # whole rows tied
    s[q == 40] = rng.normal(size=L)                       # one row without ties
    if score_kind == "int":
        s = (s * 2).astype(np.int64)
    elif score_kind == "float32":
        s = s.astype(np.float32)
    for kw in ({"gain": gain}, {"relevance_level": 2}, {"relevance_level": 0}):
        if "relevance_level" in kw and gain == "exponential":
            continue
        _dense_equals_general((y, s, q), (1, 2, 5, 11, 12, 13, 40, None), **kw)
    with pytest.warns(UndefinedMetricWarning, match="ndcg is undefined for 1 of 40"):
        r = R.ndcg(y, s, q, k=5, gain=gain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        ref = R.ndcg(y, s, q.astype(float), k=5, gain=gain)     # float ids: the segment sort
    assert np.isnan(r.values[q[::L] == 10]).all() and r.n_undefined == 1
    np.testing.assert_allclose(r.values, ref.values, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(r.query_ids, q[::L])


@pytest.mark.parametrize("top", [1, 4, 5, 9, 20, 10**6])
def test_numpy_fast_path_ideal_dcg_from_grade_counts(top):
    """Integer grades: the ideal DCG from per-row grade counts (packed in one int32 or int64
    row sum up to 62 bits, else one bincount, else a sort), against the segment sort."""
    rng = np.random.default_rng(top)
    Q, L = 30, 100
    y = rng.integers(-2, top + 1, (Q, L)) * (rng.random((Q, L)) < 0.4)
    y[3] = 0
    y[4, 7] = top                                      # a single relevant document
    s = np.round(rng.normal(size=(Q, L)), 1)
    # exponential gains of grade 20 (2**20) leave float noise above 1e-12 in either path
    for gain in ("linear", "exponential") if top < 10 else ("linear",):
        _dense_equals_general((y, s, None), (1, 10, 99, 100, 101, None), gain=gain)
    for dt in (np.uint64, np.uint8, np.int8):         # other integer dtypes, same routes
        if np.iinfo(dt).max >= top:
            yd = np.maximum(y, 0).astype(dt)
            _dense_equals_general((yd, s, None), (1, 10, None))


def test_equal_runs_recognises_only_increasing_runs_of_one_length():
    from calipers._kernels.segments import _equal_runs, grouped_sizes_numpy
    q = np.repeat(np.array([2, 5, 9]), 4)
    ids, sizes = _equal_runs(q)
    assert sizes.tolist() == [4, 4, 4] and ids.tolist() == [2, 5, 9]
    assert not np.shares_memory(ids, q)            # query_ids never alias the input
    ids, sizes = _equal_runs(np.full(7, 3))
    assert sizes.tolist() == [7] and ids.tolist() == [3]
    assert not np.shares_memory(ids, q)
    for q in ([0, 0, 1, 1, 1, 2], [1, 1, 0, 0], [0, 0, 1, 1, 0, 0], [0, 0, 1, 2, 2, 2],
              [0, 0, 1, 0]):
        q = np.asarray(q)
        assert _equal_runs(q) is None, q
        # the general route of grouped_sizes_numpy: run lengths of grouped ids, else None
        got = grouped_sizes_numpy(q)
        if np.all(q[1:] >= q[:-1]):
            u, c = np.unique(q, return_counts=True)
            assert got[0].tolist() == u.tolist() and got[1].tolist() == c.tolist()
        else:
            assert got is None


@pytest.mark.parametrize("layout", ["ragged", "shuffled", "descending_runs"])
def test_numpy_fast_path_other_id_layouts_fall_back_correctly(layout):
    """Ids that are not increasing equal runs take the grouping route (sorted, padded);
    padded slots never count as relevant, even with relevance_level <= 0."""
    rng = np.random.default_rng(32)
    sizes = rng.integers(1, 15, 25) if layout == "ragged" else np.full(25, 8)
    q = np.repeat(np.arange(25), sizes)
    if layout == "descending_runs":
        q = q.max() - q
    y = rng.integers(-1, 3, q.shape[0])
    s = rng.integers(0, 3, q.shape[0]).astype(float)
    if layout == "shuffled":
        p = rng.permutation(q.shape[0])
        q, y, s = q[p], y[p], s[p]
    for kw in ({}, {"relevance_level": 0}, {"relevance_level": -1}):
        _dense_equals_general((y, s, q), (1, 3, 8, 14, 30, None), **kw)
    for kw in ({"relevance_level": 0}, {}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            a = R.recall_at_k(y, s, q, k=3, **kw)
            b = R.recall_at_k(y, s, q.astype(float), k=3, **kw)   # the segment sort
        np.testing.assert_allclose(a.values, b.values, rtol=1e-12, atol=1e-12)


def test_numpy_fast_path_every_row_one_tie_group_and_strided_input():
    """Every row one tie group (nothing scores above the k-th score: the top-k block is all
    padding) and a transposed (non-contiguous) 2-D input, against the segment sort and the
    closed form: with all scores tied, DCG@k = sum(gains) / L * sum_{r<k} 1/log2(r+2)."""
    rng = np.random.default_rng(33)
    y = rng.integers(-1, 4, (15, 7))
    s = np.ones((15, 7))
    d = _dense_equals_general((y, s, None), (1, 3, 7, 9, None))
    disc = 1 / np.log2(np.arange(7) + 2)
    for k in (1, 3, 7):
        np.testing.assert_allclose(d.dcg(k), np.maximum(y, 0).sum(1) / 7 * disc[:k].sum(),
                                   rtol=1e-13)
    yt, st_ = rng.integers(0, 3, (9, 20)).T, np.round(rng.normal(size=(9, 20)), 1).T
    assert not st_.flags.c_contiguous
    _dense_equals_general((yt, st_, None), (1, 4, 9, None))
