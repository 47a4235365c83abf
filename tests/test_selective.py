"""Selective prediction: risk-coverage curve, AURC, E-AURC, selective risk, coverage at risk.

References: enumeration of every order inside tie groups (exact fractions),
repetition for integer weights, the harmonic numbers as exact sums, and
torch-uncertainty 0.13's AURC formula reproduced below (tie-free data only,
since with ties its value depends on the row order).
"""

from __future__ import annotations

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers import UndefinedMetricWarning
from calipers._selective import _harmonic_diff
from conftest import close, to_np

# Handed case H29 (hallmark issue 63; torch-uncertainty 0.13 AURC / CovAtxRisk):
# inputs and expected values copied from the case file.
H29_CONF = [0.9, 0.9, 0.8, 0.8, 0.8, 0.6, 0.6, 0.3]
H29_LOSS = [0, 1, 0, 0, 1, 1, 0, 1]
H29 = {
    "aurc_tie_averaged": 0.4507936507936508,
    "aurc_group_step": 0.4446428571428571,
    "correct_first": {"geifman": 0.3431547619047619, "torch": 0.3564625850340136},
    "error_first": {"geifman": 0.5619047619047619, "torch": 0.5350340136054422},
    "range": (0.3431547619047619, 0.5619047619047619),
    "risk_at_0.5_tie_avg": 0.4166666666666667,
    "risk_at_0.5_group": (0.625, 0.4),
    "coverage_at_risk_0.4": 0.625,
    "curve": [(0.25, 0.5), (0.625, 0.4), (0.875, 0.42857142857142855), (1.0, 0.5)],
}


# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------

def geifman_per_order(loss_in_order, w=None):
    """(1/n) sum_k r(k/n) for one fixed order, exact fractions (weights: repetition)."""
    if w is not None:
        loss_in_order = [l for l, k in zip(loss_in_order, w) for _ in range(int(k))]
    n = len(loss_in_order)
    tot, cum = Fraction(0), Fraction(0)
    for k, l in enumerate(loss_in_order, start=1):
        cum += Fraction(l)
        tot += cum / k
    return tot / n


def tie_orders(conf, loss):
    """Every order of the rows consistent with decreasing confidence (ties permuted)."""
    groups = {}
    for c, l in zip(conf, loss):
        groups.setdefault(c, []).append(l)
    keys = sorted(groups, reverse=True)
    for perms in itertools.product(*[list(itertools.permutations(groups[k])) for k in keys]):
        yield [l for p in perms for l in p]


def brute_tie_average(conf, loss):
    vals = [geifman_per_order(o) for o in tie_orders(conf, loss)]
    return sum(vals) / len(vals), vals


def torch_uncertainty_aurc(conf, loss):
    """torch-uncertainty 0.13 ``AURC.compute`` reproduced: argsort descending, risk after
    rejecting k = 0..n-1 rows, trapezoid over rejection rates k/n, divided by 1 - 1/n."""
    order = np.argsort(-np.asarray(conf, dtype=float), kind="stable")
    e = np.asarray(loss, dtype=float)[order]
    n = e.size
    risk_kept = np.cumsum(e) / np.arange(1, n + 1)     # r(k/n), k = 1..n
    err = risk_kept[::-1]                               # after rejecting 0, 1, ..., n-1 rows
    rej = np.arange(n) / n
    area = float(np.sum((err[1:] + err[:-1]) / 2 * np.diff(rej)))
    return area / (1 - 1 / n)


# --------------------------------------------------------------------------
# handed case H29
# --------------------------------------------------------------------------

def test_H29_aurc_tie_average_and_step(backend):
    got = backend.call(calipers.aurc, H29_CONF, loss=H29_LOSS)
    close(got, H29["aurc_tie_averaged"], backend)
    got = backend.call(calipers.aurc, H29_CONF, loss=H29_LOSS, method="step")
    close(got, H29["aurc_group_step"], backend)


def test_H29_enumeration_of_all_24_orders():
    avg, vals = brute_tie_average(H29_CONF, H29_LOSS)
    assert len(vals) == 24
    assert float(avg) == pytest.approx(H29["aurc_tie_averaged"], abs=1e-15)
    assert float(min(vals)) == pytest.approx(H29["range"][0], abs=1e-15)
    assert float(max(vals)) == pytest.approx(H29["range"][1], abs=1e-15)
    assert float(calipers.aurc(H29_CONF, loss=H29_LOSS)) == pytest.approx(float(avg), abs=1e-15)


