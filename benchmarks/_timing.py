"""The one timer every benchmark script uses: median wall time of ``repeat`` calls."""

import gc
import statistics
import time


def median_time(fn, repeat):
    """Median seconds of ``repeat`` calls of ``fn()``, garbage collected before each."""
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)
