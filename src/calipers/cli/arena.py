"""``calipers arena``: Bradley-Terry ratings of many models from a file of pairwise battles.

Reads a CSV, TSV or Parquet file with one row per battle (or the bundled
example when no file is given): the two models and the winner, which is one of
the two models or the tie value (``--tie``). Prints each model's rating on the
Elo scale (mean 1000) with a bootstrap percentile interval, its rank and rank
interval, and the share of replicates in which it is rated highest, all from
:func:`calipers.bradley_terry_bootstrap` (battles resampled, or clusters of
battles with ``--cluster``). Ties count half a win to each side.

The bundled example is the English Premier League 2023/24 season (380 matches
of 20 clubs, draws as ties) from the openfootball project (CC0, public domain).
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
from ._common import _fmt, add_bootstrap_arguments, warning_line
from ._errors import InputError
from ._io import Table

EXAMPLE = "premier_league_2023_24.csv"
EXAMPLE_COLUMNS = {"model_a": "home", "model_b": "away", "winner": "winner", "tie": "draw",
                   "cluster": "matchday"}

EPILOG = """examples:
  calipers arena                                   the bundled example (clustered by matchday)
  calipers arena battles.csv --model-a model_a --model-b model_b --winner winner --tie tie
  calipers arena battles.csv --model-a a --model-b b --winner w --cluster prompt_id --plot r.png
