"""TREC files and ``calipers trec``: trec_eval 9.0.8's own test outputs reproduced."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from calipers.retrieval import _encode, _evaluate, _io, _join, _values
from calipers.retrieval._paths import _Paths
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
    Q = _io.read_qrels(qrels)
    Rn = _io.read_run(run)
    assert Q.qid.tolist() == ["1", "1", "1", "2", "9"] and Q.rel.tolist() == [2, -1, 0, 1, 1]
    assert Rn.tag == "tagA" and Rn.score.tolist() == [0.5, 0.5, 0.25, 9.0, 1.0]
    ta = _join.trec_arrays(Q, Rn)
    # query 5 (run only) ignored, query 9 (qrels only) left out
    assert ta.queries.tolist() == ["1", "2"]
    tc = _join.trec_arrays(Q, Rn, complete_qrels=True)
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
    reader = _io.read_qrels if kind == "qrels" else _io.read_run
    with pytest.raises(_io.TrecFormatError, match=re.escape(p) + ", " + msg):
        reader(p)


def test_readers_report_progress_to_a_callable_with_the_collector_on(tmp_path):
    # 250,000 lines (ASCII: characters are bytes): a report after lines 100,000 and
    # 200,000 with the characters read so far, then (size, size); the cyclic garbage
    # collector stays on while the file is read (the reader changes no process state).
    import gc
    n = 250_000
    lines = [f"q{i // 1000} 0 d{i} {i % 3}\n" for i in range(n)]
    p = _write(tmp_path, "q", "".join(lines))
    size = len("".join(lines))
    calls = []

    def report(done, total):
        calls.append((done, total, gc.isenabled()))

    qr = _io.read_qrels(p, progress=report)
    want = [(sum(map(len, lines[:k])), size, True) for k in (100_000, 200_000)]
    assert calls == want + [(size, size, True)]
    assert qr.rel.tolist() == [i % 3 for i in range(n)] and qr.docno[-1] == f"d{n - 1}"
    runs = [f"q0 Q0 d{i} {i + 1} 0.5 tag\n" for i in range(5)]
    calls.clear()
    rn = _io.read_run(_write(tmp_path, "r", "".join(runs)), progress=report)
    assert calls == [(len("".join(runs)),) * 2 + (True,)] and rn.tag == "tag"
    for quiet in (False, True, None):
        assert _io.read_qrels(p, progress=quiet).rel.shape == (n,)
    with pytest.raises(ValueError, match="progress must be a callable"):
        _io.read_run(p, progress="bar")


def test_retrieval_imports_no_cli_extra_and_leaves_the_collector_alone(tmp_path):
    # Library code imports no CLI extra (tqdm) and changes no process-wide state (the
    # garbage collector), even when asked for progress.
    import ast
    import pathlib
    import subprocess
    import sys

    import calipers.retrieval
    for f in pathlib.Path(calipers.retrieval.__file__).parent.glob("*.py"):
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) \
                    else [node.module or ""]
                assert not any(m.split(".")[0] in ("tqdm", "gc") for m in mods), (f, mods)
    q = _write(tmp_path, "q", "1 0 a 1\n")
    r = _write(tmp_path, "r", "1 Q0 a 1 0.5 t\n")
    code = ("import gc, sys\nimport calipers.retrieval as R\n"
            f"R.evaluate(R.read_qrels({q!r}, progress=True), R.read_run({r!r}, progress=True))\n"
            "assert gc.isenabled() and 'tqdm' not in sys.modules\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr


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
    # all_trec: trec_eval 9.0.8's 95 printed names (out.test.aq)
    assert ("P", 1000) in allm and ("runid", None) in allm and len(allm) == 95
    assert parse_measures(["relstring.20", "ndcg.1=3,2=9", "iprec_at_recall..5,.1"]) == [
        ("iprec_at_recall", 0.1), ("iprec_at_recall", 0.5), ("relstring", "20"),
        ("ndcg", "1=3,2=9")]
    assert parse_measures(["ndcg_cut.10,20,23.4"]) == [
        ("ndcg_cut", 10), ("ndcg_cut", 20), ("ndcg_cut", 23)]
    assert [f for f, _ in parse_measures(["official"])] == [
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
        "bpref", "recip_rank"] + ["iprec_at_recall"] * 11 + ["P"] * 9


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
    # 3 queries: exact randomisation test, no bootstrap interval (fewer than 10 units)
    assert doc["p_exact"] and doc["ci_low"] is None and doc["ci_high"] is None
    assert set(doc["per_query_difference"]) == {"301", "302", "303"}
    rc, out, _ = _run_cli(capsys, base + [str(PEERS / "results.trunc"), "-m", "map",
                                          "-m", "ndcg_cut.10", "--n-resamples", "500",
                                          "--no-progress"])
    lines = out.splitlines()
    assert rc == 0 and lines[0].startswith("# A = STANDARD") and len(lines) == 5
    assert "exact over 2^3 sign patterns" in lines[0] and "no bootstrap interval" in lines[1]
    name, a, b, d = lines[3].split("\t")[:4]
    # Query 302 is missing from results.trunc: it scores 0 there (same query set).
    assert name.strip() == "map" and a.strip() == "0.1785" and b.strip() == "0.1016"
    assert abs(float(d) - (0.1785 - 0.1016)) < 2e-4


def test_paired_query_stats():
    d = np.linspace(0.5, 1.5, 25)
    st = paired_query_stats(d, np.zeros(25), n_resamples=2000, seed=1)
    assert abs(st["difference"] - 1.0) < 1e-12
    assert 0.8 < st["ci_low"] < 1.0 < st["ci_high"] < 1.2
    assert st["p_randomization"] == 1 / 2001 and st["prob_a_greater"] == 1.0
    assert not st["p_exact"]
    again = paired_query_stats(d, np.zeros(25), n_resamples=2000, seed=1)
    assert again == st
    # 6 of the 16 sign patterns reach |mean| of (0.4, 0.1, -0.2, 0.25): exact p = 0.375
    null = paired_query_stats(np.array([0.4, 0.1, -0.2, 0.25]), np.zeros(4), n_resamples=2000)
    assert null["p_randomization"] == 0.375 and null["p_exact"] and null["ci_low"] is None


def test_compare_calls_the_library_tests(tmp_path, capsys):
    # 12 queries: bootstrap interval given, randomisation test exact (n <= 20)
    rng = np.random.default_rng(4)
    qrels = "".join(f"{q} 0 d{j} {int(rng.integers(0, 3))}\n" for q in range(12)
                    for j in range(6))
    runs = ["".join(f"{q} Q0 d{j} 1 {rng.integers(0, 9) / 4} t{i}\n" for q in range(12)
                    for j in range(6)) for i in range(2)]
    q = _write(tmp_path, "q", qrels)
    a, b = _write(tmp_path, "a", runs[0]), _write(tmp_path, "b", runs[1])
    rc, out, _ = _run_cli(capsys, ["trec", q, a, b, "-m", "map", "--format", "json",
                                   "--n-resamples", "300", "--seed", "5", "--no-progress"])
    doc = json.loads(out)["measures"]["map"]
    import calipers
    from calipers import retrieval as R
    va = R.evaluate(q, a, "map").values["map"]
    vb = R.evaluate(q, b, "map").values["map"]
    boot = calipers.paired_unit_bootstrap(va, vb, n_resamples=300, seed=5)
    perm = calipers.paired_permutation_test(va, vb)
    assert rc == 0 and doc["p_exact"] and doc["p_randomization"] == perm.pvalue
    assert (doc["ci_low"], doc["ci_high"]) == (boot.confidence_interval.low,
                                               boot.confidence_interval.high)
    assert doc["prob_a_greater"] == boot.prob_a_greater


# --------------------------------------------------------------------------
# calipers.retrieval.evaluate: the library entry point the CLI prints
# --------------------------------------------------------------------------

def _random_trec(seed, n_q=6, n_docs=12):
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(n_q):
        qid = f"q{q}"
        docs = [f"d{j}" for j in range(n_docs)]
        judged = rng.choice(docs, size=rng.integers(1, n_docs), replace=False)
        # query q0 has no relevant document (trec_eval scores it 0)
        qrels[qid] = {d: int(0 if q == 0 else rng.integers(-1, 4)) for d in judged}
        ret = rng.choice(docs, size=rng.integers(1, n_docs), replace=False)
        # quarter steps: exact in float32 and float64, with many score ties
        run[qid] = {d: float(rng.integers(0, 5)) / 4 for d in ret}
    return qrels, run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_evaluate_matches_pytrec_eval(seed):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from calipers import retrieval as R
    qrels, run = _random_trec(seed)
    names = {"map": "map", "Rprec": "Rprec", "recip_rank": "recip_rank", "ndcg": "ndcg",
             "P_5": "P_5", "P_10": "P_10", "recall_5": "recall_5", "ndcg_cut_10": "ndcg_cut_10",
             "num_rel": "num_rel", "num_ret": "num_ret", "num_rel_ret": "num_rel_ret"}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"map", "Rprec", "recip_rank", "ndcg", "P",
                                                "recall", "ndcg_cut", "num_rel", "num_ret",
                                                "num_rel_ret"})
    ref = ev.evaluate(run)
    res = R.evaluate(qrels, run, ["map", "Rprec", "recip_rank", "ndcg", "P.5,10", "recall.5",
                                  "ndcg_cut.10", "num_rel", "num_ret", "num_rel_ret"])
    assert res.query_ids.tolist() == sorted(ref)
    for ours, theirs in names.items():
        want = [ref[q][theirs] for q in res.query_ids]
        np.testing.assert_allclose(res.values[ours], want, rtol=1e-12, atol=1e-12,
                                   err_msg=ours)
        assert res.mean[ours] == pytest.approx(np.mean(want), rel=1e-12, abs=1e-15)


def test_evaluate_inputs_agree_and_result_is_a_pytree(tmp_path):
    from calipers import retrieval as R
    qrels, run = _random_trec(5)
    q_rows = [(q, d, r) for q, docs in qrels.items() for d, r in docs.items()]
    r_rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    qp = _write(tmp_path, "qrels", "".join(f"{q} 0 {d} {r}\n" for q, d, r in q_rows))
    rp = _write(tmp_path, "run", "".join(f"{q} Q0 {d} 1 {s} tag\n" for q, d, s in r_rows))
    arrays = (tuple(np.array(c) for c in zip(*q_rows)), tuple(np.array(c) for c in zip(*r_rows)))
    a = R.evaluate(qrels, run, "all_trec")
    for qq, rr in [(qp, rp), (R.read_qrels(qp), R.read_run(rp)), arrays]:
        b = R.evaluate(qq, rr, "all_trec")
        assert b.measures == a.measures and list(b.values) == list(a.values)
        for name in a.values:
            np.testing.assert_array_equal(b.values[name], a.values[name])
    assert a.measures[:2] == ("runid", "num_q") and "P_1000" in a.values
    assert R.evaluate(qp, rp, "map").run_id == "tag"
    jax = pytest.importorskip("jax")
    leaves = jax.tree_util.tree_leaves(R.evaluate(qrels, run, ["map", "P.5"]))
    assert len(leaves) == 6   # 2 values, 2 means, query_ids, in_run
    # -c: every query of the qrels; those without run rows score 0
    qrels["extra"] = {"x": 1}
    c = R.evaluate(qrels, run, "map", complete_qrels=True)
    assert c.query_ids.tolist()[0] == "extra" and c.values["map"][0] == 0.0
    assert not c.in_run[0] and c.in_run[1:].all()


@pytest.mark.parametrize("bad,msg", [
    (dict(measures="bogus"), "unknown measure 'bogus'"),
    (dict(measures="P.0"), "cut-offs must be positive"),
    (dict(measures="map.3"), "takes no parameters"),
    (dict(ties="first"), "ties must be"),
    (dict(qrels=({"1": {"a": 0.5}})), "relevance must be integers"),
    (dict(run=(["1", "1"], ["a", "a"], [0.2, 0.1])), "duplicate document"),
    (dict(run=([1, 1], [7, 7], [0.2, 0.1])), "run, line 2: duplicate document for query 1 "
                                            "document 7 (first on line 1)"),
    (dict(qrels=(["1", "2", "1"], ["a", "a", "a"], [1, 0, 0])),
     "qrels, line 3: duplicate judgement for query 1 document a (first on line 1)"),
    (dict(run=(["1"], ["a"], [np.nan])), "scores must be finite"),
    (dict(run=(["1"], ["a"])), "three flat arrays"),
])
def test_evaluate_errors(bad, msg):
    from calipers import retrieval as R
    kw = dict(qrels={"1": {"a": 1}}, run={"1": {"a": 0.5}}, measures="map")
    kw.update(bad)
    with pytest.raises(ValueError, match=re.escape(msg)):
        R.evaluate(kw.pop("qrels"), kw.pop("run"), **kw)


def test_H06_evaluate_on_pytrec_eval_dicts():
    # Handed case H06 (usnistgov/trec_eval#22, pytrec_eval#56): tied run scores are broken
    # by docno descending (c, b, a); averaged ties give the expectation over orderings.
    from calipers import retrieval as R
    qrels = {"q1": {"doc_b": 2, "doc_a": 1}}
    run = {"q1": {"doc_a": 1.0, "doc_b": 1.0, "doc_c": 1.0}}
    r = R.evaluate(qrels, run, ["ndcg", "map"])
    assert r.values["ndcg"][0] == pytest.approx(0.66967181649423, abs=1e-12)
    assert r.values["map"][0] == pytest.approx(7 / 12, abs=1e-15)
    assert r.mean["map"] == pytest.approx(7 / 12, abs=1e-15)
    avg = R.evaluate(qrels, run, "ndcg", ties="average")
    assert avg.values["ndcg"][0] == pytest.approx(0.809953, abs=1e-6)


@pytest.mark.parametrize("seed,level", [(0, 1), (1, 2), (2, 1), (3, 2)])
def test_all_trec_matches_pytrec_eval(seed, level):
    # Every all_trec measure per query against trec_eval 9.0.8 (pytrec_eval) on random
    # qrels with levels -1..3 (negative: judged "unjudged in the pool") and tied scores.
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from calipers import retrieval as R
    qrels, run = _random_trec(seed, n_q=8, n_docs=15)
    ref = pytrec_eval.RelevanceEvaluator(qrels, pytrec_eval.supported_measures,
                                         relevance_level=level).evaluate(run)
    res = R.evaluate(qrels, run, "all_trec", relevance_level=level)
    qs = list(res.query_ids)
    assert sorted(ref) == qs
    checked = 0
    for name, v in res.values.items():
        if name == "relstring":
            continue
        want = np.array([ref[q][name] for q in qs])
        if name.startswith("gm_"):
            # pytrec_eval keeps log(max(v, 1e-5)) per query; the summary is exp(mean)
            np.testing.assert_allclose(np.log(np.maximum(v, 1e-5)), want, rtol=1e-12)
            assert res.mean[name] == pytest.approx(
                pytrec_eval.compute_aggregated_measure(name, list(want)), rel=1e-12)
        else:
            np.testing.assert_allclose(v, want, rtol=1e-12, atol=1e-12, err_msg=name)
        checked += 1
    assert checked == 95 - 3   # all but runid, num_q and relstring


def test_relstring_and_defaults_of_the_cli(capsys):
    from calipers import retrieval as R
    qrels = {"1": {"a": 1, "b": 0, "c": -1, "d": 12}}
    run = {"1": {"a": 0.9, "b": 0.8, "c": 0.7, "x": 0.6, "d": 0.5}}
    res = R.evaluate(qrels, run, ["relstring", "relstring.3"])
    assert res.measures == ("relstring_3",) and res.values["relstring_3"][0] == "10."
    assert R.evaluate(qrels, run, "relstring").values["relstring"][0] == "10.->"
    assert "relstring" not in R.evaluate(qrels, run, "relstring").mean
    # trec_eval's default set when no -m is given
    _need_peers()
    rc, out, _ = _run_cli(capsys, ["trec", str(PEERS / "qrels.test"),
                                   str(PEERS / "results.test"), "--no-progress"])
    assert rc == 0 and out == (PEERS / "out.test").read_text()


def test_run_sharing_no_query_with_the_qrels_is_an_error(tmp_path, capsys):
    from calipers import retrieval as R
    with pytest.raises(ValueError, match="no query of the run appears in the qrels"):
        R.evaluate({"1": {"a": 1}}, {"2": {"a": 0.5}}, "map")
    with pytest.raises(ValueError, match="no query of the run appears in the qrels"):
        R.evaluate({"1": {"a": 1}}, {"2": {"a": 0.5}}, "map", complete_qrels=True)
    q = _write(tmp_path, "q", "1 0 a 1\n")
    r = _write(tmp_path, "r", "7 Q0 a 1 0.5 t\n")
    rc, out, err = _run_cli(capsys, ["trec", q, r, "--no-progress"])
    assert rc == 2 and out == "" and "no query of the run appears in the qrels" in err
    assert err.strip().count("\n") == 0


def test_average_ties_refuses_order_only_measures():
    from calipers import retrieval as R
    with pytest.raises(ValueError, match="not for bpref"):
        R.evaluate({"1": {"a": 1}}, {"1": {"a": 0.5}}, "bpref", ties="average")


@pytest.mark.parametrize("seed,level", [(0, 1), (1, 2), (2, 1)])
def test_average_ties_is_the_mean_over_every_ordering_of_tied_scores(seed, level):
    # ties="average" against enumeration: each query's value is the mean, over every
    # ordering of its tied documents, of the value trec_eval gives that ordering (scores
    # made distinct in that order), for every measure ties="average" supports.
    import itertools

    from calipers import retrieval as R
    rng = np.random.default_rng(seed)
    specs = ["num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank", "P.1,2,3,6",
             "recall.2,6", "ndcg", "ndcg_cut.2,6"]
    for qid in ("1", "2", "3"):
        n = int(rng.integers(3, 7))
        docs = [f"d{i}" for i in range(n)]
        score = rng.integers(0, 3, n).astype(float)        # tie groups of up to 6
        rel = rng.integers(-1, 3, n)
        qrels = {qid: {d: int(r) for d, r in zip(docs, rel) if rng.random() < 0.8}}
        qrels[qid]["missed"] = 2                           # judged, not retrieved
        run = {qid: dict(zip(docs, score.tolist()))}
        got = R.evaluate(qrels, run, specs, ties="average", relevance_level=level)
        groups = [np.flatnonzero(score == v).tolist() for v in np.unique(score)[::-1]]
        total, count = {}, 0
        for perm in itertools.product(*(itertools.permutations(g) for g in groups)):
            order = [i for g in perm for i in g]          # best first
            distinct = {docs[i]: float(n - j) for j, i in enumerate(order)}
            one = R.evaluate(qrels, {qid: distinct}, specs, relevance_level=level)
            for name, v in one.values.items():
                total[name] = total.get(name, 0.0) + float(v[0])
            count += 1
        assert set(got.values) == set(total)
        for name, v in got.values.items():
            assert v[0] == pytest.approx(total[name] / count, rel=1e-12, abs=1e-15), \
                (qid, name)


IR_NAMES = {   # ir_measures name -> (trec_eval spec, printed trec_eval name, relevance level)
    "nDCG@10": ("ndcg_cut.10", "ndcg_cut_10", 1), "nDCG": ("ndcg", "ndcg", 1),
    "P(rel=2)@5": ("P.5", "P_5", 2), "P@5": ("P.5", "P_5", 1),
    "R@100": ("recall.100", "recall_100", 1), "RR": ("recip_rank", "recip_rank", 1),
    "AP": ("map", "map", 1), "AP@5": ("map_cut.5", "map_cut_5", 1),
    "AP(rel=2)": ("map", "map", 2), "Bpref": ("bpref", "bpref", 1),
    "Bpref(rel=2)": ("bpref", "bpref", 2), "infAP": ("infAP", "infAP", 1),
    "Rprec": ("Rprec", "Rprec", 1), "Success@3": ("success.3", "success_3", 1),
    "IPrec@0.2": ("iprec_at_recall.0.2", "iprec_at_recall_0.20", 1),
    "SetP": ("set_P", "set_P", 1), "SetR": ("set_recall", "set_recall", 1),
    "SetF": ("set_F", "set_F", 1), "NumRet": ("num_ret", "num_ret", 1),
    "NumRel": ("num_rel", "num_rel", 1), "NumRet(rel=1)": ("num_rel_ret", "num_rel_ret", 1),
}


@pytest.mark.parametrize("seed", [0, 1])
def test_ir_measures_names_equal_the_trec_eval_measures(seed):
    from calipers import retrieval as R
    qrels, run = _random_trec(seed, n_q=8, n_docs=15)
    res = R.evaluate(qrels, run, list(IR_NAMES) + ["Judged@10", "RR@3", "map"])
    # trec_eval names (Rprec and infAP are both) in trec_eval's order, then the others as given
    assert res.measures[:5] == ("map", "Rprec", "infAP", "nDCG@10", "nDCG")
    for name, (spec, printed, level) in IR_NAMES.items():
        ref = R.evaluate(qrels, run, spec, relevance_level=level)
        np.testing.assert_array_equal(res.values[name], ref.values[printed], err_msg=name)
    # the two without a trec_eval measure, by brute force on trec_eval's ordering
    for i, q in enumerate(res.query_ids):
        ranked = sorted(run[q], key=lambda d: (-np.float32(run[q][d]), [-ord(c) for c in d]))
        top = ranked[:10]
        assert res.values["Judged@10"][i] == pytest.approx(
            sum(d in qrels[q] for d in top) / len(top))
        first = next((r for r, d in enumerate(ranked[:3], 1) if qrels[q].get(d, 0) >= 1), None)
        assert res.values["RR@3"][i] == pytest.approx(0 if first is None else 1 / first)


def test_ir_measures_names_match_ir_measures():
    ir_measures = pytest.importorskip("ir_measures")
    from calipers import retrieval as R
    names = list(IR_NAMES) + ["Judged@10", "RR@3", "R(rel=2)@10"]
    for seed in range(3):
        qrels, run = _random_trec(seed, n_q=8, n_docs=15)
        # distinct scores: ir_measures' Judged provider breaks ties by docno ascending
        run = {q: {d: s + 1e-3 * i for i, (d, s) in enumerate(sorted(docs.items()))}
               for q, docs in run.items()}
        ms = [ir_measures.parse_measure(n) for n in names]
        ref = {(str(m.measure), m.query_id): m.value
               for m in ir_measures.iter_calc(ms, qrels, run)}
        res = R.evaluate(qrels, run, names)
        for n, m in zip(names, ms):
            want = [ref[(str(m), q)] for q in res.query_ids]
            np.testing.assert_allclose(res.values[n], want, rtol=1e-12, atol=1e-12, err_msg=n)


@pytest.mark.parametrize("spec,msg", [
    ("P(gains=2)@5", "unsupported parameter 'gains'"), ("R", "needs a cut-off"),
    ("Bpref@5", "takes no cut-off"), ("P(rel=x)@5", "rel must be an integer"),
    ("P@0", "positive integer"), ("IPrec@2", "recall level"),
    ("nDCG(rel=2)@5", "unsupported parameter 'rel'"),
])
def test_ir_measures_name_errors(spec, msg):
    from calipers import retrieval as R
    with pytest.raises(ValueError, match=re.escape(msg)):
        R.evaluate({"1": {"a": 1}}, {"1": {"a": 0.5}}, spec)


def test_join_keys_cannot_collide_across_queries():
    # query "1" + doc "23" and query "12" + doc "3" once met in a concatenated string key
    # (NumPy drops a trailing NUL separator): a false duplicate, and a false judgement.
    from calipers import retrieval as R
    qrels = {"1": {"23": 1}, "12": {"9": 1}}
    run = {"1": {"5": 0.9}, "12": {"3": 0.8, "9": 0.1}}
    res = R.evaluate(qrels, run, ["num_rel_ret", "map"])
    assert res.values["num_rel_ret"].tolist() == [0.0, 1.0]   # "1", "12" sorted
    assert res.values["map"].tolist() == [0.0, 0.5]
    R.evaluate(({"1": {"23": 1, "3": 0}, "12": {"3": 1}}), {"1": {"23": 0.5}}, "map")


@pytest.mark.parametrize("seed", [0, 1])
def test_integer_ids_equal_their_strings(seed):
    # Integer ids take a packed-key join; ties must still follow the docno *strings*
    # ("9" ranks above "10" on a tied score), and queries print in string order.
    from calipers import retrieval as R
    rng = np.random.default_rng(seed)
    n = 400
    rq, rd = rng.integers(1, 13, n), rng.integers(0, 30, n)
    keep = np.unique(rq * 1000 + rd, return_index=True)[1]
    rq, rd = rq[keep], rd[keep]
    rs = rng.integers(0, 3, rq.shape[0]) / 2          # many ties
    jq, jd = rng.integers(1, 13, n), rng.integers(0, 40, n)
    keep = np.unique(jq * 1000 + jd, return_index=True)[1]
    jq, jd = jq[keep], jd[keep]
    jr = rng.integers(-1, 4, jq.shape[0])
    a = R.evaluate((jq, jd, jr), (rq, rd, rs), "all_trec")
    b = R.evaluate((jq.astype(str), jd.astype(str), jr), (rq.astype(str), rd.astype(str), rs),
                   "all_trec")
    assert a.query_ids.tolist() == b.query_ids.tolist() == sorted(b.query_ids.tolist())
    for name in a.values:
        np.testing.assert_array_equal(a.values[name], b.values[name], err_msg=name)
    c = R.evaluate((jq, jd.astype(str), jr), (rq.astype(str), rd, rs), "all_trec")
    for name in a.values:
        np.testing.assert_array_equal(c.values[name], b.values[name], err_msg=name)


def test_queries_option_names_queries_of_neither_file():
    from calipers import retrieval as R
    res = R.evaluate({"1": {"a": 1}, "2": {"b": 1}}, {"1": {"a": 0.5}}, ["map", "num_rel"],
                     queries=["2", "1", "zz"])
    assert res.query_ids.tolist() == ["1", "2", "zz"]
    assert res.values["map"].tolist() == [1.0, 0.0, 0.0]
    assert res.values["num_rel"].tolist() == [1.0, 1.0, 0.0]
    assert res.in_run.tolist() == [True, False, False]


def test_cli_takes_ir_measures_names(capsys):
    _need_peers()
    base = ["trec", str(PEERS / "qrels.test"), str(PEERS / "results.test"), "--no-progress"]
    rc, out, _ = _run_cli(capsys, base + ["-m", "nDCG@10", "-m", "ndcg_cut.10", "-m", "AP"])
    assert rc == 0
    assert out.splitlines() == ["ndcg_cut_10           \tall\t0.3016",
                                "nDCG@10               \tall\t0.3016",
                                "AP                    \tall\t0.1785"]
    rc, _, err = _run_cli(capsys, base + ["-m", "P(rel=x)@5"])
    assert rc == 2 and "-m P(rel=x)@5: rel must be an integer" in err


def test_string_codes_equal_numpy_unique():
    rng = np.random.default_rng(0)
    alph = np.array(list("ab0-Z~ "))
    for n in (1, 7, 500):
        for width in (1, 3, 9, 17):
            a = np.array(["".join(rng.choice(alph, rng.integers(0, width + 1)))
                          for _ in range(n)])
            u, inv = _encode._string_codes(a)
            u2, inv2 = np.unique(a, return_inverse=True)
            assert u.tolist() == u2.tolist() and u.dtype == a.dtype
            np.testing.assert_array_equal(np.reshape(inv, -1), np.reshape(inv2, -1))
    u, inv = _encode._string_codes(np.array(["é", "e", "f"]))      # not ASCII: code point order
    assert u.tolist() == ["e", "f", "é"] and np.reshape(inv, -1).tolist() == [2, 0, 1]


def test_string_hash_ignores_width_and_separates_distinct_ids():
    rng = np.random.default_rng(1)
    alph = np.array(list("ab0-Z~ é中"))
    for width in range(0, 9):
        a = np.array(["".join(rng.choice(alph, rng.integers(0, width + 1)))
                      for _ in range(2000)])
        h = _encode._str_hash(a)
        # NUL padding of a wider array gives the same hashes (qrels and run widths differ)
        np.testing.assert_array_equal(_encode._str_hash(a.astype(f"U{width + 3}")), h)
        u, inv = np.unique(a, return_inverse=True)
        assert np.unique(_encode._str_hash(u)).shape[0] == u.shape[0]
        np.testing.assert_array_equal(_encode._str_hash(u)[np.reshape(inv, -1)], h)


@pytest.mark.parametrize("seed", [0, 1])
def test_hashed_docno_join_equals_the_exact_join(seed, monkeypatch):
    # evaluate joins string docnos on 64-bit hashes; a constant hash makes every pair
    # collide, which must be detected and redone on exact string codes: same values.
    from calipers import retrieval as R
    rng = np.random.default_rng(seed)
    n = 600
    names = np.array([f"doc-{i}" if i % 3 else f"d{i}é" for i in range(60)])
    rq, rd = rng.integers(1, 13, n), rng.integers(0, 45, n)
    keep = np.unique(rq * 1000 + rd, return_index=True)[1]
    rq, rd = rq[keep], names[rd[keep]]
    rs = rng.integers(0, 3, rq.shape[0]) / 2          # many ties: docno string order decides
    jq, jd = rng.integers(1, 13, n), rng.integers(0, 60, n)
    keep = np.unique(jq * 1000 + jd, return_index=True)[1]
    jq, jd = jq[keep], names[jd[keep]].astype("U12")   # another width than the run's
    jr = rng.integers(-1, 4, jq.shape[0])
    qrels, run = (jq.astype(str), jd, jr), (rq.astype(str), rd, rs)
    a = R.evaluate(qrels, run, "all_trec")
    assert a.values["num_rel_ret"].sum() > 0
    calls = []
    real = _join._trec_arrays

    def spy(*args, **kw):
        calls.append(args[-1])
        return real(*args, **kw)

    monkeypatch.setattr(_join, "_trec_arrays", spy)
    monkeypatch.setattr(_encode, "_str_hash",
                        lambda s, width=None: np.zeros(s.shape[0], np.uint64))
    b = R.evaluate(qrels, run, "all_trec")
    assert calls == [True, False]            # collision found, exact join used
    assert a.query_ids.tolist() == b.query_ids.tolist()
    for name in a.values:
        np.testing.assert_array_equal(a.values[name], b.values[name], err_msg=name)


def test_hashed_join_still_reports_duplicates():
    from calipers import retrieval as R
    run = (np.array(["1", "1", "2", "1"]), np.array(["a", "bb", "a", "bb"]),
           np.array([0.3, 0.2, 0.1, 0.0]))
    with pytest.raises(ValueError, match=r"line 4: duplicate document for query 1 document bb "
                                         r"\(first on line 2\)"):
        R.evaluate({"1": {"a": 1}}, run, "map")


def _ragged_trec(rng, n_q=14, string_q=False, shuffle=False, top=3, doc_base=0):
    """Flat integer-docno qrels and run: ragged lists (some one row long), tied scores,
    levels -1..top, queries in only one of the two, a query without a relevant document;
    docnos from ``doc_base`` up."""
    n = 40 * n_q
    rq, rd = rng.integers(1, n_q + 1, n), rng.integers(0, 70, n)
    rq[:3] = n_q + 1                                  # a one-row list
    keep = np.unique(rq * 1000 + rd, return_index=True)[1]
    rq, rd = rq[keep], rd[keep]
    rs = rng.integers(0, 4, rq.shape[0]) / 2          # many ties: docno string order decides
    jq, jd = rng.integers(1, n_q + 4, n), rng.integers(0, 80, n)   # queries the run lacks
    keep = np.unique(jq * 1000 + jd, return_index=True)[1]
    jq, jd = jq[keep], jd[keep]
    jr = rng.integers(-1, top + 1, jq.shape[0])
    jr[jq == 2] = 0                                   # no relevant document
    jr[jq == 3] = -1                                  # judged negative only
    if shuffle:
        o, p = rng.permutation(rq.shape[0]), rng.permutation(jq.shape[0])
        rq, rd, rs, jq, jd, jr = rq[o], rd[o], rs[o], jq[p], jd[p], jr[p]
    if string_q:
        rq, jq = np.char.add("q", rq.astype(str)), np.char.add("q", jq.astype(str))
    return (jq, jd + doc_base, jr), (rq, rd + doc_base, rs)


@pytest.mark.parametrize("seed,shuffle,doc_base", [(0, False, 0), (1, True, 0),
                                                   (2, False, 2 ** 62), (3, True, 7)])
def test_packed_sort_paths_equal_the_argsort_paths(seed, shuffle, doc_base):
    # The join and the ranking sort pack (query, doc | score, row offset) into one 64-bit
    # key and np.sort it; with no room for the key they take argsorts: the same values,
    # for grouped and shuffled rows, huge doc ids, ties, queries with no relevant or no
    # retrieved document (complete_qrels).
    from calipers import retrieval as R
    rng = np.random.default_rng(seed)
    qrels, run = _ragged_trec(rng, n_q=9, doc_base=doc_base, shuffle=shuffle)
    want = "all_trec"
    for kw in ({}, {"complete_qrels": True}, {"relevance_level": 2}):
        a = R.evaluate(qrels, run, want, **kw)
        b = _evaluate._evaluate_by(_Paths(pack_bits=0), qrels, run, want, **kw)
        assert a.query_ids.tolist() == b.query_ids.tolist()
        for name in a.values:
            if name == "relstring":
                assert a.values[name].tolist() == b.values[name].tolist()
            else:
                np.testing.assert_allclose(a.values[name], b.values[name], rtol=1e-13,
                                           atol=0, err_msg=name)
        s = R.evaluate((qrels[0].astype(str), qrels[1].astype(str), qrels[2]),
                       (run[0].astype(str), run[1].astype(str), run[2]), want, **kw)
        for name in a.values:
            np.testing.assert_array_equal(a.values[name], s.values[name], err_msg=name)


def _equal_blocks_trec(rng, n_q=12, m=30, shuffle=False):
    # every query has m run rows and m judgements (query ids 1..12: string order differs
    # from numeric order, so the blocks are not in query-code order)
    rq = np.repeat(np.arange(1, n_q + 1), m)
    rd = np.concatenate([rng.permutation(40)[:m] for _ in range(n_q)])
    rs = rng.integers(0, 5, rq.shape[0]) / 4          # ties: docno string order decides
    jq = np.repeat(np.arange(1, n_q + 1), m)
    jd = np.concatenate([rng.permutation(45)[:m] for _ in range(n_q)])
    jr = rng.integers(-1, 4, jq.shape[0])
    if shuffle:
        o, p = rng.permutation(rq.shape[0]), rng.permutation(jq.shape[0])
        rq, rd, rs, jq, jd, jr = rq[o], rd[o], rs[o], jq[p], jd[p], jr[p]
    return (jq, jd, jr), (rq, rd, rs)


@pytest.mark.parametrize("seed,equal,shuffle", [(0, False, False), (1, False, True),
                                                (2, True, False), (3, True, True)])
def test_row_sorts_equal_the_flat_sorts(seed, equal, shuffle):
    # The join and the ranking sort each query's rows as one row of a padded 2-D array
    # (ragged blocks padded; equal blocks copied whole, in query-code order); the same
    # values as the flat packed sort and as the argsorts, ties and missing queries included.
    from calipers import retrieval as R
    rng = np.random.default_rng(seed)
    qrels, run = _equal_blocks_trec(rng, shuffle=shuffle) if equal else \
        _ragged_trec(rng, n_q=9, shuffle=shuffle)
    for kw in ({}, {"complete_qrels": True}):
        a = R.evaluate(qrels, run, "all_trec", **kw)
        # (and the join's neighbour scan in slices of 7 keys)
        for attr, value in (("row_sort", False), ("pack_bits", 0), ("slice", 7)):
            b = _evaluate._evaluate_by(_Paths(**{attr: value}), qrels, run, "all_trec", **kw)
            assert a.query_ids.tolist() == b.query_ids.tolist()
            for name in a.values:
                if name == "relstring":
                    assert a.values[name].tolist() == b.values[name].tolist()
                else:
                    np.testing.assert_array_equal(a.values[name], b.values[name],
                                                  err_msg=f"{attr} {name}")


@pytest.mark.parametrize("slice_", [1 << 20, 1, 2])
def test_packed_join_reports_duplicates_as_the_general_join(slice_):
    paths = _Paths(slice=slice_)
    run = (np.array([1, 1, 2, 1]), np.array([5, 6, 5, 6]), np.array([0.3, 0.2, 0.1, 0.0]))
    with pytest.raises(ValueError, match=r"line 4: duplicate document for query 1 document 6 "
                                         r"\(first on line 2\)"):
        _evaluate._evaluate_by(paths, (np.array([1]), np.array([5]), np.array([1])), run,
                               "map")
    qrels = (np.array([1, 2, 1]), np.array([5, 5, 5]), np.array([1, 0, 2]))
    with pytest.raises(ValueError, match=r"line 3: duplicate judgement for query 1 document 5"):
        _evaluate._evaluate_by(paths, qrels, (np.array([1]), np.array([5]), np.array([0.5])),
                               "map")


def _pytrec_eval_values(pytrec_eval, qrels, run, fams):
    """pytrec_eval's per-query values for flat (query, doc, value) triples."""
    def nested(q, d, v):
        out: dict = {}
        for a, b, c in zip(q.astype(str).tolist(), d.astype(str).tolist(), v.tolist()):
            out.setdefault(a, {})[b] = c
        return out

    return pytrec_eval.RelevanceEvaluator(nested(*qrels), set(fams)).evaluate(nested(*run))


