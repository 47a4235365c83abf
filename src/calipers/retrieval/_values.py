"""Per-query values of trec_eval's measures from the ranked relevance codes.

:func:`_trec_values` computes them from one ranking (:class:`_Ranked` of the
join): the common measures in one pass over the ranks of a dense block
(:class:`_BlockScan`), the others from flat per-query lists (:class:`_Lists`).
``ties="average"`` takes them from :class:`calipers.retrieval._measures._Ranking`
(:func:`_average_ties_values`).
"""

from __future__ import annotations

import numpy as np

from .._kernels.segments import pad_segments
from ._encode import _NONPOOL, _UNJUDGED
from ._names import _RECALL_POINTS, _measure_name
from ._paths import _PATHS


_MIN_GEO_MEAN = 1e-5    # trec_eval floors a value at this before the log of gm_map, gm_bpref
_INFAP_EPSILON = 1e-5   # trec_eval's smoothing of infAP's precision among judged documents


def _div(a, b):
    """a / b where b > 0, else 0 (trec_eval's value for an undefined query)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


def _padded(x):
    """``x`` as float64 with one 0 appended (the form :func:`_range_sums` takes)."""
    xx = np.zeros(x.shape[0] + 1)
    xx[:-1] = x
    return xx


def _range_sums(x, a, b, padded=False):
    """``sum(x[a[i]:b[i]])`` for each i (0 where ``a >= b``), as float64 sums in row order
    within each range (no prefix-sum differences: exact to rounding of the range's own sum).
    ``padded``: ``x`` is already :func:`_padded` (pad once for many calls)."""
    a = np.asarray(a, dtype=np.int64)
    xx = x if padded else _padded(x)
    if xx.shape[0] == 1 or a.shape[0] == 0:
        return np.zeros(a.shape[0])
    idx = np.empty(2 * a.shape[0], dtype=np.int64)
    idx[0::2] = a
    idx[1::2] = b
    got = np.add.reduceat(xx, idx)[0::2]
    return np.where(a < np.asarray(b), got, 0.0)


def _prefix_count(mask):
    """``[0, cumsum(mask)]``: 32-bit counts when they fit (half the memory traffic)."""
    c = np.zeros(mask.shape[0] + 1, dtype=np.int32 if mask.shape[0] < 2 ** 31 else np.int64)
    np.cumsum(mask, out=c[1:])
    return c


def _gain_table(top, params):
    """Gain of each relevance level 0 .. ``top``: the level itself unless ``params``
    (``"level=gain,..."``) re-maps it."""
    table = np.arange(top + 1, dtype=np.float64)
    for pair in (params.split(",") if params else []):
        lev, _, g = pair.partition("=")
        if 0 <= int(lev) <= top:
            table[int(lev)] = float(g)
    return table


class _IdealDCG:
    """Ideal DCG from judgement counts per level ``(Q, levels)``: levels in gain order
    (equal gains are interchangeable), the ideal DCG over the first m ranks is a sum over
    levels of gain x (discounts of that level's ranks)."""

    def __init__(self, levels, table):
        by_gain = np.argsort(-table, kind="stable")
        by_gain = by_gain[table[by_gain] > 0]
        counts = levels[:, by_gain]
        self.hi = np.cumsum(counts, axis=1)
        self.lo = self.hi - counts
        big = int(self.hi[:, -1].max(initial=0)) if self.hi.shape[1] else 0
        self.disc = np.zeros(big + 1)
        np.cumsum(1.0 / np.log2(np.arange(big) + 2.0), out=self.disc[1:])
        self.gains = table[by_gain]

    def at(self, m):
        """Over the first ``m`` ranks of each query (``m`` None: every judgement)."""
        disc, lo, hi = self.disc, self.lo, self.hi
        if m is None:
            return (disc[hi] - disc[lo]) @ self.gains
        mm = np.asarray(m, dtype=np.int64).reshape(-1, 1)
        return (disc[np.minimum(hi, mm)] - disc[np.minimum(lo, mm)]) @ self.gains


def _count_value(fam, k, R, nret, relret):
    """The measures of per-query counts alone (float64 ``R``, ``nret``, ``relret``); None
    for the others."""
    if fam == "num_ret":
        return nret
    if fam == "num_rel":
        return R
    if fam == "num_rel_ret":
        return relret
    if fam == "utility":
        p = [1.0, -1.0, 0.0, 0.0] if k is None else [float(x) for x in k.split(",")]
        # no collection size (trec_eval -N, default 0) for the last term
        return p[0] * relret + p[1] * (nret - relret) + p[2] * (R - relret) + \
            p[3] * (relret - nret - R)
    if fam in ("set_P", "set_recall", "set_relative_P", "set_map", "set_F"):
        sp, sr = _div(relret, nret), _div(relret, R)
        if fam == "set_P":
            return sp
        if fam == "set_recall":
            return sr
        if fam == "set_relative_P":
            return _div(relret, np.minimum(nret, R))
        if fam == "set_map":
            return sp * sr
        x = 1.0 if k is None else float(k)
        return _div((x + 1.0) * sp * sr, x * sp + sr)
    return None


# The measures that read per-query terms only (one formula each, :func:`_term_value`):
# what the block scan computes, and what ties="average" takes from the expectations.
_TERM_FAMILIES = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret",
                            "map", "gm_map", "map_cut", "Rprec", "recip_rank", "_rr_cut", "P",
                            "recall", "relative_P", "success", "_judged", "bpref", "gm_bpref",
                            "ndcg", "ndcg_cut", "utility", "set_P", "set_recall",
                            "set_relative_P", "set_map", "set_F"})


