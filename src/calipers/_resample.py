"""Bootstrap resampling designs: counts per row, drawn in layout order.

Plain, stratified, cluster and moving-block designs, multinomial or Poisson
counts; one random stream per replicate (NumPy ``SeedSequence`` spawn keys,
JAX ``fold_in``), so answers do not depend on batching or threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _backend as B


# --------------------------------------------------------------------------
# resampling designs: draw counts per row, in layout order
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Design:
    """Static facts of the resampling design (hashable: part of the compile cache key).

    Arrays live in ``data`` (a tuple, passed to compiled code as an argument):
    ``stratified``: (slot_low, slot_high, slot_pos) - slot k draws a layout
    position uniformly among the rows of its class; ``cluster``: (unit,) the
    cluster code of each layout row; ``block``: (time,) the time index of each
    layout row, or () when the layout is the time order.
    """

    kind: str          # "plain" | "stratified" | "cluster" | "block"
    poisson: bool
    n: int
    n_units: int = 0   # clusters
    block_length: int = 0
    contiguous: bool = False   # stratified: classes are contiguous runs of the layout

    @property
    def label(self):
        return {"plain": "rows", "stratified": "stratified rows", "cluster": "clusters",
                "block": "moving blocks"}[self.kind]


def _poisson_cdf(dtype_eps: float):
    """CDF of Poisson(1) up to where the tail is below the uniform's resolution."""
    cdf, term, k = [], math.exp(-1.0), 0
    acc = 0.0
    while True:
        acc += term
        cdf.append(acc)
        k += 1
        term /= k
        if 1.0 - acc < dtype_eps / 4 or k > 40:
            break
    return cdf


