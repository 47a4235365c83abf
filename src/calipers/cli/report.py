"""``calipers report``: metrics with bootstrap intervals for per-example predictions.

Reads a CSV or Parquet file (or the bundled example when no file is given),
prints n, prevalence, and per model ROC AUC, average precision, and, where
the scores are probabilities, log loss and Brier score, each with a paired
bootstrap percentile interval; for two or more models, every later model is
compared with the first by a paired bootstrap of the difference.
"""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np

from .. import _bootstrap, _probability, _ranking
from ._errors import InputError
from ._io import read_predictions

EXAMPLE = "breast_cancer_oof.csv"
EXAMPLE_LABEL = "y"
EXAMPLE_SCORES = ["logreg", "naive_bayes"]

# (key, title, function, higher is better, needs probabilities)
METRICS = [
    ("roc_auc", "ROC AUC", _ranking.roc_auc_score, True, False),
    ("average_precision", "AP", _ranking.average_precision_score, True, False),
    ("log_loss", "log loss", _probability.log_loss, False, True),
    ("brier", "Brier", _probability.brier_score_loss, False, True),
]


def add_parser(sub):
    p = sub.add_parser(
        "report", help="metrics with paired-bootstrap intervals for a predictions file",
        description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("file", nargs="?", help="CSV or Parquet of per-example predictions "
                   "(default: the bundled breast-cancer example)")
    p.add_argument("--label", help="column of 0/1 labels (default for the example: y)")
    p.add_argument("--score", action="append", dest="scores", metavar="COL",
                   help="score column of one model; repeat for several models")
    p.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    p.add_argument("--n-resamples", type=int, default=1000, help="bootstrap replicates (default 1000)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--stratify", action="store_true",
                   help="resample positives and negatives separately (no one-class replicate)")
    p.add_argument("--plot", metavar="PATH", help="write ROC and PR curves of every model to PATH")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _resolve(args):
    if args.file is None:
        path = resources.files("calipers") / "data" / EXAMPLE
        return Path(str(path)), args.label or EXAMPLE_LABEL, args.scores or EXAMPLE_SCORES
    if not args.label:
        raise InputError("--label COL is required with a file")
    if not args.scores:
        raise InputError("at least one --score COL is required with a file")
    return Path(args.file), args.label, args.scores


def compute(y, scores: dict, *, n_resamples=1000, confidence_level=0.95, seed=0,
            stratify=False, progress=None) -> dict:
    """The report as a plain dict (what ``--format json`` prints)."""
    names = list(scores)
    probs = {k: bool(np.all((v >= 0) & (v <= 1))) for k, v in scores.items()}
    out = {
        "n": int(y.shape[0]),
        "n_positive": int(y.sum()),
        "prevalence": float(y.mean()),
        "n_resamples": n_resamples,
        "confidence_level": confidence_level,
        "seed": seed,
        "stratify": stratify,
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
        for other in eligible[1:] or [base]:
            with np.errstate(all="ignore"):
                res = _run(fn, y, scores[other], scores[base], n_resamples,
                           confidence_level, seed, stratify, progress)
            # A = other, B = base: "difference" reads as other - base.
            for name, est, ci in ((other, res.estimate_a, res.interval_a),
                                  (base, res.estimate_b, res.interval_b)):
                out["models"][name].setdefault(key, {
                    "estimate": _num(est), "ci_low": _num(ci.low), "ci_high": _num(ci.high)})
            if other != base and base == names[0]:
                cmp = _comparison(out, other, base)
                cmp["metrics"][key] = {
                    "difference": _num(res.difference),
                    "ci_low": _num(res.confidence_interval.low),
                    "ci_high": _num(res.confidence_interval.high),
                    "higher_is_better": higher,
                    "share_a_better": _share_better(res, higher),
                    "n_undefined": res.n_undefined,
                }
    return out


def _run(fn, y, a, b, n_resamples, confidence_level, seed, stratify, progress):
    import warnings

    from .._exceptions import UndefinedMetricWarning

    with warnings.catch_warnings():
        # Undefined estimates are reported as NaN in the table and counted.
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return _bootstrap.paired_bootstrap(
            fn, y, a, b, n_resamples=n_resamples, confidence_level=confidence_level,
            seed=seed, stratify=stratify, progress=progress)


def _share_better(res, higher):
    """Share of defined replicates where A is strictly better (ties count for neither)."""
    da, db = res.distribution_a, res.distribution_b
    ok = np.isfinite(da) & np.isfinite(db)
    if not ok.any():
        return None
    better = da[ok] > db[ok] if higher else da[ok] < db[ok]
    return float(np.mean(better))


def _comparison(out, a, b):
    for c in out["comparisons"]:
        if c["a"] == a and c["b"] == b:
            return c
    c = {"a": a, "b": b, "metrics": {}}
    out["comparisons"].append(c)
    return c


def _num(x):
    x = float(x)
    return None if math.isnan(x) else x


def _fmt(x, digits=4):
    return "undefined" if x is None else f"{x:.{digits}f}"


def render_text(rep: dict, path: str, markdown: bool = False) -> str:
    from tabulate import tabulate

    fmt = "github" if markdown else "simple"
    lines = []
    head = (f"file: {path}\n"
            f"n = {rep['n']}, positives = {rep['n_positive']}, prevalence = {rep['prevalence']:.4f}\n"
            f"{rep['n_resamples']} paired bootstrap replicates (seed {rep['seed']}"
            f"{', stratified' if rep['stratify'] else ''}), "
            f"{100 * rep['confidence_level']:g}% percentile intervals")
    lines.append(head if not markdown else "\n".join("    " + h for h in head.splitlines()))
    titles = {k: t for k, t, *_ in METRICS}
    rows = []
    for model, ms in rep["models"].items():
        row = [model]
        for key, _t, *_ in METRICS:
            m = ms.get(key)
            row.append("n/a (not probabilities)" if m is None and key in ms else
                       "" if m is None else f"{_fmt(m['estimate'])} [{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]")
        rows.append(row)
    lines.append("")
    lines.append(tabulate(rows, headers=["model", *(titles[k] for k, *_ in METRICS)], tablefmt=fmt))
    for c in rep["comparisons"]:
        lines.append("")
        lines.append(f"paired difference {c['a']} - {c['b']}:")
        rows = []
        for key, m in c["metrics"].items():
            rows.append([titles[key], _fmt(m["difference"]),
                         f"[{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]",
                         _fmt(m["share_a_better"], 3), m["n_undefined"],
                         "higher" if m["higher_is_better"] else "lower"])
        lines.append(tabulate(rows, headers=["metric", "difference", "interval",
                                             f"share {c['a']} better", "undefined", "better is"],
                              tablefmt=fmt))
    return "\n".join(lines)


def plot(y, scores: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.5))
    for name, s in scores.items():
        fpr, tpr, _ = _ranking.roc_curve(y, s)
        auc = _ranking.roc_auc_score(y, s)
        ax1.plot(fpr, tpr, label=f"{name} (AUC {auc:.3f})")
        prec, rec, _ = _ranking.precision_recall_curve(y, s)
        ap = _ranking.average_precision_score(y, s)
        ax2.step(rec, prec, where="post", label=f"{name} (AP {ap:.3f})")
    ax1.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax1.set(xlabel="false positive rate", ylabel="true positive rate", title="ROC")
    ax2.axhline(float(np.mean(y)), color="grey", lw=0.8, ls="--")
    ax2.set(xlabel="recall", ylabel="precision", title="precision-recall", ylim=(0, 1.02))
    for ax in (ax1, ax2):
        ax.legend(loc="lower right" if ax is ax1 else "lower left")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(args) -> int:
    if args.n_resamples < 1:
        raise InputError(f"--n-resamples must be at least 1, got {args.n_resamples}")
    if not (0 < args.confidence_level < 1):
        raise InputError(f"--confidence-level must be in (0, 1), got {args.confidence_level}")
    path, label, score_cols = _resolve(args)
    if len(set(score_cols)) != len(score_cols):
        raise InputError("each --score column may be given once")
    y, scores = read_predictions(path, label, score_cols)
    if y.min() == y.max():
        raise InputError(f"{path}: column {label!r} has only label {int(y[0])}; "
                         "ROC AUC and AP need both classes")
    n_runs = len(METRICS) * max(1, len(scores) - 1)  # an upper bound for the bar
    bar = None
    progress = None
    if not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=n_runs * args.n_resamples, desc="bootstrap", unit="rep",
                   leave=False, disable=None)
        progress = bar.update
    try:
        rep = compute(y, scores, n_resamples=args.n_resamples,
                      confidence_level=args.confidence_level, seed=args.seed,
                      stratify=args.stratify, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    rep = {"file": str(path), "label": label, "scores": score_cols, **rep}
    if args.plot:
        plot(y, scores, args.plot)
        rep["plot"] = args.plot
    if args.format == "json":
        print(json.dumps(rep, indent=2))
    else:
        print(render_text(rep, str(path), markdown=args.format == "markdown"))
        if args.plot:
            print(f"\ncurves written to {args.plot}")
    return 0
