"""The one sort-and-group helper under every per-query and per-group metric.

Input is flat: a segment (query, user, group) id per row and a score per row.
:func:`segment_sort` orders the rows by (segment, score descending[, tie key
descending]) with one composite multi-key sort, and returns everything the
metrics need as static-shape arrays:

* ``order`` — sorted position -> input row;
* ``seg`` — segment (0 .. Q-1) of each sorted row;
* ``rank`` — 0-based rank of the row within its segment;
* ``seg_start`` / ``seg_size`` — where each segment lies in the sorted order;
* ``tie_lo`` / ``tie_hi`` — first/last rank (within the segment) of the row's
  tie group: rows of one segment with equal scores (singletons when a tie key
  such as a document id breaks ties);
* ``query_ids`` — the original id of each segment.

Ids: eagerly any ids are accepted and factorised to 0 .. Q-1 in sorted id
order (large or sparse ids cost nothing extra). With ``num_segments`` given
(required under ``jit``, the JAX convention) the ids must be integers in
``0 .. num_segments-1`` and segment ``i`` is id ``i``; ids without rows are empty
segments. Out-of-range ids raise ``ValueError`` eagerly; under ``jit`` they set
the ``invalid`` flag (callers return NaN).

Backends: JAX uses one ``lax.sort`` over (segment, -score[, -tie key], iota)
with ``num_keys`` 2 or 3. NumPy detects input already grouped by segment
(an O(n) check) and then sorts only within segments: equal-size segments as
rows of a 2-D array, ragged ones padded when that stays small; otherwise it
groups first with one stable integer sort. Other namespaces (array-api-strict)
chain stable ``argsort`` calls (least significant key first), which is the
same order.

Segment sums of any per-row quantity are differences of one prefix sum at the
segment bounds (:func:`segment_sums`). The padded ``(Q, L)`` layout (one row
per segment) is built in one place, :func:`pad_segments`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._core import xp as B
from .._core import validation as V

__all__ = ["SegmentSort", "factorize", "grouped_sizes_numpy", "pad_segments", "segment_sort",
           "segment_sums", "sorted_within_segments"]


class SegmentSort(NamedTuple):
    order: Any          # (n,) int: sorted position -> input row
    seg: Any            # (n,) int: segment of each sorted row
    rank: Any           # (n,) int: 0-based rank within the segment
    seg_start: Any      # (Q,) int: first sorted index of each segment
    seg_size: Any       # (Q,) int: rows per segment
    tie_lo: Any         # (n,) int: first rank of the row's tie group (within segment)
    tie_hi: Any         # (n,) int: last rank of the row's tie group
    num_segments: int
    query_ids: Any      # (Q,) the id of each segment
    invalid: Any        # scalar bool: ids out of range (jit only; eager raises)
    grouped: bool       # eager NumPy: input was already grouped by segment


# --------------------------------------------------------------------------
# ids -> 0 .. Q-1
# --------------------------------------------------------------------------

def factorize(ids, xp, *, num_segments=None, name="query_id", _perm_out=None):
    """Map segment ids to codes ``0 .. Q-1``.

    Returns ``(codes, query_ids, Q, invalid, grouped)``. ``grouped`` is True
    when the rows are known to be already grouped by segment (NumPy eager
    only; False means "unknown").
    """
    traced = B.is_traced(ids)
    ai = B.acc_int(xp)
    if num_segments is not None:
        if isinstance(num_segments, bool) or not isinstance(num_segments, (int, np.integer)) \
                or num_segments < 1:
            raise ValueError(f"num_segments must be a positive integer, got {num_segments!r}")
        Q = int(num_segments)
        if not xp.isdtype(ids.dtype, "integral"):
            raise ValueError(f"{name} must be integers in 0..num_segments-1 when num_segments "
                             f"is given, got dtype {ids.dtype}")
        bad = (ids < 0) | (ids >= Q)
        if not traced and bool(xp.any(bad)):
            i = B.first_index(bad, xp)
            raise ValueError(f"{name} must be in 0..num_segments-1 = 0..{Q - 1}; "
                             f"element {i} is {B.to_numpy(ids)[i].item()!r}")
        codes = xp.astype(xp.where(bad, xp.zeros_like(ids), ids), ai)
        qids = xp.arange(Q, dtype=ai, device=B.device(ids))
        return codes, qids, Q, xp.any(bad), False
    if traced:
        raise ValueError(f"num_segments is required under jit (the number of distinct {name} "
                         f"values must be static); pass num_segments=Q with {name} in 0..Q-1")
    if B.is_numpy(xp):
        a = np.asarray(ids)
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        n = a.shape[0]
        if n and a.dtype.kind in "iub":
            # Already grouped with increasing ids: codes from the id changes, no sort.
            if np.all(a[1:] >= a[:-1]):
                new = np.empty(n, dtype=bool)
                new[0] = True
                np.not_equal(a[1:], a[:-1], out=new[1:])
                codes = np.cumsum(new, dtype=np.int64) - 1
                return codes, a[new], int(codes[-1]) + 1, np.False_, True
        codes, uniq, perm = _factorize_sorted(a)
        if _perm_out is not None:
            _perm_out.append(perm)
        grouped = bool(n == 0 or np.all(codes[1:] >= codes[:-1]))
        return codes, uniq, int(uniq.shape[0]), np.False_, grouped
    # Generic namespace, eager: one stable sort of the ids, codes by id changes.
    V.check_finite(name, ids, xp)
    n = ids.shape[0]
    if n == 0:
        z = xp.zeros(0, dtype=ai, device=B.device(ids))
        return z, ids, 0, xp.asarray(False), False
    o = xp.argsort(ids, stable=True)
    sid = xp.take(ids, o)
    new = xp.concat([xp.ones(1, dtype=xp.bool, device=B.device(ids)), sid[1:] != sid[:-1]])
    cs = xp.cumulative_sum(xp.astype(new, ai)) - 1
    Q = int(cs[n - 1]) + 1
    inv = xp.argsort(o)
    codes = xp.take(cs, inv)
    first = xp.searchsorted(cs, xp.arange(Q, dtype=ai, device=B.device(ids)))
    return codes, xp.take(sid, first), Q, xp.asarray(False), False


def grouped_sizes_numpy(ids):
    """For NumPy integer ids already grouped in increasing order: ``(ids, sizes)``.

    O(n) and no sort; ``None`` when the ids are not integers in non-decreasing
    order (callers then fall back to :func:`factorize`). The ids returned are a
    copy (never a view of the caller's array).
    """
    a = np.asarray(ids)
    n = a.shape[0]
    if n == 0 or a.dtype.kind not in "iu":
        return None
    runs = _equal_runs(a)
    if runs is not None:
        return runs
    if not np.all(a[1:] >= a[:-1]):
        return None
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(a[1:], a[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, n))
    return a[starts], sizes


def _equal_runs(a):
    """``(ids, sizes)`` when ``a`` is increasing runs of one common length L, else None.

    The common layout of ranking data (every query with the same number of
    documents, rows grouped): one comparison pass over a (Q, L) view, no
    run-length encoding. Most other layouts fail on the first 2**16 ids.
    """
    n = a.shape[0]
    head = a[:min(n, 1 << 16)]
    j = np.flatnonzero(head != head[0])
    if j.shape[0] == 0:
        return (a[:1].copy(), np.full(1, n, dtype=np.int64)) if head.shape[0] == n else None
    L = int(j[0])
    if n % L:
        return None
    A = a.reshape(-1, L)
    first = A[:, 0]
    if not (np.all(first[1:] > first[:-1]) and np.all(A == first[:, None])):
        return None
    return first.copy(), np.full(first.shape[0], L, dtype=np.int64)


def argsort_ints(a):
    """Stable argsort of a NumPy integer array by one keys-only sort of packed keys.

    ``(value - min) * n + index`` fits in int64 for any realistic id range; a
    keys-only sort of it is several times faster than ``argsort`` and the
    permutation is its remainder mod n. Other dtypes: ``np.argsort``.
    """
    n = a.shape[0]
    if n and a.dtype.kind in "iu":
        lo, hi = int(a.min()), int(a.max())
        if -2**62 < lo and hi < 2**62 and (hi - lo + 1) * n < 2**62:
            key = (a.astype(np.int64) - lo) * n + np.arange(n, dtype=np.int64)
            key.sort()
            return key % n
    return np.argsort(a, kind="stable")


def _factorize_sorted(a):
    """NumPy ids -> (codes, sorted unique ids, perm) with one argsort.

    ``perm`` groups the rows by id (``codes[perm]`` is non-decreasing); the
    order inside a group is arbitrary (no metric depends on it: ties are
    averaged, or broken by a tie key).
    """
    n = a.shape[0]
    perm = argsort_ints(a)
    sid = a[perm]
    new = np.empty(n, dtype=bool)
    if n:
        new[0] = True
        np.not_equal(sid[1:], sid[:-1], out=new[1:])
    cs = np.cumsum(new, dtype=np.int64) - 1
    codes = np.empty(n, dtype=np.int64)
    codes[perm] = cs
    return codes, sid[new], perm


# --------------------------------------------------------------------------
# the padded (segments x list length) layout
# --------------------------------------------------------------------------

def pad_segments(values, seg_start, seg_size, L, xp, *, fill=0):
    """Flat rows grouped by segment -> a padded ``(Q, L)`` block and its mask.

    ``values`` (n,) holds the rows of segment 0, then segment 1, ...;
    segment ``q`` occupies ``values[seg_start[q] : seg_start[q] + seg_size[q]]``
    (as in a :class:`SegmentSort`'s sorted order, or grouped input order).
    Row ``q`` of the block is that slice followed by ``fill`` up to length
    ``L``; ``mask`` is True on real entries. Segments longer than ``L`` are
    cut at ``L``. One gather, no scatter, so it runs on every namespace and
    under ``jit`` with static ``Q`` (``seg_start.shape[0]``) and ``L``.
    ``block[mask]`` gives the rows back in order (when no segment exceeds L).
    """
    Q = seg_start.shape[0]
    n = values.shape[0]
    if B.is_numpy(xp) and not B.is_traced(values) and Q * L == n \
            and bool(np.all(np.asarray(seg_size) == L)):
        # Equal-size segments: the block is a view.
        return np.reshape(values, (Q, L)), np.ones((Q, L), dtype=bool)
    ai = B.acc_int(xp)
    dev = B.device(values)
    j = xp.reshape(xp.arange(L, dtype=ai, device=dev), (1, L))
    mask = j < xp.reshape(xp.astype(seg_size, ai), (Q, 1))
    idx = xp.reshape(xp.astype(seg_start, ai), (Q, 1)) + j
    if n == 0:
        block = xp.full((Q, L), fill, dtype=values.dtype, device=dev)
        return block, mask
    idx = xp.where(mask, idx, xp.zeros_like(idx))
    block = xp.reshape(xp.take(values, xp.reshape(idx, (-1,))), (Q, L))
    return xp.where(mask, block, xp.asarray(fill, dtype=values.dtype, device=dev)), mask


# --------------------------------------------------------------------------
# the composite sort
# --------------------------------------------------------------------------

def _neg(x, xp):
    """``-x`` for a descending key (unsigned ints widened first so they do not wrap)."""
    if xp.isdtype(x.dtype, "unsigned integer"):
        x = xp.astype(x, B.acc_int(xp))
    elif xp.isdtype(x.dtype, "bool"):
        x = xp.astype(x, B.acc_int(xp))
    return -x


def _order_generic(codes, score, tie_key, xp):
    # Stable argsorts, least significant key first: lexicographic order.
    o = None
    if tie_key is not None:
        o = xp.argsort(tie_key, descending=True, stable=True)
    s = score if o is None else xp.take(score, o)
    o2 = xp.argsort(s, descending=True, stable=True)
    o = o2 if o is None else xp.take(o, o2)
    o3 = xp.argsort(xp.take(codes, o), stable=True)
    return xp.take(o, o3)


def _order_jax(codes, score, tie_key, xp):
    import jax
    import jax.numpy as jnp

    n = score.shape[0]
    iota = jnp.arange(n, dtype=B.acc_int(xp))
    ops = [codes, _neg(score, xp)]
    if tie_key is not None:
        ops.append(_neg(tie_key, xp))
    out = jax.lax.sort(tuple(ops) + (iota,), num_keys=len(ops), is_stable=True)
    return out[-1]


def _rows_order(keys):
    """Descending order within rows of padded 2-D keys; flat input indices."""
    # Ascending lexsort on (tie key, score) then reversal = (score desc, tie key desc).
    if len(keys) == 1:
        o = np.argsort(keys[0], axis=1, kind="stable")
    else:
        o = np.lexsort(keys, axis=1)
    return o[:, ::-1]


def _order_numpy(codes, score, tie_key, Q, grouped, sizes, pre=None):
    n = score.shape[0]
    if not grouped and pre is None and n and bool(np.all(codes[1:] >= codes[:-1])):
        grouped = True
    if grouped:
        pre = None
    else:
        # Any grouping permutation will do (order inside a segment is re-sorted).
        if pre is None:
            pre = argsort_ints(codes)
        codes = codes[pre]
        score = score[pre]
        tie_key = None if tie_key is None else tie_key[pre]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    L = int(sizes.max())
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    if Q * L == n:
        keys = [score.reshape(Q, L)] if tie_key is None else \
            [tie_key.reshape(Q, L), score.reshape(Q, L)]
        o = _rows_order(keys)
        order = (o + (np.arange(Q, dtype=np.int64) * L)[:, None]).reshape(-1)
    elif Q * L <= 4 * n + 1024:
        # Ragged: pad each segment to L with keys below every real key. Negated
        # keys, pads +inf at the end of each row, stable ascending sort: pads stay
        # last even next to real -inf scores (judged, not retrieved rows).
        keys = [pad_segments(-score.astype(np.float64), starts, sizes, L, np, fill=np.inf)[0]]
        if tie_key is not None:
            keys = [pad_segments(-tie_key.astype(np.float64), starts, sizes, L, np,
                                 fill=np.inf)[0], keys[0]]
        o = np.argsort(keys[0], axis=1, kind="stable") if len(keys) == 1 else \
            np.lexsort(keys, axis=1)
        keep = np.arange(L)[None, :] < sizes[:, None]
        order = (starts[:, None] + o)[keep]
    else:
        keys = (-score.astype(np.float64),)
        if tie_key is not None:
            keys = (-tie_key.astype(np.float64),) + keys
        order = np.lexsort(keys + (codes,))
    return order if pre is None else pre[order]


def segment_sort(query_id, y_score, xp, *, num_segments=None, tie_key=None,
                 name="query_id") -> SegmentSort:
    """Sort rows by (segment, score descending[, tie_key descending]) once.

    ``tie_key`` (optional, numeric) breaks score ties, larger first (trec_eval:
    document id descending); tie groups are then single rows. Without it, rows
    of a segment with equal scores form one tie group (``tie_lo``/``tie_hi``).
    """
    perm: list[Any] = []
    codes, qids, Q, invalid, grouped = factorize(query_id, xp, num_segments=num_segments,
                                                 name=name, _perm_out=perm)
    n = y_score.shape[0]
    ai = B.acc_int(xp)
    dev = B.device(y_score)
    if B.is_numpy(xp) and not B.is_traced(y_score):
        sizes = np.bincount(codes, minlength=Q).astype(np.int64) if n else \
            np.zeros(Q, dtype=np.int64)
        order = _order_numpy(codes, np.asarray(y_score),
                             None if tie_key is None else np.asarray(tie_key), Q, grouped, sizes,
                             perm[0] if perm else None)
        seg = codes[order]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if Q else sizes
        seg_size = sizes
    else:
        if B.is_jax(xp):
            order = _order_jax(codes, y_score, tie_key, xp)
        else:
            order = _order_generic(codes, y_score, tie_key, xp)
        order = xp.astype(order, ai)
        seg = xp.take(codes, order)
        segs = xp.arange(Q, dtype=ai, device=dev)
        starts = xp.astype(xp.searchsorted(seg, segs, side="left"), ai)
        stops = xp.astype(xp.searchsorted(seg, segs, side="right"), ai)
        seg_size = stops - starts
    idx = xp.arange(n, dtype=ai, device=dev)
    rank = idx - xp.take(starts, seg) if n else idx
    if tie_key is not None or n == 0:
        lo, hi = rank, rank
    else:
        s_sorted = xp.take(y_score, order)
        # Tie groups never cross segments: group number from (segment, score) changes.
        if n > 1:
            change = (seg[1:] != seg[:-1]) | (s_sorted[1:] != s_sorted[:-1])
            new = xp.concat([xp.ones(1, dtype=xp.bool, device=dev), change])
        else:
            new = xp.ones(1, dtype=xp.bool, device=dev)
        gnum = xp.cumulative_sum(xp.astype(new, ai))
        glo, ghi = B.group_bounds(gnum, xp)
        glo = xp.astype(glo, ai)
        ghi = xp.astype(ghi, ai)
        st = xp.take(starts, seg)
        lo, hi = glo - st, ghi - st
    return SegmentSort(order, seg, rank, starts, seg_size, lo, hi, Q, qids, invalid, grouped)


def segment_sums(values_sorted, ss: SegmentSort, xp, dtype=None):
    """Per-segment sums of a per-row quantity given in sorted order: (Q,)."""
    c = B.prefix_sum(values_sorted, xp, dtype)
    return xp.take(c, ss.seg_start + ss.seg_size) - xp.take(c, ss.seg_start)


def sorted_within_segments(values, ss: SegmentSort, xp, codes=None):
    """``values`` (input order) sorted descending within each segment.

    The result is aligned with ``ss``'s layout: the row at sorted position
    ``i`` holds the ``ss.rank[i]``-th largest value of segment ``ss.seg[i]``.
    Used for ideal orderings (ideal DCG). Keys only: ties need no rule.
    """
    n = values.shape[0]
    if n == 0:
        return values
    v = xp.take(values, ss.order)          # grouped by segment already
    if B.is_numpy(xp) and not B.is_traced(values):
        Q = ss.num_segments
        sizes = np.asarray(ss.seg_size)
        L = int(sizes.max())
        if Q * L == n:
            return -np.sort(-v.reshape(Q, L), axis=1).reshape(-1)
        if Q * L <= 4 * n + 1024:
            blk, mask = pad_segments(v.astype(np.float64), np.asarray(ss.seg_start), sizes, L,
                                     np, fill=-np.inf)
            return (-np.sort(-blk, axis=1))[mask].astype(v.dtype, copy=False)
        o = np.lexsort((-v, np.asarray(ss.seg)))
        return v[o]
    if B.is_jax(xp):
        import jax

        out = jax.lax.sort((ss.seg, _neg(v, xp)), num_keys=2, is_stable=False)
        return -out[1]
    o = xp.argsort(v, descending=True, stable=True)
    o2 = xp.argsort(xp.take(ss.seg, o), stable=True)
    return xp.take(v, xp.take(o, o2))
