"""Binary threshold-free metrics: ROC and PR curves, ROC AUC, average precision.

All of them stand on the rank-statistics core :mod:`calipers._kernels.rankstats`: one
ascending sort of the scores, tie groups from
:func:`calipers._core.xp.group_bounds`, and prefix sums of positive and
negative weight; ROC AUC is its Mann-Whitney count and average precision its
step sum. A tie group is one threshold, so every metric here is independent
of the order of tied rows.

Counts are accumulated in integers when there are no weights or the weights
are integers (bootstrap counts), else in the widest float the backend gives
(float32 running counts stop at 2**24). Results are at least float32
(float16 / bfloat16 scores give float32), float64 for float64 input."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._core import xp as B
from .._kernels import rankstats as R
from .._core import validation as V
from .._core.compile import compiled, host_kernels
from .._core.types import Array, ArrayLike

__all__ = [
    "roc_curve",
    "precision_recall_curve",
    "roc_auc_score",
    "average_precision_score",
    "precision_recall_auc",
    "precision_at_k",
    "recall_at_k",
]


_prepare = R.prepare_binary
_Binary = R.Binary


class _Stats(NamedTuple):
    s: Any    # scores, ascending
    wp: Any   # positive weight per sorted row
    Cp: Any   # prefix sums (length n + 1) of positive weight
    Cn: Any   # ... of negative weight
    lo: Any   # first index of each row's tie group
    hi: Any   # last index of each row's tie group
    P: Any    # total positive weight (accumulation float)
    N: Any    # total negative weight


def _sorted_stats(d: _Binary) -> _Stats:
    """The family's one sort (:func:`calipers._kernels.rankstats.sort_groups`) with class weights."""
    xp = d.xp
    tg = R.sort_groups(d.y, d.s, xp)
    cw = R.class_weights(tg, None if d.w is None else xp.take(d.w, tg.order), xp)
    return _Stats(tg.s, cw.wp, cw.Cp, cw.Cn, tg.lo, tg.hi, _f(cw.P, xp), _f(cw.N, xp))


class _Points(NamedTuple):
    """Each tie group's ROC/PR point, in counts, at every row of the group."""

    rep: Any  # True on one row per tie group (its last row)
    tp: Any   # positive weight with score >= the group's score
    fp: Any   # negative weight with score >= the group's score
    tp0: Any  # ... with score > the group's score (the previous point)
    fp0: Any


def _group_points(st: _Stats, xp) -> _Points:
    n = st.s.shape[0]
    idx = xp.arange(n, dtype=st.hi.dtype, device=B.device(st.s))
    return _Points(st.hi == idx,
                   st.P - _f(xp.take(st.Cp, st.lo), xp), st.N - _f(xp.take(st.Cn, st.lo), xp),
                   st.P - _f(xp.take(st.Cp, st.hi + 1), xp),
                   st.N - _f(xp.take(st.Cn, st.hi + 1), xp))


def _f(x, xp):
    return xp.astype(x, B.acc_float(xp))


def _div(a, b, xp):
    """``a / b`` without a 0/0 warning; callers mark ``b == 0`` as undefined (NaN)."""
    return a / xp.where(b == 0, 1.0, b)


def _result(value, d: _Binary, undefined, what: str):
    """Cast, turn invalid input into NaN, warn (eagerly) when undefined."""
    return B.scalar_result(value, d.xp, out=d.out, invalid=d.invalid, undefined=undefined,
                           what=what)


# --------------------------------------------------------------------------
# ROC AUC
# --------------------------------------------------------------------------

