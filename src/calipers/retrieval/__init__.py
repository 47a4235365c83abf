"""Per-query ranking and retrieval metrics (public namespace).

Flat arrays in (``y_true`` graded relevance, ``y_score``, ``query_id``), one
segment sort, per-query values and their mean out, as a :class:`QueryResult`.
See ``docs/ranking.md`` for the conventions (ties, gain, undefined queries,
``k`` beyond the list length) and the differences from trec_eval,
scikit-learn and ranx.

``precision_at_k``, ``recall_at_k`` and ``average_precision`` here are the
per-query versions; the top-level ``calipers.precision_at_k``,
``calipers.recall_at_k`` and ``calipers.average_precision_score`` are the
binary (one ranking) metrics.

:func:`evaluate` computes many trec_eval measures at once (from TREC files,
pytrec_eval-style dicts or flat arrays) on one segment sort; ``calipers trec``
prints its result.
"""

from ._measures import (
    QueryResult, average_precision, dcg, grouped_roc_auc, ndcg, precision_at_k, r_precision,
    recall_at_k, reciprocal_rank)
from ._evaluate import TrecEvaluation, evaluate
from ._io import Qrels, Run, TrecFormatError, read_qrels, read_run
from ._join import trec_arrays
from ._names import TREC_MEASURES, parse_trec_measures

__all__ = [
    "QueryResult",
    "Qrels",
    "Run",
    "TrecEvaluation",
    "TrecFormatError",
    "average_precision",
    "dcg",
    "evaluate",
    "grouped_roc_auc",
    "ndcg",
    "parse_trec_measures",
    "precision_at_k",
    "r_precision",
    "read_qrels",
    "read_run",
    "recall_at_k",
    "reciprocal_rank",
    "trec_arrays",
]
