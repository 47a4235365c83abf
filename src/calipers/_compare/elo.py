"""Elo from match results and the generalised SPRT on game counts, as engine testing uses them.

Counts are ordered from the lowest score to the highest, as fishtest orders them:

* trinomial, one count per game: ``(losses, draws, wins)``, game scores 0, 1/2, 1;
* pentanomial, one count per *game pair* (the two games of a pair share an opening, the engines
  swap colours): the pair scores 0, 1/2, 1, 3/2, 2, i.e. ``(LL, LD + DL, LW + DD + WL, DW + WD,
  WW)``. Pairs are the independent units, so the pentanomial variance includes the correlation
  of the two games of a pair that the trinomial variance ignores.

:func:`match_elo` estimates the Elo difference and normalised Elo with intervals;
:func:`gsprt_llr` is the generalised log-likelihood ratio of M. Van den Bergh's GSPRT (as fishtest
computes it), which :func:`calipers.sprt` turns into a decision; :class:`GameCountsState` collects
the counts as a mergeable pytree for sequential use.

References: M. Van den Bergh, "Maximum likelihood estimation for discrete distributions with a
constrained expectation" and "Normalized Elo, practical considerations" (notes linked from
fishtest's ``server/fishtest/stats/LLRcalc.py``); fishtest's ``stat_util.py`` for the Elo
estimate with its 95% interval and the likelihood of superiority.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._core import validation as V
from .._core import xp as B
from .._core.results import ConfidenceInterval, result_type
from .._kernels.quantile import normal_quantile
from .._core.types import ArrayLike

__all__ = ["GameCountsState", "MatchElo", "gsprt_llr", "match_elo"]

#: normalised Elo per unit of the t-value (mu - 1/2) / sigma: 800 / ln 10
NELO_PER_T = 800 / math.log(10)
#: pseudo-count put in an empty cell before the likelihood ratio (fishtest's regularisation)
EMPTY_CELL = 1e-3


def check_counts(counts, name: str = "counts") -> np.ndarray:
    """Counts as a NumPy int64 vector of length 3 or 5, or a ``ValueError`` naming the rule."""
    if isinstance(counts, GameCountsState):
        if int(np.asarray(B.to_numpy(counts.invalid))) > 0:
            raise ValueError(f"{name}: the state holds {int(np.asarray(counts.invalid))} "
                             "invalid score(s) added under jit")
        counts = counts.counts
    c = np.asarray(B.to_numpy(counts) if not isinstance(counts, (list, tuple)) else counts)
    if c.ndim != 1 or c.shape[0] not in (3, 5):
        raise ValueError(f"{name} must have 3 entries (losses, draws, wins) or 5 (game-pair "
                         f"scores 0, 1/2, 1, 3/2, 2), got shape {c.shape}")
    if c.dtype == bool or not (np.issubdtype(c.dtype, np.integer) or (
            np.issubdtype(c.dtype, np.floating) and np.all(np.isfinite(c))
            and np.all(c == np.round(c)))):
        raise ValueError(f"{name} must hold non-negative integer counts, got {c.tolist()!r}")
    if np.any(c < 0):
        raise ValueError(f"{name} must hold non-negative integer counts, got {c.tolist()!r}")
    if c.sum() == 0:
        raise ValueError(f"{name} must not all be zero (no game played)")
    return c.astype(np.int64)


def _moments(values, probs):
    mu = float(np.dot(probs, values))
    var = float(np.dot(probs, (values - mu) ** 2))
    return mu, var


def _tilted(probs, b):
    """The root x of sum_i p_i b_i / (1 + x b_i) = 0 and the tilted p_i / (1 + x b_i).

    The function is strictly decreasing on the interval where every 1 + x b_i > 0, from +inf to
    -inf, so bisection finds its root; Newton steps then polish it to rounding.
    """
    lo, hi = -1.0 / b.max(), -1.0 / b.min()   # b has both signs

    def f(x):
        return float(np.sum(probs * b / (1.0 + x * b)))

    a, z = lo, hi
    for _ in range(200):
        m = 0.5 * (a + z)
        if m <= a or m >= z:
            break
        if f(m) > 0:
            a = m
        else:
            z = m
    x = 0.5 * (a + z)
    for _ in range(3):
        d = 1.0 + x * b
        fx = float(np.sum(probs * b / d))
        dfx = -float(np.sum(probs * b * b / (d * d)))
        nx = x - fx / dfx
        if not (lo < nx < hi):
            break
        x = nx
    return x, probs / (1.0 + x * b)


def _mle_mean(values, probs, s):
    """Maximum-likelihood distribution on ``values`` with expectation ``s`` given ``probs``."""
    b = values - s
    if not (b.min() < 0 < b.max()):
        return None  # s outside the open range of the values: no distribution has that mean
    return _tilted(probs, b)[1]


def _mle_t(values, probs, ref, t):
    """Maximum-likelihood distribution with t-value (mu - ref) / sigma = t given ``probs``.

    The constrained maximum solves q_i = p_i / (1 + x b_i) with
    b_i = a_i - ref - t sigma (1 + ((a_i - mu) / sigma)^2) / 2, the gradient of the constraint at
    q's own mean mu and deviation sigma; iterated from the uniform distribution to its fixed
    point (Van den Bergh, "Normalized Elo, practical considerations", section 4.1).
    """
    q = np.full_like(probs, 1.0 / probs.size)
    for _ in range(200):
        mu, var = _moments(values, q)
        sigma = math.sqrt(var)
        b = values - ref - t * sigma * (1.0 + ((values - mu) / sigma) ** 2) / 2.0
        if not (b.min() < 0 < b.max()):
            return None
        q_new = _tilted(probs, b)[1]
        done = np.max(np.abs(q_new - q)) < 1e-15
        q = q_new
        if done:
            break
    return q


def _pdf(c: np.ndarray):
    reg = np.where(c == 0, EMPTY_CELL, c.astype(np.float64))
    n = float(reg.sum())
    values = np.arange(c.size, dtype=np.float64) / (c.size - 1)
    return n, values, reg / n


def logistic_score(elo: float) -> float:
    """Expected score of a player ``elo`` points stronger: 1 / (1 + 10^(-elo / 400))."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def gsprt_llr(counts: ArrayLike, elo0: float, elo1: float, *, elo_model: str = "logistic") -> float:
    """The generalised log-likelihood ratio of H1: Elo = ``elo1`` against H0: Elo = ``elo0``.

    ``counts``: trinomial ``(losses, draws, wins)`` or pentanomial game-pair counts (scores 0,
    1/2, 1, 3/2, 2), lowest score first (see the module notes), or a :class:`GameCountsState`.
    The observed frequencies ``p`` live on the per-game scores ``a = 0, 1/2, 1`` (pairs: the
    pair's mean score ``0, 1/4, ..., 1``). Under each hypothesis the likelihood is maximised
    over every distribution ``q`` on those scores that satisfies it, and

        LLR = N sum_i p_i ln(q1_i / q0_i),

    N the number of games (trinomial) or pairs (pentanomial): the GSPRT of M. Van den Bergh as
    fishtest computes it.

    elo_model
        ``"logistic"``: the hypothesis is an expected score ``s = 1 / (1 + 10^(-elo / 400))``;
        the constrained maximum is ``q_i = p_i / (1 + x (a_i - s))`` with ``x`` the root of the
        secular equation ``sum_i p_i (a_i - s) / (1 + x (a_i - s)) = 0``.
        ``"normalised"`` (or ``"normalized"``): the hypothesis is a normalised Elo
        ``nElo = 800 / ln 10 * (mu - 1/2) / sigma`` with sigma the per-game standard deviation
        of the score, i.e. a t-value ``(mu - 1/2) / sigma = nElo / (800 / ln 10)`` on games
        (times sqrt 2 on pair means, whose deviation is sigma / sqrt 2); the constrained
        maximum is found by the fixed-point iteration of Van den Bergh's note.

    An empty cell counts as ``1e-3`` games (fishtest's regularisation), so that the
    constrained maxima exist; N includes those pseudo-counts. Returns a Python float; NaN when
    a hypothesis cannot be met by any distribution on the observed scores (an expected score
    outside (0, 1)).

    Raises ``ValueError`` for counts that are not 3 or 5 non-negative integers, all-zero
    counts, an unknown ``elo_model``, non-finite bounds or ``elo0 == elo1``. Eager (a root-find
    on the host; :class:`GameCountsState` collects the counts under ``jit``).
    """
    c = check_counts(counts)
    model = _check_model(elo_model)
    e0, e1 = _check_bounds(elo0, elo1)
    n, values, probs = _pdf(c)
    if model == "logistic":
        q0, q1 = (_mle_mean(values, probs, logistic_score(e)) for e in (e0, e1))
    else:
        scale = 1.0 if c.size == 3 else math.sqrt(2.0)
        q0, q1 = (_mle_t(values, probs, 0.5, e / NELO_PER_T * scale) for e in (e0, e1))
    if q0 is None or q1 is None:
        return math.nan
    return n * float(np.sum(probs * (np.log(q1) - np.log(q0))))


