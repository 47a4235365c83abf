"""calipers.dask against one machine: states, exact AUC and the Poisson paired bootstrap."""

import numpy as np
import pytest

dask = pytest.importorskip("dask")

import calipers  # noqa: E402
import calipers.dask as cd  # noqa: E402

RNG = np.random.default_rng(0)
N = 200
Y = RNG.integers(0, 2, N)
A = np.round(RNG.random(N), 1)          # ties, across partitions too
Bs = RNG.random(N)
PA, PB = (A > .5).astype(int), (Bs > .5).astype(int)


def parts(cuts):
    cuts = [0, *cuts, N]
    return [dask.delayed({"y": Y[i:j], "a": A[i:j], "b": Bs[i:j], "pa": PA[i:j],
                          "pb": PB[i:j], "pra": np.clip(A[i:j], .05, .95)})
            for i, j in zip(cuts[:-1], cuts[1:])]


CUTS = [[0, 37, 90, 150], [100], [1, 2, 199]]     # an empty partition in the first


@pytest.fixture(autouse=True)
def sync():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.mark.parametrize("cuts", CUTS)
def test_auc_exact(cuts):
    assert cd.roc_auc_score(parts(cuts), "y", "a") == calipers.roc_auc_score(Y, A)


@pytest.mark.parametrize("cuts", CUTS)
def test_states(cuts):
    st = cd.reduce_states(parts(cuts), lambda: calipers.ConfusionState.init(2),
                          lambda s, p: s.update(p["y"], p["pa"]))
    np.testing.assert_array_equal(st.counts, calipers.ConfusionState.init(2).update(Y, PA).counts)


@pytest.mark.parametrize("cuts", CUTS)
def test_bootstrap(cuts):
    ra, rb = cd.paired_bootstrap_replicates(parts(cuts), "roc_auc", "y", "a", "b",
                                            n_resamples=5, seed=3)
    ea, eb = calipers.paired_bootstrap_replicates("roc_auc", Y, A, Bs, n_resamples=5, seed=3,
                                                  resampling="poisson")
    np.testing.assert_array_equal(ra, ea)
    np.testing.assert_array_equal(rb, eb)
    ra, rb = cd.paired_bootstrap_replicates(parts(cuts), "accuracy", "y", "pa", "pb",
                                            n_resamples=5, seed=3)
    ea, eb = calipers.paired_bootstrap_replicates(calipers.accuracy_score, Y, PA, PB,
                                                  n_resamples=5, seed=3, resampling="poisson")
    np.testing.assert_array_equal(ra, ea)
    np.testing.assert_array_equal(rb, eb)


def test_nan_score_raises():
    p = parts([100])
    bad = dask.delayed({"y": np.array([0, 1]), "a": np.array([np.nan, .1])})
    with pytest.raises(ValueError, match="finite"):
        cd.roc_auc_score([p[0], bad], "y", "a")


def test_dask_array_to_one_shot_refused():
    import dask.array as darr

    y = darr.from_array(Y, chunks=50)
    s = darr.from_array(A, chunks=50)
    with pytest.raises(ValueError, match=r"is a dask array.*calipers\.dask"):
        calipers.roc_auc_score(Y, s)
    with pytest.raises(ValueError, match=r"dask array.*calipers\.dask"):
        calipers.average_precision_score(y, A)
    # computed first, the same call gives the in-memory answer
    assert calipers.roc_auc_score(y.compute(), s.compute()) == calipers.roc_auc_score(Y, A)


# --------------------------------------------------------------------------
# faults: the same answer or error as one machine
# --------------------------------------------------------------------------

def test_empty_partitions_change_nothing():
    empty = {k: v[:0] for k, v in dask.compute(parts([100]))[0][0].items()}
    ps = [dask.delayed(empty), *parts([100]), dask.delayed(empty)]
    assert cd.roc_auc_score(ps, "y", "a") == calipers.roc_auc_score(Y, A)
    st = cd.reduce_states(ps, lambda: calipers.ROCHistogramState.init(16),
                          lambda s, p: s.update(p["y"], p["a"]))
    one = calipers.ROCHistogramState.init(16).update(Y, A)
    np.testing.assert_array_equal(st.pos, one.pos)
    np.testing.assert_array_equal(st.neg, one.neg)
    ra, _ = cd.paired_bootstrap_replicates(ps, "roc_auc", "y", "a", "b", n_resamples=4, seed=1)
    ea, _ = calipers.paired_bootstrap_replicates("roc_auc", Y, A, Bs, n_resamples=4, seed=1,
                                                 resampling="poisson")
    np.testing.assert_array_equal(ra, ea)


