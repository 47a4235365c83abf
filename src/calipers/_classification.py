"""Thresholded classification metrics: confusion counts and everything built on them.

Binary, multiclass and multilabel, with scikit-learn's names, signatures and
semantics, plus what a ``jit``-compiled training loop needs:

* every metric is a function of weighted counts per label (true positives,
  predicted and true totals), computed with segment sums over label indices:
  static shapes, no ``unique`` and no boolean-mask indexing, so the kernels run
  under ``jax.jit``;
* under ``jit`` the label set must be static: ``num_classes=C`` (labels are
  ``0..C-1``) or an explicit ``labels=`` list, and labels are numbers.
  Eagerly the labels may be inferred from the data, as scikit-learn does, and
  may be strings or any sortable values: they are encoded as the sorted
  distinct values of ``y_true`` and ``y_pred`` together (scikit-learn's
  encoding), ``labels`` and ``pos_label`` naming the original values;
* ``ignore_index`` drops samples (multilabel: entries) whose ``y_true`` equals
  it by giving them weight zero (a mask, never boolean indexing);
* ``threshold``: ``y_pred`` holds scores and a sample is predicted positive
  iff ``score >= threshold``;
* F-scores are computed from counts, ``(1+b^2) TP / ((1+b^2) TP + b^2 FN + FP)``,
  so an undefined precision does not make F undefined (scikit-learn #27189, PR #27577).

Counts are integers when there are no weights (or the weights are integers)
and the widest float the backend gives otherwise (scikit-learn #6842, jax #585).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import array_api_compat
import numpy as np

from ._core import xp as B
from ._kernels import rankstats as R
from ._core import validation as V
from ._core.compile import compiled
from ._core.types import Array, ArrayLike

__all__ = [
    "confusion_matrix",
    "multilabel_confusion_matrix",
    "precision_recall_fscore_support",
    "precision_score",
    "recall_score",
    "f1_score",
    "fbeta_score",
    "specificity_score",
    "accuracy_score",
    "balanced_accuracy_score",
    "matthews_corrcoef",
    "cohen_kappa_score",
    "top_k_accuracy_score",
]

_AVERAGES = (None, "binary", "micro", "macro", "weighted", "samples")


# --------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------

def static_labels(labels, name="labels"):
    """``labels`` as a NumPy array on the host (it is static, also under jit)."""
    if B.is_traced(labels):
        raise ValueError(f"{name} must be concrete (a list or a NumPy array), not a traced array")
    arr = np.asarray(B.to_numpy(labels) if B.is_array(labels) else labels)
    if arr.ndim != 1 or arr.shape[0] == 0:
        # scikit-learn's words first ("'labels' should contain at least one label.")
        raise ValueError(f"'{name}' should contain at least one label: it must be a non-empty "
                         f"1-D list of labels, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    if np.unique(arr).shape[0] != arr.shape[0]:
        # scikit-learn's wording ("Parameter 'labels' must be unique"), which its tests match
        raise ValueError(f"Parameter '{name}' must be unique (no duplicates), got {arr.tolist()}")
    return arr


# --------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------

class _Pair(NamedTuple):
    xp: Any
    yt: Any        # y_true, 1-D or 2-D, same dtype as yp
    yp: Any        # y_pred (binarised when a threshold is given)
    w: Any         # sample weights or None
    keep: Any      # None, or 0/1 mask of y_true's shape (ignore_index)
    invalid: Any   # scalar bool: input broke a rule (only ever True under jit)
    cdt: Any       # count dtype
    out: Any       # output float dtype
    traced: bool
    classes: Any = None  # text labels: the sorted classes the codes index (eager only)


def _common_dtype(a, b, xp):
    """Cast two label arrays so that they compare without mixing kinds (array-api-strict)."""
    if xp.isdtype(a.dtype, "bool"):
        a = xp.astype(a, B.acc_int(xp))
    if xp.isdtype(b.dtype, "bool"):
        b = xp.astype(b, B.acc_int(xp))
    if a.dtype == b.dtype:
        return a, b
    if xp.isdtype(a.dtype, "integral") and xp.isdtype(b.dtype, "integral"):
        dt = xp.result_type(a.dtype, b.dtype)
    else:
        dt = B.acc_float(xp)
    return xp.astype(a, dt), xp.astype(b, dt)


def _prepare(y_true, y_pred, sample_weight, *, threshold=None, ignore_index=None,
             pred_name="y_pred", true_name="y_true"):
    classes = None
    y_true, y_pred = V.densify(y_true), V.densify(y_pred)
    # an (n, 1) column is a 1-D target, never a one-label indicator matrix (scikit-learn)
    y_true, y_pred = V.column_or_1d(y_true), V.column_or_1d(y_pred)
    if V.is_text(y_true) or V.is_text(y_pred):
        # string / object labels: encoded eagerly as scikit-learn does (sorted distinct
        # values of both arrays); under jit labels are integers
        if threshold is not None:
            raise ValueError(f"threshold needs numeric scores in {pred_name}, got text labels")
        classes, (y_true, y_pred) = V.encode_labels(y_true, y_pred, names=(true_name, pred_name),
                                                    infer_from=2)
        if ignore_index is not None:
            hit = np.flatnonzero(classes == ignore_index)
            ignore_index = int(hit[0]) if hit.size else -1
    xp, (yt, yp, w) = B.as_arrays(y_true, y_pred, sample_weight,
                                  names=(true_name, pred_name, "sample_weight"))
    traced = B.is_traced(yt, yp, w)
    if yt.ndim not in (1, 2):
        raise ValueError(f"{true_name} must be 1-D (binary/multiclass) or 2-D (multilabel), "
                         f"got shape {tuple(yt.shape)}")
    if yt.ndim == yp.ndim and yt.shape[0] != yp.shape[0]:
        V.check_same_length(**{true_name: yt, pred_name: yp})
    if tuple(yp.shape) != tuple(yt.shape):
        raise ValueError(f"{pred_name} has shape {tuple(yp.shape)} but {true_name} has shape "
                         f"{tuple(yt.shape)}; they must match")
    B.check_nonempty(true_name, yt)
    B.check_numeric(true_name, yt, xp)
    B.check_numeric(pred_name, yp, xp)
    invalid = V.check_finite(true_name, yt, xp)
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer,
                                                                     np.floating)) \
                or not math.isfinite(float(threshold)):
            raise ValueError(f"threshold must be a finite real number, got {threshold!r}")
        V.check_real_values(pred_name, yp, xp, "scores when threshold is given")
        invalid = invalid | V.check_finite(pred_name, yp, xp)
        # predicted positive iff score >= threshold
        yp = xp.astype(yp >= threshold, B.acc_int(xp))
    else:
        invalid = invalid | V.check_finite(pred_name, yp, xp)
    yt, yp = _common_dtype(yt, yp, xp)
    if w is not None:
        V.check_1d("sample_weight", w)
        V.check_same_length(**{true_name: yt}, sample_weight=w)
        invalid = invalid | V.check_weights("sample_weight", w, xp)
    cdt = R.count_dtype(xp, w)
    out = B.out_float(xp, w)
    keep = None
    if ignore_index is not None:
        if isinstance(ignore_index, bool) or not isinstance(
                ignore_index, (int, float, np.integer, np.floating)):
            raise ValueError(f"ignore_index must be a number, got {ignore_index!r}")
        k = yt != ignore_index
        # ignored entries take the prediction's value so that they can never be
        # reported as invalid labels; their weight is zero
        yt = xp.where(k, yt, yp)
        keep = xp.astype(k, cdt)
    return _Pair(xp, yt, yp, w, keep, invalid, cdt, out, traced, classes)


def _code_of(d: _Pair, value, name):
    """A static label as its code when the labels were text (``None`` stays ``None``)."""
    if d.classes is None or value is None:
        return value
    hit = np.flatnonzero(d.classes == value)
    if not hit.size:
        raise ValueError(f"{name}={value!r} is not a valid label: it should be one of "
                         f"{d.classes.tolist()}")
    return int(hit[0])


def _codes_of(d: _Pair, labels):
    """A static label list as codes when the labels were text; absent labels get fresh codes."""
    if d.classes is None or labels is None:
        return labels
    lab = np.asarray(labels)
    out, extra = [], len(d.classes)
    for v in lab.tolist():
        hit = np.flatnonzero(d.classes == v)
        if hit.size:
            out.append(int(hit[0]))
        else:  # a label that occurs in neither array: a code no element has
            out.append(extra)
            extra += 1
    return np.asarray(out, dtype=np.int64)


def _sample_weights(d: _Pair):
    """Per-sample weight in the count dtype (mask applied for 1-D input)."""
    xp = d.xp
    n = d.yt.shape[0]
    ww = xp.ones(n, dtype=d.cdt) if d.w is None else xp.astype(d.w, d.cdt)
    if d.keep is not None and d.yt.ndim == 1:
        ww = ww * d.keep
    return ww


class Labels(NamedTuple):
    full: np.ndarray   # the full label list; index len(full) is the "other" bucket
    sel: np.ndarray    # indices into ``full`` of the labels reported (in order)
    other_ok: bool     # labels outside ``full`` are allowed (they go to "other")


def _resolve_labels(d: _Pair, labels, num_classes, *, allow_infer=True) -> Labels:
    """The static label set of a 1-D (binary/multiclass) problem."""
    labels = _codes_of(d, labels)
    if num_classes is not None:
        C = V.positive_int(num_classes, "num_classes")
        full = np.arange(C)
        if labels is None:
            return Labels(full, np.arange(C), False)
        lab = static_labels(labels)
        if not np.all((lab >= 0) & (lab < C) & (lab == np.round(lab))):
            raise ValueError(f"labels must be class indices in 0..{C - 1} when num_classes={C} "
                             f"is given, got {lab.tolist()}")
        return Labels(full, lab.astype(np.int64), False)
    if labels is not None:
        lab = static_labels(labels)
        return Labels(lab, np.arange(lab.shape[0]), True)
    V.eager_only()  # inferred classes are data-dependent: the compile policy runs eagerly
    if d.traced or not allow_infer:
        raise ValueError("under jax.jit the label set must be static: pass num_classes=C "
                         "(labels 0..C-1) or labels=[...]")
    yt = B.to_numpy(d.yt)
    if d.keep is not None:
        yt = yt[B.to_numpy(d.keep) != 0]
    full = np.union1d(np.unique(yt), np.unique(B.to_numpy(d.yp)))
    return Labels(full, np.arange(full.shape[0]), False)


def encode(y, lab: Labels, xp, name, traced):
    """Index of each label in ``lab.full`` (``len(full)`` for labels outside it).

    Returns ``(idx, bad)``; ``bad`` (scalar) is True if a label outside the set
    occurred and that is not allowed (only under jit: eagerly it raises).
    """
    full = lab.full
    L = full.shape[0]
    if xp.isdtype(y.dtype, "integral") and np.array_equal(full, np.arange(L)):
        # labels 0..L-1 (num_classes): the label is its index, no search needed
        match = (y >= 0) & (y < L)
        idx = xp.where(match, xp.astype(y, B.acc_int(xp)), xp.asarray(L, dtype=B.acc_int(xp)))
        return idx, _bad_labels(y, match, lab, L, xp, name, traced)
    order = np.argsort(full, kind="stable")
    fs = full[order]
    if xp.isdtype(y.dtype, "integral") and np.issubdtype(fs.dtype, np.integer):
        dt = y.dtype
    elif xp.isdtype(y.dtype, "integral") and np.all(fs == np.round(fs)):
        dt = y.dtype
        fs = fs.astype(np.int64)
    else:
        dt = B.acc_float(xp) if xp.isdtype(y.dtype, "integral") else y.dtype
        y = xp.astype(y, dt)
    fx = xp.asarray(fs, dtype=dt)
    ox = xp.asarray(order, dtype=B.acc_int(xp))
    pos = xp.searchsorted(fx, y)
    pos = xp.clip(xp.astype(pos, B.acc_int(xp)), 0, L - 1)
    match = xp.take(fx, pos) == y
    idx = xp.where(match, xp.take(ox, pos), xp.asarray(L, dtype=B.acc_int(xp)))
    return idx, _bad_labels(y, match, lab, L, xp, name, traced)


def _bad_labels(y, match, lab: Labels, L, xp, name, traced):
    """Raise (eager) or flag (jit) labels outside the set, unless they are allowed."""
    if lab.other_ok:
        return xp.asarray(False)
    if np.array_equal(lab.full, np.arange(L)):
        def message(i, v):
            return f"{name} element {i} is {v!r}, which is outside 0..{L - 1} (num_classes={L})"
    else:
        def message(i, v):  # scikit-learn's wording first: its tests match it
            return (f"'{name}' contains labels not in parameter 'labels': element {i} is "
                    f"{v!r}, which is not in {lab.full.tolist()}")
    return V.fail_if(~match, name, "", xp, values=y, message=message)


class _Counts(NamedTuple):
    tp: Any      # per unit (label, or sample for average="samples")
    pred: Any    # predicted positives per unit (TP + FP)
    true: Any    # actual positives per unit (TP + FN)
    total: Any   # weight per unit (TP + FP + FN + TN)
    names: Any   # label values per unit (NumPy, for warnings) or None


def _binary_counts(d: _Pair, pos_label):
    xp = d.xp
    pos_label = _code_of(d, pos_label, "pos_label")
    if d.yt.ndim != 1:
        raise ValueError("Target is multilabel-indicator but average='binary'. Please choose "
                         "another average setting, one of [None, 'micro', 'macro', 'weighted', "
                         "'samples'].")
    if not d.traced:
        present = np.unique(np.concatenate([B.to_numpy(d.yt)[B.to_numpy(d.keep) != 0]
                                            if d.keep is not None else B.to_numpy(d.yt),
                                            B.to_numpy(d.yp)]))
        if present.shape[0] > 2:
            raise ValueError("Target is multiclass but average='binary'. Please choose "
                             "another average setting, one of [None, 'micro', 'macro', "
                             f"'weighted'] (labels present: {present.tolist()[:10]}).")
        if present.shape[0] == 2 and pos_label not in present.tolist():
            raise ValueError(f"pos_label={pos_label!r} is not a valid label: it should be one "
                             f"of {present.tolist()}")
        invalid = d.invalid
    else:
        # the eager rule, with static shapes: count distinct values of one sort
        vals = xp.sort(xp.concat([d.yt, d.yp]))
        n_distinct = 1 + xp.sum(xp.astype(vals[1:] != vals[:-1], B.acc_int(xp)))
        has_pos = xp.any(vals == pos_label)
        invalid = d.invalid | (n_distinct > 2) | ((n_distinct == 2) & ~has_pos)
    ww = _sample_weights(d)
    t = xp.astype(d.yt == pos_label, d.cdt)
    p = xp.astype(d.yp == pos_label, d.cdt)
    tp = xp.reshape(xp.sum(ww * t * p), (1,))
    pred = xp.reshape(xp.sum(ww * p), (1,))
    true = xp.reshape(xp.sum(ww * t), (1,))
    total = xp.reshape(xp.sum(ww), (1,))
    return _Counts(tp, pred, true, total, np.asarray([pos_label])), invalid


def _multiclass_label_counts(d: _Pair, lab: Labels):
    """Per-label counts over ``lab.full`` plus the "other" bucket (length L + 1)."""
    xp = d.xp
    ti, bad_t = encode(d.yt, lab, xp, "y_true", d.traced)
    pi, bad_p = encode(d.yp, lab, xp, "y_pred", d.traced)
    ww = _sample_weights(d)
    L1 = lab.full.shape[0] + 1
    true = B.segment_sum(ww, ti, L1, xp)
    pred = B.segment_sum(ww, pi, L1, xp)
    tp = B.segment_sum(ww * xp.astype(ti == pi, d.cdt), ti, L1, xp)
    return (ti, pi, ww, tp, pred, true), d.invalid | bad_t | bad_p


def _label_counts(d: _Pair, *, labels, num_classes, average, pos_label):
    """Counts per reported unit for the precision/recall family; also ``support``."""
    xp = d.xp
    if average == "binary":
        c, invalid = _binary_counts(d, pos_label)
        return c, invalid
    if d.yt.ndim == 1:
        if average == "samples":
            raise ValueError("average='samples' is only meaningful for multilabel input "
                             "(2-D indicator matrices)")
        lab = _resolve_labels(d, labels, num_classes)
        (_, _, ww, tp, pred, true), invalid = _multiclass_label_counts(d, lab)
        sel = xp.asarray(lab.sel, dtype=B.acc_int(xp))
        total = xp.sum(ww)
        tp, pred, true = (xp.take(a, sel) for a in (tp, pred, true))
        total = xp.broadcast_to(total, tp.shape)
        return _Counts(tp, pred, true, total, lab.full[lab.sel]), invalid
    # multilabel
    n, L = d.yt.shape
    invalid = d.invalid | V.check_indicator("y_true", d.yt, xp) \
        | V.check_indicator("y_pred", d.yp, xp)
    if num_classes is not None and V.positive_int(num_classes, "num_classes") != L:
        raise ValueError(f"num_classes={num_classes} but the indicator matrices have {L} columns")
    if labels is not None:
        lab = static_labels(labels)
        if not np.all((lab >= 0) & (lab < L) & (lab == np.round(lab))):
            # scikit-learn's words (the greatest label first, then the least)
            got = (f"Got {lab.max():g} > {L - 1}. " if lab.max() > L - 1 else
                   f"Got {lab.min():g} < 0. " if lab.min() < 0 else "")
            raise ValueError(f"All labels must be in [0, n labels) for multilabel targets. "
                             f"{got}(labels are column indices in 0..{L - 1}, got "
                             f"{lab.tolist()})")
        sel = lab.astype(np.int64)
    else:
        sel = np.arange(L)
    selx = xp.asarray(sel, dtype=B.acc_int(xp))
    Y = xp.take(xp.astype(d.yt == 1, d.cdt), selx, axis=1)
    P = xp.take(xp.astype(d.yp == 1, d.cdt), selx, axis=1)
    K = xp.ones_like(Y) if d.keep is None else xp.take(d.keep, selx, axis=1)
    if average == "samples":
        # per-sample counts, unweighted: the sample weight enters the average
        tp = xp.sum(Y * P * K, axis=1)
        pred = xp.sum(P * K, axis=1)
        true = xp.sum(Y * K, axis=1)
        total = xp.sum(K, axis=1)
        return _Counts(tp, pred, true, total, None), invalid
    ww = xp.ones(n, dtype=d.cdt) if d.w is None else xp.astype(d.w, d.cdt)
    E = ww[:, None] * K
    tp = xp.sum(E * Y * P, axis=0)
    pred = xp.sum(E * P, axis=0)
    true = xp.sum(E * Y, axis=0)
    total = xp.sum(E, axis=0)
    return _Counts(tp, pred, true, total, sel), invalid


# --------------------------------------------------------------------------
# dividing and averaging
# --------------------------------------------------------------------------

def _f(x, xp):
    return xp.astype(x, B.acc_float(xp))


def _divide(num, den, zd_value, xp):
    undefined = den == 0
    val = num / xp.where(undefined, xp.asarray(1.0, dtype=den.dtype), den)
    return xp.where(undefined, xp.asarray(zd_value, dtype=val.dtype), val), undefined


def nanaverage(values, weights, xp):
    """Weighted mean ignoring NaN (scikit-learn's ``nanaverage``): NaN if all are NaN;
    the unweighted mean of the defined values if their weights sum to zero."""
    ok = ~xp.isnan(values)
    zero = xp.asarray(0.0, dtype=values.dtype)
    v0 = xp.where(ok, values, zero)
    okf = xp.astype(ok, values.dtype)
    cnt = xp.sum(okf)
    plain = xp.sum(v0) / xp.where(cnt > 0, cnt, xp.asarray(1.0, dtype=values.dtype))
    nan = xp.asarray(math.nan, dtype=values.dtype)
    if weights is None:
        return xp.where(cnt > 0, plain, nan)
    w0 = xp.where(ok, _f(weights, xp), zero)
    sw = xp.sum(w0)
    weighted = xp.sum(v0 * w0) / xp.where(sw > 0, sw, xp.asarray(1.0, dtype=values.dtype))
    return xp.where(cnt > 0, xp.where(sw > 0, weighted, plain), nan)


def _warn_units(what, undefined, counts: _Counts, average, reason, zd_value, invalid, xp):
    """UndefinedMetricWarning naming the labels (or samples) concerned (``V.warn_if``:
    eager, or recorded by the compile policy; none under the user's own ``jit``)."""
    names = counts.names  # static (NumPy) label values, or None

    def message(und):
        und = np.asarray(und).reshape(-1).astype(bool)
        if zd_value == 0.0:
            # zero_division="warn" is scikit-learn's convention: its words exactly
            axis0, axis1 = ("label", "sample") if average == "samples" else ("sample", "label")
            where = "due to" if und.shape[0] == 1 else f"in {axis1}s with"
            return (f"{_SK_NAMES[what]} is ill-defined and being set to 0.0 {where} no "
                    f"{_SK_MODIFIERS[what]} {axis0}s. Use `zero_division` parameter to control "
                    "this behavior.")
        if average == "samples":
            where = f"{int(und.sum())} sample(s)"
        elif average == "micro":
            where = "the micro average"
        else:
            nm = names if names is not None else np.arange(und.shape[0])
            bad = np.asarray(nm)[und].tolist()
            where = f"label(s) {bad[:10]}{' ...' if len(bad) > 10 else ''}"
        value = "NaN (left out of averages)" if math.isnan(zd_value) else f"{zd_value:g}"
        return (f"{what} is ill-defined for {where} with {reason}; set to {value}. "
                "Use zero_division to choose the value.")

    V.warn_if(xp.any(undefined) & ~invalid, message, xp, values=undefined)


_SK_NAMES = {"precision": "Precision", "recall": "Recall", "f-score": "F-score",
             "specificity": "Specificity"}
_SK_MODIFIERS = {"precision": "predicted", "recall": "true", "f-score": "true nor predicted",
                 "specificity": "negative"}

_REASONS = {
    "precision": "no predicted samples",
    "recall": "no true samples",
    "f-score": "neither true nor predicted samples",
    "specificity": "no negative samples",
}


def _metrics_from_counts(c: _Counts, *, beta, zero_division, average, sample_weight,
                         warn_for, xp, out, invalid, traced):
    """precision, recall, F-beta, specificity for the given averaging."""
    zd_value, zd_warn = V.zero_division(zero_division)
    tp, pred, true, total = (_f(a, xp) for a in (c.tp, c.pred, c.true, c.total))
    if average == "micro":
        tp, pred, true, total = (xp.reshape(xp.sum(a), (1,)) for a in (tp, pred, true, total))
    b2 = float(beta) ** 2
    res = {}
    res["precision"] = _divide(tp, pred, zd_value, xp)
    res["recall"] = _divide(tp, true, zd_value, xp)
    if math.isinf(b2):
        res["f-score"] = res["recall"]
    else:
        res["f-score"] = _divide((1 + b2) * tp, b2 * true + pred, zd_value, xp)
    tn = total - pred - true + tp
    res["specificity"] = _divide(tn, total - true, zd_value, xp)
    if zd_warn:
        for what in warn_for:
            _warn_units(what, res[what][1], c, average, _REASONS[what], zd_value, invalid, xp)
    if average == "weighted":
        weights = c.true
    elif average == "samples":
        weights = sample_weight
    else:
        weights = None
    final = {}
    for what, (val, _) in res.items():
        if average not in (None,):
            val = nanaverage(val, weights, xp)
            if average in ("binary", "micro"):
                val = xp.reshape(val, ()) if val.ndim else val
        val = B.nan_if(invalid, xp.astype(val, out), xp)
        final[what] = B.finalize(val, xp)
    support = None
    if average is None:
        support = c.true
    return final, support


def counts_from_confusion(cm, xp, *, average=None, pos_label=1, labels=None):
    """Per-class counts of a (K, K) confusion matrix (rows true, columns predicted).

    The counts :func:`confusion_metrics` (and every one-shot function of the
    precision / recall family) works from: true positives (the diagonal),
    predicted totals (column sums), true totals (row sums) and the total.
    ``average="binary"`` keeps class ``pos_label`` (an index, K must be 2);
    otherwise ``labels`` (class indices, default all) selects the classes.
    """
    K = cm.shape[0]
    tp_all = xp.sum(cm * xp.astype(xp.eye(K, dtype=xp.bool, device=B.device(cm)), cm.dtype),
                    axis=1)
    pred_all = xp.sum(cm, axis=0)
    true_all = xp.sum(cm, axis=1)
    total = xp.sum(cm)
    if average == "binary":
        if K != 2:
            raise ValueError(f"average='binary' needs two classes, this confusion matrix has {K}; "
                             "choose another average ('micro', 'macro', 'weighted' or None)")
        if isinstance(pos_label, bool) or pos_label not in (0, 1):
            raise ValueError(f"pos_label must be the class index 0 or 1 with average='binary', "
                             f"got {pos_label!r}")
        sel = np.asarray([int(pos_label)])
    elif labels is None:
        sel = np.arange(K)
    else:
        sel = static_labels(labels)
        if not np.all((sel >= 0) & (sel < K) & (sel == np.round(sel))) or \
                len(set(sel.tolist())) != sel.shape[0]:
            raise ValueError(f"labels must be distinct class indices in 0..{K - 1}, got "
                             f"{sel.tolist()}")
        sel = sel.astype(np.int64)
    idx = xp.asarray(sel, dtype=B.acc_int(xp), device=B.device(cm))
    tp, pred, true = (xp.take(a, idx) for a in (tp_all, pred_all, true_all))
    return _Counts(tp, pred, true, xp.broadcast_to(total, tp.shape), sel)


def confusion_metrics(cm, *, average=None, beta=1.0, zero_division="nan", pos_label=1,
                      labels=None, invalid=None, warn_for=("precision", "recall", "f-score")):
    """Precision, recall, F-beta, specificity and support from a (K, K) confusion matrix.

    The formulas, averaging and ``zero_division`` rules of
    :func:`precision_recall_fscore_support` and :func:`specificity_score`
    (the one-shot functions compute the same counts and call the same
    formula, :func:`_metrics_from_counts`). ``pos_label`` and ``labels`` are
    class indices. Returns ``(dict of 0-d or (L,) floats, support or None)``.
    """
    V.choice(average, "average", (None, "binary", "micro", "macro", "weighted"))
    _check_beta(beta)
    xp = array_api_compat.array_namespace(cm)
    c = counts_from_confusion(cm, xp, average=average, pos_label=pos_label, labels=labels)
    inv = xp.asarray(False) if invalid is None else invalid
    return _metrics_from_counts(c, beta=beta, zero_division=zero_division, average=average,
                                sample_weight=None, warn_for=tuple(warn_for), xp=xp,
                                out=B.acc_float(xp), invalid=inv, traced=B.is_traced(cm))


def _check_beta(beta):
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)) \
            or math.isnan(float(beta)) or beta < 0:
        raise ValueError(f"beta must be a non-negative number, got {beta!r}")


