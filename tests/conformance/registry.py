"""One registry of every public metric function, for the contract checks in test_contracts.py.

An :class:`Entry` says how to call a function on small random inputs (with ties) and which
contracts apply to it. Generators take ``(rng, n)`` and return ``(args, kwargs)`` of NumPy
arrays; arrays whose leading dimension is ``n`` are the rows (permuted, repeated and weighted
together). Static options (``num_classes``, ``num_segments``, ``k`` ...) live in ``options`` and
are passed on every backend, so eager and ``jit`` compute the same thing.

Adding a public function: add an ``Entry`` here (or an ``EXEMPT`` line with the reason); the
completeness test in test_contracts.py fails until one of the two exists.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable

import numpy as np

import calipers
from calipers import retrieval as R

_TARGET_F16 = ("the float64 reference is not computable: target rows of 1/3 rounded to float16 "
               "(or bfloat16) sum to 1 only within that dtype's tolerance, and the float64 "
               "check is stricter (float16 and JAX bfloat16 input itself is accepted with "
               "sqrt(eps) of its dtype; NumPy bfloat16 is read as float32, so with float32's)")

N = 12  # one row count for every entry: JAX eager's per-op compiles are shared across entries


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    fn: Callable
    gen: Callable                      # (rng, n) -> (args, kwargs)
    options: dict = dataclasses.field(default_factory=dict)
    jit: Any = True                    # True, or why the function is eager only by design
    weights: Any = "repeat"            # "repeat", None (no sample_weight), or why it refuses
    rows: Any = True                   # True (row order never matters), or why it does
    ties: int | None = None            # positional index of the score array (tie-order check)
    labels: int | None = 0             # positional index of the label array (mixed namespaces)
    undefined: Callable | None = None  # generator of valid input whose result is undefined
    invalid: tuple = ()                # ((generator, argument name the error names), ...)
    symmetric: bool = False            # f(a, b) == f(b, a)
    float16: bool = True               # has float inputs to cast to float16
    weights_view: Callable | None = None  # the part of the result that weights must reproduce
    not_on: dict = dataclasses.field(default_factory=dict)  # "check/backend" -> why it is N/A
    bounds: tuple | None = None        # (low, high) every value of the first result field obeys
    extremes: Callable | None = None   # (rng, n) -> [(args, kwargs), ...]: perfect and reversed


# --------------------------------------------------------------------------
# generators: small, seeded, with ties
# --------------------------------------------------------------------------

def _binary_labels(rng, n):
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    return y


def _ties(rng, n, levels=6):
    """Scores on a coarse grid: many tie groups that mix classes."""
    return rng.integers(0, levels, n) / (levels - 1)


def g_binary_scores(rng, n):
    return (_binary_labels(rng, n), _ties(rng, n) * 0.8 + 0.1), {}


def g_binary_preds(rng, n):
    y = _binary_labels(rng, n)
    p = _binary_labels(rng, n)
    return (y, p), {}


def g_multiclass_preds(rng, n, c=3):
    y = rng.integers(0, c, n)
    y[:c] = np.arange(c)
    p = rng.integers(0, c, n)
    p[:c] = np.arange(c)[::-1]
    return (y, p), {}


def g_multiclass_scores(rng, n, c=3):
    y = rng.integers(0, c, n)
    y[:c] = np.arange(c)
    s = rng.integers(1, 5, (n, c)).astype(float)
    return (y, s / s.sum(axis=1, keepdims=True)), {}


def g_regression(rng, n):
    return (rng.integers(1, 8, n) / 2.0, rng.integers(1, 8, n) / 2.0 + 0.25), {}


def g_retrieval(rng, n):
    y = rng.integers(0, 4, n)
    q = np.arange(n) % 3
    y[:3] = [2, 1, 3]      # every query has a relevant item
    y[3:6] = [0, 0, 0]     # and a non-relevant one
    return (y, _ties(rng, n), q), {}


def g_grouped(rng, n):
    y = _binary_labels(rng, n)
    q = np.arange(n) % 3
    y[:6] = [0, 0, 0, 1, 1, 1]   # both classes in every group
    return (y, _ties(rng, n), q), {}


def g_logits(rng, n, c=3):
    y = rng.integers(0, c, n)
    y[:c] = np.arange(c)
    return (rng.integers(-4, 5, (n, c)) / 2.0, y), {}


def g_tokens(rng, n):
    return (-rng.integers(1, 9, n) / 4.0,), {"segment_ids": np.sort(np.arange(n) % 3)}


def g_bits(rng, n):
    return (-rng.integers(1, 9, n) / 4.0, rng.integers(1, 5, n)), {}


def g_correct(rng, n):
    return (_binary_labels(rng, n),), {}


def g_choices(rng, n, c=4):
    return (-rng.integers(1, 6, (n, c)) / 2.0, rng.integers(0, c, n)), {}


def g_pass_at_k(rng, n):
    total = rng.integers(4, 8, n)
    return (total, rng.integers(0, 4, n)), {}


def g_paired(rng, n):
    (y, a), _ = g_binary_scores(rng, n)
    return (y, a, _ties(rng, n)), {}


def g_table(rng, n):
    return (rng.integers(0, 9, (2, 2)),), {}


def g_count(rng, n):
    return (np.asarray(rng.integers(1, 9)), np.asarray(10)), {}


def g_sprt(rng, n):
    return (_binary_labels(rng, n),), {}


def g_battles(rng, n, k=3):
    """Battles among ``k`` models: a cycle, a tie and a reversed result first (a finite MLE)."""
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    o = rng.integers(0, 3, n) / 2
    a[:4], b[:4], o[:4] = [0, 1, 2, 0], [1, 2, 0, 1], [1.0, 1.0, 1.0, 0.0]
    return (a, b, o), {}


def g_mcnemar_table(rng, n):
    y = _binary_labels(rng, n)
    return (y, _binary_labels(rng, n), _binary_labels(rng, n)), {}


def g_by_group(rng, n):
    return g_binary_preds(rng, n)[0], {"group_id": np.arange(n) % 3}


def g_mase(rng, n):
    (y, p), _ = g_regression(rng, n)
    return (y, p), {"y_train": np.array([1.0, 2.5, 2.0, 4.0, 3.5])}


# undefined-on-valid-input generators
def u_one_class(rng, n):
    return (np.ones(n, dtype=np.int64), _ties(rng, n)), {}


def u_paired_one_class(rng, n):
    return (np.ones(n, dtype=np.int64), _ties(rng, n), _ties(rng, n)), {}


def u_no_relevant(rng, n):
    (y, s, q), kw = g_retrieval(rng, n)
    y = np.where(q == 1, 0, y)        # query 1 has no relevant item
    return (y, s, q), kw


def u_grouped_one_class(rng, n):
    return (np.ones(n, dtype=np.int64), _ties(rng, n), np.arange(n) % 3), {}


def u_no_predicted_positive(rng, n):
    return (_binary_labels(rng, n), np.zeros(n, dtype=np.int64)), {}


def u_no_positive(rng, n):
    return (np.zeros(n, dtype=np.int64), _ties(rng, n)), {}


def u_constant_truth(rng, n):
    return (np.full(n, 2.0), rng.integers(1, 8, n) / 2.0), {}


# invalid-input generators (value errors: checked eagerly and as NaN under jit)
def _with_nan(gen, i):
    def g(rng, n):
        args, kw = gen(rng, n)
        args = list(args)
        a = np.array(args[i], dtype=float)
        a[1] = np.nan
        args[i] = a
        return tuple(args), kw
    return g


def _with_label(gen, i, value):
    def g(rng, n):
        args, kw = gen(rng, n)
        args = list(args)
        a = np.array(args[i])
        a[2] = value
        args[i] = a
        return tuple(args), kw
    return g


def _with_prob(gen, i, value=1.5):
    def g(rng, n):
        args, kw = gen(rng, n)
        args = list(args)
        a = np.array(args[i], dtype=float)
        a[1] = value
        args[i] = a
        return tuple(args), kw
    return g



# survival: event, time (integer grid: tied times), risk (coarse grid: tied risks)
def g_survival(rng, n):
    event = _binary_labels(rng, n)
    time = rng.integers(2, 9, n).astype(float)
    time[:3] = [1.0, 10.0, 10.0]     # the range the evaluation times must lie in
    event[1:3] = [0, 1]              # a censored and an event row at the last time
    return (event, time, _ties(rng, n)), {}


def g_dynamic_auc(rng, n):
    (e, t, r), _ = g_survival(rng, n)
    return (e, t, r, np.array([3.0, 6.0])), {}


def u_all_censored(rng, n):
    (e, t, r), kw = g_survival(rng, n)
    return (np.zeros(n, dtype=np.int64), t, r), kw


def u_dynamic_all_censored(rng, n):
    (e, t, r, times), kw = g_dynamic_auc(rng, n)
    return (np.zeros(n, dtype=np.int64), t, r, times), kw


# selective classification: confidence (tied), y_true, y_pred
def g_selective(rng, n):
    return (_ties(rng, n), _binary_labels(rng, n), _binary_labels(rng, n)), {}


def u_selective_zero_weight(rng, n):
    args, _ = g_selective(rng, n)
    return args, {"sample_weight": np.zeros(n)}


# conformal prediction
M_TEST = 5   # test points: not rows (a test row permutes the output, a calibration row does not)


def g_pvalues(rng, n):
    return (rng.integers(0, 11, n) / 10.0,), {}


def g_conformal_scores(rng, n):
    return (_ties(rng, n),), {}


def g_intervals(rng, n):
    y = rng.integers(1, 8, n) / 2.0
    centre = rng.integers(1, 8, n) / 2.0
    half = rng.integers(0, 3, n) / 2.0          # bounds on the grid: points on a bound
    return (y, centre - half, centre + half), {}


def g_widths(rng, n):
    (_, lo, hi), kw = g_intervals(rng, n)
    return (lo, hi), kw


def g_sets(rng, n, c=3):
    sets = rng.integers(0, 2, (n, c)).astype(bool)
    return (sets,), {}


def g_set_coverage(rng, n, c=3):
    y = rng.integers(0, c, n)
    return (y, g_sets(rng, n, c)[0][0]), {}


def g_conformal_classification(rng, n, c=3):
    (y, p), _ = g_multiclass_scores(rng, n, c)
    (_, pt), _ = g_multiclass_scores(rng, M_TEST, c)
    return (y, p, pt), {}


def g_conformal_regression(rng, n):
    (y, p), _ = g_regression(rng, n)
    return (y, p, rng.integers(1, 8, M_TEST) / 2.0), {}


# off-policy evaluation: rewards, logging propensities, target probabilities (tied grids)
def g_logged(rng, n):
    reward = rng.integers(0, 3, n) / 2.0
    propensity = rng.integers(1, 5, n) / 4.0
    target = rng.integers(0, 5, n) / 4.0
    return (reward, propensity, target), {}


def _policy(rng, n, a=3):
    t = rng.integers(0, 3, (n, a)).astype(float)
    t[:, 0] += 1.0                  # no all-zero row
    return t / t.sum(axis=1, keepdims=True)


def g_direct(rng, n, a=3):
    return (_policy(rng, n, a), rng.integers(0, 5, (n, a)) / 4.0), {}


def g_doubly_robust(rng, n, a=3):
    (reward, propensity, _), _ = g_logged(rng, n)
    target = _policy(rng, n, a)
    return ((reward, propensity, target, rng.integers(0, 5, (n, a)) / 4.0),
            {"action": rng.integers(0, a, n)})


def g_propensity_target(rng, n):
    (_, propensity, target), _ = g_logged(rng, n)
    return (propensity, target), {}


def g_ess(rng, n):
    return (rng.integers(0, 5, n) / 2.0,), {}


def u_target_zero(rng, n):
    (reward, propensity, _), kw = g_logged(rng, n)
    return (reward, propensity, np.zeros(n)), kw


# paired per-unit values (two systems on the same units), tied
def g_units(rng, n):
    return (rng.integers(0, 5, n) / 4.0, rng.integers(0, 5, n) / 4.0), {}


# padded (Q, L) ranking batch: Q = n queries of L items
def g_ranking_batch(rng, n, length=4):
    y = rng.integers(0, 3, (n, length))
    y[:, 0] = 1                           # every query has a relevant item
    score = rng.integers(0, 3, (n, length)) / 2.0
    mask = np.ones((n, length), dtype=bool)
    mask[::3, -1] = False                 # some padding
    return (y, score, mask), {}


def u_ranking_batch_no_relevant(rng, n):
    (y, s, m), kw = g_ranking_batch(rng, n)
    y = y.copy()
    y[1] = 0                              # query 1 has no relevant item
    return (y, s, m), kw


def _with_value(gen, i, value, where=1):
    def g(rng, n):
        args, kw = gen(rng, n)
        args = list(args)
        a = np.array(args[i], dtype=float)
        a.reshape(a.shape[0], -1)[where, 0] = value
        args[i] = a
        return tuple(args), kw
    return g

# extreme inputs for the bounds check: a perfect and a reversed prediction of the same rows
def x_binary(rng, n):
    y = _binary_labels(rng, n)
    return [((y, 0.1 + 0.8 * y), {}), ((y, 0.9 - 0.8 * y), {})]


def x_probability(rng, n):
    y = _binary_labels(rng, n)
    return [((y, y.astype(float)), {}), ((y, 1.0 - y), {})]


def x_multiclass(rng, n, c=3):
    (y, _), _ = g_multiclass_scores(rng, n, c)
    onehot = (y[:, None] == np.arange(c)).astype(float)
    return [((y, onehot), {}), ((y, (1.0 - onehot) / (c - 1)), {})]


def x_grouped(rng, n):
    (y, _, q), kw = g_grouped(rng, n)
    return [((y, 0.1 + 0.8 * y, q), kw), ((y, 0.9 - 0.8 * y, q), kw)]


def x_retrieval(rng, n):
    (y, _, q), kw = g_retrieval(rng, n)
    return [((y, y / 4.0, q), kw), ((y, 1.0 - y / 4.0, q), kw)]


def x_survival(rng, n):
    # random times without ties, random censoring: weights far from round numbers
    event = _binary_labels(rng, n)
    time = rng.permutation(n) + 1.0 + rng.random(n) / 2
    event[np.argmin(time)], event[np.argmax(time)] = 1, 0
    return [((event, time, -time), {}), ((event, time, time.copy()), {})]


def x_dynamic_auc(rng, n):
    out = x_survival(rng, n)
    times = np.sort(out[0][0][1])[[n // 3, 2 * n // 3]]
    return [(args + (times,), kw) for args, kw in out]


def x_intervals(rng, n):
    (y, _, _), kw = g_intervals(rng, n)
    return [((y, y - 1.0, y + 1.0), kw), ((y, y + 1.0, y + 2.0), kw)]


def x_set_coverage(rng, n, c=3):
    (y, sets), kw = g_set_coverage(rng, n, c)
    hit = y[:, None] == np.arange(c)
    return [((y, hit), kw), ((y, ~hit), kw)]


BIN_INVALID = ((_with_nan(g_binary_scores, 1), "y_score"),
               (_with_label(g_binary_scores, 0, 2), "y_true"))
PROB_INVALID = ((_with_prob(g_binary_scores, 1), "y_prob"),
                (_with_label(g_binary_scores, 0, 2), "y_true"))
REG_INVALID = ((_with_nan(g_regression, 1), "y_pred"),)
RET_INVALID = ((_with_nan(g_retrieval, 1), "y_score"),)

# --------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------

_C3 = {"num_classes": 3}
_Q3 = {"num_segments": 3}

ENTRIES = [
    # binary, threshold-free
    Entry("roc_auc_score", calipers.roc_auc_score, g_binary_scores, ties=1,
          bounds=(0.0, 1.0), extremes=x_binary,
          undefined=u_one_class, invalid=BIN_INVALID),
    Entry("average_precision_score", calipers.average_precision_score, g_binary_scores, ties=1,
          bounds=(0.0, 1.0), extremes=x_binary,
          undefined=u_no_positive,
          invalid=BIN_INVALID),
    Entry("precision_recall_auc", calipers.precision_recall_auc, g_binary_scores, ties=1,
          bounds=(0.0, 1.0), extremes=x_binary,
          undefined=u_no_positive,
          invalid=BIN_INVALID),
    Entry("roc_curve", calipers.roc_curve, g_binary_scores, ties=1,
          not_on={"agreement/array_api_strict": "documented: without data-dependent shapes "
                  "curves keep one point per row, not per distinct threshold",
                  "weights/array_api_strict": "the same: repeated rows add curve points"},
          jit="under jit curves keep one point per row (documented), so jit output is not "
              "eager's; tests/test_ranking.py checks the jit curves",
          invalid=BIN_INVALID),
    Entry("precision_recall_curve", calipers.precision_recall_curve, g_binary_scores, ties=1,
          not_on={"agreement/array_api_strict": "documented: without data-dependent shapes "
                  "curves keep one point per row, not per distinct threshold",
                  "weights/array_api_strict": "the same: repeated rows add curve points"},
          jit="under jit curves keep one point per row (documented), so jit output is not "
              "eager's; tests/test_ranking.py checks the jit curves",
          invalid=BIN_INVALID),
    Entry("precision_at_k", calipers.precision_at_k, g_binary_scores, {"k": 5}, ties=1,
          invalid=BIN_INVALID),
    Entry("recall_at_k", calipers.recall_at_k, g_binary_scores, {"k": 5}, ties=1,
          undefined=u_no_positive,
          invalid=BIN_INVALID),
    Entry("select_threshold", calipers.select_threshold, g_binary_scores,
          {"cost_fp": 1.0, "cost_fn": 2.0}, ties=1, invalid=BIN_INVALID),
    Entry("multiclass_roc_auc_score", calipers.multiclass_roc_auc_score, g_multiclass_scores,
          {"labels": [0, 1, 2]}, ties=1, bounds=(0.0, 1.0), extremes=x_multiclass),
    Entry("top_k_accuracy_score", calipers.top_k_accuracy_score, g_multiclass_scores,
          {"k": 2, "labels": [0, 1, 2]}, ties=1),
    # thresholded classification
    Entry("accuracy_score", calipers.accuracy_score, g_multiclass_preds, float16=False),
    Entry("balanced_accuracy_score", calipers.balanced_accuracy_score, g_multiclass_preds, _C3,
          float16=False),
    Entry("cohen_kappa_score", calipers.cohen_kappa_score, g_multiclass_preds, _C3,
          float16=False, symmetric=True),
    Entry("confusion_matrix", calipers.confusion_matrix, g_multiclass_preds, _C3,
          float16=False),
    Entry("multilabel_confusion_matrix", calipers.multilabel_confusion_matrix,
          g_multiclass_preds, _C3, float16=False),
    Entry("matthews_corrcoef", calipers.matthews_corrcoef, g_multiclass_preds, _C3,
          float16=False),
    Entry("f1_score", calipers.f1_score, g_binary_preds, float16=False),
    Entry("fbeta_score", calipers.fbeta_score, g_binary_preds, {"beta": 2.0}, float16=False),
    Entry("precision_score", calipers.precision_score, g_binary_preds, float16=False,
          undefined=u_no_predicted_positive),
    Entry("recall_score", calipers.recall_score, g_binary_preds, float16=False),
    Entry("specificity_score", calipers.specificity_score, g_binary_preds, float16=False),
    Entry("precision_recall_fscore_support", calipers.precision_recall_fscore_support,
          g_multiclass_preds, {"average": "macro", "num_classes": 3}, float16=False),
    # probabilities and calibration
    Entry("log_loss", calipers.log_loss, g_binary_scores, invalid=PROB_INVALID),
    Entry("brier_score_loss", calipers.brier_score_loss, g_binary_scores, invalid=PROB_INVALID,
          bounds=(0.0, 1.0), extremes=x_probability),
    Entry("brier_decomposition", calipers.brier_decomposition, g_binary_scores,
          invalid=PROB_INVALID),
    Entry("expected_calibration_error", calipers.expected_calibration_error, g_binary_scores,
          {"n_bins": 4}, invalid=PROB_INVALID, bounds=(0.0, 1.0), extremes=x_probability),
    Entry("reliability_diagram", calipers.reliability_diagram, g_binary_scores, {"n_bins": 4},
          invalid=PROB_INVALID),
    Entry("fit_temperature", calipers.fit_temperature, g_logits, labels=1,
          invalid=((_with_nan(g_logits, 0), "logits"),)),
    # regression
    Entry("mean_squared_error", calipers.mean_squared_error, g_regression, labels=None,
          symmetric=True, invalid=REG_INVALID),
    Entry("root_mean_squared_error", calipers.root_mean_squared_error, g_regression,
          labels=None, symmetric=True, invalid=REG_INVALID),
    Entry("mean_absolute_error", calipers.mean_absolute_error, g_regression, labels=None,
          symmetric=True, invalid=REG_INVALID),
    Entry("mean_absolute_percentage_error", calipers.mean_absolute_percentage_error,
          g_regression, labels=None, invalid=REG_INVALID),
    Entry("mean_absolute_scaled_error", calipers.mean_absolute_scaled_error, g_mase,
          labels=None, invalid=((_with_nan(g_mase, 1), "y_pred"),)),
    Entry("r2_score", calipers.r2_score, g_regression, labels=None,
          undefined=u_constant_truth, invalid=REG_INVALID),
    # language models and benchmarks
    Entry("pass_at_k", calipers.pass_at_k, g_pass_at_k, {"k": 3, "max_correct": 4},
          weights=None, rows="per-problem output: rows permute the output", labels=None,
          float16=False, invalid=((_with_label(g_pass_at_k, 1, 9), "c"),)),
    Entry("perplexity", calipers.perplexity, g_tokens, {"num_segments": 3}, weights=None,
          labels=None),
    Entry("bits_per_byte", calipers.bits_per_byte, g_bits, weights=None, labels=None),
    Entry("bits_per_character", calipers.bits_per_character, g_bits, weights=None,
          labels=None),
    Entry("accuracy_with_error", calipers.accuracy_with_error, g_correct, weights=None,
          float16=False, invalid=((_with_label(g_correct, 0, 2), "correct"),)),
    Entry("multiple_choice_accuracy", calipers.multiple_choice_accuracy, g_choices,
          weights=None, labels=1),
    # per-query retrieval (flat arrays, segment sort)
    Entry("grouped_roc_auc", calipers.grouped_roc_auc, g_grouped, _Q3, ties=1,
          bounds=(0.0, 1.0), extremes=x_grouped,
          undefined=u_grouped_one_class),
    Entry("retrieval.dcg", R.dcg, g_retrieval, _Q3, weights=None, ties=1,
          invalid=RET_INVALID),
    Entry("retrieval.ndcg", R.ndcg, g_retrieval, _Q3, weights=None, ties=1,
          bounds=(0.0, 1.0), extremes=x_retrieval,
          undefined=u_no_relevant, invalid=RET_INVALID),
    Entry("retrieval.average_precision", R.average_precision, g_retrieval, _Q3, weights=None,
          bounds=(0.0, 1.0), extremes=x_retrieval,
          ties=1, undefined=u_no_relevant, invalid=RET_INVALID),
    Entry("retrieval.precision_at_k", R.precision_at_k, g_retrieval, {"k": 2, **_Q3},
          weights=None, ties=1, invalid=RET_INVALID),
    Entry("retrieval.recall_at_k", R.recall_at_k, g_retrieval, {"k": 2, **_Q3}, weights=None,
          ties=1, undefined=u_no_relevant, invalid=RET_INVALID),
    Entry("retrieval.r_precision", R.r_precision, g_retrieval, _Q3, weights=None, ties=1,
          undefined=u_no_relevant, invalid=RET_INVALID),
    Entry("retrieval.reciprocal_rank", R.reciprocal_rank, g_retrieval, _Q3, weights=None,
          ties=1, undefined=u_no_relevant, invalid=RET_INVALID),
    # comparing two models
    Entry("delong_roc_variance", calipers.delong_roc_variance, g_binary_scores, weights=None,
          ties=1, undefined=u_one_class, invalid=BIN_INVALID),
    Entry("roc_auc_confint", calipers.roc_auc_confint, g_binary_scores, weights=None, ties=1,
          undefined=u_one_class, invalid=BIN_INVALID),
    Entry("delong_test", calipers.delong_test, g_paired, weights=None, ties=1,
          undefined=u_paired_one_class),
    Entry("mcnemar_table", calipers.mcnemar_table, g_mcnemar_table, weights=None,
          jit="documented eager: returns a NumPy int64 table",
          float16=False),
    Entry("mcnemar", calipers.mcnemar, g_table, weights=None, labels=None, float16=False,
          rows="input is a 2x2 table, not rows"),
    Entry("proportion_confint", calipers.proportion_confint, g_count, weights=None,
          labels=None, float16=False, rows="inputs are counts, not rows"),
    Entry("bradley_terry", calipers.bradley_terry, g_battles, {"num_models": 3},
          weights="repeat", float16=False, labels=None),
    Entry("sprt", calipers.sprt, g_sprt, {"p1": 0.7}, weights=None, float16=False,
          rows="sequential test: the order of the outcomes is the data",
          jit="the decision is a Python string"),
    Entry("paired_bootstrap", functools.partial(calipers.paired_bootstrap, calipers.roc_auc_score),
          g_paired, {"n_resamples": 50, "seed": 0},
          rows="resamples are drawn by row position: the seed and the row order fix them",
          jit="drives its own compiled replicates; the result holds Python strings"),
    Entry("paired_bootstrap_replicates",
          functools.partial(calipers.paired_bootstrap_replicates, calipers.roc_auc_score),
          g_paired, {"n_resamples": 50, "seed": 0},
          rows="resamples are drawn by row position: the seed and the row order fix them"),
    Entry("many_models_bootstrap",
          functools.partial(calipers.many_models_bootstrap, calipers.roc_auc_score),
          g_paired, {"n_resamples": 50, "seed": 0},
          rows="resamples are drawn by row position: the seed and the row order fix them",
          jit="drives the paired engine's compiled replicates; the result holds Python floats"),
    # slices
    Entry("by_group", functools.partial(calipers.by_group, calipers.accuracy_score),
          g_by_group, float16=False,
          # support counts rows (the weight total is the separate ``weight`` field)
          weights_view=lambda r: (r.group, r.value, r.overall, r.num_undefined),
          jit="slicing by group needs concrete group ids (documented eager only)"),
    # multiple comparisons
    Entry("adjust_pvalues", calipers.adjust_pvalues, g_pvalues, {"method": "holm"},
          weights=None, labels=None,
          rows="one adjusted p-value per hypothesis, in input order: rows permute the output",
          invalid=((_with_prob(g_pvalues, 0), "pvalues"), (_with_nan(g_pvalues, 0), "pvalues"))),
    # selective classification (confidence is the score; integer weights are repetition)
    Entry("risk_coverage_curve", calipers.risk_coverage_curve, g_selective, ties=0, labels=1,
          not_on={"agreement/array_api_strict": "documented: without data-dependent shapes "
                  "the curve keeps one point per row, not per tie group",
                  "weights/array_api_strict": "the same: repeated rows add curve points"},
          jit="under jit the curve keeps one point per row (documented), so jit output is not "
              "eager's; tests/test_selective.py checks the jit curve",
          undefined=u_selective_zero_weight,
          invalid=((_with_nan(g_selective, 0), "confidence"),)),
    Entry("aurc", calipers.aurc, g_selective, ties=0, labels=1,
          undefined=u_selective_zero_weight,
          invalid=((_with_nan(g_selective, 0), "confidence"),)),
    Entry("excess_aurc", calipers.excess_aurc, g_selective, ties=0, labels=1,
          undefined=u_selective_zero_weight,
          invalid=((_with_nan(g_selective, 0), "confidence"),)),
    Entry("selective_risk", calipers.selective_risk, g_selective, {"coverage": 0.5}, ties=0,
          labels=1, undefined=u_selective_zero_weight,
          invalid=((_with_nan(g_selective, 0), "confidence"),)),
    Entry("coverage_at_risk", calipers.coverage_at_risk, g_selective, {"max_risk": 0.4},
          ties=0, labels=1, undefined=u_selective_zero_weight,
          invalid=((_with_nan(g_selective, 0), "confidence"),)),
    # survival (risk is the score; event is the label array)
    Entry("concordance_index_censored", calipers.concordance_index_censored, g_survival,
          bounds=(0.0, 1.0), extremes=x_survival,
          ties=2, undefined=u_all_censored,
          invalid=((_with_nan(g_survival, 2), "risk"), (_with_label(g_survival, 0, 2), "event"))),
    # tau below the last time: G is 0 there (a censored row at the largest time)
    Entry("concordance_index_ipcw", calipers.concordance_index_ipcw, g_survival, {"tau": 9.0},
          bounds=(0.0, 1.0), extremes=x_survival,
          weights=None,
          ties=2, undefined=u_all_censored,
          invalid=((_with_nan(g_survival, 2), "risk"), (_with_label(g_survival, 0, 2), "event"))),
    Entry("cumulative_dynamic_auc", calipers.cumulative_dynamic_auc, g_dynamic_auc,
          bounds=(0.0, 1.0), extremes=x_dynamic_auc,
          weights=None, ties=2, undefined=u_dynamic_all_censored,
          invalid=((_with_nan(g_dynamic_auc, 2), "risk"),
                   (_with_label(g_dynamic_auc, 0, 2), "event"))),
    # conformal prediction
    Entry("conformal_quantile", calipers.conformal_quantile, g_conformal_scores,
          {"alpha": 0.1}, weights=None, labels=None, ties=0,
          invalid=((_with_nan(g_conformal_scores, 0), "scores"),)),
    Entry("split_conformal_regression", calipers.split_conformal_regression,
          g_conformal_regression, {"alpha": 0.2}, weights=None, labels=None,
          invalid=((_with_nan(g_conformal_regression, 1), "y_pred_calib"),)),
    Entry("split_conformal_classification", calipers.split_conformal_classification,
          g_conformal_classification, {"alpha": 0.2, "method": "lac"}, weights=None, ties=1,
          not_on={"invalid/jax_jit": "documented: under jit invalid input gives a NaN q_hat and "
                  "empty sets; the check reads the first field (sets, bool), never NaN"},
          invalid=((_with_prob(g_conformal_classification, 1), "proba_calib"),
                   (_with_label(g_conformal_classification, 0, 7), "y_calib"))),
    Entry("interval_coverage", calipers.interval_coverage, g_intervals, labels=None,
          bounds=(0.0, 1.0), extremes=x_intervals,
          invalid=((_with_nan(g_intervals, 0), "y_true"), (_with_nan(g_intervals, 1), "lower"),
                   (_with_value(g_intervals, 2, -100.0), "upper"))),   # H37: swapped bounds
    Entry("mean_interval_width", calipers.mean_interval_width, g_widths, labels=None,
          invalid=((_with_nan(g_widths, 0), "lower"),
                   (_with_value(g_widths, 1, -100.0), "upper"))),
    Entry("mean_set_size", calipers.mean_set_size, g_sets, labels=None, float16=False),
    Entry("set_coverage", calipers.set_coverage, g_set_coverage, float16=False,
          bounds=(0.0, 1.0), extremes=x_set_coverage,
          invalid=((_with_label(g_set_coverage, 0, 7), "y_true"),)),
    # off-policy evaluation (no sample_weight: the importance weights are the method)
    Entry("importance_weights", calipers.importance_weights, g_propensity_target,
          weights=None, labels=None, rows="one weight per row: rows permute the output",
          invalid=((_with_value(g_propensity_target, 0, 0.0), "propensity"),)),
    Entry("effective_sample_size", calipers.effective_sample_size, g_ess, weights=None,
          labels=None, invalid=((_with_value(g_ess, 0, -1.0), "weights"),)),
    Entry("ips_estimate", calipers.ips_estimate, g_logged, weights=None, labels=None,
          invalid=((_with_value(g_logged, 1, 0.0), "propensity"),
                   (_with_nan(g_logged, 0), "reward"))),
    Entry("snips_estimate", calipers.snips_estimate, g_logged, weights=None, labels=None,
          undefined=u_target_zero,
          invalid=((_with_value(g_logged, 1, 0.0), "propensity"),
                   (_with_nan(g_logged, 0), "reward"))),
    Entry("direct_method_estimate", calipers.direct_method_estimate, g_direct, weights=None,
          labels=None, invalid=((_with_value(g_direct, 0, 1.5), "target"),),
          not_on={f"{h}/{b}": _TARGET_F16 for h in ("float16", "bfloat16")
                  for b in ("numpy", "jax_eager")}),
    Entry("doubly_robust_estimate", calipers.doubly_robust_estimate, g_doubly_robust,
          weights=None, labels=None,
          not_on={f"{h}/{b}": _TARGET_F16 for h in ("float16", "bfloat16")
                  for b in ("numpy", "jax_eager")},
          invalid=((_with_value(g_doubly_robust, 1, 0.0), "propensity"),
                   (_with_nan(g_doubly_robust, 3), "estimated_rewards"))),
    Entry("off_policy_interval", functools.partial(calipers.off_policy_interval, "snips"),
          g_logged, {"n_resamples": 50, "seed": 0}, weights=None, labels=None,
          rows="resamples are drawn by row position: the seed and the row order fix them",
          invalid=((_with_value(g_logged, 1, 0.0), "propensity"),)),
    # paired tests over units (one value per unit and system)
    Entry("paired_permutation_test", calipers.paired_permutation_test, g_units,
          {"exact_max": 20}, weights=None, labels=None,   # 12 units: all 2**12 sign patterns
          invalid=((_with_nan(g_units, 0), "a"),)),
    Entry("paired_unit_bootstrap", calipers.paired_unit_bootstrap, g_units,
          {"n_resamples": 200, "seed": 0}, weights=None, labels=None,
          rows="resamples are drawn by row position: the seed and the row order fix them",
          # fewer than 10 units is undefined, but only the interval fields are NaN and the
          # check reads the first field (the difference): tests/test_permutation.py covers it
          invalid=((_with_nan(g_units, 1), "b"),)),
    # padded (Q, L) ranking batch for a jitted eval step
    Entry("ranking_batch_metrics", calipers.ranking_batch_metrics, g_ranking_batch, {"k": 3},
          weights=None, rows="one value per query (batch row): rows permute the output",
          undefined=u_ranking_batch_no_relevant,
          invalid=((_with_nan(g_ranking_batch, 1), "y_score"),)),
]

REGISTRY = {e.name: e for e in ENTRIES}
assert len(REGISTRY) == len(ENTRIES), "duplicate registry names"

# Public callables that are not metric functions, with the reason.
EXEMPT = {
    "eager_checks": "a context manager (no metric): skips the eager checks' host reads; tested "
                    "in test_eager_checks.py",
    "ThresholdSelection": "result type (checked through select_threshold)",
    "AccuracyWithError": "result type",
    "BrierDecomposition": "result type",
    "MultipleChoiceAccuracy": "result type",
    "Perplexity": "result type",
    "ReliabilityDiagram": "result type",
    "SliceReport": "result type",
    "QueryResult": "result type",
    "retrieval.QueryResult": "result type",
    "BootstrapResult": "result type",
    "ManyModelsResult": "result type (checked through many_models_bootstrap)",
    "ConfidenceInterval": "result type",
    "DeLongResult": "result type",
    "McNemarResult": "result type",
    "SPRTResult": "result type",
    "GSPRTResult": "result type (checked through sprt with elo0, elo1)",
    "MatchElo": "result type (of match_elo)",
    "GameCountsState": "streaming state class (init/update/merge, jit-able), tested with merge "
                       "and jit in test_gsprt.py",
    "gsprt_llr": "eager calculator on a 3- or 5-vector of match counts (a host root-find), no "
                 "rows; tested against an independent constrained maximisation in test_gsprt.py",
    "match_elo": "eager calculator on a 3- or 5-vector of match counts, Python floats; tested "
                 "against direct formulas in test_gsprt.py",
    "UndefinedMetricWarning": "warning class",
    "CalibrationState": "streaming state class (init/update/merge/compute), tested in "
                        "test_states.py",
    "ConfusionState": "streaming state class, tested in test_states.py",
    "NLLState": "streaming state class, tested in test_states.py",
    "ProbabilityLossState": "streaming state class, tested in test_states.py",
    "MergeableState": "typing Protocol of the streaming states, no metric",
    "StateCollection": "collection of streaming states: STATE_ENTRIES below (state == one-shot "
                       "contract), and test_collection.py",
    "retrieval.Qrels": "parsed TREC qrels container (file I/O)",
    "retrieval.Run": "parsed TREC run container (file I/O)",
    "retrieval.TrecFormatError": "exception class",
    "retrieval.read_qrels": "file reader, not an array metric (tested in test_trec.py)",
    "retrieval.read_run": "file reader, not an array metric (tested in test_trec.py)",
    "retrieval.trec_arrays": "builds flat arrays from parsed files (tested in test_trec.py)",
    "retrieval.evaluate": "NumPy only by design: joins qrels and runs by string ids from files "
                          "or dicts (tested against trec_eval in test_trec.py)",
    "retrieval.parse_trec_measures": "parser of trec_eval measure names (tested in test_trec.py)",
    "retrieval.TrecEvaluation": "result type (of retrieval.evaluate)",
    "AUCPowerResult": "result type (of auc_difference_power)",
    "ConcordanceResult": "result type (checked through the concordance indices)",
    "CumulativeDynamicAUC": "result type (checked through cumulative_dynamic_auc)",
    "ConformalIntervals": "result type (checked through split_conformal_regression)",
    "ConformalSets": "result type (checked through split_conformal_classification)",
    "OffPolicyInterval": "result type (checked through off_policy_interval)",
    "PairedPermutationResult": "result type (checked through paired_permutation_test)",
    "UnitBootstrapResult": "result type (checked through paired_unit_bootstrap)",
    "bootstrap_counts": "the resampler's counts from (seed, replicate, row id), no metric; "
                        "checked by the partition property and against paired_bootstrap's "
                        "replicates in test_row_ids.py",
    "multinomial_totals": "the resampler's pass-1 totals of the distributed multinomial "
                          "design, no metric; checked against the one-machine counts in "
                          "test_multinomial_partitions.py",
    "multinomial_counts": "the resampler's pass-2 counts of the distributed multinomial "
                          "design, no metric; concatenated over partitions equal to the "
                          "one-machine counts in test_multinomial_partitions.py",
    "PairedBootstrapState": "streaming state class (init/update/merge/compute), tested against "
                            "paired_bootstrap_replicates with row_ids, under jit and psum, in "
                            "test_streaming_bootstrap.py",
    "bootstrap_interval": "eager summary of replicates already drawn (NumPy float64 on the "
                          "host), no metric; checked against scipy.stats.bootstrap in "
                          "test_bootstrap_interval.py",
    "SelectivePoint": "result type (checked through selective_risk, coverage_at_risk)",
    "RankingBatch": "result type (checked through ranking_batch_metrics)",
    "QueryMeanSummary": "result type (of QueryMeanState.compute)",
    "ROCHistogramSummary": "result type (of ROCHistogramState.compute)",
    "ConfusionMetrics": "result type (of ConfusionState.summary)",
    "MeanState": "streaming state class: STATE_ENTRIES below, and test_states_rich.py",
    "RegressionState": "streaming state class: STATE_ENTRIES below, and test_states_rich.py",
    "TopKAccuracyState": "streaming state class: STATE_ENTRIES below, and test_states_rich.py",
    "MulticlassROCHistogramState": "streaming state class: STATE_ENTRIES below, and "
                                   "test_multiclass_state.py",
    "MulticlassROCSummary": "result type (of MulticlassROCHistogramState.compute)",
    "MeanSummary": "result type (of MeanState.compute)",
    "RegressionSummary": "result type (of RegressionState.compute)",
    "CalibrationSizeWarning": "warning class",
    "BootstrapDesignWarning": "warning class",
    "probability_sum_tolerance": "a constant of the input rule (a float from a dtype), no metric",
    "QueryMeanState": "streaming state class (init/update/merge/compute), tested with merge, "
                      "jit and shard_map in test_streaming.py",
    "ROCHistogramState": "streaming state class, tested with merge, jit and shard_map in "
                         "test_streaming.py",
    # planning tools: eager calculators on Python numbers, no arrays (tested in test_power.py)
    "auc_difference_power": "planning tool: power from Python numbers (AUCs, counts)",
    "auc_difference_sample_size": "planning tool: a Python int sample size from Python numbers",
    "auc_minimum_detectable_difference": "planning tool: a Python float from Python numbers",
    "mcnemar_power": "planning tool: power from Python numbers",
    "mcnemar_sample_size": "planning tool: a Python int sample size from Python numbers",
    "BradleyTerryResult": "result type (checked through bradley_terry)",
    "BradleyTerryBootstrap": "result type (of bradley_terry_bootstrap)",
    "bradley_terry_bootstrap": "eager NumPy resampling loop over bradley_terry's fits; checked "
                               "against a loop of full fits over the resampler's counts in "
                               "test_arena.py",
    "conformal_rank": "exact integer rank from a Python int and level (Fractions), no arrays; "
                      "checked through conformal_quantile (tested in test_conformal.py)",
}

# Top-level names that are the same object as a registered retrieval function.
ALIASES = {"dcg": "retrieval.dcg", "ndcg": "retrieval.ndcg",
           "r_precision": "retrieval.r_precision", "reciprocal_rank": "retrieval.reciprocal_rank",
           "retrieval.grouped_roc_auc": "grouped_roc_auc"}


def public_callables():
    """Every public callable: ``name`` for calipers.__all__, ``retrieval.name`` for retrieval."""
    out = {}
    for mod, prefix in ((calipers, ""), (R, "retrieval.")):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if callable(obj):
                out[prefix + name] = obj
    return out


# Eager-JAX compile policy of every entry (issue 24 rule 5), checked by
# tests/conformance/test_contracts.py::test_eager_jax_policy_declared:
# "bucketed": rows padded to powers of two at weight zero, O(log n) programs over
# many input lengths; "per_shape": one program per exact input shape; "none: why".
EAGER_JAX = {
    "roc_auc_score": "bucketed",
    "average_precision_score": "bucketed",
    "precision_recall_auc": "bucketed",
    "roc_curve": "none: output with one entry per distinct score (a data-dependent length)",
    "precision_recall_curve": "none: output with one entry per distinct score (a data-dependent length)",
    "precision_at_k": "bucketed",
    "recall_at_k": "bucketed",
    "select_threshold": "none: output with one entry per distinct score (a data-dependent length)",
    "multiclass_roc_auc_score": "bucketed",
    "top_k_accuracy_score": "bucketed",
    "accuracy_score": "bucketed",
    "balanced_accuracy_score": "bucketed",
    "cohen_kappa_score": "bucketed",
    "confusion_matrix": "bucketed",
    "multilabel_confusion_matrix": "per_shape",
    "matthews_corrcoef": "bucketed",
    "f1_score": "bucketed",
    "fbeta_score": "bucketed",
    "precision_score": "bucketed",
    "recall_score": "bucketed",
    "specificity_score": "bucketed",
    "precision_recall_fscore_support": "bucketed",
    "log_loss": "bucketed",
    "brier_score_loss": "bucketed",
    "brier_decomposition": "bucketed",
    "expected_calibration_error": "bucketed",
    "reliability_diagram": "bucketed",
    "fit_temperature": "bucketed",
    "mean_squared_error": "bucketed",
    "root_mean_squared_error": "bucketed",
    "mean_absolute_error": "bucketed",
    "mean_absolute_percentage_error": "bucketed",
    "mean_absolute_scaled_error": "bucketed",
    "r2_score": "bucketed",
    "pass_at_k": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "perplexity": "per_shape",
    "bits_per_byte": "per_shape",
    "bits_per_character": "per_shape",
    "accuracy_with_error": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "multiple_choice_accuracy": "per_shape",
    "grouped_roc_auc": "per_shape",
    "retrieval.dcg": "per_shape",
    "retrieval.ndcg": "per_shape",
    "retrieval.average_precision": "per_shape",
    "retrieval.precision_at_k": "per_shape",
    "retrieval.recall_at_k": "per_shape",
    "retrieval.r_precision": "per_shape",
    "retrieval.reciprocal_rank": "per_shape",
    "delong_roc_variance": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "roc_auc_confint": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "delong_test": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "mcnemar_table": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "mcnemar": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "proportion_confint": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "bradley_terry": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "sprt": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "paired_bootstrap": "none: the resampling engine compiles its own kernels (compile.program)",
    "paired_bootstrap_replicates": "none: the resampling engine compiles its own kernels (compile.program)",
    "many_models_bootstrap": "none: the resampling engine compiles its own kernels (compile.program)",
    "by_group": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "adjust_pvalues": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "risk_coverage_curve": "none: output with one entry per distinct score (a data-dependent length)",
    "aurc": "bucketed",
    "excess_aurc": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "selective_risk": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "coverage_at_risk": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "concordance_index_censored": "bucketed",
    "concordance_index_ipcw": "per_shape",
    "cumulative_dynamic_auc": "per_shape",
    "conformal_quantile": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "split_conformal_regression": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "split_conformal_classification": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "interval_coverage": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "mean_interval_width": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "mean_set_size": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "set_coverage": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "importance_weights": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "effective_sample_size": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "ips_estimate": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "snips_estimate": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "direct_method_estimate": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "doubly_robust_estimate": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
    "off_policy_interval": "none: the resampling engine compiles its own kernels (compile.program)",
    "paired_permutation_test": "none: the resampling engine compiles its own kernels (compile.program)",
    "paired_unit_bootstrap": "none: the resampling engine compiles its own kernels (compile.program)",
    "ranking_batch_metrics": "none: not compiled yet; eager JAX runs it op by op (one compile per primitive and new shape)",
}


# --------------------------------------------------------------------------
# streaming states: "fed any split of rows into batches, merged in any order,
# equals the one-shot function (bit for bit for integer counts)"
# --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class StateEntry:
    """How to feed one state class, and the one-shot functions it must equal.

    ``init(xp)`` an empty state; ``gen(rng, n)`` a dict of NumPy row columns
    (leading dimension ``n``: rows, or queries for a per-query state);
    ``pad`` the garbage a masked padding row holds, per column (never checked);
    ``update(state, cols, mask)`` adds one batch; ``values(state)`` the
    computed values in a fixed order; ``one_shot(cols)`` the one-shot
    functions' values on all rows, in that order; ``exact`` the indices of
    ``values`` that are integer counts (bit for bit). Float sums are compared
    at 1e-12 (1e-5 without x64).

    ``empty``: ``values`` of a state that holds no rows (made by ``init``, or
    fed only padding), NaN for every value that is undefined without rows;
    ``empty_warnings``: how many :class:`UndefinedMetricWarning` its plain
    ``compute()`` issues eagerly (one per state: one per member of a
    collection). The one-shot functions refuse empty input (``ValueError``:
    empty input is invalid) or give these same values.
    """

    name: str
    init: Callable
    gen: Callable
    pad: dict
    update: Callable
    values: Callable
    one_shot: Callable
    exact: tuple = ()
    empty: tuple = ()
    empty_warnings: int = 1


def _sg_classes(rng, n, c=3):
    y = rng.integers(0, c, n)
    y[:c] = np.arange(c)
    return {"y": y, "p": rng.integers(0, c, n)}


def _sg_binary_prob(rng, n):
    # dyadic probabilities: float sums are exact in any order
    return {"y": _binary_labels(rng, n), "p": rng.integers(1, 16, n) / 16}


def _sg_binary_scores(rng, n):
    # k/16 scores are bfloat16 values: the 16-bit histogram is exact
    return {"y": _binary_labels(rng, n), "s": rng.integers(-16, 17, n) / 16}


def _sg_tokens(rng, n):
    return {"lp": -rng.integers(0, 64, n) / 16}


def _sg_queries(rng, n, length=5):
    y = rng.integers(0, 3, (n, length)) * (rng.random((n, length)) < 0.5)
    y[:, 0] = np.maximum(y[:, 0], 1)                      # every query has a relevant item
    s = rng.integers(0, 4, (n, length)) / 4.0             # ties
    m = rng.random((n, length)) < 0.8
    m[:, 0] = True
    return {"y": y, "s": s, "m": m}


def _sg_outputs(rng, n):
    return {"y": _binary_labels(rng, n), "z": rng.integers(-8, 9, n) / 4.0}


def _ranking_one_shot(c, k=3):
    y, s, m = c["y"], c["s"], c["m"]
    Q, L = y.shape
    qid = np.broadcast_to(np.arange(Q)[:, None], (Q, L))[m]
    return [float(R.ndcg(y[m], s[m], qid, k=k).mean),
            float(R.reciprocal_rank(y[m], s[m], qid).mean),
            float(R.recall_at_k(y[m], s[m], qid, k=k).mean),
            np.array([Q, Q, Q])]


def _sg_regression(rng, n):
    # dyadic values: every float sum is exact in any order
    y = rng.integers(-32, 33, n) / 8
    return {"y": y, "p": y + rng.integers(-8, 9, n) / 8}


def _sg_values(rng, n):
    return {"v": rng.integers(-64, 65, n) / 16}


def _sg_topk(rng, n, c=4):
    return {"y": rng.integers(0, c, n), "s": rng.integers(0, 3, (n, c)) / 4}   # ties


def _ovr(c, k=4):
    # one-vs-rest AUC of each class by the binary one-shot function
    return [calipers.roc_auc_score((c["y"] == j).astype(int), c["s"][:, j]) for j in range(k)]


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _sg_paired(rng, n):
    # k/16 scores: the 12-bit histogram key keeps them apart, so the streamed AUC
    # replicates equal the one-shot ones; unique global row ids in any order
    return {"y": _binary_labels(rng, n), "a": rng.integers(-16, 17, n) / 16,
            "b": rng.integers(-16, 17, n) / 16,
            "id": rng.choice(10**6, size=n, replace=False).astype(np.int64)}


_PB_B, _PB_SEED = 40, 11

STATE_ENTRIES = [
    StateEntry("PairedBootstrapState",
               lambda xp: calipers.PairedBootstrapState.init("roc_auc", _PB_B, seed=_PB_SEED,
                                                             xp=xp),
               _sg_paired, {"y": 5, "a": np.nan, "b": np.nan, "id": -3},
               lambda st, c, m: st.update(c["y"], c["a"], c["b"], row_ids=c["id"], mask=m),
               lambda st: list(st.compute()),
               lambda c: list(calipers.paired_bootstrap_replicates(
                   "roc_auc", c["y"], c["a"], c["b"], n_resamples=_PB_B, seed=_PB_SEED,
                   resampling="poisson", row_ids=c["id"])),
               empty=(np.full(_PB_B, math.nan), np.full(_PB_B, math.nan))),
    StateEntry("ConfusionState", lambda xp: calipers.ConfusionState.init(3, xp=xp),
               _sg_classes, {"y": 7, "p": -1},
               lambda st, c, m: st.update(c["y"], c["p"], mask=m),
               lambda st: [st.compute().confusion_matrix, st.compute().accuracy,
                           st.summary(average="macro").fbeta,
                           st.summary(average="weighted").precision,
                           st.summary().matthews_corrcoef, st.summary().cohen_kappa],
               lambda c: [calipers.confusion_matrix(c["y"], c["p"], labels=[0, 1, 2]),
                          calipers.accuracy_score(c["y"], c["p"]),
                          calipers.f1_score(c["y"], c["p"], average="macro", labels=[0, 1, 2]),
                          calipers.precision_score(c["y"], c["p"], average="weighted",
                                                   labels=[0, 1, 2]),
                          calipers.matthews_corrcoef(c["y"], c["p"]),
                          calipers.cohen_kappa_score(c["y"], c["p"])],
               exact=(0,), empty=(np.zeros((3, 3)),) + (math.nan,) * 5),
    StateEntry("CalibrationState", lambda xp: calipers.CalibrationState.init(10, xp=xp),
               _sg_binary_prob, {"y": 3, "p": np.nan},
               lambda st, c, m: st.update(c["y"], c["p"], mask=m),
               lambda st: [st.compute(), st.compute("max"), st.diagram().count],
               lambda c: [calipers.expected_calibration_error(c["y"], c["p"], n_bins=10),
                          calipers.expected_calibration_error(c["y"], c["p"], n_bins=10,
                                                              norm="max"),
                          calipers.reliability_diagram(c["y"], c["p"], n_bins=10).count],
               exact=(2,), empty=(math.nan, math.nan, np.zeros(10))),
    StateEntry("ProbabilityLossState", lambda xp: calipers.ProbabilityLossState.init(xp=xp),
               _sg_binary_prob, {"y": 5, "p": 2.0},
               lambda st, c, m: st.update(c["y"], c["p"], mask=m),
               lambda st: list(st.compute()) + [st.weight],
               lambda c: [calipers.log_loss(c["y"], c["p"]),
                          calipers.brier_score_loss(c["y"], c["p"]), len(c["y"])],
               exact=(2,), empty=(math.nan, math.nan, 0)),
    StateEntry("NLLState", lambda xp: calipers.NLLState.init(xp=xp),
               _sg_tokens, {"lp": np.nan},
               lambda st, c, m: st.update(c["lp"], mask=m, num_bytes=0),
               lambda st: [st.compute().perplexity, st.compute().nll_per_token, st.tokens],
               lambda c: [calipers.perplexity(c["lp"]), -float(np.mean(c["lp"])), len(c["lp"])],
               exact=(2,), empty=(math.nan, math.nan, 0)),
    StateEntry("ROCHistogramState", lambda xp: calipers.ROCHistogramState.init(16, xp=xp),
               _sg_binary_scores, {"y": 2, "s": np.inf},
               lambda st, c, m: st.update(c["y"], c["s"], mask=m),
               lambda st: [st.compute().roc_auc, st.compute().average_precision,
                           st.neg.sum(), st.pos.sum()],
               lambda c: [calipers.roc_auc_score(c["y"], c["s"]),
                          calipers.average_precision_score(c["y"], c["s"]),
                          int(np.sum(c["y"] == 0)), int(np.sum(c["y"] == 1))],
               exact=(2, 3), empty=(math.nan, math.nan, 0, 0)),
    StateEntry("QueryMeanState", lambda xp: calipers.QueryMeanState.init(xp=xp),
               _sg_queries, {"y": -5, "s": np.nan, "m": False},
               lambda st, c, m: st.update(calipers.ranking_batch_metrics(
                   c["y"], c["s"], c["m"], query_mask=m, k=3)),
               lambda st: list(st.compute().mean) + [st.compute().count],
               _ranking_one_shot, exact=(3,),
               empty=(math.nan, math.nan, math.nan, np.zeros(3))),
    StateEntry("StateCollection",
               lambda xp: calipers.StateCollection.init({
                   "cm": calipers.ConfusionState.init(2, xp=xp),
                   "roc": calipers.ROCHistogramState.init(16, xp=xp),
                   "loss": calipers.ProbabilityLossState.init(xp=xp)}),
               _sg_outputs, {"y": 9, "z": np.nan},
               lambda st, c, m: st.update(labels=c["y"], logits=c["z"], mask=m),
               lambda st: [st.compute()["cm"].confusion_matrix, st.compute()["roc"].roc_auc,
                           st.compute()["loss"].log_loss],
               lambda c: [calipers.confusion_matrix(c["y"], (c["z"] >= 0).astype(int),
                                                    labels=[0, 1]),
                          calipers.roc_auc_score(c["y"], c["z"]),
                          calipers.log_loss(c["y"], _sigmoid(c["z"]))],
               exact=(0,), empty=(np.zeros((2, 2)), math.nan, math.nan), empty_warnings=3),
]

STATE_ENTRIES += [
    StateEntry("RegressionState", lambda xp: calipers.RegressionState.init(xp=xp),
               _sg_regression, {"y": np.nan, "p": np.inf},
               lambda st, c, m: st.update(c["y"], c["p"], mask=m),
               lambda st: list(st.compute()) + [st.weight],
               lambda c: [calipers.mean_squared_error(c["y"], c["p"]),
                          calipers.root_mean_squared_error(c["y"], c["p"]),
                          calipers.mean_absolute_error(c["y"], c["p"]),
                          calipers.r2_score(c["y"], c["p"]), len(c["y"])],
               exact=(4,), empty=(math.nan,) * 4 + (0,)),
    StateEntry("MeanState", lambda xp: calipers.MeanState.init(xp=xp),
               _sg_values, {"v": np.nan},
               lambda st, c, m: st.update(c["v"], mask=m),
               lambda st: [st.compute().mean, st.compute().total, st.count],
               lambda c: [float(np.mean(c["v"])), float(np.sum(c["v"])), len(c["v"])],
               exact=(2,), empty=(math.nan, 0, 0)),
    StateEntry("MulticlassROCHistogramState",
               lambda xp: calipers.MulticlassROCHistogramState.init(4, xp=xp),
               _sg_topk, {"y": 11, "s": np.nan},
               lambda st, c, m: st.update(c["y"], c["s"], mask=m),
               lambda st: [st.compute().roc_auc, st.compute("weighted").roc_auc,
                           st.neg.sum(), st.pos.sum()],
               lambda c: [float(np.mean(_ovr(c))),
                          float(np.average(_ovr(c), weights=np.bincount(c["y"], minlength=4))),
                          3 * len(c["y"]), len(c["y"])],
               exact=(2, 3), empty=(math.nan, math.nan, 0, 0)),
    StateEntry("TopKAccuracyState", lambda xp: calipers.TopKAccuracyState.init(4, xp=xp),
               _sg_topk, {"y": 11, "s": np.nan},
               lambda st, c, m: st.update(c["y"], c["s"], mask=m),
               lambda st: [st.compute(1), st.compute(2), st.compute(3)],
               lambda c: [calipers.top_k_accuracy_score(c["y"], c["s"], k=k, labels=range(4))
                          for k in (1, 2, 3)],
               empty=(math.nan,) * 3),
]

STATE_REGISTRY = {e.name: e for e in STATE_ENTRIES}
assert len(STATE_REGISTRY) == len(STATE_ENTRIES), "duplicate state registry names"


def public_states():
    """Public classes that keep the state protocol (``update_outputs`` and ``takes``), the
    collection, and the streaming paired bootstrap (two models' scores and row ids: no
    model-output routing)."""
    out = {}
    for name in calipers.__all__:
        obj = getattr(calipers, name)
        if isinstance(obj, type) and (hasattr(obj, "takes") and hasattr(obj, "update_outputs")
                                      or obj in (calipers.StateCollection,
                                                 calipers.PairedBootstrapState)):
            out[name] = obj
    return out
