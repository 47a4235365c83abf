"""Bootstrap resampling designs: counts per row from a counter-based generator.

Plain, stratified, cluster and moving-block designs, multinomial or Poisson
counts. A replicate's counts are a function of (seed, replicate index, row in
the caller's order) only: every random number is a 32-bit integer hash of
(seed, replicate r, draw k), written once in uint32 arithmetic, so NumPy,
array-api-strict (which draws with NumPy), JAX eager and JAX ``jit`` (with
and without x64) draw bit-identical counts. The counts never depend on a
model's score order, on which model is A, on batching, threads or devices.
Each kernel then gathers the counts into its own sorted layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _backend as B

# Constants as NumPy uint32 scalars: a Python int above 2**31 overflows JAX's
# weak int32 typing without x64.
_U = np.uint32
_GOLDEN = _U(0x9E3779B9)       # 2**32 / golden ratio, odd: k -> k * _GOLDEN is a bijection
_M1, _M2 = _U(0x85EBCA6B), _U(0xC2B2AE35)   # MurmurHash3's 32-bit finaliser (Appleby 2011)
_LO16 = _U(0xFFFF)
_SMALL_MAX = 255   # the largest count that travels as uint8 (NumPy's multinomial drawer)


# --------------------------------------------------------------------------
# the counter-based generator: uint32 only (JAX without x64 has no uint64)
# --------------------------------------------------------------------------

def _fmix(x, xp):
    """MurmurHash3 fmix32: a bijection of uint32 with full avalanche."""
    x = x ^ (x >> _U(16))
    x = x * _M1
    x = x ^ (x >> _U(13))
    x = x * _M2
    return x ^ (x >> _U(16))


def _replicate_keys(words, r, xp):
    """Two uint32 keys of replicate ``r`` (uint32) under the seed words ``(s0, s1)``.

    ``r -> k1`` is a bijection for a fixed seed, so no two replicates (of the
    first 2**32) share a stream.
    """
    k1 = _fmix(_fmix(r ^ words[0], xp) + words[1], xp)
    k2 = _fmix(k1 + _GOLDEN, xp)
    return k1, k2


def _hash(k_golden, k1, k2, xp):
    """uint32 random word of each draw ``k`` (given as ``k * _GOLDEN``) of one replicate."""
    return _fmix(_fmix(k_golden ^ k1, xp) + k2, xp)


def _mulhi(u, m, xp, wide):
    """``floor(u * m / 2**32)``: an index in ``[0, m)`` (Lemire 2019), exactly.

    ``u`` uint32, ``m`` a uint32 scalar or array (m < 2**32). With ``wide``
    the product is taken in uint64; otherwise from 16-bit limbs in uint32
    (JAX without x64). Both give the same integer. The map's bias is at
    most m / 2**32 in each index's probability (2e-5 relative at 10^5 rows).
    """
    if wide:
        return xp.astype((xp.astype(u, xp.uint64) * xp.astype(xp.asarray(m), xp.uint64))
                         >> np.uint64(32), xp.uint32)
    s16 = _U(16)
    if isinstance(m, np.integer):     # a static m: its limbs are constants
        ml, mh = _U(int(m) & 0xFFFF), _U(int(m) >> 16)
    else:
        m = xp.asarray(m, dtype=xp.uint32)
        ml, mh = m & _LO16, m >> s16
    ul, uh = u & _LO16, u >> s16
    ll, lh, hl, hh = ul * ml, ul * mh, uh * ml, uh * mh
    mid = (ll >> s16) + (lh & _LO16) + (hl & _LO16)
    return hh + (lh >> s16) + (hl >> s16) + (mid >> s16)


def _poisson_thresholds():
    """Integer thresholds ``ceil(2**32 * F(j))`` of the Poisson(1) CDF below 2**32.

    A uint32 word ``u`` gives the count ``#{j : u >= T_j}``: the inverse CDF
    at ``u / 2**32``, the count probabilities resolved to 2**-32.
    """
    out, term, acc, k = [], math.exp(-1.0), 0.0, 0
    while True:
        acc += term
        t = math.ceil(acc * 2.0**32)
        if t >= 2**32:
            break
        out.append(_U(t))
        k += 1
        term /= k
    return tuple(out)


_POISSON_T = _poisson_thresholds()


def _poisson(u, xp, idtype):
    out = xp.astype(u >= _POISSON_T[0], idtype)
    for t in _POISSON_T[1:]:   # a static, fused comparison chain on JAX
        out = out + xp.astype(u >= t, idtype)
    return out


def seed_words(seed):
    """The seed as two uint32 words (a NumPy array, or a JAX array for a JAX key).

    Ints go through ``SeedSequence(seed)`` (so 0, 1, 2 ... give unrelated
    streams); a Generator gives two words of its stream; a JAX key its key data.
    """
    if isinstance(seed, np.random.Generator):
        return seed.integers(0, 2**32, 2, dtype=np.uint32)
    if isinstance(seed, np.random.SeedSequence):
        return seed.generate_state(2, np.uint32)
    if seed is None:
        return np.random.SeedSequence().generate_state(2, np.uint32)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence(int(seed)).generate_state(2, np.uint32)
    if hasattr(seed, "dtype") and type(seed).__module__.startswith("jax"):
        import jax
        import jax.numpy as jnp

        data = jax.random.key_data(seed) if jnp.issubdtype(seed.dtype,
                                                           jax.dtypes.prng_key) else seed
        return jnp.reshape(jnp.asarray(data, dtype=jnp.uint32), (-1,))[-2:]
    raise ValueError(f"seed must be None, a non-negative int, a NumPy Generator or "
                     f"SeedSequence, or a JAX key, got {seed!r}")


# --------------------------------------------------------------------------
# resampling designs
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Design:
    """Static facts of the resampling design (hashable: part of the compile cache key).

    Arrays live in the design data ``(arrays, layout)`` (passed to compiled
    code as an argument). ``arrays``: ``stratified``: (low, size, rows) -
    draw k picks ``rows[low[k] + j]``, ``j`` uniform below ``size[k]``
    (``rows`` lists each class's rows in caller order); ``cluster``: (unit,)
    the cluster code of each row; ``plain`` and ``block``: (). ``layout``
    maps layout position -> caller row (None: the identity).
    """

    kind: str          # "plain" | "stratified" | "cluster" | "block"
    poisson: bool
    n: int
    n_units: int = 0   # clusters; with ``repeat``: the total integer weight M
    block_length: int = 0
    repeat: bool = False   # integer sample weights as repetitions (plain, stratified)

    @property
    def label(self):
        return {"plain": "rows", "stratified": "stratified rows", "cluster": "clusters",
                "block": "moving blocks"}[self.kind]


def _bincount(idx, length, xp, idtype):
    if B.is_numpy(xp):
        return np.bincount(idx, minlength=length).astype(idtype, copy=False)
    import jax.numpy as jnp

    return jnp.zeros(length, dtype=idtype).at[idx].add(1)


def row_counts(design: _Design, arrays, words, r, xp, idtype):
    """Counts per row in the caller's order of replicate ``r``: (n,) ``idtype``.

    ``xp`` is NumPy or ``jax.numpy`` (array-api-strict and torch draw with
    NumPy); the same integers on both.
    """
    u32 = xp.uint32
    # uint64 products where the backend has them (exact either way; the limbs
    # cost XLA on CPU several times the hash)
    wide = B.is_numpy(xp) or B.acc_int(xp) == xp.int64
    # shape (1,), not scalars: NumPy warns on scalar overflow, and wrapping is the point
    words = xp.asarray(words, dtype=u32)
    k1, k2 = _replicate_keys((words[0:1], words[1:2]),
                             xp.reshape(xp.asarray(r, dtype=u32), (1,)), xp)

    def hashes(m):
        kg = xp.arange(m, dtype=u32) * _GOLDEN
        return _hash(kg, k1, k2, xp)

    n = design.n
    if design.repeat:
        return _repeat_counts(design, arrays, hashes, xp, idtype, wide)
    if design.kind == "plain":
        h = hashes(n)
        if design.poisson:
            return _poisson(h, xp, idtype)
        return _bincount(_mulhi(h, _U(n), xp, wide), n, xp, idtype)
    if design.kind == "stratified":
        low, size, rows = arrays
        j = xp.astype(_mulhi(hashes(n), size, xp, wide), low.dtype)
        return _bincount(xp.take(rows, low + j), n, xp, idtype)
    if design.kind == "cluster":
        (unit,) = arrays
        G = design.n_units
        h = hashes(G)
        m = _poisson(h, xp, idtype) if design.poisson else \
            _bincount(_mulhi(h, _U(G), xp, wide), G, xp, idtype)
        return xp.take(m, unit)
    # moving blocks over the caller's (time) order
    L = design.block_length
    nb = -(-n // L)
    starts = xp.astype(_mulhi(hashes(nb), _U(n - L + 1), xp, wide), idtype)
    ends = starts + L
    last = n - (nb - 1) * L      # the last block is cut to n rows in all
    ends = xp.where(xp.arange(nb) == nb - 1, starts + last, ends)
    d = _bincount(starts, n + 1, xp, idtype) - _bincount(ends, n + 1, xp, idtype)
    return xp.cumsum(d[:n], dtype=idtype)


def _repeat_counts(design, arrays, hashes, xp, idtype, wide):
    """Integer weights as repetitions: M = sum(w) units, unit j is row i for
    ``cw[i] <= j < cw[i + 1]`` (``cw`` the weights' cumulative sum from 0).

    The units are the rows of the repeated data in order, so the counts are
    those of bootstrapping the repeated rows, summed per original row.
    """
    n, M = design.n, design.n_units
    h = hashes(M)
    if design.kind == "plain":
        (cw0,) = arrays
        if design.poisson:   # a unit's Poisson count; a row's count is its units' sum
            C = xp.concat([xp.zeros(1, dtype=idtype), xp.cumsum(_poisson(h, xp, idtype),
                                                                  dtype=idtype)])
            return xp.take(C, cw0[1:]) - xp.take(C, cw0[:-1])
        u = _mulhi(h, _U(M), xp, wide)
        return _bincount(xp.searchsorted(cw0[1:], xp.astype(u, cw0.dtype), side="right"),
                         n, xp, idtype)
    # stratified: units sorted by class (rows by class, in caller order, repeated)
    bounds, rows, cwc0 = arrays
    k = xp.arange(M, dtype=bounds.dtype)
    cls = xp.searchsorted(bounds, k, side="right") - 1
    low = xp.take(bounds, cls)
    size = xp.astype(xp.take(bounds, cls + 1) - low, xp.uint32)
    u = low + xp.astype(_mulhi(h, size, xp, wide), low.dtype)
    pos = xp.searchsorted(cwc0[1:], u, side="right")
    return _bincount(xp.take(rows, pos), n, xp, idtype)


def _rowwise(design: _Design) -> bool:
    """Is each row's count a function of its own hash alone (plain Poisson)?

    Then the counts are drawn straight in layout order, hashing each layout
    position's caller row: no scatter, no gather, the same integers.
    """
    return design.kind == "plain" and design.poisson and not design.repeat


def small_counts(design: _Design) -> bool:
    """Can :func:`draw_counts` give ``small`` (uint8, wrapping) counts for this design?

    Plain multinomial rows: a replicate's counts sum to ``n`` exactly, so
    counts wrapped modulo 256 sum to ``n`` if and only if none reached 256
    (each wrap loses 256). The consumer checks that sum and redraws the
    replicate wide when it fails (:func:`small_counts_ok`).
    """
    return design.kind == "plain" and not design.poisson and not design.repeat \
        and design.n < 2**31 - 1


def small_counts_ok(design: _Design, counts, xp):
    """Are ``small`` counts exact (no row's count wrapped past 255)?"""
    return xp.sum(counts, dtype=xp.int32) == design.n


def draw_counts(design: _Design, data, words, r, xp, idtype, small=False):
    """Counts of replicate ``r`` in layout order (the caller's counts, gathered).

    ``small`` (JAX, where :func:`small_counts` holds): uint8 counts modulo
    256, a quarter of the int32 memory traffic in the scatter and gathers;
    exact only where :func:`small_counts_ok` says so.
    """
    arrays, layout = data
    if not B.is_numpy(xp) and max(design.n, design.n_units) < 2**31 - 1:
        # JAX: int32 counts (exact below 2**31 rows): half the memory traffic
        # of int64 in the scatter and gathers; the kernels widen their sums
        idtype = xp.uint8 if small and small_counts(design) else xp.int32
    if _rowwise(design) and layout is not None:
        u32 = xp.uint32
        words = xp.asarray(words, dtype=u32)
        k1, k2 = _replicate_keys((words[0:1], words[1:2]),
                                 xp.reshape(xp.asarray(r, dtype=u32), (1,)), xp)
        return _poisson(_hash(xp.astype(layout, u32) * _GOLDEN, k1, k2, xp), xp, idtype)
    c = row_counts(design, arrays, words, r, xp, idtype)
    return c if layout is None else xp.take(c, layout)


def _repeat_design(xp, n, layout, *, y_codes, w, poisson) -> tuple[_Design, Any]:
    """Plain or stratified design over the units of integer weights ``w`` (NumPy, eager)."""
    w = np.asarray(w, dtype=np.int64)
    M = int(w.sum())
    mod: Any = np
    if B.is_jax(xp):
        import jax.numpy as jnp
        mod = jnp
    else:
        layout = None if layout is None else np.asarray(B.to_numpy(layout))
    idt = np.int64 if (not B.is_jax(xp) or B.acc_int(xp) == xp.int64) else np.int32
    if y_codes is None:
        cw0 = np.concatenate([[0], np.cumsum(w)]).astype(idt)
        return (_Design("plain", poisson, n, n_units=M, repeat=True),
                ((mod.asarray(cw0),), layout))
    codes = np.asarray(B.to_numpy(y_codes))
    rows = np.argsort(codes, kind="stable")
    per_class = np.bincount(codes, weights=w, minlength=int(codes.max()) + 1).astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(per_class)]).astype(idt)
    cwc0 = np.concatenate([[0], np.cumsum(w[rows])]).astype(idt)
    return (_Design("stratified", False, n, n_units=M, repeat=True),
            ((mod.asarray(bounds), mod.asarray(rows.astype(idt)), mod.asarray(cwc0)), layout))


def unit_weights(design: _Design, arrays):
    """Integer weight (units) of each row in the caller's order, or None (NumPy)."""
    if not design.repeat:
        return None
    if design.kind == "plain":
        return np.diff(np.asarray(B.to_numpy(arrays[0])))
    _, rows, cwc0 = (np.asarray(B.to_numpy(a)) for a in arrays)
    w = np.empty(design.n, dtype=np.int64)
    w[rows] = np.diff(cwc0)
    return w


def _build_design(xp, n, layout, *, y_codes, groups_codes, n_groups, block_length, poisson,
                  traced) -> tuple[_Design, Any]:
    """Design (static) and its data ``(arrays, layout)``; codes in the caller's order.

    ``y_codes``: class codes per row (stratify only). On JAX the arrays are
    JAX arrays (traced under jit), else NumPy (array-api-strict and torch draw
    with NumPy and convert).
    """
    jaxy = B.is_jax(xp)
    if jaxy:
        import jax.numpy as jnp
        mod: Any = jnp
    else:
        mod = np
        layout = None if layout is None else np.asarray(B.to_numpy(layout))
    if y_codes is not None:
        d = _Design("stratified", False, n)
        codes = y_codes if traced else mod.asarray(np.asarray(B.to_numpy(y_codes)))
        rows = mod.argsort(codes, stable=True)          # rows by class, caller order within
        cs = mod.take(codes, rows)
        lo, hi = B.group_bounds(cs, mod if not jaxy else xp)
        idt = mod.int64 if not jaxy else B.acc_int(xp)
        lo = mod.asarray(lo).astype(idt)
        size = (mod.asarray(hi).astype(idt) + 1 - lo).astype(mod.uint32)
        return d, ((lo, size, rows.astype(idt)), layout)
    if groups_codes is not None:
        d = _Design("cluster", poisson, n, n_units=int(n_groups))
        return d, ((groups_codes if (traced or not jaxy) else mod.asarray(groups_codes),), layout)
    if block_length is not None:
        return _Design("block", False, n, block_length=int(block_length)), ((), layout)
    return _Design("plain", poisson, n), ((), layout)


# --------------------------------------------------------------------------
# NumPy: the same integers with in-place passes (the hot path of the loop)
# --------------------------------------------------------------------------

def _fmix_int(x):
    """:func:`_fmix` of a Python int below 2**32 (no array calls: a replicate's keys)."""
    x ^= x >> 16
    x = (x * int(_M1)) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * int(_M2)) & 0xFFFFFFFF
    return x ^ (x >> 16)


