"""The rank-statistics core (calipers._kernels.rankstats) against brute-force pair counting.

References are O(n^2) loops over all (positive, negative) pairs in exact
``fractions.Fraction`` arithmetic; inputs are random with many ties, integer
and float weights, and segmented groups. Every backend via the ``backend``
fixture (NumPy, array-api-strict, JAX eager, JAX jit with and without x64).
"""

from __future__ import annotations

import ast
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers._kernels import rankstats as R
from calipers._kernels import segments as S
from conftest import close, to_np


# --------------------------------------------------------------------------
# brute force (exact)
# --------------------------------------------------------------------------

def _fr(v):
    return Fraction(int(v)) if isinstance(v, (int, np.integer)) else Fraction(float(v))


def brute_twice(y, s, w):
    """Doubled placements per row: 2 * (other class beyond) + (other class tied), exact."""
    out = []
    for i in range(len(y)):
        acc = Fraction(0)
        for j in range(len(y)):
            if y[j] == y[i]:
                continue
            # a positive counts negatives below; a negative counts positives above
            beyond = s[j] < s[i] if y[i] == 1 else s[j] > s[i]
            acc += _fr(w[j]) * (2 if beyond else (1 if s[j] == s[i] else 0))
        out.append(acc)
    return out


def brute_u2(y, s, w):
    tw = brute_twice(y, s, w)
    return sum((_fr(w[i]) * tw[i] for i in range(len(y)) if y[i] == 1), Fraction(0))


def brute_auc(y, s, w):
    P = sum((_fr(w[i]) for i in range(len(y)) if y[i] == 1), Fraction(0))
    N = sum((_fr(w[i]) for i in range(len(y)) if y[i] != 1), Fraction(0))
    if P == 0 or N == 0:
        return float("nan")
    return float(brute_u2(y, s, w) / (2 * P * N))


def brute_ap(y, s, w):
    P = sum((_fr(w[i]) for i in range(len(y)) if y[i] == 1), Fraction(0))
    if P == 0:
        return float("nan")
    tot = Fraction(0)
    for i in range(len(y)):
        if y[i] != 1 or w[i] == 0:
            continue
        tp = sum((_fr(w[j]) for j in range(len(y)) if y[j] == 1 and s[j] >= s[i]), Fraction(0))
        al = sum((_fr(w[j]) for j in range(len(y)) if s[j] >= s[i]), Fraction(0))
        tot += _fr(w[i]) * tp / al
    return float(tot / P)


def _data(seed, n=40, levels=6, weights="int"):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.integers(0, levels, n).astype(np.float64) / levels   # many ties
    if weights == "int":
        w = rng.integers(0, 4, n)
    elif weights == "float":
        w = rng.random(n) * 3
    else:
        w = np.ones(n, dtype=np.int64)
    return y, s, w


def _ints(x):
    x = x if isinstance(x, np.ndarray) else np.asarray(x.tolist() if hasattr(x, "tolist") else x)
    return [int(v) for v in x.reshape(-1)]


# --------------------------------------------------------------------------
# the kernel, placements, LOO and AP against brute force on every backend
# --------------------------------------------------------------------------

def _kernel(y, s, w):
    import array_api_compat

    xp = array_api_compat.array_namespace(s)
    tg = R.sort_groups(y, s, xp)
    cw = R.class_weights(tg, None if w is None else xp.take(w, tg.order), xp)
    inv = xp.argsort(tg.order)
    return dict(u2=R.u2(tg, cw.wp, cw.Cn, xp),
                twice=xp.take(R.placements(tg, cw, xp), inv),
                auc=R.binary_auc(tg, cw, xp)[0],
                loo=xp.take(R.loo_auc(tg, cw, xp), inv),
                loo_ap=xp.take(R.loo_ap(tg, cw, xp), inv) if w is None else None,
                ap=R.ap_steps(tg, cw, xp)[0])


