"""``calipers trec QRELS RUN [RUN_B] -m MEASURE ... [-q] [-c] [-l N]``.

Evaluates a TREC run against qrels and prints trec_eval's format
(``measure<TAB>qid<TAB>value``, ``all`` for the mean), or JSON. Defaults match
trec_eval 9.0.8: ties broken by document id descending, scores as 32-bit
floats, queries without relevant documents scored 0 and kept in the mean,
``-c`` averaging over every query of the qrels.

With a second run it compares the two on the same queries: per-query
differences (with ``-q``), a paired bootstrap over queries (percentile
interval for the mean difference; none below 10 queries) and a paired
randomisation (sign-flip) test, exact up to 20 queries
(:func:`calipers.paired_unit_bootstrap`, :func:`calipers.paired_permutation_test`).
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

import calipers
from calipers import retrieval

from ._errors import InputError

# Counts: printed as integers, and trec_eval's "all" line is their sum.
_COUNTS = frozenset({"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})
# trec_eval prints these only in the summary (geometric means over queries).
_NO_PER_QUERY = frozenset({"gm_map", "gm_bpref"})


def add_parser(subparsers):
    p = subparsers.add_parser(
        "trec", help="evaluate TREC runs against qrels (trec_eval format), compare two runs",
        description="Evaluate a TREC run (qid Q0 docno rank score tag) against qrels "
                    "(qid 0 docno rel) with trec_eval 9.0.8's conventions; with a second run, "
                    "compare the two (paired bootstrap over queries, randomisation test).")
    p.add_argument("qrels", help="qrels file: qid iteration docno relevance")
    p.add_argument("run", help="run file: qid Q0 docno rank score tag")
    p.add_argument("run_b", nargs="?", default=None,
                   help="second run: compare RUN (A) with RUN_B (B)")
    p.add_argument("-m", dest="measures", action="append", default=None, metavar="MEASURE",
                   help="trec_eval measure, repeatable, with trec_eval's parameters "
                        "(P.5,10, ndcg.1=3,2=9, iprec_at_recall..1,.5, utility.2,-1,0,0, "
                        "relstring.20, ...), all_trec (every measure), official "
                        "(trec_eval's default set, the default here too), or an ir_measures "
                        "name (nDCG@10, P(rel=2)@5, AP, RR, Judged@10, ...)")
    p.add_argument("-q", dest="per_query", action="store_true",
                   help="also print each query's value (with two runs: each query's A - B)")
    p.add_argument("-c", dest="complete", action="store_true",
                   help="average over every query of the qrels (queries missing from the "
                        "run score 0)")
    p.add_argument("-l", dest="level", type=int, default=1, metavar="N",
                   help="minimum relevance counted as relevant for binary measures (default 1)")
    p.add_argument("--ties", choices=["trec_eval", "average"], default="trec_eval",
                   help="tie rule: trec_eval (score, then docno descending; default) or "
                        "average (expected value over orderings of tied scores)")
    p.add_argument("--format", choices=["trec", "json"], default="trec", dest="fmt",
                   help="trec: trec_eval's lines (default); json: every value at full "
                        "precision")
    p.add_argument("--n-resamples", type=int, default=10000, metavar="B",
                   help="bootstrap replicates and randomisation permutations "
                        "(comparison; default 10000)")
    p.add_argument("--confidence-level", "--confidence", dest="confidence", type=float,
                   default=0.95, metavar="LEVEL",
                   help="confidence level of the bootstrap interval, in (0, 1) "
                        "(comparison; default 0.95)")
    p.add_argument("--seed", type=int, default=0,
                   help="random seed of the bootstrap and the randomisation test "
                        "(comparison; default 0)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (one appears on a terminal while files over "
                        "20 MB are read)")
    return p


# --------------------------------------------------------------------------
# measures
# --------------------------------------------------------------------------

def parse_measures(specs):
    """``["P.5,10", "map"]`` -> ordered (family, cut-off or None) pairs, trec_eval order."""
    try:
        return retrieval.parse_trec_measures(specs)
    except ValueError as exc:
        raise InputError(f"-m {exc}") from None


def check_measures(specs, ties="trec_eval"):
    """Fail fast, before reading files, on a measure name (trec_eval's or ir_measures')
    and on a measure the tie rule ``ties`` does not cover."""
    # evaluate() parses the names first; a one-document input makes it cost nothing
    tiny = ({"q": {"d": 1}}, {"q": {"d": 1.0}})
    try:
        retrieval.evaluate(*tiny, specs)
    except ValueError as exc:
        raise InputError(f"-m {exc}") from None
    if ties != "trec_eval":
        try:
            retrieval.evaluate(*tiny, specs, ties=ties)
        except ValueError as exc:
            raise InputError(f"--ties {ties}: {exc}") from None


_PROGRESS_BYTES = 20_000_000   # files smaller than this read too fast for a bar to help


def _bar(path, progress):
    """A tqdm bar as the reader's ``progress(done, total)`` callable, or None (no bar)."""
    import os

    try:
        if not progress or os.path.getsize(path) < _PROGRESS_BYTES:
            return None
        from tqdm import tqdm
    except (OSError, ImportError):
        return None
    bar = tqdm(total=os.path.getsize(path), unit="B", unit_scale=True, disable=None,
               leave=False, desc=os.path.basename(path))

    def report(done, total):
        bar.total = total
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
    return report


