"""ROC AUC and average precision of 2-D input: multilabel, multiclass and (n, 1) scores.

:func:`calipers.roc_auc_score` and :func:`calipers.average_precision_score`
hand every call with a 2-D ``y_true`` or ``y_score`` here, as scikit-learn's
functions accept them:

* a 2-D 0/1 indicator ``y_true`` (multilabel) with scores of the same shape:
  one binary value per label column, averaged with ``average`` in
  {'macro', 'weighted', 'micro', 'samples', None} (scikit-learn's
  ``_average_binary_score``);
* a 1-D ``y_true`` with scores of shape (n, 1): the column is the score of a
  binary problem;
* a 1-D multiclass ``y_true`` with (n, C) scores: ROC AUC goes to
  :func:`calipers.multiclass_roc_auc_score` (``multi_class`` required), average
  precision binarises ``y_true`` one-vs-rest (classes: the sorted distinct
  labels eagerly, ``0..C-1`` under ``jit``) and averages per column.

Every per-column (or per-sample) value is the binary kernel of
:mod:`calipers._kernels.rankstats` (:func:`~calipers._kernels.rankstats.roc_auc`,
:func:`~calipers._kernels.rankstats.average_precision`): the same Mann-Whitney count and
step sum as the 1-D functions, so ties and weights follow their rules.

An undefined column (ROC AUC: one class in it; AP: no positive) is NaN, left
out of the macro / weighted / samples average and reported with one
:class:`UndefinedMetricWarning` (scikit-learn warns and its macro average
becomes NaN for ROC AUC; for AP it counts such a column as 0).
"""

from __future__ import annotations

import numpy as np

from .._core import xp as B
from .._kernels import rankstats as R
from .._core import validation as V
from .._classification import nanaverage

# internal layer: the public entry points are roc_auc_score / average_precision_score

_AVERAGES = ("micro", "macro", "weighted", "samples", None)
# (kernel, name, reason, scikit-learn's words opening the warning)
_KERNELS = {"roc_auc": (R.roc_auc, "ROC AUC", "only one class", ""),
            "average_precision": (R.average_precision, "average precision", "no positive",
                                  "No positive class found in y_true: ")}


def _ndim(x) -> int:
    return int(x.ndim) if hasattr(x, "ndim") else int(np.ndim(x))


def roc_auc_2d(y_true, y_score, *, sample_weight, max_fpr, pos_label, multi_class, average,
               labels):
    """``(result, None)`` for 2-D input, or ``(None, y_score_1d)`` for (n, 1) binary scores."""
    from .multiclass import multiclass_roc_auc_score

    if _ndim(y_true) == 2 and _ndim(y_score) != 2:
        return None, y_score  # the binary path reports the shapes
    if _ndim(y_true) == 2:
        if max_fpr is not None:
            raise ValueError("max_fpr (partial AUC) is not supported for multilabel y_true "
                             "in calipers; compute it per column with roc_auc_score")
        _check_indicator_values(y_true)
        _fixed_pos_label(pos_label, "multilabel-indicator")
        return _indicator_score("roc_auc", y_true, y_score, sample_weight, average), None
    if _ndim(y_score) == 2 and np.shape(y_score)[1] == 1:
        return None, _column(y_score)
    # a 2-D y_score with a 1-D y_true: multiclass (scikit-learn's checks and wording)
    V.choice(multi_class, "multi_class", ("ovr", "ovo"),
             message="y_score is 2-D (multiclass): pass multi_class='ovr' or 'ovo' "
                     f"(multi_class must be in ('ovo', 'ovr')), got multi_class={multi_class!r}")
    if max_fpr is not None and max_fpr != 1:
        raise ValueError("Partial AUC computation not available in multiclass setting, "
                         f"'max_fpr' must be set to `None`, received `max_fpr={max_fpr}` "
                         "instead")
    if pos_label is not None:
        raise ValueError("pos_label applies to binary y_score (1-D) only")
    return multiclass_roc_auc_score(y_true, y_score, multi_class=multi_class, average=average,
                                    sample_weight=sample_weight, labels=labels), None


def average_precision_2d(y_true, y_score, *, sample_weight, pos_label, average):
    """As :func:`roc_auc_2d` for average precision (no ``multi_class``: columns one-vs-rest)."""
    if _ndim(y_true) == 2 and _ndim(y_score) != 2:
        return None, y_score  # the binary path reports the shapes
    if _ndim(y_true) == 2:
        _check_indicator_values(y_true)
        _fixed_pos_label(pos_label, "multilabel-indicator")
        return _indicator_score("average_precision", y_true, y_score, sample_weight,
                                average), None
    if _ndim(y_score) == 2 and np.shape(y_score)[1] == 1:
        return None, _column(y_score)
    _fixed_pos_label(pos_label, "multiclass")
    return _indicator_score("average_precision", _one_hot(y_true, y_score), y_score,
                            sample_weight, average), None


def check_pos_label_present(y_true, pos_label):
    """Eagerly, a ``pos_label`` absent from two-class ``y_true`` raises (scikit-learn's AP rule).

    With both classes present and neither of them ``pos_label``, average
    precision would silently be that of an empty positive class.
    """
    if pos_label is None or B.is_traced(y_true):
        return
    y = np.asarray(B.to_numpy(y_true) if B.is_array(y_true) else y_true)
    if y.ndim != 1:
        return
    present = np.unique(y)
    if present.shape[0] == 2 and pos_label not in present.tolist():
        raise ValueError(f"pos_label={pos_label} is not a valid label. It should be one of "
                         f"{present}")


