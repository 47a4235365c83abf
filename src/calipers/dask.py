"""calipers on Dask: states by slice, exact AUC and AP, the paired Poisson bootstrap, partition by partition.

Install with ``pip install calipers[dask]``. Dask is imported inside these
functions only, so ``import calipers`` never imports it.

Input: a ``dask.dataframe.DataFrame`` or any list of ``dask.delayed``
partitions, each a table whose columns are read with ``part[name]`` (a
pandas frame, or a ``dict`` of NumPy arrays). Every function builds a Dask
graph of per-partition tasks and a tree of merges and computes it once
(``compute=`` passes Dask options, ``scheduler=`` or a ``distributed.Client``
in the ambient context chooses where it runs). No task holds the rows of the
whole data: partitions hold their own rows, merges hold states, and the exact
AUC moves each row once, to the score range it belongs to.

Exactness: merged states are field-wise sums, so integer counts equal one
process bit for bit over any partitioning. AUC is computed from the integer
Mann-Whitney parts ``U2`` (twice the statistic), ``P`` and ``N`` of disjoint
score ranges, combined in score order as Python integers
(``U2 = sum_r U2_r + 2 sum_r P_r N_below_r``) and divided once:
the same double as :func:`calipers.roc_auc_score`. Average precision sums
each range's float terms exactly given the counts of the ranges above it
(:func:`average_precision_score`). The paired Poisson
bootstrap draws row ``j``'s count from (seed, replicate, global row id ``j``)
(:func:`calipers.bootstrap_counts`), so its AUC and
accuracy replicates equal
``paired_bootstrap_replicates(..., resampling="poisson")`` on the
concatenated rows bit for bit; log-loss replicates are float sums in another
order and agree to rounding (relative 1e-12).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ._bootstrap.resample import poisson_counts
from ._core.xp import warn_undefined
from ._kernels import ranges as R

__all__ = ["reduce_states", "roc_auc_score", "paired_bootstrap_replicates"]
__all__ += ["average_precision_score"]         # exact AP by score ranges


# --------------------------------------------------------------------------
# partitions
# --------------------------------------------------------------------------

def _partitions(data) -> list:
    """Delayed partitions of a Dask dataframe, or the given list of delayed objects."""
    if hasattr(data, "to_delayed"):
        return list(data.to_delayed())
    if isinstance(data, (list, tuple)):
        return list(data)
    raise ValueError("data must be a dask.dataframe.DataFrame or a list of dask.delayed "
                     f"partitions, got {type(data).__name__}")


def _col(part, name) -> np.ndarray:
    try:
        return np.asarray(part[name])
    except KeyError:
        raise ValueError(f"column {name!r} is not in the data") from None


def _tree(items: list, combine: Callable, split_every: int = 8):
    """Reduce delayed ``items`` pairwise-in-groups with the delayed ``combine``."""
    import dask

    if not items:
        raise ValueError("data has no partitions")
    f = dask.delayed(combine, pure=True)
    while len(items) > 1:
        items = [f(*items[i:i + split_every]) if len(items[i:i + split_every]) > 1
                 else items[i] for i in range(0, len(items), split_every)]
    return items[0]


def _compute(obj, compute: dict | None):
    import dask

    return dask.compute(obj, **(compute or {}))[0]


# --------------------------------------------------------------------------
# states by slice
# --------------------------------------------------------------------------

def _part_states(part, init, update, by):
    if by is None:
        return {None: update(init(), part)}
    keys = _col(part, by)
    out = {}
    for k in sorted(set(keys.tolist()), key=repr):
        sel = keys == k
        sub = {c: _col(part, c)[sel] for c in _columns(part)}
        out[k] = update(init(), sub)
    return out


def _columns(part):
    cols = getattr(part, "columns", None)
    return list(cols) if cols is not None else list(part.keys())


def _merge_dicts(*ds):
    out: dict = {}
    for d in ds:
        for k, s in d.items():
            out[k] = s if k not in out else out[k].merge(s)
    return out


def reduce_states(data, init: Callable[[], Any], update: Callable[[Any, Any], Any], *,
                  by: str | None = None, split_every: int = 8,
                  compute: dict | None = None) -> Any:
    """Mergeable states over the partitions of ``data``, by slice: ``map`` + tree ``merge``.

    ``init()`` returns an empty state (``calipers.ConfusionState.init(2)``,
    ...); ``update(state, part)`` adds one partition (a pandas frame or a
    dict of NumPy arrays; with ``by``, the rows of one slice) and returns the
    new state. ``by``: a column of slice keys; returns ``{key: state}``
    (keys sorted by ``repr``), else one state. Each partition becomes one
    task; states merge in a tree of ``split_every``. Integer counts equal one
    process's state bit for bit whatever the partitioning; a partition with
    no rows adds nothing. Errors raised by ``update`` (NaN scores, labels out
    of range) are raised here as on one machine.
    """
    import dask

    parts = _partitions(data)
    mapped = [dask.delayed(_part_states, pure=True)(p, init, update, by) for p in parts]
    out = _compute(_tree(mapped, _merge_dicts, split_every), compute)
    if by is None:
        return out.get(None, init()) if out else init()
    return dict(sorted(out.items(), key=lambda kv: repr(kv[0])))


# --------------------------------------------------------------------------
# exact AUC: a range split of the scores, integer parts, an ordered combine
# --------------------------------------------------------------------------

def _check_part(part, y_true, y_score):
    y = _col(part, y_true)
    s = _col(part, y_score).astype(np.float64)
    if y.shape != s.shape or y.ndim != 1:
        raise ValueError(f"{y_true} and {y_score} must be 1-D columns of one length")
    if y.size and not np.all(np.isfinite(s)):
        raise ValueError(f"{y_score} must be finite (no NaN or inf)")
    if y.size and not np.all((y == 0) | (y == 1)):
        raise ValueError(f"{y_true} must hold binary labels 0/1")
    return y.astype(np.int64), s


def _sample(part, y_true, y_score, k):
    _, s = _check_part(part, y_true, y_score)
    if s.size == 0:
        return s
    return np.quantile(s, np.linspace(0, 1, k + 1), method="inverted_cdf")


def _cuts(*samples):
    s = np.concatenate([x for x in samples if x.size] or [np.empty(0)])
    if s.size == 0:
        return s
    return np.unique(np.quantile(s, np.linspace(0, 1, len(samples) + 1)[1:-1],
                                 method="inverted_cdf"))


def _split(part, cuts, cols, n_ranges):
    """The partition's rows cut into score ranges (a range id is a function of the score)."""
    arrays = {name: np.asarray(a) for name, a in cols(part).items()}
    r = np.searchsorted(cuts, arrays["score"], side="left")
    return [{k: v[r == i] for k, v in arrays.items()} for i in range(n_ranges)]


