"""Paired AUC-difference bootstrap: calipers (NumPy, JAX-CPU) vs the scikit-learn loop.

Run as a script for the full comparison (same inputs, same run)::

    python benchmarks/bench_bootstrap.py                     # n=1e5, B=10,000
                                     # backends numpy, numpy:1, jax, jax:1
    python benchmarks/bench_bootstrap.py --n 1000000 --B 1000 --skip-memory
    python benchmarks/bench_bootstrap.py --coverage 400      # coverage simulation

The scikit-learn loop is what a user writes: draw indices, two
``roc_auc_score`` calls per replicate. It is timed on ``--loop-reps``
replicates and scaled to B. Peak memory is the peak resident memory added
by a run of B = 1,000 and of B = 10,000 replicates in a fresh process
(sampled; it must not grow with B).

Under pytest (``pytest benchmarks/bench_bootstrap.py``) small pytest-benchmark
cases run instead.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np


def make_data(n, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    z = rng.normal(size=n)
    a = 1.0 * y + 0.6 * z + 0.8 * rng.normal(size=n)
    b = 0.8 * y + 0.6 * z + 0.8 * rng.normal(size=n)
    return y, a, b


def sklearn_loop(y, a, b, reps, seed=0):
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(seed)
    n = y.shape[0]
    out = np.empty(reps)
    for r in range(reps):
        i = rng.integers(0, n, n)
        out[r] = roc_auc_score(y[i], a[i]) - roc_auc_score(y[i], b[i])
    return out


def time_calipers(backend, y, a, b, B, **kw):
    """Seconds for one paired AUC bootstrap; backend "numpy" or "jax" (default workers), or
    "numpy:W" / "jax:W" (W worker threads)."""
    import warnings

    import calipers

    name, _, workers = backend.partition(":")
    if workers:
        kw["workers"] = int(workers)
    if name == "jax":
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        y, a, b = jnp.asarray(y), jnp.asarray(a), jnp.asarray(b)
    # warm-up (JAX: compile; NumPy: first-call imports and thread pool), untimed like the
    # loop's; its few replicates draw a design warning, which is not the timed run's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", calipers.BootstrapDesignWarning)
        calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=8, seed=1, **kw)
    t = time.perf_counter()
    r = calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=B, seed=0, **kw)
    return time.perf_counter() - t, r


def _peak_rss_child(backend, n, B):
    """Peak resident memory added by one bootstrap run, in a fresh process.

    A thread samples the current RSS (``/proc/self/statm``) every 2 ms while
    the run goes; the result is the peak minus the RSS just before the run
    (after imports, data, the JAX compile and a warm-up run of 1,000
    replicates, so that allocator warm-up is not counted). ``ru_maxrss`` is not
    used: in a forked child it includes the parent's memory.
    """
    code = (
        "import sys, json; sys.path.insert(0, %r)\n"
        "from bench_bootstrap import make_data, time_calipers, _RssSampler\n"
        "y, a, b = make_data(%d)\n"
        "time_calipers(%r, y, a, b, 1000)\n"
        "with _RssSampler() as s:\n"
        "    t, r = time_calipers(%r, y, a, b, %d)\n"
        "print(json.dumps({'peak_added_MiB': s.peak_added / 2**20,\n"
        "                  'before_MiB': s.before / 2**20, 'seconds': t}))\n"
    ) % (os.path.dirname(os.path.abspath(__file__)), n, backend, backend, B)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


class _RssSampler:
    def __init__(self, every=0.002):
        import threading

        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.page = os.sysconf("SC_PAGE_SIZE")

    def _rss(self):
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(self.every)

    def __enter__(self):
        self.before = self.peak = self._rss()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())
        self.peak_added = self.peak - self.before
        return False


def coverage(trials, n=200, B=500, seed=123):
    """Share of percentile 95% intervals that cover a known AUC difference."""
    from scipy import stats

    import calipers

    true = stats.norm.cdf(1.2 / math.sqrt(2)) - stats.norm.cdf(0.6 / math.sqrt(2))
    rng = np.random.default_rng(seed)
    hits = {"percentile": 0, "bca": 0}
    for t in range(trials):
        y = (np.arange(n) < n // 2).astype(int)
        z = rng.normal(size=n)
        a = 1.2 * y + 0.6 * z + 0.8 * rng.normal(size=n)
        b = 0.6 * y + 0.6 * z + 0.8 * rng.normal(size=n)
        for m in hits:
            r = calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=B, seed=t,
                                          stratify=True, method=m)
            hits[m] += r.confidence_interval.low <= true <= r.confidence_interval.high
    return {m: h / trials for m, h in hits.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--B", type=int, default=10_000)
    p.add_argument("--loop-reps", type=int, default=150)
    p.add_argument("--backends", default="numpy,numpy:1,jax,jax:1",
                   help="numpy, jax (default workers), numpy:W, jax:W (W worker threads)")
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--memory-only", action="store_true")
    p.add_argument("--coverage", type=int, default=0, help="trials of the coverage simulation")
    args = p.parse_args(argv)

    if args.coverage:
        print(json.dumps({"coverage_trials": args.coverage, **coverage(args.coverage)}))
        return 0
    y, a, b = make_data(args.n)
    res = {"n": args.n, "B": args.B}
    timed = [] if args.memory_only else args.backends.split(",")
    if timed:
        # one untimed replicate first: scikit-learn's first call imports and builds caches
        # (about a second), which would otherwise be billed to the loop and inflate the ratio
        sklearn_loop(y, a, b, 1)
        t = time.perf_counter()
        sklearn_loop(y, a, b, args.loop_reps)
        per_rep = (time.perf_counter() - t) / args.loop_reps
        res["sklearn_loop_s_per_replicate"] = per_rep
        res["sklearn_loop_s_scaled_to_B"] = per_rep * args.B
    for be in timed:
        sec, r = time_calipers(be, y, a, b, args.B)
        res[f"{be}_s"] = sec
        res[f"{be}_ms_per_replicate"] = 1e3 * sec / args.B
        res[f"{be}_speedup_vs_sklearn_loop"] = per_rep * args.B / sec
        res[f"{be}_ci"] = [r.confidence_interval.low, r.confidence_interval.high]
        print(json.dumps({k: v for k, v in res.items() if k.startswith(be + "_")}), flush=True)
    if not args.skip_memory:
        for be in args.backends.split(","):
            m1 = _peak_rss_child(be, args.n, 1_000)
            m10 = _peak_rss_child(be, args.n, 10_000)
            res[f"{be}_peak_added_MiB_B1000"] = m1["peak_added_MiB"]
            res[f"{be}_peak_added_MiB_B10000"] = m10["peak_added_MiB"]
            res[f"{be}_rss_before_MiB"] = m10["before_MiB"]
    print(json.dumps(res, indent=1))
    return 0


# --------------------------------------------------------------------------
# pytest-benchmark cases (small, so they run in the quick suite's time scale)
# --------------------------------------------------------------------------

def test_bench_numpy_paired_auc(benchmark):
    import calipers

    y, a, b = make_data(20_000)
    benchmark.pedantic(lambda: calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=100,
                                                         seed=0), rounds=3, iterations=1)


def test_bench_jax_paired_auc(benchmark):
    import jax
    import jax.numpy as jnp

    import calipers

    jax.config.update("jax_enable_x64", True)
    y, a, b = (jnp.asarray(v) for v in make_data(20_000))
    calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=8, seed=0)
    benchmark.pedantic(lambda: calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=100,
                                                         seed=0), rounds=3, iterations=1)


def test_bench_sklearn_loop(benchmark):
    y, a, b = make_data(20_000)
    benchmark.pedantic(lambda: sklearn_loop(y, a, b, 20), rounds=3, iterations=1)


if __name__ == "__main__":
    sys.exit(main())
