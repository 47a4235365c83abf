"""The join of a run with its qrels, as trec_eval 9.0.8 does it.

:func:`trec_arrays` joins a run with qrels: queries of the run missing from the
qrels are ignored; queries of the qrels missing from the run are left out, or kept
with nothing retrieved when ``complete_qrels=True`` (trec_eval ``-c``); unjudged
retrieved documents are non-relevant; judged documents that were not retrieved are
rows with ``retrieved=False`` (they count in the ideal ranking and in the number of
relevant documents). Scores are read as 32-bit floats when ``float32_scores=True``
(what trec_eval does).

Three joins: the block join of encoded qrels and runs (:func:`_block_ranking`, one
row sort per slice of queries), the packed join of integer docnos
(:func:`_grouped_join`) and the general join through argsorts of (query, doc) keys
(:func:`_sorted_join`, which names the lines of a duplicate). Each gives the ranked
relevance codes the measures read (:class:`_Ranked`, trec_eval's order: score
descending, then docno descending).
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .._kernels.segments import argsort_ints
from ._encode import (
    _LOW, _NONPOOL, _UNJUDGED, _as_str, _bits, _code_points, _codes, _float32_key, _hash_widths,
    _heads, _is_int, _mix64, _pair_keys, _run_lengths)
from ._io import Qrels, Run, TrecFormatError
from ._paths import _PATHS

__all__ = ["trec_arrays"]


def _blocks_of(obj):
    """The :class:`_Blocks` of qrels or a run, computed when it was built (None: none)."""
    return None if obj.ids is None else obj.ids.blocks


def _ranked_of(ta, paths=_PATHS):
    """The :class:`_Ranked` lists of evaluate's general join (one ranking sort)."""
    Q = int(ta.queries.shape[0])
    r, q, nret = _ranked_rows(ta, Q, paths)
    return _Ranked(Q, np.bincount(q, minlength=Q) if nret is None else nret,
                   code=ta.run_code[r], q=q, judgements=ta.judgements)


def _rows_of(names, want):
    """Row of each of ``want`` in ``names`` (sorted), ``len(names)`` where absent."""
    n = names.shape[0]
    if n == 0:
        return np.zeros(want.shape[0], dtype=np.int64)
    p = np.searchsorted(names, want)
    pc = np.minimum(p, n - 1)
    return np.where(names[pc] == want, pc, n)


def _block_ranking(qb, rb, complete_qrels, queries, paths=_PATHS):
    """Evaluate's join on encoded qrels and run (:class:`_Blocks`): ``(_Ranked, query names
    in output order, in_run)``, or None where the general join must run (no query; level
    counts too large; a docno twice in an evaluated query: the general join names the
    lines; integer docnos on one side only)."""
    if (qb.docno is None) != (rb.docno is None):
        return None
    jn, rn = qb.names, rb.names
    if queries is not None or jn.dtype.kind != rn.dtype.kind:
        # compared as strings; each side's names re-sorted in string order
        jn, rn = _as_str(jn), _as_str(rn)
        jo, ro = np.argsort(jn, kind="stable"), np.argsort(rn, kind="stable")
        jn, rn = jn[jo], rn[ro]
    else:
        jo = ro = None
    if queries is not None:
        sel = queries
    else:
        sel = jn if complete_qrels else np.intersect1d(jn, rn, assume_unique=True)
    out = _as_str(sel)
    so = None if out is sel else np.argsort(out, kind="stable")   # output in string order
    if so is not None:
        sel, out = sel[so], out[so]
    Q = out.shape[0]
    if Q == 0:
        return None
    jrows, rrows = _rows_of(jn, sel), _rows_of(rn, sel)
    if jo is not None:
        jrows = np.append(jo, jo.shape[0])[jrows]
        rrows = np.append(ro, ro.shape[0])[rrows]
    jq, rq = qb.names.shape[0], rb.names.shape[0]
    # names -> rows of keys (the last row: padding)
    if qb.block_of is not None:
        jrows = np.append(qb.block_of, jq)[jrows]
    if rb.block_of is not None:
        rrows = np.append(rb.block_of, rq)[rrows]
    top = max(int(np.append(qb.top, -1)[jrows].max()), 0)
    levels = np.zeros((Q, top + 1), dtype=np.int64)
    found = jrows < jq
    levels[found] = qb.levels[jrows[found], :top + 1]
    if Q * (top + 1) > 4 * int(levels.sum()) + 1_000_000:   # as _Lists.level_counts
        return None
    dtype = np.int8 if qb.top_code <= 127 else np.int32
    # joined in the qrels' block order (consecutive rows are plain copies), the codes
    # then put in output order
    by_block = np.argsort(jrows, kind="stable")
    jb, rbk = jrows[by_block], rrows[by_block]
    pairs = None if qb.docno is None else []
    code = _join_blocks(qb.keys, rb.keys, jb, rbk, dtype, qb.code_bits, pairs,
                        paths.join_slice)
    if code is None or (pairs and not _same_docnos(qb, rb, jb, rbk, pairs)):
        return None
    code = np.take(code, np.argsort(by_block), axis=1)
    nret = np.append(rb.cnt, 0)[rrows]
    return _Ranked(Q, nret, block=code, levels=levels), out, rrows < rq


