"""The `ludo` command: one entry point, one module per subcommand.

Each subcommand module exposes `register(subparsers)`, which adds its parser and sets
`func` to a callable taking the parsed arguments and returning the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

__all__ = ["main"]

# Subcommand modules, imported lazily only to build the parser: heavy imports (the web
# stack, the database driver) stay inside each command's function.
_COMMANDS = (
    "ludo_cli.rules_cmd",
    "ludo_cli.simulate",
    "ludo_cli.bench.cmd",
    "ludo_cli.db_cmd",
    "ludo_cli.up_cmd",
    "ludo_cli.ranking_cmd",
    "ludo_cli.replay_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ludo", description="Online Ludo backend: rules engine, services, replays."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`ludo replay show … | head`): stop quietly, as cat does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
