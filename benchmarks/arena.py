"""Arena bootstrap: calipers' ``bradley_terry_bootstrap`` against FastChat's bootstrap loop.

FastChat (lm-sys/FastChat, ``fastchat/serve/monitor/elo_analysis.py``, the Chatbot Arena
notebook) computes the leaderboard's intervals as follows: ``compute_mle_elo`` counts the
battles into a model x model table of wins (a win counts twice, a tie once for each side),
writes two rows per ordered pair of models — the +log(10) / -log(10) design of the pair,
one row with label 1 weighted by the pair's wins, one with label 0 weighted by its losses —
and fits an unpenalised scikit-learn ``LogisticRegression`` without intercept (``tol=1e-6``)
with those sample weights; the rating is ``400 * coef + 1000``. ``get_bootstrap_result``
redraws the battle table with replacement (``battles.sample(frac=1.0, replace=True)``) and
refits, once per replicate. The reference below follows that method step by step, with the
counting done by ``np.bincount`` on resampled battle indices instead of pandas pivot tables
(faster than pandas, so the ratio below is, if anything, in the reference's favour).
Unpenalised is ``C=np.inf`` (scikit-learn's spelling of ``penalty=None`` since 1.8).

calipers resamples the same battles with its counter-based resampler (counts per battle as
weights), counts once into the K x K win / tie matrices per replicate, and refits by Newton's
method from the full-data fit.

Both run on the same battles in one run. The reference at full size is slow: it is timed on
``--reference-resamples`` replicates and scaled per replicate to B (the output says so).
As a check the full-data ratings of the two must agree (both fix the mean at 1000).

    python benchmarks/arena.py                                  # 10^6 battles, 100 models
    python benchmarks/arena.py --n-battles 100000 --reference-resamples 20

Both sides spend their time in BLAS (calipers' 100 x 100 Newton solves, the reference's
lbfgs products with its 19,800 x 100 design): on a machine shared with other jobs, a
multi-threaded BLAS can be many times slower than one thread, so set
``OPENBLAS_NUM_THREADS`` (the output prints it) and compare ratios at the same setting.
"""

from __future__ import annotations

import argparse
import math
import platform
import subprocess
import time

import numpy as np


def make_battles(n, K, *, tie_rate=0.1, seed=0):
    """``n`` battles of ``K`` models with Bradley-Terry strengths ~ N(0, 1) (natural log)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, K)
    a = rng.integers(0, K, n)
    b = (a + rng.integers(1, K, n)) % K
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))
    u = rng.random(n)
    tie = u < tie_rate
    win_a = ~tie & (rng.random(n) < p)
    outcome = np.where(tie, 0.5, np.where(win_a, 1.0, 0.0))
    return a, b, outcome


def fastchat_mle_elo(a, b, outcome, K, *, scale=400.0, base=10.0, init_rating=1000.0):
    """FastChat's ``compute_mle_elo`` method on integer-coded battles (see the module doc)."""
    from sklearn.linear_model import LogisticRegression

    a_win = np.bincount(a[outcome == 1.0] * K + b[outcome == 1.0], minlength=K * K)
    b_win = np.bincount(a[outcome == 0.0] * K + b[outcome == 0.0], minlength=K * K)
    ties = np.bincount(a[outcome == 0.5] * K + b[outcome == 0.5], minlength=K * K)
    a_win, b_win, ties = (x.reshape(K, K).astype(np.float64) for x in (a_win, b_win, ties))
    # row beats column: 2 per win (as model_a or as model_b), 1 per tie on either side
    win = 2 * a_win + 2 * b_win.T + ties + ties.T
    ia, ib = np.nonzero(~np.eye(K, dtype=bool))          # every ordered pair of models
    m = ia.shape[0]
    X = np.zeros((2 * m, K))
    rows = np.arange(m)
    for half in (0, 1):
        X[2 * rows + half, ia] = math.log(base)
        X[2 * rows + half, ib] = -math.log(base)
    Y = np.zeros(2 * m)
    Y[0::2] = 1.0
    w = np.empty(2 * m)
    w[0::2] = win[ia, ib]
    w[1::2] = win[ib, ia]
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6)
    lr.fit(X, Y, sample_weight=w)
    return scale * lr.coef_[0] + init_rating


