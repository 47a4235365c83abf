import numpy as np
import calipers
from conftest import to_np


def test_auc_worked_value_all_backends(backend):
    # SPEC worked value: AUC = 12/16
    s = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
    y = [1, 1, 0, 1, 0, 0, 1, 0]
    got = backend.call(calipers.roc_auc_score, y, s)
    np.testing.assert_allclose(to_np(got), 12 / 16, rtol=backend.rtol())
