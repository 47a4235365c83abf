"""calipers on Apache Beam: ``CombineFn``\\ s for mergeable states and the paired Poisson bootstrap.

Install with ``pip install calipers[beam]``. Apache Beam is imported when a
class of this module is first used, so ``import calipers`` (and
``import calipers.beam``) never imports it.

* :class:`StateCombineFn` folds elements into any calipers mergeable state
  (:class:`calipers.ConfusionState`, :class:`calipers.ROCHistogramState`,
  :class:`calipers.PairedBootstrapState`, ...): ``create_accumulator`` is the
  empty state of a factory, ``add_input`` the state's ``update``,
  ``merge_accumulators`` its ``merge``, ``extract_output`` its ``compute``
  (or the state itself).
* :class:`PairedBootstrapCombineFn` sums the replicates of the paired Poisson
  bootstrap of accuracy or log loss, each row drawn by its global row id
  (:func:`calipers.bootstrap_counts`), and returns ``(dist_a, dist_b)``.

* :class:`ExactRocAuc` and :class:`ExactAveragePrecision` are composite
  transforms from ``(slice key, (y_true, y_score))`` pairs to one exact AUC /
  AP per slice, by a shuffle of score ranges and integer parts per range.

The CombineFns are used with ``beam.CombinePerKey`` over ``(slice key, element)`` pairs they give
one result per slice; with ``beam.CombineGlobally`` one result.

Elements. An element is a tuple of the columns ``update`` takes (for the
bootstrap ``(y_true, y_score_a, y_score_b, row_id)``), either one row (the
items are scalars) or a batch (every item an array of one or more dimensions,
all with the rows on the first axis); an element that is not a tuple or list
is one column. Rows are buffered in the accumulator and added ``batch_size``
at a time, so one-row elements cost one ``update`` per ``batch_size`` rows.

Exactness. Merged states and replicate sums are field-wise sums, so integer
counts equal one process bit for bit whatever the bundling, the order of the
elements and the workers: :class:`PairedBootstrapCombineFn` with
``"accuracy"`` equals ``calipers.paired_bootstrap_replicates(
calipers.accuracy_score, ..., resampling="poisson", row_ids=ids, seed=seed)``
on the concatenated rows bit for bit; ``"log_loss"`` replicates are float
sums in another order and agree to rounding (relative 1e-12).

Accumulators are plain data (a state's fields as arrays, the buffered rows,
the replicate sums), so Beam can encode them between stages (the DirectRunner's
``multi_processing`` mode, Dataflow, Flink, Spark); the state's class comes
from the factory in each worker.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from . import _probability as _prob
from ._core import validation as V
from ._bootstrap.resample import bootstrap_counts
from ._kernels import ranges as R

__all__ = ["StateCombineFn", "PairedBootstrapCombineFn"]
__all__ += ["ExactRocAuc", "ExactAveragePrecision"]         # exact AUC / AP by score ranges


_ELEMENTS = ("auto", "row", "batch")


# --------------------------------------------------------------------------
# elements: one row or a batch of columns
# --------------------------------------------------------------------------

def _ndim(x) -> int:
    nd = getattr(x, "ndim", None)
    return int(nd) if nd is not None else int(np.ndim(x))


def _items(element) -> tuple:
    return tuple(element) if isinstance(element, (tuple, list)) else (element,)


def _is_batch(items: tuple, mode: str) -> bool:
    """Whether the element's items are a batch of columns (``True``) or one row."""
    if mode != "auto":
        return mode == "batch"
    return bool(items) and all(_ndim(x) >= 1 for x in items)


def _stack(rows: list) -> tuple:
    """Buffered rows (tuples of one arity) as a batch of columns."""
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise ValueError(f"every row element must have the same number of columns "
                         f"(the first had {width})")
    return tuple(np.stack([np.asarray(r[i]) for r in rows]) for i in range(width))


class _Accumulator:
    """A combine's partial result: ``value`` (plain data) and the rows not yet added.

    Picklable by reference to this module, with no Beam or state class in it.
    """

    __slots__ = ("value", "rows")

    def __init__(self, value, rows=None):
        self.value = value
        self.rows = [] if rows is None else rows

    def __getstate__(self):
        return (self.value, self.rows)

    def __setstate__(self, state):
        self.value, self.rows = state

    def __repr__(self) -> str:
        return f"_Accumulator({self.value!r}, {len(self.rows)} buffered rows)"


