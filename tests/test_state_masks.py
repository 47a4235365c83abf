"""Padding masks, all-padding batches and checked count limits in every streaming state.

The core property: fed any split of the rows into batches, each padded with masked rows of
garbage (NaN scores, labels out of range, negative weights), and merged in any order, every
state equals the one-shot function on the unmasked rows: bit for bit for integer counts, to
float rounding for float sums (dyadic inputs make most float sums exact too). References are
brute-force counts, scikit-learn, ``math.fsum`` and calipers' one-shot functions on the
unpadded rows. Modes: NumPy, JAX eager, JAX with ``update`` under ``jax.jit`` (x64 on and off).
"""

import contextlib
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sklearn.metrics as skm
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers
from calipers import (CalibrationState, ConfusionState, NLLState, ProbabilityLossState,
                      QueryMeanState, ROCHistogramState, ranking_batch_metrics)
from calipers import retrieval as R
from conftest import STATE_MODES, load_case, mode_array, mode_context, mode_xp

PAD = 8            # every batch is padded to 8 rows: one compiled shape per state
MODES = STATE_MODES


_mode_ctx = mode_context
_xp = mode_xp
_arr = mode_array


_JITTED = {}


def _updater(mode, fn):
    """``fn(state, *arrays)`` eagerly, or under ``jax.jit`` for the jit modes."""
    if not mode.startswith("jax_jit"):
        return fn
    key = (mode, fn)
    if key not in _JITTED:
        _JITTED[key] = jax.jit(fn)
    return _JITTED[key]


def _merge_in_order(states, order, pairs):
    """Merge by repeatedly joining a drawn adjacent pair, starting from a drawn permutation."""
    states = [states[i] for i in order]
    for j in pairs:
        if len(states) == 1:
            break
        j = j % (len(states) - 1)
        states[j:j + 2] = [states[j].merge(states[j + 1])]
    while len(states) > 1:
        states[0:2] = [states[0].merge(states[1])]
    return states[0]


@st.composite
def _split(draw, max_batches=5):
    """Batch sizes (0 .. PAD - 2 real rows: a size 0 batch is all padding), the merge order."""
    sizes = draw(st.lists(st.integers(0, PAD - 2), min_size=1, max_size=max_batches))
    order = draw(st.permutations(range(len(sizes))))
    pairs = draw(st.lists(st.integers(0, 10), max_size=len(sizes)))
    return sizes, order, pairs


def _pad_rows(rng, real, garbage):
    """Real rows followed by garbage padding rows, to PAD rows; mask True for real rows."""
    n = len(real[0])
    out = []
    for col, g in zip(real, garbage):
        col = np.asarray(col)
        pad = np.asarray(g(rng, PAD - n)).astype(col.dtype)
        out.append(np.concatenate([col, pad]))
    mask = np.arange(PAD) < n
    return out, mask


def _feed(mode, init, update, columns, garbage, split, seed, jitted=False):
    """States of each padded batch, merged in the drawn order."""
    sizes, order, pairs = split
    rng = np.random.default_rng(seed)
    up = update if jitted else _updater(mode, update)
    states, start = [], 0
    for size in sizes:
        real = [c[start:start + size] for c in columns]
        start += size
        cols, mask = _pad_rows(rng, real, garbage)
        if rng.random() < 0.5:
            mask = mask.astype(np.int64)          # 0/1 masks too
        states.append(up(init(), *[_arr(mode, c) for c in cols], _arr(mode, mask)))
    return _merge_in_order(states, order, pairs)


def _bad_label(rng, n):
    return rng.choice([-3, 7, 9], n)


def _nan(rng, n):
    return np.full(n, np.nan)


def _exact_ints(got, want):
    got = np.asarray(got)
    assert np.issubdtype(got.dtype, np.integer), got.dtype
    np.testing.assert_array_equal(got.astype(np.int64), np.asarray(want, dtype=np.int64))


def _rtol(mode):
    return 1e-5 if mode == "jax_jit_x32" else 1e-12


def _settings(mode):
    return settings(max_examples=40 if mode == "numpy" else 10, deadline=None)


ROW = st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(0, 16), st.integers(0, 63),
                st.integers(0, 3))


def _rows(n):
    return st.lists(ROW, min_size=n, max_size=n)


def _columns(rows):
    a = np.array(rows, dtype=np.int64).reshape(-1, 5)
    return a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4]


