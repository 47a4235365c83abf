"""The generalised SPRT on game counts, Elo from match results and the mergeable game counts.

The reference likelihood ratio here is computed independently of calipers' secular-equation
and fixed-point code: the constrained maximum likelihood is the solution of its Karush-Kuhn-
Tucker system (stationarity of the Lagrangian, sum q = 1, the hypothesis), started from a
scipy SLSQP solution and solved to rounding with ``scipy.optimize.root``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize, stats

import calipers
from calipers import GameCountsState, gsprt_llr, match_elo, sprt

NT = 800 / math.log(10)

# Counts of fishtest runs quoted in fishtest's own stat_util.py (logistic and normalised
# bounds), with the LLR that fishtest's LLRcalc.LLR_logistic / LLR_normalized print for them
# (brentq's tolerance leaves those about 1e-11 from the exact constrained maximum).
PUBLISHED = [
    ([65804, 56553, 65388], (-3, 1), "logistic", 2.0490426179674808),
    ([10789, 19328, 33806, 19402, 10543], (-3, 1), "logistic", 2.1310678117940807),
    ([39, 2226, 31451, 2412, 40], (0.2, 0.9), "logistic", 2.1625425800483593),
    ([39, 2226, 31451, 2412, 40], (0.764, 3.439), "normalised", 2.162940869584568),
    ([39, 2226, 31451, 2412, 40], (0, 2), "normalised", 2.93690981720447),
    ([591, 2163, 716], (0, 2), "normalised", 1.1150340420103164),
]
MORE = [
    ([1187, 7410, 13475, 7378, 1164], (-3, 1), "logistic"),
    ([1187, 7410, 13475, 7378, 1164], (0, 2), "normalised"),
    ([13624, 34333, 13543], (-1.75, 0.25), "normalised"),
    ([0, 12, 30, 9, 1], (0, 5), "logistic"),          # an empty cell: regularised
    ([3, 0, 7], (-10, 10), "normalised"),
    ([5, 40, 2], (-5, 0), "logistic"),
]


# --------------------------------------------------------------------------
# independent reference: the KKT system of the constrained likelihood
# --------------------------------------------------------------------------

def _pdf(counts):
    c = np.array([x if x > 0 else 1e-3 for x in counts], dtype=np.float64)
    n = c.sum()
    return n, np.linspace(0.0, 1.0, len(counts)), c / n


def _constraint(model, a, t):
    """c(q) = 0 and its gradient, for q not assumed normalised (sum q = 1 is separate)."""
    if model == "logistic":
        return (lambda q: q @ a - t), (lambda q: a)

    def c(q):
        mu = q @ a
        return mu - 0.5 - t * math.sqrt(q @ a**2 - mu**2)

    def grad(q):
        mu = q @ a
        sigma = math.sqrt(q @ a**2 - mu**2)
        return a - t * (a**2 - 2 * mu * a) / (2 * sigma)

    return c, grad


def _constrained_mle(p, a, model, t):
    c, grad = _constraint(model, a, t)
    m = len(p)
    start = optimize.minimize(
        lambda th: -p @ (th - np.log(np.exp(th).sum())), np.log(p), method="SLSQP",
        constraints=[{"type": "eq", "fun": lambda th: c(np.exp(th) / np.exp(th).sum())}],
        options={"ftol": 1e-14, "maxiter": 500})
    q0 = np.exp(start.x) / np.exp(start.x).sum()
    # stationarity p_i / q_i = lam + nu dc/dq_i (in log q to keep q > 0)
    lam0, nu0 = 1.0, 0.0

    def kkt(z):
        q = np.exp(z[:m])
        lam, nu = z[m], z[m + 1]
        return np.concatenate([p / q - lam - nu * grad(q), [q.sum() - 1, c(q)]])

    sol = optimize.root(kkt, np.concatenate([np.log(q0), [lam0, nu0]]), method="hybr",
                        options={"xtol": 1e-15})
    # "no good progress" at this xtol means the residual is at rounding level: check that
    assert np.max(np.abs(kkt(sol.x))) < 1e-11, sol.message
    q = np.exp(sol.x[:m])
    assert abs(q.sum() - 1) < 1e-13 and abs(c(q)) < 1e-13
    return q


def reference_llr(counts, elo0, elo1, model):
    n, a, p = _pdf(counts)
    if model == "logistic":
        ts = [1 / (1 + 10 ** (-e / 400)) for e in (elo0, elo1)]
    else:
        scale = 1.0 if len(counts) == 3 else math.sqrt(2.0)
        ts = [e / NT * scale for e in (elo0, elo1)]
    q0, q1 = (_constrained_mle(p, a, model, t) for t in ts)
    return n * float(p @ (np.log(q1) - np.log(q0)))


@pytest.mark.parametrize("counts, bounds, model, fishtest", PUBLISHED)
def test_llr_of_published_runs_matches_independent_reference_and_fishtest(counts, bounds, model,
                                                                          fishtest):
    got = gsprt_llr(counts, *bounds, elo_model=model)
    assert got == pytest.approx(reference_llr(counts, *bounds, model), abs=1e-9)
    assert got == pytest.approx(fishtest, abs=1e-9)


@pytest.mark.parametrize("counts, bounds, model", MORE)
def test_llr_matches_independent_reference(counts, bounds, model):
    got = gsprt_llr(counts, *bounds, elo_model=model)
    assert got == pytest.approx(reference_llr(counts, *bounds, model), abs=1e-9, rel=1e-12)


def test_llr_is_antisymmetric_in_the_bounds_and_american_spelling():
    c = [1187, 7410, 13475, 7378, 1164]
    assert gsprt_llr(c, 1, -3) == pytest.approx(-gsprt_llr(c, -3, 1), abs=1e-10)
    assert gsprt_llr(c, 0, 2, elo_model="normalized") == gsprt_llr(c, 0, 2,
                                                                   elo_model="normalised")


def test_llr_can_be_nan_when_a_hypothesis_is_unreachable():
    # 2000 logistic Elo is a score of 0.99999..., reachable; an astronomically large one is not
    assert math.isnan(gsprt_llr([3, 4, 5], 0, 1e6))


# --------------------------------------------------------------------------
# the decision
# --------------------------------------------------------------------------

def test_gsprt_decision_and_bounds():
    alpha = beta = 0.05
    r = sprt([10789, 19328, 33806, 19402, 10543], elo0=-3, elo1=1, alpha=alpha, beta=beta)
    assert isinstance(r, calipers.GSPRTResult)
    assert r.lower == pytest.approx(math.log(beta / (1 - alpha)))
    assert r.upper == pytest.approx(math.log((1 - beta) / alpha))
    assert r.decision == "continue" and r.elo_model == "logistic"
    assert r.llr == pytest.approx(2.1310678117940807, abs=1e-9)
    # a clear gain and a clear loss
    assert sprt([100, 400, 300], elo0=0, elo1=5, alpha=alpha, beta=beta).decision == "accept_h1"
    assert sprt([300, 400, 100], elo0=0, elo1=5, alpha=alpha, beta=beta).decision == "accept_h0"
    n = sprt([39, 2226, 31451, 2412, 40], elo0=0, elo1=2, elo_model="normalized",
             alpha=alpha, beta=beta)
    assert n.decision == "continue" and n.elo_model == "normalised"
    assert n.llr == pytest.approx(2.93690981720447, abs=1e-9)


def test_gsprt_error_rates_simulation():
    # 300 runs of up to 20,000 games under each hypothesis (draw ratio 0.4): the test stops
    # with the wrong decision at most at about alpha and beta (plus sampling noise).
    rng = np.random.default_rng(11)
    alpha = beta = 0.1
    elo0, elo1 = 0.0, 40.0
    wrong = {elo0: 0, elo1: 0}
    runs = 150
    for true in (elo0, elo1):
        s = 1 / (1 + 10 ** (-true / 400))
        pw, pd = s - 0.2, 0.4
        for _ in range(runs):
            games = rng.choice(3, size=20_000, p=[1 - pw - pd, pd, pw])
            counts = np.zeros(3, dtype=np.int64)
            for batch in np.split(games, 200):
                counts += np.bincount(batch, minlength=3)
                r = sprt(counts, elo0=elo0, elo1=elo1, alpha=alpha, beta=beta)
                if r.decision != "continue":
                    break
            wrong[true] += r.decision == ("accept_h1" if true == elo0 else "accept_h0")
    assert wrong[elo0] / runs < alpha + 0.06
    assert wrong[elo1] / runs < beta + 0.06


def test_bernoulli_sprt_unchanged():
    r = sprt([1, 1, 1, 1, 1, 1, 1, 0, 1], p0=0.5, p1=0.8, alpha=0.05, beta=0.2)
    assert isinstance(r, calipers.SPRTResult)
    assert (r.decision, r.n_used) == ("accept_h1", 6)


@pytest.mark.parametrize("args, kw, msg", [
    ([1, 2, 3], dict(elo0=0), "elo0 and elo1 must both"),
    ([1, 2, 3], dict(elo0=0, elo1=5, p1=0.6), "p0 and p1 are for Bernoulli"),
    ([1, 2, 3], dict(elo0=0, elo1=5, p0=0.4), "p0 and p1 are for Bernoulli"),
    ([1, 2], dict(elo0=0, elo1=5), "3 entries"),
    ([1, -2, 3], dict(elo0=0, elo1=5), "non-negative integer"),
    ([1, 2.5, 3], dict(elo0=0, elo1=5), "non-negative integer"),
    ([0, 0, 0], dict(elo0=0, elo1=5), "all be zero"),
    ([1, 2, 3], dict(elo0=5, elo1=5), "elo1 must differ"),
    ([1, 2, 3], dict(elo0=0, elo1=math.inf), "elo1 must be a finite"),
    ([1, 2, 3], dict(elo0=0, elo1=5, elo_model="bayes"), "elo_model must be"),
    ([1, 2, 3], dict(elo0=0, elo1=5, alpha=1.5), "alpha must be in"),
    ([1, 0, 1], dict(), "p1 is required"),
])
def test_gsprt_errors(args, kw, msg):
    with pytest.raises(ValueError, match=msg):
        sprt(args, **kw)


# --------------------------------------------------------------------------
# Elo from match results
# --------------------------------------------------------------------------

def test_match_elo_trinomial_by_exact_formulas():
    losses, draws, wins = 120, 300, 180
    r = match_elo([losses, draws, wins])
    n = losses + draws + wins
    s = Fraction(2 * wins + draws, 2 * n)
    var = Fraction(4 * wins + draws, 4 * n) - s * s
    assert r.score == float(s) and r.games == n
    assert r.sigma == pytest.approx(math.sqrt(var), rel=1e-14)
    se = math.sqrt(var / n)
    assert r.stderr == pytest.approx(se, rel=1e-14)
    assert r.elo == pytest.approx(-400 * math.log10(1 / float(s) - 1), rel=1e-13)
    z = stats.norm.ppf(0.975)
    elo = lambda x: -400 * math.log10(1 / x - 1)  # noqa: E731
    assert r.confidence_interval.low == pytest.approx(elo(float(s) - z * se), rel=1e-12)
    assert r.confidence_interval.high == pytest.approx(elo(float(s) + z * se), rel=1e-12)
    assert r.nelo == pytest.approx((float(s) - 0.5) / math.sqrt(var) * NT, rel=1e-13)
    assert r.nelo_interval.high - r.nelo == pytest.approx(z * NT / math.sqrt(n), rel=1e-12)
    assert r.los == pytest.approx(stats.norm.cdf((float(s) - 0.5) / se), rel=1e-12)


def test_match_elo_pentanomial_counts_pairs():
    # pair scores 0, 1/2, 1, 3/2, 2 with counts c: the per-game variance is half the variance
    # of the pair score, and games = 2 pairs
    c = [30, 200, 500, 250, 20]
    r = match_elo(c)
    scores = np.repeat([0, 0.5, 1, 1.5, 2], c)
    assert r.games == 2 * sum(c)
    assert r.score == pytest.approx(scores.mean() / 2, rel=1e-14)
    assert r.sigma == pytest.approx(math.sqrt(scores.var() / 2), rel=1e-13)
    assert r.stderr == pytest.approx(scores.std() / 2 / math.sqrt(len(scores)), rel=1e-13)
    # pairs that always split (LW or WL) are a perfectly even match with tiny variance
    even = match_elo([0, 0, 50, 0, 0])
    assert even.elo == 0 and even.sigma == 0 and math.isnan(even.nelo) and math.isnan(even.los)


def test_match_elo_pentanomial_differs_from_trinomial_when_pairs_correlate():
    # pairs mostly LL or WW: strongly correlated games; the pair variance is larger than the
    # trinomial one on the same games, and the interval is wider
    penta = [40, 0, 20, 0, 60]
    games_w = 2 * 60 + 20       # WW gives 2 wins, LW/WL one of each
    games_l = 2 * 40 + 20
    tri = match_elo([games_l, 0, games_w])
    pen = match_elo(penta)
    assert pen.score == pytest.approx(tri.score) and pen.elo == pytest.approx(tri.elo)
    # per-game variances: s (1 - s) for the games, half the pair-score variance for the pairs
    s = Fraction(games_w, 240)
    pair_mean = Fraction(20 + 2 * 60, 120)
    pair_var = Fraction(20 + 4 * 60, 120) - pair_mean**2
    ratio = math.sqrt((pair_var / 2) / (s * (1 - s)))
    assert ratio > 1.28
    assert pen.stderr / tri.stderr == pytest.approx(ratio, rel=1e-13)


def test_match_elo_all_wins_is_infinite_not_clamped():
    r = match_elo([0, 0, 10])
    assert r.elo == math.inf and r.score == 1.0


def test_match_elo_errors():
    with pytest.raises(ValueError, match="confidence_level"):
        match_elo([1, 2, 3], confidence_level=1.0)
    with pytest.raises(ValueError, match="3 entries"):
        match_elo([1, 2, 3, 4])


# --------------------------------------------------------------------------
# mergeable counts
# --------------------------------------------------------------------------

def test_state_update_merge_equals_counts():
    rng = np.random.default_rng(3)
    games = rng.choice([0.0, 0.5, 1.0], size=500)
    st = GameCountsState.init()
    a = st.update(games[:200])
    b = st.update(games[200:])
    m = a.merge(b)
    want = [int(np.sum(games == v)) for v in (0.0, 0.5, 1.0)]
    np.testing.assert_array_equal(np.asarray(m.counts), want)
    r1 = sprt(m, elo0=0, elo1=5, alpha=0.05, beta=0.05)
    r2 = sprt(want, elo0=0, elo1=5, alpha=0.05, beta=0.05)
    assert r1.llr == r2.llr and r1.decision == r2.decision
    assert m.compute().elo == match_elo(want).elo


def test_state_pentanomial_and_errors():
    st = GameCountsState.init("pentanomial")
    st = st.update([0, 0.5, 1, 1, 1.5, 2, 2])
    np.testing.assert_array_equal(np.asarray(st.counts), [1, 1, 2, 1, 2])
    assert st.kind == "pentanomial"
    with pytest.raises(ValueError, match="element 1 is 0.3"):
        GameCountsState.init().update([1, 0.3])
    with pytest.raises(ValueError, match="element 0 is 1.5"):
        GameCountsState.init().update([1.5])
    with pytest.raises(ValueError, match="cannot merge"):
        GameCountsState.init().merge(st)
    with pytest.raises(ValueError, match="kind must be"):
        GameCountsState.init("binomial")


def test_state_under_jit():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    st = GameCountsState.init("trinomial", xp=jnp)
    step = jax.jit(lambda s, x: s.update(x))
    s = step(st, jnp.asarray([0.0, 0.5, 1.0, 1.0, 0.7]))   # 0.7 is not a game score
    np.testing.assert_array_equal(np.asarray(s.counts), [1, 1, 2])
    assert int(s.invalid) == 1
    merged = jax.jit(lambda a, b: a.merge(b))(s, s)
    np.testing.assert_array_equal(np.asarray(merged.counts), [2, 2, 4])
    with pytest.raises(ValueError, match="invalid"):
        sprt(merged, elo0=0, elo1=5)
    ok = step(st, jnp.asarray([0.0, 0.5, 1.0, 1.0]))
    assert sprt(ok, elo0=0, elo1=5).llr == sprt([1, 1, 2], elo0=0, elo1=5).llr


def test_state_mask_and_integer_weights_as_repetition():
    rng = np.random.default_rng(5)
    games = rng.choice([0.0, 0.5, 1.0], size=60)
    w = rng.integers(0, 4, size=60)
    mask = rng.random(60) < 0.8
    st = GameCountsState.init().update(games, mask=mask, sample_weight=w)
    rep = np.repeat(games[mask], w[mask])
    np.testing.assert_array_equal(np.asarray(st.counts),
                                  [int(np.sum(rep == v)) for v in (0.0, 0.5, 1.0)])
    # a masked element is padding: any value, never invalid
    padded = GameCountsState.init().update([1.0, 7.0], mask=[True, False])
    np.testing.assert_array_equal(np.asarray(padded.counts), [0, 0, 1])
    with pytest.raises(ValueError, match="sample_weight must hold"):
        GameCountsState.init().update([1.0], sample_weight=[0.5])


def test_state_count_limit_checked_eagerly_and_flagged_under_jit():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    big = np.iinfo(np.int32).max - 2
    st = GameCountsState(jnp.asarray([0, 0, big], dtype=jnp.int32), jnp.asarray(0, jnp.int32))
    with pytest.raises(ValueError, match="counts would pass"):
        st.update(jnp.asarray([1.0]), sample_weight=jnp.asarray([5]))
    out = jax.jit(lambda s, x, w: s.update(x, sample_weight=w))(
        st, jnp.asarray([1.0]), jnp.asarray([5]))
    np.testing.assert_array_equal(np.asarray(out.counts), [0, 0, big])  # not wrapped
    assert int(out.invalid) == 1


@pytest.mark.parametrize("lib", ["array_api_strict", "torch"])
def test_state_on_other_namespaces(lib):
    mod = pytest.importorskip(lib)
    array_api_compat = pytest.importorskip("array_api_compat")
    xp = array_api_compat.array_namespace(mod.asarray([1.0]))
    st = GameCountsState.init("pentanomial", xp=xp).update(
        mod.asarray([0.0, 0.5, 1.0, 2.0, 2.0]), mask=mod.asarray([True, True, True, True, False]),
        sample_weight=mod.asarray([1, 2, 1, 3, 1]))
    np.testing.assert_array_equal(np.asarray(st.counts), [1, 2, 1, 0, 3])
    assert sprt(st, elo0=0, elo1=5).llr == sprt([1, 2, 1, 0, 3], elo0=0, elo1=5).llr


def test_pentanomial_stderr_of_a_published_run_is_below_its_trinomial_one():
    # the numbers quoted in docs/bootstrap.md (one fishtest run counted both ways)
    pen = match_elo([10789, 19328, 33806, 19402, 10543])
    tri = match_elo([65804, 56553, 65388])
    assert round(pen.stderr, 6) == 0.000938 and round(tri.stderr, 6) == 0.000965
