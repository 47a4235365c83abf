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

__all__: list[str] = []


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

