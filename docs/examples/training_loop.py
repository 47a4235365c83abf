"""Evaluation inside a Flax NNX + optax training loop, on scikit-learn's digits.

A small MLP trains for a few epochs; after each epoch a jitted eval step feeds a
StateCollection from padded, masked eval batches on every device of a mesh, and
nothing is read back to the host until the end. At the end a streaming paired
bootstrap compares two checkpoints.
"""

import collections

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P
from sklearn.datasets import load_digits

import calipers
from calipers import (CalibrationState, ConfusionState, PairedBootstrapState,
                      ProbabilityLossState, StateCollection)

# int64 counts and float64 replicates: the bootstrap interval below then equals
# paired_bootstrap's bit for bit (without x64 the counts are int32 and still exact, and the
# replicates float32)
jax.config.update("jax_enable_x64", True)

TRACES = collections.Counter()      # Python side effects run once per compile


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.hidden = nnx.Linear(64, 32, rngs=rngs)
        self.out = nnx.Linear(32, 10, rngs=rngs)

    def __call__(self, x):
        return self.out(nnx.relu(self.hidden(x)))


def padded_batches(x, y, size):
    """Eval batches of one shape: the ragged last batch padded, with a mask and global row ids."""
    n = len(y)
    pad = -n % size
    x = np.concatenate([x, np.zeros((pad, x.shape[1]), x.dtype)])
    y = np.concatenate([y, np.zeros(pad, y.dtype)])
    mask = np.arange(n + pad) < n
    ids = np.arange(n + pad, dtype=np.int32)
    return [tuple(a[i:i + size] for a in (x, y, mask, ids)) for i in range(0, n + pad, size)]


def make_eval_step(graphdef, mesh):
    """A jitted eval step: each device updates fresh states with its shard, psum adds them."""
    def make():
        return StateCollection.init({"cm": ConfusionState.init(10, xp=jnp),
                                     "loss": ProbabilityLossState.init(xp=jnp),
                                     "ece": CalibrationState.init(10, xp=jnp)})

    def local(params, x, y, mask):
        logits = nnx.merge(graphdef, params)(x)
        return jax.lax.psum(make().update(labels=y, logits=logits, mask=mask), "data")

    @jax.jit
    def eval_step(params, states, x, y, mask):
        TRACES["eval_step"] += 1
        new = jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data"), P("data"), P("data")),
                            out_specs=P())(params, x, y, mask)
        return states.merge(new)

    # replicated on the mesh, as the step's output is: the first call compiles the only program
    return jax.device_put(make(), NamedSharding(mesh, P())), eval_step


def make_bootstrap_step(graphdef, mesh, n_resamples, seed):
    """Accuracy of two checkpoints on the same Poisson resamples, keyed by global row id."""
    def make():
        return PairedBootstrapState.init("accuracy", n_resamples, seed=seed, xp=jnp)

    def local(params_a, params_b, x, y, mask, ids):
        pred_a = jnp.argmax(nnx.merge(graphdef, params_a)(x), axis=1)
        pred_b = jnp.argmax(nnx.merge(graphdef, params_b)(x), axis=1)
        st = make().update(y, pred_a, pred_b, row_ids=ids, mask=mask)
        return jax.lax.psum(st, "data")

    @jax.jit
    def step(params_a, params_b, state, x, y, mask, ids):
        TRACES["bootstrap_step"] += 1
        new = jax.shard_map(local, mesh=mesh, in_specs=(P(), P()) + (P("data"),) * 4,
                            out_specs=P())(params_a, params_b, x, y, mask, ids)
        return state.merge(new)

    return jax.device_put(make(), NamedSharding(mesh, P())), step


