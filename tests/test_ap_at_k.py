"""AP@k (trec_eval ``map_cut``) per query, and P@k / AP@k in ranking_batch_metrics.

References: brute force over every ordering of tied documents (the expected value over
orderings, McSherry & Najork 2008), with exact fractions; on distinct scores the one
ordering is trec_eval's.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import calipers
from calipers import retrieval as R

# queries without a relevant item are undefined (NaN, warned): the tests check the NaN
pytestmark = pytest.mark.filterwarnings("ignore::calipers.UndefinedMetricWarning")


def _ap_at_k_one_order(rel_in_order, k, n_rel):
    hits, total = 0, Fraction(0)
    for i, r in enumerate(rel_in_order[:k]):
        if r:
            hits += 1
            total += Fraction(hits, i + 1)
    return total / n_rel


def _expected_ap_at_k(rel, score, k):
    """Mean over every ordering of tied scores (each tie group permuted)."""
    order = np.argsort(-score, kind="stable")
    groups = []
    for s in sorted(set(score.tolist()), reverse=True):
        groups.append([i for i in order if score[i] == s])
    n_rel = int(sum(rel))
    vals = []
    for perm in itertools.product(*[list(itertools.permutations(g)) for g in groups]):
        seq = [rel[i] for g in perm for i in g]
        vals.append(_ap_at_k_one_order(seq, k, n_rel))
    return sum(vals, Fraction(0)) / len(vals)


def _queries(rng, Q=6, L=6, levels=3):
    sizes = rng.integers(1, L + 1, Q)
    qid = np.repeat(np.arange(Q), sizes)
    rel = (rng.random(qid.shape[0]) < 0.45).astype(np.int64)
    score = rng.integers(0, levels, qid.shape[0]).astype(np.float64)
    return qid, rel, score


@pytest.mark.parametrize("seed", range(4))
def test_ap_at_k_equals_the_expectation_over_tied_orderings(seed):
    rng = np.random.default_rng(seed)
    qid, rel, score = _queries(rng)
    ks = (1, 2, 3, 5)
    got = R.average_precision(rel, score, qid, k=ks)
    assert np.asarray(got.values).shape == (len(ks), 6)
    for j, k in enumerate(ks):
        one = R.average_precision(rel, score, qid, k=k)
        for q in range(6):
            m = qid == q
            if rel[m].sum() == 0:
                assert np.isnan(got.values[j, q]) and np.isnan(one.values[q])
                continue
            want = float(_expected_ap_at_k(rel[m], score[m], k))
            assert got.values[j, q] == pytest.approx(want, abs=1e-12)
            assert one.values[q] == got.values[j, q]


def test_ap_at_k_past_every_rank_is_ap_and_distinct_scores_are_one_ordering():
    rng = np.random.default_rng(7)
    qid, rel, _ = _queries(rng)
    score = rng.permutation(qid.shape[0]).astype(np.float64)     # no ties
    full = R.average_precision(rel, score, qid)
    np.testing.assert_array_equal(R.average_precision(rel, score, qid, k=100).values,
                                  full.values)
    for q in range(6):
        m = qid == q
        if rel[m].sum():
            order = np.argsort(-score[m])
            want = _ap_at_k_one_order(list(rel[m][order]), 2, int(rel[m].sum()))
            assert R.average_precision(rel, score, qid, k=2).values[q] == \
                pytest.approx(float(want), abs=1e-12)


def test_ap_at_k_refuses_bad_k():
    with pytest.raises(ValueError, match="k must be a positive integer"):
        R.average_precision([1, 0], [0.2, 0.1], k=0)


def _padded(qid, rel, score, L=6):
    Q = int(qid.max()) + 1
    Y = np.zeros((Q, L), np.int64)
    S = np.zeros((Q, L))
    M = np.zeros((Q, L), bool)
    for q in range(Q):
        m = qid == q
        n = int(m.sum())
        Y[q, :n], S[q, :n], M[q, :n] = rel[m], score[m], True
        S[q, n:] = 99.0                                    # padding: garbage, masked
    return Y, S, M


@pytest.mark.parametrize("backend", ["numpy", "jax_eager", "jax_jit"])
def test_ranking_batch_metrics_gives_precision_and_ap_at_each_k(backend):
    rng = np.random.default_rng(3)
    qid, rel, score = _queries(rng)
    Y, S, M = _padded(qid, rel, score)
    ks = (1, 3)
    if backend == "numpy":
        out = calipers.ranking_batch_metrics(Y, S, M, k=ks)
    else:
        jax = pytest.importorskip("jax")
        jnp = jax.numpy
        args = [jnp.asarray(a) for a in (Y, S, M)]
        f = (lambda y, s, m: calipers.ranking_batch_metrics(y, s, m, k=ks))
        out = jax.jit(f)(*args) if backend == "jax_jit" else f(*args)
    for k in ks:
        b = out[k]
        np.testing.assert_allclose(np.asarray(b.precision),
                                   R.precision_at_k(rel, score, qid, k=k).values, atol=1e-6)
        np.testing.assert_allclose(np.asarray(b.average_precision),
                                   R.average_precision(rel, score, qid, k=k).values,
                                   atol=1e-6, equal_nan=True)


def test_query_mean_state_of_five_metrics_holds_precision_and_ap():
    rng = np.random.default_rng(5)
    qid, rel, score = _queries(rng)
    Y, S, M = _padded(qid, rel, score)
    st = calipers.QueryMeanState.init(5).update(calipers.ranking_batch_metrics(Y, S, M, k=3))
    mean = np.asarray(st.compute().mean)
    assert mean[3] == pytest.approx(R.precision_at_k(rel, score, qid, k=3).mean, abs=1e-12)
    assert mean[4] == pytest.approx(R.average_precision(rel, score, qid, k=3).mean, abs=1e-12)
    three = calipers.QueryMeanState.init().update(calipers.ranking_batch_metrics(Y, S, M, k=3))
    np.testing.assert_array_equal(np.asarray(three.compute().mean), mean[:3])


def test_a_dict_of_cut_offs_fed_to_one_state_is_a_value_error():
    rng = np.random.default_rng(9)
    qid, rel, score = _queries(rng)
    Y, S, M = _padded(qid, rel, score)
    batches = calipers.ranking_batch_metrics(Y, S, M, k=(1, 5))
    with pytest.raises(ValueError, match=r"feed each cut-off's batch to its own QueryMeanState"):
        calipers.QueryMeanState.init(5).update(batches)


def test_empty_histogram_states_say_they_hold_no_rows():
    with pytest.warns(calipers.UndefinedMetricWarning,
                      match=r"ROCHistogramState: ROC AUC and AP are undefined \(it holds no rows\)"):
        calipers.ROCHistogramState.init(16).compute()
    st = calipers.ROCHistogramState.init(16).update(np.array([1, 1]), np.array([0.2, 0.4]))
    with pytest.warns(calipers.UndefinedMetricWarning, match=r"only one class"):
        st.compute()
