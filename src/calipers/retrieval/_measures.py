"""Per-query ranking metrics and grouped AUC, on one segment sort.

Inputs are flat arrays: ``y_true`` (graded relevance, or 0/1 labels for
grouped AUC), ``y_score`` and ``query_id`` per row (or 2-D ``(Q, L)`` arrays,
one row per query, as scikit-learn's ``ndcg_score`` takes). One sort by
(query, score descending) from :mod:`calipers._kernels.segments` serves every metric
and every cut-off; per-query values are segment sums of per-row terms, read
off one prefix sum at the segment bounds.

Conventions (see ``docs/ranking.md``):

* Ties, ``ties="average"`` (default): every metric is its expected value over
  all orderings of tied documents (McSherry & Najork 2008), so the result does
  not depend on the order of the input rows. ``ties="trec_eval"``: ties broken
  by ``doc_id`` descending (trec_eval's ``comp_sim_docno``); then each row is
  its own tie group and the formulas reduce to the usual ones.
* Gain for DCG: ``"linear"`` (the relevance itself; scikit-learn and
  trec_eval) or ``"exponential"`` (``2**rel - 1``; Burges et al. 2005, gdeval).
  Negative relevance is judged non-relevant: gain 0, never a negative gain.
  Discount ``1/log2(rank + 1)`` with ranks from 1.
* Relevant (for RR, AP, P@k, recall@k, R-precision): ``y_true > 0``, or
  ``y_true >= relevance_level`` when given (trec_eval ``-l``).
* A query with no relevant item (ideal DCG 0 for NDCG) is undefined: NaN in
  ``values``, left out of ``mean`` and counted in ``n_undefined``;
  ``undefined="zero"`` scores it 0 and keeps it in the mean (scikit-learn's
  ``ndcg_score``, and trec_eval's printed per-query value).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Callable, NamedTuple, TypeVar

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._kernels import rankstats as R
from .._kernels import segments as S
from .._core.compile import compiled
from .._core.results import result_type
from .._core.types import ArrayLike

__all__ = ["QueryResult", "dcg", "ndcg", "reciprocal_rank", "average_precision",
           "precision_at_k", "recall_at_k", "r_precision", "grouped_roc_auc"]


# --------------------------------------------------------------------------
# result type
# --------------------------------------------------------------------------

@result_type(meta=("k", "metric"))
class QueryResult:
    """Per-query (per-group) values of a metric and their mean.

    Attributes
    ----------
    values : array (Q,), or (len(k), Q) when ``k`` is a sequence
        One value per query, in the order of ``query_ids``; NaN where the
        metric is undefined (unless ``undefined="zero"``).
    query_ids : array (Q,)
        The id of each query: the sorted distinct ``query_id`` values eagerly,
        ``0 .. num_segments-1`` when ``num_segments`` is given.
    mean : 0-d array, or (len(k),)
        Mean over the defined queries (weighted for :func:`grouped_roc_auc`);
        NaN when no query is defined.
    n_undefined : int (0-d array under ``jit``)
        How many queries were undefined (no relevant item; one class for AUC).
    k : None, int or tuple of int
        The cut-off(s) the values refer to.
    metric : str
        The metric's name.

    Under ``jax.jit`` this is a pytree (``k`` and ``metric`` static).
    """

    values: Any
    query_ids: Any
    mean: Any
    n_undefined: Any
    k: Any = None
    metric: str = ""


# --------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------

def check_k(k, *, required: bool, allow_seq: bool = True):
    """Return (ks tuple or None, is_sequence)."""
    if k is None:
        if required:
            raise ValueError("k is required: a positive integer (or a sequence of them)")
        return None, False
    if isinstance(k, (list, tuple)) and allow_seq:
        if len(k) == 0:
            raise ValueError("k must be a positive integer or a non-empty sequence of them")
        return tuple(check_k(v, required=True, allow_seq=False)[0][0] for v in k), True
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be a positive integer or a sequence of them, got {k!r}")
    if k <= 0:
        raise ValueError(f"k must be a positive integer, got {k}")
    return (int(k),), False


def _as_flat(y_true, y_score, query_id, extra, num_segments):
    """Validate shapes; 2-D (Q, L) input becomes flat with query = row."""
    xp, arrs = B.as_arrays(y_true, y_score, query_id, *extra)
    y_true, y_score, query_id, *extra = arrs
    if query_id is None:
        if y_true.ndim != 2 or y_score.ndim != 2:
            raise ValueError("without query_id, y_true and y_score must be 2-D (n_queries, "
                             f"n_docs); got shapes {tuple(y_true.shape)} and "
                             f"{tuple(y_score.shape)}")
        if tuple(y_true.shape) != tuple(y_score.shape):
            raise ValueError(f"y_true has shape {tuple(y_true.shape)} but y_score has "
                             f"{tuple(y_score.shape)}; they must match")
        Q, L = y_true.shape
        if Q == 0 or L == 0:
            raise ValueError("y_true is empty; at least one query and one document are required")
        for name, e in zip(("doc_id", "retrieved", "sample_weight"), extra):
            if e is not None and tuple(e.shape) != (Q, L):
                raise ValueError(f"{name} has shape {tuple(e.shape)} but y_true has {(Q, L)}")
        ai = B.acc_int(xp)
        qid = xp.reshape(xp.broadcast_to(
            xp.reshape(xp.arange(Q, dtype=ai, device=B.device(y_true)), (Q, 1)), (Q, L)), (-1,))
        flat = [xp.reshape(a, (-1,)) for a in (y_true, y_score)]
        extra = [None if e is None else xp.reshape(e, (-1,)) for e in extra]
        if num_segments is None:
            num_segments = Q
        return xp, flat[0], flat[1], qid, extra, num_segments
    B.check_1d("y_true", y_true)
    B.check_1d("y_score", y_score)
    B.check_1d("query_id", query_id)
    names = ("doc_id", "retrieved", "sample_weight")
    for name, e in zip(names, extra):
        if e is not None:
            B.check_1d(name, e)
    B.check_same_length(y_true=y_true, y_score=y_score, query_id=query_id,
                        **{k: v for k, v in zip(names, extra)})
    B.check_nonempty("y_true", y_true)
    return xp, y_true, y_score, query_id, list(extra), num_segments


def value_checks(xp, y_true, y_score):
    B.check_numeric("y_true", y_true, xp)
    V.check_real_values("y_score", y_score, xp, "numeric scores")
    V.check_finite("y_score", y_score, xp)
    V.check_finite("y_true", y_true, xp)
    invalid = xp.asarray(False, device=B.device(y_score))
    if B.is_traced(y_score) and xp.isdtype(y_score.dtype, "real floating"):
        invalid = invalid | ~xp.all(xp.isfinite(y_score))
    if B.is_traced(y_true) and xp.isdtype(y_true.dtype, "real floating"):
        invalid = invalid | ~xp.all(xp.isfinite(y_true))
    return invalid


class _PerQuery:
    """The per-query formulas, written once over two layouts.

    A layout supplies per-row values (``_gain_rows``, ``_rel_rows``) in a form
    only its own ``top_sum`` reads (:class:`_Ranking`: arrays over the sorted
    rows; :class:`_Dense`: functions of flat positions in its block, so that only
    the top k are read), prefix tables (``_disc_prefix``: ``D[m] = sum_{r<m}
    1/log2(r+2)``; ``_count_prefix``: ``C[m] = m``) and two sums:
    ``top_sum(V, W, k)``, the expected (over orderings of tied scores) ``sum_rows
    V * (W[min(pos+1, k)] - W[min(pos, k)])``, and ``ideal_sum(W, k)``, the same
    over the ideal (gain-sorted) ranking.
    :class:`_Ranking` is the segment-sort layout (every backend, every tie
    rule); :class:`_Dense` the padded ``(Q, L)`` NumPy layout that only orders
    the top k of each query.
    """

    def dcg(self, k):
        return self.top_sum(self._gain_rows(), self._disc_prefix(), k)

    def idcg(self, k):
        return self.ideal_sum(self._disc_prefix(), k)

    def hits(self, k):
        """Expected number of relevant (retrieved) rows in the top k."""
        return self.top_sum(self._rel_rows(), self._count_prefix(), k)

    def no_gain(self):
        return self.idcg(None) <= 0


class _Ranking(_PerQuery):
    """One segment sort of a ranking problem and the per-row pieces every metric uses.

    All per-query results are (Q,) arrays in the accumulation float.
    """

    def __init__(self, y_true, y_score, query_id, *, doc_id=None, retrieved=None,
                 ties="average", gain="linear", relevance_level=None, num_segments=None):
        ties = V.choice(ties, "ties", ("average", "trec_eval"))
        gain = V.choice(gain, "gain", ("linear", "exponential"))
        if ties == "trec_eval" and doc_id is None:
            raise ValueError("ties='trec_eval' breaks score ties by doc_id descending: "
                             "doc_id is required")
        if relevance_level is not None and (isinstance(relevance_level, bool) or
                                            not isinstance(relevance_level, (int, float,
                                                                             np.number))):
            raise ValueError(f"relevance_level must be a number, got {relevance_level!r}")
        xp, y_true, y_score, query_id, (doc_id, retrieved, _), num_segments = _as_flat(
            y_true, y_score, query_id, [doc_id, retrieved, None], num_segments)
        invalid = value_checks(xp, y_true, y_score)
        if doc_id is not None:
            B.check_numeric("doc_id", doc_id, xp)
        f = B.acc_float(xp)
        self.xp, self.f = xp, f
        self.traced = B.is_traced(y_true, y_score, query_id, doc_id, retrieved)
        if retrieved is not None:
            if not xp.isdtype(retrieved.dtype, "bool"):
                raise ValueError(f"retrieved must be a boolean mask, got dtype {retrieved.dtype}")
            # Judged but not retrieved: after every retrieved row of the query.
            y_score = xp.where(retrieved, xp.astype(y_score, f),
                               xp.asarray(-math.inf, dtype=f, device=B.device(y_score)))
        ss = S.segment_sort(query_id, y_score, xp, num_segments=num_segments,
                            tie_key=doc_id if ties == "trec_eval" else None)
        self.ss = ss
        self.invalid = invalid | ss.invalid
        self.n = y_true.shape[0]
        yt = xp.astype(y_true, f)
        g = xp.where(yt > 0, yt, xp.zeros_like(yt))         # negative relevance: gain 0
        if gain == "exponential":
            g = xp.pow(xp.full_like(g, 2.0), g) - 1.0
        self._gain_input = g
        self.gain = xp.take(g, ss.order)
        relm = (y_true > 0) if relevance_level is None else (y_true >= relevance_level)
        self.rel = xp.astype(xp.take(relm, ss.order), f)
        if retrieved is None:
            self.ret = None
            self.relret = self.rel
        else:
            self.ret = xp.astype(xp.take(retrieved, ss.order), f)
            self.relret = self.rel * self.ret
        self.out = f
        self._cache = {}
        dev = B.device(y_score)
        self.dev = dev
        ai = B.acc_int(xp)
        self.seg_start_row = xp.take(ss.seg_start, ss.seg)     # (n,)
        self.cnt = xp.astype(ss.tie_hi - ss.tie_lo + 1, f)
        self.rank_f = xp.astype(ss.rank, f)
        self.ai = ai
        # Longest query: bounds every rank, so discount tables need no more (static n under jit).
        self.lmax = self.n if self.traced or self.n == 0 else \
            int(B.to_numpy(xp.max(ss.seg_size))) if ss.num_segments else 0

    # -- building blocks ---------------------------------------------------
    def _mask_ret(self, x):
        return x if self.ret is None else x * self.ret

    def seg_sum(self, per_row):
        return S.segment_sums(per_row, self.ss, self.xp)

    def n_rel(self):
        if "n_rel" not in self._cache:
            self._cache["n_rel"] = self.seg_sum(self.rel)
        return self._cache["n_rel"]

    def n_ret(self):
        xp = self.xp
        if self.ret is None:
            return xp.astype(self.ss.seg_size, self.f)
        return self.seg_sum(self.ret)

    def n_rel_ret(self):
        return self.seg_sum(self.relret)

    def _discount_prefix(self):
        """D[m] = sum_{r<m} 1/log2(r+2), m = 0..n."""
        if "D" not in self._cache:
            xp = self.xp
            r = xp.arange(self.lmax, dtype=self.f, device=self.dev)
            self._cache["D"] = B.prefix_sum(1.0 / xp.log2(r + 2.0), xp)
        return self._cache["D"]

    def _expected(self, W):
        """Per row: mean of W-increments over the row's tie group (expectation over ties)."""
        ss = self.ss
        return (W(ss.tie_hi + 1) - W(ss.tie_lo)) / self.cnt

    def _cut(self, m, k):
        xp = self.xp
        if k is None:
            return m
        return xp.minimum(m, xp.asarray(k, dtype=m.dtype, device=self.dev))

    def _gain_rows(self):
        return self.gain

    def _rel_rows(self):
        return self.rel

    def _disc_prefix(self):
        return self._discount_prefix()

    def _count_prefix(self):
        if "C" not in self._cache:
            self._cache["C"] = self.xp.arange(self.lmax + 1, dtype=self.f, device=self.dev)
        return self._cache["C"]

    def top_sum(self, V, W, k):
        xp = self.xp
        w = self._expected(lambda m: xp.take(W, self._cut(m, k)))
        return self.seg_sum(self._mask_ret(V * w))

    def ideal_sum(self, W, k):
        xp = self.xp
        key = ("ideal",)
        if key not in self._cache:
            self._cache[key] = S.sorted_within_segments(self._gain_input, self.ss, xp)
        ig = self._cache[key]
        r = self.ss.rank
        return self.seg_sum(ig * (xp.take(W, self._cut(r + 1, k)) - xp.take(W, self._cut(r, k))))

    def rprec_hits(self):
        """Expected relevant rows in the top R (R = the query's relevant count, per row)."""
        xp = self.xp
        R = xp.take(self.n_rel(), self.ss.seg)
        w = self._expected(lambda m: xp.minimum(xp.astype(m, self.f), R))
        return self.seg_sum(self._mask_ret(self.rel * w))

    def average_precision_sum(self, k=None):
        """Sum over relevant rows of the expected precision at their rank (McSherry & Najork);
        with ``k``, over the ranks 1..k only (trec_eval's ``map_cut``: the sum stays divided
        by every relevant document). Each row stands for one position of its tie group, so
        the cut keeps the positions above ``k``."""
        xp, ss = self.xp, self.ss
        Cr = B.prefix_sum(self.relret, xp)
        st = self.seg_start_row
        a = st + ss.tie_lo
        b = st + ss.tie_hi + 1
        r = xp.take(Cr, b) - xp.take(Cr, a)             # relevant in the row's tie group
        c = xp.take(Cr, a) - xp.take(Cr, st)            # relevant above the group
        m = self.cnt
        x = xp.astype(ss.rank - ss.tie_lo, self.f)      # offset within the group
        slope = xp.where(m > 1, (r - 1) / xp.where(m > 1, m - 1, 1.0), 0.0)
        term = (r / m) * (c + 1 + x * slope) / (self.rank_f + 1)
        if k is not None:
            term = xp.where(self.rank_f < k, term, xp.zeros_like(term))
        return self.seg_sum(self._mask_ret(term))

    def reciprocal_rank(self):
        """Expected 1/rank of the first relevant retrieved row, 0 when none is retrieved."""
        xp, ss = self.xp, self.ss
        f = self.f
        Cr = B.prefix_sum(self.relret, xp)
        st = self.seg_start_row
        a = st + ss.tie_lo
        r = xp.take(Cr, st + ss.tie_hi + 1) - xp.take(Cr, a)
        c = xp.take(Cr, a) - xp.take(Cr, st)
        first = (c == 0) & (r > 0)
        # P(first relevant of the group sits at offset x) = C(m-1-x, r-1) / C(m, r).
        LF = self._log_factorial()
        m = ss.tie_hi - ss.tie_lo + 1
        x = ss.rank - ss.tie_lo
        ri = xp.astype(xp.where(first, r, xp.ones_like(r)), self.ai)
        a1 = m - 1 - x
        b1 = ri - 1
        ok = first & (a1 >= b1)
        zero = xp.zeros_like(a1)
        d1 = xp.where(ok, a1 - b1, zero)
        a1 = xp.where(ok, a1, zero)
        b1 = xp.where(ok, b1, zero)
        logp = (xp.take(LF, a1) - xp.take(LF, b1) - xp.take(LF, d1)
                - xp.take(LF, m) + xp.take(LF, ri) + xp.take(LF, xp.where(ok, m - ri, zero)))
        p = xp.where(ok, xp.exp(logp), xp.zeros_like(logp))
        return self.seg_sum(self._mask_ret(xp.astype(p, f) / (self.rank_f + 1)))

    def _log_factorial(self):
        if "LF" not in self._cache:
            xp = self.xp
            i = xp.arange(1, self.lmax + 1, dtype=self.f, device=self.dev)
            self._cache["LF"] = B.prefix_sum(xp.log(i), xp)
        return self._cache["LF"]


