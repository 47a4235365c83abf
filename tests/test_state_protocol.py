"""The one state protocol: every state keeps it, and the namespace rule of ``update``.

A state keeps the namespace of ``init``'s ``xp=``; an empty NumPy state takes the namespace
of its first non-NumPy batch (so a state made without ``xp=jnp`` works inside ``jit``); any
other mismatch is a ``ValueError`` naming both namespaces.
"""

import os
import pathlib
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import calipers
from calipers import (CalibrationState, ConfusionState, MergeableState, NLLState,
                      ProbabilityLossState, QueryMeanState, ROCHistogramState)

STATES = {
    "ConfusionState": (lambda xp=None: ConfusionState.init(3, xp=xp),
                       lambda: ([0, 1, 2, 1], [0, 2, 2, 1])),
    "CalibrationState": (lambda xp=None: CalibrationState.init(4, xp=xp),
                         lambda: ([0, 1, 1, 0], [0.25, 0.75, 0.5, 0.125])),
    "ProbabilityLossState": (lambda xp=None: ProbabilityLossState.init(xp=xp),
                             lambda: ([0, 1, 1, 0], [0.25, 0.75, 0.5, 0.125])),
    "NLLState": (lambda xp=None: NLLState.init(xp=xp), lambda: ([-0.5, -1.0, -0.25],)),
    "ROCHistogramState": (lambda xp=None: ROCHistogramState.init(16, xp=xp),
                          lambda: ([0, 1, 1, 0], [0.25, 0.75, 0.5, 0.125])),
    "QueryMeanState": (lambda xp=None: QueryMeanState.init(1, xp=xp),
                       lambda: ([0.5, 0.25, 1.0],)),
}


def test_every_public_state_keeps_the_protocol():
    names = [n for n in calipers.__all__
             if isinstance(getattr(calipers, n), type) and hasattr(getattr(calipers, n), "takes")]
    assert set(STATES) <= set(names)
    for name in names:
        cls = getattr(calipers, name)
        for method in ("init", "update", "merge", "compute", "update_outputs"):
            assert callable(getattr(cls, method, None)), (name, method)
        assert isinstance(cls.takes, tuple) and cls.takes
    for name, (make, _) in STATES.items():
        assert isinstance(make(), MergeableState), name


@pytest.mark.parametrize("name", sorted(STATES))
def test_merge_comes_from_the_base_and_checks_the_class(name):
    make, batch = STATES[name]
    s = make().update(*[np.asarray(a) for a in batch()])
    other = ConfusionState.init(2) if name != "ConfusionState" else NLLState.init()
    with pytest.raises(ValueError, match="cannot merge"):
        s.merge(other)
    merged = s.merge(s)
    for a, b in zip(merged, s):
        np.testing.assert_array_equal(np.asarray(a), 2 * np.asarray(b))


@pytest.mark.parametrize("name", sorted(STATES))
def test_state_made_without_xp_works_inside_jit(name):
    """Before: TracerArrayConversionError; now the empty NumPy state takes jax.numpy."""
    make, batch = STATES[name]
    arrays = [jnp.asarray(a) for a in batch()]
    got = jax.jit(lambda *a: make().update(*a))(*arrays)
    want = make(jnp).update(*arrays)
    for a, b in zip(got, want):
        assert isinstance(a, jax.Array)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # eagerly too: the first JAX batch gives a JAX state, not a copy to the host
    eager = make().update(*arrays)
    assert all(isinstance(f, jax.Array) for f in eager)


@pytest.mark.parametrize("name", sorted(STATES))
def test_numpy_state_with_data_refuses_a_jax_batch_naming_both(name):
    make, batch = STATES[name]
    s = make().update(*[np.asarray(a) for a in batch()])
    arrays = [jnp.asarray(a) for a in batch()]
    with pytest.raises(ValueError, match=r"NumPy \(numpy\).*jax\.numpy.*xp=jax\.numpy"):
        s.update(*arrays)
    with pytest.raises(ValueError, match=r"NumPy \(numpy\).*jax\.numpy"):
        jax.jit(lambda *a: s.update(*a))(*arrays)


