"""Bootstrap metric kernels: prepare once per model (layout order), evaluate per replicate.

The ROC AUC and AP kernels evaluate the one rank-statistics core
(:mod:`calipers._rankstats`) with the replicate's integer counts as weights;
log loss and Brier are weighted means of per-row losses computed once; any
other metric is called with weights (or on resampled rows). Each kernel also
gives exact leave-one-out values where it can (BCa's jackknife).
"""

from __future__ import annotations

import inspect
import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from . import _backend as B
from . import _probability as _prob
from . import _ranking as _rank
from . import _rankstats as R


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


def _replicate_groups(state, counts, xp):
    """A presorted state's tie groups and one replicate's class weights in them."""
    perm, y, lo, hi, w = state
    c = counts if perm is None else xp.take(counts, perm)
    tg = R.presorted_groups(y, lo, hi)
    return tg, R.class_weights(tg, _weights(c, w, xp), xp)


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
        return R.binary_auc(*_replicate_groups(state, counts, xp), xp)[0]

    def loo(self, state, xp):
        """Leave-one-out AUC per row (layout order), from the same prefix sums: O(n).

        Counts stay integers without weights (:func:`calipers._rankstats.loo_auc`).
        """
        perm, y, lo, hi, w = state
        tg = R.presorted_groups(y, lo, hi)
        return _unpermute(R.loo_auc(tg, R.class_weights(tg, w, xp), xp), perm, xp)


class SplitState(NamedTuple):
    """One model's state of :class:`_AUCSplitKernel` (a pytree: compiled code takes it)."""

    perm: Any       # this model's order of the negatives (None: the layout's own)
    k_lo: Any       # each positive's tie-group bounds among the sorted negatives
    k_hi: Any
    wneg: Any       # sample weights of the negatives (this order) and positives, or None
    wpos: Any
    scratch: Any    # NumPy: buffers reused per worker thread (None on other backends)
    general: Any    # (y01, scores, weights) in layout order, for leave-one-out values
    # indices of the integer-count path (None: the general one): NumPy (rows, k_lo,
    # k_hi) with rows the layout position of each negative in this model's order
    # (None: the layout's own, model A); JAX the blocked prefix sums' (_blocked_state)
    integer: Any


