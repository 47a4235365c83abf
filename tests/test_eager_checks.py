"""``calipers.eager_checks(False)``: eager calls on JAX arrays read nothing back to the host.

The reads are counted where JAX materialises a device array on the host (``ArrayImpl._value``,
behind ``bool()``, ``int()``, ``np.asarray``); with the checks on an eager ``update`` reads its
check flags back, with them off it reads nothing and invalid values give NaN, as under ``jit``.
"""

from __future__ import annotations

import threading
import warnings

import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import array as jax_array

import calipers
from calipers import ConfusionState, ProbabilityLossState, ROCHistogramState


@pytest.fixture
def reads(monkeypatch):
    count = [0]
    value = jax_array.ArrayImpl._value

    def counted(self):
        count[0] += 1
        return value.fget(self)

    monkeypatch.setattr(jax_array.ArrayImpl, "_value", property(counted))
    return count


def _batches():
    rng = np.random.default_rng(0)
    y = jnp.asarray(rng.integers(0, 2, 64))
    p = jnp.asarray(rng.random(64))
    return [(ROCHistogramState.init(), (y, p)),
            (ConfusionState.init(2), (y, (p > 0.5).astype(jnp.int32))),
            (ProbabilityLossState.init(), (y, p))]


def test_no_host_reads_when_skipped(reads):
    for state, args in _batches():
        state = state.update(*args)                     # compiled once
        reads[0] = 0
        checked = state.update(*args)
        assert reads[0] > 0, type(state).__name__       # the check flags come back
        with calipers.eager_checks(False):
            reads[0] = 0
            skipped = state.update(*args)
            out = skipped.compute()
            assert reads[0] == 0, type(state).__name__
        for a, b in zip(checked, skipped):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        import jax
        want = jax.tree_util.tree_leaves(checked.compute())
        assert want and len(want) == len(jax.tree_util.tree_leaves(out))
        for a, b in zip(jax.tree_util.tree_leaves(out), want):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_invalid_values_give_nan_instead_of_errors():
    y = jnp.asarray([0, 1, 1, 0])
    bad = jnp.asarray([0.1, 1.5, 0.4, 0.2])             # a probability outside [0, 1]
    state = ProbabilityLossState.init()
    with pytest.raises(ValueError, match="y_prob"):
        state.update(y, bad)
    with calipers.eager_checks(False):
        skipped = state.update(y, bad)
    assert np.isnan(float(skipped.compute().log_loss))
    # the same as under jit
    import jax
    jitted = jax.jit(lambda s, a, b: s.update(a, b))(state, y, bad)
    assert np.isnan(float(jitted.compute().log_loss))


def test_undefined_results_do_not_warn():
    state = ConfusionState.init(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with calipers.eager_checks(False):
            value = state.update(jnp.asarray([0, 0]), jnp.asarray([0, 0]),
                                 mask=jnp.asarray([False, False])).compute()
    assert np.isnan(float(value.accuracy))


def test_per_thread_restored_and_checked():
    seen = []

    def other():
        seen.append(calipers._core.compile.checks_enabled())

    with calipers.eager_checks(False):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert not calipers._core.compile.checks_enabled()
        with calipers.eager_checks(True):
            assert calipers._core.compile.checks_enabled()
        assert not calipers._core.compile.checks_enabled()
    assert seen == [True] and calipers._core.compile.checks_enabled()
    with pytest.raises(RuntimeError):
        with calipers.eager_checks(False):
            raise RuntimeError
    assert calipers._core.compile.checks_enabled()
    with pytest.raises(ValueError, match="enabled must be True or False"):
        with calipers.eager_checks(0):
            pass