def _term_value(fam, k, T):
    """trec_eval's value of a measure of :data:`_TERM_FAMILIES` from one ranking's
    per-query terms ``T`` (None for another measure): its counts ``R``, ``nret`` and
    ``relret`` (float64 ``relret``) and the sums it reads, ``hits(k)`` (relevant in the
    top ``k``), ``ap_sum(k)`` (precision at each relevant row, over the top ``k``; None:
    all), ``rprec_hits()`` (relevant in the top R), ``rr(k)`` (reciprocal rank of the first
    relevant row within the top ``k``, else 0), ``bpref_sum()``, ``nonrel_judged()``,
    ``judged(k)`` (judged rows in the top ``k``), ``dcg(params, k)`` and ``ideal(params,
    k)`` (DCG and ideal DCG over the top ``k``; ``params``: the gain re-map). The terms come
    from :class:`_BlockScan`, :class:`_Lists` or, for ties="average", :class:`_AverageTerms`.
    """
    R, nret, relret = T.R.astype(np.float64), T.nret.astype(np.float64), T.relret
    got = _count_value(fam, k, R, nret, relret)
    if got is not None or fam not in _TERM_FAMILIES:
        return got
    if fam == "num_nonrel_judged_ret":
        return T.nonrel_judged()
    if fam in ("map", "gm_map"):
        return _div(T.ap_sum(None), R)
    if fam == "map_cut":
        return _div(T.ap_sum(k), R)
    if fam == "Rprec":
        return _div(T.rprec_hits(), R)
    if fam in ("recip_rank", "_rr_cut"):
        return T.rr(k)
    if fam in ("bpref", "gm_bpref"):
        return _div(T.bpref_sum(), R)
    if fam == "ndcg":
        return _div(T.dcg(k, None), T.ideal(k, None))
    if fam == "ndcg_cut":
        return _div(T.dcg(None, k), T.ideal(None, k))
    if fam == "_judged":     # ir_measures Judged@k: share of the top k in the qrels
        return _div(T.judged(k), np.minimum(T.nret, k))
    hits = T.hits(k)
    if fam == "P":
        return hits / k
    if fam == "recall":
        return _div(hits, R)
    if fam == "relative_P":
        return _div(hits, np.minimum(R, k))
    assert fam == "success", fam
    return (hits > 0).astype(np.float64)


