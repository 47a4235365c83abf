"""Checked by ``mypy --strict`` (tests/test_typing.py): the public API's result types.

Not collected by pytest (no ``test_`` prefix); mypy reads it, nothing runs it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from typing_extensions import assert_type

import calipers
from calipers import (BootstrapResult, ConfusionState, DeLongResult, MeanState, MeanSummary,
                      MulticlassROCHistogramState, MulticlassROCSummary, PairedBootstrapState,
                      ProbabilityLossState, RegressionState, RegressionSummary,
                      ROCHistogramState, ROCHistogramSummary, StateCollection,
                      average_precision_score, delong_test, paired_bootstrap, roc_auc_score)
from calipers._core.types import Array

y = np.array([0, 1, 1, 0])
s = np.array([0.1, 0.9, 0.4, 0.35])
t = np.array([0.2, 0.7, 0.5, 0.1])

# the compile decorator keeps the signature: the annotated return types reach callers
assert_type(roc_auc_score(y, s), float | Array)
assert_type(average_precision_score(y, s, sample_weight=[1, 2, 1, 1]), float | Array)

res = paired_bootstrap(calipers.roc_auc_score, y, s, t, n_resamples=50, seed=0)
assert_type(res, BootstrapResult)
assert_type(delong_test(y, s, t), DeLongResult)

st = PairedBootstrapState.init("accuracy", 10, seed=0)
assert_type(st, PairedBootstrapState)
st = st.update(y, s > 0.5, t > 0.5, row_ids=np.arange(4))
assert_type(st, PairedBootstrapState)
assert_type(st.merge(st), PairedBootstrapState)

roc = ROCHistogramState.init(16)
assert_type(roc, ROCHistogramState)
assert_type(roc.update(y, s, mask=np.ones(4, bool)), ROCHistogramState)
assert_type(roc.compute(), ROCHistogramSummary)
mc = MulticlassROCHistogramState.init(3).update(np.array([0, 1, 2, 1]), np.eye(4, 3))
assert_type(mc, MulticlassROCHistogramState)
assert_type(mc.compute("weighted"), MulticlassROCSummary)
assert_type(ProbabilityLossState.init(from_logits=True).update(y, s), ProbabilityLossState)
assert_type(RegressionState.init().update(s, t).compute(), RegressionSummary)
assert_type(MeanState.init().update(s).compute(), MeanSummary)
confusion = ConfusionState.init(2)
assert_type(confusion, ConfusionState)
coll = StateCollection.init({"cm": confusion})
assert_type(coll, StateCollection)
assert_type(coll.update(labels=y, probs=s), StateCollection)
assert_type(coll.merge(coll), StateCollection)
assert_type(coll.empty(), StateCollection)
assert_type(coll.compute(), dict[str, Any])
