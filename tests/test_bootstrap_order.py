"""Bootstrap draws: a function of (seed, replicate, caller row) only.

Swapping the two models mirrors the replicates exactly, a model's replicates
do not move when the other model changes, and every backend draws the same
integer counts for the same seed (handed case H23).
"""

from __future__ import annotations

import numpy as np
import pytest

import calipers
from calipers._bootstrap import paired as BS
from calipers._bootstrap import resample as RS
from calipers import paired_bootstrap, paired_bootstrap_replicates
from conftest import load_case, to_np


def _h23_data():
    # handed case H23's generator, as given in its inputs
    rng = np.random.default_rng(0)
    n = 300
    y = (rng.random(n) < 0.3).astype(int)
    a = rng.random(n) + 0.3 * y
    b = rng.random(n) + 0.25 * y
    return y, a, b


def _probs(y, a, b):
    # scores squeezed into (0, 1) for log loss / Brier, with ties (rounded)
    return y, np.round(a / 1.4, 2), np.round(b / 1.4, 2)


def _wacc(y, s, sample_weight=None):
    """A user metric with weights: weighted accuracy at threshold 0.5."""
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
    return float(np.sum(w * ((np.asarray(s) > 0.5) == y)) / np.sum(w))


def _gap(y, s):
    """A user metric without weights (index resampling): mean score gap between classes."""
    y, s = np.asarray(y), np.asarray(s)
    if y.min() == y.max():
        return float("nan")
    return float(s[y == 1].mean() - s[y == 0].mean())


def test_h23_swapping_models_mirrors_the_replicates_exactly():
    case = load_case("H23")
    kw = case["kwargs"]
    y, a, b = _h23_data()
    ab = paired_bootstrap(calipers.roc_auc_score, y, a, b, n_resamples=kw["n_resamples"],
                          seed=kw["seed"])
    ba = paired_bootstrap(calipers.roc_auc_score, y, b, a, n_resamples=kw["n_resamples"],
                          seed=kw["seed"])
    np.testing.assert_array_equal(ba.bootstrap_distribution, -ab.bootstrap_distribution)
    np.testing.assert_array_equal(ba.distribution_a, ab.distribution_b)
    np.testing.assert_array_equal(ba.distribution_b, ab.distribution_a)
    # the interval mirrors up to np.quantile's interpolation rounding (positions h and m-1-h)
    assert ba.confidence_interval.low == pytest.approx(-ab.confidence_interval.high, rel=1e-14)
    assert ba.confidence_interval.high == pytest.approx(-ab.confidence_interval.low, rel=1e-14)


_W_INT = np.random.default_rng(11).integers(1, 4, 300)      # repetitions
_W_FLOAT = np.random.default_rng(12).random(300) + 0.05      # weights proper
DESIGNS = [dict(), dict(stratify=True), dict(groups=np.arange(300) % 23),
           dict(block_length=9), dict(resampling="poisson"),
           dict(groups=np.arange(300) // 7, resampling="poisson"),
           dict(sample_weight=_W_INT), dict(sample_weight=_W_FLOAT),
           dict(sample_weight=_W_FLOAT, groups=np.arange(300) % 23)]
DESIGN_IDS = ["rows", "stratified", "clusters", "blocks", "poisson", "poisson-clusters",
              "int-weights", "float-weights", "float-weights-clusters"]


@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "log_loss", "brier",
                                    _wacc, _gap])
@pytest.mark.parametrize("design", DESIGNS, ids=DESIGN_IDS)
def test_swap_mirrors_and_the_other_model_does_not_matter(metric, design):
    if metric is _gap and "sample_weight" in design:
        pytest.skip("a metric without sample_weight refuses weights (tested in test_bootstrap)")
    y, a, b = _probs(*_h23_data())
    c = np.round(np.random.default_rng(5).random(300), 2)   # a third model, with ties
    R = 60

    def reps(s1, s2):
        return paired_bootstrap_replicates(metric, y, s1, s2, n_resamples=R, seed=7, **design)

    da, db = reps(a, b)
    ea, eb = reps(b, a)
    np.testing.assert_array_equal(ea, db)
    np.testing.assert_array_equal(eb, da)
    np.testing.assert_array_equal(eb - ea, -(ea - eb))
    # a model's replicates do not move when the other model changes, in either seat
    fa, _ = reps(a, c)
    _, gb = reps(c, a)
    np.testing.assert_array_equal(fa, da)
    np.testing.assert_array_equal(gb, da)


