"""TREC qrels and run files, and qrels and runs given as dicts or arrays.

Formats (whitespace-separated; blank lines and lines starting with ``#`` are
skipped; errors name the file and line):

* qrels: ``qid iteration docno relevance`` (relevance an integer; negative
  means judged non-relevant);
* run: ``qid Q0 docno rank score tag [anything]`` (the rank column is ignored,
  as trec_eval ignores it; extra trailing columns are allowed).

A document listed twice for one query (in qrels or in a run) is an error
naming both lines. :func:`_as_qrels` and :func:`_as_run` take a path, a
:class:`Qrels` or :class:`Run`, a ``{qid: {docid: value}}`` dict (pytrec_eval's
form) or three flat arrays.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._core.types import PathLike
from ._encode import _as_str, _id_codes, _pair_keys

__all__ = ["Qrels", "Run", "TrecFormatError", "read_qrels", "read_run"]


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


def _records(path, progress, min_cols, exact, keep):
    """Split the non-blank, non-comment lines: ``(columns, line numbers, first record)``.

    ``columns``: one list of strings per column index of ``keep`` (three: only the columns
    calipers uses; values are converted in bulk afterwards); ``first record``: every column
    of the first line read (None for an empty file). A line with the wrong number of
    columns raises at once. Only strings are kept per line (no list per line), so reading
    a file allocates no objects the cyclic garbage collector tracks.
    """
    report = _progress_callback(progress)
    size = os.path.getsize(path) if report is not None else 0
    cols = ([], [], [])
    add0, add1, add2 = (c.append for c in cols)
    j0, j1, j2 = keep
    lines = []
    first = None
    lineno = 0
    chars = 0
    want = "4 columns 'qid iteration docno relevance'" if exact else \
        "at least 6 columns 'qid Q0 docno rank score tag'"
    try:
        with open(path, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                parts = line.split()
                if not parts or parts[0].startswith("#"):
                    continue
                if len(parts) != min_cols if exact else len(parts) < min_cols:
                    raise TrecFormatError(f"{path}, line {lineno}: expected {want}, "
                                          f"got {len(parts)}")
                if first is None:
                    first = parts
                add0(parts[j0])
                add1(parts[j1])
                add2(parts[j2])
                lines.append(lineno)
                if report is not None:
                    chars += len(line)
                    if lineno % 100_000 == 0:
                        report(chars, size)
    except UnicodeDecodeError as exc:
        raise TrecFormatError(f"{path}, line {_bad_utf8_line(path)}: not UTF-8 text "
                              f"({exc.reason})") from None
    if report is not None:
        report(size, size)
    return cols, np.array(lines, dtype=np.int64), first


def _progress_callback(progress):
    """The callable of a reader's ``progress`` argument, or None (``False``, ``True`` or
    None: the library displays nothing itself; the command line passes a progress bar)."""
    if callable(progress):
        return progress
    if progress is None or isinstance(progress, (bool, np.bool_)):
        return None
    raise ValueError("progress must be a callable progress(characters_read, file_bytes) "
                     f"or a bool, got {progress!r}")


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


def read_qrels(path: PathLike, *, progress: bool = False) -> Qrels:
    """Read a qrels file ``qid iteration docno relevance`` into arrays.

    ``progress``: a callable ``progress(characters_read, file_bytes)``, called every
    100,000 lines and once, with ``(file_bytes, file_bytes)``, after the last (None or a
    bool: no progress reports; the library displays nothing itself).
    """
    path = os.fspath(path)
    (qid, docno, rel), lines, _ = _records(path, progress, 4, exact=True, keep=(0, 2, 3))
    rel = _numbers(rel, lines, path, 4, "relevance must be an integer", int)
    qid, docno = np.array(qid, dtype=str), np.array(docno, dtype=str)
    _check_duplicates(qid, docno, lines, path, "judgement")
    rel = rel.astype(np.int64)
    return Qrels(qid, docno, rel, path, _id_codes(qid, docno, rel=rel))


def read_run(path: PathLike, *, progress: bool = False) -> Run:
    """Read a run file ``qid Q0 docno rank score tag`` into arrays.

    ``progress``: as for :func:`read_qrels`.
    """
    path = os.fspath(path)
    (qid, docno, text), lines, first = _records(path, progress, 6, exact=False,
                                                keep=(0, 2, 4))
    score = _numbers(text, lines, path, 5, "score must be a number", float)
    if score.shape[0] and not np.all(np.isfinite(score)):
        i = int(np.argmax(~np.isfinite(score)))
        raise TrecFormatError(f"{path}, line {lines[i]}, column 5: score must be finite, "
                              f"got {text[i]!r}")
    qid, docno = np.array(qid, dtype=str), np.array(docno, dtype=str)
    _check_duplicates(qid, docno, lines, path, "document")
    score = score.astype(np.float64)
    return Run(qid, docno, score, first[5] if first is not None else "", path,
               _id_codes(qid, docno, score=score))


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
