"""Split conformal prediction: regression intervals and classification sets.

A model is fitted on one part of the data; its conformity scores on a
separate *calibration* set of ``n`` examples give one threshold ``q_hat``,
the ``k``-th smallest score with ``k = ceil((n + 1) (1 - alpha))``
(Vovk et al. 2005; Lei et al. 2018; Angelopoulos & Bates 2021). If the
calibration and test examples are exchangeable, a new example's interval or
set contains its true value with probability at least ``1 - alpha``
(marginally, over calibration and test draws).

The rank ``k`` is computed in exact rational arithmetic: a float product
``(n + 1) * (1 - alpha)`` lands one order statistic off for ordinary levels
(``(1 - 0.7) * 10 = 3.0000000000000004``; MAPIE issue 973, crepes' ``int()``
truncation). ``k > n`` means no finite threshold is valid: ``q_hat = +inf``
(the whole line, or the full label set) with a
:class:`CalibrationSizeWarning`, never the largest score (which
under-covers; MAPIE issues 974 and 980, MONAI issue 8938).

Kernels use the array API only, with static shapes: everything runs under
``jax.jit`` (``alpha`` and the array shapes are static, so ``k`` is a Python
integer and the warning is issued at trace time).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ._core import xp as B
from ._core import validation as V
from ._core.results import result_type
from ._core.types import Array, ArrayLike

__all__ = [
    "CalibrationSizeWarning",
    "ConformalIntervals",
    "ConformalSets",
    "conformal_rank",
    "conformal_quantile",
    "split_conformal_regression",
    "split_conformal_classification",
    "interval_coverage",
    "mean_interval_width",
    "set_coverage",
    "mean_set_size",
]


class CalibrationSizeWarning(UserWarning):
    """The calibration set is too small for the level asked: ``n < 1/alpha - 1``.

    Then ``k = ceil((n + 1)(1 - alpha)) > n``, no calibration score is a valid
    threshold and the interval (or set) is the whole line (the full label set).
    """


@result_type(meta=("k", "n_calibration", "alpha"))
class ConformalIntervals:
    """Split-conformal regression intervals ``[lower, upper]`` (closed).

    Attributes
    ----------
    lower, upper : array (m,)
        ``y_pred_test - q_hat`` and ``y_pred_test + q_hat``; +-inf when ``q_hat`` is inf.
    q_hat : 0-d float
        The ``k``-th smallest absolute calibration residual (+inf when ``k > n``).
    k : int
        The rank ``ceil((n + 1)(1 - alpha))`` (static).
    n_calibration : int
        Number of calibration examples ``n`` (static).
    alpha : float
        The miscoverage level asked (static).
    """

    lower: Any
    upper: Any
    q_hat: Any
    k: int
    n_calibration: int
    alpha: float


@result_type(meta=("k", "n_calibration", "alpha", "method"))
class ConformalSets:
    """Split-conformal classification prediction sets.

    Attributes
    ----------
    sets : bool array (m, n_classes)
        ``sets[i, j]`` is True when class ``j`` is in the set of test example ``i``.
    q_hat : 0-d float
        The ``k``-th smallest calibration score (+inf when ``k > n``).
    k, n_calibration, alpha :
        As in :class:`ConformalIntervals` (static).
    method : str
        ``"lac"`` or ``"aps"`` (static).
    """

    sets: Any
    q_hat: Any
    k: int
    n_calibration: int
    alpha: float
    method: str


# --------------------------------------------------------------------------
# the rank, in exact arithmetic
# --------------------------------------------------------------------------

_MAX_DENOMINATOR = 10**9


def _alpha_fraction(alpha) -> Fraction:
    """``alpha`` as an exact fraction; floats as the nearest fraction with denominator <= 1e9."""
    if isinstance(alpha, bool):
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(alpha, Fraction):
        a = alpha
    elif isinstance(alpha, (int, np.integer)):
        a = Fraction(int(alpha))
    elif isinstance(alpha, str):
        try:
            a = Fraction(alpha.strip())
        except (ValueError, ZeroDivisionError) as exc:
            raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}") from exc
    elif isinstance(alpha, (float, np.floating)):
        if not math.isfinite(float(alpha)):
            raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
        # The level the user meant: the nearest fraction with a denominator up to
        # 10**9, so 0.1, 1 - 0.9 (0.09999999999999998) and 1/3 are 1/10, 1/10, 1/3.
        a = Fraction(float(alpha)).limit_denominator(_MAX_DENOMINATOR)
    else:
        raise ValueError("alpha must be a Python number, a Fraction or a string such as '1/3' "
                         f"(static, also under jit), got {type(alpha).__name__}")
    if not 0 < a < 1:
        raise ValueError(f"alpha must be in (0, 1) (the miscoverage level), got {alpha!r}")
    return a


def conformal_rank(n: int, alpha: float) -> int:
    """The conformal rank ``k = ceil((n + 1)(1 - alpha))``, in exact arithmetic.

    Parameters
    ----------
    n : int
        Calibration set size (>= 1).
    alpha : float, Fraction or str
        Miscoverage level in (0, 1). A float is read as the nearest fraction
        with a denominator of at most 10**9
        (``Fraction(alpha).limit_denominator(10**9)``): ``0.1``, ``1 - 0.9``
        (which is 0.09999999999999998 in floating point) and ``1/3`` mean
        exactly 1/10, 1/10 and 1/3, the levels a user means; floating-point
        noise in the level never moves the rank. A
        :class:`fractions.Fraction` or a string (``"0.1"``, ``"1/3"``) is
        taken exactly.

    Returns
    -------
    int
        ``k``; ``k > n`` exactly when ``n < 1/alpha - 1`` (no finite threshold).

    Raises
    ------
    ValueError
        ``n < 1`` or ``alpha`` outside (0, 1) or not a number.

    Examples
    --------
    >>> from calipers import conformal_rank
    >>> conformal_rank(9, 0.7)   # a float product gives 4
    3
    >>> conformal_rank(19, 1 - 0.9)   # int() truncation gives 19
    18
    >>> conformal_rank(8, 0.1)   # k > n: infinite interval
    9
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1 (the calibration set size), got {n!r}")
    a = _alpha_fraction(alpha)
    return int(math.ceil((int(n) + 1) * (1 - a)))