def _first_if_range(rows):
    """``rows[0]`` when ``rows`` are consecutive integers, else None."""
    n = rows.shape[0]
    if n and int(rows[-1]) - int(rows[0]) == n - 1 and bool(np.all(np.diff(rows) == 1)):
        return int(rows[0])
    return None


def _join_blocks(jkeys, rkeys, jrows, rrows, dtype, code_bits=_LOW, pairs=None,
                 join_slice=_PATHS.join_slice):
    """trec_eval's relevance code of every ranked run row, ``(longest list, queries)``
    (rank-major; -1 where not judged, and past each list's end): per slice of queries, the
    rows ``jrows`` of the judgement keys and ``rrows`` of the run keys side by side, one
    row sort, and each judged document's two neighbouring keys. None when a query has a
    docno twice on one side (or two docnos with one hashed key).

    ``code_bits``: the judgements' payload bits that hold the code; ``pairs`` (a list):
    receives, per slice, each matched pair's ``(query, rank, judgement's column in its
    block)`` (the column: the payload's bits above the code). ``join_slice``: rows of the
    (queries x columns) key array sorted at a time."""
    Q, A, L = jrows.shape[0], jkeys.shape[1], rkeys.shape[1]
    W = A + L
    code = np.full((L, Q), _NONPOOL, dtype=dtype)
    if A == 0 or L == 0:
        return code
    flat = code.reshape(-1)
    low = (1 << _LOW) - 1
    step = max(1, join_slice // W)
    P = np.empty((min(step, Q), W), dtype=np.int64)
    firsts = _first_if_range(jrows), _first_if_range(rrows)
    for a in range(0, Q, step):
        b = min(a + step, Q)
        p = P[:b - a]
        for keys, rows, first, cols in ((jkeys, jrows, firsts[0], slice(0, A)),
                                        (rkeys, rrows, firsts[1], slice(A, W))):
            if first is None:
                np.take(keys, rows[a:b], axis=0, out=p[:, cols], mode="clip")
            else:       # consecutive rows: a plain copy (several times faster)
                p[:, cols] = keys[first + a:first + b]
        p.sort(axis=1)
        x = p[:, 1:] ^ p[:, :-1]
        m = np.flatnonzero(x < 1 << (_LOW + 1))     # neighbours with one docno
        row = m // (W - 1)
        f = m + row                                 # the judgement's key in p
        pf = p.reshape(-1)
        jk, rk = pf[f], pf[f + 1]
        if m.shape[0] and int((jk ^ rk).min()) < 1 << _LOW:    # both on one side
            return None
        row += a
        rk &= low
        jk &= low
        if pairs is not None:
            pairs.append((row.copy(), rk.copy(), jk >> code_bits))
            jk &= (1 << code_bits) - 1
        rk *= Q
        row += rk                                   # rank * Q + query
        jk -= 2
        flat[row] = jk
    return code


# Matched pairs whose docno strings are compared at a time (small temporaries).
_CHECK_SLICE = 1 << 16


def _same_docnos(qb, rb, jrows, rrows, pairs):
    """Whether every pair the block join matched on hashed keys (``pairs`` of
    :func:`_join_blocks`, queries ``jrows``/``rrows`` of the qrels' and the run's blocks)
    has equal docno strings (else a shared key of two strings: a collision)."""
    jw, rw = qb.docno.shape[1], rb.docno.shape[1]
    jd, rd = qb.docno.reshape(-1), rb.docno.reshape(-1)
    if jd.dtype.kind != rd.dtype.kind:      # bytes on one side only: compare code points
        jd, rd = _code_points(jd), _code_points(rd)
    for q, rank, col in pairs:
        for a in range(0, q.shape[0], _CHECK_SLICE):
            qs = q[a:a + _CHECK_SLICE]
            j = jrows[qs] * jw + col[a:a + _CHECK_SLICE]
            r = rrows[qs] * rw + rank[a:a + _CHECK_SLICE]
            if not np.array_equal(jd[j], rd[r]):
                return False
    return True


@dataclass(frozen=True)
class TrecArrays:
    """Flat rows for :class:`calipers.retrieval._measures._Ranking` (one per judged or retrieved doc)."""

    query_id: np.ndarray   # int64 codes 0..Q-1
    queries: np.ndarray    # str (Q,) query names, sorted
    y_true: np.ndarray     # int64 relevance (0 for unjudged); None in evaluate's lean join
    y_score: np.ndarray    # float32/float64 score (0 where not retrieved)
    doc_id: np.ndarray     # int64: docno rank in string order (ties: larger first), or the
                           # integer docno (see doc_id_is_string_rank)
    retrieved: np.ndarray  # bool
    in_run: np.ndarray     # bool (Q,): the query appears in the run
    judged: np.ndarray     # bool: the row's document is in the qrels of its query (None:
                           # lean join)
    # doc_id is the docno's rank in string order (else: integer docnos themselves, whose
    # string order is found for tied scores only)
    doc_id_is_string_rank: bool = True
    # hashed string docnos: (docnos of the retrieved rows, of the judged rows not
    # retrieved), in row order; their string order is found for tied scores only
    doc_str: Any = None
    # when the retrieved rows come first (trec_arrays): trec_eval's code of each (its
    # relevance, -1 not judged, -2 judged negative), and (query, relevance) of every
    # judgement with relevance >= 0 (trec_arrays always sets both)
    run_code: Any = None
    judgements: Any = None
    # _blocks of the retrieved rows' query codes, when the join computed them
    run_blocks: Any = None


def _every(mask, n):
    """A row mask, ``None`` meaning every one of the ``n`` rows."""
    return np.ones(n, bool) if mask is None else mask


def _keep(a, mask):
    return a if mask is None else a[mask]


def _pair_hash(q, dhash):
    """64-bit key of (query code, docno hash) pairs (equal pairs, equal keys)."""
    h = dhash.view(np.uint64) ^ ((q.astype(np.uint64) + np.uint64(1)) *
                                 np.uint64(0x9E3779B97F4A7C15))
    return _mix64(h).view(np.int64)


def _no_duplicates(sorted_keys, order, rows, qid, docno, where, what, strings=None,
                   keys=None):
    """Raise naming both rows (1-based) when two rows share a (query, doc) key.

    ``rows``: mask of the input rows the keys come from.

    ``strings``: ``(query codes, docno strings)`` when the keys are hashes: a shared key
    of different pairs is a collision, not a duplicate.
    """
    dup = np.nonzero(sorted_keys[1:] == sorted_keys[:-1])[0]
    if dup.shape[0] and strings is not None:
        a, b = order[dup], order[dup + 1]
        if not (np.array_equal(strings[0][a], strings[0][b]) and
                np.array_equal(strings[1][a], strings[1][b])):
            raise _HashCollision
    if dup.shape[0] and keys is not None:     # name the first duplicate in row order
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        dup = np.nonzero(sorted_keys[1:] == sorted_keys[:-1])[0]
    if dup.shape[0]:
        rows = np.nonzero(rows)[0]     # kept-row mask -> row numbers (only on this path)
        i, j = sorted((int(rows[order[dup[0]]]), int(rows[order[dup[0] + 1]])))
        raise TrecFormatError(f"{where}, line {j + 1}: duplicate {what} for query {qid[j]!s} "
                              f"document {docno[j]!s} (first on line {i + 1})")


def _dense_span(a):
    """``(lowest, span)`` of integer ids when a table of ``span`` entries is cheap, else None."""
    if not (a.shape[0] and _is_int(a)):
        return None
    lo, hi = int(a.min()), int(a.max())
    return (lo, hi - lo + 1) if hi - lo < 4 * a.shape[0] + 1_000_000 else None


def _unique(a):
    d = _dense_span(a)
    if d is not None:     # query codes: a count per code, no sort
        return np.nonzero(np.bincount(a - d[0], minlength=d[1]))[0] + d[0]
    if a.shape[0] and _is_int(a) and np.all(a[1:] >= a[:-1]):   # grouped run: no sort
        return a[np.concatenate([[True], a[1:] != a[:-1]])]
    return np.unique(a)


class _HashCollision(Exception):
    """Two different (query, docno) pairs share a 64-bit key: redo the join exactly."""


def _cached(obj, a, which):
    """``obj.ids[which]`` (computed when ``obj`` was built) when it is for ``a``, else computed."""
    own = obj.qid if which == 0 else obj.docno
    got = obj.ids[which] if obj.ids is not None and a is own else None
    if got is not None:
        return got
    return _heads(a) if which == 0 else _hash_widths(a)[0]


def trec_arrays(qrels: Qrels, run: Run, *, complete_qrels: bool = False,
                float32_scores: bool = True, queries: Sequence[str] | None = None,
                hash_docs: bool = False) -> TrecArrays:
    """Join a run with its qrels as trec_eval does (see module docstring).

    ``queries`` (sorted str array) overrides the query set (used to compare two
    runs on the same queries); queries without run rows then score 0. Integer
    ids on both sides are joined as integers (the same pairs as their strings).
    ``hash_docs``: join string docnos on 64-bit hashes (checked: matched and duplicate
    pairs are compared as strings; a collision redoes the join on exact codes); the
    docnos' string order is then found only for rows with tied scores.
    """
    return _join(qrels, run, complete_qrels, float32_scores, queries, hash_docs, False)


def _join(qrels, run, complete_qrels, float32_scores, queries, hash_docs, lean, paths=_PATHS):
    """:func:`trec_arrays`; ``lean``: the retrieved rows only (see :func:`_trec_arrays`)."""
    if hash_docs:
        try:
            return _trec_arrays(qrels, run, complete_qrels, float32_scores, queries, True,
                                lean=lean, paths=paths)
        except _HashCollision:   # pragma: no cover - about 1e-7 at 10^6 rows
            pass
    return _trec_arrays(qrels, run, complete_qrels, float32_scores, queries, False, lean=lean,
                        paths=paths)


def _trec_arrays(qrels, run, complete_qrels, float32_scores, queries, hash_docs, *,
                 lean=False, paths=_PATHS):
    """The join. ``lean`` (evaluate's trec_eval measures, which read the retrieved rows,
    ``run_code`` and ``judgements`` only; see :class:`_Lists`): no rows for the judged
    documents that were not retrieved, and ``y_true`` and ``judged`` are None."""
    qq, rqid = qrels.qid, run.qid
    names: Any = None
    # Query ids are handled per run of equal consecutive ids (query ids come grouped): a
    # few values to sort and look up, then one gather per row.
    hj, ij = _cached(qrels, qq, 0)
    hr, ir = _cached(run, rqid, 0)
    if queries is not None or not (_is_int(hj) and _is_int(hr)):
        names, hj, hr = _codes(_as_str(hj), _as_str(hr))    # ranks in string order
    jdoc, rdoc = qrels.docno, run.docno
    str_docs = not (_is_int(jdoc) and _is_int(rdoc))
    jd_s = rd_s = None
    if str_docs and hash_docs:
        jd_s, rd_s = _as_str(jdoc), _as_str(rdoc)
        jdoc = _cached(qrels, jd_s, 1).view(np.int64)
        rdoc = _cached(run, rd_s, 1).view(np.int64)
    elif str_docs:
        _, jdoc, rdoc = _codes(jdoc.astype(str), rdoc.astype(str))   # ranks in string order
    qrel_queries, run_queries = _unique(hj), _unique(hr)
    if queries is None:
        sel = qrel_queries if complete_qrels else np.intersect1d(qrel_queries, run_queries)
    else:
        want = np.unique(np.asarray(queries).astype(str))
        # queries of neither file get codes past the known names (no rows, score 0)
        p = np.searchsorted(names, want)
        if names.shape[0]:
            known = (p < names.shape[0]) & (names[np.minimum(p, names.shape[0] - 1)] == want)
        else:
            known = np.zeros(want.shape[0], bool)
        names = np.concatenate([names, want[~known]])
        codes_w = np.where(known, p, names.shape[0] - (~known).sum() +
                           np.cumsum(~known) - 1)
        sel = np.sort(codes_w)

    # Output order: query ids sorted as strings (as trec_eval prints them).
    sel_str = sel.astype(str) if names is None else names[sel]
    so = np.argsort(sel_str, kind="stable")
    rank = np.empty(sel.shape[0], dtype=np.int64)
    rank[so] = np.arange(sel.shape[0])
    out_queries = sel_str[so]

    def position(h, starts, n):
        """``(output code of each row's query (0 where not selected), selected rows or None
        for all)`` from the query id ``h`` of each run of rows and the runs' first rows."""
        p = np.searchsorted(sel, h)
        pc = np.minimum(p, max(sel.shape[0] - 1, 0))
        if not sel.shape[0]:
            return np.zeros(n, np.int64), np.zeros(n, bool)
        keep = (p < sel.shape[0]) & (sel[pc] == h)
        lens = _run_lengths(starts, n)
        return np.repeat(rank[pc], lens), None if keep.all() else np.repeat(keep, lens)

    rpos, keep_run = position(hr, ir, rqid.shape[0])
    jpos, keep_q = position(hj, ij, qq.shape[0])
    rq, rd, rs = _keep(rpos, keep_run), _keep(rdoc, keep_run), _keep(run.score, keep_run)
    jq, jd, jr = _keep(jpos, keep_q), _keep(jdoc, keep_q), _keep(qrels.rel, keep_q)
    if jd_s is not None:
        jd_s, rd_s = _keep(jd_s, keep_q), _keep(rd_s, keep_run)
    # Match run rows to judgements by (query, doc) through one sorted integer key array.
    fast = _grouped_join(jq, jd, rq, rd, sel.shape[0], paths) if jd_s is None else None
    run_blocks = None
    if fast is not None:
        rrow, jrow, run_blocks = fast
        nr, jrel = rq.shape[0], jr[jrow]
        # 32-bit codes when the levels fit (half the memory traffic of every pass over them)
        small = jr.shape[0] == 0 or (int(jr.min()) >= -2 ** 31 and int(jr.max()) < 2 ** 31)
        run_code = np.full(nr, _NONPOOL, dtype=np.int32 if small else np.int64)
        run_code[rrow] = np.where(jrel >= 0, jrel, _UNJUDGED)
        if not lean:
            hit = np.zeros(nr, dtype=bool)
            hit[rrow] = True
            rel_run = np.zeros(nr, dtype=np.int64)
            rel_run[rrow] = jrel
            judged_hit = np.zeros(jq.shape[0], dtype=bool)
            judged_hit[jrow] = True
    else:
        hit, rel_run, judged_hit = _sorted_join(qrels, run, _every(keep_q, qq.shape[0]),
                                                _every(keep_run, rqid.shape[0]), jq, jd, jr, rq,
                                                rd, jd_s, rd_s)
        run_code = np.where(hit, np.where(rel_run >= 0, rel_run, _UNJUDGED), _NONPOOL)
    in_run = np.zeros(sel.shape[0], bool)
    in_run[rank[np.isin(sel, run_queries)]] = True
    pos_rel = jr >= 0
    judgements = (jq, jr) if pos_rel.all() else (jq[pos_rel], jr[pos_rel])
    sdt = np.float32 if float32_scores else np.float64
    if lean:
        return TrecArrays(rq.astype(np.int64, copy=False), out_queries, None, rs.astype(sdt),
                          rd.astype(np.int64, copy=False), np.ones(rq.shape[0], bool), in_run,
                          None, str_docs and jd_s is None,
                          None if jd_s is None else (rd_s, jd_s[:0]), run_code, judgements,
                          run_blocks)
    miss = ~judged_hit                                  # judged, not retrieved
    nmiss = int(miss.sum())
    score = np.empty(rq.shape[0] + nmiss, dtype=sdt)
    score[:rq.shape[0]] = rs
    score[rq.shape[0]:] = 0
    y = np.concatenate([rel_run, jr[miss]])
    retrieved = np.zeros(rq.shape[0] + nmiss, bool)
    retrieved[:rq.shape[0]] = True
    codes = np.concatenate([rq, jq[miss]]).astype(np.int64, copy=False)
    # string docnos: their rank in string order; integer docnos: themselves
    doc_id = np.concatenate([rd, jd[miss]]).astype(np.int64, copy=False)
    judged = np.concatenate([hit, np.ones(nmiss, bool)])
    return TrecArrays(codes, out_queries, y, score, doc_id, retrieved, in_run, judged,
                      str_docs and jd_s is None,
                      None if jd_s is None else (rd_s, jd_s[miss]), run_code, judgements,
                      run_blocks)


def _blocks(q, Q):
    """Rows of each query as one block: ``(first row of each query's block (Q,), largest
    block, permutation, rows per query (Q,), grouped query codes)``; the permutation (a
    stable sort by query, cheap for a few sorted runs) is None when the rows are grouped by
    query already. Row ``i`` of the grouped rows is at offset ``i - first[q]`` of its
    block."""
    perm = None
    if q.shape[0] == 0:
        z = np.zeros(Q, dtype=np.int64)
        return z, 0, None, z, q
    starts = np.concatenate([[0], np.flatnonzero(q[1:] != q[:-1]) + 1])
    if int(np.bincount(q[starts], minlength=Q).max()) > 1:   # a query in two places
        perm = argsort_ints(q)
        q = q[perm]
        starts = np.concatenate([[0], np.flatnonzero(q[1:] != q[:-1]) + 1])
    # block sizes from the block starts: no count over every row
    cnt = np.zeros(Q, dtype=np.int64)
    cnt[q[starts]] = np.diff(np.append(starts, q.shape[0]))
    first = np.zeros(Q, dtype=np.int64)
    first[q[starts]] = starts
    return first, int(cnt.max()), perm, cnt, q


def _put_rows(P, col, key, blocks):
    """Write one key per row (rows in input order, :func:`_blocks` of their query codes)
    into columns ``col ..`` of ``P`` (queries x columns): query ``q``'s rows, grouped, from
    column ``col`` of row ``q`` on."""
    first, L, perm, cnt, q = blocks
    Q, W = P.shape
    if perm is not None:
        key = key[perm]
    if Q and int(cnt.min()) == L:
        # every block has L rows: block b is rows b*L .. b*L + L - 1, copied whole
        np.take(key.reshape(Q, L), first // L, axis=0, out=P[:, col:col + L], mode="clip")
    else:
        # flat position of each block's first row, per query (Q values), then one gather:
        # no row-sized product or second gather
        base = np.arange(Q, dtype=np.int64) * W + col - first
        dest = base[q]
        dest += np.arange(key.shape[0], dtype=np.int64)
        P.reshape(-1)[dest] = key


def _grouped_join(jq, jd, rq, rd, Q, paths=_PATHS):
    """The join of :func:`_sorted_join` for integer docnos, as one ``np.sort`` of packed
    ``(query, doc, side, offset in the query's block)`` keys (a sort of keys alone is
    several times faster than an ``argsort``): ``(run rows, their qrels rows)`` of the
    matched pairs and the run's :func:`_blocks`. None when the keys do not fit in 63 bits
    or a (query, doc) pair repeats (the general join then reports it)."""
    if not (_is_int(jd) and _is_int(rd)) or Q == 0:
        return None
    nj, nr = jd.shape[0], rd.shape[0]
    if nj == 0 or nr == 0:
        return None
    lo = min(int(jd.min()), int(rd.min()))
    span = max(int(jd.max()), int(rd.max())) - lo
    bj, br = _blocks(jq, Q), _blocks(rq, Q)
    bo = _bits(max(bj[1], br[1]) - 1)
    bd = _bits(span)
    mask = (1 << bo) - 1
    nb = _bits(max(nj, nr) - 1)
    W = bj[1] + br[1] + 1
    if paths.row_sort and Q * W <= 2 * (nj + nr) + 1024 and \
            _bits((1 << bd) + W) + 1 + nb <= min(paths.pack_bits, 63):
        # One row per query: its judgements, its run rows, then padding (at least one);
        # keys (doc, side, row number), so a matched pair names its two rows. Padding keys
        # are past every doc, a different one per column: never matched, never equal.
        P = np.empty((Q, W), dtype=np.int64)
        pad = ((1 << bd) + np.arange(W, dtype=np.int64)) << (1 + nb)
        if int(br[3].min()) == br[1]:     # the run's columns all filled
            P[:, :bj[1]] = pad[:bj[1]]
            P[:, -1] = pad[-1]
        else:
            P[...] = pad
        for d, blocks, side, col in ((jd, bj, 0, 0), (rd, br, 1, bj[1])):
            key = np.subtract(d, lo, dtype=np.int64)      # a fresh array
            key <<= 1 + nb
            key += np.arange(side << nb, (side << nb) + d.shape[0], dtype=np.int64)
            _put_rows(P, col, key, blocks)
        P.sort(axis=1)
        # neighbours in the flat order (each row ends with padding): the same doc and side
        # is a pair twice; the same doc is a judged row followed by its run row
        # (in slices of the array: small temporaries that stay in cache)
        Pf = P.reshape(-1)
        found = []
        for a in range(0, Pf.shape[0] - 1, paths.slice):
            b = min(a + paths.slice, Pf.shape[0] - 1)
            x = Pf[a + 1:b + 1] ^ Pf[a:b]
            m = np.flatnonzero(x < 1 << (nb + 1))
            if m.shape[0] and int(x[m].min()) < 1 << nb:
                return None
            found.append(m + a)
        m = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        low = (1 << nb) - 1
        return Pf[m + 1] & low, Pf[m] & low, br
    if _bits(Q - 1) + bd + 1 + bo > min(paths.pack_bits, 63):
        return None
    # key = q << (bd + 1 + bo) | (doc - lo) << (1 + bo) | side << bo | offset, as int64
    # arithmetic: q's part and -first[q] (the offset's base) from one table per side
    keys = np.empty(nj + nr, dtype=np.int64)
    qs = np.arange(Q, dtype=np.int64) << (bd + 1 + bo)
    for part, (q, d, (first, _, perm, _, _)), side in (
            (keys[:nj], (jq, jd, bj), 0), (keys[nj:], (rq, rd, br), 1)):
        if perm is not None:
            q, d = q[perm], d[perm]
        # int64 arithmetic wraps: the constant modulo 2**64 (the keys themselves fit)
        c = ((side << bo) - (lo << (1 + bo)) + 2 ** 63) % 2 ** 64 - 2 ** 63
        np.take(qs - first + c, q, out=part)
        part += d.astype(np.int64, copy=False) << (1 + bo)
        part += np.arange(part.shape[0], dtype=np.int64)
    keys.sort()
    # neighbours' differing bits: none above the offset bits is the same (query, doc,
    # side) twice; the side bit alone is a judged row followed by its run row
    x = keys[1:] ^ keys[:-1]
    if x.shape[0] and int(x.min()) < 1 << bo:     # a pair twice on one side
        return None
    m = np.flatnonzero(x < 1 << (bo + 1))
    km = keys[m]
    q = km >> (bd + 1 + bo)
    jrow = bj[0][q] + (km & mask)
    rrow = br[0][q] + (keys[1:][m] & mask)
    if bj[2] is not None:
        jrow = bj[2][jrow]
    if br[2] is not None:
        rrow = br[2][rrow]
    return rrow, jrow, br


def _sorted_join(qrels, run, keep_q, keep_run, jq, jd, jr, rq, rd, jd_s, rd_s):
    """Run rows matched to judgements through argsorts of (query, doc) keys: ``(hit,
    relevance of each run row (0 where not judged), judged_hit)``; raises naming the
    lines of a duplicate (query, doc) pair."""
    if jd_s is not None:
        jkey, rkey = _pair_hash(jq, jd), _pair_hash(rq, rd)
        jstr, rstr = (jq, jd_s), (rq, rd_s)
    else:
        jkey, rkey = _pair_keys(jq, jd, rq, rd)
        jstr = rstr = None
    # (the unstable sort is the fast one; duplicates are reported from a stable one)
    jo = np.argsort(jkey)
    jks = jkey[jo]
    _no_duplicates(jks, jo, keep_q, qrels.qid, qrels.docno, qrels.path or "qrels",
                   "judgement", jstr, jkey)
    ro = np.argsort(rkey)
    rks = rkey[ro]
    _no_duplicates(rks, ro, keep_run, run.qid, run.docno,
                   run.path or "run", "document", rstr, rkey)
    pos = np.empty(rkey.shape[0], dtype=np.int64)
    pos[ro] = np.searchsorted(jks, rks)        # sorted needles: a near-linear merge
    posc = np.minimum(pos, max(jks.shape[0] - 1, 0))
    hit = (pos < jks.shape[0]) & (jks[posc] == rkey) if jks.shape[0] else \
        np.zeros(rkey.shape[0], dtype=bool)
    if jd_s is not None:       # hashed keys: the matched pairs must be equal strings
        mj = jo[posc[hit]]
        if not (np.array_equal(rq[hit], jq[mj]) and np.array_equal(rd_s[hit], jd_s[mj])):
            raise _HashCollision
    rel_run = np.where(hit, jr[jo][posc] if jks.shape[0] else 0, 0).astype(np.int64)
    judged_hit = np.zeros(jks.shape[0], dtype=bool)
    judged_hit[jo[posc[hit]]] = True
    return hit, rel_run, judged_hit


def _ranked_rows(ta, Q, paths=_PATHS):
    """Retrieved rows in trec_eval's order: query, score descending, docno descending;
    ``(rows, their query codes, rows per query or None)``.

    One ``np.sort`` of packed (query, float32 score, offset in the query's block) keys
    when they fit in 64 bits (else an ``argsort`` of (query, score)); docnos (string
    order) only order the rows whose query and score tie.
    """
    nr = int(ta.run_code.shape[0])     # trec_arrays puts the retrieved rows first
    r = np.arange(nr)
    q, s = ta.query_id[:nr], ta.y_score[:nr]     # views, no copies
    if s.dtype != np.float32 or (nr and int(q.max()) >= 2 ** 31):
        o = np.lexsort((-_doc_rank(ta, r), -s, q))
        return r[o], q[o], None
    if nr == 0:
        return r, q, None
    blocks = ta.run_blocks if ta.run_blocks is not None else _blocks(q, Q)
    first, big, perm, cnt, _ = blocks
    bo = _bits(big - 1)
    nb = _bits(nr - 1)
    u = np.uint64
    if paths.row_sort and Q * big <= 2 * nr + 1024 and 33 + nb <= min(paths.pack_bits, 63):
        # one row per query of (score, row number) keys; padding keys past every score
        P = np.empty((Q, big), dtype=np.int64)
        full = Q * big == nr
        if not full:
            P[...] = ((1 << 32) + np.arange(big, dtype=np.int64)) << nb
        key = _float32_key(s)
        key <<= nb
        key += np.arange(nr, dtype=np.int64)
        _put_rows(P, 0, key, blocks)
        P.sort(axis=1)
        x = P[:, 1:] ^ P[:, :-1]
        has_tie = x.size > 0 and int(x.min()) < 1 << nb
        O = P & ((1 << nb) - 1)
        o = O.reshape(-1) if full else O[np.arange(big) < cnt[:, None]]
        qs = None           # the rows' queries follow from cnt (_Lists.q)
        if has_tie:
            # neighbours that differ only in the row bits tie on (query, score): their
            # ranked positions (a row's entries are a prefix of it), then (query, score)
            start = np.cumsum(cnt) - cnt
            tp = np.flatnonzero(x.reshape(-1) < 1 << nb)
            tq = tp // (big - 1)
            a = tp + tq * (1 - big) + start[tq]
            idx = np.unique(np.concatenate([a, a + 1]))
            qi = np.searchsorted(start, idx, side="right") - 1
            k = (P.reshape(-1)[idx + (qi * big - start[qi])] >> nb) | (qi << 32)
            sub = np.lexsort((-_doc_rank(ta, r[o[idx]]), k))
            o[idx] = o[idx][sub]
        return o, qs, cnt
    elif _bits(Q - 1) + 32 + bo <= min(paths.pack_bits, 63):
        if perm is not None:
            q, s = q[perm], s[perm]
        # int64 keys (query, score, offset in the block); offset = row - first[q], the
        # query's part from one table
        key = np.take((np.arange(Q, dtype=np.int64) << (32 + bo)) - first, q)
        key += _float32_key(s) << bo
        key += np.arange(nr, dtype=np.int64)
        key.sort()
        qs = key >> (32 + bo)
        o = first[qs] + (key & ((1 << bo) - 1))
        if perm is not None:
            o = perm[o]
        # neighbours that differ only in the offset bits tie on (query, score)
        x = key[1:] ^ key[:-1]
        has_tie = x.shape[0] > 0 and int(x.min()) < 1 << bo
        if has_tie:
            k = key >> bo
    else:
        key = (q.astype(u) << u(32)) | _float32_key(s).astype(u)
        o = np.argsort(key)      # no need for stability: tied keys are ordered by docno below
        k = key[o]
        qs = q[o]
        has_tie = True
    tie = k[1:] == k[:-1] if has_tie else None
    if tie is not None and tie.any():
        in_tie = np.zeros(o.shape[0], bool)
        in_tie[1:] |= tie
        in_tie[:-1] |= tie
        idx = np.nonzero(in_tie)[0]
        sub = np.lexsort((-_doc_rank(ta, r[o[idx]]), k[idx]))
        o[idx] = o[idx][sub]
    return o, qs, cnt


def _doc_rank(ta, rows):
    """Rank of the rows' docnos in string order (trec_eval compares docnos with strcmp)."""
    if ta.doc_str is not None:
        a, b = ta.doc_str
        n = a.shape[0]
        strs = np.where(rows < n, a[np.minimum(rows, max(n - 1, 0))] if n else "",
                        b[np.maximum(rows - n, 0)] if b.shape[0] else "")
        return np.unique(strs, return_inverse=True)[1].reshape(-1).astype(np.int64)
    d = ta.doc_id[rows]
    if ta.doc_id_is_string_rank:
        return d
    return np.unique(d.astype(str), return_inverse=True)[1].reshape(-1).astype(np.int64)


class _Ranked(NamedTuple):
    """trec_eval's ranked relevance codes of every query: what the measures read.

    A code is the row's judged relevance (>= 0), -1 for a document not in the qrels, -2
    for one judged with a negative relevance. Either flat (``code``, queries contiguous in
    rank order; evaluate's general join) or one ``(longest list, Q)`` block, rank-major
    (the block join; -1 past each list's end).
    """

    Q: int
    nret: np.ndarray           # retrieved rows per query
    code: Any = None           # flat codes (None: read from block)
    q: Any = None              # query of each flat code, or None
    block: Any = None          # (longest list, Q): rank-major
    levels: Any = None         # (Q, levels 0 .. highest) judgements per level, or None
    judgements: Any = None     # (query, relevance) of each judgement with relevance >= 0

    def codes(self):
        """The flat codes (from the block: each list without its padding)."""
        if self.code is not None:
            return self.code
        b = self.block.T.astype(np.int32)
        return b.reshape(-1) if int(self.nret.min()) == b.shape[1] else \
            b[np.arange(b.shape[1]) < self.nret[:, None]]