@dataclass(frozen=True)
class _AUCSplitKernel:
    """ROC AUC when the layout is [negatives | positives], each in model A's order.

    Eager only (the class sizes ``N``, ``P`` are static). Per replicate:
    prefix sums of the negatives' weights (in this model's order), then for
    each positive the negative weight below it read at a precomputed rank
    (``searchsorted`` once, at set-up), and one dot product. Integer counts
    stay integers (exact) on 64-bit backends (:meth:`_parts_numpy`); on JAX
    the prefix sums run in blocks of ranks (:meth:`_parts_jax`).
    """

    N: int
    P: int
    ties: bool = True
    total_bound: int = 0   # a bound on the sum of a replicate's counts (0: unknown)

    def prepare(self, y01, s, w, xp, identity):
        N = self.N
        # JAX arrays on the CPU without weights: the sort and the searches run in
        # NumPy (XLA's CPU argsort of 10^5 doubles takes about 45 ms, NumPy's 5).
        # Tied negatives may then come in another order; the prefix sums are read
        # only at tie-group bounds, so no value moves.
        host = w is None and N > 0 and host_cpu(s, xp)
        sx = np if host else xp
        ss = np.asarray(s) if host else s
        sneg, spos = ss[:N], ss[N:]
        if identity:    # the layout's own order: A's ranks
            perm = None
        else:
            perm = np.argsort(sneg) if host else xp.argsort(sneg, stable=False)
        sneg_sorted = sneg if perm is None else sx.take(sneg, perm)
        k_lo, k_hi = R.split_ranks(sneg_sorted, spos, sx)
        wneg = wpos = None
        if w is not None:
            wneg = w[:N] if perm is None else xp.take(w[:N], perm)
            wpos = w[N:]
        # leave-one-out values (BCa only) sort for themselves, on demand: the layout
        # is not one sorted order
        general = (y01, s, w)
        # NumPy: buffers reused across replicates (no allocation and page faults
        # per replicate), one set per worker thread.
        scratch = {} if B.is_numpy(xp) else None
        # (no negatives: nothing to sum, and no row to gather from; the plain path)
        integer = None
        if w is None and N > 0 and B.is_numpy(xp):
            integer = (None if perm is None else np.asarray(perm, dtype=np.intp),
                       np.asarray(k_lo, dtype=np.intp), np.asarray(k_hi, dtype=np.intp))
        elif w is None and N > 0 and B.is_jax(xp):
            integer = _blocked_state(N, perm, k_lo, k_hi, sx)
        if host:
            idt = B.acc_int(xp)
            perm = None if perm is None else xp.asarray(perm.astype(_jax_int(xp)))
            k_lo, k_hi = xp.asarray(k_lo, dtype=idt), xp.asarray(k_hi, dtype=idt)
            integer = tuple(None if x is None else xp.asarray(x) for x in integer)
        return SplitState(perm, k_lo, k_hi, wneg, wpos, scratch, general, integer)

    def evaluate(self, state, counts, xp):
        num2, P, N = self.parts(state, counts, xp)
        if isinstance(num2, int):      # NumPy: Python ints, one correctly rounded division
            return np.float64(math.nan) if P == 0 or N == 0 else np.float64(num2 / (2 * P * N))
        return R.auc_from_u2(num2, P, N, xp)[0]

    def parts(self, state, counts, xp, positives=None):
        """``(U2, P, N)`` of a replicate: AUC = U2 / (2 P N).

        Python ints on NumPy with integer counts and no weights (exact);
        else backend scalars (integers when the counts are, floats with weights).
        ``positives``: :meth:`positives_numpy` of these counts, when a caller
        evaluates two models on them (NumPy).
        """
        perm, k_lo, k_hi, wneg, wpos, scratch, _, integer = state
        N = self.N
        if _numpy_integer(state, counts):
            if positives is None:
                positives = self.positives_numpy(state, counts)
            return self._parts_numpy(state, counts, positives)
        if integer is not None and xp.isdtype(counts.dtype, "integral"):
            return self._parts_jax(integer, counts, xp)
        cneg, cpos = counts[:N], counts[N:]
        if perm is not None:
            cneg = xp.take(cneg, perm)
        if wneg is not None:
            cneg, cpos = _f(cneg, xp) * _f(wneg, xp), _f(cpos, xp) * _f(wpos, xp)
        cdt = R.count_dtype(xp, cneg)
        cum0 = B.prefix_sum(cneg, xp, cdt)       # negative weight below each rank
        num2 = R.u2_split(cum0, k_lo, k_hi, cpos, xp, ties=self.ties)
        return num2, xp.sum(xp.astype(cpos, cdt)), cum0[N]

    def _parts_jax(self, blocked, counts, xp):
        """JAX integer counts: the negatives' prefix sums in blocks of ``_IBLOCK`` ranks.

        XLA on CPU takes a cumulative sum several times longer than a pass
        over the data, and it was most of a compiled replicate (as was a
        blocked product with a triangular matrix). Here rank ``q`` sits at
        ``(q % b, q // b)`` of a ``(b, m)`` array (``b = _IBLOCK``): the sums
        inside each block of ``b`` consecutive ranks are ``b`` additions of
        contiguous rows, and only the ``m`` block totals take a cumulative sum
        (:func:`_exclusive_prefix_jax`), which starts the rows. The prefix sum at rank ``k`` is then
        read at ``(k % b, k // b)`` (indices precomputed). Integer arithmetic
        throughout: exact.
        """
        import jax
        import jax.numpy as jnp

        perm_b, at_lo, at_hi = blocked
        N, b = self.N, _IBLOCK
        m = N // b + 1
        cdt = R.count_dtype(xp, None)
        # int32 inside when no prefix sum can reach 2**31 (half the memory traffic)
        wdt = jnp.int32 if 0 < self.total_bound < 2**31 else cdt
        cneg, cpos = counts[:N], counts[N:]
        if perm_b is None:      # model A: ranks in layout order; (m, b) -> (b, m),
            # moved in the counts' own (small) dtype and widened after
            x = jnp.pad(cneg, (0, b * m - N)).reshape(m, b).T.astype(wdt)
        else:                   # gather straight into the blocked order
            x = cneg.at[perm_b].get(mode="promise_in_bounds").astype(wdt).reshape(b, m)
        # row 0: the count before each block (the block totals' exclusive prefix
        # sums); row t: plus the block's first t ranks, all as one windowed sum
        # down the columns (b terms each). Rows past rank N - 1 hold padding that
        # no index below reads (nor the last block's total). XLA materialises a
        # windowed sum, so the gathers below read it as it is: when the rows
        # were a chain of additions (and the block offsets added after), XLA
        # fused them, through the reshapes' index arithmetic, into every read.
        before = _exclusive_prefix_jax(jnp.sum(x, axis=0, dtype=wdt))
        y = jnp.concatenate([before[None, :], x[:b - 1]])
        cum = jax.lax.reduce_window(y, 0, jax.lax.add, (b, 1), (1, 1),
                                    ((b - 1, 0), (0, 0))).reshape(-1)
        sdt = R._sum_dtype(xp, cdt)
        lo = cum.at[at_lo].get(mode="promise_in_bounds")
        if self.ties:
            twice = lo.astype(sdt) + cum.at[at_hi].get(mode="promise_in_bounds").astype(sdt)
        else:
            twice = 2 * lo.astype(sdt)
        num2 = jnp.sum(cpos.astype(sdt) * twice)
        return num2, jnp.sum(cpos.astype(cdt)), cum[(N % b) * m + N // b].astype(cdt)

    def _dtypes(self, counts_dtype):
        """NumPy: (prefix sums' dtype, the dot product's dtype) for counts of this dtype.

        With ``T`` the bound on a replicate's total count, every prefix sum is
        at most ``T`` and a tie group's doubled count at most ``2 T``: int32
        below 2**30. A product of that with one positive's count (at most 255
        for uint8 counts, else ``T``) fits int32 below 2**31; the dot product
        sums the products in int64 (``U2 <= T**2 / 2``). Else int64 (0: no
        bound known).
        """
        T = self.total_bound
        cmax = 255 if counts_dtype == np.uint8 else T
        return (np.dtype(np.int32 if 0 < T < 2**30 else np.int64),
                np.dtype(np.int32 if 0 < T and 2 * T * cmax < 2**31 else np.int64))

    def positives_numpy(self, state, counts):
        """The positives' counts in the dot product's dtype, and their total ``P*`` (NumPy).

        Both models read the same positives (layout order): converted once.
        """
        buf = state.scratch.get((threading.get_ident(), "positives", counts.dtype.char))
        if buf is None:
            buf = state.scratch[(threading.get_ident(), "positives", counts.dtype.char)] = \
                np.empty(self.P, dtype=self._dtypes(counts.dtype)[1])
        np.copyto(buf, counts[self.N:], casting="unsafe")   # exact: counts below the bound
        return buf, int(np.add.reduce(buf, dtype=np.int64))

    def _parts_numpy(self, state, counts, positives):
        """NumPy integer counts (int64, or uint8): exact sums (:meth:`_dtypes`).

        The negatives' prefix sums are one ``cumsum`` in this model's rank
        order (model A's is the layout's own; B gathers its counts into it),
        read at each positive's ranks, multiplied by its count and summed in
        int64. Buffers are reused per thread.
        """
        scratch, (rows, k_lo, k_hi) = state.scratch, state.integer
        N = self.N
        key = (threading.get_ident(), counts.dtype.char)
        bufs = scratch.get(key)
        if bufs is None:
            acc, prod = self._dtypes(counts.dtype)
            bufs = scratch[key] = (np.empty(N, dtype=counts.dtype), np.zeros(N + 1, dtype=acc),
                                   np.empty(self.P, dtype=acc), np.empty(self.P, dtype=acc),
                                   np.empty(self.P, dtype=prod))
        xg, cum, g1, g2, t = bufs
        # ("clip": the indices are valid; with ``out``, "raise" gathers through a temporary)
        x = counts[:N] if rows is None else np.take(counts, rows, out=xg, mode="clip")
        np.cumsum(x, dtype=cum.dtype, out=cum[1:])       # cum[0] stays 0
        cpos, P = positives
        num2 = R.u2_split(cum, k_lo, k_hi, cpos, np, ties=self.ties, scratch=(g1, g2, t))
        return num2, P, int(cum[N])

    def loo(self, state, xp):
        y01, s, w = state.general
        return _AUCKernel().loo(_AUCKernel().prepare(y01, s, w, xp, False), xp)


_IBLOCK = 8    # ranks per block of the JAX prefix sums


def _exclusive_prefix_jax(t, c=16):
    """Exclusive prefix sums of a short 1-D integer array ``t`` under JAX.

    ``jnp.cumsum`` of the 1,564 block totals took about 140 us per replicate
    on CPU (XLA splits it into a tree of windowed reductions whose levels are
    then recomputed inside each consumer). Here: windows of ``c`` along the
    last axis of a ``(L / c, c)`` reshape (one windowed sum of ``c`` terms per
    element), the window totals done the same way, recursively; exact.
    """
    from jax import lax
    import jax.numpy as jnp

    L = t.shape[0]
    if L <= c:
        return lax.reduce_window(t, 0, lax.add, (L,), (1,), ((L, -1),))
    m = -(-L // c)
    tp = jnp.pad(t, (0, m * c - L)).reshape(m, c)
    inc = lax.reduce_window(tp, 0, lax.add, (1, c), (1, 1), ((0, 0), (c - 1, 0)))
    before = _exclusive_prefix_jax(inc[:, c - 1], c)
    return (inc - tp + before[:, None]).reshape(-1)[:L]


def _blocked_state(N, perm, k_lo, k_hi, xp):
    """Indices for :meth:`_AUCSplitKernel._parts_jax`: rank ``q`` at ``(q % b) * m + q // b``.

    ``perm_b``: for each blocked position, the layout row of the negative of
    that rank in this model's order (None: the layout order itself, model A);
    padding positions read row 0 (their sums are never read). ``at_lo``,
    ``at_hi``: where the prefix sums at ``k_lo``, ``k_hi`` sit. Built with
    ``xp`` (NumPy when the set-up ran on the host), all int32.
    """
    b = _IBLOCK
    m = N // b + 1
    idt = xp.int32

    def at(k):
        k = xp.asarray(k, dtype=idt)
        return (k % b) * m + k // b

    perm_b = None
    if perm is not None:
        # the inverse of ``at`` as a gather: blocked position j holds rank (j % m) * b + j // m
        j = xp.arange(b * m, dtype=idt)
        rank = (j % m) * b + j // m
        rows = xp.take(xp.asarray(perm, dtype=idt), xp.clip(rank, 0, N - 1))
        perm_b = xp.where(rank < N, rows, xp.zeros_like(rows))
    return (perm_b, at(k_lo), at(k_hi))


def _numpy_integer(state, counts) -> bool:
    """Does :meth:`_AUCSplitKernel._parts_numpy` take these counts (NumPy, no weights)?"""
    return state.scratch is not None and state.integer is not None \
        and isinstance(counts, np.ndarray) \
        and counts.dtype in (np.int64, np.uint8)


def _jax_int(xp):
    """The default integer of JAX now (int64 with x64, else int32), as NumPy's dtype."""
    return np.dtype(xp.int64) if B.acc_int(xp) == xp.int64 else np.dtype(np.int32)


def host_cpu(x, xp) -> bool:
    """Is ``x`` a concrete JAX array on the CPU (its set-up sorts then run in NumPy)?"""
    if not B.is_jax(xp) or B.is_traced(x):
        return False
    try:
        return all(d.platform == "cpu" for d in x.devices())
    except AttributeError:
        return False


@dataclass(frozen=True)
class _APKernel:
    """Average precision (step sum, ties together) over one presorted order."""

    def prepare(self, y01, s, w, xp, identity):
        # a stable sort of the caller's rows: ties keep the caller's order, so the
        # float sum of the precision terms never depends on the other model
        perm = xp.argsort(s, stable=True)
        ss = xp.take(s, perm)
        lo, hi = B.group_bounds(ss, xp)
        return (perm, xp.take(y01, perm), lo, hi, None if w is None else xp.take(w, perm))

    def evaluate(self, state, counts, xp):
        return R.ap_steps(*_replicate_groups(state, counts, xp), xp)[0]

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


def evaluate_pair(kernel_a, sa, kernel_b, sb, counts, xp):
    """``(metric A, metric B, A - B)`` of one replicate.

    AUC without weights: both models share the replicate's class totals P*
    and N*, so the difference is ``(U2_A - U2_B) / (2 P* N*)`` from the
    integer Mann-Whitney numerators with one correctly rounded division. A
    replicate whose difference equals the estimate in exact arithmetic then
    equals it as a double (BCa's bias correction counts ties at the estimate
    right). Other metrics: the two values, subtracted.
    """
    if isinstance(kernel_a, _AUCSplitKernel) and isinstance(kernel_b, _AUCSplitKernel) \
            and sa.wneg is None and sb.wneg is None:
        # NumPy: the positives' counts are converted once for both models
        pos = kernel_a.positives_numpy(sa, counts) if _numpy_integer(sa, counts) \
            and _numpy_integer(sb, counts) else None
        na, P, N = kernel_a.parts(sa, counts, xp, pos)
        nb, _, _ = kernel_b.parts(sb, counts, xp, pos)
        if isinstance(na, int):       # NumPy: Python ints, division correctly rounded
            if P == 0 or N == 0:
                nan = np.float64(math.nan)
                return nan, nan, nan
            den = 2 * P * N
            return np.float64(na / den), np.float64(nb / den), np.float64((na - nb) / den)
        if xp.isdtype(na.dtype, "integral") and na.dtype == xp.int64:
            # exact integers below 2**53 convert exactly; the division rounds once
            va = R.auc_from_u2(na, P, N, xp)[0]
            vb = R.auc_from_u2(nb, P, N, xp)[0]
            return va, vb, R.auc_from_u2(na - nb, P, N, xp)[0]
    va = kernel_a.evaluate(sa, counts, xp)
    vb = kernel_b.evaluate(sb, counts, xp)
    return va, vb, va - vb


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
        return xp.asarray(self.metric(xp.take(y, idx, axis=0), xp.take(s, idx, axis=0)))

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
