"""Language-model metrics against exact integer binomials, direct sums and hand values."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from conftest import HANDED_CASES, to_np

CASES = HANDED_CASES


def exact_pass_at_k(n, c, k):
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


# --------------------------------------------------------------------------
# pass@k
# --------------------------------------------------------------------------

def test_pass_at_k_spec_worked_values(backend):
    # SPEC: n=10, c=3: pass@1 = 0.3, pass@5 = 1 - 21/252
    got = backend.call(calipers.pass_at_k, [10, 10], [3, 3], [1, 5], max_correct=3)
    np.testing.assert_allclose(to_np(got), [0.3, 1 - 21 / 252], rtol=backend.rtol())


def test_H13_pass_at_k_handed_case(backend):
    case = CASES["H13"]
    n, c, k = (np.array(col) for col in zip(*case["inputs"]["n_c_k"]))
    got = to_np(backend.call(calipers.pass_at_k, n, c, k, max_correct=int(c.max())))
    tol = case["tolerance"] if backend.x64 else 1e-5
    np.testing.assert_allclose(got, case["expected"], atol=tol, rtol=0)
    # exact integer-binomial reference
    exact = [float(exact_pass_at_k(*row)) for row in case["inputs"]["n_c_k"]]
    np.testing.assert_allclose(got, exact, rtol=backend.rtol() * 100)
    # (4,1,4) is exactly 1 (not 1-(3/4)^4) and c=1 gives k/n
    assert got[0] == 1.0 and got[4] == 1.0


def test_H13_n_below_k_is_invalid(backend):
    # (2, 0, 5) and (3, 1, 5): n < k. A published shortcut returns 1.0 for (2, 0, 5).
    n, c, k = np.array([2, 3, 10]), np.array([0, 1, 3]), 5
    if backend.eager_checks:
        with pytest.raises(ValueError, match="n must be >= k.*problem 0 has n=2, c=0, k=5"):
            backend.call(calipers.pass_at_k, n, c, k, max_correct=3)
    else:
        got = to_np(backend.call(calipers.pass_at_k, n, c, np.array(k), max_correct=3))
        assert np.isnan(got[0]) and np.isnan(got[1])
        np.testing.assert_allclose(got[2], 1 - 21 / 252, rtol=backend.rtol())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 60), st.integers(0, 60), st.integers(1, 60)),
                min_size=1, max_size=8))
def test_pass_at_k_matches_exact_binomials(rows):
    rows = [(n, min(c, n), min(k, n)) for n, c, k in rows]
    n, c, k = (np.array(col) for col in zip(*rows))
    got = calipers.pass_at_k(n, c, k)
    want = [float(exact_pass_at_k(*r)) for r in rows]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_pass_at_k_large_n_no_overflow():
    # naive float binomials give NaN here (H13); the product stays accurate
    got = calipers.pass_at_k(2000, 10, 1000)
    assert got == pytest.approx(float(exact_pass_at_k(2000, 10, 1000)), rel=1e-12)
    assert calipers.pass_at_k(5, 0, 3) == 0.0


@pytest.mark.parametrize("args, kw, match", [
    (([3], [4], 1), {}, "c must be <= n"),
    (([3], [-1], 1), {}, "c must be >= 0"),
    (([3], [1], 0), {}, "k must be >= 1"),
    (([3.5], [1], 1), {}, "n must hold whole numbers"),
    (([3], [True], 1), {}, "c must be integers"),
    (([3], [2], 1), {"max_correct": 1}, "c exceeds max_correct=1"),
])
def test_pass_at_k_errors(args, kw, match):
    with pytest.raises(ValueError, match=match):
        calipers.pass_at_k(*args, **kw)


def test_pass_at_k_under_jit_needs_max_correct():
    import jax
    with pytest.raises(ValueError, match="max_correct"):
        jax.jit(lambda n, c: calipers.pass_at_k(n, c, 1))(np.array([3]), np.array([1]))


# --------------------------------------------------------------------------
# perplexity, bits per byte / character
# --------------------------------------------------------------------------

def test_perplexity_spec_worked_value(backend):
    # SPEC: three tokens each with probability 1/2 -> perplexity 2
    got = backend.call(calipers.perplexity, np.log(np.full(3, 0.5)))
    np.testing.assert_allclose(to_np(got), 2.0, rtol=backend.rtol())


def test_perplexity_per_sequence_and_corpus_direct_sums(backend):
    rng = np.random.default_rng(3)
    lp = -rng.exponential(size=13)
    ids = rng.integers(0, 4, 13)
    ids[:4] = [0, 1, 2, 3]
    got = backend.call(calipers.perplexity, lp, segment_ids=ids, num_segments=4)
    per = [math.exp(-sum(lp[ids == s]) / sum(ids == s)) for s in range(4)]
    corpus = math.exp(-sum(lp) / 13)          # token weighted, not the mean of per-sequence values
    np.testing.assert_allclose(to_np(got.per_sequence), per, rtol=backend.rtol() * 10)
    np.testing.assert_allclose(to_np(got.corpus), corpus, rtol=backend.rtol() * 10)
    np.testing.assert_allclose(to_np(got.num_tokens), [sum(ids == s) for s in range(4)])
    assert not np.isclose(corpus, np.mean(per))


def test_perplexity_2d_with_mask_equals_segments(backend):
    lp = np.array([[-1.0, -2.0, np.nan], [-0.5, -0.25, -0.125]])
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    got = backend.call(calipers.perplexity, lp, mask=mask)
    np.testing.assert_allclose(to_np(got.per_sequence), [math.exp(1.5), math.exp(0.875 / 3)],
                               rtol=backend.rtol())
    np.testing.assert_allclose(to_np(got.corpus), math.exp(3.875 / 5), rtol=backend.rtol())


def test_perplexity_empty_segment_is_undefined():
    with pytest.warns(calipers.UndefinedMetricWarning, match="1 sequence"):
        got = calipers.perplexity([-1.0, -1.0], segment_ids=[0, 2])
    assert np.isnan(got.per_sequence[1]) and got.corpus == pytest.approx(math.e)


def test_bits_per_byte_and_character(backend):
    lp = np.array([-1.0, -2.0, -0.5])
    got = backend.call(calipers.bits_per_byte, lp, np.array([4, 6]))
    np.testing.assert_allclose(to_np(got), 3.5 / (math.log(2) * 10), rtol=backend.rtol())
    got = backend.call(calipers.bits_per_character, lp, np.array(7))
    np.testing.assert_allclose(to_np(got), 3.5 / (math.log(2) * 7), rtol=backend.rtol())


def test_language_invalid_is_nan_under_jit(backend):
    if backend.eager_checks:
        pytest.skip("eager backends raise; see the error tests")
    assert np.isnan(to_np(backend.call(calipers.perplexity, np.array([-1.0, 0.5]))))
    assert np.isnan(to_np(backend.call(calipers.bits_per_byte, np.array([-1.0]), np.array(0))))
    got = backend.call(calipers.perplexity, np.array([-1.0, -1.0]), segment_ids=np.array([0, 5]),
                       num_segments=2)
    assert np.isnan(to_np(got.corpus))


@pytest.mark.parametrize("call, match", [
    (lambda: calipers.perplexity([]), "empty"),
    (lambda: calipers.perplexity([-1.0, 0.1]), r"<= 0, natural log.*element 1"),
    (lambda: calipers.perplexity([-1.0, np.nan]), "element 1 is nan"),
    (lambda: calipers.perplexity(np.zeros((2, 2, 2))), "1-D"),
    (lambda: calipers.perplexity([-1.0], mask=[2]), "mask must contain only 0/1"),
    (lambda: calipers.perplexity([-1.0], mask=[1, 1]), "mask has shape"),
    (lambda: calipers.perplexity([-1.0], segment_ids=[-1]), "segment_ids must be in"),
    (lambda: calipers.perplexity([-1.0], segment_ids=[0, 1]), "segment_ids has 2 elements"),
    (lambda: calipers.perplexity([-1.0], segment_ids=[0.5]), "whole numbers"),
    (lambda: calipers.perplexity(np.zeros((2, 2)) - 1, segment_ids=[0, 1]), "not both"),
    (lambda: calipers.bits_per_byte([-1.0], 0), "num_bytes must be non-negative with a positive"),
    (lambda: calipers.bits_per_character([-1.0], [3, -1]), "num_characters"),
])
def test_perplexity_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------
# accuracy with error
# --------------------------------------------------------------------------

def _wilson(k, n, z):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_accuracy_with_error(backend):
    correct = np.array([1, 1, 0, 1, 1, 0, 1, 1, 1, 0])
    got = to_np(backend.call(calipers.accuracy_with_error, correct))
    lo, hi = _wilson(7, 10, 1.959963984540054)
    want = [0.7, math.sqrt(0.7 * 0.3 / 10), lo, hi]
    np.testing.assert_allclose(got[:4], want, rtol=backend.rtol() * 10)
    assert got[4] == 10


def test_accuracy_with_error_against_statsmodels_formula_extremes():
    # p = 1: standard error 0, Wilson interval still non-degenerate, inside [0, 1]
    r = calipers.accuracy_with_error([1, 1, 1, 1], confidence_level=0.9)
    assert r.accuracy == 1.0 and r.standard_error == 0.0
    lo, hi = _wilson(4, 4, 1.6448536269514722)
    assert r.confidence_interval.low == pytest.approx(lo, rel=1e-12) and r.confidence_interval.high == pytest.approx(hi, rel=1e-12)
    assert 0 < r.confidence_interval.low < 1 and r.confidence_interval.high == pytest.approx(1.0)
    with pytest.raises(ValueError, match="confidence_level"):
        calipers.accuracy_with_error([1], confidence_level=1.0)
    with pytest.raises(ValueError, match="correct must contain only 0 and 1"):
        calipers.accuracy_with_error([1, 2])
    with pytest.raises(ValueError, match="empty"):
        calipers.accuracy_with_error([])


# --------------------------------------------------------------------------
# multiple choice
# --------------------------------------------------------------------------

LL = np.array([[-1.0, -1.0, -3.0],      # tie between 0 and 1; correct 0
               [-2.0, -1.0, -1.5],      # correct 1
               [-4.0, -2.0, -3.0]])     # correct 2: wrong raw, right when normalised
Y = np.array([0, 1, 2])
LEN = np.array([[1.0, 2.0, 3.0], [2.0, 1.0, 1.0], [1.0, 1.0, 10.0]])


def test_multiple_choice_raw_normalised_and_ties(backend):
    got = backend.call(calipers.multiple_choice_accuracy, LL, Y, choice_lengths=LEN)
    # raw: q0 tie of 2 -> 1/2, q1 right, q2 wrong; normalised: [-1,-.5,-1], [-1,-1,-1.5], [-4,-2,-.3]
    np.testing.assert_allclose(to_np(got.accuracy), (0.5 + 1 + 0) / 3, rtol=backend.rtol())
    np.testing.assert_allclose(to_np(got.accuracy_norm), (0 + 0.5 + 1) / 3, rtol=backend.rtol())
    first = backend.call(calipers.multiple_choice_accuracy, LL, Y, ties="first")
    np.testing.assert_allclose(to_np(first.accuracy), 2 / 3, rtol=backend.rtol())
    assert first.accuracy_norm is None


def test_multiple_choice_mask_matches_truncation():
    ll = np.array([[-1.0, -2.0, 0.0], [-3.0, -1.0, -2.0]])
    mask = np.array([[True, True, False], [True, True, True]])
    got = calipers.multiple_choice_accuracy(ll, [0, 1], choice_mask=mask)
    assert got.accuracy == 1.0      # the padded 0.0 would win without the mask
    with pytest.raises(ValueError, match="y_true must index an existing choice"):
        calipers.multiple_choice_accuracy(ll, [2, 1], choice_mask=mask)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.integers(-4, 0), min_size=3, max_size=3), min_size=1, max_size=6),
       st.data())
def test_multiple_choice_expected_ties_is_order_independent(rows, data):
    ll = np.array(rows, dtype=float)
    y = np.array(data.draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows))))
    perm = np.array(data.draw(st.permutations([0, 1, 2])))
    a = calipers.multiple_choice_accuracy(ll, y).accuracy
    inv = np.argsort(perm)
    b = calipers.multiple_choice_accuracy(ll[:, perm], inv[y]).accuracy
    want = np.mean([float(ll[i, y[i]] == ll[i].max()) / np.sum(ll[i] == ll[i].max())
                    for i in range(len(y))])
    assert a == pytest.approx(want, rel=1e-12) and b == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: calipers.multiple_choice_accuracy(LL[0], Y), "must be 2-D"),
    (lambda: calipers.multiple_choice_accuracy(LL, Y[:2]), "y_true has 2 elements"),
    (lambda: calipers.multiple_choice_accuracy(LL, [0, 1, 3]), "y_true must index"),
    (lambda: calipers.multiple_choice_accuracy(LL + 2, Y), "finite log-likelihoods <= 0"),
    (lambda: calipers.multiple_choice_accuracy(LL, Y, choice_lengths=LEN * 0), "lengths must be > 0"),
    (lambda: calipers.multiple_choice_accuracy(LL, Y, choice_lengths=LEN[:2]), "choice_lengths has shape"),
    (lambda: calipers.multiple_choice_accuracy(LL, Y, ties="random"), "ties must be"),
])
def test_multiple_choice_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
