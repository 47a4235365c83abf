"""Selective prediction (abstention): risk-coverage curve, AURC, E-AURC.

A model that may abstain keeps the rows whose confidence is at least a
threshold and answers those. Coverage is the kept share of the (weighted)
rows, selective risk the mean loss on them (Geifman & El-Yaniv 2017).

Ties: all rows with the same confidence are kept or rejected together, one
curve point per distinct confidence (the rule of :func:`calipers.roc_curve`).
The area AURC is Geifman's per-sample mean ``(1/n) sum_k r(k/n)``, averaged
over every order of the rows inside each tie group: by linearity the expected
loss of the first ``k`` rows is the loss before the group plus ``k - A`` times
the group's mean loss, so each group contributes a closed form with harmonic
numbers and no order is ever enumerated. Every value here is therefore
independent of the order of tied rows.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from ._core import xp as B
from ._core import validation as V
from ._core.compile import compiled
from ._core.types import Array, ArrayLike

__all__ = [
    "risk_coverage_curve",
    "aurc",
    "excess_aurc",
    "selective_risk",
    "coverage_at_risk",
    "SelectivePoint",
]

_METHODS = ("tie_average", "step")


class SelectivePoint(NamedTuple):
    """One operating point of a selective classifier (a JAX pytree).

    Attributes
    ----------
    coverage : float
        Share of the total weight kept (confidence >= ``threshold``).
    risk : float
        Mean loss over the kept rows (NaN when nothing is kept).
    threshold : float
        The confidence threshold; ``+inf`` when no threshold qualifies.
    """

    coverage: Any
    risk: Any
    threshold: Any


class _Sel(NamedTuple):
    xp: Any
    c: Any        # confidence
    loss: Any     # per-row loss
    w: Any        # weights or None
    invalid: Any  # scalar bool (jit): input broke a rule
    out: Any      # output float dtype


def _prepare(confidence, y_true, y_pred, loss, sample_weight) -> _Sel:
    xp, (c, yt, yp, l, w) = B.as_arrays(confidence, y_true, y_pred, loss, sample_weight)
    B.check_1d("confidence", c)
    V.check_real_values("confidence", c, xp, "numeric scores")
    if l is None:
        if yt is None or yp is None:
            raise ValueError("give either loss=, or both y_true and y_pred (0/1 error)")
        B.check_1d("y_true", yt)
        B.check_1d("y_pred", yp)
        B.check_same_length(confidence=c, y_true=yt, y_pred=yp)
        if V.is_text(yt) or V.is_text(yp):
            # strings or objects: the label layer's encoding (sortable labels of one kind;
            # an object array holding None is refused naming the argument)
            _, (ct, cp) = V.encode_labels(yt, yp, names=("y_true", "y_pred"), infer_from=2)
            yt, yp = ct, cp
        l = xp.astype(yt != yp, B.acc_int(xp))
    else:
        if yt is not None or yp is not None:
            raise ValueError("give either loss=, or y_true and y_pred, not both")
        B.check_1d("loss", l)
        B.check_numeric("loss", l, xp)
        if xp.isdtype(l.dtype, "bool"):
            l = xp.astype(l, B.acc_int(xp))
        B.check_same_length(confidence=c, loss=l)
        V.check_finite("loss", l, xp)
    if w is not None:
        B.check_1d("sample_weight", w)
        B.check_same_length(confidence=c, sample_weight=w)
        invalid = V.check_weights("sample_weight", w, xp)
    else:
        invalid = xp.asarray(False)
    B.check_nonempty("confidence", c)
    V.check_finite("confidence", c, xp)
    if B.is_traced(c, l, w):
        for x in (c, l):
            if xp.isdtype(x.dtype, "real floating"):
                invalid = invalid | ~xp.all(xp.isfinite(x))
    return _Sel(xp, c, l, w, invalid, B.out_float(xp, c, l if xp.isdtype(
        l.dtype, "real floating") else None))


class _Groups(NamedTuple):
    """Per sorted row (confidence descending), its tie group's totals."""

    c: Any     # confidence, descending
    rep: Any   # True on the last row of each tie group
    A: Any     # weight before the group (float)
    M: Any     # weight of the group
    LA: Any    # loss before the group
    G: Any     # loss of the group
    W: Any     # total weight (0-d float)
    L: Any     # total loss


