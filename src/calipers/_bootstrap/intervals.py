"""Bootstrap intervals: percentile, basic and BCa, and the jackknife for BCa's acceleration."""

from __future__ import annotations

import math
import warnings
from statistics import NormalDist

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .engine import _compiled_masked, _default_batch, _is_trace_error
from .._core.exceptions import UndefinedMetricWarning
from .resample import unit_weights
from .._core.results import ConfidenceInterval
from .._core.types import ArrayLike


_NORMAL = NormalDist()


# --------------------------------------------------------------------------
# intervals
# --------------------------------------------------------------------------

def _quantiles(x, probs):
    return [float(v) for v in np.quantile(x, probs)]


def _bca_probs(d, theta, jack, alpha_lo, alpha_hi):
    """BCa quantile levels (Efron & Tibshirani 1993, 14.3; scipy's formulas)."""
    pct = (np.count_nonzero(d < theta) + np.count_nonzero(d <= theta)) / (2.0 * d.size)
    jack = jack[np.isfinite(jack)]
    if not (0 < pct < 1) or jack.size < 2:
        return None
    if d.min() == d.max():
        # Every replicate equal (identical models, say): the bias correction
        # and acceleration are 0/0. scipy returns NaN here too.
        return None
    z0 = _NORMAL.inv_cdf(pct)
    u = (jack.size - 1) * (jack.mean() - jack)
    den = np.sum(u**2)
    if den == 0:
        # Every jackknife value equal (the median of data with a repeated middle value):
        # the acceleration is 0/0. scipy returns NaN with a warning; so does calipers,
        # rather than a bias-corrected interval with a = 0 that it would call BCa.
        return None
    a = float(np.sum(u**3) / (6.0 * den**1.5))
    out = []
    for al in (alpha_lo, alpha_hi):
        z = z0 + _NORMAL.inv_cdf(al)
        q = 1 - a * z
        out.append(_NORMAL.cdf(z0 + z / q) if q > 0 else math.nan)
    if not all(np.isfinite(out)):
        return None
    return out


def _interval(d, theta, method, confidence_level, alternative, jack):
    """Interval of the defined replicates ``d`` around the estimate ``theta``."""
    if d.size == 0 or not np.isfinite(theta):
        return ConfidenceInterval(math.nan, math.nan)
    alpha = (1 - confidence_level) / 2 if alternative == "two-sided" else 1 - confidence_level
    probs = [alpha, 1 - alpha]
    if method == "bca":
        probs = _bca_probs(d, theta, jack, alpha, 1 - alpha)
        if probs is None:
            B.warn_undefined("the BCa interval is undefined here (all replicates equal, all "
                             "on one side of the estimate, every jackknife value equal so the "
                             "acceleration is 0/0, or fewer than two jackknife values); "
                             "returning NaN")
            return ConfidenceInterval(math.nan, math.nan)
    lo, hi = _quantiles(d, probs)
    if method == "basic":
        lo, hi = 2 * theta - hi, 2 * theta - lo
    if alternative == "less":
        lo = -math.inf
    elif alternative == "greater":
        hi = math.inf
    return ConfidenceInterval(lo, hi)