def _load(path, reader, progress):
    try:
        return reader(path, progress=_bar(path, progress) or False)
    except retrieval.TrecFormatError as exc:
        raise InputError(str(exc)) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _fmt_value(fam, v):
    if fam == "relstring":
        return f"'{v}'"
    if fam in _COUNTS:
        return str(int(round(v)))
    return f"{v:.4f}"


def _line(name, qid, value):
    return f"{name:<22}\t{qid}\t{value}"


# --------------------------------------------------------------------------
# comparison of two runs
# --------------------------------------------------------------------------

def paired_query_stats(a, b, *, n_resamples=10000, confidence=0.95, seed=0):
    """Bootstrap over queries and sign-flip randomisation test for mean(a - b).

    A dict of :func:`calipers.paired_unit_bootstrap` (percentile interval,
    share of replicates with A ahead; None below 10 queries) and
    :func:`calipers.paired_permutation_test` (two-sided p-value: exact up to
    20 queries, else Monte Carlo with ``(1 + hits) / (1 + n_resamples)``).
    """
    import warnings

    with warnings.catch_warnings():
        # Too few queries: the interval is left out and the printed note says why.
        warnings.simplefilter("ignore", calipers.UndefinedMetricWarning)
        boot = calipers.paired_unit_bootstrap(a, b, n_resamples=n_resamples,
                                              confidence_level=confidence, seed=seed)
    perm = calipers.paired_permutation_test(a, b, n_resamples=n_resamples, seed=seed)

    def num(x):
        x = float(x)
        return None if math.isnan(x) else x

    return {"difference": float(boot.difference),
            "ci_low": num(boot.confidence_interval.low),
            "ci_high": num(boot.confidence_interval.high),
            "confidence": confidence, "prob_a_greater": num(boot.prob_a_greater),
            "p_randomization": float(perm.pvalue), "p_exact": perm.exact,
            "n_queries": boot.n_units, "n_resamples": n_resamples}


# --------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------

def run(args) -> int:
    if args.n_resamples <= 0:
        raise InputError("--n-resamples must be a positive integer")
    if not 0 < args.confidence < 1:
        raise InputError("--confidence-level must be in (0, 1)")
    specs = args.measures or ["official"]   # trec_eval's default set
    check_measures(specs, args.ties)
    progress = not args.no_progress
    qrels = _load(args.qrels, retrieval.read_qrels, progress)
    if qrels.qid.shape[0] == 0:
        raise InputError(f"{args.qrels}: the qrels hold no judgement")
    run_a = _load(args.run, retrieval.read_run, progress)
    if run_a.qid.shape[0] == 0:
        raise InputError(f"{args.run}: the run holds no document")
    opts = dict(relevance_level=args.level, ties=args.ties)
    if args.run_b is None:
        res = _evaluate(args.run, qrels, run_a, specs, complete_qrels=args.complete, **opts)
        return _print_single(args, res)
    run_b = _load(args.run_b, retrieval.read_run, progress)
    if run_b.qid.shape[0] == 0:
        raise InputError(f"{args.run_b}: the run holds no document")
    qq = np.unique(qrels.qid)
    queries = qq if args.complete else np.intersect1d(
        qq, np.union1d(np.unique(run_a.qid), np.unique(run_b.qid)))
    if queries.shape[0] == 0:
        raise InputError(f"{args.qrels}: no query of the qrels appears in either run")
    ra = _evaluate(args.run, qrels, run_a, specs, queries=queries, **opts)
    rb = _evaluate(args.run_b, qrels, run_b, specs, queries=queries, **opts)
    return _print_compare(args, ra, rb)


def _evaluate(path, qrels, run, specs, **kw):
    try:
        return retrieval.evaluate(qrels, run, specs, **kw)
    except ValueError as exc:   # e.g. a run that shares no query with the qrels
        raise InputError(f"{path}: {exc}") from None


