"""Holm / Bonferroni / BH / BY adjustments against their definitions by brute force,
R's p.adjust worked values and scipy's false_discovery_control."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calipers


def _brute(p, method):
    """The textbook definitions, in exact fractions, one hypothesis at a time."""
    p = [Fraction(x) for x in p]
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    rank = {i: r + 1 for r, i in enumerate(order)}
    out = [None] * m
    for i in range(m):
        r = rank[i]
        if method == "bonferroni":
            out[i] = min(1, m * p[i])
        elif method == "holm":
            out[i] = max(min(1, (m - rank[j] + 1) * p[j]) for j in range(m) if rank[j] <= r)
        else:
            c = 1 if method == "bh" else sum(Fraction(1, k) for k in range(1, m + 1))
            out[i] = min(min(1, c * m * p[j] / rank[j]) for j in range(m) if rank[j] >= r)
    return [float(v) for v in out]


def test_r_padjust_worked_values():
    # R: p.adjust(c(0.01, 0.04, 0.03, 0.02, 0.05), "holm") / "BH" / "BY"
    p = [0.01, 0.04, 0.03, 0.02, 0.05]
    np.testing.assert_allclose(calipers.adjust_pvalues(p, method="holm"),
                               [0.05, 0.09, 0.09, 0.08, 0.09], rtol=1e-12)
    np.testing.assert_allclose(calipers.adjust_pvalues(p, method="bh"), [0.05] * 5, rtol=1e-12)
    np.testing.assert_allclose(calipers.adjust_pvalues(p, method="by"),
                               [0.05 * 137 / 60] * 5, rtol=1e-12)
    np.testing.assert_allclose(calipers.adjust_pvalues(p, method="bonferroni"),
                               [0.05, 0.2, 0.15, 0.1, 0.25], rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.001, 0.01, 0.02, 0.04, 0.2, 0.5, 0.9, 1.0]),
                min_size=1, max_size=9),
       st.sampled_from(["holm", "bonferroni", "bh", "by"]))
def test_matches_definition_with_ties(p, method):
    got = calipers.adjust_pvalues(np.array(p), method=method)
    np.testing.assert_allclose(got, _brute(p, method), rtol=1e-12, atol=0)
    assert np.all(got >= np.array(p))


def test_bh_by_match_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    p = rng.uniform(size=200) ** 3
    np.testing.assert_allclose(calipers.adjust_pvalues(p, method="bh"),
                               scipy_stats.false_discovery_control(p, method="bh"), rtol=1e-12)
    np.testing.assert_allclose(calipers.adjust_pvalues(p, method="by"),
                               scipy_stats.false_discovery_control(p, method="by"), rtol=1e-12)


@pytest.mark.parametrize("method", ["holm", "bonferroni", "bh", "by"])
def test_backends(backend, method):
    rng = np.random.default_rng(1)
    p = np.round(rng.uniform(size=30), 2)  # ties
    want = calipers.adjust_pvalues(p, method=method)
    got = backend.call(calipers.adjust_pvalues, p, method=method)
    tol = 1e-6 if not backend.x64 else 1e-12
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("bad", [[0.1, 1.5], [0.1, -0.01], [0.2, float("nan")]])
def test_invalid_raises_naming_argument(bad):
    with pytest.raises(ValueError, match="pvalues must be in"):
        calipers.adjust_pvalues(bad)


def test_invalid_under_jit_is_nan():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    out = jax.jit(calipers.adjust_pvalues)(jnp.asarray([0.1, 1.5, 0.2]))
    assert np.all(np.isnan(np.asarray(out)))


def test_unknown_method_and_empty():
    with pytest.raises(ValueError, match="method must be one of"):
        calipers.adjust_pvalues([0.1], method="hochberg")
    assert calipers.adjust_pvalues(np.zeros(0)).shape == (0,)