@host_kernels
@compiled(rows=("y_true", "y_score"), weight="sample_weight")
def roc_auc_score(y_true: ArrayLike, y_score: ArrayLike, *, sample_weight: ArrayLike = None,
                  max_fpr: float | None = None, pos_label: Any = None,
                  multi_class: str = "raise", average: str | None = "macro",
                  labels: ArrayLike = None) -> float | Array:
    """Area under the ROC curve of a binary problem, ties counted exactly.

    AUC is the Mann-Whitney statistic: the share of (positive, negative) pairs
    ranked correctly, a tied pair counting 1/2 (Hanley & McNeil 1982). It equals
    the trapezoidal area under :func:`roc_curve`. With ``sample_weight`` each
    pair counts ``w_pos * w_neg``.

    Parameters
    ----------
    y_true : array of shape (n,)
        Labels in {0, 1} (or bool); other labels need ``pos_label``.
    y_score : array of shape (n,)
        Real scores, higher means more likely positive. Finite.
    sample_weight : array of shape (n,), optional
        Non-negative weights. Integer weights (bootstrap counts) are
        accumulated exactly in integers: on NumPy at any size (past int64
        in Python integers, one correctly rounded division); elsewhere the
        pair count ``2 P N`` (``P``, ``N`` the total positive and negative
        weight) must stay at most ``2**63 - 1``, and on JAX without x64
        ``2 N`` at most ``2**31 - 1``.
    max_fpr : float in (0, 1], optional
        Return the McClish-standardised partial AUC over FPR in [0, max_fpr]:
        ``0.5 * (1 + (A - max_fpr**2/2) / (max_fpr - max_fpr**2/2))``, the ROC
        curve interpolated linearly at ``max_fpr`` (scikit-learn's definition).
    pos_label : scalar, optional
        The label of the positive class when labels are not {0, 1} or {-1, 1}
        (1 is positive for those, as scikit-learn infers).
    multi_class, average, labels
        2-D input, dispatched as scikit-learn does (:mod:`calipers._ranking.multilabel`):
        a 2-D 0/1 indicator ``y_true`` (multilabel) gives one AUC per column,
        averaged by ``average`` ('macro', 'weighted', 'micro', 'samples',
        None); a (n, 1) ``y_score`` is the binary score column; a 1-D
        multiclass ``y_true`` with (n, C) scores needs ``multi_class`` "ovr"
        or "ovo" and is :func:`calipers.multiclass_roc_auc_score` (see it for
        ``average`` and ``labels``; the default ``"raise"`` refuses it, as
        scikit-learn does).

    Returns
    -------
    0-d array (NumPy scalar on NumPy): float64 for float64 (and integer)
    scores, float32 for float32, float16 and bfloat16 scores (the counts are
    exact; a float16 result would keep three digits). NaN when undefined:
    only one class present (also for all-zero weight of a class), with an
    :class:`UndefinedMetricWarning` in eager mode, as scikit-learn 1.9.

    Raises
    ------
    ValueError
        Shapes not 1-D or of different length, empty input, NaN/inf scores,
        labels outside {0, 1} without ``pos_label``, negative or non-finite
        weights, ``max_fpr`` outside (0, 1]; integer weights past the pair
        count's limit (not on NumPy, see ``sample_weight``). Under ``jit`` the
        value checks cannot raise: such input (and weights past that limit)
        gives NaN.

    Notes
    -----
    One sort of the scores (O(n log n)) and the Mann-Whitney count of
    :func:`calipers._kernels.rankstats.roc_auc`; counts in integers when unweighted
    or integer-weighted, one division at the end. On NumPy without weights the
    two classes are sorted apart (keys only) and pairs counted by binary
    search, which is faster than an argsort.

    Examples
    --------
    >>> import calipers
    >>> print(calipers.roc_auc_score([1, 0, 1, 0], [0.5, 0.5, 0.9, 0.1]))
    0.875
    >>> print(round(calipers.roc_auc_score([1, 0, 1, 0, 0], [0.9, 0.8, 0.8, 0.4, 0.2],
    ...                                    max_fpr=0.25), 6))
    0.821429
    """
    y_true = V.column_or_1d(y_true)  # (n, 1) labels are 1-D, as scikit-learn reads them
    if np.ndim(y_true) == 2 or np.ndim(y_score) == 2:
        # multilabel / multiclass / (n, 1) scores: scikit-learn's dispatch (calipers._ranking.multilabel)
        from .multilabel import roc_auc_2d

        result, y_score = roc_auc_2d(y_true, y_score, sample_weight=sample_weight,
                                     max_fpr=max_fpr, pos_label=pos_label,
                                     multi_class=multi_class, average=average, labels=labels)
        if result is not None:
            return result
    if max_fpr is not None and not (0 < max_fpr <= 1):
        raise ValueError(f"max_fpr must be in (0, 1], got {max_fpr!r}")
    labels_01 = R.numpy_01(y_true)     # 0/1 labels: nothing for the label rules to say
    if not labels_01:
        V.check_binary_for_1d_scores(
            y_true, y_score, pos_label,
            note="" if multi_class in ("ovr", "ovo") else " (and multi_class must be in "
                                                          "('ovo', 'ovr') for multiclass y_true)")
    d = _prepare(y_true, y_score, sample_weight, pos_label, labels_01=labels_01)
    xp = d.xp
    if max_fpr is None or max_fpr == 1:
        value, undefined = R.roc_auc(d.y, d.s, d.w, xp, d.bits)
        return _result(value, d, undefined,
                       "Only one class is present in y_true. ROC AUC score is not defined in "
                       "that case: returning NaN")
    st = _sorted_stats(d)
    area = _partial_area(st, max_fpr, xp)
    min_area = 0.5 * max_fpr**2
    value = 0.5 * (1 + (area - min_area) / (max_fpr - min_area))
    undefined = (st.P == 0) | (st.N == 0)
    return _result(value, d, undefined,
                   "Only one class is present in y_true. ROC AUC score is not defined in "
                   "that case: returning NaN")


