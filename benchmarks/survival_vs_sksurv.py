"""Harrell's C: calipers vs scikit-survival and lifelines, side by side, one run.

Run in an environment with both installed (scikit-survival pins its own scikit-learn, so
not the project's main one):  python benchmarks/survival_vs_sksurv.py
Random data: integer times in 0..999 (ties), 40% censored, risk rounded to 1e-4 (ties).
"""

import platform
import subprocess
import sys
import time

import numpy as np

import calipers


def data(n, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, 1000, n).astype(float)
    e = rng.random(n) < 0.6
    # rounded: tied risks are exact, and no two distinct risks are within scikit-survival's
    # tied_tol=1e-8 (which calipers does not apply), so both count the same pairs
    r = np.round(rng.normal(size=n) - t / 500, 4)
    return e, t, r


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    from lifelines.utils import concordance_index as lifelines_ci
    from sksurv.metrics import concordance_index_censored as sk

    cpu = subprocess.run("lscpu | grep 'Model name'", shell=True, capture_output=True,
                         text=True).stdout.strip()
    print(cpu, "|", platform.python_version(), "| numpy", np.__version__)
    for n in (10**4, 10**5):
        e, t, r = data(n)
        tc, a = best(lambda: calipers.concordance_index_censored(e, t, r), 3)
        ts, b = best(lambda: sk(e, t, r), 1)
        tl, c = best(lambda: lifelines_ci(t, -r, e), 1)
        assert abs(c - b[0]) < 1e-12
        same = abs(a.cindex - b[0]) < 1e-12 and tuple(int(v) for v in a[1:]) == tuple(b[1:])
        assert same, (a, b)
        print(f"n={n:>8}: calipers {tc:8.3f} s  scikit-survival {ts:8.3f} s  ratio {ts / tc:8.1f}x"
              f"  lifelines {tl:8.3f} s  ratio {tl / tc:6.1f}x  (C = {a.cindex:.6f}, equal)")
    for n in (10**6,):
        e, t, r = data(n)
        tc, a = best(lambda: calipers.concordance_index_censored(e, t, r), 3)
        tl, c = best(lambda: lifelines_ci(t, -r, e), 1)
        assert abs(c - a.cindex) < 1e-12
        print(f"n={n:>8}: calipers {tc:8.3f} s  scikit-survival not run (O(n^2): about "
              f"100x its 10^5 time)  lifelines {tl:8.3f} s  ratio {tl / tc:6.1f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
