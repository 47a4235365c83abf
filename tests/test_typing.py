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


def _public_functions():
    import inspect

    import calipers
    import calipers.retrieval

    for mod in (calipers, calipers.retrieval):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) or not callable(obj):
                continue
            while hasattr(obj, "__wrapped__"):
                obj = obj.__wrapped__
            yield f"{mod.__name__}.{name}", obj


def test_every_public_function_has_a_return_annotation():
    import inspect

    funcs = dict(_public_functions())
    assert len(funcs) > 100
    missing = sorted(name for name, fn in funcs.items()
                     if inspect.signature(fn).return_annotation is inspect.Signature.empty)
    assert not missing, f"public functions without a return annotation: {missing}"


def test_every_public_function_parameter_is_annotated():
    """mypy --strict treats an unannotated parameter as Any: every parameter of every public
    function names what it takes (``ArrayLike`` for data, ``SeedLike`` for seeds)."""
    import inspect

    missing = sorted(f"{name}({p.name})" for name, fn in _public_functions()
                     for p in inspect.signature(fn).parameters.values()
                     if p.annotation is inspect.Parameter.empty
                     and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
    assert not missing, f"public function parameters without an annotation: {missing}"


def test_public_api_result_types_under_mypy_strict():
    """tests/typing/check_api.py asserts the result types of the main API (``assert_type``):
    concrete result classes for results and states."""
    pytest.importorskip("mypy")
    import os

    env = dict(os.environ, MYPYPATH=str(ROOT / "src"))
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                           "--no-incremental", str(ROOT / "tests" / "typing" / "check_api.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    # the check can fail: a wrong assert_type is an error
    bad = ROOT / "tests" / "typing" / "check_api.py"
    wrong = bad.read_text().replace("assert_type(res, BootstrapResult)",
                                    "assert_type(res, DeLongResult)")
    assert wrong != bad.read_text()
    tmp = ROOT / "tests" / "typing" / "_wrong_check.py"
    tmp.write_text(wrong)
    try:
        proc = subprocess.run([sys.executable, "-m", "mypy", "--strict",
                               "--follow-imports=silent", "--no-incremental", str(tmp)],
                              cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    finally:
        tmp.unlink()
    assert proc.returncode == 1 and "assert-type" in proc.stdout, proc.stdout[-3000:]
