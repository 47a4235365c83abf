"""Paired bootstrap of the difference between two models on the same examples.

Design: **sort once, resample by counts.**

* A replicate is a vector of resampling counts per example (how often each
  example is drawn), the same vector for model A and model B: that is what
  makes the comparison paired. The metric is evaluated with the counts as
  integer weights, which equals evaluating it on the resampled rows exactly
  (counts are accumulated in integers).
* The rows are put once into a *layout* order, and counts are drawn directly
  in layout order (multinomial counts are exchangeable). For ROC AUC the
  layout is [negatives | positives], each in model A's score order: a
  replicate is one prefix sum of the negatives' counts (after one gather into
  B's order for model B), a gather at ranks found once by ``searchsorted`` and
  a dot product, in exact integers. For AP the layout is A's score order;
  log loss and Brier are weighted means of per-row losses computed once.
* Replicate ``i`` has its own random stream: on NumPy a ``Generator`` on
  ``SeedSequence(seed, spawn_key=(i,))`` (one replicate at a time per worker
  thread, O(workers * n) memory), on JAX ``fold_in(key, i)`` inside a
  ``jit``-compiled, ``vmap``-ped chunk of ``batch`` replicates (O(batch * n)
  memory). So the answer does not depend on ``batch``, ``workers`` or how the
  chunks are sharded over devices, and peak memory does not grow with
  ``n_resamples``. No n x B index matrix is ever built.
"""

from __future__ import annotations

import functools
import inspect
import math
import threading
import warnings
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Callable

import numpy as np

from . import _backend as B
from . import _probability as _prob
from . import _ranking as _rank
from . import _rankstats as R
from ._exceptions import UndefinedMetricWarning
from ._results import ConfidenceInterval, result_type

__all__ = ["ConfidenceInterval", "BootstrapResult", "paired_bootstrap",
           "paired_bootstrap_replicates"]

_NORMAL = NormalDist()


@result_type(meta=("n_resamples", "confidence_level", "method", "alternative", "design",
                   "resampling"))
class BootstrapResult:
    """What :func:`paired_bootstrap` returns.

    Attributes
    ----------
    estimate_a, estimate_b : float
        The metric of each model on the full data.
    difference : float
        ``estimate_a - estimate_b``.
    confidence_interval : ConfidenceInterval
        Interval for the difference at ``confidence_level`` by ``method``
        (one-sided intervals have an infinite end, as scipy's).
    interval_a, interval_b : ConfidenceInterval
        Intervals for each model's metric, same method, same replicates.
    bootstrap_distribution : ndarray (n_resamples,), float64
        Replicated differences; NaN where the replicate was undefined.
    distribution_a, distribution_b : ndarray (n_resamples,), float64
        Replicated values of each model (NaN where undefined).
    standard_error : float
        Standard deviation (ddof=1) of the defined replicated differences.
    n_undefined : int
        Replicates where the metric of A or B was undefined (for example a
        resample with one class has no AUC). They are left out of every
        interval, share and p-value, never scored as 0 or 0.5.
    n_resamples : int
    prob_a_greater : float
        Share of defined replicates in which A's metric exceeds B's.
    confidence_level : float
    method : str
        ``"percentile"``, ``"basic"`` or ``"bca"``.
    alternative : str
    pvalue : float
        Bootstrap p-value for "no difference" by inverting the percentile
        interval: ``greater``: share of defined replicated differences <= 0;
        ``less``: share >= 0; two-sided: ``min(1, 2 * min(both))``.
    design : str
        Resampling unit: ``"rows"``, ``"stratified rows"``, ``"clusters"`` or
        ``"moving blocks"``; with ``resampling`` below.
    resampling : str
        ``"multinomial"`` (exact bootstrap) or ``"poisson"``.
    """

    estimate_a: float
    estimate_b: float
    difference: float
    confidence_interval: ConfidenceInterval
    interval_a: ConfidenceInterval
    interval_b: ConfidenceInterval
    bootstrap_distribution: np.ndarray = field(repr=False)
    distribution_a: np.ndarray = field(repr=False)
    distribution_b: np.ndarray = field(repr=False)
    standard_error: float
    n_undefined: int
    n_resamples: int
    prob_a_greater: float
    confidence_level: float
    method: str
    alternative: str = "two-sided"
    pvalue: float = math.nan
    design: str = "rows"
    resampling: str = "multinomial"


# --------------------------------------------------------------------------
# kernels: prepare once per model (in layout order), evaluate per replicate
# --------------------------------------------------------------------------
# A kernel is a small frozen (hashable) object holding only static facts, so
# compiled JAX programs are cached across calls; its state is a tuple of
# arrays (a pytree) passed to the compiled program as an argument.

def _f(x, xp):
    return xp.astype(x, B.acc_float(xp))


def _weights(counts, w, xp):
    """Replicate weights: integer counts, or counts * sample_weight (float)."""
    if w is None:
        return counts
    return _f(counts, xp) * _f(w, xp)


@dataclass(frozen=True)
class _AUCKernel:
    """ROC AUC over one presorted order: O(n) per replicate (Mann-Whitney, ties 1/2)."""

    def prepare(self, y01, s, w, xp, identity):
        perm = None if identity else xp.argsort(s, stable=False)
        ss = s if identity else xp.take(s, perm)
        y = y01 if identity else xp.take(y01, perm)
        lo, hi = B.group_bounds(ss, xp)
        ww = None if w is None else (w if identity else xp.take(w, perm))
        return (perm, y, lo, hi, ww)

    def evaluate(self, state, counts, xp):
        perm, y, lo, hi, w = state
        c = counts if perm is None else xp.take(counts, perm)
        tg = R.presorted_groups(y, lo, hi)
        return R.binary_auc(tg, R.class_weights(tg, _weights(c, w, xp), xp), xp)[0]

    def loo(self, state, xp):
        """Leave-one-out AUC per row (layout order), from the same prefix sums: O(n).

        Counts stay integers without weights (:func:`calipers._rankstats.loo_auc`).
        """
        perm, y, lo, hi, w = state
        tg = R.presorted_groups(y, lo, hi)
        return _unpermute(R.loo_auc(tg, R.class_weights(tg, w, xp), xp), perm, xp)


