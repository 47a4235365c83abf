"""The one backend layer every metric family uses.

Responsibilities, in one place so that no metric module re-derives them:

* turn user input (lists, NumPy, JAX, array-api-strict arrays) into arrays of
  one namespace ``xp`` (:func:`as_arrays`);
* know whether values are concrete (validate, warn) or traced under ``jax.jit``
  (no Python branching on values; invalid input becomes NaN) (:func:`is_traced`);
* pick accumulation dtypes: integer counts where possible and the widest float
  the backend allows, never float32 running sums of counts (scikit-learn #6842, jax #585)
  (:func:`acc_float`, :func:`acc_int`);
* tie groups of a sorted key (:func:`group_bounds`), segment sums
  (:func:`segment_sum`) and prefix sums with a leading zero (:func:`prefix_sum`),
  with native fast paths behind the same signature;
* random numbers per backend: NumPy ``Generator`` or JAX PRNG key
  (:func:`make_rng`);
* the shape / dtype / weight validators whose messages name the argument and
  the rule; option, label and probability rules and the raise-eagerly /
  flag-under-jit helper live in :mod:`calipers._core.validation`, the compile
  policy for eager JAX calls in :mod:`calipers._core.compile`;
* warnings that point at the caller's line (:func:`warn`).

Kernels take ``xp`` explicitly and use only the array API standard plus the
functions here, so they run unchanged on NumPy, JAX (eager and ``jit``) and
array-api-strict.
"""

from __future__ import annotations

import math
import sys
import threading
import types
import warnings
from typing import Any

import array_api_compat
import numpy as np

from .exceptions import UndefinedMetricWarning
from .results import register_with_jax

__all__ = [
    "as_arrays",
    "explicitly_sharded",
    "replicate_explicit",
    "is_jax",
    "is_numpy",
    "is_traced",
    "acc_float",
    "acc_int",
    "out_float",
    "finalize",
    "prefix_sum",
    "group_bounds",
    "segment_sum",
    "make_rng",
    "supports_data_dependent_shapes",
    "warn_undefined",
    "warn",
]


# --------------------------------------------------------------------------
# namespaces
# --------------------------------------------------------------------------

def is_array(x: Any) -> bool:
    return array_api_compat.is_array_api_obj(x) and not isinstance(x, (bool, int, float))


def as_arrays(*args: Any, names=None, **named: Any):
    """Return ``(xp, arrays)``: the common namespace and the inputs as its arrays.

    Call it positionally (``as_arrays(y_true, y_score)``, optionally with
    ``names=("y_true", "y_score")`` for the messages) or by keyword
    (``as_arrays(y_true=y_true, y_score=y_score)``); ``arrays`` follows the
    order given.  ``None`` stays ``None``.

    Namespace rule: NumPy arrays, NumPy scalars, Python sequences and scalars
    are promoted to the namespace of the other (non-NumPy) array arguments, so
    a JAX evaluation step that closes over NumPy labels works eagerly and
    under ``jit``; with no non-NumPy array everything becomes NumPy, so
    ``roc_auc_score([0, 1], [0.1, 0.9])`` works like scikit-learn.  Two
    different non-NumPy namespaces (JAX and array-api-strict, say) are a
    ``ValueError`` naming the arguments.

    NumPy arrays of ``ml_dtypes`` extension dtypes (``bfloat16``, what
    ``np.asarray`` of a JAX bfloat16 array gives; ``float8_*``; ``int4``)
    are widened exactly to float32 / int8 (:func:`widen_extension`), so
    every metric accepts them and gives float32-accurate results.

    JAX arrays sharded on a mesh with Explicit axes (``jax.make_mesh``'s
    default) are replicated (:func:`replicate_explicit`): the kernels sort and
    scatter rows, which JAX refuses on an explicitly sharded axis.

    Dask arrays are a ``ValueError`` naming the argument: a one-shot
    function needs all the rows in memory at once (the sort-based ones would
    rechunk to one chunk and compute the graph again at each step), so the
    message points to :mod:`calipers.dask` (per-partition states and merges,
    the exact AUC by score ranges, the bootstrap by global row id) or to
    ``.compute()`` first.
    """
    if named:
        if args:
            raise TypeError("as_arrays takes arrays positionally or by keyword, not both")
        names, args = tuple(named), tuple(named.values())
    if names is None:
        names = tuple(f"argument {i}" for i in range(len(args)))
    _refuse_dask(args, names)
    foreign: dict = {}  # non-NumPy namespace -> first argument name using it
    for name, a in zip(names, args):
        if a is not None and is_array(a) and not array_api_compat.is_numpy_array(a):
            ns = array_api_compat.array_namespace(a)
            foreign.setdefault(ns, name)
    if len(foreign) > 1:
        desc = ", ".join(f"{n} ({ns.__name__})" for ns, n in foreign.items())
        raise ValueError(f"inputs come from different array libraries: {desc}; pass arrays of "
                         "one library (NumPy arrays and lists are converted to the other one)")
    xp = next(iter(foreign)) if foreign else numpy_namespace()
    if foreign and is_jax(xp):
        register_with_jax()
    to_np = is_numpy(xp)
    out = []
    for name, a in zip(names, args):
        if a is None or (is_array(a) and not array_api_compat.is_numpy_array(a)) \
                or (to_np and is_array(a) and not _is_extension(a)):
            out.append(replicate_explicit(a) if foreign and is_jax(xp) else a)
            continue
        try:
            arr = widen_extension(np.asarray(a))
            out.append(arr if to_np else xp.asarray(arr))
        except Exception as exc:  # ragged lists, objects, strings on JAX
            raise ValueError(f"could not convert {name} to an array: {exc}") from exc
    return xp, out


