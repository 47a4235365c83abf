"""PairedBootstrapState: the streaming paired Poisson bootstrap.

Reference: the one-shot ``paired_bootstrap_replicates(..., resampling="poisson",
row_ids=...)`` on the same rows (its own replicates are checked against the public
metrics under the counts in test_row_ids.py), with AUC/AP scores replaced by their
histogram key; NumPy eager against JAX ``jit``, ``psum`` over a mapped axis against
``merge``.
"""

import os
import warnings

import numpy as np
import pytest

import calipers
from calipers import PairedBootstrapState, bootstrap_interval, paired_bootstrap_replicates
from calipers._streaming.histogram import _bin_index

RNG = np.random.default_rng(77)
N = 300
Y = RNG.integers(0, 2, N)
A = RNG.random(N)
Bs = np.clip(0.5 * A + 0.5 * RNG.random(N), 0, 1)
IDS = RNG.choice(2**40, size=N, replace=False).astype(np.int64)
BITS = 8
NR = 48
EXACT = {"roc_auc", "accuracy"}


def _inputs(metric):
    if metric == "accuracy":
        return (A > 0.5).astype(np.int64), (Bs > 0.45).astype(np.int64)
    return A, Bs


def _one_shot(metric, rows=slice(None)):
    a, b = _inputs(metric)
    if metric in ("roc_auc", "average_precision"):
        a = _bin_index(a, "float32", BITS, np).astype(np.float64)
        b = _bin_index(b, "float32", BITS, np).astype(np.float64)
    fn = calipers.accuracy_score if metric == "accuracy" else metric
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return paired_bootstrap_replicates(fn, Y[rows], a[rows], b[rows], n_resamples=NR,
                                           resampling="poisson", seed=13, row_ids=IDS[rows])


def _stream(metric, order, cuts, xp=None):
    a, b = _inputs(metric)
    st = PairedBootstrapState.init(metric, NR, seed=13, bits=BITS, xp=xp)
    for i, j in zip(cuts[:-1], cuts[1:]):
        r = order[i:j]
        st = st.update(Y[r], a[r], b[r], row_ids=IDS[r])
    return st


def _check(got, ref, metric):
    for g, r in zip(got, ref):
        g = np.asarray(g)
        if metric in EXACT:
            np.testing.assert_array_equal(g, r)
        else:
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "accuracy", "log_loss",
                                    "brier"])
def test_state_equals_one_shot_bootstrap(metric):
    ref = _one_shot(metric)
    rng = np.random.default_rng(3)
    for cuts in ([0, N], [0, 1, 90, 91, N], [0, 150, 151, 299, N]):
        order = rng.permutation(N)                     # batches in any order
        st = _stream(metric, order, cuts)
        _check(st.compute(), ref, metric)
    # states of a partition, merged in another order, equal one state
    order = rng.permutation(N)
    parts = [_stream(metric, order[i:j], [0, j - i]) for i, j in ((0, 40), (40, 41), (41, N))]
    merged = parts[2].merge(parts[0]).merge(parts[1])
    _check(merged.compute(), ref, metric)


def test_state_memory_and_fields():
    st = PairedBootstrapState.init("roc_auc", 10, seed=0, bits=5)
    assert st.stats.shape == (10, 2, 64) and st.total.shape == (10,)
    assert PairedBootstrapState.init("brier", 10, seed=0).stats.shape == (10, 2, 1)


def test_merge_refuses_other_configurations():
    a = PairedBootstrapState.init("accuracy", 8, seed=1)
    with pytest.raises(ValueError, match="cannot merge"):
        a.merge(PairedBootstrapState.init("accuracy", 8, seed=2))
    with pytest.raises(ValueError, match="cannot merge"):
        a.merge(PairedBootstrapState.init("brier", 8, seed=1))
    assert type(a) is type(PairedBootstrapState.init("accuracy", 8, seed=1))


def test_eager_errors_and_masked_rows_unchecked():
    st = PairedBootstrapState.init("log_loss", 8, seed=1)
    with pytest.raises(ValueError, match="metric"):
        PairedBootstrapState.init("f1", 8)
    with pytest.raises(ValueError, match="bits"):
        PairedBootstrapState.init("roc_auc", 8, bits=25)
    with pytest.raises(ValueError, match="y_score_a"):
        st.update([0, 1], [0.5, 1.5], [0.5, 0.5], row_ids=[0, 1])
    with pytest.raises(ValueError, match="y_true"):
        st.update([0, 2], [0.5, 0.5], [0.5, 0.5], row_ids=[0, 1])
    with pytest.raises(ValueError, match="row_ids"):
        st.update([0, 1], [0.5, 0.5], [0.5, 0.5], row_ids=[0])
    with pytest.raises(ValueError, match="non-negative"):
        st.update([0, 1], [0.5, 0.5], [0.5, 0.5], row_ids=[0, -1])
    # padding rows (garbage labels and probabilities) add nothing and are not checked
    padded = st.update([0, 1, 7], [0.25, 0.75, np.nan], [0.5, 0.5, 9.0], row_ids=[3, 4, 99],
                       mask=[True, True, False])
    plain = st.update([0, 1], [0.25, 0.75], [0.5, 0.5], row_ids=[3, 4])
    np.testing.assert_array_equal(padded.stats, plain.stats)
    np.testing.assert_array_equal(padded.total, plain.total)
    # a batch of nothing but padding adds nothing, never invalid
    empty = st.update([5], [np.nan], [2.0], row_ids=[0], mask=[False])
    assert int(empty.invalid) == 0 and not np.any(empty.total)


