"""calipers on whatever JAX device is present: times and ratios to one ``jnp.sort``.

    python benchmarks/device.py            # sizes for the default device (GPU: full sizes)
    python benchmarks/device.py --smoke    # tiny sizes, seconds (the test suite runs this)
    python benchmarks/device.py --json out.json

Measured on the default JAX device, each after one warm-up call (compilation
is reported apart), median of ``--repeat`` calls:

* ``sort``: ``jnp.sort`` of n float32 scores (the floor of an exact AUC);
* ``auc`` / ``ap``: ``calipers.roc_auc_score`` / ``average_precision_score``
  under ``jax.jit`` on n scores;
* ``ndcg``: ``calipers.retrieval.ndcg`` at k = 10 under ``jit`` on a
  ``(Q, L)`` batch, and ``ranking_batch_metrics`` (NDCG, MRR, recall, masked);
* ``bootstrap``: ``calipers.paired_bootstrap("roc_auc", ...)`` with B
  replicates of n rows (a compiled, chunked JAX program);
* ``roc_state_update`` / ``roc_state_compute``: ``ROCHistogramState`` at
  16, 20 and 24 bits (jitted update of one batch; compute of the state).

Ratios are to ``jnp.sort`` of the same number of elements on the same device.
When the default device is not a CPU, the same suite runs again on the host
CPU (the bootstrap there with B / 100 replicates, its time scaled by 100
and marked) and the table adds the device's speed-up over the CPU.

Sizes (default device GPU/TPU; CPU; --smoke): n = 10^7 / 10^6 / 2,000 scores;
NDCG Q x L = 10^5 x 100 / 10^4 x 100 / 50 x 20; bootstrap n = 10^6, B = 10^4 /
n = 10^5, B = 10^3 / n = 500, B = 20. The whole run stays under 5 minutes on
one GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", "--x32" not in sys.argv)

import calipers  # noqa: E402
from calipers import ROCHistogramState, ranking_batch_metrics  # noqa: E402
from calipers import retrieval as R  # noqa: E402

SIZES = {
    "accelerator": dict(n=10**7, Q=10**5, L=100, boot_n=10**6, boot_B=10**4, batch=10**6,
                        bits=(16, 20, 24)),
    "cpu": dict(n=10**6, Q=10**4, L=100, boot_n=10**5, boot_B=10**3, batch=10**6,
                bits=(16, 20, 24)),
    "smoke": dict(n=2000, Q=50, L=20, boot_n=500, boot_B=20, batch=1000, bits=(16,)),
}


def _block(x):
    return jax.block_until_ready(x)


def _time(fn, repeat):
    """(compile + first call seconds, median seconds of ``repeat`` later calls)."""
    t = time.perf_counter()
    _block(fn())
    first = time.perf_counter() - t
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        _block(fn())
        times.append(time.perf_counter() - t)
    return first, statistics.median(times)


def run_suite(device, sz, repeat, boot_scale=1, explicit_batch=False):
    """Every measurement on ``device``; returns {name: (elements, first, median)}."""
    rng = np.random.default_rng(0)
    out = {}

    def put(a):
        return jax.device_put(jnp.asarray(a), device)

    n = sz["n"]
    y = put(rng.integers(0, 2, n).astype(np.int32))
    s = put(rng.standard_normal(n).astype(np.float32))
    out["sort"] = (n, *_time(lambda: jax.jit(jnp.sort)(s), repeat))
    auc = jax.jit(calipers.roc_auc_score)
    ap = jax.jit(calipers.average_precision_score)
    out["auc"] = (n, *_time(lambda: auc(y, s), repeat))
    out["ap"] = (n, *_time(lambda: ap(y, s), repeat))

    Q, L = sz["Q"], sz["L"]
    rel = put(rng.integers(0, 4, (Q, L)).astype(np.int32))
    qs = put(rng.standard_normal((Q, L)).astype(np.float32))
    mask = put(rng.random((Q, L)) < 0.9)
    qs_flat = jnp.reshape(qs, (-1,))
    out["sort_QL"] = (Q * L, *_time(lambda: jax.jit(jnp.sort)(qs_flat), repeat))
    nd = jax.jit(lambda r, q: R.ndcg(r, q, k=10).mean)
    out["ndcg@10"] = (Q * L, *_time(lambda: nd(rel, qs), repeat))
    rb = jax.jit(lambda r, q, m: ranking_batch_metrics(r, q, m, k=10))
    out["ranking_batch"] = (Q * L, *_time(lambda: rb(rel, qs, mask), repeat))

    bn, bB = sz["boot_n"], max(1, sz["boot_B"] // boot_scale)
    yb = put(rng.integers(0, 2, bn).astype(np.int32))
    sa = put(rng.standard_normal(bn).astype(np.float32))
    sb = put((rng.standard_normal(bn) * 0.9).astype(np.float32))
    # accelerators: larger compiled chunks than the CPU default (about 2**20 / n)
    explicit = explicit_batch or device.platform != "cpu"
    batch = max(1, min(bB, 2 ** 26 // bn)) if explicit else None

    def boot():
        with jax.default_device(device):
            r = calipers.paired_bootstrap("roc_auc", yb, sa, sb, n_resamples=bB, seed=0,
                                          batch=batch)
        return jnp.asarray(r.difference)

    first, med = _time(boot, 1 if bB > 100 else repeat)
    out[f"bootstrap n={bn} B={sz['boot_B']}"] = (bn, first, med * boot_scale)
    if bn not in (n, Q * L):
        sb_flat = sa
        out[f"sort_{bn}"] = (bn, *_time(lambda: jax.jit(jnp.sort)(sb_flat), repeat))

    m = sz["batch"]
    ym, sm = y[:m], s[:m]
    upd = jax.jit(lambda st, yy, ss: st.update(yy, ss))
    comp = jax.jit(lambda st: st.compute())
    if m not in (n, Q * L, bn):
        out[f"sort_{m}"] = (m, *_time(lambda: jax.jit(jnp.sort)(sm), repeat))
    for bits in sz["bits"]:
        with jax.default_device(device):
            st = ROCHistogramState.init(bits, xp=jnp)
        st = jax.device_put(st, device)
        out[f"roc_state_update bits={bits}"] = (m, *_time(lambda: upd(st, ym, sm), repeat))
        full = upd(st, ym, sm)
        out[f"roc_state_compute bits={bits}"] = (m, *_time(lambda: comp(full), repeat))
    return out


def _sort_ref(res, elements):
    for key, (e, _, med) in res.items():
        if key.startswith("sort") and e == elements:
            return med
    return float("nan")


def table(res, cpu=None, scaled=False):
    lines = [f"{'work':<34}{'elements':>12}{'first (s)':>12}{'median (s)':>12}"
             f"{'x sort':>9}" + (f"{'CPU (s)':>12}{'CPU/dev':>9}" if cpu else "")]
    for key, (e, first, med) in res.items():
        ratio = med / _sort_ref(res, e)
        row = f"{key:<34}{e:>12,}{first:>12.4f}{med:>12.4f}{ratio:>9.2f}"
        if cpu and key in cpu:
            c = cpu[key][2]
            mark = "*" if scaled and key.startswith("bootstrap") else ""
            row += f"{c:>11.4f}{mark:1}{c / med:>9.1f}"
        lines.append(row)
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smoke", action="store_true", help="tiny sizes (seconds)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", help="write the measurements here")
    p.add_argument("--x32", action="store_true", help="run without jax_enable_x64")
    p.add_argument("--no-cpu", action="store_true", help="skip the CPU comparison run")
    p.add_argument("--compare-cpu", action="store_true",
                   help="run the CPU comparison even when the default device is a CPU "
                        "(exercises the accelerator code path; for tests)")
    args = p.parse_args(argv)
    dev = jax.devices()[0]
    kind = "smoke" if args.smoke else ("cpu" if dev.platform == "cpu" else "accelerator")
    sz = SIZES[kind]
    print(f"device: {dev.device_kind} ({dev.platform}), {jax.device_count()} device(s); "
          f"jax {jax.__version__}; x64 {jax.config.read('jax_enable_x64')}; "
          f"host {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"sizes: {kind}")
    t0 = time.perf_counter()
    res = run_suite(dev, sz, args.repeat, explicit_batch=args.compare_cpu)
    cpu = None
    if (dev.platform != "cpu" or args.compare_cpu) and not args.no_cpu:
        cpu_dev = jax.devices("cpu")[0]
        cpu = run_suite(cpu_dev, sz, 1, boot_scale=100 if not args.smoke else 1)
    print(table(res, cpu, scaled=not args.smoke))
    if cpu:
        print("* CPU bootstrap ran B/100 replicates; its time is scaled by 100")
    print(f"total {time.perf_counter() - t0:.1f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": str(dev.device_kind), "platform": dev.platform,
                       "sizes": kind, "device_results": res, "cpu_results": cpu}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
