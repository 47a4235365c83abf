"""Run scikit-learn's own metric tests with calipers' functions swapped in.

    python benchmarks/sklearn_suite.py [--files ranking classification regression] [-v]

Copies the installed scikit-learn's ``metrics/tests/test_{ranking,classification,
regression}.py`` into a temporary folder, replaces every public
``sklearn.metrics`` function whose name calipers shares (also in the private
modules the tests import from) with calipers' function *before the first test
module is imported* — so parametrised lists capture calipers' functions — and
runs pytest there with scikit-learn's ``global_random_seed`` fixture. A test
counts when it called at least one calipers function; the script prints, per
file, how many of those passed and failed, and with ``-v`` the failures' ids
and first error line. Deliberate differences are listed in docs/differences.md.

Not part of the unit tests (it runs scikit-learn's suite: about a minute or
two). scikit-learn is a test dependency of calipers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

FILES = {"ranking": "test_ranking.py", "classification": "test_classification.py",
         "regression": "test_regression.py"}

CONFTEST = r'''
import functools
import pytest
import calipers
import sklearn.metrics as skm
from sklearn.metrics import _classification, _ranking, _regression

CALLED = set()
_current = [None]


def _wrap(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        CALLED.add(_current[0])
        return fn(*args, **kwargs)
    return wrapper


SWAPPED = []
for name in calipers.__all__:
    target = getattr(calipers, name)
    if not callable(target) or isinstance(target, type):
        continue
    for mod in (skm, _classification, _ranking, _regression):
        if hasattr(mod, name):
            setattr(mod, name, _wrap(name, target))
            if name not in SWAPPED:
                SWAPPED.append(name)


@pytest.fixture
def global_random_seed():
    return 42


RESULTS = {}


def pytest_runtest_setup(item):
    _current[0] = item.nodeid


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" or (rep.when == "setup" and rep.outcome != "passed"):
        first = ""
        if rep.outcome == "failed":
            text = str(rep.longrepr).strip().splitlines()
            errs = [t for t in text if t.startswith("E ")]
            first = (errs[0] if errs else text[-1])[:200]
        RESULTS[item.nodeid] = (rep.outcome, first)


def pytest_sessionfinish(session):
    import json, os
    out = {k: [v[0], v[1], k in CALLED] for k, v in RESULTS.items()}
    with open(os.environ["CALIPERS_SK_OUT"], "w") as f:
        json.dump({"results": out, "swapped": SWAPPED}, f)
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", nargs="+", choices=list(FILES), default=list(FILES))
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    import json
    import subprocess

    import sklearn

    src = Path(sklearn.__file__).parent / "metrics" / "tests"
    totals = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "conftest.py").write_text(CONFTEST)
        for key in args.files:
            shutil.copy(src / FILES[key], tmp / FILES[key])
        for key in args.files:
            out = tmp / f"{key}.json"
            env = dict(os.environ, CALIPERS_SK_OUT=str(out))
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-p", "no:randomly", "-W", "ignore", str(tmp / FILES[key])],
                           cwd=tmp, env=env, capture_output=True, text=True)
            data = json.loads(out.read_text())
            res = data["results"]
            called = {k: v for k, v in res.items() if v[2]}
            passed = sum(v[0] == "passed" for v in called.values())
            failed = sum(v[0] == "failed" for v in called.values())
            skipped = sum(v[0] == "skipped" for v in called.values())
            totals[key] = (passed, failed, skipped)
            print(f"{key:15s} calipers-calling tests: {passed} passed, {failed} failed"
                  f" ({skipped} skipped; {len(res)} tests in the file)")
            if args.verbose:
                for k, v in sorted(called.items()):
                    if v[0] == "failed":
                        print(f"    FAIL {k.split('::', 1)[1]}: {v[1]}")
        print("swapped:", ", ".join(sorted(data["swapped"])))
    p = sum(t[0] for t in totals.values())
    f = sum(t[1] for t in totals.values())
    print(f"all: {p} passed, {f} failed ({p / max(p + f, 1):.1%} pass)")


if __name__ == "__main__":
    main()
