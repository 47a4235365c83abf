"""Off-policy estimates: IPS, SNIPS, DM, DR, clipping vs flooring, ESS, bootstrap (H30, H31)."""

from __future__ import annotations

import json
import math
import warnings
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

from calipers._bootstrap.ratio import replicate_counts
import calipers
from calipers import UndefinedMetricWarning
from conftest import close, to_np

DATA = Path(__file__).parent / "data"


def fr(rows):
    return np.array([[float(F(x)) for x in r] for r in rows]) if isinstance(rows[0], list) \
        else np.array([float(F(x)) for x in rows])


# Handed case H30 (st-tech/zr-obp#115, #187; Strehl et al. 2010): inputs copied literally.
H30 = dict(
    action=np.array([0, 1, 2, 0, 1, 2]),
    pscore=fr(["1/2", "1/4", "1/8", "1/4", "1/2", "1/4"]),
    reward=np.array([1, 0, 1, 1, 1, 0], dtype=float),
    pi_e=fr([["1/2", "1/4", "1/4"], ["1/4", "1/2", "1/4"], ["1/4", "0", "3/4"],
             ["3/4", "1/4", "0"], ["1/2", "1/4", "1/4"], ["0", "1/2", "1/2"]]),
    q_hat=fr([["3/4", "1/4", "1/2"], ["1/2", "1/4", "1/4"], ["1/4", "1/4", "3/4"],
              ["3/4", "1/2", "1/4"], ["1/2", "3/4", "1/4"], ["1/4", "1/2", "1/4"]]),
)
H30_EXPECTED = {  # (ips, snips, dr) per option; obp 0.5.7 agrees on the unclipped and lambda_ rows
    "none": ({}, 1.75, 0.7241379310344828, 0.78125),
    "max_weight=2": ({"max_weight": 2}, 0.9166666666666666, 0.5789473684210527,
                     0.5729166666666666),
    "min_propensity=1/4": ({"min_propensity": 0.25}, 1.25, 0.6521739130434783, 0.65625),
}
# Handed case H31 (causallib#9, CausalPy#649, zr-obp#187): every logged action has pi_e = 0.
H31_PI_E = fr([["0", "1/4", "3/4"], ["1/4", "0", "3/4"], ["1/2", "1/2", "0"],
               ["0", "1/4", "3/4"], ["1/4", "0", "3/4"], ["1/2", "1/2", "0"]])


def estimators(backend, reward, pscore, pi_e, q_hat, action, **opts):
    ips = backend.call(lambda r, p, t, a: calipers.ips_estimate(r, p, t, action=a, **opts),
                       reward, pscore, pi_e, action)
    snips = backend.call(lambda r, p, t, a: calipers.snips_estimate(r, p, t, action=a, **opts),
                         reward, pscore, pi_e, action)
    dr = backend.call(lambda r, p, t, q, a: calipers.doubly_robust_estimate(
        r, p, t, q, action=a, **opts), reward, pscore, pi_e, q_hat, action)
    return ips, snips, dr


@pytest.mark.parametrize("case", sorted(H30_EXPECTED))
def test_h30_clipping_vs_flooring(backend, case):
    opts, ips, snips, dr = H30_EXPECTED[case]
    got = estimators(backend, H30["reward"], H30["pscore"], H30["pi_e"], H30["q_hat"],
                     H30["action"], **opts)
    for g, want in zip(got, (ips, snips, dr)):
        close(g, want, backend, atol=1e-12)


def test_h30_weights_and_dm(backend):
    w = backend.call(lambda p, t, a: calipers.importance_weights(p, t, action=a),
                     H30["pscore"], H30["pi_e"], H30["action"])
    close(w, [1.0, 2.0, 6.0, 3.0, 0.5, 2.0], backend)
    close(backend.call(calipers.direct_method_estimate, H30["pi_e"], H30["q_hat"]),
          0.5104166666666666, backend, atol=1e-12)
    # the flat form (pi_e of the logged action) gives the same weights
    flat = H30["pi_e"][np.arange(6), H30["action"]]
    close(backend.call(calipers.importance_weights, H30["pscore"], flat), to_np(w), backend)


def test_h30_both_options_floor_then_cap():
    p, t, a = H30["pscore"], H30["pi_e"], H30["action"]
    w = calipers.importance_weights(p, t, action=a, min_propensity=0.25, max_weight=2)
    pe = t[np.arange(6), a]
    np.testing.assert_array_equal(w, np.minimum(pe / np.maximum(p, 0.25), 2))


