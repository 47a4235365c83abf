"""Power and sample size for paired comparisons of two models.

Planning a comparison before collecting labels: how many examples does a
paired test need to detect a given difference, or how large a difference can
a given test set detect?  Two designs, each with the test calipers runs on
the data afterwards:

* **McNemar** (:func:`calipers.mcnemar`) for two classifiers' error rates on
  the same examples.  What matters is the share of discordant examples:
  ``p_ab`` (A right, B wrong) and ``p_ba`` (A wrong, B right).  The exact
  power enumerates the number of discordant examples ``D ~ Binomial(n, p_ab +
  p_ba)`` and, given D, the exact conditional binomial test's rejection
  region; the normal approximation and the sample size are Connor (1987),
  "Sample size for testing differences in proportions for the paired-sample
  design", Biometrics 43:207–211.
* **Two correlated ROC AUCs** (:func:`calipers.delong_test`) on the same
  positives and negatives.  Each AUC's variance is Hanley & McNeil's (1982)
  exponential approximation, ``V = [A(1-A) + (P-1)(Q1 - A^2) + (N-1)(Q2 -
  A^2)] / (P N)`` with ``Q1 = A / (2 - A)``, ``Q2 = 2 A^2 / (1 + A)``; the
  variance of the difference subtracts ``2 r sqrt(V_a V_b)`` (Hanley &
  McNeil 1983), ``r`` the correlation between the two AUC estimates (about
  0.3–0.6 for two models of the same data; estimate it from a pilot with
  :func:`calipers.delong_test`).  Power is that of the two-sided Wald test
  DeLong's test performs.

All functions here are eager planning tools on Python numbers (they use
``scipy.stats`` for the distributions).
"""

from __future__ import annotations

import math

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.results import result_type

__all__ = [
    "mcnemar_power",
    "mcnemar_sample_size",
    "auc_difference_power",
    "auc_difference_sample_size",
    "auc_minimum_detectable_difference",
    "AUCPowerResult",
]


def _check_level(name: str, v, *, open_low=True) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1), got {v!r}") from None
    if not (0 < f < 1):
        raise ValueError(f"{name} must be in (0, 1), got {v!r}")
    return f


def _check_discordant(p_ab, p_ba):
    a, b = float(p_ab), float(p_ba)
    for name, v in (("p_ab", a), ("p_ba", b)):
        if not (0 <= v <= 1) or math.isnan(v):
            raise ValueError(f"{name} must be a proportion in [0, 1], got {v!r}")
    if a + b > 1:
        raise ValueError(f"p_ab + p_ba must be at most 1 (they are shares of the same "
                         f"examples), got {a + b!r}")
    return a, b


def _check_count(name, n, minimum=1) -> int:
    if isinstance(n, bool) or not float(n).is_integer() or int(n) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {n!r}")
    return int(n)


def mcnemar_power(n: int, p_ab: float, p_ba: float, *, alpha: float = 0.05,
                  method: str = "exact") -> float:
    """Power of the two-sided McNemar test with ``n`` paired examples.

    Parameters
    ----------
    n : int >= 1
        Number of examples, each scored by both models.
    p_ab, p_ba : float in [0, 1]
        Expected share of examples that A gets right and B wrong, and the
        reverse (``p_ab + p_ba <= 1``: the discordant share).
    alpha : float in (0, 1)
        Significance level of the two-sided test.
    method : {"exact", "normal"}
        ``"exact"`` (default): the exact power of :func:`calipers.mcnemar`
        with ``method="exact"``, by enumeration of the discordant count and
        the conditional binomial rejection region, O(n^2). ``"normal"``:
        Connor's (1987) approximation ``Phi((sqrt(n)|d| - z sqrt(psi)) /
        sqrt(psi - d^2))`` with ``d = p_ab - p_ba`` and ``psi = p_ab + p_ba``.

    Returns
    -------
    float in [0, 1]. With ``p_ab == p_ba`` this is the test's size (at most
    ``alpha`` for the exact test).

    Raises
    ------
    ValueError
        ``n`` not a positive integer, proportions outside [0, 1] or summing
        above 1, ``alpha`` outside (0, 1), unknown ``method``.
    """
    stats = B.scipy_stats("mcnemar_power")

    n = _check_count("n", n)
    p_ab, p_ba = _check_discordant(p_ab, p_ba)
    alpha = _check_level("alpha", alpha)
    method = V.choice(method, "method", ("exact", "normal"))
    psi, d = p_ab + p_ba, p_ab - p_ba
    if psi == 0:
        return 0.0  # no discordant example ever: the test never rejects (p = 1)
    if method == "normal":
        if psi - d * d <= 0:  # every discordant example goes one way
            return 1.0 if d != 0 else 0.0
        z = stats.norm.ppf(1 - alpha / 2)
        return float(stats.norm.cdf((math.sqrt(n) * abs(d) - z * math.sqrt(psi))
                                    / math.sqrt(psi - d * d)))
    # Exact: for each discordant count m, the smallest k with
    # 2 P(X <= k) <= alpha (X ~ Bin(m, 1/2)) bounds the rejection region
    # {min(b, c) <= k}; then weight by P(D = m) P(b in region | m).
    theta = p_ab / psi
    power = 0.0
    pm = stats.binom.pmf(np.arange(n + 1), n, psi)
    for m in range(1, n + 1):
        if pm[m] < 1e-300:
            continue
        ks = np.arange(m + 1)
        reject = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(ks, m - ks), m, 0.5)) <= alpha
        if not reject.any():
            continue
        power += pm[m] * float(np.sum(stats.binom.pmf(ks[reject], m, theta)))
    return float(min(power, 1.0))


