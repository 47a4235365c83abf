"""Probability quality: log loss and the Brier score, binary and multiclass.

1-D ``y_prob`` is P(positive) of a binary problem (``labels[1]`` when
``labels`` is given); 2-D ``y_prob`` of shape (n, K) holds class probabilities,
column j for class j (or for the j-th of the sorted ``labels``, scikit-learn's
column order).
"""

from __future__ import annotations

from typing import Any


import numpy as np

from ._core import xp as B
from ._core import validation as V
from ._core.compile import compiled
from ._calibration import check_logits, log_softmax, sigmoid, softmax, softplus
from ._core.types import Array, ArrayLike

__all__ = ["log_loss", "brier_score_loss", "probability_sum_tolerance"]


def probability_sum_tolerance(dtype: Any = "float64") -> float:
    """How far a row of class probabilities may sum from 1 and still be accepted.

    ``sqrt(eps)`` of the float dtype (1.49e-08 for float64, 3.45e-04 for
    float32): every calipers function that takes class probabilities
    (log loss, Brier score, calibration, the streaming states, the
    ``calipers report`` reader) refuses a row whose sum is further from 1,
    so a file or pipeline can apply the same rule before calling them.

    Parameters
    ----------
    dtype : dtype or str
        A real floating dtype (NumPy, JAX or its name).

    Returns
    -------
    float

    Examples
    --------
    >>> import calipers
    >>> print(f"{calipers.probability_sum_tolerance('float32'):.3g}")
    0.000345
    """
    return V.prob_sum_tolerance(dtype)


def _weights(sample_weight, xp, positive_sum=False):
    """The flag of :func:`calipers._core.validation.check_weights` (None: no weights, no flag).

    ``positive_sum``: a weighted mean's weights must not all be 0 (the one-shot losses; a
    state's batch of padding adds nothing instead)."""
    if sample_weight is None:
        return xp.asarray(False)
    V.check_1d("sample_weight", sample_weight)
    return V.check_weights("sample_weight", sample_weight, xp, positive_sum=positive_sum)


def _encode_text_binary(y_true, labels, pos_label):
    """Text labels of 1-D ``y_prob`` as 0/1 (eager): the positive class is ``labels[1]``,
    ``pos_label``, or the greater of the two classes of ``y_true`` (scikit-learn)."""
    if labels is not None:
        classes, (codes,) = V.encode_labels(y_true, labels=labels)
        pos = 1
    else:
        classes, (codes,) = V.encode_labels(y_true)
        if pos_label is not None:
            hit = np.flatnonzero(classes == pos_label)
            pos = int(hit[0]) if hit.size else -1
        elif classes.shape[0] == 2:
            pos = 1
        else:
            raise ValueError(f"y_true has {classes.shape[0]} classes {classes.tolist()}; 1-D "
                             "y_prob needs two (give labels=[negative, positive] or pos_label)")
    return (codes == pos).astype(np.int64)


def _not_in(labels):
    return lambda i, v: f"y_true element {i} is {v!r}, which is not in labels={labels}"


