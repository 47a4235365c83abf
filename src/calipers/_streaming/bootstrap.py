"""A streaming paired bootstrap: B replicates of two models' metric, batch by batch.

Each replicate is a vector of Poisson(1) counts per row, drawn by calipers'
counter-based generator as a function of (seed, replicate, global row id)
only (:func:`calipers.bootstrap_counts`). A batch therefore adds exactly its
part of every replicate's sufficient statistics, whatever the batching, the
order of the batches or the device that saw them, and the states of any
partition of the rows add (``merge``, ``jax.lax.psum``) to one state of all
of them. The replicates equal :func:`calipers.paired_bootstrap_replicates`
with ``resampling="poisson"`` and the same ``row_ids``: bit for bit for
integer-count statistics, to float rounding for float sums.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._kernels import rankstats as R
from .. import _probability as _prob
from .._bootstrap.resample import counts_matrix, id_words, seed_words
from .histogram import _bin_index
from .states import _fill_one, _fill_zero, _namespace, _row_mask, _state_xp, _to, merge

__all__ = ["PairedBootstrapState"]

_METRICS = ("roc_auc", "average_precision", "accuracy", "log_loss", "brier")


class PairedBootstrapState(NamedTuple):
    """Streaming paired Poisson bootstrap of ``metric(A)`` and ``metric(B)``: B replicates.

    Fields (every one a sum, so ``merge`` and ``jax.lax.psum`` add them):

    * ``stats`` ``(B, 2, K)``: per replicate and model the metric's sums of
      ``count * row statistic``: the count-weighted histogram of (class,
      score bin) for ``"roc_auc"`` / ``"average_precision"`` (``K = 2 *
      2**bits``, integers), the number of correct predictions for
      ``"accuracy"`` (``K = 1``, integers), the sum of per-row losses for
      ``"log_loss"`` / ``"brier"`` (``K = 1``, floats);
    * ``total`` ``(B,)``: rows drawn in each replicate (the sum of its counts);
    * ``invalid``: batches found invalid under ``jit``.

    The metric, the seed's two uint32 words and ``bits`` are static: they are
    the state's class (``init`` returns a subclass made once per
    configuration), so ``psum`` adds only data and states of other seeds or
    metrics refuse to merge. Replicate ``r`` counts row ``j`` of global id
    ``i`` ``bootstrap_counts(i, r, seed=seed)`` times (calipers' own generator),
    so a state fed any batching of rows with their global ids, merged in any
    order, equals :func:`calipers.paired_bootstrap_replicates` ``(metric,
    y_true, a, b, resampling="poisson", row_ids=ids, seed=seed)`` of all the
    rows: bit for bit for ``"roc_auc"`` on the histogram key (scores floored
    to their ``bits``-bit float32 order key, the key of
    :class:`calipers.ROCHistogramState`) and ``"accuracy"``; to float
    rounding for ``"average_precision"`` (the same step sum in another
    order), ``"log_loss"`` and ``"brier"`` (float sums in batch order).
    ``row_ids`` must be distinct across all batches (the caller's promise: a
    repeated id repeats its counts).

    Memory. ``stats``: ``B * 4 * 2**bits`` counts for AUC/AP (int64, so
    ``32 * B * 2**bits`` bytes: 25.6 MiB at ``B = 200``, ``bits = 12``),
    ``2 * B`` values otherwise; ``total`` ``B`` counts. An ``update`` of
    ``m`` rows also holds the ``(B, m)`` counts (int64; int32 on JAX without
    x64) while it runs.

    Counts are int64 (int32 on JAX without x64); every count is bounded by
    the replicate's ``total``, which ``update`` and ``merge`` check against
    the limit (eagerly ``ValueError``, under ``jit`` counted in ``invalid``);
    ``psum`` cannot check (``compute`` gives NaN for a negative total). AUC's
    Mann-Whitney sum is taken in the count integers: exact while a
    replicate's ``2 * P * N`` stays below the limit, NaN past it (flagged).

    Life cycle: ``init`` -> ``update`` per batch (inside ``jit`` too) ->
    ``merge`` / ``psum`` -> ``compute`` -> ``(dist_a, dist_b)``, then
    :func:`calipers.bootstrap_interval` (which runs under ``jit`` too).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import PairedBootstrapState, paired_bootstrap_replicates
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 100); a = rng.random(100); b = rng.random(100)
    >>> st = PairedBootstrapState.init("accuracy", 50, seed=1)
    >>> ids = np.arange(100)
    >>> st = st.update(y[:60], a[:60] > .5, b[:60] > .5, row_ids=ids[:60])
    >>> st = st.update(y[60:], a[60:] > .5, b[60:] > .5, row_ids=ids[60:])
    >>> da, db = st.compute()
    >>> import calipers
    >>> ra, rb = paired_bootstrap_replicates(calipers.accuracy_score, y, a > .5, b > .5,
    ...     n_resamples=50, resampling="poisson", seed=1, row_ids=ids)
    >>> bool((da == ra).all() and (db == rb).all())
    True
    """

    stats: Any
    total: Any
    invalid: Any

    # static configuration: the subclass ``init`` returns (see _state_class)
    @property
    def metric(self) -> str:
        """The metric (static)."""
        return _CONFIGS[type(self)][0]

    @property
    def bits(self) -> int:
        """Histogram resolution of AUC/AP (static; 0 for the other metrics)."""
        return _CONFIGS[type(self)][1]

    @property
    def seed_words(self) -> tuple:
        """The seed's two uint32 words (static)."""
        return _CONFIGS[type(self)][2]

    @classmethod
    def init(cls, metric: str, n_resamples: int = 200, *, seed=None, bits: int = 12,
             xp=None) -> "PairedBootstrapState":
        """An empty state of ``n_resamples`` replicates.

        Parameters
        ----------
        metric : {"roc_auc", "average_precision", "accuracy", "log_loss", "brier"}
            ``"accuracy"`` takes predicted labels; ``"log_loss"`` and
            ``"brier"`` probabilities of class 1 (clipped at their dtype's
            epsilon for log loss, as :func:`calipers.log_loss`);
            ``"roc_auc"`` / ``"average_precision"`` scores, keyed by the top
            ``bits`` bits of their float32 order key.
        n_resamples : int >= 1, at most 2**32
        seed : None, int >= 0, NumPy Generator or SeedSequence, or a concrete JAX key
            As :func:`calipers.paired_bootstrap`. ``None`` draws fresh entropy
            here: states made by separate ``init`` calls (each process of a
            multi-host run) then differ and refuse to merge; pass an int.
        bits : int in [1, 24]
            Histogram resolution for AUC/AP (static); unused otherwise.
        xp : namespace, optional
            ``jax.numpy``, ``numpy`` (default) or another array namespace.

        Raises
        ------
        ValueError
            Unknown ``metric``, ``n_resamples`` or ``bits`` out of range, a bad ``seed``.
        """
        metric = V.choice(metric, "metric", _METRICS)
        n_resamples = V.positive_int(n_resamples, "n_resamples")
        if n_resamples > 2**32:
            raise ValueError(f"n_resamples must be at most 2**32 = {2**32} (replicates are "
                             f"keyed by a 32-bit index), got {n_resamples}")
        hist = metric in ("roc_auc", "average_precision")
        if hist:
            V.positive_int(bits, "bits")
            if bits > 24:
                raise ValueError(f"bits must be in [1, 24], got {bits}")
        words = tuple(int(w) for w in np.asarray(B.to_numpy(seed_words(seed))).tolist())
        klass = _state_class(metric, int(bits) if hist else 0, words)
        xp = _namespace(xp)
        K = 2 * 2 ** int(bits) if hist else 1
        sdt = B.acc_float(xp) if metric in ("log_loss", "brier") else B.acc_int(xp)
        return klass(xp.zeros((n_resamples, 2, K), dtype=sdt),
                     xp.zeros(n_resamples, dtype=B.acc_int(xp)),
                     xp.zeros((), dtype=B.acc_int(xp)))

    @property
    def n_resamples(self) -> int:
        return int(self.total.shape[0])

    def _count_totals(self):
        return (self.total,)

    def update(self, y_true, y_score_a, y_score_b, *, row_ids, mask=None
               ) -> "PairedBootstrapState":
        """Add a batch of ``m`` rows of both models, identified by their global ids.

        ``y_true`` (m,): labels in {0, 1} or bool (``"accuracy"``: any labels,
        compared with the predictions ``y_score_a``, ``y_score_b`` as values).
        ``row_ids`` (m,): the rows' global ids (non-negative integers below
        2**64, distinct across all batches; int32 ids on JAX without x64, or a
        pair ``(lo, hi)`` of uint32 words). ``mask`` (m,), boolean or 0/1:
        padding rows (False / 0) add nothing and are not checked. Eagerly,
        bad labels, non-finite scores, probabilities outside [0, 1], wrong
        shapes, negative ids and counts past the limit raise ``ValueError``;
        under ``jit`` the batch is counted in ``invalid`` (``compute`` NaN).
        """
        xp = _state_xp(self)
        metric = self.metric
        y_true, a, b, mask = _to(xp, y_true, y_score_a, y_score_b, mask)
        ids = row_ids if isinstance(row_ids, tuple) else _to(xp, row_ids)[0]
        for name, x in (("y_true", y_true), ("y_score_a", a), ("y_score_b", b)):
            B.check_1d(name, x)
        B.check_same_length(y_true=y_true, y_score_a=a, y_score_b=b)
        n = y_true.shape[0]
        keep, bad = _row_mask(mask, n, xp)
        if keep is not None and not isinstance(ids, tuple) and tuple(ids.shape) == (n,):
            ids = xp.where(keep, ids, xp.zeros_like(ids))   # a padding row's id: never checked
        lo, hi = id_words(ids, xp)
        if tuple(lo.shape) != (n,) or (hi is not None and tuple(hi.shape) != (n,)):
            raise ValueError(f"row_ids must have one entry per row, shape ({n},), got shape "
                             f"{tuple(lo.shape)}")
        if n == 0:
            return self
        if not isinstance(ids, tuple) and B.is_traced(ids) and \
                xp.isdtype(ids.dtype, "signed integer"):
            bad = bad | xp.any(ids < 0)
        words = xp.asarray(np.asarray(self.seed_words, dtype=np.uint32))
        cdt = self.total.dtype
        c = counts_matrix(words, xp.arange(self.n_resamples, dtype=cdt), lo, hi, xp, cdt)
        if keep is not None:
            # padding rows: valid stand-ins (never checked) and no count
            fill_s = _fill_one if metric in ("log_loss", "brier") else _fill_zero
            if metric != "accuracy":      # (accuracy checks nothing: the count 0 is enough)
                y_true = xp.where(keep, y_true, _fill_one(y_true, xp))
                a = xp.where(keep, a, fill_s(a, xp))
                b = xp.where(keep, b, fill_s(b, xp))
            c = xp.where(xp.reshape(keep, (1, -1)), c, xp.zeros_like(c))
        stats, bad2 = _batch_stats(metric, self.bits, y_true, a, b, c, xp,
                                   self.stats.dtype)
        bad = bad | bad2
        add = type(self)(stats, xp.sum(c, axis=1, dtype=cdt),
                         xp.astype(bad, self.invalid.dtype))
        return merge(self, add)

    def merge(self, other) -> "PairedBootstrapState":
        """Add two states of the same configuration (what ``psum`` does), limits checked."""
        return merge(self, other)

    def compute(self):
        """``(dist_a, dist_b)``: the metric of each model in each replicate, shape ``(B,)``.

        Float64 (float32 without x64), NaN where a replicate is undefined (AUC
        without a positive or a negative drawn, AP without a positive, no row
        drawn), and every value NaN once an invalid batch was added or a count
        wrapped. Eager NumPy arrays, or JAX arrays (traceable). A state that
        holds no rows gives NaN for every replicate with one
        :class:`UndefinedMetricWarning` eagerly (under ``jit`` no warning);
        some undefined replicates among defined ones are not warned about,
        as :func:`calipers.paired_bootstrap_replicates` does not (the
        interval functions count them).
        """
        xp = _state_xp(self)
        metric = self.metric
        f = B.acc_float(xp)
        bad = (self.invalid > 0) | xp.any(self.total < 0)
        V.warn_if(xp.all(self.total == 0) & ~bad, f"PairedBootstrapState holds no rows: every "
                  f"replicate of {metric} is undefined; NaN", xp)
        out = []
        for m in (0, 1):
            s = self.stats[:, m, :]
            if metric == "roc_auc":
                v = _auc(s, xp)
            elif metric == "average_precision":
                v = _ap(s, xp, f)
            else:
                tot = xp.astype(self.total, f)
                v = B.nan_if(tot == 0, xp.astype(s[:, 0], f) / xp.where(tot == 0, 1.0, tot), xp)
            out.append(B.nan_if(bad, xp.astype(v, f), xp))
        return out[0], out[1]


