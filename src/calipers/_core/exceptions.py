"""Warnings raised by calipers."""


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined on valid input (for example ROC AUC with one class).

    The value returned is NaN; aggregates leave such members out and count them.
    """


class BootstrapDesignWarning(UserWarning):
    """A bootstrap interval rests on too little to mean anything.

    Raised (eagerly) by the paired bootstrap when the design has fewer than 10
    resampling units (rows, clusters, or for moving blocks ``n // block_length``,
    the disjoint blocks the data holds), fewer than 5 rows of the
    minority class under stratification, or fewer than 10 distinct replicated
    differences. The interval is still returned, so that it can be shown with
    the warning, but it should not be read as a measure of uncertainty.
    """