def prepare_prob(y_true, y_prob, sample_weight, *, labels=None, pos_label=None,
                 from_logits=False, positive_sum=False):
    if labels is not None and pos_label is not None:
        raise ValueError("give labels or pos_label, not both")
    if V.is_text(y_true):
        y_true, labels, pos_label = _encode_text_binary(y_true, labels, pos_label), None, None
    xp, (y_true, y_prob, sample_weight) = B.as_arrays(
        y_true=y_true, y_prob=y_prob, sample_weight=sample_weight)
    V.check_1d("y_true", y_true)
    V.check_1d("y_prob", y_prob)
    V.check_same_length(y_prob=y_prob, y_true=y_true, sample_weight=sample_weight)
    B.check_nonempty("y_true", y_true)
    B.check_numeric("y_prob", y_prob, xp)
    invalid = xp.asarray(False)
    if labels is not None:
        labels = list(np.asarray(labels).tolist())
        if len(labels) != 2 or labels[0] == labels[1]:
            raise ValueError(f"labels must list two distinct classes [negative, positive], got {labels}")
        ok = (y_true == labels[0]) | (y_true == labels[1])
        invalid = V.fail_if(~ok, "y_true", "", xp, values=y_true, message=_not_in(labels))
        pos_label = labels[1]
    elif pos_label is None and not B.is_traced(y_true) and y_true.shape[0] \
            and not xp.isdtype(y_true.dtype, "bool"):
        # scikit-learn's inference for probabilities: two classes other than {0, 1} and
        # {-1, 1} make the greater one positive (eager: the classes come from the data)
        classes = np.unique(B.to_numpy(y_true))
        if classes.shape[0] == 2 and not set(classes.tolist()) <= {0, 1} \
                and not set(classes.tolist()) <= {-1, 1}:
            pos_label = classes[-1].item()
    y, bad_y = V.binary_labels(
        y_true, xp, pos_label=pos_label,
        multiclass_hint="The type of the target inferred from y_true is multiclass but should "
                        "be binary according to the shape of y_prob.")
    f = B.out_float(xp, y_prob)
    p = xp.astype(y_prob, f)
    if from_logits:
        invalid = invalid | bad_y | check_logits("y_prob", y_prob, xp)
    else:
        invalid = invalid | bad_y | V.check_probabilities("y_prob", p, xp)
    invalid = invalid | _weights(sample_weight, xp, positive_sum)
    return xp, y, p, sample_weight, invalid, f


def _class_count_message(classes, K, from_labels):
    """scikit-learn's words for classes that do not match the columns of 2-D ``y_prob``."""
    shown = np.asarray(classes)
    if from_labels:
        return ("The number of classes in labels is different from that in y_prob. Classes "
                f"found in labels: {shown}")
    if shown.shape[0] == 1:
        return (f"y_true contains only one label ({shown[0]}). Please provide the list of all "
                "expected class labels explicitly through the labels argument.")
    return (f"y_true and y_prob contain different number of classes: {shown.shape[0]} vs {K}. "
            "Please provide the true labels explicitly through the labels argument. Classes "
            f"found in y_true: {shown}")


def _one_hot_index(y_true, K, xp):
    """A one-hot (n, K) ``y_true`` (scikit-learn accepts the indicator form) as class indices.

    Each row must hold one 1 and zeros (a multilabel row has no single class):
    ``ValueError`` eagerly, the invalid flag under ``jit``.
    """
    if y_true.shape[1] != K:
        raise ValueError(f"y_true as a 2-D indicator has shape {tuple(y_true.shape)}; it must "
                         f"have one column per column of y_prob ({K})")
    invalid = V.check_indicator("y_true", y_true, xp)
    ones = xp.sum(xp.astype(y_true == 1, B.acc_int(xp)), axis=1)
    invalid = invalid | V.fail_if(ones != 1, "y_true", "as a 2-D indicator must be one-hot "
                                  "(exactly one 1 per row)", xp, values=ones,
                                  what="the number of ones in row")
    return xp.argmax(xp.astype(y_true == 1, B.acc_int(xp)), axis=1), invalid


