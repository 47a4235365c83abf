"""The one rank-statistics core: tie-grouped sort, Mann-Whitney counts, placements, AP.

Every AUC in calipers (``roc_auc_score``, grouped AUC, one-vs-rest and
one-vs-one multiclass AUC, DeLong's test, the bootstrap's AUC kernels and
their leave-one-out values) and the average-precision step sum stand on the
functions here; no other module counts pairs.

Definitions
-----------
* **Mann-Whitney AUC** (Hanley & McNeil 1982): the share of (positive,
  negative) pairs in which the positive scores higher, a tied pair counting
  1/2; with weights a pair counts ``w_pos * w_neg``. Here it is computed as
  ``U2 / (2 P N)`` with ``U2 = sum over positives of w * (2 * [negative
  weight strictly below] + [negative weight tied])``, so ``U2`` is an integer
  whenever the weights are.
* **Placements** (DeLong, DeLong & Clarke-Pearson 1988): for a positive, the
  negative weight below it plus half the tied negative weight (``V10`` once
  divided by ``N``); for a negative, the mirror: the positive weight above it
  plus half the tied positive weight (``V01`` once divided by ``P``). They are
  returned doubled (``twice``), so they stay integers. ``U2`` is the
  weighted sum of the positives' doubled placements; leaving one row out
  removes exactly its own weighted doubled placement from ``U2``.
* **Average precision** (scikit-learn's definition): the step sum
  ``AP = sum_j (R_j - R_{j-1}) P_j`` over distinct thresholds, tied scores
  entering together; equivalently the mean over positive weight of the
  precision at the threshold equal to that positive's score.

The one sort: :func:`sort_groups` (ascending argsort and tie groups from
:func:`calipers._core.xp.group_bounds`), or a segmented order taken from
:func:`calipers._kernels.segments.segment_sort` (:func:`from_segment_sort`, scores
descending within each segment). Every count is a difference of prefix sums
(:func:`calipers._core.xp.prefix_sum`) at tie-group and segment bounds, so
nothing depends on the order of tied rows and everything keeps static
shapes (``jax.jit``).

The count-dtype rule (:func:`count_dtype`): without weights, or with integer
weights (bootstrap counts), counts are integers (``B.acc_int``: exact); with
float weights, the widest float (``B.acc_float``). Pair totals (``U2``) stay
integers where the integer type is 64-bit; with 32-bit integers (JAX without
x64) the per-row counts and placements are integers but the pair total is
summed in ``acc_float``. The division by ``2 P N`` happens once, at the end.

Limits of the integer pair counts (:func:`pair_limit_flag`). ``U2`` is at
most ``2 P N`` and every term of it is non-negative; integer arithmetic wraps
modulo ``2**64`` (``2**32``), so every partial sum and prefix-sum difference
is right as long as the final count fits. Hence, with int64 counts, the limit
is ``2 P N <= 2**63 - 1`` (per segment, per class pair); with int32 counts
the doubled placements must fit, ``2 N <= 2**31 - 1`` (and ``2 P`` for the
negatives' placements). NumPy never stops there: past int64 the sums run in
Python integers (object arrays; exact, and only then, so the common case
keeps its speed), and the AUC is one correctly rounded division of Python
integers. Other backends raise ``ValueError`` naming ``sample_weight`` and
the limit on concrete values, and give NaN under ``jit``. (Weighted
click logs reach this: 1,000 rows of integer weight 10**7 already have
``2 P N`` near ``5 * 10**19``.)

NumPy, unweighted: :func:`roc_auc` and :func:`average_precision` sort the two
classes apart (keys only, no argsort) and count by binary search, which is
the same count (``twice = left + (left + tied)``, the prefix sums of unit
weights) and faster than an argsort.

JAX: scores are sorted as order-preserving unsigned integer keys of their
own width (:func:`_order_key`: exact, ties stay ties), which XLA sorts far
faster than floats. Unweighted, :func:`roc_auc` and :func:`average_precision`
sort the two classes' keys apart and count by one binary search
(:func:`split_ranks`, :func:`u2_split`: the bootstrap's split layout, the
same count as the NumPy path). Weighted, one sort carries labels and weights
as payload (:func:`carry_groups`) and the tie groups come as first/last flags:
:func:`binary_auc` and :func:`ap_steps` then read the prefix sums at the group
bounds by a running max / min instead of gathers.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._core import xp as B
from .._core import validation as V
from . import native, ranges

# Internal kernels, no public names (hence no __all__): used by _ranking, _multiclass,
# _comparison, _retrieval and the bootstrap kernels.


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------

def count_dtype(xp, w):
    """Integer counts without weights or with integer weights (exact); else the widest float."""
    if w is None or xp.isdtype(w.dtype, ("integral", "bool")):
        return B.acc_int(xp)
    return B.acc_float(xp)


def sum_dtype(xp, cdt):
    """Dtype of a sum of products of counts: 64-bit integers stay exact, else the widest float."""
    if cdt is object:
        return object
    if xp.isdtype(cdt, "integral") and cdt == xp.int64:
        return cdt
    return B.acc_float(xp)


INT64_MAX = 2**63 - 1
_INT32_MAX = 2**31 - 1


def _past_int64(xp, sdt, P, N) -> bool:
    """NumPy, int64 sums: could a pair count of class totals ``P``, ``N`` pass int64?

    ``P``, ``N``: concrete totals (or arrays of them: the largest is taken), or
    callables giving them (evaluated only on NumPy int64 sums). True means:
    count in Python integers (:func:`as_exact`). The bound ``2 P N`` is cheap
    (a reduction or two) and false in the common case.
    """
    if not B.is_numpy(xp) or sdt is object or sdt != np.int64:
        return False
    P, N = (v() if callable(v) else v for v in (P, N))
    return 2 * int(np.max(P)) * int(np.max(N)) > INT64_MAX


def as_exact(x):
    """A NumPy integer array as Python integers (an object array): sums that cannot wrap."""
    return np.asarray(x).astype(object)


def is_exact(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype == object


def exact_ratio(num, P, N):
    """NumPy: ``num / (2 P N)`` of Python integers, one correctly rounded division per element.

    Returns ``(float64 value, undefined)``, NaN where a class has no weight.
    """
    def ratio(u, p, n):
        return math.nan if p == 0 or n == 0 else int(u) / (2 * int(p) * int(n))

    value = np.asarray(np.frompyfunc(ratio, 3, 1)(num, P, N), dtype=np.float64)
    undefined = np.asarray((np.asarray(P) == 0) | (np.asarray(N) == 0), dtype=bool)
    return value, undefined


def pair_limit_flag(P, N, xp, *, name="sample_weight", placements=False):
    """Check the limit of the integer pair counts of class totals ``P``, ``N``.

    ``P``, ``N``: total positive and negative weight in the count dtype
    (scalars, or per segment / per class). int64 counts: ``2 P N <= 2**63 - 1``
    (``U2`` and its partial sums, modulo ``2**64``). int32 counts (JAX without
    x64): ``2 N <= 2**31 - 1``, the positives' doubled placements, and with
    ``placements`` also ``2 P <= 2**31 - 1``, the negatives'. Float counts and
    NumPy (which counts exactly past int64): no limit. Concrete values past
    the limit raise ``ValueError`` naming ``name`` and the limit; traced ones
    return the flag (NaN for the caller). Returns a 0-d (or per-element) bool.
    """
    if B.is_numpy(xp) or not xp.isdtype(N.dtype, "integral"):
        return xp.zeros((), dtype=xp.bool)
    wide = N.dtype == xp.int64
    if wide:
        # exact in int64: 2 P N <= 2**63 - 1  <=>  P N <= 2**62 - 1  (2 P N is even)
        bad = (N > 0) & (P > (2**62 - 1) // xp.maximum(N, xp.ones_like(N)))
    else:
        top = N if not placements else xp.maximum(P, N)
        bad = top > _INT32_MAX // 2
    bad = bad | (P < 0) | (N < 0)      # a total that already wrapped
    if B.is_traced(bad):
        rule = (f"must keep the Mann-Whitney pair count 2*P*N (P, N: the total positive and "
                f"negative weight) at most 2**63 - 1 = {INT64_MAX}, the int64 limit; NumPy "
                "inputs count past it exactly" if wide else
                f"must keep the doubled placements ({'2*max(P, N)' if placements else '2*N'}; "
                f"P, N: the total positive and negative weight) at most 2**31 - 1 = "
                f"{_INT32_MAX}, the int32 limit (JAX without x64)")
        V.fail_if(bad, name, rule, xp)     # recorded (raised after a compiled eager call)
        return bad                          # per element: only the counts past it are NaN
    if bool(xp.any(bad)):
        Pn, Nn = (np.asarray(B.to_numpy(v)).astype(object).reshape(-1) for v in (P, N))
        i = int(np.flatnonzero(np.asarray(B.to_numpy(bad)).reshape(-1))[0]) if getattr(
            bad, "ndim", 0) else 0
        Pi, Ni = Pn[min(i, Pn.shape[0] - 1)], Nn[min(i, Nn.shape[0] - 1)]
        if wide:
            raise ValueError(
                f"{name}: the Mann-Whitney pair count can reach 2*P*N = {2 * Pi * Ni} "
                f"(P = {Pi}, N = {Ni}: the total positive and negative weight, or the row "
                f"counts without weights), more than 2**63 - 1 = {INT64_MAX}, the int64 "
                "limit of the integer pair counts; NumPy inputs count past it exactly (in "
                "Python integers): pass NumPy arrays, float weights or smaller integer weights")
        which = "2*max(P, N)" if placements else "2*N"
        v = 2 * max(Pi, Ni) if placements else 2 * Ni
        raise ValueError(
            f"{name}: the doubled placements reach {which} = {v} (P = {Pi}, N = {Ni}: the "
            f"total positive and negative weight, or the row counts without weights), more "
            f"than 2**31 - 1 = {_INT32_MAX}, the int32 limit of the counts (JAX without "
            "x64); enable jax_enable_x64, or pass NumPy arrays, float weights or smaller "
            "integer weights")
    return bad


def out_float(xp, *arrays):
    """Result dtype of the family: the backend rule (at least float32, the inputs' widest float)."""
    return B.out_float(xp, *arrays)


def _f(x, xp):
    return xp.astype(x, B.acc_float(xp))


# --------------------------------------------------------------------------
# binary input shared by the family (roc_auc_score, curves, select_threshold)
# --------------------------------------------------------------------------

class Binary(NamedTuple):
    xp: Any
    y: Any          # int 0/1
    s: Any          # scores
    w: Any          # weights or None
    invalid: Any    # scalar bool: under jit, input broke a rule -> NaN
    out: Any        # output float dtype (:func:`out_float`)
    bits: Any = None  # NumPy float64 scores: their bit extremes (:func:`packed_sort`)


def numpy_01(y) -> bool:
    """Is ``y`` a NumPy integer array holding only 0 and 1? One reduction (a bitwise or).

    Every value is in {0, 1} exactly when the bitwise or of all of them is
    (a negative value sets the sign bit, any other value a higher bit). Such
    labels pass the binary rule unchanged (:func:`calipers._core.validation.binary_labels`
    returns them as they are), so callers may skip its checks.
    """
    if not isinstance(y, np.ndarray) or y.dtype.kind not in "iu" or y.size == 0:
        return False
    return 0 <= int(np.bitwise_or.reduce(y, axis=None)) <= 1


def prepare_binary(y_true, y_score, sample_weight, pos_label, *, score_name="y_score",
                   labels_01=False):
    """Validate binary labels, 1-D finite scores and non-negative weights.

    ``labels_01``: the caller has checked that ``y_true`` is a NumPy integer
    array of 0/1 (:func:`numpy_01`). NumPy float64 scores are checked for
    finiteness from their bit extremes, the pass :func:`packed_sort` needs
    anyway (kept in ``Binary.bits``); a non-finite score raises as
    :func:`calipers._core.validation.check_finite` says.
    """
    xp, (y_true, y_score, sample_weight) = B.as_arrays(y_true, y_score, sample_weight)
    B.check_1d("y_true", y_true)
    B.check_1d(score_name, y_score)
    if sample_weight is not None:
        B.check_1d("sample_weight", sample_weight)
    B.check_same_length(y_true=y_true, **{score_name: y_score}, sample_weight=sample_weight)
    B.check_nonempty("y_true", y_true)
    V.check_real_values(score_name, y_score, xp, "numeric scores")
    bits = None
    if isinstance(y_score, np.ndarray) and y_score.dtype == np.float64 and y_score.ndim == 1:
        bits = _bit_extremes(y_score)
        if _max_magnitude(bits) >= _INF_BITS:
            V.check_finite(score_name, y_score, xp)     # raises, naming the element
    else:
        V.check_finite(score_name, y_score, xp)
    if pos_label is None and (labels_01 or numpy_01(y_true)):
        y, invalid = y_true, np.asarray(False)
    else:
        y, invalid = V.binary_labels(y_true, xp, pos_label=pos_label)
    if sample_weight is not None:
        invalid = invalid | V.check_weights("sample_weight", sample_weight, xp)
    if B.is_traced(y_score):
        invalid = invalid | ~xp.all(xp.isfinite(y_score)) if xp.isdtype(
            y_score.dtype, "real floating") else invalid
    return Binary(xp, y, y_score, sample_weight, invalid, out_float(xp, y_score), bits)


# --------------------------------------------------------------------------
# the one sort
# --------------------------------------------------------------------------

class TieGroups(NamedTuple):
    """Rows in sorted order with their tie groups (and segments, when segmented).

    Indices are positions in the sorted order. ``lo``/``hi``: first and last
    position of the row's tie group. Unsegmented: ascending scores,
    ``start``/``end``/``seg`` are None. Segmented: descending scores within each
    segment; ``start``/``end`` the row's segment bounds (``end`` one past the
    last), ``seg_lo``/``seg_end`` the bounds per segment (Q,).

    ``first``/``last`` (JAX, :func:`carry_groups`): flags of a tie group's
    first and last row, given instead of ``lo``/``hi``; prefix sums are then
    read at the group bounds by a running max / min (:func:`_edge_lo`,
    :func:`_edge_hi`) instead of gathers.
    """

    order: Any      # sorted position -> input row (None: input already in sorted order)
    s: Any          # sorted scores (None when not kept)
    y: Any          # labels in sorted order (0/1, or class codes for multiclass)
    lo: Any
    hi: Any
    start: Any = None
    end: Any = None
    seg_lo: Any = None
    seg_end: Any = None
    descending: bool = False
    first: Any = None
    last: Any = None


def sort_groups(y, s, xp) -> TieGroups:
    """One ascending sort of the scores and its tie groups (keys compared for equality only).

    JAX sorts the unsigned order keys (:func:`_order_key`), cheaper to compare
    than floats; the order is the same up to the order of tied rows.
    """
    order = xp.argsort(_order_key(s) if B.is_jax(xp) else s, stable=False)
    ss = xp.take(s, order)
    lo, hi = B.group_bounds(ss, xp)
    return TieGroups(order, ss, xp.take(y, order), lo, hi)


def presorted_groups(y_sorted, lo, hi) -> TieGroups:
    """Tie groups of rows already in ascending score order (the bootstrap's state)."""
    return TieGroups(None, None, y_sorted, lo, hi)


def from_segment_sort(ss, y, xp) -> TieGroups:
    """Tie groups of a :func:`calipers._kernels.segments.segment_sort` (descending within segments)."""
    end_seg = ss.seg_start + ss.seg_size
    start = xp.take(ss.seg_start, ss.seg)
    return TieGroups(ss.order, None, xp.take(y, ss.order), start + ss.tie_lo,
                     start + ss.tie_hi, start, xp.take(end_seg, ss.seg), ss.seg_start,
                     end_seg, True)


def _order_key(s):
    """JAX: unsigned integers of the scores' width in the scores' order (equal iff equal).

    Floats: the sign bit flipped for non-negative values, all bits for
    negative ones (after mapping -0.0 to 0.0, so the two still tie); signed
    integers: the sign bit flipped. XLA sorts such keys alone far faster than
    floats (no total-order comparator), and the keys are exact: ties stay
    ties, nothing is rounded. NaN keys land anywhere; NaN scores are invalid.
    """
    from jax import lax
    import jax.numpy as jnp

    if jnp.issubdtype(s.dtype, jnp.unsignedinteger):
        return s
    udt = jnp.dtype(f"uint{8 * s.dtype.itemsize}")
    sign = jnp.asarray(1 << (8 * s.dtype.itemsize - 1), dtype=udt)
    if jnp.issubdtype(s.dtype, jnp.integer):
        return lax.bitcast_convert_type(s, udt) ^ sign
    b = lax.bitcast_convert_type(jnp.where(s == 0, jnp.zeros_like(s), s), udt)
    return jnp.where(b >= sign, ~b, b | sign)


def _flag_groups(keys, y=None) -> TieGroups:
    """JAX: tie groups of sorted keys as first / last flags (:func:`B.tie_flags`)."""
    import jax.numpy as jnp

    first, last = B.tie_flags(keys, jnp)
    return TieGroups(None, None, y, None, None, first=first, last=last)


def carry_groups(y, s, w):
    """JAX: one sort of the scores' keys carrying labels (and weights) along.

    Returns the :class:`TieGroups` (labels in sorted order, tie groups as
    ``first``/``last`` flags) and the weights in sorted order (or None). The
    sort moves the payload with the keys: no index vector and none of the
    gathers an argsort needs.
    """
    from jax import lax

    k = _order_key(s)
    out = lax.sort((k, y) if w is None else (k, y, w), num_keys=1, is_stable=False)
    return _flag_groups(out[0], out[1]), None if w is None else out[2]


class ClassWeights(NamedTuple):
    """Positive / negative weight per sorted row, their prefix sums and totals (count dtype)."""

    wp: Any
    wn: Any
    Cp: Any   # (n + 1,) prefix sums of wp
    Cn: Any
    P: Any    # total positive weight: scalar, or (Q,) per segment
    N: Any


def class_weights(tg: TieGroups, w_sorted, xp) -> ClassWeights:
    """Class weights in the count dtype (``w_sorted``: weights in sorted order, or None)."""
    cdt = count_dtype(xp, w_sorted)
    if w_sorted is None:
        wp = xp.astype(tg.y, cdt)
        wn = 1 - wp
    else:
        w = xp.astype(w_sorted, cdt)
        wp = w * xp.astype(tg.y, cdt)
        wn = w - wp
    Cp = B.prefix_sum(wp, xp, cdt)
    Cn = B.prefix_sum(wn, xp, cdt)
    if tg.seg_lo is None:
        # totals by reduction, not read off the prefix sums, so that under jit a
        # kernel that needs only Cn (the AUC) leaves Cp to dead-code elimination
        return ClassWeights(wp, wn, Cp, Cn, xp.sum(wp, dtype=cdt), xp.sum(wn, dtype=cdt))
    return ClassWeights(wp, wn, Cp, Cn, _segment_total(Cp, tg, xp),
                        _segment_total(Cn, tg, xp))


def _segment_total(C, tg, xp):
    if tg.seg_lo is None:
        return C[C.shape[0] - 1, ...]
    return xp.take(C, tg.seg_end, axis=0) - xp.take(C, tg.seg_lo, axis=0)


def prefix(x, xp, dtype):
    if x.ndim == 1:
        return B.prefix_sum(x, xp, dtype)
    return xp.cumulative_sum(xp.astype(x, dtype), axis=0, include_initial=True)


# --------------------------------------------------------------------------
# the one Mann-Whitney / placement kernel
# --------------------------------------------------------------------------

def _edge_lo(C, tg: TieGroups, xp):
    """``C[lo]`` per sorted row: the prefix sum before the row's tie group.

    With ``first`` flags (JAX) no gather: ``C`` is non-decreasing (weights
    are non-negative; negative weights are invalid input, NaN), so its value
    at each group's first row carries forward by a running maximum.
    """
    if tg.first is None:
        return xp.take(C, tg.lo, axis=0)
    from jax import lax

    head = C[:C.shape[0] - 1, ...]
    first = tg.first if C.ndim == 1 else xp.reshape(tg.first, (-1, 1))
    return lax.cummax(xp.where(first, head, xp.zeros_like(head)), axis=0)


def _edge_hi(C, tg: TieGroups, xp):
    """``C[hi + 1]`` per sorted row: the prefix sum through the row's tie group (running min)."""
    if tg.first is None:
        return xp.take(C, tg.hi + 1, axis=0)
    from jax import lax

    tail = C[1:, ...]
    last = tg.last if C.ndim == 1 else xp.reshape(tg.last, (-1, 1))
    return lax.cummin(xp.where(last, tail, C[C.shape[0] - 1, ...]), axis=0, reverse=True)


def _twice_toward(C, tg: TieGroups, xp, *, low_end: bool):
    a = _edge_lo(C, tg, xp) + _edge_hi(C, tg, xp)
    if low_end:
        return a if tg.start is None else a - 2 * xp.take(C, tg.start, axis=0)
    last = C[C.shape[0] - 1, ...] if tg.end is None else xp.take(C, tg.end, axis=0)
    return 2 * last - a


def twice_below(C, tg: TieGroups, xp):
    """Per sorted row: 2 x (weight with a lower score, same segment) + (weight tied)."""
    return _twice_toward(C, tg, xp, low_end=not tg.descending)


def twice_above(C, tg: TieGroups, xp):
    """Per sorted row: 2 x (weight with a higher score, same segment) + (weight tied)."""
    return _twice_toward(C, tg, xp, low_end=tg.descending)


def placements(tg: TieGroups, cw: ClassWeights, xp):
    """Doubled placements per sorted row, in the count dtype (exact for integer weights).

    A positive: ``2 * (negative weight below) + (negative weight tied)``; a
    negative: ``2 * (positive weight above) + (positive weight tied)``.
    DeLong's ``V10 = twice / (2 N)`` and ``V01 = twice / (2 P)``.
    """
    return xp.where(tg.y == 1, twice_below(cw.Cn, tg, xp), twice_above(cw.Cp, tg, xp))


def u2(tg: TieGroups, wpos, Cneg, xp):
    """``U2 = sum over rows of wpos * twice_below(Cneg)``: twice the Mann-Whitney U.

    ``wpos`` (n,): the weight of each sorted row as a member of the "higher"
    class (0 for other rows); ``Cneg``: prefix sums (n + 1,) of the "lower"
    class's weight, or (n + 1, k) for k lower classes at once (one-vs-one).
    Returns a scalar, (k,), or per segment (Q,) when ``tg`` is segmented.
    Integer in 64-bit integer count dtypes, else the widest float. NumPy, when
    ``2 P N`` could pass int64 (``P`` the whole ``wpos`` total, ``N`` the
    largest lower-class total): Python integers (an object array), exact.
    """
    sdt = sum_dtype(xp, Cneg.dtype)
    last = Cneg[Cneg.shape[0] - 1, ...]
    if _past_int64(xp, sdt, lambda: np.sum(wpos, dtype=np.int64), last):
        sdt, Cneg, wpos = object, as_exact(Cneg), as_exact(wpos)
    t = xp.astype(twice_below(Cneg, tg, xp), sdt)
    wp = xp.astype(wpos, sdt)
    if Cneg.ndim == 2:
        return xp.sum(xp.reshape(wp, (-1, 1)) * t, axis=0)
    if tg.seg_lo is None:
        return _weighted_sum(wp, t, xp, sdt)
    return _segment_total(B.prefix_sum(wp * t, xp, sdt), tg, xp)


def _weighted_sum(wpos, twice, xp, sdt):
    """``U2 = sum(wpos * twice)`` in ``sdt`` (:func:`sum_dtype`) from per-row doubled counts.

    ``sdt`` ``object`` (NumPy past int64): a 0-d object array holding a Python integer.
    """
    if sdt is object:
        return np.asarray(int(np.dot(as_exact(wpos), as_exact(twice))), dtype=object)
    return xp.sum(xp.astype(wpos, sdt) * xp.astype(twice, sdt))


def auc_from_u2(u2_value, P, N, xp):
    """``U2 / (2 P N)`` in the widest float, one division; NaN where a class has no weight.

    Returns ``(auc, undefined)``; works elementwise on per-segment arrays. Python
    integers (NumPy past int64) divide exactly, rounding once. Integer counts
    past their limit (:func:`pair_limit_flag`) raise on concrete values and are
    NaN under ``jit``.
    """
    if is_exact(u2_value):
        return exact_ratio(u2_value, P, N)
    over = pair_limit_flag(P, N, xp)
    undefined = (P == 0) | (N == 0)
    den = 2 * _f(P, xp) * _f(N, xp)
    value = _f(u2_value, xp) / xp.where(undefined, xp.ones_like(den), den)
    return B.nan_if(undefined | over, value, xp), undefined


def binary_auc(tg: TieGroups, cw: ClassWeights, xp):
    """Mann-Whitney AUC (ties 1/2) of sorted rows: ``(auc, undefined)``."""
    return auc_from_u2(u2(tg, cw.wp, cw.Cn, xp), cw.P, cw.N, xp)


def loo_auc(tg: TieGroups, cw: ClassWeights, xp):
    """AUC with each row left out, per sorted row (unsegmented): NaN where a class empties.

    Removing row r takes its weighted doubled placement off ``U2`` and its
    weight off its class total; counts stay in the count dtype, one division
    (Python integers on NumPy past int64, as :func:`u2`).
    """
    sdt = sum_dtype(xp, cw.Cn.dtype)
    if _past_int64(xp, sdt, cw.P, cw.N):
        sdt = object
        cw = ClassWeights(*(as_exact(v) for v in cw))
    total = u2(tg, cw.wp, cw.Cn, xp)
    w = cw.wp + cw.wn
    rm = xp.astype(w, sdt) * xp.astype(placements(tg, cw, xp), sdt)
    pos = tg.y == 1
    P1 = xp.where(pos, cw.P - w, cw.P)
    N1 = xp.where(pos, cw.N, cw.N - w)
    if sdt is object:
        return exact_ratio(total - rm, np.maximum(P1, 0), np.maximum(N1, 0))[0]
    over = pair_limit_flag(cw.P, cw.N, xp, placements=True)
    bad = (P1 <= 0) | (N1 <= 0) | over
    den = 2 * _f(P1, xp) * _f(N1, xp)
    value = _f(total - rm, xp) / xp.where(bad, xp.ones_like(den), den)
    return B.nan_if(bad, value, xp)


def _at_or_above(C, tg: TieGroups, xp):
    """Per sorted row: the weight with a score at least the row's (same segment)."""
    if tg.descending:
        first = C[0] if tg.start is None else xp.take(C, tg.start)
        return _edge_hi(C, tg, xp) - first
    last = C[C.shape[0] - 1, ...] if tg.end is None else xp.take(C, tg.end)
    return last - _edge_lo(C, tg, xp)


def ap_steps(tg: TieGroups, cw: ClassWeights, xp):
    """Average precision (step sum, ties together): ``(ap, undefined)``, per segment if any."""
    return _ap_value(_at_or_above(cw.Cp, tg, xp), _at_or_above(cw.Cn, tg, xp), cw.wp, cw.P,
                     xp, tg)


def _ap_value(tp, fp, wp, P, xp, tg=None):
    """``sum(wp * tp / (tp + fp)) / P``: the precision at each positive's score, weighted.

    ``tp``/``fp``: per row, the positive / negative weight scored at least the
    row's; ``wp`` the row's positive weight (0 for other rows). Per segment
    when ``tg`` is segmented. Returns ``(ap, undefined)``, NaN without positives.
    """
    tp, fp = _f(tp, xp), _f(fp, xp)
    den = tp + fp
    prec = tp / xp.where(den > 0, den, xp.ones_like(den))
    wp = _f(wp, xp)
    term = xp.where(wp > 0, wp * prec, xp.zeros_like(prec))
    if tg is None or tg.seg_lo is None:
        num = xp.sum(term)
    else:
        num = _segment_total(B.prefix_sum(term, xp, B.acc_float(xp)), tg, xp)
    P = _f(P, xp)
    undefined = P == 0
    return B.nan_if(undefined, num / xp.where(undefined, xp.ones_like(P), P), xp), undefined


def loo_ap(tg: TieGroups, cw: ClassWeights, xp):
    """Average precision with each row left out, per sorted row (unweighted, unsegmented).

    Removing row r changes the precision only of positives scored at or below
    it: by one negative (``tp / (tp + fp - 1)``) or one other positive
    (``(tp - 1) / (tp + fp - 1)``) fewer at or above. The counts ``tp``, ``fp``
    are integers; the precisions are summed in the widest float. NaN where no
    positive is left.
    """
    f = B.acc_float(xp)
    n = tg.y.shape[0]
    tp = _at_or_above(cw.Cp, tg, xp)         # integer counts
    fp = _at_or_above(cw.Cn, tg, xp)
    yf = _f(tg.y, xp)

    def sdiv(a, b):
        a, b = _f(a, xp), _f(b, xp)
        return xp.where(b > 0, a / xp.where(b > 0, b, xp.ones_like(b)), xp.zeros_like(b))

    prec = yf * sdiv(tp, tp + fp)
    g = yf * sdiv(tp, tp + fp - 1)          # a negative at or above removed
    h = yf * sdiv(tp - 1, tp + fp - 1)      # another positive at or above removed
    Cprec, Cg, Ch = (B.prefix_sum(v, xp, f) for v in (prec, g, h))
    P = _f(cw.P, xp)
    # the prefix sums through each row's tie group (either form of the tie groups)
    head = Cprec[n] - _edge_hi(Cprec, tg, xp)      # positives scored higher: unchanged
    neg = (head + _edge_hi(Cg, tg, xp)) / xp.where(P > 0, P, xp.ones_like(P))
    pos = (head + _edge_hi(Ch, tg, xp) - h) / xp.where(P > 1, P - 1, xp.ones_like(P))
    bad = xp.where(tg.y == 1, P <= 1, P <= 0)
    return B.nan_if(bad, xp.where(tg.y == 1, pos, neg), xp)


# --------------------------------------------------------------------------
# binary entry points: the NumPy native path behind the same function
# --------------------------------------------------------------------------

def _split_numpy(y01, s):
    """Scores of each class, each sorted keys-only (no argsort, no gathers).

    The selections are fresh arrays, so they are sorted in place (``np.sort``
    would copy them once more).
    """
    is_pos = y01.astype(bool)
    pos = s[is_pos]
    pos.sort()
    np.logical_not(is_pos, out=is_pos)
    neg = s[is_pos]
    neg.sort()
    return pos, neg


def _twice_below_sum_numpy(neg, pos):
    """``sum(left) * 2 + sum(tied)`` over positives: one binary search per positive.

    ``left``: negatives strictly below; ``tied``: negatives equal to it
    (:func:`twice_below` with unit weights). The second search (side="right")
    runs only for the positives that actually tie with a negative, which
    continuous scores rarely do; a tie shows as ``neg[left] == pos`` (clipped:
    past the end the last negative is below the positive, never equal).
    """
    left = np.searchsorted(neg, pos, side="left")
    hit = np.flatnonzero(neg.take(left, mode="clip") == pos)
    acc = _exact_sum_dtype(pos.shape[0], neg.shape[0])
    twice = 2 * int(left.sum(dtype=acc))
    if hit.size:
        twice += int((np.searchsorted(neg, pos[hit], side="right") - left[hit]).sum(
            dtype=acc))
    return twice


def _exact_sum_dtype(P, N):
    """NumPy, unit weights: int64 sums while ``2 P N`` fits, else Python integers."""
    return np.int64 if 2 * P * N <= INT64_MAX else object


def _twice_u_numpy(neg, pos):
    """``2U`` (twice the Mann-Whitney count, ties 1/2) of sorted classes, exact int.

    Heavily tied scores: one pair of binary searches per distinct positive
    score, weighted by how many positives share it (``lo + hi`` is twice the
    negatives below plus the tied ones); otherwise one search per positive.
    """
    P = pos.shape[0]
    new = np.empty(P, dtype=bool)
    new[0] = True
    np.not_equal(pos[1:], pos[:-1], out=new[1:])
    if 2 * np.count_nonzero(new) > P:       # mostly distinct: per positive
        return _twice_below_sum_numpy(neg, pos)
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, P))
    u = pos[starts]
    lo = np.searchsorted(neg, u, side="left")
    hi = np.searchsorted(neg, u, side="right")
    acc = _exact_sum_dtype(P, neg.shape[0])
    return int(((lo + hi).astype(acc) * counts).sum(dtype=acc))