def fastchat_bootstrap(a, b, outcome, K, n_resamples, *, seed=0):
    """FastChat's ``get_bootstrap_result``: redraw the battles with replacement, refit."""
    rng = np.random.default_rng(seed)
    n = a.shape[0]
    out = np.empty((n_resamples, K))
    for r in range(n_resamples):
        i = rng.integers(0, n, n)
        out[r] = fastchat_mle_elo(a[i], b[i], outcome[i], K)
    return out


def cpu_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv=None):
    import calipers
    import sklearn.linear_model  # noqa: F401  (imported before any timing)

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-battles", type=int, default=1_000_000)
    p.add_argument("--n-models", type=int, default=100)
    p.add_argument("--n-resamples", type=int, default=1000, help="calipers' replicates (B)")
    p.add_argument("--reference-resamples", type=int, default=None,
                   help="replicates timed for the FastChat loop, scaled per replicate to B "
                        "(default: B, the full loop)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    n, K, B = args.n_battles, args.n_models, args.n_resamples
    Bref = args.reference_resamples or B
    a, b, outcome = make_battles(n, K, seed=args.seed)
    import os

    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    print(f"machine: {cpu_name()}, {os.cpu_count()} cores; numpy {np.__version__}, "
          f"scikit-learn {__import__('sklearn').__version__}; BLAS threads: "
          f"{threads or 'library default'}")
    print(f"{n} battles of {K} models ({int(np.sum(outcome == 0.5))} ties); B = {B}")

    t = time.perf_counter()
    ref_fit = fastchat_mle_elo(a, b, outcome, K)
    t_ref_fit = time.perf_counter() - t
    t = time.perf_counter()
    fit = calipers.bradley_terry(a, b, outcome)
    t_fit = time.perf_counter() - t
    gap = float(np.max(np.abs(np.asarray(fit.ratings) - ref_fit)))
    print(f"full-data fit: calipers {t_fit:.3f} s, FastChat method {t_ref_fit:.3f} s; "
          f"largest rating difference {gap:.2e} Elo points (tolerance of the reference's "
          "lbfgs, tol=1e-6)")

    t = time.perf_counter()
    res = calipers.bradley_terry_bootstrap(a, b, outcome, n_resamples=B, seed=args.seed)
    t_cal = time.perf_counter() - t
    t = time.perf_counter()
    reps = fastchat_bootstrap(a, b, outcome, K, Bref, seed=args.seed)
    t_ref = time.perf_counter() - t
    per_ref = t_ref / Bref
    scaled = per_ref * B
    note = ("" if Bref == B else
            f" (timed on {Bref} replicates, {per_ref:.3f} s each, scaled to B = {B})")
    print(f"calipers bradley_terry_bootstrap, B = {B}: {t_cal:.2f} s "
          f"({1e3 * t_cal / B:.2f} ms per replicate; {res.n_undefined} undefined)")
    print(f"FastChat bootstrap loop, B = {B}: {scaled:.1f} s{note}")
    print(f"ratio (FastChat loop / calipers): {scaled / t_cal:.0f}x")
    # the two bootstraps draw different resamples; their spreads must agree roughly
    sd_cal = np.nanstd(res.replicates, axis=0)
    sd_ref = reps.std(axis=0)
    print(f"bootstrap s.d. of the ratings, median over models: calipers "
          f"{np.median(sd_cal):.2f}, FastChat loop {np.median(sd_ref):.2f} "
          f"(on {Bref} replicates)")


if __name__ == "__main__":
    main()
