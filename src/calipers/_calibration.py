"""Calibration: expected calibration error, reliability diagrams, the Murphy
decomposition of the Brier score, and temperature scaling.

Conventions (stated once, used by every function here):

* **Equal-width bins** (``strategy="uniform"``): a confidence ``c`` in [0, 1]
  goes to bin ``min(B - 1, floor(c * B))`` computed in floating point, so bin
  ``b`` is ``[b/B, (b+1)/B)``, 0.0 is in the first bin and 1.0 in the last
  (torchmetrics #3510: no hidden ``B+1``-th bin, nothing dropped at 0).
* **Equal-mass bins** (``strategy="quantile"``): rows sorted by confidence; a
  row goes to bin ``min(B - 1, floor(B * W_below / W))`` with ``W_below`` the
  weight of rows whose confidence is strictly smaller. Tied confidences share
  a bin (the result does not depend on row order); with heavy ties some bins
  are empty. scikit-learn's ``calibration_curve(strategy="quantile")`` cuts at
  quantile edges instead, which can differ at ties.
* **Modes.** For 1-D ``y_prob`` (P(y = 1)) the default ``"positive"`` mode
  bins P(y = 1) against the observed frequency of y = 1 (scikit-learn's
  reliability curve). ``"top_label"`` bins the confidence of the predicted
  class (argmax; ties go to the lowest class index, so p = 0.5 predicts class 0)
  against whether the prediction was right (Guo et al. 2017). ``"classwise"``
  averages over classes the error of P(y = k) against 1[y = k] (Kull et al.
  2019). 2-D ``y_prob`` (n, K) defaults to ``"top_label"``.
* **Norms.** ``"l1"``: sum_b (W_b / W) |acc_b - conf_b| (ECE); ``"l2"``:
  sqrt(sum_b (W_b / W) (acc_b - conf_b)^2); ``"max"``: max over non-empty bins
  (MCE). Empty bins contribute nothing.

Empty bins in :func:`reliability_diagram` have NaN confidence and accuracy and
count 0 (not warned: an empty bin is not an undefined metric).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ._core import xp as B
from ._core import validation as V
from ._core.results import result_type
from ._core.compile import compiled
from ._core.types import Array, ArrayLike

__all__ = [
    "expected_calibration_error",
    "reliability_diagram",
    "ReliabilityDiagram",
    "brier_decomposition",
    "BrierDecomposition",
    "fit_temperature",
]

_MODES = ("positive", "top_label", "classwise")
_STRATEGIES = ("uniform", "quantile")
_NORMS = ("l1", "l2", "max")


# --------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------

class _Cal(NamedTuple):
    xp: Any
    conf: Any     # (C, n) confidences per channel (C = 1 except classwise)
    outcome: Any  # (C, n) 0/1 outcome as acc float
    w: Any        # (n,) acc float weights (ones when not given)
    invalid: Any  # scalar bool
    out: Any      # output dtype


def check_class_index(name, y, K, xp):
    """Labels as class indices ``0 .. K-1`` (the columns of ``y_prob``): ``(index, invalid)``."""
    if B.is_numpy(xp) and y.dtype.kind in "OSU":
        flat = y.reshape(-1).tolist()
        i = next((j for j, v in enumerate(flat)
                  if not isinstance(v, (int, float, np.integer, np.floating, np.bool_))), None)
        if i is not None:
            raise ValueError(f"{name} must hold class indices 0 .. {K - 1} (the columns of "
                             f"y_prob); element {i} is {flat[i]!r}")
        y = np.asarray(flat, dtype=np.float64).reshape(y.shape)
    if xp.isdtype(y.dtype, "bool"):
        y = xp.astype(y, B.acc_int(xp))
    bad = (y < 0) | (y >= K)
    if xp.isdtype(y.dtype, "real floating"):
        bad = bad | (y != xp.round(y)) | ~xp.isfinite(y)
    invalid = V.fail_if(bad, name, f"must hold class indices 0 .. {K - 1} (the columns of "
                        "y_prob)", xp, values=y)
    return xp.astype(xp.where(bad, 0, y) if not xp.isdtype(y.dtype, "real floating")
                     else xp.where(bad, 0.0, y), B.acc_int(xp)), invalid


def _weights(sample_weight, n, xp):
    """``(w as acc float, invalid)``: ones, or valid weights with a positive sum."""
    acc = B.acc_float(xp)
    if sample_weight is None:
        return xp.ones(n, dtype=acc), xp.asarray(False)
    invalid = V.check_weights("sample_weight", sample_weight, xp, positive_sum=True)
    return xp.astype(sample_weight, acc), invalid


# --------------------------------------------------------------------------
# logits: the stable maps to (log-)probabilities, shared by the probability family
# --------------------------------------------------------------------------

def softplus(x, xp):
    """``log(1 + exp(x))`` without overflow: ``max(x, 0) + log1p(exp(-|x|))``."""
    return xp.maximum(x, xp.zeros_like(x)) + xp.log1p(xp.exp(-xp.abs(x)))


def sigmoid(z, xp):
    """``1 / (1 + exp(-z))`` without overflow (``exp`` of a non-positive number only)."""
    e = xp.exp(-xp.abs(z))
    return xp.where(z >= 0, 1 / (1 + e), e / (1 + e))


def log_softmax(z, xp):
    """``z - logsumexp(z)`` over the last axis (shifted by the row maximum)."""
    m = xp.max(z, axis=-1, keepdims=True)
    return z - m - xp.log(xp.sum(xp.exp(z - m), axis=-1, keepdims=True))


def softmax(z, xp):
    e = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def check_logits(name, z, xp):
    """Logits must be real numbers (not booleans) and finite: ``ValueError`` naming
    ``name`` eagerly, the invalid flag under ``jit``."""
    V.check_real_values(name, z, xp, "real-valued logits (from_logits=True)")
    return V.check_finite(name, z, xp)


def _prepare_probs(y_true, y_prob, sample_weight, from_logits=False):
    """Validate; return xp, P (n, K) acc float, class index (n,), w, invalid, out dtype, one_d.

    ``from_logits``: ``y_prob`` holds logits (1-D: of class 1; 2-D: per class),
    turned into probabilities by a stable sigmoid / softmax."""
    xp, (y_true, y_prob, sample_weight) = B.as_arrays(y_true, y_prob, sample_weight)
    V.check_1d("y_true", y_true)
    if y_prob.ndim not in (1, 2):
        raise ValueError(f"y_prob must be 1-D (P(y=1)) or 2-D (n, n_classes), got shape "
                         f"{tuple(y_prob.shape)}")
    if sample_weight is not None:
        V.check_1d("sample_weight", sample_weight)
    V.check_same_length(y_true=y_true, y_prob=y_prob, sample_weight=sample_weight)
    B.check_nonempty("y_true", y_true)
    B.check_numeric("y_prob", y_prob, xp)
    acc = B.acc_float(xp)
    out = B.out_float(xp, y_prob)
    p = xp.astype(y_prob, acc)
    bad_z = xp.asarray(False)
    if from_logits:
        bad_z = check_logits("y_prob", y_prob, xp)
        p = sigmoid(p, xp) if p.ndim == 1 else softmax(p, xp)
    one_d = p.ndim == 1
    if one_d:
        y, invalid = V.binary_labels(y_true, xp)
        P = xp.stack([1 - p, p], axis=1)
    else:
        if p.shape[1] < 2:
            raise ValueError(f"2-D y_prob needs at least 2 columns, got {p.shape[1]}")
        y, invalid = check_class_index("y_true", y_true, p.shape[1], xp)
        P = p
    if from_logits:
        invalid = invalid | bad_z
    else:
        invalid = invalid | V.check_probabilities("y_prob", p, xp)
    w, bad_w = _weights(sample_weight, p.shape[0], xp)
    invalid = invalid | bad_w
    return xp, P, y, w, invalid, out, one_d


def channels(y_true, y_prob, sample_weight, mode, from_logits=False) -> _Cal:
    xp, P, y, w, invalid, out, one_d = _prepare_probs(y_true, y_prob, sample_weight,
                                                      from_logits)
    if mode is None:
        mode = "positive" if one_d else "top_label"
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    acc = B.acc_float(xp)
    K = P.shape[1]
    cols = xp.reshape(xp.arange(K, dtype=y.dtype), (1, -1))
    onehot = xp.astype(cols == xp.reshape(y, (-1, 1)), acc)     # (n, K)
    if mode == "positive":
        if not one_d:
            raise ValueError("mode='positive' needs 1-D y_prob (P(y=1)); use 'top_label' or "
                             "'classwise' for 2-D")
        conf = xp.reshape(P[:, 1], (1, -1))
        outcome = xp.reshape(onehot[:, 1], (1, -1))
    elif mode == "top_label":
        conf = xp.max(P, axis=1)
        # argmax with ties to the lowest index, without argmax's unspecified tie rule
        first = xp.min(xp.where(P == xp.reshape(conf, (-1, 1)), cols, K), axis=1)
        correct = xp.astype(first == y, acc)
        conf = xp.reshape(conf, (1, -1))
        outcome = xp.reshape(correct, (1, -1))
    else:
        conf = xp.permute_dims(P, (1, 0))
        outcome = xp.permute_dims(onehot, (1, 0))
    return _Cal(xp, conf, outcome, w, invalid, out)


# --------------------------------------------------------------------------
# binning
# --------------------------------------------------------------------------

def uniform_bins(conf, n_bins, xp):
    b = xp.floor(conf * n_bins)
    b = xp.clip(b, 0, n_bins - 1)
    return xp.astype(b, B.acc_int(xp))


def _bin_stats(d: _Cal, n_bins, strategy):
    """Per channel and bin: weight, confidence sum, outcome sum, lower and upper edge.

    Returns arrays of shape (C, n_bins).
    """
    xp = d.xp
    C, n = d.conf.shape
    acc = B.acc_float(xp)
    if strategy == "uniform":
        bins = uniform_bins(d.conf, n_bins, xp)                       # (C, n)
        offs = xp.reshape(xp.arange(C, dtype=bins.dtype) * n_bins, (-1, 1))
        ids = xp.reshape(bins + offs, (-1,))
        wt = xp.reshape(xp.broadcast_to(xp.reshape(d.w, (1, -1)), (C, n)), (-1,))
        Wb = B.segment_sum(wt, ids, C * n_bins, xp)
        Sb = B.segment_sum(wt * xp.reshape(d.conf, (-1,)), ids, C * n_bins, xp)
        Ob = B.segment_sum(wt * xp.reshape(d.outcome, (-1,)), ids, C * n_bins, xp)
        shape = (C, n_bins)
        edges = xp.arange(n_bins + 1, dtype=acc) / n_bins
        lower = xp.broadcast_to(xp.reshape(edges[:-1], (1, -1)), shape)
        upper = xp.broadcast_to(xp.reshape(edges[1:], (1, -1)), shape)
        return (xp.reshape(Wb, shape), xp.reshape(Sb, shape), xp.reshape(Ob, shape),
                lower, upper)
    rows = [_quantile_channel(d.conf[c, :], d.outcome[c, :], d.w, n_bins, xp) for c in range(C)]
    return tuple(xp.stack([r[i] for r in rows], axis=0) for i in range(5))


def _quantile_channel(conf, outcome, w, n_bins, xp):
    acc = B.acc_float(xp)
    order = xp.argsort(conf)
    s = xp.take(conf, order)
    ws = xp.take(w, order)
    os_ = xp.take(outcome, order)
    lo, _ = B.group_bounds(s, xp)
    Cw = B.prefix_sum(ws, xp, acc)
    W = Cw[-1]
    below = xp.take(Cw, lo)
    bins = xp.floor(n_bins * below / W)
    bins = xp.astype(xp.clip(bins, 0, n_bins - 1), B.acc_int(xp))   # non-decreasing in s
    Wb = B.segment_sum(ws, bins, n_bins, xp, indices_are_sorted=True)
    Sb = B.segment_sum(ws * s, bins, n_bins, xp, indices_are_sorted=True)
    Ob = B.segment_sum(ws * os_, bins, n_bins, xp, indices_are_sorted=True)
    b = xp.arange(n_bins, dtype=bins.dtype)
    first = xp.searchsorted(bins, b, side="left")
    last = xp.searchsorted(bins, b, side="right") - 1
    n = s.shape[0]
    empty = first > last
    lower = xp.where(empty, math.nan, xp.take(s, xp.clip(first, 0, n - 1)))
    upper = xp.where(empty, math.nan, xp.take(s, xp.clip(last, 0, n - 1)))
    return Wb, Sb, Ob, lower, upper


def check_options(n_bins, strategy, norm=None):
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be an integer >= 1, got {n_bins!r}")
    if strategy not in _STRATEGIES:
        raise ValueError(f"strategy must be one of {_STRATEGIES}, got {strategy!r}")
    if norm is not None and norm not in _NORMS:
        raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}")


def ece_from_bins(Wb, Sb, Ob, norm, xp):
    """Calibration error per channel (last axis = bins) from per-bin sums."""
    nonempty = Wb > 0
    safe = xp.where(nonempty, Wb, 1.0)
    gap = xp.where(nonempty, xp.abs(Ob / safe - Sb / safe), 0.0)
    W = xp.sum(Wb, axis=-1)
    Wsafe = xp.where(W > 0, W, 1.0)
    if norm == "l1":
        return xp.sum(Wb * gap, axis=-1) / Wsafe
    if norm == "l2":
        return xp.sqrt(xp.sum(Wb * gap * gap, axis=-1) / Wsafe)
    return xp.max(gap, axis=-1)


@compiled(rows=("y_true", "y_prob"), weight="sample_weight")
def expected_calibration_error(y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15,
                               strategy: str = "uniform", mode: str | None = None, norm: str = "l1",
                               sample_weight: ArrayLike = None,
                               from_logits: bool = False) -> float | Array:
    """Expected calibration error (Naeini et al. 2015; Guo et al. 2017).

    ``ECE = sum_b (W_b / W) |acc_b - conf_b|`` over bins of the confidence,
    with ``conf_b`` the mean confidence and ``acc_b`` the mean outcome in bin
    ``b`` (weighted by ``sample_weight``). Binning, modes and norms are the
    module conventions (:mod:`calipers._calibration`): equal-width bins put 0.0
    in the first and 1.0 in the last bin (torchmetrics #3510).

    Parameters
    ----------
    y_true : array (n,)
        1-D ``y_prob``: labels in {0, 1}. 2-D ``y_prob``: class indices
        ``0 .. K-1`` (the columns).
    y_prob : array (n,) or (n, K)
        P(y = 1), or class probabilities in [0, 1]. Rows of a 2-D array are
        not required to sum to 1 (only their entries are binned).
    n_bins : int (static), default 15
    strategy : ``"uniform"`` (equal width) or ``"quantile"`` (equal mass)
    mode : ``"positive"``, ``"top_label"`` or ``"classwise"``; default
        ``"positive"`` for 1-D and ``"top_label"`` for 2-D ``y_prob``.
    norm : ``"l1"`` (ECE), ``"l2"`` or ``"max"`` (maximum calibration error)
    sample_weight : array (n,), optional
    from_logits : bool, default False
        ``y_prob`` holds logits: 1-D the logit of class 1 (binned as
        ``sigmoid(z)``), 2-D one logit per class (binned as ``softmax(z)``
        over the last axis), each computed without overflow; logits must be
        finite (no [0, 1] check).

    Returns a 0-d float in [0, 1].

    Raises
    ------
    ValueError
        Shapes, empty input, probabilities outside [0, 1] or NaN, labels not
        in {0, 1} / not class indices, negative weights or a zero weight sum,
        bad options. Under ``jit`` invalid values give NaN.

    scikit-learn has no ECE (its ``calibration_curve`` gives the diagram).

    Examples
    --------
    >>> import calipers
    >>> conf = [0.95, 0.95, 0.95, 0.95, 0.55, 0.55]
    >>> float(calipers.expected_calibration_error([1, 1, 1, 0, 1, 0], conf, n_bins=10))
    0.15...
    >>> float(calipers.expected_calibration_error([1, 0], [0.95, 1.0], n_bins=10))
    0.475...
    """
    check_options(n_bins, strategy, norm)
    from_logits = V.choice(from_logits, "from_logits", (False, True))
    d = channels(y_true, y_prob, sample_weight, mode, from_logits)
    Wb, Sb, Ob, _, _ = _bin_stats(d, int(n_bins), strategy)
    xp = d.xp
    value = xp.mean(ece_from_bins(Wb, Sb, Ob, norm, xp))
    value = B.nan_if(d.invalid, value, xp)
    return B.finalize(xp.astype(value, d.out), xp)


@result_type(legacy_fields=('confidence', 'accuracy', 'count', 'lower', 'upper',))
class ReliabilityDiagram:
    """Per-bin data of a reliability diagram; arrays (n_bins,), or (K, n_bins) classwise."""

    confidence: Any  #: mean confidence in the bin (NaN when empty)
    accuracy: Any    #: mean outcome in the bin: share correct (top-label) or of y = k
    #: rows (weight sum with sample_weight) in the bin
    count: Any  # shadows tuple.count (a method) on purpose: the documented field name
    lower: Any       #: bin lower edge (quantile: smallest confidence in it; NaN if empty)
    upper: Any       #: bin upper edge (quantile: largest confidence in it; NaN if empty)


@compiled(rows=("y_true", "y_prob"), weight="sample_weight", nan_ok=True)
def reliability_diagram(y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 15,
                        strategy: str = "uniform", mode: str | None = None,
                        sample_weight: ArrayLike = None,
                        from_logits: bool = False) -> ReliabilityDiagram:
    """Reliability-diagram data: per bin the mean confidence, the accuracy and the count.

    Same binning and modes as :func:`expected_calibration_error` (whose L1
    value is ``nansum(count * |accuracy - confidence|) / sum(count)``). Every
    bin is returned, empty ones with NaN confidence/accuracy and count 0.
    With ``strategy="uniform"`` the edges are ``b / n_bins``; with
    ``"quantile"`` they are the smallest and largest confidence in the bin.

    scikit-learn's ``calibration_curve`` returns ``(prob_true, prob_pred)``
    for non-empty bins only; here empty bins are kept so positions are fixed
    (and shapes static under ``jit``). ``from_logits=True``: ``y_prob`` holds
    logits, as :func:`expected_calibration_error`. Errors as
    :func:`expected_calibration_error`; under ``jit`` invalid input gives NaN
    confidence and accuracy.
    """
    check_options(n_bins, strategy)
    from_logits = V.choice(from_logits, "from_logits", (False, True))
    d = channels(y_true, y_prob, sample_weight, mode, from_logits)
    xp = d.xp
    Wb, Sb, Ob, lower, upper = _bin_stats(d, int(n_bins), strategy)
    empty = Wb == 0
    safe = xp.where(empty, 1.0, Wb)
    conf = B.nan_if(empty | d.invalid, Sb / safe, xp)
    accv = B.nan_if(empty | d.invalid, Ob / safe, xp)
    if conf.shape[0] == 1:
        conf, accv, Wb, lower, upper = (a[0, :] for a in (conf, accv, Wb, lower, upper))
    cast = (lambda a: xp.astype(a, d.out))
    return ReliabilityDiagram(cast(conf), cast(accv), Wb, cast(lower), cast(upper))


# --------------------------------------------------------------------------
# Brier score decomposition (Murphy 1973)
# --------------------------------------------------------------------------

@result_type(legacy_fields=('brier', 'reliability', 'resolution', 'uncertainty',))
class BrierDecomposition:
    brier: Any        #: the Brier score (as :func:`calipers.brier_score_loss`)
    reliability: Any  #: sum_g (W_g/W) (f_g - o_g)^2, lower is better
    resolution: Any   #: sum_g (W_g/W) (o_g - o_bar)^2, higher is better
    uncertainty: Any  #: o_bar (1 - o_bar)


@compiled(rows=("y_true", "y_prob"), weight="sample_weight")
def brier_decomposition(y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike = None,
                        n_bins: int | None = None) -> BrierDecomposition:
    """Murphy's (1973) decomposition ``Brier = reliability - resolution + uncertainty``.

    Forecasts are grouped by value: with ``n_bins=None`` (default) each
    distinct forecast value is its own group, and the identity is exact (up to
    rounding) for any input; for discrete forecasts (a few distinct values)
    this is the textbook decomposition. With ``n_bins`` the forecasts are
    grouped into equal-width bins (module convention) and ``f_g`` is the bin's
    mean forecast; then the identity is only approximate: it misses the
    within-bin variance and covariance terms (Stephenson et al. 2008), and
    ``brier`` is still the exact score so the gap is visible.

    Binary (1-D ``y_prob`` = P(y = 1)): the decomposition of
    ``mean((p - y)^2)``. Multiclass (2-D, K columns): the sum over classes of
    the decomposition of column k against 1[y = k] (each grouped by that
    column's values), which adds up to the multiclass Brier score
    ``mean(sum_k (p_k - 1[y=k])^2)``; for K = 2 halved, as
    :func:`calipers.brier_score_loss` (scikit-learn's ``scale_by_half="auto"``).

    Returns a :class:`BrierDecomposition` of 0-d floats. Errors and ``jit``
    behaviour as :func:`expected_calibration_error`.
    """
    if n_bins is not None:
        check_options(n_bins, "uniform")
    xp, P, y, w, invalid, out, one_d = _prepare_probs(y_true, y_prob, sample_weight)
    acc = B.acc_float(xp)
    K = P.shape[1]
    cols = xp.reshape(xp.arange(K, dtype=y.dtype), (1, -1))
    onehot = xp.astype(cols == xp.reshape(y, (-1, 1)), acc)
    chans = [1] if one_d else list(range(K))
    scale = 0.5 if (not one_d and K == 2) else 1.0
    W = xp.sum(w)
    rel = res = unc = bs = xp.asarray(0.0, dtype=acc)
    for k in chans:
        f, o = P[:, k], onehot[:, k]
        r, s, u = _murphy(f, o, w, W, n_bins, xp)
        rel, res, unc = rel + r, res + s, unc + u
        bs = bs + xp.sum(w * (f - o) * (f - o)) / W
    vals = [B.finalize(xp.astype(B.nan_if(invalid, scale * v, xp), out), xp)
            for v in (bs, rel, res, unc)]
    return BrierDecomposition(*vals)


def _murphy(f, o, w, W, n_bins, xp):
    acc = B.acc_float(xp)
    obar = xp.sum(w * o) / W
    if n_bins is None:
        order = xp.argsort(f)
        fs, os_, ws = xp.take(f, order), xp.take(o, order), xp.take(w, order)
        lo, hi = B.group_bounds(fs, xp)
        Cw = B.prefix_sum(ws, xp, acc)
        Co = B.prefix_sum(ws * os_, xp, acc)
        Wg = xp.take(Cw, hi + 1) - xp.take(Cw, lo)
        og = (xp.take(Co, hi + 1) - xp.take(Co, lo)) / xp.where(Wg > 0, Wg, 1.0)
        rel = xp.sum(ws * (fs - og) ** 2) / W
        res = xp.sum(ws * (og - obar) ** 2) / W
    else:
        bins = uniform_bins(f, n_bins, xp)
        Wb = B.segment_sum(w, bins, n_bins, xp)
        Fb = B.segment_sum(w * f, bins, n_bins, xp)
        Ob = B.segment_sum(w * o, bins, n_bins, xp)
        safe = xp.where(Wb > 0, Wb, 1.0)
        fb, ob = Fb / safe, Ob / safe
        rel = xp.sum(Wb * (fb - ob) ** 2) / W
        res = xp.sum(Wb * (ob - obar) ** 2) / W
    return rel, res, obar * (1 - obar)


# --------------------------------------------------------------------------
# temperature scaling
# --------------------------------------------------------------------------

def _nll_derivatives(beta, z, onehot, w, W, xp):
    """NLL(beta) of softmax(beta * z) and its first two derivatives in beta."""
    a = beta * z
    m = xp.max(a, axis=1, keepdims=True)
    e = xp.exp(a - m)
    s = xp.sum(e, axis=1, keepdims=True)
    p = e / s
    zy = xp.sum(z * onehot, axis=1)
    ez = xp.sum(p * z, axis=1)
    ez2 = xp.sum(p * z * z, axis=1)
    nll = xp.sum(w * (xp.log(s[:, 0]) + m[:, 0] - beta * zy)) / W
    g = xp.sum(w * (ez - zy)) / W
    h = xp.sum(w * (ez2 - ez * ez)) / W
    return nll, g, h


@compiled(rows=("logits", "y_true"), weight="sample_weight")
def fit_temperature(logits: ArrayLike, y_true: ArrayLike, *, sample_weight: ArrayLike = None,
                    bounds: tuple[float, float] = (0.01, 100.0),
                    max_iter: int = 100) -> float | Array:
    """Temperature scaling (Guo et al. 2017): the one T > 0 minimising the log loss
    of ``softmax(logits / T)`` on held-out data.

    The mean negative log-likelihood is convex in ``beta = 1/T`` (its second
    derivative is the mean variance of the logits under the softmax), so a
    safeguarded Newton iteration on ``beta`` (bisection, geometric, whenever a
    Newton step leaves the bracket) finds the minimiser to machine precision
    in a few steps. On JAX input the loop is a ``jax.lax.while_loop`` (runs
    under ``jit``); on NumPy and other namespaces it is a Python loop (no
    SciPy needed). Fit on held-out data, never on the training set.

    Parameters
    ----------
    logits : array (n, K) or (n,)
        Real logits; a 1-D array is the binary logit of class 1 (same as
        columns ``[0, z]``).
    y_true : int array (n,)
        Class indices ``0 .. K-1`` (0/1 for 1-D logits).
    sample_weight : array (n,), optional
    bounds : (T_min, T_max), default (0.01, 100)
        The search interval. When the optimum lies outside (e.g. a perfectly
        separating model, whose log loss keeps falling as T -> 0), the nearest
        bound is returned, with a ``RuntimeWarning`` in eager mode.
    max_iter : int

    Returns a 0-d float T in the widest float of the backend. Divide the
    logits by it before the softmax.

    Raises ``ValueError`` for shapes, empty input, NaN/inf logits, labels out
    of range, negative weights, bad bounds; under ``jit`` invalid values give
    NaN.
    """
    t_lo, t_hi = (float(b) for b in bounds)
    if not (0 < t_lo < t_hi < math.inf):
        raise ValueError(f"bounds must satisfy 0 < T_min < T_max < inf, got {bounds!r}")
    xp, (z, y, sw) = B.as_arrays(logits, y_true, sample_weight)
    V.check_1d("y_true", y)
    B.check_numeric("logits", z, xp)
    if z.ndim == 1:
        acc = B.acc_float(xp)
        zf = xp.astype(z, acc)
        z = xp.stack([xp.zeros_like(zf), zf], axis=1)
    if z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"logits must be (n,) or (n, K) with K >= 2, got shape {tuple(z.shape)}")
    if sw is not None:
        V.check_1d("sample_weight", sw)
    V.check_same_length(logits=z, y_true=y, sample_weight=sw)
    B.check_nonempty("logits", z)
    acc = B.acc_float(xp)
    z = xp.astype(z, acc)
    K = z.shape[1]
    yi, invalid = check_class_index("y_true", y, K, xp)
    invalid = invalid | V.check_finite("logits", z, xp)
    z = xp.where(xp.isfinite(z), z, 0.0)
    w, bad_w = _weights(sw, z.shape[0], xp)
    invalid = invalid | bad_w
    W = xp.sum(w)
    cols = xp.reshape(xp.arange(K, dtype=yi.dtype), (1, -1))
    onehot = xp.astype(cols == xp.reshape(yi, (-1, 1)), acc)
    b_lo, b_hi = 1.0 / t_hi, 1.0 / t_lo
    rtol = 8 * float(xp.finfo(acc).eps)

    def deriv(beta):
        return _nll_derivatives(beta, z, onehot, w, W, xp)

    _, g_lo, _ = deriv(xp.asarray(b_lo, dtype=acc))
    _, g_hi, _ = deriv(xp.asarray(b_hi, dtype=acc))

    def step(beta, lo, hi):
        _, g, h = deriv(beta)
        lo = xp.where(g < 0, beta, lo)
        hi = xp.where(g < 0, hi, beta)
        newton = beta - g / xp.where(h > 0, h, 1.0)
        inside = (h > 0) & (newton > lo) & (newton < hi)
        new = xp.where(inside, newton, xp.sqrt(lo * hi))
        new = xp.where(g == 0, beta, new)
        return new, lo, hi

    beta0 = xp.asarray(min(max(1.0, b_lo), b_hi), dtype=acc)
    lo0 = xp.asarray(b_lo, dtype=acc)
    hi0 = xp.asarray(b_hi, dtype=acc)
    if B.is_jax(xp):
        import jax

        def cond(state):
            beta, prev, lo, hi, it = state
            return (it < max_iter) & (xp.abs(beta - prev) > rtol * beta)

        def body(state):
            beta, _, lo, hi, it = state
            new, lo, hi = step(beta, lo, hi)
            return new, beta, lo, hi, it + 1

        init = (beta0, xp.asarray(math.inf, dtype=acc), lo0, hi0, 0)
        beta = jax.lax.while_loop(cond, body, init)[0]
    else:
        beta, lo, hi = beta0, lo0, hi0
        for _ in range(int(max_iter)):
            new, lo, hi = step(beta, lo, hi)
            done = bool(xp.abs(new - beta) <= rtol * beta)
            beta = new
            if done:
                break
    beta = xp.where(g_lo >= 0, xp.asarray(b_lo, dtype=acc),
                    xp.where(g_hi <= 0, xp.asarray(b_hi, dtype=acc), beta))
    for at_bound, t in ((g_lo >= 0, 1.0 / b_lo), (g_hi <= 0, 1.0 / b_hi)):
        V.warn_if(at_bound & ~invalid, f"the log-loss-optimal temperature lies outside "
                  f"bounds={bounds}; returning the bound T={t:g}", xp, RuntimeWarning)
    T = B.nan_if(invalid, 1.0 / beta, xp)
    return B.finalize(T, xp)