"""


def add_parser(sub):
    import argparse
    import textwrap

    p = sub.add_parser(
        "arena", help="Bradley-Terry ratings with bootstrap intervals from pairwise battles",
        description="\n\n".join(textwrap.fill(par.replace("\n", " "), 79)
                                  for par in (__doc__ or "").split("\n\n")[1:3]),
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?", help="CSV, TSV or Parquet, one row per battle (default: "
                   "the bundled Premier League 2023/24 season)")
    g = p.add_argument_group("columns")
    g.add_argument("--model-a", metavar="COL", help="column of the first model of each battle")
    g.add_argument("--model-b", metavar="COL", help="column of the second model")
    g.add_argument("--winner", metavar="COL", help="column of the winner: the model in "
                   "--model-a or in --model-b of that row, or the --tie value")
    g.add_argument("--tie", metavar="VALUE", help="the --winner value of a tie (default: no "
                   "ties; for the example: draw)")
    g.add_argument("--cluster", metavar="COL", help="cluster bootstrap: resample the groups of "
                   "COL (a prompt, a user, a round) and keep their battles")
    g.add_argument("--sep", metavar="CHAR", help="field separator of a text file (default: tab "
                   "for .tsv files, else comma; '\\t' or 'tab' for a tab)")
    add_bootstrap_arguments(p)
    g = p.add_argument_group("output")
    g.add_argument("--format", choices=["text", "json", "markdown"], default="text",
                   help="a text table (default), JSON with every number, or a Markdown table")
    g.add_argument("--plot", metavar="PATH", help="write the ratings with their intervals to "
                   "PATH (.png, .pdf, .svg)")
    return p


# --------------------------------------------------------------------------- reading

def _resolve(args) -> tuple[Path, dict[str, Any]]:
    if args.file is None:
        cols = dict(EXAMPLE_COLUMNS)
        for key in ("model_a", "model_b", "winner", "tie", "cluster"):
            if getattr(args, key) is not None:
                cols[key] = getattr(args, key)
        return Path(str(resources.files("calipers") / "data" / EXAMPLE)), cols
    missing = [f"--{k.replace('_', '-')}" for k in ("model_a", "model_b", "winner")
               if getattr(args, k) is None]
    if missing:
        raise InputError(f"{' and '.join(missing)} COL {'is' if len(missing) == 1 else 'are'} "
                         "required with a file")
    return Path(args.file), {k: getattr(args, k) for k in
                             ("model_a", "model_b", "winner", "tie", "cluster")}


def read_battles(path, cols: dict[str, Any], *, sep: str | None = None):
    """``(model_a, model_b, outcome, groups)`` from a battles file.

    ``outcome`` is 1 where the winner is ``model_a``, 0 where it is
    ``model_b`` and 0.5 where it is the tie value; any other winner, an
    empty value, or a battle of a model against itself is an
    :class:`InputError` naming the file, column and row.
    """
    names = [cols["model_a"], cols["model_b"], cols["winner"]]
    if cols.get("cluster"):
        names.append(cols["cluster"])
    if len(set(names)) != len(names):
        raise InputError(f"the columns {', '.join(names)} must be distinct")
    t = Table(path, names, sep=sep)
    a, b, w = (t.texts(c) for c in names[:3])
    same = a == b
    if same.any():
        i = int(np.flatnonzero(same)[0])
        raise InputError(f"{t.where(cols['model_b'], i)}: model {str(b[i])!r} is also the "
                         f"--model-a of this battle; a model cannot battle itself")
    tie = cols.get("tie")
    if tie is not None:
        clash = (a == tie) | (b == tie)
        if clash.any():
            i = int(np.flatnonzero(clash)[0])
            col = cols["model_a"] if a[i] == tie else cols["model_b"]
            raise InputError(f"{t.where(col, i)}: the model {tie!r} is also the --tie value")
    outcome = np.where(w == a, 1.0, np.where(w == b, 0.0, 0.5))
    ok = (w == a) | (w == b) | ((w == tie) if tie is not None else False)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        allowed = f"{str(a[i])!r} or {str(b[i])!r}" + (f" or the tie value {tie!r}"
                                                       if tie is not None else
                                                       " (no --tie value given)")
        raise InputError(f"{t.where(cols['winner'], i)}: winner {str(w[i])!r} is not one of the "
                         f"two models of the battle: {allowed}")
    groups = t.texts(cols["cluster"]) if cols.get("cluster") else None
    return a, b, outcome, groups


# --------------------------------------------------------------------------- computing

def compute(model_a, model_b, outcome, *, groups=None, n_resamples=1000,
            confidence_level=0.95, seed=0) -> dict:
    """The ratings as a plain dict (what ``--format json`` prints), best first.

    Every number is a field of :func:`calipers.bradley_terry_bootstrap` called
    with these arguments (``groups`` for the cluster bootstrap).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = calipers.bradley_terry_bootstrap(
            model_a, model_b, outcome, groups=groups, n_resamples=n_resamples,
            confidence_level=confidence_level, seed=seed)
    shown = []
    for w in caught:
        if issubclass(w.category, (calipers.UndefinedMetricWarning,
                                   calipers.BootstrapDesignWarning)):
            msg = str(w.message)
            if msg not in shown:
                shown.append(msg)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    fit = res.fit
    battles = (fit.win_counts + fit.win_counts.T + fit.tie_counts).sum(axis=1)
    order = sorted(range(len(res.models)), key=lambda k: (-res.ratings[k], str(res.models[k])))
    models = [{
        "model": str(res.models[k]),
        "rating": _num(res.ratings[k]),
        "ci_low": _num(res.rating_interval.low[k]),
        "ci_high": _num(res.rating_interval.high[k]),
        "rank": int(res.ranks[k]),
        "rank_low": _whole(res.rank_interval.low[k]),
        "rank_high": _whole(res.rank_interval.high[k]),
        "prob_best": _num(res.prob_best[k]),
        "battles": _whole(battles[k]),
    } for k in order]
    return {
        "n_battles": int(np.asarray(outcome).shape[0]),
        "n_ties": int(np.sum(np.asarray(outcome) == 0.5)),
        "n_models": len(res.models),
        "n_clusters": None if groups is None else int(np.unique(groups).shape[0]),
        "resampling": res.resampling,
        "n_resamples": res.n_resamples,
        "n_undefined": res.n_undefined,
        "confidence_level": res.confidence_level,
        "seed": seed,
        "scale": fit.scale,
        "ties": fit.ties,
        "mean_rating": _num(np.mean(res.ratings)),
        "prior": _num(fit.prior),
        "log_likelihood": _num(fit.log_likelihood),
        "models": models,
        "warnings": shown,
    }


def _num(x):
    x = float(x)
    return None if math.isnan(x) else x


def _whole(x):
    """A whole number (a rank, a count of unweighted battles) as an int; NaN as None."""
    x = _num(x)
    return None if x is None else int(x)


# --------------------------------------------------------------------------- output