@dataclass(frozen=True)
class _AUCSplitKernel:
    """ROC AUC when the layout is [negatives | positives], each in model A's order.

    Eager only (the class sizes ``N``, ``P`` are static). Per replicate:
    prefix sums of the negatives' weights (in this model's order: a gather of
    N for model B, none for A), then for each positive the negative weight
    below it read at a precomputed rank (``searchsorted`` once, at set-up),
    and one dot product. Integer counts stay integers (exact) on 64-bit
    backends.
    """

    N: int
    P: int
    ties: bool = True

    def prepare(self, y01, s, w, xp, identity):
        N = self.N
        sneg, spos = s[:N], s[N:]
        perm = None if identity else xp.argsort(sneg, stable=False)
        sneg_sorted = sneg if identity else xp.take(sneg, perm)
        k_lo, k_hi = R.split_ranks(sneg_sorted, spos, xp)
        wneg = wpos = None
        if w is not None:
            wneg = w[:N] if identity else xp.take(w[:N], perm)
            wpos = w[N:]
        # the layout is not one sorted order: the general state sorts for itself
        general = _AUCKernel().prepare(y01, s, w, xp, False)
        # NumPy: buffers reused across replicates (no allocation and page faults
        # per replicate), one set per worker thread.
        scratch = {} if B.is_numpy(xp) else None
        return (perm, k_lo, k_hi, wneg, wpos, scratch, general)

    def evaluate(self, state, counts, xp):
        perm, k_lo, k_hi, wneg, wpos, scratch, _ = state
        N = self.N
        if scratch is not None and wneg is None and isinstance(counts, np.ndarray) \
                and counts.dtype == np.int64:
            return self._evaluate_numpy(perm, k_lo, k_hi, counts, scratch)
        cneg, cpos = counts[:N], counts[N:]
        if perm is not None:
            cneg = xp.take(cneg, perm)
        if wneg is not None:
            cneg, cpos = _f(cneg, xp) * _f(wneg, xp), _f(cpos, xp) * _f(wpos, xp)
        cdt = R.count_dtype(xp, cneg)
        cum0 = B.prefix_sum(cneg, xp, cdt)       # negative weight below each rank
        num2 = R.u2_split(cum0, k_lo, k_hi, cpos, xp, ties=self.ties)
        return R.auc_from_u2(num2, xp.sum(xp.astype(cpos, cdt)), cum0[N], xp)[0]

    def _evaluate_numpy(self, perm, k_lo, k_hi, counts, scratch):
        # NumPy integer counts: fewest passes over memory (buffers reused), exact integers.
        N = self.N
        bufs = scratch.get(threading.get_ident())
        if bufs is None:
            bufs = scratch[threading.get_ident()] = (
                np.empty(N + 1, dtype=np.int64), np.empty(N, dtype=np.int64),
                np.empty(self.P, dtype=np.int64), np.empty(self.P, dtype=np.int64))
        cum0, negbuf, g1, g2 = bufs
        cneg = counts[:N] if perm is None else np.take(counts[:N], perm, out=negbuf)
        cum0[0] = 0
        np.cumsum(cneg, out=cum0[1:])
        cpos = counts[N:]
        num2 = R.u2_split(cum0, k_lo, k_hi, cpos, np, ties=self.ties, scratch=(g1, g2))
        Pw, Nw = int(cpos.sum()), int(cum0[N])
        if Pw == 0 or Nw == 0:
            return np.float64(math.nan)
        return np.float64(num2 / (2 * Pw * Nw))   # exact integers, one rounding

    def loo(self, state, xp):
        return _AUCKernel().loo(state[-1], xp)


@dataclass(frozen=True)
class _APKernel:
    """Average precision (step sum, ties together) over one presorted order."""

    def prepare(self, y01, s, w, xp, identity):
        return _AUCKernel.prepare(self, y01, s, w, xp, identity)

    def evaluate(self, state, counts, xp):
        perm, y, lo, hi, w = state
        c = counts if perm is None else xp.take(counts, perm)
        tg = R.presorted_groups(y, lo, hi)
        return R.ap_steps(tg, R.class_weights(tg, _weights(c, w, xp), xp), xp)[0]

    def loo(self, state, xp):
        """Leave-one-out AP per row, unweighted only (else None: grouped jackknife)."""
        perm, y, lo, hi, w = state
        if w is not None:
            return None
        tg = R.presorted_groups(y, lo, hi)
        return _unpermute(R.loo_ap(tg, R.class_weights(tg, None, xp), xp), perm, xp)


@dataclass(frozen=True)
class _MeanKernel:
    """Log loss / Brier: per-row losses once, then a weighted mean per replicate."""

    name: str

    def prepare(self, y01, p, w, xp, identity):
        rows = _log_loss_rows(y01, p, xp) if self.name == "log_loss" else _brier_rows(y01, p, xp)
        return (rows, w)

    def evaluate(self, state, counts, xp):
        loss, w = state
        c = _f(_weights(counts, w, xp), xp)
        tot = xp.sum(c)
        return B.nan_if(tot == 0, xp.sum(loss * c) / xp.where(tot == 0, 1.0, tot), xp)

    def loo(self, state, xp):
        loss, w = state
        ww = xp.ones_like(loss) if w is None else _f(w, xp)
        S, W = xp.sum(ww * loss), xp.sum(ww)
        bad = (W - ww) <= 0
        return B.nan_if(bad, (S - ww * loss) / xp.where(bad, 1.0, W - ww), xp)


def _log_loss_rows(y01, p, xp):
    # clip at the epsilon of the probabilities' dtype (as log_loss does), then the widest float
    eps = float(xp.finfo(p.dtype).eps) if xp.isdtype(p.dtype, "real floating") else 2.0**-52
    return _prob.binary_log_loss_rows(y01, xp.clip(_f(p, xp), eps, 1 - eps), xp)


def _brier_rows(y01, p, xp):
    return _prob.binary_brier_rows(y01, _f(p, xp), xp)


@dataclass(frozen=True)
class _WeightKernel:
    """Any ``metric(y_true, y_score, *, sample_weight=...)``: one call per replicate.

    On JAX the call is traced once and ``vmap``-ped, so any JAX-traceable
    metric (calipers' weighted kernels among them) runs compiled.
    """

    metric: Callable

    def prepare(self, y, s, w, xp, identity):
        return (y, s, w)

    def evaluate(self, state, counts, xp):
        y, s, w = state
        return xp.asarray(self.metric(y, s, sample_weight=_weights(counts, w, xp)))

    def loo(self, state, xp):
        return None


@dataclass(frozen=True)
class _IndexKernel:
    """Any ``metric(y_true, y_score)``: the rows are resampled explicitly (eager only)."""

    metric: Callable

    def prepare(self, y, s, w, xp, identity):
        return (y, s)

    def evaluate(self, state, counts, xp):
        y, s = state
        c = B.to_numpy(counts).astype(np.int64)
        idx = np.repeat(np.arange(c.shape[0]), c)
        idx = idx if B.is_numpy(xp) else xp.asarray(idx)
        return xp.asarray(self.metric(xp.take(y, idx), xp.take(s, idx)))

    def loo(self, state, xp):
        return None


