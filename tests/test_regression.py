"""Regression metrics against scikit-learn, exact fractions and hand references, on every backend."""

from fractions import Fraction

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from conftest import to_np

RNG = np.random.default_rng(20261130)
N, M = 12, 3
YT = np.round(RNG.normal(size=(N, M)), 1)      # rounding makes ties and repeated values
YP = np.round(RNG.normal(size=(N, M)), 1)
YT[YT == 0] = 0.5                               # MAPE needs non-zero actuals
W = RNG.integers(0, 4, N).astype(float)
W[0] = 1.0

FUNCS = ["mean_squared_error", "root_mean_squared_error", "mean_absolute_error",
         "mean_absolute_percentage_error", "r2_score"]


@pytest.mark.parametrize("name", FUNCS)
def test_matches_sklearn_weighted_multioutput(backend, name):
    ours, ref = getattr(calipers, name), getattr(skm, name)
    got = backend.call(ours, YT, YP, sample_weight=W, multioutput="raw_values")
    want = ref(YT, YP, sample_weight=W, multioutput="raw_values")
    np.testing.assert_allclose(to_np(got), want, rtol=backend.rtol() * 10, atol=1e-12)
    # (array weights over outputs: test_matches_sklearn_output_weights, NumPy only: one compile less)


@pytest.mark.parametrize("name", FUNCS)
def test_matches_sklearn_output_weights(name):
    ours, ref = getattr(calipers, name), getattr(skm, name)
    got = ours(YT, YP, sample_weight=W, multioutput=[0.2, 0.3, 0.5])
    want = ref(YT, YP, sample_weight=W, multioutput=[0.2, 0.3, 0.5])
    assert got == pytest.approx(want, rel=1e-12)
    assert ours(YT, YP) == pytest.approx(ref(YT, YP), rel=1e-12)


@pytest.mark.parametrize("name", FUNCS)
def test_matches_sklearn_1d(name):
    ours, ref = getattr(calipers, name), getattr(skm, name)
    for w in (None, W):
        np.testing.assert_allclose(ours(YT[:, 0], YP[:, 0], sample_weight=w),
                                   ref(YT[:, 0], YP[:, 0], sample_weight=w), rtol=1e-12)
    # raw_values on 1-D input: shape (1,), as scikit-learn
    assert ours(YT[:, 0], YP[:, 0], multioutput="raw_values").shape == (1,)


def test_r2_variance_weighted_matches_sklearn(backend):
    got = backend.call(calipers.r2_score, YT, YP, sample_weight=W, multioutput="variance_weighted")
    want = skm.r2_score(YT, YP, sample_weight=W, multioutput="variance_weighted")
    np.testing.assert_allclose(to_np(got), want, rtol=backend.rtol() * 10)


def test_r2_constant_y_true_is_nan_and_warns(backend):
    yt = np.array([[2.0, 1.0], [2.0, 3.0], [2.0, 0.0]])
    yp = np.array([[2.0, 1.5], [2.5, 2.0], [1.0, 0.0]])
    if backend.eager_checks:
        with pytest.warns(calipers.UndefinedMetricWarning, match="constant"):
            got = backend.call(calipers.r2_score, yt, yp, multioutput="raw_values")
    else:
        got = backend.call(calipers.r2_score, yt, yp, multioutput="raw_values")
    got = to_np(got)
    assert np.isnan(got[0])
    np.testing.assert_allclose(got[1], skm.r2_score(yt[:, 1], yp[:, 1]), rtol=backend.rtol())
    # force_finite=True reproduces scikit-learn's replacement value (0.0; 1.0 when perfect)
    f = backend.call(calipers.r2_score, yt, yp, multioutput="raw_values", force_finite=True)
    np.testing.assert_allclose(to_np(f), skm.r2_score(yt, yp, multioutput="raw_values"),
                               rtol=backend.rtol() * 10)
    perfect = calipers.r2_score(yt, yt, multioutput="raw_values", force_finite=True)
    np.testing.assert_array_equal(perfect, skm.r2_score(yt, yt, multioutput="raw_values"))