def _partial_area(st: _Stats, max_fpr, xp):
    """Area under the ROC curve for FPR in [0, max_fpr], interpolating linearly."""
    g = _group_points(st, xp)
    rep = g.rep
    f1, t1 = _div(g.fp, st.N, xp), _div(g.tp, st.P, xp)     # at this threshold
    f0, t0 = _div(g.fp0, st.N, xp), _div(g.tp0, st.P, xp)   # at the next higher one
    width = f1 - f0
    m = max_fpr
    full = width * (t0 + t1) / 2
    safe = xp.where(width > 0, width, 1.0)
    alpha = (m - f0) / safe
    tm = t0 + alpha * (t1 - t0)
    part = (m - f0) * (t0 + tm) / 2
    seg = xp.where(f1 <= m, full, xp.where(f0 >= m, 0.0, part))
    return xp.sum(xp.where(rep, seg, 0.0))


# --------------------------------------------------------------------------
# average precision and the trapezoidal PR area
# --------------------------------------------------------------------------

@host_kernels
@compiled(rows=("y_true", "y_score"), weight="sample_weight")
def average_precision_score(y_true: ArrayLike, y_score: ArrayLike, *,
                            sample_weight: ArrayLike = None, pos_label: Any = None,
                            average: str | None = "macro") -> float | Array:
    """Average precision, the non-interpolated step sum over distinct thresholds.

    ``AP = sum_j (R_j - R_{j-1}) * P_j`` over the distinct score thresholds in
    decreasing order, tied scores entering together (scikit-learn's definition;
    Manning, Raghavan & Schütze 2008, ch. 8). Equivalently the mean, over
    positives, of the precision at the threshold equal to that positive's score.
    No interpolation: constant scores give the prevalence (scikit-learn issue #13074,
    PR #9017: the interpolated variant overstates AP).
    The trapezoidal area is :func:`precision_recall_auc`.

    Parameters and dtypes as :func:`roc_auc_score`; ``average`` ('macro',
    'weighted', 'micro', 'samples', None) applies to a 2-D indicator
    ``y_true`` or to a multiclass ``y_true`` with (n, C) scores (one-vs-rest
    columns, classes the sorted labels of ``y_true``), with ``pos_label``
    fixed to 1 there, as scikit-learn.

    Returns
    -------
    0-d float. NaN with an :class:`UndefinedMetricWarning` when there is no
    positive weight (scikit-learn returns 0.0 there; calipers does not report a
    number for an undefined quantity).

    Raises
    ------
    ValueError
        As :func:`roc_auc_score`. Under ``jit`` invalid input gives NaN.

    Examples
    --------
    >>> import calipers
    >>> print(round(calipers.average_precision_score([1, 0, 1], [0.9, 0.8, 0.7]), 6))
    0.833333
    >>> print(calipers.average_precision_score([0, 1, 0, 0, 1], [0.3] * 5))
    0.4
    """
    y_true = V.column_or_1d(y_true)  # (n, 1) labels are 1-D, as scikit-learn reads them
    if np.ndim(y_true) == 2 or np.ndim(y_score) == 2:
        # multilabel / multiclass / (n, 1) scores: scikit-learn's dispatch (calipers._ranking.multilabel)
        from .multilabel import average_precision_2d

        result, y_score = average_precision_2d(y_true, y_score, sample_weight=sample_weight,
                                               pos_label=pos_label, average=average)
        if result is not None:
            return result
    labels_01 = R.numpy_01(y_true)     # 0/1 labels: nothing for the label rules to say
    if not labels_01:
        V.check_binary_for_1d_scores(y_true, y_score, pos_label)
    if pos_label is not None:
        from .multilabel import check_pos_label_present

        check_pos_label_present(y_true, pos_label)
    d = _prepare(y_true, y_score, sample_weight, pos_label, labels_01=labels_01)
    xp = d.xp
    value, undefined = R.average_precision(d.y, d.s, d.w, xp, d.bits)
    return _result(value, d, undefined,
                   "No positive class found in y_true: average precision is undefined; "
                   "returning NaN")


