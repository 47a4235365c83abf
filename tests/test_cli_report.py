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
    # a p of 0.0 reads as "below one replicate": the JSON says how far that is
    assert d["pvalue_resolution"] == pytest.approx(1 / 300)
    # the same seed gives the same intervals as the library call
    res = calipers.paired_bootstrap(calipers.roc_auc_score, y, scores["naive_bayes"],
                                    scores["logreg"], n_resamples=300, seed=3, stratify=True)
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


# --------------------------------------------------------------------------- issue 5/6 options

@pytest.fixture
def sliced_file(tmp_path):
    rng = np.random.default_rng(0)
    n = 400
    g = rng.choice(["north", "south", "east", "tiny"], n, p=[.4, .4, .18, .02])
    y = (rng.random(n) < 0.3).astype(int)
    a = np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1)
    b = np.clip(0.2 * y + rng.random(n) * 0.8, 0, 1)
    y[g == "tiny"] = 1
    f = tmp_path / "sl.csv"
    f.write_text("y,a,b,region,user\n" + "\n".join(
        f"{y[i]},{a[i]:.17g},{b[i]:.17g},{g[i]},{i // 4}" for i in range(n)))
    return f, y, a, b, g


def test_threshold_decisions_mcnemar_churn(capsys, sliced_file):
    f, y, a, b, _ = sliced_file
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a", "--score", "b",
                           "--threshold", "0.5", "--format", "json", "--n-resamples", "50",
                           "--no-progress")
    assert code == 0
    rep = json.loads(out)
    d = rep["decisions"]["models"]["a"]
    pa, pb = (a >= 0.5).astype(int), (b >= 0.5).astype(int)
    tn, fp, fn, tp = skm.confusion_matrix(y, pa).ravel()
    assert (d["tp"], d["fp"], d["fn"], d["tn"]) == (tp, fp, fn, tn)
    assert d["f1"] == pytest.approx(skm.f1_score(y, pa))
    assert d["mcc"] == pytest.approx(skm.matthews_corrcoef(y, pa))
    (c,) = rep["decisions"]["comparisons"]
    assert c["churn"] == pytest.approx(np.mean(pa != pb))
    assert c["mcnemar_exact"]["a_right_b_wrong"] == int(((pb == y) & (pa != y)).sum())
    # DeLong beside the bootstrap for AUC
    assert 0 <= rep["comparisons"][0]["metrics"]["roc_auc"]["delong_pvalue"] <= 1


def test_cost_threshold(capsys, sliced_file):
    f, y, a, _, _ = sliced_file
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a",
                           "--cost-fp", "1", "--cost-fn", "3", "--format", "json",
                           "--n-resamples", "20", "--no-progress")
    d = json.loads(out)["decisions"]["models"]["a"]
    cost = lambda t: (((a >= t) & (y == 0)).sum() + 3 * ((a < t) & (y == 1)).sum()) / len(y)  # noqa: E731
    best = min(cost(t) for t in np.append(np.unique(a), np.inf))
    assert d["expected_cost"] == pytest.approx(best)
    assert cost(d["threshold"]) == pytest.approx(best)


def test_slices_listed_never_dropped(capsys, sliced_file):
    f, y, a, _, g = sliced_file
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a",
                           "--slice", "region", "--format", "json", "--n-resamples", "20",
                           "--no-progress")
    sl = json.loads(out)["slices"]["models"]["a"]
    rows = {r["slice"]: r for r in sl["rows"]}
    assert set(rows) == {"north", "south", "east", "tiny"}
    assert rows["tiny"]["roc_auc"] is None and rows["tiny"]["note"] == "one class only"
    m = g == "east"
    assert rows["east"]["roc_auc"] == pytest.approx(skm.roc_auc_score(y[m], a[m]))
    assert rows["east"]["n"] == m.sum()
    assert rows["east"]["recall"] == pytest.approx(skm.recall_score(y[m], a[m] >= 0.5))
    defined = [r["roc_auc"] for r in sl["rows"] if r["defined"]]
    assert defined == sorted(defined)  # worst first


def test_cluster_bootstrap_groups(capsys, sliced_file):
    f, *_ = sliced_file
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a", "--score", "b",
                           "--groups", "user", "--format", "json", "--n-resamples", "50",
                           "--no-progress")
    rep = json.loads(out)
    assert code == 0 and rep["resampling"] == "cluster"
    # Beside cluster intervals, the clustered DeLong p (Obuchowski), not the row-wise one.
    auc = rep["comparisons"][0]["metrics"]["roc_auc"]
    assert auc["delong"].startswith("clustered")
    _, y, a, b, _ = sliced_file
    user = np.arange(len(y)) // 4
    assert auc["delong_pvalue"] == pytest.approx(
        float(calipers.delong_test(y, b, a, groups=user).pvalue))
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a", "--score", "b",
                           "--groups", "user", "--n-resamples", "50", "--no-progress")
    assert "clustered DeLong p" in out