def _prf(y_true, y_pred, *, beta, labels, pos_label, average, warn_for, sample_weight,
         zero_division, num_classes, ignore_index, threshold):
    V.choice(average, "average", _AVERAGES)
    V.zero_division(zero_division)
    _check_beta(beta)
    if average == "binary":
        if labels is not None:
            lab = np.asarray(labels)
            if pos_label not in lab.tolist():
                raise ValueError(f"pos_label={pos_label!r} is not in labels={lab.tolist()}")
    d = _prepare(y_true, y_pred, sample_weight, threshold=threshold, ignore_index=ignore_index)
    xp = d.xp
    if average != "binary" and pos_label not in (None, 1):
        V.warn_if(xp.asarray(True), f"Note that pos_label (set to {pos_label!r}) is ignored "
                  f"when average != 'binary' (got {average!r}). You may use labels=[pos_label] "
                  "to specify a single positive class.", xp, UserWarning)
    c, invalid = _label_counts(d, labels=labels, num_classes=num_classes, average=average,
                               pos_label=pos_label)
    sw = None
    if average == "samples" and d.w is not None:
        sw = d.w
    final, support = _metrics_from_counts(
        c, beta=beta, zero_division=zero_division, average=average, sample_weight=sw,
        warn_for=warn_for, xp=xp, out=d.out, invalid=invalid, traced=d.traced)
    return final, support, xp