def _groups(d: _Sel) -> _Groups:
    xp = d.xp
    f = B.acc_float(xp)
    order = xp.argsort(d.c, descending=True, stable=True)
    c = xp.take(d.c, order)
    loss = xp.take(d.loss, order)
    exact = xp.isdtype(loss.dtype, "integral") and (d.w is None or xp.isdtype(d.w.dtype, "integral"))
    cdt = B.acc_int(xp) if exact else f
    if d.w is None:
        wcdt = B.acc_int(xp)
        w = xp.ones(c.shape[0], dtype=wcdt, device=B.device(c))
        wl = xp.astype(loss, cdt)
    else:
        wcdt = B.acc_int(xp) if xp.isdtype(d.w.dtype, "integral") else f
        w = xp.astype(xp.take(d.w, order), wcdt)
        wl = xp.astype(w, cdt) * xp.astype(loss, cdt)
    CW = B.prefix_sum(w, xp, wcdt)   # integer when the weights are: exact counts
    CL = B.prefix_sum(wl, xp, cdt)
    lo, hi = B.group_bounds(c, xp)
    n = c.shape[0]
    idx = xp.arange(n, dtype=hi.dtype, device=B.device(c))

    def at(C, i):
        return xp.astype(xp.take(C, i), f)

    A, LA = at(CW, lo), at(CL, lo)
    return _Groups(c, hi == idx, A, at(CW, hi + 1) - A, LA, at(CL, hi + 1) - LA,
                   xp.astype(CW[n], f), xp.astype(CL[n], f))


def _harmonic_diff(p, q, xp):
    """``H(q) - H(p)`` for real ``0 <= p <= q``, ``H(x) = digamma(x + 1) + Euler's gamma``.

    For integers it is ``sum_{k=p+1}^{q} 1/k``. Written so that the difference
    keeps its relative precision when ``p`` is large and ``q - p`` small
    (subtracting two harmonic numbers near ``log n`` would not): for
    ``p < 16``, 16 steps of the recurrence ``H(x) = H(x + 1) - 1/(x + 1)`` as
    exact differences, then the asymptotic series of ``digamma(x + 1/2)`` at
    ``x >= 16.5`` through ``log1p``/``expm1`` (truncation error below 1e-16
    relative).
    """
    if B.is_numpy(xp):  # the shift only where it is needed: far fewer passes
        out = _hdiff_series(p, q, 0, xp)
        small = p < 16
        if small.any():
            out[small] = _hdiff_series(p[small], q[small], 16, xp)
        return out
    return xp.where(p < 16, _hdiff_series(p, q, 16, xp),
                    _hdiff_series(xp.maximum(p, 16.0), xp.maximum(q, 16.0), 0, xp))


def _hdiff_series(p, q, S, xp):
    """``H(q) - H(p)`` by ``S`` recurrence steps then the series at ``p + S + 1/2``."""
    d = q - p
    corr = xp.zeros_like(p)
    for j in range(1, S + 1):
        corr = corr + d / ((q + j) * (p + j))
    P = p + (S + 0.5)
    lr = xp.log1p(d / P)
    out = lr
    # digamma(x + 1/2) ~ log x + sum_k c_k x^(-2k)
    for k, ck in ((1, 1 / 24), (2, -7 / 960), (3, 31 / 8064), (4, -127 / 30720),
                  (5, 511 / 67584)):
        out = out + ck * P ** (-2 * k) * xp.expm1(-2 * k * lr)
    return out + corr


