"""Language-model and benchmark metrics.

pass@k (Chen et al. 2021), perplexity and bits per byte / character from token
log-likelihoods, accuracy with its standard error and Wilson interval, and
multiple-choice accuracy from per-choice log-likelihoods.  Natural logarithms
(nats) throughout; bits appear only where the name says so.
"""

from __future__ import annotations

from typing import Any

import math

from ._core import xp as B
from ._core import validation as V
from ._core.results import ConfidenceInterval, result_type
from ._kernels import quantile as Q
from ._core.compile import compiled
from ._core.types import Array, ArrayLike

__all__ = [
    "pass_at_k",
    "perplexity",
    "Perplexity",
    "bits_per_byte",
    "bits_per_character",
    "accuracy_with_error",
    "AccuracyWithError",
    "multiple_choice_accuracy",
    "MultipleChoiceAccuracy",
]


def check_integral(name, x, xp):
    V.check_real_values(name, x, xp, "integers")
    if not xp.isdtype(x.dtype, "real floating"):
        return xp.asarray(False)
    invalid = V.check_finite(name, xp.reshape(x, (-1,)), xp)
    return invalid | V.fail_if(x != xp.round(x), name, "must hold whole numbers", xp, values=x)


# --------------------------------------------------------------------------
# pass@k
# --------------------------------------------------------------------------

def pass_at_k(n: ArrayLike, c: ArrayLike, k: ArrayLike, *,
              max_correct: int | None = None) -> float | Array:
    """Unbiased pass@k per problem: ``1 - C(n - c, k) / C(n, k)`` (Chen et al. 2021).

    For each problem, ``n`` samples were drawn and ``c`` of them are correct;
    pass@k is the probability that at least one of ``k`` samples drawn
    without replacement from the ``n`` is correct. Computed as the stable
    product ``1 - prod_{i=n-c+1}^{n} (1 - k / i)`` (no binomials, no overflow
    for n in the thousands; openai/human-eval #35), vectorised over problems with
    different ``n`` and ``c``. When ``n - c < k`` one factor is exactly 0 and
    pass@k is exactly 1. Average the result over problems for the benchmark
    score.

    Parameters
    ----------
    n, c : int arrays (or scalars), broadcastable
        Samples and correct samples per problem, ``0 <= c <= n``.
    k : int or int array broadcastable with ``n``
        Samples allowed per problem, ``1 <= k <= n``.
    max_correct : int, optional (static)
        An upper bound on ``c``: the product runs over ``max_correct`` masked
        factors so shapes are static. Computed from ``c`` in eager mode;
        required under ``jax.jit``.

    Returns
    -------
    float array of the broadcast shape of ``n``, ``c`` and ``k`` (0-d for
    scalars), in the widest float of the backend.

    Raises
    ------
    ValueError
        ``n``, ``c`` or ``k`` not whole numbers, ``c < 0``, ``c > n``,
        ``k < 1``, and ``n < k`` (pass@k is not defined with fewer samples than
        ``k``: a shortcut that returns 1.0 there is wrong). Under ``jit`` such
        problems give NaN. Also ``c`` exceeding ``max_correct`` (NaN under
        ``jit``).

    Examples
    --------
    >>> import calipers
    >>> [round(float(v), 6) for v in calipers.pass_at_k([10, 10, 4], [3, 3, 1], [1, 5, 4])]
    [0.3, 0.916667, 1.0]
    """
    xp, (n, c, k) = B.as_arrays(n, c, k)
    for name, a in (("n", n), ("c", c), ("k", k)):
        check_integral(name, a, xp)
    acc = B.acc_float(xp)
    nf, cf, kf = (xp.astype(a, acc) for a in (n, c, k))
    nf, cf, kf = xp.broadcast_arrays(nf, cf, kf)
    traced = B.is_traced(n, c, k)

    def rule_message(rule):
        def message(i, _):
            # only called with concrete arrays (pass_at_k is not compiled: the
            # message names all three inputs of the offending problem)
            fl = [B.to_numpy(xp.reshape(a, (-1,))) for a in (nf, cf, kf)]
            return (f"{rule}; problem {i} has n={int(fl[0][i])}, c={int(fl[1][i])}, "
                    f"k={int(fl[2][i])}")
        return message

    for cond, rule in (((cf < 0), "c must be >= 0"), ((cf > nf), "c must be <= n"),
                       ((kf < 1), "k must be >= 1"),
                       ((nf < kf), "n must be >= k (pass@k needs at least k samples)")):
        # raises eagerly; under jit the offending problems become NaN (``bad`` below)
        V.fail_if(xp.reshape(cond, (-1,)), "", "", xp, message=rule_message(rule))
    bad = (cf < 0) | (cf > nf) | (kf < 1) | (nf < kf)
    if max_correct is None:
        if traced:
            raise ValueError("pass_at_k under jit needs max_correct= (a static upper bound on c)")
        max_correct = int(xp.max(cf)) if cf.size > 0 else 0
    L = int(max_correct)
    if L < 0:
        raise ValueError(f"max_correct must be >= 0, got {max_correct!r}")
    V.fail_if(cf > L, "c", f"exceeds max_correct={L}", xp)
    bad = bad | (cf > L)
    shape = nf.shape
    nv, cv, kv = (xp.reshape(a, (-1, 1)) for a in (nf, cf, kf))
    j = xp.reshape(xp.arange(L, dtype=acc), (1, -1))
    i = nv - j                          # i = n, n-1, ..., n-L+1
    use = j < cv                        # only the c factors i = n-c+1 .. n
    safe_i = xp.where(use & (i > 0), i, 1.0)
    factors = xp.where(use, 1.0 - kv / safe_i, 1.0)
    # i <= k makes a factor <= 0 only when n - c < k: then the answer is exactly 1
    factors = xp.where(factors < 0, 0.0, factors)
    value = 1.0 - xp.prod(factors, axis=1)
    value = B.nan_if(xp.reshape(bad, (-1,)), value, xp)
    value = xp.reshape(value, shape)
    return B.finalize(value, xp)


