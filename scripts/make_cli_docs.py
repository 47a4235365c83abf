"""Re-run the commands shown in docs/cli.md and docs/index.md and paste their real output.

    python scripts/make_cli_docs.py          # rewrite the pages in place
    python scripts/make_cli_docs.py --check  # exit 1 if a page is stale

A ```text block whose first line is ``$ calipers ...`` is that command's output; a ```text
block whose first line is the bundled example's first line is ``calipers report``'s output. The
commands run in a temporary folder after the first ```python block of docs/cli.md (which writes
the example files), with a wide terminal so tables do not wrap. Run it after any change that
moves a printed number (a new random stream, a new column).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "docs" / "cli.md", ROOT / "docs" / "index.md"]
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
_MAIN = "import sys; from calipers.cli import main; sys.exit(main(sys.argv[1:]))"
BUNDLED_FIRST_LINE = "file: breast_cancer_oof.csv (bundled example)"


def _run(cmd: str, cwd: str) -> str:
    argv = shlex.split(cmd)
    assert argv[0] == "calipers", cmd
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=str(ROOT / "src"))
    args = argv[1:] + (["--no-progress"] if argv[1] == "report" else [])
    proc = subprocess.run([sys.executable, "-c", _MAIN, *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    return proc.stdout + proc.stderr


def refresh(text: str, cwd: str) -> str:
    def sub(m):
        lang, body = m.group(1), m.group(2)
        if lang != "text":
            return m.group(0)
        first = body.split("\n", 1)[0]
        if first.startswith("$ calipers"):
            out = _run(first[2:], cwd)
            return f"```text\n{first}\n{out.rstrip()}\n```"
        if first == BUNDLED_FIRST_LINE:
            return f"```text\n{_run('calipers report', cwd).rstrip()}\n```"
        return m.group(0)

    return BLOCK.sub(sub, text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    setup = next(m.group(2) for m in BLOCK.finditer(PAGES[0].read_text())
                 if m.group(1) == "python")
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-c", setup], cwd=tmp, check=True)
        for page in PAGES:
            old = page.read_text()
            new = refresh(old, tmp)
            if new != old:
                stale.append(page.name)
                if not args.check:
                    page.write_text(new)
    print(("stale: " if args.check else "rewritten: ") + (", ".join(stale) or "none"))
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