def _unpermute(val_sorted, perm, xp):
    """Values in a model's sorted order back to layout order."""
    if perm is None:
        return val_sorted
    inv = xp.argsort(perm)
    return xp.take(val_sorted, inv)


_FAST = {
    _rank.roc_auc_score: "roc_auc",
    _rank.average_precision_score: "average_precision",
    _prob.log_loss: "log_loss",
    _prob.brier_score_loss: "brier",
}

_NAMES = {
    "roc_auc": _rank.roc_auc_score,
    "average_precision": _rank.average_precision_score,
    "log_loss": _prob.log_loss,
    "brier": _prob.brier_score_loss,
}


def _resolve_metric(metric, resample_by):
    if isinstance(metric, str):
        if metric not in _NAMES:
            raise ValueError(f"metric must be a callable or one of {sorted(_NAMES)}, "
                             f"got {metric!r}")
        metric = _NAMES[metric]
    if not callable(metric):
        raise ValueError(f"metric must be callable or a metric name, got {metric!r}")
    if resample_by not in ("auto", "weights", "indices"):
        raise ValueError(f"resample_by must be 'auto', 'weights' or 'indices', got {resample_by!r}")
    name = _FAST.get(metric)
    if resample_by == "indices":
        return metric, "indices", None
    if name is not None:
        return metric, "fast", name
    if resample_by == "weights" or _accepts_sample_weight(metric):
        return metric, "weights", None
    return metric, "indices", None


