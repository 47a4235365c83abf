"""TREC qrels and run files -> flat arrays for the per-query metrics.

Formats (whitespace-separated; blank lines and lines starting with ``#`` are
skipped; errors name the file and line):

* qrels: ``qid iteration docno relevance`` (relevance an integer; negative
  means judged non-relevant);
* run: ``qid Q0 docno rank score tag [anything]`` (the rank column is ignored,
  as trec_eval ignores it; extra trailing columns are allowed).

A document listed twice for one query (in qrels or in a run) is an error
naming both lines. :func:`trec_arrays` joins a run with qrels the way
trec_eval 9.0.8 does: queries of the run missing from the qrels are ignored;
queries of the qrels missing from the run are left out, or kept with nothing
retrieved when ``complete_qrels=True`` (trec_eval ``-c``); unjudged retrieved
documents are non-relevant; judged documents that were not retrieved are
rows with ``retrieved=False`` (they count in the ideal ranking and in the
number of relevant documents). Scores are read as 32-bit floats when
``float32_scores=True`` (what trec_eval does).
"""

from __future__ import annotations

import gc
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from .._core.results import result_type
from .._kernels.segments import argsort_ints, pad_segments

__all__ = ["Qrels", "Run", "TrecEvaluation", "TrecFormatError", "evaluate",
           "parse_trec_measures", "read_qrels", "read_run", "trec_arrays"]


class TrecFormatError(ValueError):
    """A malformed qrels or run file; the message names the file and line."""


@dataclass(frozen=True)
class Qrels:
    qid: np.ndarray      # str (m,)
    docno: np.ndarray    # str (m,)
    rel: np.ndarray      # int64 (m,)
    path: str = ""
    # ids factorized and rows encoded once (see _id_codes), when built
    ids: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.ids is None and _encodable(self.qid, self.docno, self.rel, "iu"):
            object.__setattr__(self, "ids", _id_codes(self.qid, self.docno, rel=self.rel))


@dataclass(frozen=True)
class Run:
    qid: np.ndarray      # str (n,)
    docno: np.ndarray    # str (n,)
    score: np.ndarray    # float64 as written (n,)
    tag: str = ""
    path: str = ""
    ids: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.ids is None and _encodable(self.qid, self.docno, self.score, "iuf"):
            object.__setattr__(self, "ids", _id_codes(self.qid, self.docno,
                                                      score=self.score))


def _encodable(qid, docno, values, kinds):
    """Whether rows given directly are arrays :func:`_id_codes` can encode (else evaluate
    takes the general join on them as they are)."""
    arrays = (qid, docno, values)
    return all(isinstance(a, np.ndarray) and a.ndim == 1 for a in arrays) and \
        qid.shape == docno.shape == values.shape and qid.dtype.kind in "iuU" and \
        docno.dtype.kind in "iuU" and values.dtype.kind in kinds


def _bad_utf8_line(path):
    """Line number of the first byte that is not UTF-8 (the text layer decodes in chunks
    ahead of the lines it hands out, so the line being read when it fails can be earlier)."""
    with open(path, "rb") as fh:
        data = fh.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return data.count(b"\n", 0, exc.start) + 1
    return "?"


def _records(path, progress, min_cols, exact):
    """Split the non-blank, non-comment lines: ``(columns per line, line numbers)``.

    Only the columns calipers uses are kept (as strings); values are converted
    in bulk afterwards. A line with the wrong number of columns raises at once.
    """
    size = os.path.getsize(path)
    bar = None
    if progress and size > 20_000_000:
        try:
            from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]  # no stubs

            bar = tqdm(total=size, unit="B", unit_scale=True, desc=os.path.basename(path),
                       disable=None, leave=False)
        except ImportError:  # pragma: no cover - tqdm is in the cli extra
            bar = None
    rows, lines = [], []
    lineno = 0
    chars = 0
    want = "4 columns 'qid iteration docno relevance'" if exact else \
        "at least 6 columns 'qid Q0 docno rank score tag'"
    # Millions of small lists would trigger the cyclic garbage collector over and over.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                parts = line.split()
                if not parts or parts[0].startswith("#"):
                    continue
                if len(parts) != min_cols if exact else len(parts) < min_cols:
                    raise TrecFormatError(f"{path}, line {lineno}: expected {want}, "
                                          f"got {len(parts)}")
                rows.append(parts)
                lines.append(lineno)
                if bar is not None:
                    chars += len(line)
                    if lineno % 100_000 == 0:
                        bar.update(chars - bar.n)
    except UnicodeDecodeError as exc:
        raise TrecFormatError(f"{path}, line {_bad_utf8_line(path)}: not UTF-8 text "
                              f"({exc.reason})") from None
    finally:
        if gc_was_enabled:
            gc.enable()
        if bar is not None:
            bar.close()
    return rows, np.array(lines, dtype=np.int64)


def _column(rows, j):
    return np.array([r[j] for r in rows], dtype=str)


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


# Rows of the join's (queries x columns) key array sorted at a time: a slice stays in cache.
_JOIN_SLICE = 1 << 18


# evaluate joins encoded qrels and runs by blocks where it can (tests turn it off to
# compare with the general join)
_BLOCK_JOIN = True


def _blocks_of(obj):
    """The :class:`_Blocks` of qrels or a run, computed when it was built (None: none)."""
    return None if obj.ids is None else obj.ids.blocks


def _ranked_of(ta):
    """The :class:`_Ranked` lists of evaluate's general join (one ranking sort)."""
    Q = int(ta.queries.shape[0])
    r, q, nret = _ranked_rows(ta, Q)
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


def _block_ranking(qb, rb, complete_qrels, queries):
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
    code = _join_blocks(qb.keys, rb.keys, jb, rbk, dtype, qb.code_bits, pairs)
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


