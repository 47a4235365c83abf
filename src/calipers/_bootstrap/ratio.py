"""Statistics under the one resampler's counts: ratio-of-sums replicates and count streams.

Every bootstrap of calipers draws its counts from the counter-based generator
of :mod:`calipers._bootstrap.resample` (plain multinomial rows: ``n`` draws
with replacement, the counts a function of (seed, replicate, row)). A
statistic that is a ratio of sums over the rows, ``sum(c * num) / sum(c *
den)`` for the replicate's counts ``c``, covers the mean of per-unit values
(``den = 1``) and every off-policy estimator (IPS, SNIPS, DM, DR); other
statistics take the counts as integer weights (:func:`replicate_counts`).
No n x B index matrix is built: memory is O(batch * n) whatever B is.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from .._core import xp as B
from .engine import _default_batch
from .resample import draw_batch, make_design, numpy_drawer, seed_words

__all__ = ["ratio_replicates", "replicate_counts"]


def replicate_counts(n: int, n_resamples: int, seed) -> Iterator[np.ndarray]:
    """Multinomial row counts (int64, shape (n,), NumPy) of replicates ``0 .. n_resamples - 1``.

    The counts :func:`calipers.paired_bootstrap` draws for plain rows under
    the same ``seed`` (None: fresh entropy). Memory O(n): one replicate at a time.
    """
    design = make_design("plain", n)
    draw = numpy_drawer(design, ((), None), seed_words(seed))
    for r in range(int(n_resamples)):
        yield np.asarray(draw(r), dtype=np.int64).copy()


def ratio_replicates(num, den, *, n_resamples: int, seed, xp) -> Any:
    """``sum(c * num) / sum(c * den)`` for each replicate's multinomial counts ``c``.

    ``num`` (n,) and ``den`` (n,) or None (then ``sum(c) = n`` divides) in
    namespace ``xp``, of its widest float. Returns ``(n_resamples,)`` in
    ``xp``: NaN where ``sum(c * den)`` is not positive. Replicate ``r``'s
    counts are those of :func:`replicate_counts` (the same integers on NumPy,
    array-api-strict, torch and JAX, eager or under ``jit``: there the draws
    run inside the program, ``lax.map`` over chunks of ``vmap``-ped
    replicates); memory O(batch * n).
    """
    n = int(num.shape[0])
    n_resamples = int(n_resamples)
    design = make_design("plain", n)
    words = seed_words(seed)
    f = num.dtype
    if B.is_jax(xp):
        return _jax_ratio(num, den, design, words, n_resamples, xp)
    draw = numpy_drawer(design, ((), None), words)
    step = max(1, (1 << 22) // max(n, 1))
    parts = []
    for start in range(0, n_resamples, step):
        m = min(step, n_resamples - start)
        c = np.stack([np.asarray(draw(r), dtype=np.float64)
                      for r in range(start, start + m)])      # (m, n), exact small integers
        c = c if B.is_numpy(xp) else xp.asarray(c, dtype=f, device=B.device(num))
        c = xp.astype(c, f)
        parts.append(_ratio(c, num, den, n, xp))
    return xp.concat(parts) if len(parts) > 1 else parts[0]


def _ratio(c, num, den, n, xp):
    tot = xp.sum(c * xp.reshape(num, (1, -1)), axis=1)
    if den is None:
        return tot / n
    dt = xp.sum(c * xp.reshape(den, (1, -1)), axis=1)
    ok = dt > 0
    return B.nan_if(~ok, tot / xp.where(ok, dt, xp.ones_like(dt)), xp)


def _jax_ratio(num, den, design, words, n_resamples, xp):
    import jax
    import jax.numpy as jnp

    n = design.n
    words = jnp.asarray(words, dtype=jnp.uint32)
    batch = min(n_resamples, _default_batch(n))
    n_chunks = -(-n_resamples // batch)
    idtype = B.acc_int(xp)
    f = num.dtype

    def chunk(ix):
        c = draw_batch(design, ((), None), words, ix, idtype)
        return _ratio(xp.astype(c, f), num, den, n, xp)

    idx = jnp.arange(n_chunks * batch, dtype=jnp.uint32).reshape(n_chunks, batch)
    out = jax.lax.map(chunk, idx)
    return out.reshape(-1)[:n_resamples]

