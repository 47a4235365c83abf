"""many_models_bootstrap: shared resamples, max-T intervals, Romano-Wolf step-down p-values.

References computed here, independently of the library: the pairwise engine
(``paired_bootstrap_replicates``, ``paired_bootstrap``), a type-7 quantile and
the max-T critical value by plain loops, and the step-down p-values from their
set definition (Romano & Wolf 2005, Algorithm 4.1 with p-values as in Romano &
Wolf 2016) by loops over hypotheses and replicates.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import calipers
from calipers._bootstrap.many import romano_wolf

B_SMALL = 300


def _models(n=200, k=4, seed=0, rho=0.5):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.35).astype(np.int64)
    y[:2] = [0, 1]
    common = rng.normal(size=n)
    mus = (0.8, 0.9, 1.1, 1.4, 0.6)[:k]
    scores = [math.sqrt(rho) * common + math.sqrt(1 - rho) * rng.normal(size=n) + mu * y
              for mu in mus]
    return y, scores


@pytest.fixture(scope="module")
def data():
    return _models()


@pytest.fixture(scope="module")
def result(data):
    y, scores = data
    return calipers.many_models_bootstrap(calipers.roc_auc_score, y, *scores,
                                          n_resamples=B_SMALL, seed=7)


# --------------------------------------------------------------------------
# shared resamples: every comparison is the pairwise engine's, bit for bit
# --------------------------------------------------------------------------

@pytest.mark.parametrize("metric,stratify", [("roc_auc", False), ("roc_auc", True),
                                             ("average_precision", True)])
def test_replicates_equal_paired_bootstrap_replicates(data, metric, stratify):
    y, scores = data
    res = calipers.many_models_bootstrap(metric, y, *scores, n_resamples=200, seed=11,
                                         stratify=stratify)
    assert res.comparisons == ((1, 0), (2, 0), (3, 0))
    for j, (a, b) in enumerate(res.comparisons):
        ra, rb = calipers.paired_bootstrap_replicates(metric, y, scores[a], scores[b],
                                                      n_resamples=200, seed=11,
                                                      stratify=stratify)
        np.testing.assert_array_equal(res.distributions[:, a], ra)
        np.testing.assert_array_equal(res.distributions[:, b], rb)
        pb = calipers.paired_bootstrap(metric, y, scores[a], scores[b], n_resamples=200,
                                       seed=11, stratify=stratify)
        np.testing.assert_array_equal(res.bootstrap_distribution[:, j],
                                      pb.bootstrap_distribution)
        assert res.difference[j] == pb.difference
        # the baseline first: the same resamples, every replicate mirrored exactly
        rb2, ra2 = calipers.paired_bootstrap_replicates(metric, y, scores[b], scores[a],
                                                        n_resamples=200, seed=11,
                                                        stratify=stratify)
        np.testing.assert_array_equal(rb2, rb)
        np.testing.assert_array_equal(ra2, ra)


def test_all_pairs_replicates_and_estimates(data):
    y, scores = data
    res = calipers.many_models_bootstrap(calipers.roc_auc_score, y, *scores,
                                         comparisons="all_pairs", n_resamples=100, seed=3)
    assert res.comparisons == ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))
    for i, s in enumerate(scores):
        assert res.estimates[i] == calipers.roc_auc_score(y, s)
    for j, (a, b) in enumerate(res.comparisons):
        pb = calipers.paired_bootstrap(calipers.roc_auc_score, y, scores[a], scores[b],
                                       n_resamples=100, seed=3)
        np.testing.assert_array_equal(res.bootstrap_distribution[:, j],
                                      pb.bootstrap_distribution)
        np.testing.assert_array_equal(res.distributions[:, a], pb.distribution_a)


def test_weight_metric_and_baseline_index(data):
    y, scores = data
    p = [1 / (1 + np.exp(-s)) for s in scores[:3]]
    res = calipers.many_models_bootstrap(calipers.log_loss, y, *p, baseline=2,
                                         n_resamples=60, seed=5)
    assert res.comparisons == ((0, 2), (1, 2))
    for j, (a, b) in enumerate(res.comparisons):
        ra, rb = calipers.paired_bootstrap_replicates(calipers.log_loss, y, p[a], p[b],
                                                      n_resamples=60, seed=5)
        np.testing.assert_array_equal(res.distributions[:, a], ra)
        np.testing.assert_array_equal(res.bootstrap_distribution[:, j], ra - rb)


def test_generator_seed_is_read_once(data):
    # every comparison uses the Generator's first two words (the seed is not consumed per pair)
    y, scores = data
    res = calipers.many_models_bootstrap("roc_auc", y, *scores[:3], n_resamples=50,
                                         seed=np.random.default_rng(42))
    for a, b in res.comparisons:
        ra, rb = calipers.paired_bootstrap_replicates("roc_auc", y, scores[a], scores[b],
                                                      n_resamples=50,
                                                      seed=np.random.default_rng(42))
        np.testing.assert_array_equal(res.distributions[:, a], ra)
        np.testing.assert_array_equal(res.distributions[:, b], rb)


def test_seed_none_still_shares_the_resamples(data):
    # a copy of model 1 as model 2: on shared resamples both comparisons are the same numbers
    y, scores = data
    res = calipers.many_models_bootstrap("roc_auc", y, scores[0], scores[1], scores[1].copy(),
                                         n_resamples=80)
    np.testing.assert_array_equal(res.bootstrap_distribution[:, 0],
                                  res.bootstrap_distribution[:, 1])
    assert np.unique(res.bootstrap_distribution[:, 0]).size > 10


# --------------------------------------------------------------------------
# K = 1: the pairwise bootstrap
# --------------------------------------------------------------------------

@pytest.mark.parametrize("stratify", [False, True])
def test_one_comparison_equals_paired_bootstrap(stratify):
    y, (a, b) = _models(n=40, k=2, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = calipers.many_models_bootstrap("roc_auc", y, a, b, n_resamples=400, seed=2,
                                             stratify=stratify)
        pb = calipers.paired_bootstrap("roc_auc", y, b, a, n_resamples=400, seed=2,
                                       stratify=stratify)
    # comparison (1, 0) is b - a
    assert res.comparisons == ((1, 0),)
    assert res.difference[0] == pb.difference
    assert res.confidence_interval.low[0] == pb.confidence_interval.low
    assert res.confidence_interval.high[0] == pb.confidence_interval.high
    assert res.n_undefined == pb.n_undefined
    assert res.standard_error[0] == pytest.approx(pb.standard_error, rel=1e-12)
    # max-T with one comparison: the symmetric interval d -+ q(|d* - d|); step-down = raw p
    d = pb.bootstrap_distribution[np.isfinite(pb.bootstrap_distribution)]
    q = np.quantile(np.abs(d - pb.difference), 0.95)
    assert res.simultaneous_interval.low[0] == pytest.approx(pb.difference - q, abs=1e-14)
    assert res.simultaneous_interval.high[0] == pytest.approx(pb.difference + q, abs=1e-14)
    assert res.pvalue_romano_wolf[0] == res.pvalue[0]
    assert res.pvalue[0] == pytest.approx(np.mean(np.abs(d - pb.difference)
                                                  >= abs(pb.difference)))


def test_undefined_replicates_counted_and_left_out():
    y, scores = _models(n=12, k=3, seed=1)
    y[:] = 0
    y[3] = 1    # one positive: a resample without it has no AUC
    with pytest.warns(calipers.UndefinedMetricWarning, match="undefined"):
        res = calipers.many_models_bootstrap("roc_auc", y, *scores, n_resamples=400, seed=0)
    bad = ~np.all(np.isfinite(res.bootstrap_distribution), axis=1)
    assert res.n_undefined == int(bad.sum()) > 0
    ok = res.bootstrap_distribution[~bad]
    for j in range(2):
        ci = calipers.bootstrap_interval(ok[:, j], res.difference[j])
        assert (res.confidence_interval.low[j], res.confidence_interval.high[j]) == (ci.low,
                                                                                     ci.high)
    assert np.all(np.isfinite(res.pvalue_romano_wolf))


# --------------------------------------------------------------------------
# max-T interval and step-down p-values against loop references
# --------------------------------------------------------------------------

def _type7(values, p):
    xs = sorted(values)
    h = (len(xs) - 1) * p
    lo = int(math.floor(h))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def _sd(col):
    mean = sum(col) / len(col)
    return math.sqrt(sum((v - mean) ** 2 for v in col) / (len(col) - 1))


def _loop_statistics(dist, d):
    """Per replicate and comparison, |d* - d| / sd, and the observed |d| / sd, by loops."""
    n_rep, m = dist.shape
    sds = [_sd([dist[r, j] for r in range(n_rep)]) for j in range(m)]
    t_rep = [[abs(dist[r, j] - d[j]) / sds[j] for j in range(m)] for r in range(n_rep)]
    t = [abs(d[j]) / sds[j] for j in range(m)]
    return sds, t_rep, t


def test_max_t_interval_matches_a_loop(result):
    dist, d = result.bootstrap_distribution, result.difference
    sds, t_rep, _ = _loop_statistics(dist, d)
    crit = _type7([max(row) for row in t_rep], 0.95)
    assert result.critical_value == pytest.approx(crit, rel=1e-12)
    for j in range(len(d)):
        assert result.standard_error[j] == pytest.approx(sds[j], rel=1e-12)
        assert result.simultaneous_interval.low[j] == pytest.approx(d[j] - crit * sds[j],
                                                                    rel=1e-12, abs=1e-15)
        assert result.simultaneous_interval.high[j] == pytest.approx(d[j] + crit * sds[j],
                                                                     rel=1e-12, abs=1e-15)
        # the simultaneous interval is the wider one in the symmetric sense
        assert crit * sds[j] >= _type7([abs(dist[r, j] - d[j]) for r in range(len(dist))],
                                       0.95) - 1e-15


def _brute_stepdown(t_rep, t):
    """Set definition: p_k = max over i with t_i >= t_k of
    #{r: max_{l: t_l <= t_i} t*_{r,l} >= t_i} / B."""
    m, n_rep = len(t), len(t_rep)
    out = []
    for k in range(m):
        best = 0.0
        for i in range(m):
            if t[i] < t[k]:
                continue
            rest = [l for l in range(m) if t[l] <= t[i]]
            hits = sum(1 for r in range(n_rep) if max(t_rep[r][l] for l in rest) >= t[i])
            best = max(best, hits / n_rep)
        out.append(best)
    return out


