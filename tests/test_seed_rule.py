"""One seed rule and one replicate-count default per kind of procedure, for every public function.

The rule (docs/bootstrap.md, "Seeds and replicate counts"): every function that draws random
numbers takes ``seed=None`` by default (fresh operating-system entropy; an int, a
``numpy.random.SeedSequence`` or ``Generator`` makes the draws reproducible), every bootstrap
defaults to ``n_resamples=1000`` and every Monte Carlo permutation test to ``n_resamples=10000``.
"""

from __future__ import annotations

import inspect

import pytest

import calipers
import calipers.plot
import calipers.retrieval

PERMUTATION = {"paired_permutation_test"}


def _public():
    seen = {}
    for mod in (calipers, calipers.retrieval, calipers.plot):
        for name in mod.__all__:
            fn = getattr(mod, name)
            if callable(fn) and not isinstance(fn, type):
                seen.setdefault(name, fn)
    return seen


FUNCS = {n: f for n, f in _public().items() if "seed" in inspect.signature(f).parameters}


def test_the_rule_covers_the_resampling_functions():
    # a reader that finds nothing cannot fail: the known resampling functions are here
    assert {"paired_bootstrap", "paired_bootstrap_replicates", "paired_unit_bootstrap",
            "paired_permutation_test", "off_policy_interval", "roc_curves"} <= set(FUNCS)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_seed_defaults_to_none(name):
    assert inspect.signature(FUNCS[name]).parameters["seed"].default is None


@pytest.mark.parametrize("name", sorted(n for n, f in FUNCS.items()
                                        if "n_resamples" in inspect.signature(f).parameters))
def test_one_replicate_default_per_kind(name):
    want = 10000 if name in PERMUTATION else 1000
    assert inspect.signature(FUNCS[name]).parameters["n_resamples"].default == want
