"""Streaming, mergeable ROC AUC / average precision and per-query ranking means.

Two pieces for evaluation inside a JAX training loop, where batches of scores
arrive step by step on several devices and nothing should be gathered to the
host:

* :class:`ROCHistogramState`: a histogram of positive and negative weight over
  an order-preserving integer key of the score. ``update`` adds a batch,
  ``merge`` (or ``jax.lax.psum`` under ``shard_map``) adds histograms,
  ``compute`` returns the AUC (ties 1/2), the average precision (step sum) and
  for each a *bound*: the largest distance to the exact value that any scores
  with these histograms could have.
* :func:`ranking_batch_metrics` and :class:`QueryMeanState`: per-query NDCG@k,
  reciprocal rank and recall@k of a fixed-shape, masked ``(queries, list
  length)`` batch under ``jit``, and a mergeable mean (sum, count, number of
  undefined queries).

The states follow :mod:`calipers._streaming.states`: ``NamedTuple`` pytrees whose fields
are sums (so ``psum`` is the merge), static configuration in the array shapes,
``invalid`` counting batches that broke a rule under ``jit``.

The score key
-------------
A float32 score ``x`` (``-0.0`` made ``+0.0``) is read as its 32 bits ``u``;
``key = u | 0x80000000`` for ``x >= 0`` and ``key = ~u`` for ``x < 0``. The map
is strictly increasing on finite floats (IEEE 754 orders non-negative floats
like their bit patterns), so ``key`` sorts exactly as the scores do. The bin of
a score is the top ``bits`` bits of ``key``: a bin is an interval of
``2**(32 - bits)`` consecutive float32 values, and a higher bin holds only
strictly higher scores. No score is ever moved to another bin by a threshold
rule or rounded per batch: the bin depends on the score's bits alone, so a
score exactly on a bin's lower edge is in that bin, 1.0 is a score like any
other, and the ROC curve always starts at (0, 0).

Exactness. With ``bits=16`` the float32 key keeps the sign, the 8 exponent bits
and 7 mantissa bits: exactly a bfloat16 value, so bfloat16 scores (and any
float32 scores that are bfloat16 values) each get a bin of their own and the
histogram AUC/AP *equal* the exact values. float16 has 5 exponent and 10
mantissa bits; in float32 it needs 1 + 8 + 10 = 19 key bits, so 16 bits of the
float32 key are *not* enough for float16 scores (e.g. 1.0 and 1 + 2**-10
share a bin). ``init(score_dtype="float16")`` therefore keys float16 scores by
their own 16 bits (same construction on 16-bit patterns): exact at 16 bits.
float64 scores are rounded to float32 first (monotone, so order is kept; ties
may be created, and the bound accounts for them).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.compile import compiled, program
from .._core.exceptions import UndefinedMetricWarning
from .base import (bad as _bad, batch_total_flag as _batch_total_flag,
                   check_host_ints as _check_host_ints, drop_masked as _drop_masked,
                   limit_text as _limit_text,
                   fill_one as _fill_one, fill_zero as _fill_zero, integral as _integral,
                   merge, namespace as _namespace, row_mask as _row_mask, state_xp as _state_xp,
                   streaming_state, to as _to)
from .._core.types import ArrayLike

__all__ = [
    "ROCHistogramState",
    "ROCHistogramSummary",
    "MulticlassROCHistogramState",
    "MulticlassROCSummary",
    "RankingBatch",
    "ranking_batch_metrics",
    "QueryMeanState",
    "QueryMeanSummary",
]


# --------------------------------------------------------------------------
# order-preserving keys
# --------------------------------------------------------------------------

_FORMATS = {  # total bits, mantissa bits, exponent bias
    "float32": (32, 23, 127),
    "float16": (16, 10, 15),
}


def _dtype_name(dtype) -> str:
    return str(getattr(dtype, "name", dtype)).replace("jnp.", "").split(".")[-1]


def _key_bits_native(x, fmt, xp):
    """Order key of ``x`` (already of the format's dtype) by bit casting (NumPy, JAX)."""
    width = _FORMATS[fmt][0]
    if B.is_numpy(xp):
        u = np.asarray(x).view(np.uint32 if width == 32 else np.uint16)
        sign = np.asarray(1 << (width - 1), dtype=u.dtype)
        return np.where(u & sign, ~u, u | sign)
    import jax
    import jax.numpy as jnp

    udt = jnp.uint32 if width == 32 else jnp.uint16
    u = jax.lax.bitcast_convert_type(x, udt)
    sign = jnp.asarray(1 << (width - 1), dtype=udt)
    return jnp.where((u & sign) != 0, ~u, u | sign)


def _key_bits_arith(x, fmt, xp):
    """The same key from arithmetic alone (namespaces without a bit cast, e.g. array-api-strict).

    Every step is exact in float64: powers of two, and ``a / 2**e`` for a
    float32/float16 value ``a``. Returns int64 keys.
    """
    width, mant, bias = _FORMATS[fmt]
    f64 = xp.float64
    v = xp.astype(x, f64)
    a = xp.abs(v)
    tiny = 2.0 ** (1 - bias)                      # smallest normal number
    two = xp.full_like(a, 2.0)
    safe = xp.where(a >= tiny, a, xp.ones_like(a))
    safe = xp.where(xp.isinf(safe), xp.ones_like(a), safe)
    e = xp.floor(xp.log2(safe))
    p = xp.pow(two, e)                            # log2 may be off by one near powers of 2
    e = xp.where(p > safe, e - 1, e)
    p = xp.pow(two, e)
    e = xp.where(2 * p <= safe, e + 1, e)
    p = xp.pow(two, e)
    normal = (e + bias) * 2.0 ** mant + (safe / p - 1.0) * 2.0 ** mant
    sub = a * 2.0 ** (bias - 1 + mant)             # subnormals and zero: a / 2**(1-bias-mant)
    bits = xp.where(a >= tiny, normal, sub)
    bits = xp.where(xp.isinf(a), xp.full_like(a, (2.0 * bias + 1) * 2.0 ** mant), bits)
    half = 2.0 ** (width - 1)
    key = xp.where(v < 0, (half - 1) - bits, half + bits)
    return xp.astype(key, xp.int64)


def _bin_index(x, fmt, bits, xp):
    """Bin (top ``bits`` bits of the order key) of each score, as an integer array."""
    width = _FORMATS[fmt][0]
    x = xp.astype(x, xp.float32 if fmt == "float32" else xp.float16)
    x = xp.where(x == 0, xp.zeros_like(x), x)     # -0.0 == +0.0: one key
    shift = width - bits
    if B.is_numpy(xp) or B.is_jax(xp):
        key = _key_bits_native(x, fmt, xp)
        ib = key >> shift if shift else key
        return xp.astype(ib, xp.int32 if B.is_jax(xp) else xp.int64)
    key = _key_bits_arith(x, fmt, xp)
    return key // (2 ** shift) if shift else key


def _bin_lower_edges(fmt, bits, xp, device=None):
    """Smallest score of each bin, ascending (-inf for bins below every finite float)."""
    width = _FORMATS[fmt][0]
    M = 2 ** bits
    keys = np.arange(M, dtype=np.uint64) << np.uint64(width - bits)
    half = np.uint64(1 << (width - 1))
    u = np.where(keys >= half, keys - half, (2 ** width - 1) - keys).astype(
        np.uint32 if width == 32 else np.uint16)
    with np.errstate(invalid="ignore"):
        vals = u.view(np.float32 if width == 32 else np.float16).astype(np.float64)
    # A bin's lowest key may be a NaN pattern or a float below -max: the bin's
    # lowest score is then the smallest finite score in it (or -inf when none).
    neg = keys < half
    with np.errstate(invalid="ignore"):
        vals = np.where(np.isnan(vals), np.where(neg, -np.inf, np.inf), vals)
    if B.is_numpy(xp):
        return vals
    return xp.asarray(vals, device=device)


# --------------------------------------------------------------------------
# ROC AUC / AP histogram state
# --------------------------------------------------------------------------

class ROCHistogramSummary(NamedTuple):
    """What :meth:`ROCHistogramState.compute` returns (0-d arrays; NumPy scalars on NumPy)."""

    roc_auc: Any                  #: Mann-Whitney AUC of the bins, a bin being a tie group
    roc_auc_bound: Any            #: max |exact AUC - roc_auc| given the histograms
    average_precision: Any        #: step-sum AP, a bin being one threshold
    average_precision_bound: Any  #: max |exact AP - average_precision| given the histograms


def _check_bits(bits, fmt):
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise ValueError(f"bits must be an integer, got {bits!r}")
    if fmt == "float16":
        if not 8 <= bits <= 16:
            raise ValueError(f"bits must be in 8 .. 16 with score_dtype='float16', got {bits}")
    elif not 8 <= bits <= 24:
        raise ValueError(f"bits must be in 8 .. 24, got {bits}")


def _histogram_weights(sample_weight, integral_state, xp):
    """The invalid flag of a histogram update's weights: an integer-count state takes
    integer weights (repetitions) only; real-valued ones need ``weighted=True``."""
    if sample_weight is None:
        return xp.asarray(False)
    if integral_state and not xp.isdtype(sample_weight.dtype, ("integral", "bool")):
        raise ValueError("real-valued sample_weight needs a state made with "
                         "init(..., weighted=True); integer weights (repetitions) "
                         "are accepted as they are")
    return V.check_weights("sample_weight", sample_weight, xp)


@streaming_state(takes=("labels", "scores"))
class ROCHistogramState(NamedTuple):
    """Streaming, mergeable ROC AUC and average precision: a histogram over an order key.

    ``neg[b]`` and ``pos[b]`` are the negative and positive weight whose score
    falls in bin ``b`` (ascending scores); see the module notes for the key. The
    number of bins ``2**bits`` is the arrays' static shape; the key format is
    the class (``init(score_dtype="float16")`` returns a subclass keyed by
    float16 bits), so states of different resolutions or formats refuse to
    merge.

    Life cycle: ``init`` -> ``update`` per batch (inside ``jit`` too) ->
    ``merge`` / ``jax.lax.psum(state, axis)`` -> ``compute``. ``merge`` adds
    integer histograms, so merging the states of batches equals one state of
    the concatenated batches bit for bit, in any order or grouping; no score
    is transformed per batch (apply any sigmoid yourself, once, before
    ``update``).

    Values (``compute``). With ``p_b, n_b`` the bins' weights, ``P, N`` the
    totals and ``N_<b`` the negative weight below bin ``b``:

    * ``roc_auc = sum_b p_b (N_<b + n_b / 2) / (P N)``: the Mann-Whitney
      statistic with a bin as one tie group (Hanley & McNeil 1982), i.e. the
      exact tie-averaged AUC of the scores floored to their bin.
    * ``average_precision = sum_b p_b * TP_b / (TP_b + FP_b) / P`` with
      ``TP_b, FP_b`` the weight in bins ``>= b``: scikit-learn's step sum with
      a bin as one threshold (empty bins add nothing).

    Both equal :func:`calipers.roc_auc_score` /
    :func:`calipers.average_precision_score` whenever no bin holds two
    different scores: bfloat16 scores at any ``bits >= 16``, float16 scores
    with ``score_dtype="float16"``, dyadic scores with few significant bits.

    Bounds. Pairs in different bins are ordered as the scores are; only pairs
    inside one bin are unknown. A positive-negative pair in one bin counts
    1/2 here and 0, 1/2 or 1 exactly, so
    ``roc_auc_bound = sum_b p_b n_b / (2 P N)``, and both ends are reached
    by some scores with these histograms. For AP, a positive in bin ``b``
    with ``T`` positive and ``F`` negative weight in higher bins and
    ``A`` positive, ``K`` negative weight of its own bin at or above it has
    precision ``(T + A) / (T + F + A + K)``, increasing in ``A`` and
    decreasing in ``K``; other bins do not depend on the order inside ``b``.
    Per bin (``p, n`` its weights, ``D = T + F + n``):

    * highest: every positive tied above every negative of the bin:
      ``p (T + p) / (T + F + p)``;
    * lowest: every negative above, positives one by one:
      ``sum_{j=1..p} (T + j) / (D + j) = p - (F + n) sum_{j=1..p} 1 / (D + j)``,
      and since ``1/x`` is convex, ``1/(D + j)`` is at most its mean over
      ``[D + j - 1/2, D + j + 1/2]``, so the sum is at least
      ``p - (F + n) log((D + p + 1/2) / (D + 1/2))`` (unit weights; integer
      weights are repeated rows). With real weights the sum of
      ``w_i g(A_i)`` for the increasing ``g(a) = (T + a)/(D + a)`` is at least
      ``integral_0^p g = p - (F + n) log((D + p) / D)``;
    * here: ``p (T + p) / (T + F + p + n)`` (the bin as one tie group, a
      value between the two).

    The exact AP lies between the sums of the per-bin lowest and highest
    values divided by ``P``; ``average_precision_bound`` is the larger
    distance from ``average_precision`` to those two ends. It is a worst case
    over all scores with these histograms: it is not 0 when true ties share a
    bin, even though the value is then exact.

    Undefined and invalid: AUC NaN without positive or negative weight, AP
    NaN without positive weight (and their bounds NaN), with an
    :class:`UndefinedMetricWarning` eagerly; every value NaN once an invalid
    batch was added under ``jit``.

    Padding: ``update(..., mask=)`` leaves masked rows out (their scores and
    labels are not checked) and keeps the counts integers; a batch with
    nothing unmasked adds nothing.

    Counts: integers (int64; int32 on JAX without x64), unless
    ``init(weighted=True)`` (float weights). Limits: the totals ``P`` and
    ``N`` (so every bin) at most ``2**63 - 1`` with int64 and ``2**31 - 1`` =
    2147483647 with int32 (JAX without x64), across all devices of a
    ``psum``. ``update`` and ``merge`` check them: eagerly a ``ValueError``
    stating the limit before a count wraps; under ``jit`` the batch is counted
    in ``invalid`` (``compute`` NaN). ``psum`` cannot check: ``compute`` is NaN
    when it finds a negative (wrapped) count. ``compute`` works in the
    accumulation float: exact for ``P * N < 2**52`` with x64; float32 results
    without x64. Memory: two arrays of ``2**bits`` counts (1 MiB at 16 bits,
    256 MiB at 24 bits with int64).

    Examples
    --------
    >>> from calipers import ROCHistogramState
    >>> a = ROCHistogramState.init(16).update([1, 1, 0, 1], [1.0, 1.0, 1.0, 0.75])
    >>> b = ROCHistogramState.init(16).update([0, 1, 1, 0], [0.5, 0.5, 0.25, 0.0])
    >>> out = a.merge(b).compute()
    >>> print(round(float(out.roc_auc), 6), round(float(out.average_precision), 6))
    0.633333 0.692857
    >>> print(round(float(out.roc_auc_bound), 6))   # the tied pairs at 1.0 and 0.5
    0.1
    """

    neg: Any
    pos: Any
    invalid: Any


    @classmethod
    def init(cls, bits=16, *, score_dtype="float32", weighted=False, xp=None) -> ROCHistogramState:
        """An empty state with ``2**bits`` bins.

        Parameters
        ----------
        bits : int
            8 to 24 with the float32 key (static); 8 to 16 with
            ``score_dtype="float16"``. Below 16 a bin spans ``2**(32 - bits)``
            float32 values (at 12 bits: the sign, the exponent and 3 mantissa
            bits, so eight bins per octave): less memory, a looser
            ``roc_auc_bound`` (reported by :meth:`compute`, as at any
            resolution).
        score_dtype : {"float32", "float16"}
            The key format. ``"float32"`` takes scores of any real dtype
            (rounded to float32). ``"float16"`` keys float16 scores by their
            own bits (exact at 16 bits) and accepts float16 scores only.
        weighted : bool
            Float counts, for real ``sample_weight``. Unweighted states accept
            integer ``sample_weight`` (repetition counts).
        xp : namespace, optional
            ``jax.numpy``, ``numpy`` (default) or another array namespace.

        Raises
        ------
        ValueError
            ``bits`` out of range, an unknown ``score_dtype``.
        """
        fmt = _dtype_name(score_dtype)
        if fmt not in _FORMATS:
            raise ValueError(f"score_dtype must be 'float32' or 'float16', got {score_dtype!r}")
        _check_bits(bits, fmt)
        xp = _namespace(xp)
        dt = B.acc_float(xp) if weighted else B.acc_int(xp)
        M = 2 ** int(bits)
        klass = _Float16ROCHistogramState if fmt == "float16" else ROCHistogramState
        return klass(xp.zeros(M, dtype=dt), xp.zeros(M, dtype=dt),
                     xp.zeros((), dtype=B.acc_int(xp)))

    @property
    def bits(self) -> int:
        """Resolution: ``log2`` of the number of bins."""
        return int(self.neg.shape[0]).bit_length() - 1

    @property
    def score_dtype(self) -> str:
        """The key format: ``"float32"`` or ``"float16"``."""
        return "float32"

    def _count_totals(self):
        if _integral(self.neg):
            xp = _state_xp(self)
            return (xp.sum(self.neg), xp.sum(self.pos))
        return ()

    def update(self, y_true, y_score, *, mask=None, sample_weight=None) -> ROCHistogramState:
        """Add a batch: labels ``y_true`` (n,) in {0, 1} (or bool), scores ``y_score`` (n,).

        ``mask`` (n,), boolean or 0/1: False / 0 marks a padding row, which
        adds nothing (its label and score are not checked).
        ``sample_weight`` (n,): non-negative; integer weights only on an
        unweighted state (they are repetition counts). An empty batch adds
        nothing. Eagerly, labels outside {0, 1}, NaN/inf scores, negative
        weights, wrong shapes, counts past the limit raise ``ValueError``;
        under ``jit`` the batch is marked invalid (``compute`` gives NaN) and
        its non-finite rows are not counted.
        """
        _check_host_ints("sample_weight", sample_weight, self.neg.dtype, _state_xp(self))
        return self._update(y_true, y_score, mask=mask, sample_weight=sample_weight)

    @compiled(rerun=lambda out, _: out.invalid > 0)
    def _update(self, y_true, y_score, *, mask=None, sample_weight=None):
        xp = _state_xp(self)
        y_true, y_score, sample_weight, mask = _to(xp, y_true, y_score, sample_weight, mask)
        if B.is_numpy(xp) and _dtype_name(y_score.dtype) == "bfloat16":
            y_score = y_score.astype(np.float32)   # ml_dtypes' bfloat16: exact in float32
        B.check_1d("y_true", y_true)
        B.check_1d("y_score", y_score)
        if sample_weight is not None:
            B.check_1d("sample_weight", sample_weight)
        B.check_same_length(y_true=y_true, y_score=y_score, sample_weight=sample_weight)
        V.check_real_values("y_score", y_score, xp, "numeric scores")
        fmt = self.score_dtype
        if fmt == "float16" and _dtype_name(y_score.dtype) != "float16":
            raise ValueError(f"this state keys float16 scores (score_dtype='float16'); y_score "
                             f"has dtype {y_score.dtype}: cast it, or use "
                             "init(score_dtype='float32')")
        keep, bad_m = _row_mask(mask, y_score.shape[0], xp)
        if y_score.shape[0] == 0:
            return self
        keep, (y_true, y_score, sample_weight) = _drop_masked(
            keep, [y_true, y_score, sample_weight], [_fill_one, _fill_zero, _fill_zero], xp)
        if y_score.shape[0] == 0:
            return self                      # nothing unmasked: adds nothing
        V.check_finite("y_score", y_score, xp)
        y01, invalid = V.binary_labels(y_true, xp)
        invalid = invalid | bad_m
        M = self.neg.shape[0]
        cdt = self.neg.dtype
        integral_state = xp.isdtype(cdt, "integral")
        invalid = invalid | _histogram_weights(sample_weight, integral_state, xp)
        b = _bin_index(y_score, fmt, self.bits, xp)
        ids = b + xp.astype(y01, b.dtype) * M
        if xp.isdtype(y_score.dtype, "real floating"):
            finite = xp.isfinite(y_score)
            if B.is_traced(y_score):
                invalid = invalid | ~xp.all(finite)
                ids = xp.where(finite, ids, xp.full_like(ids, 2 * M))   # dropped
        if keep is not None:                 # padding (traced): weight 0 / dropped id
            if sample_weight is None:
                ids = xp.where(keep, ids, xp.full_like(ids, 2 * M))
            else:
                sample_weight = xp.where(keep, sample_weight, xp.zeros_like(sample_weight))
        if sample_weight is None:
            hist = _count(ids, 2 * M, cdt, xp)
        else:
            hist = B.segment_sum(xp.astype(sample_weight, cdt), ids, 2 * M, xp)
            if integral_state and B.is_traced(hist):
                # integer weights can sum past the count dtype inside one batch
                for h, is_pos in ((hist[:M], 0), (hist[M:], 1)):
                    sel = xp.astype(y01, xp.int32) == is_pos
                    wv = xp.where(sel, sample_weight, xp.zeros_like(sample_weight))
                    invalid = invalid | _batch_total_flag("sample_weight", xp.sum(h), wv,
                                                          cdt, xp)
        add = type(self)(hist[:M], hist[M:], xp.astype(invalid, self.invalid.dtype))
        return merge(self, add)

    @compiled
    def compute(self) -> ROCHistogramSummary:
        """AUC, AP and their bounds (see the class notes); float64 (float32 without x64)."""
        xp = _state_xp(self)
        f = B.acc_float(xp)
        weighted = not xp.isdtype(self.neg.dtype, "integral")
        # cumulative counts in the count dtype (exact), then the float arithmetic
        cn = xp.astype(xp.cumulative_sum(self.neg), f)      # negatives in bins <= b
        cp = xp.astype(xp.cumulative_sum(self.pos), f)
        n = xp.astype(self.neg, f)
        p = xp.astype(self.pos, f)
        N = cn[-1]
        P = cp[-1]
        below = cn - n
        no_auc = (P == 0) | (N == 0)
        den = xp.where(no_auc, 1.0, 2 * P * N)
        auc = xp.sum(p * (2 * below + n)) / den
        auc_bound = xp.sum(p * n) / den
        # AP: T, F = positive / negative weight in higher bins
        T = P - cp
        F = N - cn
        has = p > 0
        one = xp.ones_like(p)
        here = p * (T + p) / xp.where(has, T + F + p + n, one)
        high = p * (T + p) / xp.where(has, T + F + p, one)
        D = T + F + n
        if weighted:
            arg = p / xp.where(D > 0, D, one)
        else:
            arg = p / (D + 0.5)
        low = p - (F + n) * xp.log1p(arg)
        low = xp.where((F + n) > 0, low, p)         # no negative at or above: precision 1
        low = xp.where(low > 0, low, xp.zeros_like(low))
        no_ap = P == 0
        Ps = xp.where(no_ap, 1.0, P)
        ap = xp.sum(here) / Ps
        up = xp.sum(high - here) / Ps
        down = xp.sum(here - low) / Ps
        ap_bound = xp.minimum(xp.maximum(up, down), xp.asarray(1.0, dtype=f))
        bad = _bad(self, xp)
        vals = [_nan_if(bad | no_auc, auc, xp), _nan_if(bad | no_auc, auc_bound, xp),
                _nan_if(bad | no_ap, ap, xp), _nan_if(bad | no_ap, ap_bound, xp)]
        if not B.is_traced(self.neg) and not bool(bad) and bool(no_auc):
            # no positive implies no AP as well; one warning names both
            what = "AUC and AP are" if bool(no_ap) else "AUC is"
            why = ("it holds no rows" if not bool(xp.any(self.pos > 0) | xp.any(self.neg > 0))
                   else "it holds only one class")
            B.warn_undefined(f"ROCHistogramState: ROC {what} undefined ({why}); NaN")
        return ROCHistogramSummary(*[B.finalize(v, xp) for v in vals])

    def _from_outputs(self, out, **options):
        """Labels and the rows' ranking scores: ``logits`` as they are (no sigmoid: the
        finest key), else ``scores``, else ``probs``."""
        who = type(self).__name__
        return self.update(out.labels(who), out.ranking_scores(who), mask=out.get("mask"),
                           sample_weight=out.get("sample_weight"), **options)

    def roc_curve(self):
        """``(fpr, tpr, thresholds)`` from the bins, one point per bin (static length).

        Thresholds decrease: ``+inf`` first (the point (0, 0)), then each
        bin's smallest score from the highest bin down; a row is predicted
        positive iff its bin is at or above the threshold's bin. Empty bins
        repeat the previous point (areas are unchanged). Length ``2**bits + 1``.
        fpr (tpr) is NaN without negative (positive) weight or when invalid.
        """
        xp = _state_xp(self)
        f = B.acc_float(xp)
        fp = xp.astype(xp.cumulative_sum(xp.flip(self.neg)), f)
        tp = xp.astype(xp.cumulative_sum(xp.flip(self.pos)), f)
        zero = xp.zeros(1, dtype=f, device=B.device(fp))
        fp = xp.concat([zero, fp])
        tp = xp.concat([zero, tp])
        N, P = fp[-1], tp[-1]
        bad = _bad(self, xp)
        fpr = _nan_if(bad | (N == 0), fp / xp.where(N > 0, N, 1.0), xp)
        tpr = _nan_if(bad | (P == 0), tp / xp.where(P > 0, P, 1.0), xp)
        edges = xp.astype(_bin_lower_edges(self.score_dtype, self.bits, xp,
                                           device=B.device(fp)), f)
        thr = xp.concat([xp.full(1, math.inf, dtype=f, device=B.device(fp)), xp.flip(edges)])
        return fpr, tpr, thr


class _Float16ROCHistogramState(ROCHistogramState):
    """:class:`ROCHistogramState` keyed by float16 bits (``init(score_dtype="float16")``)."""

    __slots__ = ()

    @property
    def score_dtype(self) -> str:
        return "float16"


class MulticlassROCSummary(NamedTuple):
    """What :meth:`MulticlassROCHistogramState.compute` returns (float64; float32 without x64)."""

    roc_auc: Any        #: the averaged one-vs-rest AUC (per class with ``average=None``)
    roc_auc_bound: Any  #: max |exact - roc_auc| given the histograms, same averaging
    per_class: Any      #: (C,) one-vs-rest AUC of each class
    support: Any        #: (C,) weight of each true class


@streaming_state(takes=("labels", "scores"))
class MulticlassROCHistogramState(NamedTuple):
    """One-vs-rest ROC AUC of ``C`` classes from ``C`` score histograms, mergeable.

    Class ``c``'s histogram is a :class:`ROCHistogramState` of the binary
    problem "true class is ``c``" against column ``c`` of the scores (the
    same key, bins and bound), so each per-class AUC and its bound follow
    that state's rules; stacked, ``neg`` and ``pos`` have shape ``(C,
    2**bits)``. ``compute(average=)`` averages as
    :func:`calipers.roc_auc_score` with ``multi_class="ovr"`` does
    (scikit-learn's convention; Fawcett 2006 for the prevalence weighting):
    ``"macro"`` the plain mean over classes, ``"weighted"`` the mean weighted
    by each class's true weight, ``None`` the per-class values. The bound
    averages the same way (the distance of a mean is at most the mean of
    the distances). Exact, like the binary state, when the scores are
    bfloat16 values (any logits or probabilities cast to bfloat16) at 16
    bits or more.

    ``update(y_true, y_score, *, mask=None, sample_weight=None)``: class
    indices ``y_true`` (n,) in ``0 .. C-1`` and scores ``y_score`` (n, C)
    (logits, probabilities or any scores; only each column's order
    matters). Padding rows (``mask`` False) add nothing; a batch with
    nothing unmasked adds nothing. A class without positives (or without
    negatives) has an undefined AUC: NaN for that class and for the
    averages, with an :class:`UndefinedMetricWarning` eagerly. Eagerly,
    labels outside ``0 .. C-1``, NaN/inf scores, negative weights and counts
    past the limit raise ``ValueError``; under ``jit`` they make ``compute``
    NaN. Memory: ``2 * C * 2**bits`` counts (``C = 10`` at 16 bits: 10 MiB
    with int64).
    """

    neg: Any
    pos: Any
    invalid: Any

    @classmethod
    def init(cls, num_classes, bits=16, *, score_dtype="float32", weighted=False, xp=None) -> MulticlassROCHistogramState:
        """An empty state of ``num_classes`` (>= 2) stacked ``2**bits``-bin histograms.

        ``bits``, ``score_dtype`` and ``weighted`` as :meth:`ROCHistogramState.init`.
        """
        num_classes = V.positive_int(num_classes, "num_classes", 2)
        one = ROCHistogramState.init(bits, score_dtype=score_dtype, weighted=weighted, xp=xp)
        xp = _state_xp(one)
        shape = (num_classes,) + tuple(one.neg.shape)
        klass = _Float16MulticlassROCHistogramState if one.score_dtype == "float16" \
            else MulticlassROCHistogramState
        return klass(xp.zeros(shape, dtype=one.neg.dtype), xp.zeros(shape, dtype=one.pos.dtype),
                     one.invalid)

    @property
    def score_dtype(self) -> str:
        """The key format: ``"float32"`` or ``"float16"`` (as :class:`ROCHistogramState`)."""
        return "float32"

    @property
    def num_classes(self) -> int:
        return int(self.neg.shape[0])

    @property
    def bits(self) -> int:
        return int(self.neg.shape[1]).bit_length() - 1

    def _binary(self, c):
        klass = _Float16ROCHistogramState if self.score_dtype == "float16" else ROCHistogramState
        return klass(self.neg[c], self.pos[c], self.invalid)

    def _count_totals(self):
        if _integral(self.neg):
            xp = _state_xp(self)
            return (xp.sum(self.neg[0]), xp.sum(self.pos[0]))
        return ()

    def update(self, y_true, y_score, *, mask=None, sample_weight=None) -> MulticlassROCHistogramState:
        """Add class indices ``y_true`` (n,) and scores ``y_score`` (n, C).

        One segment count over ``(class, label, bin)`` ids: row ``i`` adds to
        class ``c``'s positive histogram (``y_true[i] == c``) or negative one,
        at the bin of ``y_score[i, c]``: the same counts, bit for bit, as
        ``C`` binary :class:`ROCHistogramState` updates.
        """
        xp = _state_xp(self)
        _check_host_ints("sample_weight", sample_weight, self.neg.dtype, xp)
        y_true, y_score, sample_weight, mask = _to(xp, y_true, y_score, sample_weight, mask)
        C = self.num_classes
        B.check_1d("y_true", y_true)
        V.check_real_values("y_score", y_score, xp, "numeric scores")
        if y_score.ndim != 2 or y_score.shape[1] != C:
            raise ValueError(f"y_score must have shape (n, {C}) for this state, got "
                             f"{tuple(y_score.shape)}")
        if sample_weight is not None:
            B.check_1d("sample_weight", sample_weight)
        B.check_same_length(y_true=y_true, y_score=y_score, sample_weight=sample_weight)
        if B.is_numpy(xp) and _dtype_name(y_score.dtype) == "bfloat16":
            y_score = y_score.astype(np.float32)   # ml_dtypes' bfloat16: exact in float32
        fmt = self.score_dtype
        if fmt == "float16" and _dtype_name(y_score.dtype) != "float16":
            raise ValueError(f"this state keys float16 scores (score_dtype='float16'); y_score "
                             f"has dtype {y_score.dtype}: cast it, or use "
                             "init(score_dtype='float32')")
        t = y_true
        if xp.isdtype(t.dtype, "bool"):
            t = xp.astype(t, B.acc_int(xp))
        bad = (t < 0) | (t >= C)
        if xp.isdtype(t.dtype, "real floating"):
            bad = bad | (t != xp.round(t)) | ~xp.isfinite(t)
        keep, bad_m = _row_mask(mask, t.shape[0], xp)
        rows_bad = bad if keep is None else bad & keep
        invalid = V.fail_if(rows_bad, "y_true", f"must hold class indices 0 .. {C - 1} (the "
                            "columns of y_score)", xp, values=y_true) | bad_m
        keep, (t, y_score, sample_weight, bad) = _drop_masked(
            keep, [t, y_score, sample_weight, bad], [_fill_zero] * 4, xp)
        n = t.shape[0]
        if n == 0:
            return self                                 # nothing unmasked: adds nothing
        V.check_finite("y_score", y_score, xp)
        M = self.neg.shape[1]
        cdt = self.neg.dtype
        integral_state = xp.isdtype(cdt, "integral")
        invalid = invalid | _histogram_weights(sample_weight, integral_state, xp)
        # id of (row, class c): c * 2M + [row is of class c] * M + bin of score[row, c]
        b = _bin_index(y_score, fmt, self.bits, xp)                       # (n, C)
        cls = xp.reshape(xp.arange(C, dtype=b.dtype, device=B.device(b)), (1, -1))
        ti = xp.reshape(xp.astype(xp.where(bad, xp.zeros_like(t), t), b.dtype), (-1, 1))
        ids = cls * (2 * M) + xp.astype(ti == cls, b.dtype) * M + b
        drop = xp.zeros(ids.shape, dtype=xp.bool, device=B.device(b))
        if xp.isdtype(y_score.dtype, "real floating") and B.is_traced(y_score):
            finite = xp.isfinite(y_score)
            invalid = invalid | ~xp.all(finite)
            drop = drop | ~finite
        if B.is_traced(bad):                            # rows with a bad label: not counted
            drop = drop | xp.reshape(bad, (-1, 1))
        if keep is not None:                            # traced padding: not counted
            drop = drop | ~xp.reshape(keep, (-1, 1))
        ids = xp.reshape(xp.where(drop, xp.full_like(ids, 2 * M * C), ids), (-1,))
        if sample_weight is None:
            hist = _count(ids, 2 * M * C, cdt, xp)
        else:
            w = xp.reshape(xp.broadcast_to(xp.reshape(xp.astype(sample_weight, cdt), (-1, 1)),
                                           (n, C)), (-1,))
            hist = B.segment_sum(w, ids, 2 * M * C, xp)
            if integral_state and B.is_traced(hist):
                # integer weights can sum past the count dtype inside one batch: the rule
                # of batch_total_flag for each (class, label) histogram
                f = B.acc_float(xp)
                wf = xp.reshape(xp.broadcast_to(xp.reshape(xp.astype(sample_weight, f),
                                                           (-1, 1)), (n, C)), (-1,))
                fsum = B.segment_sum(wf, ids // M, 2 * C, xp)
                isum = xp.sum(xp.reshape(hist, (2 * C, M)), axis=1)
                limit, text = _limit_text(cdt, xp)
                invalid = invalid | V.fail_if(xp.any(isum < 0) | xp.any(fsum > 1.5 * limit),
                                              "sample_weight", f"must sum to at most {text}", xp)
        hist = xp.reshape(hist, (C, 2, M))
        add = type(self)(hist[:, 0, :], hist[:, 1, :], xp.astype(invalid, self.invalid.dtype))
        return merge(self, add)

    def compute(self, average="macro") -> MulticlassROCSummary:
        """The one-vs-rest AUC averaged by ``average`` ({"macro", "weighted", None})."""
        average = V.choice(average, "average", ("macro", "weighted", None))
        xp = _state_xp(self)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            outs = [self._binary(c).compute() for c in range(self.num_classes)]
        auc = xp.stack([xp.asarray(o.roc_auc) for o in outs])
        bound = xp.stack([xp.asarray(o.roc_auc_bound) for o in outs])
        f = auc.dtype
        support = xp.astype(xp.sum(self.pos, axis=1), f)
        if average is None:
            val, bnd = auc, bound
        elif average == "macro":
            val, bnd = xp.mean(auc), xp.mean(bound)
        else:
            tot = xp.sum(support)
            w = support / xp.where(tot > 0, tot, xp.ones_like(tot))
            val, bnd = xp.sum(w * auc), xp.sum(w * bound)
        if not B.is_traced(self.neg) and not bool(_bad(self, xp)) and \
                bool(xp.any(xp.isnan(auc))):
            B.warn_undefined("MulticlassROCHistogramState: one-vs-rest ROC AUC is undefined for "
                             "a class with no positive or no negative weight (every class, when "
                             "the state holds no rows); NaN for it and for the averages")
        return MulticlassROCSummary(*[B.finalize(v, xp) for v in (val, bnd, auc, support)])

    def _from_outputs(self, out, **options):
        """Labels and the (n, C) scores: ``logits`` as they are (no softmax: the finest
        key), else ``scores``, else ``probs``."""
        who = type(self).__name__
        src = out.require(who, "logits", "scores", "probs")
        return self.update(out.labels(who), out.get(src), mask=out.get("mask"),
                           sample_weight=out.get("sample_weight"), **options)


class _Float16MulticlassROCHistogramState(MulticlassROCHistogramState):
    """:class:`MulticlassROCHistogramState` keyed by float16 bits
    (``init(score_dtype="float16")``)."""

    __slots__ = ()

    @property
    def score_dtype(self) -> str:
        return "float16"


_nan_if = B.nan_if


def _count(ids, m, dtype, xp):
    """Integer histogram of ``ids`` over ``0 .. m-1`` (ids outside are dropped)."""
    if B.is_numpy(xp):  # eager NumPy ids are always in range (bad scores raised)
        return np.bincount(ids, minlength=m).astype(dtype, copy=False)
    if B.is_jax(xp):
        import jax

        return jax.ops.segment_sum(xp.ones(ids.shape, dtype=dtype), ids, num_segments=m)
    return B.segment_sum(xp.ones(ids.shape, dtype=dtype), ids, m, xp)


# --------------------------------------------------------------------------
# per-query ranking metrics on fixed-shape batches
# --------------------------------------------------------------------------

class RankingBatch(NamedTuple):
    """Per-query values of one ``(Q, L)`` batch (from :func:`ranking_batch_metrics`)."""

    ndcg: Any             #: (Q,) NDCG@k; NaN for a query with no item of positive gain
    reciprocal_rank: Any  #: (Q,) 1 / rank of the first relevant item; NaN without one
    recall: Any           #: (Q,) recall@k; NaN without a relevant item
    invalid: Any          #: () bool: the batch broke a rule (under ``jit``); values NaN
    #: (Q,) bool: the query has a real (unmasked) item; False marks a padded
    #: query (values NaN), which :meth:`QueryMeanState.update` does not count
    query_mask: Any = None
    #: (Q,) precision@k (relevant among the top k, divided by k); defined for every real query
    precision: Any = None
    #: (Q,) AP@k (trec_eval ``map_cut``: precision at relevant ranks 1..k, over all the
    #: query's relevant items); NaN without a relevant item
    average_precision: Any = None

    def metric_values(self, num_metrics: int = 3) -> tuple:
        """The per-query values a :class:`QueryMeanState` of ``num_metrics`` holds: 3 for
        (NDCG@k, reciprocal rank, recall@k), 5 adding (precision@k, AP@k)."""
        if num_metrics == 3:
            return (self.ndcg, self.reciprocal_rank, self.recall)
        if num_metrics == 5:
            return (self.ndcg, self.reciprocal_rank, self.recall, self.precision,
                    self.average_precision)
        raise ValueError(f"a RankingBatch feeds a QueryMeanState of 3 or 5 metrics, not "
                         f"{num_metrics}")


def _as_mask(name, mask, shape, xp):
    """A boolean mask from booleans or 0/1 numbers of the given shape (eager checks)."""
    B.check_numeric(name, mask, xp)
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(mask.shape)} but must have shape "
                         f"{tuple(shape)}")
    if xp.isdtype(mask.dtype, "bool"):
        return mask, xp.asarray(False)
    bad = V.fail_if(~((mask == 0) | (mask == 1)), name,
                    "must be boolean or 0/1 (True or 1 is real, False or 0 is padding)",
                    xp, values=mask)
    return mask == 1, bad