@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "log_loss", "brier"])
@pytest.mark.parametrize("design", [dict(), dict(sample_weight=_W_INT),
                                    dict(sample_weight=_W_FLOAT)],
                         ids=["rows", "int-weights", "float-weights"])
def test_swap_and_other_model_on_jax(metric, design):
    """The same on JAX arrays (x64 as configured; float32 sums too): exact mirrors."""
    jnp = pytest.importorskip("jax.numpy")
    y, a, b = _probs(*_h23_data())
    c = np.round(np.random.default_rng(5).random(300), 2)
    kw = {k: jnp.asarray(v) for k, v in design.items()}

    def reps(s1, s2):
        return [np.asarray(r) for r in paired_bootstrap_replicates(
            metric, jnp.asarray(y), jnp.asarray(s1), jnp.asarray(s2), n_resamples=40,
            seed=7, **kw)]

    da, db = reps(a, b)
    ea, eb = reps(b, a)
    np.testing.assert_array_equal(ea, db)
    np.testing.assert_array_equal(eb, da)
    np.testing.assert_array_equal(reps(a, c)[0], da)


@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "log_loss"])
@pytest.mark.parametrize("w", [_W_INT, _W_FLOAT], ids=["int-weights", "float-weights"])
def test_bca_interval_of_a_model_ignores_the_other_model(metric, w):
    """BCa's jackknife values are a model's own: with integer weights (more repeated units
    than jackknife groups, so the grouped jackknife numbers them) and with float weights,
    a model's interval does not move when the other model changes, and swapping the
    models mirrors the difference's interval."""
    y, a, b = _probs(*_h23_data())
    c = np.round(np.random.default_rng(5).random(300), 2)

    def run(s1, s2):
        return paired_bootstrap(metric, y, s1, s2, sample_weight=w, n_resamples=300, seed=2,
                                method="bca", jackknife_groups=50)

    ab, ac, ba = run(a, b), run(a, c), run(b, a)
    assert ab.interval_a == ac.interval_a
    assert ba.interval_b == ab.interval_a and ba.interval_a == ab.interval_b
    assert ba.confidence_interval.low == pytest.approx(-ab.confidence_interval.high, rel=1e-13)
    assert ba.confidence_interval.high == pytest.approx(-ab.confidence_interval.low, rel=1e-13)


def test_marginal_interval_does_not_move_when_a_model_is_added():
    y, a, b = _h23_data()
    c = a + 0.1 * np.random.default_rng(1).standard_normal(300)
    one = paired_bootstrap("average_precision", y, a, b, n_resamples=200, seed=3)
    two = paired_bootstrap("average_precision", y, a, c, n_resamples=200, seed=3)
    assert one.interval_a == two.interval_a


def _designs_for(n, y):
    return [
        RS._build_design(np, n, None, y_codes=None, groups_codes=None, n_groups=None,
                         block_length=None, poisson=False, traced=False),
        RS._build_design(np, n, None, y_codes=None, groups_codes=None, n_groups=None,
                         block_length=None, poisson=True, traced=False),
        RS._build_design(np, n, None, y_codes=y, groups_codes=None, n_groups=None,
                         block_length=None, poisson=False, traced=False),
        RS._build_design(np, n, None, y_codes=None, groups_codes=np.arange(n) % 11,
                         n_groups=11, block_length=None, poisson=False, traced=False),
        RS._build_design(np, n, None, y_codes=None, groups_codes=np.arange(n) % 11,
                         n_groups=11, block_length=None, poisson=True, traced=False),
        RS._build_design(np, n, None, y_codes=None, groups_codes=None, n_groups=None,
                         block_length=6, poisson=False, traced=False),
    ]