def test_range_sums_equal_slices():
    rng = np.random.default_rng(3)
    x = rng.random(50)
    a = rng.integers(0, 51, 200)
    b = rng.integers(0, 51, 200)
    got = _values._range_sums(x, a, b)
    want = [x[i:j].sum() if i < j else 0.0 for i, j in zip(a, b)]
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(_values._range_sums(_values._padded(x), a, b, padded=True), got)
    assert _values._range_sums(np.zeros(0), a[:3], a[:3]).tolist() == [0.0, 0.0, 0.0]


def test_many_queries_match_pytrec_eval_to_rounding():
    # Per-query sums are taken within each query (not as differences of one prefix sum
    # over every row, whose rounding grows with the number of rows): NDCG and AP@k of
    # 3000 queries agree with trec_eval 9.0.8 to a few ulps.
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from calipers import retrieval as R
    rng = np.random.default_rng(4)
    Q, D = 3000, 100
    qid = np.repeat(np.arange(Q), D)
    doc = np.tile(np.arange(D), Q) + rng.integers(0, 1000, Q * D) * 1000
    score = (rng.permutation(Q * D) % (1 << 23)) / 1024.0
    judged = rng.random(Q * D) < 0.5
    rel = rng.integers(0, 4, Q * D)
    qrels, run = (qid[judged], doc[judged], rel[judged]), (qid, doc, score)
    fams = ["map", "ndcg", "ndcg_cut", "map_cut", "bpref", "recip_rank", "P", "Rprec"]
    res = R.evaluate(qrels, run, fams)

    ref = _pytrec_eval_values(pytrec_eval, qrels, run, fams)
    for name, v in res.values.items():
        want = np.array([ref[q][name] for q in res.query_ids])
        np.testing.assert_allclose(v, want, rtol=0, atol=2e-15, err_msg=name)
        if name.startswith(("map", "bpref", "P_", "Rprec", "recip_rank")):
            # sums in rank order within each query, as trec_eval adds: the same doubles
            np.testing.assert_array_equal(v, want, err_msg=name)


