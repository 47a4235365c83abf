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
