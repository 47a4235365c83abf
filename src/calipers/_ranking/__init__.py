"""Threshold-free binary ranking metrics (ROC AUC, average precision, curves, precision/recall at
k), their multiclass (one-vs-rest, one-vs-one, top-k) and multilabel forms, and cost-minimising
threshold selection. ``binary`` dispatches 2-D inputs to ``multilabel``."""
