"""Contracts fixed for a whole kind of input, each with the handed case that showed it.

H39: half-precision NumPy arrays (ml_dtypes' ``bfloat16``, NumPy ``float16``) in every family.
(The registry-wide checks live in tests/conformance; these pin the handed numbers.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import sklearn.metrics as skm
from conftest import load_case

import calipers

BF16 = np.dtype(ml_dtypes.bfloat16)

# --------------------------------------------------------------------------
# H39: NumPy bfloat16 (what np.asarray(jax.device_get(x)) gives) and float16
# --------------------------------------------------------------------------


def _h39_a():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.random(50), dtype=jnp.bfloat16)
    s = np.asarray(jax.device_get(x))
    y = rng.integers(0, 2, 50)
    y[:2] = [0, 1]
    return y, s


# (metric, reference on the float32 upcast: scikit-learn where it has the metric)
H39_METRICS = [
    ("roc_auc_score", skm.roc_auc_score),
    ("average_precision_score", skm.average_precision_score),
    ("brier_score_loss", skm.brier_score_loss),
    ("log_loss", skm.log_loss),
    ("mean_absolute_error", skm.mean_absolute_error),
    ("expected_calibration_error", None),
    ("aurc", None),
]


@pytest.mark.parametrize("name, ref", H39_METRICS, ids=[m for m, _ in H39_METRICS])
def test_h39_numpy_bfloat16_gives_the_float32_value(name, ref):
    y, s = _h39_a()
    assert s.dtype == BF16 and type(s) is np.ndarray
    fn = getattr(calipers, name)
    s32 = s.astype(np.float32)          # exact: every bfloat16 is a float32
    if name == "aurc":                  # confidence, y_true, y_pred
        args, args32 = (s, y, (s > 0.5).astype(int)), (s32, y, (s32 > 0.5).astype(int))
    else:
        args, args32 = (y, s), (y, s32)
    got = fn(*args)
    want = fn(*args32)
    assert np.dtype(got.dtype).itemsize >= 4
    assert float(got) == float(want)
    if ref is not None:
        assert abs(float(got) - ref(y, s32.astype(np.float64))) <= 1e-6


def test_h39_jax_bfloat16_mae_and_brier():
    case = load_case("H39")["expected"]["B"]
    pred = jnp.full(20_000, 0.1, dtype=jnp.bfloat16)
    zero = jnp.zeros(20_000, dtype=jnp.bfloat16)
    assert float(calipers.mean_absolute_error(zero, pred)) == pytest.approx(case["mae"], rel=1e-6)
    assert float(calipers.brier_score_loss(jnp.zeros(20_000, dtype=jnp.int32), pred)) == \
        pytest.approx(case["brier"], rel=1e-6)
    # and the same arrays as NumPy bfloat16
    assert float(calipers.mean_absolute_error(np.asarray(zero), np.asarray(pred))) == \
        pytest.approx(case["mae"], rel=1e-6)
    assert float(calipers.brier_score_loss(np.zeros(20_000, dtype=int), np.asarray(pred))) == \
        pytest.approx(case["brier"], rel=1e-6)


def test_h39_float16_errors_do_not_overflow():
    want = load_case("H39")["expected"]["C"]
    y = np.zeros(1000, dtype=np.float16)
    p = np.full(1000, 10, dtype=np.float16)
    assert float(calipers.mean_squared_error(y, p)) == want      # the sum 10^5 > 65504
    assert float(calipers.mean_squared_error(y.astype(BF16), p.astype(BF16))) == want


@pytest.mark.parametrize("dtype", [BF16, np.dtype(ml_dtypes.float8_e4m3fn)],
                         ids=["bfloat16", "float8_e4m3fn"])
def test_h39_extension_floats_in_each_family(dtype):
    # one function per family that takes float arrays: the input layer reads them all
    y = np.array([0, 1, 1, 0, 1, 0, 1, 0])
    s = np.array([0.25, 0.5, 0.75, 0.125, 0.875, 0.5, 0.625, 0.375])
    t = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    half = s.astype(dtype)
    assert np.array_equal(half.astype(np.float64), s)   # the values are exact in the dtype
    calls = [
        lambda a: calipers.roc_auc_score(y, a),
        lambda a: calipers.log_loss(y, a),
        lambda a: calipers.mean_squared_error(s, a),
        lambda a: calipers.concordance_index_censored(y.astype(bool) | True, t, a).cindex,
        lambda a: calipers.aurc(a, y, (s > 0.5).astype(int)),
        lambda a: calipers.interval_coverage(s, a, a + 1),
        lambda a: calipers.conformal_quantile(a, alpha=0.25),
        lambda a: calipers.ips_estimate(s, np.full(8, 0.5), a),
    ]
    for call in calls:
        assert float(call(half)) == pytest.approx(float(call(s)), rel=1e-6, abs=1e-7)


# --------------------------------------------------------------------------
# one label layer: labels without an order are a ValueError naming the argument
# --------------------------------------------------------------------------

NONE_LABEL_CALLS = {
    "roc_auc_score": lambda y: calipers.roc_auc_score(y, [0.1, 0.4, 0.35, 0.8]),
    "average_precision_score": lambda y: calipers.average_precision_score(
        y, [0.1, 0.4, 0.35, 0.8]),
    "log_loss": lambda y: calipers.log_loss(y, [0.1, 0.4, 0.35, 0.8]),
    "accuracy_score": lambda y: calipers.accuracy_score(y, [0, 1, 1, 0]),
    "aurc": lambda y: calipers.aurc([0.1, 0.4, 0.35, 0.8], y, [0, 1, 1, 0]),
}


@pytest.mark.parametrize("name", sorted(NONE_LABEL_CALLS))
def test_object_labels_holding_none_name_the_argument(name):
    y = np.array([0, 1, None, 1], dtype=object)
    with pytest.raises(ValueError, match=r"y_true .*element 2 is None"):
        NONE_LABEL_CALLS[name](y)


def test_labels_of_two_kinds_name_the_argument_and_element():
    y = np.array([0, 1, "a", 1], dtype=object)
    with pytest.raises(ValueError, match=r"y_true .*one sortable type.*element 2 is 'a'"):
        calipers.roc_auc_score(y, [0.1, 0.4, 0.35, 0.8])


def test_selective_string_labels_are_compared_as_labels():
    c = [0.1, 0.4, 0.35, 0.8, 0.6]
    want = calipers.aurc(c, [0, 1, 0, 0, 1], [0, 1, 1, 0, 0])
    assert calipers.aurc(c, list("abaab"), list("abbaa")) == want