_COMMON_DOC = """
    Parameters
    ----------
    y_true, y_pred : arrays of shape (n,) or (n, L)
        1-D: binary or multiclass labels (numbers; eagerly also strings or
        other sortable values, encoded as scikit-learn does). 2-D: multilabel 0/1
        indicator matrices. With ``threshold``, ``y_pred`` holds scores.
    labels : list, optional
        Multiclass: the labels to report and their order; labels present in the
        data but not listed still count as false positives / negatives of the
        listed ones (scikit-learn's rule). Multilabel: column indices.
    pos_label : scalar, default 1
        The positive class for ``average='binary'``.
    average : {'binary', 'micro', 'macro', 'weighted', 'samples', None}
        ``'binary'`` (default, as scikit-learn): the ``pos_label`` class only; the
        data may hold at most two distinct labels. ``'micro'``: from counts
        summed over labels. ``'macro'``: unweighted mean over labels.
        ``'weighted'``: mean weighted by support (true count). ``'samples'``
        (multilabel): mean over samples, weighted by ``sample_weight``. None:
        one value per label.
    sample_weight : array of shape (n,), optional
        Non-negative weights.
    zero_division : "nan" (default), NaN, 0, 1 or "warn"
        Value of a ratio whose denominator is zero. ``"nan"``: NaN with an
        :class:`UndefinedMetricWarning`; NaN values are left out of the macro,
        weighted and samples averages (NaN if every value is NaN). ``NaN``: the
        same without a warning. ``0``/``1``: that value, no warning, included in
        averages. ``"warn"``: scikit-learn's default, 0 with a warning.
    num_classes : int, optional
        Labels are ``0..num_classes-1``. Needed under ``jax.jit`` (or ``labels``)
        for multiclass averages: the label set must be static.
    ignore_index : number, optional
        Samples (multilabel: entries) with ``y_true == ignore_index`` get weight
        zero; computed with masks, so it works under ``jit``.
    threshold : float, optional
        ``y_pred`` holds scores; predicted positive iff ``y_pred >= threshold``.

    Returns
    -------
    A 0-d float (a NumPy scalar on NumPy), or an array of shape (L,) for
    ``average=None``; float64, or float32 on JAX without x64 (or with float32
    weights). Counts are exact integers before the division.

    Raises
    ------
    ValueError
        Shapes that differ, empty input, NaN/inf labels or scores, negative
        weights, labels outside ``0..num_classes-1``, non-0/1 indicator entries,
        more than two labels with ``average='binary'``, a ``pos_label`` absent
        from binary data, ``average='samples'`` on 1-D input, unknown options.
        Under ``jit`` value checks cannot raise: such input gives NaN.
"""


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def precision_recall_fscore_support(y_true: ArrayLike, y_pred: ArrayLike, *, beta: float = 1.0,
                                    labels: ArrayLike = None, pos_label: Any = 1,
                                    average: str | None = None,
                                    warn_for: tuple[str, ...] = ("precision", "recall", "f-score"),
                                    sample_weight: ArrayLike = None,
                                    zero_division: str | float = "nan",
                                    num_classes: int | None = None, ignore_index: int | None = None,
                                    threshold: float | None = None
                                    ) -> tuple[float | Array, float | Array, float | Array, Array | None]:
    """Precision, recall, F-beta and support (scikit-learn compatible).

    Precision ``TP/(TP+FP)``, recall ``TP/(TP+FN)``, F-beta from counts
    ``(1+b^2)TP / ((1+b^2)TP + b^2 FN + FP)`` (undefined only when
    ``TP+FP+FN = 0``; an undefined precision does not make F undefined, scikit-learn
    #27189). ``beta=inf`` gives recall. Default ``average=None`` as
    scikit-learn.

    Returns ``(precision, recall, fbeta, support)``: arrays of shape (L,) for
    ``average=None`` (``support`` the weighted true count per label, in the
    count dtype), else 0-d floats and ``support`` None.
    """
    final, support, _ = _prf(y_true, y_pred, beta=beta, labels=labels, pos_label=pos_label,
                             average=average, warn_for=tuple(warn_for),
                             sample_weight=sample_weight, zero_division=zero_division,
                             num_classes=num_classes, ignore_index=ignore_index,
                             threshold=threshold)
    return final["precision"], final["recall"], final["f-score"], support


