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

from ._results import result_type

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


# --------------------------------------------------------------------------
# trec_eval measures on one segment sort
# --------------------------------------------------------------------------

TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
# trec_eval's printing order; parameterised measures take cut-offs.
_ORDER = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "Rprec",
          "recip_rank", "P", "recall", "ndcg", "ndcg_cut")
_PARAM = frozenset({"P", "recall", "ndcg_cut"})
COUNT_MEASURES = frozenset({"num_ret", "num_rel", "num_rel_ret"})


def parse_trec_measures(specs=None):
    """trec_eval measure specs -> ``[(family, cut-off or None), ...]`` in trec_eval's order.

    ``specs``: names as ``trec_eval -m`` takes them: ``"map"``, ``"P.5,10"``,
    ``"ndcg_cut"`` (default cut-offs 5, 10, 15, 20, 30, 100, 200, 500, 1000),
    ``"all_trec"`` (every supported measure; also the default for ``None``).
    Raises ``ValueError`` naming the spec for an unknown measure, bad cut-offs,
    or parameters on a measure that takes none.
    """
    if isinstance(specs, str):
        specs = [specs]
    if not specs:
        specs = ["all_trec"]
    want = {}
    for one in specs:
        name, _, params = str(one).partition(".")
        if name == "all_trec":
            for fam in _ORDER:
                want.setdefault(fam, set()).update(TREC_CUTOFFS if fam in _PARAM else {None})
            continue
        if name not in _ORDER:
            raise ValueError(f"{one}: unknown measure {name!r}; supported: "
                             f"{', '.join(_ORDER)}, all_trec")
        if name in _PARAM:
            if params:
                try:
                    ks = {int(v) for v in params.split(",") if v != ""}
                except ValueError:
                    raise ValueError(f"{one}: cut-offs must be positive integers") from None
                if not ks or min(ks) <= 0:
                    raise ValueError(f"{one}: cut-offs must be positive integers")
            else:
                ks = set(TREC_CUTOFFS)
            want.setdefault(name, set()).update(ks)
        else:
            if params:
                raise ValueError(f"{one}: measure {name} takes no parameters")
            want.setdefault(name, set()).add(None)
    out = []
    for fam in _ORDER:
        if fam in want:
            for k in sorted(want[fam], key=lambda v: -1 if v is None else v):
                out.append((fam, k))
    return out


def _measure_name(fam, k):
    return fam if k is None else f"{fam}_{k}"


def _as_qrels(qrels):
    if isinstance(qrels, Qrels):
        return qrels
    if isinstance(qrels, (str, os.PathLike)):
        return read_qrels(qrels)
    if isinstance(qrels, dict):
        q, d, r = _from_nested(qrels, "qrels")
    else:
        q, d, r = _triple(qrels, "qrels", "(query id, doc id, relevance)")
    r = np.asarray(r)
    if r.dtype.kind == "b" or r.dtype.kind not in "iuf" or \
            (r.dtype.kind == "f" and not np.all(np.isfinite(r) & (r == np.round(r)))):
        raise ValueError("qrels: relevance must be integers (trec_eval reads integers)")
    lines = np.arange(1, q.shape[0] + 1)
    _check_duplicates(q, d, lines, "qrels", "judgement")
    return Qrels(q, d, r.astype(np.int64), "")


def _as_run(run, run_id):
    if isinstance(run, Run):
        return run
    if isinstance(run, (str, os.PathLike)):
        return read_run(run)
    if isinstance(run, dict):
        q, d, s = _from_nested(run, "run")
    else:
        q, d, s = _triple(run, "run", "(query id, doc id, score)")
    s = np.asarray(s)
    if s.dtype.kind not in "iuf" or s.dtype.kind == "b":
        raise ValueError(f"run: scores must be numbers, got dtype {s.dtype}")
    s = s.astype(np.float64)
    if not np.all(np.isfinite(s)):
        raise ValueError("run: scores must be finite (no NaN or inf)")
    _check_duplicates(q, d, np.arange(1, q.shape[0] + 1), "run", "document")
    return Run(q, d, s, run_id, "")


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
    return q.astype(str), d.astype(str), v