class _Combine:
    """What the CombineFns share: buffering rows, flushing, merging. Beam-free."""

    _batch_size: int
    _element: str

    def _empty_value(self):
        raise NotImplementedError

    def _add_batch(self, value, columns: tuple):
        raise NotImplementedError

    def _merge_values(self, a, b):
        raise NotImplementedError

    def _output(self, value):
        raise NotImplementedError

    # the CombineFn protocol
    def create_accumulator(self):
        return _Accumulator(self._empty_value())

    def add_input(self, accumulator, element):
        items = _items(element)
        if _is_batch(items, self._element):
            accumulator.value = self._add_batch(accumulator.value, items)
            return accumulator
        accumulator.rows.append(items)
        if len(accumulator.rows) >= self._batch_size:
            self._flush(accumulator)
        return accumulator

    def _flush(self, accumulator):
        if accumulator.rows:
            columns = _stack(accumulator.rows)
            accumulator.rows = []
            accumulator.value = self._add_batch(accumulator.value, columns)
        return accumulator

    def compact(self, accumulator):
        return self._flush(accumulator)

    def merge_accumulators(self, accumulators):
        out = None
        for acc in accumulators:
            self._flush(acc)
            if out is None:
                out = acc
            else:
                out.value = self._merge_values(out.value, acc.value)
        return out if out is not None else self.create_accumulator()

    def extract_output(self, accumulator):
        return self._output(self._flush(accumulator).value)


# --------------------------------------------------------------------------
# any mergeable state
# --------------------------------------------------------------------------

def _default_update(state, *columns):
    return state.update(*columns)


class _StateCombine(_Combine):
    """A ``beam.CombineFn`` that folds elements into a calipers mergeable state.

    Parameters
    ----------
    init : callable
        ``init()`` returns the empty state, e.g.
        ``functools.partial(calipers.ConfusionState.init, 2)`` or
        ``lambda: calipers.ROCHistogramState.init(16)``. It runs on every
        worker, so Beam must be able to pickle it (functions, lambdas and
        partials are).
    update : callable, optional
        ``update(state, *columns)`` returns the state with a batch added; the
        columns are the element's items (for a row element, the buffered
        rows stacked into arrays). Default ``state.update(*columns)``; give
        one for keyword arguments, e.g. ``lambda s, y, a, b, ids:
        s.update(y, a, b, row_ids=ids)`` for
        :class:`calipers.PairedBootstrapState`.
    output : {"compute", "state"}
        ``extract_output`` returns ``state.compute()`` (default) or the
        merged state (for a further merge; a
        :class:`calipers.PairedBootstrapState` is of a class made per
        configuration in each process, so keep ``"compute"`` for it when
        results cross processes).
    element : {"auto", "row", "batch"}
        ``"auto"``: an element whose items all have a dimension is a batch,
        any other element one row; ``"row"`` / ``"batch"`` say it (rows whose
        columns are vectors, such as one row of class probabilities).
    batch_size : int >= 1
        Buffered rows are added this many at a time (default 4096).

    The accumulator holds the state's fields (arrays) and the buffered rows;
    merging is ``state.merge``, field-wise sums with the count limits checked,
    so integer counts equal one process's state bit for bit over any
    bundling. Errors of ``update`` (labels out of range, NaN scores) and of
    ``merge`` (states of other configurations) are raised by the pipeline as
    on one machine; a key with no rows never reaches ``extract_output`` in
    ``CombinePerKey`` (``CombineGlobally`` of nothing gives the empty state's
    ``compute()``).

    Examples
    --------
    ``(slice, (y_true, y_pred))`` pairs to one confusion summary per slice::

        import apache_beam as beam
        import functools, calipers
        from calipers.beam import StateCombineFn

        with beam.Pipeline() as p:
            (p | beam.Create([("en", (1, 1)), ("en", (0, 1)), ("de", (1, 0))])
               | beam.CombinePerKey(StateCombineFn(
                     functools.partial(calipers.ConfusionState.init, 2))))
    """

    def __init__(self, init: Callable[[], Any], *, update: Callable[..., Any] | None = None,
                 output: str = "compute", element: str = "auto", batch_size: int = 4096):
        super().__init__()
        if not callable(init):
            raise ValueError(f"init must be a callable returning an empty state, got "
                             f"{type(init).__name__}")
        if update is not None and not callable(update):
            raise ValueError(f"update must be None or a callable (state, *columns) -> state, "
                             f"got {type(update).__name__}")
        self._init_fn = init
        self._update_fn = _default_update if update is None else update
        self._mode = V.choice(output, "output", ("compute", "state"))
        self._element = V.choice(element, "element", _ELEMENTS)
        self._batch_size = V.positive_int(batch_size, "batch_size")
        self._template: Any = None

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_template"] = None          # the state's class is made again in each worker
        return d

    def __setstate__(self, d):
        self.__dict__.update(d)

    def _empty(self):
        if self._template is None:
            state = self._init_fn()
            if not (isinstance(state, tuple) and hasattr(state, "merge")
                    and hasattr(state, "update")):
                raise ValueError(f"init() must return a calipers mergeable state (a "
                                 f"NamedTuple with update and merge), got "
                                 f"{type(state).__name__}")
            self._template = state
        return self._template

    def _state(self, fields):
        empty = self._empty()
        return empty if fields is None else type(empty)(*fields)

    def _empty_value(self):
        return None                    # the empty state, made on demand

    def _add_batch(self, value, columns):
        state = self._update_fn(self._state(value), *columns)
        return tuple(state)

    def _merge_values(self, a, b):
        if a is None:
            return b
        if b is None:
            return a
        return tuple(self._state(a).merge(self._state(b)))

    def _output(self, value):
        state = self._state(value)
        return state if self._mode == "state" else state.compute()


