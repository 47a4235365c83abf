"""Mergeable states: merge == one update on the concatenated data, compute == one-shot
metric, on every backend, and under shard_map with psum on 4 forced host CPU devices."""

import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers import CalibrationState, ConfusionState, NLLState, ProbabilityLossState
from calipers._streaming.states import merge
from conftest import to_np

RNG = np.random.default_rng(11)
N = 30                                      # the shapes of test_calibration: shared compiles
YC = RNG.integers(0, 3, N)
YPC = RNG.integers(0, 3, N)
YB = RNG.integers(0, 2, N)
PD = RNG.integers(0, 17, N) / 16            # dyadic: float sums are exact in any order
LPD = -RNG.integers(0, 64, N) / 16          # dyadic log-likelihoods
PP = RNG.random(N) * 0.98 + 0.01
P3 = RNG.dirichlet([1.0, 1.0, 1.0], size=N)
CUT = 15                                    # equal halves: one batch shape to compile


def _fields(state):
    return [to_np(f) for f in state]


def _assert_states_equal(a, b):
    for x, y in zip(_fields(a), _fields(b)):
        np.testing.assert_array_equal(x, y)


def test_confusion_merge_is_exact_and_matches_sklearn(backend):
    def run(yt, yp):
        a = ConfusionState.init(3, xp=backend.xp).update(yt[:CUT], yp[:CUT])
        b = ConfusionState.init(3, xp=backend.xp).update(yt[CUT:], yp[CUT:])
        whole = ConfusionState.init(3, xp=backend.xp).update(yt, yp)
        return a.merge(b), whole, whole.compute()

    merged, whole, summary = backend.call(run, YC, YPC)
    _assert_states_equal(merged, whole)
    np.testing.assert_array_equal(to_np(summary.confusion_matrix), skm.confusion_matrix(YC, YPC))
    np.testing.assert_allclose(to_np(summary.accuracy), skm.accuracy_score(YC, YPC),
                               rtol=backend.rtol())


def test_calibration_state_merge_exact_and_equals_ece(backend):
    def run(y, p):
        a = CalibrationState.init(10, xp=backend.xp).update(y[:CUT], p[:CUT])
        b = CalibrationState.init(10, xp=backend.xp).update(y[CUT:], p[CUT:])
        whole = CalibrationState.init(10, xp=backend.xp).update(y, p)
        return merge(a, b), whole, whole.compute(), whole.compute("max")

    merged, whole, ece, mce = backend.call(run, YB, PD)
    _assert_states_equal(merged, whole)
    want = calipers.expected_calibration_error(YB, PD, n_bins=10)
    np.testing.assert_allclose(to_np(ece), want, rtol=backend.rtol())
    np.testing.assert_allclose(to_np(mce), calipers.expected_calibration_error(
        YB, PD, n_bins=10, norm="max"), rtol=backend.rtol())


def test_calibration_state_classwise_and_diagram():
    st_ = CalibrationState.init(5, num_classes=3).update(YC, P3, mode="classwise")
    want = calipers.expected_calibration_error(YC, P3, n_bins=5, mode="classwise")
    assert st_.compute() == pytest.approx(want, rel=1e-12)
    d = CalibrationState.init(5).update(YC, P3).diagram()
    ref = calipers.reliability_diagram(YC, P3, n_bins=5)
    np.testing.assert_allclose(d.confidence, ref.confidence, rtol=1e-12)
    np.testing.assert_allclose(d.accuracy, ref.accuracy, rtol=1e-12)
    np.testing.assert_array_equal(d.count, ref.count)


def test_nll_state_merge_exact_and_equals_perplexity(backend):
    def run(lp):
        a = NLLState.init(xp=backend.xp).update(lp[:CUT], num_bytes=20)
        b = NLLState.init(xp=backend.xp).update(lp[CUT:], num_bytes=50)
        whole = NLLState.init(xp=backend.xp).update(lp, num_bytes=70)
        return a.merge(b), whole, whole.compute()

    merged, whole, summary = backend.call(run, LPD)
    _assert_states_equal(merged, whole)
    np.testing.assert_allclose(to_np(summary.perplexity), calipers.perplexity(LPD),
                               rtol=backend.rtol())
    np.testing.assert_allclose(to_np(summary.bits_per_byte), calipers.bits_per_byte(LPD, 70),
                               rtol=backend.rtol())


