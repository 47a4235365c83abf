"""The one state protocol: what every mergeable state shares.

A state is a ``NamedTuple`` of arrays (a JAX pytree whose ``jax.lax.psum`` is
the merge) with

* ``State.init(...)``: an empty state (static configuration in the array
  shapes, the namespace from ``xp=``, NumPy by default);
* ``state.update(batch..., *, mask=None, sample_weight=None)``: a new state
  with the batch added (nothing is mutated);
* ``state.merge(other)``: field-wise sums, with the integer count limits
  checked (:func:`merge`);
* ``state.compute()``: the values, NaN once an invalid batch was added;
* ``state.update_outputs(labels=..., logits=... | probs=... | scores=...,
  mask=..., sample_weight=..., query_id=...)``: the same update fed from a
  model's outputs, routed by what the state declares it takes
  (``State.takes``), which is how a :class:`calipers.StateCollection` feeds
  several states from one call.

:func:`streaming_state` is the class decorator that supplies ``merge``,
``update_outputs``, ``takes`` and the namespace rule of ``update``, so no
state repeats them. The namespace rule (:func:`bind`): a state keeps the
namespace of ``init``'s ``xp=``. A NumPy state that holds nothing yet (every
field zero: made without ``xp=``, or only padding added) takes the namespace
of its first non-NumPy batch, so ``ConfusionState.init(3).update(y, p)`` works
on JAX arrays eagerly and inside ``jit``. Any other batch from a namespace that
is not the state's (NumPy inputs, lists and scalars excepted: they are
converted) is a ``ValueError`` naming both namespaces, never a
``TracerArrayConversionError`` or a silent copy to the host.
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Protocol, TypeVar, runtime_checkable

import array_api_compat
import numpy as np

from .._core import xp as B
from .._core.xp import replicate_explicit
from .._core import validation as V

__all__ = ["MergeableState", "streaming_state", "merge", "bind", "empty_like", "Outputs"]

S = TypeVar("S")


@runtime_checkable
class MergeableState(Protocol):
    """The protocol every calipers state keeps (a ``NamedTuple`` pytree of arrays)."""

    takes: tuple

    def update(self: S, *args: Any, mask: Any = None, sample_weight: Any = None,
               **kwargs: Any) -> S: ...

    def merge(self: S, other: S) -> S: ...

    def compute(self, *args: Any, **kwargs: Any) -> Any: ...

    def update_outputs(self: S, **outputs: Any) -> S: ...


# --------------------------------------------------------------------------
# namespaces
# --------------------------------------------------------------------------

def namespace(xp):
    """``init``'s namespace: NumPy (array-api-compat's wrapper) by default."""
    if xp is None or xp is np:
        return B.numpy_namespace()
    return xp


def state_xp(state):
    return array_api_compat.array_namespace(state[0])


def _ns_name(ns) -> str:
    name = getattr(ns, "__name__", str(ns))
    return {"array_api_compat.numpy": "numpy", "array_api_compat.torch": "torch",
            "array_api_compat.cupy": "cupy"}.get(name, name)


def _foreign(values):
    """The first non-NumPy array (and its namespace) among nested arguments, or None."""
    for v in values:
        if v is None or isinstance(v, (str, bytes)):
            continue
        if isinstance(v, (tuple, list)):
            hit = _foreign(v)
            if hit is not None:
                return hit
            continue
        if isinstance(v, dict):
            hit = _foreign(list(v.values()))
            if hit is not None:
                return hit
            continue
        if B.is_array(v) and not array_api_compat.is_numpy_array(v):
            return v, array_api_compat.array_namespace(v)
    return None


def is_empty(state) -> bool:
    """A concrete NumPy state whose every field is zero (it holds nothing)."""
    return all(not np.any(np.asarray(f)) for f in state)


def _adopt(state, xp, like):
    """The empty ``state`` remade in namespace ``xp`` (on the device of ``like``)."""
    kw = {}
    if not B.is_jax(xp):
        kw["device"] = B.device(like)
    fields = []
    for f in state:
        if np.asarray(f).dtype.kind in "iu":
            dt = B.acc_int(xp)
        elif np.asarray(f).dtype.kind == "b":
            dt = xp.bool
        else:
            dt = B.acc_float(xp)
        fields.append(xp.zeros(tuple(f.shape), dtype=dt, **kw))
    return type(state)(*fields)


def bind(state, *batch):
    """``(state, xp)``: the state in the namespace its batch may be added in.

    See the module notes. Raises ``ValueError`` naming the state's namespace
    and the batch's when they differ and the state cannot take the batch's.
    """
    sx = state_xp(state)
    hit = _foreign(batch)
    if hit is None:
        return state, sx
    arr, bx = hit
    if bx is sx or _ns_name(bx) == _ns_name(sx):
        return state, sx
    name = type(state).__name__
    if B.is_numpy(sx):
        if is_empty(state):
            return _adopt(state, bx, arr), bx
        raise ValueError(
            f"this {name} holds NumPy (numpy) arrays with data, and the batch comes from "
            f"{_ns_name(bx)}: a state keeps the namespace of init's xp= or of its first "
            f"batch; make it with init(..., xp={_ns_name(bx)}), "
            "or pass NumPy arrays")
    raise ValueError(
        f"this {name} holds {_ns_name(sx)} arrays, and the batch comes from {_ns_name(bx)}: "
        f"a state takes batches of its own namespace (NumPy arrays and lists are converted); "
        f"make it with init(..., xp={_ns_name(bx)}) or convert the batch")


def to(xp, *arrays):
    """Inputs in the state's namespace (lists, scalars and NumPy arrays are converted)."""
    out = []
    for a in arrays:
        if a is None:
            out.append(None)
        elif isinstance(a, (list, tuple, int, float, np.ndarray, np.generic)):
            a = B.widen_extension(np.asarray(a))
            out.append(a if B.is_numpy(xp) else xp.asarray(a))
        else:
            out.append(a)
    return out


