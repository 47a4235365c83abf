"""Paired tests on per-unit values: sign-flip randomisation test and unit bootstrap.

A *unit* is what was sampled independently: a query, a user, a cluster of
examples. Both functions take the per-unit values of two systems on the same
units (``a[i]`` and ``b[i]`` belong to unit ``i``; for example
``calipers.retrieval.evaluate(...).values["map"]`` of two runs) and study the
mean difference ``mean(a - b)``.

* :func:`paired_permutation_test` — the paired randomisation test (Fisher
  1935; for IR, Smucker, Allan & Carterette 2007): under the null hypothesis
  that A and B are exchangeable within each unit, every sign pattern of the
  differences is equally likely. Exact (all ``2**n`` patterns) for
  ``n <= exact_max``; otherwise Monte Carlo with the ``(1 + hits) / (1 + B)``
  p-value, which is never 0 and keeps the test valid (Phipson & Smyth 2010).
* :func:`paired_unit_bootstrap` — resamples units with replacement (Efron &
  Tibshirani 1993) for a percentile interval of the mean difference, its
  standard error, and the share of replicates with A ahead.

The permutation test's signs come from one NumPy ``Generator`` seeded by
``seed`` on every backend (the same seed gives the same draws on NumPy, JAX and
array-api-strict), so the sign matrix is a constant under ``jax.jit``. The unit
bootstrap's counts come from calipers' one resampler (counter-based, the same
integers on every backend, drawn inside the program under ``jit``). The
arithmetic runs in the input's namespace (widest float). ``n`` and
``n_resamples`` are static.
"""

from __future__ import annotations

from typing import Any

import math

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._kernels import quantile as Q
from .._core.results import ConfidenceInterval, result_type
from .._bootstrap.ratio import ratio_replicates
from .._core.types import ArrayLike, SeedLike

__all__ = ["MIN_BOOTSTRAP_UNITS", "PairedPermutationResult", "UnitBootstrapResult",
           "paired_permutation_test", "paired_unit_bootstrap"]

# Below this many units a percentile interval of a mean badly under-covers (the
# bootstrap distribution has at most n**n / n! distinct shapes and no tails), so no
# interval is given: NaN plus a warning.
MIN_BOOTSTRAP_UNITS = 10
_ALTERNATIVES = ("two-sided", "greater", "less")
_CHUNK_CELLS = 4_000_000   # cells of one sign or index block (memory bound)


@result_type(meta=("alternative", "exact", "n_units", "n_resamples"))
class PairedPermutationResult:
    """What :func:`paired_permutation_test` returns.

    Attributes
    ----------
    statistic : float (0-d array off NumPy)
        The observed mean difference ``mean(a - b)``.
    pvalue : float (0-d array off NumPy)
        Exact share of sign patterns at least as extreme (exact test), or
        ``(1 + #at least as extreme) / (1 + n_resamples)`` (Monte Carlo).
        NaN for invalid input under ``jit``.
    alternative : str
        ``"two-sided"`` (``|T*| >= |T|``), ``"greater"`` (``T* >= T``; A better)
        or ``"less"`` (``T* <= T``).
    exact : bool
        True when all ``2**n_units`` sign patterns were enumerated.
    n_units : int
    n_resamples : int
        Sign patterns evaluated: ``2**n_units`` when exact.
    """

    statistic: Any
    pvalue: Any
    alternative: str = "two-sided"
    exact: bool = False
    n_units: int = 0
    n_resamples: int = 0


@result_type(meta=("n_units", "n_resamples", "confidence_level", "method"))
class UnitBootstrapResult:
    """What :func:`paired_unit_bootstrap` returns.

    Attributes
    ----------
    difference : float
        ``mean(a - b)`` over the units.
    confidence_interval : ConfidenceInterval
        Percentile interval of the resampled mean differences; NaN ends when
        there are fewer than ``MIN_BOOTSTRAP_UNITS`` (10) units.
    standard_error : float
        Standard deviation (ddof=1) of the resampled mean differences (NaN
        below 10 units).
    prob_a_greater : float
        Share of replicates with ``mean(a - b) > 0`` (NaN below 10 units).
    n_units, n_resamples : int
    confidence_level : float
    method : str
        ``"percentile"``.
    """

    difference: Any
    confidence_interval: ConfidenceInterval
    standard_error: Any
    prob_a_greater: Any
    n_units: int = 0
    n_resamples: int = 0
    confidence_level: float = 0.95
    method: str = "percentile"


