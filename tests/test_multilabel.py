"""Multilabel / multiclass / (n, 1) input of roc_auc_score and average_precision_score,
and scikit-learn's label and keyword conventions, against scikit-learn on the same data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn.metrics as skm

import calipers

RNG = np.random.default_rng(11)
N, L = 40, 4
Y = RNG.integers(0, 2, (N, L))
Y[0], Y[1] = 1, 0                                  # every column has both classes
Y[2:6] = [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
S = RNG.integers(0, 6, (N, L)) / 5.0               # ties within and across columns
W = RNG.integers(0, 4, N).astype(float)
W[:6] = 1.0


def _rows_with_both(Y):
    return (Y.min(axis=1) == 0) & (Y.max(axis=1) == 1)


@pytest.mark.parametrize("average", ["macro", "micro", "weighted", "samples", None])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", ["roc_auc_score", "average_precision_score"])
def test_multilabel_matches_sklearn(name, average, weighted):
    keep = _rows_with_both(Y) if average == "samples" else np.ones(N, bool)
    y, s, w = Y[keep], S[keep], (W[keep] if weighted else None)
    got = getattr(calipers, name)(y, s, average=average, sample_weight=w)
    want = getattr(skm, name)(y, s, average=average, sample_weight=w)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_multilabel_all_backends(backend):
    got = backend.call(lambda y, s, w: [calipers.roc_auc_score(y, s, average="weighted",
                                                                sample_weight=w),
                                         calipers.average_precision_score(y, s, average="micro")],
                       Y, S, W)
    tol = 1e-6 if "x32" in backend.name else 1e-12
    np.testing.assert_allclose(float(got[0]), skm.roc_auc_score(Y, S, average="weighted",
                                                                sample_weight=W), rtol=tol)
    np.testing.assert_allclose(float(got[1]), skm.average_precision_score(Y, S, average="micro"),
                               rtol=tol)


def test_undefined_column_is_left_out_with_one_warning():
    y = Y.copy()
    y[:, 2] = 0                                    # column 2 has no positive
    with pytest.warns(calipers.UndefinedMetricWarning, match=r"label column\(s\) \[2\]"):
        got = calipers.roc_auc_score(y, S, average=None)
    assert np.isnan(got[2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        macro = calipers.roc_auc_score(y, S)
    assert macro == pytest.approx(np.mean(got[[0, 1, 3]]))


def test_column_vector_scores_and_multiclass_ap():
    y = Y[:, 0]
    assert calipers.roc_auc_score(y, S[:, :1]) == pytest.approx(skm.roc_auc_score(y, S[:, :1]))
    assert calipers.average_precision_score(y, S[:, :1]) == pytest.approx(
        skm.average_precision_score(y, S[:, :1]))
    yc = RNG.integers(0, 3, N)
    P = RNG.random((N, 3))
    for av in ("macro", "micro", "weighted"):
        assert calipers.average_precision_score(yc, P, average=av) == pytest.approx(
            skm.average_precision_score(yc, P, average=av))


@pytest.mark.parametrize("call, err, match", [
    (lambda: calipers.average_precision_score(Y, S, pos_label=0), ValueError,
     "Parameter pos_label is fixed to 1 for multilabel-indicator y_true"),
    (lambda: calipers.average_precision_score([0, 1, 2], np.eye(3), pos_label=2), ValueError,
     "Parameter pos_label is fixed to 1 for multiclass y_true"),
    (lambda: calipers.roc_auc_score([0, 1, 2], np.eye(3)), ValueError,
     r"multi_class must be in \('ovo', 'ovr'\)"),
    (lambda: calipers.roc_auc_score([0, 1, 2], np.eye(3), multi_class="ovo", max_fpr=0.5),
     ValueError, "Partial AUC computation not available in multiclass setting"),
    (lambda: calipers.roc_curve(np.array(["a", "b"]), [0.0, 1.0]), ValueError,
     r"y_true takes value in \{'a', 'b'\} and pos_label is not specified"),
    (lambda: calipers.roc_curve(np.array([b"a", b"b"]), [0.0, 1.0]), TypeError,
     "Support for labels represented as bytes is not supported"),
    (lambda: calipers.roc_auc_score([0, 1, 2], [0.1, 0.2, 0.3]), ValueError,
     r"`y_score` needs to be of shape `\(n_samples, n_classes\)`.*y_true has 3 classes.*"
     r"multi_class must be in \('ovo', 'ovr'\)"),
    (lambda: calipers.roc_curve([0, 1, 2], [0.1, 0.2, 0.3]), ValueError,
     "y_true must contain only 0 and 1.*multiclass format is not supported"),
    (lambda: calipers.roc_auc_score([-1, 0, 0], [0.1, 0.2, 0.3]), ValueError, "mixes -1 and 0"),
])
def test_sklearn_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_minus_one_one_labels_as_sklearn():
    y = 2 * Y[:, 0] - 1
    s = S[:, 0]
    assert calipers.roc_auc_score(y, s) == pytest.approx(skm.roc_auc_score(y, s))
    assert calipers.average_precision_score(y, s) == pytest.approx(
        skm.average_precision_score(y, s))
    p = s * 0.9 + 0.05
    assert calipers.brier_score_loss(y, p) == pytest.approx(skm.brier_score_loss(y, p))
    # two numeric classes other than {0, 1} / {-1, 1}: the greater is positive (probabilities)
    assert calipers.brier_score_loss(y + 3, p) == pytest.approx(skm.brier_score_loss(y + 3, p))
    assert calipers.log_loss(y + 3, p) == pytest.approx(skm.log_loss(y + 3, p))


def test_sklearn_keyword_names():
    y = Y[:, 0]
    P = np.column_stack([1 - S[:, 0] * 0.9 - 0.05, S[:, 0] * 0.9 + 0.05])
    want = skm.log_loss(y, P)
    assert calipers.log_loss(y, y_proba=P) == pytest.approx(want)
    assert calipers.log_loss(y_true=y, y_prob=P) == pytest.approx(want)
    with pytest.warns(FutureWarning, match="`y_pred` was renamed to `y_proba`"):
        assert calipers.log_loss(y, y_pred=P) == pytest.approx(want)
    with pytest.raises(ValueError, match="Cannot use both `y_pred` and `y_proba`"):
        calipers.log_loss(y, y_pred=P, y_proba=P)
    with pytest.raises(ValueError, match="name the same argument"):
        calipers.log_loss(y, P, y_proba=P)
    assert calipers.brier_score_loss(y, y_proba=P[:, 1]) == pytest.approx(
        skm.brier_score_loss(y, y_proba=P[:, 1]))