@pytest.mark.parametrize("name", sorted(set(STATES) - {"NLLState"}))  # NLL: .size on torch
def test_torch_batches(name):
    """A NumPy state fed torch tensors: empty, it becomes a torch state (before: a torch
    dtype error); a JAX state fed torch names both namespaces."""
    torch = pytest.importorskip("torch")
    make, batch = STATES[name]
    tb = [torch.asarray(np.asarray(a)) for a in batch()]
    s = make().update(*tb)
    assert all(isinstance(f, torch.Tensor) for f in s)
    ref = make().update(*[np.asarray(a) for a in batch()])
    for a, b in zip(s, ref):
        np.testing.assert_array_equal(a.numpy(), np.asarray(b))
    with pytest.raises(ValueError, match=r"jax\.numpy arrays.*torch"):
        make(jnp).update(*tb)


def test_jax_state_takes_numpy_batches_and_lists():
    s = ConfusionState.init(2, xp=jnp).update([0, 1, 1], np.array([0, 1, 0]))
    assert isinstance(s.counts, jax.Array)
    np.testing.assert_array_equal(np.asarray(s.counts), [[1, 0], [1, 1]])


def test_empty_numpy_state_merges_into_a_jax_state():
    a = ConfusionState.init(2, xp=jnp).update(jnp.array([0, 1]), jnp.array([0, 1]))
    for m in (a.merge(ConfusionState.init(2)), ConfusionState.init(2).merge(a)):
        assert isinstance(m.counts, jax.Array)
        np.testing.assert_array_equal(np.asarray(m.counts), np.asarray(a.counts))
    with pytest.raises(ValueError, match="NumPy"):
        a.merge(ConfusionState.init(2).update([0], [1]))


def test_update_outputs_routes_and_names_what_is_missing():
    y = np.array([0, 1, 1, 0, 1])
    z = np.array([-1.0, 2.0, -0.5, 0.5, 1.0])
    cm = ConfusionState.init(2).update_outputs(labels=y, logits=z)
    np.testing.assert_array_equal(cm.counts, calipers.confusion_matrix(y, (z >= 0).astype(int)))
    with pytest.raises(ValueError, match=r"ConfusionState takes preds= or logits= or probs= "
                                         r"or scores=.*got labels"):
        ConfusionState.init(2).update_outputs(labels=y)
    with pytest.raises(ValueError, match="unknown model outputs"):
        calipers.StateCollection.init({"cm": ConfusionState.init(2)}).update(labels=y, logit=z)


EXPLICIT = textwrap.dedent("""
    import os, sys
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    import calipers
    from calipers import (CalibrationState, ConfusionState, ProbabilityLossState,
                          ROCHistogramState, StateCollection)

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 64)
    z = rng.integers(-8, 9, (64, 3)).astype(np.float32) / 4
    yb = (y == 1).astype(np.int32)

    def run(y, z, yb):
        return (ConfusionState.init(3, xp=jnp).update(y, jnp.argmax(z, axis=1)),
                CalibrationState.init(10, xp=jnp).update(y, jax.nn.softmax(z)),
                ProbabilityLossState.init(xp=jnp).update(y, jax.nn.softmax(z)),
                ROCHistogramState.init(16, xp=jnp).update(yb, z[:, 1]),
                StateCollection.init({"cm": ConfusionState.init(3)}).update(labels=y, logits=z))

    want = jax.jit(run)(jnp.asarray(y), jnp.asarray(z), jnp.asarray(yb))
    for types in ("explicit", "auto"):
        kw = {} if types == "explicit" else {"axis_types": (AxisType.Auto,)}
        mesh = jax.make_mesh((4,), ("data",), **kw)
        assert ("Explicit" in str(mesh.axis_types)) == (types == "explicit")
        sh = NamedSharding(mesh, P("data"))
        args = [jax.device_put(jnp.asarray(a), sh) for a in (y, z, yb)]
        got = jax.jit(run)(*args)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            a, b = np.asarray(a), np.asarray(b)
            if a.dtype.kind in "iub":
                np.testing.assert_array_equal(a, b)   # counts: bit for bit
            else:
                np.testing.assert_allclose(a, b, rtol=1e-6)
        eager = ConfusionState.init(3, xp=jnp).update(args[0], jnp.argmax(args[1], axis=1))
        np.testing.assert_array_equal(np.asarray(eager.counts), np.asarray(want[0].counts))
        print("MESH-OK", types)
""")


def test_state_updates_under_plain_jit_on_explicit_and_auto_meshes(tmp_path):
    """jax.make_mesh's default (Explicit axes): before, "Resource axis: data of P('data',)
    is not found in mesh: ()"; now the batch is resharded and the counts equal one device's."""
    script = tmp_path / "explicit.py"
    script.write_text(EXPLICIT)
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS",)}
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parents[1] / "src")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "MESH-OK explicit" in res.stdout and "MESH-OK auto" in res.stdout
