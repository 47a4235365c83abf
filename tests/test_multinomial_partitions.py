"""The default multinomial bootstrap drawn in two passes over partitions of the rows.

``multinomial_totals`` (pass 1, summed over partitions) and ``multinomial_counts`` (pass 2)
against the one-machine counts of ``paired_bootstrap``'s default design (``row_counts`` of the
plain multinomial design, the integers its replicates are computed from), over random
partitionings, sizes with and without a Poisson part, and replicates forced onto the direct
draw.
"""

import importlib.util

import numpy as np
import pytest

import calipers
from calipers._bootstrap import resample as RS

RNG = np.random.default_rng(20240611)


def _one_machine(n, seed, B):
    d = RS.make_design("plain", n)
    words = RS.seed_words(seed)
    return np.stack([RS.row_counts(d, (), words, r, np, np.int64) for r in range(B)])


def _random_parts(n, rng, shuffle=False):
    k = int(rng.integers(1, 6))
    cuts = [0, *np.sort(rng.integers(0, n + 1, k - 1)).tolist(), n]     # empty parts too
    parts = [np.arange(a, b) for a, b in zip(cuts[:-1], cuts[1:])]
    if shuffle:
        perm = rng.permutation(n)
        parts = [perm[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
    return parts


def _two_pass(parts, n, seed, B, xp=np):
    reps = xp.arange(B)
    totals = sum(calipers.multinomial_totals(xp.asarray(p), reps, n=n, seed=seed, xp=xp)
                 for p in parts)
    return [np.asarray(calipers.multinomial_counts(xp.asarray(p), reps, totals, n=n,
                                                   seed=seed, xp=xp)) for p in parts]


def _assemble(parts, counts, n, B):
    out = np.full((B, n), -1, np.int64)
    for p, c in zip(parts, counts):
        out[:, p] = c
    return out


@pytest.mark.parametrize("n", [1, 2, 9, 25, 26, 101, 2000, 30011])
def test_partitions_concatenate_to_the_one_machine_counts(n):
    B, seed = 12, int(RNG.integers(0, 2**31))
    ref = _one_machine(n, seed, B)
    assert (ref.sum(axis=1) == n).all()
    for shuffle in (False, True, False):
        parts = _random_parts(n, RNG, shuffle)
        got = _assemble(parts, _two_pass(parts, n, seed, B), n, B)
        np.testing.assert_array_equal(got, ref)


def test_the_counts_are_the_replicates_of_paired_bootstrap():
    # an independent read of the one-machine counts: the replicates as weighted means
    n, B = 500, 30
    y = RNG.integers(0, 2, n)
    pa, pb = RNG.integers(0, 2, n), RNG.integers(0, 2, n)
    ra, rb = calipers.paired_bootstrap_replicates(calipers.accuracy_score, y, pa, pb,
                                                  n_resamples=B, seed=8)
    parts = _random_parts(n, RNG)
    c = np.concatenate(_two_pass(parts, n, 8, B), axis=1)
    np.testing.assert_array_equal(c @ (pa == y) / n, ra)
    np.testing.assert_array_equal(c @ (pb == y) / n, rb)


def test_only_the_whole_totals_give_the_counts():
    # totals of one partition only: the top-up goes wrong (a test that can fail)
    n, B = 3000, 10
    parts = [np.arange(0, 1000), np.arange(1000, n)]
    t0 = calipers.multinomial_totals(parts[0], np.arange(B), n=n, seed=1)
    c = calipers.multinomial_counts(parts[0], np.arange(B), t0, n=n, seed=1)
    assert not np.array_equal(c, _one_machine(n, 1, B)[:, :1000])


@pytest.mark.parametrize("plan", [(0.0, 10.0), (5.0, 5.0)], ids=["total-above-n",
                                                                  "too-many-missing"])
def test_fallback_replicates_are_drawn_per_partition(monkeypatch, plan):
    """lam = 1 (the total passes n about half the time) or M = 5 sqrt(n) (too many
    missing about half the time): replicates of both kinds, each partition drawing the
    direct replicates' n draws itself."""
    monkeypatch.setattr(RS, "_TOPUP_SIGMAS", plan[0])
    monkeypatch.setattr(RS, "_TOPUP_BOUND", plan[1])
    monkeypatch.setattr(RS, "_DIRECT_CHUNK", 97)       # the direct draws in chunks
    RS.topup_plan.cache_clear()
    try:
        n, B, seed = 700, 24, 3
        thresholds, M = RS.topup_plan(n)
        ref = _one_machine(n, seed, B)
        parts = _random_parts(n, RNG, shuffle=True)
        tot = sum(calipers.multinomial_totals(p, np.arange(B), n=n, seed=seed) for p in parts)
        fallback = (tot > n) | (n - tot > M)
        assert fallback.any() and not fallback.all()
        got = _assemble(parts, _two_pass(parts, n, seed, B), n, B)
        np.testing.assert_array_equal(got, ref)
        if importlib.util.find_spec("jax") is not None:
            _check_jax(parts, n, seed, B, ref)
    finally:
        RS.topup_plan.cache_clear()


def test_past_the_plan_every_replicate_is_direct(monkeypatch):
    monkeypatch.setattr(RS, "topup_plan", lambda n: None)
    n, B = 400, 5
    ref = _one_machine(n, 4, B)
    parts = _random_parts(n, RNG)
    tot = sum(calipers.multinomial_totals(p, np.arange(B), n=n, seed=4) for p in parts)
    assert (tot == 0).all()
    np.testing.assert_array_equal(_assemble(parts, _two_pass(parts, n, 4, B), n, B), ref)


def _check_jax(parts, n, seed, B, ref):
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        got = _assemble(parts, _two_pass(parts, n, seed, B, jnp), n, B)
        np.testing.assert_array_equal(got, ref)
        p = jnp.asarray(parts[0])
        tot = sum(calipers.multinomial_totals(jnp.asarray(q), jnp.arange(B), n=n, seed=seed,
                                              xp=jnp) for q in parts)
        f = jax.jit(lambda p, t: calipers.multinomial_counts(p, jnp.arange(B), t, n=n,
                                                             seed=seed, xp=jnp))
        np.testing.assert_array_equal(np.asarray(f(p, tot)), ref[:, parts[0]])


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax not installed")
@pytest.mark.parametrize("x64", [True, False])
def test_jax_equals_numpy(x64):
    import jax
    import jax.numpy as jnp

    n, B, seed = 900, 8, 6
    ref = _one_machine(n, seed, B)
    parts = _random_parts(n, RNG, shuffle=True)
    with jax.enable_x64(x64):
        got = _assemble(parts, _two_pass(parts, n, seed, B, jnp), n, B)
    np.testing.assert_array_equal(got, ref)


def test_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"rows must be row positions in \[0, n\)"):
        calipers.multinomial_totals(np.array([0, 10]), 0, n=10, seed=0)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        calipers.multinomial_totals(np.arange(3), 0, n=0, seed=0)
    with pytest.raises(ValueError, match="rows must be a 1-D integer array"):
        calipers.multinomial_totals(np.zeros(3), 0, n=10, seed=0)
    with pytest.raises(ValueError, match="replicate"):
        calipers.multinomial_totals(np.arange(3), -1, n=10, seed=0)
    with pytest.raises(ValueError, match="totals must hold one integer per replicate"):
        calipers.multinomial_counts(np.arange(3), np.arange(4), np.zeros(3, np.int64), n=10,
                                    seed=0)
    with pytest.raises(ValueError, match="totals must be non-negative"):
        calipers.multinomial_counts(np.arange(3), np.arange(2), np.array([1, -1]), n=10,
                                    seed=0)
    # an int replicate gives one row of counts
    t = calipers.multinomial_totals(np.arange(10), 2, n=10, seed=0)
    c = calipers.multinomial_counts(np.arange(10), 2, t, n=10, seed=0)
    np.testing.assert_array_equal(c, _one_machine(10, 0, 3)[2])
