"""Multi-host JAX: two processes x two CPU devices each (``jax.distributed``) equal one process.

Each process holds only its own rows (half the data, split over its two
devices with padding masked). The states (a confusion matrix, a score
histogram, the streaming paired bootstrap) and the bootstrap's replicate
sums (``bootstrap_counts`` by global row id) are reduced across the four
devices of both processes by one jitted ``psum`` over a global mesh
(JAX's CPU backend runs cross-process collectives through gloo), and again
by ``process_allgather`` of each process's state (the distributed
runtime's transfer, no collective program) and ``merge``. Both must equal
one process on all the rows: integer counts bit for bit. The reference is
NumPy on the concatenated rows, in this process.

``paired_bootstrap(devices=...)`` in a multi-process job: ``"all"`` means
this process's devices (and equals the single-device replicates); a list
holding another process's device is a ``ValueError`` naming the
alternatives.
"""

import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("jax")

import calipers  # noqa: E402
from calipers import PairedBootstrapState, bootstrap_counts  # noqa: E402

N, NR, SEED, BITS = 203, 24, 11, 8
NO_DISTRIBUTED = 77

WORKER = textwrap.dedent("""
    import sys
    pid, port, data, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    import jax
    jax.config.update("jax_enable_x64", True)
    try:
        jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                                   process_id=pid, initialization_timeout=40)
    except Exception as exc:  # no distributed runtime here: the test skips
        print("jax.distributed could not start:", exc)
        sys.exit(%(skip)d)
    import numpy as np
    import jax.numpy as jnp
    from jax.experimental import multihost_utils
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import calipers
    from calipers import PairedBootstrapState, bootstrap_counts

    NR, SEED, BITS = %(NR)d, %(SEED)d, %(BITS)d
    d = dict(np.load(data))
    assert jax.process_count() == 2 and len(jax.devices()) == 4
    assert len(jax.local_devices()) == 2
    n = d["y"].size
    mine = np.array_split(np.arange(n), 2)[pid]              # this process's rows only
    shards = np.array_split(mine, 2)                          # one block per local device
    size = -(-n // 4)

    def block(x, r, fill):
        return np.concatenate([x[r], np.full(size - r.size, fill, dtype=x.dtype)])

    cols = ("y", "pa", "pb", "a", "b", "ids")
    local = {k: np.concatenate([block(d[k], r, 0) for r in shards]) for k in cols}
    local["m"] = np.concatenate([np.arange(size) < r.size for r in shards])
    mesh = Mesh(np.array(jax.devices()), ("d",))
    rows = NamedSharding(mesh, P("d"))
    g = {k: jax.make_array_from_process_local_data(rows, v) for k, v in local.items()}

    def states(y, pa, pb, a, b, ids, m, xp):
        conf = calipers.ConfusionState.init(2, xp=xp).update(y, pa, mask=m)
        hist = calipers.ROCHistogramState.init(16, xp=xp).update(y, a, mask=m)
        boot = PairedBootstrapState.init("roc_auc", NR, seed=SEED, bits=BITS, xp=xp) \\
            .update(y, a, b, row_ids=ids, mask=m)
        c = bootstrap_counts(ids, xp.arange(NR, dtype=xp.uint32), seed=SEED, xp=xp)
        c = xp.where(m, c, 0)                                  # padding draws nothing
        sums = (c @ xp.astype(pa == y, c.dtype), c @ xp.astype(pb == y, c.dtype),
                xp.sum(c, axis=1))
        return conf, hist, boot, sums

    def device(y, pa, pb, a, b, ids, m):
        return jax.lax.psum(states(y, pa, pb, a, b, ids, m, jnp), "d")

    f = jax.jit(jax.shard_map(device, mesh=mesh, in_specs=(P("d"),) * 7, out_specs=P()))
    red = f(*(g[k] for k in (*cols, "m")))
    red = jax.tree.map(lambda x: np.asarray(x.addressable_data(0)), red)

    # the same through the distributed runtime's transfer: gather and merge
    here = states(*(local[k] for k in (*cols, "m")), np)
    both = multihost_utils.process_allgather(jax.tree.map(np.asarray, here))
    first, second = (jax.tree.map(lambda x, i=i: x[i], both) for i in (0, 1))
    conf = first[0].merge(second[0])
    hist = first[1].merge(second[1])
    boot = first[2].merge(second[2])
    sums = tuple(x + y for x, y in zip(first[3], second[3]))
    gathered = (conf, hist, boot, sums)

    # paired_bootstrap on this process's rows: "all" = its own devices
    y, a, b = (jnp.asarray(d[k][mine]) for k in ("y", "a", "b"))
    one = calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=20, seed=3, batch=10)
    two = calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=20, seed=3, batch=10,
                                    devices="all")
    same = bool(np.array_equal(one.distribution_a, two.distribution_a)
                and np.array_equal(one.distribution_b, two.distribution_b))
    try:
        calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=20, seed=3,
                                  devices=jax.devices())
        message = ""
    except ValueError as exc:
        message = str(exc)

    leaves = {f"psum{i}": x for i, x in enumerate(jax.tree.leaves(red))}
    leaves.update({f"gather{i}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(gathered))})
    np.savez(out, same=same, message=message, **leaves)
    multihost_utils.sync_global_devices("done")
    jax.distributed.shutdown()
""") % {"skip": NO_DISTRIBUTED, "NR": NR, "SEED": SEED, "BITS": BITS}