def test_float32_key_orders_scores_descending():
    # the ranking's packed score key: ascending keys = descending float32 scores, -0.0
    # tied with 0.0, every key in 0 .. 2**32 - 1
    rng = np.random.default_rng(5)
    s = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-40, 38, 500),
                        [0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 3.4e38, -3.4e38]])
    s = s.astype(np.float32)
    k = _encode._float32_key(s)
    assert k.dtype == np.int64 and k.min() >= 0 and k.max() < 2 ** 32
    i, j = rng.integers(0, s.shape[0], (2, 5000))
    np.testing.assert_array_equal(k[i] < k[j], s[i] > s[j])
    np.testing.assert_array_equal(k[i] == k[j], s[i] == s[j])


def test_skewed_queries_take_the_range_sums_and_match_pytrec_eval():
    # One query with far more relevant documents than the others: the running sums would
    # pad every query to its length, so the per-query sums come from range sums instead
    # (the same values to rounding).
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from calipers import retrieval as R
    rng = np.random.default_rng(6)
    Q, D, big = 600, 5, 3000
    qid = np.concatenate([np.repeat(np.arange(Q), D), np.full(big, Q)])
    doc = np.concatenate([np.tile(np.arange(D), Q), np.arange(big)])
    score = rng.permutation(qid.shape[0]) / 8.0
    rel = np.concatenate([rng.integers(0, 2, Q * D), rng.integers(0, 4, big)])
    qrels, run = (qid, doc, rel), (qid, doc, score)
    ta = _join.trec_arrays(_io._as_qrels(qrels), _io._as_run(run, ""))
    sub = _values._Lists(_join._ranked_of(ta), 1).relsub
    assert sub.running(_values._padded(np.ones(sub.rows.shape[0]))) is None
    fams = ["map", "map_cut", "bpref", "ndcg_cut"]
    res = R.evaluate(qrels, run, fams)

    ref = _pytrec_eval_values(pytrec_eval, qrels, run, fams)
    for name, v in res.values.items():
        want = np.array([ref[q][name] for q in res.query_ids])
        np.testing.assert_allclose(v, want, rtol=0, atol=1e-14, err_msg=name)


