"""TREC files and ``calipers trec``: trec_eval 9.0.8's own test outputs reproduced."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from calipers import _trec as T
from calipers.cli import main
from calipers.cli.trec import paired_query_stats, parse_measures
from conftest import TREC_EVAL_DATA

PEERS = TREC_EVAL_DATA  # trec_eval 9.0.8 test files, copied with their NIST notice
MEASURES = ["num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank", "P", "recall",
            "ndcg", "ndcg_cut"]
PATTERN = re.compile(r"^(num_ret|num_rel|num_rel_ret|map|Rprec|recip_rank|P_\d+|recall_\d+|"
                     r"ndcg|ndcg_cut_\d+)\s")


def _need_peers():
    # the files are part of the repository: missing means a broken checkout, not a skip
    assert (PEERS / "qrels.test").exists(), PEERS


def _run_cli(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("expected,qrels,run,opts", [
    ("out.test.aq", "qrels.test", "results.test", []),
    ("out.test.aql", "qrels.rel_level", "results.test", ["-l", "2"]),
    ("out.test.aqc", "qrels.test", "results.trunc", ["-c"]),
])
def test_cli_reproduces_trec_eval_908(capsys, expected, qrels, run, opts):
    _need_peers()
    argv = ["trec", str(PEERS / qrels), str(PEERS / run), "-q", "--no-progress"] + opts
    for m in MEASURES:
        argv += ["-m", m]
    rc, out, _ = _run_cli(capsys, argv)
    assert rc == 0
    ref = [ln for ln in (PEERS / expected).read_text().splitlines() if PATTERN.match(ln)]
    ours = out.splitlines()
    assert len(ref) > 100
    # Same lines in the same order: measure, query, value at trec_eval's 4 decimals.
    assert ours == ref


def test_cli_json_and_runid(capsys):
    _need_peers()
    base = ["trec", str(PEERS / "qrels.test"), str(PEERS / "results.test"), "--no-progress"]
    rc, out, _ = _run_cli(capsys, base + ["-m", "map", "-m", "P.5,10", "-m", "runid",
                                          "-m", "num_q", "-q", "--format", "json"])
    assert rc == 0
    doc = json.loads(out)
    assert doc["runid"] == "STANDARD" and doc["num_q"] == 3
    assert list(doc["measures"]) == ["map", "P_5", "P_10"]
    assert round(doc["measures"]["map"]["all"], 4) == 0.1785
    assert round(doc["measures"]["map"]["per_query"]["302"], 4) == 0.4175
    rc, out, _ = _run_cli(capsys, base + ["-m", "runid", "-m", "num_q", "-m", "map"])
    assert out.splitlines() == ["runid                 \tall\tSTANDARD",
                                "num_q                 \tall\t3",
                                "map                   \tall\t0.1785"]


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_readers_are_robust(tmp_path):
    qrels = _write(tmp_path, "q", "# judgements\n\n 1 0 a 2 \n1\t0\tb\t-1\n1 0 c 0\n2 0 x 1\n"
                                  "9 0 z 1\n")
    run = _write(tmp_path, "r", "1 Q0 b 1 0.5 tagA extra junk\n\n# comment\n"
                                "1   Q0 d 2 0.5 tagA\n1 Q0 a 3 0.25 tagA\n"
                                "5 Q0 a 1 9.0 tagA\n2 Q0 y 1 1.0 tagA\n")
    Q = T.read_qrels(qrels)
    Rn = T.read_run(run)
    assert Q.qid.tolist() == ["1", "1", "1", "2", "9"] and Q.rel.tolist() == [2, -1, 0, 1, 1]
    assert Rn.tag == "tagA" and Rn.score.tolist() == [0.5, 0.5, 0.25, 9.0, 1.0]
    ta = T.trec_arrays(Q, Rn)
    # query 5 (run only) ignored, query 9 (qrels only) left out
    assert ta.queries.tolist() == ["1", "2"]
    tc = T.trec_arrays(Q, Rn, complete_qrels=True)
    assert tc.queries.tolist() == ["1", "2", "9"] and tc.in_run.tolist() == [True, True, False]
    rows = sorted(zip(ta.query_id.tolist(), ta.y_true.tolist(), ta.retrieved.tolist()))
    # query 1: b (-1, retrieved), d (unjudged 0, retrieved), a (2, retrieved), c (0, judged only)
    assert rows == [(0, -1, True), (0, 0, False), (0, 0, True), (0, 2, True), (1, 0, True),
                    (1, 1, False)]
    assert ta.y_score.dtype == np.float32


@pytest.mark.parametrize("text,kind,msg", [
    ("1 0 a 1\n1 0 a 0\n", "qrels", r"line 2: duplicate judgement for query 1 document a "
                                    r"\(first on line 1\)"),
    ("1 0 a\n", "qrels", r"line 1: expected 4 columns"),
    ("1 0 a high\n", "qrels", r"line 1, column 4: relevance must be an integer, got 'high'"),
    ("1 Q0 a 1 0.5 t\n\n1 Q0 a 2 0.4 t\n", "run",
     r"line 3: duplicate document for query 1 document a \(first on line 1\)"),
    ("1 Q0 a 1 0.5\n", "run", r"line 1: expected at least 6 columns"),
    ("1 Q0 a 1 big t\n", "run", r"line 1, column 5: score must be a number, got 'big'"),
    ("1 Q0 a 1 nan t\n", "run", r"line 1, column 5: score must be finite"),
])
def test_reader_errors_name_the_line(tmp_path, text, kind, msg):
    p = _write(tmp_path, "f", text)
    reader = T.read_qrels if kind == "qrels" else T.read_run
    with pytest.raises(T.TrecFormatError, match=re.escape(p) + ", " + msg):
        reader(p)


def test_cli_errors_exit_2_with_one_line(tmp_path, capsys):
    q = _write(tmp_path, "q", "1 0 a 1\n")
    bad = _write(tmp_path, "r", "1 Q0 a 1 0.5 t\n1 Q0 a 2 0.4 t\n")
    rc, out, err = _run_cli(capsys, ["trec", q, bad, "--no-progress"])
    assert rc == 2 and out == ""
    assert err.strip().count("\n") == 0 and "line 2: duplicate document" in err
    rc, _, err = _run_cli(capsys, ["trec", q, str(tmp_path / "missing"), "--no-progress"])
    assert rc == 2 and "missing: cannot read" in err
    ok = _write(tmp_path, "ok", "1 Q0 a 1 0.5 t\n")
    for m, text in [("bogus", "unknown measure 'bogus'"), ("P.x", "cut-offs must be positive"),
                    ("P.0", "cut-offs must be positive"), ("map.5", "takes no parameters")]:
        rc, _, err = _run_cli(capsys, ["trec", q, ok, "-m", m, "--no-progress"])
        assert rc == 2 and text in err
    rc, _, err = _run_cli(capsys, ["trec", q, ok, ok, "--n-resamples", "0", "--no-progress"])
    assert rc == 2 and "--n-resamples" in err


def test_parse_measures_order_and_defaults():
    assert parse_measures(["ndcg_cut.10", "map", "P.20,5"]) == [
        ("map", None), ("P", 5), ("P", 20), ("ndcg_cut", 10)]
    allm = parse_measures(None)
    assert ("P", 1000) in allm and ("runid", None) in allm and len(allm) == 9 + 3 * 9


def test_average_ties_option(tmp_path, capsys):
    q = _write(tmp_path, "q", "1 0 a 1\n1 0 b 0\n")
    r = _write(tmp_path, "r", "1 Q0 a 1 0.5 t\n1 Q0 b 2 0.5 t\n")
    _, out, _ = _run_cli(capsys, ["trec", q, r, "-m", "recip_rank", "--no-progress"])
    assert out.split()[-1] == "0.5000"            # b ranks first (docno descending)
    _, out, _ = _run_cli(capsys, ["trec", q, r, "-m", "recip_rank", "--ties", "average",
                                  "--no-progress"])
    assert out.split()[-1] == "0.7500"            # (1 + 1/2) / 2


def test_compare_two_runs(capsys):
    _need_peers()
    base = ["trec", str(PEERS / "qrels.test"), str(PEERS / "results.test")]
    rc, out, _ = _run_cli(capsys, base + [str(PEERS / "results.test"), "-m", "map",
                                          "--format", "json", "--n-resamples", "500",
                                          "--no-progress", "-q"])
    doc = json.loads(out)["measures"]["map"]
    assert rc == 0 and doc["difference"] == 0.0 and doc["p_randomization"] == 1.0
    assert doc["ci_low"] == doc["ci_high"] == 0.0
    assert set(doc["per_query_difference"]) == {"301", "302", "303"}
    rc, out, _ = _run_cli(capsys, base + [str(PEERS / "results.trunc"), "-m", "map",
                                          "-m", "ndcg_cut.10", "--n-resamples", "500",
                                          "--no-progress"])
    lines = out.splitlines()
    assert rc == 0 and lines[0].startswith("# A = STANDARD") and len(lines) == 4
    name, a, b, d = lines[2].split("\t")[:4]
    # Query 302 is missing from results.trunc: it scores 0 there (same query set).
    assert name.strip() == "map" and a.strip() == "0.1785" and b.strip() == "0.1016"
    assert abs(float(d) - (0.1785 - 0.1016)) < 2e-4


def test_paired_query_stats():
    d = np.linspace(0.5, 1.5, 20)
    st = paired_query_stats(d, np.zeros(20), n_resamples=2000, seed=1)
    assert abs(st["difference"] - 1.0) < 1e-12
    assert 0.8 < st["ci_low"] < 1.0 < st["ci_high"] < 1.2
    assert st["p_randomization"] == 1 / 2001 and st["prob_a_greater"] == 1.0
    again = paired_query_stats(d, np.zeros(20), n_resamples=2000, seed=1)
    assert again == st
    # 6 of the 16 sign patterns reach |mean| of (0.4, 0.1, -0.2, 0.25): exact p = 0.375
    null = paired_query_stats(np.array([0.4, 0.1, -0.2, 0.25]), np.zeros(4), n_resamples=2000)
    assert 0.33 < null["p_randomization"] < 0.42
