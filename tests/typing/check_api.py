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

# --- the API broadly: one call per function, the declared result type asserted ---------------
from calipers import (AccuracyWithError, BradleyTerryBootstrap, BradleyTerryResult,  # noqa: E402
                      BrierDecomposition, ConcordanceResult, ConfidenceInterval, ConformalIntervals,
                      ConformalSets, CumulativeDynamicAUC, GSPRTResult, ManyModelsResult, MatchElo,
                      McNemarResult, MultipleChoiceAccuracy, OffPolicyInterval,
                      PairedPermutationResult, Perplexity, QueryResult, ReliabilityDiagram,
                      SelectivePoint, SliceReport, SPRTResult, ThresholdSelection,
                      UnitBootstrapResult)
from calipers import retrieval  # noqa: E402
from calipers.retrieval import TrecEvaluation  # noqa: E402

FA = float | Array
yp = np.array([0, 1, 0, 0])
y3 = np.array([0, 1, 2, 1])
p3 = np.full((4, 3), 1 / 3)
qid = np.array([0, 0, 1, 1])

# classification
assert_type(calipers.accuracy_score(y, yp), FA)
assert_type(calipers.balanced_accuracy_score(y, yp, adjusted=True), FA)
assert_type(calipers.precision_score(y, yp, zero_division=0.0), FA)
assert_type(calipers.recall_score(y, yp, average="macro"), FA)
assert_type(calipers.f1_score(y, yp), FA)
assert_type(calipers.fbeta_score(y, yp, beta=2.0), FA)
assert_type(calipers.specificity_score(y, yp), FA)
assert_type(calipers.matthews_corrcoef(y, yp), FA)
assert_type(calipers.cohen_kappa_score(y, yp, weights="linear"), FA)
assert_type(calipers.top_k_accuracy_score(y3, p3, k=2), FA)
assert_type(calipers.confusion_matrix(y, yp, normalize="true"), Array)
assert_type(calipers.multilabel_confusion_matrix(y, yp), Array)
assert_type(calipers.precision_recall_fscore_support(y, yp, average=None),
            tuple[FA, FA, FA, Array | None])

# ranking
assert_type(calipers.multiclass_roc_auc_score(y3, p3, average=None), FA)
assert_type(calipers.roc_curve(y, s), tuple[Array, Array, Array])
assert_type(calipers.precision_recall_curve(y, s), tuple[Array, Array, Array])
assert_type(calipers.precision_recall_auc(y, s), FA)
assert_type(calipers.precision_at_k(y, s, k=2), FA)
assert_type(calipers.recall_at_k(y, s, k=2), FA)
assert_type(calipers.select_threshold(y, s, cost_fp=1.0, cost_fn=2.0), ThresholdSelection)

# probability and calibration
assert_type(calipers.log_loss(y, s), FA)
assert_type(calipers.brier_score_loss(y, s, scale_by_half="auto"), FA)
assert_type(calipers.expected_calibration_error(y, s, n_bins=10), FA)
assert_type(calipers.reliability_diagram(y, s), ReliabilityDiagram)
assert_type(calipers.brier_decomposition(y, s), BrierDecomposition)
assert_type(calipers.fit_temperature(p3, y3), FA)

# regression
assert_type(calipers.mean_squared_error(s, t), FA)
assert_type(calipers.root_mean_squared_error(s, t), FA)
assert_type(calipers.mean_absolute_error(s, t, multioutput="raw_values"), FA)
assert_type(calipers.mean_absolute_percentage_error(s, t), FA)
assert_type(calipers.mean_absolute_scaled_error(s, t, y_train=s, sp=1), FA)
assert_type(calipers.r2_score(s, t, force_finite=True), FA)

# language
assert_type(calipers.perplexity(np.log(s)), float | Array | Perplexity)
assert_type(calipers.bits_per_byte(np.log(s), 8), FA)
assert_type(calipers.bits_per_character(np.log(s), 4), FA)
assert_type(calipers.accuracy_with_error(y), AccuracyWithError)
assert_type(calipers.multiple_choice_accuracy(np.log(p3), y3), MultipleChoiceAccuracy)
assert_type(calipers.pass_at_k(10, 3, 1), FA)

# retrieval (per-query results)
assert_type(calipers.ndcg(y, s, qid, k=2), QueryResult)
assert_type(calipers.dcg(y, s, qid), QueryResult)
assert_type(calipers.reciprocal_rank(y, s, qid), QueryResult)
assert_type(calipers.r_precision(y, s, qid), QueryResult)
assert_type(calipers.grouped_roc_auc(y, s, qid), QueryResult)
assert_type(retrieval.average_precision(y, s, qid), QueryResult)
assert_type(retrieval.precision_at_k(y, s, qid, k=(1, 2)), QueryResult)
assert_type(retrieval.recall_at_k(y, s, qid, k=1), QueryResult)
assert_type(retrieval.parse_trec_measures("P.5,10"), list[tuple[str, Any]])
assert_type(retrieval.evaluate({"q": {"d": 1}}, {"q": {"d": 0.5}}, "map"), TrecEvaluation)