def test_slice_with_one_class_is_undefined_as_on_one_machine():
    g = (np.arange(N) % 3).astype(np.int64)
    y = np.where(g == 2, 1, Y)                          # slice 2: positives only
    ps = [dask.delayed({"y": y[i:j], "a": A[i:j], "g": g[i:j]})
          for i, j in ((0, 70), (70, 70), (70, N))]
    by = cd.reduce_states(ps, lambda: calipers.ROCHistogramState.init(16),
                          lambda s, p: s.update(p["y"], p["a"]), by="g")
    assert sorted(by) == [0, 1, 2]
    for k, st in by.items():
        one = calipers.ROCHistogramState.init(16).update(y[g == k], A[g == k])
        np.testing.assert_array_equal(st.pos, one.pos)
        np.testing.assert_array_equal(st.neg, one.neg)
    with pytest.warns(calipers.UndefinedMetricWarning):
        assert np.isnan(by[2].compute().roc_auc)
    assert by[0].compute().roc_auc == calipers.ROCHistogramState.init(16).update(
        y[g == 0], A[g == 0]).compute().roc_auc
    only = [dask.delayed({"y": y[g == 2][i:i + 20], "a": A[g == 2][i:i + 20]})
            for i in (0, 20, 40)]
    with pytest.warns(calipers.UndefinedMetricWarning):
        assert np.isnan(calipers.roc_auc_score(y[g == 2], A[g == 2]))
    with pytest.warns(calipers.UndefinedMetricWarning, match="one class") as rec:
        assert np.isnan(cd.roc_auc_score(only, "y", "a"))
    assert rec[0].filename == __file__                  # at the caller's line


def test_nan_in_one_partition_is_the_one_machine_error():
    a = A.copy()
    a[150] = np.nan
    ps = [dask.delayed({"y": Y[i:j], "a": a[i:j], "b": Bs[i:j]}) for i, j in ((0, 100),
                                                                             (100, N))]
    with pytest.raises(ValueError) as one:
        calipers.ROCHistogramState.init(16).update(Y, a)
    with pytest.raises(ValueError) as dist:
        cd.reduce_states(ps, lambda: calipers.ROCHistogramState.init(16),
                         lambda s, p: s.update(p["y"], p["a"]))
    assert "must be finite" in str(one.value) and "must be finite" in str(dist.value)
    with pytest.raises(ValueError, match="finite"):
        calipers.roc_auc_score(Y, a)
    with pytest.raises(ValueError, match="finite"):
        cd.roc_auc_score(ps, "y", "a")
    with pytest.raises(ValueError, match="finite"):
        cd.paired_bootstrap_replicates(ps, "roc_auc", "y", "a", "b", n_resamples=3, seed=1)


