"""``calipers report``: metrics with bootstrap intervals for per-example predictions.

Reads a CSV, TSV or Parquet file (or the bundled example when no file is given),
prints n, prevalence, and per model ROC AUC, average precision, and, where
the scores are probabilities, log loss and Brier score, each with a paired
bootstrap percentile interval; for two or more models, every later model is
compared with the first by a paired bootstrap of the difference (with
DeLong's test beside it for ROC AUC); with three or more models, also
simultaneous (max-T) intervals and Romano-Wolf step-down p-values over the
comparisons with the first model, from one bootstrap on shared resamples.

With --time/--event (survival) it gives Harrell's and Uno's C per model instead, and with
--propensity/--reward/--target (logged data) off-policy estimates of a new policy's value.

Options add: decisions at a ``--threshold`` (or the cost-minimising threshold
from ``--cost-fp``/``--cost-fn``, chosen in-sample) with precision, recall, F1,
MCC, the confusion matrix, McNemar's test and the churn between two models;
expected calibration error (and a reliability diagram in ``--plot``);
per-slice rows (``--slice COL``); cluster resampling (``--groups COL``);
selective prediction (``--selective``: AURC); and multiclass files
(``--multiclass PATTERN``: one probability column per class).
"""

from __future__ import annotations

import json
import math
import warnings
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

import calipers
from ._common import (_DESIGN_WARNINGS, _adjust, _comparison_entry, _fmt, _num, _p, _p_is,
                      _quiet, _run, add_bootstrap_arguments, difference_entry, progress_bar,
                      render_comparisons, warning_line)
from . import _beyond
from ._errors import InputError
from ._io import Table, match_columns, read_predictions

EXAMPLE = "breast_cancer_oof.csv"
EXAMPLE_LABEL = "y"
EXAMPLE_SCORES = ["logreg", "naive_bayes"]

# (key, title, function, higher is better, needs probabilities)
METRICS = [
    ("roc_auc", "ROC AUC", calipers.roc_auc_score, True, False),
    ("average_precision", "AP", calipers.average_precision_score, True, False),
    ("log_loss", "log loss", calipers.log_loss, False, True),
    ("brier", "Brier", calipers.brier_score_loss, False, True),
]


EPILOG = """examples:
  calipers report                                  the bundled example
  calipers report preds.csv --label y --score a --score b --threshold 0.5
  calipers report preds.tsv --label outcome --pos-label yes --score model
  calipers report preds.csv --label y --multiclass 'p_*'
  calipers report surv.csv --time time --event event --score risk_a --score risk_b
  calipers report log.csv --propensity prop --reward reward --target pi_new
"""


