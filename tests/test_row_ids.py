"""Bootstrap counts keyed by global row ids: ``bootstrap_counts`` and ``row_ids=``.

References: the public metric functions evaluated with the counts as integer
weights (each replicate by brute force), the replicates without ``row_ids``
(``row_ids=arange(n)`` must give them), and per-partition integer sums added by
hand (the partition property any engine relies on).
"""

import numpy as np
import pytest

import calipers
from calipers import bootstrap_counts, paired_bootstrap, paired_bootstrap_replicates

RNG = np.random.default_rng(2026)
N = 500
Y = RNG.integers(0, 2, N)
A = np.round(RNG.random(N), 2)            # ties on purpose
Bs = np.round(np.clip(0.6 * A + 0.4 * RNG.random(N), 0, 1), 2)
IDS = RNG.choice(10**12, size=N, replace=False).astype(np.int64) + 2**33   # 64-bit ids


def _partitions(n, sizes, rng):
    perm = rng.permutation(n)
    cuts = np.cumsum([0] + list(sizes))
    assert cuts[-1] == n
    return [perm[i:j] for i, j in zip(cuts[:-1], cuts[1:])]


@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "log_loss", "brier"])
def test_arange_ids_are_the_default_replicates(metric):
    kw = dict(n_resamples=40, resampling="poisson", seed=11)
    ra, rb = paired_bootstrap_replicates(metric, Y, A, Bs, **kw)
    ia, ib = paired_bootstrap_replicates(metric, Y, A, Bs, row_ids=np.arange(N), **kw)
    np.testing.assert_array_equal(ra, ia)
    np.testing.assert_array_equal(rb, ib)


def test_replicates_are_the_metric_under_the_counts():
    ra, rb = paired_bootstrap_replicates("roc_auc", Y, A, Bs, n_resamples=30,
                                         resampling="poisson", seed=4, row_ids=IDS)
    counts = bootstrap_counts(IDS, np.arange(30), seed=4)
    assert counts.shape == (30, N) and counts.dtype == np.int64
    for r in range(30):
        assert counts[r].tolist() == bootstrap_counts(IDS, r, seed=4).tolist()
        assert ra[r] == calipers.roc_auc_score(Y, A, sample_weight=counts[r])
        assert rb[r] == calipers.roc_auc_score(Y, Bs, sample_weight=counts[r])


def test_partition_sums_merge_to_one_machine_bit_for_bit():
    """Unequal, shuffled partitions with their global ids: integer sums add up exactly."""
    rng = np.random.default_rng(5)
    R_ = np.arange(64)
    pa, pb = (A > 0.5).astype(int), (Bs > 0.45).astype(int)
    full_c = bootstrap_counts(IDS, R_, seed=9)
    full = np.stack([full_c @ (pa == Y), full_c @ (pb == Y), full_c.sum(1)])
    for sizes in ([1, 499], [250, 3, 100, 147], [7] * 50 + [150]):
        parts = np.zeros_like(full)
        for rows in _partitions(N, sizes, rng):
            c = bootstrap_counts(IDS[rows], R_, seed=9)
            parts += np.stack([c @ (pa[rows] == Y[rows]), c @ (pb[rows] == Y[rows]), c.sum(1)])
        np.testing.assert_array_equal(parts, full)
    # ... and those sums are the one-shot bootstrap's accuracy replicates, bit for bit
    ra, rb = paired_bootstrap_replicates(calipers.accuracy_score, Y, pa, pb, n_resamples=64,
                                         resampling="poisson", seed=9, row_ids=IDS)
    np.testing.assert_array_equal(ra, full[0] / full[2])
    np.testing.assert_array_equal(rb, full[1] / full[2])


def test_partition_of_a_paired_bootstrap_reproduces_its_part():
    """A partition run alone with its ids draws its rows' counts of the full run."""
    rows = np.sort(RNG.choice(N, 123, replace=False))
    full = bootstrap_counts(IDS, np.arange(20), seed=3)
    part = bootstrap_counts(IDS[rows], np.arange(20), seed=3)
    np.testing.assert_array_equal(part, full[:, rows])
    ra, _ = paired_bootstrap_replicates("log_loss", Y[rows], A[rows], Bs[rows], n_resamples=20,
                                        resampling="poisson", seed=3, row_ids=IDS[rows])
    ref = [calipers.log_loss(Y[rows], A[rows], sample_weight=c) for c in part]
    np.testing.assert_allclose(ra, ref, rtol=1e-13)


def test_rows_j_and_j_plus_2_32_draw_independently():
    j = np.arange(4000, dtype=np.int64)
    c = bootstrap_counts(np.concatenate([j, j + 2**32]), np.arange(20), seed=1)
    lo, hi = c[:, :4000], c[:, 4000:]
    assert not np.array_equal(lo, hi)
    # two independent Poisson(1) counts are equal with probability sum_k p_k**2 = 0.3085...
    share = float(np.mean(lo == hi))
    assert 0.29 < share < 0.33, share
    r = np.corrcoef(lo.ravel(), hi.ravel())[0, 1]
    assert abs(r) < 0.02, r
    # ids below 2**32 in a 64-bit dtype hash as 32-bit ones
    np.testing.assert_array_equal(bootstrap_counts(j, 3, seed=1),
                                  bootstrap_counts(j.astype(np.uint32), 3, seed=1))


