"""Bradley-Terry arena ratings and their bootstrap, against independent computations.

References: the unpenalised logistic regression on the +1/-1 design of the battles (scikit-learn,
as FastChat's ``compute_mle_elo`` builds it, ties as one win for each side of a doubled table),
closed forms for two models, a direct maximisation of the per-battle Davidson likelihood
(scipy), and a loop of full fits over the resampler's replicate counts.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

import calipers
from calipers import bradley_terry, bradley_terry_bootstrap
from calipers._bootstrap.cells import cell_counts, cell_table
from calipers._bootstrap.resample import draw_counts, make_design, seed_words

ELO = 400 / math.log(10)


def tournament(seed=0, K=5, n=600, tie_share=0.1, names=None):
    rng = np.random.default_rng(seed)
    true = rng.normal(0, 1, K)
    a = rng.integers(0, K, n)
    b = (a + rng.integers(1, K, n)) % K
    p = 1 / (1 + np.exp(-(true[a] - true[b])))
    u = rng.random(n)
    o = np.where(u < p * (1 - tie_share), 1.0, np.where(u < 1 - tie_share, 0.0, 0.5))
    if names is not None:
        names = np.asarray(names)
        return names[a], names[b], o
    return a, b, o


def fastchat_mle(a, b, o, K, sample_weight=None):
    """FastChat's compute_mle_elo: the table doubled, a tie one A-win and one B-win; the
    logistic regression without penalty or intercept on the +1/-1 design (natural-log units)."""
    n = len(a)
    X = np.zeros((n, K))
    X[np.arange(n), a] = 1.0
    X[np.arange(n), b] = -1.0
    X = np.concatenate([X, X])
    Y = np.zeros(2 * n)
    Y[:n][o == 1] = 1.0
    Y[n:][o == 1] = 1.0
    Y[:n][o == 0.5] = 1.0          # the first copy of a tie: A wins; the second: B wins
    w = None if sample_weight is None else np.concatenate([sample_weight, sample_weight])
    lr = LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-12, max_iter=100000)
    lr.fit(X, Y, sample_weight=w)
    c = lr.coef_[0]
    return c - c.mean()


# --------------------------------------------------------------------------
# the fit
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_unpenalised_logistic_regression(seed):
    a, b, o = tournament(seed, K=6, n=800)
    res = bradley_terry(a, b, o)
    ref = fastchat_mle(a, b, o, 6)
    np.testing.assert_allclose(res.ratings, ELO * ref + 1000, atol=1e-5)
    assert res.models == tuple(range(6))
    assert res.prior == 0 and res.converged
    assert math.isnan(res.tie_parameter)
    np.testing.assert_allclose(np.mean(res.ratings), 1000)


def test_matches_logistic_regression_with_weights():
    a, b, o = tournament(3, K=4, n=300)
    w = np.random.default_rng(3).uniform(0.2, 3.0, len(a))
    res = bradley_terry(a, b, o, sample_weight=w, scale="log", anchor_rating=0.0)
    np.testing.assert_allclose(res.ratings, fastchat_mle(a, b, o, 4, w), atol=1e-6)


def winner_loser(seed, K=5, n=400):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, K, n)
    b = (a + rng.integers(1, K, n)) % K
    strength = np.linspace(-1, 1, K)
    won = rng.random(n) < 1 / (1 + np.exp(-(strength[a] - strength[b])))
    return np.where(won, a, b), np.where(won, b, a)


def test_matches_choix_ilsr():
    choix = pytest.importorskip("choix")
    w, l_ = winner_loser(20)
    p = choix.ilsr_pairwise(5, list(zip(w.tolist(), l_.tolist())), alpha=0.0, tol=1e-12,
                            max_iter=10000)
    res = bradley_terry(w, l_, scale="log", anchor_rating=0.0)
    np.testing.assert_allclose(res.ratings, p - p.mean(), atol=1e-8)


def test_prior_matches_choix_penalised_fit():
    # choix's opt_pairwise minimises -loglik + alpha * sum(theta**2): prior = 2 alpha, also
    # where the MLE is not finite (model 0 never loses)
    choix = pytest.importorskip("choix")
    w, l_ = winner_loser(21, K=4, n=60)
    keep = l_ != 0
    w, l_ = w[keep], l_[keep]
    p = choix.opt_pairwise(4, list(zip(w.tolist(), l_.tolist())), alpha=0.35, tol=1e-12,
                           method="Newton-CG")
    res = bradley_terry(w, l_, scale="log", anchor_rating=0.0, prior=0.7)
    np.testing.assert_allclose(res.ratings, p - p.mean(), atol=1e-6)


def test_two_models_closed_form_half_ties():
    # a beats b 7 times, loses 2 times, 3 ties: theta_a - theta_b = ln(8.5 / 3.5)
    a = ["x"] * 12
    b = ["y"] * 12
    o = [1] * 7 + [0] * 2 + [0.5] * 3
    res = bradley_terry(a, b, o)
    gap = 400 * math.log10(8.5 / 3.5)
    np.testing.assert_allclose(res.ratings, [1000 + gap / 2, 1000 - gap / 2], atol=1e-9)
    assert res.models == ("x", "y")
    np.testing.assert_allclose(res.win_counts, [[0, 7], [2, 0]])
    np.testing.assert_allclose(res.tie_counts, [[0, 3], [3, 0]])


def test_two_models_closed_form_davidson():
    # two models: the three multinomial shares are matched exactly, so
    # exp(s) = wins / losses and nu = ties / sqrt(wins * losses)
    a = ["x"] * 12
    b = ["y"] * 12
    o = [1] * 7 + [0] * 2 + [0.5] * 3
    res = bradley_terry(a, b, o, ties="davidson", scale="log", anchor="y", anchor_rating=0.0)
    np.testing.assert_allclose(res.ratings, [math.log(7 / 2), 0.0], atol=1e-9)
    np.testing.assert_allclose(res.tie_parameter, 3 / math.sqrt(14), rtol=1e-9)
    ll = 7 * math.log(7 / 12) + 2 * math.log(2 / 12) + 3 * math.log(3 / 12)
    np.testing.assert_allclose(res.log_likelihood, ll, rtol=1e-12)


def test_three_models_cyclic_and_balanced_are_equal():
    # a > b > c > a, each once: every rating equal (the score equations by symmetry)
    res = bradley_terry(["a", "b", "c"], ["b", "c", "a"])
    np.testing.assert_allclose(res.ratings, [1000, 1000, 1000], atol=1e-9)


def test_three_models_score_equations_exact_counts():
    # Zermelo's equations: wins_i = sum_j n_ij pi_i / (pi_i + pi_j), checked on integer counts
    wins = {(0, 1): 3, (1, 0): 1, (1, 2): 2, (2, 1): 2, (0, 2): 4, (2, 0): 1}
    a, b = [], []
    for (i, j), c in wins.items():
        a += [i] * c
        b += [j] * c
    res = bradley_terry(a, b, scale="log", anchor_rating=0.0)
    pi = np.exp(res.ratings)
    for i in range(3):
        expect = sum(c * pi[i] / (pi[i] + pi[j]) for (k, j), c in wins.items() if k == i) + \
            sum(c * pi[i] / (pi[i] + pi[k]) for (k, j), c in wins.items() if j == i)
        got = sum(c for (k, _), c in wins.items() if k == i)
        np.testing.assert_allclose(expect, got, rtol=1e-10)


def davidson_direct(a, b, o, K):
    """Maximise the per-battle Davidson log-likelihood directly (theta_0 = 0, log nu free)."""
    a, b, o = map(np.asarray, (a, b, o))

    def nll(x):
        th = np.concatenate([[0.0], x[:K - 1]])
        nu = math.exp(x[-1])
        pa, pb = np.exp(th[a]), np.exp(th[b])
        D = pa + pb + nu * np.sqrt(pa * pb)
        p = np.where(o == 1, pa, np.where(o == 0, pb, nu * np.sqrt(pa * pb))) / D
        return -np.log(p).sum()

    r = minimize(nll, np.zeros(K), method="BFGS", options={"gtol": 1e-10})
    th = np.concatenate([[0.0], r.x[:K - 1]])
    return th - th.mean(), math.exp(r.x[-1]), -r.fun


def test_davidson_matches_direct_maximisation():
    a, b, o = tournament(4, K=4, n=400, tie_share=0.25)
    res = bradley_terry(a, b, o, ties="davidson", scale="log", anchor_rating=0.0)
    th, nu, ll = davidson_direct(a, b, o, 4)
    np.testing.assert_allclose(res.ratings, th, atol=1e-5)
    np.testing.assert_allclose(res.tie_parameter, nu, rtol=1e-5)
    np.testing.assert_allclose(res.log_likelihood, ll, rtol=1e-9)


@pytest.mark.parametrize("ties", ["half", "davidson"])
def test_order_and_side_invariance(ties):
    a, b, o = tournament(5, K=5, n=500, names=["m1", "m2", "m3", "m4", "m5"])
    base = bradley_terry(a, b, o, ties=ties)
    perm = np.random.default_rng(5).permutation(len(a))
    np.testing.assert_allclose(bradley_terry(a[perm], b[perm], o[perm], ties=ties).ratings,
                               base.ratings, atol=1e-9)
    flip = np.random.default_rng(6).random(len(a)) < 0.5
    a2, b2 = np.where(flip, b, a), np.where(flip, a, b)
    o2 = np.where(flip, 1 - o, o)
    np.testing.assert_allclose(bradley_terry(a2, b2, o2, ties=ties).ratings, base.ratings,
                               atol=1e-9)


def test_winner_loser_arrays():
    w = ["a", "b", "a", "c", "c", "b"]
    l_ = ["b", "a", "c", "a", "b", "c"]
    np.testing.assert_allclose(bradley_terry(w, l_).ratings,
                               bradley_terry(w, l_, np.ones(6)).ratings)


@pytest.mark.parametrize("ties", ["half", "davidson"])
def test_integer_weights_are_repetitions(ties):
    a, b, o = tournament(7, K=4, n=200, tie_share=0.2)
    w = np.random.default_rng(7).integers(0, 4, len(a))
    r1 = bradley_terry(a, b, o, sample_weight=w, ties=ties)
    r2 = bradley_terry(np.repeat(a, w), np.repeat(b, w), np.repeat(o, w), ties=ties)
    np.testing.assert_allclose(r1.ratings, r2.ratings, atol=1e-9)
    np.testing.assert_array_equal(r1.win_counts, r2.win_counts)


def test_anchor_and_scales():
    a, b, o = tournament(8, K=4, n=300, names=["w", "x", "y", "z"])
    elo = bradley_terry(a, b, o, anchor="x", anchor_rating=1114.0)
    assert elo.rating("x") == pytest.approx(1114.0)
    log = bradley_terry(a, b, o, scale="log")
    assert log.anchor_rating == 0.0
    np.testing.assert_allclose(np.diff(elo.ratings), ELO * np.diff(log.ratings), atol=1e-9)
    np.testing.assert_allclose(np.mean(log.ratings), 0.0, atol=1e-12)


def test_disconnected_graph_names_components():
    with pytest.raises(ValueError, match=r"not connected.*\['a', 'b'\]; \['c', 'd'\]"):
        bradley_terry(["a", "b", "c", "d"], ["b", "a", "d", "c"])


def test_never_loses_warns_and_uses_the_stated_prior():
    a = ["a", "a", "b", "c", "b"]
    b = ["b", "c", "c", "b", "a"]
    o = [1, 1, 1, 1, 0]                 # "a" also won the last battle: never loses
    with pytest.warns(calipers.UndefinedMetricWarning, match=r"\['a'\] never lose"):
        res = bradley_terry(a, b, o)
    assert res.prior == 1.0
    assert np.all(np.isfinite(res.ratings)) and res.converged
    # the result is the maximum of the stated penalised likelihood
    explicit = bradley_terry(a, b, o, prior=1.0)
    np.testing.assert_allclose(res.ratings, explicit.ratings)
    with pytest.raises(ValueError, match="prior=0.*not finite"):
        bradley_terry(a, b, o, prior=0)


def test_penalised_estimate_maximises_the_stated_objective():
    a, b, o = ["a", "a", "b"], ["b", "c", "c"], [1, 1, 1]      # a > b > c, no finite MLE
    res = bradley_terry(a, b, o, prior=0.5, scale="log", anchor_rating=0.0)

    def obj(th):
        th = np.asarray(th)
        ia, ib = [0, 0, 1], [1, 2, 2]
        ll = -np.logaddexp(0, -(th[ia] - th[ib])).sum()
        c = th - th.mean()
        return -(ll - 0.25 * c @ c)

    r = minimize(obj, np.zeros(3), method="BFGS", options={"gtol": 1e-12})
    np.testing.assert_allclose(res.ratings, r.x - r.x.mean(), atol=1e-6)


def test_no_finite_mle_for_a_set_is_named():
    # {a, b} beat each other and always beat {c, d}, who beat each other
    a = ["a", "b", "c", "d", "a", "b"]
    b = ["b", "a", "d", "c", "c", "d"]
    with pytest.warns(calipers.UndefinedMetricWarning, match=r"\['a', 'b'\] never lose"):
        bradley_terry(a, b)


def test_never_wins_is_named():
    with pytest.warns(calipers.UndefinedMetricWarning, match=r"\['c'\] never win"):
        bradley_terry(["a", "b", "a", "b"], ["b", "a", "c", "c"])


@pytest.mark.parametrize("kwargs, match", [
    (dict(outcome=[1, 2, 0]), "outcome must be 1"),
    (dict(outcome=[1, 0]), "outcome has 2 elements"),
    (dict(ties="none"), "ties must be one of"),
    (dict(scale="glicko"), "scale must be one of"),
    (dict(anchor="q"), "anchor 'q' is not among"),
    (dict(prior=-1.0), "prior must be"),
    (dict(sample_weight=[1, -1, 1]), "sample_weight"),
    (dict(ties="davidson", outcome=[1, 0, 1]), "needs at least one tie"),
])
def test_invalid_input(kwargs, match):
    kw = dict(kwargs)
    outcome = kw.pop("outcome", [1, 0, 0.5])
    with pytest.raises(ValueError, match=match):
        bradley_terry(["a", "b", "c"], ["b", "c", "a"], outcome, **kw)


def test_invalid_battles():
    with pytest.raises(ValueError, match="element 1 pits 'b' against itself"):
        bradley_terry(["a", "b"], ["b", "b"])
    with pytest.raises(ValueError, match="model_b has 1 elements"):
        bradley_terry(["a", "b"], ["b"])
    with pytest.raises(ValueError, match="empty"):
        bradley_terry([], [])
    with pytest.raises(ValueError, match="one sortable type"):
        bradley_terry(np.array(["a", 1], dtype=object), np.array([2, "b"], dtype=object))


def test_result_is_a_pytree():
    jax = pytest.importorskip("jax")
    res = bradley_terry(["a", "b", "a"], ["b", "a", "b"])
    leaves = jax.tree_util.tree_leaves(res)
    assert any(np.shape(x) == (2,) for x in leaves)
    again = jax.tree_util.tree_map(lambda x: x, res)
    assert again.models == ("a", "b")


# --------------------------------------------------------------------------
# the bootstrap
# --------------------------------------------------------------------------

def loop_reference(a, b, o, counts, level=0.95, **kw):
    """Full fits on each replicate's counts as weights, then the summaries by hand."""
    reps = np.array([bradley_terry(a, b, o, sample_weight=c, **kw).ratings for c in counts])
    alpha = 1 - level
    low = np.quantile(reps, alpha / 2, axis=0)
    high = np.quantile(reps, 1 - alpha / 2, axis=0)
    ranks = np.array([[1 + np.sum(r > r[k]) for k in range(reps.shape[1])] for r in reps])
    r_low = np.sort(ranks, axis=0)[int(math.floor(alpha / 2 * (len(reps) - 1)))]
    r_high = np.sort(ranks, axis=0)[int(math.ceil((1 - alpha / 2) * (len(reps) - 1)))]
    best = np.bincount(np.argmax(reps, axis=1), minlength=reps.shape[1]) / len(reps)
    return reps, low, high, r_low, r_high, best


