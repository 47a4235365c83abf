"""Render the examples on docs/plots.md from the bundled breast-cancer predictions.

``python scripts/make_plot_examples.py`` writes docs/assets/plot_*.png; the
docs test renders the same code (tests/test_plot.py) so the page cannot drift.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import calipers  # noqa: E402
from calipers import plot  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "assets"


def load():
    data = np.genfromtxt(ROOT / "src" / "calipers" / "data" / "breast_cancer_oof.csv",
                         delimiter=",", names=True)
    return data["y"].astype(int), data["logreg"], data["naive_bayes"]


def main():
    y, a, b = load()
    models = {"logreg": a, "naive_bayes": b}
    figs = {
        "plot_roc.png": lambda ax: plot.roc_curves(y, models, band=True, n_resamples=200, ax=ax),
        "plot_pr.png": lambda ax: plot.pr_curves(y, models, band=True, n_resamples=200, ax=ax),
        "plot_reliability.png": lambda ax: plot.reliability(y, models, n_bins=10, ax=ax),
        "plot_bootstrap.png": lambda ax: plot.bootstrap_distribution(
            calipers.paired_bootstrap(calipers.roc_auc_score, y, a, b, n_resamples=2000,
                                      seed=0), ax=ax),
    }
    for name, draw in figs.items():
        fig, ax = plt.subplots(figsize=(5, 4.2))
        draw(ax)
        fig.tight_layout()
        fig.savefig(OUT / name, dpi=90)
        plt.close(fig)
        print("wrote", OUT / name)
    # Forest plot: AUC per quartile of the first model's score, with bootstrap intervals
    # of each slice's AUC from the paired bootstrap's per-model interval.
    q = np.digitize(b, np.quantile(b, [0.25, 0.5, 0.75]))
    rep = calipers.by_group(calipers.roc_auc_score, y, a, group_id=np.where(q < 2, "low nb score",
                                                                           "high nb score"))
    lows, highs = [], []
    for g in rep.group:
        m = np.where(q < 2, "low nb score", "high nb score") == g
        r = calipers.paired_bootstrap(calipers.roc_auc_score, y[m], a[m], b[m], n_resamples=1000,
                                      seed=0, stratify=True)
        lows.append(r.interval_a.low)
        highs.append(r.interval_a.high)
    fig, ax = plt.subplots(figsize=(5, 2.6))
    plot.forest(rep.group, rep.value, lows, highs, reference=rep.overall, support=rep.support,
                xlabel="ROC AUC of logreg", ax=ax)
    fig.tight_layout()
    fig.savefig(OUT / "plot_forest.png", dpi=90)
    plt.close(fig)
    print("wrote", OUT / "plot_forest.png")


if __name__ == "__main__":
    main()