@pytest.mark.parametrize("order_name", ["correct_first", "error_first"])
def test_H29_input_order_changes_per_sample_values_not_calipers(order_name):
    # The two row orders the anchors were run on; torch-uncertainty's formula is
    # reproduced and gives the handed per-order values, calipers gives one value.
    conf = np.array(H29_CONF)
    loss = np.array(H29_LOSS)
    key = loss if order_name == "correct_first" else -loss
    order = np.lexsort((key, -conf))
    c, l = conf[order], loss[order]
    assert float(geifman_per_order(l.tolist())) == pytest.approx(H29[order_name]["geifman"],
                                                                 abs=1e-15)
    assert torch_uncertainty_aurc(c, l) == pytest.approx(H29[order_name]["torch"], abs=1e-15)
    assert float(calipers.aurc(c, loss=l)) == pytest.approx(H29["aurc_tie_averaged"], abs=1e-15)


def test_H29_curve(backend):
    cov, risk, thr = backend.call(calipers.risk_coverage_curve, H29_CONF, loss=H29_LOSS)
    cov, risk, thr = to_np(cov), to_np(risk), to_np(thr)
    if backend.compact_curves:
        close(np.stack([cov, risk], 1), H29["curve"], backend)
        close(thr, [0.9, 0.8, 0.6, 0.3], backend)
    else:  # static length n: each row carries its tie group's point
        assert cov.shape == (8,)
        pts = sorted(set(zip(np.round(cov, 6).tolist(), np.round(risk, 6).tolist())))
        np.testing.assert_allclose(pts, H29["curve"], rtol=1e-6)


def test_H29_selective_risk_and_coverage_at_risk(backend):
    p = backend.call(calipers.selective_risk, H29_CONF, loss=H29_LOSS, coverage=0.5)
    close([p.coverage, p.risk, p.threshold], [*H29["risk_at_0.5_group"], 0.8], backend)
    p = backend.call(calipers.selective_risk, H29_CONF, loss=H29_LOSS, coverage=0.5,
                     method="tie_average")
    close([p.coverage, p.risk], [0.5, H29["risk_at_0.5_tie_avg"]], backend)
    p = backend.call(calipers.coverage_at_risk, H29_CONF, loss=H29_LOSS, max_risk=0.4)
    close([p.coverage, p.risk, p.threshold], [H29["coverage_at_risk_0.4"], 0.4, 0.8], backend)


# --------------------------------------------------------------------------
# ties, weights, order: against enumeration
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(12))
def test_aurc_equals_average_over_tie_orders(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    conf = rng.integers(0, 3, n).astype(float) / 2
    loss = rng.integers(0, 2, n)
    avg, _ = brute_tie_average(conf.tolist(), loss.tolist())
    assert float(calipers.aurc(conf, loss=loss)) == pytest.approx(float(avg), abs=1e-14)


@pytest.mark.parametrize("seed", range(8))
def test_aurc_real_valued_loss_against_enumeration(seed):
    rng = np.random.default_rng(100 + seed)
    n = 6
    conf = rng.integers(0, 3, n).astype(float)
    loss = [Fraction(int(v), 4) for v in rng.integers(0, 9, n)]
    avg, _ = brute_tie_average(conf.tolist(), loss)
    got = calipers.aurc(conf, loss=np.array([float(v) for v in loss]))
    assert float(got) == pytest.approx(float(avg), abs=1e-14)


@pytest.mark.parametrize("seed", range(8))
def test_integer_weights_are_repetition(seed):
    rng = np.random.default_rng(200 + seed)
    n = 30
    conf = rng.integers(0, 6, n) / 5.0
    loss = rng.integers(0, 2, n)
    w = rng.integers(0, 4, n)
    w[0] = max(w[0], 1)
    rc, rl = np.repeat(conf, w), np.repeat(loss, w)
    for method in ("tie_average", "step"):
        a = calipers.aurc(conf, loss=loss, sample_weight=w, method=method)
        b = calipers.aurc(rc, loss=rl, method=method)
        assert float(a) == pytest.approx(float(b), abs=1e-13)
        e1 = calipers.excess_aurc(conf, loss=loss, sample_weight=w, method=method)
        e2 = calipers.excess_aurc(rc, loss=rl, method=method)
        assert float(e1) == pytest.approx(float(e2), abs=1e-13)
    # float weights equal to the integers: same value
    a = calipers.aurc(conf, loss=loss, sample_weight=w.astype(float))
    assert float(a) == pytest.approx(float(calipers.aurc(rc, loss=rl)), abs=1e-13)
    c1 = calipers.risk_coverage_curve(conf, loss=loss, sample_weight=w)
    c2 = calipers.risk_coverage_curve(rc, loss=rl)
    keep = w > 0
    # groups made only of zero-weight rows add a repeated point; compare on kept thresholds
    sel = np.isin(c1[2], np.unique(conf[keep]))
    for x, y in zip(c1, c2):
        np.testing.assert_allclose(x[sel], y, rtol=1e-13)


def test_weighted_aurc_continuous_in_weights():
    # Non-integer weights extend the harmonic numbers by digamma: the value is
    # continuous and lies between the values at the neighbouring integer weights.
    conf = np.array([0.9, 0.9, 0.5, 0.2])
    loss = np.array([0, 1, 1, 0])
    vals = [float(calipers.aurc(conf, loss=loss, sample_weight=np.array([1, 1, t, 1])))
            for t in (1.0, 1.0 + 1e-9, 1.5, 2.0)]
    assert abs(vals[1] - vals[0]) < 1e-8
    assert min(vals[0], vals[3]) <= vals[2] <= max(vals[0], vals[3])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 1), st.integers(1, 3)),
                min_size=1, max_size=25), st.randoms(use_true_random=False))
