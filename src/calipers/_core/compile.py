"""The one compile policy: eager JAX calls of public functions run as one compiled program.

Eager JAX dispatches every primitive separately and compiles each for every
new shape, so a metric of a few hundred small operations costs seconds per
new input length.  :func:`compiled` wraps a public function so that a call on
concrete JAX arrays runs it under ``jax.jit`` instead:

* static options (Python values: strings, numbers, label lists) are part of
  the cache key; array arguments are traced.  NumPy arrays and lists passed
  next to JAX arrays are promoted to JAX first (the namespace rule of
  :func:`calipers._core.xp.as_arrays`);
* the compiled programs live in one bounded LRU cache
  (:func:`set_cache_size`, :func:`cache_info`), keyed by function, static
  options and argument shapes, so memory does not grow with the number of
  distinct input lengths;
* shape bucketing: a function that declares its row-aligned arguments and a
  sample-weight argument gets its rows padded to the next power of two with
  copies of the last row at weight zero.  Such rows cannot change the result
  of a weighted metric (they are valid whenever the last row is, so they add
  no error either), and a sequence of lengths compiles O(log n) times.
  Functions without such a safe padding, or whose output has one entry per
  row, declare no rows and are compiled per exact shape;
* errors and warnings: checks written with :func:`calipers._core.validation.fail_if`
  / :func:`~calipers._core.validation.warn_if` are recorded while tracing and come
  back from the compiled program as flags (with the first offending index and
  value); after the call they are raised / issued in call order with the
  eager message, before any result is returned.  A NaN in the output that no
  recorded flag explains (a check not written with those helpers) makes the
  call run again eagerly, so a documented error or warning is never lost;
* anything else (NumPy or array-api-strict inputs, string labels, calls
  inside the user's own ``jit``, a function whose trace needs concrete values)
  runs the plain function.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import threading
from typing import Any, Callable, Iterator, TypeVar, overload
from collections import OrderedDict

import numpy as np

from . import xp as B
from . import validation as V

# internal layer (like _backend): no __all__, nothing here is public API

_lock = threading.Lock()
_cache: OrderedDict = OrderedDict()
_max_entries = 128
_stats = {"hits": 0, "misses": 0, "evictions": 0, "eager": 0}
_EAGER = object()  # cache value: this key cannot be traced, run the plain function
_MIN_BUCKET = 8


_local = threading.local()


@contextlib.contextmanager
def eager_checks(enabled: bool) -> Iterator[None]:
    """Turn the value checks of eager calls on JAX arrays off (``False``) or on, in this thread.

    An eager call of a public function on concrete JAX arrays runs as one
    compiled program whose value checks (NaN or out-of-range inputs, count
    limits, undefined results) come back as flags, and reading them back to
    raise or warn blocks until the device is done: a few host reads per call
    (a streaming state's ``update`` or ``compute`` included). Inside
    ``with calipers.eager_checks(False):`` nothing is read back, as under
    ``jax.jit``: invalid values give NaN instead of a ``ValueError``, and no
    ``UndefinedMetricWarning`` is issued. Shape and option errors (found
    before anything runs) still raise. NumPy inputs, and JAX calls that run
    the NumPy kernels, keep their checks. The setting is per thread and
    restored on exit.

    Parameters
    ----------
    enabled : bool
        False skips the checks inside the block; True turns them on again
        (inside an outer ``eager_checks(False)``).

    Raises
    ------
    ValueError
        ``enabled`` not a bool.

    Examples
    --------
    >>> import calipers, jax.numpy as jnp
    >>> state = calipers.ConfusionState.init(2)
    >>> with calipers.eager_checks(False):
    ...     state = state.update(jnp.asarray([0, 1, 1]), jnp.asarray([0, 1, 0]))
    >>> round(float(state.compute().accuracy), 4)
    0.6667
    """
    if not isinstance(enabled, bool):
        raise ValueError(f"enabled must be True or False, got {enabled!r}")
    before = getattr(_local, "checks", True)
    _local.checks = enabled
    try:
        yield
    finally:
        _local.checks = before


def checks_enabled() -> bool:
    """Are eager checks on in this thread (:func:`eager_checks`)?"""
    return getattr(_local, "checks", True)


def set_cache_size(n: int) -> None:
    """Keep at most ``n`` compiled programs (least recently used are dropped)."""
    global _max_entries
    _max_entries = V.positive_int(n, "n")
    with _lock:
        while len(_cache) > _max_entries:
            _cache.popitem(last=False)
            _stats["evictions"] += 1


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def cache_info() -> dict:
    """Hits, misses (= compilations), evictions, eager fallbacks, current and maximum size."""
    with _lock:
        return dict(_stats, size=len(_cache), max_size=_max_entries)


def program(key: tuple, build):
    """A compiled program of calipers' own engines, kept in the same bounded cache.

    The bootstrap engine compiles kernels x designs, not public functions,
    so it cannot go through :func:`compiled`; ``program(key, build)`` returns
    the cached ``build()`` (a ``jax.jit`` object) for a hashable ``key``,
    counted and evicted with everything else, so the library holds one cache
    with one bound.
    """
    key = ("program",) + tuple(key)
    with _lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
            _stats["hits"] += 1
            return entry
    entry = build()
    _insert(key, entry)
    return entry


def _insert(key, entry) -> None:
    """A new program (a miss): store it, dropping the least recently used past the bound."""
    with _lock:
        _stats["misses"] += 1
        _cache[key] = entry
        while len(_cache) > _max_entries:
            _cache.popitem(last=False)
            _stats["evictions"] += 1


def bucket_length(n: int) -> int:
    """The padded length of ``n`` rows: the next power of two, at least 8."""
    return max(_MIN_BUCKET, 1 << max(0, int(n) - 1).bit_length())


# --------------------------------------------------------------------------
# static options
# --------------------------------------------------------------------------

def _freeze(v):
    """A hashable form of a static option; TypeError if there is none."""
    if isinstance(v, np.ndarray):
        if v.dtype.kind not in "biuf":
            raise TypeError("non-numeric array")
        return ("__nd__", str(v.dtype), v.shape, tuple(v.reshape(-1).tolist()))
    if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
        return ("__seq__", type(v).__name__, tuple(_freeze(x) for x in v))
    if isinstance(v, float) and v != v:  # NaN != NaN would defeat the cache
        return ("__nan__",)
    hash(v)
    return (type(v).__name__, v)


def _thaw(v):
    tag = v[0]
    if tag == "__nd__":
        return np.asarray(v[3], dtype=v[1]).reshape(v[2])
    if tag == "__seq__":
        items = [_thaw(x) for x in v[2]]
        return items if v[1] == "list" else tuple(items)
    if tag == "__nan__":
        return float("nan")
    return v[1]


# --------------------------------------------------------------------------
# the decorator
# --------------------------------------------------------------------------

_F = TypeVar("_F", bound=Callable[..., Any])


@overload
def compiled(fn: _F) -> _F: ...


@overload
def compiled(fn: None = None, *, rows: tuple[str, ...] = (), weight: str | None = None,
             nan_ok: bool = False, rerun: Callable[..., Any] | None = None,
             prepare: Callable[..., Any] | None = None) -> Callable[[_F], _F]: ...


def compiled(fn=None, *, rows=(), weight=None, nan_ok=False, rerun=None, prepare=None):
    """Decorator: the compile policy for a public function (see the module docstring).

    Parameters
    ----------
    rows : tuple of str
        Names of the row-aligned array arguments (axis 0 is the row).
    weight : str, optional
        Name of the sample-weight argument.  Given together with ``rows``,
        calls are bucketed: rows padded to :func:`bucket_length` with copies of
        the last row at weight zero (the function must return no per-row
        output and honour weights exactly).
    nan_ok : bool
        NaN is an ordinary output value (empty bins, per-query NaN): never
        re-run eagerly because of it.  Every error and warning of such a
        function must be written with ``fail_if`` / ``warn_if``.
    rerun : callable, optional
        ``rerun(out, static_options)``, traced, a 0-d bool: run the plain
        function eagerly when True (for modules whose checks are not yet
        written with ``fail_if`` / ``warn_if``; the old ``jax_eager_jit`` hook).
    prepare : callable, optional
        ``prepare(arguments) -> (arguments, finish)``, run eagerly on the
        bound arguments of a concrete-JAX call before anything is compiled:
        it validates concrete values and turns data-dependent facts into
        static options (segment ids factorised into codes and a static
        ``num_segments``), and ``finish(out)`` maps the compiled result back
        (the original ids, eager warnings). The same hook serves every
        per-segment function, so none needs a wrapper of its own.
    """
    if fn is None:
        return functools.partial(compiled, rows=tuple(rows), weight=weight, nan_ok=nan_ok,
                                 rerun=rerun, prepare=prepare)
    sig = inspect.signature(fn)
    rows = tuple(rows)
    for r in rows + ((weight,) if weight else ()):
        if r not in sig.parameters:
            raise TypeError(f"{fn.__name__} has no argument {r!r}")
    positional = {n for n, p in sig.parameters.items() if p.default is inspect.Parameter.empty}

    def _replicated(args, kwargs):
        """Arrays sharded on an Explicit mesh, replicated (:func:`B.replicate_explicit`): the
        kernels sort and scatter rows, which JAX refuses on such arrays."""
        if not any(B.explicitly_sharded(v) for v in (*args, *kwargs.values())):
            return args, kwargs
        return (tuple(B.replicate_explicit(a) for a in args),
                {k: B.replicate_explicit(v) for k, v in kwargs.items()})

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "torch" in sys.modules:
            done, out = _torch_cpu_call(fn, args, kwargs)
            if done:
                return out
        if "jax" not in sys.modules:  # no JAX array can exist
            return fn(*args, **kwargs)
        args, kwargs = _replicated(args, kwargs)
        if prepare is not None:
            if not _concrete_jax_call(args, kwargs):
                return fn(*args, **kwargs)
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError:
                return fn(*args, **kwargs)
            arguments, finish = prepare(dict(bound.arguments))
            return finish(_run(arguments, {}))
        return _run(args, kwargs)

    def _run(args, kwargs):
        if isinstance(args, dict):  # prepared arguments, by name
            args, kwargs = (), args
        plan = _plan(sig, args, kwargs, rows + ((weight,) if weight else ()), positional)
        if plan is None:
            return fn(*args, **kwargs)
        dyn, static = plan
        bucket = None
        if weight is not None and rows:
            dyn, bucket = _bucket(dyn, rows, weight)
        key = (fn, tuple(sorted(static.items())),
               tuple((k, _abstract(v)) for k, v in sorted(dyn.items())))
        try:
            hash(key)
        except TypeError:
            return fn(*args, **kwargs)
        with _lock:
            entry = _cache.get(key)
            if entry is not None:
                _cache.move_to_end(key)
                _stats["hits"] += 1
        if entry is _EAGER:
            return fn(*args, **kwargs)
        if entry is None:
            entry = _Entry(fn, {k: _thaw(v) for k, v in static.items()}, rerun)
            _insert(key, entry)
        try:
            out, flags, has_nan, again = entry.jitted(dyn)
        except Exception:  # the trace needs concrete values (e.g. labels inferred from data)
            with _lock:
                _cache[key] = _EAGER
                _stats["eager"] += 1
            return fn(*args, **kwargs)
        if not checks_enabled():
            return out      # nothing read back (eager_checks(False)): NaN as under jit
        V.replay(entry.entries, flags)
        if bool(again) or (not nan_ok and bool(has_nan) and not any(bool(f[0]) for f in flags)):
            # a NaN no recorded check explains: let the plain call raise/warn as documented
            with _lock:
                _stats["eager"] += 1
            return fn(*args, **kwargs)
        return out

    wrapper.__wrapped_compiled__ = fn
    # the declared eager-JAX policy (tests/conformance checks each registry entry against it)
    wrapper.__compile_policy__ = "bucketed" if weight is not None and rows else "per_shape"
    return wrapper


# --------------------------------------------------------------------------
# torch CPU tensors: the NumPy kernels on the same memory
# --------------------------------------------------------------------------

def _torch_cpu_call(fn, args, kwargs):
    """``(True, result)`` when the call ran on the NumPy kernels, else ``(False, None)``.

    A call whose array arguments are torch tensors on the CPU (and NumPy
    arrays or Python data, no other library's arrays) runs on the NumPy views
    of the tensors (``tensor.detach().numpy()``: no copy), which are the
    faster kernels; its NumPy results are wrapped back as torch CPU tensors of
    the same dtype (``torch.from_numpy``, no copy; a NumPy scalar becomes a 0-d
    tensor), as the array-API path on torch would return them. Tensors on
    other devices, bfloat16 tensors (NumPy has no such dtype), traced tensors
    and results that are not arrays (or tuples / lists of them) take the
    array-API path unchanged. With no torch tensor among the arguments
    nothing happens.
    """
    import torch

    keys = list(kwargs)
    ok, views = torch_cpu_views(*args, *kwargs.values())
    if not ok:
        return False, None
    args_np = list(views[:len(args)])
    kwargs_np = dict(zip(keys, views[len(args):]))
    out = fn(*args_np, **kwargs_np)
    wrapped = _to_torch(out, torch)
    if wrapped is _NOT_ARRAYS:
        return True, fn(*args, **kwargs)      # a result type of its own: the array-API path
    return True, wrapped


_NOT_ARRAYS = object()


def torch_cpu_views(*arrays):
    """NumPy views of torch CPU tensors, for functions that are not ``compiled()``.

    Returns ``(True, views)`` when some argument is a torch tensor and every
    tensor among them is a strided CPU tensor NumPy can view (the rest NumPy
    arrays, Python data or ``None``), else ``(False, arrays)``. The views share
    memory with the tensors (``tensor.detach().numpy()``: no copy). Used where a
    whole procedure (the paired bootstrap of a calipers fast metric) is the
    same on either memory and NumPy's kernels are the faster ones.
    """
    if "torch" not in sys.modules:
        return False, arrays
    import torch

    def usable(v):
        return v.device.type == "cpu" and v.dtype not in (torch.bfloat16, torch.complex32) \
            and v.layout == torch.strided

    try:
        return _numpy_views(arrays, torch.Tensor, usable, lambda v: v.detach().numpy())
    except (RuntimeError, TypeError):  # a tensor without NumPy memory (functorch, meta)
        return False, arrays


def to_torch(out):
    """NumPy arrays (or a tuple of them) as torch CPU tensors, sharing memory."""
    import torch

    wrapped = _to_torch(out, torch)
    return out if wrapped is _NOT_ARRAYS else wrapped


def _to_torch(out, torch):
    if isinstance(out, (np.ndarray, np.generic)):
        a = np.asarray(out)
        if a.dtype.kind not in "biuf":
            return _NOT_ARRAYS
        return torch.from_numpy(np.ascontiguousarray(a) if a.ndim else a.reshape(()).copy())
    if isinstance(out, (tuple, list)) and not hasattr(out, "_fields"):
        items = [_to_torch(x, torch) for x in out]
        if any(x is _NOT_ARRAYS for x in items):
            return _NOT_ARRAYS
        return type(out)(items)
    return _NOT_ARRAYS


# --------------------------------------------------------------------------
# concrete JAX arrays on the CPU: the NumPy kernels on the same memory
# --------------------------------------------------------------------------

def host_kernels(fn: _F) -> _F:
    """Decorator: unweighted calls on concrete JAX CPU arrays run ``fn``'s NumPy kernels on
    the same memory (:func:`_jax_cpu_call`); for functions whose NumPy path (one sort,
    compiled passes) is far faster than XLA's on the CPU, returning an array or a tuple
    of arrays. Placed above :func:`compiled`, it runs first. Weighted calls keep the JAX
    path and its integer limits."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "jax" in sys.modules and kwargs.get("sample_weight") is None:
            done, out = _jax_cpu_call(fn, args, kwargs)
            if done:
                return out
        return fn(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


def _numpy_views(values, kind, usable, view):
    """``(True, values)`` with each array of type ``kind`` replaced by ``view(array)``, when
    there is one and each is ``usable`` and no other library's arrays are among ``values``
    (NumPy arrays, Python data and None stay as they are); else ``(False, values)``."""
    found = False
    for v in values:
        if isinstance(v, kind):
            if not usable(v):
                return False, values
            found = True
        elif v is not None and B.is_array(v) and not isinstance(v, (np.ndarray, np.generic)):
            return False, values
    if not found:
        return False, values
    return True, tuple(view(v) if isinstance(v, kind) else v for v in values)


def _jax_cpu_call(fn, args, kwargs):
    """``(True, result)`` when the call ran on the NumPy kernels, else ``(False, None)``.

    A call whose JAX array arguments are all concrete and on one CPU device
    (the rest NumPy arrays or Python data) runs on their NumPy views
    (``np.asarray``: no copy on the CPU), where calipers' own kernels (one
    keys-only sort, compiled passes) are several times faster than XLA's CPU
    sort; the NumPy results (arrays, scalars, tuples of them) come back as JAX
    arrays (``jnp.asarray``: float32 / int32 without x64, as the JAX path
    returns them). Traced arrays, other devices, sharded or bfloat16 arrays and
    other libraries' arrays take the JAX path unchanged.
    """
    import jax

    def usable(v):
        if isinstance(v, jax.core.Tracer) or v.dtype == jax.numpy.bfloat16:
            return False
        devices = v.devices()
        return len(devices) == 1 and next(iter(devices)).platform == "cpu"

    ok, views = _numpy_views((*args, *kwargs.values()), jax.Array, usable, np.asarray)
    if not ok:
        return False, None
    out = fn(*views[:len(args)], **dict(zip(kwargs, views[len(args):])))
    return True, _to_jax(out)


def _to_jax(out):
    import jax.numpy as jnp

    if isinstance(out, (np.ndarray, np.generic)):
        return jnp.asarray(out)
    if isinstance(out, tuple) and not hasattr(out, "_fields"):
        return tuple(_to_jax(x) for x in out)
    raise TypeError(f"host kernels return arrays or tuples of arrays, got {type(out)}")


def _concrete_jax_call(args, kwargs) -> bool:
    """Some argument is a concrete JAX array and none is traced."""
    import jax

    values = [*args, *kwargs.values()]
    arrays = [v for v in values if isinstance(v, jax.Array)]
    return bool(arrays) and not any(isinstance(v, jax.core.Tracer) for v in arrays)


class _Entry:
    """One compiled program and the static description of the checks it records."""

    def __init__(self, fn, static, rerun=None):
        import jax

        self.entries = []

        def run(dyn):
            import jax.numpy as jnp

            with V.collect() as recorded:
                out = fn(**dyn, **static)
            self.entries = list(recorded)
            flags = [(e[1], e[2], e[3]) for e in recorded]
            nan = [jnp.any(jnp.isnan(x)) for x in jax.tree_util.tree_leaves(out)
                   if hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.inexact)]
            has_nan = jnp.any(jnp.stack(nan)) if nan else jnp.asarray(False)
            again = jnp.asarray(False) if rerun is None else jnp.asarray(rerun(out, static))
            return out, flags, has_nan, again

        self.jitted = jax.jit(run)


def _abstract(v):
    import jax

    leaves, tree = jax.tree_util.tree_flatten(v)
    return tree, tuple((tuple(x.shape), str(x.dtype)) for x in leaves)


def _plan(sig, args, kwargs, rows, positional):
    """``(dynamic arrays by name, frozen static options by name)``, or None for a plain call."""
    import jax

    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return None  # let the plain call report the signature error
    dyn, static, convert = {}, {}, []
    found = False
    for name, v in bound.arguments.items():
        if sig.parameters[name].kind in (inspect.Parameter.VAR_POSITIONAL,
                                         inspect.Parameter.VAR_KEYWORD):
            return None
        if isinstance(v, jax.Array):
            if isinstance(v, jax.core.Tracer):
                return None  # inside the user's jit: the plain function is traced
            dyn[name] = v
            found = True
        elif isinstance(v, tuple) and hasattr(v, "_fields") and v and \
                all(isinstance(x, jax.Array) for x in v):
            if any(isinstance(x, jax.core.Tracer) for x in v):
                return None
            dyn[name] = v
            found = True
        elif v is not None and (name in rows or name in positional) and \
                (isinstance(v, (np.ndarray, np.generic, list, tuple)) or B.is_array(v)):
            convert.append((name, v))  # data next to JAX arrays: promoted to JAX
        else:
            try:
                static[name] = _freeze(v)
            except TypeError:
                return None
    if not found:
        return None
    import jax.numpy as jnp

    for name, v in convert:
        if B.is_array(v) and not isinstance(v, (np.ndarray, np.generic)):
            return None  # another non-NumPy namespace: as_arrays reports it
        try:
            a = np.asarray(v)
        except Exception:
            return None
        if a.dtype.kind not in "biuf":
            return None  # string labels are encoded eagerly on NumPy
        dyn[name] = jnp.asarray(a)
    return dyn, static


def _bucket(dyn, rows, weight):
    """Pad the row-aligned arrays to the bucket length, the new rows at weight zero.

    The padding is done on the host (NumPy) and the result put back on the
    array's device: an eager ``jnp.concatenate`` would itself compile once per
    new input length, which is what bucketing is meant to avoid.
    """
    import jax

    present = [r for r in rows if r in dyn and r != weight]
    if not present:
        return dyn, None
    lengths = {dyn[r].shape[0] if dyn[r].ndim else -1 for r in present}
    w = dyn.get(weight)
    if w is not None:
        lengths.add(w.shape[0] if w.ndim == 1 else -1)
    if len(lengths) != 1:
        return dyn, None  # shapes disagree: the function reports it
    n = lengths.pop()
    if n <= 0:
        return dyn, None
    m = bucket_length(n)
    out = dict(dyn)  # the weight is always given, so padded and unpadded calls share a program

    def put(a, like):
        devs = getattr(like, "devices", None)
        dev = next(iter(devs())) if callable(devs) and len(devs()) == 1 else None
        return jax.device_put(a, dev)

    for r in present:
        x = np.asarray(dyn[r])
        if m > n:
            x = np.concatenate([x, np.repeat(x[-1:], m - n, axis=0)])
        out[r] = put(x, dyn[r])
    if w is None:
        import jax.numpy as jnp

        wn = np.ones(n, dtype=np.dtype(B.acc_int(jnp)))
        like = dyn[present[0]]
    else:
        wn, like = np.asarray(w), w
    out[weight] = put(np.concatenate([wn, np.zeros(m - n, dtype=wn.dtype)]), like)
    return out, n
