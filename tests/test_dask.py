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