@pytest.mark.parametrize("mode", MODES)
def test_confusion_state_masked_batches_equal_one_shot(mode):
    def upd(state, yt, yp, m):
        return state.update(yt, yp, mask=m)

    @_settings(mode)
    @given(_split(), st.data())
    def run(split, data):
        rows = data.draw(_rows(sum(split[0])))
        yt, yp, _, _, _ = _columns(rows)
        with _mode_ctx(mode):
            got = _feed(mode, lambda: ConfusionState.init(3, xp=_xp(mode)), upd, [yt, yp],
                        [_bad_label, _bad_label], split, len(rows))
            want = np.zeros((3, 3), dtype=np.int64)
            np.add.at(want, (yt, yp), 1)
            _exact_ints(got.counts, want)
            assert int(got.invalid) == 0
            acc = float(got.compute().accuracy)
            if len(rows):
                assert acc == pytest.approx(skm.accuracy_score(yt, yp), rel=_rtol(mode))
            else:
                assert math.isnan(acc)

    run()


@pytest.mark.parametrize("mode", MODES)
def test_calibration_state_masked_batches_equal_one_shot(mode):
    def upd(state, y, p, m):
        return state.update(y, p, mask=m)

    @_settings(mode)
    @given(_split(), st.data())
    def run(split, data):
        rows = data.draw(_rows(sum(split[0])))
        _, _, k, _, _ = _columns(rows)
        y = np.array([r[0] for r in rows], dtype=np.int64) % 2
        p = k / 16.0                                  # dyadic: every float sum is exact
        with _mode_ctx(mode):
            got = _feed(mode, lambda: CalibrationState.init(10, xp=_xp(mode)), upd, [y, p],
                        [_bad_label, _nan], split, len(rows))
            want = np.bincount(np.minimum(9, np.floor(p * 10).astype(int)), minlength=10)
            _exact_ints(got.weight[0], want)
            assert int(got.invalid) == 0
            ece = float(got.compute())
            if len(rows):
                ref = calipers.expected_calibration_error(y, p, n_bins=10)
                assert ece == pytest.approx(ref, rel=_rtol(mode), abs=1e-7)
            else:
                assert math.isnan(ece)

    run()


@pytest.mark.parametrize("mode", MODES)
def test_weighted_calibration_and_confusion_with_masks(mode):
    def upd(states, y, p, w, m):
        cal, conf = states
        return (cal.update(y, p, mask=m, sample_weight=w),
                conf.update(y, y, mask=m, sample_weight=w))

    @settings(max_examples=25 if mode == "numpy" else 8, deadline=None)
    @given(_split(), st.data())
    def run(split, data):
        rows = data.draw(_rows(sum(split[0])))
        yt, _, k, _, w = _columns(rows)
        y = yt % 2
        p = k / 16.0
        w = w.astype(np.float64)
        xp = _xp(mode)

        class Pair(tuple):
            def merge(self, other):
                return Pair((self[0].merge(other[0]), self[1].merge(other[1])))

        with _mode_ctx(mode):
            init = lambda: Pair((CalibrationState.init(10, xp=xp, weighted=True),  # noqa: E731
                                 ConfusionState.init(2, xp=xp, weighted=True)))
            up = _updater(mode, upd)
            wrapped = lambda s, *a: Pair(up(tuple(s), *a))  # noqa: E731
            cal, conf = _feed(mode, init, wrapped, [y, p, w],
                              [_bad_label, _nan, lambda r, n: -np.ones(n)], split, len(rows),
                              jitted=True)
            assert int(cal.invalid) == 0 and int(conf.invalid) == 0
            want = np.zeros((2, 2))
            np.add.at(want, (y, y), w)
            np.testing.assert_array_equal(np.asarray(conf.counts, dtype=np.float64), want)
            ece = float(cal.compute())
            if w.sum() > 0:   # a zero total weight (all padding or weight 0) adds nothing
                ref = calipers.expected_calibration_error(y, p, n_bins=10, sample_weight=w)
                assert ece == pytest.approx(ref, rel=_rtol(mode), abs=1e-7)
            else:
                assert math.isnan(ece)

    run()


