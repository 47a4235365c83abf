"""Bootstrap metric kernels: prepare once per model (layout order), evaluate per replicate.

The ROC AUC and AP kernels evaluate the one rank-statistics core
(:mod:`calipers._kernels.rankstats`) with the replicate's integer counts as weights;
log loss and Brier are weighted means of per-row losses computed once; any
other metric is called with weights (or on resampled rows). Each kernel also
gives exact leave-one-out values where it can (BCa's jackknife).
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .. import _probability as _prob
from .._ranking import binary as _rank
from .._kernels import native
from .._kernels import rankstats as R


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

        Counts stay integers without weights (:func:`calipers._kernels.rankstats.loo_auc`).
        """
        perm, y, lo, hi, w = state
        tg = R.presorted_groups(y, lo, hi)
        return _unpermute(R.loo_auc(tg, R.class_weights(tg, w, xp), xp), perm, xp)


class SplitState(NamedTuple):
    """One model's state of :class:`_AUCSplitKernel` (a pytree: compiled code takes it)."""

    perm: Any       # this model's order of its summed class (None: the layout's own)
    k_lo: Any       # each read row's tie-group bounds among the sorted summed class
    k_hi: Any
    scratch: Any    # NumPy: buffers reused per worker thread (None on other backends)
    general: Any    # (y01, scores, None) in layout order, for leave-one-out values
    # the integer-count path's (at_lo, at_hi), or None (the general path): where the
    # read rows' prefix sums sit among the prefix sums of the whole layout's counts
    # (NumPy), or of their blocked arrangement (JAX, :func:`_layout_prefix_jax`)
    integer: Any