def _refuse_dask(args, names) -> None:
    """``ValueError`` for a Dask array among ``args`` (Dask is never imported here)."""
    dask_array = sys.modules.get("dask.array")
    if dask_array is None:
        return
    for name, a in zip(names, args):
        if isinstance(a, dask_array.Array):
            raise ValueError(
                f"{name} is a dask array: calipers' one-shot functions need the rows in memory; "
                "use calipers.dask (reduce_states with a mergeable state, roc_auc_score, "
                "paired_bootstrap_replicates) over the partitions, or call .compute() on it "
                "first if it fits in memory")


def _is_extension(a) -> bool:
    """A NumPy array of an ``ml_dtypes`` extension dtype (``bfloat16``, ``float8_*``, ``int4``)."""
    dt = getattr(a, "dtype", None)
    return isinstance(dt, np.dtype) and dt.kind == "V" and dt.names is None \
        and dt.type.__module__.split(".")[0] == "ml_dtypes"


def widen_extension(arr):
    """A NumPy array of an ``ml_dtypes`` extension dtype as float32 (floats) or int8/uint8.

    ``np.asarray`` of a JAX ``bfloat16`` array gives such an array, and NumPy's
    own dtype functions (``numpy.isdtype``, on which the array API namespace
    rests) refuse these dtypes (ml_dtypes #63).  The widening is exact: every
    ``bfloat16`` / ``float8`` value is a float32 value, every ``int4`` / ``int2``
    an int8.  Results are then float32-accurate, as for float16 input.  Other
    arrays are returned unchanged.
    """
    if not _is_extension(arr):
        return arr
    import ml_dtypes  # present: an array of its dtype exists

    try:
        ml_dtypes.finfo(arr.dtype)
    except (TypeError, ValueError):  # an integer type (int4, uint2, ...)
        return arr.astype(np.int8 if int(ml_dtypes.iinfo(arr.dtype).min) < 0 else np.uint8)
    return arr.astype(np.float32)


def numpy_namespace():
    """NumPy's array-API namespace (array-api-compat's wrapper: ``stable=``, ``take`` ...)."""
    return array_api_compat.array_namespace(np.empty(0))


def scipy_stats(what: str):
    """``scipy.stats``, or an ``ImportError`` that names the function and the extra."""
    try:
        from scipy import stats
    except ImportError as exc:
        raise ImportError(f"{what} needs scipy (its distributions): install the stats extra, "
                          "pip install -e '.[stats]' in a checkout, or scipy itself") from exc
    return stats


