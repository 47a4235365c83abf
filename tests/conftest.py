"""One backend fixture for every test: NumPy, the strictest array-api-strict,
JAX eager (x64), JAX under ``jit`` (x64) and JAX under ``jit`` without x64.

``backend.call(fn, *arrays, **options)`` runs ``fn`` on arrays of that backend;
for the jit backends it is ``jax.jit`` over the arrays with the options closed
over (static), so jit coverage is explicit and cannot silently disappear.
"""

from __future__ import annotations

import contextlib
import warnings
import json
import os
import pathlib

import numpy as np
import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

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
        """Run ``fn`` on this backend.

        Positional arguments are arrays (lists and NumPy arrays are converted).
        Keyword options that are NumPy arrays (``sample_weight=w``) are
        converted too and, under jit, traced like the positional arrays; other
        options (lists, numbers, strings) stay static.
        """
        arrays = [None if a is None else (a if self._mine(a) else self.asarray(a))
                  for a in arrays]
        kw_arrays = {k: (v if self._mine(v) and not isinstance(v, np.ndarray) else self.asarray(v))
                     for k, v in options.items() if isinstance(v, np.ndarray) or
                     (self._mine(v) and not isinstance(v, (list, tuple)))}
        static = {k: v for k, v in options.items() if k not in kw_arrays}
        if not self.jit:
            return fn(*arrays, **kw_arrays, **static)
        idx = [i for i, a in enumerate(arrays) if a is not None]
        names = list(kw_arrays)

        def wrapped(*present):
            full = list(arrays)
            for i, a in zip(idx, present):
                full[i] = a
            kws = dict(zip(names, present[len(idx):]))
            return fn(*full, **kws, **static)

        return jax.jit(wrapped)(*[arrays[i] for i in idx], *[kw_arrays[k] for k in names])

    def _mine(self, a):
        """True for an array already of this backend (not converted again)."""
        import array_api_compat
        if not array_api_compat.is_array_api_obj(a):
            return False
        return array_api_compat.array_namespace(a) is \
            array_api_compat.array_namespace(self.asarray(np.zeros(1)))

    def rtol(self):
        return 1e-5 if not self.x64 else 1e-12




# Test data lives in the repository (tests/data), so a fresh clone runs every case.
DATA = pathlib.Path(__file__).resolve().parent / "data"
TREC_EVAL_DATA = DATA / "trec_eval"
HANDED_CASES = {c["id"]: c for c in json.loads((DATA / "handed_cases.json").read_text())}


def load_case(case_id):
    """One handed case (inputs, expected value, public ``source``) from tests/data."""
    return HANDED_CASES[case_id]


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


def close(got, want, backend=None, atol=0.0):
    """assert_allclose of a backend result, NaN equal to NaN; float32 backends get atol 1e-6."""
    rtol = 1e-12 if backend is None else max(backend.rtol(), 1e-12)
    if backend is not None and not backend.x64:
        atol = max(atol, 1e-6)
    np.testing.assert_allclose(to_np(got), np.asarray(want, dtype=float), rtol=rtol, atol=atol,
                               equal_nan=True)


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

# --------------------------------------------------------------------------
# the state tests' four modes: NumPy, eager JAX, JAX under jit (x64 on and off)
# --------------------------------------------------------------------------

STATE_MODES = ["numpy", "jax_eager", "jax_jit", "jax_jit_x32"]


@contextlib.contextmanager
def mode_context(mode):
    """x64 off for ``jax_jit_x32``; warnings silenced (the tests check values)."""
    with contextlib.ExitStack() as stack:
        if mode == "jax_jit_x32":
            stack.enter_context(jax.enable_x64(False))
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        yield


def mode_xp(mode):
    return np if mode == "numpy" else jnp


def mode_array(mode, a):
    """``a`` as the mode's array: NumPy, or JAX (64-bit dtypes narrowed without x64)."""
    a = np.asarray(a)
    if mode == "numpy":
        return a
    if mode == "jax_jit_x32":
        a = a.astype(np.float32) if a.dtype == np.float64 else \
            a.astype(np.int32) if a.dtype == np.int64 else a
    return jnp.asarray(a)
