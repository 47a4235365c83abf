"""calipers.dask on a 2-worker LocalCluster against one process, in one run.

    python benchmarks/distributed.py [--n 1000000] [--partitions 8] [--resamples 100]
                                     [--repeat 3] [--smoke] [--memory-only]

Rows per second of

* states: a ``ConfusionState`` and a ``ROCHistogramState`` (16 bits) per
  partition, merged in a tree (``calipers.dask.reduce_states``);
* the paired Poisson bootstrap of accuracy and of ROC AUC, and the default
  multinomial design of accuracy in two passes
  (``calipers.dask.paired_bootstrap_replicates``);

on a ``distributed.LocalCluster`` of 2 worker processes (1 thread each) and in
this process (the same graph on the synchronous scheduler, and the one-shot
calipers call on the concatenated rows), reported as ratios to this process's
one-shot call. Partitions are made on the workers from a seed (as a log is read
where it lies), so the cluster never receives the rows from here; the graph
columns include making them, the one-shot column has the rows in memory. Every
distributed result is checked against the one-process result (integer counts
bit for bit). Then the peak resident memory of each worker (``ru_maxrss``, on
a fresh cluster) for four partition sizes, beside the partition's bytes, also
written to ``benchmarks/results/distributed_memory.json`` (``--memory-only``:
that section alone).

Where Apache Beam is installed (``calipers[beam]``), the same comparison for
``calipers.beam`` on Beam's DirectRunner (``in_memory`` and
``multi_processing``, 2 workers): a ``ConfusionState`` through
``StateCombineFn`` and the accuracy bootstrap through
``PairedBootstrapCombineFn``, one element per partition (a batch of arrays made
in the pipeline from a seed), the results written by the workers and read back
and checked against the one-shot call bit for bit. The Beam columns include the
pipeline's start-up (worker processes in ``multi_processing``).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import subprocess
import sys
from pathlib import Path

# This file's name is the package's: take its folder off the path before importing it.
HERE = Path(__file__).resolve().parent
sys.path[:] = [q for q in sys.path if Path(q or ".").resolve() != HERE]

import numpy as np  # noqa: E402

import dask  # noqa: E402
import distributed  # noqa: E402

_spec = importlib.util.spec_from_file_location("_timing", HERE / "_timing.py")
_timing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_timing)
median_time = _timing.median_time

import calipers  # noqa: E402
import calipers.dask as cd  # noqa: E402

COLS = ("y", "a", "b", "pa", "pb", "row_id")
BYTES_PER_ROW = 8 * len(COLS)


def load(i, j, seed=0):
    """Rows ``i .. j - 1`` of the log, made from (seed, i): the same wherever it runs."""
    rng = np.random.default_rng([seed, i])
    m = j - i
    y = rng.integers(0, 2, m)
    a = np.round(np.clip(0.25 * y + rng.random(m), 0, 1), 4)
    b = np.round(np.clip(0.15 * y + rng.random(m), 0, 1), 4)
    return {"y": y, "a": a, "b": b, "pa": (a > 0.6).astype(np.int64),
            "pb": (b > 0.55).astype(np.int64), "row_id": np.arange(i, j, dtype=np.int64)}


def parts(n, p):
    cuts = np.linspace(0, n, p + 1).astype(int)
    return [dask.delayed(load, pure=True)(int(i), int(j)) for i, j in zip(cuts[:-1], cuts[1:])]


def whole(n, p):
    cuts = np.linspace(0, n, p + 1).astype(int)
    ps = [load(int(i), int(j)) for i, j in zip(cuts[:-1], cuts[1:])]
    return {k: np.concatenate([q[k] for q in ps]) for k in COLS}


def init():
    return (calipers.ConfusionState.init(2), calipers.ROCHistogramState.init(16))


def update(s, p):
    return (s[0].update(p["y"], p["pa"]), s[1].update(p["y"], p["a"]))


class Pair:
    """Two states merged together (reduce_states merges one object per partition)."""

    def __init__(self, states):
        self.states = states

    def update(self, p):
        return Pair(update(self.states, p))

    def merge(self, other):
        return Pair(tuple(x.merge(y) for x, y in zip(self.states, other.states)))


def cases(n, p, B, data):
    y, a, b, pa, pb, ids = (data[k] for k in COLS)

    def states(**compute):
        return cd.reduce_states(parts(n, p), lambda: Pair(init()), lambda s, q: s.update(q),
                                compute=compute).states

    def one_states():
        return update(init(), data)

    def boot(metric, **compute):
        cols = ("pa", "pb") if metric == "accuracy" else ("a", "b")
        return cd.paired_bootstrap_replicates(parts(n, p), metric, "y", *cols, n_resamples=B,
                                              seed=3, row_id="row_id", compute=compute)

    def one_boot(metric):
        m = calipers.accuracy_score if metric == "accuracy" else metric
        xa, xb = (pa, pb) if metric == "accuracy" else (a, b)
        return calipers.paired_bootstrap_replicates(m, y, xa, xb, n_resamples=B, seed=3,
                                                    resampling="poisson", row_ids=ids)

    def boot_multinomial(**compute):
        return cd.paired_bootstrap_replicates(parts(n, p), "accuracy", "y", "pa", "pb",
                                              n_resamples=B, seed=3, resampling="multinomial",
                                              compute=compute)

    def one_multinomial():
        return calipers.paired_bootstrap_replicates(calipers.accuracy_score, y, pa, pb,
                                                    n_resamples=B, seed=3)

    return [("states (confusion + 16-bit histogram)", states, one_states),
            (f"multinomial bootstrap, accuracy, B={B}", boot_multinomial, one_multinomial),
            (f"paired bootstrap, accuracy, B={B}", lambda **c: boot("accuracy", **c),
             lambda: one_boot("accuracy")),
            (f"paired bootstrap, ROC AUC, B={B}", lambda **c: boot("roc_auc", **c),
             lambda: one_boot("roc_auc"))]


def same(x, y):
    if isinstance(x, tuple) and hasattr(x[0], "counts"):       # the two states
        return (np.array_equal(x[0].counts, y[0].counts) and np.array_equal(x[1].pos, y[1].pos)
                and np.array_equal(x[1].neg, y[1].neg))
    return all(np.array_equal(u, v, equal_nan=True) for u, v in zip(x, y))


def cluster(**kw):
    return distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                    dashboard_address=None, silence_logs=logging.ERROR, **kw)


def peak_rss():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024    # Linux: KiB


def machine():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines()
                    if line.startswith("Model name"))
    except Exception:
        return "unknown"


def beam_cases(n, p, B, data):
    """``(name, run(mode), one-shot)`` for calipers.beam; ``run`` reads the result back."""
    import functools
    import pickle
    import tempfile

    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    import calipers.beam as cbeam

    logging.getLogger("apache_beam").setLevel(logging.WARNING)

    cuts = np.linspace(0, n, p + 1).astype(int)
    bounds = [(int(i), int(j)) for i, j in zip(cuts[:-1], cuts[1:])]
    y, pa, pb, ids = (data[k] for k in ("y", "pa", "pb", "row_id"))

    def element(ij):
        q = load(*ij)
        return (0, (q["y"], q["pa"], q["pb"], q["row_id"]))

    def run(fn, mode):
        with tempfile.TemporaryDirectory() as d:
            opts = PipelineOptions(runner="DirectRunner", direct_num_workers=2,
                                   direct_running_mode=mode)
            with beam.Pipeline(options=opts) as pipe:
                _ = (pipe | beam.Create(bounds) | beam.Map(element)
                     | beam.CombinePerKey(fn)
                     | beam.Map(lambda kv, d=d: pickle.dump(kv[1], open(f"{d}/out.pkl", "wb"))))
            with open(f"{d}/out.pkl", "rb") as f:
                return pickle.load(f)

    state_fn = cbeam.StateCombineFn(functools.partial(calipers.ConfusionState.init, 2),
                                    update=lambda s, y, a, b, ids: s.update(y, a),
                                    output="state")
    boot_fn = cbeam.PairedBootstrapCombineFn("accuracy", n_resamples=B, seed=3)
    return [("states (confusion)", lambda mode: (run(state_fn, mode).counts,),
             lambda: (calipers.ConfusionState.init(2).update(y, pa).counts,)),
            (f"paired bootstrap, accuracy, B={B}", lambda mode: run(boot_fn, mode),
             lambda: calipers.paired_bootstrap_replicates(
                 calipers.accuracy_score, y, pa, pb, n_resamples=B, seed=3,
                 resampling="poisson", row_ids=ids))]


def bench_beam(n, p, B, r, data):
    if importlib.util.find_spec("apache_beam") is None:
        print("\nApache Beam: not installed (pip install calipers[beam])")
        return
    print(f"\ncalipers.beam, DirectRunner, one element a partition:")
    print(f"{'':42s} {'one-shot rows/s':>16s} {'in_memory':>10s} {'2 processes':>12s}")
    for name, dist, one in beam_cases(n, p, B, data):
        ref = one()
        for mode in ("in_memory", "multi_processing"):
            assert same(dist(mode), ref), (name, mode)
        t_one = median_time(one, r)
        t_mem = median_time(lambda: dist("in_memory"), r)
        t_mp = median_time(lambda: dist("multi_processing"), r)
        print(f"{name:42s} {n / t_one:16.3g} {t_one / t_mem:9.2f}x {t_one / t_mp:11.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: checks, not timings")
    ap.add_argument("--memory-only", action="store_true",
                    help="only the peak worker memory against partition size")
    ap.add_argument("--memory-json", default=str(HERE / "results" / "distributed_memory.json"))
    args = ap.parse_args()
    if args.smoke:
        args.n, args.partitions, args.resamples, args.repeat = 20_000, 4, 10, 1
    n, p, B, r = args.n, args.partitions, args.resamples, args.repeat
    if args.memory_only:
        memory_by_partition_size(n, B, (max(2, p // 2), p, 2 * p, 4 * p), args.memory_json)
        return
    print(f"machine: {machine()}; n = {n}, {p} partitions, 2 workers x 1 thread; "
          f"median of {r}")
    data = whole(n, p)
    with cluster() as cl, distributed.Client(cl) as client:
        client.wait_for_workers(2)
        print(f"{'':42s} {'one-shot rows/s':>16s} {'sync graph':>11s} {'2 workers':>10s}")
        for name, dist, one in cases(n, p, B, data):
            ref = one()
            assert same(dist(scheduler=client), ref), name
            assert same(dist(scheduler="sync"), ref), name
            t_one = median_time(one, r)
            t_sync = median_time(lambda: dist(scheduler="sync"), r)
            t_dist = median_time(lambda: dist(scheduler=client), r)
            print(f"{name:42s} {n / t_one:16.3g} {t_one / t_sync:10.2f}x {t_one / t_dist:9.2f}x")
    bench_beam(n, p, B, r, data)
    memory_by_partition_size(n, B, (max(2, p // 2), p, 2 * p, 4 * p), args.memory_json)


def memory_by_partition_size(n, B, partition_counts, out_json):
    """Peak resident memory of each worker against the partition size, written as JSON.

    For each number of partitions, a fresh 2-worker cluster runs the states, the Poisson
    and the multinomial accuracy bootstraps and the exact AUC over the same ``n`` rows;
    ``ru_maxrss`` of each worker process after them, beside its value when idle.
    """
    import json

    rows = []
    print("\npeak worker memory (ru_maxrss, fresh cluster): states, Poisson and multinomial "
          "accuracy bootstraps, exact AUC")
    for q in partition_counts:
        with cluster() as cl, distributed.Client(cl) as client:
            client.wait_for_workers(2)
            base = client.run(peak_rss)
            ps = parts(n, q)
            cd.reduce_states(ps, lambda: Pair(init()), lambda s, x: s.update(x),
                             compute={"scheduler": client})
            for resampling in ("poisson", "multinomial"):
                cd.paired_bootstrap_replicates(ps, "accuracy", "y", "pa", "pb", n_resamples=B,
                                               seed=3, resampling=resampling,
                                               compute={"scheduler": client})
            cd.roc_auc_score(ps, "y", "a", compute={"scheduler": client})
            peaks = client.run(peak_rss)
        part_rows = n // q
        row = {"partitions": q, "rows_per_partition": part_rows,
               "partition_mib": round(part_rows * BYTES_PER_ROW / 2**20, 2),
               "peak_mib": sorted(round(v / 2**20, 1) for v in peaks.values()),
               "idle_mib": sorted(round(v / 2**20, 1) for v in base.values())}
        rows.append(row)
        print(f"  {q:3d} partitions, {row['partition_mib']:8.1f} MiB a partition: peak "
              f"{row['peak_mib']} MiB (idle {row['idle_mib']})")
    Path(out_json).parent.mkdir(parents=True, exist_ok=True)
    with open(out_json, "w") as f:
        json.dump({"machine": machine(), "n": n, "n_resamples": B, "workers": 2,
                   "threads_per_worker": 1, "bytes_per_row": BYTES_PER_ROW,
                   "measure": "ru_maxrss of each worker process, fresh cluster per row",
                   "rows": rows}, f, indent=1)
    print(f"  written to {out_json}")


if __name__ == "__main__":
    main()