@pytest.mark.parametrize("weights", ["none", "int", "float"])
@pytest.mark.parametrize("seed", [0, 1])
def test_kernel_matches_brute_force(backend, weights, seed):
    y, s, w = _data(seed, weights="int" if weights == "none" else weights)
    if weights == "none":
        w = np.ones_like(y)
    got = backend.call(_kernel, y, s, None if weights == "none" else w)
    want_twice = brute_twice(y, s, w)
    if weights != "float":
        # integer counts: exact, also in 32-bit (JAX without x64)
        assert _ints(got["twice"]) == [int(v) for v in want_twice]
        assert got["twice"].dtype == R.count_dtype(backend.xp, backend.asarray(w))
        if backend.x64:
            assert _ints(got["u2"]) == [int(brute_u2(y, s, w))]
    else:
        close(got["twice"], [float(v) for v in want_twice], backend)
    close(got["u2"], float(brute_u2(y, s, w)), backend)
    close(got["auc"], brute_auc(y, s, w), backend)
    close(got["ap"], brute_ap(y, s, w), backend)
    keep = np.ones(len(y), dtype=bool)
    loo, loo_ap = [], []
    for i in range(len(y)):
        keep[i] = False
        loo.append(brute_auc(y[keep], s[keep], w[keep]))
        loo_ap.append(brute_ap(y[keep], s[keep], w[keep]))
        keep[i] = True
    close(got["loo"], loo, backend)
    if weights == "none":
        close(got["loo_ap"], loo_ap, backend)


def _segmented(y, s, g, w, *, num_segments):
    import array_api_compat

    xp = array_api_compat.array_namespace(s)
    ss = S.segment_sort(g, s, xp, num_segments=num_segments)
    tg = R.from_segment_sort(ss, y, xp)
    cw = R.class_weights(tg, None if w is None else xp.take(w, ss.order), xp)
    auc, undefined = R.binary_auc(tg, cw, xp)
    return dict(u2=R.u2(tg, cw.wp, cw.Cn, xp), auc=auc, undefined=undefined,
                twice=xp.take(R.placements(tg, cw, xp), xp.argsort(ss.order)),
                ap=R.ap_steps(tg, cw, xp)[0])


@pytest.mark.parametrize("weights", ["int", "float"])
def test_segmented_kernel_matches_brute_force_per_group(backend, weights):
    y, s, w = _data(3, n=60, levels=4, weights=weights)
    rng = np.random.default_rng(4)
    g = rng.integers(0, 5, 60)
    g[g == 4] = 3          # segment 4 has no rows: undefined
    y[g == 2] = 1          # segment 2 has one class: undefined
    got = backend.call(_segmented, y, s, g, w, num_segments=5)
    want_auc, want_u2, want_ap = [], [], []
    want_twice = [None] * 60
    for q in range(5):
        m = np.flatnonzero(g == q)
        want_auc.append(brute_auc(y[m], s[m], w[m]) if m.size else float("nan"))
        want_u2.append(float(brute_u2(y[m], s[m], w[m])) if m.size else 0.0)
        want_ap.append(brute_ap(y[m], s[m], w[m]) if m.size else float("nan"))
        for i, v in zip(m, brute_twice(y[m], s[m], w[m])):
            want_twice[i] = v
    close(got["auc"], want_auc, backend)
    close(got["u2"], want_u2, backend)
    close(got["ap"], want_ap, backend)
    assert to_np(got["undefined"]).tolist() == [0.0, 0.0, 1.0, 0.0, 1.0]
    if weights == "int":
        assert _ints(got["twice"]) == [int(v) for v in want_twice]
    else:
        close(got["twice"], [float(v) for v in want_twice], backend)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 3), st.integers(0, 3)),
                min_size=1, max_size=25))
def test_numpy_split_path_equals_sort_path_and_brute_force(rows):
    # the NumPy fast path (classes sorted apart, binary search) is the same count
    y = np.array([r[0] for r in rows])
    s = np.array([r[1] for r in rows], dtype=np.float64)
    w = np.array([r[2] for r in rows])
    fast, und_fast = R.roc_auc(y, s, None, np)
    slow, und_slow = R.roc_auc(y, s, np.ones_like(y), np)
    assert bool(und_fast) == bool(und_slow)
    np.testing.assert_equal(float(fast), float(slow))
    np.testing.assert_allclose(float(fast), brute_auc(y, s, np.ones_like(y)), rtol=1e-15)
    ap_fast, _ = R.average_precision(y, s, None, np)
    ap_slow, _ = R.average_precision(y, s, np.ones_like(y), np)
    np.testing.assert_allclose(float(ap_fast), float(ap_slow), rtol=1e-14)
    np.testing.assert_allclose(float(R.roc_auc(y, s, w, np)[0]), brute_auc(y, s, w),
                               rtol=1e-15)