def battle_cells(a, b, o, K):
    """Each battle's cell, written out: winner * K + loser, or K * K + low * K + high for a tie."""
    a, b, o = np.asarray(a), np.asarray(b), np.asarray(o)
    win = np.where(o == 1, a * K + b, b * K + a)
    return np.where(o == 0.5, K * K + np.minimum(a, b) * K + np.maximum(a, b), win)


def cell_battles(cells, K):
    """One battle per cell (the inverse of :func:`battle_cells`): (model_a, model_b, outcome)."""
    cells = np.asarray(cells)
    tie = cells >= K * K
    rest = np.where(tie, cells - K * K, cells)
    return rest // K, rest % K, np.where(tie, 0.5, 1.0)


def test_bootstrap_equals_a_loop_over_the_same_replicate_cell_counts():
    a, b, o = tournament(9, K=5, n=400)
    B_ = 40
    res = bradley_terry_bootstrap(a, b, o, n_resamples=B_, seed=11)
    table = cell_table(battle_cells(a, b, o, 5))
    assert table.n_units == len(a)
    words = seed_words(11)
    counts = [cell_counts(table, words, r) for r in range(B_)]
    assert all(int(c.sum()) == len(a) for c in counts)
    ca, cb, co = cell_battles(table.cells, 5)
    reps, low, high, r_low, r_high, best = loop_reference(ca, cb, co, counts)
    np.testing.assert_allclose(res.replicates, reps, atol=1e-7)
    np.testing.assert_allclose(res.rating_interval.low, low, atol=1e-7)
    np.testing.assert_allclose(res.rating_interval.high, high, atol=1e-7)
    np.testing.assert_array_equal(res.rank_interval.low, r_low)
    np.testing.assert_array_equal(res.rank_interval.high, r_high)
    np.testing.assert_allclose(res.prob_best, best)
    np.testing.assert_allclose(res.ratings, bradley_terry(a, b, o).ratings)
    assert res.n_undefined == 0 and res.resampling == "battles"
    assert res.prob_best.sum() == pytest.approx(1.0)


