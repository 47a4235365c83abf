"""Plots of calipers results with matplotlib: every function draws on an ``Axes`` and returns it.

Needs matplotlib (the ``cli`` extra).  Each function takes ``ax=None`` (a new
figure) or an existing ``Axes``, draws, and returns the ``Axes``, so plots
compose into the user's own figures.  Nothing here computes a metric of its
own: the curves, bands and intervals are calipers' public functions
(:func:`calipers.roc_curve`, :func:`calipers.precision_recall_curve`,
:func:`calipers.reliability_diagram`, :func:`calipers.paired_bootstrap`,
:func:`calipers.by_group`), so a plot shows exactly the numbers a report
prints.

Bootstrap bands (``band=True`` in :func:`roc_curves` and :func:`pr_curves`)
are pointwise percentile bands: each replicate draws multinomial row counts
(calipers' one resampler, the counts :func:`calipers.paired_bootstrap` draws
for plain rows with the same seed) and passes them as integer ``sample_weight`` (a weight of 3 is the row three
times, so a weighted curve is the resampled curve), the curve is read on a
fixed grid (TPR at each FPR, the step-interpolated precision at each recall),
and the band spans the central ``confidence_level`` share of replicates at
each grid point.  A pointwise band is not a simultaneous one: it says where
the curve is at each FPR, not where the whole curve lies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ._core import validation as V
from ._bootstrap.ratio import replicate_counts

__all__ = ["roc_curves", "pr_curves", "reliability", "bootstrap_distribution", "forest"]


def _axes(ax):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(5, 4.5))
    return ax


def _models(scores) -> dict[str, Any]:
    if isinstance(scores, Mapping):
        if not scores:
            raise ValueError("scores must name at least one model")
        return {str(k): np.asarray(v) for k, v in scores.items()}
    return {"model": np.asarray(scores)}


def _check_band(n_resamples, confidence_level, sample_weight):
    V.positive_int(n_resamples, "n_resamples", minimum=2)
    V.confidence_level(confidence_level)
    if sample_weight is not None:
        raise ValueError("band=True resamples rows; it cannot be combined with sample_weight")


def _fill_band(ax, grid, curve_on_grid, n, n_resamples, confidence_level, seed, line, **fill):
    """Shade a model's pointwise band in its line's colour (resamples with one class skipped)."""
    import warnings

    import calipers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", calipers.UndefinedMetricWarning)
        b = _band(curve_on_grid, n, n_resamples, confidence_level, seed)
    if b is not None:
        ax.fill_between(grid, b[0], b[1], color=line.get_color(), alpha=0.2, lw=0, **fill)


def _band(curve_on_grid, n, n_resamples, confidence_level, seed):
    """Pointwise percentile band of a curve over multinomial row resamples.

    The counts are the one resampler's (:func:`calipers.paired_bootstrap`'s plain
    rows under the same seed), one replicate at a time: memory O(n + B * grid).
    """
    reps = []
    for counts in replicate_counts(n, int(n_resamples), seed):
        vals = curve_on_grid(counts)
        if vals is not None:
            reps.append(vals)
    if not reps:
        return None
    reps = np.asarray(reps)
    a = (1 - float(confidence_level)) / 2
    return np.quantile(reps, a, axis=0), np.quantile(reps, 1 - a, axis=0)


def _interp_curve(grid, f, t):
    """TPR on an FPR grid, linear between curve points (the trapezoid the AUC is).

    At an FPR where the curve has a vertical step, the last (highest) point of
    the step is used, so the band is never read halfway up a jump.
    """
    i = np.searchsorted(f, grid, side="right") - 1   # last point with fpr <= g
    i = np.clip(i, 0, len(f) - 1)
    j = np.minimum(i + 1, len(f) - 1)
    span = f[j] - f[i]
    frac = np.where(span > 0, (grid - f[i]) / np.where(span > 0, span, 1.0), 0.0)
    return t[i] + frac * (t[j] - t[i])


def roc_curves(y_true, scores, *, sample_weight=None, pos_label=None, band=False,
               n_resamples=1000, confidence_level=0.95, seed=None, ax=None):
    """ROC curves of one or several models on one axes, AUC in the legend.

    Parameters
    ----------
    y_true : array (n,)
        Binary labels, as :func:`calipers.roc_curve` takes them.
    scores : array (n,) or mapping name -> array (n,)
        One model's scores, or several models' scores keyed by name (legend
        order = mapping order).
    sample_weight : array (n,), optional
        Row weights, passed to the curve and AUC.
    pos_label : optional
        As :func:`calipers.roc_curve`.
    band : bool
        Draw each model's pointwise bootstrap percentile band (see the module
        notes); not with ``sample_weight``.
    n_resamples, confidence_level, seed
        The band's replicates (default 1000), level and seed (``None``: fresh entropy; an
        int or ``numpy.random.Generator`` for a reproducible band), as every bootstrap of
        calipers.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        As :func:`calipers.roc_curve`; ``band=True`` with ``sample_weight``;
        ``n_resamples`` < 2 or ``confidence_level`` outside (0, 1).
    """
    import calipers

    ax = _axes(ax)
    if band:
        _check_band(n_resamples, confidence_level, sample_weight)
    grid = np.linspace(0, 1, 101)
    for name, s in _models(scores).items():
        fpr, tpr, _ = calipers.roc_curve(y_true, s, sample_weight=sample_weight,
                                         pos_label=pos_label)
        auc = calipers.roc_auc_score(y_true, s, sample_weight=sample_weight, pos_label=pos_label)
        (line,) = ax.plot(np.asarray(fpr), np.asarray(tpr), label=f"{name} (AUC {float(auc):.3f})")
        if band:
            def on_grid(counts, s=s):
                f, t, _ = calipers.roc_curve(y_true, s, sample_weight=counts, pos_label=pos_label,
                                             drop_intermediate=False)
                f, t = np.asarray(f), np.asarray(t)
                if np.isnan(f).any() or np.isnan(t).any():
                    return None  # a resample with one class has no curve
                return _interp_curve(grid, f, t)

            _fill_band(ax, grid, on_grid, len(s), n_resamples, confidence_level, seed, line)
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax.set(xlabel="false positive rate", ylabel="true positive rate", title="ROC",
           xlim=(0, 1), ylim=(0, 1.02))
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    return ax


def pr_curves(y_true, scores, *, sample_weight=None, pos_label=None, band=False,
              n_resamples=1000, confidence_level=0.95, seed=None, ax=None):
    """Precision–recall curves (steps) of one or several models, AP in the legend.

    The curve is :func:`calipers.precision_recall_curve` drawn as a step
    function (precision constant until the next recall), which is the curve
    whose step sum is :func:`calipers.average_precision_score`; the dashed
    line is the prevalence (a random model's precision). Arguments, return
    value, band and errors as :func:`roc_curves`.
    """
    import calipers

    ax = _axes(ax)
    if band:
        _check_band(n_resamples, confidence_level, sample_weight)
    grid = np.linspace(0, 1, 101)
    for name, s in _models(scores).items():
        prec, rec, _ = calipers.precision_recall_curve(y_true, s, sample_weight=sample_weight,
                                                       pos_label=pos_label)
        ap = calipers.average_precision_score(y_true, s, sample_weight=sample_weight,
                                              pos_label=pos_label)
        (line,) = ax.step(np.asarray(rec), np.asarray(prec), where="post",
                          label=f"{name} (AP {float(ap):.3f})")
        if band:
            def on_grid(counts, s=s):
                p, r, _ = calipers.precision_recall_curve(y_true, s, sample_weight=counts,
                                                          pos_label=pos_label)
                p, r = np.asarray(p)[::-1], np.asarray(r)[::-1]  # recall ascending
                if np.isnan(p).any() or np.isnan(r).any():
                    return None
                # precision at the first curve point whose recall reaches the grid value
                idx = np.minimum(np.searchsorted(r, grid, side="left"), len(r) - 1)
                return p[idx]

            _fill_band(ax, grid, on_grid, len(s), n_resamples, confidence_level, seed, line,
                       step="post")
    y = np.asarray(y_true)
    pos = (y == (1 if pos_label is None else pos_label))
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
    ax.axhline(float(np.average(pos, weights=w)), color="grey", lw=0.8, ls="--")
    ax.set(xlabel="recall", ylabel="precision", title="precision-recall", xlim=(0, 1),
           ylim=(0, 1.02))
    ax.legend(loc="lower left")
    ax.grid(alpha=0.3)
    return ax


def reliability(y_true, probs, *, n_bins=10, strategy="uniform", sample_weight=None,
                show_counts=True, ax=None):
    """Reliability diagram: observed frequency against mean confidence per bin, with counts.

    Parameters
    ----------
    y_true : array (n,)
        Binary labels in {0, 1}.
    probs : array (n,) or mapping name -> array (n,)
        Predicted probabilities of the positive class, in [0, 1].
    n_bins, strategy, sample_weight
        As :func:`calipers.reliability_diagram` (equal-width bins by default:
        bin ``min(B - 1, floor(p B))``).
    show_counts : bool
        Draw each bin's row count (weight sum) as bars on a second y axis,
        so sparse bins are seen for what they are.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes (the main axes; the count axes is its twin).

    Raises
    ------
    ValueError
        As :func:`calipers.reliability_diagram`.
    """
    import calipers

    ax = _axes(ax)
    count_ax = ax.twinx() if show_counts else None
    models = _models(probs)
    width = 1.0 / (n_bins * max(1, len(models)))
    for i, (name, p) in enumerate(models.items()):
        rd = calipers.reliability_diagram(y_true, p, n_bins=n_bins, strategy=strategy,
                                          sample_weight=sample_weight)
        conf, acc, cnt = (np.asarray(v, dtype=float) for v in (rd.confidence, rd.accuracy,
                                                               rd.count))
        ece = float(calipers.expected_calibration_error(y_true, p, n_bins=n_bins,
                                                        strategy=strategy,
                                                        sample_weight=sample_weight))
        ok = cnt > 0
        (line,) = ax.plot(conf[ok], acc[ok], marker="o", label=f"{name} (ECE {ece:.3f})")
        if count_ax is not None:
            lo = np.asarray(rd.lower, dtype=float)
            left = np.where(ok, lo, 0.0) + i * width
            count_ax.bar(left[ok], cnt[ok], width=width, align="edge", alpha=0.15,
                         color=line.get_color())
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax.set(xlabel="mean predicted probability", ylabel="observed frequency",
           title=f"reliability ({n_bins} {'equal-width' if strategy == 'uniform' else 'equal-mass'}"
                 " bins)", xlim=(0, 1), ylim=(0, 1))
    if count_ax is not None:
        count_ax.set_ylabel("count")
        ax.set_zorder(count_ax.get_zorder() + 1)  # lines above the bars
        ax.patch.set_visible(False)
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    return ax


def bootstrap_distribution(result, *, bins=50, ax=None):
    """Histogram of a paired bootstrap's replicated differences with its interval.

    Parameters
    ----------
    result : calipers.BootstrapResult
        From :func:`calipers.paired_bootstrap`.
    bins : int
        Histogram bins.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes. The solid line is the observed difference, the
    shaded span the confidence interval (its method and level in the title),
    the dashed line zero (no difference). Undefined replicates (NaN) are
    left out and counted in the title.

    Raises
    ------
    ValueError
        ``result`` has no ``bootstrap_distribution``.
    """
    d = getattr(result, "bootstrap_distribution", None)
    if d is None:
        raise ValueError("result must be a BootstrapResult (from calipers.paired_bootstrap)")
    ax = _axes(ax)
    d = np.asarray(d, dtype=float)
    ok = d[~np.isnan(d)]
    ax.hist(ok, bins=bins, color="C0", alpha=0.7)
    ci = result.confidence_interval
    lo, hi = float(ci.low), float(ci.high)
    ax.axvspan(max(lo, ok.min() if ok.size else lo), min(hi, ok.max() if ok.size else hi),
               color="C1", alpha=0.15, label=f"{result.confidence_level:.0%} {result.method} "
                                             f"[{lo:.4f}, {hi:.4f}]")
    ax.axvline(float(result.difference), color="C1", lw=1.5,
               label=f"difference {float(result.difference):.4f}")
    ax.axvline(0.0, color="grey", lw=0.8, ls="--")
    title = f"paired bootstrap, {result.n_resamples} replicates"
    if result.n_undefined:
        title += f" ({result.n_undefined} undefined)"
    ax.set(xlabel="metric(A) - metric(B)", ylabel="replicates", title=title)
    ax.legend(loc="upper left", fontsize="small")
    return ax


def forest(labels, values, low, high, *, reference=None, xlabel="value", support=None,
           ax=None):
    """Forest plot: one row per slice (or model) with its value and interval.

    Parameters
    ----------
    labels : sequence of str (m,)
        Row names, drawn top to bottom in the given order.
    values, low, high : arrays (m,)
        Point values and interval ends (NaN ends draw no whisker; a NaN
        value draws no point, so undefined slices stay visible as a label).
    reference : float, optional
        A vertical line, e.g. the overall value.
    xlabel : str
    support : array (m,), optional
        Rows per slice, appended to the labels as ``(n=...)``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        Arrays of different lengths.
    """
    labels = [str(x) for x in labels]
    v, lo, hi = (np.asarray(a, dtype=float) for a in (values, low, high))
    m = len(labels)
    if not (v.shape == lo.shape == hi.shape == (m,)):
        raise ValueError(f"labels, values, low and high must have the same length; got {m}, "
                         f"{v.shape[0] if v.ndim else 1}, {lo.size}, {hi.size}")
    if support is not None:
        sup = np.asarray(support)
        if sup.shape != (m,):
            raise ValueError(f"support must have {m} elements, got {sup.size}")
        labels = [f"{lab} (n={int(s)})" for lab, s in zip(labels, sup)]
    ax = _axes(ax)
    ypos = np.arange(m)[::-1]
    err = np.vstack([v - lo, hi - v])
    ok = ~(np.isnan(v) | np.isnan(lo) | np.isnan(hi))
    ax.errorbar(v[ok], ypos[ok], xerr=err[:, ok], fmt="o", color="C0", capsize=3)
    only_point = ~np.isnan(v) & ~ok
    ax.plot(v[only_point], ypos[only_point], "o", color="C0")
    if reference is not None:
        ax.axvline(float(reference), color="grey", lw=0.8, ls="--")
    ax.set_yticks(ypos)
    ax.set_yticklabels(labels)
    ax.set(xlabel=xlabel)
    ax.grid(alpha=0.3, axis="x")
    return ax
