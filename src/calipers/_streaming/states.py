"""Mergeable metric states for streaming and distributed evaluation.

Each state is a ``NamedTuple`` of arrays, so it is a JAX pytree: keep one per
device, ``update`` it with local batches inside ``jit``/``shard_map``, reduce
with ``jax.lax.psum(state, axis_name)`` (the sum of the fields is the merge)
and ``compute`` once. The same classes work on NumPy and array-api-strict
arrays (pass ``xp=`` to ``init``).

Life cycle: ``State.init(...)`` -> ``state.update(batch...)`` (returns a new
state; nothing is mutated) -> ``state.merge(other)`` / ``psum`` ->
``state.compute()``.

Exactness: every field is a sum, and ``merge`` adds fields. Integer counts
(rows, tokens, bytes, unweighted bin counts) merge exactly, so merging the
states of two batches equals one state of the concatenated batch, bit for
bit. Float sums (confidences, NLL, losses) are exact whenever the partial
sums are representable (e.g. dyadic values) and otherwise agree up to the
rounding of a different summation order.

Padding: every ``update`` takes ``mask=`` (keyword-only), one entry per row,
boolean or 0/1 (True / 1 keeps the row). A masked row adds nothing at all: its
values may be anything (NaN, labels out of range) and are never checked, and
it adds nothing to the integer counts, which stay integers (no
``weighted=True`` needed). A batch with nothing unmasked, or with zero total
``sample_weight``, adds nothing and is never invalid, so a shard of pure
padding leaves a ``psum`` unchanged. A mask that is not boolean or 0/1, or
whose shape is not ``(rows,)``, raises ``ValueError`` naming ``mask``
(under ``jit``, values other than 0/1 make the batch invalid).

Invalid input: eager ``update`` raises ``ValueError`` as the one-shot
functions do. Under ``jit`` it cannot raise; the batch is still added (its
values may be garbage) and the ``invalid`` field counts such batches;
``compute`` returns NaN for every value when ``invalid > 0``.

Count limits: integer counts are int64 (at most ``2**63 - 1`` =
9223372036854775807) or, on JAX without x64, int32 (at most ``2**31 - 1`` =
2147483647). Each state's totals (rows, tokens, bytes, the weight of each
histogram) are checked before they could pass that limit: eagerly ``update``
and ``merge`` raise ``ValueError`` naming the limit; under ``jit`` the update
or merge is counted in ``invalid`` (so ``compute`` is NaN) instead of
wrapping. ``jax.lax.psum`` adds the fields without a check: keep the total
over all devices below the limit (enable x64 for pod-scale sums);
``compute`` returns NaN when it finds a negative (wrapped) count.

Static configuration (number of classes, bins) lives in the array shapes, never
in fields, so ``psum`` over a state adds only data.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.compile import compiled
from .. import _calibration as _cal
from .. import _classification as _clf
from .. import _language as _lang
from .. import _probability as _prob
from .. import _regression as _reg

__all__ = [
    "ConfusionState",
    "ConfusionMetrics",
    "CalibrationState",
    "NLLState",
    "ProbabilityLossState",
    "RegressionState",
    "RegressionSummary",
    "MeanState",
    "MeanSummary",
    "TopKAccuracyState",
]


from .base import (  # noqa: E402  (the shared protocol helpers, under their old names here)
    bad as _bad, batch_total_flag as _batch_total_flag, check_host_ints as _check_host_ints,
    count_totals as _count_totals, drop_masked as _drop_masked, fill_one as _fill_one,
    fill_zero as _fill_zero, finish, integral as _integral, limit_flag as _limit_flag,
    limit_text as _limit_text, merge, namespace as _namespace,
    nan_if_invalid as _nan_if_invalid, row_mask as _row_mask, state_xp as _state_xp,
    streaming_state, to as _to)


# --------------------------------------------------------------------------
# confusion counts
# --------------------------------------------------------------------------

class ConfusionSummary(NamedTuple):
    confusion_matrix: Any  #: (K, K) counts, rows true class, columns predicted
    accuracy: Any          #: trace / total; NaN when empty or invalid


class ConfusionMetrics(NamedTuple):
    """What :meth:`ConfusionState.summary` returns (a pytree; 0-d values, or (L,) per class).

    Each value is the one-shot function's on the streamed rows: precision,
    recall and F-beta as :func:`calipers.precision_recall_fscore_support`,
    specificity as :func:`calipers.specificity_score` (all with the given
    ``average``), the rest as :func:`calipers.accuracy_score`,
    :func:`calipers.balanced_accuracy_score`, :func:`calipers.matthews_corrcoef`
    and :func:`calipers.cohen_kappa_score` (those four take no ``average``).
    """

    precision: Any
    recall: Any
    fbeta: Any
    specificity: Any
    support: Any            #: (L,) true count per class with ``average=None``, else None
    accuracy: Any
    balanced_accuracy: Any
    matthews_corrcoef: Any
    cohen_kappa: Any


@streaming_state(takes=("labels", "preds"))
class ConfusionState(NamedTuple):
    """Confusion counts of a K-class problem (K = 2 for binary 0/1 labels).

    ``counts[i, j]``: rows with true class i predicted as j (scikit-learn's
    ``confusion_matrix`` layout). Integer counts unless ``weighted=True``.
    ``update(..., mask=)`` leaves padding rows out and keeps the counts
    integers. Limit: the total count of rows at most ``2**63 - 1``
    (``2**31 - 1`` = 2147483647 on JAX without x64), checked eagerly
    (``ValueError``) and flagged under ``jit`` (``compute`` NaN).

    No rows (or zero total weight): ``compute().accuracy`` is NaN with one
    :class:`UndefinedMetricWarning` eagerly (the one-shot functions refuse
    empty input); under ``jit`` NaN and no warning.
    """

    counts: Any
    invalid: Any

    @classmethod
    def init(cls, num_classes, *, xp=None, weighted=False) -> ConfusionState:
        """An empty state for labels ``0 .. num_classes - 1``."""
        if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) \
                or num_classes < 2:
            raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
        xp = _namespace(xp)
        dt = B.acc_float(xp) if weighted else B.acc_int(xp)
        K = int(num_classes)
        return cls(xp.zeros((K, K), dtype=dt), xp.zeros((), dtype=B.acc_int(xp)))

    def _count_totals(self):
        if _integral(self.counts):
            return (_state_xp(self).sum(self.counts),)
        return ()

    @compiled
    def update(self, y_true, y_pred, *, mask=None, sample_weight=None) -> ConfusionState:
        """Add a batch of integer labels ``y_true`` and predictions ``y_pred`` (n,).

        ``mask`` (n,), boolean or 0/1: False / 0 marks a padding row, which
        adds nothing (its values are not checked). ``sample_weight`` needs a
        state made with ``weighted=True``.
        """
        xp = _state_xp(self)
        y_true, y_pred, sample_weight, mask = _to(xp, y_true, y_pred, sample_weight, mask)
        K = self.counts.shape[0]
        B.check_1d("y_true", y_true)
        B.check_1d("y_pred", y_pred)
        if sample_weight is not None:
            B.check_1d("sample_weight", sample_weight)
        B.check_same_length(y_true=y_true, y_pred=y_pred, sample_weight=sample_weight)
        if sample_weight is not None and xp.isdtype(self.counts.dtype, "integral"):
            raise ValueError("sample_weight needs a state made with init(..., weighted=True)")
        keep, bad_m = _row_mask(mask, y_true.shape[0], xp)
        keep, (y_true, y_pred, sample_weight) = _drop_masked(
            keep, [y_true, y_pred, sample_weight], [_fill_one, _fill_one, _fill_zero], xp)
        t, bad_t = _cal.check_class_index("y_true", y_true, K, xp)
        p, bad_p = _cal.check_class_index("y_pred", y_pred, K, xp)
        invalid = bad_t | bad_p | bad_m
        ids = t * K + p
        if B.is_traced(y_true, y_pred):
            # rows with out-of-range labels are not counted (id K*K is dropped)
            rowbad = ((y_true < 0) | (y_true >= K) | (y_pred < 0) | (y_pred >= K))
            if xp.isdtype(y_true.dtype, "real floating") or xp.isdtype(y_pred.dtype, "real floating"):
                rowbad = rowbad | (y_true != xp.round(y_true)) | (y_pred != xp.round(y_pred))
            ids = xp.where(rowbad, K * K, ids)
        if sample_weight is None:
            vals = xp.ones(ids.shape, dtype=self.counts.dtype) if keep is None else \
                xp.astype(keep, self.counts.dtype)
        else:
            invalid = invalid | V.check_weights("sample_weight", sample_weight, xp)
            vals = xp.astype(sample_weight, self.counts.dtype)
        add = B.segment_sum(vals, ids, K * K, xp)
        return merge(self, ConfusionState(xp.reshape(add, (K, K)),
                                          xp.astype(invalid, self.invalid.dtype)))

    @compiled
    def compute(self) -> ConfusionSummary:
        """The counts and the accuracy (NaN with a warning eagerly when empty)."""
        xp = _state_xp(self)
        f = B.acc_float(xp)
        c = xp.astype(self.counts, f)
        K = c.shape[0]
        eye = xp.astype(xp.reshape(xp.arange(K), (-1, 1)) == xp.reshape(xp.arange(K), (1, -1)), f)
        total = xp.sum(c)
        accv = xp.sum(c * eye) / xp.where(total > 0, total, 1.0)
        V.warn_if((total == 0) & ~_bad(self, xp), "ConfusionState holds no rows (or zero "
                  "weight): accuracy is undefined; NaN", xp)
        return ConfusionSummary(self.counts, finish(self, B.nan_if(total == 0, accv, xp)))

    def summary(self, *, average=None, beta=1.0, zero_division="nan", pos_label=1, labels=None,
                adjusted=False, kappa_weights=None) -> ConfusionMetrics:
        """Every confusion-matrix metric of the streamed rows (:class:`ConfusionMetrics`).

        The counts go through the one-shot functions' own formulas
        (``calipers._classification``: :func:`confusion_metrics`,
        ``balanced_accuracy_from_counts``, ``mcc_from_counts``,
        ``kappa_from_confusion``), so a state fed any split of the rows
        equals the one-shot functions on all rows.

        Parameters
        ----------
        average : {None, "binary", "micro", "macro", "weighted"}
            For precision, recall, F-beta and specificity, as
            :func:`calipers.precision_recall_fscore_support` (default None:
            one value per class). ``"binary"`` needs ``num_classes=2``.
        beta : float >= 0
            F-beta's beta (``inf`` gives recall).
        zero_division : "nan" (default), NaN, 0, 1 or "warn"
            As the one-shot functions: the value of a ratio with a zero
            denominator; ``"nan"`` values are left out of the averages.
        pos_label : {0, 1}
            The positive class index for ``average="binary"``.
        labels : sequence of class indices, optional
            The classes to report (and average over); all by default.
        adjusted : bool
            Chance-adjusted balanced accuracy.
        kappa_weights : {None, "linear", "quadratic"}
            Cohen's kappa disagreement weights (``weights=`` of
            :func:`calipers.cohen_kappa_score`).

        Returns
        -------
        ConfusionMetrics
            Floats (float64; float32 on JAX without x64). Undefined values
            (no rows, constant labels for MCC, zero expected disagreement for
            kappa, a zero denominator under ``zero_division="nan"``) are NaN
            with an :class:`UndefinedMetricWarning` eagerly; every value is
            NaN once the state is invalid (under ``jit``).

        Raises
        ------
        ValueError
            An unknown ``average``, ``zero_division`` or ``kappa_weights``, a
            negative ``beta``, ``average="binary"`` with more than two
            classes, ``labels`` that are not class indices.
        """
        kappa_weights = V.choice(kappa_weights, "kappa_weights", (None, "linear", "quadratic"))
        adjusted = V.choice(adjusted, "adjusted", (False, True))
        return self._summary(average, float(beta) if not isinstance(beta, bool) else beta,
                             zero_division, pos_label,
                             None if labels is None else tuple(np.asarray(labels).tolist()),
                             adjusted, kappa_weights)

    @compiled(nan_ok=True)
    def _summary(self, average, beta, zero_division, pos_label, labels, adjusted, kappa_weights):
        xp = _state_xp(self)
        f = B.acc_float(xp)
        bad = _bad(self, xp)
        final, support = _clf.confusion_metrics(self.counts, average=average, beta=beta,
                                                zero_division=zero_division,
                                                pos_label=pos_label, labels=labels, invalid=bad)
        c = xp.astype(self.counts, f)
        total = xp.sum(c)
        tp = xp.sum(c * xp.astype(xp.eye(c.shape[0], dtype=xp.bool, device=B.device(c)), f),
                    axis=1)
        true, pred = xp.sum(c, axis=1), xp.sum(c, axis=0)
        acc = B.nan_if(total == 0, xp.sum(tp) / xp.where(total > 0, total, 1.0), xp)
        ba, ba_undef, _ = _clf.balanced_accuracy_from_counts(tp, true, adjusted, xp)
        mcc, mcc_undef = _clf.mcc_from_counts(tp, pred, true, total, xp)
        kappa, k_empty, k_none = _clf.kappa_from_confusion(c, kappa_weights, math.nan, xp)
        for undefined, what in ((total == 0, "accuracy (no rows)"),
                                (ba_undef, "balanced accuracy (no class present"
                                 + (", or one with adjusted=True)" if adjusted else ")")),
                                (mcc_undef, "MCC (both y_true and y_pred constant, or no rows)"),
                                (k_empty | k_none, "Cohen's kappa (no rows, or zero expected "
                                 "disagreement)")):
            V.warn_if(undefined & ~bad, f"ConfusionState: {what} is undefined; NaN", xp)
        prec, rec, fb, spec = (final[k] for k in ("precision", "recall", "f-score",
                                                  "specificity"))
        if support is not None:
            support = xp.where(bad, xp.full_like(support, -1), support) \
                if _integral(support) else B.nan_if(bad, support, xp)
        return ConfusionMetrics(*finish(self, prec, rec, fb, spec), support,
                                *finish(self, acc, ba, mcc, kappa))

    def _from_outputs(self, out, **options):
        who = "ConfusionState"
        return self.update(out.labels(who), out.predictions(who), mask=out.get("mask"),
                           sample_weight=out.get("sample_weight"), **options)


# --------------------------------------------------------------------------
# calibration bins
# --------------------------------------------------------------------------

@streaming_state(takes=("labels", "probs"))
class CalibrationState(NamedTuple):
    """Equal-width calibration bins: weight, confidence sum and outcome sum per bin.

    Shapes ``(C, n_bins)`` with ``C = 1`` (modes ``"positive"`` and
    ``"top_label"``) or ``C = num_classes`` (``"classwise"``). Binning and
    modes are those of :func:`calipers.expected_calibration_error`. Equal-mass
    bins need a global sort and are not mergeable; they are not offered here.

    ``update(..., mask=)`` leaves padding rows out (the bin counts stay
    integers); a batch with nothing unmasked or zero total ``sample_weight``
    adds nothing and is not invalid (unlike the one-shot function, a batch
    needs no positive weight). Limit: each channel's total count at most
    ``2**63 - 1`` (``2**31 - 1`` = 2147483647 on JAX without x64), checked
    eagerly (``ValueError``) and flagged under ``jit`` (``compute`` NaN).

    No rows (or zero total weight): ``compute`` is NaN with one
    :class:`UndefinedMetricWarning` eagerly; under ``jit`` NaN and no
    warning. ``diagram`` gives NaN confidence and accuracy for every empty
    bin, without a warning (an empty bin is part of the diagram).
    """

    weight: Any
    conf_sum: Any
    outcome_sum: Any
    invalid: Any

    @classmethod
    def init(cls, n_bins=15, *, num_classes=None, xp=None, weighted=False, from_logits=False) -> CalibrationState:
        """An empty state; ``num_classes`` only for ``mode="classwise"`` updates.

        ``from_logits=True``: ``update`` takes logits, binned as
        :func:`calipers.expected_calibration_error` with ``from_logits=True``
        does (sigmoid / softmax); such a state is a subclass and merges only
        with states made the same way."""
        _cal.check_options(n_bins, "uniform")
        from_logits = V.choice(from_logits, "from_logits", (False, True))
        xp = _namespace(xp)
        C = 1 if num_classes is None else int(num_classes)
        f = B.acc_float(xp)
        wdt = f if weighted else B.acc_int(xp)
        shape = (C, int(n_bins))
        klass = _LogitCalibrationState if from_logits else CalibrationState
        return klass(xp.zeros(shape, dtype=wdt), xp.zeros(shape, dtype=f),
                     xp.zeros(shape, dtype=f), xp.zeros((), dtype=B.acc_int(xp)))

    @property
    def from_logits(self) -> bool:
        """True when ``update`` takes logits (``init(from_logits=True)``)."""
        return False

    def _count_totals(self):
        if _integral(self.weight):
            return (_state_xp(self).sum(self.weight, axis=-1),)
        return ()

    @compiled
    def update(self, y_true, y_prob, *, mask=None, sample_weight=None, mode=None) -> CalibrationState:
        """Add a batch; arguments as :func:`calipers.expected_calibration_error`.

        ``mask`` (n,), boolean or 0/1: False / 0 marks a padding row, which
        adds nothing (its values are not checked). ``sample_weight`` needs a
        state made with ``weighted=True``; all-zero weights are accepted.
        """
        xp = _state_xp(self)
        y_true, y_prob, sample_weight, mask = _to(xp, y_true, y_prob, sample_weight, mask)
        if sample_weight is not None and xp.isdtype(self.weight.dtype, "integral"):
            raise ValueError("sample_weight needs a state made with init(..., weighted=True)")
        B.check_1d("y_true", y_true)
        if sample_weight is not None:
            B.check_1d("sample_weight", sample_weight)
        if y_prob.ndim >= 1:
            B.check_same_length(y_true=y_true, y_prob=y_prob, sample_weight=sample_weight)
        keep, bad_m = _row_mask(mask, y_true.shape[0], xp)
        if y_prob.ndim >= 1 and y_prob.shape[0] == 0 and y_true.shape[0] == 0:
            return self                      # an empty batch adds nothing
        keep, (y_true, y_prob, sample_weight) = _drop_masked(
            keep, [y_true, y_prob, sample_weight], [_fill_one, _fill_one, _fill_zero], xp)
        if y_true.shape[0] == 0:
            return self                      # nothing unmasked: adds nothing
        # weights are checked here, not by channels: a zero total is fine for a batch
        d = _cal.channels(y_true, y_prob, None, mode, self.from_logits)
        invalid = d.invalid | bad_m
        f = B.acc_float(xp)
        rw = d.w
        if sample_weight is not None:
            invalid = invalid | V.check_weights("sample_weight", sample_weight, xp)
            rw = xp.astype(sample_weight, f)
        if keep is not None:
            rw = rw * xp.astype(keep, f)
        C, nb = self.weight.shape
        if d.conf.shape[0] != C:
            raise ValueError(f"this state has {C} channel(s) but the update has "
                             f"{d.conf.shape[0]} (classwise mode needs init(num_classes=K))")
        n = d.conf.shape[1]
        # the uniform bins of expected_calibration_error (_cal._bin_stats), with
        # integer bin counts for an unweighted state
        bins = _cal.uniform_bins(d.conf, nb, xp)
        ids = xp.reshape(bins + xp.reshape(xp.arange(C, dtype=bins.dtype) * nb, (-1, 1)), (-1,))
        wt = xp.reshape(xp.broadcast_to(xp.reshape(rw, (1, -1)), (C, n)), (-1,))
        Sb = B.segment_sum(wt * xp.reshape(d.conf, (-1,)), ids, C * nb, xp)
        Ob = B.segment_sum(wt * xp.reshape(d.outcome, (-1,)), ids, C * nb, xp)
        if _integral(self.weight):
            cnt = xp.ones(ids.shape, dtype=self.weight.dtype) if keep is None else \
                xp.reshape(xp.broadcast_to(xp.reshape(xp.astype(keep, self.weight.dtype),
                                                      (1, -1)), (C, n)), (-1,))
            Wb = B.segment_sum(cnt, ids, C * nb, xp)
        else:
            Wb = B.segment_sum(wt, ids, C * nb, xp)
        shape = (C, nb)
        add = type(self)(xp.reshape(Wb, shape), xp.reshape(Sb, shape),
                               xp.reshape(Ob, shape), xp.astype(invalid, self.invalid.dtype))
        return merge(self, add)

    @compiled
    def compute(self, norm="l1"):
        """Expected calibration error (``norm`` ``"l1"``, ``"l2"`` or ``"max"``); NaN (with
        an :class:`UndefinedMetricWarning` eagerly) when the state holds no weight."""
        _cal.check_options(1, "uniform", norm)
        xp = _state_xp(self)
        W = xp.astype(self.weight, B.acc_float(xp))
        value = xp.mean(_cal.ece_from_bins(W, self.conf_sum, self.outcome_sum, norm, xp))
        empty = xp.sum(W) == 0
        V.warn_if(empty & ~_bad(self, xp), "CalibrationState holds no rows (or zero weight): "
                  "the expected calibration error is undefined; NaN", xp)
        return finish(self, B.nan_if(empty, value, xp))

    def _from_outputs(self, out, **options):
        who = "CalibrationState"
        return self.update(out.labels(who), _probs_or_logits(self, out, who),
                           mask=out.get("mask"), sample_weight=out.get("sample_weight"),
                           **options)

    def diagram(self):
        """:class:`calipers.ReliabilityDiagram` data from the bins."""
        xp = _state_xp(self)
        f = B.acc_float(xp)
        W = xp.astype(self.weight, f)
        empty = (W == 0) | _bad(self, xp)
        safe = xp.where(W == 0, 1.0, W)
        conf = B.nan_if(empty, self.conf_sum / safe, xp)
        accv = B.nan_if(empty, self.outcome_sum / safe, xp)
        nb = W.shape[1]
        edges = xp.arange(nb + 1, dtype=f) / nb
        lower, upper = edges[:-1], edges[1:]
        count = self.weight
        if W.shape[0] == 1:
            conf, accv, count = conf[0, :], accv[0, :], count[0, :]
        else:
            lower = xp.broadcast_to(xp.reshape(lower, (1, -1)), W.shape)
            upper = xp.broadcast_to(xp.reshape(upper, (1, -1)), W.shape)
        return _cal.ReliabilityDiagram(conf, accv, count, lower, upper)


class _LogitCalibrationState(CalibrationState):
    """:class:`CalibrationState` fed logits (``init(from_logits=True)``)."""

    __slots__ = ()

    @property
    def from_logits(self) -> bool:
        return True


# --------------------------------------------------------------------------
# NLL / token sums
# --------------------------------------------------------------------------

class NLLSummary(NamedTuple):
    perplexity: Any     #: exp(NLL / tokens)
    nll_per_token: Any  #: mean NLL in nats
    bits_per_byte: Any  #: NLL / (ln 2 * bytes); NaN when no bytes were counted


@streaming_state(takes=("token_logprobs", "num_bytes"))
class NLLState(NamedTuple):
    """Sums for perplexity and bits per byte: total NLL (nats), tokens, bytes.

    ``update(..., mask=)`` (the shape of ``token_logprobs``) leaves padding
    tokens out; a batch with no unmasked token adds nothing. Limits: tokens
    and bytes each at most ``2**63 - 1`` (``2**31 - 1`` = 2147483647 on JAX
    without x64), checked eagerly (``ValueError``) and flagged under ``jit``
    (``compute`` NaN).

    No tokens: every value of ``compute`` is NaN with one
    :class:`UndefinedMetricWarning` eagerly; under ``jit`` NaN and no
    warning. Tokens but no bytes (``num_bytes`` never given): only
    ``bits_per_byte`` is NaN, without a warning, since such a state does
    not track bytes (:func:`calipers.bits_per_byte` needs a positive byte
    count).
    """

    nll: Any
    tokens: Any
    bytes: Any
    invalid: Any

    @classmethod
    def init(cls, *, xp=None) -> NLLState:
        xp = _namespace(xp)
        i = B.acc_int(xp)
        return cls(xp.zeros((), dtype=B.acc_float(xp)), xp.zeros((), dtype=i),
                   xp.zeros((), dtype=i), xp.zeros((), dtype=i))

    def _count_totals(self):
        return (self.tokens, self.bytes)

    def update(self, token_logprobs, *, mask=None, num_bytes=0) -> NLLState:
        """Add token log-likelihoods (as :func:`calipers.perplexity`) and their text's bytes.

        ``mask`` (the shape of ``token_logprobs``), boolean or 0/1: False / 0
        marks a padding token (its value is not checked). ``num_bytes``: the
        batch's bytes (a number or an array summed).
        """
        _check_host_ints("num_bytes", num_bytes, self.bytes.dtype, _state_xp(self))
        return self._update(token_logprobs, mask=mask, num_bytes=num_bytes)

    @compiled
    def _update(self, token_logprobs, *, mask=None, num_bytes=0):
        xp = _state_xp(self)
        token_logprobs, mask, num_bytes = _to(xp, token_logprobs, mask, num_bytes)
        if token_logprobs.ndim >= 1 and token_logprobs.shape[0] == 0:
            return self                      # an empty batch adds nothing
        _, nll, m, invalid, acc = _lang.prepare_logprobs(token_logprobs, mask)
        tokens = xp.asarray(nll.size, dtype=self.tokens.dtype) if m is None else \
            xp.sum(xp.astype(m == 1, self.tokens.dtype))
        _lang.check_integral("num_bytes", num_bytes, xp)
        nbytes = xp.sum(xp.astype(num_bytes, self.bytes.dtype))
        invalid = invalid | V.fail_if(nbytes < 0, "num_bytes", "must be >= 0 (in total)", xp)
        if B.is_traced(nbytes):
            invalid = invalid | _batch_total_flag("num_bytes", nbytes, num_bytes,
                                                  self.bytes.dtype, xp)
        add = NLLState(xp.sum(nll), tokens, nbytes, xp.astype(invalid, self.invalid.dtype))
        return merge(self, add)

    @compiled
    def compute(self) -> NLLSummary:
        """Perplexity, NLL per token and bits per byte (see the class notes for NaN)."""
        xp = _state_xp(self)
        f = B.acc_float(xp)
        tok = xp.astype(self.tokens, f)
        nb = xp.astype(self.bytes, f)
        mean = B.nan_if(tok == 0, self.nll / xp.where(tok > 0, tok, 1.0), xp)
        V.warn_if((tok == 0) & ~_bad(self, xp), "NLLState holds no tokens: perplexity, NLL per "
                  "token and bits per byte are undefined; NaN", xp)
        bpb = B.nan_if(nb == 0, self.nll / (math.log(2.0) * xp.where(nb > 0, nb, 1.0)), xp)
        return NLLSummary(*finish(self, xp.exp(mean), mean, bpb))

    def _from_outputs(self, out, **options):
        """``token_logprobs=`` as given, or the log-softmax of ``logits`` (..., V) at
        ``labels`` (...): the log-likelihood of each target token."""
        who = "NLLState"
        if "token_logprobs" in out:
            lp = out.get("token_logprobs")
        else:
            out.require(who, "token_logprobs", "logits")
            logp = out.log_probabilities(who)
            xp = out._xp()
            (lab,) = _to(xp, out.labels(who))
            idx = xp.reshape(xp.astype(lab, B.acc_int(xp)), tuple(lab.shape) + (1,))
            lp = xp.take_along_axis(logp, idx, axis=-1)[..., 0]
        return self.update(lp, mask=out.get("mask"), num_bytes=out.get("num_bytes") or 0,
                           **options)


# --------------------------------------------------------------------------
# log-loss and Brier sums
# --------------------------------------------------------------------------

class ProbabilityLossSummary(NamedTuple):
    log_loss: Any
    brier: Any


@streaming_state(takes=("labels", "probs"))
class ProbabilityLossState(NamedTuple):
    """Sums of per-row log loss and Brier score and of the weights.

    Per-row values are those of :func:`calipers.log_loss` and
    :func:`calipers.brier_score_loss` (default ``scale_by_half="auto"``),
    binary (1-D ``y_prob``, labels 0/1) or multiclass (2-D, labels 0..K-1).

    ``update(..., mask=)`` leaves padding rows out (an unweighted state's
    count stays an integer); a batch with nothing unmasked or zero total
    ``sample_weight`` adds nothing. Limit (unweighted): the row count at most
    ``2**63 - 1`` (``2**31 - 1`` = 2147483647 on JAX without x64), checked
    eagerly (``ValueError``) and flagged under ``jit`` (``compute`` NaN).

    No rows (or zero total weight): both values NaN with one
    :class:`UndefinedMetricWarning` eagerly (the one-shot functions refuse
    empty input); under ``jit`` NaN and no warning.
    """

    log_loss_sum: Any
    brier_sum: Any
    weight: Any
    invalid: Any

    @classmethod
    def init(cls, *, xp=None, weighted=False, from_logits=False) -> ProbabilityLossState:
        """An empty state. ``from_logits=True``: ``update`` takes logits (as
        :func:`calipers.log_loss` with ``from_logits=True``: log-sigmoid /
        log-softmax, nothing clipped); such a state is a subclass and merges
        only with states made the same way."""
        from_logits = V.choice(from_logits, "from_logits", (False, True))
        xp = _namespace(xp)
        f = B.acc_float(xp)
        klass = _LogitProbabilityLossState if from_logits else ProbabilityLossState
        return klass(xp.zeros((), dtype=f), xp.zeros((), dtype=f),
                     xp.zeros((), dtype=f if weighted else B.acc_int(xp)),
                     xp.zeros((), dtype=B.acc_int(xp)))

    @property
    def from_logits(self) -> bool:
        """True when ``update`` takes logits (``init(from_logits=True)``)."""
        return False

    def _count_totals(self):
        return (self.weight,) if _integral(self.weight) else ()

    @compiled
    def update(self, y_true, y_prob, *, mask=None, sample_weight=None) -> ProbabilityLossState:
        """Add a batch; arguments as :func:`calipers.log_loss`.

        ``mask`` (n,), boolean or 0/1: False / 0 marks a padding row, which
        adds nothing (its values are not checked). ``sample_weight`` needs a
        state made with ``weighted=True``.
        """
        xp = _state_xp(self)
        y_true, y_prob, sample_weight, mask = _to(xp, y_true, y_prob, sample_weight, mask)
        if sample_weight is not None and xp.isdtype(self.weight.dtype, "integral"):
            raise ValueError("sample_weight needs a state made with init(..., weighted=True)")
        f = B.acc_float(xp)
        n = y_prob.shape[0] if y_prob.ndim >= 1 else y_true.shape[0]
        keep, bad_m = _row_mask(mask, n, xp)
        if y_prob.ndim >= 1 and y_prob.shape[0] == 0 and y_true.shape[0] == 0:
            return self                      # an empty batch adds nothing
        if sample_weight is not None:
            B.check_1d("sample_weight", sample_weight)
        B.check_same_length(y_true=y_true, y_prob=y_prob, sample_weight=sample_weight)
        keep, (y_true, y_prob, sample_weight) = _drop_masked(
            keep, [y_true, y_prob, sample_weight], [_fill_one, _fill_one, _fill_zero], xp)
        if y_prob.shape[0] == 0:
            return self                      # nothing unmasked: adds nothing
        logits = self.from_logits
        if y_prob.ndim == 2:
            _, onehot, p, w, invalid, _ = _prob.prepare_multiclass(y_true, y_prob,
                                                                   sample_weight, None, logits)
            # the one-shot log_loss's rows (clipped at the probabilities' epsilon,
            # or log-softmax of logits)
            ll = xp.astype(_prob.multiclass_log_loss_rows(onehot, p, xp, logits), f)
            if logits:
                p = _prob.probabilities_of(p, xp)
            onehot, p = xp.astype(onehot, f), xp.astype(p, f)
            K = p.shape[1]
            diff = p - onehot
            br = xp.sum(diff * diff, axis=1) * (0.5 if K < 3 else 1.0)
        else:  # the very per-row formulas of log_loss / brier_score_loss
            _, y, p, w, invalid, _ = _prob.prepare_prob(y_true, y_prob, sample_weight,
                                                        from_logits=logits)
            if logits:
                ll = xp.astype(_prob.binary_log_loss_logit_rows(y, p, xp), f)
                p = _prob.probabilities_of(p, xp)
            else:
                ll = xp.astype(_prob.binary_log_loss_rows(y, p, xp), f)
            br = xp.astype(_prob.binary_brier_rows(y, p, xp), f)
        invalid = invalid | bad_m
        if w is None and keep is None:
            ws = xp.asarray(ll.shape[0], dtype=self.weight.dtype)
            lsum, bsum = xp.sum(ll), xp.sum(br)
        elif w is None:
            ws = xp.sum(xp.astype(keep, self.weight.dtype))
            zero = xp.zeros_like(ll)
            lsum, bsum = xp.sum(xp.where(keep, ll, zero)), xp.sum(xp.where(keep, br, zero))
        else:                                # padding rows already weigh 0
            wf = xp.astype(w, f)
            ws = xp.sum(wf)
            lsum, bsum = xp.sum(wf * ll), xp.sum(wf * br)
        add = type(self)(lsum, bsum, xp.astype(ws, self.weight.dtype),
                                   xp.astype(invalid, self.invalid.dtype))
        return merge(self, add)

    @compiled
    def compute(self) -> ProbabilityLossSummary:
        """Mean log loss and Brier score (NaN with a warning eagerly when empty)."""
        xp = _state_xp(self)
        W = xp.astype(self.weight, B.acc_float(xp))
        safe = xp.where(W > 0, W, 1.0)
        V.warn_if((W == 0) & ~_bad(self, xp), "ProbabilityLossState holds no rows (or zero "
                  "weight): log loss and Brier score are undefined; NaN", xp)
        return ProbabilityLossSummary(*finish(
            self, *[B.nan_if(W == 0, s / safe, xp) for s in (self.log_loss_sum, self.brier_sum)]))

    def _from_outputs(self, out, **options):
        who = "ProbabilityLossState"
        return self.update(out.labels(who), _probs_or_logits(self, out, who),
                           mask=out.get("mask"), sample_weight=out.get("sample_weight"),
                           **options)


class _LogitProbabilityLossState(ProbabilityLossState):
    """:class:`ProbabilityLossState` fed logits (``init(from_logits=True)``)."""

    __slots__ = ()

    @property
    def from_logits(self) -> bool:
        return True


def _probs_or_logits(state, out, who):
    """What a state's ``update`` takes from model outputs: ``logits`` for a
    ``from_logits`` state (required), else probabilities (``probs``, or the
    sigmoid / softmax of ``logits``)."""
    if state.from_logits:
        out.require(f"{who}(from_logits=True)", "logits")
        return out.get("logits")
    return out.probabilities(who)


# --------------------------------------------------------------------------
# shared: row weights of an integer-count or weighted state
# --------------------------------------------------------------------------

def _row_weights(state_weight, keep, sample_weight, n, xp):
    """``(w, total, invalid)``: per-row float weights (None: every row 1), their total
    in the state's weight dtype, and the weights' invalid flag. Padding rows weigh 0."""
    f = B.acc_float(xp)
    if sample_weight is not None:
        if _integral(state_weight):
            raise ValueError("sample_weight needs a state made with init(..., weighted=True)")
        invalid = V.check_weights("sample_weight", sample_weight, xp)
        w = xp.astype(sample_weight, f)
        if keep is not None:
            w = xp.where(keep, w, xp.zeros_like(w))
        return w, xp.astype(xp.sum(w), state_weight.dtype), invalid
    if keep is None:
        return None, xp.asarray(n, dtype=state_weight.dtype), xp.asarray(False)
    return (xp.astype(keep, f), xp.sum(xp.astype(keep, state_weight.dtype)),
            xp.asarray(False))


def _wsum(values, w, xp):
    return xp.sum(values) if w is None else xp.sum(w * values)


def _check_weighted(weighted):
    return V.choice(weighted, "weighted", (False, True))


def _empty_sums(cls, kinds, weighted, xp):
    """An empty state of 0-d sums, one field per letter of ``kinds``: ``f`` a float
    sum, ``i`` an integer count, ``w`` the weight (float if ``weighted``, else a
    count)."""
    weighted = _check_weighted(weighted)
    xp = _namespace(xp)
    f, i = B.acc_float(xp), B.acc_int(xp)
    dtypes = {"f": f, "i": i, "w": f if weighted else i}
    return cls(*[xp.zeros((), dtype=dtypes[k]) for k in kinds])


# --------------------------------------------------------------------------
# regression sums
# --------------------------------------------------------------------------

class RegressionSummary(NamedTuple):
    """What :meth:`RegressionState.compute` returns (0-d floats)."""

    mean_squared_error: Any
    root_mean_squared_error: Any
    mean_absolute_error: Any
    r2: Any


@streaming_state(takes=("labels", "preds"))
class RegressionState(NamedTuple):
    """Sums for MSE, RMSE, MAE and R² of one output: weight, Σy, Σy², Σ(y-ŷ)², Σ|y-ŷ|.

    ``compute`` gives :func:`calipers.mean_squared_error`,
    :func:`calipers.root_mean_squared_error`, :func:`calipers.mean_absolute_error`
    and :func:`calipers.r2_score` (one output, 1-D ``y_true`` / ``y_pred``) of
    every row added, weighted by ``sample_weight`` (a state made with
    ``weighted=True``). R² uses the one-shot formula (``r2_from_sums``) with
    ``SS_tot = Σw y² / W - (Σw y / W)²`` from the merged sums: exact for
    dyadic data, otherwise accurate to about ``eps · mean(y²) / var(y)``
    relative (subtract a known offset from ``y_true`` and ``y_pred`` first
    when the mean is far larger than the spread). ``SS_tot`` at most
    ``4 eps · mean(y²)`` counts as constant ``y_true``: R² NaN (or
    ``force_finite``'s 1.0 / 0.0), as :func:`calipers.r2_score`.

    ``update(..., mask=)`` leaves padding rows out (their values are not
    checked); a batch with nothing unmasked adds nothing. No rows (or zero
    total weight): every value NaN. Limit (unweighted): the row count at most
    ``2**63 - 1`` (``2**31 - 1`` = 2147483647 on JAX without x64), checked
    eagerly (``ValueError``) and flagged under ``jit`` (``compute`` NaN).
    Eagerly NaN/inf values, shapes that differ and negative weights raise
    ``ValueError``; under ``jit`` they make ``compute`` NaN.
    """

    weight: Any
    sum_y: Any
    sum_y2: Any
    sum_sq: Any
    sum_abs: Any
    invalid: Any

    @classmethod
    def init(cls, *, xp=None, weighted=False) -> RegressionState:
        """An empty state (``weighted=True`` for real ``sample_weight``)."""
        return _empty_sums(cls, "wffffi", weighted, xp)

    def _count_totals(self):
        return (self.weight,) if _integral(self.weight) else ()

    @compiled
    def update(self, y_true, y_pred, *, mask=None, sample_weight=None) -> RegressionState:
        """Add a batch of targets ``y_true`` and predictions ``y_pred`` (n,), real numbers.

        ``mask`` (n,), boolean or 0/1: False / 0 marks a padding row.
        ``sample_weight`` (n,) non-negative, on a ``weighted=True`` state.
        """
        xp = _state_xp(self)
        y_true, y_pred, sample_weight, mask = _to(xp, y_true, y_pred, sample_weight, mask)
        B.check_1d("y_true", y_true)
        B.check_1d("y_pred", y_pred)
        V.check_real_values("y_true", y_true, xp)
        V.check_real_values("y_pred", y_pred, xp)
        if sample_weight is not None:
            B.check_1d("sample_weight", sample_weight)
        B.check_same_length(y_true=y_true, y_pred=y_pred, sample_weight=sample_weight)
        keep, bad_m = _row_mask(mask, y_true.shape[0], xp)
        keep, (y_true, y_pred, sample_weight) = _drop_masked(
            keep, [y_true, y_pred, sample_weight], [_fill_zero, _fill_zero, _fill_zero], xp)
        if y_true.shape[0] == 0:
            return self                      # nothing unmasked: adds nothing
        invalid = bad_m | V.check_finite("y_true", y_true, xp) | \
            V.check_finite("y_pred", y_pred, xp)
        w, ws, bad_w = _row_weights(self.weight, keep, sample_weight, y_true.shape[0], xp)
        f = B.acc_float(xp)
        yt, yp = xp.astype(y_true, f), xp.astype(y_pred, f)
        r = yt - yp
        add = type(self)(ws, _wsum(yt, w, xp), _wsum(yt * yt, w, xp), _wsum(r * r, w, xp),
                         _wsum(xp.abs(r), w, xp), xp.astype(invalid | bad_w, self.invalid.dtype))
        return merge(self, add)

    @compiled
    def compute(self, force_finite=False) -> RegressionSummary:
        """MSE, RMSE, MAE and R² (``force_finite`` as :func:`calipers.r2_score`)."""
        force_finite = V.choice(force_finite, "force_finite", (False, True))
        xp = _state_xp(self)
        W = xp.astype(self.weight, B.acc_float(xp))
        empty = W == 0
        Ws = xp.where(empty, 1.0, W)
        mse = self.sum_sq / Ws
        mae = self.sum_abs / Ws
        mean = self.sum_y / Ws
        m2 = self.sum_y2 / Ws
        ss_tot = m2 - mean * mean
        eps = float(xp.finfo(W.dtype).eps)
        ss_tot = xp.where(ss_tot <= 4 * eps * m2, xp.zeros_like(ss_tot), ss_tot)
        r2, undefined = _reg.r2_from_sums(mse, ss_tot, force_finite, xp)
        if not force_finite:
            V.warn_if(undefined & ~empty & ~_bad(self, xp), "R^2 is undefined when y_true is "
                      "constant (zero variance); returning NaN", xp)
        V.warn_if(empty & ~_bad(self, xp), "RegressionState holds no rows (or zero weight): "
                  "every value is NaN", xp)
        vals = [B.nan_if(empty, v, xp) for v in (mse, xp.sqrt(mse), mae, r2)]
        return RegressionSummary(*finish(self, *vals))

    def _from_outputs(self, out, **options):
        who = "RegressionState"
        src = out.require(who, "preds", "scores")
        return self.update(out.labels(who), out.get(src), mask=out.get("mask"),
                           sample_weight=out.get("sample_weight"), **options)


# --------------------------------------------------------------------------
# weighted mean of values
# --------------------------------------------------------------------------

class MeanSummary(NamedTuple):
    """What :meth:`MeanState.compute` returns."""

    mean: Any    #: Σ w v / Σ w; NaN with no weight
    total: Any   #: Σ w v
    weight: Any  #: Σ w (the row count for an unweighted state)
    count: Any   #: rows added (unmasked), an integer


@streaming_state(takes=("scores",))
class MeanState(NamedTuple):
    """Mergeable (weighted) mean of per-row values: ``Σ w v``, ``Σ w`` and the row count.

    For any per-example number (a loss, a per-example metric): ``compute``
    returns ``mean = Σ w v / Σ w`` (``numpy.average``), the total, the weight
    and the count of rows. ``update(..., mask=)`` leaves padding rows out (their
    values are not checked); a batch with nothing unmasked adds nothing. No
    weight: the mean is NaN with an :class:`UndefinedMetricWarning` eagerly.
    Limits: the row count (and an unweighted state's weight) at most
    ``2**63 - 1`` (``2**31 - 1`` = 2147483647 on JAX without x64), checked
    eagerly (``ValueError``) and flagged under ``jit`` (``compute`` NaN).
    Eagerly NaN/inf values and negative weights raise ``ValueError``; under
    ``jit`` they make ``compute`` NaN.
    """

    total: Any
    weight: Any
    count: Any
    invalid: Any

    @classmethod
    def init(cls, *, xp=None, weighted=False) -> MeanState:
        """An empty state (``weighted=True`` for ``sample_weight``)."""
        return _empty_sums(cls, "fwii", weighted, xp)

    def _count_totals(self):
        return (self.count, self.weight) if _integral(self.weight) else (self.count,)

    @compiled
    def update(self, values, *, mask=None, sample_weight=None) -> MeanState:
        """Add values (n,), real numbers; ``mask`` and ``sample_weight`` (n,) as the other states."""
        xp = _state_xp(self)
        values, sample_weight, mask = _to(xp, values, sample_weight, mask)
        B.check_1d("values", values)
        V.check_real_values("values", values, xp)
        if sample_weight is not None:
            B.check_1d("sample_weight", sample_weight)
        B.check_same_length(values=values, sample_weight=sample_weight)
        keep, bad_m = _row_mask(mask, values.shape[0], xp)
        keep, (values, sample_weight) = _drop_masked(
            keep, [values, sample_weight], [_fill_zero, _fill_zero], xp)
        if values.shape[0] == 0:
            return self
        invalid = bad_m | V.check_finite("values", values, xp)
        w, ws, bad_w = _row_weights(self.weight, keep, sample_weight, values.shape[0], xp)
        count = xp.asarray(values.shape[0], dtype=self.count.dtype) if keep is None else \
            xp.sum(xp.astype(keep, self.count.dtype))
        v = xp.astype(values, B.acc_float(xp))
        add = type(self)(_wsum(v, w, xp), ws, count,
                         xp.astype(invalid | bad_w, self.invalid.dtype))
        return merge(self, add)

    @compiled
    def compute(self) -> MeanSummary:
        xp = _state_xp(self)
        W = xp.astype(self.weight, B.acc_float(xp))
        mean = B.nan_if(W == 0, self.total / xp.where(W == 0, 1.0, W), xp)
        V.warn_if((W == 0) & ~_bad(self, xp), "MeanState: no weight was added; the mean "
                  "is NaN", xp)
        m, t = finish(self, mean, self.total)
        return MeanSummary(m, t, B.finalize(self.weight, xp), B.finalize(self.count, xp))

    def _from_outputs(self, out, **options):
        who = "MeanState"
        return self.update(out.get(out.require(who, "scores")), mask=out.get("mask"),
                           sample_weight=out.get("sample_weight"), **options)


# --------------------------------------------------------------------------
# top-k accuracy: a histogram of the true class's rank
# --------------------------------------------------------------------------

@streaming_state(takes=("labels", "logits"))
class TopKAccuracyState(NamedTuple):
    """Top-k accuracy for every k at once: the (weighted) count of rows by the rank of the
    true class.

    ``rank_counts[r]``: rows whose true class ranks ``r`` (0 = highest score)
    by the tie rule of :func:`calipers.top_k_accuracy_score` (scikit-learn's:
    among equal scores the higher column index ranks first; shared code), so
    ``compute(k)`` = ``sum(rank_counts[:k]) / sum(rank_counts)`` equals the
    one-shot function with ``labels=range(C)``. Shape ``(C,)``: the number of
    classes is static. Labels are class indices ``0 .. C-1``; scores ``(n,
    C)`` (logits, probabilities or any scores: only their order matters).

    ``update(..., mask=)`` leaves padding rows out (their values are not
    checked); a batch with nothing unmasked adds nothing. No weight: NaN with
    an :class:`UndefinedMetricWarning` eagerly. Limit (unweighted): the row
    count at most ``2**63 - 1`` (``2**31 - 1`` = 2147483647 on JAX without
    x64), checked eagerly (``ValueError``) and flagged under ``jit``
    (``compute`` NaN). Eagerly labels outside ``0 .. C-1``, NaN/inf scores and
    negative weights raise ``ValueError``; under ``jit`` they make ``compute``
    NaN.
    """

    rank_counts: Any
    invalid: Any

    @classmethod
    def init(cls, num_classes, *, xp=None, weighted=False) -> TopKAccuracyState:
        """An empty state for ``num_classes`` columns (>= 2)."""
        num_classes = V.positive_int(num_classes, "num_classes", 2)
        weighted = _check_weighted(weighted)
        xp = _namespace(xp)
        dt = B.acc_float(xp) if weighted else B.acc_int(xp)
        return cls(xp.zeros((num_classes,), dtype=dt), xp.zeros((), dtype=B.acc_int(xp)))

    def _count_totals(self):
        return (_state_xp(self).sum(self.rank_counts),) if _integral(self.rank_counts) else ()

    @compiled
    def update(self, y_true, y_score, *, mask=None, sample_weight=None) -> TopKAccuracyState:
        """Add class indices ``y_true`` (n,) and scores ``y_score`` (n, C)."""
        xp = _state_xp(self)
        y_true, y_score, sample_weight, mask = _to(xp, y_true, y_score, sample_weight, mask)
        C = self.rank_counts.shape[0]
        B.check_1d("y_true", y_true)
        V.check_real_values("y_score", y_score, xp, "numeric scores")
        if y_score.ndim != 2 or y_score.shape[1] != C:
            raise ValueError(f"y_score must have shape (n, {C}) for this state, got "
                             f"{tuple(y_score.shape)}")
        if sample_weight is not None:
            B.check_1d("sample_weight", sample_weight)
        B.check_same_length(y_true=y_true, y_score=y_score, sample_weight=sample_weight)
        keep, bad_m = _row_mask(mask, y_true.shape[0], xp)
        keep, (y_true, y_score, sample_weight) = _drop_masked(
            keep, [y_true, y_score, sample_weight], [_fill_one, _fill_zero, _fill_zero], xp)
        if y_true.shape[0] == 0:
            return self
        t, bad_t = _cal.check_class_index("y_true", y_true, C, xp)
        invalid = bad_m | bad_t | V.check_finite("y_score", y_score, xp)
        rank = _clf.top_k_rank(t, y_score, xp)
        ids = rank
        if B.is_traced(y_true):
            rowbad = (y_true < 0) | (y_true >= C)
            if xp.isdtype(y_true.dtype, "real floating"):
                rowbad = rowbad | (y_true != xp.round(y_true))
            ids = xp.where(rowbad, C, ids)            # not counted
        cdt = self.rank_counts.dtype
        if sample_weight is None:
            vals = xp.ones(ids.shape, dtype=cdt) if keep is None else xp.astype(keep, cdt)
        else:
            if _integral(self.rank_counts):
                raise ValueError("sample_weight needs a state made with init(..., weighted=True)")
            invalid = invalid | V.check_weights("sample_weight", sample_weight, xp)
            vals = xp.astype(sample_weight, cdt)
            if keep is not None:
                vals = xp.where(keep, vals, xp.zeros_like(vals))
        add = B.segment_sum(vals, ids, C, xp)
        return merge(self, type(self)(add, xp.astype(invalid, self.invalid.dtype)))

    @compiled
    def compute(self, k=1):
        """Top-``k`` accuracy (``k`` >= 1, static); ``k >= C`` gives 1."""
        k = V.positive_int(k, "k")
        xp = _state_xp(self)
        f = B.acc_float(xp)
        c = xp.astype(self.rank_counts, f)
        total = xp.sum(c)
        hits = xp.sum(c[:min(k, c.shape[0])])
        V.warn_if((total == 0) & ~_bad(self, xp), "TopKAccuracyState: top-k accuracy is "
                  "undefined when the total sample weight is zero (no rows); returning NaN", xp)
        return finish(self, B.nan_if(total == 0, hits / xp.where(total == 0, 1.0, total), xp))

    def _from_outputs(self, out, **options):
        who = "TopKAccuracyState"
        src = out.require(who, "logits", "probs", "scores")
        return self.update(out.labels(who), out.get(src), mask=out.get("mask"),
                           sample_weight=out.get("sample_weight"), **options)