def _join_blocks(jkeys, rkeys, jrows, rrows, dtype, code_bits=_LOW, pairs=None):
    """trec_eval's relevance code of every ranked run row, ``(longest list, queries)``
    (rank-major; -1 where not judged, and past each list's end): per slice of queries, the
    rows ``jrows`` of the judgement keys and ``rrows`` of the run keys side by side, one
    row sort, and each judged document's two neighbouring keys. None when a query has a
    docno twice on one side (or two docnos with one hashed key).

    ``code_bits``: the judgements' payload bits that hold the code; ``pairs`` (a list):
    receives, per slice, each matched pair's ``(query, rank, judgement's column in its
    block)`` (the column: the payload's bits above the code)."""
    Q, A, L = jrows.shape[0], jkeys.shape[1], rkeys.shape[1]
    W = A + L
    code = np.full((L, Q), _NONPOOL, dtype=dtype)
    if A == 0 or L == 0:
        return code
    flat = code.reshape(-1)
    low = (1 << _LOW) - 1
    step = max(1, _JOIN_SLICE // W)
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


def _check_duplicates(qid, docno, lines, path, what):
    if qid.shape[0] == 0:
        return
    key, _ = _pair_keys(qid, docno, qid[:1], docno[:1])
    ks = np.sort(key)
    if not np.any(ks[1:] == ks[:-1]):
        return
    order = np.argsort(key, kind="stable")
    ks = key[order]
    dup = np.nonzero(ks[1:] == ks[:-1])[0]
    a, b = sorted((int(lines[order[dup[0]]]), int(lines[order[dup[0] + 1]])))
    raise TrecFormatError(
        f"{path}, line {b}: duplicate {what} for query {qid[order[dup[0]]]!s} document "
        f"{docno[order[dup[0]]]!s} (first on line {a})")


def _numbers(strings, lines, path, col, what, parse):
    """Bulk conversion; on failure find the first bad value and name its line."""
    try:
        return np.array(strings, dtype=str).astype(parse)
    except (ValueError, OverflowError):
        for i, v in enumerate(strings):
            try:
                parse(v)
            except (ValueError, OverflowError):
                raise TrecFormatError(f"{path}, line {lines[i]}, column {col}: {what}, "
                                      f"got {v!r}") from None
        raise  # pragma: no cover - numpy and Python disagree on a value


def read_qrels(path, *, progress=False) -> Qrels:
    """Read a qrels file ``qid iteration docno relevance`` into arrays."""
    path = os.fspath(path)
    rows, lines = _records(path, progress, 4, exact=True)
    rel = _numbers([r[3] for r in rows], lines, path, 4, "relevance must be an integer", int)
    qid, docno = _column(rows, 0), _column(rows, 2)
    _check_duplicates(qid, docno, lines, path, "judgement")
    rel = rel.astype(np.int64)
    return Qrels(qid, docno, rel, path, _id_codes(qid, docno, rel=rel))


def read_run(path, *, progress=False) -> Run:
    """Read a run file ``qid Q0 docno rank score tag`` into arrays."""
    path = os.fspath(path)
    rows, lines = _records(path, progress, 6, exact=False)
    score = _numbers([r[4] for r in rows], lines, path, 5, "score must be a number", float)
    if score.shape[0] and not np.all(np.isfinite(score)):
        i = int(np.argmax(~np.isfinite(score)))
        raise TrecFormatError(f"{path}, line {lines[i]}, column 5: score must be finite, "
                              f"got {rows[i][4]!r}")
    qid, docno = _column(rows, 0), _column(rows, 2)
    _check_duplicates(qid, docno, lines, path, "document")
    score = score.astype(np.float64)
    return Run(qid, docno, score, rows[0][5] if rows else "", path,
               _id_codes(qid, docno, score=score))


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


def trec_arrays(qrels: Qrels, run: Run, *, complete_qrels=False, float32_scores=True,
                queries=None, hash_docs=False) -> TrecArrays:
    """Join a run with its qrels as trec_eval does (see module docstring).

    ``queries`` (sorted str array) overrides the query set (used to compare two
    runs on the same queries); queries without run rows then score 0. Integer
    ids on both sides are joined as integers (the same pairs as their strings).
    ``hash_docs``: join string docnos on 64-bit hashes (checked: matched and duplicate
    pairs are compared as strings; a collision redoes the join on exact codes); the
    docnos' string order is then found only for rows with tied scores.
    """
    return _join(qrels, run, complete_qrels, float32_scores, queries, hash_docs, False)


def _join(qrels, run, complete_qrels, float32_scores, queries, hash_docs, lean):
    """:func:`trec_arrays`; ``lean``: the retrieved rows only (see :func:`_trec_arrays`)."""
    if hash_docs:
        try:
            return _trec_arrays(qrels, run, complete_qrels, float32_scores, queries, True,
                                lean=lean)
        except _HashCollision:   # pragma: no cover - about 1e-7 at 10^6 rows
            pass
    return _trec_arrays(qrels, run, complete_qrels, float32_scores, queries, False, lean=lean)


def _trec_arrays(qrels, run, complete_qrels, float32_scores, queries, hash_docs, *,
                 lean=False):
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
    fast = _grouped_join(jq, jd, rq, rd, sel.shape[0]) if jd_s is None else None
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


# Widest packed sort key (bits) of the join and the ranking sort; tests lower it to take
# the general (argsort) paths.
_PACK_BITS = 64


# Elements per slice when scanning a large sorted key array for neighbours (tests lower it).
_SLICE = 1 << 20


def _bits(x):
    """Bits needed for the non-negative integer ``x``."""
    return int(x).bit_length()


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


# Sort each query's rows as one row of a padded (queries x longest block) array when the
# padding stays small: many short sorts are several times faster than one long sort of keys
# that carry the query too. Tests turn it off to compare with the flat sort.
_ROW_SORT = True


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


def _grouped_join(jq, jd, rq, rd, Q):
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
    if _ROW_SORT and Q * W <= 2 * (nj + nr) + 1024 and \
            _bits((1 << bd) + W) + 1 + nb <= min(_PACK_BITS, 63):
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
        for a in range(0, Pf.shape[0] - 1, _SLICE):
            b = min(a + _SLICE, Pf.shape[0] - 1)
            x = Pf[a + 1:b + 1] ^ Pf[a:b]
            m = np.flatnonzero(x < 1 << (nb + 1))
            if m.shape[0] and int(x[m].min()) < 1 << nb:
                return None
            found.append(m + a)
        m = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        low = (1 << nb) - 1
        return Pf[m + 1] & low, Pf[m] & low, br
    if _bits(Q - 1) + bd + 1 + bo > min(_PACK_BITS, 63):
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


# --------------------------------------------------------------------------
# trec_eval measures on one segment sort
# --------------------------------------------------------------------------

TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_RPREC_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)