def is_numpy(xp) -> bool:
    return array_api_compat.is_numpy_namespace(xp)


def is_jax(xp) -> bool:
    if array_api_compat.is_jax_namespace(xp):
        register_with_jax()  # result types become pytrees once JAX is in use
        return True
    return False


def thread_buffers(store: dict, key, make):
    """NumPy buffers in ``store`` under ``key`` for the calling thread, made on first use.

    Kernels reuse them across bootstrap replicates (no allocation and page
    faults per replicate), one set per worker thread.
    """
    key = (threading.get_ident(), key)
    bufs = store.get(key)
    if bufs is None:
        bufs = store[key] = make()
    return bufs


def is_traced(*arrays: Any) -> bool:
    """True when any argument is a JAX tracer (inside ``jit``/``vmap``/``grad``)."""
    for a in arrays:
        if a is None:
            continue
        if array_api_compat.is_jax_array(a):
            try:
                import jax

                if isinstance(a, jax.core.Tracer):
                    return True
            except ImportError:  # pragma: no cover - jax arrays imply jax
                return False
    return False


def supports_data_dependent_shapes(xp) -> bool:
    """Whether boolean-mask indexing / ``unique`` may be used (eager only)."""
    info = getattr(xp, "__array_namespace_info__", None)
    if info is None:
        return True
    caps = info().capabilities()
    return bool(caps.get("data-dependent shapes", True)) and bool(caps.get("boolean indexing", True))


def device(x):
    return array_api_compat.device(x)


# --------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------

def _x64_enabled() -> bool:
    import jax

    return bool(jax.config.read("jax_enable_x64"))


def acc_float(xp):
    """The widest float the backend gives: float64, or float32 on JAX without x64."""
    if is_jax(xp) and not _x64_enabled():
        return xp.float32
    return xp.float64


def acc_int(xp):
    """Integer dtype for exact counts: int64, or int32 on JAX without x64 (exact below 2**31)."""
    if is_jax(xp) and not _x64_enabled():
        return xp.int32
    return xp.int64


def out_float(xp, *arrays):
    """Output float dtype: the inputs' widest floating dtype, else the accumulation float.

    Never narrower than float32: float16 / bfloat16 inputs give float32
    results (a float16 AUC has three significant digits), or the accumulation
    float when that is narrower (never, on the supported backends).
    """
    floats = [a.dtype for a in arrays if a is not None and xp.isdtype(a.dtype, "real floating")]
    if not floats:
        return acc_float(xp)
    dt = xp.result_type(*floats)
    if xp.finfo(dt).bits < 32:
        return xp.float32
    return dt


def finalize(x, xp):
    """Return a 0-d result as a NumPy scalar on NumPy; arrays pass through unchanged."""
    if is_numpy(xp) and getattr(x, "ndim", None) == 0:
        return x[()]
    return x


# --------------------------------------------------------------------------
# array building blocks with native fast paths
# --------------------------------------------------------------------------

def prefix_sum(x, xp, dtype=None):
    """Inclusive cumulative sum with a leading zero: length ``n + 1``.

    ``C[j] - C[i]`` is the sum of ``x[i:j]``.  ``dtype`` is the accumulation
    dtype (integers stay exact beyond 2**24, unlike float32 sums: scikit-learn #6842, jax #585).
    """
    if is_numpy(xp):  # one pass, no intermediate copy for the dtype change
        dt = np.cumsum(x[:0]).dtype if dtype is None else dtype  # small ints widen, as cumsum does
        out = np.empty(x.shape[0] + 1, dtype=dt)
        out[0] = 0
        np.cumsum(x, dtype=dt, out=out[1:])
        return out
    if dtype is not None and x.dtype != dtype:
        x = xp.astype(x, dtype)
    return xp.cumulative_sum(x, include_initial=True)