def prepare_multiclass(y_true, y_prob, sample_weight, labels, from_logits=False,
                       positive_sum=False):
    """2-D y_prob: validate and return xp, one-hot (n, K) acc float, P (n, K), w, invalid, out.

    ``from_logits``: P holds the (finite) logits, unchecked as probabilities."""
    from ._calibration import check_class_index

    K = np.shape(y_prob)[1]
    unsorted = None
    if labels is not None:
        given = np.asarray(labels).tolist()
        if given != sorted(given):
            # scikit-learn's warning, in its words: columns follow the sorted labels
            unsorted = (f"Labels passed were {given}. But this function assumes labels are "
                        f"ordered lexicographically. Pass the ordered labels={sorted(given)} and "
                        "ensure that the columns of y_prob correspond to this ordering.")
    if V.is_text(y_true):  # eager: codes of the sorted classes (labels, or those of y_true)
        classes, (y_true,) = V.encode_labels(
            y_true, labels=None if labels is None else sorted(np.asarray(labels).tolist()))
        if classes.shape[0] != K:
            raise ValueError(f"{_class_count_message(classes, K, labels is not None)} (y_true "
                             f"has {classes.shape[0]} classes {classes.tolist()} but y_prob has "
                             f"{K} columns; pass labels=, one per column)")
        labels = None
    xp, (y_true, y_prob, sample_weight) = B.as_arrays(
        y_true=y_true, y_prob=y_prob, sample_weight=sample_weight)
    if unsorted is not None:
        V.warn_if(xp.asarray(True), unsorted, xp, UserWarning)
    # scikit-learn's order of the lengths in its message: y_prob, y_true, sample_weight
    V.check_same_length(y_prob=y_prob, y_true=y_true, sample_weight=sample_weight)
    onehot_invalid = None
    if y_true.ndim == 2:
        y_true, onehot_invalid = _one_hot_index(y_true, K, xp)
        labels = None
    V.check_1d("y_true", y_true)
    B.check_nonempty("y_true", y_true)
    B.check_numeric("y_prob", y_prob, xp)
    B.check_numeric("y_true", y_true, xp)
    if K < 2:
        raise ValueError(f"2-D y_prob needs at least 2 columns (classes), got {K}")
    f = B.out_float(xp, y_prob)
    p = xp.astype(y_prob, f)
    if labels is not None:
        labels = sorted(np.asarray(labels).tolist())
        if len(set(labels)) != len(labels) or len(labels) != K:
            raise ValueError(f"{_class_count_message(labels, K, True)} (labels must list {K} "
                             f"distinct classes, one per column of y_prob, got {labels})")
        match = xp.zeros(y_true.shape, dtype=xp.bool)
        idx = xp.zeros(y_true.shape, dtype=B.acc_int(xp))
        for j, lab in enumerate(labels):
            hit = y_true == lab
            match = match | hit
            idx = xp.where(hit, j, idx)
        invalid = V.fail_if(~match, "y_true", "", xp, values=y_true, message=_not_in(labels))
    else:
        if onehot_invalid is None and not B.is_traced(y_true):
            yh = B.to_numpy(y_true)
            if yh.size and yh.dtype.kind != "b" and (yh.min() < 0 or yh.max() >= K):
                present = np.unique(yh[np.isfinite(yh)] if yh.dtype.kind == "f" else yh)
            else:
                present = None
            if present is not None and present.shape[0] != K:
                # without labels the columns are the class indices; say it in both words
                raise ValueError(f"{_class_count_message(present, K, False)} (calipers: "
                                 f"without labels, y_true holds the column indices 0 .. {K - 1} "
                                 "of y_prob)")
        idx, invalid = check_class_index("y_true", y_true, K, xp)
        if onehot_invalid is not None:
            invalid = invalid | onehot_invalid
    cols = xp.reshape(xp.arange(K, dtype=idx.dtype), (1, -1))
    onehot = xp.astype(cols == xp.reshape(idx, (-1, 1)), f)
    if from_logits:
        invalid = invalid | check_logits("y_prob", y_prob, xp)
    else:
        invalid = invalid | V.check_probabilities("y_prob", p, xp, rows_sum_to_one=True)
    invalid = invalid | _weights(sample_weight, xp, positive_sum)
    return xp, onehot, p, sample_weight, invalid, f