def ranking_batch_metrics(y_true: ArrayLike, y_score: ArrayLike, mask: ArrayLike = None, *,
                          query_mask: ArrayLike = None, query_id: ArrayLike = None,
                          num_queries: int | None = None, k: int | Sequence[int] = 10,
                          gain: str = "linear",
                          relevance_level: float | None = None
                          ) -> RankingBatch | dict[int, RankingBatch]:
    """NDCG@k, reciprocal rank, recall@k, precision@k and AP@k per query of a padded
    ``(Q, L)`` batch, or of flat rows with ``query_id``.

    Made for a ``jit``-compiled eval step: fixed shapes, padding given by
    ``mask``, nothing leaves the device. Each row is one query; items with
    ``mask`` False are padding and take no part at all (not in the ranking,
    the ideal ranking or the number of relevant items; their scores and
    labels may be anything finite or not). The values are exactly those of
    :func:`calipers.retrieval.ndcg`, :func:`calipers.retrieval.reciprocal_rank`,
    :func:`calipers.retrieval.recall_at_k`, :func:`calipers.retrieval.precision_at_k`
    (denominator ``k``) and :func:`calipers.retrieval.average_precision` with ``k``
    (trec_eval's ``map_cut``) on the unpadded lists, with
    their default rule for tied scores (``ties="average"``: the expected
    value over the orderings of tied items, McSherry & Najork 2008).

    A query with no real item (every item masked, or ``query_mask`` False)
    is a *padded query*, not an undefined one: ``query_mask`` is False for
    it in the result, its values are NaN, and :class:`QueryMeanState`
    neither counts it nor calls it undefined. Undefined queries are real
    queries without a relevant item.

    Flat rows: with ``query_id`` (n,), ``y_true``, ``y_score`` and ``mask``
    are (n,) rows (any order; a query's rows need not be contiguous), and
    the values are the one-shot functions' per-query values on the unmasked
    rows, queries in ascending id order. Without ``num_queries`` (eager
    only) the ids may be any numbers and the result has one entry per
    distinct id of an unmasked row. With ``num_queries`` (static; required
    under ``jit``) the ids must be ``0 .. num_queries - 1`` and the result
    has ``num_queries`` entries, the queries without an unmasked row padded
    (``query_mask`` False). Only this batch's rows are seen: a query whose
    rows are split over two batches is evaluated as two queries, one on
    each part; keep each query within one batch.

    Parameters
    ----------
    y_true : array (Q, L), or (n,) with ``query_id``
        Graded relevance (negative means judged non-relevant, gain 0).
    y_score : array (Q, L), or (n,) with ``query_id``
        Scores, higher ranks first; finite where ``mask`` is True.
    mask : array (Q, L) or (Q,) (or (n,) with ``query_id``), boolean or 0/1, optional
        True (1) for real items; a (Q,) mask marks whole queries. Default:
        every item is real.
    query_mask : array (Q,), boolean or 0/1, optional
        True (1) for real queries, combined with ``mask`` (padded batches only).
    query_id : array (n,), optional
        The query of each row: flat rows instead of a padded batch.
    num_queries : int, optional
        With ``query_id``: the static number of queries, ids ``0 ..
        num_queries - 1`` (required under ``jit``; the ``num_segments`` of
        :func:`calipers.retrieval.ndcg`).
    k : int or sequence of int
        Cut-off for NDCG, recall, precision and AP (static). A sequence of distinct
        cut-offs is computed on one sort and returns a ``dict`` mapping each
        ``k`` to its :class:`RankingBatch`, in the order given.
    gain : {"linear", "exponential"}
        As :func:`calipers.retrieval.ndcg`.
    relevance_level : number, optional
        Relevant means ``y_true >= relevance_level`` for reciprocal rank and
        recall (default ``y_true > 0``).

    Returns
    -------
    RankingBatch, or dict of int to RankingBatch for a sequence ``k``
        ``(Q,)`` arrays in the accumulation float; NaN for undefined queries
        (no relevant item, or no item of positive gain for NDCG) and for
        padded queries. Feed it to :meth:`QueryMeanState.update`.

    Raises
    ------
    ValueError
        Eagerly: shapes that are not 2-D (1-D with ``query_id``) or differ, a
        mask that is not boolean or 0/1, NaN/inf in real items, bad
        ``k``/``gain``/``num_queries``, ids outside ``0 .. num_queries - 1``,
        ``query_mask`` with ``query_id``, ``query_id`` without
        ``num_queries`` under ``jit``. Under ``jit``: values NaN and
        ``invalid`` True instead; no warning. Eagerly an
        :class:`UndefinedMetricWarning` names the number of undefined (real)
        queries.
    """
    from ..retrieval import _measures as R

    if query_id is not None:
        ks, is_seq = R.check_k(k, required=True)
        if len(set(ks)) != len(ks):
            raise ValueError(f"k must not repeat a cut-off, got {k!r}")
        gain = V.choice(gain, "gain", ("linear", "exponential"))
        if query_mask is not None:
            raise ValueError("query_mask marks the queries of a padded (Q, L) batch; with "
                             "query_id, mark padding rows with mask=")
        outs = _ranking_flat(y_true, y_score, mask, query_id, num_queries, ks, gain,
                             relevance_level)
        return _warn_and_pack(outs, ks, is_seq)
    if num_queries is not None:
        raise ValueError("num_queries is the number of queries of flat rows: it needs query_id")
    xp, (y_true, y_score, mask, query_mask) = B.as_arrays(y_true, y_score, mask, query_mask)
    for name, a in (("y_true", y_true), ("y_score", y_score)):
        if a.ndim != 2:
            raise ValueError(f"{name} must be 2-D (queries, list length), got shape "
                             f"{tuple(a.shape)}")
    if tuple(y_true.shape) != tuple(y_score.shape):
        raise ValueError(f"y_true has shape {tuple(y_true.shape)} but y_score has "
                         f"{tuple(y_score.shape)}; they must match")
    Q = y_true.shape[0]
    bad_mask = xp.asarray(False)
    if mask is None:
        mask = xp.ones(y_true.shape, dtype=xp.bool, device=B.device(y_true))
    else:
        if mask.ndim == 1:
            mask, bad_mask = _as_mask("mask", mask, (Q,), xp)
            mask = xp.broadcast_to(xp.reshape(mask, (-1, 1)), y_true.shape)
        else:
            mask, bad_mask = _as_mask("mask", mask, y_true.shape, xp)
    if query_mask is not None:
        qm, bad_q = _as_mask("query_mask", query_mask, (Q,), xp)
        mask = mask & xp.reshape(qm, (-1, 1))
        bad_mask = bad_mask | bad_q
    ks, is_seq = R.check_k(k, required=True)
    if len(set(ks)) != len(ks):
        raise ValueError(f"k must not repeat a cut-off, got {k!r}")
    gain = V.choice(gain, "gain", ("linear", "exponential"))
    if B.is_jax(xp) and not B.is_traced(y_true, y_score, mask):
        # eager JAX: check values here, then one compiled program (not three)
        R.value_checks(xp, xp.where(mask, y_true, xp.zeros_like(y_true)),
                        xp.where(mask, y_score, xp.zeros_like(y_score)))
        outs = _ranking_batch_jit(ks, gain, relevance_level)(y_true, y_score, mask)
    else:
        outs = _ranking_batch(y_true, y_score, mask, ks, gain, relevance_level, xp)
    outs = [o._replace(invalid=o.invalid | bad_mask) for o in outs]
    return _warn_and_pack(outs, ks, is_seq)


