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

from ._bootstrap.resample import multinomial_counts, multinomial_totals, poisson_counts
from ._core import validation as V
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

class _Where:
    """Where a partition's column sits, for the one-shot error raised on its values."""

    def __init__(self, index, column):
        self.index, self.column = index, column

    def __call__(self, arg, check, *args, **kw):
        """``check(*args, **kw)`` (a rule of ``calipers._core.validation``, the one-shot
        function's own): its ``ValueError`` with the column and the partition added."""
        try:
            return check(*args, **kw)
        except ValueError as e:
            raise ValueError(f"{e} (calipers.dask: {arg} is column {self.column!r}; the "
                             f"element is counted within partition {self.index})") from None


def _binary01(y, name, where):
    """Labels 0/1 by the one-shot rule (:func:`calipers._core.validation.binary_labels`).

    The {-1, 1} coding that the one-shot functions infer is not inferred partition by
    partition (a partition of -1 and 1 beside one of 0 and 1 would read two codings as
    one): a -1 is a ``ValueError`` here.
    """
    if y.size == 0:
        return y.astype(np.int64)
    try:
        where("y_true", V.binary_labels, y, np, name="y_true", pos_label_hint=False)
    except ValueError as e:
        raise ValueError(f"{e}; calipers.dask takes labels 0/1 or booleans only (the "
                         "{-1, 1} coding is not inferred partition by partition)") from None
    if y.dtype.kind != "b" and np.any(y == -1):
        i = int(np.argmax(y == -1))
        raise ValueError(f"y_true must contain only 0 and 1 in calipers.dask (the {{-1, 1}} "
                         f"coding is not inferred per partition); element {i} is -1 "
                         f"(column {where.column!r}, partition {where.index})")
    return (y == 1).astype(np.int64)


def _finite_scores(s, name, where):
    s = np.asarray(s)
    where(name, V.check_real_values, name, s, np, "scores")
    s = s.astype(np.float64)
    where(name, V.check_finite, name, s, np)
    return s


def _check_part(part, y_true, y_score, name="y_score", index=0):
    y = _col(part, y_true)
    s = _col(part, y_score)
    if y.shape != s.shape or y.ndim != 1:
        raise ValueError(f"{y_true} and {y_score} must be 1-D columns of one length")
    y = _binary01(y, "y_true", _Where(index, y_true))
    return y, _finite_scores(s, name, _Where(index, y_score))


def _sample(part, y_true, y_score, k, name="y_score", index=0):
    _, s = _check_part(part, y_true, y_score, name, index)
    if s.size == 0:
        return s
    return np.quantile(s, np.linspace(0, 1, k + 1), method="inverted_cdf")


def _cuts(*samples):
    s = np.concatenate([x for x in samples if x.size] or [np.empty(0)])
    if s.size == 0:
        return s
    return np.unique(np.quantile(s, np.linspace(0, 1, len(samples) + 1)[1:-1],
                                 method="inverted_cdf"))


def _split(part, cuts, cols, n_ranges, index):
    """The partition's rows cut into score ranges (a range id is a function of the score)."""
    arrays = {name: np.asarray(a) for name, a in cols(part, index).items()}
    r = np.searchsorted(cuts, arrays["score"], side="left")
    return [{k: v[r == i] for k, v in arrays.items()} for i in range(n_ranges)]


def _pick(split, i):
    return split[i]


def _range_rows(parts, y_true, score, extra, k, name="y_score"):
    """Delayed score ranges: each a dict of the rows (all partitions) whose score falls in it.

    ``name``: the one-shot function's argument for the scores (in its errors).
    """
    import dask

    d = dask.delayed
    samples = [d(_sample, pure=True)(p, y_true, score, k, name, i) for i, p in enumerate(parts)]
    cuts = d(_cuts, pure=True)(*samples)
    n_ranges = len(parts)

    def cols(part, index, y_true=y_true, score=score, extra=extra, name=name):
        y, s = _check_part(part, y_true, score, name, index)
        out = {"score": s, "y": y.astype(np.int8)}     # labels 0/1: a byte a row moved
        for key, fn in extra.items():  # e.g. the global row ids
            out[key] = fn(part)
        return out

    splits = [d(_split, pure=True)(p, cuts, cols, n_ranges, i) for i, p in enumerate(parts)]
    ranges = []
    for i in range(n_ranges):
        pieces = [d(_pick, pure=True)(sp, i) for sp in splits]
        ranges.append(d(_concat, pure=True)(*pieces))
    return ranges


def _concat(*pieces):
    return {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}


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


def _part_tables(part, y_true, y_score, sample_weight, cuts, n_ranges, index=0):
    """One partition's score tables, one per range (low to high)."""
    y, s = _check_part(part, y_true, y_score, index=index)
    w = _weights(part, sample_weight, y.shape[0])
    return R.split_table(R.score_table(s, y, w), cuts, n_ranges)


def _range_table(i, *splits):
    return R.merge_tables(*[sp[i] for sp in splits])