def tie_flags(sorted_keys, xp):
    """``(first, last)``: is each element of sorted 1-D keys the first / last of its tie
    group (one neighbour comparison; NumPy or JAX)."""
    n = sorted_keys.shape[0]
    if is_numpy(xp):
        first = np.empty(n, dtype=bool)
        last = np.empty(n, dtype=bool)
        if n:
            np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
            last[:-1] = first[1:]
            first[0] = last[-1] = True
        return first, last
    import jax.numpy as jnp

    neq = sorted_keys[1:] != sorted_keys[:-1]
    one = jnp.ones(min(n, 1), dtype=bool)
    return jnp.concatenate([one, neq]), jnp.concatenate([neq, one])


def bounds_from_flags(first, last, xp):
    """First and last index of each element's group from :func:`tie_flags`-style flags
    (a running max / min of the flagged positions; NumPy or JAX)."""
    n = first.shape[0]
    if is_numpy(xp):
        idx = np.arange(n, dtype=np.int64)
        lo = np.maximum.accumulate(np.where(first, idx, 0))
        hi = np.minimum.accumulate(np.where(last, idx, n - 1)[::-1])[::-1]
        return lo, hi
    import jax
    import jax.numpy as jnp

    idx = jnp.arange(n, dtype=acc_int(xp))
    return (jax.lax.cummax(jnp.where(first, idx, 0)),
            jax.lax.cummin(jnp.where(last, idx, n - 1), reverse=True))


def group_bounds(sorted_keys, xp):
    """First and last index of the tie group of each element of a sorted 1-D array.

    Returns ``(lo, hi)`` int arrays of the same length as ``sorted_keys``
    (ascending or descending order both work: only equality of neighbours is
    used).  Static shapes throughout, so it runs under ``jit``.
    """
    n = sorted_keys.shape[0]
    if n == 0:
        z = xp.zeros(0, dtype=acc_int(xp), device=device(sorted_keys))
        return z, z
    if is_numpy(xp) or is_jax(xp):
        return bounds_from_flags(*tie_flags(sorted_keys, xp), xp)
    # Generic array API: binary search of the sorted keys into themselves.
    asc = sorted_keys
    if n > 1 and bool(sorted_keys[0] > sorted_keys[n - 1]):
        asc = xp.flip(sorted_keys)
        lo_a = xp.searchsorted(asc, asc, side="left")
        hi_a = xp.searchsorted(asc, asc, side="right") - 1
        # element i of the descending array is element n-1-i of ``asc``
        lo = (n - 1) - xp.flip(hi_a)
        hi = (n - 1) - xp.flip(lo_a)
        return xp.astype(lo, acc_int(xp)), xp.astype(hi, acc_int(xp))
    lo = xp.searchsorted(asc, asc, side="left")
    hi = xp.searchsorted(asc, asc, side="right") - 1
    return xp.astype(lo, acc_int(xp)), xp.astype(hi, acc_int(xp))


def segment_sum(values, segment_ids, num_segments: int, xp, *, indices_are_sorted=False,
                name="values"):
    """Sum of ``values`` per segment id in ``0 .. num_segments-1`` (ids outside give nothing).

    Integer values are summed in integers on every backend (exact at any size,
    unlike a float64 ``bincount`` above 2**53).  Overflow rule: a concrete
    integer sum that does not fit the dtype raises ``ValueError`` naming
    ``name`` (public functions check their weights once with
    :func:`check_weights`, which names the argument); traced sums wrap as the
    backend's integers do.
    """
    if is_numpy(xp):
        ids = np.asarray(segment_ids)
        ok = (ids >= 0) & (ids < num_segments)
        if xp.isdtype(values.dtype, "integral") or values.dtype == np.bool_:
            vals = np.asarray(values)
            dt = np.int64 if vals.dtype == np.bool_ else vals.dtype
            if vals.dtype.kind == "i" and vals.size:
                check_int_sum(name, vals, xp)
            out = np.zeros(num_segments, dtype=dt)
            if ok.all():
                np.add.at(out, ids, vals)
            else:
                np.add.at(out, ids[ok], vals[ok])
            return out
        return np.bincount(np.where(ok, ids, 0), weights=np.where(ok, values, 0),
                           minlength=num_segments).astype(values.dtype, copy=False)
    if is_jax(xp):
        import jax

        return jax.ops.segment_sum(values, segment_ids, num_segments=num_segments,
                                   indices_are_sorted=indices_are_sorted)
    # Generic: sort by id, prefix sums, read the sums off at segment bounds.
    if not indices_are_sorted:
        order = xp.argsort(segment_ids)
        segment_ids = xp.take(segment_ids, order)
        values = xp.take(values, order)
    c = prefix_sum(values, xp)
    seg = xp.arange(num_segments, dtype=segment_ids.dtype, device=device(values))
    start = xp.searchsorted(segment_ids, seg, side="left")
    stop = xp.searchsorted(segment_ids, seg, side="right")
    return xp.take(c, stop) - xp.take(c, start)