def _aurc_value(g: _Groups, method: str, xp):
    """AURC as a 0-d float (NaN-free arithmetic; callers mark W == 0)."""
    safe_M = xp.where(g.M > 0, g.M, 1.0)
    if method == "step":
        # sum over groups of (group coverage width) * (selective risk at the group)
        K = g.A + g.M
        term = g.M * g.LA / xp.where(K > 0, K, 1.0) + g.M * g.G / xp.where(K > 0, K, 1.0)
    else:
        # sum_{u=A+1}^{A+M} (LA + (u - A) G/M) / u  =  (LA - A G/M)(H(A+M) - H(A)) + G
        coef = (g.LA * g.M - g.A * g.G) / safe_M
        term = coef * _harmonic_diff(g.A, g.A + g.M, xp) + g.G
    term = xp.where(g.rep & (g.M > 0), term, 0.0)
    return xp.sum(term) / xp.where(g.W > 0, g.W, 1.0)


def _compact_numpy(g: _Groups, xp) -> _Groups:
    """NumPy: one row per tie group before the per-group arithmetic (fewer passes)."""
    if not B.is_numpy(xp):
        return g
    k = g.rep
    return _Groups(g.c[k], g.rep[k], g.A[k], g.M[k], g.LA[k], g.G[k], g.W, g.L)


def _finish(value, d: _Sel, undefined, what):
    return B.scalar_result(value, d.xp, out=d.out, invalid=d.invalid, undefined=undefined,
                           what=what)


def _check_method(method):
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")


_ZERO_W = "total sample_weight is zero: the selective risk is undefined; returning NaN"


def risk_coverage_curve(confidence: ArrayLike, y_true: ArrayLike = None, y_pred: ArrayLike = None,
                        *, loss: ArrayLike = None,
                        sample_weight: ArrayLike = None) -> tuple[Array, Array, Array]:
    """Risk-coverage curve of a selective classifier (Geifman & El-Yaniv 2017).

    A row is kept iff ``confidence >= threshold``. For each distinct confidence
    (decreasing), ``coverage`` is the kept share of the total weight and
    ``risk`` the weighted mean loss of the kept rows. Rows with the same
    confidence are kept together: one point per tie group, so the curve does
    not depend on the order of tied rows.

    Parameters
    ----------
    confidence : array of shape (n,)
        Finite real scores, higher means more confident (kept first).
    y_true, y_pred : arrays of shape (n,), optional
        Labels and predictions; the loss is the 0/1 error ``y_true != y_pred``.
    loss : array of shape (n,), optional
        Any finite per-row loss instead of ``y_true``/``y_pred`` (give one or
        the other).
    sample_weight : array of shape (n,), optional
        Non-negative weights; integer weights mean repetition and are summed
        in integers.

    Returns
    -------
    coverage, risk, thresholds : float arrays
        In decreasing threshold order; the last point has coverage 1. Eagerly
        (NumPy, JAX, array-api-strict with data-dependent shapes) one element
        per distinct confidence; under ``jit`` (and without data-dependent
        shapes) the static length n, every row of a tie group repeating its
        group's point. ``risk`` is NaN at a point that keeps zero weight; all
        values are NaN (with an :class:`UndefinedMetricWarning`) when the total
        weight is zero.

    Raises
    ------
    ValueError
        Arrays not 1-D or of different lengths, empty input, non-finite
        confidence or loss, negative or non-finite weights, neither or both of
        ``loss`` and ``y_true``/``y_pred``. Under ``jit`` invalid values give NaN.

    Examples
    --------
    >>> import calipers
    >>> cov, risk, thr = calipers.risk_coverage_curve(
    ...     [0.9, 0.9, 0.8, 0.8, 0.8, 0.6, 0.6, 0.3], loss=[0, 1, 0, 0, 1, 1, 0, 1])
    >>> cov.tolist(), [round(r, 4) for r in risk.tolist()]
    ([0.25, 0.625, 0.875, 1.0], [0.5, 0.4, 0.4286, 0.5])
    """
    d = _prepare(confidence, y_true, y_pred, loss, sample_weight)
    xp = d.xp
    g = _groups(d)
    K = g.A + g.M
    cov = K / xp.where(g.W > 0, g.W, 1.0)
    risk = B.nan_if(K == 0, (g.LA + g.G) / xp.where(K > 0, K, 1.0), xp)
    thr = g.c
    compact = not B.is_traced(d.c, d.loss, d.w) and (
        B.is_jax(xp) or B.supports_data_dependent_shapes(xp))
    if compact:
        cov, risk, thr = cov[g.rep], risk[g.rep], thr[g.rep]
    bad = d.invalid | (g.W == 0)
    cov = xp.astype(B.nan_if(bad, cov, xp), d.out)
    risk = xp.astype(B.nan_if(bad, risk, xp), d.out)
    if not B.is_traced(g.W) and not bool(d.invalid):
        if bool(g.W == 0):
            B.warn_undefined(_ZERO_W)
        elif bool(xp.any(xp.isnan(risk))):
            B.warn_undefined("a confidence group at the top keeps zero weight: its "
                             "selective risk is NaN")
    return cov, risk, xp.astype(thr, B.out_float(xp, d.c))


