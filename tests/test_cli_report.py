"""``calipers report``: the main job, its formats, and its one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import sklearn.metrics as skm

import calipers
from calipers.cli import main
from calipers.cli.report import EXAMPLE
from importlib import resources


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def example_arrays():
    import csv
    path = resources.files("calipers") / "data" / EXAMPLE
    with open(str(path)) as fh:
        rows = list(csv.DictReader(fh))
    y = np.array([int(r["y"]) for r in rows])
    return y, {k: np.array([float(r[k]) for r in rows]) for k in ("logreg", "naive_bayes")}


def test_bundled_example_text(capsys):
    code, out, _ = run_cli(capsys, "report", "--n-resamples", "200", "--no-progress")
    assert code == 0
    assert "n = 569, positives = 212" in out
    assert "logreg" in out and "naive_bayes" in out
    assert "paired difference naive_bayes - logreg" in out


def test_json_fields_match_library(capsys, tmp_path):
    y, scores = example_arrays()
    f = tmp_path / "preds.csv"
    f.write_text("y,a,b\n" + "\n".join(f"{yi},{a:.17g},{b:.17g}" for yi, a, b in
                                         zip(y, scores["logreg"], scores["naive_bayes"])))
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a", "--score", "b",
                           "--format", "json", "--n-resamples", "300", "--seed", "3",
                           "--no-progress")
    assert code == 0
    rep = json.loads(out)
    assert rep["n"] == 569 and rep["n_positive"] == 212
    assert rep["prevalence"] == pytest.approx(212 / 569)
    a = rep["models"]["a"]
    assert a["roc_auc"]["estimate"] == pytest.approx(skm.roc_auc_score(y, scores["logreg"]))
    assert a["average_precision"]["estimate"] == pytest.approx(
        skm.average_precision_score(y, scores["logreg"]))
    assert a["brier"]["estimate"] == pytest.approx(skm.brier_score_loss(y, scores["logreg"]))
    assert a["log_loss"]["estimate"] == pytest.approx(skm.log_loss(y, scores["logreg"]))
    for m in ("roc_auc", "average_precision", "log_loss", "brier"):
        assert a[m]["ci_low"] <= a[m]["estimate"] <= a[m]["ci_high"]
    (cmp,) = rep["comparisons"]
    assert (cmp["a"], cmp["b"]) == ("b", "a")
    d = cmp["metrics"]["roc_auc"]
    assert d["difference"] == pytest.approx(
        skm.roc_auc_score(y, scores["naive_bayes"]) - skm.roc_auc_score(y, scores["logreg"]))
    assert d["ci_low"] <= d["difference"] <= d["ci_high"]
    assert 0 <= d["share_a_better"] <= 1 and d["n_undefined"] == 0
    # the same seed gives the same intervals as the library call
    res = calipers.paired_bootstrap(calipers.roc_auc_score, y, scores["naive_bayes"],
                                    scores["logreg"], n_resamples=300, seed=3)
    assert d["ci_low"] == pytest.approx(res.confidence_interval.low)


def test_markdown_and_plot(capsys, tmp_path):
    png = tmp_path / "curves.png"
    code, out, _ = run_cli(capsys, "report", "--format", "markdown", "--n-resamples", "50",
                           "--plot", str(png), "--no-progress")
    assert code == 0
    assert "| model" in out
    assert png.stat().st_size > 10_000


def test_non_probability_scores_skip_log_loss(capsys, tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("y,s\n1,3.5\n0,-2\n1,0.5\n0,1.0\n")
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "s",
                           "--format", "json", "--n-resamples", "20", "--no-progress")
    rep = json.loads(out)
    assert code == 0
    assert rep["models"]["s"]["log_loss"] is None
    assert rep["models"]["s"]["roc_auc"]["estimate"] == 0.75


def test_parquet(capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    f = tmp_path / "p.parquet"
    pq.write_table(pa.table({"y": [1, 0, 1, 0], "s": [0.9, 0.2, 0.4, 0.5]}), f)
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "s",
                           "--format", "json", "--n-resamples", "20", "--no-progress")
    assert code == 0 and json.loads(out)["models"]["s"]["roc_auc"]["estimate"] == 0.75


@pytest.mark.parametrize("content,args,message", [
    ("y,s\n1,0.5\n0,0.1\n", ["--score", "t"], "column 't' not found"),
    ("y,s\n1,0.5\n0,abc\n", ["--score", "s"], "column 's', row 2 (line 3): 'abc' is not a number"),
    ("y,s\n1,0.5\n0,nan\n", ["--score", "s"], "column 's', row 2 (line 3): nan is not a finite number"),
    ("y,s\n1,0.5\n0,\n", ["--score", "s"], "column 's', row 2 (line 3): empty value"),
    ("y,s\n1,0.5\n2,0.1\n", ["--score", "s"], "column 'y', row 2 (line 3): label 2 is not 0 or 1"),
    ("y,s\n1,0.5\n1,0.1\n", ["--score", "s"], "has only label 1"),
    ("y,s\n", ["--score", "s"], "no data rows"),
])
def test_bad_files_one_line_exit_2(capsys, tmp_path, content, args, message):
    f = tmp_path / "bad.csv"
    f.write_text(content)
    code, out, err = run_cli(capsys, "report", str(f), "--label", "y", *args, "--no-progress")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and str(f) in err and message in err


def test_missing_file_and_args(capsys, tmp_path):
    code, _, err = run_cli(capsys, "report", str(tmp_path / "nope.csv"), "--label", "y",
                           "--score", "s")
    assert code == 2 and "no such file" in err
    code, _, err = run_cli(capsys, "report", str(tmp_path / "nope.csv"), "--score", "s")
    assert code == 2 and "--label COL is required" in err


def test_console_script_entry_point():
    out = subprocess.run([sys.executable, "-m", "calipers", "report", "--n-resamples", "20",
                          "--no-progress", "--format", "json"],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["n"] == 569