def _pick(split, i):
    return split[i]


def _u2_parts(s, y, w):
    """``(U2, P, N)`` of rows with scores ``s``, labels ``y`` and integer weights ``w``.

    Python integers: ``U2 = sum_pos w (2 N_below + N_tied)``.
    """
    if s.size == 0:
        return 0, 0, 0
    order = np.argsort(s, kind="stable")
    s, y, w = s[order], y[order], w[order]
    _, start = np.unique(s, return_index=True)
    pos = np.add.reduceat(w * y, start).astype(object)
    neg = np.add.reduceat(w * (1 - y), start).astype(object)
    below = np.concatenate([[0], np.cumsum(neg)[:-1]]).astype(object)
    u2 = int(np.sum(pos * (2 * below + neg))) if pos.size else 0
    return u2, int(np.sum(pos)), int(np.sum(neg))


def _range_rows(parts, y_true, score, extra, k):
    """Delayed score ranges: each a dict of the rows (all partitions) whose score falls in it."""
    import dask

    d = dask.delayed
    samples = [d(_sample, pure=True)(p, y_true, score, k) for p in parts]
    cuts = d(_cuts, pure=True)(*samples)
    n_ranges = len(parts)

    def cols(part, y_true=y_true, score=score, extra=extra):
        y, s = _check_part(part, y_true, score)
        out = {"score": s, "y": y}
        for name, fn in extra.items():  # e.g. the global row ids
            out[name] = fn(part)
        return out

    splits = [d(_split, pure=True)(p, cuts, cols, n_ranges) for p in parts]
    ranges = []
    for i in range(n_ranges):
        pieces = [d(_pick, pure=True)(sp, i) for sp in splits]
        ranges.append(d(_concat, pure=True)(*pieces))
    return ranges


