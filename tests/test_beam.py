"""calipers.beam against one machine: CombineFns on the DirectRunner, by slice."""

import functools
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

beam = pytest.importorskip("apache_beam")

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402

import calipers  # noqa: E402
import calipers.beam as cb  # noqa: E402

RNG = np.random.default_rng(0)
N = 240
Y = RNG.integers(0, 2, N)
SCORE = np.round(RNG.random(N), 2)                    # ties, across elements too
PA = (SCORE > .5).astype(np.int64)
PB = RNG.integers(0, 2, N)
PROB_A = np.clip(0.3 * Y + 0.7 * RNG.random(N), 0, 1)
PROB_B = RNG.random(N)
IDS = RNG.permutation(N).astype(np.int64) * 7 + 3    # global ids: neither positions nor sorted
KEY = RNG.integers(0, 3, N)
KEYS = sorted(set(KEY.tolist()))
B, SEED = 16, 11


def _options(mode):
    return PipelineOptions(runner="DirectRunner", direct_num_workers=2,
                           direct_running_mode=mode)


def _run(mode, elements, fn, tmp_path):
    """``CombinePerKey(fn)`` over ``(key, element)`` pairs; ``{key: output}`` read back."""
    out = str(tmp_path)
    with beam.Pipeline(options=_options(mode)) as p:
        _ = (p | beam.Create(elements, reshuffle=False)
               | beam.CombinePerKey(fn)
               | beam.Map(lambda kv, d=out: pickle.dump(
                   kv, open(f"{d}/{kv[0]}.pkl", "wb"))))
    got = {}
    for k in KEYS:
        with open(tmp_path / f"{k}.pkl", "rb") as f:
            key, value = pickle.load(f)
        got[key] = value
    return got


def _rows(*cols):
    """One row element per row: ``(key, (scalar, ...))``."""
    return [(int(KEY[i]), tuple(c[i].item() for c in cols)) for i in range(N)]


def _batches(*cols, cuts=(0, 17, 18, 100, 181, N)):
    """Batch elements: each slice's rows of each chunk as a tuple of arrays (one is empty)."""
    out = []
    for i, j in zip(cuts[:-1], cuts[1:]):
        for k in KEYS:
            sel = np.flatnonzero(KEY[i:j] == k) + i
            out.append((k, tuple(c[sel] for c in cols)))
    return out


def _one_machine_confusion(k, pred):
    sel = KEY == k
    return calipers.ConfusionState.init(2).update(Y[sel], pred[sel])


def _one_machine_replicates(metric_fn, k, a, b):
    sel = KEY == k
    return calipers.paired_bootstrap_replicates(
        metric_fn, Y[sel], a[sel], b[sel], n_resamples=B, seed=SEED, resampling="poisson",
        row_ids=IDS[sel])


# --------------------------------------------------------------------------
# in memory: states and bootstrap sums, rows and batches
# --------------------------------------------------------------------------

def test_states_rows_and_batches(tmp_path):
    init = functools.partial(calipers.ConfusionState.init, 2)
    elements = _rows(Y, PA) + _batches(Y, PA)[::-1]      # rows twice over: once each way
    got = _run("in_memory", elements, cb.StateCombineFn(init, output="state", batch_size=7),
               tmp_path)
    assert sorted(got) == KEYS
    for k in KEYS:
        one = _one_machine_confusion(k, PA)
        np.testing.assert_array_equal(got[k].counts, 2 * one.counts)


def test_histogram_state_compute(tmp_path):
    fn = cb.StateCombineFn(lambda: calipers.ROCHistogramState.init(16))
    got = _run("in_memory", _batches(Y, SCORE), fn, tmp_path)
    for k in KEYS:
        sel = KEY == k
        want = calipers.ROCHistogramState.init(16).update(Y[sel], SCORE[sel]).compute()
        assert got[k].roc_auc == want.roc_auc
        # the histogram key here is exact on two-decimal scores: the one-shot AUC
        assert got[k].roc_auc == calipers.roc_auc_score(Y[sel], SCORE[sel])


