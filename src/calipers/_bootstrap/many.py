"""Many models in one bootstrap: simultaneous (max-T) intervals and step-down p-values.

K models scored on the same examples are compared against one baseline (or
every pair with every other) on the **same** resamples: every comparison's
replicates come from the one counter-based resampler
(:mod:`calipers._bootstrap.resample`) keyed by (seed, replicate, row), so
replicate ``r`` of every comparison is the metric on the very same resampled
rows, and comparison ``(a, b)``'s replicates are exactly those of
:func:`calipers.paired_bootstrap_replicates` ``(metric, y, s_a, s_b)`` with
the same seed. The joint distribution of the K differences is what makes
simultaneous intervals and step-down p-values possible:

* the max-T interval (studentised maximum; Romano & Wolf 2005, section 3;
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
from typing import Callable

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.results import ConfidenceInterval, result_type
from .intervals import _interval
from .kernels import _resolve_metric
from .paired import (
    _check_counts_options, _check_workers, _exact_difference, _full_estimate,
    _prepare_arrays, _replicates, _setup, _warn_degenerate)
from .resample import seed_words

__all__ = ["ManyModelsResult", "many_models_bootstrap"]


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


def _pairs(k, comparisons, baseline):
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


def many_models_bootstrap(metric, y_true, *y_scores, comparisons: str = "baseline",
                          baseline: int = 0, sample_weight=None, n_resamples: int = 1000,
                          confidence_level: float = 0.95, stratify: bool = False, groups=None,
                          block_length: int | None = None, resampling: str = "multinomial",
                          resample_by: str = "auto", batch: int | None = None, seed=None,
                          workers: int | None = None,
                          progress: Callable[[int], None] | None = None) -> ManyModelsResult:
    """K models compared in one paired bootstrap: simultaneous intervals and adjusted p-values.

    Every comparison is evaluated on the same resamples (replicate ``r`` is
    the same resampled rows for every model), so the replicated differences
    have their joint distribution and one can ask for intervals that cover
    **all** differences at once, and p-values adjusted for the whole family
    that use how the comparisons move together (two models that err alike
    count as nearly one test, where Bonferroni and Holm count two).

    Parameters
    ----------
    metric : callable or str
        As :func:`calipers.paired_bootstrap` (``roc_auc_score``,
        ``average_precision_score``, ``log_loss``, ``brier_score_loss`` or
        their names on the fast path; any metric taking ``sample_weight``, or
        resampled rows).
    y_true : array (n,), or (n, k) for user metrics
        Labels, as :func:`calipers.paired_bootstrap`.
    *y_scores : arrays (n,) (or (n, k) for user metrics), at least two
        The scores of the K models on the same examples, one positional
        argument per model.
    comparisons : {"baseline", "all_pairs"}
        ``"baseline"``: every other model against ``y_scores[baseline]``,
        comparison ``(k, baseline)`` with difference ``metric(k) -
        metric(baseline)``, in the order of ``y_scores``. ``"all_pairs"``:
        every pair ``(i, j)``, ``i < j``, difference ``metric(i) - metric(j)``.
    baseline : int
        Index of the baseline model in ``y_scores`` (``"baseline"`` only).
    sample_weight, stratify, groups, block_length, resampling, resample_by, batch, workers
        As :func:`calipers.paired_bootstrap`; the one design serves every
        comparison.
    n_resamples : int
        Number of replicates B (>= 1).
    confidence_level : float in (0, 1)
        Of the marginal and of the simultaneous intervals.
    seed : None, int, NumPy Generator or SeedSequence, or JAX key
        Read once (two uint32 words, as :func:`calipers.paired_bootstrap`):
        every comparison draws its counts from those words, so with the same
        int seed comparison ``(a, b)``'s replicates equal
        ``paired_bootstrap_replicates(metric, y_true, y_scores[a],
        y_scores[b], seed=seed)`` exactly. ``None`` draws fresh entropy once.
    progress : callable, optional
        Called with the number of replicates just finished; calls sum to
        ``n_resamples * m``.

    Returns
    -------
    ManyModelsResult
        Per comparison: difference, marginal percentile interval,
        simultaneous max-T interval, standard error, unadjusted and
        Romano-Wolf p-values; the critical value, the replicated values and
        ``n_undefined``.

    Conventions
    -----------
    * The full-data difference ``d_j`` and the replicates ``d*_j`` are those
      of :func:`calipers.paired_bootstrap` for the pair (AUC differences by
      one division of the integer Mann-Whitney numerators).
    * Studentisation: ``s_j`` is the bootstrap standard deviation (ddof=1)
      of ``d*_j``; a comparison with ``s_j = 0`` (all replicates equal, for
      example a model compared with a copy of itself) is not divided.
    * Max-T: ``c`` is the type-7 ``confidence_level`` quantile of ``T* =
      max_j |d*_j - d_j| / s_j`` over the defined replicates; the interval
      is ``[d_j - c s_j, d_j + c s_j]``. With one comparison it is the
      symmetric interval ``d -+ q(|d* - d|)``, which differs from the
      (equal-tailed) percentile interval.
    * P-values are two-sided, for "difference = 0", with the replicates
      centred at the estimate as the null distribution (Romano & Wolf 2005,
      2016): unadjusted ``p_j = #{|d*_j - d_j| / s_j >= |d_j| / s_j} / B'``,
      step-down as :func:`romano_wolf` describes, over the ``B'`` defined
      replicates, without a +1 correction. They differ from
      :func:`calipers.paired_bootstrap`'s ``pvalue`` (which inverts the
      equal-tailed percentile interval). The step-down p-values are never
      below the unadjusted ones and never above the single-step max-T
      p-values ``#{T* >= |d_j| / s_j} / B'``.
    * Undefined replicates (the metric NaN for some model, for example an
      AUC of a resample with one class) are counted in ``n_undefined``, kept
      as NaN in the distributions, and every joint quantity (both intervals,
      critical value, p-values, standard errors) uses only the replicates in
      which every comparison is defined, so all comparisons rest on the same
      resamples; an :class:`UndefinedMetricWarning` says how many.

    Raises
    ------
    ValueError
        Fewer than two models; ``comparisons`` or ``baseline`` out of their
        domains; every option and input error of
        :func:`calipers.paired_bootstrap` (each message names the argument,
        ``y_scores[k]`` for model ``k``); traced (``jit``) input: the result
        holds Python floats, use :func:`calipers.paired_bootstrap_replicates`
        per pair there.

    Notes
    -----
    Each comparison is one run of the paired engine (one sort per model,
    O(n) per replicate and model for the fast metrics): m comparisons cost m
    paired bootstraps, each drawing the same counts from the seed.

    References
    ----------
    Romano, J. P. & Wolf, M. (2005). Exact and approximate stepdown methods
    for multiple hypothesis testing. JASA 100(469), 94-108.
    Romano, J. P. & Wolf, M. (2016). Efficient computation of adjusted
    p-values for resampling-based stepdown multiple testing. Statistics &
    Probability Letters 113, 38-40.
    Westfall, P. H. & Young, S. S. (1993). Resampling-Based Multiple Testing.
    """
    metric, kind, name = _resolve_metric(metric, resample_by)
    k = len(y_scores)
    if k < 2:
        raise ValueError(f"y_scores must hold at least two models (one positional score array "
                         f"per model), got {k}")
    pairs = _pairs(k, comparisons, baseline)
    _check_counts_options(n_resamples, batch, resampling, stratify, groups, block_length)
    confidence_level = V.confidence_level(confidence_level)
    xp, arrays = B.as_arrays(y_true, *y_scores, sample_weight)
    y_true, scores, sw = arrays[0], list(arrays[1:-1]), arrays[-1]
    if B.is_traced(y_true, *scores, sw, groups):
        raise ValueError("many_models_bootstrap returns Python floats and cannot run on traced "
                         "arrays; under jax.jit use paired_bootstrap_replicates per pair")
    for i, s in enumerate(scores):
        if kind == "fast":
            B.check_1d(f"y_scores[{i}]", s)
        if s.shape[0] != y_true.shape[0]:
            raise ValueError(f"y_scores[{i}] has {s.shape[0]} rows but y_true has "
                             f"{y_true.shape[0]}; they must match")
    _check_workers(workers, xp)
    words = seed_words(seed)

    est = np.empty(k)
    for i, s in enumerate(scores):
        est[i] = float(_full_estimate(metric, kind, y_true, s, sw, f"y_scores[{i}]"))

    m = len(pairs)
    dist = np.full((n_resamples, k), math.nan)
    d_rep = np.empty((n_resamples, m))
    diff = np.empty(m)
    setups = []
    for j, (a, b) in enumerate(pairs):
        _, yy, sa, sb, ww, gg = _prepare_arrays(y_true, scores[a], scores[b], sw, groups, kind)
        s = _setup(metric, kind, name, xp, yy, sa, sb, ww, stratify=stratify, groups=gg,
                   num_groups=None, block_length=block_length,
                   poisson=resampling == "poisson", traced=False)
        ra, rb, rd = _replicates(s, None, n_resamples, batch, None, progress, workers,
                                 words=words)
        dist[:, a], dist[:, b] = ra, rb
        d_rep[:, j] = rd
        diff[j] = _exact_difference(s, float(est[a]), float(est[b]))
        setups.append(s)

    ok = np.all(np.isfinite(d_rep), axis=1)
    n_ok = int(ok.sum())
    n_undefined = int(n_resamples - n_ok)
    if n_undefined:
        B.warn_undefined(f"{n_undefined} of {n_resamples} bootstrap replicates are undefined "
                         f"(metric NaN for some model); they are left out")
    d_ok = d_rep[ok]
    # the design warning once, on the comparison with the fewest distinct differences
    fewest = min(range(m), key=lambda j: np.unique(d_ok[:, j]).size)
    _warn_degenerate(setups[fewest], y_true, stratify, d_ok[:, fewest])

    nan_m = np.full(m, math.nan)
    marg_lo, marg_hi = nan_m.copy(), nan_m.copy()
    for j in range(m):
        ci = _interval(d_ok[:, j], float(diff[j]), "percentile", confidence_level,
                       "two-sided", None)
        marg_lo[j], marg_hi[j] = ci.low, ci.high
    if n_ok >= 2 and np.all(np.isfinite(diff)):
        sd = np.std(d_ok, axis=0, ddof=1)
        t_rep, t = studentized(d_ok, diff, sd)
        crit = float(np.quantile(np.max(t_rep, axis=1), confidence_level))
        half = crit * sd
        sim = ConfidenceInterval(diff - half, diff + half)
        pvalue = np.mean(t_rep >= t, axis=0)
        p_rw = romano_wolf(t_rep, t)
    else:
        sd = np.std(d_ok, axis=0, ddof=1) if n_ok >= 2 else nan_m.copy()
        crit = math.nan
        sim = ConfidenceInterval(nan_m.copy(), nan_m.copy())
        pvalue, p_rw = nan_m.copy(), nan_m.copy()
    return ManyModelsResult(
        comparisons=pairs, estimates=est, difference=diff,
        confidence_interval=ConfidenceInterval(marg_lo, marg_hi),
        simultaneous_interval=sim, critical_value=crit, standard_error=sd,
        pvalue=pvalue, pvalue_romano_wolf=p_rw, bootstrap_distribution=d_rep,
        distributions=dist, n_undefined=n_undefined, n_resamples=int(n_resamples),
        confidence_level=float(confidence_level), design=setups[0].design.label,
        resampling=resampling)