def _concat(*pieces):
    return {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}


def _combine_parts(*parts):
    """Ordered combine of ``(U2_r, P_r, N_r)`` of score ranges given low to high."""
    u2 = p = n = 0
    for u, pr, nr in parts:
        u2 += u + 2 * pr * n
        p += pr
        n += nr
    return u2, p, n


def _auc(u2, p, n):
    return math.nan if p == 0 or n == 0 else u2 / (2 * p * n)


def _weights(part, sample_weight, n):
    if sample_weight is None:
        return None
    w = _col(part, sample_weight)
    if w.shape != (n,):
        raise ValueError(f"{sample_weight} must be a 1-D column of the length of the labels")
    if w.size and (w.dtype.kind not in "iub" and not (
            w.dtype.kind == "f" and np.all(np.isfinite(w)) and np.all(w == np.round(w)))):
        raise ValueError(f"{sample_weight} must hold non-negative integer weights (the exact "
                         f"distributed sums count rows)")
    if w.size and np.any(w < 0):
        raise ValueError(f"{sample_weight} must hold non-negative integer weights")
    return w.astype(np.int64)


def _part_tables(part, y_true, y_score, sample_weight, cuts, n_ranges):
    """One partition's score tables, one per range (low to high)."""
    y, s = _check_part(part, y_true, y_score)
    w = _weights(part, sample_weight, y.shape[0])
    return R.split_table(R.score_table(s, y, w), cuts, n_ranges)


def _range_table(i, *splits):
    return R.merge_tables(*[sp[i] for sp in splits])


def _range_tables(parts, y_true, y_score, sample_weight):
    """Delayed score tables of the score ranges, low to high, and the number of rows."""
    import dask

    d = dask.delayed
    samples = [d(_sample, pure=True)(p, y_true, y_score, 16) for p in parts]
    cuts = d(_cuts, pure=True)(*samples)
    splits = [d(_part_tables, pure=True)(p, y_true, y_score, sample_weight, cuts, len(parts))
              for p in parts]
    return [d(_range_table, pure=True)(i, *splits) for i in range(len(parts))], samples


def _n_sample_points(*samples):
    return sum(int(s.size) for s in samples)


def _undefined(value: float, what: str) -> float:
    if math.isnan(value):
        warn_undefined(what)
    return value


_AUC_UNDEFINED = ("Only one class is present in y_true. ROC AUC score is not defined in that "
                  "case: returning NaN")
_AP_UNDEFINED = ("No positive class found in y_true: average precision is undefined; "
                 "returning NaN")


def roc_auc_score(data, y_true: str, y_score: str, *, sample_weight: str | None = None,
                  compute: dict | None = None) -> float:
    """Exact ROC AUC (Mann-Whitney, ties 1/2) of the columns ``y_true``, ``y_score`` of ``data``.

    ``data``: a Dask dataframe or a list of delayed partitions. The scores are
    cut into as many ranges as there are partitions at quantiles of
    per-partition samples; each partition reduces its rows to a table of
    distinct scores with their positive and negative counts, cut at the same
    scores (a range is a function of the score, so tied scores never straddle
    two ranges); the tables of a range merge, each range gives its integer
    ``(U2, P, N)`` and the ranges combine in score order in Python integers
    (never wrapping). ``sample_weight``: a column of non-negative integer
    weights (repetition counts), or ``None``.

    Returns a float, the same double as :func:`calipers.roc_auc_score` on
    the concatenated rows (``U2 / (2 P N)`` rounded once); NaN with an
    :class:`calipers.UndefinedMetricWarning` when one class is absent.
    Raises ``ValueError`` for labels outside {0, 1}, non-finite scores,
    non-integer or negative weights, or no rows at all.
    """
    import dask

    parts = _partitions(data)
    tables, samples = _range_tables(parts, y_true, y_score, sample_weight)
    f = dask.delayed(R.table_u2, pure=True)
    u2, n_rows = _compute((dask.delayed(R.combine_u2, pure=True)([f(t) for t in tables]),
                           dask.delayed(_n_sample_points, pure=True)(*samples)), compute)
    if n_rows == 0:
        raise ValueError(f"{y_true} is empty; at least one sample is required")
    return _undefined(R.auc_of(*u2), _AUC_UNDEFINED)