@dataclass(frozen=True)
class _AUCSplitKernel:
    """ROC AUC when the layout is [negatives | positives], the classes sorted apart.

    Eager only (the class sizes ``N``, ``P`` are static). ``side`` 0 sums the
    negatives' counts in this model's order and reads the sums at each
    positive's tie-group bounds among them (``searchsorted`` once, at
    set-up): ``U2 = sum_pos c (C[lo] + C[hi])``. ``side`` 1 sums the
    positives and reads at each negative's bounds among them, the positives
    above a negative being the rest: ``U2 = 2 P* N* - sum_neg c (C[lo] +
    C[hi])``. With the layout [negatives in A's order | positives in B's
    order], A on side 0 and B on side 1 both read the layout in their own
    order: a replicate is one prefix sum of the layout's counts for both
    models (:func:`_split_parts`), then one gather and one dot product per
    model. Integer counts stay integers (exact). No sample weights: float
    weights take :class:`_AUCKernel`, whose sums run in each model's own
    order; integer weights are repetitions (drawn as units).
    """

    N: int
    P: int
    ties: bool = True
    total_bound: int = 0   # a bound on the sum of a replicate's counts (0: unknown)
    side: int = 0          # 0: sum the negatives; 1: sum the positives

    def _classes(self, x):
        """(summed, read) classes of a layout-ordered array."""
        return (x[:self.N], x[self.N:]) if self.side == 0 else (x[self.N:], x[:self.N])

    def prepare(self, y01, s, w, xp, identity):
        """``identity``: the layout holds the summed class in this model's order."""
        if w is not None:
            raise ValueError("the split AUC kernel takes no sample weights")
        n = self.N + self.P
        # JAX arrays on the CPU without weights: the sort and the searches run in
        # NumPy (XLA's CPU argsort of 10^5 doubles takes about 45 ms, NumPy's 5).
        # Tied rows may then come in another order; the prefix sums are read
        # only at tie-group bounds, so no value moves.
        host = n > 0 and host_cpu(s, xp)
        sx = np if host else xp
        s_sum, s_read = self._classes(np.asarray(s) if host else s)
        if identity:
            perm = None
        else:
            perm = np.argsort(s_sum) if host else xp.argsort(s_sum, stable=False)
        k_lo, k_hi = R.split_ranks(s_sum if perm is None else sx.take(s_sum, perm), s_read, sx)
        # leave-one-out values (BCa only) sort for themselves, on demand: the layout
        # is not one sorted order
        general = (y01, s, w)
        # NumPy: buffers reused across replicates (no allocation and page faults
        # per replicate), one set per worker thread.
        scratch = {} if B.is_numpy(xp) else None
        integer = None
        if perm is None and n > 0 and (B.is_numpy(xp) or B.is_jax(xp)):
            start = 0 if self.side == 0 else self.N      # the summed class in the layout
            integer = _layout_positions(start + k_lo, start + k_hi, n, B.is_jax(xp), sx)
        if host:
            idt = B.acc_int(xp)
            perm = None if perm is None else xp.asarray(perm.astype(_jax_int(xp)))
            k_lo, k_hi = xp.asarray(k_lo, dtype=idt), xp.asarray(k_hi, dtype=idt)
            integer = None if integer is None else tuple(xp.asarray(x) for x in integer)
        return SplitState(perm, k_lo, k_hi, scratch, general, integer)

    def evaluate(self, state, counts, xp):
        num2, P, N = self.parts(state, counts, xp)
        if R.is_exact(num2):
            num2, P, N = int(num2), int(P), int(N)
        if isinstance(num2, int):      # NumPy: Python ints, one correctly rounded division
            return np.float64(math.nan) if P == 0 or N == 0 else np.float64(num2 / (2 * P * N))
        return R.auc_from_u2(num2, P, N, xp)[0]

    def parts(self, state, counts, xp):
        """``(U2, P*, N*)`` of a replicate: AUC = U2 / (2 P* N*).

        Python ints on NumPy with integer counts (exact); else backend
        scalars (integers when the counts are).
        """
        if _integer_path(state, counts, xp):
            return _split_parts(((self, state),), counts, xp)[0]
        perm, k_lo, k_hi = state[:3]
        c_sum, c_read = self._classes(counts)
        if perm is not None:
            c_sum = xp.take(c_sum, perm)
        cdt = R.count_dtype(xp, c_sum)
        cum0 = B.prefix_sum(c_sum, xp, cdt)      # the summed class's weight below each rank
        s = R.u2_split(cum0, k_lo, k_hi, c_read, xp, ties=self.ties)
        t_sum, t_read = cum0[-1], xp.sum(xp.astype(c_read, cdt))
        if self.side == 0:
            return s, t_read, t_sum
        if R.is_exact(s):      # NumPy past int64: Python integers
            return 2 * int(t_sum) * int(t_read) - int(s), int(t_sum), int(t_read)
        sdt = R.sum_dtype(xp, cdt)     # (2 P* N* passes int32 from 32,768 rows in each class)
        return 2 * xp.astype(t_sum, sdt) * xp.astype(t_read, sdt) - s, t_sum, t_read

    def _dtypes(self, counts_dtype):
        """NumPy: (prefix sums' dtype, the products' dtype) for counts of this dtype.

        With ``T`` the bound on a replicate's total count, every prefix sum is
        at most ``T`` and a tie group's doubled count at most ``2 T``: int32
        below 2**30. A product of that with one row's count (at most 255 for
        uint8 counts, else ``T``) fits int32 below 2**31; the dot product sums
        the products in int64 (``U2 <= T**2 / 2``). Else int64 (0: no bound
        known).
        """
        T = self.total_bound
        cmax = 255 if counts_dtype == np.uint8 else T
        return (np.dtype(np.int32 if 0 < T < 2**30 else np.int64),
                np.dtype(np.int32 if 0 < T and 2 * T * cmax < 2**31 else np.int64))

    def loo(self, state, xp):
        y01, s, w = state.general
        return _AUCKernel().loo(_AUCKernel().prepare(y01, s, w, xp, False), xp)


def split_state_numpy(kernel: _AUCSplitKernel, st: SplitState) -> SplitState:
    """A :class:`SplitState` of the integer-count path (perm None) as NumPy arrays, with
    NumPy's buffers and prefix-sum positions."""
    n = kernel.N + kernel.P
    k_lo, k_hi = (np.asarray(x).astype(np.intp) for x in (st.k_lo, st.k_hi))
    start = 0 if kernel.side == 0 else kernel.N
    general = tuple(None if x is None else np.asarray(x) for x in st.general)
    return SplitState(None, k_lo, k_hi, {}, general,
                      _layout_positions(start + k_lo, start + k_hi, n, False, np))


def _integer_path(state, counts, xp) -> bool:
    """Do these counts take :func:`_split_parts` (integers, no weights; NumPy or JAX)?"""
    if state.integer is None:
        return False
    if B.is_numpy(xp):
        return isinstance(counts, np.ndarray) and counts.dtype in (np.int64, np.uint8)
    return xp.isdtype(counts.dtype, "integral")


