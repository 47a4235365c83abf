"""The input layer (`_backend.as_arrays`, `_validation`) and the compile policy (`_compile`).

Handed cases named by id carry their inputs here (H19 namespaces, H20 float16,
H21 top-k labels, H22 string labels, H24 confusion_matrix labels).
"""

from __future__ import annotations

import re
import warnings
from fractions import Fraction

import array_api_strict
import numpy as np
import pytest
import sklearn.metrics as skm
from conftest import close

import calipers
from calipers._core import xp as B
from calipers._core import compile as _compile
from calipers._core import validation as V

# --------------------------------------------------------------------------
# H19: NumPy arrays / lists next to JAX arrays are promoted; two foreign namespaces refused
# --------------------------------------------------------------------------

Y19 = np.array([0, 1, 1, 0, 1, 0, 0, 1])
S19 = [0.1, 0.4, 0.35, 0.8, 0.7, 0.2, 0.5, 0.9]


def _auc_ref(y, s):
    pos = [b for a, b in zip(y, s) if a == 1]
    neg = [b for a, b in zip(y, s) if a == 0]
    return sum(Fraction(1) if p > q else Fraction(1, 2) if p == q else 0
               for p in pos for q in neg) / (len(pos) * len(neg))


@pytest.mark.parametrize("metric", ["roc_auc_score", "average_precision_score", "log_loss"])
@pytest.mark.parametrize("jit", [False, True])
def test_h19_numpy_labels_with_jax_scores(metric, jit):
    import jax
    import jax.numpy as jnp

    fn = getattr(calipers, metric)
    want = fn(Y19, np.asarray(S19))
    call = (lambda s: fn(Y19, s))
    got = (jax.jit(call) if jit else call)(jnp.asarray(S19))
    assert isinstance(got, jax.Array)
    close(got, want)
    if metric == "roc_auc_score":
        assert float(got) == pytest.approx(float(_auc_ref(Y19, S19)), abs=1e-12)  # 11/16
        close(fn(list(Y19), jnp.asarray(S19)), want)  # a Python list too
        close(fn(Y19, jnp.asarray(S19), sample_weight=np.ones(8)), want)  # and NumPy weights


def test_h19_ndcg_and_bootstrap_accept_numpy_next_to_jax():
    import jax.numpy as jnp

    q = np.array([0, 0, 0, 1, 1, 1, 1, 0])
    want = calipers.retrieval.ndcg(q, np.asarray(S19), Y19)
    got = calipers.retrieval.ndcg(jnp.asarray(q), jnp.asarray(S19), Y19)
    close(got.mean, want.mean)


def test_as_arrays_namespaces():
    import jax.numpy as jnp

    xp, (a, b, c) = B.as_arrays(y_true=[0, 1], y_score=jnp.asarray([0.2, 0.4]),
                                sample_weight=np.ones(2))
    assert B.is_jax(xp) and all(B.is_jax(B.array_api_compat.array_namespace(x))
                                for x in (a, b, c))
    xp, (a, b) = B.as_arrays([0, 1], np.asarray([0.5, 0.5]))
    assert B.is_numpy(xp) and isinstance(a, np.ndarray)
    with pytest.raises(ValueError, match=r"y_true \(jax.*y_prob \(array_api_strict"):
        calipers.log_loss(jnp.asarray([0, 1]), array_api_strict.asarray([0.2, 0.4]))
    with pytest.raises(ValueError, match=r"different array libraries"):  # unnamed callers too
        calipers.roc_auc_score(jnp.asarray([0, 1]), array_api_strict.asarray([0.2, 0.4]))
    with pytest.raises(ValueError, match="could not convert y_score"):
        B.as_arrays(y_true=[0, 1], y_score=[[0.1], [0.2, 0.3]])


# --------------------------------------------------------------------------
# H20: half-precision inputs give at least float32 results
# --------------------------------------------------------------------------