def _draw_numpy(design: _Design, data, rng):
    n = design.n
    if design.kind == "plain":
        if design.poisson:
            return rng.poisson(1.0, n)
        return np.bincount(rng.integers(0, n, n), minlength=n)
    if design.kind == "stratified":
        pos_by_class = data
        if design.contiguous:   # class c occupies layout positions p[0] .. p[-1]
            t = np.concatenate([p[0] + rng.integers(0, p.shape[0], p.shape[0])
                                for p in pos_by_class])
        else:
            t = np.concatenate([p[rng.integers(0, p.shape[0], p.shape[0])]
                                for p in pos_by_class])
        return np.bincount(t, minlength=n)
    if design.kind == "cluster":
        (unit,) = data
        G = design.n_units
        if design.poisson:
            m = rng.poisson(1.0, G)
        else:
            m = np.bincount(rng.integers(0, G, G), minlength=G)
        return m[unit]
    # moving blocks over the time order, then into layout order
    L = design.block_length
    k = -(-n // L)
    starts = rng.integers(0, n - L + 1, k)
    lens = np.full(k, L)
    lens[-1] = n - (k - 1) * L
    d = np.bincount(starts, minlength=n + 1) - np.bincount(starts + lens, minlength=n + 1)
    counts = np.cumsum(d[:n])
    (time,) = data if data else (None,)
    return counts if time is None else counts[time]


def _draw_jax(design: _Design, data, key, idtype):
    import jax
    import jax.numpy as jnp

    n = design.n
    # int32 random indices and counts (exact below 2**31 rows): half the
    # random bits and memory traffic of int64.
    idtype = jnp.int32 if max(n, design.n_units) < 2**31 - 1 else idtype
    if design.kind == "plain":
        if design.poisson:
            return _poisson_jax(key, (n,), idtype)
        return _bincount(jax.random.randint(key, (n,), 0, n, dtype=idtype), n, idtype)
    if design.kind == "stratified":
        low, high, pos = data
        slot = jax.random.randint(key, (n,), low.astype(idtype), high.astype(idtype),
                                  dtype=idtype)
        return _bincount(slot if design.contiguous else jnp.take(pos, slot), n, idtype)
    if design.kind == "cluster":
        (unit,) = data
        G = design.n_units
        if design.poisson:
            m = _poisson_jax(key, (G,), idtype)
        else:
            m = _bincount(jax.random.randint(key, (G,), 0, G, dtype=idtype), G, idtype)
        return jnp.take(m, unit)
    L = design.block_length
    k = -(-n // L)
    starts = jax.random.randint(key, (k,), 0, n - L + 1, dtype=idtype)
    lens = jnp.full((k,), L, dtype=idtype).at[-1].set(n - (k - 1) * L)
    d = jnp.zeros(n + 1, dtype=idtype).at[starts].add(1).at[starts + lens].add(-1)
    counts = jnp.cumsum(d[:n])
    return jnp.take(counts, data[0]) if data else counts


def _bincount(idx, length, idtype):
    import jax.numpy as jnp

    return jnp.zeros(length, dtype=idtype).at[idx].add(1)


def _poisson_jax(key, shape, idtype):
    import jax
    import jax.numpy as jnp

    # float32 uniforms: the count probabilities are resolved to 2**-24
    f = jnp.float32
    cdf = _poisson_cdf(float(jnp.finfo(f).eps))
    u = jax.random.uniform(key, shape, dtype=f)
    # inverse CDF: count of CDF steps below u; a static, fused comparison chain
    out = jnp.zeros(shape, dtype=idtype)
    for c in cdf[:-1]:
        out = out + (u >= c).astype(idtype)
    return out


def _build_design(xp, n, layout, y_layout_codes, *, stratify, groups_codes, n_groups,
                  block_length, poisson, traced):
    """Design (static) and its data arrays, in layout order.

    ``layout`` maps layout position -> original row (None: identity).
    ``y_layout_codes`` are class codes in layout order (stratify only).
    """
    if stratify:
        contiguous = False
        if not traced:
            cn = np.asarray(B.to_numpy(y_layout_codes))
            contiguous = bool(np.all(cn[1:] >= cn[:-1]))   # sorted codes: runs
        d = _Design("stratified", False, n, contiguous=contiguous)
        if B.is_jax(xp):
            import jax.numpy as jnp

            codes = jnp.asarray(y_layout_codes)
            pos = jnp.argsort(codes, stable=True)           # layout positions by class
            cs = jnp.take(codes, pos)
            lo, hi = B.group_bounds(cs, xp)
            idt = B.acc_int(xp)
            return d, (lo.astype(idt), (hi + 1).astype(idt), pos.astype(idt))
        return d, tuple(np.flatnonzero(cn == c) for c in np.unique(cn))
    if groups_codes is not None:
        d = _Design("cluster", poisson, n, n_units=int(n_groups))
        return d, (groups_codes,)
    if block_length is not None:
        d = _Design("block", False, n, block_length=int(block_length))
        return d, (() if layout is None else (layout,))
    return _Design("plain", poisson, n), ()


def _numpy_streams(seed):
    """``r -> Generator`` of replicate r: an independent stream per replicate.

    ``SeedSequence(entropy, spawn_key=(r,))`` is NumPy's own way to make
    independent child streams; replicate r depends only on (seed, r), as on
    JAX, so chunking and worker threads do not change the answer.
    """
    if isinstance(seed, np.random.Generator):
        entropy = int(seed.integers(0, 2**63 - 1))
    elif isinstance(seed, np.random.SeedSequence):
        entropy = seed.entropy
    elif seed is None:
        entropy = np.random.SeedSequence().entropy
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        entropy = int(seed)
    else:
        raise ValueError(f"seed must be None, a non-negative int, a NumPy Generator or "
                         f"SeedSequence (or a JAX key for JAX arrays), got {seed!r}")

    def rng_for(r):
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy,
                                                                          spawn_key=(r,))))
    return rng_for


def _key_for(seed, xp):
    import jax

    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(seed, (int, np.integer)):
        return jax.random.key(int(seed))
    if isinstance(seed, np.random.Generator):
        return jax.random.key(int(seed.integers(0, 2**31 - 1)))
    if isinstance(seed, np.random.SeedSequence):
        return jax.random.key(int(seed.generate_state(1)[0]))
    return seed