@compiled(rows=("confidence", "y_true", "y_pred", "loss"), weight="sample_weight")
def aurc(confidence: ArrayLike, y_true: ArrayLike = None, y_pred: ArrayLike = None, *,
         loss: ArrayLike = None, sample_weight: ArrayLike = None,
         method: str = "tie_average") -> float | Array:
    """Area under the risk-coverage curve (AURC; Geifman et al. 2019).

    ``method="tie_average"`` (default): Geifman's estimator
    ``(1/n) sum_{k=1}^{n} r(k/n)``, ``r(k/n)`` the mean loss of the ``k``
    most confident rows, averaged over all orders of the rows inside each
    tie group of confidence. Without ties it is the per-sample value of
    Geifman, Uziel & El-Yaniv (2019); with ties it is the expectation over
    random tie-breaking (the analogue of a tied pair counting 1/2 in ROC AUC)
    and does not depend on the input order. Computed per tie group in closed
    form: a group with ``A`` weight before it, weight ``M``, loss ``G`` and
    loss ``L_A`` before it contributes
    ``(L_A - A G/M) (H(A+M) - H(A)) + G`` to the sum, ``H`` the harmonic
    numbers; divided by the total weight ``W``. Integer weights are
    repetition (weight 3 is the row three times); for non-integer weights
    ``H(x) = digamma(x + 1) + gamma`` extends the same formula.

    ``method="step"``: the area under the tie-grouped step curve,
    ``sum_g (coverage_g - coverage_{g-1}) risk_g``; also order-free, slightly
    different.

    Other libraries differ: per-sample implementations that sort with no tie
    handling give a value that depends on the row order (hallmark issue 63;
    torch-uncertainty's ``AURC``), and torch-uncertainty 0.13 integrates by
    the trapezoid rule over rejection rates 0..(n-1)/n and divides by
    ``1 - 1/n``; on tie-free data its value is
    ``(n AURC - (r(1/n) + r(1))/2) / (n - 1)``.

    Parameters are those of :func:`risk_coverage_curve`, plus ``method``.

    Returns
    -------
    0-d float (NumPy scalar on NumPy): the confidence's (or a float loss's)
    float dtype, float64 for integer inputs. NaN with an
    :class:`UndefinedMetricWarning` when the total weight is zero.

    Raises
    ------
    ValueError
        As :func:`risk_coverage_curve`; an unknown ``method``. Under ``jit``
        invalid values give NaN.

    Examples
    --------
    >>> import calipers
    >>> conf = [0.9, 0.9, 0.8, 0.8, 0.8, 0.6, 0.6, 0.3]
    >>> err = [0, 1, 0, 0, 1, 1, 0, 1]
    >>> print(round(float(calipers.aurc(conf, loss=err)), 6))
    0.450794
    >>> print(round(float(calipers.aurc(conf, loss=err, method="step")), 6))
    0.444643
    """
    _check_method(method)
    d = _prepare(confidence, y_true, y_pred, loss, sample_weight)
    g = _compact_numpy(_groups(d), d.xp)
    return _finish(_aurc_value(g, method, d.xp), d, g.W == 0, _ZERO_W)