@pytest.mark.parametrize("mode", MODES)
def test_probability_loss_state_masked_batches_equal_one_shot(mode):
    def upd(state, y, p, m):
        return state.update(y, p, mask=m)

    @_settings(mode)
    @given(_split(), st.data())
    def run(split, data):
        rows = data.draw(_rows(sum(split[0])))
        yt, _, k, _, _ = _columns(rows)
        y = yt % 2
        p = (k + 0.5) / 17.5
        with _mode_ctx(mode):
            got = _feed(mode, lambda: ProbabilityLossState.init(xp=_xp(mode)), upd, [y, p],
                        [_bad_label, lambda r, n: np.full(n, 2.0)], split, len(rows))
            _exact_ints(got.weight, len(rows))
            out = got.compute()
            if len(rows):
                rel = 1e-5 if mode == "jax_jit_x32" else 1e-10
                assert float(out.log_loss) == pytest.approx(
                    skm.log_loss(y, p, labels=[0, 1]), rel=rel)
                assert float(out.brier) == pytest.approx(skm.brier_score_loss(y, p), rel=rel)
            else:
                assert math.isnan(float(out.log_loss))

    run()


@pytest.mark.parametrize("mode", MODES)
def test_nll_state_masked_batches_equal_one_shot(mode):
    def upd(state, lp, nb, m):
        return state.update(lp, mask=m, num_bytes=nb)

    @_settings(mode)
    @given(_split(), st.data())
    def run(split, data):
        rows = data.draw(_rows(sum(split[0])))
        _, _, _, j, b = _columns(rows)
        lp = -j / 16.0
        with _mode_ctx(mode):
            # num_bytes per token; padding tokens' values are garbage (NaN, positive)
            got = _feed(mode, lambda: NLLState.init(xp=_xp(mode)), upd, [lp, b],
                        [lambda r, n: np.where(r.random(n) < .5, np.nan, 3.0),
                         lambda r, n: np.zeros(n, dtype=np.int64)], split, len(rows))
            _exact_ints(got.tokens, len(rows))
            _exact_ints(got.bytes, int(b.sum()))
            out = got.compute()
            if len(rows):
                mean = math.fsum(-lp) / len(rows)
                assert float(out.nll_per_token) == pytest.approx(mean, rel=_rtol(mode))
            else:
                assert math.isnan(float(out.perplexity))

    run()


@pytest.mark.parametrize("mode", MODES)
def test_roc_histogram_state_masked_batches_equal_one_shot(mode):
    def upd(state, y, s, w, m):
        return state.update(y, s, mask=m, sample_weight=w)

    @_settings(mode)
    @given(_split(), st.data())
    def run(split, data):
        rows = data.draw(_rows(sum(split[0])))
        yt, _, k, _, w = _columns(rows)
        y = yt % 2
        s = k / 16.0 - 0.5                      # bfloat16 values: the histogram is exact
        with _mode_ctx(mode):
            xp = _xp(mode)
            got = _feed(mode, lambda: ROCHistogramState.init(16, xp=xp), upd, [y, s, w],
                        [_bad_label, _nan, lambda r, n: -np.ones(n, dtype=np.int64)],
                        split, len(rows))
            assert int(got.invalid) == 0
            # one state of the unmasked rows, in one batch: the same histogram, bit for bit
            one = ROCHistogramState.init(16).update(y, s, sample_weight=w) if len(rows) \
                else ROCHistogramState.init(16)
            _exact_ints(got.neg, one.neg)
            _exact_ints(got.pos, one.pos)
            assert int(np.asarray(got.pos).sum()) == int(w[y == 1].sum())
            assert int(np.asarray(got.neg).sum()) == int(w[y == 0].sum())
            auc = float(got.compute().roc_auc)
            if (w[y == 1].sum() > 0) and (w[y == 0].sum() > 0):
                ref = skm.roc_auc_score(y, s, sample_weight=w)
                assert auc == pytest.approx(ref, rel=_rtol(mode))
            else:
                assert math.isnan(auc)

    run()


def _ranking_reference(y, s, mask, k):
    Q, L = y.shape
    qid = np.broadcast_to(np.arange(Q)[:, None], (Q, L))[mask]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = dict(num_segments=Q)
        nd = R.ndcg(y[mask], s[mask], qid, k=k, **kw).values
        rr = R.reciprocal_rank(y[mask], s[mask], qid, **kw).values
        rc = R.recall_at_k(y[mask], s[mask], qid, k=k, **kw).values
    return np.stack([nd, rr, rc])


