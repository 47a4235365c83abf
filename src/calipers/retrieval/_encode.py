"""Query and document ids encoded once, when qrels or a run is built.

Integer codes of id arrays (:func:`_codes`), 64-bit hashes of string ids
(:func:`_str_hash`, :func:`_hash_widths`) and their compact byte form, the runs of
equal consecutive query ids (:func:`_heads`), and each query's rows as one padded row
of join keys (:class:`_Blocks`): what :func:`_id_codes` computes for a
:class:`~calipers.retrieval._io.Qrels` or :class:`~calipers.retrieval._io.Run`, so
that evaluating it again repeats only the join and the measures. Also trec_eval's
relevance codes of joined rows (:data:`_NONPOOL`, :data:`_UNJUDGED`) and the float32
sort key of scores (trec_eval's rank order).
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import numpy as np

from .._kernels.segments import argsort_ints


def _codes(*arrays):
    """Integer codes of id arrays, shared (rank in sorted order): ``(distinct, codes...)``.

    Joins and duplicate checks work on ``query code * n + doc code``: exact, where
    concatenated strings are not (NumPy drops trailing NULs, so a separator can vanish and
    query "1" + doc "23" would meet query "12" + doc "3").
    """
    sizes = [a.shape[0] for a in arrays]
    allv = np.concatenate(arrays)
    if allv.dtype.kind == "U":
        u, inv = _string_codes(allv)
    else:
        u, inv = np.unique(allv, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    return (u, *np.split(inv, np.cumsum(sizes)[:-1]))


def _string_codes(a):
    """``np.unique(a, return_inverse=True)`` for strings, about twice as fast for ASCII ids
    (sorted as bytes: the same order, and C's strcmp order that trec_eval uses)."""
    try:
        b = a.astype("S")
    except UnicodeEncodeError:
        return np.unique(a, return_inverse=True)
    u, inv = np.unique(b, return_inverse=True)
    return u.astype(a.dtype), inv


def _mix64(h):
    """splitmix64's finaliser: spreads every input bit over the 64-bit word."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def _longest(a):
    """Code points of the longest string of a ``U`` array (its width unless every string
    is shorter: arrays from ``astype(str)`` of integers are 21 wide)."""
    w = a.dtype.itemsize // 4
    if a.shape[0] == 0 or w == 0:
        return 0
    if _code_point_rows(a, w)[:, w - 1].any():
        return w
    # in slices: no row-sized array of lengths
    return max(int(np.strings.str_len(a[i:i + _ROW_SLICE]).max())
               for i in range(0, a.shape[0], _ROW_SLICE))


def _code_point_rows(a, width, dtype=np.uint32, offset=0):
    """The first ``width`` code points of each string of a ``U`` array as a ``(rows,
    width)`` view of ``dtype`` items (``offset``: bytes into each code point)."""
    a = np.ascontiguousarray(a)
    return np.ndarray(shape=(a.shape[0], width), dtype=dtype, buffer=a, offset=offset,
                      strides=(a.itemsize, 4))


def _narrow(a, width):
    """The first ``width`` code points of each string of a contiguous ``U`` array, as a
    view (no copy; the rest must be NUL padding): cheaper to compare than the full width."""
    width = max(width, 1)
    if width >= a.dtype.itemsize // 4:
        return a
    return np.ndarray(shape=a.shape, dtype=f"U{width}", buffer=a, strides=(a.itemsize,))


def _compact(a, width):
    """The strings of a contiguous ``U`` array (``width``: :func:`_longest`) in the form
    that compares fastest, contiguous: bytes, one per code point, when every code point is
    below 256 (an exact encoding); else the first ``width`` code points."""
    n, w = a.shape[0], a.dtype.itemsize // 4
    width = max(width, 1)
    if n and w:
        cps = _code_point_rows(a, width)
        low = _code_point_rows(a, width, np.uint8, 0 if sys.byteorder == "little" else 3)
        out = np.empty((n, width), dtype=np.uint8)
        for i in range(0, n, _ROW_SLICE):     # checked and copied slice by slice
            if int(cps[i:i + _ROW_SLICE].max()) >= 256:
                break
            out[i:i + _ROW_SLICE] = low[i:i + _ROW_SLICE]
        else:
            return out.view(f"S{width}").reshape(n)
    return np.ascontiguousarray(_narrow(a, width))


def _code_points(a):
    """A :func:`_compact` array as code points (``U``): bytes decoded as Latin-1."""
    if a.dtype.kind == "U":
        return a
    n, w = a.shape[0], a.dtype.itemsize
    return np.ascontiguousarray(a).view(np.uint8).reshape(n, w).astype(np.uint32) \
        .view(f"U{w}").reshape(n)


def _str_hash(a, width=None):
    """64-bit hash of each string of a ``U`` array from its first ``width`` code points
    (the rest NUL padding; default :func:`_longest`): ``sum_j word_j * K_j`` over the
    64-bit words (two code points each), then mixed. NUL padding adds nothing, so widths
    agree. One slice of rows at a time: :func:`_hash_widths`."""
    a = np.ascontiguousarray(a)
    n, w = a.shape[0], a.dtype.itemsize // 4
    width = _longest(a) if width is None else min(width, w)
    h = np.zeros(n, dtype=np.uint64)
    if n and width:
        p = width // 2
        K = _mix64(np.arange(1, p + 2, dtype=np.uint64)) | np.uint64(1)
        # the rows' code points read two at a time as (possibly unaligned) 64-bit words
        words = np.ndarray(shape=(n, p), dtype=np.uint64, buffer=a.data, strides=(4 * w, 8))
        if p:
            np.matmul(words, K[:p], out=h)      # row by row; wraps modulo 2**64
        if width % 2:
            h += a.view(np.uint32).reshape(n, w)[:, width - 1] * K[p]
    return _mix64(h)


def _hash_widths(a):
    """``(hashes, longest)`` of a ``U`` array: each string's :func:`_str_hash` and the
    code points of the longest string, in one pass of slices (each hashed at its own
    longest width, the same hashes, while it is in cache).

    Equal strings get equal hashes; the joins check that the pairs they matched are equal
    strings (and fall back to exact string codes on a collision).
    """
    a = np.ascontiguousarray(a)
    n = a.shape[0]
    h = np.empty(n, dtype=np.uint64)
    longest = 0
    for i in range(0, n, _ROW_SLICE):
        part = a[i:i + _ROW_SLICE]
        width = _longest(part)
        h[i:i + _ROW_SLICE] = _str_hash(part, width)
        longest = max(longest, width)
    return h, longest


# Rows per slice of the row-wise passes of construction (string lengths, hashes, sort
# keys): small temporaries that stay in cache, no fresh row-sized arrays.
_ROW_SLICE = 1 << 16


def _heads(a):
    """Runs of equal consecutive ids: ``(first id of each run, first row of each run)``.

    Query ids come grouped in files and dicts, so this leaves a few distinct-ish strings
    to sort instead of every row's.
    """
    if a.shape[0] == 0:
        return a, np.zeros(0, dtype=np.int64)
    ch = np.empty(a.shape[0], dtype=bool)
    ch[0] = True
    np.not_equal(a[1:], a[:-1], out=ch[1:])
    starts = np.flatnonzero(ch)
    return a[starts], starts


def _run_lengths(starts, n):
    """Rows in each run of :func:`_heads` (``n`` rows in all)."""
    return np.diff(np.append(starts, n))


class _Ids(NamedTuple):
    """What qrels or a run computes once, when it is built (see :func:`_id_codes`)."""

    heads: Any       # _heads of the query ids
    doc_hash: Any    # docno hashes (None for integer docnos)
    blocks: Any      # the join-ready _Blocks, or None where they do not apply


def _id_codes(qid, docno, rel=None, score=None):
    """Ids factorized once, when qrels (``rel``) or a run (``score``) is built, and the
    rows encoded for evaluate's block join (:func:`_qrels_blocks`, :func:`_run_blocks`)."""
    qh = _heads(qid)
    dh = dn = None
    if not _is_int(docno):
        docno = np.ascontiguousarray(docno)
        dh, width = _hash_widths(docno)
        dn = _compact(docno, width)
    if rel is not None:
        blocks = _qrels_blocks(docno, rel, qh, dh, dn)
    elif score is not None:
        blocks = _run_blocks(docno, score, qh, dh, dn)
    else:
        blocks = None
    return _Ids(qh, dh, blocks)


def _bits(x):
    """Bits needed for the non-negative integer ``x``."""
    return int(x).bit_length()


def _as_str(a):
    """``a.astype(str)`` without the copy when it already holds strings."""
    return a if a.dtype.kind == "U" else a.astype(str)


def _is_int(a):
    return a.dtype.kind in "iu"


def _pair_keys(qa, da, qb, db):
    """Exact int64 keys of (query, doc) pairs of two tables, equal iff the pairs are equal."""
    if _is_int(qa) and _is_int(da) and _is_int(qb) and _is_int(db) and qa.shape[0] and \
            qb.shape[0]:
        lo_q = min(int(qa.min()), int(qb.min()))
        lo_d = min(int(da.min()), int(db.min()))
        span_q = max(int(qa.max()), int(qb.max())) - lo_q + 1
        span_d = max(int(da.max()), int(db.max())) - lo_d + 1
        if span_q * span_d < 2 ** 62:    # packed directly, no sort of the ids
            return ((qa - lo_q) * span_d + (da - lo_d), (qb - lo_q) * span_d + (db - lo_d))
    if _is_int(qa) != _is_int(qb):
        qa, qb = qa.astype(str), qb.astype(str)
    if _is_int(da) != _is_int(db):
        da, db = da.astype(str), db.astype(str)
    _, qca, qcb = _codes(qa, qb)
    ud, dca, dcb = _codes(da, db)
    nd = max(ud.shape[0], 1)
    return qca * nd + dca, qcb * nd + dcb


_NONPOOL, _UNJUDGED = -1, -2   # trec_eval's codes: not in the qrels; judged with rel < 0


def _float32_key(s):
    """int64 keys in ``0 .. 2**32 - 1`` whose ascending order is the float32 scores'
    descending order (-0.0 ties 0.0)."""
    i = (s + np.float32(0.0)).view(np.int32)
    # bits as signed integers, the magnitude bits flipped for negative floats: the same
    # order as the floats (four passes over 32-bit words)
    m = i >> 31
    m &= np.int32(0x7FFFFFFF)
    m ^= i
    return np.int64(2 ** 31 - 1) - m
# --------------------------------------------------------------------------
# qrels and runs encoded once, when built: padded blocks of join keys
# --------------------------------------------------------------------------

# A join key packs docno << (_LOW + 1) | side << _LOW | payload: side 0 for a judgement
# (payload: its relevance code + 2), 1 for a run row (payload: its rank). Sorting a query's
# judgement keys and run keys together puts a judged, retrieved document's two keys side by
# side, and the pair names the run row's rank and its relevance (two keys of one side with
# one docno: a duplicate). Integer docnos in 0 .. 2**_DOC_BITS - 1 are packed; padding
# "docnos" lie past them (the judgements' from _PAD_J, the run's from _PAD_R, one per
# column: never equal to another key). String docnos are packed as the top _DOC_BITS bits
# of their hash; a judgement's payload then also holds its column in the block (above the
# code's bits), so the join can name both rows of a pair and check that their strings are
# equal (a shared key of two strings, on one side or across: the general join instead).
_LOW = 20
_DOC_BITS = 41
_PAD_J = 1 << _DOC_BITS
_PAD_R = _PAD_J + (1 << 40)


class _Blocks(NamedTuple):
    """Qrels or a run as one row of join keys per query."""

    names: np.ndarray   # distinct query ids, sorted (numbers as numbers)
    cnt: np.ndarray     # rows of each query (per row of keys)
    keys: np.ndarray    # (queries + 1, longest list) int64; the last row (a query the
                        # object lacks) is padding only
    levels: Any = None  # qrels: judgements of each query per relevance level 0 .. highest
    top: Any = None     # qrels: each query's highest judged level >= 0 (-1: none)
    top_code: int = 0   # qrels: the highest relevance code
    block_of: Any = None    # row of keys of each name (None: the names' order)
    code_bits: int = _LOW   # qrels: the payload's bits that hold the code (+ 2)
    docno: Any = None   # string docnos (:func:`_compact`) at their keys' places (queries,
                        # longest list), to check the join's pairs (None: integer docnos)


class _Grouping(NamedTuple):
    """Rows grouped by query (:func:`_group`); a run is a run of rows of one query."""

    names: np.ndarray   # distinct query ids, sorted (numbers as numbers)
    blk: np.ndarray     # block of each run
    start: np.ndarray   # each run's first row
    ln: np.ndarray      # each run's length
    offset: np.ndarray  # each run's first column in its block
    cnt: np.ndarray     # rows per block
    block_of: Any = None    # block of each name (None: blocks in the names' order)


def _group(heads, n):
    """Rows grouped by query from :func:`_heads` (:class:`_Grouping`). A query whose rows
    lie in several runs gets them in row order."""
    h, starts = heads
    lens = _run_lengths(starts, n)
    names, inv = _string_codes(h) if h.dtype.kind == "U" else np.unique(h, return_inverse=True)
    inv = inv.reshape(-1)
    Q = names.shape[0]
    if Q == h.shape[0]:       # every query's rows in one run: blocks in row order
        block_of = None if np.array_equal(inv, np.arange(Q)) else np.argsort(inv)
        return _Grouping(names, np.arange(Q), starts, lens, np.zeros(Q, dtype=np.int64),
                         lens, block_of)
    cnt = np.bincount(inv, weights=lens, minlength=Q).astype(np.int64)
    o = argsort_ints(inv)     # the runs grouped by query, in row order within each
    before = np.cumsum(lens[o]) - lens[o]
    offset = np.empty(h.shape[0], dtype=np.int64)
    offset[o] = before - (np.cumsum(cnt) - cnt)[inv[o]]
    return _Grouping(names, inv, starts, lens, offset, cnt)


def _block_dest(grp, width, n):
    """Flat position of each of the ``n`` rows in its ``(blocks, width)`` block (see
    :func:`_to_block`); ``% width``: its column."""
    dest = np.repeat(grp.blk * width + grp.offset - grp.start, grp.ln)
    for a in range(0, n, _ROW_SLICE):
        dest[a:a + _ROW_SLICE] += np.arange(a, min(a + _ROW_SLICE, n), dtype=np.int64)
    return dest


def _to_block(key, grp, width, pad, out=None, dest=None):
    """Per-row ``key`` -> ``(blocks, width)`` (block ``i``'s rows from column 0 of row
    ``i``, in row order), the rest ``pad`` (one value per column). ``dest``:
    :func:`_block_dest`, when computed already."""
    Q, n = grp.cnt.shape[0], key.shape[0]
    in_order = grp.blk.shape[0] == Q and np.array_equal(grp.blk, np.arange(Q))
    if in_order and n == Q * width:     # every list full, blocks in row order
        if out is None:
            return key.reshape(Q, width)    # a view
        out[...] = key.reshape(Q, width)
        return out
    if out is None:
        out = np.empty((Q, width), dtype=key.dtype)
    out[...] = pad
    if in_order and dest is None:   # one run per block, in row order: the rows fill
        out[np.arange(width) < grp.cnt[:, None]] = key      # the lists row-major
        return out
    out.reshape(-1)[_block_dest(grp, width, n) if dest is None else dest] = key
    return out


def _doc_keys(docno, dhash):
    """The docnos' part of the join keys (int64 below ``_PAD_J``): integer docnos
    themselves, string docnos the top bits of their hash ``dhash``; None when none fit."""
    if dhash is not None:
        return (dhash >> np.uint64(64 - _DOC_BITS)).view(np.int64)
    if docno.shape[0] and _is_int(docno) and int(docno.min()) >= 0 and \
            int(docno.max()) < _PAD_J:
        return docno.astype(np.int64, copy=False)
    return None


def _dense(grp, n):
    """The longest list, when a (queries x longest list) block stays small, else None."""
    cnt = grp.cnt
    width = int(cnt.max())
    return width if width <= 1 << _LOW and cnt.shape[0] * width <= 2 * n + 1024 else None


def _qrels_blocks(docno, rel, heads, dhash=None, dstr=None):
    """Judgements as :class:`_Blocks` (None where they do not apply: huge docnos, very
    uneven lists, huge relevance levels). String docnos: ``dhash`` their hashes, ``dstr``
    the strings (to check the pairs the join matches)."""
    n = rel.shape[0]
    dkey = _doc_keys(docno, dhash) if n else None
    if dkey is None or int(rel.max()) >= (1 << _LOW) - 2:
        return None
    grp = _group(heads, n)
    width = _dense(grp, n)
    if width is None:
        return None
    top = int(rel.max())
    nlev = max(top, 0) + 1
    Q = grp.names.shape[0]
    if Q * nlev > 4 * n + 1_000_000:
        return None
    cbits = _LOW if dhash is None else _bits(nlev + 1)
    if dhash is not None and cbits + _bits(width - 1) > _LOW:    # no room for the column
        return None
    # key: docno << (_LOW + 1) | (column << cbits for string docnos) | code + 2, where
    # trec_eval's code is -2 for a negative judgement; built and put in place slice by
    # slice of rows (no row-sized temporaries)
    keys = np.empty((Q + 1, width), dtype=np.int64)
    pad = (_PAD_J + np.arange(width, dtype=np.int64)) << (_LOW + 1)
    full = n == Q * width and np.array_equal(grp.blk, np.arange(Q))   # rows as they are
    keys[Q] = pad
    if not full:
        keys[:Q] = pad
    dest = None if full else _block_dest(grp, width, n)
    flat = keys.reshape(-1)
    for a in range(0, n, _ROW_SLICE):
        b = min(a + _ROW_SLICE, n)
        r = rel[a:b]
        k = dkey[a:b] << (_LOW + 1)
        k += np.where(r >= 0, r + 2, 0)
        at = np.arange(a, b, dtype=np.int64) if full else dest[a:b]
        if dhash is not None:
            c = at % width
            c <<= cbits
            k += c
        flat[at] = k
    strs = None if dhash is None else _to_block(dstr, grp, width, dstr.dtype.type(),
                                                dest=dest)
    # judgements per (query, code + 2) from the keys' payloads (padding: 0, dropped
    # with the negative judgements), slice by slice of queries
    levels = np.empty((Q, nlev + 2), dtype=np.int64)
    step = max(1, _ROW_SLICE // width)
    for a in range(0, Q, step):
        c = keys[a:min(a + step, Q)] & ((1 << cbits) - 1)
        c += (np.arange(c.shape[0], dtype=np.int64) * (nlev + 2))[:, None]
        levels[a:a + c.shape[0]] = np.bincount(c.reshape(-1), minlength=c.shape[0] * (
            nlev + 2)).reshape(-1, nlev + 2)
    levels = np.ascontiguousarray(levels[:, 2:])
    has = levels > 0
    return _Blocks(grp.names, grp.cnt, keys, levels,
                   np.where(has.any(axis=1), nlev - 1 - np.argmax(has[:, ::-1], axis=1), -1),
                   top, grp.block_of, cbits, strs)


def _run_blocks(docno, score, heads, dhash=None, dstr=None):
    """Run rows as :class:`_Blocks`, each query's rows keyed by their trec_eval rank (score
    as float32 descending, then docno descending in string order). None where they do not
    apply (see :func:`_qrels_blocks`)."""
    n = score.shape[0]
    if n == 0 or n > 1 << 30 or (dhash is None and _doc_keys(docno, None) is None):
        return None
    grp = _group(heads, n)
    width = _dense(grp, n)
    if width is None:
        return None
    Q = grp.names.shape[0]
    rows = _ranked_block(score, docno, grp, width)
    keys = np.empty((Q + 1, width), dtype=np.int64)
    dkey = _doc_keys(docno, None) if dhash is None else None
    payload = (1 << _LOW) + np.arange(width, dtype=np.int64)      # side 1, the rank
    pad = ((_PAD_R + np.arange(width, dtype=np.int64)) << (_LOW + 1)) + (1 << _LOW)
    keys[Q] = pad
    cnt = grp.cnt
    ragged = int(cnt.min()) < width
    step = max(1, _ROW_SLICE // width)
    for a in range(0, Q, step):     # slice by slice of queries: every pass in cache
        k, r = keys[a:min(a + step, Q)], rows[a:a + step]
        if dhash is None:
            np.take(dkey, r, out=k, mode="clip")
        else:       # the hashes' top bits
            top = k.view(np.uint64)
            np.take(dhash, r, out=top, mode="clip")
            top >>= np.uint64(64 - _DOC_BITS)
        k <<= _LOW + 1
        k += payload
        if ragged:
            np.copyto(k, pad, where=np.arange(width) >= cnt[a:a + step, None])
    return _Blocks(grp.names, cnt, keys, block_of=grp.block_of,
                   docno=None if dstr is None else np.take(dstr, rows))


def _ranked_block(score, docno, grp, width):
    """``(queries, width)`` rows of the run in trec_eval's order within each query (score
    as float32 descending, then docno descending in string order); past each list's end,
    anything. One row sort of packed (score, row number) keys; docnos order only the rows
    whose scores tie."""
    n = score.shape[0]
    nb = _bits(n - 1)
    key = np.empty(n, dtype=np.int64)
    for a in range(0, n, _ROW_SLICE):
        k = key[a:a + _ROW_SLICE]
        k[...] = _float32_key(score[a:a + _ROW_SLICE].astype(np.float32))
        k <<= nb
        k += np.arange(a, a + k.shape[0], dtype=np.int64)
    S = _to_block(key, grp, width, ((1 << 32) + np.arange(width, dtype=np.int64)) << nb)
    S.sort(axis=1)
    # neighbours that differ in the row bits only (in slices of rows: small temporaries)
    step = max(1, _ROW_SLICE // width)
    tie = np.concatenate([np.zeros(0, np.int64)] + [
        np.flatnonzero((S[r:r + step, 1:] ^ S[r:r + step, :-1]) < 1 << nb) + r * (width - 1)
        for r in range(0, S.shape[0], step)])
    S_flat = S.reshape(-1)
    idx = None
    if tie.shape[0]:
        f = tie + tie // (width - 1)      # position in S of the first of the two
        idx = np.unique(np.concatenate([f, f + 1]))
        tied = S_flat[idx] >> nb
    S &= (1 << nb) - 1                    # the rows
    if idx is not None:
        d = docno[S_flat[idx]]
        drank = np.unique(d.astype(str), return_inverse=True)[1].reshape(-1)
        sub = np.lexsort((-drank, tied, idx // width))
        S_flat[idx] = S_flat[idx][sub]
    return S
