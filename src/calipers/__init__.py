"""calipers: evaluation numbers you can defend.

Exact, documented metric conventions on NumPy, JAX (eager and ``jit``) and any
array-API namespace, and paired-bootstrap intervals for model comparisons.
"""

from ._bootstrap.paired import (
    BootstrapResult, ConfidenceInterval, paired_bootstrap, paired_bootstrap_replicates)
from ._compare.delong import DeLongResult, delong_roc_variance, delong_test, roc_auc_confint
from ._compare.mcnemar import McNemarResult, mcnemar, mcnemar_table
from ._compare.proportions import proportion_confint
from ._compare.sprt import GSPRTResult, SPRTResult, sprt
from ._compare.elo import GameCountsState, MatchElo, gsprt_llr, match_elo
from ._compare.arena import (
    BradleyTerryBootstrap, BradleyTerryResult, bradley_terry, bradley_terry_bootstrap)
from ._core.exceptions import BootstrapDesignWarning, UndefinedMetricWarning
from ._compare.multiplicity import adjust_pvalues
from ._compare.power import (
    AUCPowerResult, auc_difference_power, auc_difference_sample_size,
    auc_minimum_detectable_difference, mcnemar_power, mcnemar_sample_size)
from ._probability import brier_score_loss, log_loss, probability_sum_tolerance
from ._classification import (
    accuracy_score,
    balanced_accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    fbeta_score,
    matthews_corrcoef,
    multilabel_confusion_matrix,
    precision_recall_fscore_support,
    precision_score,
    recall_score,
    specificity_score,
    top_k_accuracy_score,
)
from ._ranking.multiclass import ThresholdSelection, multiclass_roc_auc_score, select_threshold
from ._ranking.binary import (
    average_precision_score, precision_at_k, precision_recall_auc, precision_recall_curve,
    recall_at_k, roc_auc_score, roc_curve)

from ._calibration import (
    BrierDecomposition,
    ReliabilityDiagram,
    brier_decomposition,
    expected_calibration_error,
    fit_temperature,
    reliability_diagram,
)
from ._language import (
    AccuracyWithError,
    MultipleChoiceAccuracy,
    Perplexity,
    accuracy_with_error,
    bits_per_byte,
    bits_per_character,
    multiple_choice_accuracy,
    pass_at_k,
    perplexity,
)
from ._regression import (
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_absolute_scaled_error,
    mean_squared_error,
    r2_score,
    root_mean_squared_error,
)
from ._slices import SliceReport, by_group
from ._bootstrap.intervals import bootstrap_interval
from ._compare.units import (
    MIN_BOOTSTRAP_UNITS, PairedPermutationResult, UnitBootstrapResult, paired_permutation_test,
    paired_unit_bootstrap)
from ._offpolicy import (
    OffPolicyInterval,
    direct_method_estimate,
    doubly_robust_estimate,
    effective_sample_size,
    importance_weights,
    ips_estimate,
    snips_estimate,
)
from ._compare.offpolicy import off_policy_interval
from ._conformal import (
    CalibrationSizeWarning,
    ConformalIntervals,
    ConformalSets,
    conformal_quantile,
    conformal_rank,
    interval_coverage,
    mean_interval_width,
    mean_set_size,
    set_coverage,
    split_conformal_classification,
    split_conformal_regression,
)
from .retrieval._measures import (
    QueryResult, dcg, grouped_roc_auc, ndcg, r_precision, reciprocal_rank)
from . import retrieval
from ._streaming.states import CalibrationState, ConfusionState, NLLState, ProbabilityLossState
from ._streaming.histogram import (
    MulticlassROCHistogramState, MulticlassROCSummary,
    QueryMeanState, QueryMeanSummary, RankingBatch, ROCHistogramState, ROCHistogramSummary,
    ranking_batch_metrics)
from ._bootstrap.resample import bootstrap_counts
# the distributed multinomial bootstrap: totals, then counts, per partition
from ._bootstrap.resample import multinomial_counts, multinomial_totals
from ._streaming.bootstrap import PairedBootstrapState
from ._streaming.base import MergeableState
from ._streaming.collection import StateCollection
from ._core.compile import eager_checks

__version__ = "0.1.0"