def _split_keys_jax(y01, s, xp):
    """JAX, unweighted: each class's score keys sorted apart, as two key-only sorts.

    Static shapes: each class is sorted in a full-length array with the other
    class's rows set to the largest key, so the first ``P`` (``N``) entries are
    the positives' (negatives') keys in ascending order, whatever ties the
    padding makes. Returns ``(pos_keys, neg_keys, is_real_pos, P, N)`` with
    integer ``P``, ``N`` (count dtype).
    """
    import jax.numpy as jnp

    k = _order_key(s)
    top = jnp.asarray(jnp.iinfo(k.dtype).max, dtype=k.dtype)
    pos = y01 == 1
    n = k.shape[0]
    P = xp.sum(xp.astype(pos, count_dtype(xp, None)))   # unweighted: integer counts
    kp = jnp.sort(jnp.where(pos, k, top))
    kn = jnp.sort(jnp.where(pos, top, k))
    return kp, kn, xp.arange(n, dtype=P.dtype) < P, P, n - P


def _roc_auc_split_jax(y01, s, xp):
    """:func:`roc_auc` on JAX, unweighted: classes sorted apart, one binary search.

    The count of :func:`u2_split` with unit weights (``twice = k_lo + k_hi``
    per positive, the bootstrap's split layout), exact integers, one division.
    """
    kp, kn, real, P, N = _split_keys_jax(y01, s, xp)
    k_lo, k_hi = split_ranks(kn, kp, xp, N)
    # unit weights: the negatives' prefix sum at rank k is k itself
    u2_value = _weighted_sum(real, k_lo + k_hi, xp, sum_dtype(xp, k_lo.dtype))
    return auc_from_u2(u2_value, P, N, xp)


