"""Checked by ``mypy --strict`` (tests/test_typing.py): the public API's result types.

Not collected by pytest (no ``test_`` prefix); mypy reads it, nothing runs it.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from typing_extensions import assert_type

import calipers
from calipers import (BootstrapResult, DeLongResult, PairedBootstrapState, StateCollection,
                      average_precision_score, delong_test, paired_bootstrap, roc_auc_score)

y = np.array([0, 1, 1, 0])
s = np.array([0.1, 0.9, 0.4, 0.35])
t = np.array([0.2, 0.7, 0.5, 0.1])

# roc_auc_score / average_precision_score are annotated ``-> float | Array``, but their
# decorator (calipers._core.compile.compiled) is untyped, so callers see Any: not asserted
roc_auc_score(y, s)
average_precision_score(y, s, sample_weight=[1, 2, 1, 1])

res = paired_bootstrap(calipers.roc_auc_score, y, s, t, n_resamples=50, seed=0)
assert_type(res, BootstrapResult)
assert_type(delong_test(y, s, t), DeLongResult)

st = PairedBootstrapState.init("accuracy", 10, seed=0)
assert_type(st, PairedBootstrapState)
st = st.update(y, s > 0.5, t > 0.5, row_ids=np.arange(4))
assert_type(st, PairedBootstrapState)
assert_type(st.merge(st), PairedBootstrapState)

# the states of calipers._streaming.states / histogram are not annotated yet: reached via Any
confusion = cast(Any, calipers.ConfusionState).init(2)
coll = StateCollection.init({"cm": confusion})
assert_type(coll, StateCollection)
assert_type(coll.update(labels=y, probs=s), StateCollection)
assert_type(coll.merge(coll), StateCollection)
assert_type(coll.empty(), StateCollection)
assert_type(coll.compute(), dict[str, Any])
