"""All-zero sample weights: one rule per family, stated in each docstring.

A weighted mean (the probability losses, the regression errors, ECE, conformal
coverage) with weights that are all 0 is undefined input: ``ValueError`` naming
``sample_weight`` eagerly, NaN under ``jit``. Counting metrics whose zero-division
convention is a documented value (accuracy, AUC, AP) give NaN with an
``UndefinedMetricWarning``. No function leaks a NumPy ``RuntimeWarning``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import calipers

Y = np.array([0, 1, 1, 0])
P = np.array([0.2, 0.7, 0.6, 0.4])
W0 = np.zeros(4)

MEANS = {
    "log_loss": lambda w: calipers.log_loss(Y, P, sample_weight=w),
    "log_loss_logits": lambda w: calipers.log_loss(Y, np.log(P / (1 - P)), sample_weight=w,
                                                   from_logits=True),
    "log_loss_multiclass": lambda w: calipers.log_loss(Y, np.stack([1 - P, P], 1),
                                                       sample_weight=w),
    "brier_score_loss": lambda w: calipers.brier_score_loss(Y, P, sample_weight=w),
    "brier_multiclass": lambda w: calipers.brier_score_loss(Y, np.stack([1 - P, P], 1),
                                                            sample_weight=w),
    "mean_squared_error": lambda w: calipers.mean_squared_error(Y, P, sample_weight=w),
    "expected_calibration_error": lambda w: calipers.expected_calibration_error(
        Y, P, sample_weight=w),
}


@pytest.mark.parametrize("name", sorted(MEANS))
def test_weighted_means_refuse_all_zero_weights(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(ValueError, match="sample_weight must have a positive sum"):
            MEANS[name](W0)
        assert np.isfinite(float(MEANS[name](np.array([0.0, 1.0, 0.0, 2.0]))))


@pytest.mark.parametrize("name", ["log_loss", "brier_score_loss"])
def test_all_zero_weights_under_jit_give_nan(name):
    jax = pytest.importorskip("jax")
    out = jax.jit(MEANS[name])(jax.numpy.zeros(4))
    assert np.isnan(float(out))


def test_log_loss_sum_of_zero_weights_is_zero():
    assert calipers.log_loss(Y, P, sample_weight=W0, normalize=False) == 0.0


def test_a_padding_batch_still_adds_nothing_to_the_probability_state():
    st = calipers.ProbabilityLossState.init(weighted=True).update(Y, P, sample_weight=W0)
    st = st.update(Y, P)
    assert float(st.compute().log_loss) == pytest.approx(calipers.log_loss(Y, P), rel=1e-12)