def _warn_small(n, k, alpha):
    B.warn(f"the calibration set is too small for alpha={alpha}: n={n} < 1/alpha - 1, so the "
           f"conformal rank k={k} exceeds n; q_hat is +inf (an infinite interval, or the full "
           "label set)", CalibrationSizeWarning)


def _quantile(scores, alpha, xp, *, invalid):
    """``(q_hat, k, n)`` from 1-D scores in the accumulation float."""
    n = scores.shape[0]
    k = conformal_rank(n, alpha)
    if k > n:
        _warn_small(n, k, alpha)
        q = xp.asarray(math.inf, dtype=scores.dtype, device=B.device(scores))
    elif B.is_numpy(xp):  # selection, O(n), instead of a full sort
        q = np.partition(scores, k - 1)[k - 1]
    else:
        q = xp.sort(scores)[k - 1]
    return _nan_if(invalid, q, xp), k, n


def _nan_if(invalid, value, xp):
    """NaN where ``invalid``; a concrete False costs nothing (no full-array ``where``)."""
    if not B.is_traced(invalid) and not bool(invalid):
        return value
    return B.nan_if(invalid, value, xp)


def _as(x, dtype, xp):
    """``astype`` without a copy when the dtype already matches."""
    return x if x.dtype == dtype else xp.astype(x, dtype)


def _finite_or_flag(name, x, xp):
    """Raise on non-finite concrete values; return a traced 'invalid' flag under jit."""
    if B.is_traced(x):
        return ~xp.all(xp.isfinite(x))
    V.check_finite(name, xp.reshape(x, (-1,)), xp)
    return xp.asarray(False)


def _float_input(name, x, xp, ndim):
    V.check_real_values(name, x, xp, "numeric values")
    if x.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(x.shape)}")