def test_paired_bootstrap_state_through_update(tmp_path):
    fn = cb.StateCombineFn(
        lambda: calipers.PairedBootstrapState.init("accuracy", B, seed=SEED),
        update=lambda s, y, a, b, ids: s.update(y, a, b, row_ids=ids))
    got = _run("in_memory", _batches(Y, PA, PB, IDS), fn, tmp_path)
    for k in KEYS:
        ea, eb = _one_machine_replicates(calipers.accuracy_score, k, PA, PB)
        np.testing.assert_array_equal(got[k][0], ea)
        np.testing.assert_array_equal(got[k][1], eb)


def test_bootstrap_accuracy_rows_bit_for_bit(tmp_path):
    fn = cb.PairedBootstrapCombineFn("accuracy", n_resamples=B, seed=SEED, batch_size=5)
    got = _run("in_memory", _rows(Y, PA, PB, IDS), fn, tmp_path)
    for k in KEYS:
        ea, eb = _one_machine_replicates(calipers.accuracy_score, k, PA, PB)
        np.testing.assert_array_equal(got[k][0], ea)
        np.testing.assert_array_equal(got[k][1], eb)


def test_bootstrap_log_loss_batches_to_rounding(tmp_path):
    fn = cb.PairedBootstrapCombineFn("log_loss", n_resamples=B, seed=SEED, batch_size=9)
    got = _run("in_memory", _batches(Y, PROB_A, PROB_B, IDS), fn, tmp_path)
    for k in KEYS:
        ea, eb = _one_machine_replicates(calipers.log_loss, k, PROB_A, PROB_B)
        np.testing.assert_allclose(got[k][0], ea, rtol=1e-12)
        np.testing.assert_allclose(got[k][1], eb, rtol=1e-12)


# --------------------------------------------------------------------------
# multi_processing: accumulators pickled between worker processes
# --------------------------------------------------------------------------

def test_multi_processing_states_and_bootstrap(tmp_path):
    rows = _rows(Y, PA, PB, IDS)
    # the state and the bootstrap sums of the same elements, in one pipeline
    out = str(tmp_path)
    state_fn = cb.StateCombineFn(functools.partial(calipers.ConfusionState.init, 2),
                                 update=lambda s, y, a, b, ids: s.update(y, a),
                                 output="state", batch_size=13)
    boot_fn = cb.PairedBootstrapCombineFn("accuracy", n_resamples=B, seed=SEED,
                                          output="sums", batch_size=13)
    with beam.Pipeline(options=_options("multi_processing")) as p:
        pcoll = p | beam.Create(rows)
        for name, fn in (("state", state_fn), ("boot", boot_fn)):
            _ = (pcoll | f"{name} combine" >> beam.CombinePerKey(fn)
                       | f"{name} write" >> beam.Map(lambda kv, d=out, n=name: pickle.dump(
                           (kv, os.getpid()), open(f"{d}/{n}-{kv[0]}.pkl", "wb"))))
    for k in KEYS:
        with open(tmp_path / f"state-{k}.pkl", "rb") as f:
            (key, state), pid = pickle.load(f)
        assert key == k
        assert pid != os.getpid()         # combined in a worker process, not this one
        np.testing.assert_array_equal(state.counts, _one_machine_confusion(k, PA).counts)
        with open(tmp_path / f"boot-{k}.pkl", "rb") as f:
            (_, (sa, sb, drawn)), _ = pickle.load(f)
        ea, eb = _one_machine_replicates(calipers.accuracy_score, k, PA, PB)
        np.testing.assert_array_equal(sa / drawn, ea)
        np.testing.assert_array_equal(sb / drawn, eb)
        # the sums are the integers: counts of the slice's rows by their ids
        sel = KEY == k
        c = calipers.bootstrap_counts(IDS[sel], np.arange(B), seed=SEED)
        np.testing.assert_array_equal(sa, c @ (PA[sel] == Y[sel]))
        np.testing.assert_array_equal(drawn, c.sum(axis=1))


