"""trec_eval's measures on a run and its qrels: :func:`evaluate` and its result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._core import validation as V
from .._core.results import result_type
from ._io import _as_qrels, _as_run
from ._join import _block_ranking, _blocks_of, _join, _ranked_of
from ._names import _AVERAGE_TIES, _measure_name, _plan
from ._paths import _PATHS
from ._values import _average_ties_values, _gm, _trec_values

__all__ = ["TrecEvaluation", "evaluate"]


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
    query_ids: Any
    in_run: Any
    measures: tuple = ()
    run_id: str = ""
    families: tuple = ()


def evaluate(qrels: Any, run: Any, measures: str | Sequence[str] | None = None, *,
             relevance_level: float | None = 1, ties: str = "trec_eval",
             complete_qrels: bool = False, float32_scores: bool = True,
             queries: Sequence[str] | None = None, run_id: str = "") -> TrecEvaluation:
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
    return _evaluate_by(_PATHS, qrels, run, measures, relevance_level=relevance_level,
                        ties=ties, complete_qrels=complete_qrels,
                        float32_scores=float32_scores, queries=queries, run_id=run_id)


def _evaluate_by(paths, qrels, run, measures=None, *, relevance_level=1, ties="trec_eval",
                 complete_qrels=False, float32_scores=True, queries=None, run_id=""):
    """:func:`evaluate` through the paths ``paths`` (:class:`_Paths`: every choice gives
    the same values; the tests compare them)."""
    plan = _plan(measures)
    ties = V.choice(ties, "ties", ("average", "trec_eval"))
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
    if ties == "trec_eval" and float32_scores and paths.block_join:
        qb, rb = _blocks_of(qr), _blocks_of(rn)
        if qb is not None and rb is not None:
            blocked = _block_ranking(qb, rb, complete_qrels, queries, paths)
    if blocked is None:
        ta = _join(qr, rn, complete_qrels, float32_scores, queries, ties == "trec_eval",
                   ties == "trec_eval", paths)
        in_run, out_queries = np.asarray(ta.in_run), ta.queries
        rk = _ranked_of(ta, paths) if ties == "trec_eval" else None
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
            got = _trec_values(rk, pairs, relevance_level=level, paths=paths)
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
