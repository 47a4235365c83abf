"""ROC AUC and AP against scikit-learn and one sort of the same scores, as ratios.

Script: ``python benchmarks/bench_auc.py [--n 10000000] [--repeat 3] [--jax] [--tied]``
prints the median of ``repeat`` runs of each implementation on the same input
and the ratios calipers / sort and calipers / scikit-learn (``--tied``: scores
rounded to 0.1, heavy ties; ``--jax``: also the jit-compiled JAX path, x64 on,
as ratios to ``jnp.sort`` of the same scores in the same run). This machine is
shared and noisy: read the ratios, not the absolute times.

pytest-benchmark: ``python -m pytest benchmarks/bench_auc.py --benchmark-only``
(n = 10^6, so the suite stays short).
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest

import calipers
from _timing import median_time


def make_data(n, seed=0, tied=False):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = rng.normal(size=n) + y
    if tied:
        s = np.round(s, 1)
    return y, s


def run(n, repeat, with_jax, tied=False, jax_only=False):
    import sklearn.metrics as skm

    y, s = make_data(n, tied=tied)
    rows = {"np.sort (floor)": lambda: np.sort(s)} if jax_only else {
        "np.sort (floor)": lambda: np.sort(s),
        "np.argsort": lambda: np.argsort(s),
        "calipers roc_auc_score": lambda: calipers.roc_auc_score(y, s),
        "calipers average_precision_score": lambda: calipers.average_precision_score(y, s),
        "sklearn roc_auc_score": lambda: skm.roc_auc_score(y, s),
        "sklearn average_precision_score": lambda: skm.average_precision_score(y, s),
    }
    res = {k: median_time(f, repeat) for k, f in rows.items()}
    if not jax_only:
        assert calipers.roc_auc_score(y, s) == pytest.approx(skm.roc_auc_score(y, s), rel=1e-12)
    if with_jax:
        import jax
        import jax.numpy as jnp

        jy, js = jnp.asarray(y), jnp.asarray(s)
        jsort = jax.jit(jnp.sort)
        jauc = jax.jit(calipers.roc_auc_score)
        jap = jax.jit(calipers.average_precision_score)
        for f in (jsort, jauc, jap):
            f(*((js,) if f is jsort else (jy, js))).block_until_ready()
        res["jnp.sort jit (floor)"] = median_time(lambda: jsort(js).block_until_ready(), repeat)
        res["calipers roc_auc_score jit"] = median_time(lambda: jauc(jy, js).block_until_ready(), repeat)
        res["calipers average_precision_score jit"] = median_time(
            lambda: jap(jy, js).block_until_ready(), repeat)
        # the JAX path counts exactly what the NumPy path counts
        assert float(jauc(jy, js)) == float(calipers.roc_auc_score(y, s))
        assert float(jap(jy, js)) == pytest.approx(calipers.average_precision_score(y, s),
                                                   rel=1e-12)
    floor = res["np.sort (floor)"]
    print(f"n = {n:,}, median of {repeat}{', tied (rounded to 0.1)' if tied else ''}")
    print(f"{'implementation':40s} {'seconds':>9s} {'/ np.sort':>10s}")
    for k, v in res.items():
        print(f"{k:40s} {v:9.3f} {v / floor:10.2f}")
    print()
    if not jax_only:
        print(f"roc_auc_score: calipers / sklearn = "
              f"{res['calipers roc_auc_score'] / res['sklearn roc_auc_score']:.3f}")
        print(f"average_precision_score: calipers / sklearn = "
              f"{res['calipers average_precision_score'] / res['sklearn average_precision_score']:.3f}")
    if with_jax:
        floor_jax = res["jnp.sort jit (floor)"]
        print(f"jit roc_auc_score / jit jnp.sort = "
              f"{res['calipers roc_auc_score jit'] / floor_jax:.2f}")
        print(f"jit average_precision_score / jit jnp.sort = "
              f"{res['calipers average_precision_score jit'] / floor_jax:.2f}")
    return res


# ---------------------------------------------------------------- pytest-benchmark

N_BENCH = 1_000_000


@pytest.fixture(scope="module")
def data():
    return make_data(N_BENCH)


@pytest.mark.benchmark(group="auc-1e6")
def test_calipers_auc(benchmark, data):
    benchmark(calipers.roc_auc_score, *data)


@pytest.mark.benchmark(group="auc-1e6")
def test_sklearn_auc(benchmark, data):
    import sklearn.metrics as skm
    benchmark(skm.roc_auc_score, *data)


@pytest.mark.benchmark(group="auc-1e6")
def test_np_sort_floor(benchmark, data):
    benchmark(np.sort, data[1])


@pytest.mark.benchmark(group="ap-1e6")
def test_calipers_ap(benchmark, data):
    benchmark(calipers.average_precision_score, *data)


@pytest.mark.benchmark(group="ap-1e6")
def test_sklearn_ap(benchmark, data):
    import sklearn.metrics as skm
    benchmark(skm.average_precision_score, *data)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=10_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--jax", action="store_true", help="also time the jit-compiled JAX path")
    p.add_argument("--tied", action="store_true", help="scores rounded to 0.1 (heavy ties)")
    p.add_argument("--jax-only", action="store_true",
                   help="with --jax: only the JAX rows (and np.sort), no scikit-learn")
    a = p.parse_args()
    if a.jax:
        import jax

        jax.config.update("jax_enable_x64", True)
    run(a.n, a.repeat, a.jax, a.tied, a.jax_only)
