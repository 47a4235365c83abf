"""calipers: evaluation numbers you can defend.

Exact, documented metric conventions on NumPy, JAX (eager and ``jit``) and any
array-API namespace, and paired-bootstrap intervals for model comparisons.
"""

from ._bootstrap import BootstrapResult, ConfidenceInterval, paired_bootstrap
from ._exceptions import UndefinedMetricWarning
from ._probability import brier_score_loss, log_loss
from ._ranking import (
    average_precision_score,
    precision_at_k,
    precision_recall_auc,
    precision_recall_curve,
    recall_at_k,
    roc_auc_score,
    roc_curve,
)

__version__ = "0.1.0"

__all__ = [
    "BootstrapResult",
    "ConfidenceInterval",
    "UndefinedMetricWarning",
    "average_precision_score",
    "brier_score_loss",
    "log_loss",
    "paired_bootstrap",
    "precision_at_k",
    "precision_recall_auc",
    "precision_recall_curve",
    "recall_at_k",
    "roc_auc_score",
    "roc_curve",
]
