"""The compiled passes (:mod:`calipers._kernels._native`) against the NumPy passes they replace.

Each compiled function gives the integers of the NumPy passes of the same name (packing,
the tie-group counts, the bootstrap's hash and Poisson counts, the AUC parts), checked here
on random inputs with ties, zeros and both signs, on every label dtype, and through the
public functions with the compiled module switched off (``native.lib = None``). The float
sums (AP) are checked against exact step sums. Bad buffers raise ``ValueError``.
"""

from __future__ import annotations

import math
import os
import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import calipers
from calipers._bootstrap import kernels as K
from calipers._bootstrap import resample as RS
from calipers._kernels import native
from calipers._kernels import ranges as Rg
from calipers._kernels import rankstats as R

lib = native.lib
needs_lib = pytest.mark.skipif(lib is None, reason="calipers._kernels._native is not built")


def test_compiled_passes_are_built():
    # CI installs from source with a C compiler: the compiled passes must be there (a
    # machine without one installs and runs the NumPy passes; CALIPERS_NATIVE=0 tests them)
    if os.environ.get("CALIPERS_NATIVE", "1") == "0":
        assert lib is None
    else:
        assert lib is not None, "calipers._kernels._native was not built (no C compiler?)"


def _numpy(monkeypatch):
    monkeypatch.setattr(native, "lib", None)


def _scores(rng, n, kind):
    if kind == "random":
        return rng.normal(size=n) * 10.0 ** int(rng.integers(-3, 4))
    if kind == "tied":
        return np.round(rng.normal(size=n), 1)
    if kind == "signed-zeros":
        s = np.round(rng.normal(size=n))
        s[rng.random(n) < 0.3] = -0.0
        s[rng.random(n) < 0.2] = 0.0
        return s
    if kind == "positive":
        return np.abs(rng.normal(size=n)) + 1e-300
    if kind == "negative":
        return -np.abs(np.round(rng.normal(size=n), 2))
    raise AssertionError(kind)


KINDS = ["random", "tied", "signed-zeros", "positive", "negative"]
LABEL_DTYPES = [bool, np.int8, np.uint16, np.int32, np.uint64, np.int64]


# --------------------------------------------------------------------------
# packing and the passes over sorted keys
# --------------------------------------------------------------------------

@needs_lib
@pytest.mark.parametrize("kind", KINDS)
def test_extremes_equal_numpy_passes(kind, monkeypatch):
    rng = np.random.default_rng(KINDS.index(kind))
    s = _scores(rng, 5001, kind)
    got = R._bit_extremes(s)
    _numpy(monkeypatch)
    ref = R._bit_extremes(s)
    assert got[:4] == ref[:4]
    nz = R._min_nonzero_magnitude(s.view(np.int64))
    assert got[4] == (0 if nz is None else nz)
    assert lib.extremes(np.zeros(3))[4] is None and lib.extremes(np.array([-0.0]))[4] is None


@needs_lib
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("ydt", LABEL_DTYPES)
def test_packed_sort_equals_numpy_passes(kind, ydt, monkeypatch):
    rng = np.random.default_rng(10 + KINDS.index(kind))
    n = 3 * R._PACK_CHUNK + 11
    s = _scores(rng, n, kind)
    y = (rng.random(n) < 0.4).astype(ydt)
    got = R.packed_sort(y, s)
    _numpy(monkeypatch)
    ref = R.packed_sort(y, s)
    assert got is not None and ref is not None
    np.testing.assert_array_equal(got.keys, ref.keys)
    assert got._replace(keys=None) == ref._replace(keys=None)


@needs_lib
def test_pack_refuses_labels_other_than_0_1_and_bad_buffers():
    s = np.array([0.5, 0.25, 0.75])
    out = np.empty(3, np.int64)
    assert lib.pack(s, np.array([0, 1, 1]), out, 0, 0, False, False) == 2
    for y in (np.array([0, 2, 1]), np.array([0, -1, 1]), np.array([0, 1, 1 << 40])):
        assert lib.pack(s, y, out, 0, 0, False, False) == -1
    with pytest.raises(ValueError, match="one length"):
        lib.pack(s, np.array([0, 1]), out, 0, 0, False, False)
    with pytest.raises(ValueError, match="8-byte"):
        lib.pack(s.astype(np.float32), np.array([0, 1, 1]), out, 0, 0, False, False)
    with pytest.raises(ValueError, match="contiguous"):
        lib.pack(s[::2], np.array([0, 1]), out[:2], 0, 0, False, False)   # not contiguous