def test_row_order_never_matters(rows, rnd):
    conf, loss, w = (np.array(v) for v in zip(*rows))
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    for fn in (calipers.aurc, calipers.excess_aurc):
        a = fn(conf, loss=loss, sample_weight=w)
        b = fn(conf[perm], loss=loss[perm], sample_weight=w[perm])
        assert float(a) == pytest.approx(float(b), abs=1e-13)
    ea = float(calipers.excess_aurc(conf, loss=loss, sample_weight=w))
    assert ea >= -1e-13


def test_no_ties_equals_geifman_and_torch_uncertainty_relation():
    rng = np.random.default_rng(7)
    for n in (2, 5, 40, 333):
        conf = rng.permutation(n) / n
        loss = rng.integers(0, 2, n)
        order = np.argsort(-conf)
        want = float(geifman_per_order(loss[order].tolist()))
        got = float(calipers.aurc(conf, loss=loss))
        assert got == pytest.approx(want, abs=1e-14)
        # torch-uncertainty's value on tie-free data, from ours and the curve's ends
        _, risk, _ = calipers.risk_coverage_curve(conf, loss=loss)
        tu = (n * got - (risk[0] + risk[-1]) / 2) / (n - 1)
        assert torch_uncertainty_aurc(conf, loss) == pytest.approx(tu, abs=1e-13)


def test_y_true_y_pred_default_is_zero_one_error(backend):
    y = np.array([0, 1, 2, 1, 0, 2])
    yp = np.array([0, 2, 2, 1, 1, 2])
    conf = np.array([0.3, 0.9, 0.5, 0.5, 0.9, 0.1])
    got = backend.call(calipers.aurc, conf, y, yp)
    want = calipers.aurc(conf, loss=(y != yp).astype(int))
    close(got, float(want), backend)


# --------------------------------------------------------------------------
# selective risk, coverage at risk, E-AURC
# --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_selective_risk_tie_average_against_enumeration(seed):
    rng = np.random.default_rng(300 + seed)
    n = 7
    conf = rng.integers(0, 3, n).astype(float)
    loss = rng.integers(0, 2, n)
    orders = list(tie_orders(conf.tolist(), loss.tolist()))
    for k in range(1, n + 1):
        want = sum(Fraction(sum(o[:k]), k) for o in orders) / len(orders)
        p = calipers.selective_risk(conf, loss=loss, coverage=k / n, method="tie_average")
        assert float(p.risk) == pytest.approx(float(want), abs=1e-14)
        assert float(p.coverage) == pytest.approx(k / n)


@pytest.mark.parametrize("seed", range(6))
def test_group_rules_against_thresholds(seed):
    rng = np.random.default_rng(400 + seed)
    n = 20
    conf = rng.integers(0, 5, n).astype(float)
    loss = rng.integers(0, 2, n)
    thresholds = sorted(set(conf.tolist()), reverse=True)
    pts = [((conf >= t).mean(), loss[conf >= t].mean(), t) for t in thresholds]
    for c in (0.05, 0.3, 0.5, 0.77, 1.0):
        want = min((p for p in pts if p[0] >= c), key=lambda p: p[0])
        got = calipers.selective_risk(conf, loss=loss, coverage=c)
        np.testing.assert_allclose([got.coverage, got.risk, got.threshold], want, rtol=1e-14)
    for r in (0.0, 0.2, 0.45, 0.6, 1.0):
        ok = [p for p in pts if p[1] <= r]
        if not ok:
            with pytest.warns(UndefinedMetricWarning):
                got = calipers.coverage_at_risk(conf, loss=loss, max_risk=r)
            assert float(got.coverage) == 0 and math.isnan(got.risk) and got.threshold == np.inf
            continue
        want = max(ok, key=lambda p: p[0])
        got = calipers.coverage_at_risk(conf, loss=loss, max_risk=r)
        np.testing.assert_allclose([got.coverage, got.risk, got.threshold], want, rtol=1e-14)


