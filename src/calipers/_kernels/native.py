"""The compiled passes (:mod:`calipers._kernels._native`, C) behind the NumPy kernels.

Each compiled function does in one pass over memory what a NumPy kernel does
in several (pack the scores with their labels, count a sorted array's tie
groups, hash a bootstrap replicate's counts), with the same integers; the
NumPy passes stay as the fallback and as the tests' reference. ``lib`` is
the compiled module, or None where it was not built (no C compiler at
install time) or where the environment variable ``CALIPERS_NATIVE`` is
``0`` (read at import).
"""

from __future__ import annotations

import os
from types import ModuleType

lib: ModuleType | None = None
if os.environ.get("CALIPERS_NATIVE", "1") != "0":
    try:
        from . import _native as lib
    except ImportError:     # built without a C compiler: the NumPy passes run instead
        lib = None
