"""The package ships ``py.typed``, so its annotations are a promise: mypy runs clean over it.

The configuration is ``[tool.mypy]`` in pyproject.toml (the libraries without type information
are listed there). Skips only where mypy itself is not installed (it is in the ``test`` extra).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_clean_over_src():
    pytest.importorskip("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