def test_mape_is_a_proportion_and_zero_actual_is_an_error(backend):
    got = backend.call(calipers.mean_absolute_percentage_error, [2.0, 4.0], [1.0, 5.0])
    np.testing.assert_allclose(to_np(got), (0.5 + 0.25) / 2, rtol=backend.rtol())
    if backend.eager_checks:
        with pytest.raises(ValueError, match="y_true must be non-zero for MAPE.*row 1"):
            backend.call(calipers.mean_absolute_percentage_error, [2.0, 0.0], [1.0, 5.0])
    else:
        got = backend.call(calipers.mean_absolute_percentage_error, [2.0, 0.0], [1.0, 5.0])
        assert np.isnan(to_np(got))


def _mase_reference(yt, yp, ytr, sp, w=None):
    yt, yp, ytr = (np.asarray(a, dtype=float).reshape(len(a), -1) for a in (yt, yp, ytr))
    w = np.ones(len(yt)) if w is None else np.asarray(w, float)
    out = []
    for j in range(yt.shape[1]):
        scale = sum(abs(ytr[t, j] - ytr[t - sp, j]) for t in range(sp, len(ytr))) / (len(ytr) - sp)
        mae = sum(w[i] * abs(yt[i, j] - yp[i, j]) for i in range(len(yt))) / w.sum()
        out.append(mae / scale)
    return np.asarray(out)


@pytest.mark.parametrize("sp", [1, 3])
def test_mase_matches_direct_sums(backend, sp):
    ytr = np.round(RNG.normal(size=(10, M)), 1)
    got = backend.call(calipers.mean_absolute_scaled_error, YT, YP, y_train=ytr, sp=sp,
                       sample_weight=W, multioutput="raw_values")
    np.testing.assert_allclose(to_np(got), _mase_reference(YT, YP, ytr, sp, W),
                               rtol=backend.rtol() * 10)


def test_mase_zero_naive_scale(backend):
    ytr = np.array([1.0, 2.0, 1.0, 2.0, 1.0])   # exactly 2-periodic
    if backend.eager_checks:
        with pytest.raises(ValueError, match="naive scale .* is zero"):
            backend.call(calipers.mean_absolute_scaled_error, [1.0], [2.0], y_train=ytr, sp=2)
    else:
        got = backend.call(calipers.mean_absolute_scaled_error, [1.0], [2.0], y_train=ytr, sp=2)
        assert np.isnan(to_np(got))
    got = backend.call(calipers.mean_absolute_scaled_error, [1.0], [2.0], y_train=ytr, sp=1)
    np.testing.assert_allclose(to_np(got), 1.0, rtol=backend.rtol())


def test_invalid_values_are_nan_under_jit(backend):
    if backend.eager_checks:
        pytest.skip("eager backends raise; see test_errors")
    yt = np.array([1.0, np.nan, 3.0])
    assert np.isnan(to_np(backend.call(calipers.mean_squared_error, yt, [1.0, 2.0, 3.0])))
    got = backend.call(calipers.mean_absolute_error, [1.0, 2.0], [1.0, 2.0],
                       sample_weight=np.array([1.0, -1.0]))
    assert np.isnan(to_np(got))