# --------------------------------------------------------------------------
# perplexity and bits per byte / character
# --------------------------------------------------------------------------

@result_type(legacy_fields=('corpus', 'per_sequence', 'num_tokens',))
class Perplexity:
    """Corpus and per-sequence perplexity."""

    corpus: Any           #: exp(total NLL / total tokens), 0-d
    per_sequence: Any     #: exp(NLL_s / tokens_s) per segment, NaN for an empty segment
    num_tokens: Any       #: tokens per segment (weight sum when ``mask`` is fractional)


def prepare_logprobs(token_logprobs, mask, name="token_logprobs"):
    xp, (lp, mask) = B.as_arrays(token_logprobs, mask)
    B.check_numeric(name, lp, xp)
    if lp.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D (tokens) or 2-D (sequences, tokens), "
                         f"got shape {tuple(lp.shape)}")
    if lp.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one token is required")
    acc = B.acc_float(xp)
    lpf = xp.astype(lp, acc)
    invalid = xp.asarray(False)
    if mask is not None:
        if tuple(mask.shape) != tuple(lp.shape):
            raise ValueError(f"mask has shape {tuple(mask.shape)} but {name} has shape "
                             f"{tuple(lp.shape)}; they must match")
        m = xp.astype(mask, acc)
        invalid = V.fail_if(~((m == 0) | (m == 1)), "mask", "must contain only 0/1 or booleans",
                            xp, values=mask)
    else:
        m = None
    # masked (padding) positions may hold anything, NaN included: only kept tokens are checked
    keep = None if m is None else (m > 0)
    okv = xp.isfinite(lpf) & (lpf <= 0)
    if keep is not None:
        okv = okv | ~keep
    invalid = invalid | V.fail_if(~xp.reshape(okv, (-1,)), name, "must be finite "
                                  "log-probabilities (<= 0, natural log)", xp,
                                  values=xp.reshape(lpf, (-1,)))
    counted = xp.isfinite(lpf) & (lpf <= 0)
    if keep is not None:
        counted = counted & keep
    nll = xp.where(counted, -lpf, 0.0)   # padding (even NaN) contributes exactly 0
    return xp, nll, m, invalid, acc