def _accepts_sample_weight(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "sample_weight" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


# --------------------------------------------------------------------------
# resampling designs: draw counts per row, in layout order
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Design:
    """Static facts of the resampling design (hashable: part of the compile cache key).

    Arrays live in ``data`` (a tuple, passed to compiled code as an argument):
    ``stratified``: (slot_low, slot_high, slot_pos) - slot k draws a layout
    position uniformly among the rows of its class; ``cluster``: (unit,) the
    cluster code of each layout row; ``block``: (time,) the time index of each
    layout row, or () when the layout is the time order.
    """

    kind: str          # "plain" | "stratified" | "cluster" | "block"
    poisson: bool
    n: int
    n_units: int = 0   # clusters
    block_length: int = 0
    contiguous: bool = False   # stratified: classes are contiguous runs of the layout

    @property
    def label(self):
        return {"plain": "rows", "stratified": "stratified rows", "cluster": "clusters",
                "block": "moving blocks"}[self.kind]


def _poisson_cdf(dtype_eps: float):
    """CDF of Poisson(1) up to where the tail is below the uniform's resolution."""
    cdf, term, k = [], math.exp(-1.0), 0
    acc = 0.0
    while True:
        acc += term
        cdf.append(acc)
        k += 1
        term /= k
        if 1.0 - acc < dtype_eps / 4 or k > 40:
            break
    return cdf


def _draw_numpy(design: _Design, data, rng):
    n = design.n
    if design.kind == "plain":
        if design.poisson:
            return rng.poisson(1.0, n)
        return np.bincount(rng.integers(0, n, n), minlength=n)
    if design.kind == "stratified":
        pos_by_class = data
        if design.contiguous:   # class c occupies layout positions p[0] .. p[-1]
            t = np.concatenate([p[0] + rng.integers(0, p.shape[0], p.shape[0])
                                for p in pos_by_class])
        else:
            t = np.concatenate([p[rng.integers(0, p.shape[0], p.shape[0])]
                                for p in pos_by_class])
        return np.bincount(t, minlength=n)
    if design.kind == "cluster":
        (unit,) = data
        G = design.n_units
        if design.poisson:
            m = rng.poisson(1.0, G)
        else:
            m = np.bincount(rng.integers(0, G, G), minlength=G)
        return m[unit]
    # moving blocks over the time order, then into layout order
    L = design.block_length
    k = -(-n // L)
    starts = rng.integers(0, n - L + 1, k)
    lens = np.full(k, L)
    lens[-1] = n - (k - 1) * L
    d = np.bincount(starts, minlength=n + 1) - np.bincount(starts + lens, minlength=n + 1)
    counts = np.cumsum(d[:n])
    (time,) = data if data else (None,)
    return counts if time is None else counts[time]


def _draw_jax(design: _Design, data, key, idtype):
    import jax
    import jax.numpy as jnp

    n = design.n
    # int32 random indices and counts (exact below 2**31 rows): half the
    # random bits and memory traffic of int64.
    idtype = jnp.int32 if max(n, design.n_units) < 2**31 - 1 else idtype
    if design.kind == "plain":
        if design.poisson:
            return _poisson_jax(key, (n,), idtype)
        return _bincount(jax.random.randint(key, (n,), 0, n, dtype=idtype), n, idtype)
    if design.kind == "stratified":
        low, high, pos = data
        slot = jax.random.randint(key, (n,), low.astype(idtype), high.astype(idtype),
                                  dtype=idtype)
        return _bincount(slot if design.contiguous else jnp.take(pos, slot), n, idtype)
    if design.kind == "cluster":
        (unit,) = data
        G = design.n_units
        if design.poisson:
            m = _poisson_jax(key, (G,), idtype)
        else:
            m = _bincount(jax.random.randint(key, (G,), 0, G, dtype=idtype), G, idtype)
        return jnp.take(m, unit)
    L = design.block_length
    k = -(-n // L)
    starts = jax.random.randint(key, (k,), 0, n - L + 1, dtype=idtype)
    lens = jnp.full((k,), L, dtype=idtype).at[-1].set(n - (k - 1) * L)
    d = jnp.zeros(n + 1, dtype=idtype).at[starts].add(1).at[starts + lens].add(-1)
    counts = jnp.cumsum(d[:n])
    return jnp.take(counts, data[0]) if data else counts


def _bincount(idx, length, idtype):
    import jax.numpy as jnp

    return jnp.zeros(length, dtype=idtype).at[idx].add(1)


def _poisson_jax(key, shape, idtype):
    import jax
    import jax.numpy as jnp

    # float32 uniforms: the count probabilities are resolved to 2**-24
    f = jnp.float32
    cdf = _poisson_cdf(float(jnp.finfo(f).eps))
    u = jax.random.uniform(key, shape, dtype=f)
    # inverse CDF: count of CDF steps below u; a static, fused comparison chain
    out = jnp.zeros(shape, dtype=idtype)
    for c in cdf[:-1]:
        out = out + (u >= c).astype(idtype)
    return out


def _build_design(xp, n, layout, y_layout_codes, *, stratify, groups_codes, n_groups,
                  block_length, poisson, traced):
    """Design (static) and its data arrays, in layout order.

    ``layout`` maps layout position -> original row (None: identity).
    ``y_layout_codes`` are class codes in layout order (stratify only).
    """
    if stratify:
        contiguous = False
        if not traced:
            cn = np.asarray(B.to_numpy(y_layout_codes))
            contiguous = bool(np.all(cn[1:] >= cn[:-1]))   # sorted codes: runs
        d = _Design("stratified", False, n, contiguous=contiguous)
        if B.is_jax(xp):
            import jax.numpy as jnp

            codes = jnp.asarray(y_layout_codes)
            pos = jnp.argsort(codes, stable=True)           # layout positions by class
            cs = jnp.take(codes, pos)
            lo, hi = B.group_bounds(cs, xp)
            idt = B.acc_int(xp)
            return d, (lo.astype(idt), (hi + 1).astype(idt), pos.astype(idt))
        return d, tuple(np.flatnonzero(cn == c) for c in np.unique(cn))
    if groups_codes is not None:
        d = _Design("cluster", poisson, n, n_units=int(n_groups))
        return d, (groups_codes,)
    if block_length is not None:
        d = _Design("block", False, n, block_length=int(block_length))
        return d, (() if layout is None else (layout,))
    return _Design("plain", poisson, n), ()


# --------------------------------------------------------------------------
# engines
# --------------------------------------------------------------------------

def _default_batch(n):
    # About 2**20 elements per chunk: each intermediate array stays a few MB;
    # on CPU at n = 10^5, chunks of 8 replicates were fastest (2 and 32 were
    # about 1.4x slower), while small n still gets many replicates per call.
    return max(1, min(4096, (1 << 20) // max(n, 1)))


@functools.lru_cache(maxsize=64)
def _compiled_chunk(kernel_a, kernel_b, design, idtype_name):
    import jax
    import jax.numpy as jnp

    xp = _jax_xp()
    idtype = jnp.dtype(idtype_name)

    def one(i, key, sa, sb, dd):
        c = _draw_jax(design, dd, jax.random.fold_in(key, i), idtype)
        return kernel_a.evaluate(sa, c, xp), kernel_b.evaluate(sb, c, xp)

    return jax.jit(jax.vmap(one, in_axes=(0, None, None, None, None)))


@functools.lru_cache(maxsize=64)
def _compiled_masked(kernel_a, kernel_b, idtype_name):
    """Grouped jackknife on JAX: evaluate with group g deleted, vmapped over g."""
    import jax
    import jax.numpy as jnp

    xp = _jax_xp()
    idtype = jnp.dtype(idtype_name)

    def one(g, grp, sa, sb):
        c = (grp != g).astype(idtype)
        return kernel_a.evaluate(sa, c, xp), kernel_b.evaluate(sb, c, xp)

    return jax.jit(jax.vmap(one, in_axes=(0, None, None, None)))


@functools.lru_cache(maxsize=64)
def _compiled_draw(design, idtype_name):
    import jax
    import jax.numpy as jnp

    idtype = jnp.dtype(idtype_name)
    return jax.jit(lambda i, key, dd: _draw_jax(design, dd, jax.random.fold_in(key, i), idtype))


def _jax_xp():
    import array_api_compat
    import jax.numpy as jnp

    return array_api_compat.array_namespace(jnp.zeros(1))


def _mesh_sharding(devices):
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), ("replicates",))
    return (NamedSharding(mesh, PartitionSpec("replicates")),
            NamedSharding(mesh, PartitionSpec()))


def _run_jax_chunks(kernel_a, sa, kernel_b, sb, design, dd, key, n_resamples, batch,
                    devices, progress):
    import jax
    import jax.numpy as jnp

    idtype = B.acc_int(_jax_xp())
    fn = _compiled_chunk(kernel_a, kernel_b, design, jnp.dtype(idtype).name)
    shard = None
    if devices is not None and len(devices) > 1:
        batch = -(-batch // len(devices)) * len(devices)
        shard, repl = _mesh_sharding(devices)
        sa, sb, dd, key = jax.device_put((sa, sb, dd, key), repl)
    # Preallocated host results: chunk outputs are copied in and their device
    # buffers freed at once (keeping views of them made memory grow with B).
    out_a, out_b = np.empty(n_resamples), np.empty(n_resamples)
    for start in range(0, n_resamples, batch):
        m = min(batch, n_resamples - start)
        # A whole chunk of indices even for the last one: one compiled shape;
        # replicate i depends only on (key, i), so the extra ones are discarded.
        idx = jnp.arange(start, start + batch, dtype=idtype)
        if shard is not None:
            idx = jax.device_put(idx, shard)
        ra, rb = fn(idx, key, sa, sb, dd)
        out_a[start:start + m] = np.asarray(ra)[:m]
        out_b[start:start + m] = np.asarray(rb)[:m]
        del ra, rb
        if progress is not None:
            progress(m)
    return out_a, out_b


def _run_loop(kernel_a, sa, kernel_b, sb, draw, xp, n_resamples, progress, workers=1):
    """One replicate at a time per worker (NumPy, array-api-strict, Python metrics).

    Memory O(workers * n). Replicate ``r`` depends only on ``draw(r)``, so
    the number of worker threads does not change the result.
    """
    da = np.empty(n_resamples)
    db = np.empty(n_resamples)

    def run(lo, hi):
        for r in range(lo, hi):
            c = draw(r)
            da[r] = float(kernel_a.evaluate(sa, c, xp))
            db[r] = float(kernel_b.evaluate(sb, c, xp))
        return hi - lo

    step = 64
    spans = [(lo, min(lo + step, n_resamples)) for lo in range(0, n_resamples, step)]
    with warnings.catch_warnings():
        # Undefined replicates are counted and reported once, not warned per replicate.
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        if workers == 1:
            for lo, hi in spans:
                m = run(lo, hi)
                if progress is not None:
                    progress(m)
        else:
            # NumPy releases the GIL in the draws, gathers and prefix sums.
            from concurrent.futures import ThreadPoolExecutor, as_completed

            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(run, lo, hi) for lo, hi in spans]
                for f in as_completed(futures):
                    m = f.result()
                    if progress is not None:
                        progress(m)
    return da, db


# --------------------------------------------------------------------------
# problem set-up shared by paired_bootstrap and paired_bootstrap_replicates
# --------------------------------------------------------------------------

@dataclass
class _Setup:
    xp: Any
    n: int
    kernel_a: Any
    kernel_b: Any
    state_a: Any
    state_b: Any
    design: _Design
    design_data: Any
    layout: Any
    kind: str


def _check_workers(workers, xp):
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if workers > 1 and B.is_jax(xp):
        raise ValueError("workers applies to NumPy and array-api-strict; on JAX the replicates "
                         "run as compiled chunks (batch) sharded over devices (devices)")


def _check_counts_options(n_resamples, batch, resampling, stratify, groups, block_length):
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, (int, np.integer))
                              or batch < 1):
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    if resampling not in ("multinomial", "poisson"):
        raise ValueError(f"resampling must be 'multinomial' or 'poisson', got {resampling!r}")
    designs = [name for name, on in (("stratify=True", bool(stratify)),
                                     ("groups", groups is not None),
                                     ("block_length", block_length is not None)) if on]
    if len(designs) > 1:
        raise ValueError(f"choose one resampling design; got {' and '.join(designs)}")
    if block_length is not None and (isinstance(block_length, bool) or not isinstance(
            block_length, (int, np.integer)) or block_length < 1):
        raise ValueError(f"block_length must be a positive integer, got {block_length!r}")
    if resampling == "poisson" and (stratify or block_length is not None):
        raise ValueError("resampling='poisson' draws each row (or cluster) independently; it "
                         "cannot keep class sizes (stratify=True) or blocks (block_length)")


def _setup(metric, kind, name, xp, y_true, a, b, sw, *, stratify, groups, num_groups,
           block_length, poisson, traced):
    n = y_true.shape[0]
    if block_length is not None and block_length > n:
        raise ValueError(f"block_length={block_length} is larger than the number of samples n={n}")
    a_identity = True      # is the layout model A's sorted order (no gather for A)?
    if kind == "fast":
        y01, _ = B.binary_labels(y_true, xp)
        if name in ("roc_auc", "average_precision"):
            layout = xp.argsort(a, stable=False)
            if name == "average_precision":
                ka = kb = _APKernel()
            else:
                # layout [negatives | positives], each in A's score order (the
                # same under jit, so jit and eager draw the same replicates)
                y_sorted = xp.take(y01, layout)
                layout = xp.take(layout, xp.argsort(y_sorted, stable=True))
                if traced:   # class sizes are not static: the general kernel
                    ka = kb = _AUCKernel()
                    a_identity = False
                else:
                    N = int(xp.sum(1 - y01))
                    ka = _AUCSplitKernel(N, n - N, _has_ties(a, xp))
                    kb = _AUCSplitKernel(N, n - N, _has_ties(b, xp))
        else:
            layout = None
            ka = kb = _MeanKernel(name)
        y_sel = y01
    else:
        layout = None
        ka = kb = (_WeightKernel(metric) if kind == "weights" else _IndexKernel(metric))
        y_sel = y_true

    def lay(x):
        return x if (x is None or layout is None) else xp.take(x, layout)

    y_l, a_l, b_l, w_l = lay(y_sel), lay(a), lay(b), lay(sw)
    state_a = ka.prepare(y_l, a_l, w_l, xp, a_identity)
    state_b = kb.prepare(y_l, b_l, w_l, xp, False)

    codes = None
    if groups is not None:
        if traced or num_groups is not None:
            if num_groups is None:
                raise ValueError("under jit, groups must be integer codes 0..num_groups-1 with "
                                 "a static num_groups")
            codes = lay(xp.astype(groups, B.acc_int(xp)) if not B.is_numpy(xp) else
                        np.asarray(groups, dtype=np.int64))
            if not traced:
                cn = B.to_numpy(codes)
                if cn.min() < 0 or cn.max() >= num_groups:
                    raise ValueError(f"groups must be integer codes in "
                                     f"[0, num_groups={num_groups})")
        else:
            _, inv = np.unique(B.to_numpy(groups), return_inverse=True)
            num_groups = int(inv.max()) + 1
            codes = inv.reshape(-1).astype(np.int64)
            if layout is not None:
                codes = codes[B.to_numpy(layout)]
            if B.is_jax(xp):
                codes = xp.asarray(codes)
    y_codes = None
    if stratify:
        if traced:
            y_codes = B.binary_labels(y_true, xp)[0]
            y_codes = lay(y_codes)
        else:
            _, inv = np.unique(B.to_numpy(y_true), return_inverse=True)
            inv = inv.reshape(-1)
            if layout is not None:
                inv = inv[B.to_numpy(layout)]
            y_codes = inv
    lay_np = layout
    if block_length is not None and layout is not None and not B.is_jax(xp):
        lay_np = B.to_numpy(layout)
    design, dd = _build_design(xp, n, lay_np, y_codes, stratify=stratify, groups_codes=codes,
                               n_groups=num_groups, block_length=block_length,
                               poisson=poisson, traced=traced)
    return _Setup(xp, n, ka, kb, state_a, state_b, design, dd, layout, kind)


def _has_ties(s, xp):
    if s.shape[0] < 2:
        return False
    ss = xp.sort(s)
    return bool(xp.any(ss[1:] == ss[:-1]))


def _prepare_arrays(y_true, y_score_a, y_score_b, sample_weight, groups):
    xp, (y_true, a, b, sw) = B.as_arrays(y_true, y_score_a, y_score_b, sample_weight)
    B.check_1d("y_true", y_true)
    B.check_1d("y_score_a", a)
    B.check_1d("y_score_b", b)
    if sw is not None:
        B.check_1d("sample_weight", sw)
        B.check_weights("sample_weight", sw, xp)
    if groups is not None and not B.is_traced(groups):
        g = np.asarray(B.to_numpy(groups)) if not hasattr(groups, "shape") else groups
        if len(g.shape) != 1:
            raise ValueError(f"groups must be 1-D, got an array of shape {tuple(g.shape)}")
        if g.shape[0] != y_true.shape[0]:
            raise ValueError(f"groups has {g.shape[0]} elements but y_true has "
                             f"{y_true.shape[0]}; they must match")
        groups = g
    B.check_same_length(y_true=y_true, y_score_a=a, y_score_b=b, sample_weight=sw)
    B.check_nonempty("y_true", y_true)
    return xp, y_true, a, b, sw, groups


def _key_for(seed, xp):
    import jax

    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(seed, (int, np.integer)):
        return jax.random.key(int(seed))
    if isinstance(seed, np.random.Generator):
        return jax.random.key(int(seed.integers(0, 2**31 - 1)))
    if isinstance(seed, np.random.SeedSequence):
        return jax.random.key(int(seed.generate_state(1)[0]))
    return seed


def _resolve_devices(devices):
    if devices is None:
        return None
    import jax

    if devices == "all":
        return list(jax.devices())
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        avail = jax.devices()
        if not 1 <= devices <= len(avail):
            raise ValueError(f"devices={devices} but {len(avail)} JAX devices are available")
        return list(avail[:devices])
    return list(devices)


# --------------------------------------------------------------------------
# replicates only (jit-able on JAX)
# --------------------------------------------------------------------------

def paired_bootstrap_replicates(metric, y_true, y_score_a, y_score_b, *, sample_weight=None,
                                n_resamples: int = 1000, stratify: bool = False, groups=None,
                                num_groups: int | None = None, block_length: int | None = None,
                                resampling: str = "multinomial", resample_by: str = "auto",
                                batch: int | None = None, seed=None, workers: int = 1):
    """Replicated values of ``metric`` for models A and B on shared resamples.

    The engine of :func:`paired_bootstrap` without the intervals: returns
    ``(dist_a, dist_b)``, two arrays of shape ``(n_resamples,)`` of the input
    backend (float64 NumPy arrays on NumPy and array-api-strict), NaN where a
    replicate is undefined. Arguments as :func:`paired_bootstrap`.

    Under ``jax.jit`` (arrays traced) the whole bootstrap is one compiled
    program: ``lax.map`` over chunks of ``batch`` ``vmap``-ped replicates
    (memory O(batch * n)); ``seed`` must then be a JAX key or an int, the
    metric a calipers fast metric or a JAX-traceable
    ``metric(y_true, y_score, *, sample_weight)``, ``groups`` integer codes
    ``0 .. num_groups - 1`` with a static ``num_groups``, and ``stratify``
    needs binary ``y_true``. Invalid values cannot raise there: they give NaN.
    Replicate ``i`` uses ``jax.random.fold_in(key, i)``, so jit, eager and any
    ``batch`` give the same replicates for the same key.
    """
    metric, kind, name = _resolve_metric(metric, resample_by)
    _check_counts_options(n_resamples, batch, resampling, stratify, groups, block_length)
    xp, y_true, a, b, sw, groups = _prepare_arrays(y_true, y_score_a, y_score_b,
                                                   sample_weight, groups)
    _check_workers(workers, xp)
    traced = B.is_traced(y_true, a, b, sw, groups)
    if not traced:
        # validate through the metric's own messages (labels, scores, probabilities)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            _full_estimate(metric, kind, y_true, a, sw)
            _full_estimate(metric, kind, y_true, b, sw)
    if traced and kind == "indices":
        raise ValueError("under jit the metric must accept sample_weight (resample by weights); "
                         "index resampling of an arbitrary Python metric is eager only")
    s = _setup(metric, kind, name, xp, y_true, a, b, sw, stratify=stratify, groups=groups,
               num_groups=num_groups, block_length=block_length,
               poisson=resampling == "poisson", traced=traced)
    if traced:
        ra, rb = _traced_replicates(s, seed, n_resamples, batch)
        if kind == "fast":   # invalid input cannot raise under jit: NaN
            bad = _traced_invalid(name, xp, y_true, a, b, sw)
            ra, rb = B.nan_if(bad, ra, xp), B.nan_if(bad, rb, xp)
        return ra, rb
    da, db = _replicates(s, seed, n_resamples, batch, None, None, workers)
    if B.is_numpy(xp):
        return da, db
    return xp.asarray(da), xp.asarray(db)


def _traced_invalid(name, xp, y_true, a, b, sw):
    """Scalar flag: traced input that breaks a rule the eager path would raise on."""
    _, bad = B.binary_labels(y_true, xp)
    for s in (a, b):
        if xp.isdtype(s.dtype, "real floating"):
            bad = bad | ~xp.all(xp.isfinite(s))
        if name in ("log_loss", "brier"):
            bad = bad | ~xp.all((s >= 0) & (s <= 1))
    if sw is not None:
        bad = bad | ~xp.all(sw >= 0)
    return bad


def _traced_replicates(s: _Setup, seed, n_resamples, batch):
    import jax
    import jax.numpy as jnp

    xp = s.xp
    key = _key_for(seed, xp)
    batch = batch or min(n_resamples, _default_batch(s.n))
    n_chunks = -(-n_resamples // batch)
    idtype = B.acc_int(xp)

    def one(i):
        c = _draw_jax(s.design, s.design_data, jax.random.fold_in(key, i), idtype)
        return s.kernel_a.evaluate(s.state_a, c, xp), s.kernel_b.evaluate(s.state_b, c, xp)

    idx = jnp.arange(n_chunks * batch, dtype=idtype).reshape(n_chunks, batch)
    ra, rb = jax.lax.map(jax.vmap(one), idx)
    return ra.reshape(-1)[:n_resamples], rb.reshape(-1)[:n_resamples]


def _replicates(s: _Setup, seed, n_resamples, batch, devices, progress, workers=1):
    """Eager engine choice; returns float64 NumPy arrays."""
    xp = s.xp
    if B.is_jax(xp):
        import jax.numpy as jnp

        key = _key_for(seed, xp)
        if s.kind != "indices":
            try:
                return _run_jax_chunks(s.kernel_a, s.state_a, s.kernel_b, s.state_b, s.design,
                                       s.design_data, key, n_resamples,
                                       batch or _default_batch(s.n), devices, progress)
            except Exception as exc:  # metric not traceable: evaluate eagerly below
                if s.kind != "weights" or not _is_trace_error(exc):
                    raise
        idt = B.acc_int(xp)
        draw_c = _compiled_draw(s.design, jnp.dtype(idt).name)

        def draw(r):
            return draw_c(jnp.asarray(r, dtype=idt), key, s.design_data)

        return _run_loop(s.kernel_a, s.state_a, s.kernel_b, s.state_b, draw, xp,
                         n_resamples, progress)
    rng_for = _numpy_streams(seed)
    dd = tuple(B.to_numpy(x) for x in s.design_data) if s.design.kind != "stratified" \
        else s.design_data
    if B.is_numpy(xp):
        def draw(r):
            return _draw_numpy(s.design, dd, rng_for(r))
    else:
        def draw(r):
            return xp.asarray(_draw_numpy(s.design, dd, rng_for(r)))
    return _run_loop(s.kernel_a, s.state_a, s.kernel_b, s.state_b, draw, xp, n_resamples,
                     progress, workers)


def _numpy_streams(seed):
    """``r -> Generator`` of replicate r: an independent stream per replicate.

    ``SeedSequence(entropy, spawn_key=(r,))`` is NumPy's own way to make
    independent child streams; replicate r depends only on (seed, r), as on
    JAX, so chunking and worker threads do not change the answer.
    """
    if isinstance(seed, np.random.Generator):
        entropy = int(seed.integers(0, 2**63 - 1))
    elif isinstance(seed, np.random.SeedSequence):
        entropy = seed.entropy
    elif seed is None:
        entropy = np.random.SeedSequence().entropy
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        entropy = int(seed)
    else:
        raise ValueError(f"seed must be None, a non-negative int, a NumPy Generator or "
                         f"SeedSequence (or a JAX key for JAX arrays), got {seed!r}")

    def rng_for(r):
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy,
                                                                          spawn_key=(r,))))
    return rng_for