def _keys_cases(rng):
    """Sorted packed keys of random, tied and mixed-tie data, through the NumPy packing."""
    out = []
    for kind in KINDS:
        for n in (1, 2, 7, 1000, 70_001):
            y = (rng.random(n) < rng.uniform(0.05, 0.95)).astype(np.int64)
            pk = R.packed_sort(y, _scores(rng, n, kind))
            out.append(pk)
    return out


@needs_lib
def test_auc_ap_and_curve_passes_equal_numpy_passes(monkeypatch):
    rng = np.random.default_rng(3)
    _numpy(monkeypatch)             # packed by the NumPy passes, read by both
    for pk in _keys_cases(rng):
        assert lib.auc_packed(pk.keys) == R.packed_roc_auc(pk)
        if pk.P:
            ref = R.packed_average_precision(pk)
            got = lib.ap_packed(pk.keys, pk.P) / pk.P
            np.testing.assert_array_max_ulp(got, ref, maxulp=8)
        ref = R.packed_roc_curve(pk) if 0 < pk.P < pk.n else None
        if ref is None:
            continue
        n = pk.n
        fpr, tpr, thr = (np.empty(n + 1) for _ in range(3))
        G = lib.roc_packed(pk.keys, pk.P, fpr, tpr, thr, pk.kmin, pk.mmin, pk.zero, pk.sym)
        for a, b in zip((fpr[:G], tpr[:G], thr[:G]), ref):
            np.testing.assert_array_equal(a, b)


@needs_lib
def test_ap_pass_is_accurate_over_many_rows():
    # 10^6 untied rows: the compiled step sum against the terms summed exactly
    rng = np.random.default_rng(4)
    n = 10**6
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = rng.normal(size=n) + y
    pk = R.packed_sort(y, s)
    pos = np.flatnonzero(pk.keys & 1)
    j = np.arange(pos.shape[0])
    exact = math.fsum(((pk.P - j) / (n - pos)).tolist())
    got = lib.ap_packed(pk.keys, pk.P)
    assert abs(got - exact) <= 2 * math.ulp(exact)


@needs_lib
def test_roc_pass_stops_at_a_tie():
    keys = np.array([2, 4, 5, 8], dtype=np.int64)      # 4 and 5 (4 >> 1 == 5 >> 1) tie
    bufs = [np.empty(5) for _ in range(3)]
    assert lib.roc_packed(keys, 2, *bufs, 0, 0, False, False) == -1
    with pytest.raises(ValueError, match="n \\+ 1"):
        lib.roc_packed(keys, 2, *[np.empty(4) for _ in range(3)], 0, 0, False, False)


# --------------------------------------------------------------------------
# the per-score table
# --------------------------------------------------------------------------

def _table_ref(y, s):
    s = s + 0.0                                      # -0.0 as 0.0
    u, inv = np.unique(s, return_inverse=True)
    n1 = np.bincount(inv, weights=y.astype(np.int64), minlength=u.shape[0]).astype(np.int64)
    return u, np.bincount(inv, minlength=u.shape[0]) - n1, n1


@needs_lib
@pytest.mark.parametrize("distinct", [1, 3, 127, 128, 129, 5000])
@pytest.mark.parametrize("ydt", [bool, np.uint16, np.int64])
def test_score_table_equals_unique_counts(distinct, ydt, monkeypatch):
    # the table doubles from 1024 slots at 128, 256, ... distinct scores
    rng = np.random.default_rng(distinct)
    n = 40_000
    vals = np.round(rng.normal(size=distinct), 6)
    vals[0] = -0.0
    s = vals[rng.integers(0, distinct, n)]
    y = (rng.random(n) < 0.3).astype(ydt)
    monkeypatch.setattr(Rg, "_TABLE_SAMPLE_DISTINCT", n)
    tab = Rg.counted_table(s, y)
    assert tab is not None
    u, n0, n1 = _table_ref(y, s)
    np.testing.assert_array_equal(tab[0], u)
    assert not np.signbit(tab[0][tab[0] == 0]).any()          # -0.0 reported as 0.0
    np.testing.assert_array_equal(tab[2], n0)
    np.testing.assert_array_equal(tab[1], n1)
    assert Rg.table_totals(tab) == (int(n1.sum()), n - int(n1.sum()))
    # the sorting table of the same rows (weights given: no counting pass)
    for a, b in zip(tab, Rg.score_table(s, y, np.ones(n, np.int64))):
        np.testing.assert_array_equal(a, b)