class _DenseSegments(NamedTuple):
    num_segments: int
    query_ids: Any


class _Dense(_PerQuery):
    """NumPy layout for DCG/NDCG/P@k/recall@k with averaged ties: a padded (Q, L) block.

    Used for 2-D input and for flat input of integer query ids (grouped, then
    padded to the longest query by :func:`calipers._kernels.segments.pad_segments` when
    that stays small). The formulas are :class:`_PerQuery`'s; only the two sums
    differ. Only the top k of each query are ordered (see :meth:`_top`), and
    per-row values are read at those positions only; the ideal DCG of integer
    relevance comes from per-row counts of each grade, with no sort. Same
    values as :class:`_Ranking` (tested against it), several times faster.
    """

    @classmethod
    def build(cls, y_true, y_score, query_id, *, ties, doc_id, retrieved, gain="linear",
              relevance_level=None, num_segments=None):
        if ties != "average" or doc_id is not None or retrieved is not None:
            return None
        if not all(isinstance(a, np.ndarray) or a is None for a in (y_true, y_score, query_id)):
            return None
        if gain not in ("linear", "exponential"):
            return None
        xp, y, s, q, _, nseg = _as_flat(y_true, y_score, query_id, [None, None, None],
                                        num_segments)
        value_checks(xp, y, s)
        if query_id is None:
            Q, L = np.asarray(y_true).shape
            if nseg != Q:
                return None
            Y, Sm = np.asarray(y_true).reshape(Q, L), np.asarray(y_score).reshape(Q, L)
            qids = np.arange(Q)
        else:
            if nseg is not None:
                return None
            gs = S.grouped_sizes_numpy(q)
            if gs is None and q.dtype.kind in "iu":
                perm = S.argsort_ints(q)    # group the rows (order inside a query is irrelevant)
                q, y, s = q[perm], y[perm], s[perm]
                gs = S.grouped_sizes_numpy(q)
            if gs is None:
                return None
            qids, sizes = gs
            Q = sizes.shape[0]
            L = int(sizes.max())
            n = y.shape[0]
            if Q * L == n:
                Y, Sm = y.reshape(Q, L), s.reshape(Q, L)
            elif Q * L <= 4 * n + 1024:
                starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
                # relevance -inf: gain 0 and never relevant, whatever relevance_level
                Y = S.pad_segments(y.astype(np.float64), starts, sizes, L, np,
                                   fill=-np.inf)[0]
                Sm = S.pad_segments(s.astype(np.float64), starts, sizes, L, np,
                                    fill=-np.inf)[0]
            else:
                return None
        return cls(Y, Sm, qids, gain, relevance_level)

    def __init__(self, Y, Sm, qids, gain, relevance_level):
        self.xp, self.f, self.ai = np, np.float64, np.int64
        self.ss = _DenseSegments(Y.shape[0], qids)
        self.invalid = np.False_
        self.traced = False
        self.dev = "cpu"
        # C order once: values are read at flat positions (a strided view would copy per read)
        self.Y, self.S = np.ascontiguousarray(Y), np.ascontiguousarray(Sm)
        self.gain, self.level = gain, relevance_level
        self._rel = None
        self._part = {}
        L = Y.shape[1]
        self.D = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(L) + 2.0))])
        self.C = np.arange(L + 1, dtype=np.float64)

    def _gain_of(self, y):
        g = np.maximum(y.astype(np.float64, copy=False), 0.0)  # negative relevance: gain 0
        return np.exp2(g) - 1.0 if self.gain == "exponential" else g

    def _gain_at(self, idx):
        """Gains at flat positions ``idx`` of the (Q, L) block."""
        return self._gain_of(self.Y.reshape(-1)[idx])

    def _is_rel(self, y):
        return y > 0 if self.level is None else y >= self.level

    def _rel_at(self, idx):
        return self._is_rel(self.Y.reshape(-1)[idx]).astype(np.float64)

    def rel(self):
        if self._rel is None:
            self._rel = self._is_rel(self.Y).astype(np.int64)
        return self._rel

    def _top(self, k):
        """The top k of each row in order, with their tie groups: ``(kk, P, pad, lo, hi, bd)``.

        A partition by value gives each row's k-th largest score ``vk``; one
        comparison pass finds the candidates, the entries scoring ``>= vk``.
        Usually there are exactly k per row (no tie group straddles position
        k): they form a (Q, k) block ``P`` of flat positions, each row sorted
        by score descending, ``bd`` None. Otherwise the block holds only the
        entries scoring above ``vk`` (fewer than k per row; rows padded with
        ``pad`` True after their last one), and ``bd = (positions, rows,
        n_above, m)`` describes each row's boundary group, the ``m`` entries
        scoring ``vk``, which share the weights of ranks ``n_above .. k-1``
        (no order needed). ``lo``/``hi`` are the first and last column of each
        block entry's tie group (None when there is no tie in the block).
        """
        L = self.S.shape[1]
        kk = L if k is None else min(k, L)
        if kk not in self._part:
            Sm = self.S
            Q = Sm.shape[0]
            pad = bd = None
            if kk == L:
                P = np.arange(Q * L, dtype=np.int64).reshape(Q, L)
                X = Sm
            else:
                vk = np.partition(Sm, L - kk, axis=1)[:, L - kk]
                p = np.flatnonzero(Sm >= vk[:, None])
                x = Sm.reshape(-1)[p]
                if p.shape[0] == Q * kk:        # no tie group straddles position k
                    P, X = p.reshape(Q, kk), x.reshape(Q, kk)
                else:
                    rows = p // L
                    above = x > vk[rows]
                    ra, pa = rows[above], p[above]
                    n_above = np.bincount(ra, minlength=Q)
                    eq = ~above
                    bd = (p[eq], rows[eq], n_above, np.bincount(rows[eq], minlength=Q))
                    c = max(int(n_above.max()), 1)
                    # rows left-aligned in a (Q, c) block; pads score vk, below every
                    # entry of their row, so they sort last
                    dest = np.arange(pa.shape[0]) + np.repeat(
                        np.arange(Q, dtype=np.int64) * c - (np.cumsum(n_above) - n_above),
                        n_above)
                    P = np.zeros(Q * c, dtype=np.int64)
                    P[dest] = pa
                    X = np.repeat(vk, c)
                    X[dest] = x[above]
                    pad = np.ones(Q * c, dtype=bool)
                    pad[dest] = False
                    P, X, pad = P.reshape(Q, c), X.reshape(Q, c), pad.reshape(Q, c)
            Q, c = P.shape
            # each row's descending order as flat indices into the (Q, c) block: plain
            # 1-D gathers (take_along_axis builds a 2-D fancy index, several times slower)
            order = np.argsort(X, axis=1)
            order += (np.arange(Q, dtype=order.dtype) * c)[:, None]
            order = order[:, ::-1].reshape(-1)
            P = P.reshape(-1)[order].reshape(Q, c)
            X = X.reshape(-1)[order]
            if pad is not None:
                pad = pad.reshape(-1)[order].reshape(Q, c)
            # tie groups of the flat block, every row starting (and ending) a group
            first, last = B.tie_flags(X, np)
            first[::c] = True
            last[c - 1::c] = True
            lo = hi = None                              # no ties: column j is rank j
            if not first.all():
                lo, hi = B.bounds_from_flags(first, last, np)
                lo, hi = (lo % c).reshape(Q, c), (hi % c).reshape(Q, c)
            self._part[kk] = (kk, P, pad, lo, hi, bd)
        return self._part[kk]

    def top_sum(self, V_at, W, k):
        """Expected sum over the top k positions of V times position weight (prefix W).

        ``V_at(flat positions)`` gives the per-row values where they are needed.
        """
        kk, P, pad, lo, hi, bd = self._top(k)
        v = V_at(P)
        if pad is not None:
            v = np.where(pad, 0.0, v)
        if lo is None:                  # no ties in the block: column j has rank j
            out = v @ np.diff(W[:P.shape[1] + 1])
        else:
            w = (W[np.minimum(hi + 1, kk)] - W[np.minimum(lo, kk)]) / (hi - lo + 1)
            out = (v * w).sum(axis=1)
        if bd is not None:              # the boundary group: m entries share ranks n_above..k-1
            pe, re, n_above, m = bd
            bsum = np.bincount(re, weights=V_at(pe), minlength=P.shape[0])
            out = out + bsum / m * (W[kk] - W[n_above])
        return out

    def _gain_rows(self):
        return self._gain_at

    def _rel_rows(self):
        return self._rel_at

    def _disc_prefix(self):
        return self.D

    def _count_prefix(self):
        return self.C

    def _ideal(self):
        """Gains of each row sorted descending (the ideal ranking), computed once."""
        if "ideal" not in self._part:
            self._part["ideal"] = np.sort(self._gain_of(self.Y), axis=1)[:, ::-1]
        return self._part["ideal"]

    def _levels(self):
        """Integer relevance: per row, the count of each positive grade, highest first, as
        ``(gains (V,), rows' first rank of each grade (Q, V), one past the last (Q, V))``;
        None for other relevance (the ideal ranking is then sorted)."""
        if "levels" not in self._part:
            Y, got = self.Y, None
            if Y.dtype.kind in "iu" and Y.size:
                top = int(Y.max())
                Q, L = Y.shape
                b = L.bit_length()                   # a row's count of one grade fits b bits
                cnt = None
                if 0 < top and top * b <= 62:
                    # one gather and one row sum: grade v >= 1 adds 1 to bit field v-1 of
                    # the row's packed counts; 'clip' maps negative grades to entry 0 (none).
                    # (fewer passes than the bincount below; benchmarks/bench_retrieval.py)
                    dt = np.int32 if top * b <= 31 else np.int64
                    lut = np.zeros(top + 1, dtype=dt)
                    lut[1:] = [1 << (b * v) for v in range(top)]
                    packed = np.take(lut, Y, mode="clip").sum(axis=1, dtype=np.int64)
                    shifts = np.arange(top - 1, -1, -1, dtype=np.int64) * b   # grades top .. 1
                    cnt = (packed[:, None] >> shifts) & ((1 << b) - 1)
                elif 0 < top and Q * (top + 1) <= 4 * Y.size + 1024:
                    G = np.maximum(Y, 0).astype(np.int64, copy=False)   # uint64 + int64: float
                    cnt = np.bincount((np.arange(Q, dtype=np.int64)[:, None] * (top + 1)
                                       + G).reshape(-1), minlength=Q * (top + 1))
                    cnt = cnt.reshape(Q, top + 1)[:, :0:-1]      # grades top .. 1
                elif top <= 0:
                    got = (np.zeros(0), np.zeros((Q, 0), np.int64), np.zeros((Q, 0), np.int64))
                if cnt is not None:
                    hi = np.cumsum(cnt, axis=1)
                    got = (self._gain_of(np.arange(top, 0, -1)), hi - cnt, hi)
            self._part["levels"] = got
        return self._part["levels"]

    def ideal_sum(self, W, k):
        L = self.Y.shape[1]
        kk = L if k is None else min(k, L)
        lv = self._levels()
        if lv is not None:
            # the ideal ranking holds each grade's rows together: gain x its weights
            g, lo, hi = lv
            return (W[np.minimum(hi, kk)] - W[np.minimum(lo, kk)]) @ g
        return self._ideal()[:, :kk] @ np.diff(W[:kk + 1])

    def n_rel(self):
        return self.rel().sum(axis=1)

    def no_gain(self):   # gains are >= 0: ideal DCG is 0 iff the largest gain is
        lv = self._levels()
        if lv is not None:
            return lv[2][:, -1] == 0 if lv[2].shape[1] else np.ones(self.Y.shape[0], bool)
        return self._ideal()[:, 0] <= 0


