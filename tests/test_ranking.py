"""Binary threshold-free metrics against brute force, exact fractions and scikit-learn."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers import UndefinedMetricWarning
from conftest import load_case, to_np

def handed(case_id):
    return load_case(case_id)


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------

def brute_auc(y, s, w=None):
    """Pair counting with exact fractions: tied pair = 1/2."""
    w = np.ones(len(y), dtype=int) if w is None else w
    num, den = Fraction(0), Fraction(0)
    for i in range(len(y)):
        if y[i] != 1:
            continue
        for j in range(len(y)):
            if y[j] != 0:
                continue
            pw = Fraction(int(w[i])) * Fraction(int(w[j]))
            den += pw
            num += pw * (1 if s[i] > s[j] else Fraction(1, 2) if s[i] == s[j] else 0)
    return num / den


def brute_ap(y, s, w=None):
    """Step sum over distinct thresholds, exact fractions."""
    w = np.ones(len(y), dtype=int) if w is None else w
    P = sum(Fraction(int(w[i])) for i in range(len(y)) if y[i] == 1)
    ap, prev_r = Fraction(0), Fraction(0)
    for t in sorted(set(s), reverse=True):
        tp = sum(Fraction(int(w[i])) for i in range(len(y)) if s[i] >= t and y[i] == 1)
        fp = sum(Fraction(int(w[i])) for i in range(len(y)) if s[i] >= t and y[i] == 0)
        if tp + fp == 0:
            continue
        r = tp / P
        ap += (r - prev_r) * tp / (tp + fp)
        prev_r = r
    return ap


def tied_data(rng, n, levels=4, weights=False):
    y = rng.integers(0, 2, n)
    y[0], y[1] = 0, 1  # both classes
    s = rng.integers(0, levels, n).astype(np.float64) / levels
    w = rng.integers(0, 4, n) if weights else None
    if weights:
        w[0] = w[1] = 1
    return y, s, w


# --------------------------------------------------------------------------
# worked values (SPEC.md) on every backend
# --------------------------------------------------------------------------

WORKED_AUC = [
    ([1, 1, 0, 1, 0, 0, 1, 0], [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1], 12 / 16),
    ([1, 1, 0, 1, 0, 1, 0, 0], [0.9, 0.8, 0.7, 0.6, 0.55, 0.54, 0.4, 0.3], 13 / 16),
    ([1, 0, 1, 0], [0.5, 0.5, 0.9, 0.1], 0.875),
]


@pytest.mark.parametrize("y,s,expected", WORKED_AUC)
def test_worked_auc(backend, y, s, expected):
    got = backend.call(calipers.roc_auc_score, y, s)
    np.testing.assert_allclose(to_np(got), expected, rtol=backend.rtol())


def test_worked_ap_and_trapezoid(backend):
    y, s = [1, 0, 1], [0.9, 0.8, 0.7]
    ap = backend.call(calipers.average_precision_score, y, s)
    pr = backend.call(calipers.precision_recall_auc, y, s)
    np.testing.assert_allclose(to_np(ap), 5 / 6, rtol=backend.rtol())
    np.testing.assert_allclose(to_np(pr), 19 / 24, rtol=backend.rtol())


# --------------------------------------------------------------------------
# handed cases
# --------------------------------------------------------------------------

def test_H01_ties_non_adjacent(backend):
    c = handed("H01")
    got = backend.call(calipers.roc_auc_score, c["inputs"]["y_true"], c["inputs"]["y_score"])
    np.testing.assert_allclose(to_np(got), c["expected"], atol=c["tolerance"])


def test_H02_drop_intermediate_minimal_curve():
    c = handed("H02")
    y, s = c["inputs"]["y_true"], c["inputs"]["y_score"]
    fpr, tpr, thr = calipers.roc_curve(y, s, drop_intermediate=True)
    e = c["expected"]
    np.testing.assert_allclose(fpr, e["fpr"], atol=c["tolerance"])
    np.testing.assert_allclose(tpr, e["tpr"], atol=c["tolerance"])
    np.testing.assert_allclose(thr, [float(t) for t in e["thresholds"]], atol=c["tolerance"])
    # the invariant: the area is the same with and without dropping
    f2, t2, _ = calipers.roc_curve(y, s, drop_intermediate=False)
    assert np.trapezoid(tpr, fpr) == pytest.approx(np.trapezoid(t2, f2)) == pytest.approx(e["auc"])


def test_H03_partial_auc_mcclish(backend):
    c = handed("H03")
    got = backend.call(calipers.roc_auc_score, c["inputs"]["y_true"], c["inputs"]["y_score"],
                       **c["kwargs"])
    np.testing.assert_allclose(to_np(got), c["expected"], atol=c["tolerance"])


def test_H04_ap_step_sum_not_trapezoid(backend):
    c = handed("H04")
    y, s = c["inputs"]["y_true"], c["inputs"]["y_score"]
    got = backend.call(calipers.average_precision_score, y, s)
    np.testing.assert_allclose(to_np(got), c["expected"], atol=c["tolerance"])
    # the trapezoid is the separately named function and differs (0.7 here)
    np.testing.assert_allclose(to_np(backend.call(calipers.precision_recall_auc, y, s)), 0.7,
                               atol=1e-6)


def test_H10_log_loss_single_class_with_labels(backend):
    c = handed("H10")
    got = backend.call(calipers.log_loss, c["inputs"]["y_true"], c["inputs"]["y_proba"],
                       **c["kwargs"])
    np.testing.assert_allclose(to_np(got), c["expected"], atol=c["tolerance"])


def _h15_arrays():
    c = handed("H15")
    rows = c["inputs"]["rle"]
    counts = [r[2] for r in rows]
    s = np.repeat(np.array([r[0] for r in rows], dtype=np.float32), counts)
    y = np.repeat(np.array([r[1] for r in rows], dtype=np.int32), counts)
    return c, y, s


def test_H15_counts_beyond_2_pow_24_numpy_and_jit_float32(backend):
    """~2*10^7 float32 scores: counts must not saturate at 2**24 (numpy, and jit without x64)."""
    if backend.name not in ("numpy", "jax_jit_x32"):
        pytest.skip("full-size H15 runs on numpy and jax_jit_x32 here; all backends with --runslow")
    c, y, s = _h15_arrays()
    got = backend.call(calipers.roc_auc_score, y, s)
    np.testing.assert_allclose(to_np(got), c["expected"], atol=c["tolerance"])


@pytest.mark.slow
def test_H15_counts_beyond_2_pow_24_all_backends(backend):
    c, y, s = _h15_arrays()
    got = backend.call(calipers.roc_auc_score, y, s)
    np.testing.assert_allclose(to_np(got), c["expected"], atol=c["tolerance"])


def test_H15_as_integer_weights(backend):
    """The same counts as integer sample weights: the weighted path must stay exact too."""
    c = handed("H15")
    rows = c["inputs"]["rle"]
    s = np.array([r[0] for r in rows], dtype=np.float32)
    y = np.array([r[1] for r in rows])
    w = np.array([r[2] for r in rows], dtype=np.int32)
    got = backend.call(calipers.roc_auc_score, y, s, sample_weight=w)
    np.testing.assert_allclose(to_np(got), c["expected"], atol=c["tolerance"])
    got = backend.call(calipers.average_precision_score, y, s, sample_weight=w)
    P1, N1, P2 = 16777216, 1048576, 1048576
    expected_ap = (P1 * 1.0 + P2 * (P1 + P2) / (P1 + P2 + N1)) / (P1 + P2)
    np.testing.assert_allclose(to_np(got), expected_ap, rtol=1e-6)


# --------------------------------------------------------------------------
# random inputs with heavy ties, against brute force and scikit-learn
# --------------------------------------------------------------------------

@pytest.mark.parametrize("weights", [False, True])
def test_auc_ap_against_brute_force(backend, weights):
    rng = np.random.default_rng(1 if weights else 2)
    for _ in range(3):
        y, s, w = tied_data(rng, 24, weights=weights)
        auc = backend.call(calipers.roc_auc_score, y, s, sample_weight=w)
        ap = backend.call(calipers.average_precision_score, y, s, sample_weight=w)
        np.testing.assert_allclose(to_np(auc), float(brute_auc(y, s, w)), rtol=backend.rtol())
        np.testing.assert_allclose(to_np(ap), float(brute_ap(y, s, w)), rtol=backend.rtol())


@pytest.mark.parametrize("weights", [False, True])
def test_against_sklearn(backend, weights):
    rng = np.random.default_rng(3)
    y, s, w = tied_data(rng, 300, levels=20, weights=weights)
    wf = None if w is None else w.astype(np.float64) * 0.5  # float weights
    for fn, ref in [(calipers.roc_auc_score, skm.roc_auc_score),
                    (calipers.average_precision_score, skm.average_precision_score)]:
        got = backend.call(fn, y, s, sample_weight=wf)
        np.testing.assert_allclose(to_np(got), ref(y, s, sample_weight=wf), rtol=backend.rtol() * 10)
    for max_fpr in (0.1, 0.37, 1.0):
        got = backend.call(calipers.roc_auc_score, y, s, sample_weight=wf, max_fpr=max_fpr)
        np.testing.assert_allclose(to_np(got), skm.roc_auc_score(y, s, sample_weight=wf,
                                                                 max_fpr=max_fpr),
                                   rtol=backend.rtol() * 10)
    fpr, tpr, _ = skm.roc_curve(y, s, sample_weight=wf)
    got = backend.call(calipers.precision_recall_auc, y, s, sample_weight=wf)
    p, r, _ = skm.precision_recall_curve(y, s, sample_weight=wf)
    np.testing.assert_allclose(to_np(got), skm.auc(r, p), rtol=backend.rtol() * 10)


def test_curves_match_sklearn(backend):
    rng = np.random.default_rng(4)
    y, s, w = tied_data(rng, 60, levels=9, weights=True)
    fpr, tpr, thr = to_np(backend.call(calipers.roc_curve, y, s, sample_weight=w,
                                       drop_intermediate=False))
    rf, rt, rth = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    prec, rec, pthr = to_np(backend.call(calipers.precision_recall_curve, y, s, sample_weight=w))
    rp, rr, rpt = skm.precision_recall_curve(y, s, sample_weight=w)
    if not backend.compact_curves:
        # static length: every row repeats its tie group's point; compact it here
        keep = np.concatenate([[True], thr[1:] != thr[:-1]])
        fpr, tpr, thr = fpr[keep], tpr[keep], thr[keep]
        pk = np.concatenate([pthr[1:] != pthr[:-1], [True]])
        pthr = pthr[pk]
        prec = np.concatenate([prec[:-1][pk], prec[-1:]])
        rec = np.concatenate([rec[:-1][pk], rec[-1:]])
    np.testing.assert_allclose(fpr, rf, rtol=1e-6)
    np.testing.assert_allclose(tpr, rt, rtol=1e-6)
    np.testing.assert_allclose(thr, rth, rtol=1e-6)
    np.testing.assert_allclose(prec, rp, rtol=1e-6)
    np.testing.assert_allclose(rec, rr, rtol=1e-6)
    np.testing.assert_allclose(pthr, rpt, rtol=1e-6)


def test_jit_curves_have_static_length():
    import jax
    import jax.numpy as jnp

    y = jnp.asarray([1, 0, 1, 0, 1])
    s = jnp.asarray([0.5, 0.5, 0.9, 0.1, 0.5])
    fpr, tpr, thr = jax.jit(calipers.roc_curve)(y, s)
    assert fpr.shape == (6,)
    # repeated points leave the area unchanged
    assert float(jnp.trapezoid(tpr, fpr)) == pytest.approx(float(calipers.roc_auc_score(y, s)))


def test_drop_intermediate_keeps_area_sklearn_drop_pr():
    rng = np.random.default_rng(5)
    y, s, _ = tied_data(rng, 200, levels=30)
    f1, t1, _ = calipers.roc_curve(y, s)
    f2, t2, _ = calipers.roc_curve(y, s, drop_intermediate=False)
    assert len(f1) <= len(f2)
    assert np.trapezoid(t1, f1) == pytest.approx(np.trapezoid(t2, f2))
    p, r, t = calipers.precision_recall_curve(y, s, drop_intermediate=True)
    rp, rr, rt = skm.precision_recall_curve(y, s, drop_intermediate=True)
    np.testing.assert_allclose(p, rp)
    np.testing.assert_allclose(r, rr)
    np.testing.assert_allclose(t, rt)


# --------------------------------------------------------------------------
# precision@k / recall@k: ties at the boundary by expectation
# --------------------------------------------------------------------------

def brute_at_k(y, s, k):
    """Average over every ordering of the rows consistent with the scores."""
    n = len(y)
    tps = []
    for perm in itertools.permutations(range(n)):
        ss = [s[i] for i in perm]
        if any(ss[i] < ss[i + 1] for i in range(n - 1)):
            continue
        tps.append(sum(y[i] for i in perm[:k]))
    tp = Fraction(sum(tps), len(tps))
    return tp / k, tp / sum(y)


def test_precision_recall_at_k_against_enumeration(backend):
    y = [1, 0, 1, 0, 1, 0]
    s = [0.9, 0.5, 0.5, 0.5, 0.2, 0.9]
    for k in (1, 2, 3, 4, 6):
        p_ref, r_ref = brute_at_k(y, s, k)
        p = backend.call(calipers.precision_at_k, y, s, k=k)
        r = backend.call(calipers.recall_at_k, y, s, k=k)
        np.testing.assert_allclose(to_np(p), float(p_ref), rtol=backend.rtol())
        np.testing.assert_allclose(to_np(r), float(r_ref), rtol=backend.rtol())


# --------------------------------------------------------------------------
# log loss and Brier against scikit-learn
# --------------------------------------------------------------------------

def test_log_loss_brier_against_sklearn(backend):
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 100)
    p = rng.uniform(0, 1, 100)
    p[:3] = [0.0, 1.0, 0.5]  # exact 0/1 are clipped to eps like sklearn
    w = rng.uniform(0, 2, 100)
    for wt in (None, w):
        got = backend.call(calipers.log_loss, y, p, sample_weight=wt)
        np.testing.assert_allclose(to_np(got), skm.log_loss(y, p, sample_weight=wt),
                                   rtol=1e-4 if not backend.x64 else 1e-10)
        got = backend.call(calipers.brier_score_loss, y, p, sample_weight=wt)
        np.testing.assert_allclose(to_np(got), skm.brier_score_loss(y, p, sample_weight=wt),
                                   rtol=backend.rtol() * 10)
    got = backend.call(calipers.log_loss, y, p, normalize=False)
    np.testing.assert_allclose(to_np(got), skm.log_loss(y, p, normalize=False),
                               rtol=1e-4 if not backend.x64 else 1e-10)


def test_log_loss_confident_wrong():
    # SPEC: p = 0.001 when y = 1 gives about 6.9
    assert calipers.log_loss([1], [0.001]) == pytest.approx(6.9078, abs=1e-3)


# --------------------------------------------------------------------------
# undefined results: NaN with a warning (eager), NaN under jit
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [calipers.roc_auc_score, calipers.average_precision_score,
                                calipers.precision_recall_auc])
def test_one_class_is_nan(backend, fn):
    y, s = [0, 0, 0], [0.1, 0.2, 0.3]
    if backend.jit:
        got = backend.call(fn, y, s)
    else:
        with pytest.warns(UndefinedMetricWarning):
            got = backend.call(fn, y, s)
    assert np.isnan(to_np(got))


def test_auc_all_positive_is_nan_not_half():
    with pytest.warns(UndefinedMetricWarning, match="Only one class is present in y_true"):
        assert np.isnan(calipers.roc_auc_score([1, 1], [0.2, 0.3]))
    with pytest.warns(UndefinedMetricWarning):
        fpr, tpr, _ = calipers.roc_curve([1, 1], [0.2, 0.3])
    assert np.all(np.isnan(fpr)) and not np.any(np.isnan(tpr))
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(calipers.recall_at_k([0, 0], [0.2, 0.3], k=1))


def test_invalid_values_under_jit_give_nan():
    import jax
    import jax.numpy as jnp

    f = jax.jit(calipers.roc_auc_score)
    assert np.isnan(float(f(jnp.asarray([0, 2, 1]), jnp.asarray([0.1, 0.2, 0.3]))))
    assert np.isnan(float(f(jnp.asarray([0, 1, 1]), jnp.asarray([0.1, jnp.nan, 0.3]))))
    g = jax.jit(calipers.log_loss)
    assert np.isnan(float(g(jnp.asarray([0, 1]), jnp.asarray([0.1, 1.3]))))


# --------------------------------------------------------------------------
# errors: one message per rule
# --------------------------------------------------------------------------

@pytest.mark.parametrize("call,match", [
    (lambda: calipers.roc_auc_score([0, 1], [0.1, 0.2, 0.3]), "y_score has 3 elements but y_true has 2"),
    (lambda: calipers.roc_auc_score([], []), "y_true is empty"),
    (lambda: calipers.roc_auc_score([[0, 1]], [0.1, 0.2]), "y_true must be 1-D"),
    (lambda: calipers.roc_auc_score([0, 1], [0.1, np.nan]), "y_score must be finite.*element 1"),
    (lambda: calipers.roc_auc_score([0, 1], [0.1, np.inf]), "y_score must be finite"),
    (lambda: calipers.roc_auc_score([0, 2], [0.1, 0.2]), "y_true must contain only 0 and 1.*element 1"),
    (lambda: calipers.roc_auc_score([0, 1], [0.1, 0.2], sample_weight=[1, -1]), "sample_weight must be non-negative"),
    (lambda: calipers.roc_auc_score([0, 1], [0.1, 0.2], max_fpr=0), r"max_fpr must be in \(0, 1\]"),
    (lambda: calipers.roc_auc_score([0, 1], [True, False]), "y_score must be numeric scores"),
    (lambda: calipers.precision_at_k([0, 1], [0.1, 0.2], k=0), "k must be a positive integer"),
    (lambda: calipers.precision_at_k([0, 1], [0.1, 0.2], k=3), "k=3 is larger than the number of samples"),
    (lambda: calipers.log_loss([0, 1], [0.1, 1.2]), r"y_prob must be probabilities in \[0, 1\]; element 1"),
    (lambda: calipers.log_loss([0, 1], [0.1, 0.2], labels=[0, 0]), "labels must list two distinct classes"),
    (lambda: calipers.log_loss([0, 2], [0.1, 0.2], labels=[0, 1]), "not in labels"),
    (lambda: calipers.brier_score_loss([0, 1], [-0.1, 0.2]), "y_prob must be probabilities"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_pos_label():
    y = np.array(["a", "b", "b", "a"])
    s = [0.1, 0.8, 0.4, 0.35]
    with pytest.raises(ValueError):
        calipers.roc_auc_score(y, s)
    assert calipers.roc_auc_score(y, s, pos_label="b") == skm.roc_auc_score(y == "b", s)
    assert calipers.roc_auc_score([-1, 1, 1, -1], s, pos_label=1) == skm.roc_auc_score([-1, 1, 1, -1], s)


# --------------------------------------------------------------------------
# properties (hypothesis)
# --------------------------------------------------------------------------

labels_scores = st.integers(2, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.integers(0, 5), min_size=n, max_size=n),
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
)).filter(lambda t: 0 < sum(t[0]) < len(t[0]))


@settings(max_examples=40, deadline=None)
@given(labels_scores)
def test_properties(data):
    y, s, w = (np.asarray(v) for v in data)
    s = s.astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        auc = calipers.roc_auc_score(y, s)
        ap = calipers.average_precision_score(y, s)
        # reversing scores gives 1 - AUC
        assert calipers.roc_auc_score(y, -s) == pytest.approx(1 - auc)
        # strictly monotone transforms leave AUC and AP unchanged
        assert calipers.roc_auc_score(y, np.exp(3 * s) + 7) == pytest.approx(auc)
        assert calipers.average_precision_score(y, np.exp(3 * s) + 7) == pytest.approx(ap)
        # row order does not matter
        perm = np.random.default_rng(len(y)).permutation(len(y))
        assert calipers.roc_auc_score(y[perm], s[perm]) == pytest.approx(auc)
        assert calipers.average_precision_score(y[perm], s[perm]) == pytest.approx(ap)
        # integer weights equal duplicated rows (exactly; also on the weighted path)
        rep = np.repeat(np.arange(len(y)), w)
        if 0 < y[rep].sum() < len(rep):
            assert calipers.roc_auc_score(y, s, sample_weight=w) == pytest.approx(
                calipers.roc_auc_score(y[rep], s[rep]))
            assert calipers.average_precision_score(y, s, sample_weight=w) == pytest.approx(
                calipers.average_precision_score(y[rep], s[rep]))
        # weighted path with unit weights equals the unweighted (NumPy fast) path
        assert calipers.roc_auc_score(y, s, sample_weight=np.ones(len(y))) == pytest.approx(auc)
        # exact
        assert auc == pytest.approx(float(brute_auc(y, s)))
        assert ap == pytest.approx(float(brute_ap(y, s)))
        assert 0 <= ap <= 1


# --------------------------------------------------------------------------
# jit: compiled once per shape
# --------------------------------------------------------------------------

def test_no_recompile_on_second_call():
    import jax
    import jax.numpy as jnp

    traces = []

    def f(y, s):
        traces.append(1)
        return calipers.roc_auc_score(y, s)

    g = jax.jit(f)
    g(jnp.asarray([0, 1, 1, 0]), jnp.asarray([0.1, 0.4, 0.35, 0.8]))
    g(jnp.asarray([1, 1, 0, 0]), jnp.asarray([0.3, 0.2, 0.1, 0.0]))
    assert len(traces) == 1


def test_output_dtype_follows_input(backend):
    if not backend.is_jax:
        pytest.skip("dtype promotion checked on JAX")
    import jax.numpy as jnp
    got = backend.call(calipers.roc_auc_score, backend.asarray([0, 1, 1]),
                       jnp.asarray([0.1, 0.5, 0.2], dtype=jnp.float32))
    assert got.dtype == jnp.float32


def test_numpy_returns_scalar():
    got = calipers.roc_auc_score([0, 1], [0.2, 0.4])
    assert isinstance(got, np.floating) and got == 1.0


def test_multiclass_dispatch_like_sklearn():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 3, 60)
    P = rng.dirichlet([1, 1, 1], 60)
    for mc in ("ovr", "ovo"):
        assert calipers.roc_auc_score(y, P, multi_class=mc) == pytest.approx(
            skm.roc_auc_score(y, P, multi_class=mc))
    with pytest.raises(ValueError, match="pass multi_class='ovr' or 'ovo'"):
        calipers.roc_auc_score(y, P)


# --------------------------------------------------------------------------
# H16: integer sample_weight at k means repetition (the top k units of weight)
# --------------------------------------------------------------------------

def test_H16_precision_recall_at_k_weights_are_repetitions(backend):
    case = load_case("H16")
    inp = case["inputs"]
    got = backend.call(calipers.precision_at_k, inp["y_true"], inp["y_score"],
                       k=case["kwargs"]["k"], sample_weight=np.array(inp["sample_weight"]))
    assert float(got) == pytest.approx(case["expected"], abs=case["tolerance"])
    got = backend.call(calipers.recall_at_k, [1, 1], [0.9, 0.8], k=2,
                       sample_weight=np.array([3, 1]))
    assert float(got) == pytest.approx(0.5)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 4), st.integers(0, 3)),
                min_size=1, max_size=12), st.integers(1, 8))
def test_at_k_integer_weights_equal_repeated_rows(rows, k):
    y = np.array([r[0] for r in rows])
    s = np.array([r[1] for r in rows]) / 4.0          # ties
    w = np.array([r[2] for r in rows])
    if w.sum() < k:
        with pytest.raises(ValueError, match="total sample_weight"):
            calipers.precision_at_k(y, s, k=k, sample_weight=w)
        return
    ry, rs = np.repeat(y, w), np.repeat(s, w)
    assert calipers.precision_at_k(y, s, k=k, sample_weight=w) == \
        pytest.approx(calipers.precision_at_k(ry, rs, k=k), abs=1e-12)
    if ry.sum():
        assert calipers.recall_at_k(y, s, k=k, sample_weight=w) == \
            pytest.approx(calipers.recall_at_k(ry, rs, k=k), abs=1e-12)


def test_H16_bootstrap_with_counts_equals_row_resampling():
    """The bootstrap passes counts as weights; with repetition semantics that is row resampling."""
    from functools import partial
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 20)
    a, b = rng.random(20).round(1), rng.random(20).round(1)
    metric = partial(calipers.precision_at_k, k=5)
    res = calipers.paired_bootstrap(metric, y, a, b, n_resamples=200, seed=1)
    assert res.n_undefined == 0
    idx_rng = np.random.default_rng(2)
    for _ in range(5):  # a few replicates by explicit resampling, compared with count weights
        idx = idx_rng.integers(0, 20, 20)
        counts = np.bincount(idx, minlength=20)
        assert metric(y, a, sample_weight=counts) == pytest.approx(metric(y[idx], a[idx]))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.sampled_from([2, 6, 10**6]).flatmap(
        lambda lv: st.lists(st.integers(0, lv), min_size=n, max_size=n)))))
def test_roc_curve_unweighted_counts_brute_force(data):
    """The NumPy unweighted curve (two keys-only sorts, both search directions) counts exactly.

    Few levels take the per-threshold search, many the per-positive one; the
    weighted path (argsort) with unit weights must give the same curve,
    drop_intermediate on or off.
    """
    y, s = np.asarray(data[0]), np.asarray(data[1], dtype=np.float64) / 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        fpr, tpr, thr = calipers.roc_curve(y, s, drop_intermediate=False)
        u = np.unique(s)[::-1]
        P, N = int(y.sum()), int((1 - y).sum())
        tp = np.array([0] + [int(((s >= t) & (y == 1)).sum()) for t in u])
        fp = np.array([0] + [int(((s >= t) & (y == 0)).sum()) for t in u])
        np.testing.assert_array_equal(thr, np.concatenate([[np.inf], u]))
        if P:
            np.testing.assert_array_equal(tpr, tp / P)
        if N:
            np.testing.assert_array_equal(fpr, fp / N)
        for drop in (False, True):
            a = calipers.roc_curve(y, s, drop_intermediate=drop)
            b = calipers.roc_curve(y, s, sample_weight=np.ones(len(y), dtype=np.int64),
                                   drop_intermediate=drop)
            for ai, bi in zip(a, b):
                np.testing.assert_array_equal(ai, bi)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.integers(0, 4), min_size=n, max_size=n),
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.booleans())).filter(lambda t: 0 < sum(t[0]) < len(t[0])))
def test_jax_payload_sort_path_brute_force(data):
    """JAX AUC/AP (one sort carrying labels and weights, tie bounds by running max/min).

    Against exact pair counting and the step-sum definition on tied integer
    scores, unweighted and with integer weights, under jit with x64 on and off.
    """
    import jax
    import jax.numpy as jnp

    y, s, w, weighted = np.asarray(data[0]), np.asarray(data[1]), np.asarray(data[2]), data[3]
    if weighted and w[y == 1].sum() * w[y == 0].sum() == 0:
        return
    ww = w if weighted else None
    want_auc = float(brute_auc(y, s, ww))
    want_ap = float(brute_ap(y, s, ww))
    for x64 in (True, False):
        with jax.enable_x64(x64):
            it = np.int64 if x64 else np.int32
            ft = np.float64 if x64 else np.float32
            args = (jnp.asarray(y.astype(it)), jnp.asarray(s.astype(ft)))
            kw = {} if ww is None else {"sample_weight": jnp.asarray(ww.astype(it))}
            auc = jax.jit(calipers.roc_auc_score)(*args, **kw)
            ap = jax.jit(calipers.average_precision_score)(*args, **kw)
            rtol = 1e-12 if x64 else 1e-6
            np.testing.assert_allclose(float(auc), want_auc, rtol=rtol)
            np.testing.assert_allclose(float(ap), want_ap, rtol=rtol)


# --------------------------------------------------------------------------
# curves: zero-weight rows make no threshold; warnings in scikit-learn's words
# --------------------------------------------------------------------------

@pytest.mark.parametrize("curve", [calipers.roc_curve, calipers.precision_recall_curve])
def test_zero_weight_rows_make_no_threshold(backend, curve):
    """A row of weight 0 is the same as the row left out (scikit-learn's _binary_clf_curve)."""
    if not backend.compact_curves:
        pytest.skip("static-length curves keep every row (documented)")
    rng = np.random.default_rng(11)
    y, s, w = tied_data(rng, 40, levels=12, weights=True)
    w = w.astype(float)
    w[rng.choice(40, 8, replace=False)] = 0.0
    y[np.argmax(s)], w[np.argmax(s)] = 1, 0.0      # the top score has weight 0 only
    s[np.argmax(s)] = s.max() + 1.0
    kw = {"drop_intermediate": False}
    got = to_np(backend.call(curve, y, s, sample_weight=w, **kw))
    keep = w != 0
    want = to_np(backend.call(curve, y[keep], s[keep], sample_weight=w[keep], **kw))
    ref = getattr(skm, curve.__name__)(y, s, sample_weight=w, **kw)
    for g, x, r in zip(got, want, ref):
        np.testing.assert_allclose(g, x, rtol=1e-12)
        np.testing.assert_allclose(g, r, rtol=1e-6)


def test_curve_warnings_use_sklearn_words():
    roc_neg = "No negative samples in y_true, false positive value should be meaningless"
    roc_pos = "No positive samples in y_true, true positive value should be meaningless"
    with pytest.warns(UndefinedMetricWarning, match=roc_neg):
        fpr, _, _ = calipers.roc_curve([1, 1, 1], [0.1, 0.5, 0.9])
    assert np.all(np.isnan(fpr))
    with pytest.warns(UndefinedMetricWarning, match=roc_pos):
        _, tpr, _ = calipers.roc_curve([0, 0, 0], [0.1, 0.5, 0.9])
    assert np.all(np.isnan(tpr))
    with pytest.warns(UndefinedMetricWarning, match="No positive class found in y_true: recall "
                                                    "is NaN"):
        _, rec, _ = calipers.precision_recall_curve([0, 0], [0.25, 0.75])
    assert np.all(np.isnan(rec))   # scikit-learn sets recall to 1 (documented difference)
    with pytest.warns(UndefinedMetricWarning, match="No positive class found in y_true"):
        assert np.isnan(calipers.average_precision_score([0, 0], [0.25, 0.75]))


def test_a_stray_label_in_binary_data_is_named_in_the_error():
    # 1-D scores with labels {0, 1, 2}: the message gives both readings (multiclass scores
    # needed, or a label outside the two classes) and lists the labels found
    with pytest.raises(ValueError, match=r"one column per class.*two classes.*holds 0, 1, 2"):
        calipers.roc_auc_score([0, 1, 2, 1, 0], [0.1, 0.2, 0.3, 0.4, 0.5])