def test_bootstrap_non_integer_weights_key_cells_by_weight():
    a, b, o = tournament(16, K=4, n=200)
    w = np.random.default_rng(16).choice([0.5, 1.0, 2.5], len(a))
    B_ = 20
    res = bradley_terry_bootstrap(a, b, o, sample_weight=w, n_resamples=B_, seed=5)
    table = cell_table(battle_cells(a, b, o, 4), value=w)
    assert table.n_units == len(a)          # every battle is one unit, whatever its weight
    words = seed_words(5)
    ca, cb, co = cell_battles(table.cells, 4)
    counts = [cell_counts(table, words, r) * table.value for r in range(B_)]
    reps, *_ = loop_reference(ca, cb, co, counts)
    np.testing.assert_allclose(res.replicates, reps, atol=1e-7)
    assert res.resampling == "battles"


@pytest.mark.parametrize("weights", ["none", "integer", "float"])
def test_bootstrap_is_invariant_to_the_battles_order(weights):
    a, b, o = tournament(17, K=5, n=300)
    rng = np.random.default_rng(17)
    w = {"none": None, "integer": rng.integers(0, 4, len(a)),
         "float": rng.choice([0.25, 1.0, 3.5], len(a))}[weights]
    perm = rng.permutation(len(a))
    kw = dict(n_resamples=30, seed=8)
    r1 = bradley_terry_bootstrap(a, b, o, sample_weight=w, **kw)
    r2 = bradley_terry_bootstrap(a[perm], b[perm], o[perm],
                                 sample_weight=None if w is None else w[perm], **kw)
    np.testing.assert_array_equal(r1.replicates, r2.replicates)
    # swapping the sides with the outcome flipped gives the very same cells
    r3 = bradley_terry_bootstrap(b, a, 1 - o, sample_weight=w, **kw)
    np.testing.assert_array_equal(r1.replicates, r3.replicates)


