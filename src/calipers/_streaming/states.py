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

Invalid input: eager ``update`` raises ``ValueError`` as the one-shot
functions do. Under ``jit`` it cannot raise; the batch is still added (its
values may be garbage) and the ``invalid`` field counts such batches;
``compute`` returns NaN for every value when ``invalid > 0``.

Static configuration (number of classes, bins) lives in the array shapes, never
in fields, so ``psum`` over a state adds only data.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import array_api_compat
import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.compile import compiled
from .. import _calibration as _cal
from .. import _language as _lang
from .. import _probability as _prob

__all__ = [
    "ConfusionState",
    "CalibrationState",
    "NLLState",
    "ProbabilityLossState",
]


def _namespace(xp):
    if xp is None or xp is np:
        return B.numpy_namespace()
    return xp


def _state_xp(state):
    return array_api_compat.array_namespace(state[0])


def _to(xp, *arrays):
    """Inputs in the state's namespace (lists, scalars and NumPy arrays are converted)."""
    out = []
    for a in arrays:
        if a is None:
            out.append(None)
        elif isinstance(a, (list, tuple, int, float, np.ndarray, np.generic)):
            a = np.asarray(a)
            out.append(a if B.is_numpy(xp) else xp.asarray(a))
        else:
            out.append(a)
    return out


def _invalid_inc(state, invalid, xp):
    return state.invalid + xp.astype(invalid, state.invalid.dtype)


def merge(a, b):
    """Merge two states of the same class: field-wise sums (what ``psum`` does)."""
    if type(a) is not type(b):
        raise ValueError(f"cannot merge a {type(a).__name__} with a {type(b).__name__}")
    for name, x, y in zip(a._fields, a, b):
        if tuple(x.shape) != tuple(y.shape):
            raise ValueError(f"cannot merge states whose {name} shapes differ: "
                             f"{tuple(x.shape)} and {tuple(y.shape)}")
    return type(a)(*(x + y for x, y in zip(a, b)))


def _nan_if_invalid(state, value, xp):
    return B.nan_if(state.invalid > 0, value, xp)


# --------------------------------------------------------------------------
# confusion counts
# --------------------------------------------------------------------------

class ConfusionSummary(NamedTuple):
    confusion_matrix: object  #: (K, K) counts, rows true class, columns predicted
    accuracy: object          #: trace / total; NaN when empty or invalid


class ConfusionState(NamedTuple):
    """Confusion counts of a K-class problem (K = 2 for binary 0/1 labels).

    ``counts[i, j]``: rows with true class i predicted as j (scikit-learn's
    ``confusion_matrix`` layout). Integer counts unless ``weighted=True``.
    """

    counts: object
    invalid: object

    @classmethod
    def init(cls, num_classes, *, xp=None, weighted=False):
        """An empty state for labels ``0 .. num_classes - 1``."""
        if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) \
                or num_classes < 2:
            raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
        xp = _namespace(xp)
        dt = B.acc_float(xp) if weighted else B.acc_int(xp)
        K = int(num_classes)
        return cls(xp.zeros((K, K), dtype=dt), xp.zeros((), dtype=B.acc_int(xp)))

    @compiled
    def update(self, y_true, y_pred, *, sample_weight=None):
        """Add a batch of integer labels ``y_true`` and predictions ``y_pred`` (n,)."""
        xp = _state_xp(self)
        y_true, y_pred, sample_weight = _to(xp, y_true, y_pred, sample_weight)
        K = self.counts.shape[0]
        B.check_1d("y_true", y_true)
        B.check_1d("y_pred", y_pred)
        if sample_weight is not None:
            B.check_1d("sample_weight", sample_weight)
        B.check_same_length(y_true=y_true, y_pred=y_pred, sample_weight=sample_weight)
        t, bad_t = _cal._check_class_index("y_true", y_true, K, xp)
        p, bad_p = _cal._check_class_index("y_pred", y_pred, K, xp)
        invalid = bad_t | bad_p
        ids = t * K + p
        if B.is_traced(y_true, y_pred):
            # rows with out-of-range labels are not counted (id K*K is dropped)
            rowbad = ((y_true < 0) | (y_true >= K) | (y_pred < 0) | (y_pred >= K))
            if xp.isdtype(y_true.dtype, "real floating") or xp.isdtype(y_pred.dtype, "real floating"):
                rowbad = rowbad | (y_true != xp.round(y_true)) | (y_pred != xp.round(y_pred))
            ids = xp.where(rowbad, K * K, ids)
        if sample_weight is None:
            vals = xp.ones(ids.shape, dtype=self.counts.dtype)
        else:
            if xp.isdtype(self.counts.dtype, "integral"):
                raise ValueError("sample_weight needs a state made with init(..., weighted=True)")
            invalid = invalid | V.check_weights("sample_weight", sample_weight, xp)
            vals = xp.astype(sample_weight, self.counts.dtype)
        add = B.segment_sum(vals, ids, K * K, xp)
        return ConfusionState(self.counts + xp.reshape(add, (K, K)),
                              _invalid_inc(self, invalid, xp))

    def merge(self, other):
        return merge(self, other)

    @compiled
    def compute(self):
        xp = _state_xp(self)
        f = B.acc_float(xp)
        c = xp.astype(self.counts, f)
        K = c.shape[0]
        eye = xp.astype(xp.reshape(xp.arange(K), (-1, 1)) == xp.reshape(xp.arange(K), (1, -1)), f)
        total = xp.sum(c)
        accv = xp.sum(c * eye) / xp.where(total > 0, total, 1.0)
        accv = _nan_if_invalid(self, B.nan_if(total == 0, accv, xp), xp)
        return ConfusionSummary(self.counts, B.finalize(accv, xp))