def _is_trace_error(exc) -> bool:
    import jax

    trace_errors = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                    jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError)
    return isinstance(exc, trace_errors + (TypeError,))


def _full_estimate(metric, kind, y_true, s, sw):
    if sw is not None:
        if kind == "indices":
            raise ValueError("sample_weight needs a metric that accepts sample_weight; "
                             "index resampling cannot apply weights")
        return metric(y_true, s, sample_weight=sw)
    if kind == "weights":
        # the metric may require sample_weight: unit weights are the full data
        xp, _ = B.as_arrays(s)
        return metric(y_true, s, sample_weight=xp.ones(s.shape[0], dtype=B.acc_int(xp),
                                                        device=B.device(s)))
    return metric(y_true, s)


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
    z0 = _NORMAL.inv_cdf(pct)
    u = (jack.size - 1) * (jack.mean() - jack)
    den = np.sum(u**2)
    a = 0.0 if den == 0 else float(np.sum(u**3) / (6.0 * den**1.5))
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
            B.warn_undefined("the BCa interval is undefined here (all replicates on one side "
                             "of the estimate, or no usable jackknife values); returning NaN", 4)
            return ConfidenceInterval(math.nan, math.nan)
    lo, hi = _quantiles(d, probs)
    if method == "basic":
        lo, hi = 2 * theta - hi, 2 * theta - lo
    if alternative == "less":
        lo = -math.inf
    elif alternative == "greater":
        hi = math.inf
    return ConfidenceInterval(lo, hi)