def test_cluster_bootstrap_equals_a_loop_over_cluster_counts():
    a, b, o = tournament(10, K=4, n=300, tie_share=0.2)
    groups = np.random.default_rng(10).integers(0, 30, len(a))
    B_ = 25
    res = bradley_terry_bootstrap(a, b, o, groups=groups * 7 + 3, n_resamples=B_, seed=4,
                                  ties="davidson")
    codes = np.unique(groups, return_inverse=True)[1]
    design = make_design("cluster", len(a), n_units=30)
    words = seed_words(4)
    counts = [draw_counts(design, ((codes,), None), words, r, np, np.int64) for r in range(B_)]
    # a cluster's battles share its count
    for c in counts:
        for g in range(30):
            assert len(set(c[groups == g].tolist())) == 1
    reps, low, high, *_ = loop_reference(a, b, o, counts, ties="davidson")
    np.testing.assert_allclose(res.replicates, reps, atol=1e-7)
    np.testing.assert_allclose(res.rating_interval.low, low, atol=1e-7)
    assert res.resampling == "clusters"


def test_bootstrap_integer_weights_resample_the_repeated_battles():
    a, b, o = tournament(12, K=4, n=150)
    w = np.random.default_rng(12).integers(0, 3, len(a))
    r1 = bradley_terry_bootstrap(a, b, o, sample_weight=w, n_resamples=15, seed=2)
    r2 = bradley_terry_bootstrap(np.repeat(a, w), np.repeat(b, w), np.repeat(o, w),
                                 n_resamples=15, seed=2)
    np.testing.assert_allclose(r1.replicates, r2.replicates, atol=1e-9)
    assert r1.resampling == "battle units"


