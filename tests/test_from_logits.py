"""``from_logits=True`` for log loss, Brier score, ECE, reliability diagrams and their states.

References: SciPy's ``log_expit`` / ``log_softmax`` / ``expit`` / ``softmax`` (an independent
implementation of the same maps), and for extreme logits the softplus written with Python's
``math`` per row (``x + log1p(exp(-x))`` for x > 0) summed with ``math.fsum``.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit, log_expit, log_softmax, softmax

import calipers
from calipers import CalibrationState, ProbabilityLossState
from test_states_rich import MODES, _close, _ctx, _xp, stream

RNG = np.random.default_rng(3)
N = 40
YB = RNG.integers(0, 2, N)
ZB = RNG.normal(0, 4, N)
YM = RNG.integers(0, 4, N)
ZM = RNG.normal(0, 3, (N, 4))


def _ref_binary_log_loss(y, z):
    return -np.mean(np.where(y == 1, log_expit(z), log_expit(-z)))


def _softplus(x):
    x = float(x)
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def _mp_binary_log_loss(y, z):
    """-log sigmoid(z) = softplus(-z) for y = 1, softplus(z) for y = 0, per row in Python."""
    rows = [_softplus(-zi) if yi == 1 else _softplus(zi) for yi, zi in zip(y, z)]
    np.testing.assert_allclose(rows, np.logaddexp(0, np.where(np.asarray(y) == 1, -z, z)),
                               rtol=1e-15)
    return math.fsum(rows) / len(rows)


def test_log_loss_from_logits_matches_scipy_binary_and_multiclass():
    np.testing.assert_allclose(calipers.log_loss(YB, ZB, from_logits=True),
                               _ref_binary_log_loss(YB, ZB), rtol=1e-14)
    ref = -np.mean(log_softmax(ZM, axis=1)[np.arange(N), YM])
    np.testing.assert_allclose(calipers.log_loss(YM, ZM, from_logits=True), ref, rtol=1e-14)
    w = RNG.random(N)
    np.testing.assert_allclose(
        calipers.log_loss(YB, ZB, from_logits=True, sample_weight=w),
        np.average(np.where(YB == 1, -log_expit(ZB), -log_expit(-ZB)), weights=w), rtol=1e-14)
    # moderate logits: the same as log loss of the (unclipped) probabilities
    np.testing.assert_allclose(calipers.log_loss(YB, ZB, from_logits=True),
                               calipers.log_loss(YB, expit(ZB)), rtol=1e-9)


@pytest.mark.parametrize("z", [50.0, -50.0, 500.0, -745.0, 1e4, 30.0, -30.0])
def test_log_loss_from_logits_is_exact_for_extreme_logits(z):
    y = np.array([0, 1])
    zz = np.array([z, z])
    got = calipers.log_loss(y, zz, from_logits=True)
    assert math.isfinite(got)
    np.testing.assert_allclose(got, _mp_binary_log_loss(y, zz), rtol=1e-14)
    # one wrong logit of 50 costs 50 nats (probabilities clip at -ln(eps) = 36.04)
    if z == 50.0:
        assert calipers.log_loss([0], [50.0], from_logits=True) == 50.0
        assert calipers.log_loss([0], [expit(50.0)]) == pytest.approx(36.04, abs=0.01)
    # multiclass: the same logit as a two-column row [0, z]
    two = np.stack([np.zeros(2), zz], axis=1)
    np.testing.assert_allclose(calipers.log_loss(y, two, from_logits=True),
                               _mp_binary_log_loss(y, zz), rtol=1e-14)


def test_log_loss_from_logits_float32_extreme():
    z = np.array([50.0, -50.0, 80.0], dtype=np.float32)
    y = np.array([0, 1, 1])
    got = calipers.log_loss(y, z, from_logits=True)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _mp_binary_log_loss(y, z.astype(np.float64)), rtol=1e-6)


def test_brier_ece_reliability_from_logits_equal_those_of_probabilities():
    pb, pm = expit(ZB), softmax(ZM, axis=1)
    np.testing.assert_allclose(calipers.brier_score_loss(YB, ZB, from_logits=True),
                               np.mean((pb - YB) ** 2), rtol=1e-13)
    onehot = np.eye(4)[YM]
    np.testing.assert_allclose(calipers.brier_score_loss(YM, ZM, from_logits=True),
                               np.mean(np.sum((pm - onehot) ** 2, axis=1)), rtol=1e-13)
    for y, z, p in ((YB, ZB, pb), (YM, ZM, pm)):
        for mode in ((None, "top_label", "classwise") if z.ndim == 2 else (None,)):
            np.testing.assert_allclose(
                calipers.expected_calibration_error(y, z, n_bins=10, mode=mode,
                                                    from_logits=True),
                calipers.expected_calibration_error(y, p, n_bins=10, mode=mode), rtol=1e-12)
        a = calipers.reliability_diagram(y, z, n_bins=10, from_logits=True)
        b = calipers.reliability_diagram(y, p, n_bins=10)
        np.testing.assert_array_equal(a.count, b.count)
        np.testing.assert_allclose(a.confidence, b.confidence, rtol=1e-12)


def test_from_logits_errors_and_jit():
    for fn in (calipers.log_loss, calipers.brier_score_loss,
               calipers.expected_calibration_error):
        with pytest.raises(ValueError, match="y_prob must be finite"):
            fn([0, 1], [np.inf, 0.0], from_logits=True)
        with pytest.raises(ValueError, match="from_logits"):
            fn([0, 1], [0.2, 0.4], from_logits="yes")
    with pytest.raises(ValueError, match="logits"):
        calipers.log_loss([0, 1], [True, False], from_logits=True)
    # logits outside [0, 1] are accepted only with from_logits=True
    with pytest.raises(ValueError):
        calipers.log_loss([0, 1], [2.0, -1.0])
    f = jax.jit(lambda y, z: calipers.log_loss(y, z, from_logits=True))
    np.testing.assert_allclose(f(jnp.asarray(YB), jnp.asarray(ZB)),
                               _ref_binary_log_loss(YB, ZB), rtol=1e-12)
    assert math.isnan(float(f(jnp.asarray(YB[:2]), jnp.asarray([jnp.nan, 0.0]))))


@pytest.mark.parametrize("mode", MODES)
def test_states_from_logits_equal_one_shot(mode):
    with _ctx(mode):
        xp = _xp(mode)
        z = np.round(ZB * 4) / 4                  # include large logits
        z[:4] = [50.0, -50.0, 40.0, -60.0]
        st = stream(mode, lambda: ProbabilityLossState.init(xp=xp, from_logits=True),
                    lambda s, a, b, m: s.update(a, b, mask=m), [YB, z], [9, np.nan], 1)
        out = st.compute()
        _close(out.log_loss, _ref_binary_log_loss(YB, z), mode)
        _close(out.brier, calipers.brier_score_loss(YB, z, from_logits=True), mode)
        assert int(st.weight) == N
        st = stream(mode, lambda: ProbabilityLossState.init(xp=xp, from_logits=True),
                    lambda s, a, b, m: s.update(a, b, mask=m), [YM, ZM], [9, np.nan], 2)
        _close(st.compute().log_loss, -np.mean(log_softmax(ZM, axis=1)[np.arange(N), YM]), mode)
        _close(st.compute().brier, calipers.brier_score_loss(YM, ZM, from_logits=True), mode)
        cal = stream(mode, lambda: CalibrationState.init(10, xp=xp, from_logits=True),
                     lambda s, a, b, m: s.update(a, b, mask=m), [YB, ZB], [9, np.inf], 3)
        _close(cal.compute(), calipers.expected_calibration_error(YB, ZB, n_bins=10,
                                                                  from_logits=True), mode)
        np.testing.assert_array_equal(
            np.asarray(cal.diagram().count),
            calipers.reliability_diagram(YB, ZB, n_bins=10, from_logits=True).count)


def test_logit_states_refuse_to_merge_with_probability_states_and_route_logits():
    with pytest.raises(ValueError, match="cannot merge"):
        ProbabilityLossState.init(from_logits=True).merge(ProbabilityLossState.init())
    with pytest.raises(ValueError, match="cannot merge"):
        CalibrationState.init(from_logits=True).merge(CalibrationState.init())
    st = ProbabilityLossState.init(from_logits=True).update_outputs(labels=YB, logits=ZB)
    np.testing.assert_allclose(st.compute().log_loss, _ref_binary_log_loss(YB, ZB), rtol=1e-14)
    with pytest.raises(ValueError, match="logits"):
        ProbabilityLossState.init(from_logits=True).update_outputs(labels=YB, probs=expit(ZB))
    assert ProbabilityLossState.init(from_logits=True).from_logits
    assert not CalibrationState.init().from_logits