def _single(what, y_true, y_pred, beta=1.0, **kw):
    final, _, _ = _prf(y_true, y_pred, beta=beta, warn_for=(what,), **kw)
    return final[what]


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def precision_score(y_true: ArrayLike, y_pred: ArrayLike, *, labels: ArrayLike = None,
                    pos_label: Any = 1, average: str | None = "binary",
                    sample_weight: ArrayLike = None, zero_division: str | float = "nan",
                    num_classes: int | None = None, ignore_index: int | None = None,
                    threshold: float | None = None) -> float | Array:
    """Precision ``TP / (TP + FP)``: the share of predicted positives that are positive.

    Undefined (``zero_division``) for a label never predicted.
    Returns a 0-d float, or an array (L,) with ``average=None``.
    """
    return _single("precision", y_true, y_pred, labels=labels, pos_label=pos_label,
                   average=average, sample_weight=sample_weight, zero_division=zero_division,
                   num_classes=num_classes, ignore_index=ignore_index, threshold=threshold)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def recall_score(y_true: ArrayLike, y_pred: ArrayLike, *, labels: ArrayLike = None,
                 pos_label: Any = 1, average: str | None = "binary",
                 sample_weight: ArrayLike = None, zero_division: str | float = "nan",
                 num_classes: int | None = None, ignore_index: int | None = None,
                 threshold: float | None = None) -> float | Array:
    """Recall (sensitivity, TPR) ``TP / (TP + FN)``.

    Undefined (``zero_division``) for a label absent from ``y_true``.
    Returns a 0-d float, or an array (L,) with ``average=None``.
    """
    return _single("recall", y_true, y_pred, labels=labels, pos_label=pos_label,
                   average=average, sample_weight=sample_weight, zero_division=zero_division,
                   num_classes=num_classes, ignore_index=ignore_index, threshold=threshold)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def fbeta_score(y_true: ArrayLike, y_pred: ArrayLike, *, beta: float, labels: ArrayLike = None,
                pos_label: Any = 1, average: str | None = "binary", sample_weight: ArrayLike = None,
                zero_division: str | float = "nan", num_classes: int | None = None,
                ignore_index: int | None = None, threshold: float | None = None) -> float | Array:
    """F-beta from counts: ``(1+b^2) TP / ((1+b^2) TP + b^2 FN + FP)``.

    Equal to the weighted harmonic mean of precision and recall where both are
    defined; undefined (``zero_division``) only when ``TP + FP + FN = 0``.
    ``beta=0`` gives precision, ``beta=inf`` recall.
    """
    return _single("f-score", y_true, y_pred, beta=beta, labels=labels, pos_label=pos_label,
                   average=average, sample_weight=sample_weight, zero_division=zero_division,
                   num_classes=num_classes, ignore_index=ignore_index, threshold=threshold)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def f1_score(y_true: ArrayLike, y_pred: ArrayLike, *, labels: ArrayLike = None, pos_label: Any = 1,
             average: str | None = "binary", sample_weight: ArrayLike = None,
             zero_division: str | float = "nan", num_classes: int | None = None,
             ignore_index: int | None = None, threshold: float | None = None) -> float | Array:
    """F1 from counts: ``2 TP / (2 TP + FP + FN)`` (scikit-learn #27189, PR #27577).

    Undefined (``zero_division``) only when ``TP + FP + FN = 0``: a label never
    predicted but present has F1 = 0 even though its precision is undefined.
    """
    return _single("f-score", y_true, y_pred, beta=1.0, labels=labels, pos_label=pos_label,
                   average=average, sample_weight=sample_weight, zero_division=zero_division,
                   num_classes=num_classes, ignore_index=ignore_index, threshold=threshold)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def specificity_score(y_true: ArrayLike, y_pred: ArrayLike, *, labels: ArrayLike = None,
                      pos_label: Any = 1, average: str | None = "binary",
                      sample_weight: ArrayLike = None, zero_division: str | float = "nan",
                      num_classes: int | None = None, ignore_index: int | None = None,
                      threshold: float | None = None) -> float | Array:
    """Specificity (TNR) ``TN / (TN + FP)``: the recall of the negatives.

    Not in scikit-learn. Per label one-vs-rest; ``'micro'`` sums TN and FP over
    labels; ``'weighted'`` weights by support (the true count of each label, as
    the other metrics here and torchmetrics). Undefined (``zero_division``) for
    a label that every sample has (no negatives).
    """
    return _single("specificity", y_true, y_pred, labels=labels, pos_label=pos_label,
                   average=average, sample_weight=sample_weight, zero_division=zero_division,
                   num_classes=num_classes, ignore_index=ignore_index, threshold=threshold)


