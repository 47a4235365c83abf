"""Paired bootstrap of the difference between two models on the same examples.

Design: **sort once, resample by counts.**

* A replicate is a vector of resampling counts per example (how often each
  example is drawn), the same vector for model A and model B: that is what
  makes the comparison paired. The metric is evaluated with the counts as
  integer weights, which equals evaluating it on the resampled rows exactly
  (counts are accumulated in integers).
* Counts come from a counter-based generator (:mod:`calipers._bootstrap.resample`): a
  32-bit integer hash of (seed, replicate ``i``, draw ``k``) in uint32
  arithmetic (``k`` 64-bit, as two uint32 words), mapped to a row by an
  exact multiply-high. A replicate's counts
  are a function of the seed, ``i`` and the row in the caller's order only:
  never of either model's scores or of which model is A, so swapping the
  models mirrors every replicate exactly, and NumPy, array-api-strict, torch
  and JAX (eager, ``jit``, with or without x64) draw identical counts.
* The counts are then gathered into each kernel's order. For ROC AUC the
  counts are drawn straight in the layout [negatives in model A's score
  order | positives in model B's]: a replicate is one prefix sum of the
  layout's counts for both models, taken in blocks of 8 positions, then per
  model a gather at bounds found once by ``searchsorted`` and a dot product,
  in exact integers. AP sorts each model's scores stably in the
  caller's row order; log loss and Brier are weighted means of per-row losses
  computed once.
* Replicate ``i`` is evaluated one at a time per worker thread on NumPy
  (O(workers * n) memory) and in ``jit``-compiled chunks of ``batch``
  replicates on JAX (O(batch * n) memory; ``vmap``-ped on accelerators and
  sharded runs, one after another on a single CPU device, where several
  chunks run at once from worker threads). The answer does not
  depend on ``batch``, ``workers`` or how the chunks are sharded over
  devices, and peak memory does not grow with ``n_resamples``. No n x B index
  matrix is ever built.

Modules: :mod:`calipers._bootstrap.kernels` (the metric kernels),
:mod:`calipers._bootstrap.resample` (designs and count draws),
:mod:`calipers._bootstrap.engine` (compiled chunks and the NumPy loop),
:mod:`calipers._bootstrap.intervals` (percentile, basic, BCa, jackknife); this module
keeps the set-up and the public functions.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.compile import to_torch, torch_cpu_views
from .engine import (
    _compiled_draw, _compiled_pair, _default_batch, _is_trace_error, _run_jax_chunks, _run_loop)
from .kernels import (
    _APKernel, _AUCKernel, _AUCSplitKernel, _IndexKernel, _MeanKernel, _NAMES, _jax_int,
    _resolve_metric, _WeightKernel, evaluate_pair, host_cpu, split_state_numpy)
from .intervals import _interval, _jackknife
from .resample import (
    _build_design, _Design, _repeat_design, draw_batch, draw_counts, numpy_drawer, row_counts,
    seed_words, unit_weights)
from .._core.exceptions import BootstrapDesignWarning, UndefinedMetricWarning
from .._core.results import ConfidenceInterval, result_type
from .many import comparison_pairs, max_t
from .._core.types import Array, ArrayLike, SeedLike

__all__ = ["ConfidenceInterval", "BootstrapResult", "ManyModelsResult", "many_models_bootstrap",
           "paired_bootstrap", "paired_bootstrap_replicates"]


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
    standard_error: float
    n_undefined: int
    n_resamples: int
    prob_a_greater: float
    confidence_level: float
    method: str
    # ``field(...)`` reads as a default to type checkers: these come after the
    # fields without one
    bootstrap_distribution: np.ndarray = field(repr=False)
    distribution_a: np.ndarray = field(repr=False)
    distribution_b: np.ndarray = field(repr=False)
    alternative: str = "two-sided"
    pvalue: float = math.nan
    design: str = "rows"
    resampling: str = "multinomial"


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


def _check_workers(workers, xp, devices=None):
    if workers is None:
        return
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be None or a positive integer, got {workers!r}")
    if workers > 1 and B.is_jax(xp):
        import jax

        if devices is not None:
            raise ValueError("workers above 1 cannot be combined with devices: with devices the "
                             "replicates run as compiled chunks sharded over them (use batch)")
        if jax.default_backend() != "cpu":
            raise ValueError("workers above 1 applies to NumPy, array-api-strict and JAX on a "
                             "CPU device; on an accelerator the replicates run as compiled "
                             "chunks (use batch and devices)")


def _check_counts_options(n_resamples, batch, resampling, stratify, groups, block_length,
                          row_ids=None):
    if V.positive_int(n_resamples, "n_resamples") > 2**32:
        # replicate r is keyed by r as one uint32 word (calipers._resample._replicate_keys)
        raise ValueError(f"n_resamples must be at most 2**32 = {2**32} (replicates are keyed "
                         f"by a 32-bit index), got {n_resamples}")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, (int, np.integer))
                              or batch < 1):
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    resampling = V.choice(resampling, "resampling", ("multinomial", "poisson"))
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
    if row_ids is not None:
        if resampling != "poisson":
            raise ValueError("row_ids needs resampling='poisson': a Poisson count is a function "
                             "of (seed, replicate, row id) alone, while a multinomial row's "
                             f"count depends on every other row's; got resampling={resampling!r}")
        if designs:
            raise ValueError(f"row_ids keys plain row resampling; it cannot be combined with "
                             f"{' or '.join(designs)}")


def _setup(metric, kind, name, xp, y_true, a, b, sw, *, stratify, groups, num_groups,
           block_length, poisson, traced, row_ids=None):
    n = y_true.shape[0]
    if block_length is not None and block_length > n:
        raise ValueError(f"block_length={block_length} is larger than the number of samples n={n}")
    # Integer weights are repetitions: resample the sum(w) repeated units (eager
    # row designs); the counts then already hold the weights.
    w_rep = None
    if sw is not None and not traced and groups is None and block_length is None \
            and row_ids is None and xp.isdtype(sw.dtype, ("integral", "bool")):
        w_rep, sw = np.asarray(B.to_numpy(sw), dtype=np.int64), None
    # does the layout hold the class each model sums in that model's order?
    identity = (True, False)
    if kind == "fast":
        y01, _ = V.binary_labels(y_true, xp)
        if name == "average_precision":
            # no shared layout: each model sorts its own scores stably in the caller's
            # row order, so its float sums run in an order fixed by its own scores
            layout = None
            ka = kb = _APKernel()
            identity = (False, False)
        elif name == "roc_auc" and (traced or sw is not None):
            # the general kernel: class sizes are not static under jit, and with float
            # weights each model sorts its own scores in the caller's row order (as AP),
            # so its float sums run in an order fixed by its own scores: swapping the
            # models negates the replicates exactly and the other model cannot move them
            layout = None
            ka = kb = _AUCKernel()
            identity = (False, False)
        elif name == "roc_auc":
            # layout [negatives in A's score order | positives in B's]: A sums the
            # negatives, B the positives, both in the layout's own order (one prefix
            # sum of the counts serves both, no gather). The AUC is exact integers, so
            # the layout cannot move a value. JAX on the CPU: NumPy sorts several
            # times faster than XLA
            host = not traced and host_cpu(a, xp)
            sx, a_s, y_s = (B.numpy_namespace(), np.asarray(a), np.asarray(y01)) if host \
                else (xp, a, y01)
            layout = sx.argsort(a_s, stable=False)
            layout = sx.take(layout, sx.argsort(sx.take(y_s, layout), stable=True))
            N = int(xp.sum(1 - y01))
            b_s = np.asarray(b) if host else b
            pos = layout[N:]
            layout = sx.concat([layout[:N],
                                sx.take(pos, sx.argsort(sx.take(b_s, pos), stable=False))])
            # the sum of a replicate's counts: the number of draws (rows, units of
            # integer weights; multinomial rows and moving blocks), at most 16 per
            # unit (Poisson), else up to n per row (clusters)
            draws = n if w_rep is None else int(w_rep.sum())
            total = 16 * draws if poisson else (
                n * max(n, 16, draws) if groups is not None else draws)
            ka = _AUCSplitKernel(N, n - N, True, total_bound=total)
            kb = replace(ka, side=1)
            identity = (True, True)
            if host:
                layout = xp.asarray(layout.astype(_jax_int(xp)))
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
    state_a = ka.prepare(y_l, a_l, w_l, xp, identity[0])
    state_b = kb.prepare(y_l, b_l, w_l, xp, identity[1])
    if isinstance(ka, _AUCSplitKernel):
        # no row of the read class tied with the summed class: one gather less per replicate
        ka, kb = (replace(k, ties=_cross_ties(st, xp)) for k, st in ((ka, state_a), (kb, state_b)))

    # Resampling units in the caller's row order: the draws never see a layout.
    codes = None
    if groups is not None:
        if traced or num_groups is not None:
            if num_groups is None:
                raise ValueError("under jit, groups must be integer codes 0..num_groups-1 with "
                                 "a static num_groups")
            codes = (xp.astype(groups, B.acc_int(xp)) if B.is_jax(xp) else
                     np.asarray(B.to_numpy(groups), dtype=np.int64))
            if not traced:
                cn = B.to_numpy(codes)
                if cn.min() < 0 or cn.max() >= num_groups:
                    raise ValueError(f"groups must be integer codes in "
                                     f"[0, num_groups={num_groups})")
        else:
            _, inv = np.unique(B.to_numpy(groups), return_inverse=True)
            num_groups = int(inv.max()) + 1
            codes = inv.reshape(-1).astype(np.int64)
            if B.is_jax(xp):
                codes = xp.asarray(codes)
    y_codes = None
    if stratify:
        if traced:
            y_codes = V.binary_labels(y_true, xp)[0]
        else:
            yv = np.asarray(B.to_numpy(y_true))
            # 2-D labels (user metrics): one class per distinct row
            _, inv = np.unique(yv, return_inverse=True, axis=0 if yv.ndim == 2 else None)
            y_codes = inv.reshape(-1)
    if w_rep is not None:
        design, dd = _repeat_design(xp, n, layout, y_codes=y_codes, w=w_rep, poisson=poisson)
    else:
        design, dd = _build_design(xp, n, layout, y_codes=y_codes, groups_codes=codes,
                                   n_groups=num_groups, block_length=block_length,
                                   poisson=poisson, traced=traced, row_ids=row_ids)
    return _Setup(xp, n, ka, kb, state_a, state_b, design, dd, layout, kind)


def _cross_ties(state, xp):
    """Does a read row tie the summed class (a tie group there at some ``k_lo < k_hi``)?"""
    k_lo, k_hi = state.k_lo, state.k_hi
    return k_lo.shape[0] > 0 and bool(xp.any(k_lo != k_hi))


def _prepare_arrays(y_true, y_score_a, y_score_b, sample_weight, groups, kind="fast"):
    xp, (y_true, a, b, sw) = B.as_arrays(y_true, y_score_a, y_score_b, sample_weight)
    for name, x in (("y_true", y_true), ("y_score_a", a), ("y_score_b", b)):
        if kind == "fast":
            B.check_1d(name, x)
        elif x.ndim not in (1, 2):
            # user metrics: rows on the first axis, resampled together (e.g. (time, event))
            raise ValueError(f"{name} must be 1-D or 2-D (rows first), got an array of shape "
                             f"{tuple(x.shape)}")
    if sw is not None:
        B.check_1d("sample_weight", sw)
        V.check_weights("sample_weight", sw, xp)
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
    if kind == "fast" and not B.is_traced(y_true):
        # the labels first, with the one binary-label rule: the metric's own message
        # would offer options (pos_label, multi_class) the bootstrap does not take
        V.binary_labels(y_true, xp, pos_label_hint=False)
    return xp, y_true, a, b, sw, groups


def _prepare_row_ids(row_ids, xp, n):
    """``row_ids`` checked (1-D integers, one per row, non-negative and distinct eagerly),
    in the namespace the draws use (JAX arrays on JAX, else NumPy)."""
    if row_ids is None:
        return None
    if B.is_traced(row_ids):
        if row_ids.ndim != 1 or row_ids.shape[0] != n:
            raise ValueError(f"row_ids must have shape ({n},), got {tuple(row_ids.shape)}")
        if not xp.isdtype(row_ids.dtype, "integral"):
            raise ValueError(f"row_ids must be integers, got dtype {row_ids.dtype}")
        return row_ids
    ids = np.asarray(B.to_numpy(row_ids))
    if ids.ndim != 1 or ids.shape[0] != n:
        raise ValueError(f"row_ids must have one entry per row, shape ({n},), got shape "
                         f"{ids.shape}")
    if ids.dtype.kind not in "iu":
        raise ValueError(f"row_ids must be integers, got dtype {ids.dtype}")
    if ids.dtype.kind == "i" and n and ids.min() < 0:
        raise ValueError("row_ids must be non-negative")
    if np.unique(ids).size != n:
        raise ValueError("row_ids must be distinct (one global id per row)")
    if B.is_jax(xp):
        if ids.dtype.itemsize > 4 and ids.max(initial=0) >= 2**32 and B.acc_int(xp) != xp.int64:
            # JAX without x64 has no 64-bit integers: pass the ids as two uint32 words
            return (xp.asarray((ids & 0xFFFFFFFF).astype(np.uint32)),
                    xp.asarray((ids.astype(np.uint64) >> np.uint64(32)).astype(np.uint32)))
        return xp.asarray(ids) if ids.dtype.itemsize <= 4 or B.acc_int(xp) == xp.int64 \
            else xp.asarray(ids.astype(np.uint32))
    return ids


def _resolve_devices(devices):
    if devices is None:
        return None
    import jax

    # In a multi-process JAX job (jax.distributed) jax.devices() lists every
    # process's devices; the replicates come back to this process's host, so
    # only its own (addressable) devices can run them.
    if isinstance(devices, str) and devices == "all":
        return list(jax.local_devices())
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        avail = jax.local_devices()
        if not 1 <= devices <= len(avail):
            raise ValueError(f"devices={devices} but this process has {len(avail)} JAX devices")
        return list(avail[:devices])
    devs = list(devices)
    here = jax.process_index()
    other = sorted({d.process_index for d in devs if d.process_index != here})
    if other:
        raise ValueError(
            f"devices includes devices of other JAX processes {other} (this is process {here} "
            f"of {jax.process_count()}): paired_bootstrap runs on this process's devices only; "
            "pass devices=jax.local_devices() (or 'all'), or for one bootstrap over the rows of "
            "every process add per-process replicate sums of "
            "calipers.bootstrap_counts(row_ids, ...) (or PairedBootstrapState) with a "
            "cross-process psum")
    return devs


# --------------------------------------------------------------------------
# replicates only (jit-able on JAX)
# --------------------------------------------------------------------------

def paired_bootstrap_replicates(metric: Callable[..., Any] | str, y_true: ArrayLike,
                                y_score_a: ArrayLike, y_score_b: ArrayLike, *,
                                sample_weight: ArrayLike = None, n_resamples: int = 1000,
                                stratify: bool = False, groups: ArrayLike = None,
                                num_groups: int | None = None, block_length: int | None = None,
                                resampling: str = "multinomial", resample_by: str = "auto",
                                batch: int | None = None, seed: SeedLike = None, workers: int | None = None,
                                row_ids: ArrayLike = None) -> tuple[Array, Array]:
    """Replicated values of ``metric`` for models A and B on shared resamples.

    The engine of :func:`paired_bootstrap` without the intervals: returns
    ``(dist_a, dist_b)``, two float64 arrays of shape ``(n_resamples,)`` of the
    input backend (NumPy, array-api-strict, JAX: float32 without x64), NaN
    where a replicate is undefined. Arguments as :func:`paired_bootstrap`.

    Under ``jax.jit`` (arrays traced) the whole bootstrap is one compiled
    program: ``lax.map`` over chunks of ``batch`` ``vmap``-ped replicates
    (memory O(batch * n)); ``seed`` must then be a JAX key or an int, the
    metric a calipers fast metric or a JAX-traceable
    ``metric(y_true, y_score, *, sample_weight)``, ``groups`` integer codes
    ``0 .. num_groups - 1`` with a static ``num_groups``, and ``stratify``
    needs binary ``y_true``. Invalid values cannot raise there: they give NaN.
    Replicate ``i`` depends only on (seed, ``i``, row), so jit, eager, any
    ``batch`` and the NumPy path give the same counts for the same seed.

    ``row_ids`` (with ``resampling="poisson"``): the global id of each row, as
    :func:`paired_bootstrap`; traced ids are not checked (a negative one makes
    every replicate NaN; distinct ids are the caller's promise).
    """
    metric, kind, name = _resolve_metric(metric, resample_by)
    _check_counts_options(n_resamples, batch, resampling, stratify, groups, block_length,
                          row_ids)
    if kind == "fast":
        # torch CPU tensors: the same procedure on NumPy views of their memory
        views, arrays = torch_cpu_views(y_true, y_score_a, y_score_b, sample_weight, groups,
                                        row_ids)
        if views:
            out = paired_bootstrap_replicates(
                metric, *arrays[:3], sample_weight=arrays[3], n_resamples=n_resamples,
                stratify=stratify, groups=arrays[4], num_groups=num_groups,
                block_length=block_length, resampling=resampling, resample_by=resample_by,
                batch=batch, seed=seed, workers=workers, row_ids=arrays[5])
            return to_torch(out)
    xp, y_true, a, b, sw, groups = _prepare_arrays(y_true, y_score_a, y_score_b,
                                                   sample_weight, groups, kind)
    _check_workers(workers, xp)
    traced = B.is_traced(y_true, a, b, sw, groups, row_ids)
    row_ids = _prepare_row_ids(row_ids, xp, y_true.shape[0])
    if not traced:
        # validate through the metric's own messages (labels, scores, probabilities)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            _full_estimate(metric, kind, y_true, a, sw, "y_score_a")
            _full_estimate(metric, kind, y_true, b, sw, "y_score_b")
    if traced and kind == "indices":
        raise ValueError("under jit the metric must accept sample_weight (resample by weights); "
                         "index resampling of an arbitrary Python metric is eager only")
    s = _setup(metric, kind, name, xp, y_true, a, b, sw, stratify=stratify, groups=groups,
               num_groups=num_groups, block_length=block_length,
               poisson=resampling == "poisson", traced=traced, row_ids=row_ids)
    if traced:
        ra, rb = _traced_replicates(s, seed, n_resamples, batch)
        bad = None
        if kind == "fast":   # invalid input cannot raise under jit: NaN
            bad = _traced_invalid(name, xp, y_true, a, b, sw)
        if row_ids is not None and not isinstance(row_ids, tuple) and \
                xp.isdtype(row_ids.dtype, "signed integer"):
            neg = xp.any(row_ids < 0)
            bad = neg if bad is None else bad | neg
        if bad is not None:
            ra, rb = B.nan_if(bad, ra, xp), B.nan_if(bad, rb, xp)
        return ra, rb
    da, db, _ = _replicates(s, seed, n_resamples, batch, None, None, workers)
    if B.is_numpy(xp):
        return da, db
    return xp.asarray(da), xp.asarray(db)


def _traced_invalid(name, xp, y_true, a, b, sw):
    """Scalar flag: traced input that breaks a rule the eager path would raise on."""
    _, bad = V.binary_labels(y_true, xp)
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
    words = seed_words(seed)
    batch = batch or min(n_resamples, _default_batch(s.n))
    n_chunks = -(-n_resamples // batch)
    idtype = B.acc_int(xp)

    def one(c):
        return s.kernel_a.evaluate(s.state_a, c, xp), s.kernel_b.evaluate(s.state_b, c, xp)

    def chunk(ix):
        return jax.vmap(one)(draw_batch(s.design, s.design_data, words, ix, idtype))

    idx = jnp.arange(n_chunks * batch, dtype=idtype).reshape(n_chunks, batch)
    ra, rb = jax.lax.map(chunk, idx)
    return ra.reshape(-1)[:n_resamples], rb.reshape(-1)[:n_resamples]


def _replicates(s: _Setup, seed, n_resamples, batch, devices, progress, workers=None,
                words=None):
    """Eager engine choice: float64 NumPy arrays (metric A, metric B, difference).

    ``words``: the seed already as :func:`seed_words` gives it (``seed`` is then not
    read), so that several runs on one ``None`` or Generator seed draw the same counts.
    """
    xp = s.xp
    if words is None:
        words = seed_words(seed)
    if B.is_jax(xp) and devices is None and _host_split(s):
        # ROC AUC of concrete JAX arrays on the CPU: the NumPy loop draws the same counts
        # and sums the same exact integers, several times faster than XLA's CPU program
        return _replicates(_numpy_setup(s), None, n_resamples, batch, None, progress,
                           workers, words=np.asarray(words))
    if B.is_jax(xp):
        import jax.numpy as jnp

        words = jnp.asarray(words, dtype=jnp.uint32)
        if s.kind != "indices":
            try:
                return _run_jax_chunks(s.kernel_a, s.state_a, s.kernel_b, s.state_b, s.design,
                                       s.design_data, words, n_resamples,
                                       batch, devices, progress, workers)
            except Exception as exc:  # metric not traceable: evaluate eagerly below
                if s.kind != "weights" or not _is_trace_error(exc):
                    raise
        idt = B.acc_int(xp)
        draw_c = _compiled_draw(s.design, jnp.dtype(idt).name)

        def draw(r):
            return draw_c(jnp.asarray(r, dtype=jnp.uint32), words, s.design_data)

        return _run_loop(s.kernel_a, s.state_a, s.kernel_b, s.state_b, draw, xp,
                         n_resamples, progress)
    # uint8 counts where the consumer (the NumPy AUC kernel) widens its own sums
    small = B.is_numpy(xp) and isinstance(s.kernel_a, _AUCSplitKernel) \
        and isinstance(s.kernel_b, _AUCSplitKernel)
    np_draw = numpy_drawer(s.design, s.design_data, words, small)
    if B.is_numpy(xp):
        draw = np_draw
    else:   # array-api-strict, torch: NumPy's draws (the same integers), converted
        def draw(r):
            return xp.asarray(np_draw(r))
    return _run_loop(s.kernel_a, s.state_a, s.kernel_b, s.state_b, draw, xp, n_resamples,
                     progress, workers, s.n)


def _host_split(s: _Setup) -> bool:
    """JAX set-up of the split ROC AUC kernels whose arrays are concrete and on the CPU?"""
    return isinstance(s.kernel_a, _AUCSplitKernel) and isinstance(s.kernel_b, _AUCSplitKernel) \
        and s.state_a.integer is not None and s.state_b.integer is not None \
        and host_cpu(s.state_a.k_lo, s.xp) and host_cpu(s.state_b.k_lo, s.xp)


def _numpy_setup(s: _Setup) -> _Setup:
    """The same set-up (layout, design, kernels) with its arrays as NumPy arrays."""
    def conv(x):
        return None if x is None else np.asarray(x)

    arrays, layout = s.design_data
    return replace(s, xp=np, state_a=split_state_numpy(s.kernel_a, s.state_a),
                   state_b=split_state_numpy(s.kernel_b, s.state_b),
                   design_data=(tuple(conv(a) for a in arrays), conv(layout)),
                   layout=conv(s.layout))


_SCORE_ARG = re.compile(r"\by_(score|prob)\b")


def _full_estimate(metric, kind, y_true, s, sw, arg):
    """The metric on the full data; it validates the inputs with the metric's own rules.

    A calipers metric's message names its own score argument (``y_score``,
    ``y_prob``); here it names the caller's (``arg``: ``y_score_a`` or
    ``y_score_b``), so the error says which model's scores broke the rule.
    """
    try:
        return _full_estimate_raw(metric, kind, y_true, s, sw)
    except ValueError as exc:
        msg = str(exc)
        if kind != "fast" or not _SCORE_ARG.search(msg):
            raise
        raise ValueError(_SCORE_ARG.sub(arg, msg)) from exc


def _full_estimate_raw(metric, kind, y_true, s, sw):
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


def _exact_difference(s: _Setup, est_a, est_b):
    """The full-data difference the way replicates compute theirs (AUC: one division).

    Unit counts are the full data, so this is the replicate formula applied to
    it: a replicate equal to the estimate in exact arithmetic equals it here.
    """
    if s.kind == "fast" and isinstance(s.kernel_a, _AUCSplitKernel):
        xp = s.xp
        w = unit_weights(s.design, s.design_data[0])   # integer weights as repetitions
        ones = np.ones(s.n, dtype=np.int64) if w is None else w
        if s.layout is not None:
            ones = ones[np.asarray(B.to_numpy(s.layout))]
        if not B.is_numpy(xp):
            ones = xp.asarray(ones, dtype=B.acc_int(xp))
        if B.is_jax(xp):
            va, vb, vd = _compiled_pair(s.kernel_a, s.kernel_b)(ones, s.state_a, s.state_b)
        else:
            va, vb, vd = evaluate_pair(s.kernel_a, s.state_a, s.kernel_b, s.state_b, ones, xp)
        if float(va) == est_a and float(vb) == est_b:
            return float(vd)
    return est_a - est_b


# --------------------------------------------------------------------------
# the public function
# --------------------------------------------------------------------------

MIN_UNITS, MIN_MINORITY, MIN_DISTINCT = 10, 5, 10


def _warn_degenerate(s, y_true, stratify, d_ok) -> None:
    """Warn when the design is too small for an interval to mean anything.

    The rule (stated in :class:`calipers.BootstrapDesignWarning`): fewer than
    10 resampling units (rows, clusters, or ``n // block_length`` blocks),
    fewer than 5 minority-class rows under
    stratification, or fewer than 10 distinct replicated differences. A
    bootstrap of 4 rows can only produce a handful of distinct resamples, and
    its "interval" is a statement about those, not about the population.
    """
    design = s.design
    # blocks: the disjoint blocks the data holds (a resample is about that many
    # blocks, whatever the number of possible starts)
    if design.repeat or design.kind == "cluster":
        units = design.n_units
    elif design.kind == "block":
        units = max(1, design.n // design.block_length)
    else:
        units = s.n
    unit_name = {"cluster": "clusters", "block": "blocks"}.get(design.kind, "rows")
    reasons = []
    if units < MIN_UNITS:
        reasons.append(f"{units} resampling {unit_name} (fewer than {MIN_UNITS})")
    if stratify and design.kind == "stratified":
        yv = np.asarray(B.to_numpy(y_true))
        _, counts = np.unique(yv, return_counts=True, axis=0 if yv.ndim == 2 else None)
        if counts.size and counts.min() < MIN_MINORITY:
            reasons.append(f"{int(counts.min())} rows of the minority class "
                           f"(fewer than {MIN_MINORITY})")
    distinct = np.unique(d_ok).size
    if distinct < MIN_DISTINCT:
        reasons.append(f"{distinct} distinct replicated differences (fewer than {MIN_DISTINCT})")
    if reasons:
        B.warn("the bootstrap interval rests on " + "; ".join(reasons) + ": it does not "
               "measure uncertainty. Use more data or an exact test "
               "(paired_permutation_test, mcnemar).", BootstrapDesignWarning)


def paired_bootstrap(metric: Callable[..., Any] | str, y_true: ArrayLike, y_score_a: ArrayLike,
                     y_score_b: ArrayLike, *, sample_weight: ArrayLike = None,
                     n_resamples: int = 1000, confidence_level: float = 0.95,
                     method: str = "percentile", alternative: str = "two-sided",
                     stratify: bool = False, groups: ArrayLike = None,
                     block_length: int | None = None, resampling: str = "multinomial",
                     resample_by: str = "auto", batch: int | None = None, seed: SeedLike = None,
                     devices: Any = None,
                     workers: int | None = None, jackknife_groups: int = 100,
                     progress: Callable[[int], None] | None = None,
                     row_ids: ArrayLike = None) -> BootstrapResult:
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
    y_true : array (n,), or (n, k) for user metrics
        Labels: in {0, 1}, {-1, 1} or bool for the fast metrics (else
        ``ValueError``); passed unchanged to
        other metrics, whose rows (first axis) are resampled together, so a
        survival metric can take ``(time, event)`` rows.
    y_score_a, y_score_b : arrays (n,), or (n, k) for user metrics
        Scores (or probabilities) of the two models for the same examples.
    sample_weight : array (n,), optional
        Non-negative row weights. Integer dtype (eager, row or stratified
        designs): repetitions. The bootstrap resamples the ``sum(w)``
        repeated units (unit j is row ``searchsorted(cumsum(w), j,
        side="right")``), so the counts, replicates and intervals are those
        of bootstrapping the repeated rows (bit for bit for AUC; BCa's
        jackknife deletes units, in at most ``jackknife_groups`` groups).
        Float weights, clusters, blocks and traced weights: weights on the
        resampled rows, a replicate's weights being ``counts * weights``.
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
        ``stratify`` or ``block_length``. Drawn by inverse CDF from the same
        uint32 words on every backend (count probabilities resolved to 2**-32).
    resample_by : {"auto", "weights", "indices"}
        Force weight or index resampling for a user metric.
    batch : int, optional
        Replicates per compiled chunk on JAX (default: about 2**20 / n); peak
        memory O(batch * n) whatever ``n_resamples`` is. The replicates do not
        depend on it. NumPy and array-api-strict run one replicate at a time
        per worker (memory O(workers * n)); ``batch`` is not used there.
    seed : None, int, NumPy Generator or SeedSequence, or JAX key
        Becomes two uint32 words (an int through ``SeedSequence(seed)``, a
        Generator by two draws, a JAX key by its key data). Replicate ``i``'s
        counts are a function of those words, ``i`` and the row index in the
        input order only (a counter-based hash, Salmon et al. 2011's idea
        with MurmurHash3's finaliser): the same seed gives the same
        replicates on NumPy, array-api-strict, torch and JAX (eager or jit,
        with or without x64) whatever ``batch``, ``workers`` or ``devices``,
        and swapping the models negates every replicated difference exactly.
        A row is drawn by ``floor(u * n / 2**32)`` of a uint32 word ``u``:
        each row's probability is within ``n / 2**32`` (relative) of 1/n.
    devices : None, int, "all" or a list of JAX devices
        Shard each chunk's replicates over these devices
        (``jax.sharding.NamedSharding`` over a one-axis mesh). The replicates
        are identical to the single-device ones for the same key. ``"all"``
        and an int count this process's devices (``jax.local_devices()``);
        in a multi-process job (``jax.distributed``) a list holding another
        process's device is a ``ValueError``: each process bootstraps the
        rows it was given, and one bootstrap over every process's rows adds
        per-process replicate sums of :func:`calipers.bootstrap_counts` by
        global row id (or :class:`calipers.PairedBootstrapState`) with a
        cross-process ``psum``.
    workers : int or None
        NumPy / array-api-strict: threads evaluating replicates (NumPy releases
        the GIL in the draws, gathers and prefix sums); memory O(workers * n).
        JAX on one CPU device: threads each running compiled chunks (a chunk
        releases the GIL while XLA runs it); memory O(workers * batch * n).
        Default None: calipers' own kernels (ROC AUC, AP, log loss, Brier), and
        every metric's compiled chunks on a JAX CPU device, use up to the cores
        available to the process, at most 4 and fewer for large n (their
        buffers stay under about 256 MB in all), and keep the threads only
        where a timed trial shows they pay; any other metric runs in the
        caller's thread (it may not be thread-safe). The replicates do not
        depend on it. Raises ``ValueError`` above 1 with ``devices`` or on an
        accelerator (there use ``batch`` and ``devices``).
    jackknife_groups : int
        Most groups of the grouped jackknife (BCa only).
    progress : callable, optional
        Called with the number of replicates just finished; calls sum to B.
    row_ids : integer array (n,), optional
        The global id of each row (non-negative, distinct, below 2**64;
        int64/uint64, or on JAX without x64 ids below 2**32 or NumPy int64
        ids, split into words here). Row ``i``'s count in replicate ``r`` is
        then :func:`calipers.bootstrap_counts` ``(row_ids[i], r, seed=seed)``
        instead of a function of its position ``i``: a partition of the data
        run with its rows' global ids draws exactly its part of the full
        run's counts, so per-partition replicate sums (and
        :class:`calipers.PairedBootstrapState`) add up to one machine's.
        ``row_ids=arange(n)`` gives the replicates of no ``row_ids``. Needs
        ``resampling="poisson"`` and plain rows (no ``stratify``, ``groups``
        or ``block_length``): ``ValueError`` otherwise (the multinomial design
        ties each row's count to every other row's). With ``row_ids``,
        ``sample_weight`` (integer or float) multiplies each row's count (a
        replicate's weights are ``counts * w``), as for float weights.

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
    _check_counts_options(n_resamples, batch, resampling, stratify, groups, block_length,
                          row_ids)
    confidence_level = V.confidence_level(confidence_level)
    method_l = method.lower() if isinstance(method, str) else method
    method_l = V.choice(method_l, "method", ("percentile", "basic", "bca"))
    alternative = V.choice(alternative, "alternative", ("two-sided", "less", "greater"))
    V.positive_int(jackknife_groups, "jackknife_groups", minimum=2)
    if kind == "fast" and devices is None:
        # torch CPU tensors: the same procedure on NumPy views of their memory (the
        # result holds Python floats and NumPy arrays on either path)
        _, (y_true, y_score_a, y_score_b, sample_weight, groups, row_ids) = torch_cpu_views(
            y_true, y_score_a, y_score_b, sample_weight, groups, row_ids)
    xp, y_true, a, b, sw, groups = _prepare_arrays(y_true, y_score_a, y_score_b,
                                                   sample_weight, groups, kind)
    if B.is_traced(y_true, a, b, sw, groups, row_ids):
        raise ValueError("paired_bootstrap returns Python floats and cannot run on traced "
                         "arrays; under jax.jit use paired_bootstrap_replicates")
    if devices is not None and not B.is_jax(xp):
        raise ValueError("devices applies to JAX arrays only")
    _check_workers(workers, xp, devices)
    devs = _resolve_devices(devices)

    # Full-data estimates, which also validate every input with the metric's own messages.
    est_a = float(_full_estimate(metric, kind, y_true, a, sw, "y_score_a"))
    est_b = float(_full_estimate(metric, kind, y_true, b, sw, "y_score_b"))

    row_ids = _prepare_row_ids(row_ids, xp, y_true.shape[0])
    s = _setup(metric, kind, name, xp, y_true, a, b, sw, stratify=stratify, groups=groups,
               num_groups=None, block_length=block_length,
               poisson=resampling == "poisson", traced=False, row_ids=row_ids)
    da, db, diff = _replicates(s, seed, n_resamples, batch, devs, progress, workers)

    ok = np.isfinite(diff)
    n_undefined = int(n_resamples - ok.sum())
    if n_undefined:
        B.warn_undefined(f"{n_undefined} of {n_resamples} bootstrap replicates are undefined "
                         f"(metric NaN for model A or B); they are left out")
    d_ok = diff[ok]
    _warn_degenerate(s, y_true, stratify, d_ok)
    difference = _exact_difference(s, est_a, est_b)
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


# --------------------------------------------------------------------------
# many models on the same resamples
# --------------------------------------------------------------------------

@result_type(meta=("comparisons", "n_resamples", "confidence_level", "design", "resampling"))
class ManyModelsResult:
    """What :func:`many_models_bootstrap` returns (``m`` comparisons of ``K`` models).

    Attributes
    ----------
    comparisons : tuple of (int, int)
        Comparison ``j`` is ``(a, b)``: the difference ``metric(model a) -
        metric(model b)``, models numbered by their position in ``y_scores``.
    estimates : ndarray (K,), float64
        Each model's metric on the full data.
    difference : ndarray (m,), float64
        The full-data differences ``d_j``.
    confidence_interval : ConfidenceInterval of ndarrays (m,)
        Marginal percentile interval of each difference alone (each covers
        its own difference with probability about ``confidence_level``).
    simultaneous_interval : ConfidenceInterval of ndarrays (m,)
        Max-T interval ``d_j -+ critical_value * standard_error_j``: all ``m``
        intervals cover their differences at once with probability about
        ``confidence_level``.
    critical_value : float
        ``c``, the type-7 (linear interpolation, NumPy's default)
        ``confidence_level`` quantile of ``max_j |d*_j - d_j| / sd_j``.
    standard_error : ndarray (m,), float64
        Bootstrap standard deviation (ddof=1) ``sd_j`` of each difference.
    pvalue : ndarray (m,), float64
        Unadjusted two-sided bootstrap p-value of "no difference" for each
        comparison alone: the share of replicates with ``|d*_j - d_j| / s_j
        >= |d_j| / s_j`` (the null distribution is the replicates centred at
        the estimate). No +1 correction: 0 means below ``1 / n_resamples``.
    pvalue_romano_wolf : ndarray (m,), float64
        Romano-Wolf step-down adjusted p-values (family-wise error rate over
        the ``m`` comparisons); ``>= pvalue`` and non-decreasing in the order
        of decreasing ``|d_j| / s_j``.
    bootstrap_distribution : ndarray (n_resamples, m), float64
        Replicated differences, NaN where undefined.
    distributions : ndarray (n_resamples, K), float64
        Replicated metric of each model on the same resamples (NaN where
        undefined).
    n_undefined : int
        Replicates in which any comparison was undefined; left out of every
        interval, critical value and p-value.
    n_resamples : int
    confidence_level : float
    design : str
        ``"rows"``, ``"stratified rows"``, ``"clusters"`` or ``"moving blocks"``.
    resampling : str
        ``"multinomial"`` or ``"poisson"``.
    """

    comparisons: tuple
    estimates: np.ndarray
    difference: np.ndarray
    confidence_interval: ConfidenceInterval
    simultaneous_interval: ConfidenceInterval
    critical_value: float
    standard_error: np.ndarray
    pvalue: np.ndarray
    pvalue_romano_wolf: np.ndarray
    bootstrap_distribution: np.ndarray
    distributions: np.ndarray
    n_undefined: int
    n_resamples: int
    confidence_level: float
    design: str = "rows"
    resampling: str = "multinomial"


def many_models_bootstrap(metric: Callable[..., Any] | str, y_true: ArrayLike, *y_scores: ArrayLike,
                          comparisons: str = "baseline", baseline: int = 0,
                          sample_weight: ArrayLike = None, n_resamples: int = 1000,
                          confidence_level: float = 0.95, stratify: bool = False,
                          groups: ArrayLike = None, block_length: int | None = None,
                          resampling: str = "multinomial", resample_by: str = "auto",
                          batch: int | None = None, seed: SeedLike = None, workers: int | None = None,
                          progress: Callable[[int], None] | None = None) -> ManyModelsResult:
    """K models compared in one paired bootstrap: simultaneous intervals and adjusted p-values.

    Every comparison is evaluated on the same resamples (replicate ``r`` is
    the same resampled rows for every model), so the replicated differences
    have their joint distribution and one can ask for intervals that cover
    **all** differences at once, and p-values adjusted for the whole family
    that use how the comparisons move together (two models that err alike
    count as nearly one test, where Bonferroni and Holm count two).

    Parameters
    ----------
    metric : callable or str
        As :func:`calipers.paired_bootstrap` (``roc_auc_score``,
        ``average_precision_score``, ``log_loss``, ``brier_score_loss`` or
        their names on the fast path; any metric taking ``sample_weight``, or
        resampled rows).
    y_true : array (n,), or (n, k) for user metrics
        Labels, as :func:`calipers.paired_bootstrap`.
    *y_scores : arrays (n,) (or (n, k) for user metrics), at least two
        The scores of the K models on the same examples, one positional
        argument per model.
    comparisons : {"baseline", "all_pairs"}
        ``"baseline"``: every other model against ``y_scores[baseline]``,
        comparison ``(k, baseline)`` with difference ``metric(k) -
        metric(baseline)``, in the order of ``y_scores``. ``"all_pairs"``:
        every pair ``(i, j)``, ``i < j``, difference ``metric(i) - metric(j)``.
    baseline : int
        Index of the baseline model in ``y_scores`` (``"baseline"`` only).
    sample_weight, stratify, groups, block_length, resampling, resample_by, batch, workers
        As :func:`calipers.paired_bootstrap`; the one design serves every
        comparison.
    n_resamples : int
        Number of replicates B (>= 1).
    confidence_level : float in (0, 1)
        Of the marginal and of the simultaneous intervals.
    seed : None, int, NumPy Generator or SeedSequence, or JAX key
        Read once (two uint32 words, as :func:`calipers.paired_bootstrap`):
        every comparison draws its counts from those words, so with the same
        int seed comparison ``(a, b)``'s replicates equal
        ``paired_bootstrap_replicates(metric, y_true, y_scores[a],
        y_scores[b], seed=seed)`` exactly. ``None`` draws fresh entropy once.
    progress : callable, optional
        Called with the number of replicates just finished; calls sum to
        ``n_resamples * m``.

    Returns
    -------
    ManyModelsResult
        Per comparison: difference, marginal percentile interval,
        simultaneous max-T interval, standard error, unadjusted and
        Romano-Wolf p-values; the critical value, the replicated values and
        ``n_undefined``.

    Conventions
    -----------
    * The full-data difference ``d_j`` and the replicates ``d*_j`` are those
      of :func:`calipers.paired_bootstrap` for the pair (AUC differences by
      one division of the integer Mann-Whitney numerators).
    * Studentisation: ``s_j`` is the bootstrap standard deviation (ddof=1)
      of ``d*_j``; a comparison with ``s_j = 0`` (all replicates equal, for
      example a model compared with a copy of itself) is not divided.
    * Max-T: ``c`` is the type-7 ``confidence_level`` quantile of ``T* =
      max_j |d*_j - d_j| / s_j`` over the defined replicates; the interval
      is ``[d_j - c s_j, d_j + c s_j]``. With one comparison it is the
      symmetric interval ``d -+ q(|d* - d|)``, which differs from the
      (equal-tailed) percentile interval.
    * P-values are two-sided, for "difference = 0", with the replicates
      centred at the estimate as the null distribution (Romano & Wolf 2005,
      2016): unadjusted ``p_j = #{|d*_j - d_j| / s_j >= |d_j| / s_j} / B'``,
      step-down as :func:`romano_wolf` describes, over the ``B'`` defined
      replicates, without a +1 correction. They differ from
      :func:`calipers.paired_bootstrap`'s ``pvalue`` (which inverts the
      equal-tailed percentile interval). The step-down p-values are never
      below the unadjusted ones and never above the single-step max-T
      p-values ``#{T* >= |d_j| / s_j} / B'``.
    * Undefined replicates (the metric NaN for some model, for example an
      AUC of a resample with one class) are counted in ``n_undefined``, kept
      as NaN in the distributions, and every joint quantity (both intervals,
      critical value, p-values, standard errors) uses only the replicates in
      which every comparison is defined, so all comparisons rest on the same
      resamples; an :class:`UndefinedMetricWarning` says how many.

    Raises
    ------
    ValueError
        Fewer than two models; ``comparisons`` or ``baseline`` out of their
        domains; every option and input error of
        :func:`calipers.paired_bootstrap` (each message names the argument,
        ``y_scores[k]`` for model ``k``); traced (``jit``) input: the result
        holds Python floats, use :func:`calipers.paired_bootstrap_replicates`
        per pair there.

    Notes
    -----
    Each comparison is one run of the paired engine (one sort per model,
    O(n) per replicate and model for the fast metrics): m comparisons cost m
    paired bootstraps, each drawing the same counts from the seed.

    References
    ----------
    Romano, J. P. & Wolf, M. (2005). Exact and approximate stepdown methods
    for multiple hypothesis testing. JASA 100(469), 94-108.
    Romano, J. P. & Wolf, M. (2016). Efficient computation of adjusted
    p-values for resampling-based stepdown multiple testing. Statistics &
    Probability Letters 113, 38-40.
    Westfall, P. H. & Young, S. S. (1993). Resampling-Based Multiple Testing.
    """
    metric, kind, name = _resolve_metric(metric, resample_by)
    k = len(y_scores)
    if k < 2:
        raise ValueError(f"y_scores must hold at least two models (one positional score array "
                         f"per model), got {k}")
    pairs = comparison_pairs(k, comparisons, baseline)
    _check_counts_options(n_resamples, batch, resampling, stratify, groups, block_length)
    confidence_level = V.confidence_level(confidence_level)
    xp, arrays = B.as_arrays(y_true, *y_scores, sample_weight)
    y_true, scores, sw = arrays[0], list(arrays[1:-1]), arrays[-1]
    if B.is_traced(y_true, *scores, sw, groups):
        raise ValueError("many_models_bootstrap returns Python floats and cannot run on traced "
                         "arrays; under jax.jit use paired_bootstrap_replicates per pair")
    for i, s in enumerate(scores):
        if kind == "fast":
            B.check_1d(f"y_scores[{i}]", s)
        if s.shape[0] != y_true.shape[0]:
            raise ValueError(f"y_scores[{i}] has {s.shape[0]} rows but y_true has "
                             f"{y_true.shape[0]}; they must match")
    _check_workers(workers, xp)
    words = seed_words(seed)

    est = np.empty(k)
    for i, s in enumerate(scores):
        est[i] = float(_full_estimate(metric, kind, y_true, s, sw, f"y_scores[{i}]"))

    m = len(pairs)
    dist = np.full((n_resamples, k), math.nan)
    d_rep = np.empty((n_resamples, m))
    diff = np.empty(m)
    setups = []
    for j, (a, b) in enumerate(pairs):
        _, yy, sa, sb, ww, gg = _prepare_arrays(y_true, scores[a], scores[b], sw, groups, kind)
        s = _setup(metric, kind, name, xp, yy, sa, sb, ww, stratify=stratify, groups=gg,
                   num_groups=None, block_length=block_length,
                   poisson=resampling == "poisson", traced=False)
        ra, rb, rd = _replicates(s, None, n_resamples, batch, None, progress, workers,
                                 words=words)
        dist[:, a], dist[:, b] = ra, rb
        d_rep[:, j] = rd
        diff[j] = _exact_difference(s, float(est[a]), float(est[b]))
        setups.append(s)

    ok = np.all(np.isfinite(d_rep), axis=1)
    n_ok = int(ok.sum())
    n_undefined = int(n_resamples - n_ok)
    if n_undefined:
        B.warn_undefined(f"{n_undefined} of {n_resamples} bootstrap replicates are undefined "
                         f"(metric NaN for some model); they are left out")
    d_ok = d_rep[ok]
    # the design warning once, on the comparison with the fewest distinct differences
    fewest = min(range(m), key=lambda j: np.unique(d_ok[:, j]).size)
    _warn_degenerate(setups[fewest], y_true, stratify, d_ok[:, fewest])

    marg_lo, marg_hi = np.empty(m), np.empty(m)
    for j in range(m):
        ci = _interval(d_ok[:, j], float(diff[j]), "percentile", confidence_level,
                       "two-sided", None)
        marg_lo[j], marg_hi[j] = ci.low, ci.high
    sd, crit, sim_lo, sim_hi, pvalue, p_rw = max_t(d_ok, diff, confidence_level)
    return ManyModelsResult(
        comparisons=pairs, estimates=est, difference=diff,
        confidence_interval=ConfidenceInterval(marg_lo, marg_hi),
        simultaneous_interval=ConfidenceInterval(sim_lo, sim_hi), critical_value=crit,
        standard_error=sd, pvalue=pvalue, pvalue_romano_wolf=p_rw, bootstrap_distribution=d_rep,
        distributions=dist, n_undefined=n_undefined, n_resamples=int(n_resamples),
        confidence_level=float(confidence_level), design=setups[0].design.label,
        resampling=resampling)
