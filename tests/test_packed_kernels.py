"""The NumPy packed-key paths of ROC AUC, AP and the ROC curve against exact references.

The packed sort (:func:`calipers._kernels.rankstats.packed_sort`) maps each float64 score
to an order-preserving integer with the label in its lowest bit; zeros, -0.0, one-signed
and mixed-sign data take different branches of that map. Every case here is checked
against a reference that shares nothing with it: pair enumeration in exact fractions
(AUC), the step sum in fractions over the distinct thresholds (AP), per-threshold counts
by brute force (ROC curve), and the classes-apart path of the same kernels where the
result must be bit-identical.

Every test runs three ways (the ``passes`` fixture): the compiled passes
(:mod:`calipers._kernels.native`), the compiled passes with the per-score table tried on
every input (heavily tied scores skip the sort), and the NumPy passes alone. Integer
results (AUC, the curves) are the same bits every way; an AP step sum is the same
terms summed in another order by the compiled passes, so it is compared with the exact
step sum (to 1e-13) and across ways to a few units in the last place.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import calipers
from calipers._kernels import native
from calipers._kernels import ranges as Rg
from calipers._kernels import rankstats as R


@pytest.fixture(autouse=True, params=["compiled", "compiled-table", "numpy"])
def passes(request, monkeypatch):
    """Which passes run: compiled, compiled with the score table on every input, NumPy."""
    if request.param == "numpy":
        monkeypatch.setattr(native, "lib", None)
    elif native.lib is None:
        pytest.skip("calipers._kernels._native is not built")
    if request.param == "compiled-table":
        monkeypatch.setattr(R, "_TABLE_MIN_N", 1)
    return request.param


def _same_ap(got, ref):
    """AP from two paths: the same bits on the NumPy passes, else within 8 ulp."""
    if native.lib is None:
        assert got == ref
    else:
        np.testing.assert_array_max_ulp(np.float64(got), np.float64(ref), maxulp=8)


def _auc_pairs(y, s):
    """Mann-Whitney AUC by enumerating pairs, ties 1/2, as an exact fraction."""
    pos = [float(v) for v in s[y == 1]]
    neg = [float(v) for v in s[y == 0]]
    u2 = sum(2 * (p > q) + (p == q) for p in pos for q in neg)
    return Fraction(u2, 2 * len(pos) * len(neg))


def _ap_steps(y, s):
    """Step-sum AP over distinct thresholds (ties together), exact fractions."""
    vals = sorted({float(v) for v in s}, reverse=True)
    P = int(np.sum(y == 1))
    total, tp, fp = Fraction(0), 0, 0
    for v in vals:
        at = s == v
        n1 = int(np.sum(at & (y == 1)))
        tp += n1
        fp += int(np.sum(at & (y == 0)))
        if n1:
            total += Fraction(n1 * tp, tp + fp)
    return total / P


def _roc_points(y, s):
    """(fps, tps, thresholds) per distinct score, decreasing, by brute force."""
    vals = sorted({float(v) for v in s}, reverse=True)
    tps = [int(np.sum((s >= v) & (y == 1))) for v in vals]
    fps = [int(np.sum((s >= v) & (y == 0))) for v in vals]
    return np.array(fps, float), np.array(tps, float), np.array(vals)


def _scores(rng, n, kind):
    s = rng.normal(size=n) * 10.0 ** int(rng.integers(-3, 4))
    if kind == "tied":
        s = np.round(s, 1)
    elif kind == "zeros":                       # exact zeros beside values >= 1.5
        s = np.round(s)
        s[rng.random(n) < 0.3] = 0.0
    elif kind == "signed-zeros":                # -0.0 and 0.0 must tie
        s = np.round(s)
        s[rng.random(n) < 0.3] = -0.0
        s[rng.random(n) < 0.2] = 0.0
    elif kind == "non-negative":
        s = np.abs(np.round(s, 1))
    elif kind == "non-positive":
        s = -np.abs(np.round(s, 1))
        s[rng.random(n) < 0.3] = -0.0
    elif kind == "all-zero":
        s = np.where(rng.random(n) < 0.5, 0.0, -0.0)
    elif kind == "wide":                        # magnitudes past the packed span: other path
        s = rng.choice([0.0, 1e-300, 3.0, -1e300, 2.5e-310], size=n)
    return s


KINDS = ["random", "tied", "zeros", "signed-zeros", "non-negative", "non-positive",
         "all-zero", "wide"]


def _labels(rng, n):
    y = (rng.random(n) < rng.uniform(0.1, 0.9)).astype(np.int64)
    y[0], y[1] = 0, 1
    return y


@pytest.mark.parametrize("kind", KINDS)
def test_auc_ap_equal_exact_references(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    for _ in range(25):
        n = int(rng.integers(2, 60))
        y, s = _labels(rng, n), _scores(rng, n, kind)
        assert calipers.roc_auc_score(y, s) == float(_auc_pairs(y, s))
        ap = calipers.average_precision_score(y, s)
        assert ap == pytest.approx(float(_ap_steps(y, s)), rel=1e-13, abs=0)


@pytest.mark.parametrize("kind", KINDS)
def test_roc_curve_equals_brute_force(kind):
    rng = np.random.default_rng(100 + KINDS.index(kind))
    for _ in range(15):
        n = int(rng.integers(2, 60))
        y, s = _labels(rng, n), _scores(rng, n, kind)
        fps, tps, thr = _roc_points(y, s)
        fpr, tpr, th = calipers.roc_curve(y, s, drop_intermediate=False)
        np.testing.assert_array_equal(fpr[1:], fps / fps[-1])
        np.testing.assert_array_equal(tpr[1:], tps / tps[-1])
        np.testing.assert_array_equal(th[1:], thr)
        assert not np.signbit(th[1:][th[1:] == 0]).any()      # -0.0 reported as 0.0
        # the vertices: the general (weighted) path with unit weights, bit for bit
        got = calipers.roc_curve(y, s)
        ref = calipers.roc_curve(y, s, sample_weight=np.ones(n))
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)


def _exact_u2_by_groups(y, s):
    """2U from per-distinct-score class counts (np.unique), Python integers."""
    u, inv = np.unique(s, return_inverse=True)
    n1 = np.bincount(inv, weights=y, minlength=u.shape[0]).astype(np.int64)
    n0 = np.bincount(inv, minlength=u.shape[0]) - n1
    below = np.concatenate([[0], np.cumsum(n0)[:-1]])
    return int(np.sum(n1.astype(object) * (2 * below + n0).astype(object)))


@pytest.mark.parametrize("kind", ["random", "tied", "zeros", "signed-zeros", "non-positive"])
def test_across_chunks(kind):
    # more rows than one chunk of the passes (2**15 and 2**16), ties spanning chunk ends
    rng = np.random.default_rng(7)
    n = 140_003
    y, s = _labels(rng, n), _scores(rng, n, kind)
    P, N = int(y.sum()), n - int(y.sum())
    assert calipers.roc_auc_score(y, s) == _exact_u2_by_groups(y, s) / (2.0 * P * N)
    pk = R.packed_sort(y, s)
    assert pk is not None and pk.P == P
    assert np.all(pk.keys[1:] >= pk.keys[:-1])
    # the scores come back from the keys, -0.0 as 0.0
    np.testing.assert_array_equal(np.unique(R._unpack(pk.keys, pk)), np.unique(s + 0.0))
    fpr, tpr, th = calipers.roc_curve(y, s, drop_intermediate=False)
    u = np.unique(s)[::-1]
    np.testing.assert_array_equal(th[1:], u)
    # tps at each threshold: positives at or above it
    pos = np.sort(s[y == 1])
    tps = P - np.searchsorted(pos, u, side="left")
    np.testing.assert_array_equal(tpr[1:], tps / P)


@pytest.mark.parametrize("at", ["chunk-end", "inside"])
def test_lone_ties_in_the_position_pass(at):
    # distinct scores but for two tied pairs: one of both classes (which the pass must find
    # although every other chunk has no tie and is skipped), one of a single class; the
    # mixed pair straddles a chunk boundary of the position pass or sits inside a chunk
    rng = np.random.default_rng(29)
    C = R._POS_CHUNK
    n = 2 * C + 4321
    s = np.sort(rng.permutation(n).astype(np.float64) * 0.25 - 1_000.0)
    p = C - 1 if at == "chunk-end" else C + 777
    s[p + 1] = s[p]                                  # sorted positions p and p + 1 tie
    s[2 * C + 10] = s[2 * C + 9]
    y = _labels(rng, n)
    y[p], y[p + 1] = 1, 0                            # of both classes
    y[2 * C + 9] = y[2 * C + 10] = 1
    order = rng.permutation(n)
    y, s = y[order], s[order]
    P, N = int(y.sum()), n - int(y.sum())
    assert calipers.roc_auc_score(y, s) == _exact_u2_by_groups(y, s) / (2.0 * P * N)


def _ap_fsum(y, s):
    """Step-sum AP over distinct thresholds (ties together): each group's term
    ``n1 * tp / (tp + fp)`` correctly rounded, the terms summed exactly."""
    import math

    u, inv = np.unique(-s, return_inverse=True)          # descending scores
    n1 = np.bincount(inv, weights=y, minlength=u.shape[0]).astype(np.int64)
    rows = np.bincount(inv, minlength=u.shape[0])
    tp, seen = np.cumsum(n1), np.cumsum(rows)
    has = n1 > 0
    return math.fsum((n1[has] * tp[has] / seen[has]).tolist()) / int(y.sum())


@pytest.mark.parametrize("late_tie", [False, True])
def test_untied_ap_across_chunks(late_tie, monkeypatch):
    # the untied step sum runs chunk by chunk (R._CHUNK rows), offsets carried over; a
    # tie met only in the last chunk restarts on the tie groups, which equal the
    # classes-apart path bit for bit
    rng = np.random.default_rng(23)
    n = 2 * R._CHUNK + 777
    y = _labels(rng, n)
    s = rng.permutation(n).astype(np.float64) * 0.37 - 9_000.0   # distinct, both signs
    if late_tie:
        p = 2 * R._CHUNK + 500              # sorted positions p and p + 1 tie
        s[np.flatnonzero(s == np.sort(s)[p + 1])] = np.sort(s)[p]
        assert np.unique(s).shape[0] == n - 1
    ap = calipers.average_precision_score(y, s)
    assert ap == pytest.approx(_ap_fsum(y, s), rel=1e-12, abs=0)
    if late_tie:
        monkeypatch.setattr(R, "packed_sort", lambda *a, **k: None)
        monkeypatch.setattr(Rg, "counted_table", lambda *a, **k: None)
        _same_ap(calipers.average_precision_score(y, s), ap)


@pytest.mark.parametrize("kind", ["tied", "zeros", "signed-zeros", "non-negative"])
def test_tied_ap_bit_identical_to_classes_apart(kind, monkeypatch):
    # with ties both paths sum n1 * tp / (tp + fp) over the same groups in the same order
    # (on the NumPy passes; the compiled ones add the same terms in another order)
    rng = np.random.default_rng(11)
    cases = [(int(rng.integers(2, 400)),) for _ in range(20)] + [(90_001,)]
    got = []
    for (n,) in cases:
        y, s = _labels(rng, n), _scores(rng, n, kind)
        if np.unique(s).shape[0] == n:      # no ties: the untied step sum, summed per row
            continue
        got.append((y, s, calipers.average_precision_score(y, s), calipers.roc_auc_score(y, s)))
    assert len(got) > 5
    monkeypatch.setattr(R, "packed_sort", lambda *a, **k: None)
    monkeypatch.setattr(Rg, "counted_table", lambda *a, **k: None)
    for y, s, ap, auc in got:
        _same_ap(calipers.average_precision_score(y, s), ap)
        assert calipers.roc_auc_score(y, s) == auc


def test_label_kinds_and_float32():
    rng = np.random.default_rng(3)
    y = _labels(rng, 200)
    s = np.round(rng.normal(size=200), 1)
    ref = float(_auc_pairs(y, s))
    for yy in (y.astype(bool), y.astype(np.int8), y.astype(np.uint64), 2 * y - 1):
        assert calipers.roc_auc_score(yy, s) == ref
    s32 = s.astype(np.float32)
    assert calipers.roc_auc_score(y, s32) == np.float32(float(_auc_pairs(y, s32)))


def test_bad_input_still_refused():
    y = np.array([0, 1, 0, 1])
    for bad in (np.inf, -np.inf, np.nan):
        s = np.array([0.1, 0.2, bad, 0.4])
        with pytest.raises(ValueError, match="y_score must be finite"):
            calipers.roc_auc_score(y, s)
        with pytest.raises(ValueError, match="y_score must be finite"):
            calipers.average_precision_score(y, s)
    with pytest.raises(ValueError, match="y_true"):
        calipers.roc_auc_score(np.array([0, 2, 0, 2]), np.array([0.1, 0.2, 0.3, 0.4]))
    with pytest.raises(ValueError, match="y_true"):
        calipers.roc_auc_score(np.array([0, 1, 2, 1]), np.array([0.1, 0.2, 0.3, 0.4]))
    assert R.numpy_01(np.array([0, 1, 1])) and not R.numpy_01(np.array([0, -1]))
    assert not R.numpy_01(np.array([0, 2])) and not R.numpy_01(np.array([0.0, 1.0]))


def _run_walk_cases(rng):
    """Data whose sorted keys the walk over runs of equal keys takes, fully or in part."""
    n = 60_001
    y = (rng.random(n) < 0.4).astype(np.int64)
    heavy = np.round(rng.normal(size=n) + y, 1)                 # ~80 values: walked through
    signed = np.round(rng.normal(size=n) + y)
    signed[rng.random(n) < 0.3] = -0.0                          # -0.0 and 0.0 tie
    signed[rng.random(n) < 0.1] = 0.0
    hybrid = np.where(rng.random(n) < 0.92, np.round(heavy),    # long runs, then a random
                      rng.normal(size=n) + 10.0)                # tail the passes take
    one_pos = np.zeros(n, np.int64)
    one_pos[n // 2] = 1
    return [(y, heavy), (y, signed), (y, hybrid), (one_pos, np.round(heavy))]


@pytest.mark.parametrize("budget,samples", [(None, None), (3, None), (50, 257)])
def test_run_walk_equals_classes_apart_and_exact(budget, samples, monkeypatch):
    # the tie-group passes walk long runs of equal keys by binary search and hand the
    # rest to the chunked passes; with any budget the results are the per-row passes'
    if budget is not None:
        monkeypatch.setattr(R, "_RUN_BUDGET", budget)
    if samples is not None:
        monkeypatch.setattr(R, "_RUN_SAMPLES", samples)
    rng = np.random.default_rng(21)
    cases = _run_walk_cases(rng)
    walked = 0
    for y, s in cases:
        pk = R.packed_sort(y, s)
        starts, lo = R._long_runs(pk.keys)
        walked += len(starts) > 0
        if budget is None:
            assert lo == pk.n or len(starts) > 0
    assert walked >= 3
    got = []
    for y, s in cases:
        P, N = int(y.sum()), y.shape[0] - int(y.sum())
        auc = calipers.roc_auc_score(y, s)
        assert auc == _exact_u2_by_groups(y, s) / (2.0 * P * N)
        curves = [calipers.roc_curve(y, s, drop_intermediate=d) for d in (False, True)]
        got.append((auc, calipers.average_precision_score(y, s), curves))
    monkeypatch.setattr(R, "packed_sort", lambda *a, **k: None)
    monkeypatch.setattr(Rg, "counted_table", lambda *a, **k: None)
    for (y, s), (auc, ap, curves) in zip(cases, got):
        assert calipers.roc_auc_score(y, s) == auc
        _same_ap(calipers.average_precision_score(y, s), ap)
        for d, curve in zip((False, True), curves):
            for a, b in zip(curve, calipers.roc_curve(y, s, drop_intermediate=d)):
                np.testing.assert_array_equal(a, b)


def test_run_walk_groups_match_unique():
    # the walked group starts are the first sorted position of every distinct score
    rng = np.random.default_rng(22)
    for y, s in _run_walk_cases(rng):
        pk = R.packed_sort(y, s)
        runs = R._long_runs(pk.keys)
        st, bf = R._group_starts(pk, runs)
        sc = np.sort(s + 0.0)
        _, first = np.unique(sc, return_index=True)
        np.testing.assert_array_equal(st, first)
        ys = y[np.argsort(s + 0.0, kind="stable")]
        np.testing.assert_array_equal(bf, np.concatenate([[0], np.cumsum(ys)])[first])


def test_roc_curve_untied_across_chunks_equals_weighted_path():
    # the top-down curve kernel over several chunks against the general weighted path
    rng = np.random.default_rng(23)
    n = 3 * R._CHUNK + 17
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = rng.normal(size=n) + y
    for d in (False, True):
        got = calipers.roc_curve(y, s, drop_intermediate=d)
        ref = calipers.roc_curve(y, s, sample_weight=np.ones(n), drop_intermediate=d)
        for a, b in zip(got, ref):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_keys_survive_threads_that_flush_subnormals():
    # XLA's CPU threads (here: a JAX host callback) treat subnormal floats as zero; the
    # packed keys are sorted as float64 bits, so none may be a subnormal (the smallest
    # packed key is the smallest normal float64's bits), else they sort as zeros
    import jax

    rng = np.random.default_rng(31)
    cases = [(_labels(rng, n), _scores(rng, n, kind)) for n in (3, 50, 5000)
             for kind in ("random", "tied", "zeros", "signed-zeros", "non-positive")]
    want = [(calipers.roc_auc_score(y, s), calipers.average_precision_score(y, s),
             calipers.roc_curve(y, s)) for y, s in cases]
    got = []

    def host(_):
        got.extend((calipers.roc_auc_score(y, s), calipers.average_precision_score(y, s),
                    calipers.roc_curve(y, s)) for y, s in cases)
        return np.zeros((), np.float32)

    jax.block_until_ready(jax.jit(lambda x: jax.pure_callback(
        host, jax.ShapeDtypeStruct((), np.float32), x))(np.float32(0)))
    assert len(got) == len(want)
    for (auc, ap, curve), (auc2, ap2, curve2) in zip(got, want):
        assert auc == auc2 and ap == ap2
        for a, b in zip(curve, curve2):
            np.testing.assert_array_equal(a, b)


def test_jit_on_cpu_runs_the_numpy_kernel_and_vmaps():
    # under jit on the CPU the unweighted AUC and AP hand the scores to the NumPy kernel
    # (a host callback); vmap runs it once per batch member, jit equals eager
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(32)
    Y = (rng.random((3, 400)) < 0.4).astype(np.int32)
    S = np.round(rng.normal(size=(3, 400)), 1).astype(np.float32)
    for fn in (calipers.roc_auc_score, calipers.average_precision_score):
        got = np.asarray(jax.jit(jax.vmap(fn))(jnp.asarray(Y), jnp.asarray(S)))
        want = np.array([fn(Y[i], S[i]) for i in range(3)])
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
    text = jax.jit(calipers.roc_auc_score).lower(jnp.asarray(Y[0]), jnp.asarray(S[0])).as_text()
    assert "callback" in text


def test_eager_jax_cpu_arrays_run_the_numpy_kernels():
    # unweighted calls on concrete JAX CPU arrays: the NumPy kernels on the same memory (no
    # XLA program compiled), JAX arrays back with the NumPy values; weighted calls keep
    # the JAX path
    import jax.numpy as jnp
    from calipers._core import compile as C

    rng = np.random.default_rng(33)
    y = _labels(rng, 3000)
    s = np.round(rng.normal(size=3000), 2)
    jy, js = jnp.asarray(y), jnp.asarray(s)
    C.clear_cache()
    before = C.cache_info()["misses"]
    for fn in (calipers.roc_auc_score, calipers.average_precision_score,
               calipers.precision_recall_auc, calipers.roc_curve,
               calipers.precision_recall_curve):
        got, want = fn(jy, js), fn(y, s)
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            assert type(g) is type(js) and g.dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(g), w)
    assert C.cache_info()["misses"] == before
    calipers.roc_auc_score(jy, js, sample_weight=jnp.ones(3000))
    assert C.cache_info()["misses"] > before