# --------------------------------------------------------------------------
# the paired Poisson bootstrap by global row id
# --------------------------------------------------------------------------

_METRICS = ("accuracy", "log_loss")


def _check_seed(seed):
    """A seed every worker turns into the same counts (``None``: fresh entropy, drawn once)."""
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, np.random.Generator):
        raise ValueError("seed must be None, a non-negative int or a numpy SeedSequence: a "
                         "Generator advances at each use, so workers would draw different "
                         "counts")
    bootstrap_counts(np.zeros(0, np.int64), 0, seed=seed)     # the seed's own checks
    return seed


def _row_ids(ids) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.size and (ids.dtype.kind not in "iu" or ids.min() < 0):
        raise ValueError("row_id must hold non-negative integer global row ids")
    return ids.astype(np.int64) if ids.dtype.kind == "i" or not ids.size else ids


def _one_shot(check, *args, which=None, **kw):
    """A rule of ``calipers._core.validation`` (the one-shot function's own): its
    ``ValueError``, with where the element is counted (and ``which`` column) added."""
    try:
        return check(*args, **kw)
    except ValueError as e:
        col = f"{which}; " if which else ""
        raise ValueError(f"{e} (calipers.beam: {col}the element is counted within the batch "
                         "of rows being added)") from None


def _labels01(y):
    """Binary labels 0/1 by the one-shot rule; {-1, 1} is not inferred batch by batch."""
    if y.size == 0:
        return y.astype(np.float64)
    try:
        _one_shot(V.binary_labels, y, np, name="y_true", pos_label_hint=False)
    except ValueError as e:
        raise ValueError(f"{e}; calipers.beam takes labels 0/1 or booleans only (the "
                         "{-1, 1} coding is not inferred batch by batch)") from None
    if y.dtype.kind != "b" and np.any(y == -1):
        raise ValueError(f"y_true must contain only 0 and 1 in calipers.beam (the {{-1, 1}} "
                         f"coding is not inferred per batch); element {int(np.argmax(y == -1))} "
                         "of the batch is -1")
    return (y == 1).astype(np.float64)


def _log_loss_rows(y01, p, name):
    """Per-row log loss as :func:`calipers.log_loss`: clipped at the probabilities' epsilon."""
    _one_shot(V.check_real_values, name, p, np, "probabilities")
    _one_shot(V.check_probabilities, name, p, np)
    return _prob.binary_log_loss_rows_widened(y01, p, np)


