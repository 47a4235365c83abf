"""Multiclass ROC AUC (one-vs-rest, one-vs-one) and cost-minimising threshold selection.

Both stand on the rank-statistics core :mod:`calipers._kernels.rankstats`: one sort of
a score column (:func:`~calipers._kernels.rankstats.sort_groups`), prefix sums of class
weight (:func:`~calipers._kernels.rankstats.class_weights`) and the Mann-Whitney count
with tied pairs counted 1/2 (:func:`~calipers._kernels.rankstats.u2`). Restricting to a
subset of rows (one-vs-one pairs) is a weight of zero on the other rows, never
boolean indexing, so everything keeps static shapes and runs under
``jax.jit``. This module imports nothing from :mod:`calipers._ranking.binary` (which
dispatches 2-D scores here).
"""

from __future__ import annotations

from typing import Any

import math

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.results import result_type
from .._classification import check_label_scores, encode, Labels, nanaverage, static_labels
from .._kernels import rankstats as R
from .._core.compile import compiled
from .._core.types import Array, ArrayLike

__all__ = ["multiclass_roc_auc_score", "select_threshold", "ThresholdSelection"]


def _f(x, xp):
    return xp.astype(x, B.acc_float(xp))


@compiled(rows=("y_true", "y_score"), weight="sample_weight")
def multiclass_roc_auc_score(y_true: ArrayLike, y_score: ArrayLike, *, multi_class: str = "ovr",
                             average: str | None = "macro", sample_weight: ArrayLike = None,
                             labels: ArrayLike = None) -> float | Array:
    """Multiclass ROC AUC, one-vs-rest or one-vs-one (Hand & Till 2001).

    ``'ovr'``: for each class c, the binary AUC of ``y_true == c`` against the
    score column c. Averages: ``'macro'`` (mean over classes), ``'weighted'``
    (weighted by each class's (weighted) count), ``'micro'`` (one binary AUC over
    the flattened one-hot labels and all n*C scores, sample weights repeated),
    None (per-class array).

    ``'ovo'`` (Hand & Till's M): for each pair i < j, the mean of A(i|j), the
    AUC of class i against class j using score column i on the rows of classes
    i and j only, and A(j|i) with column j; ``'macro'`` averages the pairs
    uniformly (Hand & Till's M), ``'weighted'`` by the pair's prevalence
    (share of the total weight in classes i or j), as scikit-learn.

    Every binary AUC is the exact Mann-Whitney statistic with tied pairs counted
    1/2, weighted pairs counting ``w_pos * w_neg``.

    Parameters
    ----------
    y_true : array (n,)
        Labels; column j of ``y_score`` belongs to ``labels[j]``.
    y_score : array (n, C), C >= 2
        Real, finite scores per class (probabilities or not).
    multi_class : {'ovr', 'ovo'}
    average : {'macro', 'weighted', 'micro', None} ('ovo': 'macro', 'weighted')
    sample_weight : array (n,), optional
        Non-negative weights (also for 'ovo', where scikit-learn refuses them).
    labels : list, optional
        Label of each column (unique and sorted: the columns follow the sorted
        labels, as ``predict_proba`` orders classes; unsorted ``labels`` raise,
        as in scikit-learn). Default, eagerly: the sorted
        distinct labels of ``y_true`` (scikit-learn's rule; strings too), which
        must be C of them; under ``jit``: ``0..C-1``.

    Returns
    -------
    0-d float, or an array (C,) for ``average=None``. A class absent from
    ``y_true`` (or with zero weight) has an undefined one-vs-rest AUC, and a
    pair with an absent class an undefined one-vs-one AUC: NaN, left out of the
    averages, with an :class:`UndefinedMetricWarning` in eager mode (scikit-learn
    warns and returns NaN for the whole average in OvR, and its OvO raises).
    ``'micro'`` is undefined only if every sample has zero weight.

    Raises
    ------
    ValueError
        Shapes (``y_score`` not (n, C) with C >= 2, lengths that differ), empty
        input, NaN/inf scores, negative weights, a ``y_true`` label not in
        ``labels``, ``labels`` not unique, not sorted or not one per column, a
        number of distinct ``y_true`` labels other than C without ``labels``, unknown
        ``multi_class``/``average`` (messages in scikit-learn's words). Under
        ``jit`` invalid input gives NaN.
    NotImplementedError
        ``average=None`` with ``'ovo'`` (as scikit-learn).

    Differences from scikit-learn: scores need not sum to 1 over classes
    (scikit-learn requires probabilities; the AUCs are defined without it);
    weights are supported for 'ovo'; absent
    classes are left out of averages instead of making them NaN.
    """
    # scikit-learn's option rules and wording (its tests match these messages)
    allowed = ("micro", "macro", "weighted", None) if multi_class == "ovr" else (
        "macro", "weighted", None)
    if average not in allowed:
        raise ValueError(f"average must be one of {allowed} for multiclass problems "
                         f"(multi_class={multi_class!r}), got {average!r}")
    V.choice(multi_class, "multi_class", ("ovr", "ovo"),
             message=f"multi_class={multi_class!r} is not supported for multiclass ROC AUC, "
                     "multi_class must be in ('ovo', 'ovr')")
    if average is None and multi_class == "ovo":
        raise NotImplementedError("average=None is not implemented for multi_class='ovo'.")
    C = np.shape(y_score)[1] if np.ndim(y_score) == 2 else 0
    y_true = V.column_or_1d(y_true)  # an (n, 1) column is 1-D (scikit-learn's column_or_1d)
    if V.is_text(y_true):  # eager only: encoded against labels (or y_true's sorted classes)
        if labels is not None:
            _column_labels(np.asarray(y_true), labels, C)  # scikit-learn's label rules first
        classes, (y_true,) = V.encode_labels(y_true, labels=labels)
        labels = np.arange(len(classes))
    xp, (yt, s, w) = B.as_arrays(y_true, y_score, sample_weight)
    traced = B.is_traced(yt, s, w)
    V.check_1d("y_true", yt)
    if s.ndim != 2 or s.shape[1] < 2:
        raise ValueError(f"y_score must have shape (n, C) with C >= 2 classes, got "
                         f"{tuple(s.shape)}")
    yt, invalid = check_label_scores(yt, s, w, xp, traced)
    if labels is None and traced:
        V.eager_only()  # the compile policy hands this call to the eager rule below
    lab = _column_labels(None if traced else B.to_numpy(yt), labels, C)
    ti, bad = encode(yt, Labels(lab, np.arange(C), False), xp, "y_true", traced)
    invalid = invalid | bad
    out = R.out_float(xp, s, w)

    if multi_class == "ovr" and average == "micro":
        onehot = xp.astype(xp.reshape(ti, (-1, 1)) == xp.reshape(
            xp.arange(C, dtype=ti.dtype), (1, C)), B.acc_int(xp))
        y_flat = xp.reshape(onehot, (-1,))
        s_flat = xp.reshape(s, (-1,))
        w_flat = None if w is None else xp.reshape(
            xp.broadcast_to(xp.reshape(w, (-1, 1)), (yt.shape[0], C)), (-1,))
        value, undefined = R.roc_auc(y_flat, s_flat, w_flat, xp)
        value = B.nan_if(invalid, xp.astype(value, out), xp)
        if not traced and not bool(invalid) and bool(undefined):
            B.warn_undefined("micro-averaged ROC AUC is undefined: total weight is zero; "
                             "returning NaN")
        return B.finalize(value, xp)

    f = B.acc_float(xp)
    if multi_class == "ovr":
        # class c against the rest: the binary kernel on column c, one sort per column
        vals, Wcs = [], []
        for c in range(C):
            tg = R.sort_groups(xp.astype(ti == c, B.acc_int(xp)), s[:, c], xp)
            cw = R.class_weights(tg, None if w is None else xp.take(w, tg.order), xp)
            vals.append(R.binary_auc(tg, cw, xp)[0])
            Wcs.append(_f(cw.P, xp))
        values = xp.stack(vals)                # NaN where class c or the rest is absent
        Wc = xp.stack(Wcs)
        undefined = (Wc == 0) | (_f(cw.P + cw.N, xp) - Wc == 0)
        support = Wc
        names = lab
        what = "class(es)"
    else:
        # One sort per score column gives every pairwise AUC of that column at once
        # (the Mann-Whitney count of _rankstats.u2, with one prefix sum per class).
        num, Wc = _pairwise_auc_matrix(ti, s, None if w is None else w, C, xp)
        pairs = [(i, j) for i in range(C) for j in range(i + 1, C)]
        ii = xp.asarray([p[0] for p in pairs], dtype=B.acc_int(xp))
        jj = xp.asarray([p[1] for p in pairs], dtype=B.acc_int(xp))
        flat = xp.reshape(num, (-1,))
        n_ij = xp.take(flat, ii * C + jj)      # column i: class i above class j
        n_ji = xp.take(flat, jj * C + ii)      # column j: class j above class i
        Wi, Wj = xp.take(Wc, ii), xp.take(Wc, jj)
        undefined = (Wi == 0) | (Wj == 0)
        den = 2 * Wi * Wj
        values = (n_ij + n_ji) / 2 / xp.where(undefined, xp.asarray(1.0, dtype=f), den)
        values = B.nan_if(undefined, values, xp)
        total = xp.sum(Wc)
        support = (Wi + Wj) / xp.where(total > 0, total, xp.asarray(1.0, dtype=f))
        names = [(lab[i].item(), lab[j].item()) for i, j in pairs]
        what = "class pair(s)"
    if not traced and not bool(invalid):
        und = np.asarray(B.to_numpy(undefined)).reshape(-1)
        if und.any():
            bad_names = [names[i] if not isinstance(names, np.ndarray) else names[i].item()
                         for i in np.flatnonzero(und)]
            B.warn_undefined(f"one-vs-{'rest' if multi_class == 'ovr' else 'one'} ROC AUC is "
                             f"undefined for {what} {bad_names[:10]} (a class absent from "
                             "y_true); NaN, left out of the average")
    if average is None:
        return B.nan_if(invalid, xp.astype(values, out), xp)
    value = nanaverage(values, support if average == "weighted" else None, xp)
    return B.finalize(B.nan_if(invalid, xp.astype(value, out), xp), xp)