def _context(y_true, y_score, query_id, **kw):
    """The dense NumPy fast path where it applies, else the general segment sort."""
    dense = _Dense.build(y_true, y_score, query_id, **kw)
    if dense is not None:
        return dense
    return _Ranking(y_true, y_score, query_id, **kw)


# --------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------

def _finish(ctx, values, undefined, *, undefined_mode, name, k=None, weights=None,
            warn_what="queries with no relevant item"):
    """Per-query values (Q,) or (K, Q) -> QueryResult: NaN, mean, count, warning."""
    xp = ctx.xp
    undefined_mode = V.choice(undefined_mode, "undefined", ("skip", "zero"))
    f = ctx.f
    nan = xp.asarray(math.nan, dtype=f, device=ctx.dev)
    if undefined is None:
        undefined = xp.zeros(ctx.ss.num_segments, dtype=xp.bool, device=ctx.dev)
    n_undef = xp.sum(xp.astype(undefined, ctx.ai))
    if undefined_mode == "zero":
        vals = xp.where(undefined, xp.zeros_like(values), values)
    else:
        vals = xp.where(undefined, nan, values)
    w = xp.astype(~undefined, f) if undefined_mode == "skip" else \
        xp.ones(undefined.shape, dtype=f, device=ctx.dev)
    if weights is not None:
        w = w * weights
    wsum = xp.sum(w)
    num = xp.sum(xp.where(w > 0, vals, xp.zeros_like(vals)) * w, axis=-1)
    mean = xp.where(wsum > 0, num / xp.where(wsum > 0, wsum, 1.0), nan)
    vals = B.nan_if(ctx.invalid, vals, xp)
    mean = B.nan_if(ctx.invalid, mean, xp)
    if not ctx.traced:
        nu = int(n_undef)
        if undefined_mode == "skip" and nu > 0 and not bool(ctx.invalid):
            B.warn_undefined(f"{name} is undefined for {nu} of {ctx.ss.num_segments} "
                             f"{warn_what}: NaN, left out of the mean")
        n_undef = nu
    return QueryResult(vals, ctx.ss.query_ids, B.finalize(mean, xp), n_undef, k, name)