@needs_lib
def test_score_table_stops_past_its_cap_and_on_bad_labels(monkeypatch):
    rng = np.random.default_rng(5)
    s = rng.normal(size=1000)
    y = np.zeros(1000, np.int64)
    vals, cnt = np.empty(999, np.uint64), np.empty(2 * 999, np.int64)
    assert lib.score_table(s, y, vals, cnt) == -1
    vals, cnt = np.empty(1000, np.uint64), np.empty(2 * 1000, np.int64)
    assert lib.score_table(s, y, vals, cnt) == 1000
    y[3] = 2
    assert lib.score_table(s, y, vals, cnt) == -2
    with pytest.raises(ValueError, match="sizes"):
        lib.score_table(s, y[:10], vals, cnt)
    # through rankstats: past the cap the packed sort takes over, with the same AUC
    monkeypatch.setattr(R, "_TABLE_MIN_N", 1)
    monkeypatch.setattr(Rg, "_TABLE_CAP", 50)
    yy = (rng.random(1000) < 0.5).astype(np.int64)
    ss = np.round(rng.normal(size=1000), 2)
    assert Rg.counted_table(ss, yy) is None
    assert isinstance(R.one_pass(yy, ss), R.Packed)
    monkeypatch.setattr(Rg, "_TABLE_CAP", 1 << 14)
    assert Rg.counted_table(ss, yy) is not None
    assert not isinstance(R.one_pass(yy, ss), R.Packed)
    a = calipers.roc_auc_score(yy, ss)
    monkeypatch.setattr(Rg, "_TABLE_CAP", 50)
    assert calipers.roc_auc_score(yy, ss) == a


@needs_lib
@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 300),
                  elements=st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 1e-308, 5e-324, -2.5,
                                            1e300, -1e300, 3.0, 0.1])),
       st.integers(0, 2**32 - 1))
def test_score_table_auc_ap_equal_exact_references(s, seed):
    rng = np.random.default_rng(seed)
    y = (rng.random(s.shape[0]) < 0.5).astype(np.int64)
    vals, cnt = np.empty(64, np.uint64), np.empty(128, np.int64)
    G = lib.score_table(s, y, vals, cnt)
    u, n0, n1 = _table_ref(y, s)
    assert G == u.shape[0]
    order = np.argsort(vals[:G].view(np.float64))
    tab = (vals[:G].view(np.float64)[order], cnt[1:2 * G:2][order], cnt[:2 * G:2][order])
    P, N = R.one_pass_totals(tab)
    assert (P, N) == (int(y.sum()), s.shape[0] - int(y.sum()))
    if P and N:
        pos, neg = s[y == 1].tolist(), s[y == 0].tolist()
        u2 = sum(2 * (p > q) + (p == q) for p in pos for q in neg)
        assert R.one_pass_u2(tab) == u2
    if P:
        exact, tp, fp = Fraction(0), 0, 0
        for v, a, b in zip(u[::-1], n0[::-1], n1[::-1]):
            tp, fp = tp + int(b), fp + int(a)
            if b:
                exact += Fraction(int(b) * tp, tp + fp)
        assert R.one_pass_ap(tab, P) == pytest.approx(float(exact / P), rel=1e-14)