@pytest.mark.parametrize("metric", ["roc_auc", "accuracy", "brier"])
def test_jit_update_with_padding_equals_eager(metric):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    a, b = _inputs(metric)
    ref = _one_shot(metric)
    size = 128                                    # fixed batch shape: the last batch padded
    st = PairedBootstrapState.init(metric, NR, seed=13, bits=BITS, xp=jnp)
    step = jax.jit(lambda s, y, a, b, i, m: s.update(y, a, b, row_ids=i, mask=m))
    for i in range(0, N, size):
        r = np.arange(i, min(i + size, N))
        pad = size - r.size
        def p(x, fill):
            return jnp.asarray(np.concatenate([x[r], np.full(pad, fill, dtype=x.dtype)]))
        m = jnp.asarray(np.arange(size) < r.size)
        st = step(st, p(Y, 9), p(a, 7), p(b, 7), p(IDS, 0), m)
    _check(st.compute(), ref, metric)
    assert step._cache_size() == 1
    # under jit invalid input cannot raise: NaN
    bad = step(st, jnp.asarray([0, 3]), jnp.asarray(a[:2]), jnp.asarray(b[:2]),
               jnp.asarray(IDS[:2]), jnp.asarray([True, True]))
    if metric != "accuracy":
        assert np.isnan(np.asarray(bad.compute()[0])).all()


def test_psum_over_devices_equals_merge():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    metric = "roc_auc"
    a, b = _inputs(metric)
    init = PairedBootstrapState.init(metric, NR, seed=13, bits=BITS, xp=jnp)
    shards = np.array_split(RNG.permutation(N), 4)
    size = max(s.size for s in shards)

    def pad(x, r, fill):
        return np.concatenate([x[r], np.full(size - r.size, fill, dtype=x.dtype)])

    ys, as_, bs, ids, ms = (jnp.asarray(np.stack(v)) for v in zip(*[
        (pad(Y, r, 0), pad(a, r, 0.0), pad(b, r, 0.0), pad(IDS, r, 0),
         np.arange(size) < r.size) for r in shards]))

    def device(y, a, b, i, m):
        return jax.lax.psum(init.update(y, a, b, row_ids=i, mask=m), "d")

    out = jax.vmap(device, axis_name="d")(ys, as_, bs, ids, ms)
    one = jax.tree_util.tree_map(lambda x: x[0], out)
    _check(one.compute(), _one_shot(metric), metric)


def test_interval_under_jit_from_the_state():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    st = _stream("brier", np.arange(N), [0, 100, N])
    da, db = st.compute()
    d = np.asarray(da) - np.asarray(db)
    est = float(calipers.brier_score_loss(Y, A) - calipers.brier_score_loss(Y, Bs))
    jst = jax.tree_util.tree_map(jnp.asarray, st)

    @jax.jit
    def interval(s, est):
        ra, rb = s.compute()
        return bootstrap_interval(ra - rb, est, method="basic")

    got = interval(jst, jnp.asarray(est))
    ref = bootstrap_interval(d, est, method="basic")
    assert abs(float(got.low) - ref.low) < 1e-14 and abs(float(got.high) - ref.high) < 1e-14


def test_compute_on_a_state_replicated_over_an_explicit_mesh():
    """compute() on a state whose fields are replicated over a 4-device (Explicit) mesh:
    the NaN fills keep the values' placement (before: a rank-1 sharding put on a 0-d NaN
    failed); equal to the unsharded state's replicates."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        jax.config.update("jax_enable_x64", True)
        import calipers
        from jax.sharding import NamedSharding, PartitionSpec as P
        mesh = jax.make_mesh((4,), ("data",))
        for metric in ("accuracy", "roc_auc", "log_loss"):
            st = calipers.PairedBootstrapState.init(metric, 20, seed=0, xp=jnp)
            g = np.random.default_rng(0)
            y = g.integers(0, 2, 64)
            a, b = (g.random(64), g.random(64)) if metric != "accuracy" else (y, 1 - y)
            st = st.update(jnp.asarray(y), jnp.asarray(a), jnp.asarray(b),
                           row_ids=jnp.arange(64))
            rep = jax.device_put(st, NamedSharding(mesh, P()))
            for u, v in zip(rep.compute(), st.compute()):
                np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
        print("ok")
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]


@pytest.mark.parametrize("metric", ["roc_auc", "accuracy", "log_loss"])
def test_empty_state_warns_once_and_is_nan(metric):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    st = PairedBootstrapState.init(metric, 8, seed=3)
    padded = st.update(np.ones(4), np.full(4, 0.5), np.full(4, 0.5),
                       row_ids=np.arange(4), mask=np.zeros(4, bool))
    for s in (st, padded):
        with pytest.warns(calipers.UndefinedMetricWarning, match=f"no rows.*{metric}") as rec:
            da, db = s.compute()
        assert len(rec) == 1
        assert np.isnan(da).all() and np.isnan(db).all()
    js = PairedBootstrapState.init(metric, 8, seed=3, xp=jnp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        da, db = jax.jit(lambda s: s.compute())(js)       # under jit: NaN, no warning
    assert np.isnan(np.asarray(da)).all() and np.isnan(np.asarray(db)).all()
    # a state with rows: no warning, even where a replicate is undefined
    y = np.array([1, 0, 1, 0, 1, 1])
    a = np.array([0.9, 0.2, 0.6, 0.4, 0.3, 0.8])
    full = st.update(y, a, a[::-1].copy(), row_ids=np.arange(6))
    with warnings.catch_warnings():
        warnings.simplefilter("error", calipers.UndefinedMetricWarning)
        full.compute()