def test_probability_loss_state_equals_one_shot(backend):
    def run(y, p, y3, p3):
        a = ProbabilityLossState.init(xp=backend.xp).update(y[:CUT], p[:CUT])
        b = ProbabilityLossState.init(xp=backend.xp).update(y[CUT:], p[CUT:])
        c = ProbabilityLossState.init(xp=backend.xp).update(y3, p3)
        return a.merge(b).compute(), c.compute()

    binary, multi = backend.call(run, YB, PP, YC, P3)
    rtol = backend.rtol() * 100
    np.testing.assert_allclose(to_np(binary), [skm.log_loss(YB, PP), skm.brier_score_loss(YB, PP)],
                               rtol=rtol)
    np.testing.assert_allclose(to_np(multi), [skm.log_loss(YC, P3), skm.brier_score_loss(YC, P3)],
                               rtol=rtol)


def test_weighted_states():
    w = RNG.integers(0, 3, N).astype(float)
    c = ConfusionState.init(3, weighted=True).update(YC, YPC, sample_weight=w)
    np.testing.assert_allclose(c.counts, skm.confusion_matrix(YC, YPC, sample_weight=w))
    cal = CalibrationState.init(10, weighted=True).update(YB, PD, sample_weight=w)
    assert cal.compute() == pytest.approx(
        calipers.expected_calibration_error(YB, PD, n_bins=10, sample_weight=w), rel=1e-12)
    pl = ProbabilityLossState.init(weighted=True).update(YB, PP, sample_weight=w).compute()
    assert pl.log_loss == pytest.approx(skm.log_loss(YB, PP, sample_weight=w), rel=1e-12)


@pytest.mark.parametrize("bad", [-1.0, np.inf, np.nan])
def test_bad_weight_under_jit_makes_compute_nan(bad):
    import jax
    import jax.numpy as jnp

    state = jax.jit(lambda y, yp, w: ConfusionState.init(3, weighted=True, xp=jnp).update(
        y, yp, sample_weight=w))(jnp.asarray([0, 1, 2]), jnp.asarray([0, 1, 2]),
                                 jnp.asarray([1.0, bad, 1.0]))
    assert int(state.invalid) == 1
    assert np.isnan(float(state.compute().accuracy))


def test_invalid_batch_under_jit_makes_compute_nan():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def run(y, yp):
        return ConfusionState.init(3, xp=jnp).update(y, yp)

    state = run(jnp.asarray([0, 1, 7]), jnp.asarray([0, 1, 2]))
    assert int(state.invalid) == 1
    assert np.isnan(float(state.compute().accuracy))
    # the valid rows were counted, the out-of-range one was not
    assert int(state.counts.sum()) == 2


@pytest.mark.parametrize("compute, value, match", [
    (lambda: ConfusionState.init(2).compute(), lambda r: r.accuracy,
     "ConfusionState holds no rows.*accuracy"),
    (lambda: NLLState.init().compute(), lambda r: r.perplexity, "NLLState holds no tokens"),
    (lambda: ProbabilityLossState.init().compute(), lambda r: r.log_loss,
     "ProbabilityLossState holds no rows.*log loss and Brier"),
    (lambda: CalibrationState.init(4).compute(), lambda r: r,
     "CalibrationState holds no rows.*calibration error"),
    (lambda: CalibrationState.init(4, weighted=True).update([1], [0.5], sample_weight=[0.0])
     .compute(), lambda r: r, "CalibrationState holds no rows"),
])
def test_empty_states_compute_nan_with_one_warning(compute, value, match):
    with pytest.warns(calipers.UndefinedMetricWarning, match=match) as rec:
        out = compute()
    assert len(rec) == 1 and rec[0].filename == __file__
    assert np.isnan(value(out))


def test_nll_state_without_bytes_is_nan_bits_per_byte_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", calipers.UndefinedMetricWarning)
        out = NLLState.init().update([-0.5, -1.5]).compute()
    assert np.isnan(out.bits_per_byte) and out.nll_per_token == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda: ConfusionState.init(1), "num_classes must be an integer >= 2"),
    (lambda: ConfusionState.init(2).update([0, 1], [0, 1], sample_weight=[1.0, 1.0]),
     "weighted=True"),
    (lambda: ConfusionState.init(2).update([0, 2], [0, 1]), r"class indices 0 \.\. 1"),
    (lambda: ConfusionState.init(2).update([0, 1], [0]), "y_pred has 1 elements"),
    (lambda: merge(ConfusionState.init(2), ConfusionState.init(3)), "shapes differ"),
    (lambda: merge(ConfusionState.init(2), NLLState.init()), "cannot merge"),
    (lambda: CalibrationState.init(0), "n_bins"),
    (lambda: CalibrationState.init(5).update(YC, P3, mode="classwise"), "channel"),
    (lambda: CalibrationState.init(5).update([1], [1.5]), "probabilities in"),
    (lambda: CalibrationState.init(5).compute(norm="l7"), "norm"),
    (lambda: NLLState.init().update([0.5]), "<= 0"),
    (lambda: NLLState.init().update([-0.5], num_bytes=-1), "num_bytes must be >= 0"),
    (lambda: ProbabilityLossState.init().update([0, 1], [0.2, 1.2]), "probabilities in"),
])
def test_state_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 16)),
                min_size=0, max_size=20), st.integers(0, 20))