class _PairedBootstrapCombine(_Combine):
    """A ``beam.CombineFn``: the paired Poisson bootstrap of two models, rows drawn by global id.

    Elements are ``(y_true, y_score_a, y_score_b, row_id)``: one row (scalars)
    or a batch (four 1-D arrays of one length). Row ``j`` of global id ``i``
    is drawn ``bootstrap_counts(i, r, seed=seed)`` times in replicate ``r``;
    each batch adds its replicate sums (``counts @ row statistic`` for both
    models, and the rows drawn), and accumulators add them, so the result
    does not depend on how the rows are split into elements, bundles or
    workers.

    Parameters
    ----------
    metric : {"accuracy", "log_loss"}
        ``"accuracy"``: ``y_score_*`` are predicted labels (compared with
        ``y_true`` as values; integer sums). ``"log_loss"``: probabilities of
        class 1 for binary ``y_true`` in {0, 1}, clipped at their dtype's
        epsilon as :func:`calipers.log_loss` (float sums).
    n_resamples : int >= 1
        Replicates ``B`` (default 1000).
    seed : None, int >= 0 or numpy SeedSequence
        The seed of :func:`calipers.bootstrap_counts`, the same on every
        worker. ``None`` (the default) draws fresh entropy once, when this
        object is made (kept in ``self.seed``, a ``SeedSequence``, so the run
        can be repeated); a ``Generator`` is a ``ValueError`` (it advances at
        each use, so workers would disagree).
    output : {"replicates", "sums"}
        ``"replicates"`` (default): ``(dist_a, dist_b)``, float64 arrays of
        shape ``(B,)``, ``sum_a / drawn`` and ``sum_b / drawn``, NaN where a
        replicate drew no row. ``"sums"``: ``(sum_a, sum_b, drawn)`` (int64
        for accuracy, float64 sums of losses for log loss; ``drawn`` int64).
    batch_size : int >= 1
        Rows per count matrix: buffered rows are added, and batch elements
        cut, this many at a time, so memory is O(B * batch_size) (default
        4096).

    Equals ``calipers.paired_bootstrap_replicates(metric_fn, y_true, a, b,
    n_resamples=B, seed=seed, resampling="poisson", row_ids=ids)`` on the
    concatenated rows (``metric_fn`` :func:`calipers.accuracy_score` or
    :func:`calipers.log_loss`): bit for bit for accuracy (integer sums, one
    division), to rounding for log loss. Row ids must be distinct across all
    elements (a repeated id repeats its counts). Raises ``ValueError`` for a
    bad option here, and in the pipeline for columns of different lengths and
    negative or non-integer row ids; for the values, the one-shot function's
    ``ValueError`` (the same argument name and rule, the element counted
    within the batch being added): NaN or inf labels or predictions
    (``y_true`` / ``y_pred`` as :func:`calipers.accuracy_score`), and for log
    loss labels outside {0, 1} (``y_true``; the {-1, 1} coding is refused,
    not inferred per batch) or probabilities outside [0, 1] or NaN
    (``y_score_a`` / ``y_score_b``).

    Poisson only: the default multinomial design (every replicate exactly n
    draws) needs every row's global position in ``0 .. n - 1``, ``n`` and the
    whole data's Poisson totals before any row's count is known
    (:func:`calipers.multinomial_totals`, then
    :func:`calipers.multinomial_counts`). A ``CombineFn`` sees its rows
    once, so that is two pipeline stages (a combine of totals, then this
    combine with the totals as a side input), not one ``CombineFn``; it is
    not provided here. ``calipers.dask.paired_bootstrap_replicates(...,
    resampling="multinomial")`` does it in one graph.
    """

    def __init__(self, metric: str, *, n_resamples: int = 1000, seed=None,
                 output: str = "replicates", batch_size: int = 4096):
        super().__init__()
        self.metric = V.choice(metric, "metric", _METRICS)
        self.n_resamples = V.positive_int(n_resamples, "n_resamples")
        self.seed = _check_seed(seed)
        self._mode = V.choice(output, "output", ("replicates", "sums"))
        self._batch_size = V.positive_int(batch_size, "batch_size")
        self._element = "auto"

    def _empty_value(self):
        dt = np.int64 if self.metric == "accuracy" else np.float64
        b = self.n_resamples
        return (np.zeros(b, dt), np.zeros(b, dt), np.zeros(b, np.int64))

    def _add_batch(self, value, columns):
        if len(columns) != 4:
            raise ValueError(f"an element must be (y_true, y_score_a, y_score_b, row_id), "
                             f"got {len(columns)} columns")
        y, a, b, ids = (np.asarray(c) for c in columns)
        if any(c.ndim != 1 for c in (y, a, b, ids)) or \
                not y.shape[0] == a.shape[0] == b.shape[0] == ids.shape[0]:
            raise ValueError("y_true, y_score_a, y_score_b and row_id must be 1-D and of one "
                             f"length, got shapes {y.shape}, {a.shape}, {b.shape}, {ids.shape}")
        ids = _row_ids(ids)
        if self.metric == "accuracy":
            # the one-shot accuracy_score's rules: finite labels and predictions
            for arg, which, x in (("y_true", None, y), ("y_pred", "y_score_a", a),
                                  ("y_pred", "y_score_b", b)):
                if x.dtype.kind == "f":
                    _one_shot(V.check_finite, arg, x, np, which=which)
            sa, sb = (a == y).astype(np.int64), (b == y).astype(np.int64)
        else:
            y01 = _labels01(y)
            sa, sb = _log_loss_rows(y01, a, "y_score_a"), _log_loss_rows(y01, b, "y_score_b")
        reps = np.arange(self.n_resamples)
        ta, tb, drawn = value
        for i in range(0, ids.shape[0], self._batch_size):
            c = bootstrap_counts(ids[i:i + self._batch_size], reps, seed=self.seed)
            if self.metric == "log_loss":
                cf = c.astype(np.float64)
                ta = ta + cf @ sa[i:i + self._batch_size]
                tb = tb + cf @ sb[i:i + self._batch_size]
            else:
                ta = ta + c @ sa[i:i + self._batch_size]
                tb = tb + c @ sb[i:i + self._batch_size]
            drawn = drawn + c.sum(axis=1)
        return (ta, tb, drawn)

    def _merge_values(self, a, b):
        return tuple(x + y for x, y in zip(a, b))

    def _output(self, value):
        if self._mode == "sums":
            return value
        ta, tb, drawn = value
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.where(drawn > 0, drawn.astype(np.float64), 1.0)
            da = np.where(drawn > 0, ta.astype(np.float64) / w, np.nan)
            db = np.where(drawn > 0, tb.astype(np.float64) / w, np.nan)
        return da, db