def _layout_positions(q_lo, q_hi, n, jaxy, sx):
    """Where the prefix sums of the first ``q`` layout counts sit, for ``q`` in [0, n].

    ``(q % b) * m + q // b`` in the blocked arrangement of the prefix sums
    (:func:`_layout_prefix_numpy`, :func:`_layout_prefix_jax`): intp on
    NumPy, int32 on JAX.
    """
    xp, dt = (sx, sx.int32) if jaxy else (np, np.intp)
    return (_blocked_at(q_lo, n, xp, dt), _blocked_at(q_hi, n, xp, dt))


def _blocked_at(q, n, xp, dtype=None):
    """``(q % b) * m + q // b`` (``b = _IBLOCK``, ``m = n // b + 1``): where the sum of the
    first ``q`` layout counts sits; a Python int for an int ``q``, else ``dtype``."""
    b, m = _IBLOCK, n // _IBLOCK + 1
    if not isinstance(q, int):
        q = xp.asarray(q, dtype=dtype)
    return (q % b) * m + q // b


def _split_parts(models, counts, xp):
    """``(U2, P*, N*)`` of each ``(kernel, state)`` on one replicate's integer counts.

    One prefix sum of the whole layout's counts serves every model (they share
    the layout): a side-0 model reads it at its positives' bounds among the
    negatives (positions below ``N``), a side-1 model at its negatives' bounds
    among the positives (``N`` + the bound; the prefix sum there less ``N*`` is
    the positives' own). The prefix sums are blocked (:func:`_layout_prefix_numpy`,
    :func:`_layout_prefix_jax`); NumPy: int32 products summed in int64, Python
    ints out (:meth:`_AUCSplitKernel._dtypes`).
    """
    k0, st0 = models[0]
    N, n = k0.N, k0.N + k0.P
    if B.is_numpy(xp) and native.lib is not None:
        return _split_parts_native(models, counts, N, n)
    if B.is_numpy(xp):
        acc, prod = k0._dtypes(counts.dtype)
        C = _layout_prefix_numpy(counts, acc, st0.scratch)
        n_star = int(C[_blocked_at(N, n, np)])
        p_star = int(C[_blocked_at(n, n, np)]) - n_star
    else:
        cum, total = _layout_prefix_jax(counts, k0, xp)
        n_star = cum[_blocked_at(N, n, xp)]
        p_star = total - n_star
    out = []
    for k, st in models:
        at_lo, at_hi = st.integer
        c_read = k._classes(counts)[1]
        base = 0 if k.side == 0 else n_star       # prefix sums of the summed class alone
        if B.is_numpy(xp):
            # one set of buffers for both models (fewer bytes in the caches)
            g1, g2, t = B.thread_buffers(st0.scratch, ("read", counts.dtype.char), lambda: (
                np.empty(n, acc), np.empty(n, acc), None if prod == acc else np.empty(n, prod)))
            m = c_read.shape[0]
            g1, g2 = g1[:m], g2[:m]
            t = g1 if t is None else t[:m]
            # ("clip": the indices are valid; with ``out``, "raise" gathers through a
            # temporary). Integer products and an int64 sum: no BLAS (whose threads,
            # woken per call, cost milliseconds on a busy machine), no float conversion.
            np.take(C, at_lo, out=g1, mode="clip")
            if k.ties:
                np.add(g1, np.take(C, at_hi, out=g2, mode="clip"), out=g1)
            if 2 * p_star * n_star <= R.INT64_MAX:
                np.multiply(g1, c_read, out=t)
                s = int(np.add.reduce(t, dtype=np.int64))
            else:       # the sum could pass int64 (U2 <= 2 P* N*): Python integers
                s = int(np.dot(R.as_exact(g1), R.as_exact(c_read)))
            # (side 1: each of the N* read counts took N* too, twice; exact in Python ints)
            s = (s if k.ties else 2 * s) - 2 * base * n_star
        else:
            sdt = R.sum_dtype(xp, R.count_dtype(xp, None))
            lo = xp.astype(cum.at[at_lo].get(mode="promise_in_bounds") - base, sdt)
            twice = lo + xp.astype(cum.at[at_hi].get(mode="promise_in_bounds") - base, sdt) \
                if k.ties else 2 * lo
            s = xp.sum(xp.astype(c_read, sdt) * twice)
        if k.side == 0:
            out.append((s, p_star, n_star))
        elif B.is_numpy(xp):
            out.append((2 * p_star * n_star - s, p_star, n_star))
        else:                           # (2 P* N* passes int32 from 32,768 rows in each class)
            out.append((2 * xp.astype(p_star, sdt) * xp.astype(n_star, sdt) - s,
                        p_star, n_star))
    return out


