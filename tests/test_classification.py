"""Thresholded classification metrics (issue 5, item 1).

References: scikit-learn where it defines the same quantity, exact fractions
for the worked values of SPEC.md, brute force elsewhere. Every metric runs on
every backend through the ``backend`` fixture; under jit the label set is
static (``num_classes``).
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers import UndefinedMetricWarning
from calipers import _classification as C
from conftest import close, to_np

ZD = [0, 1, np.nan]


def W(fn):
    """Pass the third positional array as ``sample_weight`` (backend.call is positional)."""
    return lambda a, b, w, **kw: fn(a, b, sample_weight=w, **kw)


def _expand(cm):
    yt, yp = [], []
    for i, row in enumerate(cm):
        for j, c in enumerate(row):
            yt += [i] * c
            yp += [j] * c
    return np.array(yt), np.array(yp)


# --------------------------------------------------------------------------
# SPEC worked values (each test: one program per backend, so one jit compile)
# --------------------------------------------------------------------------

def test_spec_three_class_confusion_matrix(backend):
    yt, yp = _expand([[4, 1, 1], [1, 2, 0], [0, 1, 2]])

    def fn(a, b):
        return (C.confusion_matrix(a, b, num_classes=3),
                C.precision_score(a, b, num_classes=3, average=None),
                C.precision_score(a, b, num_classes=3, average="macro"),
                [f(a, b, num_classes=3, average="micro")
                 for f in (C.precision_score, C.recall_score, C.f1_score)],
                C.accuracy_score(a, b))

    cm, p, macro, micro, acc = backend.call(fn, yt, yp)
    np.testing.assert_array_equal(to_np(cm), [[4, 1, 1], [1, 2, 0], [0, 1, 2]])
    close(p, [Fraction(4, 5), Fraction(1, 2), Fraction(2, 3)], backend)
    close(macro, (Fraction(4, 5) + Fraction(1, 2) + Fraction(2, 3)) / 3, backend)
    close(macro, 0.6556, atol=5e-5)
    for m in micro:
        close(m, 8 / 12, backend)
    close(acc, 8 / 12, backend)


def test_spec_three_class_eager_label_inference():
    yt, yp = _expand([[4, 1, 1], [1, 2, 0], [0, 1, 2]])
    # labels need not be 0..C-1 eagerly; they are inferred and sorted
    cm = C.confusion_matrix(yt * 10 + 5, yp * 10 + 5)
    np.testing.assert_array_equal(cm, [[4, 1, 1], [1, 2, 0], [0, 1, 2]])
    close(C.precision_score(yt + 7, yp + 7, average=None), [0.8, 0.5, 2 / 3])


def test_spec_binary_worked_values(backend):
    yt1 = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    yp1 = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]
    yt2 = np.array([1] * 100 + [0] * 900)
    yp2 = np.array([1] * 80 + [0] * 20 + [1] * 90 + [0] * 810)

    def fn(a, b, c, d):
        return ([f(a, b) for f in (C.precision_score, C.recall_score, C.f1_score,
                                   C.accuracy_score)],
                [f(c, d) for f in (C.accuracy_score, C.precision_score, C.recall_score,
                                   C.specificity_score, C.f1_score)],
                C.balanced_accuracy_score(c, d, num_classes=2))

    first, second, bal = backend.call(fn, yt1, yp1, yt2, yp2)
    for g, w in zip(first, [0.6, 0.75, 2 / 3, 0.7]):
        close(g, w, backend)
    # 1,000 examples, TP 80, FN 20, FP 90, TN 810
    for g, w in zip(second, [0.89, 80 / 170, 0.8, 0.9, 160 / 270]):
        close(g, w, backend)
    close(second[1], 0.4706, atol=5e-5)
    close(bal, 0.85, backend)


def test_spec_scores_at_threshold(backend):
    s = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
    y = [1, 1, 0, 1, 0, 0, 1, 0]

    def fn(a, b):
        return (C.confusion_matrix(a, b, num_classes=2, threshold=0.5),
                [f(a, b, threshold=0.5) for f in (C.precision_score, C.recall_score,
                                                  C.f1_score, C.accuracy_score)],
                C.recall_score(a, b, threshold=0.2))

    cm, vals, rec = backend.call(fn, y, s)
    np.testing.assert_array_equal(to_np(cm), [[3, 1], [1, 3]])  # [[TN, FP], [FN, TP]]
    for v in vals:
        close(v, 0.75, backend)
    # >= : a score exactly at the threshold is predicted positive
    close(rec, 1.0, backend)


# --------------------------------------------------------------------------
# handed cases
# --------------------------------------------------------------------------

def test_H08_mcc_constant_prediction_is_zero(backend):
    def fn(a, b, c, d):
        return (C.matthews_corrcoef(a, b, num_classes=2),
                C.matthews_corrcoef(c, d, num_classes=2))

    # constant prediction (H08), and constant truth with varied prediction: limit 0
    got = backend.call(fn, [1, 0, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 1, 1], [1, 0, 1, 0])
    close(got[0], 0.0, backend, atol=1e-12)
    close(got[1], 0.0, backend, atol=1e-12)


def test_H08_mcc_doubly_degenerate_is_nan(backend):
    # y_true == y_pred == constant: no limit; calipers NaN (scikit-learn 0.0), documented
    y = [1, 1, 1, 1]
    if backend.eager_checks:
        with pytest.warns(UndefinedMetricWarning, match="both y_true and y_pred are constant"):
            got = backend.call(C.matthews_corrcoef, y, y, num_classes=2)
    else:
        got = backend.call(C.matthews_corrcoef, y, y, num_classes=2)
    assert np.isnan(to_np(got))


def test_H08_mcc_matches_sklearn_when_one_side_constant():
    rng = np.random.default_rng(8)
    for _ in range(10):
        yt = rng.integers(0, 3, 12)
        yp = np.full(12, rng.integers(0, 3))
        w = rng.random(12)
        assert C.matthews_corrcoef(yt, yp, sample_weight=w) == skm.matthews_corrcoef(
            yt, yp, sample_weight=w) == 0.0


def test_H09_fscore_from_counts(backend):
    """Handed case H09: F from counts stays defined when precision is 0/0."""
    def fn(a, b):
        return C.precision_recall_fscore_support(a, b, average="binary", zero_division=np.nan)[:3]

    p, r, f = backend.call(fn, [1, 1, 0], [0, 0, 0])
    assert np.isnan(to_np(p))
    close(r, 0.0, backend)
    close(f, 0.0, backend)
    # same as scikit-learn 1.9 (which also computes F from counts)
    skp, skr, skf, _ = skm.precision_recall_fscore_support([1, 1, 0], [0, 0, 0],
                                                           average="binary",
                                                           zero_division=np.nan)
    assert np.isnan(skp) and skr == 0 and skf == 0


def test_H09_default_zero_division_warns_and_is_nan():
    with pytest.warns(UndefinedMetricWarning, match="precision is ill-defined"):
        p = C.precision_score([1, 1, 0], [0, 0, 0])
    assert np.isnan(p)
    # F1 is defined, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert C.f1_score([1, 1, 0], [0, 0, 0]) == 0.0
    # F undefined only when TP + FP + FN == 0
    with pytest.warns(UndefinedMetricWarning, match="f-score is ill-defined"):
        assert np.isnan(C.f1_score([0, 0], [0, 0]))
    assert C.f1_score([0, 0], [0, 0], zero_division=1) == 1.0
    with pytest.warns(UndefinedMetricWarning):
        assert C.f1_score([0, 0], [0, 0], zero_division="warn") == 0.0


def test_H09_nan_left_out_of_macro_average(backend):
    # label 2 never predicted: its precision is NaN and left out of the macro mean
    yt = [0, 1, 2, 2, 0, 1]
    yp = [0, 1, 0, 1, 0, 0]
    got = backend.call(C.precision_score, yt, yp, num_classes=3, average="macro",
                       zero_division=np.nan)
    close(got, (2 / 4 + 1 / 2) / 2, backend)
    want = skm.precision_score(yt, yp, average="macro", zero_division=np.nan)
    close(got, want, backend)


def test_H11_top_k_tie_rule(backend):
    """Handed case H11: among equal scores the higher label index ranks first."""
    y = [0, 1, 2]
    s = [[0.4, 0.4, 0.2], [0.4, 0.4, 0.2], [0.3, 0.3, 0.4]]

    def fn(a, b, c, d):
        return (C.top_k_accuracy_score(a, b, k=1, labels=[0, 1, 2]),
                C.top_k_accuracy_score(c, d, k=1), C.top_k_accuracy_score(c, d, k=2))

    h11, const1, const2 = backend.call(fn, y, s, [0, 1, 2, 2], np.full((4, 3), 0.5))
    close(h11, 2 / 3, backend)
    close(h11, skm.top_k_accuracy_score(y, s, k=1, labels=[0, 1, 2]), backend)
    # constant scores: not 100% (tie-inclusive rule), the highest index wins
    close(const1, 0.5, backend)
    close(const2, 0.75, backend)


# --------------------------------------------------------------------------
# random inputs against scikit-learn, every backend
# --------------------------------------------------------------------------

RNG = np.random.default_rng(20261130)
N, K = 30, 4
YT = RNG.integers(0, K, N)
YP = np.where(RNG.random(N) < 0.5, YT, RNG.integers(0, K - 1, N))   # label 3 rarely predicted
YP[YP == 3] = 2
SW = np.round(RNG.random(N) * 4, 1)
SCORES = np.round(RNG.random((N, K)) * 4) / 4                       # many ties
ML_T = (RNG.random((N, K)) < 0.4).astype(np.int64)
ML_P = (RNG.random((N, K)) < 0.4).astype(np.int64)
ML_T[0] = 0
ML_P[0] = 0     # a sample with no labels at all (samples average: undefined)
AVERAGES = [None, "micro", "macro", "weighted"]


def test_multiclass_prfs_vs_sklearn_all_backends(backend):
    combos = [(av, zd) for av in AVERAGES for zd in ZD]

    def fn(a, b, w):
        return [C.precision_recall_fscore_support(a, b, sample_weight=w, num_classes=K,
                                                  average=av, zero_division=zd, beta=0.5)
                for av, zd in combos]

    allgot = backend.call(fn, YT, YP, SW)
    for (average, zd), got in zip(combos, allgot):
        want = skm.precision_recall_fscore_support(YT, YP, sample_weight=SW, labels=range(K),
                                                   average=average, zero_division=zd,
                                                   beta=0.5)
        for g, w in zip(got[:3], want[:3]):
            close(g, w, backend)
        if average is None:
            close(got[3], want[3], backend)


def test_multilabel_prfs_vs_sklearn_all_backends(backend):
    avs = AVERAGES + ["samples"]

    def fn(a, b, w):
        return [C.precision_recall_fscore_support(a, b, sample_weight=w, average=av,
                                                  zero_division=1) for av in avs]

    allgot = backend.call(fn, ML_T, ML_P, SW)
    for average, got in zip(avs, allgot):
        want = skm.precision_recall_fscore_support(ML_T, ML_P, sample_weight=SW,
                                                   average=average, zero_division=1)
        for g, w in zip(got[:3], want[:3]):
            close(g, w, backend)


def test_other_metrics_vs_sklearn_all_backends(backend):
    def fn(a, b, w, s, mt, mp):
        return dict(
            acc=C.accuracy_score(a, b, sample_weight=w),
            bal=C.balanced_accuracy_score(a, b, sample_weight=w, num_classes=K),
            bal_adj=C.balanced_accuracy_score(a, b, sample_weight=w, num_classes=K,
                                              adjusted=True),
            mcc=C.matthews_corrcoef(a, b, sample_weight=w, num_classes=K),
            kappa=[C.cohen_kappa_score(a, b, sample_weight=w, num_classes=K, weights=wt)
                   for wt in (None, "linear", "quadratic")],
            cm=C.confusion_matrix(a, b, sample_weight=w, num_classes=K),
            mcm=C.multilabel_confusion_matrix(mt, mp, sample_weight=w),
            subset=C.accuracy_score(mt, mp),
            topk=[C.top_k_accuracy_score(a, s, k=k, sample_weight=w) for k in (1, 2, 3)],
        )

    got = backend.call(fn, YT, YP, SW, SCORES, ML_T, ML_P)
    close(got["acc"], skm.accuracy_score(YT, YP, sample_weight=SW), backend)
    close(got["bal"], skm.balanced_accuracy_score(YT, YP, sample_weight=SW), backend)
    close(got["bal_adj"], skm.balanced_accuracy_score(YT, YP, sample_weight=SW, adjusted=True),
          backend)
    close(got["mcc"], skm.matthews_corrcoef(YT, YP, sample_weight=SW), backend)
    for g, wt in zip(got["kappa"], (None, "linear", "quadratic")):
        close(g, skm.cohen_kappa_score(YT, YP, sample_weight=SW, weights=wt, labels=range(K)),
              backend)
    close(got["cm"], skm.confusion_matrix(YT, YP, sample_weight=SW, labels=range(K)), backend)
    close(got["mcm"], skm.multilabel_confusion_matrix(ML_T, ML_P, sample_weight=SW), backend)
    close(got["subset"], skm.accuracy_score(ML_T, ML_P), backend)
    for g, k in zip(got["topk"], (1, 2, 3)):
        close(g, skm.top_k_accuracy_score(YT, SCORES, k=k, sample_weight=SW, labels=range(K)),
              backend)


def test_confusion_matrix_counts_and_normalize(backend):
    norms = ["true", "pred", "all"]

    def fn(a, b, w):
        return (C.confusion_matrix(a, b, num_classes=K),
                [C.confusion_matrix(a, b, sample_weight=w, num_classes=K, normalize=nm)
                 for nm in norms])

    if backend.eager_checks:
        with pytest.warns(UndefinedMetricWarning, match="zero column"):
            cm, normed = backend.call(fn, YT, YP, SW)
    else:
        cm, normed = backend.call(fn, YT, YP, SW)
    assert backend.xp.isdtype(cm.dtype, "integral")
    np.testing.assert_array_equal(to_np(cm), skm.confusion_matrix(YT, YP, labels=range(K)))
    for got, normalize in zip(normed, norms):
        want = skm.confusion_matrix(YT, YP, sample_weight=SW, labels=range(K),
                                    normalize=normalize)
        # column 3 is never predicted: scikit-learn writes 0, calipers NaN
        if normalize == "pred":
            assert np.all(np.isnan(to_np(got)[:, 3]))
            want = want.astype(float)
            want[:, 3] = np.nan
        close(got, want, backend)


# numpy only, many random draws: every average, zero_division, labels subset, pos_label
@pytest.mark.parametrize("seed", range(6))
def test_random_vs_sklearn_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    k = int(rng.integers(2, 5))
    yt = rng.integers(0, k, n)
    yp = rng.integers(0, k, n)
    w = rng.integers(0, 3, n) if seed % 2 else rng.random(n)
    labels = None if seed % 3 else sorted(rng.choice(k, size=max(1, k - 1), replace=False))
    for zd in ZD:
        for average in [None, "micro", "macro", "weighted"]:
            for sw in (None, w):
                got = C.precision_recall_fscore_support(yt, yp, sample_weight=sw,
                                                        labels=labels, average=average,
                                                        zero_division=zd)
                want = skm.precision_recall_fscore_support(yt, yp, sample_weight=sw,
                                                           labels=labels, average=average,
                                                           zero_division=zd)
                for g, wv in zip(got, want):
                    if wv is None:
                        assert g is None
                    else:
                        close(g, wv, atol=1e-12)
    # binary: two labels, pos_label among them
    yb = rng.integers(0, 2, n) + 3
    pb = rng.integers(0, 2, n) + 3
    for zd in ZD:
        for fn, sk in [(C.precision_score, skm.precision_score), (C.recall_score,
                       skm.recall_score), (C.f1_score, skm.f1_score)]:
            close(fn(yb, pb, pos_label=4, zero_division=zd, sample_weight=w),
                  sk(yb, pb, pos_label=4, zero_division=zd, sample_weight=w))
    # multilabel, samples average included
    mt = (rng.random((n, k)) < 0.3).astype(int)
    mp = (rng.random((n, k)) < 0.3).astype(int)
    for zd in ZD:
        for average in [None, "micro", "macro", "weighted", "samples"]:
            got = C.precision_recall_fscore_support(mt, mp, average=average, zero_division=zd,
                                                    sample_weight=w)
            want = skm.precision_recall_fscore_support(mt, mp, average=average,
                                                       zero_division=zd, sample_weight=w)
            for g, wv in zip(got[:3], want[:3]):
                close(g, wv, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_mcc = skm.matthews_corrcoef(yt, yp, sample_weight=w)
        got_mcc = C.matthews_corrcoef(yt, yp, sample_weight=w)
    # NaN only in the doubly-degenerate case (both sides constant); else scikit-learn's value
    both_constant = len(set(np.asarray(yt).tolist())) == 1 and len(set(np.asarray(yp).tolist())) == 1
    assert bool(np.isnan(got_mcc)) == both_constant
    if not both_constant:
        close(got_mcc, want_mcc, atol=1e-12)


def test_labels_subset_keeps_other_labels_as_errors(backend):
    # scikit-learn's rule: a label outside ``labels`` still makes FP/FN for the listed ones
    yt = [0, 1, 2, 2, 1, 0]
    yp = [0, 2, 2, 1, 1, 2]

    def fn(a, b):
        return (C.precision_recall_fscore_support(a, b, labels=[2, 0], average=None),
                C.confusion_matrix(a, b, labels=[2, 0]),
                C.f1_score(a, b, labels=[2, 0], average="micro"))

    prfs, cm, micro = backend.call(fn, yt, yp)
    want = skm.precision_recall_fscore_support(yt, yp, labels=[2, 0], average=None)
    for g, w in zip(prfs, want):
        close(g, w, backend)
    np.testing.assert_array_equal(to_np(cm), skm.confusion_matrix(yt, yp, labels=[2, 0]))
    close(micro, skm.f1_score(yt, yp, labels=[2, 0], average="micro"), backend)


def test_specificity_reference(backend):
    def fn(a, b, w):
        return [C.specificity_score(a, b, sample_weight=w, num_classes=K, average=av)
                for av in (None, "micro", "weighted")]

    per, micro, wtd = backend.call(fn, YT, YP, SW)
    # specificity = recall of the negatives (brute force, per label)
    want = [skm.recall_score(YT != c, YP != c, sample_weight=SW) for c in range(K)]
    close(per, want, backend)
    mcm = skm.multilabel_confusion_matrix(YT, YP, sample_weight=SW, labels=range(K))
    close(micro, mcm[:, 0, 0].sum() / (mcm[:, 0, 0].sum() + mcm[:, 0, 1].sum()), backend)
    sup = np.array([SW[YT == c].sum() for c in range(K)])
    close(wtd, np.dot(want, sup) / sup.sum(), backend)


IGNORED = [(C.f1_score, dict(average="macro", num_classes=K)),
           (C.recall_score, dict(average=None, num_classes=K)),
           (C.accuracy_score, {}), (C.matthews_corrcoef, dict(num_classes=K)),
           (C.balanced_accuracy_score, dict(num_classes=K))]


def test_ignore_index_equals_dropping_rows(backend):
    yt = YT.copy()
    yt[::4] = -100
    keep = yt != -100

    def fn(a, b, w):
        return [f(a, b, sample_weight=w, ignore_index=-100, **kw) for f, kw in IGNORED]

    got = backend.call(fn, yt, YP, SW)
    for g, (f, kw) in zip(got, IGNORED):
        close(g, f(YT[keep], YP[keep], sample_weight=SW[keep], **kw), backend)


def test_ignore_index_multilabel_entries(backend):
    mt = ML_T.copy()
    mt[1, 2] = -1
    mt[5, :] = -1

    def fn(a, b):
        return (C.precision_recall_fscore_support(a, b, average=None, ignore_index=-1),
                C.accuracy_score(a, b, ignore_index=-1))

    got, acc = backend.call(fn, mt, ML_P)
    keep = mt != -1
    tp = ((mt == 1) & (ML_P == 1) & keep).sum(0)
    pred = ((ML_P == 1) & keep).sum(0)
    true = ((mt == 1) & keep).sum(0)
    close(got[0], tp / pred, backend)
    close(got[1], tp / true, backend)
    close(got[3], true, backend)
    # subset accuracy: row 5 fully ignored (weight 0), entry (1, 2) ignored
    rows = [i for i in range(N) if i != 5]
    want = np.mean([np.all((mt[i] == ML_P[i]) | ~keep[i]) for i in rows])
    close(acc, want, backend)


def test_small_cases_all_backends(backend):
    def fn(a, b, w, yb, sb, s2, p5, q5):
        return dict(
            n_correct=C.accuracy_score(a, b, normalize=False),
            w_correct=C.accuracy_score(a, b, normalize=False, sample_weight=w),
            top1=C.top_k_accuracy_score(yb, sb, k=1),
            top2=C.top_k_accuracy_score(yb, sb, k=2),
            top1_dec=C.top_k_accuracy_score(yb, s2, k=1),
            p5=C.precision_score(p5, q5, pos_label=5),
            r2=C.recall_score(p5, q5, pos_label=2),
        )

    yb = [0, 1, 1, 0, 1]
    sb = [0.2, 0.5, 0.9, 0.7, 0.1]
    s2 = [-1.0, 2, 3, -2, 1]
    p5 = [2, 5, 5, 2, 5, 2]
    q5 = [5, 5, 2, 2, 5, 5]
    if backend.eager_checks:
        # k=2 with two classes: the perfect score comes with scikit-learn's warning
        with pytest.warns(UndefinedMetricWarning, match=r"'k' \(2\) greater than or equal"):
            got = backend.call(fn, YT, YP, SW, yb, sb, s2, p5, q5)
    else:
        got = backend.call(fn, YT, YP, SW, yb, sb, s2, p5, q5)
    assert int(to_np(got["n_correct"])) == int(skm.accuracy_score(YT, YP, normalize=False))
    close(got["w_correct"], skm.accuracy_score(YT, YP, normalize=False, sample_weight=SW),
          backend)
    # binary 1-D scores: >= 0.5 is positive (scikit-learn uses >, differing only at 0.5)
    close(got["top1"], 3 / 5, backend)
    close(got["top2"], 1.0, backend)
    # scores outside [0, 1]: the threshold is 0
    close(got["top1_dec"], 1.0, backend)
    close(got["p5"], skm.precision_score(p5, q5, pos_label=5), backend)
    close(got["r2"], skm.recall_score(p5, q5, pos_label=2), backend)


# --------------------------------------------------------------------------
# undefined results
# --------------------------------------------------------------------------

def test_undefined_results_warn_eagerly():
    with pytest.warns(UndefinedMetricWarning, match=r"recall is ill-defined for label\(s\) \[2\]"):
        r = C.recall_score([0, 1, 0], [0, 1, 2], average=None)
    assert np.isnan(r[2])
    with pytest.warns(UndefinedMetricWarning, match="total sample weight is zero"):
        assert np.isnan(C.accuracy_score([0, 1], [0, 1], sample_weight=[0.0, 0.0]))
    with pytest.warns(UndefinedMetricWarning, match="Cohen's kappa is undefined"):
        assert np.isnan(C.cohen_kappa_score([1, 1, 1], [1, 1, 1]))
    # no sample left with both labels in `labels`: scikit-learn's words
    with pytest.warns(UndefinedMetricWarning, match="`y2` contains no labels that are present "
                                                    "in both `y1` and `labels`"):
        assert np.isnan(C.cohen_kappa_score([1, 2, 1, 2], [3, 3, 3, 3], labels=[1, 2]))
    with pytest.warns(UndefinedMetricWarning, match="`y1`, `y2` and `labels` have only one "
                                                    "label in common"):
        assert np.isnan(C.cohen_kappa_score([1, 2, 1, 2], [1, 3, 1, 3], labels=[1, 2]))
    with pytest.warns(UndefinedMetricWarning, match="adjusted=True needs at least two"):
        assert np.isnan(C.balanced_accuracy_score([1, 1], [1, 0], adjusted=True))
    with pytest.warns(UndefinedMetricWarning, match=r"ill-defined for \d+ sample\(s\)"):
        C.precision_score(ML_T[:3], ML_P[:3], average="samples")
    with pytest.warns(UndefinedMetricWarning, match="top-k accuracy is undefined"):
        assert np.isnan(C.top_k_accuracy_score([0, 1], [[1, 0.0], [0, 1]], k=1,
                                               sample_weight=[0, 0]))


def test_jit_invalid_input_is_nan(backend):
    if backend.eager_checks:
        pytest.skip("eager backends raise; see test_errors")

    def fn(a, b, c, m1, m2, w, s2, t2):
        return dict(
            out_of_range=C.f1_score(a, b, num_classes=3, average="macro"),
            three_labels_binary=C.f1_score(c, b),
            cm=C.confusion_matrix(a, b, num_classes=3),
            not_indicator=C.f1_score(m1, m2, average="micro"),
            neg_weight=C.accuracy_score(c, b, sample_weight=w),
            topk=C.top_k_accuracy_score(t2, s2, k=1),
        )

    got = backend.call(fn, [0, 1, 5], [0, 1, 1], [0, 1, 2], np.array([[0, 2]]),
                       np.array([[0, 1]]), np.array([1.0, -1.0, 1.0]), [[0.1, 0.9], [0.5, 0.5]],
                       [0, 3])
    for key in ("out_of_range", "three_labels_binary", "not_indicator", "neg_weight", "topk"):
        assert np.isnan(to_np(got[key])), key
    assert np.all(to_np(got["cm"]) == -1)


def test_jit_needs_static_labels(backend):
    if not backend.jit:
        pytest.skip("jit only")
    with pytest.raises(ValueError, match="num_classes"):
        backend.call(C.f1_score, [0, 1, 2], [0, 1, 1], average="macro")


# --------------------------------------------------------------------------
# errors: one test per message
# --------------------------------------------------------------------------

@pytest.mark.parametrize("call, match", [
    (lambda: C.f1_score([0, 1], [0, 1, 1]),
     r"inconsistent numbers of samples: \[2, 3\]: y_pred has 3 elements but y_true has 2"),
    (lambda: C.f1_score([], []), "y_true is empty"),
    (lambda: C.f1_score(np.zeros((2, 2, 2)), np.zeros((2, 2, 2))), "must be 1-D"),
    (lambda: C.f1_score([0.0, np.nan], [0, 1]), "y_true must be finite"),
    (lambda: C.f1_score([0, 1], [0.5, np.inf], threshold=0.5), "y_pred must be finite"),
    (lambda: C.f1_score([0, 1], [0, 1], sample_weight=[1, -1]), "non-negative"),
    (lambda: C.f1_score([0, 1], [0, 1], sample_weight=[1, 1, 1]), "sample_weight has 3"),
    (lambda: C.f1_score([0, 1, 2], [0, 1, 1]), "Target is multiclass"),
    (lambda: C.f1_score([2, 3], [2, 3]), "pos_label=1 is not a valid label"),
    (lambda: C.f1_score([0, 1], [0, 1], labels=[0, 2]), "pos_label=1 is not in labels"),
    (lambda: C.f1_score(ML_T, ML_P), "multilabel-indicator but average='binary'"),
    (lambda: C.f1_score([0, 1], [0, 1], average="mean"), "average must be one of"),
    (lambda: C.f1_score([0, 1], [0, 1], average="samples"), "only meaningful for multilabel"),
    (lambda: C.f1_score([0, 1], [0, 1], zero_division=0.5), "zero_division must be"),
    (lambda: C.f1_score([0, 1], [0, 1], zero_division="zero"), "zero_division must be"),
    (lambda: C.fbeta_score([0, 1], [0, 1], beta=-1), "beta must be a non-negative"),
    (lambda: C.f1_score([0, 4], [0, 1], num_classes=3, average="macro"),
     r"y_true element 1 is 4, which is outside 0..2"),
    (lambda: C.f1_score([0, 1], [0, -1], num_classes=3, average="macro"),
     r"y_pred element 1 is -1"),
    (lambda: C.f1_score([0, 1], [0, 1], num_classes=0, average="macro"), "num_classes must be"),
    (lambda: C.f1_score([0, 1], [0, 1], labels=[0, 0], average="macro"), "duplicates"),
    (lambda: C.f1_score([0, 1], [0, 1], labels=[], average="macro"), "non-empty"),
    (lambda: C.f1_score([0, 1], [0, 1], num_classes=2, labels=[5], average="macro"),
     "class indices in 0..1"),
    (lambda: C.f1_score(ML_T, ML_P * 2, average="micro"), "0/1 indicator matrix"),
    (lambda: C.f1_score(ML_T, ML_P, average="micro", labels=[7]), "column indices"),
    (lambda: C.f1_score(ML_T, ML_P, average="micro", num_classes=3), "columns"),
    (lambda: C.f1_score([0, 1], [0.2, 0.7], threshold="a"), "threshold must be"),
    (lambda: C.f1_score([0, 1], [True, False], threshold=0.5), "not booleans"),
    (lambda: C.f1_score([0, 1], [0, 1], ignore_index="x"), "ignore_index must be"),
    (lambda: C.confusion_matrix([0, 1], [0, 1], normalize="rows"), "normalize must be"),
    (lambda: C.confusion_matrix(ML_T, ML_P), "multilabel_confusion_matrix"),
    (lambda: C.multilabel_confusion_matrix([0, 1], [0, 1], samplewise=True),
     "samplewise=True"),
    (lambda: C.matthews_corrcoef(ML_T, ML_P), "does not support multilabel"),
    (lambda: C.balanced_accuracy_score(ML_T, ML_P), "does not support multilabel"),
    (lambda: C.cohen_kappa_score([0, 1], [0, 1], weights="cubic"), "weights must be"),
    (lambda: C.cohen_kappa_score(ML_T, ML_P), "takes 1-D labels"),
    (lambda: C.top_k_accuracy_score([0, 1], [[0.1, 0.9], [0.5, 0.5]], k=0), "k must be"),
    (lambda: C.top_k_accuracy_score([0, 1], [[0.1, 0.9], [0.5, 0.5]], labels=[0, 1, 2]),
     r"Number of given labels \(3\) not equal to the number of classes in 'y_score' \(2\)"),
    (lambda: C.top_k_accuracy_score([0, 2], [[0.1, 0.9], [0.5, 0.5]], labels=[0, 1]),
     r"y_true element 1 is 2, which is outside 0..1"),
    # without labels the classes are y_true's sorted values (scikit-learn): 3 for 2 columns
    (lambda: C.top_k_accuracy_score([0, 2, 1], [[0.1, 0.9], [0.5, 0.5], [0.5, 0.5]]),
     r"y_true has 3 distinct labels"),
    (lambda: C.top_k_accuracy_score([0, 1], [[0.1, np.nan], [0.5, 0.5]]),
     "y_score must be finite"),
    (lambda: C.top_k_accuracy_score([0, 1], np.zeros((2, 2, 2))), "y_score must be 1-D"),
    (lambda: C.top_k_accuracy_score([0, 1], [[True, False], [False, True]]), "not booleans"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_errors_on_every_backend(backend):
    if not backend.eager_checks:
        pytest.skip("under jit values cannot raise (see test_jit_invalid_input_is_nan)")
    with pytest.raises(ValueError, match="outside 0..2"):
        backend.call(C.f1_score, [0, 4], [0, 1], num_classes=3, average="macro")
    with pytest.raises(ValueError, match="Target is multiclass"):
        backend.call(C.f1_score, [0, 1, 2], [0, 1, 1])
    with pytest.raises(ValueError, match="0/1 indicator"):
        backend.call(C.f1_score, np.array([[0, 2]]), np.array([[0, 1]]), average="micro")


def test_pos_label_ignored_warning():
    with pytest.warns(UserWarning, match=r"pos_label \(set to 2\) is ignored"):
        C.f1_score([0, 1, 2], [0, 1, 2], pos_label=2, average="macro")


# --------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------

labels_st = st.lists(st.integers(0, 3), min_size=1, max_size=20)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_property_fscore_is_harmonic_mean_where_defined(data):
    yt = np.array(data.draw(labels_st))
    yp = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(yt), max_size=len(yt))))
    beta = data.draw(st.sampled_from([0.5, 1.0, 2.0]))
    p, r, f, s = C.precision_recall_fscore_support(yt, yp, beta=beta, labels=range(4),
                                                   zero_division=np.nan)
    b2 = beta * beta
    for pi, ri, fi in zip(p, r, f):
        if not np.isnan(pi) and not np.isnan(ri) and pi + ri > 0:
            assert fi == pytest.approx((1 + b2) * pi * ri / (b2 * pi + ri), rel=1e-12)
    # micro P = R = F = accuracy for multiclass over all labels
    pm, rm, fm, _ = C.precision_recall_fscore_support(yt, yp, average="micro",
                                                      labels=range(4))
    acc = C.accuracy_score(yt, yp)
    assert pm == pytest.approx(acc) and rm == pytest.approx(acc) and fm == pytest.approx(acc)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_property_symmetry_and_permutation(data):
    yt = np.array(data.draw(labels_st))
    yp = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(yt), max_size=len(yt))))
    w = np.array(data.draw(st.lists(st.integers(1, 3), min_size=len(yt), max_size=len(yt))))
    perm = np.array(data.draw(st.permutations(range(len(yt)))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        k1 = C.cohen_kappa_score(yt, yp, labels=range(4), sample_weight=w, weights="quadratic")
        k2 = C.cohen_kappa_score(yp, yt, labels=range(4), sample_weight=w, weights="quadratic")
        m1 = C.matthews_corrcoef(yt, yp, sample_weight=w)
        m2 = C.matthews_corrcoef(yp, yt, sample_weight=w)
        m3 = C.matthews_corrcoef(yt[perm], yp[perm], sample_weight=w[perm])
        # integer weights = repeated rows
        m4 = C.matthews_corrcoef(np.repeat(yt, w), np.repeat(yp, w))
    np.testing.assert_allclose([k2, m2, m3, m4], [k1, m1, m1, m1], rtol=1e-9, atol=1e-12,
                               equal_nan=True)
    assert np.isnan(m1) == (len(set(yt)) == 1 and len(set(yp)) == 1)


def test_public_names_exported():
    for name in C.__all__:
        assert getattr(calipers, name) is getattr(C, name)
    from calipers._core import validation as V
    assert math.isnan(V.zero_division("nan")[0])


# --------------------------------------------------------------------------
# the compile policy: warnings survive the program cache
# --------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["precision_score", "recall_score", "f1_score"])
def test_compiled_jax_call_warns_on_every_call(fn):
    # precision/recall/F now run under the one compile policy on concrete JAX
    # input: scikit-learn's "warn" (0 with a warning) has no NaN to trigger an
    # eager re-run, so the warning must come back from the cached program, each call
    jnp = pytest.importorskip("jax.numpy")
    yt, yp = [0, 0, 0, 0], [0, 0, 0, 0]  # no positive at all: every ratio is 0/0
    want = getattr(skm, fn)(yt, yp, zero_division=0)
    for _ in range(2):
        with pytest.warns(calipers.UndefinedMetricWarning, match="ill-defined"):
            got = getattr(calipers, fn)(jnp.asarray(yt), jnp.asarray(yp), zero_division="warn")
        assert float(got) == want


def test_compiled_jax_call_repeats_the_static_pos_label_warning():
    jnp = pytest.importorskip("jax.numpy")
    yt, yp = jnp.asarray([0, 1, 2, 1]), jnp.asarray([0, 2, 2, 1])
    for _ in range(2):
        with pytest.warns(UserWarning, match=r"pos_label \(set to 2\) is ignored"):
            got = calipers.f1_score(yt, yp, average="macro", pos_label=2)
    assert float(got) == pytest.approx(skm.f1_score([0, 1, 2, 1], [0, 2, 2, 1], average="macro"))


def test_warn_mode_uses_sklearns_words():
    # zero_division="warn" is scikit-learn's convention: its message, word for word
    # (scikit-learn's own tests compare the text)
    import warnings as w
    for kw, want in [({"average": "micro"}, "due to no predicted samples"),
                     ({"average": None}, "in labels with no predicted samples")]:
        with w.catch_warnings(record=True) as ours, w.catch_warnings():
            w.simplefilter("always")
            C.precision_score(np.array([[1, 1], [1, 1]]), np.array([[0, 0], [0, 0]]),
                              zero_division="warn", **kw)
        with w.catch_warnings(record=True) as theirs:
            w.simplefilter("always")
            skm.precision_score(np.array([[1, 1], [1, 1]]), np.array([[0, 0], [0, 0]]),
                                zero_division="warn", **kw)
        assert [str(x.message) for x in ours] == [str(x.message) for x in theirs]
        assert want in str(ours[0].message)
