"""Regression metrics: MSE, RMSE, MAE, MAPE, MASE and R².

Every function takes ``y_true`` and ``y_pred`` of shape ``(n,)`` or
``(n, n_outputs)``, optional non-negative ``sample_weight`` of shape ``(n,)``
and scikit-learn's ``multioutput`` (``"raw_values"``, ``"uniform_average"``,
an array of ``n_outputs`` weights, and for :func:`r2_score` also
``"variance_weighted"``).  Sums run in the widest float the backend gives
(:func:`calipers._core.xp.acc_float`); the result has the inputs' float dtype
(float64 for integer input).  Static shapes only, so everything runs under
``jax.jit``; there invalid values cannot raise and give NaN instead.
"""

from __future__ import annotations

import numpy as np

from ._core import xp as B
from ._core import validation as V
from ._core.compile import compiled
from ._core.types import Array, ArrayLike

__all__ = [
    "mean_squared_error",
    "root_mean_squared_error",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_absolute_scaled_error",
    "r2_score",
]

_MULTIOUTPUT = ("raw_values", "uniform_average")


class _Reg:
    __slots__ = ("xp", "yt", "yp", "w", "invalid", "out", "one_d", "n_outputs")


def _prepare(y_true, y_pred, sample_weight, multioutput, *, allow_variance_weighted=False):
    xp, (y_true, y_pred, sample_weight) = B.as_arrays(y_true, y_pred, sample_weight)
    for name, a in (("y_true", y_true), ("y_pred", y_pred)):
        if a.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1-D (n,) or 2-D (n, n_outputs), got shape {tuple(a.shape)}")
        V.check_real_values(name, a, xp, "numeric values")
    if y_true.ndim != y_pred.ndim and tuple(y_true.shape)[:1] == tuple(y_pred.shape)[:1]:
        # (n,) against (n, 1): one output, as scikit-learn reads it (the 1-D one is reshaped)
        y_true, y_pred = V.column_or_1d(y_true), V.column_or_1d(y_pred)
    if y_true.ndim == y_pred.ndim and y_true.shape[0] != y_pred.shape[0]:
        V.check_same_length(y_true=y_true, y_pred=y_pred)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(f"y_true has shape {tuple(y_true.shape)} but y_pred has shape "
                         f"{tuple(y_pred.shape)}; they must match")
    invalid = xp.asarray(False)
    if sample_weight is not None:
        V.check_1d("sample_weight", sample_weight)
        V.check_same_length(y_true=y_true, sample_weight=sample_weight)
        invalid = V.check_weights("sample_weight", sample_weight, xp, positive_sum=True)
    B.check_nonempty("y_true", y_true)
    invalid = invalid | V.check_finite("y_true", y_true, xp)
    invalid = invalid | V.check_finite("y_pred", y_pred, xp)
    d = _Reg()
    d.xp = xp
    d.one_d = y_true.ndim == 1
    d.out = B.out_float(xp, y_true, y_pred)
    acc = B.acc_float(xp)
    yt = xp.astype(y_true, acc)
    yp = xp.astype(y_pred, acc)
    if d.one_d:
        yt = xp.reshape(yt, (-1, 1))
        yp = xp.reshape(yp, (-1, 1))
    d.yt, d.yp = yt, yp
    d.n_outputs = yt.shape[1]
    w = None
    if sample_weight is not None:
        w = xp.astype(sample_weight, acc)
    d.w = w
    d.invalid = invalid
    _check_multioutput(multioutput, d.n_outputs, allow_variance_weighted)
    return d