# --------------------------------------------------------------------------
# evaluate's block join (qrels and runs encoded when built) against the general join
# --------------------------------------------------------------------------

def _spy_block_join(monkeypatch):
    """Records, per evaluate, whether the block join ran (True) or handed over (False)."""
    calls = []
    real = _join._block_ranking

    def spy(*args, **kw):
        got = real(*args, **kw)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(_evaluate, "_block_ranking", spy)
    return calls


def _assert_same_evaluation(a, b, tag=""):
    """Bit for bit: values (and their signs), means, queries, in_run."""
    assert a.query_ids.tolist() == b.query_ids.tolist(), tag
    assert a.measures == b.measures and list(a.values) == list(b.values), tag
    np.testing.assert_array_equal(a.in_run, b.in_run)
    for name, v in a.values.items():
        w = b.values[name]
        if v.dtype == object:
            assert v.tolist() == w.tolist(), (tag, name)
        else:
            np.testing.assert_array_equal(v, w, err_msg=f"{tag} {name}")
            np.testing.assert_array_equal(np.signbit(v), np.signbit(w), err_msg=f"{tag} {name}")
    for name, m in a.mean.items():
        assert m == b.mean[name] or (np.isnan(m) and np.isnan(b.mean[name])), (tag, name)


_IR_NAMES_SET = ["AP", "AP@5", "P(rel=2)@5", "R@10", "RR", "RR@3", "nDCG@10", "Judged@5",
                 "Bpref(rel=2)", "NumRet(rel=1)", "SetF", "Success@3", "Rprec", "IPrec@0.5"]