@host_kernels
@compiled(rows=("y_true", "y_score"), weight="sample_weight")
def precision_recall_auc(y_true: ArrayLike, y_score: ArrayLike, *, sample_weight: ArrayLike = None,
                         pos_label: Any = None) -> float | Array:
    """Trapezoidal area under the precision-recall curve (not average precision).

    The area by the trapezoidal rule over the points of
    :func:`precision_recall_curve`, starting at (recall 0, precision 1), as
    ``sklearn.metrics.auc(recall, precision)`` gives. Linear interpolation of
    precision is optimistic (Davis & Goadrich 2006); prefer
    :func:`average_precision_score` unless this exact quantity is wanted.
    Labels (1, 0, 1) with scores (0.9, 0.8, 0.7) give 19/24, AP 5/6.

    Returns NaN (with an :class:`UndefinedMetricWarning`) when there is no
    positive weight. Parameters, errors and jit behaviour as
    :func:`roc_auc_score`.

    Examples
    --------
    >>> import calipers
    >>> print(round(calipers.precision_recall_auc([1, 0, 1], [0.9, 0.8, 0.7]), 6))
    0.791667
    """
    d = _prepare(y_true, y_score, sample_weight, pos_label)
    xp = d.xp
    st = _sorted_stats(d)
    rep, t1, f1, t0, f0 = _group_points(st, xp)
    p1 = t1 / xp.where(t1 + f1 > 0, t1 + f1, 1.0)
    p0 = xp.where(t0 + f0 > 0, t0 / xp.where(t0 + f0 > 0, t0 + f0, 1.0), 1.0)
    area = _div(xp.sum(xp.where(rep, (t1 - t0) * (p0 + p1) / 2, 0.0)), st.P, xp)
    return _result(area, d, st.P == 0,
                   "PR AUC is undefined when y_true has no positive; returning NaN")


# --------------------------------------------------------------------------
# curves
# --------------------------------------------------------------------------

def _curve_points(d: _Binary):
    """Per tie group, in decreasing threshold order: (fps, tps, thresholds, keep).

    Eagerly (where the backend allows data-dependent shapes) only one point
    per group is returned; under ``jit`` every row carries its group's point
    (static length n) and ``keep`` marks the group representatives.
    """
    xp = d.xp
    if B.is_numpy(xp):
        return _curve_points_numpy(d)
    st = _sorted_stats(d)
    rep, tps, fps, _, _ = _group_points(st, xp)
    thr = st.s
    # JAX arrays that are concrete (eager) can be compacted although the
    # namespace reports no data-dependent shapes (that flag is about jit).
    compact = not B.is_traced(d.s, d.y, d.w) and (
        B.is_jax(xp) or B.supports_data_dependent_shapes(xp))
    if compact:
        tps, fps, thr = tps[rep], fps[rep], thr[rep]
    # decreasing thresholds
    return xp.flip(fps), xp.flip(tps), xp.flip(thr), st, compact


class _Totals(NamedTuple):
    P: Any
    N: Any