# trec_eval 9.0.8's measures in its printing order: name -> (kind, default parameters).
# kinds: "meta" (runid, num_q: one summary line), "count" (integers; the summary is the
# sum), "single" (one value per query), "gm" (one value per query, geometric-mean summary,
# no per-query line), "icut" (integer cut-offs), "fcut" (real cut-offs, printed "%.2f"),
# "gains" (optional "level=gain,..." pairs), "floats" (a fixed list of real parameters;
# printed name is "name_<parameters as written>"), "relstring" (per-query string only).
_MEASURES = {
    "runid": ("meta", None), "num_q": ("meta", None),
    "num_ret": ("count", None), "num_rel": ("count", None), "num_rel_ret": ("count", None),
    "map": ("single", None), "gm_map": ("gm", None), "Rprec": ("single", None),
    "bpref": ("single", None), "recip_rank": ("single", None),
    "iprec_at_recall": ("fcut", _RECALL_POINTS), "P": ("icut", TREC_CUTOFFS),
    "relstring": ("relstring", None), "recall": ("icut", TREC_CUTOFFS),
    "infAP": ("single", None), "gm_bpref": ("gm", None),
    "Rprec_mult": ("fcut", _RPREC_MULTS), "utility": ("floats", None),
    "11pt_avg": ("floats", None), "binG": ("single", None), "G": ("gains", None),
    "ndcg": ("gains", None), "ndcg_rel": ("gains", None), "Rndcg": ("gains", None),
    "ndcg_cut": ("icut", TREC_CUTOFFS), "map_cut": ("icut", TREC_CUTOFFS),
    "relative_P": ("icut", TREC_CUTOFFS), "success": ("icut", (1, 5, 10)),
    "set_P": ("single", None), "set_relative_P": ("single", None),
    "set_recall": ("single", None), "set_map": ("single", None), "set_F": ("floats", None),
    "num_nonrel_judged_ret": ("count", None),
}
_ORDER = tuple(_MEASURES)
TREC_MEASURES = _ORDER   # public: every trec_eval measure name calipers computes
# trec_eval's default set (no -m): its "official" measures.
_OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
             "bpref", "recip_rank", "iprec_at_recall", "P")
COUNT_MEASURES = frozenset(m for m, (kind, _) in _MEASURES.items() if kind == "count")
# Measures defined on trec_eval's ordering only (no expectation over tied scores).
_AVERAGE_TIES = frozenset({"runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map",
                           "Rprec", "recip_rank", "P", "recall", "ndcg", "ndcg_cut"})


def _floats(one, params, what):
    try:
        vals = [float(v) for v in params.split(",")]
    except ValueError:
        raise ValueError(f"{one}: parameters must be {what}") from None
    if not vals or not all(np.isfinite(v) for v in vals):
        raise ValueError(f"{one}: parameters must be {what}")
    return vals


def _check_params(one, name, kind, params):
    """Validate a parameter string; returns the cut-offs for cut kinds, else the string."""
    if kind in ("meta", "count", "single", "gm"):
        raise ValueError(f"{one}: measure {name} takes no parameters")
    if kind == "icut":
        try:
            # trec_eval reads cut-offs as integers: "23.4" is 23.
            ks = {int(float(v)) for v in params.split(",") if v != ""}
        except (ValueError, OverflowError):
            raise ValueError(f"{one}: cut-offs must be positive integers") from None
        if not ks or min(ks) <= 0:
            raise ValueError(f"{one}: cut-offs must be positive integers")
        return ks
    if kind == "fcut":
        vals = _floats(one, params, "non-negative numbers")
        if min(vals) < 0 or (name == "iprec_at_recall" and max(vals) > 1):
            raise ValueError(f"{one}: parameters must be non-negative numbers"
                             + (" at most 1" if name == "iprec_at_recall" else ""))
        return set(vals)
    if kind == "gains":
        for pair in params.split(","):
            lev, eq, g = pair.partition("=")
            try:
                int(lev), float(g)
            except ValueError:
                raise ValueError(f"{one}: parameters must be 'level=gain' pairs, as in "
                                 f"{name}.1=3,2=9") from None
            if not eq:
                raise ValueError(f"{one}: parameters must be 'level=gain' pairs, as in "
                                 f"{name}.1=3,2=9")
        return params
    if name == "utility":
        if len(_floats(one, params, "four numbers")) != 4:
            raise ValueError(f"{one}: parameters must be four numbers (coefficients of "
                             f"relevant retrieved, non-relevant retrieved, relevant missed, "
                             f"non-relevant missed)")
    elif name == "11pt_avg":
        vals = _floats(one, params, "recall levels in [0, 1]")
        if min(vals) < 0 or max(vals) > 1:
            raise ValueError(f"{one}: parameters must be recall levels in [0, 1]")
    elif name == "set_F":
        vals = _floats(one, params, "one positive number (beta)")
        if len(vals) != 1 or vals[0] <= 0:
            raise ValueError(f"{one}: parameters must be one positive number (beta)")
    else:  # relstring
        vals = _floats(one, params, "one non-negative integer (length)")
        if len(vals) != 1 or vals[0] < 0:
            raise ValueError(f"{one}: parameters must be one non-negative integer (length)")
    return params


