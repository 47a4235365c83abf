"""Wald's sequential probability ratio test for an A/B decision on a stream of Bernoulli
outcomes, stopping as soon as a boundary is crossed; and the generalised SPRT on game counts
(trinomial or pentanomial, bounds in logistic or normalised Elo) that engine testing uses."""

from __future__ import annotations

import math

import numpy as np

from .._core import xp as B
from .._core.results import result_type
from .elo import GameCountsState, check_counts, gsprt_llr
from .._core.types import ArrayLike

__all__ = ["GSPRTResult", "SPRTResult", "sprt"]


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


@result_type(meta=("decision", "elo_model"))
class GSPRTResult:
    """The generalised SPRT on game counts (see :func:`sprt` with ``elo0``, ``elo1``).

    ``decision``: "accept_h1", "accept_h0" or "continue"; ``llr`` the generalised
    log-likelihood ratio of the counts; ``lower``, ``upper`` the bounds; ``elo0``, ``elo1`` and
    ``elo_model`` the hypotheses; ``counts`` the counts used (NumPy int64).
    """

    decision: str
    llr: float
    lower: float
    upper: float
    elo0: float
    elo1: float
    elo_model: str
    counts: np.ndarray


def sprt(outcomes: ArrayLike, *, p0: float = 0.5, p1: float | None = None, alpha: float = 0.05,
         beta: float = 0.2, elo0: float | None = None, elo1: float | None = None,
         elo_model: str = "logistic") -> SPRTResult | GSPRTResult:
    """Wald's sequential probability ratio test for Bernoulli outcomes (Wald 1945), or the
    generalised SPRT on game counts when ``elo0`` and ``elo1`` are given.

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

    Game counts (``elo0``, ``elo1`` given, ``p1`` not): ``outcomes`` are the
    counts of a match, ``(losses, draws, wins)`` or the five game-pair counts
    (pair scores 0, 1/2, 1, 3/2, 2), lowest score first, or a
    :class:`calipers.GameCountsState`. The test is M. Van den Bergh's
    generalised SPRT as fishtest runs it: the log-likelihood ratio of
    H1: Elo = ``elo1`` against H0: Elo = ``elo0`` with each likelihood
    maximised over the distributions meeting its hypothesis
    (:func:`calipers.gsprt_llr`; ``elo_model`` ``"logistic"`` or
    ``"normalised"``), compared with the same bounds ``lower`` and ``upper``;
    accept H1 at or above ``upper``, H0 at or below ``lower``, else continue
    (call again with the counts so far; a NaN ratio, from a hypothesis no
    distribution on the scores meets, also continues). Returns a
    :class:`GSPRTResult`.
    fishtest's usual settings are ``alpha = beta = 0.05``; pass them, the
    defaults here are Wald's test's.

    Raises ``ValueError`` for outcomes outside {0, 1}, empty or not 1-D
    outcomes, p0 or p1 outside (0, 1), p0 == p1, alpha or beta outside (0, 1)
    or alpha + beta >= 1; with game counts, for counts that are not 3 or 5
    non-negative integers, only one of ``elo0``/``elo1``, ``p0`` or ``p1``
    given as well, or an unknown ``elo_model``. Eager: the decision is a string.
    """
    if elo0 is not None or elo1 is not None:
        return _gsprt(outcomes, p0=p0, p1=p1, alpha=alpha, beta=beta, elo0=elo0, elo1=elo1,
                      elo_model=elo_model)
    if p1 is None:
        raise ValueError("p1 is required (or elo0 and elo1 for the test on game counts)")
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
        raise ValueError(f"outcomes must be 0/1 (or booleans); element {i} is {B.show(xn[i])}")
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


def _check_error_rates(alpha, beta):
    for nm, v in (("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < 1):
            raise ValueError(f"{nm} must be in (0, 1), got {v!r}")
    if alpha + beta >= 1:
        raise ValueError(f"alpha + beta must be below 1, got {alpha + beta}")


def _gsprt(counts, *, p0, p1, alpha, beta, elo0, elo1, elo_model) -> GSPRTResult:
    if elo0 is None or elo1 is None:
        raise ValueError("elo0 and elo1 must both be given for the test on game counts")
    if p1 is not None or p0 != 0.5:
        raise ValueError("p0 and p1 are for Bernoulli outcomes; with elo0 and elo1 pass game "
                         "counts only")
    _check_error_rates(alpha, beta)
    c = check_counts(counts, "outcomes" if not isinstance(counts, GameCountsState) else "state")
    llr = gsprt_llr(c, elo0, elo1, elo_model=elo_model)
    upper = math.log((1 - beta) / alpha)
    lower = math.log(beta / (1 - alpha))
    if llr >= upper:
        decision = "accept_h1"
    elif llr <= lower:
        decision = "accept_h0"
    else:
        decision = "continue"  # also for a NaN ratio: no evidence either way
    model = "logistic" if elo_model == "logistic" else "normalised"
    return GSPRTResult(decision, llr, lower, upper, float(elo0), float(elo1), model, c)