@pytest.mark.parametrize("mode", MODES)
def test_query_mean_state_padded_queries_equal_one_shot(mode):
    L = 4

    def upd(state, y, s, m):
        return state.update(ranking_batch_metrics(y, s, m, k=2))

    @settings(max_examples=25 if mode == "numpy" else 8, deadline=None)
    @given(_split(max_batches=4), st.data())
    def run(split, data):
        nq = sum(split[0])
        rel = np.array(data.draw(st.lists(st.integers(0, 2), min_size=nq * L, max_size=nq * L)),
                       dtype=np.int64).reshape(nq, L)
        sc = np.array(data.draw(st.lists(st.integers(0, 3), min_size=nq * L, max_size=nq * L)),
                      dtype=np.float64).reshape(nq, L) / 4
        im = np.array(data.draw(st.lists(st.booleans(), min_size=nq * L, max_size=nq * L)),
                      dtype=bool).reshape(nq, L)
        sizes, order, pairs = split
        rng = np.random.default_rng(nq)
        up = _updater(mode, upd)
        with _mode_ctx(mode):
            states, start = [], 0
            for size in sizes:
                # padded queries: garbage relevance and NaN scores, every item masked
                y = np.concatenate([rel[start:start + size], rng.integers(0, 3, (PAD - size, L))])
                s = np.concatenate([sc[start:start + size], np.full((PAD - size, L), np.nan)])
                m = np.concatenate([im[start:start + size], np.zeros((PAD - size, L), bool)])
                start += size
                states.append(up(QueryMeanState.init(xp=_xp(mode)), _arr(mode, y),
                                 _arr(mode, s), _arr(mode, m)))
            got = _merge_in_order(states, order, pairs).compute()
            want = _ranking_reference(rel, sc, im, 2) if im.any() else np.full((3, nq), np.nan)
            real = im.any(axis=1)
            defined = ~np.isnan(want) & real
            _exact_ints(got.count, defined.sum(axis=1))
            _exact_ints(got.n_undefined, (np.isnan(want) & real).sum(axis=1))
            for j in range(3):
                mean = float(np.asarray(got.mean)[j])
                if defined[j].any():
                    assert mean == pytest.approx(float(np.mean(want[j][defined[j]])),
                                                 rel=1e-5 if mode == "jax_jit_x32" else 1e-12)
                else:
                    assert math.isnan(mean)

    run()


# --------------------------------------------------------------------------
# H41: an all-padding batch or shard adds nothing, in every state
# --------------------------------------------------------------------------

H41 = load_case("H41")["inputs"]


def _h41_states(xp, y, p, keep, w, wmask=None):
    """Every state updated with one batch (rows ``keep`` real, weights ``w``; the weighted
    states take ``wmask`` as their mask). Each row is also a query of one item."""
    y, p, keep, w = (xp.asarray(a) for a in (y, p, keep, w))
    s = xp.astype(p, xp.float32) if xp is jnp else p
    return (ConfusionState.init(2, xp=xp).update(y, y, mask=keep),
            CalibrationState.init(10, xp=xp).update(y, p, mask=keep),
            CalibrationState.init(10, xp=xp, weighted=True).update(y, p, sample_weight=w,
                                                                   mask=wmask),
            ProbabilityLossState.init(xp=xp).update(y, p, mask=keep),
            ProbabilityLossState.init(xp=xp, weighted=True).update(y, p, sample_weight=w,
                                                                   mask=wmask),
            NLLState.init(xp=xp).update(-p, mask=keep),
            ROCHistogramState.init(16, xp=xp).update(y, s, mask=keep),
            ROCHistogramState.init(16, xp=xp, weighted=True).update(y, s, sample_weight=w,
                                                                    mask=wmask),
            QueryMeanState.init(xp=xp).update(ranking_batch_metrics(
                xp.reshape(y, (-1, 1)), xp.reshape(p, (-1, 1)), xp.reshape(keep, (-1, 1)),
                k=3)))


def _compute_all(states):
    out = []
    for st_ in states:
        v = st_.compute()
        out.append(np.array([float(x) for x in np.atleast_1d(np.asarray(v)).reshape(-1)]
                            if not isinstance(v, tuple) else
                            np.concatenate([np.atleast_1d(np.asarray(x, dtype=float)).reshape(-1)
                                            for x in v])))
    return out