class _BlockScan:
    """The common measures on a dense rank-major block of codes (:class:`_Ranked`): one
    pass over the ranks, each adding to per-query running counts and sums (vectors over a
    slice of queries), read at the cut-offs. Each query's sums run in rank order, as
    trec_eval adds (rows that add nothing add nothing or 0.0, which changes no sum)."""

    FAMILIES = _TERM_FAMILIES

    def __init__(self, rk, level, measures, dense_slice=_PATHS.dense_slice):
        block, lc = rk.block, rk.levels
        self.L, self.Q = block.shape
        self.level, self.levels = level, lc
        self.R = lc[:, max(level, 0):].sum(axis=1)
        self.N = lc.sum(axis=1) - self.R                 # judged non-relevant
        self.nret = rk.nret
        self._ideal: dict = {}
        last, col = self.L - 1, self.col
        # running quantity -> {rank (0-based) it is read after: per-query values}
        self.at: dict = {"hits": {last: None}}           # relevant retrieved in the top
        for f, k in measures:
            if f in ("P", "recall", "relative_P", "success"):
                self.at["hits"][col(k)] = None
            elif f in ("map", "gm_map", "map_cut"):
                self.at.setdefault("ap", {})[col(k) if f == "map_cut" else last] = None
            elif f in ("ndcg", "ndcg_cut"):
                self.at.setdefault(("dcg", k if f == "ndcg" else None), {})[
                    last if f == "ndcg" else col(k)] = None
            elif f == "_judged":
                self.at.setdefault("judged", {})[col(k)] = None
            elif f in ("bpref", "gm_bpref"):
                self.at["bpref"] = {last: None}
            elif f == "num_nonrel_judged_ret":
                self.at["nonrel"] = {last: None}
            elif f in ("recip_rank", "_rr_cut"):
                self.at["before"] = {last: None}         # ranks above the first relevant
            elif f == "Rprec":
                self.at["rprec"] = {}
        for d in self.at.values():
            for j in d:
                d[j] = np.zeros(self.Q)
        self._rprec = np.zeros(self.Q)
        for a in range(0, self.Q, dense_slice):     # queries per slice (kept in cache)
            self._scan(block[:, a:a + dense_slice], a)
        self.relret = self.at["hits"][last]

    def col(self, k):
        """The rank (0-based) a cut-off ``k`` is read after (the last, past the block)."""
        return min(int(k), self.L) - 1

    def _scan(self, blk, a):
        """Every running quantity over queries ``a ..`` (``blk``: their codes, rank-major).
        Masks multiply (``where=`` is many times slower); counts are int32."""
        L, r = blk.shape
        b = a + r
        at, level = self.at, self.level
        i32 = np.int32
        hits = np.zeros(r, dtype=i32)
        rel = np.empty(r, dtype=bool)
        tmp = np.empty(r)
        run = {q: np.zeros(r, dtype=i32 if q in ("judged", "nonrel", "before") else np.float64)
               for q in at if q not in ("hits", "rprec")}
        if "bpref" in at or "nonrel" in at:
            nj = run.setdefault("nonrel", np.zeros(r, dtype=i32))
            R = self.R[a:b].astype(i32)
            den = np.maximum(np.minimum(self.N[a:b], self.R[a:b]), 1).astype(np.float64)
            small = np.empty(r, dtype=i32)
            jn = np.empty(r, dtype=bool)
        if "rprec" in at:
            # queries by the rank their R-th relevant would be at (past the block: the last)
            rcol = np.clip(self.R[a:b], 1, L) - 1
            by_rank = np.argsort(rcol, kind="stable")
            edges = np.searchsorted(rcol[by_rank], np.arange(L + 1))
        dcg = []
        for q in run:
            if isinstance(q, tuple):
                table = self.gain_table(q[1])
                # the default gains are the levels: max(code, 0) is the gain, no lookup
                plain = np.array_equal(table, np.arange(table.shape[0]))
                dcg.append((q, None if plain else np.concatenate([table, [0.0, 0.0]])))
        if dcg:
            lg = np.log2(np.arange(L) + 2.0)
            gain = np.empty(r, dtype=blk.dtype)
        for j in range(L):
            c = blk[j]
            np.greater_equal(c, level, out=rel)
            hits += rel
            if "before" in run:
                run["before"] += hits == 0
            if "ap" in run:    # precision at each relevant row: rel_so_far / (rank + 1)
                np.divide(hits, j + 1.0, out=tmp)
                tmp *= rel
                run["ap"] += tmp
            if "nonrel" in run:    # judged non-relevant rows so far
                np.greater_equal(c, 0, out=jn)
                jn &= c < level
                nj += jn
                if "bpref" in run:   # 1 - min(judged non-relevant above, R) / min(N, R)
                    np.minimum(nj, R, out=small)
                    np.divide(small, den, out=tmp)
                    np.subtract(1.0, tmp, out=tmp)
                    tmp *= rel
                    run["bpref"] += tmp
            for q, gext in dcg:      # gain / log2(rank + 2); codes -1, -2 gain 0
                if gext is None:
                    np.maximum(c, 0, out=gain)
                    np.divide(gain, lg[j], out=tmp)
                else:
                    np.take(gext / lg[j], c, out=tmp, mode="wrap")
                run[q] += tmp
            if "judged" in run:
                run["judged"] += c != _NONPOOL
            if "rprec" in at:
                i = by_rank[edges[j]:edges[j + 1]]
                self._rprec[a + i] = hits[i]
            for q, d in at.items():
                if j in d:
                    d[j][a:b] = hits if q == "hits" else run[q]

    def gain_table(self, params):
        return _gain_table(self.levels.shape[1] - 1, params)

    def ideal(self, params, m):
        if params not in self._ideal:
            self._ideal[params] = _IdealDCG(self.levels, self.gain_table(params))
        return self._ideal[params].at(m)

    # -- the terms of _term_value ---------------------------------------------
    def hits(self, k):
        return self.at["hits"][self.col(k)]

    def ap_sum(self, k):
        return self.at["ap"][self.L - 1 if k is None else self.col(k)]

    def rprec_hits(self):
        return self._rprec

    def rr(self, k):
        first = self.at["before"][self.L - 1]
        has = self.relret > 0
        if k is not None:
            has &= first < k
        return np.where(has, 1.0 / (first + 1.0), 0.0)

    def bpref_sum(self):
        return self.at["bpref"][self.L - 1]

    def nonrel_judged(self):
        return self.at["nonrel"][self.L - 1]

    def judged(self, k):
        return self.at["judged"][self.col(k)]

    def dcg(self, params, k):
        return self.at[("dcg", params)][self.L - 1 if k is None else self.col(k)]


