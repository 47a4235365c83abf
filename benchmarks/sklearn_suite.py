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

The warning class is swapped the same way: calipers does not import
scikit-learn, so its ``UndefinedMetricWarning`` is its own class, and a user
who switches ``from sklearn.metrics import f1_score`` to calipers switches
``from sklearn.exceptions import UndefinedMetricWarning`` too. The headline run
therefore puts ``calipers.UndefinedMetricWarning`` in place of scikit-learn's
(in ``sklearn.exceptions`` and the metric modules, before the test modules
import it). For honest accounting every file is also run without that swap,
and both counts are printed (``--no-warning-swap`` runs only the latter).

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
import os
import warnings
import pytest
import calipers
import sklearn.metrics as skm
from sklearn.metrics import _classification, _ranking, _regression

CALLED = set()
_current = [None]


OWN_WARNING = set()   # tests in which calipers issued its own UndefinedMetricWarning


def _wrap(name, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        CALLED.add(_current[0])
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = fn(*args, **kwargs)
        for w in seen:  # issued again, unchanged, for the test to see
            if issubclass(w.category, calipers.UndefinedMetricWarning):
                OWN_WARNING.add(_current[0])
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return out
    return wrapper


SWAPPED = []
if os.environ.get("CALIPERS_SK_SWAP_WARNING") == "1":
    # the name calipers shares with sklearn.exceptions, swapped where the tests import it
    import sklearn.exceptions
    for mod in (sklearn.exceptions, skm, _classification, _ranking, _regression):
        if hasattr(mod, "UndefinedMetricWarning"):
            setattr(mod, "UndefinedMetricWarning", calipers.UndefinedMetricWarning)
    SWAPPED.append("UndefinedMetricWarning")
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
    out = {k: [v[0], v[1], k in CALLED, k in OWN_WARNING] for k, v in RESULTS.items()}
    with open(os.environ["CALIPERS_SK_OUT"], "w") as f:
        json.dump({"results": out, "swapped": SWAPPED, "calipers": calipers.__file__}, f)
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", nargs="+", choices=list(FILES), default=list(FILES))
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--no-warning-swap", action="store_true",
                    help="only the run with scikit-learn's own UndefinedMetricWarning")
    args = ap.parse_args(argv)
    swaps = (False,) if args.no_warning_swap else (True, False)
    summary = {}
    for swap in swaps:
        head = ("with calipers' UndefinedMetricWarning swapped in" if swap else
                "without the warning swap (scikit-learn's UndefinedMetricWarning)")
        print(f"== {head}")
        summary[swap] = _run(args, swap, verbose=args.verbose and swap == swaps[0])
    print("== summary")
    for swap in swaps:
        p, f = summary[swap]
        what = "warning class swapped" if swap else "no warning swap      "
        print(f"  {what}: {p} passed, {f} failed ({p / max(p + f, 1):.1%} pass)")


def _run(args, swap: bool, verbose: bool):
    """Run the selected files once; print per-file counts (and causes); return (passed, failed)."""
    import json
    import subprocess

    import sklearn

    src = Path(sklearn.__file__).parent / "metrics" / "tests"
    totals = {}
    causes: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "conftest.py").write_text(CONFTEST)
        for key in args.files:
            shutil.copy(src / FILES[key], tmp / FILES[key])
        for key in args.files:
            out = tmp / f"{key}.json"
            # the tests run in a temporary folder: relative PYTHONPATH entries (PYTHONPATH=src)
            # would not find this checkout's calipers there
            path = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                    if p]
            env = dict(os.environ, CALIPERS_SK_OUT=str(out), PYTHONPATH=os.pathsep.join(path),
                       CALIPERS_SK_SWAP_WARNING="1" if swap else "0")
            # no "-W ignore": tests that record warnings must see calipers' as a user would
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-p", "no:randomly", "-p", "no:xdist", str(tmp / FILES[key])],
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
            for k, v in sorted(called.items()):
                if v[0] == "failed":
                    cause = _cause(v[1], v[3])
                    causes[cause] = causes.get(cause, 0) + 1
                    if verbose:
                        print(f"    FAIL [{cause}] {k.split('::', 1)[1]}: {v[1]}")
        print("swapped:", ", ".join(sorted(data["swapped"])))
        print("calipers from:", data.get("calipers", "?"))
    p = sum(t[0] for t in totals.values())
    f = sum(t[1] for t in totals.values())
    print(f"all: {p} passed, {f} failed ({p / max(p + f, 1):.1%} pass)")
    print("failures by cause:")
    for cause, count in sorted(causes.items(), key=lambda c: -c[1]):
        print(f"  {count:4d}  {cause}")
    return p, f


def _cause(first_line: str, own_warning: bool) -> str:
    """A rough cause for one failure, from its first error line."""
    line = first_line
    if "DID NOT WARN" in line and "sklearn.exceptions.UndefinedMetricWarning" in line:
        return ("warning class: calipers issued its own UndefinedMetricWarning" if own_warning
                else "no warning where scikit-learn warns")
    if "DID NOT WARN" in line or "did not match any of the" in line:
        return "warning: other category or text"
    if "Regex pattern did not match" in line:
        return "error text differs"
    if "DID NOT RAISE" in line:
        return "accepted where scikit-learn raises"
    if "MAPE" in line:
        return "MAPE with a zero actual raises"
    if "nan" in line.lower():
        return "NaN for an undefined value (zero_division / one class)"
    if "AssertionError" in line or "assert" in line:
        return "different value (convention)"
    if "Error" in line:
        return "raises where scikit-learn accepts"
    return "other"


if __name__ == "__main__":
    main()
