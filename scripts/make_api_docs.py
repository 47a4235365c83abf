"""Regenerate docs/api.md: one mkdocstrings entry per public name, grouped by family.

Run after adding a public function: ``python scripts/make_api_docs.py``. A test
(tests/test_docs.py) fails when a public name is missing from docs/api.md.
"""

from __future__ import annotations

from pathlib import Path

import calipers
import calipers.plot
import calipers.retrieval

TITLES = {
    "_ranking": "Binary ranking metrics and curves",
    "_probability": "Probability scores",
    "_classification": "Thresholded classification",
    "_multiclass": "Multiclass AUC and threshold selection",
    "_calibration": "Calibration",
    "_regression": "Regression",
    "_language": "Language models and benchmarks",
    "_retrieval": "Per-query ranking and retrieval",
    "_trec": "TREC files",
    "_bootstrap": "Paired bootstrap",
    "_comparison": "Tests for comparing models",
    "_states": "Mergeable states",
    "_slices": "Slices",
    "_permutation": "Paired tests on per-unit values",
    "_multiplicity": "Multiple comparisons",
    "_conformal": "Conformal prediction",
    "_offpolicy": "Off-policy estimates",
    "_selective": "Selective prediction",
    "_survival": "Survival concordance",
    "_streaming": "Streaming states for training loops",
    "_results": "Result types",
    "_power": "Power and sample size",
    "plot": "Plots",
    "_exceptions": "Warnings",
}


def main():
    groups: dict[str, list[str]] = {}
    for ns, names in (("calipers", calipers.__all__),
                      ("calipers.retrieval", calipers.retrieval.__all__),
                      ("calipers.plot", calipers.plot.__all__)):
        for name in names:
            obj = getattr(__import__(ns, fromlist=[name]), name)
            mod = getattr(obj, "__module__", "calipers").rsplit(".", 1)[-1]
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
