"""by_group: any metric per slice, support and definedness reported, worst slices first."""

import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers

RNG = np.random.default_rng(3)
N = 30
Y = RNG.integers(0, 2, N)
S = np.round(RNG.random(N), 1)                  # ties
G = RNG.permutation(np.repeat(np.arange(3), N // 3))   # equal sizes: one shape per backend
Y[G == 2] = 1                                   # group 2 has one class: AUC undefined there
W = RNG.integers(1, 4, N).astype(float)


def test_by_group_auc_per_slice(backend):
    if not backend.eager_checks:
        with pytest.raises(ValueError, match="not under jit"):
            backend.call(lambda y, s, group_id: calipers.by_group(
                calipers.roc_auc_score, y, s, group_id=group_id), Y, S, group_id=G)
        return
    with pytest.warns(calipers.UndefinedMetricWarning, match="1 of 3 slices"):
        rep = calipers.by_group(calipers.roc_auc_score, backend.asarray(Y), backend.asarray(S),
                                group_id=G)
    want = {g: skm.roc_auc_score(Y[G == g], S[G == g]) for g in range(2)}
    defined = rep.group[rep.defined]
    np.testing.assert_allclose(rep.value[rep.defined], [want[g] for g in defined], rtol=1e-12)
    assert list(rep.value[rep.defined]) == sorted(rep.value[rep.defined])   # worst (lowest) first
    assert rep.group[-1] == 2 and not rep.defined[-1] and np.isnan(rep.value[-1])
    np.testing.assert_array_equal(rep.support, [np.sum(G == g) for g in rep.group])
    assert rep.n_undefined == 1
    assert rep.overall == pytest.approx(skm.roc_auc_score(Y, S), rel=1e-12)


def test_by_group_losses_weights_and_string_ids():
    groups = np.array(["b", "a", "c"] * 10)
    p = np.clip(S, 0.05, 0.95)
    rep = calipers.by_group(calipers.log_loss, Y, p, group_id=groups, sample_weight=W,
                            higher_is_better=False)
    want = {g: skm.log_loss(Y[groups == g], p[groups == g], sample_weight=W[groups == g],
                            labels=[0, 1]) for g in "abc"}
    np.testing.assert_allclose(rep.value, [want[g] for g in rep.group], rtol=1e-12)
    assert list(rep.value) == sorted(rep.value, reverse=True)    # highest loss first
    np.testing.assert_allclose(rep.weight, [W[groups == g].sum() for g in rep.group])
    assert set(rep.group) == {"a", "b", "c"}


def test_by_group_min_support_ranked_after_and_kept():
    g = np.array([0] * 10 + [1] * 10 + [2] * 2)
    yt = np.array([1, 0] * 11)
    yp = np.array([1, 0] * 5 + [0, 0] * 5 + [0, 1])     # group 2 is worst but tiny
    rep = calipers.by_group(calipers.mean_absolute_error, yt.astype(float), yp.astype(float),
                            group_id=g, min_support=5, higher_is_better=False)
    assert list(rep.group) == [1, 0, 2]
    np.testing.assert_array_equal(rep.below_min_support, [False, False, True])
    assert rep.value[2] == 1.0


def test_by_group_ties_ordered_by_support_then_id():
    g = np.array([2, 2, 0, 1, 1, 1])
    yt = np.zeros(6)
    rep = calipers.by_group(calipers.mean_squared_error, yt, yt, group_id=g)
    assert list(rep.group) == [1, 2, 0]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-5, 5), st.integers(-5, 5)),
                min_size=1, max_size=25), st.randoms(use_true_random=False))
def test_by_group_equals_masked_metric_and_is_order_independent(rows, rnd):
    g = np.array([r[0] for r in rows])
    a = np.array([r[1] for r in rows], float)
    b = np.array([r[2] for r in rows], float)
    rep = calipers.by_group(calipers.mean_squared_error, a, b, group_id=g,
                            higher_is_better=False)
    for grp, v in zip(rep.group, rep.value):
        assert v == np.mean((a[g == grp] - b[g == grp]) ** 2)
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    rep2 = calipers.by_group(calipers.mean_squared_error, a[perm], b[perm], group_id=g[perm],
                             higher_is_better=False)
    np.testing.assert_array_equal(rep.group, rep2.group)
    np.testing.assert_array_equal(rep.value, rep2.value)


def test_by_group_overall_undefined_warns():
    with pytest.warns(calipers.UndefinedMetricWarning) as rec:
        rep = calipers.by_group(calipers.roc_auc_score, [1, 1], [0.2, 0.4], group_id=[0, 1])
    messages = " | ".join(str(r.message) for r in rec)
    assert "all rows" in messages and "2 of 2 slices" in messages
    assert np.isnan(rep.overall) and rep.n_undefined == 2


def _vector_metric(a, b):
    return np.asarray([1.0, 2.0])


def _raising_metric(a, b):
    raise ValueError("bad slice")


@pytest.mark.parametrize("call, match", [
    (lambda: calipers.by_group(calipers.mean_squared_error, group_id=[0]), "array arguments"),
    (lambda: calipers.by_group(calipers.mean_squared_error, [1.0], [1.0, 2.0], group_id=[0]),
     "argument 1 has 2 rows"),
    (lambda: calipers.by_group(calipers.mean_squared_error, [1.0], [1.0], group_id=[0, 1]),
     "group_id has 2 elements"),
    (lambda: calipers.by_group(calipers.mean_squared_error, [1.0], [1.0], group_id=[[0]]),
     "group_id must be 1-D"),
    (lambda: calipers.by_group(calipers.mean_squared_error, [1.0], [1.0], group_id=[np.nan]),
     "NaN"),
    (lambda: calipers.by_group(calipers.mean_squared_error, [], [], group_id=[]), "empty"),
    (lambda: calipers.by_group(calipers.mean_squared_error, [1.0], [1.0], group_id=[0],
                               min_support=0), "min_support"),
    (lambda: calipers.by_group(calipers.mean_squared_error, [1.0], [1.0], group_id=[0],
                               sample_weight=[1.0, 2.0]), "sample_weight has 2"),
    (lambda: calipers.by_group(_vector_metric, [1.0], [1.0], group_id=[0]), "return a scalar"),
    (lambda: calipers.by_group(_raising_metric, [1.0], [1.0], group_id=[0]), "all rows: bad"),
])
def test_by_group_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_by_group_slice_error_names_the_group():
    def metric(a, b):
        if len(a) < 2:
            raise ValueError("needs 2 rows")
        return float(np.sum(a))
    with pytest.raises(ValueError, match="group 7: needs 2 rows"):
        calipers.by_group(metric, [1.0, 2.0, 3.0], [0, 0, 0], group_id=[1, 1, 7])


def test_renamed_result_fields_stay_readable_with_a_deprecation_warning():
    import warnings as _w

    rep = calipers.by_group(calipers.accuracy_score, [1, 0, 1, 1], [1, 0, 0, 1],
                            group_id=["a", "a", "b", "b"])
    with pytest.warns(DeprecationWarning, match="num_undefined"):
        assert rep.num_undefined == rep.n_undefined
    with pytest.warns(DeprecationWarning, match="unpacking"):
        group, value, *_ = rep
    assert list(group) == list(rep.group)
    acc = calipers.accuracy_with_error([1, 1, 0, 1])
    with pytest.warns(DeprecationWarning, match="ci_low"):
        assert acc.ci_low == acc.confidence_interval.low
    with _w.catch_warnings():
        _w.simplefilter("error")
        assert acc.confidence_interval.high <= 1.0