# --------------------------------------------------------------------------
# calibration bins
# --------------------------------------------------------------------------

class CalibrationState(NamedTuple):
    """Equal-width calibration bins: weight, confidence sum and outcome sum per bin.

    Shapes ``(C, n_bins)`` with ``C = 1`` (modes ``"positive"`` and
    ``"top_label"``) or ``C = num_classes`` (``"classwise"``). Binning and
    modes are those of :func:`calipers.expected_calibration_error`. Equal-mass
    bins need a global sort and are not mergeable; they are not offered here.
    """

    weight: object
    conf_sum: object
    outcome_sum: object
    invalid: object

    @classmethod
    def init(cls, n_bins=15, *, num_classes=None, xp=None, weighted=False):
        """An empty state; ``num_classes`` only for ``mode="classwise"`` updates."""
        _cal._check_options(n_bins, "uniform")
        xp = _namespace(xp)
        C = 1 if num_classes is None else int(num_classes)
        f = B.acc_float(xp)
        wdt = f if weighted else B.acc_int(xp)
        shape = (C, int(n_bins))
        return cls(xp.zeros(shape, dtype=wdt), xp.zeros(shape, dtype=f),
                   xp.zeros(shape, dtype=f), xp.zeros((), dtype=B.acc_int(xp)))

    @compiled
    def update(self, y_true, y_prob, *, sample_weight=None, mode=None):
        """Add a batch; arguments as :func:`calipers.expected_calibration_error`."""
        xp = _state_xp(self)
        y_true, y_prob, sample_weight = _to(xp, y_true, y_prob, sample_weight)
        if sample_weight is not None and xp.isdtype(self.weight.dtype, "integral"):
            raise ValueError("sample_weight needs a state made with init(..., weighted=True)")
        if y_prob.ndim >= 1 and y_prob.shape[0] == 0 and y_true.shape[0] == 0:
            return self                      # an empty batch adds nothing
        d = _cal._channels(y_true, y_prob, sample_weight, mode)
        C, nb = self.weight.shape
        if d.conf.shape[0] != C:
            raise ValueError(f"this state has {C} channel(s) but the update has "
                             f"{d.conf.shape[0]} (classwise mode needs init(num_classes=K))")
        Wb, Sb, Ob, _, _ = _cal._bin_stats(d, nb, "uniform")
        return CalibrationState(self.weight + xp.astype(Wb, self.weight.dtype),
                                self.conf_sum + Sb, self.outcome_sum + Ob,
                                _invalid_inc(self, d.invalid, xp))

    def merge(self, other):
        return merge(self, other)

    @compiled
    def compute(self, norm="l1"):
        """Expected calibration error (``norm`` ``"l1"``, ``"l2"`` or ``"max"``)."""
        _cal._check_options(1, "uniform", norm)
        xp = _state_xp(self)
        W = xp.astype(self.weight, B.acc_float(xp))
        value = xp.mean(_cal.ece_from_bins(W, self.conf_sum, self.outcome_sum, norm, xp))
        value = B.nan_if(xp.sum(W) == 0, value, xp)
        return B.finalize(_nan_if_invalid(self, value, xp), xp)

    def diagram(self):
        """:class:`calipers.ReliabilityDiagram` data from the bins."""
        xp = _state_xp(self)
        f = B.acc_float(xp)
        W = xp.astype(self.weight, f)
        empty = (W == 0) | (self.invalid > 0)
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


# --------------------------------------------------------------------------
# NLL / token sums
# --------------------------------------------------------------------------

class NLLSummary(NamedTuple):
    perplexity: object     #: exp(NLL / tokens)
    nll_per_token: object  #: mean NLL in nats
    bits_per_byte: object  #: NLL / (ln 2 * bytes); NaN when no bytes were counted