def _average_precision_split_jax(y01, s, xp):
    """:func:`average_precision` on JAX, unweighted: classes sorted apart.

    Per positive (ascending): ``tp = P - (positives before its tie group)``,
    read by a running max over the sorted positives' tie groups, and
    ``fp = N - (negatives strictly below)`` from one binary search; then
    :func:`_ap_value`, the step sum of :func:`ap_steps`.
    """
    kp, kn, real, P, N = _split_keys_jax(y01, s, xp)
    before = B.group_bounds(kp, xp)[0]        # positives before each one's tie group
    k_lo = split_ranks(kn, kp, xp, N, upper=False)[0]
    return _ap_value(P - before, N - k_lo, real, P, xp)


def roc_auc(y01, s, w, xp, bits=None):
    """Binary Mann-Whitney AUC (ties 1/2) of unsorted input: ``(auc, undefined)``.

    ``bits``: NumPy float64 scores' bit extremes (``Binary.bits``), when known.
    """
    if B.is_numpy(xp) and w is None:
        fast = one_pass(y01, s, bits)
        if fast is not None:
            P, N = one_pass_totals(fast)
            if P == 0 or N == 0:
                return np.float64(math.nan), True
            return np.float64(one_pass_u2(fast) / (2.0 * P * N)), False
        pos, neg = _split_numpy(y01, s)
        P, N = pos.shape[0], neg.shape[0]
        if P == 0 or N == 0:
            return np.float64(math.nan), True
        twice = _twice_u_numpy(neg, pos)
        return np.float64(twice / (2.0 * P * N)), False   # exact integers, one division
    if B.is_jax(xp) and w is None:
        return _on_host_cpu(_roc_auc_split_jax, roc_auc, y01, s, xp)
    tg, ws = _groups(y01, s, w, xp)
    return binary_auc(tg, class_weights(tg, ws, xp), xp)


