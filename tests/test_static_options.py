"""One rule for the static options every interval takes (the input layer's ``confidence_level``).

The kind behind the fault "``np.float32(0.95)`` is refused by one function and accepted by
another": each public function with a ``confidence_level`` must accept the same values (Python
and NumPy reals strictly inside (0, 1)) and refuse the same ones with a ``ValueError`` naming
the argument. The rule lives in ``calipers._core.validation.confidence_level``; the source check
below keeps a second copy from appearing.
"""

from __future__ import annotations

import inspect
import math
import re
from pathlib import Path

import numpy as np
import pytest

import calipers
import calipers.plot as P
from calipers import retrieval as R

PKG = Path(calipers.__file__).resolve().parent

_rng = np.random.default_rng(0)
_Y = np.array([0, 1] * 15)
_A = _rng.normal(size=30) + _Y
_B = _rng.normal(size=30) + 0.5 * _Y
_P = 1 / (1 + np.exp(-_A))


def _plot(fn):
    def call(**kw):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ax = fn(_Y, {"a": _A}, band=True, n_resamples=20, **kw)
        plt.close(ax.figure)
        return ax
    return call


# name -> a call with valid input that passes confidence_level through
CALLS = {
    "paired_bootstrap": lambda **kw: calipers.paired_bootstrap(
        "roc_auc", _Y, _A, _B, n_resamples=50, seed=0, **kw),
    "many_models_bootstrap": lambda **kw: calipers.many_models_bootstrap(
        "roc_auc", _Y, _A, _B, _A + _B, n_resamples=50, seed=0, **kw),
    "paired_unit_bootstrap": lambda **kw: calipers.paired_unit_bootstrap(
        _A, _B, n_resamples=50, seed=0, **kw),
    "delong_test": lambda **kw: calipers.delong_test(_Y, _A, _B, **kw),
    "roc_auc_confint": lambda **kw: calipers.roc_auc_confint(_Y, _A, **kw),
    "proportion_confint": lambda **kw: calipers.proportion_confint(7, 20, **kw),
    "accuracy_with_error": lambda **kw: calipers.accuracy_with_error(_Y, **kw),
    "off_policy_interval": lambda **kw: calipers.off_policy_interval(
        "ips", _P, np.full(30, 0.5), (_Y == 1).astype(float), n_resamples=50, seed=0, **kw),
    "bootstrap_interval": lambda **kw: calipers.bootstrap_interval(_A, 0.1, **kw),
    "match_elo": lambda **kw: calipers.match_elo([12, 30, 20], **kw),
    "bradley_terry_bootstrap": lambda **kw: calipers.bradley_terry_bootstrap(
        ["a", "b", "c", "a", "b", "c"] * 4, ["b", "c", "a", "c", "a", "b"] * 4,
        [1, 0, 1, 0, 1, 0.5] * 4, n_resamples=20, seed=0, **kw),
    "plot.roc_curves": _plot(P.roc_curves),
    "plot.pr_curves": _plot(P.pr_curves),
}


def _public_with_confidence_level():
    out = []
    for mod, prefix in ((calipers, ""), (R, "retrieval."), (P, "plot.")):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not callable(obj) or inspect.isclass(obj):
                continue
            if "confidence_level" in inspect.signature(obj).parameters:
                out.append(prefix + name)
    return sorted(out)


def test_every_function_with_confidence_level_is_listed():
    assert _public_with_confidence_level() == sorted(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("good", [0.9, np.float32(0.9), np.float64(0.9), np.array(0.9)],
                         ids=["float", "float32", "float64", "0-d array"])
def test_confidence_level_accepts_every_real_in_the_open_interval(name, good):
    CALLS[name](confidence_level=good)


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("bad", [0, 1, 1.0, 0.0, -0.5, math.nan, True, "0.95", None,
                                 np.array([0.9])],
                         ids=["0", "1", "1.0", "0.0", "negative", "nan", "True", "str", "None",
                              "1-d array"])
def test_confidence_level_refuses_the_same_values_everywhere(name, bad):
    with pytest.raises(ValueError, match="confidence_level must be a real number in"):
        CALLS[name](confidence_level=bad)


def test_the_rule_is_written_once():
    """No module but the input layer formats its own confidence_level error."""
    pattern = re.compile(r"confidence_level must")
    offenders = [p.relative_to(PKG).as_posix() for p in PKG.rglob("*.py")
                 if p.name != "_validation.py" and pattern.search(p.read_text())]
    assert offenders == []


# --------------------------------------------------------------------------
# the source check: option rules live in calipers._core.validation only
# --------------------------------------------------------------------------

def _option_copies():
    """Hand-written copies of the validation layer's rules outside it, as (file:line, what)."""
    import ast

    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel == "_core/validation.py" or rel.startswith("cli/"):
            continue
        text = path.read_text()
        for i, line in enumerate(text.splitlines(), 1):
            if "not booleans" in line and "raise" in line:
                found.append((f"{rel}:{i}", "'not booleans' check: use V.check_real_values"))
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.If):
                continue
            t = node.test
            if (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.NotIn)
                    and isinstance(t.left, ast.Name) and isinstance(t.comparators[0], ast.Tuple)
                    and all(isinstance(e, ast.Constant) for e in t.comparators[0].elts)
                    and any(isinstance(s, ast.Raise) for s in node.body)):
                found.append((f"{rel}:{node.lineno}", f"{t.left.id} not in (...): use V.choice"))
    return found


def test_option_rules_are_not_copied_outside_the_validation_layer():
    copies = _option_copies()
    assert not copies, "\n".join(f"{where}: {what}" for where, what in copies)


def test_the_source_check_finds_a_copy(tmp_path, monkeypatch):
    # the check can fail: a module with a hand-written option check is reported
    fake = tmp_path / "calipers"
    fake.mkdir()
    (fake / "_family.py").write_text(
        "def f(method):\n    if method not in ('a', 'b'):\n        raise ValueError('no')\n")
    monkeypatch.setattr(__import__(__name__), "PKG", fake)
    assert [w for _, w in _option_copies()] == ["method not in (...): use V.choice"]
