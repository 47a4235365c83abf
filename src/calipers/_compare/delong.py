"""DeLong's test of two correlated ROC AUCs on the same examples, with the O(n log n) algorithm of
Sun & Xu (2014) and the clustered variance of Obuchowski (1997); the DeLong variance and interval
of one AUC. Computed with the array API: runs under ``jax.jit``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.results import result_type
from .._core.results import ConfidenceInterval
from .._kernels import quantile as Q
from .._kernels import rankstats as R
from .._core.types import Array, ArrayLike

__all__ = ["DeLongResult", "delong_test", "delong_roc_variance", "roc_auc_confint"]


@result_type(legacy_fields=('statistic', 'pvalue', 'auc_a', 'auc_b', 'difference', 'standard_error', 'confidence_interval',))
class DeLongResult:
    """Two correlated AUCs: ``z = (auc_a - auc_b) / standard_error``."""

    statistic: Any
    pvalue: Any
    auc_a: Any
    auc_b: Any
    difference: Any
    standard_error: Any
    confidence_interval: ConfidenceInterval


def _placements(y01, s, xp):
    """Structural components of one model (DeLong et al. 1988), O(n log n).

    One sort of the scores and the doubled placements of
    :func:`calipers._kernels.rankstats.placements` (integer counts: exact, also in
    32-bit), divided once: for each positive, the share of negatives ranked
    below it (ties 1/2), V10; for each negative, the share of positives ranked
    above it (ties 1/2), V01. Both in input order, 0 for the other class. This
    is Sun & Xu's (2014) midrank algorithm written with prefix sums over the
    sorted order (midrank differences are these counts). Returns
    ``(v10, v01, auc, P, N)``, the AUC from the exact pair count.
    """
    tg = R.sort_groups(y01, s, xp)
    cw = R.class_weights(tg, None, xp)
    twice = R.placements(tg, cw, xp)
    f = B.acc_float(xp)
    P, N = xp.astype(cw.P, f), xp.astype(cw.N, f)
    tf = xp.astype(twice, f)
    pos = tg.y == 1
    zero = xp.zeros_like(tf)
    v10 = xp.where(pos, tf / (2 * xp.where(N > 0, N, 1.0)), zero)
    v01 = xp.where(pos, zero, tf / (2 * xp.where(P > 0, P, 1.0)))
    auc = R.auc_from_u2(R.u2(tg, cw.wp, cw.Cn, xp), cw.P, cw.N, xp)[0]
    inv = xp.argsort(tg.order)
    return xp.take(v10, inv), xp.take(v01, inv), auc, P, N


def _delong_parts(y_true, scores, xp, groups=None, num_groups=None):
    """AUCs, the covariance of the AUC estimates of k models, and the number of
    independent units (rows, or clusters holding a row).

    Without ``groups``: DeLong et al. (1988), rows independent. With
    ``groups``: Obuchowski (1997), clusters independent, rows within a
    cluster arbitrarily dependent; the placements are the same, summed per
    cluster.
    """
    y01, invalid = V.binary_labels(y_true, xp)
    yf = xp.astype(y01, B.acc_float(xp))
    comps = [_placements(y01, s, xp) for s in scores]
    P, N = comps[0][3], comps[0][4]
    # the AUC is the mean V10; 0 (not NaN) for one class, as the undefined flag reports it
    aucs = [xp.where((P > 0) & (N > 0), auc, 0.0) for _, _, auc, _, _ in comps]
    if groups is None:
        ddp = xp.where(P > 1, P - 1, 1.0)
        ddn = xp.where(N > 1, N - 1, 1.0)

        def cov(i, j):
            v10i, v01i = comps[i][0], comps[i][1]
            v10j, v01j = comps[j][0], comps[j][1]
            s10 = xp.sum(yf * (v10i - aucs[i]) * (v10j - aucs[j])) / ddp
            s01 = xp.sum((1 - yf) * (v01i - aucs[i]) * (v01j - aucs[j])) / ddn
            return s10 / xp.where(P > 0, P, 1.0) + s01 / xp.where(N > 0, N, 1.0)

        undefined = (P < 2) | (N < 2)
        return aucs, cov, undefined, invalid, P + N

    from .._kernels import segments as S

    gxp = np if isinstance(groups, np.ndarray) else xp
    codes, _, G, bad_ids, _ = S.factorize(groups, gxp, num_segments=num_groups, name="groups")
    if gxp is not xp:
        codes = xp.asarray(codes)
    invalid = invalid | bad_ids
    f = B.acc_float(xp)

    def per_cluster(v):
        return B.segment_sum(v, codes, G, xp)

    m = per_cluster(yf)          # positives per cluster
    nn = per_cluster(1 - yf)     # negatives per cluster
    d10 = [per_cluster(v10) - m * a for (v10, _, _, _, _), a in zip(comps, aucs)]
    d01 = [per_cluster(v01) - nn * a for (_, v01, _, _, _), a in zip(comps, aucs)]
    i10 = xp.astype(xp.sum(xp.astype(m > 0, f)), f)     # clusters with a positive
    i01 = xp.astype(xp.sum(xp.astype(nn > 0, f)), f)    # ... with a negative
    i_all = xp.astype(xp.sum(xp.astype((m + nn) > 0, f)), f)

    def ratio(k):  # k / (k - 1), the ddof correction of a cluster-level variance
        return k / xp.where(k > 1, k - 1, 1.0)

    Pd, Nd = xp.where(P > 0, P, 1.0), xp.where(N > 0, N, 1.0)

    def cov(i, j):
        s10 = ratio(i10) * xp.sum(d10[i] * d10[j]) / Pd
        s01 = ratio(i01) * xp.sum(d01[i] * d01[j]) / Nd
        s11 = ratio(i_all) * (xp.sum(d10[i] * d01[j]) + xp.sum(d10[j] * d01[i])) / 2
        return s10 / Pd + s01 / Nd + 2 * s11 / (Pd * Nd)

    undefined = (i10 < 2) | (i01 < 2)
    return aucs, cov, undefined, invalid, i_all


def _prepare_scores(y_true, *scores, names, groups=None):
    xp, arrs = B.as_arrays(y_true, *scores)
    y = arrs[0]
    B.check_1d("y_true", y)
    bad = xp.asarray(False)
    for nm, s in zip(names, arrs[1:]):
        B.check_1d(nm, s)
        B.check_numeric(nm, s, xp)
        bad = bad | V.check_finite(nm, s, xp)   # raises eagerly; the NaN flag under jit
    B.check_same_length(y_true=y, **dict(zip(names, arrs[1:])))
    B.check_nonempty("y_true", y)
    if groups is None:
        return xp, y, arrs[1:], None, bad
    # Cluster ids of any sortable kind stay NumPy (strings have no JAX dtype);
    # arrays of the scores' namespace (traced under jit) stay as they are.
    if not B.is_array(groups) or isinstance(groups, np.ndarray):
        groups = np.asarray(groups)
    B.check_1d("groups", groups)
    B.check_same_length(y_true=y, groups=groups)
    return xp, y, arrs[1:], groups, bad


def _norm_sf(z, xp):
    """Upper tail of N(0, 1): jax.scipy on JAX (jit-safe), the stdlib elsewhere."""
    if B.is_jax(xp):
        import jax.scipy.special as jss

        return jss.ndtr(-z)
    return xp.asarray(0.5 * math.erfc(float(z) / math.sqrt(2)), dtype=B.acc_float(xp))


def _t_sf(t, df, xp):
    """Upper tail of Student's t with ``df`` degrees of freedom.

    JAX (jit-safe, ``df`` may be traced): ``P(|T| > |t|) = I_x(df/2, 1/2)`` with
    ``x = df / (df + t^2)``, the regularised incomplete beta function
    (``jax.scipy.special.betainc``), halved and reflected. Elsewhere
    ``scipy.stats.t.sf`` on host floats.
    """
    if B.is_jax(xp):
        import jax.scipy.special as jss

        d = xp.astype(df, t.dtype)
        finite = xp.where(xp.isinf(t), 0.0, t)
        x = xp.where(xp.isinf(t), 0.0, d / (d + finite * finite))
        half = 0.5 * jss.betainc(d / 2, xp.asarray(0.5, dtype=t.dtype), x)
        return xp.where(t > 0, half, 1 - half)
    stats = B.scipy_stats("delong_test(small_sample=True)")
    return xp.asarray(float(stats.t.sf(float(t), float(df))), dtype=B.acc_float(xp))


def _t_quantile(confidence_level: float, df, xp):
    """The ``(1 + confidence_level) / 2`` quantile of Student's t with ``df`` degrees of freedom.

    JAX: 64 bisection steps on ``x = df / (df + q^2)`` in (0, 1], where the two-sided tail
    ``I_x(df/2, 1/2)`` equals ``1 - confidence_level`` (``lax.fori_loop``, jit-safe with a
    traced ``df``), then ``q = sqrt(df (1 - x) / x)``. Elsewhere ``scipy.stats.t.ppf``.
    """
    if B.is_jax(xp):
        import jax
        import jax.scipy.special as jss

        f = B.acc_float(xp)
        d = xp.astype(df, f)
        alpha = xp.asarray(1 - confidence_level, dtype=f)
        half = xp.asarray(0.5, dtype=f)

        def step(_, lo_hi):
            lo, hi = lo_hi
            mid = (lo + hi) / 2
            below = jss.betainc(d / 2, half, mid) < alpha   # tail increases with x
            return xp.where(below, mid, lo), xp.where(below, hi, mid)

        lo, hi = jax.lax.fori_loop(0, 64, step, (xp.asarray(0.0, dtype=f),
                                                 xp.asarray(1.0, dtype=f)))
        x = (lo + hi) / 2
        return xp.sqrt(d * (1 - x) / x)
    stats = B.scipy_stats("delong_test(small_sample=True)")
    q = float(stats.t.ppf((1 + confidence_level) / 2, float(df))) if float(df) >= 1 else math.nan
    return xp.asarray(q, dtype=B.acc_float(xp))


def _warn_if(undefined, what):
    if not B.is_traced(undefined) and bool(undefined):
        B.warn_undefined(what)


def delong_test(y_true: ArrayLike, y_score_a: ArrayLike, y_score_b: ArrayLike, *,
                confidence_level: float = 0.95, alternative: str = "two-sided",
                groups: ArrayLike = None, num_groups: int | None = None,
                small_sample: bool = False) -> DeLongResult:
    """DeLong's test for two correlated ROC AUCs measured on the same examples.

    ``z = (AUC_A - AUC_B) / sqrt(Var)``, ``Var = (S10_AA + S10_BB - 2 S10_AB) / P
    + (S01_AA + S01_BB - 2 S01_AB) / N`` from the structural components
    (placement values) of each model (DeLong, DeLong & Clarke-Pearson 1988),
    computed in O(n log n) with one sort per model (Sun & Xu 2014). The
    placements are integer counts (:func:`calipers._kernels.rankstats.placements`,
    exact also on JAX without x64), divided once; the variances are
    accumulated in the widest float (float64; float32 on JAX without x64).
    AUC ties count 1/2. Tested against the direct O(P * N) computation of the
    placement values.

    Parameters
    ----------
    y_true : array (n,) of {0, 1} or bool
    y_score_a, y_score_b : arrays (n,) of finite real scores
    confidence_level : float in (0, 1)
        For the Wald interval ``difference +- z * standard_error``.
    alternative : {"two-sided", "greater", "less"}
        ``greater``: H1 AUC_A > AUC_B.
    groups : array (n,), optional
        Cluster ids (patients with several images, users with several
        sessions): clusters are independent, rows within a cluster may be
        dependent. The variance is then Obuchowski's (1997): the same
        placements summed per cluster, ``S10 = I10 / ((I10 - 1) P) *
        sum_i (V10_i - m_i AUC)^2`` over the I10 clusters with a positive
        (m_i positives in cluster i), ``S01`` likewise over negatives, ``S11 =
        I / (I - 1) * sum_i (V10_i - m_i AUC)(V01_i - n_i AUC)``, ``Var =
        S10 / P + S01 / N + 2 S11 / (P N)``, with cross-model covariances
        from the same sums. With one row per cluster it equals the
        ordinary DeLong variance. Any sortable ids eagerly; under ``jit``
        integers in ``0 .. num_groups - 1`` with ``num_groups`` static.
    num_groups : int, optional
        The number of clusters, required under ``jit``.
    small_sample : bool, default False
        Refer the statistic to Student's t with ``C - 1`` degrees of freedom
        instead of the standard normal, for the p-value and the interval
        ``difference +- t_{C-1} * standard_error``; ``C`` is the number of
        clusters holding a row (with ``groups``), else the number of rows.
        This is the small-number-of-clusters correction of cluster-robust
        inference (Bester, Conley & Hansen 2011; Cameron & Miller 2015,
        section VI): with few clusters the variance estimate is itself
        noisy and normal quantiles are too short. The statistic and the
        standard error are unchanged: Obuchowski's variance already carries
        the ``C / (C - 1)`` factor of the cluster-robust ("CR1") variance (the
        ``I10 / (I10 - 1)``, ``I01 / (I01 - 1)`` and ``I / (I - 1)`` above),
        so no second factor is applied. As ``C`` grows the result tends to
        the normal one. Eagerly the t distribution is ``scipy.stats.t``
        (the ``stats`` extra; ``ImportError`` without scipy), on JAX the
        regularised incomplete beta function (jit-safe).

    Returns
    -------
    DeLongResult(statistic, pvalue, auc_a, auc_b, difference, standard_error,
    confidence_interval): 0-d arrays of the backend (NumPy scalars on NumPy).

    Undefined: fewer than 2 positives or 2 negatives (the sample covariances
    need ddof=1) — with ``groups``, fewer than 2 clusters holding a positive
    or 2 holding a negative — gives NaN with an :class:`UndefinedMetricWarning`. A zero
    variance with zero difference (for example identical scores) gives
    statistic 0 and p = 1 (no evidence); with a non-zero difference, |z| = inf
    and p = 0.

    Raises ``ValueError`` for shapes, empty input, non-finite scores, labels
    outside {0, 1}, bad options. Under ``jax.jit`` nothing raises or warns:
    invalid input gives NaN.
    """
    V.confidence_level(confidence_level)
    alternative = V.choice(alternative, "alternative", ("two-sided", "less", "greater"))
    small_sample = V.choice(small_sample, "small_sample", (False, True))
    xp, y, (a, b), g, bad_scores = _prepare_scores(y_true, y_score_a, y_score_b,
                                                   names=("y_score_a", "y_score_b"),
                                                   groups=groups)
    aucs, cov, undefined, invalid, units = _delong_parts(y, [a, b], xp, g, num_groups)
    invalid = invalid | bad_scores
    var = cov(0, 0) + cov(1, 1) - 2 * cov(0, 1)
    var = xp.where(var > 0, var, 0.0)     # rounding can make an exact 0 slightly negative
    diff = aucs[0] - aucs[1]
    se = xp.sqrt(var)
    zero = (se == 0) & (diff == 0)
    z = xp.where(zero, 0.0, diff / xp.where(se > 0, se, 1.0))
    inf = xp.full_like(diff, math.inf)
    z = xp.where((se == 0) & (diff != 0), xp.where(diff > 0, inf, -inf), z)
    if small_sample:
        df = xp.where(units > 1, units - 1, 1.0)    # units < 2 is undefined (NaN) anyway

        def sf(v):
            return _t_sf(v, df, xp)
    else:
        def sf(v):
            return _norm_sf(v, xp)
    if alternative == "two-sided":
        p = 2 * sf(xp.abs(z))
        p = xp.where(p > 1, 1.0, p)
    elif alternative == "greater":
        p = sf(z)
    else:
        p = sf(-z)
    p = xp.where(zero, 1.0, xp.astype(p, z.dtype))
    bad = undefined | invalid
    q = (_t_quantile(confidence_level, df, xp) if small_sample
         else Q.normal_quantile(confidence_level))
    lo, hi = diff - q * se, diff + q * se
    out = [B.finalize(B.nan_if(bad, v, xp), xp) for v in (z, p, aucs[0], aucs[1], diff, se, lo, hi)]
    _warn_if(undefined & ~invalid,
             "DeLong's test needs at least 2 positives and 2 negatives; returning NaN"
             if groups is None else "the clustered DeLong test needs at least 2 clusters with a "
             "positive and 2 with a negative; returning NaN")
    z, p, auc_a, auc_b, diff, se, lo, hi = out
    return DeLongResult(z, p, auc_a, auc_b, diff, se, ConfidenceInterval(lo, hi))


def delong_roc_variance(y_true: ArrayLike,
                        y_score: ArrayLike) -> tuple[float | Array, float | Array]:
    """ROC AUC and DeLong's estimate of its variance: ``(auc, variance)``.

    ``Var = S10 / P + S01 / N`` with S10, S01 the sample variances (ddof=1) of
    the placement values of positives and negatives (DeLong et al. 1988; Sun &
    Xu 2014 for the O(n log n) computation). NaN with a warning when there are
    fewer than 2 positives or 2 negatives. Errors and jit behaviour as
    :func:`delong_test`.
    """
    xp, y, (s,), _, bad_scores = _prepare_scores(y_true, y_score, names=("y_score",))
    aucs, cov, undefined, invalid, _ = _delong_parts(y, [s], xp)
    invalid = invalid | bad_scores
    bad = undefined | invalid
    _warn_if(undefined & ~invalid, "DeLong's variance needs at least 2 positives and 2 "
                                   "negatives; returning NaN")
    return (B.finalize(B.nan_if(bad, aucs[0], xp), xp),
            B.finalize(B.nan_if(bad, cov(0, 0), xp), xp))


def roc_auc_confint(y_true: ArrayLike, y_score: ArrayLike, *,
                    confidence_level: float = 0.95) -> ConfidenceInterval:
    """Wald interval ``AUC +- z * sqrt(DeLong variance)`` for one ROC AUC.

    Not clipped to [0, 1] (pROC clips): near 1 with few examples the upper end
    can exceed 1, which says the normal approximation is poor there; use
    :func:`calipers.paired_bootstrap` or more data. Errors, undefined cases and
    jit behaviour as :func:`delong_roc_variance`.
    """
    V.confidence_level(confidence_level)
    auc, var = delong_roc_variance(y_true, y_score)
    xp, _ = B.as_arrays(auc)
    q = Q.normal_quantile(confidence_level)
    se = xp.sqrt(var)
    return ConfidenceInterval(B.finalize(auc - q * se, xp), B.finalize(auc + q * se, xp))