def binary_log_loss_rows(y01, p, xp):
    """Per-row binary cross-entropy, ``p`` clipped to [eps, 1 - eps] at its dtype's epsilon.

    The one formula behind :func:`log_loss`, the bootstrap kernel and the streaming state.
    """
    eps = float(xp.finfo(p.dtype).eps)
    p = xp.clip(p, eps, 1 - eps)
    y = xp.astype(y01, p.dtype)
    return -(y * xp.log(p) + (1 - y) * xp.log1p(-p))


def binary_log_loss_rows_widened(y01, p, xp):
    """:func:`binary_log_loss_rows` of ``p`` clipped at the epsilon of its own dtype, computed
    in the widest float (what :func:`log_loss` gives on ``p``'s dtype; non-float ``p`` clips
    at 2**-52). The per-row term of every resampled and distributed log loss."""
    eps = float(xp.finfo(p.dtype).eps) if xp.isdtype(p.dtype, "real floating") else 2.0**-52
    return binary_log_loss_rows(y01, xp.clip(xp.astype(p, B.acc_float(xp)), eps, 1 - eps), xp)


def binary_log_loss_logit_rows(y01, z, xp):
    """Per-row binary cross-entropy of logits ``z``: ``y softplus(-z) + (1 - y) softplus(z)``.

    ``-log sigmoid(z) = softplus(-z)`` and ``-log(1 - sigmoid(z)) = softplus(z)``,
    computed without overflow and without clipping: exact for large ``|z|``
    (``z = 50``, ``y = 0`` gives 50, ``y = 1`` gives ``exp(-50)``).
    """
    y = xp.astype(y01, z.dtype)
    return y * softplus(-z, xp) + (1 - y) * softplus(z, xp)


def multiclass_log_loss_rows(onehot, P, xp, from_logits=False):
    """Per-row multiclass cross-entropy: ``-log_softmax(z)[y]`` from logits, else
    ``-log p[y]`` with ``p`` clipped to [eps, 1 - eps] at its dtype's epsilon."""
    if from_logits:
        return -xp.sum(onehot * log_softmax(P, xp), axis=1)
    eps = float(xp.finfo(P.dtype).eps)
    return -xp.sum(onehot * xp.log(xp.clip(P, eps, 1 - eps)), axis=1)


def probabilities_of(z, xp):
    """Probabilities of logits: ``sigmoid`` (1-D) or ``softmax`` over the last axis (2-D)."""
    return sigmoid(z, xp) if z.ndim == 1 else softmax(z, xp)


def binary_brier_rows(y01, p, xp):
    """Per-row squared error ``(p - y)**2`` (nothing clipped)."""
    d = p - xp.astype(y01, p.dtype)
    return d * d


def _weighted_mean(values, w, xp, normalize=True):
    acc = B.acc_float(xp)
    v = xp.astype(values, acc)
    if w is None:
        total = xp.sum(v)
        return total / v.shape[0] if normalize else total, None
    ww = xp.astype(w, acc)
    total = xp.sum(v * ww)
    wsum = xp.sum(ww)
    return (total / wsum if normalize else total), wsum