def test_h31_all_weights_zero(backend):
    r, p, a, q = H30["reward"], H30["pscore"], H30["action"], H30["q_hat"]
    eager = not backend.jit
    ctx = pytest.warns(UndefinedMetricWarning, match="sum of the importance weights is 0") \
        if eager else warnings.catch_warnings()
    with ctx:
        ips, snips, dr = estimators(backend, r, p, H31_PI_E, q, a)
    close(ips, 0.0, backend)
    assert math.isnan(float(to_np(snips)))  # 0/0 is undefined, never 0
    close(dr, 1 / 3, backend, atol=1e-12)
    close(backend.call(calipers.direct_method_estimate, H31_PI_E, q), 1 / 3, backend, atol=1e-12)
    w = backend.call(lambda p_, t, a_: calipers.importance_weights(p_, t, action=a_), p,
                     H31_PI_E, a)
    close(backend.call(calipers.effective_sample_size, w), 0.0, backend)


def test_h31_zero_propensity_raises():
    p = H30["pscore"].copy()
    p[0] = 0.0
    with pytest.raises(ValueError, match=r"propensity must be in \(0, 1\]"):
        calipers.ips_estimate(H30["reward"], p, H30["pi_e"], action=H30["action"])


def test_jit_invalid_gives_nan():
    import jax
    import jax.numpy as jnp
    p = jnp.asarray(H30["pscore"]).at[0].set(0.0)
    f = jax.jit(lambda r, p_, t, a: calipers.ips_estimate(r, p_, t, action=a))
    assert math.isnan(float(f(jnp.asarray(H30["reward"]), p, jnp.asarray(H30["pi_e"]),
                              jnp.asarray(H30["action"]))))


# --------------------------------------------------------------------------
# independent computation: exact fractions on random logged data
# --------------------------------------------------------------------------

def test_against_exact_fractions(backend):
    rng = np.random.default_rng(4)
    n, K = 40, 4
    cuts = np.sort(rng.integers(0, 9, size=(n, K - 1)), axis=1)
    pe = np.diff(np.concatenate([np.zeros((n, 1), int), cuts, np.full((n, 1), 8)], 1), axis=1) / 8
    a = rng.integers(0, K, n)
    p = rng.integers(1, 9, n) / 8
    r = rng.integers(0, 3, n).astype(float)
    q = rng.integers(0, 5, size=(n, K)) / 4
    lam, tau = F(3, 2), F(1, 4)
    for opts, cap, floor in (({}, None, None), ({"max_weight": 1.5}, lam, None),
                             ({"min_propensity": 0.25}, None, tau)):
        W, DM = [], []
        for i in range(n):
            pb = F(p[i]) if floor is None else max(F(p[i]), floor)
            w = F(pe[i, a[i]]) / pb
            W.append(w if cap is None else min(w, cap))
            DM.append(sum(F(pe[i, j]) * F(q[i, j]) for j in range(K)))
        R = [F(x) for x in r]
        ips = sum(w * x for w, x in zip(W, R)) / n
        snips = sum(w * x for w, x in zip(W, R)) / sum(W)
        dr = sum(dm + w * (x - F(q[i, a[i]])) for i, (dm, w, x) in enumerate(zip(DM, W, R))) / n
        ess = sum(W) ** 2 / sum(w * w for w in W)
        got = estimators(backend, r, p, pe, q, a, **opts)
        for g, want in zip(got, (ips, snips, dr)):
            close(g, float(want), backend, atol=1e-12)
        w = backend.call(lambda p_, t, a_: calipers.importance_weights(p_, t, action=a_, **opts),
                         p, pe, a)
        close(backend.call(calipers.effective_sample_size, w), float(ess), backend)