@pytest.mark.parametrize("x64", [True, False])
@pytest.mark.parametrize("jit", [False, True])
def test_numpy_and_jax_draw_the_same_counts_bit_for_bit(x64, jit):
    import jax
    import jax.numpy as jnp

    n = 97
    y = (np.arange(n) % 3 == 0).astype(np.int64)
    words = RS.seed_words(2024)
    with jax.enable_x64(x64):
        for design, (arrays, layout) in _designs_for(n, y):
            arrays_j = tuple(jnp.asarray(v) if v.dtype != np.int64 or x64
                             else jnp.asarray(v.astype(np.int32)) for v in arrays)
            idt = jnp.int64 if x64 else jnp.int32

            def draw(r, arr, design=design, idt=idt):
                return RS.draw_counts(design, (arr, None), jnp.asarray(words), r, jnp, idt)

            fn = jax.jit(draw) if jit else draw
            for r in (0, 1, 2, 1000, 2**31 + 5):
                want = RS.draw_counts(design, (arrays, None), words, r, np, np.int64)
                got = np.asarray(fn(jnp.asarray(r, dtype=jnp.uint32), arrays_j))
                np.testing.assert_array_equal(got, want, err_msg=f"{design} r={r}")


def test_counts_have_the_design_margins():
    n = 97
    y = (np.arange(n) % 3 == 0).astype(np.int64)
    words = RS.seed_words(1)
    (plain, dp), (pois, dpo), (strat, ds), (clus, dc), _, (block, db) = _designs_for(n, y)
    for r in range(50):
        c = RS.draw_counts(plain, dp, words, r, np, np.int64)
        assert c.sum() == n and c.min() >= 0
        c = RS.draw_counts(strat, ds, words, r, np, np.int64)
        assert c[y == 1].sum() == (y == 1).sum() and c[y == 0].sum() == (y == 0).sum()
        c = RS.draw_counts(clus, dc, words, r, np, np.int64)
        unit = np.arange(n) % 11
        # every row of a cluster has its cluster's count, and 11 clusters are drawn
        for g in range(11):
            assert np.all(c[unit == g] == c[unit == g][0])
        assert sum(int(c[unit == g][0]) for g in range(11)) == 11
        c = RS.draw_counts(block, db, words, r, np, np.int64)
        assert c.sum() == n
    assert RS.draw_counts(pois, dpo, words, 0, np, np.int64).min() >= 0


def test_mulhi_without_uint64_is_exact():
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    u = rng.integers(0, 2**32, 5000, dtype=np.uint32)
    m = rng.integers(1, 2**32, 5000, dtype=np.uint32)
    want = np.array([(int(x) * int(z)) >> 32 for x, z in zip(u, m)], dtype=np.uint64)
    np.testing.assert_array_equal(RS._mulhi(u, m, np, True), want)
    np.testing.assert_array_equal(RS._mulhi(u, m, np, False), want)
    np.testing.assert_array_equal(np.asarray(RS._mulhi(jnp.asarray(u), jnp.asarray(m), jnp,
                                                       False)), want)


def test_draws_are_uniform_enough():
    # chi-square of 200 replicates x 1000 draws over 10 bins of rows: not a biased map
    from scipy import stats

    n = 1000
    design, dd = RS._build_design(np, n, None, y_codes=None, groups_codes=None, n_groups=None,
                                  block_length=None, poisson=False, traced=False)
    tot = np.zeros(n)
    words = RS.seed_words(0)
    for r in range(200):
        tot += RS.draw_counts(design, dd, words, r, np, np.int64)
    bins = tot.reshape(10, -1).sum(axis=1)
    assert stats.chisquare(bins).pvalue > 1e-4
    # Poisson(1): mean and variance 1
    pd, pdd = RS._build_design(np, 20000, None, y_codes=None, groups_codes=None, n_groups=None,
                               block_length=None, poisson=True, traced=False)
    c = RS.draw_counts(pd, pdd, words, 3, np, np.int64)
    assert abs(c.mean() - 1) < 0.03 and abs(c.var() - 1) < 0.05