def test_integer_weights_beyond_2_53_stay_exact():
    # 2**53 + 1 is not a float64: a float count would lose the +1 (and every +1 after it)
    big = 2**53 + 1
    y = np.array([1, 1, 1, 0, 0, 0])
    s = np.array([0.9, 0.5, 0.1, 0.5, 0.3, 0.95])
    w = np.array([1, big, 1, 1, 1, 3], dtype=np.int64)
    tg = R.sort_groups(y, s, np)
    cw = R.class_weights(tg, w[tg.order], np)
    assert cw.Cp.dtype == np.int64 and int(cw.P) == big + 2
    assert int(R.u2(tg, cw.wp, cw.Cn, np)) == brute_u2(y, s, w)
    twice = R.placements(tg, cw, np)[np.argsort(tg.order)]
    assert [int(v) for v in twice] == [int(v) for v in brute_twice(y, s, w)]
    P, N = Fraction(big + 2), Fraction(5)
    assert float(R.binary_auc(tg, cw, np)[0]) == pytest.approx(
        float(brute_u2(y, s, w) / (2 * P * N)), rel=2**-52)


def test_pairwise_matrix_matches_brute_force(backend):
    from calipers._ranking.multiclass import _pairwise_auc_matrix

    rng = np.random.default_rng(7)
    n, C = 30, 3
    ti = rng.integers(0, C, n)
    sc = rng.integers(0, 4, (n, C)).astype(np.float64)
    w = rng.integers(1, 4, n)

    def fn(t, s, ww):
        import array_api_compat

        return _pairwise_auc_matrix(t, s, ww, C, array_api_compat.array_namespace(s))[0]

    got = to_np(backend.call(fn, ti, sc, w))
    for i in range(C):
        for j in range(C):
            m = (ti == i) | (ti == j)
            if i == j:
                continue
            want = brute_u2((ti[m] == i).astype(int), sc[m, i], w[m])
            close(got[i, j], float(want), backend)


# --------------------------------------------------------------------------
# float16 / bfloat16 and the output dtype rule
# --------------------------------------------------------------------------

def _h20():
    # handed case H20: run-length (score, label, count), float16 scores; exact AUC 89/96
    rle = [(0.75, 1, 2100), (0.5, 0, 350), (0.25, 1, 300), (0.0, 0, 250)]
    s = np.concatenate([np.full(c, v, dtype=np.float16) for v, _, c in rle])
    y = np.concatenate([np.full(c, lab, dtype=np.int64) for _, lab, c in rle])
    return y, s


def test_H20_float16_scores_give_float32_accuracy(backend):
    if backend.name == "array_api_strict":
        pytest.skip("array-api-strict has no float16")
    y, s = _h20()
    xs = backend.asarray(s)
    assert xs.dtype == backend.xp.float16
    got = backend.call(calipers.roc_auc_score, y, xs)
    assert got.dtype in (np.float32, np.dtype("float32"), backend.xp.float32)
    assert abs(float(to_np(got)) - 89 / 96) < 1e-6
    ap = backend.call(calipers.average_precision_score, y, xs)
    assert ap.dtype in (np.float32, np.dtype("float32"), backend.xp.float32)


def test_bfloat16_scores_jax():
    import jax.numpy as jnp

    y, s = _h20()
    got = calipers.roc_auc_score(jnp.asarray(y), jnp.asarray(s, dtype=jnp.bfloat16))
    assert got.dtype == jnp.float32
    assert abs(float(got) - 89 / 96) < 1e-6


def test_H20_float16_multiclass_and_grouped():
    y, s = _h20()
    s2 = np.stack([-s, s], axis=1)
    got = calipers.multiclass_roc_auc_score(y, s2, average=None)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [89 / 96, 89 / 96], rtol=1e-6)
    res = calipers.grouped_roc_auc(y, s, np.zeros_like(y))
    assert abs(float(res.mean) - 89 / 96) < 1e-6


@pytest.mark.parametrize("dt,want", [(np.float16, np.float32), (np.float32, np.float32),
                                     (np.float64, np.float64), (np.int64, np.float64)])
def test_output_dtype_rule(dt, want):
    y = np.array([0, 1, 0, 1])
    s = np.array([1, 2, 2, 3]).astype(dt)
    assert calipers.roc_auc_score(y, s).dtype == want
    assert R.out_float(np, s) == want


# --------------------------------------------------------------------------
# consumers use the one kernel; the _ranking <-> _multiclass cycle is gone
# --------------------------------------------------------------------------

def _imports(module):
    """Targets of the relative imports of ``module`` (a path under calipers, ``a/b``)."""
    src = (Path(calipers.__file__).parent / f"{module}.py").read_text()
    found = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = "." * node.level + (node.module or "")
            sep = "." if node.module else ""
            found.update(base + sep + a.name for a in node.names)
    return found


def test_no_import_cycle_between_ranking_and_multiclass():
    assert not {m for m in _imports("_ranking/multiclass") if m.endswith("binary")}
    assert {m.split(".")[-1] for m in _imports("_kernels/rankstats")} <= {"xp", "validation",
                                                                           "native", "ranges"}