def test_worker_killed_mid_run_gives_the_same_result():
    import logging
    import os
    import threading
    import time

    distributed = pytest.importorskip("distributed")

    def update(s, p):                                   # slow enough to be killed mid-run
        time.sleep(0.15)
        return s.update(p["y"], p["pa"])

    cuts = np.linspace(0, N, 13).astype(int)
    ps = [dask.delayed({"y": Y[i:j], "pa": PA[i:j]}) for i, j in zip(cuts[:-1], cuts[1:])]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as cl, \
            distributed.Client(cl) as client:
        client.wait_for_workers(2)
        before = set(client.scheduler_info()["workers"])
        out = {}
        run = threading.Thread(target=lambda: out.update(st=cd.reduce_states(
            ps, lambda: calipers.ConfusionState.init(2), update,
            compute={"scheduler": client})))
        run.start()
        deadline = time.monotonic() + 10
        while not any(client.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        victim = sorted(before)[0]
        assert run.is_alive(), "the computation ended before a worker could be killed"
        try:                                            # the worker dies without replying
            client.run(os._exit, 1, workers=[victim])
        except Exception:
            pass
        run.join(60)
        assert not run.is_alive()
        assert victim not in set(client.scheduler_info()["workers"])
    np.testing.assert_array_equal(out["st"].counts,
                                  calipers.ConfusionState.init(2).update(Y, PA).counts)


# --------------------------------------------------------------------------
# exact AP (and AUC) by score ranges
# --------------------------------------------------------------------------

def _exact_ap(y, s, w=None):
    """The step-sum AP as an exact fraction, by brute force over the distinct scores."""
    from fractions import Fraction

    w = np.ones_like(y) if w is None else w
    P = int(np.sum(w * y))
    total = Fraction(0)
    for t in np.unique(s):
        at = s == t
        n1 = int(np.sum(w[at] * y[at]))
        if n1:
            tp, fp = int(np.sum(w * y * (s >= t))), int(np.sum(w * (1 - y) * (s >= t)))
            total += Fraction(n1 * tp, tp + fp)
    return total / P


def _close_to_exact(value, exact):
    from fractions import Fraction

    assert abs(Fraction(value) - exact) <= exact * Fraction(1, 2**52)


@pytest.mark.parametrize("cuts", CUTS)
def test_ap_by_ranges(cuts):
    got = cd.average_precision_score(parts(cuts), "y", "a")
    np.testing.assert_allclose(got, calipers.average_precision_score(Y, A), rtol=1e-13)
    _close_to_exact(got, _exact_ap(Y, A))
    # one double whatever the partitioning
    assert got == cd.average_precision_score(parts([50]), "y", "a")


def test_ranges_with_cuts_on_tied_scores():
    from calipers._kernels import ranges as R

    y = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 0])
    s = np.array([.3, .3, .3, .5, .5, .7, .7, .7, .9, .1])
    for cuts in ([], [.3], [.3, .5, .7], [.1, .9], [.2, .3, .31, .7]):
        r = R.range_ids(np.array(cuts), s)
        for t in np.unique(s):                      # a tie group lies in one range
            assert np.unique(r[s == t]).size == 1
        tables = [R.score_table(s[r == i], y[r == i]) for i in range(len(cuts) + 1)]
        u2 = R.combine_u2([R.table_u2(t) for t in tables])
        assert R.auc_of(*u2) == calipers.roc_auc_score(y, s)
        offsets = R.offsets_above([R.table_totals(t) for t in tables])
        total = sum(R.table_precision_sum(t, *o) for t, o in zip(tables, offsets))
        ap = R.ratio_of_sum(total, int(y.sum()))
        _close_to_exact(ap, _exact_ap(y, s))
        np.testing.assert_allclose(ap, calipers.average_precision_score(y, s), rtol=1e-14)


def test_exact_sum_is_exact():
    from fractions import Fraction

    from calipers._kernels import ranges as R

    t = RNG.random(300) * 10.0 ** RNG.integers(-300, 300, 300)
    t = np.concatenate([t, [5e-324, 1e-310, -3.5, 1e300, -1e300, 0.0]])
    assert Fraction(R.exact_sum(t), 2**R.SHIFT) == sum(map(Fraction, t.tolist()))


def test_weighted_ranges():
    w = RNG.integers(0, 4, N)
    ps = [dask.delayed({"y": Y[i:j], "a": A[i:j], "w": w[i:j]}) for i, j in
          ((0, 60), (60, 60), (60, N))]
    assert cd.roc_auc_score(ps, "y", "a", sample_weight="w") == \
        calipers.roc_auc_score(Y, A, sample_weight=w)
    got = cd.average_precision_score(ps, "y", "a", sample_weight="w")
    np.testing.assert_allclose(got, calipers.average_precision_score(Y, A, sample_weight=w),
                               rtol=1e-13)
    _close_to_exact(got, _exact_ap(Y, A, w))
    # integer weights are repetitions: the repeated rows give the same double
    rep = np.repeat(np.arange(N), w)
    assert got == cd.average_precision_score(
        [dask.delayed({"y": Y[rep], "a": A[rep]})], "y", "a")
    bad = [dask.delayed({"y": Y[:4], "a": A[:4], "w": np.array([1, .5, 1, 1])})]
    with pytest.raises(ValueError, match="w must hold non-negative integer"):
        cd.average_precision_score(bad, "y", "a", sample_weight="w")