def test_obp_anchor(backend):
    """Open Bandit Pipeline 0.4.1 on the same logged data (tests/data/gen_offpolicy_anchors.py)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_offpolicy_anchors",
                                                  DATA / "gen_offpolicy_anchors.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    ref = json.loads((DATA / "offpolicy_anchors.json").read_text())
    r, a, p, pe, q = gen.logged_data()
    ips, snips, dr = estimators(backend, r, p, pe, q, a)
    close(ips, ref["ips"], backend, atol=1e-12)
    close(snips, ref["snips"], backend, atol=1e-12)
    close(dr, ref["dr"], backend, atol=1e-12)
    close(backend.call(calipers.direct_method_estimate, pe, q), ref["dm"], backend, atol=1e-12)


def test_ess_properties():
    assert calipers.effective_sample_size(np.ones(7)) == 7
    assert calipers.effective_sample_size([0.0, 3.0, 0.0]) == 1
    with pytest.raises(ValueError, match="non-negative"):
        calipers.effective_sample_size([1.0, -1.0])


@pytest.mark.parametrize("kwargs,match", [
    ({"max_weight": 0}, "max_weight must be > 0"),
    ({"min_propensity": 1.5}, r"min_propensity must be in \(0, 1\]"),
    ({"max_weight": "2"}, "max_weight must be a positive number"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        calipers.ips_estimate(H30["reward"], H30["pscore"], H30["pi_e"], action=H30["action"],
                              **kwargs)


def test_bad_inputs():
    r, p, t, a, q = H30["reward"], H30["pscore"], H30["pi_e"], H30["action"], H30["q_hat"]
    with pytest.raises(ValueError, match="action is required"):
        calipers.ips_estimate(r, p, t)
    with pytest.raises(ValueError, match="sum to 1"):
        calipers.ips_estimate(r, p, t * 0.9, action=a)
    with pytest.raises(ValueError, match="action must be an index"):
        calipers.ips_estimate(r, p, t, action=a + 1)
    with pytest.raises(ValueError, match="estimated_rewards has shape"):
        calipers.doubly_robust_estimate(r, p, t, q[:, :2], action=a)
    with pytest.raises(ValueError, match="action .* is required"):
        calipers.doubly_robust_estimate(r, p, t, q, action=None)
    with pytest.raises(ValueError, match="propensity has 6 elements but reward has 5"):
        calipers.ips_estimate(r[:5], p, t, action=a)
    with pytest.raises(ValueError, match="target must hold probabilities"):
        calipers.ips_estimate(r, p, np.full(6, 1.5))


# --------------------------------------------------------------------------
# bootstrap intervals
# --------------------------------------------------------------------------

def reference_bootstrap(num, den, n, seed, B, level):
    # the one resampler's multinomial row counts (paired_bootstrap's plain rows), the rows
    # repeated by their counts explicitly
    reps = []
    for c in replicate_counts(n, B, seed):
        row = np.repeat(np.arange(n), c)
        s = num[row].sum()
        if den is None:
            reps.append(s / n)
        else:
            t = den[row].sum()
            reps.append(s / t if t > 0 else np.nan)
    reps = np.asarray(reps)
    ok = reps[~np.isnan(reps)]
    a = (1 - level) / 2
    return reps, np.percentile(ok, 100 * a), np.percentile(ok, 100 * (1 - a))


@pytest.mark.parametrize("estimator", ["ips", "snips", "dr", "dm"])
def test_bootstrap_matches_reference_loop(backend, estimator):
    r, p, t, a, q = H30["reward"], H30["pscore"], H30["pi_e"], H30["action"], H30["q_hat"]
    w = (t[np.arange(6), a] / p).clip(max=4)
    dm = (t * q).sum(1)
    num, den = {"ips": (w * r, None), "snips": (w * r, w), "dm": (dm, None),
                "dr": (dm + w * (r - q[np.arange(6), a]), None)}[estimator]
    reps, lo, hi = reference_bootstrap(num, den, 6, 123, 300, 0.9)
    res = backend.call(lambda r_, p_, t_, q_, a_: calipers.off_policy_interval(
        estimator, r_, p_, t_, q_ if estimator in ("dr", "dm") else None, action=a_,
        max_weight=4, n_resamples=300, confidence_level=0.9, seed=123), r, p, t, q, a)
    close(res.distribution, reps, backend)
    close(res.confidence_interval.low, lo, backend)
    close(res.confidence_interval.high, hi, backend)


def test_snips_bootstrap_renormalises_each_resample():
    r, p, t, a = H30["reward"], H30["pscore"], H30["pi_e"], H30["action"]
    res = calipers.off_policy_interval("snips", r, p, t, action=a, n_resamples=50, seed=0)
    idx = np.stack([np.repeat(np.arange(6), c) for c in replicate_counts(6, 50, 0)])
    w = t[np.arange(6), a] / p
    renorm = (w * r)[idx].sum(1) / w[idx].sum(1)
    per_round = (r * w / w.mean())[idx].mean(1)  # obp's round rewards: not re-normalised
    np.testing.assert_allclose(res.distribution, renorm, rtol=1e-14)
    assert not np.allclose(res.distribution, per_round)
    assert res.estimate == pytest.approx(0.7241379310344828, abs=1e-15)


def test_bootstrap_undefined_replicates_counted():
    r = np.array([1.0, 0.0, 1.0])
    p = np.array([0.5, 0.5, 0.5])
    t = np.array([0.0, 0.0, 1.0])  # only row 2 has weight: a resample without it is 0/0
    with pytest.warns(UndefinedMetricWarning, match="bootstrap replicates are undefined"):
        res = calipers.off_policy_interval("snips", r, p, t, n_resamples=200, seed=5)
    counts = np.stack(list(replicate_counts(3, 200, 5)))
    want = int((counts[:, 2] == 0).sum())
    assert want > 0 and int(res.n_undefined) == want
    assert np.isnan(res.distribution).sum() == want
    assert res.confidence_interval.low == res.confidence_interval.high == 1.0


def test_bootstrap_bad_options():
    r, p, t, a = H30["reward"], H30["pscore"], H30["pi_e"], H30["action"]
    with pytest.raises(ValueError, match="estimator must be"):
        calipers.off_policy_interval("switch", r, p, t, action=a)
    with pytest.raises(ValueError, match="n_resamples"):
        calipers.off_policy_interval("ips", r, p, t, action=a, n_resamples=0)
    with pytest.raises(ValueError, match="confidence_level"):
        calipers.off_policy_interval("ips", r, p, t, action=a, confidence_level=1.0)


def test_half_precision_gives_float32():
    p = H30["pscore"].astype(np.float16)
    t = H30["pi_e"].astype(np.float16)
    got = calipers.ips_estimate(H30["reward"].astype(np.float16), p, t, action=H30["action"])
    assert got.dtype == np.float32
    assert got == pytest.approx(1.75, abs=1e-6)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(0, 50, allow_nan=False), min_size=1, max_size=30))
def test_ess_bounds(w):
    """Kish ESS lies in [1, n] for weights that are not all 0, equals n for equal weights."""
    w = np.asarray(w)
    ess = calipers.effective_sample_size(w)
    if w.sum() == 0:
        assert ess == 0
    else:
        assert 1 - 1e-12 <= ess <= len(w) * (1 + 1e-12)
        assert calipers.effective_sample_size(np.full(len(w), w.max())) == pytest.approx(len(w))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.5, 20))
def test_clipping_only_lowers_weights_and_never_below_min(seed, lam):
    rng = np.random.default_rng(seed)
    n, K = 20, 3
    pe = rng.dirichlet(np.ones(K), size=n)
    a = rng.integers(0, K, n)
    p = rng.uniform(0.01, 1, n)
    w = calipers.importance_weights(p, pe, action=a)
    wc = calipers.importance_weights(p, pe, action=a, max_weight=lam)
    np.testing.assert_array_equal(wc, np.minimum(w, lam))
    r = rng.integers(0, 2, n).astype(float)
    # a cap above every weight changes nothing
    assert calipers.ips_estimate(r, p, pe, action=a, max_weight=float(w.max()) + 1) == \
        calipers.ips_estimate(r, p, pe, action=a)


def test_bootstrap_chunks_do_not_change_replicates():
    """n = 2**20 rows: replicates computed in chunks of 4 equal each replicate alone."""
    n = 1 << 20
    rng = np.random.default_rng(0)
    r = rng.integers(0, 2, n).astype(float)
    p = np.full(n, 0.5)
    t = rng.uniform(0, 1, n)
    res = calipers.off_policy_interval("ips", r, p, t, n_resamples=10, seed=9)
    want = [(t / p * r)[np.repeat(np.arange(n), c)].mean() for c in replicate_counts(n, 10, 9)]
    np.testing.assert_allclose(res.distribution, want, rtol=1e-12)


def test_jit_second_call_does_not_recompile():
    import jax
    import jax.numpy as jnp
    f = jax.jit(lambda r, p, t, q, a: calipers.doubly_robust_estimate(r, p, t, q, action=a,
                                                                      max_weight=3.0))
    for scale in (1.0, 0.5):
        f(jnp.asarray(H30["reward"] * scale), jnp.asarray(H30["pscore"]),
          jnp.asarray(H30["pi_e"]), jnp.asarray(H30["q_hat"]), jnp.asarray(H30["action"]))
    assert f._cache_size() == 1