def test_merge_equals_concatenation_property(rows, cut):
    yt = np.array([r[0] for r in rows], dtype=np.int64)
    yp = np.array([r[1] for r in rows], dtype=np.int64)
    p = np.array([r[2] / 16 for r in rows])
    yb = yt % 2
    cut = min(cut, len(rows))
    parts = [(slice(0, cut)), (slice(cut, None))]
    c = [ConfusionState.init(4).update(yt[s], yp[s]) for s in parts]
    _assert_states_equal(c[0].merge(c[1]), ConfusionState.init(4).update(yt, yp))
    cal = [CalibrationState.init(6).update(yb[s], p[s]) for s in parts]
    _assert_states_equal(cal[0].merge(cal[1]), CalibrationState.init(6).update(yb, p))


SHARDED = textwrap.dedent(r"""
    import os, sys
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    os.environ["JAX_PLATFORMS"] = "cpu"
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import PartitionSpec as P
    jax.config.update("jax_enable_x64", True)
    import calipers
    from calipers import CalibrationState, ConfusionState, NLLState, ProbabilityLossState

    assert jax.device_count() == 4, jax.devices()
    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:
        from jax.experimental.shard_map import shard_map
    mesh = jax.make_mesh((4,), ("d",))
    rng = np.random.default_rng(5)
    n = 64
    y3, yp3 = rng.integers(0, 3, n), rng.integers(0, 3, n)
    yb = rng.integers(0, 2, n)
    p = rng.integers(0, 17, n) / 16
    lp = -rng.integers(0, 64, n) / 16
    pp = rng.random(n) * 0.98 + 0.01

    def local(y3, yp3, yb, p, lp, pp):
        states = (ConfusionState.init(3, xp=jnp).update(y3, yp3),
                  CalibrationState.init(10, xp=jnp).update(yb, p),
                  NLLState.init(xp=jnp).update(lp, num_bytes=3 * lp.shape[0]),
                  ProbabilityLossState.init(xp=jnp).update(yb, pp))
        return jax.lax.psum(states, "d")

    f = jax.jit(shard_map(local, mesh=mesh, in_specs=(P("d"),) * 6, out_specs=P()))
    sharding = jax.sharding.NamedSharding(mesh, P("d"))   # each device holds n/4 rows
    args = [jax.device_put(jnp.asarray(a), sharding) for a in (y3, yp3, yb, p, lp, pp)]
    assert len(args[0].addressable_shards) == 4
    conf, cal, nll, pl = f(*args)

    one = ConfusionState.init(3).update(y3, yp3)
    assert np.array_equal(np.asarray(conf.counts), one.counts), (conf.counts, one.counts)
    import sklearn.metrics as skm
    assert np.array_equal(np.asarray(conf.counts), skm.confusion_matrix(y3, yp3))
    # dyadic inputs: the sharded sums are exactly the one-shot values
    assert float(cal.compute()) == calipers.expected_calibration_error(yb, p, n_bins=10)
    assert float(nll.compute().perplexity) == calipers.perplexity(lp)
    assert float(nll.compute().bits_per_byte) == calipers.bits_per_byte(lp, 3 * n)
    out = pl.compute()
    np.testing.assert_allclose(float(out.log_loss), calipers.log_loss(yb, pp), rtol=1e-12)
    np.testing.assert_allclose(float(out.brier), calipers.brier_score_loss(yb, pp), rtol=1e-12)
    print("SHARDED-OK")
""")


def test_states_under_shard_map_psum_on_4_cpu_devices(tmp_path):
    # A subprocess: the device count must be forced before jax is imported, and this
    # process already initialised jax with one device.
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pathlib.Path(__file__).resolve().parents[1] / "src") + os.pathsep + \
        env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "SHARDED-OK" in res.stdout