def test_delong_placements_exact_without_x64():
    # placements are integer counts: V10/V01 of a float32 run equal the x64 ones to rounding
    import jax
    import jax.numpy as jnp

    from calipers._compare.delong import _placements

    y, s, _ = _data(11, n=200, levels=5)
    with jax.enable_x64(False):
        v10, v01, auc, P, N = _placements(jnp.asarray(y, dtype=jnp.int32),
                                          jnp.asarray(s, dtype=jnp.float32), jnp)
        assert v10.dtype == jnp.float32
    tw = brute_twice(y, s, np.ones_like(y))
    Pn, Nn = int(y.sum()), int((1 - y).sum())
    want10 = [float(t / (2 * Nn)) if y[i] == 1 else 0.0 for i, t in enumerate(tw)]
    want01 = [float(t / (2 * Pn)) if y[i] == 0 else 0.0 for i, t in enumerate(tw)]
    np.testing.assert_allclose(np.asarray(v10), want10, rtol=2e-7)
    np.testing.assert_allclose(np.asarray(v01), want01, rtol=2e-7)
    assert abs(float(auc) - brute_auc(y, s, np.ones_like(y))) < 1e-6


# --------------------------------------------------------------------------
# the JAX binary paths: order keys, classes sorted apart, payload sort with tie flags
# --------------------------------------------------------------------------

_KEY_DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int8", "uint16",
               "uint64"]


def _key_values(dt, rng):
    import jax.numpy as jnp

    if dt in ("float64", "float32", "float16", "bfloat16"):
        fi = jnp.finfo(jnp.dtype(dt))
        edge = [0.0, -0.0, float(fi.max), -float(fi.max), float(fi.tiny), -float(fi.tiny),
                float("inf"), -float("inf"), 1.0, -1.0]
        vals = np.concatenate([edge, np.round(rng.normal(size=60), 1)])
        return np.asarray(jnp.asarray(vals, dtype=dt).astype(jnp.float64))
    ii = np.iinfo(np.dtype(dt))
    edge = [ii.min, ii.max, 0, 1, ii.max - 1, ii.min + 1]
    return np.array(edge + list(rng.integers(max(ii.min, -5), min(ii.max, 5), 60)), dtype=dt)


@pytest.mark.parametrize("dt", _KEY_DTYPES)
def test_order_key_is_exact_and_order_preserving(dt):
    import jax
    import jax.numpy as jnp

    v = _key_values(dt, np.random.default_rng(0))
    with jax.enable_x64(True):
        k = np.asarray(jax.jit(R._order_key)(jnp.asarray(v, dtype=dt)))
    assert k.dtype == np.dtype(f"uint{jnp.dtype(dt).itemsize * 8}")
    vv = v.astype(object) if v.dtype.kind in "iu" else v    # exact comparisons of big ints
    for i in range(len(v)):
        for j in range(len(v)):
            assert (k[i] < k[j]) == (vv[i] < vv[j]) and (k[i] == k[j]) == (vv[i] == vv[j])


def _jax_binary(y, s, w, *, jit, x64, dt=None):
    import jax
    import jax.numpy as jnp

    def f(y, s, w):
        return (R.roc_auc(y, s, w, jnp)[0], R.average_precision(y, s, w, jnp)[0])

    with jax.enable_x64(x64):
        args = (jnp.asarray(y), jnp.asarray(s, dtype=dt),
                None if w is None else jnp.asarray(w))
        auc, ap = (jax.jit(f) if jit else f)(*args)
        return float(auc), float(ap)


