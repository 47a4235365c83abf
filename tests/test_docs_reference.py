"""Reference pages read as reference: no commit hashes, machine names or outside documents.

Measurements, with the machine and the code version they came from, live in one place: the
dated ``## Results`` section at the end of ``docs/benchmarks.md``. Every other part of
``docs/*.md`` and ``README.md`` states conventions, definitions and behaviour, so it must not
name a commit (a run of 7 to 40 hex digits holding both a digit and a letter), a CPU model
(``lscpu`` model names such as EPYC or Xeon, or a "vCPU" count), a document that is not in the
repository ("SPEC", "design card"), or carry lab-notebook phrases about runs and sessions.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
RESULTS_HEADING = re.compile(r"^## Results\b.*$", re.MULTILINE)

# Each rule: (what it catches, pattern). Patterns run on the page text outside fenced code
# blocks; a hash in a code block would be an example's data, not a reference to a commit.
RULES = [
    ("commit hash", re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")),
    ("CPU model name", re.compile(r"\b(EPYC|Xeon|Ryzen|Threadripper|Opteron|v-?CPUs?)\b",
                                  re.IGNORECASE)),
    # Upper-case SPEC names the outside document; "spec" in lower case is an ordinary word
    # (PartitionSpec, in_specs, "the array API spec").
    ("document not in the repository", re.compile(r"\bSPEC(\.md)?\b|\b[Dd]esign[ -][Cc]ard\b")),
    ("work history", re.compile(r"\b(this|previous|last) (round|session|sandbox)\b|"
                                r"\bslow(er)? spells?\b|\bthis sandbox\b", re.IGNORECASE)),
]
FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)


def reference_text(path):
    """The page without fenced code blocks and, for docs/benchmarks.md, without its results."""
    text = path.read_text(encoding="utf-8")
    if path.name == "benchmarks.md" and path.parent.name == "docs":
        m = RESULTS_HEADING.search(text)
        if m is not None:
            text = text[:m.start()]
    # Keep line numbers: a code block becomes as many empty lines.
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def offences(text):
    """(line number, rule, matched text) for every rule broken in ``text``."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for what, pattern in RULES:
            for m in pattern.finditer(line):
                found.append((lineno, what, m.group(0)))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_reads_as_reference(page):
    bad = offences(reference_text(page))
    assert not bad, "\n".join(f"{page.relative_to(ROOT)}:{n}: {what}: {s!r}"
                              for n, what, s in bad)


def test_benchmarks_page_ends_with_one_dated_results_section():
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    headings = RESULTS_HEADING.findall(text)
    assert len(headings) == 1, headings
    tail = text[RESULTS_HEADING.search(text).start():]
    assert re.search(r"\b20\d\d-\d\d-\d\d\b", tail), "the results section names the date of its runs"
    # Nothing after the results section but its own subsections.
    assert not re.search(r"^## ", tail.split("\n", 1)[1], re.MULTILINE)


@pytest.mark.parametrize("text, rule", [
    ("All figures at commit 4a985a9 on the machine.", "commit hash"),
    ("see deadbeef1 for the change", "commit hash"),
    ('`lscpu` model name "AMD EPYC", 2 cores', "CPU model name"),
    ("a 2-vCPU Intel Xeon", "CPU model name"),
    ("the targets of the design card", "document not in the repository"),
    ("as SPEC.md requires", "document not in the repository"),
    ("The machine was in one of its slow spells", "work history"),
    ("before this round's changes", "work history"),
])
def test_rules_catch_the_notebook_text(text, rule):
    """Each rule can fail: it flags a sentence of the kind it exists to keep out."""
    assert rule in {what for _, what, _ in offences(text)}


@pytest.mark.parametrize("text", [
    "n = 10000000 scores, seed 1234567, 0.9608 NDCG",   # numbers are not hashes
    "PartitionSpec as P; in_specs=(P('data'),)",          # spec as an ordinary word
    "an example id such as 00000001",                     # digits only
    "a facade over the defaced values",                   # letters only
])
def test_rules_leave_reference_text_alone(text):
    assert offences(text) == []


def test_code_blocks_and_the_results_section_are_exempt(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "benchmarks.md"
    page.write_text("# B\n\nReference.\n\n```text\nrun abc1234\n```\n\n"
                    "## Results\n\n2026-12-02, AMD EPYC, commit 4a985a9.\n", encoding="utf-8")
    assert offences(reference_text(page)) == []
    other = docs / "ranking.md"
    other.write_text("# R\n\n## Results\n\nAMD EPYC\n", encoding="utf-8")
    assert [what for _, what, _ in offences(reference_text(other))] == ["CPU model name"]
