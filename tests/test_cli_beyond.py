"""``calipers report`` for survival (--time/--event), logged data (--propensity) and --selective.

Values are checked against the public library functions on the same arrays, and the
bootstrap intervals against a loop written here over the same resampled rows.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import calipers
from calipers.cli import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def record_resamples(n, n_resamples, seed, groups=None):
    """The row ids of every replicate ``paired_bootstrap`` draws for (n, seed) in indices mode.

    The draws do not depend on the metric, so these are the rows the CLI's metric saw.
    """
    seen = []

    def spy(ids, s):
        seen.append(np.asarray(ids).copy())
        return float(np.mean(s[:1]))

    x = np.zeros(n)
    with warnings.catch_warnings():  # the spy's constant values are degenerate on purpose
        warnings.simplefilter("ignore", calipers.BootstrapDesignWarning)
        calipers.paired_bootstrap(spy, np.arange(n), x, x, n_resamples=n_resamples, seed=seed,
                                  resample_by="indices", groups=groups)
    # two full-data calls first (A, B), then A and B of each replicate on the same ids
    reps = seen[2:]
    assert len(reps) == 2 * n_resamples
    for k in range(n_resamples):
        np.testing.assert_array_equal(reps[2 * k], reps[2 * k + 1])
    return reps[::2]


# --------------------------------------------------------------------------- survival

@pytest.fixture
def surv_file(tmp_path):
    rng = np.random.default_rng(1)
    n = 80
    x = rng.normal(size=n)
    t_event = rng.exponential(np.exp(-0.8 * x))
    t_cens = rng.exponential(1.5, size=n)
    time = np.round(np.minimum(t_event, t_cens), 1)          # tied times on purpose
    event = (t_event <= t_cens).astype(int)
    a = np.round(x + rng.normal(scale=0.5, size=n), 1)        # tied risks on purpose
    b = np.round(x + rng.normal(scale=1.2, size=n), 1)
    clinic = np.arange(n) % 16
    f = tmp_path / "surv.csv"
    f.write_text("time,event,model_a,model_b,clinic\n" + "\n".join(
        f"{time[i]},{'true' if event[i] else 'false'},{a[i]},{b[i]},c{clinic[i]}"
        for i in range(n)))
    return f, time, event, a, b, clinic


def test_survival_values_match_library(capsys, surv_file):
    f, time, event, a, b, _ = surv_file
    code, out, err = run_cli(capsys, "report", str(f), "--time", "time", "--event", "event",
                             "--score", "model_a", "--score", "model_b", "--tau", "1.5",
                             "--n-resamples", "40", "--seed", "7", "--format", "json",
                             "--no-progress")
    assert code == 0, err
    s = json.loads(out)["survival"]
    assert (s["n"], s["n_events"], s["n_censored"]) == (80, event.sum(), 80 - event.sum())
    for col, risk in (("model_a", a), ("model_b", b)):
        m = s["models"][col]
        assert m["harrell_c"]["estimate"] == pytest.approx(
            float(calipers.concordance_index_censored(event, time, risk).cindex))
        assert m["uno_c"]["estimate"] == pytest.approx(
            float(calipers.concordance_index_ipcw(event, time, risk, tau=1.5).cindex))
        assert m["harrell_c"]["ci_low"] <= m["harrell_c"]["estimate"] <= m["harrell_c"]["ci_high"]
    (cmp,) = s["comparisons"]
    assert (cmp["a"], cmp["b"]) == ("model_b", "model_a")
    d = cmp["metrics"]["harrell_c"]
    assert d["difference"] == pytest.approx(s["models"]["model_b"]["harrell_c"]["estimate"]
                                            - s["models"]["model_a"]["harrell_c"]["estimate"])


def test_survival_interval_equals_hand_loop(capsys, surv_file):
    """The percentile interval of the C-index difference, recomputed replicate by replicate."""
    f, time, event, a, b, _ = surv_file
    B, seed = 60, 3
    code, out, _ = run_cli(capsys, "report", str(f), "--time", "time", "--event", "event",
                           "--score", "model_a", "--score", "model_b", "--n-resamples", str(B),
                           "--seed", str(seed), "--format", "json", "--no-progress")
    s = json.loads(out)["survival"]
    diffs, diffs_uno, ca = [], [], []
    for idx in record_resamples(len(time), B, seed):
        cb = calipers.concordance_index_censored(event[idx], time[idx], b[idx]).cindex
        c_a = calipers.concordance_index_censored(event[idx], time[idx], a[idx]).cindex
        diffs.append(float(cb) - float(c_a))
        ca.append(float(c_a))
        with warnings.catch_warnings():  # an undefined replicate is NaN, counted
            warnings.simplefilter("ignore", calipers.UndefinedMetricWarning)
            ub = float(calipers.concordance_index_ipcw(event[idx], time[idx], b[idx]).cindex)
            ua = float(calipers.concordance_index_ipcw(event[idx], time[idx], a[idx]).cindex)
        diffs_uno.append(ub - ua)
    d = s["comparisons"][0]["metrics"]["harrell_c"]
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert (d["ci_low"], d["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    lo, hi = np.percentile(ca, [2.5, 97.5])
    m = s["models"]["model_a"]["harrell_c"]
    assert (m["ci_low"], m["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    u = np.array(diffs_uno)
    u = u[np.isfinite(u)]
    du = s["comparisons"][0]["metrics"]["uno_c"]
    assert du["n_undefined"] == B - u.size
    lo, hi = np.percentile(u, [2.5, 97.5])
    assert (du["ci_low"], du["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert d["share_a_better"] == pytest.approx(np.mean(np.array(diffs) > 0))


def test_survival_text_times_and_clusters(capsys, surv_file):
    f, time, event, a, b, clinic = surv_file
    code, out, _ = run_cli(capsys, "report", str(f), "--time", "time", "--event", "event",
                           "--score", "model_a", "--scores-are-times", "--n-resamples", "20",
                           "--format", "json", "--no-progress")
    s = json.loads(out)["survival"]
    assert s["models"]["model_a"]["harrell_c"]["estimate"] == pytest.approx(
        float(calipers.concordance_index_censored(event, time, -a).cindex))
    assert "negated" in s["direction"]
    code, out, _ = run_cli(capsys, "report", str(f), "--time", "time", "--event", "event",
                           "--score", "model_a", "--score", "model_b", "--groups", "clinic",
                           "--n-resamples", "30", "--no-progress")
    assert code == 0
    assert "30 paired bootstrap replicates (seed 0, cluster)" in out
    assert "paired difference model_b - model_a:" in out and "Harrell's C" in out
    # the cluster design is the library's: the same interval as paired_bootstrap with groups
    code, out, _ = run_cli(capsys, "report", str(f), "--time", "time", "--event", "event",
                           "--score", "model_a", "--score", "model_b", "--groups", "clinic",
                           "--n-resamples", "30", "--format", "json", "--no-progress")
    d = json.loads(out)["survival"]["comparisons"][0]["metrics"]["harrell_c"]

    def harrell(ids, r):
        return float(calipers.concordance_index_censored(event[ids], time[ids], r).cindex)

    res = calipers.paired_bootstrap(harrell, np.arange(len(a)), b, a, n_resamples=30, seed=0,
                                    resample_by="indices",
                                    groups=np.array([f"c{c}" for c in clinic]))
    assert d["ci_low"] == pytest.approx(res.confidence_interval.low)
    assert d["ci_high"] == pytest.approx(res.confidence_interval.high)


@pytest.mark.parametrize("args,message", [
    (["--time", "time", "--score", "model_a"], "--time and --event go together"),
    (["--time", "time", "--event", "event"], "at least one --score COL (risk score)"),
    (["--time", "time", "--event", "event", "--score", "model_a", "--label", "y"],
     "--label does not apply with --time/--event"),
    (["--time", "time", "--event", "event", "--score", "model_a", "--tau", "-1"],
     "--tau must be a finite number > 0"),
    (["--score", "model_a", "--label", "event", "--tau", "1"], "--tau applies with --time"),
    (["--time", "time", "--event", "model_a", "--score", "model_a"],
     "column 'model_a', row 1 (line 2): label"),
])
def test_survival_errors_exit_2(capsys, surv_file, args, message):
    _assert_one_line_error(capsys, surv_file[0], args, message)


def _assert_one_line_error(capsys, path, args, message):
    """``calipers report PATH ARGS`` exits 2 with one line on stderr naming the rule."""
    code, out, err = run_cli(capsys, "report", str(path), *args, "--no-progress")
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_survival_no_event_and_no_file(capsys, tmp_path):
    f = tmp_path / "cens.csv"
    f.write_text("t,e,r\n1,0,0.5\n2,0,0.1\n")
    code, _, err = run_cli(capsys, "report", str(f), "--time", "t", "--event", "e", "--score", "r")
    assert code == 2 and "has no event (all rows censored)" in err
    code, _, err = run_cli(capsys, "report", "--time", "t", "--event", "e", "--score", "r")
    assert code == 2 and "needs a file" in err


# --------------------------------------------------------------------------- off-policy

ACTIONS = ["news", "sport", "music"]


@pytest.fixture
def logged_file(tmp_path):
    rng = np.random.default_rng(2)
    n, A = 150, 3
    pb = rng.dirichlet(np.ones(A) * 2, size=n)
    act = np.array([rng.choice(A, p=p) for p in pb])
    pe = rng.dirichlet(np.ones(A), size=n)
    q = np.round(rng.random((n, A)), 3)
    r = (rng.random(n) < q[np.arange(n), act]).astype(int)
    prop = pb[np.arange(n), act]
    f = tmp_path / "logged.tsv"
    f.write_text("action\tpropensity\treward\t" + "\t".join(f"pi_{a}" for a in ACTIONS) + "\t"
                 + "\t".join(f"q_{a}" for a in ACTIONS) + "\ttarget_logged\n" + "\n".join(
                     f"{ACTIONS[act[i]]}\t{prop[i]:.17g}\t{r[i]}\t"
                     + "\t".join(f"{v:.17g}" for v in pe[i]) + "\t"
                     + "\t".join(f"{v:.17g}" for v in q[i]) + f"\t{pe[i, act[i]]:.17g}"
                     for i in range(n)))
    return f, r, prop, pe, q, act


def test_offpolicy_values_match_library(capsys, logged_file):
    f, r, prop, pe, q, act = logged_file
    code, out, err = run_cli(capsys, "report", str(f), "--propensity", "propensity", "--reward",
                             "reward", "--target", "pi_*", "--action", "action",
                             "--reward-model", "q_", "--max-weight", "4", "--n-resamples", "200",
                             "--seed", "5", "--format", "json", "--no-progress")
    assert code == 0, err
    o = json.loads(out)["offpolicy"]
    assert set(o["estimates"]) == {"ips", "snips", "dm", "dr"}
    for est, e in o["estimates"].items():
        ref = calipers.off_policy_interval(est, r, prop, pe, q, action=act, max_weight=4,
                                           n_resamples=200, seed=5)
        assert e["estimate"] == pytest.approx(float(ref.estimate))
        assert (e["ci_low"], e["ci_high"]) == (pytest.approx(float(ref.low)),
                                               pytest.approx(float(ref.high)))
    assert o["estimates"]["dr"]["estimate"] == pytest.approx(float(
        calipers.doubly_robust_estimate(r, prop, pe, q, action=act, max_weight=4)))
    w = np.minimum(pe[np.arange(len(r)), act] / prop, 4)
    assert o["estimates"]["ips"]["estimate"] == pytest.approx(np.mean(w * r))
    assert o["effective_sample_size"] == pytest.approx(w.sum() ** 2 / (w ** 2).sum())
    # a hand loop over resampled rows for SNIPS: the one resampler's multinomial row
    # counts (paired_bootstrap's plain rows), the rows repeated by their counts explicitly
    from calipers._bootstrap.ratio import replicate_counts
    idx = [np.repeat(np.arange(len(r)), c) for c in replicate_counts(len(r), 200, 5)]
    snips = np.array([(w[i] * r[i]).sum() / w[i].sum() for i in idx])
    lo, hi = np.percentile(snips, [2.5, 97.5])
    e = o["estimates"]["snips"]
    assert (e["ci_low"], e["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))


def test_offpolicy_one_target_column_text(capsys, logged_file):
    f, r, prop, pe, q, act = logged_file
    code, out, _ = run_cli(capsys, "report", str(f), "--propensity", "propensity", "--reward",
                           "reward", "--target", "target_logged", "--min-propensity", "0.1",
                           "--n-resamples", "50", "--no-progress")
    assert code == 0
    assert "n = 150 logged rows" in out and "propensities floored at 0.1" in out
    assert "IPS" in out and "SNIPS" in out and "doubly robust" not in out
    ips = calipers.ips_estimate(r, prop, pe[np.arange(len(r)), act], min_propensity=0.1)
    assert f"{float(ips):.4f}" in out


@pytest.mark.parametrize("args,message", [
    (["--propensity", "propensity", "--reward", "reward"], "(--target is missing)"),
    (["--propensity", "propensity", "--reward", "reward", "--target", "pi_"],
     "--action COL is required"),
    (["--propensity", "propensity", "--reward", "reward", "--target", "pi_", "--action",
      "action", "--reward-model", "q_n"], "matches 1 columns (q_news) but --target has 3"),
    (["--propensity", "propensity", "--reward", "reward", "--target", "zz"],
     "--target 'zz' is neither a column nor the start"),
    (["--propensity", "propensity", "--reward", "reward", "--target", "target_logged",
      "--action", "action"], "--action and --reward-model need one --target column per action"),
    (["--propensity", "propensity", "--reward", "reward", "--target", "target_logged",
      "--score", "pi_news"], "--score does not apply with --propensity"),
    (["--propensity", "propensity", "--reward", "reward", "--target", "target_logged",
      "--max-weight", "0"], "--max-weight must be a finite number > 0"),
    (["--propensity", "reward", "--reward", "reward", "--target", "target_logged"],
     "propensity"),
])
def test_offpolicy_errors_exit_2(capsys, logged_file, args, message):
    _assert_one_line_error(capsys, logged_file[0], args, message)


# --------------------------------------------------------------------------- selective

def test_selective_aurc_and_paired_difference(capsys):
    from importlib import resources
    import csv

    from calipers.cli.report import EXAMPLE

    with open(str(resources.files("calipers") / "data" / EXAMPLE)) as fh:
        rows = list(csv.DictReader(fh))
    y = np.array([int(r["y"]) for r in rows])
    p = {k: np.array([float(r[k]) for r in rows]) for k in ("logreg", "naive_bayes")}
    B = 40
    code, out, _ = run_cli(capsys, "report", "--selective", "--n-resamples", str(B),
                           "--format", "json", "--no-progress")
    assert code == 0
    s = json.loads(out)["selective"]

    def aurc(prob, yy):
        return float(calipers.aurc(np.maximum(prob, 1 - prob), yy, (prob >= 0.5).astype(int)))

    for k in p:
        assert s["models"][k]["aurc"]["estimate"] == pytest.approx(aurc(p[k], y))
    diffs = [aurc(p["naive_bayes"][i], y[i]) - aurc(p["logreg"][i], y[i])
             for i in record_resamples(len(y), B, 0)]
    d = s["comparisons"][0]["metrics"]["aurc"]
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert (d["ci_low"], d["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert d["higher_is_better"] is False
    code, out, _ = run_cli(capsys, "report", "--selective", "--n-resamples", str(B),
                           "--no-progress")
    assert "selective prediction (abstain on the least confident rows" in out
    assert "AURC" in out.split("selective prediction")[1]


def test_parquet_string_labels_and_bool_events(capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "p.parquet"
    pq.write_table(pa.table({"y": ["no", "yes", "yes", "no"], "s": [0.2, 0.9, 0.4, 0.5],
                             "t": [1.0, 2.0, 3.0, 4.0], "e": [True, True, False, True]}), f)
    code, out, err = run_cli(capsys, "report", str(f), "--label", "y", "--pos-label", "yes",
                             "--score", "s", "--format", "json", "--n-resamples", "20",
                             "--no-progress")
    assert code == 0, err
    assert json.loads(out)["models"]["s"]["roc_auc"]["estimate"] == 0.75
    code, out, err = run_cli(capsys, "report", str(f), "--time", "t", "--event", "e",
                             "--score", "s", "--format", "json", "--n-resamples", "20",
                             "--no-progress")
    assert code == 0, err
    e = np.array([1, 1, 0, 1])
    t = np.array([1.0, 2.0, 3.0, 4.0])
    assert json.loads(out)["survival"]["models"]["s"]["harrell_c"]["estimate"] == pytest.approx(
        float(calipers.concordance_index_censored(e, t, np.array([0.2, 0.9, 0.4, 0.5])).cindex))
