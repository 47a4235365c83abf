"""``calipers report`` with three or more models: simultaneous intervals and Romano-Wolf p.

The report's numbers must be the library's: one ``many_models_bootstrap`` per metric with the
report's seed and design (stratified for ROC AUC and AP), the first model the baseline.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import calipers
from calipers.cli import main


def _write(tmp_path, n=150, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(np.int64)
    u = rng.normal(size=n)
    scores = {f"m{i}": 1 / (1 + np.exp(-(0.7 * u + 0.7 * rng.normal(size=n) + mu * y)))
              for i, mu in enumerate((0.8, 1.0, 1.3, 1.5))}
    f = tmp_path / "preds.csv"
    f.write_text("y," + ",".join(scores) + "\n" + "\n".join(
        f"{y[i]}," + ",".join(f"{scores[k][i]:.17g}" for k in scores) for i in range(n)) + "\n")
    return f, y, scores


def _report(capsys, f, names, *extra):
    argv = ["report", str(f), "--label", "y"]
    for k in names:
        argv += ["--score", k]
    code = main(argv + ["--n-resamples", "120", "--seed", "5", "--no-progress", *extra])
    assert code == 0
    return capsys.readouterr().out


METRICS = [("roc_auc", calipers.roc_auc_score, True), ("average_precision",
           calipers.average_precision_score, True), ("log_loss", calipers.log_loss, False),
           ("brier", calipers.brier_score_loss, False)]


def test_json_simultaneous_columns_equal_the_library(capsys, tmp_path):
    f, y, scores = _write(tmp_path)
    names = list(scores)
    rep = json.loads(_report(capsys, f, names, "--format", "json"))
    assert rep["simultaneous"]["baseline"] == "m0"
    for key, fn, strat in METRICS:
        res = calipers.many_models_bootstrap(fn, y, *[scores[k] for k in names],
                                             n_resamples=120, seed=5, stratify=strat)
        assert res.comparisons == ((1, 0), (2, 0), (3, 0))
        for j, (a, b) in enumerate(res.comparisons):
            c = next(c for c in rep["comparisons"] if c["a"] == names[a] and c["b"] == "m0")
            m = c["metrics"][key]
            assert m["simultaneous_ci_low"] == res.simultaneous_interval.low[j]
            assert m["simultaneous_ci_high"] == res.simultaneous_interval.high[j]
            assert m["pvalue_romano_wolf"] == res.pvalue_romano_wolf[j]
            assert m["pvalue_max_t_unadjusted"] == res.pvalue[j]
            assert m["critical_value"] == res.critical_value
            assert m["n_comparisons"] == 3
            # the paired columns rest on the same resamples
            assert m["difference"] == res.difference[j]
            assert (m["ci_low"], m["ci_high"]) == (res.confidence_interval.low[j],
                                                   res.confidence_interval.high[j])


def test_text_table(capsys, tmp_path):
    f, y, scores = _write(tmp_path)
    out = _report(capsys, f, list(scores))
    assert "all comparisons with m0 at once" in out
    res = calipers.many_models_bootstrap(calipers.roc_auc_score, y, *scores.values(),
                                         n_resamples=120, seed=5, stratify=True)
    lo, hi = res.simultaneous_interval.low[2], res.simultaneous_interval.high[2]
    line = next(ln for ln in out.splitlines() if ln.startswith("m3 - m0") and "ROC AUC" in ln)
    assert f"[{lo:.4f}, {hi:.4f}]" in line


@pytest.mark.parametrize("k", [1, 2])
def test_two_models_or_fewer_have_no_simultaneous_section(capsys, tmp_path, k):
    f, _, scores = _write(tmp_path)
    rep = json.loads(_report(capsys, f, list(scores)[:k], "--format", "json"))
    assert "simultaneous" not in rep
    for c in rep["comparisons"]:
        for m in c["metrics"].values():
            assert "pvalue_romano_wolf" not in m
