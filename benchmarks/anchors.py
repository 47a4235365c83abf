"""Beyond classification: calipers beside its specialist anchors, as speed ratios.

    python benchmarks/anchors.py [--quick] [--surv-python PY] [--conf-python PY] [--out DIR]

The anchors are not calipers dependencies and pin their own scikit-learn, so
they live in separate virtual environments; this driver runs one worker per
environment (``PY benchmarks/anchors.py --worker surv|conf`` with this
checkout's ``src`` first on ``PYTHONPATH``, calipers on NumPy there) and prints
one table. In each worker, on the same data:

* survival (scikit-survival, lifelines): Harrell's C, Uno's C (``tau`` at the
  90th percentile of time) and the cumulative/dynamic AUC at 5 times, 10^6 rows;
* conformal (MAPIE, crepes): split-conformal regression intervals, LAC and
  (non-randomised) APS sets, 10^5-row calibration set, 10^4 test rows, 10 classes;
* off-policy (Open Bandit Pipeline): IPS, SNIPS, DR, 10^6 logged rounds, 10 actions.

Anchors whose cost grows too fast for 10^6 rows are timed at a smaller n and
scaled explicitly, and the table says so: scikit-survival's two C-indices
compare each event with every later row (O(n^2), scaled by ``(N/n)^2``);
lifelines' ``concordance_index`` walks the rows in Python with a balanced tree
(O(n log n), scaled by ``N log N / (n log n)``). Every row also checks that
the two libraries agree on the data where both ran (max absolute difference).
A library that is not importable is skipped with a message. ``--quick``: small
sizes, one repeat (a smoke run). Read ratios, not absolute times: the machine
may be shared.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# the anchor-data generators of the tests hold the adapters the anchors need (imported in workers)
sys.path.insert(0, str(ROOT / "tests" / "data"))
DEFAULT_PY = {"surv": "/work/venvs/surv/bin/python", "conf": "/work/venvs/conf/bin/python"}


def _median(fn, repeat, warm=True):
    """Median seconds of ``repeat`` calls; one untimed call first unless ``warm=False``
    (first-call costs: lazy imports, caches)."""
    times, out = [], None
    if warm:
        fn()
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def _emit(**row):
    print("ROW " + json.dumps(row), flush=True)


def _skip(msg):
    print("SKIP " + msg, flush=True)


def _have(mod):
    try:
        __import__(mod)
        return True
    except Exception as exc:  # an anchor that fails to import for any reason is skipped
        _skip(f"{mod} not importable ({type(exc).__name__}: {exc})")
        return False


# --------------------------------------------------------------------------- survival

def surv_data(n, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 1000, n).astype(float)          # integer times: many ties
    e = rng.random(n) < 0.6
    # rounded to 1e-4: exact ties, and no two distinct risks within scikit-survival's
    # tied_tol=1e-8 (which calipers does not apply), so both count the same pairs
    r = np.round(rng.normal(size=n) - t / 500, 4)
    # events at the last time: the censoring survival G stays positive at every time, so
    # scikit-survival's IPCW metrics do not raise
    e[t == t.max()] = True
    return e, t, r


def worker_surv(quick):
    import calipers

    N = 10**4 if quick else 10**6
    n_quad = 2 * 10**3 if quick else 2 * 10**4     # scikit-survival's C-indices: O(n^2)
    n_ll = 10**4 if quick else 10**5               # lifelines: Python loop, O(n log n)
    rep = 1 if quick else 3
    e, t, r = surv_data(N)
    tau = float(np.quantile(t, 0.9))
    times = np.unique(np.quantile(t, [0.1, 0.3, 0.5, 0.7, 0.8]))
    cal = {
        "harrell": _median(lambda: calipers.concordance_index_censored(e, t, r), rep),
        "uno": _median(lambda: calipers.concordance_index_ipcw(e, t, r, tau=tau), rep),
        "cdauc": _median(lambda: calipers.cumulative_dynamic_auc(e, t, r, times), rep),
    }
    for k, (s, _) in cal.items():
        _emit(section="survival", metric=k, impl="calipers", n=N, seconds=s, measured_n=N)

    def small(m):
        es, ts, rs = surv_data(m, seed=1)
        tau_s = float(np.quantile(ts, 0.9))
        return es, ts, rs, tau_s

    if _have("sksurv"):
        from sksurv.metrics import (concordance_index_censored, concordance_index_ipcw,
                                    cumulative_dynamic_auc)
        from sksurv.util import Surv

        es, ts, rs, tau_s = small(n_quad)
        ys = Surv.from_arrays(es, ts)
        for metric, ref_fn, cal_fn in (
                ("harrell", lambda: concordance_index_censored(es, ts, rs)[0],
                 lambda: calipers.concordance_index_censored(es, ts, rs).cindex),
                ("uno", lambda: concordance_index_ipcw(ys, ys, rs, tau=tau_s)[0],
                 lambda: calipers.concordance_index_ipcw(es, ts, rs, tau=tau_s).cindex)):
            sec, val = _median(ref_fn, 1, warm=False)
            _emit(section="survival", metric=metric, impl="scikit-survival", n=N,
                  seconds=sec * (N / n_quad) ** 2, measured_n=n_quad, scaling="(N/n)^2",
                  max_abs_diff=abs(float(val) - float(cal_fn())))
        y = Surv.from_arrays(e, t)
        sec, (auc, _) = _median(lambda: cumulative_dynamic_auc(y, y, r, times), 1)
        mine = calipers.cumulative_dynamic_auc(e, t, r, times).auc
        _emit(section="survival", metric="cdauc", impl="scikit-survival", n=N, seconds=sec,
              measured_n=N, max_abs_diff=float(np.max(np.abs(np.asarray(auc) - mine))))
    if _have("lifelines"):
        from lifelines.utils import concordance_index

        es, ts, rs, _ = small(n_ll)
        sec, val = _median(lambda: concordance_index(ts, -rs, es), 1, warm=False)
        mine = calipers.concordance_index_censored(es, ts, rs).cindex
        scale = N * math.log(N) / (n_ll * math.log(n_ll))
        _emit(section="survival", metric="harrell", impl="lifelines", n=N, seconds=sec * scale,
              measured_n=n_ll, scaling="N log N / (n log n)",
              max_abs_diff=abs(float(val) - float(mine)))


# --------------------------------------------------------------------------- conformal

def conf_data(n_cal, n_test, K, seed=0):
    rng = np.random.default_rng(seed)
    y_cal = rng.normal(size=n_cal) * 2 + 1
    p_cal = y_cal + rng.standard_t(3, size=n_cal)
    p_test = rng.normal(size=n_test)
    lc = rng.normal(size=(n_cal, K)) * 1.5
    pc = np.exp(lc) / np.exp(lc).sum(1, keepdims=True)
    # labels drawn from the probabilities, vectorised (inverse CDF)
    yc = np.minimum((pc.cumsum(1) < rng.random((n_cal, 1))).sum(1), K - 1)
    lt = rng.normal(size=(n_test, K)) * 1.5
    pt = np.exp(lt) / np.exp(lt).sum(1, keepdims=True)
    return y_cal, p_cal, p_test, yc, pc, pt


def worker_conf(quick):
    import calipers

    n_cal = 10**3 if quick else 10**5
    n_test = 10**3 if quick else 10**4
    K, alpha, rep = 10, 0.1, (1 if quick else 3)
    y_cal, p_cal, p_test, yc, pc, pt = conf_data(n_cal, n_test, K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sec, reg = _median(lambda: calipers.split_conformal_regression(
            y_cal, p_cal, p_test, alpha=alpha), rep)
        _emit(section="conformal", metric="regression", impl="calipers", n=n_cal, seconds=sec,
              measured_n=n_cal)
        sets = {}
        for m in ("lac", "aps"):
            sec, res = _median(lambda: calipers.split_conformal_classification(
                yc, pc, pt, alpha=alpha, method=m), rep)
            sets[m] = np.asarray(res.sets)
            _emit(section="conformal", metric=m, impl="calipers", n=n_cal, seconds=sec,
                  measured_n=n_cal)
    lo, hi = np.asarray(reg.lower), np.asarray(reg.upper)

    if _have("mapie"):
        # the adapters that hand MAPIE precomputed predictions: one definition, the
        # anchor-data generator's
        from gen_conformal_anchors import ColumnRegressor, ProbaClassifier
        from mapie.classification import SplitConformalClassifier
        from mapie.conformity_scores import APSConformityScore
        from mapie.regression import SplitConformalRegressor

        class NonRandomAPS(APSConformityScore):
            """MAPIE's APS without the random U at calibration (calipers' APS)."""

            def get_conformity_scores(self, y, y_pred, y_enc=None, **kwargs):
                scores, self.cutoff = self.get_true_label_cumsum_proba(y, y_pred, self.classes)
                return scores

        def mapie_reg():
            m = SplitConformalRegressor(ColumnRegressor().fit(p_cal[:, None], y_cal),
                                        confidence_level=1 - alpha, prefit=True)
            m.conformalize(p_cal[:, None], y_cal)
            return m.predict_interval(p_test[:, None])[1]

        sec, iv = _median(mapie_reg, rep)
        diff = max(np.max(np.abs(iv[:, 0, 0] - lo)), np.max(np.abs(iv[:, 1, 0] - hi)))
        _emit(section="conformal", metric="regression", impl="MAPIE", n=n_cal, seconds=sec,
              measured_n=n_cal, max_abs_diff=float(diff))
        clf = ProbaClassifier().fit(pc, yc)
        for m, score, params in (("lac", "lac", None),
                                 ("aps", NonRandomAPS(), {"include_last_label": True})):
            def mapie_sets():
                sc = SplitConformalClassifier(clf, confidence_level=1 - alpha,
                                              conformity_score=score, prefit=True)
                sc.conformalize(pc, yc)
                return sc.predict_set(pt, conformity_score_params=params)[1][:, :, 0]

            sec, s = _median(mapie_sets, rep)
            _emit(section="conformal", metric=m, impl="MAPIE", n=n_cal, seconds=sec,
                  measured_n=n_cal, sets_differing=int(np.sum(np.any(s != sets[m], axis=1))))
    if _have("crepes"):
        import crepes

        def crepes_reg():
            cr = crepes.ConformalRegressor()
            cr.fit(y_cal - p_cal)
            return cr.predict_int(p_test, confidence=1 - alpha)

        sec, civ = _median(crepes_reg, rep)
        diff = max(np.max(np.abs(civ[:, 0] - lo)), np.max(np.abs(civ[:, 1] - hi)))
        _emit(section="conformal", metric="regression", impl="crepes", n=n_cal, seconds=sec,
              measured_n=n_cal, max_abs_diff=float(diff))

        def crepes_lac():
            cc = crepes.ConformalClassifier()
            cc.fit(1.0 - pc[np.arange(n_cal), yc])          # LAC score: 1 - p(true class)
            return cc.predict_set(1.0 - pt, confidence=1 - alpha, smoothing=False)

        sec, s = _median(crepes_lac, rep)
        _emit(section="conformal", metric="lac", impl="crepes", n=n_cal, seconds=sec,
              measured_n=n_cal,
              sets_differing=int(np.sum(np.any(s.astype(bool) != sets["lac"], axis=1))))


# --------------------------------------------------------------------------- off-policy

def bandit_data(n, K, seed=0):
    rng = np.random.default_rng(seed)
    pb = rng.dirichlet(np.ones(K) * 0.7, size=n)
    action = np.minimum((pb.cumsum(1) < rng.random((n, 1))).sum(1), K - 1)
    pscore = pb[np.arange(n), action]
    pe = rng.dirichlet(np.ones(K) * 0.5, size=n)
    mean_reward = rng.uniform(0.1, 0.9, size=(n, K))
    reward = (rng.uniform(size=n) < mean_reward[np.arange(n), action]).astype(float)
    q_hat = np.clip(mean_reward + rng.normal(scale=0.1, size=(n, K)), 0, 1)
    return reward, action, pscore, pe, q_hat


def worker_offpolicy(quick):
    import calipers

    N, K, rep = (10**4 if quick else 10**6), 10, (1 if quick else 3)
    reward, action, pscore, pe, q = bandit_data(N, K)
    mine = {}
    for m, fn in (("ips", lambda: calipers.ips_estimate(reward, pscore, pe, action=action)),
                  ("snips", lambda: calipers.snips_estimate(reward, pscore, pe, action=action)),
                  ("dr", lambda: calipers.doubly_robust_estimate(reward, pscore, pe, q,
                                                                  action=action))):
        sec, mine[m] = _median(fn, rep)
        _emit(section="offpolicy", metric=m, impl="calipers", n=N, seconds=sec, measured_n=N)
    if "torch" not in sys.modules:
        try:
            __import__("torch")
        except ImportError:
            from gen_offpolicy_anchors import _stub_torch  # obp imports torch at module level

            _stub_torch()
    if not _have("obp"):
        return
    from obp.ope.estimators import (DoublyRobust, InverseProbabilityWeighting,
                                    SelfNormalizedInverseProbabilityWeighting)

    kw = dict(reward=reward, action=action, pscore=pscore, action_dist=pe[:, :, None],
              position=np.zeros(N, dtype=int))
    for m, fn in (("ips", lambda: InverseProbabilityWeighting().estimate_policy_value(**kw)),
                  ("snips", lambda: SelfNormalizedInverseProbabilityWeighting()
                   .estimate_policy_value(**kw)),
                  ("dr", lambda: DoublyRobust().estimate_policy_value(
                      **kw, estimated_rewards_by_reg_model=q[:, :, None]))):
        sec, val = _median(fn, rep)
        _emit(section="offpolicy", metric=m, impl="Open Bandit Pipeline", n=N, seconds=sec,
              measured_n=N, max_abs_diff=abs(float(val) - float(mine[m])))


# --------------------------------------------------------------------------- driver

def run_worker(kind, py, quick):
    if not Path(py).exists():
        _skip(f"{kind}: interpreter {py} not found; its anchors are skipped")
        return []
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    cmd = [py, str(Path(__file__).resolve()), "--worker", kind] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    rows = []
    for line in proc.stdout.splitlines():
        if line.startswith("ROW "):
            rows.append(json.loads(line[4:]))
        elif line.startswith("SKIP "):
            print("skipped:", line[5:])
    if proc.returncode:
        print(f"{kind} worker failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return rows


def table(rows):
    out = ["| section | metric | n | calipers (s) | anchor | anchor (s) | measured at | "
           "anchor / calipers | agreement |",
           "|---|---|---:|---:|---|---:|---|---:|---|"]
    cal = {(r["section"], r["metric"]): r for r in rows if r["impl"] == "calipers"}
    for r in rows:
        if r["impl"] == "calipers":
            continue
        c = cal.get((r["section"], r["metric"]))
        if c is None:
            continue
        where = f"{r['measured_n']:,}" + (f", scaled {r['scaling']}" if r.get("scaling") else "")
        agree = (f"max |diff| {r['max_abs_diff']:.1e}" if "max_abs_diff" in r
                 else f"{r['sets_differing']} sets differ" if "sets_differing" in r else "")
        out.append(f"| {r['section']} | {r['metric']} | {r['n']:,} | {c['seconds']:.4f} | "
                   f"{r['impl']} | {r['seconds']:.3f} | {where} | "
                   f"{r['seconds'] / c['seconds']:,.1f} | {agree} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat")
    ap.add_argument("--worker", choices=["surv", "conf"], help=argparse.SUPPRESS)
    ap.add_argument("--surv-python", default=DEFAULT_PY["surv"],
                    help="interpreter with scikit-survival and lifelines")
    ap.add_argument("--conf-python", default=DEFAULT_PY["conf"],
                    help="interpreter with mapie, crepes and obp")
    ap.add_argument("--only", choices=["surv", "conf"], help="run one worker only")
    ap.add_argument("--out", help="folder for anchors.json (optional)")
    args = ap.parse_args()
    if args.worker == "surv":
        worker_surv(args.quick)
        return
    if args.worker == "conf":
        worker_conf(args.quick)
        worker_offpolicy(args.quick)
        return
    cpu = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True,
                         text=True).stdout.split(":")[-1].strip()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, CPU {cpu}, "
          f"load {os.getloadavg()[0]:.1f}, {'quick' if args.quick else 'full'} sizes")
    rows = []
    if args.only in (None, "surv"):
        rows += run_worker("surv", args.surv_python, args.quick)
    if args.only in (None, "conf"):
        rows += run_worker("conf", args.conf_python, args.quick)
    print(table(rows))
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "anchors.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