def test_several_comparisons_get_holm_adjusted_p(capsys):
    code, out, _ = run_cli(capsys, "report", "--format", "json", "--n-resamples", "200",
                           "--no-progress")
    rep = json.loads(out)
    entries = [m for c in rep["comparisons"] for m in c["metrics"].values()]
    assert rep["multiplicity"] == {"method": "holm", "n_tests": len(entries)} and len(entries) == 4
    raw = np.array([m["pvalue"] for m in entries])
    np.testing.assert_allclose([m["pvalue_holm"] for m in entries],
                               calipers.adjust_pvalues(raw, method="holm"))
    code, out, _ = run_cli(capsys, "report", "--n-resamples", "200", "--no-progress")
    assert "p (Holm, 4 tests)" in out
    # p = 0 from 200 replicates is printed as below the resolution, never 0.0000
    assert "< 5e-3" in out and "0.0000 " not in out.split("paired difference")[1]


def test_multiclass_file(capsys, tmp_path):
    f = tmp_path / "mc.csv"
    f.write_text("y,p0,p1,p2\n0,0.7,0.2,0.1\n1,0.1,0.8,0.1\n2,0.2,0.2,0.6\n1,0.5,0.4,0.1\n"
                 "0,0.3,0.3,0.4\n")
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "p0",
                           "--score", "p1", "--score", "p2", "--multiclass", "--format", "json")
    m = json.loads(out)["multiclass"]
    y = np.array([0, 1, 2, 1, 0])
    P = np.array([[.7, .2, .1], [.1, .8, .1], [.2, .2, .6], [.5, .4, .1], [.3, .3, .4]])
    assert m["accuracy"] == pytest.approx(0.6)
    assert m["roc_auc_ovr_macro"] == pytest.approx(skm.roc_auc_score(y, P, multi_class="ovr"))
    assert m["log_loss"] == pytest.approx(skm.log_loss(y, P))
    f.write_text("y,p0,p1\n0,0.7,0.2\n")
    code, _, err = run_cli(capsys, "report", str(f), "--label", "y", "--score", "p0",
                           "--score", "p1", "--multiclass")
    assert code == 2 and "sum to 0.9" in err


@pytest.mark.parametrize("args,message", [
    (["--cost-fp", "1"], "--cost-fp and --cost-fn go together"),
    (["--threshold", "0.5", "--cost-fp", "1", "--cost-fn", "1"], "not both"),
    (["--n-bins", "0"], "--n-bins must be at least 1"),
    (["--n-resamples", "0"], "--n-resamples must be at least 1"),
])
def test_bad_options(capsys, args, message):
    code, _, err = run_cli(capsys, "report", *args, "--no-progress")
    assert code == 2 and message in err