def test_ap_one_class_and_no_rows():
    neg = [dask.delayed({"y": np.zeros(30, int), "a": A[:30]}), dask.delayed(
        {"y": np.zeros(0, int), "a": A[:0]})]
    with pytest.warns(calipers.UndefinedMetricWarning, match="positive"):
        assert np.isnan(calipers.average_precision_score(np.zeros(30, int), A[:30]))
    with pytest.warns(calipers.UndefinedMetricWarning, match="positive") as rec:
        assert np.isnan(cd.average_precision_score(neg, "y", "a"))
    assert rec[0].filename == __file__
    pos = [dask.delayed({"y": np.ones(30, int), "a": A[:30]})]
    assert cd.average_precision_score(pos, "y", "a") == 1.0
    empty = [dask.delayed({"y": np.zeros(0, int), "a": np.zeros(0)})] * 2
    for fn in (cd.roc_auc_score, cd.average_precision_score):
        with pytest.raises(ValueError, match="empty"):
            fn(empty, "y", "a")
    with pytest.raises(ValueError, match="must contain only 0 and 1"):
        cd.average_precision_score([dask.delayed({"y": np.array([0, 2]), "a": A[:2]})],
                                   "y", "a")


def test_ap_shuffled_unequal_partitions():
    rng = np.random.default_rng(5)
    n = 2000
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n) + 0.3 * y, 2)
    perm = rng.permutation(n)
    bounds = [0, 1, 1, 700, 703, 1990, n]
    ps = [dask.delayed({"y": y[perm[i:j]], "a": s[perm[i:j]]})
          for i, j in zip(bounds[:-1], bounds[1:])]
    assert cd.roc_auc_score(ps, "y", "a") == calipers.roc_auc_score(y, s)
    got = cd.average_precision_score(ps, "y", "a")
    np.testing.assert_allclose(got, calipers.average_precision_score(y, s), rtol=1e-13)
    _close_to_exact(got, _exact_ap(y, s))


def test_ranges_hypothesis_partitions():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    want_auc = calipers.roc_auc_score(Y, A)
    want_ap = cd.average_precision_score(parts([100]), "y", "a")

    @hyp.settings(max_examples=8, deadline=None, database=None)
    @hyp.given(st.lists(st.integers(0, N), max_size=6), st.randoms(use_true_random=False))
    def check(cuts, rnd):
        order = list(range(N))
        rnd.shuffle(order)
        order = np.array(order)
        cuts = sorted(cuts)
        b = [0, *cuts, N]
        ps = [dask.delayed({"y": Y[order[i:j]], "a": A[order[i:j]]}) for i, j in
              zip(b[:-1], b[1:])]
        assert cd.roc_auc_score(ps, "y", "a") == want_auc
        assert cd.average_precision_score(ps, "y", "a") == want_ap

    check()


# --------------------------------------------------------------------------
# the default multinomial design in two passes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("cuts", CUTS)
def test_multinomial_bootstrap_equals_the_one_machine_default(cuts):
    for metric, a, b in (("roc_auc", "a", "b"), ("accuracy", "pa", "pb")):
        ra, rb = cd.paired_bootstrap_replicates(parts(cuts), metric, "y", a, b, n_resamples=6,
                                                seed=5, resampling="multinomial")
        fn = "roc_auc" if metric == "roc_auc" else calipers.accuracy_score
        cols = {"a": A, "b": Bs, "pa": PA, "pb": PB}
        ea, eb = calipers.paired_bootstrap_replicates(fn, Y, cols[a], cols[b], n_resamples=6,
                                                      seed=5)
        np.testing.assert_array_equal(ra, ea)
        np.testing.assert_array_equal(rb, eb)
        pa_, _ = cd.paired_bootstrap_replicates(parts(cuts), metric, "y", a, b, n_resamples=6,
                                                seed=5)
        assert not np.array_equal(pa_, ra)            # the Poisson default differs
    pr = np.clip(Bs, .05, .95)
    ps = [dask.delayed({**dask.compute(p)[0], "prb": pr[i:j]})
          for p, (i, j) in zip(parts(cuts), zip([0, *cuts], [*cuts, N]))]
    la, lb = cd.paired_bootstrap_replicates(ps, "log_loss", "y", "pra", "prb", n_resamples=6,
                                            seed=5, resampling="multinomial")
    ea, eb = calipers.paired_bootstrap_replicates("log_loss", Y, np.clip(A, .05, .95), pr,
                                                  n_resamples=6, seed=5)
    np.testing.assert_allclose(la, ea, rtol=1e-12)
    np.testing.assert_allclose(lb, eb, rtol=1e-12)