# survival
ev = np.array([True, False, True, True])
tm = np.array([1.0, 2.0, 3.0, 4.0])
assert_type(calipers.concordance_index_censored(ev, tm, s), ConcordanceResult)
assert_type(calipers.concordance_index_ipcw(ev, tm, s, train_event=ev, train_time=tm),
            ConcordanceResult)
assert_type(calipers.cumulative_dynamic_auc(ev, tm, s, times=[2.0], train_event=ev,
                                            train_time=tm), CumulativeDynamicAUC)

# conformal
assert_type(calipers.conformal_rank(100, 0.1), int)
assert_type(calipers.conformal_quantile(s, alpha=0.1), FA)
assert_type(calipers.split_conformal_regression(s, t, t, alpha=0.1), ConformalIntervals)
assert_type(calipers.split_conformal_classification(y3, p3, p3, alpha=0.1), ConformalSets)
assert_type(calipers.interval_coverage(s, s - 1, s + 1), FA)
assert_type(calipers.mean_interval_width(s - 1, s + 1), FA)
assert_type(calipers.set_coverage(y3, p3 > 0.2), FA)
assert_type(calipers.mean_set_size(p3 > 0.2), FA)

# selective prediction
assert_type(calipers.risk_coverage_curve(s, y, yp), tuple[Array, Array, Array])
assert_type(calipers.aurc(s, y, yp), FA)
assert_type(calipers.excess_aurc(s, y, yp), FA)
assert_type(calipers.selective_risk(s, y, yp, coverage=0.5), SelectivePoint)
assert_type(calipers.coverage_at_risk(s, y, yp, max_risk=0.2), SelectivePoint)

# off-policy evaluation
act = np.array([0, 1, 0, 1])
assert_type(calipers.importance_weights(s, t, action=act), Array)
assert_type(calipers.ips_estimate(y, s, t, action=act), FA)
assert_type(calipers.snips_estimate(y, s, t, action=act, max_weight=10.0), FA)
assert_type(calipers.direct_method_estimate(t, p3), FA)
assert_type(calipers.doubly_robust_estimate(y, s, t, p3, action=act), FA)
assert_type(calipers.effective_sample_size(s), FA)
assert_type(calipers.off_policy_interval("ips", y, s, t, action=act, seed=0), OffPolicyInterval)

# comparison
assert_type(calipers.delong_roc_variance(y, s), tuple[FA, FA])
assert_type(calipers.roc_auc_confint(y, s), ConfidenceInterval)
table = calipers.mcnemar_table(y, yp, yp)
assert_type(table, Array)
assert_type(calipers.mcnemar(table), McNemarResult)
assert_type(calipers.sprt(y, p0=0.5, p1=0.7), SPRTResult | GSPRTResult)
games = np.array([[0, 3], [1, 0]])
assert_type(calipers.match_elo(games), MatchElo)
assert_type(calipers.gsprt_llr(games, 0.0, 10.0), float)
assert_type(calipers.bradley_terry(["a", "b"], ["b", "a"], [1.0, 0.0]), BradleyTerryResult)
assert_type(calipers.bradley_terry_bootstrap(["a", "b"], ["b", "a"], [1.0, 0.0], seed=0),
            BradleyTerryBootstrap)
assert_type(calipers.many_models_bootstrap("accuracy", y, yp, yp, seed=0), ManyModelsResult)
assert_type(calipers.paired_permutation_test(s, t, seed=0), PairedPermutationResult)
assert_type(calipers.paired_unit_bootstrap(s, t, seed=0), UnitBootstrapResult)
assert_type(calipers.adjust_pvalues([0.01, 0.2], method="holm"), Array)
assert_type(calipers.proportion_confint(3, 10), ConfidenceInterval)
assert_type(calipers.mcnemar_power(100, 0.2, 0.1), float)

# bootstrap
assert_type(calipers.paired_bootstrap_replicates(calipers.roc_auc_score, y, s, t, seed=0),
            tuple[Array, Array])
assert_type(calipers.bootstrap_counts(np.arange(4), 0, seed=0), Array)
assert_type(calipers.bootstrap_interval(np.array([0.5, 0.6]), 0.55), ConfidenceInterval)

# slices
assert_type(calipers.by_group(calipers.accuracy_score, y, yp, group_id=qid), SliceReport)
