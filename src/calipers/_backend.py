"""The one backend layer every metric family uses.

Responsibilities, in one place so that no metric module re-derives them:

* turn user input (lists, NumPy, JAX, array-api-strict arrays) into arrays of
  one namespace ``xp`` (:func:`as_arrays`);
* know whether values are concrete (validate, warn) or traced under ``jax.jit``
  (no Python branching on values; invalid input becomes NaN) (:func:`is_traced`);
* pick accumulation dtypes: integer counts where possible and the widest float
  the backend allows, never float32 running sums of counts (handed case H15)
  (:func:`acc_float`, :func:`acc_int`);
* tie groups of a sorted key (:func:`group_bounds`), segment sums
  (:func:`segment_sum`) and prefix sums with a leading zero (:func:`prefix_sum`),
  with native fast paths behind the same signature;
* random numbers per backend: NumPy ``Generator`` or JAX PRNG key
  (:func:`make_rng`);
* the validators whose messages name the argument and the rule.

Kernels take ``xp`` explicitly and use only the array API standard plus the
functions here, so they run unchanged on NumPy, JAX (eager and ``jit``) and
array-api-strict.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import array_api_compat
import numpy as np

from ._exceptions import UndefinedMetricWarning

__all__ = [
    "as_arrays",
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
]


# --------------------------------------------------------------------------
# namespaces
# --------------------------------------------------------------------------

def _is_array(x: Any) -> bool:
    return array_api_compat.is_array_api_obj(x) and not isinstance(x, (bool, int, float))


def as_arrays(*args: Any):
    """Return ``(xp, arrays)``: the common namespace and the inputs as its arrays.

    ``None`` stays ``None``.  Python sequences and scalars are converted with the
    namespace of the array arguments, or NumPy when there are none, so that
    ``roc_auc_score([0, 1], [0.1, 0.9])`` works like scikit-learn.
    """
    arrays = [a for a in args if a is not None and _is_array(a)]
    if arrays:
        xp = array_api_compat.array_namespace(*arrays)
    else:
        xp = array_api_compat.array_namespace(np.empty(0))
    out = []
    for a in args:
        if a is None or _is_array(a):
            out.append(a)
        else:
            try:
                out.append(xp.asarray(np.asarray(a)) if not is_numpy(xp) else np.asarray(a))
            except Exception as exc:  # ragged lists, objects
                raise ValueError(f"could not convert input to an array: {exc}") from exc
    return xp, out


def is_numpy(xp) -> bool:
    return array_api_compat.is_numpy_namespace(xp)


def is_jax(xp) -> bool:
    return array_api_compat.is_jax_namespace(xp)


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
    """Output float dtype: the inputs' widest floating dtype, else the accumulation float."""
    floats = [a.dtype for a in arrays if a is not None and xp.isdtype(a.dtype, "real floating")]
    if not floats:
        return acc_float(xp)
    return xp.result_type(*floats)


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
    dtype (integers stay exact beyond 2**24, unlike float32 sums: H15).
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
    if is_numpy(xp):
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new[1:])
        idx = np.arange(n, dtype=np.int64)
        lo = np.maximum.accumulate(np.where(new, idx, 0))
        end = np.empty(n, dtype=bool)
        end[-1] = True
        end[:-1] = new[1:]
        hi = np.minimum.accumulate(np.where(end, idx, n - 1)[::-1])[::-1]
        return lo, hi
    if is_jax(xp):
        import jax
        import jax.numpy as jnp

        idx = jnp.arange(n, dtype=acc_int(xp))
        neq = sorted_keys[1:] != sorted_keys[:-1]
        new = jnp.concatenate([jnp.ones(1, dtype=bool), neq])
        end = jnp.concatenate([neq, jnp.ones(1, dtype=bool)])
        lo = jax.lax.cummax(jnp.where(new, idx, 0))
        hi = jax.lax.cummin(jnp.where(end, idx, n - 1), reverse=True)
        return lo, hi
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