def conformal_quantile(scores: ArrayLike, *, alpha: float) -> float | Array:
    """The split-conformal threshold: the ``ceil((n + 1)(1 - alpha))``-th smallest score.

    No interpolation. The rank is exact (:func:`conformal_rank`). When
    ``k > n`` (``n < 1/alpha - 1``) the result is ``+inf`` and a
    :class:`CalibrationSizeWarning` is issued; ``k == n`` gives the largest
    score. Ties need no rule: the ``k``-th order statistic is the same value
    whichever tied score is taken.

    Parameters
    ----------
    scores : array (n,)
        Conformity scores of the calibration examples (larger = less
        conforming), finite.
    alpha : float, Fraction or str, keyword
        Miscoverage level in (0, 1); see :func:`conformal_rank` for how a
        float is read. Static under ``jit``.

    Returns
    -------
    0-d float
        ``q_hat`` in the scores' float dtype (float64 for integer scores;
        NumPy scalar on NumPy).

    Raises
    ------
    ValueError
        ``scores`` not 1-D, empty, not numeric, or with NaN/inf; a bad
        ``alpha``. Under ``jit`` non-finite scores give NaN.

    Examples
    --------
    >>> import numpy as np, calipers
    >>> r = (5 * np.arange(1, 20) % 19) + 1          # a permutation of 1..19
    >>> float(calipers.conformal_quantile(r, alpha=0.1))
    18.0
    """
    xp, (scores,) = B.as_arrays(scores)
    _float_input("scores", scores, xp, 1)
    B.check_nonempty("scores", scores)
    invalid = _finite_or_flag("scores", scores, xp)
    out = B.out_float(xp, scores)
    q, _, _ = _quantile(xp.astype(scores, B.acc_float(xp)), alpha, xp, invalid=invalid)
    return B.finalize(xp.astype(q, out), xp)


# --------------------------------------------------------------------------
# regression
# --------------------------------------------------------------------------

def split_conformal_regression(y_calib: ArrayLike, y_pred_calib: ArrayLike, y_pred_test: ArrayLike,
                               *, alpha: float = 0.1) -> ConformalIntervals:
    """Split-conformal intervals from absolute residuals (Lei et al. 2018, Algorithm 2).

    ``q_hat`` is the ``k``-th smallest of ``|y_calib - y_pred_calib|`` with
    ``k = ceil((n + 1)(1 - alpha))`` (exact rank, :func:`conformal_rank`); the
    interval of test point ``i`` is the closed ``[y_pred_test[i] - q_hat,
    y_pred_test[i] + q_hat]``. Under exchangeability of calibration and test
    examples its marginal coverage is at least ``1 - alpha`` (and below
    ``1 - alpha + 1/(n + 1)`` without ties). Same intervals as MAPIE's
    ``SplitConformalRegressor`` (prefit, absolute residual score) and crepes'
    ``ConformalRegressor`` except where their float rank is off by one.

    Parameters
    ----------
    y_calib, y_pred_calib : arrays (n,)
        Targets and the fitted model's predictions on the calibration set
        (not used for fitting), finite.
    y_pred_test : array (m,)
        The model's predictions on the test points, finite.
    alpha : float, Fraction or str, keyword
        Miscoverage level in (0, 1), static under ``jit``.

    Returns
    -------
    ConformalIntervals
        ``lower``, ``upper`` (shape ``(m,)``, the float dtype of the inputs),
        ``q_hat``, ``k``, ``n_calibration``, ``alpha``.

    Warns
    -----
    CalibrationSizeWarning
        When ``n < 1/alpha - 1`` (``k > n``): the intervals are
        ``(-inf, +inf)``. Issued at trace time under ``jit`` (it depends on
        shapes and ``alpha`` only).

    Raises
    ------
    ValueError
        Arrays not 1-D, lengths of ``y_calib`` and ``y_pred_calib`` that
        differ, empty calibration set, NaN/inf values, bad ``alpha``. Under
        ``jit`` non-finite values give NaN bounds instead.

    Examples
    --------
    >>> import calipers
    >>> res = calipers.split_conformal_regression([1.0, 2.0, 3.0, 4.0], [1.5, 1.0, 3.0, 6.0],
    ...                                           [0.0, 10.0], alpha=0.4)
    >>> res.k, float(res.q_hat), res.lower.tolist(), res.upper.tolist()
    (3, 1.0, [-1.0, 9.0], [1.0, 11.0])
    """
    xp, (y_calib, y_pred_calib, y_pred_test) = B.as_arrays(y_calib, y_pred_calib, y_pred_test)
    for name, a in (("y_calib", y_calib), ("y_pred_calib", y_pred_calib),
                    ("y_pred_test", y_pred_test)):
        _float_input(name, a, xp, 1)
    B.check_same_length(y_calib=y_calib, y_pred_calib=y_pred_calib)
    B.check_nonempty("y_calib", y_calib)
    invalid = (_finite_or_flag("y_calib", y_calib, xp)
               | _finite_or_flag("y_pred_calib", y_pred_calib, xp))
    bad_test = _finite_or_flag("y_pred_test", y_pred_test, xp)
    acc = B.acc_float(xp)
    out = B.out_float(xp, y_calib, y_pred_calib, y_pred_test)
    resid = xp.abs(_as(y_calib, acc, xp) - _as(y_pred_calib, acc, xp))
    q, k, n = _quantile(resid, alpha, xp, invalid=invalid)
    yp = _as(y_pred_test, acc, xp)
    lower = _nan_if(bad_test, yp - q, xp)
    upper = _nan_if(bad_test, yp + q, xp)
    return ConformalIntervals(lower=_as(lower, out, xp), upper=_as(upper, out, xp),
                              q_hat=B.finalize(xp.astype(q, out), xp), k=k, n_calibration=n,
                              alpha=float(alpha) if not isinstance(alpha, str) else alpha)


