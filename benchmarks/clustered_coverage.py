"""Coverage of 95% intervals for an AUC difference on clustered data, by simulation.

The model: C clusters of m rows (n = C * m = 800 rows in every cell: 20 x 40, 40 x 20,
200 x 4). Each row is positive with probability 1/2. Cluster c draws a shift
u_c ~ N(0, tau^2) of model A's separation, shared by all its rows:

    a_i = (delta_a + u_c) y_i + e_ai,    b_i = delta_b y_i + e_bi,

with (e_ai, e_bi) standard normal with correlation rho (the two models are paired).
Conditionally on u_c a positive of cluster c is ranked above any negative (of any cluster)
by model A with probability Phi((delta_a + u_c) / sqrt 2), so every positive-negative pair
has the same expected indicator and the estimand is exact:

    AUC_A = Phi(delta_a / sqrt(2 + tau^2)),   AUC_B = Phi(delta_b / sqrt 2).

Rows of a cluster share u_c, so their placements are correlated: designs that treat the
800 rows as independent (DeLong's variance, the row bootstrap) under-cover, the more so the
fewer and larger the clusters. The designs compared on the same data sets:

- DeLong, rows independent (``delong_test``);
- clustered DeLong (Obuchowski 1997, ``delong_test(groups=)``), normal quantiles;
- clustered DeLong with ``small_sample=True`` (Student's t, C - 1 degrees of freedom);
- the paired bootstrap over rows (percentile);
- the paired cluster bootstrap (``groups=``, percentile);
- the cluster bootstrap with the replicated differences' deviations from the estimate
  scaled by sqrt(C / (C - 1)) before the percentile interval is read (computed here from
  ``bootstrap_distribution``: the bootstrap's own variance has no ``C / (C - 1)``).

Usage::

    python benchmarks/clustered_coverage.py                 # 1,000 data sets per cell
    python benchmarks/clustered_coverage.py --n-datasets 200 --markdown --json out.json

Everything is seeded (data sets and bootstrap), so a rerun gives the same table.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from statistics import NormalDist

import numpy as np

import calipers

CELLS = [(20, 40), (40, 20), (200, 4)]
DESIGNS = [
    ("delong", "DeLong, rows independent", False),
    ("delong_clustered", "clustered DeLong (Obuchowski)", True),
    ("delong_clustered_t", "clustered DeLong, small_sample=True (t, C - 1 df)", True),
    ("boot_rows", "bootstrap percentile, rows", False),
    ("boot_clusters", "bootstrap percentile, clusters", True),
    ("boot_clusters_inflated", "bootstrap percentile, clusters, deviations x sqrt(C/(C-1))",
     True),
]


def true_difference(delta_a, delta_b, tau):
    phi = NormalDist().cdf
    return phi(delta_a / math.sqrt(2 + tau * tau)) - phi(delta_b / math.sqrt(2))


def simulate(rng, C, m, *, delta_a, delta_b, tau, rho):
    g = np.repeat(np.arange(C), m)
    n = g.size
    y = rng.integers(0, 2, n)
    u = rng.normal(0.0, tau, C)[g]
    e1 = rng.normal(size=n)
    e2 = rho * e1 + math.sqrt(1 - rho * rho) * rng.normal(size=n)
    return y, (delta_a + u) * y + e1, delta_b * y + e2, g


def intervals(y, a, b, g, *, n_resamples, seed, level):
    C = int(np.unique(g).shape[0])
    out = {}
    d = calipers.delong_test(y, a, b, confidence_level=level)
    out["delong"] = d.confidence_interval
    d = calipers.delong_test(y, a, b, groups=g, confidence_level=level)
    out["delong_clustered"] = d.confidence_interval
    d = calipers.delong_test(y, a, b, groups=g, confidence_level=level, small_sample=True)
    out["delong_clustered_t"] = d.confidence_interval
    r = calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=n_resamples, seed=seed,
                                  confidence_level=level)
    out["boot_rows"] = r.confidence_interval
    r = calipers.paired_bootstrap("roc_auc", y, a, b, n_resamples=n_resamples, seed=seed,
                                  confidence_level=level, groups=g)
    out["boot_clusters"] = r.confidence_interval
    reps = np.asarray(r.bootstrap_distribution, dtype=float)
    reps = reps[np.isfinite(reps)]
    est = float(r.difference)
    scaled = est + math.sqrt(C / (C - 1)) * (reps - est)
    alpha = 1 - level
    out["boot_clusters_inflated"] = (float(np.quantile(scaled, alpha / 2)),
                                     float(np.quantile(scaled, 1 - alpha / 2)))
    return {k: ((float(v.low), float(v.high)) if hasattr(v, "low") else v) for k, v in out.items()}


def run(n_datasets, n_resamples, *, delta_a, delta_b, tau, rho, level, seed, progress=True):
    truth = true_difference(delta_a, delta_b, tau)
    rows = []
    for C, m in CELLS:
        hits = {k: 0 for k, _, _ in DESIGNS}
        width = {k: 0.0 for k, _, _ in DESIGNS}
        t0 = time.perf_counter()
        for i in range(n_datasets):
            rng = np.random.default_rng([seed, C, m, i])
            y, a, b, g = simulate(rng, C, m, delta_a=delta_a, delta_b=delta_b, tau=tau,
                                  rho=rho)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ivs = intervals(y, a, b, g, n_resamples=n_resamples, seed=i, level=level)
            for k, (lo, hi) in ivs.items():
                hits[k] += lo <= truth <= hi
                width[k] += hi - lo
            if progress and (i + 1) % 100 == 0:
                print(f"  {C} x {m}: {i + 1}/{n_datasets} ({time.perf_counter() - t0:.0f} s)",
                      file=sys.stderr)
        for k, title, meant in DESIGNS:
            p = hits[k] / n_datasets
            rows.append({"clusters": C, "rows_per_cluster": m, "design": k, "title": title,
                         "meant_for_clusters": meant, "coverage": p,
                         "mc_se": math.sqrt(p * (1 - p) / n_datasets),
                         "mean_width": width[k] / n_datasets})
    return truth, rows


def markdown(rows):
    lines = ["| clusters x rows | design | meant for clusters | coverage (± MC s.e.) | mean width |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['clusters']} x {r['rows_per_cluster']} | {r['title']} | "
                     f"{'yes' if r['meant_for_clusters'] else 'no'} | "
                     f"{100 * r['coverage']:.1f}% ± {100 * r['mc_se']:.1f} | "
                     f"{r['mean_width']:.4f} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-datasets", type=int, default=1000, help="data sets per cell")
    p.add_argument("--n-resamples", type=int, default=300, help="bootstrap replicates")
    p.add_argument("--tau", type=float, default=0.5, help="s.d. of the cluster shift of A")
    p.add_argument("--delta-a", type=float, default=1.5)
    p.add_argument("--delta-b", type=float, default=1.0)
    p.add_argument("--rho", type=float, default=0.5, help="correlation of the two models' noise")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--json", metavar="PATH", help="write every entry to PATH")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    truth, rows = run(args.n_datasets, args.n_resamples, delta_a=args.delta_a,
                      delta_b=args.delta_b, tau=args.tau, rho=args.rho,
                      level=args.confidence_level, seed=args.seed)
    elapsed = time.perf_counter() - t0
    print(f"true difference {truth:.4f}; {args.n_datasets} data sets per cell, "
          f"B = {args.n_resamples}, {100 * args.confidence_level:g}% intervals, "
          f"tau = {args.tau}, delta_a = {args.delta_a}, delta_b = {args.delta_b}, "
          f"rho = {args.rho}; {elapsed:.0f} s")
    if args.markdown:
        print(markdown(rows))
    else:
        for r in rows:
            print(f"{r['clusters']:>4} x {r['rows_per_cluster']:<3} {r['title']:<62} "
                  f"{100 * r['coverage']:5.1f}% ± {100 * r['mc_se']:.1f}  "
                  f"width {r['mean_width']:.4f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "true_difference": truth, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