def _precision_sum(table, offsets, i):
    return R.table_precision_sum(table, *offsets[i])


def _add(*xs):
    return sum(xs)


def _offsets(*totals):
    return R.offsets_above(totals)


def average_precision_score(data, y_true: str, y_score: str, *,
                            sample_weight: str | None = None,
                            compute: dict | None = None) -> float:
    """Average precision (step sum, ties together) of the columns of ``data``, by score ranges.

    ``AP = sum_j (R_j - R_{j-1}) P_j`` over the distinct scores in decreasing
    order, tied scores entering together (scikit-learn's definition, as
    :func:`calipers.average_precision_score`). Rows are reduced to score
    tables per range as in :func:`roc_auc_score` (ties never straddle a cut).
    Two passes over the range tables: the first gives each range's positive
    and negative counts, hence the counts of the ranges above it; the second
    gives each range's sum of ``n1 * (tp / (tp + fp))`` over its tie groups
    holding ``n1`` positives (``tp``, ``fp``: counts scored at least the
    group's score), each term a float64 as on one machine, summed *exactly*
    (an integer multiple of ``2**-1126``). The ranges' integers add exactly
    and ``sum / P`` is rounded once.

    ``sample_weight``: a column of non-negative integer weights, or ``None``.

    Returns a float: the same double for every partitioning and every set of
    cuts, within ``2**-52`` (relative) of the exact rational AP. The
    one-machine :func:`calipers.average_precision_score` adds the same terms
    in floating point, so the two agree to rounding (the tests hold
    them to relative 1e-13; often they are the same double). NaN with an
    :class:`calipers.UndefinedMetricWarning` when there is no positive
    (scikit-learn returns 0.0). Raises ``ValueError`` as
    :func:`roc_auc_score`.
    """
    import dask

    d = dask.delayed
    parts = _partitions(data)
    tables, samples = _range_tables(parts, y_true, y_score, sample_weight)
    totals = [d(R.table_totals, pure=True)(t) for t in tables]
    offsets = d(_offsets, pure=True)(*totals)
    sums = [d(_precision_sum, pure=True)(t, offsets, i) for i, t in enumerate(tables)]
    total, counts, n_rows = _compute(
        (_tree(sums, _add), totals,
         d(_n_sample_points, pure=True)(*samples)), compute)
    if n_rows == 0:
        raise ValueError(f"{y_true} is empty; at least one sample is required")
    P = sum(p for p, _ in counts)
    return _undefined(R.ratio_of_sum(total, P), _AP_UNDEFINED)


# --------------------------------------------------------------------------
# the paired Poisson bootstrap by global row id
# --------------------------------------------------------------------------

_METRICS = ("roc_auc", "accuracy", "log_loss")


def _counts(seed, n_resamples, ids):
    """``(n_resamples, len(ids))`` Poisson counts of the rows: one broadcast hash."""
    return poisson_counts(seed, np.arange(n_resamples), ids) \
        if ids.size else np.zeros((n_resamples, 0), np.int64)


def _range_replicates(r, seed, n_resamples):
    c = _counts(seed, n_resamples, r["row_id"])
    return [_u2_parts(r["score"], r["y"], c[b]) for b in range(n_resamples)]


def _combine_replicates(*ranges):
    return [_combine_parts(*[rg[b] for rg in ranges]) for b in range(len(ranges[0]))]


def _row_offsets(parts):
    import dask

    lens = dask.compute(*[dask.delayed(_nrows, pure=True)(p) for p in parts])
    return np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)


def _nrows(p):
    return len(p[next(iter(_columns(p)))]) if _columns(p) else 0


def _ids(part, row_id, offset):
    if row_id is not None:
        ids = _col(part, row_id)
        if ids.dtype.kind not in "iu" or (ids.size and ids.min() < 0):
            raise ValueError(f"{row_id} must hold non-negative integer row ids")
        return ids.astype(np.int64)
    return np.arange(offset, offset + _nrows(part), dtype=np.int64)