def average_precision(y01, s, w, xp, bits=None):
    """Average precision (step sum) of unsorted input: ``(ap, undefined)``; ``bits`` as
    :func:`roc_auc`."""
    if B.is_numpy(xp) and w is None:
        fast = one_pass(y01, s, bits)
        if fast is not None:
            P = one_pass_totals(fast)[0]
            if P == 0:
                return np.float64(math.nan), True
            return np.float64(one_pass_ap(fast, P)), False
        pos, neg = _split_numpy(y01, s)
        P = pos.shape[0]
        if P == 0:
            return np.float64(math.nan), True
        # one term per distinct positive score, weighted by its tie count
        new = np.empty(P, dtype=bool)
        new[0] = True
        np.not_equal(pos[1:], pos[:-1], out=new[1:])
        starts = np.flatnonzero(new)                    # first index of each tie group
        counts = np.diff(np.append(starts, P))
        tp = P - starts                                 # positives with score >= the group's
        fp = neg.shape[0] - np.searchsorted(neg, pos[starts], side="left")
        return np.float64(np.dot(counts, tp / (tp + fp)) / P), False
    if B.is_jax(xp) and w is None:
        return _on_host_cpu(_average_precision_split_jax, average_precision, y01, s, xp)
    tg, ws = _groups(y01, s, w, xp)
    return ap_steps(tg, class_weights(tg, ws, xp), xp)