def _h20():
    rle = [(0.75, 1, 2100), (0.5, 0, 350), (0.25, 1, 300), (0.0, 0, 250)]
    s = np.concatenate([np.full(c, v) for v, _, c in rle]).astype(np.float16)
    y = np.concatenate([np.full(c, lab) for _, lab, c in rle])
    return y, s


def test_h20_float16_auc_is_exact_to_float32(backend):
    if backend.name == "array_api_strict":
        pytest.skip("the test builds float16 directly; array-api-strict has no float16")
    y, s = _h20()
    xp = backend.xp
    sx = s if backend.name == "numpy" else xp.asarray(s)
    got = backend.call(calipers.roc_auc_score, y, sx)
    assert np.dtype(str(got.dtype)).itemsize >= 4
    assert float(got) == pytest.approx(89 / 96, abs=1e-6)


def test_half_precision_in_every_family():
    import jax.numpy as jnp

    y = np.array([0, 1, 1, 0, 1])
    p = np.array([0.1, 0.8, 0.6, 0.3, 0.9])
    for x in (p.astype(np.float16), jnp.asarray(p, dtype=jnp.bfloat16)):
        for fn in (calipers.log_loss, calipers.brier_score_loss,
                   calipers.expected_calibration_error):
            out = fn(y, x)
            assert np.dtype(str(out.dtype)).itemsize >= 4, (fn.__name__, out.dtype)
        out = calipers.mean_squared_error(p, x)
        assert np.dtype(str(out.dtype)).itemsize >= 4
    assert B.out_float(np, np.zeros(1, np.float16)) == np.float32


# --------------------------------------------------------------------------
# integer weights accumulate in integers; overflow is an error naming the argument
# --------------------------------------------------------------------------

def test_integer_weights_beyond_2_53_are_exact():
    w = np.array([2**53 + 1, 1, 1])
    cm = calipers.confusion_matrix([0, 1, 1], [0, 1, 1], sample_weight=w)
    assert cm.dtype == np.int64 and int(cm[0, 0]) == 2**53 + 1
    out = B.segment_sum(np.array([2**62, 3, 2**53 + 1], dtype=np.int64), np.array([0, 0, 1]), 3, np)
    assert out.tolist() == [2**62 + 3, 2**53 + 1, 0]


def test_integer_weight_overflow_raises_naming_the_argument():
    w = np.array([2**62, 2**62, 1])
    with pytest.raises(ValueError, match="sample_weight sums to .* more than int64"):
        calipers.confusion_matrix([0, 1, 1], [0, 1, 1], sample_weight=w)
    with pytest.raises(ValueError, match="sample_weight"):
        calipers.log_loss([0, 1, 1], [0.2, 0.7, 0.9], sample_weight=w)


# --------------------------------------------------------------------------
# warnings point at the caller's line
# --------------------------------------------------------------------------

def _warning_sites(call):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        call()
    return [(r.filename, r.category) for r in rec]


@pytest.mark.parametrize("jax_input", [False, True])
def test_warnings_point_at_the_caller(jax_input):
    import jax.numpy as jnp

    cv = (lambda a: jnp.asarray(a)) if jax_input else np.asarray
    calls = [
        lambda: calipers.r2_score(cv([1.0, 1.0]), cv([1.0, 2.0])),
        lambda: calipers.fit_temperature(cv([[5.0, -5.0], [-5.0, 5.0]]), cv([0, 1]),
                                         bounds=(0.5, 2.0)),
        lambda: calipers.perplexity(cv([-1.0, -2.0]), segment_ids=cv([0, 0]), num_segments=2),
        lambda: calipers.confusion_matrix(cv([0, 0]), cv([0, 0]), labels=[0, 1],
                                          normalize="true"),
    ]
    for call in calls:
        sites = _warning_sites(call)
        assert sites, call
        assert all(f == __file__ for f, _ in sites), sites


# --------------------------------------------------------------------------
# the compile policy
# --------------------------------------------------------------------------