def _curve_points_numpy(d: _Binary):
    """NumPy: the same points with a few passes over memory (curves are memory-bound).

    Unweighted: no argsort. One keys-only sort of all scores gives the distinct
    thresholds and, from the tie-group starts, the rows at or above each; one
    keys-only sort of the positives' scores gives the positives at or above by
    binary search (the fewer queries of the two directions). Weighted: one
    argsort, prefix sums read off only at the ends of tie groups.
    """
    if d.w is None:
        return _curve_points_numpy_unweighted(d.y, d.s)
    order = np.argsort(d.s)[::-1]
    s = d.s[order]
    y = d.y[order]
    ends = np.flatnonzero(s[1:] != s[:-1])          # last row of each group but the final one
    ends = np.append(ends, s.shape[0] - 1)
    f = np.float64
    if d.w is None:
        tps = np.cumsum(y, dtype=np.int64)[ends].astype(f)
        fps = (ends + 1).astype(f) - tps
    else:
        w = d.w[order]
        cdt = np.int64 if np.issubdtype(w.dtype, np.integer) else f
        wp = np.where(y == 1, w, 0).astype(cdt)
        tps = np.cumsum(wp)[ends].astype(f)
        fps = np.cumsum(w.astype(cdt) - wp)[ends].astype(f)
    return fps, tps, s[ends], _Totals(tps[-1], fps[-1]), True


def _curve_points_numpy_unweighted(y, s, fast=None, taken=False):
    """Exact integer counts per distinct threshold (decreasing).

    Float scores: one pass (:func:`calipers._kernels.rankstats.one_pass`): the
    score table of heavily tied scores, else one sort of the packed keys, the
    points read at the tie-group starts. Otherwise two keys-only sorts.
    ``taken``: the caller has taken that pass already, its result ``fast``.
    """
    if not taken:
        fast = R.one_pass(y, s)
    if fast is not None:
        u, tp, fp = R.curve_points(fast)
        P, N = R.one_pass_totals(fast)
        f = np.float64
        return fp[::-1], tp[::-1], u[::-1].astype(s.dtype, copy=False), _Totals(
            f(P), f(N)), True
    ss = np.sort(s)
    n = ss.shape[0]
    new = np.empty(n, dtype=bool)
    new[0] = True
    np.not_equal(ss[1:], ss[:-1], out=new[1:])
    starts = np.flatnonzero(new)                    # first row of each tie group, ascending
    u = ss[starts]
    pos = np.sort(s[y == 1])
    P, k = pos.shape[0], u.shape[0]
    if k <= P:      # few thresholds (ties): one search per threshold
        tps = (P - np.searchsorted(pos, u, side="left"))[::-1]
    else:           # many thresholds: one search per positive, counted per threshold
        hits = np.bincount(np.searchsorted(u, pos, side="left"), minlength=k)
        tps = np.cumsum(hits[::-1], dtype=np.int64)
    at_or_above = (n - starts)[::-1]
    f = np.float64
    tps_f = tps.astype(f)
    fps_f = (at_or_above - tps).astype(f)
    return fps_f, tps_f, u[::-1], _Totals(f(P), f(n - P)), True


def _one_pass_numpy(d: _Binary):
    """NumPy, unweighted, valid input: :func:`calipers._kernels.rankstats.one_pass` (None
    where neither of its ways applies); False for any other input."""
    if not B.is_numpy(d.xp) or d.w is not None or bool(d.invalid):
        return False
    return R.one_pass(d.y, d.s, d.bits)


def _collinear_keep(x, y, xp):
    """Mask of points that are endpoints or where the curve changes direction."""
    m = x.shape[0]
    if m <= 2:
        return xp.ones(m, dtype=xp.bool, device=B.device(x))
    dx = x[1:] - x[:-1]
    dy = y[1:] - y[:-1]
    turn = dx[:-1] * dy[1:] != dy[:-1] * dx[1:]   # cross product of consecutive steps
    t = xp.ones(1, dtype=xp.bool, device=B.device(x))
    return xp.concat([t, turn, t])