__all__ = [
    "eager_checks",
    "OffPolicyInterval",
    "direct_method_estimate",
    "doubly_robust_estimate",
    "effective_sample_size",
    "importance_weights",
    "ips_estimate",
    "off_policy_interval",
    "snips_estimate",
    "CalibrationSizeWarning",
    "ConformalIntervals",
    "ConformalSets",
    "conformal_quantile",
    "conformal_rank",
    "interval_coverage",
    "mean_interval_width",
    "mean_set_size",
    "set_coverage",
    "split_conformal_classification",
    "split_conformal_regression",
    "ThresholdSelection",
    "accuracy_score",
    "balanced_accuracy_score",
    "cohen_kappa_score",
    "confusion_matrix",
    "f1_score",
    "fbeta_score",
    "matthews_corrcoef",
    "multiclass_roc_auc_score",
    "multilabel_confusion_matrix",
    "precision_recall_fscore_support",
    "precision_score",
    "recall_score",
    "select_threshold",
    "specificity_score",
    "top_k_accuracy_score",
    "AccuracyWithError",
    "BrierDecomposition",
    "CalibrationState",
    "MergeableState",
    "StateCollection",
    "ConfusionState",
    "MultipleChoiceAccuracy",
    "NLLState",
    "Perplexity",
    "ProbabilityLossState",
    "ReliabilityDiagram",
    "SliceReport",
    "accuracy_with_error",
    "bits_per_byte",
    "bits_per_character",
    "brier_decomposition",
    "by_group",
    "expected_calibration_error",
    "fit_temperature",
    "mean_absolute_error",
    "mean_absolute_percentage_error",
    "mean_absolute_scaled_error",
    "mean_squared_error",
    "multiple_choice_accuracy",
    "pass_at_k",
    "perplexity",
    "r2_score",
    "reliability_diagram",
    "root_mean_squared_error",
    "QueryResult",
    "dcg",
    "grouped_roc_auc",
    "ndcg",
    "r_precision",
    "reciprocal_rank",
    "BootstrapResult",
    "ConfidenceInterval",
    "adjust_pvalues",
    "AUCPowerResult",
    "auc_difference_power",
    "auc_difference_sample_size",
    "auc_minimum_detectable_difference",
    "mcnemar_power",
    "mcnemar_sample_size",
    "UndefinedMetricWarning",
    "BootstrapDesignWarning",
    "average_precision_score",
    "brier_score_loss",
    "log_loss",
    "probability_sum_tolerance",
    "paired_bootstrap",
    "paired_bootstrap_replicates",
    "bootstrap_counts",
    # the distributed multinomial bootstrap: totals, then counts, per partition
    "multinomial_totals", "multinomial_counts",
    "PairedBootstrapState",
    "DeLongResult",
    "McNemarResult",
    "SPRTResult",
    "GSPRTResult",
    "GameCountsState",
    "MatchElo",
    "gsprt_llr",
    "match_elo",
    "delong_roc_variance",
    "delong_test",
    "mcnemar",
    "mcnemar_table",
    "proportion_confint",
    "roc_auc_confint",
    "sprt",
    "MIN_BOOTSTRAP_UNITS",
    "PairedPermutationResult",
    "UnitBootstrapResult",
    "paired_permutation_test",
    "paired_unit_bootstrap",
    "bootstrap_interval",
    "precision_at_k",
    "precision_recall_auc",
    "precision_recall_curve",
    "recall_at_k",
    "roc_auc_score",
    "roc_curve",
    "QueryMeanState",
    "QueryMeanSummary",
    "RankingBatch",
    "ROCHistogramState",
    "MulticlassROCHistogramState",
    "MulticlassROCSummary",
    "ROCHistogramSummary",
    "ranking_batch_metrics",
]
from ._selective import (
    SelectivePoint,
    aurc,
    coverage_at_risk,
    excess_aurc,
    risk_coverage_curve,
    selective_risk,
)

__all__ += [
    "SelectivePoint",
    "aurc",
    "coverage_at_risk",
    "excess_aurc",
    "risk_coverage_curve",
    "selective_risk",
]
from ._survival import (
    ConcordanceResult,
    CumulativeDynamicAUC,
    concordance_index_censored,
    concordance_index_ipcw,
    cumulative_dynamic_auc,
)

__all__ += [
    "ConcordanceResult",
    "CumulativeDynamicAUC",
    "concordance_index_censored",
    "concordance_index_ipcw",
    "cumulative_dynamic_auc",
]

__all__ += [
    "BradleyTerryBootstrap",
    "BradleyTerryResult",
    "bradley_terry",
    "bradley_terry_bootstrap",
]

# many models in one bootstrap: simultaneous (max-T) intervals, Romano-Wolf p-values
from ._bootstrap.paired import ManyModelsResult, many_models_bootstrap

__all__ += [
    "ManyModelsResult",
    "many_models_bootstrap",
]

# richer streaming states: confusion summaries, regression, mean and top-k accuracy
from ._streaming.states import (  # noqa: E402
    ConfusionMetrics, MeanState, MeanSummary, RegressionState, RegressionSummary,
    TopKAccuracyState)

__all__ += [
    "ConfusionMetrics",
    "MeanState",
    "MeanSummary",
    "RegressionState",
    "RegressionSummary",
    "TopKAccuracyState",
]