def test_romano_wolf_matches_brute_force_and_bounds(result):
    dist, d = result.bootstrap_distribution, result.difference
    _, t_rep, t = _loop_statistics(dist, d)
    want = _brute_stepdown(t_rep, t)
    np.testing.assert_allclose(result.pvalue_romano_wolf, want, rtol=0, atol=1e-15)
    n_rep, m = len(t_rep), len(t)
    raw = [sum(t_rep[r][j] >= t[j] for r in range(n_rep)) / n_rep for j in range(m)]
    np.testing.assert_allclose(result.pvalue, raw, rtol=0, atol=1e-15)
    single = [sum(max(t_rep[r]) >= t[j] for r in range(n_rep)) / n_rep for j in range(m)]
    union = [min(1.0, sum(sum(t_rep[r][l] >= t[j] for r in range(n_rep)) / n_rep
                          for l in range(m))) for j in range(m)]
    p = result.pvalue_romano_wolf
    assert np.all(p >= result.pvalue)
    assert np.all(p <= np.asarray(single) + 1e-15)
    assert np.all(p <= np.asarray(union) + 1e-15)
    order = np.argsort(-np.asarray(t), kind="stable")
    assert np.all(np.diff(p[order]) >= 0)
    # one clearly separated model: the step-down rejects it before the others
    assert p[2] < 0.05 and p.min() == p[2]