def check_int_sum(name: str, x, xp) -> None:
    """Raise when the sum of a concrete signed-integer array's magnitudes overflows its dtype.

    Every partial sum of the array (per class, per segment, per bin) is
    bounded by that total, so one check covers all integer accumulations of
    it.  No-op for floats and traced arrays.
    """
    if is_traced(x) or not xp.isdtype(x.dtype, "signed integer") or x.shape[0] == 0:
        return
    total = float(np.sum(np.abs(to_numpy(x).astype(np.float64))))
    limit = float(np.iinfo(to_numpy(x[:0]).dtype).max)
    if total >= limit:
        dt = to_numpy(x[:0]).dtype
        raise ValueError(f"{name} sums to about {total:.3g}, more than {dt} accumulates "
                         f"safely: integer weights are summed exactly in {dt}, so their "
                         f"magnitudes must sum to less than {int(limit)}; pass smaller weights "
                         "or floats")


# --------------------------------------------------------------------------
# random numbers
# --------------------------------------------------------------------------

def make_rng(seed, xp):
    """A NumPy ``Generator`` (NumPy, array-api-strict) or a JAX PRNG key (JAX).

    ``seed`` may be ``None``, an int, a ``numpy.random.Generator`` or a JAX key.
    """
    if is_jax(xp):
        import jax

        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        if isinstance(seed, (int, np.integer)):
            return jax.random.key(int(seed))
        return seed
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------
# validation (concrete values only) and warnings
# --------------------------------------------------------------------------

def check_1d(name: str, x) -> None:
    """``x`` must be 1-D: ``ValueError`` naming ``name``, with scikit-learn's words."""
    if x is None or x.ndim == 1:
        return
    shape = tuple(x.shape)
    if name == "sample_weight":
        raise ValueError(f"Sample weights must be 1D array or scalar, got {x.ndim}D array: "
                         f"sample_weight must be 1-D, got an array of shape {shape}")
    raise ValueError(f"{name} should be a 1d array, got an array of shape {shape} instead "
                     f"({name} must be 1-D)")


def check_same_length(**named) -> int:
    """All given arrays (``None`` skipped) have the same first dimension; returns it.

    The message is scikit-learn's ("Found input variables with inconsistent
    numbers of samples: [...]", lengths in the order given) followed by
    calipers' naming of the argument that differs.
    """
    items = [(k, v) for k, v in named.items() if v is not None]
    n = int(items[0][1].shape[0])
    lengths = [int(v.shape[0]) for _, v in items]
    for k, v in items[1:]:
        if int(v.shape[0]) != n:
            raise ValueError(f"Found input variables with inconsistent numbers of samples: "
                             f"{lengths}: {k} has {int(v.shape[0])} elements but {items[0][0]} "
                             f"has {n}; they must match")
    return n


def check_nonempty(name: str, x) -> None:
    if x.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one sample is required")


def check_numeric(name: str, x, xp) -> None:
    if not (xp.isdtype(x.dtype, "numeric") or xp.isdtype(x.dtype, "bool")):
        raise ValueError(f"{name} must be numeric, got dtype {x.dtype}")


def first_index(mask, xp) -> int:
    return int(np.argmax(np.asarray(mask_to_numpy(mask))))


