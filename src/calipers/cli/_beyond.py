"""``calipers report`` beyond labels and scores: survival, logged (off-policy) data, abstention.

* ``--time COL --event COL`` with one ``--score`` (risk) per model: Harrell's
  and Uno's concordance (``--tau`` truncates Uno's), each with a bootstrap
  interval, and the paired bootstrap of each later model minus the first.
* ``--propensity COL --reward COL --target COL|PATTERN``: IPS and SNIPS (and,
  with ``--reward-model PATTERN`` and ``--action COL``, the direct method and
  doubly robust) with ``off_policy_interval``'s bootstrap intervals.
* ``--selective`` (binary report): AURC of the top-label confidence of each
  probability model, with the paired bootstrap of the difference.

Every number comes from a public calipers function; the bootstraps of
survival and AURC go through ``calipers.paired_bootstrap`` resampling row ids
(``resample_by="indices"``), the metric looking up the other columns by id.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

import calipers
from ._common import (_fmt, _num, bootstrap_by_rows, progress_bar, render_comparisons,
                      render_models, warning_line)
from ._errors import InputError
from ._io import Table, match_columns


def add_arguments(p) -> None:
    g = p.add_argument_group("survival (instead of --label)")
    g.add_argument("--time", metavar="COL", help="event or censoring time; with --event and one "
                   "--score (risk: higher = earlier event) per model")
    g.add_argument("--event", metavar="COL", help="1/true = event observed, 0/false = censored")
    g.add_argument("--tau", type=float, metavar="T",
                   help="truncation time of Uno's C: only events before T get weight")
    g.add_argument("--scores-are-times", action="store_true",
                   help="the --score columns are predicted survival times (longer = lower "
                   "risk): they are negated before the concordance")
    g = p.add_argument_group("logged data, off-policy (instead of --label)")
    g.add_argument("--propensity", metavar="COL",
                   help="logging policy's probability of the logged action, in (0, 1]")
    g.add_argument("--reward", metavar="COL", help="observed reward of the logged action")
    g.add_argument("--target", metavar="COL|PATTERN",
                   help="target policy's probability of the logged action (a column), or its "
                   "probability of every action (a prefix or glob, one column per action; "
                   "needs --action)")
    g.add_argument("--action", metavar="COL",
                   help="logged action: 0..A-1 in column order, or the action names (column "
                   "names without the prefix)")
    g.add_argument("--reward-model", metavar="PATTERN",
                   help="estimated reward of every action (one column per action, same order as "
                   "--target): adds the direct method and doubly robust")
    g.add_argument("--max-weight", type=float, metavar="W",
                   help="clip importance weights at W (w -> min(w, W))")
    g.add_argument("--min-propensity", type=float, metavar="P",
                   help="floor propensities at P (w -> target / max(propensity, P))")
    g = p.add_argument_group("selective prediction (binary report)")
    g.add_argument("--selective", action="store_true",
                   help="AURC of each probability model (confidence max(p, 1-p), prediction "
                   "p >= 0.5, 0/1 loss) with the paired bootstrap of the difference")


def mode(args) -> str | None:
    """'survival', 'offpolicy' or None (the classification report)."""
    surv = args.time is not None or args.event is not None
    logged = any(getattr(args, k) is not None for k in
                 ("propensity", "reward", "target", "action", "reward_model"))
    if surv and logged:
        raise InputError("give survival columns (--time/--event) or logged-data columns "
                         "(--propensity/--reward/--target), not both")
    chosen = "survival" if surv else "offpolicy" if logged else None
    if chosen is None:
        for opt in ("tau", "max_weight", "min_propensity"):
            if getattr(args, opt) is not None:
                raise InputError(f"--{opt.replace('_', '-')} applies with "
                                 f"{'--time/--event' if opt == 'tau' else '--propensity'}")
        if args.scores_are_times:
            raise InputError("--scores-are-times applies with --time/--event")
        return None
    clash = [o for o, on in (("--label", args.label), ("--pos-label", args.pos_label),
                             ("--multiclass", args.multiclass), ("--threshold", args.threshold),
                             ("--cost-fp", args.cost_fp), ("--slice", args.slice),
                             ("--plot", args.plot), ("--selective", args.selective)) if on]
    if chosen == "offpolicy" and args.groups:
        clash.append("--groups")
    if chosen == "offpolicy" and args.scores:
        clash.append("--score")
    if clash:
        what = "--time/--event" if chosen == "survival" else "--propensity"
        raise InputError(f"{clash[0]} does not apply with {what}")
    if args.file is None:
        raise InputError(f"{'--time/--event' if chosen == 'survival' else '--propensity'} "
                         "needs a file")
    return chosen


# --------------------------------------------------------------------------- survival

def survival_metrics(time: np.ndarray, event: np.ndarray, tau: float | None):
    """Harrell's and Uno's C as callables of (row ids, risk) for ``paired_bootstrap``."""

    def harrell(ids, risk):
        return float(calipers.concordance_index_censored(event[ids], time[ids], risk).cindex)

    def uno(ids, risk):
        # the censoring distribution is re-estimated on each resample, as on the full data
        return float(calipers.concordance_index_ipcw(event[ids], time[ids], risk,
                                                     tau=tau).cindex)

    uno_title = "Uno's C" + (f" (tau = {tau:g})" if tau is not None else "")
    return [("harrell_c", "Harrell's C", harrell, True), ("uno_c", uno_title, uno, True)]


def survival(time, event, scores: dict, *, tau=None, n_resamples=1000, confidence_level=0.95,
             seed=0, groups=None, progress=None) -> dict:
    n = int(time.shape[0])
    metrics = survival_metrics(time, event, tau)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", calipers.UndefinedMetricWarning)
        boot = bootstrap_by_rows(metrics, n, scores, n_resamples=n_resamples,
                                 confidence_level=confidence_level, seed=seed, groups=groups,
                                 progress=progress)
    return {
        "n": n, "n_events": int(event.sum()), "n_censored": int(n - event.sum()),
        "tau": tau, "direction": "higher score = higher risk (earlier event)",
        "titles": {k: t for k, t, *_ in metrics},
        "n_resamples": n_resamples, "confidence_level": confidence_level, "seed": seed,
        "resampling": "cluster" if groups is not None else "rows", "interval": "percentile",
        **boot,
    }


def survival_report(args) -> dict:
    if args.time is None or args.event is None:
        raise InputError("--time and --event go together")
    if not args.scores:
        raise InputError("at least one --score COL (risk score) is required with --time/--event")
    if len(set(args.scores)) != len(args.scores):
        raise InputError("each --score column may be given once")
    if args.tau is not None and not (math.isfinite(args.tau) and args.tau > 0):
        raise InputError(f"--tau must be a finite number > 0, got {args.tau}")
    extra = [args.groups] if args.groups else []
    t = Table(args.file, [args.time, args.event, *args.scores, *extra], sep=args.sep)
    time = t.floats(args.time)
    event = t.binary_labels(args.event)
    if not event.any():
        raise InputError(f"{t.path}: column {args.event!r} has no event (all rows censored); "
                         "the concordance needs at least one")
    sign = -1.0 if args.scores_are_times else 1.0
    scores = {s: sign * t.floats(s) for s in args.scores}
    groups = t.texts(args.groups) if args.groups else None
    runs = 2 * max(1, len(scores) - 1)
    with progress_bar(args.no_progress, runs * args.n_resamples) as bar:
        try:
            rep = survival(time, event, scores, tau=args.tau, n_resamples=args.n_resamples,
                           confidence_level=args.confidence_level, seed=args.seed,
                           groups=groups, progress=bar.update)
        except ValueError as exc:  # the library's own message names the rule
            raise InputError(f"{t.path}: {exc}") from None
    if args.scores_are_times:
        rep["direction"] = "scores are predicted times, negated (longer = lower risk)"
    return {"file": str(t.path), "time": args.time, "event": args.event, "scores": args.scores,
            "survival": rep}


def render_survival(rep: dict, markdown: bool) -> list[str]:
    s = rep["survival"]
    fmt = "github" if markdown else "simple"
    head = (f"file: {rep['file']}\n"
            f"n = {s['n']}, events = {s['n_events']}, censored = {s['n_censored']}; "
            f"{s['direction']}\n"
            f"{s['n_resamples']} paired bootstrap replicates (seed {s['seed']}, "
            f"{s['resampling']}), {100 * s['confidence_level']:g}% percentile intervals")
    lines = [head if not markdown else "  \n".join(head.splitlines()), ""]
    titles = s["titles"]
    lines.append(render_models(s["models"], titles, fmt))
    lines += render_comparisons(s, titles, s["n_resamples"], fmt)
    for msg in s.get("warnings", []):
        lines += ["", warning_line(msg)]
    undefined = [m for m, ms in s["models"].items() if ms["uno_c"]["estimate"] is None]
    if undefined and s["tau"] is None:
        lines += ["", warning_line("Uno's C is undefined where the censoring survival reaches "
                                   "0 at an event time; a truncation time --tau below the last "
                                   "follow-up avoids it").replace("warning:", "note:", 1)]
    return lines


# --------------------------------------------------------------------------- off-policy

_ESTIMATORS = {"ips": "IPS", "snips": "SNIPS", "dm": "direct method", "dr": "doubly robust"}


def offpolicy_report(args) -> dict:
    for opt in ("propensity", "reward", "target"):
        if getattr(args, opt) is None:
            raise InputError("--propensity, --reward and --target go together "
                             f"(--{opt} is missing)")
    if args.max_weight is not None and not (math.isfinite(args.max_weight)
                                            and args.max_weight > 0):
        raise InputError(f"--max-weight must be a finite number > 0, got {args.max_weight}")
    if args.min_propensity is not None and not 0 < args.min_propensity <= 1:
        raise InputError(f"--min-propensity must be in (0, 1], got {args.min_propensity}")
    t = Table(args.file, [args.propensity, args.reward], sep=args.sep)
    reward = t.floats(args.reward)
    propensity = t.floats(args.propensity)
    action = q = None
    used = [args.propensity, args.reward]
    if args.target in t.columns:
        target = t.floats(args.target)
        if args.action is not None or args.reward_model is not None:
            raise InputError(f"--target {args.target!r} is one column (the target policy's "
                             "probability of the logged action); --action and --reward-model "
                             "need one --target column per action (a prefix or glob)")
        target_cols = [args.target]
    else:
        target_cols, names = match_columns(t.columns, args.target, exclude=used)
        if not target_cols:
            raise InputError(f"{t.path}: --target {args.target!r} is neither a column nor the "
                             f"start (or glob) of any; columns are {', '.join(t.columns)}")
        if args.action is None:
            raise InputError(f"--target {args.target!r} gives one column per action "
                             f"({', '.join(target_cols)}): --action COL is required")
        target = np.stack([t.floats(c) for c in target_cols], axis=1)
        action = t.class_labels(args.action, names)
        if args.reward_model is not None:
            q_cols, q_names = match_columns(t.columns, args.reward_model,
                                            exclude=[*used, *target_cols])
            if len(q_cols) != len(target_cols):
                raise InputError(f"--reward-model {args.reward_model!r} matches "
                                 f"{len(q_cols)} columns ({', '.join(q_cols) or 'none'}) but "
                                 f"--target has {len(target_cols)}; give one per action")
            if q_names != names:
                raise InputError(f"--reward-model columns ({', '.join(q_cols)}) name other "
                                 f"actions than --target ({', '.join(target_cols)})")
            q = np.stack([t.floats(c) for c in q_cols], axis=1)
    estimators = ["ips", "snips"] + (["dm", "dr"] if q is not None else [])
    kw = dict(action=action, max_weight=args.max_weight, min_propensity=args.min_propensity)
    out: dict[str, Any] = {
        "n": t.n, "logged_mean_reward": float(np.mean(reward)),
        "max_weight": args.max_weight, "min_propensity": args.min_propensity,
        "n_resamples": args.n_resamples, "confidence_level": args.confidence_level,
        "seed": args.seed, "interval": "percentile", "estimates": {}, "warnings": [],
    }
    try:
        w = np.asarray(calipers.importance_weights(propensity, target, **kw))
        out["effective_sample_size"] = float(calipers.effective_sample_size(w))
        out["weights"] = {"min": float(w.min()), "mean": float(w.mean()), "max": float(w.max())}
        with progress_bar(args.no_progress, len(estimators) * args.n_resamples) as bar:
            for est in estimators:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", calipers.UndefinedMetricWarning)
                    r = calipers.off_policy_interval(
                        est, reward, propensity, target, q, **kw, n_resamples=args.n_resamples,
                        confidence_level=args.confidence_level, seed=args.seed)
                if bar.update is not None:
                    bar.update(args.n_resamples)
                out["estimates"][est] = {"estimate": _num(r.estimate), "ci_low": _num(r.confidence_interval.low),
                                         "ci_high": _num(r.confidence_interval.high),
                                         "n_undefined": int(r.n_undefined)}
    except ValueError as exc:  # the library's own message names the argument and the rule
        raise InputError(f"{t.path}: {exc}") from None
    if out["estimates"]["snips"]["estimate"] is None:
        out["warnings"].append("SNIPS is undefined: every importance weight is 0 (the target "
                               "policy never takes a logged action)")
    return {"file": str(t.path), "propensity": args.propensity, "reward": args.reward,
            "target": target_cols, "action": args.action, "offpolicy": out}


def render_offpolicy(rep: dict, markdown: bool) -> list[str]:
    from tabulate import tabulate

    o = rep["offpolicy"]
    fmt = "github" if markdown else "simple"
    clip = [f"weights clipped at {o['max_weight']:g}" if o["max_weight"] is not None else "",
            f"propensities floored at {o['min_propensity']:g}"
            if o["min_propensity"] is not None else ""]
    clip_text = "; ".join(c for c in clip if c) or "no clipping"
    wt = o["weights"]
    head = (f"file: {rep['file']}\n"
            f"n = {o['n']} logged rows, mean logged reward = {_fmt(o['logged_mean_reward'])}\n"
            f"importance weights: min {wt['min']:.4g}, mean {wt['mean']:.4g}, max {wt['max']:.4g}"
            f"; effective sample size {o['effective_sample_size']:.1f}; {clip_text}\n"
            f"{o['n_resamples']} bootstrap replicates of the rows (seed {o['seed']}), "
            f"{100 * o['confidence_level']:g}% percentile intervals")
    lines = [head if not markdown else "  \n".join(head.splitlines()), ""]
    rows = [[_ESTIMATORS[k], _fmt(e["estimate"]), f"[{_fmt(e['ci_low'])}, {_fmt(e['ci_high'])}]",
             e["n_undefined"]] for k, e in o["estimates"].items()]
    lines.append(tabulate(rows, headers=["estimator", "value of the target policy", "interval",
                                         "undefined replicates"],
                          tablefmt=fmt, disable_numparse=True))
    for msg in o.get("warnings", []):
        lines += ["", warning_line(msg)]
    return lines


# --------------------------------------------------------------------------- selective

def selective(y, scores: dict, *, n_resamples=1000, confidence_level=0.95, seed=0,
              groups=None, progress=None) -> dict:
    """AURC per probability model: confidence ``max(p, 1 - p)``, prediction ``p >= 0.5``."""
    probs = {k: s for k, s in scores.items() if np.all((s >= 0) & (s <= 1))}
    out: dict[str, Any] = {"confidence": "max(p, 1 - p)", "prediction": "p >= 0.5",
                           "loss": "0/1 error", "method": "tie_average",
                           "skipped": [k for k in scores if k not in probs]}
    if not probs:
        return out

    def aurc(ids, p):
        pred = (p >= 0.5).astype(np.int64)
        return float(calipers.aurc(np.maximum(p, 1 - p), y[ids], pred))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", calipers.UndefinedMetricWarning)
        out.update(bootstrap_by_rows([("aurc", "AURC", aurc, False)], int(y.shape[0]), probs,
                                     n_resamples=n_resamples, confidence_level=confidence_level,
                                     seed=seed, groups=groups, progress=progress))
    return out


def render_selective(rep: dict, n_resamples: int, markdown: bool) -> list[str]:
    s = rep["selective"]
    fmt = "github" if markdown else "simple"
    lines = ["", f"selective prediction (abstain on the least confident rows; confidence "
             f"{s['confidence']}, prediction {s['prediction']}, {s['loss']}; lower AURC is "
             "better):"]
    if "models" not in s:
        return lines + ["no model has probabilities in [0, 1]"]
    lines.append(render_models(s["models"], {"aurc": "AURC"}, fmt))
    lines += render_comparisons(s, {"aurc": "AURC"}, n_resamples, fmt)
    if s["skipped"]:
        lines.append(f"not probabilities, left out: {', '.join(s['skipped'])}")
    for msg in s.get("warnings", []):
        lines += ["", warning_line(msg)]
    return lines