@compiled
def perplexity(token_logprobs: ArrayLike, *, segment_ids: ArrayLike = None,
               num_segments: int | None = None,
               mask: ArrayLike = None) -> float | Array | Perplexity:
    """Perplexity ``exp(NLL / tokens)`` from per-token log-likelihoods (natural log).

    Without ``segment_ids`` and with 1-D input, the corpus perplexity
    ``exp(-sum(log p) / n_tokens)`` as a 0-d float (three tokens with p = 1/2
    give 2). Otherwise a :class:`Perplexity` with the per-sequence values and
    the corpus value, which is ``exp(total NLL / total tokens)`` (token
    weighted), not the mean of the per-sequence perplexities.

    Parameters
    ----------
    token_logprobs : array (n_tokens,) or (n_sequences, seq_len)
        ``log p(token | context)`` in nats, finite and ``<= 0``. 2-D input:
        each row is one sequence (then ``segment_ids`` must be None).
    segment_ids : int array (n_tokens,), optional
        Sequence index of each token, in ``0 .. num_segments - 1`` (any order).
    num_segments : int, optional (static)
        Number of sequences; defaults to ``max(segment_ids) + 1`` in eager mode,
        required under ``jax.jit`` (the JAX convention).
    mask : 0/1 or bool array, same shape, optional
        1 for tokens that count, 0 for padding (padding values are ignored,
        even NaN).

    Returns
    -------
    0-d float or :class:`Perplexity`. A sequence with no tokens has NaN
    perplexity with an :class:`UndefinedMetricWarning` (eager); the corpus
    value is undefined (NaN) only when no token counts at all.

    Raises
    ------
    ValueError
        Empty input, log-probabilities > 0, NaN or inf among counted tokens, a
        mask not 0/1, segment ids not integers or outside
        ``0 .. num_segments - 1``, both 2-D input and ``segment_ids``. Under
        ``jit`` these give NaN.

    Examples
    --------
    >>> import math, calipers
    >>> float(calipers.perplexity([math.log(0.5)] * 3))
    2.0
    >>> r = calipers.perplexity([-1.0, -1.0, -3.0], segment_ids=[0, 0, 1])
    >>> [round(float(v), 4) for v in r.per_sequence], round(float(r.corpus), 4)
    ([2.7183, 20.0855], 5.2945)
    """
    xp, nll, m, invalid, acc = prepare_logprobs(token_logprobs, mask)
    ones = xp.ones(nll.shape, dtype=acc) if m is None else m
    if nll.ndim == 2:
        if segment_ids is not None:
            raise ValueError("give 2-D token_logprobs (one row per sequence) or segment_ids, "
                             "not both")
        seq_nll = xp.sum(nll, axis=1)
        seq_tok = xp.sum(ones, axis=1)
        return _perplexity_result(xp, seq_nll, seq_tok, invalid, structured=True)
    if segment_ids is None:
        return _perplexity_result(xp, xp.sum(nll), xp.sum(ones), invalid, structured=False)
    ids, num_segments, invalid = _segments(segment_ids, nll, num_segments, invalid, xp)
    seq_nll = B.segment_sum(nll, ids, num_segments, xp)
    seq_tok = B.segment_sum(ones, ids, num_segments, xp)
    return _perplexity_result(xp, seq_nll, seq_tok, invalid, structured=True)


def _segments(segment_ids, values, num_segments, invalid, xp):
    _, (ids,) = B.as_arrays(segment_ids)
    if B.is_numpy(_) and not B.is_numpy(xp):
        ids = xp.asarray(ids)
    V.check_1d("segment_ids", ids)
    if ids.shape[0] != values.shape[0]:
        raise ValueError(f"segment_ids has {ids.shape[0]} elements but token_logprobs has "
                         f"{values.shape[0]}; they must match")
    check_integral("segment_ids", ids, xp)
    traced = B.is_traced(ids)
    if num_segments is None:
        if traced:
            raise ValueError("num_segments is required under jit (a static number of sequences)")
        num_segments = max(int(xp.max(ids)) + 1, 1)
    num_segments = int(num_segments)
    if num_segments < 1:
        raise ValueError(f"num_segments must be >= 1, got {num_segments}")
    out = (ids < 0) | (ids >= num_segments)
    invalid = invalid | V.fail_if(out, "segment_ids", f"must be in 0 .. {num_segments - 1}", xp,
                                  values=ids)
    ids = xp.astype(ids, B.acc_int(xp))
    return ids, num_segments, invalid