def test_bucketing_compiles_once_per_power_of_two_and_keeps_values():
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    _compile.clear_cache()
    before = _compile.cache_info()["misses"]
    for n in range(17, 33):  # one bucket: 32
        y = rng.integers(0, 2, n)
        p = rng.random(n)
        w = rng.integers(0, 4, n)
        got = calipers.log_loss(jnp.asarray(y), jnp.asarray(p), sample_weight=jnp.asarray(w))
        close(got, calipers.log_loss(y, p, sample_weight=w))
        got = calipers.r2_score(jnp.asarray(p), jnp.asarray(p[::-1].copy()))
        close(got, calipers.r2_score(p, p[::-1].copy()))
    assert _compile.cache_info()["misses"] - before == 2  # one per function, not per length
    assert _compile.bucket_length(17) == 32 and _compile.bucket_length(3) == 8


def test_cache_is_bounded():
    import jax.numpy as jnp

    _compile.set_cache_size(2)
    try:
        for n in (8, 16, 32, 64):
            calipers.brier_score_loss(jnp.zeros(n, dtype=jnp.int32), jnp.full(n, 0.5))
        info = _compile.cache_info()
        assert info["size"] <= 2 and info["evictions"] >= 2
    finally:
        _compile.set_cache_size(128)


def test_compiled_call_raises_the_eager_message_without_rerunning():
    import jax.numpy as jnp

    y = np.array([0, 1, 1, 0])
    p = np.array([0.2, 1.7, 0.5, 0.1])
    with pytest.raises(ValueError) as eager:
        calipers.log_loss(y, p)
    eager_runs = _compile.cache_info()["eager"]
    with pytest.raises(ValueError) as compiled:
        calipers.log_loss(jnp.asarray(y), jnp.asarray(p))
    assert str(compiled.value) == str(eager.value) == \
        "y_prob must be probabilities in [0, 1]; element 1 is 1.7"
    assert _compile.cache_info()["eager"] == eager_runs


def test_fail_if_and_warn_if_under_jit_are_flags():
    import jax
    import jax.numpy as jnp

    def f(x):
        bad = V.fail_if(x < 0, "x", "must be >= 0", jnp, values=x)
        V.warn_if(jnp.any(x == 0), "zero", jnp)
        return bad

    assert bool(jax.jit(f)(jnp.asarray([1.0, -1.0])))
    assert not bool(jax.jit(f)(jnp.asarray([1.0, 0.0])))
    with pytest.raises(ValueError, match="x must be >= 0; element 1 is -1.0"):
        f(np.asarray([1.0, -1.0]))


# --------------------------------------------------------------------------
# static options: one rule each
# --------------------------------------------------------------------------

@pytest.mark.parametrize("level", [0.95, np.float32(0.95), np.float64(0.9), 0.5])
def test_confidence_level_accepts_any_real_in_the_open_interval(level):
    assert V.confidence_level(level) == pytest.approx(float(level))
    r = calipers.proportion_confint(7, 10, confidence_level=level)
    assert r.low < 0.7 < r.high
    calipers.accuracy_with_error([1, 0, 1], confidence_level=level)


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.1, True, "0.9", float("nan"), None])
def test_confidence_level_refuses_the_rest(level):
    with pytest.raises(ValueError, match="confidence_level must be a real number in"):
        V.confidence_level(level)
    with pytest.raises(ValueError, match="confidence_level"):
        calipers.proportion_confint(7, 10, confidence_level=level)


def test_static_option_helpers():
    assert V.positive_int(np.int64(3), "k") == 3
    for bad in (0, True, 2.0, "3"):
        with pytest.raises(ValueError, match="k must be an integer >= 1"):
            V.positive_int(bad, "k")
    assert V.zero_division("warn") == (0.0, True)
    with pytest.raises(ValueError, match="zero_division"):
        V.zero_division(0.5)
    with pytest.raises(ValueError, match="average must be one of"):
        V.choice("mean", "average", ("macro", "micro"))


# --------------------------------------------------------------------------
# labels: H21, H22, H24
# --------------------------------------------------------------------------

