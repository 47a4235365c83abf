"""A bundle of trec_eval measures over many queries in one call: calipers vs pytrec_eval, ranx.

    python benchmarks/trec_bundle.py --queries 10000 [--docs 100] [--repeat 3]

Data: Q queries x D retrieved documents (integer ids for calipers' flat arrays, or strings
with ``--string-ids``; pytrec_eval and ranx get the same ids as strings in dicts) (distinct float32-exact scores), graded qrels (0..3)
on half the retrieved documents plus D/10 judged documents the run missed. The bundle is 10
trec_eval measure families with their default cut-offs (the same work for every library):
map, ndcg, ndcg_cut, P, recall, recip_rank, Rprec, bpref, success, map_cut. Construction
(building each library's input from the same Python dicts or flat arrays) is timed apart from
evaluation; the means of every measure are cross-checked between libraries. Median of
``--repeat`` runs; ratios are others' time / calipers'.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np

FAMILIES = ["map", "ndcg", "ndcg_cut", "P", "recall", "recip_rank", "Rprec", "bpref", "success",
            "map_cut"]


def make_data(Q, D, seed=0, string_ids=False):
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(Q), D)
    doc = np.tile(np.arange(D), Q) + rng.integers(0, 1000, size=Q * D) * 1000
    # distinct scores per query, exactly representable in float32
    score = (rng.permutation(Q * D) % (1 << 23)).astype(np.float64) / 1024.0
    judged = rng.random(Q * D) < 0.5
    rel = rng.integers(0, 4, size=Q * D)
    extra = D // 10
    mq = np.repeat(np.arange(Q), extra)
    md = 10**9 + rng.permutation(Q * extra)
    mr = rng.integers(1, 4, size=Q * extra)
    q_qid = np.concatenate([qid[judged], mq])
    q_doc = np.concatenate([doc[judged], md])
    q_rel = np.concatenate([rel[judged], mr])
    if string_ids:
        q_qid, q_doc, qid, doc = (a.astype(str) for a in (q_qid, q_doc, qid, doc))
    return (q_qid, q_doc, q_rel), (qid, doc, score)


def timed(fn, repeat):
    ts, out = [], None
    for _ in range(repeat):
        # free the previous repeat's objects before the clock starts (else their
        # deallocation is billed to the next call), for every library alike
        out = None
        gc.collect()
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), out


def as_dicts(flat):
    q, d, v = flat
    out: dict = {}
    for a, b, c in zip(q.astype(str).tolist(), d.astype(str).tolist(), v.tolist()):
        out.setdefault(a, {})[b] = c
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=10000)
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ranx", action="store_true")
    ap.add_argument("--string-ids", action="store_true",
                    help="give calipers string ids (default: integer ids, the packed-key join)")
    args = ap.parse_args()
    from calipers.retrieval import _io
    from calipers import retrieval

    qrels, run = make_data(args.queries, args.docs, string_ids=args.string_ids)
    rows = []

    # calipers: flat arrays in; construction = reading them into Qrels/Run, which encodes
    # each once (its per-query join keys, the run's ranking); evaluate keeps nothing between
    # calls, so each repeat does the whole join and every measure
    t_build, (cq, cr) = timed(lambda: (_io._as_qrels(qrels),
                                       _io._as_run(run, "bench")), args.repeat)
    t_eval, res = timed(lambda: retrieval.evaluate(cq, cr, FAMILIES), args.repeat)
    rows.append(("calipers", t_build, t_eval))
    means = res.mean

    qd, rd = as_dicts(qrels), as_dicts(run)
    try:
        import pytrec_eval
    except ImportError:
        pytrec_eval = None
    if pytrec_eval is not None:
        t_build, ev = timed(lambda: pytrec_eval.RelevanceEvaluator(qd, set(FAMILIES)),
                            args.repeat)
        t_eval, ref = timed(lambda: ev.evaluate(rd), args.repeat)
        rows.append(("pytrec_eval", t_build, t_eval))
        for name in ("map", "ndcg_cut_10", "P_10", "bpref", "recip_rank", "success_10"):
            theirs = float(np.mean([ref[q][name] for q in res.query_ids]))
            assert abs(theirs - means[name]) < 1e-9, (name, theirs, means[name])
    if not args.no_ranx:
        try:
            import ranx
        except ImportError:
            ranx = None
        if ranx is not None:
            names = ["map", "ndcg", "ndcg@10", "precision@10", "recall@100", "mrr",
                     "r-precision", "bpref", "hit_rate@10", "map@10"]
            t_build, (rq, rr) = timed(lambda: (ranx.Qrels(qd), ranx.Run(rd)), 1)
            t_eval, _ = timed(lambda: ranx.evaluate(rq, rr, names, make_comparable=True), 1)
            rows.append(("ranx", t_build, t_eval))

    t_sort, _ = timed(lambda: np.sort(run[2]), args.repeat)
    print(f"{args.queries} queries x {args.docs} documents, {len(FAMILIES)} measure families "
          f"({len(res.measures)} values per query), median of {args.repeat}; np.sort of the "
          f"run's scores {t_sort:.3f}s")
    base = rows[0]
    print(f"{'library':<12} {'construction':>13} {'evaluation':>11} {'eval ratio':>11}")
    for name, tb, te in rows:
        print(f"{name:<12} {tb:12.3f}s {te:10.3f}s {te / base[2]:10.1f}x")


if __name__ == "__main__":
    main()