def _per_k(ctx, ks, is_seq, fn):
    xp = ctx.xp
    if ks is None:
        return fn(None)
    vals = [fn(k) for k in ks]
    return xp.stack(vals) if is_seq else vals[0]


def _k_out(ks, is_seq):
    if ks is None:
        return None
    return ks if is_seq else ks[0]


# --------------------------------------------------------------------------
# eager JAX: validate eagerly, then run the kernel as one compiled program
# --------------------------------------------------------------------------

_ARRAY_OPTIONS = ("doc_id", "retrieved", "sample_weight")
_NO_UNDEFINED = ("dcg", "precision_at_k")


def _segment_prepare(id_name="query_id", binary=False, what="queries with no relevant item"):
    """The compile policy's ``prepare`` hook for every per-segment function.

    Eagerly (concrete JAX input): check values (raise as documented), factorise
    the ids into codes with a static ``num_segments``; ``finish`` puts the
    original ids back and issues the undefined-segment warning.
    """

    def prepare(a):
        extras = [a.get(k) for k in _ARRAY_OPTIONS]
        xp, y, s, qid, extra, num_segments = _as_flat(a["y_true"], a["y_score"], a.get(id_name),
                                                      extras, a.get("num_segments"))
        value_checks(xp, y, s)
        ex = dict(zip(_ARRAY_OPTIONS, extra))
        if binary:
            V.binary_labels(y, xp)
        if ex["sample_weight"] is not None:
            V.check_weights("sample_weight", ex["sample_weight"], xp)
        if ex["doc_id"] is not None:
            B.check_numeric("doc_id", ex["doc_id"], xp)
        codes, qids, Q, _, _ = S.factorize(qid, xp, num_segments=num_segments, name=id_name)
        out = dict(a, y_true=y, y_score=s, num_segments=Q, **{id_name: codes})
        out.update({k: ex[k] for k in _ARRAY_OPTIONS if k in a})

        def finish(res):
            nu = int(res.n_undefined)
            if nu and a.get("undefined", "skip") == "skip" and res.metric not in _NO_UNDEFINED:
                B.warn_undefined(f"{res.metric} is undefined for {nu} of {Q} {what}: NaN, left "
                                 f"out of the mean")
            return QueryResult(res.values, qids, res.mean, nu, res.k, res.metric)

        return out, finish

    return prepare