# --------------------------------------------------------------------------
# classification
# --------------------------------------------------------------------------

def _check_labels(y, n_classes, xp, name="y_calib", cols="proba_calib"):
    B.check_numeric(name, y, xp)
    if xp.isdtype(y.dtype, "bool") or not xp.isdtype(y.dtype, "integral"):
        raise ValueError(f"{name} must hold integer class indices 0 .. n_classes-1 "
                         f"(columns of {cols}), got dtype {y.dtype}")
    if B.is_traced(y):
        return ~xp.all((y >= 0) & (y < n_classes))
    bad = (y < 0) | (y >= n_classes)
    if bool(xp.any(bad)):
        i = B.first_index(bad, xp)
        raise ValueError(f"{name} must be class indices in 0 .. {n_classes - 1}; element {i} "
                         f"is {B.show(B.to_numpy(y)[i])}")
    return xp.asarray(False)


def _check_proba(name, p, xp):
    _float_input(name, p, xp, 2)
    flag = _finite_or_flag(name, p, xp)
    if B.is_traced(p):
        return flag | ~xp.all((p >= 0) & (p <= 1))
    if not bool(xp.all((p >= 0) & (p <= 1))):
        raise ValueError(f"{name} must hold probabilities in [0, 1]")
    return flag


def _descending_cumsum(p, xp):
    """Rows sorted by decreasing probability and their inclusive cumulative sums."""
    d = xp.flip(xp.sort(p, axis=1), axis=1)
    return d, xp.cumulative_sum(d, axis=1)


def _aps_scores(p, y, xp):
    """APS score of the true class: the mass of every class with ``p >= p_true``.

    Non-randomised, and tied classes enter together (the score is the
    cumulative sum at the end of the true class's tie group), so the order of
    tied classes does not matter.
    """
    K = p.shape[1]
    onehot = xp.astype(xp.reshape(y, (-1, 1)) == xp.reshape(xp.arange(K), (1, -1)), p.dtype)
    p_true = xp.sum(p * onehot, axis=1)
    d, cs = _descending_cumsum(p, xp)
    # cs is non-decreasing, so the largest cs over d >= p_true is at the tie group's end
    return xp.max(xp.where(d >= xp.reshape(p_true, (-1, 1)), cs, xp.zeros_like(cs)), axis=1), \
        p_true


def _aps_sets(p, q, xp):
    """Classes by decreasing probability until the mass reaches ``q_hat``, crossing one included.

    Class ``j`` is in the set when the mass of the classes strictly more
    probable than ``j`` is below ``q_hat`` (MAPIE's ``include_last_label=True``).
    Once the mass has reached ``q_hat`` nothing more is added, so a class of
    probability 0 in a row that sums to 1 never is (for a one-hot row and
    ``q_hat = 1`` the set is the argmax alone, as in MAPIE since its PR 255,
    MAPIE issues 254 and 266). The set is ``{j : p_j >= t}`` with ``t`` the
    probability at the last sorted position kept, so tied classes are all in
    or all out. The mass before a position is the previous cumulative sum
    itself (no subtraction), so the comparison has no rounding of its own.
    """
    d, cs = _descending_cumsum(p, xp)
    K = p.shape[1]
    # mass before each sorted position: the exclusive cumulative sum
    before = xp.concat([xp.zeros_like(cs[:, :1]), cs[:, :K - 1]], axis=1)
    keep = xp.sum(xp.astype(before < q, xp.int32), axis=1)
    pos = xp.reshape(xp.arange(K), (1, -1))
    inf = xp.asarray(math.inf, dtype=d.dtype)
    # d is descending: the smallest d over the kept prefix is d[keep - 1] (+inf if none)
    t = xp.min(xp.where(pos < xp.reshape(keep, (-1, 1)), d, inf), axis=1)
    return p >= xp.reshape(t, (-1, 1))


