"""Regenerate the bundled example: out-of-fold predictions of two models.

Data: the Wisconsin Diagnostic Breast Cancer set bundled with scikit-learn
(569 tumours, 30 features; Street, Wolberg & Mangasarian 1993). Label ``y`` is
1 for malignant (scikit-learn codes malignant as 0; we flip it so the condition
of interest is the positive class).

Models, each scored out-of-fold with the same 5-fold stratified split
(seed 0) so every prediction is for an example the model did not train on:
- ``logreg``: standardised logistic regression (C = 1);
- ``naive_bayes``: Gaussian naive Bayes.

Run: ``python scripts/make_example_data.py`` (needs scikit-learn); it rewrites
``src/calipers/data/breast_cancer_oof.csv``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

OUT = Path(__file__).resolve().parents[1] / "src" / "calipers" / "data" / "breast_cancer_oof.csv"


def main() -> None:
    X, y_sk = load_breast_cancer(return_X_y=True)
    y = 1 - y_sk  # 1 = malignant
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    models = {
        "logreg": make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000)),
        "naive_bayes": GaussianNB(),
    }
    preds = {name: cross_val_predict(m, X, y, cv=cv, method="predict_proba")[:, 1]
             for name, m in models.items()}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "y", *preds])
        for i in range(len(y)):
            w.writerow([i, int(y[i]), *(f"{preds[k][i]:.10g}" for k in preds)])
    print(f"wrote {OUT} ({len(y)} rows, prevalence {np.mean(y):.4f})")


if __name__ == "__main__":
    main()