@V.keyword_aliases("y_prob", current=("y_proba",), deprecated=("y_pred",))
@compiled(rows=("y_true", "y_prob"), weight="sample_weight")
def log_loss(y_true: ArrayLike, y_prob: ArrayLike, *, normalize: bool = True,
             sample_weight: ArrayLike = None, labels: ArrayLike = None,
             from_logits: bool = False) -> float | Array:
    """Cross-entropy (natural log) of probability forecasts, binary or multiclass.

    Binary (1-D ``y_prob``): ``-mean(y ln p + (1 - y) ln(1 - p))``; multiclass
    (2-D ``y_prob``, shape (n, K)): ``-mean(ln p[i, y_i])``; weighted by
    ``sample_weight``.
    Probabilities are clipped to ``[eps, 1 - eps]`` with ``eps`` the machine
    epsilon of the probabilities' float dtype (as scikit-learn >= 1.5), so a
    forecast of exactly 0 or 1 on the wrong side gives a large finite loss
    (-ln(2.2e-16) = 36.04 for float64) instead of inf. That is the only
    clipping.

    Parameters
    ----------
    y_true : array (n,)
        Labels in {0, 1} or {-1, 1} (1 positive), or the two classes named by
        ``labels``. With 2-D ``y_prob`` also a one-hot indicator of its shape
        (scikit-learn accepts it; a row without exactly one 1 is refused). An
        (n, 1) column, of ``y_true`` or ``y_prob``, is read as 1-D
        (scikit-learn's ``column_or_1d``; a one-column ``y_prob`` is
        P(positive)). Eagerly, other labels are encoded as scikit-learn does:
        text labels as the sorted distinct values of ``y_true`` (or
        ``labels``), and for 1-D ``y_prob`` the positive class is the greater
        of two classes (numbers such as {1, 2} too). Under ``jit`` labels are
        integers.
    y_prob : array (n,) or (n, K)
        (keyword also ``y_proba=``, scikit-learn 1.9's name, or its older
        deprecated ``y_pred=``.) 1-D: probability of the positive class (``labels[1]``), in [0, 1].
        2-D: class probabilities, each row summing to 1 (within
        ``sqrt(eps)``), column j for class j, or for the j-th of the sorted
        ``labels``.
    normalize : bool
        Mean (True) or sum (False) of the per-row losses.
    labels : sequence, optional
        1-D ``y_prob``: two labels ``[negative, positive]``. Not needed for
        0/1 labels even when only one class is present (scikit-learn requires
        it then; scikit-learn #6703, PR #7239). 2-D: the K class labels (sorted to give the
        column order, as scikit-learn). Without ``labels``, 2-D ``y_prob``
        takes ``y_true`` as column indices ``0 .. K-1``; scikit-learn instead
        infers the classes from the values present in ``y_true`` (a data-
        dependent shape calipers avoids so that it runs under ``jit``).
    from_logits : bool, default False
        ``y_prob`` holds logits (finite real numbers): 1-D the logit of the
        positive class, with ``log p = -softplus(-z)`` and
        ``log(1 - p) = -softplus(z)``; 2-D one logit per class, with
        ``log p = log_softmax(z)`` over the last axis. Nothing is clipped:
        the loss is exact for large ``|z|`` (a wrong logit of 50 costs 50
        nats, not the clipped 36.04), so prefer logits when the model has
        them.

    Returns a 0-d float in nats. Under ``jit`` invalid input gives NaN.

    Raises
    ------
    ValueError
        Shapes, empty input, probabilities outside [0, 1] or NaN, rows of a
        2-D ``y_prob`` not summing to 1 (scikit-learn only warns), labels
        outside {0, 1} / ``labels`` / ``0 .. K-1``, negative weights, and with
        ``normalize`` weights that are all 0 (the mean is undefined; the sum,
        ``normalize=False``, is 0).

    Examples
    --------
    >>> import calipers
    >>> print(round(calipers.log_loss([1], [0.001]), 4))
    6.9078
    """
    # (n, 1) columns are 1-D (scikit-learn: a one-column y_prob is P(positive))
    from_logits = V.choice(from_logits, "from_logits", (False, True))
    y_true, y_prob = V.column_or_1d(y_true), V.column_or_1d(y_prob)
    if np.ndim(y_prob) == 2 or getattr(y_prob, "ndim", 1) == 2:
        xp, onehot, p, w, invalid, f = prepare_multiclass(y_true, y_prob, sample_weight, labels,
                                                          from_logits, positive_sum=normalize)
        loss = multiclass_log_loss_rows(onehot, p, xp, from_logits)
        value, _ = _weighted_mean(loss, w, xp, normalize)
        value = xp.astype(B.nan_if(invalid, value, xp), f)
        return B.finalize(value, xp)
    xp, y, p, w, invalid, f = prepare_prob(y_true, y_prob, sample_weight, labels=labels,
                                            from_logits=from_logits, positive_sum=normalize)
    rows = binary_log_loss_logit_rows(y, p, xp) if from_logits else \
        binary_log_loss_rows(y, p, xp)
    value, _ = _weighted_mean(rows, w, xp, normalize)
    value = xp.astype(B.nan_if(invalid, value, xp), f)
    return B.finalize(value, xp)