def split_conformal_classification(y_calib: ArrayLike, proba_calib: ArrayLike,
                                   proba_test: ArrayLike, *, alpha: float = 0.1,
                                   method: str = "lac") -> ConformalSets:
    """Split-conformal prediction sets from class probabilities (LAC or APS).

    Calibration scores, then ``q_hat`` as in :func:`conformal_quantile`:

    * ``"lac"`` (least ambiguous set-valued classifier; Sadinle, Lei &
      Wasserman 2019): score ``1 - p_true``; the set of a test point is every
      class with ``1 - p_j <= q_hat``. Sets may be empty.
    * ``"aps"`` (adaptive prediction sets; Romano, Sesia & Candès 2020),
      **non-randomised**: the score is the total probability of the classes at
      least as probable as the true class (tied classes enter together);
      the set takes classes in decreasing probability until the mass reaches
      ``q_hat``, the class that crosses it included, and no class after it
      (MAPIE's ``include_last_label=True``): a class of probability 0 is
      never added once the mass has reached ``q_hat`` (a one-hot row gives
      its argmax alone, also at ``q_hat = 1``). Never empty when
      ``q_hat > 0``. The randomised variant (exact coverage) is not
      implemented; the non-randomised one covers at least ``1 - alpha``,
      often more, save for true classes given probability 0.

    Under exchangeability of calibration and test examples, the set contains
    the true class with probability at least ``1 - alpha`` (for APS: less the
    probability that the model gives the true class probability 0, since such
    a class is not added even when its score equals ``q_hat``).

    Parameters
    ----------
    y_calib : int array (n,)
        True classes of the calibration examples as column indices of
        ``proba_calib`` (0 .. n_classes-1). String labels: encode them first.
    proba_calib : array (n, n_classes)
        Predicted probabilities on the calibration set, in [0, 1]. Rows are
        not checked to sum to 1 (APS assumes they do).
    proba_test : array (m, n_classes)
        Predicted probabilities on the test points.
    alpha : float, Fraction or str, keyword
        Miscoverage level in (0, 1) (static); see :func:`conformal_rank`.
    method : {"lac", "aps"}, keyword

    Returns
    -------
    ConformalSets
        ``sets`` (bool, ``(m, n_classes)``), ``q_hat``, ``k``,
        ``n_calibration``, ``alpha``, ``method``. With ``k > n`` every set is
        the full label set.

    Warns
    -----
    CalibrationSizeWarning
        When ``n < 1/alpha - 1`` (``k > n``).

    Raises
    ------
    ValueError
        Bad shapes (``proba`` not 2-D, class counts that differ, lengths that
        differ), empty calibration set, labels that are not integer class
        indices in range, probabilities outside [0, 1] or NaN, a bad
        ``alpha`` or ``method``. Under ``jit`` invalid values give a NaN
        ``q_hat`` and empty sets.

    Examples
    --------
    >>> import calipers
    >>> res = calipers.split_conformal_classification(
    ...     [0, 1, 1], [[0.9, 0.1], [0.4, 0.6], [0.7, 0.3]], [[0.8, 0.2]],
    ...     alpha=0.25, method="lac")
    >>> res.k, round(float(res.q_hat), 6), res.sets.tolist()
    (3, 0.7, [[True, False]])
    """
    method = V.choice(method, "method", ("lac", "aps"))
    xp, (y_calib, proba_calib, proba_test) = B.as_arrays(y_calib, proba_calib, proba_test)
    B.check_1d("y_calib", y_calib)
    inv = _check_proba("proba_calib", proba_calib, xp)
    inv_test = _check_proba("proba_test", proba_test, xp)
    K = proba_calib.shape[1]
    if proba_test.shape[1] != K:
        raise ValueError(f"proba_test has {proba_test.shape[1]} classes but proba_calib has {K}; "
                         "they must match")
    B.check_same_length(y_calib=y_calib, proba_calib=proba_calib)
    B.check_nonempty("y_calib", y_calib)
    inv = inv | _check_labels(y_calib, K, xp)
    acc = B.acc_float(xp)
    pc = xp.astype(proba_calib, acc)
    pt = xp.astype(proba_test, acc)
    if method == "lac":
        onehot = xp.reshape(y_calib, (-1, 1)) == xp.reshape(xp.arange(K), (1, -1))
        scores = 1 - xp.sum(xp.where(onehot, pc, xp.zeros_like(pc)), axis=1)
    else:
        scores, _ = _aps_scores(pc, y_calib, xp)
    q, k, n = _quantile(scores, alpha, xp, invalid=inv)
    if method == "lac":
        sets = (1 - pt) <= q  # the calibration score's own formula, so equal values compare equal
    else:
        sets = _aps_sets(pt, q, xp)
    sets = sets & ~xp.reshape(xp.asarray(inv_test), (1, 1))
    out = B.out_float(xp, proba_calib, proba_test)
    return ConformalSets(sets=sets, q_hat=B.finalize(xp.astype(q, out), xp), k=k,
                         n_calibration=n,
                         alpha=float(alpha) if not isinstance(alpha, str) else alpha,
                         method=method)