for _fn in (precision_recall_fscore_support, precision_score, recall_score, fbeta_score,
            f1_score, specificity_score):
    _fn.__doc__ = (_fn.__doc__ or "") + _COMMON_DOC + """
    Differences from scikit-learn: default ``zero_division="nan"`` (scikit-learn
    ``"warn"``: 0 with a warning, still available, with scikit-learn's
    warning text); text labels only eagerly (under ``jit`` labels are numbers);
    ``num_classes``, ``ignore_index`` and ``threshold`` are extra.
    """
del _fn


# --------------------------------------------------------------------------
# confusion matrices
# --------------------------------------------------------------------------

def _sentinel(cm, invalid, xp):
    """Invalid input under jit: NaN for float counts, -1 for integer counts."""
    if xp.isdtype(cm.dtype, "real floating"):
        return B.nan_if(invalid, cm, xp)
    return xp.where(invalid, xp.asarray(-1, dtype=cm.dtype), cm)


def _full_confusion(d: _Pair, lab: Labels):
    xp = d.xp
    ti, bad_t = encode(d.yt, lab, xp, "y_true", d.traced)
    pi, bad_p = encode(d.yp, lab, xp, "y_pred", d.traced)
    ww = _sample_weights(d)
    L1 = lab.full.shape[0] + 1
    flat = B.segment_sum(ww, ti * L1 + pi, L1 * L1, xp)
    cm = xp.reshape(flat, (L1, L1))
    sel = xp.asarray(lab.sel, dtype=B.acc_int(xp))
    cm = xp.take(xp.take(cm, sel, axis=0), sel, axis=1)
    return cm, d.invalid | bad_t | bad_p


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def confusion_matrix(y_true: ArrayLike, y_pred: ArrayLike, *, labels: ArrayLike = None,
                     sample_weight: ArrayLike = None, normalize: str | None = None,
                     num_classes: int | None = None, ignore_index: int | None = None,
                     threshold: float | None = None) -> Array:
    """Confusion matrix ``C[i, j]``: weight of samples with true label i predicted j.

    Rows are true labels, columns predictions, both in the order of ``labels``
    (default: the sorted labels present in either array, or ``0..num_classes-1``).
    Samples whose true or predicted label is not in ``labels`` are left out
    (scikit-learn's rule).

    Parameters
    ----------
    y_true, y_pred : arrays of shape (n,)
        Labels: numbers, or eagerly any sortable values (strings too). With
        ``threshold``, ``y_pred`` holds scores and is binarised as
        ``y_pred >= threshold`` (labels 0/1).
    labels, num_classes : see :func:`precision_recall_fscore_support`; one of
        them is required under ``jit``. Eagerly, at least one of ``labels``
        must occur in ``y_true`` (``ValueError`` otherwise, as scikit-learn);
        under ``jit`` such a call returns the all-zero matrix.
    sample_weight : array (n,), optional
    normalize : {None, 'true', 'pred', 'all'}
        Divide by row sums, column sums or the total.
    ignore_index, threshold : as :func:`precision_recall_fscore_support`.

    Returns
    -------
    Array (L, L). Integer counts (int64, int32 on JAX without x64) without
    weights or with integer weights, else float; float with ``normalize``.
    A zero row (``'true'``), column (``'pred'``) or total gives NaN entries with
    an :class:`UndefinedMetricWarning`; scikit-learn gives 0 there.

    Raises
    ------
    ValueError
        As :func:`precision_recall_fscore_support`; multilabel (2-D) input (use
        :func:`multilabel_confusion_matrix`). Under ``jit`` invalid input gives
        NaN entries (float) or -1 entries (integer counts cannot hold NaN).
    """
    normalize = V.choice(normalize, "normalize", (None, "true", "pred", "all"))
    d = _prepare(y_true, y_pred, sample_weight, threshold=threshold, ignore_index=ignore_index)
    xp = d.xp
    if d.yt.ndim != 1:
        raise ValueError("confusion_matrix takes 1-D labels; for 2-D indicator matrices use "
                         "multilabel_confusion_matrix")
    lab = _resolve_labels(d, labels, num_classes)
    cm, invalid = _full_confusion(d, lab)
    if labels is None and num_classes is None and lab.sel.shape[0] == 1:
        V.warn_if(xp.asarray(True), "A single label was found in 'y_true' and 'y_pred'. For the "
                  "confusion matrix to have the correct shape, use the 'labels' parameter to "
                  "pass all known labels.", xp, UserWarning)
    if labels is not None:
        # scikit-learn's rule; under jit the (all-zero) matrix is returned as it is
        V.fail_if(~_any_label_in(d, lab), "At least one label specified must be in y_true",
                  f"(labels={np.asarray(labels).tolist()})", xp)
    if normalize is None:
        return _sentinel(cm, invalid, xp)
    cmf = xp.astype(cm, d.out)
    if normalize == "true":
        den = xp.sum(cmf, axis=1, keepdims=True)
    elif normalize == "pred":
        den = xp.sum(cmf, axis=0, keepdims=True)
    else:
        den = xp.sum(cmf)
    undefined = den == 0
    res = cmf / xp.where(undefined, xp.asarray(1.0, dtype=cmf.dtype), den)
    res = B.nan_if(undefined, res, xp)
    part = {"true": "row", "pred": "column", "all": "total"}[normalize]
    V.warn_if(xp.any(undefined) & ~invalid, f"confusion_matrix(normalize={normalize!r}): a "
              f"zero {part} has no normalised value; set to NaN", xp)
    return B.nan_if(invalid, res, xp)