def test_same_replicates_on_every_backend(backend):
    """AUC replicates: the same counts on every backend, so the same values (float32 aside)."""
    y, a, b = _h23_data()
    want = paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=40, seed=3)
    got = backend.call(lambda yy, aa, bb: paired_bootstrap_replicates(
        "roc_auc", yy, aa, bb, n_resamples=40, seed=3, batch=16), y, a, b)
    ga, gb = to_np(got)
    if backend.x64:
        np.testing.assert_array_equal(ga, want[0])
        np.testing.assert_array_equal(gb, want[1])
    else:   # float32 scores may merge near-ties; values agree to float32
        np.testing.assert_allclose(ga, want[0], rtol=1e-5)
        np.testing.assert_allclose(gb, want[1], rtol=1e-5)


# --------------------------------------------------------------------------
# exact replicated AUC differences (handed case H17)
# --------------------------------------------------------------------------

def _exact_auc(y, s, c):
    """Mann-Whitney AUC (ties 1/2) of the rows repeated c times, as a Fraction."""
    from fractions import Fraction

    pos = [i for i in range(len(y)) if y[i] == 1]
    neg = [j for j in range(len(y)) if y[j] == 0]
    P = sum(int(c[i]) for i in pos)
    N = sum(int(c[j]) for j in neg)
    num = sum(int(c[i]) * int(c[j]) * (2 if s[i] > s[j] else 1 if s[i] == s[j] else 0)
              for i in pos for j in neg)
    return Fraction(num, 2 * P * N)


def _caller_counts(y, a, b, R, seed, **design):
    xp, y_, a_, b_, sw, g = BS._prepare_arrays(y, a, b, None, design.get("groups"))
    m, kind, name = BS._resolve_metric("roc_auc", "auto")
    s = BS._setup(m, kind, name, xp, y_, a_, b_, sw, stratify=design.get("stratify", False),
                  groups=g, num_groups=None, block_length=None, poisson=False, traced=False)
    arrays, _ = s.design_data
    words = RS.seed_words(seed)
    return [RS.row_counts(s.design, arrays, words, r, np, np.int64) for r in range(R)]


@pytest.mark.parametrize("seed", [3, 4, 11])
def test_h17_replicated_differences_are_exact_and_bca_counts_ties_right(seed):
    from fractions import Fraction

    from calipers._bootstrap.intervals import _interval

    case = load_case("H17")
    inp, kw = case["inputs"], case["kwargs"]
    y, a, b = (np.asarray(inp[k]) for k in ("y_true", "y_score_a", "y_score_b"))
    R = kw["n_resamples"]
    r = paired_bootstrap(kw["metric"], y, a, b, method=kw["method"], n_resamples=R,
                         stratify=kw["stratify"], seed=seed)
    theta = _exact_auc(y, a, np.ones(12)) - _exact_auc(y, b, np.ones(12))
    assert theta == Fraction(4, 35)
    assert r.difference == float(theta)
    exact = [_exact_auc(y, a, c) - _exact_auc(y, b, c)
             for c in _caller_counts(y, a, b, R, seed, stratify=True)]
    # every replicate is its exact difference, correctly rounded (one division)
    np.testing.assert_array_equal(r.bootstrap_distribution, [float(e) for e in exact])
    # so the comparisons with the estimate are the exact ones
    d = r.bootstrap_distribution
    assert np.count_nonzero(d < r.difference) == sum(e < theta for e in exact)
    assert np.count_nonzero(d == r.difference) == sum(e == theta for e in exact)
    assert any(e == theta for e in exact)      # the case has replicates tied at the estimate
    # and BCa from the engine equals BCa from the exact replicates
    from calipers._bootstrap.intervals import _jackknife
    xp, y_, a_, b_, sw, g = BS._prepare_arrays(y, a, b, None, None)
    m, kind, name = BS._resolve_metric("roc_auc", "auto")
    s = BS._setup(m, kind, name, xp, y_, a_, b_, sw, stratify=True, groups=None,
                  num_groups=None, block_length=None, poisson=False, traced=False)
    ja, jb = _jackknife(s, 100)
    want = _interval(np.array([float(e) for e in exact]), float(theta), "bca", 0.95,
                     "two-sided", ja - jb)
    assert r.confidence_interval == want


