"""One backend fixture for every test: NumPy, the strictest array-api-strict,
JAX eager (x64), JAX under ``jit`` (x64) and JAX under ``jit`` without x64.

``backend.call(fn, *arrays, **options)`` runs ``fn`` on arrays of that backend;
for the jit backends it is ``jax.jit`` over the arrays with the options closed
over (static), so jit coverage is explicit and cannot silently disappear.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np
import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import array_api_strict  # noqa: E402


class Backend:
    def __init__(self, name):
        self.name = name
        self.jit = name.startswith("jax_jit")
        self.x64 = name != "jax_jit_x32"
        if name == "numpy":
            self.xp = np
        elif name == "array_api_strict":
            self.xp = array_api_strict
        else:
            import jax.numpy as jnp
            self.xp = jnp

    @property
    def is_jax(self):
        return self.name.startswith("jax")

    @property
    def eager_checks(self):
        """True where invalid values raise (not under jit)."""
        return not self.jit

    @property
    def compact_curves(self):
        """True where curves have one point per distinct threshold."""
        return self.name in ("numpy", "jax_eager")

    def asarray(self, x, dtype=None):
        x = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
        if self.name == "numpy":
            return x
        if self.name == "array_api_strict":
            return array_api_strict.asarray(x)
        import jax.numpy as jnp
        if not self.x64:
            if x.dtype == np.float64:
                x = x.astype(np.float32)
            elif x.dtype == np.int64:
                x = x.astype(np.int32)
        return jnp.asarray(x)

    def call(self, fn, *arrays, **options):
        arrays = [None if a is None else (a if _is_backend_array(a) else self.asarray(a))
                  for a in arrays]
        if not self.jit:
            return fn(*arrays, **options)
        idx = [i for i, a in enumerate(arrays) if a is not None]

        def wrapped(*present):
            full = list(arrays)
            for i, a in zip(idx, present):
                full[i] = a
            return fn(*full, **options)

        return jax.jit(wrapped)(*[arrays[i] for i in idx])

    def rtol(self):
        return 1e-5 if not self.x64 else 1e-12


def _is_backend_array(a):
    import array_api_compat
    return array_api_compat.is_array_api_obj(a) and not isinstance(a, np.ndarray) \
        or isinstance(a, np.ndarray)


BACKENDS = ["numpy", "array_api_strict", "jax_eager", "jax_jit", "jax_jit_x32"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    b = Backend(request.param)
    with contextlib.ExitStack() as stack:
        if b.name == "array_api_strict":
            # Strictest: no boolean indexing, no data-dependent shapes (as under jit).
            stack.enter_context(array_api_strict.ArrayAPIStrictFlags(
                boolean_indexing=False, data_dependent_shapes=False))
        if b.is_jax and not b.x64:
            stack.enter_context(jax.enable_x64(False))
        yield b


def to_np(x):
    """Any backend's array (or tuple of them) to NumPy float64."""
    if isinstance(x, tuple):
        return tuple(to_np(v) for v in x)
    try:
        return np.asarray(x, dtype=np.float64)
    except TypeError:
        return np.asarray(x.tolist() if hasattr(x, "tolist") else x, dtype=np.float64)


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="run tests marked slow (about 2*10^7-row inputs)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: needs --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