def _check_model(elo_model):
    if elo_model in ("normalised", "normalized"):
        return "normalised"
    if elo_model == "logistic":
        return "logistic"
    raise ValueError(f"elo_model must be 'logistic' or 'normalised', got {elo_model!r}")


def _check_bounds(elo0, elo1):
    for nm, v in (("elo0", elo0), ("elo1", elo1)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) \
                or not math.isfinite(v):
            raise ValueError(f"{nm} must be a finite number, got {v!r}")
    if elo0 == elo1:
        raise ValueError("elo1 must differ from elo0")
    return float(elo0), float(elo1)


@result_type
class MatchElo:
    """Elo estimates from match counts (see :func:`match_elo`).

    ``elo`` (logistic) with ``confidence_interval``; ``nelo`` (normalised) with
    ``nelo_interval``; ``score`` the mean score per game and ``stderr`` its standard error;
    ``sigma`` the per-game standard deviation of the score (from pairs when pentanomial);
    ``los`` the likelihood of superiority; ``games`` the number of games.
    """

    elo: float
    confidence_interval: ConfidenceInterval
    nelo: float
    nelo_interval: ConfidenceInterval
    score: float
    stderr: float
    sigma: float
    los: float
    games: int


def _elo_of_score(s: float) -> float:
    if s <= 0:
        return -math.inf
    if s >= 1:
        return math.inf
    return -400.0 * math.log10(1.0 / s - 1.0)


