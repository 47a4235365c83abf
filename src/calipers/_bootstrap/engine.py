"""Bootstrap engines: compiled, ``vmap``-ped JAX chunks and the NumPy replicate loop."""

from __future__ import annotations

import os
import warnings

import numpy as np

from .._core.compile import program
from .._core import xp as B
from .._core.exceptions import UndefinedMetricWarning
from . import resample as _resample
from .kernels import _AUCSplitKernel, _IndexKernel, _WeightKernel, evaluate_pair
from .resample import draw_batch, draw_checked, draw_counts


# --------------------------------------------------------------------------
# engines
# --------------------------------------------------------------------------

def _default_batch(n, sequential=False):
    # About 2**20 elements per chunk of vmapped replicates: each intermediate array
    # stays a few MB, while small n still gets many replicates per call. One
    # replicate after another (CPU), only the chunk's counts are held (2**22
    # elements): larger chunks cost fewer calls. Both are tuning constants
    # (time them with paired_bootstrap(batch=...) in benchmarks/bench_bootstrap.py).
    return max(1, min(4096, (1 << (22 if sequential else 20)) // max(n, 1)))


def _compiled_chunk(kernel_a, kernel_b, design, idtype_name, sequential=False):
    return program(("bootstrap_chunk", kernel_a, kernel_b, design, idtype_name, sequential),
                   lambda: _build_chunk(kernel_a, kernel_b, design, idtype_name, sequential))


def _build_chunk(kernel_a, kernel_b, design, idtype_name, sequential=False):
    """The compiled chunk: replicates ``idx`` -> (metric A, metric B, A - B).

    ``sequential``: the chunk's replicates one after another (``lax.map``)
    instead of ``vmap``-ped side by side. On CPU the loop is the faster one
    (each operation is already wide enough for the cores, and the batched
    gathers and scatter under ``vmap`` cost more than the loop); on
    accelerators the batch
    keeps the device busy. The values are the same.
    """
    import jax
    import jax.numpy as jnp

    xp = _jax_xp()
    idtype = jnp.dtype(idtype_name)

    def evaluate(c, sa, sb):
        return evaluate_pair(kernel_a, sa, kernel_b, sb, c, xp)

    # Two programs, the counts materialised between them: compiled together,
    # XLA fuses an elementwise draw (the Poisson hash) into each of its five
    # consumers and recomputes it there (an optimization barrier does not stop
    # it on CPU); apart, the draw runs once.
    if not sequential:
        draw_b = jax.jit(lambda idx, words, dd: draw_batch(design, dd, words, idx, idtype))
        evaluate_b = jax.jit(jax.vmap(evaluate, in_axes=(0, None, None)))
        return lambda idx, words, sa, sb, dd: evaluate_b(draw_b(idx, words, dd), sa, sb)

    # One replicate after another: the fast draws (for the AUC kernels' integer
    # path, which widens the counts itself, plain multinomial counts travel as
    # uint8 modulo 256: about a fifth less time in the gathers on CPU), then per
    # replicate either those counts or, where they are not exact (a row drawn 256
    # times or more, or a Poisson total outside the top-up's range), the exact
    # draw: the same integers. A cond per replicate is a real branch here.
    small = _resample.small_counts(design) \
        and isinstance(kernel_a, _AUCSplitKernel) and isinstance(kernel_b, _AUCSplitKernel)

    def programs(small):
        draw_s = jax.jit(lambda idx, words, dd: jax.lax.map(
            lambda i: draw_checked(design, dd, words, i, jnp, idtype, small), idx))

        def one(c, ok, i, words, dd, sa, sb):
            return jax.lax.cond(ok, lambda: evaluate(c, sa, sb),
                                lambda: evaluate(draw_counts(design, dd, words, i, jnp, idtype),
                                                 sa, sb))

        evaluate_s = jax.jit(lambda c, ok, idx, words, dd, sa, sb: jax.lax.map(
            lambda t: one(t[0], t[1], t[2], words, dd, sa, sb), (c, ok, idx)))

        def run(idx, words, sa, sb, dd):
            c, ok = draw_s(idx, words, dd)
            return evaluate_s(c, ok, idx, words, dd, sa, sb)
        return run

    run_small, run_wide = programs(True) if small else None, programs(False)

    def chunk(idx, words, sa, sb, dd):
        # (small only with the blocked path in both states: the others sum counts in their dtype)
        if small and sa.integer is not None and sb.integer is not None:
            return run_small(idx, words, sa, sb, dd)
        return run_wide(idx, words, sa, sb, dd)

    return chunk


def _compiled_pair(kernel_a, kernel_b):
    """One replicate's ``evaluate_pair`` as one compiled program (eager JAX would
    dispatch its few hundred operations one by one)."""
    def build():
        import jax

        xp = _jax_xp()
        return jax.jit(lambda c, sa, sb: evaluate_pair(kernel_a, sa, kernel_b, sb, c, xp))

    return program(("bootstrap_pair", kernel_a, kernel_b), build)


def _compiled_masked(kernel_a, kernel_b, idtype_name):
    """Grouped jackknife on JAX: evaluate with group g deleted, vmapped over g."""
    return program(("bootstrap_jackknife", kernel_a, kernel_b, idtype_name),
                   lambda: _build_masked(kernel_a, kernel_b, idtype_name))


def _build_masked(kernel_a, kernel_b, idtype_name):
    import jax
    import jax.numpy as jnp

    xp = _jax_xp()
    idtype = jnp.dtype(idtype_name)

    def one(g, grp, sa, sb):
        c = (grp != g).astype(idtype)
        return kernel_a.evaluate(sa, c, xp), kernel_b.evaluate(sb, c, xp)

    return jax.jit(jax.vmap(one, in_axes=(0, None, None, None)))


def _compiled_draw(design, idtype_name):
    return program(("bootstrap_draw", design, idtype_name),
                   lambda: _build_draw(design, idtype_name))


def _build_draw(design, idtype_name):
    import jax
    import jax.numpy as jnp

    idtype = jnp.dtype(idtype_name)
    return jax.jit(lambda i, words, dd: draw_counts(design, dd, words, i, jnp, idtype))


def _jax_xp():
    import array_api_compat
    import jax.numpy as jnp

    return array_api_compat.array_namespace(jnp.zeros(1))


def _mesh_sharding(devices):
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), ("replicates",))
    return (NamedSharding(mesh, PartitionSpec("replicates")),
            NamedSharding(mesh, PartitionSpec()))