def empty_like(state):
    """The empty state of the same class, shapes, dtypes and namespace (every field zero)."""
    xp = state_xp(state)
    return type(state)(*[xp.zeros_like(f) for f in state])


# --------------------------------------------------------------------------
# padding masks
# --------------------------------------------------------------------------

def row_mask(mask, n, xp):
    """``mask`` (n,) -> ``(keep or None, invalid)``: boolean, or 0/1 numbers.

    Raises ``ValueError`` naming ``mask`` for a wrong shape or dtype, and
    eagerly for values other than 0/1 (the flag under ``jit``).
    """
    if mask is None:
        return None, xp.asarray(False)
    B.check_numeric("mask", mask, xp)
    if tuple(mask.shape) != (n,):
        raise ValueError(f"mask must have one entry per row, shape ({n},), got shape "
                         f"{tuple(mask.shape)}")
    if xp.isdtype(mask.dtype, "bool"):
        return mask, xp.asarray(False)
    bad = V.fail_if(~((mask == 0) | (mask == 1)), "mask",
                    "must be boolean or 0/1 (True or 1 keeps a row, False or 0 is padding)",
                    xp, values=mask)
    return mask == 1, bad


def fill_one(a, xp):
    """A valid stand-in for a padding row: 1 (a label or probability), or the one-hot
    row of class 1 for 2-D inputs (a probability row that sums to 1 exactly)."""
    if a.ndim == 1:
        return xp.ones_like(a)
    cols = xp.arange(a.shape[1], device=B.device(a)) == 1
    return xp.broadcast_to(xp.reshape(xp.astype(cols, a.dtype), (1, -1)), a.shape)


def fill_zero(a, xp):
    return xp.zeros_like(a)


def drop_masked(keep, arrays, fills, xp):
    """Take padding rows out of play: ``(keep or None, arrays)``.

    Concrete arrays on a namespace with boolean indexing: the kept rows only
    (the one-shot functions' view of the batch, label inference included), and
    ``keep`` becomes None. Traced (or without boolean indexing): padding rows
    are replaced by valid stand-ins (``fills``), so garbage in them never
    makes the batch invalid; the caller gives them weight 0 with ``keep``.
    """
    if keep is None:
        return None, arrays
    if not B.is_traced(keep, *arrays) and B.supports_data_dependent_shapes(xp):
        if bool(xp.all(keep)):
            return None, arrays
        return None, [None if a is None else a[keep, ...] for a in arrays]
    out = []
    for a, fill in zip(arrays, fills):
        if a is None:
            out.append(None)
            continue
        k = keep if a.ndim == 1 else xp.reshape(keep, (-1,) + (1,) * (a.ndim - 1))
        out.append(xp.where(k, a, fill(a, xp)))
    return keep, out