def _column_labels(yt, labels, C):
    """The label of each score column, with scikit-learn's rules and messages.

    ``labels`` given: unique, sorted, one per column. Otherwise the sorted distinct values of ``yt`` (a
    NumPy array; scikit-learn's rule), which must be ``C`` of them; under
    ``jit`` (``yt`` None) the columns are ``0..C-1``.
    """
    if labels is not None:
        lab = V.host_labels(labels, "labels") if V.is_text(labels) else static_labels(labels)
        V.check_ordered_labels(lab)
        if lab.shape[0] != C:
            raise ValueError(f"Number of given labels, {lab.shape[0]}, not equal to the number "
                             f"of columns in 'y_score', {C}")
        if yt is not None:
            try:
                extra = np.setdiff1d(yt, lab)
            except TypeError:  # labels and y_true of different kinds: nothing matches
                extra = np.asarray(yt).reshape(-1)[:1]
            if extra.size:
                raise ValueError("'y_true' contains labels not in parameter 'labels': "
                                 f"{extra.tolist()[:10]} (labels {lab.tolist()})")
        return lab
    if yt is None:
        return np.arange(C)
    lab = np.unique(yt)
    if lab.shape[0] != C:
        raise ValueError(f"Number of classes in y_true not equal to the number of columns in "
                         f"'y_score': y_true has {lab.shape[0]} ({lab.tolist()[:10]}), "
                         f"y_score {C}; pass labels= (one per column)")
    return lab