def test_bootstrap_side_swap_and_seed():
    a, b, o = tournament(13, K=4, n=200)
    r1 = bradley_terry_bootstrap(a, b, o, n_resamples=20, seed=3)
    r2 = bradley_terry_bootstrap(b, a, 1 - o, n_resamples=20, seed=3)
    np.testing.assert_allclose(r1.replicates, r2.replicates, atol=1e-9)
    r3 = bradley_terry_bootstrap(a, b, o, n_resamples=20, seed=4)
    assert not np.allclose(r1.replicates, r3.replicates)


def test_bootstrap_anchor_has_a_point_interval():
    a, b, o = tournament(14, K=3, n=200, names=["p", "q", "r"])
    res = bradley_terry_bootstrap(a, b, o, n_resamples=20, seed=0, anchor="q",
                                  anchor_rating=1200)
    assert res.rating_interval.low[1] == pytest.approx(1200)
    assert res.rating_interval.high[1] == pytest.approx(1200)


def test_bootstrap_undefined_replicates_are_counted():
    # "a" loses once in 20 battles: some replicates miss that loss (no finite MLE there)
    a = ["a"] * 20 + ["b"] * 10
    b = ["b"] * 10 + ["c"] * 10 + ["c"] * 10
    o = [1] * 9 + [0] + [1] * 10 + [1] * 5 + [0] * 5
    with pytest.warns(calipers.UndefinedMetricWarning, match="left out"):
        res = bradley_terry_bootstrap(a, b, o, n_resamples=200, seed=0)
    bad = np.isnan(res.replicates).all(axis=1)
    assert res.n_undefined == int(bad.sum()) > 0
    assert np.isnan(res.replicates[bad]).all() and np.isfinite(res.replicates[~bad]).all()
    assert np.isfinite(res.rating_interval.low).all()
    # with a stated prior every replicate is defined
    with warnings.catch_warnings():
        warnings.simplefilter("error", calipers.UndefinedMetricWarning)
        res2 = bradley_terry_bootstrap(a, b, o, n_resamples=200, seed=0, prior=0.1)
    assert res2.n_undefined == 0


