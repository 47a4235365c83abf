"""Survival concordance: Harrell's C, Uno's C, cumulative/dynamic AUC(t).

References: pair enumeration with exact fractions, scikit-survival 0.28.0 and
lifelines 0.30.3 values on random data with tied times, tied risks and
censoring (copied into ``survival_anchor_values.py`` by ``survival_anchors.py``,
which ran in a separate environment), and the handed cases H25 and H26.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers import UndefinedMetricWarning
from conftest import close, load_case, to_np
from survival_anchor_values import CASES

# Handed case H25 (SurPyval#276, SauersML/gam#3538, lifelines#131): tied times.
H25 = dict(time=[1, 2, 2, 2, 3, 4, 4, 5], event=[1, 1, 1, 0, 0, 1, 0, 1],
           risk=[6, 5, 1, 3, 2, 2, 2, 0])
H25_EXPECTED = dict(harrell_c=0.7631578947368421, comparable_pairs=19.0,
                    concordant_plus_half_ties=14.5, concordant=14, discordant=4, tied_risk=1,
                    tied_time=3, wrong_event_event_tie_counted_half=0.75,
                    wrong_event_censor_tie_dropped=0.8125,
                    wrong_surpyval_event_censor_tie_half_when_discordant=0.7894736842105263)
# Handed case H26 (scikit-survival#498, tidymodels/censored#80, mlr#2017): direction.
H26 = dict(time=[3, 5, 5, 8, 10, 12], event=[1, 1, 0, 1, 0, 1],
           risk=[2.0, 1.5, 1.5, 0.7, 1.0, 0.2])
H26_EXPECTED = dict(c_index_risk_scores=0.8636363636363636,
                    c_index_if_risk_passed_as_survival_time=0.13636363636363635)


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------

def brute_harrell(event, time, risk, w=None, *, event_event_half=False, drop_event_censor=False):
    """Enumerate pairs with exact fractions. The keyword flags give the buggy rules of H25."""
    n = len(time)
    w = [1] * n if w is None else [int(v) for v in w]
    con = tie = dis = tt = Fraction(0)
    extra = Fraction(0)
    for i in range(n):
        if not event[i]:
            continue
        for j in range(n):
            if i == j:
                continue
            if time[i] < time[j]:
                pass
            elif time[i] == time[j] and not event[j]:
                if drop_event_censor:
                    continue
                tt += w[i] * w[j]
            elif time[i] == time[j] and event[j] and event_event_half and i < j:
                extra += w[i] * w[j]
                continue
            else:
                continue
            pw = Fraction(w[i] * w[j])
            if risk[i] > risk[j]:
                con += pw
            elif risk[i] == risk[j]:
                tie += pw
            else:
                dis += pw
    c = (con + tie / 2 + extra / 2) / (con + tie + dis + extra)
    return c, con, dis, tie, tt


def brute_dynamic_auc(event, time, risk, t, G):
    """Cases T <= t with an event (weight 1/G(T_i)), controls T > t; ties 1/2."""
    num = den = 0.0
    for i in range(len(time)):
        if not (event[i] and time[i] <= t):
            continue
        for j in range(len(time)):
            if time[j] > t:
                wi = 1.0 / G(time[i])
                den += wi
                num += wi * (1.0 if risk[i] > risk[j] else 0.5 if risk[i] == risk[j] else 0.0)
    return num / den


def km_censoring(event, time):
    """Kaplan-Meier of the censoring time, events leaving first at a tied time (a loop)."""
    ts = sorted(set(time))
    G, steps = 1.0, []
    for u in ts:
        at_risk = sum(1 for v in time if v >= u)
        d = sum(1 for v, e in zip(time, event) if v == u and e)
        c = sum(1 for v, e in zip(time, event) if v == u and not e)
        if c:
            G *= 1 - c / (at_risk - d)
        steps.append((u, G))

    def at(x):
        val = 1.0
        for u, g in steps:
            if u <= x:
                val = g
        return val
    return at


# --------------------------------------------------------------------------
# handed cases
# --------------------------------------------------------------------------

def test_H25_tied_times(backend):
    r = backend.call(calipers.concordance_index_censored, H25["event"], H25["time"], H25["risk"])
    close(r.cindex, H25_EXPECTED["harrell_c"], backend)
    assert [int(to_np(v)) for v in r[1:]] == [14, 4, 1, 3]
    comparable = int(to_np(r.concordant)) + int(to_np(r.discordant)) + int(to_np(r.tied_risk))
    assert comparable == H25_EXPECTED["comparable_pairs"]
    assert int(to_np(r.concordant)) + int(to_np(r.tied_risk)) / 2 == \
        H25_EXPECTED["concordant_plus_half_ties"]


def test_H25_the_buggy_rules_give_the_handed_wrong_values():
    # The reference enumerator reproduces the wrong values, so it can tell the rules apart.
    e, t, r = H25["event"], H25["time"], H25["risk"]
    assert float(brute_harrell(e, t, r)[0]) == pytest.approx(H25_EXPECTED["harrell_c"], abs=1e-15)
    got = brute_harrell(e, t, r, event_event_half=True)[0]
    assert float(got) == pytest.approx(H25_EXPECTED["wrong_event_event_tie_counted_half"])
    got = brute_harrell(e, t, r, drop_event_censor=True)[0]
    assert float(got) == pytest.approx(H25_EXPECTED["wrong_event_censor_tie_dropped"])
    c = calipers.concordance_index_censored(e, t, r).cindex
    for k in ("wrong_event_event_tie_counted_half", "wrong_event_censor_tie_dropped",
              "wrong_surpyval_event_censor_tie_half_when_discordant"):
        assert abs(c - H25_EXPECTED[k]) > 1e-3


def test_H26_direction(backend):
    r = backend.call(calipers.concordance_index_censored, H26["event"], H26["time"], H26["risk"])
    close(r.cindex, H26_EXPECTED["c_index_risk_scores"], backend)
    neg = -np.asarray(H26["risk"])
    r = backend.call(calipers.concordance_index_censored, H26["event"], H26["time"], neg)
    close(r.cindex, H26_EXPECTED["c_index_if_risk_passed_as_survival_time"], backend)


# --------------------------------------------------------------------------
# against enumeration
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(10))
def test_harrell_against_enumeration_with_weights(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    t = rng.integers(0, 6, n)
    e = rng.integers(0, 2, n)
    r = rng.integers(0, 4, n) * 0.5
    w = rng.integers(0, 4, n)
    for ww in (None, w):
        want = brute_harrell(e.tolist(), t.tolist(), r.tolist(), ww)
        if want[1] + want[2] + want[3] == 0:
            with pytest.warns(UndefinedMetricWarning):
                got = calipers.concordance_index_censored(e, t, r, sample_weight=ww)
            assert math.isnan(got.cindex)
        else:
            got = calipers.concordance_index_censored(e, t, r, sample_weight=ww)
            assert float(got.cindex) == pytest.approx(float(want[0]), abs=1e-14)
        assert [int(v) for v in got[1:]] == [int(v) for v in want[1:]]
        # float weights: same values as floats
    got = calipers.concordance_index_censored(e, t, r, sample_weight=w.astype(float))
    want = brute_harrell(e.tolist(), t.tolist(), r.tolist(), w)
    np.testing.assert_allclose([float(v) for v in got[1:]], [float(v) for v in want[1:]])


def test_integer_weights_are_repetition():
    rng = np.random.default_rng(3)
    n = 200
    t, e, r = rng.integers(0, 20, n), rng.integers(0, 2, n), rng.integers(0, 10, n)
    w = rng.integers(0, 4, n)
    a = calipers.concordance_index_censored(e, t, r, sample_weight=w)
    b = calipers.concordance_index_censored(np.repeat(e, w), np.repeat(t, w), np.repeat(r, w))
    assert a == b


def test_merge_count_matches_quadratic_count_at_a_few_thousand_rows():
    rng = np.random.default_rng(9)
    n = 3000
    t = rng.integers(0, 50, n)
    e = rng.random(n) < 0.5
    r = rng.integers(0, 30, n)
    got = calipers.concordance_index_censored(e, t, r)
    comp = e[:, None] & ((t[:, None] < t[None, :]) | ((t[:, None] == t[None, :]) & ~e[None, :]))
    con = int((comp & (r[:, None] > r[None, :])).sum())
    tie = int((comp & (r[:, None] == r[None, :])).sum())
    dis = int((comp & (r[:, None] < r[None, :])).sum())
    tt = int((e[:, None] & ~e[None, :] & (t[:, None] == t[None, :])).sum())
    assert [int(v) for v in got[1:]] == [con, dis, tie, tt]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.integers(-2, 2)), min_size=1,
                max_size=30), st.randoms(use_true_random=False))
def test_flip_and_row_order(rows, rnd):
    t, e, r = (np.array(v) for v in zip(*rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        a = calipers.concordance_index_censored(e, t, r * 1.0)
        b = calipers.concordance_index_censored(e, t, -r * 1.0)
        perm = list(range(len(rows)))
        rnd.shuffle(perm)
        c = calipers.concordance_index_censored(e[perm], t[perm], r[perm] * 1.0)
    if not math.isnan(a.cindex):
        assert float(b.cindex) == pytest.approx(1 - float(a.cindex), abs=1e-14)
    assert a[1:] == c[1:]
    assert (a.concordant, a.discordant) == (b.discordant, b.concordant)


# --------------------------------------------------------------------------
# anchors: scikit-survival and lifelines on the same data
# --------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=lambda c: f"seed{c['seed']}")
def test_anchor_harrell_and_lifelines(case):
    got = calipers.concordance_index_censored(case["event"], case["time"], case["risk"])
    assert float(got.cindex) == pytest.approx(case["harrell"][0], abs=1e-14)
    assert float(got.cindex) == pytest.approx(case["lifelines"], abs=1e-14)
    assert [int(v) for v in got[1:]] == case["harrell"][1:]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"seed{c['seed']}")
def test_anchor_uno(case):
    for key, val in case["uno"].items():
        tau = None if key.endswith("None") else float(key.split("_")[-1])
        kw = dict(train_event=case["train_event"], train_time=case["train_time"]) \
            if key.startswith("train") else {}
        got = calipers.concordance_index_ipcw(case["event"], case["time"], case["risk"],
                                              tau=tau, **kw)
        assert float(got.cindex) == pytest.approx(val[0], abs=1e-12), key
        assert [int(v) for v in got[1:]] == val[1:]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"seed{c['seed']}")
def test_anchor_cumulative_dynamic_auc(case):
    cd = case["cd"]
    got = calipers.cumulative_dynamic_auc(case["event"], case["time"], case["risk"], cd["times"])
    np.testing.assert_allclose(got.auc, cd["auc"], rtol=1e-12)
    assert float(got.mean_auc) == pytest.approx(cd["mean"], abs=1e-12)
    got = calipers.cumulative_dynamic_auc(case["event"], case["time"], case["risk"], cd["times"],
                                          train_event=case["train_event"],
                                          train_time=case["train_time"])
    np.testing.assert_allclose(got.auc, cd["train_auc"], rtol=1e-12)
    assert float(got.mean_auc) == pytest.approx(cd["train_mean"], abs=1e-12)


def test_dynamic_auc_against_pair_enumeration():
    rng = np.random.default_rng(21)
    n = 40
    t = rng.integers(1, 9, n).astype(float)
    e = rng.random(n) < 0.6
    t[-1], e[-1] = 12.0, False
    r = rng.integers(0, 5, n).astype(float)
    G = km_censoring(e.tolist(), t.tolist())
    times = [2.0, 4.0, 6.5]
    got = calipers.cumulative_dynamic_auc(e, t, r, times)
    want = [brute_dynamic_auc(e, t, r, u, G) for u in times]
    np.testing.assert_allclose(got.auc, want, rtol=1e-12)
    # a risk per time: column k used at times[k]
    r2 = np.stack([r, -r, r], 1)
    got2 = calipers.cumulative_dynamic_auc(e, t, r2, times)
    np.testing.assert_allclose(got2.auc, [want[0], 1 - want[1], want[2]], rtol=1e-12)


# --------------------------------------------------------------------------
# backends
# --------------------------------------------------------------------------

def test_backends_match_anchor(backend):
    # the smallest anchor case and two AUC times: JAX compiles each call (seconds here)
    case = CASES[0]
    e, t, r = (np.asarray(case[k]) for k in ("event", "time", "risk"))
    got = backend.call(calipers.concordance_index_censored, e, t, r)
    close(got.cindex, case["harrell"][0], backend)
    assert [int(to_np(v)) for v in got[1:]] == case["harrell"][1:]
    got = backend.call(calipers.concordance_index_ipcw, e, t, r, tau=5.0,
                       train_event=np.asarray(case["train_event"]),
                       train_time=np.asarray(case["train_time"]))
    close(got.cindex, case["uno"]["train_5.0"][0], backend)
    got = backend.call(calipers.cumulative_dynamic_auc, e, t, r,
                       np.asarray(case["cd"]["times"][:2]))
    close(got.auc, case["cd"]["auc"][:2], backend)


def test_jit_invalid_values_give_nan(backend):
    if not backend.jit:
        pytest.skip("jit only")
    got = backend.call(calipers.concordance_index_censored, np.array([1, 2, 0]),
                       np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3]))
    assert np.isnan(to_np(got.cindex))
    got = backend.call(calipers.concordance_index_censored, np.array([1, 1, 0]),
                       np.array([1.0, np.nan, 3.0]), np.array([0.1, 0.2, 0.3]))
    assert np.isnan(to_np(got.cindex))


def test_no_comparable_pair_is_nan_with_warning(backend):
    args = (np.array([0, 0, 1]), np.array([1.0, 2.0, 3.0]), np.array([0.1, 0.2, 0.3]))
    if backend.jit:
        pytest.skip("eager warnings only; NaN under jit is tested above")
    with pytest.warns(UndefinedMetricWarning, match="comparable"):
        got = backend.call(calipers.concordance_index_censored, *args)
    assert np.isnan(to_np(got.cindex))


def test_too_many_rows_for_32_bit_keys():
    import jax
    import jax.numpy as jnp
    with jax.enable_x64(False):
        n = 50_000
        with pytest.raises(ValueError, match="jax_enable_x64"):
            calipers.concordance_index_censored(jnp.ones(n, dtype=jnp.int32),
                                                jnp.arange(n, dtype=jnp.float32),
                                                jnp.zeros(n, dtype=jnp.float32))


@pytest.mark.parametrize("call, match", [
    (lambda: calipers.concordance_index_censored([1, 2], [1, 2], [0, 1]),
     "event must be 0/1 or boolean"),
    (lambda: calipers.concordance_index_censored([1, 0], [1, np.nan], [0, 1]), "time must be finite"),
    (lambda: calipers.concordance_index_censored([1, 0], [1, 2], [0, np.inf]), "risk must be finite"),
    (lambda: calipers.concordance_index_censored([1, 0], [1, 2], [0]), "risk has 1"),
    (lambda: calipers.concordance_index_censored([], [], []), "empty"),
    (lambda: calipers.concordance_index_censored([1, 0], [1, 2], [0, 1], sample_weight=[1, -1]),
     "non-negative"),
    (lambda: calipers.concordance_index_ipcw([1, 0], [1, 2], [0, 1], train_time=[1, 2]),
     "both train_event"),
    (lambda: calipers.concordance_index_ipcw([1, 1], [1, 5], [0, 1], train_event=[0, 1],
                                             train_time=[1, 2]), "after the last training"),
    (lambda: calipers.cumulative_dynamic_auc([1, 1, 0], [1, 2, 3], [0, 1, 2], [3]),
     "within"),
    (lambda: calipers.cumulative_dynamic_auc([1, 1, 0], [1, 2, 3], [0, 1, 2], [2, 1.5]),
     "strictly increasing"),
    (lambda: calipers.cumulative_dynamic_auc([1, 1, 0], [1, 2, 3], np.zeros((3, 2)), [1.5]),
     "columns"),
])
def test_errors_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_warning_points_at_the_caller():
    with pytest.warns(UndefinedMetricWarning) as rec:
        calipers.concordance_index_censored([0, 0], [1, 2], [0, 1])
    assert rec[0].filename == __file__
    with pytest.warns(UndefinedMetricWarning) as rec:
        calipers.cumulative_dynamic_auc([0, 0, 1], [1, 2, 3], [0, 1, 2], [1.5])
    assert rec[0].filename == __file__


def _unused(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_jit_merge_count_many_levels_matches_numpy():
    # 9 levels, n not a power of two, ties in time and risk, integer weights
    import jax
    rng = np.random.default_rng(17)
    n = 301
    t = rng.integers(0, 15, n).astype(float)
    e = rng.integers(0, 2, n)
    r = rng.integers(0, 12, n).astype(float)
    w = rng.integers(0, 3, n)
    want = calipers.concordance_index_censored(e, t, r, sample_weight=w)
    got = jax.jit(lambda *a: calipers.concordance_index_censored(
        *a[:3], sample_weight=a[3]))(*(jax.numpy.asarray(x) for x in (e, t, r, w)))
    assert float(got.cindex) == pytest.approx(float(want.cindex), abs=1e-13)
    assert [int(v) for v in got[1:]] == [int(v) for v in want[1:]]


def test_single_row():
    with pytest.warns(UndefinedMetricWarning):
        got = calipers.concordance_index_censored([1], [2.0], [0.3])
    assert math.isnan(got.cindex) and got[1:] == (0, 0, 0, 0)
    import array_api_strict as xs
    with pytest.warns(UndefinedMetricWarning):
        got = calipers.concordance_index_censored(xs.asarray([1]), xs.asarray([2.0]),
                                                  xs.asarray([0.3]))
    assert math.isnan(float(got.cindex))


@pytest.mark.parametrize("n", [33, 130, 257])
def test_numpy_kernel_levels_against_enumeration_and_generic_kernel(n):
    # the NumPy pair counting (dense 32-row blocks, then binary-search merge levels) against
    # pair enumeration, with unit, integer and float weights, and against the generic
    # array-API kernel (array-api-strict) for Uno's float weights
    import array_api_strict as xps
    rng = np.random.default_rng(n)
    t = rng.integers(0, 9, n).astype(float)
    e = rng.integers(0, 2, n)
    r = rng.integers(0, 6, n) * 0.5
    w = rng.integers(0, 4, n)
    for ww in (None, w, w.astype(float)):
        got = calipers.concordance_index_censored(e, t, r, sample_weight=ww)
        want = brute_harrell(e.tolist(), t.tolist(), r.tolist(), None if ww is None else w)
        assert float(got.cindex) == pytest.approx(float(want[0]), abs=1e-13)
        np.testing.assert_allclose([float(v) for v in got[1:]], [float(v) for v in want[1:]],
                                   rtol=1e-13)
    wf = w + 0.25
    a = calipers.concordance_index_censored(e, t, r, sample_weight=wf)
    b = calipers.concordance_index_censored(*(xps.asarray(x) for x in (e, t, r)),
                                            sample_weight=xps.asarray(wf))
    np.testing.assert_allclose([float(v) for v in a], [float(np.asarray(v)) for v in b],
                               rtol=1e-13)
    e[t == t.max()] = 1  # G > 0 at every event time
    for tau in (None, 6.0):
        a = calipers.concordance_index_ipcw(e, t, r, tau=tau)
        b = calipers.concordance_index_ipcw(*(xps.asarray(x) for x in (e, t, r)), tau=tau)
        assert float(a.cindex) == pytest.approx(float(b.cindex), abs=1e-13)
        assert [int(v) for v in a[1:]] == [int(np.asarray(v)) for v in b[1:]]


# --------------------------------------------------------------------------
# H34: the 32-bit key limit is the one the message and the docs state
# --------------------------------------------------------------------------

def test_H34_32_bit_limit_is_the_stated_one():
    import jax
    import jax.numpy as jnp
    case = load_case("H34")
    assert "46340 accepted" in case["expected"]["C"]
    with jax.enable_x64(False):
        n = 46340
        t = jnp.arange(1, n + 1, dtype=jnp.float32)
        got = calipers.concordance_index_censored(jnp.ones(n, dtype=jnp.int32), t, -t)
        assert int(got.concordant) == n * (n - 1) // 2 and float(got.cindex) == 1.0
        t = jnp.arange(1, n + 2, dtype=jnp.float32)
        with pytest.raises(ValueError, match=r"46341 rows .*at most 46340 rows.*jax_enable_x64"):
            calipers.concordance_index_censored(jnp.ones(n + 1, dtype=jnp.int32), t, -t)


# --------------------------------------------------------------------------
# H35: concordance of a perfect (reversed) ranking is exactly 1 (0), never outside [0, 1]
# --------------------------------------------------------------------------

def test_H35_perfect_and_reversed_rankings(backend):
    case = load_case("H35")
    want = case["expected"]
    n = 100
    e, t = np.ones(n, dtype=np.int64), np.arange(1, n + 1, dtype=float)
    got = backend.call(calipers.concordance_index_censored, e, t, t[::-1].copy())
    assert float(to_np(got.cindex)) == want["A"]
    for key in ("B", "C"):
        d = case["inputs"][key]
        args = [np.asarray(d[k], dtype=float if k != "event" else np.int64)
                for k in ("event", "time", "risk")]
        got = backend.call(calipers.concordance_index_ipcw, *args, tau=float(d["tau"]))
        assert float(to_np(got.cindex)) == want[key], key
        flipped = backend.call(calipers.concordance_index_ipcw, args[0], args[1], -args[2],
                               tau=float(d["tau"]))
        assert float(to_np(flipped.cindex)) == 1.0 - want[key], key


@pytest.mark.parametrize("seed", range(10))
def test_H35_weighted_concordance_stays_in_the_unit_interval(seed):
    # random censoring (IPCW weights far from round numbers), float sample weights: any
    # ranking gives a value in [0, 1]; a perfect ranking 1 and a reversed one 0, exactly for
    # pair counts (Harrell's C without float weights), within rounding for weighted sums
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    t = rng.permutation(n).astype(float) + 1.0
    e = (rng.random(n) < 0.7).astype(np.int64)
    e[np.argmin(t)] = 1
    e[np.argmax(t)] = 0                 # G stays positive before the last time
    w = rng.random(n) + 0.1
    times = np.quantile(t, [0.3, 0.6])
    for risk, want in ((-t, 1.0), (t, 0.0), (rng.normal(size=n), None)):
        values = [calipers.concordance_index_censored(e, t, risk).cindex,
                  calipers.concordance_index_censored(e, t, risk, sample_weight=w).cindex,
                  calipers.concordance_index_ipcw(e, t, risk).cindex,
                  calipers.concordance_index_ipcw(e, t, risk, tau=float(np.median(t))).cindex,
                  *calipers.cumulative_dynamic_auc(e, t, risk, times).auc.tolist(),
                  calipers.cumulative_dynamic_auc(e, t, risk, times).mean_auc]
        for i, v in enumerate(values):
            assert 0.0 <= float(v) <= 1.0
            if want is not None:
                assert float(v) == want if i == 0 else abs(float(v) - want) <= 1e-14


# --------------------------------------------------------------------------
# event is a 0/1 indicator: one label layer, messages in the family's terms
# --------------------------------------------------------------------------

@pytest.mark.parametrize("event, shown", [
    ([-1, 1, 1, -1], "element 0 is -1"),          # {-1, 1} is not an indicator coding
    ([0, 1, 2, 1], "element 2 is 2"),
    ([0, 1, 0.5, 1], "element 2 is 0.5"),
    (np.array([1, None, 0, 1], dtype=object), "element 1 is None"),
    (np.array(["e", "c", "e", "c"]), "element 0 is 'e'"),
])
@pytest.mark.parametrize("fn", ["concordance_index_censored", "concordance_index_ipcw",
                                "cumulative_dynamic_auc"])
def test_event_outside_0_1_raises_in_the_survival_terms(event, shown, fn):
    t, r = [1.0, 2.0, 3.0, 4.0], [0.4, 0.3, 0.2, 0.1]
    args = (event, t, r, [2.0]) if fn == "cumulative_dynamic_auc" else (event, t, r)
    with pytest.raises(ValueError) as err:
        getattr(calipers, fn)(*args)
    msg = str(err.value)
    assert msg.startswith("event must be 0/1 or boolean (1 = event observed, 0 = censored)")
    assert shown in msg
    assert "pos_label" not in msg and "multiclass" not in msg


def test_train_event_is_named_and_indicator_codings_are_accepted():
    t, r = [1.0, 2.0, 3.0, 4.0], [0.4, 0.3, 0.2, 0.1]
    with pytest.raises(ValueError, match="train_event must be 0/1 or boolean.*element 0 is -1"):
        calipers.concordance_index_ipcw([1, 0, 1, 0], t, r, train_event=[-1, 1, 1, 1],
                                        train_time=[1.0, 2.0, 3.0, 4.0])
    want = calipers.concordance_index_censored([1, 0, 1, 0], t, r).cindex
    for event in ([True, False, True, False], [1.0, 0.0, 1.0, 0.0],
                  np.array([1, 0, True, False], dtype=object)):
        assert calipers.concordance_index_censored(event, t, r).cindex == want


def test_event_outside_0_1_is_nan_under_jit():
    import jax
    import jax.numpy as jnp
    f = jax.jit(calipers.concordance_index_censored)
    got = f(jnp.asarray([-1, 1, 1, -1]), jnp.asarray([1.0, 2.0, 3.0, 4.0]),
            jnp.asarray([0.4, 0.3, 0.2, 0.1]))
    assert np.isnan(float(got.cindex))


def test_H34_integer_weight_pair_counts_have_a_checked_limit():
    # pair (i, j) counts w_i * w_j in integers: exact on NumPy past int64, a stated limit
    # (sum(w * event) * sum(w) <= the count dtype's maximum) elsewhere
    import jax
    import jax.numpy as jnp
    e, t = np.ones(3, dtype=np.int64), np.array([1.0, 2.0, 3.0])
    big = np.array([2**31, 2**31 - 1, 1])
    got = calipers.concordance_index_censored(e, t, -t, sample_weight=big)
    assert int(got.concordant) == 2**31 * (2**31 - 1) + 2**31 + (2**31 - 1)
    with jax.enable_x64(False):
        n = 1000
        tj = jnp.arange(1, n + 1, dtype=jnp.float32)
        ej = jnp.ones(n, dtype=jnp.int32)
        w = np.ones(n, dtype=np.int32)
        w[:10] = 40                                      # sum 1390: 1390**2 < 2**31 - 1
        got = calipers.concordance_index_censored(ej, tj, -tj, sample_weight=jnp.asarray(w))
        want = (int(w.sum()) ** 2 - int((w.astype(np.int64) ** 2).sum())) // 2
        assert int(got.concordant) == want
        heavy = jnp.full(n, 100, dtype=jnp.int32)        # 10**5 * 10**5: the counts would wrap
        with pytest.raises(ValueError, match=r"2\*\*31 - 1 = 2147483647"):
            calipers.concordance_index_censored(ej, tj, -tj, sample_weight=heavy)
        got = jax.jit(calipers.concordance_index_censored)(ej, tj, -tj, sample_weight=heavy)
        assert np.isnan(float(got.cindex))