H21_SCORE = [[0.6, 0.3, 0.1], [0.1, 0.7, 0.2], [0.7, 0.2, 0.1], [0.2, 0.7, 0.1]]


def test_h21_top_k_classes_come_from_y_true():
    with pytest.raises(ValueError, match="y_true has 2 distinct labels"):
        calipers.top_k_accuracy_score([1, 2, 1, 2], H21_SCORE, k=1)
    assert calipers.top_k_accuracy_score([1, 2, 1, 2], H21_SCORE, k=1, labels=[1, 2, 3]) == 1.0
    # classes inferred from y_true when they match the columns (scikit-learn's rule)
    from sklearn.metrics import top_k_accuracy_score as sk

    y = [3, 1, 2, 2]
    assert calipers.top_k_accuracy_score(y, H21_SCORE, k=2) == pytest.approx(
        sk(y, H21_SCORE, k=2))


def test_h22_string_labels():
    from sklearn.metrics import confusion_matrix, f1_score, log_loss

    yt, yp = ["yes", "no", "yes", "yes"], ["yes", "yes", "no", "yes"]
    got = calipers.f1_score(yt, yp, pos_label="yes")
    assert got == pytest.approx(2 / 3, abs=1e-12) == f1_score(yt, yp, pos_label="yes")
    np.testing.assert_array_equal(calipers.confusion_matrix(yt, yp), confusion_matrix(yt, yp))
    assert calipers.accuracy_score(yt, yp) == 0.5
    with pytest.raises(ValueError, match="pos_label=1 is not a valid label"):
        calipers.f1_score(yt, yp)
    y, p = ["no", "yes", "yes"], [0.2, 0.7, 0.9]
    assert calipers.log_loss(y, p) == pytest.approx(0.22839300363692283, abs=1e-9)
    assert calipers.log_loss(y, p) == pytest.approx(log_loss(y, p), abs=1e-12)
    P = [[0.8, 0.2], [0.3, 0.7], [0.1, 0.9]]
    assert calipers.log_loss(y, P) == pytest.approx(log_loss(y, P), abs=1e-12)
    y3 = np.array(["b", "a", "c", "a"])
    P3 = [[0.2, 0.7, 0.1], [0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.5, 0.4, 0.1]]
    assert calipers.log_loss(y3, P3) == pytest.approx(log_loss(y3, P3), abs=1e-12)
    assert calipers.brier_score_loss(y, p, pos_label="yes") == pytest.approx(
        ((0.2 - 0) ** 2 + (0.7 - 1) ** 2 + (0.9 - 1) ** 2) / 3, abs=1e-12)
    mac = calipers.f1_score(["a", "b", "c", "a"], ["a", "c", "c", "a"], average="macro")
    assert mac == pytest.approx(f1_score(["a", "b", "c", "a"], ["a", "c", "c", "a"],
                                         average="macro"), abs=1e-12)


def test_encode_labels_is_scikit_learns_encoding():
    classes, (a, b) = V.encode_labels(["b", "a", "c"], ["c", "c", "a"], infer_from=2)
    assert classes.tolist() == ["a", "b", "c"] and a.tolist() == [1, 0, 2] and b.tolist() == [2, 2, 0]
    with pytest.raises(ValueError, match="y_pred element 0 is 'z'"):
        V.encode_labels(["a", "b"], ["z", "a"], names=("y_true", "y_pred"))


def test_h24_confusion_matrix_labels_absent_from_y_true():
    # scikit-learn's words (its tests match them), then the labels given
    with pytest.raises(ValueError, match=r"At least one label specified must be in y_true "
                                         r"\(labels=\[3, 4\]\)"):
        calipers.confusion_matrix([0, 1, 2, 0, 1, 2], [0, 2, 1, 0, 0, 1], labels=[3, 4])
    # one of them present is enough (scikit-learn)
    cm = calipers.confusion_matrix([0, 1, 2, 0, 1, 2], [0, 2, 1, 0, 0, 1], labels=[2, 4])
    assert cm.tolist() == [[0, 0], [0, 0]]