_per_query = compiled(nan_ok=True, prepare=_segment_prepare())


# --------------------------------------------------------------------------
# public per-query metrics
# --------------------------------------------------------------------------

_COMMON_DOC = """
    Parameters
    ----------
    y_true : array (n,) or (Q, L)
        Graded relevance per document (integers or floats). Negative values
        mean judged non-relevant (gain 0), as in trec_eval.
    y_score : array (n,) or (Q, L)
        Scores, higher ranks first. Finite.
    query_id : array (n,), optional
        The query of each row: any ids eagerly (factorised), integers in
        ``0 .. num_segments-1`` when ``num_segments`` is given (required under
        ``jit``). Omit it for 2-D input (row = query).
    ties : {"average", "trec_eval"}
        ``"average"`` (default): expected value over all orderings of tied
        scores (McSherry & Najork 2008), independent of row order.
        ``"trec_eval"``: ties broken by ``doc_id`` descending (trec_eval 9).
    doc_id : array (n,) of integers, optional
        Document ids for ``ties="trec_eval"`` (larger id ranks first among
        equal scores; order string ids before coding them, as ``calipers``'s
        TREC reader does).
    retrieved : bool array (n,), optional
        False marks a judged document the system did not return: it counts in
        the ideal ranking and the number of relevant documents (trec_eval's
        denominators) but never in the ranking.
    num_segments : int, optional
        Number of queries (static under ``jit``; the JAX ``segment_sum``
        convention). Ids without rows are empty queries (undefined where the
        metric needs a relevant item).

    Returns
    -------
    QueryResult
        ``values`` (Q,) per query in ``query_ids`` order (``(len(k), Q)`` for
        a sequence ``k``), ``mean`` over defined queries, ``n_undefined``.
        Values are in the widest float of the backend (float64; float32 on
        JAX without x64).

    Raises
    ------
    ValueError
        Shapes that differ, empty input, NaN/inf in ``y_true`` or ``y_score``,
        ``k`` not a positive integer, ids out of range with ``num_segments``,
        an unknown option, ``ties="trec_eval"`` without ``doc_id``,
        ``num_segments`` missing under ``jit``. Under ``jit`` value errors
        cannot raise: the values and mean are NaN instead, and no warning is
        issued.
"""