def _perplexity_result(xp, nll, tok, invalid, *, structured):
    total_nll = xp.sum(nll)
    total_tok = xp.sum(tok)
    corpus = xp.exp(total_nll / xp.where(total_tok > 0, total_tok, 1.0))
    corpus = B.nan_if(invalid | (total_tok == 0), corpus, xp)
    if not structured:
        V.warn_if(total_tok == 0, "perplexity is undefined with no counted tokens; "
                  "returning NaN", xp)
        return B.finalize(corpus, xp)
    empty = tok == 0
    per = xp.exp(nll / xp.where(empty, 1.0, tok))
    per = B.nan_if(empty | invalid, per, xp)
    V.warn_if(xp.any(empty), lambda k: f"perplexity is undefined for {int(k)} sequence(s) with "
              "no tokens; returning NaN for them", xp,
              values=xp.sum(xp.astype(empty, B.acc_int(xp))))
    return Perplexity(B.finalize(corpus, xp), per, tok)


def _bits_per_unit(token_logprobs, count, mask, count_name):
    xp, nll, m, invalid, acc = prepare_logprobs(token_logprobs, mask)
    _, (cnt,) = B.as_arrays(count)
    if B.is_numpy(_) and not B.is_numpy(xp):
        cnt = xp.asarray(cnt)
    invalid = invalid | check_integral(count_name, cnt, xp)
    total = xp.sum(xp.astype(cnt, acc))
    invalid = invalid | V.fail_if(xp.any(cnt < 0) | ~(total > 0), count_name,
                                  "must be non-negative with a positive total", xp)
    value = xp.sum(nll) / (math.log(2.0) * xp.where(total > 0, total, 1.0))
    return B.finalize(B.nan_if(invalid, value, xp), xp)


@compiled
def bits_per_byte(token_logprobs: ArrayLike, num_bytes: ArrayLike, *,
                  mask: ArrayLike = None) -> float | Array:
    """Bits per byte: ``total NLL in nats / (ln 2 * total UTF-8 bytes)``.

    A tokenizer-independent compression rate (lower is better) used for
    language-model evaluation on raw text (e.g. The Pile, Gao et al. 2020).

    Parameters
    ----------
    token_logprobs : array (n_tokens,) or (n_sequences, seq_len)
        Natural-log token log-likelihoods, finite and ``<= 0``.
    num_bytes : int or int array
        Bytes of the text those tokens encode (summed if an array, e.g. per
        document). Count UTF-8 bytes, ``len(text.encode("utf-8"))``.
    mask : 0/1 array like ``token_logprobs``, optional
        Tokens to count (padding 0).

    Returns a 0-d float (bits per byte). Raises ``ValueError`` for invalid
    log-probabilities (as :func:`perplexity`) and a non-integer, negative or
    zero total ``num_bytes``; under ``jit`` these give NaN.
    """
    return _bits_per_unit(token_logprobs, num_bytes, mask, "num_bytes")


@compiled
def bits_per_character(token_logprobs: ArrayLike, num_characters: ArrayLike, *,
                       mask: ArrayLike = None) -> float | Array:
    """Bits per character: ``total NLL in nats / (ln 2 * total characters)``.

    As :func:`bits_per_byte` with Unicode characters (``len(text)``) as the
    unit, the usual measure for character-level benchmarks (enwik8, text8).
    """
    return _bits_per_unit(token_logprobs, num_characters, mask, "num_characters")


# --------------------------------------------------------------------------
# accuracy with standard error and Wilson interval
# --------------------------------------------------------------------------

