"""Scaling benchmark: calipers beside the references a user would otherwise pick.

    python benchmarks/scaling.py [--quick] [--out benchmarks/results]

In one run, on the same inputs, it times
* ROC AUC, AP and the ROC curve for n = 10^3 ... 10^7 (x10 steps), random and
  heavily tied scores, calipers on NumPy and JAX (jit) against scikit-learn,
  torchmetrics (exact, CPU; if installed), scipy's ``mannwhitneyu``, one
  ``np.sort`` / ``jnp.sort`` of the same scores (the floor) and one
  ``np.argsort`` / ``jnp.argsort``;
* per-query NDCG@10 for 10^3 ... 10^5 queries x 100 documents against
  scikit-learn, ranx and pytrec_eval (those installed);
* the paired bootstrap of an AUC difference (n = 10^5, B = 10^3 and 10^4)
  against the scikit-learn loop and ``scipy.stats.bootstrap(paired=True)``
  (references timed on a few replicates and scaled), and its peak memory
  against B;
* grouped AUC over 10^5 groups against a per-group loop (timed on a subset and
  scaled);
* the backends a user brings (section ``backends``): torch CPU tensors against
  the NumPy call on the same memory (AUC, AP, a paired bootstrap), eager JAX
  over 50 random input lengths per family (XLA compilations counted, time
  against the NumPy calls on the same inputs), a small JAX paired bootstrap
  against NumPy, and ``import calipers`` against ``import numpy`` in fresh
  processes (and whether JAX was imported).
It prints a table of medians and ratios (calipers / reference, calipers /
sort floor), the log-log slope of time against n from 10^5 to 10^7 for each
calipers function, and peak memory per score; it writes the table as JSON and
a log-log plot to ``--out``. References that are not installed are reported
as skipped, never faked. Read ratios, not absolute times: the machine is
shared and noisy.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import math
import os
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

import calipers
from _timing import CompileCount, median_time

RESULTS: list[dict] = []
SKIPPED: list[str] = []


def have(mod):
    return importlib.util.find_spec(mod) is not None


def record(section, name, n, seconds, **extra):
    RESULTS.append({"section": section, "impl": name, "n": n, "seconds": seconds, **extra})
    print(f"  {section:12s} {name:38s} n={n:>10,d} {seconds:10.4f} s", flush=True)


def repeats(n, quick):
    if quick:
        return 1
    return 5 if n <= 10**5 else 3 if n <= 10**6 else 2


def binary_data(n, tied, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(np.int64)
    s = rng.normal(size=n) + y
    if tied:
        s = np.round(s, 1)  # about 110 distinct values at 10^7: heavy ties
    return y, s


# --------------------------------------------------------------------------- AUC / AP / curve

def bench_binary(sizes, quick):
    import sklearn.metrics as skm
    from scipy.stats import mannwhitneyu

    jax_ok = have("jax")
    if jax_ok:
        import jax
        import jax.numpy as jnp
        jsort = jax.jit(jnp.sort)
        jargsort = jax.jit(jnp.argsort)
        jauc = jax.jit(calipers.roc_auc_score)
        jap = jax.jit(calipers.average_precision_score)
    tm_ok = have("torchmetrics") and have("torch")
    if not tm_ok:
        SKIPPED.append("torchmetrics (exact AUROC on CPU): not installed")
    for tied in (False, True):
        section = "auc-tied" if tied else "auc-random"
        for n in sizes:
            y, s = binary_data(n, tied)
            r = repeats(n, quick)
            record(section, "np.sort (floor)", n, median_time(lambda: np.sort(s), r))
            record(section, "np.argsort (target floor)", n, median_time(lambda: np.argsort(s), r))
            record(section, "calipers roc_auc_score", n,
                   median_time(lambda: calipers.roc_auc_score(y, s), r))
            record(section, "calipers average_precision_score", n,
                   median_time(lambda: calipers.average_precision_score(y, s), r))
            record(section, "calipers roc_curve", n, median_time(lambda: calipers.roc_curve(y, s), r))
            record(section, "sklearn roc_auc_score", n, median_time(lambda: skm.roc_auc_score(y, s), r))
            record(section, "sklearn average_precision_score", n,
                   median_time(lambda: skm.average_precision_score(y, s), r))
            record(section, "sklearn roc_curve", n, median_time(lambda: skm.roc_curve(y, s), r))
            pos, neg = s[y == 1], s[y == 0]
            record(section, "scipy mannwhitneyu", n,
                   median_time(lambda: mannwhitneyu(pos, neg, method="asymptotic"), r))
            if tm_ok:
                import torch
                from torchmetrics.functional.classification import binary_auroc
                ts_, ty = torch.from_numpy(s), torch.from_numpy(y)
                record(section, "torchmetrics binary_auroc (exact)", n,
                       median_time(lambda: binary_auroc(ts_, ty, thresholds=None), r))
            if jax_ok:
                jy, js = jnp.asarray(y), jnp.asarray(s)
                for f, args in ((jsort, (js,)), (jargsort, (js,)), (jauc, (jy, js)),
                                (jap, (jy, js))):
                    f(*args).block_until_ready()  # compile outside the timing
                record(section, "jnp.sort jit (floor)", n,
                       median_time(lambda: jsort(js).block_until_ready(), r))
                record(section, "jnp.argsort jit (target floor)", n,
                       median_time(lambda: jargsort(js).block_until_ready(), r))
                record(section, "calipers roc_auc_score jax-jit", n,
                       median_time(lambda: jauc(jy, js).block_until_ready(), r))
                record(section, "calipers average_precision_score jax-jit", n,
                       median_time(lambda: jap(jy, js).block_until_ready(), r))
            assert math.isclose(calipers.roc_auc_score(y, s), skm.roc_auc_score(y, s), rel_tol=1e-12)


def floor_ratios(n, quick, rounds=5):
    """Interleaved best-of-``rounds``: each calipers call against ``np.sort`` of the same scores.

    On a shared machine a median of separate runs mixes different loads into
    one ratio; here every round times the sort and each call back to back, and
    the ratio is of the best times (the least disturbed runs of each side).
    """
    fns = {"calipers roc_auc_score": calipers.roc_auc_score,
           "calipers average_precision_score": calipers.average_precision_score,
           "calipers roc_curve": calipers.roc_curve}
    for tied in (False, True):
        y, s = binary_data(n, tied)
        best = {"np.sort (floor)": math.inf, **{k: math.inf for k in fns}}
        for _ in range(1 if quick else rounds):
            for k in best:
                f = (lambda: np.sort(s)) if k.startswith("np.sort") else (
                    lambda f=fns[k]: f(y, s))
                gc.collect()
                t = time.perf_counter()
                f()
                best[k] = min(best[k], time.perf_counter() - t)
        section = "floor-tied" if tied else "floor-random"
        for k, v in best.items():
            record(section, k, n, v, best_of=rounds, ratio_to_sort=v / best["np.sort (floor)"])


def peak_memory_per_score(n):
    y, s = binary_data(n, False)
    out = {}
    for name, fn in (("calipers roc_auc_score", calipers.roc_auc_score),
                     ("calipers average_precision_score", calipers.average_precision_score)):
        gc.collect()
        tracemalloc.start()
        fn(y, s)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[name] = peak / n
    import sklearn.metrics as skm
    gc.collect()
    tracemalloc.start()
    skm.roc_auc_score(y, s)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    out["sklearn roc_auc_score"] = peak / n
    return out


# --------------------------------------------------------------------------- bootstrap

def bench_bootstrap(quick):
    import sklearn.metrics as skm
    from scipy.stats import bootstrap

    n = 10**5
    rng = np.random.default_rng(1)
    y = (rng.random(n) < 0.3).astype(np.int64)
    a = rng.normal(size=n) + 1.0 * y
    b = rng.normal(size=n) + 0.9 * y
    reps_ref = 5 if quick else 30

    def sk_loop(B):
        g = np.random.default_rng(0)
        for _ in range(B):
            i = g.integers(0, n, n)
            skm.roc_auc_score(y[i], a[i]) - skm.roc_auc_score(y[i], b[i])

    t_loop = median_time(lambda: sk_loop(reps_ref), 1) / reps_ref
    t_scipy = median_time(lambda: bootstrap(
        (y, a, b), lambda yy, aa, bb: skm.roc_auc_score(yy, aa) - skm.roc_auc_score(yy, bb),
        paired=True, vectorized=False, n_resamples=reps_ref, method="percentile",
        random_state=0), 1) / reps_ref
    for B in ((1000,) if quick else (1000, 10000)):
        record("bootstrap", "sklearn loop (scaled)", B, t_loop * B, n_examples=n)
        record("bootstrap", "scipy.stats.bootstrap paired (scaled)", B, t_scipy * B, n_examples=n)
        from calipers._bootstrap.engine import default_workers

        t = median_time(lambda: calipers.paired_bootstrap(calipers.roc_auc_score, y, a, b,
                                                     n_resamples=B, seed=0), 1)
        record("bootstrap", f"calipers paired_bootstrap numpy (default: up to "
               f"{default_workers(n)} threads, timed)", B, t, n_examples=n)
        # the same replicates on one thread, and the Poisson design (resampling=
        # "poisson": independent counts per row, another estimator of the same
        # distribution; its own rows, never mixed with the multinomial ones)
        for label, kw in (("numpy workers=1", dict(workers=1)),
                          ("numpy poisson", dict(resampling="poisson")),
                          ("numpy poisson workers=1", dict(resampling="poisson", workers=1))):
            t = median_time(lambda: calipers.paired_bootstrap(
                calipers.roc_auc_score, y, a, b, n_resamples=B, seed=0, **kw), 1)
            record("bootstrap", f"calipers paired_bootstrap {label}", B, t, n_examples=n)
        if have("jax"):
            import jax.numpy as jnp
            jy, ja, jb = jnp.asarray(y), jnp.asarray(a), jnp.asarray(b)
            for label, kw in ((f"jax (default: up to {default_workers(n)} threads, timed)", {}),
                              ("jax workers=1", dict(workers=1)),
                              ("jax poisson", dict(resampling="poisson"))):
                with warnings.catch_warnings():     # (the warm-up's 8 replicates)
                    warnings.simplefilter("ignore", calipers.BootstrapDesignWarning)
                    calipers.paired_bootstrap(calipers.roc_auc_score, jy, ja, jb, n_resamples=8,
                                              seed=0, **kw)
                t = median_time(lambda: calipers.paired_bootstrap(
                    calipers.roc_auc_score, jy, ja, jb, n_resamples=B, seed=0, **kw), 1)
                record("bootstrap", f"calipers paired_bootstrap {label}", B, t, n_examples=n)
    mem = {}
    for B in (1000, 10000) if not quick else (100, 1000):
        gc.collect()
        tracemalloc.start()
        calipers.paired_bootstrap(calipers.roc_auc_score, y, a, b, n_resamples=B, seed=0)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        mem[B] = peak
    return mem


# --------------------------------------------------------------------------- backends

def bench_backends(quick):
    """torch CPU tensors, eager JAX over changing lengths, and the import."""
    import subprocess
    import sys

    n = 10**5 if quick else 10**6
    y, s = binary_data(n, False)
    r = repeats(n, quick)
    if have("torch"):
        import torch
        ty, ts = torch.from_numpy(y), torch.from_numpy(s)
        for name, fn in (("roc_auc_score", calipers.roc_auc_score),
                         ("average_precision_score", calipers.average_precision_score)):
            fn(ty, ts)
            record("backends", f"calipers {name} torch-cpu", n, median_time(lambda: fn(ty, ts), r))
            record("backends", f"numpy {name} (same memory)", n,
                   median_time(lambda: fn(ty.numpy(), ts.numpy()), r))
        m = 10**4
        yb, a = binary_data(m, False, seed=3)
        b = a + np.random.default_rng(4).normal(size=m)
        tb = [torch.from_numpy(v) for v in (yb, a, b)]
        for label, args in (("calipers paired_bootstrap B=200 torch-cpu", tb),
                            ("numpy paired_bootstrap B=200 (same memory)",
                             [t.numpy() for t in tb])):
            record("backends", label, m, median_time(
                lambda: calipers.paired_bootstrap(calipers.roc_auc_score, *args,
                                                  n_resamples=200, seed=0), 1 if quick else 3))
    else:
        SKIPPED.append("backends: torch not installed")
    if have("jax"):
        import jax
        import jax.numpy as jnp
        lengths = np.random.default_rng(0).integers(100, 5001, 50).tolist()

        def binary(k):
            g = np.random.default_rng(k)
            return (g.integers(0, 2, k), g.random(k))

        def surv(k):
            g = np.random.default_rng(k)
            return (g.random(k) < 0.7, g.exponential(size=k), g.normal(size=k))

        def selective(k):
            g = np.random.default_rng(k)
            return (g.random(k), g.integers(0, 2, k), g.integers(0, 2, k))

        families = (("roc_auc_score", calipers.roc_auc_score, binary),
                    ("average_precision_score", calipers.average_precision_score, binary),
                    ("log_loss", calipers.log_loss, binary),
                    ("aurc", calipers.aurc, selective),
                    ("concordance_index_censored", calipers.concordance_index_censored, surv))
        for name, fn, make in families:
            inputs = [make(k) for k in lengths]
            jin = [[jnp.asarray(v) for v in args] for args in inputs]
            t = time.perf_counter()
            with CompileCount() as cc:
                for args in jin:
                    jax.block_until_ready(fn(*args))
            tj = time.perf_counter() - t
            t = time.perf_counter()
            for args in inputs:
                fn(*args)
            tn = time.perf_counter() - t
            record("backends", f"calipers {name} eager-jax 50 lengths", 50, tj,
                   compiles=cc.n, distinct_lengths=len(set(lengths)))
            record("backends", f"numpy {name} 50 lengths", 50, tn)
        k = 171
        yb, a = binary_data(k, False, seed=5)
        b = a + np.random.default_rng(6).normal(size=k)
        jb = [jnp.asarray(v) for v in (yb, a, b)]
        calipers.paired_bootstrap(calipers.roc_auc_score, *jb, n_resamples=1000, seed=0)
        with CompileCount() as cc:
            tj = median_time(lambda: calipers.paired_bootstrap(
                calipers.roc_auc_score, *jb, n_resamples=1000, seed=1), 3)
        record("backends", "calipers paired_bootstrap n=171 B=1000 eager-jax", k, tj,
               compiles_after_warmup=cc.n)
        record("backends", "numpy paired_bootstrap n=171 B=1000", k, median_time(
            lambda: calipers.paired_bootstrap(calipers.roc_auc_score, yb, a, b,
                                              n_resamples=1000, seed=1), 3))
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    # A user imports an installed package from its cached bytecode: a shell that sets
    # PYTHONDONTWRITEBYTECODE would time compiling every module from source instead.
    # The first, untimed run writes the bytecode.
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def fresh(code):
        def once():
            return subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                  capture_output=True, text=True).stdout

        once()
        times = []
        for _ in range(3 if quick else 9):
            t = time.perf_counter()
            out = once()
            times.append(time.perf_counter() - t)
        return float(np.median(times)), out.strip()

    t_cal, jax_loaded = fresh("import sys, calipers; print('jax' in sys.modules)")
    t_np, _ = fresh("import numpy")
    t_py, _ = fresh("pass")
    record("backends", "calipers import (fresh process)", 1, t_cal,
           jax_imported=jax_loaded == "True", jax_installed=have("jax"),
           bytecode_cached=os.path.exists(importlib.util.cache_from_source(calipers.__file__)))
    record("backends", "numpy import (fresh process)", 1, t_np)
    record("backends", "python start-up (fresh process)", 1, t_py)


# --------------------------------------------------------------------------- NDCG and GAUC

def ranking_data(n_queries, docs=100, seed=2):
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(n_queries), docs)
    rel = rng.integers(0, 4, n_queries * docs) * (rng.random(n_queries * docs) < 0.3)
    score = rng.normal(size=n_queries * docs) + 0.3 * rel
    return qid, rel, score


def bench_ndcg(query_sizes, quick):
    ndcg = getattr(calipers, "ndcg", None)
    if ndcg is None:
        SKIPPED.append("calipers.ndcg: not available in this build")
        return
    import sklearn.metrics as skm
    for nq in query_sizes:
        qid, rel, score = ranking_data(nq)
        r = 1 if quick else 3  # median of 3 at every size: a single run includes first-touch costs
        record("ndcg@10", "np.sort (floor)", nq, median_time(lambda: np.sort(score), r))
        record("ndcg@10", "calipers ndcg", nq,
               median_time(lambda: ndcg(rel, score, query_id=qid, k=10), r))
        R2, S2 = rel.reshape(nq, 100), score.reshape(nq, 100)
        record("ndcg@10", "sklearn ndcg_score (dense)", nq,
               median_time(lambda: skm.ndcg_score(R2, S2, k=10), r))
        qrels = run = None
        if have("ranx") or have("pytrec_eval"):
            qrels = {str(q): {f"d{j}": int(R2[q, j]) for j in range(100) if R2[q, j] > 0}
                     for q in range(nq)}
            qrels = {q: d for q, d in qrels.items() if d}
            run = {str(q): {f"d{j}": float(S2[q, j]) for j in range(100)} for q in range(nq)}
        if have("ranx"):
            from ranx import Qrels, Run, evaluate
            t0 = time.perf_counter()
            Q, Rn = Qrels(qrels), Run(run)
            record("ndcg@10", "ranx construction", nq, time.perf_counter() - t0)
            evaluate(Q, Rn, "ndcg@10")  # numba compile outside the timing
            record("ndcg@10", "ranx evaluate", nq, median_time(lambda: evaluate(Q, Rn, "ndcg@10"), r))
        elif nq == query_sizes[0]:
            SKIPPED.append("ranx: not installed")
        if have("pytrec_eval"):
            import pytrec_eval
            t0 = time.perf_counter()
            ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
            record("ndcg@10", "pytrec_eval construction", nq, time.perf_counter() - t0)
            record("ndcg@10", "pytrec_eval evaluate", nq, median_time(lambda: ev.evaluate(run), r))
        elif nq == query_sizes[0]:
            SKIPPED.append("pytrec_eval: not installed")


def bench_gauc(quick):
    gauc = getattr(calipers, "grouped_roc_auc", None)
    if gauc is None:
        SKIPPED.append("calipers.grouped_roc_auc: not available in this build")
        return
    import sklearn.metrics as skm
    n_groups = 10**4 if quick else 10**5
    rng = np.random.default_rng(3)
    sizes = rng.integers(2, 40, n_groups)
    gid = np.repeat(np.arange(n_groups), sizes)
    y = (rng.random(gid.shape[0]) < 0.4).astype(np.int64)
    s = rng.normal(size=gid.shape[0]) + y
    record("gauc", "calipers grouped_roc_auc", n_groups,
           median_time(lambda: gauc(y, s, group_id=gid), 1 if quick else 3))
    # per-group loop timed on the first 2,000 groups and scaled
    m = 2000
    bounds = np.concatenate([[0], np.cumsum(sizes)])

    def loop():
        for g in range(m):
            yy, ss = y[bounds[g]:bounds[g + 1]], s[bounds[g]:bounds[g + 1]]
            if 0 < yy.sum() < yy.shape[0]:
                skm.roc_auc_score(yy, ss)

    record("gauc", "sklearn per-group loop (scaled)", n_groups, median_time(loop, 1) * n_groups / m)


# --------------------------------------------------------------------------- report

def slope(section, impl, lo=10**5, hi=10**7):
    pts = [(r["n"], r["seconds"]) for r in RESULTS
           if r["section"] == section and r["impl"] == impl and lo <= r["n"] <= hi]
    if len(pts) < 2:
        return None
    x = np.log10([p[0] for p in pts])
    yv = np.log10([max(p[1], 1e-9) for p in pts])
    return float(np.polyfit(x, yv, 1)[0])


def table():
    print("\n=== medians and ratios ===")
    sections = sorted({r["section"] for r in RESULTS}, key=lambda s: [r["section"] for r in RESULTS].index(s))
    for sec in sections:
        rows = [r for r in RESULTS if r["section"] == sec]
        for n in sorted({r["n"] for r in rows}):
            at = {r["impl"]: r["seconds"] for r in rows if r["n"] == n}
            floor = at.get("np.sort (floor)")
            arg = at.get("np.argsort (target floor)")
            print(f"\n[{sec}] n={n:,}")
            for impl, t in at.items():
                extra = ""
                if floor and impl.startswith("calipers") and "jax" not in impl:
                    extra += f"  /sort {t / floor:6.2f}"
                    if arg:
                        extra += f"  /argsort {t / arg:6.2f}"
                if "jax-jit" in impl and "jnp.sort jit (floor)" in at:
                    extra += f"  /jnp.sort {t / at['jnp.sort jit (floor)']:6.2f}"
                    if "jnp.argsort jit (target floor)" in at:
                        extra += f"  /jnp.argsort {t / at['jnp.argsort jit (target floor)']:6.2f}"
                print(f"  {impl:42s} {t:10.4f} s{extra}")
            for ck, cv in at.items():
                if not ck.startswith("calipers"):
                    continue
                for rk in REFERENCES.get(_base(ck), []):
                    if rk in at:
                        print(f"    {ck} / {rk} = {cv / at[rk]:.4f}")
    if any(r["section"] == "backends" for r in RESULTS):
        backend_ratios()


# Which reference measures the same quantity as each calipers function.
REFERENCES = {
    "roc_auc_score": ["sklearn roc_auc_score", "scipy mannwhitneyu",
                      "torchmetrics binary_auroc (exact)"],
    "average_precision_score": ["sklearn average_precision_score"],
    "roc_curve": ["sklearn roc_curve"],
    "ndcg": ["sklearn ndcg_score (dense)", "ranx evaluate", "pytrec_eval evaluate"],
    "paired_bootstrap": ["sklearn loop (scaled)", "scipy.stats.bootstrap paired (scaled)"],
    "grouped_roc_auc": ["sklearn per-group loop (scaled)"],
}


def backend_ratios():
    """The backends section's ratios: each calipers row against its NumPy / import twin."""
    at = {r["impl"]: r for r in RESULTS if r["section"] == "backends"}
    print("\n[backends] ratios")
    for impl, row in at.items():
        if impl.startswith("calipers import"):
            twin = "numpy import (fresh process)"
        elif impl.startswith("calipers "):
            twin = impl.replace("calipers ", "numpy ", 1)
            for tag in (" torch-cpu", " eager-jax 50 lengths", " eager-jax"):
                twin = twin.replace(tag, " (same memory)" if tag == " torch-cpu" else
                                    " 50 lengths" if "50" in tag else "")
        else:
            continue
        if twin in at:
            extra = {k: v for k, v in row.items()
                     if k not in ("section", "impl", "n", "seconds")}
            print(f"  {impl:52s} {row['seconds']:9.4f} s / {twin} = "
                  f"{row['seconds'] / at[twin]['seconds']:7.2f}  {extra if extra else ''}")