def _replicate_keys_int(words, r):
    """:func:`_replicate_keys` in Python ints: ``(k1, k2)`` of replicate ``r``.

    The same integers; about 20 array calls fewer per replicate (tens of
    microseconds on NumPy, where each call on a one-element array costs one
    or two).
    """
    s0, s1 = int(words[0]), int(words[1])
    k1 = _fmix_int((_fmix_int((int(r) & 0xFFFFFFFF) ^ s0) + s1) & 0xFFFFFFFF)
    return k1, _fmix_int((k1 + int(_GOLDEN)) & 0xFFFFFFFF)


def _fmix_tail_inplace(x, tmp, out):
    """:func:`_fmix` after its first xor-shift, in place (the last pass writes ``out``)."""
    np.multiply(x, _M1, out=x)
    np.right_shift(x, _U(13), out=tmp)
    np.bitwise_xor(x, tmp, out=x)
    np.multiply(x, _M2, out=x)
    np.right_shift(x, _U(16), out=tmp)
    np.bitwise_xor(x, tmp, out=out)


def _hash_inplace(kgx, words, r, x, tmp, out=None):
    """``_hash`` of every draw of replicate ``r`` into ``out`` (default ``x``), in place.

    ``kgx`` is ``kg ^ (kg >> 16)`` of the draws' ``kg = k * _GOLDEN``: the
    first xor-shift of fmix distributes over the xor with ``k1``
    (``(a ^ b) >> s == (a >> s) ^ (b >> s)``), so it is taken once at set-up
    and one constant per replicate: 16 passes instead of 18. ``out`` may be
    wider than uint32 (the last pass widens on write).
    """
    k1, k2 = _replicate_keys_int(words, r)
    np.bitwise_xor(kgx, _U(k1 ^ (k1 >> 16)), out=x)
    _fmix_tail_inplace(x, tmp, x)
    np.add(x, _U(k2), out=x)
    np.right_shift(x, _U(16), out=tmp)
    np.bitwise_xor(x, tmp, out=x)
    _fmix_tail_inplace(x, tmp, x if out is None else out)
    return x if out is None else out