_F = TypeVar("_F", bound=Callable[..., Any])


def _common_doc(fn: _F) -> _F:
    """Append the shared parameter section (a ``\"\"\"...\"\"\" + X`` expression is no docstring)."""
    fn.__doc__ = (fn.__doc__ or "") + _COMMON_DOC
    return fn


@_per_query
@_common_doc
def dcg(y_true: ArrayLike, y_score: ArrayLike, query_id: ArrayLike = None, *,
        k: int | Sequence[int] | None = None, gain: str = "linear", ties: str = "average",
        doc_id: ArrayLike = None, retrieved: ArrayLike = None,
        num_segments: int | None = None) -> QueryResult:
    """Discounted cumulative gain per query: ``sum_r gain(rel_r) / log2(r + 1)``, r <= k.

    ``k=None`` uses the whole list; ``k`` beyond the list length adds nothing.
    ``gain="linear"`` uses the relevance (scikit-learn ``dcg_score``,
    trec_eval), ``"exponential"`` uses ``2**rel - 1``. Tied scores share the
    average discount of their positions (``ties="average"``, scikit-learn's
    default ``ignore_ties=False``). DCG is defined for every query (0 without
    relevant items), so ``n_undefined`` is 0; the mean is over all queries.
    """
    ks, is_seq = check_k(k, required=False)
    ctx = _context(y_true, y_score, query_id, doc_id=doc_id, retrieved=retrieved, ties=ties,
                   gain=gain, num_segments=num_segments)
    vals = _per_k(ctx, ks, is_seq, ctx.dcg)
    return _finish(ctx, vals, None, undefined_mode="skip", name="dcg", k=_k_out(ks, is_seq))


