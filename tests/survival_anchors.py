"""Generator of tests/survival_anchor_values.py (run once; the tests do not need the anchors).

Run in a separate environment with the anchors installed (they pin their own
scikit-learn): ``python -m venv /tmp/surv && /tmp/surv/bin/pip install scikit-survival
lifelines`` then ``/tmp/surv/bin/python tests/survival_anchors.py > tests/survival_anchor_values.py``.
Versions used: scikit-survival 0.28.0, lifelines 0.30.3.
Random data with tied times, tied risks and censoring; the values are copied literally.
"""

import numpy as np
import sksurv
import lifelines
from lifelines.utils import concordance_index as lifelines_ci
from sksurv.metrics import (concordance_index_censored, concordance_index_ipcw,
                            cumulative_dynamic_auc)
from sksurv.util import Surv


def case(seed, n, n_train):
    rng = np.random.default_rng(seed)
    t = rng.integers(1, 9, n).astype(float)
    e = rng.random(n) < 0.6
    r = rng.integers(0, 5, n).astype(float) + (rng.random(n) < 0.3) * 0.5
    e[np.argmin(t)] = True  # at least one comparable pair
    t[-1], e[-1] = 9.0, False  # last follow-up censored: G > 0 at every event time
    tt = rng.integers(1, 10, n_train).astype(float)
    te = rng.random(n_train) < 0.6
    tt[np.argmax(tt)] = 10.0  # training follow-up covers the test times
    te[np.argmax(tt)] = False
    y, ytr = Surv.from_arrays(e, t), Surv.from_arrays(te, tt)
    h = concordance_index_censored(e, t, r)
    out = dict(seed=seed, time=t.tolist(), event=e.astype(int).tolist(), risk=r.tolist(),
               train_time=tt.tolist(), train_event=te.astype(int).tolist(),
               harrell=[float(h[0])] + [int(v) for v in h[1:]],
               lifelines=float(lifelines_ci(t, -r, e)))
    uno = {}
    for tau in (None, 5.0):
        u = concordance_index_ipcw(y, y, r, tau=tau)
        uno[str(tau)] = [float(u[0])] + [int(v) for v in u[1:]]
        u = concordance_index_ipcw(ytr, y, r, tau=tau)
        uno["train_" + str(tau)] = [float(u[0])] + [int(v) for v in u[1:]]
    out["uno"] = uno
    times = [float(v) for v in np.unique(t)[1:-1][:4]]
    a, m = cumulative_dynamic_auc(y, y, r, times)
    a2, m2 = cumulative_dynamic_auc(ytr, y, r, times)
    out["cd"] = dict(times=times, auc=a.tolist(), mean=float(m), train_auc=a2.tolist(),
                     train_mean=float(m2))
    return out


if __name__ == "__main__":
    cases = [case(s, n, ntr) for s, n, ntr in ((1, 12, 20), (2, 30, 40), (3, 60, 50),
                                               (4, 45, 45), (5, 80, 30))]
    print('"""Reference values from scikit-survival %s and lifelines %s (tests/survival_anchors.py)."""'
          % (sksurv.__version__, lifelines.__version__))
    print()
    print("CASES = [")
    for c in cases:
        print("    " + repr(c) + ",")
    print("]")
