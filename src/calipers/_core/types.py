"""Type aliases of the public signatures.

``ArrayLike``: what a metric accepts as data (an array of any array-API namespace, a NumPy
array, a nested list, a scalar). ``Array``: an array of the caller's namespace, which a
function returns where the value stays on the caller's device (JAX, torch, array-api-strict);
NumPy callers get Python floats. The array-API standard has no static array type shared by
its namespaces, so both are ``Any`` to the type checker: they name intent in signatures.
"""

from __future__ import annotations

import os
from typing import Any, TypeAlias

import numpy as np

__all__ = ["Array", "ArrayLike", "SeedLike", "PathLike"]

Array: TypeAlias = Any
ArrayLike: TypeAlias = Any

#: A resampling seed: None (fresh entropy), an int >= 0, a NumPy ``Generator`` or
#: ``SeedSequence``, or a JAX PRNG key (an array, hence ``Any`` to the checker).
SeedLike: TypeAlias = "int | np.random.Generator | np.random.SeedSequence | Any | None"
#: A file path.
PathLike: TypeAlias = "str | os.PathLike[str]"
