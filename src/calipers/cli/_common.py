"""Helpers shared by the report's sections: bootstrap runs, p-values, number formats."""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

import calipers


def add_bootstrap_arguments(p):
    """The bootstrap options every subcommand shares; returns their argument group."""
    g = p.add_argument_group("bootstrap")
    g.add_argument("--n-resamples", type=int, default=1000, metavar="B",
                   help="bootstrap replicates (default 1000)")
    g.add_argument("--confidence-level", type=float, default=0.95, metavar="LEVEL",
                   help="of every interval (default 0.95)")
    g.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    return g


def _adjust(out) -> None:
    """Holm-adjusted bootstrap p-values over every comparison the report prints.

    Several metrics and models compared at once make several tests; each
    p-value alone overstates the evidence. Holm (1979) controls the chance of
    any false claim among them under any dependence.
    """
    entries = [m for c in out["comparisons"] for m in c["metrics"].values()
               if m.get("pvalue") is not None]
    out["multiplicity"] = {"method": "holm", "n_tests": len(entries)}
    if len(entries) < 2:
        return
    adj = calipers.adjust_pvalues(np.array([m["pvalue"] for m in entries]), method="holm")
    for m, a in zip(entries, adj):
        m["pvalue_holm"] = float(a)


_DESIGN_WARNINGS: list = []
# the rule BootstrapDesignWarning states: fewer than 10 distinct replicated values
MIN_DISTINCT = 10


def _run(fn, y, a, b, n_resamples, confidence_level, seed, stratify, groups, progress,
         resample_by="auto"):
    from calipers import BootstrapDesignWarning, UndefinedMetricWarning

    with warnings.catch_warnings(record=True) as caught:
        # Undefined estimates are reported as NaN ("undefined") and counted;
        # design warnings are collected and printed with the report.
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("always", BootstrapDesignWarning)
        res = calipers.paired_bootstrap(
            fn, y, a, b, n_resamples=n_resamples, confidence_level=confidence_level,
            seed=seed, stratify=stratify, groups=groups, progress=progress,
            resample_by=resample_by)
    single = a is b
    for w in caught:
        msg = str(w.message)
        if single:
            msg = _drop_difference_reason(msg)
        if msg and issubclass(w.category, BootstrapDesignWarning) and msg not in _DESIGN_WARNINGS:
            _DESIGN_WARNINGS.append(msg)
    if single:
        # one model is run as A against itself: its differences are 0 by construction, so
        # the check that matters is on the model's own replicated values
        vals = np.asarray(res.distribution_a, dtype=float)
        distinct = np.unique(vals[np.isfinite(vals)]).size
        if distinct < MIN_DISTINCT:
            msg = (f"the bootstrap interval rests on {distinct} distinct replicated values "
                   f"(fewer than {MIN_DISTINCT}): it does not measure "
                   "uncertainty. Use more data.")
            if msg not in _DESIGN_WARNINGS:
                _DESIGN_WARNINGS.append(msg)
    return res


def _drop_difference_reason(msg: str) -> str:
    """A design warning without its "distinct replicated differences" reason ("" if none left)."""
    head = "the bootstrap interval rests on "
    if not msg.startswith(head) or ": " not in msg:
        return msg
    reasons, tail = msg[len(head):].split(": ", 1)
    kept = [r for r in reasons.split("; ") if "distinct replicated differences" not in r]
    if not kept:
        return ""
    return head + "; ".join(kept) + ": " + tail


# (key, title, metric(row_ids, scores) -> float, higher is better)
RowMetric = tuple[str, str, Callable[[np.ndarray, np.ndarray], float], bool]


def bootstrap_by_rows(metrics: list[RowMetric], n: int, scores: dict[str, np.ndarray], *,
                      n_resamples: int, confidence_level: float, seed: int, groups=None,
                      progress=None) -> dict[str, Any]:
    """Estimates, intervals and paired differences (each later model minus the first).

    Each metric is a callable of the resampled row ids and one model's scores:
    ``paired_bootstrap`` resamples ``y_true = arange(n)`` with
    ``resample_by="indices"`` and hands the metric ``(ids[idx], scores[idx])``,
    so a metric that needs other columns (times, events, labels) looks them
    up by those ids. Both models of a pair see the same ids in every
    replicate: the comparison is paired.
    """
    ids = np.arange(n)
    names = list(scores)
    base = names[0]
    out: dict[str, Any] = {"models": {k: {} for k in names}, "comparisons": []}
    _DESIGN_WARNINGS.clear()
    for key, _title, fn, higher in metrics:
        for other in names[1:] or [base]:
            with np.errstate(all="ignore"):
                res = _run(fn, ids, scores[other], scores[base], n_resamples, confidence_level,
                           seed, False, groups, progress, resample_by="indices")
            for name, est, ci in ((other, res.estimate_a, res.interval_a),
                                  (base, res.estimate_b, res.interval_b)):
                out["models"][name].setdefault(key, {
                    "estimate": _num(est), "ci_low": _num(ci.low), "ci_high": _num(ci.high)})
            if other != base:
                _comparison_entry(out, other, base)["metrics"][key] = difference_entry(res, higher)
    _adjust(out)
    out["warnings"] = list(_DESIGN_WARNINGS)
    _DESIGN_WARNINGS.clear()
    return out