@result_type(meta=("n",), renamed={"ci_low": ("confidence_interval", "low"),
                                  "ci_high": ("confidence_interval", "high")},
             legacy_fields=("accuracy", "standard_error", "ci_low", "ci_high", "n"))
class AccuracyWithError:
    """Accuracy, its standard error and its Wilson interval (``ci_low`` / ``ci_high`` are
    deprecated aliases of ``confidence_interval.low`` / ``.high``)."""

    accuracy: Any                           #: share correct, p
    standard_error: Any                     #: sqrt(p (1 - p) / n)
    confidence_interval: ConfidenceInterval  #: Wilson interval
    n: int                                  #: number of items


def accuracy_with_error(correct: ArrayLike, *, confidence_level: float = 0.95) -> AccuracyWithError:
    """Accuracy over items, its standard error and the Wilson score interval.

    ``p = mean(correct)``, standard error ``sqrt(p (1 - p) / n)`` (the
    binomial plug-in; 0 when p is 0 or 1), and the Wilson (1927) interval
    ``(p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)`` with ``z`` the
    normal quantile at ``1 - (1 - confidence_level)/2``. The Wilson interval
    stays inside [0, 1] and is not degenerate at p = 0 or 1, unlike
    ``p ± z·se``. Items are treated as independent (no clustering).

    Parameters
    ----------
    correct : array (n,) of 0/1 or bool
        Whether each item was answered correctly.
    confidence_level : float in (0, 1)

    Returns an :class:`AccuracyWithError` of 0-d floats.

    Raises ``ValueError`` for empty input, values other than 0/1, a
    confidence level outside (0, 1); under ``jit`` non-0/1 values give NaN.
    """
    confidence_level = V.confidence_level(confidence_level)
    xp, (correct,) = B.as_arrays(correct)
    V.check_1d("correct", correct)
    B.check_nonempty("correct", correct)
    y, invalid = V.binary_labels(correct, xp, name="correct")
    acc = B.acc_float(xp)
    n = y.shape[0]
    p = xp.sum(xp.astype(y, acc)) / n
    se = xp.sqrt(p * (1 - p) / n)
    k = xp.sum(xp.astype(y, acc))
    lo, hi = Q.wilson_bounds(k, n, Q.normal_quantile(confidence_level), xp)
    vals = [B.finalize(B.nan_if(invalid, v, xp), xp) for v in (p, se, lo, hi)]
    return AccuracyWithError(vals[0], vals[1], ConfidenceInterval(vals[2], vals[3]), n)


# --------------------------------------------------------------------------
# multiple choice
# --------------------------------------------------------------------------

@result_type(legacy_fields=('accuracy', 'accuracy_norm',))
class MultipleChoiceAccuracy:
    accuracy: Any          #: argmax of the summed log-likelihood
    accuracy_norm: Any     #: argmax of log-likelihood / length; None without lengths