def test_multinomial_with_a_fallback_replicate(monkeypatch):
    # lam = 1: about half the replicates' Poisson totals pass n, drawn directly per partition
    from calipers._bootstrap import resample as RS

    monkeypatch.setattr(RS, "_TOPUP_SIGMAS", 0.0)
    RS.topup_plan.cache_clear()
    try:
        ra, _ = cd.paired_bootstrap_replicates(parts([0, 37, 90, 150]), "roc_auc", "y", "a",
                                               "b", n_resamples=8, seed=2,
                                               resampling="multinomial")
        ea, _ = calipers.paired_bootstrap_replicates("roc_auc", Y, A, Bs, n_resamples=8, seed=2)
        np.testing.assert_array_equal(ra, ea)
        tot = calipers.multinomial_totals(np.arange(N), np.arange(8), n=N, seed=2)
        assert (tot > N).any() and (tot <= N).any()
    finally:
        RS.topup_plan.cache_clear()


@pytest.mark.parametrize("resampling", ["poisson", "multinomial"])
def test_replicates_in_blocks_change_nothing(monkeypatch, resampling):
    # a task holds counts for a block of replicates at a time: blocks of 1-2 replicates here
    want = [cd.paired_bootstrap_replicates(parts([100]), m, "y", a, b, n_resamples=5, seed=4,
                                           resampling=resampling)
            for m, a, b in (("roc_auc", "a", "b"), ("accuracy", "pa", "pb"))]
    monkeypatch.setattr(cd, "_BLOCK", 150)
    got = [cd.paired_bootstrap_replicates(parts([100]), m, "y", a, b, n_resamples=5, seed=4,
                                          resampling=resampling)
           for m, a, b in (("roc_auc", "a", "b"), ("accuracy", "pa", "pb"))]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g[0], w[0])
        np.testing.assert_array_equal(g[1], w[1])


def test_multinomial_refuses_row_id():
    with pytest.raises(ValueError, match="row_id needs resampling='poisson'"):
        cd.paired_bootstrap_replicates(parts([100]), "accuracy", "y", "pa", "pb",
                                       n_resamples=3, resampling="multinomial", row_id="y")
    with pytest.raises(ValueError, match="resampling must be one of"):
        cd.paired_bootstrap_replicates(parts([100]), "accuracy", "y", "pa", "pb",
                                       n_resamples=3, resampling="stratified")


# --------------------------------------------------------------------------
# faults: every function gives the one-shot function's ValueError
# --------------------------------------------------------------------------

def _one_shot_message(fn):
    with pytest.raises(ValueError) as e:
        fn()
    return str(e.value)


def _rule(msg):
    """The one-shot message up to the element's position (the position is per partition)."""
    return msg.split("; element")[0].split("; it has")[0]


def _bad(col, i, value):
    cols = {"y": Y.copy(), "a": A.copy(), "b": Bs.copy(), "pa": PA.astype(float),
            "pb": PB.astype(float), "pra": np.clip(A, .05, .95), "prb": np.clip(Bs, .05, .95)}
    cols[col] = cols[col].astype(float) if col == "y" and not float(value).is_integer() \
        else cols[col]
    cols[col][i] = value
    return cols, [dask.delayed({k: v[s:t] for k, v in cols.items()})
                  for s, t in ((0, 120), (120, N))]