@V.keyword_aliases("y_prob", current=("y_proba",))
@compiled(rows=("y_true", "y_prob"), weight="sample_weight")
def brier_score_loss(y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike = None,
                     pos_label: Any = None, labels: ArrayLike = None,
                     scale_by_half: bool | str = "auto",
                     from_logits: bool = False) -> float | Array:
    """Brier score: mean squared difference between forecast probabilities and outcomes.

    Binary (1-D ``y_prob`` = P(positive)): ``mean((p - y)**2)``, in [0, 1].
    Multiclass (2-D, (n, K)): ``mean(sum_k (p_k - 1[y = k])**2)``, in [0, 2]
    (Brier 1950). Weighted by ``sample_weight``; lower is better. ``y_prob``
    must lie in [0, 1] (nothing is clipped); 2-D rows must sum to 1.

    ``scale_by_half`` as scikit-learn >= 1.7: ``"auto"`` halves the
    sum-over-classes form when there are fewer than 3 classes, so 1-D binary
    input gives ``mean((p - y)**2)`` and 2-column input the same number;
    ``True``/``False`` force it (``False`` on 1-D input gives
    ``2 * mean((p - y)**2)``). ``labels`` and the 2-D column order as
    :func:`log_loss`; ``pos_label`` names the positive class of 1-D input.
    ``from_logits=True``: ``y_prob`` holds finite logits, turned into
    probabilities by ``sigmoid`` (1-D) or ``softmax`` over the last axis (2-D),
    both computed without overflow.

    Returns a 0-d float. Raises ``ValueError`` as :func:`log_loss`; under
    ``jit`` invalid input gives NaN. See :func:`calipers.brier_decomposition`
    for the Murphy decomposition.

    Examples
    --------
    >>> import calipers
    >>> print(round(calipers.brier_score_loss([1, 0], [0.8, 0.4]), 4))
    0.1
    """
    scale_by_half = V.choice(scale_by_half, "scale_by_half", ("auto", True, False))
    from_logits = V.choice(from_logits, "from_logits", (False, True))
    y_true, y_prob = V.column_or_1d(y_true), V.column_or_1d(y_prob)
    if np.ndim(y_prob) == 2 or getattr(y_prob, "ndim", 1) == 2:
        if pos_label is not None:
            raise ValueError("pos_label applies to 1-D y_prob only; use labels for 2-D")
        xp, onehot, p, w, invalid, f = prepare_multiclass(y_true, y_prob, sample_weight, labels,
                                                          from_logits, positive_sum=True)
        if from_logits:
            p = probabilities_of(p, xp)
        diff = p - onehot
        value, _ = _weighted_mean(xp.sum(diff * diff, axis=1), w, xp)
        half = p.shape[1] < 3 if scale_by_half == "auto" else scale_by_half
        value = value * (0.5 if half else 1.0)
        value = xp.astype(B.nan_if(invalid, value, xp), f)
        return B.finalize(value, xp)
    xp, y, p, w, invalid, f = prepare_prob(y_true, y_prob, sample_weight, pos_label=pos_label,
                                            labels=labels, from_logits=from_logits,
                                            positive_sum=True)
    if from_logits:
        p = probabilities_of(p, xp)
    value, _ = _weighted_mean(binary_brier_rows(y, p, xp), w, xp)
    if scale_by_half is False:
        value = 2 * value
    value = xp.astype(B.nan_if(invalid, value, xp), f)
    return B.finalize(value, xp)