def test_h24_under_jit_returns_the_zero_matrix():
    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda a, b: calipers.confusion_matrix(a, b, labels=[3, 4]))
    cm = f(jnp.asarray([0, 1, 2]), jnp.asarray([0, 2, 1]))
    assert np.asarray(cm).tolist() == [[0, 0], [0, 0]]


# --------------------------------------------------------------------------
# probabilities: one validator, one tolerance (also the command line's)
# --------------------------------------------------------------------------

def test_probability_rule_is_shared_with_the_cli(tmp_path):
    from calipers.cli._errors import InputError
    from calipers.cli._io import check_probability_rows

    tol = V.prob_sum_tolerance(np.float64)
    P = np.array([[0.5, 0.5 + tol / 2], [0.3, 0.7]])
    check_probability_rows("f.csv", P, ["p0", "p1"])
    calipers.log_loss([0, 1], P)  # both accept
    P[0, 1] = 0.5 + 2 * tol
    with pytest.raises(InputError, match="row 1: the class probabilities sum to"):
        check_probability_rows("f.csv", P, ["p0", "p1"])
    with pytest.raises(ValueError, match="each row of y_prob must sum to 1"):
        calipers.log_loss([0, 1], P)


# --------------------------------------------------------------------------
# shapes scikit-learn accepts: (n, 1) columns, one-hot y_true for 2-D y_prob
# --------------------------------------------------------------------------

COL_Y = np.array([0, 1, 1, 0, 1, 0, 1, 1, 0, 1])
COL_P = np.array([0.2, 0.7, 0.4, 0.4, 0.9, 0.1, 0.6, 0.3, 0.5, 0.6])  # ties at 0.4, 0.6
COL_D = (COL_P >= 0.5).astype(np.int64)


MC3_Y = np.array([0, 1, 2, 2, 1, 0, 2, 1, 0, 2])
MC3_S = np.random.default_rng(3).dirichlet(np.ones(3), 10)


def _col(a):
    return np.asarray(a).reshape(-1, 1)


# (calipers call on column input, scikit-learn's value on the same column input)
COLUMN_CASES = {
    "accuracy_score": (lambda b: b.call(calipers.accuracy_score, _col(COL_Y), COL_D),
                       lambda: skm.accuracy_score(_col(COL_Y), COL_D)),
    "f1_score": (lambda b: b.call(calipers.f1_score, COL_Y, _col(COL_D)),
                 lambda: skm.f1_score(COL_Y, _col(COL_D))),
    "matthews_corrcoef": (lambda b: b.call(calipers.matthews_corrcoef, _col(COL_Y), _col(COL_D),
                                           num_classes=2),
                          lambda: skm.matthews_corrcoef(_col(COL_Y), _col(COL_D))),
    "roc_auc_score": (lambda b: b.call(calipers.roc_auc_score, _col(COL_Y), COL_P),
                      lambda: skm.roc_auc_score(_col(COL_Y), COL_P)),
    "average_precision_score": (
        lambda b: b.call(calipers.average_precision_score, _col(COL_Y), COL_P),
        lambda: skm.average_precision_score(_col(COL_Y), COL_P)),
    "log_loss": (lambda b: b.call(calipers.log_loss, _col(COL_Y), _col(COL_P)),
                 lambda: skm.log_loss(_col(COL_Y), _col(COL_P))),
    "brier_score_loss": (lambda b: b.call(calipers.brier_score_loss, COL_Y, _col(COL_P)),
                         lambda: skm.brier_score_loss(COL_Y, _col(COL_P))),
    "mean_squared_error": (lambda b: b.call(calipers.mean_squared_error, COL_P, _col(COL_D)),
                           lambda: skm.mean_squared_error(COL_P, _col(COL_D))),
    "top_k_accuracy_score": (
        lambda b: b.call(calipers.top_k_accuracy_score, _col(MC3_Y), MC3_S, k=2, labels=[0, 1, 2]),
        lambda: skm.top_k_accuracy_score(_col(MC3_Y), MC3_S, k=2, labels=[0, 1, 2])),
    "multiclass_roc_auc_score": (
        lambda b: b.call(calipers.multiclass_roc_auc_score, _col(MC3_Y), MC3_S, labels=[0, 1, 2]),
        lambda: skm.roc_auc_score(_col(MC3_Y), MC3_S, multi_class="ovr", labels=[0, 1, 2])),
    "roc_curve": (lambda b: b.call(calipers.roc_curve, _col(COL_Y), _col(COL_P),
                                   drop_intermediate=False),
                  lambda: skm.roc_curve(_col(COL_Y), _col(COL_P), drop_intermediate=False)),
}


