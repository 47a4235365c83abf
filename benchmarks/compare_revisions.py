"""Two revisions of calipers side by side in one run: the same calls, ratios new / old.

    python benchmarks/compare_revisions.py OLD_REV [NEW_REV] [--n 1000000] [--repeat 5]
                                        [--json out.json]

Each revision's ``src/`` is exported with ``git archive`` (NEW_REV defaults to the
working tree) and every task runs in a fresh process per revision, the two
revisions alternating task by task, so a drift of the machine's speed hits both.
Reported per task: the median seconds of each revision and their ratio (above 1:
the new revision is slower). The tasks are public calls whose names and
arguments are the same in both revisions: ROC AUC, AP and the ROC curve on
random and tied scores, log loss, a paired AUC bootstrap, per-query NDCG@10,
grouped AUC, and ``import calipers``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
import time, warnings, numpy as np
import calipers
rng = np.random.default_rng(0)
n = {n}
y = (rng.random(n) < 0.3).astype(np.int64)
s = rng.normal(size=n) + y
t = np.round(s, 1)
p = 1 / (1 + np.exp(-s))
m = 10**4
yb, ab = y[:m], s[:m]
bb = ab + rng.normal(size=m)
q = 10**4
qid = np.repeat(np.arange(q), 100)
rel = rng.integers(0, 4, q * 100) * (rng.random(q * 100) < 0.3)
sc = rng.normal(size=q * 100) + 0.3 * rel
g = rng.integers(0, 10**4, n)
"""

TASKS = {
    "roc_auc_score random": "calipers.roc_auc_score(y, s)",
    "roc_auc_score tied": "calipers.roc_auc_score(y, t)",
    "average_precision_score random": "calipers.average_precision_score(y, s)",
    "average_precision_score tied": "calipers.average_precision_score(y, t)",
    "roc_curve random": "calipers.roc_curve(y, s)",
    "log_loss": "calipers.log_loss(y, p)",
    "paired_bootstrap AUC n=1e4 B=1000":
        "calipers.paired_bootstrap(calipers.roc_auc_score, yb, ab, bb, n_resamples=1000, seed=0)",
    "ndcg@10 1e4 queries": "calipers.retrieval.ndcg(rel, sc, qid, k=10)",
    "grouped_roc_auc 1e4 groups": "calipers.grouped_roc_auc(y, s, g)",
}


def export(rev: str | None, dest: Path) -> Path:
    if rev is None:
        return ROOT / "src"
    data = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, check=True,
                          capture_output=True).stdout
    tar = dest / "src.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as tf:
        tf.extractall(dest, filter="data")
    return dest / "src"


def run_task(src: Path, stmt: str, n: int, repeat: int) -> float:
    code = SETUP.format(n=n) + textwrap.dedent(f"""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            {stmt}
            times = []
            for _ in range({repeat}):
                t0 = time.perf_counter()
                {stmt}
                times.append(time.perf_counter() - t0)
        print(sorted(times)[len(times) // 2])
    """)
    env = dict(os.environ, PYTHONPATH=str(src), JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def import_time(src: Path, repeat: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(src))
    times = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c",
                              "import time; t = time.perf_counter(); import calipers; "
                              "print(time.perf_counter() - t)"],
                             env=env, check=True, capture_output=True, text=True)
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new", nargs="?", default=None, help="default: the working tree")
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d_old, tempfile.TemporaryDirectory() as d_new:
        old = export(a.old, Path(d_old))
        new = export(a.new, Path(d_new))
        print(f"# {a.old} -> {a.new or 'working tree'}; n = {a.n:,}; median of {a.repeat}")
        print(f"{'task':38s} {'old s':>9s} {'new s':>9s} {'new/old':>8s}")
        for name, stmt in TASKS.items():
            t_old = run_task(old, stmt, a.n, a.repeat)
            t_new = run_task(new, stmt, a.n, a.repeat)
            rows.append({"task": name, "old": t_old, "new": t_new, "ratio": t_new / t_old})
            print(f"{name:38s} {t_old:9.4f} {t_new:9.4f} {t_new / t_old:8.2f}", flush=True)
        t_old, t_new = import_time(old, a.repeat), import_time(new, a.repeat)
        rows.append({"task": "import calipers", "old": t_old, "new": t_new,
                     "ratio": t_new / t_old})
        print(f"{'import calipers':38s} {t_old:9.4f} {t_new:9.4f} {t_new / t_old:8.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"old": a.old, "new": a.new, "n": a.n,
                                            "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