class _Sub:
    """The ranked rows where ``mask`` holds (relevant rows, rows with a gain), kept in
    ranked order: ``rows`` (ranked positions), ``cnt``/``start`` per query, and the count
    of such rows in the top ``m`` of each query from one prefix count."""

    def __init__(self, L, mask):
        self.L = L
        self.rows = np.flatnonzero(mask)
        c = _prefix_count(mask)
        self.prefix = c
        self.cnt = c[L.start + L.nret] - c[L.start]
        self.start = c[L.start]
        self._pos = self._nth = None
        self._running: list = []     # (x, its running sums) pairs

    @property
    def pos(self):
        """Rank (0-based) of each row within its query."""
        if self._pos is None:
            self._pos = self.rows - np.repeat(self.L.start, self.cnt)
        return self._pos

    @property
    def nth(self):
        """1-based rank of each row among its query's rows in the subset."""
        if self._nth is None:
            self._nth = np.arange(1, self.rows.shape[0] + 1) - np.repeat(self.start, self.cnt)
        return self._nth

    def top(self, m):
        """Rows of the subset among the first ``m`` ranks of each query."""
        L = self.L
        m = np.clip(np.asarray(m, dtype=np.int64), 0, L.nret)
        return self.prefix[L.start + m] - self.start

    def running(self, x):
        """Running sums of ``x`` (:func:`_padded`, one value per subset row) within each
        query, as a ``(Q, most rows)`` array: one sequential sum per query in rank order
        (trec_eval's arithmetic) whose every prefix serves every cut-off. None when the
        padding would be large (a few very long queries)."""
        for xx, run in self._running:
            if xx is x:
                return run
        Q, n = self.L.Q, self.rows.shape[0]
        big = int(self.cnt.max(initial=0))
        if Q * big > 2 * n + 1024:
            return None
        block = pad_segments(x[:-1], self.start, self.cnt, big, np)[0]
        run = np.cumsum(block, axis=1, dtype=np.float64)
        self._running.append((x, run))
        return run

    def sums(self, x, m=None):
        """Per-query sum of ``x`` (:func:`_padded`, one value per subset row), over the top
        ``m`` if given."""
        t = self.cnt if m is None else self.top(m)
        run = self.running(x)
        if run is None:
            return _range_sums(x, self.start, self.start + t, padded=True)
        if run.shape[1] == 0:
            return np.zeros(run.shape[0])
        got = run[np.arange(run.shape[0]), np.maximum(t - 1, 0)]
        return np.where(t > 0, got, 0.0)