@pytest.mark.parametrize("seed,string_q,shuffle,top,dense", [
    (0, False, False, 3, 0), (1, True, False, 3, 0), (2, False, True, 3, 0),
    (3, True, True, 2, 0), (4, False, False, 300, 0),   # 300: codes wider than int8
    (5, True, True, 3, None)])                          # None: the default, flat lists
def test_block_join_equals_the_general_join(seed, string_q, shuffle, top, dense,
                                            monkeypatch):
    # The block join (and the dense measures on its ranked block) must give the general
    # join's values bit for bit: ties, ragged and one-row lists, string query ids, queries
    # of one side only, -c, queries=, relevance levels, ir_measures names, gain re-maps;
    # also with slices of one and three queries in its two scans.
    # (dense: the dense measures on few queries too)
    paths = _Paths() if dense is None else _Paths(dense_min_queries=dense)

    def evaluate(*args, p=paths, **kw):
        return _evaluate._evaluate_by(p, *args, **kw)

    rng = np.random.default_rng(seed)
    qrels, run = _ragged_trec(rng, string_q=string_q, shuffle=shuffle, top=top)
    specs = ["all_trec", ["ndcg.1=3,2=9,0=1", "ndcg_cut.1,3,500", "map_cut.1,1000", "P.1,3"],
             _IR_NAMES_SET]
    opts = [{}, {"complete_qrels": True}, {"relevance_level": 2}, {"relevance_level": 0},
            {"queries": ["1", "2", "q3", "3", "zz", "q5", "15"]}]
    calls = _spy_block_join(monkeypatch)
    for kw in opts:
        for spec in specs:
            calls.clear()
            a = evaluate(qrels, run, spec, **kw)
            assert calls == [True]
            b = evaluate(qrels, run, spec, p=paths._replace(block_join=False), **kw)
            _assert_same_evaluation(a, b, (kw, spec))
            c = evaluate(qrels, run, spec, p=paths._replace(join_slice=1, dense_slice=3), **kw)
            _assert_same_evaluation(a, c, (kw, spec, "slices"))
    # built by evaluate's converters or directly: both encoded when built
    built = evaluate(_io._as_qrels(qrels), _io._as_run(run, ""), "all_trec")
    qd, rd = _io.Qrels(*qrels), _io.Run(*run)
    assert qd.ids.blocks is not None and rd.ids.blocks is not None
    direct = evaluate(qd, rd, "all_trec")
    plain = evaluate(qrels, run, "all_trec")
    _assert_same_evaluation(plain, built)
    _assert_same_evaluation(plain, direct)