def _any_label_in(d: _Pair, lab: Labels):
    """0-d bool: some (kept) element of y_true is one of the labels, whatever its weight."""
    xp = d.xp
    ti, _ = encode(d.yt, Labels(lab.full, lab.sel, True), xp, "y_true", d.traced)
    hit = ti < lab.full.shape[0]
    if d.keep is not None:
        hit = hit & (d.keep != 0)
    return xp.any(hit)


@compiled  # samplewise output has a row per sample: no bucketing
def multilabel_confusion_matrix(y_true: ArrayLike, y_pred: ArrayLike, *,
                                sample_weight: ArrayLike = None, labels: ArrayLike = None,
                                samplewise: bool = False, num_classes: int | None = None,
                                ignore_index: int | None = None,
                                threshold: float | None = None) -> Array:
    """One-vs-rest 2x2 matrices ``[[TN, FP], [FN, TP]]`` per label (or per sample).

    Multiclass (1-D) input: one matrix per label in ``labels``; multilabel (2-D)
    input: per column (``labels`` are column indices), or per sample with
    ``samplewise=True`` (multilabel only; unweighted counts scaled by the
    sample's weight, as scikit-learn). Returns an array (L, 2, 2) of counts,
    integer without weights or with integer weights.

    Errors, ``jit`` behaviour and options as :func:`confusion_matrix`.
    """
    d = _prepare(y_true, y_pred, sample_weight, threshold=threshold, ignore_index=ignore_index)
    xp = d.xp
    if samplewise:
        if d.yt.ndim != 2:
            raise ValueError("Samplewise metrics are not available outside of multilabel "
                             "classification: samplewise=True needs 2-D indicator input")
        c, invalid = _label_counts(d, labels=labels, num_classes=num_classes,
                                   average="samples", pos_label=None)
        if d.w is not None:
            ww = xp.astype(d.w, d.cdt)
            c = _Counts(c.tp * ww, c.pred * ww, c.true * ww, c.total * ww, None)
    else:
        c, invalid = _label_counts(d, labels=labels, num_classes=num_classes,
                                   average=None, pos_label=None)
    tp, pred, true, total = c.tp, c.pred, c.true, c.total
    fp = pred - tp
    fn = true - tp
    tn = total - pred - fn
    mcm = xp.stack([xp.stack([tn, fp], axis=-1), xp.stack([fn, tp], axis=-1)], axis=-2)
    return _sentinel(mcm, invalid, xp)


# --------------------------------------------------------------------------
# accuracy, balanced accuracy, MCC, kappa
# --------------------------------------------------------------------------

def _scalar_result(value, invalid, xp, out):
    return B.finalize(B.nan_if(invalid, xp.astype(value, out), xp), xp)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def accuracy_score(y_true: ArrayLike, y_pred: ArrayLike, *, normalize: bool = True,
                   sample_weight: ArrayLike = None, ignore_index: int | None = None,
                   threshold: float | None = None) -> float | Array:
    """Share (or weight) of samples whose prediction equals the truth.

    Multilabel (2-D) input: subset accuracy, a sample counts only if its whole
    row matches (scikit-learn). Labels are compared as values, so no label set
    is needed, also under ``jit``.

    Parameters
    ----------
    normalize : bool, default True
        False returns the (weighted) number of correct samples: an integer
        without weights or with integer weights.
    sample_weight, ignore_index, threshold :
        As :func:`precision_recall_fscore_support`; for 2-D input
        ``ignore_index`` masks entries (a row matches if its kept entries match).

    Returns a 0-d float: NaN with an :class:`UndefinedMetricWarning` when the
    total weight is zero (all samples ignored or zero weights); scikit-learn
    raises or returns 0 there.

    Raises ``ValueError`` as :func:`precision_recall_fscore_support`; under ``jit``
    invalid input gives NaN.
    """
    d = _prepare(y_true, y_pred, sample_weight, threshold=threshold, ignore_index=ignore_index)
    xp = d.xp
    eq = d.yt == d.yp
    ww = xp.ones(d.yt.shape[0], dtype=d.cdt) if d.w is None else xp.astype(d.w, d.cdt)
    if d.yt.ndim == 2:
        if d.keep is not None:
            # an entry that is ignored always matches; a row with every entry
            # ignored carries no information and gets weight 0
            eq = eq | (d.keep == 0)
            ww = ww * xp.astype(xp.any(d.keep != 0, axis=1), d.cdt)
        eq = xp.all(eq, axis=1)
    elif d.keep is not None:
        ww = ww * d.keep
    correct = xp.sum(ww * xp.astype(eq, d.cdt))
    if not normalize:
        if xp.isdtype(correct.dtype, "integral"):
            return B.finalize(xp.where(d.invalid, xp.asarray(-1, dtype=correct.dtype), correct),
                              xp)
        return _scalar_result(correct, d.invalid, xp, d.out)
    total = _f(xp.sum(ww), xp)
    undefined = total == 0
    value = _f(correct, xp) / xp.where(undefined, xp.asarray(1.0, dtype=total.dtype), total)
    value = B.nan_if(undefined, value, xp)
    V.warn_if(undefined, "accuracy is undefined when the total sample weight is zero; "
              "returning NaN", xp)
    return _scalar_result(value, d.invalid, xp, d.out)


def balanced_accuracy_from_counts(tp, true, adjusted, xp):
    """Balanced accuracy from per-class true positives and true totals (floats).

    The mean recall over classes with positive true weight; ``adjusted``
    rescales chance to 0. Returns ``(score, undefined, K)``: NaN (and
    ``undefined`` True) when no class is present, or one with ``adjusted``.
    The formula of :func:`balanced_accuracy_score` and the streaming state.
    """
    present = true > 0
    K = xp.sum(xp.astype(present, tp.dtype))
    rec = tp / xp.where(present, true, xp.asarray(1.0, dtype=true.dtype))
    one = xp.asarray(1.0, dtype=tp.dtype)
    score = xp.sum(xp.where(present, rec, xp.asarray(0.0, dtype=tp.dtype))) / \
        xp.where(K > 0, K, one)
    undefined = K == 0
    if adjusted:
        chance = 1 / xp.where(K > 0, K, one)
        undefined = undefined | (K == 1)
        score = (score - chance) / xp.where(K > 1, 1 - chance, one)
    return B.nan_if(undefined, score, xp), undefined, K


def mcc_from_counts(tp, pred, true, s, xp):
    """Matthews correlation (Gorodkin's R_K) from per-class counts (floats) and the total.

    The formula and degenerate-marginal rules of :func:`matthews_corrcoef`
    (also the streaming state's): 0 when exactly one side is constant, NaN
    (``undefined`` True) when both are. Returns ``(value, undefined)``.
    """
    c = xp.sum(tp)
    cov_tp = c * s - xp.sum(true * pred)
    cov_pp = s * s - xp.sum(pred * pred)
    cov_tt = s * s - xp.sum(true * true)
    # constancy from the number of classes with weight, not from float
    # cancellation of s^2 - p.p
    const_p = xp.sum(xp.astype(pred > 0, B.acc_int(xp))) <= 1
    const_t = xp.sum(xp.astype(true > 0, B.acc_int(xp))) <= 1
    one = xp.asarray(1.0, dtype=s.dtype)
    den = xp.sqrt(xp.where(const_p | const_t, one, cov_pp * cov_tt))
    value = xp.where(const_p | const_t, xp.asarray(0.0, dtype=s.dtype), cov_tp / den)
    undefined = const_p & const_t
    return B.nan_if(undefined, value, xp), undefined