class _Lists:
    """trec_eval's ranked relevance lists of every query, from one sort (NumPy).

    Retrieved rows are ordered by (query, score descending, docno descending);
    ``code`` is the row's judged relevance (>= 0), ``-1`` for a document not in
    the qrels and ``-2`` for one judged with a negative relevance (trec_eval's
    "in the pool but unjudged", used by bpref and infAP). Per-query vectors are
    ``(Q,)``; per-row vectors follow the sorted rows (queries contiguous, from
    ``start``). ``first(x, m)`` sums a per-row ``x`` over the first ``m`` ranks of
    each query. Per-row arrays that only some measures need are built on first use.
    """

    def __init__(self, rk, level):
        Q = rk.Q
        self.Q, self.level = Q, level
        self._q = rk.q
        self.code = rk.codes()
        self.nret = rk.nret
        self.n = int(self.code.shape[0])
        self.start = np.cumsum(self.nret) - self.nret
        self.rel = self.code >= level
        self.jq, self.jy = rk.judgements if rk.judgements is not None else (None, None)
        self._cache: dict = {}
        if rk.levels is not None:
            self._cache["levels"] = rk.levels
        lc = self.level_counts()
        if lc is not None:
            judged_q = lc.sum(axis=1)
            self.R = lc[:, max(level, 0):].sum(axis=1)
        else:
            judged_q = np.bincount(self.jq, minlength=Q)
            self.R = np.bincount(self.jq[self.jy >= level], minlength=Q)
        self.N = judged_q - self.R                                    # judged non-relevant
        self.relsub = _Sub(self, self.rel)
        self.relret = self.relsub.cnt.astype(np.float64)

    @property
    def q(self):
        """Query of each ranked row (built on first use: few measures need it)."""
        if self._q is None:
            self._q = np.repeat(np.arange(self.Q, dtype=np.int64), self.nret)
        return self._q

    @property
    def pos(self):
        if "pos" not in self._cache:
            self._cache["pos"] = np.arange(self.n) - np.repeat(self.start, self.nret)
        return self._cache["pos"]

    @property
    def relcum(self):
        if "relcum" not in self._cache:
            p = self.relsub.prefix
            self._cache["relcum"] = p[1:] - np.repeat(p[self.start], self.nret)
        return self._cache["relcum"]

    @property
    def prec(self):
        if "prec" not in self._cache:
            self._cache["prec"] = self.relcum / (self.pos + 1.0)
        return self._cache["prec"]

    def ap_terms(self):
        """Precision at each relevant retrieved row (in ranked order)."""
        if "ap" not in self._cache:
            sub = self.relsub
            self._cache["ap"] = _padded(sub.nth / (sub.pos + 1.0))
        return self._cache["ap"]

    def unjudged_above(self):
        """At each relevant row: non-relevant rows ranked above it that are not judged
        (code < 0)."""
        sub = self.relsub
        c = _prefix_count((self.code < 0) & ~self.rel)
        return c[sub.rows] - np.repeat(c[self.start], sub.cnt)

    def total(self, x):
        return _range_sums(np.asarray(x, dtype=np.float64), self.start,
                           self.start + self.nret)

    def cum(self, x):
        """Inclusive running sum of ``x`` within each query."""
        c = np.concatenate([[0], np.cumsum(x)])
        return c[1:] - np.repeat(c[self.start], self.nret)

    def first_rel(self, m):
        """Relevant retrieved documents in the top ``m`` of each query."""
        return self.relsub.top(m).astype(np.float64)

    def first(self, x, m):
        m = np.clip(np.asarray(m, dtype=np.int64), 0, self.nret)
        return _range_sums(np.asarray(x, dtype=np.float64), self.start, self.start + m)

    # -- the terms of _term_value ---------------------------------------------
    def hits(self, k):
        return self.first_rel(k)

    def ap_sum(self, k):
        return self.relsub.sums(self.ap_terms(), k)

    def rprec_hits(self):
        return self.first_rel(self.R)

    def rr(self, k):
        return _first_rel_rr(self, k)

    def bpref_sum(self):
        """Over the relevant retrieved rows: 1 - min(judged non-relevant rows above, R) /
        min(N, R) (1 with none above)."""
        sub = self.relsub
        before = (sub.pos - sub.nth + 1) - self.unjudged_above()
        Rq = np.repeat(self.R, sub.cnt)
        den = np.repeat(np.maximum(np.minimum(self.N, self.R), 1), sub.cnt)
        frac = np.minimum(before, Rq) / den
        return sub.sums(_padded(np.where(before > 0, 1.0 - frac, 1.0)))

    def nonrel_judged(self):
        return self.total((self.code >= 0) & ~self.rel)

    def judged(self, k):
        return self.first(self.code != _NONPOOL, k)

    def dcg(self, params, k):
        sub, terms = self.dcg_terms(params)
        return sub.sums(terms, k)

    def ideal(self, params, k):
        return self.ideal_dcg(params, k)

    # -- interpolated precision ------------------------------------------
    def _suffix_max_prec(self):
        """max precision at ranks >= this row's, within its query (exact: integer keys)."""
        if "smax" not in self._cache:
            u, inv = np.unique(self.prec, return_inverse=True)
            off = self.q.astype(np.int64) * (u.shape[0] + 1)
            key = inv.reshape(-1).astype(np.int64) - off
            sm = np.maximum.accumulate(key[::-1])[::-1]
            self._cache["smax"] = u[sm + off] if u.shape[0] else np.zeros(0)
            relrows = np.nonzero(self.rel)[0]
            self._cache["relrows"] = relrows
            self._cache["relstart"] = np.cumsum(self.relret.astype(np.int64)) - \
                self.relret.astype(np.int64)
        return self._cache["smax"]

    def iprec(self, p, rounding):
        """Interpolated precision at recall ``p`` (trec_eval's iprec_at_recall)."""
        smax = self._suffix_max_prec()
        relrows, relstart = self._cache["relrows"], self._cache["relstart"]
        c = rounding(p * self.R)                    # recall level -> number of relevant
        relret = self.relret.astype(np.int64)
        out = np.zeros(self.Q)
        # c == 0: the best precision anywhere; 1 <= c <= relret: from the c-th relevant on
        z = (c == 0) & (self.nret > 0)
        out[z] = smax[self.start[z]]
        ok = (c >= 1) & (c <= relret)
        out[ok] = smax[relrows[relstart[ok] + c[ok] - 1]]
        return out

    def level_counts(self):
        """Judgements of each query at each relevance level 0 .. highest, ``(Q, levels)``
        (one count over the judgements serves R, the judged count and the ideal rankings);
        None when that table would be large."""
        if "levels" not in self._cache:
            nlev = int(self.jy.max(initial=0)) + 1
            lc = None
            if self.Q * nlev <= 4 * self.jy.shape[0] + 1_000_000:
                lc = np.bincount(self.jq * nlev + self.jy,
                                 minlength=self.Q * nlev).reshape(self.Q, nlev)
            self._cache["levels"] = lc
        return self._cache["levels"]

    # -- gains ---------------------------------------------------------------
    def gain_table(self, params):
        """Gain of each relevance level (0 .. the highest judged level)."""
        key = ("table", params)
        if key not in self._cache:
            lc = self.level_counts()
            top = lc.shape[1] - 1 if lc is not None else int(self.jy.max(initial=0))
            self._cache[key] = _gain_table(top, params)
        return self._cache[key]

    def row_gains(self, params):
        """Gain of each retrieved row (0 where not judged)."""
        table = self.gain_table(params)
        return np.where(self.code >= 0, table[np.maximum(self.code, 0)], 0.0)

    def dcg_terms(self, params):
        """(the rows that can have a gain as a :class:`_Sub`, gain / log2(rank + 2) at
        them). Rows not judged have none; nor have level-0 rows unless given a gain: the
        relevant rows' subset serves when it is the same set."""
        key = ("dcg_terms", params)
        if key not in self._cache:
            table = self.gain_table(params)
            lowest = 1 if table[0] == 0 else 0
            sub = self.relsub if lowest == self.level else _Sub(self, self.code >= lowest)
            pos = sub.pos
            lg = np.log2(np.arange(int(pos.max(initial=0)) + 1) + 2.0)
            self._cache[key] = (sub, _padded(table[self.code[sub.rows]] / lg[pos]))
        return self._cache[key]

    def ideal_dcg(self, params, m):
        """Ideal DCG over the first ``m`` ranks of each query (``m`` None: all judged)."""
        key = ("ideal", params)
        if key not in self._cache:
            table = self.gain_table(params)
            if self.level_counts() is not None:
                self._cache[key] = ("levels", _IdealDCG(self.level_counts(), table))
            else:
                _, ig, ipos, _, icnt, ist = self.gains(params)
                iv = _padded(np.where(ig > 0, ig, 0.0) / np.log2(ipos + 2.0))
                self._cache[key] = ("rows", iv, icnt, ist)
        got = self._cache[key]
        if got[0] == "levels":
            return got[1].at(m)
        iv, icnt, ist = got[1:]
        mm = icnt if m is None else np.minimum(np.clip(m, 0, None), icnt)
        return _range_sums(iv, ist, ist + mm, padded=True)

    def gains(self, params):
        """(gain per retrieved row, ideal gains sorted per query, their ranks, queries)."""
        key = ("gains", params)
        if key not in self._cache:
            table, g = self.gain_table(params), self.row_gains(params)
            top = table.shape[0] - 1
            nlev = top + 1
            if self.level_counts() is not None:
                # Ideal ranking without a sort: per query, the judged count of each level,
                # levels in gain order (descending; equal gains are interchangeable).
                by_gain = np.argsort(-table, kind="stable")
                counts = self.level_counts()[:, by_gain].ravel()
                ig = np.repeat(np.tile(table[by_gain], self.Q), counts)
                iq = np.repeat(np.repeat(np.arange(self.Q), nlev), counts)
            else:
                gj = table[self.jy]
                o = np.lexsort((-gj, self.jq))
                iq, ig = self.jq[o], gj[o]
            cnt = np.bincount(iq, minlength=self.Q)
            ist = np.cumsum(cnt) - cnt
            ipos = np.arange(iq.shape[0]) - ist[iq]
            self._cache[key] = (g, ig, ipos, iq, cnt, ist)
        return self._cache[key]


