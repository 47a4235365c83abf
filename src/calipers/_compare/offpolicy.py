"""The bootstrap interval of an off-policy estimate, by the one resampler.

The estimators and their row terms live in :mod:`calipers._offpolicy`; the
resampling is calipers' own (:mod:`calipers._bootstrap`), so this function sits at
the level of the resampler.
"""

from __future__ import annotations

import math

from .._core import xp as B
from .._core import validation as V
from .._core.results import ConfidenceInterval
from .._offpolicy import OffPolicyInterval, prepare_rows, ratio_of_sums
from .._bootstrap.ratio import ratio_replicates
from .._core.types import ArrayLike, SeedLike

__all__ = ["off_policy_interval"]

_ESTIMATORS = ("ips", "snips", "dm", "dr")


def _percentile(sorted_vals, count, prob, xp):
    """Linear-interpolation quantile (NumPy's default) of the first ``count`` sorted values."""
    h = (xp.astype(count, sorted_vals.dtype) - 1) * prob
    lo = xp.floor(h)
    m = sorted_vals.shape[0]
    i = xp.astype(xp.clip(lo, 0, m - 1), B.acc_int(xp))
    j = xp.astype(xp.clip(lo + 1, 0, m - 1), B.acc_int(xp))
    j = xp.minimum(j, xp.astype(xp.clip(count - 1, 0, None), B.acc_int(xp)))
    a = xp.take(sorted_vals, xp.reshape(i, (1,)))[0]
    b = xp.take(sorted_vals, xp.reshape(j, (1,)))[0]
    return a + (h - lo) * (b - a)


def off_policy_interval(estimator: str, reward: ArrayLike, propensity: ArrayLike, target: ArrayLike,
                        estimated_rewards: ArrayLike = None, *, action: ArrayLike = None,
                        max_weight: float | None = None, min_propensity: float | None = None,
                        n_resamples: int = 1000, confidence_level: float = 0.95,
                        seed: SeedLike = None) -> OffPolicyInterval:
    """Percentile bootstrap interval of an off-policy estimate, resampling logged rows.

    Each replicate draws n row indices uniformly with replacement and
    recomputes the estimator on those rows; SNIPS re-normalises inside each
    resample (``sum(w r) / sum(w)`` over the resampled rows, not per-row terms
    divided by the full-sample mean weight; Open Bandit Pipeline issue 187).
    The interval is the ``(1 - c)/2`` and ``(1 + c)/2`` quantiles of the
    defined replicates with linear interpolation (NumPy's default quantile
    rule; Efron & Tibshirani 1993, ch. 13). Weight clipping and flooring are
    applied to every row before resampling.

    Every estimator is a ratio of sums over the rows, ``sum(num) / sum(den)``
    (``den`` = 1 for IPS, DM and DR, the weight for SNIPS), so a replicate is
    ``sum(c * num) / sum(c * den)`` under its multinomial row counts ``c``
    from calipers' one resampler (the counts of :func:`calipers.paired_bootstrap`'s
    plain rows: a function of (seed, replicate, row)). The same seed gives
    the same replicates on every backend, eagerly and under ``jax.jit``
    (where the counts are drawn inside the program); no index matrix is
    built and memory is O(n) per chunk of replicates whatever
    ``n_resamples`` is; shapes static.

    Parameters
    ----------
    estimator : {"ips", "snips", "dm", "dr"}
    reward, propensity, target, estimated_rewards, action, max_weight, min_propensity :
        As in :func:`ips_estimate` and :func:`doubly_robust_estimate`
        (``estimated_rewards`` and ``action`` with a 2-D ``target`` for "dm"
        and "dr").
    n_resamples : int >= 1, keyword
    confidence_level : float in (0, 1), keyword
    seed : None, int, numpy.random.Generator or SeedSequence, or a JAX key, keyword
        ``None`` (default): fresh entropy, as every resampling function of calipers.

    Returns
    -------
    OffPolicyInterval
        ``estimate``, ``low``, ``high``, ``distribution``, ``n_undefined``.
        Undefined replicates (SNIPS of a resample whose weights are all 0)
        are NaN, counted and left out, with an :class:`UndefinedMetricWarning`.

    Raises
    ------
    ValueError
        A bad ``estimator``, ``n_resamples`` or ``confidence_level``, and
        every input error of the estimator.
    """
    if estimator not in _ESTIMATORS:
        raise ValueError(f"estimator must be one of {_ESTIMATORS}, got {estimator!r}")
    n_resamples = V.positive_int(n_resamples, "n_resamples")
    confidence_level = V.confidence_level(confidence_level)
    if estimator == "dm":
        xp0, (t0,) = B.as_arrays(target)
        propensity = xp0.ones(t0.shape[0], dtype=B.acc_float(xp0)) if propensity is None \
            else propensity
    d = prepare_rows(reward, propensity, target, action, estimated_rewards,
                 max_weight=max_weight, min_propensity=min_propensity,
                 need_model=estimator in ("dm", "dr"))
    xp = d.xp
    n = d.w.shape[0]
    # Numerator and denominator per row: every estimator is sum(num) / sum(den) on a resample.
    if estimator == "ips":
        num, den = d.w * d.r, None
    elif estimator == "snips":
        num, den = d.w * d.r, d.w
    elif estimator == "dm":
        num, den = d.dm_rows, None
    else:
        num, den = d.dm_rows + d.w * (d.r - d.q_logged), None

    full = ratio_of_sums(xp.sum(num), None if den is None else xp.sum(den), n, xp)
    dist = ratio_replicates(num, den, n_resamples=int(n_resamples), seed=seed, xp=xp)
    undefined = xp.isnan(dist)
    n_undef = xp.sum(xp.astype(undefined, B.acc_int(xp)))
    count = int(n_resamples) - n_undef
    big = xp.asarray(math.inf, dtype=dist.dtype)
    srt = xp.sort(xp.where(undefined, big, dist))  # undefined replicates sort last
    a = (1 - float(confidence_level)) / 2
    low = _percentile(srt, count, a, xp)
    high = _percentile(srt, count, 1 - a, xp)
    none = ~(count > 0)
    low, high = B.nan_if(none, low, xp), B.nan_if(none, high, xp)
    if not B.is_traced(d.w) and int(n_undef) > 0:
        B.warn_undefined(f"{int(n_undef)} of {n_resamples} bootstrap replicates are undefined "
                         "(all weights 0 in the resample); they are left out of the interval")
    cast = lambda v: B.finalize(xp.astype(B.nan_if(d.invalid, v, xp), d.out), xp)  # noqa: E731
    if not B.is_traced(d.w) and bool(xp.isnan(full)) and estimator == "snips":
        B.warn_undefined("SNIPS is undefined on all rows: the sum of the importance weights is 0")
    return OffPolicyInterval(estimate=cast(full),
                             confidence_interval=ConfidenceInterval(cast(low), cast(high)),
                             distribution=xp.astype(dist, d.out),
                             n_undefined=B.finalize(n_undef, xp), estimator=estimator,
                             n_resamples=int(n_resamples),
                             confidence_level=float(confidence_level))
