"""Quantiles and the normal-approximation intervals that several families share.

* :func:`normal_quantile` - the two-sided standard normal quantile of a confidence level;
* :func:`linear_quantile` - the linear-interpolation sample quantile (NumPy's default,
  Hyndman & Fan 1996 definition 7) of a 1-D array of any namespace;
* :func:`wilson_bounds` - the Wilson (1927) score interval of a binomial proportion, with the
  exact ends 0 and 1 at ``p = 0`` and ``p = 1``.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_NORMAL = NormalDist()


def normal_quantile(confidence_level: float) -> float:
    """``z`` with ``P(|Z| <= z) = confidence_level`` for a standard normal ``Z``."""
    return _NORMAL.inv_cdf(1 - (1 - confidence_level) / 2)


def normal_ppf(q: float) -> float:
    """The standard normal quantile function at ``q`` in (0, 1)."""
    return _NORMAL.inv_cdf(q)


def linear_quantile(x, q: float, xp):
    """Linear-interpolation quantile (NumPy's default method) of a non-empty 1-D array."""
    s = xp.sort(x)
    m = s.shape[0]
    pos = q * (m - 1)
    i = int(math.floor(pos))
    j = min(i + 1, m - 1)
    w = pos - i
    return s[i] * (1 - w) + s[j] * w


def wilson_bounds(k, n, z: float, xp):
    """Wilson score interval ``(low, high)`` for ``k`` successes in ``n`` trials (floats).

    ``(p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` with ``p = k / n``; always inside
    [0, 1], and exactly 0 (1) at ``k = 0`` (``k = n``), where the formula gives the end only up
    to rounding. ``n`` must be positive (callers mask invalid entries).
    """
    p = k / n
    z2 = z * z
    den = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / den
    half = z * xp.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / den
    return xp.where(k == 0, 0.0, centre - half), xp.where(k == n, 1.0, centre + half)