def segment_sum(values, segment_ids, num_segments: int, xp, *, indices_are_sorted=False):
    """Sum of ``values`` per segment id in ``0 .. num_segments-1`` (ids outside give nothing)."""
    if is_numpy(xp):
        ids = np.asarray(segment_ids)
        ok = (ids >= 0) & (ids < num_segments)
        if xp.isdtype(values.dtype, "integral"):
            w = np.where(ok, values, 0).astype(np.float64)
            out = np.bincount(np.where(ok, ids, 0), weights=w, minlength=num_segments)
            return np.rint(out).astype(values.dtype)
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
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {tuple(x.shape)}")


def check_same_length(**named) -> int:
    items = [(k, v) for k, v in named.items() if v is not None]
    n = items[0][1].shape[0]
    for k, v in items[1:]:
        if v.shape[0] != n:
            first = items[0][0]
            raise ValueError(f"{k} has {v.shape[0]} elements but {first} has {n}; they must match")
    return n


def check_nonempty(name: str, x) -> None:
    if x.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one sample is required")


def check_numeric(name: str, x, xp) -> None:
    if not (xp.isdtype(x.dtype, "numeric") or xp.isdtype(x.dtype, "bool")):
        raise ValueError(f"{name} must be numeric, got dtype {x.dtype}")


def check_finite(name: str, x, xp) -> None:
    """Raise on NaN/inf in a concrete array (no-op under tracing)."""
    if is_traced(x) or not xp.isdtype(x.dtype, "real floating"):
        return
    if not bool(xp.all(xp.isfinite(x))):
        flat = to_numpy(x).reshape(-1)
        bad = int(np.argmax(~np.isfinite(flat)))
        where = bad if x.ndim == 1 else tuple(int(i) for i in np.unravel_index(bad, x.shape))
        raise ValueError(f"{name} must be finite (no NaN or inf); element {where} is {flat[bad]}")


def check_weights(name: str, w, xp) -> None:
    check_numeric(name, w, xp)
    if xp.isdtype(w.dtype, "bool"):
        raise ValueError(f"{name} must be numeric weights, not booleans")
    if is_traced(w):
        return
    check_finite(name, w, xp)
    if not bool(xp.all(w >= 0)):
        bad = _first_index(w < 0, xp)
        raise ValueError(f"{name} must be non-negative; element {bad} is {float(w[bad])}")


def _first_index(mask, xp) -> int:
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


def warn_undefined(message: str, stacklevel: int = 3) -> None:
    warnings.warn(message, UndefinedMetricWarning, stacklevel=stacklevel)


def nan_if(invalid, value, xp):
    """``value`` where ``invalid`` is False, NaN otherwise (jit-safe)."""
    nan = xp.asarray(math.nan, dtype=value.dtype, device=device(value))
    return xp.where(invalid, nan, value)


def is_concrete_nan(x, xp) -> bool:
    """True for a concrete scalar that is NaN (used to decide to warn)."""
    if is_traced(x):
        return False
    return bool(xp.isnan(x))


def binary_labels(y_true, xp, *, pos_label=None, name="y_true"):
    """Validate binary labels and return ``(y01, invalid)``.

    ``y01`` is an integer array of 0/1.  Without ``pos_label`` the labels must
    be in {0, 1} (or bool); otherwise ``y_true == pos_label`` is the positive
    class.  Concrete input that breaks the rule raises ``ValueError``; under
    ``jit`` the returned ``invalid`` flag is True instead, and callers turn the
    result into NaN.
    """
    if pos_label is not None:  # any comparable labels (NumPy strings too)
        y = xp.astype(y_true == pos_label, acc_int(xp))
        return y, xp.asarray(False, device=device(y_true))
    check_numeric(name, y_true, xp)
    if xp.isdtype(y_true.dtype, "bool"):
        return xp.astype(y_true, acc_int(xp)), xp.asarray(False, device=device(y_true))
    if is_numpy(xp) and xp.isdtype(y_true.dtype, "integral") and y_true.size:
        # Fast path: two reductions instead of an elementwise test.
        if int(y_true.min()) >= 0 and int(y_true.max()) <= 1:
            return y_true, np.asarray(False)
    bad = (y_true != 0) & (y_true != 1)
    if not is_traced(y_true):
        if bool(xp.any(bad)):
            i = _first_index(bad, xp)
            raise ValueError(
                f"{name} must contain only 0 and 1 (or booleans) unless pos_label is given; "
                f"element {i} is {show(to_numpy(y_true)[i])}")
    return xp.astype(y_true == 1, acc_int(xp)), xp.any(bad)