# --------------------------------------------------------------------------
# the combine protocol without a pipeline, options, pickling, lazy import
# --------------------------------------------------------------------------

def test_protocol_by_hand_equals_one_state():
    fn = cb.StateCombineFn(functools.partial(calipers.ConfusionState.init, 2), output="state",
                           batch_size=4)
    accs = []
    for lo in range(0, N, 50):                        # five "bundles", merged in reverse
        acc = fn.create_accumulator()
        for i in range(lo, min(lo + 50, N)):
            acc = fn.add_input(acc, (int(Y[i]), int(PA[i])))
        accs.append(pickle.loads(pickle.dumps(fn.compact(acc))))
    merged = fn.merge_accumulators(reversed(accs))
    np.testing.assert_array_equal(fn.extract_output(merged).counts,
                                  calipers.ConfusionState.init(2).update(Y, PA).counts)
    assert isinstance(fn, beam.CombineFn)
    assert pickle.loads(pickle.dumps(type(fn))) is cb.StateCombineFn


def test_accumulator_of_a_per_configuration_state_pickles():
    # PairedBootstrapState is of a class made per configuration: the accumulator holds arrays
    fn = cb.StateCombineFn(lambda: calipers.PairedBootstrapState.init("accuracy", B, seed=1),
                           update=lambda s, y, a, b, ids: s.update(y, a, b, row_ids=ids))
    acc = fn.add_input(fn.create_accumulator(), (Y[:9], PA[:9], PB[:9], IDS[:9]))
    acc = pickle.loads(pickle.dumps(acc))
    acc2 = fn.add_input(fn.create_accumulator(), (Y[9:], PA[9:], PB[9:], IDS[9:]))
    da, db = fn.extract_output(fn.merge_accumulators([acc, acc2]))
    ea, eb = calipers.paired_bootstrap_replicates(
        calipers.accuracy_score, Y, PA, PB, n_resamples=B, seed=1, resampling="poisson",
        row_ids=IDS)
    np.testing.assert_array_equal(da, ea)
    np.testing.assert_array_equal(db, eb)


def test_errors_and_options():
    init = functools.partial(calipers.ConfusionState.init, 2)
    with pytest.raises(ValueError, match="output"):
        cb.StateCombineFn(init, output="summary")
    with pytest.raises(ValueError, match="batch_size"):
        cb.StateCombineFn(init, batch_size=0)
    with pytest.raises(ValueError, match="init"):
        cb.StateCombineFn(3)
    with pytest.raises(ValueError, match="metric"):
        cb.PairedBootstrapCombineFn("roc_auc")
    with pytest.raises(ValueError, match="n_resamples"):
        cb.PairedBootstrapCombineFn("accuracy", n_resamples=0)
    with pytest.raises(ValueError, match="Generator"):
        cb.PairedBootstrapCombineFn("accuracy", seed=np.random.default_rng(0))
    fn = cb.PairedBootstrapCombineFn("accuracy", n_resamples=B, seed=0)
    with pytest.raises(ValueError, match="row id"):
        fn.add_input(fn.create_accumulator(), (Y[:3], PA[:3], PB[:3], np.array([0, -1, 2])))
    with pytest.raises(ValueError, match="one length"):
        fn.add_input(fn.create_accumulator(), (Y[:3], PA[:3], PB[:2], IDS[:3]))
    ll = cb.PairedBootstrapCombineFn("log_loss", n_resamples=B, seed=0)
    with pytest.raises(ValueError, match="probabilities"):
        ll.add_input(ll.create_accumulator(), (Y[:2], np.array([.5, 1.5]), PROB_B[:2], IDS[:2]))
    # an invalid row reaches the state's own check when the buffer is added
    st = cb.StateCombineFn(init, batch_size=2)
    acc = st.add_input(st.create_accumulator(), (0, 1))
    with pytest.raises(ValueError):
        st.add_input(acc, (0, 5))
    # seed=None: fresh entropy drawn once, so every copy of the fn draws the same counts
    fresh = cb.PairedBootstrapCombineFn("accuracy", n_resamples=B)
    copy = pickle.loads(pickle.dumps(fresh))
    a1 = fresh.extract_output(fresh.add_input(fresh.create_accumulator(), (Y, PA, PB, IDS)))
    a2 = copy.extract_output(copy.add_input(copy.create_accumulator(), (Y, PA, PB, IDS)))
    np.testing.assert_array_equal(a1[0], a2[0])