@pytest.mark.parametrize("name", list(COLUMN_CASES))
def test_column_vectors_are_read_as_1d(backend, name):
    """An (n, 1) label / score column is a 1-D target (scikit-learn's column_or_1d), never a
    one-label indicator matrix, on every backend (the shape is static, so also under jit)."""
    ours, theirs = COLUMN_CASES[name]
    got, want = ours(backend), theirs()
    if name == "roc_curve":
        if not backend.compact_curves:  # static length n + 1: compare the distinct points
            got = tuple(np.asarray(g)[np.r_[True, np.diff(np.asarray(got[2])) != 0]]
                        for g in got)
        for g, w in zip(got, want):
            close(g, w, backend)
        return
    close(got, want, backend)


def test_one_hot_y_true_with_2d_y_prob(backend):
    """scikit-learn accepts a one-hot indicator y_true beside (n, K) probabilities."""
    P = np.column_stack([1 - COL_P, COL_P])
    Y = np.column_stack([1 - COL_Y, COL_Y])
    for fn, sk in ((calipers.brier_score_loss, skm.brier_score_loss),
                   (calipers.log_loss, skm.log_loss)):
        close(backend.call(fn, Y, P), sk(Y, P), backend)
        close(backend.call(fn, Y, P), fn(COL_Y, COL_P), backend)
    multi_hot = Y.copy()
    multi_hot[3] = [1, 1]   # a multilabel row has no single class
    if backend.eager_checks:
        with pytest.raises(ValueError, match=r"y_true as a 2-D indicator must be one-hot.*row 3"):
            backend.call(calipers.log_loss, multi_hot, P)
    else:
        assert np.isnan(float(backend.call(calipers.log_loss, multi_hot, P)))


def test_column_of_two_dimensional_weights_is_refused():
    # scikit-learn refuses 2-D sample_weight too; a column of weights is not a 1-D target
    with pytest.raises(ValueError, match=r"Sample weights must be 1D array or scalar.*"
                                         r"sample_weight must be 1-D"):
        calipers.f1_score(COL_Y, COL_D, sample_weight=_col(np.ones(10)))


# --------------------------------------------------------------------------
# error texts: scikit-learn's words (its tests match them) and calipers' argument name
# --------------------------------------------------------------------------

ML_T = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0]])
ML_P = np.array([[1, 0, 0], [0, 1, 1], [0, 0, 1]])
MC_T = np.array([0, 1, 2, 0, 1, 2])
MC_S = np.array([0.5, 0.4, 0.8, 0.9, 0.8, 0.7])


