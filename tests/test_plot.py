"""calipers.plot renders with the Agg backend and draws what the public functions compute."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import calipers  # noqa: E402
from calipers import plot  # noqa: E402


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    a = np.clip(0.5 * y + rng.normal(0.25, 0.2, 120), 0, 1).round(2)   # ties
    b = np.clip(0.3 * y + rng.normal(0.35, 0.25, 120), 0, 1).round(2)
    return y, a, b


def _render(ax, tmp_path):
    path = tmp_path / "fig.png"
    ax.figure.savefig(path)
    plt.close(ax.figure)
    assert path.stat().st_size > 1000


def test_roc_curves_two_models_with_band(data, tmp_path):
    y, a, b = data
    ax = plot.roc_curves(y, {"a": a, "b": b}, band=True, n_resamples=30)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [f"a (AUC {calipers.roc_auc_score(y, a):.3f})",
                      f"b (AUC {calipers.roc_auc_score(y, b):.3f})"]
    fpr, tpr, _ = calipers.roc_curve(y, a)
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), fpr)
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), tpr)
    assert len(ax.collections) == 2  # one band per model
    _render(ax, tmp_path)


def test_band_contains_the_curve_mostly(data):
    y, a, _ = data
    ax = plot.roc_curves(y, a, band=True, n_resamples=60, confidence_level=0.9)
    path = ax.collections[0].get_paths()[0].vertices
    assert np.all((path[:, 1] >= -1e-12) & (path[:, 1] <= 1 + 1e-12))
    plt.close(ax.figure)


def test_interp_reads_the_top_of_a_vertical_step():
    f = np.array([0.0, 0.0, 0.5, 1.0])
    t = np.array([0.0, 0.6, 0.8, 1.0])
    got = plot._interp_curve(np.array([0.0, 0.25, 0.5, 1.0]), f, t)
    np.testing.assert_allclose(got, [0.6, 0.7, 0.8, 1.0])


def test_pr_curves_and_prevalence_line(data, tmp_path):
    y, a, b = data
    ax = plot.pr_curves(y, {"a": a, "b": b}, band=True, n_resamples=20)
    ap = calipers.average_precision_score(y, a)
    assert ax.get_legend().get_texts()[0].get_text() == f"a (AP {ap:.3f})"
    assert any(np.allclose(line.get_ydata(), y.mean()) for line in ax.lines)
    _render(ax, tmp_path)


def test_reliability_with_counts(data, tmp_path):
    y, a, _ = data
    ax = plot.reliability(y, {"a": a}, n_bins=10)
    rd = calipers.reliability_diagram(y, a, n_bins=10)
    ok = np.asarray(rd.count) > 0
    np.testing.assert_allclose(ax.lines[0].get_xdata(), np.asarray(rd.confidence)[ok])
    twin = [o for o in ax.figure.axes if o is not ax][0]
    assert sum(p.get_height() for p in twin.patches) == pytest.approx(len(y))
    _render(ax, tmp_path)


def test_bootstrap_distribution(data, tmp_path):
    y, a, b = data
    res = calipers.paired_bootstrap(calipers.roc_auc_score, y, a, b, n_resamples=200, seed=1)
    ax = plot.bootstrap_distribution(res)
    assert any(np.allclose(line.get_xdata(), res.difference) for line in ax.lines)
    _render(ax, tmp_path)
    with pytest.raises(ValueError, match="BootstrapResult"):
        plot.bootstrap_distribution(object())


def test_forest_from_slices(data, tmp_path):
    y, a, _ = data
    g = np.arange(len(y)) % 3
    rep = calipers.by_group(calipers.roc_auc_score, y, a, group_id=g)
    ax = plot.forest(rep.group, rep.value, rep.value - 0.05, rep.value + 0.05,
                     reference=rep.overall, support=rep.support, xlabel="ROC AUC")
    assert [t.get_text() for t in ax.get_yticklabels()][0].startswith(str(rep.group[0]))
    _render(ax, tmp_path)
    with pytest.raises(ValueError, match="same length"):
        plot.forest(["a", "b"], [1.0], [0.5], [1.5])


def test_band_arguments_checked(data):
    y, a, _ = data
    with pytest.raises(ValueError, match="n_resamples"):
        plot.roc_curves(y, a, band=True, n_resamples=1)
    with pytest.raises(ValueError, match="sample_weight"):
        plot.pr_curves(y, a, band=True, sample_weight=np.ones(len(y)))
    plt.close("all")