def _range_tables(parts, y_true, y_score, sample_weight):
    """Delayed score tables of the score ranges, low to high, and the number of rows."""
    import dask

    d = dask.delayed
    samples = [d(_sample, pure=True)(p, y_true, y_score, 16, index=i)
               for i, p in enumerate(parts)]
    cuts = d(_cuts, pure=True)(*samples)
    splits = [d(_part_tables, pure=True)(p, y_true, y_score, sample_weight, cuts, len(parts),
                                         index=i)
              for i, p in enumerate(parts)]
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
# the paired bootstrap: Poisson by global row id, or multinomial in two passes
# --------------------------------------------------------------------------

_METRICS = ("roc_auc", "accuracy", "log_loss")


class _Draw:
    """How a set of rows draws its ``(B, rows)`` counts: Poisson by global row id, or
    (``n`` given) the default multinomial design by row position, given the summed
    Poisson totals of pass 1 (:func:`calipers.multinomial_counts`)."""

    def __init__(self, seed, n_resamples, n=None):
        self.seed, self.n_resamples, self.n = seed, n_resamples, n

    def counts(self, ids, totals=None, reps=None):
        reps = np.arange(self.n_resamples) if reps is None else reps
        if ids.size == 0:
            return np.zeros((reps.shape[0], 0), np.int64)
        if self.n is None:
            return poisson_counts(self.seed, reps, ids)
        return multinomial_counts(ids, reps, totals[reps], n=self.n, seed=self.seed)

    def blocks(self, m):
        """Replicates in blocks of at most ``_BLOCK`` counts of ``m`` rows (memory bound)."""
        step = max(1, _BLOCK // max(m, 1))
        return [np.arange(i, min(i + step, self.n_resamples))
                for i in range(0, self.n_resamples, step)]

    def totals(self, ids):
        return multinomial_totals(ids, np.arange(self.n_resamples), n=self.n, seed=self.seed)


_BLOCK = 1 << 21     # counts held at a time by a task: replicates in blocks of 2**21 / rows


def _range_replicates(r, draw, totals=None):
    out = []
    for reps in draw.blocks(r["row_id"].shape[0]):
        c = draw.counts(r["row_id"], totals, reps)
        out += [R.table_u2(R.score_table(r["score"], r["y"], c[k]))
                for k in range(reps.shape[0])]
    return out


def _combine_replicates(*ranges):
    return [R.combine_u2([rg[b] for rg in ranges]) for b in range(len(ranges[0]))]


def _row_offsets(parts):
    import dask

    lens = dask.compute(*[dask.delayed(_nrows, pure=True)(p) for p in parts])
    return np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)


def _nrows(p):
    return len(p[next(iter(_columns(p)))]) if _columns(p) else 0


def _ids(part, row_id, offset):
    if row_id is not None:
        ids = _col(part, row_id)
        if ids.dtype.kind not in "iu" or (ids.size and ids.min() < 0):
            raise ValueError(f"{row_id} must hold non-negative integer row ids")
        return ids.astype(np.int64)
    return np.arange(offset, offset + _nrows(part), dtype=np.int64)


def _sums(part, index, cols, ids, metric, draw, totals=None):
    """Per-partition replicate sums ``(value_a, value_b, weight)`` of shape (B,) each."""
    y_true, a, b = cols
    y = _col(part, y_true)
    if metric == "accuracy":
        # the one-shot accuracy_score's rules: finite labels and predictions
        pa, pb = _col(part, a), _col(part, b)
        for col, arg, name, x in ((y_true, "y_true", "y_true", y), (a, "y_pred", "y_score_a", pa),
                                  (b, "y_pred", "y_score_b", pb)):
            if x.dtype.kind == "f":
                _Where(index, col)(name, V.check_finite, arg, x, np)
        sa, sb = (pa == y).astype(np.int64), (pb == y).astype(np.int64)
    else:
        y01 = _binary01(y, "y_true", _Where(index, y_true)).astype(np.float64)
        sa = _log_loss_rows(y01, _col(part, a), "y_score_a", _Where(index, a))
        sb = _log_loss_rows(y01, _col(part, b), "y_score_b", _Where(index, b))
    out = [np.zeros(draw.n_resamples, sa.dtype), np.zeros(draw.n_resamples, sb.dtype),
           np.zeros(draw.n_resamples, np.int64)]
    for reps in draw.blocks(ids.shape[0]):
        c = draw.counts(ids, totals, reps)
        cf = c if metric == "accuracy" else c.astype(np.float64)
        out[0][reps], out[1][reps], out[2][reps] = cf @ sa, cf @ sb, c.sum(1)
    return tuple(out)


def _log_loss_rows(y01, p, name, where):
    """Per-row log loss as the one-shot function: clipped at the probabilities' epsilon."""
    from . import _probability as _prob

    p = np.asarray(p)
    where(name, V.check_real_values, name, p, np, "probabilities")
    where(name, V.check_probabilities, name, p, np)
    return _prob.binary_log_loss_rows_widened(y01, p, np)