def add_parser(sub):
    import argparse
    import textwrap

    p = sub.add_parser(
        "report", help="metrics with paired-bootstrap intervals for a predictions file",
        description="\n\n".join(textwrap.fill(par.replace("\n", " "), 79)
                                  for par in (__doc__ or "").split("\n\n")[1:3]),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?", help="CSV, TSV or Parquet of per-example predictions, "
                   "one row per example (default: the bundled breast-cancer example)")
    g = p.add_argument_group("columns")
    g.add_argument("--label", metavar="COL", help="column of labels: 0/1 or true/false, or any "
                   "two labels with --pos-label (default for the example: y)")
    g.add_argument("--pos-label", metavar="LABEL",
                   help="the positive class in --label, for labels such as yes/no: a row is "
                   "positive iff its label equals LABEL")
    g.add_argument("--score", action="append", dest="scores", metavar="COL",
                   help="score column of one model; repeat for several models (the first is "
                   "the baseline the others are compared with)")
    g.add_argument("--multiclass", nargs="?", const=True, default=False, metavar="PATTERN",
                   help="one model's class probabilities: the columns starting with PATTERN "
                   "(a prefix such as p_, or a glob such as 'p_*'), or else each --score, one per "
                   "class; labels are 0..K-1 in that order or the class names (the column names "
                   "without the prefix). Put FILE before --multiclass")
    g.add_argument("--sep", metavar="CHAR", help="field separator of a text file (default: tab "
                   "for .tsv files, else comma; '\\t' or 'tab' for a tab)")
    _beyond.add_arguments(p)
    g = add_bootstrap_arguments(p)
    g.add_argument("--no-stratify", dest="stratify", action="store_false",
                   help="plain resampling for AUC/AP (default: positives and negatives resampled "
                   "separately, so no replicate lacks a class)")
    g.add_argument("--groups", metavar="COL",
                   help="cluster bootstrap: resample the groups of COL and keep their rows")
    g = p.add_argument_group("decisions, calibration and slices")
    g.add_argument("--threshold", type=float, metavar="T",
                   help="decisions: positive iff score >= T")
    g.add_argument("--cost-fp", type=float, metavar="COST", help="with --cost-fn: per model, "
                   "the threshold minimising COST_FP*FP + COST_FN*FN on these rows (in-sample)")
    g.add_argument("--cost-fn", type=float, metavar="COST", help="cost of a false negative")
    g.add_argument("--n-bins", type=int, default=10, metavar="N",
                   help="equal-width bins for the expected calibration error (default 10)")
    g.add_argument("--slice", metavar="COL", help="per-slice n, prevalence, AUC and recall")
    g.add_argument("--min-support", type=int, default=30, metavar="N",
                   help="slices with fewer rows are listed as such (default 30)")
    g = p.add_argument_group("output")
    g.add_argument("--format", choices=["text", "json", "markdown"], default="text",
                   help="text tables (default), JSON with every number, or Markdown tables")
    g.add_argument("--plot", metavar="PATH", help="write ROC and PR curves of every model "
                   "(and a reliability diagram for probabilities) to PATH (.png, .pdf, .svg)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _resolve(args, need_scores=True):
    if args.file is None:
        path = resources.files("calipers") / "data" / EXAMPLE
        return Path(str(path)), args.label or EXAMPLE_LABEL, args.scores or EXAMPLE_SCORES
    if not args.label:
        raise InputError("--label COL is required with a file")
    if not args.scores and need_scores:
        raise InputError("at least one --score COL is required with a file")
    return Path(args.file), args.label, args.scores or []


def compute(y, scores: dict, *, n_resamples=1000, confidence_level=0.95, seed=0,
            stratify=True, groups=None, progress=None) -> dict:
    """The bootstrap part of the report as a plain dict (what ``--format json`` prints).

    ``stratify`` applies to ROC AUC and AP (fixed class counts per replicate);
    ``groups`` (one id per row) switches every metric to the cluster bootstrap.
    """
    names = list(scores)
    _DESIGN_WARNINGS.clear()
    probs = {k: bool(np.all((v >= 0) & (v <= 1))) for k, v in scores.items()}
    out = {
        "n": int(y.shape[0]),
        "n_positive": int(y.sum()),
        "prevalence": float(y.mean()),
        "n_resamples": n_resamples,
        "confidence_level": confidence_level,
        "seed": seed,
        "resampling": "cluster" if groups is not None else
                      ("stratified for ROC AUC and AP" if stratify else "plain"),
        "interval": "percentile",
        "models": {k: {} for k in names},
        "comparisons": [],
    }
    for key, _title, fn, higher, needs_prob in METRICS:
        eligible = [k for k in names if probs[k] or not needs_prob]
        for k in names:
            if k not in eligible:
                out["models"][k][key] = None  # not probabilities: no log loss / Brier
        if not eligible:
            continue
        base = eligible[0]
        strat = stratify and groups is None and key in ("roc_auc", "average_precision")
        for other in eligible[1:] or [base]:
            with np.errstate(all="ignore"):
                res = _run(fn, y, scores[other], scores[base], n_resamples,
                           confidence_level, seed, strat, groups, progress)
            # A = other, B = base: "difference" reads as other - base.
            for name, est, ci in ((other, res.estimate_a, res.interval_a),
                                  (base, res.estimate_b, res.interval_b)):
                out["models"][name].setdefault(key, {
                    "estimate": _num(est), "ci_low": _num(ci.low), "ci_high": _num(ci.high)})
            if other != base and base == names[0]:
                cmp = _comparison_entry(out, other, base)
                entry = difference_entry(res, higher)
                if key == "roc_auc":
                    # With clusters, Obuchowski's clustered variance: the ordinary one
                    # assumes independent rows and would disagree with the intervals.
                    with np.errstate(all="ignore"):
                        d = calipers.delong_test(y, scores[other], scores[base], groups=groups)
                    entry["delong_pvalue"] = _num(d.pvalue)
                    entry["delong"] = "clustered (Obuchowski 1997)" if groups is not None \
                        else "DeLong et al. 1988"
                cmp["metrics"][key] = entry
        if len(eligible) > 2 and base == names[0]:
            _simultaneous(out, key, fn, y, [scores[k] for k in eligible], eligible,
                          n_resamples=n_resamples, confidence_level=confidence_level, seed=seed,
                          stratify=strat, groups=groups, progress=progress)
    _adjust(out)
    out["warnings"] = list(_DESIGN_WARNINGS)
    _DESIGN_WARNINGS.clear()
    return out


def _simultaneous(out, key, fn, y, score_list, model_names, *, n_resamples, confidence_level,
                  seed, stratify, groups, progress) -> None:
    """Max-T intervals and Romano-Wolf p-values over one metric's comparisons with the first model.

    One :func:`calipers.many_models_bootstrap` with the report's seed and design: the
    family is the comparisons of this metric against the baseline (each later model
    minus the first), on the same resamples as the paired rows above.
    """
    from calipers import BootstrapDesignWarning, UndefinedMetricWarning

    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("always", BootstrapDesignWarning)
        res = calipers.many_models_bootstrap(
            fn, y, *score_list, baseline=0, n_resamples=n_resamples,
            confidence_level=confidence_level, seed=seed, stratify=stratify, groups=groups,
            progress=progress)
    for w in caught:
        msg = str(w.message)
        if issubclass(w.category, BootstrapDesignWarning) and msg not in _DESIGN_WARNINGS:
            _DESIGN_WARNINGS.append(msg)
    out["simultaneous"] = {
        "method": "max-T (studentised by the bootstrap SD) and Romano-Wolf step-down p-values",
        "family": "per metric: every later model minus the first",
        "baseline": model_names[0]}
    for j, (a, _b) in enumerate(res.comparisons):
        entry = _comparison_entry(out, model_names[a], model_names[0])["metrics"][key]
        entry.update({
            "simultaneous_ci_low": _num(res.simultaneous_interval.low[j]),
            "simultaneous_ci_high": _num(res.simultaneous_interval.high[j]),
            "critical_value": _num(res.critical_value),
            "pvalue_max_t_unadjusted": _num(res.pvalue[j]),
            "pvalue_romano_wolf": _num(res.pvalue_romano_wolf[j]),
            "n_comparisons": len(res.comparisons),
        })


def render_simultaneous(rep: dict, titles: dict, tablefmt: str) -> list[str]:
    """The table of simultaneous intervals and Romano-Wolf p-values (three or more models)."""
    from tabulate import tabulate

    if "simultaneous" not in rep:
        return []
    floor_b = max(1e-4, 1.0 / rep["n_resamples"])
    rows = []
    for key in titles:    # one family per metric: its rows together
        for c in rep["comparisons"]:
            m = c["metrics"].get(key)
            if m is None or "pvalue_romano_wolf" not in m:
                continue
            rows.append([f"{c['a']} - {c['b']}", titles[key], _fmt(m["difference"]),
                         f"[{_fmt(m['simultaneous_ci_low'])}, {_fmt(m['simultaneous_ci_high'])}]",
                         _p(m["pvalue_romano_wolf"], floor_b)])
    level = f"{100 * rep['confidence_level']:g}%"
    return ["", f"all comparisons with {rep['simultaneous']['baseline']} at once, per metric "
            f"(max-T {level} intervals, Romano-Wolf step-down p):",
            tabulate(rows, headers=["comparison", "metric", "difference",
                                    "simultaneous interval", "p (Romano-Wolf)"],
                     tablefmt=tablefmt, disable_numparse=True)]


# --------------------------------------------------------------------------- decisions

def decisions(y, scores: dict, *, threshold=None, cost_fp=None, cost_fn=None) -> dict:
    """Confusion counts and thresholded metrics per model; McNemar and churn per pair."""
    names = list(scores)
    out: dict[str, Any] = {"rule": "positive iff score >= threshold", "models": {},
                           "comparisons": []}
    if threshold is None:
        # select_threshold minimises the cost on these rows, then the same rows score it
        out["in_sample"] = True
        out["warning"] = ("the thresholds were chosen by cost on the same rows they are "
                          "evaluated on (in-sample): the cost and the metrics at them are "
                          "optimistic for new data; choose the threshold on held-out rows and "
                          "pass it with --threshold")
    preds = {}
    for k in names:
        s = scores[k]
        entry: dict[str, Any] = {}
        if threshold is None:
            sel = calipers.select_threshold(y, s, cost_fp=cost_fp, cost_fn=cost_fn)
            t = float(sel.threshold)
            entry["chosen_by"] = f"minimum cost {cost_fp:g}*FP + {cost_fn:g}*FN"
            entry["expected_cost"] = float(sel.expected_cost)
        else:
            t = float(threshold)
        pred = (s >= t).astype(np.int64)
        preds[k] = pred
        cm = np.asarray(calipers.confusion_matrix(y, pred, labels=[0, 1]))
        tn, fp, fn, tp = (int(v) for v in cm.ravel())
        entry.update({
            "threshold": t, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": _num(_quiet(calipers.precision_score, y, pred, zero_division=np.nan)),
            "recall": _num(_quiet(calipers.recall_score, y, pred, zero_division=np.nan)),
            "f1": _num(_quiet(calipers.f1_score, y, pred, zero_division=np.nan)),
            "mcc": _num(_quiet(calipers.matthews_corrcoef, y, pred)),
        })
        out["models"][k] = entry
    for other in names[1:]:
        table = calipers.mcnemar_table(y, preds[other], preds[names[0]])
        m = calipers.mcnemar(table, method="exact")
        out["comparisons"].append({
            "a": other, "b": names[0],
            "churn": float(np.mean(preds[other] != preds[names[0]])),
            "mcnemar_exact": {"a_right_b_wrong": int(m.b), "a_wrong_b_right": int(m.c),
                              "pvalue": float(m.pvalue)},
        })
    return out


# --------------------------------------------------------------------------- calibration

def calibration(y, scores: dict, *, n_bins=10) -> dict:
    """ECE (equal width bins, P(positive) reliability) per model given probabilities."""
    out = {"n_bins": n_bins, "strategy": "uniform", "models": {}}
    for k, s in scores.items():
        if not np.all((s >= 0) & (s <= 1)):
            out["models"][k] = None
            continue
        ece = calipers.expected_calibration_error(y, s, n_bins=n_bins)
        out["models"][k] = {"ece": float(ece)}
    return out


# --------------------------------------------------------------------------- slices

def slices(y, scores: dict, slice_values, *, thresholds: dict, min_support=30) -> dict:
    """Per slice and model: n, prevalence, ROC AUC, recall; nothing dropped.

    AUC per slice comes from ``by_group``; positives and hits per slice are
    counted in one pass (``bincount`` over the slice codes), not a mask per slice.
    """
    out = {"min_support": min_support, "flag": "ROC AUC at or below 0.5 (chance)", "models": {}}
    names, codes = np.unique(slice_values, return_inverse=True)
    index = {g: i for i, g in enumerate(names.tolist())}
    G = names.shape[0]
    positives = np.bincount(codes, weights=y, minlength=G)
    sizes = np.bincount(codes, minlength=G)
    for k, s in scores.items():
        rep = _quiet(calipers.by_group, calipers.roc_auc_score, y, s, group_id=slice_values,
                     min_support=min_support)
        t = thresholds.get(k)
        hits = None if t is None else np.bincount(codes, weights=(s >= t) & (y == 1), minlength=G)
        rows = []
        for g, auc, n, defined, small in zip(rep.group, rep.value, rep.support, rep.defined,
                                             rep.below_min_support):
            i = index[g.item() if hasattr(g, "item") else g]
            row = {"slice": str(g), "n": int(n), "prevalence": float(positives[i] / sizes[i]),
                   "roc_auc": _num(auc), "defined": bool(defined),
                   "below_min_support": bool(small),
                   "note": ("one class only" if not defined else
                            "below min support" if small else "")}
            if hits is not None:
                row["recall"] = float(hits[i] / positives[i]) if positives[i] else None
            row["at_or_below_chance"] = bool(defined and auc <= 0.5)
            rows.append(row)
        out["models"][k] = {"overall_roc_auc": _num(rep.overall), "threshold": t, "rows": rows}
    return out


# --------------------------------------------------------------------------- multiclass

def multiclass(y, scores: dict, *, n_bins=10, class_names=None) -> dict:
    """One model's class-probability columns: accuracy, OvR AUC, log loss, Brier, ECE."""
    names = list(scores)
    labels = list(class_names) if class_names is not None else [str(i) for i in range(len(names))]
    P = np.stack([scores[k] for k in names], axis=1)
    if np.any(P < 0) or np.any(P > 1):
        raise InputError("--multiclass needs probability columns in [0, 1]")
    rowsum = P.sum(axis=1)
    bad = np.abs(rowsum - 1) > 1e-6
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"row {i + 1}: the class probabilities sum to {rowsum[i]:.6g}, not 1")
    pred = np.argmax(P, axis=1)  # ties: the first (lowest) class index
    acc = calipers.accuracy_with_error((pred == y).astype(np.int64))
    K = len(names)
    present = np.bincount(y, minlength=K) > 0
    out = {
        "n": int(y.shape[0]),
        "classes": {labels[i]: {"column": names[i], "n": int((y == i).sum())} for i in range(K)},
        "accuracy": float(acc.accuracy),
        "accuracy_wilson_interval": [float(acc.confidence_interval.low), float(acc.confidence_interval.high)],
        "macro_f1": _num(_quiet(calipers.f1_score, y, pred, labels=list(range(K)),
                                average="macro", zero_division=np.nan)),
        "roc_auc_ovr_macro": (_num(_quiet(calipers.multiclass_roc_auc_score, y, P,
                                          multi_class="ovr", average="macro"))
                              if present.all() else None),
        "log_loss": float(calipers.log_loss(y, P)),
        "ece_top_label": float(calipers.expected_calibration_error(y, P, n_bins=n_bins)),
        "n_bins": n_bins,
    }
    return out


