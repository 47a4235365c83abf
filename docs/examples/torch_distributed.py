"""calipers states summed across torch.distributed processes: one all-reduce per field.

Run one process per rank: python torch_distributed.py RANK WORLD_SIZE PORT OUT.npz
"""

import dataclasses
import sys

import numpy as np
import torch
import torch.distributed as dist

from calipers import (ConfusionState, PairedBootstrapState, ProbabilityLossState,
                      ROCHistogramState, StateCollection)


def all_reduce_state(state):
    """The sum of ``state`` over every process: each field all-reduced (what psum does).

    Like psum, the all-reduce does not check the count limits: keep the totals over all
    processes within the counts' dtype (int64 here).
    """
    fields = []
    for f in state:
        t = torch.from_numpy(np.array(f))       # a contiguous copy; 0-d stays 0-d
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        fields.append(t.numpy())
    return type(state)(*fields)


def all_reduce_collection(collection):
    return dataclasses.replace(
        collection, states={n: all_reduce_state(s) for n, s in collection.items()})


def data(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score_a = (rng.random(n) + 0.3 * y) / 1.3
    score_b = (rng.random(n) + 0.2 * y) / 1.2
    return y, score_a, score_b, np.arange(n)


def evaluate(rows):
    """This process's states on its rows (indices into the data)."""
    y, a, b, ids = (v[rows] for v in data())
    coll = StateCollection.init({"cm": ConfusionState.init(2),
                                 "roc": ROCHistogramState.init(16),
                                 "loss": ProbabilityLossState.init()})
    coll = coll.update(labels=y, probs=a)
    boot = PairedBootstrapState.init("roc_auc", 100, seed=0)
    boot = boot.update(y, a, b, row_ids=ids)
    return coll, boot


def main(rank, world_size, port, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size)
    n = len(data()[0])
    coll, boot = evaluate(np.arange(rank, n, world_size))      # this process's share
    coll, boot = all_reduce_collection(coll), all_reduce_state(boot)
    if rank == 0:
        res = coll.compute()
        dist_a, dist_b = boot.compute()
        np.savez(out, counts=res["cm"].confusion_matrix, auc=res["roc"].roc_auc,
                 log_loss=res["loss"].log_loss, dist_a=dist_a, dist_b=dist_b)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