@pytest.mark.parametrize("seed", range(5))
def test_romano_wolf_helper_with_ties(seed):
    # integer-valued statistics: many ties within replicates and among the observed ones
    rng = np.random.default_rng(seed)
    m, n_rep = 5, 40
    t_rep = rng.integers(0, 4, (n_rep, m)).astype(float)
    t = rng.integers(0, 5, m).astype(float)
    got = romano_wolf(t_rep, t)
    want = _brute_stepdown(t_rep.tolist(), t.tolist())
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    for i in range(m):
        for j in range(m):
            if t[i] == t[j]:
                assert got[i] == got[j]


def test_romano_wolf_stronger_than_bonferroni_for_copies(data):
    # three copies of one model against a baseline: one test, not three
    y, scores = data
    s = scores[3]
    res = calipers.many_models_bootstrap("roc_auc", y, scores[0], s, s.copy(), s.copy(),
                                         n_resamples=B_SMALL, seed=9)
    assert np.all(res.pvalue_romano_wolf == res.pvalue)
    one = calipers.many_models_bootstrap("roc_auc", y, scores[0], s, n_resamples=B_SMALL,
                                         seed=9)
    # (the standard deviations of a 2-D array round a little differently from one column's)
    assert res.critical_value == pytest.approx(one.critical_value, rel=1e-12)
    np.testing.assert_allclose(res.simultaneous_interval.low,
                               np.repeat(one.simultaneous_interval.low, 3), rtol=1e-12)