# --------------------------------------------------------------------------
# evaluation on a test set
# --------------------------------------------------------------------------

def _mean(values, sample_weight, xp):
    if sample_weight is None:
        return xp.mean(values)
    w = xp.astype(sample_weight, values.dtype)
    return xp.sum(values * w) / xp.sum(w)


def _prep_weight(sample_weight, xp):
    """``(weights, invalid flag)``: checked weights with a positive sum (a boolean mask
    as 0/1 integers), or ``(None, False)``. The caller checks the length."""
    if sample_weight is None:
        return None, xp.asarray(False)
    B.check_1d("sample_weight", sample_weight)
    invalid = V.check_weights("sample_weight", sample_weight, xp, positive_sum=True)
    if xp.isdtype(sample_weight.dtype, "bool"):
        sample_weight = xp.astype(sample_weight, B.acc_int(xp))
    return sample_weight, invalid


def interval_coverage(y_true: ArrayLike, lower: ArrayLike, upper: ArrayLike, *,
                      sample_weight: ArrayLike = None) -> float | Array:
    """Share of test points inside their closed interval: ``mean(lower <= y <= upper)``.

    Closed, so a point exactly on a bound is covered (the inequality the
    conformal guarantee is proved for; MAPIE's ``regression_coverage_score``
    agrees). Infinite bounds are allowed. For conditional coverage per slice
    pass it to :func:`calipers.by_group`.

    Parameters
    ----------
    y_true, lower, upper : arrays (m,)
        ``y_true`` finite; bounds may be +-inf but not NaN.
    sample_weight : array (m,), optional
        Non-negative weights with a positive sum.

    Returns
    -------
    0-d float
        Coverage in [0, 1] (float64, float32 on JAX without x64).

    Raises
    ------
    ValueError
        Arrays not 1-D or of different lengths, empty input, NaN/inf in
        ``y_true``, NaN bounds, an upper bound below its lower bound (the
        rule of :func:`mean_interval_width`: swapped bounds are an error,
        not an interval that covers nothing), bad weights. Under ``jit``
        they give NaN.

    Examples
    --------
    >>> import calipers
    >>> float(calipers.interval_coverage([9.0, -9.0, 9.5, 3.0], [-9.0] * 4, [9.0] * 4))
    0.75
    """
    xp, (y_true, lower, upper, sample_weight) = B.as_arrays(y_true, lower, upper, sample_weight)
    for name, a in (("y_true", y_true), ("lower", lower), ("upper", upper)):
        _float_input(name, a, xp, 1)
    B.check_same_length(y_true=y_true, lower=lower, upper=upper, sample_weight=sample_weight)
    B.check_nonempty("y_true", y_true)
    sample_weight, invalid = _prep_weight(sample_weight, xp)
    invalid = invalid | _finite_or_flag("y_true", y_true, xp)
    invalid = invalid | V.check_interval_bounds(lower, upper, xp)
    acc = B.acc_float(xp)
    y = xp.astype(y_true, acc)
    inside = xp.astype((xp.astype(lower, acc) <= y) & (y <= xp.astype(upper, acc)), acc)
    return B.finalize(B.nan_if(invalid, _mean(inside, sample_weight, xp), xp), xp)