@pytest.mark.parametrize("mode", ["numpy", "jax_eager", "jax_jit"])
def test_h41_all_padding_batch_adds_nothing_in_every_state(mode):
    y = np.asarray(H41["y"], dtype=np.int64)
    p = np.asarray(H41["p"], dtype=np.float64)
    w2 = np.asarray(H41["batch_2_weight"], dtype=np.float64)
    ones = np.ones(8)
    xp = _xp(mode)
    make = (lambda *a: _h41_states(xp, *a)) if mode != "jax_jit" else jax.jit(
        lambda *a: _h41_states(jnp, *a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = make(y, p, np.ones(8, bool), ones)
        # batch 2: the same rows, all padding (mask False) or all of weight 0: no error,
        # not invalid, and compute() after it equals compute() before it
        second = make(y, p, np.zeros(8, bool), w2)
        for st_ in second:
            assert int(st_.invalid) == 0
        merged = [a.merge(b) for a, b in zip(first, second)]
        before, after = _compute_all(first), _compute_all(merged)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)
    # ECE of the handed data (the one-device value)
    assert before[1][0] == pytest.approx(calipers.expected_calibration_error(y, p, n_bins=10),
                                         rel=1e-12)
    assert before[2][0] == pytest.approx(before[1][0], rel=1e-12)


def test_h41_simulated_4_shard_psum_with_one_shard_of_padding():
    # 4 shards of 8 rows: the handed rows split over shards 0-2, shard 3 is all padding.
    # The psum of the states (the sum of every leaf) equals one state of the rows.
    y = np.asarray(H41["y"], dtype=np.int64)
    p = np.asarray(H41["p"], dtype=np.float64)
    w2 = np.asarray(H41["batch_2_weight"], dtype=np.float64)
    shard_rows = [[0, 1, 2], [3, 4], [5, 6, 7], []]
    make = jax.jit(lambda *a: _h41_states(jnp, *a))
    shards = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rows in shard_rows:
            keep = np.isin(np.arange(8), rows)
            w = np.where(keep, 1.0, w2)               # shard 3: all weights 0
            # padding rows hold garbage: they must take no part
            yg = np.where(keep, y, 5)
            pg = np.where(keep, p, np.nan)
            shards.append(make(yg, pg, keep, w, keep))
        summed = jax.tree_util.tree_map(lambda *leaves: sum(leaves), *shards)
        one = make(y, p, np.ones(8, bool), np.ones(8), np.ones(8, bool))
        for s_sum, s_one in zip(summed, one):
            assert int(s_sum.invalid) == 0
            for f_sum, f_one, name in zip(s_sum, s_one, s_sum._fields):
                f_sum, f_one = np.asarray(f_sum), np.asarray(f_one)
                if np.issubdtype(f_one.dtype, np.integer):
                    np.testing.assert_array_equal(f_sum, f_one, err_msg=name)
                else:
                    np.testing.assert_allclose(f_sum, f_one, rtol=1e-12, err_msg=name)
        got, want = _compute_all(summed), _compute_all(one)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, equal_nan=True)
    assert got[1][0] == pytest.approx(calipers.expected_calibration_error(y, p, n_bins=10),
                                      rel=1e-12)
    assert not np.isnan(got[2][0])


def test_h41_zero_weight_batch_is_not_an_error_eagerly():
    y, p = H41["y"], H41["p"]
    w = np.asarray(H41["batch_2_weight"], dtype=float)
    st_ = CalibrationState.init(10, weighted=True).update(y, p)
    again = st_.update(y, p, sample_weight=w)          # no "positive sum" error
    assert float(again.compute()) == float(st_.compute())
    assert int(again.invalid) == 0


# --------------------------------------------------------------------------
# H42: padded queries are padding, not undefined queries
# --------------------------------------------------------------------------

H42_MASK = np.asarray(load_case("H42")["inputs"]["mask"])


def test_h42_padded_query_is_not_counted():
    y = np.array([[1, 0, 2, 5], [0, 0, 0, 0], [3, 3, 3, 3]])   # query 2 has no relevant item
    s = np.array([[0.5, 0.25, 0.75, np.nan], [0.1, 0.2, 0.3, 0.4], [np.nan] * 4])
    for mask in (H42_MASK.astype(bool), H42_MASK):               # boolean or 0/1
        with pytest.warns(calipers.UndefinedMetricWarning, match="1 of 2 queries"):
            b = ranking_batch_metrics(y, s, mask, k=3)
        np.testing.assert_array_equal(b.query_mask, [True, True, False])
        out = QueryMeanState.init().update(b).compute()
        np.testing.assert_array_equal(out.n_undefined, [1, 1, 1])
        np.testing.assert_array_equal(out.count, [1, 1, 1])
        want = _ranking_reference(y, np.nan_to_num(s), mask.astype(bool), 3)
        np.testing.assert_allclose(out.mean, want[:, 0], rtol=1e-12)
    # the same through a (Q,) query mask, and under jit
    qm = np.array([True, True, False])
    item = H42_MASK.astype(bool) | ~qm[:, None]
    f = jax.jit(lambda y, s, m, q: QueryMeanState.init(xp=jnp).update(
        ranking_batch_metrics(y, s, m, query_mask=q, k=3)))
    out = f(jnp.asarray(y), jnp.asarray(s), jnp.asarray(item), jnp.asarray(qm)).compute()
    np.testing.assert_array_equal(np.asarray(out.n_undefined), [1, 1, 1])
    np.testing.assert_array_equal(np.asarray(out.count), [1, 1, 1])