# --------------------------------------------------------------------------- rendering

def render_text(rep: dict, path: str, markdown: bool = False) -> str:
    from tabulate import tabulate

    fmt = "github" if markdown else "simple"
    if "survival" in rep:
        return "\n".join(_beyond.render_survival(rep, markdown))
    if "offpolicy" in rep:
        return "\n".join(_beyond.render_offpolicy(rep, markdown))
    lines = []
    if "multiclass" in rep:
        m = rep["multiclass"]
        classes = ", ".join(f"{c}: {v['column']} n={v['n']}" for c, v in m["classes"].items())
        lines.append(f"file: {path}\nn = {m['n']}, {len(m['classes'])} classes ({classes})")
        lines.append("")
        lo, hi = m["accuracy_wilson_interval"]
        rows = [["accuracy", f"{_fmt(m['accuracy'])} [{_fmt(lo)}, {_fmt(hi)}] (Wilson 95%)"],
                ["macro F1", _fmt(m["macro_f1"])],
                ["ROC AUC (one-vs-rest, macro)", _fmt(m["roc_auc_ovr_macro"])],
                ["log loss", _fmt(m["log_loss"])],
                [f"ECE (top label, {m['n_bins']} bins)", _fmt(m["ece_top_label"])]]
        lines.append(tabulate(rows, headers=["metric", "value"], tablefmt=fmt, disable_numparse=True))
        return "\n".join(lines)
    head = (f"file: {path}\n"
            f"n = {rep['n']}, positives = {rep['n_positive']}, prevalence = {rep['prevalence']:.4f}\n"
            f"{rep['n_resamples']} paired bootstrap replicates (seed {rep['seed']}, "
            f"{rep['resampling']}), {100 * rep['confidence_level']:g}% percentile intervals")
    lines.append(head if not markdown else "  \n".join(head.splitlines()))
    titles = {k: t for k, t, *_ in METRICS}
    rows = []
    for model, ms in rep["models"].items():
        row = [model]
        for key, _t, *_ in METRICS:
            m = ms.get(key)
            row.append("n/a (not probabilities)" if m is None else
                       f"{_fmt(m['estimate'])} [{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]")
        if "calibration" in rep:
            c = rep["calibration"]["models"].get(model)
            row.append("n/a" if c is None else _fmt(c["ece"]))
        rows.append(row)
    heads = ["model", *(titles[k] for k, *_ in METRICS)]
    if "calibration" in rep:
        heads.append(f"ECE ({rep['calibration']['n_bins']} bins)")
    lines += ["", tabulate(rows, headers=heads, tablefmt=fmt, disable_numparse=True)]
    delong = "DeLong p" if rep.get("resampling") != "cluster" else "clustered DeLong p"
    lines += render_comparisons(
        rep, titles, rep["n_resamples"], fmt, extra_head=delong,
        extra=lambda key, m: _p(m.get("delong_pvalue")) if "delong_pvalue" in m else "")
    lines += render_simultaneous(rep, titles, fmt)
    for msg in rep.get("warnings", []):
        lines += ["", warning_line(msg)]
    if "selective" in rep:
        lines += _beyond.render_selective(rep, rep["n_resamples"], markdown)
    if "decisions" in rep:
        d = rep["decisions"]
        lines += ["", f"decisions ({d['rule']}):"]
        rows = []
        for k, m in d["models"].items():
            rows.append([k, f"{m['threshold']:.6g}", m["tp"], m["fp"], m["fn"], m["tn"],
                         _fmt(m["precision"]), _fmt(m["recall"]), _fmt(m["f1"]), _fmt(m["mcc"]),
                         _fmt(m.get("expected_cost")) if "expected_cost" in m else ""])
        lines.append(tabulate(rows, headers=["model", "threshold", "TP", "FP", "FN", "TN",
                                             "precision", "recall", "F1", "MCC", "cost/row"],
                              tablefmt=fmt, disable_numparse=True))
        if d.get("warning"):
            lines.append(warning_line(d["warning"]))
        for c in d["comparisons"]:
            mc = c["mcnemar_exact"]
            lines.append(f"{c['a']} vs {c['b']}: churn {c['churn']:.4f} (share of rows whose "
                         f"decision differs); McNemar exact {_p_is(mc['pvalue'])} "
                         f"({c['a']} right/{c['b']} wrong {mc['a_right_b_wrong']}, "
                         f"reverse {mc['a_wrong_b_right']})")
    if "slices" in rep:
        sl = rep["slices"]
        for k, m in sl["models"].items():
            rule = (f"recall at score >= {m['threshold']:g}" if m["threshold"] is not None
                    else "no recall: scores are not probabilities and no --threshold was given")
            lines += ["", f"slices for {k} (worst ROC AUC first; overall {_fmt(m['overall_roc_auc'])}; "
                      f"min support {sl['min_support']}; {rule}; * = {sl['flag']}):"]
            rows = [[r["slice"], r["n"], _fmt(r["prevalence"]), _fmt(r["roc_auc"]) +
                     (" *" if r["at_or_below_chance"] else ""),
                     _fmt(r.get("recall")) if m["threshold"] is not None else "", r["note"]]
                    for r in m["rows"]]
            lines.append(tabulate(rows, headers=["slice", "n", "prevalence", "ROC AUC",
                                                 "recall" if m["threshold"] is not None else "",
                                                 "note"], tablefmt=fmt, disable_numparse=True))
    return "\n".join(lines)


