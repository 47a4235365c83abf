"""Result types: every public result is a frozen dataclass and a JAX pytree.

One decorator, :func:`result_type`, so that no module registers its own
types a second way.  Array-valued fields are pytree children (they may be
tracers under ``jax.jit``); fields named in ``meta`` are static (strings,
method names, cut-offs) and must be hashable.

JAX is optional: when it is importable the type is registered at class
creation, so ``jax.jit(calipers.delong_test)`` can return it; without JAX
the class is a plain frozen dataclass.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - type checkers only need it on the version they run
    def dataclass_transform(**kwargs):
        return lambda f: f

__all__ = ["ConfidenceInterval"]  # result_type is for calipers' own modules

_HAS_JAX = importlib.util.find_spec("jax") is not None


@dataclass_transform(frozen_default=True)
def result_type(cls=None, *, meta: tuple[str, ...] = ()):
    """Make ``cls`` a frozen dataclass registered as a JAX pytree.

    ``meta`` names the static fields; every other field is data.
    """

    def wrap(c):
        c = dataclasses.dataclass(frozen=True)(c)
        if _HAS_JAX:
            import jax

            names = [f.name for f in dataclasses.fields(c)]
            unknown = set(meta) - set(names)
            if unknown:  # a typo here would silently make a field traced
                raise TypeError(f"{c.__name__}: meta fields {sorted(unknown)} are not fields")
            jax.tree_util.register_dataclass(
                c, data_fields=[n for n in names if n not in meta], meta_fields=list(meta))
        return c

    return wrap if cls is None else wrap(cls)


@result_type
class ConfidenceInterval:
    """A two-sided or one-sided interval; a one-sided interval has an infinite end.

    Attributes
    ----------
    low, high : float (0-d array under ``jit``)
        The ends; NaN when the interval is undefined.
    """

    low: float
    high: float