def test_h42_twenty_padded_queries_leave_n_undefined_at_five():
    rng = np.random.default_rng(42)
    Q, L = 40, 6
    y = rng.integers(1, 3, (Q, L))
    y[:5] = 0                                      # five real queries without relevant items
    s = rng.random((Q, L))
    mask = np.ones((Q, L), bool)
    mask[20:] = False                              # twenty padded queries
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = QueryMeanState.init().update(ranking_batch_metrics(y, s, mask, k=5)).compute()
        # the same queries given as a (Q,) query mask
        out2 = QueryMeanState.init().update(ranking_batch_metrics(
            y, s, mask.any(axis=1).astype(np.int64), k=5)).compute()
    np.testing.assert_array_equal(out.n_undefined, [5, 5, 5])
    np.testing.assert_array_equal(out.count, [15, 15, 15])
    np.testing.assert_array_equal(out2.n_undefined, out.n_undefined)
    np.testing.assert_allclose(out2.mean, out.mean, rtol=1e-15)


def test_query_mean_state_update_takes_a_query_mask():
    vals = np.array([[0.5, np.nan, 0.25, np.nan]])
    out = QueryMeanState.init(1).update(vals, mask=np.array([1, 1, 1, 0])).compute()
    assert int(out.count[0]) == 2 and int(out.n_undefined[0]) == 1
    assert float(out.mean[0]) == 0.375
    with pytest.raises(ValueError, match="mask must have one entry per row"):
        QueryMeanState.init(1).update(vals, mask=np.ones(3, bool))


@pytest.mark.parametrize("jit", [False, True])
def test_ranking_batch_metrics_several_cutoffs_in_one_call(jit):
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, (6, 7))
    s = rng.integers(0, 4, (6, 7)) / 4
    mask = rng.random((6, 7)) < 0.8
    mask[5] = False
    f = (lambda *a, **kw: ranking_batch_metrics(*a, **kw))
    if jit:
        f = jax.jit(lambda y, s, m: ranking_batch_metrics(y, s, m, k=(1, 5)))
        many = f(jnp.asarray(y), jnp.asarray(s), jnp.asarray(mask))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            many = ranking_batch_metrics(y, s, mask, k=(1, 5))
    assert list(many) == [1, 5]
    for k in (1, 5):
        want = _ranking_reference(y, s, mask, k)
        got = np.stack([np.asarray(many[k].ndcg), np.asarray(many[k].reciprocal_rank),
                        np.asarray(many[k].recall)])
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
        np.testing.assert_array_equal(np.asarray(many[k].query_mask), mask.any(axis=1))
    with pytest.raises(ValueError, match="must not repeat"):
        ranking_batch_metrics(y, s, mask, k=(5, 5))


# --------------------------------------------------------------------------
# mask validation
# --------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda m: ConfusionState.init(2).update([0, 1, 1], [0, 1, 0], mask=m),
    lambda m: CalibrationState.init(5).update([0, 1, 1], [0.1, 0.5, 0.9], mask=m),
    lambda m: ProbabilityLossState.init().update([0, 1, 1], [0.1, 0.5, 0.9], mask=m),
    lambda m: NLLState.init().update([-0.1, -0.5, -0.9], mask=m),
    lambda m: ROCHistogramState.init(16).update([0, 1, 1], [0.1, 0.5, 0.9], mask=m),
    lambda m: QueryMeanState.init(1).update(np.array([0.1, 0.5, 0.9]), mask=m),
])
def test_bad_masks_raise_naming_mask(call):
    with pytest.raises(ValueError, match="mask"):
        call(np.array([True, False]))                   # wrong shape
    with pytest.raises(ValueError, match="mask"):
        call(np.array([1, 2, 0]))                        # not 0/1
    with pytest.raises(ValueError, match="mask"):
        call(np.array([0.5, 1.0, 1.0]))
    call(np.array([1, 0, 1]))                            # 0/1 is fine
    call(np.array([1.0, 0.0, 1.0]))


