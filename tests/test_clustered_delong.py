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