def mean_interval_width(lower: ArrayLike, upper: ArrayLike, *,
                        sample_weight: ArrayLike = None) -> float | Array:
    """Mean width ``mean(upper - lower)``; +inf when any interval is infinite.

    Parameters
    ----------
    lower, upper : arrays (m,)
        Bounds (+-inf allowed, NaN not).
    sample_weight : array (m,), optional

    Returns
    -------
    0-d float
        In the bounds' float dtype (float64 for integers).

    Raises
    ------
    ValueError
        Arrays not 1-D, of different lengths or empty, NaN bounds, an upper
        bound below its lower bound, bad weights. Under ``jit`` they give NaN.
    """
    xp, (lower, upper, sample_weight) = B.as_arrays(lower, upper, sample_weight)
    for name, a in (("lower", lower), ("upper", upper)):
        _float_input(name, a, xp, 1)
    B.check_same_length(lower=lower, upper=upper, sample_weight=sample_weight)
    B.check_nonempty("lower", lower)
    sample_weight, bad_w = _prep_weight(sample_weight, xp)
    acc = B.acc_float(xp)
    lo, hi = xp.astype(lower, acc), xp.astype(upper, acc)
    bad = V.check_interval_bounds(lower, upper, xp) | bad_w
    width = hi - lo
    if sample_weight is not None:
        # weight 0 on an infinite interval leaves it out (0 * inf would be NaN)
        width = xp.where(xp.astype(sample_weight, acc) > 0, width, xp.zeros_like(width))
    out = B.out_float(xp, lower, upper)
    return B.finalize(xp.astype(B.nan_if(bad, _mean(width, sample_weight, xp), xp), out), xp)


def _check_sets(sets, xp):
    if sets.ndim != 2:
        raise ValueError(f"prediction_sets must be 2-D (m, n_classes), got shape "
                         f"{tuple(sets.shape)}")
    if not xp.isdtype(sets.dtype, "bool"):
        raise ValueError(f"prediction_sets must be a boolean array, got dtype {sets.dtype}")


def set_coverage(y_true: ArrayLike, prediction_sets: ArrayLike, *,
                 sample_weight: ArrayLike = None) -> float | Array:
    """Share of test points whose set contains the true class.

    Parameters
    ----------
    y_true : int array (m,)
        True classes as column indices of ``prediction_sets``.
    prediction_sets : bool array (m, n_classes)
        For example ``split_conformal_classification(...).sets``.
    sample_weight : array (m,), optional

    Returns
    -------
    0-d float

    Raises
    ------
    ValueError
        ``prediction_sets`` not a 2-D boolean array, lengths that differ,
        empty input, labels out of range, bad weights. Under ``jit`` invalid
        labels or weights give NaN.

    Examples
    --------
    >>> import calipers
    >>> float(calipers.set_coverage([0, 1], [[True, False], [True, False]]))
    0.5
    """
    xp, (y_true, sets, sample_weight) = B.as_arrays(y_true, prediction_sets, sample_weight)
    B.check_1d("y_true", y_true)
    _check_sets(sets, xp)
    B.check_same_length(y_true=y_true, prediction_sets=sets, sample_weight=sample_weight)
    B.check_nonempty("y_true", y_true)
    sample_weight, invalid = _prep_weight(sample_weight, xp)
    K = sets.shape[1]
    invalid = invalid | _check_labels(y_true, K, xp, "y_true", "prediction_sets")
    onehot = xp.reshape(y_true, (-1, 1)) == xp.reshape(xp.arange(K), (1, -1))
    hit = xp.astype(xp.any(sets & onehot, axis=1), B.acc_float(xp))
    return B.finalize(B.nan_if(invalid, _mean(hit, sample_weight, xp), xp), xp)


def mean_set_size(prediction_sets: ArrayLike, *, sample_weight: ArrayLike = None) -> float | Array:
    """Mean number of classes per prediction set.

    Parameters
    ----------
    prediction_sets : bool array (m, n_classes)
    sample_weight : array (m,), optional

    Returns
    -------
    0-d float

    Raises
    ------
    ValueError
        Not a 2-D boolean array, empty, bad weights (negative, non-finite, or
        all zero). Under ``jit`` bad weights give NaN.
    """
    xp, (sets, sample_weight) = B.as_arrays(prediction_sets, sample_weight)
    _check_sets(sets, xp)
    B.check_same_length(prediction_sets=sets, sample_weight=sample_weight)
    B.check_nonempty("prediction_sets", sets)
    sample_weight, invalid = _prep_weight(sample_weight, xp)
    size = xp.astype(xp.sum(xp.astype(sets, B.acc_int(xp)), axis=1), B.acc_float(xp))
    return B.finalize(B.nan_if(invalid, _mean(size, sample_weight, xp), xp), xp)