@needs_lib
def test_heavily_tied_public_results_equal_numpy_passes(monkeypatch):
    # above _TABLE_MIN_N rows the table path is taken by the public functions
    rng = np.random.default_rng(8)
    n = 2 * R._TABLE_MIN_N + 5
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = np.round(rng.normal(size=n) + y, 1).astype(np.float32)
    assert not isinstance(R.one_pass(y, s), R.Packed)
    got = (calipers.roc_auc_score(y, s), calipers.average_precision_score(y, s),
           calipers.roc_curve(y, s), calipers.precision_recall_curve(y, s))
    _numpy(monkeypatch)
    ref = (calipers.roc_auc_score(y, s), calipers.average_precision_score(y, s),
           calipers.roc_curve(y, s), calipers.precision_recall_curve(y, s))
    assert got[0] == ref[0] and got[0].dtype == ref[0].dtype
    np.testing.assert_array_max_ulp(got[1], ref[1], maxulp=8)
    for g, r in zip(got[2] + got[3], ref[2] + ref[3]):
        assert g.dtype == r.dtype
        np.testing.assert_array_equal(g, r)


# --------------------------------------------------------------------------
# the bootstrap: counts and AUC parts
# --------------------------------------------------------------------------

@needs_lib
@pytest.mark.parametrize("n", [1, 20, 26, 1000, 100_003])
def test_draws_equal_numpy_passes(n):
    words = RS.seed_words(11)
    thresholds, M = RS.topup_plan(n)
    T = np.asarray(thresholds, dtype=np.uint32)
    layout = np.random.default_rng(n).permutation(n)
    inv = np.argsort(layout).astype(np.intp)
    kgx = RS._shifted_keys(np.concatenate([layout.astype(np.uint32),
                                           np.arange(M, dtype=np.uint32) + np.uint32(n)])
                           * RS._GOLDEN)
    for r in (0, 1, 7, 2**32 - 1):
        keys = RS._replicate_keys_int(words, r)
        x, tmp = np.empty(kgx.shape[0], np.uint32), np.empty(kgx.shape[0], np.uint32)
        RS._hash_inplace(kgx, keys, x, tmp)
        if T.shape[0]:      # Poisson counts of the rows
            c_ref, ge = np.empty(n, np.uint8), np.empty(n, bool)
            total = RS._poisson_inplace(x[:n], T, c_ref, ge)
            c = np.empty(n, np.uint8)
            assert lib.poisson_draw(kgx[:n], *keys, T, c) == total
            np.testing.assert_array_equal(c, c_ref)
        # the whole multinomial draw: Poisson part and top-up
        c = np.full(n, 99, np.uint8)
        k = kgx if T.shape[0] else kgx[n:]
        status = lib.topup_draw(k, *keys, T, n, M, inv, c)
        if status == -1:
            continue
        assert status == 0 and int(c.sum()) == n
        extra = x[n:]
        total = int(c_ref.sum()) if T.shape[0] else 0
        ref = c_ref.astype(np.int64) if T.shape[0] else np.zeros(n, np.int64)
        pos = (extra[:n - total].astype(np.uint64) * np.uint64(n)) >> np.uint64(32)
        np.add.at(ref, inv[pos.astype(np.intp)], 1)
        np.testing.assert_array_equal(c, ref)


@needs_lib
def test_draw_refusals():
    T = np.asarray(RS._POISSON_T, dtype=np.uint32)
    with pytest.raises(ValueError, match="sizes"):
        lib.topup_draw(np.zeros(10, np.uint32), 1, 2, T, 8, 3, None, np.empty(8, np.uint8))
    with pytest.raises(ValueError, match="too short"):
        lib.poisson_draw(np.zeros(10, np.uint32), 1, 2, T, np.empty(5, np.uint8))
    # a layout inverse holding a position past n is refused, not written through
    with pytest.raises(ValueError, match="inv"):
        lib.topup_draw(np.zeros(7, np.uint32), 0, 3, np.zeros(0, np.uint32), 5, 7,
                       np.full(5, 9, np.intp), np.zeros(5, np.uint8))
    # five rows of one word draw one count v each: the top-up takes them only when
    # 5 v <= 5 and 5 - 5 v <= M (here M = 2); else the caller draws directly (-1)
    for k1 in range(40):
        x, tmp = np.empty(1, np.uint32), np.empty(1, np.uint32)
        RS._hash_inplace(np.zeros(1, np.uint32), (k1, 3), x, tmp)
        v = int(np.sum(x[0] >= T))
        status = lib.topup_draw(np.zeros(7, np.uint32), k1, 3, T, 5, 2, None,
                                np.empty(5, np.uint8))
        assert status == (0 if v == 1 else -1)