def _warn_and_pack(outs, ks, is_seq):
    """Eagerly warn about undefined real queries; one batch, or a dict by cut-off."""
    first = outs[0]
    if not B.is_traced(first.ndcg) and not bool(first.invalid):
        xp = _state_xp(first)
        undefined = (xp.isnan(first.recall) | xp.isnan(first.ndcg)) & first.query_mask
        nu = int(xp.sum(xp.astype(undefined, xp.int32)))
        nq = int(xp.sum(xp.astype(first.query_mask, xp.int32)))
        if nu:
            B.warn_undefined(f"{nu} of {nq} queries have no relevant item: their values are "
                             "NaN (left out of a QueryMeanState's mean)")
    if is_seq:
        return dict(zip(ks, outs))
    return first


def _ranking_flat(y_true, y_score, mask, query_id, num_queries, ks, gain, relevance_level):
    """The :class:`RankingBatch` list of flat rows (see :func:`ranking_batch_metrics`)."""
    xp, (y_true, y_score, mask, query_id) = B.as_arrays(y_true, y_score, mask, query_id)
    for name, a in (("y_true", y_true), ("y_score", y_score), ("query_id", query_id)):
        B.check_1d(name, a)
    B.check_same_length(y_true=y_true, y_score=y_score, query_id=query_id)
    n = y_true.shape[0]
    keep, bad_mask = _row_mask(mask, n, xp)
    dev = B.device(y_true)
    if num_queries is None:
        if B.is_traced(y_true, y_score, query_id, keep):
            raise ValueError("num_queries (static) is required under jit for flat rows with "
                             "query_id: the number of queries sets the output's shape")
        _, (y_true, y_score, query_id) = _drop_masked(
            keep, [y_true, y_score, query_id], [_fill_zero] * 3, xp)
        n = y_true.shape[0]
        Q = int(np.unique(np.asarray(B.to_numpy(query_id))).shape[0])
        retrieved, real = None, xp.ones(Q, dtype=xp.bool, device=dev)
    else:
        Q = V.positive_int(num_queries, "num_queries")
        if keep is None:
            keep = xp.ones(n, dtype=xp.bool, device=dev)
        # padding rows: query 0, gain 0, not retrieved (ranked after the real rows): no effect
        y_true = xp.where(keep, y_true, xp.zeros_like(y_true))
        y_score = xp.where(keep, y_score, xp.zeros_like(y_score))
        query_id = xp.where(keep, query_id, xp.zeros_like(query_id))
        retrieved = keep
        ai = B.acc_int(xp)
        real = B.segment_sum(xp.astype(keep, ai), xp.astype(query_id, ai), Q, xp) > 0
    if n == 0:                                  # nothing unmasked: every query padded
        nan = xp.full(Q, math.nan, dtype=B.acc_float(xp), device=dev)
        return [RankingBatch(nan, nan, nan, xp.asarray(False) | bad_mask, real & False, nan, nan)
                for _ in ks]
    outs = _per_query_batches(y_true, y_score, query_id, retrieved, real, Q, ks, gain,
                              relevance_level, xp)
    return [o._replace(invalid=o.invalid | bad_mask) for o in outs]


