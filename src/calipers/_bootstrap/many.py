"""Many models in one bootstrap: simultaneous (max-T) intervals and step-down p-values.

The statistics of :func:`calipers.many_models_bootstrap` (the function itself is in
:mod:`calipers._bootstrap.paired`, beside the engine it drives).

K models scored on the same examples are compared against one baseline (or
every pair with every other) on the **same** resamples: every comparison's
replicates come from the one counter-based resampler
(:mod:`calipers._bootstrap.resample`) keyed by (seed, replicate, row), so
replicate ``r`` of every comparison is the metric on the very same resampled
rows, and comparison ``(a, b)``'s replicates are exactly those of
:func:`calipers.paired_bootstrap_replicates` ``(metric, y, s_a, s_b)`` with
the same seed. The joint distribution of the K differences is what makes
simultaneous intervals and step-down p-values possible:

* the max-T interval (studentised maximum; Romano & Wolf 2005;
  Westfall & Young 1993): ``d_k +- c * sd_k`` with ``c`` the
  ``confidence_level`` quantile of ``max_k |d*_k - d_k| / sd_k`` over the
  replicates, covers all K differences at once with probability about
  ``confidence_level``;
* Romano & Wolf's step-down adjusted p-values (2005; computed by the
  algorithm of Romano & Wolf 2016): control of the family-wise error rate
  that uses the dependence between the comparisons, never larger than the
  single-step (max-T) p-value.
"""

from __future__ import annotations

import math

import numpy as np

from .._core import validation as V
from .._core.results import ConfidenceInterval, result_type

__all__ = ["ManyModelsResult"]


@result_type(meta=("comparisons", "n_resamples", "confidence_level", "design", "resampling"))
class ManyModelsResult:
    """What :func:`many_models_bootstrap` returns (``m`` comparisons of ``K`` models).

    Attributes
    ----------
    comparisons : tuple of (int, int)
        Comparison ``j`` is ``(a, b)``: the difference ``metric(model a) -
        metric(model b)``, models numbered by their position in ``y_scores``.
    estimates : ndarray (K,), float64
        Each model's metric on the full data.
    difference : ndarray (m,), float64
        The full-data differences ``d_j``.
    confidence_interval : ConfidenceInterval of ndarrays (m,)
        Marginal percentile interval of each difference alone (each covers
        its own difference with probability about ``confidence_level``).
    simultaneous_interval : ConfidenceInterval of ndarrays (m,)
        Max-T interval ``d_j -+ critical_value * standard_error_j``: all ``m``
        intervals cover their differences at once with probability about
        ``confidence_level``.
    critical_value : float
        ``c``, the type-7 (linear interpolation, NumPy's default)
        ``confidence_level`` quantile of ``max_j |d*_j - d_j| / sd_j``.
    standard_error : ndarray (m,), float64
        Bootstrap standard deviation (ddof=1) ``sd_j`` of each difference.
    pvalue : ndarray (m,), float64
        Unadjusted two-sided bootstrap p-value of "no difference" for each
        comparison alone: the share of replicates with ``|d*_j - d_j| / s_j
        >= |d_j| / s_j`` (the null distribution is the replicates centred at
        the estimate). No +1 correction: 0 means below ``1 / n_resamples``.
    pvalue_romano_wolf : ndarray (m,), float64
        Romano-Wolf step-down adjusted p-values (family-wise error rate over
        the ``m`` comparisons); ``>= pvalue`` and non-decreasing in the order
        of decreasing ``|d_j| / s_j``.
    bootstrap_distribution : ndarray (n_resamples, m), float64
        Replicated differences, NaN where undefined.
    distributions : ndarray (n_resamples, K), float64
        Replicated metric of each model on the same resamples (NaN where
        undefined).
    n_undefined : int
        Replicates in which any comparison was undefined; left out of every
        interval, critical value and p-value.
    n_resamples : int
    confidence_level : float
    design : str
        ``"rows"``, ``"stratified rows"``, ``"clusters"`` or ``"moving blocks"``.
    resampling : str
        ``"multinomial"`` or ``"poisson"``.
    """

    comparisons: tuple
    estimates: np.ndarray
    difference: np.ndarray
    confidence_interval: ConfidenceInterval
    simultaneous_interval: ConfidenceInterval
    critical_value: float
    standard_error: np.ndarray
    pvalue: np.ndarray
    pvalue_romano_wolf: np.ndarray
    bootstrap_distribution: np.ndarray
    distributions: np.ndarray
    n_undefined: int
    n_resamples: int
    confidence_level: float
    design: str = "rows"
    resampling: str = "multinomial"