def _shifted_keys(kg):
    """``kg ^ (kg >> 16)``: the set-up half of :func:`_hash_inplace`'s first pass."""
    return kg ^ (kg >> _U(16))


def numpy_drawer(design: _Design, data, words, small: bool = False):
    """``r -> counts in layout order`` on NumPy, equal to :func:`draw_counts`.

    Plain multinomial rows (the common case) run as in-place passes over
    buffers reused per thread, the hash's last pass widening into uint64 for
    the multiply-high (``u * n < 2**64``), whose int64 view goes straight
    into ``bincount``; plain Poisson rows are hashed in layout order
    (no gather). Counts are int64, or with ``small`` (a consumer that
    widens its own sums) uint8 where every count is below 256 (the gather
    into the layout then moves an eighth of the bytes; a replicate with a
    larger count comes as int64); other designs use :func:`draw_counts`.
    """
    arrays, layout = data
    words = np.asarray(words, dtype=np.uint32)
    if _rowwise(design):
        return _numpy_poisson_drawer(design.n, layout, words, small)
    if design.kind != "plain" or design.repeat:
        return lambda r: draw_counts(design, data, words, r, np, np.int64)
    import threading

    n = design.n
    kgx = _shifted_keys(np.arange(n, dtype=np.uint32) * _GOLDEN)
    scratch: dict = {}
    n64, s32 = np.uint64(n), np.uint64(32)
    layout = None if layout is None else np.asarray(layout, dtype=np.intp)

    def draw(r):
        bufs = scratch.get(threading.get_ident())
        if bufs is None:
            bufs = scratch[threading.get_ident()] = (
                np.empty(n, np.uint32), np.empty(n, np.uint32), np.empty(n, np.int64),
                np.empty(n, np.int64), np.empty(n, np.uint8), np.empty(n, np.uint8))
        x, tmp, idx, out, c8, out8 = bufs
        u = _hash_inplace(kgx, words, r, x, tmp, out=idx.view(np.uint64))
        np.multiply(u, n64, out=u)
        np.right_shift(u, s32, out=u)
        c = np.bincount(idx, minlength=n)
        if small and c.max() <= _SMALL_MAX:
            np.copyto(c8, c, casting="unsafe")
            c, out = c8, out8
        if layout is None:
            return c
        # "clip": the layout is a permutation, so no index is out of range; with
        # ``out``, the default "raise" gathers through a temporary (twice the time)
        return np.take(c, layout, out=out, mode="clip")
    return draw