@pytest.mark.parametrize("weights", ["none", "int", "float"])
@pytest.mark.parametrize("mode", [(False, True), (True, True), (True, False)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_jax_binary_paths_match_brute_force(weights, mode, seed):
    # unweighted: classes sorted apart (two key sorts, one binary search);
    # weighted: one payload sort with tie flags into binary_auc / ap_steps
    jit, x64 = mode
    y, s, w = _data(seed, n=50, levels=5, weights="int" if weights == "none" else weights)
    wb = np.ones_like(y) if weights == "none" else w
    auc, ap = _jax_binary(y, s, None if weights == "none" else w, jit=jit, x64=x64,
                          dt="float64" if x64 else "float32")
    s32 = s if x64 else s.astype(np.float32)
    tol = 1e-12 if x64 else 1e-5
    assert auc == pytest.approx(brute_auc(y, s32, wb), rel=tol)
    assert ap == pytest.approx(brute_ap(y, s32, wb), rel=tol)


@pytest.mark.parametrize("dt", ["int64", "int8", "uint16", "float16", "float64"])
@pytest.mark.parametrize("weighted", [False, True])
def test_jax_binary_paths_at_the_key_range_ends(dt, weighted):
    # scores equal to the padding key (the dtype's maximum) and -0.0 tied with 0.0
    rng = np.random.default_rng(5)
    v = _key_values(dt, rng)
    v = v[np.isfinite(v.astype(np.float64))]
    y = rng.integers(0, 2, v.shape[0])
    y[:2] = [0, 1]
    w = rng.integers(0, 3, v.shape[0]) if weighted else None
    wb = np.ones_like(y) if w is None else w
    auc, ap = _jax_binary(y, v, w, jit=True, x64=True, dt=dt)
    sv = v.astype(object) if v.dtype.kind in "iu" else v.astype(np.float64)
    assert auc == pytest.approx(brute_auc(y, list(sv), wb), rel=1e-12)
    assert ap == pytest.approx(brute_ap(y, list(sv), wb), rel=1e-12)


def test_jax_split_ranks_clip_and_match_two_searches():
    import jax.numpy as jnp

    rng = np.random.default_rng(9)
    neg = np.sort(rng.integers(0, 6, 30))
    pos = rng.integers(-1, 8, 40)
    lo, hi = R.split_ranks(jnp.asarray(neg), jnp.asarray(pos), jnp)
    assert np.asarray(lo).tolist() == np.searchsorted(neg, pos, "left").tolist()
    assert np.asarray(hi).tolist() == np.searchsorted(neg, pos, "right").tolist()
    padded = np.where(np.arange(30) < 20, neg, 5)          # the last 10 are padding
    lo, hi = R.split_ranks(jnp.asarray(padded), jnp.asarray(pos), jnp, 20)
    assert np.asarray(lo).tolist() == np.searchsorted(padded[:20], pos, "left").tolist()
    assert np.asarray(hi).tolist() == np.searchsorted(padded[:20], pos, "right").tolist()


@pytest.mark.parametrize("weights", ["int", "float"])
def test_carry_groups_kernel_matches_brute_force(weights):
    # TieGroups from the payload sort (first/last flags, running max/min edges):
    # placements, U2, AUC, leave-one-out AUC and AP as the gather path gives them
    import jax
    import jax.numpy as jnp

    y, s, w = _data(6, n=45, levels=5, weights=weights)

    def f(y, s, w):
        tg, ws = R.carry_groups(y, s, w)
        cw = R.class_weights(tg, ws, jnp)
        return (R.u2(tg, cw.wp, cw.Cn, jnp), R.placements(tg, cw, jnp), tg.y, ws,
                R.loo_auc(tg, cw, jnp), R.ap_steps(tg, cw, jnp)[0])

    u2, twice, ys, ws, loo, ap = jax.jit(f)(jnp.asarray(y), jnp.asarray(s), jnp.asarray(w))
    close(u2, float(brute_u2(y, s, w)), None)
    assert float(ap) == pytest.approx(brute_ap(y, s, w), rel=1e-12)
    # rows come back in ascending score order (ties in any order): key each row by
    # (score, label, weight), which determines its placement and leave-one-out AUC
    ss = np.sort(s)
    got = sorted(zip(ss.tolist(), np.asarray(ys).tolist(), np.asarray(ws).tolist(),
                     np.asarray(twice).tolist(), np.asarray(loo).tolist()))
    keep = np.ones(len(y), dtype=bool)
    want = []
    for i, t in zip(range(len(y)), brute_twice(y, s, w)):
        keep[i] = False
        want.append((float(s[i]), int(y[i]), w[i].item(), float(t),
                     brute_auc(y[keep], s[keep], w[keep])))
        keep[i] = True
    want.sort()
    for g, v in zip(got, want):
        assert g[:3] == v[:3]
        assert g[3] == pytest.approx(v[3], rel=1e-12) and g[4] == pytest.approx(v[4], rel=1e-12)


@pytest.mark.parametrize("x64", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_jax_binary_paths_with_one_class(x64, weighted):
    # all padding on one side: AUC undefined (NaN); AP NaN without positives, 1 without negatives
    s = np.array([0.3, 0.1, 0.3, 0.7])
    w = np.array([1, 2, 1, 1]) if weighted else None
    dt = "float64" if x64 else "float32"
    auc, ap = _jax_binary(np.ones(4, dtype=np.int32), s, w, jit=True, x64=x64, dt=dt)
    assert np.isnan(auc) and ap == 1.0
    auc, ap = _jax_binary(np.zeros(4, dtype=np.int32), s, w, jit=True, x64=x64, dt=dt)
    assert np.isnan(auc) and np.isnan(ap)