@pytest.mark.parametrize("call, sklearn_words, ours", [
    (lambda: calipers.multilabel_confusion_matrix(ML_T, ML_P, sample_weight=[1, 2]),
     r"inconsistent numbers of samples: \[3, 2\]", "sample_weight has 2 elements"),
    (lambda: calipers.log_loss([2, 2], [[0.2, 0.8], [0.6, 0.4], [0.7, 0.3]]),
     r"inconsistent numbers of samples: \[3, 2\]", "y_true has 2 elements"),
    (lambda: calipers.multilabel_confusion_matrix(ML_T, ML_P, sample_weight=np.ones((3, 3))),
     "Sample weights must be 1D array or scalar", "sample_weight must be 1-D"),
    (lambda: calipers.multilabel_confusion_matrix(ML_T, ML_P, labels=[4]),
     r"All labels must be in \[0, n labels\) for multilabel targets\. Got 4 > 2",
     "labels are column indices"),
    (lambda: calipers.multilabel_confusion_matrix(ML_T, ML_P, labels=[-1]),
     r"All labels must be in \[0, n labels\).*Got -1 < 0", "labels are column indices"),
    (lambda: calipers.multilabel_confusion_matrix([[0, 1, 2], [2, 1, 0]], [[1, 2, 0], [1, 0, 2]]),
     "multiclass-multioutput is not supported", "y_true must be a 0/1 indicator matrix"),
    (lambda: calipers.average_precision_score(np.array([[2, 2, 1], [1, 2, 0]]),
                                              np.array([[.7, .2, .1], [.4, .3, .3]]), pos_label=2),
     "multiclass-multioutput format is not supported", "y_true must be a 0/1 indicator"),
    (lambda: calipers.average_precision_score(MC_T, MC_S),
     re.escape("`y_score` needs to be of shape `(n_samples, n_classes)`"), "y_true has 3 classes"),
    (lambda: calipers.roc_auc_score(MC_T, MC_S, multi_class="ovr"),
     re.escape("`y_score` needs to be of shape `(n_samples, n_classes)`"), "y_true has 3 classes"),
    (lambda: calipers.top_k_accuracy_score(MC_T, MC_S),
     re.escape("`y_score` needs to be of shape `(n_samples, n_classes)`"), "y_true has 3 classes"),
    (lambda: calipers.brier_score_loss([0, 1, 2, 0], [0.8, 0.6, 0.4, 0.2]),
     re.escape("The type of the target inferred from y_true is multiclass but should be binary "
               "according to the shape of y_prob."), "y_true must contain only 0 and 1"),
    (lambda: calipers.brier_score_loss([0, 1, 2], [[1, 0], [0, 1], [0, 1]]),
     re.escape("y_true and y_prob contain different number of classes: 3 vs 2. Please provide "
               "the true labels explicitly through the labels argument. Classes found in "
               "y_true: [0 1 2]"), "y_true holds the column indices 0 .. 1"),
    (lambda: calipers.log_loss([2, 2], [[0.2, 0.8], [0.6, 0.4]]),
     re.escape("y_true contains only one label (2). Please provide the list of all expected "
               "class labels explicitly through the labels argument."), "y_true holds"),
    (lambda: calipers.brier_score_loss(["eggs", "spam", "ham"], [[1, 0, 0], [0, 1, 0], [0, 1, 0]],
                                       labels=["eggs", "spam", "ham", "yams"]),
     re.escape("The number of classes in labels is different from that in y_prob. Classes found "
               "in labels: ['eggs' 'ham' 'spam' 'yams']"), "y_prob has 3 columns"),
    (lambda: calipers.log_loss(["a", "b", "c"], [[.9, .1, 0], [.1, .9, 0], [.1, .1, .8]],
                               labels=["a", "c", "d"]),
     re.escape("y_true contains values {'b'} not belonging to the passed labels ['a', 'c', 'd']."),
     "'y_true' contains labels not in parameter 'labels'"),
])
def test_error_texts_carry_sklearn_words_and_the_argument(call, sklearn_words, ours):
    with pytest.raises(ValueError) as info:
        call()
    assert re.search(sklearn_words, str(info.value)), str(info.value)
    assert re.search(ours, str(info.value)), str(info.value)


# --------------------------------------------------------------------------
# labels that name score columns: the columns follow the sorted labels, everywhere
# --------------------------------------------------------------------------

def _column_label_functions():
    """Every public function taking ``labels`` beside a 2-D score/probability matrix."""
    import inspect

    found = []
    for name in calipers.__all__:
        fn = getattr(calipers, name)
        if isinstance(fn, type) or not callable(fn):
            continue
        params = inspect.signature(fn).parameters
        if "labels" in params and ({"y_score", "y_prob"} & set(params)):
            found.append(name)
    return found