def test_duplicate_header_bad_plot_nan_threshold_one_line(capsys, tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("y,a,a\n1,0.9,0.3\n0,0.2,0.1\n")
    code, _, err = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a")
    assert code == 2 and "column name 'a' appears more than once" in err
    code, _, err = run_cli(capsys, "report", "--plot", str(tmp_path / "no" / "x.png"))
    assert code == 2 and "does not exist" in err
    code, _, err = run_cli(capsys, "report", "--plot", str(tmp_path / "x.txt"))
    assert code == 2 and "unknown image format 'txt'" in err
    code, _, err = run_cli(capsys, "report", "--threshold", "nan")
    assert code == 2 and "--threshold must be a finite number" in err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and calipers.__version__ in capsys.readouterr().out


def test_trec_empty_run_is_an_error(capsys, tmp_path):
    q = tmp_path / "q.txt"
    q.write_text("1 0 d1 1\n")
    r = tmp_path / "r.txt"
    r.write_text("")
    code, _, err = run_cli(capsys, "trec", str(q), str(r))
    assert code == 2 and "holds no document" in err


def test_no_negative_zero_in_text_table(capsys, tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("y,a,b\n" + "\n".join(f"{i % 2},{0.3 + 0.01 * (i % 7)},{0.3 + 0.01 * (i % 7)}"
                                       for i in range(40)))
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a", "--score", "b",
                           "--n-resamples", "30", "--no-progress")
    assert code == 0 and "-0.0000" not in out and " -0 " not in out


def test_cli_uses_public_functions_only():
    # The CLI is a thin layer over the public API: no calipers._private module in cli/*.py
    # (its own cli._io / cli._errors helpers are fine).
    import pathlib
    import re

    import calipers.cli

    private = re.compile(r"^\s*(from\s+(calipers(\.\w+)*\._\w+|\.\.\s*_\w+|\.\._\w+|"
                         r"\.\.\s+import\s+.*\b_\w+)|import\s+calipers(\.\w+)*\._\w+)", re.M)
    also = re.compile(r"\bcalipers(\.\w+)*\._\w+")
    files = sorted(pathlib.Path(calipers.cli.__file__).parent.glob("*.py"))
    assert len(files) >= 3
    for f in files:
        text = f.read_text()
        assert not private.findall(text), (f.name, private.findall(text))
        assert not also.findall(text), (f.name, also.findall(text))
    # the pattern does catch what it must
    assert private.search("from .. import (_bootstrap, x)\n")
    assert private.search("from .._trec import read_run\n")
    assert private.search("    from calipers.retrieval._measures import _Ranking\n")
    assert not private.search("from ._io import read_predictions\n")


def test_tiny_file_warns_in_the_report(capsys, tmp_path):
    f = tmp_path / "tiny.csv"
    f.write_text("y,a,b\n0,0.1,0.3\n1,0.9,0.7\n0,0.2,0.4\n1,0.8,0.6\n")
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a",
                           "--score", "b", "--n-resamples", "100", "--no-progress")
    assert code == 0
    assert "warning: the bootstrap interval rests on 4 resampling rows" in out
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a",
                           "--n-resamples", "100", "--no-progress", "--format", "json")
    assert any("4 resampling rows" in w for w in json.loads(out)["warnings"])


# --------------------------------------------------------------------------- issue 11: labels, TSV, patterns

@pytest.fixture
def yes_no_file(tmp_path):
    rng = np.random.default_rng(5)
    n = 120
    y = rng.random(n) < 0.4
    a = np.round(np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1), 2)   # ties on purpose
    b = np.round(np.clip(0.2 * y + 0.8 * rng.random(n), 0, 1), 2)
    lab = np.where(y, "yes", "no")
    f = tmp_path / "yn.csv"
    f.write_text("outcome,a,b\n" + "\n".join(f"{lab[i]},{a[i]},{b[i]}" for i in range(n)))
    return f, lab, a, b


def test_pos_label_string_labels_match_library(capsys, yes_no_file):
    f, lab, a, b = yes_no_file
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "outcome", "--pos-label", "yes",
                           "--score", "a", "--score", "b", "--format", "json",
                           "--n-resamples", "50", "--no-progress")
    assert code == 0
    rep = json.loads(out)
    assert rep["n_positive"] == int((lab == "yes").sum())
    # the library's own pos_label handling on the string labels
    assert rep["models"]["a"]["roc_auc"]["estimate"] == pytest.approx(
        float(calipers.roc_auc_score(lab, a, pos_label="yes")))
    assert rep["models"]["b"]["average_precision"]["estimate"] == pytest.approx(
        float(calipers.average_precision_score(lab, b, pos_label="yes")))
    assert rep["models"]["a"]["roc_auc"]["estimate"] == pytest.approx(
        skm.roc_auc_score(lab == "yes", a))
    # naming the other class flips the problem
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "outcome", "--pos-label", "no",
                           "--score", "a", "--format", "json", "--n-resamples", "20",
                           "--no-progress")
    assert json.loads(out)["models"]["a"]["roc_auc"]["estimate"] == pytest.approx(
        float(calipers.roc_auc_score(lab, a, pos_label="no")))


def test_pos_label_errors_exit_2(capsys, yes_no_file, tmp_path):
    f, *_ = yes_no_file
    code, out, err = run_cli(capsys, "report", str(f), "--label", "outcome", "--pos-label", "Yes",
                             "--score", "a", "--no-progress")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--pos-label 'Yes' is not a label in column 'outcome'; its labels are no, yes" in err
    code, _, err = run_cli(capsys, "report", str(f), "--label", "outcome", "--score", "a",
                           "--no-progress")
    assert code == 2 and "is not 0 or 1; name the positive class with --pos-label" in err
    g = tmp_path / "three.csv"
    g.write_text("y,s\na,0.1\nb,0.2\nc,0.3\n")
    code, _, err = run_cli(capsys, "report", str(g), "--label", "y", "--pos-label", "a",
                           "--score", "s", "--no-progress")
    assert code == 2 and "3 distinct labels (a, b, c)" in err