def _numpy_poisson_drawer(n, layout, words, small):
    """Plain Poisson counts hashed in layout order, in place (per-thread buffers).

    Four comparisons give counts 0..4 in uint8; the rows at or above the
    fifth threshold (about 1.9%) take the inverse CDF by ``searchsorted``:
    the same integers as :func:`_poisson`.
    """
    import threading

    rows = np.arange(n, dtype=np.uint32) if layout is None else \
        np.asarray(layout).astype(np.uint32)
    kgx = _shifted_keys(rows * _GOLDEN)
    T = np.asarray(_POISSON_T, dtype=np.uint32)
    scratch: dict = {}

    def draw(r):
        bufs = scratch.get(threading.get_ident())
        if bufs is None:
            bufs = scratch[threading.get_ident()] = (
                np.empty(n, np.uint32), np.empty(n, np.uint32), np.empty(n, np.uint8),
                np.empty(n, bool))
        x, tmp, c, ge = bufs
        _hash_inplace(kgx, words, r, x, tmp)
        np.greater_equal(x, T[0], out=c.view(bool))
        for t in T[1:4]:
            np.greater_equal(x, t, out=ge)
            np.add(c, ge.view(np.uint8), out=c)
        tail = np.flatnonzero(np.greater_equal(x, T[4], out=ge))
        c[tail] = np.searchsorted(T, x[tail], side="right")
        return c if small else c.astype(np.int64)
    return draw
