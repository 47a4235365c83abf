"""Coverage of paired intervals for an AUC difference, by simulation with a known truth.

    python benchmarks/interval_coverage.py [--trials 200] [--n 100 200 1000 10000] [--B 500]
                                  [--section all|paired|simultaneous]
                                  [--json out.json] [--markdown]

Data: two correlated models scored on the same examples, binormal — a
negative's scores are N(0, 1), a positive's N(mu_a, 1) and N(mu_b, 1), the two
models' scores correlated rho = 0.5 within each example — so each model's true
AUC is Phi(mu / sqrt(2)) and the true difference is known exactly. Prevalence
0.3. The clustered variant adds to each model's scores its own random effect
N(0, s_c^2) per cluster (size 5), so rows of a cluster are dependent and the
two models' errors differ by cluster. A positive-negative pair from two
clusters then has AUC Phi(mu / sqrt(2 (1 + s_c^2))), a pair inside one
cluster Phi(mu / sqrt(2)); with w = (size - 1) / (n - 1) the share of pairs
inside a cluster, the estimand is w A_within + (1 - w) A_between.

Designs: percentile / basic / BCa intervals × rows resampled plainly or
stratified by class × (clustered data) rows or whole clusters resampled, and
DeLong's Wald interval (rows assumed independent) and, for clustered data,
its clustered version (Obuchowski 1997). Each design reports the
share of trials whose 95% interval covered the true difference (with its
binomial standard error) and the mean width. A design is "meant for the data"
when its resampling unit is the data's independent unit (rows for independent
data, clusters for clustered data).

Simultaneous coverage (``--section simultaneous``): K_MODELS + 1 binormal
models on the same examples, model k's positives N(mu_k, 1), every two models'
scores correlated rho = 0.5 within an example (a shared N(0, 1) term), so
each true AUC is Phi(mu_k / sqrt(2)) and every true difference is known.
``many_models_bootstrap`` compares the models (each against the first, and
all pairs) on shared resamples; a trial covers when ALL the family's
intervals cover their true differences at once. Intervals: the max-T
simultaneous interval, the marginal 95% percentile intervals (no
adjustment), and Bonferroni percentile intervals (level 1 - 0.05 / m). The
family-wise error rate at 5% (some true-zero difference called significant) is
reported for the Romano-Wolf step-down p-values, for Holm over
``paired_bootstrap``'s p-values, and unadjusted.

Random streams: trial t uses seed t for the data and t for the bootstrap, so
every design sees the same data sets and a rerun gives the same table.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings

import numpy as np
from scipy import stats

import calipers

MU_A, MU_B, RHO, PREV = 1.2, 0.9, 0.5, 0.3
CLUSTER_SIZE, CLUSTER_SD = 5, 1.0


def true_difference(clustered: bool, n: int) -> float:
    def auc(mu, var_effect):
        return stats.norm.cdf(mu / math.sqrt(2 * (1 + var_effect)))

    if not clustered:
        return float(auc(MU_A, 0.0) - auc(MU_B, 0.0))
    w = (CLUSTER_SIZE - 1) / (n - 1)
    return float(sum(sign * (w * auc(mu, 0.0) + (1 - w) * auc(mu, CLUSTER_SD ** 2))
                     for sign, mu in ((1, MU_A), (-1, MU_B))))


def simulate(rng, n: int, clustered: bool):
    y = (rng.random(n) < PREV).astype(np.int64)
    if y.min() == y.max():  # a data set with one class has no AUC: flip one row
        y[0] = 1 - y[0]
    z = rng.multivariate_normal([0, 0], [[1, RHO], [RHO, 1]], size=n)
    a = z[:, 0] + MU_A * y
    b = z[:, 1] + MU_B * y
    groups = None
    if clustered:
        groups = np.arange(n) // CLUSTER_SIZE
        k = groups.max() + 1
        a = a + rng.normal(0, CLUSTER_SD, k)[groups]
        b = b + rng.normal(0, CLUSTER_SD, k)[groups]
    return y, a, b, groups


def designs(clustered: bool):
    out = []
    for method in ("percentile", "basic", "bca"):
        for stratify in (False, True):
            name = f"{method}, {'stratified' if stratify else 'plain'} rows"
            out.append((name, dict(method=method, stratify=stratify), not clustered))
        if clustered:
            out.append((f"{method}, clusters", dict(method=method, groups=True), True))
    out.append(("DeLong Wald", None, not clustered))
    if clustered:
        out.append(("DeLong Wald, clustered (Obuchowski)", "clustered", True))
    return out


def run(ns, trials, B, clustered):
    rows = []
    for n in ns:
        truth = true_difference(clustered, n)
        hits = {}
        widths = {}
        t0 = time.perf_counter()
        for t in range(trials):
            y, a, b, groups = simulate(np.random.default_rng(t), n, clustered)
            cis = {}
            # one bootstrap per resampling design: BCa from the library, and the percentile and
            # basic intervals from the same replicates (what method= would compute from them)
            units = [("plain rows", dict(stratify=False)), ("stratified rows", dict(stratify=True))]
            if clustered:
                units.append(("clusters", dict(groups=groups)))
            for unit, kw in units:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = calipers.paired_bootstrap(calipers.roc_auc_score, y, a, b,
                                                    n_resamples=B, seed=t, method="bca", **kw)
                ci = res.confidence_interval
                cis[f"bca, {unit}"] = (ci.low, ci.high)
                for method in ("percentile", "basic"):
                    ci = calipers.bootstrap_interval(res.bootstrap_distribution,
                                                     float(res.difference), method=method)
                    cis[f"{method}, {unit}"] = (ci.low, ci.high)
            ci = calipers.delong_test(y, a, b).confidence_interval
            cis["DeLong Wald"] = (ci.low, ci.high)
            if clustered:
                ci = calipers.delong_test(y, a, b, groups=groups).confidence_interval
                cis["DeLong Wald, clustered (Obuchowski)"] = (ci.low, ci.high)
            for name, _, _ in designs(clustered):
                lo, hi = (float(v) for v in cis[name])
                hits.setdefault(name, []).append(lo <= truth <= hi)
                widths.setdefault(name, []).append(hi - lo)
        secs = time.perf_counter() - t0
        for name, _, meant in designs(clustered):
            h = np.asarray(hits[name], dtype=float)
            cov = float(h.mean())
            rows.append(dict(data="clustered" if clustered else "independent", n=n,
                             design=name, meant_for_data=meant, coverage=cov,
                             se=math.sqrt(cov * (1 - cov) / len(h)),
                             width=float(np.nanmean(widths[name])), trials=len(h)))
        print(f"  {'clustered' if clustered else 'independent'} n={n}: {trials} trials "
              f"in {secs:.0f} s", flush=True)
    return rows


# the first model is the baseline; the second has the baseline's AUC (a true-zero difference)
SIM_MU = (0.9, 0.9, 1.0, 1.2, 1.4)


def simulate_many(rng, n: int):
    y = (rng.random(n) < PREV).astype(np.int64)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    common = rng.normal(size=n)
    scores = [math.sqrt(RHO) * common + math.sqrt(1 - RHO) * rng.normal(size=n) + mu * y
              for mu in SIM_MU]
    return y, scores


def run_simultaneous(ns, trials, B, comparisons):
    auc = [float(stats.norm.cdf(mu / math.sqrt(2))) for mu in SIM_MU]
    rows = []
    for n in ns:
        cover = {"max-T simultaneous": [], "marginal percentile": [],
                 "Bonferroni percentile": []}
        widths = {k: [] for k in cover}
        fwer = {"Romano-Wolf step-down": [], "Holm (paired_bootstrap p)": [],
                "unadjusted (paired_bootstrap p)": []}
        t0 = time.perf_counter()
        m = 0
        for t in range(trials):
            y, scores = simulate_many(np.random.default_rng(t), n)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = calipers.many_models_bootstrap(calipers.roc_auc_score, y, *scores,
                                                     comparisons=comparisons, n_resamples=B,
                                                     seed=t)
            m = len(res.comparisons)
            truth = np.array([auc[a] - auc[b] for a, b in res.comparisons])
            null = truth == 0
            d, dist = res.difference, res.bootstrap_distribution
            ok = np.all(np.isfinite(dist), axis=1)
            bonf = [calipers.bootstrap_interval(dist[ok, j], float(d[j]),
                                                confidence_level=1 - 0.05 / m)
                    for j in range(m)]
            ends = {"max-T simultaneous": (res.simultaneous_interval.low,
                                           res.simultaneous_interval.high),
                    "marginal percentile": (res.confidence_interval.low,
                                            res.confidence_interval.high),
                    "Bonferroni percentile": (np.array([c.low for c in bonf]),
                                              np.array([c.high for c in bonf]))}
            for name, (lo, hi) in ends.items():
                cover[name].append(bool(np.all((lo <= truth) & (truth <= hi))))
                widths[name].append(float(np.mean(hi - lo)))
            # paired_bootstrap's percentile-inversion p-values from the same replicates
            p_pair = np.array([min(1.0, 2 * min(np.mean(dist[ok, j] <= 0),
                                                np.mean(dist[ok, j] >= 0))) for j in range(m)])
            holm = calipers.adjust_pvalues(p_pair, method="holm")
            for name, p in (("Romano-Wolf step-down", res.pvalue_romano_wolf),
                            ("Holm (paired_bootstrap p)", holm),
                            ("unadjusted (paired_bootstrap p)", p_pair)):
                fwer[name].append(bool(np.any(np.asarray(p)[null] <= 0.05)))
        secs = time.perf_counter() - t0
        label = (f"{len(SIM_MU) - 1} models vs a baseline" if comparisons == "baseline"
                 else f"{len(SIM_MU)} models, all pairs")
        for name in cover:
            h = np.asarray(cover[name], dtype=float)
            cov = float(h.mean())
            rows.append(dict(data=label, n=n, m=m, design=name, coverage=cov,
                             se=math.sqrt(cov * (1 - cov) / len(h)), width=float(np.mean(widths[name])), trials=len(h)))
        for name in fwer:
            h = np.asarray(fwer[name], dtype=float)
            r = float(h.mean())
            rows.append(dict(data=label, n=n, m=m, design=f"FWER at 5%: {name}", coverage=r,
                             se=math.sqrt(r * (1 - r) / len(h)), width=math.nan,
                             trials=len(h)))
        print(f"  simultaneous ({comparisons}) n={n}: {trials} trials in {secs:.0f} s",
              flush=True)
    return rows


def markdown_simultaneous(rows) -> str:
    lines = ["| models | comparisons m | n | interval / test | all m cover (± s.e.) or FWER "
             "| mean width |", "|---|---|---|---|---|---|"]
    for r in rows:
        w = "" if math.isnan(r["width"]) else f"{r['width']:.4f}"
        lines.append(f"| {r['data']} | {r['m']} | {r['n']} | {r['design']} | "
                     f"{100 * r['coverage']:.1f}% ± {100 * r['se']:.1f} | {w} |")
    return "\n".join(lines)


def markdown(rows) -> str:
    lines = ["| data | n | design | meant for the data | coverage (± s.e.) | mean width |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['data']} | {r['n']} | {r['design']} | "
                     f"{'yes' if r['meant_for_data'] else 'no'} | "
                     f"{100 * r['coverage']:.1f}% ± {100 * r['se']:.1f} | {r['width']:.4f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--n", type=int, nargs="+", default=[100, 200, 1000, 10000])
    ap.add_argument("--B", type=int, default=500)
    ap.add_argument("--no-clustered", action="store_true")
    ap.add_argument("--section", choices=["all", "paired", "simultaneous"], default="all")
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    if args.section in ("all", "paired"):
        rows = run(args.n, args.trials, args.B, clustered=False)
        if not args.no_clustered:
            rows += run(args.n, args.trials, args.B, clustered=True)
        print(f"true difference: independent {true_difference(False, 2):.5f}, clustered "
              f"{true_difference(True, 10**9):.5f} (large n)")
        print(markdown(rows))
    if args.section in ("all", "simultaneous"):
        sim = []
        for comparisons in ("baseline", "all_pairs"):
            sim += run_simultaneous(args.n, args.trials, args.B, comparisons)
        print(markdown_simultaneous(sim))
        rows += sim
    print(f"{time.perf_counter() - t0:.0f} s in all")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