def _print_single(args, res):
    out = sys.stdout
    qids = [str(q) for q in res.query_ids]
    shown = np.asarray(res.in_run)   # -c: queries missing from the run are not printed
    num_q = len(qids)
    vals = res.values if num_q else {}   # no query: only runid and num_q are printed
    fam_of = dict(zip(res.measures, res.families))
    if args.fmt == "json":
        doc = {"runid": res.run_id, "num_q": num_q, "measures": {}}
        for name in res.measures:
            fam = fam_of[name]
            if name not in vals:
                if name != "num_q" and fam == "num_q":   # NumQ
                    doc["measures"][name] = {"all": num_q}
                continue
            v = vals[name]
            cnt = fam in _COUNTS
            entry = {}
            if name in res.mean:
                agg = float(v.sum()) if cnt else res.mean[name]
                entry["all"] = int(round(agg)) if cnt else agg
            if args.per_query and fam not in _NO_PER_QUERY:
                entry["per_query"] = {q: (x if fam == "relstring" else
                                          int(round(x)) if cnt else float(x))
                                      for q, x, s in zip(qids, v, shown) if s}
            doc["measures"][name] = entry
        json.dump(doc, out, indent=1)
        out.write("\n")
        return 0
    if args.per_query:
        for i, q in enumerate(qids):
            if not shown[i]:
                continue
            for name in res.measures:
                fam = fam_of[name]
                if name in vals and fam not in _NO_PER_QUERY:
                    out.write(_line(name, q, _fmt_value(fam, vals[name][i])) + "\n")
    for name in res.measures:
        fam = fam_of[name]
        if name == "runid":
            out.write(_line("runid", "all", res.run_id) + "\n")
        elif fam == "num_q":     # num_q, NumQ
            out.write(_line(name, "all", str(num_q)) + "\n")
        elif name in vals and name in res.mean:
            agg = vals[name].sum() if fam in _COUNTS else res.mean[name]
            out.write(_line(name, "all", _fmt_value(fam, agg)) + "\n")
    return 0


def _print_compare(args, ra, rb):
    out = sys.stdout
    qids = [str(q) for q in ra.query_ids]
    va, vb = ra.values, rb.values
    tag_a, tag_b = ra.run_id, rb.run_id
    fam_of = dict(zip(ra.measures, ra.families))
    rows = []
    for name in ra.measures:
        # counts and relstring are not compared; gm_map and gm_bpref are geometric means
        # whose per-query values are map's and bpref's, so a row for them would repeat those
        fam = fam_of[name]
        if name not in va or fam in _COUNTS or fam in _NO_PER_QUERY or fam == "relstring":
            continue
        st = paired_query_stats(va[name], vb[name], n_resamples=args.n_resamples,
                                confidence=args.confidence, seed=args.seed)
        rows.append((name, float(va[name].mean()), float(vb[name].mean()), st,
                     va[name] - vb[name]))
    if args.fmt == "json":
        doc = {"run_a": tag_a, "run_b": tag_b, "num_q": len(qids), "measures": {}}
        for name, ma, mb, st, d in rows:
            entry = {"mean_a": ma, "mean_b": mb, **st}
            if args.per_query:
                entry["per_query_difference"] = {q: float(x) for q, x in zip(qids, d)}
            doc["measures"][name] = entry
        json.dump(doc, out, indent=1)
        out.write("\n")
        return 0
    if args.per_query:
        for name, _, _, _, d in rows:
            for q, x in zip(qids, d):
                out.write(_line(name + "_diff", q, f"{x:.4f}") + "\n")
    pct = f"{100 * args.confidence:g}%"
    nq = len(qids)
    exact = bool(rows) and rows[0][3]["p_exact"]
    perm = f"randomisation test exact over 2^{nq} sign patterns" if exact else \
        f"{args.n_resamples} randomisation permutations"
    out.write(f"# A = {tag_a} ({args.run}), B = {tag_b} ({args.run_b}); {nq} queries; "
              f"{args.n_resamples} bootstrap replicates, {perm}, seed {args.seed}\n")
    if nq < calipers.MIN_BOOTSTRAP_UNITS:
        out.write(f"# fewer than {calipers.MIN_BOOTSTRAP_UNITS} queries: no bootstrap interval "
                  f"(it would under-cover); rely on the randomisation test\n")
    head = f"{'measure':<22}\t{'A':>8}\t{'B':>8}\t{'A-B':>8}\t{pct + ' CI':>19}\t" \
           f"{'P(A>B)':>7}\t{'p_rand':>7}"
    out.write(head + "\n")
    for name, ma, mb, st, _ in rows:
        ci = "-" if st["ci_low"] is None else f"[{st['ci_low']:+.4f}, {st['ci_high']:+.4f}]"
        pa = "-" if st["prob_a_greater"] is None else f"{st['prob_a_greater']:7.4f}"
        out.write(f"{name:<22}\t{ma:8.4f}\t{mb:8.4f}\t{st['difference']:+8.4f}\t{ci:>19}\t"
                  f"{pa:>7}\t{st['p_randomization']:7.4f}\n")
    return 0
