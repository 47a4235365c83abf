"""Exact rank statistics over disjoint score ranges: per-range parts, combined in score order.

A data set too large for one place is cut at score values (``cuts``) into
ranges; a row's range is ``searchsorted(cuts, score, side="left")``, a
function of its score alone, so tied rows always share a range. Each range
reduces its rows to a *score table*: its distinct scores, ascending, with the
(integer) positive and negative weight at each. Tables of one range merge
exactly (the union of the scores, counts added), so the rows of a range may
arrive in any number of pieces.

From a range's table come

* ``(U2, P, N)`` (:func:`table_u2`): twice the Mann-Whitney count of its
  (positive, negative) pairs, a tied pair counting 1 (Hanley & McNeil 1982),
  and its class totals, as Python integers. Ranges given low to high combine
  by ``U2 = sum_r U2_r + 2 sum_r P_r N_below_r`` (:func:`combine_u2`), exact
  whatever their number.
* the step sum of precisions (:func:`table_precision_sum`): given the
  positive and negative weight of the ranges above it (:func:`offsets_above`),
  each tie group holding positives adds ``n1 * (tp / (tp + fp))`` in float64
  (``tp``, ``fp`` the weight scored at least the group's score), the
  average-precision term of Manning, Raghavan & Schuetze (2008), ch. 8. The
  range returns the *exact* sum of its float terms as an integer multiple of
  ``2**-SHIFT`` (:func:`exact_sum`); integers add exactly, and
  :func:`ratio_of_sum` rounds ``sum / P`` once. The result is a function of
  the float terms alone, the same double whatever the cuts and the order in
  which ranges are added.
"""

from __future__ import annotations

import math

import numpy as np

from . import native

# every finite double is an integer multiple of 2**-1074; a frexp mantissa
# scaled to 53 bits sits at 2**(e - 53) with e >= -1073, so 2**-1126 divides all
SHIFT = 1126
_INT64_MAX = 2**63 - 1


