"""The training-loop page: its code is docs/examples/*.py, run here.

docs/examples/training_loop.py checks its own claims (streamed values equal the one-shot
functions, one compile per step, no transfers inside the loop, the streamed bootstrap interval
equals paired_bootstrap's); this test runs it on 4 simulated CPU devices and compares with a
one-device mesh. The torch.distributed recipe runs with two gloo processes where torch is
importable, against one process.
"""

from __future__ import annotations

import os
import pathlib
import re
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
PAGE = ROOT / "docs" / "training_loop.md"


def env_with(pythonpath):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env["JAX_PLATFORMS"] = "cpu"
    return env


def test_page_code_blocks_are_the_example_files():
    blocks = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(), re.MULTILINE | re.DOTALL)
    assert blocks == [(EXAMPLES / "training_loop.py").read_text(),
                      (EXAMPLES / "torch_distributed.py").read_text()]
    nav = (ROOT / "mkdocs.yml").read_text()
    assert "training_loop.md" in nav


FOUR_DEVICES = textwrap.dedent("""
    import os
    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
    import jax, numpy as np
    import training_loop as T

    assert jax.device_count() == 4
    four = T.main()                                   # every check of the example, 4 devices
    one = T.train_and_evaluate(jax.make_mesh((1,), ("data",), devices=jax.devices()[:1]))
    leaves = lambda t: [np.asarray(a) for a in jax.tree.leaves(t)]
    n_int = 0
    for a, b in zip(leaves((four["per_epoch"], four["bootstrap"])),
                    leaves((one["per_epoch"], one["bootstrap"]))):
        assert a.dtype == b.dtype and a.shape == b.shape
        if a.dtype.kind in "iub":
            np.testing.assert_array_equal(a, b)
            n_int += 1
        else:
            # float sums of float32 softmax values, added in another order
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    for a, b in zip(four["logits"], one["logits"]):
        # the same training on either mesh, to float32 rounding (XLA may fuse differently)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    print("FOUR-EQUALS-ONE", n_int)
""")


def test_training_loop_example_on_four_devices_equals_one(tmp_path):
    pytest.importorskip("flax")
    pytest.importorskip("optax")
    script = tmp_path / "four.py"
    script.write_text(FOUR_DEVICES)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env_with([ROOT / "src", EXAMPLES]), timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert "epoch 3: accuracy" in res.stdout and "95% interval" in res.stdout
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("FOUR-EQUALS-ONE")]
    # 4 epochs' confusion matrices and the bootstrap state's 3 integer fields, bit for bit
    assert line and int(line[0].split()[1]) == 4 + 3


TORCH = os.environ.get("CALIPERS_TORCH_PATH", "/tmp/torchpkg")


def torch_path():
    """sys.path entries that make torch importable in a subprocess, or None."""
    probe = "import torch, torch.distributed as d; assert d.is_gloo_available()"
    for extra in ([], [TORCH]):
        res = subprocess.run([sys.executable, "-c", probe], capture_output=True,
                             env=env_with([ROOT / "src", *extra]), timeout=120)
        if res.returncode == 0:
            return extra
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torch_distributed_recipe_with_two_gloo_processes_equals_one_process(tmp_path):
    extra = torch_path()
    if extra is None:
        pytest.skip("torch with gloo is not importable")
    out, port = tmp_path / "out.npz", free_port()
    env = env_with([ROOT / "src", EXAMPLES, *extra])
    procs = [subprocess.Popen([sys.executable, str(EXAMPLES / "torch_distributed.py"), str(r),
                               "2", str(port), str(out)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    got = np.load(out)
    sys.path.insert(0, str(EXAMPLES))
    try:
        import importlib
        import types
        # the one-process reference: the same evaluate() on all rows, without torch
        src = (EXAMPLES / "torch_distributed.py").read_text()
        src = src.replace("import torch\nimport torch.distributed as dist\n", "")
        mod = types.ModuleType("torch_distributed_ref")
        exec(compile(src, "torch_distributed_ref", "exec"), mod.__dict__)
        importlib.invalidate_caches()
    finally:
        sys.path.remove(str(EXAMPLES))
    y = mod.data()[0]
    coll, boot = mod.evaluate(np.arange(len(y)))
    res = coll.compute()
    dist_a, dist_b = boot.compute()
    np.testing.assert_array_equal(got["counts"], res["cm"].confusion_matrix)
    assert float(got["auc"]) == float(res["roc"].roc_auc)          # integer histograms
    np.testing.assert_allclose(got["log_loss"], res["loss"].log_loss, rtol=1e-12)
    np.testing.assert_array_equal(got["dist_a"], dist_a)           # integer bootstrap sums
    np.testing.assert_array_equal(got["dist_b"], dist_b)
