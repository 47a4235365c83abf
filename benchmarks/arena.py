"""Arena bootstrap: calipers' ``bradley_terry_bootstrap`` against FastChat's bootstrap loop.

FastChat (lm-sys/FastChat; the Chatbot Arena notebook of the LMSYS leaderboard post of
2023-12-07, and ``fastchat/serve/monitor/elo_analysis.py``) computes the leaderboard's
intervals as follows: ``compute_mle_elo`` counts the battles into model x model tables with
pandas ``pivot_table`` (model_a wins, model_b wins, ties; a win counts twice, a tie once for
each side), writes two rows per ordered pair of models in a Python loop over the pairs - the
+log(10) / -log(10) design of the pair, one row with label 1 weighted by the pair's wins, one
with label 0 weighted by its losses - and fits an unpenalised scikit-learn
``LogisticRegression`` without intercept (``tol=1e-6``) with those sample weights; the rating
is ``400 * coef + 1000``. ``get_bootstrap_result`` redraws the battle table with replacement
(``battles.sample(frac=1.0, replace=True)``) and refits, once per replicate.

Two references run on the same battles as calipers:

* **the FastChat loop, literal**: a pandas DataFrame of the battles (``model_a``,
  ``model_b``, ``winner`` in {"model_a", "model_b", "tie"}), ``sample(frac=1.0,
  replace=True)``, the three pivot tables, the loop over the pairs and the regression, as
  above. It needs pandas (the ``bench`` extra), and is timed on ``--literal-resamples``
  replicates (it is slow);
* **the FastChat method with NumPy counting**: the same regression on the same design, the
  counting done by ``np.bincount`` on resampled battle indices instead of pandas (faster than
  pandas, so its ratio is, if anything, in the reference's favour), timed on
  ``--reference-resamples`` replicates.

Each is scaled per replicate to B (the output says so). Unpenalised is ``C=np.inf``
(scikit-learn's spelling of ``penalty=None`` since 1.8).

calipers groups the battles into cells (pair and outcome) once and draws each replicate's
cell counts as one multinomial over the cells, then refits by Newton's method on the K x K
counts from the full-data fit.

As a check the full-data ratings must agree (all fix the mean at 1000), and the bootstrap
spreads roughly (the sides draw different resamples).

    python benchmarks/arena.py                                  # 10^6 battles, 100 models
    python benchmarks/arena.py --n-battles 100000 --reference-resamples 20

Both sides spend time in BLAS (calipers' 100 x 100 Newton solves, the reference's lbfgs
products with its 19,800 x 100 design): on a machine shared with other jobs, a multi-threaded
BLAS can be many times slower than one thread, so set ``OPENBLAS_NUM_THREADS`` (the output
prints it) and compare ratios at the same setting. ``--json PATH`` writes the figures
(default ``benchmarks/results/arena.json``).
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


def battles_frame(a, b, outcome):
    """The battles as FastChat holds them: a DataFrame of model names and the winner."""
    import pandas as pd

    names = np.array([f"model_{k:03d}" for k in range(int(max(a.max(), b.max())) + 1)])
    winner = np.where(outcome == 1.0, "model_a", np.where(outcome == 0.0, "model_b", "tie"))
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner})


def fastchat_literal_mle_elo(df, *, scale=400.0, base=10.0, init_rating=1000.0):
    """FastChat's ``compute_mle_elo`` as written: pandas pivot tables, a loop over the pairs."""
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    def table(rows):
        return pd.pivot_table(rows, index="model_a", columns="model_b", aggfunc="size",
                              fill_value=0)

    a_win = table(df[df["winner"] == "model_a"])
    tie_rows = df[df["winner"] == "tie"]
    if len(tie_rows) == 0:
        tie = pd.DataFrame(0, index=a_win.index, columns=a_win.columns)
    else:
        tie = table(tie_rows)
        tie = tie + tie.T
    b_win = table(df[df["winner"] == "model_b"])
    win = a_win * 2 + b_win.T * 2 + tie
    models = pd.Series(np.arange(len(win.index)), index=win.index)
    p = len(models)
    X = np.zeros([p * (p - 1) * 2, p])
    Y = np.zeros(p * (p - 1) * 2)
    row = 0
    weights = []
    for m_a in win.index:
        for m_b in win.columns:
            if m_a == m_b:
                continue
            w_ab, w_ba = win.loc[m_a, m_b], win.loc[m_b, m_a]
            if math.isnan(w_ab) or math.isnan(w_ba):
                continue
            for label, weight in ((1.0, w_ab), (0.0, w_ba)):
                X[row, models[m_a]] = +math.log(base)
                X[row, models[m_b]] = -math.log(base)
                Y[row] = label
                weights.append(weight)
                row += 1
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6)
    lr.fit(X[:row], Y[:row], sample_weight=weights)
    return pd.Series(scale * lr.coef_[0] + init_rating, index=models.index)