def test_a_wrong_expectation_fails(tmp_path):
    # the read-back comparison can fail: another seed gives other replicates
    fn = cb.PairedBootstrapCombineFn("accuracy", n_resamples=B, seed=SEED + 1)
    got = _run("in_memory", _batches(Y, PA, PB, IDS), fn, tmp_path)
    ea, _ = _one_machine_replicates(calipers.accuracy_score, KEYS[0], PA, PB)
    assert not np.array_equal(got[KEYS[0]][0], ea)


def test_import_calipers_does_not_import_beam():
    code = ("import sys, calipers, calipers.beam; "
            "assert 'apache_beam' not in sys.modules; "
            "calipers.beam.StateCombineFn; assert 'apache_beam' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_auc_bootstrap_state_by_hand_equals_one_update():
    init = functools.partial(calipers.PairedBootstrapState.init, "roc_auc", B, seed=SEED)
    fn = cb.StateCombineFn(init, update=lambda s, y, a, b, ids: s.update(y, a, b, row_ids=ids),
                           batch_size=10)
    accs = [fn.create_accumulator() for _ in range(3)]
    for i in range(N):                                # rows dealt to three accumulators
        fn.add_input(accs[i % 3], (int(Y[i]), float(SCORE[i]), float(PROB_B[i]), int(IDS[i])))
    accs = [pickle.loads(pickle.dumps(a)) for a in accs]
    da, db = fn.extract_output(fn.merge_accumulators(accs[::-1]))
    ea, eb = init().update(Y, SCORE, PROB_B, row_ids=IDS).compute()
    np.testing.assert_array_equal(da, ea)
    np.testing.assert_array_equal(db, eb)
    assert np.isfinite(da).all()


# --------------------------------------------------------------------------
# exact AUC and AP by a range shuffle
# --------------------------------------------------------------------------

Y1 = np.where(KEY == KEYS[-1], 1, Y)                  # the last slice: positives only
W = RNG.integers(0, 3, N)


def _ranked(mode, elements, tmp_path, n_ranges=4):
    """Both transforms over the same ``(key, element)`` pairs: ``{key: (auc, ap)}``."""
    out = str(tmp_path)
    with beam.Pipeline(options=_options(mode)) as p:
        pcoll = p | beam.Create(elements)
        for name, t in (("auc", cb.ExactRocAuc), ("ap", cb.ExactAveragePrecision)):
            _ = (pcoll | f"{name} exact" >> t(n_ranges=n_ranges)
                       | f"{name} write" >> beam.Map(lambda kv, d=out, n=name: pickle.dump(
                           kv, open(f"{d}/{n}-{kv[0]}.pkl", "wb"))))
    got = {}
    for k in KEYS:
        vals = []
        for name in ("auc", "ap"):
            with open(tmp_path / f"{name}-{k}.pkl", "rb") as f:
                key, v = pickle.load(f)
            assert key == k
            vals.append(v)
        got[k] = tuple(vals)
    return got


def _check_ranked(got, y, w=None):
    import warnings

    import calipers.dask  # noqa: F401  (the distributed AP to compare with)
    dask = pytest.importorskip("dask")

    for k in KEYS:
        sel = KEY == k
        ws = None if w is None else w[sel]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", calipers.UndefinedMetricWarning)
            auc = calipers.roc_auc_score(y[sel], SCORE[sel], sample_weight=ws)
        ap_one = calipers.average_precision_score(y[sel], SCORE[sel], sample_weight=ws)
        if np.isnan(auc):
            assert np.isnan(got[k][0])
        else:
            assert got[k][0] == auc                              # bit for bit
        np.testing.assert_allclose(got[k][1], ap_one, rtol=1e-13)
        cols = {"y": y[sel], "s": SCORE[sel]} if w is None else \
            {"y": y[sel], "s": SCORE[sel], "w": w[sel]}
        with dask.config.set(scheduler="sync"):
            ap_dask = calipers.dask.average_precision_score(
                [dask.delayed(cols)], "y", "s", sample_weight=None if w is None else "w")
        assert got[k][1] == ap_dask                              # one double everywhere


def test_exact_auc_ap_rows_and_batches(tmp_path):
    elements = _rows(Y1, SCORE) + _batches(Y1, SCORE)[::-1]       # every row twice
    got = _ranked("in_memory", elements, tmp_path)
    _check_ranked(got, Y1, np.full(N, 2))


def test_exact_auc_ap_weighted_batches(tmp_path):
    got = _ranked("in_memory", _batches(Y, SCORE, W), tmp_path, n_ranges=3)
    _check_ranked(got, Y, W)


def test_exact_auc_ap_multi_processing(tmp_path):
    got = _ranked("multi_processing", _rows(Y1, SCORE), tmp_path, n_ranges=5)
    _check_ranked(got, Y1)


def test_exact_transform_errors(tmp_path):
    with pytest.raises(ValueError, match="n_ranges"):
        cb.ExactRocAuc(n_ranges=0)
    with pytest.raises(Exception, match="y_true must contain only 0 and 1"):
        _ranked("in_memory", [(KEYS[0], (2, 0.5))] + _rows(Y, SCORE), tmp_path)
    with pytest.raises(Exception, match=r"y_score must be finite .*calipers.beam"):
        _ranked("in_memory", [(KEYS[0], (1, float("nan")))] + _rows(Y, SCORE), tmp_path)


# --------------------------------------------------------------------------
# faults: the one-shot function's ValueError, element by element
# --------------------------------------------------------------------------

def _rule(msg):
    return msg.split("; element")[0].split("; it has")[0]


@pytest.mark.parametrize("metric, column, value", [
    ("accuracy", 1, np.nan), ("accuracy", 2, np.inf), ("log_loss", 1, 1.5),
    ("log_loss", 2, np.nan), ("log_loss", 0, 2)])
def test_bootstrap_fault_is_the_one_shot_error(metric, column, value):
    cols = [Y.astype(float), PA.astype(float), PB.astype(float)] if metric == "accuracy" else \
        [Y.astype(float), PROB_A.copy(), PROB_B.copy()]
    cols[column][5] = value
    fn_one = calipers.accuracy_score if metric == "accuracy" else "log_loss"
    with pytest.raises(ValueError) as one:
        calipers.paired_bootstrap_replicates(fn_one, *cols, n_resamples=3, seed=0)
    fn = cb.PairedBootstrapCombineFn(metric, n_resamples=3, seed=0)
    with pytest.raises(ValueError) as dist:
        fn.add_input(fn.create_accumulator(), (*cols, IDS))
    assert _rule(str(dist.value)) == _rule(str(one.value)), (dist.value, one.value)
    if "; element" in str(one.value):
        assert "element 5 is" in str(dist.value)
    if column:
        assert ("y_score_a" if column == 1 else "y_score_b") in str(dist.value)


def test_bootstrap_refuses_minus_one_labels():
    ll = cb.PairedBootstrapCombineFn("log_loss", n_resamples=3, seed=0)
    with pytest.raises(ValueError, match="only 0 and 1 in calipers.beam"):
        ll.add_input(ll.create_accumulator(), (2 * Y - 1, PROB_A, PROB_B, IDS))