def parse_trec_measures(specs=None):
    """trec_eval measure specs -> ``[(family, parameter or None), ...]`` in trec_eval's order.

    ``specs``: names as ``trec_eval -m`` takes them: ``"map"``, ``"P.5,10"``,
    ``"ndcg_cut"`` (default cut-offs 5, 10, 15, 20, 30, 100, 200, 500, 1000),
    ``"iprec_at_recall..1,.5"``, ``"ndcg.1=3,2=9"`` (gain per relevance level),
    ``"utility.2,-1,0,0"``, ``"relstring.20"``, ``"all_trec"`` (every measure; also
    the default for ``None``) or ``"official"`` (trec_eval's default set). Cut-off
    families give one pair per cut-off (an ``int``, or a ``float`` for
    ``iprec_at_recall`` and ``Rprec_mult``); other parameterised measures carry
    their parameter string (``None`` for the defaults). Raises ``ValueError``
    naming the spec for an unknown measure, bad parameters, or parameters on a
    measure that takes none.
    """
    if isinstance(specs, str):
        specs = [specs]
    if not specs:
        specs = ["all_trec"]
    want: dict = {}
    for one in specs:
        one = str(one)
        name, _, params = one.partition(".")
        if name in ("all_trec", "official"):
            if params:
                raise ValueError(f"{one}: {name} takes no parameters")
            for fam in (_ORDER if name == "all_trec" else _OFFICIAL):
                kind, default = _MEASURES[fam]
                if kind in ("icut", "fcut"):
                    want.setdefault(fam, set()).update(default)
                else:
                    want.setdefault(fam, None)
            continue
        if name not in _MEASURES:
            raise ValueError(f"{one}: unknown measure {name!r}; supported: "
                             f"{', '.join(_ORDER)}, all_trec, official, and the ir_measures "
                             f"names {', '.join(_IR_NAMES)} (as in nDCG@10, P(rel=2)@5)")
        kind, default = _MEASURES[name]
        if params:
            got = _check_params(one, name, kind, params)
            if kind in ("icut", "fcut"):
                want.setdefault(name, set()).update(got)
            else:
                want[name] = got   # the last parameters given win, as in trec_eval
        elif kind in ("icut", "fcut"):
            want.setdefault(name, set()).update(default)
        else:
            want.setdefault(name, None)
    out = []
    for fam in _ORDER:
        if fam in want:
            if _MEASURES[fam][0] in ("icut", "fcut"):
                out.extend((fam, k) for k in sorted(want[fam]))
            else:
                out.append((fam, want[fam]))
    return out


def _measure_name(fam, k):
    kind = _MEASURES[fam][0] if fam in _MEASURES else "icut"
    if k is None:
        return fam
    if kind == "fcut":
        return f"{fam}_{k:.2f}"
    return f"{fam}_{k}"

# --------------------------------------------------------------------------
# ir_measures-style names: Measure(rel=r)@cutoff
# --------------------------------------------------------------------------

# ir_measures name -> (trec_eval family without cut-off, with cut-off, takes rel=, cut-off kind)
_IR_NAMES = {
    "AP": ("map", "map_cut", True, "int"),
    "P": (None, "P", True, "int"),
    "R": (None, "recall", True, "int"),
    "RR": ("recip_rank", "_rr_cut", True, "int"),
    "nDCG": ("ndcg", "ndcg_cut", False, "int"),
    "Rprec": ("Rprec", None, True, None),
    "Bpref": ("bpref", None, True, None),
    "infAP": ("infAP", None, True, None),
    "Success": (None, "success", True, "int"),
    "Judged": (None, "_judged", False, "int"),
    "IPrec": (None, "iprec_at_recall", True, "float"),
    "SetP": ("set_P", None, True, None),
    "SetR": ("set_recall", None, True, None),
    "SetF": ("set_F", None, True, None),
    "NumRet": ("num_ret", None, True, None),    # NumRet(rel=r): relevant retrieved
    "NumRel": ("num_rel", None, True, None),
    "NumQ": ("num_q", None, False, None),
}
# calipers-only families behind two ir_measures names (trec_eval has no such measure)
_IR_ONLY = frozenset({"_rr_cut", "_judged"})
_IR_RE = re.compile(r"^([A-Za-z]+)(?:\(([^()]*)\))?(?:@([0-9.]+))?$")


def _parse_ir_measure(spec):
    """``"P(rel=2)@5"`` -> ``(family, cut-off or None, rel or None)``, or None when ``spec``
    is not an ir_measures name (then it is read as a trec_eval name)."""
    text = spec.replace(" ", "")
    m = _IR_RE.match(text)
    if m is None or m.group(1) not in _IR_NAMES:
        return None
    name, args, cut = m.groups()
    if name in ("P", "Rprec", "infAP") and args is None and cut is None:
        return None       # trec_eval's P (all cut-offs), Rprec and infAP: the same measure
    plain, withcut, takes_rel, cut_kind = _IR_NAMES[name]
    rel = None
    for arg in (args.split(",") if args else []):
        key, _, val = arg.partition("=")
        if key != "rel" or not takes_rel:
            raise ValueError(f"{spec}: unsupported parameter {key!r} for {name}"
                             + ("; only rel=" if takes_rel else ""))
        try:
            rel = int(val)
        except ValueError:
            raise ValueError(f"{spec}: rel must be an integer") from None
    if name == "NumRet" and rel is not None:
        return "num_rel_ret", None, rel
    if cut is None:
        if plain is None:
            raise ValueError(f"{spec}: {name} needs a cut-off, as in {name}@10")
        return plain, None, rel
    if withcut is None:
        raise ValueError(f"{spec}: {name} takes no cut-off")
    try:
        k = float(cut) if cut_kind == "float" else int(cut)
    except ValueError:
        raise ValueError(f"{spec}: the cut-off must be "
                         + ("a recall level in [0, 1]" if cut_kind == "float"
                            else "a positive integer")) from None
    if (cut_kind == "int" and k <= 0) or (cut_kind == "float" and not 0 <= k <= 1):
        raise ValueError(f"{spec}: the cut-off must be "
                         + ("a recall level in [0, 1]" if cut_kind == "float"
                            else "a positive integer"))
    return withcut, k, rel