def bootstrap_interval(replicates: ArrayLike, estimate: ArrayLike, *, method: str = "percentile",
                       confidence_level: float = 0.95, alternative: str = "two-sided",
                       jackknife: ArrayLike = None) -> ConfidenceInterval:
    """Confidence interval from bootstrap replicates you already have.

    The interval :func:`paired_bootstrap` reports, computed from any
    replicates: a statistic evaluated on your own resamples, the
    ``bootstrap_distribution`` of a :class:`BootstrapResult`, or a
    simulation's draws. Percentile and basic intervals take quantiles by
    linear interpolation (NumPy's default, Hyndman & Fan type 7), as
    ``scipy.stats.bootstrap`` does; BCa uses the bias correction and the
    jackknife acceleration of Efron & Tibshirani (1993), 14.3 (scipy's formulas).

    Parameters
    ----------
    replicates : array (B,) of real numbers, any backend
        The statistic on each bootstrap resample. NaN marks an undefined
        replicate (a resample with one class, say): those are left out, as
        :func:`paired_bootstrap` leaves them out and counts them.
    estimate : real number
        The statistic on the full sample (basic and BCa are centred on it).
    method : {"percentile", "basic", "bca"}
        Case-insensitive (``"BCa"`` is accepted).
    confidence_level : float in (0, 1)
    alternative : {"two-sided", "less", "greater"}
        One-sided intervals put the whole ``1 - confidence_level`` in one
        tail; the open end is infinite.
    jackknife : array (m,) of real numbers, optional
        Leave-one-out (or leave-one-group-out) values of the statistic, for
        BCa's acceleration; required with ``method="bca"``. NaN values are
        left out.

    Returns
    -------
    ConfidenceInterval
        ``(low, high)`` as Python floats. NaN, with a
        :class:`calipers.UndefinedMetricWarning`, when BCa is undefined (every
        replicate equal, all on one side of the estimate, every jackknife
        value equal so that the acceleration is 0/0, fewer than two jackknife
        values), as ``scipy.stats.bootstrap`` gives NaN with a warning; NaN
        without a warning when no replicate is defined or the estimate is NaN.

    Raises
    ------
    ValueError
        ``replicates`` or ``jackknife`` not 1-D real arrays, or holding an
        infinite value; ``estimate`` not a real number or infinite;
        ``method``, ``alternative`` or ``confidence_level`` out of their
        domains; ``method="bca"`` without ``jackknife``.

    Notes
    -----
    Eagerly the quantiles are taken on the host in float64. Under
    ``jax.jit`` (traced ``replicates``, ``estimate`` or ``jackknife``; the
    options stay static and are checked eagerly) the same formulas run on
    device: the ends are 0-d JAX arrays of the replicates' float dtype
    (float32 without x64), equal to the eager ones up to that rounding; NaN
    replicates are left out as eagerly; nothing raises or warns there, so an
    infinite replicate, estimate or jackknife value, an undefined BCa, or no
    defined replicate gives NaN ends. Memory O(B) (one sort).
    """
    confidence_level = V.confidence_level(confidence_level)
    # case-insensitive, as paired_bootstrap ("BCa" is the usual spelling)
    method = V.choice(method.lower() if isinstance(method, str) else method, "method",
                      ("percentile", "basic", "bca"))
    alternative = V.choice(alternative, "alternative", ("two-sided", "less", "greater"))
    if B.is_traced(replicates, estimate, jackknife):
        if method == "bca" and jackknife is None:
            raise ValueError("jackknife must be given with method='bca' (the leave-one-out "
                             "values of the statistic, for the acceleration)")
        return _traced_interval(replicates, estimate, method, confidence_level, alternative,
                                jackknife)
    d = _real_vector(replicates, "replicates")
    if isinstance(estimate, (bool, np.bool_)) or not isinstance(
            estimate, (int, float, np.integer, np.floating)) and not (
            B.is_array(estimate) and getattr(estimate, "ndim", 1) == 0):
        raise ValueError(f"estimate must be a real number, got {estimate!r}")
    theta = float(B.to_numpy(estimate)) if B.is_array(estimate) else float(estimate)
    if math.isinf(theta):
        raise ValueError(f"estimate must be finite or NaN, got {theta!r}")
    jack = None
    if method == "bca":
        if jackknife is None:
            raise ValueError("jackknife must be given with method='bca' (the leave-one-out "
                             "values of the statistic, for the acceleration)")
        jack = _real_vector(jackknife, "jackknife")
    return _interval(d[~np.isnan(d)], theta, method, confidence_level, alternative, jack)


def _sorted_lerp(xs, m, p, jnp):
    """Type-7 quantile ``p`` of the ``m`` first (sorted) values of ``xs``: NumPy's formula
    (``numpy.quantile``'s linear interpolation, its ``t >= 1/2`` form included)."""
    h = (m - 1) * p
    lo = jnp.clip(jnp.floor(h), 0, jnp.maximum(m - 1, 0)).astype(jnp.int32)
    hi = jnp.minimum(lo + 1, jnp.maximum(m - 1, 0))
    t = h - lo
    a, b = xs[lo], xs[hi]
    diff = b - a
    out = jnp.where(t >= 0.5, b - diff * (1 - t), a + diff * t)
    return jnp.where(a == b, a, out)


