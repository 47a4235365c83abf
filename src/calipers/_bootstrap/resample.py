"""Bootstrap resampling designs: counts per row from a counter-based generator.

Plain, stratified, cluster and moving-block designs, multinomial or Poisson
counts. A replicate's counts are a function of (seed, replicate index, row in
the caller's order) only: every random number is a 32-bit integer hash of
(seed, replicate r, draw k), written once in uint32 arithmetic, so NumPy,
array-api-strict (which draws with NumPy), JAX eager and JAX ``jit`` (with
and without x64) draw bit-identical counts. The draw counter ``k`` is 64-bit,
as two uint32 words ``(lo, hi)`` (:func:`_hash_rows`): counters below 2**32
hash as they always did, and each block of 2**32 counters above has keys of
its own, so rows ``j`` and ``j + 2**32`` draw independent counts
(:func:`poisson_counts`: a row's Poisson count as a function of the seed,
the replicate and its 64-bit row id). Designs that draw a uniform index
(multinomial, stratified, blocks) take at most ``2**32 - 1`` units
(:func:`_check_units`). The counts never depend on a
model's score order, on which model is A, on batching, threads or devices.
Each kernel then gathers the counts into its own sorted layout.

Plain multinomial rows (the default design) are drawn as Poisson counts
topped up to ``n`` draws (:func:`topup_plan`): no scatter of ``n`` draws,
and the counts come straight in the kernels' layout order.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.types import Array, ArrayLike, SeedLike
from .._kernels import native

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


def _block_keys(hi, k1, k2, xp):
    """Keys of the counter block ``hi`` (counters ``hi * 2**32 + lo``) of one replicate.

    Block 0 keeps the replicate's keys ``(k1, k2)``, so counters below 2**32
    hash as before; a block ``hi > 0`` takes keys derived from ``(k1, k2,
    hi)`` by the mixing that derives a replicate's keys from the seed words
    (:func:`_replicate_keys`): a stream of its own, as unrelated to block 0
    as two replicates are. uint32 only (JAX without x64).
    """
    b1 = _fmix(_fmix(hi ^ k1, xp) + k2, xp)
    b2 = _fmix(b1 + _GOLDEN, xp)
    zero = hi == _U(0)
    return xp.where(zero, k1, b1), xp.where(zero, k2, b2)


def _hash_rows(lo, hi, keys, xp):
    """uint32 word of each 64-bit draw counter ``hi * 2**32 + lo`` (uint32 words).

    ``hi`` None: every counter is below 2**32 (:func:`_hash` itself).
    """
    if hi is None:
        return _hash(lo * _GOLDEN, keys[0], keys[1], xp)
    k1, k2 = _block_keys(hi, keys[0], keys[1], xp)
    return _hash(lo * _GOLDEN, k1, k2, xp)


def _split64(k, xp):
    """uint32 words ``(lo, hi)`` of non-negative 64-bit integers ``k`` (uint64 / int64)."""
    k = xp.astype(k, xp.uint64)
    return (xp.astype(k & np.uint64(0xFFFFFFFF), xp.uint32),
            xp.astype(k >> np.uint64(32), xp.uint32))


def _hash_id_arrays(arrays, keys, xp):
    """Words of the design's row ids, given as ``(lo,)`` or ``(lo, hi)`` uint32 arrays."""
    return _hash_rows(arrays[0], arrays[1] if len(arrays) > 1 else None, keys, xp)


def _hash_ids(rows, keys, xp, n):
    """Words of row ids ``rows`` (any integer dtype, all below ``n``, a static bound)."""
    if n <= 2**32:
        return _hash_rows(xp.astype(rows, xp.uint32), None, keys, xp)
    return _hash_rows(*_split64(rows, xp), keys, xp)


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


def _poisson_thresholds(lam=1.0):
    """Integer thresholds ``ceil(2**32 * F(j))`` of the Poisson(``lam``) CDF below 2**32.

    A uint32 word ``u`` gives the count ``#{j : u >= T_j}``: the inverse CDF
    at ``u / 2**32``, the count probabilities resolved to 2**-32. The
    thresholds are Python-computed constants, so every backend compares
    against the same integers.
    """
    out, term, acc, k = [], math.exp(-lam), 0.0, 0
    while True:
        acc += term
        t = math.ceil(acc * 2.0**32)
        if t >= 2**32:
            break
        out.append(_U(t))
        k += 1
        term *= lam / k
    return tuple(out)


_POISSON_T = _poisson_thresholds()


def _poisson(u, xp, idtype, thresholds=_POISSON_T):
    out = xp.zeros(u.shape, dtype=idtype) if not thresholds else \
        xp.astype(u >= thresholds[0], idtype)
    for t in thresholds[1:]:   # a static, fused comparison chain on JAX
        out = out + xp.astype(u >= t, idtype)
    return out


# Plain multinomial rows: Poisson counts topped up to n draws. Given their total
# T, independent Poisson(lam) counts of n rows are Multinomial(T, uniform) (the
# Poisson pmf's product is proportional to 1 / prod c_i!, whatever lam); adding
# n - T independent uniform draws makes them Multinomial(n, uniform). With lam
# a little below 1, T <= n almost always and the n - T extra draws are few
# (about 5 sqrt(n)): the per-row part needs no scatter and is hashed straight
# in the layout order. A replicate with T > n, or with more than M = 10 sqrt(n)
# draws missing (each about 3e-7), is drawn directly instead (n uniform draws)
# from a third stream: a mixture of two Multinomial(n) draws is Multinomial(n).
# The three streams are the draw counters k of one replicate: the rows
# [0, n), the extra draws [n, n + M), the direct draws [n + M, 2n + M).
_TOPUP_SIGMAS = 5.0
_TOPUP_BOUND = 10.0