def test_exact_difference_on_jax_matches_numpy():
    import jax
    import jax.numpy as jnp

    case = load_case("H17")
    inp = case["inputs"]
    y, a, b = (np.asarray(inp[k]) for k in ("y_true", "y_score_a", "y_score_b"))
    r = paired_bootstrap("roc_auc", y, a, b, n_resamples=200, stratify=True, seed=5)
    with jax.enable_x64(True):
        j = paired_bootstrap("roc_auc", jnp.asarray(y), jnp.asarray(a), jnp.asarray(b),
                             n_resamples=200, stratify=True, seed=5)
    np.testing.assert_array_equal(j.bootstrap_distribution, r.bootstrap_distribution)
    assert j.difference == r.difference


# --------------------------------------------------------------------------
# integer sample_weight = repetition; user metrics on (n, k) rows
# --------------------------------------------------------------------------

@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "log_loss", "brier"])
@pytest.mark.parametrize("design", [dict(), dict(stratify=True), dict(resampling="poisson")],
                         ids=["rows", "stratified", "poisson"])
def test_integer_weights_resample_the_repeated_rows(metric, design):
    y, a, b = _probs(*_h23_data())
    y, a, b = y[:80], a[:80], b[:80]
    w = np.random.default_rng(2).integers(0, 4, 80)
    idx = np.repeat(np.arange(80), w)
    da, db = paired_bootstrap_replicates(metric, y, a, b, sample_weight=w, n_resamples=40,
                                         seed=6, **design)
    ra, rb = paired_bootstrap_replicates(metric, y[idx], a[idx], b[idx], n_resamples=40,
                                         seed=6, **design)
    if metric == "roc_auc":     # exact integers: bit for bit
        np.testing.assert_array_equal(da, ra)
        np.testing.assert_array_equal(db, rb)
    else:                       # the same counts; float sums in another grouping
        np.testing.assert_allclose(da, ra, rtol=1e-13)
        np.testing.assert_allclose(db, rb, rtol=1e-13)


def test_integer_weights_bca_equals_repeated_rows_when_units_fit_the_jackknife():
    y, a, b = _h23_data()
    y, a, b = y[:40], np.round(a[:40], 1), np.round(b[:40], 1)
    w = np.random.default_rng(4).integers(0, 4, 40)
    assert w.sum() <= 100          # delete-one-unit jackknife: the repeated rows' LOO
    idx = np.repeat(np.arange(40), w)
    r1 = paired_bootstrap("roc_auc", y, a, b, sample_weight=w, n_resamples=150, seed=2,
                          method="bca")
    r2 = paired_bootstrap("roc_auc", y[idx], a[idx], b[idx], n_resamples=150, seed=2,
                          method="bca")
    np.testing.assert_array_equal(r1.bootstrap_distribution, r2.bootstrap_distribution)
    assert r1.difference == r2.difference
    assert r1.confidence_interval.low == pytest.approx(r2.confidence_interval.low, rel=1e-12)
    assert r1.confidence_interval.high == pytest.approx(r2.confidence_interval.high, rel=1e-12)


def test_integer_weights_on_jax_equal_numpy():
    import jax
    import jax.numpy as jnp

    y, a, b = _h23_data()
    w = np.random.default_rng(3).integers(0, 3, 300)
    want = paired_bootstrap_replicates("roc_auc", y, a, b, sample_weight=w, n_resamples=20,
                                       seed=1, stratify=True)
    with jax.enable_x64(True):
        got = paired_bootstrap_replicates("roc_auc", jnp.asarray(y), jnp.asarray(a),
                                          jnp.asarray(b), sample_weight=jnp.asarray(w),
                                          n_resamples=20, seed=1, stratify=True)
    np.testing.assert_array_equal(np.asarray(got[0]), want[0])