def _run_jax_chunks(kernel_a, sa, kernel_b, sb, design, dd, words, n_resamples, batch,
                    devices, progress, workers=None):
    """Compiled chunks of ``batch`` replicates; float64 NumPy arrays (A, B, A - B).

    On one CPU device the chunks run one replicate after another inside
    (``sequential``), and several chunks at once from ``workers`` threads:
    XLA's CPU executions overlap and a chunk releases the GIL while it runs.
    ``workers`` None there: up to :func:`default_workers`, kept only where they
    pay (:func:`_run_spans` times them). Elsewhere one thread.
    """
    import jax
    import jax.numpy as jnp

    idtype = B.acc_int(_jax_xp())
    sharded = devices is not None and len(devices) > 1
    sequential = not sharded and jax.default_backend() == "cpu"
    fn = _compiled_chunk(kernel_a, kernel_b, design, jnp.dtype(idtype).name, sequential)
    batch = batch or _default_batch(design.n, sequential)
    shard = None
    if sharded:
        batch = -(-batch // len(devices)) * len(devices)
        shard, repl = _mesh_sharding(devices)
        sa, sb, dd, words = jax.device_put((sa, sb, dd, words), repl)
    # Preallocated host results: chunk outputs are copied in and their device
    # buffers freed at once (keeping views of them made memory grow with B).
    out_a, out_b, out_d = np.empty(n_resamples), np.empty(n_resamples), np.empty(n_resamples)

    def run(start, stop):
        # A whole chunk of indices even for the last one: one compiled shape;
        # replicate i depends only on (seed, i), so the extra ones are discarded.
        m = stop - start
        idx = jnp.arange(start, start + batch, dtype=jnp.uint32)
        if shard is not None:
            idx = jax.device_put(idx, shard)
        ra, rb, rd = fn(idx, words, sa, sb, dd)
        out_a[start:stop] = np.asarray(ra)[:m]
        out_b[start:stop] = np.asarray(rb)[:m]
        out_d[start:stop] = np.asarray(rd)[:m]
        return m

    spans = [(lo, min(lo + batch, n_resamples)) for lo in range(0, n_resamples, batch)]
    # the first chunk alone: it compiles the program once, not in every thread
    _run_spans(run, spans[:1], 1, False, progress)
    threads = sequential and workers != 1
    _run_spans(run, spans[1:], (workers or default_workers(design.n)) if threads else 1,
               threads and workers is None, progress)
    return out_a, out_b, out_d


def default_workers(n, cores=None):
    """The most threads for calipers' own NumPy kernels: the cores this process may
    use, at most 4, and fewer when their per-thread buffers (about 32 bytes per row)
    would pass about 256 MB in all. Whether threads pay depends on the machine, so the
    loop times both before it settles (:func:`_run_spans`)."""
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:     # not on Linux
            cores = os.cpu_count() or 1
    return max(1, min(cores, 4, (1 << 28) // (32 * max(n, 1))))


_THREADS_PAY = 0.8     # threads stay when they take under this share of one thread's time
_PROBE_SPANS = 24      # fewer spans than this: one thread, no probe


def _run_spans(run, spans, workers, probe, progress, clock=None):
    """Run ``run(lo, hi)`` over the spans in a pool of ``workers`` threads; the threads used.

    With ``probe``, the first ``workers`` spans run side by side (every thread's
    buffers are made); then, twice, one span alone and ``workers`` spans side
    by side are timed, and the rest run on ``workers`` threads only if the
    faster side-by-side run took under ``_THREADS_PAY`` of the faster lone
    span's time per replicate, else one after another on one thread. Fewer
    than ``_PROBE_SPANS`` spans run on one thread. The values never depend on
    it (each replicate is a function of its index). ``clock`` (default
    ``time.perf_counter``) lets tests script the timings.
    """
    import time
    from concurrent.futures import ThreadPoolExecutor, as_completed

    clock = clock or time.perf_counter

    def side_by_side(group):
        t = clock()
        for f in as_completed([pool.submit(run, lo, hi) for lo, hi in group]):
            m = f.result()
            if progress is not None:
                progress(m)
        return (clock() - t) / sum(hi - lo for lo, hi in group)

    if probe and len(spans) < _PROBE_SPANS:
        workers = 1
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        if probe and workers > 1:
            side_by_side(spans[:workers])
            one, many, i = [], [], workers
            for _ in range(2):
                one.append(side_by_side(spans[i:i + 1]))
                many.append(side_by_side(spans[i + 1:i + 1 + workers]))
                i += 1 + workers
            spans = spans[i:]
            if min(many) >= _THREADS_PAY * min(one):
                # one thread from here on: its buffers stay in its core's caches
                # (spans handed to idle threads in turn lose them)
                pool.shutdown()
                workers, pool = 1, ThreadPoolExecutor(max_workers=1)
        if workers == 1:
            for span in spans:
                side_by_side([span])
        else:
            side_by_side(spans)
    finally:
        pool.shutdown()
    return workers


def _run_loop(kernel_a, sa, kernel_b, sb, draw, xp, n_resamples, progress, workers=None,
              n=0):
    """One replicate at a time per worker (NumPy, array-api-strict, Python metrics).

    Memory O(workers * n). Replicate ``r`` depends only on ``draw(r)``, so
    the number of worker threads does not change the result. ``workers``
    None: for calipers' own NumPy kernels up to :func:`default_workers` (``n``
    rows), kept only where they pay (:func:`_run_spans`), else 1.
    """
    da = np.empty(n_resamples)
    db = np.empty(n_resamples)
    dd = np.empty(n_resamples)

    def run(lo, hi):
        for r in range(lo, hi):
            va, vb, vd = evaluate_pair(kernel_a, sa, kernel_b, sb, draw(r), xp)
            da[r], db[r], dd[r] = float(va), float(vb), float(vd)
        return hi - lo

    step = 64
    spans = [(lo, min(lo + step, n_resamples)) for lo in range(0, n_resamples, step)]
    with warnings.catch_warnings():
        # Undefined replicates are counted and reported once, not warned per replicate.
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        # calipers' own NumPy kernels run in a worker thread even for one worker:
        # glibc's main heap hands the n-sized arrays freed each replicate back to
        # the system, so the next replicate faults their pages in again, while a
        # thread's heap keeps them. A user's metric stays in the caller's thread (its
        # thread-local settings) unless more workers are asked for.
        own = B.is_numpy(xp) and not isinstance(kernel_a, (_WeightKernel, _IndexKernel))
        if workers is None and not own:
            workers = 1
        if workers == 1 and not own:
            for lo, hi in spans:
                m = run(lo, hi)
                if progress is not None:
                    progress(m)
        else:
            # NumPy releases the GIL in the draws, gathers and prefix sums.
            _run_spans(run, spans, workers or default_workers(n), workers is None, progress)
    return da, db, dd


def _is_trace_error(exc) -> bool:
    import jax

    trace_errors = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                    jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError)
    return isinstance(exc, trace_errors + (TypeError,))