_CONFIGS: dict = {}


@functools.lru_cache(maxsize=None)
def _state_class(metric, bits, words):
    """The subclass of one configuration (cached, so equal configurations merge)."""
    klass = type("PairedBootstrapState", (PairedBootstrapState,), {"__slots__": ()})
    _CONFIGS[klass] = (metric, bits, words)
    return klass


def _batch_stats(metric, bits, y, a, b, c, xp, sdt):
    """Per-replicate sums of one batch: ``((B, 2, K) stats, invalid flag)``."""
    bad = xp.asarray(False)
    if metric == "accuracy":
        cols = [xp.sum(c * xp.astype(s == y, c.dtype)[None, :], axis=1, dtype=sdt)
                for s in (a, b)]
        return xp.stack(cols, axis=1)[:, :, None], bad
    y01, bad = V.binary_labels(y, xp)
    for name, s in (("y_score_a", a), ("y_score_b", b)):
        B.check_numeric(name, s, xp)
        if xp.isdtype(s.dtype, "real floating"):
            bad = bad | V.check_finite(name, s, xp)
    if metric in ("log_loss", "brier"):
        f = B.acc_float(xp)
        cf = xp.astype(c, f)
        cols = []
        for name, s in (("y_score_a", a), ("y_score_b", b)):
            bad = bad | V.fail_if(~((s >= 0) & (s <= 1)), name,
                                  "must hold probabilities in [0, 1]", xp, values=s)
            rows = _prob.binary_log_loss_rows_widened(y01, s, xp) if metric == "log_loss" else \
                _prob.binary_brier_rows(y01, xp.astype(s, f), xp)
            cols.append(xp.sum(cf * xp.reshape(xp.astype(rows, f), (1, -1)), axis=1))
        return xp.stack(cols, axis=1)[:, :, None], bad
    M = 2 ** bits
    cols = []
    for s in (a, b):
        idx = xp.astype(_bin_index(s, "float32", bits, xp), xp.int64 if B.is_numpy(xp)
                        else B.acc_int(xp)) + xp.astype(y01, xp.int64 if B.is_numpy(xp)
                                                        else B.acc_int(xp)) * M
        cols.append(_hist(c, idx, 2 * M, xp, sdt))
    return xp.stack(cols, axis=1), bad


