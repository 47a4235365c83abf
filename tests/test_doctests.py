"""Docstring examples of every calipers module run as tests."""

import doctest
import importlib
import pathlib
import pkgutil

import pytest

import calipers

MODULES = sorted(m.name for m in pkgutil.walk_packages(calipers.__path__, "calipers.")
                 if not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0


def test_doctests_exist():
    """The suite above must run examples, not pass vacuously."""
    total = 0
    for name in MODULES:
        finder = doctest.DocTestFinder()
        total += sum(len(t.examples) for t in finder.find(importlib.import_module(name)))
    assert total >= 10


def test_public_surface_is_complete():
    """Every public function of a family module is exported at top level (or in a namespace)."""
    exported = set(calipers.__all__)
    for name in MODULES:
        mod = importlib.import_module(name)
        short = name.rsplit(".", 1)[-1]
        if not short.startswith("_") or short in ("_backend", "_segments", "_errors", "_io"):
            continue
        for fn in getattr(mod, "__all__", []):
            assert fn in exported or _in_namespace(fn), f"{name}.{fn} is not exported"
    for fn in calipers.__all__:
        assert hasattr(calipers, fn)


def _in_namespace(fn):
    try:
        import calipers.retrieval as r
    except ImportError:
        return False
    return fn in getattr(r, "__all__", [])


def test_every_public_callable_has_a_docstring():
    import calipers.retrieval
    missing = [f"{ns.__name__}.{n}" for ns in (calipers, calipers.retrieval) for n in ns.__all__
               if callable(getattr(ns, n)) and not (getattr(ns, n).__doc__ or "").strip()]
    assert not missing, missing


DOC_PAGES = sorted((pathlib.Path(__file__).resolve().parents[1] / "docs").glob("*.md"))


def _page_test(page):
    """The page's ``>>>`` examples as one doctest; code fences end an example's output."""
    text = "\n".join("" if line.startswith("```") else line
                     for line in page.read_text().splitlines())
    return doctest.DocTestParser().get_doctest(text, {}, page.name, str(page), 0)


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: p.name)
def test_docs_page_examples(page):
    """``>>>`` examples in the docs pages run as written (imports included)."""
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    runner.run(_page_test(page))
    assert runner.summarize(verbose=False).failed == 0


def test_docs_page_examples_exist():
    assert sum(len(_page_test(p).examples) for p in DOC_PAGES) >= 10