def render_models(models: dict, titles: dict[str, str], tablefmt: str) -> str:
    """One row per model: ``estimate [low, high]`` per metric."""
    from tabulate import tabulate

    rows = []
    for model, ms in models.items():
        row = [model]
        for key in titles:
            m = ms.get(key)
            row.append("n/a" if m is None else
                       f"{_fmt(m['estimate'])} [{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]")
        rows.append(row)
    return tabulate(rows, headers=["model", *titles.values()], tablefmt=tablefmt,
                    disable_numparse=True)


def render_comparisons(rep: dict, titles: dict[str, str], n_resamples: int, tablefmt: str,
                       extra: Callable[[str, dict], str] | None = None,
                       extra_head: str | None = None) -> list[str]:
    """The paired-difference tables: difference, interval, share, p (and Holm's p)."""
    from tabulate import tabulate

    lines: list[str] = []
    n_tests = rep.get("multiplicity", {}).get("n_tests", 0)
    floor_b = max(1e-4, 1.0 / n_resamples)  # a bootstrap p cannot resolve below 1/B
    for c in rep["comparisons"]:
        lines += ["", f"paired difference {c['a']} - {c['b']}:"]
        rows = []
        for key, m in c["metrics"].items():
            row = [titles[key], _fmt(m["difference"]),
                   f"[{_fmt(m['ci_low'])}, {_fmt(m['ci_high'])}]",
                   _fmt(m["share_a_better"], 3), m["n_undefined"],
                   "higher" if m["higher_is_better"] else "lower", _p(m.get("pvalue"), floor_b)]
            if n_tests > 1:
                row.append(_p(m.get("pvalue_holm"), floor_b))
            if extra is not None:
                row.append(extra(key, m))
            rows.append(row)
        heads = ["metric", "difference", "interval", f"share {c['a']} better", "undefined",
                 "better is", "bootstrap p"]
        if n_tests > 1:
            heads.append(f"p (Holm, {n_tests} tests)")
        if extra_head is not None:
            heads.append(extra_head)
        lines.append(tabulate(rows, headers=heads, tablefmt=tablefmt, disable_numparse=True))
    return lines


def _share_better(res, higher):
    """Share of defined replicates where A is strictly better (ties count for neither)."""
    da, db = np.asarray(res.distribution_a), np.asarray(res.distribution_b)
    ok = np.isfinite(da) & np.isfinite(db)
    if not ok.any():
        return None
    better = da[ok] > db[ok] if higher else da[ok] < db[ok]
    return float(np.mean(better))


def difference_entry(res, higher: bool) -> dict:
    """The report's record of one paired difference (a :class:`calipers.BootstrapResult`)."""
    return {
        "difference": _num(res.difference),
        "ci_low": _num(res.confidence_interval.low),
        "ci_high": _num(res.confidence_interval.high),
        "higher_is_better": higher,
        "share_a_better": _share_better(res, higher),
        "n_undefined": res.n_undefined,
        "pvalue": _num(res.pvalue),
        # the share of replicates cannot resolve below one replicate: a pvalue of 0.0 means
        # "below this" (the text output prints "< 1e-3" for B = 1000)
        "pvalue_resolution": 1.0 / res.n_resamples,
    }


def _comparison_entry(out, a, b):
    for c in out["comparisons"]:
        if c["a"] == a and c["b"] == b:
            return c
    c = {"a": a, "b": b, "metrics": {}}
    out["comparisons"].append(c)
    return c


def _num(x):
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _quiet(fn, *args, **kwargs):
    from calipers import UndefinedMetricWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return fn(*args, **kwargs)


def _p(x, floor=1e-4):
    """A p-value: 4 decimals, and "< floor" rather than a misleading 0.0000.

    A bootstrap p-value cannot resolve below one replicate: its floor is 1/B.
    """
    if x is None:
        return "undefined"
    if x >= floor:
        return f"{x:.4f}"
    shown = f"{floor:.0e}"
    if float(shown) < floor:  # one digit rounded up: "< 4e-3" for 1/300, never a smaller claim
        mant, exp = shown.split("e")
        shown = f"{int(mant) + 1}e{exp}" if int(mant) < 9 else f"1e{int(exp) + 1:+03d}"
    return "< " + shown.replace("e-0", "e-")


def _p_is(x, floor=1e-4):
    """``p = 0.0123`` or ``p < 1e-4``."""
    text = _p(x, floor)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def _fmt(x, digits=4):
    if x is None:
        return "undefined"
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.0000"


class progress_bar:
    """A tqdm bar (none with ``--no-progress`` or off a terminal); ``update`` is the callback."""

    def __init__(self, off: bool, total: int):
        self.bar: Any = None
        if not off:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc="bootstrap", unit="rep", leave=False, disable=None)

    @property
    def update(self) -> Callable[[int], Any] | None:
        return None if self.bar is None else self.bar.update

    def __enter__(self) -> "progress_bar":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def warning_line(msg: str) -> str:
    """``warning: ...`` wrapped at 100 columns, continuation lines indented."""
    import textwrap

    return textwrap.fill(f"warning: {msg}", 100, subsequent_indent="  ",
                         break_on_hyphens=False, break_long_words=False)
