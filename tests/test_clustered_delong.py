"""Clustered DeLong (Obuchowski 1997) against a direct computation of its formula
from O(P * N) placements, and its reductions (one row per cluster = DeLong)."""

import math

import numpy as np
import pytest

import calipers


def _direct(y, a, b, g):
    """Obuchowski's variance of AUC_a - AUC_b, written out from the paper's sums."""
    y, g = np.asarray(y), np.asarray(g)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    P, N = len(pos), len(neg)
    clusters = sorted(set(g.tolist()))

    def placements(s):
        v10 = {i: sum((s[i] > s[j]) + 0.5 * (s[i] == s[j]) for j in neg) / N for i in pos}
        v01 = {j: sum((s[i] > s[j]) + 0.5 * (s[i] == s[j]) for i in pos) / P for j in neg}
        return v10, v01, sum(v10.values()) / P

    comps = [placements(np.asarray(s)) for s in (a, b)]
    m = {c: int(np.sum((g == c) & (y == 1))) for c in clusters}
    n = {c: int(np.sum((g == c) & (y == 0))) for c in clusters}
    I10 = sum(m[c] > 0 for c in clusters)
    I01 = sum(n[c] > 0 for c in clusters)
    I = len(clusters)

    def d10(r, c):
        v10, _, auc = comps[r]
        return sum(v10[i] for i in pos if g[i] == c) - m[c] * auc

    def d01(r, c):
        _, v01, auc = comps[r]
        return sum(v01[j] for j in neg if g[j] == c) - n[c] * auc

    def cov(r, s):
        s10 = I10 / ((I10 - 1) * P) * sum(d10(r, c) * d10(s, c) for c in clusters)
        s01 = I01 / ((I01 - 1) * N) * sum(d01(r, c) * d01(s, c) for c in clusters)
        s11 = I / (I - 1) * sum(d10(r, c) * d01(s, c) + d10(s, c) * d01(r, c)
                                for c in clusters) / 2
        return s10 / P + s01 / N + 2 * s11 / (P * N)

    var = cov(0, 0) + cov(1, 1) - 2 * cov(0, 1)
    return comps[0][2] - comps[1][2], math.sqrt(var)


def _clustered(rng, n_clusters=12, size=(1, 6)):
    sizes = rng.integers(size[0], size[1] + 1, n_clusters)
    g = np.repeat(np.arange(n_clusters), sizes)
    y = rng.integers(0, 2, g.size)
    effect = rng.normal(0, 1, n_clusters)[g]
    a = np.round(y + effect + rng.normal(0, 1, g.size), 1)   # ties
    b = np.round(0.5 * y + effect + rng.normal(0, 1, g.size), 1)
    return y, a, b, g


@pytest.mark.parametrize("seed", range(5))
def test_matches_direct_formula(seed):
    y, a, b, g = _clustered(np.random.default_rng(seed))
    diff, se = _direct(y, a, b, g)
    res = calipers.delong_test(y, a, b, groups=g)
    assert res.difference == pytest.approx(diff, abs=1e-12)
    assert res.standard_error == pytest.approx(se, rel=1e-10)


def test_one_row_per_cluster_is_delong():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 60)
    a, b = np.round(rng.normal(size=60) + y, 1), np.round(rng.normal(size=60), 1)
    plain = calipers.delong_test(y, a, b)
    clustered = calipers.delong_test(y, a, b, groups=np.arange(60)[::-1])
    assert clustered.standard_error == pytest.approx(plain.standard_error, rel=1e-12)
    assert clustered.pvalue == pytest.approx(plain.pvalue, rel=1e-10)


def test_string_ids_relabelling_and_row_order_do_not_matter():
    y, a, b, g = _clustered(np.random.default_rng(4))
    ref = calipers.delong_test(y, a, b, groups=g)
    names = np.array([f"user-{k * 7 % 13}" for k in g])
    perm = np.random.default_rng(5).permutation(len(y))
    res = calipers.delong_test(y[perm], a[perm], b[perm], groups=names[perm])
    assert res.standard_error == pytest.approx(ref.standard_error, rel=1e-12)