def _jackknife(s: _Setup, jackknife_groups):
    """Jackknife values of (metric A, metric B) for BCa's acceleration, no O(n^2) work.

    Plain or stratified rows with a kernel that has exact leave-one-out values
    (AUC, unweighted AP, log loss, Brier): those, from the sorted order, O(n).
    Otherwise a grouped jackknife: the resampling units (rows, clusters or
    blocks) in at most ``jackknife_groups`` groups (unit % G), each group
    deleted in turn: G evaluations of O(n).
    """
    xp = s.xp
    if s.design.kind in ("plain", "stratified"):
        la = s.kernel_a.loo(s.state_a, xp)
        lb = s.kernel_b.loo(s.state_b, xp)
        if la is not None and lb is not None:
            return (np.asarray(B.to_numpy(la), dtype=np.float64),
                    np.asarray(B.to_numpy(lb), dtype=np.float64))
    n = s.n
    if s.design.kind == "cluster":
        unit = np.asarray(B.to_numpy(s.design_data[0]))
        n_units = s.design.n_units
    elif s.design.kind == "block":
        time = np.arange(n) if not s.design_data else np.asarray(B.to_numpy(s.design_data[0]))
        unit = time // s.design.block_length
        n_units = int(unit.max()) + 1
    else:
        unit = np.arange(n)
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