# --------------------------------------------------------------------------
# exact AUC and AP: a range shuffle of score tables, integer parts per range
# --------------------------------------------------------------------------

_RANKED = ("roc_auc", "average_precision")


def _element_table(kv):
    """``(key, element)`` to ``(key, score table)``: the element's rows, checked."""
    key, element = kv
    items = _items(element)
    if len(items) not in (2, 3):
        raise ValueError(f"an element must be (y_true, y_score) or (y_true, y_score, "
                         f"sample_weight), got {len(items)} columns")
    cols = [np.atleast_1d(np.asarray(c)) for c in items]
    if any(c.ndim != 1 for c in cols) or len({c.shape[0] for c in cols}) != 1:
        raise ValueError("y_true, y_score (and sample_weight) must be scalars or 1-D arrays "
                         f"of one length, got shapes {[c.shape for c in cols]}")
    y, s = _labels01(cols[0]).astype(np.int64), cols[1]
    _one_shot(V.check_real_values, "y_score", s, np, "scores")
    s = s.astype(np.float64)
    _one_shot(V.check_finite, "y_score", s, np)
    w = None
    if len(cols) == 3:
        w = cols[2]
        if w.size and (w.dtype.kind not in "iub" and not (
                w.dtype.kind == "f" and np.all(np.isfinite(w)) and np.all(w == np.round(w)))
                or np.any(w < 0)):
            raise ValueError("sample_weight must hold non-negative integer weights (the "
                             "exact sums count rows)")
    return key, R.score_table(s, y, w)


def _table_sample(kv):
    """The scores of a table weighted by their rows: ApproximateQuantiles' batched input."""
    key, (s, pos, neg) = kv
    return key, (s.tolist(), (pos + neg).tolist())