# ==========================================================================
# JAX eager fast path: one compiled program instead of op-by-op dispatch.
# (Block added with the calibration / regression / language families.)
# ==========================================================================

_EAGER_JIT_CACHE: dict = {}


def _freeze_static(v):
    """A hashable form of a static option (lists -> tuples); TypeError if impossible."""
    if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
        return ("__seq__", type(v).__name__, tuple(_freeze_static(x) for x in v))
    hash(v)
    return v


def _thaw_static(v):
    if isinstance(v, tuple) and len(v) == 3 and v[0] == "__seq__":
        items = [_thaw_static(x) for x in v[2]]
        return items if v[1] == "list" else tuple(items)
    return v


def jax_eager_jit(fn=None, *, rerun=None):
    """Decorator: on concrete JAX arrays, run ``fn`` under ``jax.jit``.

    Eager JAX dispatches (and compiles) every primitive separately for each new
    shape, which makes a metric of a few hundred small operations take seconds.
    Under ``jax.jit`` the same kernel is one program, compiled once per shape
    and static options. Valid input gives the values the ``jit`` path gives
    (the kernels are the ones ``jit`` users run). When the compiled result
    holds a NaN (invalid input, or an undefined value) or tracing fails,
    ``fn`` runs again eagerly, so errors are raised and warnings issued
    exactly as documented.

    Applied only when every positional argument is a concrete JAX array, a
    NamedTuple of them (a state) or None, and every keyword option is a
    concrete JAX array (traced) or a hashable Python value (static); any other
    call (NumPy, array-api-strict, lists, inside ``jit``) goes straight to
    ``fn``.

    ``rerun(out, options)``, traced, returns a boolean scalar saying when to
    run eagerly instead of "any NaN in the output" (for outputs where NaN is
    a normal value, or eager-only warnings not tied to NaN).
    """
    import functools

    if fn is None:
        return functools.partial(jax_eager_jit, rerun=rerun)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        plan = _eager_jit_plan(args, kwargs)
        if plan is None:
            return fn(*args, **kwargs)
        import jax
        import jax.numpy as jnp

        dyn, static = plan
        key = (fn, len(args), tuple(sorted(dyn)), tuple(sorted(static.items(), key=lambda kv: kv[0])))
        try:
            jitted = _EAGER_JIT_CACHE.get(key)
        except TypeError:
            return fn(*args, **kwargs)
        if jitted is None:
            thawed = {k: _thaw_static(v) for k, v in static.items()}

            def run(a, d):
                out = fn(*a, **d, **thawed)
                if rerun is not None:
                    return out, jnp.asarray(rerun(out, thawed))
                flags = [jnp.any(jnp.isnan(x)) for x in jax.tree_util.tree_leaves(out)
                         if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.floating)]
                has_nan = jnp.any(jnp.stack(flags)) if flags else jnp.asarray(False)
                return out, has_nan

            jitted = jax.jit(run)
            _EAGER_JIT_CACHE[key] = jitted
        try:
            out, has_nan = jitted(args, {k: kwargs[k] for k in dyn})
        except Exception:  # a trace-time limit (e.g. a static size needed under jit)
            return fn(*args, **kwargs)
        if bool(has_nan):
            return fn(*args, **kwargs)
        return out

    return wrapper


def _eager_jit_plan(args, kwargs):
    """``(dynamic kwarg names, frozen static kwargs)`` when the fast path applies, else None."""
    try:
        import jax
    except ImportError:  # pragma: no cover - JAX is optional
        return None
    found = False

    def concrete_jax(x):
        return isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)

    for a in args:
        if a is None:
            continue
        if hasattr(a, "_fields") and isinstance(a, tuple):
            if not all(concrete_jax(x) for x in a):
                return None
        elif not concrete_jax(a):
            return None
        found = True
    if not found:
        return None
    dyn, static = [], {}
    for k, v in kwargs.items():
        if concrete_jax(v):
            dyn.append(k)
        elif isinstance(v, jax.Array) or isinstance(v, np.ndarray) or _is_array(v):
            return None
        else:
            try:
                static[k] = _freeze_static(v)
            except TypeError:
                return None
    return dyn, static
