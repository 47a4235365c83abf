"""Line counts: how many lines of trec_eval 9.0.8's own expected outputs ``calipers trec``
reproduces exactly (measure, query, value at trec_eval's printed precision, order, runid).

The floors below may only go up: each measure group added to calipers raises them.
"""

from __future__ import annotations

import difflib

import pytest

from calipers.cli import main
from conftest import TREC_EVAL_DATA

D = TREC_EVAL_DATA  # trec_eval 9.0.8 test files, copied with their NIST notice

# expected output -> (qrels, run, trec_eval options), as in tests/data/trec_eval/README.md
CASES = {
    "out.test": ("qrels.test", "results.test", []),
    "out.test.aq": ("qrels.test", "results.test", ["-m", "all_trec", "-q"]),
    "out.test.aqc": ("qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c"]),
    "out.test.aql": ("qrels.rel_level", "results.test",
                     ["-m", "all_trec", "-m", "relstring.20", "-q", "-l", "2"]),
    "out.test.meas_params": ("qrels.test", "results.test", [
        "-q", "-m", "iprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3",
        "-m", "recall.20,2000", "-m", "Rprec_mult.5.0,0.2,0.35", "-m", "utility.2,-1,0,0",
        "-m", "11pt_avg..25,.5,.75", "-m", "ndcg.1=3,2=9,4=4.5", "-m", "ndcg_cut.10,20,23.4",
        "-m", "success.2,5,20"]),
}

# Lines reproduced at least (out of 30, 367, 276, 367, 88); raise as measures are added.
FLOOR = {
    "out.test": 30,
    "out.test.aq": 367,
    "out.test.aqc": 276,
    "out.test.aql": 367,
    "out.test.meas_params": 88,
}


def reproduced(capsys, name):
    """(lines of ``name`` that calipers prints identically and in the same order, total)."""
    qrels, run, opts = CASES[name]
    rc = main(["trec", str(D / qrels), str(D / run), "--no-progress"] + opts)
    out, _ = capsys.readouterr()
    ref = (D / name).read_text().splitlines()
    ours = out.splitlines() if rc == 0 else []
    sm = difflib.SequenceMatcher(a=ref, b=ours, autojunk=False)
    return sum(b.size for b in sm.get_matching_blocks()), len(ref)


@pytest.mark.parametrize("name", sorted(CASES))
def test_trec_eval_lines_reproduced(capsys, name):
    got, total = reproduced(capsys, name)
    assert total == {"out.test": 30, "out.test.aq": 367, "out.test.aqc": 276,
                     "out.test.aql": 367, "out.test.meas_params": 88}[name]
    assert got >= FLOOR[name], f"{name}: {got}/{total} lines, floor {FLOOR[name]}"