def _cuts_of(kv, n_ranges):
    key, q = kv
    return key, R.cuts_from_sample(np.asarray(q[1:-1] if len(q) > 2 else [], np.float64),
                                   n_ranges)


def _split_by_range(kv, cuts):
    key, table = kv
    c = cuts.get(key, np.empty(0, np.float64))
    for r, piece in enumerate(R.split_table(table, c)):
        if piece[0].size:
            yield (key, r), piece


def _merge_table_values(tables):
    return R.merge_tables(*tables)


def _range_u2(kv):
    (key, r), table = kv
    return key, (r, R.table_u2(table))


def _auc_of_ranges(kv):
    key, parts = kv
    u2 = R.combine_u2([p for _, p in sorted(parts, key=lambda rp: rp[0])])
    return key, R.auc_of(*u2)


def _range_totals(kv):
    (key, r), table = kv
    return key, (r, R.table_totals(table))


def _offsets_of(kv):
    key, totals = kv
    totals = sorted(totals, key=lambda rt: rt[0])
    for (r, _), off in zip(totals, R.offsets_above([t for _, t in totals])):
        yield (key, r), off


def _range_precision(kv):
    (key, r), joined = kv
    (table,), (offsets,) = joined["table"], joined["offsets"]
    return key, (R.table_precision_sum(table, *offsets), R.table_totals(table)[0])


def _add_precision_parts(parts):
    total = p = 0
    for s, pr in parts:
        total += s
        p += pr
    return total, p


def _ap_of_sums(kv):
    key, (total, p) = kv
    return key, R.ratio_of_sum(total, p)


class _ExactRanked:
    """Exact ROC AUC or average precision per key, by a shuffle of score ranges.

    Beam-free base of :class:`ExactRocAuc` and :class:`ExactAveragePrecision`.
    """

    _metric: str

    def __init__(self, *, n_ranges: int = 16, label: str | None = None):
        super().__init__(label)  # type: ignore[call-arg]  # beam.PTransform's, in the made class
        self.n_ranges = V.positive_int(n_ranges, "n_ranges")

    def expand(self, pcoll):
        import apache_beam as beam
        from apache_beam.transforms.stats import ApproximateQuantiles

        tables = pcoll | "score tables" >> beam.Map(_element_table)
        cuts = (tables
                | "weighted scores" >> beam.Map(_table_sample)
                | "quantiles" >> ApproximateQuantiles.PerKey(
                    num_quantiles=self.n_ranges + 1, weighted=True, input_batched=True)
                | "cuts" >> beam.Map(_cuts_of, self.n_ranges))
        ranges = (tables
                  | "by range" >> beam.FlatMap(_split_by_range, beam.pvalue.AsDict(cuts))
                  | "range tables" >> beam.CombinePerKey(_merge_table_values))
        if self._metric == "roc_auc":
            return (ranges
                    | "U2 parts" >> beam.Map(_range_u2)
                    | "parts by key" >> beam.GroupByKey()
                    | "AUC" >> beam.Map(_auc_of_ranges))
        offsets = (ranges
                   | "range totals" >> beam.Map(_range_totals)
                   | "totals by key" >> beam.GroupByKey()
                   | "offsets" >> beam.FlatMap(_offsets_of))
        return ({"table": ranges, "offsets": offsets}
                | "join offsets" >> beam.CoGroupByKey()
                | "precision sums" >> beam.Map(_range_precision)
                | "sums by key" >> beam.CombinePerKey(_add_precision_parts)
                | "AP" >> beam.Map(_ap_of_sums))


