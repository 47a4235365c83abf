"""Per-query NDCG@10 against scikit-learn, pytrec_eval and ranx; grouped AUC against a loop.

Script (the numbers for the closing note)::

    python benchmarks/bench_retrieval.py --queries 1000 10000 100000 --docs 100 [--jax]
    python benchmarks/bench_retrieval.py --gauc-groups 10000

prints, for each size, the median of ``--repeat`` runs of each implementation
on the same data, with construction (building the library's input objects)
and evaluation timed apart, and the ratios reference / calipers. The scores
are distinct float32 values, so every library sees the same ranking and the
values are cross-checked (trec_eval reads scores as 32-bit floats). This
machine is shared and noisy: read the ratios, not the absolute times.

pytest-benchmark (small sizes only, so the default run stays short)::

    python -m pytest benchmarks/bench_retrieval.py --benchmark-only
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pytest

from calipers import retrieval
from _timing import median_time

K = 10


def make_data(n_queries, n_docs, seed=0):
    """Flat rows grouped by query: graded relevance 0..3 (about 30% relevant)."""
    rng = np.random.default_rng(seed)
    n = n_queries * n_docs
    q = np.repeat(np.arange(n_queries, dtype=np.int64), n_docs)
    y = rng.choice(4, size=n, p=[0.7, 0.15, 0.1, 0.05]).astype(np.int64)
    # distinct within a query and exactly representable in float32
    s = (rng.permuted(np.tile(np.arange(n_docs), n_queries).reshape(n_queries, n_docs), axis=1)
         .reshape(-1).astype(np.float64) / n_docs + 0.25)
    return q, y, s


# --------------------------------------------------------------------------
# one implementation each: (construct(q, y, s) -> obj, evaluate(obj) -> mean NDCG@10)
# --------------------------------------------------------------------------

def calipers_flat():
    return (lambda q, y, s: (y, s, q),
            lambda a: float(retrieval.ndcg(a[0], a[1], a[2], k=K, undefined="zero").mean))


def calipers_shuffled():
    """Rows in random order: one extra argsort of the query ids groups them."""
    def construct(q, y, s):
        p = np.random.default_rng(5).permutation(q.shape[0])
        return y[p], s[p], q[p]

    return construct, calipers_flat()[1]


def calipers_jax_jit(n_queries):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    f = jax.jit(lambda y, s, q: retrieval.ndcg(y, s, q, k=K, undefined="zero",
                                                num_segments=n_queries).mean)

    def construct(q, y, s):
        a = (jnp.asarray(y), jnp.asarray(s), jnp.asarray(q))
        f(*a).block_until_ready()          # compile outside the timing
        return a

    return construct, lambda a: float(f(*a).block_until_ready())


def sklearn_ndcg():
    from sklearn.metrics import ndcg_score

    def construct(q, y, s):
        Q = int(q[-1]) + 1
        return y.reshape(Q, -1), s.reshape(Q, -1)

    return construct, lambda a: float(ndcg_score(a[0], a[1], k=K))


def _dicts(q, y, s):
    Q = int(q[-1]) + 1
    L = y.shape[0] // Q
    docs = [f"d{j}" for j in range(L)]
    Y, S = y.reshape(Q, L).tolist(), s.reshape(Q, L).tolist()
    qrels = {str(i): dict(zip(docs, Y[i])) for i in range(Q)}
    run = {str(i): dict(zip(docs, S[i])) for i in range(Q)}
    return qrels, run


def pytrec_eval_ndcg():
    import pytrec_eval

    def construct(q, y, s):
        qrels, run = _dicts(q, y, s)
        return pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{K}"}), run

    def evaluate(a):
        res = a[0].evaluate(a[1])
        return float(np.mean([v[f"ndcg_cut_{K}"] for v in res.values()]))

    return construct, evaluate


def ranx_ndcg():
    import ranx

    def construct(q, y, s):
        qrels, run = _dicts(q, y, s)
        return ranx.Qrels(qrels), ranx.Run(run)

    return construct, lambda a: float(ranx.evaluate(a[0], a[1], f"ndcg@{K}"))


def available():
    impls = {"calipers (NumPy, flat arrays)": calipers_flat,
             "calipers (NumPy, rows shuffled)": calipers_shuffled,
             "scikit-learn ndcg_score": sklearn_ndcg}
    try:
        import pytrec_eval  # noqa: F401
        impls["pytrec_eval"] = pytrec_eval_ndcg
    except ImportError:
        pass
    try:
        import ranx  # noqa: F401
        impls["ranx"] = ranx_ndcg
    except ImportError:
        pass
    return impls


def run_size(n_queries, n_docs, repeat, with_jax, skip=()):
    q, y, s = make_data(n_queries, n_docs)
    impls = available()
    if with_jax:
        impls["calipers (JAX jit, CPU)"] = lambda: calipers_jax_jit(n_queries)
    sort_floor = median_time(lambda: np.sort(s), repeat)
    rows = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, make in impls.items():
            if any(x in name for x in skip):
                continue
            construct, evaluate = make()
            if name == "ranx":   # numba compiles on first use: warm up outside the timing
                evaluate(construct(*make_data(2, n_docs)))
            t = time.perf_counter()
            obj = construct(q, y, s)
            t_con = time.perf_counter() - t
            value = evaluate(obj)
            t_eval = median_time(lambda: evaluate(obj), repeat)
            rows[name] = (t_con, t_eval, value)
    base = rows["calipers (NumPy, flat arrays)"]
    print(f"\nNDCG@{K}, {n_queries:,} queries x {n_docs} docs ({n_queries * n_docs:,} rows); "
          f"median of {repeat}; np.sort of the scores {sort_floor:.4f} s")
    print(f"{'implementation':32s} {'construct s':>12s} {'evaluate s':>11s} "
          f"{'eval / calipers':>16s} {'mean NDCG@10':>13s}")
    for name, (tc, te, v) in rows.items():
        print(f"{name:32s} {tc:12.3f} {te:11.3f} {te / base[1]:16.2f} {v:13.6f}")
        assert abs(v - base[2]) < 1e-6, f"{name} disagrees: {v} vs {base[2]}"
    return rows


def run_gauc(n_groups, n_per_group, repeat):
    import sklearn.metrics as skm

    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(n_groups), n_per_group)
    y = (rng.random(g.shape[0]) < 0.3).astype(np.int64)
    s = np.round(rng.normal(size=g.shape[0]) + y, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_ours = median_time(lambda: retrieval.grouped_roc_auc(y, s, g), repeat)
        ours = retrieval.grouped_roc_auc(y, s, g)

        def loop():
            out = []
            for i in range(n_groups):
                sl = slice(i * n_per_group, (i + 1) * n_per_group)
                yy = y[sl]
                out.append(skm.roc_auc_score(yy, s[sl]) if 0 < yy.sum() < yy.shape[0]
                           else np.nan)
            return out

        t = time.perf_counter()
        ref = loop()
        t_loop = time.perf_counter() - t
    np.testing.assert_allclose(ours.values, ref, rtol=1e-12)
    print(f"\ngrouped AUC, {n_groups:,} groups x {n_per_group}: calipers {t_ours:.3f} s, "
          f"scikit-learn one group at a time {t_loop:.3f} s, ratio {t_loop / t_ours:.1f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, nargs="+", default=[1000, 10000])
    p.add_argument("--docs", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--jax", action="store_true", help="also time calipers under jax.jit")
    p.add_argument("--skip", nargs="*", default=[], help="implementations to skip (substring)")
    p.add_argument("--gauc-groups", type=int, default=0,
                   help="also time grouped AUC over this many groups of 100 rows")
    args = p.parse_args()
    for nq in args.queries:
        run_size(nq, args.docs, args.repeat, args.jax, args.skip)
    if args.gauc_groups:
        run_gauc(args.gauc_groups, 100, args.repeat)


# --------------------------------------------------------------------------
# pytest-benchmark: 10^3 queries x 100 docs; evaluation only (construction in setup)
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def data_1e3():
    return make_data(1000, 100)


@pytest.mark.parametrize("name", ["calipers (NumPy, flat arrays)", "scikit-learn ndcg_score",
                                  "pytrec_eval", "ranx"])
def test_ndcg10_1e3_queries(benchmark, data_1e3, name):
    impls = available()
    if name not in impls:
        pytest.skip(f"{name} not installed")
    construct, evaluate = impls[name]()
    obj = construct(*data_1e3)
    expect = float(retrieval.ndcg(data_1e3[1], data_1e3[2], data_1e3[0], k=K,
                                  undefined="zero").mean)
    value = benchmark(evaluate, obj)
    assert abs(value - expect) < 1e-6


def test_grouped_auc_1e4_groups(benchmark):
    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(10_000), 100)
    y = (rng.random(g.shape[0]) < 0.3).astype(np.int64)
    s = np.round(rng.normal(size=g.shape[0]) + y, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = benchmark(retrieval.grouped_roc_auc, y, s, g)
    assert res.values.shape == (10_000,)


if __name__ == "__main__":
    main()