def _plan(measures):
    """Measure specs -> ``[(family, parameter, relevance level or None, printed name)]``.

    trec_eval names first, in trec_eval's order; ir_measures names after them in
    the order given, each printed as written (spaces removed).
    """
    if measures is None:
        measures = ["all_trec"]
    elif isinstance(measures, str):
        measures = [measures]
    measures = list(measures)
    if not measures:
        raise ValueError("measures is empty: name at least one measure (None means all_trec)")
    trec, ir = [], []
    for one in measures:
        got = _parse_ir_measure(str(one))
        if got is None:
            trec.append(str(one))
        else:
            ir.append((got[0], got[1], got[2], str(one).replace(" ", "")))
    plan = [(f, k, None, _measure_name(f, k)) for f, k in parse_trec_measures(trec)] \
        if trec else []
    seen = {p[3] for p in plan}
    for entry in ir:
        if entry[3] not in seen:
            plan.append(entry)
            seen.add(entry[3])
    return plan


def _as_qrels(qrels):
    if isinstance(qrels, (Qrels, str, os.PathLike)):
        return qrels if isinstance(qrels, Qrels) else read_qrels(qrels)
    q, d, r = _flat(qrels, "qrels", "(query id, doc id, relevance)")
    r = np.asarray(r)
    if r.dtype.kind == "b" or r.dtype.kind not in "iuf" or \
            (r.dtype.kind == "f" and not np.all(np.isfinite(r) & (r == np.round(r)))):
        raise ValueError("qrels: relevance must be integers (trec_eval reads integers)")
    # duplicates: checked by trec_arrays on its integer keys (no extra sort of strings)
    r = r.astype(np.int64, copy=False)
    return Qrels(q, d, r, "", _id_codes(q, d, rel=r))


def _as_run(run, run_id):
    if isinstance(run, (Run, str, os.PathLike)):
        return run if isinstance(run, Run) else read_run(run)
    q, d, s = _flat(run, "run", "(query id, doc id, score)")
    s = np.asarray(s)
    if s.dtype.kind not in "iuf" or s.dtype.kind == "b":
        raise ValueError(f"run: scores must be numbers, got dtype {s.dtype}")
    s = s.astype(np.float64, copy=False)
    if not np.all(np.isfinite(s)):
        raise ValueError("run: scores must be finite (no NaN or inf)")
    return Run(q, d, s, run_id, "", _id_codes(q, d, score=s))


def _flat(obj, what, columns):
    """Flat (query ids, doc ids, values) from a nested dict or a triple of arrays."""
    return _from_nested(obj, what) if isinstance(obj, dict) else _triple(obj, what, columns)


def _from_nested(obj, what):
    """``{qid: {docid: value}}`` (pytrec_eval's input) -> flat arrays."""
    q, d, v = [], [], []
    for qid, docs in obj.items():
        if not isinstance(docs, dict):
            raise ValueError(f"{what}: expected {{query id: {{doc id: value}}}}, got "
                             f"{type(docs).__name__} for query {qid!r}")
        for doc, val in docs.items():
            q.append(str(qid))
            d.append(str(doc))
            v.append(val)
    return np.array(q, dtype=str), np.array(d, dtype=str), np.array(v)


def _triple(obj, what, form):
    try:
        q, d, v = obj
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a file path, a {{query id: {{doc id: value}}}} "
                         f"dict or three flat arrays {form}") from None
    q, d, v = np.asarray(q), np.asarray(d), np.asarray(v)
    if not (q.ndim == d.ndim == v.ndim == 1) or not (q.shape == d.shape == v.shape):
        raise ValueError(f"{what}: the three arrays {form} must be 1-D of one length, got "
                         f"shapes {q.shape}, {d.shape}, {v.shape}")
    return _ids(q), _ids(d), v


def _ids(a):
    """Integer ids stay integers (a faster join; compared as their decimal strings would
    be); anything else becomes strings."""
    return a.astype(np.int64) if a.dtype.kind in "iu" else _as_str(a)


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


_MIN_GEO_MEAN = 1e-5    # trec_eval floors a value at this before the log of gm_map, gm_bpref
_INFAP_EPSILON = 1e-5   # trec_eval's smoothing of infAP's precision among judged documents
_NONPOOL, _UNJUDGED = -1, -2   # trec_eval's codes: not in the qrels; judged with rel < 0