# --------------------------------------------------------------------------
# merging, with the integer count limits
# --------------------------------------------------------------------------

def count_totals(state):
    """The integer totals of a state that must stay within its count dtype (may be empty).

    Every integer field is a sum of non-negative counts bounded by one of these
    totals, so checking the totals checks every field (and the cumulative
    sums ``compute`` takes of them).
    """
    fn = getattr(type(state), "_count_totals", None)
    return () if fn is None else tuple(fn(state))


def limit_text(dtype, xp):
    limit = int(xp.iinfo(dtype).max)
    bits = limit.bit_length() + 1
    hint = ("; JAX without x64 counts in int32: enable jax_enable_x64 for int64 counts"
            if bits == 32 else "")
    return limit, f"{limit} (2**{bits - 1} - 1, the int{bits} limit{hint})"


def limit_flag(name, before, added, xp):
    """Check ``before + added <= limit`` for non-negative integer totals.

    Eagerly (concrete values) a ``ValueError`` that states the limit; under
    ``jit`` the 0-d flag (recorded so that a compiled eager call raises too).
    ``before`` must be within the limit (every update and merge keeps it so);
    ``added`` may have wrapped already only where the caller flags it.
    """
    flag = xp.asarray(False)
    for a, b in zip(before, added):
        limit, text = limit_text(a.dtype, xp)
        if not B.is_traced(a, b):
            ta = [int(v) for v in np.asarray(B.to_numpy(a)).reshape(-1).tolist()]
            tb = [int(v) for v in np.asarray(B.to_numpy(b)).reshape(-1).tolist()]
            for x, y in zip(ta, tb):
                if x + y > limit:
                    raise ValueError(f"{name}: a count would reach {x + y}, past the limit "
                                     f"{text}; counts never wrap")
            continue
        bad = (b < 0) | (a < 0) | (b > limit - a)
        flag = flag | V.fail_if(bad, name, f"counts must stay at most {text}", xp)
    return flag


def batch_total_flag(name, int_total, values, dtype, xp):
    """Flag a batch whose integer sum wrapped in ``dtype`` (under ``jit``).

    ``int_total`` is the sum in ``dtype``, ``values`` the summed values. A sum
    past the limit ``L`` but below ``2**bits`` wraps once, to a negative
    number; a larger one is seen in the float sum (within rounding of the
    truth, far above ``1.5 L``). No false alarm below the limit.
    """
    limit, text = limit_text(dtype, xp)
    fsum = xp.sum(xp.astype(values, B.acc_float(xp)))
    bad = (int_total < 0) | (fsum > 1.5 * limit)
    return V.fail_if(bad, name, f"must sum to at most {text}", xp)


def check_host_ints(name, a, dtype, xp):
    """Eagerly: NumPy / Python integers that would not fit the state's count dtype.

    A NumPy int64 array converted to JAX without x64 becomes int32 with its
    large values wrapped; refuse it before the conversion, stating the limit.
    """
    if a is None or not xp.isdtype(dtype, "integral"):
        return
    if not isinstance(a, (list, tuple, int, np.ndarray, np.generic)) or isinstance(a, bool):
        return
    h = np.asarray(a)
    if h.dtype.kind not in "iu" or h.size == 0:
        return
    limit, text = limit_text(dtype, xp)
    total = float(np.sum(np.abs(h.astype(np.float64))))
    if total > limit / 2:      # near or past the limit: the exact sum in Python integers
        exact = sum(abs(int(v)) for v in h.reshape(-1).tolist())
        if exact > limit:
            raise ValueError(f"{name} sums to {exact}, past the limit {text} of this "
                             "state's counts; counts never wrap")