def train_and_evaluate(mesh, epochs=4, batch=64, eval_batch=128, n_resamples=200, seed=0):
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(y))
    train, test = order[:1297], order[1297:]                 # 500 eval rows: 3 x 128 + 116

    # the model and the optimizer replicated on the mesh: no transfer inside the loop
    replicated = NamedSharding(mesh, P())
    model = MLP(nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    for obj in (model, optimizer):
        nnx.update(obj, jax.device_put(nnx.state(obj), replicated))

    @nnx.jit
    def train_step(model, optimizer, train_x, train_y, idx):
        TRACES["train_step"] += 1
        xb, yb = train_x[idx], train_y[idx]

        def loss_fn(model):
            logits = model(xb)
            return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()

        grads = nnx.grad(loss_fn)(model)
        optimizer.update(model, grads)

    shard = NamedSharding(mesh, P("data"))
    # every batch on the devices before the loop: the loop itself moves nothing
    train_x, train_y = jax.device_put((x[train], y[train]), replicated)
    steps = [[jax.device_put(perm[i:i + batch], replicated)
              for i in range(0, len(train) - batch + 1, batch)]
             for perm in (np.random.default_rng(seed + e).permutation(len(train))
                          for e in range(epochs))]          # full, shuffled train batches
    batches = [tuple(jax.device_put(a, shard) for a in b)
               for b in padded_batches(x[test], y[test], eval_batch)]

    graphdef, _ = nnx.split(model)
    empty, eval_step = make_eval_step(graphdef, mesh)
    per_epoch, checkpoints = [], []
    with jax.transfer_guard("disallow"):
        for epoch in range(epochs):
            for idx in steps[epoch]:
                train_step(model, optimizer, train_x, train_y, idx)
            params = jax.tree.map(jnp.copy, nnx.state(model, nnx.Param))   # a checkpoint
            states = empty
            for xb, yb, mb, _ in batches:
                states = eval_step(params, states, xb, yb, mb)
            per_epoch.append(states)                # stays on the device
            checkpoints.append(params)

    # the end: a streaming paired bootstrap of the first checkpoint against the last
    boot, boot_step = make_bootstrap_step(graphdef, mesh, n_resamples, seed)
    with jax.transfer_guard("disallow"):
        for xb, yb, mb, ids in batches:
            boot = boot_step(checkpoints[0], checkpoints[-1], boot, xb, yb, mb, ids)

    logits = [np.asarray(nnx.merge(graphdef, p)(jnp.asarray(x[test]))) for p in checkpoints]
    return dict(per_epoch=[s.compute() for s in per_epoch], bootstrap=boot,
                y=y[test], logits=logits, row_ids=np.arange(len(test)), seed=seed,
                n_resamples=n_resamples)


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    out = train_and_evaluate(mesh)
    y, logits = out["y"], out["logits"]
    for epoch, res in enumerate(out["per_epoch"]):
        print(f"epoch {epoch}: accuracy {float(res['cm'].accuracy):.4f}, "
              f"log loss {float(res['loss'].log_loss):.4f}, ECE {float(res['ece']):.4f}")

    # the streamed values are the one-shot functions on all 500 eval rows
    final, z = out["per_epoch"][-1], logits[-1]
    p = np.asarray(jax.nn.softmax(z))
    np.testing.assert_array_equal(np.asarray(final["cm"].confusion_matrix),
                                  calipers.confusion_matrix(y, z.argmax(1), labels=range(10)))
    np.testing.assert_allclose(float(final["loss"].log_loss), calipers.log_loss(y, p), rtol=1e-5)
    np.testing.assert_allclose(float(final["ece"]), calipers.expected_calibration_error(
        y, p, n_bins=10), rtol=1e-4, atol=1e-6)
    # one compile each: every batch has one shape, and epochs only change the values
    assert TRACES == {"train_step": 1, "eval_step": 1, "bootstrap_step": 1}, TRACES

    # the streamed bootstrap interval is paired_bootstrap's, bit for bit (integer counts)
    # read back once, at the end: the replicates from the state's integer counts, on the host
    dist_a, dist_b = jax.device_get(out["bootstrap"]).compute()
    pred_a, pred_b = logits[0].argmax(1), logits[-1].argmax(1)
    est = calipers.accuracy_score(y, pred_a) - calipers.accuracy_score(y, pred_b)
    streamed = calipers.bootstrap_interval(dist_a - dist_b, est)
    ref = calipers.paired_bootstrap(calipers.accuracy_score, y, pred_a, pred_b,
                                    n_resamples=out["n_resamples"], resampling="poisson",
                                    row_ids=out["row_ids"], seed=out["seed"])
    assert (float(streamed.low), float(streamed.high)) == (
        float(ref.confidence_interval.low), float(ref.confidence_interval.high))
    print(f"accuracy, first minus last checkpoint: {est:.4f}, 95% interval "
          f"[{float(streamed.low):.4f}, {float(streamed.high):.4f}]")
    return out


if __name__ == "__main__":
    main()