def test_bootstrap_few_units_warn():
    with pytest.warns(calipers.BootstrapDesignWarning):
        bradley_terry_bootstrap(["a", "b", "a", "b"], ["b", "a", "b", "a"], n_resamples=5,
                                seed=0, prior=1.0)


def test_bootstrap_invalid_options():
    a, b, o = tournament(15, K=3, n=60)
    with pytest.raises(ValueError, match="n_resamples"):
        bradley_terry_bootstrap(a, b, o, n_resamples=0)
    with pytest.raises(ValueError, match="confidence_level"):
        bradley_terry_bootstrap(a, b, o, confidence_level=1.5)
    with pytest.raises(ValueError, match="groups has 3 elements"):
        bradley_terry_bootstrap(a, b, o, groups=[1, 2, 3])
    with pytest.raises(ValueError, match="seed"):
        bradley_terry_bootstrap(a, b, o, seed=-1)


# --------------------------------------------------------------------------
# integer codes and jax.jit
# --------------------------------------------------------------------------

def test_num_models_codes_eagerly():
    a, b, o = tournament(16, K=4, n=200)
    res = bradley_terry(a, b, o, num_models=4)
    assert res.models == (0, 1, 2, 3)
    np.testing.assert_allclose(res.ratings, bradley_terry(a, b, o).ratings)
    with pytest.raises(ValueError, match=r"num_models=3\), got 3"):
        bradley_terry(a, b, o, num_models=3)
    with pytest.raises(ValueError, match="integer model codes"):
        bradley_terry(a.astype(float), b, o, num_models=4)
    # a code without battles is a model outside the comparison graph
    with pytest.raises(ValueError, match="not connected"):
        bradley_terry(a, b, o, num_models=5)


