"""Any metric per slice (group) of the data, worst slices first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import math
import warnings

import numpy as np

from ._core import xp as B
from ._core import validation as V
from ._core.exceptions import UndefinedMetricWarning
from ._core.results import result_type
from ._core.types import ArrayLike

__all__ = ["by_group", "SliceReport"]


@result_type(meta=("overall", "n_undefined"), renamed={"num_undefined": ("n_undefined",)},
             legacy_fields=("group", "value", "support", "weight", "defined",
                            "below_min_support", "overall", "num_undefined"))
class SliceReport:
    """Per-slice values in report order (see :func:`by_group`); NumPy arrays.
    ``num_undefined`` is a deprecated alias of ``n_undefined``."""

    group: np.ndarray              #: the group id of each slice
    value: np.ndarray              #: metric value (float64; NaN where undefined)
    support: np.ndarray            #: rows in the slice (int64)
    weight: np.ndarray | None      #: sum of ``sample_weight`` in the slice, if given
    defined: np.ndarray            #: False where the metric is undefined (NaN) there
    below_min_support: np.ndarray  #: True where support < min_support
    overall: float                 #: the metric on all rows (the baseline)
    n_undefined: int               #: slices where the metric is undefined


def by_group(metric: Callable[..., Any], *arrays: ArrayLike, group_id: ArrayLike,
             sample_weight: ArrayLike = None, min_support: int = 1, higher_is_better: bool = True,
             **metric_kwargs: Any) -> SliceReport:
    """Evaluate ``metric`` on every slice of the rows that share a ``group_id``.

    ``metric(*slice_arrays, **metric_kwargs)`` (plus ``sample_weight=`` the
    slice's weights when given) must return a scalar. One stable sort of
    ``group_id`` puts each group's rows together; each slice is then a
    contiguous range of that order, gathered with ``take`` (rows keep their
    original relative order). Any calipers metric works, and so does any
    function with that signature.

    Report order (worst first): slices with a defined value and
    ``support >= min_support``, worst first (lowest value when
    ``higher_is_better``, else highest; ties by larger support, then group
    id); then the slices below ``min_support`` in the same order; then the
    slices where the metric is undefined. Nothing is dropped: every group
    appears with its support and a ``defined`` flag.

    Parameters
    ----------
    metric : callable
    *arrays : arrays of equal first dimension n
        The metric's positional arguments (e.g. ``y_true, y_score``), sliced
        along axis 0.
    group_id : array (n,), keyword
        Any sortable ids (integers, strings).
    sample_weight : array (n,), optional
        Sliced and passed to ``metric``; the report also sums it per slice.
    min_support : int, default 1
        Slices with fewer rows are flagged ``below_min_support`` and ranked
        after the others (their value is still computed and shown).
    higher_is_better : bool, default True
        False for losses and errors.
    **metric_kwargs
        Passed to every call of ``metric`` unchanged.

    Returns
    -------
    SliceReport
        ``overall`` is ``metric`` on all rows. Undefined slices (NaN) do not
        warn one by one: a single ``UndefinedMetricWarning`` gives their number.

    Raises
    ------
    ValueError
        Under ``jit`` (slicing needs concrete group ids: eager only), arrays
        of different lengths, empty input, a ``group_id`` that is not 1-D or
        contains NaN, ``min_support < 1``, a metric that does not return a
        scalar, and any ``ValueError`` of the metric on a slice (re-raised
        naming the group).
    """
    if not arrays:
        raise ValueError("by_group needs the metric's array arguments")
    V.positive_int(min_support, "min_support")
    if B.is_traced(*arrays, group_id, sample_weight):
        raise ValueError("by_group works on concrete arrays only (not under jit): the slices "
                         "have data-dependent sizes")
    xp, conv = B.as_arrays(*arrays, sample_weight)
    arrays, sample_weight = conv[:-1], conv[-1]
    g = np.asarray(B.to_numpy(group_id) if not isinstance(group_id, (list, tuple))
                   else group_id)
    if g.ndim != 1:
        raise ValueError(f"group_id must be 1-D, got shape {g.shape}")
    n = arrays[0].shape[0]
    for i, a in enumerate(arrays):
        if a.shape[0] != n:
            raise ValueError(f"array argument {i} has {a.shape[0]} rows but argument 0 has {n}; "
                             "they must match")
    if g.shape[0] != n:
        raise ValueError(f"group_id has {g.shape[0]} elements but the arrays have {n} rows")
    if sample_weight is not None and sample_weight.shape[0] != n:
        raise ValueError(f"sample_weight has {sample_weight.shape[0]} elements but the arrays "
                         f"have {n} rows")
    if n == 0:
        raise ValueError("the arrays are empty; at least one row is required")
    if g.dtype.kind == "f" and np.isnan(g).any():
        raise ValueError("group_id must not contain NaN")

    order = np.argsort(g, kind="stable")
    gs = g[order]
    starts = np.concatenate([[0], np.flatnonzero(gs[1:] != gs[:-1]) + 1])
    stops = np.concatenate([starts[1:], [n]])

    def call(parts, w, label):
        kw = dict(metric_kwargs)
        if w is not None:
            kw["sample_weight"] = w
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            try:
                v = metric(*parts, **kw)
            except ValueError as exc:
                raise ValueError(f"{label}: {exc}") from exc
        v = np.asarray(B.to_numpy(v), dtype=np.float64)
        if v.size != 1:
            raise ValueError(f"metric must return a scalar; got shape {v.shape} for {label}")
        return float(v.reshape(()))

    overall = call(list(arrays), sample_weight, "all rows")
    groups: list[Any] = []
    wsum: list[float] = []
    values: Any = []            # per slice; a float64 array once all are in
    support: Any = []
    for a, b in zip(starts, stops):
        idx = xp.asarray(order[a:b]) if not B.is_numpy(xp) else order[a:b]
        parts = [xp.take(arr, idx, axis=0) for arr in arrays]
        w = None if sample_weight is None else xp.take(sample_weight, idx, axis=0)
        gid = gs[a].item() if hasattr(gs[a], "item") else gs[a]
        groups.append(gid)
        values.append(call(parts, w, f"group {gid!r}"))
        support.append(b - a)
        if w is not None:
            wsum.append(float(np.sum(np.asarray(B.to_numpy(w), dtype=np.float64))))
    values = np.asarray(values, dtype=np.float64)
    support = np.asarray(support, dtype=np.int64)
    defined = ~np.isnan(values)
    small = support < min_support
    sign = 1.0 if higher_is_better else -1.0
    tier = np.where(~defined, 2, np.where(small, 1, 0))
    key_value = np.where(defined, sign * values, 0.0)
    # lexsort: last key is primary
    rank = np.lexsort((np.arange(len(values)), -support, key_value, tier))
    num_undefined = int((~defined).sum())
    if math.isnan(overall):
        B.warn("the metric is undefined (NaN) on all rows together (the baseline)",
               UndefinedMetricWarning)
    if num_undefined:
        B.warn(f"the metric is undefined (NaN) on {num_undefined} of {len(values)} "
               "slices; they are listed last with defined=False", UndefinedMetricWarning)
    return SliceReport(
        group=np.asarray(groups)[rank],
        value=values[rank],
        support=support[rank],
        weight=None if sample_weight is None else np.asarray(wsum, dtype=np.float64)[rank],
        defined=defined[rank],
        below_min_support=small[rank],
        overall=overall,
        n_undefined=num_undefined,
    )
