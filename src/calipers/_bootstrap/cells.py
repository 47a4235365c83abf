"""Bootstrap counts per cell: resampling units that differ only by a cell label.

When a statistic depends on the resampled units only through how many of
them fall in each of a few cells (a Bradley-Terry likelihood through its
pairwise win and tie counts, a confusion matrix through its entries), a
bootstrap replicate need not draw a count per unit. Resampling ``N`` units
with replacement, each with probability ``1 / N``, puts
``(C_1, ..., C_G) ~ Multinomial(N, (m_1 / N, ..., m_G / N))`` units in the
cells, ``m_g`` being cell ``g``'s multiplicity (its number of units): the
cells' counts have exactly the distribution of the per-unit multinomial
summed over each cell's units. So a replicate costs O(G), not O(N).

The multinomial is drawn by binomial splitting down a balanced binary tree
over the cells in their canonical (sorted) order: a node holding ``c`` units
of multiplicity ``M`` sends ``Binomial(c, M_left / M)`` of them to its left
child and the rest to its right child (the conditional distribution of a
multinomial's left part given the node's total), starting from ``N`` units
at the root. Every probability is a ratio of two exact integer
multiplicities, rounded once to float64.

The random numbers of replicate ``r`` come from NumPy's
``Generator(PCG64(SeedSequence(entropy=words, spawn_key=(r,))))``, ``words``
being the seed's two uint32 words (:func:`calipers._bootstrap.resample.seed_words`),
and its binomials are drawn level by level from the root, each level left
to right. Replicate ``r``'s counts are therefore a function of the seed,
``r`` and the sorted cells with their multiplicities only: not of the
units' order, nor of how many replicates are drawn. The stream is NumPy's
``Generator.binomial``, whose output NumPy keeps from release to release
only as a practice, not a promise (NEP 19): a NumPy upgrade could change
the counts, never their distribution.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CellTable", "cell_table", "cell_counts", "replicate_generator"]

#: Bound on the units of a table: their int64 sum and the binomials' counts stay exact.
_MAX_UNITS = 2**62


class CellTable:
    """Cells in canonical order with their multiplicities, and the binary tree over them.

    ``cells`` (G,): the distinct cell labels, sorted; ``value`` (G,) float64
    or None: the second key of each cell when units were keyed by
    ``(cell, value)`` (see :func:`cell_table`); ``multiplicity`` (G,) int64:
    units per cell (every one positive); ``n_units``: their sum.
    """

    def __init__(self, cells, value, multiplicity):
        self.cells = cells
        self.value = value
        self.multiplicity = multiplicity
        if multiplicity.shape[0] and float(multiplicity.sum(dtype=np.float64)) >= _MAX_UNITS:
            raise ValueError(f"the total multiplicity (integer weight) of the units must be "
                             f"below 2**62 = {_MAX_UNITS}, got about "
                             f"{float(multiplicity.sum(dtype=np.float64)):.3e}")
        self.n_units = int(multiplicity.sum())
        G = int(multiplicity.shape[0])
        size = 1 << max(0, (G - 1).bit_length())
        level = np.zeros(size, np.int64)
        level[:G] = multiplicity
        sums = [level]
        while sums[-1].shape[0] > 1:
            x = sums[-1]
            sums.append(x[0::2] + x[1::2])
        # per level from the root down: (children's count, left child's share of its parent)
        self._splits = []
        for lv in range(len(sums) - 2, -1, -1):
            parent, left = sums[lv + 1], sums[lv][0::2]
            share = np.divide(left, parent, out=np.zeros(parent.shape[0]), where=parent > 0)
            self._splits.append((sums[lv].shape[0], share))
        self._G = G


def cell_table(cells, value=None, multiplicity=None) -> CellTable:
    """Group units by their cell (and ``value``), in sorted order.

    ``cells`` (n,) integer labels of the units' cells. ``multiplicity`` (n,)
    non-negative integers, optional: unit ``i`` stands for that many units
    (an integer weight as repetition); default 1. ``value`` (n,) float,
    optional: a second key, so units of one cell with different values stay
    in different cells (a non-integer weight that multiplies each unit's
    count). Cells of multiplicity 0 are dropped (they never receive a
    count). The result depends on the multiset of ``(cell, value,
    multiplicity)`` only, never on the units' order.
    """
    cells = np.asarray(cells, dtype=np.int64)
    mult = (np.ones(cells.shape[0], np.int64) if multiplicity is None
            else np.asarray(multiplicity, dtype=np.int64))
    if value is None:
        uniq, inv = np.unique(cells, return_inverse=True)
        m = np.zeros(uniq.shape[0], np.int64)       # int64 sums: exact, unlike bincount's
        np.add.at(m, inv.reshape(-1), mult)           # float64 weights past 2**53
        keep = m > 0
        return CellTable(uniq[keep], None, np.asarray(m, np.int64)[keep])
    v = np.asarray(value, dtype=np.float64)
    order = np.lexsort((v, cells))
    c, v, mm = cells[order], v[order], mult[order]
    start = np.ones(c.shape[0], bool)
    start[1:] = (c[1:] != c[:-1]) | (v[1:] != v[:-1])
    first = np.flatnonzero(start)
    m = np.add.reduceat(mm, first) if first.shape[0] else np.zeros(0, np.int64)
    keep = m > 0
    return CellTable(c[first][keep], v[first][keep], np.asarray(m, np.int64)[keep])


def replicate_generator(words, r: int) -> np.random.Generator:
    """Replicate ``r``'s generator: ``Generator(PCG64(SeedSequence(words, spawn_key=(r,))))``."""
    entropy = [int(w) for w in np.asarray(words).reshape(-1)]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy,
                                                                      spawn_key=(int(r),))))


def cell_counts(table: CellTable, words, r: int) -> np.ndarray:
    """Replicate ``r``'s units per cell (G,) int64: ``Multinomial(N, m / N)``, summing to ``N``.

    Drawn by binomial splitting down the table's tree from the generator of
    :func:`replicate_generator` (see the module doc); a function of
    ``(words, r, table)`` only.
    """
    rng = replicate_generator(words, r)
    c = np.array([table.n_units], np.int64)
    for size, share in table._splits:
        left = rng.binomial(c, share)
        nxt = np.empty(size, np.int64)
        nxt[0::2] = left
        nxt[1::2] = c - left
        c = nxt
    return c[:table._G]
