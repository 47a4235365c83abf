"""Multiplicity adjustments for a family of p-values (Holm, Benjamini–Hochberg).

When a report compares several metrics, slices or models against one
baseline, each p-value alone overstates the evidence.  The adjusted p-value
of a hypothesis is the smallest family-wise level (Holm) or false discovery
rate (Benjamini–Hochberg) at which it would be rejected, so "adjusted p <=
0.05" reads as a decision at that level for the whole family.

Definitions, with ``p_(1) <= ... <= p_(m)`` the sorted p-values:

* Holm (1979), step-down, controls the family-wise error rate under any
  dependence: ``adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``.
* Bonferroni: ``min(1, m p_i)``.
* Benjamini & Hochberg (1995), step-up, controls the false discovery rate
  for independent or positively dependent tests:
  ``adj_(i) = min_{j >= i} min(1, m p_(j) / j)``.
* Benjamini & Yekutieli (2001): BH times ``sum_{k=1}^m 1/k``, valid under
  any dependence.

These equal R's ``p.adjust`` and ``statsmodels.stats.multitest.multipletests``
(methods ``holm``, ``bonferroni``, ``fdr_bh``, ``fdr_by``).  Tied p-values get
the same adjusted value whatever their order.
"""

from __future__ import annotations

import math
from typing import Any

from .._core import xp as B
from .._core.types import Array, ArrayLike

__all__ = ["adjust_pvalues"]

_METHODS = ("holm", "bonferroni", "bh", "by")


def _cumulative(x, xp, *, op: str, reverse: bool = False):
    """Running max or min along a 1-D array (native on NumPy and JAX)."""
    if reverse:
        x = xp.flip(x)
    out: Any
    if B.is_numpy(xp):
        import numpy as np

        out = (np.maximum if op == "max" else np.minimum).accumulate(x)
    elif B.is_jax(xp):
        import jax

        out = (jax.lax.cummax if op == "max" else jax.lax.cummin)(x)
    else:  # generic array API: O(m^2), m is the number of hypotheses (small)
        m = x.shape[0]
        i = xp.arange(m)
        lower = i[None, :] <= i[:, None]
        fill = -math.inf if op == "max" else math.inf
        big = xp.where(lower, x[None, :], xp.asarray(fill, dtype=x.dtype))
        out = xp.max(big, axis=1) if op == "max" else xp.min(big, axis=1)
    return xp.flip(out) if reverse else out


def adjust_pvalues(pvalues: ArrayLike, *, method: str = "holm") -> Array:
    """Adjusted p-values for a family of hypotheses.

    Parameters
    ----------
    pvalues : array of shape (m,)
        P-values in [0, 1], one per hypothesis, in any order.
    method : {"holm", "bonferroni", "bh", "by"}
        ``"holm"`` (Holm 1979, family-wise error rate, any dependence; the
        default), ``"bonferroni"``, ``"bh"`` (Benjamini & Hochberg 1995, false
        discovery rate, independent or positively dependent tests) or
        ``"by"`` (Benjamini & Yekutieli 2001, false discovery rate, any
        dependence).

    Returns
    -------
    array of shape (m,), in the order of ``pvalues``, float (at least
    float32; float64 where the input is float64 or integer).  Each value is
    in [0, 1] and no smaller than its raw p-value; the adjusted values are
    monotone in the raw ones, and tied raw p-values get equal adjusted
    values.  An empty family gives an empty array.

    Raises
    ------
    ValueError
        ``pvalues`` not 1-D, NaN, or outside [0, 1]; unknown ``method``.
        Under ``jax.jit`` the value checks cannot raise: a family with an
        invalid p-value gives NaN everywhere.

    Notes
    -----
    One sort, then a running max (Holm) or min (BH/BY) — O(m log m), and
    ``jit``-compilable.  The same definitions as R's ``p.adjust`` and
    statsmodels' ``multipletests``.

    Examples
    --------
    >>> import calipers
    >>> print(calipers.adjust_pvalues([0.01, 0.04, 0.03, 0.02, 0.05], method="holm"))
    [0.05 0.09 0.09 0.08 0.09]
    >>> print(calipers.adjust_pvalues([0.01, 0.04, 0.03, 0.02, 0.05], method="bh"))
    [0.05 0.05 0.05 0.05 0.05]
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, _METHODS))}; "
                         f"got {method!r}")
    xp, (p,) = B.as_arrays(pvalues)
    B.check_1d("pvalues", p)
    B.check_numeric("pvalues", p, xp)
    out = B.out_float(xp, p)
    if xp.isdtype(p.dtype, "real floating") and p.dtype != out:
        p = xp.astype(p, out)
    elif not xp.isdtype(p.dtype, "real floating"):
        p = xp.astype(p, out)
    bad = ~((p >= 0) & (p <= 1))  # NaN is bad too
    if not B.is_traced(p) and bool(xp.any(bad)):
        i = B.first_index(bad, xp)
        raise ValueError(f"pvalues must be in [0, 1] (no NaN); element {i} is "
                         f"{B.show(B.to_numpy(p)[i])}")
    m = p.shape[0]
    if m == 0:
        return p
    if method == "bonferroni":
        adj = xp.minimum(p * m, xp.asarray(1.0, dtype=out))
    else:
        order = xp.argsort(p, stable=True)
        ps = xp.take(p, order)
        rank = xp.astype(xp.arange(1, m + 1, device=B.device(p)), out)  # j = 1..m
        if method == "holm":
            adj_s = _cumulative(xp.minimum((m - rank + 1) * ps, xp.asarray(1.0, dtype=out)),
                                xp, op="max")
        else:
            scale = m if method == "bh" else m * sum(1.0 / k for k in range(1, m + 1))
            # m / j >= 1, so the adjusted value is never below the raw one;
            # the outer maximum keeps that true after rounding.
            adj_s = _cumulative(xp.minimum(ps * (scale / rank), xp.asarray(1.0, dtype=out)),
                                xp, op="min", reverse=True)
            adj_s = xp.maximum(adj_s, ps)
        # Back to input order: the inverse permutation of ``order``.
        inv = xp.argsort(order)
        adj = xp.take(adj_s, inv)
        # Tied raw p-values end up equal: within a tie group Holm's factor
        # falls and BH's rises with the rank, so the running max (min) takes
        # the group's first (last) value for every member.
    return B.nan_if(xp.any(bad), adj, xp)