@_per_query
@_common_doc
def ndcg(y_true: ArrayLike, y_score: ArrayLike, query_id: ArrayLike = None, *,
         k: int | Sequence[int] | None = None, gain: str = "linear", ties: str = "average",
         doc_id: ArrayLike = None, retrieved: ArrayLike = None, undefined: str = "skip",
         num_segments: int | None = None) -> QueryResult:
    """Normalised DCG per query: DCG@k / ideal DCG@k.

    The ideal ranking sorts every judged document of the query by gain (with
    ``retrieved``, unreturned judged documents too, as trec_eval does).
    ``k`` may be an int, ``None`` (whole list) or a sequence of ints (several
    cut-offs on one sort; values shape ``(len(k), Q)``). A query whose ideal
    DCG is 0 (no item with positive gain) is undefined: NaN, left out of the
    mean, counted in ``n_undefined``, with an :class:`UndefinedMetricWarning`
    eagerly; ``undefined="zero"`` scores it 0 and keeps it in the mean
    (scikit-learn's ``ndcg_score`` does this; trec_eval prints 0).

    Differences from scikit-learn ``ndcg_score``: flat per-row input (2-D also
    accepted), undefined queries NaN by default, ``gain`` selectable, no
    ``sample_weight`` over queries. Same tie rule (``ignore_ties=False``).
    Differences from trec_eval: ties averaged unless ``ties="trec_eval"``;
    trec_eval reads scores as 32-bit floats (the TREC reader does too).
    """
    ks, is_seq = check_k(k, required=False)
    ctx = _context(y_true, y_score, query_id, doc_id=doc_id, retrieved=retrieved, ties=ties,
                   gain=gain, num_segments=num_segments)
    return _ndcg_from(ctx, ks, is_seq, undefined)


def _ndcg_from(ctx, ks, is_seq, undefined):
    xp = ctx.xp
    undef = ctx.no_gain()

    def one(k):
        i = ctx.idcg(k)
        return ctx.dcg(k) / xp.where(i > 0, i, 1.0)

    vals = _per_k(ctx, ks, is_seq, one)
    return _finish(ctx, vals, undef, undefined_mode=undefined, name="ndcg",
                   k=_k_out(ks, is_seq), warn_what="queries with ideal DCG 0 (no relevant item)")


@_per_query
@_common_doc
def reciprocal_rank(y_true: ArrayLike, y_score: ArrayLike, query_id: ArrayLike = None, *,
                    relevance_level: float | None = None, ties: str = "average",
                    doc_id: ArrayLike = None, retrieved: ArrayLike = None, undefined: str = "skip",
                    num_segments: int | None = None) -> QueryResult:
    """Reciprocal rank of the first relevant document, per query (mean = MRR).

    0 when the query has relevant documents but none is ranked (only possible
    with ``retrieved``). With ``ties="average"`` the value is the exact expected
    reciprocal rank over the orderings of the tie group holding the first
    relevant document. A query with no relevant item is undefined (trec_eval
    prints 0; ``undefined="zero"`` does the same).
    """
    ctx = _Ranking(y_true, y_score, query_id, doc_id=doc_id, retrieved=retrieved, ties=ties,
                   relevance_level=relevance_level, num_segments=num_segments)
    return _finish(ctx, ctx.reciprocal_rank(), ctx.n_rel() == 0, undefined_mode=undefined,
                   name="reciprocal_rank")


@_per_query
@_common_doc
def average_precision(y_true: ArrayLike, y_score: ArrayLike, query_id: ArrayLike = None, *,
                      k: int | Sequence[int] | None = None,
                      relevance_level: float | None = None, ties: str = "average",
                      doc_id: ArrayLike = None, retrieved: ArrayLike = None,
                      undefined: str = "skip", num_segments: int | None = None) -> QueryResult:
    """Average precision per query (mean = MAP): ``sum_{relevant ranked} P@rank / R``.

    ``R`` is the number of relevant documents of the query, ranked or not
    (trec_eval's denominator). With ``k``: AP@k, the sum over relevant
    documents ranked 1..k only, still divided by ``R`` (trec_eval's
    ``map_cut.k``); a sequence of cut-offs gives values of shape
    ``(len(k), queries)`` from one sort. With ``ties="average"``: the expected
    AP over the orderings of tied documents (McSherry & Najork 2008), also at a
    cut-off through a tie group. This differs from
    :func:`calipers.average_precision_score`, where a tie group enters at one
    threshold (scikit-learn's convention). Undefined without relevant items.
    """
    ks, is_seq = check_k(k, required=False)
    ctx = _Ranking(y_true, y_score, query_id, doc_id=doc_id, retrieved=retrieved, ties=ties,
                   relevance_level=relevance_level, num_segments=num_segments)
    R = ctx.n_rel()
    denom = ctx.xp.where(R > 0, R, 1.0)
    vals = _per_k(ctx, ks, is_seq, lambda kk: ctx.average_precision_sum(kk) / denom)
    return _finish(ctx, vals, R == 0, undefined_mode=undefined, name="average_precision",
                   k=_k_out(ks, is_seq))


@_per_query
@_common_doc
def precision_at_k(y_true: ArrayLike, y_score: ArrayLike, query_id: ArrayLike = None, *,
                   k: int | Sequence[int], relevance_level: float | None = None,
                   ties: str = "average", doc_id: ArrayLike = None, retrieved: ArrayLike = None,
                   num_segments: int | None = None) -> QueryResult:
    """Precision at k per query: relevant documents among the top k, divided by k.

    The denominator is always ``k`` even when the query has fewer than ``k``
    ranked documents (trec_eval ``P.k``, ranx). Ties at the k-th position by
    expectation (``ties="average"``). Defined for every query (0 without
    relevant items), so ``n_undefined`` is 0. Not the binary
    :func:`calipers.precision_at_k` (one ranking, ``k`` rows).
    """
    ks, is_seq = check_k(k, required=True)
    ctx = _context(y_true, y_score, query_id, doc_id=doc_id, retrieved=retrieved, ties=ties,
                   relevance_level=relevance_level, num_segments=num_segments)
    vals = _per_k(ctx, ks, is_seq, lambda kk: ctx.hits(kk) / kk)
    return _finish(ctx, vals, None, undefined_mode="skip", name="precision_at_k",
                   k=_k_out(ks, is_seq))