def test_true_false_labels_and_numeric_pos_label(capsys, tmp_path):
    f = tmp_path / "tf.csv"
    f.write_text("y,s\nTrue,0.9\nFalse,0.2\nTrue,0.4\nFalse,0.5\n")
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "s",
                           "--format", "json", "--n-resamples", "20", "--no-progress")
    assert code == 0 and json.loads(out)["models"]["s"]["roc_auc"]["estimate"] == 0.75
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "s",
                           "--pos-label", "False", "--format", "json", "--n-resamples", "20",
                           "--no-progress")
    assert json.loads(out)["models"]["s"]["roc_auc"]["estimate"] == 0.25
    g = tmp_path / "num.csv"
    g.write_text("y,s\n1.0,0.9\n0.0,0.2\n1.0,0.4\n0.0,0.5\n")
    code, out, _ = run_cli(capsys, "report", str(g), "--label", "y", "--score", "s",
                           "--pos-label", "1", "--format", "json", "--n-resamples", "20",
                           "--no-progress")
    assert code == 0 and json.loads(out)["models"]["s"]["roc_auc"]["estimate"] == 0.75


def test_tsv_by_extension_and_sep(capsys, tmp_path):
    body = "y\ts\n1\t0.9\n0\t0.2\n1\t0.4\n0\t0.5\n"
    for name, extra in (("p.tsv", []), ("p.txt", ["--sep", "\\t"]), ("p.dat", ["--sep", "tab"])):
        f = tmp_path / name
        f.write_text(body)
        code, out, err = run_cli(capsys, "report", str(f), "--label", "y", "--score", "s", *extra,
                                 "--format", "json", "--n-resamples", "20", "--no-progress")
        assert code == 0, err
        assert json.loads(out)["models"]["s"]["roc_auc"]["estimate"] == 0.75
    g = tmp_path / "semi.csv"
    g.write_text(body.replace("\t", ";"))
    code, out, _ = run_cli(capsys, "report", str(g), "--label", "y", "--score", "s", "--sep", ";",
                           "--format", "json", "--n-resamples", "20", "--no-progress")
    assert code == 0 and json.loads(out)["n"] == 4
    # a tab file read as CSV: one column; the error says what to try
    h = tmp_path / "tabs.csv"
    h.write_text(body)
    code, _, err = run_cli(capsys, "report", str(h), "--label", "y", "--score", "s",
                           "--no-progress")
    assert code == 2 and "tab-separated (--sep" in err
    code, _, err = run_cli(capsys, "report", str(h), "--label", "y", "--score", "s",
                           "--sep", "ab", "--no-progress")
    assert code == 2 and "--sep must be one character" in err


MC_ROWS = [("cat", .7, .2, .1), ("dog", .1, .8, .1), ("eel", .2, .2, .6), ("dog", .5, .4, .1),
           ("cat", .3, .3, .4), ("eel", .1, .3, .6)]