def _assert_matches_pytrec_eval(pytrec_eval, res, qrels, run):
    """Every all_trec measure per query equals pytrec_eval's (the sums in rank order: map,
    map_cut, bpref, P and the counts to the bit)."""
    ref = _pytrec_eval_values(pytrec_eval, qrels, run, pytrec_eval.supported_measures)
    qs = list(res.query_ids)
    assert sorted(ref) == qs
    for name, v in res.values.items():
        if name == "relstring":
            continue
        want = np.array([ref[q][name] for q in qs])
        if name.startswith("gm_"):
            want = np.exp(want)      # pytrec_eval keeps log(max(v, 1e-5))
            v = np.maximum(v, 1e-5)
        np.testing.assert_allclose(v, want, rtol=1e-12, atol=1e-12, err_msg=name)
        if name.startswith(("map", "bpref", "P_", "Rprec", "recip_rank", "num_", "success")):
            np.testing.assert_array_equal(v, want, err_msg=name)


@pytest.mark.parametrize("seed", [0, 1])
def test_block_join_matches_pytrec_eval(seed, monkeypatch):
    # The block path against trec_eval 9.0.8 itself: every all_trec measure per query
    # (the sums in rank order: map, map_cut, bpref, P and the counts to the bit).
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from calipers import retrieval as R
    rng = np.random.default_rng(seed)
    qrels, run = _ragged_trec(rng, string_q=bool(seed))
    calls = _spy_block_join(monkeypatch)
    res = _evaluate._evaluate_by(_Paths(dense_min_queries=0), qrels, run, "all_trec")
    assert calls == [True]
    _assert_matches_pytrec_eval(pytrec_eval, res, qrels, run)


