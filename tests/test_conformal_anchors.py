"""calipers against MAPIE 1.6.0 and crepes 0.9.1 on the same data and split.

The reference values in ``tests/data/conformal_anchors.json`` were produced by
``tests/data/gen_conformal_anchors.py`` (run in a separate environment with mapie and crepes);
the data are regenerated here from the same seeds with NumPy only.
MAPIE's APS is anchored with its own machinery and U = 0 at calibration (its
non-randomised score) and ``include_last_label=True``, the convention calipers documents.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import calipers
from conftest import close

DATA = Path(__file__).parent / "data"
ANCHORS = json.loads((DATA / "conformal_anchors.json").read_text())
_spec = importlib.util.spec_from_file_location("gen_conformal_anchors",
                                               DATA / "gen_conformal_anchors.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


@pytest.mark.parametrize("conf", sorted(ANCHORS["regression"]))
def test_regression_intervals_match_mapie_and_crepes(backend, conf):
    y, p, t = gen.regression_data()
    ref = ANCHORS["regression"][conf]
    res = backend.call(lambda a, b, c: calipers.split_conformal_regression(
        a, b, c, alpha=1 - float(conf)), y, p, t)
    for lib in ("mapie", "crepes"):
        close(res.lower, ref[f"{lib}_lower"], backend, atol=1e-12)
        close(res.upper, ref[f"{lib}_upper"], backend, atol=1e-12)


@pytest.mark.parametrize("conf", sorted(ANCHORS["classification"]))
@pytest.mark.parametrize("method", ["lac", "aps"])
def test_sets_match_mapie(backend, conf, method):
    y, p, t = gen.classification_data()
    want = np.asarray(ANCHORS["classification"][conf][method], dtype=bool)
    res = backend.call(lambda a, b, c: calipers.split_conformal_classification(
        a, b, c, alpha=1 - float(conf), method=method), y, p, t)
    np.testing.assert_array_equal(np.asarray(res.sets), want)