FAULTS = [   # (column, value, dask call, one-shot call), the bad row in partition 1
    ("a", np.nan, lambda ps: cd.roc_auc_score(ps, "y", "a"),
     lambda c: calipers.roc_auc_score(c["y"], c["a"])),
    ("a", np.inf, lambda ps: cd.roc_auc_score(ps, "y", "a"),
     lambda c: calipers.roc_auc_score(c["y"], c["a"])),
    ("a", np.nan, lambda ps: cd.paired_bootstrap_replicates(ps, "roc_auc", "y", "a", "b",
                                                            n_resamples=3, seed=0),
     lambda c: calipers.paired_bootstrap_replicates("roc_auc", c["y"], c["a"], c["b"],
                                                    n_resamples=3, seed=0)),
    ("b", -np.inf, lambda ps: cd.paired_bootstrap_replicates(
        ps, "roc_auc", "y", "a", "b", n_resamples=3, seed=0, resampling="multinomial"),
     lambda c: calipers.paired_bootstrap_replicates("roc_auc", c["y"], c["a"], c["b"],
                                                    n_resamples=3, seed=0)),
    ("y", 2, lambda ps: cd.paired_bootstrap_replicates(ps, "roc_auc", "y", "a", "b",
                                                       n_resamples=3, seed=0),
     lambda c: calipers.paired_bootstrap_replicates("roc_auc", c["y"], c["a"], c["b"],
                                                    n_resamples=3, seed=0)),
    ("pa", np.nan, lambda ps: cd.paired_bootstrap_replicates(ps, "accuracy", "y", "pa", "pb",
                                                             n_resamples=3, seed=0),
     lambda c: calipers.paired_bootstrap_replicates(calipers.accuracy_score, c["y"], c["pa"],
                                                    c["pb"], n_resamples=3, seed=0)),
    ("pra", 1.5, lambda ps: cd.paired_bootstrap_replicates(ps, "log_loss", "y", "pra", "prb",
                                                           n_resamples=3, seed=0),
     lambda c: calipers.paired_bootstrap_replicates("log_loss", c["y"], c["pra"], c["prb"],
                                                    n_resamples=3, seed=0)),
    ("prb", np.nan, lambda ps: cd.paired_bootstrap_replicates(
        ps, "log_loss", "y", "pra", "prb", n_resamples=3, seed=0, resampling="multinomial"),
     lambda c: calipers.paired_bootstrap_replicates("log_loss", c["y"], c["pra"], c["prb"],
                                                    n_resamples=3, seed=0)),
    ("y", 3, lambda ps: cd.paired_bootstrap_replicates(ps, "log_loss", "y", "pra", "prb",
                                                       n_resamples=3, seed=0),
     lambda c: calipers.paired_bootstrap_replicates("log_loss", c["y"], c["pra"], c["prb"],
                                                    n_resamples=3, seed=0)),
]


@pytest.mark.parametrize("col, value, dist, one", FAULTS)
def test_fault_is_the_one_shot_error(col, value, dist, one):
    cols, ps = _bad(col, 150, value)
    want = _one_shot_message(lambda: one(cols))
    with pytest.raises(ValueError) as got:
        dist(ps)
    msg = str(got.value)
    assert _rule(msg) == _rule(want), (msg, want)
    if "; element" in want:                       # the element counted within its partition
        assert "element 30 is" in msg and "partition 1" in msg and repr(col) in msg


def test_labels_out_of_range_in_the_exact_auc():
    cols, ps = _bad("y", 150, 2)
    with pytest.raises(ValueError, match=r"^y_true must contain only 0 and 1.*partition 1.*"
                       r"0/1 or booleans only"):
        cd.roc_auc_score(ps, "y", "a")
    y = np.where(np.arange(N) < 120, 2 * Y - 1, Y)   # partition 0 coded {-1, 1}, 1 {0, 1}
    ps = [dask.delayed({"y": y[s:t], "a": A[s:t]}) for s, t in ((0, 120), (120, N))]
    with pytest.raises(ValueError, match=r"y_true must contain only 0 and 1 in calipers.dask"):
        cd.roc_auc_score(ps, "y", "a")