def _split_parts_native(models, counts, N, n):
    """:func:`_split_parts` on NumPy in one compiled call: the layout's prefix sums, then
    per model its read rows' counts times the sums at their bounds, in exact integers.

    The plan (each model's read rows in the order of their bounds, checked
    once) is made on the first replicate and kept with the first model's buffers.
    """
    k0, st0 = models[0]
    key = ("native-plan",) + tuple(id(st) for _, st in models)
    plan = st0.scratch.get(key)
    if plan is None:
        plan = st0.scratch[key] = native.lib.split_plan(N, n, tuple(
            _native_model(k, st, N) for k, st in models))
    C = B.thread_buffers(st0.scratch, "prefix-native", lambda: np.empty(n + 1, np.int64))
    n_star, total, sums = native.lib.split_parts(plan, counts, C)
    p_star = total - n_star
    out = []
    for (k, _), s in zip(models, sums):
        if k.side == 0:
            out.append((s, p_star, n_star))
        else:       # the read rows' sums included the N* negatives' counts, twice
            out.append((2 * p_star * n_star - (s - 2 * n_star * n_star), p_star, n_star))
    return out


def _native_model(k, st, N):
    """One model of a compiled plan: ``(r0, m, off, perm, lo, hi)``, its read rows in the
    order of their bounds (sequential reads of the prefix sums)."""
    # (by lo, then hi: both ascend, as the read rows' scores would)
    order = (np.lexsort((st.k_hi, st.k_lo)) if k.ties else np.argsort(st.k_lo)).astype(np.intp)
    lo = np.ascontiguousarray(st.k_lo[order], dtype=np.intp)
    hi = np.ascontiguousarray(st.k_hi[order], dtype=np.intp) if k.ties else None
    if k.side == 0:                 # reads the positives, sums the negatives
        return N, k.P, 0, order, lo, hi
    return 0, k.N, N, order, lo, hi


_IBLOCK = 8    # ranks per block of the prefix sums (NumPy and JAX)


def _layout_prefix_numpy(counts, acc, scratch):
    """NumPy: prefix sums of the layout's integer counts, blocked as on JAX; a flat array.

    ``np.cumsum`` carries each sum into the next: one dependent addition per
    count, about 2 ns each here (0.2 ms of a 0.7 ms replicate at 10^5 rows).
    Position ``q`` sits at ``(q % b) * m + q // b`` of a ``(b, m)`` array (``b =
    _IBLOCK``, see :func:`_layout_prefix_jax`): row ``t`` is row ``t - 1`` plus
    the ``t - 1``-th count of every block, ``b`` vectorised additions of ``m``
    elements, then the block totals' exclusive prefix sums (``m`` serial
    additions) are added to every row. Padding counts are zeros. Integers
    throughout (``acc``, the kernel's prefix dtype): exact. The buffers are the
    calling thread's.
    """
    n = counts.shape[0]
    b, m = _IBLOCK, n // _IBLOCK + 1
    Y, pad, E, totals = B.thread_buffers(scratch, ("layout", counts.dtype.char), lambda: (
        np.empty((b, m), acc), np.zeros(b * m, counts.dtype), np.zeros(m, acc),
        np.empty(m, acc)))
    pad[:n] = counts                        # pad[n:] stays 0
    P = pad.reshape(m, b).T                 # P[t, k]: the count at position k * b + t
    Y[0] = 0
    for t in range(1, b):
        np.add(Y[t - 1], P[t - 1], out=Y[t])
    np.add(Y[b - 1], P[b - 1], out=totals)  # each block's total
    np.cumsum(totals[:-1], out=E[1:])       # E[0] stays 0
    np.add(Y, E, out=Y)
    return Y.reshape(-1)


