"""Result types: every public result is a frozen dataclass and a JAX pytree.

One decorator, :func:`result_type`, so that no module registers its own
types a second way.  Array-valued fields are pytree children (they may be
tracers under ``jax.jit``); fields named in ``meta`` are static (strings,
method names, cut-offs) and must be hashable.

JAX is optional and never imported by calipers itself: a type is registered
with JAX at class creation when JAX is already imported, and otherwise the
first time calipers sees a JAX array or makes a result while JAX is imported
(:func:`register_with_jax`), so ``jax.jit(calipers.delong_test)`` can return it
and ``import calipers`` does not pay for ``import jax``. Without JAX a result is a
plain frozen dataclass.
"""

from __future__ import annotations

import dataclasses
from typing import Any
import sys
import warnings

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - type checkers only need it on the version they run
    def dataclass_transform(**kwargs):
        return lambda f: f

__all__ = ["ConfidenceInterval"]  # result_type is for calipers' own modules

# (class, data fields, meta fields) of every result type not yet registered with JAX
_PENDING: list = []


def register_with_jax() -> None:
    """Register every result type defined so far as a JAX pytree (once; JAX must be imported).

    Called when calipers first meets a JAX array, and at class creation when JAX is already
    imported, so calipers never imports JAX itself.
    """
    if not _PENDING or "jax" not in sys.modules:
        return
    import jax

    while _PENDING:
        c, data, meta = _PENDING.pop()
        jax.tree_util.register_dataclass(c, data_fields=data, meta_fields=meta)


def _deprecated(what: str, instead: str) -> None:
    warnings.warn(f"{what} is deprecated and will be removed in the next release; {instead}",
                  DeprecationWarning, stacklevel=3)


def _alias(cls_name: str, old: str, path: tuple[str, ...]):
    def get(self):
        _deprecated(f"{cls_name}.{old}", f"use .{'.'.join(path)}")
        v = self
        for p in path:
            v = getattr(v, p)
        return v
    return property(get, doc=f"Deprecated alias of ``{'.'.join(path)}``.")


def _legacy_value(self, name):
    path = self._renamed.get(name, (name,))
    v = self
    for p in path:
        v = getattr(v, p)
    return v


def _legacy_iter(self):
    _deprecated(f"unpacking or indexing a {type(self).__name__}", "read its fields by name")
    return iter([_legacy_value(self, n) for n in self._legacy_fields])


def _legacy_getitem(self, i):
    _deprecated(f"unpacking or indexing a {type(self).__name__}", "read its fields by name")
    return [_legacy_value(self, n) for n in self._legacy_fields][i]


def _legacy_len(self):
    return len(self._legacy_fields)


def _legacy_asdict(self):
    _deprecated(f"{type(self).__name__}._asdict()", "use dataclasses.asdict")
    return {n: _legacy_value(self, n) for n in self._legacy_fields}


@dataclass_transform(frozen_default=True)
def result_type(cls=None, *, meta: tuple[str, ...] = (), renamed: dict | None = None,
                legacy_fields: tuple[str, ...] | None = None):
    """Make ``cls`` a frozen dataclass registered as a JAX pytree.

    ``meta`` names the static fields; every other field is data. ``renamed`` maps a former
    field name to the path of attributes that now holds it (``{"ci_low": ("confidence_interval",
    "low")}``): the old name stays readable, with a ``DeprecationWarning``. ``legacy_fields``
    is the field order of the NamedTuple a type replaces: unpacking, indexing, ``len`` and
    ``_asdict`` keep working in that order, with a ``DeprecationWarning``.
    """

    def wrap(c):
        own_post_init = getattr(c, "__post_init__", None)

        def __post_init__(self):
            # a result made while JAX is imported registers every type first, so a jitted
            # function can return it whichever order calipers and JAX were imported in
            if _PENDING:
                register_with_jax()
            if own_post_init is not None:
                own_post_init(self)

        c.__post_init__ = __post_init__
        c = dataclasses.dataclass(frozen=True)(c)
        c._renamed = dict(renamed or {})
        for old, path in c._renamed.items():
            setattr(c, old, _alias(c.__name__, old, tuple(path)))
        if legacy_fields is not None:
            c._legacy_fields = tuple(legacy_fields)
            c.__iter__ = _legacy_iter
            c.__getitem__ = _legacy_getitem
            c.__len__ = _legacy_len
            c._asdict = _legacy_asdict
        names = [f.name for f in dataclasses.fields(c)]
        unknown = set(meta) - set(names)
        if unknown:  # a typo here would silently make a field traced
            raise TypeError(f"{c.__name__}: meta fields {sorted(unknown)} are not fields")
        _PENDING.append((c, [n for n in names if n not in meta], list(meta)))
        register_with_jax()
        return c

    return wrap if cls is None else wrap(cls)


@result_type
class ConfidenceInterval:
    """A two-sided or one-sided interval; a one-sided interval has an infinite end.

    Attributes
    ----------
    low, high : float (0-d array under ``jit``), or arrays of ends of one shape
        The ends; NaN when the interval is undefined.
    """

    low: Any
    high: Any
