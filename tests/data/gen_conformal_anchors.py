"""Reference values from MAPIE 1.6.0 and crepes 0.9.1 for tests/test_conformal_anchors.py.

Run in a separate environment with mapie and crepes installed (not a test dependency):
    python tests/data/gen_conformal_anchors.py > tests/data/conformal_anchors.json
The data are generated here from fixed seeds; the test regenerates the same arrays with
NumPy and compares calipers with the values printed by this script.
"""

import json
import sys

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin


def regression_data():
    rng = np.random.default_rng(2024)
    n, m = 200, 30
    y_cal = rng.normal(size=n) * 2 + 1
    p_cal = y_cal + rng.standard_t(3, size=n)
    p_test = rng.normal(size=m)
    return y_cal, p_cal, p_test


def classification_data():
    rng = np.random.default_rng(7)
    n, m, K = 300, 40, 4
    logits_cal = rng.normal(size=(n, K)) * 1.5
    y_cal = np.array([rng.choice(K, p=np.exp(r) / np.exp(r).sum()) for r in logits_cal])
    p_cal = np.exp(logits_cal) / np.exp(logits_cal).sum(1, keepdims=True)
    logits_t = rng.normal(size=(m, K)) * 1.5
    p_test = np.exp(logits_t) / np.exp(logits_t).sum(1, keepdims=True)
    return y_cal, p_cal, p_test


class ColumnRegressor(RegressorMixin, BaseEstimator):
    """A 'prefit' model whose prediction is the single feature: X = predictions."""

    def fit(self, X, y):
        self.fitted_ = True
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0]


class ProbaClassifier(ClassifierMixin, BaseEstimator):
    """A 'prefit' classifier whose probabilities are the features."""

    def fit(self, X, y):
        self.classes_ = np.arange(np.asarray(X).shape[1])
        self.fitted_ = True
        return self

    def predict_proba(self, X):
        return np.asarray(X)

    def predict(self, X):
        return np.argmax(np.asarray(X), axis=1)


def main():
    import crepes
    import mapie
    from mapie.classification import SplitConformalClassifier
    from mapie.conformity_scores import APSConformityScore
    from mapie.regression import SplitConformalRegressor

    class NonRandomAPS(APSConformityScore):
        """MAPIE's APS with U = 0 at calibration: the non-randomised score (cumsum through y)."""

        def get_conformity_scores(self, y, y_pred, y_enc=None, **kwargs):
            scores, self.cutoff = self.get_true_label_cumsum_proba(y, y_pred, self.classes)
            return scores

    out = {"mapie": mapie.__version__, "crepes": crepes.__version__ if hasattr(
        crepes, "__version__") else "0.9.1", "regression": {}, "classification": {}}
    y_cal, p_cal, p_test = regression_data()
    for conf in (0.9, 0.8, 0.5):
        reg = SplitConformalRegressor(ColumnRegressor().fit(p_cal[:, None], y_cal),
                                      confidence_level=conf, prefit=True)
        reg.conformalize(p_cal[:, None], y_cal)
        _, iv = reg.predict_interval(p_test[:, None])
        cr = crepes.ConformalRegressor()
        cr.fit(y_cal - p_cal)
        civ = cr.predict_int(p_test, confidence=conf)
        out["regression"][str(conf)] = {
            "mapie_lower": iv[:, 0, 0].tolist(), "mapie_upper": iv[:, 1, 0].tolist(),
            "crepes_lower": civ[:, 0].tolist(), "crepes_upper": civ[:, 1].tolist()}
    y_cal, p_cal, p_test = classification_data()
    clf = ProbaClassifier().fit(p_cal, y_cal)
    for conf in (0.9, 0.8):
        sets = {}
        for name, score, params in (("lac", "lac", None),
                                    ("aps", NonRandomAPS(), {"include_last_label": True})):
            sc = SplitConformalClassifier(clf, confidence_level=conf, conformity_score=score,
                                          prefit=True)
            sc.conformalize(p_cal, y_cal)
            _, s = sc.predict_set(p_test, conformity_score_params=params)
            sets[name] = s[:, :, 0].astype(int).tolist()
        out["classification"][str(conf)] = sets
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
