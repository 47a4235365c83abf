"""Probability quality of binary forecasts: log loss and the Brier score."""

from __future__ import annotations

import numpy as np

from . import _backend as B

__all__ = ["log_loss", "brier_score_loss"]


def _prepare_prob(y_true, y_prob, sample_weight, *, labels=None, pos_label=None):
    xp, (y_true, y_prob, sample_weight) = B.as_arrays(y_true, y_prob, sample_weight)
    B.check_1d("y_true", y_true)
    B.check_1d("y_prob", y_prob)
    if sample_weight is not None:
        B.check_1d("sample_weight", sample_weight)
    B.check_same_length(y_true=y_true, y_prob=y_prob, sample_weight=sample_weight)
    B.check_nonempty("y_true", y_true)
    B.check_numeric("y_prob", y_prob, xp)
    if labels is not None:
        labels = list(np.asarray(labels).tolist())
        if len(labels) != 2 or labels[0] == labels[1]:
            raise ValueError(f"labels must list two distinct classes [negative, positive], got {labels}")
        if pos_label is not None:
            raise ValueError("give labels or pos_label, not both")
        if not B.is_traced(y_true):
            ok = (y_true == labels[0]) | (y_true == labels[1])
            if not bool(xp.all(ok)):
                i = B._first_index(~ok, xp)
                raise ValueError(f"y_true element {i} is {B.to_numpy(y_true)[i]!r}, "
                                 f"which is not in labels={labels}")
        pos_label = labels[1]
    y, invalid = B.binary_labels(y_true, xp, pos_label=pos_label)
    f = B.out_float(xp, y_prob)
    p = xp.astype(y_prob, f)
    if not B.is_traced(p):
        B.check_finite("y_prob", p, xp)
        bad = (p < 0) | (p > 1)
        if bool(xp.any(bad)):
            i = B._first_index(bad, xp)
            raise ValueError(f"y_prob must be probabilities in [0, 1]; element {i} is "
                             f"{float(B.to_numpy(p)[i])}")
    else:
        invalid = invalid | ~xp.all((p >= 0) & (p <= 1))
    if sample_weight is not None:
        B.check_weights("sample_weight", sample_weight, xp)
        if B.is_traced(sample_weight):
            invalid = invalid | ~xp.all(sample_weight >= 0)
    return xp, y, p, sample_weight, invalid, f


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


def log_loss(y_true, y_prob, *, normalize=True, sample_weight=None, labels=None):
    """Binary cross-entropy (natural log) of P(positive) forecasts.

    ``-mean(y ln p + (1 - y) ln(1 - p))``, weighted by ``sample_weight``.
    Probabilities are clipped to ``[eps, 1 - eps]`` with ``eps`` the machine
    epsilon of the probabilities' float dtype (as scikit-learn >= 1.5), so a
    forecast of exactly 0 or 1 on the wrong side gives a large finite loss
    (-ln(2.2e-16) = 36.04 for float64) instead of inf. That is the only
    clipping.

    Parameters
    ----------
    y_true : array (n,)
        Labels in {0, 1}, or the two classes named by ``labels``.
    y_prob : array (n,)
        Probability of the positive class (``labels[1]``), in [0, 1].
    normalize : bool
        Mean (True) or sum (False) of the per-row losses.
    labels : sequence of two labels, optional
        ``[negative, positive]``. Not needed for 0/1 labels even when only one
        class is present (scikit-learn requires it then; handed case H10).

    Returns a 0-d float in nats. Under ``jit`` invalid input gives NaN.

    Raises
    ------
    ValueError
        Shapes, empty input, probabilities outside [0, 1] or NaN, labels
        outside {0, 1} / ``labels``, negative weights.
    """
    xp, y, p, w, invalid, f = _prepare_prob(y_true, y_prob, sample_weight, labels=labels)
    eps = float(xp.finfo(p.dtype).eps)
    p = xp.clip(p, eps, 1 - eps)
    yf = xp.astype(y, f)
    loss = -(yf * xp.log(p) + (1 - yf) * xp.log1p(-p))
    value, _ = _weighted_mean(loss, w, xp, normalize)
    value = xp.astype(B.nan_if(invalid, value, xp), f)
    return B.finalize(value, xp)


def brier_score_loss(y_true, y_prob, *, sample_weight=None, pos_label=None):
    """Brier score: mean squared difference between P(positive) and the outcome.

    ``mean((p - y)**2)`` weighted by ``sample_weight``; in [0, 1], lower is
    better (Brier 1950). ``y_prob`` must lie in [0, 1] (nothing is clipped).

    Returns a 0-d float. Raises ``ValueError`` as :func:`log_loss`; under
    ``jit`` invalid input gives NaN.
    """
    xp, y, p, w, invalid, f = _prepare_prob(y_true, y_prob, sample_weight, pos_label=pos_label)
    diff = p - xp.astype(y, f)
    value, _ = _weighted_mean(diff * diff, w, xp)
    value = xp.astype(B.nan_if(invalid, value, xp), f)
    return B.finalize(value, xp)