def _data():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, N)
    a = np.round(rng.random(N), 2)                        # ties
    b = np.clip(0.6 * a + 0.4 * rng.random(N), 0, 1)
    return {"y": y, "a": a, "b": b, "pa": (a > 0.5).astype(np.int64),
            "pb": (b > 0.45).astype(np.int64),
            "ids": rng.choice(2**40, size=N, replace=False).astype(np.int64)}


def _reference(d):
    y, pa, pb, a, b, ids = (d[k] for k in ("y", "pa", "pb", "a", "b", "ids"))
    conf = calipers.ConfusionState.init(2).update(y, pa)
    hist = calipers.ROCHistogramState.init(16).update(y, a)
    boot = PairedBootstrapState.init("roc_auc", NR, seed=SEED, bits=BITS) \
        .update(y, a, b, row_ids=ids)
    c = bootstrap_counts(ids, np.arange(NR), seed=SEED)
    sums = (c @ (pa == y), c @ (pb == y), c.sum(1))
    return conf, hist, boot, sums


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("multihost")
    d = _data()
    np.savez(tmp / "data.npz", **d)
    (tmp / "worker.py").write_text(WORKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_"))}
    env.update(XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    port = _free_port()
    procs = [subprocess.Popen([sys.executable, str(tmp / "worker.py"), str(i), str(port),
                               str(tmp / "data.npz"), str(tmp / f"out{i}.npz")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env) for i in range(2)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=120)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    codes = [p.returncode for p in procs]
    if NO_DISTRIBUTED in codes:
        pytest.skip("jax.distributed could not start: " + logs[codes.index(NO_DISTRIBUTED)][-300:])
    assert codes == [0, 0], "\n".join(log[-3000:] for log in logs)
    return d, [dict(np.load(tmp / f"out{i}.npz")) for i in range(2)]


def test_states_and_bootstrap_sums_equal_one_process(runs):
    import jax

    d, outs = runs
    ref = _reference(d)
    want = [np.asarray(x) for x in jax.tree.leaves(ref)]
    for out in outs:                                   # both processes hold the result
        for how in ("psum", "gather"):
            got = [out[f"{how}{i}"] for i in range(len(want))]
            assert len(got) == len(want)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)    # integer counts: bit for bit


def test_merged_bootstrap_equals_the_one_shot_replicates(runs):
    import jax

    d, outs = runs
    ref = _reference(d)
    n_leaves = len(jax.tree.leaves(ref))
    sa, sb, w = (outs[0][f"psum{i}"] for i in range(n_leaves - 3, n_leaves))
    ea, eb = calipers.paired_bootstrap_replicates(
        calipers.accuracy_score, d["y"], d["pa"], d["pb"], n_resamples=NR, seed=SEED,
        resampling="poisson", row_ids=d["ids"])
    np.testing.assert_array_equal(sa / w, ea)
    np.testing.assert_array_equal(sb / w, eb)
    # the psum'd streaming bootstrap state computes the one machine's AUC replicates
    leaves = [outs[0][f"psum{i}"] for i in range(n_leaves)]
    boot = jax.tree.unflatten(jax.tree.structure(ref), leaves)[2]
    for g, w_ in zip(boot.compute(), ref[2].compute()):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w_))


def test_paired_bootstrap_devices_across_processes(runs):
    _, outs = runs
    for out in outs:
        assert bool(out["same"])                       # "all": this process's devices
        msg = str(out["message"])
        assert "other JAX processes" in msg and "jax.local_devices()" in msg \
            and "bootstrap_counts" in msg