def merge(a, b):
    """Merge two states of the same class: field-wise sums (what ``psum`` does).

    Integer totals are checked against their dtype's limit first: eagerly a
    ``ValueError`` stating the limit, under ``jit`` the merge counted in
    ``invalid`` (``compute`` NaN). ``psum`` itself cannot check.
    """
    if type(a) is not type(b):
        raise ValueError(f"cannot merge a {type(a).__name__} with a {type(b).__name__}")
    for name, x, y in zip(a._fields, a, b):
        if tuple(x.shape) != tuple(y.shape):
            raise ValueError(f"cannot merge states whose {name} shapes differ: "
                             f"{tuple(x.shape)} and {tuple(y.shape)}")
    b, _ = bind(b, *a)          # an empty NumPy state merges into any namespace
    a, _ = bind(a, *b)
    out = [x + y for x, y in zip(a, b)]
    ta, tb = count_totals(a), count_totals(b)
    if ta:
        xp = state_xp(a)
        flag = limit_flag(type(a).__name__, ta, tb, xp)
        i = a._fields.index("invalid")
        out[i] = out[i] + xp.astype(flag, out[i].dtype)
    return type(a)(*out)


# --------------------------------------------------------------------------
# the compute preamble
# --------------------------------------------------------------------------

def integral(a):
    return array_api_compat.array_namespace(a).isdtype(a.dtype, "integral")


def bad(state, xp):
    """Invalid batches, or a negative count (a ``psum`` that wrapped): compute gives NaN."""
    out = state.invalid > 0
    for t in count_totals(state):
        out = out | xp.any(t < 0)
    return out


def nan_if_invalid(state, value, xp):
    return B.nan_if(bad(state, xp), value, xp)


def finish(state, *values):
    """``compute``'s last step: NaN once the state is invalid, NumPy scalars on NumPy."""
    xp = state_xp(state)
    out = [B.finalize(nan_if_invalid(state, v, xp), xp) for v in values]
    return out[0] if len(out) == 1 else out


# --------------------------------------------------------------------------
# model outputs, routed to states
# --------------------------------------------------------------------------

#: The model outputs a state may take, as ``update_outputs`` keywords.
OUTPUT_NAMES = ("labels", "logits", "probs", "scores", "preds", "mask", "sample_weight",
                "query_id", "token_logprobs", "num_bytes")


class Outputs:
    """One model output, with the views states ask for (computed once, cached).

    ``labels`` (n,) integer labels (or (Q, L) graded relevance); ``logits``
    (n,) binary or (n, K) multiclass; ``probs`` (n,) probability of class 1
    or (n, K) rows; ``scores`` (n,) ranking scores (or (Q, L)); ``preds``
    (n,) predicted labels; ``mask`` padding (True / 1 real); ``sample_weight``;
    ``query_id``; ``token_logprobs`` and ``num_bytes`` for language models.
    """

    def __init__(self, **outputs):
        unknown = sorted(set(outputs) - set(OUTPUT_NAMES))
        if unknown:
            raise ValueError(f"unknown model outputs {unknown}; a state collection takes "
                             f"{', '.join(OUTPUT_NAMES)}")
        self.given = {k: v for k, v in outputs.items() if v is not None}
        self._cache: dict = {}

    def __contains__(self, name):
        return name in self.given

    def get(self, name):
        return self.given.get(name)

    def _xp(self):
        xp, _ = B.as_arrays(*self.given.values())
        return xp

    def require(self, who, name, *alternatives):
        """The first of ``name, *alternatives`` given, or a ValueError saying what ``who`` takes."""
        for n in (name,) + alternatives:
            if n in self.given:
                return n
        want = " or ".join(f"{n}=" for n in (name,) + alternatives)
        raise ValueError(f"{who} takes {want} from the model outputs; got "
                         f"{', '.join(sorted(self.given)) or 'none'}")

    def _arr(self, name):
        key = ("arr", name)
        if key not in self._cache:
            xp = self._xp()
            (a,) = to(xp, self.given[name])
            self._cache[key] = a
        return self._cache[key]

    def labels(self, who):
        self.require(who, "labels")
        return self.given["labels"]

    def probabilities(self, who):
        """``probs`` as given, else ``sigmoid`` (1-D) / ``softmax`` (2-D) of ``logits``."""
        src = self.require(who, "probs", "logits")
        if src == "probs":
            return self.given["probs"]
        if "probs" not in self._cache:
            xp = self._xp()
            z = self._arr("logits")
            z = xp.astype(z, B.out_float(xp, z))
            if z.ndim == 1:
                p = 1.0 / (1.0 + xp.exp(-z))
            else:
                e = xp.exp(z - xp.max(z, axis=-1, keepdims=True))
                p = e / xp.sum(e, axis=-1, keepdims=True)
            self._cache["probs"] = p
        return self._cache["probs"]

    def log_probabilities(self, who):
        """``log_softmax(logits)`` (last axis), for token log-likelihoods."""
        self.require(who, "logits")
        if "logp" not in self._cache:
            xp = self._xp()
            z = self._arr("logits")
            z = xp.astype(z, B.out_float(xp, z))
            m = xp.max(z, axis=-1, keepdims=True)
            self._cache["logp"] = z - m - xp.log(xp.sum(xp.exp(z - m), axis=-1, keepdims=True))
        return self._cache["logp"]

    def predictions(self, who):
        """``preds`` as given; else the argmax of 2-D logits / probs / scores, or for 1-D
        ``logits >= 0`` / ``probs >= 0.5`` / ``scores >= 0.5`` (class 1 iff p >= 1/2)."""
        src = self.require(who, "preds", "logits", "probs", "scores")
        if src == "preds":
            return self.given["preds"]
        key = ("preds", src)
        if key not in self._cache:
            xp = self._xp()
            a = self._arr(src)
            if a.ndim == 2:
                pred = xp.argmax(a, axis=1)
            else:
                pred = xp.astype(a >= (0.0 if src == "logits" else 0.5), xp.int32)
            self._cache[key] = pred
        return self._cache[key]

    def ranking_scores(self, who):
        """Scores that order rows as the model does: ``logits`` (no squashing, the
        finest histogram key), else ``scores``, else ``probs``; for two-column logits
        ``logits[:, 1] - logits[:, 0]``, for two-column probabilities ``probs[:, 1]``."""
        src = self.require(who, "logits", "scores", "probs")
        a = self.given[src]
        if getattr(a, "ndim", np.ndim(a)) == 2:
            xp = self._xp()
            a = self._arr(src)
            if a.shape[1] != 2:
                raise ValueError(f"{who} ranks binary scores; {src} has shape "
                                 f"{tuple(a.shape)} (use labels and 1-D scores, or two columns)")
            return a[:, 1] - a[:, 0] if src == "logits" else a[:, 1]
        return a


