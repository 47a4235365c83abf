"""Confidence intervals for one binomial proportion: Wilson's score interval and the Wald
interval."""

from __future__ import annotations

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.results import ConfidenceInterval
from .._kernels import quantile as Q
from .._core.types import ArrayLike

__all__ = ["proportion_confint"]


def proportion_confint(count: ArrayLike, nobs: ArrayLike, *, confidence_level: float = 0.95,
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
    confidence_level = V.confidence_level(confidence_level)
    method = V.choice(method, "method", ("wilson", "normal"))
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
    z = Q.normal_quantile(confidence_level)
    safe_n = xp.where(bad, 1.0, nf)
    p = kf / safe_n
    if method == "normal":
        h = z * xp.sqrt(p * (1 - p) / safe_n)
        lo, hi = p - h, p + h
    else:
        lo, hi = Q.wilson_bounds(kf, safe_n, z, xp)
    return ConfidenceInterval(B.finalize(B.nan_if(bad, lo, xp), xp),
                              B.finalize(B.nan_if(bad, hi, xp), xp))