def kappa_from_confusion(O, weights, replace_undefined_by, xp):
    """Cohen's kappa of a float confusion matrix ``O`` (rows rater 1, columns rater 2).

    The formula of :func:`cohen_kappa_score` (also the streaming state's).
    Returns ``(value, empty, no_expected)``: ``replace_undefined_by`` where no
    weight is left (``empty``) or the expected disagreement is zero.
    """
    L = O.shape[0]
    r = xp.sum(O, axis=1)
    c = xp.sum(O, axis=0)
    s = xp.sum(r)
    one = xp.asarray(1.0, dtype=O.dtype)
    E = r[:, None] * c[None, :] / xp.where(s > 0, s, one)
    i = xp.astype(xp.arange(L, device=B.device(O)), O.dtype)
    diff = i[:, None] - i[None, :]
    if weights is None:
        W = xp.astype(diff != 0, O.dtype)
    elif weights == "linear":
        W = xp.abs(diff)
    else:
        W = diff * diff
    num = xp.sum(W * O)
    den = xp.sum(W * E)
    undefined = (s == 0) | (den == 0)
    value = 1 - num / xp.where(undefined, one, den)
    value = xp.where(undefined, xp.asarray(float(replace_undefined_by), dtype=O.dtype), value)
    return value, s == 0, (s > 0) & (den == 0)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def balanced_accuracy_score(y_true: ArrayLike, y_pred: ArrayLike, *,
                            sample_weight: ArrayLike = None, adjusted: bool = False,
                            num_classes: int | None = None, labels: ArrayLike = None,
                            ignore_index: int | None = None,
                            threshold: float | None = None) -> float | Array:
    """Mean recall over the classes present in ``y_true`` (Brodersen et al. 2010).

    Classes that occur only in ``y_pred`` (zero true weight) are left out of the
    mean, as scikit-learn does (it also warns; calipers states it here).
    ``adjusted=True`` rescales so that chance is 0 and perfect is 1:
    ``(score - 1/K) / (1 - 1/K)`` with K the number of classes present.

    ``num_classes`` / ``labels`` fix the label set (required under ``jit``);
    ``labels`` restricts the mean to the listed classes (not in scikit-learn).

    Returns a 0-d float: NaN with an :class:`UndefinedMetricWarning` when no class
    has positive true weight, or with ``adjusted=True`` when only one class is
    present (scikit-learn returns -inf/NaN without a clear warning there).
    Multilabel input raises ``ValueError``. Other errors and ``jit`` behaviour as
    :func:`precision_recall_fscore_support`.
    """
    d = _prepare(y_true, y_pred, sample_weight, threshold=threshold, ignore_index=ignore_index)
    xp = d.xp
    if d.yt.ndim != 1:
        raise ValueError("balanced_accuracy_score does not support multilabel (2-D) input")
    lab = _resolve_labels(d, labels, num_classes)
    (_, _, _, tp, pred, true), invalid = _multiclass_label_counts(d, lab)
    sel = xp.asarray(lab.sel, dtype=B.acc_int(xp))
    tp, true = _f(xp.take(tp, sel), xp), _f(xp.take(true, sel), xp)
    # scikit-learn's warning (its words); such classes are left out of the mean
    V.warn_if(xp.any((_f(xp.take(pred, sel), xp) > 0) & (true == 0)) & ~invalid,
              "y_pred contains classes not in y_true", xp, UserWarning)
    score, undefined, K = balanced_accuracy_from_counts(tp, true, adjusted, xp)
    V.warn_if(undefined & ~invalid & (K == 0), "balanced accuracy is undefined: no class has "
              "positive true weight; returning NaN", xp)
    V.warn_if(undefined & ~invalid & (K != 0), "balanced accuracy is undefined: adjusted=True "
              "needs at least two classes in y_true; returning NaN", xp)
    return _scalar_result(score, invalid, xp, d.out)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def matthews_corrcoef(y_true: ArrayLike, y_pred: ArrayLike, *, sample_weight: ArrayLike = None,
                      num_classes: int | None = None, ignore_index: int | None = None,
                      threshold: float | None = None) -> float | Array:
    """Matthews correlation coefficient, binary and multiclass (Gorodkin 2004 R_K).

    From the confusion matrix C with ``c = trace(C)``, ``s`` = total weight,
    ``t_k``, ``p_k`` the true and predicted totals of class k::

        MCC = (c s - t.p) / sqrt((s^2 - p.p) (s^2 - t.t))

    Degenerate marginals (torchmetrics #779, scikit-learn #25258):

    * exactly one of ``y_true``, ``y_pred`` puts all its weight on one class:
      the denominator is 0 and MCC is 0, its limit (any small perturbation of
      the constant side gives a value of order sqrt(eps)). scikit-learn also
      returns 0; torchmetrics returned NaN before its PR #781.
    * both are constant (e.g. ``y_true = y_pred = [1, 1, 1, 1]``), or the total
      weight is 0: MCC has no limit (perturbations reach any value in [-1, 1]),
      so calipers returns NaN with an :class:`UndefinedMetricWarning`.
      **Differs from scikit-learn**, which returns 0.0 (torchmetrics returns 1
      when they agree).

    Multilabel input raises ``ValueError`` (as scikit-learn). Under ``jit``
    ``num_classes`` is required (2 for binary labels 0/1). Errors otherwise as
    :func:`precision_recall_fscore_support`; under ``jit`` invalid input gives NaN.
    """
    d = _prepare(y_true, y_pred, sample_weight, threshold=threshold, ignore_index=ignore_index)
    xp = d.xp
    if d.yt.ndim != 1:
        raise ValueError("matthews_corrcoef does not support multilabel (2-D) input")
    lab = _resolve_labels(d, None, num_classes)
    (_, _, ww, tp, pred, true), invalid = _multiclass_label_counts(d, lab)
    tp, pred, true = _f(tp, xp), _f(pred, xp), _f(true, xp)
    value, undefined = mcc_from_counts(tp, pred, true, _f(xp.sum(ww), xp), xp)
    V.warn_if(undefined & ~invalid, "MCC is undefined when both y_true and y_pred are constant "
              "(or the total weight is zero); returning NaN", xp)
    return _scalar_result(value, invalid, xp, d.out)


@compiled(rows=("y1", "y2"), weight="sample_weight")
def cohen_kappa_score(y1: ArrayLike, y2: ArrayLike, *, labels: ArrayLike = None,
                      weights: str | None = None, sample_weight: ArrayLike = None,
                      replace_undefined_by: float = math.nan,
                      num_classes: int | None = None) -> float | Array:
    """Cohen's kappa between two raters, unweighted or linear/quadratic weighted.

    ``kappa = 1 - sum(W * O) / sum(W * E)`` with O the confusion matrix of
    ``y1`` against ``y2``, E the outer product of its marginals over the total,
    and disagreement weights ``W_ij`` = 1 off the diagonal (None), ``|i-j|``
    (``'linear'``) or ``(i-j)^2`` (``'quadratic'``), i and j being the positions
    in ``labels`` (default: sorted labels, or ``0..num_classes-1``) (Cohen 1960,
    1968; scikit-learn's definition). Samples with a label outside ``labels``
    are left out.

    Returns a 0-d float. Undefined when no sample is left or the expected
    disagreement is zero (e.g. both raters constant and equal): returns
    ``replace_undefined_by`` (default NaN) with an :class:`UndefinedMetricWarning`,
    as scikit-learn.

    Raises ``ValueError`` for an unknown ``weights``, multilabel input and the
    input errors of :func:`confusion_matrix`; under ``jit`` (``labels`` or
    ``num_classes`` required) invalid input gives NaN.
    """
    weights = V.choice(weights, "weights", (None, "linear", "quadratic"))
    d = _prepare(y1, y2, sample_weight, pred_name="y2", true_name="y1")
    xp = d.xp
    if d.yt.ndim != 1:
        raise ValueError("cohen_kappa_score takes 1-D labels")
    lab = _resolve_labels(d, labels, num_classes)
    if labels is not None:
        # scikit-learn's rule and words (confusion_matrix's rule, for y1)
        V.fail_if(~_any_label_in(d, lab), "At least one label in `labels` must be present in "
                  "`y1`", f"(labels={np.asarray(labels).tolist()})", xp)
    cm, invalid = _full_confusion(d, lab)
    value, empty, no_expected = kappa_from_confusion(_f(cm, xp), weights, replace_undefined_by,
                                                     xp)
    # no sample left (none with both labels in `labels`): scikit-learn's words
    V.warn_if(empty & ~invalid, "`y2` contains no labels that are present in both `y1` and "
              "`labels`: no sample is left, Cohen's kappa is undefined; returning "
              f"{replace_undefined_by}", xp)
    # zero expected disagreement: both raters use one and the same label (scikit-learn's words)
    V.warn_if(no_expected & ~invalid, "`y1`, `y2` and `labels` have only one label in "
              "common: zero expected disagreement, Cohen's kappa is undefined; returning "
              f"{replace_undefined_by}", xp)
    return _scalar_result(value, invalid, xp, d.out)


# --------------------------------------------------------------------------
# top-k accuracy
# --------------------------------------------------------------------------