def _curve_input(y_true, y_score, sample_weight, pos_label, **kw):
    """The curves' input: (n, 1) columns as 1-D, then rows of zero weight dropped eagerly.

    A row that counts for nothing makes no threshold (scikit-learn's
    ``_binary_clf_curve`` drops them too), so a zero weight is the same as
    leaving the row out. Under ``jit`` shapes are static: such rows stay, their
    point repeating the counts of the next higher threshold. All-zero weights
    are kept (the curve is then undefined and NaN).
    """
    d = _prepare(V.column_or_1d(y_true), V.column_or_1d(y_score), sample_weight, pos_label,
                 **kw)
    xp = d.xp
    if d.w is None or B.is_traced(d.s, d.y, d.w) or not (
            B.is_jax(xp) or B.supports_data_dependent_shapes(xp)):
        return d
    keep = d.w != 0
    if bool(xp.all(keep)) or not bool(xp.any(keep)):
        return d
    return d._replace(y=d.y[keep], s=d.s[keep], w=d.w[keep])


@host_kernels
def roc_curve(y_true: ArrayLike, y_score: ArrayLike, *, pos_label: Any = None,
              sample_weight: ArrayLike = None,
              drop_intermediate: bool = True) -> tuple[Array, Array, Array]:
    """Receiver operating characteristic curve (scikit-learn compatible).

    Returns ``(fpr, tpr, thresholds)``: thresholds in decreasing order, the first
    ``+inf`` (the point (0, 0)); a row is predicted positive iff
    ``score >= threshold``; one point per distinct score (a tie group moves the
    curve diagonally).

    ``drop_intermediate=True`` keeps the endpoints and every vertex where the
    curve changes direction, and drops collinear points (exact test on the
    weighted counts). This is the minimal curve; it differs from scikit-learn
    1.9, which keeps some collinear points (scikit-learn issue #31635, PR
    #31647). The area is the same either way.

    Shapes: eagerly the arrays have one element per distinct score plus one.
    Under ``jit`` (and on backends without data-dependent shapes) they have the
    static length n + 1, every row of a tie group repeating its group's point,
    and ``drop_intermediate`` is not applied (it needs data-dependent shapes);
    repeated points leave areas unchanged.

    ``fpr`` is NaN when there is no negative weight and ``tpr`` NaN when there is
    no positive weight (scikit-learn also returns NaN, with a warning); both
    warn with :class:`UndefinedMetricWarning` eagerly, in scikit-learn's words.

    Rows of zero ``sample_weight`` are dropped eagerly before the thresholds are
    built, as scikit-learn does: a zero weight is the same as leaving the row
    out (under ``jit`` the static shape keeps them, each repeating the counts
    of the next higher threshold). ``y_true`` / ``y_score`` of shape (n, 1) are
    read as 1-D (scikit-learn's ``column_or_1d``).

    Raises ``ValueError`` as :func:`roc_auc_score`; under ``jit`` invalid input
    turns every value into NaN.

    Examples
    --------
    >>> import calipers
    >>> fpr, tpr, thr = calipers.roc_curve([0, 0, 1, 1, 1], [0.1, 0.2, 0.6, 0.7, 0.8])
    >>> fpr.tolist(), tpr.tolist(), thr.tolist()
    ([0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [inf, 0.6, 0.1])
    """
    d = _curve_input(y_true, y_score, sample_weight, pos_label)
    xp = d.xp
    fast = _one_pass_numpy(d)
    if drop_intermediate and isinstance(fast, R.Packed):
        vertices = _roc_vertices_numpy(d, fast)
        if vertices is not None:
            return vertices
    if fast is False:
        fps, tps, thr, st, compact = _curve_points(d)
    else:       # the same points as _curve_points, from the pass already taken
        fps, tps, thr, st, compact = _curve_points_numpy_unweighted(d.y, d.s, fast, taken=True)
    zero = xp.zeros(1, dtype=fps.dtype, device=B.device(fps))
    fps = xp.concat([zero, fps])
    tps = xp.concat([zero, tps])
    thr = xp.concat([xp.full(1, math.inf, dtype=d.out, device=B.device(fps)),
                     xp.astype(thr, d.out)])
    if compact and drop_intermediate:
        keep = _collinear_keep(fps, tps, xp)
        fps, tps, thr = fps[keep], tps[keep], thr[keep]
    fpr = B.nan_if(d.invalid | (st.N == 0), _div(fps, st.N, xp), xp)
    tpr = B.nan_if(d.invalid | (st.P == 0), _div(tps, st.P, xp), xp)
    _warn_curve(d, st, "roc")
    return xp.astype(fpr, d.out), xp.astype(tpr, d.out), thr