def _ranking_batch_jit(ks, gain, relevance_level):
    import jax
    import jax.numpy as jnp

    return program(("ranking_batch", ks, gain, relevance_level), lambda: jax.jit(
        lambda y, s, m: _ranking_batch(y, s, m, ks, gain, relevance_level, jnp)))


def _ranking_batch(y_true, y_score, mask, ks, gain, relevance_level, xp):
    """One :class:`RankingBatch` per cut-off in ``ks`` (a tuple), from one sort per metric."""
    # Padding: not relevant (gain 0) and "not retrieved", which ranks it after
    # every real item of its query; its score is replaced so garbage never
    # makes the batch invalid.
    yt = xp.where(mask, y_true, xp.zeros_like(y_true))
    ys = xp.where(mask, y_score, xp.zeros_like(y_score))
    real = xp.any(mask, axis=1)                     # a query with no real item is padding
    return _per_query_batches(yt, ys, None, mask, real, y_true.shape[0], ks, gain,
                              relevance_level, xp)


def _per_query_batches(yt, ys, query_id, retrieved, real, Q, ks, gain, relevance_level, xp):
    """One :class:`RankingBatch` per cut-off: the per-query values of
    :mod:`calipers.retrieval` (one segment sort per metric) of a padded ``(Q, L)``
    batch (``query_id`` None) or of flat rows with ``Q`` queries; ``real`` (Q,)
    marks the queries with a real row (the others are padding: NaN)."""
    from ..retrieval import _measures as R

    kk = list(ks) if len(ks) > 1 else ks[0]
    # flat rows with a static number of queries pass it on (ids 0 .. Q-1)
    seg = {"num_segments": Q} if query_id is not None and retrieved is not None else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        nd = R.ndcg(yt, ys, query_id, k=kk, gain=gain, retrieved=retrieved, **seg)
        rr = R.reciprocal_rank(yt, ys, query_id, relevance_level=relevance_level,
                               retrieved=retrieved, **seg)
        rc = R.recall_at_k(yt, ys, query_id, k=kk, relevance_level=relevance_level,
                           retrieved=retrieved, **seg)
        pk = R.precision_at_k(yt, ys, query_id, k=kk, relevance_level=relevance_level,
                              retrieved=retrieved, **seg)
        ap = R.average_precision(yt, ys, query_id, k=kk, relevance_level=relevance_level,
                                 retrieved=retrieved, **seg)
    dev = B.device(yt)
    # A batch-level failure makes the mean NaN although some query is defined.
    invalid = xp.asarray(False, device=dev)
    for r in (nd, rr, rc, pk, ap):
        nu = xp.asarray(r.n_undefined, device=dev)
        invalid = invalid | (xp.any(xp.isnan(xp.asarray(r.mean))) & (nu < Q))

    def per_k(r):
        return r.values if len(ks) > 1 else xp.reshape(r.values, (1, -1))

    ndv, rcv, pkv, apv = per_k(nd), per_k(rc), per_k(pk), per_k(ap)
    nan = xp.full_like(rr.values, math.nan)
    rrv = xp.where(real, rr.values, nan)
    return [RankingBatch(xp.where(real, ndv[i, :], nan), rrv, xp.where(real, rcv[i, :], nan),
                         invalid, real, xp.where(real, pkv[i, :], nan),
                         xp.where(real, apv[i, :], nan)) for i in range(len(ks))]