def _split_ref(counts, N, models):
    """The plan's sums in Python integers: count * (C[off + lo] + C[off + hi]) per read row."""
    C = np.concatenate([[0], np.cumsum(counts.astype(object))])
    out = []
    for r0, m, off, perm, lo, hi in models:
        cr = counts[r0:r0 + m].astype(object)
        cr = cr if perm is None else cr[perm]
        hi = lo if hi is None else hi
        out.append(int(np.sum(cr * (C[off + lo] + C[off + hi]))) if m else 0)
    return int(C[N]), int(C[-1]), tuple(out)


@needs_lib
def test_split_parts_equal_python_integers():
    rng = np.random.default_rng(9)
    n, N = 5000, 3100
    for counts in (rng.integers(0, 6, n).astype(np.uint8),
                   rng.integers(0, 2**40, n).astype(np.int64)):      # sums past 2**64
        lo_a = np.sort(rng.integers(0, N + 1, n - N))
        hi_a = np.minimum(lo_a + rng.integers(0, 3, n - N), N)
        hi_a = np.maximum.accumulate(hi_a)
        lo_b = np.sort(rng.integers(0, n - N + 1, N))
        models = ((N, n - N, 0, rng.permutation(n - N).astype(np.intp), lo_a, hi_a),
                  (0, N, N, None, lo_b, None))
        plan = lib.split_plan(N, n, models)
        C = np.empty(n + 1, np.int64)
        assert lib.split_parts(plan, counts, C) == _split_ref(counts, N, models)


@needs_lib
def test_split_plan_refuses_what_it_cannot_read():
    lo = np.array([0, 1, 2], dtype=np.intp)
    ok = (2, 3, 0, None, lo, None)
    lib.split_plan(2, 5, (ok,))
    for bad in ((2, 3, 0, None, np.array([0, 3, 2], np.intp), None),      # not ascending
                (2, 3, 0, None, np.array([0, 1, 6], np.intp), None),      # past n - off
                (2, 3, 4, None, lo, None),                                # past n - off
                (3, 3, 0, None, lo, None),                                # rows past n
                (2, 3, 0, np.array([0, 0, 1], np.intp), lo, None),        # not a permutation
                (2, 3, 0, None, lo[:2], None)):                           # wrong length
        with pytest.raises(ValueError, match="out of range"):
            lib.split_plan(2, 5, (bad,))
    plan = lib.split_plan(2, 5, (ok,))
    with pytest.raises(ValueError, match="length"):
        lib.split_parts(plan, np.zeros(4, np.uint8), np.empty(6, np.int64))
    with pytest.raises(ValueError, match="uint8 or int64"):
        lib.split_parts(plan, np.zeros(5, np.int32), np.empty(6, np.int64))


DESIGNS = [dict(), dict(resampling="poisson"), dict(stratify=True),
           dict(resampling="poisson", row_ids=True)]


@needs_lib
@pytest.mark.parametrize("design", range(len(DESIGNS)))
@pytest.mark.parametrize("n", [30, 2000])
def test_bootstrap_replicates_equal_numpy_passes(design, n, monkeypatch):
    kw = dict(DESIGNS[design])
    rng = np.random.default_rng(n + design)
    y = (rng.random(n) < 0.3).astype(np.int64)
    y[:2] = 0, 1
    a = rng.normal(size=n) + y
    b = np.round(rng.normal(size=n) + 0.5 * y, 1)       # ties: both bounds read
    if kw.pop("row_ids", False):
        kw["row_ids"] = rng.choice(10**12, n, replace=False)

    def run():
        return [np.asarray(v) for v in calipers.paired_bootstrap_replicates(
            calipers.roc_auc_score, y, a, b, n_resamples=300, seed=4, **kw)]

    got = run()
    _numpy(monkeypatch)
    for g, r in zip(got, run()):
        np.testing.assert_array_equal(g, r)


@needs_lib
def test_compiled_passes_run_side_by_side():
    # the passes release the GIL: threads sharing one plan and table give each their own
    # right answer
    rng = np.random.default_rng(12)
    n = 200_000
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = rng.normal(size=n) + y
    want = calipers.roc_auc_score(y, s)
    got = []

    def work():
        for _ in range(5):
            got.append(calipers.roc_auc_score(y, s))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [want] * 20
