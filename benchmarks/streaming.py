"""Streaming AUC/AP: calipers' histogram state against torchmetrics' binned AUROC and metrax.

    python benchmarks/streaming.py [--n 1000000] [--batches 10] [--smoke]

For each implementation present: the error of the streamed AUC (and AP) against
the exact value (``calipers.roc_auc_score`` on all scores at once, itself
equal to scikit-learn's), the memory of the state, and the time per update
(median over the batches, after one warm-up update). torchmetrics and metrax
are optional: when one is not importable its rows are skipped with a message
(install them in a separate environment; torch is not a calipers dependency).

Scores: float32 sigmoid outputs of a two-Gaussian logit model, and the same
rounded to bfloat16 (where calipers' 16-bit state is exact).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time

import sys

import jax
import numpy as np

jax.config.update("jax_enable_x64", "--x32" not in sys.argv)  # float64 sums unless --x32

import calipers  # noqa: E402


def _data(n, rng):
    y = rng.integers(0, 2, n)
    logit = rng.standard_normal(n) + 1.2 * y
    p = (1 / (1 + np.exp(-logit))).astype(np.float32)
    return y, p


def _run(update, compute, batches):
    times = []
    for i, (yb, sb) in enumerate(batches):
        t = time.perf_counter()
        update(yb, sb)
        if i:  # the first update compiles
            times.append(time.perf_counter() - t)
    return compute(), statistics.median(times) if times else float("nan")


def calipers_rows(y, s, batches, bits_list):
    import jax
    import jax.numpy as jnp

    from calipers import ROCHistogramState

    rows = []
    for bits in bits_list:
        state = [ROCHistogramState.init(bits, xp=jnp)]
        upd = jax.jit(lambda st, a, b: st.update(a, b))

        def update(a, b):
            state[0] = jax.block_until_ready(upd(state[0], jnp.asarray(a), jnp.asarray(b)))

        out, t = _run(update, lambda: state[0].compute(), batches)
        mem = sum(x.size * x.dtype.itemsize for x in state[0])
        rows.append((f"calipers ROCHistogramState bits={bits}", float(out.roc_auc),
                     float(out.roc_auc_bound), float(out.average_precision),
                     float(out.average_precision_bound), mem, t))
    return rows


def torchmetrics_rows(batches, thresholds_list):
    if importlib.util.find_spec("torchmetrics") is None or importlib.util.find_spec("torch") is None:
        print("torchmetrics / torch not installed: skipped")
        return []
    import torch
    from torchmetrics.classification import BinaryAUROC, BinaryAveragePrecision

    rows = []
    for T in thresholds_list:
        auroc, apm = BinaryAUROC(thresholds=T), BinaryAveragePrecision(thresholds=T)

        def update(a, b):
            ta, tb = torch.as_tensor(b), torch.as_tensor(a)
            auroc.update(ta, tb)
            apm.update(ta, tb)

        out, t = _run(update, lambda: (float(auroc.compute()), float(apm.compute())), batches)
        mem = 2 * T * 2 * 8  # confusion counts per threshold (int64), two metrics
        rows.append((f"torchmetrics BinaryAUROC thresholds={T}", out[0], float("nan"), out[1],
                     float("nan"), mem, t))
    return rows


def metrax_rows(batches, thresholds_list):
    if importlib.util.find_spec("metrax") is None:
        print("metrax not installed: skipped")
        return []
    import jax
    import jax.numpy as jnp
    import metrax

    rows = []
    for T in thresholds_list:
        state = [None]

        def update(a, b):
            m = metrax.AUCROC.from_model_output(predictions=jnp.asarray(b),
                                                labels=jnp.asarray(a), num_thresholds=T)
            state[0] = m if state[0] is None else state[0].merge(m)

        out, t = _run(update, lambda: float(state[0].compute()), batches)
        mem = sum(x.nbytes for x in jax.tree_util.tree_leaves(state[0]) if hasattr(x, "nbytes"))
        rows.append((f"metrax AUCROC num_thresholds={T}", out, float("nan"), float("nan"),
                     float("nan"), mem, t))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=10**6)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--x32", action="store_true", help="run JAX without x64 (int32 counts)")
    a = p.parse_args(argv)
    n, nb = (4000, 4) if a.smoke else (a.n, a.batches)
    rng = np.random.default_rng(0)
    y, s32 = _data(n, rng)
    import ml_dtypes

    sbf = s32.astype(ml_dtypes.bfloat16).astype(np.float32)
    for label, s in (("float32 scores", s32), ("bfloat16 scores", sbf)):
        exact_auc = calipers.roc_auc_score(y, s)
        exact_ap = calipers.average_precision_score(y, s)
        parts = np.array_split(np.arange(n), nb)
        batches = [(y[i], s[i]) for i in parts]
        print(f"\n{label}: n = {n}, {nb} batches; exact AUC {exact_auc:.10f}, AP {exact_ap:.10f}")
        rows = calipers_rows(y, s, batches, (16,) if a.smoke else (16, 20, 24))
        # torchmetrics compares every score with every threshold (a (batch x thresholds) array): at
        # 10^4 thresholds an update of 10^5 rows took over 30 s here, so 200 and 1,000 as metrax
        rows += torchmetrics_rows(batches, (200, 1_000))
        # metrax builds a (thresholds x batch) array per update: 10^4 thresholds at
        # 10^5 rows per batch would need gigabytes, so it runs at 200 and 1,000
        rows += metrax_rows(batches, (200, 1_000))
        print(f"{'implementation':<44}{'|AUC err|':>11}{'bound':>10}{'|AP err|':>11}"
              f"{'bound':>10}{'memory':>12}{'ms/update':>11}")
        for name, auc, ab, ap, apb, mem, t in rows:
            print(f"{name:<44}{abs(auc - exact_auc):>11.2e}{ab:>10.1e}"
                  f"{abs(ap - exact_ap):>11.2e}{apb:>10.1e}{mem / 2**20:>9.2f} MiB"
                  f"{t * 1e3:>11.2f}")


if __name__ == "__main__":
    main()
