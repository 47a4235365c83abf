"""Which of evaluate's equivalent paths run, and the slice sizes of its passes.

Every choice gives the same values (the tests compare them bit for bit by passing other
:class:`_Paths` to :func:`calipers.retrieval._evaluate._evaluate_by`); the defaults are
the fast ones (see ``benchmarks/trec_bundle.py``).
"""

from __future__ import annotations

from typing import NamedTuple


class _Paths(NamedTuple):
    # evaluate joins encoded qrels and runs by blocks where it can (False: the general join)
    block_join: bool = True
    # Sort each query's rows as one row of a padded (queries x longest block) array when the
    # padding stays small: many short sorts are several times faster than one long sort of
    # keys that carry the query too (False: the flat sort).
    row_sort: bool = True
    # Widest packed sort key (bits) of the join and the ranking sort (lower: the general
    # argsort paths).
    pack_bits: int = 64
    # Elements per slice when scanning a large sorted key array for neighbours.
    slice: int = 1 << 20
    # Rows of the block join's (queries x columns) key array sorted at a time: a slice stays
    # in cache.
    join_slice: int = 1 << 18
    # Queries per slice of _BlockScan's scan (its running vectors stay in cache).
    dense_slice: int = 1 << 14
    # Fewer queries: the flat lists are faster (the scan's calls per rank cost about as much
    # as the lists' passes over 500 queries).
    dense_min_queries: int = 512


_PATHS = _Paths()