def _on_host_cpu(xla, numpy_fn, y01, s, xp):
    """JAX, unweighted ``(value, undefined)``: XLA's kernel ``xla``, or on the CPU the
    NumPy kernel ``numpy_fn`` through a host callback.

    XLA's CPU sort of 10^7 keys takes about 16 times NumPy's keys-only sort,
    so on the CPU the program hands the scores to NumPy
    (``jax.pure_callback``, ``vmap`` runs it once per batch member) and takes
    the value back in the dtypes XLA's kernel would give; the same exact
    integers and one division, so jit equals eager. Other platforms run
    ``xla`` (``jax.lax.platform_dependent``: the branch is chosen when the
    program is lowered).
    """
    import jax

    out = jax.eval_shape(lambda a, b: xla(a, b, xp), y01, s)

    def host(a, b):
        value, undefined = numpy_fn(np.asarray(a), np.asarray(b), None, np)
        return (np.asarray(value, dtype=out[0].dtype), np.asarray(undefined, dtype=out[1].dtype))

    return jax.lax.platform_dependent(
        y01, s, cpu=lambda a, b: jax.pure_callback(host, out, a, b, vmap_method="sequential"),
        default=lambda a, b: xla(a, b, xp))


def _groups(y01, s, w, xp):
    """The one sort for a binary count: payload sort on JAX, argsort elsewhere."""
    if B.is_jax(xp):
        return carry_groups(y01, s, w)
    tg = sort_groups(y01, s, xp)
    return tg, None if w is None else xp.take(w, tg.order)


# --------------------------------------------------------------------------
# classes sorted apart: the bootstrap's [negatives | positives] layout
# --------------------------------------------------------------------------

def split_ranks(neg_sorted, pos, xp, n_neg=None, *, upper=True):
    """Tie-group bounds ``[k_lo, k_hi)`` of each positive among the sorted negatives.

    ``n_neg``: only the first ``n_neg`` entries of ``neg_sorted`` are negatives
    (the rest padding no smaller than any of them); the bounds are clipped to it.
    JAX: one binary search; ``k_hi`` is then the end of the tie group found
    there (:func:`calipers._core.xp.group_bounds`, one gather), which costs far
    less than a second binary search. ``upper=False``: ``k_lo`` only (``k_hi``
    None).
    """
    idt = B.acc_int(xp)
    lo = xp.astype(xp.searchsorted(neg_sorted, pos, side="left"), idt)
    if not upper:
        hi = None
    elif B.is_jax(xp) and neg_sorted.shape[0] > 0:
        m = neg_sorted.shape[0]
        end = B.group_bounds(neg_sorted, xp)[1] + 1      # one past each tie group
        at = xp.minimum(lo, m - 1)
        hi = xp.where(xp.take(neg_sorted, at) == pos, xp.take(end, at), lo)
    else:
        hi = xp.astype(xp.searchsorted(neg_sorted, pos, side="right"), idt)
    if n_neg is not None:
        lo = xp.minimum(lo, n_neg)
        hi = None if hi is None else xp.minimum(hi, n_neg)
    return lo, hi


def u2_split(Cneg, k_lo, k_hi, wpos, xp, *, ties=True):
    """``U2`` with the classes sorted apart: ``sum wpos * (Cneg[k_lo] + Cneg[k_hi])``.

    The same count as :func:`u2` (``Cneg``: the negatives' prefix sums in
    their sorted order; the bootstrap also passes the positives' with the
    roles swapped). ``ties=False`` (no positive ties a negative, so ``k_hi ==
    k_lo``) skips one gather.
    """
    sdt = sum_dtype(xp, Cneg.dtype)
    if _past_int64(xp, sdt, lambda: np.sum(wpos, dtype=np.int64), Cneg[Cneg.shape[0] - 1]):
        sdt, Cneg = object, as_exact(Cneg)
    lo = xp.take(Cneg, k_lo)
    if not ties:
        return 2 * _weighted_sum(wpos, lo, xp, sdt)
    return _weighted_sum(wpos, lo + xp.take(Cneg, k_hi), xp, sdt)


# --------------------------------------------------------------------------
# NumPy, unweighted: one keys-only sort with the labels packed in
# --------------------------------------------------------------------------
#
# The scores' float64 bits are mapped to order-preserving signed integers:
# with m the magnitude bits, a non-negative x gives t = m - g, a negative one
# -1 - t, where g removes the common gap of unused small magnitudes (g = the
# smallest magnitude of the data). When the data hold zeros, g is one less
# than the smallest nonzero magnitude and t = max(m - g, 0), so a zero is t = 0
# and every other magnitude t >= 1: the gap between 0.0 and the data's
# smallest nonzero magnitude is removed too. When -0.0 is among them, a
# negative x gives -t instead (a symmetric map), so -0.0 and 0.0 tie with no
# copy of the scores. The keys are shifted to start at 2**51, doubled, and the
# label added as the lowest bit: the smallest packed key is 2**52, the bits of
# the smallest normal float64, so no key is a subnormal float (where a thread
# treats subnormals as zero, as XLA's CPU threads and code built with
# -ffast-math do, a float sort of subnormal keys would lose them). Every step is exact and injective, so equal
# scores give equal high bits (a tie group is a run of equal ``key >> 1``;
# within it the negatives, label 0, sort first) and different scores keep
# their order. When the doubled span fits below 0x7FF0_0000_0000_0000 the
# packed integers are the bits of non-negative finite float64 values whose
# float order is their integer order, so one float64 ``np.sort`` (the fastest
# 64-bit sort NumPy has on AVX2 / AVX-512 machines; see benchmarks/scaling.py)
# sorts them. When it does not fit (nonzero magnitudes spanning more than
# about 2**511) the callers take the classes-apart path. The passes over the
# data run in cache-sized chunks.

