"""Warnings raised by calipers."""


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined on valid input (for example ROC AUC with one class).

    The value returned is NaN; aggregates leave such members out and count them.
    """
