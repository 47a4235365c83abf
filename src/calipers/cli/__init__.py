"""The ``calipers`` command: a thin layer over the library.

Each subcommand lives in its own module with ``add_parser(subparsers)`` and a
``run(args) -> int``; this module only dispatches. Bad input files end with a
one-line error naming the file, column and row, and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ._errors import InputError

# Subcommand modules, in the order ``calipers --help`` lists them.
_SUBCOMMANDS = ["report", "trec", "arena"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="calipers",
        description="Evaluation numbers you can defend: exact metrics and paired-bootstrap intervals.")
    from calipers import __version__

    parser.add_argument("--version", action="version", version=f"calipers {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in _SUBCOMMANDS:
        try:
            mod = importlib.import_module(f"calipers.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"calipers.cli.{name}":
                continue  # subcommand not built yet
            raise
        p = mod.add_parser(sub)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except InputError as exc:
        print(f"calipers {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
