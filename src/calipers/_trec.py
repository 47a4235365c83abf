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
from dataclasses import dataclass

import numpy as np

__all__ = ["Qrels", "Run", "read_qrels", "read_run", "trec_arrays", "TrecFormatError"]


class TrecFormatError(ValueError):
    """A malformed qrels or run file; the message names the file and line."""


@dataclass(frozen=True)
class Qrels:
    qid: np.ndarray      # str (m,)
    docno: np.ndarray    # str (m,)
    rel: np.ndarray      # int64 (m,)
    path: str = ""


@dataclass(frozen=True)
class Run:
    qid: np.ndarray      # str (n,)
    docno: np.ndarray    # str (n,)
    score: np.ndarray    # float64 as written (n,)
    tag: str = ""
    path: str = ""


def _records(path, progress, min_cols, exact):
    """Split the non-blank, non-comment lines: ``(columns per line, line numbers)``.

    Only the columns calipers uses are kept (as strings); values are converted
    in bulk afterwards. A line with the wrong number of columns raises at once.
    """
    size = os.path.getsize(path)
    bar = None
    if progress and size > 20_000_000:
        try:
            from tqdm import tqdm

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
        raise TrecFormatError(f"{path}, after line {lineno}: not UTF-8 text ({exc.reason})") \
            from None
    finally:
        if gc_was_enabled:
            gc.enable()
        if bar is not None:
            bar.close()
    return rows, np.array(lines, dtype=np.int64)


def _column(rows, j):
    return np.array([r[j] for r in rows], dtype=str)


def _check_duplicates(qid, docno, lines, path, what):
    if qid.shape[0] == 0:
        return
    key = np.char.add(np.char.add(qid.astype(str), "\x00"), docno.astype(str))
    order = np.argsort(key, kind="stable")
    ks = key[order]
    dup = np.nonzero(ks[1:] == ks[:-1])[0]
    if dup.shape[0]:
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
    return Qrels(qid, docno, rel.astype(np.int64), path)


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
    return Run(qid, docno, score.astype(np.float64), rows[0][5] if rows else "", path)


@dataclass(frozen=True)
class TrecArrays:
    """Flat rows for :class:`calipers._retrieval._Ranking` (one per judged or retrieved doc)."""

    query_id: np.ndarray   # int64 codes 0..Q-1
    queries: np.ndarray    # str (Q,) query names, sorted
    y_true: np.ndarray     # int64 relevance (0 for unjudged)
    y_score: np.ndarray    # float32/float64 score (0 where not retrieved)
    doc_id: np.ndarray     # int64: docno rank in string order (ties: larger first)
    retrieved: np.ndarray  # bool
    in_run: np.ndarray     # bool (Q,): the query appears in the run


def trec_arrays(qrels: Qrels, run: Run, *, complete_qrels=False, float32_scores=True,
                queries=None) -> TrecArrays:
    """Join a run with its qrels as trec_eval does (see module docstring).

    ``queries`` (sorted str array) overrides the query set (used to compare two
    runs on the same queries); queries without run rows then score 0.
    """
    qrel_queries = np.unique(qrels.qid)
    run_queries = np.unique(run.qid)
    if queries is None:
        queries = qrel_queries if complete_qrels else np.intersect1d(qrel_queries, run_queries)
    keep_run = np.isin(run.qid, queries)
    rq, rd, rs = run.qid[keep_run], run.docno[keep_run], run.score[keep_run]
    keep_q = np.isin(qrels.qid, queries)
    jq, jd, jr = qrels.qid[keep_q], qrels.docno[keep_q], qrels.rel[keep_q]
    # Match run rows to judgements by (qid, docno) through one sorted key array.
    sep = "\x00"
    jkey = np.char.add(np.char.add(jq, sep), jd)
    rkey = np.char.add(np.char.add(rq, sep), rd)
    jo = np.argsort(jkey)
    jks = jkey[jo]
    pos = np.searchsorted(jks, rkey)
    posc = np.minimum(pos, max(jks.shape[0] - 1, 0))
    hit = (pos < jks.shape[0]) & (jks[posc] == rkey) if jks.shape[0] else \
        np.zeros(rkey.shape[0], dtype=bool)
    rel_run = np.where(hit, jr[jo][posc] if jks.shape[0] else 0, 0).astype(np.int64)
    judged_hit = np.zeros(jks.shape[0], dtype=bool)
    judged_hit[jo[posc[hit]]] = True
    miss = ~judged_hit                                  # judged, not retrieved
    qid = np.concatenate([rq, jq[miss]])
    docs = np.concatenate([rd, jd[miss]])
    sdt = np.float32 if float32_scores else np.float64
    score = np.concatenate([rs.astype(sdt), np.zeros(int(miss.sum()), dtype=sdt)])
    y = np.concatenate([rel_run, jr[miss]])
    retrieved = np.concatenate([np.ones(rq.shape[0], bool), np.zeros(int(miss.sum()), bool)])
    codes = np.searchsorted(queries, qid).astype(np.int64)
    _, doc_id = np.unique(docs, return_inverse=True)
    return TrecArrays(codes, queries, y, score, doc_id.reshape(-1).astype(np.int64),
                      retrieved, np.isin(queries, run_queries))