def excess_aurc(confidence: ArrayLike, y_true: ArrayLike = None, y_pred: ArrayLike = None, *,
                loss: ArrayLike = None, sample_weight: ArrayLike = None,
                method: str = "tie_average") -> float | Array:
    """Excess AURC: AURC minus the AURC of the best ordering (Geifman, Uziel & El-Yaniv 2019).

    ``E-AURC = AURC(confidence) - AURC(oracle)``, the oracle keeping rows in
    increasing order of loss (confidence ``-loss``), on the same rows and
    weights with the same ``method``. This is the exact finite-sample oracle;
    the paper's closed form ``r + (1 - r) log(1 - r)`` (``r`` the overall 0/1
    risk) is its large-n limit, and differs from it by O(log(n)/n).
    E-AURC is 0 for a perfect ranking and never negative.

    Parameters, returns and errors are those of :func:`aurc`.

    Examples
    --------
    >>> import calipers
    >>> print(round(float(calipers.excess_aurc([0.9, 0.8, 0.7], loss=[0, 0, 1])), 12))
    0.0
    >>> print(round(float(calipers.excess_aurc([0.9, 0.8, 0.7], loss=[1, 0, 0])), 6))
    0.5
    """
    _check_method(method)
    d = _prepare(confidence, y_true, y_pred, loss, sample_weight)
    xp = d.xp
    g = _compact_numpy(_groups(d), xp)
    oracle = _Sel(xp, -xp.astype(d.loss, B.acc_float(xp)), d.loss, d.w, d.invalid, d.out)
    go = _compact_numpy(_groups(oracle), xp)
    value = _aurc_value(g, method, xp) - _aurc_value(go, method, xp)
    return _finish(value, d, g.W == 0, _ZERO_W)


def _check_fraction(name, v, *, allow_zero=False):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite real number, got {v!r}")
    if name == "coverage" and not (0 < v <= 1):
        raise ValueError(f"coverage must be in (0, 1], got {v!r}")


def selective_risk(confidence: ArrayLike, y_true: ArrayLike = None, y_pred: ArrayLike = None, *,
                   coverage: float, loss: ArrayLike = None, sample_weight: ArrayLike = None,
                   method: str = "group") -> SelectivePoint:
    """Selective risk at a target coverage; returns the achieved operating point.

    ``method="group"`` (default): the smallest tie-group point whose coverage
    is at least ``coverage`` (a real threshold on the confidence keeps whole
    tie groups, so the achieved coverage can exceed the target; it is
    returned). ``method="tie_average"``: keep exactly ``k = coverage * W``
    weight, breaking ties at random, and return the expected mean loss
    ``(L_A + (k - A) G/M) / k`` of the group that holds the ``k``-th unit of
    weight; the achieved coverage is then exactly ``coverage`` (for
    ``c * n`` not an integer this keeps a fraction of a row).

    Parameters
    ----------
    coverage : float in (0, 1]
        Target share of the total weight to keep (static under ``jit``).
    method : {"group", "tie_average"}
    Others as :func:`risk_coverage_curve`.

    Returns
    -------
    SelectivePoint
        ``(coverage, risk, threshold)``: achieved coverage, selective risk,
        confidence threshold. NaN fields (with an
        :class:`UndefinedMetricWarning`) when the total weight is zero.

    Raises
    ------
    ValueError
        As :func:`risk_coverage_curve`; ``coverage`` outside (0, 1]; an
        unknown ``method``.

    Examples
    --------
    >>> import calipers
    >>> conf = [0.9, 0.9, 0.8, 0.8, 0.8, 0.6, 0.6, 0.3]
    >>> err = [0, 1, 0, 0, 1, 1, 0, 1]
    >>> p = calipers.selective_risk(conf, loss=err, coverage=0.5)
    >>> float(p.coverage), float(p.risk), float(p.threshold)
    (0.625, 0.4, 0.8)
    """
    _check_fraction("coverage", coverage)
    method = V.choice(method, "method", ("group", "tie_average"))
    d = _prepare(confidence, y_true, y_pred, loss, sample_weight)
    xp = d.xp
    g = _groups(d)
    Wsafe = xp.where(g.W > 0, g.W, 1.0)
    K = g.A + g.M
    inf = xp.asarray(math.inf, dtype=K.dtype, device=B.device(K))
    if method == "group":
        ok = g.rep & (K / Wsafe >= coverage)
        i = xp.argmin(xp.where(ok, K, inf))
        cov = K[i] / Wsafe
        risk = (g.LA[i] + g.G[i]) / xp.where(K[i] > 0, K[i], 1.0)
    else:
        k = coverage * g.W
        ok = g.rep & (K >= k)
        i = xp.argmin(xp.where(ok, K, inf))
        Mi = xp.where(g.M[i] > 0, g.M[i], 1.0)
        risk = (g.LA[i] + (k - g.A[i]) * g.G[i] / Mi) / xp.where(k > 0, k, 1.0)
        cov = xp.asarray(coverage, dtype=K.dtype, device=B.device(K))
    thr = xp.astype(g.c[i], B.acc_float(xp))
    return _point(d, cov, risk, thr, g.W == 0)