def _hist(c, idx, K, xp, sdt):
    """``(B, K)`` integer histogram: ``h[r, idx[j]] += c[r, j]``."""
    Bn = c.shape[0]
    if B.is_jax(xp):
        return xp.zeros((Bn, K), dtype=sdt).at[:, idx].add(xp.astype(c, sdt))
    if B.is_numpy(xp):
        h = np.zeros(Bn * K, dtype=sdt)
        flat = (np.arange(Bn, dtype=np.int64)[:, None] * K + np.asarray(idx)[None, :])
        np.add.at(h, flat.reshape(-1), np.asarray(c, dtype=sdt).reshape(-1))
        return h.reshape(Bn, K)
    hn = _hist(np.asarray(B.to_numpy(c)), np.asarray(B.to_numpy(idx)), K, np,
               np.dtype(str(sdt).split(".")[-1]) if not isinstance(sdt, np.dtype) else sdt)
    return xp.asarray(hn)


def _auc(h, xp):
    """Mann-Whitney AUC of each replicate's histogram ``(B, 2M)`` (negatives | positives)."""
    M = h.shape[1] // 2
    neg, pos = h[:, :M], h[:, M:]
    below = xp.cumulative_sum(neg, axis=1) - neg
    u2 = xp.sum(pos * (2 * below + neg), axis=1)
    P, N = xp.sum(pos, axis=1), xp.sum(neg, axis=1)
    return R.auc_from_u2(u2, P, N, xp)[0]


def _ap(h, xp, f):
    """Step-sum AP of each replicate's histogram, a bin as one threshold."""
    M = h.shape[1] // 2
    neg, pos = xp.astype(h[:, :M], f), xp.astype(h[:, M:], f)
    # weight at or above each bin: reverse cumulative sums
    tp = xp.flip(xp.cumulative_sum(xp.flip(pos, axis=1), axis=1), axis=1)
    fp = xp.flip(xp.cumulative_sum(xp.flip(neg, axis=1), axis=1), axis=1)
    has = pos > 0
    prec = tp / xp.where(has, tp + fp, xp.ones_like(tp))
    P = tp[:, 0]
    ap = xp.sum(xp.where(has, pos * prec, xp.zeros_like(prec)), axis=1) / \
        xp.where(P == 0, 1.0, P)
    return B.nan_if(P == 0, ap, xp)