_CHUNK = 1 << 16
_PACK_CHUNK = 1 << 15    # packing: its four chunk-sized arrays (1 MiB) stay in a core's L2 cache
_MAG = np.int64(0x7FFF_FFFF_FFFF_FFFF)
_SPAN = 0x3FF7_FFFF_FFFF_FFFF       # largest key span whose packed keys stay below +inf's bits
_NORMAL = 1 << 51                   # the keys start here: doubled, the smallest normal float64
_INF_BITS = 0x7FF0_0000_0000_0000   # magnitude bits of inf; NaN's are larger


class Packed(NamedTuple):
    keys: Any       # int64 (n,), sorted: ((key - kmin) << 1) | label
    mmin: int       # g, the magnitude gap removed
    kmin: int       # the smallest key (before the shift) less _NORMAL
    P: int          # positives
    n: int
    zero: bool = False  # zeros present: t = max(m - g, 0)
    sym: bool = False   # -0.0 present: a negative x maps to -t (else -1 - t)


def _max_magnitude(bits) -> int:
    """The largest magnitude bits of the scores, from their :func:`_bit_extremes`."""
    smin, smax, umin, umax = bits[:4]
    return max(umax - 2**63 if smin < 0 else 0, smax if smax >= 0 else 0)


def packed_sort(y01, s, bits=None):
    """NumPy, unweighted: the packed keys of 1-D float scores, sorted; None where it does not fit.

    ``bits``: the scores' :func:`_bit_extremes` when already computed (float64
    scores only). ``y01``: integer or bool labels 0/1.
    """
    if s.dtype.kind != "f" or s.ndim != 1 or s.shape[0] == 0:
        return None
    if s.dtype != np.float64:
        s, bits = s.astype(np.float64), None          # float16 / float32: exact
    if bits is None:
        bits = _bit_extremes(s)
    smin, smax, umin, umax, nz = bits
    b = s.view(np.int64)
    any_neg, any_pos = smin < 0, smax >= 0
    mmin_neg = smin + 2**63 if any_neg else None       # negatives: int64 bits -2**63 + m
    mmax_neg = umax - 2**63 if any_neg else None
    mmin_pos = umin if any_pos else None
    mmax_pos = smax if any_pos else None
    mmin = min(v for v in (mmin_neg, mmin_pos) if v is not None)
    zero = mmin == 0
    sym = smin == -(2**63)                             # -0.0 present
    if zero:
        if nz is None:
            nz = _min_nonzero_magnitude(b)
        g = 0 if not nz else nz - 1
    else:
        g = mmin

    def t(m):
        return max(m - g, 0)

    def neg_key(m):
        return -t(m) if sym else -1 - t(m)

    kmin = (neg_key(mmax_neg) if any_neg else t(mmin_pos)) - _NORMAL
    kmax = t(mmax_pos) if any_pos else neg_key(mmin_neg)
    if kmax - kmin > _SPAN:
        return None
    n = s.shape[0]
    out = np.empty(n, dtype=np.int64)
    if native.lib is not None:
        P = native.lib.pack(np.ascontiguousarray(s), _labels_buffer(y01), out, g, kmin, zero,
                         sym)
        if P >= 0:              # (-1: a label other than 0 / 1, which callers rule out)
            out.view(np.float64).sort()
            return Packed(out, g, kmin, P, n, zero, sym)
    L = min(n, _PACK_CHUNK)
    sg = np.empty(L, dtype=np.int64) if any_neg else None
    y = np.asarray(y01)
    if y.dtype.kind not in "biu" or y.dtype == np.uint64:
        y = y.astype(np.int64)
    g_, k_ = np.int64(g), np.int64(kmin)
    P = 0
    for a in range(0, n, _PACK_CHUNK):
        e = min(a + _PACK_CHUNK, n)
        bc, oc, yc = b[a:e], out[a:e], y[a:e]
        if any_neg:
            gc = sg[:e - a]
            np.right_shift(bc, 63, out=gc)             # 0 or -1
            np.bitwise_and(bc, _MAG, out=oc)           # magnitude bits m
            oc -= g_
            if zero:
                np.maximum(oc, 0, out=oc)              # t
            np.bitwise_xor(oc, gc, out=oc)             # t, or -1 - t
            if sym:
                oc -= gc                               # t, or -t
            oc -= k_
        elif zero:                                     # no negatives: the bits are m
            np.subtract(bc, g_, out=oc)
            np.maximum(oc, 0, out=oc)                  # t
            oc -= k_
        else:
            np.subtract(bc, g_ + k_, out=oc)
        np.left_shift(oc, 1, out=oc)
        np.bitwise_or(oc, yc, out=oc)
        P += int(np.count_nonzero(yc))
    out.view(np.float64).sort()                        # the one sort (non-negative finite floats)
    return Packed(out, g, kmin, P, n, zero, sym)


def _labels_buffer(y01):
    """0/1 labels as a contiguous NumPy array of 1, 2, 4 or 8-byte integers (or bools)."""
    y = np.ascontiguousarray(y01)
    return y if y.dtype.kind in "biu" else y.astype(np.int64)


def _bit_extremes(s):
    """Signed and unsigned min / max of the float64 bits of ``s`` and the smallest nonzero
    magnitude: ``(smin, smax, umin, umax, nz)``, ``nz`` 0 when every score is a zero and
    None when not computed (the NumPy passes find it only where zeros need it)."""
    if native.lib is not None:
        smin, smax, umin, umax, nz = native.lib.extremes(np.ascontiguousarray(s))
        return smin, smax, umin, umax, 0 if nz is None else nz
    b = s.view(np.int64)
    u = s.view(np.uint64)
    lo, hi, ulo, uhi = [], [], [], []
    for a in range(0, b.shape[0], 4 * _CHUNK):
        bc, uc = b[a:a + 4 * _CHUNK], u[a:a + 4 * _CHUNK]
        lo.append(bc.min())
        hi.append(bc.max())
        ulo.append(uc.min())
        uhi.append(uc.max())
    return int(min(lo)), int(max(hi)), int(min(ulo)), int(max(uhi)), None


def _min_nonzero_magnitude(b):
    """The smallest nonzero magnitude among float64 bits ``b`` (None if all are zeros).

    ``m - 1`` as unsigned turns a zero magnitude into the largest value, so one
    minimum finds the smallest nonzero one.
    """
    L = min(b.shape[0], 4 * _CHUNK)
    buf = np.empty(L, dtype=np.int64)
    lo = []
    for a in range(0, b.shape[0], 4 * _CHUNK):
        bc = b[a:a + 4 * _CHUNK]
        mc = buf[:bc.shape[0]]
        np.bitwise_and(bc, _MAG, out=mc)
        mc -= 1
        lo.append(int(mc.view(np.uint64).min()))
    m = min(lo)
    return None if m == 2**64 - 1 else m + 1


def _unpack(keys, pk: Packed, out=None):
    """Scores (float64) of packed keys: the inverse of :func:`packed_sort`'s map, exact.

    ``out``: a float64 array of the keys' shape to write the scores into.
    """
    k = keys >> 1
    k += np.int64(pk.kmin)
    sg = k >> 63
    k ^= sg                                             # t
    if pk.sym:
        k -= sg
    z = (k == 0) if pk.zero else None
    k += np.int64(pk.mmin)                              # m
    if z is not None:
        k[z] = 0
    sg <<= 63
    if out is None:
        k |= sg
        return k.view(np.float64)
    np.bitwise_or(k, sg, out=out.view(np.int64))
    return out


def _mixed_ties(pk: Packed, mixed):
    """``sum n0 * n1`` over tie groups holding both classes (``mixed``: their turning positions)."""
    if mixed.size == 0:
        return 0
    keys = pk.keys
    k0 = keys[mixed]                                    # the group's label-0 key (even)
    lo = np.searchsorted(keys, k0, side="left")
    hi = np.searchsorted(keys, k0 + 1, side="right")
    n0 = mixed + 1 - lo
    n1 = hi - mixed - 1
    return int(np.dot(n0.astype(object) if pk.n > 3 * 10**9 else n0, n1))


