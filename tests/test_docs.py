"""The documentation site builds without warnings and lists every public name."""

import subprocess
import sys
from pathlib import Path

import calipers
import calipers.plot
import calipers.retrieval

ROOT = Path(__file__).resolve().parents[1]


def test_every_public_name_in_api_reference():
    api = (ROOT / "docs" / "api.md").read_text()
    missing = [n for n in calipers.__all__ if f"::: calipers.{n}\n" not in api]
    missing += [n for n in calipers.retrieval.__all__
                if n not in calipers.__all__ and f"::: calipers.retrieval.{n}\n" not in api]
    missing += [n for n in calipers.plot.__all__ if f"::: calipers.plot.{n}\n" not in api]
    assert not missing, f"run scripts/make_api_docs.py; missing: {missing}"


def test_docs_build_strict(tmp_path):
    """mkdocs --strict: a broken reference, link or docstring section fails the suite."""
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                          "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "roc_auc_score" in (tmp_path / "site" / "api" / "index.html").read_text()
