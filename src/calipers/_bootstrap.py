"""Paired bootstrap of the difference between two models on the same examples.

A replicate is a vector of multinomial counts per example (how often each
example is drawn), the same vector for model A and model B: that is what
makes the comparison paired. The metric is evaluated with the counts as
integer sample weights, which equals evaluating it on the resampled rows
(exactly: counts are accumulated in integers).

For the metrics calipers knows (ROC AUC, AP, log loss, Brier) each model's
scores are sorted once and every replicate costs O(n): weighted prefix sums
over the one sorted order. Any other metric that accepts ``sample_weight`` is
called once per replicate. On JAX the replicates run as ``jit``-compiled,
``vmap``-ped chunks of ``batch`` replicates, so memory is bounded whatever
``n_resamples`` is; on NumPy they run one at a time, each vectorised over n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import _backend as B
from . import _probability as _prob
from . import _ranking as _rank

__all__ = ["ConfidenceInterval", "BootstrapResult", "paired_bootstrap"]


@dataclass(frozen=True)
class ConfidenceInterval:
    low: float
    high: float


@dataclass(frozen=True)
class BootstrapResult:
    """What :func:`paired_bootstrap` returns.

    Attributes
    ----------
    estimate_a, estimate_b : float
        The metric of each model on the full data.
    difference : float
        ``estimate_a - estimate_b``.
    confidence_interval : ConfidenceInterval
        Interval for the difference at ``confidence_level``.
    interval_a, interval_b : ConfidenceInterval
        Percentile intervals for each model's metric, from the same replicates.
    bootstrap_distribution : ndarray (n_resamples,)
        Replicated differences; NaN where the replicate was undefined.
    distribution_a, distribution_b : ndarray (n_resamples,)
        Replicated values of each model.
    standard_error : float
        Standard deviation (ddof=1) of the defined replicated differences.
    n_undefined : int
        Replicates where the metric of A or B was undefined (for example a
        resample with one class has no AUC). They are left out of every
        interval and share, never scored as 0 or 0.5.
    prob_a_greater : float
        Share of defined replicates in which A's metric exceeds B's.
    """

    estimate_a: float
    estimate_b: float
    difference: float
    confidence_interval: ConfidenceInterval
    interval_a: ConfidenceInterval
    interval_b: ConfidenceInterval
    bootstrap_distribution: np.ndarray = field(repr=False)
    distribution_a: np.ndarray = field(repr=False)
    distribution_b: np.ndarray = field(repr=False)
    standard_error: float
    n_undefined: int
    n_resamples: int
    prob_a_greater: float
    confidence_level: float
    method: str


# --------------------------------------------------------------------------
# resamplable kernels: prepare once per model, evaluate per replicate in O(n)
# --------------------------------------------------------------------------

class _SortedKernel:
    """AUC / AP: sort once, then weighted prefix sums per replicate."""

    def __init__(self, from_stats):
        self.from_stats = from_stats

    def prepare(self, y01, s, xp):
        return _rank.presort(y01, s, xp)

    def evaluate(self, ps, counts, xp):
        st = _rank.stats_from_presorted(ps, xp.take(counts, ps.order), xp)
        return self.from_stats(st, xp)[0]


class _MeanKernel:
    """Log loss / Brier: per-row losses once, then a weighted mean per replicate."""

    def __init__(self, per_row):
        self.per_row = per_row

    def prepare(self, y01, s, xp):
        return self.per_row(y01, s, xp)

    def evaluate(self, loss, counts, xp):
        c = xp.astype(counts, loss.dtype)
        return xp.sum(loss * c) / xp.sum(c)


def _log_loss_rows(y01, p, xp):
    f = B.acc_float(xp)
    p = xp.astype(p, f)
    eps = float(xp.finfo(p.dtype).eps)
    p = xp.clip(p, eps, 1 - eps)
    y = xp.astype(y01, f)
    return -(y * xp.log(p) + (1 - y) * xp.log1p(-p))


def _brier_rows(y01, p, xp):
    d = xp.astype(p, B.acc_float(xp)) - xp.astype(y01, B.acc_float(xp))
    return d * d


_KERNELS = {
    _rank.roc_auc_score: _SortedKernel(_rank.auc_from_stats),
    _rank.average_precision_score: _SortedKernel(_rank.ap_from_stats),
    _prob.log_loss: _MeanKernel(_log_loss_rows),
    _prob.brier_score_loss: _MeanKernel(_brier_rows),
}

_NAMES = {
    "roc_auc": _rank.roc_auc_score,
    "average_precision": _rank.average_precision_score,
    "log_loss": _prob.log_loss,
    "brier": _prob.brier_score_loss,
}


class _CallKernel:
    """Any metric ``f(y_true, y_score, *, sample_weight)``: one call per replicate."""

    def __init__(self, metric):
        self.metric = metric

    def prepare(self, y01, s, xp):
        return (y01, s)

    def evaluate(self, state, counts, xp):
        y, s = state
        return xp.asarray(self.metric(y, s, sample_weight=counts))


# --------------------------------------------------------------------------
# drawing counts
# --------------------------------------------------------------------------

def _counts_numpy(rng, n, strata):
    if strata is None:
        return np.bincount(rng.integers(0, n, n), minlength=n)
    counts = np.zeros(n, dtype=np.int64)
    for idx in strata:
        counts += np.bincount(idx[rng.integers(0, idx.shape[0], idx.shape[0])], minlength=n)
    return counts


def _counts_jax(key, n, strata):
    import jax
    import jax.numpy as jnp

    if strata is None:
        draw = jax.random.randint(key, (n,), 0, n)
        return jnp.bincount(draw, length=n)
    keys = jax.random.split(key, len(strata))
    counts = jnp.zeros(n, dtype=jnp.int32)
    for k, idx in zip(keys, strata):
        pick = idx[jax.random.randint(k, (idx.shape[0],), 0, idx.shape[0])]
        counts = counts + jnp.bincount(pick, length=n)
    return counts


# --------------------------------------------------------------------------
# the public function
# --------------------------------------------------------------------------

def paired_bootstrap(metric, y_true, y_score_a, y_score_b, *, sample_weight=None,
                     n_resamples: int = 1000, confidence_level: float = 0.95,
                     method: str = "percentile", stratify: bool = False,
                     batch: int | None = None, seed=None,
                     progress: Callable[[int], None] | None = None) -> BootstrapResult:
    """Paired bootstrap interval for ``metric(A) - metric(B)`` on the same examples.

    Each replicate draws n examples with replacement (the same draw for both
    models), evaluates the metric of A and of B on it, and records the
    difference (Efron & Tibshirani 1993, ch. 13; Koehn 2004 for paired
    comparisons of systems).

    Parameters
    ----------
    metric : callable or str
        ``calipers.roc_auc_score``, ``average_precision_score``, ``log_loss``,
        ``brier_score_loss`` (or their names ``"roc_auc"``,
        ``"average_precision"``, ``"log_loss"``, ``"brier"``) take the fast
        path: one sort per model, O(n) per replicate. Any other callable
        ``metric(y_true, y_score, *, sample_weight=...)`` is called per replicate
        with the replicate's counts as weights.
    y_true : array (n,)
        Binary labels in {0, 1}.
    y_score_a, y_score_b : arrays (n,)
        Scores (or probabilities) of the two models for the same examples.
    sample_weight : array (n,), optional
        Not supported yet: raises ``ValueError`` (resampling weighted rows needs
        a stated design; the bootstrap issue adds it).
    n_resamples : int
        Number of replicates B (>= 1).
    confidence_level : float in (0, 1)
    method : {"percentile", "basic"}
        Percentile interval of the replicated differences, or the basic
        (reverse percentile) interval ``2 * d - q``.
    stratify : bool
        Resample positives and negatives separately (fixed class counts), so no
        replicate lacks a class.
    batch : int, optional
        Replicates per compiled chunk on JAX (default 256); memory is
        O(batch * n) whatever ``n_resamples`` is. Ignored on NumPy.
    seed : None, int, numpy Generator or JAX key
        The same seed gives the same replicates on the same backend.
    progress : callable, optional
        Called with the number of replicates just finished (for progress bars).

    Returns
    -------
    BootstrapResult
        Estimates, difference, intervals, the replicated distributions, the
        standard error, ``n_undefined`` and ``prob_a_greater``. Undefined
        replicates (NaN metric for A or B) are counted and left out.

    Raises
    ------
    ValueError
        Bad ``n_resamples``, ``confidence_level``, ``method`` or ``batch``, and
        every input error of the metric itself (shapes, labels, scores).
    """
    if isinstance(metric, str):
        if metric not in _NAMES:
            raise ValueError(f"metric must be a callable or one of {sorted(_NAMES)}, got {metric!r}")
        metric = _NAMES[metric]
    if not callable(metric):
        raise ValueError("metric must be callable or a metric name")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if not (0 < confidence_level < 1):
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    if method not in ("percentile", "basic"):
        raise ValueError(f"method must be 'percentile' or 'basic', got {method!r}")
    if batch is not None and (not isinstance(batch, (int, np.integer)) or batch < 1):
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported by paired_bootstrap yet")

    # Full-data estimates, which also validate every input with the metric's own messages.
    est_a = float(metric(y_true, y_score_a))
    est_b = float(metric(y_true, y_score_b))

    xp, (y_true, a, b) = B.as_arrays(y_true, y_score_a, y_score_b)
    B.check_same_length(y_true=y_true, y_score_a=a, y_score_b=b)
    y01, _ = B.binary_labels(y_true, xp)
    n = y01.shape[0]
    kernel = _KERNELS.get(metric) or _CallKernel(metric)

    strata = None
    if stratify:
        yn = B.to_numpy(y01)
        strata = [np.flatnonzero(yn == c) for c in (0, 1) if np.any(yn == c)]

    if B.is_jax(xp):
        da, db = _run_jax(kernel, xp, y01, a, b, n, strata, n_resamples, batch or 256,
                          seed, progress)
    else:
        da, db = _run_numpy(kernel, xp, y01, a, b, n, strata, n_resamples, seed, progress)

    diff = da - db
    ok = np.isfinite(diff)
    n_undefined = int(n_resamples - ok.sum())
    d_ok = diff[ok]
    alpha = 1 - confidence_level
    difference = est_a - est_b
    if d_ok.size == 0:
        ci = ConfidenceInterval(math.nan, math.nan)
        se = math.nan
        share = math.nan
    else:
        lo_q, hi_q = np.quantile(d_ok, [alpha / 2, 1 - alpha / 2])
        if method == "basic":
            lo_q, hi_q = 2 * difference - hi_q, 2 * difference - lo_q
        ci = ConfidenceInterval(float(lo_q), float(hi_q))
        se = float(np.std(d_ok, ddof=1)) if d_ok.size > 1 else math.nan
        share = float(np.mean(da[ok] > db[ok]))
    return BootstrapResult(
        estimate_a=est_a, estimate_b=est_b, difference=difference,
        confidence_interval=ci,
        interval_a=_percentile(da, alpha), interval_b=_percentile(db, alpha),
        bootstrap_distribution=diff, distribution_a=da, distribution_b=db,
        standard_error=se, n_undefined=n_undefined, n_resamples=int(n_resamples),
        prob_a_greater=share, confidence_level=confidence_level, method=method)


def _percentile(x, alpha):
    x = x[np.isfinite(x)]
    if x.size == 0:
        return ConfidenceInterval(math.nan, math.nan)
    lo, hi = np.quantile(x, [alpha / 2, 1 - alpha / 2])
    return ConfidenceInterval(float(lo), float(hi))


def _run_numpy(kernel, xp, y01, a, b, n, strata, n_resamples, seed, progress):
    rng = B.make_rng(seed, xp)
    state_a = kernel.prepare(y01, a, xp)
    state_b = kernel.prepare(y01, b, xp)
    da = np.empty(n_resamples)
    db = np.empty(n_resamples)
    for r in range(n_resamples):
        c = _counts_numpy(rng, n, strata)
        c = c if B.is_numpy(xp) else xp.asarray(c)
        da[r] = float(kernel.evaluate(state_a, c, xp))
        db[r] = float(kernel.evaluate(state_b, c, xp))
        if progress is not None:
            progress(1)
    return da, db


def _run_jax(kernel, xp, y01, a, b, n, strata, n_resamples, batch, seed, progress):
    import jax
    import jax.numpy as jnp

    key = B.make_rng(seed, xp)
    state_a = kernel.prepare(y01, a, xp)
    state_b = kernel.prepare(y01, b, xp)
    jstrata = None if strata is None else [jnp.asarray(s) for s in strata]

    def one(k, sa, sb):
        c = _counts_jax(k, n, jstrata)
        return kernel.evaluate(sa, c, xp), kernel.evaluate(sb, c, xp)

    chunk = jax.jit(jax.vmap(one, in_axes=(0, None, None)))
    keys = jax.random.split(key, n_resamples)
    outs_a, outs_b = [], []
    for start in range(0, n_resamples, batch):
        ks = keys[start:start + batch]
        m = ks.shape[0]
        if m < batch:  # pad the last chunk so the compiled shape is reused
            ks = jnp.concatenate([ks, jnp.broadcast_to(ks[:1], (batch - m,) + ks.shape[1:])])
        ra, rb = chunk(ks, state_a, state_b)
        outs_a.append(np.asarray(ra)[:m])
        outs_b.append(np.asarray(rb)[:m])
        if progress is not None:
            progress(m)
    return (np.concatenate(outs_a).astype(np.float64),
            np.concatenate(outs_b).astype(np.float64))