def _check_multioutput(multioutput, n_outputs, allow_variance_weighted):
    if isinstance(multioutput, str):
        allowed = _MULTIOUTPUT + (("variance_weighted",) if allow_variance_weighted else ())
        if multioutput not in allowed:
            raise ValueError(f"multioutput must be one of {allowed} or an array of "
                             f"{n_outputs} weights, got {multioutput!r}")
        return
    weights = np.asarray(B.to_numpy(multioutput), dtype=np.float64)
    if weights.shape != (n_outputs,):
        raise ValueError(f"multioutput weights must have shape ({n_outputs},), "
                         f"got {weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or not weights.sum() > 0:
        raise ValueError("multioutput weights must be finite, non-negative, with a positive sum")


def _wmean(values, d):
    """Weighted mean over samples (axis 0) of an (n, n_outputs) array."""
    xp = d.xp
    if d.w is None:
        return xp.mean(values, axis=0)
    w = xp.reshape(d.w, (-1, 1))
    return xp.sum(values * w, axis=0) / xp.sum(d.w)


def _aggregate(per_output, d, multioutput):
    """Apply ``multioutput`` to per-output values, turn invalid input into NaN, cast."""
    xp = d.xp
    if isinstance(multioutput, str):
        if multioutput == "raw_values":
            value = per_output
        else:
            value = xp.mean(per_output)
    else:
        wts = xp.asarray(np.asarray(B.to_numpy(multioutput), dtype=np.float64),
                         dtype=B.acc_float(xp))
        value = xp.sum(per_output * wts) / xp.sum(wts)
    value = B.nan_if(d.invalid, value, xp)
    return B.finalize(xp.astype(value, d.out), xp)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def mean_squared_error(y_true: ArrayLike, y_pred: ArrayLike, *, sample_weight: ArrayLike = None,
                       multioutput: str | ArrayLike = "uniform_average") -> float | Array:
    """Mean squared error, ``mean((y_true - y_pred)**2)``, weighted by ``sample_weight``.

    Parameters
    ----------
    y_true, y_pred : array of shape (n,) or (n, n_outputs)
        Finite real values, the same shape.
    sample_weight : array of shape (n,), optional
        Non-negative weights with a positive sum.
    multioutput : ``"raw_values"``, ``"uniform_average"`` or array of shape (n_outputs,)
        Per-output values, their mean, or their weighted mean (scikit-learn's
        semantics). ``"raw_values"`` returns shape ``(n_outputs,)`` (``(1,)``
        for 1-D input, as scikit-learn).

    Returns a 0-d float (NumPy scalar on NumPy) in squared units of ``y``, or
    the per-output array.

    Raises
    ------
    ValueError
        Arrays not 1-D/2-D, shapes that differ (scikit-learn also accepts
        ``(n,)`` against ``(n, 1)``; calipers does not), empty input, NaN or
        inf values, negative weights or weights summing to 0, a bad
        ``multioutput``. Under ``jit`` invalid values give NaN instead.

    Same value as ``sklearn.metrics.mean_squared_error``.

    Examples
    --------
    >>> import calipers
    >>> float(calipers.mean_squared_error([3.0, -0.5, 2.0, 7.0], [2.5, 0.0, 2.0, 8.0]))
    0.375
    """
    d = _prepare(y_true, y_pred, sample_weight, multioutput)
    diff = d.yt - d.yp
    return _aggregate(_wmean(diff * diff, d), d, multioutput)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def root_mean_squared_error(y_true: ArrayLike, y_pred: ArrayLike, *,
                            sample_weight: ArrayLike = None,
                            multioutput: str | ArrayLike = "uniform_average") -> float | Array:
    """Root mean squared error, the square root of :func:`mean_squared_error` per output.

    With several outputs the root is taken per output before averaging
    (scikit-learn's ``root_mean_squared_error``), so the uniform average is
    not ``sqrt`` of the averaged MSE. Units of ``y``. Parameters, errors and
    ``jit`` behaviour as :func:`mean_squared_error`.
    """
    d = _prepare(y_true, y_pred, sample_weight, multioutput)
    diff = d.yt - d.yp
    return _aggregate(d.xp.sqrt(_wmean(diff * diff, d)), d, multioutput)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def mean_absolute_error(y_true: ArrayLike, y_pred: ArrayLike, *, sample_weight: ArrayLike = None,
                        multioutput: str | ArrayLike = "uniform_average") -> float | Array:
    """Mean absolute error, ``mean(|y_true - y_pred|)``, in units of ``y``.

    Parameters, errors and ``jit`` behaviour as :func:`mean_squared_error`;
    same value as ``sklearn.metrics.mean_absolute_error``.
    """
    d = _prepare(y_true, y_pred, sample_weight, multioutput)
    return _aggregate(_wmean(d.xp.abs(d.yt - d.yp), d), d, multioutput)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def mean_absolute_percentage_error(y_true: ArrayLike, y_pred: ArrayLike, *,
                                   sample_weight: ArrayLike = None,
                                   multioutput: str | ArrayLike = "uniform_average"
                                   ) -> float | Array:
    """Mean absolute percentage error as a proportion: ``mean(|y_true - y_pred| / |y_true|)``.

    A proportion, not a percentage: 0.25 means 25 % (as scikit-learn).

    Differences from scikit-learn: a zero in ``y_true`` is invalid input and
    raises ``ValueError`` (scikit-learn divides by ``max(|y|, eps)`` and returns
    a number of order 1e15, which reads like a result). This holds even for a
    zero actual with zero weight. Under ``jit`` a zero actual gives NaN.

    Other parameters, errors and ``jit`` behaviour as :func:`mean_squared_error`.
    """
    d = _prepare(y_true, y_pred, sample_weight, multioutput)
    xp = d.xp
    zero = d.yt == 0
    d.invalid = d.invalid | V.fail_if(xp.any(zero, axis=1), "y_true", "must be non-zero for MAPE "
                                      "(division by the actual value)", xp, what="row")
    denom = xp.where(zero, 1.0, xp.abs(d.yt))
    return _aggregate(_wmean(xp.abs(d.yt - d.yp) / denom, d), d, multioutput)


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def mean_absolute_scaled_error(y_true: ArrayLike, y_pred: ArrayLike, *, y_train: ArrayLike,
                               sp: int = 1, sample_weight: ArrayLike = None,
                               multioutput: str | ArrayLike = "uniform_average") -> float | Array:
    """Mean absolute scaled error (Hyndman & Koehler 2006).

    ``MAE(y_true, y_pred) / mean_t |y_train[t] - y_train[t - sp]|``: the
    forecast's MAE divided by the in-sample MAE of the seasonal naive forecast
    on the training series, per output. ``sample_weight`` weights the forecast
    errors only (the naive scale is an unweighted mean over the training
    series). scikit-learn has no MASE; the definition is sktime's
    ``mean_absolute_scaled_error`` with ``sp``.

    Parameters
    ----------
    y_true, y_pred : array of shape (n,) or (n, n_outputs)
        Actual and forecast values over the test horizon.
    y_train : array of shape (T,) or (T, n_outputs), keyword
        The training series, in time order, with ``T > sp``.
    sp : int, keyword
        Seasonal period of the naive forecast (1: the previous value).

    Raises
    ------
    ValueError
        As :func:`mean_squared_error`; also ``sp`` < 1, ``y_train`` not longer
        than ``sp`` or with the wrong number of outputs or non-finite, and a
        zero naive scale (a constant or exactly ``sp``-periodic training
        series: the ratio has no finite value). Under ``jit`` a zero scale
        or non-finite ``y_train`` gives NaN.
    """
    sp = V.positive_int(sp, "sp")
    d = _prepare(y_true, y_pred, sample_weight, multioutput)
    xp = d.xp
    _, (y_train,) = B.as_arrays(y_train)
    if isinstance(y_train, np.ndarray) and not B.is_numpy(xp):
        y_train = xp.asarray(y_train)
    B.check_numeric("y_train", y_train, xp)
    want = 1 if d.one_d else 2
    if y_train.ndim != want:
        raise ValueError(f"y_train must be {want}-D like y_true; got shape {tuple(y_train.shape)}")
    yt = xp.astype(y_train, B.acc_float(xp))
    yt = xp.reshape(yt, (yt.shape[0], -1))
    if yt.shape[1] != d.n_outputs:
        raise ValueError(f"y_train has {yt.shape[1]} outputs but y_true has {d.n_outputs}")
    if yt.shape[0] <= sp:
        raise ValueError(f"y_train must be longer than sp={sp}; it has {yt.shape[0]} values")
    d.invalid = d.invalid | V.check_finite("y_train", yt, xp)
    scale = xp.mean(xp.abs(yt[sp:, ...] - yt[:-sp, ...]), axis=0)
    d.invalid = d.invalid | V.fail_if(xp.any(scale == 0), "y_train", f"gives a naive scale "
                                      f"mean|y_train[t] - y_train[t-{sp}]| that is zero (constant "
                                      "or exactly periodic y_train); MASE is not defined", xp)
    mae = _wmean(xp.abs(d.yt - d.yp), d)
    return _aggregate(mae / xp.where(scale == 0, 1.0, scale), d, multioutput)


def r2_from_sums(ss_res, ss_tot, force_finite, xp):
    """``R² = 1 - SS_res / SS_tot`` with the undefined rule of :func:`r2_score`.

    ``SS_tot = 0`` (constant ``y_true``): NaN, or with ``force_finite``
    scikit-learn's 1.0 (``SS_res = 0``) / 0.0. Returns ``(r2, undefined)``;
    the one formula of :func:`r2_score` and the streaming regression state.
    """
    undefined = ss_tot == 0
    r2 = 1 - ss_res / xp.where(undefined, 1.0, ss_tot)
    if force_finite:
        r2 = xp.where(undefined, xp.astype(ss_res == 0, r2.dtype), r2)
    else:
        r2 = B.nan_if(undefined, r2, xp)
    return r2, undefined


@compiled(rows=("y_true", "y_pred"), weight="sample_weight")
def r2_score(y_true: ArrayLike, y_pred: ArrayLike, *, sample_weight: ArrayLike = None,
             multioutput: str | ArrayLike = "uniform_average",
             force_finite: bool = False) -> float | Array:
    """Coefficient of determination ``R² = 1 - SS_res / SS_tot`` per output.

    ``SS_res = sum w (y - ŷ)²``, ``SS_tot = sum w (y - ȳ_w)²`` with the
    weighted mean ``ȳ_w``. ``multioutput="variance_weighted"`` weights the
    outputs by ``SS_tot`` (scikit-learn's semantics).

    Undefined case, and the difference from scikit-learn: when ``y_true`` is
    constant (``SS_tot = 0``, e.g. one sample) R² is 0/0 or x/0. calipers
    returns NaN for that output with an :class:`UndefinedMetricWarning`
    (eager); the averages over outputs are then NaN too. scikit-learn's
    default ``force_finite=True`` reports 1.0 (perfect prediction) or 0.0
    instead; ``force_finite=True`` here gives those same numbers.

    Other parameters, errors and ``jit`` behaviour as
    :func:`mean_squared_error`. Matches ``sklearn.metrics.r2_score`` wherever
    ``SS_tot > 0``.
    """
    d = _prepare(y_true, y_pred, sample_weight, multioutput, allow_variance_weighted=True)
    xp = d.xp
    ybar = _wmean(d.yt, d)
    res = d.yt - d.yp
    dev = d.yt - ybar
    ss_res = _wmean(res * res, d)
    ss_tot = _wmean(dev * dev, d)
    # A constant column in floating point can leave a tiny non-zero SS_tot; treat
    # the exactly constant column as constant.
    const = xp.all(d.yt == d.yt[:1, ...], axis=0)
    ss_tot = xp.where(const, 0.0, ss_tot)
    r2, undefined = r2_from_sums(ss_res, ss_tot, force_finite, xp)
    if isinstance(multioutput, str) and multioutput == "variance_weighted":
        tot = xp.sum(ss_tot)
        # outputs with SS_tot = 0 have zero weight (NaN * 0 would be NaN: mask them);
        # all outputs constant -> the uniform average (NaN unless force_finite)
        weighted = xp.sum(xp.where(undefined, 0.0, r2) * ss_tot) / xp.where(tot > 0, tot, 1.0)
        value = xp.where(tot > 0, weighted, xp.mean(r2))
        value = B.nan_if(d.invalid, value, xp)
        value = B.finalize(xp.astype(value, d.out), xp)
    else:
        value = _aggregate(r2, d, multioutput)
    if not force_finite:
        # one sample is the constant case; scikit-learn's words for it
        msg = ("R^2 score is not well-defined with less than two samples: returning NaN"
               if d.yt.shape[0] < 2 else
               "R^2 is undefined when y_true is constant (zero variance); returning NaN for "
               "that output")
        V.warn_if(xp.any(undefined), msg, xp)
    return value