@pytest.mark.parametrize("call, match", [
    (lambda: calipers.mean_squared_error([1.0, 2.0], [1.0]),
     r"inconsistent numbers of samples: \[2, 1\]: y_pred has 1 elements but y_true has 2"),
    (lambda: calipers.mean_squared_error(np.ones((2, 2, 2)), np.ones((2, 2, 2))), "1-D"),
    (lambda: calipers.mean_squared_error([], []), "empty"),
    (lambda: calipers.mean_squared_error([1.0, np.inf], [1.0, 2.0]), "y_true must be finite"),
    (lambda: calipers.mean_squared_error([1.0, 2.0], [np.nan, 2.0]), "y_pred must be finite"),
    (lambda: calipers.mean_squared_error([True], [False]), "not booleans"),
    (lambda: calipers.mean_squared_error([1.0], [2.0], sample_weight=[-1.0]), "non-negative"),
    (lambda: calipers.mean_squared_error([1.0], [2.0], sample_weight=[0.0]), "positive sum"),
    (lambda: calipers.mean_squared_error([1.0], [2.0], sample_weight=[1.0, 2.0]),
     "sample_weight has 2 elements"),
    (lambda: calipers.mean_squared_error([1.0], [2.0], multioutput="variance_weighted"),
     "multioutput must be one of"),
    (lambda: calipers.mean_squared_error(YT, YP, multioutput=[1.0, 2.0]), r"shape \(3,\)"),
    (lambda: calipers.mean_squared_error(YT, YP, multioutput=[1.0, -2.0, 1.0]), "non-negative"),
    (lambda: calipers.mean_absolute_scaled_error([1.0], [1.0], y_train=[1.0, 2.0], sp=0),
     "sp must be an integer >= 1"),
    (lambda: calipers.mean_absolute_scaled_error([1.0], [1.0], y_train=[1.0, 2.0], sp=2),
     "longer than sp=2"),
    (lambda: calipers.mean_absolute_scaled_error([1.0], [1.0], y_train=[[1.0], [2.0]]),
     "y_train must be 1-D"),
    (lambda: calipers.mean_absolute_scaled_error(YT, YP, y_train=np.ones((5, 2))),
     "y_train has 2 outputs"),
    (lambda: calipers.mean_absolute_scaled_error([1.0], [1.0], y_train=[1.0, np.nan, 2.0]),
     "y_train must be finite"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(-20, 20), st.integers(-20, 20), st.integers(0, 3)),
                min_size=1, max_size=15))
def test_mse_mae_r2_exact_fractions(rows):
    yt = [r[0] for r in rows]
    yp = [r[1] for r in rows]
    w = [r[2] for r in rows]
    if sum(w) == 0:
        w[0] = 1
    W_ = sum(w)
    mse = sum(Fraction(wi * (a - b) ** 2) for a, b, wi in zip(yt, yp, w)) / W_
    mae = sum(Fraction(wi * abs(a - b)) for a, b, wi in zip(yt, yp, w)) / W_
    args = (np.array(yt, float), np.array(yp, float))
    kw = dict(sample_weight=np.array(w, float))
    assert calipers.mean_squared_error(*args, **kw) == pytest.approx(float(mse), rel=1e-12)
    assert calipers.mean_absolute_error(*args, **kw) == pytest.approx(float(mae), rel=1e-12)
    mean = sum(Fraction(wi * a) for a, wi in zip(yt, w)) / W_
    tot = sum(wi * (a - mean) ** 2 for a, wi in zip(yt, w))
    if tot == 0:
        with pytest.warns(calipers.UndefinedMetricWarning):
            assert np.isnan(calipers.r2_score(*args, **kw))
    else:
        r2 = 1 - mse * W_ / tot
        assert calipers.r2_score(*args, **kw) == pytest.approx(float(r2), rel=1e-9, abs=1e-12)


def test_r2_of_one_sample_warns_in_sklearn_words():
    # one sample is the constant-y_true case: NaN, with scikit-learn's warning text
    with pytest.warns(calipers.UndefinedMetricWarning,
                      match=r"R\^2 score is not well-defined with less than two samples"):
        assert np.isnan(calipers.r2_score([0.0], [1.0]))


def test_column_against_1d_is_one_output():
    # scikit-learn reads (n,) against (n, 1) as one output; so does calipers
    y, p = np.array([1.0, 2.0, 4.0]), np.array([1.5, 2.0, 3.0])
    assert calipers.mean_squared_error(y, p.reshape(-1, 1)) == pytest.approx(
        skm.mean_squared_error(y, p.reshape(-1, 1)), rel=1e-15)
    assert calipers.r2_score(y.reshape(-1, 1), p) == pytest.approx(
        skm.r2_score(y.reshape(-1, 1), p), rel=1e-15)