def test_block_join_hands_over_duplicates_and_unpackable_docnos(monkeypatch):
    # A docno twice in an evaluated query: the general join names the lines. Twice in a
    # query the qrels lack: not evaluated, no error (as the general join). Docnos past the
    # packed range or negative: the general join, same values as their strings.
    from calipers import retrieval as R
    calls = _spy_block_join(monkeypatch)
    qrels = (np.array([1, 1]), np.array([5, 6]), np.array([1, 0]))
    run = (np.array([1, 1, 2, 1]), np.array([5, 6, 5, 6]), np.array([0.3, 0.2, 0.1, 0.0]))
    with pytest.raises(ValueError, match=r"run, line 4: duplicate document for query 1 "
                                         r"document 6 \(first on line 2\)"):
        R.evaluate(qrels, run, "map")
    assert calls == [False]
    calls.clear()
    run = (np.array([1, 2, 2]), np.array([5, 5, 5]), np.array([0.3, 0.2, 0.1]))
    assert R.evaluate(qrels, run, "map").values["map"].tolist() == [1.0]
    assert calls == [True]
    qdup = (np.array([1, 2, 1]), np.array([5, 5, 5]), np.array([1, 0, 2]))
    with pytest.raises(ValueError, match=r"qrels, line 3: duplicate judgement for query 1"):
        R.evaluate(qdup, (np.array([1]), np.array([5]), np.array([0.5])), "map")
    rng = np.random.default_rng(7)
    for base in (-40, 2 ** 41 - 30):
        (jq, jd, jr), (rq, rd, rs) = _ragged_trec(rng)
        calls.clear()
        a = R.evaluate((jq, jd + base, jr), (rq, rd + base, rs), "all_trec")
        assert calls == []      # not encoded: the general join
        b = R.evaluate((jq, (jd + base).astype(str), jr), (rq, (rd + base).astype(str), rs),
                       "all_trec")
        _assert_same_evaluation(a, b, base)