def render_text(rep: dict, shown: str, *, markdown: bool = False) -> str:
    from tabulate import tabulate

    level = f"{100 * rep['confidence_level']:g}%"
    unit = (f"the {rep['n_clusters']} clusters of {rep['cluster']!r}"
            if rep["n_clusters"] is not None else rep["resampling"])
    prior = (f"; no finite MLE: Gaussian prior of precision {rep['prior']:g} on the ratings"
             if rep["prior"] else "")
    lines = [f"file: {shown}",
             f"{rep['n_battles']} battles of {rep['n_models']} models, {rep['n_ties']} ties "
             "(a tie counts half a win to each side)",
             f"Bradley-Terry ratings on the Elo scale (mean {rep['mean_rating']:g}){prior}",
             f"{rep['n_resamples']} bootstrap replicates over {unit} (seed {rep['seed']}), "
             f"{level} percentile intervals"
             + (f", {rep['n_undefined']} undefined replicates left out"
                if rep["n_undefined"] else ""),
             ""]
    rows = [[m["rank"], m["model"], _fmt(m["rating"], 1),
             f"[{_fmt(m['ci_low'], 1)}, {_fmt(m['ci_high'], 1)}]",
             "undefined" if m["rank_low"] is None else
             f"{int(m['rank_low'])}-{int(m['rank_high'])}",
             _fmt(m["prob_best"], 3), str(m["battles"])] for m in rep["models"]]
    lines.append(tabulate(rows, headers=["rank", "model", "rating", f"{level} interval",
                                         "rank interval", "P(best)", "battles"],
                          tablefmt="pipe" if markdown else "simple", disable_numparse=True))
    for msg in rep["warnings"]:
        lines += ["", warning_line(msg)]
    return "\n".join(lines)


def plot(rep: dict, path: str) -> None:
    """The ratings with their intervals, best at the top (:func:`calipers.plot.forest`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from calipers import plot as cplot

    ms = rep["models"]
    nan = float("nan")
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.3 * len(ms)))
    cplot.forest([m["model"] for m in ms],
                 [nan if m["rating"] is None else m["rating"] for m in ms],
                 [nan if m["ci_low"] is None else m["ci_low"] for m in ms],
                 [nan if m["ci_high"] is None else m["ci_high"] for m in ms],
                 reference=rep["mean_rating"],
                 xlabel=f"Bradley-Terry rating (Elo scale), "
                        f"{100 * rep['confidence_level']:g}% bootstrap interval", ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _check_plot_path(target):
    """Fail before the bootstrap, in one line, on a path matplotlib cannot write."""
    p = Path(target)
    if not p.parent.is_dir():
        raise InputError(f"--plot {target}: folder {str(p.parent)!r} does not exist")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    formats = FigureCanvasAgg(Figure()).get_supported_filetypes()
    ext = p.suffix.lower().lstrip(".")
    if ext not in formats:
        raise InputError(f"--plot {target}: unknown image format {ext!r}; use one of "
                         f"{', '.join(sorted(formats))}")


# --------------------------------------------------------------------------- entry point

def run(args) -> int:
    if args.n_resamples < 1:
        raise InputError(f"--n-resamples must be at least 1, got {args.n_resamples}")
    if not (0 < args.confidence_level < 1):
        raise InputError(f"--confidence-level must be in (0, 1), got {args.confidence_level}")
    if args.plot:
        _check_plot_path(args.plot)
    path, cols = _resolve(args)
    a, b, outcome, groups = read_battles(path, cols, sep=args.sep)
    try:
        rep = compute(a, b, outcome, groups=groups, n_resamples=args.n_resamples,
                      confidence_level=args.confidence_level, seed=args.seed)
    except ValueError as exc:   # e.g. a comparison graph that is not connected
        raise InputError(f"{path}: {exc}") from None
    rep = {"file": str(path), "model_a": cols["model_a"], "model_b": cols["model_b"],
           "winner": cols["winner"], "tie": cols["tie"], "cluster": cols["cluster"], **rep}
    if args.plot:
        plot(rep, args.plot)
        rep["plot"] = args.plot
    if args.format == "json":
        print(json.dumps(rep, indent=2))
    else:
        shown = str(path) if args.file is not None else f"{EXAMPLE} (bundled example)"
        print(render_text(rep, shown, markdown=args.format == "markdown"))
        if args.plot:
            print(f"\nratings written to {args.plot}")
    return 0