def mask_to_numpy(x):
    try:
        return np.asarray(x)
    except Exception:  # array-api-strict refuses __array__ for some versions
        return np.asarray(x.tolist() if hasattr(x, "tolist") else list(x))


def to_numpy(x):
    """Concrete array to NumPy (for error messages, CLI and references only)."""
    if x is None:
        return None
    return mask_to_numpy(x)


def show(v) -> str:
    """An element for an error message: ``2``, not ``np.int64(2)``."""
    return repr(v.item() if hasattr(v, "item") else v)


def _in_package(frame) -> bool:
    mod = frame.f_globals.get("__name__", "")
    return mod == "calipers" or mod.startswith("calipers.")


def warn(message: str, category=UndefinedMetricWarning) -> None:
    """Issue a warning that points at the user's line (the first frame outside calipers)."""
    f: types.FrameType | None = sys._getframe(1)
    level = 2  # 1 would be this function
    while f is not None and _in_package(f):
        f = f.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def scalar_result(value, xp, *, out, invalid, undefined, what: str):
    """The end of every scalar metric: NaN where invalid or undefined, cast, warn eagerly.

    ``what`` is the :class:`UndefinedMetricWarning` text for a concrete
    undefined result on valid input; traced values never warn (under ``jit``
    NaN is the whole message).
    """
    value = nan_if(invalid | undefined, value, xp)
    value = xp.astype(value, out)
    if not is_traced(value) and bool(undefined) and not bool(invalid):
        warn_undefined(what)
    return finalize(value, xp)


def warn_undefined(message: str) -> None:
    """Issue an ``UndefinedMetricWarning`` at the caller's line (found by :func:`warn`)."""
    warn(message, UndefinedMetricWarning)


def nan_if(invalid, value, xp):
    """``value`` where ``invalid`` is False, NaN otherwise (jit-safe).

    The NaN is ``full_like(value)``, which keeps the value's placement: a 0-d NaN
    put on the device of a value sharded over a mesh would carry a rank-1
    sharding and fail."""
    return xp.where(invalid, xp.full_like(value, math.nan), value)


def is_concrete_nan(x, xp) -> bool:
    """True for a concrete scalar that is NaN (used to decide to warn)."""
    if is_traced(x):
        return False
    return bool(xp.isnan(x))


# --------------------------------------------------------------------------
# rows sharded on a mesh with Explicit axes
# --------------------------------------------------------------------------

def explicitly_sharded(a) -> bool:
    """Is ``a`` a JAX array sharded over an axis of a mesh with Explicit axes?"""
    if "jax" not in sys.modules or not array_api_compat.is_jax_array(a):
        return False
    import jax

    try:
        sh = jax.typeof(a).sharding
        types = tuple(getattr(sh.mesh, "axis_types", ()))
        spec = tuple(sh.spec)
    except Exception:  # no sharding in the type (older JAX, no mesh): nothing to do
        return False
    explicit = any("Explicit" in str(t) for t in types)
    return explicit and any(p is not None for p in spec)


def replicate_explicit(a):
    """A JAX batch sharded on a mesh with Explicit axes (``jax.make_mesh``'s default),
    resharded to replicated; anything else unchanged (tuples and RankingBatches walked).

    A state's update sums rows into fixed bins (a scatter-add) and a ranking
    metric sorts its rows; on an Explicit mesh JAX refuses both on sharded rows
    ("Arguments to sort must be unsharded over the sorting dimension"). The
    reshard gathers the rows onto every device (an all-gather, what an Auto mesh
    does implicitly); per-device states under ``shard_map``, reduced with
    ``psum``, avoid the gather.
    """
    if isinstance(a, tuple):
        items = [replicate_explicit(x) for x in a]
        return type(a)(*items) if hasattr(a, "_fields") else tuple(items)
    if a is None or "jax" not in sys.modules or not array_api_compat.is_jax_array(a):
        return a
    if not explicitly_sharded(a):
        return a
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = jax.typeof(a).sharding.mesh
    return jax.sharding.reshard(a, NamedSharding(mesh, PartitionSpec()))