def test_float_weights_stay_weights_on_resampled_rows():
    y, a, b = _h23_data()
    w = np.random.default_rng(3).random(300) + 0.5
    design, dd = RS._build_design(np, 300, None, y_codes=None, groups_codes=None,
                                  n_groups=None, block_length=None, poisson=False,
                                  traced=False)
    words = RS.seed_words(8)
    da, _ = paired_bootstrap_replicates("log_loss", y, a / 1.4, b / 1.4, sample_weight=w,
                                        n_resamples=5, seed=8)
    for r in range(5):
        c = RS.draw_counts(design, dd, words, r, np, np.int64)
        want = calipers.log_loss(y, a / 1.4, sample_weight=c * w)
        assert da[r] == pytest.approx(float(want), rel=1e-12)


def _c_index(y, s, sample_weight=None):
    """Harrell's concordance of (time, event) rows, risk score s (higher = earlier event)."""
    y, s = np.asarray(y, float), np.asarray(s, float)
    t, e = y[:, 0], y[:, 1]
    w = np.ones(len(t)) if sample_weight is None else np.asarray(sample_weight, float)
    comparable = (t[:, None] < t[None, :]) & (e[:, None] == 1)
    ww = w[:, None] * w[None, :] * comparable
    conc = (s[:, None] > s[None, :]) + 0.5 * (s[:, None] == s[None, :])
    tot = ww.sum()
    return float("nan") if tot == 0 else float((ww * conc).sum() / tot)


@pytest.mark.parametrize("by", ["weights", "indices"])
def test_two_column_rows_are_resampled_together(by):
    rng = np.random.default_rng(9)
    n = 40
    t = rng.exponential(1.0, n).round(2)
    e = (rng.random(n) < 0.7).astype(float)
    y = np.stack([t, e], axis=1)
    a, b = -t + rng.normal(0, 0.5, n), -t + rng.normal(0, 1.0, n)
    metric = _c_index if by == "weights" else (lambda yy, ss: _c_index(yy, ss))
    da, db = paired_bootstrap_replicates(metric, y, a, b, n_resamples=15, seed=4)
    design, dd = RS._build_design(np, n, None, y_codes=None, groups_codes=None,
                                  n_groups=None, block_length=None, poisson=False,
                                  traced=False)
    words = RS.seed_words(4)
    for r in range(15):
        idx = np.repeat(np.arange(n), RS.draw_counts(design, dd, words, r, np, np.int64))
        assert da[r] == pytest.approx(_c_index(y[idx], a[idx]), rel=1e-12)
        assert db[r] == pytest.approx(_c_index(y[idx], b[idx]), rel=1e-12)
    with pytest.raises(ValueError, match="y_true must be 1-D or 2-D"):
        paired_bootstrap_replicates(metric, y[:, :, None], a, b, n_resamples=3, seed=0)
    with pytest.raises(ValueError, match="y_true must be 1-D"):
        paired_bootstrap_replicates("roc_auc", y, a, b, n_resamples=3, seed=0)


@pytest.mark.parametrize("with_layout", [False, True])
def test_numpy_in_place_drawer_equals_the_array_api_draw(with_layout):
    n = 1000
    lay = np.random.default_rng(0).permutation(n) if with_layout else None
    design, dd = RS._build_design(np, n, lay, y_codes=None, groups_codes=None, n_groups=None,
                                  block_length=None, poisson=False, traced=False)
    words = RS.seed_words(3)
    draw = RS.numpy_drawer(design, dd, words)
    for r in (0, 1, 77, 2**32 - 1):
        np.testing.assert_array_equal(draw(r), RS.draw_counts(design, dd, words, r, np,
                                                              np.int64))