def _div(a, b):
    """a / b where b > 0, else 0 (trec_eval's value for an undefined query)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.where(b > 0, a / np.where(b > 0, b, 1.0), 0.0)


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


def _ranked_rows(ta, Q):
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
    if _ROW_SORT and Q * big <= 2 * nr + 1024 and 33 + nb <= min(_PACK_BITS, 63):
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
    elif _bits(Q - 1) + 32 + bo <= min(_PACK_BITS, 63):
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


# Queries per slice of _Dense's scan (its running vectors stay in cache).
_DENSE_SLICE = 1 << 14
# Fewer queries: the flat lists are faster (the scan's calls per rank cost about as much
# as the lists' passes over 500 queries); tests lower it.
_DENSE_MIN_QUERIES = 512


class _Dense:
    """The common measures on a dense rank-major block of codes (:class:`_Ranked`): one
    pass over the ranks, each adding to per-query running counts and sums (vectors over a
    slice of queries), read at the cut-offs. Each query's sums run in rank order, as
    trec_eval adds (rows that add nothing add nothing or 0.0, which changes no sum)."""

    FAMILIES = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret",
                          "map", "gm_map", "map_cut", "Rprec", "recip_rank", "_rr_cut", "P",
                          "recall", "relative_P", "success", "_judged", "bpref", "gm_bpref",
                          "ndcg", "ndcg_cut", "utility", "set_P", "set_recall",
                          "set_relative_P", "set_map", "set_F"})

    def __init__(self, rk, level, measures):
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
        self.rprec_hits = np.zeros(self.Q)
        for a in range(0, self.Q, _DENSE_SLICE):
            self._scan(block[:, a:a + _DENSE_SLICE], a)
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
                self.rprec_hits[a + i] = hits[i]
            for q, d in at.items():
                if j in d:
                    d[j][a:b] = hits if q == "hits" else run[q]

    def gain_table(self, params):
        return _gain_table(self.levels.shape[1] - 1, params)

    def ideal(self, params, m):
        if params not in self._ideal:
            self._ideal[params] = _IdealDCG(self.levels, self.gain_table(params))
        return self._ideal[params].at(m)

    def value(self, fam, k):
        R, nret, relret = self.R.astype(np.float64), self.nret.astype(np.float64), \
            self.relret
        got = _count_value(fam, k, R, nret, relret)
        if got is not None:
            return got
        at, last = self.at, self.L - 1
        if fam == "num_nonrel_judged_ret":
            return at["nonrel"][last]
        if fam in ("map", "gm_map"):
            return _div(at["ap"][last], R)
        if fam == "map_cut":
            return _div(at["ap"][self.col(k)], R)
        if fam == "Rprec":
            return _div(self.rprec_hits, R)
        if fam in ("recip_rank", "_rr_cut"):
            first = at["before"][last]
            has = relret > 0
            if k is not None:
                has &= first < k
            return np.where(has, 1.0 / (first + 1.0), 0.0)
        if fam in ("bpref", "gm_bpref"):
            return _div(at["bpref"][last], R)
        if fam == "ndcg":
            return _div(at[("dcg", k)][last], self.ideal(k, None))
        if fam == "ndcg_cut":
            return _div(at[("dcg", None)][self.col(k)], self.ideal(None, k))
        if fam == "_judged":
            return _div(at["judged"][self.col(k)], np.minimum(self.nret, k))
        hits = at["hits"][self.col(k)]
        if fam == "P":
            return hits / k
        if fam == "recall":
            return _div(hits, R)
        if fam == "relative_P":
            return _div(hits, np.minimum(R, k))
        assert fam == "success", fam
        return (hits > 0).astype(np.float64)


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


def _trec_values(rk, measures, *, relevance_level):
    """Per-query values of trec_eval's measures from its ranked lists (:class:`_Ranked`):
    the common ones from the dense block when there is one (:class:`_Dense`), the others
    from the flat lists (:class:`_Lists`, built only when one of them is asked for)."""
    dense = None
    if rk.block is not None and rk.Q >= _DENSE_MIN_QUERIES:
        dense = _Dense(rk, relevance_level, [p for p in measures if p[0] in _Dense.FAMILIES])
    lists = None
    res = {}
    for fam, k in measures:
        if fam in ("runid", "num_q"):
            continue
        if dense is not None and fam in _Dense.FAMILIES:
            v = dense.value(fam, k)
        else:
            if lists is None:
                lists = _Lists(rk, relevance_level)
            v = _list_value(lists, fam, k)
        res[_measure_name(fam, k)] = v if fam == "relstring" else \
            np.asarray(v, dtype=np.float64)
    return res


def _list_value(L, fam, k):
    """One measure's per-query values from :class:`_Lists`."""
    R, nret, relret = L.R.astype(np.float64), L.nret.astype(np.float64), L.relret
    v = _count_value(fam, k, R, nret, relret)
    if v is not None:
        return v
    rel = L.rel
    if fam == "num_nonrel_judged_ret":
        v = L.total((L.code >= 0) & ~rel)
    elif fam in ("map", "gm_map"):
        v = _div(L.relsub.sums(L.ap_terms()), R)
    elif fam == "map_cut":
        v = _div(L.relsub.sums(L.ap_terms(), k), R)
    elif fam == "Rprec":
        v = _div(L.first_rel(L.R), R)
    elif fam == "recip_rank":     # the first relevant row of each query
        v = _first_rel_rr(L, None)
    elif fam == "P":
        v = L.first_rel(k) / k
    elif fam == "recall":
        v = _div(L.first_rel(k), R)
    elif fam == "relative_P":
        v = _div(L.first_rel(k), np.minimum(R, k))
    elif fam == "success":
        v = (L.first_rel(k) > 0).astype(np.float64)
    elif fam == "_rr_cut":     # ir_measures RR@k: reciprocal rank within the top k
        v = _first_rel_rr(L, k)
    elif fam == "_judged":     # ir_measures Judged@k: share of the top k in the qrels
        v = _div(L.first(L.code != _NONPOOL, k), np.minimum(L.nret, k))
    elif fam in ("bpref", "gm_bpref"):
        # judged non-relevant rows ranked above each relevant row
        sub = L.relsub
        before = (sub.pos - sub.nth + 1) - L.unjudged_above()
        Rq = np.repeat(L.R, sub.cnt)
        den = np.repeat(np.maximum(np.minimum(L.N, L.R), 1), sub.cnt)
        frac = np.minimum(before, Rq) / den
        v = _div(sub.sums(_padded(np.where(before > 0, 1.0 - frac, 1.0))), R)
    elif fam == "infAP":
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
    elif fam in ("ndcg", "ndcg_cut", "G", "Rndcg", "ndcg_rel"):
        v = _gain_measure(L, fam, k)
    elif fam == "relstring":
        v = _relstring(L, 10 if k is None else int(float(k)))
    else:  # pragma: no cover - parse_trec_measures admits no other
        raise AssertionError(fam)
    return v


def _gain_measure(L, fam, k):
    """ndcg, ndcg_cut, G, Rndcg and ndcg_rel (gain = relevance level unless re-mapped)."""
    params = k if fam != "ndcg_cut" else None
    if fam in ("ndcg", "ndcg_cut"):
        sub, terms = L.dcg_terms(params)
        if fam == "ndcg":
            return _div(sub.sums(terms), L.ideal_dcg(params, None))
        return _div(sub.sums(terms, k), L.ideal_dcg(params, k))
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