def _base(impl):
    return impl.split()[1]


def plot(out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        SKIPPED.append("plot: matplotlib not installed")
        return None
    secs = [s for s in ("auc-random", "auc-tied", "ndcg@10") if any(r["section"] == s for r in RESULTS)]
    if not secs:
        return None
    fig, axes = plt.subplots(1, len(secs), figsize=(6 * len(secs), 5), squeeze=False)
    colors = plt.cm.tab20.colors  # more implementations than the default 10 colours
    for ax, sec in zip(axes[0], secs):
        impls = []
        for r in RESULTS:
            if r["section"] == sec and r["impl"] not in impls:
                impls.append(r["impl"])
        for c, impl in enumerate(impls):
            pts = sorted((r["n"], r["seconds"]) for r in RESULTS if r["section"] == sec and r["impl"] == impl)
            if len(pts) > 1:
                ax.plot(*zip(*pts), marker="o", label=impl, color=colors[c % len(colors)],
                        ls="-" if impl.startswith("calipers") else "--")
        ax.set(xscale="log", yscale="log", title=sec,
               xlabel="queries" if sec.startswith("ndcg") else "n scores", ylabel="seconds (median)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = out / "scaling.png"
    fig.savefig(path, dpi=110)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one repeat (a smoke run)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    p.add_argument("--skip", nargs="*", default=[], choices=["binary", "bootstrap", "ndcg", "gauc", "backends"])
    p.add_argument("--from-json", metavar="PATH",
                   help="measure nothing: print the table and redraw the plot of an earlier run")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.from_json:
        RESULTS.extend(json.loads(Path(a.from_json).read_text())["results"])
        table()
        print(f"wrote {plot(out)}")
        return
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    if have("jax"):
        import jax
        jax.config.update("jax_enable_x64", True)
    sizes = [10**3, 10**4, 10**5] if a.quick else [10**3, 10**4, 10**5, 10**6, 10**7]
    t0 = time.perf_counter()
    mem = {}
    boot_mem = {}
    if "binary" not in a.skip:
        print("binary AUC / AP / ROC curve")
        bench_binary(sizes, a.quick)
        print("interleaved best-of-5 against np.sort")
        floor_ratios(sizes[-1], a.quick)
        mem = peak_memory_per_score(sizes[-1])
    if "ndcg" not in a.skip:
        print("per-query NDCG@10")
        bench_ndcg([10**3, 10**4] if a.quick else [10**3, 10**4, 10**5], a.quick)
    if "bootstrap" not in a.skip:
        print("paired bootstrap")
        boot_mem = bench_bootstrap(a.quick)
    if "gauc" not in a.skip:
        print("grouped AUC")
        bench_gauc(a.quick)
    if "backends" not in a.skip:
        print("backends: torch CPU, eager JAX, import")
        bench_backends(a.quick)
    table()
    print("\n=== log-log slope of time against n, 10^5 .. 10^7 (n log n ~ 1.05-1.1) ===")
    slopes = {}
    for sec in ("auc-random", "auc-tied"):
        for impl in sorted({r["impl"] for r in RESULTS if r["section"] == sec}):
            sl = slope(sec, impl)
            if sl is not None:
                slopes[f"{sec}:{impl}"] = sl
                print(f"  {sec:10s} {impl:42s} {sl:5.2f}")
    floors = [r for r in RESULTS if r["section"].startswith("floor-")]
    if floors:
        print("\n=== interleaved best-of-5, ratio to np.sort of the same scores ===")
        for r in floors:
            print(f"  {r['section']:13s} {r['impl']:36s} {r['ratio_to_sort']:5.2f}x")
    if mem:
        print(f"\n=== peak memory per score at n={sizes[-1]:,} (tracemalloc, NumPy) ===")
        for k, v in mem.items():
            print(f"  {k:42s} {v:6.1f} bytes/score")
    if boot_mem:
        print("\n=== bootstrap peak memory against B (tracemalloc, NumPy) ===")
        for k, v in boot_mem.items():
            print(f"  B={k:6d}: {v / 2**20:8.1f} MiB")
    for s in SKIPPED:
        print(f"skipped: {s}")
    doc = {"results": RESULTS, "slopes": slopes, "bytes_per_score": mem,
           "bootstrap_peak_bytes": {str(k): v for k, v in boot_mem.items()}, "skipped": SKIPPED,
           "wall_seconds": time.perf_counter() - t0}
    (out / "scaling.json").write_text(json.dumps(doc, indent=1))
    path = plot(out)
    print(f"\nwrote {out / 'scaling.json'}" + (f" and {path}" if path else ""))
    print(f"total wall time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