def _point(d, cov, risk, thr, undefined, risk_undefined=None):
    xp = d.xp
    bad = d.invalid | undefined
    ru = bad if risk_undefined is None else bad | risk_undefined
    out = SelectivePoint(
        B.finalize(xp.astype(B.nan_if(bad, cov, xp), d.out), xp),
        B.finalize(xp.astype(B.nan_if(ru, risk, xp), d.out), xp),
        B.finalize(xp.astype(B.nan_if(d.invalid, thr, xp), B.out_float(xp, d.c)), xp))
    if not B.is_traced(cov) and not bool(d.invalid):
        if bool(undefined):
            B.warn_undefined(_ZERO_W)
        elif risk_undefined is not None and bool(risk_undefined):
            B.warn_undefined("no confidence threshold reaches the risk asked: coverage 0, "
                             "risk NaN, threshold +inf")
    return out


def coverage_at_risk(confidence: ArrayLike, y_true: ArrayLike = None, y_pred: ArrayLike = None, *,
                     max_risk: float, loss: ArrayLike = None,
                     sample_weight: ArrayLike = None) -> SelectivePoint:
    """Largest coverage whose selective risk is at most ``max_risk``.

    Among the tie-group points of :func:`risk_coverage_curve` (thresholds a
    real classifier can use), the one with the largest coverage and
    ``risk <= max_risk``. Per-sample implementations can report a coverage
    inside a tie group that no threshold achieves (torch-uncertainty's
    ``CovAtxRisk`` depends on the order of tied rows).

    Parameters
    ----------
    max_risk : float
        The risk budget (static under ``jit``).
    Others as :func:`risk_coverage_curve`.

    Returns
    -------
    SelectivePoint
        ``(coverage, risk, threshold)``. When no point qualifies: coverage 0,
        risk NaN and threshold ``+inf`` (abstain on everything), with an
        :class:`UndefinedMetricWarning`; all NaN when the total weight is zero.

    Raises
    ------
    ValueError
        As :func:`risk_coverage_curve`; ``max_risk`` not a finite number.

    Examples
    --------
    >>> import calipers
    >>> conf = [0.9, 0.9, 0.8, 0.8, 0.8, 0.6, 0.6, 0.3]
    >>> err = [0, 1, 0, 0, 1, 1, 0, 1]
    >>> p = calipers.coverage_at_risk(conf, loss=err, max_risk=0.4)
    >>> float(p.coverage), float(p.risk)
    (0.625, 0.4)
    """
    _check_fraction("max_risk", max_risk)
    d = _prepare(confidence, y_true, y_pred, loss, sample_weight)
    xp = d.xp
    g = _groups(d)
    Wsafe = xp.where(g.W > 0, g.W, 1.0)
    K = g.A + g.M
    risk_all = (g.LA + g.G) / xp.where(K > 0, K, 1.0)
    ok = g.rep & (K > 0) & (risk_all <= max_risk)
    i = xp.argmax(xp.where(ok, K, -1.0))
    none = ~xp.any(ok)
    cov = xp.where(none, 0.0, K[i] / Wsafe)
    inf = xp.asarray(math.inf, dtype=B.acc_float(xp), device=B.device(K))
    thr = xp.where(none, inf, xp.astype(g.c[i], B.acc_float(xp)))
    return _point(d, cov, risk_all[i], thr, g.W == 0, none)