COLUMN_LABEL_FUNCTIONS = _column_label_functions()
_ORDER_Y = np.array([2, 2, 0, 1, 0, 1])
_ORDER_P = np.array([[.2, .1, .7], [.4, .3, .3], [.3, .4, .3], [.1, .5, .4], [.6, .2, .2],
                     [.3, .4, .3]])


def test_column_label_functions_are_all_found():
    # the list below is derived from signatures, so a new function joins the check by itself
    assert {"roc_auc_score", "multiclass_roc_auc_score", "top_k_accuracy_score", "log_loss",
            "brier_score_loss"} <= set(COLUMN_LABEL_FUNCTIONS)


@pytest.mark.parametrize("name", COLUMN_LABEL_FUNCTIONS)
@pytest.mark.parametrize("text", [False, True])
def test_unsorted_column_labels_are_never_read_in_the_given_order(name, text):
    """scikit-learn: roc_auc_score and top_k_accuracy_score raise "must be ordered", log_loss
    and brier_score_loss warn and use the sorted order. Never the given order, silently."""
    fn = getattr(calipers, name)
    kw = {"multi_class": "ovr"} if name == "roc_auc_score" else {}
    codes = np.array(["a", "b", "c"])
    y = codes[_ORDER_Y] if text else _ORDER_Y
    labels = [codes[i] if text else i for i in (0, 2, 1)]
    srt = sorted(labels)
    expected = fn(y, _ORDER_P, labels=srt, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = fn(y, _ORDER_P, labels=labels, **kw)
        except ValueError as exc:
            assert re.match(r"Parameter 'labels' must be ordered", str(exc)), exc
            return
    assert any("ordered lexicographically" in str(w.message) for w in caught), name
    assert float(got) == float(expected)  # the sorted order, not the given one
    sk = getattr(skm, name, None)
    if sk is not None:
        with pytest.warns(UserWarning, match="ordered lexicographically"):
            assert float(got) == pytest.approx(float(sk(y, _ORDER_P, labels=labels)), abs=1e-12)


@pytest.mark.parametrize("fn", [calipers.roc_auc_score, calipers.average_precision_score])
def test_nan_labels_are_named_as_not_finite(fn):
    """A NaN label is named as such by the one binary-label rule, not counted as a third
    class ("multiclass format is not supported")."""
    with pytest.raises(ValueError, match=r"^y_true must be finite \(no NaN or inf\); element 1"):
        fn([0.0, np.nan, 1.0, 1.0], [0.1, 0.2, 0.3, 0.4])


def test_binary_label_messages_offer_pos_label_only_to_callers_that_take_it():
    y = np.array([0, 2, 1, 1])
    with pytest.raises(ValueError, match="unless pos_label is given"):
        V.binary_labels(y, np)
    with pytest.raises(ValueError, match=r"booleans\); it has 3 classes") as info:
        V.binary_labels(y, np, pos_label_hint=False)
    assert "pos_label" not in str(info.value)


def test_import_does_not_import_jax_and_results_register_on_first_jax_use():
    # `import calipers` must not pay for `import jax`; result types become pytrees as soon as
    # JAX arrays reach calipers (or at once when JAX was imported first).
    import subprocess
    import sys

    code = (
        "import sys, calipers\n"
        "assert 'jax' not in sys.modules, 'import calipers imported jax'\n"
        "import jax, jax.numpy as jnp\n"
        "r = calipers.accuracy_with_error([1, 0, 1, 1])\n"   # NumPy input, JAX imported later
        "assert len(jax.tree_util.tree_leaves(r)) == 4\n"
        "r = calipers.accuracy_with_error(jnp.array([1, 0, 1, 1]))\n"
        "leaves = jax.tree_util.tree_leaves(r)\n"
        "assert len(leaves) == 4, leaves\n"
        "r = jax.jit(calipers.delong_test)(jnp.array([0, 1, 0, 1.]), jnp.array([.1, .9, .3, .8]),"
        " jnp.array([.2, .7, .1, .9]))\n"
        "assert type(r).__name__ == 'DeLongResult'\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
