"""Tests for comparing two models, and intervals for one proportion or one AUC.

* :func:`mcnemar` - paired correctness of two classifiers (exact binomial,
  mid-p, chi-squared with and without continuity correction).
* :func:`delong_test` - two correlated ROC AUCs on the same examples, with the
  O(n log n) algorithm of Sun & Xu (2014); :func:`delong_roc_variance` and
  :func:`roc_auc_confint` for one AUC.
* :func:`proportion_confint` - Wilson and normal (Wald) intervals.
* :func:`sprt` - Wald's sequential probability ratio test for an A/B decision
  on a stream of Bernoulli outcomes, stopping as soon as a boundary is crossed.

Statistics are computed with the array API (DeLong and the intervals run under
``jax.jit``); p-values of McNemar use ``scipy.stats`` distributions (imported
when called), normal quantiles the standard library.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, NamedTuple

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._kernels import rankstats as R
from .._core.results import ConfidenceInterval, result_type

__all__ = [
    "McNemarResult",
    "mcnemar",
    "mcnemar_table",
    "DeLongResult",
    "delong_test",
    "delong_roc_variance",
    "roc_auc_confint",
    "proportion_confint",
    "SPRTResult",
    "sprt",
]

_NORMAL = NormalDist()


def _check_level(confidence_level) -> float:
    """The one confidence-level rule (any real in (0, 1), NumPy scalars included)."""
    from .._core.validation import confidence_level as _level

    return _level(confidence_level)


# --------------------------------------------------------------------------
# McNemar
# --------------------------------------------------------------------------

@result_type(meta=("method",))
class McNemarResult:
    """McNemar's test: ``statistic``, ``pvalue``, the discordant counts ``b``
    (A right, B wrong) and ``c``, and the ``method`` (a static pytree field)."""

    statistic: float
    pvalue: float
    b: int
    c: int
    method: str


def mcnemar_table(y_true, y_pred_a, y_pred_b):
    """2 x 2 table of paired correctness: rows A correct / wrong, columns B correct / wrong.

    ``table[0][1]`` (b) counts examples A gets right and B wrong, ``table[1][0]``
    (c) the reverse. Labels may be of any kind (correct means equal to
    ``y_true``). Returns a NumPy int64 array. Raises ``ValueError`` for arrays
    that are not 1-D, of different lengths or empty.
    """
    xp, (y, a, b) = B.as_arrays(y_true, y_pred_a, y_pred_b)
    B.check_1d("y_true", y)
    B.check_1d("y_pred_a", a)
    B.check_1d("y_pred_b", b)
    B.check_same_length(y_true=y, y_pred_a=a, y_pred_b=b)
    B.check_nonempty("y_true", y)
    ra = np.asarray(B.to_numpy(a == y), dtype=bool)
    rb = np.asarray(B.to_numpy(b == y), dtype=bool)
    return np.array([[np.sum(ra & rb), np.sum(ra & ~rb)],
                     [np.sum(~ra & rb), np.sum(~ra & ~rb)]], dtype=np.int64)


def mcnemar(table, *, method: str = "exact") -> McNemarResult:
    """McNemar's test of equal error rates of two classifiers on the same examples.

    Only the discordant counts matter: ``b = table[0][1]`` (A right, B wrong)
    and ``c = table[1][0]`` (A wrong, B right); build the table with
    :func:`mcnemar_table`. Under H0, b ~ Binomial(b + c, 1/2). Two-sided.

    method
        ``"exact"``: statistic ``min(b, c)``, p = ``min(1, 2 P(X <= min(b, c)))``
        (McNemar 1947; the binomial sign test). ``"midp"``:
        ``2 P(X <= min(b, c)) - P(X = min(b, c))``, the exact p before its clip
        at 1 less the observed count's probability (1 when b = c; Fagerland,
        Lydersen & Laake 2013), less conservative. ``"chi2"``:
        ``(b - c)^2 / (b + c)`` on 1 degree of freedom. ``"chi2_cc"``: Edwards' continuity correction
        ``(max(|b - c| - 1, 0))^2 / (b + c)``.

    b + c = 0 (no discordant pair) is no evidence of a difference: statistic
    0 and p = 1 for every method, never a division error (statsmodels' chi2
    with correction returns (inf, 0) there; statsmodels PR #950, huggingface/evaluate PR #795). With b = c the
    corrected statistic is 0 (statsmodels gives 1 / (b + c)).

    Returns ``McNemarResult(statistic, pvalue, b, c, method)`` of Python numbers.
    Raises ``ValueError`` for a table that is not 2 x 2 of non-negative integers
    or an unknown method. Eager only (p-values come from ``scipy.stats``).
    """
    if method not in ("exact", "midp", "chi2", "chi2_cc"):
        raise ValueError(f"method must be 'exact', 'midp', 'chi2' or 'chi2_cc', got {method!r}")
    t = np.asarray(B.to_numpy(table) if not isinstance(table, (list, tuple)) else table)
    if t.shape != (2, 2):
        raise ValueError(f"table must be 2 x 2, got shape {t.shape}")
    if not (np.issubdtype(t.dtype, np.integer) or (np.issubdtype(t.dtype, np.floating)
                                                    and np.all(np.isfinite(t))
                                                    and np.all(t == np.round(t)))):
        raise ValueError("table must hold non-negative integer counts")
    if np.any(t < 0):
        raise ValueError("table must hold non-negative integer counts")
    b, c = int(t[0, 1]), int(t[1, 0])
    n = b + c
    if n == 0:
        return McNemarResult(0.0, 1.0, b, c, method)
    stats = B.scipy_stats("mcnemar")

    if method in ("exact", "midp"):
        k = min(b, c)
        p = min(1.0, 2.0 * float(stats.binom.cdf(k, n, 0.5)))
        if method == "midp":
            p = min(1.0, p - float(stats.binom.pmf(k, n, 0.5))) if b != c else 1.0
        return McNemarResult(float(k), p, b, c, method)
    d = abs(b - c)
    if method == "chi2_cc":
        d = max(d - 1, 0)
    stat = d * d / n
    return McNemarResult(float(stat), float(stats.chi2.sf(stat, 1)), b, c, method)


# --------------------------------------------------------------------------
# DeLong
# --------------------------------------------------------------------------

class DeLongResult(NamedTuple):
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
    """AUCs and the covariance matrix of the AUC estimates of k models.

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
        return aucs, cov, undefined, invalid

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
    return aucs, cov, undefined, invalid


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
    if not B._is_array(groups) or isinstance(groups, np.ndarray):
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


def _warn_if(undefined, what):
    if not B.is_traced(undefined) and bool(undefined):
        B.warn_undefined(what)


def delong_test(y_true, y_score_a, y_score_b, *, confidence_level: float = 0.95,
                alternative: str = "two-sided", groups=None,
                num_groups: int | None = None) -> DeLongResult:
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
    _check_level(confidence_level)
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', "
                         f"got {alternative!r}")
    xp, y, (a, b), g, bad_scores = _prepare_scores(y_true, y_score_a, y_score_b,
                                                   names=("y_score_a", "y_score_b"),
                                                   groups=groups)
    aucs, cov, undefined, invalid = _delong_parts(y, [a, b], xp, g, num_groups)
    invalid = invalid | bad_scores
    var = cov(0, 0) + cov(1, 1) - 2 * cov(0, 1)
    var = xp.where(var > 0, var, 0.0)     # rounding can make an exact 0 slightly negative
    diff = aucs[0] - aucs[1]
    se = xp.sqrt(var)
    zero = (se == 0) & (diff == 0)
    z = xp.where(zero, 0.0, diff / xp.where(se > 0, se, 1.0))
    inf = xp.full_like(diff, math.inf)
    z = xp.where((se == 0) & (diff != 0), xp.where(diff > 0, inf, -inf), z)
    if alternative == "two-sided":
        p = 2 * _norm_sf(xp.abs(z), xp)
        p = xp.where(p > 1, 1.0, p)
    elif alternative == "greater":
        p = _norm_sf(z, xp)
    else:
        p = _norm_sf(-z, xp)
    p = xp.where(zero, 1.0, xp.astype(p, z.dtype))
    bad = undefined | invalid
    q = _NORMAL.inv_cdf(1 - (1 - confidence_level) / 2)
    lo, hi = diff - q * se, diff + q * se
    out = [B.finalize(B.nan_if(bad, v, xp), xp) for v in (z, p, aucs[0], aucs[1], diff, se, lo, hi)]
    _warn_if(undefined & ~invalid,
             "DeLong's test needs at least 2 positives and 2 negatives; returning NaN"
             if groups is None else "the clustered DeLong test needs at least 2 clusters with a "
             "positive and 2 with a negative; returning NaN")
    z, p, auc_a, auc_b, diff, se, lo, hi = out
    return DeLongResult(z, p, auc_a, auc_b, diff, se, ConfidenceInterval(lo, hi))