def _pairwise_auc_matrix(ti, s, w, C, xp):
    """Pairwise Mann-Whitney counts of every score column, one sort per column.

    For column i, :func:`calipers._kernels.rankstats.u2` with the class-i rows as the
    higher class and the prefix sums of every class's weight (an (n + 1, C)
    matrix) as the lower classes gives ``num[i, j] = 2 * sum over (a in class
    i, b in class j) of w_a w_b ([s_ai > s_bi] + [s_ai == s_bi] / 2)`` for all
    j at once: integers without (or with integer) weights (exact), else the
    widest float. Returns ``num`` (C, C) and the class weights ``Wc`` (C,),
    both in the widest float.
    """
    cdt = R.count_dtype(xp, w)
    classes = xp.reshape(xp.arange(C, dtype=ti.dtype), (1, C))
    rows = []
    Wc = None
    for i in range(C):
        tg = R.sort_groups(ti, s[:, i], xp)
        onehot = xp.astype(xp.reshape(tg.y, (-1, 1)) == classes, cdt)
        if w is not None:
            onehot = onehot * xp.reshape(xp.astype(xp.take(w, tg.order), cdt), (-1, 1))
        Cm = R.prefix(onehot, xp, cdt)
        rows.append(_f(R.u2(tg, onehot[:, i], Cm, xp), xp))
        if Wc is None:
            Wc = _f(Cm[Cm.shape[0] - 1, ...], xp)
    return xp.stack(rows), Wc


# --------------------------------------------------------------------------
# threshold selection
# --------------------------------------------------------------------------

@result_type(legacy_fields=('threshold', 'expected_cost', 'tp', 'fp', 'fn', 'tn',))
class ThresholdSelection:
    """Result of :func:`select_threshold` (a frozen dataclass and a JAX pytree).

    ``threshold``: predict positive iff ``score >= threshold`` (``+inf``: never).
    ``expected_cost``: ``(cost_fp * FP + cost_fn * FN) / total weight`` at it.
    ``tp``, ``fp``, ``fn``, ``tn``: the (weighted) confusion counts at it,
    integers without weights or with integer weights.
    """

    threshold: Any
    expected_cost: Any
    tp: Any
    fp: Any
    fn: Any
    tn: Any