def _roc_vertices_numpy(d: _Binary, pk):
    """NumPy, unweighted, untied float scores: the vertices straight from the packed sort.

    The same curve as the general path (every point where the direction
    changes, the endpoints), built without per-row arrays; None when the
    input does not take this path (a class missing, ties).
    """
    if pk.P == 0 or pk.P == pk.n:
        return None
    v = R.packed_roc_curve(pk)
    if v is None:
        return None
    return tuple(x.astype(d.out, copy=False) for x in v)


def _warn_curve(d, st, kind):
    """The curves' warnings: scikit-learn's words, then what calipers returns."""
    if B.is_traced(st.P) or bool(d.invalid):
        return
    if kind == "roc" and bool(st.N == 0):
        B.warn_undefined("No negative samples in y_true, false positive value should be "
                         "meaningless: the false positive rate is NaN")
    if kind == "roc" and bool(st.P == 0):
        B.warn_undefined("No positive samples in y_true, true positive value should be "
                         "meaningless: the true positive rate is NaN")
    if kind == "pr" and bool(st.P == 0):
        B.warn_undefined("No positive class found in y_true: recall is NaN for all thresholds "
                         "(scikit-learn sets it to one)")


@host_kernels
def precision_recall_curve(y_true: ArrayLike, y_score: ArrayLike, *, pos_label: Any = None,
                           sample_weight: ArrayLike = None,
                           drop_intermediate: bool = False) -> tuple[Array, Array, Array]:
    """Precision-recall pairs for each distinct threshold (scikit-learn compatible).

    Returns ``(precision, recall, thresholds)`` with thresholds increasing (one
    per distinct score); ``precision`` and ``recall`` have one more element, the
    final point (precision 1, recall 0). Predicted positive iff
    ``score >= threshold``.

    ``drop_intermediate=True`` drops thresholds at which the true-positive count
    does not change next to a change (scikit-learn's rule); it applies eagerly
    only, as in :func:`roc_curve`. Under ``jit`` the arrays have the static
    length n (+1), every row of a tie group repeating its group's point.

    Zero division: precision at a threshold is always defined (at least one row
    is predicted positive). Recall is NaN when there is no positive weight,
    with an :class:`UndefinedMetricWarning` opening with scikit-learn's words
    ("No positive class found in y_true"; scikit-learn sets recall to 1).

    Rows of zero ``sample_weight`` make no threshold (dropped eagerly, as
    scikit-learn does; under ``jit`` they stay in the static shape, repeating
    the counts of the next higher threshold: precision 0 at the top score), and (n, 1)
    columns are read as 1-D, as in :func:`roc_curve`.

    Raises ``ValueError`` as :func:`roc_auc_score`.
    """
    d = _curve_input(y_true, y_score, sample_weight, pos_label, score_name="y_score")
    xp = d.xp
    fps, tps, thr, st, compact = _curve_points(d)
    if compact and drop_intermediate and tps.shape[0] > 2:
        ch = tps[1:] != tps[:-1]
        t = xp.ones(1, dtype=xp.bool, device=B.device(tps))
        keep = xp.concat([t, ch[:-1] | ch[1:], t])
        fps, tps, thr = fps[keep], tps[keep], thr[keep]
    den = tps + fps
    precision = tps / xp.where(den > 0, den, 1.0)
    recall = _div(tps, st.P, xp)
    one = xp.ones(1, dtype=precision.dtype, device=B.device(precision))
    precision = B.nan_if(d.invalid, xp.concat([xp.flip(precision), one]), xp)
    recall = B.nan_if(d.invalid | (st.P == 0), xp.concat([xp.flip(recall), 0 * one]), xp)
    _warn_curve(d, st, "pr")
    return xp.astype(precision, d.out), xp.astype(recall, d.out), xp.astype(xp.flip(thr), d.out)


# --------------------------------------------------------------------------
# precision and recall at k
# --------------------------------------------------------------------------