def test_jit_with_static_num_groups_equals_eager():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    y, a, b, g = _clustered(np.random.default_rng(6))
    ref = calipers.delong_test(y, a, b, groups=g)
    f = jax.jit(lambda y, a, b, g: calipers.delong_test(y, a, b, groups=g, num_groups=12))
    out = f(jnp.asarray(y), jnp.asarray(a), jnp.asarray(b), jnp.asarray(g))
    assert float(out.standard_error) == pytest.approx(float(ref.standard_error), rel=1e-5)


def test_too_few_clusters_is_undefined_with_warning():
    y = np.array([1, 0, 1, 0, 1, 0])
    a = np.array([.9, .1, .8, .3, .7, .2])
    with pytest.warns(calipers.UndefinedMetricWarning, match="2 clusters"):
        res = calipers.delong_test(y, a, a[::-1], groups=np.zeros(6, int))
    assert np.isnan(res.pvalue)


def test_groups_length_checked():
    with pytest.raises(ValueError, match="groups"):
        calipers.delong_test([0, 1, 0, 1], [.1, .9, .2, .8], [.2, .8, .1, .9], groups=[0, 1])


# ---------------------------------------------------------------------------
# small-sample correction: Student's t with C - 1 degrees of freedom
# ---------------------------------------------------------------------------