@compiled
def multiple_choice_accuracy(choice_logprobs: ArrayLike, y_true: ArrayLike, *,
                             choice_lengths: ArrayLike = None, choice_mask: ArrayLike = None,
                             ties: str = "expected") -> MultipleChoiceAccuracy:
    """Multiple-choice accuracy from per-choice log-likelihoods, raw and length-normalised.

    The model's answer is the choice with the highest log-likelihood
    (``accuracy``), or the highest log-likelihood per unit of length
    (``accuracy_norm``; the unit is whatever ``choice_lengths`` counts:
    characters of the choice text give lm-evaluation-harness's ``acc_norm``,
    UTF-8 bytes its ``acc_bytes``).

    Ties (a stated convention): with ``ties="expected"`` (default) a question
    whose top score is shared by ``t`` choices counts ``1/t`` if the correct
    choice is among them: the expected accuracy of a uniformly random tie
    break, independent of choice order. ``ties="first"`` picks the first of
    the tied choices (``numpy.argmax``, as lm-evaluation-harness).

    Parameters
    ----------
    choice_logprobs : array (n_questions, n_choices)
        Sum of token log-likelihoods of each choice (nats), finite and <= 0
        where the choice exists.
    y_true : int array (n_questions,)
        Index of the correct choice.
    choice_lengths : array (n_questions, n_choices), optional
        Positive lengths for the normalised accuracy.
    choice_mask : bool array (n_questions, n_choices), optional
        False for padding when questions have fewer choices (padding values
        are ignored).
    ties : ``"expected"`` or ``"first"``

    Returns a :class:`MultipleChoiceAccuracy` of 0-d floats (``accuracy_norm``
    None without ``choice_lengths``).

    Raises ``ValueError`` for shapes, empty input, log-likelihoods > 0 or not
    finite, lengths <= 0, ``y_true`` outside ``0 .. n_choices - 1`` or on a
    masked choice, a question with no choice; under ``jit`` these give NaN.
    """
    ties = V.choice(ties, "ties", ("expected", "first"))
    xp, (ll, y, lengths, cmask) = B.as_arrays(choice_logprobs, y_true, choice_lengths, choice_mask)
    if ll.ndim != 2:
        raise ValueError(f"choice_logprobs must be 2-D (n_questions, n_choices), got shape "
                         f"{tuple(ll.shape)}")
    V.check_1d("y_true", y)
    V.check_same_length(choice_logprobs=ll, y_true=y)
    B.check_nonempty("choice_logprobs", ll)
    B.check_numeric("choice_logprobs", ll, xp)
    check_integral("y_true", y, xp)
    nq, nc = ll.shape
    acc = B.acc_float(xp)
    llf = xp.astype(ll, acc)
    if cmask is None:
        keep = xp.ones((nq, nc), dtype=xp.bool)
    else:
        if tuple(cmask.shape) != (nq, nc):
            raise ValueError(f"choice_mask has shape {tuple(cmask.shape)}; expected {(nq, nc)}")
        keep = xp.astype(cmask, xp.bool) if cmask.dtype != xp.bool else cmask
    invalid = xp.asarray(False)
    ok = (xp.isfinite(llf) & (llf <= 0)) | ~keep
    cols = xp.reshape(xp.arange(nc, dtype=B.acc_int(xp)), (1, -1))
    yi = xp.reshape(xp.astype(y, B.acc_int(xp)), (-1, 1))
    is_true = cols == yi
    y_ok = (y >= 0) & (y < nc) & xp.any(is_true & keep, axis=1)
    has_choice = xp.any(keep, axis=1)
    checks = [(ok, "choice_logprobs", "must be finite log-likelihoods <= 0"),
              (y_ok, "y_true", f"must index an existing choice in 0 .. {nc - 1}"),
              (has_choice, "every question", "needs at least one choice")]
    if lengths is not None:
        if tuple(lengths.shape) != (nq, nc):
            raise ValueError(f"choice_lengths has shape {tuple(lengths.shape)}; expected {(nq, nc)}")
        B.check_numeric("choice_lengths", lengths, xp)
        lf = xp.astype(lengths, acc)
        checks.append(((xp.isfinite(lf) & (lf > 0)) | ~keep, "choice_lengths", "must be > 0"))
    for cond, name, rule in checks:
        invalid = invalid | V.fail_if(xp.reshape(~cond, (-1,)), name, rule, xp,
                                      what="flat element")

    def score(values):
        v = xp.where(keep & ok, values, -xp.inf)
        top = xp.max(v, axis=1, keepdims=True)
        tied = keep & ok & (v == top)
        if ties == "first":
            idx = xp.where(tied, cols, nc)
            first = xp.min(idx, axis=1, keepdims=True)
            hit = xp.astype(xp.any(tied & (cols == first) & is_true, axis=1), acc)
        else:
            t = xp.sum(xp.astype(tied, acc), axis=1)
            hit = xp.astype(xp.any(tied & is_true, axis=1), acc) / xp.where(t > 0, t, 1.0)
        return B.finalize(B.nan_if(invalid, xp.mean(hit), xp), xp)

    a = score(llf)
    a_norm = None
    if lengths is not None:
        a_norm = score(llf / xp.where(keep & (lf > 0), lf, 1.0))
    return MultipleChoiceAccuracy(a, a_norm)