def _first_rel_rr(L, k):
    """Reciprocal rank of each query's first relevant row (within the top ``k``), else 0."""
    sub = L.relsub
    has = sub.cnt > 0
    p = np.zeros(L.Q, dtype=np.int64)
    p[has] = sub.rows[sub.start[has]] - L.start[has]
    if k is not None:
        has &= p < k
    return np.where(has, 1.0 / (p + 1.0), 0.0)


def _gm(v):
    v = np.asarray(v, dtype=np.float64)
    return float(np.exp(np.mean(np.log(np.maximum(v, _MIN_GEO_MEAN))))) if v.shape[0] \
        else float("nan")


def _relstring(L, n):
    chars = np.array(list("0123456789"))
    out = np.empty(L.Q, dtype=object)
    code = L.code
    for i in range(L.Q):
        c = code[L.start[i]:L.start[i] + min(n, L.nret[i])]
        s = np.where(c > 9, ">", np.where(c >= 0, chars[np.clip(c, 0, 9)],
                                          np.where(c == _NONPOOL, "-",
                                                   np.where(c == _UNJUDGED, ".", "<"))))
        out[i] = "".join(s.tolist())
    return out


def _iprec_round(x):
    # trec_eval 9.0.8: recall level x relevant count, plus 0.9, truncated (later
    # versions round to the nearest integer)
    return np.floor(x + 0.9).astype(np.int64)


