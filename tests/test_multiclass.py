"""Multiclass ROC AUC (OvR, OvO / Hand & Till) and cost-minimising threshold selection.

References: scikit-learn's ``roc_auc_score(multi_class=...)``, brute-force pair
counting with exact fractions (weighted one-vs-one, which scikit-learn does not
support), and brute-force enumeration of every threshold.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers import UndefinedMetricWarning
from calipers._ranking import multiclass as MC
from conftest import close, to_np


# rows drawn from a few probability vectors: many tied scores in every column
RNG = np.random.default_rng(5)
N, K = 36, 4
_PROTO = RNG.dirichlet(np.ones(K), size=6)
_PROTO = np.round(_PROTO, 3)
_PROTO[:, -1] = 1 - _PROTO[:, :-1].sum(1)
PROBS = _PROTO[RNG.integers(0, 6, N)]
YT = RNG.integers(0, K, N)
YT[:K] = np.arange(K)
SW = RNG.integers(1, 4, N).astype(float)


def _pair_auc(pos_scores, neg_scores, wp, wn):
    """Exact weighted Mann-Whitney AUC by brute force (ties count 1/2)."""
    num = Fraction(0)
    for sa, wa in zip(pos_scores, wp):
        for sb, wb in zip(neg_scores, wn):
            if sa > sb:
                num += Fraction(wa) * Fraction(wb)
            elif sa == sb:
                num += Fraction(wa) * Fraction(wb) / 2
    return num / (Fraction(sum(Fraction(x) for x in wp)) * Fraction(sum(Fraction(x) for x in wn)))


def _hand_till_reference(y, s, w):
    """Hand & Till (2001) M, weighted: mean over pairs of (A(i|j) + A(j|i)) / 2."""
    classes = range(s.shape[1])
    vals, prev = [], []
    for i in classes:
        for j in classes:
            if j <= i:
                continue
            mi, mj = y == i, y == j
            a_ij = _pair_auc(s[mi, i], s[mj, i], w[mi], w[mj])
            a_ji = _pair_auc(s[mj, j], s[mi, j], w[mj], w[mi])
            vals.append((a_ij + a_ji) / 2)
            prev.append(Fraction(w[mi | mj].sum()) / Fraction(w.sum()))
    macro = sum(vals) / len(vals)
    weighted = sum(v * p for v, p in zip(vals, prev)) / sum(prev)
    return float(macro), float(weighted)


def _absent_ovo_reference(y):
    return np.mean([(float(_pair_auc(PROBS[y == i, i], PROBS[y == j, i],
                                     np.ones((y == i).sum()), np.ones((y == j).sum())))
                     + float(_pair_auc(PROBS[y == j, j], PROBS[y == i, j],
                                       np.ones((y == j).sum()), np.ones((y == i).sum())))) / 2
                    for i in range(3) for j in range(i + 1, 3)])


def test_multiclass_auc_vs_sklearn_all_backends(backend):
    # one program per backend (one jit compile); macro averages are checked on the
    # absent-class input and on NumPy in test_ovr_vs_sklearn_numpy
    y_absent = YT.copy()
    y_absent[y_absent == 3] = 0           # class 3 absent

    def fn(y, s, w, ya):
        return dict(
            ovr=[MC.multiclass_roc_auc_score(y, s, average=av) for av in (None, "micro")],
            ovr_w=[MC.multiclass_roc_auc_score(y, s, average=av, sample_weight=w)
                   for av in ("weighted", "micro")],
            ovo=MC.multiclass_roc_auc_score(y, s, multi_class="ovo", average="weighted"),
            ovo_w=MC.multiclass_roc_auc_score(y, s, multi_class="ovo", average="weighted",
                                              sample_weight=w),
            # a class absent from y_true needs labels= (as scikit-learn); without it the
            # classes are y_true's distinct values (see test_column_labels_inferred)
            absent=(MC.multiclass_roc_auc_score(ya, s, average=None, labels=[0, 1, 2, 3]),
                    MC.multiclass_roc_auc_score(ya, s, labels=[0, 1, 2, 3]),
                    MC.multiclass_roc_auc_score(ya, s, multi_class="ovo", labels=[0, 1, 2, 3])),
        )

    if backend.eager_checks:
        with pytest.warns(UndefinedMetricWarning, match="undefined for class"):
            got = backend.call(fn, YT, PROBS, SW, y_absent)
    else:
        got = backend.call(fn, YT, PROBS, SW, y_absent)
    for g, av in zip(got["ovr"], (None, "micro")):
        close(g, skm.roc_auc_score(YT, PROBS, multi_class="ovr", average=av), backend)
    for g, av in zip(got["ovr_w"], ("weighted", "micro")):
        close(g, skm.roc_auc_score(YT, PROBS, multi_class="ovr", average=av, sample_weight=SW),
              backend)
    close(got["ovo"], skm.roc_auc_score(YT, PROBS, multi_class="ovo", average="weighted"),
          backend)
    # weighted one-vs-one: scikit-learn refuses weights; exact brute force instead
    _, weighted = _hand_till_reference(YT, PROBS, SW)
    close(got["ovo_w"], weighted, backend)
    # an absent class: NaN for it, left out of the averages
    per, macro, ovo = got["absent"]
    per = to_np(per)
    assert np.isnan(per[3]) and not np.any(np.isnan(per[:3]))
    close(per[:3], [skm.roc_auc_score(y_absent == c, PROBS[:, c]) for c in range(3)], backend)
    close(macro, per[:3].mean(), backend)
    close(ovo, _absent_ovo_reference(y_absent), backend)


def test_auc_jit_invalid_label_is_nan():
    import jax

    got = jax.jit(MC.multiclass_roc_auc_score)(YT + 1, PROBS)   # label 4 is outside 0..3
    assert np.isnan(to_np(got))


@pytest.mark.parametrize("average", ["macro", "weighted", "micro", None])
def test_ovr_vs_sklearn_numpy(average):
    for sw in (None, SW):
        close(MC.multiclass_roc_auc_score(YT, PROBS, average=average, sample_weight=sw),
              skm.roc_auc_score(YT, PROBS, multi_class="ovr", average=average,
                                sample_weight=sw))


def test_ovo_weighted_vs_exact_numpy():
    macro, weighted = _hand_till_reference(YT, PROBS, SW)
    close(MC.multiclass_roc_auc_score(YT, PROBS, multi_class="ovo", sample_weight=SW), macro)
    close(MC.multiclass_roc_auc_score(YT, PROBS, multi_class="ovo", sample_weight=SW,
                                      average="weighted"), weighted)
    close(MC.multiclass_roc_auc_score(YT, PROBS, multi_class="ovo"),
          skm.roc_auc_score(YT, PROBS, multi_class="ovo"))


def test_hand_till_unweighted_exact():
    m, w = _hand_till_reference(YT, PROBS, np.ones(N))
    close(MC.multiclass_roc_auc_score(YT, PROBS, multi_class="ovo"), m)
    close(MC.multiclass_roc_auc_score(YT, PROBS, multi_class="ovo", average="weighted"), w)


def test_unnormalised_scores_and_labels():
    # scores need not sum to 1 (scikit-learn refuses); OvR is the per-column binary AUC
    s = RNG.normal(size=(N, K)).round(1)
    per = MC.multiclass_roc_auc_score(YT, s, average=None)
    close(per, [calipers.roc_auc_score(YT == c, s[:, c]) for c in range(K)])
    # labels name the columns, in sorted order (scikit-learn's rule); unsorted ones raise
    lab = [10, 20, 30, 40]
    y = np.array(lab)[YT]
    close(MC.multiclass_roc_auc_score(y, s, labels=lab, multi_class="ovo"),
          MC.multiclass_roc_auc_score(YT, s, multi_class="ovo"))
    with pytest.raises(ValueError, match="Parameter 'labels' must be ordered"):
        MC.multiclass_roc_auc_score(np.array([40, 10, 30, 20])[YT], s, labels=[40, 10, 30, 20])


@pytest.mark.parametrize("call, match", [
    (lambda: MC.multiclass_roc_auc_score(YT, PROBS, multi_class="ovx"), "multi_class must be"),
    (lambda: MC.multiclass_roc_auc_score(YT, PROBS, multi_class="ovo", average="micro"),
     "average must be one of"),
    (lambda: MC.multiclass_roc_auc_score(YT, PROBS[:, 0]), r"shape \(n, C\)"),
    (lambda: MC.multiclass_roc_auc_score(YT[:3], PROBS), "y_score has 36"),
    (lambda: MC.multiclass_roc_auc_score(YT + 1, PROBS, labels=[0, 1, 2, 3]),
     r"'y_true' contains labels not in parameter 'labels': \[4\]"),
    (lambda: MC.multiclass_roc_auc_score(YT, PROBS, labels=[0, 1]),
     "Number of given labels, 2, not equal to the number of columns in 'y_score', 4"),
    (lambda: MC.multiclass_roc_auc_score(YT[YT < 3], PROBS[YT < 3]),
     "Number of classes in y_true not equal to the number of columns in 'y_score'"),
    (lambda: MC.multiclass_roc_auc_score(YT, PROBS, labels=[0, 1, 1, 2]),
     "Parameter 'labels' must be unique"),
    (lambda: MC.multiclass_roc_auc_score(YT, PROBS, labels=[0, 1, 2, 5]),
     "'y_true' contains labels not in parameter 'labels'"),
    (lambda: MC.multiclass_roc_auc_score(YT, np.where(PROBS > 0.5, np.nan, PROBS)),
     "y_score must be finite"),
    (lambda: MC.multiclass_roc_auc_score(YT, PROBS, sample_weight=-SW), "non-negative"),
    (lambda: MC.multiclass_roc_auc_score(YT, PROBS > 0.5), "not booleans"),
    (lambda: MC.multiclass_roc_auc_score([], np.zeros((0, 3))), "y_true is empty"),
])
def test_auc_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------
# select_threshold
# --------------------------------------------------------------------------

def _threshold_reference(y, s, w, cfp, cfn):
    """Every candidate threshold (distinct scores and +inf), exact arithmetic."""
    best = None
    for t in sorted(set(s.tolist())) + [math.inf]:
        pred = s >= t
        tp = sum(Fraction(x) for x in w[pred & (y == 1)])
        fp = sum(Fraction(x) for x in w[pred & (y == 0)])
        fn = sum(Fraction(x) for x in w[~pred & (y == 1)])
        tn = sum(Fraction(x) for x in w[~pred & (y == 0)])
        cost = Fraction(cfp) * fp + Fraction(cfn) * fn
        if best is None or cost <= best[1]:     # ties: the higher threshold wins
            best = (t, cost, tp, fp, fn, tn)
    t, cost, tp, fp, fn, tn = best
    return t, float(cost / sum(Fraction(x) for x in w)), tp, fp, fn, tn


YB = (RNG.random(N) < 0.4).astype(np.int64)
SB = np.round(RNG.random(N) * 8) / 8
WB = RNG.integers(0, 4, N)
COSTS = [(1.0, 1.0), (1.0, 5.0), (5.0, 1.0), (0.0, 1.0), (2.0, 0.0)]


def test_select_threshold_vs_brute_force_all_backends(backend):
    spec_s = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
    spec_y = [1, 1, 0, 1, 0, 0, 1, 0]

    def fn(y, s, w, sy, ss):
        return ([MC.select_threshold(y, s, cost_fp=a, cost_fn=b) for a, b in COSTS],
                [MC.select_threshold(y, s, cost_fp=a, cost_fn=b, sample_weight=w)
                 for a, b in COSTS],
                MC.select_threshold(sy, ss, cost_fp=1, cost_fn=1),
                MC.select_threshold(sy, ss, cost_fp=1, cost_fn=10))

    plain, weighted, equal, fn_dear = backend.call(fn, YB, SB, WB, spec_y, spec_s)
    for results, w in ((plain, np.ones(N, dtype=np.int64)), (weighted, WB)):
        for res, (a, b) in zip(results, COSTS):
            t, cost, tp, fp, fn_, tn = _threshold_reference(YB, SB, w, a, b)
            assert float(to_np(res.threshold)) == t
            close(res.expected_cost, cost, backend)
            assert [int(to_np(v)) for v in (res.tp, res.fp, res.fn, res.tn)] == \
                [tp, fp, fn_, tn]
    # SPEC scores. Costs 1/1: 0.8 and 0.6 both cost 2 (0.5 behaves as 0.6); the higher wins
    close(equal.threshold, 0.8, backend)
    close(equal.expected_cost, 2 / 8, backend)
    assert [int(to_np(v)) for v in equal[2:]] == [2, 0, 2, 4]
    # a false negative costs 10: call everything from 0.2 up positive
    close(fn_dear.threshold, 0.2, backend)
    close(fn_dear.expected_cost, 3 / 8, backend)
    assert [int(to_np(v)) for v in fn_dear[2:]] == [4, 3, 0, 1]


def test_select_threshold_never_positive_is_a_candidate():
    # false positives are expensive and the top score is a negative: predict nothing
    res = MC.select_threshold([0, 1, 0], [0.9, 0.5, 0.1], cost_fp=10, cost_fn=1)
    assert res.threshold == math.inf and res.expected_cost == pytest.approx(1 / 3)
    assert (res.tp, res.fp, res.fn, res.tn) == (0, 0, 1, 2)


def test_select_threshold_zero_weight_warns():
    with pytest.warns(UndefinedMetricWarning, match="total weight is zero"):
        res = MC.select_threshold([0, 1], [0.2, 0.8], cost_fp=1, cost_fn=1,
                                  sample_weight=[0, 0])
    assert np.isnan(res.threshold) and np.isnan(res.expected_cost)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_property_select_threshold_is_optimal(data):
    n = data.draw(st.integers(1, 15))
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    s = np.array(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))) / 5
    w = np.array(data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    cfp = data.draw(st.sampled_from([0.5, 1.0, 3.0]))
    cfn = data.draw(st.sampled_from([0.5, 1.0, 3.0]))
    res = MC.select_threshold(y, s, cost_fp=cfp, cost_fn=cfn, sample_weight=w)
    t, cost, tp, fp, fn, tn = _threshold_reference(y, s, w, cfp, cfn)
    assert res.threshold == t
    assert res.expected_cost == pytest.approx(cost, rel=1e-12)
    assert (res.tp, res.fp, res.fn, res.tn) == (tp, fp, fn, tn)
    # integer weights are repeated rows
    rep = MC.select_threshold(np.repeat(y, w), np.repeat(s, w), cost_fp=cfp, cost_fn=cfn)
    assert rep.threshold == res.threshold and rep.tp == res.tp


@pytest.mark.parametrize("call, match", [
    (lambda: MC.select_threshold([0, 1], [0.1, 0.9], cost_fp=-1, cost_fn=1),
     "cost_fp must be a finite non-negative"),
    (lambda: MC.select_threshold([0, 1], [0.1, 0.9], cost_fp=1, cost_fn=math.inf),
     "cost_fn must be a finite non-negative"),
    (lambda: MC.select_threshold([0, 1], [0.1, 0.9], cost_fp="1", cost_fn=1), "cost_fp must"),
    (lambda: MC.select_threshold([0, 2], [0.1, 0.9], cost_fp=1, cost_fn=1),
     "y_true must contain only 0 and 1"),
    (lambda: MC.select_threshold([0, 1], [0.1, np.nan], cost_fp=1, cost_fn=1),
     "y_score must be finite"),
    (lambda: MC.select_threshold([0, 1], [0.1], cost_fp=1, cost_fn=1), "y_score has 1"),
])
def test_select_threshold_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_public_names_exported():
    for name in MC.__all__:
        assert getattr(calipers, name) is getattr(MC, name)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_property_auc_invariances(data):
    n = data.draw(st.integers(4, 14))
    k = data.draw(st.integers(3, 4))
    y = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    y[:k] = np.arange(k)
    s = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n * k, max_size=n * k)),
                 dtype=float).reshape(n, k)
    perm = np.array(data.draw(st.permutations(range(k))))
    for mc in ("ovr", "ovo"):
        base = MC.multiclass_roc_auc_score(y, s, multi_class=mc)
        # a strictly increasing transform of each column changes nothing
        assert MC.multiclass_roc_auc_score(y, np.exp(s) * 3 - 1, multi_class=mc) == \
            pytest.approx(base, rel=1e-12)
        # renaming the classes (permuting the columns with the labels) changes nothing
        inv = np.argsort(perm)
        got = MC.multiclass_roc_auc_score(inv[y], s[:, perm], multi_class=mc)
        assert got == pytest.approx(base, rel=1e-12)
    # OvO pair value is symmetric in i, j; with two classes present it is the binary AUC
    two = np.where(y < 2, y, 0)
    got = MC.multiclass_roc_auc_score(two, s[:, :2], multi_class="ovo")
    want = (calipers.roc_auc_score(two == 0, s[:, 0])
            + calipers.roc_auc_score(two == 1, s[:, 1])) / 2
    assert got == pytest.approx(want, rel=1e-12)


def test_vmap_matches_loop():
    import jax

    from calipers import _classification as C

    rng = np.random.default_rng(3)
    yt = rng.integers(0, 3, (4, 12))
    yp = rng.integers(0, 3, (4, 12))
    sc = rng.random((4, 12, 3))

    def per_row(a, b, s):
        return (C.f1_score(a, b, num_classes=3, average="macro", zero_division=0),
                MC.multiclass_roc_auc_score(a, s, multi_class="ovo"),
                MC.select_threshold(a == 1, s[:, 1], cost_fp=1.0, cost_fn=3.0).threshold)

    got = jax.jit(jax.vmap(per_row))(yt, yp, sc)
    for i in range(4):
        want = per_row(yt[i], yp[i], sc[i])
        for g, w in zip(got, want):
            close(np.asarray(g)[i], w, atol=1e-12)


def test_column_labels_inferred_from_y_true_as_sklearn():
    # without labels the classes are y_true's sorted distinct values (scikit-learn's
    # rule), so labels {1..4} or strings name the four columns in order
    P = PROBS / PROBS.sum(axis=1, keepdims=True)
    names = np.array(["ant", "bee", "cat", "dog"])
    for mc in ("ovr", "ovo"):
        want = skm.roc_auc_score(YT + 1, P, multi_class=mc)
        assert MC.multiclass_roc_auc_score(YT + 1, P, multi_class=mc) == pytest.approx(want)
        assert calipers.roc_auc_score(names[YT], P, multi_class=mc) == pytest.approx(
            skm.roc_auc_score(names[YT], P, multi_class=mc))
    with pytest.raises(NotImplementedError, match="average=None is not implemented"):
        MC.multiclass_roc_auc_score(YT, P, multi_class="ovo", average=None)
