"""Wald's sequential probability ratio test for an A/B decision on a stream of Bernoulli
outcomes, stopping as soon as a boundary is crossed."""

from __future__ import annotations

import math

import numpy as np

from .._core import xp as B
from .._core.results import result_type

__all__ = ["SPRTResult", "sprt"]


@result_type(meta=("decision",))
class SPRTResult:
    """``decision``: "accept_h1", "accept_h0" or "continue" (no boundary crossed yet).

    ``n_used``: observations consumed when stopping (all of them when
    continuing); ``llr``: the cumulative log-likelihood ratio after each
    observation; ``lower``, ``upper``: Wald's boundaries.
    """

    decision: str
    n_used: int
    llr: np.ndarray
    lower: float
    upper: float


def sprt(outcomes, *, p0: float = 0.5, p1: float, alpha: float = 0.05,
         beta: float = 0.2) -> SPRTResult:
    """Wald's sequential probability ratio test for Bernoulli outcomes (Wald 1945).

    H0: P(outcome = 1) = p0 against H1: P(outcome = 1) = p1. After each
    observation the log-likelihood ratio
    ``LLR_t = S_t ln(p1/p0) + (t - S_t) ln((1-p1)/(1-p0))`` is compared with
    ``lower = ln(beta / (1 - alpha))`` and ``upper = ln((1 - beta) / alpha)``;
    the test stops at the first crossing (accept H1 at or above ``upper``,
    accept H0 at or below ``lower``), so it can stop long before the data end.
    Wald's bounds keep the error rates near ``alpha`` (false H1) and ``beta``
    (false H0), at most ``alpha / (1 - beta)`` and ``beta / (1 - alpha)``.

    For an A/B decision between two models on the same stream of examples,
    feed the discordant pairs only: 1 where A is right and B wrong, 0 where A is
    wrong and B right; p0 = 0.5 means no difference (a sequential McNemar
    test), p1 the share of A-wins worth detecting.

    Raises ``ValueError`` for outcomes outside {0, 1}, empty or not 1-D
    outcomes, p0 or p1 outside (0, 1), p0 == p1, alpha or beta outside (0, 1)
    or alpha + beta >= 1. Eager: the decision is a string.
    """
    for nm, v in (("p0", p0), ("p1", p1), ("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < 1):
            raise ValueError(f"{nm} must be in (0, 1), got {v!r}")
    if p0 == p1:
        raise ValueError("p1 must differ from p0")
    if alpha + beta >= 1:
        raise ValueError(f"alpha + beta must be below 1, got {alpha + beta}")
    xp, (x,) = B.as_arrays(outcomes)
    B.check_1d("outcomes", x)
    B.check_nonempty("outcomes", x)
    xn = np.asarray(B.to_numpy(x))
    if xn.dtype != bool and not np.all((xn == 0) | (xn == 1)):
        i = int(np.argmax(~((xn == 0) | (xn == 1))))
        raise ValueError(f"outcomes must be 0/1 (or booleans); element {i} is {xn[i].item()!r}")
    xn = xn.astype(np.float64)
    up, dn = math.log(p1 / p0), math.log((1 - p1) / (1 - p0))
    llr = np.cumsum(xn * up + (1 - xn) * dn)
    upper = math.log((1 - beta) / alpha)
    lower = math.log(beta / (1 - alpha))
    hit = np.flatnonzero((llr >= upper) | (llr <= lower))
    if hit.size == 0:
        return SPRTResult("continue", int(xn.size), llr, lower, upper)
    t = int(hit[0])
    decision = "accept_h1" if llr[t] >= upper else "accept_h0"
    return SPRTResult(decision, t + 1, llr, lower, upper)