def _string_trec(rng, n_q=12, alphabet="ab0-", shuffle=False, top=3):
    """Flat qrels and run with string docnos: ragged lists, tied scores, ids that are
    prefixes of each other, non-ASCII letters (``alphabet``), the two sides at different
    widths, queries of one side only."""
    names = np.unique(np.array(["".join(rng.choice(list(alphabet), rng.integers(1, 6)))
                                for _ in range(120)]))
    names = np.concatenate([names, np.char.add(names[:10], "0"), ["x" * 19]])  # prefixes
    names = np.unique(names)
    n = 30 * n_q
    rq, rd = rng.integers(1, n_q + 1, n), rng.integers(0, names.shape[0], n)
    keep = np.unique(rq * 1000 + rd, return_index=True)[1]
    rq, rd = rq[keep], rd[keep]
    rs = rng.integers(0, 4, rq.shape[0]) / 2          # many ties: docno string order decides
    jq, jd = rng.integers(1, n_q + 3, n), rng.integers(0, names.shape[0], n)
    keep = np.unique(jq * 1000 + jd, return_index=True)[1]
    jq, jd = jq[keep], jd[keep]
    jr = rng.integers(-1, top + 1, jq.shape[0])
    jr[jq == 2] = 0                                   # no relevant document
    if shuffle:
        o, p = rng.permutation(rq.shape[0]), rng.permutation(jq.shape[0])
        rq, rd, rs, jq, jd, jr = rq[o], rd[o], rs[o], jq[p], jd[p], jr[p]
    return ((jq.astype(str), names[jd].astype("U25"), jr),
            (rq.astype(str), names[rd], rs))


@pytest.mark.parametrize("seed,alphabet,shuffle", [
    (0, "ab0-", False), (1, "ab0-", True), (2, "aé0~", False),   # é: bytes below 256
    (3, "a中é", True), (4, "ab", False)])                        # 中: code points compared
def test_string_docno_block_join_equals_the_general_join(seed, alphabet, shuffle,
                                                          monkeypatch):
    # String docnos take the block join on hashed keys (checked pairs); the general join's
    # values bit for bit: ties ordered by the docno strings, -c, queries=, levels.
    from calipers import retrieval as R
    rng = np.random.default_rng(seed)
    qrels, run = _string_trec(rng, alphabet=alphabet, shuffle=shuffle)
    calls = _spy_block_join(monkeypatch)
    opts = [{}, {"complete_qrels": True}, {"relevance_level": 2},
            {"queries": ["1", "2", "3", "zz", "13"]}]
    for kw in opts:
        for spec in ("all_trec", _IR_NAMES_SET):
            calls.clear()
            a = R.evaluate(qrels, run, spec, **kw)
            assert calls == [True], (kw, spec)
            b = _evaluate._evaluate_by(_Paths(block_join=False), qrels, run, spec, **kw)
            _assert_same_evaluation(a, b, (kw, spec))
    # one side with code points past 255 (compared as code points), the other as bytes
    qd = (qrels[0], np.where(np.arange(qrels[1].shape[0]) % 2, np.char.add(qrels[1], "ж"),
                             qrels[1]), qrels[2])
    rd = run
    calls.clear()
    a = R.evaluate(qd, rd, "all_trec")
    assert calls == [True] and a.values["num_rel_ret"].sum() > 0
    _assert_same_evaluation(a, _evaluate._evaluate_by(_Paths(block_join=False), qd, rd,
                                                      "all_trec"))


@pytest.mark.parametrize("seed", [0, 1])
def test_string_docno_block_join_matches_pytrec_eval(seed, monkeypatch):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    from calipers import retrieval as R
    rng = np.random.default_rng(seed)
    qrels, run = _string_trec(rng, alphabet="ab0-é", shuffle=bool(seed))
    calls = _spy_block_join(monkeypatch)
    res = R.evaluate(qrels, run, "all_trec")
    assert calls == [True]
    _assert_matches_pytrec_eval(pytrec_eval, res, qrels, run)


@pytest.mark.parametrize("bits", [0, 3])
def test_string_docno_hash_collisions_take_the_general_join(bits, monkeypatch):
    # Docno hashes cut to a few bits: keys shared by different strings, on one side or
    # across; the block join hands over and the values are the exact join's.
    from calipers import retrieval as R
    rng = np.random.default_rng(5)
    qrels, run = _string_trec(rng)
    want = R.evaluate(qrels, run, "all_trec")
    real = _encode._str_hash
    monkeypatch.setattr(_encode, "_str_hash",
                        lambda s, width=None: real(s, width) & np.uint64((1 << bits) - 1))
    calls = _spy_block_join(monkeypatch)
    got = R.evaluate(qrels, run, "all_trec")
    assert calls == [False]
    _assert_same_evaluation(want, got)


def test_string_docno_cross_collision_is_caught_by_the_string_check(monkeypatch):
    # "b" (judged) and "zz" (retrieved, not judged) of one query share a hashed key, with
    # no shared key on either side: only the check of the matched strings can see it.
    from calipers import retrieval as R
    qrels = (np.array(["1", "1", "2"]), np.array(["a", "b", "zz"]), np.array([1, 1, 1]))
    run = (np.array(["1", "1", "2"]), np.array(["a", "zz", "zz"]), np.array([0.5, 0.9, 0.1]))
    real = _encode._str_hash

    def hashed(s, width=None):
        h = real(s, width)
        return np.where(s == "zz", real(np.array(["b"])), h)

    checks = []
    real_check = _join._same_docnos
    monkeypatch.setattr(_join, "_same_docnos", lambda *a: checks.append(real_check(*a)) or
                        checks[-1])
    a = R.evaluate(qrels, run, ["num_rel_ret", "map", "P.1"])
    assert checks == [True]
    monkeypatch.setattr(_encode, "_str_hash", hashed)
    b = R.evaluate(qrels, run, ["num_rel_ret", "map", "P.1"])
    assert checks == [True, False]
    _assert_same_evaluation(a, b)
    assert b.values["num_rel_ret"].tolist() == [1.0, 1.0]
    assert b.values["P_1"].tolist() == [0.0, 1.0]


def test_compact_strings_and_longest_width():
    a = np.array(["ab", "", "é~", "abc"], dtype="U9")
    assert _encode._longest(a) == 3 and _encode._longest(a[:1]) == 2
    assert _encode._longest(a[:0]) == 0
    c = _encode._compact(a, 3)
    assert c.dtype == np.dtype("S3") and c.tolist() == [b"ab", b"", "é~".encode("latin-1"),
                                                        b"abc"]
    u = _encode._compact(np.array(["a中", "b"], dtype="U7"), 2)
    assert u.dtype == np.dtype("U2") and u.tolist() == ["a中", "b"]
    np.testing.assert_array_equal(_encode._str_hash(a), _encode._str_hash(a, 3))
    np.testing.assert_array_equal(_encode._narrow(a, 3), a)
    assert _encode._code_points(c).tolist() == a.tolist() and _encode._code_points(u) is u