def _check_indicator_values(y_true):
    """Eagerly, a 2-D ``y_true`` with values outside {0, 1} is refused before anything else
    (scikit-learn reports the target type, multiclass-multioutput, first); traced input is
    flagged later by the indicator checks."""
    if B.is_traced(y_true):
        return
    y = V.densify(y_true)
    y = np.asarray(B.to_numpy(y) if B.is_array(y) else y)
    if y.dtype.kind in "biuf":
        V.check_indicator("y_true", y, np, ranking=True)


def _column(y_score):
    if B.is_array(y_score):
        return y_score[:, 0]
    return np.asarray(y_score)[:, 0]


def _fixed_pos_label(pos_label, kind):
    if pos_label is not None and not (not isinstance(pos_label, str) and pos_label == 1):
        raise ValueError(f"Parameter pos_label is fixed to 1 for {kind} y_true. Do not set "
                         f"pos_label or set pos_label to 1 (got pos_label={pos_label!r}).")


def _one_hot(y_true, y_score):
    """One-vs-rest indicator of a 1-D multiclass ``y_true`` against the score columns."""
    C = np.shape(y_score)[1]
    if V.is_text(y_true):
        _, (y_true,) = V.encode_labels(y_true)
        classes = np.arange(C)
        if int(y_true.max()) + 1 != C:
            raise ValueError(f"y_true has {int(y_true.max()) + 1} classes but y_score has {C} "
                             "columns (one per class, in sorted label order)")
    xp, (yt, s) = B.as_arrays(y_true, y_score, names=("y_true", "y_score"))
    V.check_1d("y_true", yt)
    B.check_numeric("y_true", yt, xp)
    if B.is_traced(yt):
        V.eager_only()  # inferred classes need concrete labels: the compile policy runs eagerly
        classes = np.arange(C)  # under the user's jit: the columns are the classes 0..C-1
    else:
        classes = np.unique(B.to_numpy(yt))
        if classes.shape[0] != C:
            raise ValueError(f"y_true has {classes.shape[0]} classes {classes.tolist()[:10]} but "
                             f"y_score has {C} columns (one per class, in sorted label order)")
    cx = xp.asarray(classes, dtype=yt.dtype)
    return xp.astype(xp.reshape(yt, (-1, 1)) == xp.reshape(cx, (1, -1)), B.acc_int(xp))


def _indicator_score(kind, y_true, y_score, sample_weight, average):
    """Per-column binary values of a 0/1 indicator matrix and scikit-learn's averages."""
    kernel, what, reason, opening = _KERNELS[kind]
    V.choice(average, "average", _AVERAGES)
    xp, (Y, S, w) = B.as_arrays(y_true, y_score, sample_weight,
                                names=("y_true", "y_score", "sample_weight"))
    if Y.ndim != 2 or tuple(S.shape) != tuple(Y.shape):
        raise ValueError(f"y_score has shape {tuple(S.shape)} but the indicator y_true has shape "
                         f"{tuple(Y.shape)}; they must match")
    n, L = Y.shape
    B.check_nonempty("y_true", Y)
    B.check_numeric("y_true", Y, xp)
    V.check_real_values("y_score", S, xp, "numeric scores")
    if xp.isdtype(Y.dtype, "bool"):
        Y = xp.astype(Y, B.acc_int(xp))
    invalid = V.check_indicator("y_true", Y, xp) | V.check_finite("y_score", S, xp)
    if w is not None:
        V.check_1d("sample_weight", w)
        V.check_same_length(y_true=Y, sample_weight=w)
        invalid = invalid | V.check_weights("sample_weight", w, xp)
    Y = xp.astype(Y == 1, B.acc_int(xp))
    out = B.out_float(xp, S, w)
    f = B.acc_float(xp)

    if average == "micro":
        y_flat, s_flat = xp.reshape(Y, (-1,)), xp.reshape(S, (-1,))
        w_flat = None if w is None else xp.reshape(
            xp.broadcast_to(xp.reshape(w, (-1, 1)), (n, L)), (-1,))
        value, undefined = kernel(y_flat, s_flat, w_flat, xp)
        return B.scalar_result(value, xp, out=out, invalid=invalid, undefined=undefined,
                               what=f"{opening}micro-averaged {what} is undefined ({reason} in the "
                                    "flattened indicator matrix); returning NaN")
    if average == "samples":
        # one binary problem per sample over its labels; the sample weight enters the average
        pairs = [kernel(Y[i, :], S[i, :], None, xp) for i in range(n)]
        weights = w
        unit = "sample(s)"
    else:
        pairs = [kernel(Y[:, j], S[:, j], w, xp) for j in range(L)]
        ww = xp.ones(n, dtype=f) if w is None else xp.astype(w, f)
        # 'weighted': each label's (weighted) number of positives, as scikit-learn
        weights = xp.sum(xp.astype(Y, f) * xp.reshape(ww, (-1, 1)), axis=0) \
            if average == "weighted" else None
        unit = "label column(s)"
    values = xp.stack([xp.astype(xp.asarray(v), f) for v, _ in pairs])
    undefined = xp.stack([xp.asarray(u) for _, u in pairs])
    values = B.nan_if(undefined, values, xp)

    def message(und):
        idx = np.flatnonzero(np.asarray(und).reshape(-1))
        shown = f"{idx.tolist()[:10]}{' ...' if idx.shape[0] > 10 else ''}"
        left = "" if average is None else ", left out of the average"
        return f"{opening}{what} is undefined for {unit} {shown} ({reason}); NaN{left}"

    V.warn_if(xp.any(undefined) & ~invalid, message, xp, values=undefined)
    if average is None:
        return B.nan_if(invalid, xp.astype(values, out), xp)
    value = nanaverage(values, weights, xp)
    return B.finalize(B.nan_if(invalid, xp.astype(value, out), xp), xp)