def _average_ties_values(ta, measures, *, relevance_level):
    """The measures with an expectation over orderings of tied scores (ties="average")."""
    from ._measures import _Ranking

    ctx = _Ranking(ta.y_true, ta.y_score, ta.query_id, doc_id=ta.doc_id,
                   retrieved=ta.retrieved, ties="average", gain="linear",
                   relevance_level=relevance_level, num_segments=int(ta.queries.shape[0]))
    R = np.asarray(ctx.n_rel())
    den = np.where(R > 0, R, 1.0)
    res = {}
    for fam, k in measures:
        if fam in ("runid", "num_q"):
            continue
        if fam == "num_ret":
            v = ctx.n_ret()
        elif fam == "num_rel":
            v = R
        elif fam == "num_rel_ret":
            v = ctx.n_rel_ret()
        elif fam == "map":
            v = np.asarray(ctx.average_precision_sum()) / den
        elif fam == "Rprec":
            v = np.asarray(ctx.rprec_hits()) / den
        elif fam == "recip_rank":
            v = ctx.reciprocal_rank()
        elif fam == "P":
            v = np.asarray(ctx.hits(k)) / k
        elif fam == "recall":
            v = np.asarray(ctx.hits(k)) / den
        else:  # ndcg, ndcg_cut
            if fam == "ndcg" and k is not None:
                raise ValueError("ties='average' uses the relevance as gain: no ndcg gain "
                                 "parameters (use ties='trec_eval')")
            kk = None if fam == "ndcg" else k
            ideal = np.asarray(ctx.idcg(kk))
            v = np.asarray(ctx.dcg(kk)) / np.where(ideal > 0, ideal, 1.0)
        v = np.asarray(v, dtype=np.float64)
        # trec_eval scores queries without relevant documents 0 and averages them in.
        res[_measure_name(fam, k)] = np.where(np.isfinite(v), v, 0.0)
    return res


@result_type(meta=("measures", "run_id", "families"))
class TrecEvaluation:
    """trec_eval measures per query and their means (:func:`evaluate`).

    Attributes
    ----------
    values : dict str -> float64 array (Q,)
        Per-query value of each measure, keyed by trec_eval's printed name
        (``"map"``, ``"P_10"``, ``"ndcg_cut_10"``, ``"utility_2,-1,0,0"``) or
        the ir_measures name as given (``"nDCG@10"``), in ``query_ids`` order;
        0 for a query without relevant documents (trec_eval). ``relstring``:
        an object array of strings.
    mean : dict str -> float
        Mean over the ``Q`` queries: trec_eval's ``all`` line, except that for the
        counts (``num_ret``, ``num_rel``, ``num_rel_ret``, ``num_nonrel_judged_ret``,
        ``NumRet``, ``NumRel``) trec_eval and ``calipers trec`` print the sum,
        ``values[name].sum()``; geometric for ``gm_map`` and ``gm_bpref``; none for
        ``relstring``, ``runid``, ``num_q`` and ``NumQ``; NaN when there is no query.
    query_ids : str array (Q,)
        The evaluated queries, sorted as strings.
    in_run : bool array (Q,)
        Whether the query has rows in the run (False only with
        ``complete_qrels`` or ``queries``; trec_eval ``-q -c`` does not
        print those queries).
    measures : tuple of str
        The measure names in trec_eval's order, ``"runid"``, ``"num_q"`` and
        ``"NumQ"`` included when asked for (they have no values: see ``run_id``
        and ``query_ids``).
    run_id : str
        The run's tag (sixth column of the first run line).
    families : tuple of str
        The trec_eval family of each of ``measures`` (``"P_10"``: ``"P"``,
        ``"nDCG@10"``: ``"ndcg_cut"``, ``"NumRet(rel=2)"``: ``"num_rel_ret"``,
        ``"NumQ"``: ``"num_q"``): which names are counts, strings or geometric means.
    """

    values: dict
    mean: dict
    query_ids: object
    in_run: object
    measures: tuple = ()
    run_id: str = ""
    families: tuple = ()