def test_counts_are_poisson_one():
    c = bootstrap_counts(np.arange(20000) * 7919, np.arange(10), seed=0)
    assert abs(c.mean() - 1) < 0.01 and abs(c.var() - 1) < 0.02
    assert abs(np.mean(c == 0) - np.exp(-1)) < 0.01


def test_jax_counts_and_words_match_numpy():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    ref = bootstrap_counts(IDS, np.arange(5), seed=8)
    got = jax.jit(lambda i: bootstrap_counts(i, jnp.arange(5), seed=8, xp=jnp))(
        jnp.asarray(IDS))
    np.testing.assert_array_equal(np.asarray(got), ref)
    lo = (IDS & 0xFFFFFFFF).astype(np.uint32)
    hi = (IDS >> 32).astype(np.uint32)
    with jax.enable_x64(False):
        w = bootstrap_counts((jnp.asarray(lo), jnp.asarray(hi)), jnp.arange(5, dtype=jnp.int32),
                             seed=8, xp=jnp)
        np.testing.assert_array_equal(np.asarray(w), ref)


@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "brier"])
def test_row_ids_jit_equals_eager(metric):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    kw = dict(n_resamples=24, resampling="poisson", seed=2)
    ea, eb = paired_bootstrap_replicates(metric, Y, A, Bs, row_ids=IDS, **kw)
    f = jax.jit(lambda y, a, b, i: paired_bootstrap_replicates(metric, y, a, b, row_ids=i, **kw))
    ja, jb = f(jnp.asarray(Y), jnp.asarray(A), jnp.asarray(Bs), jnp.asarray(IDS))
    tol = 0 if metric == "roc_auc" else 1e-13
    np.testing.assert_allclose(np.asarray(ja), ea, rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(jb), eb, rtol=tol, atol=tol)
    # a negative id under jit cannot raise: NaN
    bad = jnp.asarray(IDS).at[3].set(-1)
    na, _ = f(jnp.asarray(Y), jnp.asarray(A), jnp.asarray(Bs), bad)
    assert np.isnan(np.asarray(na)).all()


def test_row_ids_in_paired_bootstrap():
    res = paired_bootstrap("roc_auc", Y, A, Bs, n_resamples=50, resampling="poisson", seed=6,
                           row_ids=IDS)
    ra, rb = paired_bootstrap_replicates("roc_auc", Y, A, Bs, n_resamples=50,
                                         resampling="poisson", seed=6, row_ids=IDS)
    np.testing.assert_array_equal(res.distribution_a, ra)
    np.testing.assert_array_equal(res.distribution_b, rb)
    # the ids change the counts: another id set gives other replicates
    other = paired_bootstrap_replicates("roc_auc", Y, A, Bs, n_resamples=50,
                                        resampling="poisson", seed=6, row_ids=IDS + 1)[0]
    assert not np.array_equal(other, ra)


@pytest.mark.parametrize("kw, match", [
    (dict(), "row_ids needs resampling='poisson'"),
    (dict(resampling="poisson", groups=np.arange(N) % 7), "cannot be combined with groups"),
    (dict(resampling="poisson", row_ids=np.arange(N - 1)), r"shape \(500,\)"),
    (dict(resampling="poisson", row_ids=np.zeros(N, dtype=np.int64)), "distinct"),
    (dict(resampling="poisson", row_ids=np.arange(N) - 1), "non-negative"),
    (dict(resampling="poisson", row_ids=np.arange(N) * 1.0), "integers"),
])
def test_row_ids_errors(kw, match):
    kw = {"row_ids": np.arange(N), **kw}
    for fn in (paired_bootstrap, paired_bootstrap_replicates):
        with pytest.raises(ValueError, match=match):
            fn("roc_auc", Y, A, Bs, n_resamples=5, seed=0, **kw)


def test_bootstrap_counts_errors():
    with pytest.raises(ValueError, match="resampling must be 'poisson'"):
        bootstrap_counts(np.arange(3), 0, seed=0, resampling="multinomial")
    with pytest.raises(ValueError, match="replicate must be in"):
        bootstrap_counts(np.arange(3), 2**32, seed=0)
    with pytest.raises(ValueError, match="non-negative"):
        bootstrap_counts(np.array([1, -2]), 0, seed=0)
    with pytest.raises(ValueError, match="integers"):
        bootstrap_counts(np.array([1.0]), 0, seed=0)


def test_one_resampler_counts_are_paired_bootstraps():
    """The unit bootstrap's, off-policy's and the bands' counts are paired_bootstrap's plain rows."""
    from calipers._bootstrap.ratio import ratio_replicates, replicate_counts

    x = RNG.random(N)

    def wmean(y, s, *, sample_weight):
        return np.sum(sample_weight * s) / np.sum(sample_weight)

    ra, _ = paired_bootstrap_replicates(wmean, Y, x, x, n_resamples=25, seed=21)
    counts = np.stack(list(replicate_counts(N, 25, 21)))
    assert (counts.sum(1) == N).all()
    np.testing.assert_allclose(ra, counts @ x / N, rtol=1e-13)
    got = ratio_replicates(x, None, n_resamples=25, seed=21, xp=np)
    np.testing.assert_allclose(got, ra, rtol=1e-13)
    den = (x > 0.5).astype(float)
    got = ratio_replicates(x, den, n_resamples=25, seed=21, xp=np)
    np.testing.assert_allclose(got, (counts @ x) / (counts @ den), rtol=1e-13)
