"""The benchmark scripts' shared measures: the median wall time of ``repeat`` calls, and a
count of XLA compilations."""

import gc
import logging
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


class CompileCount(logging.Handler):
    """Context manager: ``.n`` counts the XLA compilations JAX logs while it is active."""

    LOGGERS = ("jax._src.interpreters.pxla", "jax._src.dispatch", "jax")

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.n = 0

    def emit(self, record):
        if "Finished XLA compilation" in record.getMessage():
            self.n += 1

    def __enter__(self):
        import jax
        jax.config.update("jax_log_compiles", True)
        for name in self.LOGGERS:
            lg = logging.getLogger(name)
            lg.addHandler(self)
            lg.setLevel(logging.DEBUG)
            lg.propagate = False
        return self

    def __exit__(self, *exc):
        import jax
        jax.config.update("jax_log_compiles", False)
        for name in self.LOGGERS:
            logging.getLogger(name).removeHandler(self)