def _at_k(y_true, y_score, k, sample_weight, pos_label):
    """Expected positive weight among the top ``k`` units of weight, ties by expectation.

    A row of integer weight w counts as w tied rows (repetition), so the top k
    holds k units of weight: sorted by score descending, each tie group enters
    whole while the cumulative weight stays within k, and the group straddling
    k enters with the share ``(k - weight above) / group weight`` of each of
    its rows (the expectation over all orders of the tied units).
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if k <= 0:
        raise ValueError(f"k must be a positive integer, got {k}")
    d = _prepare(y_true, y_score, sample_weight, pos_label)
    xp = d.xp
    n = d.s.shape[0]
    if d.w is None and k > n:
        raise ValueError(f"k={k} is larger than the number of samples n={n}")
    f = B.acc_float(xp)
    order = xp.argsort(d.s, descending=True, stable=True)
    s = xp.take(d.s, order)
    w = xp.ones(n, dtype=f, device=B.device(d.s)) if d.w is None \
        else xp.astype(xp.take(d.w, order), f)
    yf = xp.astype(xp.take(d.y, order), f)
    lo, hi = B.group_bounds(s, xp)
    C = B.prefix_sum(w, xp, f)                       # weight of the rows before index i
    before = xp.take(C, lo)                          # weight above the row's tie group
    group = xp.take(C, hi + 1) - before              # the tie group's weight
    room = xp.clip(k - before, 0.0, None)
    share = xp.where(group > 0, xp.minimum(room / xp.where(group > 0, group, 1.0), 1.0),
                     xp.astype(room > 0, f))
    tp = xp.sum(share * w * yf)
    total = C[n]
    too_few = total < k
    if d.w is not None and not B.is_traced(total) and bool(too_few):
        raise ValueError(f"k={k} is larger than the total sample_weight "
                         f"{B.show(B.to_numpy(total))}: the top k needs k units of weight")
    d = d._replace(invalid=d.invalid | too_few)
    P = xp.sum(w * yf)
    return d, tp, xp.asarray(float(k), dtype=f), P


@compiled(rows=("y_true", "y_score"), weight="sample_weight")
def precision_at_k(y_true: ArrayLike, y_score: ArrayLike, *, k: int,
                   sample_weight: ArrayLike = None, pos_label: Any = None) -> float | Array:
    """Precision among the k highest scores; ties at the k-th score by expectation.

    If the k-th highest score is shared by a tie group of which only part fits
    in the top k, every row of the group is counted with weight
    ``(k - n_above) / n_tied``: the expected value over all orderings of the
    ties (no dependence on row order, unlike ``argsort``-based top-k).

    ``sample_weight`` means repetition: a row of weight 3 is three tied rows,
    so the top k holds k units of weight, a tie group straddling the k-th unit
    enters by the same expectation, and precision is the expected positive
    weight in those k units divided by k (real weights extend the same rule to
    mass). scikit-learn has no such metric; torchmetrics' retrieval precision
    ignores weights.

    Returns a 0-d float of at least float32.
    Raises ``ValueError`` for ``k`` not a positive integer or ``k > n`` (static,
    raised under ``jit`` too), for a total ``sample_weight`` below ``k``
    (eagerly; NaN under ``jit``) and for the input errors of
    :func:`roc_auc_score`.

    Examples
    --------
    >>> import calipers
    >>> # the 2nd and 3rd highest scores tie: one of the two rows is in the top 2
    >>> print(calipers.precision_at_k([1, 1, 0], [0.9, 0.5, 0.5], k=2))
    0.75
    """
    d, tp, wk, _ = _at_k(y_true, y_score, k, sample_weight, pos_label)
    never = d.xp.asarray(False, device=B.device(d.s))  # k units always exist (else invalid)
    return _result(tp / wk, d, never, "")


@compiled(rows=("y_true", "y_score"), weight="sample_weight")
def recall_at_k(y_true: ArrayLike, y_score: ArrayLike, *, k: int, sample_weight: ArrayLike = None,
                pos_label: Any = None) -> float | Array:
    """Share of the positive weight found among the k highest scores.

    Ties at the k-th score by expectation, as :func:`precision_at_k`. NaN
    (with :class:`UndefinedMetricWarning`) when there is no positive weight.
    Errors as :func:`precision_at_k`.
    """
    d, tp, _, P = _at_k(y_true, y_score, k, sample_weight, pos_label)
    xp = d.xp
    undefined = P == 0
    return _result(tp / xp.where(undefined, 1.0, P), d, undefined,
                   "recall@k is undefined when y_true has no positive; returning NaN")