def plot(y, scores: dict, path: str, *, n_bins=10) -> None:
    """ROC and PR curves (and a reliability diagram for probabilities) via calipers.plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from calipers import plot as cplot

    probs = {k: s for k, s in scores.items() if np.all((s >= 0) & (s <= 1))}
    ncol = 3 if probs else 2
    fig, axes = plt.subplots(1, ncol, figsize=(5 * ncol, 4.5))
    cplot.roc_curves(y, scores, ax=axes[0])
    cplot.pr_curves(y, scores, ax=axes[1])
    if probs:
        cplot.reliability(y, probs, n_bins=n_bins, ax=axes[2])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- entry point

def run(args) -> int:
    if args.n_resamples < 1:
        raise InputError(f"--n-resamples must be at least 1, got {args.n_resamples}")
    if not (0 < args.confidence_level < 1):
        raise InputError(f"--confidence-level must be in (0, 1), got {args.confidence_level}")
    if (args.cost_fp is None) != (args.cost_fn is None):
        raise InputError("--cost-fp and --cost-fn go together")
    if args.threshold is not None and not math.isfinite(args.threshold):
        raise InputError(f"--threshold must be a finite number, got {args.threshold}")
    if args.threshold is not None and args.cost_fp is not None:
        raise InputError("give --threshold or --cost-fp/--cost-fn, not both")
    for name in ("cost_fp", "cost_fn"):
        v = getattr(args, name)
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise InputError(f"--{name.replace('_', '-')} must be a finite number >= 0, got {v}")
    if args.n_bins < 1:
        raise InputError(f"--n-bins must be at least 1, got {args.n_bins}")
    if args.min_support < 1:
        raise InputError(f"--min-support must be at least 1, got {args.min_support}")
    if args.plot:
        _check_plot_path(args.plot)
    kind = _beyond.mode(args)
    if kind is not None:
        rep = (_beyond.survival_report(args) if kind == "survival"
               else _beyond.offpolicy_report(args))
        _emit(rep, args, rep["file"])
        return 0
    if args.multiclass and args.pos_label is not None:
        raise InputError("--pos-label names the positive class of binary labels; "
                         "--multiclass reads 0..K-1 or the class names")
    pattern = args.multiclass if isinstance(args.multiclass, str) else None
    if pattern is not None and args.file is None and Path(pattern).is_file():
        # `report --multiclass preds.csv ...`: the file, not a column pattern
        args.file, pattern = pattern, None
    if pattern is not None and args.scores:
        raise InputError("give the class columns by --multiclass PATTERN or by --score, not both")
    path, label, score_cols = _resolve(args, need_scores=pattern is None)
    if pattern is not None:
        score_cols = []
    if len(set(score_cols)) != len(score_cols):
        raise InputError("each --score column may be given once")
    extra = [c for c in (args.slice, args.groups) if c]
    if args.multiclass and args.selective:
        raise InputError("--selective is for the binary report, not --multiclass")
    if args.multiclass:
        class_names = None
        source: Path | Table = path
        if pattern is not None:
            source = Table(path, [label], sep=args.sep)
            header = source.columns
            score_cols, class_names = match_columns(header, pattern, exclude=[label, *extra])
            if not score_cols:
                raise InputError(f"{path}: no column matches --multiclass {pattern!r}; columns "
                                 f"are {', '.join(header)}")
        if len(score_cols) < 2:
            raise InputError("--multiclass needs one probability column per class (at least 2): "
                             "--multiclass PATTERN or one --score per class")
        y, scores, _ = read_predictions(source, label, score_cols, multiclass=True,
                                        sep=args.sep, class_names=class_names)
        rep = {"file": str(path), "label": label, "scores": score_cols,
               "multiclass": multiclass(y, scores, n_bins=args.n_bins,
                                        class_names=class_names)}
        _emit(rep, args, path)
        return 0
    y, scores, extras = read_predictions(path, label, score_cols, extra=extra,
                                         pos_label=args.pos_label, sep=args.sep)
    if y.min() == y.max():
        raise InputError(f"{path}: column {label!r} has only label {int(y[0])}; "
                         "ROC AUC and AP need both classes")
    n_runs = len(METRICS) * max(1, len(scores) - 1)  # an upper bound for the bar
    if len(scores) > 2:   # the simultaneous intervals: one more run per comparison
        n_runs += len(METRICS) * (len(scores) - 1)
    if args.selective:
        n_runs += max(1, len(scores) - 1)
    groups = extras.get(args.groups) if args.groups else None
    with progress_bar(args.no_progress, n_runs * args.n_resamples) as bar:
        rep = compute(y, scores, n_resamples=args.n_resamples,
                      confidence_level=args.confidence_level, seed=args.seed,
                      stratify=args.stratify, groups=groups, progress=bar.update)
        if args.selective:
            rep["selective"] = _beyond.selective(
                y, scores, n_resamples=args.n_resamples, confidence_level=args.confidence_level,
                seed=args.seed, groups=groups, progress=bar.update)
    rep = {"file": str(path), "label": label, "scores": score_cols, **rep}
    rep["calibration"] = calibration(y, scores, n_bins=args.n_bins)
    thresholds = {}
    if args.threshold is not None or args.cost_fp is not None:
        rep["decisions"] = decisions(y, scores, threshold=args.threshold,
                                     cost_fp=args.cost_fp, cost_fn=args.cost_fn)
        thresholds = {k: m["threshold"] for k, m in rep["decisions"]["models"].items()}
    if args.slice:
        if not thresholds:  # recall needs a decision rule: 0.5 for probabilities
            thresholds = {k: 0.5 for k, s in scores.items() if np.all((s >= 0) & (s <= 1))}
        rep["slices"] = slices(y, scores, extras[args.slice], thresholds=thresholds,
                               min_support=args.min_support)
    if args.plot:
        plot(y, scores, args.plot, n_bins=args.n_bins)
        rep["plot"] = args.plot
    _emit(rep, args, path)
    return 0


def _check_plot_path(target):
    """Fail before the bootstrap, in one line, on a path matplotlib cannot write."""
    p = Path(target)
    if not p.parent.is_dir():
        raise InputError(f"--plot {target}: folder {str(p.parent)!r} does not exist")
    ext = p.suffix.lower().lstrip(".")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    formats = plt.gcf().canvas.get_supported_filetypes()
    plt.close("all")
    if ext not in formats:
        raise InputError(f"--plot {target}: unknown image format {ext!r}; use one of "
                         f"{', '.join(sorted(formats))}")


def _emit(rep, args, path):
    if args.format == "json":
        print(json.dumps(rep, indent=2))
    else:
        shown = str(path) if args.file is not None else f"{EXAMPLE} (bundled example)"
        print(render_text(rep, shown, markdown=args.format == "markdown"))
        if args.plot and "plot" in rep:
            print(f"\ncurves written to {args.plot}")