def _traced_interval(replicates, estimate, method, confidence_level, alternative, jackknife):
    """:func:`bootstrap_interval` under ``jit``: the same formulas on device, NaN for undefined."""
    import jax.numpy as jnp
    from jax.scipy.special import ndtr, ndtri

    d = jnp.asarray(replicates)
    if d.ndim != 1 or not (jnp.issubdtype(d.dtype, jnp.floating)
                           or jnp.issubdtype(d.dtype, jnp.integer)):
        raise ValueError(f"replicates must be a 1-D array of real numbers, got shape "
                         f"{tuple(d.shape)} and dtype {d.dtype}")
    f = d.dtype if jnp.issubdtype(d.dtype, jnp.floating) and d.dtype.itemsize >= 4 \
        else jnp.result_type(float)
    d = d.astype(f)
    theta = jnp.asarray(estimate, dtype=f)
    if theta.ndim != 0:
        raise ValueError(f"estimate must be a real number, got an array of shape "
                         f"{tuple(theta.shape)}")
    bad = jnp.any(jnp.isinf(d)) | jnp.isinf(theta) | jnp.isnan(theta)
    ok = ~jnp.isnan(d)
    m = jnp.sum(ok)
    xs = jnp.sort(d)          # NaN sorts last: the first m values are the defined ones
    bad = bad | (m == 0)
    alpha = (1 - confidence_level) / 2 if alternative == "two-sided" else 1 - confidence_level
    p_lo, p_hi = jnp.asarray(alpha, dtype=f), jnp.asarray(1 - alpha, dtype=f)
    if method == "bca":
        jk = jnp.asarray(jackknife)
        if jk.ndim != 1:
            raise ValueError(f"jackknife must be a 1-D array of real numbers, got shape "
                             f"{tuple(jk.shape)}")
        jk = jk.astype(f)
        bad = bad | jnp.any(jnp.isinf(jk))
        mf = jnp.maximum(m, 1).astype(f)
        pct = (jnp.sum(ok & (d < theta)) + jnp.sum(ok & (d <= theta))) / (2 * mf)
        jok = jnp.isfinite(jk)
        k = jnp.sum(jok)
        kf = jnp.maximum(k, 1).astype(f)
        jmean = jnp.sum(jnp.where(jok, jk, 0)) / kf
        u = jnp.where(jok, (k - 1) * (jmean - jk), 0)
        den = jnp.sum(u ** 2)
        acc = jnp.sum(u ** 3) / (6.0 * jnp.where(den > 0, den, 1) ** 1.5)
        dmin = jnp.min(jnp.where(ok, d, jnp.inf))
        dmax = jnp.max(jnp.where(ok, d, -jnp.inf))
        z0 = ndtri(jnp.clip(pct, 1e-300 if f == jnp.float64 else 1e-30, 1))
        probs = []
        undefined = ~((pct > 0) & (pct < 1)) | (k < 2) | (dmin == dmax) | (den == 0)
        for al in (p_lo, p_hi):
            z = z0 + ndtri(al)
            q = 1 - acc * z
            probs.append(jnp.where(q > 0, ndtr(z0 + z / jnp.where(q > 0, q, 1)), jnp.nan))
        undefined = undefined | ~jnp.isfinite(probs[0]) | ~jnp.isfinite(probs[1])
        bad = bad | undefined
        p_lo, p_hi = (jnp.where(undefined, 0.5, p) for p in probs)
    lo = _sorted_lerp(xs, m, p_lo, jnp)
    hi = _sorted_lerp(xs, m, p_hi, jnp)
    if method == "basic":
        lo, hi = 2 * theta - hi, 2 * theta - lo
    if alternative == "less":
        lo = jnp.full((), -jnp.inf, dtype=f)
    elif alternative == "greater":
        hi = jnp.full((), jnp.inf, dtype=f)
    nan = jnp.full((), jnp.nan, dtype=f)
    return ConfidenceInterval(jnp.where(bad, nan, lo), jnp.where(bad, nan, hi))


def _real_vector(x, name):
    try:
        a = B.widen_extension(np.asarray(B.to_numpy(x)))   # bfloat16 as float32, exactly
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a 1-D array of real numbers: {exc}") from None
    if a.ndim != 1 or not (np.issubdtype(a.dtype, np.floating)
                           or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must be a 1-D array of real numbers, got shape {a.shape} "
                         f"and dtype {a.dtype}")
    a = a.astype(np.float64)
    if np.isinf(a).any():
        raise ValueError(f"{name} must not hold an infinite value (NaN marks an undefined one)")
    return a


