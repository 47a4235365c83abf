"""The layering rule of docs/architecture.md, checked on the import statements of src/calipers.

Every ``import`` / ``from ... import`` of every module (module level and inside functions) is read
with ``ast``; relative imports are resolved. Three rules:

- no import cycles among calipers' modules;
- a module imports only modules of its own layer or lower ones (``LAYERS`` below, bottom up);
- ``calipers.cli`` uses the public API only (``calipers``, ``calipers.retrieval``) and its own
  modules.

A module that is not in ``LAYERS`` fails: give it a layer here and in docs/architecture.md.
Today's violations are strict xfails in ``KNOWN_VIOLATIONS``: the XPASS after a fix says to
delete the line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "calipers"

# bottom (0) to top; new modules named in the ownership plan are listed already
LAYERS = {
    "calipers._core.exceptions": 0,
    "calipers._core.results": 1,
    "calipers._core.xp": 2, "calipers._core.validation": 2, "calipers._core.compile": 2,
    "calipers._kernels.rankstats": 3, "calipers._kernels.segments": 3,
    # metric families (may use one another, without cycles)
    "calipers._ranking.binary": 4, "calipers._ranking.multiclass": 4, "calipers._classification": 4,
    "calipers._probability": 4, "calipers._calibration": 4, "calipers._regression": 4,
    "calipers._language": 4, "calipers.retrieval._measures": 4, "calipers.retrieval._trec": 4,
    "calipers._slices": 4, "calipers._streaming.states": 4, "calipers._streaming.histogram": 4,
    "calipers._survival": 4, "calipers._selective": 4, "calipers._conformal": 4,
    "calipers._offpolicy": 4, "calipers._ranking.multilabel": 4,
    # resampling and comparison of models, on top of the families
    "calipers._bootstrap.paired": 5, "calipers._compare.comparison": 5, "calipers._compare.units": 5,
    "calipers._bootstrap.resample": 5, "calipers._bootstrap.intervals": 5, "calipers._bootstrap.kernels": 5,
    "calipers._bootstrap.engine": 5, "calipers._compare.multiplicity": 5, "calipers._compare.power": 5,
    # the public API
    "calipers": 6, "calipers.retrieval": 6, "calipers.plot": 6,
    # the command line, on the public API only
    "calipers.__main__": 7, "calipers.cli": 7,
}
CLI_ALLOWED = {"calipers", "calipers.retrieval", "calipers.plot"}

# (rule, module) -> why it is violated today. Delete a line when its test XPASSes.
KNOWN_VIOLATIONS = {
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


FILES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def layer(mod: str):
    while mod:
        if mod in LAYERS:
            return LAYERS[mod]
        mod = mod.rpartition(".")[0]     # calipers.cli.trec -> calipers.cli
    return None


def _resolve(mod: str, node: ast.ImportFrom) -> list[str]:
    is_pkg = FILES[mod].name == "__init__.py"
    if node.level:
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        out.append(sub if sub in FILES else target)   # "from . import _backend" is a module
    return out


def imports(mod: str) -> set[str]:
    """calipers modules that ``mod`` imports anywhere in its body."""
    tree = ast.parse(FILES[mod].read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.update(_resolve(mod, node))
    found = {m for m in found if m == "calipers" or m.startswith("calipers.")}
    # "import calipers.x.y" names a module; keep the deepest one that exists
    return {m if m in FILES else m.rpartition(".")[0] for m in found} - {mod}


GRAPH = {m: imports(m) for m in FILES}


def _cycles():
    """Modules on an import cycle (strongly connected components of size > 1)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), set(), [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in GRAPH.get(v, ()):
            if w not in FILES:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.update(comp)

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return out


CYCLIC = _cycles()


def _params(rule, modules):
    return [pytest.param(m, id=m, marks=[pytest.mark.xfail(
        strict=True, reason=KNOWN_VIOLATIONS[(rule, m)])] if (rule, m) in KNOWN_VIOLATIONS
        else []) for m in modules]


def test_the_import_reader_sees_imports():
    # guards against a reader that finds nothing (a test that could not fail)
    assert "calipers._core.xp" in GRAPH["calipers._ranking.binary"]
    assert "calipers._ranking.binary" in GRAPH["calipers"]


@pytest.mark.parametrize("mod", sorted(FILES))
def test_module_has_a_layer(mod):
    assert layer(mod) is not None, f"{mod}: add it to LAYERS and to docs/architecture.md"


@pytest.mark.parametrize("mod", _params("cycle", sorted(FILES)))
def test_no_import_cycle(mod):
    assert mod not in CYCLIC, (
        f"{mod} is on an import cycle with "
        f"{sorted(m for m in GRAPH[mod] if m in CYCLIC)}")


@pytest.mark.parametrize("mod", _params("layer", sorted(FILES)))
def test_lower_layers_never_import_higher_ones(mod):
    mine = layer(mod)
    higher = sorted(m for m in GRAPH[mod]
                    if layer(m) is not None and mine is not None and layer(m) > mine)
    assert not higher, f"{mod} (layer {mine}) imports higher layers: {higher}"


@pytest.mark.parametrize("mod", _params("cli_public", sorted(
    m for m in FILES if m == "calipers.__main__" or m.startswith("calipers.cli"))))
def test_cli_imports_public_names_only(mod):
    private = sorted(m for m in GRAPH[mod]
                     if m not in CLI_ALLOWED and not m.startswith("calipers.cli"))
    assert not private, f"{mod} imports private modules {private}"


def test_known_violations_name_real_modules():
    assert {m for _, m in KNOWN_VIOLATIONS} <= set(FILES)