@pytest.mark.parametrize("pattern", ["p_", "p_*", "p_???"])
def test_multiclass_pattern_and_class_names(capsys, tmp_path, pattern):
    f = tmp_path / "mc.tsv"
    f.write_text("y\tp_cat\tp_dog\tp_eel\tother\n" + "\n".join(
        f"{r[0]}\t{r[1]}\t{r[2]}\t{r[3]}\t{i}" for i, r in enumerate(MC_ROWS)))
    code, out, err = run_cli(capsys, "report", str(f), "--label", "y", "--multiclass", pattern,
                             "--format", "json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["scores"] == ["p_cat", "p_dog", "p_eel"]
    m = rep["multiclass"]
    assert list(m["classes"]) == ["cat", "dog", "eel"]
    y = np.array([{"cat": 0, "dog": 1, "eel": 2}[r[0]] for r in MC_ROWS])
    P = np.array([r[1:] for r in MC_ROWS])
    assert m["log_loss"] == pytest.approx(skm.log_loss(y, P))
    assert m["roc_auc_ovr_macro"] == pytest.approx(skm.roc_auc_score(y, P, multi_class="ovr"))
    assert m["accuracy"] == pytest.approx(np.mean(P.argmax(1) == y))


def test_multiclass_pattern_errors_and_file_first(capsys, tmp_path):
    f = tmp_path / "mc.csv"
    f.write_text("y,p0,p1,p2\n0,0.7,0.2,0.1\n1,0.1,0.8,0.1\n2,0.2,0.2,0.6\n")
    code, _, err = run_cli(capsys, "report", str(f), "--label", "y", "--multiclass", "q_")
    assert code == 2 and "no column matches --multiclass 'q_'" in err
    code, _, err = run_cli(capsys, "report", str(f), "--label", "y", "--multiclass", "p",
                           "--score", "p0")
    assert code == 2 and "not both" in err
    # the old flag form, the file after --multiclass: still read as the file
    code, out, err = run_cli(capsys, "report", "--multiclass", str(f), "--label", "y",
                             "--score", "p0", "--score", "p1", "--score", "p2", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["multiclass"]["accuracy"] == 1.0
    g = tmp_path / "bad.csv"
    g.write_text("y,p0,p1\n0,0.7,0.3\nfish,0.1,0.9\n")
    code, _, err = run_cli(capsys, "report", str(g), "--label", "y", "--multiclass", "p")
    assert code == 2 and "row 2 (line 3): label 'fish' is not an integer class in 0..1" in err


def test_small_pvalues_never_print_as_zero(capsys, tmp_path):
    # b = 0, c = 24 discordant pairs: McNemar exact p = 2 * 0.5**24, far below 1e-4
    n = 200
    y = np.tile([0, 1], n // 2)
    a = np.where(y == 1, 0.8, 0.2)
    b = a.copy()
    b[:48][y[:48] == 1] = 0.3
    f = tmp_path / "p.csv"
    f.write_text("y,a,b\n" + "\n".join(f"{y[i]},{a[i]},{b[i]}" for i in range(n)))
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a", "--score",
                           "b", "--threshold", "0.5", "--n-resamples", "200", "--no-progress")
    assert code == 0
    assert "McNemar exact p < 1e-4" in out and "p = 0.0000" not in out
    # bootstrap p-values: below the resolution of 200 replicates, never 0.0000
    diff = out.split("paired difference")[1].split("decisions")[0]
    assert "< 5e-3" in diff and " 0.0000 " not in diff.split("log loss")[1]
    m = calipers.mcnemar(calipers.mcnemar_table(y, (b >= .5).astype(int), (a >= .5).astype(int)),
                         method="exact")
    assert float(m.pvalue) < 1e-4


def test_cost_thresholds_say_in_sample(capsys, sliced_file):
    f, *_ = sliced_file
    args = ["report", str(f), "--label", "y", "--score", "a", "--cost-fp", "1", "--cost-fn", "3",
            "--n-resamples", "20", "--no-progress"]
    code, out, _ = run_cli(capsys, *args)
    assert code == 0 and "warning: the thresholds were chosen by cost on the same rows" in out
    code, out, _ = run_cli(capsys, *args, "--format", "json")
    assert json.loads(out)["decisions"]["in_sample"] is True
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a",
                           "--threshold", "0.5", "--n-resamples", "20", "--no-progress")
    assert "in-sample" not in out


def test_report_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as e:
        main(["report", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    for opt in ("--pos-label LABEL", "--sep CHAR", "--multiclass [PATTERN]"):
        assert opt in out


def test_getting_started_shows_the_real_output(capsys):
    """docs/index.md and docs/cli.md paste the bundled example's output: it must still be it."""
    import pathlib

    code, out, _ = run_cli(capsys, "report", "--no-progress")
    assert code == 0
    docs = pathlib.Path(__file__).resolve().parents[1] / "docs"
    for page in ("index.md", "cli.md"):
        assert out.strip() in (docs / page).read_text(), page


def test_one_model_no_spurious_difference_warning(capsys, tmp_path):
    # one model runs as A against itself: its differences are 0 by construction and say nothing
    code, out, _ = run_cli(capsys, "report", "--score", "logreg", "--n-resamples", "50",
                           "--no-progress")
    assert code == 0 and "warning" not in out
    f = tmp_path / "few.csv"
    f.write_text("y,a\n0,0.1\n1,0.9\n0,0.2\n1,0.8\n0,0.3\n1,0.7\n0,0.4\n1,0.6\n0,0.5\n1,0.55\n"
                 "0,0.45\n1,0.65\n")
    code, out, _ = run_cli(capsys, "report", str(f), "--label", "y", "--score", "a",
                           "--n-resamples", "50", "--format", "json", "--no-progress")
    # every stratified resample of a perfectly separated file has AUC 1: one distinct value
    assert any("1 distinct replicated values" in w for w in json.loads(out)["warnings"])
    assert not any("differences" in w for w in json.loads(out)["warnings"])