def _add_sums(*xs):
    return tuple(sum(x[i] for x in xs) for i in range(3))


def _add(*xs):
    return sum(xs[1:], xs[0])


def _part_totals(part, offset, draw):
    return draw.totals(np.arange(offset, offset + _nrows(part), dtype=np.int64))


def paired_bootstrap_replicates(data, metric: str, y_true: str, y_score_a: str, y_score_b: str,
                                *, n_resamples: int = 1000, seed: int = 0,
                                resampling: str = "poisson", row_id: str | None = None,
                                compute: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Replicates ``(dist_a, dist_b)`` of the paired bootstrap over Dask partitions.

    ``metric``: ``"roc_auc"``, ``"accuracy"`` (``y_score_*`` are predicted
    labels) or ``"log_loss"`` (probabilities of class 1). Each partition (for
    AUC: each score range, per model) sums its replicate statistics; sums
    merge in a tree. Float64 arrays of shape ``(n_resamples,)``; NaN where a
    replicate is undefined (no rows drawn, or one class for AUC). The
    one-machine call that gives the same replicates takes the metric as
    ``"roc_auc"``, ``calipers.accuracy_score`` (a callable: it has no
    ``"accuracy"`` name) or ``"log_loss"``, written ``metric`` below.

    ``resampling``:

    * ``"poisson"`` (the default here, kept so that calls written for it keep
      their replicates): row ``j``'s count in replicate ``b`` is
      ``bootstrap_counts(j, b, seed=seed)`` with ``j`` its global row id: the
      column ``row_id`` (non-negative integers, unique), or the row's
      position in the concatenated partitions (one extra pass counts the
      rows). Equals ``calipers.paired_bootstrap_replicates(metric, ...,
      resampling="poisson", seed=seed)`` (with ``row_ids=`` the ids) on the
      concatenated rows.
    * ``"multinomial"``: the default design of the one-machine functions,
      every replicate exactly ``n`` draws, in two passes
      (:func:`calipers.multinomial_totals` per partition, summed, then
      :func:`calipers.multinomial_counts`); rows are keyed by their position
      in the concatenated partitions (``row_id`` must be None: a
      multinomial count is a function of the row's position and of ``n``).
      Equals ``calipers.paired_bootstrap_replicates(metric, ..., seed=seed)``
      with its default resampling on the concatenated rows. One graph: the
      row counts, the totals' tree and the replicate sums.

    Both: bit for bit for AUC and accuracy (integer parts, one division), to
    rounding for log loss (float sums in another order, relative 1e-12).

    Errors are the one-shot function's ``ValueError`` (the same argument name
    and rule: ``y_score_a must be finite (no NaN or inf); element 3 is
    nan``, labels outside {0, 1}, probabilities outside [0, 1]), with the
    column and the partition added; ``metric``, ``n_resamples``,
    ``resampling`` and ``row_id`` with ``"multinomial"`` are checked before
    anything runs. Labels coded {-1, 1} are refused (not inferred per
    partition).
    """
    import dask

    V.choice(metric, "metric", _METRICS)
    n_resamples = V.positive_int(n_resamples, "n_resamples")
    V.choice(resampling, "resampling", ("poisson", "multinomial"))
    if resampling == "multinomial" and row_id is not None:
        raise ValueError("row_id needs resampling='poisson': a multinomial count is a function "
                         "of the row's position in the concatenated partitions and of their "
                         "number; got resampling='multinomial'")
    parts = _partitions(data)
    offsets: Any = _row_offsets(parts) if row_id is None else [None] * (len(parts) + 1)
    d = dask.delayed
    totals = None
    if resampling == "poisson":
        draw = _Draw(seed, n_resamples)
    else:
        draw = _Draw(seed, n_resamples, n=int(offsets[-1]))
        if draw.n == 0:
            raise ValueError("data has no rows")
        totals = _tree([d(_part_totals, pure=True)(p, int(off), draw)
                        for p, off in zip(parts, offsets[:-1])], _add)
    if metric == "roc_auc":
        out = []
        for col, name in ((y_score_a, "y_score_a"), (y_score_b, "y_score_b")):
            ranges = _range_rows(
                [d(_with_ids, pure=True)(p, row_id, off) for p, off in zip(parts, offsets)],
                y_true, col, {"row_id": _take_ids}, 16, name)
            reps = [d(_range_replicates, pure=True)(r, draw, totals) for r in ranges]
            out.append(d(_combine_replicates, pure=True)(*reps))
        ra, rb = _compute(out, compute)
        return (np.array([R.auc_of(*t) for t in ra], dtype=np.float64),
                np.array([R.auc_of(*t) for t in rb], dtype=np.float64))
    sums = [d(_sums, pure=True)(p, i, (y_true, y_score_a, y_score_b),
                                d(_ids, pure=True)(p, row_id, off), metric, draw, totals)
            for i, (p, off) in enumerate(zip(parts, offsets))]
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