def _trec_values(rk, measures, *, relevance_level, paths=_PATHS):
    """Per-query values of trec_eval's measures from its ranked lists (:class:`_Ranked`):
    the common ones from the dense block when there is one (:class:`_BlockScan`), the
    others from the flat lists (:class:`_Lists`, built only when one of them is asked for)."""
    dense = None
    if rk.block is not None and rk.Q >= paths.dense_min_queries:
        dense = _BlockScan(rk, relevance_level,
                           [p for p in measures if p[0] in _BlockScan.FAMILIES],
                           paths.dense_slice)
    lists = None
    res = {}
    for fam, k in measures:
        if fam in ("runid", "num_q"):
            continue
        if dense is not None and fam in _BlockScan.FAMILIES:
            v = _term_value(fam, k, dense)
        else:
            if lists is None:
                lists = _Lists(rk, relevance_level)
            v = _list_value(lists, fam, k)
        res[_measure_name(fam, k)] = v if fam == "relstring" else \
            np.asarray(v, dtype=np.float64)
    return res


def _list_value(L, fam, k):
    """One measure's per-query values from :class:`_Lists`."""
    v = _term_value(fam, k, L)
    if v is not None:
        return v
    R = L.R.astype(np.float64)
    rel = L.rel
    if fam == "infAP":
        nj = L.cum((L.code >= 0) & ~rel)
        pu = L.cum(L.code == _UNJUDGED)
        j = L.pos.astype(np.float64)
        rs1 = L.relcum - 1.0
        js = np.where(j > 0, j, 1.0)
        eps = _INFAP_EPSILON
        term = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((rs1 + nj + pu) / js) * \
            ((rs1 + eps) / (rs1 + nj + 2 * eps))
        v = _div(L.total(rel * np.where(j == 0, 1.0, term)), R)
    elif fam == "binG":
        v = _div(L.total(rel / np.log2(2.0 + L.pos + 1.0 - L.relcum)), R)
    elif fam == "iprec_at_recall":
        v = L.iprec(k, _iprec_round)
    elif fam == "11pt_avg":
        pts = _RECALL_POINTS if k is None else [float(x) for x in k.split(",")]
        v = sum(L.iprec(p, _iprec_round) for p in pts) / len(pts)
    elif fam == "Rprec_mult":
        c = np.floor(k * R + 0.9).astype(np.int64)     # trec_eval: (long)(x R + 0.9)
        v = _div(L.first_rel(c), c)
    elif fam in ("G", "Rndcg", "ndcg_rel"):
        v = _gain_measure(L, fam, k)
    elif fam == "relstring":
        v = _relstring(L, 10 if k is None else int(float(k)))
    else:  # pragma: no cover - parse_trec_measures admits no other
        raise AssertionError(fam)
    return v