def test_masked_rows_keep_counts_integers_and_need_no_weighted_state():
    for st_ in (ConfusionState.init(2).update([0, 1, 7], [0, 1, 0], mask=[1, 1, 0]),
                CalibrationState.init(5).update([0, 1, 7], [0.1, 0.5, 3.0], mask=[1, 1, 0])):
        f = st_[0]
        assert np.issubdtype(np.asarray(f).dtype, np.integer)
        assert int(np.asarray(f).sum()) == 2
    pl = ProbabilityLossState.init().update([0, 1, 7], [0.1, 0.5, 3.0], mask=[1, 1, 0])
    assert np.issubdtype(np.asarray(pl.weight).dtype, np.integer) and int(pl.weight) == 2


def test_bad_mask_under_jit_marks_the_batch_invalid():
    f = jax.jit(lambda y, m: ConfusionState.init(2, xp=jnp).update(y, y, mask=m))
    st_ = f(jnp.asarray([0, 1, 1]), jnp.asarray([1, 2, 0]))
    assert int(st_.invalid) == 1 and np.isnan(float(st_.compute().accuracy))


# --------------------------------------------------------------------------
# checked integer limits (int32 on JAX without x64, int64 elsewhere)
# --------------------------------------------------------------------------

I32 = 2 ** 31 - 1
I64 = 2 ** 63 - 1


def test_int32_histogram_weights_raise_eagerly_before_they_wrap():
    # Integer weights summing past 2**31 - 1 wrapped silently (total positive weight
    # -2147483648, AUC -1.125); now a ValueError that states the limit.
    y = np.array([1, 1, 0, 0])
    s = np.array([0.75, 0.5, 0.25, 0.5], dtype=np.float32)
    w = np.array([2 ** 30, 2 ** 30, 1, 1], dtype=np.int32)
    with jax.enable_x64(False):
        st_ = ROCHistogramState.init(16, xp=jnp)
        with pytest.raises(ValueError, match="2147483647"):
            st_.update(jnp.asarray(y), jnp.asarray(s), sample_weight=jnp.asarray(w))
        # accumulated over updates: the state's total is checked before it would wrap
        half = st_.update(jnp.asarray(y), jnp.asarray(s),
                          sample_weight=jnp.asarray(np.array([2 ** 30, 2 ** 29, 1, 1], np.int32)))
        with pytest.raises(ValueError, match="2147483647"):
            half.update(jnp.asarray(y), jnp.asarray(s),
                        sample_weight=jnp.asarray(np.array([2 ** 29, 2 ** 29, 1, 1], np.int32)))
        with pytest.raises(ValueError, match="2147483647"):
            half.merge(half)
        # NumPy int64 weights that int32 cannot hold are refused before the conversion
        with pytest.raises(ValueError, match="2147483647"):
            st_.update(y, s, sample_weight=np.array([3_000_000_000, 1, 1, 1]))


def test_int32_limit_under_jit_is_a_flag_that_makes_compute_nan():
    with jax.enable_x64(False):
        y = jnp.asarray(np.array([1, 1, 0, 0], np.int32))
        s = jnp.asarray([0.75, 0.5, 0.25, 0.5], dtype=jnp.float32)
        h = jax.jit(lambda st_, y, w: st_.update(y, s, sample_weight=w))
        f = lambda st_, w: h(st_, y, w)  # noqa: E731
        st0 = ROCHistogramState.init(16, xp=jnp)
        for yy, w in (([1, 1, 0, 0], [2 ** 30, 2 ** 30, 1, 1]),          # wraps to < 0
                      ([1, 1, 1, 0], [2 ** 31 - 1] * 3 + [1])):          # wraps to > 0
            bad = h(st0, jnp.asarray(np.array(yy, np.int32)), jnp.asarray(np.array(w, np.int32)))
            assert int(bad.invalid) >= 1
            assert np.all(np.isnan([float(v) for v in bad.compute()]))
        ok = f(st0, jnp.asarray(np.array([2 ** 29, 2 ** 29, 1, 1], np.int32)))
        assert int(ok.invalid) == 0
        want = skm.roc_auc_score([1, 1, 0, 0], [0.75, 0.5, 0.25, 0.5],
                                 sample_weight=[2 ** 29, 2 ** 29, 1, 1])
        assert float(ok.compute().roc_auc) == pytest.approx(want, rel=1e-6)
        # merges under jit: flagged too
        g = jax.jit(lambda a, b: a.merge(b))
        big = f(st0, jnp.asarray(np.array([2 ** 30, 2 ** 29, 1, 1], np.int32)))
        merged = g(big, big)
        assert int(merged.invalid) >= 1 and np.isnan(float(merged.compute().roc_auc))
        # a psum that wrapped (a plain sum of the leaves) shows a negative count: NaN
        wrapped = jax.tree_util.tree_map(lambda a, b: a + b, big, big)
        assert np.isnan(float(wrapped.compute().roc_auc))