def evaluate(qrels, run, measures=None, *, relevance_level=1, ties="trec_eval",
             complete_qrels=False, float32_scores=True, queries=None, run_id=""):
    """Evaluate a run against qrels with trec_eval 9.0.8's measures and conventions.

    Every measure comes from one ranking of the joined rows (the join of
    :func:`trec_arrays`: unjudged documents non-relevant, judged documents
    the run did not return counted in the ideal ranking and in R). A
    :class:`Qrels` or :class:`Run` is encoded once, when built (here for paths, dicts
    and arrays): each query's judgements, and its run rows in trec_eval's rank order,
    as packed keys (string docnos by a hash; the strings of matched pairs are compared,
    and a collision takes the exact join instead); evaluating one run against several
    qrels or measure sets, or several runs against one qrels, then repeats only the join
    and the measures.

    Parameters
    ----------
    qrels : path, Qrels, dict or tuple
        A qrels file (``qid iteration docno relevance``), a :class:`Qrels`,
        ``{qid: {docid: relevance}}`` (pytrec_eval's form) or three flat
        arrays ``(query id, doc id, relevance)``. Relevance is an integer;
        negative means judged non-relevant.
    run : path, Run, dict or tuple
        A run file (``qid Q0 docno rank score tag``), a :class:`Run`,
        ``{qid: {docid: score}}`` or three flat arrays ``(query id, doc id,
        score)``. Ids are compared as strings (``str(id)``), as in the files.
    measures : str or sequence of str, optional
        trec_eval 9.0.8 names with trec_eval's parameters (every name of
        :data:`TREC_MEASURES`): ``map``, ``gm_map``, ``Rprec``, ``bpref``,
        ``recip_rank``, ``iprec_at_recall[.r,...]``, ``P[.k,...]``,
        ``recall[.k,...]``, ``infAP``, ``Rprec_mult[.x,...]``,
        ``utility[.a,b,c,d]``, ``11pt_avg[.r,...]``, ``ndcg[.level=gain,...]``,
        ``ndcg_cut[.k,...]``, ``map_cut``, ``relative_P``, ``success``,
        ``set_P``, ``set_F[.beta]``, ``G``, ``binG``, ``Rndcg``, ``ndcg_rel``,
        ``relstring[.n]``, the counts, ``all_trec`` (every measure, the
        default) and ``official`` (trec_eval's default set); and
        ir_measures names: ``AP``, ``AP@k``, ``P@k``, ``P(rel=2)@k``, ``R@k``,
        ``RR``, ``RR@k``, ``nDCG``, ``nDCG@k``, ``Rprec``, ``Bpref``,
        ``infAP``, ``Success@k``, ``Judged@k``, ``IPrec@r``, ``SetP``,
        ``SetR``, ``SetF``, ``NumRet``, ``NumRet(rel=r)``, ``NumRel``,
        ``NumQ`` (``rel=`` where ir_measures takes it). trec_eval names come
        first, in trec_eval's printing order; ir_measures names follow in the
        order given, keyed as written.
    relevance_level : int
        Minimum relevance counted as relevant by the binary measures
        (trec_eval ``-l``; NDCG uses the relevance itself as gain).
    ties : {"trec_eval", "average"}
        ``"trec_eval"`` (default): score ties broken by document id descending
        (string order, trec_eval's ``comp_sim_docno``). ``"average"``: the
        expected value over all orderings of tied scores (McSherry & Najork 2008).
    complete_qrels : bool
        Evaluate every query of the qrels; those missing from the run score 0
        (trec_eval ``-c``). Default: the queries in both.
    float32_scores : bool
        Round scores to 32-bit floats first, as trec_eval reads them (so ties
        match trec_eval's).
    queries : sequence of str, optional
        Evaluate exactly these queries (used to compare runs on one query set).
    run_id : str
        Run tag for dict or array runs (files and :class:`Run` carry their own).

    Returns
    -------
    TrecEvaluation
        ``values`` per query (float64 NumPy arrays) and ``mean`` per measure.

    Raises
    ------
    ValueError
        Unknown measure or bad cut-off or parameter; a run that shares no query
        with the qrels (unless ``queries`` is given); a document judged or retrieved twice
        for one query; non-integer relevance; non-finite scores; an unknown
        ``ties``. :class:`TrecFormatError` (a ``ValueError``) for malformed
        files, naming the file and line; ``OSError`` for unreadable files.

    Notes
    -----
    Definitions are trec_eval 9.0.8's (its ``m_*.c`` sources; Buckley &
    Voorhees 2004 for bpref, Yilmaz & Aslam 2006 for infAP, Järvelin &
    Kekäläinen 2002 for NDCG). Values are trec_eval's for undefined queries:
    0 (a query without relevant documents counts 0 in the mean). ``gm_map``
    and ``gm_bpref`` keep the per-query value; their ``mean`` is
    ``exp(mean(log(max(v, 1e-5))))``. ``relstring`` values are strings, with
    no mean. ``ties="average"`` supports map, Rprec, recip_rank, P, recall,
    ndcg, ndcg_cut and the counts; other measures raise ``ValueError``.
    ``Judged@k`` is the share of the top ``min(k, retrieved)`` documents that
    appear in the qrels; ``RR@k`` the reciprocal rank of the first relevant
    document within the top ``k`` (0 if none).

    NumPy only (the TREC join works on strings); for arrays on other backends
    use the per-metric functions of :mod:`calipers.retrieval`. Same values as
    ``calipers trec``, which prints this result; reproduces trec_eval 9.0.8's
    test outputs.
    """
    plan = _plan(measures)
    if ties not in ("average", "trec_eval"):
        raise ValueError(f"ties must be 'average' or 'trec_eval', got {ties!r}")
    if ties == "average":
        bad = [p[3] for p in plan if p[0] not in _AVERAGE_TIES]
        if bad:
            raise ValueError(f"ties='average' is defined for {', '.join(sorted(_AVERAGE_TIES))};"
                             f" not for {', '.join(bad)} (use ties='trec_eval')")
    if isinstance(relevance_level, (bool, np.bool_)) or \
            not isinstance(relevance_level, (int, np.integer)):
        raise ValueError("relevance_level must be an integer (trec_eval -l), got "
                         f"{relevance_level!r}")
    qr = _as_qrels(qrels)
    if qr.qid.shape[0] == 0:
        raise ValueError("qrels: no judgement (an empty qrels leaves every measure undefined)")
    rn = _as_run(run, run_id)
    if queries is not None:
        queries = np.unique(np.asarray(queries).astype(str))
    blocked = None
    if ties == "trec_eval" and float32_scores and _BLOCK_JOIN:
        qb, rb = _blocks_of(qr), _blocks_of(rn)
        if qb is not None and rb is not None:
            blocked = _block_ranking(qb, rb, complete_qrels, queries)
    if blocked is None:
        ta = _join(qr, rn, complete_qrels, float32_scores, queries, ties == "trec_eval",
                   ties == "trec_eval")
        in_run, out_queries = np.asarray(ta.in_run), ta.queries
        rk = _ranked_of(ta) if ties == "trec_eval" else None
    else:
        rk, out_queries, in_run = blocked
    if queries is None and rn.qid.shape[0] and not np.any(in_run):
        # Almost always the wrong qrels (or query ids written differently): trec_eval
        # would print zeros over no query.
        raise ValueError("run: no query of the run appears in the qrels (a run must share "
                         "at least one query id with the qrels; ids compare as strings)")
    Q = int(out_queries.shape[0])
    vals = {}
    # One pass per relevance level (ir_measures' rel=; the ordering is shared).
    for level in dict.fromkeys(relevance_level if p[2] is None else p[2] for p in plan):
        group = [p for p in plan if (relevance_level if p[2] is None else p[2]) == level]
        pairs = [(f, k) for f, k, _, _ in group]
        if ties == "average":
            got = _average_ties_values(ta, pairs, relevance_level=level)
        else:
            got = _trec_values(rk, pairs, relevance_level=level)
            # trec_eval -c: a query without run rows is not evaluated: 0 for every
            # measure, except its number of relevant documents.
            for f, k in pairs:
                v = got.get(_measure_name(f, k))
                if v is not None and f != "num_rel":
                    v[~in_run] = "" if v.dtype == object else 0.0
        for f, k, _, name in group:
            if _measure_name(f, k) in got:
                vals[name] = got[_measure_name(f, k)]
    mean = {}
    for fam, _, _, name in plan:
        if name not in vals or fam == "relstring":
            continue
        v = vals[name]
        mean[name] = _gm(v) if fam in ("gm_map", "gm_bpref") else \
            (float(v.mean()) if Q else float("nan"))
    names = tuple(p[3] for p in plan)
    return TrecEvaluation(vals, mean, out_queries, in_run, names, rn.tag,
                          tuple(p[0] for p in plan))
