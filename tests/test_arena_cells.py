"""Bootstrap counts per cell (``calipers._bootstrap.cells``) against the row bootstrap.

The reference: enumeration of every equally likely way to draw ``N`` units with replacement
(``N ** N`` index tuples), each tuple summed into its cells, as exact fractions. The cells'
draws must follow that distribution (a chi-square test on many replicates, which a wrong
split probability, a wrong tree order or a lost unit fails), sum to ``N``, and depend on the
seed, the replicate and the sorted cells only.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2

from calipers._bootstrap.cells import cell_counts, cell_table, replicate_generator
from calipers._bootstrap.resample import seed_words


def enumerated(unit_cells):
    """Exact distribution of the cells' counts when the units are drawn with replacement."""
    N = len(unit_cells)
    cells = sorted(set(unit_cells))
    dist: Counter = Counter()
    for draw in itertools.product(range(N), repeat=N):
        c = Counter(unit_cells[i] for i in draw)
        dist[tuple(c[g] for g in cells)] += 1
    return {k: Fraction(v, N ** N) for k, v in dist.items()}


def chi_square_pvalue(table, words, expected, R):
    seen = Counter(tuple(cell_counts(table, words, r).tolist()) for r in range(R))
    assert set(seen) <= set(expected), "a count vector the row bootstrap cannot produce"
    stat = sum((seen.get(k, 0) - R * float(p)) ** 2 / (R * float(p)) for k, p in expected.items())
    return float(chi2.sf(stat, len(expected) - 1))


@pytest.mark.parametrize("unit_cells", [
    (7, 7, 2, 9),            # 4 units in 3 cells (multiplicities 1, 2, 1 once sorted)
    (0, 1, 1, 1, 4),         # 5 units in 3 cells, a 3-unit cell
    (5, 3, 8, 1, 6),         # 5 units in 5 cells (a tree padded from 5 to 8 leaves)
])
def test_cell_counts_follow_the_row_bootstrap_exactly(unit_cells):
    expected = enumerated(list(unit_cells))
    assert sum(expected.values()) == 1
    table = cell_table(np.array(unit_cells))
    assert table.cells.tolist() == sorted(set(unit_cells))
    p = chi_square_pvalue(table, seed_words(3), expected, R=6000)
    assert p > 1e-4, p


def test_chi_square_rejects_a_wrong_distribution():
    # the test above can fail: the same statistic on a table whose multiplicities are wrong
    expected = enumerated([7, 7, 2, 9])
    wrong = cell_table(np.array([2, 7, 9]))        # every cell multiplicity 1
    counts = Counter(tuple(cell_counts(wrong, seed_words(3), r).tolist()) for r in range(6000))
    stat = sum((counts.get(k, 0) - 6000 * float(p)) ** 2 / (6000 * float(p))
               for k, p in expected.items())
    assert chi2.sf(stat, len(expected) - 1) < 1e-6


def test_multiplicities_are_repetitions_and_zeros_drop_out():
    cells = np.array([4, 1, 4, 9, 1])
    mult = np.array([2, 0, 1, 0, 3])
    t = cell_table(cells, multiplicity=mult)
    assert t.cells.tolist() == [1, 4] and t.multiplicity.tolist() == [3, 3] and t.n_units == 6
    rep = cell_table(np.repeat(cells, mult))
    words = seed_words(12)
    for r in range(20):
        np.testing.assert_array_equal(cell_counts(t, words, r), cell_counts(rep, words, r))


def test_value_keys_split_a_cell():
    t = cell_table(np.array([3, 3, 3, 1]), value=np.array([0.5, 2.0, 0.5, 2.0]))
    assert t.cells.tolist() == [1, 3, 3]
    assert t.value.tolist() == [2.0, 0.5, 2.0]
    assert t.multiplicity.tolist() == [1, 2, 1] and t.n_units == 4


def test_counts_sum_to_the_units_and_depend_on_seed_replicate_and_cells_only():
    rng = np.random.default_rng(0)
    cells = rng.integers(0, 300, 5000)
    t1 = cell_table(cells)
    t2 = cell_table(cells[rng.permutation(cells.shape[0])])
    words = seed_words(21)
    draws = [cell_counts(t1, words, r) for r in range(5)]
    for r, c in enumerate(draws):
        assert c.dtype == np.int64 and int(c.sum()) == 5000 and np.all(c >= 0)
        np.testing.assert_array_equal(c, cell_counts(t2, words, r))
    # replicate r is the same whichever replicates are drawn before it
    np.testing.assert_array_equal(cell_counts(t1, words, 4), draws[4])
    assert not np.array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], cell_counts(t1, seed_words(22), 0))
    # the stated generator
    g = replicate_generator(words, 7)
    ref = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        [int(w) for w in words], spawn_key=(7,))))
    assert g.integers(0, 2**63) == ref.integers(0, 2**63)


def test_counts_moments_at_scale():
    # Multinomial(N, m / N): mean m and variance m (1 - m / N) per cell
    rng = np.random.default_rng(1)
    mult = rng.integers(1, 50, 40)
    t = cell_table(np.arange(40), multiplicity=mult)
    N = t.n_units
    R = 3000
    c = np.array([cell_counts(t, seed_words(2), r) for r in range(R)])
    var = mult * (1 - mult / N)
    z = (c.mean(axis=0) - mult) / np.sqrt(var / R)
    assert np.max(np.abs(z)) < 4.5
    # covariance of two cells: -m_i m_j / N
    cov = np.cov(c[:, 0], c[:, 1])[0, 1]
    assert abs(cov - (-mult[0] * mult[1] / N)) < 5 * math.sqrt(var[0] * var[1] / R)


def test_multiplicities_sum_exactly_past_float64_and_are_bounded():
    """Multiplicities are summed in int64 (a float64 sum would round past 2**53); a total
    at or past 2**62 is a ValueError, not a wrapped count."""
    big = 2**53 + 1
    t = cell_table(np.array([0, 0, 1]), multiplicity=np.array([big, 2, 1]))
    assert t.multiplicity.tolist() == [big + 2, 1] and t.n_units == big + 3
    with pytest.raises(ValueError, match="below 2\\*\\*62"):
        cell_table(np.array([0, 1]), multiplicity=np.array([2**61, 2**61]))