@pytest.mark.parametrize("make, update", [
    (lambda xp: ConfusionState.init(2, xp=xp), lambda s: s.update([0, 1], [0, 1])),
    (lambda xp: CalibrationState.init(4, xp=xp), lambda s: s.update([0, 1], [0.2, 0.9])),
    (lambda xp: ProbabilityLossState.init(xp=xp), lambda s: s.update([0, 1], [0.2, 0.9])),
    (lambda xp: NLLState.init(xp=xp), lambda s: s.update([-0.5, -1.0])),
    (lambda xp: ROCHistogramState.init(16, xp=xp), lambda s: s.update([0, 1], [0.2, 0.9])),
    (lambda xp: QueryMeanState.init(1, xp=xp), lambda s: s.update(np.array([0.5, np.nan]))),
])
@pytest.mark.parametrize("mode", ["numpy_int64", "jax_int32", "jax_int32_jit"])
def test_every_count_has_a_checked_limit(make, update, mode):
    xp = np if mode == "numpy_int64" else jnp
    limit = I64 if mode == "numpy_int64" else I32
    ctx = jax.enable_x64(False) if mode.startswith("jax") else contextlib.nullcontext()
    with ctx, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        empty = make(xp)
        # a state at the limit: one count of every integer field holds it (a valid state),
        # so the next rows would pass it
        fields = []
        for name, f in zip(empty._fields, empty):
            a = np.array(np.asarray(f))
            if np.issubdtype(a.dtype, np.integer) and name != "invalid":
                a.reshape(-1)[0] = limit
            fields.append(xp.asarray(a))
        near = type(empty)(*fields)
        assert near.compute() is not None
        if mode == "jax_int32_jit":
            out = jax.jit(update)(near)
            assert int(out.invalid) >= 1
            v = out.compute()
            vals = [v] if not isinstance(v, tuple) else list(v)
            floats = [np.asarray(x) for x in vals if np.issubdtype(np.asarray(x).dtype,
                                                                   np.floating)]
            assert floats and all(np.all(np.isnan(x)) for x in floats)
        else:
            with pytest.raises(ValueError, match=str(limit)):
                update(near)


def test_masks_on_array_api_strict_without_boolean_indexing():
    # no boolean indexing: padding rows are replaced by valid stand-ins and weigh 0
    import array_api_strict as xps

    y = np.array([0, 1, 1, 0, 1, 9, -2])
    p = np.array([0.25, 0.75, 0.5, 0.5, 1.0, np.nan, 3.0])
    keep = np.array([True] * 5 + [False] * 2)
    with xps.ArrayAPIStrictFlags(boolean_indexing=False, data_dependent_shapes=False):
        a = lambda v: xps.asarray(v)  # noqa: E731
        got = [ConfusionState.init(2, xp=xps).update(a(y), a(y), mask=a(keep)),
               CalibrationState.init(4, xp=xps).update(a(y), a(p), mask=a(keep)),
               ProbabilityLossState.init(xp=xps).update(a(y), a(p), mask=a(keep)),
               ROCHistogramState.init(16, xp=xps).update(a(y), a(p), mask=a(keep))]
    want = [ConfusionState.init(2).update(y[keep], y[keep]),
            CalibrationState.init(4).update(y[keep], p[keep]),
            ProbabilityLossState.init().update(y[keep], p[keep]),
            ROCHistogramState.init(16).update(y[keep], p[keep])]
    for g, w in zip(got, want):
        for fg, fw in zip(g, w):
            np.testing.assert_allclose(np.asarray(fg, dtype=float), np.asarray(fw, dtype=float),
                                       rtol=1e-15)