def delong_roc_variance(y_true, y_score):
    """ROC AUC and DeLong's estimate of its variance: ``(auc, variance)``.

    ``Var = S10 / P + S01 / N`` with S10, S01 the sample variances (ddof=1) of
    the placement values of positives and negatives (DeLong et al. 1988; Sun &
    Xu 2014 for the O(n log n) computation). NaN with a warning when there are
    fewer than 2 positives or 2 negatives. Errors and jit behaviour as
    :func:`delong_test`.
    """
    xp, y, (s,), _, bad_scores = _prepare_scores(y_true, y_score, names=("y_score",))
    aucs, cov, undefined, invalid = _delong_parts(y, [s], xp)
    invalid = invalid | bad_scores
    bad = undefined | invalid
    _warn_if(undefined & ~invalid, "DeLong's variance needs at least 2 positives and 2 "
                                   "negatives; returning NaN")
    return (B.finalize(B.nan_if(bad, aucs[0], xp), xp),
            B.finalize(B.nan_if(bad, cov(0, 0), xp), xp))


def roc_auc_confint(y_true, y_score, *, confidence_level: float = 0.95) -> ConfidenceInterval:
    """Wald interval ``AUC +- z * sqrt(DeLong variance)`` for one ROC AUC.

    Not clipped to [0, 1] (pROC clips): near 1 with few examples the upper end
    can exceed 1, which says the normal approximation is poor there; use
    :func:`calipers.paired_bootstrap` or more data. Errors, undefined cases and
    jit behaviour as :func:`delong_roc_variance`.
    """
    _check_level(confidence_level)
    auc, var = delong_roc_variance(y_true, y_score)
    xp, _ = B.as_arrays(auc)
    q = _NORMAL.inv_cdf(1 - (1 - confidence_level) / 2)
    se = xp.sqrt(var)
    return ConfidenceInterval(B.finalize(auc - q * se, xp), B.finalize(auc + q * se, xp))