def comparison_pairs(k, comparisons, baseline):
    """The ``(a, b)`` model pairs of ``comparisons`` over ``k`` models (options checked)."""
    comparisons = V.choice(comparisons, "comparisons", ("baseline", "all_pairs"))
    if comparisons == "all_pairs":
        return tuple((i, j) for i in range(k) for j in range(i + 1, k))
    base = V.positive_int(baseline, "baseline", minimum=0)
    if base >= k:
        raise ValueError(f"baseline must be the index of one of the {k} models in y_scores "
                         f"(0 .. {k - 1}), got {baseline!r}")
    return tuple((i, base) for i in range(k) if i != base)


def studentized(d_rep, d, sd):
    """``(|d* - d| / s, |d| / s)`` with ``s = sd`` where ``sd > 0``, else 1.

    ``d_rep`` (B, m) replicates, ``d`` and ``sd`` (m,). A comparison whose
    replicates are all equal (``sd = 0``) is not divided: its ``|d* - d|`` is
    the same in every replicate and cannot widen the maximum.
    """
    s = np.where(sd > 0, sd, 1.0)
    return np.abs(d_rep - d) / s, np.abs(d) / s


def romano_wolf(t_rep, t):
    """Romano-Wolf step-down adjusted p-values (Romano & Wolf 2016, Algorithm).

    ``t_rep`` (B, m): the null replicates of the statistics, ``t`` (m,): the
    observed statistics. With the hypotheses ordered by decreasing ``t``
    (``t_(1) >= ... >= t_(m)``), step ``j`` counts the share of replicates in
    which the largest statistic among the hypotheses ``(j), ..., (m)`` not yet
    rejected reaches ``t_(j)``; the adjusted p-value is the running maximum of
    those shares (monotone, so the step-down stops at the first acceptance).
    Tied statistics get equal adjusted p-values. O(B m log m).
    """
    order = np.argsort(-t, kind="stable")
    ts = t[order]
    tail_max = np.maximum.accumulate(t_rep[:, order][:, ::-1], axis=1)[:, ::-1]
    step = np.mean(tail_max >= ts, axis=0)
    out = np.empty_like(step)
    out[order] = np.maximum.accumulate(step)
    return out


def max_t(d_ok, diff, confidence_level):
    """Max-T summary of the defined replicates ``d_ok`` (B', m) around ``diff`` (m,).

    Returns ``(sd, critical value, low, high, pvalue, pvalue_romano_wolf)``:
    ``sd`` the bootstrap standard deviations (ddof=1), the critical value the
    type-7 ``confidence_level`` quantile of the per-replicate maximum of the
    studentised statistics, the interval ``diff -+ c * sd``, and the
    unadjusted and step-down p-values. NaN throughout with fewer than two
    defined replicates or an undefined difference.
    """
    m = diff.shape[0]
    nan = np.full(m, math.nan)
    if d_ok.shape[0] < 2 or not np.all(np.isfinite(diff)):
        sd = np.std(d_ok, axis=0, ddof=1) if d_ok.shape[0] >= 2 else nan.copy()
        return sd, math.nan, nan.copy(), nan.copy(), nan.copy(), nan.copy()
    sd = np.std(d_ok, axis=0, ddof=1)
    t_rep, t = studentized(d_ok, diff, sd)
    crit = float(np.quantile(np.max(t_rep, axis=1), confidence_level))
    half = crit * sd
    return (sd, crit, diff - half, diff + half, np.mean(t_rep >= t, axis=0),
            romano_wolf(t_rep, t))