def _sums(part, y_true, a, b, ids, metric, seed, n_resamples):
    """Per-partition replicate sums ``(value_a, value_b, weight)`` of shape (B,) each."""
    y = _col(part, y_true)
    c = _counts(seed, n_resamples, ids)
    if metric == "accuracy":
        pa, pb = _col(part, a), _col(part, b)
        return ((c * (pa == y)).sum(1), (c * (pb == y)).sum(1), c.sum(1))
    y01 = y.astype(np.float64)
    if y.size and not np.all((y == 0) | (y == 1)):
        raise ValueError(f"{y_true} must hold binary labels 0/1")
    la, lb = _log_loss_rows(y01, _col(part, a), a), _log_loss_rows(y01, _col(part, b), b)
    cf = c.astype(np.float64)
    return (cf @ la, cf @ lb, c.sum(1))


def _log_loss_rows(y01, p, name):
    """Per-row log loss as the one-shot function: clipped at the probabilities' epsilon."""
    from . import _probability as _prob

    p = np.asarray(p)
    if p.size and (not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1))):
        raise ValueError(f"{name} must hold probabilities in [0, 1] (no NaN)")
    return _prob.binary_log_loss_rows_widened(y01, p, np)


def _add_sums(*xs):
    return tuple(sum(x[i] for x in xs) for i in range(3))


def paired_bootstrap_replicates(data, metric: str, y_true: str, y_score_a: str, y_score_b: str,
                                *, n_resamples: int = 1000, seed: int = 0,
                                row_id: str | None = None,
                                compute: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Replicates ``(dist_a, dist_b)`` of the paired Poisson bootstrap over Dask partitions.

    ``metric``: ``"roc_auc"``, ``"accuracy"`` (``y_score_*`` are predicted
    labels) or ``"log_loss"`` (probabilities of class 1). Row ``j``'s count in
    replicate ``b`` is ``poisson_counts(seed, b, j)`` with ``j`` its global row
    id: the column ``row_id`` (non-negative integers, unique), or the row's
    position in the concatenated partitions (one extra pass counts the rows).
    Each partition (for AUC: each score range, per model) sums its replicate
    statistics; sums merge in a tree. Equals
    ``calipers.paired_bootstrap_replicates(metric, ..., resampling="poisson",
    seed=seed)`` on the concatenated rows: bit for bit for AUC and accuracy
    (integer parts, one division), to rounding for log loss. Float64 arrays of
    shape ``(n_resamples,)``; NaN where a replicate is undefined (no rows
    drawn, or one class for AUC).
    """
    import dask

    if metric not in _METRICS:
        raise ValueError(f"metric must be one of {list(_METRICS)}, got {metric!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    parts = _partitions(data)
    offsets = _row_offsets(parts) if row_id is None else [None] * len(parts)
    d = dask.delayed
    if metric == "roc_auc":
        out = []
        for col in (y_score_a, y_score_b):
            ranges = _range_rows(
                [d(_with_ids, pure=True)(p, row_id, off) for p, off in zip(parts, offsets)],
                y_true, col, {"row_id": _take_ids}, 16)
            reps = [d(_range_replicates, pure=True)(r, seed, n_resamples) for r in ranges]
            out.append(d(_combine_replicates, pure=True)(*reps))
        ra, rb = _compute(out, compute)
        return (np.array([_auc(*t) for t in ra], dtype=np.float64),
                np.array([_auc(*t) for t in rb], dtype=np.float64))
    sums = [d(_sums, pure=True)(p, y_true, y_score_a, y_score_b,
                                d(_ids, pure=True)(p, row_id, off), metric, seed, n_resamples)
            for p, off in zip(parts, offsets)]
    sa, sb, w = _compute(_tree(sums, _add_sums), compute)
    with np.errstate(invalid="ignore", divide="ignore"):
        wf = np.asarray(w, dtype=np.float64)
        da = np.where(w > 0, np.asarray(sa, np.float64) / np.where(w > 0, wf, 1.0), np.nan)
        db = np.where(w > 0, np.asarray(sb, np.float64) / np.where(w > 0, wf, 1.0), np.nan)
    return da, db


def _with_ids(part, row_id, offset):
    cols = {c: _col(part, c) for c in _columns(part)}
    cols["__row_id__"] = _ids(part, row_id, offset)
    return cols


def _take_ids(part):
    return part["__row_id__"]
