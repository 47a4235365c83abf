"""docs/distributed.md: the worked examples marked runnable run and check themselves.

A block preceded by ``<!-- runnable -->`` runs as one Python process; one preceded by
``<!-- runnable: processes=2 -->`` runs as two processes of one ``jax.distributed`` job (two
CPU devices each), with ``COORDINATOR``, ``NUM_PROCESSES`` and ``PROCESS_ID`` set as a launcher
would. Each example asserts its own result against one machine, so a run that exits 0 agrees.
Unmarked blocks are recipes for engines that are not installed (Spark, Ray); the runnable
block they use is run here. The Dask and Beam examples skip where their engine is missing.
"""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "distributed.md"
BLOCK = re.compile(r"<!-- runnable(?:: processes=(\d+))? -->\n```python\n(.*?)^```",
                   re.MULTILINE | re.DOTALL)


def _blocks():
    return [(int(m.group(1) or 1), m.group(2)) for m in BLOCK.finditer(PAGE.read_text())]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "JAX_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def test_page_has_the_runnable_examples():
    blocks = _blocks()
    assert [p for p, _ in blocks].count(2) == 1            # the multi-host JAX example
    assert any("calipers.dask" in code for _, code in blocks)
    assert any("calipers.beam" in code for _, code in blocks)
    assert any("def partition_sums" in code for _, code in blocks)
    # the engine recipes build on the runnable per-partition function
    text = PAGE.read_text()
    for engine in ("CombineFn", "mapInPandas", "map_batches"):
        assert engine in text and "partition_sums" in text


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_example_runs(index, tmp_path):
    processes, code = _blocks()[index]
    if "calipers.dask" in code:
        pytest.importorskip("dask.distributed")
    if "apache_beam" in code:
        pytest.importorskip("apache_beam")
    if "jax" in code:
        pytest.importorskip("jax")
    script = tmp_path / "example.py"
    script.write_text(code)
    if processes == 1:
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                             env=_env(), cwd=tmp_path, timeout=180)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
        return
    port = _free_port()
    procs = [subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, cwd=tmp_path,
        env=_env(COORDINATOR=f"127.0.0.1:{port}", NUM_PROCESSES=str(processes),
                 PROCESS_ID=str(i), JAX_PLATFORMS="cpu",
                 XLA_FLAGS="--xla_force_host_platform_device_count=2"))
        for i in range(processes)]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=180)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0] * processes, \
        "\n".join(log[-3000:] for log in logs)
    assert "accuracy A - B" in logs[0]