# --------------------------------------------------------------------------
# one proportion
# --------------------------------------------------------------------------

def proportion_confint(count, nobs, *, confidence_level: float = 0.95,
                       method: str = "wilson") -> ConfidenceInterval:
    """Confidence interval for a binomial proportion ``count / nobs``.

    ``"wilson"``: the score interval (Wilson 1927),
    ``(p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)``, always
    inside [0, 1]; recommended (Brown, Cai & DasGupta 2001). ``"normal"``: the
    Wald interval ``p +- z sqrt(p(1-p)/n)``, not clipped (it can leave [0, 1],
    and has zero width at p = 0 or 1).

    ``count`` and ``nobs`` are scalars or arrays (broadcast) of any backend;
    the ends have their shape, in the widest float. Raises ``ValueError`` for
    ``nobs < 1``, ``count`` outside [0, nobs], non-integer or non-finite values
    (when concrete), a bad level or method. Under ``jax.jit``: NaN for invalid
    values.
    """
    _check_level(confidence_level)
    if method not in ("wilson", "normal"):
        raise ValueError(f"method must be 'wilson' or 'normal', got {method!r}")
    xp, (k, n) = B.as_arrays(count, nobs)
    f = B.acc_float(xp)
    kf, nf = xp.astype(k, f), xp.astype(n, f)
    bad = (nf < 1) | (kf < 0) | (kf > nf) | (kf != xp.round(kf)) | (nf != xp.round(nf))
    if not B.is_traced(k, n):
        kn = np.asarray(B.to_numpy(kf))
        nn = np.asarray(B.to_numpy(nf))
        if not (np.all(np.isfinite(kn)) and np.all(np.isfinite(nn))):
            raise ValueError("count and nobs must be finite")
        if np.any(nn < 1) or np.any(nn != np.round(nn)):
            raise ValueError("nobs must be a positive integer")
        if np.any(kn != np.round(kn)):
            raise ValueError("count must be an integer")
        if np.any((kn < 0) | (kn > nn)):
            raise ValueError("count must be between 0 and nobs")
    z = _NORMAL.inv_cdf(1 - (1 - confidence_level) / 2)
    safe_n = xp.where(bad, 1.0, nf)
    p = kf / safe_n
    if method == "normal":
        h = z * xp.sqrt(p * (1 - p) / safe_n)
        lo, hi = p - h, p + h
    else:
        z2 = z * z
        den = 1 + z2 / safe_n
        center = (p + z2 / (2 * safe_n)) / den
        h = z * xp.sqrt(p * (1 - p) / safe_n + z2 / (4 * safe_n * safe_n)) / den
        # exact ends at p = 0 and p = 1 (the formula gives them up to rounding)
        lo = xp.where(kf == 0, 0.0, center - h)
        hi = xp.where(kf == nf, 1.0, center + h)
    return ConfidenceInterval(B.finalize(B.nan_if(bad, lo, xp), xp),
                              B.finalize(B.nan_if(bad, hi, xp), xp))