def _gain_measure(L, fam, k):
    """G, Rndcg and ndcg_rel (gain = relevance level unless re-mapped; ndcg and ndcg_cut:
    :func:`_term_value`)."""
    params = k
    g, ig, ipos, iq, icnt, ist = L.gains(params)
    pos = L.pos
    Q = L.Q
    key = ("dcg", params)
    if key not in L._cache:
        # log2(rank + 1) from one table of the ranks that occur (the same values)
        lg = np.log2(np.arange(max(int(pos.max(initial=0)), int(ipos.max(initial=0))) + 1)
                     + 2.0)
        gd = g / lg[pos]
        iv = np.where(ig > 0, ig, 0.0) / lg[ipos]
        L._cache[key] = (L.cum(gd),                     # DCG through each retrieved row
                         L.total(gd),                   # DCG of the whole ranking
                         np.concatenate([[0.0], np.cumsum(iv)]),   # ideal DCG prefix
                         np.bincount(iq[ig > 0], minlength=Q))     # positive ideal gains
    dc, full, ic, P = L._cache[key]

    def ideal(qq, m):   # ideal DCG over the first m ideal ranks of queries qq
        m = np.clip(m, 0, icnt[qq])
        return ic[ist[qq] + m] - ic[ist[qq]]

    qs = np.arange(Q)
    if fam == "ndcg_rel":
        through = ideal(L.q, pos + 1)
        s = L.total((g > 0) * _div(dc, through))
        npos = L.total(g > 0)
        s = s + (P - npos) * _div(full, ideal(qs, icnt))
        return np.where(s > 0, _div(s, P), 0.0)
    if fam == "G":
        # cost of rank i: sum over ranks <= i of max(ideal gain, 1) (1 past the ideal list)
        cc = np.concatenate([[0.0], np.cumsum(np.maximum(ig, 1.0))])
        m = np.minimum(pos + 1, icnt[L.q])
        cost = cc[ist[L.q] + m] - cc[ist[L.q]] + (pos + 1 - m)
        gsum = L.cum(g)
        term = np.where(g != 0, g / np.log2(np.where(g != 0, 2.0 + cost - gsum, 2.0)), 0.0)
        sum_ideal = np.bincount(iq, weights=np.where(ig > 0, ig, 0.0), minlength=Q)
        return _div(L.total(term), sum_ideal)
    # Rndcg: nDCG averaged at the ranks where the ideal gain changes (1..P), plus at the
    # end of the ranking when more than one document follows the last positive ideal gain.
    nxt = np.concatenate([ig[1:], [0.0]])
    last = ipos == icnt[iq] - 1
    nxt = np.where(last, 0.0, nxt)
    change = (ig > 0) & (nxt != ig)                # ideal gain changes after this rank
    cq, cm = iq[change], ipos[change] + 1          # change point: first m ideal ranks
    mm = np.minimum(cm, L.nret[cq])
    dcg_at = np.where(mm > 0, dc[np.maximum(L.start[cq] + mm - 1, 0)] if dc.shape[0] else 0,
                      0.0)
    s = np.bincount(cq, weights=_div(dcg_at, ideal(cq, cm)), minlength=Q)
    n = np.bincount(cq, minlength=Q).astype(np.float64)
    extra = (P + 1 < L.nret) & (P > 0)
    s = s + extra * _div(full, ideal(qs, icnt))
    n = n + extra
    return np.where(L.R > 0, _div(s, n), 0.0)


class _AverageTerms:
    """The per-query terms of :func:`_term_value` with ties averaged (ties="average"): the
    expectations over orderings of tied scores of
    :class:`calipers.retrieval._measures._Ranking` (McSherry & Najork 2008). Gains are the
    relevance levels (no re-map); AP, R-precision and the reciprocal rank over the whole
    ranking only (``map_cut`` and ``RR@k`` are not among ties="average"'s measures)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.R = np.asarray(ctx.n_rel())
        self.nret = np.asarray(ctx.n_ret())
        self.relret = np.asarray(ctx.n_rel_ret())

    def hits(self, k):
        return np.asarray(self.ctx.hits(k))

    def ap_sum(self, k):
        assert k is None, k
        return np.asarray(self.ctx.average_precision_sum())

    def rprec_hits(self):
        return np.asarray(self.ctx.rprec_hits())

    def rr(self, k):
        assert k is None, k
        return np.asarray(self.ctx.reciprocal_rank())

    def dcg(self, params, k):
        assert params is None, params
        return np.asarray(self.ctx.dcg(k))

    def ideal(self, params, k):
        assert params is None, params
        return np.asarray(self.ctx.idcg(k))


def _average_ties_values(ta, measures, *, relevance_level):
    """The measures with an expectation over orderings of tied scores (ties="average")."""
    from ._measures import _Ranking

    ctx = _Ranking(ta.y_true, ta.y_score, ta.query_id, doc_id=ta.doc_id,
                   retrieved=ta.retrieved, ties="average", gain="linear",
                   relevance_level=relevance_level, num_segments=int(ta.queries.shape[0]))
    terms = _AverageTerms(ctx)
    res = {}
    for fam, k in measures:
        if fam in ("runid", "num_q"):
            continue
        if fam == "ndcg" and k is not None:
            raise ValueError("ties='average' uses the relevance as gain: no ndcg gain "
                             "parameters (use ties='trec_eval')")
        v = np.asarray(_term_value(fam, k, terms), dtype=np.float64)
        # trec_eval scores queries without relevant documents 0 and averages them in.
        res[_measure_name(fam, k)] = np.where(np.isfinite(v), v, 0.0)
    return res