@functools.lru_cache(maxsize=64)
def topup_plan(n: int):
    """``(thresholds, M)`` of the Poisson-and-top-up draw of ``n`` rows, or None.

    ``thresholds``: the Poisson(lam) CDF thresholds, ``lam = 1 - 5 / sqrt(n)``
    (empty for ``n <= 25``: every draw is an extra draw, the direct method);
    ``M``: the static bound on the extra draws. None where the counters or
    the uint32 sum of the Poisson counts could pass 2**32 (then every
    replicate is drawn directly).
    """
    root = math.sqrt(n)
    lam = max(0.0, 1.0 - _TOPUP_SIGMAS / root)
    thresholds = _poisson_thresholds(lam) if lam > 0 else ()
    M = min(n, math.ceil(_TOPUP_BOUND * root))
    if 2 * n + M >= 2**32 or (len(thresholds) + 1) * n >= 2**32:
        return None
    return thresholds, M


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
    the cluster code of each row; ``plain`` and ``block``: (); plain Poisson
    rows with global row ids (``ids`` 32 or 64): the ids' uint32 words
    ``(lo,)`` or ``(lo, hi)`` in layout order. ``layout`` maps layout position
    -> caller row (None: the identity).
    """

    kind: str          # "plain" | "stratified" | "cluster" | "block"
    poisson: bool
    n: int
    n_units: int = 0   # clusters; with ``repeat``: the total integer weight M
    block_length: int = 0
    repeat: bool = False   # integer sample weights as repetitions (plain, stratified)
    ids: int = 0       # plain Poisson rows keyed by caller ids: 32 (arrays (lo,)) or 64 (lo, hi)

    @property
    def label(self):
        return {"plain": "rows", "stratified": "stratified rows", "cluster": "clusters",
                "block": "moving blocks"}[self.kind]


def make_design(kind: str, n: int, *, poisson: bool = False, n_units: int = 0,
                block_length: int = 0, repeat: bool = False) -> _Design:
    """A resampling design of the one resampler, for callers that build their own data.

    ``kind``: ``"plain"`` (rows; with ``repeat``, ``n_units`` integer-weight
    units, data ``((cw0,), layout)`` the weights' cumulative sum from 0),
    ``"cluster"`` (``n_units`` clusters, data ``((codes,), layout)``),
    ``"stratified"`` or ``"block"`` (``block_length``). ``poisson``: Poisson
    counts instead of multinomial ones. The counts then come from
    :func:`draw_counts` / :func:`numpy_drawer` with the design's data, the
    same integers as :func:`calipers.paired_bootstrap`'s for that design.
    Raises ``ValueError`` for an unknown ``kind`` or a multinomial over more
    than ``2**32 - 1`` units.
    """
    kind = V.choice(kind, "kind", ("plain", "stratified", "cluster", "block"))
    d = _Design(kind, bool(poisson), int(n), n_units=int(n_units),
                block_length=int(block_length), repeat=bool(repeat))
    if _unit_multinomial(d) or (kind == "plain" and repeat and not poisson):
        _check_units(_units(d), "n_units" if (repeat or kind == "cluster") else "n",
                     "the number of units")
    return d


def _bincount(idx, length, xp, idtype):
    if B.is_numpy(xp):
        return np.bincount(idx, minlength=length).astype(idtype, copy=False)
    import jax.numpy as jnp

    return jnp.zeros(length, dtype=idtype).at[idx].add(1)


def _scatter_add(c, idx, add, xp):
    """``c[idx] += add`` with repeated indices summed (a copy on JAX)."""
    if B.is_numpy(xp):
        np.add.at(c, np.asarray(idx, dtype=np.intp), add)
        return c
    return c.at[idx].add(add)


def _keys(words, r, xp):
    """The two uint32 keys of replicate ``r``, as shape-(1,) arrays.

    Shape (1,), not scalars: NumPy warns on scalar overflow, and wrapping is the point.
    """
    u32 = xp.uint32
    words = xp.asarray(words, dtype=u32)
    return _replicate_keys((words[0:1], words[1:2]),
                           xp.reshape(xp.asarray(r, dtype=u32), (1,)), xp)


def _wide(xp) -> bool:
    # uint64 products where the backend has them (exact either way; the limbs
    # cost XLA on CPU several times the hash)
    return B.is_numpy(xp) or B.acc_int(xp) == xp.int64


def _draws(k0, m, keys, xp):
    """uint32 words of the draws ``k0 .. k0 + m - 1`` of one replicate (keys ``(k1, k2)``).

    Counters past 2**32 (64-bit arithmetic: NumPy, JAX with x64) take their
    block's keys (:func:`_hash_rows`).
    """
    if k0 + m <= 2**32:
        kg = (xp.arange(m, dtype=xp.uint32) + _U(k0)) * _GOLDEN
        return _hash(kg, keys[0], keys[1], xp)
    return _hash_rows(*_split64(xp.arange(m, dtype=xp.uint64) + np.uint64(k0), xp), keys, xp)


def id_words(row_ids, xp, name="row_ids"):
    """Row ids as uint32 words ``(lo, hi)`` (``hi`` None for ids of 32 bits or fewer).

    ``row_ids``: an integer array, or a pair ``(lo, hi)`` of uint32 arrays.
    Eagerly a ``ValueError`` naming ``name`` for a non-integer dtype or a
    negative id; under ``jit`` a negative id is not checked here (callers
    flag it).
    """
    if isinstance(row_ids, tuple):
        if len(row_ids) != 2:
            raise ValueError(f"{name} as a tuple must be (lo, hi), two uint32 arrays")
        lo, hi = (xp.asarray(v, dtype=xp.uint32) for v in row_ids)
        return lo, hi
    ids = xp.asarray(row_ids)
    if not xp.isdtype(ids.dtype, "integral"):
        raise ValueError(f"{name} must be integers, got dtype {ids.dtype}")
    if not B.is_traced(ids) and math.prod(ids.shape) and \
            xp.isdtype(ids.dtype, "signed integer") and bool(xp.any(ids < 0)):
        raise ValueError(f"{name} must be non-negative")
    if ids.dtype.itemsize <= 4:
        return xp.astype(ids, xp.uint32), None
    return _split64(ids, xp)


def poisson_counts(seed, replicate, row_ids, xp=None):
    """Poisson(1) bootstrap counts of rows by global row id: a function of (seed, replicate, id).

    ``row_ids``: non-negative integers below 2**64 (an integer array: int64 or
    uint64 on NumPy and on JAX with x64; 32-bit without), or a pair ``(lo,
    hi)`` of uint32 arrays, the low and high words. ``replicate``: an integer
    below 2**32, or a 1-D integer array of replicates (then the counts have
    shape ``(len(replicate),) + row_ids.shape``). Row ``j``'s count is that
    of row ``j`` in replicate ``replicate`` of ``resampling="poisson"`` plain
    rows under the same seed (rows below 2**32; above, each block of 2**32
    ids has keys of its own), so any partition of the rows can draw its own
    part. Returns int64 counts (int32 on JAX without x64). ``xp``: NumPy
    (default) or ``jax.numpy``.
    """
    xp = np if xp is None else xp
    if isinstance(replicate, (int, np.integer)) and not isinstance(replicate, bool):
        if not 0 <= int(replicate) < 2**32:
            raise ValueError(f"replicate must be in [0, 2**32), got {replicate!r}")
        keys = _keys(seed_words(seed), replicate, xp)
        lo, hi = id_words(row_ids, xp)
        return _poisson(_hash_rows(lo, hi, keys, xp), xp, B.acc_int(xp))
    reps = _replicate_array(replicate, xp.asarray(replicate), xp)
    lo, hi = id_words(row_ids, xp)
    return counts_matrix(seed_words(seed), reps, lo, hi, xp)


def counts_matrix(words, replicates, lo, hi, xp, idtype=None):
    """Poisson counts ``(len(replicates),) + lo.shape`` of ids ``(lo, hi)`` (uint32 words).

    One broadcast hash: replicate ``r``'s row equals :func:`poisson_counts`
    of ``r``. Memory O(len(replicates) * len(lo)).
    """
    u32 = xp.uint32
    words = xp.asarray(words, dtype=u32)
    r = xp.reshape(xp.astype(replicates, u32), (-1,) + (1,) * lo.ndim)
    keys = _replicate_keys((words[0:1], words[1:2]), r, xp)
    lo_b = xp.reshape(lo, (1,) + tuple(lo.shape))
    hi_b = None if hi is None else xp.reshape(hi, (1,) + tuple(hi.shape))
    return _poisson(_hash_rows(lo_b, hi_b, keys, xp), xp,
                    B.acc_int(xp) if idtype is None else idtype)


def _replicate_array(replicate, reps, xp):
    """``reps`` (the replicates as an array) checked: 1-D integers in ``[0, 2**32)``."""
    if reps.ndim != 1 or not xp.isdtype(reps.dtype, "integral"):
        raise ValueError(f"replicate must be an integer or a 1-D integer array, got "
                         f"{replicate!r}")
    if not B.is_traced(reps) and reps.shape[0] and (
            (xp.isdtype(reps.dtype, "signed integer") and bool(xp.any(reps < 0)))
            or (reps.dtype.itemsize > 4 and bool(xp.any(reps > 2**32 - 1)))):
        raise ValueError("replicate must be in [0, 2**32)")
    return reps


def bootstrap_counts(row_ids: ArrayLike, replicate: ArrayLike, *, seed: SeedLike = None,
                     resampling: str = "poisson", xp: Any = None) -> Array:
    """Bootstrap counts of rows identified by global row ids: a function of (seed, replicate, id).

    The engine-neutral primitive of calipers' Poisson bootstrap: row ``j``'s
    count in replicate ``r`` depends only on the seed, ``r`` and ``j``'s
    64-bit id, never on how the rows are batched, partitioned, ordered or
    placed on devices. So a partition of the data that knows the global ids
    of its rows draws exactly its part of the counts of the full run, and
    replicate sums computed per partition and added (``psum``, a tree
    reduce, a ``CombineFn``) equal one machine's. These are the counts of
    :func:`calipers.paired_bootstrap` and
    :func:`calipers.paired_bootstrap_replicates` with
    ``resampling="poisson"`` (given ``row_ids=``, or rows ``0 .. n - 1``
    without) and of :class:`calipers.PairedBootstrapState`.

    Parameters
    ----------
    row_ids : integer array (n,) (any shape), or a pair ``(lo, hi)`` of uint32 arrays
        Non-negative global row ids below 2**64 (int64 / uint64 on NumPy and on
        JAX with x64; 32-bit ids without x64, or the two words). Ids below
        2**32 hash as a 32-bit counter; each block of 2**32 ids above has keys
        of its own, so rows ``j`` and ``j + 2**32`` draw independent counts.
    replicate : int in [0, 2**32), or a 1-D integer array of them
    seed : None, int >= 0, NumPy Generator or SeedSequence, or JAX key
        Turned into two uint32 words as in :func:`calipers.paired_bootstrap`.
        ``None`` (the default of every resampling function) draws fresh
        entropy at each call, so two calls (two partitions) agree only when
        given the same explicit seed.
    resampling : {"poisson"}
        Only ``"poisson"`` (independent Poisson(1) counts per row, drawn by
        inverse CDF from a uint32 word: the count probabilities resolved to
        2**-32). The multinomial design ties every row's count to the total
        n and is not a function of a row alone: ``ValueError``.
    xp : namespace, optional
        ``numpy`` (default) or ``jax.numpy`` (traceable under ``jit``).

    Returns
    -------
    array of int64 (int32 on JAX without x64)
        ``row_ids.shape`` for one replicate, ``(len(replicate),) +
        row_ids.shape`` for an array of replicates. Memory O(size of the result).

    Raises
    ------
    ValueError
        ``resampling`` other than ``"poisson"``; ``replicate`` out of range or
        not an integer; ``row_ids`` not integers or negative (eagerly); a bad
        ``seed``.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import bootstrap_counts
    >>> full = bootstrap_counts(np.arange(10), 3, seed=7)
    >>> part = bootstrap_counts(np.array([8, 2, 5]), 3, seed=7)
    >>> bool((part == full[[8, 2, 5]]).all())
    True
    """
    if resampling != "poisson":
        raise ValueError(f"resampling must be 'poisson' for counts by row id (a multinomial "
                         f"row's count depends on every other row's), got {resampling!r}")
    return poisson_counts(seed, replicate, row_ids, xp)


def _units(design: _Design) -> int:
    """The resampling units of a design: rows, clusters, or integer-weight units."""
    return design.n_units if (design.repeat or design.kind == "cluster") else design.n


def _unit_multinomial(design: _Design) -> bool:
    """Is this design a multinomial over equally likely units (plain rows,
    integer-weight units, clusters): :func:`_design_multinomial`?"""
    return design.kind in ("plain", "cluster") and not design.poisson


def _topup(design: _Design) -> bool:
    """Is it drawn as Poisson counts topped up to their number (:func:`topup_plan`)?
    (Past the plan's sizes, every replicate is the direct draw.)"""
    return _unit_multinomial(design) and topup_plan(_units(design)) is not None


def _multinomial(U, keys, xp, idtype, place, length, poisson_part):
    """Multinomial(U, uniform) counts over ``U`` units, placed: ``(counts, ok)``.

    ``place(units)``: the output position (of ``length``) of each drawn unit
    (uint32); ``poisson_part(thresholds)``: the units' Poisson counts at their
    positions and their uint32 total (not called when ``lam = 0``). Where
    ``ok`` is False (the total above ``U`` or more than ``M`` draws missing),
    :func:`_multinomial_direct` gives the replicate.
    """
    thresholds, M = topup_plan(U)
    u32 = xp.uint32
    part = poisson_part(thresholds) if thresholds else None
    c, total = part if part is not None else \
        (xp.zeros(length, dtype=idtype), xp.asarray(0, dtype=u32))
    missing = _U(U) - xp.minimum(total, _U(U))
    ok = (total <= _U(U)) & (missing <= _U(M))
    j = xp.arange(M, dtype=u32)
    pos = place(_mulhi(_draws(U, M, keys, xp), _U(U), xp, _wide(xp)))
    return _scatter_add(c, pos, xp.astype(j < missing, idtype), xp), ok


def _multinomial_direct(U, keys, xp, idtype, place, length):
    """Multinomial(U, uniform) counts from ``U`` uniform draws, placed (the fallback of
    :func:`_multinomial`, counters after its own; from 0 where there is no plan)."""
    plan = topup_plan(U)
    k0 = 0 if plan is None else U + plan[1]
    pos = place(_mulhi(_draws(k0, U, keys, xp), _U(U), xp, _wide(xp)))
    return _bincount(pos, length, xp, idtype)


def _unit_poisson(U, keys, xp, idtype):
    """``poisson_part`` of units counted in their own order (clusters, weight units)."""
    def part(thresholds):
        c = _poisson(_draws(0, U, keys, xp), xp, idtype, thresholds)
        return c, xp.sum(xp.astype(c, xp.uint32), dtype=xp.uint32)
    return part


def _design_multinomial(design: _Design, arrays, layout, keys, xp, idtype, direct=False):
    """A unit multinomial's counts in layout order: ``(counts, ok)`` from the top-up, or
    with ``direct`` the direct draw (the top-up's fallback; every replicate past
    :func:`topup_plan`'s sizes).

    Plain rows are counted straight at their layout positions (the Poisson part
    hashes each position's caller row; an extra draw lands at its row's
    position, ``inv``); weight units are counted per unit and summed over their
    row (``cw0``: the weights' cumulative sum from 0), clusters per cluster and
    spread over their rows; both then gathered into the layout.
    """
    n, U, u32 = design.n, _units(design), xp.uint32

    def gather(c):
        return c if layout is None else xp.take(c, layout)

    if design.kind == "cluster":
        (unit,) = arrays
        length, part = U, _unit_poisson(U, keys, xp, idtype)

        def place(u):
            return u

        def finish(c):
            return gather(xp.take(c, unit))
    elif design.repeat:
        (cw0,) = arrays
        length, finish = n, gather

        def place(u):
            return xp.searchsorted(cw0[1:], xp.astype(u, cw0.dtype), side="right")

        def part(thresholds):
            pc, total = _unit_poisson(U, keys, xp, idtype)(thresholds)
            C = xp.concat([xp.zeros(1, dtype=idtype), xp.cumsum(pc, dtype=idtype)])
            return xp.take(C, cw0[1:]) - xp.take(C, cw0[:-1]), total
    else:
        inv = arrays[0] if layout is not None else None
        length = n

        def place(u):
            return u if inv is None else xp.take(inv, xp.astype(u, inv.dtype))

        def part(thresholds):      # (multinomial rows: n < 2**32, _check_units)
            rows = xp.arange(n, dtype=u32) if layout is None else xp.astype(layout, u32)
            c = _poisson(_hash(rows * _GOLDEN, keys[0], keys[1], xp), xp, idtype, thresholds)
            return c, xp.sum(xp.astype(c, u32), dtype=u32)

        def finish(c):       # already in layout order
            return c
    if direct:
        return finish(_multinomial_direct(U, keys, xp, idtype, place, length))
    c, ok = _multinomial(U, keys, xp, idtype, place, length, part)
    return finish(c), ok


# --------------------------------------------------------------------------
# the multinomial design in two passes over partitions of the rows
# --------------------------------------------------------------------------
# Plain multinomial rows (the default design, :func:`topup_plan`) are Poisson
# counts of each row position plus at most M extra draws, or, for the rare
# replicate whose Poisson total passes n or misses more than M draws, n direct
# draws. The Poisson part of a row is a function of (seed, replicate, position)
# alone; the extra draws are a function of (seed, replicate, n) and of how many
# are missing, n - total. So a partition of the rows draws its part in two
# passes: the per-replicate totals of its Poisson part (summed over partitions),
# then, given n and the summed totals, its rows' Poisson counts plus the extra
# (or direct) draws that land on its rows.

_DIRECT_CHUNK = 1 << 22     # direct draws hashed at a time (NumPy): memory O(chunk)


def _multinomial_setup(rows, replicate, n, seed, xp, name="rows"):
    """Checked ``(xp, pos uint32 (m,), reps (B,), keys (B, 1) pair, plan, scalar)``."""
    xp = np if xp is None else xp
    n = V.positive_int(n, "n")
    _check_units(n, "n", "the row count")
    pos = xp.asarray(rows)
    if pos.ndim != 1 or not xp.isdtype(pos.dtype, "integral"):
        raise ValueError(f"{name} must be a 1-D integer array of row positions, got "
                         f"shape {tuple(pos.shape)} and dtype {pos.dtype}")
    if not B.is_traced(pos) and pos.shape[0] and (
            bool(xp.any(pos < 0)) or bool(xp.any(pos >= n))):
        raise ValueError(f"{name} must be row positions in [0, n) = [0, {n})")
    scalar = isinstance(replicate, (int, np.integer)) and not isinstance(replicate, bool)
    if scalar and not 0 <= int(replicate) < 2**32:
        raise ValueError(f"replicate must be in [0, 2**32), got {replicate!r}")
    reps = _replicate_array(replicate, xp.reshape(xp.asarray(replicate), (-1,)) if scalar
                            else xp.asarray(replicate), xp)
    u32 = xp.uint32
    words = xp.asarray(seed_words(seed), dtype=u32)
    keys = _replicate_keys((words[0:1], words[1:2]),
                           xp.reshape(xp.astype(reps, u32), (-1, 1)), xp)
    return xp, xp.astype(pos, u32), reps, keys, topup_plan(n), scalar, n


def _total_dtype(xp):
    # the totals are below 2**32 (topup_plan): int64, or uint32 on JAX without x64
    return xp.int64 if B.acc_int(xp) == xp.int64 else xp.uint32


def _poisson_rows(pos, keys, thresholds, xp):
    """``(B, m)`` uint32 Poisson parts of rows at positions ``pos`` (the one-machine hash)."""
    return _poisson(_hash(xp.reshape(pos, (1, -1)) * _GOLDEN, keys[0], keys[1], xp), xp,
                    xp.uint32, thresholds)


def multinomial_totals(rows: ArrayLike, replicate: ArrayLike, *, n: int,
                       seed: SeedLike = None, xp: Any = None) -> Array:
    """Pass 1 of the distributed multinomial bootstrap: a partition's Poisson totals.

    The default bootstrap design (``resampling="multinomial"``, plain rows)
    draws each replicate as independent Poisson(lam) counts of the row
    positions, ``lam = 1 - 5 / sqrt(n)``, topped up to exactly ``n`` draws by
    extra uniform draws (:func:`multinomial_counts`). This function returns,
    for the rows at global positions ``rows`` of the ``n`` rows, the sum of
    their Poisson parts in each replicate. Summed over the partitions (any
    split of ``0 .. n - 1``), the totals are the whole data's, which pass 2
    (:func:`multinomial_counts`) needs. For ``n <= 25`` (no Poisson part) and
    past 2**31 rows (every replicate drawn directly) the totals are 0.

    Parameters
    ----------
    rows : 1-D integer array
        The partition's global row positions, distinct, in ``[0, n)``: the
        positions of its rows in the one-machine row order (a partition of
        rows ``[lo, hi)`` passes ``arange(lo, hi)``). Any order.
    replicate : int in [0, 2**32), or a 1-D integer array of them
    n : int >= 1
        The number of rows of the whole data (at most ``2**32 - 1``).
    seed : None, int >= 0, NumPy Generator or SeedSequence, or JAX key
        As :func:`calipers.paired_bootstrap`; give the same explicit seed to
        every partition (``None`` draws fresh entropy at each call).
    xp : namespace, optional
        ``numpy`` (default) or ``jax.numpy`` (traceable under ``jit``).

    Returns
    -------
    array (B,) of int64 (uint32 on JAX without x64; the totals are below 2**32)
        A 0-d array for an int ``replicate``. Memory O(B * len(rows)).

    Raises
    ------
    ValueError
        ``n`` not a positive integer or above ``2**32 - 1``; ``rows`` not a
        1-D integer array or (eagerly) outside ``[0, n)``; ``replicate`` out
        of range; a bad ``seed``.
    """
    xp, pos, reps, keys, plan, scalar, n = _multinomial_setup(rows, replicate, n, seed, xp)
    tdt = _total_dtype(xp)
    if plan is None or not plan[0] or pos.shape[0] == 0:
        out = xp.zeros(reps.shape[0], dtype=tdt)
    else:
        c = _poisson_rows(pos, keys, plan[0], xp)
        out = xp.astype(xp.sum(c, axis=1, dtype=xp.uint32), tdt)
    return out[0] if scalar else out


def _membership(pos, xp):
    """``(order, sorted)``: ``pos`` sorted, to find a drawn position among them."""
    order = xp.argsort(pos)
    return order, xp.take(pos, order)


def _hits(drawn, order, sp, xp):
    """Index into the partition of each drawn position, and whether it is there at all."""
    m = sp.shape[0]
    j = xp.searchsorted(sp, drawn)
    j = xp.minimum(j, m - 1)
    return xp.take(order, xp.reshape(j, (-1,))), \
        xp.reshape(xp.take(sp, xp.reshape(j, (-1,))) == xp.reshape(drawn, (-1,)), drawn.shape)


def multinomial_counts(rows: ArrayLike, replicate: ArrayLike, totals: ArrayLike, *, n: int,
                       seed: SeedLike = None, xp: Any = None) -> Array:
    """Pass 2 of the distributed multinomial bootstrap: a partition's counts.

    Given ``n`` and the whole data's Poisson totals (the sum over partitions
    of :func:`multinomial_totals`), the counts of the rows at global
    positions ``rows`` in each replicate: their Poisson parts plus the extra
    draws that land on them. Bit for bit the counts that
    :func:`calipers.paired_bootstrap` and
    :func:`calipers.paired_bootstrap_replicates` draw with the default
    ``resampling="multinomial"`` on plain rows (no ``stratify``, ``groups``,
    ``block_length`` or integer ``sample_weight``), for the rows at those
    positions, so the counts of every partition concatenated are one
    machine's and sum to ``n`` in every replicate.

    The design (Poisson counts topped up to ``n`` draws): given their total
    T, Poisson counts are Multinomial(T, uniform), and ``n - T`` more uniform
    draws make them Multinomial(n, uniform). A replicate whose total passes
    ``n``, or that misses more than ``M = ceil(10 sqrt(n))`` draws (each
    about 3e-7), is drawn directly, ``n`` uniform draws: each partition then
    hashes all ``n`` draws of that replicate and keeps the ones on its rows,
    O(n) time for those rare replicates (memory O(2**22) on NumPy; under
    JAX, a ``lax.map`` over the batch's replicates taken only when one of
    them falls back).

    Parameters
    ----------
    rows : 1-D integer array
        The partition's global row positions, distinct, in ``[0, n)`` (a
        partition of rows ``[lo, hi)``: ``arange(lo, hi)``). Any order; the
        counts come in that order.
    replicate : int in [0, 2**32), or a 1-D integer array of them
    totals : integer array (B,) (0-d for an int ``replicate``)
        The summed :func:`multinomial_totals` of every partition, replicate
        by replicate. Totals of only some partitions give counts that are not
        the one-machine counts (nothing can check this).
    n, seed, xp
        As :func:`multinomial_totals`; the same on every partition.

    Returns
    -------
    array (B, len(rows)) of int64 (int32 on JAX without x64)
        ``(len(rows),)`` for an int ``replicate``. Memory O(B * (len(rows) +
        M)), M = ceil(10 sqrt(n)).

    Raises
    ------
    ValueError
        As :func:`multinomial_totals`; ``totals`` not one integer per
        replicate, or (eagerly) negative.

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import multinomial_counts, multinomial_totals
    >>> n, reps = 1000, np.arange(4)
    >>> parts = [np.arange(0, 300), np.arange(300, 1000)]
    >>> totals = sum(multinomial_totals(p, reps, n=n, seed=5) for p in parts)
    >>> counts = np.concatenate([multinomial_counts(p, reps, totals, n=n, seed=5)
    ...                          for p in parts], axis=1)
    >>> counts.sum(axis=1).tolist()
    [1000, 1000, 1000, 1000]
    """
    xp, pos, reps, keys, plan, scalar, n = _multinomial_setup(rows, replicate, n, seed, xp)
    tot = xp.reshape(xp.asarray(totals), (-1,))
    if not xp.isdtype(tot.dtype, "integral") or tot.shape[0] != reps.shape[0]:
        raise ValueError(f"totals must hold one integer per replicate ({reps.shape[0]}), got "
                         f"shape {tuple(xp.asarray(totals).shape)} and dtype {tot.dtype}")
    if not B.is_traced(tot) and tot.shape[0] and \
            xp.isdtype(tot.dtype, "signed integer") and bool(xp.any(tot < 0)):
        raise ValueError("totals must be non-negative (sums of multinomial_totals)")
    idt = B.acc_int(xp)
    Bn, m = reps.shape[0], pos.shape[0]
    if m == 0:
        out = xp.zeros((Bn, 0), dtype=idt)
        return out[0] if scalar else out
    order, sp = _membership(pos, xp)
    wide = _wide(xp)
    if plan is None:         # every replicate is the direct draw, counters from 0
        ok = xp.zeros(Bn, dtype=xp.bool)
        c = xp.zeros((Bn, m), dtype=idt)
        k0 = 0
    else:
        thresholds, M = plan
        c = xp.astype(_poisson_rows(pos, keys, thresholds, xp), idt) if thresholds else \
            xp.zeros((Bn, m), dtype=idt)
        tot = xp.astype(tot, xp.int64) if wide else tot
        ok = (tot <= n) & (n - tot <= M)
        missing = xp.where(ok, n - tot, 0)
        drawn = _mulhi(_draws(n, M, keys, xp), _U(n), xp, wide)          # (B, M)
        take = xp.reshape(xp.arange(M), (1, M)) < xp.reshape(missing, (-1, 1))
        at, there = _hits(drawn, order, sp, xp)
        add = xp.reshape(xp.astype(there & take, idt), (-1,))
        b = xp.reshape(xp.broadcast_to(xp.reshape(xp.arange(Bn), (-1, 1)), (Bn, M)), (-1,))
        c = _scatter_add2(c, b, at, add, xp)
        k0 = n + M
    c = _direct_fallback(c, ok, keys, k0, n, order, sp, xp, idt)
    return c[0] if scalar else c


def _scatter_add2(c, i, j, add, xp):
    """``c[i, j] += add`` with repeated pairs summed (a copy on JAX)."""
    if B.is_numpy(xp):
        np.add.at(c, (np.asarray(i, dtype=np.intp), np.asarray(j, dtype=np.intp)), add)
        return c
    return c.at[i, j].add(add)


def _direct_one(key1, key2, k0, n, order, sp, xp, idt, chunk):
    """One replicate's direct draws (``n`` from counter ``k0``) that land on the partition."""
    m = sp.shape[0]
    keys = (xp.reshape(key1, (1,)), xp.reshape(key2, (1,)))
    out = xp.zeros(m, dtype=idt)
    for s in range(0, n, chunk):
        drawn = _mulhi(_draws(k0 + s, min(chunk, n - s), keys, xp), _U(n), xp, _wide(xp))
        at, there = _hits(drawn, order, sp, xp)
        out = _scatter_add(out, at, xp.astype(there, idt), xp)
    return out


def _direct_fallback(c, ok, keys, k0, n, order, sp, xp, idt):
    """Replicates not ``ok`` replaced by their direct draws (eagerly only those; JAX: a
    ``lax.cond`` on any of them, then a ``lax.map`` over the batch)."""
    if B.is_numpy(xp):
        for b in np.flatnonzero(~np.asarray(ok)):
            c[b] = _direct_one(keys[0][b, 0], keys[1][b, 0], k0, n, order, sp, xp, idt,
                               _DIRECT_CHUNK)
        return c
    import jax

    def direct(c):
        d = jax.lax.map(lambda k: _direct_one(k[0], k[1], k0, n, order, sp, xp, idt, n),
                        (keys[0][:, 0], keys[1][:, 0]))
        return xp.where(xp.reshape(ok, (-1, 1)), c, d)

    return jax.lax.cond(xp.all(ok), lambda c: c, direct, c)


def row_counts(design: _Design, arrays, words, r, xp, idtype):
    """Counts per row in the caller's order of replicate ``r``: (n,) ``idtype``.

    ``xp`` is NumPy or ``jax.numpy`` (array-api-strict and torch draw with
    NumPy); the same integers on both.
    """
    if _unit_multinomial(design):
        data = (() if design.kind == "plain" and not design.repeat else arrays, None)
        return draw_counts(design, data, words, r, xp, idtype)
    wide = _wide(xp)
    keys = _keys(words, r, xp)

    def hashes(m):
        return _draws(0, m, keys, xp)

    n = design.n
    if design.repeat:
        return _repeat_counts(design, arrays, keys, xp, idtype, wide)
    if design.kind == "plain" and design.ids:     # Poisson rows by id (layout None here)
        return _poisson(_hash_id_arrays(arrays, keys, xp), xp, idtype)
    if design.kind == "plain":        # Poisson rows
        return _poisson(hashes(n), xp, idtype)
    if design.kind == "stratified":
        low, size, rows = arrays
        j = xp.astype(_mulhi(hashes(n), size, xp, wide), low.dtype)
        return _bincount(xp.take(rows, low + j), n, xp, idtype)
    if design.kind == "cluster":      # Poisson clusters
        (unit,) = arrays
        return xp.take(_poisson(hashes(design.n_units), xp, idtype), unit)
    # moving blocks over the caller's (time) order
    L = design.block_length
    nb = -(-n // L)
    starts = xp.astype(_mulhi(hashes(nb), _U(n - L + 1), xp, wide), idtype)
    ends = starts + L
    last = n - (nb - 1) * L      # the last block is cut to n rows in all
    ends = xp.where(xp.arange(nb) == nb - 1, starts + last, ends)
    d = _bincount(starts, n + 1, xp, idtype) - _bincount(ends, n + 1, xp, idtype)
    return xp.cumsum(d[:n], dtype=idtype)


def _repeat_counts(design, arrays, keys, xp, idtype, wide):
    """Integer weights as repetitions: M = sum(w) units, unit j is row i for
    ``cw[i] <= j < cw[i + 1]`` (``cw`` the weights' cumulative sum from 0).

    The units are the rows of the repeated data in order, so the counts are
    those of bootstrapping the repeated rows, summed per original row.
    """
    n, M = design.n, design.n_units
    if design.kind == "plain":
        (cw0,) = arrays
        # Poisson (multinomial units: _design_multinomial): a unit's Poisson count,
        # a row's count the sum of its units'
        C = xp.concat([xp.zeros(1, dtype=idtype),
                       xp.cumsum(_poisson(_draws(0, M, keys, xp), xp, idtype), dtype=idtype)])
        return xp.take(C, cw0[1:]) - xp.take(C, cw0[:-1])
    # stratified: units sorted by class (rows by class, in caller order, repeated)
    bounds, rows, cwc0 = arrays
    k = xp.arange(M, dtype=bounds.dtype)
    cls = xp.searchsorted(bounds, k, side="right") - 1
    low = xp.take(bounds, cls)
    size = xp.astype(xp.take(bounds, cls + 1) - low, xp.uint32)
    u = low + xp.astype(_mulhi(_draws(0, M, keys, xp), size, xp, wide), low.dtype)
    pos = xp.searchsorted(cwc0[1:], u, side="right")
    return _bincount(xp.take(rows, pos), n, xp, idtype)


def _rowwise(design: _Design) -> bool:
    """Is each row's count a function of its own hash alone (plain Poisson)?

    Then the counts are drawn straight in layout order, hashing each layout
    position's caller row: no scatter, no gather, the same integers.
    """
    return design.kind == "plain" and design.poisson and not design.repeat


def small_counts(design: _Design) -> bool:
    """Can :func:`draw_checked` give ``small`` (uint8, wrapping) counts for this design?

    Plain multinomial rows: a replicate's counts sum to ``n`` exactly, so
    counts wrapped modulo 256 sum to ``n`` if and only if none reached 256
    (each wrap loses 256): :func:`small_counts_ok`.
    """
    return _topup(design) and design.kind == "plain" and not design.repeat \
        and design.n < 2**31 - 1


def small_counts_ok(design: _Design, counts, xp):
    """Are ``small`` counts exact (no row's count wrapped past 255)?"""
    return xp.sum(counts, dtype=xp.int32) == design.n


def _count_dtype(design, xp, idtype, small):
    if not B.is_numpy(xp) and max(design.n, design.n_units) < 2**31 - 1:
        # JAX: int32 counts (exact below 2**31 rows): half the memory traffic
        # of int64 in the scatter and gathers; the kernels widen their sums
        return xp.uint8 if small and small_counts(design) else xp.int32
    return idtype


def draw_checked(design: _Design, data, words, r, xp, idtype, small=False):
    """Counts of replicate ``r`` in layout order, and whether they are exact: ``(counts, ok)``.

    Where ``ok`` is False the replicate is :func:`draw_counts`' instead (a
    multinomial whose Poisson part missed the top-up's range, about 6 replicates
    in 10^7, or ``small`` counts that wrapped). ``small`` (JAX, where
    :func:`small_counts` holds): uint8 counts modulo 256, a quarter of the
    int32 memory traffic in the gathers. Other designs: always ``ok``.
    """
    arrays, layout = data
    idtype = _count_dtype(design, xp, idtype, small)
    if not _topup(design):
        return draw_counts(design, data, words, r, xp, idtype), xp.asarray(True)
    c, ok = _design_multinomial(design, arrays, layout, _keys(words, r, xp), xp, idtype)
    if small and small_counts(design):
        ok = ok & small_counts_ok(design, c, xp)
    return c, ok


def draw_counts(design: _Design, data, words, r, xp, idtype):
    """Counts of replicate ``r`` in layout order (the caller's counts, gathered); exact."""
    arrays, layout = data
    idtype = _count_dtype(design, xp, idtype, False)
    if _unit_multinomial(design):
        def direct():
            return _design_multinomial(design, arrays, layout, _keys(words, r, xp), xp, idtype,
                                       direct=True)

        if not _topup(design):
            return direct()
        c, ok = draw_checked(design, data, words, r, xp, idtype)

        if B.is_numpy(xp):
            return c if bool(ok) else direct()
        import jax

        return jax.lax.cond(ok, lambda: c, direct)
    if _rowwise(design) and design.ids:
        return _poisson(_hash_id_arrays(arrays, _keys(words, r, xp), xp), xp, idtype)
    if _rowwise(design) and layout is not None:
        keys = _keys(words, r, xp)
        return _poisson(_hash_ids(layout, keys, xp, design.n), xp, idtype)
    c = row_counts(design, arrays, words, r, xp, idtype)
    return c if layout is None else xp.take(c, layout)


def draw_batch(design: _Design, data, words, idx, idtype):
    """JAX: the exact counts of replicates ``idx`` (vmapped), ``(len(idx), n)``.

    The fast draws run vmapped; the direct draws only when one of the batch needs
    them (a ``cond`` outside the ``vmap``, where it is a real branch: inside, both
    sides would run for every replicate).
    """
    import jax
    import jax.numpy as jnp

    def exact(i):
        return draw_counts(design, data, words, i, jnp, idtype)

    if not _topup(design):
        return jax.vmap(exact)(idx)
    c, ok = jax.vmap(lambda i: draw_checked(design, data, words, i, jnp, idtype))(idx)
    return jax.lax.cond(jnp.all(ok), lambda: c,
                        lambda: jnp.where(ok[:, None], c, jax.vmap(exact)(idx)))


_UNITS_MAX = 2**32 - 1


def _check_units(units, name, what):
    """A design that draws a uniform index below ``units`` (a uint32 multiply-high,
    :func:`_mulhi`) takes at most ``2**32 - 1`` of them: ``ValueError`` naming
    ``name`` past it (Poisson counts, keyed by 64-bit row ids, have no such limit)."""
    if units > _UNITS_MAX:
        raise ValueError(
            f"{name}: {what} is {units}, more than 2**32 - 1 = {_UNITS_MAX}, the most a "
            "bootstrap that draws uniform indices (multinomial, stratified or block "
            "resampling) can draw from (32-bit indices); resampling='poisson' counts each "
            "row by its own 64-bit row id and has no such limit")


def _inverse(layout, xp):
    """The position of each caller row in ``layout`` (a permutation)."""
    n = layout.shape[0]
    if B.is_numpy(xp):
        inv = np.empty(n, dtype=np.intp)
        inv[np.asarray(layout)] = np.arange(n)
        return inv
    return xp.zeros(n, dtype=layout.dtype).at[layout].set(xp.arange(n, dtype=layout.dtype))


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
    if idt == np.int32:
        # JAX without x64: the weights' cumulative sums and (Poisson) the units' counts'
        # cumulative sums are int32; a unit's Poisson count is at most len(_POISSON_T)
        top = M * (len(_POISSON_T) if poisson else 1)
        if top > 2**31 - 1:
            what = (f"{len(_POISSON_T)} (the largest Poisson count) times the total integer "
                    f"weight {M}" if poisson else "the total integer weight")
            raise ValueError(f"sample_weight: {what} is {top}, more than 2**31 - 1 = "
                             f"{2**31 - 1}, the int32 limit of the bootstrap's unit counts "
                             "(JAX without x64); enable jax_enable_x64")
    if y_codes is None:
        if not poisson:
            _check_units(M, "sample_weight", "the total integer weight (rows repeated)")
        cw0 = np.concatenate([[0], np.cumsum(w)]).astype(idt)
        return (_Design("plain", poisson, n, n_units=M, repeat=True),
                ((mod.asarray(cw0),), layout))
    codes = np.asarray(B.to_numpy(y_codes))
    rows = np.argsort(codes, kind="stable")
    per_class = np.zeros(int(codes.max()) + 1, dtype=np.int64)
    np.add.at(per_class, codes, w)          # integer sums (float weights round past 2**53)
    _check_units(int(per_class.max()), "sample_weight",
                 "the largest class's total integer weight (stratified rows repeated)")
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
                  traced, row_ids=None) -> tuple[_Design, Any]:
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
        if n > _UNITS_MAX:     # each class draws a uniform index among its rows
            big = n if traced else int(np.bincount(
                np.asarray(B.to_numpy(y_codes)).reshape(-1)).max())
            _check_units(big, "y_true", "the largest class's row count" if not traced
                         else "the row count (a class's size, under jit)")
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
        if not poisson:
            _check_units(int(n_groups), "groups", "the number of clusters")
        return d, ((groups_codes if (traced or not jaxy) else mod.asarray(groups_codes),), layout)
    if block_length is not None:
        _check_units(n - int(block_length) + 1, "y_true", "the number of block starts")
        return _Design("block", False, n, block_length=int(block_length)), ((), layout)
    if row_ids is not None:      # plain Poisson rows keyed by the caller's global ids
        words = id_words(row_ids, mod if not jaxy else xp)
        if layout is not None:
            words = tuple(None if w is None else mod.take(w, layout) for w in words)
        words = tuple(w for w in words if w is not None)
        return _Design("plain", True, n, ids=32 * len(words)), (words, layout)
    d = _Design("plain", poisson, n)
    if not poisson:
        _check_units(n, "y_true", "the row count")
    if layout is not None and _unit_multinomial(d):
        return d, ((_inverse(layout, mod),), layout)
    return d, ((), layout)


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


def _hash_inplace(kgx, keys, x, tmp, out=None):
    """``_hash`` of draws with replicate keys ``(k1, k2)`` (Python ints) into ``out``
    (default ``x``), in place.

    ``kgx`` is ``kg ^ (kg >> 16)`` of the draws' ``kg = k * _GOLDEN``: the
    first xor-shift of fmix distributes over the xor with ``k1``
    (``(a ^ b) >> s == (a >> s) ^ (b >> s)``), so it is taken once at set-up
    and one constant per replicate: 16 passes instead of 18. ``out`` may be
    wider than uint32 (the last pass widens on write).
    """
    k1, k2 = keys
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


def _poisson_inplace(x, T, c, ge):
    """:func:`_poisson` of the words ``x`` into the uint8 buffer ``c``; returns the total.

    Four comparisons give counts 0..4; the rows the fourth one finds (count 4
    or more, about 2%) take the inverse CDF by ``searchsorted``: the same
    integers. The total comes from the comparisons' popcounts (a uint8 sum
    would convert every element).
    """
    np.greater_equal(x, T[0], out=c.view(bool))
    total = int(np.count_nonzero(c))
    for t in T[1:4]:
        np.greater_equal(x, t, out=ge)
        total += int(np.count_nonzero(ge))
        np.add(c, ge.view(np.uint8), out=c)
    if T.shape[0] > 4:          # ``ge``: the rows at or above T[3]
        tail = np.flatnonzero(ge)
        if tail.size:
            v = np.searchsorted(T, x[tail], side="right")
            total += int(v.sum()) - 4 * tail.size
            c[tail] = v
    return total


def numpy_drawer(design: _Design, data, words, small: bool = False):
    """``r -> counts in layout order`` on NumPy, equal to :func:`draw_counts`.

    Plain rows, multinomial (Poisson counts topped up to ``n`` draws,
    :func:`topup_plan`) or Poisson, are hashed in layout order as in-place
    passes over buffers reused per thread: no scatter of ``n`` draws and no
    gather. Counts are int64, or with ``small`` (a consumer that widens its
    own sums) uint8 where no count can reach 256 (the buffer of the calling
    thread, valid until its next draw); other designs use :func:`draw_counts`.
    """
    arrays, layout = data
    words = np.asarray(words, dtype=np.uint32)
    if _rowwise(design) and design.ids:
        if len(arrays) > 1:        # 64-bit ids: no in-place passes
            return lambda r: draw_counts(design, data, words, r, np, np.int64)
        return _numpy_poisson_drawer(design.n, arrays[0], words, small)
    if _rowwise(design) and design.n > 2**32:     # 64-bit row ids: no in-place passes
        return lambda r: draw_counts(design, data, words, r, np, np.int64)
    if _rowwise(design):
        return _numpy_poisson_drawer(design.n, layout, words, small)
    if not small_counts(design):    # (plain multinomial rows: the in-place passes below)
        return lambda r: draw_counts(design, data, words, r, np, np.int64)
    n = design.n
    thresholds, M = topup_plan(n)
    T = np.asarray(thresholds, dtype=np.uint32)
    # One hash over the rows (in layout order) and the extra draws' counters after
    # them: half the calls of two hashes, for M = 10 sqrt(n) more words.
    rows = np.arange(n, dtype=np.uint32) if layout is None else \
        np.asarray(layout).astype(np.uint32)
    kgx = _shifted_keys(np.concatenate([rows, np.arange(M, dtype=np.uint32) + _U(n)])
                        * _GOLDEN)
    if not T.shape[0]:
        kgx = kgx[n:]           # no Poisson part: only the extra draws
    inv = None if layout is None else np.ascontiguousarray(arrays[0], dtype=np.intp)
    ones = np.ones(M, dtype=np.uint8)
    n64, s32 = np.uint64(n), np.uint64(32)
    # a uint8 count can wrap only where a row takes this many extra draws
    wrap_at = _SMALL_MAX + 1 - T.shape[0]
    L = kgx.shape[0]
    scratch: dict = {}

    def buffers():
        return (np.empty(L, np.uint32), np.empty(L, np.uint32), np.empty(n, np.uint8),
                np.empty(n, bool), np.empty(M, np.uint64))

    def draw(r):
        if native.lib is not None:
            # the same integers in one compiled pass (hash, Poisson, top-up)
            c = B.thread_buffers(scratch, "topup-native", lambda: np.empty(n, np.uint8))
            k1, k2 = _replicate_keys_int(words, r)
            status = native.lib.topup_draw(kgx, k1, k2, T, n, M, inv, c)
            if status == 0:
                # (uint8 holds every count to 255; a lower _SMALL_MAX is a tests' hook)
                wide = not small or (_SMALL_MAX < 255 and int(c.max()) > _SMALL_MAX)
                return c.astype(np.int64) if wide else c
            if status == -1:        # the Poisson part missed the top-up's range
                return draw_counts(design, data, words, r, np, np.int64)
            # (-2: a count passed 255; the passes below count in int64)
        x, tmp, c, ge, u = B.thread_buffers(scratch, "topup", buffers)
        _hash_inplace(kgx, _replicate_keys_int(words, r), x, tmp)
        if T.shape[0]:
            total = _poisson_inplace(x[:n], T, c, ge)
            extra = x[n:]
        else:
            c.fill(0)
            total, extra = 0, x
        missing = n - total
        if missing < 0 or missing > M:
            return draw_counts(design, data, words, r, np, np.int64)
        u = u[:missing]
        np.multiply(extra[:missing], n64, out=u)      # (uint64: u * n < 2**64)
        np.right_shift(u, s32, out=u)
        pos = u.view(np.int64)
        if inv is not None:
            pos = np.take(inv, pos)
        if small and (missing < wrap_at or
                      np.bincount(pos & 1023, minlength=1024).max() < wrap_at):
            np.add.at(c, pos, ones[:missing])
            return c
        wide = c.astype(np.int64)
        np.add.at(wide, pos, 1)
        return wide
    return draw


def _numpy_poisson_drawer(n, layout, words, small):
    """Plain Poisson counts hashed in layout order, in place (per-thread buffers)."""
    rows = np.arange(n, dtype=np.uint32) if layout is None else \
        np.asarray(layout).astype(np.uint32)
    kgx = _shifted_keys(rows * _GOLDEN)
    T = np.asarray(_POISSON_T, dtype=np.uint32)
    scratch: dict = {}

    def buffers():
        return (np.empty(n, np.uint32), np.empty(n, np.uint32), np.empty(n, np.uint8),
                np.empty(n, bool))

    def draw(r):
        if native.lib is not None:      # the same integers in one compiled pass
            c = B.thread_buffers(scratch, "poisson-native", lambda: np.empty(n, np.uint8))
            native.lib.poisson_draw(kgx, *_replicate_keys_int(words, r), T, c)
            return c if small else c.astype(np.int64)
        x, tmp, c, ge = B.thread_buffers(scratch, "poisson", buffers)
        _hash_inplace(kgx, _replicate_keys_int(words, r), x, tmp)
        _poisson_inplace(x, T, c, ge)
        return c if small else c.astype(np.int64)
    return draw