def _differences(a, b, name_a="a", name_b="b"):
    xp, (a, b) = B.as_arrays(a, b)
    B.check_1d(name_a, a)
    B.check_1d(name_b, b)
    B.check_same_length(**{name_a: a, name_b: b})
    B.check_nonempty(name_a, a)
    B.check_numeric(name_a, a, xp)
    B.check_numeric(name_b, b, xp)
    V.check_finite(name_a, a, xp)
    V.check_finite(name_b, b, xp)
    f = B.acc_float(xp)
    d = xp.astype(a, f) - xp.astype(b, f)
    invalid = ~xp.all(xp.isfinite(d)) if B.is_traced(a, b) else \
        xp.asarray(False, device=B.device(d))
    return xp, d, f, invalid


def _check_resamples(n_resamples):
    return V.positive_int(n_resamples, "n_resamples")


def _sign_blocks(n, exact, n_resamples, rng, xp, f, dev):
    """Blocks of sign patterns (+1/-1 in float ``f``), (m, n) each; all 2**n when exact.

    Exact patterns are the bits of ``lo .. hi-1`` computed in ``xp`` (no constant
    under ``jit``); random ones travel as int8 (an eighth of float64).
    """
    step = max(1, _CHUNK_CELLS // max(n, 1))
    if exact:
        total = 1 << n
        ai = B.acc_int(xp)
        bits = xp.reshape(xp.arange(n, dtype=ai, device=dev), (1, n))
        for lo in range(0, total, step):
            codes = xp.reshape(xp.arange(lo, min(total, lo + step), dtype=ai, device=dev),
                               (-1, 1))
            b = xp.bitwise_and(xp.bitwise_right_shift(codes, bits), xp.ones_like(bits))
            yield 1.0 - 2.0 * xp.astype(b, f)
        return
    done = 0
    while done < n_resamples:
        m = min(step, n_resamples - done)
        s = xp.asarray(rng.integers(0, 2, size=(m, n), dtype=np.int8), device=dev)
        yield 1.0 - 2.0 * xp.astype(s, f)
        done += m


def paired_permutation_test(a: ArrayLike, b: ArrayLike, *, alternative: str = "two-sided",
                            n_resamples: int = 10000, exact_max: int = 20,
                            seed: SeedLike = None) -> PairedPermutationResult:
    """Paired randomisation (sign-flip) test of ``mean(a - b) = 0`` over units.

    Parameters
    ----------
    a, b : array (n,)
        Per-unit values of systems A and B on the same units (per query, per
        user, per cluster), finite.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: A is better (large ``mean(a - b)``). Two-sided counts
        ``|T*| >= |T|`` (the sign-flip null distribution is symmetric).
    n_resamples : int
        Random sign patterns for the Monte Carlo test (static).
    exact_max : int
        Enumerate all ``2**n`` sign patterns when ``n <= exact_max`` (default
        20: about a million patterns; values above 30 act as 30). The exact p-value is at least
        ``2**(1 - n)`` two-sided: with 5 units it cannot go below 0.0625.
    seed : None, int or numpy.random.Generator
        Seed of the sign draws (Monte Carlo only); ``None`` (default) draws fresh entropy
        from the operating system, as every resampling function of calipers does.

    Returns
    -------
    PairedPermutationResult
        ``statistic`` (mean difference) and ``pvalue``. Comparisons
        ``T* >= T`` allow a relative tolerance of ``100 * eps * |T|`` so that
        patterns equal to the observed one up to rounding count as equal
        (scipy's ``permutation_test`` does the same).

    Raises
    ------
    ValueError
        ``a`` and ``b`` not 1-D of one non-zero length, non-numeric or
        non-finite values, an unknown ``alternative``, ``n_resamples`` not a
        positive integer. Under ``jit`` non-finite values give NaN instead.

    Notes
    -----
    Exact test: Fisher (1935), Pitman (1937). Monte Carlo p-value with the
    +1 correction: Phipson & Smyth (2010), "Permutation p-values should never
    be zero". Agrees with ``scipy.stats.permutation_test(...,
    permutation_type="samples")`` on ``mean(a - b)`` when both enumerate (two-sided
    there is ``2 * min(p_less, p_greater)``, equal to ours for this symmetric null).
    """
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")
    n_resamples = _check_resamples(n_resamples)
    if isinstance(exact_max, bool) or not isinstance(exact_max, (int, np.integer)) \
            or exact_max < 0:
        raise ValueError(f"exact_max must be a non-negative integer, got {exact_max!r}")
    xp, d, f, invalid = _differences(a, b)
    n = int(d.shape[0])
    exact = n <= min(int(exact_max), 30)
    rng = B.make_rng(seed, np) if not exact else None
    dev = B.device(d)
    obs = xp.mean(d)
    gamma = xp.abs(obs) * (100 * float(np.finfo(np.float64 if f == xp.float64 else
                                                 np.float32).eps))
    hits = xp.asarray(0, dtype=B.acc_int(xp), device=dev)
    total = 0
    dcol = xp.reshape(d, (n, 1))
    for signs in _sign_blocks(n, exact, n_resamples, rng, xp, f, dev):
        t = xp.reshape(signs @ dcol, (-1,)) / n
        if alternative == "two-sided":
            hit = xp.abs(t) >= xp.abs(obs) - gamma
        elif alternative == "greater":
            hit = t >= obs - gamma
        else:
            hit = t <= obs + gamma
        hits = hits + xp.sum(xp.astype(hit, B.acc_int(xp)))
        total += signs.shape[0]
    hits = xp.astype(hits, f)
    p = hits / total if exact else (hits + 1.0) / (total + 1.0)
    p = B.nan_if(invalid, xp.minimum(p, xp.asarray(1.0, dtype=f, device=dev)), xp)
    return PairedPermutationResult(B.finalize(B.nan_if(invalid, obs, xp), xp),
                                   B.finalize(p, xp), alternative, bool(exact), n, total)


def paired_unit_bootstrap(a: ArrayLike, b: ArrayLike, *, n_resamples: int = 1000,
                          confidence_level: float = 0.95,
                          seed: SeedLike = None) -> UnitBootstrapResult:
    """Bootstrap over units of the mean difference ``mean(a - b)``.

    Each replicate draws ``n`` units with replacement (the same units for A
    and B: paired) and takes the mean difference.

    Parameters
    ----------
    a, b : array (n,)
        Per-unit values of systems A and B on the same units, finite.
    n_resamples : int
        Bootstrap replicates (static; default 1000, as every bootstrap of calipers).
    confidence_level : float in (0, 1)
        Level of the two-sided percentile interval.
    seed : None, int, numpy.random.Generator or SeedSequence, or a JAX key
        Seed of the unit counts; ``None`` (default) draws fresh entropy from the operating
        system, as every resampling function of calipers does. The counts come from the
        one resampler of :func:`calipers.paired_bootstrap` (multinomial unit counts, a
        function of (seed, replicate, unit)), so the same seed gives the same replicates on
        every backend, eager or under ``jit``, with memory O(n) per chunk of replicates.

    Returns
    -------
    UnitBootstrapResult
        With fewer than ``MIN_BOOTSTRAP_UNITS`` = 10 units no interval is given: its
        ends, the standard error and ``prob_a_greater`` are NaN and an
        :class:`calipers.UndefinedMetricWarning` says why (eagerly). A
        percentile interval from so few units under-covers badly; use
        :func:`paired_permutation_test`, which is exact for small ``n``.

    Raises
    ------
    ValueError
        As :func:`paired_permutation_test`, and ``confidence_level`` outside (0, 1).

    Notes
    -----
    Percentile interval: Efron & Tibshirani (1993), ch. 13. Quantiles by
    linear interpolation (NumPy's default, "type 7").
    """
    n_resamples = _check_resamples(n_resamples)
    confidence_level = V.confidence_level(confidence_level)
    xp, d, f, invalid = _differences(a, b)
    n = int(d.shape[0])
    dev = B.device(d)
    obs = B.nan_if(invalid, xp.mean(d), xp)
    nan = xp.asarray(math.nan, dtype=f, device=dev)
    if n < MIN_BOOTSTRAP_UNITS:
        if not B.is_traced(d):
            B.warn_undefined(f"paired_unit_bootstrap: {n} units, fewer than "
                             f"{MIN_BOOTSTRAP_UNITS}: no interval (NaN); the bootstrap over "
                             f"so few units under-covers. Use paired_permutation_test.")
        ci = ConfidenceInterval(B.finalize(nan, xp), B.finalize(nan, xp))
        return UnitBootstrapResult(B.finalize(obs, xp), ci, B.finalize(nan, xp),
                                   B.finalize(nan, xp), n, n_resamples,
                                   float(confidence_level))
    # the one resampler: multinomial unit counts c, the replicate sum(c * d) / n
    rep = ratio_replicates(d, None, n_resamples=n_resamples, seed=seed, xp=xp)
    alpha = 1.0 - float(confidence_level)
    lo, hi = Q.linear_quantile(rep, alpha / 2, xp), Q.linear_quantile(rep, 1 - alpha / 2, xp)
    se = xp.std(rep, correction=1)
    prob = xp.mean(xp.astype(rep > 0, f))
    out = [B.finalize(B.nan_if(invalid, v, xp), xp) for v in (lo, hi, se, prob)]
    return UnitBootstrapResult(B.finalize(obs, xp), ConfidenceInterval(out[0], out[1]),
                               out[2], out[3], n, n_resamples, float(confidence_level))