def check_label_scores(yt, s, w, xp, traced):
    """Shared checks of (labels, per-class scores, weights): ``(yt as ints, invalid flag)``.

    Used by top-k accuracy and the multiclass AUCs. Raises on concrete bad
    values; under ``jit`` returns the flag that turns results into NaN.
    """
    V.check_same_length(y_true=yt, y_score=s, sample_weight=w)
    B.check_nonempty("y_true", yt)
    B.check_numeric("y_true", yt, xp)
    V.check_real_values("y_score", s, xp, "numeric scores")
    invalid = V.check_finite("y_true", yt, xp) | V.check_finite("y_score", s, xp)
    if w is not None:
        V.check_1d("sample_weight", w)
        invalid = invalid | V.check_weights("sample_weight", w, xp)
    if xp.isdtype(yt.dtype, "bool"):
        yt = xp.astype(yt, B.acc_int(xp))
    return yt, invalid


def top_k_hits(ti, s, k, xp):
    """(n,) bool: the true class index ``ti`` is among the ``k`` highest of ``s`` (n, C)."""
    return top_k_rank(ti, s, xp) < k


def top_k_rank(ti, s, xp):
    """(n,) integer rank (0 = first) of the true class index ``ti`` among the scores (n, C).

    The tie rule of :func:`top_k_accuracy_score` (scikit-learn's): among equal
    scores the higher column index ranks first, so the rank of ``j`` is
    ``#{i: s_i > s_j} + #{i > j: s_i == s_j}`` and ``j`` is a top-k hit iff
    it is below ``k``. Shared with the streaming top-k state.
    """
    C = s.shape[1]
    ti_c = xp.reshape(ti, (-1, 1))
    ti_safe = xp.clip(ti_c, 0, C - 1)
    s_true = xp.take_along_axis(s, ti_safe, axis=1)
    cols = xp.reshape(xp.arange(C, dtype=ti.dtype, device=B.device(s)), (1, C))
    ahead = (s > s_true) | ((s == s_true) & (cols > ti_c))
    return xp.sum(xp.astype(ahead, B.acc_int(xp)), axis=1)


@compiled(rows=("y_true", "y_score"), weight="sample_weight")
def top_k_accuracy_score(y_true: ArrayLike, y_score: ArrayLike, *, k: int = 2,
                         normalize: bool = True, sample_weight: ArrayLike = None,
                         labels: ArrayLike = None) -> float | Array:
    """Share of samples whose true label is among the k highest-scored labels.

    Tie rule (scikit-learn's, scikit-learn PR #16625): labels are ranked by score,
    and among equal scores the label with the **higher column index ranks
    first**. The true label ``j`` is a hit iff
    ``#{i: s_i > s_j} + #{i > j: s_i == s_j} < k``. This breaks ties pessimistically
    for low-index labels; a tie-inclusive rule (``tf.nn.in_top_k``: every tied
    label counts, so constant scores give 100%) is *not* used.

    Parameters
    ----------
    y_true : array (n,)
        Labels; column j of ``y_score`` belongs to ``labels[j]``.
    y_score : array (n, C), or (n,) for binary
        Scores per label. 1-D: the score of the positive (greater) label;
        with ``k=1`` the prediction is positive iff ``y_score >= 0.5`` when all
        scores lie in [0, 1] and ``y_score >= 0`` otherwise (scikit-learn uses
        ``>``, differing only for a score exactly at the threshold); ``k >= 2``
        is always a hit.
    k : int >= 1
        ``k >= C`` gives 1 (every label is in the top k) with an
        :class:`UndefinedMetricWarning`, as scikit-learn warns.
    labels : list, optional
        Label of each column, sorted (scikit-learn's rule: the columns follow
        the sorted labels, as ``predict_proba`` orders classes; unsorted
        ``labels`` raise). Default, eagerly: the sorted distinct values of
        ``y_true`` (scikit-learn's rule), which must be C of them (otherwise
        ``labels`` is required); under ``jit``: ``0..C-1``. String labels
        are accepted eagerly.
    normalize : bool
        False gives the weighted number of hits.

    Returns a 0-d float; NaN with an :class:`UndefinedMetricWarning` when the
    total weight is zero.

    Raises ``ValueError`` for a ``y_true`` label not in ``labels``, unsorted
    ``labels``, ``k`` not a positive integer, NaN/inf scores, shape errors;
    under ``jit`` invalid input gives NaN.
    """
    k = V.positive_int(k, "k")
    y_true = V.column_or_1d(y_true)  # an (n, 1) column is 1-D (scikit-learn's column_or_1d)
    C = 2 if np.ndim(y_score) == 1 else (np.shape(y_score)[1] if np.ndim(y_score) == 2 else 0)
    if V.is_text(y_true):  # eager only: encoded against labels (or y_true's sorted classes)
        if labels is not None:
            V.check_ordered_labels(V.host_labels(labels, "labels"))
        classes, (y_true,) = V.encode_labels(y_true, labels=labels)
        labels = np.arange(len(classes))
    xp, (yt, s, w) = B.as_arrays(y_true, y_score, sample_weight,
                                 names=("y_true", "y_score", "sample_weight"))
    traced = B.is_traced(yt, s, w)
    V.check_1d("y_true", yt)
    if s.ndim not in (1, 2):
        raise ValueError(f"y_score must be 1-D (binary) or 2-D (n, C), got shape {tuple(s.shape)}")
    yt, invalid = check_label_scores(yt, s, w, xp, traced)
    # scikit-learn's rules, in its words where its tests match them
    if labels is not None:
        lab = V.check_ordered_labels(static_labels(labels))
        if lab.shape[0] != C:
            raise ValueError(f"Number of given labels ({lab.shape[0]}) not equal to the number "
                             f"of classes in 'y_score' ({C}).")
    elif traced:
        V.eager_only()  # the compile policy hands this call to the eager rule below
        lab = np.arange(C)  # under jit the classes are the columns 0..C-1
    else:
        # the classes are the sorted distinct values of y_true
        yt_host = B.to_numpy(yt)
        frac = yt_host != np.round(yt_host)
        if frac.any():
            i = int(np.argmax(frac))
            raise ValueError("y type must be 'binary' or 'multiclass', got 'continuous': "
                             f"y_true element {i} is {yt_host[i].item()!r}")
        lab = np.unique(yt_host)
        if lab.shape[0] != C:
            if s.ndim == 1 and lab.shape[0] > 2:
                raise ValueError(V.multiclass_scores_message(s.shape, lab.shape[0]))
            binary = ("`y_true` is binary while y_score is 2d with "
                      f"{C} classes. If `y_true` does not contain all the labels, `labels` "
                      "must be provided. " if lab.shape[0] == 2 and s.ndim == 2 else "")
            raise ValueError(f"{binary}Number of classes in 'y_true' ({lab.shape[0]}) not equal "
                             f"to the number of classes in 'y_score' ({C}): y_true has "
                             f"{lab.shape[0]} distinct labels {lab.tolist()[:10]} but y_score "
                             f"has {C} columns; pass labels= (one per column)")
    ti, bad = encode(yt, Labels(lab, np.arange(C), False), xp, "y_true", traced)
    invalid = invalid | bad
    if k >= C:
        V.warn_if(xp.asarray(True), f"'k' ({k}) greater than or equal to 'n_classes' ({C}) "
                  "will result in a perfect score and is therefore meaningless.", xp)
    if s.ndim == 1:
        if k >= 2:
            hit = xp.ones(yt.shape[0], dtype=xp.bool)
        else:
            sf = xp.astype(s, B.acc_float(xp)) if xp.isdtype(s.dtype, "integral") else s
            prob = xp.all((sf >= 0) & (sf <= 1))
            thr = xp.where(prob, xp.asarray(0.5, dtype=sf.dtype), xp.asarray(0.0, dtype=sf.dtype))
            pred = xp.astype(sf >= thr, B.acc_int(xp))
            hit = pred == ti
    else:
        hit = top_k_hits(ti, s, k, xp)
    cdt = R.count_dtype(xp, w)
    ww = xp.ones(yt.shape[0], dtype=cdt) if w is None else xp.astype(w, cdt)
    hits = xp.sum(ww * xp.astype(hit, cdt))
    out = B.out_float(xp, w)
    if not normalize:
        if xp.isdtype(hits.dtype, "integral"):
            return B.finalize(xp.where(invalid, xp.asarray(-1, dtype=hits.dtype), hits), xp)
        return _scalar_result(hits, invalid, xp, out)
    total = _f(xp.sum(ww), xp)
    undefined = total == 0
    value = B.nan_if(undefined, _f(hits, xp) / xp.where(undefined, 1.0, total), xp)
    V.warn_if(undefined, "top-k accuracy is undefined when the total sample weight is zero; "
              "returning NaN", xp)
    return _scalar_result(value, invalid, xp, out)