def fastchat_literal_bootstrap(df, n_resamples, *, seed=0):
    """FastChat's ``get_bootstrap_result`` as written: ``battles.sample(frac=1.0, replace=True)``."""
    rng = np.random.default_rng(seed)
    return [fastchat_literal_mle_elo(df.sample(frac=1.0, replace=True, random_state=rng))
            for _ in range(n_resamples)]


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
    import json
    import os

    import calipers
    import sklearn.linear_model  # noqa: F401  (imported before any timing)

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-battles", type=int, default=1_000_000)
    p.add_argument("--n-models", type=int, default=100)
    p.add_argument("--n-resamples", type=int, default=1000, help="calipers' replicates (B)")
    p.add_argument("--reference-resamples", type=int, default=None,
                   help="replicates timed for the FastChat method with NumPy counting, scaled "
                        "per replicate to B (default: B, the full loop)")
    p.add_argument("--literal-resamples", type=int, default=3,
                   help="replicates timed for the literal FastChat loop (pandas), scaled per "
                        "replicate to B; 0 skips it")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=os.path.join(os.path.dirname(__file__), "results",
                                                  "arena.json"),
                   help="where to write the figures ('' writes nothing)")
    args = p.parse_args(argv)
    n, K, B = args.n_battles, args.n_models, args.n_resamples
    Bref = args.reference_resamples or B
    Blit = args.literal_resamples
    a, b, outcome = make_battles(n, K, seed=args.seed)

    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    machine = cpu_name()
    print(f"machine: {machine}, {os.cpu_count()} cores; numpy {np.__version__}, "
          f"scikit-learn {__import__('sklearn').__version__}; BLAS threads: "
          f"{threads or 'library default'}")
    n_ties = int(np.sum(outcome == 0.5))
    print(f"{n} battles of {K} models ({n_ties} ties); B = {B}")

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
    print(f"FastChat method with NumPy counting, B = {B}: {scaled:.1f} s{note}")
    print(f"ratio (FastChat method with NumPy counting / calipers): {scaled / t_cal:.1f}x")
    out = {
        "machine": machine, "cores": os.cpu_count(), "blas_threads": threads,
        "numpy": np.__version__, "scikit_learn": __import__("sklearn").__version__,
        "n_battles": n, "n_models": K, "n_ties": n_ties, "n_resamples": B,
        "full_fit_s": {"calipers": t_fit, "fastchat_numpy": t_ref_fit},
        "full_fit_max_rating_difference": gap,
        "calipers": {"total_s": t_cal, "per_replicate_s": t_cal / B,
                     "n_undefined": res.n_undefined},
        "fastchat_numpy": {"timed_replicates": Bref, "per_replicate_s": per_ref,
                           "scaled_total_s": scaled, "ratio": scaled / t_cal},
    }
    if Blit:
        df = battles_frame(a, b, outcome)
        lit_fit = fastchat_literal_mle_elo(df)
        lit_gap = float(np.max(np.abs(lit_fit.to_numpy() - np.asarray(fit.ratings))))
        t = time.perf_counter()
        lit = fastchat_literal_bootstrap(df, Blit, seed=args.seed)
        t_lit = time.perf_counter() - t
        per_lit = t_lit / Blit
        print(f"FastChat loop, literal (pandas {__import__('pandas').__version__}), B = {B}: "
              f"{per_lit * B:.1f} s (timed on {Blit} replicates, {per_lit:.3f} s each, scaled "
              f"to B = {B}; full-data ratings within {lit_gap:.2e} of calipers')")
        print(f"ratio (literal FastChat loop / calipers): {per_lit * B / t_cal:.1f}x")
        out["fastchat_literal"] = {
            "pandas": __import__("pandas").__version__, "timed_replicates": Blit,
            "per_replicate_s": per_lit, "scaled_total_s": per_lit * B,
            "ratio": per_lit * B / t_cal, "full_fit_max_rating_difference": lit_gap,
            "replicates_drawn": len(lit)}
    # the two bootstraps draw different resamples; their spreads must agree roughly
    sd_cal = np.nanstd(res.replicates, axis=0)
    sd_ref = reps.std(axis=0)
    print(f"bootstrap s.d. of the ratings, median over models: calipers "
          f"{np.median(sd_cal):.2f}, FastChat method {np.median(sd_ref):.2f} "
          f"(on {Bref} replicates)")
    out["bootstrap_sd_median"] = {"calipers": float(np.median(sd_cal)),
                                  "fastchat_numpy": float(np.median(sd_ref))}
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