def match_elo(counts: ArrayLike, *, confidence_level: float = 0.95) -> MatchElo:
    """The Elo difference, normalised Elo and their intervals from match counts.

    ``counts``: ``(losses, draws, wins)`` or the five game-pair counts (pair scores 0, 1/2, 1,
    3/2, 2), lowest score first, or a :class:`GameCountsState`. With N units (games or pairs)
    and g games (g = N, or 2N for pairs):

    * ``score`` ``s = (W + D/2) / g``, the mean score per game; ``sigma^2`` the per-game
      variance: trinomial ``(W + D/4) / N - s^2``; pentanomial half the variance of the pair
      score (the pair is the independent unit, so the correlation inside a pair is counted);
      ``stderr = sigma / sqrt(g)``.
    * ``elo = -400 log10(1/s - 1)``, the logistic Elo; its interval maps the normal interval
      ``s -/+ z stderr`` through the same function (fishtest's ``get_elo``; fishtest reports
      half its width as the "+/-"). A score of 0 or 1 (or an interval end beyond) gives an
      infinite Elo: no clamping.
    * ``nelo = 800 / ln 10 * (s - 1/2) / sigma``, the normalised Elo (fishtest's definition:
      ``800 / ln 10`` makes it close to the logistic Elo for a draw-free, evenly matched
      pair); interval ``nelo -/+ z 800 / ln 10 / sqrt(g)``, sigma taken as known. NaN when
      sigma = 0 (every game or pair ended alike).
    * ``los = Phi((s - 1/2) / stderr)``, the likelihood of superiority (NaN when stderr = 0).

    Unlike fishtest's ``get_elo``, empty cells are not given pseudo-counts here (they do not
    hinder a mean and a variance) and the score is not clamped.

    Raises ``ValueError`` for counts that are not 3 or 5 non-negative integers, all-zero
    counts or a confidence level outside (0, 1). Eager; Python floats.
    """
    c = check_counts(counts)
    z = normal_quantile(V.confidence_level(confidence_level))
    n_units = int(c.sum())
    games = n_units * (c.size - 1) // 2
    values = np.arange(c.size, dtype=np.float64) / 2.0   # unit scores: 0, 1/2, ... (c.size-1)/2
    probs = c / n_units
    unit_mean, unit_var = _moments(values, probs)
    per = (c.size - 1) / 2.0                              # games per unit
    s = unit_mean / per
    var = unit_var / per                                  # per-game variance
    sigma = math.sqrt(var)
    se = sigma / math.sqrt(games)
    lo_s, hi_s = s - z * se, s + z * se
    nelo = (s - 0.5) / sigma * NELO_PER_T if sigma > 0 else math.nan
    half = z * NELO_PER_T / math.sqrt(games)
    los = 0.5 * math.erfc(-(s - 0.5) / se / math.sqrt(2)) if se > 0 else math.nan
    return MatchElo(_elo_of_score(s), ConfidenceInterval(_elo_of_score(lo_s), _elo_of_score(hi_s)),
                    nelo, ConfidenceInterval(nelo - half, nelo + half), s, se, sigma, los, games)