def _jackknife(s, jackknife_groups):
    """Jackknife values of (metric A, metric B) for BCa's acceleration, no O(n^2) work.

    Plain or stratified rows with a kernel that has exact leave-one-out values
    (AUC, unweighted AP, log loss, Brier): those, from the sorted order, O(n).
    Otherwise a grouped jackknife: the resampling units (rows, clusters or
    blocks) in at most ``jackknife_groups`` groups (unit % G), each group
    deleted in turn: G evaluations of O(n).
    """
    xp = s.xp
    w_units = unit_weights(s.design, s.design_data[0])
    if s.design.kind in ("plain", "stratified") and w_units is None:
        la = s.kernel_a.loo(s.state_a, xp)
        lb = s.kernel_b.loo(s.state_b, xp)
        if la is not None and lb is not None:
            return (np.asarray(B.to_numpy(la), dtype=np.float64),
                    np.asarray(B.to_numpy(lb), dtype=np.float64))
    n = s.n
    # units per layout position, from the caller's row order (never a model's order)
    arrays, layout = s.design_data
    row = np.arange(n) if layout is None else np.asarray(B.to_numpy(layout))
    if w_units is not None:   # delete-one-unit when M <= jackknife_groups
        return _unit_jackknife(s, w_units, row, min(int(w_units.sum()), jackknife_groups))
    if s.design.kind == "cluster":
        unit = np.asarray(B.to_numpy(arrays[0]))[row]
        n_units = s.design.n_units
    elif s.design.kind == "block":
        unit = row // s.design.block_length
        n_units = int(unit.max()) + 1
    else:
        unit = row
        n_units = n
    G = min(n_units, jackknife_groups)
    grp = unit % G
    ja, jb = np.empty(G), np.empty(G)
    idt = np.int64 if not B.is_jax(xp) else np.dtype(B.acc_int(xp))
    if B.is_jax(xp) and s.kind != "indices":
        import jax.numpy as jnp

        fn = _compiled_masked(s.kernel_a, s.kernel_b, idt.name)
        step = _default_batch(n)
        grp_j = jnp.asarray(grp.astype(idt))
        try:
            for g0 in range(0, G, step):
                gs = jnp.arange(g0, g0 + step, dtype=idt)
                ra, rb = fn(gs, grp_j, s.state_a, s.state_b)
                m = min(step, G - g0)
                ja[g0:g0 + m] = np.asarray(ra, dtype=np.float64)[:m]
                jb[g0:g0 + m] = np.asarray(rb, dtype=np.float64)[:m]
            return ja, jb
        except Exception as exc:  # metric not traceable: evaluate eagerly below
            if s.kind != "weights" or not _is_trace_error(exc):
                raise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for g in range(G):
            c = (grp != g).astype(idt)
            c = c if B.is_numpy(xp) else xp.asarray(c)
            ja[g] = float(s.kernel_a.evaluate(s.state_a, c, xp))
            jb[g] = float(s.kernel_b.evaluate(s.state_b, c, xp))
    return ja, jb


def _unit_jackknife(s, w_rows, row, G):
    """Grouped jackknife over repeated units (integer weights as repetitions).

    Units are numbered row after row in the caller's row order (``w_rows``,
    never a model's score order, so a model's jackknife values do not depend on
    the other model); group g deletes the units ``j`` with ``j % G == g``, so a
    row keeps ``w - #{its units in g}``; ``row`` maps layout positions to rows.
    """
    xp = s.xp
    w_rows = np.asarray(w_rows)
    hi = np.cumsum(w_rows)
    lo = hi - w_rows
    ja, jb = np.empty(G), np.empty(G)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for g in range(G):
            # units j in [lo, hi) with j = g (mod G): floor((hi-1-g)/G) - floor((lo-1-g)/G)
            c = (w_rows - ((hi - 1 - g) // G - (lo - 1 - g) // G))[row]
            c = c.astype(np.int64)
            if B.is_jax(xp):
                c = xp.asarray(c, dtype=B.acc_int(xp))
            elif not B.is_numpy(xp):
                c = xp.asarray(c)
            ja[g] = float(s.kernel_a.evaluate(s.state_a, c, xp))
            jb[g] = float(s.kernel_b.evaluate(s.state_b, c, xp))
    return ja, jb