def _per_query_measures(ta, measures, *, relevance_level, ties):
    """Per-query values (NumPy float64, trec_eval's: 0 where undefined) from one sort."""
    from ._retrieval import _Ranking

    ctx = _Ranking(ta.y_true, ta.y_score, ta.query_id, doc_id=ta.doc_id,
                   retrieved=ta.retrieved, ties=ties, gain="linear",
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
        else:  # ndcg, ndcg_cut (parse_trec_measures admits no other)
            ideal = np.asarray(ctx.idcg(k))
            v = np.asarray(ctx.dcg(k)) / np.where(ideal > 0, ideal, 1.0)
        v = np.asarray(v, dtype=np.float64)
        # trec_eval scores queries without relevant documents 0 and averages them in.
        res[_measure_name(fam, k)] = np.where(np.isfinite(v), v, 0.0)
    return res


@result_type(meta=("measures", "run_id"))
class TrecEvaluation:
    """trec_eval measures per query and their means (:func:`evaluate`).

    Attributes
    ----------
    values : dict str -> float64 array (Q,)
        Per-query value of each measure, keyed by trec_eval's printed name
        (``"map"``, ``"P_10"``, ``"ndcg_cut_10"``, ``"num_rel"``), in
        ``query_ids`` order; 0 for a query without relevant documents (trec_eval).
    mean : dict str -> float
        Mean over the ``Q`` queries (trec_eval's ``all`` line, except for the
        counts ``num_ret``, ``num_rel``, ``num_rel_ret``, whose ``all`` is the
        sum); NaN when there is no query.
    query_ids : str array (Q,)
        The evaluated queries, sorted as strings.
    in_run : bool array (Q,)
        Whether the query has rows in the run (False only with
        ``complete_qrels`` or ``queries``; trec_eval ``-q -c`` does not
        print those queries).
    measures : tuple of str
        The measure names in trec_eval's order, ``"runid"`` and ``"num_q"``
        included when asked for (they have no per-query values: see
        ``run_id`` and ``query_ids``).
    run_id : str
        The run's tag (sixth column of the first run line).
    """

    values: dict
    mean: dict
    query_ids: object
    in_run: object
    measures: tuple = ()
    run_id: str = ""


def evaluate(qrels, run, measures=None, *, relevance_level=1, ties="trec_eval",
             complete_qrels=False, float32_scores=True, queries=None, run_id=""):
    """Evaluate a run against qrels with trec_eval 9.0.8's measures and conventions.

    Every measure comes from one segment sort of the joined rows (the join of
    :func:`trec_arrays`: unjudged documents non-relevant, judged documents
    the run did not return counted in the ideal ranking and in R).

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
        trec_eval names: ``map``, ``Rprec``, ``recip_rank``, ``P[.k,...]``,
        ``recall[.k,...]``, ``ndcg``, ``ndcg_cut[.k,...]``, ``num_ret``,
        ``num_rel``, ``num_rel_ret``, ``num_q``, ``runid``, ``all_trec``
        (default: all of them; default cut-offs 5, 10, 15, 20, 30, 100, 200,
        500, 1000).
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
        Unknown measure or bad cut-off; a document judged or retrieved twice
        for one query; non-integer relevance; non-finite scores; an unknown
        ``ties``. :class:`TrecFormatError` (a ``ValueError``) for malformed
        files, naming the file and line; ``OSError`` for unreadable files.

    Notes
    -----
    NumPy only (the TREC join works on strings); for arrays on other backends
    use the per-metric functions of :mod:`calipers.retrieval`. Same values as
    ``calipers trec``, which prints this result; reproduces trec_eval 9.0.8's
    test outputs.
    """
    parsed = parse_trec_measures(measures)
    if ties not in ("average", "trec_eval"):
        raise ValueError(f"ties must be 'average' or 'trec_eval', got {ties!r}")
    qr = _as_qrels(qrels)
    rn = _as_run(run, run_id)
    if queries is not None:
        queries = np.unique(np.asarray(queries).astype(str))
    ta = trec_arrays(qr, rn, complete_qrels=complete_qrels, float32_scores=float32_scores,
                     queries=queries)
    Q = int(ta.queries.shape[0])
    vals = _per_query_measures(ta, parsed, relevance_level=relevance_level, ties=ties) if Q \
        else {_measure_name(f, k): np.zeros(0) for f, k in parsed if f not in ("runid", "num_q")}
    mean = {name: (float(v.mean()) if Q else float("nan")) for name, v in vals.items()}
    names = tuple(_measure_name(f, k) for f, k in parsed)
    return TrecEvaluation(vals, mean, ta.queries, np.asarray(ta.in_run), names, rn.tag)