def packed_roc_auc(pk: Packed):
    """``2U`` (exact int) from sorted packed keys: ``2 S' - T``.

    ``S'`` = sum over positives of the negatives sorted before it (strictly
    lower scores and the tied negatives, which sort first in their group) =
    sum of positive positions - P(P-1)/2; ``T`` = sum over tie groups of
    negatives x positives, so ``2 S' - T`` counts each tied pair once.
    """
    if native.lib is not None:
        return native.lib.auc_packed(pk.keys)
    S, mixed = _positions_and_mixed(pk)
    P = pk.P
    return 2 * (S - P * (P - 1) // 2) - _mixed_ties(pk, mixed)


_GROUP_CHUNK = 1 << 15  # the tie-group pass (:func:`_group_starts`): int32 running counts
_POS_CHUNK = 1 << 16    # in-chunk position sums below 2**32: exact float64 sums


def _positions_and_mixed(pk: Packed):
    """The sum of the positives' sorted positions (Python int) and the positions i where a
    tie group turns from negatives to positives (``keys[i] ^ keys[i + 1] == 1``).

    Long runs of equal keys (:func:`_long_runs`) are counted per run; the rest
    in one chunked pass. Per chunk of ``_POS_CHUNK`` rows the labels, as
    float64, times the columns (in-chunk position, 1) give the in-chunk
    position sum and the positives in one matrix-vector product: every term
    and partial sum is an integer below 2**32, so the float64 sums are exact
    whatever the order of summation; chunk offsets are added in Python
    integers. Turning positions are looked for only in chunks whose smallest
    adjacent xor is at most 1 (a tie).
    """
    keys, n = pk.keys, pk.n
    starts, lo = _long_runs(keys)
    S = 0
    mixed = []
    if lo:
        ends = np.append(starts[1:], lo)
        odd = (keys[starts] & 1) == 1
        first, last = starts[odd].astype(object), ends[odd].astype(object)
        S = int(np.sum((first + last - 1) * (last - first))) // 2
        inner = ends < n                                # runs with a key after them
        turn = (keys[starts[inner]] ^ keys[ends[inner]]) == 1
        mixed.append(ends[inner][turn] - 1)
    C = _POS_CHUNK
    L = min(C, n)
    cols = np.ones((L, 2), dtype=np.float64)
    cols[:, 0] = np.arange(L)
    labf = np.empty(L, dtype=np.float64)
    d = np.empty(L, dtype=np.int64)
    hit = np.empty(L, dtype=bool)
    for a in range(lo, n, C):
        e = min(a + C, n)
        m = e - a
        lf = labf[:m]
        np.bitwise_and(keys[a:e], 1, out=lf, casting="unsafe")  # the labels, 0.0 / 1.0 exactly
        r = lf @ cols[:m]                                # (position sum, positives)
        c = int(r[1])
        if c:
            S += int(r[0]) + a * c
        e1 = min(e + 1, n)
        if e1 - a > 1:
            dc = d[:e1 - a - 1]
            np.bitwise_xor(keys[a + 1:e1], keys[a:e1 - 1], out=dc)
            if int(dc.min()) <= 1:                       # a tie somewhere in the chunk
                hc = hit[:e1 - a - 1]
                np.equal(dc, 1, out=hc)
                mx = np.flatnonzero(hc)
                if mx.size:
                    mixed.append(mx + a)
    return S, (np.concatenate(mixed) if mixed else np.zeros(0, np.int64))


# Heavily tied scores have few distinct packed keys (at most two per tie group,
# the negatives' and the positives'); walking from one run of equal keys to the
# next by binary search then costs O(runs log n) instead of a pass over n rows.
_RUN_SAMPLES = 4096     # evenly spaced sorted keys that decide whether to walk
_RUN_BUDGET = 4096      # runs walked at most (and one per 2048 rows); the passes take the rest


def _long_runs(keys):
    """Leading runs of equal sorted packed keys, walked by binary search when runs are long.

    A strided sample of ``_RUN_SAMPLES`` sorted keys decides: when at most
    1/8 of adjacent samples differ, runs are walked (each one binary search),
    at most ``_RUN_BUDGET`` of them and one per 2048 rows (a walked run costs
    about what a pass over a thousand rows does). Returns ``(starts, lo)``: the first
    positions of the runs that cover ``[0, lo)`` (int64, ascending; every key
    in ``[starts[r], starts[r + 1])`` is the same), ``lo == n`` when the walk
    reached the end, ``lo == 0`` (no runs) when it was not taken.
    """
    n = keys.shape[0]
    if n < 8 * _RUN_SAMPLES:
        return np.zeros(0, np.int64), 0
    ks = keys[::n // _RUN_SAMPLES]
    if 8 * int(np.count_nonzero(ks[1:] != ks[:-1])) > ks.shape[0]:
        return np.zeros(0, np.int64), 0
    out, i = [], 0
    find = keys.searchsorted
    budget = min(_RUN_BUDGET, n >> 11)
    while i < n and len(out) < budget:
        out.append(i)
        i = int(find(keys[i], side="right"))
    return np.array(out, dtype=np.int64), i


def _run_groups(keys, starts, lo):
    """Tie groups among walked runs: ``(first positions, positives before each, positives
    in [0, lo))``; a run opens a group where its score differs from the run before."""
    rk = keys[starts]
    ends = np.append(starts[1:], lo)
    pos_len = np.where((rk & 1) == 1, ends - starts, 0)
    before = np.cumsum(pos_len) - pos_len
    new = np.empty(starts.shape[0], dtype=bool)
    new[0] = True
    np.greater(rk[1:] ^ rk[:-1], 1, out=new[1:])
    return starts[new], before[new], int(pos_len.sum())


def packed_average_precision(pk: Packed):
    """Average precision (step sum, ties together) from sorted packed keys; float64.

    Without ties (checked in the same pass) each positive is its own
    threshold: the one of rank ``j`` among the positives, at sorted position
    ``i``, adds ``(P - j) / (n - i)`` (positives, rows at or above). With ties
    the sum runs over the tie groups holding a positive:
    ``n1 * tp / (tp + fp)`` at the group's threshold.
    """
    keys, P, n = pk.keys, pk.P, pk.n
    if native.lib is not None:         # the same terms, summed in blocks (compensated)
        return native.lib.ap_packed(keys, P) / P
    runs = _long_runs(keys)
    if runs[1] and runs[0].shape[0] < runs[1]:          # a run longer than one row: ties
        return _packed_ap_groups(pk, runs)
    L = min(_CHUNK, n)
    lab = np.empty(L, dtype=np.int8)
    d = np.empty(L, dtype=np.int64)
    ranks = np.arange(L, dtype=np.float64)
    num, den = np.empty(L, dtype=np.float64), np.empty(L, dtype=np.float64)
    total, seen = 0.0, 0
    for a in range(0, n, _CHUNK):
        e = min(a + _CHUNK, n)
        e1 = min(e + 1, n)
        if e1 - a > 1:
            # adjacent sorted keys (non-negative) share a score where their xor is 0 or 1
            dc = d[:e1 - a - 1]
            np.bitwise_xor(keys[a + 1:e1], keys[a:e1 - 1], out=dc)
            if int(dc.min()) <= 1:
                return _packed_ap_groups(pk)
        lc = lab[:e - a]
        np.bitwise_and(keys[a:e], 1, out=lc, casting="unsafe")
        i = np.flatnonzero(lc.view(bool))
        c = i.shape[0]
        if c:
            # (P - j) / (n - position) for the positives of ranks j = seen .. seen + c - 1:
            # exact integers in float64, one rounding in the division
            nc, dn = num[:c], den[:c]
            np.subtract(float(P - seen), ranks[:c], out=nc)
            np.subtract(n - a, i, out=dn, casting="unsafe")
            np.divide(nc, dn, out=nc)
            total += float(np.sum(nc))
        seen += c
    return total / P


def _group_starts(pk: Packed, runs=None):
    """Tie groups of sorted packed keys: ``(first position, positives before it)`` per group.

    Walked runs (:func:`_long_runs`; ``runs`` when already found) give the
    groups of ``[0, lo)``; one chunked pass the rest: a group starts where a
    key's high bits differ from the previous key's (``xor > 1``); the positives
    before it are read off an int32 running count of the chunk at the starts
    only.
    """
    keys, n = pk.keys, pk.n
    starts, lo = _long_runs(keys) if runs is None else runs
    out_st, out_bf = [], []
    seen = 0
    if lo:
        st, bf, seen = _run_groups(keys, starts, lo)
        out_st.append(st)
        out_bf.append(bf)
    C = _GROUP_CHUNK
    L = min(C, n)
    lab = np.empty(L, dtype=np.int32)
    d = np.empty(L, dtype=np.int64)
    new = np.empty(L, dtype=bool)
    for a in range(lo, n, C):
        e = min(a + C, n)
        m = e - a
        lc, dc, nc = lab[:m], d[:m], new[:m]
        np.bitwise_and(keys[a:e], 1, out=lc, casting="unsafe")
        if a == 0:
            nc[0] = True
        else:
            nc[0] = (int(keys[a - 1]) ^ int(keys[a])) > 1
        np.bitwise_xor(keys[a + 1:e], keys[a:e - 1], out=dc[1:])
        np.greater(dc[1:], 1, out=nc[1:])
        st = np.flatnonzero(nc)
        cum = np.cumsum(lc, dtype=np.int32)
        if st.size:
            b = cum[st] - lc[st]
            out_st.append(st + a)
            out_bf.append(b.astype(np.int64) + seen)
        seen += int(cum[-1])
    return np.concatenate(out_st), np.concatenate(out_bf)


def _packed_ap_groups(pk: Packed, runs=None):
    P, N = pk.P, pk.n - pk.P
    st, bf = _group_starts(pk, runs)
    n1 = np.diff(np.append(bf, P))
    has = n1 > 0
    st, bf, n1 = st[has], bf[has], n1[has]
    tp = (P - bf).astype(np.float64)
    fp = (N - (st - bf)).astype(np.float64)
    return float(np.dot(n1.astype(np.float64), tp / (tp + fp))) / P


def packed_curve_points(pk: Packed):
    """Per distinct score, ascending: ``(score, positives at or above, negatives at or above)``.

    Walked runs (:func:`_long_runs`) give the groups of ``[0, lo)``; one
    chunked pass over the rest of the sorted keys: a row starts a tie group
    where its key's high bits differ from the previous row's (``xor > 1``); at
    each group start the score is unpacked and the counts read from the
    running positive count. Returns float64 arrays (the counts are integers
    below 2**53, exact).
    """
    keys, P, n = pk.keys, pk.P, pk.n
    starts, lo = _long_runs(keys)
    G, seen = 0, 0
    if lo == n:                                          # every group from the walk
        st, bf, _ = _run_groups(keys, starts, lo)
        tp = (P - bf).astype(np.float64)
        return _unpack(keys[st], pk), tp, (n - st) - tp
    thr = np.empty(n, dtype=np.float64)
    tp = np.empty(n, dtype=np.float64)
    fp = np.empty(n, dtype=np.float64)
    if lo:
        st, bf, seen = _run_groups(keys, starts, lo)
        G = st.shape[0]
        tp[:G] = P - bf
        fp[:G] = (n - st) - tp[:G]
        thr[:G] = _unpack(keys[st], pk)
    L = min(_CHUNK, n)
    lab = np.empty(L, dtype=np.int64)
    d = np.empty(L, dtype=np.int64)
    ar = np.arange(L, dtype=np.int64)
    for a in range(lo, n, _CHUNK):
        e = min(a + _CHUNK, n)
        m = e - a
        kc, lc, dc = keys[a:e], lab[:m], d[:m]
        np.bitwise_and(kc, 1, out=lc)
        dc[0] = 2 if a == 0 else int(keys[a - 1]) ^ int(kc[0])
        np.bitwise_xor(kc[1:], kc[:-1], out=dc[1:])
        cum = np.cumsum(lc)
        c = int(cum[-1])
        cum -= lc
        np.subtract(P - seen, cum, out=cum)          # positives at or above each row
        above = (n - a) - ar[:m]                     # rows at or above each row
        if bool((dc > 1).all()):                     # no ties in this chunk
            g = m
            tp[G:G + g] = cum
            fp[G:G + g] = above - cum
            thr[G:G + g] = _unpack(kc, pk)
        else:
            st = np.flatnonzero(dc > 1)
            g = st.shape[0]
            ct = cum[st]
            tp[G:G + g] = ct
            fp[G:G + g] = above[st] - ct
            thr[G:G + g] = _unpack(kc[st], pk)
        G += g
        seen += c
    return thr[:G], tp[:G], fp[:G]


def packed_roc_curve(pk: Packed):
    """Untied scores, both classes present: ``roc_curve``'s ``(fpr, tpr, thresholds)`` with
    ``drop_intermediate``; None when any two scores tie.

    Without ties every row is its own threshold and each step of the curve is
    one row: right for a negative, up for a positive. A point is a vertex
    (kept by ``drop_intermediate``: the steps before and after it are not
    collinear) exactly where the label changes from the row below it, and the
    lowest threshold is always kept. The sorted keys are read from the top
    chunk down, so the vertices come in the returned (descending) order and
    are written once, after the first point ``(0, 0, inf)``, into arrays
    shrunk in place at the end. The rates are ``fps / N`` and ``tps / P``
    with the counts exact in float64, as the general path divides them.
    """
    keys, P, n = pk.keys, pk.P, pk.n
    fN, fP = float(n - P), float(P)
    fpr = np.empty(n + 1, dtype=np.float64)
    tpr = np.empty(n + 1, dtype=np.float64)
    thr = np.empty(n + 1, dtype=np.float64)
    if native.lib is not None:
        G = native.lib.roc_packed(keys, P, fpr, tpr, thr, pk.kmin, pk.mmin, pk.zero, pk.sym)
        if G < 0:
            return None
        for x in (fpr, tpr, thr):
            x.resize(G, refcheck=False)
        return fpr, tpr, thr
    fpr[0] = tpr[0] = 0.0
    thr[0] = math.inf
    L = min(_CHUNK, n)
    lab = np.empty(L, dtype=np.int64)
    d = np.empty(L, dtype=np.int64)
    keep = np.empty(L, dtype=bool)
    G, above = 1, 0                                     # points written; positives in [e, n)
    for e in range(n, 0, -_CHUNK):
        a = max(e - _CHUNK, 0)
        m = e - a
        kc, lc, dc, kp = keys[a:e], lab[:m], d[:m], keep[:m]
        np.bitwise_and(kc, 1, out=lc)
        dc[0] = 2 if a == 0 else int(keys[a - 1]) ^ int(kc[0])
        np.bitwise_xor(kc[1:], kc[:-1], out=dc[1:])
        if not bool((dc > 1).all()):
            return None
        kp[0] = a == 0 or (int(keys[a - 1]) & 1) != int(lc[0])
        np.not_equal(lc[1:], lc[:-1], out=kp[1:])
        cum = np.cumsum(lc)
        c = int(cum[-1])
        st = np.flatnonzero(kp)[::-1]                   # descending scores
        g = st.shape[0]
        tp = (above + c) - (cum[st] - lc[st])           # positives at or above
        np.divide(tp, fP, out=tpr[G:G + g])
        tp += st
        np.subtract(n - a, tp, out=tp)                  # negatives at or above
        np.divide(tp, fN, out=fpr[G:G + g])
        _unpack(kc[st], pk, out=thr[G:G + g])
        G += g
        above += c
    for x in (fpr, tpr, thr):
        x.resize(G, refcheck=False)                     # in place: nothing else refers to them
    return fpr, tpr, thr


# --------------------------------------------------------------------------
# NumPy, unweighted: the one pass of the scores (a score table or a packed sort)
# --------------------------------------------------------------------------
#
# Scores with few distinct values (rounded probabilities, ratings, bucketed
# model outputs) need no sort of the rows: their score table
# (:func:`calipers._kernels.ranges.counted_table`, one compiled pass) gives the
# negatives and positives at each distinct score, and AUC, AP and the curve
# points are sums over the sorted distinct scores (the table functions of
# :mod:`calipers._kernels.ranges`). Other scores take the packed sort.

_TABLE_MIN_N = 1 << 15          # smaller inputs: the sort costs little, no table is tried


def one_pass(y01, s, bits=None):
    """NumPy, unweighted: the score table ``(scores, pos, neg)`` of heavily tied scores
    (:func:`calipers._kernels.ranges.counted_table`), else the sorted packed keys
    (:func:`packed_sort`, a :class:`Packed`); None where neither applies. ``bits`` as
    :func:`packed_sort`."""
    if s.shape[0] >= _TABLE_MIN_N:
        table = ranges.counted_table(s, y01)
        if table is not None:
            return table
    return packed_sort(y01, s, bits)


def one_pass_totals(fast):
    """``(P, N)`` of :func:`one_pass`'s result, Python integers."""
    return (fast.P, fast.n - fast.P) if isinstance(fast, Packed) else ranges.table_totals(fast)


def one_pass_u2(fast):
    """``2U`` (exact int) of :func:`one_pass`'s result."""
    return packed_roc_auc(fast) if isinstance(fast, Packed) else ranges.table_u2(fast)[0]


def one_pass_ap(fast, P):
    """Average precision of :func:`one_pass`'s result with ``P > 0`` positives; float64.

    A score table's terms ``n1 * tp / (tp + fp)`` are summed exactly and divided
    once (:func:`calipers._kernels.ranges.table_precision_sum`).
    """
    if isinstance(fast, Packed):
        return packed_average_precision(fast)
    return ranges.ratio_of_sum(ranges.table_precision_sum(fast, 0, 0), P)


def curve_points(fast):
    """Per distinct score, ascending: ``(score, positives at or above, negatives at or
    above)`` of :func:`one_pass`'s result (:func:`packed_curve_points`); float64."""
    if isinstance(fast, Packed):
        return packed_curve_points(fast)
    s, pos, neg = fast
    tp = np.cumsum(pos[::-1])[::-1]               # at or above each score
    fp = np.cumsum(neg[::-1])[::-1]
    return s, tp.astype(np.float64), fp.astype(np.float64)
