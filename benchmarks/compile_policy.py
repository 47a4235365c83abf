"""Eager JAX calls with changing input lengths: plain eager dispatch vs the compile policy.

For each metric, 50 calls on JAX arrays whose length is drawn at random from
[100, 5000] (the lengths an evaluation loop with a ragged last batch, or a
per-dataset evaluation, produces). "before" calls the undecorated function
(op-by-op eager JAX, the behaviour without ``calipers._core.compile``); "after"
calls the public function (one jitted program per power-of-two bucket, in a
bounded cache). Reported: XLA compilations (counted from JAX's compile log)
and total wall time. Run: ``PYTHONPATH=src python -u benchmarks/compile_policy.py [calls [metric ...]]``.
"""

from __future__ import annotations

import os
import platform
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import calipers  # noqa: E402
from calipers._core import compile as _compile  # noqa: E402
from _timing import CompileCount  # noqa: E402

jax.config.update("jax_enable_x64", True)


def run(name, fn, make, lengths):
    with CompileCount() as counter:
        t = time.perf_counter()
        for n in lengths:
            out = fn(*make(n))
            jax.block_until_ready(out)
        total = time.perf_counter() - t
    return counter.n, total


def main(calls=50, seed=0, only=None):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(100, 5001, calls).tolist()

    def binary(n):
        r = np.random.default_rng(n)
        return jnp.asarray(r.integers(0, 2, n)), jnp.asarray(r.random(n))

    def regression(n):
        r = np.random.default_rng(n)
        y = r.normal(size=n)
        return jnp.asarray(y), jnp.asarray(y + r.normal(size=n))

    cases = [("log_loss", calipers.log_loss, binary),
             ("expected_calibration_error", calipers.expected_calibration_error, binary),
             ("r2_score", calipers.r2_score, regression)]
    print(f"# {calls} calls, lengths uniform in [100, 5000], {len(set(lengths))} distinct; "
          f"jax {jax.__version__} on {platform.processor() or platform.machine()}")
    print(f"{'metric':28s} {'before: compiles':>17s} {'time s':>8s} {'after: compiles':>16s} "
          f"{'time s':>8s} {'speed-up':>9s}")
    for name, fn, make in cases:
        if only and name not in only:
            continue
        plain = fn.__wrapped_compiled__
        c0, t0 = run(name, plain, make, lengths)
        _compile.clear_cache()
        c1, t1 = run(name, fn, make, lengths)
        print(f"{name:28s} {c0:17d} {t0:8.2f} {c1:16d} {t1:8.2f} {t0 / t1:8.1f}x", flush=True)
    print(f"# compile cache: {_compile.cache_info()}")


if __name__ == "__main__":
    import sys

    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50, only=sys.argv[2:])
