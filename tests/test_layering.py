"""The layering rules of docs/architecture.md, checked on the import statements of src/calipers.

Every ``import`` / ``from ... import`` of every module (module level and inside functions) is read
with ``ast``; relative imports are resolved. A *node* is a subpackage (``calipers._core``,
``calipers._bootstrap``, ...) or a flat module (``calipers._survival``). The rules:

1. Nodes stand on levels (``LEVELS``, bottom up); a module imports nodes of its own level or
   lower ones only, the node graph has no cycle and at most ``MAX_FLOORS`` floors, and no import
   chain inside one subpackage is longer than ``MAX_CHAIN`` modules.
2. Across nodes only unprefixed names are imported or read (``from .x import _y`` and
   ``x._y`` on a module of another node are refused); inside a node anything goes.
3. ``calipers.cli`` uses the public API only (``calipers``, ``calipers.retrieval``,
   ``calipers.plot``) and its own modules.
4. ``_core`` and ``_kernels`` hold no metric names: none of the public metric functions is named
   there.

A module whose node is not in ``LEVELS`` fails: give it a level here and in docs/architecture.md.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "calipers"

# bottom (0) to top
LEVELS = {
    "calipers._core": 0,
    "calipers._kernels": 1,
    # metric families (flat modules and the two family packages); may use one another, no cycles
    "calipers._classification": 2, "calipers._probability": 2, "calipers._calibration": 2,
    "calipers._regression": 2, "calipers._language": 2, "calipers._selective": 2,
    "calipers._survival": 2, "calipers._conformal": 2, "calipers._offpolicy": 2,
    "calipers._slices": 2, "calipers._ranking": 2, "calipers.retrieval": 2,
    # resampling, streaming states and model comparison, on top of the families
    "calipers._bootstrap": 3, "calipers._streaming": 3, "calipers._compare": 3,
    # the public API
    "calipers": 4, "calipers.plot": 4, "calipers.adapters": 4, "calipers.dask": 4,
    "calipers.beam": 4,
    # the command line, on the public API only
    "calipers.cli": 5, "calipers.__main__": 5,
}
MAX_FLOORS = 10
MAX_CHAIN = 4
CLI_ALLOWED = {"calipers", "calipers.retrieval", "calipers.plot"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


FILES = {module_name(p): p for p in sorted(PKG.rglob("*.py"))}
PACKAGES = {m for m, p in FILES.items() if p.name == "__init__.py"}


def node(mod: str) -> str:
    """The subpackage directly under ``calipers`` that holds ``mod``, or ``mod`` itself."""
    parts = mod.split(".")
    if len(parts) >= 2 and ".".join(parts[:2]) in PACKAGES:
        return ".".join(parts[:2])
    return mod


def level(mod: str):
    return LEVELS.get(node(mod))


def _target(mod: str, imp: ast.ImportFrom) -> str:
    if not imp.level:
        return imp.module or ""
    base = mod.split(".") if mod in PACKAGES else mod.split(".")[:-1]
    base = base[:len(base) - (imp.level - 1)]
    return ".".join(base + ([imp.module] if imp.module else []))


@lru_cache(maxsize=None)
def _read(mod: str):
    return _scan(mod, FILES[mod].read_text())


def _scan(mod: str, text: str):
    """(modules imported, private names taken from other nodes) of module ``mod``'s source."""
    tree = ast.parse(text)
    found, private, aliases = set(), [], {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name.split(".")[0] == "calipers":
                    found.add(a.name)
                    if a.asname:
                        aliases[a.asname] = a.name
        elif isinstance(n, ast.ImportFrom):
            target = _target(mod, n)
            if target.split(".")[0] != "calipers":
                continue
            for a in n.names:
                sub = f"{target}.{a.name}"
                if sub in FILES:                       # "from . import xp as B": a module
                    found.add(sub)
                    aliases[a.asname or a.name] = sub
                else:
                    found.add(target)
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        private.append((target, a.name, n.lineno))
    for n in ast.walk(tree):
        if (isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                and n.value.id in aliases and n.attr.startswith("_")
                and not n.attr.startswith("__")):
            private.append((aliases[n.value.id], n.attr, n.lineno))
    found = {m if m in FILES else m.rpartition(".")[0] for m in found} - {mod}
    cross = sorted({(t, name, line) for t, name, line in private if node(t) != node(mod)})
    return frozenset(m for m in found if m in FILES or m == "calipers"), tuple(cross)


GRAPH = {m: _read(m)[0] for m in FILES}
NODE_GRAPH: dict[str, set[str]] = {}
for _m, _deps in GRAPH.items():
    NODE_GRAPH.setdefault(node(_m), set()).update(node(d) for d in _deps if node(d) != node(_m))


def _cycles(graph):
    """Vertices on a cycle (strongly connected components of size > 1)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), set(), [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _longest(graph, v, memo):
    """Nodes on the longest import chain that starts at ``v`` (``graph`` acyclic)."""
    if v not in memo:
        memo[v] = 1 + max((_longest(graph, w, memo) for w in graph.get(v, ()) if w in graph),
                          default=0)
    return memo[v]


def test_the_import_reader_sees_imports():
    # guards against a reader that finds nothing (a test that could not fail)
    assert "calipers._core.xp" in GRAPH["calipers._ranking.binary"]
    assert "calipers._kernels" in NODE_GRAPH["calipers._ranking"]
    assert "calipers._bootstrap" in NODE_GRAPH["calipers"]
    src = ("from .._core.xp import _secret\nfrom .._core import xp as B\nB._hidden\n"
           "from ._ranking import _inside_ok\nfrom .._core.xp import __all__\n")
    deps, cross = _scan("calipers._ranking.probe", src)
    assert "calipers._core.xp" in deps
    assert {name for _, name, _ in cross} == {"_secret", "_hidden"}


@pytest.mark.parametrize("mod", sorted(FILES))
def test_module_has_a_level(mod):
    assert level(mod) is not None, f"{mod}: add {node(mod)} to LEVELS and to docs/architecture.md"


def test_no_import_cycle_between_nodes():
    assert not _cycles(NODE_GRAPH), f"import cycle among {sorted(_cycles(NODE_GRAPH))}"


def test_no_import_cycle_between_modules():
    assert not _cycles(GRAPH), f"import cycle among {sorted(_cycles(GRAPH))}"


@pytest.mark.parametrize("mod", sorted(FILES))
def test_lower_levels_never_import_higher_ones(mod):
    mine = level(mod)
    higher = sorted(m for m in GRAPH[mod] if (level(m) or 0) > (mine or 0))
    assert not higher, f"{mod} (level {mine}) imports higher levels: {higher}"


def test_the_node_graph_has_at_most_ten_floors():
    memo: dict = {}
    floors = max(_longest(NODE_GRAPH, v, memo) for v in NODE_GRAPH)
    assert floors <= MAX_FLOORS, f"{floors} floors: {sorted(memo.items(), key=lambda kv: -kv[1])}"


@pytest.mark.parametrize("pkg", sorted(p for p in PACKAGES if p.count(".") == 1))
def test_chains_inside_a_package_are_short(pkg):
    inner = {m: {d for d in GRAPH[m] if node(d) == pkg and d != pkg}
             for m in FILES if node(m) == pkg and m != pkg}
    memo: dict = {}
    longest = max((_longest(inner, v, memo) for v in inner), default=0)
    assert longest <= MAX_CHAIN, f"{pkg}: a chain of {longest} modules ({memo})"


@pytest.mark.parametrize("mod", sorted(FILES))
def test_only_unprefixed_names_cross_nodes(mod):
    cross = _read(mod)[1]
    assert not cross, "private names from other nodes: " + ", ".join(
        f"{t}.{name} (line {line})" for t, name, line in cross)


@pytest.mark.parametrize("mod", sorted(
    m for m in FILES if m == "calipers.__main__" or m.startswith("calipers.cli")))
def test_cli_imports_public_names_only(mod):
    private = sorted(m for m in GRAPH[mod]
                     if m not in CLI_ALLOWED and not m.startswith("calipers.cli"))
    assert not private, f"{mod} imports private modules {private}"


def _public_metric_names():
    tree = ast.parse((PKG / "__init__.py").read_text())
    for n in tree.body:
        if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets):
            return {e.value for e in n.value.elts if e.value[:1].islower()}
    raise AssertionError("calipers.__all__ not found")


@pytest.mark.parametrize("pkg", ["calipers._core", "calipers._kernels"])
def test_ground_floors_name_no_metric(pkg):
    names = _public_metric_names()
    assert len(names) > 50
    found = []
    for m in sorted(FILES):
        if node(m) != pkg:
            continue
        tree = ast.parse(FILES[m].read_text())
        for n in ast.walk(tree):
            word = (n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute)
                    else n.value if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    else None)
            if word in names:
                found.append(f"{m}:{n.lineno} {word}")
    assert not found, f"{pkg} names metrics: {found}"