def range_ids(cuts: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Range of each score: ``searchsorted(cuts, score, side="left")`` (ties share a range)."""
    return np.searchsorted(np.asarray(cuts, np.float64), scores, side="left")


def cuts_from_sample(sample: np.ndarray, n_ranges: int) -> np.ndarray:
    """At most ``n_ranges - 1`` distinct cut scores at quantiles of ``sample`` (ascending).

    Any cuts give the same results; quantiles only balance the ranges.
    """
    s = np.asarray(sample, np.float64)
    if s.size == 0 or n_ranges <= 1:
        return np.empty(0, np.float64)
    q = np.quantile(s, np.linspace(0, 1, n_ranges + 1)[1:-1], method="inverted_cdf")
    return np.unique(q)


def empty_table() -> tuple:
    return (np.empty(0, np.float64), np.empty(0, np.int64), np.empty(0, np.int64))


def score_table(scores, labels, weights=None) -> tuple:
    """``(scores, pos, neg)``: the distinct scores ascending, the positive / negative weight at each.

    ``labels`` in {0, 1}; ``weights`` non-negative integers (``None``: 1 each).
    -0.0 and 0.0 are one score. Counts are int64. Unweighted heavily tied scores
    are counted in one pass (:func:`counted_table`), the rest by one sort.
    """
    s = np.asarray(scores, np.float64)
    if s.size == 0:
        return empty_table()
    if weights is None and s.ndim == 1:
        table = counted_table(s, labels)
        if table is not None:
            return table
    y = np.asarray(labels).astype(np.int64)
    w = np.ones_like(y) if weights is None else np.asarray(weights).astype(np.int64)
    order = np.argsort(s, kind="stable")
    s, y, w = s[order], y[order], w[order]
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    start = np.flatnonzero(new)
    wy = w * y
    return (s[start] + 0.0, np.add.reduceat(wy, start), np.add.reduceat(w - wy, start))


_TABLE_SAMPLES = 4096           # evenly spaced scores that decide whether to count
_TABLE_SAMPLE_DISTINCT = 2048   # count when the sample holds at most this many distinct
_TABLE_CAP = 1 << 14            # distinct scores the counting pass takes at most


def counted_table(scores, labels):
    """:func:`score_table` of unweighted 1-D scores in one pass, without a sort of the rows.

    The compiled pass (:mod:`calipers._kernels.native`) counts each distinct
    score's negatives and positives in a hash table; only the distinct scores
    are sorted. None where it does not apply: no compiled passes, a strided
    sample of ``_TABLE_SAMPLES`` scores with more than
    ``_TABLE_SAMPLE_DISTINCT`` distinct (the pass would not pay), more than
    ``_TABLE_CAP`` distinct scores (the pass stops there), labels other than 0/1.
    """
    s = np.asarray(scores)
    if native.lib is None or s.dtype.kind != "f" or s.ndim != 1 or s.size == 0:
        return None
    n = s.shape[0]
    if np.unique(s[::max(1, n // _TABLE_SAMPLES)]).shape[0] > _TABLE_SAMPLE_DISTINCT:
        return None
    y = np.ascontiguousarray(labels)
    if y.dtype.kind not in "biu":
        return None
    vals = np.empty(_TABLE_CAP, dtype=np.uint64)
    cnt = np.empty((_TABLE_CAP, 2), dtype=np.int64)
    G = native.lib.score_table(np.ascontiguousarray(s, dtype=np.float64), y, vals, cnt)
    if G < 0:                 # past the cap (-1), or a label other than 0 / 1 (-2)
        return None
    u = vals[:G].view(np.float64)
    order = np.argsort(u)
    c = cnt[:G][order]
    return u[order], c[:, 1].copy(), c[:, 0].copy()


def merge_tables(*tables) -> tuple:
    """One table of the union of the tables' rows (counts at equal scores added)."""
    full = [t for t in tables if t[0].size]
    if not full:
        return empty_table()
    if len(full) == 1:
        return full[0]
    s = np.concatenate([t[0] for t in full])
    pos = np.concatenate([t[1] for t in full])
    neg = np.concatenate([t[2] for t in full])
    order = np.argsort(s, kind="stable")
    s, pos, neg = s[order], pos[order], neg[order]
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    start = np.flatnonzero(new)
    return (s[start], np.add.reduceat(pos, start), np.add.reduceat(neg, start))


def split_table(table, cuts, n_ranges: int | None = None) -> list:
    """The table cut into ``n_ranges`` (at least ``len(cuts) + 1``) range tables, low to high."""
    s, pos, neg = table
    n_ranges = len(cuts) + 1 if n_ranges is None else max(n_ranges, len(cuts) + 1)
    r = range_ids(cuts, s)
    bounds = np.searchsorted(r, np.arange(n_ranges + 1), side="left")
    return [(s[a:b], pos[a:b], neg[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]


def table_totals(table) -> tuple:
    """``(P, N)`` of a table, Python integers."""
    return int(np.sum(table[1], dtype=object)), int(np.sum(table[2], dtype=object))


def table_u2(table) -> tuple:
    """``(U2, P, N)`` of a table: ``U2 = sum_scores pos * (2 * neg_below + neg_tied)``, Python ints."""
    _, pos, neg = table
    P, N = table_totals(table)
    if pos.size == 0 or P == 0 or N == 0:
        return 0, P, N
    dt = np.int64 if 2 * P * N <= _INT64_MAX and N <= _INT64_MAX // 4 else object
    neg_d = neg.astype(dt)
    below = np.cumsum(neg_d) - neg_d
    return int(np.dot(pos.astype(dt), 2 * below + neg_d)), P, N


def combine_u2(parts) -> tuple:
    """Ordered combine of ``(U2_r, P_r, N_r)`` of ranges given low to high score."""
    u2 = p = n = 0
    for u, pr, nr in parts:
        u2 += u + 2 * pr * n
        p += pr
        n += nr
    return u2, p, n


def auc_of(u2: int, P: int, N: int) -> float:
    """``U2 / (2 P N)`` correctly rounded (Python integers); NaN when a class is absent."""
    return math.nan if P == 0 or N == 0 else u2 / (2 * P * N)


def offsets_above(totals) -> list:
    """Per range (totals ``(P_r, N_r)`` low to high): ``(P, N)`` of the ranges above it."""
    out = []
    tp = fp = 0
    for p, n in reversed(list(totals)):
        out.append((tp, fp))
        tp += p
        fp += n
    return out[::-1]


def exact_sum(t) -> int:
    """The exact sum of finite float64 values ``t``, as the integer ``sum * 2**SHIFT``."""
    t = np.asarray(t, np.float64).ravel()
    if t.size == 0:
        return 0
    m, e = np.frexp(t)
    mi = np.ldexp(m, 53).astype(np.int64)          # t = mi * 2**(e - 53), exactly
    keep = mi != 0
    mi, e = mi[keep], e[keep]
    if mi.size == 0:
        return 0
    order = np.argsort(e, kind="stable")
    mi, e = mi[order], e[order]
    new = np.empty(e.size, dtype=bool)
    new[0] = True
    np.not_equal(e[1:], e[:-1], out=new[1:])
    start = np.flatnonzero(new)
    # 27-bit high and 26-bit low halves: int64 sums hold 2**36 terms
    hi = np.add.reduceat(mi >> 26, start)
    lo = np.add.reduceat(mi & ((1 << 26) - 1), start)
    total = 0
    for h, lw, ex in zip(hi.tolist(), lo.tolist(), e[start].tolist()):
        total += ((h << 26) + lw) << (ex - 53 + SHIFT)
    return total


def table_precision_sum(table, tp_above: int, fp_above: int) -> int:
    """``exact_sum`` of ``n1 * (tp / (tp + fp))`` over the table's groups holding positives.

    ``tp``/``fp``: the positive / negative weight scored at least the group's
    score, the ranges above included (``tp_above``, ``fp_above``); each term
    is float64 as a one-machine kernel forms it.
    """
    _, pos, neg = table
    if pos.size == 0:
        return 0
    pos_d, neg_d = pos[::-1], neg[::-1]
    P, N = table_totals(table)
    dt = np.int64 if max(P + tp_above, N + fp_above) <= _INT64_MAX else object
    tp = np.cumsum(pos_d.astype(dt)) + tp_above
    fp = np.cumsum(neg_d.astype(dt)) + fp_above
    has = pos_d > 0
    if not has.any():
        return 0
    tpf = np.asarray(tp[has], dtype=np.float64)
    fpf = np.asarray(fp[has], dtype=np.float64)
    terms = pos_d[has].astype(np.float64) * (tpf / (tpf + fpf))
    return exact_sum(terms)


def ratio_of_sum(total: int, P: int) -> float:
    """``(total * 2**-SHIFT) / P`` rounded once (Python integer division); NaN when ``P == 0``."""
    return math.nan if P == 0 else total / (P << SHIFT)
