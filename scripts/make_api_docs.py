"""Regenerate docs/api.md: one mkdocstrings entry per public name, grouped by family.

Run after adding a public function: ``python scripts/make_api_docs.py``. A test
(tests/test_docs.py) fails when a public name is missing from docs/api.md.
"""

from __future__ import annotations

from pathlib import Path

import calipers
import calipers.plot
import calipers.retrieval

# module (its path under calipers) -> section title, in page order
TITLES = {
    "_ranking.binary": "Binary ranking metrics and curves",
    "_probability": "Probability scores",
    "_classification": "Thresholded classification",
    "_ranking.multiclass": "Multiclass AUC and threshold selection",
    "_calibration": "Calibration",
    "_regression": "Regression",
    "_language": "Language models and benchmarks",
    "retrieval._measures": "Per-query ranking and retrieval",
    "retrieval._io": "TREC files",
    "retrieval._join": "TREC files: joined arrays",
    "retrieval._names": "TREC files: measure names",
    "retrieval._evaluate": "TREC files: evaluation",
    "_bootstrap.paired": "Paired bootstrap",
    "_bootstrap.intervals": "Bootstrap intervals",
    "_compare.delong": "DeLong's test and AUC intervals",
    "_compare.mcnemar": "McNemar's test",
    "_compare.proportions": "Proportions",
    "_compare.sprt": "Sequential tests",
    "_compare.elo": "Elo from match results",
    "_compare.arena": "Pairwise ratings (Bradley-Terry)",
    "_compare.units": "Paired tests on per-unit values",
    "_compare.multiplicity": "Multiple comparisons",
    "_compare.power": "Power and sample size",
    "_streaming.states": "Mergeable states",
    "_streaming.histogram": "Streaming states for training loops",
    "_slices": "Slices",
    "_conformal": "Conformal prediction",
    "_offpolicy": "Off-policy estimates",
    "_selective": "Selective prediction",
    "_survival": "Survival concordance",
    "_core.results": "Result types",
    "plot": "Plots",
    "_core.exceptions": "Warnings",
}


def main():
    groups: dict[str, list[str]] = {}
    for ns, names in (("calipers", calipers.__all__),
                      ("calipers.retrieval", calipers.retrieval.__all__),
                      ("calipers.plot", calipers.plot.__all__)):
        for name in names:
            obj = getattr(__import__(ns, fromlist=[name]), name)
            mod = getattr(obj, "__module__", "calipers").partition(".")[2] or "calipers"
            path = f"{ns}.{name}"
            if ns != "calipers" and name in calipers.__all__:
                continue
            groups.setdefault(mod, []).append(path)
    lines = ["# API reference", "",
             "Generated from the docstrings by `scripts/make_api_docs.py`; a test checks that every",
             "public name of `calipers`, `calipers.retrieval` and `calipers.plot` is here.", ""]
    for mod in sorted(groups, key=lambda m: list(TITLES).index(m) if m in TITLES else 99):
        lines += [f"## {TITLES.get(mod, mod)}", ""]
        for path in sorted(groups[mod], key=str.lower):
            lines += [f"::: {path}", ""]
    out = Path(__file__).resolve().parents[1] / "docs" / "api.md"
    out.write_text("\n".join(lines))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
