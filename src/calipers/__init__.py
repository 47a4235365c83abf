"""calipers: evaluation numbers you can defend.

Exact, documented metric conventions on NumPy, JAX (eager and ``jit``) and any
array-API namespace, and paired-bootstrap intervals for model comparisons.
"""

from ._bootstrap import (
    BootstrapResult,
    ConfidenceInterval,
    paired_bootstrap,
    paired_bootstrap_replicates,
)
from ._comparison import (
    DeLongResult,
    McNemarResult,
    SPRTResult,
    delong_roc_variance,
    delong_test,
    mcnemar,
    mcnemar_table,
    proportion_confint,
    roc_auc_confint,
    sprt,
)
from ._exceptions import UndefinedMetricWarning
from ._probability import brier_score_loss, log_loss
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
from ._multiclass import ThresholdSelection, multiclass_roc_auc_score, select_threshold
from ._ranking import (
    average_precision_score,
    precision_at_k,
    precision_recall_auc,
    precision_recall_curve,
    recall_at_k,
    roc_auc_score,
    roc_curve,
)

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
from ._retrieval import (
    QueryResult,
    dcg,
    grouped_roc_auc,
    ndcg,
    r_precision,
    reciprocal_rank,
)
from . import retrieval
from ._states import CalibrationState, ConfusionState, NLLState, ProbabilityLossState
from ._streaming import (
    QueryMeanState,
    QueryMeanSummary,
    RankingBatch,
    ROCHistogramState,
    ROCHistogramSummary,
    ranking_batch_metrics,
)

__version__ = "0.1.0"

__all__ = [
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
    "UndefinedMetricWarning",
    "average_precision_score",
    "brier_score_loss",
    "log_loss",
    "paired_bootstrap",
    "paired_bootstrap_replicates",
    "DeLongResult",
    "McNemarResult",
    "SPRTResult",
    "delong_roc_variance",
    "delong_test",
    "mcnemar",
    "mcnemar_table",
    "proportion_confint",
    "roc_auc_confint",
    "sprt",
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
    "ROCHistogramSummary",
    "ranking_batch_metrics",
]