def mcnemar_sample_size(p_ab: float, p_ba: float, *, power: float = 0.8,
                        alpha: float = 0.05) -> int:
    """Examples needed for McNemar's test to reach ``power`` (Connor 1987).

    ``n = ceil((z_{1-alpha/2} sqrt(psi) + z_{power} sqrt(psi - d^2))^2 / d^2)``
    with ``d = p_ab - p_ba``, ``psi = p_ab + p_ba`` (see
    :func:`mcnemar_power` for the arguments). The normal approximation; check
    the result with ``mcnemar_power(n, ..., method="exact")``, which can be a
    little lower for small discordant shares.

    Raises
    ------
    ValueError
        ``p_ab == p_ba`` (no difference to detect), proportions outside
        [0, 1] or summing above 1, ``power`` or ``alpha`` outside (0, 1).
    """
    stats = B.scipy_stats("mcnemar_sample_size")

    p_ab, p_ba = _check_discordant(p_ab, p_ba)
    power = _check_level("power", power)
    alpha = _check_level("alpha", alpha)
    psi, d = p_ab + p_ba, p_ab - p_ba
    if d == 0:
        raise ValueError("p_ab equals p_ba: there is no difference to detect")
    za, zb = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    n = (za * math.sqrt(psi) + zb * math.sqrt(max(psi - d * d, 0.0))) ** 2 / (d * d)
    return int(math.ceil(n - 1e-9))


@result_type(legacy_fields=('power', 'se_difference', 'variance_a', 'variance_b',))
class AUCPowerResult:
    """Planning numbers for a paired AUC comparison.

    Attributes
    ----------
    power : float
        Power of the two-sided Wald (DeLong) test.
    se_difference : float
        Standard error of ``AUC_a - AUC_b`` under the Hanley–McNeil variances.
    variance_a, variance_b : float
        Each AUC's variance.
    """

    power: float
    se_difference: float
    variance_a: float
    variance_b: float


def _hanley_mcneil_variance(auc: float, n_pos: int, n_neg: int) -> float:
    q1 = auc / (2 - auc)
    q2 = 2 * auc * auc / (1 + auc)
    return (auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc)
            + (n_neg - 1) * (q2 - auc * auc)) / (n_pos * n_neg)


def _check_auc(name, v) -> float:
    f = float(v)
    if not (0 < f < 1):
        raise ValueError(f"{name} must be in (0, 1), got {v!r}")
    return f


def _check_corr(r) -> float:
    f = float(r)
    if not (-1 < f < 1):
        raise ValueError(f"correlation must be in (-1, 1), got {r!r}")
    return f


