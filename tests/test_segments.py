"""The sort-and-group helper under every per-query metric (calipers._kernels.segments)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calipers._kernels import segments as S
from conftest import to_np


def _brute(ids, scores, tie=None):
    """Reference: Python sort by (id, -score, -tie) and tie groups by scanning."""
    ids = list(ids)
    uniq = sorted(set(ids))
    code = {u: i for i, u in enumerate(uniq)}
    rows = list(range(len(ids)))
    key = (lambda i: (code[ids[i]], -scores[i], -tie[i])) if tie is not None else \
        (lambda i: (code[ids[i]], -scores[i]))
    rows.sort(key=key)
    seg = [code[ids[i]] for i in rows]
    rank, lo, hi = [], [], []
    for p, i in enumerate(rows):
        start = seg.index(seg[p])
        rank.append(p - start)
        if tie is not None:
            lo.append(p - start)
            hi.append(p - start)
            continue
        same = [q for q in range(len(rows)) if seg[q] == seg[p] and scores[rows[q]] == scores[i]]
        lo.append(min(same) - start)
        hi.append(max(same) - start)
    return uniq, seg, rank, lo, hi, [scores[i] for i in rows]


def _check(ss, ids, scores, tie=None):
    uniq, seg, rank, lo, hi, sorted_scores = _brute(ids, scores, tie)
    order = to_np(ss.order).astype(int)
    assert sorted(order.tolist()) == list(range(len(ids)))
    assert to_np(ss.seg).astype(int).tolist() == seg
    assert to_np(ss.rank).astype(int).tolist() == rank
    assert to_np(ss.tie_lo).astype(int).tolist() == lo
    assert to_np(ss.tie_hi).astype(int).tolist() == hi
    assert np.asarray(scores)[order].tolist() == sorted_scores
    if tie is not None:   # exact order when ties are broken
        code = {u: i for i, u in enumerate(uniq)}
        assert order.tolist() == sorted(range(len(ids)),
                                        key=lambda i: (code[ids[i]], -scores[i], -tie[i]))
    sizes = np.bincount(seg, minlength=len(uniq))
    assert to_np(ss.seg_size).astype(int).tolist() == sizes.tolist()
    assert to_np(ss.seg_start).astype(int).tolist() == \
        np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()


def _case(rng, n, q, levels=4):
    ids = rng.choice(np.array([3, 17, 1_000_000_007, -5, 42])[:q], size=n)
    scores = rng.integers(0, levels, size=n).astype(np.float64) / 2
    return ids, scores


@pytest.mark.parametrize("layout", ["shuffled", "grouped_equal", "grouped_ragged", "sparse"])
def test_numpy_paths_match_brute_force(layout):
    rng = np.random.default_rng(1)
    if layout == "grouped_equal":
        ids = np.repeat(np.array([2, 9, 11]), 6)
        scores = rng.integers(0, 3, 18).astype(float)
    elif layout == "grouped_ragged":
        ids = np.repeat(np.array([2, 9, 11, 12]), [1, 7, 3, 5])
        scores = rng.integers(0, 3, 16).astype(float)
    elif layout == "sparse":   # one long query and many short ones: no padding
        ids = np.concatenate([np.zeros(3000, int), np.arange(1, 40)])
        scores = rng.integers(0, 50, ids.shape[0]).astype(float)
    else:
        ids, scores = _case(rng, 40, 5)
    ss = S.segment_sort(ids, scores, np)
    if layout != "sparse":
        _check(ss, ids.tolist(), scores.tolist())
    else:
        uniq, seg, rank, lo, hi, srt = _brute(ids.tolist(), scores.tolist())
        assert to_np(ss.tie_lo).astype(int).tolist() == lo
        assert np.asarray(scores)[ss.order].tolist() == srt
    assert ss.grouped == (layout != "shuffled")
    tie = rng.permutation(ids.shape[0])
    ss2 = S.segment_sort(ids, scores, np, tie_key=tie)
    uniq, seg, rank, lo, hi, srt = _brute(ids.tolist(), scores.tolist(), tie.tolist())
    order = np.asarray(ss2.order)
    expect = sorted(range(ids.shape[0]), key=lambda i: (uniq.index(ids[i]), -scores[i], -tie[i]))
    assert order.tolist() == expect


def test_all_backends_with_and_without_tie_key(backend):
    rng = np.random.default_rng(2)
    q = rng.integers(0, 5, 30)
    s = rng.integers(0, 4, 30).astype(float)
    tie = rng.permutation(30)

    def run(qq, ss_, tt):
        ss = S.segment_sort(qq, ss_, backend.xp if not backend.is_jax else _jnp(),
                            num_segments=5 if backend.jit else None, tie_key=tt)
        return ss.order, ss.seg, ss.rank, ss.tie_lo, ss.tie_hi, ss.seg_start, ss.seg_size

    for t in (None, tie):
        out = backend.call(run, q, s, t)
        expect = sorted(range(30), key=lambda i: (q[i], -s[i]) + ((-t[i],) if t is not None
                                                                   else ()))
        order = to_np(out[0]).astype(int)
        assert [(q[i], s[i]) for i in order] == [(q[i], s[i]) for i in expect]
        if t is not None:
            assert order.tolist() == expect
        uniq, seg, rank, lo, hi, _ = _brute(q.tolist(), s.tolist(),
                                            None if t is None else t.tolist())
        assert to_np(out[1]).astype(int).tolist() == seg
        assert to_np(out[2]).astype(int).tolist() == rank
        assert to_np(out[3]).astype(int).tolist() == lo
        assert to_np(out[4]).astype(int).tolist() == hi


def _jnp():
    import jax.numpy as jnp
    return jnp


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=1, max_size=25))
def test_property_numpy_matches_brute_force(rows):
    ids = np.array([r[0] * 1000 for r in rows])
    scores = np.array([float(r[1]) for r in rows])
    _check(S.segment_sort(ids, scores, np), ids.tolist(), scores.tolist())


def test_factorize_arbitrary_ids():
    ids = np.array(["q10", "q2", "q10", "a"])
    codes, qids, Q, invalid, grouped = S.factorize(ids, np)
    assert Q == 3 and qids.tolist() == ["a", "q10", "q2"]
    assert codes.tolist() == [1, 2, 1, 0]
    codes, qids, Q, _, grouped = S.factorize(np.array([5, 5, 9, 10**12]), np)
    assert grouped and Q == 3 and codes.tolist() == [0, 0, 1, 2]
    assert qids.tolist() == [5, 9, 10**12]
    codes, qids, Q, _, _ = S.factorize(np.array([0.5, -1.0, 0.5]), np)
    assert codes.tolist() == [1, 0, 1] and qids.tolist() == [-1.0, 0.5]


def test_factorize_generic_namespace():
    import array_api_strict as xs
    with xs.ArrayAPIStrictFlags(boolean_indexing=False, data_dependent_shapes=False):
        codes, qids, Q, _, _ = S.factorize(xs.asarray([7, 3, 7, 100]), xs)
        assert Q == 3
        assert to_np(codes).tolist() == [1, 0, 1, 2]
        assert to_np(qids).tolist() == [3, 7, 100]


def test_segment_sums_and_sorted_within_segments(backend):
    rng = np.random.default_rng(3)
    q = rng.integers(0, 4, 25)
    s = rng.random(25)
    v = rng.integers(0, 5, 25).astype(float)

    def run(qq, ss_, vv):
        xp = _jnp() if backend.is_jax else backend.xp
        ss = S.segment_sort(qq, ss_, xp, num_segments=4)
        return S.segment_sums(xp.take(vv, ss.order), ss, xp), \
            S.sorted_within_segments(vv, ss, xp), ss.seg

    sums, srt, seg = backend.call(run, q, s, v)
    np.testing.assert_allclose(to_np(sums), [v[q == i].sum() for i in range(4)])
    seg = to_np(seg).astype(int)
    srt = to_np(srt)
    for i in range(4):
        assert srt[seg == i].tolist() == sorted(v[q == i].tolist(), reverse=True)


def test_empty_segments_with_num_segments():
    ss = S.segment_sort(np.array([0, 3, 3]), np.array([1.0, 2.0, 1.0]), np, num_segments=5)
    assert ss.seg_size.tolist() == [1, 0, 0, 2, 0]
    assert ss.query_ids.tolist() == [0, 1, 2, 3, 4]
    assert ss.rank.tolist() == [0, 0, 1]


def test_errors():
    with pytest.raises(ValueError, match="num_segments must be a positive integer"):
        S.segment_sort(np.array([0]), np.array([1.0]), np, num_segments=0)
    with pytest.raises(ValueError, match=r"query_id must be in 0..num_segments-1 = 0..1; "
                                         r"element 1 is 2"):
        S.segment_sort(np.array([0, 2]), np.array([1.0, 2.0]), np, num_segments=2)
    with pytest.raises(ValueError, match="must be integers in 0..num_segments-1"):
        S.segment_sort(np.array([0.0]), np.array([1.0]), np, num_segments=2)
    with pytest.raises(ValueError, match="query_id must be finite"):
        S.segment_sort(np.array([np.nan]), np.array([1.0]), np)
    import jax
    import jax.numpy as jnp
    with pytest.raises(ValueError, match="num_segments is required under jit"):
        jax.jit(lambda q, s: S.segment_sort(q, s, jnp).order)(jnp.zeros(2, int), jnp.ones(2))


def test_out_of_range_ids_under_jit_flag_invalid():
    import jax
    import jax.numpy as jnp
    inv = jax.jit(lambda q, s: S.segment_sort(q, s, jnp, num_segments=2).invalid)(
        jnp.asarray([0, 5]), jnp.ones(2))
    assert bool(inv)
    ok = jax.jit(lambda q, s: S.segment_sort(q, s, jnp, num_segments=2).invalid)(
        jnp.asarray([0, 1]), jnp.ones(2))
    assert not bool(ok)


@pytest.mark.parametrize("ids", [np.array([5, -3, 5, 2**40, 0, -3]), np.array([], dtype=np.int64),
                                 np.array([3, 1, 2], dtype=np.uint8),
                                 np.array([2**63 - 1, 0, 5], dtype=np.int64),
                                 np.array([1.5, -2.0, 1.5])])
def test_argsort_ints_is_a_stable_argsort(ids):
    np.testing.assert_array_equal(S.argsort_ints(ids), np.argsort(ids, kind="stable"))


@pytest.mark.parametrize("sizes", [[3, 3, 3], [1, 4, 0, 2], [5]])
def test_pad_segments_against_python_rows(backend, sizes):
    # Reference: each segment's slice, padded by hand; the block rows and mask must match.
    rng = np.random.default_rng(len(sizes))
    sizes = np.array(sizes)
    n = int(sizes.sum())
    v = rng.integers(-5, 5, n).astype(np.float64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    L = int(sizes.max()) + 1
    want = np.full((len(sizes), L), 99.0)
    for q, (a, m) in enumerate(zip(starts, sizes)):
        want[q, :m] = v[a:a + m]

    def run(vv, st, sz):
        xp = _jnp() if backend.is_jax else backend.xp
        return S.pad_segments(vv, st, sz, L, xp, fill=99)

    blk, mask = backend.call(run, v, starts, sizes)
    np.testing.assert_array_equal(to_np(blk), want)
    np.testing.assert_array_equal(to_np(mask).astype(bool),
                                  np.arange(L)[None, :] < sizes[:, None])
    # Equal sizes and L equal to the size: the NumPy shortcut (a reshape) agrees.
    if backend.name == "numpy" and len(set(sizes.tolist())) == 1:
        b2, m2 = S.pad_segments(v, starts, sizes, int(sizes[0]), np)
        np.testing.assert_array_equal(b2, want[:, :sizes[0]])
        assert m2.all()