@_per_query
@_common_doc
def recall_at_k(y_true: ArrayLike, y_score: ArrayLike, query_id: ArrayLike = None, *,
                k: int | Sequence[int], relevance_level: float | None = None, ties: str = "average",
                doc_id: ArrayLike = None, retrieved: ArrayLike = None, undefined: str = "skip",
                num_segments: int | None = None) -> QueryResult:
    """Recall at k per query: relevant documents in the top k over all relevant of the query.

    Ties at the k-th position by expectation. Undefined without relevant items
    (trec_eval prints 0).
    """
    ks, is_seq = check_k(k, required=True)
    ctx = _context(y_true, y_score, query_id, doc_id=doc_id, retrieved=retrieved, ties=ties,
                   relevance_level=relevance_level, num_segments=num_segments)
    R = ctx.n_rel()
    den = ctx.xp.where(R > 0, R, 1.0)
    vals = _per_k(ctx, ks, is_seq, lambda kk: ctx.hits(kk) / den)
    return _finish(ctx, vals, R == 0, undefined_mode=undefined, name="recall_at_k",
                   k=_k_out(ks, is_seq))


@_per_query
@_common_doc
def r_precision(y_true: ArrayLike, y_score: ArrayLike, query_id: ArrayLike = None, *,
                relevance_level: float | None = None, ties: str = "average",
                doc_id: ArrayLike = None, retrieved: ArrayLike = None, undefined: str = "skip",
                num_segments: int | None = None) -> QueryResult:
    """R-precision per query: precision at rank R, R = number of relevant documents.

    Denominator R even when fewer than R documents are ranked (trec_eval
    ``Rprec``). Ties at rank R by expectation. Undefined without relevant items.
    """
    ctx = _Ranking(y_true, y_score, query_id, doc_id=doc_id, retrieved=retrieved, ties=ties,
                   relevance_level=relevance_level, num_segments=num_segments)
    R = ctx.n_rel()
    vals = ctx.rprec_hits() / ctx.xp.where(R > 0, R, 1.0)
    return _finish(ctx, vals, R == 0, undefined_mode=undefined, name="r_precision")


# --------------------------------------------------------------------------
# grouped AUC
# --------------------------------------------------------------------------

@compiled(nan_ok=True, prepare=_segment_prepare("group_id", binary=True,
                                              what="groups with one class"))
def grouped_roc_auc(y_true: ArrayLike, y_score: ArrayLike, group_id: ArrayLike = None, *,
                    sample_weight: ArrayLike = None, weighting: str = "uniform",
                    num_segments: int | None = None) -> QueryResult:
    """ROC AUC per group (user, query) in one segment sort, and the grouped AUC (GAUC).

    Each group's AUC is the Mann-Whitney statistic with a tied
    (positive, negative) pair counting 1/2 (Hanley & McNeil 1982), exactly
    :func:`calipers.roc_auc_score` on that group's rows; with
    ``sample_weight`` a pair counts ``w_pos * w_neg``. A group with one class
    only (or zero weight of a class) is undefined: NaN, left out of the mean,
    counted in ``n_undefined`` (with an :class:`UndefinedMetricWarning`
    eagerly).

    ``weighting``: ``"uniform"`` (mean of the defined groups' AUCs),
    ``"size"`` (weighted by the group's number of rows, or its total
    ``sample_weight``: impressions; Zhou et al. 2018, GAUC), ``"positives"``
    (weighted by its number, or weight, of positives).

    Parameters
    ----------
    y_true : array (n,) or (G, L)
        Labels in {0, 1} (or bool).
    y_score : array (n,) or (G, L)
        Finite scores.
    group_id : array (n,), optional
        Group per row; as ``query_id`` in :func:`ndcg`. Omit for 2-D input.
    sample_weight : array (n,), optional
        Non-negative weights.
    num_segments : int, optional
        Number of groups (required under ``jit``; ids in ``0 .. G-1``).

    Returns
    -------
    QueryResult with per-group AUC in ``values``, the GAUC in ``mean``.

    Raises
    ------
    ValueError
        As :func:`ndcg`, plus labels outside {0, 1}, negative or non-finite
        weights, an unknown ``weighting``. Under ``jit``: NaN instead.
    """
    weighting = V.choice(weighting, "weighting", ("uniform", "size", "positives"))
    xp, y_true, y_score, group_id, (_, _, w), num_segments = _as_flat(
        y_true, y_score, group_id, [None, None, sample_weight], num_segments)
    invalid = value_checks(xp, y_true, y_score)
    y01, bad = V.binary_labels(y_true, xp)
    invalid = invalid | bad
    if w is not None:
        invalid = invalid | V.check_weights("sample_weight", w, xp)
    ss = S.segment_sort(group_id, y_score, xp, num_segments=num_segments, name="group_id")
    f = B.acc_float(xp)
    tg = R.from_segment_sort(ss, y01, xp)
    cw = R.class_weights(tg, None if w is None else xp.take(w, ss.order), xp)
    auc, undef = R.binary_auc(tg, cw, xp)   # per group; integer counts, one division
    P, N = xp.astype(cw.P, f), xp.astype(cw.N, f)

    class _Ctx:
        pass

    ctx: Any = _Ctx()
    ctx.xp, ctx.f, ctx.ai, ctx.ss = xp, f, B.acc_int(xp), ss
    ctx.dev = B.device(y_score)
    ctx.invalid = invalid | ss.invalid
    ctx.traced = B.is_traced(y_true, y_score, group_id, w)
    weights = None
    if weighting == "size":
        weights = P + N
    elif weighting == "positives":
        weights = P
    return _finish(ctx, auc, undef, undefined_mode="skip", name="grouped_roc_auc",
                   weights=weights, warn_what="groups with one class")
