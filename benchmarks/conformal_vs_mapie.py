"""Side-by-side timing: calipers vs MAPIE split-conformal regression, 10^5 calibration rows.

Not a test (no timing assertions). Run in the anchor environment (mapie installed):
    python benchmarks/conformal_vs_mapie.py
Times conformalize + predict_interval (MAPIE, prefit model whose prediction is the feature)
against split_conformal_regression (calipers, NumPy), same data, median of 7 runs each,
and checks that the intervals are equal.
"""

import importlib.util
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

import calipers

_spec = importlib.util.spec_from_file_location(
    "gen", Path(__file__).resolve().parents[1] / "tests" / "data" / "gen_conformal_anchors.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def main(n=100_000, m=100_000, conf=0.9, repeats=7):
    from mapie.regression import SplitConformalRegressor

    rng = np.random.default_rng(0)
    y_cal = rng.normal(size=n)
    p_cal = y_cal + rng.normal(size=n)
    p_test = rng.normal(size=m)
    model = gen.ColumnRegressor().fit(p_cal[:, None], y_cal)

    def run_mapie():
        reg = SplitConformalRegressor(model, confidence_level=conf, prefit=True)
        reg.conformalize(p_cal[:, None], y_cal)
        return reg.predict_interval(p_test[:, None])[1]

    def run_calipers():
        return calipers.split_conformal_regression(y_cal, p_cal, p_test, alpha=1 - conf)

    times = {"mapie": [], "calipers": []}
    for _ in range(repeats):
        for name, fn in (("mapie", run_mapie), ("calipers", run_calipers)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    res, iv = run_calipers(), run_mapie()
    assert np.array_equal(res.upper, iv[:, 1, 0]) and np.array_equal(res.lower, iv[:, 0, 0])
    cpu = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True,
                         text=True).stdout.strip()
    med = {k: statistics.median(v) for k, v in times.items()}
    print(cpu)
    print(f"n_calibration={n} n_test={m} confidence={conf} median of {repeats}")
    print(f"MAPIE    {med['mapie'] * 1e3:8.2f} ms")
    print(f"calipers {med['calipers'] * 1e3:8.2f} ms")
    print(f"ratio MAPIE / calipers = {med['mapie'] / med['calipers']:.1f}")


if __name__ == "__main__":
    main()