def _layout_prefix_jax(counts, kernel, xp):
    """JAX: prefix sums of the layout's integer counts in blocks of ``_IBLOCK``, and their total.

    XLA on CPU takes a cumulative sum several times longer than a pass over
    the data, and it was most of a compiled replicate (as was a blocked
    product with a triangular matrix). Here position ``q`` sits at
    ``(q % b, q // b)`` of a ``(b, m)`` array (``b = _IBLOCK``, the layout's
    own order transposed): the sums inside each block of ``b`` consecutive
    positions are ``b`` additions of contiguous rows, and only the ``m``
    block totals take a cumulative sum (:func:`_exclusive_prefix_jax`), which
    starts the rows. The sum of the first ``q`` counts is read at
    ``(q % b) * m + q // b`` (:func:`_layout_positions`). Integer arithmetic
    throughout: exact.
    """
    import jax
    import jax.numpy as jnp

    n, b = kernel.N + kernel.P, _IBLOCK
    m = n // b + 1
    cdt = R.count_dtype(xp, None)
    # int32 inside when no prefix sum can reach 2**31 (half the memory traffic)
    wdt = jnp.int32 if 0 < kernel.total_bound < 2**31 else cdt
    # (m, b) -> (b, m), moved in the counts' own (small) dtype and widened after
    x = jnp.pad(counts, (0, b * m - n)).reshape(m, b).T.astype(wdt)
    # row 0: the count before each block (the block totals' exclusive prefix
    # sums); row t: plus the block's first t counts, all as one windowed sum
    # down the columns (b terms each). Padding adds zeros. XLA materialises a
    # windowed sum, so the gathers read it as it is: when the rows were a
    # chain of additions (and the block offsets added after), XLA fused them,
    # through the reshapes' index arithmetic, into every read.
    totals = jnp.sum(x, axis=0, dtype=wdt)
    y = jnp.concatenate([_exclusive_prefix_jax(totals)[None, :], x[:b - 1]])
    cum = jax.lax.reduce_window(y, 0, jax.lax.add, (b, 1), (1, 1),
                                ((b - 1, 0), (0, 0))).reshape(-1)
    return cum, jnp.sum(totals, dtype=cdt)


def _exclusive_prefix_jax(t, c=16):
    """Exclusive prefix sums along the last axis of a short integer array ``t`` under JAX.

    ``jnp.cumsum`` of the 1,564 block totals took about 140 us per replicate
    on CPU (XLA splits it into a tree of windowed reductions whose levels are
    then recomputed inside each consumer). Here: windows of ``c`` along the
    last axis of a ``(..., L / c, c)`` reshape (one windowed sum of ``c``
    terms per element), the window totals done the same way, recursively;
    exact. Leading axes are independent rows.
    """
    from jax import lax
    import jax.numpy as jnp

    lead = t.shape[:-1]
    k = len(lead)
    L = t.shape[-1]
    if L <= c:
        return lax.reduce_window(t, 0, lax.add, (1,) * k + (L,), (1,) * (k + 1),
                                 ((0, 0),) * k + ((L, -1),))
    m = -(-L // c)
    tp = jnp.pad(t, ((0, 0),) * k + ((0, m * c - L),)).reshape(lead + (m, c))
    inc = lax.reduce_window(tp, 0, lax.add, (1,) * (k + 1) + (c,), (1,) * (k + 2),
                            ((0, 0),) * (k + 1) + ((c - 1, 0),))
    before = _exclusive_prefix_jax(inc[..., c - 1], c)
    return (inc - tp + before[..., None]).reshape(lead + (m * c,))[..., :L]


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
        rows = _prob.binary_log_loss_rows_widened(y01, p, xp) if self.name == "log_loss" else _brier_rows(y01, p, xp)
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
    if isinstance(kernel_a, _AUCSplitKernel) and isinstance(kernel_b, _AUCSplitKernel):
        if _integer_path(sa, counts, xp) and _integer_path(sb, counts, xp):
            # one prefix sum of the layout's counts for both models
            (na, P, N), (nb, _, _) = _split_parts(((kernel_a, sa), (kernel_b, sb)), counts, xp)
        else:
            (na, P, N), (nb, _, _) = (kernel_a.parts(sa, counts, xp),
                                      kernel_b.parts(sb, counts, xp))
        if R.is_exact(na) or R.is_exact(nb):     # NumPy past int64: Python integers
            na, nb, P, N = int(na), int(nb), int(P), int(N)
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
    resample_by = V.choice(resample_by, "resample_by", ("auto", "weights", "indices"))
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