class GameCountsState(NamedTuple):
    """Mergeable counts of game scores (trinomial) or game-pair scores (pentanomial).

    ``counts``: integer counts, lowest score first (3 for games, 5 for pairs); ``invalid``:
    scores (or weights) outside the allowed values added under ``jit`` and updates that would
    have wrapped the counts (eager input raises instead). A
    ``NamedTuple`` pytree: ``update`` and ``merge`` run under ``jit``, ``merge`` adds the fields
    (so ``jax.lax.psum`` merges shards), and :func:`calipers.sprt` or :func:`match_elo` read
    the state directly. Counts are int64, or int32 on JAX without x64; an eager update that
    would pass the dtype's largest value raises.
    """

    counts: Any
    invalid: Any

    @classmethod
    def init(cls, kind: str = "trinomial", *, xp=None):
        """Empty counts: ``kind`` ``"trinomial"`` (games) or ``"pentanomial"`` (game pairs)."""
        kind = V.choice(kind, "kind", ("trinomial", "pentanomial"))
        xp = B.numpy_namespace() if xp is None else xp
        i = B.acc_int(xp)
        m = 3 if kind == "trinomial" else 5
        return cls(xp.zeros(m, dtype=i), xp.zeros((), dtype=i))

    @property
    def kind(self) -> str:
        return "trinomial" if self.counts.shape[0] == 3 else "pentanomial"

    def update(self, scores, *, mask=None, sample_weight=None):
        """Add games (scores 0, 0.5, 1) or game pairs (pair scores 0, 0.5, 1, 1.5, 2).

        ``mask`` (bool, like ``scores``) marks padding: a masked score adds nothing and is
        never invalid. ``sample_weight``: non-negative integer repetition counts. Eager input
        with another score, a negative or fractional weight, or counts that would pass the
        dtype's largest value raise ``ValueError``; under ``jit`` such a score (or weight) is
        not counted and ``invalid`` counts it, and an update whose counts would wrap adds
        nothing and counts one invalid.
        """
        xp = _state_namespace(self)
        _, (x, m_, w) = B.as_arrays(scores, mask, sample_weight,
                                    names=("scores", "mask", "sample_weight"))
        x = xp.reshape(xp.asarray(x), (-1,))
        m = self.counts.shape[0]
        dt = self.counts.dtype
        f = B.acc_float(xp)
        keep = (xp.ones(x.shape, dtype=xp.bool) if m_ is None
                else xp.astype(xp.reshape(xp.asarray(m_), (-1,)), xp.bool))
        twice = xp.astype(x, f) * 2
        idx = xp.round(twice)
        ok = (idx == twice) & (idx >= 0) & (idx <= m - 1)
        if w is None:
            wf = xp.ones(x.shape, dtype=f)
        else:
            wf = xp.astype(xp.reshape(xp.asarray(w), (-1,)), f)
        w_ok = (wf >= 0) & (wf == xp.round(wf))
        concrete = not B.is_traced(x, m_, w, self.counts)
        if concrete:
            bad_x = np.asarray(B.to_numpy(keep & ~ok), dtype=bool)
            if bad_x.any():
                i = int(np.argmax(bad_x))
                allowed = "0, 0.5, 1" if m == 3 else "0, 0.5, 1, 1.5, 2"
                raise ValueError(f"scores must be {allowed}; element {i} is "
                                 f"{B.show(np.asarray(B.to_numpy(x))[i])}")
            bad_w = np.asarray(B.to_numpy(keep & ~w_ok), dtype=bool)
            if bad_w.any():
                i = int(np.argmax(bad_w))
                raise ValueError("sample_weight must hold non-negative integer repetition "
                                 f"counts; element {i} is "
                                 f"{B.show(np.asarray(B.to_numpy(w)).reshape(-1)[i])}")
            limit = int(np.iinfo(np.asarray(B.to_numpy(self.counts)).dtype).max)
            adding = float(np.sum(np.asarray(B.to_numpy(xp.where(keep, wf, xp.zeros_like(wf))))))
            if int(np.asarray(B.to_numpy(self.counts)).sum()) + adding > limit:
                raise ValueError(f"counts would pass {limit}, the largest value of "
                                 f"{self.counts.dtype}; enable x64 on JAX or merge in int64")
        good = keep & ok & w_ok
        wi = xp.astype(xp.where(good, wf, xp.zeros_like(wf)), dt)
        levels = xp.reshape(xp.astype(xp.arange(m), f), (m, 1))
        hits = xp.astype(xp.reshape(idx, (1, -1)) == levels, dt) * xp.reshape(wi, (1, -1))
        new = self.counts + xp.astype(xp.sum(hits, axis=1), dt)  # sums promote to int64
        bad = xp.astype(xp.sum(xp.astype(keep & ~(ok & w_ok), dt)), dt)
        wrapped = xp.any(new < self.counts)      # int overflow under jit: flag, keep the old
        new = xp.where(wrapped, self.counts, new)
        return GameCountsState(new, self.invalid + bad + xp.astype(wrapped, dt))

    def merge(self, other):
        """Add two states of the same kind (what ``psum`` does)."""
        if self.counts.shape != other.counts.shape:
            raise ValueError(f"cannot merge a {self.kind} state with a {other.kind} state")
        return GameCountsState(self.counts + other.counts, self.invalid + other.invalid)

    def compute(self, *, confidence_level: float = 0.95) -> MatchElo:
        """The Elo estimates of the counts so far (:func:`match_elo`); eager."""
        return match_elo(self, confidence_level=confidence_level)


def _state_namespace(state):
    import array_api_compat

    return array_api_compat.array_namespace(state.counts)