class NLLState(NamedTuple):
    """Sums for perplexity and bits per byte: total NLL (nats), tokens, bytes."""

    nll: object
    tokens: object
    bytes: object
    invalid: object

    @classmethod
    def init(cls, *, xp=None):
        xp = _namespace(xp)
        i = B.acc_int(xp)
        return cls(xp.zeros((), dtype=B.acc_float(xp)), xp.zeros((), dtype=i),
                   xp.zeros((), dtype=i), xp.zeros((), dtype=i))

    @compiled
    def update(self, token_logprobs, *, mask=None, num_bytes=0):
        """Add token log-likelihoods (as :func:`calipers.perplexity`) and their text's bytes."""
        xp = _state_xp(self)
        token_logprobs, mask, num_bytes = _to(xp, token_logprobs, mask, num_bytes)
        if token_logprobs.ndim >= 1 and token_logprobs.shape[0] == 0:
            return self                      # an empty batch adds nothing
        _, nll, m, invalid, acc = _lang._prepare_logprobs(token_logprobs, mask)
        tokens = nll.size if m is None else xp.sum(xp.astype(m, self.tokens.dtype))
        _lang._check_integral("num_bytes", num_bytes, xp)
        nbytes = xp.sum(xp.astype(num_bytes, self.bytes.dtype))
        invalid = invalid | V.fail_if(nbytes < 0, "num_bytes", "must be >= 0 (in total)", xp)
        return NLLState(self.nll + xp.sum(nll), self.tokens + tokens, self.bytes + nbytes,
                        _invalid_inc(self, invalid, xp))

    def merge(self, other):
        return merge(self, other)

    @compiled
    def compute(self):
        xp = _state_xp(self)
        f = B.acc_float(xp)
        tok = xp.astype(self.tokens, f)
        nb = xp.astype(self.bytes, f)
        mean = B.nan_if(tok == 0, self.nll / xp.where(tok > 0, tok, 1.0), xp)
        bpb = B.nan_if(nb == 0, self.nll / (math.log(2.0) * xp.where(nb > 0, nb, 1.0)), xp)
        vals = [B.finalize(_nan_if_invalid(self, v, xp), xp) for v in (xp.exp(mean), mean, bpb)]
        return NLLSummary(*vals)


# --------------------------------------------------------------------------
# log-loss and Brier sums
# --------------------------------------------------------------------------

class ProbabilityLossSummary(NamedTuple):
    log_loss: object
    brier: object


class ProbabilityLossState(NamedTuple):
    """Sums of per-row log loss and Brier score and of the weights.

    Per-row values are those of :func:`calipers.log_loss` and
    :func:`calipers.brier_score_loss` (default ``scale_by_half="auto"``),
    binary (1-D ``y_prob``, labels 0/1) or multiclass (2-D, labels 0..K-1).
    """

    log_loss_sum: object
    brier_sum: object
    weight: object
    invalid: object

    @classmethod
    def init(cls, *, xp=None, weighted=False):
        xp = _namespace(xp)
        f = B.acc_float(xp)
        return cls(xp.zeros((), dtype=f), xp.zeros((), dtype=f),
                   xp.zeros((), dtype=f if weighted else B.acc_int(xp)),
                   xp.zeros((), dtype=B.acc_int(xp)))

    @compiled
    def update(self, y_true, y_prob, *, sample_weight=None):
        xp = _state_xp(self)
        y_true, y_prob, sample_weight = _to(xp, y_true, y_prob, sample_weight)
        if sample_weight is not None and xp.isdtype(self.weight.dtype, "integral"):
            raise ValueError("sample_weight needs a state made with init(..., weighted=True)")
        f = B.acc_float(xp)
        if y_prob.ndim >= 1 and y_prob.shape[0] == 0 and y_true.shape[0] == 0:
            return self                      # an empty batch adds nothing
        if y_prob.ndim == 2:
            _, onehot, p, w, invalid, _ = _prob._prepare_multiclass(y_true, y_prob,
                                                                   sample_weight, None)
            onehot, p = xp.astype(onehot, f), xp.astype(p, f)
            K = p.shape[1]
            # clip as the one-shot log_loss: at the epsilon of the probabilities' dtype
            eps = float(xp.finfo(B.out_float(xp, y_prob)).eps)
            ll = -xp.sum(onehot * xp.log(xp.clip(p, eps, 1 - eps)), axis=1)
            diff = p - onehot
            br = xp.sum(diff * diff, axis=1) * (0.5 if K < 3 else 1.0)
        else:  # the very per-row formulas of log_loss / brier_score_loss
            _, y, p, w, invalid, _ = _prob._prepare_prob(y_true, y_prob, sample_weight)
            ll = xp.astype(_prob.binary_log_loss_rows(y, p, xp), f)
            br = xp.astype(_prob.binary_brier_rows(y, p, xp), f)
        if w is None:
            ws = xp.asarray(ll.shape[0], dtype=self.weight.dtype)
            lsum, bsum = xp.sum(ll), xp.sum(br)
        else:
            wf = xp.astype(w, f)
            ws = xp.sum(wf)
            lsum, bsum = xp.sum(wf * ll), xp.sum(wf * br)
        return ProbabilityLossState(self.log_loss_sum + lsum, self.brier_sum + bsum,
                                    self.weight + xp.astype(ws, self.weight.dtype),
                                    _invalid_inc(self, invalid, xp))

    def merge(self, other):
        return merge(self, other)

    @compiled
    def compute(self):
        xp = _state_xp(self)
        W = xp.astype(self.weight, B.acc_float(xp))
        safe = xp.where(W > 0, W, 1.0)
        vals = [B.finalize(_nan_if_invalid(self, B.nan_if(W == 0, s / safe, xp), xp), xp)
                for s in (self.log_loss_sum, self.brier_sum)]
        return ProbabilityLossSummary(*vals)