def test_excess_aurc_zero_for_perfect_ranking_and_closed_form_limit():
    assert float(calipers.excess_aurc([3, 2, 1, 0], loss=[0, 0, 1, 1])) == pytest.approx(0, abs=1e-15)
    # Geifman, Uziel & El-Yaniv (2019): optimal AURC -> r + (1 - r) log(1 - r) as n grows.
    rng = np.random.default_rng(11)
    n = 200_000
    loss = (rng.random(n) < 0.3).astype(int)
    conf = rng.random(n)
    r = loss.mean()
    opt = float(calipers.aurc(conf, loss=loss) - calipers.excess_aurc(conf, loss=loss))
    assert opt == pytest.approx(r + (1 - r) * math.log(1 - r), abs=5 * math.log(n) / n)


def test_harmonic_diff_exact_and_large_arguments():
    pairs = [(0, 1), (0, 7), (3, 20), (16, 17), (100, 1000), (10**7, 10**7 + 1),
             (10**6, 10**6 + 37), (0, 0)]
    p = np.array([a for a, _ in pairs], dtype=float)
    q = np.array([b for _, b in pairs], dtype=float)
    got = _harmonic_diff(p, q, np)
    for (a, b), g in zip(pairs, got):
        want = float(sum(Fraction(1, k) for k in range(a + 1, b + 1)))
        assert g == pytest.approx(want, rel=1e-14, abs=1e-300)


def test_jit_backends_match_numpy(backend):
    rng = np.random.default_rng(5)
    n = 50
    conf = rng.integers(0, 8, n) / 8.0
    loss = rng.random(n).round(2)
    w = rng.integers(0, 3, n)
    for fn, kw in ((calipers.aurc, {}), (calipers.aurc, {"method": "step"}),
                   (calipers.excess_aurc, {})):
        want = fn(conf, loss=loss, sample_weight=w, **kw)
        close(backend.call(fn, conf, loss=loss, sample_weight=w, **kw), float(want), backend)
    want = calipers.selective_risk(conf, loss=loss, sample_weight=w, coverage=0.3)
    got = backend.call(calipers.selective_risk, conf, loss=loss, sample_weight=w, coverage=0.3)
    close(list(got), list(want), backend)


# --------------------------------------------------------------------------
# undefined and invalid input
# --------------------------------------------------------------------------

def test_zero_total_weight_is_nan_with_warning(backend):
    args = ([0.5, 0.2],)
    kw = dict(loss=np.array([1, 0]), sample_weight=np.array([0, 0]))
    if backend.jit:
        got = backend.call(calipers.aurc, *args, **kw)
        assert np.isnan(to_np(got))
        return
    with pytest.warns(UndefinedMetricWarning):
        got = backend.call(calipers.aurc, *args, **kw)
    assert np.isnan(to_np(got))


def test_jit_invalid_values_give_nan(backend):
    if not backend.jit:
        pytest.skip("jit only")
    got = backend.call(calipers.aurc, np.array([0.5, np.nan]), loss=np.array([1.0, 0.0]))
    assert np.isnan(to_np(got))


@pytest.mark.parametrize("call, match", [
    (lambda: calipers.aurc([0.1, 0.2], loss=[1]), "loss has 1 elements"),
    (lambda: calipers.aurc([0.1, np.nan], loss=[1, 0]), "confidence must be finite"),
    (lambda: calipers.aurc([0.1, 0.2], loss=[1, np.inf]), "loss must be finite"),
    (lambda: calipers.aurc([0.1, 0.2]), "give either loss"),
    (lambda: calipers.aurc([0.1, 0.2], [0, 1], [0, 1], loss=[0, 1]), "not both"),
    (lambda: calipers.aurc([], loss=[]), "empty"),
    (lambda: calipers.aurc([0.1, 0.2], loss=[0, 1], sample_weight=[1, -1]), "non-negative"),
    (lambda: calipers.aurc([0.1, 0.2], loss=[0, 1], method="mean"), "method must be"),
    (lambda: calipers.selective_risk([0.1], loss=[0], coverage=0), "coverage must be in"),
    (lambda: calipers.selective_risk([0.1], loss=[0], coverage=1.5), "coverage must be in"),
    (lambda: calipers.coverage_at_risk([0.1], loss=[0], max_risk=math.nan), "max_risk"),
    (lambda: calipers.aurc([[0.1]], loss=[[0]]), "1-D"),
])
def test_errors_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_no_warning_on_valid_input():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        calipers.aurc(H29_CONF, loss=H29_LOSS)
        calipers.risk_coverage_curve(H29_CONF, loss=H29_LOSS)
        calipers.selective_risk(H29_CONF, loss=H29_LOSS, coverage=0.9)