# --------------------------------------------------------------------------
# the public function
# --------------------------------------------------------------------------

def paired_bootstrap(metric, y_true, y_score_a, y_score_b, *, sample_weight=None,
                     n_resamples: int = 1000, confidence_level: float = 0.95,
                     method: str = "percentile", alternative: str = "two-sided",
                     stratify: bool = False, groups=None, block_length: int | None = None,
                     resampling: str = "multinomial", resample_by: str = "auto",
                     batch: int | None = None, seed=None, devices=None, workers: int = 1,
                     jackknife_groups: int = 100,
                     progress: Callable[[int], None] | None = None) -> BootstrapResult:
    """Paired bootstrap interval for ``metric(A) - metric(B)`` on the same examples.

    Each replicate resamples the examples with replacement (the same resample
    for both models), evaluates the metric of A and of B on it and records the
    difference (Efron & Tibshirani 1993, ch. 13; Koehn 2004 for paired
    comparisons of systems). A replicate is a vector of counts per example
    used as integer weights: identical to evaluating on the resampled rows.

    Parameters
    ----------
    metric : callable or str
        Fast path, one sort per model and O(n) per replicate:
        ``calipers.roc_auc_score``, ``average_precision_score``, ``log_loss``,
        ``brier_score_loss`` (or ``"roc_auc"``, ``"average_precision"``,
        ``"log_loss"``, ``"brier"``). Any other callable accepting
        ``sample_weight`` is called as ``metric(y_true, y_score,
        sample_weight=counts)`` (traced once and ``vmap``-ped on JAX when it is
        JAX-traceable, for example one written with calipers' weighted
        kernels). A callable without ``sample_weight`` (or
        ``resample_by="indices"``) gets the resampled rows
        ``metric(y_true[idx], y_score[idx])``, one eager call per replicate.
        Replicates must return a scalar; NaN means undefined.
    y_true : array (n,)
        Labels: in {0, 1} (or bool) for the fast metrics; passed unchanged to
        other metrics.
    y_score_a, y_score_b : arrays (n,)
        Scores (or probabilities) of the two models for the same examples.
    sample_weight : array (n,), optional
        Non-negative row weights; a replicate's weights are counts * weights.
    n_resamples : int
        Number of replicates B (>= 1).
    confidence_level : float in (0, 1)
    method : {"percentile", "basic", "bca"}
        Percentile interval, the basic (reverse percentile) interval
        ``2 * d - q``, or BCa (bias-corrected and accelerated; Efron 1987).
        BCa's acceleration comes from jackknife values computed without
        O(n^2) work: exact leave-one-out values from the sorted order for
        AUC, unweighted AP, log loss and Brier under row resampling, else a
        grouped jackknife over at most ``jackknife_groups`` groups of
        resampling units. Formulas as ``scipy.stats.bootstrap``; "BCa" is
        accepted too.
    alternative : {"two-sided", "less", "greater"}
        One-sided intervals put all of ``1 - confidence_level`` on one side,
        with ``-inf`` / ``+inf`` as the other end (scipy's convention).
    stratify : bool
        Resampling unit: rows within each class of ``y_true`` (class sizes
        fixed), so no replicate lacks a class.
    groups : array (n,), optional
        Cluster bootstrap: resample whole groups (users, patients, queries)
        with replacement, keeping all their rows.
    block_length : int, optional
        Moving-block bootstrap for series (Kunsch 1989): ceil(n / L) blocks of
        L consecutive rows (in input order) with uniformly drawn starts,
        concatenated and cut to n rows.
    resampling : {"multinomial", "poisson"}
        ``"multinomial"``: the exact bootstrap (n draws with replacement).
        ``"poisson"``: independent Poisson(1) counts per row (or per cluster),
        the streaming/distributed approximation (Hanley & MacGibbon 2006;
        Chamandy et al. 2012): the resample size varies around n. Not with
        ``stratify`` or ``block_length``. On JAX drawn by inverse CDF from
        float32 uniforms (count probabilities resolved to 2**-24); on NumPy
        by ``Generator.poisson`` (exact, but slower than the multinomial draw).
    resample_by : {"auto", "weights", "indices"}
        Force weight or index resampling for a user metric.
    batch : int, optional
        Replicates per compiled chunk on JAX (default: about 2**20 / n); peak
        memory O(batch * n) whatever ``n_resamples`` is. The replicates do not
        depend on it. NumPy and array-api-strict run one replicate at a time
        per worker (memory O(workers * n)); ``batch`` is not used there.
    seed : None, int, NumPy Generator or SeedSequence, or JAX key
        Replicate ``i`` depends only on the seed and ``i``: on NumPy it draws
        from ``SeedSequence(seed, spawn_key=(i,))`` (a Generator seed gives
        the entropy), on JAX from ``fold_in(key, i)``. The same seed gives the
        same replicates on the same backend whatever ``batch``, ``workers``
        or ``devices``; NumPy and JAX draw different streams.
    devices : None, int, "all" or a list of JAX devices
        Shard each chunk's replicates over these devices
        (``jax.sharding.NamedSharding`` over a one-axis mesh). The replicates
        are identical to the single-device ones for the same key.
    workers : int
        NumPy / array-api-strict: threads evaluating replicates (NumPy releases
        the GIL in the draws, gathers and prefix sums); memory O(workers * n).
        Default 1. Not for JAX (use ``batch`` and ``devices``).
    jackknife_groups : int
        Most groups of the grouped jackknife (BCa only).
    progress : callable, optional
        Called with the number of replicates just finished; calls sum to B.

    Returns
    -------
    BootstrapResult
        Estimates, difference, intervals, the replicated distributions, the
        standard error, ``n_undefined``, ``prob_a_greater`` and ``pvalue``.

    Undefined replicates
        A replicate in which the metric of A or of B is undefined (NaN, for
        example AUC of a resample with one class) is counted in
        ``n_undefined``, kept as NaN in the distributions and left out of the
        intervals, share and p-value; an :class:`UndefinedMetricWarning` says
        how many. Stratified resampling avoids it for AUC/AP.

    Raises
    ------
    ValueError
        Bad options (each message names the option), more than one design,
        Poisson with stratify or blocks, ``block_length > n``, groups of the
        wrong length, and every input error of the metric itself (shapes,
        labels, scores). Traced (jit) input: use
        :func:`paired_bootstrap_replicates`, which compiles the whole
        bootstrap.

    Notes
    -----
    Differences from ``scipy.stats.bootstrap(paired=True)``: designs beyond
    row resampling, O(n) replicates by counts, undefined replicates counted
    and left out (scipy propagates NaN), intervals for each model too.
    """
    metric, kind, name = _resolve_metric(metric, resample_by)
    _check_counts_options(n_resamples, batch, resampling, stratify, groups, block_length)
    if not isinstance(confidence_level, (int, float, np.floating)) or isinstance(
            confidence_level, bool) or not (0 < confidence_level < 1):
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    method_l = method.lower() if isinstance(method, str) else method
    if method_l not in ("percentile", "basic", "bca"):
        raise ValueError(f"method must be 'percentile', 'basic' or 'bca', got {method!r}")
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"alternative must be 'two-sided', 'less' or 'greater', "
                         f"got {alternative!r}")
    if isinstance(jackknife_groups, bool) or not isinstance(jackknife_groups, (int, np.integer)) \
            or jackknife_groups < 2:
        raise ValueError(f"jackknife_groups must be an integer >= 2, got {jackknife_groups!r}")
    xp, y_true, a, b, sw, groups = _prepare_arrays(y_true, y_score_a, y_score_b,
                                                   sample_weight, groups)
    if B.is_traced(y_true, a, b, sw, groups):
        raise ValueError("paired_bootstrap returns Python floats and cannot run on traced "
                         "arrays; under jax.jit use paired_bootstrap_replicates")
    if devices is not None and not B.is_jax(xp):
        raise ValueError("devices applies to JAX arrays only")
    _check_workers(workers, xp)
    devs = _resolve_devices(devices)

    # Full-data estimates, which also validate every input with the metric's own messages.
    est_a = float(_full_estimate(metric, kind, y_true, a, sw))
    est_b = float(_full_estimate(metric, kind, y_true, b, sw))

    s = _setup(metric, kind, name, xp, y_true, a, b, sw, stratify=stratify, groups=groups,
               num_groups=None, block_length=block_length,
               poisson=resampling == "poisson", traced=False)
    da, db = _replicates(s, seed, n_resamples, batch, devs, progress, workers)

    diff = da - db
    ok = np.isfinite(diff)
    n_undefined = int(n_resamples - ok.sum())
    if n_undefined:
        B.warn_undefined(f"{n_undefined} of {n_resamples} bootstrap replicates are undefined "
                         f"(metric NaN for model A or B); they are left out", 2)
    d_ok = diff[ok]
    difference = est_a - est_b
    ja = jb = jd = None
    if method_l == "bca":
        ja, jb = _jackknife(s, jackknife_groups)
        jd = ja - jb
    ci = _interval(d_ok, difference, method_l, confidence_level, alternative, jd)
    ia = _interval(da[np.isfinite(da)], est_a, method_l, confidence_level, alternative, ja)
    ib = _interval(db[np.isfinite(db)], est_b, method_l, confidence_level, alternative, jb)
    if d_ok.size == 0:
        se = share = pvalue = math.nan
    else:
        se = float(np.std(d_ok, ddof=1)) if d_ok.size > 1 else math.nan
        share = float(np.mean(da[ok] > db[ok]))
        p_le = float(np.mean(d_ok <= 0))
        p_ge = float(np.mean(d_ok >= 0))
        pvalue = {"greater": p_le, "less": p_ge,
                  "two-sided": min(1.0, 2 * min(p_le, p_ge))}[alternative]
    return BootstrapResult(
        estimate_a=est_a, estimate_b=est_b, difference=difference,
        confidence_interval=ci, interval_a=ia, interval_b=ib,
        bootstrap_distribution=diff, distribution_a=da, distribution_b=db,
        standard_error=se, n_undefined=n_undefined, n_resamples=int(n_resamples),
        prob_a_greater=share, confidence_level=float(confidence_level), method=method_l,
        alternative=alternative, pvalue=pvalue, design=s.design.label, resampling=resampling)
