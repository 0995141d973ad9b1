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

# `ludo bench`: the repository's benches, which an editable install has and a wheel does not
# (they sit above this package: it names them here and never imports them by statement).
_BENCHMARKS = "benchmarks.cmd"
# Each subcommand: the module that fills in its parser (`register(parser)`: its options,
# its own subcommands, `func`), and its line in `ludo --help`. Only the module of the
# command given is imported: the offline tools (`replay verify|analyse`, `tournament
# verify`, `rules`) start with the rules engine alone, not with the web stack, the
# database driver and the benches the other commands need (`ludo bench startup`).
_COMMANDS: dict[str, tuple[str, str]] = {
    "rules": ("ludo_cli.rules_cmd", "rules tools (the rules oracle)"),
    "simulate": ("ludo_cli.simulate", "play CPU-only matches and report win rates per level"),
    "bench": (_BENCHMARKS, "benchmarks (print figures with a baseline)"),
    "db": ("ludo_cli.db_cmd", "database: migrate, show the URL"),
    "up": (
        "ludo_cli.up_cmd",
        "run the whole site locally (embedded PostgreSQL unless DATABASE_URL is set)",
    ),
    "ranking": ("ludo_cli.ranking_cmd", "ratings: recompute from the event log, hash, consume"),
    "replay": (
        "ludo_cli.replay_cmd",
        "replay files: export, import, show, verify; audit stored matches",
    ),
    "tournament": ("ludo_cli.tournament_cmd", "arena tournament files: export, verify"),
}


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """`ludo`'s parser, with the parser of the subcommand `argv` names filled in (the
    others listed with their help line only: `ludo --help` imports none of them)."""
    parser = argparse.ArgumentParser(
        prog="ludo", description="Online Ludo backend: rules engine, services, replays."
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    given = next((token for token in argv if not token.startswith("-")), None)
    for name, (module_name, help_line) in _COMMANDS.items():
        command = subparsers.add_parser(name, help=help_line)
        if name != given:
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if module_name != _BENCHMARKS or (error.name or "").split(".")[0] != "benchmarks":
                raise
            _missing_benchmarks(command)
            continue
        module.register(command)
    return parser


_NO_BENCHMARKS = (
    "ludo bench: the benchmarks are not installed here. They are the repository's "
    "`benchmarks/` package, which the wheel does not ship; from a checkout, install it "
    "editable (python3 -m pip install -e '.[test]') and run `ludo bench ...` or "
    "`python3 -m benchmarks ...`."
)


def _missing_benchmarks(bench: argparse.ArgumentParser) -> None:
    """`ludo bench` in an install without the benches: says where they are, exits 2."""
    bench.description = _NO_BENCHMARKS
    bench.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def missing(_args: argparse.Namespace) -> int:
        print(_NO_BENCHMARKS, file=sys.stderr)
        return 2

    bench.set_defaults(func=missing)


def main(argv: Sequence[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    parser = build_parser(given)
    args, extras = parser.parse_known_args(given)
    if extras:
        # Named by the subcommand's own parser, so its usage line is the one shown.
        _deepest_parser(parser, given).error(f"unrecognized arguments: {' '.join(extras)}")
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        status = int(func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return status
    except BrokenPipeError:
        # The reader went away (`ludo replay show … | head`): stop quietly, as cat does.
        # (Caught before `Exception`, which BrokenPipeError is one of.) Later writes and
        # the interpreter's last flush go to /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        unreachable = _database_unreachable(error)
        if unreachable is None:
            raise
        print(unreachable, file=sys.stderr)
        return 1


def _deepest_parser(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> argparse.ArgumentParser:
    """The parser of the (sub)subcommand `argv` names, e.g. `replay verify`'s."""
    for token in argv:
        choices = next(
            (
                action.choices
                for action in parser._actions
                if isinstance(action, argparse._SubParsersAction)
            ),
            None,
        )
        if choices is None or token not in choices:
            continue
        parser = choices[token]
    return parser


def _database_unreachable(error: BaseException) -> str | None:
    """One line for a database that cannot be reached (instead of a driver traceback),
    or None when `error` is something else. Looks the driver's classes up only if a
    command loaded them: most commands never import the database stack."""
    kinds = tuple(
        kind
        for kind in (
            getattr(sys.modules.get("sqlalchemy.exc"), "OperationalError", None),
            getattr(sys.modules.get("psycopg"), "OperationalError", None),
        )
        if isinstance(kind, type)
    )
    if not kinds or not isinstance(error, kinds):
        return None
    cause = getattr(error, "orig", None) or error
    reason = (str(cause).strip().splitlines() or ["no reason given"])[0]
    where = "DATABASE_URL" if os.environ.get("DATABASE_URL") else "the embedded PostgreSQL"
    return (
        f"ludo: cannot reach the database ({where}): {reason}\n"
        "Check that the server runs and DATABASE_URL is right (`ludo db url` prints it, "
        "password masked), or unset DATABASE_URL to use the embedded PostgreSQL."
    )


if __name__ == "__main__":
    sys.exit(main())