def _both_classes_per_cluster(rng, n_clusters, size=4):
    """Clusters of ``size`` rows, each holding both classes (so I10 = I01 = I = C)."""
    g = np.repeat(np.arange(n_clusters), size)
    y = np.tile(np.array([1, 0] * (size // 2)), n_clusters)
    effect = rng.normal(0, 1, n_clusters)[g]
    a = np.round(y + effect + rng.normal(0, 1, g.size), 2)
    b = np.round(0.6 * y + effect + rng.normal(0, 1, g.size), 2)
    return y, a, b, g


def _cr0_variance(y, a, b, g):
    """The cluster-robust sandwich without any degrees-of-freedom factor ("CR0"):
    sum over clusters of the squared cluster influence of AUC_a - AUC_b, each influence
    (V10 sum - m AUC) / P + (V01 sum - n AUC) / N from brute-force placements."""
    y, g = np.asarray(y), np.asarray(g)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    P, N = len(pos), len(neg)

    def influence(s):
        s = np.asarray(s, float)
        h = (s[pos][:, None] > s[neg][None, :]) + 0.5 * (s[pos][:, None] == s[neg][None, :])
        v10, v01 = h.mean(axis=1), h.mean(axis=0)
        auc = h.mean()
        out = {}
        for c in np.unique(g):
            d10 = v10[g[pos] == c].sum() - np.sum(g[pos] == c) * auc
            d01 = v01[g[neg] == c].sum() - np.sum(g[neg] == c) * auc
            out[c] = d10 / P + d01 / N
        return out

    ia, ib = influence(a), influence(b)
    return sum((ia[c] - ib[c]) ** 2 for c in ia)


@pytest.mark.parametrize("seed", range(3))
def test_variance_already_carries_the_cr1_factor(seed):
    """Obuchowski's variance is the CR0 sandwich times C / (C - 1) when every cluster holds
    both classes: the small-sample option must not apply that factor a second time."""
    C = 9
    y, a, b, g = _both_classes_per_cluster(np.random.default_rng(seed), C)
    cr0 = _cr0_variance(y, a, b, g)
    for small in (False, True):
        res = calipers.delong_test(y, a, b, groups=g, small_sample=small)
        assert res.standard_error ** 2 == pytest.approx(C / (C - 1) * cr0, rel=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_small_sample_uses_t_with_c_minus_1_df(seed):
    st = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(10 + seed)
    y, a, b, g = _clustered(rng, n_clusters=8 + 3 * seed)
    C = len(np.unique(g))
    for level in (0.9, 0.95):
        ref = calipers.delong_test(y, a, b, groups=g, confidence_level=level)
        res = calipers.delong_test(y, a, b, groups=g, confidence_level=level, small_sample=True)
        z, se, d = float(ref.statistic), float(ref.standard_error), float(ref.difference)
        assert res.statistic == ref.statistic and res.standard_error == ref.standard_error
        assert res.pvalue == pytest.approx(2 * st.t.sf(abs(z), C - 1), rel=1e-12)
        q = st.t.ppf((1 + level) / 2, C - 1)
        assert res.confidence_interval.low == pytest.approx(d - q * se, rel=1e-12)
        assert res.confidence_interval.high == pytest.approx(d + q * se, rel=1e-12)
        assert res.pvalue > ref.pvalue        # heavier tails: weaker evidence, wider interval
    for alt, ref_p in (("greater", st.t.sf(z, C - 1)), ("less", st.t.cdf(z, C - 1))):
        res = calipers.delong_test(y, a, b, groups=g, alternative=alt, small_sample=True)
        assert res.pvalue == pytest.approx(ref_p, rel=1e-12)


def test_small_sample_without_groups_uses_rows():
    st = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(21)
    y = rng.integers(0, 2, 30)
    a, b = rng.normal(size=30) + y, rng.normal(size=30) + 0.3 * y
    ref = calipers.delong_test(y, a, b)
    res = calipers.delong_test(y, a, b, small_sample=True)
    assert res.pvalue == pytest.approx(2 * st.t.sf(abs(float(ref.statistic)), 29), rel=1e-12)


def test_two_clusters_is_cauchy():
    """C = 2: one degree of freedom, t_1 is the Cauchy law (closed form, no scipy)."""
    y = np.array([1, 0, 1, 0, 1, 0, 1, 0])
    a = np.array([.9, .2, .7, .4, .8, .1, .6, .5])
    b = np.array([.6, .3, .9, .1, .5, .4, .7, .2])
    g = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    ref = calipers.delong_test(y, a, b, groups=g)
    res = calipers.delong_test(y, a, b, groups=g, small_sample=True)
    z = abs(float(ref.statistic))
    assert res.pvalue == pytest.approx(1 - 2 * math.atan(z) / math.pi, rel=1e-12)
    q = math.tan(math.pi * (0.975 - 0.5))
    assert res.confidence_interval.high == pytest.approx(
        float(ref.difference) + q * float(ref.standard_error), rel=1e-12)


def test_many_clusters_converge_to_normal():
    y, a, b, g = _both_classes_per_cluster(np.random.default_rng(7), 3000, size=2)
    ref = calipers.delong_test(y, a, b, groups=g)
    res = calipers.delong_test(y, a, b, groups=g, small_sample=True)
    assert abs(res.pvalue - ref.pvalue) < 1e-3
    width = float(ref.confidence_interval.high - ref.confidence_interval.low)
    width_t = float(res.confidence_interval.high - res.confidence_interval.low)
    assert 1 < width_t / width < 1 + 1e-3
    # and the gap shrinks with C
    gaps = []
    for C in (5, 20, 80):
        y, a, b, g = _both_classes_per_cluster(np.random.default_rng(C), C)
        r0 = calipers.delong_test(y, a, b, groups=g)
        r1 = calipers.delong_test(y, a, b, groups=g, small_sample=True)
        gaps.append(float((r1.confidence_interval.high - r1.confidence_interval.low)
                          / (r0.confidence_interval.high - r0.confidence_interval.low)))
    assert gaps[0] > gaps[1] > gaps[2] > 1


def test_small_sample_jit_equals_eager():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    y, a, b, g = _clustered(np.random.default_rng(6))
    for alt in ("greater",):      # one compile: the tail and the quantile both run
        ref = calipers.delong_test(y, a, b, groups=g, small_sample=True, alternative=alt)
        f = jax.jit(lambda y, a, b, g: calipers.delong_test(
            y, a, b, groups=g, num_groups=12, small_sample=True, alternative=alt))
        out = f(jnp.asarray(y), jnp.asarray(a), jnp.asarray(b), jnp.asarray(g))
        assert float(out.pvalue) == pytest.approx(float(ref.pvalue), rel=1e-5)
        assert float(out.confidence_interval.low) == pytest.approx(
            float(ref.confidence_interval.low), rel=1e-5)


def test_small_sample_must_be_a_bool():
    with pytest.raises(ValueError, match="small_sample"):
        calipers.delong_test([0, 1, 0, 1], [.1, .9, .2, .8], [.2, .8, .1, .9], small_sample="yes")
