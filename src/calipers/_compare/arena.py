"""Arena ratings: Bradley-Terry strengths from pairwise outcomes, on the Elo scale, with
bootstrap intervals, rank intervals and the probability of being best.

Bradley & Terry (1952): model ``i`` beats model ``j`` with probability
``pi_i / (pi_i + pi_j)``; with ``theta = log pi`` that is the logistic
``sigmoid(theta_i - theta_j)``, so the maximum-likelihood strengths are the
unpenalised logistic regression of the outcomes on the +1/-1 design of the
battles (as FastChat's ``compute_mle_elo`` fits them). Ties count as half a
win to each side, or follow Davidson (1970):
``P(i beats j) = pi_i / D``, ``P(tie) = nu sqrt(pi_i pi_j) / D`` with
``D = pi_i + pi_j + nu sqrt(pi_i pi_j)``.

The likelihood depends on the data only through the weighted pairwise win and
tie counts, so the battles are aggregated once into a K x K matrix and every
fit works on that matrix. A bootstrap replicate draws the counts of the
battles' cells (pair and outcome) as one multinomial over the cells
(:mod:`calipers._bootstrap.cells`): O(cells) per replicate, whatever the
number of battles, then O(K^3) per Newton step.

The MLE exists (is finite) exactly when the directed graph "i beat or tied j"
is strongly connected (Zermelo 1929; Ford 1957; Hunter 2004, Assumption 1).
Eagerly everything runs in NumPy (label encoding and the graph checks need
concrete values); :func:`bradley_terry` with ``num_models`` (integer codes)
also runs under ``jax.jit``, the same Newton iteration as a ``lax.while_loop``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._core import validation as V
from .._core import xp as B
from .._core.exceptions import BootstrapDesignWarning, UndefinedMetricWarning
from .._core.results import ConfidenceInterval, result_type
from .._core.types import ArrayLike, SeedLike
from .._bootstrap.intervals import bootstrap_interval
from .._bootstrap.cells import cell_counts, cell_table
from .._bootstrap.resample import make_design, numpy_drawer, seed_words

__all__ = ["BradleyTerryResult", "BradleyTerryBootstrap", "bradley_terry",
           "bradley_terry_bootstrap"]

ELO_PER_LOG = 400.0 / math.log(10.0)   # Elo points per natural-log unit of strength
DEFAULT_PRIOR = 1.0                     # the prior used when the MLE is not finite
_MAX_SHOWN = 8


@result_type(meta=("models", "scale", "ties", "anchor", "anchor_rating"))
class BradleyTerryResult:
    """Bradley-Terry ratings of ``models``.

    Attributes
    ----------
    ratings : ndarray (K,)
        ``scale="elo"``: ``400 log10(pi_i)`` shifted so that the anchor
        (a model, or the mean) sits at ``anchor_rating``; ``scale="log"``:
        ``log(pi_i)``, shifted the same way.
    models : tuple
        The distinct model labels, sorted (scikit-learn's encoding); every
        array follows this order.
    log_likelihood : float
        The (unpenalised) log-likelihood of the battles at the fitted strengths.
    tie_parameter : float
        Davidson's ``nu`` (NaN with ``ties="half"``); two equal models tie
        with probability ``nu / (2 + nu)``.
    prior : float
        The precision of the Gaussian prior on the centred natural-log
        strengths that was used (0: the plain MLE).
    win_counts : ndarray (K, K)
        Weighted decisive wins, ``win_counts[i, j]``: battles ``i`` won against ``j``.
    tie_counts : ndarray (K, K)
        Weighted ties, symmetric.
    scale, ties, anchor, anchor_rating : the conventions used.
    converged : bool
        Newton's steps fell below ``tol`` within ``max_iter``.
    """

    ratings: np.ndarray
    models: tuple
    log_likelihood: float
    tie_parameter: float
    prior: float
    win_counts: np.ndarray
    tie_counts: np.ndarray
    scale: str
    ties: str
    anchor: object
    anchor_rating: float
    converged: bool

    def rating(self, model) -> float:
        """The rating of one model, by label."""
        return float(self.ratings[_index_of(self.models, model, "model")])


@result_type(meta=("models", "n_resamples", "confidence_level", "resampling"))
class BradleyTerryBootstrap:
    """Bradley-Terry ratings with bootstrap intervals over battles (or clusters of battles).

    Attributes
    ----------
    models : tuple
        Sorted distinct labels; every array follows this order.
    fit : BradleyTerryResult
        The full-data fit (the point estimates).
    ratings : ndarray (K,)
        ``fit.ratings``.
    rating_interval : ConfidenceInterval
        ``low``, ``high``: arrays (K,), percentile intervals of each model's
        rating over the defined replicates (linear interpolation, NumPy's default).
    ranks : ndarray (K,)
        Full-data rank, 1 = best: one plus the number of models rated strictly higher.
    rank_interval : ConfidenceInterval
        ``low``, ``high``: arrays (K,) of whole numbers (float; NaN when no
        replicate is defined), the ``(1 - level) / 2`` and
        ``(1 + level) / 2`` quantiles of each model's rank over the replicates,
        taken as order statistics (NumPy's ``"lower"`` and ``"higher"``
        methods), so both ends are ranks that occurred.
    prob_best : ndarray (K,)
        Share of defined replicates in which the model has the highest rating
        (a tie for the top splits the replicate equally).
    replicates : ndarray (B, K)
        The ratings of every replicate; rows of NaN are undefined replicates.
    n_resamples, confidence_level : int, float
    n_undefined : int
        Replicates without a rating (a model without battles, no finite MLE
        at ``prior = 0``, or no tie or no decisive battle under Davidson):
        counted and left out of every summary.
    resampling : str
        ``"battles"``, ``"battle units"`` (integer weights as repetitions) or ``"clusters"``.
    """

    models: tuple
    fit: BradleyTerryResult
    ratings: np.ndarray
    rating_interval: ConfidenceInterval
    ranks: np.ndarray
    rank_interval: ConfidenceInterval
    prob_best: np.ndarray
    replicates: np.ndarray
    n_resamples: int
    confidence_level: float
    n_undefined: int
    resampling: str


# --------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------

def _index_of(models, label, name):
    for i, m in enumerate(models):
        if isinstance(m, str) == isinstance(label, str) and m == label:
            return i
    raise ValueError(f"{name} {label!r} is not among the models {_show(models)}")


def _show(labels):
    labels = list(labels)
    if len(labels) > _MAX_SHOWN:
        return repr(labels[:_MAX_SHOWN])[:-1] + f", ... ({len(labels)} in all)]"
    return repr(labels)


def _vector(x, name):
    arr = np.asarray(B.to_numpy(x) if hasattr(x, "shape") and not isinstance(x, np.ndarray)
                     else x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {arr.shape}")
    return arr


@dataclasses.dataclass(frozen=True)
class _Battles:
    models: tuple
    cell: np.ndarray       # per battle: winner * K + loser, or K*K + low * K + high for a tie
    weight: np.ndarray | None
    K: int


def _battles(model_a, model_b, outcome, sample_weight, num_models=None) -> _Battles:
    a = _vector(model_a, "model_a")
    b = _vector(model_b, "model_b")
    if a.shape[0] == 0:
        raise ValueError("model_a must not be empty: there are no battles")
    if b.shape[0] != a.shape[0]:
        raise ValueError(f"model_b has {b.shape[0]} elements but model_a has {a.shape[0]}; "
                         "they must match")
    for name, arr in (("model_a", a), ("model_b", b)):
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
            i = int(np.argmax(~np.isfinite(arr)))
            raise ValueError(f"{name} must hold model labels, got {arr[i]!r} at element {i}")
    if num_models is None:
        classes, (ia, ib) = V.encode_labels(a, b, names=("model_a", "model_b"), infer_from=2)
    else:
        for name, arr in (("model_a", a), ("model_b", b)):
            bad = ~np.isin(arr, np.arange(num_models)) if arr.dtype.kind in "iu" else None
            if bad is None:
                raise ValueError(f"with num_models, {name} must hold integer model codes "
                                 f"0..num_models-1, got dtype {arr.dtype}")
            if np.any(bad):
                i = int(np.argmax(bad))
                raise ValueError(f"{name} must hold integer model codes in [0, num_models="
                                 f"{num_models}), got {B.show(arr[i])} at element {i}")
        classes = np.arange(num_models)
        ia, ib = a.astype(np.int64), b.astype(np.int64)
    same = ia == ib
    if np.any(same):
        i = int(np.argmax(same))
        raise ValueError(f"model_a and model_b must differ in every battle: element {i} pits "
                         f"{B.show(a[i])} against itself")
    if outcome is None:
        o = np.ones(a.shape[0])
    else:
        o = _vector(outcome, "outcome")
        if o.dtype.kind not in "biuf":
            raise ValueError(f"outcome must be numeric (1: model_a wins, 0: model_b wins, "
                             f"0.5: tie), got dtype {o.dtype}")
        if o.shape[0] != a.shape[0]:
            raise ValueError(f"outcome has {o.shape[0]} elements but model_a has {a.shape[0]}; "
                             "they must match")
        o = o.astype(np.float64)
        bad = ~((o == 0) | (o == 0.5) | (o == 1))
        if np.any(bad):
            i = int(np.argmax(bad))
            raise ValueError(f"outcome must be 1 (model_a wins), 0 (model_b wins) or 0.5 "
                             f"(tie), got {B.show(o[i])} at element {i}")
    w = None
    if sample_weight is not None:
        w = _vector(sample_weight, "sample_weight")
        if w.shape[0] != a.shape[0]:
            raise ValueError(f"sample_weight has {w.shape[0]} elements but model_a has "
                             f"{a.shape[0]}; they must match")
        V.check_weights("sample_weight", w, np)
        w = w.astype(np.float64)
        if w.sum() >= 2.0**53:
            raise ValueError("sample_weight must sum to less than 2**53 (the counts are "
                             "accumulated exactly in float64)")
    K = int(classes.shape[0])
    lo, hi = np.minimum(ia, ib), np.maximum(ia, ib)
    cell = np.where(o == 1, ia * K + ib, ib * K + ia)
    cell = np.where(o == 0.5, K * K + lo * K + hi, cell)
    return _Battles(tuple(classes.tolist()), cell.astype(np.intp), w, K)


def _counts(bt: _Battles, weights):
    """(wins, ties) K x K matrices from per-battle weights (None: 1 each)."""
    return _cell_matrices(bt.K, bt.cell, weights)


def _cell_matrices(K, cell, weights):
    """(wins, ties) K x K matrices from the weights of battles (or cells) ``cell``."""
    c = np.bincount(cell, weights=weights, minlength=2 * K * K).astype(np.float64)
    W = c[:K * K].reshape(K, K)
    T = c[K * K:].reshape(K, K)
    return W, T + T.T


# --------------------------------------------------------------------------
# the comparison graph
# --------------------------------------------------------------------------

def _components(adj):
    """Connected components (lists of indices) of a symmetric boolean adjacency."""
    K = adj.shape[0]
    seen = np.zeros(K, bool)
    comps = []
    for s in range(K):
        if seen[s]:
            continue
        reach = np.zeros(K, bool)
        reach[s] = True
        while True:
            new = reach | adj[reach].any(axis=0)
            if np.array_equal(new, reach):
                break
            reach = new
        seen |= reach
        comps.append(np.flatnonzero(reach).tolist())
    return comps


def _strongly_connected(beat):
    """Is the directed graph ``beat[i, j]`` (i beat or tied j) strongly connected?"""
    K = beat.shape[0]
    # a model with an edge to and from every other model joins them all (the common
    # case of a dense tournament): no search needed
    both = beat & beat.T
    hub = int(np.argmax(both.sum(axis=1)))
    others = np.ones(K, bool)
    others[hub] = False
    if both[hub, others].all():
        return True
    for g in (beat, beat.T):
        reach = np.zeros(K, bool)
        reach[0] = True
        while True:
            new = reach | g[reach].any(axis=0)
            if np.array_equal(new, reach):
                break
            reach = new
        if not reach.all():
            return False
    return True


def _top_sets(beat):
    """Strong components that no model outside beats (their members' MLE is +infinity
    relative to the rest), as lists of indices."""
    K = beat.shape[0]
    R = beat | np.eye(K, dtype=bool)
    while True:                      # transitive closure by squaring
        R2 = (R.astype(np.float64) @ R.astype(np.float64)) > 0
        if np.array_equal(R2, R):
            break
        R = R2
    comp = R & R.T
    out, seen = [], set()
    for i in range(K):
        members = tuple(np.flatnonzero(comp[i]).tolist())
        if members in seen:
            continue
        seen.add(members)
        inside = np.zeros(K, bool)
        inside[list(members)] = True
        if not beat[~inside][:, inside].any():      # nobody outside beats them
            out.append(list(members))
    return out


def _check_connected(W, T, models):
    n = W + W.T + T
    comps = _components(n > 0)
    if len(comps) > 1:
        shown = "; ".join(_show([models[i] for i in c]) for c in comps[:_MAX_SHOWN])
        more = f" (and {len(comps) - _MAX_SHOWN} more)" if len(comps) > _MAX_SHOWN else ""
        raise ValueError(f"the comparison graph of model_a and model_b is not connected: "
                         f"ratings are not comparable across its {len(comps)} components "
                         f"{shown}{more}")


def _no_mle_message(W, T, models):
    beat = (W > 0) | (T > 0)
    K = W.shape[0]
    never_lose = [models[i] for i in range(K) if not beat[:, i].any()]
    never_win = [models[i] for i in range(K) if not beat[i].any()]
    parts = []
    if never_lose:
        parts.append(f"{_show(never_lose)} never lose or tie")
    if never_win:
        parts.append(f"{_show(never_win)} never win or tie")
    if not parts:
        tops = [s for s in _top_sets(beat) if len(s) < K]
        parts.append("the models " + "; ".join(_show([models[i] for i in s]) for s in tops)
                     + " never lose or tie against any model outside their set")
    return ("the Bradley-Terry maximum-likelihood ratings are not finite (the graph 'beat or "
            "tied' is not strongly connected): " + ", and ".join(parts))


# --------------------------------------------------------------------------
# Newton's method on the win / tie counts
# --------------------------------------------------------------------------

def _loglik(theta, eta, W, T, davidson, m=None):
    """The log-likelihood of the counts: a float, or with ``m`` (an array module) an array."""
    mm = np if m is None else m
    S = theta[:, None] - theta[None, :]
    if not davidson:
        Wh = W + T / 2
        ll = -(Wh * mm.logaddexp(0.0, -S)).sum()
    else:
        logD = mm.logaddexp(mm.logaddexp(S / 2, -S / 2), eta)
        ll = (W * (S / 2 - logD)).sum() + 0.5 * (T * (eta - logD)).sum()
    return float(ll) if m is None else ll


def _grad_hess(theta, eta, W, T, davidson, prior, m=np, pre=None):
    """Gradient and Hessian of the penalised log-likelihood in (theta[, eta]).

    ``m``: ``numpy`` or ``jax.numpy`` (the same formulas eagerly and under ``jit``).
    ``pre``: ``(W + T/2, its sum with its transpose, its row sums)`` when the caller
    holds them (they do not change between Newton steps).
    """
    K = theta.shape[0]
    S = theta[:, None] - theta[None, :]
    center = m.eye(K, dtype=theta.dtype) - 1.0 / K if prior is not None else None
    if not davidson:
        if pre is None:
            Wh = W + T / 2
            N = Wh + Wh.T
        else:
            Wh, N, rows = pre
        if m is np:                              # the same formulas with fewer temporaries
            p = np.tanh(S / 2)
            p += 1
            p *= 0.5                             # sigmoid(S), stable
            g = (Wh.sum(axis=1) if pre is None else rows) - (N * p).sum(axis=1)
            H = N * p
            H *= p.T
            H[np.diag_indices(K)] -= H.sum(axis=1)
        else:
            p = 0.5 * (1 + m.tanh(S / 2))
            g = (Wh - N * p).sum(axis=1)
            C = N * p * p.T
            H = C - m.diag(C.sum(axis=1))
        if prior is not None:
            g = g - prior * (center @ theta)
            H = H - prior * center
        return g, H
    N = W + W.T + T
    logD = m.logaddexp(m.logaddexp(S / 2, -S / 2), eta)
    pa, pb, pt = m.exp(S / 2 - logD), m.exp(-S / 2 - logD), m.exp(eta - logD)
    g_t = ((W - W.T) / 2 - N * (pa - pb) / 2).sum(axis=1)
    g_e = 0.5 * (T - N * pt).sum()
    C = N * ((pa + pb) / 4 - (pa - pb) ** 2 / 4)
    H_tt = C - m.diag(C.sum(axis=1))
    h_te = (N * (pa - pb) / 2 * pt).sum(axis=1)
    h_ee = -0.5 * (N * (pt - pt * pt)).sum()
    if prior is not None:
        g_t = g_t - prior * (center @ theta)
        H_tt = H_tt - prior * center
    g = m.concatenate([g_t, m.reshape(g_e, (1,))])
    H = m.concatenate([m.concatenate([H_tt, h_te[:, None]], axis=1),
                       m.concatenate([h_te, m.reshape(h_ee, (1,))])[None, :]], axis=0)
    return g, H


def _objective(theta, eta, W, T, davidson, prior):
    c = theta - theta.mean()
    return _loglik(theta, eta, W, T, davidson) - 0.5 * prior * float(c @ c)


def _newton(W, T, davidson, prior, theta0, eta0, max_iter, tol, f0=None):
    """Maximise the (penalised) log-likelihood; theta centred at mean 0.

    The Hessian is singular along the all-ones direction (a common shift of
    the strengths changes nothing): the step solves ``(-H + 11'/K) d = g``,
    which keeps ``d`` orthogonal to the ones (``g`` is). A full step is kept
    when the gradient at its end still points along it (``g_new . d >= 0``):
    the objective is concave, so it then increased all along the step, and the
    gradient and Hessian just computed serve the next step. Otherwise step
    halving on the objective keeps it increasing, so the iteration cannot
    diverge. It stops when a step moves no strength by ``tol`` or more.
    ``f0``: the objective at ``theta0`` when the caller has it.
    """
    K = W.shape[0]
    theta = theta0 - theta0.mean()
    eta = float(eta0)
    f = f0
    pr = prior or None
    J = np.zeros((K + davidson, K + davidson))
    J[:K, :K] = 1.0 / K
    pre = None
    if not davidson:
        Wh = W + T / 2
        pre = (Wh, Wh + Wh.T, Wh.sum(axis=1))
    g, H = _grad_hess(theta, eta, W, T, davidson, pr, pre=pre)
    for it in range(1, max_iter + 1):
        try:
            d = np.linalg.solve(J - H, g)
        except np.linalg.LinAlgError:
            return theta, eta, False, it
        t_new = theta + d[:K]
        t_new -= t_new.mean()
        e_new = eta + d[K] if davidson else eta
        if np.max(np.abs(d)) < tol:
            return t_new, e_new, True, it
        g_new, H_new = _grad_hess(t_new, e_new, W, T, davidson, pr, pre=pre)
        if float(g_new @ d) >= 0:
            theta, eta, g, H, f = t_new, e_new, g_new, H_new, None
            continue
        if f is None:
            f = _objective(theta, eta, W, T, davidson, prior)
        step = 1.0
        while True:
            t_new = theta + step * d[:K]
            t_new -= t_new.mean()
            e_new = eta + step * d[K] if davidson else eta
            f_new = _objective(t_new, e_new, W, T, davidson, prior)
            if f_new >= f - 1e-12 * max(1.0, abs(f)) or step < 1e-10:
                break
            step /= 2
        theta, eta, f = t_new, e_new, f_new
        if np.max(np.abs(step * d)) < tol:
            return theta, eta, True, it
        # the full step kept: its gradient and Hessian are the ones just computed
        g, H = (g_new, H_new) if step == 1.0 else _grad_hess(theta, eta, W, T, davidson, pr,
                                                             pre=pre)
    return theta, eta, False, max_iter


def _defined(W, T, davidson, prior):
    """Can this count matrix be fitted: every model in one connected graph, a finite
    optimum (prior > 0 or strongly connected), and for Davidson ties and decisive battles."""
    N = W + W.T + T
    if not _strongly_connected(N > 0):
        return False
    if prior == 0 and not _strongly_connected((W > 0) | (T > 0)):
        return False
    if davidson and (T.sum() == 0 or W.sum() == 0):
        return False
    return True


# --------------------------------------------------------------------------
# under jax.jit: integer codes, a static number of models
# --------------------------------------------------------------------------

def _strong_m(A, m):
    """Is the directed graph ``A`` (bool K x K) strongly connected? (static-shape closure)"""
    K = A.shape[0]
    R = m.astype(A | m.eye(K, dtype=bool), m.float32)
    for _ in range(max(1, math.ceil(math.log2(K))) + 1):
        R = m.astype((R @ R) > 0, m.float32)
    return m.all(R > 0)


def _newton_jax(W, T, davidson, prior, eta0, max_iter, tol):
    """:func:`_newton` as a ``lax.while_loop`` (step halving in an inner loop)."""
    import jax
    import jax.numpy as jnp

    K, dt = W.shape[0], W.dtype
    P = K + davidson
    J = jnp.zeros((P, P), dt).at[:K, :K].set(1.0 / K)
    slack = max(1e-12, 10 * float(jnp.finfo(dt).eps))

    def obj(theta, eta):
        c = theta - jnp.mean(theta)
        return _loglik(theta, eta, W, T, davidson, jnp) - 0.5 * prior * (c @ c)

    def cond(st):
        return (st[0] < max_iter) & ~st[4]

    def body(st):
        it, theta, eta, f, _ = st
        g, H = _grad_hess(theta, eta, W, T, davidson, prior, jnp)
        d = jnp.linalg.solve(J - H, g)
        d_t = d[:K]
        d_e = d[K] if davidson else jnp.zeros((), dt)
        floor = f - slack * jnp.maximum(1.0, jnp.abs(f))

        def icond(x):
            return ~(x[1] >= floor) & (x[0] >= 1e-10)

        def ibody(x):
            step = x[0] / 2
            return step, obj(theta + step * d_t, eta + step * d_e)

        one = jnp.ones((), dt)
        step, f_new = jax.lax.while_loop(icond, ibody, (one, obj(theta + d_t, eta + d_e)))
        t_new = theta + step * d_t
        done = jnp.max(jnp.abs(step * d)) < tol
        return it + 1, t_new - jnp.mean(t_new), eta + step * d_e, f_new, done

    theta0 = jnp.zeros(K, dt)
    eta0 = jnp.asarray(eta0, dt)
    st = (jnp.asarray(0), theta0, eta0, obj(theta0, eta0), jnp.asarray(False))
    _, theta, eta, _, done = jax.lax.while_loop(cond, body, st)
    return theta, eta, done


def _fit_traced(model_a, model_b, outcome, sample_weight, K, ties, anchor, anchor_rating,
                scale, prior, max_iter, tol):
    import jax.numpy as jnp

    davidson = ties == "davidson"
    # rows sharded on an Explicit mesh: replicated for the scatter into the count matrices
    model_a, model_b, outcome, sample_weight = (B.replicate_explicit(x) for x in (
        model_a, model_b, outcome, sample_weight))
    a, b = jnp.asarray(model_a), jnp.asarray(model_b)
    for name, x in (("model_a", a), ("model_b", b)):
        if x.ndim != 1 or not jnp.issubdtype(x.dtype, jnp.integer):
            raise ValueError(f"under jit, {name} must be a 1-D array of integer model codes "
                             f"0..num_models-1, got shape {x.shape} and dtype {x.dtype}")
    if b.shape != a.shape:
        raise ValueError(f"model_b has {b.shape[0]} elements but model_a has {a.shape[0]}; "
                         "they must match")
    if anchor is not None and (isinstance(anchor, bool) or not isinstance(
            anchor, (int, np.integer)) or not 0 <= anchor < K):
        raise ValueError(f"under jit, anchor must be a model code in [0, num_models={K}), "
                         f"got {anchor!r}")
    dt = jnp.result_type(float)
    n = a.shape[0]
    o = jnp.ones(n, dt) if outcome is None else jnp.asarray(outcome).astype(dt)
    w = jnp.ones(n, dt) if sample_weight is None else jnp.asarray(sample_weight).astype(dt)
    bad = ((a < 0) | (a >= K) | (b < 0) | (b >= K) | (a == b)
           | ~((o == 0) | (o == 0.5) | (o == 1)) | ~jnp.isfinite(w) | (w < 0))
    invalid = jnp.any(bad) | (n == 0)
    ia, ib = jnp.clip(a, 0, K - 1).astype(jnp.int32), jnp.clip(b, 0, K - 1).astype(jnp.int32)
    cell = jnp.where(o == 1, ia * K + ib, ib * K + ia)
    cell = jnp.where(o == 0.5, K * K + jnp.minimum(ia, ib) * K + jnp.maximum(ia, ib), cell)
    c = jnp.zeros(2 * K * K, dt).at[cell].add(jnp.where(bad, 0.0, w))
    W = c[:K * K].reshape(K, K)
    Tu = c[K * K:].reshape(K, K)
    T = Tu + Tu.T
    connected = _strong_m((W + W.T + T) > 0, jnp)
    finite = _strong_m((W > 0) | (T > 0), jnp)
    pr = jnp.where(finite, 0.0, DEFAULT_PRIOR).astype(dt) if prior is None else \
        jnp.asarray(prior, dt)
    undefined = ~connected | ((pr == 0) & ~finite)
    eta0 = jnp.zeros((), dt)
    if davidson:
        no_nu = (T.sum() == 0) | (W.sum() == 0)
        undefined = undefined | no_nu
        eta0 = jnp.where(no_nu, 0.0, jnp.log(jnp.where(no_nu, 1.0, T.sum() / W.sum())))
    tol = max(tol, 1e3 * float(jnp.finfo(dt).eps))
    theta, eta, converged = _newton_jax(W, T, davidson, pr, eta0, max_iter, tol)
    factor = ELO_PER_LOG if scale == "elo" else 1.0
    ref = jnp.mean(theta) if anchor is None else theta[int(anchor)]
    nan = invalid | undefined
    ratings = jnp.where(nan, jnp.nan, factor * (theta - ref) + anchor_rating)
    ll = jnp.where(nan, jnp.nan, _loglik(theta, eta, W, T, davidson, jnp))
    nu = jnp.where(nan, jnp.nan, jnp.exp(eta)) if davidson else jnp.asarray(jnp.nan, dt)
    return BradleyTerryResult(
        models=tuple(range(K)), ratings=ratings, log_likelihood=ll, tie_parameter=nu,
        prior=pr, win_counts=W, tie_counts=T, scale=scale, ties=ties, anchor=anchor,
        anchor_rating=anchor_rating, converged=converged & ~nan)


# --------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------

def _options(ties, scale, anchor_rating, prior, max_iter, tol):
    V.choice(ties, "ties", ("half", "davidson"))
    V.choice(scale, "scale", ("elo", "log"))
    if anchor_rating is None:
        anchor_rating = 1000.0 if scale == "elo" else 0.0
    if isinstance(anchor_rating, (bool, np.bool_)) or not isinstance(
            anchor_rating, (int, float, np.integer, np.floating)) or \
            not math.isfinite(anchor_rating):
        raise ValueError(f"anchor_rating must be a finite real number, got {anchor_rating!r}")
    if prior is not None and (isinstance(prior, (bool, np.bool_)) or not isinstance(
            prior, (int, float, np.integer, np.floating)) or not math.isfinite(prior)
            or prior < 0):
        raise ValueError(f"prior must be None or a finite real number >= 0, got {prior!r}")
    V.positive_int(max_iter, "max_iter")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
        raise ValueError(f"tol must be a positive real number, got {tol!r}")
    return float(anchor_rating)


def _to_ratings(theta, models, scale, anchor, anchor_rating):
    factor = ELO_PER_LOG if scale == "elo" else 1.0
    ref = theta.mean() if anchor is None else theta[_index_of(models, anchor, "anchor")]
    return factor * (theta - ref) + anchor_rating


def _fit(bt, W, T, ties, anchor, anchor_rating, scale, prior, max_iter, tol, warn=True):
    davidson = ties == "davidson"
    models = bt.models
    _check_connected(W, T, models)
    if anchor is not None:
        _index_of(models, anchor, "anchor")
    if davidson and (T.sum() == 0 or W.sum() == 0):
        raise ValueError("ties='davidson' needs at least one tie (outcome 0.5) and one "
                         "decisive battle with a positive weight: the tie parameter's MLE is "
                         "0 or infinite otherwise (use ties='half')")
    finite = _strongly_connected((W > 0) | (T > 0))
    if prior is None:
        prior = 0.0
        if not finite:
            prior = DEFAULT_PRIOR
            if warn:
                B.warn(_no_mle_message(W, T, models) + f"; returning the estimate under a "
                       f"Gaussian prior of precision {DEFAULT_PRIOR} on the centred natural-"
                       f"log strengths (result.prior); pass prior= to choose it",
                       UndefinedMetricWarning)
    elif prior == 0 and not finite:
        raise ValueError("prior=0 asks for the maximum-likelihood ratings, but "
                         + _no_mle_message(W, T, models)
                         + "; pass prior > 0 (or None for the default)")
    prior = float(prior)
    K = bt.K
    eta0 = 0.0
    if davidson:   # start nu where it is for equal strengths: 2 * ties / decisive
        eta0 = math.log(T.sum() / W.sum())          # (T counts each tie twice)
    theta, eta, converged, it = _newton(W, T, davidson, prior, np.zeros(K), eta0, max_iter, tol)
    if not converged and warn:
        B.warn(f"Newton's method did not converge in max_iter={max_iter} steps",
               RuntimeWarning)
    return BradleyTerryResult(
        models=models, ratings=_to_ratings(theta, models, scale, anchor, anchor_rating),
        log_likelihood=_loglik(theta, eta, W, T, davidson),
        tie_parameter=math.exp(eta) if davidson else math.nan, prior=prior,
        win_counts=W, tie_counts=T, scale=scale, ties=ties, anchor=anchor,
        anchor_rating=anchor_rating, converged=bool(converged)), \
        (theta, eta)


def bradley_terry(model_a: ArrayLike, model_b: ArrayLike, outcome: ArrayLike = None, *,
                  sample_weight: ArrayLike = None, ties: str = "half", anchor: Any = None, anchor_rating: float | None = None, scale: str = "elo",
                  prior: float | None = None, num_models: int | None = None,
                  max_iter: int = 100, tol: float = 1e-10) -> BradleyTerryResult:
    """Bradley-Terry ratings from pairwise outcomes, by maximum likelihood (Newton).

    ``P(a beats b) = 1 / (1 + 10 ** ((R_b - R_a) / 400))`` on the Elo scale:
    ``R = 400 log10(pi) = (400 / ln 10) theta`` for the Bradley & Terry (1952)
    strengths ``pi = exp(theta)``. The ratings maximise the likelihood of the
    battles, the same solution as an unpenalised logistic regression of the
    outcomes on the +1/-1 design (FastChat's ``compute_mle_elo``), found by
    Newton's method with step halving on the K x K win and tie counts.

    Parameters
    ----------
    model_a, model_b : 1-D arrays of labels (n,)
        The two models of each battle; any sortable labels (strings included),
        encoded as scikit-learn does (sorted distinct values of both arrays).
    outcome : 1-D array (n,) of {1, 0, 0.5}, optional
        1: ``model_a`` won, 0: ``model_b`` won, 0.5: a tie. Omitted: ``model_a``
        won every battle (winner / loser arrays).
    sample_weight : 1-D array (n,) of non-negative numbers, optional
        Integer weights are repetitions (weight 3 is the battle three times).
    ties : {"half", "davidson"}
        ``"half"``: a tie counts as half a win for each side (FastChat's
        convention). ``"davidson"``: Davidson's (1970) tie model,
        ``P(tie) = nu sqrt(pi_a pi_b) / (pi_a + pi_b + nu sqrt(pi_a pi_b))``,
        with ``nu`` fitted jointly (``tie_parameter``); it needs at least one
        tie and one decisive battle.
    anchor : a model label, optional
        The model placed at ``anchor_rating``; None: the mean rating is
        ``anchor_rating``.
    anchor_rating : float, optional
        Default 1000 on the Elo scale, 0 on the log scale.
    scale : {"elo", "log"}
        ``"elo"``: 400/ln 10 rating points per natural-log unit (a 400-point
        gap is 10:1 odds); ``"log"``: the natural-log strengths ``theta``.
    prior : float >= 0, optional
        Precision of a Gaussian prior on the centred natural-log strengths:
        the estimate maximises ``loglik(theta) - prior / 2 * sum((theta -
        mean(theta))**2)`` (an L2 penalty that does not move the mean).
        None (default): 0, the plain MLE, when it is finite; when it is not
        (a model, or a set of models, never loses or never wins, so the
        likelihood keeps growing as its rating goes to infinity) an
        ``UndefinedMetricWarning`` names the models and ``prior = 1`` is used
        (``result.prior``), never a silently huge rating. ``prior=0`` then
        raises instead.
    num_models : int >= 2, optional (static)
        The number of models K, with ``model_a`` and ``model_b`` integer codes
        ``0 .. K - 1`` (``models`` is then ``(0, ..., K - 1)``, and a code
        without battles is a model outside the comparison graph). Required
        under ``jax.jit``.
    max_iter, tol : Newton's limits (``tol`` on the natural-log scale; under
        ``jit`` at least ``1000 eps`` of the float dtype).

    Returns
    -------
    BradleyTerryResult
        ``models`` (sorted labels), ``ratings``, ``log_likelihood``,
        ``tie_parameter``, ``prior``, the count matrices, ``converged``.

    Raises
    ------
    ValueError
        Arrays not 1-D or of different lengths, no battles, a battle of a model
        against itself, ``outcome`` outside {0, 0.5, 1}, invalid weights
        (negative, NaN, infinite), a comparison graph that is not connected
        (the message lists its components: ratings in different components
        are not comparable), ``anchor`` not among the models, ``ties``,
        ``scale`` or ``prior`` out of their domains, ``ties="davidson"`` with
        no tie or no decisive battle, ``prior=0`` with no finite MLE.

    Notes
    -----
    Eagerly the fit runs in NumPy on the host (JAX, torch or array-api-strict
    inputs are read there). Under ``jax.jit`` (with ``num_models``) the same
    Newton iteration runs as a ``lax.while_loop`` on device and nothing
    raises: invalid input (codes out of range, a self-battle, an outcome
    outside {0, 0.5, 1}, a negative or non-finite weight), a disconnected
    graph, no finite MLE at ``prior=0``, or Davidson without a tie or a
    decisive battle give NaN ratings; ``prior=None`` becomes 0 or 1 as
    eagerly (without the warning; ``result.prior`` says which), and
    ``converged`` is an array. The counts are float64,
    exact for integer weights summing below 2**53 (checked). Battle order,
    and swapping ``model_a`` with ``model_b`` while flipping the outcome,
    change nothing. The MLE is finite exactly when the graph "i beat or tied
    j" is strongly connected (Zermelo 1929; Hunter 2004).

    Examples
    --------
    >>> import calipers
    >>> a = ["gpt", "gpt", "gpt", "llama", "llama", "mistral", "gpt", "mistral", "llama",
    ...      "mistral"]
    >>> b = ["llama", "mistral", "llama", "mistral", "gpt", "gpt", "mistral", "llama",
    ...      "mistral", "gpt"]
    >>> outcome = [1, 1, 0.5, 1, 0, 0, 1, 0.5, 0, 1]
    >>> r = calipers.bradley_terry(a, b, outcome)
    >>> r.models
    ('gpt', 'llama', 'mistral')
    >>> [round(float(x), 1) for x in r.ratings]
    [1151.8, 912.1, 936.1]
    >>> round(calipers.bradley_terry(a, b, outcome, anchor="llama").rating("gpt"), 1)
    1239.6
    """
    anchor_rating = _options(ties, scale, anchor_rating, prior, max_iter, tol)
    if num_models is not None:
        num_models = V.positive_int(num_models, "num_models", minimum=2)
        if B.is_traced(model_a, model_b, outcome, sample_weight):
            return _fit_traced(model_a, model_b, outcome, sample_weight, num_models, ties,
                               anchor, anchor_rating, scale, prior, max_iter, tol)
    elif B.is_traced(model_a, model_b, outcome, sample_weight):
        raise ValueError("under jit, pass num_models (static) and integer model codes "
                         "0..num_models-1 as model_a and model_b")
    bt = _battles(model_a, model_b, outcome, sample_weight, num_models)
    W, T = _counts(bt, bt.weight)
    return _fit(bt, W, T, ties, anchor, anchor_rating, scale, prior, max_iter, tol)[0]


def _ranks(r):
    """Competition ranks, 1 = best, per row of (B, K) ratings: one plus the number of
    models rated strictly higher (in row chunks of about 10^7 comparisons)."""
    Bn, K = r.shape
    step = max(1, 10**7 // (K * K))
    return np.concatenate([1 + (c[:, None, :] > c[:, :, None]).sum(axis=2)
                           for c in (r[i:i + step] for i in range(0, max(Bn, 1), step))])


def _group_codes(groups, n):
    g = _vector(groups, "groups")
    if g.shape[0] != n:
        raise ValueError(f"groups has {g.shape[0]} elements but model_a has {n}; they must match")
    try:
        _, inv = np.unique(g, return_inverse=True)
    except TypeError as exc:
        raise ValueError(f"groups must be labels of one sortable type: {exc}") from exc
    return inv.reshape(-1).astype(np.int64), int(inv.max()) + 1


def _design(n, groups, w):
    """How the battles are resampled: ``("cells", table, label, units)`` without groups,
    ``("rows", draw-design, label, units)`` with them.

    Without groups the likelihood needs a replicate's win / tie counts only, so the
    battles are grouped into cells (:func:`calipers._bootstrap.cells.cell_table`):
    the pair and outcome of a battle, with integer weights as its multiplicity, or
    keyed also by a non-integer weight (whose battles are resampled as rows). With
    ``groups`` the clusters are resampled whole by the one resampler's cluster design.
    """
    if groups is not None:
        codes, C = groups
        return "rows", (make_design("cluster", n, n_units=C), ((codes,), None)), "clusters", C
    return "cells", None, ("battle units" if w is not None and np.all(w == np.round(w))
                           else "battles"), None


def _cell_table(bt):
    """The battles' cells: ``(table, weight per cell or None)``."""
    w = bt.weight
    if w is None:
        return cell_table(bt.cell), None
    if np.all(w == np.round(w)):
        return cell_table(bt.cell, multiplicity=w.astype(np.int64)), None
    t = cell_table(bt.cell, value=w)
    return t, t.value


def bradley_terry_bootstrap(model_a: ArrayLike, model_b: ArrayLike, outcome: ArrayLike = None,
                            *, sample_weight: ArrayLike = None, groups: ArrayLike = None,
                            ties: str = "half", anchor: Any = None, anchor_rating: float | None = None,
                            scale: str = "elo", prior: float | None = None,
                            n_resamples: int = 1000, confidence_level: float = 0.95,
                            seed: SeedLike = None, max_iter: int = 100,
                            tol: float = 1e-10) -> BradleyTerryBootstrap:
    """Bradley-Terry ratings with bootstrap intervals, rank intervals and P(best).

    Each replicate resamples the battles with replacement. The likelihood
    depends on a replicate only through its win / tie counts, so the battles
    are grouped into cells (the ordered pair of a decisive battle, the
    unordered pair of a tie) and a replicate draws the cells' counts
    ``(C_1, ..., C_G) ~ Multinomial(N, m / N)``, ``m_g`` being cell ``g``'s
    multiplicity: exactly the distribution of resampling the ``N`` battles
    one by one (FastChat's ``get_bootstrap_result_elo_mle_with_tie`` draws the
    same multinomial). Integer ``sample_weight`` is repetition (a battle of
    weight ``w`` is ``w`` units of its cell); non-integer weights keep each
    battle one unit and key its cell by the weight too, the cell's count
    multiplying its weight. The counts are drawn by binomial splitting down a
    binary tree over the sorted cells from
    ``Generator(PCG64(SeedSequence(seed words, spawn_key=(r,))))`` for
    replicate ``r`` (:mod:`calipers._bootstrap.cells`): a function of
    ``(seed, r, the sorted cells and their multiplicities)`` only, so the
    battles' order and which side is ``model_a`` never matter. With
    ``groups``, whole clusters (a prompt, a game pair) are resampled with their
    battles by calipers' counter-based resampler (a function of ``(seed,
    replicate, cluster)``), a cluster's count multiplying its battles'
    weights. The replicate's weighted win / tie counts are refitted
    by Newton's method started from the full-data estimate, with the same
    ``ties``, ``prior`` and anchoring as :func:`bradley_terry` (the anchor model's
    rating is the same in every replicate: intervals are relative to it).

    Parameters
    ----------
    model_a, model_b, outcome, sample_weight, ties, anchor, anchor_rating, scale, prior,
    max_iter, tol :
        As :func:`bradley_terry`. ``prior=None`` resolves on the full data (0
        when the MLE is finite) and that value is used in every replicate.
    groups : 1-D array (n,) of labels, optional
        Cluster of each battle: clusters are resampled, with their battles.
    n_resamples : int >= 1
    confidence_level : float in (0, 1)
    seed : None, int >= 0, NumPy Generator / SeedSequence, or a JAX key

    Returns
    -------
    BradleyTerryBootstrap
        ``ratings``, ``rating_interval`` (percentile), ``ranks``,
        ``rank_interval``, ``prob_best``, ``replicates`` (B, K), ``n_undefined``.

    Raises
    ------
    ValueError
        As :func:`bradley_terry`; ``groups`` of another length; ``n_resamples``,
        ``confidence_level`` or ``seed`` out of their domains.

    Warns
    -----
    UndefinedMetricWarning
        When replicates are undefined: a model drawn without battles, a
        replicate without a finite MLE at ``prior = 0`` (a model that never
        loses in the replicate: pass ``prior > 0`` to keep such replicates),
        or, under Davidson, a replicate without a tie or a decisive battle.
        They are NaN rows of ``replicates``, counted in ``n_undefined`` and
        left out of the intervals and of ``prob_best``.
    BootstrapDesignWarning
        Fewer than 10 resampling units (battles or clusters).

    Notes
    -----
    Eager NumPy only. O(cells) per replicate for the draw and the count into
    the K x K matrices (at most ``1.5 K (K - 1)`` cells; one pass over the
    battles with ``groups``), then O(K^3) per Newton step. The draws use
    NumPy's ``Generator.binomial``, whose stream NumPy keeps across releases
    as a practice, not a promise (NEP 19): an upgrade could change the
    replicates, never their distribution.
    """
    anchor_rating = _options(ties, scale, anchor_rating, prior, max_iter, tol)
    n_resamples = V.positive_int(n_resamples, "n_resamples")
    confidence_level = V.confidence_level(confidence_level)
    words = seed_words(seed)
    bt = _battles(model_a, model_b, outcome, sample_weight)
    n = bt.cell.shape[0]
    gcodes = None if groups is None else _group_codes(groups, n)
    W, T = _counts(bt, bt.weight)
    fit, (theta0, eta0) = _fit(bt, W, T, ties, anchor, anchor_rating, scale, prior,
                               max_iter, tol)
    prior_used, davidson = fit.prior, ties == "davidson"
    how, rows, label, units = _design(n, gcodes, bt.weight)
    K = bt.K
    if how == "cells":
        table, cell_w = _cell_table(bt)
        units = table.n_units if label == "battle units" else n
        cell_of = table.cells
    if units < 10:
        B.warn(f"the bootstrap has only {units} resampling units ({label}): too few for the "
               "interval to mean anything", BootstrapDesignWarning)
    words_u32 = np.asarray(words, dtype=np.uint32)
    if how == "rows":
        draw = numpy_drawer(rows[0], rows[1], words_u32)
    reps = np.full((n_resamples, K), np.nan)
    # every replicate starts at theta0: the log-likelihood's per-pair terms there are shared,
    # so each replicate's starting objective is one weighted sum (Bradley-Terry ties as halves)
    c0 = theta0 - theta0.mean()
    L0 = None if davidson else np.logaddexp(0.0, -(c0[:, None] - c0[None, :]))
    pen0 = 0.5 * prior_used * float(c0 @ c0)
    for r in range(n_resamples):
        if how == "cells":
            c = cell_counts(table, words_u32, r).astype(np.float64)
            Wr, Tr = _cell_matrices(K, cell_of, c if cell_w is None else c * cell_w)
        else:
            c = np.asarray(draw(r), dtype=np.float64)
            Wr, Tr = _counts(bt, c if bt.weight is None else c * bt.weight)
        if not _defined(Wr, Tr, davidson, prior_used):
            continue
        f0 = None if L0 is None else -float(((Wr + Tr / 2) * L0).sum()) - pen0
        theta, _, _, _ = _newton(Wr, Tr, davidson, prior_used, theta0, eta0, max_iter, tol,
                                 f0=f0)
        reps[r] = _to_ratings(theta, bt.models, scale, anchor, anchor_rating)
    ok = ~np.isnan(reps[:, 0])
    n_undefined = int(n_resamples - ok.sum())
    if n_undefined:
        B.warn(f"{n_undefined} of {n_resamples} bootstrap replicates have no ratings (a model "
               f"drawn without battles, no finite MLE at prior={prior_used}, or under Davidson "
               "no tie or no decisive battle); they are left out of the intervals"
               + (" (pass prior > 0 to keep replicates where a model never loses)"
                  if prior_used == 0 else ""), UndefinedMetricWarning)
    good = reps[ok]
    if good.shape[0]:
        intervals = [bootstrap_interval(good[:, k], float(fit.ratings[k]),
                                        confidence_level=confidence_level) for k in range(K)]
        low = np.array([iv.low for iv in intervals])
        high = np.array([iv.high for iv in intervals])
        rk = _ranks(good)
        alpha = 1 - confidence_level
        r_low = np.quantile(rk, alpha / 2, axis=0, method="lower").astype(np.float64)
        r_high = np.quantile(rk, 1 - alpha / 2, axis=0, method="higher").astype(np.float64)
        top = good == good.max(axis=1, keepdims=True)
        prob_best = (top / top.sum(axis=1, keepdims=True)).mean(axis=0)
    else:
        low = high = prob_best = r_low = r_high = np.full(K, np.nan)
    return BradleyTerryBootstrap(
        models=bt.models, fit=fit, ratings=fit.ratings,
        rating_interval=ConfidenceInterval(low, high), ranks=_ranks(fit.ratings[None])[0],
        rank_interval=ConfidenceInterval(r_low, r_high), prob_best=prob_best,
        replicates=reps, n_resamples=n_resamples, confidence_level=confidence_level,
        n_undefined=n_undefined, resampling=label)