def auc_difference_power(auc_a: float, auc_b: float, *, n_pos: int, n_neg: int,
                         correlation: float = 0.5, alpha: float = 0.05) -> AUCPowerResult:
    """Power to detect ``auc_a != auc_b`` with a paired (DeLong) test.

    Parameters
    ----------
    auc_a, auc_b : float in (0, 1)
        The AUCs the two models are expected to reach.
    n_pos, n_neg : int >= 1
        Positives and negatives in the test set (both models scored on all).
    correlation : float in (-1, 1)
        Correlation between the two AUC estimates across test sets (not
        between the scores). Estimate it from a pilot: ``delong_test`` gives
        the covariance; 0.5 is a common planning value.
    alpha : float in (0, 1)
        Two-sided significance level.

    Returns
    -------
    AUCPowerResult(power, se_difference, variance_a, variance_b).

    Raises
    ------
    ValueError
        AUCs outside (0, 1), counts not positive integers, correlation
        outside (-1, 1), alpha outside (0, 1).

    Notes
    -----
    Hanley & McNeil (1982) variances, Hanley & McNeil (1983) for the
    correlated difference; the power of the Wald test ``|D| / se > z``:
    ``Phi(|d|/se - z) + Phi(-|d|/se - z)``.
    """
    stats = B.scipy_stats("auc_difference_power")

    a, b = _check_auc("auc_a", auc_a), _check_auc("auc_b", auc_b)
    P, N = _check_count("n_pos", n_pos), _check_count("n_neg", n_neg)
    r = _check_corr(correlation)
    alpha = _check_level("alpha", alpha)
    va, vb = _hanley_mcneil_variance(a, P, N), _hanley_mcneil_variance(b, P, N)
    se = math.sqrt(max(va + vb - 2 * r * math.sqrt(va * vb), 0.0))
    z = stats.norm.ppf(1 - alpha / 2)
    d = abs(a - b)
    if se == 0:
        power = 1.0 if d > 0 else 0.0
    else:
        power = float(stats.norm.cdf(d / se - z) + stats.norm.cdf(-d / se - z))
    return AUCPowerResult(power, se, va, vb)


def auc_difference_sample_size(auc_a: float, auc_b: float, *, prevalence: float,
                               correlation: float = 0.5, power: float = 0.8,
                               alpha: float = 0.05) -> int:
    """Total test-set size for the paired AUC comparison to reach ``power``.

    ``prevalence`` is the share of positives (in (0, 1)); the returned ``n``
    is the smallest total with ``auc_difference_power(..., n_pos=round(n *
    prevalence), n_neg=n - n_pos).power >= power``, found by bisection on the
    same variance model as :func:`auc_difference_power`.

    Raises
    ------
    ValueError
        ``auc_a == auc_b``, or an argument outside its range (as
        :func:`auc_difference_power`).
    """
    a, b = _check_auc("auc_a", auc_a), _check_auc("auc_b", auc_b)
    prev = _check_level("prevalence", prevalence)
    target = _check_level("power", power)
    if a == b:
        raise ValueError("auc_a equals auc_b: there is no difference to detect")

    def pw(n):
        p = max(1, min(n - 1, round(n * prev)))
        return auc_difference_power(a, b, n_pos=p, n_neg=n - p, correlation=correlation,
                                    alpha=alpha).power

    lo, hi = 2, 4
    while pw(hi) < target:
        lo, hi = hi, hi * 2
        if hi > 10**12:
            raise ValueError("the requested power is not reached below 10^12 examples")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if pw(mid) < target else (lo, mid)
    return hi


def auc_minimum_detectable_difference(auc_b: float, *, n_pos: int, n_neg: int,
                                      correlation: float = 0.5, power: float = 0.8,
                                      alpha: float = 0.05) -> float:
    """Smallest ``auc_a - auc_b > 0`` detected with ``power`` given the test set.

    Solves ``auc_difference_power(auc_b + d, auc_b, ...).power == power`` for
    ``d`` by bisection; returns NaN (with no warning: a planning answer, not
    a metric) when even ``auc_a`` close to 1 is not detected.

    Raises
    ------
    ValueError
        As :func:`auc_difference_power`.
    """
    b = _check_auc("auc_b", auc_b)
    target = _check_level("power", power)

    def pw(d):
        return auc_difference_power(b + d, b, n_pos=n_pos, n_neg=n_neg,
                                    correlation=correlation, alpha=alpha).power

    lo, hi = 0.0, (1 - b) * (1 - 1e-9)
    if pw(hi) < target:
        return math.nan
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if pw(mid) < target else (lo, mid)
    return hi