class QueryMeanSummary(NamedTuple):
    """What :meth:`QueryMeanState.compute` returns, one entry per metric ``(m,)``."""

    mean: Any         #: mean over defined queries; NaN when none (or invalid)
    count: Any        #: defined queries
    n_undefined: Any  #: undefined queries (left out of the mean)


@streaming_state(takes=("labels", "scores", "query_id"))
class QueryMeanState(NamedTuple):
    """Mergeable mean of per-query values over defined queries, for ``m`` metrics.

    ``total`` (m,) float sums of defined values, ``count`` (m,) and
    ``n_undefined`` (m,) integer counts, ``invalid`` invalid batches. NaN
    values are undefined queries: left out of the mean and counted, as
    :func:`calipers.retrieval.ndcg` does with ``undefined="skip"``. Padded
    queries (``mask`` False, or a :class:`RankingBatch`'s ``query_mask``
    False) are neither: they add nothing. Merge (``merge`` or ``psum``) adds
    the fields: counts merge exactly, sums up to the rounding of a different
    summation order. Limits: ``count`` and ``n_undefined`` each at most
    ``2**63 - 1`` (``2**31 - 1`` = 2147483647 on JAX without x64), checked
    eagerly (``ValueError``) and flagged under ``jit`` (``compute`` NaN).

    In a :class:`calipers.StateCollection` (``update_outputs``) the state
    takes a padded ``(Q, L)`` batch, or flat rows with ``query_id`` (n,)
    (and the static option ``num_queries`` under ``jit``); both go through
    :func:`ranking_batch_metrics`, whose per-query values are those of
    :mod:`calipers.retrieval` on the same rows. A query must lie within one
    batch: one split over batches counts once per batch, on each part.
    """

    total: Any
    count: Any
    n_undefined: Any
    invalid: Any

    @classmethod
    def init(cls, num_metrics=3, *, xp=None) -> QueryMeanState:
        """An empty state. A :class:`RankingBatch` feeds ``num_metrics=3`` (NDCG@k,
        reciprocal rank, recall@k) or ``5`` (adding precision@k and AP@k), in that order."""
        if isinstance(num_metrics, bool) or not isinstance(num_metrics, (int, np.integer)) \
                or num_metrics < 1:
            raise ValueError(f"num_metrics must be a positive integer, got {num_metrics!r}")
        xp = _namespace(xp)
        i = B.acc_int(xp)
        m = int(num_metrics)
        return cls(xp.zeros(m, dtype=B.acc_float(xp)), xp.zeros(m, dtype=i),
                   xp.zeros(m, dtype=i), xp.zeros((), dtype=i))

    def _count_totals(self):
        return (self.count, self.n_undefined)

    def update(self, values, *, mask=None, invalid=None) -> QueryMeanState:
        """Add per-query values: a :class:`RankingBatch`, ``m`` arrays (Q,), or (m, Q).

        With one metric a (Q,) array is accepted. ``mask`` (Q,), boolean or
        0/1: False / 0 marks a padded query, which adds nothing (a
        :class:`RankingBatch` brings its own ``query_mask``; a given ``mask``
        is combined with it). ``invalid`` (bool scalar) marks the batch
        invalid; a :class:`RankingBatch` brings its own.
        """
        xp = _state_xp(self)
        qmask = None
        if isinstance(values, dict):
            raise ValueError("values is a dict of RankingBatch by cut-off (ranking_batch_metrics "
                             f"with a sequence k: {sorted(values)}); feed each cut-off's batch "
                             "to its own QueryMeanState (state_k.update(batches[k]))")
        if isinstance(values, RankingBatch):
            if invalid is None:
                invalid = values.invalid
            qmask = values.query_mask
            values = values.metric_values(self.total.shape[0])
        if isinstance(values, (tuple, list)):
            values = _to(xp, *values)
            values = xp.stack(values)
        else:
            (values,) = _to(xp, values)
            if values.ndim == 1:
                values = xp.reshape(values, (1, -1))
        m = self.total.shape[0]
        if values.ndim != 2 or values.shape[0] != m:
            raise ValueError(f"this state holds {m} metric(s); got values of shape "
                             f"{tuple(values.shape)} (expected ({m}, queries))")
        Q = values.shape[1]
        mask, qmask = _to(xp, mask, qmask)
        keep, bad_m = _row_mask(mask, Q, xp)
        if qmask is not None:
            qmask = xp.astype(qmask, xp.bool)
            keep = qmask if keep is None else keep & qmask
        f = self.total.dtype
        v = xp.astype(values, f)
        undefined = xp.isnan(v)
        if keep is not None:
            real = xp.reshape(keep, (1, -1))
            undefined = undefined & real
            v = xp.where(real, v, xp.full_like(v, math.nan))      # padding: not summed
            n_real = xp.sum(xp.astype(keep, self.count.dtype))
        else:
            n_real = xp.astype(xp.asarray(Q), self.count.dtype)
        total = xp.sum(xp.where(xp.isnan(v), xp.zeros_like(v), v), axis=1)
        nu = xp.sum(xp.astype(undefined, self.count.dtype), axis=1)
        cnt = n_real - nu
        bad = xp.asarray(False) if invalid is None else xp.asarray(invalid)
        bad = bad | bad_m
        add = QueryMeanState(total, cnt, nu, xp.astype(bad, self.invalid.dtype))
        return merge(self, add)

    def _from_outputs(self, out, k=10, gain="linear", relevance_level=None, num_queries=None):
        """Per-query NDCG@k, reciprocal rank and recall@k (a state of 3 metrics), and
        precision@k and AP@k (a state of 5), by :func:`ranking_batch_metrics` (static
        options ``k``, default 10, ``gain``, ``relevance_level``) of

        * a padded ``(Q, L)`` batch: ``labels`` graded relevance, ``scores`` (or
          ``logits``), ``mask`` (Q, L) or (Q,); or
        * flat rows with ``query_id`` (n,): ``labels``, ``scores`` (or ``logits``),
          ``mask`` (n,); ``num_queries`` (static, ids ``0 .. num_queries - 1``) is
          required under ``jit``. Each query must lie within one batch: a query
          whose rows are split over batches counts as one query per batch.
        """
        if self.total.shape[0] not in (3, 5):
            raise ValueError("a QueryMeanState fed from model outputs holds the 3 or 5 metrics "
                             "of ranking_batch_metrics: make it with init(3) or init(5)")
        who = "QueryMeanState"
        src = out.require(who, "scores", "logits")
        if num_queries is not None and "query_id" not in out:
            raise ValueError("QueryMeanState's num_queries option is for flat rows: it needs "
                             "query_id= in the model outputs")
        batch = ranking_batch_metrics(out.labels(who), out.get(src), out.get("mask"),
                                      query_id=out.get("query_id"), num_queries=num_queries,
                                      k=k, gain=gain, relevance_level=relevance_level)
        return self.update(batch)

    def compute(self) -> QueryMeanSummary:
        """Means over defined queries, counts of defined and undefined queries.

        A metric with no defined query (no query added, or every one without
        a relevant item) has mean NaN, with one :class:`UndefinedMetricWarning`
        eagerly naming those metrics; under ``jit`` NaN and no warning.
        """
        xp = _state_xp(self)
        c = xp.astype(self.count, self.total.dtype)
        mean = self.total / xp.where(c > 0, c, xp.ones_like(c))
        bad = _bad(self, xp)
        V.warn_if((c == 0) & ~bad, lambda none: (
            f"QueryMeanState: no defined query for metric(s) "
            f"{np.flatnonzero(np.asarray(none)).tolist()} (no query added, or none with a "
            "relevant item): their mean is undefined; NaN"), xp, values=c == 0)
        mean = _nan_if((c == 0) | bad, mean, xp)
        return QueryMeanSummary(mean, self.count, self.n_undefined)