# --------------------------------------------------------------------------
# 4 * 10^7 rows on two workers of 600 MB each (--runslow)
# --------------------------------------------------------------------------

BIG_N, BIG_PARTS, LEVELS = 40_000_000, 40, 4096


@pytest.mark.slow
def test_forty_million_rows_on_two_600mb_workers():
    # helpers defined here: the worker processes receive them by value
    def _big_part(i, j):
        """Rows ``i .. j - 1``, made on the worker from (i, j); scores on a grid."""
        rng = np.random.default_rng([7, i])
        m = j - i
        y = (rng.random(m) < 0.3).astype(np.int64)
        a = (np.floor(np.clip(0.5 * y + rng.random(m) * 1.5, 0, 1.5 - 1e-12) / 1.5 * LEVELS)
             / LEVELS)
        pa = (a > 0.5).astype(np.int64)
        pb = (rng.random(m) < 0.5).astype(np.int64)
        return {"y": y, "a": a, "pa": pa, "pb": pb}

    def _level_counts(part):
        """Positives and negatives per score level: the partition's exact AUC ingredients."""
        lv = np.rint(part["a"] * LEVELS).astype(np.int64)
        return (np.bincount(lv[part["y"] == 1], minlength=LEVELS + 1),
                np.bincount(lv[part["y"] == 0], minlength=LEVELS + 1))

    def _reference_sums(part, offset, B, seed):
        """Poisson replicate sums of accuracy, drawn in chunks apart from calipers.dask."""
        m = part["y"].shape[0]
        out = [np.zeros(B, np.int64) for _ in range(3)]
        for s in range(0, m, 250_000):
            ids = np.arange(offset + s, offset + min(m, s + 250_000), dtype=np.int64)
            c = calipers.bootstrap_counts(ids, np.arange(B), seed=seed)
            sl = slice(s, s + ids.shape[0])
            out[0] += c @ (part["pa"][sl] == part["y"][sl])
            out[1] += c @ (part["pb"][sl] == part["y"][sl])
            out[2] += c.sum(axis=1)
        return out

    def _peak_rss():
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024     # Linux: KiB

    import logging

    distributed = pytest.importorskip("distributed")
    cuts = np.linspace(0, BIG_N, BIG_PARTS + 1).astype(np.int64)
    ps = [dask.delayed(_big_part, pure=True)(int(i), int(j)) for i, j in zip(cuts[:-1], cuts[1:])]
    B, seed = 4, 9
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit="600MB", dashboard_address=None,
                                  silence_logs=logging.ERROR) as cl, \
            distributed.Client(cl) as client:
        client.wait_for_workers(2)
        auc = cd.roc_auc_score(ps, "y", "a", compute={"scheduler": client})
        ra, rb = cd.paired_bootstrap_replicates(ps, "accuracy", "y", "pa", "pb", n_resamples=B,
                                                seed=seed, compute={"scheduler": client})
        # the references, computed partition-wise by other code
        pos, neg = (np.sum(x, axis=0) for x in zip(*dask.compute(
            *[dask.delayed(_level_counts)(p) for p in ps], scheduler=client)))
        sums = dask.compute(*[dask.delayed(_reference_sums)(p, int(o), B, seed)
                              for p, o in zip(ps, cuts[:-1])], scheduler=client)
        peaks = client.run(_peak_rss)       # bytes, each worker's peak resident memory
    print(f"peak worker RSS (MB): {sorted(round(v / 1e6) for v in peaks.values())}")
    assert all(v < 600e6 for v in peaks.values())
    below = np.concatenate([[0], np.cumsum(neg)[:-1]])
    u2 = sum(int(p) * (2 * int(b) + int(q)) for p, b, q in zip(pos, below, neg))
    P, Nn = int(pos.sum()), int(neg.sum())
    assert P + Nn == BIG_N
    assert auc == u2 / (2 * P * Nn)
    sa, sb, w = (np.sum([s[k] for s in sums], axis=0) for k in range(3))
    np.testing.assert_array_equal(ra, sa / w)
    np.testing.assert_array_equal(rb, sb / w)
    assert np.all(np.abs(w / BIG_N - 1) < 1e-3)        # Poisson(1): about n rows drawn