@pytest.mark.parametrize("ties", ["half", "davidson"])
@pytest.mark.parametrize("anchor", [None, 2])
def test_jit_equals_eager(ties, anchor):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    a, b, o = tournament(17, K=5, n=300, tie_share=0.2)
    w = np.random.default_rng(17).integers(0, 3, len(a)).astype(float)
    eager = bradley_terry(a, b, o, sample_weight=w, ties=ties, anchor=anchor, num_models=5)
    with jax.enable_x64(True):
        f = jax.jit(lambda a, b, o, w: bradley_terry(a, b, o, sample_weight=w, ties=ties,
                                                     anchor=anchor, num_models=5))
        got = f(jnp.asarray(a), jnp.asarray(b), jnp.asarray(o), jnp.asarray(w))
        np.testing.assert_allclose(np.asarray(got.ratings), eager.ratings, atol=1e-9)
        np.testing.assert_allclose(float(got.log_likelihood), eager.log_likelihood, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(got.tie_parameter), eager.tie_parameter,
                                   rtol=1e-9)
        assert bool(got.converged)


def test_jit_undefined_and_invalid_are_nan():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    with jax.enable_x64(True):
        def f(a, b, o=None, **kw):
            g = jax.jit(lambda a, b, o: bradley_terry(a, b, o, num_models=3, **kw))
            return np.asarray(g(jnp.asarray(a), jnp.asarray(b),
                                None if o is None else jnp.asarray(o)).ratings)

        assert np.isnan(f([0, 1, 2], [1, 1, 0])).all()                 # a self-battle
        assert np.isnan(f([0, 1, 2], [1, 2, 0], [1, 2, 0])).all()      # outcome 2
        assert np.isnan(f([0, 1, 2], [1, 2, 5])).all()                 # code out of range
        assert np.isnan(f([0, 1], [1, 0])).all()                       # model 2 never plays
        assert np.isnan(f([0, 1, 2], [1, 2, 0], [1, 1, 1], ties="davidson")).all()  # no tie
        assert np.isnan(f([0, 0, 1], [1, 2, 2], prior=0.0)).all()     # no finite MLE
        # prior=None: the stated prior, as eagerly (without the warning)
        g = jax.jit(lambda a, b: bradley_terry(a, b, num_models=3))
        got = g(jnp.asarray([0, 0, 1]), jnp.asarray([1, 2, 2]))
        with pytest.warns(calipers.UndefinedMetricWarning):
            eager = bradley_terry([0, 0, 1], [1, 2, 2], num_models=3)
        assert float(got.prior) == eager.prior == 1.0
        np.testing.assert_allclose(np.asarray(got.ratings), eager.ratings, atol=1e-9)


def test_jit_needs_num_models():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    with pytest.raises(ValueError, match="pass num_models"):
        jax.jit(lambda a, b: bradley_terry(a, b))(jnp.asarray([0, 1]), jnp.asarray([1, 0]))