def _check_cost(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(v)) or v < 0:
        raise ValueError(f"{name} must be a finite non-negative number, got {v!r}")
    return float(v)


def select_threshold(y_true: ArrayLike, y_score: ArrayLike, *, cost_fp: float, cost_fn: float,
                     sample_weight: ArrayLike = None, pos_label: Any = None) -> ThresholdSelection:
    """The score threshold that minimises ``cost_fp * FP + cost_fn * FN``.

    Candidates are every distinct score (predicted positive iff
    ``score >= threshold``) and ``+inf`` (predict nothing positive), i.e. every
    distinct decision the data allow. Any threshold in the half-open interval
    between the next lower distinct score (exclusive) and the returned one gives
    the same decisions on this data. Among thresholds with equal minimal cost the
    **highest** is returned (the fewest positive calls). Computed from one sort
    of the scores (:func:`calipers._kernels.rankstats.sort_groups`) and prefix sums: O(n log n).

    Parameters
    ----------
    y_true : array (n,)
        Labels in {0, 1} (or bool), or any labels with ``pos_label``.
    y_score : array (n,)
        Real, finite scores (higher: more likely positive), e.g. validation
        probabilities.
    cost_fp, cost_fn : float >= 0
        Cost of one false positive and one false negative (per unit weight).
        The minimiser depends only on their ratio; for calibrated probabilities
        the Bayes threshold is ``cost_fp / (cost_fp + cost_fn)``.
    sample_weight : array (n,), optional
        Non-negative weights.

    Returns
    -------
    :class:`ThresholdSelection` ``(threshold, expected_cost, tp, fp, fn, tn)``;
    ``expected_cost`` is the mean cost per unit of weight. NaN threshold and
    cost, with an :class:`UndefinedMetricWarning` eagerly, when the total weight
    is zero.

    Raises
    ------
    ValueError
        Costs negative or not finite; the input errors of
        :func:`calipers.roc_auc_score`. Under ``jit`` invalid input gives a NaN
        threshold and cost (the counts are then meaningless).
    """
    cfp = _check_cost("cost_fp", cost_fp)
    cfn = _check_cost("cost_fn", cost_fn)
    d = R.prepare_binary(y_true, y_score, sample_weight, pos_label)
    xp = d.xp
    tg = R.sort_groups(d.y, d.s, xp)  # the one sort of the binary family
    cw = R.class_weights(tg, None if d.w is None else xp.take(d.w, tg.order), xp)
    Pn, Nn = cw.P, cw.N
    # ascending order: at the threshold of row i (its tie group starts at lo)
    # the rows lo.. are predicted positive
    fn = xp.take(cw.Cp, tg.lo)
    tn = xp.take(cw.Cn, tg.lo)
    fn = xp.concat([fn, xp.reshape(Pn, (1,))])     # last candidate: +inf
    tn = xp.concat([tn, xp.reshape(Nn, (1,))])
    tp = Pn - fn
    fp = Nn - tn
    cost = cfp * _f(fp, xp) + cfn * _f(fn, xp)
    # highest threshold among the minima: argmin of the reversed array
    m = cost.shape[0]
    idx = (m - 1) - xp.argmax(xp.astype(xp.flip(cost) == xp.min(cost), xp.int8))
    thr_all = xp.concat([xp.astype(tg.s, d.out),
                         xp.full(1, math.inf, dtype=d.out, device=B.device(tg.s))])
    total = _f(Pn + Nn, xp)
    undefined = total == 0
    threshold = B.nan_if(d.invalid | undefined, _pick(thr_all, idx, xp), xp)
    exp_cost = _pick(cost, idx, xp) / xp.where(undefined, xp.asarray(1.0, dtype=total.dtype), total)
    exp_cost = B.nan_if(d.invalid | undefined, xp.astype(exp_cost, d.out), xp)
    if not B.is_traced(threshold) and not bool(d.invalid) and bool(undefined):
        B.warn_undefined("threshold selection is undefined when the total weight is zero; "
                         "returning NaN")
    fin = lambda v: B.finalize(v, xp)  # noqa: E731
    return ThresholdSelection(fin(threshold), fin(exp_cost), *(fin(_pick(a, idx, xp))
                                                               for a in (tp, fp, fn, tn)))


def _pick(a, idx, xp):
    # a gather rather than a[idx]: array-api-strict refuses 0-d array indices
    return xp.reshape(xp.take(a, xp.reshape(idx, (1,))), ())
