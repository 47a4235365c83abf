"""``calipers trec``: counts, comparisons, argument errors and the help text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from calipers.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]

QRELS = """\
q1 0 clueweb09-en0000-00-00001 2
q1 0 clueweb09-en0000-00-00002 1
q1 0 clueweb09-en0000-00-00003 0
q1 0 clueweb09-en0000-00-00004 -1
q2 0 clueweb09-en0000-00-00011 1
q2 0 clueweb09-en0000-00-00012 0
q3 0 clueweb09-en0000-00-00021 0
q4 0 clueweb09-en0000-00-00031 2
"""
RUN = """\
q1 Q0 clueweb09-en0000-00-00003 1 10.0 runA
q1 Q0 clueweb09-en0000-00-00001 2 9.0 runA
q1 Q0 clueweb09-en0000-00-00005 3 9.0 runA
q1 Q0 clueweb09-en0000-00-00002 4 9.0 runA
q1 Q0 clueweb09-en0000-00-00004 5 8.5 runA
q2 Q0 clueweb09-en0000-00-00012 1 3.0 runA
q2 Q0 clueweb09-en0000-00-00011 2 3.0 runA
q2 Q0 clueweb09-en0000-00-00013 3 2.0 runA
q3 Q0 clueweb09-en0000-00-00021 1 1.0 runA
q9 Q0 clueweb09-en0000-00-00099 1 1.0 runA
"""
RUN_B = """\
q1 Q0 clueweb09-en0000-00-00001 1 5.0 runB
q1 Q0 clueweb09-en0000-00-00002 2 4.0 runB
q2 Q0 clueweb09-en0000-00-00011 1 2.0 runB
q4 Q0 clueweb09-en0000-00-00031 1 2.0 runB
"""


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in (("qrels", QRELS), ("run", RUN), ("run_b", RUN_B)):
        p = tmp_path / f"{name}.txt"
        p.write_text(text)
        paths[name] = str(p)
    return paths


def lines_of(out):
    return [tuple(part.strip() for part in line.split("\t")) for line in out.splitlines()]


def test_ir_measures_counts_are_summed_integers_like_trec_eval(capsys, files):
    # ir_measures sums NumRet, NumRel and NumQ over queries (as trec_eval's num_* lines do)
    code, out, _ = run_cli(capsys, "trec", files["qrels"], files["run"], "--no-progress",
                           "-m", "num_ret", "-m", "num_rel", "-m", "num_rel_ret", "-m", "num_q",
                           "-m", "NumRet", "-m", "NumRel", "-m", "NumRet(rel=1)", "-m", "NumQ")
    assert code == 0
    got = {name: value for name, _, value in lines_of(out)}
    assert got == {"num_q": "3", "num_ret": "9", "num_rel": "3", "num_rel_ret": "3",
                   "NumRet": "9", "NumRel": "3", "NumRet(rel=1)": "3", "NumQ": "3"}


def test_ir_measures_counts_per_query_and_json(capsys, files):
    code, out, _ = run_cli(capsys, "trec", files["qrels"], files["run"], "--no-progress",
                           "-q", "-m", "NumRet", "-m", "NumRet(rel=2)", "-m", "NumQ")
    assert code == 0
    assert lines_of(out) == [("NumRet", "q1", "5"), ("NumRet(rel=2)", "q1", "1"),
                             ("NumRet", "q2", "3"), ("NumRet(rel=2)", "q2", "0"),
                             ("NumRet", "q3", "1"), ("NumRet(rel=2)", "q3", "0"),
                             ("NumRet", "all", "9"), ("NumRet(rel=2)", "all", "1"),
                             ("NumQ", "all", "3")]
    code, out, _ = run_cli(capsys, "trec", files["qrels"], files["run"], "--no-progress",
                           "-q", "-m", "NumRet", "-m", "NumQ", "--format", "json")
    doc = json.loads(out)["measures"]
    assert code == 0
    assert doc["NumRet"] == {"all": 9, "per_query": {"q1": 5, "q2": 3, "q3": 1}}
    assert doc["NumQ"] == {"all": 3}


def test_compare_leaves_out_counts_and_geometric_means(capsys, files):
    # gm_map's per-query values are AP: their arithmetic mean is map, not gm_map, so a
    # comparison row named gm_map would repeat map under a wrong name
    code, out, _ = run_cli(capsys, "trec", files["qrels"], files["run"], files["run_b"],
                           "--no-progress", "--n-resamples", "200", "-m", "map", "-m", "gm_map",
                           "-m", "bpref", "-m", "gm_bpref", "-m", "num_ret", "-m", "NumRet",
                           "-m", "NumRel", "-m", "NumQ")
    assert code == 0
    rows = [line.split("\t")[0].strip() for line in out.splitlines()
            if not line.startswith("#")]
    assert rows == ["measure", "map", "bpref"]
    code, out, _ = run_cli(capsys, "trec", files["qrels"], files["run"], files["run_b"],
                           "--no-progress", "--n-resamples", "200", "-m", "gm_map", "-m", "map",
                           "--format", "json")
    assert code == 0 and list(json.loads(out)["measures"]) == ["map"]


def test_ties_average_with_an_unsupported_measure_names_the_option(capsys, files, tmp_path):
    # checked before any file is read, and blamed on --ties, not on the run file
    missing = str(tmp_path / "nope.txt")
    code, out, err = run_cli(capsys, "trec", files["qrels"], missing, "--no-progress",
                             "--ties", "average", "-m", "infAP")
    assert code == 2 and out == ""
    assert err.startswith("calipers trec: error: --ties average: ")
    assert "infAP" in err and "nope.txt" not in err
    code, _, err = run_cli(capsys, "trec", files["qrels"], missing, "--no-progress",
                           "-m", "nDCG@x")
    assert code == 2 and err.startswith("calipers trec: error: -m nDCG@x: unknown measure")


def test_empty_qrels_file_is_named(capsys, files, tmp_path):
    empty = tmp_path / "empty_qrels.txt"
    empty.write_text("\n# only a comment\n")
    code, out, err = run_cli(capsys, "trec", str(empty), files["run"], "--no-progress")
    assert code == 2 and out == ""
    assert err == f"calipers trec: error: {empty}: the qrels hold no judgement\n"


def test_help_states_the_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["trec", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--format {trec,json}" in text
    assert "trec_eval's lines (default)" in text
    assert "(comparison; default 10000)" in text
    assert "(comparison; default 0.95)" in text
    assert "(comparison; default 0)" in text
    # every option of the parser appears in docs/cli.md's calipers trec section
    doc = _trec_section()
    trec = next(a for a in build_parser()._subparsers._group_actions[0].choices.items()
                if a[0] == "trec")[1]
    for action in trec._actions:
        for opt in action.option_strings:
            if opt not in ("-h", "--help"):
                assert f"`{opt}" in doc, opt


def _trec_section():
    text = (ROOT / "docs" / "cli.md").read_text()
    start = text.index("## TREC runs: `calipers trec`")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _docs_examples():
    """The files the section writes (```text blocks titled by a file name) and its commands."""
    sec = _trec_section()
    files = dict(re.findall(r"`(\w+\.txt)`:\n\n```text\n(.*?)```", sec, re.S))
    runs = []
    for block in re.findall(r"```text\n(\$ calipers trec .*?)```", sec, re.S):
        first, _, rest = block.partition("\n")
        runs.append((first[2:].split()[1:], rest))
    return files, runs


def test_docs_cli_trec_examples_run_as_written(capsys, tmp_path, monkeypatch):
    files, runs = _docs_examples()
    assert {"qrels.txt", "run_a.txt", "run_b.txt"} <= set(files) and len(runs) >= 4
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    for argv, expected in runs:
        code, out, err = run_cli(capsys, *[a.strip("'") for a in argv], "--no-progress")
        if expected.startswith("calipers trec: error:"):
            assert code == 2 and err == expected, argv
        else:
            assert code == 0 and out == expected, argv
