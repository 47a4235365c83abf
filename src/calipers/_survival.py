"""Survival concordance: Harrell's C, Uno's C and the cumulative/dynamic AUC(t).

Direction: a **higher risk score means an earlier event** (scikit-survival's
convention). To score predicted survival times (higher = lives longer, the
convention of lifelines' ``concordance_index``), pass their negation;
``C(-risk) = 1 - C(risk)`` exactly, ties included.

Comparable pairs (right censoring): row ``i`` had the event, and either
``T_i < T_j``, or ``T_i == T_j`` with ``j`` censored (at a tied time an event
is taken to precede a censoring). Two events at the same time are not a
pair. Among comparable pairs, ``risk_i > risk_j`` is concordant, ``<``
discordant, ``==`` a tie counting 1/2. This is the rule of R's
``survival::concordance``, lifelines and scikit-survival.

Algorithm (O(n log n) on NumPy, O(n log^2 n) elsewhere, memory O(n), no
Python loop over rows, the same array-API code on every backend and under
``jit``): sort the rows by time ascending, events before censorings at a
tied time, and risk descending inside a block of tied events. Then the rows
``j`` comparable to an event ``i`` are exactly those after the end of ``i``'s
block of tied events, and counting concordant pairs is counting
(position later, risk lower) pairs, a weighted inversion count. It is done by
bottom-up merge counting: at level ``l`` the rows form blocks of ``2^(l+1)``
consecutive positions, each sorted by risk (one stable sort per level of the
key ``(block, risk rank)``; the previous level left both halves sorted, so on
NumPy the sort is a merge, O(n)); each row of a block's left half then counts,
by prefix sums of right-half weight, the right-half rows before its tie group
of risk (lower risk) and inside it (equal risk). Every pair (i, j) with ``i``
before ``j`` is counted at exactly one level, the one where they fall in the
two halves of one block. Pairs inside a block of tied events (counted by the merge but
not comparable) are removed in closed form per block, since risk is
descending there.

Uno's C and AUC(t) weight rows by the inverse of the Kaplan-Meier estimate of
the censoring distribution ``G`` (censoring treated as the event; at a tied
time, events leave the risk set before censorings), evaluated at the row's
time, as scikit-survival's ``CensoringDistributionEstimator`` does. AUC(t) is
then a weighted Mann-Whitney statistic computed by the AUC kernel of
:mod:`calipers._kernels.rankstats` (the one behind :func:`calipers.roc_auc_score`).

On NumPy the pair counting runs :func:`_pair_counts_numpy`: pairs inside
aligned blocks of 32 rows are compared directly, and each merge level above
is two binary searches into the sorted right halves plus one stable sort of
sorted runs, instead of the generic kernel's dozen array-API calls per level
(the per-call cost that dominated bootstrap replicates of a few hundred rows).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np

from ._core import xp as B
from ._kernels import rankstats as R
from ._core import validation as V
from ._core.compile import compiled
from ._core.exceptions import UndefinedMetricWarning
from ._core.types import ArrayLike

__all__ = [
    "ConcordanceResult",
    "CumulativeDynamicAUC",
    "concordance_index_censored",
    "concordance_index_ipcw",
    "cumulative_dynamic_auc",
]


class ConcordanceResult(NamedTuple):
    """Concordance index and its pair counts (a JAX pytree).

    Attributes
    ----------
    cindex : float
        The concordance index; NaN when there is no comparable pair.
    concordant, discordant, tied_risk : int (float with float weights)
        Comparable pairs with higher / lower / equal risk for the row with
        the earlier event.
    tied_time : int (float with float weights)
        Comparable pairs (event, censoring) at the same time.
    """

    cindex: Any
    concordant: Any
    discordant: Any
    tied_risk: Any
    tied_time: Any


class CumulativeDynamicAUC(NamedTuple):
    """Time-dependent AUC at each time, and its summary (a JAX pytree).

    Attributes
    ----------
    auc : float array of shape (m,)
        Cumulative/dynamic AUC(t) at each requested time.
    mean_auc : float
        ``sum_k AUC(t_k) (S(t_{k-1}) - S(t_k)) / (1 - S(t_m))``, ``S`` the
        Kaplan-Meier survival of the test data and ``S(t_0) = 1``
        (Lambert & Chevret 2016; scikit-survival's ``mean_auc``); ``auc[0]``
        when ``m == 1``.
    """

    auc: Any
    mean_auc: Any


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------

class _Surv(NamedTuple):
    xp: Any
    e: Any        # int 0/1
    t: Any        # times
    r: Any        # risk scores
    invalid: Any  # scalar bool (jit)


def _prepare(event, time, risk, *, risk_2d=False, names=("event", "time", "risk")):
    xp, (event, time, risk) = B.as_arrays(event, time, risk)
    en, tn, rn = names
    B.check_1d(en, event)
    B.check_1d(tn, time)
    if risk is not None:
        if risk_2d and risk.ndim == 2:
            if risk.shape[0] != time.shape[0]:
                raise ValueError(f"{rn} has {risk.shape[0]} rows but {tn} has {time.shape[0]}; "
                                 "they must match")
        else:
            B.check_1d(rn, risk)
            B.check_same_length(**{en: event, tn: time, rn: risk})
        V.check_real_values(rn, risk, xp, "numeric scores")
        V.check_finite(rn, risk, xp)
    B.check_same_length(**{en: event, tn: time})
    B.check_nonempty(tn, time)
    V.check_real_values(tn, time, xp, "numeric times")
    V.check_finite(tn, time, xp)
    e, invalid = V.binary_labels(event, xp, name=en,
                                 indicator="1 = event observed, 0 = censored")
    for name, x in ((tn, time), (rn, risk)):
        if x is not None and B.is_traced(x) and xp.isdtype(x.dtype, "real floating"):
            invalid = invalid | ~xp.all(xp.isfinite(x))
    return _Surv(xp, e, time, risk, invalid)


def _to_ns(x, xp):
    """``x`` as an array of ``xp`` (lists and NumPy arrays promoted: the namespace rule)."""
    _, (x,) = B.as_arrays(x)
    if B.array_api_compat.array_namespace(x) is not xp:
        if not B.is_numpy(B.array_api_compat.array_namespace(x)):
            raise ValueError("arrays from two different non-NumPy namespaces were mixed")
        x = xp.asarray(x)
    return x


# --------------------------------------------------------------------------
# the pair-counting kernel
# --------------------------------------------------------------------------

class _Pairs(NamedTuple):
    concordant: Any
    tied_risk: Any
    comparable: Any
    tied_time: Any


def _gid(new, xp):
    """Group id per sorted row from a 'new group starts here' mask (monotone ints)."""
    return B.prefix_sum(xp.astype(new, B.acc_int(xp)), xp, B.acc_int(xp))[1:]


def _pair_counts(t, e, r, a_list, b, xp):
    """Weighted comparable-pair counts, one result per weight vector in ``a_list``.

    A comparable pair (i, j) counts ``a[i] * b[j]``; ``a`` must be zero on
    censored rows. Returns a list of :class:`_Pairs` (sums over pairs of
    ``a_i b_j`` for risk_j < risk_i, risk_j == risk_i, all comparable pairs,
    and (event, censoring) pairs at a tied time).
    """
    n = t.shape[0]
    if B.is_numpy(xp):
        if _past_int64(a_list, b):
            # the integer pair sums could pass int64: count in Python integers (exact)
            a_list = [R.as_exact(a) if a.dtype.kind in "iu" else a for a in a_list]
            b = R.as_exact(b)
            return [_Pairs(*(np.asarray(v, dtype=object) if a.dtype == object else v
                             for v in p))
                    for a, p in zip(a_list, _pair_counts_numpy(t, e, r, a_list, b))]
        return _pair_counts_numpy(t, e, r, a_list, b)
    idt = B.acc_int(xp)
    # the merge keys block * n + rank stay below n * n, and the pair counts below n * n / 2
    limit = math.isqrt(int(xp.iinfo(idt).max))
    if n > limit:
        raise ValueError(f"{n} rows are too many for {xp.iinfo(idt).bits}-bit integer keys "
                         f"(at most {limit} rows); enable 64-bit JAX (jax_enable_x64)")
    dev = B.device(t)
    # time ascending; events first at a tied time; risk descending inside a block
    o = xp.argsort(r, descending=True, stable=True)
    o = xp.take(o, xp.argsort(xp.take(e, o), descending=True, stable=True))
    o = xp.take(o, xp.argsort(xp.take(t, o), stable=True))
    ts, es, rs = xp.take(t, o), xp.take(e, o), xp.take(r, o)
    bs = xp.take(b, o)
    as_ = [xp.take(a, o) for a in a_list]
    # risk ranks: equal risks share a rank, order preserved
    rk = xp.astype(xp.searchsorted(xp.sort(r), rs, side="left"), idt)
    pos = xp.arange(n, dtype=idt, device=dev)
    nn = xp.asarray(n, dtype=idt, device=dev)

    less = [xp.zeros((), dtype=a.dtype, device=dev) for a in as_]
    equal = [xp.zeros((), dtype=a.dtype, device=dev) for a in as_]
    perm = pos
    h = 1
    while h < n:
        # merged blocks of 2h positions, sorted by risk rank; the previous order holds each
        # block's two halves sorted, so on NumPy the stable sort is a merge
        key = (pos // (2 * h)) * nn + rk
        perm = xp.take(perm, xp.argsort(xp.take(key, perm), stable=True))
        ks = xp.take(key, perm)
        right = ((perm // h) % 2) == 1
        bR = xp.where(right, xp.take(bs, perm), xp.zeros_like(bs))
        CbR = B.prefix_sum(bR, xp, bs.dtype)
        g_lo, g_hi = B.group_bounds(ks, xp)       # rows of the same block and risk rank
        start = xp.minimum((ks // nn) * (2 * h), nn)
        c_lo = xp.take(CbR, g_lo)
        # each left-half row: right-half weight with lower risk, and with equal risk
        n_less = xp.where(right, 0, c_lo - xp.take(CbR, start))
        n_eq = xp.where(right, 0, xp.take(CbR, g_hi + 1) - c_lo)
        for k, a in enumerate(as_):
            ap = xp.take(a, perm)
            less[k] = less[k] + xp.sum(ap * xp.astype(n_less, ap.dtype))
            equal[k] = equal[k] + xp.sum(ap * xp.astype(n_eq, ap.dtype))
        h *= 2

    # blocks: (time, event) and (time, event, risk); time groups
    one = xp.ones(1, dtype=xp.bool, device=dev)
    if n > 1:
        t_new = xp.concat([one, ts[1:] != ts[:-1]])
        te_new = t_new | xp.concat([one, es[1:] != es[:-1]])
        ter_new = te_new | xp.concat([one, rs[1:] != rs[:-1]])
    else:
        t_new = te_new = ter_new = one
    lo_t, hi_t = B.group_bounds(_gid(t_new, xp), xp)
    lo_te, hi_te = B.group_bounds(_gid(te_new, xp), xp)
    lo_ter, _ = B.group_bounds(_gid(ter_new, xp), xp)
    Cb_time = B.prefix_sum(bs, xp, bs.dtype)
    Btot = Cb_time[n]
    later = Btot - xp.take(Cb_time, hi_te + 1)                         # rows after i's block
    cens_tied = xp.take(Cb_time, hi_t + 1) - xp.take(Cb_time, hi_te + 1)  # censored at T_i
    out = []
    for k, a in enumerate(as_):
        Ca = B.prefix_sum(a, xp, a.dtype)
        # a-weight before j inside j's block of tied events (a is 0 on censored rows)
        blk_all = xp.take(Ca, pos) - xp.take(Ca, lo_te)
        blk_tie = xp.take(Ca, pos) - xp.take(Ca, lo_ter)
        bsk = xp.astype(bs, a.dtype)
        corr_all = xp.sum(bsk * blk_all)
        corr_tie = xp.sum(bsk * blk_tie)
        out.append(_Pairs(less[k] - (corr_all - corr_tie), equal[k] - corr_tie,
                          xp.sum(a * xp.astype(later, a.dtype)),
                          xp.sum(a * xp.astype(cens_tied, a.dtype))))
    return out


def _past_int64(a_list, b) -> bool:
    """NumPy: could an integer pair sum ``sum a_i b_j`` (at most ``sum(a) * sum(b)``) pass int64?"""
    if b.dtype.kind not in "iu":
        return False
    tb = int(np.sum(b, dtype=np.int64))
    return any(a.dtype.kind in "iu" and int(np.sum(a, dtype=np.int64)) * tb > R.INT64_MAX
               for a in a_list)


def _pair_limit_flag(a, b, xp):
    """Integer pair sums on JAX and other backends: ``sum(a) * sum(b)`` must fit the count dtype.

    Every pair count (concordant, tied, comparable; their partial sums wrap
    modulo the integer width, so only the final values matter) is at most
    ``sum(a) * sum(b)``: int64 up to ``2**63 - 1``, int32 (JAX without x64)
    up to ``2**31 - 1``. NumPy counts past int64 in Python integers (no
    limit); float weights have none. ``ValueError`` naming ``sample_weight``
    on concrete values, the flag (NaN C-index) under ``jit``.
    """
    if B.is_numpy(xp) or not xp.isdtype(a.dtype, "integral"):
        return xp.asarray(False)
    top = int(xp.iinfo(a.dtype).max)
    A, Bt = xp.sum(a), xp.sum(b)
    bad = ((Bt > 0) & (A > top // xp.maximum(Bt, xp.ones_like(Bt)))) | (A < 0) | (Bt < 0)
    bits = 64 if top > 2**31 else 32
    if not B.is_traced(bad) and bool(bad):
        Ai = int(np.sum(np.asarray(B.to_numpy(a)).astype(object)))
        Bi = int(np.sum(np.asarray(B.to_numpy(b)).astype(object)))
        raise ValueError(
            f"sample_weight: the weighted pair counts can reach sum(w * event) * sum(w) = "
            f"{Ai} * {Bi} = {Ai * Bi}, more than 2**{bits - 1} - 1 = {top}, the int{bits} "
            "limit of the integer pair counts; NumPy inputs count past it exactly (in Python "
            "integers): pass NumPy arrays, float weights or smaller integer weights"
            + ("" if bits == 64 else ", or enable jax_enable_x64"))
    return V.fail_if(bad, "sample_weight",
                     f"must keep sum(w * event) * sum(w), the largest weighted pair count, at "
                     f"most 2**{bits - 1} - 1 = {top}, the int{bits} limit", xp)


def _group_bounds_np(new):
    """First and last sorted index of each row's group, from a 'group starts here' mask."""
    starts = np.flatnonzero(new)
    gid = np.cumsum(new) - 1
    ends = np.append(starts[1:], new.shape[0]) - 1
    return starts[gid], ends[gid]


def _cum0(x):
    """Prefix sums with a leading zero, in ``x``'s dtype (exact for integers)."""
    out = np.zeros(x.shape[0] + 1, dtype=x.dtype)
    np.cumsum(x, out=out[1:])
    return out


_BASE = 32         # block size below which pairs are counted densely
_BASE_CHUNK = 2048  # blocks per dense chunk: about 2M pairs, bounded memory
_AFTER = np.triu(np.ones((_BASE, _BASE), dtype=bool), 1)   # [i, j]: j after i in a block


def _dense_base(rks, as_, bs, unit):
    """Pair counts inside aligned blocks of ``_BASE`` positions, by direct comparison.

    Replaces the first five merge levels (each a dozen NumPy calls) by one
    broadcast comparison per chunk; ``O(n * _BASE)`` work. Returns the
    ``(less, equal)`` lists of :func:`_pair_counts_numpy`.
    """
    n = rks.shape[0]
    nb = -(-n // _BASE)
    pad = nb * _BASE - n
    # padding rows: rank n (above every real rank, so never lower or equal), weight 0
    rkp = np.concatenate([rks, np.full(pad, n, dtype=rks.dtype)])
    bp = np.concatenate([bs, np.zeros(pad, dtype=bs.dtype)])
    ap = [np.concatenate([a, np.zeros(pad, dtype=a.dtype)]) for a in as_]
    after = _AFTER
    less = [np.zeros((), dtype=a.dtype) for a in as_]
    equal = [np.zeros((), dtype=a.dtype) for a in as_]
    for c0 in range(0, nb * _BASE, _BASE_CHUNK * _BASE):
        sl = slice(c0, c0 + _BASE_CHUNK * _BASE)
        R = rkp[sl].reshape(-1, _BASE)
        lt = (R[:, None, :] < R[:, :, None]) & after   # [block, i, j]: risk_j < risk_i
        eq = (R[:, None, :] == R[:, :, None]) & after
        if unit:
            n_lt, n_eq = lt.sum(axis=2), eq.sum(axis=2)
        else:
            bb = bp[sl].reshape(-1, 1, _BASE)
            n_lt, n_eq = (lt * bb).sum(axis=2), (eq * bb).sum(axis=2)
        for k, a in enumerate(ap):
            ab = a[sl].reshape(-1, _BASE)
            less[k] = less[k] + np.sum(ab * n_lt.astype(a.dtype))
            equal[k] = equal[k] + np.sum(ab * n_eq.astype(a.dtype))
    return less, equal


def _pair_counts_numpy(t, e, r, a_list, b):
    """:func:`_pair_counts` on NumPy: the same merge counting, by binary search.

    The generic kernel pays about 20 array-API calls per level (argsort of a
    combined key, group bounds, prefix sums), which dominates at the few
    hundred rows of a bootstrap replicate. Here pairs inside aligned blocks
    of ``_BASE`` rows are compared directly (:func:`_dense_base`); above, at
    level ``h``, the right-half rows of all blocks, each block sorted by risk
    rank, form one globally sorted key array ``block * n + rank``, and so do
    the left-half rows; a left-half row's counts of lower and equal risk in
    its block's right half are two ``searchsorted`` calls with sorted queries
    (prefix sums of ``b`` when it is not all ones), and the next level's
    order is one stable argsort of sorted runs (a merge). Same pairs, same
    counts; float sums may differ in the last bit.
    """
    n = t.shape[0]
    rk = np.searchsorted(np.sort(r), r, side="left").astype(np.int64)  # risk ranks, ties shared
    # time ascending; events first at a tied time; risk descending inside a block
    o = np.lexsort((-rk, -np.asarray(e, dtype=np.int64), t))
    ts, es, rks, bs = t[o], e[o], rk[o], b[o]
    as_ = [a[o] for a in a_list]
    unit = bool(np.all(bs == 1))
    pos = np.arange(n, dtype=np.int64)
    less, equal = _dense_base(rks, as_, bs, unit)
    h = min(_BASE, n)
    # the permutation that sorts the rows by risk rank within each block of h positions
    perm = np.argsort((pos // h) * n + rks, kind="stable")
    while h < n:
        blk = pos // (2 * h)
        right = (pos // h) % 2 == 1      # perm stays inside each h-block, so by position
        left = ~right
        keys = blk * n + rks[perm]
        # both halves' keys are sorted (blocks ascending, each by rank): sorted queries keep
        # the binary searches cache-friendly at 10^6 rows
        R, Q = keys[right], keys[left]
        lo = np.searchsorted(R, Q, side="left")
        hi = np.searchsorted(R, Q, side="right")
        start = blk[left] * h            # right rows of the earlier (full) blocks
        if unit:
            n_less, n_eq = lo - start, hi - lo
        else:
            CbR = _cum0(bs[perm][right])
            n_less, n_eq = CbR[lo] - CbR[start], CbR[hi] - CbR[lo]
        pl = perm[left]
        for k, a in enumerate(as_):
            al = a[pl]
            less[k] = less[k] + np.dot(al, n_less.astype(al.dtype))
            equal[k] = equal[k] + np.dot(al, n_eq.astype(al.dtype))
        perm = perm[np.argsort(keys, kind="stable")]   # a merge of sorted runs
        h *= 2

    one = np.ones(1, dtype=bool)
    t_new = np.concatenate([one, ts[1:] != ts[:-1]])
    te_new = t_new | np.concatenate([one, es[1:] != es[:-1]])
    ter_new = te_new | np.concatenate([one, rks[1:] != rks[:-1]])
    _, hi_t = _group_bounds_np(t_new)
    lo_te, hi_te = _group_bounds_np(te_new)
    lo_ter, _ = _group_bounds_np(ter_new)
    Cb_time = _cum0(bs)
    later = Cb_time[n] - Cb_time[hi_te + 1]                       # rows after i's block
    cens_tied = Cb_time[hi_t + 1] - Cb_time[hi_te + 1]           # censored at T_i
    out = []
    for k, a in enumerate(as_):
        Ca = _cum0(a)
        bsk = bs.astype(a.dtype)
        # a-weight before j inside j's block of tied events (a is 0 on censored rows)
        corr_all = np.dot(bsk, Ca[pos] - Ca[lo_te])
        corr_tie = np.dot(bsk, Ca[pos] - Ca[lo_ter])
        out.append(_Pairs(np.asarray(less[k] - (corr_all - corr_tie)),
                          np.asarray(equal[k] - corr_tie),
                          np.asarray(np.dot(a, later.astype(a.dtype))),
                          np.asarray(np.dot(a, cens_tied.astype(a.dtype)))))
    return out


def _warn(msg):
    B.warn(msg, UndefinedMetricWarning)  # at the caller's line, whatever the wrapping


def _unit_interval(x, xp):
    """``x`` clamped to [0, 1]: only for ratios that lie in [0, 1] exactly.

    Every ratio it is used on is a sum of non-negative pair weights over a
    sum of the same weights over a superset of the pairs, so its exact value
    lies in [0, 1]; the float sums are accumulated in different orders, and
    the quotient can leave the interval by rounding alone (a perfectly
    concordant ranking gave 1 + 2**-52, a perfectly discordant one
    -4.6e-17 under inverse-probability weights). The clamp removes that
    rounding and nothing else; NaN stays NaN.
    """
    return xp.where(x > 1, xp.asarray(1.0, dtype=x.dtype, device=B.device(x)),
                    xp.where(x < 0, xp.asarray(0.0, dtype=x.dtype, device=B.device(x)), x))


def _cindex(p: _Pairs, xp):
    if R.is_exact(p.concordant):     # Python integers (NumPy past int64): one exact division
        num, den = 2 * p.concordant + p.tied_risk, p.comparable
        value = R.exact_ratio(num, den, np.asarray(1, dtype=object))[0] if den else \
            np.asarray(np.nan)
        return np.asarray(value, dtype=np.float64), np.asarray(den == 0)
    f = B.acc_float(xp)
    num = xp.astype(p.concordant, f) + 0.5 * xp.astype(p.tied_risk, f)
    den = xp.astype(p.comparable, f)
    return _unit_interval(num / xp.where(den > 0, den, 1.0), xp), den == 0


_NO_PAIRS = "no comparable pairs (no event before another time): the C-index is NaN"


# --------------------------------------------------------------------------
# Harrell's C
# --------------------------------------------------------------------------

@compiled(rows=("event", "time", "risk"), weight="sample_weight")
def concordance_index_censored(event: ArrayLike, time: ArrayLike, risk: ArrayLike, *,
                               sample_weight: ArrayLike = None) -> ConcordanceResult:
    """Harrell's concordance index for right-censored data.

    The share of comparable pairs whose risk scores are ordered like their
    times: **higher risk means an earlier event** (scikit-survival's
    direction; for predicted survival times pass ``-prediction``). Pair
    (i, j) is comparable when ``i`` had the event and ``T_i < T_j``, or
    ``T_i == T_j`` and ``j`` is censored; two events at the same time are not
    comparable. Concordant: ``risk_i > risk_j``; tied risk (exact equality)
    counts 1/2 (Harrell et al. 1982, 1996).

    Parameters
    ----------
    event : array of shape (n,)
        Event indicator, bool or {0, 1} (1 = event observed, 0 = censored).
    time : array of shape (n,)
        Event or censoring time, finite.
    risk : array of shape (n,)
        Risk score, finite; higher = earlier event.
    sample_weight : array of shape (n,), optional
        Non-negative row weights; pair (i, j) counts ``w_i w_j``. Integer
        weights are repetition (counts stay integers: exact on NumPy at any
        size, in Python integers past int64; on other backends
        ``sum(w * event) * sum(w)`` must stay within the count integer,
        ``2**63 - 1``, or ``2**31 - 1`` on JAX without x64).

    Returns
    -------
    ConcordanceResult
        ``(cindex, concordant, discordant, tied_risk, tied_time)`` as
        scikit-survival's ``concordance_index_censored`` returns them:
        ``cindex = (concordant + tied_risk / 2) / comparable pairs``;
        ``tied_time`` counts comparable (event, censoring) pairs at the same
        time. Counts are integers (weighted sums with float weights).
        ``cindex`` is float64 (float32 on JAX without x64), in [0, 1]: with
        float weights the quotient of the two weighted sums can leave [0, 1]
        by rounding alone, and is clamped to it (so a perfectly concordant
        ranking gives exactly 1 and a perfectly discordant one 0). NaN with an
        :class:`UndefinedMetricWarning` when there is no comparable pair
        (scikit-survival raises there).

    Raises
    ------
    ValueError
        Arrays not 1-D or of different lengths, empty input, event outside
        {0, 1}, non-finite time or risk, negative weights; more than 46340
        rows on JAX without x64 (32-bit keys); integer weights past the pair
        counts' limit (not on NumPy). Under ``jit`` invalid values (and
        weights past that limit) give NaN.

    Notes
    -----
    O(n log n) time and O(n) memory by merge counting of (later time, lower
    risk) pairs (see the module docstring); the same code runs under
    ``jax.jit`` (shapes are static). scikit-survival compares risks with a
    tolerance ``tied_tol=1e-8``; calipers uses exact equality, so scores that
    differ by less than 1e-8 count as ordered here.

    Examples
    --------
    >>> import calipers
    >>> r = calipers.concordance_index_censored(
    ...     [1, 1, 0, 1, 0, 1], [3, 5, 5, 8, 10, 12], [2.0, 1.5, 1.5, 0.7, 1.0, 0.2])
    >>> round(float(r.cindex), 6), int(r.concordant), int(r.discordant), int(r.tied_risk)
    (0.863636, 9, 1, 1)
    """
    d = _prepare(event, time, risk)
    xp = d.xp
    w = None
    invalid = d.invalid
    if sample_weight is not None:
        w = _to_ns(sample_weight, xp)
        B.check_1d("sample_weight", w)
        B.check_same_length(time=d.t, sample_weight=w)
        invalid = invalid | V.check_weights("sample_weight", w, xp)
    cdt = R.count_dtype(xp, w)
    b = xp.ones(d.t.shape[0], dtype=cdt, device=B.device(d.t)) if w is None else xp.astype(w, cdt)
    a = b * xp.astype(d.e, cdt)
    if w is not None:       # (without weights the row-count check of _pair_counts holds)
        invalid = invalid | _pair_limit_flag(a, b, xp)
    (p,) = _pair_counts(d.t, d.e, d.r, [a], b, xp)
    c, undefined = _cindex(p, xp)
    c = B.nan_if(invalid | undefined, c, xp)
    if not B.is_traced(c) and bool(undefined) and not bool(invalid):
        _warn(_NO_PAIRS)
    disc = p.comparable - p.concordant - p.tied_risk
    f = B.finalize
    return ConcordanceResult(f(c, xp), f(p.concordant, xp), f(disc, xp), f(p.tied_risk, xp),
                             f(p.tied_time, xp))


# --------------------------------------------------------------------------
# censoring distribution (Kaplan-Meier with censoring as the event)
# --------------------------------------------------------------------------

def _km_steps(t, e, xp, *, censoring):
    """Sorted times and the Kaplan-Meier value after each sorted row's time group.

    ``censoring=True``: survival of the censoring time (censorings are the
    events; events at a tied time leave the risk set first). Returns
    ``(ts, S)`` of length n: ``S[k]`` is the estimate at ``ts[k]``
    (right-continuous, the step at ``ts[k]`` included).
    """
    f = B.acc_float(xp)
    n = t.shape[0]
    o = xp.argsort(t, stable=True)
    ts = xp.take(t, o)
    es = xp.astype(xp.take(e, o), f)
    lo, hi = B.group_bounds(ts, xp)
    Ce = B.prefix_sum(es, xp, f)
    d = xp.take(Ce, hi + 1) - xp.take(Ce, lo)        # events in the time group
    m = xp.astype(hi - lo + 1, f)                    # rows in the time group
    at_risk = xp.astype(n - lo, f)
    if censoring:
        num, den = m - d, at_risk - d
    else:
        num, den = d, at_risk
    factor = 1.0 - num / xp.where(num > 0, den, 1.0)  # no step where nothing happens (0/0)
    idx = xp.arange(n, dtype=hi.dtype, device=B.device(t))
    rep = hi == idx
    zero = rep & (factor <= 0)
    logf = xp.where(rep & ~zero, xp.log(xp.where(factor > 0, factor, 1.0)), 0.0)
    cum_log = B.prefix_sum(logf, xp, f)[1:]
    nzero = B.prefix_sum(xp.astype(zero, B.acc_int(xp)), xp, B.acc_int(xp))[1:]
    S = xp.where(nzero > 0, 0.0, xp.exp(cum_log))
    # each row carries its group's value (the value after the whole group)
    return ts, xp.take(S, hi)


def _step_at(ts, S, x, xp):
    """The step function (ts, S) at ``x``: 1 before the first time."""
    k = xp.searchsorted(ts, x, side="right")
    return xp.where(k > 0, xp.take(S, xp.maximum(k - 1, 0)), 1.0)


def _censoring_weights(d: _Surv, train_event, train_time, used):
    """``G(T_i)`` for every test row, and an invalid flag for rows in ``used``.

    Invalid: a used time beyond the last training time while the estimate
    there is still positive (the Kaplan-Meier estimate is not defined there).
    """
    xp = d.xp
    if (train_event is None) != (train_time is None):
        raise ValueError("give both train_event and train_time, or neither")
    if train_time is None:
        tt, te = d.t, d.e
    else:
        tr = _prepare(_to_ns(train_event, xp), _to_ns(train_time, xp), None,
                      names=("train_event", "train_time", ""))
        tt, te = tr.t, tr.e
    ts, G = _km_steps(tt, te, xp, censoring=True)
    g = _step_at(ts, G, d.t, xp)
    n_tr = ts.shape[0]
    beyond = used & (d.t > ts[n_tr - 1]) & (G[n_tr - 1] > 0)
    bad = xp.any(beyond)
    if not B.is_traced(bad) and bool(bad):
        i = B.first_index(beyond, xp)
        raise ValueError(
            f"time element {i} ({B.show(B.to_numpy(d.t)[i])}) is after the last training time "
            f"{B.show(B.to_numpy(ts)[n_tr - 1])}, where the censoring distribution is not "
            "estimated")
    return g, bad


# --------------------------------------------------------------------------
# Uno's C
# --------------------------------------------------------------------------

@compiled
def concordance_index_ipcw(event: ArrayLike, time: ArrayLike, risk: ArrayLike, *,
                           train_event: ArrayLike = None, train_time: ArrayLike = None,
                           tau: float | None = None) -> ConcordanceResult:
    """Uno's concordance index with inverse-probability-of-censoring weights.

    ``C = sum_{i,j} w_i [comparable] (1[r_i > r_j] + 1/2 1[r_i == r_j])
    / sum_{i,j} w_i [comparable]``, with ``w_i = 1 / G(T_i)^2`` for events
    with ``T_i < tau`` and 0 otherwise (Uno et al. 2011). ``G`` is the
    Kaplan-Meier estimate of the censoring survival function fitted on
    ``(train_event, train_time)`` (default: the test data), evaluated at
    ``T_i`` with its step at ``T_i`` included, exactly as scikit-survival's
    ``concordance_index_ipcw``. Comparable pairs, ties and the direction
    (**higher risk = earlier event**) are those of
    :func:`concordance_index_censored`. Unlike Harrell's C its limit does not
    depend on the censoring distribution, provided censoring is independent
    of the covariates and ``tau`` is below the largest follow-up time with
    ``G(tau) > 0``.

    Parameters
    ----------
    event, time, risk : arrays of shape (n,)
        Test data, as :func:`concordance_index_censored`.
    train_event, train_time : arrays of shape (n_train,), optional
        Data to estimate the censoring distribution from.
    tau : float, optional
        Truncation time: only events before ``tau`` get weight.

    Returns
    -------
    ConcordanceResult
        ``cindex`` weighted as above, in [0, 1] (clamped against rounding of
        the weighted sums, as :func:`concordance_index_censored`); ``concordant``, ``discordant``,
        ``tied_risk``, ``tied_time`` are unweighted counts over all
        comparable pairs (events at or after ``tau`` included), as
        scikit-survival reports them. NaN ``cindex`` with an
        :class:`UndefinedMetricWarning` when the weighted denominator is 0
        or ``G(T_i) = 0`` for a weighted event (scikit-survival raises in
        both cases).

    Raises
    ------
    ValueError
        As :func:`concordance_index_censored`; a weighted event time after
        the last training time while ``G`` is still positive there
        (scikit-survival raises likewise); only one of ``train_event`` and
        ``train_time``. Under ``jit`` these give NaN.

    Examples
    --------
    >>> import calipers
    >>> r = calipers.concordance_index_ipcw(
    ...     [1, 1, 0, 1, 0, 1], [3, 5, 5, 8, 10, 12], [2.0, 1.5, 1.5, 0.7, 1.0, 0.2])
    >>> round(float(r.cindex), 6)
    0.829787
    """
    if tau is not None and (isinstance(tau, bool) or not isinstance(tau, (int, float))):
        raise ValueError(f"tau must be a real number or None, got {tau!r}")
    d = _prepare(event, time, risk)
    xp = d.xp
    f = B.acc_float(xp)
    used = d.e == 1
    if tau is not None:
        used = used & (d.t < tau)
    G, bad = _censoring_weights(d, train_event, train_time, used)
    zero_g = xp.any(used & (G <= 0))
    w = xp.where(used & (G > 0), 1.0 / xp.where(G > 0, G, 1.0) ** 2, 0.0)
    idt = B.acc_int(xp)
    b = xp.ones(d.t.shape[0], dtype=idt, device=B.device(d.t))
    pw, pc = _pair_counts(d.t, d.e, d.r, [xp.astype(w, f), xp.astype(d.e, idt)], b, xp)
    c, undefined = _cindex(pw, xp)
    undefined = undefined | zero_g
    invalid = d.invalid | bad
    c = B.nan_if(invalid | undefined, c, xp)
    if not B.is_traced(c) and bool(undefined) and not bool(invalid):
        _warn("Uno's C is undefined: no weighted comparable pair, or the censoring "
              "survival estimate is 0 at an event time; returning NaN")
    disc = pc.comparable - pc.concordant - pc.tied_risk
    fin = B.finalize
    return ConcordanceResult(fin(c, xp), fin(pc.concordant, xp), fin(disc, xp),
                             fin(pc.tied_risk, xp), fin(pc.tied_time, xp))


# --------------------------------------------------------------------------
# cumulative/dynamic AUC(t)
# --------------------------------------------------------------------------

@compiled
def cumulative_dynamic_auc(event: ArrayLike, time: ArrayLike, risk: ArrayLike, times: ArrayLike, *,
                           train_event: ArrayLike = None,
                           train_time: ArrayLike = None) -> CumulativeDynamicAUC:
    """Cumulative/dynamic time-dependent AUC at each of ``times``.

    At time ``t`` the cases are the rows with an event at or before ``t``
    (``T_i <= t``, event), the controls the rows still event-free after it
    (``T_j > t``); rows censored at or before ``t`` take no part. AUC(t) is
    the weighted Mann-Whitney statistic of ``risk`` between cases and
    controls, case ``i`` weighted by ``1 / G(T_i)`` (inverse probability of
    censoring, ``G`` as in :func:`concordance_index_ipcw`), controls by 1,
    tied scores 1/2 (Uno et al. 2007; Hung & Chiang 2010; Lambert & Chevret
    2016). It is computed by the Mann-Whitney kernel behind
    :func:`calipers.roc_auc_score` on the case indicator with those weights
    (zero for rows that are neither), so the tie and weight conventions are
    the library's one AUC kernel. Higher
    risk = earlier event.

    Parameters
    ----------
    event, time : arrays of shape (n,)
        Test data, as :func:`concordance_index_censored`.
    risk : array of shape (n,) or (n, m)
        Risk scores; 2-D for a score per time (column ``k`` at ``times[k]``).
    times : array of shape (m,)
        Strictly increasing evaluation times, each within
        ``[min(time), max(time))`` (scikit-survival's rule). Static length.
    train_event, train_time : arrays of shape (n_train,), optional
        Data for the censoring distribution (default: the test data).

    Returns
    -------
    CumulativeDynamicAUC
        ``(auc, mean_auc)``, in [0, 1] (clamped against rounding of the
        weighted sums, as :func:`concordance_index_censored`); ``auc[k]`` is NaN with an
        :class:`UndefinedMetricWarning` when ``times[k]`` has no case or no
        control weight, or ``G = 0`` at a case's time.

    Raises
    ------
    ValueError
        As :func:`concordance_index_ipcw`; ``times`` not 1-D, empty, not
        strictly increasing or outside ``[min(time), max(time))``; a 2-D
        ``risk`` with a column count other than ``len(times)``. Under
        ``jit`` invalid values give NaN.

    Notes
    -----
    scikit-survival sorts and de-duplicates ``times`` silently; calipers
    requires them strictly increasing so that ``auc[k]`` belongs to the
    ``times[k]`` given.

    Examples
    --------
    >>> import calipers
    >>> res = calipers.cumulative_dynamic_auc(
    ...     [1, 1, 0, 1, 0, 1], [3, 5, 5, 8, 10, 12], [2.0, 1.5, 1.5, 0.7, 1.0, 0.2], [4, 9])
    >>> [round(v, 6) for v in res.auc.tolist()]
    [1.0, 0.818182]
    """
    d = _prepare(event, time, risk, risk_2d=True)
    xp = d.xp
    f = B.acc_float(xp)
    times = _to_ns(times, xp)
    B.check_1d("times", times)
    B.check_nonempty("times", times)
    V.check_finite("times", times, xp)
    m = times.shape[0]
    r2 = d.r if d.r.ndim == 2 else None
    if r2 is not None and r2.shape[1] != m:
        raise ValueError(f"risk has {r2.shape[1]} columns but times has {m} elements; "
                         "they must match")
    tf = xp.astype(times, f)
    tmin, tmax = xp.min(xp.astype(d.t, f)), xp.max(xp.astype(d.t, f))
    bad_times = (xp.any(tf < tmin) | xp.any(tf >= tmax))
    if m > 1:
        bad_times = bad_times | xp.any(tf[1:] <= tf[:-1])
    if not B.is_traced(bad_times) and bool(bad_times):
        raise ValueError(
            f"times must be strictly increasing and within [min(time), max(time)) = "
            f"[{B.show(B.to_numpy(tmin))}, {B.show(B.to_numpy(tmax))}); got "
            f"{B.to_numpy(times).tolist()}")
    case_any = d.e == 1
    G, bad = _censoring_weights(d, train_event, train_time, case_any & (d.t <= tf[m - 1]))
    tdt = xp.astype(d.t, f)
    if r2 is None:
        # one sort of the risk shared by every time (roc_auc's weighted path sorts per call);
        # the same argsort, so the same sums as calling it per time
        order = xp.argsort(d.r, stable=False)
        g_lo, g_hi = B.group_bounds(xp.take(d.r, order), xp)
    aucs = []
    undefined = []
    with warnings.catch_warnings():
        # one warning for the caller below, pointing at the caller's line
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for k in range(m):
            tk = tf[k]
            case = case_any & (tdt <= tk)
            control = tdt > tk
            g0 = xp.any(case & (G <= 0))
            wk = xp.where(case, 1.0 / xp.where(G > 0, G, 1.0), xp.astype(control, f))
            wk = xp.where(case & (G <= 0), 0.0, wk)
            sk = d.r if r2 is None else r2[:, k]
            case_i = xp.astype(case, B.acc_int(xp))
            if r2 is None:
                tg = R.presorted_groups(xp.take(case_i, order), g_lo, g_hi)
                a, _ = R.binary_auc(tg, R.class_weights(tg, xp.take(wk, order), xp), xp)
            else:
                a, _ = R.roc_auc(case_i, sk, wk, xp)
            und = g0 | ~xp.any(case) | ~xp.any(control)
            aucs.append(B.nan_if(und, _unit_interval(xp.astype(a, f), xp), xp))
            undefined.append(und)
    auc = xp.stack(aucs)
    und = xp.stack(undefined)
    # mean AUC weighted by the drop of the test data's Kaplan-Meier survival
    ts, S = _km_steps(d.t, d.e, xp, censoring=False)
    s_t = _step_at(ts, S, tf, xp)
    if m == 1:
        mean = auc[0]
    else:
        prev = xp.concat([xp.ones(1, dtype=f, device=B.device(s_t)), s_t[:-1]])
        drop = prev - s_t
        den = 1.0 - s_t[m - 1]
        # a weighted mean of values in [0, 1] (the drops sum to den): only rounding leaves it
        mean = _unit_interval(xp.sum(auc * drop) / xp.where(den > 0, den, 1.0), xp)
        mean = B.nan_if(den <= 0, mean, xp)
    invalid = d.invalid | bad | bad_times
    auc = B.nan_if(invalid, auc, xp)
    mean = B.nan_if(invalid, mean, xp)
    if not B.is_traced(auc) and not bool(invalid) and bool(xp.any(und)):
        _warn("AUC(t) is undefined at a time with no case, no control, or a zero "
              "censoring survival estimate at a case's time; NaN there")
    return CumulativeDynamicAUC(auc, B.finalize(mean, xp))