class _ExactRocAuc(_ExactRanked):
    """``PTransform``: exact ROC AUC per key of ``(key, (y_true, y_score[, sample_weight]))``.

    AUC is the Mann-Whitney statistic, a tied (positive, negative) pair
    counting 1/2 (Hanley & McNeil 1982), as :func:`calipers.roc_auc_score`;
    never binned (a histogram of 10,000 buckets, as TFMA uses, is an
    approximation).

    Input: a ``PCollection`` of ``(key, element)``; an element is ``(y_true,
    y_score)`` or ``(y_true, y_score, sample_weight)``, one row (scalars) or a
    batch (1-D arrays of one length). Labels in {0, 1}; scores finite;
    weights non-negative integers (repetitions). Output: ``(key, float)``
    per key.

    How: each element becomes a table of its distinct scores with the
    positive and negative count at each; per key, cut scores at approximate
    weighted quantiles (``ApproximateQuantiles.PerKey``, ``n_ranges + 1``
    points) split the tables into ``n_ranges`` score ranges (a range is a
    function of the score, so a tie group never straddles a cut); the
    tables of each (key, range) merge in ``CombinePerKey``; each range gives
    its integer Mann-Whitney parts ``(U2, P, N)``; per key the ranges
    combine in score order in Python integers and ``U2 / (2 P N)`` is
    rounded once. The result is the same double as
    :func:`calipers.roc_auc_score` on the key's rows, for any bundling,
    element order, runner or cut.

    Parameters
    ----------
    n_ranges : int >= 1
        Score ranges per key (default 16): the parallelism of the per-range
        work; a range holds the distinct scores of its share of the rows.

    A key with one class present (or only empty elements) gives NaN (no
    warning: pipelines run on workers; check the counts). Raises
    ``ValueError`` for a bad option here, and in the pipeline for labels
    outside {0, 1}, non-finite scores, bad weights or columns of different
    lengths.

    Examples
    --------
    ::

        with beam.Pipeline() as p:
            aucs = (p | beam.Create([("en", (1, 0.9)), ("en", (0, 0.4)), ("de", (1, 0.2))])
                      | calipers.beam.ExactRocAuc())
    """

    _metric = "roc_auc"


class _ExactAveragePrecision(_ExactRanked):
    """``PTransform``: average precision per key of ``(key, (y_true, y_score[, sample_weight]))``.

    ``AP = sum_j (R_j - R_{j-1}) P_j`` over distinct scores in decreasing
    order, tied scores entering together (scikit-learn's step AP, as
    :func:`calipers.average_precision_score`; Manning, Raghavan & Schuetze
    2008, ch. 8). Input, ranges and options as :class:`ExactRocAuc`. Two
    passes over the (key, range) tables: their positive and negative totals
    give each range the counts of the ranges above it (joined back by
    ``CoGroupByKey``); each range then sums ``n1 * (tp / (tp + fp))`` over its
    tie groups holding ``n1`` positives (``tp``, ``fp``: weight scored at
    least the group's score), each term float64, *exactly* (an integer
    multiple of ``2**-1126``); per key the integers add and ``sum / P`` is
    rounded once.

    Output ``(key, float)``: the same double whatever the bundling, order,
    runner or cuts (and equal to :func:`calipers.dask.average_precision_score`
    on the same rows), within ``2**-52`` (relative) of the exact rational AP;
    :func:`calipers.average_precision_score` sums the same terms in floating
    point and agrees to rounding (tested to relative 1e-13). NaN for a key without a
    positive (scikit-learn returns 0.0; no warning in a pipeline). Errors as
    :class:`ExactRocAuc`.
    """

    _metric = "average_precision"


# --------------------------------------------------------------------------
# the public classes: made on first use, subclasses of beam.CombineFn
# --------------------------------------------------------------------------

_BASES = {"StateCombineFn": _StateCombine, "PairedBootstrapCombineFn": _PairedBootstrapCombine}
_TRANSFORMS = {"ExactRocAuc": _ExactRocAuc, "ExactAveragePrecision": _ExactAveragePrecision}


@functools.lru_cache(maxsize=None)
def _combine_fn_class(name: str) -> type:
    """``name`` as a subclass of ``beam.CombineFn`` (imports Apache Beam)."""
    try:
        import apache_beam as beam
    except ImportError as e:                      # pragma: no cover - depends on the install
        raise ImportError(f"calipers.beam.{name} needs Apache Beam: "
                          "pip install calipers[beam]") from e
    if name in _TRANSFORMS:
        return type(name, (_TRANSFORMS[name], beam.PTransform),
                    {"__module__": __name__, "__qualname__": name,
                     "__doc__": _TRANSFORMS[name].__doc__})
    base = _BASES[name]
    return type(name, (base, beam.CombineFn),
                {"__module__": __name__, "__qualname__": name, "__doc__": base.__doc__})


def __getattr__(name: str) -> Any:
    if name in _BASES or name in _TRANSFORMS:
        return _combine_fn_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_BASES) | set(_TRANSFORMS))