# --------------------------------------------------------------------------
# the class decorator
# --------------------------------------------------------------------------

def _update_outputs(self, **outputs):
    """This state updated from a model's outputs, routed as its class declares (``takes``).

    Keywords as :class:`calipers.StateCollection.update`; a state's static
    options (a ranking cut-off ``k``) are passed here too. Raises
    ``ValueError`` naming what the state takes when an output is missing.
    """
    options = {k: outputs.pop(k) for k in list(outputs) if k not in OUTPUT_NAMES}
    return type(self)._from_outputs(self, Outputs(**outputs), **options)


def _with_namespace(update):
    @functools.wraps(update)
    def wrapped(self, *args, **kwargs):
        if "jax" in sys.modules:
            args = tuple(replicate_explicit(a) for a in args)
            kwargs = {k: replicate_explicit(v) for k, v in kwargs.items()}
        self, _ = bind(self, *args, *kwargs.values())
        return update(self, *args, **kwargs)
    return wrapped


def streaming_state(*, takes: tuple) -> Callable:
    """Class decorator for a ``NamedTuple`` state: the shared parts of the protocol.

    Supplies ``merge`` (unless the class defines its own), ``update_outputs``
    (routing a model output through the class's ``_from_outputs(self,
    outputs, **options)``), ``takes`` (the outputs it reads, for messages
    and docs) and the namespace rule of ``update`` (:func:`bind`).
    """

    def wrap(cls):
        if "merge" not in cls.__dict__:
            def merge_method(self, other):
                """Add two states of the same class and shapes (what ``psum`` does).

                Integer counts are checked against their limit: eagerly a
                ``ValueError``; under ``jit`` the merge is counted in
                ``invalid`` (``compute`` NaN).
                """
                return merge(self, other)
            merge_method.__qualname__ = f"{cls.__name__}.merge"
            cls.merge = merge_method
        cls.update = _with_namespace(cls.__dict__["update"])
        cls.takes = tuple(takes)
        if "_from_outputs" not in cls.__dict__:
            raise TypeError(f"{cls.__name__} must define _from_outputs(self, outputs, **options)")
        cls.update_outputs = _update_outputs
        return cls

    return wrap