def test_identical_models_are_not_divided_by_zero(data):
    y, scores = data
    with pytest.warns(calipers.BootstrapDesignWarning, match="1 distinct"):
        res = calipers.many_models_bootstrap("roc_auc", y, scores[0], scores[0].copy(),
                                             scores[1], n_resamples=100, seed=1)
    assert res.standard_error[0] == 0 and res.difference[0] == 0
    assert res.pvalue[0] == 1 and res.pvalue_romano_wolf[0] == 1
    assert res.simultaneous_interval.low[0] == res.simultaneous_interval.high[0] == 0
    assert np.isfinite(res.critical_value)


# --------------------------------------------------------------------------
# bad arguments
# --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    ({"comparisons": "pairs"}, "comparisons must be one of"),
    ({"baseline": 3}, "baseline must be the index"),
    ({"baseline": -1}, "baseline must be an integer >= 0"),
    ({"baseline": True}, "baseline must be an integer >= 0"),
    ({"baseline": 1.0}, "baseline must be an integer >= 0"),
    ({"n_resamples": 0}, "n_resamples must be an integer >= 1"),
    ({"confidence_level": 1.0}, "confidence_level must be a real number in"),
    ({"resampling": "binomial"}, "resampling must be one of"),
    ({"stratify": True, "block_length": 3}, "choose one resampling design"),
])
def test_bad_options(data, kwargs, match):
    y, scores = data
    with pytest.raises(ValueError, match=match):
        calipers.many_models_bootstrap("roc_auc", y, *scores[:3], seed=0,
                                       **{"n_resamples": 10, **kwargs})


def test_bad_inputs(data):
    y, scores = data
    with pytest.raises(ValueError, match="at least two models"):
        calipers.many_models_bootstrap("roc_auc", y, scores[0], seed=0)
    with pytest.raises(ValueError, match=r"y_scores\[1\] has 199 rows"):
        calipers.many_models_bootstrap("roc_auc", y, scores[0], scores[1][:-1], seed=0)
    with pytest.raises(ValueError, match=r"y_scores\[2\]"):
        calipers.many_models_bootstrap("roc_auc", y, scores[0], scores[1],
                                       np.stack([scores[2]] * 2, axis=1), seed=0)
    bad = scores[1].copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match=r"y_scores\[1\]"):
        calipers.many_models_bootstrap("roc_auc", y, scores[0], bad, seed=0)
    with pytest.raises(ValueError, match="y_true"):
        calipers.many_models_bootstrap("roc_auc", y + 2, scores[0], scores[1], seed=0)
    with pytest.raises(ValueError, match="seed"):
        calipers.many_models_bootstrap("roc_auc", y, scores[0], scores[1], seed=-1)


# --------------------------------------------------------------------------
# backends
# --------------------------------------------------------------------------

def test_jax_eager_equals_numpy(data):
    jnp = pytest.importorskip("jax.numpy")
    y, scores = data
    ref = calipers.many_models_bootstrap("roc_auc", y, *scores[:3], n_resamples=64, seed=4,
                                         stratify=True)
    got = calipers.many_models_bootstrap("roc_auc", jnp.asarray(y),
                                         *[jnp.asarray(s) for s in scores[:3]],
                                         n_resamples=64, seed=4, stratify=True)
    np.testing.assert_array_equal(got.bootstrap_distribution, ref.bootstrap_distribution)
    np.testing.assert_array_equal(got.distributions, ref.distributions)
    np.testing.assert_array_equal(got.pvalue_romano_wolf, ref.pvalue_romano_wolf)
    assert got.critical_value == ref.critical_value
    np.testing.assert_array_equal(got.simultaneous_interval.low, ref.simultaneous_interval.low)


def test_result_is_a_pytree(result):
    jax = pytest.importorskip("jax")
    leaves, tree = jax.tree_util.tree_flatten(result)
    back = jax.tree_util.tree_unflatten(tree, leaves)
    assert back.comparisons == result.comparisons
    np.testing.assert_array_equal(back.pvalue_romano_wolf, result.pvalue_romano_wolf)