# --------------------------------------------------------------------------
# sequential probability ratio test
# --------------------------------------------------------------------------

@result_type(meta=("decision",))
class SPRTResult:
    """``decision``: "accept_h1", "accept_h0" or "continue" (no boundary crossed yet).

    ``n_used``: observations consumed when stopping (all of them when
    continuing); ``llr``: the cumulative log-likelihood ratio after each
    observation; ``lower``, ``upper``: Wald's boundaries.
    """

    decision: str
    n_used: int
    llr: np.ndarray
    lower: float
    upper: float


def sprt(outcomes, *, p0: float = 0.5, p1: float, alpha: float = 0.05,
         beta: float = 0.2) -> SPRTResult:
    """Wald's sequential probability ratio test for Bernoulli outcomes (Wald 1945).

    H0: P(outcome = 1) = p0 against H1: P(outcome = 1) = p1. After each
    observation the log-likelihood ratio
    ``LLR_t = S_t ln(p1/p0) + (t - S_t) ln((1-p1)/(1-p0))`` is compared with
    ``lower = ln(beta / (1 - alpha))`` and ``upper = ln((1 - beta) / alpha)``;
    the test stops at the first crossing (accept H1 at or above ``upper``,
    accept H0 at or below ``lower``), so it can stop long before the data end.
    Wald's bounds keep the error rates near ``alpha`` (false H1) and ``beta``
    (false H0), at most ``alpha / (1 - beta)`` and ``beta / (1 - alpha)``.

    For an A/B decision between two models on the same stream of examples,
    feed the discordant pairs only: 1 where A is right and B wrong, 0 where A is
    wrong and B right; p0 = 0.5 means no difference (a sequential McNemar
    test), p1 the share of A-wins worth detecting.

    Raises ``ValueError`` for outcomes outside {0, 1}, empty or not 1-D
    outcomes, p0 or p1 outside (0, 1), p0 == p1, alpha or beta outside (0, 1)
    or alpha + beta >= 1. Eager: the decision is a string.
    """
    for nm, v in (("p0", p0), ("p1", p1), ("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < 1):
            raise ValueError(f"{nm} must be in (0, 1), got {v!r}")
    if p0 == p1:
        raise ValueError("p1 must differ from p0")
    if alpha + beta >= 1:
        raise ValueError(f"alpha + beta must be below 1, got {alpha + beta}")
    xp, (x,) = B.as_arrays(outcomes)
    B.check_1d("outcomes", x)
    B.check_nonempty("outcomes", x)
    xn = np.asarray(B.to_numpy(x))
    if xn.dtype != bool and not np.all((xn == 0) | (xn == 1)):
        i = int(np.argmax(~((xn == 0) | (xn == 1))))
        raise ValueError(f"outcomes must be 0/1 (or booleans); element {i} is {xn[i].item()!r}")
    xn = xn.astype(np.float64)
    up, dn = math.log(p1 / p0), math.log((1 - p1) / (1 - p0))
    llr = np.cumsum(xn * up + (1 - xn) * dn)
    upper = math.log((1 - beta) / alpha)
    lower = math.log(beta / (1 - alpha))
    hit = np.flatnonzero((llr >= upper) | (llr <= lower))
    if hit.size == 0:
        return SPRTResult("continue", int(xn.size), llr, lower, upper)
    t = int(hit[0])
    decision = "accept_h1" if llr[t] >= upper else "accept_h0"
    return SPRTResult(decision, t + 1, llr, lower, upper)
