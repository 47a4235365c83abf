"""Every handed case is pinned by a test, and no test reads data from outside the repository.

A case is covered when a test file other than this one names its id (``H07``) as a word: test
names and bodies carry the id by convention. Ids that in-progress work owns are listed in
``PENDING`` with the owner, so the gap is visible here instead of hidden; an id in ``PENDING``
that a test already names XPASSes, which fails (strict), so the list only shrinks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import HANDED_CASES

TESTS = Path(__file__).resolve().parent
ALL_IDS = sorted(HANDED_CASES)

# id -> the work that will add its test (delete the line when the test lands).
PENDING = {
}


def _test_files():
    return [p for p in TESTS.rglob("*.py") if p.resolve() != Path(__file__).resolve()]


def _covered():
    ids = set()
    for p in _test_files():
        ids.update(re.findall(r"\bH\d\d\b", p.read_text()))
    return ids


def test_data_file_has_every_case_with_a_public_source():
    assert ALL_IDS == [f"H{i:02d}" for i in range(1, 43)]
    for cid, case in HANDED_CASES.items():
        assert case.get("source"), cid


@pytest.mark.parametrize("case_id", [
    pytest.param(cid, marks=pytest.mark.xfail(strict=True, reason=f"pending: {PENDING[cid]}"))
    if cid in PENDING else cid for cid in ALL_IDS])
def test_handed_case_has_a_test(case_id):
    # a PENDING id that gains a test XPASSes, which fails (strict): delete its PENDING line
    assert case_id in _covered(), f"no test names handed case {case_id}"


# The folder beside the checkout that holds the cases upstream; spelled in two parts so that
# this file, which looks for it, does not itself name it.
_OUTSIDE = "sha" + "red"
_OUTSIDE_RE = re.compile(rf"{_OUTSIDE}/|[\"']{_OUTSIDE}[\"']|/work/|parents\[2\]")


def test_no_test_reads_outside_the_repository():
    # every path a test opens lives under tests/ (tests/data/ for the cases)
    offenders = [str(p.relative_to(TESTS)) for p in _test_files()
                 if _OUTSIDE_RE.search(p.read_text())]
    assert not offenders, f"tests reading data outside the repository: {offenders}"


def _naming_case_ids(root, pattern):
    return sorted(str(p.relative_to(root)) for p in root.glob(pattern)
                  if re.search(r"\bH\d\d\b", p.read_text()))


def test_docs_cite_public_sources_not_case_ids():
    root = TESTS.parent
    assert not _naming_case_ids(root, "docs/*.md") + _naming_case_ids(root, "README.md")


def test_src_cites_public_sources_not_case_ids():
    assert not _naming_case_ids(TESTS.parent, "src/calipers/**/*.py")
